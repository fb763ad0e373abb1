// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: rows and pages.
 *
 * ROW_ALLOC, EXTEND, COMMIT, TRIM, RELEASE and ROW_QUERY on pools with
 * page_tokens 1 and 16, with and without KVPOOL_CREATE_RESERVE_ZERO: page
 * counts (the partial page is filled first), page ids (distinct, real,
 * never the reserved page 0, what ROW_QUERY lists), every errno of the
 * header's table with out_error_index on the first bad entry, and
 * all-or-nothing: a refused batch leaves STATS and every row as they were.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#define NR_PAGES	256
#define NR_ROWS		32
#define ROW_TOKENS	4096

FIXTURE(rows) {
	struct kt_pool pool;
	int fd;		/* the client under test */
	int fd2;	/* another client of the same pool */
	__u32 pt;
	unsigned char seen[NR_PAGES];
	__u32 pages[4096];
};

FIXTURE_VARIANT(rows) {
	__u32 flags;
	__u32 page_tokens;
};

FIXTURE_VARIANT_ADD(rows, pt1) {
	.flags = KVPOOL_CREATE_RESERVE_ZERO, .page_tokens = 1,
};

FIXTURE_VARIANT_ADD(rows, pt16) {
	.flags = KVPOOL_CREATE_RESERVE_ZERO, .page_tokens = 16,
};

FIXTURE_VARIANT_ADD(rows, pt1_norz) {
	.flags = 0, .page_tokens = 1,
};

FIXTURE_VARIANT_ADD(rows, pt16_norz) {
	.flags = 0, .page_tokens = 16,
};

FIXTURE_SETUP(rows)
{
	kt_pool_init(_metadata, &self->pool, variant->flags, NR_PAGES,
		     variant->page_tokens, NR_ROWS, ROW_TOKENS);
	self->fd = kt_pool_open(_metadata, &self->pool);
	self->fd2 = kt_pool_open(_metadata, &self->pool);
	self->pt = variant->page_tokens;
}

FIXTURE_TEARDOWN(rows)
{
	kt_pool_fini(_metadata, &self->pool);
}

/* Pages a row of `len` tokens owns. */
#define NP(len) kt_div_up((len), self->pt)

static bool rz(FIXTURE_DATA(rows) *self)
{
	return self->pool.geo.flags & KVPOOL_CREATE_RESERVE_ZERO;
}

static __u32 free_pages(FIXTURE_DATA(rows) *self)
{
	struct kvpool_stats s;

	if (kt_stats(self->fd, &s))
		return ~0u;
	return s.out_free_pages;
}

static void expect_row(struct __test_metadata *_metadata, int fd,
		       struct kvpool_handle h, __u32 pt, __u32 alloc,
		       __u32 committed)
{
	static struct kt_row_snap s;

	kt_snap_row(fd, h, &s);
	ASSERT_EQ(0, s.err);
	EXPECT_EQ(KVPOOL_ROW_HELD, s.state);
	EXPECT_EQ(h.req_pool_idx, s.idx);
	EXPECT_EQ(alloc, s.alloc);
	EXPECT_EQ(committed, s.committed);
	EXPECT_EQ(kt_div_up(alloc, pt), s.nr_pages);
	EXPECT_EQ(0, s.protected_len);
	EXPECT_EQ(0, s.swa);
}

/*
 * A handle that is stale for this client: it names a row the client holds
 * again under a newer generation. *fresh gets the current handle.
 */
static void make_stale(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rows) *self, struct kvpool_handle *stale,
		       struct kvpool_handle *fresh)
{
	struct kvpool_handle all[NR_ROWS];
	struct kvpool_stats st;
	__u32 i, n, found = 0;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, stale, NULL));
	ASSERT_EQ(0, kt_release1(self->fd, *stale, NULL));
	/* Take every free row: the one just released is among them. */
	ASSERT_EQ(0, kt_stats(self->fd, &st));
	n = st.out_free_rows;
	ASSERT_EQ(0, kt_row_alloc(self->fd, n, all, NULL));
	for (i = 0; i < n; i++) {
		if (all[i].req_pool_idx == stale->req_pool_idx) {
			*fresh = all[i];
			found = 1;
		} else {
			ASSERT_EQ(0, kt_release1(self->fd, all[i], NULL));
		}
	}
	ASSERT_EQ(1, found);
	ASSERT_NE(stale->generation, fresh->generation);
}

/* ---- ROW_ALLOC --------------------------------------------------------- */

TEST_F(rows, alloc_basic)
{
	struct kvpool_stats before, after;
	struct kvpool_handle h[4];
	__u32 sh = 0xdead, i, j;

	ASSERT_EQ(0, kt_stats(self->fd, &before));
	ASSERT_EQ(0, kt_row_alloc(self->fd, 4, h, &sh));
	for (i = 0; i < 4; i++) {
		EXPECT_GT(NR_ROWS, h[i].req_pool_idx);
		if (rz(self))
			EXPECT_NE(0, h[i].req_pool_idx);
		EXPECT_NE(0, h[i].generation);
		for (j = 0; j < i; j++)
			EXPECT_NE(h[j].req_pool_idx, h[i].req_pool_idx);
		expect_row(_metadata, self->fd, h[i], self->pt, 0, 0);
	}
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_EQ(before.out_free_rows - 4, after.out_free_rows);
	EXPECT_EQ(before.out_held_rows + 4, after.out_held_rows);
	EXPECT_EQ(4, after.out_client_rows);
	EXPECT_EQ(0, after.out_client_pages);
	EXPECT_EQ(before.out_free_pages, after.out_free_pages);
	kt_check_identities(_metadata, &self->pool, &after);
}

/* Every free row exactly once; then ENOSPC with out_short 1. */
TEST_F(rows, alloc_all_rows)
{
	struct kvpool_handle h[NR_ROWS + 1];
	struct kvpool_stats before, after;
	unsigned char got[NR_ROWS] = { 0 };
	__u32 n = self->pool.usable_rows, sh = 0, i;

	ASSERT_EQ(0, kt_row_alloc(self->fd, n, h, NULL));
	for (i = 0; i < n; i++) {
		ASSERT_GT(NR_ROWS, h[i].req_pool_idx);
		EXPECT_EQ(0, got[h[i].req_pool_idx]);
		got[h[i].req_pool_idx] = 1;
	}
	for (i = rz(self); i < NR_ROWS; i++)
		EXPECT_EQ(1, got[i]) TH_LOG("row %u not handed out", i);

	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(0, before.out_free_rows);
	EXPECT_EQ(ENOSPC, kt_row_alloc(self->fd, 1, h, &sh));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
}

TEST_F(rows, alloc_count_limits)
{
	struct kvpool_handle h[NR_ROWS + 2];
	struct kvpool_stats before, after;

	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(EINVAL, kt_row_alloc(self->fd, 0, h, NULL));
	EXPECT_EQ(EINVAL, kt_row_alloc(self->fd, 0, NULL, NULL));
	EXPECT_EQ(EINVAL, kt_row_alloc(self->fd, self->pool.max_batch + 1, h,
				       NULL));
	/* The count is checked before the array is touched. */
	EXPECT_EQ(EINVAL, kt_row_alloc(self->fd, self->pool.max_batch + 1,
				       NULL, NULL));
	EXPECT_EQ(EINVAL, kt_row_alloc(self->fd, ~0u, NULL, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
}

/* More rows than free: ENOSPC, out_short exact, nothing taken. */
TEST_F(rows, alloc_enospc_exact)
{
	struct kvpool_handle h[NR_ROWS];
	struct kvpool_stats before, after;
	__u32 left = self->pool.usable_rows - 10, sh = 0;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 10, h, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	ASSERT_EQ(left, before.out_free_rows);
	EXPECT_EQ(ENOSPC, kt_row_alloc(self->fd, self->pool.max_batch, h, &sh));
	EXPECT_EQ(self->pool.max_batch - left, sh);
	EXPECT_EQ(ENOSPC, kt_row_alloc(self->fd, left + 1, h, &sh));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
	/* Exactly what is left still works. */
	EXPECT_EQ(0, kt_row_alloc(self->fd, left, h, NULL));
}

/*
 * handles cannot be written: EFAULT, and (header: "except ROW_ALLOC, which
 * gives the rows back first") no row is taken.
 */
TEST_F(rows, alloc_handles_efault)
{
	struct kvpool_handle *edge, all[NR_ROWS];
	struct kvpool_stats before, after;
	void *g = kt_map_guarded();

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(EFAULT, kt_row_alloc(self->fd, 2, kt_fault_edge(g), NULL));
	/* First handle writable, second not. */
	edge = (struct kvpool_handle *)kt_fault_edge(g) - 1;
	EXPECT_EQ(EFAULT, kt_row_alloc(self->fd, 2, edge, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
	/* The rows went back whole: all of them can be taken. */
	EXPECT_EQ(0, kt_row_alloc(self->fd, before.out_free_rows, all, NULL));
	munmap(g, 2 * KT_PAGE_SIZE);
}

/* A row taken again gets a newer generation; the old handle is ESTALE. */
TEST_F(rows, alloc_generation_stale)
{
	struct kvpool_handle stale, fresh, all[NR_ROWS];
	struct kvpool_row_query q;
	struct kt_state before, after;
	struct kvpool_len_entry le;
	struct kvpool_stats st;
	__u32 page;

	make_stale(_metadata, self, &stale, &fresh);
	EXPECT_EQ(stale.req_pool_idx, fresh.req_pool_idx);
	EXPECT_NE(0, fresh.generation);
	EXPECT_NE(stale.generation, fresh.generation);
	ASSERT_EQ(0, kt_grow(self->fd, fresh, 3));
	/* The record of the new use is fresh: only what we just did. */
	expect_row(_metadata, self->fd, fresh, self->pt, 3, 0);

	kt_snap(self->fd, &fresh, 1, &before);
	EXPECT_EQ(ESTALE, kt_query(self->fd, stale, NULL, 0, &q));
	EXPECT_EQ(ESTALE, kt_extend1(self->fd, stale, 5, &page, 1, NULL));
	EXPECT_EQ(ESTALE, kt_commit1(self->fd, stale, 1));
	EXPECT_EQ(ESTALE, kt_trim1(self->fd, stale, NULL));
	EXPECT_EQ(ESTALE, kt_release1(self->fd, stale, NULL));
	EXPECT_EQ(ESTALE, kt_to_slot(self->fd, 1, stale, NULL));
	le = (struct kvpool_len_entry){ .handle = stale, .len = 1 };
	EXPECT_EQ(ESTALE, kt_batch(self->fd, KVPOOL_COMMIT, 0, &le, 1, NULL));
	kt_snap(self->fd, &fresh, 1, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));

	/* Once another client holds the row, the old handle is just ENOENT. */
	ASSERT_EQ(0, kt_release1(self->fd, fresh, NULL));
	ASSERT_EQ(0, kt_stats(self->fd2, &st));
	ASSERT_EQ(0, kt_row_alloc(self->fd2, st.out_free_rows, all, NULL));
	EXPECT_EQ(ENOENT, kt_query(self->fd, stale, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_query(self->fd, fresh, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_release1(self->fd, fresh, NULL));
}

/* ---- EXTEND ------------------------------------------------------------ */

/*
 * Grow one row step by step: each step gets exactly
 * ceil(new / pt) - ceil(old / pt) pages, returned in position order, and
 * the row's list is the old list followed by them.
 */
TEST_F(rows, extend_steps)
{
	const __u32 lens[] = { 0, 1, 5, 15, 16, 17, 32, 33, 100, 100, 255 };
	static struct kt_row_snap s;
	struct kvpool_extend_entry e;
	struct kvpool_extend x;
	__u32 prev[KT_ROW_MAX_PAGES], nprev = 0, free0, i;
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	free0 = free_pages(self);
	for (i = 1; i < ARRAY_SIZE(lens); i++) {
		__u32 want = NP(lens[i]) - NP(lens[i - 1]);

		e = (struct kvpool_extend_entry){ .handle = h,
						  .new_len = lens[i] };
		memset(self->pages, 0xee, 512 * sizeof(__u32));
		ASSERT_EQ(0, kt_extend(self->fd, &e, 1, self->pages, 511, &x))
			TH_LOG("extend %u -> %u", lens[i - 1], lens[i]);
		EXPECT_EQ(want, e.out_nr_new)
			TH_LOG("extend %u -> %u", lens[i - 1], lens[i]);
		EXPECT_EQ(want, x.out_nr_pages);
		EXPECT_EQ(0xeeeeeeee, self->pages[want]);
		EXPECT_STREQ("", kt_check_ids(&self->pool, self->pages, want,
					      self->seen));

		kt_snap_row(self->fd, h, &s);
		ASSERT_EQ(0, s.err);
		EXPECT_EQ(lens[i], s.alloc);
		EXPECT_EQ(0, s.committed);
		ASSERT_EQ(NP(lens[i]), s.nr_pages);
		EXPECT_EQ(0, memcmp(prev, s.pages, nprev * sizeof(__u32)))
			TH_LOG("pages moved in the row");
		EXPECT_EQ(0, memcmp(self->pages, s.pages + nprev,
				    want * sizeof(__u32)))
			TH_LOG("EXTEND returned other pages than ROW_QUERY lists");
		memcpy(prev, s.pages, s.nr_pages * sizeof(__u32));
		nprev = s.nr_pages;
		EXPECT_EQ(free0 - nprev, free_pages(self));
	}
}

/* pt 16: 1 -> 5 tokens takes no page, 16 -> 17 one. */
TEST_F(rows, extend_partial_page_first)
{
	struct kvpool_handle h;
	__u32 n = ~0u;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_extend1(self->fd, h, 1, self->pages, 16, &n));
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, kt_extend1(self->fd, h, 5, self->pages, 16, &n));
	EXPECT_EQ(self->pt == 16 ? 0 : 4, n);
	ASSERT_EQ(0, kt_extend1(self->fd, h, 16, self->pages, 16, &n));
	EXPECT_EQ(self->pt == 16 ? 0 : 11, n);
	ASSERT_EQ(0, kt_extend1(self->fd, h, 17, self->pages, 16, &n));
	EXPECT_EQ(1, n);
	/* No page needed: a NULL array with no room is fine. */
	ASSERT_EQ(0, kt_extend1(self->fd, h, 17, NULL, 0, &n));
	EXPECT_EQ(0, n);
	if (self->pt == 16) {
		ASSERT_EQ(0, kt_extend1(self->fd, h, 32, NULL, 0, &n));
		EXPECT_EQ(0, n);
	}
	expect_row(_metadata, self->fd, h, self->pt, self->pt == 16 ? 32 : 17,
		   0);
}

/* One batch, several rows: pages come entry by entry, in row order. */
TEST_F(rows, extend_batch_order)
{
	const __u32 pt = self->pt;
	struct kvpool_extend_entry e[4];
	struct kvpool_handle h[4];
	static struct kt_row_snap s;
	struct kvpool_extend x;
	const __u32 len1[4] = { 3 * pt + 1, 1, 0, 2 * pt };
	const __u32 len2[4] = { 3 * pt + 2, pt + 1, 5, 2 * pt };
	__u32 off, i, total;
	int round;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 4, h, NULL));
	for (round = 0; round < 2; round++) {
		const __u32 *len = round ? len2 : len1;
		const __u32 *old = round ? len1 : NULL;

		total = 0;
		for (i = 0; i < 4; i++) {
			e[i] = (struct kvpool_extend_entry){
				.handle = h[i], .new_len = len[i],
				.out_nr_new = 0xdeadbeef,
			};
			total += NP(len[i]) - (old ? NP(old[i]) : 0);
		}
		/* A later entry first, to catch sorting by anything. */
		if (round) {
			struct kvpool_extend_entry t = e[0];

			e[0] = e[3];
			e[3] = t;
		}
		ASSERT_EQ(0, kt_extend(self->fd, e, 4, self->pages, total, &x));
		EXPECT_EQ(total, x.out_nr_pages);
		EXPECT_STREQ("", kt_check_ids(&self->pool, self->pages, total,
					      self->seen));
		off = 0;
		for (i = 0; i < 4; i++) {
			__u32 k = round ? (i == 0 ? 3 : i == 3 ? 0 : i) : i;
			__u32 was = old ? NP(old[k]) : 0;

			EXPECT_EQ(NP(len[k]) - was, e[i].out_nr_new)
				TH_LOG("round %d entry %u", round, i);
			kt_snap_row(self->fd, e[i].handle, &s);
			ASSERT_EQ(0, s.err);
			ASSERT_EQ(NP(len[k]), s.nr_pages);
			EXPECT_EQ(len[k], s.alloc);
			EXPECT_EQ(0, memcmp(self->pages + off, s.pages + was,
					    e[i].out_nr_new * sizeof(__u32)))
				TH_LOG("round %d entry %u: pages not in entry order",
				       round, i);
			off += e[i].out_nr_new;
		}
		EXPECT_EQ(total, off);
	}
}

/* pages_cap exactly what is needed; nothing written past it. */
TEST_F(rows, extend_exact_cap)
{
	struct kvpool_handle h;
	struct kvpool_extend_entry e;
	struct kvpool_extend x;
	__u32 need;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	e = (struct kvpool_extend_entry){ .handle = h, .new_len = 4 * self->pt };
	need = 4;
	memset(self->pages, 0xcc, 16 * sizeof(__u32));
	ASSERT_EQ(0, kt_extend(self->fd, &e, 1, self->pages, need, &x));
	EXPECT_EQ(need, x.out_nr_pages);
	EXPECT_EQ(0xcccccccc, self->pages[need]);
}

/* pages_cap too small: ENOBUFS, out_nr_pages = what is needed, no change. */
TEST_F(rows, extend_enobufs)
{
	const __u32 pt = self->pt;
	struct kvpool_extend_entry e[2];
	struct kt_state before, after;
	struct kvpool_handle h[2];
	struct kvpool_extend x;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 2, h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 1));
	kt_snap(self->fd, h, 2, &before);

	e[0] = (struct kvpool_extend_entry){ .handle = h[0], .new_len = 3 * pt };
	memset(self->pages, 0xcc, 8 * sizeof(__u32));
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, e, 1, self->pages, 2, &x));
	EXPECT_EQ(3, x.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, x.out_error_index);
	EXPECT_EQ(0xcccccccc, self->pages[0]);
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, e, 1, NULL, 0, &x));
	EXPECT_EQ(3, x.out_nr_pages);

	/* Two rows: 3 + (ceil((2pt+1)/pt) - 1) = 5 pages. */
	e[1] = (struct kvpool_extend_entry){ .handle = h[1],
					     .new_len = 2 * pt + 1 };
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, e, 2, self->pages, 4, &x));
	EXPECT_EQ(5, x.out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, x.out_error_index);

	kt_snap(self->fd, h, 2, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));
	/* With room it works. */
	EXPECT_EQ(0, kt_extend(self->fd, e, 2, self->pages, 5, &x));
	EXPECT_EQ(5, x.out_nr_pages);
}

/* Both too few pages and too small an array: ENOBUFS is checked first. */
TEST_F(rows, extend_enobufs_before_enospc)
{
	struct kt_state before, after;
	struct kvpool_extend x;
	struct kvpool_extend_entry e;
	struct kvpool_handle h, other;
	__u32 need = NP(ROW_TOKENS);

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	/* One page elsewhere, so that a full row never fits. */
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &other, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, other, 1));
	ASSERT_LT(free_pages(self), need);
	kt_snap(self->fd, &h, 1, &before);
	e = (struct kvpool_extend_entry){ .handle = h, .new_len = ROW_TOKENS };
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, &e, 1, self->pages, need - 1,
				     &x));
	EXPECT_EQ(need, x.out_nr_pages);
	EXPECT_EQ(ENOSPC, kt_extend(self->fd, &e, 1, self->pages, need, &x));
	EXPECT_EQ(need - free_pages(self), x.out_short);
	kt_snap(self->fd, &h, 1, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));
}

/* Not enough free pages: ENOSPC, out_short exact, nothing taken. */
TEST_F(rows, extend_enospc)
{
	const __u32 pt = self->pt;
	const __u32 fill = self->pool.usable_pages - 3;
	struct kvpool_extend_entry e[3];
	struct kt_state before, after;
	struct kvpool_handle h[3];
	struct kvpool_extend x;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 3, h, NULL));
	/* Row 0 takes all but 3 pages, row 1 has a partial last page. */
	ASSERT_EQ(0, kt_grow(self->fd, h[0], (fill - 1) * pt));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 1));
	ASSERT_EQ(3, free_pages(self));
	kt_snap(self->fd, h, 3, &before);

	/* Needs 2 + 3 = 5 (row 1's partial page counts for nothing). */
	e[0] = (struct kvpool_extend_entry){ .handle = h[1],
					     .new_len = 2 * pt + 1 };
	e[1] = (struct kvpool_extend_entry){ .handle = h[2],
					     .new_len = 3 * pt };
	EXPECT_EQ(ENOSPC, kt_extend(self->fd, e, 2, self->pages, 64, &x));
	EXPECT_EQ(2, x.out_short);
	EXPECT_EQ(KT_ERR_NONE, x.out_error_index);
	kt_snap(self->fd, h, 3, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));

	/* Three rows, 1 + 2 + 2 = 5 pages, 3 free. */
	e[2] = (struct kvpool_extend_entry){ .handle = h[0],
					     .new_len = fill * pt };
	e[1].new_len = 2 * pt;
	e[0].new_len = 2 * pt + 1;
	EXPECT_EQ(ENOSPC, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(2, x.out_short);
	kt_snap(self->fd, h, 3, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));

	/* Exactly the 3 free pages: fine, and the pool is empty. */
	e[1].new_len = pt;
	e[0].new_len = 2 * pt;
	e[2].new_len = fill * pt;
	EXPECT_EQ(0, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(3, x.out_nr_pages);
	EXPECT_EQ(0, free_pages(self));
}

/*
 * An empty pool still serves tokens that fit in a row's partial last page;
 * one token more is ENOSPC with out_short 1.
 */
TEST_F(rows, extend_exhausted_pool)
{
	const __u32 pt = self->pt;
	const __u32 u = self->pool.usable_pages;
	struct kvpool_handle h[2];
	struct kvpool_extend x;
	struct kvpool_extend_entry e;
	__u32 n = ~0u;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 2, h, NULL));
	/* All pages, the last one holding a single token. */
	ASSERT_EQ(0, kt_grow(self->fd, h[0], (u - 1) * pt + 1));
	ASSERT_EQ(0, free_pages(self));
	ASSERT_EQ(0, kt_extend1(self->fd, h[0], u * pt, NULL, 0, &n));
	EXPECT_EQ(0, n);
	e = (struct kvpool_extend_entry){ .handle = h[1], .new_len = 1 };
	EXPECT_EQ(ENOSPC, kt_extend(self->fd, &e, 1, self->pages, 4, &x));
	EXPECT_EQ(1, x.out_short);
	expect_row(_metadata, self->fd, h[1], pt, 0, 0);
	expect_row(_metadata, self->fd, h[0], pt, u * pt, 0);
}

/* new_len == row_tokens is a valid length (ENOSPC or success, not EINVAL). */
TEST_F(rows, extend_to_row_tokens)
{
	struct kvpool_handle h;
	struct kvpool_extend_entry e;
	struct kvpool_extend x;
	__u32 need = NP(ROW_TOKENS), fr;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	fr = free_pages(self);
	e = (struct kvpool_extend_entry){ .handle = h, .new_len = ROW_TOKENS };
	if (need <= fr) {
		EXPECT_EQ(0, kt_extend(self->fd, &e, 1, self->pages,
				       ARRAY_SIZE(self->pages), &x));
		expect_row(_metadata, self->fd, h, self->pt, ROW_TOKENS, 0);
	} else {
		EXPECT_EQ(ENOSPC, kt_extend(self->fd, &e, 1, self->pages,
					    ARRAY_SIZE(self->pages), &x));
		EXPECT_EQ(need - fr, x.out_short);
		expect_row(_metadata, self->fd, h, self->pt, 0, 0);
	}
}

/* Bad lengths: EINVAL naming the first bad entry; nothing changed. */
TEST_F(rows, extend_bad_lengths)
{
	const __u32 pt = self->pt;
	struct kvpool_extend_entry e[3];
	struct kt_state before, after;
	struct kvpool_handle h[3];
	struct kvpool_extend x;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 3, h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 3 * pt));
	kt_snap(self->fd, h, 3, &before);

	/* Shrink. */
	e[0] = (struct kvpool_extend_entry){ .handle = h[0], .new_len = pt };
	e[1] = (struct kvpool_extend_entry){ .handle = h[1], .new_len = 2 * pt };
	e[2] = (struct kvpool_extend_entry){ .handle = h[2], .new_len = pt };
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(1, x.out_error_index);
	e[1].new_len = 3 * pt - 1;
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(1, x.out_error_index);
	e[1].new_len = 0;
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(1, x.out_error_index);

	/* Past row_tokens. */
	e[1].new_len = 3 * pt;
	e[2].new_len = ROW_TOKENS + 1;
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(2, x.out_error_index);
	e[2].new_len = ~0u;
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(2, x.out_error_index);
	/* The first bad one is named, not the last. */
	e[0].new_len = ROW_TOKENS + 1;
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(0, x.out_error_index);

	kt_snap(self->fd, h, 3, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));
}

TEST_F(rows, extend_duplicate_row)
{
	struct kvpool_extend_entry e[3];
	struct kt_state before, after;
	struct kvpool_handle h[2];
	struct kvpool_extend x;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 2, h, NULL));
	kt_snap(self->fd, h, 2, &before);
	e[0] = (struct kvpool_extend_entry){ .handle = h[0], .new_len = 1 };
	e[1] = (struct kvpool_extend_entry){ .handle = h[1], .new_len = 1 };
	e[2] = (struct kvpool_extend_entry){ .handle = h[0], .new_len = 2 };
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 3, self->pages, 64, &x));
	EXPECT_EQ(2, x.out_error_index);
	/* Same length twice is still the same row twice. */
	e[1] = e[0];
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 2, self->pages, 64, &x));
	EXPECT_EQ(1, x.out_error_index);
	kt_snap(self->fd, h, 2, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));
}

/*
 * Handles that are not ours, or no longer: ENOENT or ESTALE on the first
 * bad entry; the good entry before it is untouched.
 */
TEST_F(rows, extend_bad_handles)
{
	struct kvpool_handle stale, fresh, mine, foreign, released, parked;
	struct {
		const char *what;
		struct kvpool_handle h;
		int err;
	} *c, cases[] = {
		{ "stale", { 0, 0 }, ESTALE },
		{ "foreign", { 0, 0 }, ENOENT },
		{ "released", { 0, 0 }, ENOENT },
		{ "parked", { 0, 0 }, ENOENT },
		{ "idx nr_rows", { NR_ROWS, 1 }, ENOENT },
		{ "idx ~0", { ~0u, 1 }, ENOENT },
		{ "idx 1<<31", { 1u << 31, 1 }, ENOENT },
		{ "row 0, reserved", { 0, 1 }, ENOENT },
	};
	struct kvpool_extend_entry e[2];
	struct kt_state before, after;
	struct kvpool_extend x;
	unsigned int i;
	__u32 n;

	make_stale(_metadata, self, &stale, &fresh);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &mine, NULL));
	ASSERT_EQ(0, kt_row_alloc(self->fd2, 1, &foreign, NULL));
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &parked, NULL));
	ASSERT_EQ(0, kt_to_slot(self->fd, 42, parked, &n));
	/* Released last: a free row, nobody's. */
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &released, NULL));
	ASSERT_EQ(0, kt_release1(self->fd, released, NULL));

	cases[0].h = stale;
	cases[1].h = foreign;
	cases[2].h = released;
	cases[3].h = parked;
	kt_snap(self->fd, &mine, 1, &before);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		c = &cases[i];
		if (!strcmp(c->what, "row 0, reserved") && !rz(self))
			continue;
		e[0] = (struct kvpool_extend_entry){ .handle = mine,
						     .new_len = 1 };
		e[1] = (struct kvpool_extend_entry){ .handle = c->h,
						     .new_len = 1 };
		EXPECT_EQ(c->err, kt_extend(self->fd, e, 2, self->pages, 64, &x))
			TH_LOG("extend with a %s handle", c->what);
		EXPECT_EQ(1, x.out_error_index) TH_LOG("%s", c->what);
		kt_snap(self->fd, &mine, 1, &after);
		EXPECT_STREQ("", kt_state_diff(&before, &after))
			TH_LOG("%s", c->what);
	}
	/* The foreign row is untouched too. */
	expect_row(_metadata, self->fd2, foreign, self->pt, 0, 0);
}

TEST_F(rows, extend_count_limits)
{
	struct kvpool_extend_entry e[NR_ROWS + 1];
	struct kvpool_stats before, after;
	struct kvpool_extend x;

	memset(e, 0, sizeof(e));
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, 0, self->pages, 64, &x));
	EXPECT_EQ(EINVAL, kt_extend(self->fd, NULL, 0, NULL, 0, &x));
	EXPECT_EQ(EINVAL, kt_extend(self->fd, e, self->pool.max_batch + 1,
				    self->pages, 64, &x));
	EXPECT_EQ(KT_ERR_NONE, x.out_error_index);
	/* Count before arrays: a NULL array with a bad count is EINVAL. */
	EXPECT_EQ(EINVAL, kt_extend(self->fd, NULL, self->pool.max_batch + 1,
				    NULL, 0, &x));
	EXPECT_EQ(EINVAL, kt_extend(self->fd, NULL, ~0u, NULL, 0, &x));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
}

/* The entries array cannot be read: EFAULT, nothing changed. */
TEST_F(rows, extend_entries_efault)
{
	void *g = kt_map_guarded();
	struct kvpool_extend_entry *edge;
	struct kt_state before, after;
	struct kvpool_handle h;
	struct kvpool_extend x;

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	kt_snap(self->fd, &h, 1, &before);
	EXPECT_EQ(EFAULT, kt_extend(self->fd, NULL, 1, self->pages, 64, &x));
	EXPECT_EQ(EFAULT, kt_extend(self->fd, kt_fault_edge(g), 1,
				    self->pages, 64, &x));
	/* First entry readable and valid, the second faults. */
	edge = (struct kvpool_extend_entry *)kt_fault_edge(g) - 1;
	*edge = (struct kvpool_extend_entry){ .handle = h, .new_len = 3 };
	EXPECT_EQ(EFAULT, kt_extend(self->fd, edge, 2, self->pages, 64, &x));
	kt_snap(self->fd, &h, 1, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));
	/* The same entry alone, right at the edge, works. */
	EXPECT_EQ(0, kt_extend(self->fd, edge, 1, self->pages, 64, &x));
	munmap(g, 2 * KT_PAGE_SIZE);
}

/*
 * The page array cannot be written: EFAULT, and the extend took effect
 * (header: results are copied out after the pool lock is dropped).
 */
TEST_F(rows, extend_pages_efault)
{
	void *g = kt_map_guarded();
	struct kvpool_handle h[2];
	__u32 fr;

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 2, h, NULL));
	fr = free_pages(self);
	EXPECT_EQ(EFAULT, kt_extend1(self->fd, h[0], 2 * self->pt,
				     kt_fault_edge(g), 4, NULL));
	expect_row(_metadata, self->fd, h[0], self->pt, 2 * self->pt, 0);
	EXPECT_EQ(fr - 2, free_pages(self));
	/* Half the ids fit before the fault. */
	EXPECT_EQ(EFAULT, kt_extend1(self->fd, h[1], 2 * self->pt,
				     (__u32 *)kt_fault_edge(g) - 1, 4, NULL));
	expect_row(_metadata, self->fd, h[1], self->pt, 2 * self->pt, 0);
	EXPECT_EQ(fr - 4, free_pages(self));
	munmap(g, 2 * KT_PAGE_SIZE);
}

/* ---- COMMIT ------------------------------------------------------------ */

TEST_F(rows, commit_basic)
{
	const __u32 pt = self->pt;
	const __u32 a = 3 * pt + 1;
	struct kvpool_stats before, after;
	struct kvpool_len_entry le;
	struct kvpool_batch b;
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, a));
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	le = (struct kvpool_len_entry){ .handle = h, .len = pt };
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_COMMIT, 0, &le, 1, &b));
	EXPECT_EQ(0, b.out_nr_pages);
	expect_row(_metadata, self->fd, h, pt, a, pt);
	/* Equal is fine. */
	EXPECT_EQ(0, kt_commit1(self->fd, h, pt));
	/* Backwards, past allocated: EINVAL, committed stays. */
	EXPECT_EQ(EINVAL, kt_commit1(self->fd, h, pt - 1));
	EXPECT_EQ(EINVAL, kt_commit1(self->fd, h, 0));
	EXPECT_EQ(EINVAL, kt_commit1(self->fd, h, a + 1));
	EXPECT_EQ(EINVAL, kt_commit1(self->fd, h, ~0u));
	expect_row(_metadata, self->fd, h, pt, a, pt);
	/* Up to allocated. */
	EXPECT_EQ(0, kt_commit1(self->fd, h, a));
	expect_row(_metadata, self->fd, h, pt, a, a);
	/* Commit moves no page. */
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
	/* Extending keeps committed. */
	ASSERT_EQ(0, kt_grow(self->fd, h, a + 2 * pt));
	expect_row(_metadata, self->fd, h, pt, a + 2 * pt, a);
}

/* A zero-length row commits 0 (>= current, <= allocated). */
TEST_F(rows, commit_empty_row)
{
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	EXPECT_EQ(0, kt_commit1(self->fd, h, 0));
	EXPECT_EQ(EINVAL, kt_commit1(self->fd, h, 1));
	expect_row(_metadata, self->fd, h, self->pt, 0, 0);
}

TEST_F(rows, commit_all_or_nothing)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h[2], foreign, stale, fresh;
	struct kt_state before, after;
	struct kvpool_len_entry le[3];
	struct kvpool_batch b;

	make_stale(_metadata, self, &stale, &fresh);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 2, h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h[0], 2 * pt));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 2 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, h[1], pt));
	ASSERT_EQ(0, kt_row_alloc(self->fd2, 1, &foreign, NULL));
	kt_snap(self->fd, h, 2, &before);

#define COMMIT2(h1, len1, rsv1, err)					\
	do {								\
		le[0] = (struct kvpool_len_entry){ .handle = h[0], .len = pt }; \
		le[1] = (struct kvpool_len_entry){ .handle = (h1),	\
			.len = (len1), .__reserved = (rsv1) };		\
		EXPECT_EQ(err, kt_batch(self->fd, KVPOOL_COMMIT, 0, le, 2, &b)); \
		EXPECT_EQ(1, b.out_error_index);			\
		kt_snap(self->fd, h, 2, &after);			\
		EXPECT_STREQ("", kt_state_diff(&before, &after));	\
	} while (0)

	COMMIT2(h[1], pt - 1, 0, EINVAL);	/* backwards */
	COMMIT2(h[1], 2 * pt + 1, 0, EINVAL);	/* past allocated */
	COMMIT2(h[1], 2 * pt, 1, EINVAL);	/* entry __reserved */
	COMMIT2(h[1], 2 * pt, 0x80000000u, EINVAL);
	COMMIT2(h[0], pt, 0, EINVAL);		/* the same row twice */
	COMMIT2(stale, 0, 0, ESTALE);
	COMMIT2(foreign, 0, 0, ENOENT);
	COMMIT2(((struct kvpool_handle){ NR_ROWS, 1 }), 0, 0, ENOENT);
#undef COMMIT2

	/* Both good: both move. */
	le[0] = (struct kvpool_len_entry){ .handle = h[0], .len = pt };
	le[1] = (struct kvpool_len_entry){ .handle = h[1], .len = 2 * pt };
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_COMMIT, 0, le, 2, &b));
	expect_row(_metadata, self->fd, h[0], pt, 2 * pt, pt);
	expect_row(_metadata, self->fd, h[1], pt, 2 * pt, 2 * pt);
	expect_row(_metadata, self->fd2, foreign, pt, 0, 0);
}

TEST_F(rows, commit_count_limits)
{
	struct kvpool_len_entry le[NR_ROWS + 1];
	struct kvpool_batch b;

	memset(le, 0, sizeof(le));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_COMMIT, 0, le, 0, &b));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_COMMIT, 0, le,
				   self->pool.max_batch + 1, &b));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_COMMIT, 0, NULL,
				   self->pool.max_batch + 1, &b));
	EXPECT_EQ(EFAULT, kt_batch(self->fd, KVPOOL_COMMIT, 0, NULL, 1, &b));
}

/* ---- TRIM -------------------------------------------------------------- */

TEST_F(rows, trim_basic)
{
	const __u32 pt = self->pt;
	const __u32 a = 5 * pt, c = 2 * pt + 1;
	static struct kt_row_snap s0, s1;
	struct kvpool_stats before, after;
	struct kvpool_handle h;
	__u32 freed = ~0u, n;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, a));
	ASSERT_EQ(0, kt_commit1(self->fd, h, c));
	kt_snap_row(self->fd, h, &s0);
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	ASSERT_EQ(0, kt_trim1(self->fd, h, &freed));
	EXPECT_EQ(NP(a) - NP(c), freed);
	expect_row(_metadata, self->fd, h, pt, c, c);
	kt_snap_row(self->fd, h, &s1);
	ASSERT_EQ(NP(c), s1.nr_pages);
	EXPECT_EQ(0, memcmp(s0.pages, s1.pages, NP(c) * sizeof(__u32)))
		TH_LOG("trim must keep the head pages in place");
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_EQ(before.out_free_pages + freed, after.out_free_pages);
	EXPECT_EQ(before.out_row_pages - freed, after.out_row_pages);
	EXPECT_EQ(before.out_client_pages - freed, after.out_client_pages);
	EXPECT_EQ(before.out_held_rows, after.out_held_rows);

	/* Again: nothing left to trim. */
	ASSERT_EQ(0, kt_trim1(self->fd, h, &freed));
	EXPECT_EQ(0, freed);
	expect_row(_metadata, self->fd, h, pt, c, c);

	/* Growing again fills the partial page first. */
	n = ~0u;
	ASSERT_EQ(0, kt_extend1(self->fd, h, 3 * pt, self->pages, 8, &n));
	EXPECT_EQ(NP(3 * pt) - NP(c), n);
}

/* committed 0: every page goes, the row stays held. */
TEST_F(rows, trim_to_zero)
{
	struct kvpool_handle h;
	__u32 freed = ~0u, fr;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	fr = free_pages(self);
	ASSERT_EQ(0, kt_grow(self->fd, h, 3 * self->pt + 3));
	ASSERT_EQ(0, kt_trim1(self->fd, h, &freed));
	EXPECT_EQ(NP(3 * self->pt + 3), freed);
	expect_row(_metadata, self->fd, h, self->pt, 0, 0);
	EXPECT_EQ(fr, free_pages(self));
	/* Trimming an empty row is a no-op that succeeds. */
	ASSERT_EQ(0, kt_trim1(self->fd, h, &freed));
	EXPECT_EQ(0, freed);
}

TEST_F(rows, trim_batch)
{
	const __u32 pt = self->pt;
	const __u32 a[3] = { 4 * pt, 2 * pt + 3, 7 };
	const __u32 c[3] = { pt + 1, 2 * pt + 3, 0 };
	struct kt_state before, after;
	struct kvpool_handle h[3], hh[3], foreign, stale, fresh;
	struct kvpool_batch b;
	__u32 want = 0, fr;
	int i;

	make_stale(_metadata, self, &stale, &fresh);
	ASSERT_EQ(0, kt_row_alloc(self->fd2, 1, &foreign, NULL));
	ASSERT_EQ(0, kt_row_alloc(self->fd, 3, h, NULL));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kt_grow(self->fd, h[i], a[i]));
		ASSERT_EQ(0, kt_commit1(self->fd, h[i], c[i]));
		want += NP(a[i]) - NP(c[i]);
	}
	kt_snap(self->fd, h, 3, &before);

	/* All-or-nothing: a bad entry at 2 leaves 0 and 1 untrimmed. */
	hh[0] = h[0];
	hh[1] = h[1];
	hh[2] = stale;
	EXPECT_EQ(ESTALE, kt_batch(self->fd, KVPOOL_TRIM, 0, hh, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	hh[2] = foreign;
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_TRIM, 0, hh, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	hh[2] = h[0];
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_TRIM, 0, hh, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	kt_snap(self->fd, h, 3, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));

	fr = free_pages(self);
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_TRIM, 0, h, 3, &b));
	EXPECT_EQ(want, b.out_nr_pages);
	EXPECT_EQ(fr + want, free_pages(self));
	for (i = 0; i < 3; i++)
		expect_row(_metadata, self->fd, h[i], pt, c[i], c[i]);
}

/* ---- RELEASE ----------------------------------------------------------- */

TEST_F(rows, release_basic)
{
	const __u32 pt = self->pt;
	struct kvpool_stats before, after;
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 freed = ~0u;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, 3 * pt + 1));
	ASSERT_EQ(0, kt_commit1(self->fd, h, 2 * pt));
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	ASSERT_EQ(0, kt_release1(self->fd, h, &freed));
	EXPECT_EQ(4, freed);
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_EQ(before.out_free_pages + 4, after.out_free_pages);
	EXPECT_EQ(before.out_row_pages - 4, after.out_row_pages);
	EXPECT_EQ(before.out_free_rows + 1, after.out_free_rows);
	EXPECT_EQ(before.out_held_rows - 1, after.out_held_rows);
	EXPECT_EQ(before.out_client_rows - 1, after.out_client_rows);
	EXPECT_EQ(0, after.out_client_pages);

	/* The handle is dead: no longer held by us, so ENOENT. */
	EXPECT_EQ(ENOENT, kt_release1(self->fd, h, &freed));
	EXPECT_EQ(ENOENT, kt_query(self->fd, h, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_grow(self->fd, h, 1));
	EXPECT_EQ(ENOENT, kt_commit1(self->fd, h, 0));
	EXPECT_EQ(ENOENT, kt_trim1(self->fd, h, NULL));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 3, h, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_STREQ("", kt_stats_diff(&after, &before, KT_ST_USAGE));
}

/* A released row comes back zeroed (mark_released). */
TEST_F(rows, release_zeroes_record)
{
	struct kvpool_handle stale, fresh = { 0, 0 }, all[NR_ROWS];
	struct kvpool_stats st;
	__u32 i, n;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &stale, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, stale, 2 * self->pt + 1));
	ASSERT_EQ(0, kt_commit1(self->fd, stale, self->pt));
	ASSERT_EQ(0, kt_release1(self->fd, stale, NULL));
	/* Take every free row: the released one is among them. */
	ASSERT_EQ(0, kt_stats(self->fd, &st));
	n = st.out_free_rows;
	ASSERT_EQ(0, kt_row_alloc(self->fd, n, all, NULL));
	for (i = 0; i < n; i++) {
		if (all[i].req_pool_idx == stale.req_pool_idx)
			fresh = all[i];
		expect_row(_metadata, self->fd, all[i], self->pt, 0, 0);
	}
	EXPECT_NE(0, fresh.generation);
	EXPECT_NE(stale.generation, fresh.generation);
}

TEST_F(rows, release_batch)
{
	const __u32 pt = self->pt;
	struct kvpool_handle h[4], hh[3], foreign, released;
	struct kt_state before, after;
	struct kvpool_stats st0, st1;
	struct kvpool_batch b;
	__u32 want = 0;
	int i;

	ASSERT_EQ(0, kt_row_alloc(self->fd2, 1, &foreign, NULL));
	ASSERT_EQ(0, kt_row_alloc(self->fd, 4, h, NULL));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kt_grow(self->fd, h[i], i * pt + 1));
		want += i + 1;
	}
	/* Released last, so no later alloc of ours takes the row again. */
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &released, NULL));
	ASSERT_EQ(0, kt_release1(self->fd, released, NULL));
	kt_snap(self->fd, h, 4, &before);

	hh[0] = h[0];
	hh[1] = h[1];
	hh[2] = foreign;
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_RELEASE, 0, hh, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	hh[2] = released;
	EXPECT_EQ(ENOENT, kt_batch(self->fd, KVPOOL_RELEASE, 0, hh, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	hh[2] = h[1];
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE, 0, hh, 3, &b));
	EXPECT_EQ(2, b.out_error_index);
	/* Bit 0 is KVPOOL_RELEASE_DONATE; the lowest unknown one is bit 1. */
	EXPECT_EQ(EOPNOTSUPP, kt_batch(self->fd, KVPOOL_RELEASE,
				       KVPOOL_RELEASE_DONATE << 1, h, 4, &b));
	EXPECT_EQ(EOPNOTSUPP, kt_batch(self->fd, KVPOOL_RELEASE,
				       KVPOOL_RELEASE_DONATE | 1u << 31, h, 4,
				       &b));
	kt_snap(self->fd, h, 4, &after);
	EXPECT_STREQ("", kt_state_diff(&before, &after));
	expect_row(_metadata, self->fd2, foreign, pt, 0, 0);

	ASSERT_EQ(0, kt_stats(self->fd, &st0));
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, 0, h, 4, &b));
	EXPECT_EQ(want, b.out_nr_pages);
	ASSERT_EQ(0, kt_stats(self->fd, &st1));
	EXPECT_EQ(st0.out_free_pages + want, st1.out_free_pages);
	EXPECT_EQ(st0.out_free_rows + 4, st1.out_free_rows);
	EXPECT_EQ(0, st1.out_client_rows);
	for (i = 0; i < 4; i++) {
		struct kvpool_row_query q;

		EXPECT_EQ(ENOENT, kt_query(self->fd, h[i], NULL, 0, &q));
	}
}

TEST_F(rows, release_count_limits)
{
	struct kvpool_handle h[NR_ROWS + 1];
	struct kvpool_batch b;

	memset(h, 0, sizeof(h));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE, 0, h, 0, &b));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_RELEASE, 0, h,
				   self->pool.max_batch + 1, &b));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_TRIM, 0, h, 0, &b));
	EXPECT_EQ(EINVAL, kt_batch(self->fd, KVPOOL_TRIM, 0, NULL,
				   self->pool.max_batch + 1, &b));
	EXPECT_EQ(EFAULT, kt_batch(self->fd, KVPOOL_RELEASE, 0, NULL, 1, &b));
	EXPECT_EQ(EFAULT, kt_batch(self->fd, KVPOOL_TRIM, 0, NULL, 1, &b));
}

/* ---- ROW_QUERY --------------------------------------------------------- */

TEST_F(rows, query_pages_cap)
{
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 all[8], part[8];

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_extend1(self->fd, h, 5 * self->pt, all, 8, NULL));

	/* pages_cap may be smaller: min(cap, n) ids, the full count. */
	memset(part, 0xab, sizeof(part));
	ASSERT_EQ(0, kt_query(self->fd, h, part, 2, &q));
	EXPECT_EQ(5, q.out_nr_pages);
	EXPECT_EQ(all[0], part[0]);
	EXPECT_EQ(all[1], part[1]);
	EXPECT_EQ(0xabababab, part[2]);
	EXPECT_EQ(KVPOOL_ROW_HELD, q.out_state);
	EXPECT_EQ(h.req_pool_idx, q.out_req_pool_idx);

	ASSERT_EQ(0, kt_query(self->fd, h, NULL, 0, &q));
	EXPECT_EQ(5, q.out_nr_pages);
	EXPECT_EQ(5 * self->pt, q.out_allocated_len);

	memset(part, 0xab, sizeof(part));
	ASSERT_EQ(0, kt_query(self->fd, h, part, 8, &q));
	EXPECT_EQ(0, memcmp(all, part, 5 * sizeof(__u32)));
	EXPECT_EQ(0xabababab, part[5]);
}

TEST_F(rows, query_bad_args)
{
	struct kvpool_row_query q;
	struct kvpool_handle h;
	void *g = kt_map_guarded();

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, 2 * self->pt));

	/*
	 * session_id must be 0 without BY_SLOT. page_entry_len is valid in
	 * each case: it is checked even with pages_cap 0.
	 */
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.page_entry_len = sizeof(__u32);
	q.handle = h;
	q.session_id = 1;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ROW_QUERY, &q));
	/* handle must be 0 with BY_SLOT. */
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.page_entry_len = sizeof(__u32);
	q.flags = KVPOOL_QUERY_BY_SLOT;
	q.handle = h;
	q.session_id = 1;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ROW_QUERY, &q));
	q.handle.req_pool_idx = 0;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ROW_QUERY, &q));
	/* Unknown flag. */
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.page_entry_len = sizeof(__u32);
	q.flags = 2;
	q.handle = h;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(self->fd, KVPOOL_ROW_QUERY, &q));
	/* The page array faults. */
	EXPECT_EQ(EFAULT, kt_query(self->fd, h, kt_fault_edge(g), 2, &q));
	EXPECT_EQ(EFAULT, kt_query(self->fd, h, (__u32 *)kt_fault_edge(g) - 1,
				   2, &q));
	/* Exactly fits before the edge. */
	EXPECT_EQ(0, kt_query(self->fd, h, (__u32 *)kt_fault_edge(g) - 2,
			      2, &q));
	munmap(g, 2 * KT_PAGE_SIZE);
}

/* ---- ownership ------------------------------------------------------- */

/*
 * Take every row and every page: each non-reserved page id shows up in
 * exactly one row; releasing all of them in one batch gives them back.
 */
TEST_F(rows, every_page_once)
{
	const __u32 nr = self->pool.usable_rows, u = self->pool.usable_pages;
	struct kvpool_extend_entry e[NR_ROWS];
	struct kvpool_handle h[NR_ROWS];
	static struct kt_row_snap s;
	struct kvpool_extend x;
	struct kvpool_batch b;
	__u32 i, total = 0;

	ASSERT_EQ(0, kt_row_alloc(self->fd, nr, h, NULL));
	for (i = 0; i < nr; i++) {
		__u32 np = u / nr + (i < u % nr);

		e[i] = (struct kvpool_extend_entry){
			.handle = h[i],
			.new_len = (np - 1) * self->pt + 1,
		};
		total += np;
	}
	ASSERT_EQ(u, total);
	ASSERT_EQ(0, kt_extend(self->fd, e, nr, self->pages, u, &x));
	EXPECT_EQ(u, x.out_nr_pages);
	EXPECT_EQ(0, free_pages(self));
	for (i = 0; i < nr; i++) {
		kt_snap_row(self->fd, h[i], &s);
		ASSERT_EQ(0, s.err);
		EXPECT_STREQ("", kt_check_ids(&self->pool, s.pages, s.nr_pages,
					      self->seen));
	}
	for (i = rz(self); i < NR_PAGES; i++)
		EXPECT_EQ(1, self->seen[i]) TH_LOG("page %u owned by no row", i);
	kt_expect_verify(_metadata, &self->pool, self->fd);

	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, 0, h, nr, &b));
	EXPECT_EQ(u, b.out_nr_pages);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 2);
}

/*
 * A generation newer than the row's current one was never issued: it
 * names nothing, ENOENT from every op that takes a handle, as for a row
 * the client does not hold. An older one is ESTALE. Generations compare
 * with wrap-around, (__s32)(h.generation - current). Nothing changes.
 */
TEST_F(rows, generation_future_enoent)
{
	const __u32 pt = self->pt;
	const struct {
		__u32 delta;
		int err;
	} cases[] = {
		{ 1, ENOENT }, { 5, ENOENT }, { 0x7fffffffu, ENOENT },
		{ -1u, ESTALE }, { -5u, ESTALE }, { 0x80000000u, ESTALE },
	};
	static struct kt_state before, after;
	struct kvpool_handle h, e, rows2[2], nh;
	struct kvpool_len_entry le[2];
	struct kvpool_row_query q;
	struct kvpool_batch b;
	__u32 ids[2], n, i;

	/* Two prefix-cache pages for ATTACH_PREFIX to name. */
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, 2 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, h, 2 * pt));
	ASSERT_EQ(0, kt_query(self->fd, h, ids, 2, &q));
	ASSERT_EQ(0, kt_release_donate1(self->fd, h, &n));

	/* The row under test, taken a few times: generation past 1. */
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kt_to_slot(self->fd, 7, h, NULL));
		ASSERT_EQ(0, kt_from_slot(self->fd, 7, &nh, NULL));
		ASSERT_EQ(h.generation + 1, nh.generation);
		h = nh;
	}
	ASSERT_EQ(0, kt_grow(self->fd, h, 4 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, h, 3 * pt));
	/* An empty row: what ATTACH_PREFIX needs. */
	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &e, NULL));
	rows2[0] = h;
	rows2[1] = e;
	kt_snap(self->fd, rows2, 2, &before);

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const int err = cases[i].err;
		struct kvpool_handle bh = h, be = e;
		struct kvpool_export x = {
			.size = sizeof(x), .out_fd = -2,
		};

		bh.generation += cases[i].delta;
		be.generation += cases[i].delta;
		x.handle = bh;
		EXPECT_EQ(err, kt_query(self->fd, bh, self->pages, 8, &q))
			TH_LOG("generation %+d", (int)cases[i].delta);
		EXPECT_EQ(err, kt_commit1(self->fd, bh, 3 * pt + 1));
		EXPECT_EQ(err, kt_trim1(self->fd, bh, &n));
		EXPECT_EQ(err, kt_release1(self->fd, bh, &n));
		EXPECT_EQ(err, kt_release_donate1(self->fd, bh, &n));
		EXPECT_EQ(err, kt_extend1(self->fd, bh, 5 * pt, self->pages,
					  8, NULL));
		EXPECT_EQ(err, kt_donate1(self->fd, bh, 2 * pt, &n));
		EXPECT_EQ(err, kt_swa_free1(self->fd, bh, 2 * pt, &n));
		EXPECT_EQ(err, kt_to_slot(self->fd, 99, bh, &n));
		EXPECT_EQ(err, kt_attach(self->fd, be, ids, 2));
		EXPECT_EQ(err, kt_ioctl(self->fd, KVPOOL_EXPORT, &x))
			TH_LOG("generation %+d", (int)cases[i].delta);
		EXPECT_EQ(-1, x.out_fd);
		/* In a batch: the entry with that handle is the bad one. */
		le[0] = (struct kvpool_len_entry){ .handle = e, .len = 0 };
		le[1] = (struct kvpool_len_entry){ .handle = bh,
						   .len = 3 * pt };
		EXPECT_EQ(err, kt_batch(self->fd, KVPOOL_COMMIT, 0, le, 2,
					&b));
		EXPECT_EQ(1, b.out_error_index);
		kt_snap(self->fd, rows2, 2, &after);
		EXPECT_STREQ("", kt_state_diff(&before, &after))
			TH_LOG("generation %+d", (int)cases[i].delta);
	}
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd, 99, NULL, 0, &q));
	/* The current handles still work. */
	EXPECT_EQ(0, kt_commit1(self->fd, h, 3 * pt + 1));
	EXPECT_EQ(0, kt_attach(self->fd, e, ids, 2));
}

/* Another client can do nothing to my rows, and learns nothing. */
TEST_F(rows, foreign_client)
{
	const __u32 pt = self->pt;
	struct kt_state before, after;
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 n;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, 3 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, h, pt));
	kt_snap(self->fd, &h, 1, &before);

	EXPECT_EQ(ENOENT, kt_query(self->fd2, h, self->pages, 8, &q));
	EXPECT_EQ(ENOENT, kt_grow(self->fd2, h, 4 * pt));
	EXPECT_EQ(ENOENT, kt_commit1(self->fd2, h, 2 * pt));
	EXPECT_EQ(ENOENT, kt_trim1(self->fd2, h, &n));
	EXPECT_EQ(ENOENT, kt_release1(self->fd2, h, &n));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd2, 1, h, &n));
	/* Not ESTALE either, whatever the generation. */
	h.generation++;
	EXPECT_EQ(ENOENT, kt_query(self->fd2, h, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_release1(self->fd2, h, &n));
	h.generation--;

	kt_snap(self->fd, &h, 1, &after);
	/* client_* are per caller; compare from the owner's side. */
	EXPECT_STREQ("", kt_state_diff(&before, &after));
}

/* ---- page totals past 2^32 ---------------------------------------------- */

/*
 * 256 rows of 2^24 tokens at page_tokens 1 need 2^32 pages: the batch's
 * page total overflows 32 bits. Documented: ENOBUFS (checked before
 * ENOSPC), out_nr_pages saturating at 2^32 - 1, nothing changed. A kernel
 * that sums in 32 bits sees 10 (or 0) pages here and must not act on it.
 */
FIXTURE(overflow) {
	struct kt_pool pool;
	int fd;
};

FIXTURE_SETUP(overflow)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO, 64, 1,
		     258, 1u << 24);
	self->fd = kt_pool_open(_metadata, &self->pool);
}

FIXTURE_TEARDOWN(overflow)
{
	kt_pool_fini(_metadata, &self->pool);
}

TEST_F(overflow, extend_page_total)
{
	static struct kvpool_extend_entry e[257];
	static struct kvpool_handle h[257];
	static __u32 pages[64];
	struct kvpool_stats before, after;
	struct kvpool_extend x;
	int i;

	ASSERT_EQ(257, self->pool.usable_rows);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 257, h, NULL));
	for (i = 0; i < 256; i++)
		e[i] = (struct kvpool_extend_entry){ .handle = h[i],
						     .new_len = 1u << 24 };
	/* 2^32 + 10 pages: 10 modulo 2^32, which would fit. */
	e[256] = (struct kvpool_extend_entry){ .handle = h[256], .new_len = 10 };
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, e, 257, pages, 64, &x));
	EXPECT_EQ(0xffffffffu, x.out_nr_pages);
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, e, 256, pages, 64, &x));
	EXPECT_EQ(0xffffffffu, x.out_nr_pages);
	/* Even with the largest pages_cap there is. */
	EXPECT_EQ(ENOBUFS, kt_extend(self->fd, e, 257, pages, ~0u, &x));
	EXPECT_EQ(0xffffffffu, x.out_nr_pages);
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
	for (i = 0; i < 257; i += 64)
		expect_row(_metadata, self->fd, h[i], 1, 0, 0);
}

TEST_HARNESS_MAIN
