// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of the kvpool core (driver/core.mk's sources) in userspace, built
 * with AddressSanitizer and UndefinedBehaviorSanitizer. The very same
 * source that goes into kvpool.ko is compiled here against
 * kvp_os_user.h, which counts allocations and fails the Nth on request.
 *
 * Output is TAP; the last line is "N passed, N failed". Exit status is
 * non-zero if any test failed. Tests assert with the kselftest harness's
 * EXPECT_*() from selftests/lib/kvp_expect.h, whose failure count run()
 * reads and resets for each test.
 */
#include <stdarg.h>
#include <unistd.h>
#include <sys/wait.h>

#include "kvp_core.h"

/* The TAP diagnostics, failed expectations included, all on stdout. */
#define TH_LOG_STREAM stdout
#include "kvp_expect.h"

static int nr_pass, nr_fail, nr_test;

static u32 verify(struct kvp_pool *pool);

/* A pool under test: the lock is held for the test's whole life. */
struct tpool {
	struct kvp_pool pool;
	struct kvp_client c[3];
};

static int tpool_init(struct tpool *t, u32 flags, u32 pages, u32 pt,
		      u32 rows, u32 rtok)
{
	int ret = kvp_pool_init(&t->pool, 7, flags, pages, pt, rows, rtok);
	int i;

	if (ret)
		return ret;
	mutex_lock(&t->pool.lock);
	for (i = 0; i < 3; i++) {
		ret = kvp_client_attach_locked(&t->pool, &t->c[i]);
		if (ret) {
			while (i--)
				kvp_client_detach_locked(&t->c[i]);
			mutex_unlock(&t->pool.lock);
			kvp_pool_fini(&t->pool);
			return ret;
		}
	}
	return 0;
}

static void tpool_fini(struct tpool *t)
{
	int i;

	for (i = 0; i < 3; i++)
		kvp_client_detach_locked(&t->c[i]);
	EXPECT_EQ(0, t->pool.nr_clients);
	EXPECT_EQ(t->pool.nr_pages - t->pool.reserved_pages,
		  t->pool.free_pages);
	EXPECT_EQ(t->pool.nr_rows - t->pool.reserved_rows, t->pool.free_rows);
	EXPECT_EQ(0, verify(&t->pool));
	mutex_unlock(&t->pool.lock);
	kvp_pool_fini(&t->pool);
}

/* Violations found, or ~0U if verify could not run. */
static u32 verify(struct kvp_pool *pool)
{
	u32 bad;

	return kvp_verify_locked(pool, &bad) ? ~0U : bad;
}

static struct kvpool_stats stats(struct kvp_client *c)
{
	struct kvpool_stats st;

	memset(&st, 0, sizeof(st));
	kvp_stats_locked(c, &st);
	return st;
}

static bool stats_eq(struct kvp_client *c, const struct kvpool_stats *a)
{
	struct kvpool_stats b = stats(c);

	return !memcmp(a, &b, sizeof(b));
}

static int alloc1(struct kvp_client *c, struct kvpool_handle *h)
{
	u32 sh;

	return kvp_row_alloc_locked(c, h, 1, &sh);
}

static int extend1(struct kvp_client *c, struct kvpool_handle h, u32 len,
		   u32 *nr_new)
{
	struct kvpool_extend_entry e = { .handle = h, .new_len = len };
	struct kvp_extend_result res;
	int ret;

	ret = kvp_extend_locked(c, &e, 1, ~0U, &res);
	kvfree(res.pages);
	if (nr_new)
		*nr_new = e.out_nr_new;
	return ret;
}

static int commit1(struct kvp_client *c, struct kvpool_handle h, u32 len)
{
	struct kvpool_len_entry e = { .handle = h, .len = len };
	u32 idx;

	return kvp_commit_locked(c, &e, 1, &idx);
}

static struct kvpool_row_query query(struct kvp_client *c,
				     struct kvpool_handle h, u32 **pages)
{
	struct kvpool_row_query q;

	memset(&q, 0, sizeof(q));
	q.handle = h;
	q.pages_cap = ~0U;
	q.out_state = kvp_row_query_locked(c, &q, pages) ? 0 : q.out_state;
	return q;
}

static bool clean(struct tpool *t)
{
	return verify(&t->pool) == 0;
}

/* Verify ran and found something. */
static bool broken(struct tpool *t)
{
	u32 bad = verify(&t->pool);

	return bad && bad != ~0U;
}

/* ---- tests ---- */

static void test_geometry(void)
{
	struct tpool t;

	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 0, 1, 1, 1));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, KVP_MAX_PAGES + 1, 1, 1, 1));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 1, 0, 1, 1));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 1, KVP_MAX_PAGE_TOKENS + 1, 1, 1));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 1, 1, 0, 1));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 1, 1, KVP_MAX_ROWS + 1, 1));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 1, 1, 1, 0));
	EXPECT_EQ(-EINVAL, kvp_geom_check(0, 1, 1, 1, KVP_MAX_ROW_TOKENS + 1));
	EXPECT_EQ(-EINVAL,
		  kvp_geom_check(KVPOOL_CREATE_RESERVE_ZERO, 1, 1, 2, 1));
	EXPECT_EQ(-EINVAL,
		  kvp_geom_check(KVPOOL_CREATE_RESERVE_ZERO, 2, 1, 1, 1));
	EXPECT_EQ(-EOPNOTSUPP, kvp_geom_check(2, 2, 1, 2, 1));
	EXPECT_EQ(0, kvp_geom_check(KVPOOL_CREATE_RESERVE_ZERO, 2, 1, 2, 1));
	EXPECT_EQ(0, kvp_geom_check(0, KVP_MAX_PAGES, KVP_MAX_PAGE_TOKENS,
				    KVP_MAX_ROWS, KVP_MAX_ROW_TOKENS));

	EXPECT_EQ(0, tpool_init(&t, 0, 10, 1, 4, 100));
	EXPECT_EQ(4, t.pool.max_batch);
	EXPECT_EQ(10, t.pool.free_pages);
	EXPECT_EQ(0, t.pool.reserved_pages);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_reserve_zero(void)
{
	struct kvpool_handle h[3];
	struct kvpool_stats st;
	struct tpool t;
	u32 *pages, i, sh;

	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_RESERVE_ZERO, 4, 1, 4, 100));
	st = stats(&t.c[0]);
	EXPECT_EQ(3, st.out_free_pages);
	EXPECT_EQ(1, st.out_reserved_pages);
	EXPECT_EQ(3, st.out_free_rows);
	EXPECT_EQ(1, st.out_reserved_rows);
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 3, &sh));
	for (i = 0; i < 3; i++) {
		EXPECT_TRUE(h[i].req_pool_idx != 0);
		EXPECT_TRUE(h[i].generation != 0);
	}
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 3, NULL));
	query(&t.c[0], h[0], &pages);
	for (i = 0; i < 3; i++)
		EXPECT_TRUE(pages[i] != 0);
	kvfree(pages);
	EXPECT_EQ(-ENOSPC, kvp_row_alloc_locked(&t.c[1], h, 1, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(-ENOSPC, extend1(&t.c[0], h[1], 1, NULL));
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_row_alloc(void)
{
	struct kvpool_handle h[9];
	struct kvpool_stats st;
	struct tpool t;
	u32 sh, i, j;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 1, 8, 100));
	EXPECT_EQ(-EINVAL, kvp_row_alloc_locked(&t.c[0], h, 0, &sh));
	EXPECT_EQ(-EINVAL, kvp_row_alloc_locked(&t.c[0], h, 9, &sh));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 5, &sh));
	for (i = 0; i < 5; i++)
		for (j = i + 1; j < 5; j++)
			EXPECT_TRUE(h[i].req_pool_idx != h[j].req_pool_idx);
	st = stats(&t.c[1]);
	EXPECT_EQ(-ENOSPC, kvp_row_alloc_locked(&t.c[1], h + 5, 4, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_TRUE(stats_eq(&t.c[1], &st));
	st = stats(&t.c[0]);
	EXPECT_EQ(5, st.out_held_rows);
	EXPECT_EQ(5, st.out_client_rows);
	EXPECT_EQ(0, stats(&t.c[1]).out_client_rows);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_extend(u32 pt)
{
	struct kvpool_extend_entry e[3];
	struct kvp_extend_result res;
	struct kvpool_handle h[3], other;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct tpool t;
	u32 *pages, sh, n, i;

	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_RESERVE_ZERO, 33, pt, 8,
				64 * pt));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 3, &sh));
	EXPECT_EQ(0, alloc1(&t.c[1], &other));

	/* The partial last page is filled before whole pages are taken. */
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 1, &n));
	EXPECT_EQ(1, n);
	EXPECT_EQ(0, extend1(&t.c[0], h[0], pt, &n));
	EXPECT_EQ(0, n);
	EXPECT_EQ(0, extend1(&t.c[0], h[0], pt + 1, &n));
	EXPECT_EQ(1, n);
	EXPECT_EQ(0, extend1(&t.c[0], h[0], pt + 1, &n));
	EXPECT_EQ(0, n);

	/* A batch returns exactly the new ids, row by row. */
	memset(e, 0, sizeof(e));
	for (i = 0; i < 3; i++)
		e[i].handle = h[i];
	e[0].new_len = 3 * pt;		/* 2 -> 3 pages */
	e[1].new_len = 2 * pt + 1;	/* 0 -> 3 */
	e[2].new_len = 1;		/* 0 -> 1 */
	EXPECT_EQ(0, kvp_extend_locked(&t.c[0], e, 3, 5, &res));
	EXPECT_EQ(5, res.nr_pages);
	EXPECT_EQ(1, e[0].out_nr_new);
	EXPECT_EQ(3, e[1].out_nr_new);
	EXPECT_EQ(1, e[2].out_nr_new);
	q = query(&t.c[0], h[0], &pages);
	EXPECT_EQ(3, q.out_nr_pages);
	EXPECT_EQ(3 * pt, q.out_allocated_len);
	EXPECT_EQ(res.pages[0], pages[2]);
	kvfree(pages);
	q = query(&t.c[0], h[1], &pages);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(res.pages[1 + i], pages[i]);
	kvfree(pages);
	kvfree(res.pages);
	EXPECT_EQ(7, stats(&t.c[0]).out_client_pages);
	EXPECT_EQ(25, stats(&t.c[0]).out_free_pages);

	/* Each refusal names the entry and changes nothing. */
	st = stats(&t.c[0]);
	e[0].new_len = 3 * pt;
	e[1].new_len = 2 * pt;		/* shrink */
	EXPECT_EQ(-EINVAL, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(1, res.error_index);
	e[1].new_len = 65 * pt;		/* past row_tokens */
	EXPECT_EQ(-EINVAL, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(1, res.error_index);
	e[1].new_len = 3 * pt;
	e[2].handle = h[0];		/* the same row twice */
	EXPECT_EQ(-EINVAL, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(2, res.error_index);
	e[2].handle = other;		/* another client's row */
	EXPECT_EQ(-ENOENT, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(2, res.error_index);
	e[2].handle = h[2];
	e[2].handle.generation--;	/* stale: an earlier use of the row */
	EXPECT_EQ(-ESTALE, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(2, res.error_index);
	e[2].handle.generation += 2;	/* never issued: names nothing */
	EXPECT_EQ(-ENOENT, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(2, res.error_index);
	e[2].handle.req_pool_idx = 8;	/* out of range */
	EXPECT_EQ(-ENOENT, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	e[2].handle.req_pool_idx = 0;	/* reserved */
	EXPECT_EQ(-ENOENT, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	e[2].handle = h[2];
	e[2].new_len = 4 * pt;		/* 1 -> 4 pages: 3 new */
	EXPECT_EQ(-ENOBUFS, kvp_extend_locked(&t.c[0], e, 3, 2, &res));
	EXPECT_EQ(3, res.nr_pages);
	e[2].new_len = 30 * pt;		/* 29 new, 25 free */
	EXPECT_EQ(-ENOSPC, kvp_extend_locked(&t.c[0], e, 3, ~0U, &res));
	EXPECT_EQ(29 - 25, res.shortfall);
	EXPECT_EQ(-EINVAL, kvp_extend_locked(&t.c[0], e, 0, ~0U, &res));
	EXPECT_EQ(-EINVAL, kvp_extend_locked(&t.c[0], e, 9, ~0U, &res));
	EXPECT_TRUE(stats_eq(&t.c[0], &st));
	q = query(&t.c[0], h[2], NULL);
	EXPECT_EQ(1, q.out_allocated_len);
	EXPECT_TRUE(clean(&t));

	/* Exactly all free pages can be taken. */
	e[2].new_len = 26 * pt;
	EXPECT_EQ(0, kvp_extend_locked(&t.c[0], e + 2, 1, ~0U, &res));
	kvfree(res.pages);
	EXPECT_EQ(0, stats(&t.c[0]).out_free_pages);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_commit_trim(u32 pt)
{
	struct kvpool_len_entry le[2];
	struct kvpool_handle h[2];
	struct kvpool_row_query q;
	struct tpool t;
	u32 sh, idx, freed;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, pt, 4, 64 * pt));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 2, &sh));
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 10 * pt, NULL));
	EXPECT_EQ(0, extend1(&t.c[0], h[1], 4 * pt, NULL));

	EXPECT_EQ(-EINVAL, commit1(&t.c[0], h[0], 10 * pt + 1));
	EXPECT_EQ(0, commit1(&t.c[0], h[0], 6 * pt + (pt > 1)));
	EXPECT_EQ(-EINVAL, commit1(&t.c[0], h[0], 5 * pt));	/* backwards */
	memset(le, 0, sizeof(le));
	le[0].handle = h[1];
	le[0].len = 2 * pt;
	le[1].handle = h[0];
	le[1].len = 7 * pt;
	le[1].__reserved = 1;
	EXPECT_EQ(-EINVAL, kvp_commit_locked(&t.c[0], le, 2, &idx));
	EXPECT_EQ(1, idx);
	EXPECT_EQ(0, query(&t.c[0], h[1], NULL).out_committed_len);
	le[1].__reserved = 0;
	EXPECT_EQ(0, kvp_commit_locked(&t.c[0], le, 2, &idx));
	EXPECT_EQ(2 * pt, query(&t.c[0], h[1], NULL).out_committed_len);
	EXPECT_EQ(-EINVAL, commit1(&t.c[0], h[0], 6 * pt + (pt > 1)));
	EXPECT_EQ(0, commit1(&t.c[0], h[0], 7 * pt));	/* same: allowed */

	/* Trim keeps ceil(committed / pt) pages and shrinks allocated. */
	EXPECT_EQ(0, commit1(&t.c[0], h[0], 7 * pt + (pt > 1)));
	EXPECT_EQ(0, kvp_trim_locked(&t.c[0], h, 2, &freed, &idx));
	EXPECT_EQ((10 - 7 - (pt > 1)) + 2, freed);
	q = query(&t.c[0], h[0], NULL);
	EXPECT_EQ(7 * pt + (pt > 1), q.out_allocated_len);
	EXPECT_EQ(7 + (pt > 1), q.out_nr_pages);
	EXPECT_EQ(7 + (pt > 1) + 2, stats(&t.c[0]).out_client_pages);
	/* Trimming again frees nothing. */
	EXPECT_EQ(0, kvp_trim_locked(&t.c[0], h, 2, &freed, &idx));
	EXPECT_EQ(0, freed);
	/* The row grows again from where it was trimmed. */
	EXPECT_EQ(0, extend1(&t.c[0], h[1], 3 * pt, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_release(void)
{
	struct kvpool_handle h[3], again;
	struct kvpool_stats st;
	struct tpool t;
	u32 sh, idx, freed;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 4, 4, 1000));
	EXPECT_EQ(0, alloc1(&t.c[0], h));
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 37, NULL));	/* 10 pages */
	EXPECT_EQ(0, commit1(&t.c[0], h[0], 30));
	st = stats(&t.c[0]);
	h[1] = h[0];
	EXPECT_EQ(-EINVAL, kvp_release_locked(&t.c[0], h, 2, 0, &freed, &idx));
	EXPECT_EQ(1, idx);
	EXPECT_TRUE(stats_eq(&t.c[0], &st));
	EXPECT_EQ(-ENOENT, kvp_release_locked(&t.c[1], h, 1, 0, &freed, &idx));
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], h, 1, 0, &freed, &idx));
	EXPECT_EQ(10, freed);
	EXPECT_EQ(64, stats(&t.c[0]).out_free_pages);
	EXPECT_EQ(0, stats(&t.c[0]).out_client_rows);
	/* Releasing twice is an error, not a no-op. */
	EXPECT_EQ(-ENOENT, kvp_release_locked(&t.c[0], h, 1, 0, &freed, &idx));
	EXPECT_EQ(0, idx);
	/* The row comes back zeroed, under a new generation. */
	EXPECT_EQ(0, alloc1(&t.c[0], &again));
	EXPECT_EQ(h[0].req_pool_idx, again.req_pool_idx);
	EXPECT_TRUE(again.generation != h[0].generation);
	EXPECT_EQ(0, query(&t.c[0], h[0], NULL).out_state);
	EXPECT_EQ(-ESTALE, extend1(&t.c[0], h[0], 40, NULL));
	EXPECT_EQ(0, query(&t.c[0], again, NULL).out_allocated_len);
	EXPECT_EQ(0, query(&t.c[0], again, NULL).out_committed_len);
	/* Generations never wrap to 0. */
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &again, 1, 0, &freed, &idx));
	t.pool.rows[again.req_pool_idx].gen = U32_MAX;
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], &again, 1, &sh));
	EXPECT_EQ(1, again.generation);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_slots(void)
{
	struct kvpool_handle h, back;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct tpool t;
	u32 *before, *after, n, i;

	EXPECT_EQ(0, tpool_init(&t, 0, 2048, 16, 200, 4096));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, extend1(&t.c[0], h, 100, NULL));	/* 7 pages */
	EXPECT_EQ(0, commit1(&t.c[0], h, 90));
	query(&t.c[0], h, &before);

	EXPECT_EQ(0, kvp_to_slot_locked(&t.c[0], &h, 0xabcdef0123ULL, &n));
	EXPECT_EQ(7, n);
	st = stats(&t.c[0]);
	EXPECT_EQ(7, st.out_slot_pages);
	EXPECT_EQ(0, st.out_row_pages);
	EXPECT_EQ(1, st.out_slot_rows);
	EXPECT_EQ(0, st.out_held_rows);
	EXPECT_EQ(1, st.out_client_slots);
	EXPECT_EQ(0, st.out_client_rows);
	EXPECT_EQ(7, st.out_client_pages);
	/* The request's handle is dead once the slot has the row. */
	EXPECT_EQ(0, query(&t.c[0], h, NULL).out_state);
	EXPECT_EQ(-ENOENT, extend1(&t.c[0], h, 120, NULL));
	EXPECT_EQ(-ENOENT, kvp_to_slot_locked(&t.c[0], &h, 5, &n));

	memset(&q, 0, sizeof(q));
	q.flags = KVPOOL_QUERY_BY_SLOT;
	q.session_id = 0xabcdef0123ULL;
	EXPECT_EQ(0, kvp_row_query_locked(&t.c[0], &q, NULL));
	EXPECT_EQ(KVPOOL_ROW_SLOT, q.out_state);
	EXPECT_EQ(90, q.out_committed_len);
	EXPECT_EQ(-ENOENT, kvp_row_query_locked(&t.c[1], &q, NULL));
	EXPECT_EQ(-ENOENT,
		  kvp_from_slot_locked(&t.c[1], 0xabcdef0123ULL, &back, &n));
	EXPECT_EQ(-ENOENT,
		  kvp_slot_release_locked(&t.c[1], 0xabcdef0123ULL, &n));

	/* Back into a new request: same row and pages, next generation. */
	EXPECT_EQ(0, kvp_from_slot_locked(&t.c[0], 0xabcdef0123ULL, &back, &n));
	EXPECT_EQ(7, n);
	EXPECT_EQ(h.req_pool_idx, back.req_pool_idx);
	EXPECT_EQ(h.generation + 1, back.generation);
	q = query(&t.c[0], back, &after);
	EXPECT_EQ(100, q.out_allocated_len);
	EXPECT_EQ(90, q.out_committed_len);
	for (i = 0; i < 7; i++)
		EXPECT_EQ(before[i], after[i]);
	kvfree(before);
	kvfree(after);
	EXPECT_EQ(-ENOENT,
		  kvp_from_slot_locked(&t.c[0], 0xabcdef0123ULL, &back, &n));

	/* Taken session ids are refused; many sessions share buckets. */
	EXPECT_EQ(0, kvp_to_slot_locked(&t.c[0], &back, 1, &n));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(-EEXIST, kvp_to_slot_locked(&t.c[0], &h, 1, &n));
	EXPECT_EQ(-ENOENT, kvp_to_slot_locked(&t.c[1], &h, 1, &n));
	EXPECT_EQ(0, kvp_to_slot_locked(&t.c[0], &h, 2, &n));
	for (i = 0; i < 150; i++) {
		EXPECT_EQ(0, alloc1(&t.c[0], &h));
		EXPECT_EQ(0, extend1(&t.c[0], h, i, NULL));
		EXPECT_EQ(0, kvp_to_slot_locked(&t.c[0], &h, (u64)i << 40, &n));
	}
	EXPECT_TRUE(clean(&t));
	for (i = 0; i < 150; i += 2)
		EXPECT_EQ(0,
			  kvp_slot_release_locked(&t.c[0], (u64)i << 40, &n));
	EXPECT_EQ(0, kvp_slot_release_locked(&t.c[0], 1, &n));
	EXPECT_EQ(7, n);
	EXPECT_EQ(-ENOENT, kvp_slot_release_locked(&t.c[0], 1, &n));
	EXPECT_EQ(76, stats(&t.c[0]).out_client_slots);
	EXPECT_TRUE(clean(&t));
	/* Closing the client frees the other slots. */
	tpool_fini(&t);
}

static void test_detach(void)
{
	struct kvpool_handle h[10];
	struct kvpool_stats st;
	struct tpool t;
	u32 sh, n, i;

	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_RESERVE_ZERO, 1000, 16, 32,
				10000));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[i], h, 10, &sh));
		for (sh = 0; sh < 10; sh++)
			EXPECT_EQ(0,
				  extend1(&t.c[i], h[sh], 100 * sh + 1, NULL));
		EXPECT_EQ(0, kvp_to_slot_locked(&t.c[i], &h[3], 33, &n));
	}
	st = stats(&t.c[0]);
	kvp_client_detach_locked(&t.c[1]);
	EXPECT_EQ(st.out_free_pages + st.out_client_pages,
		  stats(&t.c[0]).out_free_pages);
	EXPECT_EQ(2, stats(&t.c[0]).out_nr_clients);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, kvp_client_attach_locked(&t.pool, &t.c[1]));
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

/*
 * A client detached into a quarantine: the pages of its rows and slots
 * are held back (no one's, not free, not its tenant's), its prefix cache
 * is freed, the pool still adds up; only kvp_quarantine_end_locked()
 * frees them, and then they can be had again.
 */
static void test_detach_hold(void)
{
	struct kvpool_extend_entry e;
	struct kvp_extend_result res;
	struct kvp_quarantine q = { 0 };
	struct kvpool_handle h[3];
	struct kvpool_stats st;
	struct tpool t;
	u32 sh, n, idx, freed, held;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 16, 8, 1024));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[1], h, 3, &sh));
	EXPECT_EQ(0, extend1(&t.c[1], h[0], 100, NULL));	/* 7 pages */
	EXPECT_EQ(0, extend1(&t.c[1], h[1], 48, NULL));	/* 3 pages */
	EXPECT_EQ(0, extend1(&t.c[1], h[2], 40, NULL));	/* 3 pages */
	EXPECT_EQ(0, commit1(&t.c[1], h[2], 40));
	EXPECT_EQ(0, kvp_release_locked(&t.c[1], &h[2], 1,
					KVPOOL_RELEASE_DONATE, &freed, &idx));
	EXPECT_EQ(0, kvp_to_slot_locked(&t.c[1], &h[1], 5, &n));
	st = stats(&t.c[1]);
	EXPECT_EQ(2, st.out_cache_evictable);
	held = st.out_client_pages;
	EXPECT_EQ(10, held);

	kvp_client_detach_quarantine_locked(&t.c[1], &q);
	EXPECT_EQ(held, q.nr);
	st = stats(&t.c[0]);
	EXPECT_EQ(held, st.out_quarantine_pages);
	/* The cache pages are freed, no tenant holds the rest, rows go back. */
	EXPECT_EQ(64 - held, st.out_free_pages);
	EXPECT_EQ(0, st.out_cache_evictable);
	EXPECT_EQ(0, st.out_row_pages + st.out_slot_pages);
	EXPECT_EQ(0, st.out_tenant_pages);
	EXPECT_EQ(8, st.out_free_rows);
	EXPECT_TRUE(clean(&t));

	/* All the free pages can be had, and not one more. */
	EXPECT_EQ(0, alloc1(&t.c[0], &h[0]));
	memset(&e, 0, sizeof(e));
	e.handle = h[0];
	e.new_len = 16 * (64 - held + 1);
	EXPECT_EQ(-ENOSPC, kvp_extend_locked(&t.c[0], &e, 1, ~0U, &res));
	EXPECT_EQ(1, res.shortfall);
	kvfree(res.pages);
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 16 * (64 - held), NULL));
	EXPECT_TRUE(clean(&t));

	/* A broken count is caught. */
	t.pool.quarantine_pages++;
	EXPECT_TRUE(broken(&t));
	t.pool.quarantine_pages--;

	EXPECT_EQ(0, kvp_release_locked(&t.c[0], h, 1, 0, &freed, &idx));
	EXPECT_EQ(held, kvp_quarantine_end_locked(&t.pool, &q));
	EXPECT_EQ(0, q.nr);
	EXPECT_EQ(0, kvp_quarantine_end_locked(&t.pool, &q));
	st = stats(&t.c[0]);
	EXPECT_EQ(0, st.out_quarantine_pages);
	EXPECT_EQ(64, st.out_free_pages);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, alloc1(&t.c[0], &h[0]));
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 16 * 64, NULL));
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], h, 1, 0, &freed, &idx));
	EXPECT_EQ(0, kvp_client_attach_locked(&t.pool, &t.c[1]));
	tpool_fini(&t);
}

static void test_mark_wrap(void)
{
	struct kvpool_handle h[2];
	struct tpool t;
	u32 sh, idx, freed;

	EXPECT_EQ(0, tpool_init(&t, 0, 8, 1, 4, 8));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 2, &sh));
	t.pool.mark_epoch = U32_MAX - 1;
	EXPECT_EQ(0, kvp_trim_locked(&t.c[0], h, 2, &freed, &idx));
	/* The epoch wraps here: stale marks must not look current. */
	EXPECT_EQ(0, kvp_trim_locked(&t.c[0], h, 2, &freed, &idx));
	EXPECT_EQ(0, kvp_trim_locked(&t.c[0], h, 2, &freed, &idx));
	EXPECT_TRUE(t.pool.mark_epoch != 0);
	tpool_fini(&t);
}

/*
 * The free map hands out the lowest free page whatever the order pages
 * were freed in: decode steps take consecutive ids, a row freed out of
 * order leaves holes that the next extend fills lowest first, and verify
 * notices a summary bit that lies. 5000 pages: three levels.
 */
static void test_free_map(void)
{
	enum { ROWS = 64, STEPS = 78, PAGES = 5000 };
	static bool freed[PAGES];
	struct kvpool_extend_entry e[ROWS];
	struct kvpool_handle h[ROWS], nh;
	struct kvp_extend_result res;
	struct tpool t;
	u32 i, j, sh, nr, want, *pg;

	memset(freed, 0, sizeof(freed));
	EXPECT_EQ(0, tpool_init(&t, 0, PAGES, 1, ROWS + 1, PAGES));
	EXPECT_EQ(3, t.pool.map_levels);
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, ROWS, &sh));
	for (j = 0; j < STEPS; j++) {
		for (i = 0; i < ROWS; i++)
			e[i] = (struct kvpool_extend_entry){ .handle = h[i],
							    .new_len = j + 1 };
		EXPECT_EQ(0, kvp_extend_locked(&t.c[0], e, ROWS, ~0U, &res));
		for (i = 0; i < ROWS; i++)
			EXPECT_EQ(j * ROWS + i, res.pages[i]);
		kvfree(res.pages);
	}
	EXPECT_TRUE(clean(&t));

	/* Free every third row, last first: holes all over the low pages. */
	for (i = ROWS; i-- > 0; ) {
		struct kvp_row *r = &t.pool.rows[h[i].req_pool_idx];

		if (i % 3)
			continue;
		for (j = 0; j < r->nr; j++)
			freed[r->pages[j]] = true;
		EXPECT_EQ(0, kvp_release_locked(&t.c[0], &h[i], 1, 0, &nr, &sh));
		EXPECT_EQ(STEPS, nr);
	}
	EXPECT_TRUE(clean(&t));
	for (j = STEPS * ROWS; j < PAGES; j++)
		freed[j] = true;

	/* One new row takes 1000 pages: the lowest free ones, in order. */
	EXPECT_EQ(0, alloc1(&t.c[0], &nh));
	e[0] = (struct kvpool_extend_entry){ .handle = nh, .new_len = 1000 };
	EXPECT_EQ(0, kvp_extend_locked(&t.c[0], e, 1, ~0U, &res));
	pg = res.pages;
	for (i = 0, want = 0; i < 1000; i++, want++) {
		while (!freed[want])
			want++;
		if (pg[i] != want) {
			EXPECT_EQ(want, pg[i]);
			break;
		}
	}
	kvfree(res.pages);
	EXPECT_TRUE(clean(&t));

	/* A summary bit that says a full word has room, and one that hides. */
	t.pool.map_level[1][0] ^= 1;
	EXPECT_TRUE(broken(&t));
	t.pool.map_level[1][0] ^= 1;
	EXPECT_TRUE(clean(&t));
	t.pool.map_level[2][0] ^= 1ULL << 1;
	EXPECT_TRUE(broken(&t));
	t.pool.map_level[2][0] ^= 1ULL << 1;
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

/* Corrupt the pool in one way at a time; verify must name each. */
static void test_verify_catches(void)
{
	struct kvpool_handle h;
	struct tpool t;
	u32 save, id;

	kvp_user_verbose = false;
	EXPECT_EQ(0, tpool_init(&t, 0, 16, 1, 4, 100));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, extend1(&t.c[0], h, 4, NULL));
	EXPECT_TRUE(clean(&t));
	id = t.pool.rows[h.req_pool_idx].pages[1];

	/* a page owned by a row and on the free list */
	save = t.pool.pages[id].owner;
	t.pool.pages[id].owner = KVP_OWNER_FREE;
	EXPECT_TRUE(broken(&t));
	t.pool.pages[id].owner = save;
	EXPECT_TRUE(clean(&t));

	/* an owned page marked free in the map, and a free page not marked */
	t.pool.free_map[id / 64] ^= 1ULL << (id % 64);
	EXPECT_TRUE(broken(&t));
	t.pool.free_map[id / 64] ^= 1ULL << (id % 64);
	EXPECT_TRUE(clean(&t));
	t.pool.free_map[0] &= ~(1ULL << 15);
	EXPECT_TRUE(broken(&t));
	t.pool.free_map[0] |= 1ULL << 15;
	EXPECT_TRUE(clean(&t));

	/* a page mapped twice by one row */
	save = t.pool.rows[h.req_pool_idx].pages[2];
	t.pool.rows[h.req_pool_idx].pages[2] = id;
	EXPECT_TRUE(broken(&t));
	t.pool.rows[h.req_pool_idx].pages[2] = save;

	/* committed past allocated */
	t.pool.rows[h.req_pool_idx].committed = 5;
	EXPECT_TRUE(broken(&t));
	t.pool.rows[h.req_pool_idx].committed = 0;

	/* counters out of step */
	t.pool.free_pages++;
	EXPECT_TRUE(broken(&t));
	t.pool.free_pages--;
	t.c[0].nr_pages++;
	EXPECT_TRUE(broken(&t));
	t.c[0].nr_pages--;
	t.pool.held_rows++;
	EXPECT_TRUE(broken(&t));
	t.pool.held_rows--;

	/* a free row that is not zeroed */
	t.pool.rows[3 - (h.req_pool_idx == 3)].allocated = 1;
	EXPECT_TRUE(broken(&t));
	t.pool.rows[3 - (h.req_pool_idx == 3)].allocated = 0;

	/* a page whose owner is nonsense */
	save = t.pool.pages[id].owner;
	t.pool.pages[id].owner = 1000;
	EXPECT_TRUE(broken(&t));
	t.pool.pages[id].owner = save;

	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static int donate1(struct kvp_client *c, struct kvpool_handle h, u32 upto,
		   u32 *n)
{
	struct kvpool_len_entry e = { .handle = h, .len = upto };
	u32 idx, dummy;

	return kvp_donate_locked(c, &e, 1, n ? n : &dummy, &idx);
}

static int swa1(struct kvp_client *c, struct kvpool_handle h, u32 edge,
		u32 *n)
{
	struct kvpool_len_entry e = { .handle = h, .len = edge };
	u32 idx, dummy;

	return kvp_swa_free_locked(c, &e, 1, n ? n : &dummy, &idx);
}

static void test_prefix_cache(u32 pt)
{
	struct kvpool_handle a, b, other;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct tpool t;
	u32 *pages, cached[8], n, idx, freed;

	EXPECT_EQ(0, tpool_init(&t, 0, 128, pt, 8, 64 * pt));
	EXPECT_EQ(0, alloc1(&t.c[0], &a));
	EXPECT_EQ(0, alloc1(&t.c[1], &other));
	EXPECT_EQ(0, extend1(&t.c[0], a, 10 * pt, NULL));

	/* Donate what is committed, in whole pages; protected follows. */
	EXPECT_EQ(-EINVAL,
		  donate1(&t.c[0], a, 4 * pt, &n));	/* > committed */
	EXPECT_EQ(0, commit1(&t.c[0], a, 5 * pt + (pt > 1)));
	EXPECT_EQ(-EALREADY, donate1(&t.c[0], a, 0, &n));
	EXPECT_EQ(0, donate1(&t.c[0], a, 3 * pt + (pt > 1), &n));
	EXPECT_EQ(3, n);
	q = query(&t.c[0], a, &pages);
	EXPECT_EQ(3 * pt, q.out_protected_len);
	memcpy(cached, pages, 3 * sizeof(u32));
	kvfree(pages);
	/* Donating the same prefix again is refused. */
	EXPECT_EQ(-EALREADY, donate1(&t.c[0], a, 3 * pt, &n));
	EXPECT_EQ(0, donate1(&t.c[0], a, 5 * pt, &n));
	EXPECT_EQ(2, n);
	st = stats(&t.c[0]);
	EXPECT_EQ(5, st.out_cache_pinned);
	EXPECT_EQ(0, st.out_cache_evictable);
	EXPECT_EQ(5, st.out_client_cache_pages);
	EXPECT_EQ(5, st.out_client_pages);
	EXPECT_EQ(5, st.out_row_pages);
	EXPECT_TRUE(clean(&t));

	/* Pinned pages cannot be evicted; nothing is freed. */
	EXPECT_EQ(-EBUSY, kvp_cache_evict_locked(&t.c[0], cached, 1, &idx));
	EXPECT_EQ(-ENOENT, kvp_cache_evict_locked(&t.c[1], cached, 1, &idx));

	/* Another request borrows the first three pages. */
	EXPECT_EQ(0, alloc1(&t.c[0], &b));
	EXPECT_EQ(-ENOENT,		/* not that client's cache */
		  kvp_attach_prefix_locked(&t.c[1], &other, cached, 3));
	EXPECT_EQ(-EINVAL,		/* a is not a fresh row */
		  kvp_attach_prefix_locked(&t.c[0], &a, cached, 3));
	cached[3] = cached[0];
	EXPECT_EQ(-EINVAL,		/* named twice */
		  kvp_attach_prefix_locked(&t.c[0], &b, cached, 4));
	cached[3] = 127;
	EXPECT_EQ(-ENOENT,		/* a free page */
		  kvp_attach_prefix_locked(&t.c[0], &b, cached, 4));
	EXPECT_EQ(-EINVAL, kvp_attach_prefix_locked(&t.c[0], &b, cached, 0));
	EXPECT_EQ(0, query(&t.c[0], b, NULL).out_allocated_len);
	EXPECT_EQ(0, kvp_attach_prefix_locked(&t.c[0], &b, cached, 3));
	q = query(&t.c[0], b, &pages);
	EXPECT_EQ(3 * pt, q.out_protected_len);
	EXPECT_EQ(3 * pt, q.out_committed_len);
	EXPECT_EQ(3 * pt, q.out_allocated_len);
	EXPECT_EQ(cached[2], pages[2]);
	kvfree(pages);
	EXPECT_EQ(3 * pt, t.pool.rows[b.req_pool_idx].protected);
	EXPECT_TRUE(clean(&t));
	/* b grows past its prefix with pages of its own. */
	EXPECT_EQ(0, extend1(&t.c[0], b, 4 * pt + 1, &n));
	EXPECT_EQ(2, n);
	EXPECT_TRUE(clean(&t));

	/* Releasing a unpins; b still pins the first three. */
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &a, 1, 0, &freed, &idx));
	EXPECT_EQ(5, freed);
	st = stats(&t.c[0]);
	EXPECT_EQ(3, st.out_cache_pinned);
	EXPECT_EQ(2, st.out_cache_evictable);
	EXPECT_EQ(-EBUSY, kvp_cache_evict_locked(&t.c[0], cached, 3, &idx));
	EXPECT_EQ(0, idx);
	/* Parking b in a slot carries its pins along. */
	EXPECT_EQ(0, kvp_to_slot_locked(&t.c[0], &b, 7, &n));
	EXPECT_EQ(3, stats(&t.c[0]).out_cache_pinned);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, kvp_slot_release_locked(&t.c[0], 7, &n));
	EXPECT_EQ(0, stats(&t.c[0]).out_cache_pinned);
	EXPECT_EQ(5, stats(&t.c[0]).out_cache_evictable);

	/* Evict: all-or-nothing, each page once. */
	cached[3] = cached[1];
	EXPECT_EQ(-EINVAL, kvp_cache_evict_locked(&t.c[0], cached, 4, &idx));
	EXPECT_EQ(3, idx);
	EXPECT_EQ(5, stats(&t.c[0]).out_client_cache_pages);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, kvp_cache_evict_locked(&t.c[0], cached, 3, &idx));
	EXPECT_EQ(2, stats(&t.c[0]).out_client_cache_pages);
	EXPECT_EQ(-ENOENT, kvp_cache_evict_locked(&t.c[0], cached, 1, &idx));
	EXPECT_TRUE(clean(&t));
	/* Closing the client frees the two left in its cache. */
	tpool_fini(&t);
}

static void test_release_donate(void)
{
	struct kvpool_handle h[2];
	struct tpool t;
	u32 sh, idx, freed;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 16, 8, 1024));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 2, &sh));
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 100, NULL));	/* 7 pages */
	EXPECT_EQ(0, extend1(&t.c[0], h[1], 20, NULL));	/* 2 pages */
	EXPECT_EQ(0, commit1(&t.c[0], h[0], 90));	/* 5 full */
	EXPECT_EQ(0, commit1(&t.c[0], h[1], 10));	/* none full */
	EXPECT_EQ(-EOPNOTSUPP,
		  kvp_release_locked(&t.c[0], h, 2, 2, &freed, &idx));
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], h, 2, KVPOOL_RELEASE_DONATE,
					&freed, &idx));
	EXPECT_EQ(2 + 2, freed);
	EXPECT_EQ(5, stats(&t.c[0]).out_cache_evictable);
	EXPECT_EQ(64 - 5, stats(&t.c[0]).out_free_pages);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_swa(u32 pt)
{
	struct kvpool_handle h, b;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct tpool t;
	u32 *pages, n, cached[2];

	EXPECT_EQ(0, tpool_init(&t, 0, 64, pt, 8, 64 * pt));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, extend1(&t.c[0], h, 10 * pt, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h, 8 * pt));
	EXPECT_EQ(0, donate1(&t.c[0], h, 2 * pt, NULL));

	EXPECT_EQ(-EINVAL,
		  swa1(&t.c[0], h, 2 * pt - 1, &n));	/* < protected */
	EXPECT_EQ(-EINVAL,
		  swa1(&t.c[0], h, 8 * pt + 1, &n));	/* > committed */
	EXPECT_EQ(0, swa1(&t.c[0], h, 4 * pt + (pt > 1), &n));
	EXPECT_EQ(2,
		  n);			/* pages 2, 3: never the cache's 0, 1 */
	q = query(&t.c[0], h, &pages);
	EXPECT_EQ(4 * pt, q.out_swa_evicted_len);
	EXPECT_EQ(KVPOOL_PAGE_NONE, pages[2]);
	EXPECT_EQ(KVPOOL_PAGE_NONE, pages[3]);
	EXPECT_TRUE(pages[1] != KVPOOL_PAGE_NONE &&
		    pages[4] != KVPOOL_PAGE_NONE);
	memcpy(cached, pages, sizeof(cached));
	kvfree(pages);
	EXPECT_EQ(-EINVAL, swa1(&t.c[0], h, 4 * pt - 1, &n));	/* backwards */
	EXPECT_EQ(0, swa1(&t.c[0], h, 4 * pt, &n));
	EXPECT_EQ(0, n);
	EXPECT_TRUE(clean(&t));
	/*
	 * Pages 2 and 3 are holes above protected: the row's start is no
	 * prefix any more, so it donates nothing, whatever the length (a
	 * cache entry must be a whole prefix for ATTACH_PREFIX to map).
	 */
	st = stats(&t.c[0]);
	n = 0xdead;
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], h, 6 * pt, &n));
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], h, 8 * pt, &n));
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], h, 2 * pt, &n));
	EXPECT_TRUE(stats_eq(&t.c[0], &st));
	EXPECT_EQ(2 * pt, query(&t.c[0], h, NULL).out_protected_len);
	EXPECT_EQ(2, stats(&t.c[0]).out_client_cache_pages);
	/* Holes are skipped by trim. */
	EXPECT_EQ(0, kvp_trim_locked(&t.c[0], &h, 1, &n, &b.generation));
	EXPECT_EQ(2, n);
	EXPECT_TRUE(clean(&t));
	/* The window slides on past the holes. */
	EXPECT_EQ(0, swa1(&t.c[0], h, 6 * pt, &n));
	EXPECT_EQ(2, n);
	EXPECT_EQ(6 * pt, query(&t.c[0], h, NULL).out_swa_evicted_len);
	EXPECT_TRUE(clean(&t));
	/* The prefix donated before the window slid is whole: it attaches. */
	EXPECT_EQ(0, alloc1(&t.c[0], &b));
	EXPECT_EQ(0, kvp_attach_prefix_locked(&t.c[0], &b, cached, 2));
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static void test_many_clients(void)
{
	static struct kvp_client extra[40];
	struct kvp_pool pool;
	u32 i;

	EXPECT_EQ(0, kvp_pool_init(&pool, 1, 0, 8, 1, 8, 8));
	mutex_lock(&pool.lock);
	for (i = 0; i < 40; i++)
		EXPECT_EQ(0, kvp_client_attach_locked(&pool, &extra[i]));
	/* Client indexes are dense: the lowest free one is taken. */
	for (i = 0; i < 40; i++)
		EXPECT_EQ(i, extra[i].cidx);
	kvp_client_detach_locked(&extra[5]);
	EXPECT_EQ(0, kvp_client_attach_locked(&pool, &extra[5]));
	EXPECT_EQ(5, extra[5].cidx);
	EXPECT_EQ(0, verify(&pool));
	/* The table does not grow past KVP_MAX_CLIENTS. */
	pool.nr_clients = KVP_MAX_CLIENTS;
	EXPECT_EQ(-EMFILE, kvp_client_attach_locked(&pool, &extra[39]));
	pool.nr_clients = 40;
	for (i = 0; i < 40; i++)
		kvp_client_detach_locked(&extra[i]);
	EXPECT_EQ(0, pool.nr_clients);
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
}

static void test_verify_catches_cache(void)
{
	struct kvpool_handle h, b;
	struct tpool t;
	u32 id, *pages;

	EXPECT_EQ(0, tpool_init(&t, 0, 16, 1, 4, 100));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, extend1(&t.c[0], h, 4, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h, 4));
	EXPECT_EQ(0, donate1(&t.c[0], h, 2, NULL));
	EXPECT_EQ(0, alloc1(&t.c[0], &b));
	query(&t.c[0], h, &pages);
	EXPECT_EQ(0, kvp_attach_prefix_locked(&t.c[0], &b, pages, 2));
	id = pages[0];
	kvfree(pages);
	EXPECT_TRUE(clean(&t));

	t.c[0].cache[t.pool.pages[id].next].pins++;	/* pin count off */
	EXPECT_TRUE(broken(&t));
	t.c[0].cache[t.pool.pages[id].next].pins--;
	t.pool.pages[id].next ^= 1;			/* back-link off */
	EXPECT_TRUE(broken(&t));
	t.pool.pages[id].next ^= 1;
	t.pool.pages[id].owner = KVP_OWNER_CACHE | 1;	/* another's cache */
	EXPECT_TRUE(broken(&t));
	t.pool.pages[id].owner = KVP_OWNER_CACHE;
	t.pool.cache_pinned--;
	t.pool.cache_evictable++;
	EXPECT_TRUE(broken(&t));
	t.pool.cache_pinned++;
	t.pool.cache_evictable--;
	t.pool.rows[b.req_pool_idx].protected = 1;	/* not a whole page */
	t.pool.rows[b.req_pool_idx].protected = 1;
	EXPECT_TRUE(broken(&t));
	t.pool.rows[b.req_pool_idx].protected = 2;
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

static int set_tenant(struct kvp_pool *pool, u64 cg, u32 uid, u32 max,
		      u32 min, u32 max_rows)
{
	struct kvpool_ctl_tenant a = {
		.cgroup_id = cg, .uid = uid, .max_pages = max,
		.min_pages = min, .max_rows = max_rows,
	};

	return kvp_tenant_set_locked(pool, &a, NULL);
}

static void test_tenants(void)
{
	struct kvpool_tenant_info info[4];
	struct kvpool_extend_entry e;
	struct kvp_extend_result res;
	struct kvpool_handle h[4], g;
	struct kvpool_ctl_tenant a;
	struct kvp_pool pool;
	struct kvp_client c[3];
	u32 sh, used;

	EXPECT_EQ(0, kvp_pool_init(&pool, 3, 0, 100, 1, 16, 1000));
	mutex_lock(&pool.lock);
	/* Limits may come before the tenant's first client. */
	EXPECT_EQ(0, set_tenant(&pool, 10, 1000, 30, 20, 2));
	EXPECT_EQ(-EINVAL, set_tenant(&pool, 11, 1000, 0, 81, 0)); /* sum */
	EXPECT_EQ(-EINVAL,
		  set_tenant(&pool, 11, 1000, 10, 11, 0)); /* min>max */
	memset(&a, 0, sizeof(a));
	a.flags = 1 << 5;
	EXPECT_EQ(-EOPNOTSUPP, kvp_tenant_set_locked(&pool, &a, NULL));
	a.flags = KVPOOL_TENANT_BY_ID;
	a.tenant_id = 77;
	EXPECT_EQ(-ENOENT, kvp_tenant_set_locked(&pool, &a, NULL));
	a.flags = 0;
	memset(a.label, 'x', sizeof(a.label));
	EXPECT_EQ(-EINVAL, kvp_tenant_set_locked(&pool, &a, NULL));	/* no NUL */
	EXPECT_EQ(1, pool.nr_tenants);

	EXPECT_EQ(0, kvp_client_attach_tenant_locked(&pool, &c[0], 10, 1000,
						     NULL));
	EXPECT_EQ(0, kvp_client_attach_tenant_locked(&pool, &c[1], 12, 0,
						     NULL));
	EXPECT_EQ(0, kvp_client_attach_tenant_locked(&pool, &c[2], 10, 1000,
						     NULL));
	EXPECT_EQ(2, pool.nr_tenants);
	EXPECT_TRUE(c[0].tenant == c[2].tenant && c[0].tenant != c[1].tenant);

	/* max_rows counts the tenant's clients together. */
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[0], h, 1, &sh));
	EXPECT_EQ(-EDQUOT, kvp_row_alloc_locked(&c[2], h + 1, 2, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[2], h + 1, 1, &sh));
	/* max_pages likewise, with the shortfall. */
	EXPECT_EQ(0, extend1(&c[0], h[0], 25, NULL));
	EXPECT_EQ(-EDQUOT, extend1(&c[2], h[1], 6, NULL));
	memset(&e, 0, sizeof(e));
	e.handle = h[1];
	e.new_len = 6;
	EXPECT_EQ(-EDQUOT, kvp_extend_locked(&c[2], &e, 1, ~0U, &res));
	EXPECT_EQ(1, res.shortfall);
	EXPECT_EQ(0, extend1(&c[2], h[1], 5, NULL));
	/* The other tenant cannot take what tenant 10 is guaranteed. */
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[1], &g, 1, &sh));
	EXPECT_EQ(0, extend1(&c[1], g, 70, NULL));
	EXPECT_EQ(0, set_tenant(&pool, 10, 1000, 40, 40, 2));
	/* 100 - 30 - 70 = 0 free; tenant 10 is 10 short of its 40. */
	e.handle = g;
	e.new_len = 71;
	EXPECT_EQ(-ENOSPC, kvp_extend_locked(&c[1], &e, 1, ~0U, &res));
	EXPECT_EQ(1, res.shortfall);
	EXPECT_EQ(0, verify(&pool));

	EXPECT_EQ(2, kvp_tenant_list_locked(&pool, info, 4, NULL, 0, &used));
	EXPECT_EQ(100, info[0].pages + info[1].pages);
	EXPECT_EQ(2, kvp_tenant_list_locked(&pool, info, 1, NULL, 0, &used));

	/* A client-less configured tenant stays; an unconfigured one goes. */
	kvp_client_detach_locked(&c[1]);
	EXPECT_EQ(1, pool.nr_tenants);
	kvp_client_detach_locked(&c[0]);
	kvp_client_detach_locked(&c[2]);
	EXPECT_EQ(1, pool.nr_tenants);
	EXPECT_EQ(100, pool.free_pages);
	EXPECT_EQ(0, verify(&pool));
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
}

static bool alive_none(u64 cgroup_id)
{
	(void)cgroup_id;
	return false;
}

static bool alive_all(u64 cgroup_id)
{
	(void)cgroup_id;
	return true;
}

static int set_path(struct kvp_pool *pool, const char *path, u32 flags,
		    u32 uid, u32 max)
{
	struct kvpool_ctl_tenant a = {
		.flags = KVPOOL_TENANT_BY_PATH | flags, .uid = uid,
		.max_pages = max,
	};
	int ret = kvp_tenant_set_locked(pool, &a, path);

	return ret ? ret : (int)a.tenant_id;
}

static int attach(struct kvp_pool *pool, struct kvp_client *c, u64 cg,
		  u32 uid, const char *path)
{
	EXPECT_EQ(0, kvp_client_attach_tenant_locked(pool, c, cg, uid, path));
	return (int)c->tenant->id;
}

/*
 * Tenants by cgroup path: the nearest configured ancestor-or-self wins,
 * a uid's own before any uid's, an id-configured tenant before both; a
 * restart (a new cgroup id on the same path) finds the same tenant;
 * REMOVE and the pruning of dead ids; the paths in the list.
 */
static void test_tenant_paths(void)
{
	static const char *const bad[] = {
		"", "a", "//", "/a/", "/a//b", "/.", "/a/./b", "/..", "/a/..",
	};
	struct kvpool_tenant_info info[8];
	struct kvpool_ctl_tenant a;
	struct kvp_client c[8];
	struct kvp_pool pool;
	int svc, any, mine, deep, idt, id, n;
	struct kvpool_handle h[2];
	char paths[64], *big;
	u32 i, used, nr, sh;

	EXPECT_EQ(0, kvp_pool_init(&pool, 3, 0, 100, 1, 16, 1000));
	mutex_lock(&pool.lock);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_EQ(-EINVAL, set_path(&pool, bad[i], 0, 0, 1));
	big = malloc(KVPOOL_CGROUP_PATH_MAX + 1);
	memset(big, 'a', KVPOOL_CGROUP_PATH_MAX);
	big[0] = '/';
	big[KVPOOL_CGROUP_PATH_MAX] = '\0';
	EXPECT_EQ(-ENAMETOOLONG, set_path(&pool, big, 0, 0, 1));
	big[KVPOOL_CGROUP_PATH_MAX - 1] = '\0';	/* 4095 bytes: fits */
	EXPECT_LE(0, set_path(&pool, big, 0, 0, 1));
	EXPECT_EQ(KVPOOL_CGROUP_PATH_MAX, pool.path_bytes);
	/* Malformed requests change nothing. */
	EXPECT_EQ(-EINVAL, set_path(&pool, "/s", KVPOOL_TENANT_BY_ID, 0, 1));
	EXPECT_EQ(-EINVAL, set_path(&pool, "/s", KVPOOL_TENANT_ANY_UID, 5, 1));
	memset(&a, 0, sizeof(a));
	a.flags = KVPOOL_TENANT_ANY_UID;
	EXPECT_EQ(-EINVAL, kvp_tenant_set_locked(&pool, &a, NULL));
	a.flags = KVPOOL_TENANT_BY_PATH;
	EXPECT_EQ(-EINVAL, kvp_tenant_set_locked(&pool, &a, NULL));
	a.flags = 0;
	EXPECT_EQ(-EINVAL, kvp_tenant_set_locked(&pool, &a, "/s"));
	a.flags = KVPOOL_TENANT_BY_PATH;
	a.cgroup_id = 5;
	EXPECT_EQ(-EINVAL, kvp_tenant_set_locked(&pool, &a, "/s"));
	a.cgroup_id = 0;
	a.flags = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_REMOVE;
	a.max_pages = 1;
	EXPECT_EQ(-EINVAL, kvp_tenant_set_locked(&pool, &a, "/s"));
	a.max_pages = 0;
	EXPECT_EQ(-ENOENT, kvp_tenant_set_locked(&pool, &a, "/s"));
	EXPECT_EQ(1, pool.nr_tenants);
	/* The long one goes; its bytes with it. */
	a.flags = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_REMOVE;
	EXPECT_EQ(0, kvp_tenant_set_locked(&pool, &a, big));
	free(big);
	EXPECT_EQ(0, pool.nr_tenants);
	EXPECT_EQ(0, pool.path_bytes);

	svc = set_path(&pool, "/sys/svc", 0, 1000, 3);
	any = set_path(&pool, "/sys/svc", KVPOOL_TENANT_ANY_UID, 0, 4);
	mine = set_path(&pool, "/", 0, 7, 5);
	deep = set_path(&pool, "/sys/svc/w/x", 0, 1000, 6);
	EXPECT_TRUE(svc >= 0 && any >= 0 && mine >= 0 && deep >= 0);
	EXPECT_TRUE(svc != any && any != mine && mine != deep);
	/* The same name again is the same tenant, re-limited. */
	EXPECT_EQ(svc, set_path(&pool, "/sys/svc", 0, 1000, 3));
	EXPECT_EQ(4, pool.nr_tenants);

	/* The service itself, its child, a restart: all in svc's tenant. */
	EXPECT_EQ(svc, attach(&pool, &c[0], 100, 1000, "/sys/svc"));
	EXPECT_EQ(svc, attach(&pool, &c[1], 101, 1000, "/sys/svc/worker"));
	EXPECT_EQ(svc, attach(&pool, &c[2], 102, 1000, "/sys/svc/w"));
	/* Another uid below it: the any-uid tenant of the same path. */
	EXPECT_EQ(any, attach(&pool, &c[3], 103, 2000, "/sys/svc/y"));
	EXPECT_EQ(deep, attach(&pool, &c[4], 104, 1000, "/sys/svc/w/x/z"));
	/* A sibling whose name merely starts the same is not below it. */
	n = attach(&pool, &c[5], 105, 1000, "/sys/svcx");
	EXPECT_TRUE(n != svc && n != any && n != mine && n != deep);
	EXPECT_EQ(mine, attach(&pool, &c[6], 106, 7, "/sys/svcx"));
	EXPECT_EQ(5, pool.nr_tenants);
	/* The limit holds across the subtree: 3 pages together. */
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[0], &h[0], 1, &sh));
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[1], &h[1], 1, &sh));
	EXPECT_EQ(0, extend1(&c[0], h[0], 2, NULL));
	EXPECT_EQ(-EDQUOT, extend1(&c[1], h[1], 2, NULL));
	EXPECT_EQ(0, extend1(&c[1], h[1], 1, NULL));
	EXPECT_EQ(0, verify(&pool));

	/* An id-configured tenant of the exact cgroup comes first. */
	memset(&a, 0, sizeof(a));
	a.cgroup_id = 107;
	a.uid = 1000;
	a.max_pages = 9;
	EXPECT_EQ(0, kvp_tenant_set_locked(&pool, &a, NULL));
	idt = (int)a.tenant_id;
	EXPECT_EQ(idt, attach(&pool, &c[7], 107, 1000, "/sys/svc"));
	kvp_client_detach_locked(&c[7]);

	/* The list: flags, and paths while they fit. */
	memset(paths, 'z', sizeof(paths));
	nr = kvp_tenant_list_locked(&pool, info, 8, paths, sizeof(paths),
				    &used);
	EXPECT_EQ(6, nr);
	EXPECT_EQ(pool.path_bytes, 2 * sizeof("/sys/svc") + sizeof("/") +
		  sizeof("/sys/svc/w/x"));
	EXPECT_EQ(1 + pool.path_bytes, used);
	EXPECT_EQ(0, paths[0]);
	for (i = 0; i < nr; i++) {
		u32 want = 0;

		id = (int)info[i].tenant_id;
		if (id == svc || id == deep || id == mine)
			want = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_CONFIGURED;
		else if (id == any)
			want = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_ANY_UID |
			       KVPOOL_TENANT_CONFIGURED;
		else if (id == idt)
			want = KVPOOL_TENANT_CONFIGURED;
		EXPECT_EQ(want, info[i].flags);
		if (want & KVPOOL_TENANT_BY_PATH) {
			EXPECT_NE(0, info[i].path_offset);
			EXPECT_EQ(0, info[i].cgroup_id);
		} else {
			EXPECT_EQ(0, info[i].path_offset);
		}
	}
	for (i = 0; i < nr; i++) {
		if ((int)info[i].tenant_id == deep)
			EXPECT_EQ(0, strcmp("/sys/svc/w/x",
					    paths + info[i].path_offset));
	}
	/* Too small a buffer: the entries that do not fit get 0. */
	kvp_tenant_list_locked(&pool, info, 8, paths, 10, &used);
	EXPECT_EQ(10, used);
	for (i = 0, n = 0; i < 6; i++)
		n += info[i].path_offset != 0;
	EXPECT_EQ(1, n);

	/* REMOVE: clients keep the tenant; new opens go up the tree. */
	memset(&a, 0, sizeof(a));
	a.flags = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_REMOVE;
	a.uid = 1000;
	EXPECT_EQ(0, kvp_tenant_set_locked(&pool, &a, "/sys/svc"));
	EXPECT_EQ(svc, (int)a.tenant_id);
	EXPECT_EQ(svc, (int)c[0].tenant->id);
	EXPECT_FALSE(c[0].tenant->configured);
	EXPECT_EQ(any, attach(&pool, &c[7], 108, 1000, "/sys/svc"));
	kvp_client_detach_locked(&c[7]);
	/* The same path configured anew is a new tenant beside the old. */
	n = set_path(&pool, "/sys/svc", 0, 1000, 3);
	EXPECT_TRUE(n != svc);
	EXPECT_EQ(0, verify(&pool));
	for (i = 0; i < 7; i++)
		kvp_client_detach_locked(&c[i]);
	/* The removed one went with its last client. */
	EXPECT_TRUE(!xa_load(&pool.tenants, svc));
	EXPECT_EQ(0, verify(&pool));

	/*
	 * A configured tenant of a cgroup seen alive goes when it dies; one
	 * never seen alive, and a path tenant, stay.
	 */
	nr = pool.nr_tenants;
	kvp_tenant_prune_locked(&pool, alive_none);
	EXPECT_EQ(nr, pool.nr_tenants);
	kvp_tenant_prune_locked(&pool, alive_all);
	EXPECT_EQ(nr, pool.nr_tenants);
	kvp_tenant_prune_locked(&pool, alive_none);
	EXPECT_EQ(nr - 1, pool.nr_tenants);
	nr = kvp_tenant_list_locked(&pool, info, 8, NULL, 0, &used);
	for (i = 0; i < nr; i++)
		EXPECT_EQ(0, info[i].cgroup_id);
	EXPECT_EQ(0, verify(&pool));
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
}

static void test_pressure(void)
{
	struct kvpool_handle h, g;
	struct kvp_pool pool;
	struct kvp_client c[2];
	u32 why, ask, n, *pages, idx;

	EXPECT_EQ(0, kvp_pool_init(&pool, 3, 0, 64, 1, 16, 1000));
	mutex_lock(&pool.lock);
	EXPECT_EQ(2, pool.low_wmark);
	EXPECT_EQ(4, pool.high_wmark);
	EXPECT_EQ(-EINVAL, kvp_set_wmark_locked(&pool, 9, 8));
	EXPECT_EQ(-EINVAL, kvp_set_wmark_locked(&pool, 8, 65));
	EXPECT_EQ(0, kvp_set_wmark_locked(&pool, 8, 16));
	EXPECT_EQ(0, kvp_client_attach_tenant_locked(&pool, &c[0], 1, 1, NULL));
	EXPECT_EQ(0, kvp_client_attach_tenant_locked(&pool, &c[1], 2, 2, NULL));

	/* c0 fills a cache of 40 pages; nothing is asked yet. */
	EXPECT_EQ(0, alloc1(&c[0], &h));
	EXPECT_EQ(0, extend1(&c[0], h, 40, NULL));
	EXPECT_EQ(0, commit1(&c[0], h, 40));
	EXPECT_EQ(0, kvp_release_locked(&c[0], &h, 1, KVPOOL_RELEASE_DONATE, &n,
					&idx));
	EXPECT_EQ(0, kvp_pressure_locked(&c[0], &why));
	/* c1 takes the pool below the low watermark: c0 is asked. */
	n = pool.pressure_seq;
	EXPECT_EQ(0, alloc1(&c[1], &g));
	EXPECT_EQ(0, extend1(&c[1], g, 20, NULL));
	EXPECT_TRUE(pool.pressure_seq != n);
	ask = kvp_pressure_locked(&c[0], &why);
	EXPECT_EQ(KVPOOL_PRESSURE_LOW, why);
	EXPECT_EQ(16 - 4, ask);
	EXPECT_EQ(0, kvp_pressure_locked(&c[1], &why));	/* no cache */
	/* Evicting what was asked clears it. */
	pages = kvmalloc_array(ask, sizeof(u32), GFP_KERNEL);
	for (n = 0; n < ask; n++)
		pages[n] = c[0].cache[n].page;
	EXPECT_EQ(0, kvp_cache_evict_locked(&c[0], pages, ask, &idx));
	kvfree(pages);
	EXPECT_EQ(0, kvp_pressure_locked(&c[0], &why));

	/* Over max after the limit is lowered: asked, nothing taken. */
	EXPECT_EQ(0, set_tenant(&pool, 1, 1, 20, 0, 0));
	ask = kvp_pressure_locked(&c[0], &why);
	EXPECT_EQ(KVPOOL_PRESSURE_OVER_MAX, why);
	EXPECT_EQ(28 - 20, ask);
	EXPECT_EQ(28, c[0].nr_cache_pages);

	/* A tenant refused below its guarantee asks the others. */
	EXPECT_EQ(0, set_tenant(&pool, 1, 1, 0, 0, 0));
	EXPECT_EQ(0, set_tenant(&pool, 2, 2, 0, 40, 0));
	EXPECT_EQ(-ENOSPC, extend1(&c[1], g, 40, NULL));
	ask = kvp_pressure_locked(&c[0], &why);
	EXPECT_TRUE(why & KVPOOL_PRESSURE_GUARANTEE);
	EXPECT_EQ(20, ask);
	EXPECT_EQ(0, verify(&pool));
	kvp_client_detach_locked(&c[0]);
	kvp_client_detach_locked(&c[1]);
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
}

static void test_export(void)
{
	struct kvpool_export x;
	struct kvpool_handle h, b, got;
	struct kvpool_stats st;
	struct tpool t;
	u32 idx, n, *pages, freed;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 4, 8, 400));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, extend1(&t.c[0], h, 40, NULL));	/* 10 pages */
	EXPECT_EQ(0, commit1(&t.c[0], h, 40));
	EXPECT_EQ(0, donate1(&t.c[0], h, 8, NULL));	/* 2 cached, pinned */

	memset(&x, 0, sizeof(x));
	x.handle = h;
	x.handle.generation--;
	EXPECT_EQ(-ESTALE, kvp_export_locked(&t.c[0], &x, &idx, &n));
	x.handle.generation += 2;	/* not issued yet */
	EXPECT_EQ(-ENOENT, kvp_export_locked(&t.c[0], &x, &idx, &n));
	x.handle = h;
	EXPECT_EQ(-ENOENT, kvp_export_locked(&t.c[1], &x, &idx, &n));
	/* Another row borrowing the prefix makes it unexportable. */
	EXPECT_EQ(0, alloc1(&t.c[0], &b));
	query(&t.c[0], h, &pages);
	EXPECT_EQ(0, kvp_attach_prefix_locked(&t.c[0], &b, pages, 2));
	kvfree(pages);
	EXPECT_EQ(-EBUSY, kvp_export_locked(&t.c[0], &x, &idx, &n));
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &b, 1, 0, &freed, &idx));

	st = stats(&t.c[0]);
	EXPECT_EQ(0, kvp_export_locked(&t.c[0], &x, &idx, &n));
	EXPECT_EQ(10, n);
	EXPECT_EQ(h.req_pool_idx, idx);
	st = stats(&t.c[0]);
	EXPECT_EQ(1, st.out_export_rows);
	EXPECT_EQ(10, st.out_export_pages);
	EXPECT_EQ(0, st.out_client_rows);
	EXPECT_EQ(0, st.out_client_pages);
	EXPECT_EQ(0, st.out_client_cache_pages);
	EXPECT_EQ(0, st.out_tenant_pages);
	EXPECT_EQ(0, query(&t.c[0], h, NULL).out_state);
	EXPECT_TRUE(clean(&t));

	EXPECT_EQ(0, kvp_import_locked(&t.c[1], idx, &got, &n));
	EXPECT_EQ(10, n);
	EXPECT_EQ(h.req_pool_idx, got.req_pool_idx);
	EXPECT_EQ(h.generation + 1, got.generation);
	EXPECT_EQ(0, query(&t.c[1], got, NULL).out_protected_len);
	EXPECT_EQ(40, query(&t.c[1], got, NULL).out_committed_len);
	EXPECT_EQ(-EALREADY, kvp_import_locked(&t.c[2], idx, &got, &n));
	EXPECT_EQ(10, stats(&t.c[1]).out_client_pages);
	EXPECT_TRUE(clean(&t));

	/* Slots export too; a dropped export frees everything. */
	EXPECT_EQ(0, kvp_to_slot_locked(&t.c[1], &got, 5, &n));
	memset(&x, 0, sizeof(x));
	x.flags = KVPOOL_EXPORT_SLOT;
	x.session_id = 6;
	EXPECT_EQ(-ENOENT, kvp_export_locked(&t.c[1], &x, &idx, &n));
	x.session_id = 5;
	EXPECT_EQ(0, kvp_export_locked(&t.c[1], &x, &idx, &n));
	EXPECT_EQ(0, stats(&t.c[1]).out_client_slots);
	EXPECT_TRUE(clean(&t));
	kvp_export_drop_locked(&t.pool, idx);
	EXPECT_EQ(0, stats(&t.c[1]).out_export_rows);
	EXPECT_EQ(64, stats(&t.c[1]).out_free_pages);
	kvp_export_drop_locked(&t.pool, idx);		/* no-op now */
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

/*
 * The whole pool's state, to prove a refused op changed nothing: every
 * page's owner and link, every row's record and page list (not @mark, the
 * batch epoch, which a refused batch may well have stamped), and every
 * client's STATS.
 */
#define SNAP_PAGES	64
#define SNAP_ROWS	8

struct psnap {
	struct kvp_page pages[SNAP_PAGES];
	struct {
		struct kvp_client *owner;
		u64 session;
		u32 nr, allocated, committed, protected, swa_evicted, next;
		u32 gen, owned;
		u8 state;
		u32 pages[SNAP_PAGES];
	} rows[SNAP_ROWS];
	struct kvpool_stats st[3];
};

static void psnap_take(struct tpool *t, struct psnap *s)
{
	u32 i;

	memset(s, 0, sizeof(*s));
	EXPECT_TRUE(t->pool.nr_pages <= SNAP_PAGES &&
		    t->pool.nr_rows <= SNAP_ROWS);
	memcpy(s->pages, t->pool.pages, t->pool.nr_pages * sizeof(s->pages[0]));
	for (i = 0; i < t->pool.nr_rows; i++) {
		const struct kvp_row *r = &t->pool.rows[i];

		s->rows[i].owner = r->owner;
		s->rows[i].session = r->session;
		s->rows[i].nr = r->nr;
		s->rows[i].allocated = r->allocated;
		s->rows[i].committed = r->committed;
		s->rows[i].protected = r->protected;
		s->rows[i].swa_evicted = r->swa_evicted;
		s->rows[i].next = r->next;
		s->rows[i].gen = r->gen;
		s->rows[i].owned = r->owned;
		s->rows[i].state = r->state;
		if (r->nr)
			memcpy(s->rows[i].pages, r->pages, r->nr * sizeof(u32));
	}
	for (i = 0; i < 3; i++)
		s->st[i] = stats(&t->c[i]);
}

static bool unchanged(struct tpool *t, const struct psnap *before)
{
	struct psnap now;

	psnap_take(t, &now);
	return !memcmp(&now, before, sizeof(now)) && clean(t);
}

/*
 * Every op that takes a handle, with @bad as the last entry of the batch
 * (after @ok, a row that would pass) or as the only handle: each must
 * fail with @want, name the bad entry, and change nothing. @bad names a
 * row like @ok, whose lengths make every op but ATTACH_PREFIX valid under
 * its real generation, or a fresh one (no tokens), which ATTACH_PREFIX of
 * @cached would take: either way only the generation is wrong, and
 * handles are checked before any other field.
 */
static void gen_refused(struct tpool *t, struct kvpool_handle ok,
			struct kvpool_handle bad, const u32 *cached, int want)
{
	struct kvp_client *c = &t->c[0];
	struct kvpool_extend_entry e[2];
	struct kvpool_len_entry le[2];
	struct kvp_extend_result res;
	struct kvpool_handle h[2] = { ok, bad };
	struct kvpool_row_query q;
	struct kvpool_export x;
	struct psnap before;
	int failed = kvp_expect_failures;
	u32 n, idx, xi;

	psnap_take(t, &before);

	memset(le, 0, sizeof(le));
	le[0].handle = ok;
	le[0].len = 8;
	le[1].handle = bad;
	le[1].len = 8;
	idx = 0xdead;
	EXPECT_EQ(want, kvp_commit_locked(c, le, 2, &idx));
	EXPECT_EQ(1, idx);
	idx = 0xdead;
	EXPECT_EQ(want, kvp_donate_locked(c, le, 2, &n, &idx));
	EXPECT_EQ(1, idx);
	le[0].len = 4;
	le[1].len = 4;
	idx = 0xdead;
	EXPECT_EQ(want, kvp_swa_free_locked(c, le, 2, &n, &idx));
	EXPECT_EQ(1, idx);

	idx = 0xdead;
	EXPECT_EQ(want, kvp_trim_locked(c, h, 2, &n, &idx));
	EXPECT_EQ(1, idx);
	idx = 0xdead;
	EXPECT_EQ(want, kvp_release_locked(c, h, 2, 0, &n, &idx));
	EXPECT_EQ(1, idx);
	idx = 0xdead;
	EXPECT_EQ(want,
		  kvp_release_locked(c, h, 2, KVPOOL_RELEASE_DONATE, &n, &idx));
	EXPECT_EQ(1, idx);

	memset(e, 0, sizeof(e));
	e[0].handle = ok;
	e[0].new_len = 20;
	e[1].handle = bad;
	e[1].new_len = 20;
	EXPECT_EQ(want, kvp_extend_locked(c, e, 2, ~0U, &res));
	EXPECT_EQ(1, res.error_index);
	EXPECT_TRUE(!res.pages);
	kvfree(res.pages);

	EXPECT_EQ(want, kvp_to_slot_locked(c, &bad, 77, &n));
	EXPECT_EQ(want, kvp_attach_prefix_locked(c, &bad, cached, 1));
	memset(&x, 0, sizeof(x));
	x.handle = bad;
	EXPECT_EQ(want, kvp_export_locked(c, &x, &xi, &n));
	memset(&q, 0, sizeof(q));
	q.handle = bad;
	EXPECT_EQ(want, kvp_row_query_locked(c, &q, NULL));

	EXPECT_TRUE(unchanged(t, &before));
	if (kvp_expect_failures != failed)
		printf("#   (above: row %u, handle generation %u, row's %u)\n",
		       bad.req_pool_idx, bad.generation,
		       t->pool.rows[bad.req_pool_idx].gen);
}

/*
 * A generation newer than the row's names nothing yet (ENOENT, like a
 * handle never held); only an older one is stale (ESTALE). Compared with
 * wrap-around: a row's generation goes ... U32_MAX, 1, 2 ... (never 0).
 */
static void test_future_generation(void)
{
	static const u32 ahead[] = { 1, 5, 0x7fffffff };
	static const u32 behind[] = { 1, 5, 0x80000000U };
	struct kvpool_handle ok, b, f, d, bad;
	struct kvpool_export x;
	struct tpool t;
	u32 cached[2], *pages, n, xi, i, k;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 4, 8, 256));
	/* ok and b: allocated 16, committed 8, nothing donated or freed */
	EXPECT_EQ(0, alloc1(&t.c[0], &ok));
	EXPECT_EQ(0, alloc1(&t.c[0], &b));
	EXPECT_EQ(0, alloc1(&t.c[0], &f));	/* fresh, for ATTACH_PREFIX */
	EXPECT_EQ(0, alloc1(&t.c[0], &d));	/* fills the cache */
	for (i = 0; i < 2; i++) {
		struct kvpool_handle r = i ? b : ok;

		EXPECT_EQ(0, extend1(&t.c[0], r, 16, NULL));
		EXPECT_EQ(0, commit1(&t.c[0], r, 8));
	}
	EXPECT_EQ(0, extend1(&t.c[0], d, 8, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], d, 8));
	EXPECT_EQ(0, donate1(&t.c[0], d, 8, NULL));
	query(&t.c[0], d, &pages);
	memcpy(cached, pages, sizeof(cached));
	kvfree(pages);
	EXPECT_TRUE(clean(&t));

	for (k = 0; k < 3; k++) {
		struct kvpool_handle row = k == 2 ? f : b;

		/* Three generations to go back from. */
		t.pool.rows[row.req_pool_idx].gen = 1000;
		row.generation = 1000;
		for (i = 0; i < 3; i++) {
			bad = row;
			bad.generation += ahead[i];
			gen_refused(&t, ok, bad, cached, -ENOENT);
			bad = row;
			bad.generation -= behind[i];
			gen_refused(&t, ok, bad, cached, -ESTALE);
		}
		/* Across the wrap: U32_MAX is followed by 1. */
		t.pool.rows[row.req_pool_idx].gen = U32_MAX;
		row.generation = U32_MAX;
		bad = row;
		bad.generation = 1;
		gen_refused(&t, ok, bad, cached, -ENOENT);
		bad.generation = 5;
		gen_refused(&t, ok, bad, cached, -ENOENT);
		bad.generation = U32_MAX - 1;
		gen_refused(&t, ok, bad, cached, -ESTALE);
		t.pool.rows[row.req_pool_idx].gen = 1;
		row.generation = 1;
		bad = row;
		bad.generation = U32_MAX;
		gen_refused(&t, ok, bad, cached, -ESTALE);
		bad.generation = U32_MAX - 4;
		gen_refused(&t, ok, bad, cached, -ESTALE);
		bad.generation = 2;
		gen_refused(&t, ok, bad, cached, -ENOENT);
		bad.generation = 6;
		gen_refused(&t, ok, bad, cached, -ENOENT);

		/* The real generation works: only the number was wrong. */
		memset(&x, 0, sizeof(x));
		x.handle = row;
		if (k == 2) {
			EXPECT_EQ(0, kvp_attach_prefix_locked(&t.c[0], &row,
							      cached, 2));
			EXPECT_EQ(8,
				  query(&t.c[0], row, NULL).out_protected_len);
		} else if (k == 1) {
			EXPECT_EQ(0, kvp_export_locked(&t.c[0], &x, &xi, &n));
			EXPECT_EQ(4, n);
			/* Imported: the next generation, 2; 3 names nothing. */
			EXPECT_EQ(0, kvp_import_locked(&t.c[0], xi, &b, &n));
			EXPECT_EQ(2, b.generation);
			bad = b;
			bad.generation = 3;
			EXPECT_EQ(-ENOENT, commit1(&t.c[0], bad, 12));
			bad.generation = 1;
			EXPECT_EQ(-ESTALE, commit1(&t.c[0], bad, 12));
			EXPECT_EQ(0, commit1(&t.c[0], b, 12));
		} else {
			/* Parked and back: the next generation, 2. */
			EXPECT_EQ(0, kvp_to_slot_locked(&t.c[0], &row, 9, &n));
			EXPECT_EQ(4, n);
			EXPECT_EQ(0, kvp_from_slot_locked(&t.c[0], 9, &b, &n));
			EXPECT_EQ(2, b.generation);
			bad = b;
			bad.generation = 3;
			EXPECT_EQ(-ENOENT, extend1(&t.c[0], bad, 20, NULL));
			bad.generation = 1;
			EXPECT_EQ(-ESTALE, extend1(&t.c[0], bad, 20, NULL));
			EXPECT_EQ(8, query(&t.c[0], b, NULL).out_committed_len);
		}
		EXPECT_TRUE(clean(&t));
	}
	tpool_fini(&t);
}

/*
 * DONATE, and RELEASE with KVPOOL_RELEASE_DONATE, of a row SWA_FREE has
 * freed pages of above its protected prefix: EINVAL naming the entry,
 * nothing changed. The case an outside model found: page_tokens 16,
 * committed 64, SWA_FREE to 32 with protected 0 (pages 0 and 1 freed),
 * then DONATE 64 succeeded with protected 64 over two holes, a "prefix"
 * no ATTACH_PREFIX can map.
 */
static void test_donate_after_swa(void)
{
	struct kvpool_handle h[2], w, e;
	struct kvpool_len_entry le[2];
	struct psnap before;
	struct tpool t;
	u32 n, idx;

	EXPECT_EQ(0, tpool_init(&t, 0, 64, 16, 8, 1024));
	EXPECT_EQ(0, kvp_row_alloc_locked(&t.c[0], h, 2, &n));
	EXPECT_EQ(0, alloc1(&t.c[0], &w));
	EXPECT_EQ(0, alloc1(&t.c[0], &e));
	/* h[0]: clean, would donate; h[1]: the holed row */
	EXPECT_EQ(0, extend1(&t.c[0], h[0], 64, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h[0], 64));
	EXPECT_EQ(0, extend1(&t.c[0], h[1], 64, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h[1], 64));
	EXPECT_EQ(0, swa1(&t.c[0], h[1], 32, &n));
	EXPECT_EQ(2, n);
	EXPECT_EQ(0, query(&t.c[0], h[1], NULL).out_protected_len);
	EXPECT_EQ(32, query(&t.c[0], h[1], NULL).out_swa_evicted_len);
	EXPECT_TRUE(clean(&t));

	psnap_take(&t, &before);
	n = 0xdead;
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], h[1], 64, &n));
	EXPECT_TRUE(unchanged(&t, &before));
	/* Even a length the row's protected part covers: the row is holed. */
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], h[1], 0, &n));
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], h[1], 48, &n));
	/* In a batch: the entry is named and the good one not donated. */
	memset(le, 0, sizeof(le));
	le[0].handle = h[0];
	le[0].len = 64;
	le[1].handle = h[1];
	le[1].len = 64;
	idx = 0xdead;
	EXPECT_EQ(-EINVAL, kvp_donate_locked(&t.c[0], le, 2, &n, &idx));
	EXPECT_EQ(1, idx);
	EXPECT_TRUE(unchanged(&t, &before));
	idx = 0xdead;
	EXPECT_EQ(-EINVAL,
		  kvp_release_locked(&t.c[0], h, 2, KVPOOL_RELEASE_DONATE, &n,
				     &idx));
	EXPECT_EQ(1, idx);
	EXPECT_TRUE(unchanged(&t, &before));
	EXPECT_EQ(0, stats(&t.c[0]).out_client_cache_pages);
	EXPECT_EQ(4, stats(&t.c[0]).out_client_rows);
	/* A bad handle later in the batch is still found first. */
	le[0].handle = h[1];
	le[1].handle = h[0];
	le[1].handle.generation--;
	idx = 0xdead;
	EXPECT_EQ(-ESTALE, kvp_donate_locked(&t.c[0], le, 2, &n, &idx));
	EXPECT_EQ(1, idx);
	EXPECT_TRUE(unchanged(&t, &before));

	/* Donated before the window slides: the prefix stays whole. */
	EXPECT_EQ(0, extend1(&t.c[0], w, 64, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], w, 64));
	EXPECT_EQ(0, donate1(&t.c[0], w, 32, &n));
	EXPECT_EQ(2, n);
	/* SWA_FREE up to protected frees nothing: still no holes. */
	EXPECT_EQ(0, swa1(&t.c[0], w, 32, &n));
	EXPECT_EQ(0, n);
	EXPECT_EQ(0, donate1(&t.c[0], w, 48, &n));
	EXPECT_EQ(1, n);
	/* Past protected it holes the row: no more donating. */
	EXPECT_EQ(0, swa1(&t.c[0], w, 64, &n));
	EXPECT_EQ(1, n);
	psnap_take(&t, &before);
	EXPECT_EQ(-EINVAL, donate1(&t.c[0], w, 64, &n));
	idx = 0xdead;
	EXPECT_EQ(-EINVAL,
		  kvp_release_locked(&t.c[0], &w, 1, KVPOOL_RELEASE_DONATE, &n,
				     &idx));
	EXPECT_EQ(0, idx);
	EXPECT_TRUE(unchanged(&t, &before));

	/* e: SWA_FREE to exactly its donated edge; RELEASE_DONATE works. */
	EXPECT_EQ(0, extend1(&t.c[0], e, 64, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], e, 64));
	EXPECT_EQ(0, donate1(&t.c[0], e, 64, &n));
	EXPECT_EQ(0, swa1(&t.c[0], e, 64, &n));
	EXPECT_EQ(0, n);
	EXPECT_EQ(0,
		  kvp_release_locked(&t.c[0], &e, 1, KVPOOL_RELEASE_DONATE, &n,
				     &idx));
	EXPECT_EQ(0, n);

	/* Without the flag a holed row releases; the clean one donates. */
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &h[1], 1, 0, &n, &idx));
	EXPECT_EQ(2, n);
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &w, 1, 0, &n, &idx));
	EXPECT_EQ(0,
		  kvp_release_locked(&t.c[0], &h[0], 1, KVPOOL_RELEASE_DONATE,
				     &n, &idx));
	EXPECT_EQ(0, n);
	/* h[0]'s 4 pages, w's 3 (page 3 freed by SWA), e's 4 */
	EXPECT_EQ(4 + 3 + 4, stats(&t.c[0]).out_client_cache_pages);
	EXPECT_EQ(0, stats(&t.c[0]).out_cache_pinned);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

/* One scheduler-like sequence of every op; returns the first error. */
static int sequence(struct tpool *t)
{
	struct kvpool_extend_entry e[4];
	struct kvp_extend_result res;
	struct kvpool_handle h[4], back;
	struct kvpool_row_query q;
	u32 sh, idx, n, *pages;
	int ret, i;

	ret = kvp_row_alloc_locked(&t->c[0], h, 4, &sh);
	if (ret)
		return ret;
	for (int step = 1; step <= 40; step++) {
		memset(e, 0, sizeof(e));
		for (i = 0; i < 4; i++) {
			e[i].handle = h[i];
			e[i].new_len = step * (i + 1) * 5;
		}
		ret = kvp_extend_locked(&t->c[0], e, 4, ~0U, &res);
		kvfree(res.pages);
		if (ret)
			return ret;
	}
	memset(&q, 0, sizeof(q));
	q.handle = h[1];
	q.pages_cap = 5;
	ret = kvp_row_query_locked(&t->c[0], &q, &pages);
	kvfree(pages);
	if (ret)
		return ret;
	ret = commit1(&t->c[0], h[0], 150);
	if (ret)
		return ret;
	ret = kvp_trim_locked(&t->c[0], h, 1, &n, &idx);
	if (ret)
		return ret;
	ret = kvp_to_slot_locked(&t->c[0], &h[2], 99, &n);
	if (ret)
		return ret;
	ret = kvp_from_slot_locked(&t->c[0], 99, &back, &n);
	if (ret)
		return ret;
	ret = extend1(&t->c[0], back, 700, NULL);
	if (ret)
		return ret;
	ret = commit1(&t->c[0], back, 600);
	if (ret)
		return ret;
	ret = donate1(&t->c[0], back, 300, NULL);
	if (ret)
		return ret;
	ret = swa1(&t->c[0], back, 400, NULL);
	if (ret)
		return ret;
	/* The window slid past protected: back has holes, donates nothing. */
	ret = donate1(&t->c[0], back, 500, NULL);
	if (ret != -EINVAL)
		return ret ? ret : -EIO;
	ret = kvp_release_locked(&t->c[0], &back, 1, KVPOOL_RELEASE_DONATE,
				 &n, &idx);
	if (ret != -EINVAL)
		return ret ? ret : -EIO;
	q.handle = back;
	q.pages_cap = 10;
	ret = kvp_row_query_locked(&t->c[0], &q, &pages);
	if (ret)
		return ret;
	ret = kvp_attach_prefix_locked(&t->c[0], &h[3], pages, 0) == -EINVAL ?
	      0 : -EIO;
	if (!ret) {
		ret = kvp_release_locked(&t->c[0], &h[3], 1, 0, &n, &idx);
		if (!ret)
			ret = kvp_row_alloc_locked(&t->c[0], &h[3], 1, &sh);
		if (!ret)
			ret = kvp_attach_prefix_locked(&t->c[0], &h[3],
						       pages, 10);
	}
	kvfree(pages);
	if (ret)
		return ret;
	ret = kvp_release_locked(&t->c[0], &back, 1, 0, &n, &idx);
	if (ret)
		return ret;
	/* h[0] has no holes: its committed pages go to the cache. */
	return kvp_release_locked(&t->c[0], h, 2, KVPOOL_RELEASE_DONATE, &n,
				  &idx);
}

/*
 * Fail the 1st, 2nd, ... allocation of the sequence until it runs
 * through: each failure must be -ENOMEM, leave the pool sound, and leak
 * nothing once the clients and the pool are gone.
 */
/*
 * EXTEND and RELEASE bigger than one step (struct kvp_op): between two
 * steps, where the driver lets other clients have the lock, the pool is
 * whole, the rows are busy to their own client, the reserved pages are
 * out of everyone else's reach and the tenant's quota counts them.
 */
static void test_stepped(void)
{
	const u32 step = KVP_STEP_PAGES, big = 2 * step + step / 2;
	struct kvpool_extend_entry e[2];
	struct kvp_extend_result res, r2;
	struct kvpool_handle h[2], o, p;
	struct kvp_pool pool;
	struct kvp_client c[3];
	u32 sh, steps, freed, idx, free0, i, got;
	struct kvp_op op;
	bool more;

	EXPECT_EQ(0, kvp_pool_init(&pool, 4, 0, 3 * step + 100, 1, 8,
				   4 * step));
	mutex_lock(&pool.lock);
	/* c[0] and c[1] one tenant (max 3 steps' worth), c[2] another. */
	EXPECT_EQ(0, set_tenant(&pool, 10, 1000, 3 * step, 0, 0));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, kvp_client_attach_tenant_locked(&pool, &c[i],
							     i < 2 ? 10 : 12,
							     i < 2 ? 1000 : 0,
							     NULL));
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[0], h, 2, &sh));
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[1], &o, 1, &sh));
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[2], &p, 1, &sh));
	free0 = pool.free_pages;

	/* A small EXTEND is not stepped: done in its one step. */
	memset(e, 0, sizeof(e));
	e[0].handle = h[1];
	e[0].new_len = 10;
	EXPECT_EQ(0, kvp_extend_start_locked(&c[0], e, 1, ~0U, NULL, 0, &res,
					     &op, NULL));
	EXPECT_FALSE(op.stepped);
	EXPECT_EQ(0, pool.pending_pages);
	EXPECT_FALSE(kvp_op_step_locked(&op));
	EXPECT_EQ(10, res.nr_pages);
	kvfree(res.pages);

	/* One big, one growing within its last page: both busy. */
	e[0].handle = h[0];
	e[0].new_len = big;
	e[1].handle = h[1];
	e[1].new_len = 10;
	EXPECT_EQ(0, kvp_extend_start_locked(&c[0], e, 2, ~0U, NULL, 0, &res,
					     &op, NULL));
	EXPECT_TRUE(op.stepped);
	EXPECT_EQ(big, pool.pending_pages);
	EXPECT_EQ(big, c[0].tenant->pending);
	EXPECT_EQ(0, verify(&pool));
	/* The rows are busy to their own client, whatever it asks. */
	EXPECT_EQ(-EBUSY, extend1(&c[0], h[0], big + 1, NULL));
	EXPECT_EQ(-EBUSY, extend1(&c[0], h[1], 11, NULL));
	EXPECT_EQ(-EBUSY, commit1(&c[0], h[1], 1));
	EXPECT_EQ(-EBUSY, kvp_release_locked(&c[0], h, 1, 0, &freed, &idx));
	EXPECT_EQ(0, idx);
	/* Its tenant's quota counts the reservation... */
	EXPECT_EQ(-EDQUOT, extend1(&c[1], o, 3 * step - big - 10 + 1, NULL));
	/* ...and nobody else may take the reserved pages. */
	EXPECT_EQ(-ENOSPC, extend1(&c[2], p, free0 - 10 - big + 1, NULL));
	EXPECT_EQ(0, extend1(&c[2], p, free0 - 10 - big, NULL));
	EXPECT_EQ(0, verify(&pool));
	steps = 0;
	do {
		more = kvp_op_step_locked(&op);
		steps++;
		EXPECT_EQ(0, verify(&pool));
		if (more) {
			struct kvp_row *r = &pool.rows[h[0].req_pool_idx];

			/* A row like any other: its pages, their length. */
			EXPECT_EQ(r->nr, r->allocated);
			EXPECT_EQ(big - res.nr_pages, pool.pending_pages);
			EXPECT_EQ(-EBUSY, extend1(&c[0], h[0], big, NULL));
		}
	} while (more && steps < 10);
	EXPECT_EQ(3, steps);
	EXPECT_EQ(big, res.nr_pages);
	EXPECT_EQ(0, pool.pending_pages);
	EXPECT_EQ(0, c[0].tenant->pending);
	EXPECT_EQ(0, pool.free_pages);
	EXPECT_EQ(big, e[0].out_nr_new);
	EXPECT_EQ(0, e[1].out_nr_new);
	EXPECT_EQ(big, query(&c[0], h[0], NULL).out_allocated_len);
	EXPECT_EQ(10, query(&c[0], h[1], NULL).out_allocated_len);
	/* The answer's ids are the row's, in order. */
	for (i = 0, got = 0; i < big; i++)
		got += pool.rows[h[0].req_pool_idx].pages[i] == res.pages[i];
	EXPECT_EQ(big, got);
	kvfree(res.pages);
	EXPECT_EQ(0, commit1(&c[0], h[0], big - 5));

	/* A big RELEASE frees from the tails, then the rows. */
	EXPECT_EQ(0, kvp_release_start_locked(&c[0], h, 2, 0, &freed, &idx,
					      &op));
	EXPECT_TRUE(op.stepped);
	EXPECT_EQ(-EBUSY, commit1(&c[0], h[1], 1));
	steps = 0;
	do {
		more = kvp_op_step_locked(&op);
		steps++;
		EXPECT_EQ(0, verify(&pool));
		if (more) {
			EXPECT_EQ(freed, pool.free_pages);
			EXPECT_EQ(-EBUSY, commit1(&c[0], h[0], 1));
		}
	} while (more && steps < 10);
	EXPECT_EQ(3, steps);
	EXPECT_EQ(big + 10, freed);
	EXPECT_EQ(0, c[0].nr_rows);
	EXPECT_EQ(-ENOENT, extend1(&c[0], h[0], 1, NULL));

	/*
	 * A stepped RELEASE of a row borrowing a cached prefix: the tail
	 * stops at it, the row's free unpins it, the cache keeps it.
	 */
	memset(&r2, 0, sizeof(r2));
	EXPECT_EQ(0, kvp_row_alloc_locked(&c[0], h, 1, &sh));
	EXPECT_EQ(0, extend1(&c[0], h[0], 64, NULL));
	EXPECT_EQ(0, commit1(&c[0], h[0], 64));
	EXPECT_EQ(0, donate1(&c[0], h[0], 64, NULL));
	EXPECT_EQ(64, c[0].nr_cache_pinned);
	EXPECT_EQ(0, extend1(&c[0], h[0], 64 + big - 10 - 64, NULL));
	EXPECT_EQ(0, kvp_release_start_locked(&c[0], h, 1, 0, &freed, &idx,
					      &op));
	EXPECT_TRUE(op.stepped);
	while (kvp_op_step_locked(&op))
		EXPECT_EQ(0, verify(&pool));
	EXPECT_EQ(0, verify(&pool));
	EXPECT_EQ(big - 10 - 64, freed);
	EXPECT_EQ(64, c[0].nr_cache_pages);
	EXPECT_EQ(0, c[0].nr_cache_pinned);

	for (i = 0; i < 3; i++)
		kvp_client_detach_locked(&c[i]);
	EXPECT_EQ(0, verify(&pool));
	EXPECT_EQ(pool.nr_pages, pool.free_pages);
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
}

/*
 * A closing client that holds more than a step gives it back in steps
 * (kvp_client_reclaim_step_locked()), slots, rows and cache, freed or
 * quarantined; every state between two steps verifies, and the detach
 * after the last finds nothing left. A big quarantine ends in steps too.
 */
static void test_reclaim_stepped(void)
{
	const u32 step = KVP_STEP_PAGES;
	struct kvpool_handle h[3];
	struct kvp_quarantine q = { .head = KVP_NIL };
	struct kvp_pool pool;
	struct kvp_client c[2];
	u64 reclaimed;
	u32 sh, nr, steps, held, pass;

	EXPECT_EQ(0, kvp_pool_init(&pool, 5, 0, 6 * step, 1, 8, 4 * step));
	mutex_lock(&pool.lock);
	for (pass = 0; pass < 2; pass++) {
		EXPECT_EQ(0, kvp_client_attach_locked(&pool, &c[0]));
		EXPECT_EQ(0, kvp_client_attach_locked(&pool, &c[1]));
		EXPECT_EQ(0, kvp_row_alloc_locked(&c[0], h, 3, &sh));
		/* A slot of two steps, a row of a step and a half... */
		EXPECT_EQ(0, extend1(&c[0], h[0], 2 * step + 3, NULL));
		EXPECT_EQ(0, kvp_to_slot_locked(&c[0], &h[0], 42, &nr));
		EXPECT_EQ(0, extend1(&c[0], h[1], step + step / 2, NULL));
		/* ...and one that borrows a prefix it gave its cache. */
		EXPECT_EQ(0, extend1(&c[0], h[2], 100, NULL));
		EXPECT_EQ(0, commit1(&c[0], h[2], 100));
		EXPECT_EQ(0, donate1(&c[0], h[2], 100, NULL));
		EXPECT_EQ(0, extend1(&c[0], h[2], 100 + step, NULL));
		held = c[0].nr_pages + c[0].nr_cache_pages;
		EXPECT_EQ(4 * step + step / 2 + 103, held);
		reclaimed = pool.reclaimed_pages;
		steps = 0;
		while (kvp_client_reclaim_step_locked(&c[0], pass ? &q : NULL)
		       && steps < 20) {
			steps++;
			EXPECT_EQ(0, verify(&pool));
			/* The other client's ops go on between steps. */
			EXPECT_EQ(0, kvp_row_alloc_locked(&c[1], h, 1, &sh));
			EXPECT_EQ(0, extend1(&c[1], h[0], 1, NULL));
		}
		EXPECT_EQ(4, steps);
		EXPECT_EQ(0, c[0].nr_pages);
		EXPECT_EQ(0, c[0].nr_rows + c[0].nr_slots);
		EXPECT_EQ(0, c[0].nr_cache_pages);
		EXPECT_EQ(held, pool.reclaimed_pages - reclaimed);
		kvp_client_detach_quarantine_locked(&c[0], pass ? &q : NULL);
		EXPECT_EQ(held, pool.reclaimed_pages - reclaimed);
		kvp_client_detach_locked(&c[1]);
		EXPECT_EQ(0, verify(&pool));
		/* Cache pages are freed, the rows' own held back. */
		EXPECT_EQ(pass ? held - 100 : 0, q.nr);
		EXPECT_EQ(q.nr, pool.quarantine_pages);
	}
	steps = 0;
	while (q.nr > step) {
		EXPECT_EQ(step, kvp_quarantine_free_locked(&pool, &q, step));
		EXPECT_EQ(0, verify(&pool));
		steps++;
	}
	EXPECT_EQ(4, steps);
	EXPECT_EQ(step / 2 + 3, kvp_quarantine_end_locked(&pool, &q));
	EXPECT_EQ(0, verify(&pool));
	EXPECT_EQ(pool.nr_pages, pool.free_pages);
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
}

/* TRIM and SWA_FREE bigger than a step, checked between the steps. */
static void test_trim_swa_stepped(void)
{
	const u32 step = KVP_STEP_PAGES, big = 2 * step + 7;
	struct kvpool_len_entry le;
	struct kvpool_handle h;
	struct kvp_row *r;
	struct tpool t;
	u32 freed, idx, steps;
	struct kvp_op op;

	EXPECT_EQ(0, tpool_init(&t, 0, 3 * step, 1, 4, 4 * step));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	r = &t.pool.rows[h.req_pool_idx];
	EXPECT_EQ(0, extend1(&t.c[0], h, big, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h, 100));
	EXPECT_EQ(0, kvp_trim_start_locked(&t.c[0], &h, 1, &freed, &idx,
					   &op));
	EXPECT_TRUE(op.stepped);
	for (steps = 0; kvp_op_step_locked(&op) && steps < 10; steps++) {
		EXPECT_TRUE(clean(&t));
		EXPECT_EQ(-EBUSY, commit1(&t.c[0], h, 100));
		EXPECT_EQ(r->nr, r->allocated);
	}
	EXPECT_EQ(1, steps);	/* a step and a last one */
	EXPECT_EQ(big - 100, freed);
	EXPECT_EQ(100, r->allocated);
	EXPECT_EQ(100, r->nr);
	EXPECT_FALSE(r->busy);
	EXPECT_TRUE(clean(&t));

	/* The window passes most of a long row. */
	EXPECT_EQ(0, extend1(&t.c[0], h, big, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h, big));
	le = (struct kvpool_len_entry){ .handle = h, .len = big - 10 };
	EXPECT_EQ(0, kvp_swa_free_start_locked(&t.c[0], &le, 1, &freed, &idx,
					       &op));
	EXPECT_TRUE(op.stepped);
	for (steps = 0; kvp_op_step_locked(&op) && steps < 10; steps++) {
		EXPECT_TRUE(clean(&t));
		EXPECT_EQ(-EBUSY, commit1(&t.c[0], h, big));
		EXPECT_EQ(step, r->swa_evicted);
	}
	EXPECT_EQ(1, steps);
	EXPECT_EQ(big - 10, freed);
	EXPECT_EQ(big - 10, r->swa_evicted);
	EXPECT_EQ(KVPOOL_PAGE_NONE, r->pages[big - 11]);
	EXPECT_TRUE(r->pages[big - 10] != KVPOOL_PAGE_NONE);
	/* A small one is one step, as before. */
	le.len = big - 5;
	EXPECT_EQ(0, kvp_swa_free_start_locked(&t.c[0], &le, 1, &freed, &idx,
					       &op));
	EXPECT_FALSE(op.stepped);
	EXPECT_FALSE(kvp_op_step_locked(&op));
	EXPECT_EQ(5, freed);
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &h, 1, 0, &freed, &idx));
	EXPECT_EQ(5, freed);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

/*
 * DONATE and RELEASE with KVPOOL_RELEASE_DONATE bigger than a step: the
 * prefix moves into the cache a part at a time, then (RELEASE) the
 * entries go from the end, borrowed ones unpinned, holes skipped.
 */
static void test_donate_stepped(void)
{
	const u32 step = KVP_STEP_PAGES, big = 2 * step + 9;
	struct kvpool_len_entry le;
	struct kvpool_handle h, g;
	struct kvp_row *r;
	struct tpool t;
	u32 n, idx, steps;
	struct kvp_op op;

	EXPECT_EQ(0, tpool_init(&t, 0, 6 * step, 4, 8, 4 * step * 4));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	r = &t.pool.rows[h.req_pool_idx];
	EXPECT_EQ(0, extend1(&t.c[0], h, big * 4, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h, big * 4 - 2));	/* mid-page */
	le = (struct kvpool_len_entry){ .handle = h, .len = big * 4 - 2 };
	EXPECT_EQ(0, kvp_donate_start_locked(&t.c[0], &le, 1, &n, &idx, &op));
	EXPECT_TRUE(op.stepped);
	for (steps = 0; kvp_op_step_locked(&op) && steps < 10; steps++) {
		EXPECT_TRUE(clean(&t));
		EXPECT_EQ(-EBUSY, commit1(&t.c[0], h, big * 4 - 1));
		EXPECT_EQ((steps + 1) * step * 4, r->protected);
	}
	EXPECT_EQ(2, steps);
	EXPECT_EQ(big - 1, n);
	EXPECT_EQ((big - 1) * 4, r->protected);
	EXPECT_EQ(big - 1, t.c[0].nr_cache_pinned);
	EXPECT_FALSE(r->busy);
	EXPECT_TRUE(clean(&t));

	/* Its release: the last page freed, the prefix unpinned, stepped. */
	EXPECT_EQ(0, kvp_release_start_locked(&t.c[0], &h, 1,
					      KVPOOL_RELEASE_DONATE, &n, &idx,
					      &op));
	EXPECT_TRUE(op.stepped);
	for (steps = 0; kvp_op_step_locked(&op) && steps < 10; steps++)
		EXPECT_TRUE(clean(&t));
	EXPECT_EQ(2, steps);
	EXPECT_EQ(1, n);
	EXPECT_EQ(big - 1, t.c[0].nr_cache_pages);
	EXPECT_EQ(0, t.c[0].nr_cache_pinned);
	EXPECT_EQ(0, t.c[0].nr_rows);

	/*
	 * Another thread of the client donates a row of its own between
	 * two steps of a big DONATE: the room the big one counts on stays.
	 * Its D pages fill the cache array it grows to (2 * step entries)
	 * but for 60, so that without that the second one's 100 would not
	 * grow it and the big one's later pages would not fit.
	 */
	EXPECT_EQ(0, alloc1(&t.c[2], &h));
	EXPECT_EQ(0, alloc1(&t.c[2], &g));
	EXPECT_EQ(0, extend1(&t.c[2], h, (2 * step - 60) * 4, NULL));
	EXPECT_EQ(0, commit1(&t.c[2], h, (2 * step - 60) * 4));
	EXPECT_EQ(0, extend1(&t.c[2], g, 400, NULL));
	EXPECT_EQ(0, commit1(&t.c[2], g, 400));
	le = (struct kvpool_len_entry){ .handle = h,
					.len = (2 * step - 60) * 4 };
	EXPECT_EQ(0, kvp_donate_start_locked(&t.c[2], &le, 1, &n, &idx, &op));
	EXPECT_TRUE(op.stepped);
	EXPECT_EQ(2 * step - 60, t.c[2].cache_pending);
	EXPECT_EQ(2 * step, t.c[2].cache_cap);
	EXPECT_TRUE(kvp_op_step_locked(&op));
	EXPECT_EQ(0, donate1(&t.c[2], g, 400, NULL));
	EXPECT_LE(t.c[2].nr_cache_pages + t.c[2].cache_pending,
		  t.c[2].cache_cap);
	EXPECT_TRUE(clean(&t));
	EXPECT_FALSE(kvp_op_step_locked(&op));
	EXPECT_EQ(0, t.c[2].cache_pending);
	EXPECT_EQ(2 * step - 60 + 100, t.c[2].nr_cache_pages);
	EXPECT_TRUE(clean(&t));

	/* A fresh row: RELEASE with the flag donates all of it, stepped. */
	EXPECT_EQ(0, alloc1(&t.c[1], &h));
	EXPECT_EQ(0, extend1(&t.c[1], h, (step + 5) * 4, NULL));
	EXPECT_EQ(0, commit1(&t.c[1], h, (step + 5) * 4));
	EXPECT_EQ(0, kvp_release_start_locked(&t.c[1], &h, 1,
					      KVPOOL_RELEASE_DONATE, &n, &idx,
					      &op));
	EXPECT_TRUE(op.stepped);
	while (kvp_op_step_locked(&op))
		EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, n);
	EXPECT_EQ(step + 5, t.c[1].nr_cache_pages);
	EXPECT_EQ(0, t.c[1].nr_cache_pinned);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);
}

/*
 * A big EXTEND's arrays come from its caller, allocated without the
 * lock (struct kvp_extend_mem): the start asks, changing nothing, takes
 * what it is given, and asks again when the pool changed meanwhile.
 */
static void test_extend_mem(void)
{
	const u32 step = KVP_STEP_PAGES, big = 2 * step + 3;
	struct kvp_extend_mem mem = { 0 };
	struct kvpool_extend_entry e;
	struct kvp_extend_result res;
	struct kvpool_handle h, o;
	struct kvpool_stats st;
	struct kvp_row *r;
	struct tpool t;
	struct kvp_op op;
	u32 first, last;

	EXPECT_EQ(0, tpool_init(&t, 0, 3 * step, 1, 4, 4 * step));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, alloc1(&t.c[0], &o));
	r = &t.pool.rows[h.req_pool_idx];
	EXPECT_EQ(0, extend1(&t.c[0], h, 100, NULL));
	first = r->pages[0];
	last = r->pages[99];
	st = stats(&t.c[0]);
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.new_len = big;
	EXPECT_EQ(KVP_EXTEND_NEED_MEM,
		  kvp_extend_start_locked(&t.c[0], &e, 1, ~0U, NULL, 0, &res,
					  &op, &mem));
	EXPECT_TRUE(stats_eq(&t.c[0], &st));
	EXPECT_EQ(big - 100, mem.want_pages);
	EXPECT_EQ(h.req_pool_idx, mem.want_row_idx);
	EXPECT_EQ(4 * step, mem.want_row_cap);	/* 128 doubled to >= big */
	EXPECT_EQ(128, r->cap);
	EXPECT_TRUE(clean(&t));

	/* Given for another row: asked again, for this one. */
	mem.row_idx = o.req_pool_idx;
	mem.row_cap = mem.want_row_cap;
	mem.row = kvmalloc_array(mem.row_cap, sizeof(u32), GFP_KERNEL);
	mem.pages_cap = mem.want_pages;
	mem.pages = kvmalloc_array(mem.pages_cap, sizeof(u32), GFP_KERNEL);
	EXPECT_EQ(KVP_EXTEND_NEED_MEM,
		  kvp_extend_start_locked(&t.c[0], &e, 1, ~0U, NULL, 0, &res,
					  &op, &mem));
	EXPECT_EQ(0, mem.want_pages);	/* that one it has */
	EXPECT_EQ(h.req_pool_idx, mem.want_row_idx);
	mem.row_idx = h.req_pool_idx;
	EXPECT_EQ(0, kvp_extend_start_locked(&t.c[0], &e, 1, ~0U, NULL, 0,
					     &res, &op, &mem));
	/* Both became the op's: the answer's ids and the row's array. */
	EXPECT_TRUE(!mem.pages && !mem.row);
	EXPECT_EQ(4 * step, r->cap);
	EXPECT_EQ(first, r->pages[0]);	/* the ids it had, copied over */
	EXPECT_EQ(last, r->pages[99]);
	while (kvp_op_step_locked(&op))
		;
	EXPECT_EQ(big - 100, res.nr_pages);
	EXPECT_EQ(big, r->allocated);
	kvfree(res.pages);
	EXPECT_TRUE(clean(&t));

	/* Small ones never ask. */
	e.handle = o;
	e.new_len = 5;
	EXPECT_EQ(0, kvp_extend_start_locked(&t.c[0], &e, 1, ~0U, NULL, 0,
					     &res, &op, &mem));
	while (kvp_op_step_locked(&op))
		;
	kvfree(res.pages);
	tpool_fini(&t);
}

/*
 * A pool on a budget: no page free until backed, an EXTEND that asks
 * kvp_pool.grow for what it lacks, and a chunk's range taken off the free
 * map only when all of it is free (kvp_back_locked(), kvp_unback_locked()).
 */
static u32 budget_slots_left;
static u32 budget_grow_calls;

/* kvp_pool.headroom's stand-in beside budget_grow(): its slots left. */
static u32 budget_slot_room(struct kvp_pool *pool)
{
	u32 room = budget_slots_left * 16;

	return room < pool->unbacked_pages ? room : pool->unbacked_pages;
}

/* All the slots @pages needs or none, as the driver's grow does. */
static int budget_grow(struct kvp_pool *pool, u32 pages)
{
	u32 s;

	budget_grow_calls++;
	if (budget_slot_room(pool) < pages)
		return 0;
	for (s = 0; s < pool->nr_pages / 16 && pages && budget_slots_left;
	     s++) {
		u32 n = kvp_back_locked(pool, s * 16, 16);

		if (!n)
			continue;
		budget_slots_left--;
		pages -= n < pages ? n : pages;
	}
	return 0;
}

static void test_budget_backing(void)
{
	struct kvpool_handle h, o;
	struct tpool t;
	u32 n, idx;

	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_BUDGET, 64, 1, 4, 64));
	EXPECT_EQ(0, t.pool.free_pages);
	EXPECT_EQ(64, t.pool.unbacked_pages);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, alloc1(&t.c[1], &o));
	/* No grow hook: nothing is free. */
	EXPECT_EQ(-ENOSPC, extend1(&t.c[0], h, 1, NULL));

	t.pool.grow = budget_grow;
	t.pool.headroom = budget_slot_room;
	budget_slots_left = 2;
	budget_grow_calls = 0;
	EXPECT_EQ(0, extend1(&t.c[0], h, 20, NULL));
	EXPECT_EQ(1, budget_grow_calls);
	EXPECT_EQ(12, t.pool.free_pages);
	EXPECT_EQ(32, t.pool.unbacked_pages);
	EXPECT_TRUE(clean(&t));
	/* Enough free: the hook is not asked. */
	EXPECT_EQ(0, extend1(&t.c[1], o, 4, NULL));
	EXPECT_EQ(1, budget_grow_calls);
	/* An EXTEND that fails to allocate takes nothing from the budget. */
	budget_slots_left = 2;
	kvp_user_nr_allocs = 0;
	kvp_user_fail_nth = 1;
	EXPECT_EQ(-ENOMEM, extend1(&t.c[0], h, 40, NULL));
	kvp_user_fail_nth = 0;
	EXPECT_EQ(1, budget_grow_calls);
	EXPECT_EQ(32, t.pool.unbacked_pages);
	EXPECT_EQ(20, t.pool.rows[h.req_pool_idx].nr);
	budget_slots_left = 0;
	/*
	 * The budget is out: ENOSPC before the hook is asked (its headroom
	 * says so), and the row keeps its 4 pages.
	 */
	EXPECT_EQ(-ENOSPC, extend1(&t.c[1], o, 30, NULL));
	EXPECT_EQ(1, budget_grow_calls);
	EXPECT_EQ(4, t.pool.rows[o.req_pool_idx].nr);
	EXPECT_EQ(8, t.pool.free_pages);

	/* A range with a held page stays, all of it. */
	EXPECT_FALSE(kvp_unback_locked(&t.pool, 16, 16));
	EXPECT_EQ(8, t.pool.free_pages);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &h, 1, 0, &n, &idx));
	EXPECT_EQ(0, kvp_release_locked(&t.c[1], &o, 1, 0, &n, &idx));
	EXPECT_TRUE(kvp_unback_locked(&t.pool, 16, 16));
	EXPECT_EQ(16, t.pool.free_pages);
	EXPECT_EQ(48, t.pool.unbacked_pages);
	EXPECT_TRUE(clean(&t));
	/* Backed again, the same ids come back free; past the end is cut. */
	EXPECT_EQ(16, kvp_back_locked(&t.pool, 16, 16));
	EXPECT_EQ(0, kvp_back_locked(&t.pool, 16, 16));
	EXPECT_EQ(32, kvp_back_locked(&t.pool, 32, 100));
	EXPECT_EQ(0, t.pool.unbacked_pages);
	EXPECT_TRUE(clean(&t));
	tpool_fini(&t);

	/* The reserved page stays reserved through backing and unbacking. */
	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_BUDGET |
				KVPOOL_CREATE_RESERVE_ZERO, 32, 1, 4, 32));
	EXPECT_EQ(31, t.pool.unbacked_pages);
	EXPECT_EQ(15, kvp_back_locked(&t.pool, 0, 16));
	EXPECT_EQ(KVP_OWNER_RESERVED, t.pool.pages[0].owner);
	EXPECT_TRUE(kvp_unback_locked(&t.pool, 0, 16));
	EXPECT_EQ(KVP_OWNER_RESERVED, t.pool.pages[0].owner);
	EXPECT_EQ(0, t.pool.free_pages);
	EXPECT_TRUE(clean(&t));
	EXPECT_EQ(31, kvp_back_locked(&t.pool, 0, 32));
	tpool_fini(&t);
}

static u32 budget_room;

/* kvp_pool.headroom's stand-in: what the budget could still give. */
static u32 budget_headroom(struct kvp_pool *pool)
{
	(void)pool;
	return budget_room;
}

/*
 * A budget pool counts what its budget could still give as free: pages
 * it has not backed are no reason to evict while the budget has them.
 */
static void test_budget_pressure(void)
{
	struct kvpool_handle h, g;
	struct tpool t;
	u32 n, idx, why;

	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_BUDGET, 64, 1, 4, 64));
	EXPECT_EQ(0, kvp_set_wmark_locked(&t.pool, 8, 16));
	t.pool.grow = budget_grow;
	t.pool.headroom = budget_slot_room;
	budget_slots_left = 2;
	EXPECT_EQ(0, alloc1(&t.c[0], &h));
	EXPECT_EQ(0, extend1(&t.c[0], h, 12, NULL));
	EXPECT_EQ(0, commit1(&t.c[0], h, 12));
	EXPECT_EQ(0, kvp_release_locked(&t.c[0], &h, 1, KVPOOL_RELEASE_DONATE,
					&n, &idx));
	EXPECT_EQ(0, alloc1(&t.c[1], &g));
	EXPECT_EQ(0, extend1(&t.c[1], g, 16, NULL));
	EXPECT_EQ(4, t.pool.free_pages);

	/* No hook: 4 free of a low watermark of 8, c0 is asked 16 - 4. */
	t.pool.headroom = NULL;
	EXPECT_EQ(12, kvp_pressure_locked(&t.c[0], &why));
	EXPECT_EQ(KVPOOL_PRESSURE_LOW, why);
	t.pool.headroom = budget_headroom;
	/* The budget has 3 pages for it: 7 < 8 still, the ask is 16 - 7. */
	budget_room = 3;
	EXPECT_EQ(9, kvp_pressure_locked(&t.c[0], &why));
	EXPECT_EQ(KVPOOL_PRESSURE_LOW, why);
	/* 4 more make the watermark: nothing is asked. */
	budget_room = 4;
	EXPECT_EQ(0, kvp_pressure_locked(&t.c[0], &why));
	EXPECT_EQ(0, why);
	/* However much room, the sum cannot wrap past the watermark. */
	budget_room = U32_MAX;
	EXPECT_EQ(0, kvp_pressure_locked(&t.c[0], &why));
	/* The budget ran out (another pool took it): asked again. */
	budget_room = 0;
	EXPECT_EQ(12, kvp_pressure_locked(&t.c[0], &why));
	EXPECT_TRUE(clean(&t));
	t.pool.headroom = NULL;
	EXPECT_EQ(32, kvp_back_locked(&t.pool, 0, 64));
	tpool_fini(&t);
}

static void test_fail_nth(void)
{
	unsigned long nth;
	struct tpool t;
	int ret, fails = 0;

	for (nth = 1; nth < 10000; nth++) {
		long live = kvp_user_live_allocs;

		kvp_user_nr_allocs = 0;
		kvp_user_fail_nth = nth;
		ret = tpool_init(&t, 0, 2048, 4, 16, 4096);
		if (ret) {
			kvp_user_fail_nth = 0;
			EXPECT_EQ(-ENOMEM, ret);
			EXPECT_EQ(live, kvp_user_live_allocs);
			fails++;
			continue;
		}
		ret = sequence(&t);
		kvp_user_fail_nth = 0;
		EXPECT_TRUE(ret == 0 || ret == -ENOMEM);
		EXPECT_TRUE(clean(&t));
		tpool_fini(&t);
		EXPECT_EQ(live, kvp_user_live_allocs);
		if (!ret)
			break;
		fails++;
	}
	printf("#   sequence ran through after %d injected failures\n", fails);
	EXPECT_TRUE(fails > 5);
	EXPECT_TRUE(nth < 10000);
}

static u32 rnd_state = 12345;

static u32 rnd(u32 n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % n;
}

/*
 * Several clients doing random, mostly valid work; after every op the
 * pool must verify, and refused ops must change nothing.
 */
static void test_random(void)
{
	struct kvpool_handle held[3][64];
	int nheld[3] = { 0 };
	struct tpool t;
	int step, ok = 0, refused = 0;

	EXPECT_EQ(0, tpool_init(&t, KVPOOL_CREATE_RESERVE_ZERO, 3000, 8, 100,
				2000));
	for (step = 0; step < 30000 && !kvp_expect_failures; step++) {
		int ci = rnd(3), k;
		struct kvp_client *c = &t.c[ci];
		struct kvpool_handle h;
		struct kvpool_stats st = stats(c);
		u32 n, idx;
		int ret = 0, op = rnd(15);

		k = nheld[ci] ? (int)rnd(nheld[ci]) : -1;
		h = k >= 0 ? held[ci][k] : (struct kvpool_handle){ rnd(100), 1 };
		if (rnd(20) == 0)	/* garbage handle */
			h.generation += rnd(3);
		switch (op) {
		case 0:
			if (nheld[ci] < 64) {
				ret = alloc1(c, &h);
				if (!ret)
					held[ci][nheld[ci]++] = h;
			}
			break;
		case 1:
		case 2: {
			struct kvpool_row_query q = query(c, h, NULL);

			ret = extend1(c, h, q.out_allocated_len + rnd(200), NULL);
			break;
		}
		case 3: {
			struct kvpool_row_query q = query(c, h, NULL);

			ret = commit1(c, h, q.out_committed_len +
				      rnd(q.out_allocated_len -
					  q.out_committed_len + 2));
			break;
		}
		case 4:
			ret = kvp_trim_locked(c, &h, 1, &n, &idx);
			break;
		case 5:
		case 6:
			ret = kvp_release_locked(c, &h, 1, 0, &n, &idx);
			if (!ret && k >= 0)
				held[ci][k] = held[ci][--nheld[ci]];
			break;
		case 7:
			ret = kvp_to_slot_locked(c, &h, rnd(8), &n);
			if (!ret && k >= 0)
				held[ci][k] = held[ci][--nheld[ci]];
			break;
		case 9: {
			struct kvpool_row_query q = query(c, h, NULL);

			ret = donate1(c, h, q.out_protected_len +
				      rnd(q.out_committed_len -
					  q.out_protected_len + 2), NULL);
			break;
		}
		case 10: {
			struct kvpool_row_query q = query(c, h, NULL);

			ret = swa1(c, h, q.out_swa_evicted_len +
				   rnd(q.out_committed_len + 2 -
				       q.out_swa_evicted_len), NULL);
			break;
		}
		case 11: {
			u32 pg[4], j, m = 1 + rnd(4);

			for (j = 0; j < m; j++)
				pg[j] = c->nr_cache_pages && rnd(8) ?
					c->cache[rnd(c->nr_cache_pages)].page :
					rnd(3000);
			if (rnd(2))
				ret = kvp_cache_evict_locked(c, pg, m, &idx);
			else
				ret = kvp_attach_prefix_locked(c, &h, pg, m);
			break;
		}
		case 12:
			ret = kvp_release_locked(c, &h, 1, KVPOOL_RELEASE_DONATE,
						 &n, &idx);
			if (!ret && k >= 0)
				held[ci][k] = held[ci][--nheld[ci]];
			break;
		case 13:
		case 14: {
			/* Hand the row to another client, or drop it. */
			struct kvpool_export x = { .handle = h };
			int to = (ci + 1 + rnd(2)) % 3;
			u32 xi;

			ret = kvp_export_locked(c, &x, &xi, &n);
			if (ret)
				break;
			if (k >= 0)
				held[ci][k] = held[ci][--nheld[ci]];
			EXPECT_TRUE(clean(&t));
			if (op == 14 || nheld[to] >= 64 ||
			    kvp_import_locked(&t.c[to], xi, &h, &n))
				kvp_export_drop_locked(&t.pool, xi);
			else
				held[to][nheld[to]++] = h;
			break;
		}
		case 8:
			if (nheld[ci] < 64) {
				ret = kvp_from_slot_locked(c, rnd(8), &h, &n);
				if (!ret)
					held[ci][nheld[ci]++] = h;
				else if (rnd(2))
					ret = kvp_slot_release_locked(c, rnd(8),
								      &n);
			}
			break;
		}
		if (ret) {
			refused++;
			if (!stats_eq(c, &st))
				EXPECT_TRUE(!"a refused op changed the pool");
		} else {
			ok++;
		}
		if (verify(&t.pool)) {
			printf("#   verify failed at step %d (op %d)\n", step, op);
			EXPECT_TRUE(0);
		}
		if (rnd(2000) == 0) {
			kvp_client_detach_locked(c);
			EXPECT_EQ(0, kvp_client_attach_locked(&t.pool, c));
			nheld[ci] = 0;
		}
	}
	printf("#   %d ops done, %d refused\n", ok, refused);
	EXPECT_TRUE(ok > 5000 && refused > 1000);
	tpool_fini(&t);
}

/* A core call without the pool lock must trip the assertion. */
static void test_lock_assert(void)
{
	struct tpool t;
	pid_t pid;
	int status;

	EXPECT_EQ(0, tpool_init(&t, 0, 8, 1, 4, 8));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct kvpool_handle h;

		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		mutex_unlock(&t.pool.lock);
		alloc1(&t.c[0], &h);
		_exit(0);
	}
	EXPECT_TRUE(waitpid(pid, &status, 0) == pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	tpool_fini(&t);
}

static void run(const char *name, void (*fn)(void))
{
	long live = kvp_user_live_allocs;

	kvp_expect_failures = 0;
	fn();
	if (kvp_user_live_allocs != live) {
		printf("#   leaked %ld allocations\n", kvp_user_live_allocs - live);
		kvp_expect_failures++;
	}
	nr_test++;
	if (kvp_expect_failures) {
		nr_fail++;
		printf("not ok %d %s\n", nr_test, name);
	} else {
		nr_pass++;
		printf("ok %d %s\n", nr_test, name);
	}
	fflush(stdout);
}

static void test_prefix_cache_pt1(void) { test_prefix_cache(1); }
static void test_prefix_cache_pt16(void) { test_prefix_cache(16); }
static void test_swa_pt1(void) { test_swa(1); }
static void test_swa_pt16(void) { test_swa(16); }
static void test_extend_pt1(void) { test_extend(1); }
static void test_extend_pt16(void) { test_extend(16); }
static void test_commit_trim_pt1(void) { test_commit_trim(1); }
static void test_commit_trim_pt16(void) { test_commit_trim(16); }

int main(int argc, char **argv)
{
	kvp_user_verbose = argc > 1 && !strcmp(argv[1], "-v");
	printf("TAP version 13\n1..35\n");
	run("geometry", test_geometry);
	run("reserve_zero", test_reserve_zero);
	run("row_alloc", test_row_alloc);
	run("extend_pt1", test_extend_pt1);
	run("extend_pt16", test_extend_pt16);
	run("commit_trim_pt1", test_commit_trim_pt1);
	run("commit_trim_pt16", test_commit_trim_pt16);
	run("release", test_release);
	run("slots", test_slots);
	run("detach", test_detach);
	run("detach_hold", test_detach_hold);
	run("mark_wrap", test_mark_wrap);
	run("prefix_cache_pt1", test_prefix_cache_pt1);
	run("prefix_cache_pt16", test_prefix_cache_pt16);
	run("release_donate", test_release_donate);
	run("swa_pt1", test_swa_pt1);
	run("swa_pt16", test_swa_pt16);
	run("many_clients", test_many_clients);
	run("verify_catches_cache_corruption", test_verify_catches_cache);
	run("tenants", test_tenants);
	run("tenant_paths", test_tenant_paths);
	run("pressure", test_pressure);
	run("export_import", test_export);
	run("future_generation", test_future_generation);
	run("donate_after_swa", test_donate_after_swa);
	run("verify_catches_corruption", test_verify_catches);
	run("fail_nth", test_fail_nth);
	run("free_map", test_free_map);
	run("random_ops", test_random);
	run("lock_assert", test_lock_assert);
	run("stepped_ops", test_stepped);
	run("reclaim_stepped", test_reclaim_stepped);
	run("trim_swa_stepped", test_trim_swa_stepped);
	run("donate_stepped", test_donate_stepped);
	run("extend_mem", test_extend_mem);
	run("budget_backing", test_budget_backing);
	run("budget_pressure", test_budget_pressure);
	printf("# unit: %d passed, %d failed\n", nr_pass, nr_fail);
	return nr_fail ? 1 : 0;
}
