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
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvpool_util.h"

#include <pthread.h>
#include <sys/socket.h>

#define NR_PAGES	4096
#define NR_ROWS		64
#define ROW_TOKENS	8192

FIXTURE(life) {
	struct kvp_pool pool;
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
	kvp_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		      NR_PAGES, variant->page_tokens, NR_ROWS, ROW_TOKENS);
	self->fd = kvp_pool_open(_metadata, &self->pool);
	self->pt = variant->page_tokens;
}

FIXTURE_TEARDOWN(life)
{
	kvp_pool_fini(_metadata, &self->pool);
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
	if (kvp_row_alloc(fd, 3, h, NULL))
		return __LINE__;
	if (kvp_grow(fd, h[0], 5 * pt) ||
	    kvp_grow(fd, h[1], 2 * pt - (pt > 1)) ||
	    kvp_grow(fd, h[2], 9 * pt))
		return __LINE__;
	if (kvp_commit1(fd, h[0], 3))
		return __LINE__;
	if (kvp_to_slot(fd, 0xfeedull << 32, h[2], NULL))
		return __LINE__;
	return 0;
}

/* What the observer sees while someone holds what hold() took. */
static void expect_held(struct __test_metadata *_metadata,
			FIXTURE_DATA(life) *self, __u32 nr_clients)
{
	struct kvpool_stats s;

	ASSERT_EQ(0, kvp_stats(self->fd, &s));
	EXPECT_EQ(self->pool.usable_pages - HOLD_PAGES, s.out_free_pages);
	EXPECT_EQ(HOLD_ROW_PAGES, s.out_row_pages);
	EXPECT_EQ(HOLD_SLOT_PAGES, s.out_slot_pages);
	EXPECT_EQ(2, s.out_held_rows);
	EXPECT_EQ(1, s.out_slot_rows);
	EXPECT_EQ(nr_clients, s.out_nr_clients);
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_pages);
	kvp_check_identities(_metadata, &self->pool, &s);
}

/* A child that exits normally gives everything back. */
TEST_F(life, child_exit)
{
	int ready[2], go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kvp_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle h[3];
		int fd;

		close(ready[0]);
		close(go[1]);
		fd = kvp_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold(fd, self->pt, h) == 0);
		kvp_child_signal(ready[1], 'r');
		kvp_pipe_wait(go[0]);
		_exit(0);	/* no close: exit drops the file */
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kvp_pipe_wait(ready[0]));
	expect_held(_metadata, self, 2);
	close(go[1]);
	status = kvp_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KVP_CHILD_OK(status)) TH_LOG("child status %#x", status);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(ready[0]);
}

/* SIGKILL while holding: the same. */
TEST_F(life, child_sigkill)
{
	int ready[2], go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kvp_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle h[3];
		int fd;

		close(ready[0]);
		close(go[1]);
		fd = kvp_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold(fd, self->pt, h) == 0);
		kvp_child_signal(ready[1], 'r');
		for (;;)
			kvp_pipe_wait(go[0]);	/* until killed */
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kvp_pipe_wait(ready[0]));
	expect_held(_metadata, self, 2);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	status = kvp_pool_wait(&self->pool, pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(ready[0]);
	close(go[1]);
}

/* SIGKILL in the middle of a stream of ioctls. */
TEST_F(life, child_sigkill_busy)
{
	int ready[2], status, round;

	ASSERT_EQ(0, pipe(ready));
	for (round = 0; round < 4; round++) {
		pid_t pid = kvp_pool_fork(_metadata, &self->pool);

		if (pid == 0) {
			struct kvpool_handle h[4], kept[8];
			unsigned int i;
			int fd;

			close(ready[0]);
			fd = kvp_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
			CHILD_CHECK(fd >= 0);
			for (i = 0;; i++) {
				CHILD_CHECK(kvp_row_alloc(fd, 4, h, NULL) == 0);
				CHILD_CHECK(kvp_grow(fd, h[0], 1 + i % 300) == 0);
				CHILD_CHECK(kvp_grow(fd, h[1], 40) == 0);
				CHILD_CHECK(kvp_to_slot(fd, i, h[2], NULL) == 0);
				CHILD_CHECK(kvp_commit1(fd, h[1], 20) == 0);
				CHILD_CHECK(kvp_trim1(fd, h[1], NULL) == 0);
				CHILD_CHECK(kvp_batch(fd, KVPOOL_RELEASE, 0, h, 2,
						      NULL) == 0);
				CHILD_CHECK(kvp_slot_release(fd, i, NULL) == 0);
				CHILD_CHECK(kvp_release1(fd, h[3], NULL) == 0);
				/* Keep up to 8 rows: something for release. */
				if (i >= 8)
					CHILD_CHECK(kvp_release1(fd, kept[i % 8],
								 NULL) == 0);
				CHILD_CHECK(kvp_row_alloc(fd, 1, &kept[i % 8],
							  NULL) == 0);
				CHILD_CHECK(kvp_grow(fd, kept[i % 8], 5) == 0);
				if (i == 8 + round)
					kvp_child_signal(ready[1], 'r');
			}
		}
		ASSERT_EQ('r', kvp_pipe_wait(ready[0]));
		ASSERT_EQ(0, kill(pid, SIGKILL));
		status = kvp_pool_wait(&self->pool, pid);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("child status %#x", status);
		kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
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

	fd = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kvp_info(fd, &info));
	ASSERT_EQ(0, hold(fd, self->pt, h));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = kvp_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_row_query q;
		struct kvpool_info ci;

		close(ready[0]);
		close(go[1]);
		kvp_child_signal(ready[1], 'r');
		/* The parent has closed its copy now. */
		CHILD_CHECK(kvp_pipe_wait(go[0]) == 'q');
		CHILD_CHECK(kvp_info(fd, &ci) == 0);
		CHILD_CHECK(ci.out_client_id == info.out_client_id);
		CHILD_CHECK(kvp_query(fd, h[0], NULL, 0, &q) == 0);
		CHILD_CHECK(q.out_allocated_len == 5 * self->pt);
		CHILD_CHECK(q.out_committed_len == 3);
		CHILD_CHECK(kvp_query_slot(fd, 0xfeedull << 32, NULL, 0, &q) == 0);
		kvp_child_signal(ready[1], 'q');
		CHILD_CHECK(kvp_pipe_wait(go[0]) == 'c');
		close(fd);
		kvp_child_signal(ready[1], 'c');
		kvp_pipe_wait(go[0]);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ('r', kvp_pipe_wait(ready[0]));
	kvp_pool_close(&self->pool, fd);
	/* Closed here, alive there: still 2 clients, nothing freed. */
	expect_held(_metadata, self, 2);
	ASSERT_EQ(1, write(go[1], "q", 1));
	ASSERT_EQ('q', kvp_pipe_wait(ready[0]));
	ASSERT_EQ(1, write(go[1], "c", 1));
	ASSERT_EQ('c', kvp_pipe_wait(ready[0]));
	/* The child closed the last reference; it is still running. */
	ASSERT_EQ(0, kvp_stats(self->fd, &s));
	EXPECT_EQ(1, s.out_nr_clients);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	close(go[1]);
	status = kvp_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KVP_CHILD_OK(status)) TH_LOG("child status %#x", status);
	close(ready[0]);
}

/* dup() shares the client: closing one fd frees nothing. */
TEST_F(life, dup_fd)
{
	struct kvpool_handle h[3];
	struct kvpool_row_query q;
	int fd, fd2;

	fd = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, hold(fd, self->pt, h));
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	kvp_pool_close(&self->pool, fd);
	expect_held(_metadata, self, 2);
	EXPECT_EQ(0, kvp_query(fd2, h[0], NULL, 0, &q));
	EXPECT_EQ(0, kvp_release1(fd2, h[1], NULL));
	close(fd2);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
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
	pid = kvp_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle ch[3];
		int cfd;

		close(sv[0]);
		cfd = kvp_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(cfd >= 0);
		CHILD_CHECK(hold(cfd, self->pt, ch) == 0);
		CHILD_CHECK(send_fd(sv[1], cfd, ch, sizeof(ch)) == 0);
		close(cfd);
		_exit(0);
	}
	close(sv[1]);
	fd = recv_fd(sv[0], h, sizeof(h));
	ASSERT_LE(0, fd);
	status = kvp_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KVP_CHILD_OK(status)) TH_LOG("child status %#x", status);
	/* The sender is gone; its client lives in our fd. */
	expect_held(_metadata, self, 2);
	EXPECT_EQ(0, kvp_query(fd, h[0], NULL, 0, &q));
	EXPECT_EQ(5 * self->pt, q.out_allocated_len);
	EXPECT_EQ(0, kvp_query_slot(fd, 0xfeedull << 32, NULL, 0, &q));
	close(fd);
	close(sv[0]);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
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
	pid = kvp_pool_fork(_metadata, &self->pool);
	if (pid == 0) {
		struct kvpool_handle h[3];
		int fd;

		fd = kvp_open_id(self->pool.id,
				 O_RDWR | (cloexec ? O_CLOEXEC : 0));
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hold(fd, self->pt, h) == 0);
		kvp_child_signal(ready[1], 'r');
		CHILD_CHECK(dup2(in[0], 0) == 0);
		CHILD_CHECK(dup2(out[1], 1) == 1);
		execl("/bin/sh", "sh", "-c", "echo x; read y", (char *)NULL);
		_exit(2);
	}
	close(in[0]);
	close(out[1]);
	close(ready[1]);
	ASSERT_EQ('r', kvp_pipe_wait(ready[0]));
	/* "x" comes from the new program: exec is complete. */
	ASSERT_EQ(1, read(out[0], &c, 1));
	ASSERT_EQ('x', c);
	if (cloexec)
		kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	else
		expect_held(_metadata, self, 2);
	ASSERT_EQ(1, write(in[1], "\n", 1));
	status = kvp_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KVP_CHILD_OK(status)) TH_LOG("child status %#x", status);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
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
	W_CHECK(kvp_row_alloc(fd, 2, h, NULL) == 0);
	for (i = 0; i < 2; i++) {
		len[i] = 1 + rnd(seed, WORK_TOKENS * pt);
		e[i] = (struct kvpool_extend_entry){ .handle = h[i],
						     .new_len = len[i] };
	}
	W_CHECK(kvp_extend(fd, e, 2, pages, ARRAY_SIZE(pages), &x) == 0);
	want = kvp_div_up(len[0], pt) + kvp_div_up(len[1], pt);
	W_CHECK(x.out_nr_pages == want);
	W_CHECK(kvp_query(fd, h[0], qp, ARRAY_SIZE(qp), &q) == 0);
	W_CHECK(q.out_allocated_len == len[0]);
	W_CHECK(q.out_nr_pages == e[0].out_nr_new);
	W_CHECK(!memcmp(qp, pages, q.out_nr_pages * sizeof(__u32)));
	if (own_client) {
		W_CHECK(kvp_stats(fd, &st) == 0);
		W_CHECK(st.out_client_rows == 2);
		W_CHECK(st.out_client_pages == want);
	}

	c = rnd(seed, len[0] + 1);
	W_CHECK(kvp_commit1(fd, h[0], c) == 0);
	W_CHECK(kvp_trim1(fd, h[0], &n) == 0);
	W_CHECK(n == kvp_div_up(len[0], pt) - kvp_div_up(c, pt));

	if (rnd(seed, 4) == 0) {
		W_CHECK(kvp_to_slot(fd, session, h[1], &n) == 0);
		W_CHECK(n == kvp_div_up(len[1], pt));
		W_CHECK(kvp_to_slot(fd, session, h[0], &n) == EEXIST);
		W_CHECK(kvp_from_slot(fd, session, &nh, &n) == 0);
		W_CHECK(nh.req_pool_idx == h[1].req_pool_idx);
		W_CHECK(nh.generation == h[1].generation + 1);
		h[1] = nh;
	}
	W_CHECK(kvp_batch(fd, KVPOOL_RELEASE, 0, h, 2, &b) == 0);
	W_CHECK(b.out_nr_pages == kvp_div_up(c, pt) + kvp_div_up(len[1], pt));
	/*
	 * Released: ENOENT, or ESTALE once another user of the same client
	 * has taken the row again.
	 */
	n = kvp_release1(fd, h[0], NULL);
	W_CHECK(n == ENOENT || (!own_client && n == ESTALE));
	if (own_client) {
		W_CHECK(kvp_stats(fd, &st) == 0);
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

	EXPECT_EQ(0, kvp_verify(self->fd, &v));
	EXPECT_EQ(0, v.out_violations);
	EXPECT_EQ(0, kvp_stats(self->fd, &s));
	kvp_check_identities(_metadata, &self->pool, &s);
}

/* Four processes, each its own client, 200 rounds each, at once. */
TEST_F_TIMEOUT(life, processes, 300)
{
	pid_t pids[WORKERS];
	int go[2], i, done = 0, status;

	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < WORKERS; i++) {
		pids[i] = kvp_pool_fork(_metadata, &self->pool);
		if (pids[i] == 0) {
			unsigned int seed = 1 + i, r;
			int fd, line;

			close(go[1]);
			fd = kvp_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
			CHILD_CHECK(fd >= 0);
			kvp_pipe_wait(go[0]);	/* start together */
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
				EXPECT_TRUE(KVP_CHILD_OK(status))
					TH_LOG("worker %d status %#x", i, status);
				kvp_pool_wait(&self->pool, pids[i]);
				pids[i] = 0;
				done++;
			}
		}
	}
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
}

/* Four processes sharing one client (one inherited fd). */
TEST_F_TIMEOUT(life, processes_one_client, 300)
{
	pid_t pids[WORKERS];
	int go[2], i, fd, status;
	struct kvpool_stats s;

	fd = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < WORKERS; i++) {
		pids[i] = kvp_pool_fork(_metadata, &self->pool);
		if (pids[i] == 0) {
			unsigned int seed = 100 + i, r;
			int line;

			close(go[1]);
			kvp_pipe_wait(go[0]);
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
		status = kvp_pool_wait(&self->pool, pids[i]);
		EXPECT_TRUE(KVP_CHILD_OK(status))
			TH_LOG("worker %d status %#x", i, status);
	}
	ASSERT_EQ(0, kvp_stats(fd, &s));
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_slots);
	EXPECT_EQ(0, s.out_client_pages);
	EXPECT_EQ(2, s.out_nr_clients);
	kvp_pool_close(&self->pool, fd);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
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

	fd = kvp_pool_open(_metadata, &self->pool);
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
	ASSERT_EQ(0, kvp_stats(fd, &s));
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_pages);
	kvp_pool_close(&self->pool, fd);
	kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
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
		r = kvp_row_alloc(a->fd, 1, &h, NULL);
		if (r == EBADF)
			break;
		if (r == 0) {
			r = kvp_grow(a->fd, h, 17);
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
		fd = kvp_open_id(self->pool.id, O_RDWR | O_CLOEXEC);
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
		kvp_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	}
}

TEST_HARNESS_MAIN
