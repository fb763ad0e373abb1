// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: export files, the fds KVPOOL_EXPORT returns and
 * KVPOOL_IMPORT takes, which carry one row from a client of a pool to
 * another client of it, possibly in another process.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "kvpool_drv.h"
#include "kvpool_trace.h"

static int kvpd_export_release(struct inode *inode, struct file *file)
{
	struct kvpd_export_file *x = file->private_data;
	struct kvpd_dev *kd = x->kd;

	mutex_lock(&kd->core.lock);
	if (x->exported) {
		if (!x->imported) {
			u32 before = kd->core.export_pages;

			kvp_export_drop_locked(&kd->core, x->idx);
			trace_kvpool_export_drop(&kd->core, x->idx,
						 before - kd->core.export_pages);
		}
		kd->nr_exports--;
	}
	mutex_unlock(&kd->core.lock);
	kfree(x);
	put_device(&kd->dev);	/* after the unlock: see "Lifetime" */
	return 0;
}

static const struct file_operations kvpd_export_fops = {
	.owner = THIS_MODULE,
	.release = kvpd_export_release,
};

/*
 * The fd reaches the caller only through the struct: it is written back
 * before the row leaves the client, and the fd is installed only once the
 * row is the file's (see kvpd_respond()).
 */
int kvpd_export_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpd_dev *kd = kvpd_dev_of(c->pool);
	struct kvpool_export *cmd = ucmd->cmd;
	struct kvpd_export_file *x;
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
	if (ret)
		trace_kvpool_export(c, cmd, 0, 0, ret);
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
	file = anon_inode_getfile("[kvpool-row]", &kvpd_export_fops, x, O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		put_device(&kd->dev);
		kfree(x);
		return PTR_ERR(file);
	}

	cmd->out_fd = fd;
	cmd->out_nr_pages = n;
	ret = kvpd_respond(ucmd);
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
	trace_kvpool_export(c, cmd, x->idx, n_now, ret);
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
		if (kvpd_respond(ucmd))
			pr_debug("export: page count not written back\n");
	}
	return 0;

out_drop:
	/* Holds nothing: its release only puts the device. */
	fput(file);
	put_unused_fd(fd);
	return ret;
}

int kvpd_import_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_import *cmd = ucmd->cmd;
	struct kvpd_export_file *x;
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
	if (file->f_op != &kvpd_export_fops) {
		ret = -EINVAL;
		goto out;
	}
	x = file->private_data;
	if (x->kd != kvpd_dev_of(c->pool)) {
		ret = -EXDEV;
		goto out;
	}

	mutex_lock(&c->pool->lock);
	ret = !x->exported || x->imported ? -EALREADY :
	      kvp_import_peek_locked(c, x->idx, &h, &n);
	if (ret) {
		trace_kvpool_import(c, x->idx, &h, 0, ret);
		trace_kvpool_refuse(c, KVPOOL_CMD_IMPORT, ret, 0);
	}
	mutex_unlock(&c->pool->lock);
	if (ret)
		goto out;
	cmd->out_handle = h;
	cmd->out_nr_pages = n;
	ret = kvpd_respond(ucmd);
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
	trace_kvpool_import(c, x->idx, &h, n, ret);
	trace_kvpool_refuse(c, KVPOOL_CMD_IMPORT, ret, 0);
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
