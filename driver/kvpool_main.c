// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool: a broker for GPU KV-cache page ownership across processes.
 *
 * Each pool is a character device of class "kvpool", /dev/kvpoolN; each
 * open file is a client that owns request rows and pages until it
 * releases them or its last reference goes. /dev/kvpool-control (a misc
 * device) creates and destroys pools.
 *
 *	int fd = open("/dev/kvpool0", O_RDWR | O_CLOEXEC);
 *	struct kvpool_handle h;
 *	struct kvpool_row_alloc a = {
 *		.size = sizeof(a), .count = 1,
 *		.entry_len = sizeof(h), .handles = (uintptr_t)&h,
 *	};
 *	ioctl(fd, KVPOOL_ROW_ALLOC, &a);	// h names a row of this client
 *	...
 *	close(fd);				// every row and page goes back
 *
 * The pool's state machine lives in the core (kvp_core.h); this file copies
 * arguments in and out, checks their shape, and takes the pool lock.
 *
 * Locking, outermost first:
 *   kvp_pools_lock	publishing a pool in the table and taking it out;
 *			pool creation and destruction; every control op
 *			on a pool (so it cannot go while one runs on it).
 *			Reserving an id (xa_alloc) needs only the
 *			xarray's own lock.
 *   kvp_dev.core.lock	one pool: its core state, its clients, @dead and
 *			@nr_exports
 *   (xarray locks)	kvp_pools' own, and inside a pool lock the core's
 *			clients and tenants xarrays': innermost, never
 *			held across anything that sleeps
 * No pool lock is ever taken under a lock of the driver core or the misc
 * layer: pools are not misc devices, so open() runs under no global lock,
 * and a client holding its pool's lock for long delays only that pool.
 *
 * Suffixes: a core function ending in _locked (kvp_core.h) needs its
 * pool's lock, and asserts it; kvp_pool_create_locked() and
 * kvp_pool_destroy_locked() here need kvp_pools_lock, and assert that.
 *
 * Read without a lock, on purpose:
 *   pool->pressure_seq	READ_ONCE before and after an op to decide on a
 *			wake-up (kvp_pool_ioctl()); the core writes it
 *			with WRITE_ONCE under the pool lock. A stale read
 *			costs one spurious or one late wake-up, which
 *			poll's re-check of the ask absorbs.
 *   kvp_live		smp_load_acquire in open, paired with the
 *			smp_store_release that ends module init.
 *
 * Lifetime: a pool device is freed by the release of its struct device,
 * once the last reference is gone. The pool table holds one until
 * destroy; every open file holds one through its cdev (the cdev's parent
 * is the device, and the VFS drops the cdev only after ->release has
 * returned); every export file holds one of its own. So whoever unlocks
 * the pool lock last still holds a reference, and the memory the mutex
 * lives in cannot be freed under its unlock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "kvp_core.h"

#ifndef KVPOOL_VERSION
#error "KVPOOL_VERSION is set by Kbuild from the top-level VERSION file"
#endif

#define KVP_MAX_POOLS		64

/* A pool device; see "Lifetime" above. */
struct kvp_dev {
	struct kvp_pool core;
	struct device dev;
	struct cdev cdev;
	wait_queue_head_t wq;	/* pollers waiting for pressure */
	u32 nr_exports;		/* export files alive: they point here */
	bool dead;		/* being destroyed: refuse new clients */
};

/*
 * An export file's private data. @idx, @exported and @imported are
 * protected by kd->core.lock; @kd is fixed, and the file holds a
 * reference to its device.
 */
struct kvp_export_file {
	struct kvp_dev *kd;
	u32 idx;
	bool exported;		/* it holds (or held) a row: counted */
	bool imported;
};

static struct kvp_dev *kvp_dev_of(struct kvp_pool *pool)
{
	return container_of(pool, struct kvp_dev, core);
}

static DEFINE_MUTEX(kvp_pools_lock);
/* struct kvp_dev by pool id; an id being created is reserved (NULL). */
static DEFINE_XARRAY_ALLOC(kvp_pools);
static dev_t kvp_devt;		/* the first of KVP_MAX_POOLS minors */
/* Set once init can no longer fail: pools refuse opens before that. */
static bool kvp_live;

static struct class kvp_class = {
	.name = "kvpool",
};

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
struct kvp_ucmd {
	struct kvp_client *client;	/* NULL for control ops */
	void __user *ubuffer;
	u32 user_size;
	u32 op_size;
	void *cmd;
	bool responded;		/* the handler wrote the struct back itself */
};

union kvp_ucmd_buffer {
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

#define KVP_OP_ADMIN	BIT(0)	/* needs CAP_SYS_ADMIN */

struct kvp_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	unsigned int flags;	/* KVP_OP_* */
	int (*execute)(struct kvp_ucmd *ucmd);
};

/*
 * The op-table entry of KVPOOL_@_name, at its number less @_base. @_last
 * is the last field of the op's first release, the shortest size accepted.
 */
#define KVP_OP(_base, _name, _fn, _struct, _last, _flags)		\
	[KVPOOL_CMD_##_name - (_base)] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kvp_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = KVPOOL_##_name,				\
		.flags = _flags,					\
		.execute = _fn,						\
	}

/*
 * Copies the user's struct in (checking size and unknown tail), runs the
 * op, and copies the struct back so out_* fields reach the caller, also
 * on errors that report something (ENOSPC's shortfall, the bad entry).
 * Unknown numbers are ENOTTY for everyone; only then are privileges
 * checked.
 */
static long kvp_dispatch(struct kvp_client *c, const struct kvp_ioctl_op *ops,
			 unsigned int nr_ops, unsigned int base,
			 unsigned int cmd, unsigned long arg)
{
	union kvp_ucmd_buffer buf;
	const struct kvp_ioctl_op *op;
	struct kvp_ucmd ucmd = { .client = c };
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != KVPOOL_TYPE || nr < base || nr - base >= nr_ops)
		return -ENOTTY;
	op = &ops[array_index_nospec(nr - base, nr_ops)];
	if (!op->execute || op->ioctl_num != cmd)
		return -ENOTTY;
	if ((op->flags & KVP_OP_ADMIN) && !capable(CAP_SYS_ADMIN))
		return -EPERM;

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
	ucmd.op_size = op->size;
	ret = op->execute(&ucmd);
	if (ret == -EFAULT || (!ret && ucmd.responded))
		return ret;
	if (copy_to_user(ucmd.ubuffer, &buf,
			 min_t(u32, ucmd.user_size, op->size)))
		return -EFAULT;
	return ret;
}

/*
 * Writes the struct back now, before the op takes effect: for the ops
 * whose result (a new fd, handle or id) the caller could not learn any
 * other way. If this faults, nothing has happened yet.
 */
static int kvp_respond(struct kvp_ucmd *ucmd)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min(ucmd->user_size, ucmd->op_size)))
		return -EFAULT;
	ucmd->responded = true;
	return 0;
}

/* ---- arrays of elements with a caller-given length ---- */

/*
 * An element length: at least what this header's element has (shorter
 * ones were never released), at most a page, like the structs.
 */
static int kvp_check_len(u32 len, size_t ksize)
{
	if (len < ksize)
		return -EINVAL;
	if (len > PAGE_SIZE)
		return -E2BIG;
	return 0;
}

/*
 * Reads @count elements of @len bytes at @uptr into a new array of
 * @ksize-byte ones; bytes of an element past @ksize must be zero (E2BIG,
 * and *@error_index names it). Returns the array (kvfree() it) or an
 * ERR_PTR.
 */
static void *kvp_read_array(u64 uptr, u32 count, u32 len, size_t ksize,
			    u32 *error_index)
{
	void __user *u = u64_to_user_ptr(uptr);
	char *p;
	u32 i;
	int ret = 0;

	p = kvmalloc_array(count, ksize, GFP_KERNEL_ACCOUNT);
	if (!p)
		return ERR_PTR(-ENOMEM);
	if (len == ksize) {
		if (copy_from_user(p, u, (size_t)count * ksize))
			ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < count; i++) {
		ret = copy_struct_from_user(p + i * ksize, ksize,
					    u + (size_t)i * len, len);
		if (ret) {
			if (ret == -E2BIG && error_index)
				*error_index = i;
			break;
		}
		if (!(i % 1024))
			cond_resched();
	}
out:
	if (ret) {
		kvfree(p);
		return ERR_PTR(ret);
	}
	return p;
}

/*
 * Writes @count @ksize-byte elements to the caller's array of @len-byte
 * ones; with @zero_tail, the bytes of each past @ksize are zeroed (an
 * element the kernel alone writes), else left as the caller gave them
 * (an element it read: the tail was checked zero).
 */
static int kvp_write_array(u64 uptr, const void *src, u32 count, u32 len,
			   size_t ksize, bool zero_tail)
{
	void __user *u = u64_to_user_ptr(uptr);
	const char *p = src;
	u32 i;

	if (len == ksize)
		return copy_to_user(u, p, (size_t)count * ksize) ? -EFAULT : 0;
	for (i = 0; i < count; i++) {
		void __user *e = u + (size_t)i * len;

		if (copy_to_user(e, p + i * ksize, ksize))
			return -EFAULT;
		if (zero_tail && clear_user(e + ksize, len - ksize))
			return -EFAULT;
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

/* ---- pool ioctls ---- */

static int kvp_check_batch(struct kvp_client *c, u32 flags, u32 count)
{
	if (flags)	/* flags a caller allows are masked off before */
		return -EOPNOTSUPP;
	if (!count || count > c->pool->max_batch)
		return -EINVAL;
	return 0;
}

static int kvp_info_ioctl(struct kvp_ucmd *ucmd)
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

static int kvp_stats_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
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

static int kvp_row_alloc_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_row_alloc *cmd = ucmd->cmd;
	struct kvpool_handle *h;
	u32 freed, idx;
	int ret;

	cmd->out_short = 0;
	ret = kvp_check_batch(c, cmd->flags, cmd->count);
	if (!ret && cmd->__reserved)
		ret = -EINVAL;
	if (!ret)
		ret = kvp_check_len(cmd->entry_len, sizeof(*h));
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

	if (kvp_write_array(cmd->handles, h, cmd->count, cmd->entry_len,
			    sizeof(*h), true)) {
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

static int kvp_extend_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_extend *cmd = ucmd->cmd;
	struct kvpool_extend_entry *e;
	struct kvp_extend_result res;
	int ret;

	cmd->out_nr_pages = 0;
	cmd->out_short = 0;
	cmd->out_error_index = ~0U;
	ret = kvp_check_batch(c, cmd->flags, cmd->count);
	if (!ret && cmd->__reserved)
		ret = -EINVAL;
	if (!ret)
		ret = kvp_check_len(cmd->entry_len, sizeof(*e));
	if (!ret)
		ret = kvp_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	e = kvp_read_array(cmd->entries, cmd->count, cmd->entry_len,
			   sizeof(*e), &cmd->out_error_index);
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

	if (kvp_write_array(cmd->entries, e, cmd->count, cmd->entry_len,
			    sizeof(*e), false) ||
	    kvp_write_array(cmd->pages, res.pages, res.nr_pages,
			    cmd->page_entry_len, sizeof(u32), true))
		ret = -EFAULT;
out_free:
	kvfree(res.pages);
	kvfree(e);
	return ret;
}

enum kvp_batch_op {
	KVP_BATCH_COMMIT,
	KVP_BATCH_TRIM,
	KVP_BATCH_RELEASE,
	KVP_BATCH_DONATE,
	KVP_BATCH_SWA_FREE,
	KVP_BATCH_CACHE_EVICT,
};

/* The ops that share struct kvpool_batch: entry size and allowed flags. */
static const struct {
	size_t entry_size;
	u32 flags;
} kvp_batch_ops[] = {
	[KVP_BATCH_COMMIT] = { sizeof(struct kvpool_len_entry), 0 },
	[KVP_BATCH_TRIM] = { sizeof(struct kvpool_handle), 0 },
	[KVP_BATCH_RELEASE] = { sizeof(struct kvpool_handle),
				KVPOOL_RELEASE_DONATE },
	[KVP_BATCH_DONATE] = { sizeof(struct kvpool_len_entry), 0 },
	[KVP_BATCH_SWA_FREE] = { sizeof(struct kvpool_len_entry), 0 },
	[KVP_BATCH_CACHE_EVICT] = { sizeof(u32), 0 },
};

static int kvp_batch(struct kvp_client *c, struct kvpool_batch *cmd,
		     enum kvp_batch_op op)
{
	size_t size = kvp_batch_ops[op].entry_size;
	void *e;
	int ret;

	cmd->out_error_index = ~0U;
	cmd->out_nr_pages = 0;
	ret = kvp_check_batch(c, cmd->flags & ~kvp_batch_ops[op].flags,
			      cmd->count);
	if (!ret)
		ret = kvp_check_len(cmd->entry_len, size);
	if (ret)
		return ret;
	e = kvp_read_array(cmd->entries, cmd->count, cmd->entry_len, size,
			   &cmd->out_error_index);
	if (IS_ERR(e))
		return PTR_ERR(e);

	mutex_lock(&c->pool->lock);
	switch (op) {
	case KVP_BATCH_COMMIT:
		ret = kvp_commit_locked(c, e, cmd->count,
					&cmd->out_error_index);
		break;
	case KVP_BATCH_TRIM:
		ret = kvp_trim_locked(c, e, cmd->count, &cmd->out_nr_pages,
				      &cmd->out_error_index);
		break;
	case KVP_BATCH_RELEASE:
		ret = kvp_release_locked(c, e, cmd->count, cmd->flags,
					 &cmd->out_nr_pages,
					 &cmd->out_error_index);
		break;
	case KVP_BATCH_DONATE:
		ret = kvp_donate_locked(c, e, cmd->count, &cmd->out_nr_pages,
					&cmd->out_error_index);
		break;
	case KVP_BATCH_SWA_FREE:
		ret = kvp_swa_free_locked(c, e, cmd->count, &cmd->out_nr_pages,
					  &cmd->out_error_index);
		break;
	case KVP_BATCH_CACHE_EVICT:
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

static int kvp_commit_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_COMMIT);
}

static int kvp_trim_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_TRIM);
}

static int kvp_release_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_RELEASE);
}

static int kvp_donate_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_DONATE);
}

static int kvp_swa_free_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_SWA_FREE);
}

static int kvp_cache_evict_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_CACHE_EVICT);
}

static int kvp_attach_prefix_ioctl(struct kvp_ucmd *ucmd)
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
	ret = kvp_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	pages = kvp_read_array(cmd->pages, cmd->nr_pages, cmd->page_entry_len,
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
static int kvp_slot_check(struct kvpool_slot *cmd, bool handle_must_be_0)
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

static int kvp_to_slot_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvp_slot_check(cmd, false);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_to_slot_locked(c, &cmd->handle, cmd->session_id,
				 &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static bool kvp_same_handle(const struct kvpool_handle *a,
			    const struct kvpool_handle *b)
{
	return a->req_pool_idx == b->req_pool_idx &&
	       a->generation == b->generation;
}

/*
 * The new handle is the only name the caller gets for the row: it is
 * written back before the row leaves the slot (see kvp_respond()).
 */
static int kvp_from_slot_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	struct kvpool_handle h, now;
	u32 n, n_now;
	int ret;

	ret = kvp_slot_check(cmd, false);
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
	ret = kvp_respond(ucmd);
	if (ret)
		return ret;

	mutex_lock(&c->pool->lock);
	/* Another thread of the caller may have changed the slot since. */
	ret = kvp_from_slot_peek_locked(c, cmd->session_id, &now, &n_now);
	if (!ret && (!kvp_same_handle(&h, &now) || n != n_now))
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

static int kvp_slot_release_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvp_slot_check(cmd, true);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_slot_release_locked(c, cmd->session_id, &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static int kvp_row_query_ioctl(struct kvp_ucmd *ucmd)
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
	ret = kvp_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_row_query_locked(c, cmd, &pages);
	mutex_unlock(&c->pool->lock);
	if (ret)
		return ret;
	if (pages &&
	    kvp_write_array(cmd->pages, pages,
			    min(cmd->pages_cap, cmd->out_nr_pages),
			    cmd->page_entry_len, sizeof(u32), true))
		ret = -EFAULT;
	kvfree(pages);
	return ret;
}

static int kvp_verify_ioctl(struct kvp_ucmd *ucmd)
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

/* ---- export files ---- */

static int kvp_export_release(struct inode *inode, struct file *file)
{
	struct kvp_export_file *x = file->private_data;
	struct kvp_dev *kd = x->kd;

	mutex_lock(&kd->core.lock);
	if (x->exported) {
		if (!x->imported)
			kvp_export_drop_locked(&kd->core, x->idx);
		kd->nr_exports--;
	}
	mutex_unlock(&kd->core.lock);
	kfree(x);
	put_device(&kd->dev);	/* after the unlock: see "Lifetime" */
	return 0;
}

static const struct file_operations kvp_export_fops = {
	.owner = THIS_MODULE,
	.release = kvp_export_release,
};

/*
 * The fd reaches the caller only through the struct: it is written back
 * before the row leaves the client, and the fd is installed only once the
 * row is the file's (see kvp_respond()).
 */
static int kvp_export_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvp_dev *kd = kvp_dev_of(c->pool);
	struct kvpool_export *cmd = ucmd->cmd;
	struct kvp_export_file *x;
	struct file *file;
	u32 n, n_now;
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

	mutex_lock(&kd->core.lock);
	ret = kvp_export_peek_locked(c, cmd, &n);
	mutex_unlock(&kd->core.lock);
	if (ret)
		return ret;

	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x)
		return -ENOMEM;
	x->kd = kd;
	get_device(&kd->dev);	/* the file's; its release puts it */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		put_device(&kd->dev);
		kfree(x);
		return fd;
	}
	file = anon_inode_getfile("[kvpool-row]", &kvp_export_fops, x, O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		put_device(&kd->dev);
		kfree(x);
		return PTR_ERR(file);
	}

	cmd->out_fd = fd;
	cmd->out_nr_pages = n;
	ret = kvp_respond(ucmd);
	if (ret)
		goto out_drop;

	/*
	 * Another thread of the caller may have changed the row since: the
	 * fd still names whatever the handle or slot names now.
	 */
	mutex_lock(&kd->core.lock);
	ret = kvp_export_locked(c, cmd, &x->idx, &n_now);
	if (!ret) {
		x->exported = true;
		kd->nr_exports++;
	}
	mutex_unlock(&kd->core.lock);
	if (ret) {
		ucmd->responded = false;
		cmd->out_fd = -1;
		cmd->out_nr_pages = 0;
		goto out_drop;
	}
	fd_install(fd, file);
	if (n_now != n) {
		/* Best effort: the fd, the one thing to learn, is out. */
		cmd->out_nr_pages = n_now;
		if (kvp_respond(ucmd))
			pr_debug("export: page count not written back\n");
	}
	return 0;

out_drop:
	/* Holds nothing: its release only puts the device. */
	fput(file);
	put_unused_fd(fd);
	return ret;
}

static int kvp_import_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_import *cmd = ucmd->cmd;
	struct kvp_export_file *x;
	struct kvpool_handle h;
	struct file *file;
	u32 n;
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
	if (file->f_op != &kvp_export_fops) {
		ret = -EINVAL;
		goto out;
	}
	x = file->private_data;
	if (x->kd != kvp_dev_of(c->pool)) {
		ret = -EXDEV;
		goto out;
	}

	mutex_lock(&c->pool->lock);
	ret = !x->exported || x->imported ? -EALREADY :
	      kvp_import_peek_locked(c, x->idx, &h, &n);
	mutex_unlock(&c->pool->lock);
	if (ret)
		goto out;
	cmd->out_handle = h;
	cmd->out_nr_pages = n;
	ret = kvp_respond(ucmd);
	if (ret)
		goto out;

	/*
	 * Only this file imports its row, so the handle cannot change in
	 * between; a second import racing this one gets EALREADY.
	 */
	mutex_lock(&c->pool->lock);
	ret = x->imported ? -EALREADY :
	      kvp_import_locked(c, x->idx, &h, &n);
	if (!ret)
		x->imported = true;
	mutex_unlock(&c->pool->lock);
	if (ret) {
		ucmd->responded = false;
		memset(&cmd->out_handle, 0, sizeof(cmd->out_handle));
		cmd->out_nr_pages = 0;
	}
out:
	fput(file);
	return ret;
}

static int kvp_pressure_ioctl(struct kvp_ucmd *ucmd)
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
	mutex_unlock(&c->pool->lock);
	return 0;
}

#define KVP_POOL_OP(_name, _fn, _struct, _last, _flags)			\
	KVP_OP(KVPOOL_CMD_INFO, _name, _fn, _struct, _last, _flags)

static const struct kvp_ioctl_op kvp_pool_ops[] = {
	KVP_POOL_OP(INFO, kvp_info_ioctl, struct kvpool_info,
		    __reserved, 0),
	KVP_POOL_OP(STATS, kvp_stats_ioctl, struct kvpool_stats,
		    out_tenant_max_rows, 0),
	KVP_POOL_OP(ROW_ALLOC, kvp_row_alloc_ioctl,
		    struct kvpool_row_alloc, __reserved, 0),
	KVP_POOL_OP(EXTEND, kvp_extend_ioctl, struct kvpool_extend,
		    __reserved, 0),
	KVP_POOL_OP(COMMIT, kvp_commit_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(TRIM, kvp_trim_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(RELEASE, kvp_release_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(TO_SLOT, kvp_to_slot_ioctl, struct kvpool_slot,
		    __reserved, 0),
	KVP_POOL_OP(FROM_SLOT, kvp_from_slot_ioctl, struct kvpool_slot,
		    __reserved, 0),
	KVP_POOL_OP(SLOT_RELEASE, kvp_slot_release_ioctl,
		    struct kvpool_slot, __reserved, 0),
	KVP_POOL_OP(ROW_QUERY, kvp_row_query_ioctl,
		    struct kvpool_row_query, __reserved, 0),
	/* O(pool) under the pool lock: not for every client to repeat. */
	KVP_POOL_OP(VERIFY, kvp_verify_ioctl, struct kvpool_verify,
		    __reserved, KVP_OP_ADMIN),
	KVP_POOL_OP(DONATE, kvp_donate_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(ATTACH_PREFIX, kvp_attach_prefix_ioctl,
		    struct kvpool_attach, pages, 0),
	KVP_POOL_OP(CACHE_EVICT, kvp_cache_evict_ioctl,
		    struct kvpool_batch, out_nr_pages, 0),
	KVP_POOL_OP(SWA_FREE, kvp_swa_free_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(EXPORT, kvp_export_ioctl, struct kvpool_export,
		    out_nr_pages, 0),
	KVP_POOL_OP(IMPORT, kvp_import_ioctl, struct kvpool_import,
		    __reserved2, 0),
	KVP_POOL_OP(PRESSURE, kvp_pressure_ioctl,
		    struct kvpool_pressure, __reserved, 0),
};

static long kvp_pool_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct kvp_client *c = file->private_data;
	u32 seq = READ_ONCE(c->pool->pressure_seq);
	long ret;

	ret = kvp_dispatch(c, kvp_pool_ops, ARRAY_SIZE(kvp_pool_ops),
			   KVPOOL_CMD_INFO, cmd, arg);
	/* The op may have raised someone's ask: let pollers look again. */
	if (READ_ONCE(c->pool->pressure_seq) != seq)
		wake_up_interruptible_all(&kvp_dev_of(c->pool)->wq);
	return ret;
}

static __poll_t kvp_pool_poll(struct file *file, poll_table *wait)
{
	struct kvp_client *c = file->private_data;
	u32 ask, why;

	poll_wait(file, &kvp_dev_of(c->pool)->wq, wait);
	mutex_lock(&c->pool->lock);
	ask = kvp_pressure_locked(c, &why);
	mutex_unlock(&c->pool->lock);
	return ask ? EPOLLPRI : 0;
}

static int kvp_pool_open(struct inode *inode, struct file *file)
{
	struct kvp_dev *kd = container_of(inode->i_cdev, struct kvp_dev, cdev);
	struct kvp_client *c;
	u64 cgid = 0;
	u32 uid;
	int ret;

	/*
	 * A failing init frees the module: nothing may stay open on it.
	 * Pairs with the release at the end of kvpool_init().
	 */
	if (!smp_load_acquire(&kvp_live))
		return -ENODEV;

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
	/* No global lock is held here: this waits for this pool only. */
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

/*
 * The last reference to the file is gone: give back all it held. The
 * file's cdev reference keeps the device alive until after this returns.
 */
static int kvp_pool_release(struct inode *inode, struct file *file)
{
	struct kvp_client *c = file->private_data;
	struct kvp_pool *pool = c->pool;

	mutex_lock(&pool->lock);
	kvp_client_detach_locked(c);
	mutex_unlock(&pool->lock);
	kfree(c);
	return 0;
}

static void kvp_pool_show_fdinfo(struct seq_file *m, struct file *file)
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

static const struct file_operations kvp_pool_fops = {
	.owner = THIS_MODULE,
	.open = kvp_pool_open,
	.release = kvp_pool_release,
	.unlocked_ioctl = kvp_pool_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.show_fdinfo = kvp_pool_show_fdinfo,
	.poll = kvp_pool_poll,
};

/* ---- sysfs: /sys/class/kvpool/kvpoolN/ ---- */

static struct kvp_pool *kvp_dev_pool(struct device *dev)
{
	return &container_of(dev, struct kvp_dev, dev)->core;
}

/* A pool figure: the u32 at @offset in struct kvp_pool. */
struct kvp_attr {
	struct device_attribute dev_attr;
	size_t offset;
};

static ssize_t kvp_attr_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	struct kvp_pool *pool = kvp_dev_pool(dev);
	size_t offset = container_of(attr, struct kvp_attr, dev_attr)->offset;
	u32 val;

	mutex_lock(&pool->lock);
	val = *(u32 *)((char *)pool + offset);
	mutex_unlock(&pool->lock);
	return sysfs_emit(buf, "%u\n", val);
}

#define KVP_ATTR(_name, _member)					\
	static struct kvp_attr dev_attr_##_name = {			\
		.dev_attr = __ATTR(_name, 0444, kvp_attr_show, NULL),	\
		.offset = offsetof(struct kvp_pool, _member),		\
	}

KVP_ATTR(pool_id, id);
KVP_ATTR(nr_pages, nr_pages);
KVP_ATTR(page_tokens, page_tokens);
KVP_ATTR(nr_rows, nr_rows);
KVP_ATTR(row_tokens, row_tokens);
KVP_ATTR(create_flags, flags);
KVP_ATTR(free_pages, free_pages);
KVP_ATTR(row_pages, row_pages);
KVP_ATTR(slot_pages, slot_pages);
KVP_ATTR(cache_evictable, cache_evictable);
KVP_ATTR(cache_pinned, cache_pinned);
KVP_ATTR(reserved_pages, reserved_pages);
KVP_ATTR(free_rows, free_rows);
KVP_ATTR(held_rows, held_rows);
KVP_ATTR(slot_rows, slot_rows);
KVP_ATTR(reserved_rows, reserved_rows);
KVP_ATTR(nr_clients, nr_clients);
KVP_ATTR(nr_tenants, nr_tenants);
KVP_ATTR(export_rows, export_rows);
KVP_ATTR(export_pages, export_pages);
KVP_ATTR(low_wmark, low_wmark);
KVP_ATTR(high_wmark, high_wmark);

static struct attribute *kvp_pool_attrs[] = {
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
ATTRIBUTE_GROUPS(kvp_pool);

/* ---- pool lifetime ---- */

/* The last reference is gone: no file, sysfs reader or table holds it. */
static void kvp_dev_release(struct device *dev)
{
	struct kvp_dev *kd = container_of(dev, struct kvp_dev, dev);

	kvp_pool_fini(&kd->core);
	kfree(kd);
}

/*
 * Makes pool @id, an id the caller reserved in kvp_pools; publishes it
 * there once its device node exists. Called with kvp_pools_lock held.
 */
static int kvp_pool_create_locked(u32 id, u32 flags, u32 pages, u32 ptok,
				  u32 rows, u32 rtok)
{
	struct kvp_dev *kd;
	int ret;

	lockdep_assert_held(&kvp_pools_lock);
	kd = kzalloc(sizeof(*kd), GFP_KERNEL);
	if (!kd)
		return -ENOMEM;
	ret = kvp_pool_init(&kd->core, id, flags, pages, ptok, rows, rtok);
	if (ret) {
		kfree(kd);
		return ret;
	}
	init_waitqueue_head(&kd->wq);

	/* From here on the device's release frees everything. */
	device_initialize(&kd->dev);
	kd->dev.class = &kvp_class;
	kd->dev.devt = MKDEV(MAJOR(kvp_devt), MINOR(kvp_devt) + id);
	kd->dev.groups = kvp_pool_groups;
	kd->dev.release = kvp_dev_release;
	ret = dev_set_name(&kd->dev, "kvpool%u", id);
	if (ret)
		goto out_put;
	cdev_init(&kd->cdev, &kvp_pool_fops);
	kd->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&kd->cdev, &kd->dev);
	if (ret)
		goto out_put;
	/* The id is reserved: storing into it allocates nothing. */
	ret = xa_err(xa_store(&kvp_pools, id, kd, GFP_KERNEL));
	if (ret) {
		cdev_device_del(&kd->cdev, &kd->dev);
		goto out_put;
	}
	return 0;

out_put:
	put_device(&kd->dev);
	return ret;
}

/* Reserves an id and makes the pool: for the default pool at init. */
static int kvp_pool_create(u32 flags, u32 pages, u32 ptok, u32 rows,
			   u32 rtok)
{
	u32 id;
	int ret;

	ret = kvp_geom_check(flags, pages, ptok, rows, rtok);
	if (ret)
		return ret;
	mutex_lock(&kvp_pools_lock);
	ret = xa_alloc(&kvp_pools, &id, NULL, XA_LIMIT(0, KVP_MAX_POOLS - 1),
		       GFP_KERNEL);
	if (!ret) {
		ret = kvp_pool_create_locked(id, flags, pages, ptok, rows, rtok);
		if (ret)
			xa_erase(&kvp_pools, id);
	}
	mutex_unlock(&kvp_pools_lock);
	return ret == -EBUSY ? -ENOSPC : ret;
}

static int kvp_pool_destroy_locked(u32 id)
{
	struct kvp_dev *kd;

	lockdep_assert_held(&kvp_pools_lock);
	kd = id < KVP_MAX_POOLS ? xa_load(&kvp_pools, id) : NULL;
	if (!kd)
		return -ENODEV;

	/*
	 * An open joins under the pool lock and fails once @dead is set;
	 * with no clients and no export files now, none can appear.
	 */
	mutex_lock(&kd->core.lock);
	if (kd->core.nr_clients || kd->nr_exports) {
		mutex_unlock(&kd->core.lock);
		return -EBUSY;
	}
	kd->dead = true;
	mutex_unlock(&kd->core.lock);

	/* Waits for sysfs readers; an opener in flight holds its own ref. */
	cdev_device_del(&kd->cdev, &kd->dev);
	xa_erase(&kvp_pools, id);
	put_device(&kd->dev);	/* the table's */
	return 0;
}

/* ---- control device ---- */

/*
 * The id is reserved and written back first, outside kvp_pools_lock (a
 * slow fault must not hold up other control ops): once the pool exists,
 * the call succeeds (see kvp_respond()). A reserved id reads as no pool.
 */
static int kvp_ctl_create_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvpool_ctl_create *cmd = ucmd->cmd;
	u32 id;
	int ret;

	if (cmd->flags & ~KVPOOL_CREATE_RESERVE_ZERO)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ret = kvp_geom_check(cmd->flags, cmd->nr_pages, cmd->page_tokens,
			     cmd->nr_rows, cmd->row_tokens);
	if (ret)
		return ret;

	ret = xa_alloc(&kvp_pools, &id, NULL, XA_LIMIT(0, KVP_MAX_POOLS - 1),
		       GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -ENOSPC : ret;	/* all 64 exist */
	cmd->out_pool_id = id;
	ret = kvp_respond(ucmd);
	if (!ret) {
		mutex_lock(&kvp_pools_lock);
		ret = kvp_pool_create_locked(id, cmd->flags, cmd->nr_pages,
					     cmd->page_tokens, cmd->nr_rows,
					     cmd->row_tokens);
		mutex_unlock(&kvp_pools_lock);
	}
	if (ret) {
		xa_erase(&kvp_pools, id);
		ucmd->responded = false;
		cmd->out_pool_id = 0;
	}
	return ret;
}

/* Runs @fn on pool @id with its lock held, then wakes its pollers. */
static int kvp_ctl_on_pool(u32 id, int (*fn)(struct kvp_pool *, void *),
			   void *arg)
{
	struct kvp_dev *kd;
	int ret;

	mutex_lock(&kvp_pools_lock);
	kd = id < KVP_MAX_POOLS ? xa_load(&kvp_pools, id) : NULL;
	if (!kd) {
		mutex_unlock(&kvp_pools_lock);
		return -ENODEV;
	}
	mutex_lock(&kd->core.lock);
	ret = fn(&kd->core, arg);
	mutex_unlock(&kd->core.lock);
	wake_up_interruptible_all(&kd->wq);
	mutex_unlock(&kvp_pools_lock);
	return ret;
}

static int kvp_tenant_set_fn(struct kvp_pool *pool, void *arg)
{
	return kvp_tenant_set_locked(pool, arg);
}

static int kvp_ctl_tenant_set_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvpool_ctl_tenant *cmd = ucmd->cmd;

	if (cmd->flags & ~KVPOOL_TENANT_BY_ID)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	return kvp_ctl_on_pool(cmd->pool_id, kvp_tenant_set_fn, cmd);
}

static int kvp_wmark_fn(struct kvp_pool *pool, void *arg)
{
	struct kvpool_ctl_wmark *cmd = arg;

	return kvp_set_wmark_locked(pool, cmd->low_wmark, cmd->high_wmark);
}

static int kvp_ctl_set_wmark_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvpool_ctl_wmark *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	return kvp_ctl_on_pool(cmd->pool_id, kvp_wmark_fn, cmd);
}

struct kvp_list_arg {
	struct kvpool_tenant_info *info;
	u32 count;
	u32 nr;
};

static int kvp_tenant_list_fn(struct kvp_pool *pool, void *arg)
{
	struct kvp_list_arg *la = arg;

	la->nr = kvp_tenant_list_locked(pool, la->info, la->count);
	return 0;
}

static int kvp_ctl_tenant_list_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvpool_ctl_tenant_list *cmd = ucmd->cmd;
	struct kvp_list_arg la = { };
	int ret;

	cmd->out_nr_tenants = 0;
	if (cmd->flags)
		return -EOPNOTSUPP;
	ret = kvp_check_len(cmd->entry_len, sizeof(*la.info));
	if (ret)
		return ret;
	la.count = min_t(u32, cmd->count, KVP_MAX_TENANTS);
	if (la.count) {
		la.info = kvcalloc(la.count, sizeof(*la.info), GFP_KERNEL);
		if (!la.info)
			return -ENOMEM;
	}
	ret = kvp_ctl_on_pool(cmd->pool_id, kvp_tenant_list_fn, &la);
	if (!ret) {
		cmd->out_nr_tenants = la.nr;
		if (la.info &&
		    kvp_write_array(cmd->tenants, la.info, min(la.count, la.nr),
				    cmd->entry_len, sizeof(*la.info), true))
			ret = -EFAULT;
	}
	kvfree(la.info);
	return ret;
}

static int kvp_ctl_destroy_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvpool_ctl_destroy *cmd = ucmd->cmd;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&kvp_pools_lock);
	ret = kvp_pool_destroy_locked(cmd->pool_id);
	mutex_unlock(&kvp_pools_lock);
	return ret;
}

#define KVP_CTL_OP(_name, _fn, _struct, _last)				\
	KVP_OP(KVPOOL_CMD_CTL_CREATE, _name, _fn, _struct, _last,	\
	       KVP_OP_ADMIN)

static const struct kvp_ioctl_op kvp_ctl_ops[] = {
	KVP_CTL_OP(CTL_CREATE, kvp_ctl_create_ioctl,
		   struct kvpool_ctl_create, __reserved),
	KVP_CTL_OP(CTL_DESTROY, kvp_ctl_destroy_ioctl,
		   struct kvpool_ctl_destroy, __reserved),
	KVP_CTL_OP(CTL_TENANT_SET, kvp_ctl_tenant_set_ioctl,
		   struct kvpool_ctl_tenant, __reserved2),
	KVP_CTL_OP(CTL_TENANT_LIST, kvp_ctl_tenant_list_ioctl,
		   struct kvpool_ctl_tenant_list, tenants),
	KVP_CTL_OP(CTL_SET_WMARK, kvp_ctl_set_wmark_ioctl,
		   struct kvpool_ctl_wmark, __reserved),
};

static long kvp_ctl_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	return kvp_dispatch(NULL, kvp_ctl_ops, ARRAY_SIZE(kvp_ctl_ops),
			    KVPOOL_CMD_CTL_CREATE, cmd, arg);
}

static const struct file_operations kvp_ctl_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.unlocked_ioctl = kvp_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice kvp_ctl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kvpool-control",
	.fops = &kvp_ctl_fops,
	.mode = 0600,
};

static void kvp_pool_destroy_all(void)
{
	struct kvp_dev *kd;
	unsigned long id;

	/* No file of ours is open: the module could not be unloading. */
	mutex_lock(&kvp_pools_lock);
	xa_for_each(&kvp_pools, id, kd)
		WARN_ON(kvp_pool_destroy_locked(id));
	mutex_unlock(&kvp_pools_lock);
}

/* Says which default-pool parameter is out of range, and the rule. */
static int kvp_check_params(void)
{
	u32 lo = reserve_zero ? 2 : 1;

	if (nr_pages < lo || nr_pages > KVP_MAX_PAGES)
		pr_err("nr_pages=%u: must be %u..%u (0: no default pool)\n",
		       nr_pages, lo, KVP_MAX_PAGES);
	else if (!page_tokens || page_tokens > KVP_MAX_PAGE_TOKENS)
		pr_err("page_tokens=%u: must be 1..%u\n", page_tokens,
		       KVP_MAX_PAGE_TOKENS);
	else if (nr_rows < lo || nr_rows > KVP_MAX_ROWS)
		pr_err("nr_rows=%u: must be %u..%u%s\n", nr_rows, lo,
		       KVP_MAX_ROWS, reserve_zero ? " with reserve_zero" : "");
	else if (!row_tokens || row_tokens > KVP_MAX_ROW_TOKENS)
		pr_err("row_tokens=%u: must be 1..%u\n", row_tokens,
		       KVP_MAX_ROW_TOKENS);
	else
		return 0;
	return -EINVAL;
}

/*
 * User-visible entry points go last, and pools refuse opens until init
 * can no longer fail: a file opened on a module whose init then fails
 * would outlive the module's memory.
 */
static int __init kvpool_init(void)
{
	int ret;

	if (nr_pages) {
		ret = kvp_check_params();
		if (ret)
			return ret;
	}
	ret = class_register(&kvp_class);
	if (ret)
		return ret;
	ret = alloc_chrdev_region(&kvp_devt, 0, KVP_MAX_POOLS, "kvpool");
	if (ret)
		goto out_class;
	if (nr_pages) {
		ret = kvp_pool_create(reserve_zero ?
				      KVPOOL_CREATE_RESERVE_ZERO : 0,
				      nr_pages, page_tokens, nr_rows,
				      row_tokens);
		if (ret) {
			pr_err("default pool: %d\n", ret);
			goto out_region;
		}
	}
	ret = misc_register(&kvp_ctl_misc);
	if (ret)
		goto out_pools;
	/* Pairs with the acquire in open: all of init is visible there. */
	smp_store_release(&kvp_live, true);
	return 0;

out_pools:
	/* Opens were refused so far: no pool has clients. */
	kvp_pool_destroy_all();
out_region:
	unregister_chrdev_region(kvp_devt, KVP_MAX_POOLS);
out_class:
	class_unregister(&kvp_class);
	return ret;
}

static void __exit kvpool_exit(void)
{
	misc_deregister(&kvp_ctl_misc);
	kvp_pool_destroy_all();
	xa_destroy(&kvp_pools);
	unregister_chrdev_region(kvp_devt, KVP_MAX_POOLS);
	class_unregister(&kvp_class);
}

module_init(kvpool_init);
module_exit(kvpool_exit);

MODULE_DESCRIPTION("Cross-process broker for GPU KV-cache page ownership");
MODULE_AUTHOR("The kvpool authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(KVPOOL_VERSION);
