// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: the ioctl dispatcher and the pool device's ioctls. Each
 * op copies its arguments in (kvpool_uarray.c), checks their shape,
 * takes the pool lock around one core call (kvp_core.h) and copies the
 * answer out. The batch ops that share struct kvpool_batch are one table,
 * kvpd_batch_ops[].
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/nospec.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "kvpool_drv.h"
#include "kvpool_trace.h"

/*
 * Copies the user's struct in (checking size and unknown tail), runs the
 * op, and copies the struct back so out_* fields reach the caller, also
 * on errors that report something (ENOSPC's shortfall, the bad entry).
 * Unknown numbers are ENOTTY for everyone; only then are privileges
 * checked.
 */
long kvpd_dispatch(struct kvp_client *c, void *file_priv,
		   const struct kvpd_ioctl_op *ops, unsigned int nr_ops,
		   unsigned int base, unsigned int cmd, unsigned long arg)
{
	union kvpd_ucmd_buffer buf;
	const struct kvpd_ioctl_op *op;
	struct kvpd_ucmd ucmd = { .client = c, .file_priv = file_priv };
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != KVPOOL_TYPE || nr < base || nr - base >= nr_ops)
		return -ENOTTY;
	op = &ops[array_index_nospec(nr - base, nr_ops)];
	if (!op->execute || op->ioctl_num != cmd)
		return -ENOTTY;
	if ((op->flags & KVPD_OP_ADMIN) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	/*
	 * Whoever acts on a client's pages may be writing them: a quarantine
	 * waits for it (kvpool_quarantine.c). After the checks above, so an
	 * unknown or refused op stays ENOTTY or EPERM and counts no one.
	 */
	if (c) {
		ret = kvpd_users_note(&container_of(c, struct kvpd_pool_file,
						    c)->users);
		if (ret)
			return ret;
	}

	ucmd.ubuffer = (void __user *)arg;
	ret = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (ret)
		return ret;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	if (ucmd.user_size > PAGE_SIZE)
		return -E2BIG;
	/* The struct as this header knows it: by words (kvpd_copy_in()). */
	if (ucmd.user_size == op->size)
		ret = kvpd_copy_in(&buf, ucmd.ubuffer, op->size, op->size);
	else
		ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
					    ucmd.user_size);
	if (ret)
		return ret;
	ucmd.cmd = &buf;
	ucmd.op_size = op->size;
	ucmd.data = op->data;
	ret = op->execute(&ucmd);
	if (ret == -EFAULT || (!ret && ucmd.responded))
		return ret;
	if (kvpd_copy_out(ucmd.ubuffer, &buf,
			  min_t(u32, ucmd.user_size, op->size),
			  min_t(u32, ucmd.user_size, op->size)))
		return -EFAULT;
	return ret;
}

/*
 * Writes the struct back now, before the op takes effect: for the ops
 * whose result (a new fd, handle or id) the caller could not learn any
 * other way. If this faults, nothing has happened yet.
 */
int kvpd_respond(struct kvpd_ucmd *ucmd)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min(ucmd->user_size, ucmd->op_size)))
		return -EFAULT;
	ucmd->responded = true;
	return 0;
}

static int kvpd_check_batch(struct kvp_client *c, u32 flags, u32 count)
{
	if (flags)	/* flags a caller allows are masked off before */
		return -EOPNOTSUPP;
	if (!count || count > c->pool->max_batch)
		return -EINVAL;
	return 0;
}

static int kvpd_info_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvp_pool *pool = c->pool;
	struct kvpool_info *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	/* Geometry never changes after creation: no lock needed. */
	cmd->out_abi_version = KVPOOL_ABI_VERSION;
	cmd->out_pool_id = pool->id;
	/* The core's ops, and the driver's own: files, cgroup paths, agents. */
	cmd->out_features = KVP_CORE_FEATURES | KVPOOL_FEAT_ARENA |
			    KVPOOL_FEAT_TENANT_PATH | KVPOOL_FEAT_GPU_AGENT |
			    KVPOOL_FEAT_BUDGET;
	cmd->out_nr_pages = pool->nr_pages;
	cmd->out_page_tokens = pool->page_tokens;
	cmd->out_nr_rows = pool->nr_rows;
	cmd->out_row_tokens = pool->row_tokens;
	cmd->out_create_flags = pool->flags;
	cmd->out_max_batch = pool->max_batch;
	cmd->out_client_id = c->id;
	return 0;
}

static int kvpd_stats_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_stats *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	mutex_lock(&c->pool->lock);
	kvp_stats_locked(c, cmd);
	mutex_unlock(&c->pool->lock);
	return 0;
}

static int kvpd_row_alloc_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_row_alloc *cmd = ucmd->cmd;
	u64 hbuf[KVPD_STACK_ARRAY / sizeof(u64)];
	struct kvpool_handle *h = (void *)hbuf;
	struct kvpd_lock_ns lt;
	u32 freed, idx;
	int ret;

	cmd->out_short = 0;
	ret = kvpd_check_batch(c, cmd->flags, cmd->count);
	if (!ret && cmd->__reserved)
		ret = -EINVAL;
	if (!ret)
		ret = kvpd_check_len(cmd->entry_len, sizeof(*h));
	if (ret)
		return ret;
	if (cmd->count > sizeof(hbuf) / sizeof(*h)) {
		h = kvmalloc_array(cmd->count, sizeof(*h), GFP_KERNEL_ACCOUNT);
		if (!h)
			return -ENOMEM;
	}

	kvpd_lock_timed(c->pool, &lt, trace_kvpool_row_alloc_enabled());
	ret = kvp_row_alloc_locked(c, h, cmd->count, &cmd->out_short);
	trace_kvpool_row_alloc(c, cmd->count, h, cmd->out_short, ret, &lt);
	trace_kvpool_refuse(c, KVPOOL_CMD_ROW_ALLOC, ret, cmd->out_short);
	mutex_unlock(&c->pool->lock);
	if (ret)
		goto out_free;

	if (kvpd_write_array(cmd->handles, h, cmd->count, cmd->entry_len,
			     sizeof(*h), true)) {
		/*
		 * The caller cannot name rows it never learnt of: give them
		 * back rather than leave them held until close.
		 */
		mutex_lock(&c->pool->lock);
		ret = kvp_release_locked(c, h, cmd->count, 0, &freed, &idx);
		trace_kvpool_release(c, cmd->count, h[0].req_pool_idx, 0,
				     freed, idx, ret, NULL);
		mutex_unlock(&c->pool->lock);
		ret = -EFAULT;
	}
out_free:
	kvpd_array_free(h, hbuf);
	return ret;
}

/*
 * EXTEND's one output per entry, out_nr_new, written in place: one
 * user-access section, a store an entry, the caller's own fields never
 * rewritten (docs/design.md, "Arrays").
 */
static int kvpd_write_nr_new(u64 uptr, const struct kvpool_extend_entry *e,
			     u32 count, u32 len)
{
	char __user *u = u64_to_user_ptr(uptr);
	u32 i;

	if (!user_write_access_begin(u, (size_t)count * len))
		return -EFAULT;
	for (i = 0; i < count; i++)
		unsafe_put_user(e[i].out_nr_new,
				(u32 __user *)(u + (size_t)i * len +
					       offsetof(struct kvpool_extend_entry,
							out_nr_new)),
				efault);
	user_write_access_end();
	return 0;
efault:
	user_write_access_end();
	return -EFAULT;
}

/* Page ids an EXTEND keeps on its stack (docs/design.md, "Arrays"). */
#define KVPD_STACK_PAGES	64

/*
 * The steps of an op its _start_locked() function returned @ret for,
 * with the pool lock dropped between two of them: another client waits
 * at most one step's pages for it, not for the whole op
 * (docs/gpu-budget.md). The op cannot fail any more, and its rows are
 * busy to its own client, so nothing it relies on changes while the
 * lock is free. @lt, when timed, ends up with the longest
 * single hold and the waits of all retakes.
 */
static int kvpd_op_run(int ret, struct kvp_op *op, struct kvpd_lock_ns *lt)
{
	while (!ret && kvp_op_step_locked(op))
		kvpd_lock_break(op->c->pool, lt);
	return ret;
}

/* kvp_extend_mem_get() as kvpd_lock_break_do() calls it, unlocked. */
static void kvpd_extend_mem_get(void *arg)
{
	struct kvp_extend_mem *mem = arg;

	kvp_extend_mem_get(mem);
}

/*
 * EXTEND under the pool lock, in steps if it is big. Its own frame: the
 * op beside the ioctl's stack buffers would pass the kernel's frame
 * limit in a KASAN build.
 */
static noinline_for_stack int
kvpd_extend_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
		   const struct kvpool_extend *cmd, u32 *pages, u32 pcap,
		   struct kvp_extend_result *res, struct kvpd_lock_ns *lt)
{
	struct kvp_extend_mem mem = {};
	struct kvp_op op;
	int tries, ret;

	/*
	 * A big EXTEND's arrays are allocated with the lock dropped (struct
	 * kvp_extend_mem): the start asks, changing nothing, and is run
	 * again with them. The pool may change meanwhile, so it may ask
	 * again; after a few tries it allocates under the lock, so that an
	 * EXTEND always ends.
	 */
	for (tries = 0; ; tries++) {
		ret = kvp_extend_start_locked(c, e, cmd->count, cmd->pages_cap,
					      pages, pcap, res, &op,
					      tries < 3 ? &mem : NULL);
		/* Chunks a budget is zeroing: wait for them, lock dropped. */
		if (ret == KVP_EXTEND_NEED_CLEAR) {
			kvpd_lock_break_do(c->pool, lt, kvpd_budget_wait,
					   kvpd_dev_of(c->pool));
			continue;
		}
		if (ret != KVP_EXTEND_NEED_MEM)
			break;
		kvpd_lock_break_do(c->pool, lt, kvpd_extend_mem_get, &mem);
		/* A failed allocation leaves none: ENOMEM, nothing changed. */
		if (!mem.pages && !mem.row) {
			ret = -ENOMEM;
			break;
		}
	}
	kvp_extend_mem_put(&mem);
	return kvpd_op_run(ret, &op, lt);
}

static int kvpd_extend_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_extend *cmd = ucmd->cmd;
	u64 ebuf[KVPD_STACK_ARRAY / sizeof(u64)];
	struct kvpool_extend_entry *e;
	struct kvp_extend_result res;
	struct kvpd_lock_ns lt;
	u32 pbuf[KVPD_STACK_PAGES];
	size_t ssize, esize, eroom;
	u32 *pages = pbuf, pcap;
	bool scratch;
	void *ebp;
	char *sb;
	int ret;

	cmd->out_nr_pages = 0;
	cmd->out_short = 0;
	cmd->out_error_index = ~0U;
	ret = kvpd_check_batch(c, cmd->flags, cmd->count);
	if (!ret && cmd->__reserved)
		ret = -EINVAL;
	if (!ret)
		ret = kvpd_check_len(cmd->entry_len, sizeof(*e));
	if (!ret)
		ret = kvpd_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;

	/*
	 * The entries, then the new ids after them, in the file's scratch
	 * buffer when this call has it and they fit; else on the stack.
	 */
	scratch = kvpd_scratch_get(c, (void **)&sb, &ssize);
	esize = (size_t)cmd->count * sizeof(*e);
	eroom = ALIGN(esize, sizeof(u64));
	ebp = ssize > sizeof(ebuf) ? (void *)sb : (void *)ebuf;
	e = kvpd_read_array_buf(cmd->entries, cmd->count, cmd->entry_len,
				sizeof(*e), &cmd->out_error_index, ebp,
				ebp == sb ? ssize : sizeof(ebuf));
	if (IS_ERR(e)) {
		ret = PTR_ERR(e);
		goto out_scratch;
	}
	pcap = ARRAY_SIZE(pbuf);
	if ((void *)e == sb && ssize - eroom > sizeof(pbuf)) {
		pages = (u32 *)(sb + eroom);
		pcap = (ssize - eroom) / sizeof(u32);
	} else if ((void *)e != sb && ssize > sizeof(pbuf)) {
		pages = (u32 *)sb;
		pcap = ssize / sizeof(u32);
	}

	kvpd_lock_timed(c->pool, &lt, trace_kvpool_extend_enabled());
	ret = kvpd_extend_locked(c, e, cmd, pages, pcap, &res, &lt);
	trace_kvpool_extend(c, cmd->count, e, &res, ret, &lt);
	trace_kvpool_refuse(c, KVPOOL_CMD_EXTEND, ret, res.shortfall);
	mutex_unlock(&c->pool->lock);
	cmd->out_nr_pages = res.nr_pages;
	cmd->out_short = res.shortfall;
	cmd->out_error_index = res.error_index;
	if (ret)
		goto out_free;

	if (kvpd_write_nr_new(cmd->entries, e, cmd->count, cmd->entry_len) ||
	    kvpd_write_array(cmd->pages, res.pages, res.nr_pages,
			     cmd->page_entry_len, sizeof(u32), true))
		ret = -EFAULT;
out_free:
	kvpd_array_free(res.pages, pages);
	kvpd_array_free(e, ebp);
out_scratch:
	if (scratch)
		kvpd_scratch_put(c, ret ? 0 :
				 eroom + (size_t)res.nr_pages * sizeof(u32));
	return ret;
}

/*
 * The ops that share struct kvpool_batch, one row each in
 * kvpd_batch_ops[] (by command number): the size of an entry, the flags
 * the op takes, its core call and its event. @run is called under the
 * pool lock with the entries read in; it fills cmd->out_*, and may drop
 * the lock between the steps of a stepped op (kvpd_op_run()). @traced and
 * @trace are the event's trace_*_enabled() and trace_*() (one event
 * class, so one type), or NULL for an op without one: the lock is timed
 * only when the event is on.
 */
struct kvpd_batch_op {
	size_t entry_size;
	u32 flags;
	int (*run)(struct kvp_client *c, const void *e,
		   struct kvpool_batch *cmd, struct kvpd_lock_ns *lt);
	bool (*traced)(void);
	void (*trace)(const struct kvp_client *c, u32 count, u32 row,
		      u32 flags, u32 pages, u32 error_index, int err,
		      const struct kvpd_lock_ns *l);
};

/*
 * The event's @row is the first u32 of the first entry: a handle's
 * req_pool_idx (struct kvpool_len_entry starts with its handle), or
 * CACHE_EVICT's page id.
 */
static_assert(offsetof(struct kvpool_handle, req_pool_idx) == 0);
static_assert(offsetof(struct kvpool_len_entry, handle) == 0);

static int kvpd_commit_run(struct kvp_client *c, const void *e,
			   struct kvpool_batch *cmd,
			   struct kvpd_lock_ns *lt)
{
	return kvp_commit_locked(c, e, cmd->count, &cmd->out_error_index);
}

static int kvpd_trim_run(struct kvp_client *c, const void *e,
			 struct kvpool_batch *cmd,
			 struct kvpd_lock_ns *lt)
{
	struct kvp_op op;
	int ret;

	ret = kvp_trim_start_locked(c, e, cmd->count, &cmd->out_nr_pages,
				    &cmd->out_error_index, &op);
	return kvpd_op_run(ret, &op, lt);
}

static int kvpd_release_run(struct kvp_client *c, const void *e,
			    struct kvpool_batch *cmd, struct kvpd_lock_ns *lt)
{
	struct kvp_op op;
	int ret;

	ret = kvp_release_start_locked(c, e, cmd->count, cmd->flags,
				       &cmd->out_nr_pages,
				       &cmd->out_error_index, &op);
	return kvpd_op_run(ret, &op, lt);
}

static int kvpd_donate_run(struct kvp_client *c, const void *e,
			   struct kvpool_batch *cmd,
			   struct kvpd_lock_ns *lt)
{
	struct kvp_op op;
	int ret;

	ret = kvp_donate_start_locked(c, e, cmd->count, &cmd->out_nr_pages,
				      &cmd->out_error_index, &op);
	return kvpd_op_run(ret, &op, lt);
}

static int kvpd_swa_free_run(struct kvp_client *c, const void *e,
			     struct kvpool_batch *cmd,
			     struct kvpd_lock_ns *lt)
{
	struct kvp_op op;
	int ret;

	ret = kvp_swa_free_start_locked(c, e, cmd->count, &cmd->out_nr_pages,
					&cmd->out_error_index, &op);
	return kvpd_op_run(ret, &op, lt);
}

static int kvpd_cache_evict_run(struct kvp_client *c, const void *e,
				struct kvpool_batch *cmd,
				struct kvpd_lock_ns *lt)
{
	int ret = kvp_cache_evict_locked(c, e, cmd->count,
					 &cmd->out_error_index);

	if (!ret)
		cmd->out_nr_pages = cmd->count;
	return ret;
}

static const struct kvpd_batch_op kvpd_batch_ops[] = {
	[KVPOOL_CMD_COMMIT] = {
		.entry_size = sizeof(struct kvpool_len_entry),
		.run = kvpd_commit_run,
	},
	[KVPOOL_CMD_TRIM] = {
		.entry_size = sizeof(struct kvpool_handle),
		.run = kvpd_trim_run,
		.traced = trace_kvpool_trim_enabled,
		.trace = trace_kvpool_trim,
	},
	[KVPOOL_CMD_RELEASE] = {
		.entry_size = sizeof(struct kvpool_handle),
		.flags = KVPOOL_RELEASE_DONATE,
		.run = kvpd_release_run,
		.traced = trace_kvpool_release_enabled,
		.trace = trace_kvpool_release,
	},
	[KVPOOL_CMD_DONATE] = {
		.entry_size = sizeof(struct kvpool_len_entry),
		.run = kvpd_donate_run,
		.traced = trace_kvpool_donate_enabled,
		.trace = trace_kvpool_donate,
	},
	[KVPOOL_CMD_SWA_FREE] = {
		.entry_size = sizeof(struct kvpool_len_entry),
		.run = kvpd_swa_free_run,
		.traced = trace_kvpool_swa_free_enabled,
		.trace = trace_kvpool_swa_free,
	},
	[KVPOOL_CMD_CACHE_EVICT] = {
		.entry_size = sizeof(u32),
		.run = kvpd_cache_evict_run,
		.traced = trace_kvpool_cache_evict_enabled,
		.trace = trace_kvpool_cache_evict,
	},
};

/* Every op of kvpd_batch_ops[]: its row is the op table's data. */
static int kvpd_batch_ioctl(struct kvpd_ucmd *ucmd)
{
	const struct kvpd_batch_op *op = ucmd->data;
	struct kvp_client *c = ucmd->client;
	struct kvpool_batch *cmd = ucmd->cmd;
	size_t size = op->entry_size;
	u64 ebuf[KVPD_STACK_ARRAY / sizeof(u64)];
	void *e, *ebp, *sb;
	struct kvpd_lock_ns lt;
	size_t ssize;
	bool scratch;
	int ret;

	cmd->out_error_index = ~0U;
	cmd->out_nr_pages = 0;
	ret = kvpd_check_batch(c, cmd->flags & ~op->flags, cmd->count);
	if (!ret)
		ret = kvpd_check_len(cmd->entry_len, size);
	if (ret)
		return ret;
	scratch = kvpd_scratch_get(c, &sb, &ssize);
	ebp = ssize > sizeof(ebuf) ? sb : ebuf;
	e = kvpd_read_array_buf(cmd->entries, cmd->count, cmd->entry_len, size,
				&cmd->out_error_index, ebp,
				ebp == sb ? ssize : sizeof(ebuf));
	if (IS_ERR(e)) {
		ret = PTR_ERR(e);
		goto out_scratch;
	}

	kvpd_lock_timed(c->pool, &lt, op->traced && op->traced());
	ret = op->run(c, e, cmd, &lt);
	if (op->trace)
		op->trace(c, cmd->count, *(const u32 *)e, cmd->flags,
			  cmd->out_nr_pages, cmd->out_error_index, ret, &lt);
	mutex_unlock(&c->pool->lock);
	kvpd_array_free(e, ebp);
out_scratch:
	if (scratch)
		kvpd_scratch_put(c, ret ? 0 : (size_t)cmd->count * size);
	return ret;
}

static int kvpd_attach_prefix_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_attach *cmd = ucmd->cmd;
	u32 max = c->pool->row_tokens / c->pool->page_tokens;
	u32 *pages;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (!cmd->nr_pages || cmd->nr_pages > max)
		return -EINVAL;
	ret = kvpd_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	pages = kvpd_read_array(cmd->pages, cmd->nr_pages, cmd->page_entry_len,
				sizeof(u32), NULL);
	if (IS_ERR(pages))
		return PTR_ERR(pages);
	mutex_lock(&c->pool->lock);
	ret = kvp_attach_prefix_locked(c, &cmd->handle, pages, cmd->nr_pages);
	mutex_unlock(&c->pool->lock);
	kvfree(pages);
	return ret;
}

/* TO_SLOT names a row; FROM_SLOT only writes one; SLOT_RELEASE needs none. */
static int kvpd_slot_check(struct kvpool_slot *cmd, bool handle_must_be_0)
{
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (handle_must_be_0 &&
	    (cmd->handle.req_pool_idx || cmd->handle.generation))
		return -EINVAL;
	cmd->out_nr_pages = 0;
	return 0;
}

static int kvpd_to_slot_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvpd_slot_check(cmd, false);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_to_slot_locked(c, &cmd->handle, cmd->session_id,
				 &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static bool kvpd_same_handle(const struct kvpool_handle *a,
			     const struct kvpool_handle *b)
{
	return a->req_pool_idx == b->req_pool_idx &&
	       a->generation == b->generation;
}

/*
 * The new handle is the only name the caller gets for the row: it is
 * written back before the row leaves the slot (see kvpd_respond()).
 */
static int kvpd_from_slot_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	struct kvpool_handle h, now;
	u32 n, n_now;
	int ret;

	ret = kvpd_slot_check(cmd, false);
	if (ret)
		return ret;
	memset(&cmd->handle, 0, sizeof(cmd->handle));
	mutex_lock(&c->pool->lock);
	ret = kvp_from_slot_peek_locked(c, cmd->session_id, &h, &n);
	mutex_unlock(&c->pool->lock);
	if (ret)
		return ret;
	cmd->handle = h;
	cmd->out_nr_pages = n;
	ret = kvpd_respond(ucmd);
	if (ret)
		return ret;

	mutex_lock(&c->pool->lock);
	/* Another thread of the caller may have changed the slot since. */
	ret = kvp_from_slot_peek_locked(c, cmd->session_id, &now, &n_now);
	if (!ret && (!kvpd_same_handle(&h, &now) || n != n_now))
		ret = -EAGAIN;
	if (!ret)
		ret = kvp_from_slot_locked(c, cmd->session_id, &now, &n_now);
	mutex_unlock(&c->pool->lock);
	if (ret) {
		ucmd->responded = false;
		memset(&cmd->handle, 0, sizeof(cmd->handle));
		cmd->out_nr_pages = 0;
	}
	return ret;
}

static int kvpd_slot_release_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvpd_slot_check(cmd, true);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_slot_release_locked(c, cmd->session_id, &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static int kvpd_row_query_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_row_query *cmd = ucmd->cmd;
	u32 *pages = NULL;
	int ret;

	if (cmd->flags & ~KVPOOL_QUERY_BY_SLOT)
		return -EOPNOTSUPP;
	if (cmd->flags & KVPOOL_QUERY_BY_SLOT) {
		if (cmd->handle.req_pool_idx || cmd->handle.generation)
			return -EINVAL;
	} else if (cmd->session_id) {
		return -EINVAL;
	}
	if (cmd->__reserved)
		return -EINVAL;
	ret = kvpd_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_row_query_locked(c, cmd, &pages);
	mutex_unlock(&c->pool->lock);
	if (ret)
		return ret;
	if (pages &&
	    kvpd_write_array(cmd->pages, pages,
			     min(cmd->pages_cap, cmd->out_nr_pages),
			     cmd->page_entry_len, sizeof(u32), true))
		ret = -EFAULT;
	kvfree(pages);
	return ret;
}

static int kvpd_verify_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_pool *pool = ucmd->client->pool;
	struct kvpool_verify *cmd = ucmd->cmd;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&pool->lock);
	ret = kvp_verify_locked(pool, &cmd->out_violations);
	mutex_unlock(&pool->lock);
	if (ret)
		return ret;
	cmd->out_pages_checked = pool->nr_pages;
	cmd->out_rows_checked = pool->nr_rows;
	return 0;
}

static int kvpd_pressure_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_pressure *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&c->pool->lock);
	cmd->out_ask_pages = kvp_pressure_locked(c, &cmd->out_reasons);
	cmd->out_free_pages = c->pool->free_pages;
	cmd->out_low_wmark = c->pool->low_wmark;
	cmd->out_high_wmark = c->pool->high_wmark;
	trace_kvpool_pressure(c, cmd->out_ask_pages, cmd->out_reasons, false);
	mutex_unlock(&c->pool->lock);
	return 0;
}

#define KVPD_POOL_OP(_name, _fn, _struct, _last, _flags)		\
	KVPD_OP(KVPOOL_CMD_INFO, _name, _fn, _struct, _last, _flags)
#define KVPD_POOL_BATCH_OP(_name)					\
	KVPD_OP_DATA(KVPOOL_CMD_INFO, _name, kvpd_batch_ioctl,		\
		     struct kvpool_batch, out_nr_pages, 0,		\
		     &kvpd_batch_ops[KVPOOL_CMD_##_name])

static const struct kvpd_ioctl_op kvpd_pool_ops[] = {
	KVPD_POOL_OP(INFO, kvpd_info_ioctl, struct kvpool_info,
		     __reserved, 0),
	KVPD_POOL_OP(STATS, kvpd_stats_ioctl, struct kvpool_stats,
		     out_tenant_max_rows, 0),
	KVPD_POOL_OP(ROW_ALLOC, kvpd_row_alloc_ioctl,
		     struct kvpool_row_alloc, __reserved, 0),
	KVPD_POOL_OP(EXTEND, kvpd_extend_ioctl, struct kvpool_extend,
		     __reserved, 0),
	KVPD_POOL_BATCH_OP(COMMIT),
	KVPD_POOL_BATCH_OP(TRIM),
	KVPD_POOL_BATCH_OP(RELEASE),
	KVPD_POOL_OP(TO_SLOT, kvpd_to_slot_ioctl, struct kvpool_slot,
		     __reserved, 0),
	KVPD_POOL_OP(FROM_SLOT, kvpd_from_slot_ioctl, struct kvpool_slot,
		     __reserved, 0),
	KVPD_POOL_OP(SLOT_RELEASE, kvpd_slot_release_ioctl,
		     struct kvpool_slot, __reserved, 0),
	KVPD_POOL_OP(ROW_QUERY, kvpd_row_query_ioctl,
		     struct kvpool_row_query, __reserved, 0),
	/* O(pool) under the pool lock: not for every client to repeat. */
	KVPD_POOL_OP(VERIFY, kvpd_verify_ioctl, struct kvpool_verify,
		     __reserved, KVPD_OP_ADMIN),
	KVPD_POOL_BATCH_OP(DONATE),
	KVPD_POOL_OP(ATTACH_PREFIX, kvpd_attach_prefix_ioctl,
		     struct kvpool_attach, pages, 0),
	KVPD_POOL_BATCH_OP(CACHE_EVICT),
	KVPD_POOL_BATCH_OP(SWA_FREE),
	KVPD_POOL_OP(EXPORT, kvpd_export_ioctl, struct kvpool_export,
		     out_nr_pages, 0),
	KVPD_POOL_OP(IMPORT, kvpd_import_ioctl, struct kvpool_import,
		     __reserved2, 0),
	KVPD_POOL_OP(PRESSURE, kvpd_pressure_ioctl,
		     struct kvpool_pressure, __reserved, 0),
	KVPD_POOL_OP(ARENA, kvpd_arena_ioctl, struct kvpool_arena, fds, 0),
};

long kvpd_pool_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kvp_client *c = file->private_data;
	u32 seq = READ_ONCE(c->pool->pressure_seq), now;
	long ret;

	ret = kvpd_dispatch(c, NULL, kvpd_pool_ops, ARRAY_SIZE(kvpd_pool_ops),
			    KVPOOL_CMD_INFO, cmd, arg);
	/*
	 * Whatever the op freed, a budget pool gives back the chunks it no
	 * longer needs: here, once for every op, not in each op that frees.
	 */
	if (kvpd_dev_of(c->pool)->backing) {
		mutex_lock(&c->pool->lock);
		kvpd_budget_trim_locked(kvpd_dev_of(c->pool), false);
		mutex_unlock(&c->pool->lock);
	}
	/* The op may have raised someone's ask: let pollers look again. */
	now = READ_ONCE(c->pool->pressure_seq);
	if (now != seq) {
		trace_kvpool_pressure_raise(c->pool->id, c->id, _IOC_NR(cmd),
					    now);
		wake_up_interruptible_all(&kvpd_dev_of(c->pool)->wq);
	}
	return ret;
}
