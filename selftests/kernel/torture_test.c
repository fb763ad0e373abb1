// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: torture. N worker processes, in three tenants (root,
 * uid 1001 with a max and a min, uid 1002 with a row limit and a min), do
 * random work on one pool: alloc, extend, commit, trim, release (with and
 * without donate), donate, attach, evict, sliding-window free, slots,
 * export (the file goes to a shared datagram socket, is imported by
 * whoever picks it up, by the exporter itself, or just closed), pressure.
 * Each keeps a model of what it holds and checks every answer against it:
 * exact errnos (only ENOSPC, and EDQUOT in a limited tenant, depend on the
 * others; EINVAL for a donation from a row whose window passed its
 * protected prefix), out_nr_pages, ROW_QUERY, STATS' client figures.
 * Meanwhile the test SIGKILLs random workers at random moments and starts
 * new ones, and checks VERIFY and the pool's identities as it goes, and
 * changes the tenants' limits and the watermarks at random (never failing
 * a worker: limits only ever add EDQUOT to what a limited tenant may see).
 * The uid 1002 tenant lives in a child cgroup.
 *
 * At the end every worker is killed and reaped, the rows in flight are
 * drained (some imported, some dropped), and the pool must be whole
 * (STATS), VERIFY clean, and destroyable (teardown).
 *
 * KVPOOL_SEED=n fixes the seed (printed either way; the kills' timing is
 * not reproducible); KVPOOL_TORTURE_SECS=n the duration (default 20).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenv.h"

#define NR_PAGES	2049	/* page 0 reserved */
#define USABLE		2048
#define PT		4
#define NR_ROWS		129	/* row 0 reserved */
#define ROW_TOKENS	2048
#define ROW_PAGES	(ROW_TOKENS / PT)

#define NR_WORKERS	6
#define W_ROWS		12
#define W_CACHE		USABLE

#define UID_1		1001
#define UID_2		1002

struct shared {
	unsigned long long ops;
	unsigned int exports, imports, import_refused, self_imports;
	unsigned int enospc, edquot, ebusy, reopens, evicted_asked;
	unsigned int holed;	/* donations refused: window past protected */
};

#define ADD(f, n) __atomic_fetch_add(&sh->f, (n), __ATOMIC_RELAXED)

/* ---- a worker ------------------------------------------------------------ */

struct wrow {
	bool used, slot;
	struct kvpool_handle h;
	__u64 session;
	__u32 alloc, committed, prot, swa, nr;
	__u32 pages[ROW_PAGES];
};

struct worker {
	int fd, mb_send, mb_recv, id;
	__u32 pool_id;
	unsigned int seed, seed0;
	bool limited;
	const char *op;
	struct shared *sh;
	struct wrow rows[W_ROWS];
	__u32 cache[W_CACHE];
	__u32 ncache;
	__u64 next_session;
};

static struct worker W;
static struct shared *sh;

#define W_CHECK(cond, fmt, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "# torture worker %d (seed %u, pid %d): op %s: %s:%d: %s: " fmt "\n", \
			W.id, W.seed0, getpid(), W.op, __FILE__, __LINE__, #cond, \
			##__VA_ARGS__);					\
		_exit(1);						\
	}								\
} while (0)

static unsigned int rnd(unsigned int n)
{
	return n ? (unsigned int)rand_r(&W.seed) % n : 0;
}

static int pick_row(bool want_slot, bool any)
{
	int idx[W_ROWS] = { 0 }, n = 0, i;

	for (i = 0; i < W_ROWS; i++)
		if (W.rows[i].used && (any || W.rows[i].slot == want_slot))
			idx[n++] = i;
	return n ? idx[rnd(n)] : -1;
}

static int free_row_slot(void)
{
	int i;

	for (i = 0; i < W_ROWS; i++)
		if (!W.rows[i].used)
			return i;
	return -1;
}

/* Rows of mine that borrow cache page @p. */
static __u32 pins(__u32 p)
{
	__u32 n = 0, i, k;

	for (i = 0; i < W_ROWS; i++) {
		struct wrow *r = &W.rows[i];

		if (!r->used)
			continue;
		for (k = 0; k < r->prot / PT; k++)
			if (r->pages[k] == p)
				n++;
	}
	return n;
}

/* Non-hole pages of @r in positions [from, to). */
static __u32 count_pages(const struct wrow *r, __u32 from, __u32 to)
{
	__u32 n = 0, k;

	for (k = from; k < to && k < r->nr; k++)
		n += r->pages[k] != KVPOOL_PAGE_NONE;
	return n;
}

static __u32 owned(const struct wrow *r)
{
	return count_pages(r, r->prot / PT, r->nr);
}

/*
 * SWA_FREE freed pages above the protected prefix: the row's start has
 * holes, and it may donate nothing (DONATE, RELEASE with DONATE: EINVAL).
 */
static bool holed(const struct wrow *r)
{
	return r->swa > r->prot;
}

static void cache_add(__u32 p)
{
	W_CHECK(W.ncache < W_CACHE, "cache overflow");
	W.cache[W.ncache++] = p;
}

static void cache_del(__u32 p)
{
	__u32 i;

	for (i = 0; i < W.ncache; i++) {
		if (W.cache[i] == p) {
			W.cache[i] = W.cache[--W.ncache];
			return;
		}
	}
	W_CHECK(false, "page %u not in my cache", p);
}

/* Up to @max distinct random cache pages into @ids; returns how many. */
static __u32 pick_cache(__u32 *ids, __u32 max, bool unpinned_only)
{
	static __u32 tmp[W_CACHE];
	__u32 n = 0, i, k = 0;

	for (i = 0; i < W.ncache; i++)
		if (!unpinned_only || !pins(W.cache[i]))
			tmp[n++] = W.cache[i];
	if (max > n)
		max = n;
	for (i = 0; i < max; i++) {
		__u32 j = i + rnd(n - i), t = tmp[i];

		tmp[i] = tmp[j];
		tmp[j] = t;
		ids[k++] = tmp[i];
	}
	return k;
}

static void check_refusal(int ret, __u32 out_short)
{
	W_CHECK(ret == ENOSPC || (ret == EDQUOT && W.limited),
		"errno %d (%s)", ret, strerror(ret > 0 ? ret : 0));
	W_CHECK(out_short >= 1, "out_short %u", out_short);
	if (ret == ENOSPC)
		ADD(enospc, 1);
	else
		ADD(edquot, 1);
}

static void op_alloc(void)
{
	struct kvpool_handle h[3];
	__u32 n = 1 + rnd(3), sh_ = 0, i, freeslots = 0;
	int ret;

	for (i = 0; i < W_ROWS; i++)
		freeslots += !W.rows[i].used;
	if (n > freeslots)
		n = freeslots;
	if (!n)
		return;
	ret = kt_row_alloc(W.fd, n, h, &sh_);
	if (ret) {
		check_refusal(ret, sh_);
		return;
	}
	for (i = 0; i < n; i++) {
		struct wrow *r = &W.rows[free_row_slot()];

		memset(r, 0, offsetof(struct wrow, pages));
		r->used = true;
		r->h = h[i];
	}
}

static void op_extend(void)
{
	static __u32 ids[ROW_PAGES];
	struct kvpool_extend_entry e;
	struct kvpool_extend x;
	int i = pick_row(false, false), ret;
	struct wrow *r;
	__u32 len, want;

	if (i < 0)
		return;
	r = &W.rows[i];
	len = r->alloc + 1 + rnd(rnd(4) ? 8 * PT : 64 * PT);
	if (len > ROW_TOKENS)
		len = ROW_TOKENS;
	e = (struct kvpool_extend_entry){ .handle = r->h, .new_len = len };
	ret = kt_extend(W.fd, &e, 1, ids, ROW_PAGES, &x);
	if (ret) {
		check_refusal(ret, x.out_short);
		return;
	}
	want = kt_div_up(len, PT) - r->nr;
	W_CHECK(x.out_nr_pages == want && e.out_nr_new == want,
		"got %u/%u new pages, want %u", x.out_nr_pages, e.out_nr_new,
		want);
	memcpy(r->pages + r->nr, ids, want * sizeof(__u32));
	r->nr += want;
	r->alloc = len;
}

static void op_commit(void)
{
	int i = pick_row(false, false), ret;
	struct wrow *r;
	__u32 len;

	if (i < 0)
		return;
	r = &W.rows[i];
	len = r->committed + rnd(r->alloc - r->committed + 1);
	ret = kt_commit1(W.fd, r->h, len);
	W_CHECK(ret == 0, "errno %d", ret);
	r->committed = len;
}

static void op_trim(void)
{
	int i = pick_row(false, false), ret;
	__u32 keep, want, got = ~0u;
	struct wrow *r;

	if (i < 0)
		return;
	r = &W.rows[i];
	keep = kt_div_up(r->committed, PT);
	want = count_pages(r, keep, r->nr);
	ret = kt_trim1(W.fd, r->h, &got);
	W_CHECK(ret == 0 && got == want, "errno %d, freed %u, want %u", ret,
		got, want);
	r->nr = keep;
	r->alloc = r->committed;
}

/* What RELEASE (with DONATE: first) frees, and donates into the cache. */
static __u32 release_model(struct wrow *r, bool donate)
{
	__u32 from = r->prot / PT, k;

	if (donate) {
		__u32 end = r->committed / PT;

		for (k = from; k < end; k++)
			if (r->pages[k] != KVPOOL_PAGE_NONE)
				cache_add(r->pages[k]);
		if (end > from)
			from = end;
	}
	r->used = false;
	return count_pages(r, from, r->nr);
}

static void op_release(void)
{
	int i = pick_row(false, false), ret;
	bool donate = rnd(2);
	struct wrow *r;
	__u32 got = ~0u, want;

	if (i < 0)
		return;
	r = &W.rows[i];
	if (donate && holed(r)) {
		ret = kt_release_donate1(W.fd, r->h, &got);
		W_CHECK(ret == EINVAL,
			"errno %d, want EINVAL (swa %u > prot %u)", ret,
			r->swa, r->prot);
		ADD(holed, 1);
		donate = false;	/* what a client does then */
	}
	ret = donate ? kt_release_donate1(W.fd, r->h, &got) :
		       kt_release1(W.fd, r->h, &got);
	W_CHECK(ret == 0, "errno %d", ret);
	want = release_model(r, donate);
	W_CHECK(got == want, "freed %u, want %u (donate %d)", got, want, donate);
}

static void op_donate(void)
{
	int i = pick_row(false, false), ret;
	__u32 upto, want, got = ~0u, k;
	struct wrow *r;

	if (i < 0)
		return;
	r = &W.rows[i];
	if (r->committed <= r->prot) {
		if (r->prot) {
			ret = kt_donate1(W.fd, r->h, r->prot, &got);
			W_CHECK(ret == EALREADY, "errno %d", ret);
		}
		return;
	}
	upto = r->prot + 1 + rnd(r->committed - r->prot);
	if (holed(r)) {
		ret = kt_donate1(W.fd, r->h, upto, &got);
		W_CHECK(ret == EINVAL,
			"errno %d, want EINVAL (swa %u > prot %u)", ret,
			r->swa, r->prot);
		ADD(holed, 1);
		return;
	}
	want = count_pages(r, r->prot / PT, upto / PT);
	ret = kt_donate1(W.fd, r->h, upto, &got);
	W_CHECK(ret == 0 && got == want, "errno %d, moved %u, want %u", ret,
		got, want);
	for (k = r->prot / PT; k < upto / PT; k++)
		if (r->pages[k] != KVPOOL_PAGE_NONE)
			cache_add(r->pages[k]);
	if (upto / PT * PT > r->prot)
		r->prot = upto / PT * PT;
}

static void op_swa(void)
{
	int i = pick_row(false, false), ret;
	__u32 lo, edge, want, got = ~0u, k;
	struct wrow *r;

	if (i < 0)
		return;
	r = &W.rows[i];
	lo = r->prot > r->swa ? r->prot : r->swa;
	if (r->committed < lo)
		return;
	edge = lo + rnd(r->committed - lo + 1);
	want = count_pages(r, lo / PT, edge / PT);
	ret = kt_swa_free1(W.fd, r->h, edge, &got);
	W_CHECK(ret == 0 && got == want, "errno %d, freed %u, want %u", ret,
		got, want);
	for (k = lo / PT; k < edge / PT; k++)
		r->pages[k] = KVPOOL_PAGE_NONE;
	if (edge / PT * PT > r->swa)
		r->swa = edge / PT * PT;
}

static void op_attach(void)
{
	__u32 ids[8], n, sh_ = 0;
	struct kvpool_handle h;
	int s = free_row_slot(), ret;
	struct wrow *r;

	if (s < 0 || !W.ncache)
		return;
	ret = kt_row_alloc(W.fd, 1, &h, &sh_);
	if (ret) {
		check_refusal(ret, sh_);
		return;
	}
	n = pick_cache(ids, 1 + rnd(8), false);
	ret = kt_attach(W.fd, h, ids, n);
	W_CHECK(ret == 0, "errno %d", ret);
	r = &W.rows[s];
	memset(r, 0, offsetof(struct wrow, pages));
	r->used = true;
	r->h = h;
	r->alloc = r->committed = r->prot = n * PT;
	r->nr = n;
	memcpy(r->pages, ids, n * sizeof(__u32));
}

static void op_evict(bool unpinned_only, __u32 max)
{
	__u32 ids[8], n, k;
	struct kvpool_batch b;
	bool busy = false;
	int ret;

	if (!W.ncache)
		return;
	n = pick_cache(ids, max, unpinned_only);
	if (!n)
		return;
	for (k = 0; k < n; k++)
		busy |= pins(ids[k]) > 0;
	ret = kt_evict(W.fd, ids, n, &b);
	if (busy) {
		W_CHECK(ret == EBUSY, "errno %d, want EBUSY", ret);
		ADD(ebusy, 1);
		return;
	}
	W_CHECK(ret == 0 && b.out_nr_pages == n, "errno %d, freed %u of %u",
		ret, b.out_nr_pages, n);
	for (k = 0; k < n; k++)
		cache_del(ids[k]);
}

static void op_to_slot(void)
{
	int i = pick_row(false, false), ret;
	struct wrow *r;
	__u32 got = ~0u;

	if (i < 0)
		return;
	r = &W.rows[i];
	r->session = ++W.next_session;
	ret = kt_to_slot(W.fd, r->session, r->h, &got);
	W_CHECK(ret == 0 && got == owned(r), "errno %d, %u pages, want %u",
		ret, got, owned(r));
	r->slot = true;
}

static void op_from_slot(void)
{
	int i = pick_row(true, false), ret;
	struct kvpool_handle h;
	struct wrow *r;
	__u32 got = ~0u;

	if (i < 0)
		return;
	r = &W.rows[i];
	ret = kt_from_slot(W.fd, r->session, &h, &got);
	W_CHECK(ret == 0 && got == owned(r), "errno %d, %u pages, want %u",
		ret, got, owned(r));
	W_CHECK(h.req_pool_idx == r->h.req_pool_idx, "row %u, want %u",
		h.req_pool_idx, r->h.req_pool_idx);
	W_CHECK(h.generation == r->h.generation + 1 ||
		(r->h.generation == 0xffffffffu && h.generation == 1),
		"generation %u after %u", h.generation, r->h.generation);
	r->h = h;
	r->slot = false;
}

static void op_slot_release(void)
{
	int i = pick_row(true, false), ret;
	__u32 got = ~0u, want;
	struct wrow *r;

	if (i < 0)
		return;
	r = &W.rows[i];
	ret = kt_slot_release(W.fd, r->session, &got);
	want = release_model(r, false);
	W_CHECK(ret == 0 && got == want, "errno %d, freed %u, want %u", ret,
		got, want);
}

/* Take the row in export file @xfd into the model; closes @xfd. */
static void import_fd(int xfd)
{
	static __u32 ids[ROW_PAGES];
	struct kvpool_row_query q;
	struct kvpool_handle h;
	int s = free_row_slot(), ret;
	__u32 nr = ~0u, n;
	struct wrow *r;

	W_CHECK(s >= 0, "no room");
	ret = kt_import(W.fd, xfd, &h, &nr);
	if (ret) {
		W_CHECK(ret == EDQUOT && W.limited, "errno %d", ret);
		ADD(import_refused, 1);
		/* Someone else may take it, or nobody: then it goes back. */
		if (rnd(2))
			kt_send_fds(W.mb_send, "r", 1, &xfd, 1, MSG_DONTWAIT);
		close(xfd);
		return;
	}
	close(xfd);
	ADD(imports, 1);
	ret = kt_query(W.fd, h, ids, ROW_PAGES, &q);
	W_CHECK(ret == 0, "query of the import: errno %d", ret);
	W_CHECK(q.out_state == KVPOOL_ROW_HELD && q.out_protected_len == 0,
		"state %u, protected %u", q.out_state, q.out_protected_len);
	r = &W.rows[s];
	memset(r, 0, offsetof(struct wrow, pages));
	r->used = true;
	r->h = h;
	r->alloc = q.out_allocated_len;
	r->committed = q.out_committed_len;
	r->swa = q.out_swa_evicted_len;
	r->nr = q.out_nr_pages;
	memcpy(r->pages, ids, r->nr * sizeof(__u32));
	n = owned(r);
	W_CHECK(nr == n, "import says %u pages, the row has %u", nr, n);
	W_CHECK(r->nr == kt_div_up(r->alloc, PT) && r->committed <= r->alloc &&
		r->swa <= r->committed, "lengths %u/%u/%u, %u pages", r->alloc,
		r->committed, r->swa, r->nr);
}

static void op_export(void)
{
	int i = pick_row(false, true), ret, xfd = -1;
	__u32 got = ~0u, k, n;
	bool busy = false;
	struct wrow *r;

	if (i < 0)
		return;
	r = &W.rows[i];
	for (k = 0; k < r->prot / PT; k++)
		if (r->pages[k] != KVPOOL_PAGE_NONE && pins(r->pages[k]) != 1)
			busy = true;
	if (r->slot)
		ret = kt_export(W.fd, KVPOOL_EXPORT_SLOT,
				(struct kvpool_handle){ 0, 0 }, r->session,
				&xfd, &got);
	else
		ret = kt_export_row(W.fd, r->h, &xfd, &got);
	if (busy) {
		W_CHECK(ret == EBUSY, "errno %d, want EBUSY", ret);
		ADD(ebusy, 1);
		return;
	}
	n = count_pages(r, 0, r->nr);
	W_CHECK(ret == 0 && got == n, "errno %d, %u pages, want %u", ret, got,
		n);
	W_CHECK(xfd >= 0 && (fcntl(xfd, F_GETFD) & FD_CLOEXEC), "fd %d", xfd);
	for (k = 0; k < r->prot / PT; k++)
		if (r->pages[k] != KVPOOL_PAGE_NONE)
			cache_del(r->pages[k]);
	r->used = false;
	ADD(exports, 1);
	switch (rnd(5)) {
	case 0:
		close(xfd);	/* back to the pool */
		break;
	case 1:
		ADD(self_imports, 1);
		import_fd(xfd);
		break;
	default:
		/* If the queue is full, it is dropped. */
		kt_send_fds(W.mb_send, "x", 1, &xfd, 1, MSG_DONTWAIT);
		close(xfd);
	}
}

static void op_import(void)
{
	int xfd = -1, nfd = 0;
	ssize_t n;
	char c;

	if (free_row_slot() < 0)
		return;
	n = kt_recv_fds(W.mb_recv, &c, 1, &xfd, 1, &nfd, MSG_DONTWAIT);
	if (n <= 0 || !nfd)
		return;
	W_CHECK(kt_is_export_fd(xfd), "got a file that is no export");
	import_fd(xfd);
}

static void op_query(void)
{
	static __u32 ids[ROW_PAGES];
	struct kvpool_row_query q;
	int i = pick_row(false, true), ret;
	struct wrow *r;

	if (i < 0)
		return;
	r = &W.rows[i];
	if (r->slot)
		ret = kt_query_slot(W.fd, r->session, ids, ROW_PAGES, &q);
	else
		ret = kt_query(W.fd, r->h, ids, ROW_PAGES, &q);
	W_CHECK(ret == 0, "errno %d", ret);
	W_CHECK(q.out_state == (r->slot ? KVPOOL_ROW_SLOT : KVPOOL_ROW_HELD) &&
		q.out_req_pool_idx == r->h.req_pool_idx &&
		q.out_nr_pages == r->nr && q.out_allocated_len == r->alloc &&
		q.out_committed_len == r->committed &&
		q.out_protected_len == r->prot &&
		q.out_swa_evicted_len == r->swa,
		"row %u: state %u nr %u alloc %u committed %u prot %u swa %u; want %u %u %u %u %u %u",
		r->h.req_pool_idx, q.out_state, q.out_nr_pages,
		q.out_allocated_len, q.out_committed_len, q.out_protected_len,
		q.out_swa_evicted_len,
		(__u32)(r->slot ? KVPOOL_ROW_SLOT : KVPOOL_ROW_HELD), r->nr,
		r->alloc, r->committed, r->prot, r->swa);
	W_CHECK(!memcmp(ids, r->pages, r->nr * sizeof(__u32)),
		"row %u: pages differ", r->h.req_pool_idx);
}

static void op_stats(void)
{
	__u32 rows = 0, slots = 0, pages = 0, i;
	struct kvpool_stats s;

	for (i = 0; i < W_ROWS; i++) {
		if (!W.rows[i].used)
			continue;
		if (W.rows[i].slot)
			slots++;
		else
			rows++;
		pages += owned(&W.rows[i]);
	}
	W_CHECK(kt_stats(W.fd, &s) == 0, "stats");
	W_CHECK(s.out_client_rows == rows && s.out_client_slots == slots &&
		s.out_client_pages == pages &&
		s.out_client_cache_pages == W.ncache,
		"rows %u slots %u pages %u cache %u; want %u %u %u %u",
		s.out_client_rows, s.out_client_slots, s.out_client_pages,
		s.out_client_cache_pages, rows, slots, pages, W.ncache);
	W_CHECK(s.out_tenant_pages >= pages + W.ncache &&
		s.out_tenant_rows >= rows + slots, "tenant %u pages %u rows",
		s.out_tenant_pages, s.out_tenant_rows);
}

/* Do what pressure asks: evict that many unpinned pages. */
static void op_pressure(void)
{
	struct kvpool_pressure p;
	__u32 unpinned = 0, i;

	W_CHECK(kt_pressure(W.fd, &p) == 0, "pressure");
	for (i = 0; i < W.ncache; i++)
		unpinned += !pins(W.cache[i]);
	W_CHECK(p.out_ask_pages <= unpinned, "asked %u of %u unpinned",
		p.out_ask_pages, unpinned);
	W_CHECK(!p.out_ask_pages == !p.out_reasons, "ask %u, reasons %#x",
		p.out_ask_pages, p.out_reasons);
	while (p.out_ask_pages) {
		__u32 n = p.out_ask_pages < 8 ? p.out_ask_pages : 8;

		op_evict(true, n);
		ADD(evicted_asked, n);
		p.out_ask_pages -= n;
	}
}

static void open_client(void)
{
	W.fd = kt_open_id(W.pool_id, O_RDWR | O_CLOEXEC);
	W_CHECK(W.fd >= 0, "open: %s", strerror(errno));
	memset(W.rows, 0, sizeof(W.rows));
	W.ncache = 0;
}

static void worker_main(void) __attribute__((noreturn));
static void worker_main(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
		unsigned int weight;
	} ops[] = {
		{ "alloc", op_alloc, 10 },
		{ "extend", op_extend, 20 },
		{ "commit", op_commit, 10 },
		{ "trim", op_trim, 4 },
		{ "release", op_release, 6 },
		{ "donate", op_donate, 6 },
		{ "swa", op_swa, 4 },
		{ "attach", op_attach, 4 },
		{ "to_slot", op_to_slot, 4 },
		{ "from_slot", op_from_slot, 4 },
		{ "slot_release", op_slot_release, 2 },
		{ "export", op_export, 5 },
		{ "import", op_import, 6 },
		{ "query", op_query, 6 },
		{ "stats", op_stats, 3 },
		{ "pressure", op_pressure, 3 },
	};
	unsigned int total = 0, i, r;

	for (i = 0; i < ARRAY_SIZE(ops); i++)
		total += ops[i].weight;
	open_client();
	for (;;) {
		r = rnd(total + 6);
		if (r >= total) {
			W.op = r < total + 5 ? "evict" : "reopen";
			if (r < total + 5) {
				op_evict(false, 1 + rnd(3));
			} else if (rnd(10) == 0) {
				close(W.fd);
				open_client();
				ADD(reopens, 1);
			}
		} else {
			for (i = 0; r >= ops[i].weight; i++)
				r -= ops[i].weight;
			W.op = ops[i].name;
			ops[i].fn();
		}
		ADD(ops, 1);
	}
}

/* ---- the test ------------------------------------------------------------ */

FIXTURE(torture) {
	struct kt_tenv e;
	int mb[2];
};

FIXTURE_SETUP(torture)
{
	kt_tenv_init(_metadata, &self->e, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, PT, NR_ROWS, ROW_TOKENS, 1);
	self->mb[0] = self->mb[1] = -1;
}

FIXTURE_TEARDOWN(torture)
{
	if (self->mb[0] >= 0)
		close(self->mb[0]);
	if (self->mb[1] >= 0)
		close(self->mb[1]);
	kt_tenv_fini(_metadata, &self->e);
}

static pid_t spawn(struct __test_metadata *_metadata,
		   FIXTURE_DATA(torture) *self, int slot, unsigned int seed,
		   unsigned int nth)
{
	static const int uids[3] = { -1, UID_1, UID_2 };
	pid_t pid = kt_pool_fork(_metadata, &self->e.pool);
	int uid = uids[nth % 3];

	if (pid)
		return pid;
	close(self->e.fd);
	close(self->e.pool.ctl);
	memset(&W, 0, sizeof(W));
	W.id = (int)nth;
	W.pool_id = self->e.pool.id;
	W.seed = W.seed0 = seed ^ (nth * 0x9e3779b9u);
	W.limited = uid >= 0;
	W.mb_send = self->mb[0];
	W.mb_recv = self->mb[1];
	W.op = "setup";
	(void)slot;
	if (uid == UID_2)
		W_CHECK(kt_cgroup_move(self->e.cg[0], 0) == 0, "cgroup");
	if (uid >= 0)
		W_CHECK(kt_become(uid) == 0, "become %d", uid);
	worker_main();
}

TEST_F_TIMEOUT(torture, random_work_and_kills, 100)
{
	struct kt_tenv *e = &self->e;
	unsigned int seed, secs = 20, kills = 0, spawns = 0, bad = 0, drained = 0;
	unsigned int changes = 0;
	pid_t pids[NR_WORKERS];
	long long start, next_check;
	struct kvpool_verify v;
	struct kvpool_stats s;
	struct kvpool_handle h;
	const char *env;
	int i, status;
	__u32 nr;

	env = getenv("KVPOOL_SEED");
	seed = env && *env ? (unsigned int)strtoul(env, NULL, 0) :
			     (unsigned int)(time(NULL) ^ (getpid() << 8));
	env = getenv("KVPOOL_TORTURE_SECS");
	if (env && *env)
		secs = (unsigned int)strtoul(env, NULL, 0);
	ksft_print_msg("torture: seed %u (KVPOOL_SEED), %u s, %d workers\n",
		       seed, secs, NR_WORKERS);
	fflush(stdout);	/* the harness's child ends with _exit() */

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 1500, 300, 0, NULL));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_2, 0, 200, 24, NULL));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
				self->mb));

	for (i = 0; i < NR_WORKERS; i++)
		pids[i] = spawn(_metadata, self, i, seed, spawns++);
	srand(seed);
	start = kt_now_ms();
	next_check = start + 1000;
	while (kt_now_ms() - start < secs * 1000LL) {
		kt_sleep_ms(20 + rand() % 230);
		/* Nobody may have died on its own. */
		for (i = 0; i < NR_WORKERS; i++) {
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				kt_pool_wait(&e->pool, pids[i]);
				EXPECT_TRUE(false)
					TH_LOG("worker pid %d ended by itself, status %#x",
					       pids[i], status);
				bad++;
				pids[i] = spawn(_metadata, self, i, seed, spawns++);
			}
		}
		i = rand() % NR_WORKERS;
		kill(pids[i], SIGKILL);
		status = kt_pool_wait(&e->pool, pids[i]);
		if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
			EXPECT_TRUE(false) TH_LOG("worker pid %d: status %#x",
						  pids[i], status);
			bad++;
		}
		kills++;
		pids[i] = spawn(_metadata, self, i, seed, spawns++);
		if (rand() % 4 == 0) {
			/* New limits (may be below use) and watermarks. */
			__u32 low = rand() % 200;

			EXPECT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id,
						      e->self_cgid, UID_1,
						      rand() % 2 ? 0 : 600 + rand() % 1400,
						      rand() % 300, 0, NULL));
			EXPECT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id,
						      e->cgid[0], UID_2, 0,
						      rand() % 300,
						      rand() % 2 ? 0 : 6 + rand() % 24,
						      NULL));
			EXPECT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, low,
						  low + rand() % 200));
			changes++;
		}
		if (kt_now_ms() >= next_check) {
			next_check += 1000;
			ASSERT_EQ(0, kt_verify(e->fd, &v));
			ASSERT_EQ(0, v.out_violations)
				TH_LOG("VERIFY during the run (see dmesg)");
			ASSERT_EQ(0, kt_stats(e->fd, &s));
			kt_check_identities(_metadata, &e->pool, &s);
		}
		if (bad > 3)
			break;
	}
	for (i = 0; i < NR_WORKERS; i++) {
		kill(pids[i], SIGKILL);
		status = kt_pool_wait(&e->pool, pids[i]);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("worker pid %d: status %#x", pids[i], status);
	}

	/* Rows still in flight: import half, drop the rest. */
	for (;;) {
		int xfd = -1, nfd = 0;
		char c;

		if (kt_recv_fds(self->mb[1], &c, 1, &xfd, 1, &nfd,
				MSG_DONTWAIT) <= 0)
			break;
		if (!nfd)
			continue;
		drained++;
		if (drained % 2) {
			EXPECT_EQ(0, kt_import(e->fd, xfd, &h, &nr));
			EXPECT_EQ(0, kt_release1(e->fd, h, NULL));
		}
		close(xfd);
	}
	close(self->mb[0]);
	close(self->mb[1]);
	self->mb[0] = self->mb[1] = -1;
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, kt_stats(e->fd, &s));
		if (!s.out_export_rows)
			break;
		kt_sleep_ms(10);
	}
	ksft_print_msg("torture: %d workers, %.1f s, seed %u: %u kills, %u spawned, %llu ops, %u exports, %u imports (%u by the exporter, %u refused EDQUOT), %u drained at the end; %u ENOSPC, %u EDQUOT, %u EBUSY, %u donations refused past protected, %u pages evicted on request, %u reopens, %u limit changes\n",
		       NR_WORKERS, (kt_now_ms() - start) / 1000.0, seed, kills,
		       spawns, sh->ops, sh->exports, sh->imports,
		       sh->self_imports, sh->import_refused, drained,
		       sh->enospc, sh->edquot, sh->ebusy, sh->holed,
		       sh->evicted_asked, sh->reopens, changes);
	fflush(stdout);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, kills);
	EXPECT_LT(0, sh->exports);
	EXPECT_LT(0, sh->imports);
	/* Everyone is gone: the whole pool is back. */
	kt_tenv_expect_full(_metadata, &e->pool, e->fd, 1);
	kt_check_identities(_metadata, &e->pool, &s);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
