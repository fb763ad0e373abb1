// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: a small transformer whose KV cache lives in the
 * arena's pages.
 *
 * The other arena tests check bytes; this one checks that the pages are
 * memory an inference engine can run on. A decoder-only transformer in
 * plain C (float32; RMSNorm, learned positions, a SiLU MLP; weights from
 * a seed; greedy decoding) keeps the K and V of every token in its row's
 * pages, page-major: a page holds every layer's K and V of its
 * page_tokens tokens, and position t of a row is slot t % page_tokens of
 * page pages[t / page_tokens], the ids EXTEND and ROW_QUERY give. The
 * same model with one contiguous KV array in one process is the
 * reference. Both run the same compiled functions in the same order (and
 * no -ffast-math), so their logits must be equal bit for bit: a page that
 * is not the memory the other process, or the earlier request, wrote
 * changes them. A struct cfg gives a model's shape: every test runs
 * model A (vocabulary 64, width 32, 2 layers of 2 heads, MLP 64,
 * 16-token pages of 8 KiB).
 *
 * - prefill_export_decode: one process prefills a prompt into a row and
 *   exports it; another imports it and decodes, reading the prompt's K/V
 *   that the first wrote (disaggregated prefill and decode);
 * - prefix_hit: a second request attaches the donated pages of the
 *   first's prompt and computes only the rest;
 * - streaming_second_turn: a conversation parked in a session slot
 *   between turns, the arena unmapped and mapped again meanwhile;
 * - decode_rate: tokens per second over the arena and in the reference,
 *   a figure printed, not asserted.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <math.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <time.h>

#include <kvpool.h>

/*
 * What every model shares: the vocabulary (so the logits of a step are
 * VOCAB floats for any) and the context, a row's MAX_POS tokens. The
 * rest is struct cfg's; the stack arrays of a step are sized for the
 * largest model (MAX_DIM, MAX_MLP).
 */
#define VOCAB		64
#define MAX_POS		1024	/* a row at most; the kvm pool's row_tokens */
#define MAX_DIM		64
#define MAX_MLP		128
#define MIN_PAGE_TOKENS	8
#define MAX_ROW_PAGES	(MAX_POS / MIN_PAGE_TOKENS)
#define PAGE_TOKENS	16	/* model A's, the kvm fixture pool's */

/*
 * A model's shape and the pool geometry it runs on. A page holds K and
 * V of every layer for page_tokens tokens: page_tokens * layers * 2 *
 * dim floats.
 */
struct cfg {
	const char *name;
	int dim, layers, heads, mlp;
	unsigned int page_tokens;
	uint64_t seed;
};

/* The first model: every test's. 16 tokens of 2 layers of 32: 8 KiB. */
static const struct cfg cfg_a = {
	.name = "A", .dim = 32, .layers = 2, .heads = 2, .mlp = 64,
	.page_tokens = PAGE_TOKENS, .seed = 0x6b76706f6f6c31ull,
};

static unsigned int head_dim(const struct cfg *g)
{
	return g->dim / g->heads;
}

static size_t page_bytes(const struct cfg *g)
{
	return (size_t)g->page_tokens * g->layers * 2 * g->dim *
	       sizeof(float);
}

static unsigned int row_pages(const struct cfg *g)
{
	return MAX_POS / g->page_tokens;
}

#define PAGE_BYTES	page_bytes(&cfg_a)
#define NR_PAGES	257

/* Test 1: the prompt P prefills and the tokens D decodes. */
#define PD_PROMPT	40
#define PD_DECODE	40

struct layer {
	float *norm1, *norm2;
	float *wq, *wk, *wv, *wo;	/* dim x dim */
	float *w1, *w2;			/* mlp x dim, dim x mlp */
};

/* The weights of a model of shape @cfg, in one allocation (@mem). */
struct model {
	const struct cfg *cfg;
	float *tok, *pos;		/* VOCAB x dim, MAX_POS x dim */
	struct layer *l;
	float *norm, *head;		/* dim, VOCAB x dim */
	void *mem;
};

/* Model A, the one every test but two_models_one_budget runs. */
static struct model model;

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [-scale, scale): 24 random bits, exact in a float. */
static void fill(float *w, size_t n, uint64_t *s, float scale)
{
	size_t i;

	for (i = 0; i < n; i++)
		w[i] = ((float)(splitmix64(s) >> 40) / 8388608.0f - 1.0f) *
		       scale;
}

/* Norm gains near 1. */
static void fill_gain(float *g, int n, uint64_t *s)
{
	int i;

	fill(g, n, s, 0.1f);
	for (i = 0; i < n; i++)
		g[i] += 1.0f;
}

/* The next @n floats of the weights' block at *@at. */
static float *carve(float **at, size_t n)
{
	float *p = *at;

	*at += n;
	return p;
}

/*
 * The weights of @g from its seed into @m: 0, or -ENOMEM. Model A's are
 * drawn in the order (and so equal) those of the first version of this
 * test, when its shape was fixed at compile time.
 */
static int model_init(struct model *m, const struct cfg *g)
{
	size_t d = g->dim, per_layer = 2 * d + 4 * d * d + 2 * g->mlp * d;
	size_t total = VOCAB * d + MAX_POS * d + g->layers * per_layer + d +
		       VOCAB * d;
	uint64_t s = g->seed;
	float *at;
	int l;

	if (g->dim > MAX_DIM || g->mlp > MAX_MLP ||
	    g->page_tokens < MIN_PAGE_TOKENS || g->dim % g->heads)
		return -EINVAL;
	m->cfg = g;
	m->mem = malloc(total * sizeof(float) +
			g->layers * sizeof(struct layer));
	if (!m->mem)
		return -ENOMEM;
	m->l = m->mem;
	at = (float *)(m->l + g->layers);
	m->tok = carve(&at, VOCAB * d);
	m->pos = carve(&at, MAX_POS * d);
	fill(m->tok, VOCAB * d, &s, 1.0f);
	fill(m->pos, MAX_POS * d, &s, 0.5f);
	for (l = 0; l < g->layers; l++) {
		struct layer *L = &m->l[l];

		L->norm1 = carve(&at, d);
		L->norm2 = carve(&at, d);
		L->wq = carve(&at, d * d);
		L->wk = carve(&at, d * d);
		L->wv = carve(&at, d * d);
		L->wo = carve(&at, d * d);
		L->w1 = carve(&at, g->mlp * d);
		L->w2 = carve(&at, d * g->mlp);
		fill_gain(L->norm1, d, &s);
		fill_gain(L->norm2, d, &s);
		fill(L->wq, d * d, &s, 0.35f);
		fill(L->wk, d * d, &s, 0.35f);
		fill(L->wv, d * d, &s, 0.3f);
		fill(L->wo, d * d, &s, 0.3f);
		fill(L->w1, g->mlp * d, &s, 0.3f);
		fill(L->w2, d * g->mlp, &s, 0.2f);
	}
	m->norm = carve(&at, d);
	m->head = carve(&at, VOCAB * d);
	fill_gain(m->norm, d, &s);
	fill(m->head, VOCAB * d, &s, 0.5f);
	return 0;
}

/* @n tokens from @seed: the prompts and the user's turns. */
static void tokens(int *t, unsigned int n, uint64_t seed)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		t[i] = splitmix64(&seed) % VOCAB;
}

/*
 * Where the K/V of a request live: the reference's contiguous array
 * (@flat, [pos][layer][K, V][dim]) or a row of the pool, whose page ids
 * are @pages, in the arena mapped at @v. @kp is NULL for the reference,
 * which has no row to grow or commit.
 */
struct kvc {
	float *flat;
	const struct kvpool_arena_view *v;
	struct kvpool *kp;
	struct kvpool_handle h;
	uint32_t pages[MAX_ROW_PAGES];
	unsigned int nr_pages;
	unsigned int computed;	/* tokens run through the model */
};

static float *kv_at(const struct cfg *g, const struct kvc *c, int layer,
		    int kv, unsigned int pos)
{
	float *page;

	if (c->flat)
		return c->flat +
		       ((size_t)(pos * g->layers + layer) * 2 + kv) * g->dim;
	page = kvpool_page_addr(c->v, c->pages[pos / g->page_tokens]);
	return page + ((layer * 2 + kv) * g->page_tokens +
		       pos % g->page_tokens) * g->dim;
}

static void matvec(float *out, const float *w, const float *x, int rows,
		   int cols)
{
	int r, i;

	for (r = 0; r < rows; r++) {
		float acc = 0.0f;

		for (i = 0; i < cols; i++)
			acc += w[r * cols + i] * x[i];
		out[r] = acc;
	}
}

static void rmsnorm(float *out, const float *x, const float *g, int n)
{
	float ss = 0.0f, r;
	int i;

	for (i = 0; i < n; i++)
		ss += x[i] * x[i];
	r = 1.0f / sqrtf(ss / n + 1e-5f);
	for (i = 0; i < n; i++)
		out[i] = x[i] * r * g[i];
}

/* Head @hd of causal attention of the token at @pos: into @out. */
static void attend(const struct cfg *g, const struct kvc *c, int layer,
		   int hd, unsigned int pos, const float *q, float *out)
{
	float sc[MAX_POS], mx = -INFINITY, sum = 0.0f;
	float scale = 1.0f / sqrtf((float)head_dim(g));
	int d, hdim = head_dim(g);
	unsigned int j;

	for (j = 0; j <= pos; j++) {
		const float *k = kv_at(g, c, layer, 0, j) + hd * hdim;
		float s = 0.0f;

		for (d = 0; d < hdim; d++)
			s += q[d] * k[d];
		sc[j] = s * scale;
		if (sc[j] > mx)
			mx = sc[j];
	}
	for (j = 0; j <= pos; j++) {
		sc[j] = expf(sc[j] - mx);
		sum += sc[j];
	}
	for (d = 0; d < hdim; d++)
		out[d] = 0.0f;
	for (j = 0; j <= pos; j++) {
		const float *v = kv_at(g, c, layer, 1, j) + hd * hdim;
		float p = sc[j] / sum;

		for (d = 0; d < hdim; d++)
			out[d] += p * v[d];
	}
}

/*
 * Run token @tok at position @pos: store its K and V of each layer in
 * @c, attend over positions 0..pos there, and write the next token's
 * logits to @logits.
 */
static void model_step(const struct model *m, struct kvc *c, int tok,
		       unsigned int pos, float *logits)
{
	float x[MAX_DIM], h[MAX_DIM], q[MAX_DIM], att[MAX_DIM], o[MAX_DIM];
	float f[MAX_MLP];
	const struct cfg *g = m->cfg;
	int l, i, dim = g->dim, hdim = head_dim(g);

	for (i = 0; i < dim; i++)
		x[i] = m->tok[tok * dim + i] + m->pos[pos * dim + i];
	for (l = 0; l < g->layers; l++) {
		const struct layer *L = &m->l[l];

		rmsnorm(h, x, L->norm1, dim);
		matvec(q, L->wq, h, dim, dim);
		matvec(kv_at(g, c, l, 0, pos), L->wk, h, dim, dim);
		matvec(kv_at(g, c, l, 1, pos), L->wv, h, dim, dim);
		for (i = 0; i < g->heads; i++)
			attend(g, c, l, i, pos, q + i * hdim, att + i * hdim);
		matvec(o, L->wo, att, dim, dim);
		for (i = 0; i < dim; i++)
			x[i] += o[i];

		rmsnorm(h, x, L->norm2, dim);
		matvec(f, L->w1, h, g->mlp, dim);
		for (i = 0; i < g->mlp; i++)
			f[i] = f[i] / (1.0f + expf(-f[i]));	/* SiLU */
		matvec(o, L->w2, f, dim, g->mlp);
		for (i = 0; i < dim; i++)
			x[i] += o[i];
	}
	rmsnorm(h, x, m->norm, dim);
	matvec(logits, m->head, h, VOCAB, dim);
	c->computed++;
}

/* Greedy decoding: the first of the largest logits. */
static int argmax(const float *logits)
{
	int i, best = 0;

	for (i = 1; i < VOCAB; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

/* Grow the row to @len tokens; the new page ids join the list. */
static int kv_grow(struct kvc *c, unsigned int len)
{
	struct kvpool_extend_entry e = { .handle = c->h, .new_len = len };
	int n;

	if (!c->kp)
		return 0;
	n = kvpool_extend(c->kp, &e, 1, c->pages + c->nr_pages,
			  MAX_ROW_PAGES - c->nr_pages, NULL);
	if (n < 0)
		return n;
	c->nr_pages += n;
	return 0;
}

static int kv_commit(struct kvc *c, unsigned int len)
{
	struct kvpool_len_entry e = { .handle = c->h, .len = len };

	if (!c->kp)
		return 0;
	return kvpool_commit(c->kp, &e, 1, NULL);
}

/*
 * The row's page list and lengths from the kernel (after an import, an
 * attach, a return from a slot): @q gets them. 0 or -errno.
 */
static int kv_query(struct kvc *c, struct kvpool_row_query *q)
{
	int n;

	memset(q, 0, sizeof(*q));
	n = kvpool_row_query(c->kp, c->h, c->pages, MAX_ROW_PAGES, q);
	if (n < 0)
		return n;
	if (n > MAX_ROW_PAGES)
		return -E2BIG;
	c->nr_pages = n;
	return 0;
}

/*
 * Prefill: @n tokens from position @pos0 in one grow and one commit; the
 * logits after the last go to @logits. 0 or -errno.
 */
static int prefill(const struct model *m, struct kvc *c, const int *t,
		   unsigned int n, unsigned int pos0, float *logits)
{
	unsigned int i;
	int err;

	err = kv_grow(c, pos0 + n);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		model_step(m, c, t[i], pos0 + i, logits);
	return kv_commit(c, pos0 + n);
}

/*
 * Decode @n tokens greedily after @tok, which goes at @pos0: one token a
 * step, each grown and committed as an engine would. The tokens go to
 * @out, the logits of each step to @logits[i * VOCAB]. 0 or -errno.
 */
static int decode(const struct model *m, struct kvc *c, int tok,
		  unsigned int pos0, unsigned int n, int *out, float *logits)
{
	unsigned int i;
	int err;

	for (i = 0; i < n; i++) {
		err = kv_grow(c, pos0 + i + 1);
		if (err)
			return err;
		model_step(m, c, tok, pos0 + i, logits + i * VOCAB);
		err = kv_commit(c, pos0 + i + 1);
		if (err)
			return err;
		tok = argmax(logits + i * VOCAB);
		out[i] = tok;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * A request, or a turn of one: prefill @n tokens of @t from position
 * @pos0 (0 from scratch; the cached or parked length otherwise), then
 * @n_new tokens in all (the first from the prefill's logits, the rest
 * decoded) to @out and their logits to @logits. *@secs (if not NULL)
 * gets the time the decode took.
 */
static int generate(const struct model *m, struct kvc *c, const int *t,
		    unsigned int n, unsigned int pos0, unsigned int n_new,
		    int *out, float *logits, double *secs)
{
	double t0;
	int err;

	err = prefill(m, c, t, n, pos0, logits);
	if (err)
		return err;
	out[0] = argmax(logits);
	t0 = now();
	err = decode(m, c, out[0], pos0 + n, n_new - 1, out + 1,
		     logits + VOCAB);
	if (secs)
		*secs = now() - t0;
	return err;
}

/* The reference's contiguous KV array for a whole row of model @g. */
static float *ref_kv(const struct cfg *g)
{
	return calloc((size_t)MAX_POS * g->layers * 2 * g->dim,
		      sizeof(float));
}

/*
 * The reference run of a whole request of model @m: generate() on a
 * contiguous cache.
 */
static int ref_generate(const struct model *m, const int *t, unsigned int n,
			unsigned int n_new, int *out, float *logits,
			double *secs, unsigned int *computed)
{
	struct kvc c = { .flat = ref_kv(m->cfg) };
	int err;

	if (!c.flat)
		return -ENOMEM;
	err = generate(m, &c, t, n, 0, n_new, out, logits, secs);
	free(c.flat);
	if (computed)
		*computed = c.computed;
	return err;
}

/* Index of the first of @n steps whose logits differ, or -1 if none. */
static int first_diff(const float *a, const float *b, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (memcmp(a + i * VOCAB, b + i * VOCAB,
			   VOCAB * sizeof(float)))
			return i;
	return -1;
}

/* FNV-1a of the logits' bytes: one number for the log. */
static uint32_t fnv(const float *f, unsigned int n)
{
	const unsigned char *p = (const unsigned char *)f;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n * VOCAB * sizeof(float); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* A "# " line that reaches the log (the harness leaves with _exit()). */
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* All of @len bytes read (or written, @out) on @fd, or false. */
static bool xfer_all(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

static bool write_all(int fd, const void *buf, size_t len)
{
	return xfer_all(fd, (void *)buf, len, true);
}

static bool read_all(int fd, void *buf, size_t len)
{
	return xfer_all(fd, buf, len, false);
}

FIXTURE(kvm) {
	struct kt_pool pool;
	char path[64];
};

FIXTURE_SETUP(kvm)
{
	__u32 err = KVPOOL_NO_INDEX;

	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, PAGE_TOKENS, 9, MAX_POS);
	if (!model.cfg)
		ASSERT_EQ(0, model_init(&model, &cfg_a));
	kt_dev_path(self->path, sizeof(self->path), self->pool.id);
	/* Two chunks: a row's pages may lie in either. */
	ASSERT_EQ(0, kvpool_arena_create_host(self->pool.id, PAGE_BYTES, 2,
					      &err))
		TH_LOG("error index %u", err);
}

FIXTURE_TEARDOWN(kvm)
{
	kt_pool_fini(_metadata, &self->pool);
}

/* What P tells D besides the row's descriptor. */
struct pd_hdr {
	unsigned int len;	/* the prompt's tokens, committed */
	int first;		/* the token the prefill's logits chose */
	unsigned int nr_pages;
	uint32_t pages[(PD_PROMPT + PAGE_TOKENS - 1) / PAGE_TOKENS];
};

/* What P writes back to the test: its first token and logits. */
struct p_result {
	int first;
	float logits[VOCAB];
};

/* What D writes back: the tokens it decoded and every step's logits. */
struct d_result {
	int toks[PD_DECODE];
	float logits[PD_DECODE * VOCAB];
	double secs;
};

/* Open the pool and map its arena, in a child: exits on failure. */
static struct kvpool *child_open(const char *path,
				 struct kvpool_arena_view *v)
{
	struct kvpool *kp;

	CHILD_CHECK(kvpool_open(path, &kp) == 0);
	CHILD_CHECK(kvpool_arena_map(kp, v) == 0);
	CHILD_CHECK(v->page_bytes == PAGE_BYTES);
	return kp;
}

/* P: prefill @prompt into a new row, export it to @sock, report to @res. */
static void prefill_child(const char *path, const int *prompt, int sock,
			  int res)
{
	struct kvpool_arena_view v = { 0 };
	struct kvc c = { .v = &v };
	struct kvpool_row_query q;
	struct pd_hdr hdr = { .len = PD_PROMPT };
	struct p_result r;
	int xfd;

	c.kp = child_open(path, &v);
	CHILD_CHECK(kvpool_alloc_rows(c.kp, &c.h, 1, NULL) == 1);
	CHILD_CHECK(prefill(&model, &c, prompt, PD_PROMPT, 0, r.logits) == 0);
	r.first = argmax(r.logits);
	/* The pages EXTEND gave are the row's, as ROW_QUERY has them. */
	hdr.nr_pages = c.nr_pages;
	memcpy(hdr.pages, c.pages, sizeof(hdr.pages));
	CHILD_CHECK(kv_query(&c, &q) == 0);
	CHILD_CHECK(c.nr_pages == ARRAY_SIZE(hdr.pages));
	CHILD_CHECK(!memcmp(hdr.pages, c.pages, sizeof(hdr.pages)));
	CHILD_CHECK(q.out_committed_len == PD_PROMPT);
	hdr.first = r.first;

	xfd = kvpool_export(c.kp, c.h);
	CHILD_CHECK(xfd >= 0);
	CHILD_CHECK(kvpool_send_fd(sock, xfd) == 0);
	CHILD_CHECK(write_all(sock, &hdr, sizeof(hdr)));
	close(xfd);
	CHILD_CHECK(write_all(res, &r, sizeof(r)));
	kvpool_close(c.kp);
	CHILD_CHECK(kvpool_arena_unmap(&v) == 0);
	_exit(0);
}

/* D: import the row from @sock, decode after P's token, report to @res. */
static void decode_child(const char *path, int sock, int res)
{
	struct kvpool_arena_view v = { 0 };
	struct kvc c = { .v = &v };
	struct kvpool_row_query q;
	struct d_result *r;
	struct pd_hdr hdr;
	double t0;
	int xfd;

	r = calloc(1, sizeof(*r));
	CHILD_CHECK(r);
	xfd = kvpool_recv_fd(sock);
	CHILD_CHECK(xfd >= 0);
	CHILD_CHECK(read_all(sock, &hdr, sizeof(hdr)));
	c.kp = child_open(path, &v);
	CHILD_CHECK(kvpool_import(c.kp, xfd, &c.h) == (int)hdr.nr_pages);
	close(xfd);
	CHILD_CHECK(kv_query(&c, &q) == 0);
	CHILD_CHECK(q.out_committed_len == hdr.len);
	CHILD_CHECK(c.nr_pages == hdr.nr_pages);
	/* Pages never move: the ids P wrote are the ids D reads. */
	CHILD_CHECK(!memcmp(c.pages, hdr.pages, sizeof(hdr.pages)));

	t0 = now();
	CHILD_CHECK(decode(&model, &c, hdr.first, hdr.len, PD_DECODE, r->toks,
			   r->logits) == 0);
	r->secs = now() - t0;
	/* Only the decode steps ran here: the prompt is P's K/V. */
	CHILD_CHECK(c.computed == PD_DECODE);
	CHILD_CHECK(write_all(res, r, sizeof(*r)));
	CHILD_CHECK(kvpool_release(c.kp, &c.h, 1, NULL) >= 0);
	kvpool_close(c.kp);
	CHILD_CHECK(kvpool_arena_unmap(&v) == 0);
	_exit(0);
}

/* D's and P's reports against the reference run of the same prompt. */
static void check_pd(struct __test_metadata *_metadata,
		     const struct p_result *p, const struct d_result *d,
		     const int *ref_toks, const float *ref_logits)
{
	int i;

	EXPECT_EQ(ref_toks[0], p->first);
	EXPECT_EQ(-1, first_diff(p->logits, ref_logits, 1));
	EXPECT_EQ(-1, first_diff(d->logits, ref_logits + VOCAB, PD_DECODE))
		TH_LOG("D's logits differ from the reference's at that step");
	for (i = 0; i < PD_DECODE; i++)
		EXPECT_EQ(ref_toks[1 + i], d->toks[i])
			TH_LOG("decode step %d", i);
}

/*
 * Disaggregated serving: P prefills the prompt into a row and exports
 * it; D imports it and decodes, attending over the K/V P wrote into the
 * arena's pages. D's tokens and logits equal the reference's.
 */
TEST_F(kvm, prefill_export_decode)
{
	int prompt[PD_PROMPT], ref_toks[PD_DECODE + 1], sv[2], pp[2], dp[2];
	float ref_logits[(PD_DECODE + 1) * VOCAB];
	struct p_result p;
	struct d_result *d;
	double ref_secs;
	pid_t P, D;
	int st_p, st_d;
	bool got_p, got_d;

	tokens(prompt, PD_PROMPT, 1);
	ASSERT_EQ(0, ref_generate(&model, prompt, PD_PROMPT, PD_DECODE + 1,
				  ref_toks, ref_logits, &ref_secs, NULL));
	d = calloc(1, sizeof(*d));
	ASSERT_NE(NULL, d);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				sv));
	ASSERT_EQ(0, pipe(pp));
	ASSERT_EQ(0, pipe(dp));

	P = kt_pool_fork(_metadata, &self->pool);
	if (P == 0) {
		close(pp[0]);
		close(dp[0]);
		close(dp[1]);
		prefill_child(self->path, prompt, sv[0], pp[1]);
	}
	D = kt_pool_fork(_metadata, &self->pool);
	if (D == 0) {
		close(pp[0]);
		close(pp[1]);
		close(dp[0]);
		decode_child(self->path, sv[1], dp[1]);
	}
	/* Only the children hold these now: one's death ends the other's wait. */
	close(sv[0]);
	close(sv[1]);
	close(pp[1]);
	close(dp[1]);
	got_p = read_all(pp[0], &p, sizeof(p));
	got_d = read_all(dp[0], d, sizeof(*d));
	close(pp[0]);
	close(dp[0]);
	st_p = kt_pool_wait(&self->pool, P);
	st_d = kt_pool_wait(&self->pool, D);
	EXPECT_TRUE(KT_CHILD_OK(st_p)) TH_LOG("P: status %#x", st_p);
	EXPECT_TRUE(KT_CHILD_OK(st_d)) TH_LOG("D: status %#x", st_d);
	ASSERT_TRUE(got_p);
	ASSERT_TRUE(got_d);
	check_pd(_metadata, &p, d, ref_toks, ref_logits);
	say("prefill_export_decode: %u prompt tokens by P, %u decoded by D, logits fnv %08x (reference %08x)\n",
	    PD_PROMPT, PD_DECODE, fnv(d->logits, PD_DECODE),
	    fnv(ref_logits + VOCAB, PD_DECODE));
	say("prefill_export_decode: D's first tokens %d %d %d %d %d %d %d %d\n",
	    d->toks[0], d->toks[1], d->toks[2], d->toks[3], d->toks[4],
	    d->toks[5], d->toks[6], d->toks[7]);
	say("prefill_export_decode: D %.0f tokens/s over the arena, reference %.0f tokens/s\n",
	    PD_DECODE / d->secs, PD_DECODE / ref_secs);
	free(d);
}

/* Test 2: A's prompt, and B's, which shares its first two pages. */
#define PH_PROMPT	40
#define PH_SHARED	32
#define PH_B		44
#define PH_NEW		24

/*
 * Request A: its prompt and answer, then a release that donates its full
 * committed pages (3 of its 4: 63 tokens) to the client's prefix cache.
 * @cached gets the ids of the first two, A's first 32 prompt tokens.
 */
static void run_a(struct __test_metadata *_metadata, struct kvc *c,
		  const int *a, uint32_t *cached)
{
	int toks[PH_NEW];
	float *logits = malloc(PH_NEW * VOCAB * sizeof(float));

	ASSERT_NE(NULL, logits);
	ASSERT_EQ(1, kvpool_alloc_rows(c->kp, &c->h, 1, NULL));
	ASSERT_EQ(0, generate(&model, c, a, PH_PROMPT, 0, PH_NEW, toks,
			      logits, NULL));
	free(logits);
	memcpy(cached, c->pages, PH_SHARED / PAGE_TOKENS * sizeof(*cached));
	/* Its full committed pages go to the cache, the last one back. */
	ASSERT_EQ(1, kvpool_release_donate(c->kp, &c->h, 1, NULL));
}

/*
 * Prefix cache: request A's prompt is prefilled and decoded, and its
 * full pages donated at release; request B, whose first 32 tokens are
 * A's, attaches those two pages and computes only its other 12. Its
 * output equals the reference of B's whole prompt from scratch.
 */
TEST_F(kvm, prefix_hit)
{
	struct kvpool_arena_view v = { 0 };
	struct kvc a = { .v = &v }, b = { .v = &v };
	struct kvpool_row_query q;
	uint32_t cached[PH_SHARED / PAGE_TOKENS];
	int pa[PH_PROMPT], pb[PH_B], toks[PH_NEW], ref_toks[PH_NEW];
	float logits[PH_NEW * VOCAB], ref_logits[PH_NEW * VOCAB];
	unsigned int ref_computed, i;

	tokens(pa, PH_PROMPT, 2);
	memcpy(pb, pa, PH_SHARED * sizeof(int));
	tokens(pb + PH_SHARED, PH_B - PH_SHARED, 3);
	ASSERT_EQ(0, ref_generate(&model, pb, PH_B, PH_NEW, ref_toks,
				  ref_logits, NULL, &ref_computed));

	ASSERT_EQ(0, kvpool_open(self->path, &a.kp));
	ASSERT_EQ(0, kvpool_arena_map(a.kp, &v));
	run_a(_metadata, &a, pa, cached);

	b.kp = a.kp;
	ASSERT_EQ(1, kvpool_alloc_rows(b.kp, &b.h, 1, NULL));
	ASSERT_EQ(0, kvpool_attach_prefix(b.kp, b.h, cached,
					  ARRAY_SIZE(cached)));
	ASSERT_EQ(0, kv_query(&b, &q));
	EXPECT_EQ(PH_SHARED, q.out_committed_len);
	ASSERT_EQ(ARRAY_SIZE(cached), b.nr_pages);
	/* B's prompt after the hit, then its decode. */
	ASSERT_EQ(0, generate(&model, &b, pb + PH_SHARED, PH_B - PH_SHARED,
			      PH_SHARED, PH_NEW, toks, logits, NULL));

	EXPECT_EQ(-1, first_diff(logits, ref_logits, PH_NEW));
	for (i = 0; i < PH_NEW; i++)
		EXPECT_EQ(ref_toks[i], toks[i]) TH_LOG("token %u", i);
	/* The 32 hit tokens were not computed again. */
	EXPECT_EQ(ref_computed - PH_SHARED, b.computed);
	EXPECT_LT(b.computed, ref_computed);
	say("prefix_hit: %u of %u prompt tokens from the cache, %u tokens computed (reference %u), logits fnv %08x\n",
	    PH_SHARED, PH_B, b.computed, ref_computed, fnv(logits, PH_NEW));

	EXPECT_LE(0, kvpool_release(b.kp, &b.h, 1, NULL));
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	kvpool_close(a.kp);
}

/* Test 3: the conversation. */
#define SS_U1		24	/* the user's first turn */
#define SS_G1		16	/* the answer */
#define SS_U2		20	/* the user's second turn */
#define SS_G2		24	/* the second answer, the longer */
#define SS_ALL		(SS_U1 + SS_G1 + SS_U2)
#define SS_SESSION	0x5e55

/* Another request between the turns, in pages of its own: its own check. */
static void other_request(struct __test_metadata *_metadata,
			  struct kvpool *kp, const struct kvpool_arena_view *v)
{
	struct kvc c = { .v = v, .kp = kp };
	int t[50], toks[8], ref_toks[8];
	float logits[8 * VOCAB], ref_logits[8 * VOCAB];

	tokens(t, ARRAY_SIZE(t), 5);
	ASSERT_EQ(0, ref_generate(&model, t, ARRAY_SIZE(t), 8, ref_toks,
				  ref_logits, NULL, NULL));
	ASSERT_EQ(1, kvpool_alloc_rows(kp, &c.h, 1, NULL));
	ASSERT_EQ(0, generate(&model, &c, t, ARRAY_SIZE(t), 0, 8, toks,
			      logits, NULL));
	EXPECT_EQ(-1, first_diff(logits, ref_logits, 8));
	EXPECT_EQ(0, memcmp(toks, ref_toks, sizeof(toks)));
	EXPECT_LE(0, kvpool_release(kp, &c.h, 1, NULL));
}

/*
 * Turn 1 of a conversation is prefilled and decoded, then parked in a
 * session slot (kvpool_to_slot) while another request runs and the
 * arena is unmapped and mapped again. Turn 2 takes the row back
 * (kvpool_from_slot), appends the answer's last token and the user's new
 * tokens, and decodes: equal to the reference of the whole conversation
 * in one go.
 */
TEST_F(kvm, streaming_second_turn)
{
	struct kvpool_arena_view v = { 0 };
	struct kvc c = { .v = &v };
	struct kvpool_row_query q;
	int conv[SS_ALL], g2[SS_G2], ref_g2[SS_G2];
	float logits[SS_G2 * VOCAB], ref_logits[SS_G2 * VOCAB];
	uint32_t parked[MAX_ROW_PAGES];
	unsigned int nr_parked, len1, i;

	/* Turn 1, in the reference (its answer joins the conversation). */
	tokens(conv, SS_U1, 4);
	ASSERT_EQ(0, ref_generate(&model, conv, SS_U1, SS_G1, conv + SS_U1,
				  ref_logits, NULL, NULL));
	ASSERT_EQ(0, kvpool_open(self->path, &c.kp));
	ASSERT_EQ(0, kvpool_arena_map(c.kp, &v));
	ASSERT_EQ(1, kvpool_alloc_rows(c.kp, &c.h, 1, NULL));
	ASSERT_EQ(0, generate(&model, &c, conv, SS_U1, 0, SS_G1, g2, logits,
			      NULL));
	EXPECT_EQ(-1, first_diff(logits, ref_logits, SS_G1));
	EXPECT_EQ(0, memcmp(g2, conv + SS_U1, SS_G1 * sizeof(int)));
	/* The reference of the whole conversation in one go. */
	tokens(conv + SS_U1 + SS_G1, SS_U2, 6);
	ASSERT_EQ(0, ref_generate(&model, conv, SS_ALL, SS_G2, ref_g2,
				  ref_logits, NULL, NULL));
	/* The answer's last token has no K/V yet: turn 2 runs it first. */
	len1 = SS_U1 + SS_G1 - 1;
	nr_parked = c.nr_pages;
	memcpy(parked, c.pages, sizeof(parked));
	ASSERT_EQ((int)nr_parked, kvpool_to_slot(c.kp, c.h, SS_SESSION));

	other_request(_metadata, c.kp, &v);
	ASSERT_EQ(0, kvpool_arena_unmap(&v));
	ASSERT_EQ(0, kvpool_arena_map(c.kp, &v));

	ASSERT_EQ((int)nr_parked, kvpool_from_slot(c.kp, SS_SESSION, &c.h));
	ASSERT_EQ(0, kv_query(&c, &q));
	EXPECT_EQ(len1, q.out_committed_len);
	ASSERT_EQ(nr_parked, c.nr_pages);
	EXPECT_EQ(0, memcmp(parked, c.pages, nr_parked * sizeof(uint32_t)));
	c.computed = 0;
	ASSERT_EQ(0, generate(&model, &c, conv + len1, SS_ALL - len1, len1,
			      SS_G2, g2, logits, NULL));

	EXPECT_EQ(-1, first_diff(logits, ref_logits, SS_G2));
	for (i = 0; i < SS_G2; i++)
		EXPECT_EQ(ref_g2[i], g2[i]) TH_LOG("turn 2 token %u", i);
	say("streaming_second_turn: turn 2 computed %u tokens after %u parked, logits fnv %08x (reference %08x)\n",
	    c.computed, len1, fnv(logits, SS_G2), fnv(ref_logits, SS_G2));

	EXPECT_LE(0, kvpool_release(c.kp, &c.h, 1, NULL));
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	kvpool_close(c.kp);
}

static void check_slice(struct __test_metadata *_metadata,
			const struct kvc *c, int l, int kv, unsigned int pos)
{
	void *slice = kvpool_layer_addr(c->v, cfg_a.layers * 2,
					KVPOOL_LAYOUT_PAGE_MAJOR, l * 2 + kv,
					c->pages[pos / PAGE_TOKENS]);

	ASSERT_NE(NULL, slice);
	EXPECT_EQ((uintptr_t)slice +
		  pos % PAGE_TOKENS * cfg_a.dim * sizeof(float),
		  (uintptr_t)kv_at(&cfg_a, c, l, kv, pos));
}

/*
 * The page-major layout is libkvpool's KVPOOL_LAYOUT_PAGE_MAJOR with K
 * and V counted as two layers each: kv_at() is kvpool_layer_addr()'s
 * slice plus the token's slot.
 */
static void check_layout(struct __test_metadata *_metadata,
			 const struct kvc *c)
{
	static const unsigned int pos[] = { 0, 17, MAX_POS - 1 };
	unsigned int i;
	int l, kv;

	for (i = 0; i < ARRAY_SIZE(pos); i++)
		for (l = 0; l < cfg_a.layers; l++)
			for (kv = 0; kv < 2; kv++)
				check_slice(_metadata, c, l, kv, pos[i]);
}

/* Test 4: a row's worth, 16 prompt tokens then decode to MAX_POS. */
#define DR_PROMPT	16
#define DR_NEW		(MAX_POS - DR_PROMPT + 1)

/*
 * Decode speed over the arena (two ioctls a token, K/V in the pages) and
 * in the reference (a contiguous array), in the same run; the results
 * are still compared, the speeds only printed.
 */
TEST_F(kvm, decode_rate)
{
	struct kvpool_arena_view v = { 0 };
	struct kvc c = { .v = &v };
	int prompt[DR_PROMPT], *toks, *ref_toks;
	float *logits, *ref_logits;
	double secs, ref_secs;

	toks = calloc(DR_NEW, sizeof(int));
	ref_toks = calloc(DR_NEW, sizeof(int));
	logits = calloc((size_t)DR_NEW * VOCAB, sizeof(float));
	ref_logits = calloc((size_t)DR_NEW * VOCAB, sizeof(float));
	ASSERT_TRUE(toks && ref_toks && logits && ref_logits);
	tokens(prompt, DR_PROMPT, 7);
	ASSERT_EQ(0, ref_generate(&model, prompt, DR_PROMPT, DR_NEW, ref_toks,
				  ref_logits, &ref_secs, NULL));

	ASSERT_EQ(0, kvpool_open(self->path, &c.kp));
	ASSERT_EQ(0, kvpool_arena_map(c.kp, &v));
	ASSERT_EQ(1, kvpool_alloc_rows(c.kp, &c.h, 1, NULL));
	ASSERT_EQ(0, generate(&model, &c, prompt, DR_PROMPT, 0, DR_NEW, toks,
			      logits, &secs));
	EXPECT_EQ(row_pages(&cfg_a), c.nr_pages);
	check_layout(_metadata, &c);
	EXPECT_EQ(-1, first_diff(logits, ref_logits, DR_NEW));
	EXPECT_EQ(0, memcmp(toks, ref_toks, DR_NEW * sizeof(int)));
	say("decode_rate: %u tokens decoded to position %u: arena %.0f tokens/s, reference %.0f tokens/s\n",
	    DR_NEW - 1, MAX_POS - 1, (DR_NEW - 1) / secs,
	    (DR_NEW - 1) / ref_secs);

	EXPECT_LE(0, kvpool_release(c.kp, &c.h, 1, NULL));
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	kvpool_close(c.kp);
	free(toks);
	free(ref_toks);
	free(logits);
	free(ref_logits);
}

TEST_HARNESS_MAIN
