// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: a pool's GPU agent (docs/gpu-agent.md).
 *
 * An arena set with KVPOOL_ARENA_SET_AGENT never hands its chunk files
 * (the masters) to clients: on NVIDIA's driver a chunk file is a full
 * /dev/nvidiactl open whose export any holder can rewrite. Instead a
 * client's ARENA queues one request per chunk, and the pool's agent, a
 * trusted daemon holding a CUDA context, takes each with AGENT_RECV (a
 * descriptor of the master), imports and exports the allocation afresh
 * and answers with AGENT_REPLY; the client alone gets that new file.
 *
 * A request belongs to the client's call, on its heap: the pool's queue
 * and the agent's list of taken requests only link it, so a client that
 * gives up unlinks its own and nothing outlives the call. The agent file
 * holds its pool's device (the arena, the masters) but not its id.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/errno.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "kvpool_drv.h"

/* The agent file's private data. @taken is protected by the pool lock. */
struct kvpd_agent {
	struct kvpd_dev *kd;		/* a reference to its device */
	struct pid *pid;		/* the process that attached */
	struct list_head taken;		/* requests received, not answered */
};

enum kvpd_agent_req_state {
	KVPD_REQ_QUEUED,		/* on kvpd_dev.agent_queue */
	KVPD_REQ_TAKEN,			/* on its agent's @taken */
	KVPD_REQ_DONE,			/* answered: @file or @error */
};

struct kvpd_agent_call;

/* One chunk a client asked for. All but @call is under the pool lock. */
struct kvpd_agent_req {
	struct list_head link;
	u64 id;
	u32 chunk;
	enum kvpd_agent_req_state state;
	int error;
	struct file *file;		/* the answer: a reference */
	struct kvpd_agent_call *call;
};

/*
 * The requests of one ARENA call. @pending, the requests not DONE, is
 * written under the pool lock and read by the sleeping caller with
 * READ_ONCE; it takes the lock before it reads any answer. @client is
 * the caller's, alive while it waits in the call.
 */
struct kvpd_agent_call {
	u32 pending;
	struct pid *client;
	struct kvpd_agent_req req[];
};

void kvpd_agent_init(struct kvpd_dev *kd)
{
	INIT_LIST_HEAD(&kd->agent_queue);
	init_waitqueue_head(&kd->agent_wq);
	init_waitqueue_head(&kd->reply_wq);
}

/* The attached agent's process as the caller sees it; 0 if none. */
u32 kvpd_agent_pid_locked(struct kvpd_dev *kd)
{
	lockdep_assert_held(&kd->core.lock);
	return kd->agent ? pid_vnr(kd->agent->pid) : 0;
}

/* Destroy set @dead: the agent's poll says hangup, its ops ENODEV. */
void kvpd_agent_pool_dead(struct kvpd_dev *kd)
{
	wake_up_interruptible_poll(&kd->agent_wq, EPOLLHUP);
}

/**
 * kvpd_agent_fetch() - have the pool's agent export chunks for the caller
 * @kd: the pool, which the caller is a client of
 * @a: its arena, set with KVPOOL_ARENA_SET_AGENT
 * @first: the first chunk
 * @count: how many
 * @nowait: EAGAIN rather than queue when no agent is attached
 * @files: out, @count references to the agent's fresh exports
 *
 * Queues one request per chunk and sleeps, interruptibly, until the
 * agent has answered them all; an agent that goes leaves its requests to
 * the next. A signal or an answer that is an error ends the call with
 * every request unlinked and every answer put.
 *
 * Context: process context, no lock held; sleeps.
 * Return: 0 with @files set; -EAGAIN, -ERESTARTSYS, -EIO or -ENOMEM with
 * none.
 */
int kvpd_agent_fetch(struct kvpd_dev *kd, const struct kvpd_arena *a,
		     u32 first, u32 count, bool nowait, struct file **files)
{
	struct kvpd_agent_call *call;
	u32 i;
	int ret;

	call = kzalloc(struct_size(call, req, count), GFP_KERNEL_ACCOUNT);
	if (!call)
		return -ENOMEM;
	call->client = task_tgid(current);

	mutex_lock(&kd->core.lock);
	if (nowait && !kd->agent) {
		mutex_unlock(&kd->core.lock);
		kfree(call);
		return -EAGAIN;
	}
	for (i = 0; i < count; i++) {
		struct kvpd_agent_req *r = &call->req[i];

		r->id = ++kd->agent_seq;
		r->chunk = first + i;
		r->call = call;
		r->state = KVPD_REQ_QUEUED;
		list_add_tail(&r->link, &kd->agent_queue);
	}
	call->pending = count;
	mutex_unlock(&kd->core.lock);
	wake_up_interruptible_poll(&kd->agent_wq, EPOLLIN | EPOLLRDNORM);

	ret = wait_event_interruptible(kd->reply_wq, !READ_ONCE(call->pending));

	mutex_lock(&kd->core.lock);
	/* Every answer came: a signal that raced with the last is moot. */
	if (!call->pending)
		ret = 0;
	for (i = 0; i < count; i++) {
		struct kvpd_agent_req *r = &call->req[i];

		if (r->state != KVPD_REQ_DONE)
			list_del(&r->link);
		else if (r->error && !ret)
			ret = r->error;
	}
	mutex_unlock(&kd->core.lock);

	for (i = 0; i < count; i++) {
		struct file *f = call->req[i].file;

		files[i] = ret ? NULL : f;
		if (ret && f)
			fput(f);
	}
	kfree(call);
	return ret;
}

static struct kvpd_agent_req *kvpd_agent_find_locked(struct kvpd_agent *ag,
						     u64 id)
{
	struct kvpd_agent_req *r;

	list_for_each_entry(r, &ag->taken, link)
		if (r->id == id)
			return r;
	return NULL;
}

/*
 * A received request whose descriptor could not be given: back to the
 * head of the queue, unless its client gave up meanwhile.
 */
static void kvpd_agent_untake(struct kvpd_agent *ag, u64 id)
{
	struct kvpd_dev *kd = ag->kd;
	struct kvpd_agent_req *r;

	mutex_lock(&kd->core.lock);
	r = kvpd_agent_find_locked(ag, id);
	if (r) {
		r->state = KVPD_REQ_QUEUED;
		list_move(&r->link, &kd->agent_queue);
	}
	mutex_unlock(&kd->core.lock);
}

static int kvpd_agent_recv_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_agent_request *cmd = ucmd->cmd;
	struct kvpd_agent *ag = ucmd->file_priv;
	struct kvpd_dev *kd = ag->kd;
	struct kvpd_agent_req *r;
	struct file *master;
	int fd, ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	mutex_lock(&kd->core.lock);
	if (kd->dead) {
		mutex_unlock(&kd->core.lock);
		return -ENODEV;
	}
	r = list_first_entry_or_null(&kd->agent_queue, struct kvpd_agent_req,
				     link);
	if (!r) {
		mutex_unlock(&kd->core.lock);
		return -EAGAIN;
	}
	r->state = KVPD_REQ_TAKEN;
	list_move_tail(&r->link, &ag->taken);
	cmd->out_id = r->id;
	cmd->out_pool_id = kd->core.id;
	cmd->out_chunk = r->chunk;
	cmd->out_bytes = kd->arena->chunk[r->chunk].bytes;
	cmd->out_client_pid = pid_vnr(r->call->client);
	/* The arena is fixed and lives with the device the agent holds. */
	master = kd->arena->chunk[r->chunk].file;
	mutex_unlock(&kd->core.lock);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto out_untake;
	}
	cmd->out_fd = fd;
	ret = kvpd_respond(ucmd);
	if (ret) {
		put_unused_fd(fd);
		goto out_untake;
	}
	fd_install(fd, get_file(master));
	return 0;

out_untake:
	kvpd_agent_untake(ag, cmd->out_id);
	return ret;
}

static int kvpd_agent_reply_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_agent_reply *cmd = ucmd->cmd;
	struct kvpd_agent *ag = ucmd->file_priv;
	struct kvpd_dev *kd = ag->kd;
	struct kvpd_agent_req *r;
	struct file *file = NULL;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->error < 0 || cmd->error > MAX_ERRNO)
		return -EINVAL;
	if (!cmd->error) {
		file = fget(cmd->fd);
		if (!file)
			return -EBADF;
		ret = kvpd_arena_check_cuda(file);
		if (ret)
			goto out_put;
		/*
		 * A chunk of a pool, the request's own master included, is
		 * its pool's: no client may get it.
		 */
		ret = -EBUSY;
		if (kvpd_chunk_file_hashed(file))
			goto out_put;
	} else if (cmd->fd) {
		return -EINVAL;
	}

	mutex_lock(&kd->core.lock);
	ret = -ENODEV;
	if (kd->dead)
		goto out_unlock;
	ret = -ENOENT;
	r = kvpd_agent_find_locked(ag, cmd->id);
	if (!r)
		goto out_unlock;
	r->state = KVPD_REQ_DONE;
	r->file = file;
	r->error = cmd->error ? -EIO : 0;
	list_del(&r->link);
	WRITE_ONCE(r->call->pending, r->call->pending - 1);
	mutex_unlock(&kd->core.lock);
	wake_up_all(&kd->reply_wq);
	return 0;

out_unlock:
	mutex_unlock(&kd->core.lock);
out_put:
	if (file)
		fput(file);
	return ret;
}

#define KVPD_AGENT_OP(_name, _fn, _struct, _last)			\
	KVPD_OP(KVPOOL_CMD_AGENT_RECV, _name, _fn, _struct, _last, 0)

static const struct kvpd_ioctl_op kvpd_agent_ops[] = {
	KVPD_AGENT_OP(AGENT_RECV, kvpd_agent_recv_ioctl,
		      struct kvpool_agent_request, out_bytes),
	KVPD_AGENT_OP(AGENT_REPLY, kvpd_agent_reply_ioctl,
		      struct kvpool_agent_reply, error),
};

static long kvpd_agent_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	return kvpd_dispatch(NULL, file->private_data, kvpd_agent_ops,
			     ARRAY_SIZE(kvpd_agent_ops), KVPOOL_CMD_AGENT_RECV,
			     cmd, arg);
}

static __poll_t kvpd_agent_poll(struct file *file, poll_table *wait)
{
	struct kvpd_agent *ag = file->private_data;
	struct kvpd_dev *kd = ag->kd;
	__poll_t mask = 0;

	poll_wait(file, &kd->agent_wq, wait);
	mutex_lock(&kd->core.lock);
	if (kd->dead)
		mask = EPOLLHUP;
	else if (!list_empty(&kd->agent_queue))
		mask = EPOLLIN | EPOLLRDNORM;
	mutex_unlock(&kd->core.lock);
	return mask;
}

/*
 * The agent goes (closed, or its process died): what it took and did not
 * answer goes back to the head of the queue, in order, for the next one;
 * the clients waiting for it keep waiting.
 */
static void kvpd_agent_detach(struct kvpd_agent *ag)
{
	struct kvpd_dev *kd = ag->kd;
	struct kvpd_agent_req *r;

	mutex_lock(&kd->core.lock);
	list_for_each_entry(r, &ag->taken, link)
		r->state = KVPD_REQ_QUEUED;
	list_splice(&ag->taken, &kd->agent_queue);
	if (kd->agent == ag)
		kd->agent = NULL;
	mutex_unlock(&kd->core.lock);
	put_pid(ag->pid);
	put_device(&kd->dev);
	kfree(ag);
}

static int kvpd_agent_release(struct inode *inode, struct file *file)
{
	kvpd_agent_detach(file->private_data);
	return 0;
}

static const struct file_operations kvpd_agent_fops = {
	.owner = THIS_MODULE,
	.poll = kvpd_agent_poll,
	.unlocked_ioctl = kvpd_agent_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = kvpd_agent_release,
	.llseek = noop_llseek,
};

/* CTL_AGENT: a reference to the pool, never the table's lock, held. */
int kvpd_ctl_agent_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_agent *cmd = ucmd->cmd;
	struct kvpd_agent *ag;
	struct kvpd_dev *kd;
	struct file *file;
	int fd, ret;

	cmd->out_fd = -1;
	if (cmd->flags)
		return -EOPNOTSUPP;
	ag = kzalloc(sizeof(*ag), GFP_KERNEL_ACCOUNT);
	if (!ag)
		return -ENOMEM;
	INIT_LIST_HEAD(&ag->taken);

	kd = kvpd_pool_get(cmd->pool_id);
	if (!kd) {
		kfree(ag);
		return -ENODEV;
	}
	/* Only a CUDA arena has exports to mint, and only a GPU pool one. */
	ret = -EINVAL;
	if (!kd->gpu)
		goto out_free;
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV : kd->agent ? -EBUSY : 0;
	if (!ret) {
		ag->kd = kd;
		ag->pid = get_pid(task_tgid(current));
		get_device(&kd->dev);	/* the agent file's */
		kd->agent = ag;
	}
	mutex_unlock(&kd->core.lock);
	if (ret)
		goto out_free;
	put_device(&kd->dev);	/* the agent file holds its own */

	/* From here on the file's release, or the lines below, detach it. */
	file = anon_inode_getfile("[kvpool-agent]", &kvpd_agent_fops, ag,
				  O_RDWR | O_CLOEXEC);
	if (IS_ERR(file)) {
		kvpd_agent_detach(ag);
		return PTR_ERR(file);
	}
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		fput(file);
		return fd;
	}
	cmd->out_fd = fd;
	ret = kvpd_respond(ucmd);
	if (ret) {
		put_unused_fd(fd);
		fput(file);
		return ret;
	}
	fd_install(fd, file);
	return 0;

out_free:
	put_device(&kd->dev);
	kfree(ag);
	return ret;
}
