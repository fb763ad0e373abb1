// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: the pool device's file operations. open() makes the
 * client (and fixes its tenant), release() gives back what it held or
 * quarantines it (kvpool_quarantine.c), poll() reports the pool's ask,
 * mmap() maps a budget pool's chunks (kvpool_budget.c); ioctl() is the
 * dispatcher's (kvpool_ioctl.c).
 */
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/kernfs.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "kvpool_drv.h"
#include "kvpool_trace.h"

static __poll_t kvpd_pool_poll(struct file *file, poll_table *wait)
{
	struct kvp_client *c = file->private_data;
	u32 ask, why;

	poll_wait(file, &kvpd_dev_of(c->pool)->wq, wait);
	kvpd_backing_poll_wait(kvpd_dev_of(c->pool), file, wait);
	mutex_lock(&c->pool->lock);
	ask = kvp_pressure_locked(c, &why);
	trace_kvpool_pressure(c, ask, why, true);
	mutex_unlock(&c->pool->lock);
	return ask ? EPOLLPRI : 0;
}

/*
 * The opener's cgroup v2 id and, in @buf, the path kvp_tenant_match()
 * walks: its cgroup's, or, when that is too long for @buf, that of its
 * nearest ancestor whose path fits. A configured path is shorter than
 * that, so no descendant of one escapes it by a long name. Returns @buf,
 * or NULL when not even the root's path could be had (match by id only).
 */
static char *kvpd_opener_cgroup(char *buf, u64 *cgid)
{
	char *path = NULL;
#ifdef CONFIG_CGROUPS
	struct cgroup *cg;
	int len;

	/* The css_set, and the cgroups in it, stay while RCU is held. */
	rcu_read_lock();
	cg = task_dfl_cgroup(current);
	*cgid = cgroup_id(cg);
	for (; cg; cg = cgroup_parent(cg)) {
		/* Older kernels give the full length, newer ones -E2BIG. */
		len = kernfs_path(cg->kn, buf, KVPOOL_CGROUP_PATH_MAX);
		if (len >= 0 && len < KVPOOL_CGROUP_PATH_MAX) {
			path = buf;
			break;
		}
	}
	rcu_read_unlock();
#else
	*cgid = 0;
#endif
	return path;
}

static int kvpd_pool_open(struct inode *inode, struct file *file)
{
	struct kvpd_dev *kd = container_of(inode->i_cdev, struct kvpd_dev,
					   cdev);
	struct kvpd_pool_file *pf;
	char *buf, *path;
	u64 cgid = 0;
	u32 uid;
	int ret;

	/*
	 * A failing init frees the module: nothing may stay open on it.
	 * Pairs with the release at the end of kvpool_init().
	 */
	if (!smp_load_acquire(&kvpd_live))
		return -ENODEV;

	/*
	 * The tenant is the opener's, fixed now: a client cannot change it
	 * by moving cgroups or passing the file on. Failing to read the path
	 * fails the open: joining another tenant instead would let a client
	 * out of its limits.
	 */
	buf = kmalloc(KVPOOL_CGROUP_PATH_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	path = kvpd_opener_cgroup(buf, &cgid);
	uid = from_kuid(&init_user_ns, current_euid());

	pf = kzalloc(sizeof(*pf), GFP_KERNEL_ACCOUNT);
	if (!pf) {
		kfree(buf);
		return -ENOMEM;
	}
	ret = kvpd_users_init(&pf->users);
	if (ret)
		goto out_free;
	mutex_init(&pf->scratch.lock);
	/* No global lock is held here: this waits for this pool only. */
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV :
	      kvp_client_attach_tenant_locked(&kd->core, &pf->c, cgid, uid,
					      path);
	/* A full tenant table may hold dead cgroups' tenants: make room. */
	if (ret == -EMFILE) {
		kvp_tenant_prune_locked(&kd->core, kvpd_cgroup_alive);
		ret = kvp_client_attach_tenant_locked(&kd->core, &pf->c, cgid,
						      uid, path);
	}
	mutex_unlock(&kd->core.lock);
	if (ret)
		goto out_users;
	kfree(buf);
	file->private_data = &pf->c;
	kvpd_backing_open(kd, file);
	return nonseekable_open(inode, file);

out_users:
	mutex_destroy(&pf->scratch.lock);
	kvpd_users_fini(&pf->users);
out_free:
	kfree(pf);
	kfree(buf);
	return ret;
}

/*
 * The last reference to the file is gone: give back all it held, at once
 * or after a quarantine. The file's cdev reference keeps the device alive
 * until after this returns; a quarantine needs none (kvpool_drv.h).
 */
static int kvpd_pool_release(struct inode *inode, struct file *file)
{
	struct kvp_client *c = file->private_data;

	kvpd_pool_file_release(container_of(c, struct kvpd_pool_file, c));
	return 0;
}

static int kvpd_pool_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kvp_client *c = file->private_data;

	return kvpd_backing_mmap(kvpd_dev_of(c->pool), vma);
}

static void kvpd_pool_show_fdinfo(struct seq_file *m, struct file *file)
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

const struct file_operations kvpd_pool_fops = {
	.owner = THIS_MODULE,
	.open = kvpd_pool_open,
	.release = kvpd_pool_release,
	.unlocked_ioctl = kvpd_pool_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.show_fdinfo = kvpd_pool_show_fdinfo,
	.poll = kvpd_pool_poll,
	.mmap = kvpd_pool_mmap,
};
