/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kvpool driver's private header: the pool device, the ioctl
 * plumbing and the globals that its files (kvpool_main.c, kvpool_ioctl.c,
 * kvpool_uarray.c, kvpool_file.c, kvpool_exportfd.c, kvpool_arena.c,
 * kvpool_agent.c, kvpool_quarantine.c, kvpool_sysfs.c, kvpool_ctl.c,
 * kvpool_budget.c, kvpool_trace.c)
 * share.
 *
 * Locking, outermost first:
 *   kvpd_pools_lock	publishing a pool in the table and taking it out,
 *			and taking a reference to one (kvpd_pool_get()).
 *			Never held while waiting for a pool's lock: a
 *			control op takes a reference, drops it, then
 *			takes the pool lock and checks @dead, so one busy
 *			pool stalls no control op on another.
 *			Reserving an id (xa_alloc) needs only the
 *			xarray's own lock.
 *   kvpd_scratch.lock	one client file's ioctl buffer, held across one
 *			EXTEND or batch op, the pool lock inside it; only
 *			ever try-locked, so nothing waits for it
 *   kvpd_chunks_lock	the table of chunk files (kvpd_chunks, each
 *			arena's @hashed) and the retired pools
 *			(kvpd_retired); taken alone by a quarantine's
 *			check, which destroy cancels under kvpd_pools_lock
 *   kvpd_dev.core.lock	one pool: its core state, its clients, @dead,
 *			@nr_exports, the @arena pointer (written once),
 *			its quarantines (@quarantines) and its GPU agent
 *			and the agent's requests
 *   kvpd_budgets_lock	the table of budgets and their pool counts
 *			(kvpool_budget.c); under kvpd_pools_lock or a
 *			pool lock, never the other way round
 *   kvpd_budget.lock	one budget's chunk lists and counters, inside a
 *			pool lock; never held while clearing or mapping
 *   kvpd_backing.map_lock	a budget pool's slot table against its
 *			fault handler: inside the pool lock and inside
 *			the mm's mmap_lock, around nothing but PTEs
 *   kvpd_users.lock	one client file's list of processes; taken with
 *			no other lock held
 *   (xarray locks)	kvpd_pools' own, and inside a pool lock the core's
 *			clients and tenants xarrays': innermost, never
 *			held across anything that sleeps
 * No pool lock is ever taken under a lock of the driver core or the misc
 * layer: pools are not misc devices, so open() runs under no global lock,
 * and a client holding its pool's lock for long delays only that pool.
 *
 * Names show their layer: the driver's own functions, types, globals and
 * macros are kvpd_* and KVPD_* (this header, kvpool_*.c); the core's are
 * kvp_* and KVP_* (kvp_core.h, kvp_*.c); the ABI's are kvpool_* and
 * KVPOOL_* (uapi/linux/kvpool.h), as are the tracepoints (kvpool:*),
 * which tools name. A suffix names exactly one lock the caller holds:
 *   _locked		its pool's lock, kvp_pool.lock (kvpd_dev.core.lock):
 *			the core's functions, which assert it
 *   _chlocked		the chunk table's, kvpd_chunks_lock
 * One word a concept: the pages of a closed client held back until its
 * processes are gone are a quarantine (struct kvp_quarantine,
 * kvpd_dev.quarantines, kvpool_quarantine.c, out_quarantine_pages);
 * "hold" is only ever the verb, or a lock's hold time (hold_ns).
 *
 * Read without a lock, on purpose:
 *   pool->pressure_seq	READ_ONCE before and after an op to decide on a
 *			wake-up (kvpd_pool_ioctl()); the core writes it
 *			with WRITE_ONCE under the pool lock. A stale read
 *			costs one spurious or one late wake-up, which
 *			poll's re-check of the ask absorbs.
 *   kvpd_live		smp_load_acquire in open, paired with the
 *			smp_store_release that ends module init.
 *
 * Lifetime: a pool device is freed by the release of its struct device,
 * once the last reference is gone. The pool table holds one until
 * destroy; every open file holds one through its cdev (the cdev's parent
 * is the device, and the VFS drops the cdev only after ->release has
 * returned); every export file holds one of its own. So whoever unlocks
 * the pool lock last still holds a reference, and the memory the mutex
 * lives in cannot be freed under its unlock. A quarantine's check
 * (kvpd_dev.scan_work) holds none: destroy cancels it, once no client is
 * left to add one, before dropping the table's; or, if quarantines are
 * left, retires the pool, and the retirement's own reference keeps the
 * device until the check ends the last one (kvpd_retire_end()). The
 * agent file holds one too.
 */
#ifndef _KVPOOL_DRV_H
#define _KVPOOL_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "kvp_core.h"

#define KVPD_MAX_POOLS		64

/*
 * One chunk of an arena: a file the pool holds a reference to, and its
 * entry in the module's table of chunks (kvpd_chunks, kvpool_arena.c),
 * keyed by what names its memory: @node is protected by kvpd_chunks_lock,
 * the rest is fixed once the arena is set.
 */
struct kvpd_arena_chunk {
	struct file *file;
	u64 offset;		/* in the arena, bytes */
	u64 bytes;
	const void *key;	/* a memfd's inode, a CUDA export's file */
	struct hlist_node node;	/* in kvpd_chunks while hashed */
};

/*
 * A pool's arena (kvpool_arena.c): fixed once set, freed with the pool's
 * device, so a client of the pool may use it without a lock once it has
 * read kvpd_dev.arena under the pool lock. Its chunks are in the table
 * of chunks from the set until the pool's destroy, or, for a pool
 * destroyed with pages in quarantine, until the last quarantine ends.
 */
struct kvpd_arena {
	u32 kind;		/* KVPOOL_ARENA_* */
	u32 nr_chunks;
	u32 flags;		/* KVPOOL_ARENA_SET_* */
	bool hashed;		/* its chunks are in kvpd_chunks */
	u64 page_bytes;
	u64 bytes;		/* the chunks' sum */
	struct file *device;	/* the GPU's device file it holds, or NULL */
	struct kvpd_arena_chunk chunk[];
};

struct kvpd_agent;

/* A pool device; see "Lifetime" above. */
struct kvpd_dev {
	struct kvp_pool core;
	struct device dev;
	struct cdev cdev;
	wait_queue_head_t wq;	/* pollers waiting for pressure */
	u32 nr_exports;		/* export files alive: they point here */
	bool dead;		/* being destroyed: refuse new clients */
	struct kvpd_arena *arena;	/* set once, under core.lock */
	/* On a budget: fixed at create (kvpool_budget.c), else NULL. */
	struct kvpd_backing *backing;
	struct pci_dev *gpu;	/* the parent device, or NULL; fixed */
	/*
	 * Closed clients whose pages are quarantined (kvpool_quarantine.c),
	 * by kvpd_pool_file.quarantine_link; the list and @scan_delay are
	 * protected by core.lock. @scan_work checks them.
	 */
	struct list_head quarantines;
	struct delayed_work scan_work;
	unsigned long scan_delay;	/* jiffies until the next check */
	/*
	 * Destroyed with pages in quarantine: off the pool table, on
	 * kvpd_retired by @retired_link (kvpd_chunks_lock), holding a
	 * device reference and its chunks until the last quarantine ends.
	 * @retired is set under core.lock once @retired_link is linked.
	 */
	struct list_head retired_link;
	bool retired;		/* set once, under core.lock */
	/*
	 * The GPU agent (kvpool_agent.c): @agent, @agent_queue (requests
	 * no agent has taken, by kvpd_agent_req.link) and @agent_seq are
	 * protected by core.lock. The agent polls @agent_wq; clients
	 * waiting for answers sleep on @reply_wq.
	 */
	struct kvpd_agent *agent;
	struct list_head agent_queue;
	u64 agent_seq;
	wait_queue_head_t agent_wq;
	wait_queue_head_t reply_wq;
};

/*
 * The processes that used one client file: its opener and each that made
 * an ioctl on it, a reference to each one's struct pid (its thread group
 * leader's). @pid, @nr and @cap are protected by @lock while the file is
 * open, and by the pool lock once it is quarantined; @last, the process seen
 * last, is written under @lock and read without it: NULL or a pid that
 * @pid holds a reference to.
 */
struct kvpd_users {
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
 * up to KVPD_SCRATCH_MAX, and is freed with the file.
 */
struct kvpd_scratch {
	struct mutex lock;	/* held by the call using @buf and @size */
	void *buf;
	size_t size;
};

#define KVPD_SCRATCH_MAX	(256 * 1024)

/*
 * An open file of a pool (file->private_data is &@c). When its last
 * reference goes with pages of an arena still held, it outlives the file
 * as a quarantine: @c is dead, @quarantine has the pages, @users the
 * processes to wait for, and @quarantine_link puts it on its pool's
 * kvpd_dev.quarantines.
 */
struct kvpd_pool_file {
	struct kvp_client c;
	struct kvpd_users users;
	struct kvpd_scratch scratch;
	struct kvp_quarantine quarantine;
	struct list_head quarantine_link;
};

/*
 * An export file's private data. @idx, @exported and @imported are
 * protected by kd->core.lock; @kd is fixed, and the file holds a
 * reference to its device.
 */
struct kvpd_export_file {
	struct kvpd_dev *kd;
	u32 idx;
	bool exported;		/* it holds (or held) a row: counted */
	bool imported;
};

static inline struct kvpd_dev *kvpd_dev_of(struct kvp_pool *pool)
{
	return container_of(pool, struct kvpd_dev, core);
}

/* kvpool_main.c: the pool table and what every pool shares */
extern struct mutex kvpd_pools_lock;
/* struct kvpd_dev by pool id; an id being created is reserved (NULL). */
extern struct xarray kvpd_pools;
extern dev_t kvpd_devt;		/* the first of KVPD_MAX_POOLS minors */
/* Set once init can no longer fail: pools refuse opens before that. */
extern bool kvpd_live;
extern struct class kvpd_class;
/* kvpool_sysfs.c: /sys/class/kvpool/ */
extern const struct attribute_group *kvpd_class_groups[];

/* Pools destroyed with pages in quarantine, by kvpd_dev.retired_link. */
extern struct list_head kvpd_retired;
/* The work of every pool's quarantine check: rmmod waits for it. */
extern struct workqueue_struct *kvpd_wq;

struct kvpd_dev *kvpd_pool_get(u32 id);
int kvpd_pool_create(u32 id, u32 flags, u32 pages, u32 ptok, u32 rows,
		     u32 rtok, struct pci_dev *gpu, struct kvpd_backing *bk);
int kvpd_pool_destroy(u32 id);
void kvpd_retire_end(struct kvpd_dev *kd);

/* Per-call state of an ioctl: the user's struct and our copy of it. */
struct kvpd_ucmd {
	struct kvp_client *client;	/* NULL for control ops */
	void *file_priv;		/* the agent file's, for its ops */
	const void *data;		/* the op's kvpd_ioctl_op.data */
	void __user *ubuffer;
	u32 user_size;
	u32 op_size;
	void *cmd;
	bool responded;		/* the handler wrote the struct back itself */
};

union kvpd_ucmd_buffer {
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
	struct kvpool_ctl_agent agent;
	struct kvpool_ctl_budget budget;
	struct kvpool_agent_request agent_request;
	struct kvpool_agent_reply agent_reply;
};

#define KVPD_OP_ADMIN	BIT(0)	/* needs CAP_SYS_ADMIN */

struct kvpd_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	unsigned int flags;	/* KVPD_OP_* */
	int (*execute)(struct kvpd_ucmd *ucmd);
	/* for a handler several ops share: which one it runs as */
	const void *data;
};

/*
 * The op-table entry of KVPOOL_@_name, at its number less @_base. @_last
 * is the last field of the op's first release, the shortest size accepted.
 * @_data reaches the handler as ucmd->data.
 */
#define KVPD_OP_DATA(_base, _name, _fn, _struct, _last, _flags, _data)	\
	[KVPOOL_CMD_##_name - (_base)] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kvpd_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = KVPOOL_##_name,				\
		.flags = _flags,					\
		.execute = _fn,						\
		.data = _data,						\
	}
#define KVPD_OP(_base, _name, _fn, _struct, _last, _flags)		\
	KVPD_OP_DATA(_base, _name, _fn, _struct, _last, _flags, NULL)

/*
 * kvpool_ioctl.c: the dispatcher and the pool ioctls. KVPD_STACK_ARRAY is
 * the most bytes of an array an op keeps on its stack (docs/design.md,
 * "Arrays").
 */
#define KVPD_STACK_ARRAY	256
long kvpd_dispatch(struct kvp_client *c, void *file_priv,
		   const struct kvpd_ioctl_op *ops, unsigned int nr_ops,
		   unsigned int base, unsigned int cmd, unsigned long arg);
int kvpd_respond(struct kvpd_ucmd *ucmd);
long kvpd_pool_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* kvpool_uarray.c: structs and arrays in and out, the scratch buffer */
int kvpd_copy_in(void *dst, const void __user *src, size_t bytes,
		 size_t ksize);
int kvpd_copy_out(void __user *dst, const void *src, size_t bytes,
		  size_t ksize);
int kvpd_check_len(u32 len, size_t ksize);
void *kvpd_read_array(u64 uptr, u32 count, u32 len, size_t ksize,
		      u32 *error_index);
void *kvpd_read_array_buf(u64 uptr, u32 count, u32 len, size_t ksize,
			  u32 *error_index, void *buf, size_t buf_size);
void kvpd_array_free(void *p, const void *buf);
bool kvpd_scratch_get(struct kvp_client *c, void **buf, size_t *size);
void kvpd_scratch_put(struct kvp_client *c, size_t want);
int kvpd_write_array(u64 uptr, const void *src, u32 count, u32 len,
		     size_t ksize, bool zero_tail);

/* kvpool_file.c: the pool device's file operations */
extern const struct file_operations kvpd_pool_fops;

/* kvpool_exportfd.c: export files */
int kvpd_export_ioctl(struct kvpd_ucmd *ucmd);
int kvpd_import_ioctl(struct kvpd_ucmd *ucmd);

/* kvpool_arena.c: the pool's memory */
int kvpd_arena_ioctl(struct kvpd_ucmd *ucmd);
int kvpd_ctl_arena_set_ioctl(struct kvpd_ucmd *ucmd);
void kvpd_arena_free(struct kvpd_arena *a);
/* The table of chunks and the retired pools: see kvpool_arena.c. */
extern struct mutex kvpd_chunks_lock;
void kvpd_arena_unhash_chlocked(struct kvpd_arena *a);
bool kvpd_chunk_file_hashed(struct file *file);
int kvpd_arena_check_cuda(struct file *file);
void kvpd_arena_retired_count(u32 *pools, u32 *chunks);

/* kvpool_agent.c: the pool's GPU agent */
void kvpd_agent_init(struct kvpd_dev *kd);
int kvpd_agent_fetch(struct kvpd_dev *kd, const struct kvpd_arena *a,
		     u32 first, u32 count, bool nowait, struct file **files);
u32 kvpd_agent_pid_locked(struct kvpd_dev *kd);
void kvpd_agent_pool_dead(struct kvpd_dev *kd);
int kvpd_ctl_agent_ioctl(struct kvpd_ucmd *ucmd);

/* kvpool_quarantine.c: a dead client's pages */
int kvpd_users_init(struct kvpd_users *u);
int kvpd_users_note(struct kvpd_users *u);
void kvpd_users_fini(struct kvpd_users *u);
void kvpd_pool_file_release(struct kvpd_pool_file *pf);
void kvpd_quarantines_init(struct kvpd_dev *kd);
void kvpd_quarantines_drain(struct kvpd_dev *kd);

/* kvpool_budget.c: chunk budgets and the pools on them */
struct kvpd_backing;
int kvpd_ctl_budget_ioctl(struct kvpd_ucmd *ucmd);
int kvpd_backing_new(const struct kvpool_ctl_create *cmd,
		     struct kvpd_backing **out);
int kvpd_backing_attach(struct kvpd_dev *kd, struct kvpd_backing *bk);
void kvpd_backing_free(struct kvpd_backing *bk);
void kvpd_backing_open(struct kvpd_dev *kd, struct file *file);
void kvpd_backing_poll_wait(struct kvpd_dev *kd, struct file *file,
			    poll_table *wait);
int kvpd_backing_mmap(struct kvpd_dev *kd, struct vm_area_struct *vma);
bool kvpd_backing_describe(struct kvpd_dev *kd, struct kvpool_arena *cmd);
void kvpd_backing_show(struct kvpd_dev *kd, int *budget, u32 *chunks);
void kvpd_budget_trim_locked(struct kvpd_dev *kd, bool again);
void kvpd_budget_wait(void *kd);
int kvpd_budgets_init(void);
void kvpd_budgets_exit(void);

/* kvpool_sysfs.c: /sys/class/kvpool/kvpoolN/ */
extern const struct attribute_group *kvpd_pool_groups[];

/* kvpool_ctl.c: /dev/kvpool-control */
extern struct miscdevice kvpd_ctl_misc;
bool kvpd_cgroup_alive(u64 id);

#endif /* _KVPOOL_DRV_H */
