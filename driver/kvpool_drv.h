/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kvpool driver's private header: the pool device, the ioctl
 * plumbing and the globals that its files (kvpool_main.c, kvpool_ioctl.c,
 * kvpool_uarray.c, kvpool_file.c, kvpool_exportfd.c, kvpool_arena.c,
 * kvpool_quarantine.c, kvpool_sysfs.c, kvpool_ctl.c, kvpool_trace.c)
 * share.
 *
 * Locking, outermost first:
 *   kvp_pools_lock	publishing a pool in the table and taking it out;
 *			pool creation and destruction; every control op
 *			on a pool (so it cannot go while one runs on it).
 *			Reserving an id (xa_alloc) needs only the
 *			xarray's own lock.
 *   kvp_scratch.lock	one client file's ioctl buffer, held across one
 *			EXTEND or batch op, the pool lock inside it; only
 *			ever try-locked, so nothing waits for it
 *   kvp_dev.core.lock	one pool: its core state, its clients, @dead,
 *			@nr_exports, the @arena pointer (written once) and
 *			its quarantines (@holds)
 *   kvp_users.lock	one client file's list of processes; taken with
 *			no other lock held
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
 * lives in cannot be freed under its unlock. A quarantine's check
 * (kvp_dev.hold_work) holds none: destroy cancels it, once no client is
 * left to add one, before dropping the table's.
 */
#ifndef _KVPOOL_DRV_H
#define _KVPOOL_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "kvp_core.h"

#define KVP_MAX_POOLS		64

/* One chunk of an arena: a file the pool holds a reference to. */
struct kvp_arena_chunk {
	struct file *file;
	u64 offset;		/* in the arena, bytes */
	u64 bytes;
};

/*
 * A pool's arena (kvpool_arena.c): fixed once set, freed with the pool's
 * device, so a client of the pool may use it without a lock once it has
 * read kvp_dev.arena under the pool lock.
 */
struct kvp_arena {
	u32 kind;		/* KVPOOL_ARENA_* */
	u32 nr_chunks;
	u64 page_bytes;
	u64 bytes;		/* the chunks' sum */
	struct kvp_arena_chunk chunk[];
};

/* A pool device; see "Lifetime" above. */
struct kvp_dev {
	struct kvp_pool core;
	struct device dev;
	struct cdev cdev;
	wait_queue_head_t wq;	/* pollers waiting for pressure */
	u32 nr_exports;		/* export files alive: they point here */
	bool dead;		/* being destroyed: refuse new clients */
	struct kvp_arena *arena;	/* set once, under core.lock */
	struct pci_dev *gpu;	/* the parent device, or NULL; fixed */
	/*
	 * Closed clients whose pages are quarantined (kvpool_quarantine.c),
	 * by kvp_pool_file.hold_link; the list and @hold_delay are
	 * protected by core.lock. @hold_work checks them.
	 */
	struct list_head holds;
	struct delayed_work hold_work;
	unsigned long hold_delay;	/* jiffies until the next check */
};

/*
 * The processes that used one client file: its opener and each that made
 * an ioctl on it, a reference to each one's struct pid (its thread group
 * leader's). @pid, @nr and @cap are protected by @lock while the file is
 * open, and by the pool lock once it is a hold; @last, the process seen
 * last, is written under @lock and read without it: NULL or a pid that
 * @pid holds a reference to.
 */
struct kvp_users {
	struct mutex lock;	/* protects @pid, @nr and @cap of an open file */
	struct pid *last;
	struct pid **pid;
	u32 nr;
	u32 cap;
};

/*
 * A client file's buffer for the arrays of its ioctls, kept from call to
 * call: a decode step then allocates nothing, and on kernels that zero
 * every allocation (init_on_alloc, Debian's default) zeroes nothing. One
 * call at a time uses it; a call that finds it taken (another thread on
 * the same file) uses memory of its own. It grows to what a call needed,
 * up to KVP_SCRATCH_MAX, and is freed with the file.
 */
struct kvp_scratch {
	struct mutex lock;	/* held by the call using @buf and @size */
	void *buf;
	size_t size;
};

#define KVP_SCRATCH_MAX	(256 * 1024)

/*
 * An open file of a pool (file->private_data is &@c). When its last
 * reference goes with pages of an arena still held, it outlives the file
 * as a hold: @c is dead, @hold has the pages, @users the processes to
 * wait for, and @hold_link puts it on its pool's kvp_dev.holds.
 */
struct kvp_pool_file {
	struct kvp_client c;
	struct kvp_users users;
	struct kvp_scratch scratch;
	struct kvp_quarantine hold;
	struct list_head hold_link;
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

static inline struct kvp_dev *kvp_dev_of(struct kvp_pool *pool)
{
	return container_of(pool, struct kvp_dev, core);
}

/* kvpool_main.c: the pool table and what every pool shares */
extern struct mutex kvp_pools_lock;
/* struct kvp_dev by pool id; an id being created is reserved (NULL). */
extern struct xarray kvp_pools;
extern dev_t kvp_devt;		/* the first of KVP_MAX_POOLS minors */
/* Set once init can no longer fail: pools refuse opens before that. */
extern bool kvp_live;
extern struct class kvp_class;

int kvp_pool_create_locked(u32 id, u32 flags, u32 pages, u32 ptok,
			   u32 rows, u32 rtok, struct pci_dev *gpu);
int kvp_pool_destroy_locked(u32 id);

/* Per-call state of an ioctl: the user's struct and our copy of it. */
struct kvp_ucmd {
	struct kvp_client *client;	/* NULL for control ops */
	const void *data;		/* the op's kvp_ioctl_op.data */
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
	struct kvpool_arena arena;
	struct kvpool_ctl_arena_set arena_set;
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
	/* for a handler several ops share: which one it runs as */
	const void *data;
};

/*
 * The op-table entry of KVPOOL_@_name, at its number less @_base. @_last
 * is the last field of the op's first release, the shortest size accepted.
 * @_data reaches the handler as ucmd->data.
 */
#define KVP_OP_DATA(_base, _name, _fn, _struct, _last, _flags, _data)	\
	[KVPOOL_CMD_##_name - (_base)] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kvp_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = KVPOOL_##_name,				\
		.flags = _flags,					\
		.execute = _fn,						\
		.data = _data,						\
	}
#define KVP_OP(_base, _name, _fn, _struct, _last, _flags)		\
	KVP_OP_DATA(_base, _name, _fn, _struct, _last, _flags, NULL)

/*
 * kvpool_ioctl.c: the dispatcher and the pool ioctls. KVP_STACK_ARRAY is
 * the most bytes of an array an op keeps on its stack (docs/design.md,
 * "Arrays").
 */
#define KVP_STACK_ARRAY	256
long kvp_dispatch(struct kvp_client *c, const struct kvp_ioctl_op *ops,
		  unsigned int nr_ops, unsigned int base,
		  unsigned int cmd, unsigned long arg);
int kvp_respond(struct kvp_ucmd *ucmd);
long kvp_pool_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* kvpool_uarray.c: structs and arrays in and out, the scratch buffer */
int kvp_copy_in(void *dst, const void __user *src, size_t bytes,
		size_t ksize);
int kvp_copy_out(void __user *dst, const void *src, size_t bytes,
		 size_t ksize);
int kvp_check_len(u32 len, size_t ksize);
void *kvp_read_array(u64 uptr, u32 count, u32 len, size_t ksize,
		     u32 *error_index);
void *kvp_read_array_buf(u64 uptr, u32 count, u32 len, size_t ksize,
			 u32 *error_index, void *buf, size_t buf_size);
void kvp_array_free(void *p, const void *buf);
bool kvp_scratch_get(struct kvp_client *c, void **buf, size_t *size);
void kvp_scratch_put(struct kvp_client *c, size_t want);
int kvp_write_array(u64 uptr, const void *src, u32 count, u32 len,
		    size_t ksize, bool zero_tail);

/* kvpool_file.c: the pool device's file operations */
extern const struct file_operations kvp_pool_fops;

/* kvpool_exportfd.c: export files */
int kvp_export_ioctl(struct kvp_ucmd *ucmd);
int kvp_import_ioctl(struct kvp_ucmd *ucmd);

/* kvpool_arena.c: the pool's memory */
int kvp_arena_ioctl(struct kvp_ucmd *ucmd);
int kvp_ctl_arena_set_ioctl(struct kvp_ucmd *ucmd);
void kvp_arena_free(struct kvp_arena *a);

/* kvpool_quarantine.c: a dead client's pages */
int kvp_users_init(struct kvp_users *u);
int kvp_users_note(struct kvp_users *u);
void kvp_users_fini(struct kvp_users *u);
void kvp_pool_file_release(struct kvp_pool_file *pf);
void kvp_holds_init(struct kvp_dev *kd);
void kvp_holds_drain(struct kvp_dev *kd);

/* kvpool_sysfs.c: /sys/class/kvpool/kvpoolN/ */
extern const struct attribute_group *kvp_pool_groups[];

/* kvpool_ctl.c: /dev/kvpool-control */
extern struct miscdevice kvp_ctl_misc;
bool kvp_cgroup_alive(u64 id);

#endif /* _KVPOOL_DRV_H */
