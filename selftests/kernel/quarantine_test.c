// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: a dead client's pages (design.md, "A dead client's
 * pages").
 *
 * On a pool with an arena, the pages of the rows and slots a client
 * still held at its last close are quarantined, not freed, until no
 * process that used the client (its opener, or any that made an ioctl on
 * it) is alive: one of them may have GPU work in flight that writes
 * them. Checked here: such pages are counted (STATS, sysfs), are not
 * handed out while a user lives (ENOSPC for the last of them), and come
 * back once it has exited; a process that only inherited the file is not
 * waited for, one that used it is; a process is alive while any of its
 * threads is; cache pages and pools without an arena are not held back;
 * a pool can be destroyed with pages in quarantine.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <pthread.h>
#include <sys/syscall.h>

#define NR_PAGES	64
#define PT		16
#define NR_ROWS		8
#define ROW_TOKENS	(NR_PAGES * PT)
#define PB		4096u
#define HELD		12	/* pages a dying client holds */

FIXTURE(quar) {
	struct kt_pool pool;
	int fd;
};

static void give_arena(struct __test_metadata *_metadata,
		       FIXTURE_DATA(quar) *self)
{
	ASSERT_EQ(0, kt_host_arena(self->pool.ctl, self->pool.id, NR_PAGES,
				   PB));
}

FIXTURE_SETUP(quar)
{
	kt_pool_init(_metadata, &self->pool, 0, NR_PAGES, PT, NR_ROWS,
		     ROW_TOKENS);
	give_arena(_metadata, self);
	self->fd = kt_pool_open(_metadata, &self->pool);
}

FIXTURE_TEARDOWN(quar)
{
	kt_pool_fini(_metadata, &self->pool);
}

static __u32 quarantined(int fd)
{
	struct kvpool_stats s;

	return kt_stats(fd, &s) ? ~0u : s.out_quarantine_pages;
}

/* Waits up to KT_SETTLE_MS for the quarantine to empty. */
static bool settles(int fd)
{
	return kt_quarantine_settle(fd) >= 0;
}

/* A held row of @pages pages on @fd, @commit of them written. */
static int new_row(int fd, __u32 pages, __u32 commit,
		   struct kvpool_handle *h)
{
	int ret = kt_row_alloc(fd, 1, h, NULL);

	if (!ret)
		ret = kt_grow(fd, *h, pages * PT);
	if (!ret && commit)
		ret = kt_commit1(fd, *h, commit * PT);
	return ret;
}

/* A row of @pages pages on @fd, left held. */
static int hold_pages(int fd, __u32 pages)
{
	struct kvpool_handle h;

	return new_row(fd, pages, 0, &h);
}

/*
 * In a forked child: open pool @id, hold @pages pages, close the file
 * (its last reference: the pages are taken back now), say @c on @ready
 * and live on until told to go on @go.
 */
static void __attribute__((noreturn))
child_close_and_wait(__u32 id, __u32 pages, int ready, char c, int go)
{
	int fd = kt_open_id(id, O_RDWR | O_CLOEXEC);

	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(hold_pages(fd, pages) == 0);
	close(fd);
	kt_child_signal(ready, c);
	kt_pipe_wait(go);
	_exit(0);
}

/*
 * While the pages are held back, every other page can be had and not one
 * more: ENOSPC short by one; then that row is given back.
 */
static void expect_held_back(struct __test_metadata *_metadata, int fd,
			     __u32 held)
{
	struct kvpool_extend_entry e = { .new_len = (NR_PAGES - held + 1) * PT };
	struct kvpool_extend x;
	struct kvpool_stats s;
	__u32 *ids = calloc(NR_PAGES, sizeof(*ids));

	ASSERT_NE(NULL, ids);
	ASSERT_EQ(0, kt_stats(fd, &s));
	EXPECT_EQ(held, s.out_quarantine_pages);
	EXPECT_EQ(NR_PAGES - held, s.out_free_pages);
	EXPECT_EQ(0, s.out_row_pages + s.out_slot_pages);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &e.handle, NULL));
	EXPECT_EQ(ENOSPC, kt_extend(fd, &e, 1, ids, NR_PAGES, &x));
	EXPECT_EQ(1, x.out_short);
	e.new_len -= PT;
	EXPECT_EQ(0, kt_extend(fd, &e, 1, ids, NR_PAGES, &x));
	EXPECT_EQ(0, kt_release1(fd, e.handle, NULL));
	free(ids);
}

/*
 * A child that opens the pool, holds HELD pages, closes the file (the
 * last reference: the pages are taken back now) and stays alive until
 * told to go. The test sees them held back while it lives and free once
 * it has exited.
 */
TEST_F(quar, closed_while_alive)
{
	int go[2], ready[2];
	pid_t pid;
	__u64 v;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pid);
	if (pid == 0)
		child_close_and_wait(self->pool.id, HELD, ready[1], 'c', go[0]);
	ASSERT_EQ('c', kt_pipe_wait(ready[0]));
	expect_held_back(_metadata, self->fd, HELD);
	ASSERT_EQ(0, kt_sysfs_u64(self->pool.id, "quarantine_pages", &v));
	EXPECT_EQ(HELD, v);
	usleep(300 * 1000);	/* past the pool's first few looks */
	EXPECT_EQ(HELD, quarantined(self->fd)) TH_LOG("its user is alive");
	kt_expect_verify(_metadata, &self->pool, self->fd);

	kt_child_signal(go[1], 'g');
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&self->pool, pid)));
	EXPECT_TRUE(settles(self->fd)) TH_LOG("after the exit: %u",
						    quarantined(self->fd));
	EXPECT_EQ(NR_PAGES, kt_sysfs_val(self->pool.id, "free_pages"));
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/* SIGKILLed with its file open: held back, then free, the pool sound. */
TEST_F(quar, killed)
{
	int ready[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	pid = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);

		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold_pages(fd, HELD) == 0);
		kt_child_signal(ready[1], 'h');
		for (;;)
			pause();
	}
	ASSERT_EQ('h', kt_pipe_wait(ready[0]));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(settles(self->fd));
	EXPECT_EQ(NR_PAGES, kt_sysfs_val(self->pool.id, "free_pages"));
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/*
 * The opener A forks B and C, which inherit the file. B makes an ioctl
 * on it and so becomes a user; C never does. A closes its copy and
 * exits; B closes its copy and stays: the pages wait for B, not for C,
 * which holds the last reference and closes it while alive.
 */
TEST_F(quar, users)
{
	int b_go[2], c_go[2], ready[2];
	pid_t a;
	char ch;

	ASSERT_EQ(0, pipe(b_go));
	ASSERT_EQ(0, pipe(c_go));
	ASSERT_EQ(0, pipe(ready));
	a = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, a);
	if (a == 0) {
		struct kvpool_stats s;
		int fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		pid_t kid;

		/* B and C outlive A: they must not keep the test's client. */
		close(self->fd);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold_pages(fd, HELD) == 0);
		kid = fork();
		CHILD_CHECK(kid >= 0);
		if (kid == 0) {		/* B: a user */
			CHILD_CHECK(kt_stats(fd, &s) == 0);
			close(fd);
			kt_child_signal(ready[1], 'b');
			kt_pipe_wait(b_go[0]);
			_exit(0);
		}
		kid = fork();
		CHILD_CHECK(kid >= 0);
		if (kid == 0) {		/* C: holds the file, never uses it */
			kt_child_signal(ready[1], 'c');
			kt_pipe_wait(c_go[0]);
			close(fd);
			kt_child_signal(ready[1], 'C');
			kt_pipe_wait(c_go[0]);
			_exit(0);
		}
		/* A reaps neither: the test kills them if it fails. */
		close(fd);
		_exit(0);
	}
	ch = kt_pipe_wait(ready[0]);
	ch ^= kt_pipe_wait(ready[0]);
	ASSERT_EQ('b' ^ 'c', ch);
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&self->pool, a)));
	/* B and C are the init's children now: found by the pipes. */
	EXPECT_EQ(0, quarantined(self->fd)) TH_LOG("C still holds the file");
	kt_child_signal(c_go[1], 'x');
	ASSERT_EQ('C', kt_pipe_wait(ready[0]));
	/* A is gone, C never used it: B, who did, is what it waits for. */
	usleep(300 * 1000);
	EXPECT_EQ(HELD, quarantined(self->fd));
	kt_child_signal(b_go[1], 'x');
	EXPECT_TRUE(settles(self->fd)) TH_LOG("after B: %u",
						    quarantined(self->fd));
	kt_child_signal(c_go[1], 'x');
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/* A process lives while any of its threads does, its leader gone or not. */
static int thread_go[2];

static void *last_thread(void *arg)
{
	(void)arg;
	kt_pipe_wait(thread_go[0]);
	/* The whole process goes with its last thread. */
	syscall(SYS_exit, 0);
	return NULL;
}

TEST_F(quar, threads)
{
	int ready[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(thread_go));
	ASSERT_EQ(0, pipe(ready));
	pid = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		pthread_t t;

		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold_pages(fd, HELD) == 0);
		CHILD_CHECK(pthread_create(&t, NULL, last_thread, NULL) == 0);
		close(fd);
		kt_child_signal(ready[1], 't');
		/* The leader leaves; the process lives on in its thread. */
		pthread_exit(NULL);
	}
	ASSERT_EQ('t', kt_pipe_wait(ready[0]));
	usleep(300 * 1000);
	EXPECT_EQ(HELD, quarantined(self->fd)) TH_LOG("a thread lives");
	kt_child_signal(thread_go[1], 'x');
	kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(settles(self->fd));
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/*
 * What a client gave up itself goes back at once: its prefix cache's
 * pages and rows it released. Its parked slot's pages are held back with
 * its rows'.
 */
TEST_F(quar, what_is_held)
{
	int go[2], ready[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvpool_handle h;
		__u32 n;
		int fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);

		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(new_row(fd, 6, 6, &h) == 0);
		CHILD_CHECK(kt_release_donate1(fd, h, NULL) == 0);
		CHILD_CHECK(new_row(fd, 4, 0, &h) == 0);
		CHILD_CHECK(kt_release1(fd, h, NULL) == 0);
		CHILD_CHECK(new_row(fd, 5, 0, &h) == 0);
		CHILD_CHECK(kt_to_slot(fd, 9, h, &n) == 0);
		CHILD_CHECK(hold_pages(fd, 3) == 0);
		close(fd);
		kt_child_signal(ready[1], 'w');
		kt_pipe_wait(go[0]);
		_exit(0);
	}
	ASSERT_EQ('w', kt_pipe_wait(ready[0]));
	expect_held_back(_metadata, self->fd, 5 + 3);
	kt_child_signal(go[1], 'g');
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&self->pool, pid)));
	EXPECT_TRUE(settles(self->fd));
}

/* Pools of their own, made and destroyed by the test. */
FIXTURE(bare) {
	int unused;
};

FIXTURE_SETUP(bare)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(bare)
{
}

/* Without an arena the ids name no memory: nothing is held back. */
TEST_F(bare, no_arena)
{
	struct kt_pool pool;
	int go[2], ready[2], fd;
	pid_t pid;

	kt_pool_init(_metadata, &pool, 0, NR_PAGES, PT, NR_ROWS, ROW_TOKENS);
	fd = kt_pool_open(_metadata, &pool);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = kt_pool_fork(_metadata, &pool);
	ASSERT_LE(0, pid);
	if (pid == 0)
		child_close_and_wait(pool.id, HELD, ready[1], 'n', go[0]);
	ASSERT_EQ('n', kt_pipe_wait(ready[0]));
	EXPECT_EQ(0, quarantined(fd));
	EXPECT_EQ(NR_PAGES, kt_sysfs_val(pool.id, "free_pages"));
	kt_child_signal(go[1], 'g');
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&pool, pid)));
	kt_pool_fini(_metadata, &pool);
}

/*
 * A pool can go with pages in quarantine: they are nobody's once it is
 * gone. Its user is still alive when it does.
 */
TEST_F(bare, destroy_held)
{
	struct kvpool_arena_chunk ch = { .bytes = (__u64)NR_PAGES * PB };
	int ctl = kt_ctl_open(), go[2], ready[2], before;
	__u32 id;
	pid_t pid;

	ASSERT_LE(0, ctl);
	before = kt_count_pools();
	ASSERT_EQ(0, kt_create(ctl, 0, NR_PAGES, PT, NR_ROWS, ROW_TOKENS, &id));
	ch.fd = kt_host_memfd(ch.bytes);
	ASSERT_LE(0, ch.fd);
	ASSERT_EQ(0, kt_arena_set(ctl, id, KVPOOL_ARENA_HOST, PB, &ch, 1,
				  NULL));
	close(ch.fd);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		child_close_and_wait(id, HELD, ready[1], 'd', go[0]);
	ASSERT_EQ('d', kt_pipe_wait(ready[0]));
	EXPECT_EQ(0, kt_destroy(ctl, id));
	EXPECT_EQ(before, kt_count_pools());
	kt_child_signal(go[1], 'g');
	EXPECT_TRUE(waitpid(pid, NULL, 0) == pid);
	close(ctl);
}

TEST_HARNESS_MAIN
