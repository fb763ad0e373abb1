// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the GPU agent's protocol (KVPOOL_FEAT_GPU_AGENT), by
 * its ioctls alone (docs/gpu-agent.md).
 *
 * An arena set with KVPOOL_ARENA_SET_AGENT hands clients no file it was
 * given: a client's ARENA queues a request per chunk, the test plays the
 * agent (CTL_AGENT, poll, AGENT_RECV, AGENT_REPLY) and the client gets
 * exactly the file the agent answered with. Chunks are pty masters, the
 * fake CUDA driver's exports, under the module's fake_cuda hook; a pty's
 * index (TIOCGPTN) says which file a client got. Checked: attach rules,
 * the request's fields, the reply's refusals, an agent that dies with a
 * request taken (the next one gets it), a client that is killed or
 * interrupted while it waits (its requests go; a late reply is ENOENT),
 * NOWAIT, an errno reply (EIO), and the agent file after DESTROY.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <poll.h>
#include <sys/socket.h>

#define NR_CHUNKS	2
#define CHUNK		(8 * 4096ULL)

FIXTURE(agent) {
	int ctl;
	__u32 id;
	bool created;
	int old_hook;
	int master[NR_CHUNKS];
	int fd;		/* a client of the pool */
};

static int attach(int ctl, __u32 id, int *fd)
{
	struct kvpool_ctl_agent a = { .size = sizeof(a), .pool_id = id };
	int ret = kt_ioctl(ctl, KVPOOL_CTL_AGENT, &a);

	*fd = a.out_fd;
	return ret;
}

static int recv_req(int agent, struct kvpool_agent_request *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->out_fd = -1;
	return kt_ioctl(agent, KVPOOL_AGENT_RECV, r);
}

static int reply(int agent, __u64 id, int fd, int error)
{
	struct kvpool_agent_reply r = {
		.size = sizeof(r), .id = id, .fd = fd, .error = error,
	};

	return kt_ioctl(agent, KVPOOL_AGENT_REPLY, &r);
}

/* Whether @agent polls readable within @ms (POLLHUP counts apart). */
static short agent_poll(int agent, int ms)
{
	struct pollfd p = { .fd = agent, .events = POLLIN };

	return poll(&p, 1, ms) == 1 ? p.revents : 0;
}

FIXTURE_SETUP(agent)
{
	struct kvpool_arena_chunk ch[NR_CHUNKS];
	struct kvpool_ctl_arena_set s = {
		.size = sizeof(s), .flags = KVPOOL_ARENA_SET_AGENT,
		.kind = KVPOOL_ARENA_CUDA, .page_bytes = 4096,
		.nr_chunks = NR_CHUNKS, .chunk_entry_len = sizeof(ch[0]),
		.chunks = kt_ptr(ch),
	};
	int i, ret;

	self->created = false;
	self->fd = -1;
	self->ctl = kt_ctl_open();
	ASSERT_LE(0, self->ctl);
	self->old_hook = kt_fake_cuda(1);
	ASSERT_LE(0, self->old_hook)
		TH_LOG("no fake_cuda parameter: %s", strerror(-self->old_hook));
	ret = kt_create_gpu_pool(self->ctl, 2 * CHUNK / 4096, &self->id);
	ASSERT_EQ(0, ret) TH_LOG("a GPU pool: %s (vm-run.sh adds a GPU)",
				 strerror(-ret));
	self->created = true;
	for (i = 0; i < NR_CHUNKS; i++) {
		self->master[i] = kt_fake_export();
		ASSERT_LE(0, self->master[i]);
		ch[i].fd = self->master[i];
		ch[i].__reserved = 0;
		ch[i].bytes = CHUNK;
	}
	s.pool_id = self->id;
	ASSERT_EQ(0, kt_ioctl(self->ctl, KVPOOL_CTL_ARENA_SET, &s));
	self->fd = kt_open_id(self->id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(agent)
{
	int i;

	if (self->fd >= 0)
		close(self->fd);
	if (self->created)
		EXPECT_EQ(0, kt_destroy(self->ctl, self->id));
	for (i = 0; i < NR_CHUNKS; i++)
		close(self->master[i]);
	if (self->old_hook >= 0)
		kt_fake_cuda(self->old_hook);
	close(self->ctl);
}

/* Only there to interrupt: a handler, installed without SA_RESTART. */
static void on_signal(int sig)
{
	(void)sig;
}

/*
 * A client process: asks for @count chunks from @first (flags @flags),
 * writes the ARENA errno and then each pty index it got to @out, and
 * exits. With @sigusr1, a handler without SA_RESTART is installed first.
 */
static pid_t client(__u32 id, __u32 first, __u32 count, __u32 flags,
		    bool sigusr1, int *out)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid) {
		close(p[1]);
		*out = p[0];
		return pid;
	}
	/* Holds nothing of the parent's: an agent file closed there goes. */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != p[1])
			close(fd);
	{
		struct kvpool_arena_fd f[NR_CHUNKS];
		struct kvpool_arena a = {
			.size = sizeof(a), .flags = KVPOOL_ARENA_FDS | flags,
			.first_chunk = first, .count = count,
			.fd_entry_len = sizeof(f[0]), .fds = kt_ptr(f),
		};
		int fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
		int res[1 + NR_CHUNKS] = { 0 };
		__u32 i;

		if (sigusr1) {
			struct sigaction sa = { .sa_handler = on_signal };

			sigaction(SIGUSR1, &sa, NULL);
		}
		res[0] = fd < 0 ? ENODEV : kt_ioctl(fd, KVPOOL_ARENA, &a);
		for (i = 0; !res[0] && i < count; i++)
			res[1 + i] = kt_pty_index(f[i].out_fd);
		_exit(write(p[1], res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
}

/* What a client() wrote: its errno, and its pty indices in @idx. */
static int client_result(int out, int *idx)
{
	int res[1 + NR_CHUNKS];

	if (read(out, res, sizeof(res)) != sizeof(res))
		return -1;
	close(out);
	memcpy(idx, &res[1], sizeof(res) - sizeof(res[0]));
	return res[0];
}

/* One agent at a time, of a GPU pool; the request queue starts empty. */
TEST_F(agent, attach)
{
	struct kvpool_agent_reply y = { .size = sizeof(y) };
	struct kvpool_agent_request r;
	struct kvpool_arena a;
	__u32 plain;
	int ag, ag2;

	ASSERT_EQ(0, kt_create(self->ctl, 0, 16, 1, 4, 16, &plain));
	EXPECT_EQ(EINVAL, attach(self->ctl, plain, &ag));
	EXPECT_EQ(-1, ag);
	EXPECT_EQ(0, kt_destroy(self->ctl, plain));
	EXPECT_EQ(ENODEV, attach(self->ctl, plain, &ag));
	EXPECT_EQ(ENODEV, attach(self->ctl, 1000, &ag));

	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	EXPECT_EQ(FD_CLOEXEC, fcntl(ag, F_GETFD));
	EXPECT_EQ(EBUSY, attach(self->ctl, self->id, &ag2));
	EXPECT_EQ(EAGAIN, recv_req(ag, &r));
	EXPECT_EQ(0, agent_poll(ag, 0));
	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ(KVPOOL_ARENA_SET_AGENT, a.out_set_flags);
	EXPECT_EQ((__u32)getpid(), a.out_agent_pid);
	/* The ops' shape. */
	r.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(ag, KVPOOL_AGENT_RECV, &r));
	y.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(ag, KVPOOL_AGENT_REPLY, &y));
	y.flags = 0;
	y.error = -1;
	EXPECT_EQ(EINVAL, kt_ioctl(ag, KVPOOL_AGENT_REPLY, &y));
	y.error = 4096;
	EXPECT_EQ(EINVAL, kt_ioctl(ag, KVPOOL_AGENT_REPLY, &y));
	y.error = EIO;
	y.fd = 3;
	EXPECT_EQ(EINVAL, kt_ioctl(ag, KVPOOL_AGENT_REPLY, &y));
	y.fd = 0;
	EXPECT_EQ(ENOENT, kt_ioctl(ag, KVPOOL_AGENT_REPLY, &y));
	/* Pool ops are not agent ops, nor the other way round. */
	EXPECT_EQ(ENOTTY, kt_ioctl(ag, KVPOOL_INFO, &a));
	EXPECT_EQ(ENOTTY, kt_ioctl(self->fd, KVPOOL_AGENT_RECV, &r));
	close(ag);
	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ((__u32)getpid(), a.out_agent_pid);
	close(ag);
	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ(0, a.out_agent_pid);
}

/*
 * A client's map through the agent: one request per chunk, in order,
 * each with the master's file and the client's pid; the reply's
 * refusals (no pool's chunk may reach a client, its master least of
 * all); the client gets the files the agent answered with.
 */
TEST_F(agent, serve)
{
	struct kvpool_arena_chunk och = { .bytes = CHUNK };
	struct kvpool_agent_request r[NR_CHUNKS], none;
	int ag, out, fresh[NR_CHUNKS], idx[NR_CHUNKS], status, i;
	__u32 other;
	int other_master, null;
	pid_t pid;

	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	pid = client(self->id, 0, NR_CHUNKS, 0, false, &out);
	ASSERT_LT(0, pid);

	for (i = 0; i < NR_CHUNKS; i++) {
		ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
		ASSERT_EQ(0, recv_req(ag, &r[i]));
		EXPECT_EQ(self->id, r[i].out_pool_id);
		EXPECT_EQ(i, r[i].out_chunk);
		EXPECT_EQ(CHUNK, r[i].out_bytes);
		EXPECT_EQ((__u32)pid, r[i].out_client_pid);
		EXPECT_EQ(FD_CLOEXEC, fcntl(r[i].out_fd, F_GETFD));
		EXPECT_EQ(kt_pty_index(self->master[i]),
			  kt_pty_index(r[i].out_fd))
			TH_LOG("the request gives the chunk's own file");
		fresh[i] = kt_fake_export();
		ASSERT_LE(0, fresh[i]);
	}
	EXPECT_LT(r[0].out_id, r[1].out_id);
	EXPECT_EQ(EAGAIN, recv_req(ag, &none));

	/* Refused: a pool's chunk (the master itself too), no export. */
	EXPECT_EQ(EBUSY, reply(ag, r[0].out_id, r[0].out_fd, 0));
	ASSERT_EQ(0, kt_create_gpu_pool(self->ctl, 8, &other));
	other_master = kt_fake_export();
	ASSERT_LE(0, other_master);
	och.fd = other_master;
	ASSERT_EQ(0, kt_arena_set(self->ctl, other, KVPOOL_ARENA_CUDA, 4096,
				  &och, 1, NULL));
	EXPECT_EQ(EBUSY, reply(ag, r[0].out_id, other_master, 0));
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, null);
	EXPECT_EQ(EINVAL, reply(ag, r[0].out_id, null, 0));
	EXPECT_EQ(EBADF, reply(ag, r[0].out_id, -1, 0));
	EXPECT_EQ(ENOENT, reply(ag, r[1].out_id + 100, fresh[0], 0));
	close(null);

	for (i = 0; i < NR_CHUNKS; i++) {
		EXPECT_EQ(0, reply(ag, r[i].out_id, fresh[i], 0));
		/* Answered: the id is not this agent's any more. */
		EXPECT_EQ(ENOENT, reply(ag, r[i].out_id, fresh[i], 0));
		close(r[i].out_fd);
	}
	EXPECT_EQ(0, client_result(out, idx));
	for (i = 0; i < NR_CHUNKS; i++) {
		EXPECT_EQ(kt_pty_index(fresh[i]), idx[i]) TH_LOG("chunk %d", i);
		EXPECT_NE(kt_pty_index(self->master[i]), idx[i]);
		close(fresh[i]);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(ag);
	EXPECT_EQ(0, kt_destroy(self->ctl, other));
	close(other_master);
}

/*
 * The agent dies with a request taken: it goes back to the queue and the
 * next agent gets it (same id); the client, still waiting, is served.
 */
TEST_F(agent, agent_dies)
{
	struct kvpool_agent_request r, again;
	int ag, out, fresh, idx[NR_CHUNKS], status;
	pid_t pid;

	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	pid = client(self->id, 1, 1, 0, false, &out);
	ASSERT_LT(0, pid);
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	ASSERT_EQ(0, recv_req(ag, &r));
	close(r.out_fd);
	close(ag);

	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	ASSERT_EQ(0, recv_req(ag, &again));
	EXPECT_EQ(r.out_id, again.out_id);
	EXPECT_EQ(1, again.out_chunk);
	fresh = kt_fake_export();
	ASSERT_LE(0, fresh);
	EXPECT_EQ(0, reply(ag, again.out_id, fresh, 0));
	EXPECT_EQ(0, client_result(out, idx));
	EXPECT_EQ(kt_pty_index(fresh), idx[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(again.out_fd);
	close(fresh);
	close(ag);
}

/*
 * A client that goes while it waits takes its requests with it, queued
 * or taken: the agent finds none, and a late reply is ENOENT. One that
 * is interrupted gets EINTR. An errno reply is EIO for the client.
 */
TEST_F(agent, client_goes)
{
	struct kvpool_agent_request r;
	int ag, out, fresh, idx[NR_CHUNKS], status;
	pid_t pid;

	/* Queued, not taken, when it is killed. */
	pid = client(self->id, 0, 1, 0, false, &out);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(out);
	EXPECT_EQ(EAGAIN, recv_req(ag, &r));
	EXPECT_EQ(0, agent_poll(ag, 0));

	/* Taken when it is killed. */
	pid = client(self->id, 0, 1, 0, false, &out);
	ASSERT_LT(0, pid);
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	ASSERT_EQ(0, recv_req(ag, &r));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(out);
	fresh = kt_fake_export();
	ASSERT_LE(0, fresh);
	EXPECT_EQ(ENOENT, reply(ag, r.out_id, fresh, 0));
	close(r.out_fd);

	/* Interrupted by a handled signal: EINTR. */
	pid = client(self->id, 0, 1, 0, true, &out);
	ASSERT_LT(0, pid);
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	ASSERT_EQ(0, recv_req(ag, &r));
	kill(pid, SIGUSR1);
	EXPECT_EQ(EINTR, client_result(out, idx));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(ENOENT, reply(ag, r.out_id, fresh, 0));
	close(r.out_fd);

	/* The agent could not export: EIO. */
	pid = client(self->id, 0, 2, 0, false, &out);
	ASSERT_LT(0, pid);
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	ASSERT_EQ(0, recv_req(ag, &r));
	EXPECT_EQ(0, reply(ag, r.out_id, fresh, 0));
	close(r.out_fd);
	ASSERT_EQ(0, recv_req(ag, &r));
	EXPECT_EQ(0, reply(ag, r.out_id, 0, ENOMEM));
	close(r.out_fd);
	EXPECT_EQ(EIO, client_result(out, idx));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(fresh);
	close(ag);
}

/* NOWAIT: EAGAIN without an agent; with one, the call waits as ever. */
TEST_F(agent, nowait)
{
	struct kvpool_agent_request r;
	struct kvpool_arena_fd f;
	struct kvpool_arena a = {
		.size = sizeof(a), .flags = KVPOOL_ARENA_FDS |
		KVPOOL_ARENA_NOWAIT, .count = 1, .fd_entry_len = sizeof(f),
		.fds = kt_ptr(&f),
	};
	int ag, out, fresh, idx[NR_CHUNKS], status, before;
	pid_t pid;

	before = kt_count_fds();
	EXPECT_EQ(EAGAIN, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	EXPECT_EQ(before, kt_count_fds());
	/* NOWAIT means nothing without FDS. */
	a.flags = KVPOOL_ARENA_NOWAIT;
	a.count = 0;
	a.fd_entry_len = 0;
	a.fds = 0;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ARENA, &a));

	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	pid = client(self->id, 0, 1, KVPOOL_ARENA_NOWAIT, false, &out);
	ASSERT_LT(0, pid);
	ASSERT_EQ(POLLIN, agent_poll(ag, 10000) & POLLIN);
	ASSERT_EQ(0, recv_req(ag, &r));
	fresh = kt_fake_export();
	ASSERT_LE(0, fresh);
	EXPECT_EQ(0, reply(ag, r.out_id, fresh, 0));
	EXPECT_EQ(0, client_result(out, idx));
	EXPECT_EQ(kt_pty_index(fresh), idx[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(r.out_fd);
	close(fresh);
	close(ag);
}

/* After DESTROY the agent's file hangs up and its ops are ENODEV. */
TEST_F(agent, destroyed)
{
	struct kvpool_agent_request r;
	int ag;

	ASSERT_EQ(0, attach(self->ctl, self->id, &ag));
	/* A waiting client is a client: DESTROY waits for none. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kt_destroy(self->ctl, self->id));
	self->created = false;
	EXPECT_EQ(POLLHUP, agent_poll(ag, 1000) & POLLHUP);
	EXPECT_EQ(ENODEV, recv_req(ag, &r));
	EXPECT_EQ(ENODEV, reply(ag, 1, 0, EIO));
	/* The masters are still the dead pool's until its agent goes. */
	close(ag);
}

TEST_HARNESS_MAIN
