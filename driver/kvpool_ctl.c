// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: /dev/kvpool-control, the administrator's device:
 * create and destroy pools, set tenant limits and watermarks, list
 * tenants, give a pool its arena (kvpool_arena.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "kvpool_drv.h"

/*
 * The GPU a pool is created for: a PCI display controller (class 0x03:
 * VGA, 3D or other display), with a reference the caller hands on.
 */
static int kvpd_ctl_find_gpu(const struct kvpool_ctl_create *cmd,
			     struct pci_dev **gpu)
{
	struct pci_dev *pdev;

	*gpu = NULL;
	if (!(cmd->flags & KVPOOL_CREATE_GPU))
		return cmd->gpu_domain || cmd->gpu_devid ? -EINVAL : 0;
	if (cmd->gpu_devid > 0xffff)
		return -EINVAL;
	pdev = pci_get_domain_bus_and_slot(cmd->gpu_domain,
					   cmd->gpu_devid >> 8,
					   cmd->gpu_devid & 0xff);
	if (!pdev)
		return -ENXIO;
	if ((pdev->class >> 16) != PCI_BASE_CLASS_DISPLAY) {
		pci_dev_put(pdev);
		return -EINVAL;
	}
	*gpu = pdev;
	return 0;
}

/*
 * The id is reserved and written back first, outside kvpd_pools_lock (a
 * slow fault must not hold up other control ops): once the pool exists,
 * the call succeeds (see kvpd_respond()). A reserved id reads as no pool.
 */
static int kvpd_ctl_create_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_create *cmd = ucmd->cmd;
	struct kvpd_backing *bk = NULL;
	struct pci_dev *gpu;
	u32 id;
	int ret;

	if (cmd->flags & ~(KVPOOL_CREATE_RESERVE_ZERO | KVPOOL_CREATE_GPU |
			   KVPOOL_CREATE_BUDGET))
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	/* A host budget's memory is on no GPU. */
	if (cmd->flags & KVPOOL_CREATE_BUDGET
	    ? cmd->flags & KVPOOL_CREATE_GPU
	    : cmd->budget_id || cmd->page_bytes)
		return -EINVAL;
	ret = kvp_geom_check(cmd->flags & ~KVPOOL_CREATE_GPU, cmd->nr_pages,
			     cmd->page_tokens, cmd->nr_rows, cmd->row_tokens);
	if (ret)
		return ret;
	if (cmd->flags & KVPOOL_CREATE_BUDGET) {
		ret = kvpd_backing_new(cmd, &bk);
		if (ret)
			return ret;
	}
	ret = kvpd_ctl_find_gpu(cmd, &gpu);
	if (ret) {
		kvpd_backing_free(bk);
		return ret;
	}

	ret = xa_alloc(&kvpd_pools, &id, NULL, XA_LIMIT(0, KVPD_MAX_POOLS - 1),
		       GFP_KERNEL);
	if (ret) {
		pci_dev_put(gpu);
		kvpd_backing_free(bk);
		return ret == -EBUSY ? -ENOSPC : ret;	/* all 64 exist */
	}
	cmd->out_pool_id = id;
	ret = kvpd_respond(ucmd);
	if (ret) {
		pci_dev_put(gpu);
		kvpd_backing_free(bk);
	} else {
		ret = kvpd_pool_create(id, cmd->flags, cmd->nr_pages,
				       cmd->page_tokens, cmd->nr_rows,
				       cmd->row_tokens, gpu, bk);
	}
	if (ret) {
		xa_erase(&kvpd_pools, id);
		ucmd->responded = false;
		cmd->out_pool_id = 0;
	}
	return ret;
}

/*
 * Runs @fn on pool @id with its lock held, then wakes its pollers. Only
 * a reference is held while waiting for the lock (kvpd_pool_get()), so a
 * busy pool delays the control ops on it and on no other.
 */
static int kvpd_ctl_on_pool(u32 id, int (*fn)(struct kvp_pool *, void *),
			    void *arg)
{
	struct kvpd_dev *kd = kvpd_pool_get(id);
	int ret;

	if (!kd)
		return -ENODEV;
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV : fn(&kd->core, arg);
	mutex_unlock(&kd->core.lock);
	wake_up_interruptible_all(&kd->wq);
	put_device(&kd->dev);
	return ret;
}

/*
 * Whether a cgroup id still names a cgroup, for kvp_tenant_prune_locked()
 * and kvp_tenant_seen_locked(). cgroup_get_from_id() only finds cgroups
 * inside the caller's cgroup namespace: from inside another one, every id
 * counts as alive, or live tenants outside it would be dropped.
 */
bool kvpd_cgroup_alive(u64 id)
{
#ifdef CONFIG_CGROUPS
	struct cgroup *cg;

	if (cgroup_parent(current->nsproxy->cgroup_ns->root_cset->dfl_cgrp))
		return true;
	cg = cgroup_get_from_id(id);
	if (IS_ERR_OR_NULL(cg))
		return false;
	cgroup_put(cg);
#endif
	return true;
}

struct kvpd_set_arg {
	struct kvpool_ctl_tenant *cmd;
	const char *path;
};

static int kvpd_tenant_set_fn(struct kvp_pool *pool, void *arg)
{
	struct kvpd_set_arg *sa = arg;
	int ret;

	ret = kvp_tenant_set_locked(pool, sa->cmd, sa->path);
	/*
	 * Only a full table is worth a walk (a lookup per tenant): it may
	 * hold tenants of dead cgroups, and dropping them makes room.
	 */
	if (ret == -EMFILE) {
		kvp_tenant_prune_locked(pool, kvpd_cgroup_alive);
		ret = kvp_tenant_set_locked(pool, sa->cmd, sa->path);
	}
	if (!ret && !(sa->cmd->flags & KVPOOL_TENANT_REMOVE))
		kvp_tenant_seen_locked(pool, sa->cmd->tenant_id,
				       kvpd_cgroup_alive);
	return ret;
}

static int kvpd_ctl_tenant_set_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_tenant *cmd = ucmd->cmd;
	struct kvpd_set_arg sa = { .cmd = cmd };
	char *buf = NULL;
	long len;
	int ret;

	if (cmd->flags & ~(KVPOOL_TENANT_BY_ID | KVPOOL_TENANT_BY_PATH |
			   KVPOOL_TENANT_ANY_UID | KVPOOL_TENANT_REMOVE))
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	/* A path exactly with BY_PATH; an 80-byte struct has none. */
	if (!(cmd->flags & KVPOOL_TENANT_BY_PATH) != !cmd->cgroup_path)
		return -EINVAL;
	if (cmd->cgroup_path) {
		buf = kmalloc(KVPOOL_CGROUP_PATH_MAX, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		len = strncpy_from_user(buf, u64_to_user_ptr(cmd->cgroup_path),
					KVPOOL_CGROUP_PATH_MAX);
		if (len < 0) {
			ret = len;
			goto out;
		}
		if (len == KVPOOL_CGROUP_PATH_MAX) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		sa.path = buf;
	}
	ret = kvpd_ctl_on_pool(cmd->pool_id, kvpd_tenant_set_fn, &sa);
out:
	kfree(buf);
	return ret;
}

static int kvpd_wmark_fn(struct kvp_pool *pool, void *arg)
{
	struct kvpool_ctl_wmark *cmd = arg;
	int ret;

	ret = kvp_set_wmark_locked(pool, cmd->low_wmark, cmd->high_wmark);
	/* A budget pool keeps fewer free pages: it may give chunks back. */
	if (!ret)
		kvpd_budget_trim_locked(kvpd_dev_of(pool), true);
	return ret;
}

static int kvpd_ctl_set_wmark_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_wmark *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	return kvpd_ctl_on_pool(cmd->pool_id, kvpd_wmark_fn, cmd);
}

struct kvpd_list_arg {
	struct kvpool_tenant_info *info;
	u32 count;
	u32 nr;
	char *paths;
	u32 paths_len;
	u32 paths_used;
	u32 paths_need;
};

static int kvpd_tenant_list_fn(struct kvp_pool *pool, void *arg)
{
	struct kvpd_list_arg *la = arg;

	kvp_tenant_prune_locked(pool, kvpd_cgroup_alive);
	la->nr = kvp_tenant_list_locked(pool, la->info, la->count, la->paths,
					la->paths_len, &la->paths_used);
	la->paths_need = 1 + pool->path_bytes;
	return 0;
}

static int kvpd_ctl_tenant_list_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_tenant_list *cmd = ucmd->cmd;
	struct kvpd_list_arg la = { };
	int ret;

	cmd->out_nr_tenants = 0;
	cmd->out_paths_len = 0;
	if (cmd->flags)
		return -EOPNOTSUPP;
	/* No room means no buffer: a pointer without a length is a slip. */
	if (!cmd->paths != !cmd->paths_len)
		return -EINVAL;
	ret = kvpd_check_len(cmd->entry_len, sizeof(*la.info));
	if (ret)
		return ret;
	la.count = min_t(u32, cmd->count, KVP_MAX_TENANTS);
	if (la.count) {
		la.info = kvcalloc(la.count, sizeof(*la.info), GFP_KERNEL);
		if (!la.info)
			return -ENOMEM;
	}
	/* The leading empty string and every path of a full pool. */
	la.paths_len = min_t(u32, cmd->paths_len, KVP_PATH_BYTES_MAX + 1);
	if (la.paths_len) {
		la.paths = kvmalloc(la.paths_len, GFP_KERNEL);
		if (!la.paths) {
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = kvpd_ctl_on_pool(cmd->pool_id, kvpd_tenant_list_fn, &la);
	if (!ret) {
		cmd->out_nr_tenants = la.nr;
		cmd->out_paths_len = la.paths_need;
		if ((la.info &&
		     kvpd_write_array(cmd->tenants, la.info,
				      min(la.count, la.nr), cmd->entry_len,
				      sizeof(*la.info), true)) ||
		    (la.paths_used &&
		     copy_to_user(u64_to_user_ptr(cmd->paths), la.paths,
				  la.paths_used)))
			ret = -EFAULT;
	}
out:
	kvfree(la.paths);
	kvfree(la.info);
	return ret;
}

static int kvpd_ctl_destroy_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_destroy *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	return kvpd_pool_destroy(cmd->pool_id);
}

#define KVPD_CTL_OP(_name, _fn, _struct, _last)				\
	KVPD_OP(KVPOOL_CMD_CTL_CREATE, _name, _fn, _struct, _last,	\
		KVPD_OP_ADMIN)

static const struct kvpd_ioctl_op kvpd_ctl_ops[] = {
	/* ABI 1's struct ended at __reserved; ABI 2 added the GPU. */
	KVPD_CTL_OP(CTL_CREATE, kvpd_ctl_create_ioctl,
		    struct kvpool_ctl_create, __reserved),
	KVPD_CTL_OP(CTL_DESTROY, kvpd_ctl_destroy_ioctl,
		    struct kvpool_ctl_destroy, __reserved),
	KVPD_CTL_OP(CTL_TENANT_SET, kvpd_ctl_tenant_set_ioctl,
		    struct kvpool_ctl_tenant, __reserved2),
	KVPD_CTL_OP(CTL_TENANT_LIST, kvpd_ctl_tenant_list_ioctl,
		    struct kvpool_ctl_tenant_list, tenants),
	KVPD_CTL_OP(CTL_SET_WMARK, kvpd_ctl_set_wmark_ioctl,
		    struct kvpool_ctl_wmark, __reserved),
	KVPD_CTL_OP(CTL_ARENA_SET, kvpd_ctl_arena_set_ioctl,
		    struct kvpool_ctl_arena_set, __reserved),
	KVPD_CTL_OP(CTL_AGENT, kvpd_ctl_agent_ioctl,
		    struct kvpool_ctl_agent, out_fd),
	KVPD_CTL_OP(CTL_BUDGET, kvpd_ctl_budget_ioctl,
		    struct kvpool_ctl_budget, out_clear_ns),
};

static long kvpd_ctl_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	return kvpd_dispatch(NULL, NULL, kvpd_ctl_ops, ARRAY_SIZE(kvpd_ctl_ops),
			     KVPOOL_CMD_CTL_CREATE, cmd, arg);
}

static const struct file_operations kvpd_ctl_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.unlocked_ioctl = kvpd_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

struct miscdevice kvpd_ctl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kvpool-control",
	.fops = &kvpd_ctl_fops,
	.mode = 0600,
};
