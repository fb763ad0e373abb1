// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: CUDA arenas through libkvpool and kvpoolctl, against
 * the module, with the fake CUDA driver (selftests/lib/fakecuda) standing
 * in for NVIDIA's on a guest that has no GPU, only the bochs display
 * controller a GPU pool is made for.
 *
 * - no driver: kvpoolctl arena create --cuda exits 8 with the library's
 *   words, and the pool is left with no arena;
 * - kvpoolctl makes a CUDA arena (--shared: every client gets the
 *   pool's own files) in a process that exits; libkvpool has the pool
 *   hold the GPU's device node, so the GPU stays up. Three processes map
 *   it, each forking before any CUDA call (CUDA does not survive
 *   fork()): A writes its row's pages and exports the row, B imports it
 *   and reads those bytes, and after A's SIGKILL C still reads them;
 * - chunks made on the fake's other GPU, given to a pool of the first:
 *   mapping is -EXDEV, with the text naming both devices;
 * - chunks made at a finer granularity than the mapper's: -EINVAL;
 * - chunks given without the device keep-alive, by a process that exits,
 *   while nobody holds the GPU: it is torn down, and mapping is -EIO.
 *
 * The fake frees memory as NVIDIA's driver does (with its last
 * reference, or with its GPU when nobody holds the device node) and
 * keeps device memory out of the CPU's reach, so every process reaches
 * it through the driver API, as on a GPU: cuMemcpyHtoD_v2, cuMemsetD8_v2
 * and cuCtxSynchronize to write, cuMemcpyDtoH_v2 to read, from the same
 * copy of the fake that libkvpool loaded (dlopen() of one path gives one
 * copy), in the context libkvpool made current. The module takes the
 * fake's files (a pty master as a chunk, a FIFO as the device) only with
 * its fake_cuda parameter set, which the fixture does; a module without
 * the parameter fails every test.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cuda.h>
#include <kvpool.h>

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"
#define FAKECUDA	KVP_TOPDIR "/selftests/lib/fakecuda/libcuda.so.1"

#define PAGES		64
#define PAGE_BYTES	(64U << 10)	/* 64 pages: two 2 MiB granules */
#define ROW_PAGES	3
#define OTHER_GPU	"0000:00:11.0"	/* the fake's device 1: no PCI device */
#define FAKE_PARAM	"/sys/module/kvpool/parameters/fake_cuda"
#define MARK_BYTES	256	/* each page's head, memset after the copy */

FIXTURE(acuda) {
	char gpu[64];
	char dir[64];
	unsigned int id;
	char fake_cuda;		/* the parameter's value before: Y or N */
};

/* Writes @val to the module's fake_cuda parameter; 0 or -errno. */
static int set_fake_cuda(char val)
{
	int fd = open(FAKE_PARAM, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, &val, 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Holds GPU @d of the fake up as an arena's keep-alive or persistence
 * mode would: an open file of its device node, the registry's FIFO
 * nvidia<d> (made here if the fake has not made it yet).
 */
static int hold_gpu(const char *dir, int d)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/nvidia%d", dir, d);
	if (mkfifo(path, 0600) && errno != EEXIST)
		return -1;
	return open(path, O_RDWR | O_CLOEXEC);
}

static int make_pool(const char *gpu, unsigned int *id)
{
	struct kvpool_pool_params p = {
		.nr_pages = PAGES, .page_tokens = 16, .nr_rows = 8,
		.row_tokens = PAGES * 16, .flags = KVPOOL_CREATE_GPU,
	};
	int ret = kvpool_pci_parse(gpu, &p.gpu_domain, &p.gpu_devid);

	return ret ? ret : kvpool_pool_create(&p, id);
}

/*
 * The fake's stand-in of loading NVIDIA's kernel module: a cuInit() (in
 * a child, which then exits: the test's process never initialises CUDA)
 * makes the registry's device nodes and procfs files, which libkvpool
 * reads before it loads the driver library, as it reads
 * /proc/driver/nvidia on a GPU host. 0, or what failed.
 */
static int fake_driver_load(void)
{
	__typeof__(&cuInit) init;
	int st;
	pid_t pid = fork();

	if (!pid) {
		void *dl = dlopen(FAKECUDA, RTLD_NOW | RTLD_LOCAL);

		init = dl ? (__typeof__(init))dlsym(dl, "cuInit") : NULL;
		_exit(init && init(0) == CUDA_SUCCESS ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

FIXTURE_SETUP(acuda)
{
	char gpus[160];
	FILE *f;

	/* Without the test hook the module refuses the fake's files. */
	f = fopen(FAKE_PARAM, "re");
	ASSERT_NE(NULL, f)
		TH_LOG("%s: %s: the module cannot take the fake driver's files",
		       FAKE_PARAM, strerror(errno));
	self->fake_cuda = (char)fgetc(f);
	fclose(f);
	ASSERT_TRUE(self->fake_cuda == 'Y' || self->fake_cuda == 'N')
		TH_LOG("%s reads '%c'", FAKE_PARAM, self->fake_cuda);
	ASSERT_EQ(0, kt_find_gpu(NULL, NULL, self->gpu, sizeof(self->gpu)))
		TH_LOG("no PCI display controller: vm-run.sh adds one");
	ASSERT_EQ(0, make_pool(self->gpu, &self->id));
	snprintf(self->dir, sizeof(self->dir), "/dev/shm/kvpool-cuda-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/* The pool's GPU is the fake's device 0, the other its device 1. */
	snprintf(gpus, sizeof(gpus), "%s,%s", self->gpu, OTHER_GPU);
	setenv("KVPOOL_FAKECUDA_GPUS", gpus, 1);
	setenv("KVPOOL_FAKECUDA_DIR", self->dir, 1);
	setenv("KVPOOL_LIBCUDA", FAKECUDA, 1);
	/* Where libkvpool finds the GPU's minor and node: the fake's. */
	setenv("KVPOOL_NVIDIA_PROC", self->dir, 1);
	setenv("KVPOOL_NVIDIA_DEV", self->dir, 1);
	unsetenv("KVPOOL_FAKECUDA_GRANULARITY");
	ASSERT_EQ(0, fake_driver_load());
	/* Set last: a setup that fails has no teardown to put it back. */
	ASSERT_EQ(0, set_fake_cuda('1'));
}

FIXTURE_TEARDOWN(acuda)
{
	char cmd[128];

	EXPECT_EQ(0, kvpool_pool_destroy(self->id));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	EXPECT_EQ(0, system(cmd));
	if (self->fake_cuda == 'Y' || self->fake_cuda == 'N')
		EXPECT_EQ(0, set_fake_cuda(self->fake_cuda));
}

/* Runs kvpoolctl with @args (split at spaces); output to @out. */
#define kvpoolctl(args, out, len) \
	kt_run_output(out, len, "%s %s", KVPOOLCTL, args)

static int open_pool(unsigned int id, struct kvpool **kp)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	return kvpool_open(path, kp);
}

/* The pool's arena kind, or -errno. */
static int arena_kind(unsigned int id)
{
	struct kvpool_arena a;
	struct kvpool *kp;
	int ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	ret = kvpool_arena_info(kp, &a);
	kvpool_close(kp);
	return ret ? ret : (int)a.out_kind;
}

/*
 * What a child of the test reports: its exit status is 0 or the line of
 * its failure, and its text (kvpool_arena_error(), say) comes back here.
 */
struct report {
	int fd;		/* the write end, in the child */
	char text[512];
};

#define KID_CHECK(cond, r)						\
	do {								\
		if (!(cond)) {						\
			dprintf((r)->fd, "line %d: %s", __LINE__,	\
				kvpool_arena_error());			\
			_exit(__LINE__ & 0xff ? __LINE__ & 0xff : 1);	\
		}							\
	} while (0)

/* Fork @fn(@arg, report); its exit status, its text in @r->text. */
static int run_child(int (*fn)(void *, struct report *), void *arg,
		     struct report *r, pid_t *pidp)
{
	int p[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(p[0]);
		r->fd = p[1];
		_exit(fn(arg, r));
	}
	close(p[1]);
	if (pidp) {
		/* The caller waits: it reads the text when it likes. */
		*pidp = pid;
		r->fd = p[0];
		return 0;
	}
	n = read(p[0], r->text, sizeof(r->text) - 1);
	r->text[n > 0 ? n : 0] = 0;
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* No driver: exit status 8, the library's text, and still no arena. */
TEST_F(acuda, no_driver)
{
	char args[128], out[1024], want[160];

	snprintf(args, sizeof(args),
		 "arena create %u --cuda --shared --page-bytes 4096", self->id);
	setenv("KVPOOL_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	EXPECT_EQ(8, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_STREQ("kvpoolctl: arena create: no CUDA driver (/nonexistent/libcuda.so.1 not found)\n",
		     out);
	/* The default name, which the guest has no file of. */
	unsetenv("KVPOOL_LIBCUDA");
	snprintf(want, sizeof(want),
		 "kvpoolctl: arena create: no CUDA driver (libcuda.so.1 not found)\n");
	EXPECT_EQ(8, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_STREQ(want, out);

	EXPECT_EQ(KVPOOL_ARENA_NONE, arena_kind(self->id));
	snprintf(args, sizeof(args), "arena show %u", self->id);
	EXPECT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "has no arena")) TH_LOG("%s", out);
}

struct writer {
	unsigned int id;
	int sock;	/* to the test: the export file, then the page ids */
	int hold;	/* read end: A waits on it until it is killed */
};

static unsigned char pattern(__u32 page, size_t i)
{
	return (unsigned char)(page * 31 + i * 7 + 1);
}

/* What a reader must find: A's copy, and its memset over the head. */
static unsigned char expected(__u32 page, size_t i)
{
	return i < MARK_BYTES ? (unsigned char)(page ^ 0xa5) :
	       pattern(page, i);
}

/* The driver calls a child makes itself, from libkvpool's copy of it. */
struct cu {
	__typeof__(&cuMemcpyHtoD) htod;
	__typeof__(&cuMemcpyDtoH) dtoh;
	__typeof__(&cuMemsetD8) memset;
	__typeof__(&cuCtxSynchronize) sync;
};

/* The _v2 names, as cuda.h renames them. 0, or -1 if one is missing. */
static int cu_load(struct cu *cu)
{
	void *dl = dlopen(FAKECUDA, RTLD_NOW | RTLD_LOCAL);

	if (!dl)
		return -1;
	cu->htod = (__typeof__(cu->htod))dlsym(dl, "cuMemcpyHtoD_v2");
	cu->dtoh = (__typeof__(cu->dtoh))dlsym(dl, "cuMemcpyDtoH_v2");
	cu->memset = (__typeof__(cu->memset))dlsym(dl, "cuMemsetD8_v2");
	cu->sync = (__typeof__(cu->sync))dlsym(dl, "cuCtxSynchronize");
	return cu->htod && cu->dtoh && cu->memset && cu->sync ? 0 : -1;
}

static CUdeviceptr page_ptr(const struct kvpool_arena_view *v, __u32 page)
{
	return (CUdeviceptr)(uintptr_t)kvpool_page_addr(v, page);
}

/* Whether a CPU load at @p in a forked child dies of SIGSEGV. */
static bool cpu_load_faults(const volatile unsigned char *p)
{
	int st;
	pid_t pid = fork();

	if (!pid) {
		(void)*p;
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
	       WTERMSIG(st) == SIGSEGV;
}

/*
 * A: map, write its row's pages (a copy, then a memset over each page's
 * head, then a synchronize: the memset is queued until then), export the
 * row, wait to be killed.
 */
static int child_a(void *arg, struct report *r)
{
	static unsigned char buf[PAGE_BYTES];
	struct writer *w = arg;
	struct kvpool_extend_entry e = { 0 };
	struct kvpool_arena_view v;
	struct kvpool_handle h;
	__u32 pages[ROW_PAGES], i;
	struct kvpool *kp;
	struct cu cu;
	char c;
	size_t j;
	int xfd;

	KID_CHECK(!cu_load(&cu), r);
	KID_CHECK(!open_pool(w->id, &kp), r);
	KID_CHECK(!kvpool_arena_map(kp, &v), r);
	KID_CHECK(v.kind == KVPOOL_ARENA_CUDA && v.nr_pages == PAGES, r);
	KID_CHECK(kvpool_alloc_rows(kp, &h, 1, NULL) == 1, r);
	e.handle = h;
	e.new_len = ROW_PAGES * 16;
	KID_CHECK(kvpool_extend(kp, &e, 1, pages, ROW_PAGES, NULL) ==
		    ROW_PAGES, r);
	for (i = 0; i < ROW_PAGES; i++) {
		for (j = 0; j < PAGE_BYTES; j++)
			buf[j] = pattern(pages[i], j);
		KID_CHECK(cu.htod(page_ptr(&v, pages[i]), buf, PAGE_BYTES) ==
			    CUDA_SUCCESS, r);
		KID_CHECK(cu.memset(page_ptr(&v, pages[i]),
				      (unsigned char)(pages[i] ^ 0xa5),
				      MARK_BYTES) == CUDA_SUCCESS, r);
	}
	KID_CHECK(cu.sync() == CUDA_SUCCESS, r);
	KID_CHECK(!kvpool_commit(kp, &(struct kvpool_len_entry){
					   .handle = h, .len = ROW_PAGES * 16 },
				   1, NULL), r);
	xfd = kvpool_export(kp, h);
	KID_CHECK(xfd >= 0, r);
	KID_CHECK(!kvpool_send_fd(w->sock, xfd), r);
	KID_CHECK(write(w->sock, pages, sizeof(pages)) == sizeof(pages), r);
	/* Alive, mapped and a client, until the SIGKILL. */
	while (read(w->hold, &c, 1) < 0 && errno == EINTR)
		;
	return 1;
}

struct reader {
	unsigned int id;
	int xfd;		/* B: the export to import; C: -1 */
	__u32 pages[ROW_PAGES];
};

/*
 * B imports the row (its pages must be A's); B and C read the bytes, with
 * cuMemcpyDtoH: a CPU load at a device pointer faults, as on a GPU.
 */
static int child_read(void *arg, struct report *r)
{
	static unsigned char buf[PAGE_BYTES];
	struct reader *rd = arg;
	struct kvpool_row_query q = { 0 };
	struct kvpool_arena_view v;
	__u32 pages[ROW_PAGES], i;
	struct kvpool_handle h;
	struct kvpool *kp;
	struct cu cu;
	size_t j;

	KID_CHECK(!cu_load(&cu), r);
	KID_CHECK(!open_pool(rd->id, &kp), r);
	if (rd->xfd >= 0) {
		KID_CHECK(kvpool_import(kp, rd->xfd, &h) == ROW_PAGES, r);
		KID_CHECK(kvpool_row_query(kp, h, pages, ROW_PAGES, &q) ==
			    ROW_PAGES, r);
		KID_CHECK(!memcmp(pages, rd->pages, sizeof(pages)), r);
	}
	KID_CHECK(!kvpool_arena_map(kp, &v), r);
	KID_CHECK(cpu_load_faults(kvpool_page_addr(&v, rd->pages[0])), r);
	for (i = 0; i < ROW_PAGES; i++) {
		KID_CHECK(cu.dtoh(buf, page_ptr(&v, rd->pages[i]),
				    PAGE_BYTES) == CUDA_SUCCESS, r);
		for (j = 0; j < PAGE_BYTES; j++)
			KID_CHECK(buf[j] == expected(rd->pages[i], j), r);
	}
	KID_CHECK(!kvpool_arena_unmap(&v), r);
	kvpool_close(kp);
	return 0;
}

TEST_F(acuda, three_processes)
{
	struct writer w = { .id = self->id };
	struct reader rd = { .id = self->id, .xfd = -1 };
	struct report ra, rb, rc;
	char args[128], out[2048], want[96];
	int sv[2], hold[2], st;
	pid_t a;

	/*
	 * kvpoolctl's process makes the allocations, and is gone: only the
	 * pool's hold on the GPU's node keeps the GPU, and them, alive.
	 */
	snprintf(args, sizeof(args),
		 "arena create %u --cuda --shared --page-bytes 64K --chunks 2",
		 self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(KVPOOL_ARENA_CUDA, arena_kind(self->id));
	snprintf(args, sizeof(args), "arena show --json %u", self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"kind\": \"cuda\"")) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "\"gpu\": \"%s\"", self->gpu);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"bytes\": 2097152 }")) TH_LOG("%s", out);

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(hold));
	w.sock = sv[1];
	w.hold = hold[0];
	ASSERT_EQ(0, run_child(child_a, &w, &ra, &a));
	close(sv[1]);
	rd.xfd = kvpool_recv_fd(sv[0]);
	ASSERT_LE(0, rd.xfd) TH_LOG("A sent no export file");
	ASSERT_EQ(sizeof(rd.pages), read(sv[0], rd.pages, sizeof(rd.pages)));

	EXPECT_EQ(0, run_child(child_read, &rd, &rb, NULL))
		TH_LOG("B: %s", rb.text);
	close(rd.xfd);
	rd.xfd = -1;

	ASSERT_EQ(0, kill(a, SIGKILL));
	ASSERT_EQ(a, waitpid(a, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		TH_LOG("A: status %#x", st);
	close(ra.fd);
	close(hold[0]);
	close(hold[1]);
	close(sv[0]);
	EXPECT_EQ(0, run_child(child_read, &rd, &rc, NULL))
		TH_LOG("C: %s", rc.text);
}

struct setter {
	unsigned int id;
	int dev;		/* the fake's device to allocate on */
	size_t bytes[2];	/* the two chunks' lengths */
};

/* Make two chunks on @dev with the fake itself and give them to the pool. */
static int child_set(void *arg, struct report *r)
{
	const struct setter *s = arg;
	struct kvpool_arena_chunk c[2] = { 0 };
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = s->dev },
		.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	};
	__typeof__(&cuInit) init;
	__typeof__(&cuMemCreate) create;
	__typeof__(&cuMemExportToShareableHandle) export;
	__typeof__(&cuMemRelease) release;
	CUmemGenericAllocationHandle h;
	void *dl;
	int i;

	dl = dlopen(FAKECUDA, RTLD_NOW | RTLD_LOCAL);
	KID_CHECK(dl, r);
	init = (__typeof__(init))dlsym(dl, "cuInit");
	create = (__typeof__(create))dlsym(dl, "cuMemCreate");
	export = (__typeof__(export))dlsym(dl, "cuMemExportToShareableHandle");
	release = (__typeof__(release))dlsym(dl, "cuMemRelease");
	KID_CHECK(init && create && export && release, r);
	KID_CHECK(init(0) == CUDA_SUCCESS, r);
	for (i = 0; i < 2; i++) {
		KID_CHECK(create(&h, s->bytes[i], &prop, 0) == CUDA_SUCCESS,
			    r);
		KID_CHECK(export(&c[i].fd, h,
				   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
				   0) == CUDA_SUCCESS, r);
		KID_CHECK(release(h) == CUDA_SUCCESS, r);
		c[i].bytes = s->bytes[i];
	}
	KID_CHECK(!kvpool_arena_set(s->id, KVPOOL_ARENA_CUDA, PAGE_BYTES, c,
				      2, NULL), r);
	return 0;
}

/* Map the pool's arena; the exit status is the errno it failed with. */
static int child_map(void *arg, struct report *r)
{
	const unsigned int *id = arg;
	struct kvpool_arena_view v;
	struct kvpool *kp;
	int ret;

	KID_CHECK(!open_pool(*id, &kp), r);
	ret = kvpool_arena_map(kp, &v);
	dprintf(r->fd, "%s", kvpool_arena_error());
	if (!ret)
		kvpool_arena_unmap(&v);
	return -ret;
}

/* Memory of the fake's device 1 in a pool of its device 0: EXDEV. */
TEST_F(acuda, other_device)
{
	struct setter s = { .id = self->id, .dev = 1,
			    .bytes = { 2U << 20, 2U << 20 } };
	struct report r;
	char want[160];
	int held;

	/* No keep-alive holds a GPU the pool has not: the test does. */
	held = hold_gpu(self->dir, 1);
	ASSERT_LE(0, held);
	ASSERT_EQ(0, run_child(child_set, &s, &r, NULL)) TH_LOG("%s", r.text);
	ASSERT_EQ(KVPOOL_ARENA_CUDA, arena_kind(self->id));
	EXPECT_EQ(EXDEV, run_child(child_map, &self->id, &r, NULL))
		TH_LOG("%s", r.text);
	snprintf(want, sizeof(want),
		 "chunk 0 is on CUDA device 1 (%s), the pool's GPU is device 0 (%s)",
		 OTHER_GPU, self->gpu);
	EXPECT_STREQ(want, r.text);
	close(held);
}

/* Chunks of 1 MiB and 3 MiB, against a granularity of 2 MiB: EINVAL. */
TEST_F(acuda, granularity)
{
	struct setter s = { .id = self->id, .dev = 0,
			    .bytes = { 1U << 20, 3U << 20 } };
	struct report r;
	int held;

	/* child_set gives no keep-alive: the test holds the GPU up. */
	held = hold_gpu(self->dir, 0);
	ASSERT_LE(0, held);
	/* The maker's fake allocates in 1 MiB steps; the mapper's in 2. */
	setenv("KVPOOL_FAKECUDA_GRANULARITY", "1048576", 1);
	ASSERT_EQ(0, run_child(child_set, &s, &r, NULL)) TH_LOG("%s", r.text);
	unsetenv("KVPOOL_FAKECUDA_GRANULARITY");
	EXPECT_EQ(EINVAL, run_child(child_map, &self->id, &r, NULL))
		TH_LOG("%s", r.text);
	EXPECT_NE(NULL, strstr(r.text, "chunk 0 (1048576 bytes at 0)"))
		TH_LOG("%s", r.text);
	EXPECT_NE(NULL, strstr(r.text, "granularity, 2097152"))
		TH_LOG("%s", r.text);
	close(held);
}

/*
 * Chunks given without KVPOOL_ARENA_SET_DEVICE by a process that exits,
 * nobody holding the GPU's node: the next context finds the GPU torn
 * down, its memory freed with it, as NVIDIA's driver does with
 * persistence off. The pool's files import nothing: -EIO.
 */
TEST_F(acuda, no_keepalive)
{
	struct setter s = { .id = self->id, .dev = 0,
			    .bytes = { 2U << 20, 2U << 20 } };
	struct report r;

	ASSERT_EQ(0, run_child(child_set, &s, &r, NULL)) TH_LOG("%s", r.text);
	ASSERT_EQ(KVPOOL_ARENA_CUDA, arena_kind(self->id));
	EXPECT_EQ(EIO, run_child(child_map, &self->id, &r, NULL))
		TH_LOG("%s", r.text);
	EXPECT_STREQ("cuMemImportFromShareableHandle: CUDA_ERROR_INVALID_VALUE: invalid argument",
		     r.text);
}

TEST_HARNESS_MAIN
