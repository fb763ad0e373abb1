// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: a pool's arena, the memory its page ids name (design.md,
 * "The arena"). The kernel holds one reference to each chunk's file and
 * hands clients new descriptors of them; it never maps the memory or
 * learns its addresses, so the core knows nothing of it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bits.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/kdev_t.h>
#include <linux/magic.h>
#include <linux/major.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>

#include "kvpool_drv.h"

#define KVPD_ARENA_MAX_PAGE_BYTES	BIT_ULL(32)

/*
 * The NVIDIA driver's character devices: /dev/nvidiaN is minor N, 254
 * is nvidia-modeset and 255 the control device, /dev/nvidiactl, whose
 * files carry CUDA exports.
 */
#define KVPD_NV_MAJOR		195
#define KVPD_NV_CTL_MINOR	255
#define KVPD_NV_GPU_MINORS	254

/*
 * Test hook, off unless a test turns it on: also take the fake CUDA
 * driver's files (selftests/lib/fakecuda), a pty master (5:2) as a
 * chunk and a FIFO as the GPU device. Read at every ARENA_SET and
 * AGENT_REPLY, so a test can set it for itself.
 */
static bool fake_cuda;
module_param(fake_cuda, bool, 0644);
MODULE_PARM_DESC(fake_cuda, "Test only: take the fake CUDA driver's files for CUDA arenas (default false; never on a GPU host)");

#define KVPD_PTMX		MKDEV(TTYAUX_MAJOR, 2)

/*
 * Every chunk file the module holds, by what names its memory
 * (kvpd_arena_chunk.key): a chunk has one owner, a pool or a retired
 * pool's quarantine. kvpd_chunks_lock protects it, the retired pools
 * (kvpd_retired) and each arena's @hashed: a lock of its own, inside
 * kvpd_pools_lock and outside every pool's, because a quarantine's check
 * (a work item that destroy cancels holding kvpd_pools_lock) ends a
 * retirement under it.
 */
DEFINE_MUTEX(kvpd_chunks_lock);
static DEFINE_HASHTABLE(kvpd_chunks, 8);

/*
 * Seals a host chunk must have, and seals it must not. F_SEAL_SEAL too:
 * every client gets a descriptor of the same file, and one that could
 * still add F_SEAL_WRITE would stop the others from mapping it writable.
 */
#define KVPD_HOST_SEALS		(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define KVPD_HOST_NO_SEALS	(F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)

/*
 * The device's release: the arena goes with its pool, out of the table
 * of chunks by then (destroy or the end of its retirement took it out).
 */
void kvpd_arena_free(struct kvpd_arena *a)
{
	u32 i;

	if (!a)
		return;
	WARN_ON_ONCE(a->hashed);
	for (i = 0; i < a->nr_chunks; i++)
		if (a->chunk[i].file)
			fput(a->chunk[i].file);
	if (a->device)
		fput(a->device);
	kfree(a);
}

static struct kvpd_arena_chunk *kvpd_chunk_find_chlocked(const void *key)
{
	struct kvpd_arena_chunk *c;

	lockdep_assert_held(&kvpd_chunks_lock);
	hash_for_each_possible(kvpd_chunks, c, node, (unsigned long)key)
		if (c->key == key)
			return c;
	return NULL;
}

/* Whether @file (or its inode, a memfd's name) is a chunk of some pool. */
bool kvpd_chunk_file_hashed(struct file *file)
{
	bool hashed;

	mutex_lock(&kvpd_chunks_lock);
	hashed = kvpd_chunk_find_chlocked(file) ||
		 kvpd_chunk_find_chlocked(file_inode(file));
	mutex_unlock(&kvpd_chunks_lock);
	return hashed;
}

static void kvpd_arena_hash_chlocked(struct kvpd_arena *a)
{
	u32 i;

	lockdep_assert_held(&kvpd_chunks_lock);
	for (i = 0; i < a->nr_chunks; i++)
		hash_add(kvpd_chunks, &a->chunk[i].node,
			 (unsigned long)a->chunk[i].key);
	a->hashed = true;
}

/* The pool's destroy, or its quarantine's end: the memory is free to reuse. */
void kvpd_arena_unhash_chlocked(struct kvpd_arena *a)
{
	u32 i;

	lockdep_assert_held(&kvpd_chunks_lock);
	if (!a || !a->hashed)
		return;
	for (i = 0; i < a->nr_chunks; i++)
		hash_del(&a->chunk[i].node);
	a->hashed = false;
}

/* What /sys/class/kvpool/retired_{pools,chunks} show. */
void kvpd_arena_retired_count(u32 *pools, u32 *chunks)
{
	struct kvpd_dev *kd;

	*pools = 0;
	*chunks = 0;
	mutex_lock(&kvpd_chunks_lock);
	list_for_each_entry(kd, &kvpd_retired, retired_link) {
		(*pools)++;
		*chunks += kd->arena ? kd->arena->nr_chunks : 0;
	}
	mutex_unlock(&kvpd_chunks_lock);
}

/*
 * A host chunk: a memfd (tmpfs: hugetlbfs memfds are not shmem files),
 * open for reading and writing, that can neither shrink nor grow (so the
 * pages past its end that a client maps can never become SIGBUS), takes
 * no more seals and may still be written. Seals are only ever added, so what is checked here
 * stays true.
 */
static int kvpd_arena_check_host(struct file *file, u64 bytes)
{
	struct inode *inode = file_inode(file);
	unsigned int seals;

	if (!IS_ENABLED(CONFIG_SHMEM) || inode->i_sb->s_magic != TMPFS_MAGIC ||
	    !S_ISREG(inode->i_mode))
		return -EINVAL;
	if ((file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE))
		return -EINVAL;
	seals = READ_ONCE(SHMEM_I(inode)->seals);
	if ((seals & KVPD_HOST_SEALS) != KVPD_HOST_SEALS ||
	    (seals & KVPD_HOST_NO_SEALS))
		return -EINVAL;
	if ((u64)i_size_read(inode) < bytes)
		return -EINVAL;
	return 0;
}

/*
 * A CUDA chunk: the descriptor cuMemExportToShareableHandle() gives is a
 * file of the NVIDIA driver's control device, 195:255, which carries the
 * export in its private data (the driver looks it up there only on that
 * minor). The driver alone knows what it holds, so the kernel checks
 * only that it is one: libkvpool checks the allocation's device and size
 * as it maps it. Anything else is refused, and with it everything that
 * would do harm held by a pool: a socket or an io_uring carrying files,
 * a tty, kvpool's own devices.
 */
int kvpd_arena_check_cuda(struct file *file)
{
	struct inode *inode = file_inode(file);

	if (!S_ISCHR(inode->i_mode))
		return -EINVAL;
	if (inode->i_rdev == MKDEV(KVPD_NV_MAJOR, KVPD_NV_CTL_MINOR))
		return 0;
	if (READ_ONCE(fake_cuda) && inode->i_rdev == KVPD_PTMX) {
		pr_warn_once("fake_cuda: taking a pty as a CUDA chunk (tests only)\n");
		return 0;
	}
	return -EINVAL;
}

/*
 * The GPU's own device node, /dev/nvidiaN: a file of it open keeps the
 * driver from tearing the GPU down (docs/gpu-agent.md).
 */
static int kvpd_arena_check_device(struct file *file)
{
	struct inode *inode = file_inode(file);

	if (S_ISCHR(inode->i_mode) && imajor(inode) == KVPD_NV_MAJOR &&
	    iminor(inode) < KVPD_NV_GPU_MINORS)
		return 0;
	if (READ_ONCE(fake_cuda) && S_ISFIFO(inode->i_mode)) {
		pr_warn_once("fake_cuda: taking a FIFO as a GPU device (tests only)\n");
		return 0;
	}
	return -EINVAL;
}

/*
 * Lays the chunks out and checks their sizes: a multiple of the page and
 * of PAGE_SIZE each, end to end, covering the pool's @nr_pages without
 * one lying wholly past them. Touches no file yet.
 */
static int kvpd_arena_layout(struct kvpd_arena *a,
			     const struct kvpool_arena_chunk *ch,
			     u32 nr_pages, u32 *error_index)
{
	u64 need = (u64)nr_pages * a->page_bytes;
	u64 off = 0;
	u32 i;

	for (i = 0; i < a->nr_chunks; i++) {
		u64 b = ch[i].bytes;

		*error_index = i;
		if (ch[i].__reserved || !b || b % a->page_bytes ||
		    !IS_ALIGNED(b, PAGE_SIZE) || off >= need)
			return -EINVAL;
		a->chunk[i].offset = off;
		a->chunk[i].bytes = b;
		if (check_add_overflow(off, b, &off))
			return -EINVAL;
	}
	*error_index = ~0U;
	if (off < need)
		return -EINVAL;
	a->bytes = off;
	return 0;
}

/*
 * Takes a reference to each chunk's file, checking it can be of @a's kind
 * and is not earlier in this arena (EINVAL). A memfd is named by its
 * inode, which two opens of it share; a CUDA export by its file, each
 * export being one.
 */
static int kvpd_arena_get_files(struct kvpd_arena *a,
				const struct kvpool_arena_chunk *ch,
				u32 *error_index)
{
	u32 i, j;
	int ret;

	for (i = 0; i < a->nr_chunks; i++) {
		struct file *file = fget(ch[i].fd);
		const void *key;

		*error_index = i;
		if (!file)
			return -EBADF;
		a->chunk[i].file = file;
		if (a->kind == KVPOOL_ARENA_HOST) {
			ret = kvpd_arena_check_host(file, a->chunk[i].bytes);
			key = file_inode(file);
		} else {
			ret = kvpd_arena_check_cuda(file);
			key = file;
		}
		if (ret)
			return ret;
		for (j = 0; j < i; j++)
			if (a->chunk[j].key == key)
				return -EINVAL;
		a->chunk[i].key = key;
	}
	*error_index = ~0U;
	return 0;
}

/* No chunk of @a may have an owner yet: EBUSY names the first that has. */
static int kvpd_arena_unowned_chlocked(const struct kvpd_arena *a,
				       u32 *error_index)
{
	u32 i;

	for (i = 0; i < a->nr_chunks; i++) {
		if (kvpd_chunk_find_chlocked(a->chunk[i].key)) {
			*error_index = i;
			return -EBUSY;
		}
	}
	return 0;
}

/*
 * Builds the arena from the caller's chunks before any pool is touched,
 * then sets it under the pool lock if the pool has none. Every failure
 * drops what was taken: nothing changes.
 */
static int kvpd_arena_set(struct kvpool_ctl_arena_set *cmd,
			  const struct kvpool_arena_chunk *ch)
{
	struct kvpd_arena *a;
	struct kvpd_dev *kd;
	int ret;

	a = kzalloc(struct_size(a, chunk, cmd->nr_chunks), GFP_KERNEL_ACCOUNT);
	if (!a)
		return -ENOMEM;
	a->kind = cmd->kind;
	a->flags = cmd->flags;
	a->page_bytes = cmd->page_bytes;
	a->nr_chunks = cmd->nr_chunks;

	kd = kvpd_pool_get(cmd->pool_id);
	if (!kd) {
		kvpd_arena_free(a);
		return -ENODEV;
	}
	/*
	 * A CUDA arena lives on the pool's GPU, which libkvpool finds by
	 * the pool's PCI address: a pool that names none cannot have one.
	 */
	if (a->kind == KVPOOL_ARENA_CUDA && !kd->gpu) {
		ret = -EINVAL;
		goto out;
	}
	/*
	 * A pool with an arena is EEXIST before its chunks are looked at,
	 * so a retry of a set that took effect is told so, not EBUSY. Two
	 * sets may both pass here: the one that sets it first wins, below.
	 */
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV : kd->arena || kd->backing ? -EEXIST : 0;
	mutex_unlock(&kd->core.lock);
	if (ret)
		goto out;
	/* The pool's geometry is fixed: no pool lock needed to read it. */
	ret = kvpd_arena_layout(a, ch, kd->core.nr_pages,
				&cmd->out_error_index);
	if (!ret)
		ret = kvpd_arena_get_files(a, ch, &cmd->out_error_index);
	if (ret)
		goto out;
	if (cmd->flags & KVPOOL_ARENA_SET_DEVICE) {
		a->device = fget(cmd->device_fd);
		if (!a->device) {
			ret = -EBADF;
			goto out;
		}
		ret = kvpd_arena_check_device(a->device);
		if (ret)
			goto out;
	}

	/* The look-ups and the insertion under one hold of the lock. */
	mutex_lock(&kvpd_chunks_lock);
	ret = kvpd_arena_unowned_chlocked(a, &cmd->out_error_index);
	if (!ret) {
		mutex_lock(&kd->core.lock);
		/*
		 * Destroy unhashes the arena it finds once @dead is set, so
		 * none may be set after that.
		 */
		ret = kd->dead ? -ENODEV : kd->arena ? -EEXIST : 0;
		if (!ret) {
			kvpd_arena_hash_chlocked(a);
			kd->arena = a;
			a = NULL;
		}
		mutex_unlock(&kd->core.lock);
	}
	mutex_unlock(&kvpd_chunks_lock);
out:
	put_device(&kd->dev);
	kvpd_arena_free(a);
	return ret;
}

int kvpd_ctl_arena_set_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_ctl_arena_set *cmd = ucmd->cmd;
	struct kvpool_arena_chunk *ch;
	int ret;

	cmd->out_error_index = ~0U;
	if (cmd->flags & ~(KVPOOL_ARENA_SET_DEVICE | KVPOOL_ARENA_SET_AGENT))
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	if (cmd->kind != KVPOOL_ARENA_HOST && cmd->kind != KVPOOL_ARENA_CUDA)
		return cmd->kind ? -EOPNOTSUPP : -EINVAL;
	/* Host memory has no device to hold nor exports to mint. */
	if (cmd->flags && cmd->kind != KVPOOL_ARENA_CUDA)
		return -EINVAL;
	if (!(cmd->flags & KVPOOL_ARENA_SET_DEVICE) && cmd->device_fd)
		return -EINVAL;
	if (!cmd->page_bytes || cmd->page_bytes > KVPD_ARENA_MAX_PAGE_BYTES ||
	    !cmd->nr_chunks || cmd->nr_chunks > KVPOOL_ARENA_MAX_CHUNKS)
		return -EINVAL;
	ret = kvpd_check_len(cmd->chunk_entry_len, sizeof(*ch));
	if (ret)
		return ret;
	ch = kvpd_read_array(cmd->chunks, cmd->nr_chunks, cmd->chunk_entry_len,
			     sizeof(*ch), &cmd->out_error_index);
	if (IS_ERR(ch))
		return PTR_ERR(ch);
	ret = kvpd_arena_set(cmd, ch);
	kvfree(ch);
	return ret;
}

/* What ARENA reports when it hands out no descriptors. */
static void kvpd_arena_describe(const struct kvpd_arena *a,
				struct kvpool_arena *cmd)
{
	cmd->out_kind = a ? a->kind : KVPOOL_ARENA_NONE;
	cmd->out_nr_chunks = a ? a->nr_chunks : 0;
	cmd->out_page_bytes = a ? a->page_bytes : 0;
	cmd->out_bytes = a ? a->bytes : 0;
	cmd->out_set_flags = a ? a->flags : 0;
	cmd->out_agent_pid = 0;
}

/*
 * Every descriptor is reserved first and the answer written back before
 * any of them is installed, so a fault or a full table leaves the caller
 * with none: installed descriptors could not be taken back. @files are
 * the agent's fresh exports, references the caller gets or that are
 * dropped; NULL for an arena whose own files are handed out.
 */
static int kvpd_arena_give_fds(struct kvpd_ucmd *ucmd,
			       const struct kvpd_arena *a, struct file **files)
{
	struct kvpool_arena *cmd = ucmd->cmd;
	struct kvpool_arena_fd *out;
	u32 i, n = 0;
	int ret;

	out = kcalloc(cmd->count, sizeof(*out), GFP_KERNEL_ACCOUNT);
	if (!out)
		return -ENOMEM;
	for (n = 0; n < cmd->count; n++) {
		const struct kvpd_arena_chunk *chunk =
			&a->chunk[cmd->first_chunk + n];

		ret = get_unused_fd_flags(O_CLOEXEC);
		if (ret < 0)
			goto out_put;
		out[n].out_fd = ret;
		out[n].out_offset = chunk->offset;
		out[n].out_bytes = chunk->bytes;
	}
	ret = -EFAULT;
	if (kvpd_write_array(cmd->fds, out, n, cmd->fd_entry_len, sizeof(*out),
			     true))
		goto out_put;
	ret = kvpd_respond(ucmd);
	if (ret)
		goto out_put;
	/* The arena lives as long as the pool, which this client holds. */
	for (i = 0; i < n; i++)
		fd_install(out[i].out_fd, files ? files[i] :
			   get_file(a->chunk[cmd->first_chunk + i].file));
	kfree(out);
	return 0;

out_put:
	for (i = 0; i < n; i++)
		put_unused_fd(out[i].out_fd);
	kfree(out);
	return ret;
}

int kvpd_arena_ioctl(struct kvpd_ucmd *ucmd)
{
	struct kvpool_arena *cmd = ucmd->cmd;
	struct kvp_pool *pool = ucmd->client->pool;
	struct kvpd_dev *kd = kvpd_dev_of(pool);
	const struct kvpd_arena *a;
	bool fds = cmd->flags & KVPOOL_ARENA_FDS;
	struct file **files;
	u32 agent_pid, i;
	int ret;

	kvpd_arena_describe(NULL, cmd);
	if (cmd->flags & ~(KVPOOL_ARENA_FDS | KVPOOL_ARENA_NOWAIT))
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!fds) {
		if (cmd->first_chunk || cmd->count || cmd->fd_entry_len ||
		    cmd->fds || (cmd->flags & KVPOOL_ARENA_NOWAIT))
			return -EINVAL;
	} else {
		ret = kvpd_check_len(cmd->fd_entry_len,
				     sizeof(struct kvpool_arena_fd));
		if (ret)
			return ret;
	}

	/* Its budget maps a budget pool's memory: there are no files. */
	if (kvpd_backing_describe(kd, cmd))
		return fds ? -EOPNOTSUPP : 0;
	/* Set once, under this lock; it cannot go while we hold the pool. */
	mutex_lock(&pool->lock);
	a = kd->arena;
	agent_pid = kvpd_agent_pid_locked(kd);
	mutex_unlock(&pool->lock);
	kvpd_arena_describe(a, cmd);
	cmd->out_agent_pid = agent_pid;
	if (!fds)
		return 0;
	if (!a)
		return -ENODATA;
	if (cmd->first_chunk >= a->nr_chunks || !cmd->count ||
	    cmd->count > a->nr_chunks - cmd->first_chunk)
		return -EINVAL;
	if (!(a->flags & KVPOOL_ARENA_SET_AGENT))
		return kvpd_arena_give_fds(ucmd, a, NULL);

	files = kcalloc(cmd->count, sizeof(*files), GFP_KERNEL_ACCOUNT);
	if (!files)
		return -ENOMEM;
	ret = kvpd_agent_fetch(kd, a, cmd->first_chunk, cmd->count,
			       cmd->flags & KVPOOL_ARENA_NOWAIT, files);
	if (!ret)
		ret = kvpd_arena_give_fds(ucmd, a, files);
	/* Given to the caller's table, or to be dropped here. */
	for (i = 0; ret && i < cmd->count; i++)
		if (files[i])
			fput(files[i]);
	kfree(files);
	return ret;
}
