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
 * The pool's state machine lives in the core (kvp_core.h). The driver
 * copies arguments in and out, checks their shape and takes the locks
 * (kvpool_drv.h says which, in what order, and how a pool's memory
 * lives): kvpool_ioctl.c has the dispatcher and the pool ioctls,
 * kvpool_uarray.c the copies of structs and arrays in and out,
 * kvpool_file.c the pool device's file operations, kvpool_exportfd.c
 * export files, kvpool_arena.c the pool's memory, kvpool_agent.c the
 * pool's GPU agent, kvpool_quarantine.c a
 * dead client's pages, kvpool_sysfs.c the pool figures, kvpool_ctl.c the
 * control device and kvpool_trace.[ch] the tracepoints. This file has
 * the module: its parameters, the pool table, and pool creation and
 * destruction.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/xarray.h>

#include "kvpool_drv.h"

#ifndef KVPOOL_VERSION
#error "KVPOOL_VERSION is set by Kbuild from the top-level VERSION file"
#endif

/* see "Locking" in kvpool_drv.h */
DEFINE_MUTEX(kvpd_pools_lock);
/* struct kvpd_dev by pool id; an id being created is reserved (NULL). */
DEFINE_XARRAY_ALLOC(kvpd_pools);
dev_t kvpd_devt;		/* the first of KVPD_MAX_POOLS minors */
/* Set once init can no longer fail: pools refuse opens before that. */
bool kvpd_live;
/* see kvpd_dev.retired_link */
LIST_HEAD(kvpd_retired);
struct workqueue_struct *kvpd_wq;

struct class kvpd_class = {
	.name = "kvpool",
	.class_groups = kvpd_class_groups,
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

/* The last reference is gone: no file, sysfs reader or table holds it. */
static void kvpd_dev_release(struct device *dev)
{
	struct kvpd_dev *kd = container_of(dev, struct kvpd_dev, dev);

	kvpd_arena_free(kd->arena);
	kvpd_backing_free(kd->backing);
	pci_dev_put(kd->gpu);
	kvp_pool_fini(&kd->core);
	kfree(kd);
}

/**
 * kvpd_pool_get() - a reference to pool @id, without the table's lock
 * @id: the pool's id
 *
 * For control ops, which must not wait for one pool's lock with the
 * table's held: that would stall every control op on every pool behind
 * one busy pool (docs/gpu-budget.md). The caller takes the pool lock
 * itself, refuses a pool whose @dead is set, and drops the reference
 * with put_device().
 *
 * Context: process context; takes and drops kvpd_pools_lock.
 * Return: the pool, or NULL if there is none of that id.
 */
struct kvpd_dev *kvpd_pool_get(u32 id)
{
	struct kvpd_dev *kd;

	mutex_lock(&kvpd_pools_lock);
	/* Under the lock the table's own reference keeps @kd. */
	kd = id < KVPD_MAX_POOLS ? xa_load(&kvpd_pools, id) : NULL;
	if (kd)
		get_device(&kd->dev);
	mutex_unlock(&kvpd_pools_lock);
	return kd;
}

/**
 * kvpd_pool_create() - make a pool and publish it
 * @id: an id the caller reserved in kvpd_pools
 * @flags: ``KVPOOL_CREATE_*``
 * @pages: pages
 * @ptok: tokens a page
 * @rows: rows
 * @rtok: most tokens a row
 * @gpu: if not NULL, the device's parent: the pool takes over the
 *       caller's reference to it, failure or not
 * @bk: if not NULL, the pool's side of its budget (kvpd_backing_new()),
 *      which the pool takes over too, failure or not
 *
 * The page table is built before kvpd_pools_lock is taken (a pool of
 * 2^27 pages takes a while), and the lock is held only to publish the
 * device: nobody can reach the pool before that.
 *
 * Context: process context, no lock held.
 * Return: 0, or a negative errno with nothing made.
 */
int kvpd_pool_create(u32 id, u32 flags, u32 pages, u32 ptok, u32 rows,
		     u32 rtok, struct pci_dev *gpu, struct kvpd_backing *bk)
{
	struct kvpd_dev *kd;
	int ret;

	kd = kzalloc(sizeof(*kd), GFP_KERNEL);
	if (!kd) {
		pci_dev_put(gpu);
		kvpd_backing_free(bk);
		return -ENOMEM;
	}
	ret = kvp_pool_init(&kd->core, id, flags & ~KVPOOL_CREATE_GPU, pages,
			    ptok, rows, rtok);
	if (ret) {
		pci_dev_put(gpu);
		kvpd_backing_free(bk);
		kfree(kd);
		return ret;
	}
	init_waitqueue_head(&kd->wq);
	kvpd_quarantines_init(kd);
	kvpd_agent_init(kd);
	INIT_LIST_HEAD(&kd->retired_link);
	/* The core tests its own flags only; INFO and sysfs report all. */
	if (gpu)
		kd->core.flags |= KVPOOL_CREATE_GPU;
	kd->gpu = gpu;

	/* From here on the device's release frees everything. */
	device_initialize(&kd->dev);
	if (bk) {
		ret = kvpd_backing_attach(kd, bk);
		if (ret)
			goto out_put;
	}
	kd->dev.parent = gpu ? &gpu->dev : NULL;
	kd->dev.class = &kvpd_class;
	kd->dev.devt = MKDEV(MAJOR(kvpd_devt), MINOR(kvpd_devt) + id);
	kd->dev.groups = kvpd_pool_groups;
	kd->dev.release = kvpd_dev_release;
	ret = dev_set_name(&kd->dev, "kvpool%u", id);
	if (ret)
		goto out_put;
	cdev_init(&kd->cdev, &kvpd_pool_fops);
	kd->cdev.owner = THIS_MODULE;
	mutex_lock(&kvpd_pools_lock);
	ret = cdev_device_add(&kd->cdev, &kd->dev);
	/* The id is reserved: storing into it allocates nothing. */
	if (!ret) {
		ret = xa_err(xa_store(&kvpd_pools, id, kd, GFP_KERNEL));
		if (ret)
			cdev_device_del(&kd->cdev, &kd->dev);
	}
	mutex_unlock(&kvpd_pools_lock);
	if (ret)
		goto out_put;
	return 0;

out_put:
	put_device(&kd->dev);
	return ret;
}

/* Reserves an id and makes the pool: for the default pool at init. */
static int kvpd_pool_create_default(u32 flags, u32 pages, u32 ptok,
				    u32 rows, u32 rtok)
{
	u32 id;
	int ret;

	ret = kvp_geom_check(flags, pages, ptok, rows, rtok);
	if (ret)
		return ret;
	ret = xa_alloc(&kvpd_pools, &id, NULL, XA_LIMIT(0, KVPD_MAX_POOLS - 1),
		       GFP_KERNEL);
	if (!ret) {
		ret = kvpd_pool_create(id, flags, pages, ptok, rows, rtok,
				       NULL, NULL);
		if (ret)
			xa_erase(&kvpd_pools, id);
	}
	return ret == -EBUSY ? -ENOSPC : ret;
}

/*
 * A pool destroyed with pages in quarantine: on kvpd_retired first, then
 * marked, so that the check that ends the last quarantine finds it
 * there. One that ended meanwhile (its check saw no mark) ends here,
 * once no check runs: the check never outlives the reference it uses.
 */
static void kvpd_retire_start(struct kvpd_dev *kd)
{
	u32 pages;
	bool ended;

	get_device(&kd->dev);	/* the retirement's */
	mutex_lock(&kvpd_chunks_lock);
	list_add_tail(&kd->retired_link, &kvpd_retired);
	mutex_unlock(&kvpd_chunks_lock);
	mutex_lock(&kd->core.lock);
	kd->retired = true;
	ended = list_empty(&kd->quarantines);
	pages = kd->core.quarantine_pages;
	mutex_unlock(&kd->core.lock);
	if (ended) {
		cancel_delayed_work_sync(&kd->scan_work);
		kvpd_retire_end(kd);
		return;
	}
	pr_info("pool %u destroyed with %u pages in quarantine: %u chunks held until its writers exit\n",
		kd->core.id, pages, kd->arena ? kd->arena->nr_chunks : 0);
}

/**
 * kvpd_pool_destroy() - destroy pool @id, if nobody uses it
 * @id: the pool's id
 *
 * In two parts, so that the table's lock is never held while waiting for
 * the pool's: under the pool lock alone, the check that no client or
 * export file is left and @dead; then, under kvpd_pools_lock, the pool
 * goes out of the table. Between the two, control ops and opens find
 * the pool dead and answer ENODEV.
 *
 * Context: process context, no lock held.
 * Return: 0; -ENODEV if there is no such pool or another destroy has it;
 * -EBUSY if a client or an export file is left.
 */
int kvpd_pool_destroy(u32 id)
{
	struct kvpd_dev *kd = kvpd_pool_get(id);
	bool retire = false;
	int ret;

	if (!kd)
		return -ENODEV;
	/*
	 * An open joins under the pool lock and fails once @dead is set;
	 * with no clients and no export files now, none can appear.
	 */
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV :
	      kd->core.nr_clients || kd->nr_exports ? -EBUSY : 0;
	if (ret) {
		mutex_unlock(&kd->core.lock);
		put_device(&kd->dev);
		return ret;
	}
	kd->dead = true;
	/*
	 * No client is left to quarantine more. Pages still quarantined
	 * may be written by their processes through their own mappings:
	 * the arena's memory stays this pool's, retired, until they are
	 * gone (docs/gpu-agent.md).
	 */
	retire = !list_empty(&kd->quarantines);
	mutex_unlock(&kd->core.lock);

	mutex_lock(&kvpd_pools_lock);
	kvpd_agent_pool_dead(kd);
	if (retire)
		kvpd_retire_start(kd);
	else
		kvpd_quarantines_drain(kd);
	if (!retire) {
		mutex_lock(&kvpd_chunks_lock);
		kvpd_arena_unhash_chlocked(kd->arena);
		mutex_unlock(&kvpd_chunks_lock);
	}

	/* Waits for sysfs readers; an opener in flight holds its own ref. */
	cdev_device_del(&kd->cdev, &kd->dev);
	xa_erase(&kvpd_pools, id);
	put_device(&kd->dev);	/* the table's */
	mutex_unlock(&kvpd_pools_lock);
	put_device(&kd->dev);	/* ours */
	return 0;
}

/**
 * kvpd_retire_end() - a retired pool's last quarantine ended: let it go
 * @kd: the pool, destroyed with pages in quarantine
 *
 * Its chunks leave the table, so the memory may be given to a pool
 * again, and the retirement's device reference goes. Whoever takes @kd
 * off kvpd_retired does this, once: the quarantine check that found it
 * done, destroy if it ended before the mark, or rmmod.
 *
 * Context: process context, no lock held; the pool's last reference may
 * go here.
 */
void kvpd_retire_end(struct kvpd_dev *kd)
{
	bool mine;

	mutex_lock(&kvpd_chunks_lock);
	mine = !list_empty(&kd->retired_link);
	if (mine) {
		list_del_init(&kd->retired_link);
		kvpd_arena_unhash_chlocked(kd->arena);
	}
	mutex_unlock(&kvpd_chunks_lock);
	if (!mine)
		return;
	pr_info("pool %u's chunks released: its quarantine ended\n",
		kd->core.id);
	put_device(&kd->dev);
}

/*
 * rmmod: the module's memory goes, so every retirement ends now, as
 * destroy drains quarantines. The processes keep their own mappings.
 */
static void kvpd_retired_drain_all(void)
{
	struct kvpd_dev *kd;

	for (;;) {
		mutex_lock(&kvpd_chunks_lock);
		kd = list_first_entry_or_null(&kvpd_retired, struct kvpd_dev,
					      retired_link);
		if (kd)
			get_device(&kd->dev);
		mutex_unlock(&kvpd_chunks_lock);
		if (!kd)
			return;
		/* Ends the quarantines; its check may end the retirement. */
		kvpd_quarantines_drain(kd);
		kvpd_retire_end(kd);
		put_device(&kd->dev);
	}
}

static void kvpd_pool_destroy_all(void)
{
	struct kvpd_dev *kd;
	unsigned long id;

	/*
	 * No file of ours is open: the module could not be unloading. So
	 * no control op runs either, and the table holds still.
	 */
	xa_for_each(&kvpd_pools, id, kd)
		WARN_ON(kvpd_pool_destroy(id));
}

/* Says which default-pool parameter is out of range, and the rule. */
static int kvpd_check_params(void)
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
		ret = kvpd_check_params();
		if (ret)
			return ret;
	}
	/*
	 * The quarantine checks', so that rmmod can wait for them all;
	 * unbound: a check has no CPU of its own (7.3 warns at a
	 * workqueue that says neither WQ_UNBOUND nor WQ_PERCPU).
	 */
	kvpd_wq = alloc_workqueue("kvpool", WQ_UNBOUND, 0);
	if (!kvpd_wq)
		return -ENOMEM;
	ret = kvpd_budgets_init();
	if (ret)
		goto out_wq;
	ret = class_register(&kvpd_class);
	if (ret)
		goto out_budgets;
	ret = alloc_chrdev_region(&kvpd_devt, 0, KVPD_MAX_POOLS, "kvpool");
	if (ret)
		goto out_class;
	if (nr_pages) {
		ret = kvpd_pool_create_default(reserve_zero ?
					       KVPOOL_CREATE_RESERVE_ZERO : 0,
					       nr_pages, page_tokens, nr_rows,
					       row_tokens);
		if (ret) {
			pr_err("default pool: %d\n", ret);
			goto out_region;
		}
	}
	ret = misc_register(&kvpd_ctl_misc);
	if (ret)
		goto out_pools;
	/* Pairs with the acquire in open: all of init is visible there. */
	smp_store_release(&kvpd_live, true);
	return 0;

out_pools:
	/* Opens were refused so far: no pool has clients. */
	kvpd_pool_destroy_all();
out_region:
	unregister_chrdev_region(kvpd_devt, KVPD_MAX_POOLS);
out_class:
	class_unregister(&kvpd_class);
out_budgets:
	kvpd_budgets_exit();
out_wq:
	destroy_workqueue(kvpd_wq);
	return ret;
}

static void __exit kvpool_exit(void)
{
	misc_deregister(&kvpd_ctl_misc);
	kvpd_pool_destroy_all();
	kvpd_retired_drain_all();
	/* Every pool is gone: so is every budget's clearing work after this. */
	kvpd_budgets_exit();
	/* A check that ended a retirement may still be returning. */
	destroy_workqueue(kvpd_wq);
	xa_destroy(&kvpd_pools);
	unregister_chrdev_region(kvpd_devt, KVPD_MAX_POOLS);
	class_unregister(&kvpd_class);
}

module_init(kvpool_init);
module_exit(kvpool_exit);

MODULE_DESCRIPTION("Cross-process broker for GPU KV-cache page ownership");
MODULE_AUTHOR("The kvpool authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(KVPOOL_VERSION);
