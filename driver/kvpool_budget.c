// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: chunk budgets (docs/gpu-budget.md, "A chunk budget").
 * A budget is memory the kernel allocated in chunks. Pools created on it
 * reserve an id space and back it slot by slot with chunks as their
 * EXTENDs need pages, and give back their wholly free slots; a chunk that
 * held another pool's pages is zeroed before it backs a slot again. The
 * kernel maps a budget pool's chunks into its clients itself (mmap of the
 * pool file, one address space per pool), so that it can unmap a chunk
 * from all of them at the moment the pool gives it back: no client can
 * keep, or reach again, memory its pool no longer holds.
 *
 * Locking (inside the pool lock; see kvpool_drv.h for the whole order):
 *   kvpd_budgets_lock	the table of budgets and each one's @nr_pools
 *   kvpd_budget.lock	one budget's chunk lists and counters and its
 *			pools' floors and ceilings; held only for list and
 *			counter updates, never while clearing or mapping
 *   kvpd_backing.map_lock	one pool's slot table against the fault
 *			handler, which runs under the mm's mmap_lock
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/poll.h>
#include <linux/pseudo_fs.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "kvpool_drv.h"

#define KVPD_MAX_BUDGETS	64
#define KVPD_NO_CHUNK		U32_MAX
#define KVPD_FS_MAGIC		0x6b767062	/* "kvpb" */

#ifndef KVPD_HAVE_VM_FLAGS_SET
/* Linux 6.3 made vm_flags writable only through these helpers. */
static inline void vm_flags_set(struct vm_area_struct *vma,
				unsigned long flags)
{
	vma->vm_flags |= flags;
}
#endif

/* One chunk: its pages are the budget's for the budget's whole life. */
struct kvpd_chunk {
	struct page **pages;	/* chunk_pages pages, allocated at CREATE */
	u64 last_serial;	/* kvpd_backing.serial of its last pool, or 0 */
	u32 next;		/* in a free list, while no pool holds it */
};

/*
 * A budget. The shape is fixed at CREATE; @lock protects the free lists
 * (@clean_head, @nr_clean: zeroed or never used; @dirty_head: given back
 * with a pool's bytes in it), @nr_free (both lists and the chunk the
 * clearing work holds), @unmet, @floors, the counters, and each of its
 * pools'
 * kvpd_backing.nr_held, min_chunks and max_chunks. @nr_pools is
 * kvpd_budgets_lock's.
 */
struct kvpd_budget {
	u32 id;
	u32 kind;
	u32 nr_chunks;
	u32 chunk_pages;	/* PAGE_SIZE pages a chunk */
	u64 chunk_bytes;
	struct kvpd_chunk *chunks;
	struct work_struct clear_work;
	struct mutex lock;	/* the lists and counters below, and floors */
	u32 clean_head;
	u32 nr_clean;
	u32 dirty_head;
	u32 nr_free;
	u32 unmet;		/* chunks floors ask for that pools do not hold */
	u32 floors;		/* the floors' sum */
	u64 moves;
	u64 cleared_bytes;
	u64 clear_ns;
	u32 nr_pools;
	/*
	 * Its pools' pollers: a pool taking chunks shrinks what every other
	 * one could still grow by, which their pressure counts as free.
	 */
	wait_queue_head_t wq;
};

/*
 * A pool's side of its budget, fixed at create but for what the locks
 * named here protect. @slot[s] is the chunk backing pages
 * [s * ppc, (s + 1) * ppc), or KVPD_NO_CHUNK: written under the pool
 * lock and @map_lock together, read under either. @low_hole (no slot
 * below it is unbacked) and @trim_seen are the pool lock's.
 */
struct kvpd_backing {
	struct kvpd_budget *budget;
	u64 serial;		/* this pool, among all pools ever made */
	u64 page_bytes;
	u32 ppc;		/* pool pages a chunk */
	u32 nr_slots;
	u32 nr_held;
	u32 min_chunks;
	u32 max_chunks;		/* 0: no ceiling */
	u32 low_hole;
	u32 trim_seen;		/* free pages at the last fruitless give-back */
	bool keep_zero;		/* slot 0 holds the reserved page: kept */
	struct inode *inode;	/* its i_mapping is every client's mapping */
	struct mutex map_lock;	/* @slot against the fault handler */
	u32 slot[];
};

static DEFINE_MUTEX(kvpd_budgets_lock);
static DEFINE_XARRAY_ALLOC(kvpd_budgets);
static atomic64_t kvpd_serial = ATOMIC64_INIT(0);
static struct vfsmount *kvpd_mnt;

/* The chunks one pool's floor still asks for. */
static u32 kvpd_unmet(const struct kvpd_backing *bk)
{
	return bk->min_chunks > bk->nr_held ? bk->min_chunks - bk->nr_held : 0;
}

/* @bk holds @d chunks more (or fewer); @b->lock held. */
static void kvpd_held_add(struct kvpd_budget *b, struct kvpd_backing *bk,
			  int d)
{
	lockdep_assert_held(&b->lock);
	b->unmet -= kvpd_unmet(bk);
	bk->nr_held += d;
	b->unmet += kvpd_unmet(bk);
}

static void kvpd_chunk_push(struct kvpd_budget *b, u32 *head, u32 c)
{
	b->chunks[c].next = *head;
	*head = c;
}

static u32 kvpd_chunk_pop(struct kvpd_budget *b, u32 *head)
{
	u32 c = *head;

	if (c != KVPD_NO_CHUNK)
		*head = b->chunks[c].next;
	return c;
}

/* Zeroes chunk @c for the clearing work, with no lock held. */
static void kvpd_chunk_clear(struct kvpd_budget *b, u32 c)
{
	ktime_t t0 = ktime_get();
	u32 i;

	for (i = 0; i < b->chunk_pages; i++)
		clear_highpage(b->chunks[c].pages[i]);
	mutex_lock(&b->lock);
	b->cleared_bytes += b->chunk_bytes;
	b->clear_ns += ktime_to_ns(ktime_sub(ktime_get(), t0));
	mutex_unlock(&b->lock);
}

/*
 * The clearing work: zeroes the chunks pools gave back, one at a time,
 * holding no pool's lock, so that a pool that grows later finds them
 * clean and clears nothing under its own lock.
 */
static void kvpd_clear_work(struct work_struct *work)
{
	struct kvpd_budget *b = container_of(work, struct kvpd_budget,
					     clear_work);
	u32 c;

	for (;;) {
		mutex_lock(&b->lock);
		c = kvpd_chunk_pop(b, &b->dirty_head);
		mutex_unlock(&b->lock);
		if (c == KVPD_NO_CHUNK)
			return;
		/* Off both lists, still counted free: no grow can take it. */
		kvpd_chunk_clear(b, c);
		mutex_lock(&b->lock);
		kvpd_chunk_push(b, &b->clean_head, c);
		b->nr_clean++;
		mutex_unlock(&b->lock);
		cond_resched();
	}
}

/*
 * Puts chunk @slot of @kd's pool behind its pages: the fault handler maps
 * it from now on, and the core sees its pages free.
 */
static void kvpd_slot_install_locked(struct kvpd_dev *kd, u32 slot, u32 c)
{
	struct kvpd_backing *bk = kd->backing;

	mutex_lock(&bk->map_lock);
	bk->slot[slot] = c;
	mutex_unlock(&bk->map_lock);
	kvp_back_locked(&kd->core, slot * bk->ppc, bk->ppc);
}

/*
 * kvp_pool.grow for a pool on a budget: chunks for at least @pages more
 * pages, lowest unbacked slots first, all of them or none, so that an
 * EXTEND the budget cannot serve takes nothing from it. None when the
 * pool's ceiling, its unbacked slots or what the other pools' unmet
 * floors leave of the free chunks are too few (the EXTEND fails with
 * ENOSPC); none either, with %KVP_GROW_WAIT, when enough are free but
 * not enough of them clean yet: the EXTEND waits for the clearing work
 * with the lock dropped (kvpd_budget_wait()) rather than fail on memory
 * that is free.
 */
static int kvpd_budget_grow(struct kvp_pool *pool, u32 pages)
{
	struct kvpd_dev *kd = kvpd_dev_of(pool);
	struct kvpd_backing *bk = kd->backing;
	struct kvpd_budget *b = bk->budget;
	u32 want = DIV_ROUND_UP(pages, bk->ppc);
	u32 s, n, head, c, others;

	lockdep_assert_held(&pool->lock);
	/* Enough unbacked slots? (The slot table is the pool lock's.) */
	for (s = bk->low_hole, n = 0; n < want && s < bk->nr_slots; s++)
		n += bk->slot[s] == KVPD_NO_CHUNK;
	if (n < want)
		return 0;

	mutex_lock(&b->lock);
	others = b->unmet - kvpd_unmet(bk);
	if ((bk->max_chunks && bk->nr_held + want > bk->max_chunks) ||
	    b->nr_free < want || b->nr_free - want < others) {
		mutex_unlock(&b->lock);
		return 0;
	}
	if (b->nr_clean < want) {
		mutex_unlock(&b->lock);
		return KVP_GROW_WAIT;	/* the rest are being cleared */
	}
	/* The first @want clean chunks leave the list as one chain. */
	head = b->clean_head;
	for (c = head, n = 1; n < want; n++)
		c = b->chunks[c].next;
	b->clean_head = b->chunks[c].next;
	b->nr_clean -= want;
	b->nr_free -= want;
	kvpd_held_add(b, bk, (int)want);
	for (c = head, n = 0; n < want; n++, c = b->chunks[c].next) {
		u64 last = b->chunks[c].last_serial;

		if (last && last != bk->serial)
			b->moves++;
		b->chunks[c].last_serial = bk->serial;
	}
	mutex_unlock(&b->lock);

	/* The chain is ours now: no one else walks its links. */
	for (s = bk->low_hole, c = head; want; s++) {
		if (bk->slot[s] != KVPD_NO_CHUNK)
			continue;
		n = b->chunks[c].next;
		kvpd_slot_install_locked(kd, s, c);
		c = n;
		want--;
	}
	bk->low_hole = s;
	wake_up_interruptible_all(&b->wq);
	return 0;
}

/*
 * kvp_pool.headroom for a pool on a budget: what kvpd_budget_grow() could
 * take for it now or once the clearing work is done, in pages.
 */
static u32 kvpd_budget_headroom(struct kvp_pool *pool)
{
	struct kvpd_backing *bk = kvpd_dev_of(pool)->backing;
	struct kvpd_budget *b = bk->budget;
	u32 others, chunks;

	lockdep_assert_held(&pool->lock);
	mutex_lock(&b->lock);
	others = b->unmet - kvpd_unmet(bk);
	chunks = b->nr_free > others ? b->nr_free - others : 0;
	if (bk->max_chunks)
		chunks = min(chunks, bk->max_chunks > bk->nr_held ?
				     bk->max_chunks - bk->nr_held : 0);
	mutex_unlock(&b->lock);
	return min_t(u64, (u64)chunks * bk->ppc, pool->unbacked_pages);
}

/* poll() of a budget pool's file also waits for its budget's pools. */
void kvpd_backing_poll_wait(struct kvpd_dev *kd, struct file *file,
			    poll_table *wait)
{
	if (kd->backing)
		poll_wait(file, &kd->backing->budget->wq, wait);
}

/* An EXTEND's wait, pool lock dropped, for its budget's clearing work. */
void kvpd_budget_wait(void *kd)
{
	flush_work(&((struct kvpd_dev *)kd)->backing->budget->clear_work);
}

/**
 * kvpd_budget_trim_locked() - give a budget pool's free chunks back
 * @kd: the pool
 * @again: look even if no page came free since the last fruitless pass
 *         (the watermark or the floor changed)
 *
 * The highest backed slots whose pages are all free go back to the
 * budget, unmapped from every client first, as long as the pool keeps
 * its high watermark's worth of free pages and its floor's chunks: all
 * of them in one pass, so that a pool nobody touches again (an idle
 * model's, a killed engine's) keeps none. A pass reads each backed slot's
 * page records once (docs/gpu-budget.md, "Not stepped yet"); one that
 * finds nothing is not repeated until more pages are free than it saw.
 * Clearing is the clearing work's, never under a pool's lock. Nothing
 * happens while a stepped EXTEND has free pages reserved.
 *
 * Context: @kd->core.lock held.
 */
void kvpd_budget_trim_locked(struct kvpd_dev *kd, bool again)
{
	struct kvpd_backing *bk = kd->backing;
	struct kvp_pool *pool = &kd->core;
	struct kvpd_budget *b;
	u32 s, given = 0;

	lockdep_assert_held(&pool->lock);
	if (!bk || pool->pending_pages)
		return;
	if (pool->free_pages < bk->trim_seen)
		bk->trim_seen = pool->free_pages;
	if (!again && bk->trim_seen && pool->free_pages <= bk->trim_seen)
		return;
	b = bk->budget;
	for (s = bk->nr_slots; s-- > 0; ) {
		u32 c = bk->slot[s];

		if (c == KVPD_NO_CHUNK)
			continue;
		if (pool->free_pages < (u64)pool->high_wmark + bk->ppc ||
		    bk->nr_held <= bk->min_chunks)
			break;
		if ((s == 0 && bk->keep_zero) ||
		    !kvp_unback_locked(pool, s * bk->ppc, bk->ppc))
			continue;
		mutex_lock(&bk->map_lock);
		bk->slot[s] = KVPD_NO_CHUNK;
		mutex_unlock(&bk->map_lock);
		/*
		 * Every client's PTEs of the chunk go now; a fault after the
		 * slot was emptied above finds nothing to map (SIGBUS).
		 */
		unmap_mapping_range(bk->inode->i_mapping,
				    (loff_t)s * b->chunk_bytes, b->chunk_bytes,
				    1);
		mutex_lock(&b->lock);
		kvpd_chunk_push(b, &b->dirty_head, c);
		b->nr_free++;
		kvpd_held_add(b, bk, -1);
		mutex_unlock(&b->lock);
		if (s < bk->low_hole)
			bk->low_hole = s;
		given++;
	}
	if (given) {
		queue_work(kvpd_wq, &b->clear_work);
		bk->trim_seen = 0;
	} else {
		bk->trim_seen = pool->free_pages;
	}
}

/* The budget @id, with kvpd_budgets_lock held. */
static struct kvpd_budget *kvpd_budget_find(u32 id)
{
	lockdep_assert_held(&kvpd_budgets_lock);
	return id < KVPD_MAX_BUDGETS ? xa_load(&kvpd_budgets, id) : NULL;
}

static void kvpd_budget_free(struct kvpd_budget *b)
{
	u32 c, i;

	if (!b)
		return;
	cancel_work_sync(&b->clear_work);
	for (c = 0; c < b->nr_chunks && b->chunks; c++) {
		if (!b->chunks[c].pages)
			break;
		for (i = 0; i < b->chunk_pages; i++)
			if (b->chunks[c].pages[i])
				__free_page(b->chunks[c].pages[i]);
		kvfree(b->chunks[c].pages);
	}
	kvfree(b->chunks);
	mutex_destroy(&b->lock);
	kfree(b);
}

/* Every chunk's pages, zeroed; a budget is memory the kernel holds. */
static int kvpd_budget_alloc_chunks(struct kvpd_budget *b)
{
	u32 c, i;

	b->chunks = kvcalloc(b->nr_chunks, sizeof(*b->chunks),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!b->chunks)
		return -ENOMEM;
	for (c = 0; c < b->nr_chunks; c++) {
		struct page **pages;

		pages = kvcalloc(b->chunk_pages, sizeof(*pages),
				 GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!pages)
			return -ENOMEM;
		b->chunks[c].pages = pages;
		for (i = 0; i < b->chunk_pages; i++) {
			pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO |
					      __GFP_NOWARN);
			if (!pages[i])
				return -ENOMEM;
		}
		kvpd_chunk_push(b, &b->clean_head, c);
		cond_resched();
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	b->nr_free = b->nr_chunks;
	b->nr_clean = b->nr_chunks;
	return 0;
}

static int kvpd_budget_create(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_budget *cmd = ucmd->cmd;
	struct kvpd_budget *b;
	u32 id;
	int ret;

	if (cmd->budget_id || cmd->pool_id || cmd->min_bytes ||
	    cmd->max_bytes)
		return -EINVAL;
	if (cmd->kind != KVPOOL_ARENA_HOST)
		return cmd->kind ? -EOPNOTSUPP : -EINVAL;
	if (!cmd->nr_chunks || cmd->nr_chunks > KVPOOL_BUDGET_MAX_CHUNKS ||
	    !cmd->chunk_bytes || cmd->chunk_bytes > SZ_1G ||
	    !IS_ALIGNED(cmd->chunk_bytes, PAGE_SIZE))
		return -EINVAL;
	/* Half of RAM at most: a typo must not take the machine down. */
	if (cmd->nr_chunks * (cmd->chunk_bytes >> PAGE_SHIFT) >
	    totalram_pages() / 2)
		return -ENOMEM;

	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	b->kind = cmd->kind;
	b->nr_chunks = cmd->nr_chunks;
	b->chunk_bytes = cmd->chunk_bytes;
	b->chunk_pages = cmd->chunk_bytes >> PAGE_SHIFT;
	b->clean_head = KVPD_NO_CHUNK;
	b->dirty_head = KVPD_NO_CHUNK;
	mutex_init(&b->lock);
	init_waitqueue_head(&b->wq);
	INIT_WORK(&b->clear_work, kvpd_clear_work);
	ret = kvpd_budget_alloc_chunks(b);
	if (ret)
		goto out_free;

	ret = xa_alloc(&kvpd_budgets, &id, NULL,
		       XA_LIMIT(0, KVPD_MAX_BUDGETS - 1), GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto out_free;
	}
	b->id = id;
	cmd->budget_id = id;
	ret = kvpd_respond(ucmd);
	if (ret) {
		xa_erase(&kvpd_budgets, id);
		goto out_free;
	}
	mutex_lock(&kvpd_budgets_lock);
	xa_store(&kvpd_budgets, id, b, GFP_KERNEL);	/* reserved: no alloc */
	mutex_unlock(&kvpd_budgets_lock);
	return 0;

out_free:
	kvpd_budget_free(b);
	return ret;
}

/* DESTROY and INFO name a budget and nothing else. */
static bool kvpd_budget_id_only(const struct kvpool_ctl_budget *cmd)
{
	return !(cmd->kind || cmd->nr_chunks || cmd->chunk_bytes ||
		 cmd->pool_id || cmd->min_bytes || cmd->max_bytes);
}

static int kvpd_budget_destroy(struct kvpool_ctl_budget *cmd)
{
	struct kvpd_budget *b;

	if (!kvpd_budget_id_only(cmd))
		return -EINVAL;
	mutex_lock(&kvpd_budgets_lock);
	b = kvpd_budget_find(cmd->budget_id);
	if (!b || b->nr_pools) {
		mutex_unlock(&kvpd_budgets_lock);
		return b ? -EBUSY : -ENODATA;
	}
	xa_erase(&kvpd_budgets, cmd->budget_id);
	mutex_unlock(&kvpd_budgets_lock);
	kvpd_budget_free(b);
	return 0;
}

static int kvpd_budget_info(struct kvpool_ctl_budget *cmd)
{
	struct kvpd_budget *b;

	if (!kvpd_budget_id_only(cmd))
		return -EINVAL;
	mutex_lock(&kvpd_budgets_lock);
	b = kvpd_budget_find(cmd->budget_id);
	if (b) {
		cmd->kind = b->kind;
		cmd->nr_chunks = b->nr_chunks;
		cmd->chunk_bytes = b->chunk_bytes;
		cmd->out_nr_pools = b->nr_pools;
		mutex_lock(&b->lock);
		cmd->out_free_chunks = b->nr_free;
		cmd->out_moves = b->moves;
		cmd->out_cleared_bytes = b->cleared_bytes;
		cmd->out_clear_ns = b->clear_ns;
		mutex_unlock(&b->lock);
	}
	mutex_unlock(&kvpd_budgets_lock);
	return b ? 0 : -ENODATA;
}

static int kvpd_budget_limits(struct kvpool_ctl_budget *cmd)
{
	struct kvpd_backing *bk;
	struct kvpd_budget *b;
	struct kvpd_dev *kd;
	u64 min, max;
	int ret = 0;

	if (cmd->kind || cmd->nr_chunks || cmd->chunk_bytes)
		return -EINVAL;
	kd = kvpd_pool_get(cmd->pool_id);
	if (!kd)
		return -ENODEV;
	/* @backing is fixed once the pool is in the table. */
	bk = kd->backing;
	mutex_lock(&kvpd_budgets_lock);
	b = kvpd_budget_find(cmd->budget_id);
	if (!b)
		ret = -ENODATA;
	else if (!bk || bk->budget != b)
		ret = -EINVAL;
	mutex_unlock(&kvpd_budgets_lock);
	if (ret)
		goto out;
	/* @b lives while @kd, a pool on it, does. */
	max = div64_u64(cmd->max_bytes, b->chunk_bytes);
	min = div64_u64(cmd->min_bytes, b->chunk_bytes);
	if (min * b->chunk_bytes < cmd->min_bytes)
		min++;
	if (cmd->max_bytes && max < min) {
		ret = -EINVAL;
		goto out;
	}
	if (min > b->nr_chunks) {
		ret = -ENOSPC;
		goto out;
	}
	if (max > b->nr_chunks)
		max = b->nr_chunks;
	mutex_lock(&b->lock);
	if ((u64)b->floors - bk->min_chunks + min > b->nr_chunks) {
		ret = -ENOSPC;
	} else {
		b->floors += (u32)min - bk->min_chunks;
		b->unmet -= kvpd_unmet(bk);
		bk->min_chunks = (u32)min;
		bk->max_chunks = (u32)max;
		b->unmet += kvpd_unmet(bk);
	}
	mutex_unlock(&b->lock);
	/* A lower ceiling or floor may free chunks now. */
	if (!ret) {
		mutex_lock(&kd->core.lock);
		if (!kd->dead)
			kvpd_budget_trim_locked(kd, true);
		mutex_unlock(&kd->core.lock);
	}
out:
	put_device(&kd->dev);
	return ret;
}

int kvpd_ctl_budget_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_budget *cmd = ucmd->cmd;

	cmd->out_free_chunks = 0;
	cmd->out_nr_pools = 0;
	cmd->out_moves = 0;
	cmd->out_cleared_bytes = 0;
	cmd->out_clear_ns = 0;
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	switch (cmd->op) {
	case KVPOOL_BUDGET_CREATE:
		return kvpd_budget_create(ucmd);
	case KVPOOL_BUDGET_DESTROY:
		return kvpd_budget_destroy(cmd);
	case KVPOOL_BUDGET_LIMITS:
		return kvpd_budget_limits(cmd);
	case KVPOOL_BUDGET_INFO:
		return kvpd_budget_info(cmd);
	case 0:
		return -EINVAL;
	default:
		return -EOPNOTSUPP;
	}
}

/**
 * kvpd_backing_new() - a pool's side of a budget, for CTL_CREATE
 * @cmd: the create request, KVPOOL_CREATE_BUDGET set
 * @out: gets the backing, which counts as one of the budget's pools
 *
 * Context: process context, no lock held.
 * Return: 0; -ENODATA if there is no such budget; -EINVAL if page_bytes
 * does not divide its chunks or the id space needs more slots than a
 * budget has chunks; -ENOMEM.
 */
int kvpd_backing_new(const struct kvpool_ctl_create *cmd,
		     struct kvpd_backing **out)
{
	struct kvpd_backing *bk;
	struct kvpd_budget *b;
	struct inode *inode;
	u64 ppc, slots;
	u32 s;
	int ret;

	if (!cmd->page_bytes || cmd->page_bytes > SZ_1G)
		return -EINVAL;
	inode = alloc_anon_inode(kvpd_mnt->mnt_sb);
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	mutex_lock(&kvpd_budgets_lock);
	b = kvpd_budget_find(cmd->budget_id);
	ret = -ENODATA;
	if (!b)
		goto out_unlock;
	ret = -EINVAL;
	ppc = div64_u64(b->chunk_bytes, cmd->page_bytes);
	if (!ppc || ppc * cmd->page_bytes != b->chunk_bytes)
		goto out_unlock;
	slots = div64_u64((u64)cmd->nr_pages + ppc - 1, ppc);
	if (slots > KVPOOL_BUDGET_MAX_CHUNKS)
		goto out_unlock;
	ret = -ENOMEM;
	bk = kvzalloc(struct_size(bk, slot, slots), GFP_KERNEL_ACCOUNT);
	if (!bk)
		goto out_unlock;
	b->nr_pools++;
	mutex_unlock(&kvpd_budgets_lock);

	bk->budget = b;
	bk->serial = atomic64_inc_return(&kvpd_serial);
	bk->page_bytes = cmd->page_bytes;
	bk->ppc = (u32)ppc;
	bk->nr_slots = (u32)slots;
	bk->keep_zero = cmd->flags & KVPOOL_CREATE_RESERVE_ZERO;
	bk->inode = inode;
	mutex_init(&bk->map_lock);
	for (s = 0; s < bk->nr_slots; s++)
		bk->slot[s] = KVPD_NO_CHUNK;
	*out = bk;
	return 0;

out_unlock:
	mutex_unlock(&kvpd_budgets_lock);
	iput(inode);
	return ret;
}

/**
 * kvpd_backing_attach() - make a new pool a budget pool
 * @kd: the pool, not reachable by anyone yet, its core initialised
 * @bk: from kvpd_backing_new(); @kd owns it from now on
 *
 * With a reserved page 0, slot 0 is backed now and kept for good: the
 * scheduler writes that page. Its chunk counts against the budget like
 * any, and may be had only if one is free (else -ENOSPC); one being
 * cleared is waited for.
 *
 * Context: process context, no lock held.
 * Return: 0 or -ENOSPC.
 */
int kvpd_backing_attach(struct kvpd_dev *kd, struct kvpd_backing *bk)
{
	int ret = 0;

	kd->backing = bk;
	kd->core.grow = kvpd_budget_grow;
	kd->core.headroom = kvpd_budget_headroom;
	if (!bk->keep_zero)
		return 0;
	mutex_lock(&kd->core.lock);
	if (kvpd_budget_grow(&kd->core, 1) == KVP_GROW_WAIT) {
		mutex_unlock(&kd->core.lock);
		kvpd_budget_wait(kd);
		mutex_lock(&kd->core.lock);
		kvpd_budget_grow(&kd->core, 1);
	}
	if (bk->slot[0] == KVPD_NO_CHUNK)
		ret = -ENOSPC;
	mutex_unlock(&kd->core.lock);
	return ret;
}

/**
 * kvpd_backing_free() - the pool is gone: its chunks go back
 * @bk: the backing, or NULL
 *
 * From the device's release: no file of the pool is open, so no mapping
 * of it is left. Every chunk it held returns to the budget, to be
 * cleared before another pool uses it.
 *
 * Context: process context, no pool lock held.
 */
void kvpd_backing_free(struct kvpd_backing *bk)
{
	struct kvpd_budget *b;
	u32 s;

	if (!bk)
		return;
	b = bk->budget;
	mutex_lock(&b->lock);
	for (s = 0; s < bk->nr_slots; s++) {
		if (bk->slot[s] == KVPD_NO_CHUNK)
			continue;
		kvpd_chunk_push(b, &b->dirty_head, bk->slot[s]);
		b->nr_free++;
		kvpd_held_add(b, bk, -1);
	}
	b->floors -= bk->min_chunks;
	b->unmet -= kvpd_unmet(bk);
	mutex_unlock(&b->lock);
	queue_work(kvpd_wq, &b->clear_work);
	mutex_lock(&kvpd_budgets_lock);
	b->nr_pools--;
	mutex_unlock(&kvpd_budgets_lock);
	iput(bk->inode);
	mutex_destroy(&bk->map_lock);
	kvfree(bk);
}

/* A budget pool's clients map one address space: open points them at it. */
void kvpd_backing_open(struct kvpd_dev *kd, struct file *file)
{
	if (kd->backing)
		file->f_mapping = kd->backing->inode->i_mapping;
}

static vm_fault_t kvpd_budget_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct kvp_client *c = vma->vm_file->private_data;
	struct kvpd_backing *bk = kvpd_dev_of(c->pool)->backing;
	struct kvpd_budget *b = bk->budget;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	u64 slot = div64_u64(off, b->chunk_bytes);
	vm_fault_t ret = VM_FAULT_SIGBUS;
	u32 ch, in;

	if (slot >= bk->nr_slots)
		return ret;
	in = (u32)((off - slot * b->chunk_bytes) >> PAGE_SHIFT);
	/* Against a give-back emptying the slot and then unmapping it. */
	mutex_lock(&bk->map_lock);
	ch = bk->slot[slot];
	if (ch != KVPD_NO_CHUNK)
		ret = vmf_insert_pfn(vma, vmf->address,
				     page_to_pfn(b->chunks[ch].pages[in]));
	mutex_unlock(&bk->map_lock);
	return ret;
}

static const struct vm_operations_struct kvpd_budget_vm_ops = {
	.fault = kvpd_budget_fault,
};

/**
 * kvpd_backing_mmap() - mmap() of a pool file
 * @kd: the pool
 * @vma: the new mapping
 *
 * Only budget pools' memory is the kernel's to map. Pages are mapped on
 * first touch by PFN: the budget holds them for its whole life, so no
 * mapping can outlive them, and nothing else may pin or migrate them.
 *
 * Return: 0; -ENODEV for a pool not on a budget; -EINVAL for a private
 * mapping or one past the id space.
 */
int kvpd_backing_mmap(struct kvpd_dev *kd, struct vm_area_struct *vma)
{
	struct kvpd_backing *bk = kd->backing;
	u64 total, off, len = vma->vm_end - vma->vm_start;

	if (!bk)
		return -ENODEV;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	total = (u64)bk->nr_slots * bk->budget->chunk_bytes;
	if (vma->vm_pgoff > (total >> PAGE_SHIFT))
		return -EINVAL;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	if (len > total - off)
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &kvpd_budget_vm_ops;
	return 0;
}

/* What ARENA says of a budget pool; false for any other. */
bool kvpd_backing_describe(struct kvpd_dev *kd, struct kvpool_arena *cmd)
{
	struct kvpd_backing *bk = kd->backing;

	if (!bk)
		return false;
	cmd->out_kind = KVPOOL_ARENA_HOST;
	cmd->out_set_flags = KVPOOL_ARENA_SET_BUDGET;
	cmd->out_page_bytes = bk->page_bytes;
	cmd->out_bytes = (u64)bk->nr_slots * bk->budget->chunk_bytes;
	mutex_lock(&bk->budget->lock);
	cmd->out_nr_chunks = bk->nr_held;
	mutex_unlock(&bk->budget->lock);
	return true;
}

/* sysfs: the pool's budget (-1: none) and the chunks it holds. */
void kvpd_backing_show(struct kvpd_dev *kd, int *budget, u32 *chunks)
{
	struct kvpd_backing *bk = kd->backing;

	*budget = -1;
	*chunks = 0;
	if (!bk)
		return;
	*budget = (int)bk->budget->id;
	mutex_lock(&bk->budget->lock);
	*chunks = bk->nr_held;
	mutex_unlock(&bk->budget->lock);
}

/*
 * The internal mount whose inodes give budget pools their address spaces.
 * Not owned by the module: a module reference held by it would keep rmmod
 * from ever running the exit that unmounts it.
 */
static int kvpd_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, KVPD_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type kvpd_fs_type = {
	.name = "kvpool",
	.init_fs_context = kvpd_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

int kvpd_budgets_init(void)
{
	kvpd_mnt = kern_mount(&kvpd_fs_type);
	return PTR_ERR_OR_ZERO(kvpd_mnt);
}

/* Module exit, once every pool is gone: the budgets left go too. */
void kvpd_budgets_exit(void)
{
	struct kvpd_budget *b;
	unsigned long id;

	xa_for_each(&kvpd_budgets, id, b) {
		WARN_ON_ONCE(b->nr_pools);
		xa_erase(&kvpd_budgets, id);
		kvpd_budget_free(b);
	}
	xa_destroy(&kvpd_budgets);
	kern_unmount(kvpd_mnt);
}
