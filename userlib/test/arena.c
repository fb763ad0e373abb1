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
} fake = { .pool_fd = -1, .bad_chunk = ~0U, .refuse_chunk = ~0U };

/* The stand-in's PCI bus: a display controller and a network card. */
#define FAKE_GPU_DEVID	0x0080		/* 0000:00:10.0, as in the VMs */
#define FAKE_NIC_DEVID	0x0008		/* 0000:00:01.0 */
#define FAKE_NEW_POOL	5

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
	    (a->flags & ~KVPOOL_ARENA_FDS)) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	a->out_kind = fake.kind;
	a->out_nr_chunks = fake.kind ? fake.nr_chunks : 0;
	a->out_page_bytes = fake.kind ? fake.page_bytes : 0;
	a->out_bytes = fake.kind ? fake_bytes() + fake.extra_bytes : 0;
	if (!(a->flags & KVPOOL_ARENA_FDS)) {
		if (a->first_chunk || a->count || a->fd_entry_len || a->fds)
			fake.bad_request = 1;
		return 0;
	}
	if (!fake.kind)
		return -ENODATA;
	if (a->fd_entry_len != sizeof(*out) || !a->count ||
	    a->first_chunk >= fake.nr_chunks ||
	    a->count > fake.nr_chunks - a->first_chunk) {
		fake.bad_request = 1;
		return -EINVAL;
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
	if (a->size != sizeof(*a) || a->flags || a->__reserved ||
	    a->chunk_entry_len != sizeof(*c)) {
		fake.bad_request = 1;
		return -EINVAL;
	}
	if (a->pool_id != FAKE_POOL)
		return -ENODEV;
	if (a->kind != KVPOOL_ARENA_HOST && a->kind != KVPOOL_ARENA_CUDA)
		return -EOPNOTSUPP;
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
	if (a->kind == KVPOOL_ARENA_CUDA && fake.keep_cuda) {
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
	if (c->flags & ~(KVPOOL_CREATE_RESERVE_ZERO | KVPOOL_CREATE_GPU))
		return -EOPNOTSUPP;
	if (c->__reserved)
		return -EINVAL;
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

/* Whether @fd is the fake control device. */
static int is_control(int fd)
{
	struct stat st;

	return fake.ctl_ino && !fstat(fd, &st) && st.st_ino == fake.ctl_ino;
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
		else
			ret = -ENOTTY;
		goto out;
	}
	if (fd != fake.pool_fd || fd < 0)
		return (int)syscall(SYS_ioctl, fd, request, arg);

	if (request == KVPOOL_INFO) {
		struct kvpool_info *in = arg;

		in->out_abi_version = KVPOOL_ABI_VERSION;
		in->out_features = KVPOOL_FEAT_ARENA;
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

static void cuda_fake(void)
{
	char dir[] = "/tmp/kvpool-fakecuda-XXXXXX";
	struct kvpool_arena_view v, w;
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
	if (!cu.init || !cu.create || !cu.export || !cu.release)
		kvp_expect_die("dlsym");

	make_cuda_pool("0000:00:10.0\n");
	fds = count_fds();
	fake.keep_cuda = 1;
	fake.set_calls = 0;
	fake.set_wrong = 0;
	EXPECT_EQ(0, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 2, &idx))
		TH_LOG("create_cuda: %s", kvpool_arena_error());
	fake.keep_cuda = 0;
	EXPECT_EQ(KVPOOL_NO_INDEX, idx);
	EXPECT_EQ(0, fake.set_wrong) TH_LOG("a chunk not a CLOEXEC handle");
	EXPECT_TRUE(fake.set_calls == 1 && fake.kind == KVPOOL_ARENA_CUDA &&
		    fake.nr_chunks == 2 && fake.chunk_bytes[0] == CU_GRAN &&
		    fake.chunk_bytes[1] == CU_GRAN)
		TH_LOG("create_cuda: %u chunks of %llu, %llu", fake.nr_chunks,
		       (unsigned long long)fake.chunk_bytes[0],
		       (unsigned long long)fake.chunk_bytes[1]);
	/* Only the stand-in's own copies are open. */
	EXPECT_EQ(fds + (int)fake.nr_chunks, count_fds())
		TH_LOG("create_cuda left descriptors");
	/* A plan the granularity makes impossible: 3 chunks of 2 granules. */
	EXPECT_EQ(-EINVAL, kvpool_arena_create_cuda(FAKE_POOL, CU_PAGE, 3,
						    &idx));
	EXPECT_TRUE(strstr(kvpool_arena_error(), "granularity"))
		TH_LOG("'%s'", kvpool_arena_error());
	EXPECT_EQ(1, fake.set_calls) TH_LOG("set called for a bad plan");

	/* Two views of the one arena: the same memory. */
	kp = open_fake_pool();
	fds = count_fds();
	EXPECT_EQ(0, kvpool_arena_map(kp, &v))
		TH_LOG("map: %s", kvpool_arena_error());
	EXPECT_EQ(0, kvpool_arena_map(kp, &w))
		TH_LOG("map again: %s", kvpool_arena_error());
	EXPECT_EQ(fds, count_fds()) TH_LOG("map left descriptors");
	EXPECT_TRUE(v.base && v.kind == KVPOOL_ARENA_CUDA &&
		    v.bytes == 2 * CU_GRAN && v.page_bytes == CU_PAGE &&
		    v.nr_pages == CU_PAGES && v.nr_chunks == 2 &&
		    (uintptr_t)v.base % CU_GRAN == 0) TH_LOG("view");
	/* The first found no context and retained one, the second used it. */
	EXPECT_TRUE(v.__resv[0] == 1 && w.__resv[0] == 0)
		TH_LOG("retained %u %u", v.__resv[0], w.__resv[0]);
	if (v.base && w.base && v.base != w.base) {
		/* The fake's device pointers are host addresses. */
		memcpy(kvpool_page_addr(&v, 40), "cuda40", 7);
		EXPECT_EQ(0, strcmp(kvpool_page_addr(&w, 40), "cuda40"))
			TH_LOG("views do not share memory");
	}
	EXPECT_EQ(0, kvpool_arena_unmap(&w));
	EXPECT_EQ(0, kvpool_arena_unmap(&v))
		TH_LOG("unmap: %s", kvpool_arena_error());
	EXPECT_TRUE(all_zero(&v, sizeof(v))) TH_LOG("unmap: view not zeroed");
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

	fake.ctl_ino = 0;
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
	test_cuda();
	return kvp_expect_done("arena");
}
