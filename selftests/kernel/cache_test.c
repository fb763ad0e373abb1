// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the prefix cache and sliding-window free.
 *
 * DONATE, ATTACH_PREFIX, CACHE_EVICT, SWA_FREE and RELEASE with
 * KVPOOL_RELEASE_DONATE on pools with page_tokens 1 and 16: what each op
 * moves (STATS, ROW_QUERY's lengths and page lists, KVPOOL_PAGE_NONE
 * holes), every errno of the header with out_error_index on the first bad
 * entry, all-or-nothing (a refused call leaves STATS and every row as they
 * were), element lengths (entry_len, page_entry_len), pins (shared
 * prefixes, slots, release), isolation between two clients of one pool,
 * and a client killed while it holds cache pages. A prefix is cached whole
 * or not at all: a row whose window has slid past its protected prefix
 * (swa_evicted > protected) donates nothing (EINVAL), and a donated prefix
 * never gets a hole.
 *
 * After every step the accounting identities hold: free + row + slot +
 * cache_evictable + cache_pinned + reserved == nr_pages, sysfs and fdinfo
 * agree with STATS, and KVPOOL_VERIFY finds nothing broken.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#define NR_PAGES	1024
#define NR_ROWS		32
#define ROW_PAGES	256	/* row_tokens / page_tokens */

FIXTURE(cache) {
	struct kt_pool pool;
	int fd;		/* the client under test */
	int fd2;	/* another client of the same pool */
	__u32 pt;
	__u32 half;	/* part of a page: pt / 2 tokens (0 at pt 1) */
	__u32 ids[NR_PAGES];
	struct kt_row_snap row;
	struct kt_state before, after;
};

FIXTURE_VARIANT(cache) {
	__u32 page_tokens;
};

FIXTURE_VARIANT_ADD(cache, pt1) {
	.page_tokens = 1,
};

FIXTURE_VARIANT_ADD(cache, pt16) {
	.page_tokens = 16,
};

FIXTURE_SETUP(cache)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, variant->page_tokens, NR_ROWS,
		     ROW_PAGES * variant->page_tokens);
	self->fd = kt_pool_open(_metadata, &self->pool);
	self->fd2 = kt_pool_open(_metadata, &self->pool);
	self->pt = variant->page_tokens;
	self->half = variant->page_tokens / 2;
}

FIXTURE_TEARDOWN(cache)
{
	kt_pool_fini(_metadata, &self->pool);
}

/* Pages a row of `len` tokens maps. */
#define NP(len) kt_div_up((len), self->pt)

/* ---- helpers ----------------------------------------------------------- */

static void expect_fdinfo_is(struct __test_metadata *_metadata, int fd,
			     const char *key, __u32 want)
{
	__u64 v = ~0ull;

	EXPECT_EQ(0, kt_fdinfo_u64(fd, key, &v)) TH_LOG("fdinfo %s", key);
	EXPECT_EQ(want, v) TH_LOG("fdinfo %s", key);
}

static void expect_sysfs_is(struct __test_metadata *_metadata, __u32 id,
			    const char *name, __u32 want)
{
	__u64 v = ~0ull;

	EXPECT_EQ(0, kt_sysfs_u64(id, name, &v)) TH_LOG("sysfs %s", name);
	EXPECT_EQ(want, v) TH_LOG("sysfs %s", name);
}

/*
 * The accounting of the pool after a step: the identities on both clients'
 * STATS, the pool figures alike for both, the clients' own figures adding
 * up to the pool's (when they are the only clients), fdinfo and sysfs as
 * STATS says, and VERIFY clean.
 */
static void expect_acct(struct __test_metadata *_metadata,
			FIXTURE_DATA(cache) *self)
{
	const int fds[2] = { self->fd, self->fd2 };
	struct kvpool_stats s[2];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, kt_stats(fds[i], &s[i]));
		kt_check_identities(_metadata, &self->pool, &s[i]);
		expect_fdinfo_is(_metadata, fds[i], "kvpool-rows",
				 s[i].out_client_rows);
		expect_fdinfo_is(_metadata, fds[i], "kvpool-slots",
				 s[i].out_client_slots);
		expect_fdinfo_is(_metadata, fds[i], "kvpool-pages",
				 s[i].out_client_pages);
		expect_fdinfo_is(_metadata, fds[i], "kvpool-cache-pages",
				 s[i].out_client_cache_pages);
	}
	EXPECT_EQ(s[0].out_free_pages, s[1].out_free_pages);
	EXPECT_EQ(s[0].out_row_pages, s[1].out_row_pages);
	EXPECT_EQ(s[0].out_slot_pages, s[1].out_slot_pages);
	EXPECT_EQ(s[0].out_cache_evictable, s[1].out_cache_evictable);
	EXPECT_EQ(s[0].out_cache_pinned, s[1].out_cache_pinned);
	if (s[0].out_nr_clients == 2) {
		EXPECT_EQ(s[0].out_row_pages + s[0].out_slot_pages,
			  s[0].out_client_pages + s[1].out_client_pages);
		EXPECT_EQ(s[0].out_cache_evictable + s[0].out_cache_pinned,
			  s[0].out_client_cache_pages +
			  s[1].out_client_cache_pages);
		/*
		 * Both clients are this process's: one tenant, whose pages
		 * are its clients' rows, slots and prefix caches.
		 */
		EXPECT_EQ(s[0].out_tenant_id, s[1].out_tenant_id);
		EXPECT_EQ(s[0].out_client_pages + s[1].out_client_pages +
			  s[0].out_client_cache_pages +
			  s[1].out_client_cache_pages, s[0].out_tenant_pages);
		EXPECT_EQ(s[0].out_client_rows + s[1].out_client_rows +
			  s[0].out_client_slots + s[1].out_client_slots,
			  s[0].out_tenant_rows);
	}
#define SYSFS(name, val) expect_sysfs_is(_metadata, self->pool.id, name, val)
	SYSFS("free_pages", s[0].out_free_pages);
	SYSFS("row_pages", s[0].out_row_pages);
	SYSFS("slot_pages", s[0].out_slot_pages);
	SYSFS("cache_evictable", s[0].out_cache_evictable);
	SYSFS("cache_pinned", s[0].out_cache_pinned);
	SYSFS("reserved_pages", s[0].out_reserved_pages);
	SYSFS("nr_clients", s[0].out_nr_clients);
#undef SYSFS
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

#define ACCT() expect_acct(_metadata, self)

/* Nothing changed since the snapshot `before` of the same rows. */
#define EXPECT_UNCHANGED(fd, h, nr) do {				\
	kt_snap((fd), (h), (nr), &self->after);			\
	EXPECT_STREQ("", kt_state_diff(&self->before, &self->after));	\
} while (0)

/* The row's page ids in position order; returns how many. */
static __u32 row_ids(struct __test_metadata *_metadata, int fd,
		     struct kvpool_handle h, __u32 *ids, __u32 cap)
{
	struct kvpool_row_query q;

	ASSERT_EQ(0, kt_query(fd, h, ids, cap, &q));
	ASSERT_GE(cap, q.out_nr_pages);
	return q.out_nr_pages;
}

/*
 * `n` new unpinned pages in fd's prefix cache: a row of n full committed
 * pages released with KVPOOL_RELEASE_DONATE. ids gets them.
 */
static void cache_pages(struct __test_metadata *_metadata,
			FIXTURE_DATA(cache) *self, int fd, __u32 n, __u32 *ids)
{
	struct kvpool_handle h = kt_new_row(_metadata, fd, n * self->pt,
					 n * self->pt);
	struct kvpool_stats s0, s1;
	__u32 freed = ~0u;

	ASSERT_EQ(n, row_ids(_metadata, fd, h, ids, n));
	ASSERT_EQ(0, kt_stats(fd, &s0));
	ASSERT_EQ(0, kt_release_donate1(fd, h, &freed));
	ASSERT_EQ(0, freed);
	ASSERT_EQ(0, kt_stats(fd, &s1));
	ASSERT_EQ(s0.out_cache_evictable + n, s1.out_cache_evictable);
	ASSERT_EQ(s0.out_cache_pinned, s1.out_cache_pinned);
	ASSERT_EQ(s0.out_client_cache_pages + n, s1.out_client_cache_pages);
}

/*
 * The id of a page that is free right now (it was a row's and was
 * released). Valid until the next allocation.
 */
static __u32 free_page_id(struct __test_metadata *_metadata,
			  FIXTURE_DATA(cache) *self)
{
	struct kvpool_handle h = kt_new_row(_metadata, self->fd, 1, 0);
	__u32 id, freed = 0;

	ASSERT_EQ(1, row_ids(_metadata, self->fd, h, &id, 1));
	ASSERT_EQ(0, kt_release1(self->fd, h, &freed));
	ASSERT_EQ(1, freed);
	return id;
}

/*
 * A handle that is stale for fd: it names a row fd holds again under a
 * newer generation. *fresh gets the current handle (a row with no tokens).
 */
static void make_stale(struct __test_metadata *_metadata, int fd,
		       struct kvpool_handle *stale, struct kvpool_handle *fresh)
{
	struct kvpool_handle all[NR_ROWS];
	struct kvpool_stats st;
	__u32 i, n, found = 0;

	ASSERT_EQ(0, kt_row_alloc(fd, 1, stale, NULL));
	ASSERT_EQ(0, kt_release1(fd, *stale, NULL));
	ASSERT_EQ(0, kt_stats(fd, &st));
	n = st.out_free_rows;
	ASSERT_EQ(0, kt_row_alloc(fd, n, all, NULL));
	for (i = 0; i < n; i++) {
		if (all[i].req_pool_idx == stale->req_pool_idx) {
			*fresh = all[i];
			found = 1;
		} else {
			ASSERT_EQ(0, kt_release1(fd, all[i], NULL));
		}
	}
	ASSERT_EQ(1, found);
	ASSERT_NE(stale->generation, fresh->generation);
}

/* A handle fd held once and released. */
static struct kvpool_handle released_row(struct __test_metadata *_metadata,
					 int fd)
{
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_release1(fd, h, NULL));
	return h;
}

static struct kvpool_len_entry len_entry(struct kvpool_handle h, __u32 len)
{
	return (struct kvpool_len_entry){ .handle = h, .len = len };
}

/* @h with a generation @ahead of it: never issued, so it names nothing. */
static struct kvpool_handle future(struct kvpool_handle h, __u32 ahead)
{
	h.generation += ahead;
	return h;
}

/* ATTACH_PREFIX with the page-id length given. */
static int attach_elen(int fd, struct kvpool_handle h, const void *ids,
		       __u32 nr_pages, __u32 page_entry_len)
{
	struct kvpool_attach a = {
		.size = sizeof(a),
		.handle = h,
		.nr_pages = nr_pages,
		.page_entry_len = page_entry_len,
		.pages = kt_ptr(ids),
	};

	return kt_ioctl(fd, KVPOOL_ATTACH_PREFIX, &a);
}

/* ---- the fresh figures ------------------------------------------------- */

TEST_F(cache, fresh_client)
{
	struct kvpool_info i;
	struct kvpool_stats s;

	ASSERT_EQ(0, kt_info(self->fd, &i));
	EXPECT_EQ(KVPOOL_FEAT_PREFIX_CACHE,
		  i.out_features & KVPOOL_FEAT_PREFIX_CACHE);
	EXPECT_EQ(KVPOOL_FEAT_SWA, i.out_features & KVPOOL_FEAT_SWA);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(0, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_client_cache_pages);
	expect_fdinfo_is(_metadata, self->fd, "kvpool-cache-pages", 0);
	ACCT();
}

/* ---- DONATE -------------------------------------------------------------- */

/*
 * The row's full committed pages move to the cache, pinned by the row,
 * which keeps mapping them; the partial last page stays the row's.
 */
TEST_F(cache, donate_moves_pages)
{
	const __u32 pt = self->pt, half = self->half;
	struct kt_row_snap *r = &self->row;
	__u32 ids[6], n = ~0u;
	struct kvpool_stats s0, s1;
	struct kvpool_handle h;
	struct kvpool_batch b;

	h = kt_new_row(_metadata, self->fd, 6 * pt, 3 * pt + half);
	ASSERT_EQ(6, row_ids(_metadata, self->fd, h, ids, 6));
	ACCT();
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	ASSERT_EQ(0, kt_donate1(self->fd, h, 3 * pt + half, &n));
	EXPECT_EQ(3, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_pinned + 3, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_cache_evictable, s1.out_cache_evictable);
	EXPECT_EQ(s0.out_row_pages - 3, s1.out_row_pages);
	EXPECT_EQ(s0.out_client_pages - 3, s1.out_client_pages);
	EXPECT_EQ(s0.out_client_cache_pages + 3, s1.out_client_cache_pages);
	EXPECT_EQ(s0.out_free_pages, s1.out_free_pages);
	EXPECT_EQ(s0.out_held_rows, s1.out_held_rows);
	ACCT();

	/* protected is upto rounded down; the row maps the same pages. */
	kt_snap_row(self->fd, h, r);
	ASSERT_EQ(0, r->err);
	EXPECT_EQ(KVPOOL_ROW_HELD, r->state);
	EXPECT_EQ(6 * pt, r->alloc);
	EXPECT_EQ(3 * pt + half, r->committed);
	EXPECT_EQ(3 * pt, r->protected_len);
	EXPECT_EQ(0, r->swa);
	EXPECT_EQ(6, r->nr_pages);
	EXPECT_EQ(0, memcmp(ids, r->pages, sizeof(ids)));

	/* Donated pages are pinned by the donor; page 3 is still the row's. */
	EXPECT_EQ(EBUSY, kt_evict(self->fd, ids, 3, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &ids[3], 1, &b));
	EXPECT_EQ(0, b.out_error_index);

	/* TRIM frees the speculative tail, never what was donated. */
	ASSERT_EQ(0, kt_trim1(self->fd, h, &n));
	EXPECT_EQ(6 - NP(3 * pt + half), n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(3 * pt + half, r->alloc);
	EXPECT_EQ(3 * pt, r->protected_len);
	EXPECT_EQ(0, memcmp(ids, r->pages, NP(3 * pt + half) * 4));
	ACCT();

	/* Grow, commit, donate the rest: protected follows. */
	ASSERT_EQ(0, kt_grow(self->fd, h, 6 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, h, 6 * pt));
	ASSERT_EQ(6, row_ids(_metadata, self->fd, h, ids, 6));
	ASSERT_EQ(0, kt_donate1(self->fd, h, 6 * pt, &n));
	EXPECT_EQ(3, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(6 * pt, r->protected_len);
	EXPECT_EQ(6 * pt, r->committed);
	EXPECT_EQ(0, memcmp(ids, r->pages, sizeof(ids)));
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_pinned + 6, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_client_cache_pages + 6, s1.out_client_cache_pages);
	EXPECT_EQ(0, s1.out_client_pages);
	ACCT();

	/* Release: nothing to free, all six unpinned. */
	ASSERT_EQ(0, kt_release1(self->fd, h, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_evictable + 6, s1.out_cache_evictable);
	EXPECT_EQ(s0.out_cache_pinned, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_held_rows - 1, s1.out_held_rows);
	ACCT();

	/* Evict them all. */
	ASSERT_EQ(0, kt_evict(self->fd, ids, 6, &b));
	EXPECT_EQ(6, b.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(self->pool.usable_pages, s1.out_free_pages);
	EXPECT_EQ(0, s1.out_cache_evictable);
	EXPECT_EQ(0, s1.out_client_cache_pages);
	ACCT();
}

/*
 * Only whole pages move; protected is upto rounded down to a page. Donating
 * at or below protected again is EALREADY and changes nothing.
 */
TEST_F(cache, donate_rounds_down)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_len_entry e;
	struct kvpool_handle h;
	struct kvpool_batch b;
	__u32 n = ~0u;

	h = kt_new_row(_metadata, self->fd, 3 * pt, 3 * pt);
	if (pt > 1) {
		/* Inside page 0: no whole page to move, protected stays 0. */
		kt_snap(self->fd, &h, 1, &self->before);
		ASSERT_EQ(0, kt_donate1(self->fd, h, pt - 1, &n));
		EXPECT_EQ(0, n);
		EXPECT_UNCHANGED(self->fd, &h, 1);
	}
	ASSERT_EQ(0, kt_donate1(self->fd, h, pt, &n));
	EXPECT_EQ(1, n);
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(pt, self->row.protected_len);
	ACCT();

	/* Double donation: upto == protected, below it, 0. */
	kt_snap(self->fd, &h, 1, &self->before);
	e = len_entry(h, pt);
	EXPECT_EQ(EALREADY, kt_batch(self->fd, KVPOOL_DONATE, 0, &e, 1, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	EXPECT_EQ(EALREADY, kt_donate1(self->fd, h, pt - 1, NULL));
	EXPECT_EQ(EALREADY, kt_donate1(self->fd, h, 0, NULL));
	EXPECT_UNCHANGED(self->fd, &h, 1);

	if (pt > 1) {
		/*
		 * Above protected but in the same page: accepted (the header
		 * refuses only upto <= protected), nothing moves, protected
		 * is still upto rounded down.
		 */
		ASSERT_EQ(0, kt_donate1(self->fd, h, pt + half, &n));
		EXPECT_EQ(0, n);
		EXPECT_UNCHANGED(self->fd, &h, 1);
	}

	ASSERT_EQ(0, kt_donate1(self->fd, h, 3 * pt, &n));
	EXPECT_EQ(2, n);
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(3 * pt, self->row.protected_len);
	EXPECT_EQ(EALREADY, kt_donate1(self->fd, h, 3 * pt, NULL));
	EXPECT_EQ(EALREADY, kt_donate1(self->fd, h, 2 * pt, NULL));
	ACCT();
}

/* A batch donates every row; out_nr_pages is the sum. */
TEST_F(cache, donate_batch)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_len_entry e[3];
	struct kvpool_handle h[3];
	struct kvpool_stats s0, s1;
	struct kvpool_batch b;
	int i;

	h[0] = kt_new_row(_metadata, self->fd, 4 * pt, 2 * pt + half);
	h[1] = kt_new_row(_metadata, self->fd, 3 * pt, 3 * pt);
	h[2] = kt_new_row(_metadata, self->fd, 5 * pt + half, 5 * pt + half);
	e[0] = len_entry(h[0], 2 * pt + half);
	e[1] = len_entry(h[1], 3 * pt);
	e[2] = len_entry(h[2], 4 * pt);
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(2 + 3 + 4, b.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_pinned + 9, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_client_pages - 9, s1.out_client_pages);
	for (i = 0; i < 3; i++) {
		kt_snap_row(self->fd, h[i], &self->row);
		EXPECT_EQ(e[i].len / pt * pt, self->row.protected_len);
	}
	ACCT();

	/* The same rows with release-and-donate in one batch. */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, kt_commit1(self->fd, h[i], i == 0 ? 4 * pt :
					i == 1 ? 3 * pt : 5 * pt + half));
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE,
			      h, 3, &b));
	/* Donated on release: row 0's pages 2, 3 and row 2's page 4. */
	EXPECT_EQ(pt > 1 ? 1 : 0, b.out_nr_pages);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_evictable + 9 + 3, s1.out_cache_evictable);
	EXPECT_EQ(s0.out_cache_pinned, s1.out_cache_pinned);
	EXPECT_EQ(0, s1.out_client_rows);
	EXPECT_EQ(0, s1.out_client_pages);
	ACCT();
}

/* Every errno of DONATE; all-or-nothing. */
TEST_F(cache, donate_errors)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_handle h[3], foreign, released, stale, fresh, parked;
	struct kvpool_len_entry e[3];
	struct kvpool_batch b;
	__u32 n;

	make_stale(_metadata, self->fd, &stale, &fresh);
	h[0] = kt_new_row(_metadata, self->fd, 4 * pt, 2 * pt + half);
	h[1] = kt_new_row(_metadata, self->fd, 4 * pt, 3 * pt);
	h[2] = kt_new_row(_metadata, self->fd, 2 * pt, 2 * pt);
	foreign = kt_new_row(_metadata, self->fd2, 2 * pt, 2 * pt);
	parked = kt_new_row(_metadata, self->fd, 2 * pt, 2 * pt);
	ASSERT_EQ(0, kt_to_slot(self->fd, 7, parked, NULL));
	/* Released last, so no later alloc takes the row again. */
	released = released_row(_metadata, self->fd);
	/* Row 1 has donated already. */
	ASSERT_EQ(0, kt_donate1(self->fd, h[1], 2 * pt, &n));
	ASSERT_EQ(2, n);
	ACCT();
	kt_snap(self->fd, h, 3, &self->before);

	e[0] = len_entry(h[0], 2 * pt);
	e[2] = len_entry(h[2], 2 * pt);

	/* Past committed (even if allocated): EINVAL. */
	e[1] = len_entry(h[0], 2 * pt + half + 1);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_DONATE, 0, &e[1], 1, &b));
	EXPECT_EQ(0, b.out_error_index);
	e[1] = len_entry(h[1], 4 * pt);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	/* At or below protected: EALREADY, on the bad entry only. */
	e[1] = len_entry(h[1], 2 * pt);
	EXPECT_EQ(EALREADY, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	e[1] = len_entry(h[1], pt);
	EXPECT_EQ(EALREADY, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* A fresh row: upto 0 is not above protected 0. */
	e[1] = len_entry(fresh, 0);
	EXPECT_EQ(EALREADY, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* Handles: another client's, released, stale, parked, out of range. */
	e[1] = len_entry(foreign, pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(released, 0);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(stale, 0);
	EXPECT_EQ(ESTALE, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* A generation not issued yet names nothing: ENOENT, not ESTALE. */
	e[1] = len_entry(future(h[1], 1), 3 * pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(future(h[1], 5), 3 * pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(parked, pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry((struct kvpool_handle){ NR_ROWS, 1 }, pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry((struct kvpool_handle){ KT_BAD_IDX, 1 }, pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* The same row twice. */
	e[1] = len_entry(h[2], pt);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	/* A non-zero reserved word in an entry. */
	e[1] = len_entry(h[1], 3 * pt);
	e[1].__reserved = 1;
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* Flags. */
	e[1].__reserved = 0;
	EXPECT_EQ(EOPNOTSUPP, kt_batch(self->fd, KVPOOL_DONATE,
				       KVPOOL_RELEASE_DONATE, e, 3, &b));
	EXPECT_UNCHANGED(self->fd, h, 3);
	ACCT();

	/* The batch as it should be: all three. */
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 3, &b));
	EXPECT_EQ(2 + 1 + 2, b.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	ACCT();
}

/*
 * count, entries: the batch shape of DONATE, SWA_FREE and CACHE_EVICT.
 * Checked before any entry; nothing changes.
 */
TEST_F(cache, batch_shape)
{
	const unsigned long cmds[] = {
		KVPOOL_DONATE, KVPOOL_SWA_FREE, KVPOOL_CACHE_EVICT,
	};
	const size_t esize[] = {
		sizeof(struct kvpool_len_entry),
		sizeof(struct kvpool_len_entry), sizeof(__u32),
	};
	static struct kvpool_len_entry e[8192 + 1];
	struct kvpool_handle h;
	struct kvpool_batch b;
	unsigned int i;
	char *g, *edge;

	g = kt_map_guarded();
	ASSERT_NE(NULL, g);
	edge = kt_fault_edge(g);
	cache_pages(_metadata, self, self->fd, 2, self->ids);
	h = kt_new_row(_metadata, self->fd, 2 * self->pt, 2 * self->pt);
	kt_snap(self->fd, &h, 1, &self->before);
	for (i = 0; i < ARRAY_SIZE(e); i++)
		e[i] = len_entry(h, self->pt);
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		EXPECT_EQ(EINVAL, kt_batch(self->fd, cmds[i], 0, e, 0, &b));
		EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
		EXPECT_EQ(0, b.out_nr_pages);
		EXPECT_EQ(EINVAL, kt_batch(self->fd, cmds[i], 0, e,
					   self->pool.max_batch + 1, &b));
		EXPECT_EQ(EINVAL, kt_batch(self->fd, cmds[i], 0, e, ~0u, &b));
		EXPECT_EQ(EFAULT, kt_batch(self->fd, cmds[i], 0, NULL, 1,
					   &b));
		EXPECT_EQ(EFAULT, kt_batch(self->fd, cmds[i], 0,
					   kt_fault_edge(g), 1, &b));
		/* The second entry crosses into the unmapped page. */
		EXPECT_EQ(EFAULT, kt_batch(self->fd, cmds[i], 0,
					   edge - esize[i], 2, &b));
		EXPECT_EQ(EOPNOTSUPP, kt_batch(self->fd, cmds[i], 1u << 31,
					       e, 1, &b));
	}
	EXPECT_UNCHANGED(self->fd, &h, 1);
	munmap(g, 2 * KT_PAGE_SIZE);
	ACCT();
}

/*
 * entry_len of DONATE, SWA_FREE, CACHE_EVICT and RELEASE: shorter than the
 * header's entry is EINVAL, past PAGE_SIZE E2BIG, both before any entry
 * counts (out_error_index ~0U); longer entries work when the bytes the
 * kernel does not know are zero, and are E2BIG naming the entry when not.
 * Nothing changes on a refusal.
 */
TEST_F(cache, element_lengths)
{
	const __u32 pt = self->pt;
	const unsigned long cmds[] = {
		KVPOOL_DONATE, KVPOOL_SWA_FREE, KVPOOL_CACHE_EVICT,
		KVPOOL_RELEASE,
	};
	const __u32 known[] = {
		sizeof(struct kvpool_len_entry),
		sizeof(struct kvpool_len_entry), sizeof(__u32),
		sizeof(struct kvpool_handle),
	};
	struct {
		struct kvpool_len_entry e;
		__u64 tail;
	} w[2];
	unsigned char odd[2 * 20];
	struct kvpool_handle h[3];
	struct kt_row_snap *r = &self->row;
	struct kvpool_batch b;
	__u32 p[3], ev[4], i;

	cache_pages(_metadata, self, self->fd, 3, p);
	h[0] = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	h[1] = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	h[2] = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	memset(w, 0, sizeof(w));
	w[0].e = len_entry(h[0], 2 * pt);
	w[1].e = len_entry(h[1], 3 * pt);
	kt_snap(self->fd, h, 3, &self->before);

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		EXPECT_EQ(EINVAL, kt_batch_len(self->fd, cmds[i], 0, w, 1, 0, &b))
			TH_LOG("cmd %u, entry_len 0", i);
		EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
		EXPECT_EQ(EINVAL, kt_batch_len(self->fd, cmds[i], 0, w, 1,
					     known[i] - 1, &b))
			TH_LOG("cmd %u, entry_len %u", i, known[i] - 1);
		EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
		EXPECT_EQ(E2BIG, kt_batch_len(self->fd, cmds[i], 0, w, 1,
					    KT_PAGE_SIZE + 1, &b))
			TH_LOG("cmd %u, entry_len past PAGE_SIZE", i);
		EXPECT_EQ(E2BIG, kt_batch_len(self->fd, cmds[i], 0, w, 1, ~0u,
					    &b))
			TH_LOG("cmd %u, entry_len ~0", i);
	}
	EXPECT_UNCHANGED(self->fd, h, 3);

	/* DONATE, 24-byte entries: a non-zero tail names its entry. */
	w[1].tail = 1;
	EXPECT_EQ(E2BIG, kt_batch_len(self->fd, KVPOOL_DONATE, 0, w, 2,
				    sizeof(w[0]), &b));
	EXPECT_EQ(1, b.out_error_index);
	w[1].tail = 0;
	w[0].tail = 1ull << 63;
	EXPECT_EQ(E2BIG, kt_batch_len(self->fd, KVPOOL_DONATE, 0, w, 2,
				    sizeof(w[0]), &b));
	EXPECT_EQ(0, b.out_error_index);
	w[0].tail = 0;
	EXPECT_UNCHANGED(self->fd, h, 3);
	ASSERT_EQ(0, kt_batch_len(self->fd, KVPOOL_DONATE, 0, w, 2,
				sizeof(w[0]), &b));
	EXPECT_EQ(2 + 3, b.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	kt_snap_row(self->fd, h[0], r);
	EXPECT_EQ(2 * pt, r->protected_len);
	kt_snap_row(self->fd, h[1], r);
	EXPECT_EQ(3 * pt, r->protected_len);
	ACCT();

	/* SWA_FREE, 20-byte entries (an odd stride is fine). */
	memset(odd, 0, sizeof(odd));
	w[0].e = len_entry(h[2], 2 * pt);
	memcpy(odd, &w[0].e, sizeof(w[0].e));
	w[0].e = len_entry(h[0], 3 * pt);
	memcpy(odd + 20, &w[0].e, sizeof(w[0].e));
	odd[20 + 17] = 1;
	kt_snap(self->fd, h, 3, &self->before);
	EXPECT_EQ(E2BIG, kt_batch_len(self->fd, KVPOOL_SWA_FREE, 0, odd, 2, 20,
				    &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, h, 3);
	odd[20 + 17] = 0;
	ASSERT_EQ(0, kt_batch_len(self->fd, KVPOOL_SWA_FREE, 0, odd, 2, 20, &b));
	/* h[2]: pages 0 and 1; h[0]: page 2 only, 0 and 1 are protected. */
	EXPECT_EQ(2 + 1, b.out_nr_pages);
	kt_snap_row(self->fd, h[2], r);
	EXPECT_EQ(2 * pt, r->swa);
	kt_snap_row(self->fd, h[0], r);
	EXPECT_EQ(3 * pt, r->swa);
	ACCT();

	/* CACHE_EVICT, 8-byte page ids. */
	ev[0] = p[0];
	ev[1] = 0;
	ev[2] = p[1];
	ev[3] = 0x100;
	kt_snap(self->fd, h, 3, &self->before);
	EXPECT_EQ(E2BIG, kt_batch_len(self->fd, KVPOOL_CACHE_EVICT, 0, ev, 2, 8,
				    &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, h, 3);
	ev[3] = 0;
	ASSERT_EQ(0, kt_batch_len(self->fd, KVPOOL_CACHE_EVICT, 0, ev, 2, 8, &b));
	EXPECT_EQ(2, b.out_nr_pages);
	ACCT();

	/* RELEASE, 16-byte handles. */
	{
		struct kvpool_handle hw[6] = {
			h[0], { 0, 0 }, h[1], { 0, 0 }, h[2], { 0, 1 },
		};

		kt_snap(self->fd, h, 3, &self->before);
		EXPECT_EQ(E2BIG, kt_batch_len(self->fd, KVPOOL_RELEASE, 0, hw, 3,
					    16, &b));
		EXPECT_EQ(2, b.out_error_index);
		EXPECT_UNCHANGED(self->fd, h, 3);
		hw[5].generation = 0;
		ASSERT_EQ(0, kt_batch_len(self->fd, KVPOOL_RELEASE, 0, hw, 3, 16,
					&b));
		/* Own pages: h[0] its page 3, h[1] its 3, h[2] its 2 and 3. */
		EXPECT_EQ(1 + 1 + 2, b.out_nr_pages);
	}
	ACCT();
}

/* ---- ATTACH_PREFIX ------------------------------------------------------ */

TEST_F(cache, attach_maps_pages)
{
	const __u32 pt = self->pt, half = self->half;
	struct kt_row_snap *r = &self->row;
	struct kvpool_handle h, h2;
	struct kvpool_stats s0, s1;
	__u32 p[3], order[2], n;

	cache_pages(_metadata, self, self->fd, 3, p);
	ACCT();
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	EXPECT_EQ(3, s0.out_cache_evictable);

	h = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, h, p, 3));
	kt_snap_row(self->fd, h, r);
	ASSERT_EQ(0, r->err);
	EXPECT_EQ(KVPOOL_ROW_HELD, r->state);
	EXPECT_EQ(3 * pt, r->alloc);
	EXPECT_EQ(3 * pt, r->committed);
	EXPECT_EQ(3 * pt, r->protected_len);
	EXPECT_EQ(0, r->swa);
	EXPECT_EQ(3, r->nr_pages);
	EXPECT_EQ(0, memcmp(p, r->pages, sizeof(p)));
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_evictable - 3, s1.out_cache_evictable);
	EXPECT_EQ(s0.out_cache_pinned + 3, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_client_cache_pages, s1.out_client_cache_pages);
	EXPECT_EQ(s0.out_client_pages, s1.out_client_pages);
	EXPECT_EQ(s0.out_row_pages, s1.out_row_pages);
	EXPECT_EQ(s0.out_free_pages, s1.out_free_pages);
	ACCT();

	/* A second row borrows two of them, in another order. */
	order[0] = p[2];
	order[1] = p[0];
	h2 = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, h2, order, 2));
	kt_snap_row(self->fd, h2, r);
	EXPECT_EQ(2 * pt, r->alloc);
	EXPECT_EQ(2 * pt, r->protected_len);
	EXPECT_EQ(2, r->nr_pages);
	EXPECT_EQ(0, memcmp(order, r->pages, sizeof(order)));
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_pinned + 3, s1.out_cache_pinned);
	ACCT();

	/* The row grows past its prefix with pages of its own. */
	ASSERT_EQ(0, kt_extend1(self->fd, h, 5 * pt + half, self->ids,
				ARRAY_SIZE(self->ids), &n));
	EXPECT_EQ(NP(5 * pt + half) - 3, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(0, memcmp(p, r->pages, sizeof(p)));
	EXPECT_EQ(3 * pt, r->committed);
	EXPECT_EQ(3 * pt, r->protected_len);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_client_pages + n, s1.out_client_pages);
	ACCT();

	/* Releasing it frees its own pages and unpins p[1] only. */
	ASSERT_EQ(0, kt_release1(self->fd, h, &n));
	EXPECT_EQ(NP(5 * pt + half) - 3, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(1, s1.out_cache_evictable);
	EXPECT_EQ(2, s1.out_cache_pinned);
	EXPECT_EQ(3, s1.out_client_cache_pages);
	ACCT();
	ASSERT_EQ(0, kt_evict(self->fd, &p[1], 1, NULL));

	ASSERT_EQ(0, kt_release1(self->fd, h2, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(2, s1.out_cache_evictable);
	EXPECT_EQ(0, s1.out_cache_pinned);
	ACCT();
}

/* Pinned pages (the donor still maps them) can be borrowed too. */
TEST_F(cache, attach_pinned)
{
	const __u32 pt = self->pt;
	struct kvpool_handle d, h;
	struct kvpool_stats s;
	__u32 p[2], n;

	d = kt_new_row(_metadata, self->fd, 3 * pt, 3 * pt);
	ASSERT_EQ(3, row_ids(_metadata, self->fd, d, self->ids, 3));
	ASSERT_EQ(0, kt_donate1(self->fd, d, 2 * pt, &n));
	ASSERT_EQ(2, n);
	memcpy(p, self->ids, sizeof(p));
	h = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, h, p, 2));
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_cache_evictable);
	ACCT();
	/* The donor goes: the borrower keeps them pinned. */
	ASSERT_EQ(0, kt_release1(self->fd, d, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_cache_pinned);
	EXPECT_EQ(EBUSY, kt_evict(self->fd, p, 2, NULL));
	ACCT();
}

/* The longest prefix is row_tokens: nr_pages * page_tokens <= row_tokens. */
TEST_F(cache, attach_row_limit)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h;
	__u32 *p = self->ids;

	/* ROW_PAGES + 1 cache pages, from two rows. */
	cache_pages(_metadata, self, self->fd, ROW_PAGES / 2, p);
	cache_pages(_metadata, self, self->fd, ROW_PAGES / 2 + 1,
		    p + ROW_PAGES / 2);
	h = kt_new_row(_metadata, self->fd, 0, 0);
	kt_snap(self->fd, &h, 1, &self->before);
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, p, ROW_PAGES + 1));
	/* Products that do not fit 32 bits are out of range as well. */
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, p, 0x80000000u));
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, p, ~0u));
	if (pt > 1)
		EXPECT_EQ(EINVAL, kt_attach(self->fd, h, p,
					    (__u32)(0x100000000ull / pt)));
	EXPECT_UNCHANGED(self->fd, &h, 1);

	ASSERT_EQ(0, kt_attach(self->fd, h, p, ROW_PAGES));
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(ROW_PAGES * pt, self->row.alloc);
	EXPECT_EQ(ROW_PAGES * pt, self->row.protected_len);
	EXPECT_EQ(ROW_PAGES, self->row.nr_pages);
	EXPECT_EQ(0, memcmp(p, self->row.pages, ROW_PAGES * 4));
	/* Full: it cannot grow. */
	EXPECT_EQ(EINVAL, kt_grow(self->fd, h, ROW_PAGES * pt + 1));
	ACCT();
}

/* Every errno of ATTACH_PREFIX; nothing changes on any of them. */
TEST_F(cache, attach_errors)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h, tok, own, fr, stale, fresh, released, parked,
			     done, hs[5];
	struct kvpool_attach a;
	__u32 mine[2], theirs[1], own_id, fr_id, freed, bad[3], notmine[7];
	__u32 wide[4];
	unsigned int i;
	char *g;

	g = kt_map_guarded();
	ASSERT_NE(NULL, g);
	make_stale(_metadata, self->fd, &stale, &fresh);
	cache_pages(_metadata, self, self->fd, 2, mine);
	cache_pages(_metadata, self, self->fd2, 1, theirs);
	tok = kt_new_row(_metadata, self->fd, 1, 0);	/* allocated 1 */
	own = kt_new_row(_metadata, self->fd, 2 * pt, pt);
	ASSERT_EQ(2, row_ids(_metadata, self->fd, own, self->ids, 2));
	own_id = self->ids[1];
	fr = kt_new_row(_metadata, self->fd2, 0, 0);
	ASSERT_EQ(0, kt_grow(self->fd2, fr, pt));
	ASSERT_EQ(1, row_ids(_metadata, self->fd2, fr, &fr_id, 1));
	parked = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd, 9, parked, NULL));
	done = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, done, &mine[1], 1));
	h = kt_new_row(_metadata, self->fd, 0, 0);
	freed = free_page_id(_metadata, self);
	/* Last: no later alloc takes the row (or the free page) again. */
	released = released_row(_metadata, self->fd);
	ACCT();

	hs[0] = h;
	hs[1] = tok;
	hs[2] = own;
	hs[3] = done;
	hs[4] = fresh;
	kt_snap(self->fd, hs, 5, &self->before);

	/* Rows that have tokens. */
	EXPECT_EQ(EINVAL, kt_attach(self->fd, tok, mine, 1));
	EXPECT_EQ(EINVAL, kt_attach(self->fd, own, mine, 1));
	EXPECT_EQ(EINVAL, kt_attach(self->fd, done, mine, 1));
	/* Handles that are not the caller's held rows. */
	EXPECT_EQ(ESTALE, kt_attach(self->fd, stale, mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, future(h, 1), mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, future(h, 5), mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, fr, mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, released, mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, parked, mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd,
				    (struct kvpool_handle){ NR_ROWS, 1 },
				    mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd,
				    (struct kvpool_handle){ KT_BAD_IDX, 1 },
				    mine, 1));

	/* Pages that are not the caller's cache pages, first or later. */
	bad[0] = mine[0];
	bad[2] = mine[1];
	notmine[0] = freed;
	notmine[1] = theirs[0];
	notmine[2] = own_id;
	notmine[3] = fr_id;
	notmine[4] = 0;
	notmine[5] = NR_PAGES;
	notmine[6] = KVPOOL_PAGE_NONE;
	for (i = 0; i < ARRAY_SIZE(notmine); i++) {
		EXPECT_EQ(ENOENT, kt_attach(self->fd, h, &notmine[i], 1))
			TH_LOG("page %u", notmine[i]);
		bad[1] = notmine[i];
		EXPECT_EQ(ENOENT, kt_attach(self->fd, h, bad, 3))
			TH_LOG("page %u second", notmine[i]);
	}
	/* A page twice. */
	bad[1] = mine[0];
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, bad, 3));
	bad[0] = mine[1];
	bad[1] = mine[1];
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, bad, 2));
	/* nr_pages 0. */
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, mine, 0));
	EXPECT_EQ(EINVAL, kt_attach(self->fd, h, NULL, 0));
	/* The page array faults. */
	EXPECT_EQ(EFAULT, kt_attach(self->fd, h, NULL, 1));
	EXPECT_EQ(EFAULT, kt_attach(self->fd, h, kt_fault_edge(g), 1));
	memcpy((__u32 *)kt_fault_edge(g) - 1, mine, 4);
	EXPECT_EQ(EFAULT, kt_attach(self->fd, h,
				    (__u32 *)kt_fault_edge(g) - 1, 2));
	/*
	 * page_entry_len: shorter than a page id (0 too) is EINVAL, past
	 * PAGE_SIZE E2BIG, and a longer id with a non-zero byte past the
	 * first four E2BIG: the kernel does not know what that byte means.
	 */
	EXPECT_EQ(EINVAL, attach_elen(self->fd, h, mine, 2, 0));
	EXPECT_EQ(EINVAL, attach_elen(self->fd, h, mine, 2, 3));
	EXPECT_EQ(E2BIG, attach_elen(self->fd, h, mine, 2,
				     KT_PAGE_SIZE + 1));
	wide[0] = mine[0];
	wide[1] = 0;
	wide[2] = mine[1];
	wide[3] = 1;
	EXPECT_EQ(E2BIG, attach_elen(self->fd, h, wide, 2, 8));
	wide[3] = 0;
	wide[1] = 1u << 24;
	EXPECT_EQ(E2BIG, attach_elen(self->fd, h, wide, 2, 8));
	/* Flags. */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.handle = h;
	a.nr_pages = 2;
	a.page_entry_len = sizeof(__u32);
	a.pages = kt_ptr(mine);
	a.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(self->fd, KVPOOL_ATTACH_PREFIX, &a));
	EXPECT_UNCHANGED(self->fd, hs, 5);
	ACCT();

	/* Exactly fits before the edge: accepted. */
	ASSERT_EQ(0, kt_attach(self->fd, h, (__u32 *)kt_fault_edge(g) - 1,
			       1));
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(pt, self->row.protected_len);
	EXPECT_EQ(mine[0], self->row.pages[0]);
	munmap(g, 2 * KT_PAGE_SIZE);
	ACCT();

	/* 8-byte page ids with zero tails: accepted. */
	h = kt_new_row(_metadata, self->fd, 0, 0);
	wide[0] = mine[1];
	wide[1] = 0;
	wide[2] = mine[0];
	wide[3] = 0;
	ASSERT_EQ(0, attach_elen(self->fd, h, wide, 2, 8));
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(2 * pt, self->row.protected_len);
	EXPECT_EQ(mine[1], self->row.pages[0]);
	EXPECT_EQ(mine[0], self->row.pages[1]);
	ACCT();
}

/* A row whose tokens were all trimmed away has no tokens: accepted. */
TEST_F(cache, attach_after_trim)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h;
	__u32 p[2], n;

	cache_pages(_metadata, self, self->fd, 2, p);
	h = kt_new_row(_metadata, self->fd, 3 * pt, 0);
	ASSERT_EQ(0, kt_trim1(self->fd, h, &n));
	ASSERT_EQ(3, n);
	ASSERT_EQ(0, kt_attach(self->fd, h, p, 2));
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(2 * pt, self->row.alloc);
	EXPECT_EQ(2 * pt, self->row.committed);
	EXPECT_EQ(2 * pt, self->row.protected_len);
	EXPECT_EQ(0, memcmp(p, self->row.pages, sizeof(p)));
	ACCT();
}

/* ---- CACHE_EVICT ------------------------------------------------------- */

TEST_F(cache, evict_frees)
{
	struct kvpool_stats s0, s1;
	struct kvpool_handle h;
	struct kvpool_batch b;
	__u32 p[5], rest[2];

	cache_pages(_metadata, self, self->fd, 5, p);
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	ASSERT_EQ(0, kt_evict(self->fd, &p[1], 3, &b));
	EXPECT_EQ(3, b.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_free_pages + 3, s1.out_free_pages);
	EXPECT_EQ(s0.out_cache_evictable - 3, s1.out_cache_evictable);
	EXPECT_EQ(s0.out_client_cache_pages - 3, s1.out_client_cache_pages);
	ACCT();
	/* Gone from the cache: a second evict or an attach is ENOENT. */
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &p[2], 1, &b));
	EXPECT_EQ(0, b.out_error_index);
	h = kt_new_row(_metadata, self->fd, 0, 0);
	EXPECT_EQ(ENOENT, kt_attach(self->fd, h, &p[1], 1));
	/* The rest, last first. */
	rest[0] = p[4];
	rest[1] = p[0];
	ASSERT_EQ(0, kt_evict(self->fd, rest, 2, &b));
	EXPECT_EQ(2, b.out_nr_pages);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(0, s1.out_cache_evictable);
	EXPECT_EQ(0, s1.out_client_cache_pages);
	ACCT();
}

/* Every errno of CACHE_EVICT, on the first bad entry; nothing is freed. */
TEST_F(cache, evict_errors)
{
	const __u32 pt = self->pt;
	struct kvpool_handle d, own;
	struct kvpool_batch b;
	__u32 ev[3], pin[2], theirs[1], own_id, freed, x[5], n;
	__u32 notmine[6];
	unsigned int i;

	cache_pages(_metadata, self, self->fd, 3, ev);
	d = kt_new_row(_metadata, self->fd, 3 * pt, 3 * pt);
	ASSERT_EQ(3, row_ids(_metadata, self->fd, d, self->ids, 3));
	ASSERT_EQ(0, kt_donate1(self->fd, d, 2 * pt, &n));
	ASSERT_EQ(2, n);
	memcpy(pin, self->ids, sizeof(pin));
	own_id = self->ids[2];
	cache_pages(_metadata, self, self->fd2, 1, theirs);
	own = kt_new_row(_metadata, self->fd, pt, 0);
	freed = free_page_id(_metadata, self);
	ACCT();
	kt_snap(self->fd, &d, 1, &self->before);

	/* Pinned, after evictable ones: EBUSY there, the others stay. */
	x[0] = ev[0];
	x[1] = pin[0];
	x[2] = ev[1];
	EXPECT_EQ(EBUSY, kt_evict(self->fd, x, 3, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	x[0] = ev[0];
	x[1] = ev[1];
	x[2] = ev[2];
	x[3] = pin[1];
	EXPECT_EQ(EBUSY, kt_evict(self->fd, x, 4, &b));
	EXPECT_EQ(3, b.out_error_index);
	/* A pinned page twice: the first is already bad. */
	x[0] = pin[1];
	x[1] = pin[1];
	EXPECT_EQ(EBUSY, kt_evict(self->fd, x, 2, &b));
	EXPECT_EQ(0, b.out_error_index);
	/* An evictable page twice: EINVAL on the second. */
	x[0] = ev[0];
	x[1] = ev[1];
	x[2] = ev[0];
	x[3] = pin[0];
	EXPECT_EQ(EINVAL, kt_evict(self->fd, x, 4, &b));
	EXPECT_EQ(2, b.out_error_index);
	x[0] = ev[2];
	x[1] = ev[2];
	EXPECT_EQ(EINVAL, kt_evict(self->fd, x, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* Not the caller's cache page: free, theirs, a row's, out of range. */
	notmine[0] = freed;
	notmine[1] = theirs[0];
	notmine[2] = own_id;
	notmine[3] = 0;
	notmine[4] = NR_PAGES;
	notmine[5] = KVPOOL_PAGE_NONE;
	for (i = 0; i < ARRAY_SIZE(notmine); i++) {
		x[0] = ev[0];
		x[1] = ev[1];
		x[2] = notmine[i];
		EXPECT_EQ(ENOENT, kt_evict(self->fd, x, 3, &b))
			TH_LOG("page %u", notmine[i]);
		EXPECT_EQ(2, b.out_error_index);
		EXPECT_EQ(0, b.out_nr_pages);
		/* ENOENT before the pinned page after it. */
		x[3] = pin[0];
		EXPECT_EQ(ENOENT, kt_evict(self->fd, x, 4, &b));
		EXPECT_EQ(2, b.out_error_index);
	}
	/* The page of the row that own holds. */
	ASSERT_EQ(1, row_ids(_metadata, self->fd, own, x, 1));
	EXPECT_EQ(ENOENT, kt_evict(self->fd, x, 1, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, &d, 1);
	ACCT();

	/* All of it was left in place: the three evict now. */
	ASSERT_EQ(0, kt_evict(self->fd, ev, 3, &b));
	EXPECT_EQ(3, b.out_nr_pages);
	/* The donor lets go: its pages evict too. */
	ASSERT_EQ(0, kt_release1(self->fd, d, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_evict(self->fd, pin, 2, &b));
	EXPECT_EQ(2, b.out_nr_pages);
	ACCT();
}

/* ---- pins --------------------------------------------------------------- */

/* Two rows share a prefix: it is pinned until the last borrower goes. */
TEST_F(cache, pins_shared_prefix)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_handle d, r1, r2;
	struct kvpool_stats s;
	struct kvpool_batch b;
	__u32 p[3], n;

	d = kt_new_row(_metadata, self->fd, 3 * pt + half, 3 * pt + half);
	ASSERT_EQ(NP(3 * pt + half),
		  row_ids(_metadata, self->fd, d, self->ids, 4));
	memcpy(p, self->ids, sizeof(p));
	ASSERT_EQ(0, kt_donate1(self->fd, d, 3 * pt + half, &n));
	ASSERT_EQ(3, n);
	r1 = kt_new_row(_metadata, self->fd, 0, 0);
	r2 = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, r1, p, 3));
	ASSERT_EQ(0, kt_attach(self->fd, r2, p, 2));
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(3, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_cache_evictable);
	ACCT();

	ASSERT_EQ(0, kt_release1(self->fd, d, &n));
	EXPECT_EQ(NP(3 * pt + half) - 3, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(3, s.out_cache_pinned);
	EXPECT_EQ(EBUSY, kt_evict(self->fd, p, 3, &b));
	EXPECT_EQ(0, b.out_error_index);
	ACCT();

	/* r1 goes: p[2] was only r1's. */
	ASSERT_EQ(0, kt_release1(self->fd, r1, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_cache_pinned);
	EXPECT_EQ(1, s.out_cache_evictable);
	EXPECT_EQ(EBUSY, kt_evict(self->fd, p, 3, &b));
	EXPECT_EQ(0, b.out_error_index);
	ACCT();

	ASSERT_EQ(0, kt_release1(self->fd, r2, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(3, s.out_cache_evictable);
	ASSERT_EQ(0, kt_evict(self->fd, p, 3, &b));
	EXPECT_EQ(3, b.out_nr_pages);
	ACCT();
}

/* TO_SLOT and FROM_SLOT carry the pins; SLOT_RELEASE drops them. */
TEST_F(cache, pins_follow_slots)
{
	const __u32 pt = self->pt, half = self->half;
	const __u32 own = NP(3 * pt + half) - 2;
	struct kvpool_row_query q;
	struct kvpool_handle h;
	struct kvpool_stats s0, s;
	struct kvpool_batch b;
	__u32 p[2], n = ~0u;

	cache_pages(_metadata, self, self->fd, 2, p);
	h = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, h, p, 2));
	ASSERT_EQ(0, kt_grow(self->fd, h, 3 * pt + half));
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	EXPECT_EQ(own, s0.out_client_pages);

	/* The slot holds the row's own pages; the prefix stays the cache's. */
	ASSERT_EQ(0, kt_to_slot(self->fd, 42, h, &n));
	EXPECT_EQ(own, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(own, s.out_slot_pages);
	EXPECT_EQ(s0.out_row_pages - own, s.out_row_pages);
	EXPECT_EQ(2, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_cache_evictable);
	EXPECT_EQ(own, s.out_client_pages);
	EXPECT_EQ(EBUSY, kt_evict(self->fd, p, 2, &b));
	ASSERT_EQ(0, kt_query_slot(self->fd, 42, self->ids, 8, &q));
	EXPECT_EQ(KVPOOL_ROW_SLOT, q.out_state);
	EXPECT_EQ(2 * pt, q.out_protected_len);
	EXPECT_EQ(3 * pt + half, q.out_allocated_len);
	EXPECT_EQ(0, memcmp(p, self->ids, sizeof(p)));
	ACCT();

	ASSERT_EQ(0, kt_from_slot(self->fd, 42, &h, &n));
	EXPECT_EQ(own, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_slot_pages);
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(2 * pt, self->row.protected_len);
	EXPECT_EQ(0, memcmp(p, self->row.pages, sizeof(p)));
	ACCT();

	ASSERT_EQ(0, kt_to_slot(self->fd, 43, h, NULL));
	ASSERT_EQ(0, kt_slot_release(self->fd, 43, &n));
	EXPECT_EQ(own, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(2, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_client_pages);
	EXPECT_EQ(0, s.out_client_slots);
	ASSERT_EQ(0, kt_evict(self->fd, p, 2, &b));
	ACCT();
}

/* A donor parked in a slot keeps its donated pages pinned. */
TEST_F(cache, pins_donor_slot)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h;
	struct kvpool_stats s;
	__u32 p[4], n = ~0u;

	h = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	ASSERT_EQ(4, row_ids(_metadata, self->fd, h, p, 4));
	ASSERT_EQ(0, kt_donate1(self->fd, h, 3 * pt, &n));
	ASSERT_EQ(0, kt_to_slot(self->fd, 1, h, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(1, s.out_slot_pages);
	EXPECT_EQ(3, s.out_cache_pinned);
	EXPECT_EQ(EBUSY, kt_evict(self->fd, p, 3, NULL));
	ACCT();
	ASSERT_EQ(0, kt_slot_release(self->fd, 1, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(3, s.out_cache_evictable);
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &p[3], 1, NULL));
	EXPECT_EQ(0, kt_evict(self->fd, p, 3, NULL));
	ACCT();
}

/* ---- RELEASE with KVPOOL_RELEASE_DONATE --------------------------------- */

TEST_F(cache, release_donate)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_row_query q;
	struct kvpool_stats s0, s1;
	struct kvpool_handle h;
	struct kvpool_batch b;
	__u32 ids[6], n = ~0u;

	h = kt_new_row(_metadata, self->fd, 6 * pt, 3 * pt + half);
	ASSERT_EQ(6, row_ids(_metadata, self->fd, h, ids, 6));
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	ASSERT_EQ(0, kt_release_donate1(self->fd, h, &n));
	/* Full committed pages 0..2 donated; the other 3 freed. */
	EXPECT_EQ(3, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_free_pages + 3, s1.out_free_pages);
	EXPECT_EQ(s0.out_row_pages - 6, s1.out_row_pages);
	EXPECT_EQ(s0.out_cache_evictable + 3, s1.out_cache_evictable);
	EXPECT_EQ(s0.out_cache_pinned, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_client_pages - 6, s1.out_client_pages);
	EXPECT_EQ(s0.out_client_cache_pages + 3, s1.out_client_cache_pages);
	EXPECT_EQ(s0.out_client_rows - 1, s1.out_client_rows);
	EXPECT_EQ(ENOENT, kt_query(self->fd, h, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_release1(self->fd, h, NULL));
	ACCT();
	/* Only the donated ones are cache pages. */
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &ids[3], 1, &b));
	ASSERT_EQ(0, kt_evict(self->fd, ids, 3, &b));
	EXPECT_EQ(3, b.out_nr_pages);
	ACCT();
}

/* Release-donate of rows that donated or borrowed before. */
TEST_F(cache, release_donate_protected)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h, a;
	struct kvpool_stats s0, s1;
	__u32 p[2], n = ~0u;

	/* Donated to 2 pages; commit 4 of 5: two more go on release. */
	h = kt_new_row(_metadata, self->fd, 5 * pt, 4 * pt);
	ASSERT_EQ(0, kt_donate1(self->fd, h, 2 * pt, &n));
	ASSERT_EQ(2, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	ASSERT_EQ(0, kt_release_donate1(self->fd, h, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_cache_pinned - 2, s1.out_cache_pinned);
	EXPECT_EQ(s0.out_cache_evictable + 4, s1.out_cache_evictable);
	EXPECT_EQ(4, s1.out_client_cache_pages);
	ACCT();

	/* Donated to committed already: nothing more, no EALREADY. */
	h = kt_new_row(_metadata, self->fd, 2 * pt, 2 * pt);
	ASSERT_EQ(0, kt_donate1(self->fd, h, 2 * pt, &n));
	ASSERT_EQ(0, kt_release_donate1(self->fd, h, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(6, s1.out_client_cache_pages);
	EXPECT_EQ(6, s1.out_cache_evictable);
	ACCT();

	/* Borrowed a prefix, grew 2 own pages: those go, the prefix unpins. */
	cache_pages(_metadata, self, self->fd, 2, p);
	a = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, a, p, 2));
	ASSERT_EQ(0, kt_grow(self->fd, a, 4 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, a, 4 * pt));
	ASSERT_EQ(0, kt_release_donate1(self->fd, a, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(10, s1.out_client_cache_pages);
	EXPECT_EQ(10, s1.out_cache_evictable);
	EXPECT_EQ(0, s1.out_cache_pinned);
	ACCT();

	/* Nothing committed: nothing donated, all freed. */
	h = kt_new_row(_metadata, self->fd, 3 * pt, 0);
	ASSERT_EQ(0, kt_release_donate1(self->fd, h, &n));
	EXPECT_EQ(3, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(10, s1.out_client_cache_pages);
	ACCT();
}

/* Unknown RELEASE flags and a bad entry: nothing released, nothing donated. */
TEST_F(cache, release_donate_errors)
{
	const __u32 pt = self->pt;
	const __u32 flags[] = {
		KVPOOL_RELEASE_DONATE << 1, KVPOOL_RELEASE_DONATE | 2,
		1u << 31, ~0u,
	};
	struct kvpool_handle h[2], foreign, hh[2];
	struct kvpool_stats s;
	struct kvpool_batch b;
	unsigned int i;

	h[0] = kt_new_row(_metadata, self->fd, 3 * pt, 3 * pt);
	h[1] = kt_new_row(_metadata, self->fd, 2 * pt, pt);
	foreign = kt_new_row(_metadata, self->fd2, pt, pt);
	kt_snap(self->fd, h, 2, &self->before);
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		EXPECT_EQ(EOPNOTSUPP, kt_batch(self->fd, KVPOOL_RELEASE,
					       flags[i], h, 2, &b))
			TH_LOG("flags %#x", flags[i]);
		EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	}
	hh[0] = h[0];
	hh[1] = foreign;
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_RELEASE,
				   KVPOOL_RELEASE_DONATE, hh, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	hh[1] = h[0];
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE,
				   KVPOOL_RELEASE_DONATE, hh, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, h, 2);
	ACCT();
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE,
			      h, 2, &b));
	EXPECT_EQ(1, b.out_nr_pages);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(4, s.out_cache_evictable);
	EXPECT_EQ(4, s.out_client_cache_pages);
	ACCT();
}

/* ---- SWA_FREE ------------------------------------------------------------ */

TEST_F(cache, swa_frees_window)
{
	const __u32 pt = self->pt, half = self->half;
	struct kt_row_snap *r = &self->row;
	struct kvpool_stats s0, s1;
	struct kvpool_handle h;
	__u32 ids[8], n = ~0u, i;

	h = kt_new_row(_metadata, self->fd, 8 * pt, 6 * pt + half);
	ASSERT_EQ(8, row_ids(_metadata, self->fd, h, ids, 8));
	ASSERT_EQ(0, kt_stats(self->fd, &s0));

	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 3 * pt + half, &n));
	EXPECT_EQ(3, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(3 * pt, r->swa);
	EXPECT_EQ(0, r->protected_len);
	EXPECT_EQ(8 * pt, r->alloc);
	EXPECT_EQ(6 * pt + half, r->committed);
	EXPECT_EQ(8, r->nr_pages);
	for (i = 0; i < 8; i++)
		EXPECT_EQ(i < 3 ? KVPOOL_PAGE_NONE : ids[i], r->pages[i])
			TH_LOG("position %u", i);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_free_pages + 3, s1.out_free_pages);
	EXPECT_EQ(s0.out_row_pages - 3, s1.out_row_pages);
	EXPECT_EQ(s0.out_client_pages - 3, s1.out_client_pages);
	EXPECT_EQ(0, s1.out_cache_evictable + s1.out_cache_pinned);
	ACCT();

	/* The same edge, or inside the same page: accepted, nothing freed. */
	kt_snap(self->fd, &h, 1, &self->before);
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 3 * pt, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 3 * pt + half, &n));
	EXPECT_EQ(0, n);
	EXPECT_UNCHANGED(self->fd, &h, 1);
	/* Below swa_evicted, past committed (allocated or not): EINVAL. */
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 3 * pt - 1, NULL));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 0, NULL));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 6 * pt + half + 1, NULL));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 8 * pt, NULL));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, ROW_PAGES * pt + 1, NULL));
	EXPECT_UNCHANGED(self->fd, &h, 1);

	/* Up to committed: only whole pages, the partial one stays. */
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 6 * pt + half, &n));
	EXPECT_EQ(3, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(6 * pt, r->swa);
	for (i = 0; i < 8; i++)
		EXPECT_EQ(i < 6 ? KVPOOL_PAGE_NONE : ids[i], r->pages[i])
			TH_LOG("position %u", i);
	ACCT();

	/* TRIM after it: the tail from ceil(committed) on. */
	ASSERT_EQ(0, kt_trim1(self->fd, h, &n));
	EXPECT_EQ(8 - NP(6 * pt + half), n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(6 * pt + half, r->alloc);
	EXPECT_EQ(NP(6 * pt + half), r->nr_pages);
	EXPECT_EQ(6 * pt, r->swa);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(NP(6 * pt + half) - 6, s1.out_client_pages);
	ACCT();

	/* Grow again, then release: the holes count for nothing. */
	ASSERT_EQ(0, kt_grow(self->fd, h, 9 * pt));
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(9, r->nr_pages);
	EXPECT_EQ(KVPOOL_PAGE_NONE, r->pages[5]);
	EXPECT_NE(KVPOOL_PAGE_NONE, r->pages[6]);
	ASSERT_EQ(0, kt_release1(self->fd, h, &n));
	EXPECT_EQ(3, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(s0.out_free_pages + 8, s1.out_free_pages);
	ACCT();
}

/* Never below protected: borrowed and donated pages stay. */
TEST_F(cache, swa_protected)
{
	const __u32 pt = self->pt, half = self->half;
	struct kt_row_snap *r = &self->row;
	struct kvpool_handle h, d;
	struct kvpool_stats s;
	__u32 p[2], ids[7], n = ~0u, i;

	cache_pages(_metadata, self, self->fd, 2, p);
	h = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, h, p, 2));
	ASSERT_EQ(0, kt_grow(self->fd, h, 7 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, h, 6 * pt));
	ASSERT_EQ(7, row_ids(_metadata, self->fd, h, ids, 7));
	kt_snap(self->fd, &h, 1, &self->before);

	/* Window free below protected. */
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 2 * pt - 1, NULL));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, pt, NULL));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 0, NULL));
	EXPECT_UNCHANGED(self->fd, &h, 1);

	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 2 * pt, &n));
	EXPECT_EQ(0, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(2 * pt, r->swa);
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 4 * pt + half, &n));
	EXPECT_EQ(2, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(4 * pt, r->swa);
	EXPECT_EQ(2 * pt, r->protected_len);
	for (i = 0; i < 7; i++)
		EXPECT_EQ(i == 2 || i == 3 ? KVPOOL_PAGE_NONE : ids[i],
			  r->pages[i]) TH_LOG("position %u", i);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_cache_pinned);
	EXPECT_EQ(7 - 2 - 2, s.out_client_pages);
	ACCT();

	/*
	 * The window slid past protected (4 pt > 2 pt): what is left of the
	 * row's start is no prefix any more, so DONATE and RELEASE with
	 * KVPOOL_RELEASE_DONATE are EINVAL and change nothing.
	 */
	kt_snap(self->fd, &h, 1, &self->before);
	EXPECT_EQ(EINVAL, kt_donate1(self->fd, h, 6 * pt, &n));
	EXPECT_EQ(EINVAL, kt_donate1(self->fd, h, 5 * pt, &n));
	EXPECT_EQ(EINVAL, kt_release_donate1(self->fd, h, &n));
	EXPECT_UNCHANGED(self->fd, &h, 1);
	ACCT();
	/* SWA_FREE goes on from where it was. */
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, h, 4 * pt - 1, NULL));
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 5 * pt, &n));
	EXPECT_EQ(1, n);
	kt_snap_row(self->fd, h, r);
	EXPECT_EQ(5 * pt, r->swa);
	EXPECT_EQ(2 * pt, r->protected_len);
	EXPECT_EQ(p[0], r->pages[0]);
	EXPECT_EQ(p[1], r->pages[1]);
	EXPECT_EQ(KVPOOL_PAGE_NONE, r->pages[4]);
	EXPECT_EQ(ids[5], r->pages[5]);
	ACCT();

	/* A plain release: its own pages 5 and 6 go, the prefix unpins. */
	ASSERT_EQ(0, kt_release1(self->fd, h, &n));
	EXPECT_EQ(2, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(2, s.out_cache_evictable);
	ACCT();

	/* A donor: protected from its own donation. */
	d = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	ASSERT_EQ(4, row_ids(_metadata, self->fd, d, ids, 4));
	ASSERT_EQ(0, kt_donate1(self->fd, d, 2 * pt, &n));
	EXPECT_EQ(EINVAL, kt_swa_free1(self->fd, d, pt, NULL));
	ASSERT_EQ(0, kt_swa_free1(self->fd, d, 3 * pt, &n));
	EXPECT_EQ(1, n);
	/* The donated prefix is whole; the hole is above it. */
	kt_snap_row(self->fd, d, r);
	EXPECT_EQ(ids[0], r->pages[0]);
	EXPECT_EQ(ids[1], r->pages[1]);
	EXPECT_EQ(KVPOOL_PAGE_NONE, r->pages[2]);
	EXPECT_EQ(ids[3], r->pages[3]);
	/* Release-donate after the window passed protected: refused. */
	kt_snap(self->fd, &d, 1, &self->before);
	EXPECT_EQ(EINVAL, kt_release_donate1(self->fd, d, &n));
	EXPECT_UNCHANGED(self->fd, &d, 1);
	ASSERT_EQ(0, kt_release1(self->fd, d, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2 + 2, s.out_cache_evictable);
	ACCT();
}

/* A window-freed row parks and comes back with its holes. */
TEST_F(cache, swa_slot)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_row_query q;
	struct kvpool_handle h;
	struct kvpool_stats s;
	__u32 ids[5], got[5], n = ~0u, i;

	h = kt_new_row(_metadata, self->fd, 5 * pt, 4 * pt + half);
	ASSERT_EQ(5, row_ids(_metadata, self->fd, h, ids, 5));
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 3 * pt, &n));
	ASSERT_EQ(3, n);
	ASSERT_EQ(0, kt_to_slot(self->fd, 3, h, &n));
	EXPECT_EQ(2, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_slot_pages);
	EXPECT_EQ(2, s.out_client_pages);
	ASSERT_EQ(0, kt_query_slot(self->fd, 3, got, 5, &q));
	EXPECT_EQ(3 * pt, q.out_swa_evicted_len);
	EXPECT_EQ(0, q.out_protected_len);
	EXPECT_EQ(5, q.out_nr_pages);
	for (i = 0; i < 5; i++)
		EXPECT_EQ(i < 3 ? KVPOOL_PAGE_NONE : ids[i], got[i])
			TH_LOG("position %u", i);
	ACCT();

	ASSERT_EQ(0, kt_from_slot(self->fd, 3, &h, &n));
	EXPECT_EQ(2, n);
	kt_snap_row(self->fd, h, &self->row);
	EXPECT_EQ(3 * pt, self->row.swa);
	EXPECT_EQ(KVPOOL_PAGE_NONE, self->row.pages[2]);
	EXPECT_EQ(ids[3], self->row.pages[3]);
	/* The window moves on after the slot. */
	ASSERT_EQ(0, kt_swa_free1(self->fd, h, 4 * pt + half, &n));
	EXPECT_EQ(1, n);
	ACCT();
	ASSERT_EQ(0, kt_to_slot(self->fd, 4, h, NULL));
	ASSERT_EQ(0, kt_slot_release(self->fd, 4, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(0, s.out_client_pages);
	EXPECT_EQ(0, s.out_slot_pages);
	ACCT();
}

/* Every errno of SWA_FREE, on the first bad entry; nothing freed. */
TEST_F(cache, swa_errors)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h[2], foreign, released, stale, fresh;
	struct kvpool_len_entry e[2];
	struct kvpool_batch b;

	make_stale(_metadata, self->fd, &stale, &fresh);
	h[0] = kt_new_row(_metadata, self->fd, 4 * pt, 3 * pt);
	h[1] = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	foreign = kt_new_row(_metadata, self->fd2, 2 * pt, 2 * pt);
	released = released_row(_metadata, self->fd);
	kt_snap(self->fd, h, 2, &self->before);

	e[0] = len_entry(h[0], 2 * pt);
	e[1] = len_entry(h[1], 4 * pt + 1);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	e[1] = len_entry(foreign, pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(released, 0);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(stale, 0);
	EXPECT_EQ(ESTALE, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(future(h[1], 1), 2 * pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(future(h[1], 5), 2 * pt);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry((struct kvpool_handle){ NR_ROWS, 1 }, 0);
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(h[0], pt);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	e[1] = len_entry(h[1], 2 * pt);
	e[1].__reserved = 1;
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	/* The bad entry first. */
	e[0] = len_entry(h[0], 3 * pt + 1);
	e[1].__reserved = 0;
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, h, 2);
	ACCT();

	e[0] = len_entry(h[0], 2 * pt);
	e[1] = len_entry(h[1], 3 * pt);
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_SWA_FREE, 0, e, 2, &b));
	EXPECT_EQ(5, b.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, b.out_error_index);
	ACCT();
}

/*
 * The case an outside reference model found: a row whose window was slid
 * past its (empty) protected prefix: protected 0, swa_evicted 2 pages,
 * committed 4 (at page_tokens 16: 0, 32, 64). DONATE used to succeed and
 * leave the cache a "prefix" of [NONE, NONE, id, id] with protected 64,
 * which no ATTACH_PREFIX could map. Now DONATE and RELEASE with
 * KVPOOL_RELEASE_DONATE are EINVAL for it, out_error_index names it, and
 * nothing changes, the other rows of the batch included; a plain RELEASE
 * still works.
 */
TEST_F(cache, donate_after_window_slid)
{
	const __u32 pt = self->pt;
	struct kt_row_snap *r = &self->row;
	struct kvpool_handle h[2], hr[2];
	struct kvpool_len_entry e[2];
	struct kvpool_row_query q;
	struct kvpool_stats s;
	struct kvpool_batch b;
	__u32 ids[4], n = ~0u, i;

	h[0] = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);	/* a good one */
	h[1] = kt_new_row(_metadata, self->fd, 4 * pt, 4 * pt);
	ASSERT_EQ(4, row_ids(_metadata, self->fd, h[1], ids, 4));
	ASSERT_EQ(0, kt_swa_free1(self->fd, h[1], 2 * pt, &n));
	ASSERT_EQ(2, n);
	kt_snap_row(self->fd, h[1], r);
	ASSERT_EQ(0, r->protected_len);
	ASSERT_EQ(2 * pt, r->swa);
	ASSERT_EQ(4 * pt, r->committed);
	ACCT();
	kt_snap(self->fd, h, 2, &self->before);

	/* DONATE to committed, or to anywhere above protected. */
	EXPECT_EQ(EINVAL, kt_donate1(self->fd, h[1], 4 * pt, &n));
	EXPECT_EQ(EINVAL, kt_donate1(self->fd, h[1], 3 * pt, &n));
	EXPECT_EQ(EINVAL, kt_donate1(self->fd, h[1], 2 * pt + 1, &n));
	e[0] = len_entry(h[0], 4 * pt);
	e[1] = len_entry(h[1], 4 * pt);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	e[0] = len_entry(h[1], 4 * pt);
	e[1] = len_entry(h[0], 4 * pt);
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_DONATE, 0, e, 2, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, h, 2);

	/* RELEASE with KVPOOL_RELEASE_DONATE: the same, nothing released. */
	EXPECT_EQ(EINVAL, kt_release_donate1(self->fd, h[1], &n));
	hr[0] = h[0];
	hr[1] = h[1];
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE,
				   KVPOOL_RELEASE_DONATE, hr, 2, &b));
	EXPECT_EQ(1, b.out_error_index);
	EXPECT_EQ(0, b.out_nr_pages);
	hr[0] = h[1];
	hr[1] = h[0];
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE,
				   KVPOOL_RELEASE_DONATE, hr, 2, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_UNCHANGED(self->fd, h, 2);

	/* What the reference model saw must not be: no such cache entry. */
	kt_snap_row(self->fd, h[1], r);
	EXPECT_EQ(0, r->protected_len);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(i < 2 ? KVPOOL_PAGE_NONE : ids[i], r->pages[i])
			TH_LOG("position %u", i);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(0, s.out_client_cache_pages);
	EXPECT_EQ(0, s.out_cache_pinned + s.out_cache_evictable);
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &ids[2], 1, &b))
		TH_LOG("a page of the holed row went to the cache");
	ACCT();

	/* The good row of the batch still donates; the holed one releases. */
	ASSERT_EQ(0, kt_donate1(self->fd, h[0], 4 * pt, &n));
	EXPECT_EQ(4, n);
	ASSERT_EQ(0, kt_release1(self->fd, h[1], &n));
	EXPECT_EQ(2, n);
	EXPECT_EQ(ENOENT, kt_query(self->fd, h[1], NULL, 0, &q));
	ASSERT_EQ(0, kt_release_donate1(self->fd, h[0], &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(4, s.out_client_cache_pages);
	EXPECT_EQ(4, s.out_cache_evictable);
	ACCT();
}

/*
 * Donate first, then slide the window: SWA_FREE never frees below
 * protected, so the donated prefix stays whole (no KVPOOL_PAGE_NONE below
 * protected) and another row can attach it. With swa_evicted == protected
 * the row is still a prefix: it may donate on; once the window passes
 * protected it may not.
 */
TEST_F(cache, donated_prefix_stays_whole)
{
	const __u32 pt = self->pt;
	struct kt_row_snap *r = &self->row;
	struct kvpool_handle d, a;
	struct kvpool_stats s;
	__u32 ids[6], n = ~0u, i;

	d = kt_new_row(_metadata, self->fd, 6 * pt, 6 * pt);
	ASSERT_EQ(6, row_ids(_metadata, self->fd, d, ids, 6));
	ASSERT_EQ(0, kt_donate1(self->fd, d, 2 * pt, &n));
	ASSERT_EQ(2, n);

	/* Window at protected exactly: nothing freed, still a prefix. */
	ASSERT_EQ(0, kt_swa_free1(self->fd, d, 2 * pt, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_donate1(self->fd, d, 3 * pt, &n));
	EXPECT_EQ(1, n);
	kt_snap_row(self->fd, d, r);
	EXPECT_EQ(3 * pt, r->protected_len);
	EXPECT_EQ(2 * pt, r->swa);
	ACCT();

	/* Past it: pages 3 and 4 go, 0..2 stay. */
	ASSERT_EQ(0, kt_swa_free1(self->fd, d, 5 * pt, &n));
	EXPECT_EQ(2, n);
	kt_snap_row(self->fd, d, r);
	EXPECT_EQ(3 * pt, r->protected_len);
	EXPECT_EQ(5 * pt, r->swa);
	for (i = 0; i < r->protected_len / pt; i++)
		EXPECT_NE(KVPOOL_PAGE_NONE, r->pages[i])
			TH_LOG("a hole at %u, below protected %u", i,
			       r->protected_len);
	for (i = 0; i < 6; i++)
		EXPECT_EQ(i == 3 || i == 4 ? KVPOOL_PAGE_NONE : ids[i],
			  r->pages[i]) TH_LOG("position %u", i);
	/* No more donating from it, with or without release. */
	EXPECT_EQ(EINVAL, kt_donate1(self->fd, d, 6 * pt, &n));
	kt_snap(self->fd, &d, 1, &self->before);
	EXPECT_EQ(EINVAL, kt_release_donate1(self->fd, d, &n));
	EXPECT_UNCHANGED(self->fd, &d, 1);
	ACCT();

	/* The cached prefix is whole: another row maps it. */
	a = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd, a, ids, 3));
	kt_snap_row(self->fd, a, r);
	EXPECT_EQ(3 * pt, r->protected_len);
	EXPECT_EQ(0, memcmp(ids, r->pages, 3 * sizeof(__u32)));
	ASSERT_EQ(0, kt_release1(self->fd, d, &n));
	EXPECT_EQ(1, n);	/* page 5; 3 and 4 were freed already */
	ASSERT_EQ(0, kt_release1(self->fd, a, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(3, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	ACCT();
}

/* ---- two clients ------------------------------------------------------- */

/* Neither client can evict, attach or donate into the other's cache. */
TEST_F(cache, isolation)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h1, h2, b2;
	struct kvpool_stats s1, s2;
	struct kvpool_batch b;
	__u32 mine[2], theirs[2], bp[1], n;

	cache_pages(_metadata, self, self->fd, 2, mine);
	cache_pages(_metadata, self, self->fd2, 2, theirs);
	/* One of theirs pinned by a row of theirs. */
	b2 = kt_new_row(_metadata, self->fd2, 0, 0);
	ASSERT_EQ(0, kt_attach(self->fd2, b2, &theirs[1], 1));
	bp[0] = theirs[1];
	h1 = kt_new_row(_metadata, self->fd, 0, 0);
	h2 = kt_new_row(_metadata, self->fd2, 0, 0);
	ACCT();

	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	ASSERT_EQ(0, kt_stats(self->fd2, &s2));
	EXPECT_EQ(2, s1.out_client_cache_pages);
	EXPECT_EQ(2, s2.out_client_cache_pages);
	EXPECT_EQ(3, s1.out_cache_evictable);
	EXPECT_EQ(1, s1.out_cache_pinned);

	EXPECT_EQ(ENOENT, kt_evict(self->fd2, mine, 2, &b));
	EXPECT_EQ(0, b.out_error_index);
	EXPECT_EQ(ENOENT, kt_evict(self->fd, theirs, 1, &b));
	/* Their pinned page: ENOENT, not EBUSY. */
	EXPECT_EQ(ENOENT, kt_evict(self->fd, bp, 1, &b));
	EXPECT_EQ(ENOENT, kt_attach(self->fd2, h2, mine, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, h1, theirs, 1));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, h1, bp, 1));
	/* Their rows are not ours to donate, free or release into a cache. */
	EXPECT_EQ(ENOENT, kt_donate1(self->fd, b2, pt, NULL));
	EXPECT_EQ(ENOENT, kt_swa_free1(self->fd, b2, pt, NULL));
	EXPECT_EQ(ENOENT, kt_release_donate1(self->fd, b2, NULL));
	EXPECT_EQ(ENOENT, kt_attach(self->fd, h2, mine, 1));
	ASSERT_EQ(0, kt_stats(self->fd, &s2));
	EXPECT_STREQ("", kt_stats_diff(&s1, &s2, KT_ST_USAGE));
	ACCT();

	/* Each can use its own. */
	ASSERT_EQ(0, kt_attach(self->fd, h1, mine, 2));
	ASSERT_EQ(0, kt_evict(self->fd2, theirs, 1, &b));
	ACCT();

	/* fd2 goes: its cache goes with it, ours stays. */
	kt_pool_close(&self->pool, self->fd2);
	self->fd2 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_EQ(2, s1.out_client_cache_pages);
	EXPECT_EQ(2, s1.out_cache_pinned);
	EXPECT_EQ(0, s1.out_cache_evictable);
	EXPECT_EQ(self->pool.usable_pages - 2, s1.out_free_pages);
	ASSERT_EQ(0, kt_release1(self->fd, h1, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_evict(self->fd, mine, 2, &b));
	ACCT();
}

/* ---- the client's end -------------------------------------------------- */

/*
 * Take a bit of everything: an unpinned cache, a donor still holding its
 * donated pages, a row borrowing those, a parked slot borrowing the
 * unpinned ones, and a window-freed row. Returns 0 or the failing line.
 */
#define MESS_CACHE	(3 + 4)		/* cache pages it ends with */
static int make_mess(int fd, __u32 pt)
{
	struct kvpool_handle a, d, b, s, w;
	__u32 ev[3], pin[4];
	struct kvpool_row_query q;

	if (kt_row_alloc(fd, 1, &a, NULL) || kt_grow(fd, a, 3 * pt) ||
	    kt_commit1(fd, a, 3 * pt) || kt_query(fd, a, ev, 3, &q) ||
	    kt_release_donate1(fd, a, NULL))
		return __LINE__;
	if (kt_row_alloc(fd, 1, &d, NULL) || kt_grow(fd, d, 5 * pt) ||
	    kt_commit1(fd, d, 4 * pt + pt / 2) ||
	    kt_query(fd, d, pin, 4, &q) || kt_donate1(fd, d, 4 * pt, NULL))
		return __LINE__;
	if (kt_row_alloc(fd, 1, &b, NULL) || kt_attach(fd, b, pin, 2) ||
	    kt_grow(fd, b, 3 * pt))
		return __LINE__;
	if (kt_row_alloc(fd, 1, &s, NULL) || kt_attach(fd, s, ev, 3) ||
	    kt_grow(fd, s, 4 * pt + 1) || kt_to_slot(fd, 5, s, NULL))
		return __LINE__;
	if (kt_row_alloc(fd, 1, &w, NULL) || kt_grow(fd, w, 6 * pt) ||
	    kt_commit1(fd, w, 6 * pt) || kt_swa_free1(fd, w, 4 * pt, NULL))
		return __LINE__;
	return 0;
}

/* What make_mess() leaves, seen from another client. */
static void expect_mess(struct __test_metadata *_metadata,
			FIXTURE_DATA(cache) *self, __u32 nr_clients)
{
	struct kvpool_stats s;

	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(nr_clients, s.out_nr_clients);
	EXPECT_EQ(MESS_CACHE, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_cache_evictable);
	/* d: 1, b: 1, w: 2 own pages; s: 2 in the slot. */
	EXPECT_EQ(4, s.out_row_pages);
	EXPECT_EQ(2, s.out_slot_pages);
	EXPECT_EQ(self->pool.usable_pages - MESS_CACHE - 6, s.out_free_pages);
	EXPECT_EQ(0, s.out_client_cache_pages);
	/* The same tenant as ours (a forked child, or this process). */
	EXPECT_EQ(MESS_CACHE + 6, s.out_tenant_pages);
	EXPECT_EQ(4, s.out_tenant_rows);
	kt_check_identities(_metadata, &self->pool, &s);
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/* SIGKILL while holding all of it: the pool is whole again. */
TEST_F(cache, close_sigkill)
{
	int ready[2], go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		int fd, line;

		close(ready[0]);
		close(go[1]);
		fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		line = make_mess(fd, self->pt);
		if (line)
			fprintf(stderr, "# child: make_mess line %d\n", line);
		CHILD_CHECK(line == 0);
		kt_child_signal(ready[1], 'r');
		for (;;)
			kt_pipe_wait(go[0]);	/* until killed */
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	expect_mess(_metadata, self, 3);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 2);
	ACCT();
	close(ready[0]);
	close(go[1]);
}

/* close() of the client does the same; the other client's cache stays. */
TEST_F(cache, close_keeps_others)
{
	struct kvpool_stats s;
	__u32 p[2];
	int fd3;

	cache_pages(_metadata, self, self->fd2, 2, p);
	fd3 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, make_mess(fd3, self->pt));
	kt_expect_verify(_metadata, &self->pool, self->fd);
	kt_pool_close(&self->pool, fd3);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(2, s.out_nr_clients);
	EXPECT_EQ(2, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_row_pages);
	EXPECT_EQ(0, s.out_slot_pages);
	EXPECT_EQ(0, s.out_held_rows);
	EXPECT_EQ(0, s.out_slot_rows);
	EXPECT_EQ(self->pool.usable_pages - 2, s.out_free_pages);
	ACCT();
	ASSERT_EQ(0, kt_evict(self->fd2, p, 2, NULL));
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 2);
}

/* ---- accounting over a long walk --------------------------------------- */

/*
 * Many small steps of every kind on two clients, with the identities,
 * sysfs, fdinfo and VERIFY checked after each one.
 */
TEST_F(cache, accounting_walk)
{
	const __u32 pt = self->pt, half = self->half;
	struct kvpool_handle h[4], g;
	struct kvpool_batch b;
	__u32 p[4], q[3], n;
	int round;

	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, kt_row_alloc(self->fd, 4, h, NULL));
		ACCT();
		ASSERT_EQ(0, kt_grow(self->fd, h[0], 4 * pt + half));
		ASSERT_EQ(0, kt_grow(self->fd, h[1], 5 * pt));
		ACCT();
		ASSERT_EQ(0, kt_commit1(self->fd, h[0], 4 * pt + half));
		ASSERT_EQ(0, kt_commit1(self->fd, h[1], 3 * pt));
		ASSERT_EQ(NP(4 * pt + half),
			  row_ids(_metadata, self->fd, h[0], self->ids, 8));
		memcpy(p, self->ids, sizeof(p));
		ASSERT_EQ(0, kt_donate1(self->fd, h[0], 4 * pt, &n));
		ASSERT_EQ(4, n);
		ACCT();
		ASSERT_EQ(0, kt_attach(self->fd, h[2], p, 3));
		ACCT();
		ASSERT_EQ(0, kt_attach(self->fd, h[3], &p[1], 3));
		ACCT();
		ASSERT_EQ(0, kt_grow(self->fd, h[2], 6 * pt));
		ASSERT_EQ(0, kt_commit1(self->fd, h[2], 6 * pt));
		ACCT();
		ASSERT_EQ(0, kt_swa_free1(self->fd, h[2], 5 * pt, &n));
		ASSERT_EQ(2, n);
		ACCT();
		ASSERT_EQ(0, kt_swa_free1(self->fd, h[1], 2 * pt, &n));
		ASSERT_EQ(2, n);
		ACCT();
		ASSERT_EQ(0, kt_trim1(self->fd, h[1], &n));
		ASSERT_EQ(2, n);
		ACCT();
		ASSERT_EQ(0, kt_to_slot(self->fd, round, h[3], NULL));
		ACCT();
		ASSERT_EQ(0, kt_release1(self->fd, h[0], &n));
		ASSERT_EQ(half > 0, n);
		ACCT();
		/*
		 * Both have freed pages above their protected prefix (h[1]
		 * 2 pt > 0, h[2] 5 pt > 3 pt): no release-donate for either,
		 * the first of them named, nothing released.
		 */
		kt_snap(self->fd, &h[1], 2, &self->before);
		ASSERT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE,
					   KVPOOL_RELEASE_DONATE, &h[1], 2,
					   &b));
		EXPECT_EQ(0, b.out_error_index);
		EXPECT_UNCHANGED(self->fd, &h[1], 2);
		ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, 0, &h[1], 2,
				      NULL));
		ACCT();
		/* The other client does its own thing meanwhile. */
		cache_pages(_metadata, self, self->fd2, 3, q);
		g = kt_new_row(_metadata, self->fd2, 0, 0);
		ASSERT_EQ(0, kt_attach(self->fd2, g, q, 2));
		ACCT();
		ASSERT_EQ(0, kt_from_slot(self->fd, round, &h[3], NULL));
		ACCT();
		ASSERT_EQ(0, kt_release1(self->fd, h[3], NULL));
		ACCT();
		ASSERT_EQ(0, kt_evict(self->fd, p, 4, NULL));
		ACCT();
		ASSERT_EQ(0, kt_release1(self->fd2, g, NULL));
		ASSERT_EQ(0, kt_evict(self->fd2, q, 3, NULL));
		ACCT();
	}
}

TEST_HARNESS_MAIN
