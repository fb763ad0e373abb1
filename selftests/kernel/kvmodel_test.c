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
 * changes them. A struct cfg gives a model's shape: model A (vocabulary
 * 64, width 32, 2 layers of 2 heads, MLP 64, 16-token pages of 8 KiB)
 * runs in every test, model B (width 64, 4 layers of 4 heads, MLP 128,
 * 8-token pages of 16 KiB) beside it in the last.
 *
 * - prefill_export_decode: one process prefills a prompt into a row and
 *   exports it; another imports it and decodes, reading the prompt's K/V
 *   that the first wrote (disaggregated prefill and decode);
 * - prefix_hit: a second request attaches the donated pages of the
 *   first's prompt and computes only the rest;
 * - streaming_second_turn: a conversation parked in a session slot
 *   between turns, the arena unmapped and mapped again meanwhile;
 * - decode_rate: tokens per second over the arena and in the reference,
 *   a figure printed, not asserted;
 * - two_models_one_budget: models A and B, each in its own process,
 *   client, pool and tenant, on one chunk budget (ABI 4) smaller than
 *   their peaks together, decode in alternate turns; the chunks one pool
 *   gives back move to the other (out_moves), whose new pages read 0
 *   before it writes them; each model's logits equal its own reference's.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <math.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <time.h>

#include <kvpool.h>

/*
 * What the two models share: the vocabulary (so the logits of a step
 * are VOCAB floats for either) and the context, a row's MAX_POS tokens.
 * The rest is struct cfg's; the stack arrays of a step are sized for the
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

/* The second, wider and deeper: 8 tokens of 4 layers of 64, 16 KiB. */
static const struct cfg cfg_b = {
	.name = "B", .dim = 64, .layers = 4, .heads = 4, .mlp = 128,
	.page_tokens = 8, .seed = 0x6b76706f6f6c32ull,
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
 * which has no row to grow or commit. With @zero_check, kv_grow() reads
 * every page EXTEND gives before the model writes it, and counts those
 * not all zero in @dirty_pages (of @new_pages).
 */
struct kvc {
	float *flat;
	const struct kvpool_arena_view *v;
	struct kvpool *kp;
	struct kvpool_handle h;
	uint32_t pages[MAX_ROW_PAGES];
	unsigned int nr_pages;
	unsigned int computed;	/* tokens run through the model */
	bool zero_check;
	unsigned int new_pages, dirty_pages;
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

/* Is every byte of page @id zero? */
static bool page_zero(const struct kvpool_arena_view *v, uint32_t id)
{
	const uint64_t *p = kvpool_page_addr(v, id);
	size_t i;

	for (i = 0; i < v->page_bytes / sizeof(*p); i++)
		if (p[i])
			return false;
	return true;
}

/* Grow the row to @len tokens; the new page ids join the list. */
static int kv_grow(struct kvc *c, unsigned int len)
{
	struct kvpool_extend_entry e = { .handle = c->h, .new_len = len };
	unsigned int i;
	int n;

	if (!c->kp)
		return 0;
	n = kvpool_extend(c->kp, &e, 1, c->pages + c->nr_pages,
			  MAX_ROW_PAGES - c->nr_pages, NULL);
	if (n < 0)
		return n;
	if (c->zero_check) {
		for (i = 0; i < (unsigned int)n; i++)
			c->dirty_pages += !page_zero(c->v,
						     c->pages[c->nr_pages + i]);
		c->new_pages += n;
	}
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

/*
 * Test 5: two models on one budget of NB_CHUNKS chunks of NB_CHUNK bytes:
 * A's 8 KiB pages are 8 a chunk (128 tokens), B's 16 KiB pages 4 (32
 * tokens). Each request's length is whole chunks, so the chunks each
 * phase leaves are exact.
 */
#define NB_CHUNKS	6
#define NB_CHUNK	(64u * 1024)
#define NB_TURN		8	/* tokens a decode turn */
#define NB_REQS		3
#define NB_PHASES	6	/* run, release, run, release, run, release */

/* A request: its prompt (from @seed) and the positions it ends with. */
struct nb_req {
	unsigned int prompt, len;
	uint64_t seed;
};

/*
 * One model's part: its requests, the one each run phase (0, 2, 4)
 * starts, and the ones each release phase (1, 3, 5) gives back (a mask).
 */
struct nb_plan {
	const struct cfg *cfg;
	struct nb_req req[NB_REQS];
	int run[NB_PHASES / 2];
	unsigned int release[NB_PHASES / 2];
	unsigned int max_chunks;	/* the most it holds at once */
};

/*
 * A: a1 (4 chunks), then a2 (1) kept while a3 (4) grows into the chunks
 * B gave back. B: b1 (2) beside a1; b2 (3) in the chunks a1 gave back,
 * b1 kept; b3 (1) beside a3. Peaks: A 5, B 5, of 6: neither holds its
 * peak unless the other has given back.
 */
static const struct nb_plan nb_plan[2] = {
	{ .cfg = &cfg_a,
	  .req = { { 32, 512, 11 }, { 16, 128, 12 }, { 24, 512, 13 } },
	  .run = { 0, 1, 2 }, .release = { 1u << 0, 0, 1u << 1 | 1u << 2 },
	  .max_chunks = 5 },
	{ .cfg = &cfg_b,
	  .req = { { 16, 64, 21 }, { 24, 96, 22 }, { 8, 32, 23 } },
	  .run = { 0, 1, 2 }, .release = { 0, 1u << 0 | 1u << 1, 1u << 2 },
	  .max_chunks = 5 },
};

/* What the budget and the pools hold after each phase. */
static const struct {
	unsigned int chunks[2], free, moves;
} nb_after[NB_PHASES] = {
	{ { 4, 2 }, 0, 0 },	/* a1, b1: full */
	{ { 0, 2 }, 4, 0 },	/* a1 gave its 4 back */
	{ { 1, 5 }, 0, 3 },	/* b2 took 3 that A held, a2 1 of A's own */
	{ { 1, 0 }, 5, 3 },	/* b1, b2 gave theirs back */
	{ { 5, 1 }, 0, 7 },	/* a3 took 4 that B held, b3 1 of B's own */
	{ { 0, 0 }, 6, 7 },	/* all back */
};

static unsigned int nb_pages(const struct nb_plan *pl, int r)
{
	return pl->req[r].len / pl->cfg->page_tokens;
}

/* What a model's process reports at the end. */
struct nb_result {
	int diff[NB_REQS];	/* first_diff() against the reference */
	int tok_diff[NB_REQS];	/* tokens differ from the reference's */
	uint32_t fnv[NB_REQS];
	unsigned int new_pages, dirty_pages;	/* kv_grow()'s zero check */
	unsigned int blank_at_release;	/* its pages all 0 when released */
	__u64 tenant;		/* its client's, from fdinfo */
	unsigned int tokens;	/* computed, every request */
	double secs;		/* in its turns */
};

/* A request in a model's process: its row, outputs and reference. */
struct nb_run {
	const struct nb_req *rq;
	struct kvc c;
	int prompt[MAX_POS], *toks, *ref_toks;
	float *logits, *ref_logits;
	unsigned int n_new, done;
};

/*
 * One turn of @r: the row, its prefill and first token; or up to
 * NB_TURN more tokens decoded. 1 if more are left, 0 if not, or -errno.
 */
static int nb_turn(const struct model *m, struct nb_run *r)
{
	unsigned int k = r->done, n;
	int err;

	if (!k) {
		if (kvpool_alloc_rows(r->c.kp, &r->c.h, 1, NULL) != 1)
			return -ENOSPC;
		err = prefill(m, &r->c, r->prompt, r->rq->prompt, 0,
			      r->logits);
		r->toks[0] = argmax(r->logits);
		r->done = 1;
		return err ? err : 1;
	}
	n = r->n_new - k < NB_TURN ? r->n_new - k : NB_TURN;
	err = decode(m, &r->c, r->toks[k - 1], r->rq->prompt + k - 1, n,
		     r->toks + k, r->logits + (size_t)k * VOCAB);
	r->done += n;
	return err ? err : r->done < r->n_new;
}

/*
 * A model's process: opens pool @path from cgroup @cg (its tenant),
 * runs its references, then does one turn on each byte from @go and
 * answers on @back 'm' (more turns in this phase) or 'e' (the phase is
 * done for it), phase after phase; at the end its struct nb_result.
 */
static void nb_child(const struct nb_plan *pl, const char *path,
		     const char *cg, int go, int back)
{
	struct kvpool_arena_view v = { 0 };
	struct nb_run run[NB_REQS];
	struct nb_result res = { 0 };
	struct model m = { 0 };
	struct kvpool *kp;
	int p, r, ret;
	unsigned int i;
	char cmd, ans;
	double t0;

	CHILD_CHECK(model_init(&m, pl->cfg) == 0);
	CHILD_CHECK(kt_cgroup_move(cg, 0) == 0);
	CHILD_CHECK(kvpool_open(path, &kp) == 0);
	CHILD_CHECK(kt_fdinfo_u64(kvpool_fd(kp), "kvpool-tenant",
				  &res.tenant) == 0);
	CHILD_CHECK(kvpool_arena_map(kp, &v) == 0);
	CHILD_CHECK(v.page_bytes == page_bytes(pl->cfg));
	for (r = 0; r < NB_REQS; r++) {
		struct nb_run *x = &run[r];

		memset(x, 0, sizeof(*x));
		x->rq = &pl->req[r];
		x->n_new = x->rq->len - x->rq->prompt + 1;
		x->c.v = &v;
		x->c.kp = kp;
		x->c.zero_check = true;
		x->toks = calloc(x->n_new, sizeof(int));
		x->ref_toks = calloc(x->n_new, sizeof(int));
		x->logits = calloc((size_t)x->n_new * VOCAB, sizeof(float));
		x->ref_logits = calloc((size_t)x->n_new * VOCAB,
				       sizeof(float));
		CHILD_CHECK(x->toks && x->ref_toks && x->logits &&
			    x->ref_logits);
		tokens(x->prompt, x->rq->prompt, x->rq->seed);
		CHILD_CHECK(ref_generate(&m, x->prompt, x->rq->prompt,
					 x->n_new, x->ref_toks, x->ref_logits,
					 NULL, NULL) == 0);
	}

	for (p = 0; p < NB_PHASES; p++) {
		do {
			CHILD_CHECK(read_all(go, &cmd, 1) && cmd == 'T');
			t0 = now();
			if (p % 2 == 0) {
				ret = nb_turn(&m, &run[pl->run[p / 2]]);
				CHILD_CHECK(ret >= 0);
			} else {
				for (r = 0; r < NB_REQS; r++) {
					struct nb_run *x = &run[r];

					if (!(pl->release[p / 2] & 1u << r))
						continue;
					/* What it wrote is there to clear. */
					for (i = 0; i < x->c.nr_pages; i++)
						res.blank_at_release +=
						    page_zero(&v,
							      x->c.pages[i]);
					CHILD_CHECK(kvpool_release(kp, &x->c.h,
								   1, NULL) ==
						    (int)x->c.nr_pages);
				}
				ret = 0;
			}
			res.secs += now() - t0;
			ans = ret ? 'm' : 'e';
			CHILD_CHECK(write_all(back, &ans, 1));
		} while (ret);
	}

	for (r = 0; r < NB_REQS; r++) {
		struct nb_run *x = &run[r];

		res.diff[r] = first_diff(x->logits, x->ref_logits, x->n_new);
		res.tok_diff[r] = !!memcmp(x->toks, x->ref_toks,
					   x->n_new * sizeof(int));
		res.fnv[r] = fnv(x->logits, x->n_new);
		res.new_pages += x->c.new_pages;
		res.dirty_pages += x->c.dirty_pages;
		res.tokens += x->c.computed;
	}
	CHILD_CHECK(write_all(back, &res, sizeof(res)));
	kvpool_close(kp);
	CHILD_CHECK(kvpool_arena_unmap(&v) == 0);
	_exit(0);
}

FIXTURE(nb) {
	unsigned int budget, pool[2];
	bool have_budget, have_pool[2];
	char path[2][64], cg[2][96];
	bool have_cg[2];
	__u64 cgid[2];
	pid_t pid[2];
	int go[2], back[2];
};

FIXTURE_SETUP(nb)
{
	int i, ret;

	for (i = 0; i < 2; i++) {
		self->have_pool[i] = self->have_cg[i] = false;
		self->pid[i] = -1;
		self->go[i] = self->back[i] = -1;
	}
	self->have_budget = false;
	ret = kt_cgroup2_ready();
	ASSERT_EQ(0, ret) TH_LOG("cgroup v2 at " KT_CGROOT ": %s",
				 strerror(ret));
	ASSERT_EQ(0, kvpool_budget_create(KVPOOL_ARENA_HOST, NB_CHUNKS,
					  NB_CHUNK, &self->budget));
	self->have_budget = true;
	for (i = 0; i < 2; i++) {
		const struct cfg *g = nb_plan[i].cfg;
		unsigned int nr = NB_CHUNKS * (NB_CHUNK / page_bytes(g));
		struct kvpool_pool_params p = {
			.nr_pages = nr, .page_tokens = g->page_tokens,
			.nr_rows = 4, .row_tokens = nr * g->page_tokens,
		};

		ASSERT_EQ(0, kvpool_pool_create_budget(&p, self->budget,
						       page_bytes(g),
						       &self->pool[i]));
		self->have_pool[i] = true;
		/* Watermarks 0: a wholly free slot goes back at once. */
		ASSERT_EQ(0, kvpool_set_wmark(self->pool[i], 0, 0));
		kt_dev_path(self->path[i], sizeof(self->path[i]),
			    self->pool[i]);
		snprintf(self->cg[i], sizeof(self->cg[i]),
			 KT_CGROOT "/kvmodel-%d-%s", (int)getpid(), g->name);
		rmdir(self->cg[i]);
		ASSERT_EQ(0, mkdir(self->cg[i], 0755))
			TH_LOG("mkdir %s: %s", self->cg[i], strerror(errno));
		self->have_cg[i] = true;
		ASSERT_EQ(0, kt_cgroup_id(self->cg[i], &self->cgid[i]));
	}
}

FIXTURE_TEARDOWN(nb)
{
	struct kvpool_ctl_budget b;
	int i;

	for (i = 0; i < 2; i++) {
		if (self->go[i] >= 0)
			close(self->go[i]);
		if (self->back[i] >= 0)
			close(self->back[i]);
		if (self->pid[i] > 0) {
			kill(self->pid[i], SIGKILL);
			waitpid(self->pid[i], NULL, 0);
		}
	}
	for (i = 0; i < 2; i++) {
		if (self->have_pool[i])
			EXPECT_EQ(0, kvpool_pool_destroy(self->pool[i]));
		if (self->have_cg[i])
			EXPECT_EQ(0, rmdir(self->cg[i]))
				TH_LOG("rmdir %s: %s", self->cg[i],
				       strerror(errno));
	}
	if (self->have_budget) {
		EXPECT_EQ(0, kvpool_budget_info(self->budget, &b));
		EXPECT_EQ(NB_CHUNKS, b.out_free_chunks);
		EXPECT_EQ(0, kvpool_budget_destroy(self->budget));
	}
}

/* Give model @i a turn: *@more gets whether it has more this phase. */
static bool nb_go(FIXTURE_DATA(nb) *self, int i, bool *more)
{
	char c = 'T';

	if (!write_all(self->go[i], &c, 1) || !read_all(self->back[i], &c, 1))
		return false;
	*more = c == 'm';
	return c == 'm' || c == 'e';
}

/*
 * Two models of two geometries, each in its own process, client, pool
 * and tenant, on one chunk budget too small for both their peaks: they
 * decode in alternate turns, and between requests the chunks one pool
 * gives back move to the other (out_moves), cleared: every page a
 * model's EXTEND gets reads 0 before it writes it, though the chunks
 * held the other model's K/V. Each model's logits equal those of its
 * own contiguous reference, bit for bit.
 */
TEST_F(nb, two_models_one_budget)
{
	struct kvpool_tenant_info ti[8];
	struct nb_result res[2];
	struct kvpool_ctl_budget b;
	unsigned int both[NB_PHASES] = { 0 }, tenant[2], pages[2] = { 0 };
	bool got[2];
	int i, p, r, n, st;

	for (i = 0; i < 2; i++) {
		struct kvpool_ctl_tenant t = {
			.cgroup_id = self->cgid[i],
			.max_pages = nb_plan[i].max_chunks *
				     (NB_CHUNK / page_bytes(nb_plan[i].cfg)),
		};
		int go[2], back[2];

		snprintf(t.label, sizeof(t.label), "model-%s",
			 nb_plan[i].cfg->name);
		n = kvpool_tenant_set(self->pool[i], &t);
		ASSERT_LE(0, n);
		tenant[i] = n;
		ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
		ASSERT_EQ(0, pipe2(back, O_CLOEXEC));
		self->pid[i] = fork();
		ASSERT_LE(0, self->pid[i]);
		if (self->pid[i] == 0) {
			close(go[1]);
			close(back[0]);
			/* A's pipes are the parent's alone (its death: EOF). */
			if (i) {
				close(self->go[0]);
				close(self->back[0]);
			}
			nb_child(&nb_plan[i], self->path[i], self->cg[i],
				 go[0], back[1]);
		}
		close(go[0]);
		close(back[1]);
		self->go[i] = go[1];
		self->back[i] = back[0];
		for (r = 0; r < NB_REQS; r++)
			pages[i] += nb_pages(&nb_plan[i], r);
	}

	for (p = 0; p < NB_PHASES; p++) {
		bool more[2] = { true, true };

		while (more[0] || more[1]) {
			both[p] += more[0] && more[1];
			for (i = 0; i < 2; i++) {
				const char *name = nb_plan[i].cfg->name;

				if (more[i])
					ASSERT_TRUE(nb_go(self, i, &more[i]))
						TH_LOG("model %s, phase %d",
						       name, p);
			}
		}
		ASSERT_EQ(0, kvpool_budget_info(self->budget, &b));
		EXPECT_EQ(nb_after[p].free, b.out_free_chunks)
			TH_LOG("phase %d", p);
		EXPECT_EQ(nb_after[p].moves, b.out_moves) TH_LOG("phase %d", p);
		for (i = 0; i < 2; i++) {
			const char *name = nb_plan[i].cfg->name;

			EXPECT_EQ(nb_after[p].chunks[i],
				  kt_sysfs_val(self->pool[i], "chunks"))
				TH_LOG("model %s, phase %d", name, p);
		}
		if (p != 2)
			continue;
		/* Each pool's pages are its own tenant's, at B's peak. */
		for (i = 0; i < 2; i++) {
			n = kvpool_tenant_list(self->pool[i], ti,
					       ARRAY_SIZE(ti));
			ASSERT_EQ(1, n) TH_LOG("model %s",
					       nb_plan[i].cfg->name);
			EXPECT_EQ(tenant[i], ti[0].tenant_id);
			EXPECT_EQ(self->cgid[i], ti[0].cgroup_id);
			EXPECT_EQ(1, ti[0].nr_clients);
			EXPECT_EQ(nb_after[p].chunks[i] *
				  (NB_CHUNK / page_bytes(nb_plan[i].cfg)),
				  ti[0].pages);
		}
	}
	/* Both decoded at once in every run phase, turn about. */
	EXPECT_LE(2, both[0]);
	EXPECT_LE(2, both[2]);
	EXPECT_LE(2, both[4]);

	for (i = 0; i < 2; i++) {
		got[i] = read_all(self->back[i], &res[i], sizeof(res[i]));
		st = -1;
		waitpid(self->pid[i], &st, 0);
		self->pid[i] = -1;
		EXPECT_TRUE(KT_CHILD_OK(st)) TH_LOG("model %s: status %#x",
						    nb_plan[i].cfg->name, st);
		ASSERT_TRUE(got[i]);
	}
	for (i = 0; i < 2; i++) {
		const struct nb_result *x = &res[i];

		for (r = 0; r < NB_REQS; r++) {
			EXPECT_EQ(-1, x->diff[r])
				TH_LOG("model %s, request %d: logits differ at step %d",
				       nb_plan[i].cfg->name, r, x->diff[r]);
			EXPECT_EQ(0, x->tok_diff[r]);
		}
		EXPECT_EQ(tenant[i], x->tenant);
		EXPECT_EQ(pages[i], x->new_pages);
		EXPECT_EQ(0, x->dirty_pages)
			TH_LOG("model %s: pages not cleared", nb_plan[i].cfg->name);
		EXPECT_EQ(0, x->blank_at_release);
		say("two_models_one_budget: model %s (%u KiB pages of %u tokens): %u tokens in %.2f s, %u of %u new pages read 0 before use, logits fnv %08x %08x %08x\n",
		    nb_plan[i].cfg->name,
		    (unsigned int)(page_bytes(nb_plan[i].cfg) / 1024),
		    nb_plan[i].cfg->page_tokens, x->tokens, x->secs,
		    x->new_pages - x->dirty_pages, x->new_pages, x->fnv[0],
		    x->fnv[1], x->fnv[2]);
	}
	ASSERT_EQ(0, kvpool_budget_info(self->budget, &b));
	say("two_models_one_budget: %llu chunk moves between the pools, %llu KiB cleared in %llu us, %u turns side by side\n",
	    (unsigned long long)b.out_moves,
	    (unsigned long long)b.out_cleared_bytes / 1024,
	    (unsigned long long)b.out_clear_ns / 1000,
	    both[0] + both[2] + both[4]);
	for (i = 0; i < 2; i++) {
		struct kvpool *kp;

		ASSERT_EQ(0, kvpool_open(self->path[i], &kp));
		EXPECT_EQ(0, kvpool_verify(kp, NULL));
		kvpool_close(kp);
	}
}

TEST_HARNESS_MAIN
