// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: ops stepped so that no client holds a pool's lock for
 * long (docs/gpu-budget.md, "Stepped ops"), and control ops that wait for
 * one pool only.
 *
 * An EXTEND, RELEASE, TRIM, SWA_FREE or DONATE of more than
 * KVP_STEP_PAGES (16384) pages, and the close of a client holding more,
 * drop the pool lock between steps. What must hold, and is checked here
 * through the real driver: the op's answer is the same as in one hold (ids, counts,
 * ROW_QUERY); every state another client can see between two steps passes
 * VERIFY; another client's ops never fail for it (its reservation is out
 * of their reach, not theirs out of its); the same client's other threads
 * get EBUSY for the op's rows and nothing else; control ops on a busy pool
 * and on other pools succeed, and destroy races only with ENODEV.
 *
 * No test here asserts a timing: kvpool-bench's isolation workload
 * measures what the steps buy.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <pthread.h>

#include "kvptest.h"
#include "kvptest_tenant.h"

#define STEP		16384U
#define BIG		(3 * STEP + 100)	/* four steps */
#define NR_PAGES	(4 * STEP + 1)		/* page 0 reserved */
#define NR_ROWS		17
#define ROW_TOKENS	(1U << 20)
#define ROUNDS		12

FIXTURE(step) {
	struct kt_pool pool;
};

FIXTURE_SETUP(step)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, 1, NR_ROWS, ROW_TOKENS);
}

FIXTURE_TEARDOWN(step)
{
	kt_pool_fini(_metadata, &self->pool);
}

static __u32 *big_buf(void)
{
	static __u32 buf[BIG + 64];

	return buf;
}

/* The stepped path gives the answer one hold would. */
TEST_F(step, big_extend_release_answer)
{
	static __u32 q[BIG + 64];
	int fd = kt_pool_open(_metadata, &self->pool);
	struct kvpool_extend_entry e[2];
	struct kvpool_row_query rq;
	struct kvpool_handle h[2];
	struct kvpool_extend x;
	struct kvpool_len_entry sw = { 0 };
	struct kvpool_batch b;
	struct kvpool_stats st;
	__u32 *ids = big_buf(), sh, i, same = 0;

	ASSERT_EQ(0, kt_row_alloc(fd, 2, h, &sh));
	memset(e, 0, sizeof(e));
	e[0].handle = h[0];
	e[0].new_len = BIG;
	e[1].handle = h[1];
	e[1].new_len = 7;
	ASSERT_EQ(0, kt_extend(fd, e, 2, ids, BIG + 64, &x));
	EXPECT_EQ(BIG + 7, x.out_nr_pages);
	EXPECT_EQ(BIG, e[0].out_nr_new);
	EXPECT_EQ(7, e[1].out_nr_new);
	ASSERT_EQ(0, kt_query(fd, h[0], q, BIG + 64, &rq));
	EXPECT_EQ(BIG, rq.out_allocated_len);
	EXPECT_EQ(BIG, rq.out_nr_pages);
	/* Entry order: the first entry's ids first, as the row holds them. */
	for (i = 0; i < BIG; i++)
		same += q[i] == ids[i];
	EXPECT_EQ(BIG, same);
	ASSERT_EQ(0, kt_stats(fd, &st));
	EXPECT_EQ(self->pool.usable_pages - BIG - 7, st.out_free_pages);
	kt_expect_verify(_metadata, &self->pool, fd);

	/* TRIM past a short commit, then the window past most of it. */
	ASSERT_EQ(0, kt_commit1(fd, h[0], 100));
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(0, kt_batch(fd, KVPOOL_TRIM, 0, h, 1, &b));
	EXPECT_EQ(BIG - 100, b.out_nr_pages);
	ASSERT_EQ(0, kt_grow(fd, h[0], BIG));
	ASSERT_EQ(0, kt_commit1(fd, h[0], BIG));
	sw.handle = h[0];
	sw.len = BIG - 10;
	ASSERT_EQ(0, kt_batch(fd, KVPOOL_SWA_FREE, 0, &sw, 1, &b));
	EXPECT_EQ(BIG - 10, b.out_nr_pages);
	ASSERT_EQ(0, kt_query(fd, h[0], q, BIG + 64, &rq));
	EXPECT_EQ(BIG, rq.out_nr_pages);
	EXPECT_EQ(KVPOOL_PAGE_NONE, q[BIG - 11]);
	EXPECT_NE(KVPOOL_PAGE_NONE, q[BIG - 10]);
	kt_expect_verify(_metadata, &self->pool, fd);

	memset(&b, 0, sizeof(b));
	ASSERT_EQ(0, kt_batch(fd, KVPOOL_RELEASE, 0, h, 2, &b));
	EXPECT_EQ(10 + 7, b.out_nr_pages);
	EXPECT_EQ(ENOENT, kt_query(fd, h[0], q, BIG + 64, &rq));
	ASSERT_EQ(0, kt_stats(fd, &st));
	EXPECT_EQ(self->pool.usable_pages, st.out_free_pages);
	EXPECT_EQ(0, st.out_client_rows);
	kt_expect_verify(_metadata, &self->pool, fd);
}

/* DONATE and RELEASE with the flag, both stepped, through the driver. */
TEST_F(step, big_donate)
{
	int fd = kt_pool_open(_metadata, &self->pool);
	struct kvpool_handle h;
	struct kvpool_stats st;
	__u32 sh, n;

	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, &sh));
	ASSERT_EQ(0, kt_grow(fd, h, BIG));
	ASSERT_EQ(0, kt_commit1(fd, h, BIG - 1));
	ASSERT_EQ(0, kt_donate1(fd, h, STEP + 50, &n));
	EXPECT_EQ(STEP + 50, n);
	ASSERT_EQ(0, kt_release_donate1(fd, h, &n));
	EXPECT_EQ(1, n);	/* the uncommitted page; the rest is cached */
	ASSERT_EQ(0, kt_stats(fd, &st));
	EXPECT_EQ(BIG - 1, st.out_client_cache_pages);
	EXPECT_EQ(BIG - 1, st.out_cache_evictable);
	EXPECT_EQ(0, st.out_client_rows);
	kt_expect_verify(_metadata, &self->pool, fd);
}

struct busy_arg {
	int fd;
	__u32 rounds;
	struct kvpool_handle cur;	/* the big row, while it exists */
	int err;			/* the first unexpected errno */
	int line;
	volatile int done;
};

/* ROUNDS of: a row, one EXTEND to BIG, one RELEASE. */
static void *big_worker(void *p)
{
	struct busy_arg *a = p;
	__u32 *ids = malloc((BIG + 64) * sizeof(*ids));
	struct kvpool_handle h;
	__u32 i, sh, freed, nr;
	int ret;

	for (i = 0; ids && i < a->rounds && !a->err; i++) {
		ret = kt_row_alloc(a->fd, 1, &h, &sh);
		if (ret) {
			a->err = ret;
			a->line = __LINE__;
			break;
		}
		__atomic_store(&a->cur, &h, __ATOMIC_SEQ_CST);
		ret = kt_extend1(a->fd, h, BIG, ids, BIG + 64, &nr);
		if (!ret && nr != BIG)
			ret = ERANGE;
		if (!ret)
			ret = kt_release1(a->fd, h, &freed);
		if (!ret && freed != BIG)
			ret = ERANGE;
		if (ret) {
			a->err = ret;
			a->line = __LINE__;
		}
	}
	free(ids);
	__atomic_store_n(&a->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * Another thread of the same client names the big row mid-op: EBUSY, or
 * what it would get before or after (the row held, released, re-held).
 * Its own row is never busy.
 */
TEST_F(step, same_client_threads)
{
	struct busy_arg a = { .rounds = ROUNDS };
	struct kvpool_row_query rq;
	unsigned long busy = 0, seen = 0, odd = 0;
	struct kvpool_handle mine, h;
	__u32 sh, len = 1;
	pthread_t th;
	int ret;

	a.fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_row_alloc(a.fd, 1, &mine, &sh));
	ASSERT_EQ(0, pthread_create(&th, NULL, big_worker, &a));
	while (!__atomic_load_n(&a.done, __ATOMIC_SEQ_CST)) {
		__atomic_load(&a.cur, &h, __ATOMIC_SEQ_CST);
		ret = kt_query(a.fd, h, NULL, 0, &rq);
		seen++;
		if (ret == EBUSY)
			busy++;
		else if (ret && ret != ENOENT && ret != ESTALE)
			odd++;
		/* A decode step of its own row: never refused. */
		if (len < STEP / 2) {
			ret = kt_grow(a.fd, mine, ++len);
			EXPECT_EQ(0, ret);
			EXPECT_EQ(0, kt_commit1(a.fd, mine, len));
		}
	}
	pthread_join(th, NULL);
	EXPECT_EQ(0, a.err) TH_LOG("big worker: line %d: %s", a.line,
				   strerror(a.err));
	EXPECT_EQ(0, odd);
	TH_LOG("%lu queries of the big row, %lu answered EBUSY; own row at %u tokens",
	       seen, busy, len);
	EXPECT_EQ(0, kt_release1(a.fd, mine, &sh));
	kt_expect_verify(_metadata, &self->pool, a.fd);
}

/*
 * A second client, in another process, does decode steps and VERIFY
 * while the first extends and releases BIG rows: every step succeeds
 * (the pool has room for both) and every VERIFY, which sees whatever
 * state lies between two steps, is clean.
 */
TEST_F(step, other_client_sees_whole_states)
{
	struct kvpool_handle h;
	struct kvpool_verify v;
	unsigned long verifies = 0, steps = 0;
	struct busy_arg a = { .rounds = ROUNDS };
	__u32 sh, len = 0;
	int fd, status;
	pid_t pid;

	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		a.fd = kt_open_id(self->pool.id, O_RDWR);
		CHILD_CHECK(a.fd >= 0);
		big_worker(&a);
		if (a.err)
			fprintf(stderr, "# big worker: line %d: %s\n", a.line,
				strerror(a.err));
		_exit(a.err ? 1 : 0);
	}
	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, &sh));
	while (kt_pool_trywait(&self->pool, pid, &status) == 0) {
		ASSERT_EQ(0, kt_verify(fd, &v));
		EXPECT_EQ(0, v.out_violations);
		verifies++;
		if (len < STEP / 2) {
			EXPECT_EQ(0, kt_grow(fd, h, ++len));
			steps++;
		}
	}
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("status %#x", status);
	TH_LOG("%lu clean VERIFYs and %lu steps during the big ops",
	       verifies, steps);
	EXPECT_LT(0, verifies);
	EXPECT_EQ(0, kt_release1(fd, h, &sh));
	kt_expect_verify(_metadata, &self->pool, fd);
}

/*
 * Control ops while the pool is busy: on it and on another pool they
 * succeed; destroying it is EBUSY; a pool being destroyed answers a
 * control op with ENODEV or lets it run before, never anything else.
 */
TEST_F(step, control_ops_while_busy)
{
	struct busy_arg a = { .rounds = ROUNDS };
	__u32 other, id, i, ok = 0, gone = 0;
	pthread_t th;
	int ret;

	a.fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, 1024, 1, 4, 1024, &other));
	ASSERT_EQ(0, pthread_create(&th, NULL, big_worker, &a));
	while (!__atomic_load_n(&a.done, __ATOMIC_SEQ_CST)) {
		EXPECT_EQ(0, kt_set_wmark(self->pool.ctl, other, 10, 20));
		EXPECT_EQ(0, kt_set_wmark(self->pool.ctl, self->pool.id, 0, 0));
		EXPECT_EQ(EBUSY, kt_destroy(self->pool.ctl, self->pool.id));
	}
	pthread_join(th, NULL);
	EXPECT_EQ(0, a.err) TH_LOG("big worker: line %d: %s", a.line,
				   strerror(a.err));
	EXPECT_EQ(0, kt_destroy(self->pool.ctl, other));
	EXPECT_EQ(ENODEV, kt_set_wmark(self->pool.ctl, other, 10, 20));
	EXPECT_EQ(ENODEV, kt_destroy(self->pool.ctl, other));

	/* Destroy against control ops from another process. */
	for (i = 0; i < 20; i++) {
		pid_t pid;
		int status;

		ASSERT_EQ(0, kt_create(self->pool.ctl, 0, 64, 1, 4, 64, &id));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			int ctl = kt_ctl_open();

			for (;;) {
				ret = kt_set_wmark(ctl, id, 1, 2);
				if (ret == ENODEV)
					_exit(0);
				if (ret)
					_exit(2);
			}
		}
		usleep(100 * (i % 5));
		EXPECT_EQ(0, kt_destroy(self->pool.ctl, id));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("status %#x", status);
		ret = kt_set_wmark(self->pool.ctl, id, 1, 2);
		/* The id may be another pool's by now: none is made here. */
		if (ret == ENODEV)
			gone++;
		else
			ok++;
	}
	EXPECT_EQ(20, gone);
	EXPECT_EQ(0, ok);
}

/* A row of BIG pages and a slot of STEP + 1: a child's holding. */
static int hold_big(int fd)
{
	struct kvpool_handle h[2];
	__u32 *ids = big_buf(), sh, nr;
	int ret;

	ret = kt_row_alloc(fd, 2, h, &sh);
	if (!ret)
		ret = kt_extend1(fd, h[0], BIG - STEP - 1, ids, BIG + 64, &nr);
	if (!ret)
		ret = kt_extend1(fd, h[1], STEP + 1, ids, BIG + 64, &nr);
	if (!ret)
		ret = kt_to_slot(fd, 7, h[1], &nr);
	return ret;
}

/*
 * A client holding most of the pool is killed: its close gives it all
 * back in steps (and, with an arena, holds it back in quarantine, which
 * ends in steps too), and every VERIFY another client makes meanwhile is
 * clean. @arena: the pool has one.
 */
static void killed_holder(struct __test_metadata *_metadata,
			  struct kt_pool *pool, bool arena)
{
	struct kvpool_verify v;
	unsigned long verifies = 0;
	int ready[2], fd;
	__u64 q = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	fd = kt_pool_open(_metadata, pool);
	pid = kt_pool_fork(_metadata, pool);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = kt_open_id(pool->id, O_RDWR | O_CLOEXEC);

		CHILD_CHECK(cfd >= 0);
		CHILD_CHECK(hold_big(cfd) == 0);
		kt_child_signal(ready[1], 'h');
		for (;;)
			pause();
	}
	ASSERT_EQ('h', kt_pipe_wait(ready[0]));
	EXPECT_EQ(pool->usable_pages - BIG,
		  kt_sysfs_val(pool->id, "free_pages"));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	while (kt_pool_trywait(pool, pid, &ready[1]) == 0) {
		ASSERT_EQ(0, kt_verify(fd, &v));
		EXPECT_EQ(0, v.out_violations);
		verifies++;
	}
	if (arena) {
		q = kt_sysfs_val(pool->id, "quarantine_pages");
		EXPECT_LE(0, kt_quarantine_settle(fd));
	}
	TH_LOG("%lu clean VERIFYs while it closed; %llu pages quarantined",
	       verifies, (unsigned long long)q);
	EXPECT_EQ(pool->usable_pages, kt_sysfs_val(pool->id, "free_pages"));
	kt_expect_verify(_metadata, pool, fd);
	close(ready[0]);
}

TEST_F(step, killed_big_holder)
{
	killed_holder(_metadata, &self->pool, false);
}

/* The same pool with a host arena: 64-byte pages, 4 MiB of memfd. */
#define Q_PB		64
#define Q_PAGES		(4 * STEP)

FIXTURE(stepq) {
	struct kt_pool pool;
};

FIXTURE_SETUP(stepq)
{
	kt_pool_init(_metadata, &self->pool, 0, Q_PAGES, 1, NR_ROWS,
		     ROW_TOKENS);
	ASSERT_EQ(0, kt_host_arena(self->pool.ctl, self->pool.id, Q_PAGES,
				   Q_PB));
}

FIXTURE_TEARDOWN(stepq)
{
	kt_pool_fini(_metadata, &self->pool);
}

TEST_F(stepq, killed_big_holder_quarantined)
{
	killed_holder(_metadata, &self->pool, true);
}

TEST_HARNESS_MAIN
