// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The arena calls of libkvpool without the module:
 *
 * - kvpool_layer_addr() and kvpool_page_addr() over a view of malloc()ed
 *   memory: in both layouts every (layer, page) slice is in the arena,
 *   where the formula of kvpool.h puts it, and no two overlap; bad
 *   arguments give NULL;
 * - kvpool_arena_plan_host(): the chunk lengths are multiples of the page
 *   and of the CPU page, cover the pool, end less than a unit past it, and
 *   none lies wholly past the pages; impossible plans are -EINVAL;
 * - kvpool_arena_map() against a stand-in for the kernel: this program
 *   defines ioctl(2), which the statically linked library calls, and
 *   answers KVPOOL_INFO and KVPOOL_ARENA on one descriptor as
 *   <linux/kvpool.h> says the kernel does, with memfds of its own. The
 *   mapping is the memfds' memory, in batches, every descriptor closed,
 *   and it outlives kvpool_close(); a bad answer leaves nothing mapped
 *   and nothing open. An mmap(2) that fails (the reservation, a chunk)
 *   or a munmap(2) has kvpool_arena_error() name the call and its errno.
 *   What the real kernel answers is the VM tests' job.
 * - kvpool_arena_create_host() over a fake sysfs (the pool's nr_pages) and
 *   a fake control device, whose KVPOOL_CTL_ARENA_SET the same stand-in
 *   checks as the header says the kernel does: sealed memfds of exactly
 *   the planned lengths, covering the pool; the chunk it refuses comes
 *   back in error_index, and no descriptor is left either way. Without
 *   the control device or the pool: -ENOENT, -ENODEV.
 * - kvpool_pool_create() against the same control device: the geometry,
 *   the flags and the GPU fields of struct kvpool_pool_params reach
 *   KVPOOL_CTL_CREATE as they were given, in the struct of the ABI the
 *   library was built for; the stand-in refuses GPU addresses as the
 *   header says the kernel does, and those errnos come back unchanged;
 *   a reserved field not 0 is refused before any ioctl.
 * - chunk budgets (ABI 4): kvpool_budget_create(), _destroy(), _limits()
 *   and _info() send the CTL_BUDGET the header asks for (size, op, the
 *   op's fields and zeros elsewhere) and hand back its answer, and only
 *   on success; kvpool_pool_create_budget() sends CTL_CREATE with
 *   KVPOOL_CREATE_BUDGET, the budget and the page size, and
 *   kvpool_pool_create() leaves those fields 0. kvpool_arena_map() of a
 *   budget pool (the stand-in's pool file a memfd, its ARENA saying
 *   KVPOOL_ARENA_SET_BUDGET) maps the pool file itself, shared, in one
 *   mmap(2), asks for no chunk files and opens no descriptor; the view
 *   holds the chunks of the answer, 0 too; a mapping the file refuses
 *   names mmap and its errno; a CUDA budget, a short one: refused.
 * - CUDA arenas, with no driver to load (a child whose $KVPOOL_LIBCUDA
 *   names no file): map and create_cuda are -ELIBACC with the text
 *   kvpool_arena_error() promises, nothing left open, nothing asked of
 *   the control device; a pool with no GPU is -ENODEV to map, -EINVAL to
 *   create. Then with the fake CUDA driver (FAKECUDA, two GPUs):
 *   create_cuda hands the stand-in exported handles (character devices)
 *   of the planned lengths, which two views map as one memory, at the
 *   granularity, the first view retaining the primary context; a chunk
 *   not on the granularity is -EINVAL, one on the other GPU -EXDEV, one
 *   the driver cannot import -EIO, each with its text and nothing left.
 *
 * The library under test is built with its sysfs root and control device
 * in FAKE_SYSFS (kvpool-fake.o).
 */
#define _GNU_SOURCE		/* memfd_create() */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dlfcn.h>
#include <cuda.h>

#include "kvpool.h"
#include "kvp_expect.h"
#include "fdcount.h"
#include "testfs.h"

#ifndef FAKECUDA
#error "build with -DFAKECUDA=... (the fake CUDA driver's libcuda.so.1)"
#endif

#ifndef FAKE_SYSFS
#error "build with -DFAKE_SYSFS=... (the KVPOOL_SYSFS_DIR of the library)"
#endif

#define CLASS		FAKE_SYSFS "/kvpool"
#define CONTROL		FAKE_SYSFS "/kvpool-control"
#define FAKE_POOL	3

/* ---- the stand-in kernel ---- */

#define FAKE_MAX_CHUNKS	40
#define CU_GRAN_BYTES	(2U << 20)	/* the fake CUDA's granularity */

static struct {
	int pool_fd;			/* the descriptor it answers on */
	uint32_t nr_pages;
	uint32_t kind;
	uint64_t page_bytes;
	uint32_t nr_chunks;
	int chunk_fd[FAKE_MAX_CHUNKS];
	uint64_t chunk_bytes[FAKE_MAX_CHUNKS];
	uint32_t bad_chunk;		/* given a wrong offset, or ~0 */
	uint64_t extra_bytes;		/* told beyond the chunks' bytes */
	unsigned int fds_calls;		/* KVPOOL_ARENA_FDS answered */
	uint32_t max_count;		/* the largest batch asked */
	int bad_request;		/* a request the header forbids */
	/* CTL_ARENA_SET on the fake control device */
	ino_t ctl_ino;			/* its inode; 0 before it exists */
	uint32_t refuse_chunk;		/* refused with EINVAL, or ~0 */
	unsigned int set_calls;
	uint32_t set_chunks;		/* chunks of the last accepted set */
	int keep_cuda;			/* become the CUDA arena it is set */
	int set_wrong;			/* a chunk not as the header wants */
	/* CTL_CREATE on the fake control device: the last request */
	unsigned int create_calls;
	struct kvpool_ctl_create create;
	/* ABI 3: KVPOOL_INFO's features beyond KVPOOL_FEAT_ARENA */
	uint64_t features;
	ino_t node_ino;			/* the pool's node, for its INFO */
	uint32_t set_flags;		/* of the arena, as ARENA reports */
	uint32_t last_set_flags;	/* of the last accepted ARENA_SET */
	int device_fd;			/* the GPU it holds up, or -1 */
	unsigned int nowait_calls;	/* ARENA_FDS with NOWAIT */
	unsigned int eagain_left;	/* NOWAIT calls to answer EAGAIN */
	int agent_err;			/* the agent's answer: errno or 0 */
	int waited;			/* an agent arena asked without NOWAIT */
	int agent_fd;			/* the agent file CTL_AGENT gave */
	/* ABI 4: the pool is on a budget; its file is then a memfd */
	int budget;
	uint64_t budget_bytes;		/* ARENA's out_bytes then */
	unsigned int budget_calls;	/* CTL_BUDGET answered */
	struct kvpool_ctl_budget ctl_budget;	/* the last one asked */
} fake = { .pool_fd = -1, .bad_chunk = ~0U, .refuse_chunk = ~0U,
	   .device_fd = -1, .agent_fd = -1 };

/* The stand-in's agent file: the requests a test queues, the replies. */
#define FAKE_MAX_REQS	4
#define FAKE_REQ_ID	100		/* the first request's id */
#define FAKE_CLIENT	77		/* the asking client's pid */

static struct {
	unsigned int nr, next;		/* queued, taken by AGENT_RECV */
	int master[FAKE_MAX_REQS];	/* the chunk file each asks for */
	int reply_fd[FAKE_MAX_REQS];	/* a dup of the export, or -1 */
	int reply_error[FAKE_MAX_REQS];
	unsigned int replies[FAKE_MAX_REQS];
	int recv_err;			/* RECV's answer for an empty queue */
	int refuse;			/* the next reply with a file gets it */
	int bad;			/* a request the header forbids */
} ag;

/* The stand-in's PCI bus: a display controller and a network card. */
#define FAKE_GPU_DEVID	0x0080		/* 0000:00:10.0, as in the VMs */
#define FAKE_NIC_DEVID	0x0008		/* 0000:00:01.0 */
#define FAKE_NEW_POOL	5
#define FAKE_BUDGET	2		/* the one budget that exists */

static uint64_t fake_bytes(void)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < fake.nr_chunks; i++)
		sum += fake.chunk_bytes[i];
	return sum;
}

static int fake_arena(struct kvpool_arena *a)
{
	struct kvpool_arena_fd *out;
	uint64_t off = 0;
	uint32_t i;

	if (a->size != sizeof(*a) || a->__reserved ||
	    (a->flags & ~(KVPOOL_ARENA_FDS | KVPOOL_ARENA_NOWAIT)) ||
	    a->flags == KVPOOL_ARENA_NOWAIT) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	a->out_kind = fake.kind;
	a->out_set_flags = fake.kind ? fake.set_flags : 0;
	a->out_agent_pid = 0;
	a->out_nr_chunks = fake.kind ? fake.nr_chunks : 0;
	a->out_page_bytes = fake.kind ? fake.page_bytes : 0;
	a->out_bytes = fake.kind ? fake_bytes() + fake.extra_bytes : 0;
	if (fake.budget) {
		a->out_set_flags = KVPOOL_ARENA_SET_BUDGET;
		a->out_bytes = fake.budget_bytes;
	}
	if (!(a->flags & KVPOOL_ARENA_FDS)) {
		if (a->first_chunk || a->count || a->fd_entry_len || a->fds)
			fake.bad_request = 1;
		return 0;
	}
	if (!fake.kind)
		return -ENODATA;
	/* A budget pool has no chunk files to give. */
	if (fake.budget) {
		fake.fds_calls++;
		return -EOPNOTSUPP;
	}
	if (a->fd_entry_len != sizeof(*out) || !a->count ||
	    a->first_chunk >= fake.nr_chunks ||
	    a->count > fake.nr_chunks - a->first_chunk) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	/* An agent arena: the agent's answer, not the kernel's files. */
	if (fake.set_flags & KVPOOL_ARENA_SET_AGENT) {
		if (!(a->flags & KVPOOL_ARENA_NOWAIT))
			fake.waited = 1;
		else
			fake.nowait_calls++;
		if ((a->flags & KVPOOL_ARENA_NOWAIT) && fake.eagain_left) {
			if (fake.eagain_left != ~0U)
				fake.eagain_left--;
			return -EAGAIN;
		}
		if (fake.agent_err)
			return -fake.agent_err;
	} else if (a->flags & KVPOOL_ARENA_NOWAIT) {
		fake.nowait_calls++;
	}
	fake.fds_calls++;
	if (a->count > fake.max_count)
		fake.max_count = a->count;
	for (i = 0; i < a->first_chunk; i++)
		off += fake.chunk_bytes[i];
	out = (struct kvpool_arena_fd *)(uintptr_t)a->fds;
	for (i = 0; i < a->count; i++) {
		uint32_t c = a->first_chunk + i;

		out[i].out_fd = fcntl(fake.chunk_fd[c], F_DUPFD_CLOEXEC, 0);
		out[i].__reserved = 0;
		out[i].out_offset = c == fake.bad_chunk ? off + 4096 : off;
		out[i].out_bytes = fake.chunk_bytes[c];
		off += fake.chunk_bytes[c];
	}
	return 0;
}

/* Chunk @i of @a as CTL_ARENA_SET sees it: 0 or the errno to refuse. */
static int fake_check_chunk(const struct kvpool_ctl_arena_set *a,
			    const struct kvpool_arena_chunk *c, uint64_t off)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	char link[64], name[128];
	int seals, fdflags;
	ssize_t len;
	struct stat st;

	if (a->kind == KVPOOL_ARENA_CUDA) {
		/* The kernel's rule: a character device, any length. */
		if (fstat(c->fd, &st))
			return -EBADF;
		if (c->__reserved || !c->bytes || c->bytes % a->page_bytes ||
		    !S_ISCHR(st.st_mode))
			return -EINVAL;
		if (!(fcntl(c->fd, F_GETFD) & FD_CLOEXEC))
			fake.set_wrong = 1;
		return 0;
	}
	seals = fcntl(c->fd, F_GET_SEALS);
	if (seals < 0)
		return errno == EBADF ? -EBADF : -EINVAL;
	if (c->__reserved || !c->bytes || c->bytes % a->page_bytes ||
	    c->bytes % ps || off >= (uint64_t)fake.nr_pages * a->page_bytes ||
	    fstat(c->fd, &st) || (uint64_t)st.st_size < c->bytes ||
	    (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
	    (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EINVAL;
	/* What the kernel does not check, but the library promises. */
	fdflags = fcntl(c->fd, F_GETFD);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", c->fd);
	len = readlink(link, name, sizeof(name) - 1);
	name[len > 0 ? len : 0] = '\0';
	if ((uint64_t)st.st_size != c->bytes || !(seals & F_SEAL_SEAL) ||
	    (seals & F_SEAL_WRITE) || !(fdflags & FD_CLOEXEC) ||
	    !strstr(name, "memfd:kvpool3-arena-"))
		fake.set_wrong = 1;
	return 0;
}

static int fake_arena_set(struct kvpool_ctl_arena_set *a)
{
	const struct kvpool_arena_chunk *c;
	uint64_t off = 0;
	uint32_t i;
	int ret;

	a->out_error_index = ~0U;
	if (a->size != sizeof(*a) || a->__reserved || a->__reserved2 ||
	    a->chunk_entry_len != sizeof(*c)) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	/* An ABI 2 kernel knows no flags; the library sends none there. */
	if (a->flags & ~(KVPOOL_ARENA_SET_DEVICE | KVPOOL_ARENA_SET_AGENT) ||
	    (a->flags && !(fake.features & KVPOOL_FEAT_GPU_AGENT))) {
		fake.bad_request = 1;
		return -EOPNOTSUPP;
	}
	if (!(a->flags & KVPOOL_ARENA_SET_DEVICE) && a->device_fd)
		fake.set_wrong = 1;
	if (a->pool_id != FAKE_POOL)
		return -ENODEV;
	if (a->kind != KVPOOL_ARENA_HOST && a->kind != KVPOOL_ARENA_CUDA)
		return -EOPNOTSUPP;
	if (a->flags && a->kind != KVPOOL_ARENA_CUDA)
		return -EINVAL;
	/* The kernel's fake_cuda rule for the device: a FIFO, read-write. */
	if (a->flags & KVPOOL_ARENA_SET_DEVICE) {
		struct stat st;

		if (fstat(a->device_fd, &st))
			return -EBADF;
		if (!S_ISFIFO(st.st_mode) ||
		    (fcntl(a->device_fd, F_GETFL) & O_ACCMODE) != O_RDWR)
			return -EINVAL;
		if (!(fcntl(a->device_fd, F_GETFD) & FD_CLOEXEC))
			fake.set_wrong = 1;
	}
	if (!a->page_bytes || a->page_bytes > (1ULL << 32) || !a->nr_chunks ||
	    a->nr_chunks > KVPOOL_ARENA_MAX_CHUNKS)
		return -EINVAL;
	c = (const struct kvpool_arena_chunk *)(uintptr_t)a->chunks;
	for (i = 0; i < a->nr_chunks; i++) {
		ret = i == fake.refuse_chunk ? -EINVAL :
		      fake_check_chunk(a, &c[i], off);
		if (ret) {
			a->out_error_index = i;
			return ret;
		}
		off += c[i].bytes;
	}
	if (off < (uint64_t)fake.nr_pages * a->page_bytes)
		return -EINVAL;
	fake.set_calls++;
	fake.set_chunks = a->nr_chunks;
	fake.last_set_flags = a->flags;
	if (a->kind == KVPOOL_ARENA_CUDA && fake.keep_cuda) {
		/* The pool's own reference to the GPU, as the kernel's. */
		if (a->flags & KVPOOL_ARENA_SET_DEVICE) {
			if (fake.device_fd >= 0)
				close(fake.device_fd);
			fake.device_fd = fcntl(a->device_fd, F_DUPFD_CLOEXEC,
					       0);
		}
		fake.set_flags = a->flags;
		fake.kind = a->kind;
		fake.page_bytes = a->page_bytes;
		fake.nr_chunks = a->nr_chunks;
		for (i = 0; i < a->nr_chunks; i++) {
			fake.chunk_fd[i] = fcntl(c[i].fd, F_DUPFD_CLOEXEC, 0);
			fake.chunk_bytes[i] = c[i].bytes;
		}
	}
	return 0;
}

/* CTL_CREATE as <linux/kvpool.h> says the kernel checks the GPU. */
static int fake_create(struct kvpool_ctl_create *c)
{
	fake.create_calls++;
	fake.create = *c;
	if (c->size != sizeof(*c)) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	if (c->flags & ~(KVPOOL_CREATE_RESERVE_ZERO | KVPOOL_CREATE_GPU |
			 KVPOOL_CREATE_BUDGET))
		return -EOPNOTSUPP;
	if (c->__reserved || c->__reserved2)
		return -EINVAL;
	/* ABI 4: the budget's fields only with its flag, never the GPU's. */
	if (!(c->flags & KVPOOL_CREATE_BUDGET)) {
		if (c->budget_id || c->page_bytes)
			return -EINVAL;
	} else if (c->flags & KVPOOL_CREATE_GPU || !c->page_bytes) {
		return -EINVAL;
	} else if (c->budget_id != FAKE_BUDGET) {
		return -ENODATA;
	}
	if (!(c->flags & KVPOOL_CREATE_GPU)) {
		if (c->gpu_domain || c->gpu_devid)
			return -EINVAL;
	} else if (c->gpu_devid > 0xffff) {
		return -EINVAL;
	} else if (c->gpu_domain ||
		   (c->gpu_devid != FAKE_GPU_DEVID &&
		    c->gpu_devid != FAKE_NIC_DEVID)) {
		return -ENXIO;
	} else if (c->gpu_devid == FAKE_NIC_DEVID) {
		return -EINVAL;		/* class 0x02: no display controller */
	}
	c->out_pool_id = FAKE_NEW_POOL;
	return 0;
}

/*
 * CTL_BUDGET as the header says: its fields per op. Budget FAKE_BUDGET
 * exists, and each op's answer is one a test can recognise.
 */
static int fake_ctl_budget(struct kvpool_ctl_budget *b)
{
	fake.budget_calls++;
	fake.ctl_budget = *b;
	if (b->size != sizeof(*b) || b->flags || b->__reserved ||
	    b->out_free_chunks || b->out_nr_pools || b->out_moves ||
	    b->out_cleared_bytes || b->out_clear_ns) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	switch (b->op) {
	case KVPOOL_BUDGET_CREATE:
		if (b->budget_id || b->pool_id || b->min_bytes ||
		    b->max_bytes)
			fake.bad_request = 1;
		if (b->kind == KVPOOL_ARENA_CUDA)
			return -EOPNOTSUPP;
		if (b->kind != KVPOOL_ARENA_HOST || !b->nr_chunks ||
		    b->nr_chunks > KVPOOL_BUDGET_MAX_CHUNKS ||
		    !b->chunk_bytes || b->chunk_bytes % 4096 ||
		    b->chunk_bytes > (1ULL << 30))
			return -EINVAL;
		b->budget_id = FAKE_BUDGET;
		return 0;
	case KVPOOL_BUDGET_DESTROY:
	case KVPOOL_BUDGET_LIMITS:
	case KVPOOL_BUDGET_INFO:
		if (b->kind || b->nr_chunks || b->chunk_bytes ||
		    (b->op != KVPOOL_BUDGET_LIMITS &&
		     (b->pool_id || b->min_bytes || b->max_bytes)))
			fake.bad_request = 1;
		if (b->budget_id != FAKE_BUDGET)
			return -ENODATA;
		if (b->op == KVPOOL_BUDGET_LIMITS && b->pool_id != FAKE_POOL)
			return -ENODEV;
		if (b->op == KVPOOL_BUDGET_LIMITS && b->max_bytes &&
		    b->max_bytes < b->min_bytes)
			return -EINVAL;
		if (b->op == KVPOOL_BUDGET_DESTROY && fake.budget)
			return -EBUSY;
		if (b->op == KVPOOL_BUDGET_INFO) {
			b->kind = KVPOOL_ARENA_HOST;
			b->nr_chunks = 8;
			b->chunk_bytes = 2U << 20;
			b->out_free_chunks = 5;
			b->out_nr_pools = 2;
			b->out_moves = 11;
			b->out_cleared_bytes = 11ULL << 21;
			b->out_clear_ns = 123456789;
		}
		return 0;
	}
	return b->op ? -EOPNOTSUPP : -EINVAL;
}

/* Whether @fd is the fake control device. */
static int is_control(int fd)
{
	struct stat st;

	return fake.ctl_ino && !fstat(fd, &st) && st.st_ino == fake.ctl_ino;
}

/* Whether @fd is the fake node of pool FAKE_POOL (FAKE_SYSFS/kvpool3). */
static int is_pool_node(int fd)
{
	struct stat st;

	return fake.node_ino && !fstat(fd, &st) && st.st_ino == fake.node_ino;
}

/* AGENT_RECV and AGENT_REPLY on the agent file, as the header says. */
static int fake_agent(unsigned long request, void *arg)
{
	struct kvpool_agent_request *rq = arg;
	struct kvpool_agent_reply *rp = arg;
	unsigned int i;
	struct stat st;
	int ret;

	if (request == KVPOOL_AGENT_RECV) {
		if (rq->size != sizeof(*rq) || rq->flags)
			ag.bad = 1;
		if (ag.next == ag.nr)
			return ag.recv_err ? -ag.recv_err : -EAGAIN;
		i = ag.next++;
		rq->out_id = FAKE_REQ_ID + i;
		rq->out_pool_id = FAKE_POOL;
		rq->out_chunk = i;
		rq->out_fd = fcntl(ag.master[i], F_DUPFD_CLOEXEC, 0);
		rq->out_client_pid = FAKE_CLIENT;
		rq->out_bytes = CU_GRAN_BYTES;
		return 0;
	}
	if (request != KVPOOL_AGENT_REPLY)
		return -ENOTTY;
	if (rp->size != sizeof(*rp) || rp->flags ||
	    rp->id < FAKE_REQ_ID || rp->id >= FAKE_REQ_ID + ag.next ||
	    rp->error < 0 || rp->error > 4095 || (rp->error && rp->fd)) {
		ag.bad = 1;
		return -EINVAL;
	}
	i = (unsigned int)(rp->id - FAKE_REQ_ID);
	ag.replies[i]++;
	if (rp->error) {
		ag.reply_error[i] = rp->error;
		return 0;
	}
	if (ag.refuse) {
		ret = -ag.refuse;
		ag.refuse = 0;
		return ret;
	}
	/* Under fake_cuda the kernel takes a pty master: a char device. */
	if (fstat(rp->fd, &st) || !S_ISCHR(st.st_mode))
		return -EINVAL;
	ag.reply_fd[i] = fcntl(rp->fd, F_DUPFD_CLOEXEC, 0);
	return 0;
}

/* CTL_AGENT: the agent file is a /dev/null the stand-in knows. */
static int fake_ctl_agent(struct kvpool_ctl_agent *a)
{
	if (a->size != sizeof(*a) || a->flags) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	if (a->pool_id != FAKE_POOL)
		return -ENODEV;
	if (fake.agent_fd >= 0)
		return -EBUSY;
	fake.agent_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	a->out_fd = fake.agent_fd;
	return a->out_fd < 0 ? -errno : 0;
}

/* Every ioctl(2) of the library comes here; others go to the kernel. */
int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd >= 0 && is_control(fd)) {
		if (request == KVPOOL_CTL_ARENA_SET)
			ret = fake_arena_set(arg);
		else if (request == KVPOOL_CTL_CREATE)
			ret = fake_create(arg);
		else if (request == KVPOOL_CTL_AGENT)
			ret = fake_ctl_agent(arg);
		else if (request == KVPOOL_CTL_BUDGET)
			ret = fake_ctl_budget(arg);
		else
			ret = -ENOTTY;
		goto out;
	}
	if (fd >= 0 && fd == fake.agent_fd) {
		ret = fake_agent(request, arg);
		goto out;
	}
	if ((fd != fake.pool_fd || fd < 0) && !(fd >= 0 && is_pool_node(fd)))
		return (int)syscall(SYS_ioctl, fd, request, arg);

	if (request == KVPOOL_INFO) {
		struct kvpool_info *in = arg;

		in->out_abi_version = KVPOOL_ABI_VERSION;
		in->out_features = KVPOOL_FEAT_ARENA | fake.features;
		in->out_pool_id = FAKE_POOL;
		in->out_nr_pages = fake.nr_pages;
		in->out_max_batch = 64;
		ret = 0;
	} else if (request == KVPOOL_ARENA) {
		ret = fake_arena(arg);
	} else {
		ret = -ENOTTY;
	}
out:
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

/* An arena of @n chunks of @pages pages each (the last @last pages). */
static void fake_set(uint32_t kind, uint64_t page_bytes, uint32_t n,
		     uint32_t pages, uint32_t last)
{
	uint32_t i;

	fake.kind = kind;
	fake.page_bytes = page_bytes;
	fake.nr_chunks = n;
	fake.bad_chunk = ~0U;
	fake.fds_calls = 0;
	fake.max_count = 0;
	for (i = 0; i < n; i++) {
		char name[32];
		uint32_t p = i + 1 == n ? last : pages;

		snprintf(name, sizeof(name), "kvpool-test-%u", i);
		fake.chunk_fd[i] = memfd_create(name, MFD_CLOEXEC);
		fake.chunk_bytes[i] = p * page_bytes;
		if (fake.chunk_fd[i] < 0 ||
		    ftruncate(fake.chunk_fd[i], (off_t)fake.chunk_bytes[i]))
			kvp_expect_die("memfd");
	}
}

static void fake_clear(void)
{
	uint32_t i;

	for (i = 0; i < fake.nr_chunks; i++)
		close(fake.chunk_fd[i]);
	fake.nr_chunks = 0;
	fake.kind = KVPOOL_ARENA_NONE;
	fake.set_flags = 0;
	if (fake.device_fd >= 0)
		close(fake.device_fd);
	fake.device_fd = -1;
}

/* ---- helpers ---- */

/* Whether /proc/self/maps has a line naming @what. */
static int mapped(const char *what)
{
	char line[512];
	int found = 0;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		kvp_expect_die("/proc/self/maps");
	while (fgets(line, sizeof(line), f))
		if (strstr(line, what))
			found = 1;
	fclose(f);
	return found;
}

/*
 * Whether kvpool_arena_error() says @what failed, in system call @call,
 * with strerror()'s words for @err.
 */
static int blames(const char *what, const char *call, int err)
{
	const char *text = kvpool_arena_error();
	char want[128];

	snprintf(want, sizeof(want), "%s: %s", call, strerror(err));
	return !strncmp(text, what, strlen(what)) && strstr(text, want);
}

static int all_zero(const void *p, size_t len)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i])
			return 0;
	return 1;
}

/* ---- layouts ---- */

/*
 * Every (layer, page) slice of @v in @layout: where the formula says, in
 * the arena, and each byte of the arena in at most one slice.
 */
static void check_layout(const struct kvpool_arena_view *v, uint32_t layers,
			 enum kvpool_layout layout)
{
	uint64_t slice = v->page_bytes / layers;
	uint64_t total = v->bytes / v->page_bytes;
	unsigned char *seen = calloc(1, (size_t)v->bytes);
	uint32_t l, p;
	int overlap = 0, outside = 0, formula = 0;

	if (!seen)
		kvp_expect_die("calloc");
	for (l = 0; l < layers; l++) {
		for (p = 0; p < v->nr_pages; p++) {
			char *a = kvpool_layer_addr(v, layers, layout, l, p);
			uint64_t off = (uint64_t)(a - (char *)v->base), want;
			uint64_t b;

			want = layout == KVPOOL_LAYOUT_PAGE_MAJOR ?
			       p * v->page_bytes + l * slice :
			       l * slice * total + p * slice;
			if (!a || off != want)
				formula++;
			if (!a || off + slice > v->bytes) {
				outside++;
				continue;
			}
			for (b = off; b < off + slice; b++)
				if (seen[b]++)
					overlap++;
		}
	}
	EXPECT_EQ(0, formula) TH_LOG("layout %d, %u layers: not the formula",
				     layout, layers);
	EXPECT_EQ(0, outside) TH_LOG("layout %d, %u layers: outside",
				     layout, layers);
	EXPECT_EQ(0, overlap) TH_LOG("layout %d, %u layers: overlap",
				     layout, layers);
	free(seen);
}

static void test_layouts(void)
{
	struct kvpool_arena_view v = { 0 };
	static const uint32_t layers[] = { 1, 2, 3, 8, 12, 96 };
	size_t i;

	/* 37 page ids, and 3 pages more that no id names. */
	v.page_bytes = 96 * 16;
	v.nr_pages = 37;
	v.bytes = 40 * v.page_bytes;
	v.base = malloc((size_t)v.bytes);
	v.kind = KVPOOL_ARENA_HOST;
	if (!v.base)
		kvp_expect_die("malloc");

	for (i = 0; i < ARRAY_SIZE(layers); i++) {
		check_layout(&v, layers[i], KVPOOL_LAYOUT_PAGE_MAJOR);
		check_layout(&v, layers[i], KVPOOL_LAYOUT_LAYER_MAJOR);
	}

	/* One layer: both layouts are the arena's own, page_addr's. */
	EXPECT_EQ(kvpool_page_addr(&v, 5),
		  kvpool_layer_addr(&v, 1, KVPOOL_LAYOUT_LAYER_MAJOR, 0, 5));
	EXPECT_EQ((char *)v.base + 36 * v.page_bytes,
		  (char *)kvpool_page_addr(&v, 36));
	/* Layer-major strides over every page of the arena, named or not. */
	EXPECT_EQ((char *)v.base + 40 * 16,
		  (char *)kvpool_layer_addr(&v, 96, KVPOOL_LAYOUT_LAYER_MAJOR,
					    1, 0));

	/* Out of range, or a split that does not divide: NULL. */
	EXPECT_FALSE(kvpool_page_addr(&v, 37)) TH_LOG("page past nr_pages");
	EXPECT_FALSE(kvpool_layer_addr(&v, 8, KVPOOL_LAYOUT_PAGE_MAJOR, 8, 0))
		TH_LOG("layer past nr_layers");
	EXPECT_FALSE(kvpool_layer_addr(&v, 8, KVPOOL_LAYOUT_LAYER_MAJOR, 0,
				       37)) TH_LOG("page past nr_pages");
	EXPECT_FALSE(kvpool_layer_addr(&v, 0, KVPOOL_LAYOUT_PAGE_MAJOR, 0, 0))
		TH_LOG("0 layers");
	EXPECT_FALSE(kvpool_layer_addr(&v, 7, KVPOOL_LAYOUT_PAGE_MAJOR, 0, 0))
		TH_LOG("7 layers of 1536 bytes");
	EXPECT_FALSE(kvpool_layer_addr(&v, 2, (enum kvpool_layout)2, 0, 0))
		TH_LOG("unknown layout");

	free(v.base);
	/* A zeroed view: nothing mapped, no address, unmap does nothing. */
	memset(&v, 0, sizeof(v));
	EXPECT_FALSE(kvpool_page_addr(&v, 0));
	EXPECT_FALSE(kvpool_layer_addr(&v, 1, KVPOOL_LAYOUT_PAGE_MAJOR, 0, 0));
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
}

/* ---- plans ---- */

static void check_plan(uint32_t nr_pages, uint64_t page_bytes, uint32_t n)
{
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS], sum = 0, need, unit;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), g = page_bytes, b = ps;
	uint32_t i;
	int ret;

	while (b) {
		uint64_t t = g % b;

		g = b;
		b = t;
	}
	unit = page_bytes / g * ps;
	need = (uint64_t)nr_pages * page_bytes;
	ret = kvpool_arena_plan_host(nr_pages, page_bytes, n, bytes);
	EXPECT_EQ(0, ret) TH_LOG("plan %u x %llu in %u", nr_pages,
				 (unsigned long long)page_bytes, n);
	if (ret)
		return;
	for (i = 0; i < n; i++) {
		EXPECT_TRUE(bytes[i] && !(bytes[i] % page_bytes) &&
			    !(bytes[i] % ps))
			TH_LOG("plan %u x %llu in %u: chunk %u is %llu",
			       nr_pages, (unsigned long long)page_bytes, n, i,
			       (unsigned long long)bytes[i]);
		/* The last takes the rest; the others are alike. */
		if (i + 1 < n)
			EXPECT_EQ(bytes[0], bytes[i]);
		EXPECT_LT(sum, need) TH_LOG("chunk %u lies past the pages", i);
		sum += bytes[i];
	}
	EXPECT_LE(need, sum) TH_LOG("plan does not cover the pages");
	EXPECT_LT(sum - need, unit) TH_LOG("plan a unit too long");
}

static void test_plans(void)
{
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS];
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	check_plan(1, 1, 1);
	check_plan(100, ps, 1);
	check_plan(100, ps, 3);
	check_plan(100, ps, 100);
	check_plan(400000, 2 * 1024 * 1024, 7);
	check_plan(400000, 2 * 1024 * 1024, KVPOOL_ARENA_MAX_CHUNKS);
	check_plan(3000, 1000, 5);		/* lcm(1000, 4096) = 512000 */
	check_plan(10, ps / 4, 3);		/* 4 pages a unit: 12 pages */
	check_plan(1u << 27, 1ULL << 32, 256);	/* the largest there is */

	/* 10 quarter pages are 3 units: a 4th chunk would be past them. */
	EXPECT_EQ(-EINVAL, kvpool_arena_plan_host(10, ps / 4, 4, bytes));
	EXPECT_EQ(-EINVAL, kvpool_arena_plan_host(0, ps, 1, bytes));
	EXPECT_EQ(-EINVAL, kvpool_arena_plan_host(8, 0, 1, bytes));
	EXPECT_EQ(-EINVAL, kvpool_arena_plan_host(8, (1ULL << 32) + 1, 1,
						  bytes));
	EXPECT_EQ(-EINVAL, kvpool_arena_plan_host(8, ps, 0, bytes));
	EXPECT_EQ(-EINVAL, kvpool_arena_plan_host(1000, ps,
						  KVPOOL_ARENA_MAX_CHUNKS + 1,
						  bytes));
}

/* ---- map ---- */

static void test_map(void)
{
	struct kvpool_arena_view v;
	struct kvpool_arena a;
	struct kvpool *kp;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	char buf[8], path[64];
	int fds, i, ro;

	/* The pool's pages, as KVPOOL_INFO tells them at open. */
	fake.nr_pages = 3 * (FAKE_MAX_CHUNKS - 1) + 4;
	fake.pool_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fake.pool_fd < 0)
		kvp_expect_die("/dev/null");
	EXPECT_EQ(0, kvpool_open_fd(fake.pool_fd, &kp)) TH_LOG("open_fd");

	/* No arena: info says none, map is -ENODATA and zeroes the view. */
	memset(&a, 0xff, sizeof(a));
	EXPECT_EQ(0, kvpool_arena_info(kp, &a));
	EXPECT_EQ(KVPOOL_ARENA_NONE, a.out_kind);
	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(-ENODATA, kvpool_arena_map(kp, &v));
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("view not zeroed");

	/* 40 chunks of 3 pages, the last of 5: more than one batch. */
	fake_set(KVPOOL_ARENA_HOST, ps, FAKE_MAX_CHUNKS, 3, 5);
	fds = count_fds();
	EXPECT_EQ(0, kvpool_arena_info(kp, &a));
	EXPECT_TRUE(a.out_kind == KVPOOL_ARENA_HOST &&
		    a.out_nr_chunks == FAKE_MAX_CHUNKS &&
		    a.out_page_bytes == ps && a.out_bytes == fake_bytes())
		TH_LOG("arena_info");
	EXPECT_EQ(0, kvpool_arena_map(kp, &v)) TH_LOG("map");
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");
	EXPECT_LT(1, fake.fds_calls) TH_LOG("not in batches");
	EXPECT_GE(16, fake.max_count) TH_LOG("batch of %u", fake.max_count);
	EXPECT_EQ(fds, count_fds()) TH_LOG("map left descriptors open");
	EXPECT_TRUE(v.base && v.bytes == fake_bytes() && v.page_bytes == ps &&
		    v.kind == KVPOOL_ARENA_HOST &&
		    v.nr_pages == fake.nr_pages &&
		    v.nr_chunks == FAKE_MAX_CHUNKS) TH_LOG("view");
	EXPECT_TRUE(all_zero(v.__resv, sizeof(v.__resv)));

	/*
	 * Page 3 * 7 + 1 is the 2nd page of chunk 7, page 3 * 39 + 3 the
	 * last page id, in the 4th page of the last chunk: written through
	 * the view, they are the chunk files' bytes, and the other way
	 * round. The chunk's 5th page has no id.
	 */
	if (v.base) {
		memcpy(kvpool_page_addr(&v, 22), "chunk7", 7);
		memcpy(kvpool_page_addr(&v, 120), "last!", 6);
		EXPECT_EQ(7, pread(fake.chunk_fd[7], buf, 7, (off_t)ps));
		EXPECT_EQ(0, strcmp(buf, "chunk7"));
		EXPECT_EQ(6, pread(fake.chunk_fd[39], buf, 6, (off_t)(3 * ps)));
		EXPECT_EQ(0, strcmp(buf, "last!"));
		EXPECT_FALSE(kvpool_page_addr(&v, 121));
		EXPECT_EQ(3, pwrite(fake.chunk_fd[0], "abc", 3, 0));
		EXPECT_EQ(0, memcmp(kvpool_page_addr(&v, 0), "abc", 3));
	}

	/* The mapping is not the client's: it stays after kvpool_close(). */
	kvpool_close(kp);
	if (v.base)
		EXPECT_EQ(0, strcmp(kvpool_page_addr(&v, 22), "chunk7"));
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("unmap: view not zeroed");
	EXPECT_FALSE(mapped("kvpool-test-")) TH_LOG("unmap left chunks");
	fake_clear();

	/* A chunk where it does not belong: -EIO, nothing left behind. */
	fake.pool_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fake.pool_fd < 0 || kvpool_open_fd(fake.pool_fd, &kp))
		kvp_expect_die("open_fd");
	fake_set(KVPOOL_ARENA_HOST, ps, FAKE_MAX_CHUNKS, 3, 5);
	fds = count_fds();
	for (i = 0; i < 2; i++) {
		fake.bad_chunk = i ? 20 : 0;
		memset(&v, 0xff, sizeof(v));
		EXPECT_EQ(-EIO, kvpool_arena_map(kp, &v))
			TH_LOG("chunk %u misplaced", fake.bad_chunk);
		EXPECT_TRUE(all_zero(&v, sizeof(v)));
		EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
		EXPECT_FALSE(mapped("kvpool-test-")) TH_LOG("chunks left");
	}
	fake_clear();

	/*
	 * mmap(2) failing: the text says which mmap and mmap's errno, not
	 * kvpool_strerror()'s words for the kernel's, and nothing is left.
	 * An arena larger than any address space (2^60 bytes) cannot be
	 * reserved; a chunk whose descriptor is read-only cannot be mapped
	 * writable (chunk 17, in the second batch). A base no page starts
	 * at cannot be unmapped, and the view stays as it was.
	 */
	fake_set(KVPOOL_ARENA_HOST, ps, FAKE_MAX_CHUNKS, 3, 5);
	fds = count_fds();
	for (i = 0; i < 2; i++) {
		if (!i) {
			fake.extra_bytes = 1ULL << 60;
		} else {
			snprintf(path, sizeof(path), "/proc/self/fd/%d",
				 fake.chunk_fd[17]);
			ro = open(path, O_RDONLY | O_CLOEXEC);
			if (ro < 0)
				kvp_expect_die(path);
			close(fake.chunk_fd[17]);
			fake.chunk_fd[17] = ro;
		}
		memset(&v, 0xff, sizeof(v));
		EXPECT_EQ(i ? -EACCES : -ENOMEM, kvpool_arena_map(kp, &v));
		EXPECT_TRUE(all_zero(&v, sizeof(v)));
		EXPECT_TRUE(blames(i ? "mapping chunk 17 " : "reserving ",
				   "mmap", i ? EACCES : ENOMEM))
			TH_LOG("'%s'", kvpool_arena_error());
		EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
		EXPECT_FALSE(mapped("kvpool-test-")) TH_LOG("chunks left");
		fake.extra_bytes = 0;
	}
	fake_clear();
	v = (struct kvpool_arena_view){
		.base = (char *)&fake + 1, .bytes = ps, .page_bytes = ps,
		.kind = KVPOOL_ARENA_HOST, .nr_pages = 1, .nr_chunks = 1,
	};
	EXPECT_EQ(-EINVAL, kvpool_arena_unmap(&v)) TH_LOG("unaligned base");
	EXPECT_TRUE(blames("unmapping ", "munmap", EINVAL))
		TH_LOG("unmap: '%s'", kvpool_arena_error());
	EXPECT_TRUE(v.base == (char *)&fake + 1 && v.bytes == ps)
		TH_LOG("unmap changed the view");

	/* Fewer bytes than the pool has pages; a kind it cannot map. */
	fake_set(KVPOOL_ARENA_HOST, ps, 2, 3, 3);
	fds = count_fds();
	EXPECT_EQ(-EIO, kvpool_arena_map(kp, &v)) TH_LOG("short arena");
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	fake_clear();
	fake_set(7, ps, 2, 3, 3);
	fds = count_fds();
	EXPECT_EQ(-EOPNOTSUPP, kvpool_arena_map(kp, &v)) TH_LOG("kind 7");
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	fake_clear();
	kvpool_close(kp);
	fake.pool_fd = -1;
}

/* ---- control ---- */

/* Pool FAKE_POOL of @nr_pages pages in the fake sysfs. */
static void make_fake_pool(uint32_t nr_pages)
{
	static const char *const names[] = {
		"page_tokens", "nr_rows", "row_tokens", "create_flags",
	};
	const char *dir = CLASS "/kvpool3";
	size_t i;

	mkdir_p(FAKE_SYSFS);
	mkdir_p(CLASS);
	mkdir_p(dir);
	put_u32(dir, "pool_id", FAKE_POOL);
	put_u32(dir, "nr_pages", nr_pages);
	for (i = 0; i < ARRAY_SIZE(names); i++)
		put_u32(dir, names[i], 16);
	fake.nr_pages = nr_pages;
}

static void test_control(void)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	struct kvpool_arena_chunk c[2];
	uint32_t idx = 7;
	struct stat st;
	int fds;

	/* No module: no sysfs, no control device. */
	rm_rf(FAKE_SYSFS);
	fds = count_fds();
	c[0] = (struct kvpool_arena_chunk){ .fd = 0, .bytes = ps };
	EXPECT_EQ(-ENOENT, kvpool_arena_set(FAKE_POOL, KVPOOL_ARENA_HOST, ps,
					    c, 1, &idx))
		TH_LOG("no control device");
	EXPECT_EQ(KVPOOL_NO_INDEX, idx) TH_LOG("a chunk blamed");
	idx = 7;
	EXPECT_EQ(-ENODEV, kvpool_arena_create_host(FAKE_POOL, ps, 1, &idx))
		TH_LOG("no sysfs");
	EXPECT_EQ(KVPOOL_NO_INDEX, idx) TH_LOG("create: a chunk blamed");

	/* A pool of 100 pages, and the control device. */
	make_fake_pool(100);
	put(FAKE_SYSFS, "kvpool-control", "");
	if (stat(CONTROL, &st))
		kvp_expect_die(CONTROL);
	fake.ctl_ino = st.st_ino;

	EXPECT_EQ(0, kvpool_arena_create_host(FAKE_POOL, ps, 3, &idx))
		TH_LOG("create_host");
	EXPECT_EQ(KVPOOL_NO_INDEX, idx);
	EXPECT_TRUE(fake.set_calls == 1 && fake.set_chunks == 3)
		TH_LOG("set %u times, %u chunks", fake.set_calls,
		       fake.set_chunks);
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");
	EXPECT_EQ(0, fake.set_wrong)
		TH_LOG("a chunk not an exact, sealed, named, CLOEXEC memfd");
	EXPECT_EQ(fds, count_fds()) TH_LOG("create_host left descriptors");

	/* Page and CPU page apart: the lcm; a quarter page a page. */
	EXPECT_EQ(0, kvpool_arena_create_host(FAKE_POOL, ps / 4, 2, &idx));
	EXPECT_EQ(0, kvpool_arena_create_host(FAKE_POOL, 3 * ps, 7, &idx));
	EXPECT_EQ(0, fake.set_wrong);

	/* The chunk the kernel refuses is the one blamed. */
	fake.refuse_chunk = 2;
	EXPECT_EQ(-EINVAL, kvpool_arena_create_host(FAKE_POOL, ps, 4, &idx));
	EXPECT_EQ(2, idx) TH_LOG("refused chunk");
	fake.refuse_chunk = ~0U;
	EXPECT_EQ(fds, count_fds()) TH_LOG("a refused create left descriptors");

	/* A chunk that is no file: EBADF, blamed; no chunks: no index. */
	c[0] = (struct kvpool_arena_chunk){ .fd = -1, .bytes = 50 * ps };
	c[1] = (struct kvpool_arena_chunk){ .fd = -1, .bytes = 50 * ps };
	c[0].fd = memfd_create("kvpool3-arena-0", MFD_CLOEXEC |
			       MFD_ALLOW_SEALING);
	if (c[0].fd < 0 || ftruncate(c[0].fd, (off_t)c[0].bytes) ||
	    fcntl(c[0].fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		kvp_expect_die("memfd");
	EXPECT_EQ(-EBADF, kvpool_arena_set(FAKE_POOL, KVPOOL_ARENA_HOST, ps, c,
					   2, &idx));
	EXPECT_EQ(1, idx) TH_LOG("chunk without a file");
	EXPECT_EQ(-EINVAL, kvpool_arena_set(FAKE_POOL, KVPOOL_ARENA_HOST, ps, c,
					    0, &idx));
	EXPECT_EQ(KVPOOL_NO_INDEX, idx) TH_LOG("no chunks");
	EXPECT_EQ(-EOPNOTSUPP, kvpool_arena_set(FAKE_POOL, 9, ps, c, 2, &idx));
	EXPECT_EQ(KVPOOL_NO_INDEX, idx) TH_LOG("unknown kind");
	close(c[0].fd);

	/* Refused before any memfd: a plan that cannot be, no such pool. */
	fake.set_calls = 0;
	EXPECT_EQ(-EINVAL, kvpool_arena_create_host(FAKE_POOL, 0, 1, &idx));
	EXPECT_EQ(-EINVAL, kvpool_arena_create_host(FAKE_POOL, ps, 101, &idx));
	EXPECT_EQ(-ENODEV, kvpool_arena_create_host(FAKE_POOL + 1, ps, 1,
						    &idx));
	EXPECT_EQ(0, fake.set_calls) TH_LOG("set called anyway");
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");

	fake.ctl_ino = 0;
	rm_rf(FAKE_SYSFS);
}

/* ---- create ---- */

static void test_create(void)
{
	struct kvpool_pool_params p = {
		.nr_pages = 1000, .page_tokens = 16, .nr_rows = 64,
		.row_tokens = 4096,
		.flags = KVPOOL_CREATE_RESERVE_ZERO | KVPOOL_CREATE_GPU,
	};
	const struct kvpool_ctl_create *c = &fake.create;
	unsigned int id = 77;
	struct stat st;

	mkdir_p(FAKE_SYSFS);
	put(FAKE_SYSFS, "kvpool-control", "");
	if (stat(CONTROL, &st))
		kvp_expect_die(CONTROL);
	fake.ctl_ino = st.st_ino;
	fake.bad_request = 0;

	/* The VMs' GPU, by the name lspci gives it. */
	EXPECT_EQ(0, kvpool_pci_parse("0000:00:10.0", &p.gpu_domain,
				      &p.gpu_devid));
	EXPECT_EQ(0, kvpool_pool_create(&p, &id)) TH_LOG("create, GPU");
	EXPECT_EQ(FAKE_NEW_POOL, id);
	EXPECT_EQ(1, fake.create_calls);
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");
	EXPECT_TRUE(c->size == sizeof(*c) && c->flags == p.flags &&
		    c->nr_pages == 1000 && c->page_tokens == 16 &&
		    c->nr_rows == 64 && c->row_tokens == 4096 &&
		    c->__reserved == 0)
		TH_LOG("create: geometry or flags not passed through");
	EXPECT_TRUE(c->gpu_domain == 0 && c->gpu_devid == FAKE_GPU_DEVID)
		TH_LOG("create: GPU %#x %#x", c->gpu_domain, c->gpu_devid);

	/* Every bit of both fields arrives (the stand-in refuses these). */
	p.gpu_domain = 0x12345678;
	p.gpu_devid = 0xabcd;
	EXPECT_EQ(-ENXIO, kvpool_pool_create(&p, &id)) TH_LOG("no device");
	EXPECT_TRUE(c->gpu_domain == 0x12345678 && c->gpu_devid == 0xabcd)
		TH_LOG("create: GPU %#x %#x", c->gpu_domain, c->gpu_devid);
	p.gpu_domain = 0;
	p.gpu_devid = 0x10000;
	EXPECT_EQ(-EINVAL, kvpool_pool_create(&p, &id)) TH_LOG("devid 2^16");
	EXPECT_EQ(0x10000, c->gpu_devid);
	p.gpu_devid = FAKE_NIC_DEVID;
	EXPECT_EQ(-EINVAL, kvpool_pool_create(&p, &id)) TH_LOG("no display");

	/* No GPU: the fields stay 0; GPU fields without the flag: EINVAL. */
	p.flags = 0;
	p.gpu_devid = 0;
	EXPECT_EQ(0, kvpool_pool_create(&p, NULL)) TH_LOG("create, no GPU");
	EXPECT_TRUE(c->flags == 0 && c->gpu_domain == 0 && c->gpu_devid == 0)
		TH_LOG("create without GPU");
	p.gpu_devid = FAKE_GPU_DEVID;
	EXPECT_EQ(-EINVAL, kvpool_pool_create(&p, NULL)) TH_LOG("no flag");
	EXPECT_EQ(FAKE_GPU_DEVID, c->gpu_devid);

	/* The last reserved field is the library's: refused, no ioctl. */
	fake.create_calls = 0;
	p.flags = KVPOOL_CREATE_GPU;
	p.__resv[0] = 1;
	id = 77;
	EXPECT_EQ(-EINVAL, kvpool_pool_create(&p, &id)) TH_LOG("__resv");
	EXPECT_EQ(0, fake.create_calls) TH_LOG("__resv: asked the kernel");
	EXPECT_EQ(77, id) TH_LOG("__resv: pool id written");
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");

	fake.ctl_ino = 0;
	rm_rf(FAKE_SYSFS);
}

/* ---- chunk budgets (ABI 4) ---- */

/* The permissions /proc/self/maps shows for the mapping of @what. */
static int mapped_as(const char *what, const char *perms)
{
	char line[512];
	int found = 0;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		kvp_expect_die("/proc/self/maps");
	while (fgets(line, sizeof(line), f))
		if (strstr(line, what) && strstr(line, perms))
			found = 1;
	fclose(f);
	return found;
}

static void test_budget_map(void)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	struct kvpool_arena_view v;
	struct kvpool *kp;
	char buf[8], path[64];
	int fds, ro;

	/*
	 * 14 pages of a page each, 4 to a chunk: 4 slots, 16 pages of
	 * address space, one chunk held. The pool's file is a memfd, which
	 * mmap(2) maps as the kernel's pool file would.
	 */
	fake.nr_pages = 14;
	fake.kind = KVPOOL_ARENA_HOST;
	fake.page_bytes = ps;
	fake.nr_chunks = 1;
	fake.budget = 1;
	fake.budget_bytes = 16 * ps;
	fake.fds_calls = 0;
	fake.bad_request = 0;
	fake.pool_fd = memfd_create("kvpool-budget-test", MFD_CLOEXEC);
	if (fake.pool_fd < 0 ||
	    ftruncate(fake.pool_fd, (off_t)fake.budget_bytes))
		kvp_expect_die("memfd");
	EXPECT_EQ(0, kvpool_open_fd(fake.pool_fd, &kp)) TH_LOG("open_fd");
	fds = count_fds();
	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(0, kvpool_arena_map(kp, &v)) TH_LOG("budget map: '%s'",
						    kvpool_arena_error());
	EXPECT_EQ(0, fake.fds_calls) TH_LOG("asked for chunk files");
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");
	EXPECT_EQ(fds, count_fds()) TH_LOG("map left descriptors open");
	EXPECT_TRUE(v.base && v.bytes == 16 * ps && v.page_bytes == ps &&
		    v.kind == KVPOOL_ARENA_HOST && v.nr_pages == 14 &&
		    v.nr_chunks == 1) TH_LOG("view");
	EXPECT_TRUE(all_zero(v.__resv, sizeof(v.__resv)));
	/* Shared and writable: what one client writes, all see. */
	EXPECT_TRUE(mapped_as("kvpool-budget-test", " rw-s "))
		TH_LOG("not one rw shared mapping of the pool file");
	if (v.base) {
		memcpy(kvpool_page_addr(&v, 13), "slot3", 6);
		EXPECT_EQ(6, pread(fake.pool_fd, buf, 6, (off_t)(13 * ps)));
		EXPECT_EQ(0, strcmp(buf, "slot3"));
		EXPECT_EQ(3, pwrite(fake.pool_fd, "xyz", 3, (off_t)(4 * ps)));
		EXPECT_EQ(0, memcmp(kvpool_page_addr(&v, 4), "xyz", 3));
		EXPECT_FALSE(kvpool_page_addr(&v, 14)) TH_LOG("page 14");
	}
	/* As any host arena: the mapping outlives the client. */
	kvpool_close(kp);
	if (v.base)
		EXPECT_EQ(0, strcmp(kvpool_page_addr(&v, 13), "slot3"));
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("unmap: view not zeroed");
	EXPECT_FALSE(mapped("kvpool-budget-test")) TH_LOG("unmap left it");

	/* A new pool holds no chunk: it maps all the same, nr_chunks 0. */
	fake.nr_chunks = 0;
	fake.pool_fd = memfd_create("kvpool-budget-test", MFD_CLOEXEC);
	if (fake.pool_fd < 0 ||
	    ftruncate(fake.pool_fd, (off_t)fake.budget_bytes) ||
	    kvpool_open_fd(fake.pool_fd, &kp))
		kvp_expect_die("memfd");
	EXPECT_EQ(0, kvpool_arena_map(kp, &v)) TH_LOG("no chunks held");
	EXPECT_TRUE(v.base && v.nr_chunks == 0 && v.bytes == 16 * ps);
	EXPECT_EQ(0, kvpool_arena_unmap(&v));

	/* Fewer bytes than pages; a CUDA budget: nothing mapped. */
	fake.budget_bytes = 12 * ps;
	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(-EIO, kvpool_arena_map(kp, &v)) TH_LOG("short budget pool");
	EXPECT_TRUE(all_zero(&v, sizeof(v)));
	fake.budget_bytes = 16 * ps;
	fake.kind = KVPOOL_ARENA_CUDA;
	EXPECT_EQ(-EOPNOTSUPP, kvpool_arena_map(kp, &v)) TH_LOG("CUDA budget");
	EXPECT_TRUE(all_zero(&v, sizeof(v)));
	fake.kind = KVPOOL_ARENA_HOST;
	EXPECT_FALSE(mapped("kvpool-budget-test")) TH_LOG("refusal mapped");
	kvpool_close(kp);

	/*
	 * A pool file that cannot be mapped writable (opened read-only):
	 * mmap's errno, the text naming the pool and mmap, nothing left.
	 */
	fake.pool_fd = memfd_create("kvpool-budget-test", MFD_CLOEXEC);
	if (fake.pool_fd < 0 ||
	    ftruncate(fake.pool_fd, (off_t)fake.budget_bytes))
		kvp_expect_die("memfd");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fake.pool_fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		kvp_expect_die(path);
	close(fake.pool_fd);
	fake.pool_fd = ro;
	if (kvpool_open_fd(fake.pool_fd, &kp))
		kvp_expect_die("open_fd");
	fds = count_fds();
	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(-EACCES, kvpool_arena_map(kp, &v)) TH_LOG("read-only file");
	EXPECT_TRUE(all_zero(&v, sizeof(v)));
	EXPECT_TRUE(blames("mapping pool 3's ", "mmap", EACCES))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	EXPECT_FALSE(mapped("kvpool-budget-test")) TH_LOG("refusal mapped");
	kvpool_close(kp);
	fake.pool_fd = -1;
	fake.budget = 0;
	fake.kind = KVPOOL_ARENA_NONE;
	fake.nr_chunks = 0;
}

static void test_budget_ctl(void)
{
	const struct kvpool_ctl_budget *b = &fake.ctl_budget;
	const struct kvpool_ctl_create *c = &fake.create;
	struct kvpool_pool_params p = {
		.nr_pages = 4096, .page_tokens = 16, .nr_rows = 64,
		.row_tokens = 4096, .flags = KVPOOL_CREATE_RESERVE_ZERO,
	};
	struct kvpool_ctl_budget out;
	unsigned int id = 77;
	struct stat st;

	/* No module: no control device. */
	rm_rf(FAKE_SYSFS);
	EXPECT_EQ(-ENOENT, kvpool_budget_create(KVPOOL_ARENA_HOST, 8, 2U << 20,
						&id)) TH_LOG("no control");
	EXPECT_EQ(77, id) TH_LOG("id written on failure");

	mkdir_p(FAKE_SYSFS);
	put(FAKE_SYSFS, "kvpool-control", "");
	if (stat(CONTROL, &st))
		kvp_expect_die(CONTROL);
	fake.ctl_ino = st.st_ino;
	fake.bad_request = 0;
	fake.budget_calls = 0;

	EXPECT_EQ(0, kvpool_budget_create(KVPOOL_ARENA_HOST, 8, 2U << 20, &id))
		TH_LOG("budget create");
	EXPECT_EQ(FAKE_BUDGET, id);
	EXPECT_TRUE(b->size == sizeof(*b) && b->op == KVPOOL_BUDGET_CREATE &&
		    b->kind == KVPOOL_ARENA_HOST && b->nr_chunks == 8 &&
		    b->chunk_bytes == 2U << 20) TH_LOG("create: fields");
	/* The kernel's refusals come back unchanged. */
	EXPECT_EQ(-EOPNOTSUPP, kvpool_budget_create(KVPOOL_ARENA_CUDA, 8,
						    2U << 20, NULL));
	EXPECT_EQ(-EINVAL, kvpool_budget_create(KVPOOL_ARENA_HOST, 0,
						2U << 20, NULL));
	EXPECT_EQ(-EINVAL, kvpool_budget_create(KVPOOL_ARENA_HOST, 8, 100,
						NULL));

	EXPECT_EQ(0, kvpool_budget_limits(FAKE_BUDGET, FAKE_POOL, 3U << 20,
					  9U << 20)) TH_LOG("limits");
	EXPECT_TRUE(b->op == KVPOOL_BUDGET_LIMITS &&
		    b->budget_id == FAKE_BUDGET && b->pool_id == FAKE_POOL &&
		    b->min_bytes == 3U << 20 && b->max_bytes == 9U << 20)
		TH_LOG("limits: fields");
	EXPECT_EQ(-EINVAL, kvpool_budget_limits(FAKE_BUDGET, FAKE_POOL, 2, 1));
	EXPECT_EQ(-ENODEV, kvpool_budget_limits(FAKE_BUDGET, 9, 0, 0));
	EXPECT_EQ(-ENODATA, kvpool_budget_limits(9, FAKE_POOL, 0, 0));

	/* INFO's answer whole; a failure leaves the caller's struct. */
	memset(&out, 0, sizeof(out));
	EXPECT_EQ(0, kvpool_budget_info(FAKE_BUDGET, &out)) TH_LOG("info");
	EXPECT_TRUE(b->op == KVPOOL_BUDGET_INFO &&
		    b->budget_id == FAKE_BUDGET) TH_LOG("info: fields");
	EXPECT_TRUE(out.kind == KVPOOL_ARENA_HOST && out.nr_chunks == 8 &&
		    out.chunk_bytes == 2U << 20 && out.out_free_chunks == 5 &&
		    out.out_nr_pools == 2 && out.out_moves == 11 &&
		    out.out_cleared_bytes == 11ULL << 21 &&
		    out.out_clear_ns == 123456789) TH_LOG("info: answer");
	memset(&out, 0xab, sizeof(out));
	EXPECT_EQ(-ENODATA, kvpool_budget_info(9, &out));
	EXPECT_EQ(0xabababab, out.nr_chunks) TH_LOG("info wrote on failure");
	EXPECT_EQ(0, kvpool_budget_info(FAKE_BUDGET, NULL));

	fake.budget = 1;
	EXPECT_EQ(-EBUSY, kvpool_budget_destroy(FAKE_BUDGET));
	fake.budget = 0;
	EXPECT_EQ(0, kvpool_budget_destroy(FAKE_BUDGET)) TH_LOG("destroy");
	EXPECT_TRUE(b->op == KVPOOL_BUDGET_DESTROY &&
		    b->budget_id == FAKE_BUDGET) TH_LOG("destroy: fields");
	EXPECT_EQ(-ENODATA, kvpool_budget_destroy(9));
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");

	/* A pool on the budget: its flag, id and page size reach CREATE. */
	fake.create_calls = 0;
	id = 77;
	EXPECT_EQ(0, kvpool_pool_create_budget(&p, FAKE_BUDGET, 64 << 10,
					       &id)) TH_LOG("create on budget");
	EXPECT_EQ(FAKE_NEW_POOL, id);
	EXPECT_TRUE(c->size == sizeof(*c) &&
		    c->flags == (KVPOOL_CREATE_RESERVE_ZERO |
				 KVPOOL_CREATE_BUDGET) &&
		    c->nr_pages == 4096 && c->page_tokens == 16 &&
		    c->nr_rows == 64 && c->row_tokens == 4096 &&
		    c->budget_id == FAKE_BUDGET && c->__reserved2 == 0 &&
		    c->page_bytes == 64 << 10 && !c->gpu_domain &&
		    !c->gpu_devid) TH_LOG("create on budget: fields");
	EXPECT_EQ(-ENODATA, kvpool_pool_create_budget(&p, 9, 64 << 10, NULL));
	EXPECT_EQ(-EINVAL, kvpool_pool_create_budget(&p, FAKE_BUDGET, 0,
						     NULL));
	/* Without the budget call the budget's fields stay 0. */
	EXPECT_EQ(0, kvpool_pool_create(&p, NULL));
	EXPECT_TRUE(c->flags == KVPOOL_CREATE_RESERVE_ZERO &&
		    !c->budget_id && !c->page_bytes) TH_LOG("plain create");
	/* The library's reserved field: refused before any ioctl. */
	fake.create_calls = 0;
	p.__resv[0] = 1;
	EXPECT_EQ(-EINVAL, kvpool_pool_create_budget(&p, FAKE_BUDGET, 4096,
						     NULL));
	EXPECT_EQ(0, fake.create_calls) TH_LOG("__resv: asked the kernel");

	fake.ctl_ino = 0;
	rm_rf(FAKE_SYSFS);
}

/* ---- the GPU's device node ---- */

#define NV_BDF		"0000:00:10.0"

/* The driver's information file of NV_BDF under @dir, as it writes it. */
static void put_info(const char *dir, const char *minor_line)
{
	char path[256], text[512];

	snprintf(path, sizeof(path), "%s/gpus", dir);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/gpus/" NV_BDF, dir);
	mkdir_p(path);
	snprintf(text, sizeof(text),
		 "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\n"
		 "Bus Location: \t " NV_BDF "\n%s"
		 "GPU Excluded:\t No\n", minor_line);
	put(path, "information", text);
}

/*
 * kvpool_gpu_device_open() of pool FAKE_POOL, which fails with @err and
 * a text holding @want, leaving no descriptor.
 */
static void device_refused(int err, const char *want, const char *why)
{
	int fds = count_fds();

	EXPECT_EQ(err, kvpool_gpu_device_open(FAKE_POOL)) TH_LOG("%s", why);
	EXPECT_TRUE(strstr(kvpool_arena_error(), want))
		TH_LOG("%s: '%s', want '%s'", why, kvpool_arena_error(), want);
	EXPECT_EQ(fds, count_fds()) TH_LOG("%s: descriptors left", why);
}

static void test_device(void)
{
	static const char *const bad[] = {
		"Device Minor: \t 255\n", "Device Minor: 254\n",
		"Device Minor: \t -1\n", "Device Minor: \t \n",
		"Device Minor: 12x\n", "Device Minor: 3 4\n",
		"Device Minor: 99999999999999999999\n",
		"Device Minor: +3\n",
	};
	char dir[] = "/tmp/kvpool-nvidia-XXXXXX", path[512], want[600];
	struct stat st, fst;
	size_t i;
	int fd;

	if (!mkdtemp(dir))
		kvp_expect_die("mkdtemp");
	make_fake_pool(16);
	put(CLASS "/kvpool3", "gpu", NV_BDF "\n");

	/* The driver's own places when nothing moves them. */
	unsetenv("KVPOOL_NVIDIA_PROC");
	setenv("KVPOOL_NVIDIA_DEV", "", 1);
	if (access("/proc/driver/nvidia/gpus/" NV_BDF "/information", F_OK))
		device_refused(-ENODEV, "no NVIDIA GPU at " NV_BDF
			       ": /proc/driver/nvidia/gpus/" NV_BDF
			       "/information: ", "no driver here");

	setenv("KVPOOL_NVIDIA_PROC", dir, 1);
	setenv("KVPOOL_NVIDIA_DEV", dir, 1);
	snprintf(want, sizeof(want), "no NVIDIA GPU at %s: %s/gpus/%s/information",
		 NV_BDF, dir, NV_BDF);
	device_refused(-ENODEV, want, "no information file");

	put_info(dir, "");
	device_refused(-EIO, "has no \"Device Minor:\" line", "no minor");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		put_info(dir, bad[i]);
		device_refused(-EIO, "is no GPU's minor (0 to 253)", bad[i]);
	}

	/* Minor 7 in the middle of the file; its node missing, then there. */
	put_info(dir, "Device Minor: \t 7\r\n");
	snprintf(want, sizeof(want), "(minor 7): %s/nvidia7: %s", dir,
		 strerror(ENOENT));
	device_refused(-ENOENT, want, "no node");
	snprintf(path, sizeof(path), "%s/nvidia7", dir);
	if (mkfifo(path, 0600) || stat(path, &st))
		kvp_expect_die(path);
	fd = kvpool_gpu_device_open(FAKE_POOL);
	EXPECT_LE(0, fd) TH_LOG("open: %s", kvpool_arena_error());
	EXPECT_EQ(0, strcmp(kvpool_arena_error(), ""));
	if (fd >= 0) {
		EXPECT_TRUE(!fstat(fd, &fst) && fst.st_ino == st.st_ino &&
			    fst.st_dev == st.st_dev) TH_LOG("not nvidia7");
		EXPECT_EQ(O_RDWR, fcntl(fd, F_GETFL) & O_ACCMODE);
		EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		close(fd);
	}
	put_info(dir, "Device Minor:\t0\n");
	device_refused(-ENOENT, "/nvidia0: ", "minor 0, no node");

	/* No GPU, no pool. */
	put(CLASS "/kvpool3", "gpu", "\n");
	device_refused(-EINVAL, "pool 3 has no GPU", "no GPU");
	rm_rf(CLASS "/kvpool3");
	device_refused(-ENODEV, "pool 3's GPU (sysfs)", "no pool");

	unsetenv("KVPOOL_NVIDIA_PROC");
	unsetenv("KVPOOL_NVIDIA_DEV");
	rm_rf(dir);
	rm_rf(FAKE_SYSFS);
}

/* ---- an agent arena's map ---- */

/*
 * The wait for the GPU agent does not depend on the arena's kind: a
 * host arena stands in here, so the bytes can be checked by the CPU.
 */
static void test_agent_wait(void)
{
	static const char *const bad_env[] = { "abc", "-5", "10s",
					       "86400001" };
	struct kvpool_arena_view v;
	struct kvpool *kp;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t i;
	int fds;

	fake.nr_pages = 3 * (FAKE_MAX_CHUNKS - 1) + 4;
	fake.pool_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fake.pool_fd < 0 || kvpool_open_fd(fake.pool_fd, &kp))
		kvp_expect_die("open_fd");
	fake_set(KVPOOL_ARENA_HOST, ps, FAKE_MAX_CHUNKS, 3, 5);
	fake.set_flags = KVPOOL_ARENA_SET_DEVICE | KVPOOL_ARENA_SET_AGENT;
	fds = count_fds();

	/*
	 * No agent: asked at once and then every 50 ms of the budget, 100
	 * ms: 3 times, counted in retries, whatever the clock says.
	 */
	setenv("KVPOOL_AGENT_WAIT_MS", "100", 1);
	fake.eagain_left = ~0U;
	fake.nowait_calls = 0;
	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(-EAGAIN, kvpool_arena_map(kp, &v)) TH_LOG("no agent");
	EXPECT_EQ(0, strcmp(kvpool_arena_error(),
			    "no GPU agent serves pool 3 (is kvpool-gpud running?)"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(3, fake.nowait_calls) TH_LOG("asked %u times",
					       fake.nowait_calls);
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("view not zeroed");
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	EXPECT_FALSE(mapped("kvpool-test-")) TH_LOG("chunks left");

	/* A budget of 0: once. */
	setenv("KVPOOL_AGENT_WAIT_MS", "0", 1);
	fake.nowait_calls = 0;
	EXPECT_EQ(-EAGAIN, kvpool_arena_map(kp, &v)) TH_LOG("wait 0");
	EXPECT_EQ(1, fake.nowait_calls);

	/* Not a number: refused before anything is asked. */
	for (i = 0; i < ARRAY_SIZE(bad_env); i++) {
		setenv("KVPOOL_AGENT_WAIT_MS", bad_env[i], 1);
		fake.nowait_calls = 0;
		EXPECT_EQ(-EINVAL, kvpool_arena_map(kp, &v))
			TH_LOG("KVPOOL_AGENT_WAIT_MS=%s", bad_env[i]);
		EXPECT_TRUE(strstr(kvpool_arena_error(), bad_env[i]) &&
			    strstr(kvpool_arena_error(), "KVPOOL_AGENT_WAIT_MS"))
			TH_LOG("'%s'", kvpool_arena_error());
		EXPECT_EQ(0, fake.nowait_calls);
		EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	}

	/*
	 * The default budget (10 s), the agent attached after 2 tries:
	 * mapped, every batch asked with NOWAIT, the bytes the chunks'.
	 */
	unsetenv("KVPOOL_AGENT_WAIT_MS");
	fake.eagain_left = 2;
	fake.nowait_calls = 0;
	fake.fds_calls = 0;
	fake.waited = 0;
	EXPECT_EQ(0, kvpool_arena_map(kp, &v)) TH_LOG("map: %s",
						      kvpool_arena_error());
	EXPECT_EQ(0, fake.waited) TH_LOG("asked without NOWAIT");
	EXPECT_EQ(0, fake.bad_request) TH_LOG("a request the header forbids");
	EXPECT_EQ(fake.fds_calls + 2, fake.nowait_calls)
		TH_LOG("%u calls, %u answered", fake.nowait_calls,
		       fake.fds_calls);
	EXPECT_EQ(fds, count_fds()) TH_LOG("map left descriptors");
	if (v.base) {
		EXPECT_EQ(3, pwrite(fake.chunk_fd[20], "agt", 3, 0));
		EXPECT_EQ(0, memcmp(kvpool_page_addr(&v, 60), "agt", 3));
	}
	EXPECT_EQ(0, kvpool_arena_unmap(&v));

	/* The agent failed a chunk, or a signal came: said so. */
	fake.agent_err = EIO;
	EXPECT_EQ(-EIO, kvpool_arena_map(kp, &v)) TH_LOG("agent failed");
	EXPECT_TRUE(strstr(kvpool_arena_error(),
			   "the GPU agent of pool 3 could not export chunks 0 to 15"))
		TH_LOG("'%s'", kvpool_arena_error());
	fake.agent_err = EINTR;
	EXPECT_EQ(-EINTR, kvpool_arena_map(kp, &v)) TH_LOG("signal");
	EXPECT_TRUE(strstr(kvpool_arena_error(), "a signal came"))
		TH_LOG("'%s'", kvpool_arena_error());
	fake.agent_err = 0;
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	EXPECT_FALSE(mapped("kvpool-test-")) TH_LOG("chunks left");

	/* An arena without an agent is never asked with NOWAIT. */
	fake.set_flags = KVPOOL_ARENA_SET_DEVICE;
	fake.eagain_left = ~0U;
	fake.nowait_calls = 0;
	EXPECT_EQ(0, kvpool_arena_map(kp, &v)) TH_LOG("map, no agent");
	EXPECT_EQ(0, fake.nowait_calls);
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	fake.eagain_left = 0;
	fake_clear();
	kvpool_close(kp);
	fake.pool_fd = -1;
}

/* ---- CUDA ---- */

#define CU_PAGE		(64U << 10)
#define CU_GRAN		(2U << 20)	/* the fake's default granularity */
#define CU_PAGES	64		/* 4 MiB: two granules */

/* Pool FAKE_POOL of CU_PAGES pages, on GPU @gpu ("" for none). */
static void make_cuda_pool(const char *gpu)
{
	struct stat st;

	make_fake_pool(CU_PAGES);
	put(CLASS "/kvpool3", "gpu", gpu);
	put(FAKE_SYSFS, "kvpool-control", "");
	if (stat(CONTROL, &st))
		kvp_expect_die(CONTROL);
	fake.ctl_ino = st.st_ino;
	/* The pool's node, which the library asks for its features. */
	put(FAKE_SYSFS, "kvpool3", "");
	if (stat(FAKE_SYSFS "/kvpool3", &st))
		kvp_expect_die(FAKE_SYSFS "/kvpool3");
	fake.node_ino = st.st_ino;
}

static struct kvpool *open_fake_pool(void)
{
	struct kvpool *kp;

	fake.pool_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fake.pool_fd < 0 || kvpool_open_fd(fake.pool_fd, &kp))
		kvp_expect_die("open_fd");
	return kp;
}

static void close_fake_pool(struct kvpool *kp)
{
	kvpool_close(kp);
	fake.pool_fd = -1;
}

/* In a child: its $KVPOOL_LIBCUDA names no file, before any CUDA call. */
static void cuda_nodriver(void)
{
	static const char want[] =
		"no CUDA driver (/nonexistent/libcuda.so.1 not found)";
	struct kvpool_arena_view v;
	struct kvpool *kp;
	uint32_t idx = 7;
	int fds;

	setenv("KVPOOL_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	make_cuda_pool("0000:00:10.0\n");
	kp = open_fake_pool();
	fake_set(KVPOOL_ARENA_CUDA, CU_PAGE, 2, CU_PAGES / 2, CU_PAGES / 2);
	fds = count_fds();

	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(-ELIBACC, kvpool_arena_map(kp, &v)) TH_LOG("map, no driver");
	EXPECT_EQ(0, strcmp(kvpool_arena_error(), want))
		TH_LOG("map: '%s'", kvpool_arena_error());
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("view not zeroed");
	EXPECT_EQ(fds, count_fds()) TH_LOG("map left descriptors");
	EXPECT_EQ(-ELIBACC, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 2,
						     &idx));
	EXPECT_EQ(KVPOOL_NO_INDEX, idx);
	EXPECT_EQ(0, strcmp(kvpool_arena_error(), want))
		TH_LOG("create: '%s'", kvpool_arena_error());
	EXPECT_EQ(0, fake.set_calls) TH_LOG("set called with no driver");
	EXPECT_EQ(fds, count_fds()) TH_LOG("create left descriptors");

	/* No GPU: refused before the driver is looked for. */
	put(CLASS "/kvpool3", "gpu", "\n");
	EXPECT_EQ(-ENODEV, kvpool_arena_map(kp, &v)) TH_LOG("map, no GPU");
	EXPECT_TRUE(strstr(kvpool_arena_error(), "has no GPU"))
		TH_LOG("map: '%s'", kvpool_arena_error());
	EXPECT_EQ(-EINVAL, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 2,
						    &idx));
	EXPECT_TRUE(strstr(kvpool_arena_error(), "has no GPU"))
		TH_LOG("create: '%s'", kvpool_arena_error());
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");

	/* A success clears the text. */
	fake_clear();
	EXPECT_EQ(0, kvpool_arena_create_host(FAKE_POOL, CU_PAGE, 2, &idx));
	EXPECT_EQ(0, strcmp(kvpool_arena_error(), ""))
		TH_LOG("after a success: '%s'", kvpool_arena_error());
	close_fake_pool(kp);
}

static struct {
	__typeof__(&cuInit) init;
	__typeof__(&cuMemCreate) create;
	__typeof__(&cuMemExportToShareableHandle) export;
	__typeof__(&cuMemRelease) release;
	__typeof__(&cuMemImportFromShareableHandle) import;
	__typeof__(&cuMemcpyHtoD) htod;
	__typeof__(&cuMemcpyDtoH) dtoh;
} cu;

/* Chunk @i of the stand-in's arena: @bytes made on CUDA device @dev. */
static void cuda_chunk(uint32_t i, int dev, uint64_t bytes)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
		.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	};
	CUmemGenericAllocationHandle h;

	fake.kind = KVPOOL_ARENA_CUDA;
	fake.page_bytes = CU_PAGE;
	fake.nr_chunks = i + 1;
	fake.bad_chunk = ~0U;
	if (cu.create(&h, bytes, &prop, 0) ||
	    cu.export(&fake.chunk_fd[i], h,
		      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ||
	    cu.release(h))
		kvp_expect_die("fake cuMemCreate");
	fake.chunk_bytes[i] = bytes;
}

/*
 * How many of this process's descriptors are pty masters: the fake
 * driver's exports. Not count_fds(): the driver may keep files of its
 * own (the fake: the GPU's node while a context is retained).
 */
static int count_exports(void)
{
	char link[64], name[64];
	int fd, n = 0;
	ssize_t len;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, name, sizeof(name) - 1);
		if (len <= 0)
			continue;
		name[len] = '\0';
		n += !strcmp(name, "/dev/ptmx") || !strcmp(name, "/dev/pts/ptmx");
	}
	return n;
}

/* The pty a pty master is the master of: which export it is. */
static int pty_index(int fd)
{
	int n = -1;

	return ioctl(fd, TIOCGPTN, &n) ? -1 : n;
}

/*
 * The agent's calls against the stand-in's agent file, with the fake
 * driver: attach; serve makes a fresh export of each master (another
 * file, which imports), closes what it was given, answers a master the
 * driver cannot import with an errno and stops there with the text,
 * and tells a refused export to the client; a request gone and a pool
 * gone are what the header says.
 */
static void cuda_agent(void)
{
	CUmemGenericAllocationHandle h;
	unsigned int i;
	int afd, fds, junk;

	EXPECT_EQ(-ENODEV, kvpool_agent_attach(FAKE_POOL + 1));
	afd = kvpool_agent_attach(FAKE_POOL);
	EXPECT_TRUE(afd >= 0 && afd == fake.agent_fd) TH_LOG("attach %d", afd);
	EXPECT_EQ(-EBUSY, kvpool_agent_attach(FAKE_POOL));
	if (afd < 0)
		return;
	memset(&ag, 0, sizeof(ag));
	for (i = 0; i < FAKE_MAX_REQS; i++)
		ag.reply_fd[i] = -1;
	cuda_chunk(0, 0, CU_GRAN);
	cuda_chunk(1, 0, CU_GRAN);
	junk = memfd_create("kvpool-test-junk", MFD_CLOEXEC);
	if (junk < 0)
		kvp_expect_die("memfd");
	ag.master[0] = fake.chunk_fd[0];
	ag.master[1] = junk;
	ag.master[2] = fake.chunk_fd[1];
	EXPECT_EQ(0, kvpool_agent_serve(afd)) TH_LOG("nothing queued");
	ag.nr = 3;

	fds = count_exports();
	EXPECT_EQ(2, kvpool_agent_serve(afd)) TH_LOG("serve: %s",
						     kvpool_arena_error());
	EXPECT_EQ(0, strncmp(kvpool_arena_error(),
			     "pool 3, chunk 1 for pid 77: cuMemImportFromShareableHandle: CUDA_ERROR_",
			     71)) TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_TRUE(ag.replies[0] == 1 && ag.reply_fd[0] >= 0 &&
		    !ag.reply_error[0]) TH_LOG("request 0 not answered");
	EXPECT_TRUE(ag.replies[1] == 1 && ag.reply_fd[1] < 0 &&
		    ag.reply_error[1] > 0) TH_LOG("request 1 not refused");
	EXPECT_EQ(0, ag.replies[2]) TH_LOG("served past a failure");
	EXPECT_EQ(1, kvpool_agent_serve(afd)) TH_LOG("the rest");
	EXPECT_EQ(0, strcmp(kvpool_arena_error(), ""));
	EXPECT_EQ(0, kvpool_agent_serve(afd)) TH_LOG("none left");
	EXPECT_EQ(0, ag.bad) TH_LOG("a request the header forbids");
	/* Only the stand-in's copies of the replies are new; no master. */
	EXPECT_EQ(fds + 2, count_exports()) TH_LOG("serve left descriptors");
	/* A fresh export: another pty than the master, of the memory. */
	EXPECT_TRUE(pty_index(ag.reply_fd[0]) >= 0 &&
		    pty_index(ag.reply_fd[0]) != pty_index(fake.chunk_fd[0]) &&
		    pty_index(ag.reply_fd[2]) != pty_index(fake.chunk_fd[1]))
		TH_LOG("the master handed back");
	EXPECT_EQ(CUDA_SUCCESS,
		  cu.import(&h, (void *)(uintptr_t)ag.reply_fd[0],
			    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		TH_LOG("the export does not import");
	cu.release(h);

	/* The kernel refuses the export: the client is told, not left. */
	ag.master[3] = fake.chunk_fd[0];
	ag.nr = 4;
	ag.refuse = EBUSY;
	fds = count_fds();
	EXPECT_EQ(1, kvpool_agent_serve(afd)) TH_LOG("refused");
	EXPECT_TRUE(ag.replies[3] == 2 && ag.reply_error[3] == EIO)
		TH_LOG("%u replies, error %d", ag.replies[3],
		       ag.reply_error[3]);
	EXPECT_TRUE(strstr(kvpool_arena_error(), "KVPOOL_AGENT_REPLY: busy"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");

	/* The client gave up (ENOENT): done, the export closed. */
	ag.next = 0;
	ag.replies[0] = 0;
	ag.nr = 1;
	ag.refuse = ENOENT;
	EXPECT_EQ(1, kvpool_agent_serve(afd)) TH_LOG("gone");
	EXPECT_EQ(0, strcmp(kvpool_arena_error(), ""));
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");

	/* The pool was destroyed. */
	ag.recv_err = ENODEV;
	EXPECT_EQ(-ENODEV, kvpool_agent_serve(afd));

	for (i = 0; i < FAKE_MAX_REQS; i++)
		if (ag.reply_fd[i] >= 0)
			close(ag.reply_fd[i]);
	close(junk);
	close(afd);
	fake.agent_fd = -1;
	fake_clear();
}

static void cuda_fake(void)
{
	char dir[] = "/tmp/kvpool-fakecuda-XXXXXX", nvdir[64], node[64];
	struct kvpool_arena_view v, w;
	struct stat st, dst;
	int gpu_hold[2], i;
	struct kvpool *kp;
	uint32_t idx = 7;
	void *dl;
	int fds;

	if (!mkdtemp(dir))
		kvp_expect_die("mkdtemp");
	setenv("KVPOOL_LIBCUDA", FAKECUDA, 1);
	setenv("KVPOOL_FAKECUDA_GPUS", "0000:00:10.0,0000:00:11.0", 1);
	setenv("KVPOOL_FAKECUDA_DIR", dir, 1);
	/* The library's dlopen() of the same file gets this same copy. */
	dl = dlopen(FAKECUDA, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		kvp_expect_die(FAKECUDA);
	cu.init = (__typeof__(cu.init))dlsym(dl, "cuInit");
	cu.create = (__typeof__(cu.create))dlsym(dl, "cuMemCreate");
	cu.export = (__typeof__(cu.export))dlsym(dl,
					"cuMemExportToShareableHandle");
	cu.release = (__typeof__(cu.release))dlsym(dl, "cuMemRelease");
	cu.import = (__typeof__(cu.import))dlsym(dl,
					"cuMemImportFromShareableHandle");
	cu.htod = (__typeof__(cu.htod))dlsym(dl, "cuMemcpyHtoD_v2");
	cu.dtoh = (__typeof__(cu.dtoh))dlsym(dl, "cuMemcpyDtoH_v2");
	if (!cu.init || !cu.create || !cu.export || !cu.release ||
	    !cu.import || !cu.htod || !cu.dtoh)
		kvp_expect_die("dlsym");

	/*
	 * The stand-ins of the driver's files in the fake's folder (the
	 * fake makes them too, alike), and the GPU held up throughout, as
	 * the kernel holds it for an arena: the fake tears a GPU nobody
	 * holds down, freeing its memory, as NVIDIA's driver does. What
	 * the driver itself keeps open (the fake: its lock) is counted
	 * after its cuInit().
	 */
	put_info(dir, "Device Minor: \t 0\n");
	for (i = 1; i >= 0; i--) {
		snprintf(node, sizeof(node), "%s/nvidia%d", dir, i);
		if ((mkfifo(node, 0600) && errno != EEXIST) || stat(node, &st))
			kvp_expect_die(node);
		gpu_hold[i] = open(node, O_RDWR | O_CLOEXEC);
		if (gpu_hold[i] < 0)
			kvp_expect_die(node);
	}
	if (cu.init(0) != CUDA_SUCCESS)
		kvp_expect_die("cuInit");

	make_cuda_pool("0000:00:10.0\n");
	fds = count_fds();
	fake.set_calls = 0;
	fake.set_wrong = 0;

	/* An ABI 2 kernel: no GPU held, no flags, and no agent arena. */
	fake.features = 0;
	EXPECT_EQ(0, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 2, &idx))
		TH_LOG("create_cuda, ABI 2: %s", kvpool_arena_error());
	EXPECT_TRUE(fake.set_calls == 1 && fake.last_set_flags == 0)
		TH_LOG("ABI 2: set %u times, flags %#x", fake.set_calls,
		       fake.last_set_flags);
	EXPECT_EQ(-EOPNOTSUPP,
		  kvpool_arena_create_cuda_flags(FAKE_POOL, CU_PAGE, 2,
						 KVPOOL_ARENA_SET_AGENT, &idx));
	EXPECT_TRUE(strstr(kvpool_arena_error(), "KVPOOL_FEAT_GPU_AGENT"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(1, fake.set_calls) TH_LOG("set called for an agent arena");
	EXPECT_EQ(fds, count_fds()) TH_LOG("create_cuda left descriptors");

	/*
	 * ABI 3: the pool holds the GPU's node up. None to be found (the
	 * driver's folder empty), or a flag not the caller's: nothing
	 * made, nothing set.
	 */
	fake.features = KVPOOL_FEAT_GPU_AGENT;
	snprintf(nvdir, sizeof(nvdir), "%s/nvidia-none", dir);
	mkdir_p(nvdir);
	setenv("KVPOOL_NVIDIA_PROC", nvdir, 1);
	setenv("KVPOOL_NVIDIA_DEV", dir, 1);
	EXPECT_EQ(-ENODEV, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 2,
						    &idx)) TH_LOG("no node");
	EXPECT_TRUE(strstr(kvpool_arena_error(), "no NVIDIA GPU at 0000:00:10.0"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(-EINVAL,
		  kvpool_arena_create_cuda_flags(FAKE_POOL, CU_PAGE, 2,
						 KVPOOL_ARENA_SET_DEVICE, &idx));
	EXPECT_EQ(1, fake.set_calls) TH_LOG("set called without a device");
	EXPECT_EQ(fds, count_fds()) TH_LOG("create_cuda left descriptors");

	/* The fake driver's folder, where the node is found. */
	setenv("KVPOOL_NVIDIA_PROC", dir, 1);
	fake.keep_cuda = 1;
	EXPECT_EQ(0, kvpool_arena_create_cuda_flags(FAKE_POOL, CU_PAGE, 2,
						    KVPOOL_ARENA_SET_AGENT,
						    &idx))
		TH_LOG("create_cuda_flags: %s", kvpool_arena_error());
	EXPECT_EQ(KVPOOL_ARENA_SET_DEVICE | KVPOOL_ARENA_SET_AGENT,
		  fake.last_set_flags);
	EXPECT_TRUE(fake.device_fd >= 0 && !fstat(fake.device_fd, &dst) &&
		    dst.st_ino == st.st_ino) TH_LOG("nvidia0 not held");
	fake_clear();

	fake.set_calls = 0;
	EXPECT_EQ(0, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 2, &idx))
		TH_LOG("create_cuda: %s", kvpool_arena_error());
	fake.keep_cuda = 0;
	EXPECT_EQ(KVPOOL_ARENA_SET_DEVICE, fake.last_set_flags);
	EXPECT_TRUE(fake.device_fd >= 0) TH_LOG("no GPU held");
	EXPECT_EQ(KVPOOL_NO_INDEX, idx);
	EXPECT_EQ(0, fake.set_wrong) TH_LOG("a chunk not a CLOEXEC handle");
	EXPECT_TRUE(fake.set_calls == 1 && fake.kind == KVPOOL_ARENA_CUDA &&
		    fake.nr_chunks == 2 && fake.chunk_bytes[0] == CU_GRAN &&
		    fake.chunk_bytes[1] == CU_GRAN)
		TH_LOG("create_cuda: %u chunks of %llu, %llu", fake.nr_chunks,
		       (unsigned long long)fake.chunk_bytes[0],
		       (unsigned long long)fake.chunk_bytes[1]);
	/* Only the stand-in's own copies are open: chunks and device. */
	EXPECT_EQ(fds + (int)fake.nr_chunks + 1, count_fds())
		TH_LOG("create_cuda left descriptors");
	/* A plan the granularity makes impossible: 3 chunks of 2 granules. */
	EXPECT_EQ(-EINVAL, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 3,
						    &idx));
	EXPECT_TRUE(strstr(kvpool_arena_error(), "granularity"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(1, fake.set_calls) TH_LOG("set called for a bad plan");

	/*
	 * Two views of the one arena: the same memory. While they are
	 * mapped the driver may hold files of its own (the fake does: the
	 * GPU's node): the count is taken after the unmaps.
	 */
	kp = open_fake_pool();
	fds = count_fds();
	EXPECT_EQ(0, kvpool_arena_map(kp, &v))
		TH_LOG("map: %s", kvpool_arena_error());
	EXPECT_EQ(0, kvpool_arena_map(kp, &w))
		TH_LOG("map again: %s", kvpool_arena_error());
	EXPECT_TRUE(v.base && v.kind == KVPOOL_ARENA_CUDA &&
		    v.bytes == 2 * CU_GRAN && v.page_bytes == CU_PAGE &&
		    v.nr_pages == CU_PAGES && v.nr_chunks == 2 &&
		    (uintptr_t)v.base % CU_GRAN == 0) TH_LOG("view");
	/* The first found no context and retained one, the second used it. */
	EXPECT_TRUE(v.__resv[0] == 1 && w.__resv[0] == 0)
		TH_LOG("retained %u %u", v.__resv[0], w.__resv[0]);
	if (v.base && w.base && v.base != w.base) {
		/* Device memory: through the driver's copies, not the CPU. */
		char got[8] = "";

		EXPECT_EQ(CUDA_SUCCESS,
			  cu.htod((CUdeviceptr)(uintptr_t)
				  kvpool_page_addr(&v, 40), "cuda40", 7));
		EXPECT_EQ(CUDA_SUCCESS,
			  cu.dtoh(got, (CUdeviceptr)(uintptr_t)
				  kvpool_page_addr(&w, 40), 7));
		EXPECT_EQ(0, strcmp(got, "cuda40"))
			TH_LOG("views do not share memory");
	}
	EXPECT_EQ(0, kvpool_arena_unmap(&w));
	EXPECT_EQ(0, kvpool_arena_unmap(&v))
		TH_LOG("unmap: %s", kvpool_arena_error());
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("unmap: view not zeroed");
	EXPECT_EQ(fds, count_fds()) TH_LOG("map left descriptors");
	fake_clear();

	/* Chunks off the granularity, though their sum is on it. */
	fake_set(KVPOOL_ARENA_CUDA, CU_PAGE, 2, 16, 48);
	fds = count_fds();
	memset(&v, 0xff, sizeof(v));
	EXPECT_EQ(-EINVAL, kvpool_arena_map(kp, &v)) TH_LOG("granularity");
	EXPECT_TRUE(strstr(kvpool_arena_error(), "chunk 0 ") &&
		    strstr(kvpool_arena_error(), "granularity"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_TRUE(all_zero(&v, sizeof(v)));
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");

	/* Files the driver never exported: its import fails. */
	fake.chunk_bytes[0] = fake.chunk_bytes[1] = CU_GRAN;
	EXPECT_EQ(-EIO, kvpool_arena_map(kp, &v)) TH_LOG("not handles");
	EXPECT_EQ(0, strncmp(kvpool_arena_error(),
			     "cuMemImportFromShareableHandle: CUDA_ERROR_", 43))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	fake_clear();

	/* The second chunk on the other GPU. */
	cuda_chunk(0, 0, CU_GRAN);
	cuda_chunk(1, 1, CU_GRAN);
	fds = count_fds();
	EXPECT_EQ(-EXDEV, kvpool_arena_map(kp, &v)) TH_LOG("other GPU");
	EXPECT_EQ(0, strcmp(kvpool_arena_error(),
			    "chunk 1 is on CUDA device 1 (0000:00:11.0), the pool's GPU is device 0 (0000:00:10.0)"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_TRUE(all_zero(&v, sizeof(v)));
	EXPECT_EQ(fds, count_fds()) TH_LOG("descriptors left");
	fake_clear();
	close_fake_pool(kp);

	cuda_agent();
	close(gpu_hold[0]);
	close(gpu_hold[1]);
	fake.ctl_ino = 0;
	fake.node_ino = 0;
	fake.features = 0;
	unsetenv("KVPOOL_NVIDIA_PROC");
	unsetenv("KVPOOL_NVIDIA_DEV");
	rm_rf(FAKE_SYSFS);
	rm_rf(dir);
}

static void test_cuda(void)
{
	int status;
	pid_t pid;

	/* The driver is looked for once a process: no driver in a child. */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kvp_expect_die("fork");
	if (!pid) {
		cuda_nodriver();
		fflush(stdout);
		_exit(kvp_expect_failures ? 1 : 0);
	}
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the no-driver child failed (status %#x)", status);
	rm_rf(FAKE_SYSFS);
	cuda_fake();
}

int main(void)
{
	test_layouts();
	test_plans();
	test_map();
	test_control();
	test_create();
	test_budget_map();
	test_budget_ctl();
	test_device();
	test_agent_wait();
	test_cuda();
	return kvp_expect_done("arena");
}
