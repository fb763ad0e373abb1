// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: session slots.
 *
 * TO_SLOT parks a held row with its pages and lengths under a session id
 * of the client (the handle dies), FROM_SLOT gives it back under the next
 * generation, SLOT_RELEASE frees it. Pages never move. Session ids are the
 * client's own 64-bit namespace. FROM_SLOT ignores the handle it is given
 * and writes its struct before it takes effect (EFAULT: the slot stays).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#define NR_PAGES	256
#define NR_ROWS		32
#define ROW_TOKENS	4096

FIXTURE(slots) {
	struct kt_pool pool;
	int fd;
	int fd2;
	__u32 pt;
	__u32 pages[1024];
};

FIXTURE_VARIANT(slots) {
	__u32 page_tokens;
};

FIXTURE_VARIANT_ADD(slots, pt1) {
	.page_tokens = 1,
};

FIXTURE_VARIANT_ADD(slots, pt16) {
	.page_tokens = 16,
};

FIXTURE_SETUP(slots)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, variant->page_tokens, NR_ROWS, ROW_TOKENS);
	self->fd = kt_pool_open(_metadata, &self->pool);
	self->fd2 = kt_pool_open(_metadata, &self->pool);
	self->pt = variant->page_tokens;
}

FIXTURE_TEARDOWN(slots)
{
	kt_pool_fini(_metadata, &self->pool);
}

#define NP(len) kt_div_up((len), self->pt)

/* The same row record and pages, whatever its state. */
static const char *same_row(const struct kt_row_snap *a,
			    const struct kt_row_snap *b)
{
	struct kt_row_snap t = *b;

	t.state = a->state;
	return kt_row_diff(a, &t);
}

TEST_F(slots, to_slot_basic)
{
	const __u32 pt = self->pt;
	static struct kt_row_snap held, parked;
	struct kvpool_stats before, after;
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 n = ~0u;

	h = kt_new_row(_metadata, self->fd, 3 * pt + 1, 2 * pt);
	kt_snap_row(self->fd, h, &held);
	ASSERT_EQ(0, held.err);
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	ASSERT_EQ(0, kt_to_slot(self->fd, 7, h, &n));
	EXPECT_EQ(4, n);

	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_EQ(before.out_free_pages, after.out_free_pages);
	EXPECT_EQ(before.out_row_pages - 4, after.out_row_pages);
	EXPECT_EQ(before.out_slot_pages + 4, after.out_slot_pages);
	EXPECT_EQ(before.out_held_rows - 1, after.out_held_rows);
	EXPECT_EQ(before.out_slot_rows + 1, after.out_slot_rows);
	EXPECT_EQ(before.out_free_rows, after.out_free_rows);
	EXPECT_EQ(before.out_client_rows - 1, after.out_client_rows);
	EXPECT_EQ(before.out_client_slots + 1, after.out_client_slots);
	EXPECT_EQ(before.out_client_pages, after.out_client_pages);
	kt_check_identities(_metadata, &self->pool, &after);

	/* The handle is dead. */
	EXPECT_EQ(ENOENT, kt_query(self->fd, h, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_grow(self->fd, h, 4 * pt));
	EXPECT_EQ(ENOENT, kt_commit1(self->fd, h, 3 * pt));
	EXPECT_EQ(ENOENT, kt_trim1(self->fd, h, &n));
	EXPECT_EQ(ENOENT, kt_release1(self->fd, h, &n));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 8, h, &n));

	/* The slot shows the same row, lengths and pages. */
	kt_snap_slot(self->fd, 7, &parked);
	ASSERT_EQ(0, parked.err);
	EXPECT_EQ(KVPOOL_ROW_SLOT, parked.state);
	EXPECT_EQ(h.req_pool_idx, parked.idx);
	EXPECT_STREQ("", same_row(&held, &parked));

	/* Nothing of the failed calls changed anything. */
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_STREQ("", kt_stats_diff(&after, &before, KT_ST_USAGE));
}

TEST_F(slots, to_slot_duplicate_session)
{
	static struct kt_row_snap a0, b0, a1, b1;
	struct kvpool_stats before, after;
	struct kvpool_handle a, b;
	__u32 n;

	a = kt_new_row(_metadata, self->fd, 2 * self->pt, 0);
	b = kt_new_row(_metadata, self->fd, 3 * self->pt, self->pt);
	ASSERT_EQ(0, kt_to_slot(self->fd, 99, a, &n));
	kt_snap_slot(self->fd, 99, &a0);
	kt_snap_row(self->fd, b, &b0);
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	EXPECT_EQ(EEXIST, kt_to_slot(self->fd, 99, b, &n));

	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
	kt_snap_slot(self->fd, 99, &a1);
	kt_snap_row(self->fd, b, &b1);
	EXPECT_STREQ("", kt_row_diff(&a0, &a1));
	EXPECT_STREQ("", kt_row_diff(&b0, &b1));
	EXPECT_EQ(KVPOOL_ROW_HELD, b1.state);
}

TEST_F(slots, from_slot_basic)
{
	const __u32 pt = self->pt;
	static struct kt_row_snap held, back;
	struct kvpool_stats before, mid, after;
	struct kvpool_row_query q;
	struct kvpool_handle h, nh = { 0xdead, 0xbeef };
	__u32 n = ~0u;

	h = kt_new_row(_metadata, self->fd, 5 * pt + 2, 2 * pt + 1);
	kt_snap_row(self->fd, h, &held);
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	ASSERT_EQ(0, kt_to_slot(self->fd, 1234, h, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &mid));

	ASSERT_EQ(0, kt_from_slot(self->fd, 1234, &nh, &n));
	EXPECT_EQ(NP(5 * pt + 2), n);
	EXPECT_EQ(h.req_pool_idx, nh.req_pool_idx);
	EXPECT_EQ(h.generation + 1, nh.generation);

	kt_snap_row(self->fd, nh, &back);
	ASSERT_EQ(0, back.err);
	EXPECT_EQ(KVPOOL_ROW_HELD, back.state);
	EXPECT_STREQ("", kt_row_diff(&held, &back));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));

	/* The slot is gone. */
	EXPECT_EQ(ENOENT, kt_from_slot(self->fd, 1234, &nh, &n));
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd, 1234, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_slot_release(self->fd, 1234, &n));
	/* The old handle names our row under an older generation. */
	EXPECT_EQ(ESTALE, kt_query(self->fd, h, NULL, 0, &q));
	EXPECT_EQ(ESTALE, kt_release1(self->fd, h, &n));

	/* The new handle is a normal row. */
	ASSERT_EQ(0, kt_grow(self->fd, nh, 8 * pt));
	ASSERT_EQ(0, kt_commit1(self->fd, nh, 8 * pt));
	ASSERT_EQ(0, kt_release1(self->fd, nh, &n));
	EXPECT_EQ(8, n);
	(void)mid;
}

/* Each take of the row bumps the generation by one. */
TEST_F(slots, generations)
{
	struct kvpool_handle h, nh;
	__u32 g;
	int i;

	h = kt_new_row(_metadata, self->fd, self->pt, 0);
	g = h.generation;
	for (i = 1; i <= 5; i++) {
		ASSERT_EQ(0, kt_to_slot(self->fd, 5, h, NULL));
		ASSERT_EQ(0, kt_from_slot(self->fd, 5, &nh, NULL));
		EXPECT_EQ(h.req_pool_idx, nh.req_pool_idx);
		EXPECT_EQ(g + i, nh.generation);
		h = nh;
	}
}

TEST_F(slots, unknown_session)
{
	struct kvpool_stats before, after;
	struct kvpool_row_query q;
	struct kvpool_handle h, nh = { 0, 0 };
	__u32 n;

	h = kt_new_row(_metadata, self->fd, 2 * self->pt, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd, 1, h, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(ENOENT, kt_from_slot(self->fd, 2, &nh, &n));
	EXPECT_EQ(ENOENT, kt_from_slot(self->fd, 1ull << 32 | 1, &nh, &n));
	EXPECT_EQ(ENOENT, kt_slot_release(self->fd, 0, &n));
	EXPECT_EQ(ENOENT, kt_slot_release(self->fd, ~0ull, &n));
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd, 3, NULL, 0, &q));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
}

TEST_F(slots, slot_release)
{
	const __u32 pt = self->pt;
	struct kvpool_stats before, after;
	struct kvpool_row_query q;
	struct kvpool_handle h, nh;
	__u32 n = ~0u;

	h = kt_new_row(_metadata, self->fd, 3 * pt + 1, pt);
	ASSERT_EQ(0, kt_to_slot(self->fd, 77, h, NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	ASSERT_EQ(0, kt_slot_release(self->fd, 77, &n));
	EXPECT_EQ(4, n);
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_EQ(before.out_free_pages + 4, after.out_free_pages);
	EXPECT_EQ(before.out_slot_pages - 4, after.out_slot_pages);
	EXPECT_EQ(before.out_slot_rows - 1, after.out_slot_rows);
	EXPECT_EQ(before.out_free_rows + 1, after.out_free_rows);
	EXPECT_EQ(before.out_client_slots - 1, after.out_client_slots);
	EXPECT_EQ(before.out_client_pages - 4, after.out_client_pages);
	kt_check_identities(_metadata, &self->pool, &after);

	EXPECT_EQ(ENOENT, kt_slot_release(self->fd, 77, &n));
	EXPECT_EQ(ENOENT, kt_from_slot(self->fd, 77, &nh, &n));
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd, 77, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_query(self->fd, h, NULL, 0, &q));
	/* The session id is free to use again. */
	h = kt_new_row(_metadata, self->fd, 1, 0);
	EXPECT_EQ(0, kt_to_slot(self->fd, 77, h, NULL));
}

/* SLOT_RELEASE: handle is unused and must be 0. */
TEST_F(slots, slot_release_handle_nonzero)
{
	static struct kt_row_snap a, b;
	struct kvpool_slot s = { .size = sizeof(s), .session_id = 3 };
	struct kvpool_handle h;

	h = kt_new_row(_metadata, self->fd, 2 * self->pt, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd, 3, h, NULL));
	kt_snap_slot(self->fd, 3, &a);
	s.handle = h;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_SLOT_RELEASE, &s));
	s.handle.req_pool_idx = 0;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_SLOT_RELEASE, &s));
	s.handle = (struct kvpool_handle){ 1, 0 };
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_SLOT_RELEASE, &s));
	kt_snap_slot(self->fd, 3, &b);
	EXPECT_STREQ("", kt_row_diff(&a, &b));
}

/* Session ids are per client: another client sees none of mine. */
TEST_F(slots, other_client)
{
	static struct kt_row_snap a0, a1, b0;
	struct kvpool_stats before, after;
	struct kvpool_row_query q;
	struct kvpool_handle a, b, nh = { 0, 0 };
	__u32 n;

	a = kt_new_row(_metadata, self->fd, 2 * self->pt, 1);
	ASSERT_EQ(0, kt_to_slot(self->fd, 500, a, NULL));
	kt_snap_slot(self->fd, 500, &a0);
	ASSERT_EQ(0, kt_stats(self->fd, &before));

	EXPECT_EQ(ENOENT, kt_from_slot(self->fd2, 500, &nh, &n));
	EXPECT_EQ(ENOENT, kt_slot_release(self->fd2, 500, &n));
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd2, 500, self->pages, 8, &q));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));

	/* The other client may use the same id for a slot of its own. */
	b = kt_new_row(_metadata, self->fd2, 5 * self->pt, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd2, 500, b, &n));
	EXPECT_EQ(5, n);
	kt_snap_slot(self->fd2, 500, &b0);
	ASSERT_EQ(0, b0.err);
	EXPECT_EQ(b.req_pool_idx, b0.idx);
	kt_snap_slot(self->fd, 500, &a1);
	EXPECT_STREQ("", kt_row_diff(&a0, &a1));

	ASSERT_EQ(0, kt_from_slot(self->fd2, 500, &nh, &n));
	EXPECT_EQ(b.req_pool_idx, nh.req_pool_idx);
	EXPECT_EQ(5, n);
	ASSERT_EQ(0, kt_from_slot(self->fd, 500, &nh, &n));
	EXPECT_EQ(a.req_pool_idx, nh.req_pool_idx);
	EXPECT_EQ(2, n);
}

/* Ids are 64 bits: ids that share their low (or high) half are distinct. */
TEST_F(slots, session_id_64bit)
{
	const __u64 ids[] = {
		0, 1, 1ull << 32, (1ull << 32) | 1, ~0ull, 0xffffffffull,
		0x8000000000000000ull,
	};
	struct kvpool_handle h[ARRAY_SIZE(ids)], nh;
	struct kvpool_row_query q;
	unsigned int i;
	__u32 n;

	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		h[i] = kt_new_row(_metadata, self->fd, i + 1, 0);
		ASSERT_EQ(0, kt_to_slot(self->fd, ids[i], h[i], &n))
			TH_LOG("session %#llx", (unsigned long long)ids[i]);
	}
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		ASSERT_EQ(0, kt_query_slot(self->fd, ids[i], NULL, 0, &q));
		EXPECT_EQ(h[i].req_pool_idx, q.out_req_pool_idx)
			TH_LOG("session %#llx", (unsigned long long)ids[i]);
		EXPECT_EQ(i + 1, q.out_allocated_len);
		EXPECT_EQ(KVPOOL_ROW_SLOT, q.out_state);
	}
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		ASSERT_EQ(0, kt_from_slot(self->fd, ids[i], &nh, &n));
		EXPECT_EQ(h[i].req_pool_idx, nh.req_pool_idx);
	}
}

TEST_F(slots, to_slot_bad_handles)
{
	struct kvpool_handle mine, foreign, released, parked, stale, nh;
	struct kvpool_stats before, after;
	struct kvpool_row_query q;
	__u32 n;

	mine = kt_new_row(_metadata, self->fd, 1, 0);
	foreign = kt_new_row(_metadata, self->fd2, 1, 0);
	parked = kt_new_row(_metadata, self->fd, 1, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd, 1, parked, NULL));
	stale = kt_new_row(_metadata, self->fd, 1, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd, 2, stale, NULL));
	ASSERT_EQ(0, kt_from_slot(self->fd, 2, &nh, NULL));
	/* Released last: a free row, nobody's. */
	released = kt_new_row(_metadata, self->fd, 1, 0);
	ASSERT_EQ(0, kt_release1(self->fd, released, NULL));

	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 10, foreign, &n));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 10, released, &n));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 10, parked, &n));
	EXPECT_EQ(ESTALE, kt_to_slot(self->fd, 10, stale, &n));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 10,
				     (struct kvpool_handle){ NR_ROWS, 1 }, &n));
	EXPECT_EQ(ENOENT, kt_to_slot(self->fd, 10,
				     (struct kvpool_handle){ 0, 1 }, &n));
	/* A taken session id and a bad handle: either error, but no slot. */
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
	EXPECT_EQ(ENOENT, kt_query_slot(self->fd, 10, NULL, 0, &q));
	(void)mine;
}

TEST_F(slots, empty_row)
{
	struct kvpool_row_query q;
	struct kvpool_handle h, nh;
	__u32 n = ~0u;

	h = kt_new_row(_metadata, self->fd, 0, 0);
	ASSERT_EQ(0, kt_to_slot(self->fd, 4, h, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_query_slot(self->fd, 4, NULL, 0, &q));
	EXPECT_EQ(0, q.out_nr_pages);
	EXPECT_EQ(KVPOOL_ROW_SLOT, q.out_state);
	ASSERT_EQ(0, kt_from_slot(self->fd, 4, &nh, &n));
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, kt_query(self->fd, nh, NULL, 0, &q));
	EXPECT_EQ(0, q.out_allocated_len);
	EXPECT_EQ(KVPOOL_ROW_HELD, q.out_state);
}

/*
 * While a slot holds pages nobody else gets them: fill the pool around a
 * parked row and check the ids are disjoint; the slot's pages come back
 * unchanged.
 */
TEST_F(slots, pages_never_move)
{
	static struct kt_row_snap before, after, other;
	static unsigned char seen[NR_PAGES];
	struct kvpool_handle h, filler, nh;
	struct kvpool_stats st;
	__u32 i;

	h = kt_new_row(_metadata, self->fd, 10 * self->pt, 3);
	kt_snap_row(self->fd, h, &before);
	ASSERT_EQ(0, kt_to_slot(self->fd, 8, h, NULL));

	ASSERT_EQ(0, kt_stats(self->fd2, &st));
	filler = kt_new_row(_metadata, self->fd2, st.out_free_pages * self->pt, 0);
	kt_snap_row(self->fd2, filler, &other);
	ASSERT_EQ(0, other.err);
	ASSERT_EQ(st.out_free_pages, other.nr_pages);
	EXPECT_STREQ("", kt_check_ids(&self->pool, other.pages, other.nr_pages,
				      seen));
	EXPECT_STREQ("", kt_check_ids(&self->pool, before.pages,
				      before.nr_pages, seen))
		TH_LOG("a parked page was handed out again");
	for (i = 1; i < NR_PAGES; i++)
		EXPECT_EQ(1, seen[i]) TH_LOG("page %u is nobody's", i);

	ASSERT_EQ(0, kt_from_slot(self->fd, 8, &nh, NULL));
	kt_snap_row(self->fd, nh, &after);
	EXPECT_STREQ("", kt_row_diff(&before, &after));
}

/* Several rows parked and restored, mixed with row ops, verify clean. */
TEST_F(slots, round_trip_many)
{
	const __u32 pt = self->pt;
	static struct kt_row_snap before[8], after[8];
	struct kvpool_handle h[8], nh[8];
	struct kvpool_batch b;
	__u32 i, n;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 8, h, NULL));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, kt_grow(self->fd, h[i], i * pt + i + 1));
		ASSERT_EQ(0, kt_commit1(self->fd, h[i], i + 1));
		kt_snap_row(self->fd, h[i], &before[i]);
		ASSERT_EQ(0, kt_to_slot(self->fd, 1000 + i, h[i], &n));
		EXPECT_EQ(before[i].nr_pages, n);
	}
	kt_expect_verify(_metadata, &self->pool, self->fd);
	for (i = 0; i < 8; i++) {
		__u32 j = 7 - i;

		ASSERT_EQ(0, kt_from_slot(self->fd, 1000 + j, &nh[j], &n));
		kt_snap_row(self->fd, nh[j], &after[j]);
		EXPECT_STREQ("", kt_row_diff(&before[j], &after[j]))
			TH_LOG("row %u", j);
	}
	kt_expect_verify(_metadata, &self->pool, self->fd);
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_TRIM, 0, nh, 8, &b));
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, 0, nh, 8, &b));
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 2);
}

/* Closing a client frees its slots with their pages. */
TEST_F(slots, close_frees_slots)
{
	struct kvpool_handle h[3];
	int fd3;
	__u32 i;

	fd3 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_row_alloc(fd3, 3, h, NULL));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kt_grow(fd3, h[i], (i + 2) * self->pt));
		if (i)
			ASSERT_EQ(0, kt_to_slot(fd3, i, h[i], NULL));
	}
	kt_pool_close(&self->pool, fd3);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 2);
}

/*
 * FROM_SLOT ignores what the caller left in .handle (it only writes it):
 * the struct TO_SLOT took, still holding the parked row's old handle, can
 * be passed again as is; so can any junk.
 */
TEST_F(slots, from_slot_reuses_to_slot_struct)
{
	const __u32 pt = self->pt;
	static struct kt_row_snap held, back;
	struct kvpool_stats before, after;
	struct kvpool_slot s = { .size = sizeof(s), .session_id = 31 };
	struct kvpool_handle h;
	int i;

	h = kt_new_row(_metadata, self->fd, 3 * pt + 1, pt);
	kt_snap_row(self->fd, h, &held);
	ASSERT_EQ(0, kt_stats(self->fd, &before));
	s.handle = h;
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_TO_SLOT, &s));
	EXPECT_EQ(4, s.out_nr_pages);
	/* The struct as TO_SLOT left it: handle is the old one. */
	EXPECT_EQ(h.req_pool_idx, s.handle.req_pool_idx);
	EXPECT_EQ(h.generation, s.handle.generation);
	s.out_nr_pages = 0xdeadbeef;
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_FROM_SLOT, &s));
	EXPECT_EQ(4, s.out_nr_pages);
	EXPECT_EQ(h.req_pool_idx, s.handle.req_pool_idx);
	EXPECT_EQ(h.generation + 1, s.handle.generation);
	kt_snap_row(self->fd, s.handle, &back);
	ASSERT_EQ(0, back.err);
	EXPECT_STREQ("", kt_row_diff(&held, &back));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));

	/* Junk, another client's row, row 0: all ignored. */
	for (i = 0; i < 3; i++) {
		static const struct kvpool_handle junk[] = {
			{ 0xdeadbeef, 0xfeedface }, { 0, 0 }, { 0, ~0u },
		};

		h = s.handle;
		ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_TO_SLOT, &s));
		s.handle = junk[i];
		ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_FROM_SLOT, &s))
			TH_LOG("handle {%#x, %#x}", junk[i].req_pool_idx,
			       junk[i].generation);
		EXPECT_EQ(h.req_pool_idx, s.handle.req_pool_idx);
		EXPECT_EQ(h.generation + 1, s.handle.generation);
	}
	kt_snap_row(self->fd, s.handle, &back);
	EXPECT_STREQ("", kt_row_diff(&held, &back));
}

/*
 * FROM_SLOT writes its struct back before it takes effect: with the
 * struct read-only (a page filled, then mprotect PROT_READ) it fails with
 * EFAULT and the slot is still there, untouched; the same struct from a
 * writable copy then succeeds.
 */
TEST_F(slots, from_slot_readonly_struct)
{
	const __u32 pt = self->pt;
	static struct kt_row_snap held, parked0, parked1, back;
	struct kvpool_stats before, mid, after;
	struct kvpool_slot *ro, copy;
	struct kvpool_handle h;
	__u32 n;

	h = kt_new_row(_metadata, self->fd, 2 * pt + 3, pt);
	kt_snap_row(self->fd, h, &held);
	ASSERT_EQ(0, kt_to_slot(self->fd, 0x5107, h, &n));
	kt_snap_slot(self->fd, 0x5107, &parked0);
	ASSERT_EQ(0, parked0.err);

	ro = mmap(NULL, KT_PAGE_SIZE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0, sizeof(*ro));
	ro->size = sizeof(*ro);
	ro->session_id = 0x5107;
	ro->out_nr_pages = 0xdeadbeef;
	ASSERT_EQ(0, mprotect(ro, KT_PAGE_SIZE, PROT_READ));

	ASSERT_EQ(0, kt_stats(self->fd, &before));
	EXPECT_EQ(EFAULT, kt_ioctl(self->fd, KVPOOL_FROM_SLOT, ro));
	EXPECT_EQ(EFAULT, kt_ioctl(self->fd, KVPOOL_FROM_SLOT, ro));
	ASSERT_EQ(0, kt_stats(self->fd, &mid));
	EXPECT_STREQ("", kt_stats_diff(&before, &mid, KT_ST_USAGE));
	EXPECT_EQ(0xdeadbeef, ro->out_nr_pages);
	kt_snap_slot(self->fd, 0x5107, &parked1);
	ASSERT_EQ(0, parked1.err) TH_LOG("the slot went on EFAULT");
	EXPECT_EQ(KVPOOL_ROW_SLOT, parked1.state);
	EXPECT_STREQ("", kt_row_diff(&parked0, &parked1));
	/* The old handle stays dead: the row did not come back. */
	EXPECT_EQ(ENOENT, kt_release1(self->fd, h, &n));

	memcpy(&copy, ro, sizeof(copy));
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_FROM_SLOT, &copy));
	EXPECT_EQ(NP(2 * pt + 3), copy.out_nr_pages);
	EXPECT_EQ(h.req_pool_idx, copy.handle.req_pool_idx);
	/* One take of the row: the failed calls bumped nothing. */
	EXPECT_EQ(h.generation + 1, copy.handle.generation);
	kt_snap_row(self->fd, copy.handle, &back);
	ASSERT_EQ(0, back.err);
	EXPECT_STREQ("", kt_row_diff(&held, &back));
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_EQ(before.out_slot_rows - 1, after.out_slot_rows);
	EXPECT_EQ(before.out_held_rows + 1, after.out_held_rows);
	EXPECT_EQ(before.out_client_slots - 1, after.out_client_slots);
	EXPECT_EQ(before.out_free_pages, after.out_free_pages);
	munmap(ro, KT_PAGE_SIZE);
}

TEST_HARNESS_MAIN
