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
 * still write. A pool on a budget is treated alike: the closed file's
 * mappings are gone, but a process that used it may map the same pool
 * through another file. The pool checks its quarantines from a work item, first
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
#define KVPD_SCAN_FIRST_MS	5
#define KVPD_SCAN_MAX_MS	1000
#define KVPD_USERS_MIN		4

/*
 * Whether every thread of the process @pid leads is gone: its leader a
 * zombie (or reaped) with no other thread left. Each of them ran
 * exit_files() and the deferred releases of its files before that.
 */
static bool kvpd_process_gone(struct pid *pid)
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
static u32 kvpd_users_prune(struct kvpd_users *u)
{
	u32 i, n = 0;

	for (i = 0; i < u->nr; i++) {
		if (kvpd_process_gone(u->pid[i]))
			put_pid(u->pid[i]);
		else
			u->pid[n++] = u->pid[i];
	}
	u->nr = n;
	return n;
}

/**
 * kvpd_users_fini() - drop every user of a client file, and the list
 * @u: the users, set up by kvpd_users_init()
 *
 * Context: any process context.
 */
void kvpd_users_fini(struct kvpd_users *u)
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
 * kvpd_users_init() - start a client's users with its opener
 * @u: the client file's users, zeroed
 *
 * Context: process context, the opener's; may sleep.
 * Return: 0 or -ENOMEM.
 */
int kvpd_users_init(struct kvpd_users *u)
{
	mutex_init(&u->lock);
	u->pid = kcalloc(KVPD_USERS_MIN, sizeof(*u->pid), GFP_KERNEL_ACCOUNT);
	if (!u->pid)
		return -ENOMEM;
	u->cap = KVPD_USERS_MIN;
	u->pid[0] = get_pid(task_tgid(current));
	u->nr = 1;
	WRITE_ONCE(u->last, u->pid[0]);
	return 0;
}

/**
 * kvpd_users_note() - count the calling process among a client's users
 * @u: the client file's users
 *
 * Called by kvpd_dispatch() before every pool op that passed the number and
 * privilege checks: the same process again costs one compare.
 * A new one is added, after dropping those that are gone, so the list is
 * as long as the live processes sharing the file.
 *
 * Context: process context; may sleep.
 * Return: 0, or -ENOMEM with nothing changed (the op is not run).
 */
int kvpd_users_note(struct kvpd_users *u)
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
	if (kvpd_users_prune(u) == u->cap) {
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

/* The file is gone: its users and client go with it, or its quarantine. */
static void kvpd_pool_file_free(struct kvpd_pool_file *pf)
{
	kvpd_users_fini(&pf->users);
	mutex_destroy(&pf->scratch.lock);
	kfree(pf);
}

/**
 * kvpd_pool_file_release() - the last close of a client: free or quarantine
 * @pf: the client file
 *
 * Without an arena or a budget every page goes back at once. With one,
 * the pages of the rows and slots the client still held are quarantined
 * while a process that used it lives, and @pf itself, its client dead,
 * becomes the record of that quarantine on the pool until
 * kvpd_quarantine_scan() ends it.
 *
 * Context: process context; takes the pool lock.
 */
void kvpd_pool_file_release(struct kvpd_pool_file *pf)
{
	struct kvp_pool *pool = pf->c.pool;
	struct kvpd_dev *kd = kvpd_dev_of(pool);
	struct kvpd_trace_held th = {};
	struct kvpd_lock_ns lt = {};
	/* A budget pool's memory is as much the processes' as an arena's. */
	bool mem = kd->arena || kd->backing;
	bool held = false;
	u32 n;

	/* No ioctl can run any more: a quarantine has no use for the buffer. */
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
	/*
	 * A client that held most of a big pool gives it back in steps,
	 * the lock free between them for the pool's other clients
	 * (docs/gpu-budget.md): nobody else can reach what it holds.
	 */
	while (kvp_client_reclaim_step_locked(&pf->c, mem ?
					      &pf->quarantine : NULL))
		kvpd_lock_break(pool, &lt);
	if (mem) {
		kvp_client_detach_quarantine_locked(&pf->c, &pf->quarantine);
		trace_kvpool_reclaim(pool, pf->c.id, &th, pf->quarantine.nr);
		/* No ioctl can run: the file is gone. */
		if (pf->quarantine.nr && !kvpd_users_prune(&pf->users)) {
			n = kvp_quarantine_end_locked(pool, &pf->quarantine);
			trace_kvpool_quarantine_end(pool, pf->c.id, n);
		}
		if (pf->quarantine.nr) {
			list_add_tail(&pf->quarantine_link, &kd->quarantines);
			kd->scan_delay = msecs_to_jiffies(KVPD_SCAN_FIRST_MS);
			mod_delayed_work(kvpd_wq, &kd->scan_work,
					 kd->scan_delay);
			held = true;
		}
	} else {
		kvp_client_detach_locked(&pf->c);
		trace_kvpool_reclaim(pool, pf->c.id, &th, 0);
	}
	kvpd_budget_trim_locked(kd, false);
	mutex_unlock(&pool->lock);
	if (!held)
		kvpd_pool_file_free(pf);
}

/*
 * Ends the quarantines whose processes are all gone and checks again
 * later, each time twice as late up to KVPD_SCAN_MAX_MS, while others
 * wait; a new close starts it over at KVPD_SCAN_FIRST_MS.
 */
static void kvpd_quarantine_scan(struct work_struct *work)
{
	struct kvpd_dev *kd = container_of(to_delayed_work(work),
					   struct kvpd_dev, scan_work);
	struct kvpd_pool_file *pf, *next;
	struct kvpd_lock_ns lt = {};
	LIST_HEAD(done);
	bool ended;
	u32 seq;

	mutex_lock(&kd->core.lock);
	seq = kd->core.pressure_seq;
	list_for_each_entry_safe(pf, next, &kd->quarantines, quarantine_link) {
		u32 n = 0;

		if (kvpd_users_prune(&pf->users))
			continue;
		/*
		 * In steps, as a close gives pages back. Only this check
		 * and drain, which cancels it first, take quarantines off
		 * the list, so @next stays on it across a break.
		 */
		while (pf->quarantine.nr > KVP_STEP_PAGES) {
			n += kvp_quarantine_free_locked(&kd->core,
							&pf->quarantine,
							KVP_STEP_PAGES);
			kvpd_lock_break(&kd->core, &lt);
		}
		n += kvp_quarantine_end_locked(&kd->core, &pf->quarantine);
		trace_kvpool_quarantine_end(&kd->core, pf->c.id, n);
		list_move(&pf->quarantine_link, &done);
	}
	if (!list_empty(&kd->quarantines)) {
		kd->scan_delay = min_t(unsigned long, 2 * kd->scan_delay,
				       msecs_to_jiffies(KVPD_SCAN_MAX_MS));
		queue_delayed_work(kvpd_wq, &kd->scan_work, kd->scan_delay);
	}
	/*
	 * Only a retired pool's end goes on, to the chunk table's lock:
	 * never the pool table's, which destroy holds while it cancels
	 * this check.
	 */
	ended = kd->retired && list_empty(&kd->quarantines);
	kvpd_budget_trim_locked(kd, false);
	mutex_unlock(&kd->core.lock);
	/* Pages are free again: pollers' asks may have changed. */
	if (READ_ONCE(kd->core.pressure_seq) != seq)
		wake_up_interruptible_all(&kd->wq);
	list_for_each_entry_safe(pf, next, &done, quarantine_link)
		kvpd_pool_file_free(pf);
	/* May drop the pool's last reference: @kd is not touched after. */
	if (ended)
		kvpd_retire_end(kd);
}

void kvpd_quarantines_init(struct kvpd_dev *kd)
{
	INIT_LIST_HEAD(&kd->quarantines);
	INIT_DELAYED_WORK(&kd->scan_work, kvpd_quarantine_scan);
}

/**
 * kvpd_quarantines_drain() - end every quarantine of a pool being destroyed
 * @kd: the pool, with no client left and @kd->dead set, so no new quarantine
 *
 * Its pages are nobody's once the pool is gone: the processes that may
 * still write them keep the memory mapped themselves, and no later
 * client can be given them.
 *
 * Context: process context, pool lock not held (the scan takes it).
 */
void kvpd_quarantines_drain(struct kvpd_dev *kd)
{
	struct kvpd_pool_file *pf, *next;
	LIST_HEAD(done);

	cancel_delayed_work_sync(&kd->scan_work);
	mutex_lock(&kd->core.lock);
	list_for_each_entry_safe(pf, next, &kd->quarantines, quarantine_link) {
		u32 n = kvp_quarantine_end_locked(&kd->core, &pf->quarantine);

		trace_kvpool_quarantine_end(&kd->core, pf->c.id, n);
		list_move(&pf->quarantine_link, &done);
	}
	mutex_unlock(&kd->core.lock);
	list_for_each_entry_safe(pf, next, &done, quarantine_link)
		kvpd_pool_file_free(pf);
}
