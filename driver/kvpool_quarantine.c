// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: a dead client's pages (design.md, "A dead client's
 * pages").
 *
 * On a pool with an arena, a page id is memory a GPU may be writing: a
 * client killed while its kernels run still has them in flight when its
 * file's last reference goes. So the pages of the rows and slots a client
 * still held at its last close are not freed then but held back, in a
 * quarantine (struct kvp_quarantine, the core's), until no process that
 * used the client is alive any more: the opener, and every process that
 * made an ioctl on the file. A process that has fully exited has closed
 * every file it held alone, its GPU driver's among them, and the driver
 * stops a context's work when its file goes, so nothing it launched can
 * still write. The pool checks its quarantines from a work item, first
 * soon after a close and then less and less often while a user lives;
 * polling, rather than a hook on process exit, because no interface
 * exported to modules says when a process is gone.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "kvpool_drv.h"
#include "kvpool_trace.h"

/* The first check after a close, and the longest wait between two. */
#define KVP_HOLD_FIRST_MS	5
#define KVP_HOLD_MAX_MS		1000
#define KVP_USERS_MIN		4

/*
 * Whether every thread of the process @pid leads is gone: its leader a
 * zombie (or reaped) with no other thread left. Each of them ran
 * exit_files() and the deferred releases of its files before that.
 */
static bool kvp_process_gone(struct pid *pid)
{
	struct task_struct *leader;
	bool gone;

	rcu_read_lock();
	leader = pid_task(pid, PIDTYPE_TGID);
	gone = !leader || (READ_ONCE(leader->exit_state) &&
			   thread_group_empty(leader));
	rcu_read_unlock();
	return gone;
}

/* Drops the processes of @u that are gone; returns how many are left. */
static u32 kvp_users_prune(struct kvp_users *u)
{
	u32 i, n = 0;

	for (i = 0; i < u->nr; i++) {
		if (kvp_process_gone(u->pid[i]))
			put_pid(u->pid[i]);
		else
			u->pid[n++] = u->pid[i];
	}
	u->nr = n;
	return n;
}

/**
 * kvp_users_fini() - drop every user of a client file, and the list
 * @u: the users, set up by kvp_users_init()
 *
 * Context: any process context.
 */
void kvp_users_fini(struct kvp_users *u)
{
	u32 i;

	for (i = 0; i < u->nr; i++)
		put_pid(u->pid[i]);
	kfree(u->pid);
	u->pid = NULL;
	u->nr = 0;
	u->cap = 0;
	mutex_destroy(&u->lock);
}

/**
 * kvp_users_init() - start a client's users with its opener
 * @u: the client file's users, zeroed
 *
 * Context: process context, the opener's; may sleep.
 * Return: 0 or -ENOMEM.
 */
int kvp_users_init(struct kvp_users *u)
{
	mutex_init(&u->lock);
	u->pid = kcalloc(KVP_USERS_MIN, sizeof(*u->pid), GFP_KERNEL_ACCOUNT);
	if (!u->pid)
		return -ENOMEM;
	u->cap = KVP_USERS_MIN;
	u->pid[0] = get_pid(task_tgid(current));
	u->nr = 1;
	WRITE_ONCE(u->last, u->pid[0]);
	return 0;
}

/**
 * kvp_users_note() - count the calling process among a client's users
 * @u: the client file's users
 *
 * Called by kvp_dispatch() before every pool op that passed the number and
 * privilege checks: the same process again costs one compare.
 * A new one is added, after dropping those that are gone, so the list is
 * as long as the live processes sharing the file.
 *
 * Context: process context; may sleep.
 * Return: 0, or -ENOMEM with nothing changed (the op is not run).
 */
int kvp_users_note(struct kvp_users *u)
{
	struct pid *me = task_tgid(current);
	int ret = 0;
	u32 i;

	if (likely(READ_ONCE(u->last) == me))
		return 0;
	mutex_lock(&u->lock);
	for (i = 0; i < u->nr; i++)
		if (u->pid[i] == me)
			goto found;
	/*
	 * Pruning may free the pid @last points at, and a process made
	 * after that could get its memory: no lockless reader may match it.
	 */
	WRITE_ONCE(u->last, NULL);
	if (kvp_users_prune(u) == u->cap) {
		struct pid **p = krealloc_array(u->pid, 2 * u->cap,
						sizeof(*p),
						GFP_KERNEL_ACCOUNT);

		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		u->pid = p;
		u->cap *= 2;
	}
	u->pid[u->nr++] = get_pid(me);
found:
	/* Points at a pid the list holds a reference to. */
	WRITE_ONCE(u->last, me);
out:
	mutex_unlock(&u->lock);
	return ret;
}

/* The file is gone: its users and client go with it, or with its hold. */
static void kvp_pool_file_free(struct kvp_pool_file *pf)
{
	kvp_users_fini(&pf->users);
	mutex_destroy(&pf->scratch.lock);
	kfree(pf);
}

/**
 * kvp_pool_file_release() - the last close of a client: free or hold back
 * @pf: the client file
 *
 * Without an arena every page goes back at once. With one, the pages of
 * the rows and slots the client still held are quarantined while a
 * process that used it lives, and @pf itself, its client dead, becomes
 * the record of that quarantine on the pool until kvp_hold_scan() ends
 * it.
 *
 * Context: process context; takes the pool lock.
 */
void kvp_pool_file_release(struct kvp_pool_file *pf)
{
	struct kvp_pool *pool = pf->c.pool;
	struct kvp_dev *kd = kvp_dev_of(pool);
	struct kvp_trace_held th = {};
	bool held = false;
	u32 n;

	/* No ioctl can run any more: a hold has no use for the buffer. */
	kvfree(pf->scratch.buf);
	pf->scratch.buf = NULL;
	pf->scratch.size = 0;
	mutex_lock(&pool->lock);
	if (trace_kvpool_reclaim_enabled()) {
		th.tenant = pf->c.tenant->id;
		th.rows = pf->c.nr_rows;
		th.slots = pf->c.nr_slots;
		th.pages = pf->c.nr_pages;
		th.cache_pages = pf->c.nr_cache_pages;
	}
	if (kd->arena) {
		kvp_client_detach_hold_locked(&pf->c, &pf->hold);
		trace_kvpool_reclaim(pool, pf->c.id, &th, pf->hold.nr);
		/* No ioctl can run: the file is gone. */
		if (pf->hold.nr && !kvp_users_prune(&pf->users)) {
			n = kvp_quarantine_end_locked(pool, &pf->hold);
			trace_kvpool_quarantine_end(pool, pf->c.id, n);
		}
		if (pf->hold.nr) {
			list_add_tail(&pf->hold_link, &kd->holds);
			kd->hold_delay = msecs_to_jiffies(KVP_HOLD_FIRST_MS);
			mod_delayed_work(system_wq, &kd->hold_work,
					 kd->hold_delay);
			held = true;
		}
	} else {
		kvp_client_detach_locked(&pf->c);
		trace_kvpool_reclaim(pool, pf->c.id, &th, 0);
	}
	mutex_unlock(&pool->lock);
	if (!held)
		kvp_pool_file_free(pf);
}

/*
 * Ends the quarantines whose processes are all gone and checks again
 * later, each time twice as late up to KVP_HOLD_MAX_MS, while others
 * wait; a new close starts it over at KVP_HOLD_FIRST_MS.
 */
static void kvp_hold_scan(struct work_struct *work)
{
	struct kvp_dev *kd = container_of(to_delayed_work(work),
					  struct kvp_dev, hold_work);
	struct kvp_pool_file *pf, *next;
	LIST_HEAD(done);
	u32 seq;

	mutex_lock(&kd->core.lock);
	seq = kd->core.pressure_seq;
	list_for_each_entry_safe(pf, next, &kd->holds, hold_link) {
		u32 n;

		if (kvp_users_prune(&pf->users))
			continue;
		n = kvp_quarantine_end_locked(&kd->core, &pf->hold);
		trace_kvpool_quarantine_end(&kd->core, pf->c.id, n);
		list_move(&pf->hold_link, &done);
	}
	if (!list_empty(&kd->holds)) {
		kd->hold_delay = min_t(unsigned long, 2 * kd->hold_delay,
				       msecs_to_jiffies(KVP_HOLD_MAX_MS));
		queue_delayed_work(system_wq, &kd->hold_work, kd->hold_delay);
	}
	mutex_unlock(&kd->core.lock);
	/* Pages are free again: pollers' asks may have changed. */
	if (READ_ONCE(kd->core.pressure_seq) != seq)
		wake_up_interruptible_all(&kd->wq);
	list_for_each_entry_safe(pf, next, &done, hold_link)
		kvp_pool_file_free(pf);
}

void kvp_holds_init(struct kvp_dev *kd)
{
	INIT_LIST_HEAD(&kd->holds);
	INIT_DELAYED_WORK(&kd->hold_work, kvp_hold_scan);
}

/**
 * kvp_holds_drain() - end every quarantine of a pool being destroyed
 * @kd: the pool, with no client left and @kd->dead set, so no new hold
 *
 * Its pages are nobody's once the pool is gone: the processes that may
 * still write them keep the memory mapped themselves, and no later
 * client can be given them.
 *
 * Context: process context, pool lock not held (the scan takes it).
 */
void kvp_holds_drain(struct kvp_dev *kd)
{
	struct kvp_pool_file *pf, *next;
	LIST_HEAD(done);

	cancel_delayed_work_sync(&kd->hold_work);
	mutex_lock(&kd->core.lock);
	list_for_each_entry_safe(pf, next, &kd->holds, hold_link) {
		u32 n = kvp_quarantine_end_locked(&kd->core, &pf->hold);

		trace_kvpool_quarantine_end(&kd->core, pf->c.id, n);
		list_move(&pf->hold_link, &done);
	}
	mutex_unlock(&kd->core.lock);
	list_for_each_entry_safe(pf, next, &done, hold_link)
		kvp_pool_file_free(pf);
}
