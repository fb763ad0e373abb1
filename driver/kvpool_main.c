// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool: a broker for GPU KV-cache page ownership across processes.
 *
 * Each pool is a misc device, /dev/kvpoolN; each open file is a client
 * that owns request rows and pages until it releases them or its last
 * reference goes. /dev/kvpool-control creates and destroys pools.
 *
 *	int fd = open("/dev/kvpool0", O_RDWR | O_CLOEXEC);
 *	struct kvpool_handle h;
 *	struct kvpool_row_alloc a = {
 *		.size = sizeof(a), .count = 1, .handles = (uintptr_t)&h,
 *	};
 *	ioctl(fd, KVPOOL_ROW_ALLOC, &a);	// h names a row of this client
 *	...
 *	close(fd);				// every row and page goes back
 *
 * The pool's state machine lives in kvp_core.c; this file copies
 * arguments in and out, checks their shape, and takes the pool lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "kvp_core.h"

#define KVPOOL_MAX_POOLS	64

/*
 * A pool device. @core (and its clients) is protected by core.lock;
 * @dead and @nr_exports too. The table of pools is protected by
 * kvpool_devs_lock.
 */
struct kvpool_dev {
	struct kvp_pool core;
	struct miscdevice misc;
	wait_queue_head_t wq;	/* pollers waiting for pressure */
	u32 nr_exports;		/* export files alive: they point here */
	bool dead;		/* being destroyed: refuse new clients */
	char name[24];		/* "kvpool" and an int */
};

/*
 * An export file's private data. @idx and @imported are protected by
 * kd->core.lock; @kd is fixed, and kept alive by kd->nr_exports.
 */
struct kvpool_export_file {
	struct kvpool_dev *kd;
	u32 idx;
	bool imported;
};

static struct kvpool_dev *kvpool_dev_of(struct kvp_pool *pool)
{
	return container_of(pool, struct kvpool_dev, core);
}

static DEFINE_MUTEX(kvpool_devs_lock);
static struct kvpool_dev *kvpool_devs[KVPOOL_MAX_POOLS];	/* by id */
static DEFINE_IDA(kvpool_ida);

static unsigned int nr_pages = 65536;
module_param(nr_pages, uint, 0444);
MODULE_PARM_DESC(nr_pages, "Pages in the default pool /dev/kvpool0 (0: create none; default 65536)");
static unsigned int page_tokens = 1;
module_param(page_tokens, uint, 0444);
MODULE_PARM_DESC(page_tokens, "Tokens per page of the default pool (default 1)");
static unsigned int nr_rows = 1024;
module_param(nr_rows, uint, 0444);
MODULE_PARM_DESC(nr_rows, "Request rows of the default pool (default 1024)");
static unsigned int row_tokens = 32768;
module_param(row_tokens, uint, 0444);
MODULE_PARM_DESC(row_tokens, "Longest row of the default pool, in tokens (default 32768)");
static bool reserve_zero = true;
module_param(reserve_zero, bool, 0444);
MODULE_PARM_DESC(reserve_zero, "Reserve page 0 and row 0 of the default pool (default true)");

/* Per-call state of an ioctl: the user's struct and our copy of it. */
struct kvpool_ucmd {
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

union kvpool_ucmd_buffer {
	struct kvpool_info info;
	struct kvpool_stats stats;
	struct kvpool_row_alloc row_alloc;
	struct kvpool_extend extend;
	struct kvpool_batch batch;
	struct kvpool_slot slot;
	struct kvpool_row_query query;
	struct kvpool_verify verify;
	struct kvpool_attach attach;
	struct kvpool_export export;
	struct kvpool_import import;
	struct kvpool_pressure pressure;
	struct kvpool_ctl_tenant tenant;
	struct kvpool_ctl_tenant_list tenant_list;
	struct kvpool_ctl_wmark wmark;
	struct kvpool_ctl_create create;
	struct kvpool_ctl_destroy destroy;
};

struct kvpool_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	int (*execute)(void *ctx, struct kvpool_ucmd *ucmd);
};

#define KVPOOL_OP(_name, _fn, _struct, _last)				\
	[KVPOOL_CMD_##_name - KVPOOL_CMD_BASE] = {			\
		.size = sizeof(_struct),				\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = KVPOOL_##_name,				\
		.execute = _fn,						\
	}

/*
 * Copies the user's struct in (checking size and unknown tail), runs the
 * op, and copies the struct back so out_* fields reach the caller, also
 * on errors that report something (ENOSPC's shortfall, the bad entry).
 */
static long kvpool_dispatch(void *ctx, const struct kvpool_ioctl_op *ops,
			    unsigned int nr_ops, unsigned int base,
			    unsigned int cmd, unsigned long arg)
{
	union kvpool_ucmd_buffer buf;
	const struct kvpool_ioctl_op *op;
	struct kvpool_ucmd ucmd = {};
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != KVPOOL_TYPE || nr < base || nr - base >= nr_ops)
		return -ENOTTY;
	op = &ops[nr - base];
	if (!op->execute || op->ioctl_num != cmd)
		return -ENOTTY;

	ucmd.ubuffer = (void __user *)arg;
	ret = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (ret)
		return ret;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	if (ucmd.user_size > PAGE_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
				    ucmd.user_size);
	if (ret)
		return ret;
	ucmd.cmd = &buf;
	ret = op->execute(ctx, &ucmd);
	if (ret == -EFAULT || ret == -ENOTTY)
		return ret;
	if (copy_to_user(ucmd.ubuffer, &buf,
			 min_t(u32, ucmd.user_size, op->size)))
		return -EFAULT;
	return ret;
}

/* ---- pool ioctls ---- */

static int kvpool_check_batch(struct kvp_client *c, u32 flags, u32 count,
			      u32 reserved)
{
	if (flags)	/* flags a caller allows are masked off before */
		return -EOPNOTSUPP;
	if (reserved || !count || count > c->pool->max_batch)
		return -EINVAL;
	return 0;
}

static void *kvpool_copy_array(u64 uptr, u32 count, size_t size)
{
	void *p = kvmalloc_array(count, size, GFP_KERNEL_ACCOUNT);

	if (!p)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(p, u64_to_user_ptr(uptr), (size_t)count * size)) {
		kvfree(p);
		return ERR_PTR(-EFAULT);
	}
	return p;
}

static int kvpool_info(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvp_pool *pool = c->pool;
	struct kvpool_info *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	/* Geometry never changes after creation: no lock needed. */
	cmd->out_abi_version = KVPOOL_ABI_VERSION;
	cmd->out_pool_id = pool->id;
	cmd->out_features = KVPOOL_FEAT_ROWS | KVPOOL_FEAT_EXTEND |
			    KVPOOL_FEAT_SLOTS | KVPOOL_FEAT_VERIFY |
			    KVPOOL_FEAT_PREFIX_CACHE | KVPOOL_FEAT_SWA |
			    KVPOOL_FEAT_EXPORT | KVPOOL_FEAT_QUOTA |
			    KVPOOL_FEAT_PRESSURE;
	cmd->out_nr_pages = pool->nr_pages;
	cmd->out_page_tokens = pool->page_tokens;
	cmd->out_nr_rows = pool->nr_rows;
	cmd->out_row_tokens = pool->row_tokens;
	cmd->out_create_flags = pool->flags;
	cmd->out_max_batch = pool->max_batch;
	cmd->out_client_id = c->id;
	return 0;
}

static int kvpool_stats(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_stats *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&c->pool->lock);
	kvp_stats_locked(c, cmd);
	mutex_unlock(&c->pool->lock);
	return 0;
}

static int kvpool_row_alloc(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_row_alloc *cmd = ucmd->cmd;
	struct kvpool_handle *h;
	u32 freed, idx;
	int ret;

	ret = kvpool_check_batch(c, cmd->flags, cmd->count, 0);
	if (ret)
		return ret;
	h = kvmalloc_array(cmd->count, sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		return -ENOMEM;

	mutex_lock(&c->pool->lock);
	ret = kvp_row_alloc_locked(c, h, cmd->count, &cmd->out_short);
	mutex_unlock(&c->pool->lock);
	if (ret)
		goto out_free;

	if (copy_to_user(u64_to_user_ptr(cmd->handles), h,
			 cmd->count * sizeof(*h))) {
		/*
		 * The caller cannot name rows it never learnt of: give them
		 * back rather than leave them held until close.
		 */
		mutex_lock(&c->pool->lock);
		kvp_release_locked(c, h, cmd->count, 0, &freed, &idx);
		mutex_unlock(&c->pool->lock);
		ret = -EFAULT;
	}
out_free:
	kvfree(h);
	return ret;
}

static int kvpool_extend(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_extend *cmd = ucmd->cmd;
	struct kvpool_extend_entry *e;
	struct kvp_extend_result res;
	int ret;

	cmd->out_nr_pages = 0;
	cmd->out_short = 0;
	cmd->out_error_index = ~0U;
	ret = kvpool_check_batch(c, cmd->flags, cmd->count, cmd->__reserved);
	if (ret)
		return ret;
	e = kvpool_copy_array(cmd->entries, cmd->count, sizeof(*e));
	if (IS_ERR(e))
		return PTR_ERR(e);

	mutex_lock(&c->pool->lock);
	ret = kvp_extend_locked(c, e, cmd->count, cmd->pages_cap, &res);
	mutex_unlock(&c->pool->lock);
	cmd->out_nr_pages = res.nr_pages;
	cmd->out_short = res.shortfall;
	cmd->out_error_index = res.error_index;
	if (ret)
		goto out_free;

	if (copy_to_user(u64_to_user_ptr(cmd->entries), e,
			 cmd->count * sizeof(*e)) ||
	    copy_to_user(u64_to_user_ptr(cmd->pages), res.pages,
			 (size_t)res.nr_pages * sizeof(u32)))
		ret = -EFAULT;
out_free:
	kvfree(res.pages);
	kvfree(e);
	return ret;
}

enum kvpool_batch_op {
	KVPOOL_OP_COMMIT,
	KVPOOL_OP_TRIM,
	KVPOOL_OP_RELEASE,
	KVPOOL_OP_DONATE,
	KVPOOL_OP_SWA_FREE,
	KVPOOL_OP_CACHE_EVICT,
};

/* The ops that share struct kvpool_batch: entry size and allowed flags. */
static const struct {
	size_t entry_size;
	u32 flags;
} kvpool_batch_ops[] = {
	[KVPOOL_OP_COMMIT] = { sizeof(struct kvpool_len_entry), 0 },
	[KVPOOL_OP_TRIM] = { sizeof(struct kvpool_handle), 0 },
	[KVPOOL_OP_RELEASE] = { sizeof(struct kvpool_handle),
				KVPOOL_RELEASE_DONATE },
	[KVPOOL_OP_DONATE] = { sizeof(struct kvpool_len_entry), 0 },
	[KVPOOL_OP_SWA_FREE] = { sizeof(struct kvpool_len_entry), 0 },
	[KVPOOL_OP_CACHE_EVICT] = { sizeof(u32), 0 },
};

static int kvpool_batch(struct kvp_client *c, struct kvpool_batch *cmd,
			enum kvpool_batch_op op)
{
	size_t size = kvpool_batch_ops[op].entry_size;
	void *e;
	int ret;

	cmd->out_error_index = ~0U;
	cmd->out_nr_pages = 0;
	ret = kvpool_check_batch(c, cmd->flags & ~kvpool_batch_ops[op].flags,
				 cmd->count, cmd->__reserved);
	if (ret)
		return ret;
	e = kvpool_copy_array(cmd->entries, cmd->count, size);
	if (IS_ERR(e))
		return PTR_ERR(e);

	mutex_lock(&c->pool->lock);
	switch (op) {
	case KVPOOL_OP_COMMIT:
		ret = kvp_commit_locked(c, e, cmd->count,
					&cmd->out_error_index);
		break;
	case KVPOOL_OP_TRIM:
		ret = kvp_trim_locked(c, e, cmd->count, &cmd->out_nr_pages,
				      &cmd->out_error_index);
		break;
	case KVPOOL_OP_RELEASE:
		ret = kvp_release_locked(c, e, cmd->count, cmd->flags,
					 &cmd->out_nr_pages,
					 &cmd->out_error_index);
		break;
	case KVPOOL_OP_DONATE:
		ret = kvp_donate_locked(c, e, cmd->count, &cmd->out_nr_pages,
					&cmd->out_error_index);
		break;
	case KVPOOL_OP_SWA_FREE:
		ret = kvp_swa_free_locked(c, e, cmd->count, &cmd->out_nr_pages,
					  &cmd->out_error_index);
		break;
	case KVPOOL_OP_CACHE_EVICT:
		ret = kvp_cache_evict_locked(c, e, cmd->count,
					     &cmd->out_error_index);
		if (!ret)
			cmd->out_nr_pages = cmd->count;
		break;
	}
	mutex_unlock(&c->pool->lock);
	kvfree(e);
	return ret;
}

static int kvpool_commit(void *ctx, struct kvpool_ucmd *ucmd)
{
	return kvpool_batch(ctx, ucmd->cmd, KVPOOL_OP_COMMIT);
}

static int kvpool_trim(void *ctx, struct kvpool_ucmd *ucmd)
{
	return kvpool_batch(ctx, ucmd->cmd, KVPOOL_OP_TRIM);
}

static int kvpool_release_rows(void *ctx, struct kvpool_ucmd *ucmd)
{
	return kvpool_batch(ctx, ucmd->cmd, KVPOOL_OP_RELEASE);
}

static int kvpool_donate(void *ctx, struct kvpool_ucmd *ucmd)
{
	return kvpool_batch(ctx, ucmd->cmd, KVPOOL_OP_DONATE);
}

static int kvpool_swa_free(void *ctx, struct kvpool_ucmd *ucmd)
{
	return kvpool_batch(ctx, ucmd->cmd, KVPOOL_OP_SWA_FREE);
}

static int kvpool_cache_evict(void *ctx, struct kvpool_ucmd *ucmd)
{
	return kvpool_batch(ctx, ucmd->cmd, KVPOOL_OP_CACHE_EVICT);
}

static int kvpool_attach_prefix(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_attach *cmd = ucmd->cmd;
	u32 max = c->pool->row_tokens / c->pool->page_tokens;
	u32 *pages;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved || !cmd->nr_pages || cmd->nr_pages > max)
		return -EINVAL;
	pages = kvpool_copy_array(cmd->pages, cmd->nr_pages, sizeof(u32));
	if (IS_ERR(pages))
		return PTR_ERR(pages);
	mutex_lock(&c->pool->lock);
	ret = kvp_attach_prefix_locked(c, &cmd->handle, pages, cmd->nr_pages);
	mutex_unlock(&c->pool->lock);
	kvfree(pages);
	return ret;
}

/* TO_SLOT names a row; FROM_SLOT and SLOT_RELEASE get or need none. */
static int kvpool_slot_check(struct kvpool_slot *cmd, bool takes_handle)
{
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!takes_handle &&
	    (cmd->handle.req_pool_idx || cmd->handle.generation))
		return -EINVAL;
	cmd->out_nr_pages = 0;
	return 0;
}

static int kvpool_to_slot(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvpool_slot_check(cmd, true);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_to_slot_locked(c, &cmd->handle, cmd->session_id,
				 &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static int kvpool_from_slot(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvpool_slot_check(cmd, false);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_from_slot_locked(c, cmd->session_id, &cmd->handle,
				   &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	/*
	 * If the new handle cannot be copied out, the row stays held under
	 * it until released or the client closes: the session id is gone
	 * either way, and the caller learns of it through -EFAULT.
	 */
	return ret;
}

static int kvpool_slot_release(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvpool_slot_check(cmd, false);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_slot_release_locked(c, cmd->session_id, &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static int kvpool_row_query(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
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
	mutex_lock(&c->pool->lock);
	ret = kvp_row_query_locked(c, cmd, &pages);
	mutex_unlock(&c->pool->lock);
	if (ret)
		return ret;
	if (pages &&
	    copy_to_user(u64_to_user_ptr(cmd->pages), pages,
			 (size_t)min(cmd->pages_cap, cmd->out_nr_pages) *
			 sizeof(u32)))
		ret = -EFAULT;
	kvfree(pages);
	return ret;
}

static int kvpool_verify(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvp_pool *pool = c->pool;
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

/* ---- export files ---- */

static int kvpool_export_release(struct inode *inode, struct file *file)
{
	struct kvpool_export_file *x = file->private_data;
	struct kvpool_dev *kd = x->kd;

	mutex_lock(&kd->core.lock);
	if (!x->imported)
		kvp_export_drop_locked(&kd->core, x->idx);
	kd->nr_exports--;
	mutex_unlock(&kd->core.lock);
	kfree(x);
	return 0;
}

static const struct file_operations kvpool_export_fops = {
	.owner = THIS_MODULE,
	.release = kvpool_export_release,
};

static int kvpool_export(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_dev *kd = kvpool_dev_of(c->pool);
	struct kvpool_export *cmd = ucmd->cmd;
	struct kvpool_export_file *x;
	struct file *file;
	int fd, ret;

	cmd->out_fd = -1;
	cmd->out_nr_pages = 0;
	if (cmd->flags & ~KVPOOL_EXPORT_SLOT)
		return -EOPNOTSUPP;
	if (cmd->flags & KVPOOL_EXPORT_SLOT) {
		if (cmd->handle.req_pool_idx || cmd->handle.generation)
			return -EINVAL;
	} else if (cmd->session_id) {
		return -EINVAL;
	}

	/*
	 * The fd number reaches the caller only through the struct: make
	 * sure it can be written before the row leaves the client.
	 */
	if (put_user(-1, &((struct kvpool_export __user *)ucmd->ubuffer)->out_fd))
		return -EFAULT;

	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x)
		return -ENOMEM;
	x->kd = kd;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto out_free;
	}
	file = anon_inode_getfile("[kvpool-row]", &kvpool_export_fops, x,
				  O_RDWR);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_put_fd;
	}

	mutex_lock(&kd->core.lock);
	ret = kvp_export_locked(c, cmd, &x->idx, &cmd->out_nr_pages);
	kd->nr_exports++;	/* the file's; its release drops it */
	/* Nothing exported: the file must not drop anything either. */
	x->imported = ret;
	mutex_unlock(&kd->core.lock);
	if (ret) {
		fput(file);
		put_unused_fd(fd);
		return ret;
	}
	fd_install(fd, file);
	cmd->out_fd = fd;
	return 0;

out_put_fd:
	put_unused_fd(fd);
out_free:
	kfree(x);
	return ret;
}

static int kvpool_import(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
	struct kvpool_import *cmd = ucmd->cmd;
	struct kvpool_export_file *x;
	struct file *file;
	int ret;

	memset(&cmd->out_handle, 0, sizeof(cmd->out_handle));
	cmd->out_nr_pages = 0;
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	file = fget(cmd->fd);
	if (!file)
		return -EBADF;
	if (file->f_op != &kvpool_export_fops) {
		ret = -EINVAL;
		goto out;
	}
	x = file->private_data;
	if (x->kd != kvpool_dev_of(c->pool)) {
		ret = -EXDEV;
		goto out;
	}
	mutex_lock(&c->pool->lock);
	ret = x->imported ? -EALREADY :
	      kvp_import_locked(c, x->idx, &cmd->out_handle,
				&cmd->out_nr_pages);
	if (!ret)
		x->imported = true;
	mutex_unlock(&c->pool->lock);
out:
	fput(file);
	return ret;
}

static int kvpool_pressure(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvp_client *c = ctx;
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
	mutex_unlock(&c->pool->lock);
	return 0;
}

static const struct kvpool_ioctl_op kvpool_ops[] = {
	KVPOOL_OP(INFO, kvpool_info, struct kvpool_info, __reserved),
	/* Tenant and export figures came later: older callers stop before. */
	KVPOOL_OP(STATS, kvpool_stats, struct kvpool_stats, __reserved),
	KVPOOL_OP(ROW_ALLOC, kvpool_row_alloc, struct kvpool_row_alloc,
		  handles),
	KVPOOL_OP(EXTEND, kvpool_extend, struct kvpool_extend,
		  __reserved),
	KVPOOL_OP(COMMIT, kvpool_commit, struct kvpool_batch,
		  __reserved),
	KVPOOL_OP(TRIM, kvpool_trim, struct kvpool_batch, __reserved),
	KVPOOL_OP(RELEASE, kvpool_release_rows, struct kvpool_batch,
		  __reserved),
	KVPOOL_OP(TO_SLOT, kvpool_to_slot, struct kvpool_slot,
		  __reserved),
	KVPOOL_OP(FROM_SLOT, kvpool_from_slot, struct kvpool_slot,
		  __reserved),
	KVPOOL_OP(SLOT_RELEASE, kvpool_slot_release, struct kvpool_slot,
		  __reserved),
	KVPOOL_OP(ROW_QUERY, kvpool_row_query, struct kvpool_row_query,
		  out_swa_evicted_len),
	KVPOOL_OP(VERIFY, kvpool_verify, struct kvpool_verify,
		  __reserved),
	KVPOOL_OP(DONATE, kvpool_donate, struct kvpool_batch, __reserved),
	KVPOOL_OP(ATTACH_PREFIX, kvpool_attach_prefix, struct kvpool_attach,
		  pages),
	KVPOOL_OP(CACHE_EVICT, kvpool_cache_evict, struct kvpool_batch,
		  __reserved),
	KVPOOL_OP(SWA_FREE, kvpool_swa_free, struct kvpool_batch, __reserved),
	KVPOOL_OP(EXPORT, kvpool_export, struct kvpool_export, out_nr_pages),
	KVPOOL_OP(IMPORT, kvpool_import, struct kvpool_import, __reserved2),
	KVPOOL_OP(PRESSURE, kvpool_pressure, struct kvpool_pressure,
		  __reserved),
};

static long kvpool_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	struct kvp_client *c = file->private_data;
	u32 seq = READ_ONCE(c->pool->pressure_seq);
	long ret;

	ret = kvpool_dispatch(c, kvpool_ops, ARRAY_SIZE(kvpool_ops),
			      KVPOOL_CMD_BASE, cmd, arg);
	/* The op crossed a watermark or refused someone: look again. */
	if (READ_ONCE(c->pool->pressure_seq) != seq)
		wake_up_interruptible_all(&kvpool_dev_of(c->pool)->wq);
	return ret;
}

static __poll_t kvpool_poll(struct file *file, poll_table *wait)
{
	struct kvp_client *c = file->private_data;
	u32 ask, why;

	poll_wait(file, &kvpool_dev_of(c->pool)->wq, wait);
	mutex_lock(&c->pool->lock);
	ask = kvp_pressure_locked(c, &why);
	mutex_unlock(&c->pool->lock);
	return ask ? EPOLLPRI : 0;
}

static int kvpool_open(struct inode *inode, struct file *file)
{
	/* misc_open() set private_data and holds misc_mtx: see destroy. */
	struct kvpool_dev *kd = container_of(file->private_data,
					     struct kvpool_dev, misc);
	struct kvp_client *c;
	int ret;

	u64 cgid = 0;
	u32 uid;

	/*
	 * The tenant is the opener's, fixed now: a client cannot change it
	 * by moving cgroups or passing the file on.
	 */
#ifdef CONFIG_CGROUPS
	rcu_read_lock();
	cgid = cgroup_id(task_dfl_cgroup(current));
	rcu_read_unlock();
#endif
	uid = from_kuid(&init_user_ns, current_euid());

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV :
	      kvp_client_attach_tenant_locked(&kd->core, c, cgid, uid);
	mutex_unlock(&kd->core.lock);
	if (ret) {
		kfree(c);
		return ret;
	}
	file->private_data = c;
	return nonseekable_open(inode, file);
}

/* The last reference to the file is gone: give back all it held. */
static int kvpool_release(struct inode *inode, struct file *file)
{
	struct kvp_client *c = file->private_data;
	struct kvp_pool *pool = c->pool;

	mutex_lock(&pool->lock);
	kvp_client_detach_locked(c);
	mutex_unlock(&pool->lock);
	kfree(c);
	return 0;
}

static void kvpool_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct kvp_client *c = file->private_data;
	struct kvp_pool *pool = c->pool;

	mutex_lock(&pool->lock);
	seq_printf(m, "kvpool-pool:\t%u\n", pool->id);
	seq_printf(m, "kvpool-client-id:\t%u\n", c->id);
	seq_printf(m, "kvpool-tenant:\t%u\n", c->tenant->id);
	seq_printf(m, "kvpool-rows:\t%u\n", c->nr_rows);
	seq_printf(m, "kvpool-slots:\t%u\n", c->nr_slots);
	seq_printf(m, "kvpool-pages:\t%u\n", c->nr_pages);
	seq_printf(m, "kvpool-cache-pages:\t%u\n", c->nr_cache_pages);
	mutex_unlock(&pool->lock);
}

static const struct file_operations kvpool_fops = {
	.owner = THIS_MODULE,
	.open = kvpool_open,
	.release = kvpool_release,
	.unlocked_ioctl = kvpool_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.show_fdinfo = kvpool_show_fdinfo,
	.poll = kvpool_poll,
};

/* ---- sysfs: /sys/class/misc/kvpoolN/ ---- */

static struct kvp_pool *kvpool_dev_pool(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return &container_of(misc, struct kvpool_dev, misc)->core;
}

/* A pool figure: the u32 at @offset in struct kvp_pool. */
struct kvpool_attr {
	struct device_attribute dev_attr;
	size_t offset;
};

static ssize_t kvpool_attr_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvpool_dev_pool(dev);
	size_t offset = container_of(attr, struct kvpool_attr, dev_attr)->offset;
	u32 val;

	mutex_lock(&pool->lock);
	val = *(u32 *)((char *)pool + offset);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%u\n", val);
}

#define KVPOOL_ATTR(_name, _member)					\
	static struct kvpool_attr dev_attr_##_name = {			\
		.dev_attr = __ATTR(_name, 0444, kvpool_attr_show, NULL),	\
		.offset = offsetof(struct kvp_pool, _member),		\
	}

KVPOOL_ATTR(pool_id, id);
KVPOOL_ATTR(nr_pages, nr_pages);
KVPOOL_ATTR(page_tokens, page_tokens);
KVPOOL_ATTR(nr_rows, nr_rows);
KVPOOL_ATTR(row_tokens, row_tokens);
KVPOOL_ATTR(create_flags, flags);
KVPOOL_ATTR(free_pages, free_pages);
KVPOOL_ATTR(row_pages, row_pages);
KVPOOL_ATTR(slot_pages, slot_pages);
KVPOOL_ATTR(cache_evictable, cache_evictable);
KVPOOL_ATTR(cache_pinned, cache_pinned);
KVPOOL_ATTR(reserved_pages, reserved_pages);
KVPOOL_ATTR(free_rows, free_rows);
KVPOOL_ATTR(held_rows, held_rows);
KVPOOL_ATTR(slot_rows, slot_rows);
KVPOOL_ATTR(reserved_rows, reserved_rows);
KVPOOL_ATTR(nr_clients, nr_clients);
KVPOOL_ATTR(nr_tenants, nr_tenants);
KVPOOL_ATTR(export_rows, export_rows);
KVPOOL_ATTR(export_pages, export_pages);
KVPOOL_ATTR(low_wmark, low_wmark);
KVPOOL_ATTR(high_wmark, high_wmark);

static struct attribute *kvpool_attrs[] = {
	&dev_attr_pool_id.dev_attr.attr,
	&dev_attr_nr_pages.dev_attr.attr,
	&dev_attr_page_tokens.dev_attr.attr,
	&dev_attr_nr_rows.dev_attr.attr,
	&dev_attr_row_tokens.dev_attr.attr,
	&dev_attr_create_flags.dev_attr.attr,
	&dev_attr_free_pages.dev_attr.attr,
	&dev_attr_row_pages.dev_attr.attr,
	&dev_attr_slot_pages.dev_attr.attr,
	&dev_attr_cache_evictable.dev_attr.attr,
	&dev_attr_cache_pinned.dev_attr.attr,
	&dev_attr_reserved_pages.dev_attr.attr,
	&dev_attr_free_rows.dev_attr.attr,
	&dev_attr_held_rows.dev_attr.attr,
	&dev_attr_slot_rows.dev_attr.attr,
	&dev_attr_reserved_rows.dev_attr.attr,
	&dev_attr_nr_clients.dev_attr.attr,
	&dev_attr_nr_tenants.dev_attr.attr,
	&dev_attr_export_rows.dev_attr.attr,
	&dev_attr_export_pages.dev_attr.attr,
	&dev_attr_low_wmark.dev_attr.attr,
	&dev_attr_high_wmark.dev_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(kvpool);

/* ---- pool lifetime ---- */

static int kvpool_create(u32 flags, u32 pages, u32 ptok, u32 rows, u32 rtok,
			 u32 *out_id)
{
	struct kvpool_dev *kd;
	int id, ret;

	ret = kvp_geom_check(flags, pages, ptok, rows, rtok);
	if (ret)
		return ret;
	kd = kzalloc(sizeof(*kd), GFP_KERNEL);
	if (!kd)
		return -ENOMEM;

	mutex_lock(&kvpool_devs_lock);
	id = ida_alloc_max(&kvpool_ida, KVPOOL_MAX_POOLS - 1, GFP_KERNEL);
	if (id < 0) {
		ret = id;	/* -ENOSPC: all KVPOOL_MAX_POOLS exist */
		goto out_unlock;
	}
	ret = kvp_pool_init(&kd->core, id, flags, pages, ptok, rows, rtok);
	if (ret)
		goto out_free_id;
	snprintf(kd->name, sizeof(kd->name), "kvpool%d", id);
	kd->misc.minor = MISC_DYNAMIC_MINOR;
	kd->misc.name = kd->name;
	kd->misc.fops = &kvpool_fops;
	kd->misc.groups = kvpool_groups;
	kd->misc.mode = 0600;
	init_waitqueue_head(&kd->wq);
	ret = misc_register(&kd->misc);
	if (ret)
		goto out_fini;
	kvpool_devs[id] = kd;
	mutex_unlock(&kvpool_devs_lock);
	*out_id = id;
	return 0;

out_fini:
	kvp_pool_fini(&kd->core);
out_free_id:
	ida_free(&kvpool_ida, id);
out_unlock:
	mutex_unlock(&kvpool_devs_lock);
	kfree(kd);
	return ret;
}

/* Called with kvpool_devs_lock held. */
static int kvpool_destroy_locked(u32 id)
{
	struct kvpool_dev *kd;

	if (id >= KVPOOL_MAX_POOLS || !kvpool_devs[id])
		return -ENODEV;
	kd = kvpool_devs[id];

	/*
	 * Opens run under misc_mtx and take the pool lock to join; once we
	 * mark the pool dead under that lock with no clients, none can
	 * join, and misc_deregister() waits out any open still in flight.
	 */
	mutex_lock(&kd->core.lock);
	if (kd->core.nr_clients || kd->nr_exports) {
		mutex_unlock(&kd->core.lock);
		return -EBUSY;
	}
	kd->dead = true;
	mutex_unlock(&kd->core.lock);

	misc_deregister(&kd->misc);
	kvpool_devs[id] = NULL;
	kvp_pool_fini(&kd->core);
	ida_free(&kvpool_ida, id);
	kfree(kd);
	return 0;
}

/* ---- control device ---- */

static int kvpool_ctl_create(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvpool_ctl_create *cmd = ucmd->cmd;

	if (cmd->flags & ~KVPOOL_CREATE_RESERVE_ZERO)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	return kvpool_create(cmd->flags, cmd->nr_pages, cmd->page_tokens,
			     cmd->nr_rows, cmd->row_tokens, &cmd->out_pool_id);
}

/* Runs @fn on pool @id with its lock held, then wakes its pollers. */
static int kvpool_ctl_on_pool(u32 id, int (*fn)(struct kvp_pool *, void *),
			      void *arg)
{
	struct kvpool_dev *kd;
	int ret;

	mutex_lock(&kvpool_devs_lock);
	kd = id < KVPOOL_MAX_POOLS ? kvpool_devs[id] : NULL;
	if (!kd) {
		mutex_unlock(&kvpool_devs_lock);
		return -ENODEV;
	}
	mutex_lock(&kd->core.lock);
	ret = fn(&kd->core, arg);
	mutex_unlock(&kd->core.lock);
	wake_up_interruptible_all(&kd->wq);
	mutex_unlock(&kvpool_devs_lock);
	return ret;
}

static int kvpool_tenant_set_fn(struct kvp_pool *pool, void *arg)
{
	return kvp_tenant_set_locked(pool, arg);
}

static int kvpool_ctl_tenant_set(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvpool_ctl_tenant *cmd = ucmd->cmd;

	if (cmd->flags & ~KVPOOL_TENANT_BY_ID)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	return kvpool_ctl_on_pool(cmd->pool_id, kvpool_tenant_set_fn, cmd);
}

static int kvpool_wmark_fn(struct kvp_pool *pool, void *arg)
{
	struct kvpool_ctl_wmark *cmd = arg;

	return kvp_set_wmark_locked(pool, cmd->low_wmark, cmd->high_wmark);
}

static int kvpool_ctl_set_wmark(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvpool_ctl_wmark *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	return kvpool_ctl_on_pool(cmd->pool_id, kvpool_wmark_fn, cmd);
}

struct kvpool_list_arg {
	struct kvpool_tenant_info *info;
	u32 count;
	u32 nr;
};

static int kvpool_tenant_list_fn(struct kvp_pool *pool, void *arg)
{
	struct kvpool_list_arg *la = arg;

	la->nr = kvp_tenant_list_locked(pool, la->info, la->count);
	return 0;
}

static int kvpool_ctl_tenant_list(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvpool_ctl_tenant_list *cmd = ucmd->cmd;
	struct kvpool_list_arg la = { };
	int ret;

	cmd->out_nr_tenants = 0;
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	la.count = min_t(u32, cmd->count, KVP_MAX_TENANTS);
	if (la.count) {
		la.info = kvcalloc(la.count, sizeof(*la.info), GFP_KERNEL);
		if (!la.info)
			return -ENOMEM;
	}
	ret = kvpool_ctl_on_pool(cmd->pool_id, kvpool_tenant_list_fn, &la);
	if (!ret) {
		cmd->out_nr_tenants = la.nr;
		if (copy_to_user(u64_to_user_ptr(cmd->tenants), la.info,
				 (size_t)min(la.count, la.nr) *
				 sizeof(*la.info)))
			ret = -EFAULT;
	}
	kvfree(la.info);
	return ret;
}

static int kvpool_ctl_destroy(void *ctx, struct kvpool_ucmd *ucmd)
{
	struct kvpool_ctl_destroy *cmd = ucmd->cmd;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&kvpool_devs_lock);
	ret = kvpool_destroy_locked(cmd->pool_id);
	mutex_unlock(&kvpool_devs_lock);
	return ret;
}

static const struct kvpool_ioctl_op kvpool_ctl_ops[] = {
	[0] = {
		.size = sizeof(struct kvpool_ctl_create),
		.min_size = offsetofend(struct kvpool_ctl_create, __reserved),
		.ioctl_num = KVPOOL_CTL_CREATE,
		.execute = kvpool_ctl_create,
	},
	[1] = {
		.size = sizeof(struct kvpool_ctl_destroy),
		.min_size = offsetofend(struct kvpool_ctl_destroy, __reserved),
		.ioctl_num = KVPOOL_CTL_DESTROY,
		.execute = kvpool_ctl_destroy,
	},
	[2] = {
		.size = sizeof(struct kvpool_ctl_tenant),
		.min_size = offsetofend(struct kvpool_ctl_tenant, __reserved2),
		.ioctl_num = KVPOOL_CTL_TENANT_SET,
		.execute = kvpool_ctl_tenant_set,
	},
	[3] = {
		.size = sizeof(struct kvpool_ctl_tenant_list),
		.min_size = offsetofend(struct kvpool_ctl_tenant_list,
					__reserved),
		.ioctl_num = KVPOOL_CTL_TENANT_LIST,
		.execute = kvpool_ctl_tenant_list,
	},
	[4] = {
		.size = sizeof(struct kvpool_ctl_wmark),
		.min_size = offsetofend(struct kvpool_ctl_wmark, __reserved),
		.ioctl_num = KVPOOL_CTL_SET_WMARK,
		.execute = kvpool_ctl_set_wmark,
	},
};

static long kvpool_ctl_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	/* Unknown numbers are ENOTTY for everyone, as the header says. */
	if ((cmd == KVPOOL_CTL_CREATE || cmd == KVPOOL_CTL_DESTROY ||
	     cmd == KVPOOL_CTL_TENANT_SET || cmd == KVPOOL_CTL_TENANT_LIST ||
	     cmd == KVPOOL_CTL_SET_WMARK) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return kvpool_dispatch(NULL, kvpool_ctl_ops, ARRAY_SIZE(kvpool_ctl_ops),
			       KVPOOL_CMD_CTL_CREATE, cmd, arg);
}

static const struct file_operations kvpool_ctl_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.unlocked_ioctl = kvpool_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice kvpool_ctl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kvpool-control",
	.fops = &kvpool_ctl_fops,
	.mode = 0600,
};

static void kvpool_destroy_all(void)
{
	int id;

	/* No file of ours is open: the module could not be unloading. */
	mutex_lock(&kvpool_devs_lock);
	for (id = 0; id < KVPOOL_MAX_POOLS; id++)
		if (kvpool_devs[id])
			WARN_ON(kvpool_destroy_locked(id));
	mutex_unlock(&kvpool_devs_lock);
}

static int __init kvpool_init(void)
{
	u32 id;
	int ret;

	ret = misc_register(&kvpool_ctl_misc);
	if (ret)
		return ret;
	if (!nr_pages)
		return 0;
	ret = kvpool_create(reserve_zero ? KVPOOL_CREATE_RESERVE_ZERO : 0,
			    nr_pages, page_tokens, nr_rows, row_tokens, &id);
	if (ret) {
		pr_err("default pool: bad geometry or no memory (%d)\n", ret);
		misc_deregister(&kvpool_ctl_misc);
		return ret;
	}
	return 0;
}

static void __exit kvpool_exit(void)
{
	misc_deregister(&kvpool_ctl_misc);
	kvpool_destroy_all();
	ida_destroy(&kvpool_ida);
}

module_init(kvpool_init);
module_exit(kvpool_exit);

MODULE_DESCRIPTION("Cross-process broker for GPU KV-cache page ownership");
MODULE_AUTHOR("The kvpool authors");
MODULE_LICENSE("GPL");
