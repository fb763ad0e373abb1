// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: client lifetime and concurrency.
 *
 * A client is an open file: whatever it holds goes back when the last
 * reference to the file goes, however that happens (exit, SIGKILL, close
 * after fork, dup, SCM_RIGHTS, exec with O_CLOEXEC). Several processes and
 * threads hammering one pool leave it whole. Processes synchronise through
 * pipes, never sleeps.
 *
 * And the device's own lifetime: CTL_DESTROY racing the last close while
 * other threads open the node and read sysfs; open() of misc devices
 * staying fast while a big pool's lock is busy; the module's version; and
 * unloading the module, failed loads with bad parameters while a child
 * keeps opening the control device, and the reload.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define NR_PAGES	4096
#define NR_ROWS		64
#define ROW_TOKENS	8192

FIXTURE(life) {
	struct kt_pool pool;
	int fd;		/* the observer */
	__u32 pt;
};

FIXTURE_VARIANT(life) {
	__u32 page_tokens;
};

FIXTURE_VARIANT_ADD(life, pt1) {
	.page_tokens = 1,
};

FIXTURE_VARIANT_ADD(life, pt16) {
	.page_tokens = 16,
};

FIXTURE_SETUP(life)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, variant->page_tokens, NR_ROWS, ROW_TOKENS);
	self->fd = kt_pool_open(_metadata, &self->pool);
	self->pt = variant->page_tokens;
}

FIXTURE_TEARDOWN(life)
{
	kt_pool_fini(_metadata, &self->pool);
}

/*
 * What the holder below takes: 3 rows of 5, 2 and 9 pages' worth of
 * tokens, the last one parked in a slot.
 */
#define HOLD_ROW_PAGES	7
#define HOLD_SLOT_PAGES	9
#define HOLD_PAGES	(HOLD_ROW_PAGES + HOLD_SLOT_PAGES)

/* Take rows, pages and a slot on fd. Returns 0 or the failing line. */
static int hold(int fd, __u32 pt, struct kvpool_handle h[3])
{
	if (kt_row_alloc(fd, 3, h, NULL))
		return __LINE__;
	if (kt_grow(fd, h[0], 5 * pt) ||
	    kt_grow(fd, h[1], 2 * pt - (pt > 1)) ||
	    kt_grow(fd, h[2], 9 * pt))
		return __LINE__;
	if (kt_commit1(fd, h[0], 3))
		return __LINE__;
	if (kt_to_slot(fd, 0xfeedull << 32, h[2], NULL))
		return __LINE__;
	return 0;
}

/* What the observer sees while someone holds what hold() took. */
static void expect_held(struct __test_metadata *_metadata,
			FIXTURE_DATA(life) *self, __u32 nr_clients)
{
	struct kvpool_stats s;

	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(self->pool.usable_pages - HOLD_PAGES, s.out_free_pages);
	EXPECT_EQ(HOLD_ROW_PAGES, s.out_row_pages);
	EXPECT_EQ(HOLD_SLOT_PAGES, s.out_slot_pages);
	EXPECT_EQ(2, s.out_held_rows);
	EXPECT_EQ(1, s.out_slot_rows);
	EXPECT_EQ(nr_clients, s.out_nr_clients);
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_pages);
	kt_check_identities(_metadata, &self->pool, &s);
}

/* A child that exits normally gives everything back. */
TEST_F(life, child_exit)
{
	int ready[2], go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle h[3];
		int fd;

		close(ready[0]);
		close(go[1]);
		fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold(fd, self->pt, h) == 0);
		kt_child_signal(ready[1], 'r');
		kt_pipe_wait(go[0]);
		_exit(0);	/* no close: exit drops the file */
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	expect_held(_metadata, self, 2);
	close(go[1]);
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(ready[0]);
}

/* SIGKILL while holding: the same. */
TEST_F(life, child_sigkill)
{
	int ready[2], go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle h[3];
		int fd;

		close(ready[0]);
		close(go[1]);
		fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold(fd, self->pt, h) == 0);
		kt_child_signal(ready[1], 'r');
		for (;;)
			kt_pipe_wait(go[0]);	/* until killed */
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	expect_held(_metadata, self, 2);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(ready[0]);
	close(go[1]);
}

/* SIGKILL in the middle of a stream of ioctls. */
TEST_F(life, child_sigkill_busy)
{
	int ready[2], status, round;

	ASSERT_EQ(0, pipe(ready));
	for (round = 0; round < 4; round++) {
		pid_t pid = kt_pool_fork(_metadata, &self->pool);

		if (pid == 0) {
			struct kvpool_handle h[4], kept[8];
			unsigned int i;
			int fd;

			close(ready[0]);
			fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
			CHILD_CHECK(fd >= 0);
			for (i = 0;; i++) {
				CHILD_CHECK(kt_row_alloc(fd, 4, h, NULL) == 0);
				CHILD_CHECK(kt_grow(fd, h[0], 1 + i % 300) == 0);
				CHILD_CHECK(kt_grow(fd, h[1], 40) == 0);
				CHILD_CHECK(kt_to_slot(fd, i, h[2], NULL) == 0);
				CHILD_CHECK(kt_commit1(fd, h[1], 20) == 0);
				CHILD_CHECK(kt_trim1(fd, h[1], NULL) == 0);
				CHILD_CHECK(kt_batch(fd, KVPOOL_RELEASE, 0, h, 2,
						     NULL) == 0);
				CHILD_CHECK(kt_slot_release(fd, i, NULL) == 0);
				CHILD_CHECK(kt_release1(fd, h[3], NULL) == 0);
				/* Keep up to 8 rows: something for release. */
				if (i >= 8)
					CHILD_CHECK(kt_release1(fd, kept[i % 8],
								NULL) == 0);
				CHILD_CHECK(kt_row_alloc(fd, 1, &kept[i % 8],
							 NULL) == 0);
				CHILD_CHECK(kt_grow(fd, kept[i % 8], 5) == 0);
				if (i == 8 + round)
					kt_child_signal(ready[1], 'r');
			}
		}
		ASSERT_EQ('r', kt_pipe_wait(ready[0]));
		ASSERT_EQ(0, kill(pid, SIGKILL));
		status = kt_pool_wait(&self->pool, pid);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("child status %#x", status);
		kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	}
	close(ready[0]);
	close(ready[1]);
}

/*
 * The file outlives its opener's close: a child that inherited it keeps
 * the client, and its rows, until the child closes it.
 */
TEST_F(life, inherited_fd)
{
	int ready[2], go[2], status, fd;
	struct kvpool_handle h[3];
	struct kvpool_info info;
	struct kvpool_stats s;
	pid_t pid;

	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_info(fd, &info));
	ASSERT_EQ(0, hold(fd, self->pt, h));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_row_query q;
		struct kvpool_info ci;

		close(ready[0]);
		close(go[1]);
		kt_child_signal(ready[1], 'r');
		/* The parent has closed its copy now. */
		CHILD_CHECK(kt_pipe_wait(go[0]) == 'q');
		CHILD_CHECK(kt_info(fd, &ci) == 0);
		CHILD_CHECK(ci.out_client_id == info.out_client_id);
		CHILD_CHECK(kt_query(fd, h[0], NULL, 0, &q) == 0);
		CHILD_CHECK(q.out_allocated_len == 5 * self->pt);
		CHILD_CHECK(q.out_committed_len == 3);
		CHILD_CHECK(kt_query_slot(fd, 0xfeedull << 32, NULL, 0, &q) == 0);
		kt_child_signal(ready[1], 'q');
		CHILD_CHECK(kt_pipe_wait(go[0]) == 'c');
		close(fd);
		kt_child_signal(ready[1], 'c');
		kt_pipe_wait(go[0]);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	kt_pool_close(&self->pool, fd);
	/* Closed here, alive there: still 2 clients, nothing freed. */
	expect_held(_metadata, self, 2);
	ASSERT_EQ(1, write(go[1], "q", 1));
	ASSERT_EQ('q', kt_pipe_wait(ready[0]));
	ASSERT_EQ(1, write(go[1], "c", 1));
	ASSERT_EQ('c', kt_pipe_wait(ready[0]));
	/* The child closed the last reference; it is still running. */
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(1, s.out_nr_clients);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(go[1]);
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	close(ready[0]);
}

/* dup() shares the client: closing one fd frees nothing. */
TEST_F(life, dup_fd)
{
	struct kvpool_handle h[3];
	struct kvpool_row_query q;
	int fd, fd2;

	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, hold(fd, self->pt, h));
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	kt_pool_close(&self->pool, fd);
	expect_held(_metadata, self, 2);
	EXPECT_EQ(0, kt_query(fd2, h[0], NULL, 0, &q));
	EXPECT_EQ(0, kt_release1(fd2, h[1], NULL));
	close(fd2);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
}

static int send_fd(int sock, int fd, const void *data, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == (ssize_t)len ? 0 : -1;
}

static int recv_fd(int sock, void *data, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)len)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * SCM_RIGHTS: a child opens a client, takes rows, sends the fd and exits;
 * the receiver now holds the client and its rows.
 */
TEST_F(life, scm_rights)
{
	struct kvpool_handle h[3];
	struct kvpool_row_query q;
	int sv[2], status, fd;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle ch[3];
		int cfd;

		close(sv[0]);
		cfd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(cfd >= 0);
		CHILD_CHECK(hold(cfd, self->pt, ch) == 0);
		CHILD_CHECK(send_fd(sv[1], cfd, ch, sizeof(ch)) == 0);
		close(cfd);
		_exit(0);
	}
	close(sv[1]);
	fd = recv_fd(sv[0], h, sizeof(h));
	ASSERT_LE(0, fd);
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	/* The sender is gone; its client lives in our fd. */
	expect_held(_metadata, self, 2);
	EXPECT_EQ(0, kt_query(fd, h[0], NULL, 0, &q));
	EXPECT_EQ(5 * self->pt, q.out_allocated_len);
	EXPECT_EQ(0, kt_query_slot(fd, 0xfeedull << 32, NULL, 0, &q));
	close(fd);
	close(sv[0]);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
}

/*
 * exec: an O_CLOEXEC client is released by exec itself; without
 * O_CLOEXEC it survives into the new program.
 */
static void exec_case(struct __test_metadata *_metadata,
		      FIXTURE_DATA(life) *self, bool cloexec)
{
	int in[2], out[2], ready[2], status;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe2(in, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(out, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	pid = kt_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle h[3];
		int fd;

		fd = kt_open_id(self->pool.id,
				O_RDWR | (cloexec ? O_CLOEXEC : 0));
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold(fd, self->pt, h) == 0);
		kt_child_signal(ready[1], 'r');
		CHILD_CHECK(dup2(in[0], 0) == 0);
		CHILD_CHECK(dup2(out[1], 1) == 1);
		execl("/bin/sh", "sh", "-c", "echo x; read y", (char *)NULL);
		_exit(2);
	}
	close(in[0]);
	close(out[1]);
	close(ready[1]);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	/* "x" comes from the new program: exec is complete. */
	ASSERT_EQ(1, read(out[0], &c, 1));
	ASSERT_EQ('x', c);
	if (cloexec)
		kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	else
		expect_held(_metadata, self, 2);
	ASSERT_EQ(1, write(in[1], "\n", 1));
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(in[1]);
	close(out[0]);
	close(ready[0]);
}

TEST_F(life, exec_cloexec)
{
	exec_case(_metadata, self, true);
}

TEST_F(life, exec_no_cloexec)
{
	exec_case(_metadata, self, false);
}

/* ---- concurrency ------------------------------------------------------- */

#define WORKERS		4
#define ITERS		200
#define WORK_TOKENS	(32u)	/* pages per row at most: 32 */

static __u32 rnd(unsigned int *seed, __u32 n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) % n;
}

/*
 * One round of a request's life on fd: alloc two rows, extend both in one
 * batch, check ROW_QUERY against EXTEND, commit and trim one, every fourth
 * round park the other in a slot and take it back, release both. With
 * own_client the client's own STATS figures are checked too. Returns 0, or
 * the line of the first failed check.
 */
static int work_round(int fd, __u32 pt, unsigned int *seed, __u64 session,
		      bool own_client)
{
	__u32 pages[2 * WORK_TOKENS], qp[WORK_TOKENS], len[2], c, n, want;
	struct kvpool_extend_entry e[2];
	struct kvpool_handle h[2], nh;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct kvpool_extend x;
	struct kvpool_batch b;
	int i;

#define W_CHECK(cond) do { if (!(cond)) return __LINE__; } while (0)
	W_CHECK(kt_row_alloc(fd, 2, h, NULL) == 0);
	for (i = 0; i < 2; i++) {
		len[i] = 1 + rnd(seed, WORK_TOKENS * pt);
		e[i] = (struct kvpool_extend_entry){ .handle = h[i],
						     .new_len = len[i] };
	}
	W_CHECK(kt_extend(fd, e, 2, pages, ARRAY_SIZE(pages), &x) == 0);
	want = kt_div_up(len[0], pt) + kt_div_up(len[1], pt);
	W_CHECK(x.out_nr_pages == want);
	W_CHECK(kt_query(fd, h[0], qp, ARRAY_SIZE(qp), &q) == 0);
	W_CHECK(q.out_allocated_len == len[0]);
	W_CHECK(q.out_nr_pages == e[0].out_nr_new);
	W_CHECK(!memcmp(qp, pages, q.out_nr_pages * sizeof(__u32)));
	if (own_client) {
		W_CHECK(kt_stats(fd, &st) == 0);
		W_CHECK(st.out_client_rows == 2);
		W_CHECK(st.out_client_pages == want);
	}

	c = rnd(seed, len[0] + 1);
	W_CHECK(kt_commit1(fd, h[0], c) == 0);
	W_CHECK(kt_trim1(fd, h[0], &n) == 0);
	W_CHECK(n == kt_div_up(len[0], pt) - kt_div_up(c, pt));

	if (rnd(seed, 4) == 0) {
		W_CHECK(kt_to_slot(fd, session, h[1], &n) == 0);
		W_CHECK(n == kt_div_up(len[1], pt));
		W_CHECK(kt_to_slot(fd, session, h[0], &n) == EEXIST);
		W_CHECK(kt_from_slot(fd, session, &nh, &n) == 0);
		W_CHECK(nh.req_pool_idx == h[1].req_pool_idx);
		W_CHECK(nh.generation == h[1].generation + 1);
		h[1] = nh;
	}
	W_CHECK(kt_batch(fd, KVPOOL_RELEASE, 0, h, 2, &b) == 0);
	W_CHECK(b.out_nr_pages == kt_div_up(c, pt) + kt_div_up(len[1], pt));
	/*
	 * Released: ENOENT, or ESTALE once another user of the same client
	 * has taken the row again.
	 */
	n = kt_release1(fd, h[0], NULL);
	W_CHECK(n == ENOENT || (!own_client && n == ESTALE));
	if (own_client) {
		W_CHECK(kt_stats(fd, &st) == 0);
		W_CHECK(st.out_client_rows == 0 && st.out_client_slots == 0);
		W_CHECK(st.out_client_pages == 0);
	}
#undef W_CHECK
	return 0;
}

/*
 * The observer's side while workers run: VERIFY and the STATS identities
 * must hold at every instant.
 */
static void observe(struct __test_metadata *_metadata,
		    FIXTURE_DATA(life) *self)
{
	struct kvpool_verify v;
	struct kvpool_stats s;

	EXPECT_EQ(0, kt_verify(self->fd, &v));
	EXPECT_EQ(0, v.out_violations);
	EXPECT_EQ(0, kt_stats(self->fd, &s));
	kt_check_identities(_metadata, &self->pool, &s);
}

/* Four processes, each its own client, 200 rounds each, at once. */
TEST_F_TIMEOUT(life, processes, 300)
{
	pid_t pids[WORKERS];
	int go[2], i, done = 0, status;

	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < WORKERS; i++) {
		pids[i] = kt_pool_fork(_metadata, &self->pool);
		if (pids[i] == 0) {
			unsigned int seed = 1 + i, r;
			int fd, line;

			close(go[1]);
			fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
			CHILD_CHECK(fd >= 0);
			kt_pipe_wait(go[0]);	/* start together */
			for (r = 0; r < ITERS; r++) {
				line = work_round(fd, self->pt, &seed, r, true);
				if (line) {
					fprintf(stderr, "# worker %d round %u: check at line %d failed (errno %d)\n",
						i, r, line, errno);
					_exit(1);
				}
			}
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]);	/* EOF: all start */
	/* Watch while they run. */
	while (done < WORKERS) {
		observe(_metadata, self);
		for (i = 0; i < WORKERS; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				EXPECT_TRUE(KT_CHILD_OK(status))
					TH_LOG("worker %d status %#x", i, status);
				kt_pool_wait(&self->pool, pids[i]);
				pids[i] = 0;
				done++;
			}
		}
	}
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
}

/* Four processes sharing one client (one inherited fd). */
TEST_F_TIMEOUT(life, processes_one_client, 300)
{
	pid_t pids[WORKERS];
	int go[2], i, fd, status;
	struct kvpool_stats s;

	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < WORKERS; i++) {
		pids[i] = kt_pool_fork(_metadata, &self->pool);
		if (pids[i] == 0) {
			unsigned int seed = 100 + i, r;
			int line;

			close(go[1]);
			kt_pipe_wait(go[0]);
			for (r = 0; r < ITERS; r++) {
				/* Session ids: the client's, so per worker. */
				line = work_round(fd, self->pt, &seed,
						  (__u64)i << 32 | r, false);
				if (line) {
					fprintf(stderr, "# worker %d round %u: check at line %d failed\n",
						i, r, line);
					_exit(1);
				}
			}
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]);
	for (i = 0; i < WORKERS; i++) {
		status = kt_pool_wait(&self->pool, pids[i]);
		EXPECT_TRUE(KT_CHILD_OK(status))
			TH_LOG("worker %d status %#x", i, status);
	}
	ASSERT_EQ(0, kt_stats(fd, &s));
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_slots);
	EXPECT_EQ(0, s.out_client_pages);
	EXPECT_EQ(2, s.out_nr_clients);
	kt_pool_close(&self->pool, fd);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
}

struct thread_arg {
	int fd;
	__u32 pt;
	int id;
	int line;	/* 0, or the failed check */
	unsigned int round;
	pthread_barrier_t *start;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	unsigned int seed = 1000 + a->id;

	pthread_barrier_wait(a->start);
	for (a->round = 0; a->round < ITERS; a->round++) {
		a->line = work_round(a->fd, a->pt, &seed,
				     (__u64)a->id << 32 | a->round, false);
		if (a->line)
			break;
	}
	return NULL;
}

/* Four threads on one fd. */
TEST_F_TIMEOUT(life, threads_one_fd, 300)
{
	struct thread_arg args[WORKERS];
	pthread_t th[WORKERS];
	pthread_barrier_t start;
	struct kvpool_stats s;
	int i, fd;

	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, WORKERS + 1));
	for (i = 0; i < WORKERS; i++) {
		args[i] = (struct thread_arg){ .fd = fd, .pt = self->pt,
					       .id = i, .start = &start };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, thread_main,
					    &args[i]));
	}
	pthread_barrier_wait(&start);
	for (i = 0; i < WORKERS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, args[i].line)
			TH_LOG("thread %d round %u failed at line %d", i,
			       args[i].round, args[i].line);
	}
	pthread_barrier_destroy(&start);
	ASSERT_EQ(0, kt_stats(fd, &s));
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_pages);
	kt_pool_close(&self->pool, fd);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
}

/*
 * Racing the last close against ioctls: threads keep calling on a dup of
 * an fd; the fds are closed under them. The client dies once, cleanly.
 */
struct close_race {
	int fd;
	pthread_barrier_t *start;
	int errors;
};

static void *close_race_main(void *p)
{
	struct close_race *a = p;
	struct kvpool_handle h;
	int i, r;

	pthread_barrier_wait(a->start);
	for (i = 0; i < 2000; i++) {
		r = kt_row_alloc(a->fd, 1, &h, NULL);
		if (r == EBADF)
			break;
		if (r == 0) {
			r = kt_grow(a->fd, h, 17);
			if (r && r != EBADF && r != ENOSPC)
				a->errors++;
		} else if (r != ENOSPC) {
			a->errors++;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(life, close_while_busy, 300)
{
	struct close_race args[2];
	pthread_barrier_t start;
	pthread_t th[2];
	int round, i, fd;

	for (round = 0; round < 8; round++) {
		fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, pthread_barrier_init(&start, NULL, 3));
		for (i = 0; i < 2; i++) {
			args[i] = (struct close_race){ .fd = fd,
						       .start = &start };
			ASSERT_EQ(0, pthread_create(&th[i], NULL,
						    close_race_main, &args[i]));
		}
		pthread_barrier_wait(&start);
		close(fd);
		for (i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			EXPECT_EQ(0, args[i].errors);
		}
		pthread_barrier_destroy(&start);
		kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	}
}

/* ---- destroy against the last close ------------------------------------ */

/* Tests that need no pool of a fixture, only a longer timeout. */
FIXTURE(solo) {
	int unused;
};

FIXTURE_SETUP(solo)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(solo)
{
	self->unused = 0;
}


static long long life_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define LOAD(x)		__atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* One round of the destroy race on pool @id; counts are over all rounds. */
struct drace {
	__u32 id;
	int ctl;
	int stop;		/* the hammering threads stop */
	int destroyed;		/* CTL_DESTROY returned 0 */
	int client_fd;		/* the client the client thread opened */
	pthread_barrier_t *go;	/* client open: the close and destroy race */
	/* results */
	int bad_line, bad_errno;
	long opens, open_fails, reads, busy, rounds;
};

static void drace_bad(struct drace *d, int line, int err)
{
	if (!__atomic_load_n(&d->bad_line, __ATOMIC_RELAXED)) {
		d->bad_errno = err;
		__atomic_store_n(&d->bad_line, line, __ATOMIC_RELAXED);
	}
}

/* Opens and closes the pool's node again and again, with one op each. */
static void *drace_opener(void *p)
{
	struct drace *d = p;
	struct kvpool_info info;
	char path[32];

	kt_dev_path(path, sizeof(path), d->id);
	while (!LOAD(d->stop)) {
		int gone = LOAD(d->destroyed);
		int fd = open(path, O_RDWR | O_CLOEXEC);

		if (fd >= 0) {
			__atomic_add_fetch(&d->opens, 1, __ATOMIC_RELAXED);
			/* A destroyed pool takes no client. */
			if (gone)
				drace_bad(d, __LINE__, 0);
			if (kt_info(fd, &info) || info.out_pool_id != d->id)
				drace_bad(d, __LINE__, errno);
			close(fd);
		} else if (errno == ENOENT || errno == ENODEV ||
			   errno == ENXIO) {
			__atomic_add_fetch(&d->open_fails, 1, __ATOMIC_RELAXED);
		} else {
			drace_bad(d, __LINE__, errno);
		}
		sched_yield();
	}
	return NULL;
}

/*
 * Reads the pool's sysfs files, opening them afresh and through one file
 * kept open across the destroy (which then reads ENODEV or 0 bytes).
 */
static void *drace_reader(void *p)
{
	struct drace *d = p;
	char path[128], buf[64];
	int kept;

	snprintf(path, sizeof(path), KT_SYSFS_FMT, d->id, "nr_clients");
	kept = open(path, O_RDONLY | O_CLOEXEC);
	while (!LOAD(d->stop)) {
		static const char *const names[] = {
			"nr_clients", "free_pages", "pool_id", "held_rows",
		};
		unsigned int i;

		for (i = 0; i < ARRAY_SIZE(names); i++) {
			__u64 v;
			int ret = kt_sysfs_u64(d->id, names[i], &v);

			if (!ret)
				__atomic_add_fetch(&d->reads, 1,
						   __ATOMIC_RELAXED);
			else if (ret != ENOENT && ret != ENODEV)
				drace_bad(d, __LINE__, ret);
		}
		if (kept >= 0) {
			ssize_t n = pread(kept, buf, sizeof(buf), 0);

			if (n < 0 && errno != ENODEV)
				drace_bad(d, __LINE__, errno);
		}
	}
	if (kept >= 0)
		close(kept);
	return NULL;
}

/* The client: open, take a row with pages, wait for the race, close. */
static void *drace_client(void *p)
{
	struct drace *d = p;
	struct kvpool_handle h;
	int fd;

	fd = kt_open_id(d->id, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		drace_bad(d, __LINE__, errno);
	} else if (kt_row_alloc(fd, 1, &h, NULL) || kt_grow(fd, h, 40)) {
		drace_bad(d, __LINE__, errno);
	}
	pthread_barrier_wait(d->go);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* CTL_DESTROY until it works: EBUSY while a client is left. */
static void *drace_destroyer(void *p)
{
	struct drace *d = p;
	long long deadline;
	int ret;

	pthread_barrier_wait(d->go);
	deadline = life_now_ns() + 5000000000LL;
	for (;;) {
		ret = kt_destroy(d->ctl, d->id);
		if (ret == 0) {
			STORE(d->destroyed, 1);
			break;
		}
		if (ret != EBUSY) {
			drace_bad(d, __LINE__, ret);
			break;
		}
		__atomic_add_fetch(&d->busy, 1, __ATOMIC_RELAXED);
		if (life_now_ns() > deadline) {
			/* Starved by the opener: say so, then stop it. */
			drace_bad(d, __LINE__, EBUSY);
			STORE(d->stop, 1);
			deadline = LLONG_MAX;
		}
		sched_yield();
	}
	return NULL;
}

/*
 * Create a pool, have one thread open a client while another keeps
 * opening the node and a third reads the pool's sysfs files, then close
 * the last client while CTL_DESTROY runs on a fourth (retried on EBUSY).
 * Many rounds, bounded to about 3 seconds: meant for the KASAN kernel,
 * where a use of the pool after its destroy shows; the runner checks the
 * kernel log. Each round ends with the pool gone.
 */
TEST_F_TIMEOUT(solo, destroy_vs_last_close, 120)
{
	const long long end = life_now_ns() + 3000000000LL;
	static struct drace d;
	pthread_barrier_t go;
	pthread_t th[4];
	int ctl, pools0, round;
	char path[128];
	struct stat st;

	ctl = kt_ctl_open();
	ASSERT_LE(0, ctl) TH_LOG("open " KT_CTL_PATH ": %s", strerror(errno));
	pools0 = kt_count_pools();
	ASSERT_LE(0, pools0);
	memset(&d, 0, sizeof(d));
	for (round = 0; round < 1000; round++) {
		if (round >= 10 && life_now_ns() > end)
			break;
		d.stop = 0;
		d.destroyed = 0;
		d.ctl = ctl;
		d.go = &go;
		ASSERT_EQ(0, kt_create(ctl, KVPOOL_CREATE_RESERVE_ZERO, 64, 16,
				       8, 256, &d.id));
		ASSERT_EQ(0, pthread_barrier_init(&go, NULL, 2));
		ASSERT_EQ(0, pthread_create(&th[0], NULL, drace_opener, &d));
		ASSERT_EQ(0, pthread_create(&th[1], NULL, drace_reader, &d));
		ASSERT_EQ(0, pthread_create(&th[2], NULL, drace_client, &d));
		ASSERT_EQ(0, pthread_create(&th[3], NULL, drace_destroyer,
					    &d));
		pthread_join(th[2], NULL);
		pthread_join(th[3], NULL);
		/* Let the hammering see the pool gone for a moment. */
		sched_yield();
		STORE(d.stop, 1);
		pthread_join(th[0], NULL);
		pthread_join(th[1], NULL);
		pthread_barrier_destroy(&go);
		d.rounds++;

		ASSERT_EQ(0, d.bad_line)
			TH_LOG("round %d, pool %u: check at line %d failed (%s)",
			       round, d.id, d.bad_line, strerror(d.bad_errno));
		ASSERT_EQ(1, d.destroyed);
		/* Gone: no node, no sysfs folder, no pool of that id. */
		kt_dev_path(path, sizeof(path), d.id);
		EXPECT_EQ(-1, stat(path, &st)) TH_LOG("%s after destroy", path);
		snprintf(path, sizeof(path), KT_SYSFS_CLASS "/kvpool%u", d.id);
		EXPECT_EQ(-1, stat(path, &st)) TH_LOG("%s after destroy", path);
		EXPECT_EQ(ENODEV, kt_destroy(ctl, d.id));
		EXPECT_EQ(-1, kt_open_id(d.id, O_RDWR | O_CLOEXEC));
	}
	EXPECT_EQ(pools0, kt_count_pools());
	TH_LOG("%ld rounds: %ld opens, %ld refused, %ld sysfs reads, %ld EBUSY",
	       d.rounds, d.opens, d.open_fails, d.reads, d.busy);
	/* The hammering ran: the node was opened and sysfs read. */
	EXPECT_LT(0, d.opens);
	EXPECT_LT(0, d.reads);
	close(ctl);
}

/* ---- open() of other devices while a big pool is busy ------------------ */

/*
 * The pool lock must never be taken under a lock that other devices'
 * open() takes (misc_mtx, as pools that were misc devices did: their open
 * waited for the pool lock holding it). A worker keeps a big pool's lock
 * busy with long ops (EXTEND and TRIM of a row of 2^21 pages, VERIFY of
 * the whole pool) while a second process keeps opening the pool (each
 * open waits for that lock); opening /dev/kvpool-control, /dev/fuse and
 * /dev/userfaultfd (misc devices, those that exist) meanwhile stays fast.
 *
 * "Fast" is not a time: a loaded machine can stall any process for tens
 * of milliseconds (TCG, KASAN, a CI run beside it), which a wall-clock
 * bound mistakes for the bug. The worker numbers its ops: @op_seq is odd
 * while one runs (from before its ioctl to after it returns), even
 * between. An open that starts and ends with the same odd @op_seq ran
 * entirely inside one op; were misc opens stuck behind the pool lock,
 * none could (one that starts during an op ends after it). So the check
 * is a count within the run: most of the opens that start during an op
 * also end in it. The times are logged, not checked.
 */
#define BIG_NR_PAGES	(1u << 21)
#define BUSY_SECONDS	3

struct busy_shared {
	int ready, stop;
	long ops;
	long op_seq;	/* odd while an op runs */
	long long op_max_ns, op_total_ns;
	int err_line, err;
	/* the pool opener */
	long pool_opens;
	long long pool_open_max_ns;
	int opener_err;
};

static void busy_worker(__u32 id, struct busy_shared *sh)
{
	static __u32 pages[BIG_NR_PAGES];
	struct kvpool_handle h;
	struct kvpool_verify v;
	int fd, i;
	__u32 n;

#define B_CHECK(c) do {							\
	if (!(c)) {							\
		sh->err = errno;					\
		STORE(sh->err_line, __LINE__);				\
		_exit(1);						\
	}								\
} while (0)
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	B_CHECK(fd >= 0);
	B_CHECK(kt_row_alloc(fd, 1, &h, NULL) == 0);
	STORE(sh->ready, 1);
	for (i = 0; !LOAD(sh->stop); i++) {
		long long t0 = life_now_ns(), t;

		__atomic_add_fetch(&sh->op_seq, 1, __ATOMIC_SEQ_CST);
		if (i % 3 == 2) {
			B_CHECK(kt_verify(fd, &v) == 0);
			B_CHECK(v.out_violations == 0);
		} else {
			B_CHECK(kt_extend1(fd, h, BIG_NR_PAGES - 1, pages,
					   ARRAY_SIZE(pages), &n) == 0);
			B_CHECK(n == BIG_NR_PAGES - 1);
			B_CHECK(kt_trim1(fd, h, &n) == 0);
			B_CHECK(n == BIG_NR_PAGES - 1);
		}
		__atomic_add_fetch(&sh->op_seq, 1, __ATOMIC_SEQ_CST);
		t = life_now_ns() - t0;
		if (t > sh->op_max_ns)
			sh->op_max_ns = t;
		sh->op_total_ns += t;
		__atomic_add_fetch(&sh->ops, 1, __ATOMIC_RELEASE);
	}
	_exit(0);
#undef B_CHECK
}

/* Opens the busy pool again and again: each open waits for its lock. */
static void busy_pool_opener(__u32 id, struct busy_shared *sh)
{
	while (!LOAD(sh->stop)) {
		long long t0 = life_now_ns(), t;
		int fd = kt_open_id(id, O_RDWR | O_CLOEXEC);

		if (fd < 0) {
			sh->opener_err = errno;
			_exit(1);
		}
		t = life_now_ns() - t0;
		close(fd);
		if (t > sh->pool_open_max_ns)
			sh->pool_open_max_ns = t;
		sh->pool_opens++;
	}
	_exit(0);
}

FIXTURE(busy) {
	struct kt_pool pool;
	struct busy_shared *sh;
};

FIXTURE_SETUP(busy)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     BIG_NR_PAGES, 1, 16, 1u << 22);
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	memset(self->sh, 0, sizeof(*self->sh));
}

FIXTURE_TEARDOWN(busy)
{
	kt_pool_fini(_metadata, &self->pool);
	if (self->sh && self->sh != MAP_FAILED)
		munmap(self->sh, sizeof(*self->sh));
}

TEST_F_TIMEOUT(busy, misc_open_latency, 300)
{
	static const char *const devs[] = {
		KT_CTL_PATH, "/dev/fuse", "/dev/userfaultfd",
	};
	long long worst[ARRAY_SIZE(devs)] = { 0 };
	long long total[ARRAY_SIZE(devs)] = { 0 };
	long count[ARRAY_SIZE(devs)] = { 0 };
	/* Opens that started during an op, and those of them it outlasted. */
	long during[ARRAY_SIZE(devs)] = { 0 };
	long inside[ARRAY_SIZE(devs)] = { 0 };
	struct busy_shared *sh = self->sh;
	long long end, t0, t, mean;
	long seq0, seq1;
	pid_t worker, opener;
	unsigned int i;
	long ops0;
	int status;

	ASSERT_EQ(0, access(KT_CTL_PATH, F_OK));
	worker = kt_pool_fork(_metadata, &self->pool);
	if (worker == 0)
		busy_worker(self->pool.id, sh);
	while (!LOAD(sh->ready) && !LOAD(sh->err_line))
		usleep(1000);
	ASSERT_EQ(0, LOAD(sh->err_line)) TH_LOG("worker: line %d: %s",
					       sh->err_line, strerror(sh->err));
	opener = kt_pool_fork(_metadata, &self->pool);
	if (opener == 0)
		busy_pool_opener(self->pool.id, sh);
	/* Measure only while the worker's ops run. */
	while (LOAD(sh->ops) < 1 && !LOAD(sh->err_line))
		usleep(1000);
	ops0 = LOAD(sh->ops);
	end = life_now_ns() + BUSY_SECONDS * 1000000000LL;
	while (life_now_ns() < end) {
		for (i = 0; i < ARRAY_SIZE(devs); i++) {
			int fd;

			seq0 = __atomic_load_n(&sh->op_seq, __ATOMIC_SEQ_CST);
			t0 = life_now_ns();
			fd = open(devs[i], O_RDWR | O_CLOEXEC);
			t = life_now_ns() - t0;
			seq1 = __atomic_load_n(&sh->op_seq, __ATOMIC_SEQ_CST);
			if (fd < 0) {
				/* Only the control device is required. */
				ASSERT_NE(0, i) TH_LOG("open %s: %s", devs[i],
						      strerror(errno));
				continue;
			}
			close(fd);
			count[i]++;
			if (seq0 & 1) {
				during[i]++;
				inside[i] += seq1 == seq0;
			}
			total[i] += t;
			if (t > worst[i])
				worst[i] = t;
		}
		usleep(200);
	}
	STORE(sh->stop, 1);
	status = kt_pool_wait(&self->pool, worker);
	EXPECT_TRUE(KT_CHILD_OK(status))
		TH_LOG("worker status %#x, line %d: %s", status, sh->err_line,
		       strerror(sh->err));
	status = kt_pool_wait(&self->pool, opener);
	EXPECT_TRUE(KT_CHILD_OK(status))
		TH_LOG("pool opener status %#x: %s", status,
		       strerror(sh->opener_err));

	mean = sh->ops ? sh->op_total_ns / sh->ops : 0;
	TH_LOG("pool ops: %ld in all, %ld while measuring; longest %lld ms, mean %lld ms",
	       sh->ops, sh->ops - ops0, sh->op_max_ns / 1000000,
	       mean / 1000000);
	TH_LOG("opens of the busy pool: %ld, worst %lld ms",
	       sh->pool_opens, sh->pool_open_max_ns / 1000000);
	for (i = 0; i < ARRAY_SIZE(devs); i++) {
		if (!count[i]) {
			TH_LOG("%s: absent", devs[i]);
			continue;
		}
		TH_LOG("open %s: %ld opens, worst %lld us, mean %lld us; %ld of the %ld begun during an op ended in it",
		       devs[i], count[i], worst[i] / 1000,
		       total[i] / count[i] / 1000, inside[i], during[i]);
		/* Half: opens near an op's ends, or stalled, may cross it. */
		EXPECT_LE(during[i], 2 * inside[i])
			TH_LOG("open %s waited for the busy pool's ops",
			       devs[i]);
	}
	EXPECT_LT(0, count[0]);
	/* The pool was busy all along, with ops long enough to tell. */
	EXPECT_LE(2, sh->ops - ops0);
	EXPECT_LT(0, sh->pool_opens);
	EXPECT_LT(0, during[0])
		TH_LOG("no open of %s began during a pool op", devs[0]);
}

/* ---- module load and unload ---------------------------------------------- */

/* The top-level VERSION file of the tree the tests were built from. */
#ifndef KVP_TOPDIR
#error "KVP_TOPDIR is set by the Makefile"
#endif

/* Read a small file, trailing newlines cut. 0 or the errno. */
static int read_small(const char *path, char *buf, size_t len)
{
	int ret = kt_read_text(path, buf, len);
	size_t n = strlen(buf);

	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return ret;
}


/* MODULE_VERSION is the top-level VERSION file's one line. */
TEST_F(solo, module_version)
{
	char want[64], got[64];
	int ret;

	ret = read_small(KVP_TOPDIR "/VERSION", want, sizeof(want));
	ASSERT_EQ(0, ret) TH_LOG("%s/VERSION: %s", KVP_TOPDIR, strerror(ret));
	ret = read_small("/sys/module/kvpool/version", got, sizeof(got));
	ASSERT_EQ(0, ret) TH_LOG("/sys/module/kvpool/version: %s",
				 strerror(ret));
	EXPECT_STREQ(want, got);
	EXPECT_NE(0, want[0]);
	EXPECT_EQ(NULL, strchr(want, '\n'));
}

/*
 * Where the loaded kvpool.ko is: $KVPOOL_MODULE, else what vm-run.sh
 * loaded (VM_MODULE in $KVPOOL_RESULTS/.vm/config). NULL if neither.
 */
static const char *module_path(char *buf, size_t len)
{
	const char *env = getenv("KVPOOL_MODULE");
	const char *res = getenv("KVPOOL_RESULTS");
	char cfg[512], line[1024];
	FILE *f;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return buf;
	}
	if (!res)
		return NULL;
	snprintf(cfg, sizeof(cfg), "%s/.vm/config", res);
	f = fopen(cfg, "re");
	if (!f)
		return NULL;
	buf[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		/* printf %q of a plain path is the path itself. */
		if (!strncmp(line, "VM_MODULE=", 10) && line[10] == '/' &&
		    !strpbrk(line + 10, "\\'\"$ ")) {
			if (strlen(line + 10) < len)
				memcpy(buf, line + 10, strlen(line + 10) + 1);
			break;
		}
	}
	fclose(f);
	return buf[0] ? buf : NULL;
}

/* The value of @key= in the image's .modinfo, or NULL. */
static const char *modinfo(const char *img, size_t len, const char *key,
			   char *out, size_t olen)
{
	size_t klen = strlen(key);
	const char *p = img, *e = img + len;

	while ((p = memmem(p, e - p, key, klen))) {
		/* A .modinfo string starts after a NUL. */
		if (p > img && p[-1] == 0 && p + klen < e && p[klen] == '=') {
			snprintf(out, olen, "%.*s", (int)strnlen(p + klen + 1,
				 e - p - klen - 1), p + klen + 1);
			return out;
		}
		p += klen;
	}
	return NULL;
}

/* "name=value ..." of every file in /sys/module/kvpool/parameters. */
static int module_params(char *buf, size_t len)
{
	DIR *d = opendir("/sys/module/kvpool/parameters");
	struct dirent *de;
	size_t off = 0;

	if (!d)
		return errno;
	buf[0] = 0;
	while ((de = readdir(d))) {
		char path[300], val[64];
		int n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/module/kvpool/parameters/%s",
			 de->d_name);
		if (read_small(path, val, sizeof(val)))
			continue;
		n = snprintf(buf + off, len - off, "%s%s=%s", off ? " " : "",
			     de->d_name, val);
		if (n < 0 || (size_t)n >= len - off) {
			closedir(d);
			return ENAMETOOLONG;
		}
		off += n;
	}
	closedir(d);
	return off ? 0 : ENOENT;
}

static int sys_init_module(const void *img, size_t len, const char *params)
{
	return syscall(SYS_init_module, img, len, params) ? errno : 0;
}

/* rmmod: retried while a file of the module is open (EAGAIN/EBUSY). */
static int sys_delete_module(void)
{
	long long deadline = life_now_ns() + 10000000000LL;
	int ret;

	for (;;) {
		ret = syscall(SYS_delete_module, "kvpool", O_NONBLOCK) ?
		      errno : 0;
		if ((ret != EAGAIN && ret != EBUSY) ||
		    life_now_ns() > deadline)
			return ret;
		usleep(100);
	}
}

/*
 * Opens /dev/kvpool-control and /dev/kvpool0 until told to stop: across
 * rmmod and failed loads the node is gone (ENOENT) or refuses (ENODEV,
 * ENXIO); nothing else is acceptable, and the kernel must not oops.
 */
struct loop_shared {
	int stop;
	long opens, refused;
	int bad_errno;
};

static void open_loop(struct loop_shared *sh)
{
	static const char *const paths[] = { KT_CTL_PATH, "/dev/kvpool0" };
	unsigned int i;

	while (!LOAD(sh->stop)) {
		for (i = 0; i < ARRAY_SIZE(paths); i++) {
			int fd = open(paths[i], O_RDWR | O_CLOEXEC);

			if (fd >= 0) {
				sh->opens++;
				close(fd);
			} else if (errno == ENOENT || errno == ENODEV ||
				   errno == ENXIO) {
				sh->refused++;
			} else {
				sh->bad_errno = errno;
				_exit(1);
			}
		}
	}
	_exit(0);
}

/*
 * Unload the module, then load it several times with parameters its init
 * refuses, while a child keeps opening the control device and the default
 * pool: a failing init must leave no file open on the freed module (the
 * kernel log is checked). Then load it again with the parameters it had,
 * from the same image (its srcversion checked against the loaded one), so
 * the tests after this one find it as before.
 *
 * It needs the module file: $KVPOOL_MODULE or vm-run.sh's VM_MODULE. It
 * fails, saying so, when it has neither.
 */
TEST_F_TIMEOUT(solo, module_reload_failing_init, 120)
{
	static const char *const bad[] = {
		"page_tokens=0", "nr_rows=0", "row_tokens=0",
		"nr_pages=134217729", "reserve_zero=1 nr_rows=1",
	};
	char pathbuf[512], params[512], now[512], sv_loaded[64], sv_file[64];
	char ver_file[64], ver_want[64];
	struct loop_shared *sh;
	const char *path;
	bool unloaded = false;
	struct stat st;
	unsigned int i;
	void *img = MAP_FAILED;
	int fd, ret, status;
	pid_t pid = -1;

	path = module_path(pathbuf, sizeof(pathbuf));
	ASSERT_NE(NULL, path)
		TH_LOG("the path of kvpool.ko is unknown: set KVPOOL_MODULE, or run under tools/vm/vm-run.sh --module (VM_MODULE in $KVPOOL_RESULTS/.vm/config)");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s: the guest must see the module file",
				path, strerror(errno));
	ASSERT_EQ(0, fstat(fd, &st));
	img = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, img);
	/* The file must be the module that is loaded, not a rebuild. */
	ASSERT_EQ(0, read_small("/sys/module/kvpool/srcversion", sv_loaded,
				sizeof(sv_loaded)));
	ASSERT_NE(NULL, modinfo(img, st.st_size, "srcversion", sv_file,
				sizeof(sv_file)));
	ASSERT_STREQ(sv_loaded, sv_file)
		TH_LOG("%s was rebuilt since it was loaded", path);
	ASSERT_NE(NULL, modinfo(img, st.st_size, "version", ver_file,
				sizeof(ver_file)));
	ASSERT_EQ(0, read_small(KVP_TOPDIR "/VERSION", ver_want,
				sizeof(ver_want)));
	EXPECT_STREQ(ver_want, ver_file);
	ASSERT_EQ(0, module_params(params, sizeof(params)));
	TH_LOG("reloading %s (srcversion %s) with \"%s\"", path, sv_file,
	       params);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		open_loop(sh);

	/* From here on, every path reloads the module: EXPECT only. */
	ret = sys_delete_module();
	EXPECT_EQ(0, ret) TH_LOG("delete_module(kvpool): %s", strerror(ret));
	unloaded = !ret;
	for (i = 0; unloaded && i < 3 * ARRAY_SIZE(bad); i++) {
		const char *p = bad[i % ARRAY_SIZE(bad)];

		ret = sys_init_module(img, st.st_size, p);
		EXPECT_NE(0, ret) TH_LOG("init_module(\"%s\") worked", p);
		if (!ret) {
			ret = sys_delete_module();
			EXPECT_EQ(0, ret);
			if (ret) {
				unloaded = false;
				break;
			}
		}
		EXPECT_EQ(-1, access("/sys/module/kvpool", F_OK));
		EXPECT_EQ(-1, access(KT_CTL_PATH, F_OK));
	}
	if (unloaded || access("/sys/module/kvpool", F_OK)) {
		ret = sys_init_module(img, st.st_size, params);
		EXPECT_EQ(0, ret) TH_LOG("reload with \"%s\": %s", params,
					 strerror(ret));
	}

	STORE(sh->stop, 1);
	status = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	EXPECT_TRUE(KT_CHILD_OK(status))
		TH_LOG("opener: status %#x, errno %s", status,
		       strerror(sh->bad_errno));
	TH_LOG("opener: %ld opens, %ld refused", sh->opens, sh->refused);
	EXPECT_LT(0, sh->refused);

	/* As it was: same parameters, same build, control device back. */
	EXPECT_EQ(0, module_params(now, sizeof(now)));
	EXPECT_STREQ(params, now);
	EXPECT_EQ(0, read_small("/sys/module/kvpool/srcversion", sv_loaded,
				sizeof(sv_loaded)));
	EXPECT_STREQ(sv_file, sv_loaded);
	fd = kt_ctl_open();
	EXPECT_LE(0, fd) TH_LOG("open " KT_CTL_PATH ": %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	munmap(sh, sizeof(*sh));
	munmap(img, st.st_size);
}

TEST_HARNESS_MAIN
