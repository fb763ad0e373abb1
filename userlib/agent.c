// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: a pool's GPU agent (docs/gpu-agent.md). The agent file
 * CTL_AGENT gives, and the answer to each request the kernel queues on
 * it: a fresh export of the chunk, made by cuda.c, for the one client
 * that asked. The daemon tools/kvpool-gpud is the agent's loop around
 * these two calls.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

KVP_PUBLIC
int kvpool_agent_attach(unsigned int pool_id)
{
	struct kvpool_ctl_agent arg = {
		.size = sizeof(arg),
		.pool_id = pool_id,
	};
	int ret = kvp_control(KVPOOL_CTL_AGENT, &arg);

	return ret ? ret : arg.out_fd;
}

/*
 * AGENT_REPLY to request @id: export @fd, or positive errno @error (and
 * then fd 0, as the kernel wants of a field that says nothing).
 */
static int kvp_agent_reply(int agent_fd, __u64 id, int fd, int error)
{
	struct kvpool_agent_reply arg = {
		.size = sizeof(arg),
		.id = id,
		.fd = error ? 0 : fd,
		.error = error,
	};

	return kvp_ioctl(agent_fd, KVPOOL_AGENT_REPLY, &arg);
}

/*
 * Answer request @rq: the export, or why there is none. 0 when the
 * request is done (answered, or gone: its client gave up), 1 when it was
 * answered with an error (the text says which and why), -errno when the
 * agent file can serve no more (-ENODEV: the pool is gone).
 */
static int kvp_agent_answer(int agent_fd, const struct kvpool_agent_request *rq)
{
	char what[KVP_ARENA_ERR_LEN];
	int err, ret, fd;

	err = kvp_cu_reexport(rq->out_pool_id, rq->out_fd, &fd);
	ret = kvp_agent_reply(agent_fd, rq->out_id, fd, err ? -err : 0);
	/* The kernel took its own reference, or the client is gone. */
	if (fd >= 0)
		close(fd);
	if (!err && ret && ret != -ENOENT && ret != -ENODEV) {
		/*
		 * The kernel refused the export (EBUSY: a pool's chunk,
		 * EINVAL: not an export file): the client must not wait for
		 * one that will never come.
		 */
		kvp_arena_fail("KVPOOL_AGENT_REPLY: %s", kvpool_strerror(ret));
		err = -EIO;
		ret = kvp_agent_reply(agent_fd, rq->out_id, 0, EIO);
	}
	if (ret == -ENOENT)
		ret = 0;
	if (ret)
		return ret;
	if (!err)
		return 0;
	snprintf(what, sizeof(what), "%s", kvpool_arena_error());
	kvp_arena_fail("pool %u, chunk %u for pid %u: %s", rq->out_pool_id,
		       rq->out_chunk, rq->out_client_pid, what);
	return 1;
}

KVP_PUBLIC
int kvpool_agent_serve(int agent_fd)
{
	int answered = 0, ret;

	kvp_arena_clear();
	for (;;) {
		struct kvpool_agent_request rq = { .size = sizeof(rq) };

		ret = kvp_ioctl(agent_fd, KVPOOL_AGENT_RECV, &rq);
		if (ret == -EAGAIN)
			return answered;
		if (ret) {
			kvp_arena_fail("KVPOOL_AGENT_RECV: %s",
				       kvpool_strerror(ret));
			return ret;
		}
		ret = kvp_agent_answer(agent_fd, &rq);
		if (ret < 0)
			return kvp_arena_done(ret);
		answered++;
		/*
		 * One failed export a call, so that the caller can log each
		 * with its text; it calls again for the rest.
		 */
		if (ret)
			return answered;
	}
}
