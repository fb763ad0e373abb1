// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakecuda_test: the fake CUDA driver's own test. The fake stands in for
 * the GPU in the CUDA arena tests, so what they rely on is checked here:
 * an allocation exported in one process and imported in another through a
 * descriptor passed over a Unix socket, memory shared both ways through
 * the mappings, the allocation's device reported to the importer, faults
 * at device pointers, the errors a caller's mistakes get, and
 * CUDA_ERROR_NO_DEVICE without KVPOOL_FAKECUDA_GPUS. Then one test per
 * rule of fakecuda.c's header: teardown of a GPU nobody holds (rule 1),
 * memory freed with its last reference and counted free again (2),
 * unexport and replace through a shared export file (4), memsets that
 * wait for a synchronize (5).
 *
 * Every CUDA process is forked from one that never initialised CUDA (the
 * test's own, which stands in for the kernel: it holds export files and,
 * for the keep-alive, an open file of the GPU's FIFO).
 *
 * Usage: fakecuda_test PATH/libcuda.so.1
 * Prints "PASS name" or "FAIL name" per check (the forked processes'
 * too); exits non-zero if any check failed.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <kvpool.h>

#include "cu_entry.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void *fk_lib;
static int npass, nfail;

static void check(const char *what, int ok)
{
	printf("%s %s\n", ok ? "PASS" : "FAIL", what);
	fflush(stdout);
	if (ok)
		npass++;
	else
		nfail++;
}

static const char *ename(CUresult r)
{
	const char *s = NULL;

	p_cuGetErrorName(r, &s);
	return s ? s : "?";
}

/* check() that r is want, naming what came instead. */
static void check_rc(const char *what, CUresult r, CUresult want)
{
	char buf[256];

	if (r == want)
		snprintf(buf, sizeof(buf), "%s", what);
	else
		snprintf(buf, sizeof(buf), "%s (got %s, want %s)", what,
			 ename(r), ename(want));
	check(buf, r == want);
}

static int sync_byte(int sock, char c)
{
	return write(sock, &c, 1) == 1 ? 0 : -1;
}

static char wait_byte(int sock)
{
	char c = 0;

	return read(sock, &c, 1) == 1 ? c : 0;
}

static CUmemAllocationProp dev_prop(int dev, int posix)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = posix ?
		CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR :
		CU_MEM_HANDLE_TYPE_NONE;
	return p;
}

static CUmemAccessDesc rw_on(int dev)
{
	CUmemAccessDesc d;

	memset(&d, 0, sizeof(d));
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = dev;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return d;
}

static unsigned char pattern(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + seed + (i >> 12));
}

/* Whether a read of p in a forked child dies of SIGSEGV. */
static int read_faults(const volatile unsigned char *p)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		(void)*p;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

/* Whether a write of p in a forked child dies of SIGSEGV. */
static int write_faults(volatile unsigned char *p)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		*p = 1;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

/*
 * A pty index is reused once its last descriptor is closed, while the
 * registry still names it: the new pty must not pass for the old one.
 */
static void stale_pty(CUmemGenericAllocationHandle h)
{
	CUmemGenericAllocationHandle h2;
	unsigned int a = 1, b = 2;
	int fd, pty;

	if (p_cuMemExportToShareableHandle(&fd, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)) {
		check("a second export", 0);
		return;
	}
	ioctl(fd, TIOCGPTN, &a);
	close(fd);
	pty = open("/dev/ptmx", O_RDWR | O_NOCTTY);
	ioctl(pty, TIOCGPTN, &b);
	check("a new pty takes the closed export's index", a == b);
	check_rc("importing it: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)pty,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		 CUDA_ERROR_INVALID_VALUE);
	close(pty);
}

/* Before cuInit, and with no GPUs configured. */
static void test_no_device(void)
{
	int n = -1;

	check_rc("calls before cuInit: CUDA_ERROR_NOT_INITIALIZED",
		 p_cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	unsetenv("KVPOOL_FAKECUDA_GPUS");
	check_rc("no KVPOOL_FAKECUDA_GPUS: cuInit gives CUDA_ERROR_NO_DEVICE",
		 p_cuInit(0), CUDA_ERROR_NO_DEVICE);
	check_rc("after a failed cuInit, calls give its error",
		 p_cuDeviceGetCount(&n), CUDA_ERROR_NO_DEVICE);
}

/*
 * The importer: a process that never saw the allocation, given only the
 * descriptor; it must find it on device 1, read the exporter's pattern,
 * and write its own for the exporter to read.
 */
static void importer(int sock, size_t size)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc = rw_on(1);
	CUdeviceptr va;
	CUcontext ctx;
	unsigned char *buf = malloc(size);
	size_t i, bad = 0;
	int fd, other, devnull;

	check_rc("child: cuInit", p_cuInit(0), CUDA_SUCCESS);
	check_rc("child: primary context",
		 p_cuDevicePrimaryCtxRetain(&ctx, 1), CUDA_SUCCESS);
	p_cuCtxSetCurrent(ctx);
	fd = kvpool_recv_fd(sock);
	check("child: received the exported fd over SCM_RIGHTS", fd >= 0);

	devnull = open("/dev/null", O_RDWR);
	check_rc("child: importing a non-pty fd: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemImportFromShareableHandle(&h,
			(void *)(intptr_t)devnull,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		 CUDA_ERROR_INVALID_VALUE);
	close(devnull);
	other = open("/dev/ptmx", O_RDWR | O_NOCTTY);
	check_rc("child: importing a pty nobody exported: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemImportFromShareableHandle(&h,
			(void *)(intptr_t)other,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		 CUDA_ERROR_INVALID_VALUE);
	close(other);

	check_rc("child: import the received fd",
		 p_cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		 CUDA_SUCCESS);
	close(fd);
	memset(&prop, 0, sizeof(prop));
	check_rc("child: allocation properties",
		 p_cuMemGetAllocationPropertiesFromHandle(&prop, h),
		 CUDA_SUCCESS);
	/* A caller expecting device 0 must be able to tell it is not. */
	check("child: the import reports device 1, not 0 (mismatch seen)",
	      prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	      prop.location.id == 1);
	check_rc("child: reserve", p_cuMemAddressReserve(&va, size, 0, 0, 0),
		 CUDA_SUCCESS);
	check_rc("child: map", p_cuMemMap(va, size, 0, h, 0), CUDA_SUCCESS);
	check_rc("child: set access",
		 p_cuMemSetAccess(va, size, &acc, 1), CUDA_SUCCESS);
	check_rc("child: release the handle",
		 p_cuMemRelease(h), CUDA_SUCCESS);
	check_rc("child: DtoH", p_cuMemcpyDtoH(buf, va, size), CUDA_SUCCESS);
	for (i = 0; i < size; i++)
		bad += buf[i] != (i < 4096 ? 0x5a : pattern(i, 7));
	check("child: reads the parent's pattern and memset", bad == 0);
	for (i = 0; i < size; i++)
		buf[i] = pattern(i, 99);
	check_rc("child: HtoD its own pattern",
		 p_cuMemcpyHtoD(va, buf, size), CUDA_SUCCESS);
	check_rc("child: synchronize", p_cuCtxSynchronize(), CUDA_SUCCESS);
	sync_byte(sock, 'w');
	free(buf);
}

static void test_share(void)
{
	const char *ids = "0000:00:10.0,00:1b.0";
	CUmemGenericAllocationHandle h, h2, hnp;
	CUmemAllocationProp prop = dev_prop(1, 1), nprop = dev_prop(1, 0);
	CUmemAccessDesc acc = rw_on(1);
	CUresult (*htod_v1)(unsigned int, const void *, unsigned int);
	CUdeviceptr va, va2;
	CUcontext ctx, cur;
	unsigned char *buf;
	char bus[32];
	size_t gran = 0, size, i, bad, fr, tot;
	struct stat st;
	int sv[2], n = 0, fd, xfd, status;
	CUdevice dev = -1;
	pid_t pid;

	setenv("KVPOOL_FAKECUDA_GPUS", ids, 1);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		check("socketpair", 0);
		return;
	}
	/* Fork before cuInit: CUDA does not survive fork(). */
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		if (wait_byte(sv[1]) == 's') {
			size_t sz;

			if (read(sv[1], &sz, sizeof(sz)) == sizeof(sz))
				importer(sv[1], sz);
		}
		fflush(stdout);
		_exit(nfail ? 1 : 0);
	}
	close(sv[1]);

	check_rc("cuInit", p_cuInit(0), CUDA_SUCCESS);
	check("two devices", p_cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 2);
	check("by bus id, domain given, either case",
	      p_cuDeviceGetByPCIBusId(&dev, "0000:00:1B.0") == CUDA_SUCCESS &&
	      dev == 1);
	check("by bus id, no domain",
	      p_cuDeviceGetByPCIBusId(&dev, "00:10.0") == CUDA_SUCCESS &&
	      dev == 0);
	check_rc("unknown bus id: CUDA_ERROR_INVALID_DEVICE",
		 p_cuDeviceGetByPCIBusId(&dev, "0000:00:12.0"),
		 CUDA_ERROR_INVALID_DEVICE);
	check("bus id of device 1",
	      p_cuDeviceGetPCIBusId(bus, sizeof(bus), 1) == CUDA_SUCCESS &&
	      !strcasecmp(bus, "0000:00:1b.0"));
	check("device 1 supports VMM and POSIX fd handles",
	      p_cuDeviceGetAttribute(&n,
		CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1) ==
	      CUDA_SUCCESS && n == 1 &&
	      p_cuDeviceGetAttribute(&n,
		CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
		1) == CUDA_SUCCESS && n == 1);
	check_rc("device 2 does not exist",
		 p_cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
	check_rc("granularity",
		 p_cuMemGetAllocationGranularity(&gran, &prop,
			CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
	check("granularity is 2 MiB by default", gran == 2u << 20);
	size = 2 * gran;
	buf = malloc(size);

	check_rc("cuMemCreate of a size not a multiple of the granularity",
		 p_cuMemCreate(&h, gran + 4096, &prop, 0),
		 CUDA_ERROR_INVALID_VALUE);
	check_rc("cuMemCreate on device 1",
		 p_cuMemCreate(&h, size, &prop, 0), CUDA_SUCCESS);
	check_rc("export without POSIX_FILE_DESCRIPTOR requested",
		 p_cuMemCreate(&hnp, gran, &nprop, 0) ?:
		 p_cuMemExportToShareableHandle(&xfd, hnp,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
		 CUDA_ERROR_INVALID_VALUE);
	p_cuMemRelease(hnp);
	check_rc("export",
		 p_cuMemExportToShareableHandle(&fd, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
		 CUDA_SUCCESS);
	check("the exported fd is a character device",
	      !fstat(fd, &st) && S_ISCHR(st.st_mode));
	stale_pty(h);
	check_rc("invalid handle: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemRelease(h + 1000), CUDA_ERROR_INVALID_VALUE);

	check_rc("reserve", p_cuMemAddressReserve(&va, size, 0, 0, 0),
		 CUDA_SUCCESS);
	check("the reservation is aligned to the granularity", va % gran == 0);
	check_rc("map at a non-zero offset",
		 p_cuMemMap(va, gran, gran, h, 0), CUDA_ERROR_INVALID_VALUE);
	check_rc("map bigger than the allocation",
		 p_cuMemMap(va, 2 * size, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	check_rc("map outside any reservation",
		 p_cuMemMap(va + size, size, 0, h, 0),
		 CUDA_ERROR_INVALID_VALUE);
	check_rc("map", p_cuMemMap(va, size, 0, h, 0), CUDA_SUCCESS);
	check_rc("map over a mapping",
		 p_cuMemMap(va, size, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	check("memory faults before cuMemSetAccess",
	      read_faults((unsigned char *)(uintptr_t)va));

	check_rc("HtoD without a context: CUDA_ERROR_INVALID_CONTEXT",
		 p_cuMemcpyHtoD(va, buf, 1), CUDA_ERROR_INVALID_CONTEXT);
	check_rc("primary context",
		 p_cuDevicePrimaryCtxRetain(&ctx, 1), CUDA_SUCCESS);
	check_rc("set current", p_cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	check("get current",
	      p_cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx);
	check_rc("HtoD before cuMemSetAccess: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemcpyHtoD(va, buf, 1), CUDA_ERROR_INVALID_VALUE);
	check_rc("set access", p_cuMemSetAccess(va, size, &acc, 1),
		 CUDA_SUCCESS);
	for (i = 0; i < size; i++)
		buf[i] = pattern(i, 7);
	check_rc("HtoD", p_cuMemcpyHtoD(va, buf, size), CUDA_SUCCESS);
	check_rc("memset the first 4 KiB",
		 p_cuMemsetD8(va, 0x5a, 4096), CUDA_SUCCESS);
	/* Queued, but a later copy of the process runs after it. */
	check_rc("DtoH after the memset", p_cuMemcpyDtoH(buf, va, 8192),
		 CUDA_SUCCESS);
	for (i = 0, bad = 0; i < 8192; i++)
		bad += buf[i] != (i < 4096 ? 0x5a : pattern(i, 7));
	check("stream order: the DtoH sees the memset before it", bad == 0);
	check_rc("HtoD past the mapping: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemcpyHtoD(va + size - 1, buf, 2),
		 CUDA_ERROR_INVALID_VALUE);
	htod_v1 = (CUresult (*)(unsigned int, const void *, unsigned int))
		dlsym(fk_lib, "cuMemcpyHtoD");
	check("the legacy cuMemcpyHtoD (32-bit pointers) is no _v2",
	      htod_v1 && htod_v1((unsigned int)va, buf, 1) ==
	      CUDA_ERROR_INVALID_VALUE);
	check_rc("release the handle while mapped",
		 p_cuMemRelease(h), CUDA_SUCCESS);
	check("the mapping still works after cuMemRelease",
	      p_cuMemcpyDtoH(buf, va + 5000, 1) == CUDA_SUCCESS &&
	      buf[0] == pattern(5000, 7));
	/* Device memory: the CPU never reaches it, access or not. */
	check("a CPU load of a mapped, accessible device pointer faults",
	      read_faults((unsigned char *)(uintptr_t)(va + 5000)));
	check("a CPU store to it faults",
	      write_faults((unsigned char *)(uintptr_t)(va + 5000)));

	/* CUDA in a child forked after cuInit is not usable. */
	pid_t fpid = fork();

	if (fpid == 0)
		_exit(p_cuInit(0) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1);
	check("a child forked after cuInit gets CUDA_ERROR_NOT_INITIALIZED",
	      waitpid(fpid, &status, 0) == fpid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);

	sync_byte(sv[0], 's');
	if (write(sv[0], &size, sizeof(size)) != sizeof(size) ||
	    kvpool_send_fd(sv[0], fd))
		check("send the fd to the child", 0);
	close(fd);
	check("the child imported, read and wrote", wait_byte(sv[0]) == 'w');
	check_rc("DtoH", p_cuMemcpyDtoH(buf, va, size), CUDA_SUCCESS);
	for (i = 0, bad = 0; i < size; i++)
		bad += buf[i] != pattern(i, 99);
	check("the parent reads the child's pattern", bad == 0);
	check("the child passed its checks",
	      waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);

	check_rc("unmap part of a mapping",
		 p_cuMemUnmap(va, gran), CUDA_ERROR_INVALID_VALUE);
	check_rc("unmap", p_cuMemUnmap(va, size), CUDA_SUCCESS);
	check_rc("DtoH after unmap: CUDA_ERROR_INVALID_VALUE",
		 p_cuMemcpyDtoH(buf, va, 1), CUDA_ERROR_INVALID_VALUE);
	check_rc("free the reservation",
		 p_cuMemAddressFree(va, size), CUDA_SUCCESS);
	check_rc("a second reservation",
		 p_cuMemAddressReserve(&va2, gran, 0, 0, 0) ?:
		 p_cuMemAddressFree(va2, gran), CUDA_SUCCESS);
	check_rc("cuMemCreate on a device that does not exist",
		 (prop.location.id = 2, p_cuMemCreate(&h2, gran, &prop, 0)),
		 CUDA_ERROR_INVALID_DEVICE);
	check_rc("release the primary context",
		 p_cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
	check_rc("synchronize in a released context",
		 p_cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	check_rc("cuMemGetInfo in a released context",
		 p_cuMemGetInfo(&fr, &tot), CUDA_ERROR_INVALID_CONTEXT);
	free(buf);
}

/*
 * The rules' tests. Each runs CUDA in workers, forked from the test's
 * process, which never initialises CUDA: it plays the kernel, holding
 * export files and (for the keep-alive) an open file of the GPU's FIFO.
 * A worker gets a job, maybe an fd, and answers with a reply.
 */
enum {
	OP_MAKE, OP_READ, OP_WATCH, OP_MEMSET, OP_REPLACE, OP_UNEXPORT,
	OP_GC, OP_HOLD, OP_INFO,
};

struct job {
	int op;
	unsigned int seed;	/* the pattern made, or expected */
	int byte;		/* a memset's byte; OP_MAKE: how many exports */
	int has_fd;
};

/* @cu: the CUDA error a step got; @what: what it read or counted. */
struct reply {
	int cu;
	int what;
};

enum { SAW_OTHER, SAW_PATTERN, SAW_BYTE };	/* OP_READ/OP_WATCH's what */

#define GRAN	(2u << 20)	/* the default granularity, one chunk */

static CUresult (*p_fakecuda_unexport)(int);
static CUresult (*p_fakecuda_export_replace)(int,
					      CUmemGenericAllocationHandle);
static int (*p_fakecuda_gc)(void);
static char reg[256];	/* the present test's registry */

static void reply(int sock, int cu, int what)
{
	struct reply r = { cu, what };

	if (write(sock, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

/* cuInit, device 0's primary context current. */
static CUresult w_init(void)
{
	CUcontext ctx;
	CUresult r = p_cuInit(0);

	if (!r)
		r = p_cuDevicePrimaryCtxRetain(&ctx, 0);
	if (!r)
		r = p_cuCtxSetCurrent(ctx);
	return r;
}

/* @h mapped read-write at a new reservation, *va. */
static CUresult w_map(CUmemGenericAllocationHandle h, CUdeviceptr *va)
{
	CUmemAccessDesc acc = rw_on(0);
	CUresult r = p_cuMemAddressReserve(va, GRAN, 0, 0, 0);

	if (!r)
		r = p_cuMemMap(*va, GRAN, 0, h, 0);
	if (!r)
		r = p_cuMemSetAccess(*va, GRAN, &acc, 1);
	return r;
}

/* What the mapping at @va holds: job's pattern, its byte, or else. */
static int w_saw(CUdeviceptr va, const struct job *j, CUresult *r)
{
	static unsigned char buf[GRAN];
	size_t i, pat = 0, byte = 0;

	*r = p_cuMemcpyDtoH(buf, va, GRAN);
	for (i = 0; i < GRAN; i++) {
		pat += buf[i] == pattern(i, j->seed);
		byte += buf[i] == (unsigned char)j->byte;
	}
	return pat == GRAN ? SAW_PATTERN : byte == GRAN ? SAW_BYTE :
	       SAW_OTHER;
}

/* A new chunk holding pattern @seed; mapped at *va if va. */
static CUresult w_make(unsigned int seed, CUmemGenericAllocationHandle *h,
		       CUdeviceptr *va)
{
	static unsigned char buf[GRAN];
	CUmemAllocationProp prop = dev_prop(0, 1);
	CUdeviceptr v;
	size_t i;
	CUresult r = p_cuMemCreate(h, GRAN, &prop, 0);

	for (i = 0; i < GRAN; i++)
		buf[i] = pattern(i, seed);
	if (!r)
		r = w_map(*h, &v);
	if (!r)
		r = p_cuMemcpyHtoD(v, buf, GRAN);
	if (!r)
		r = p_cuCtxSynchronize();
	if (!r && !va)
		r = p_cuMemUnmap(v, GRAN) ?: p_cuMemAddressFree(v, GRAN);
	if (va)
		*va = v;
	return r;
}

static void worker(int sock)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	struct job j;
	CUresult r;
	int fd = -1, fd2 = -1, n;
	char c;

	if (read(sock, &j, sizeof(j)) != sizeof(j))
		_exit(3);
	if (j.has_fd)
		fd = kvpool_recv_fd(sock);
	r = j.op == OP_GC || j.op == OP_UNEXPORT ? p_cuInit(0) : w_init();
	if (r) {
		reply(sock, r, 0);
		_exit(0);
	}
	switch (j.op) {
	case OP_MAKE:
		/* Exports, then lets go of everything but them. */
		r = w_make(j.seed, &h, NULL);
		if (!r)
			r = p_cuMemExportToShareableHandle(&fd, h,
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
		if (!r && j.byte == 2)
			r = p_cuMemExportToShareableHandle(&fd2, h,
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
		if (!r)
			r = p_cuMemRelease(h) ?: p_cuCtxSetCurrent(NULL) ?:
			    p_cuDevicePrimaryCtxRelease(0);
		reply(sock, r, 0);
		if (!r && (kvpool_send_fd(sock, fd) ||
			   (j.byte == 2 && kvpool_send_fd(sock, fd2))))
			_exit(3);
		/* Alive, holding nothing, until told to go. */
		wait_byte(sock);
		break;
	case OP_READ:
	case OP_WATCH:
		r = p_cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
		close(fd);
		if (!r)
			r = w_map(h, &va);
		/* The mapping alone holds the memory from here. */
		if (!r)
			r = p_cuMemRelease(h);
		if (r || j.op == OP_READ) {
			n = r ? 0 : w_saw(va, &j, &r);
			reply(sock, r, n);
			break;
		}
		reply(sock, 0, 0);
		while ((c = wait_byte(sock)) == 'r') {
			n = w_saw(va, &j, &r);
			reply(sock, r, n);
		}
		break;
	case OP_MEMSET:
		r = p_cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
		close(fd);
		if (!r)
			r = w_map(h, &va);
		if (!r)
			r = p_cuMemsetD8(va, (unsigned char)j.byte, GRAN);
		reply(sock, r, 0);
		/* 's': synchronise; anything else: exit with it queued. */
		while (!r && wait_byte(sock) == 's')
			reply(sock, p_cuCtxSynchronize(), 0);
		break;
	case OP_REPLACE:
		r = w_make(j.seed, &h, NULL);
		if (!r)
			r = p_fakecuda_export_replace(fd, h);
		reply(sock, r, 0);
		break;
	case OP_UNEXPORT:
		reply(sock, p_fakecuda_unexport(fd), 0);
		break;
	case OP_GC:
		reply(sock, 0, p_fakecuda_gc());
		break;
	case OP_HOLD:
		r = w_make(j.seed, &h, NULL);
		reply(sock, r, 0);
		wait_byte(sock);
		break;
	case OP_INFO: {
		size_t fr = 0, tot = 0;

		/* What is in use on GPU 0, in MiB. */
		r = p_cuMemGetInfo(&fr, &tot);
		reply(sock, r, r ? -1 : (int)((tot - fr) >> 20));
		break;
	}
	}
	_exit(0);
}

/* A worker on job @op, given @fd if not -1; its socket in *sock. */
static pid_t start(int op, unsigned int seed, int byte, int fd, int *sock)
{
	struct job j = { op, seed, byte, fd >= 0 };
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		worker(sv[1]);
	}
	close(sv[1]);
	*sock = sv[0];
	if (pid < 0 || write(sv[0], &j, sizeof(j)) != sizeof(j) ||
	    (fd >= 0 && kvpool_send_fd(sv[0], fd))) {
		close(sv[0]);
		return -1;
	}
	return pid;
}

static struct reply answer(int sock)
{
	struct reply r = { CUDA_ERROR_UNKNOWN, -1 };

	if (read(sock, &r, sizeof(r)) != sizeof(r))
		r.cu = CUDA_ERROR_UNKNOWN;
	return r;
}

/* Tells the worker to go and reaps it; whether it exited 0. */
static int finish(pid_t pid, int sock)
{
	int st;

	sync_byte(sock, 'q');
	close(sock);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* One job, done: its reply. */
static struct reply run(int op, unsigned int seed, int byte, int fd)
{
	struct reply r = { CUDA_ERROR_UNKNOWN, -1 };
	int sock;
	pid_t pid = start(op, seed, byte, fd, &sock);

	if (pid > 0) {
		r = answer(sock);
		if (!finish(pid, sock))
			r.cu = CUDA_ERROR_UNKNOWN;
	}
	return r;
}

static int gpu_held(void);

/*
 * OP_MAKE: a chunk of pattern @seed exported (twice if fd2); the worker
 * exits. With @probe, while it lives on holding nothing, whether it still
 * holds the GPU's FIFO (nobody else does).
 */
static int make(unsigned int seed, int *fd, int *fd2, int probe)
{
	struct reply r;
	int sock;
	pid_t pid = start(OP_MAKE, seed, fd2 ? 2 : 1, -1, &sock);

	*fd = -1;
	if (pid < 0)
		return -1;
	r = answer(sock);
	if (!r.cu) {
		*fd = kvpool_recv_fd(sock);
		if (fd2)
			*fd2 = kvpool_recv_fd(sock);
	}
	check_rc("a worker makes and exports a chunk, then lets it go",
		 r.cu, CUDA_SUCCESS);
	if (probe)
		check("a worker that let go of its context and memory holds no FIFO",
		      gpu_held() == 0);
	return finish(pid, sock) && *fd >= 0 ? 0 : -1;
}

static int gc_count(void)
{
	return run(OP_GC, 0, 0, -1).what;
}

/* What cuMemGetInfo() says is in use on GPU 0, in MiB; -1 on an error. */
static int used_mib(void)
{
	return run(OP_INFO, 0, 0, -1).what;
}

/* Whether the FIFO of GPU 0 has an open file anywhere (rule 1's probe). */
static int gpu_held(void)
{
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "%s/nvidia0", reg);
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 1 : errno == ENXIO ? 0 : -1;
}

/* The keep-alive the kernel holds: an open file of GPU 0's FIFO. */
static int keep_alive(void)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/nvidia0", reg);
	if (mkfifo(path, 0600) && errno != EEXIST)
		return -1;
	return open(path, O_RDWR | O_CLOEXEC);
}

/* How many backing files the registry has. */
static int backing_files(void)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(reg);

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, "alloc-", 6) &&
		     !strchr(de->d_name, '.');
	closedir(d);
	return n;
}

static void check_reply(const char *what, struct reply r, int cu, int saw)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s (got %s, %d)", what, ename(r.cu),
		 r.what);
	check(buf, r.cu == cu && (saw < 0 || r.what == saw));
}

static void use_registry(const char *top, const char *name)
{
	snprintf(reg, sizeof(reg), "%s/%s", top, name);
	mkdir(reg, 0700);
	setenv("KVPOOL_FAKECUDA_DIR", reg, 1);
	setenv("KVPOOL_FAKECUDA_GPUS", "0000:00:10.0", 1);
}

/* Rule 1: the device node, and teardown when nobody holds it. */
static void test_teardown(const char *top)
{
	char path[400], text[1024] = "";
	struct stat st;
	int fd = -1, kfd, sock, n;
	pid_t pid;
	FILE *f;

	use_registry(top, "teardown");
	pid = start(OP_HOLD, 20, 0, -1, &sock);
	check_reply("a worker holds a context and memory on GPU 0",
		    answer(sock), CUDA_SUCCESS, -1);
	snprintf(path, sizeof(path), "%s/nvidia0", reg);
	check("the registry has the FIFO nvidia0",
	      !stat(path, &st) && S_ISFIFO(st.st_mode) &&
	      (st.st_mode & 0777) == 0600);
	snprintf(path, sizeof(path), "%s/gpus/0000:00:10.0/information", reg);
	f = fopen(path, "re");
	n = f ? (int)fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f)
		fclose(f);
	text[n > 0 ? n : 0] = '\0';
	check("gpus/0000:00:10.0/information has NVIDIA's lines",
	      strstr(text, "Model: \t\t ") &&
	      strstr(text, "\nBus Location: \t 0000:00:10.0\n") &&
	      strstr(text, "\nDevice Minor: \t 0\n"));
	check("its FIFO is held while it has them", gpu_held() == 1);
	kill(pid, SIGKILL);
	close(sock);
	waitpid(pid, NULL, 0);
	check("and not once it is killed", gpu_held() == 0);

	/* Made, exported, let go: the export file alone is held. */
	if (make(21, &fd, NULL, 1))
		return;
	check_reply("nobody held the GPU: the next context tore it down, the import fails",
		    run(OP_READ, 21, 0, fd), CUDA_ERROR_INVALID_VALUE, -1);
	check("the teardown freed the chunk though its export is open",
	      gc_count() == 0 && backing_files() == 0);
	close(fd);

	/* The same with the kernel's keep-alive: the GPU stays up. */
	kfd = keep_alive();
	check("a keep-alive file of the FIFO", kfd >= 0);
	if (make(22, &fd, NULL, 0))
		return;
	check_reply("with the FIFO held (the kernel's keep-alive) the import works",
		    run(OP_READ, 22, 0, fd), CUDA_SUCCESS, SAW_PATTERN);
	close(fd);
	close(kfd);
}

/* Rule 2: an allocation lives while a handle, mapping or export does. */
static void test_free(const char *top)
{
	siginfo_t si;
	int fd, kfd, sock;
	pid_t pid;

	use_registry(top, "free");
	kfd = keep_alive();
	check("a keep-alive file of the FIFO", kfd >= 0);
	check("cuMemGetInfo: nothing in use before a chunk", used_mib() == 0);
	if (make(11, &fd, NULL, 0))
		return;
	check_reply("creator gone, its export file held: the import reads its bytes",
		    run(OP_READ, 11, 0, fd), CUDA_SUCCESS, SAW_PATTERN);
	check("fakecuda_gc: one allocation lives", gc_count() == 1);
	check("cuMemGetInfo: its export file alone keeps its 2 MiB in use",
	      used_mib() == 2);
	close(fd);
	check("cuMemGetInfo: the export closed, the 2 MiB are free again",
	      used_mib() == 0);
	check("nobody holds it: after gc none lives, its backing file gone",
	      gc_count() == 0 && backing_files() == 0);

	/* A mapping alone: the watcher released its handle. */
	if (make(12, &fd, NULL, 0))
		return;
	pid = start(OP_WATCH, 12, 0, fd, &sock);
	check_reply("a worker maps the chunk and releases its handle",
		    answer(sock), CUDA_SUCCESS, -1);
	close(fd);
	check("its mapping alone keeps the chunk", gc_count() == 1);
	check("cuMemGetInfo: and its 2 MiB in use", used_mib() == 2);
	sync_byte(sock, 'r');
	check_reply("and reads through it", answer(sock), CUDA_SUCCESS,
		    SAW_PATTERN);
	check("the worker exits", finish(pid, sock));
	check("with it the chunk goes", gc_count() == 0);

	/* A holder killed; counted as gone while still a zombie. */
	pid = start(OP_HOLD, 13, 0, -1, &sock);
	check_reply("a worker holds a handle", answer(sock), CUDA_SUCCESS,
		    -1);
	check("its handle keeps the chunk", gc_count() == 1);
	kill(pid, SIGKILL);
	close(sock);
	memset(&si, 0, sizeof(si));
	waitid(P_PID, pid, &si, WEXITED | WNOWAIT);
	check("killed, a zombie not reaped, it holds nothing",
	      gc_count() == 0 && backing_files() == 0);
	waitpid(pid, NULL, 0);
	close(kfd);
}

/* Rule 4: unexport and replace act on an export file, not a chunk. */
static void test_unexport(const char *top)
{
	int a1, a2 = -1, d, kfd, null;

	use_registry(top, "unexport");
	kfd = keep_alive();
	check("a keep-alive file of the FIFO", kfd >= 0);
	if (make(31, &a1, &a2, 0))
		return;
	d = dup(a1);	/* another descriptor of the same open file */
	check_reply("a client replaces what its export file exports",
		    run(OP_REPLACE, 32, 0, a1), CUDA_SUCCESS, -1);
	check_reply("another process's dup of that file imports the replacement",
		    run(OP_READ, 32, 0, d), CUDA_SUCCESS, SAW_PATTERN);
	check_reply("a second export of the chunk still imports the chunk",
		    run(OP_READ, 31, 0, a2), CUDA_SUCCESS, SAW_PATTERN);
	check_reply("a client unexports its export file",
		    run(OP_UNEXPORT, 0, 0, a1), CUDA_SUCCESS, -1);
	check_reply("an import through a dup of it fails",
		    run(OP_READ, 31, 0, d), CUDA_ERROR_INVALID_VALUE, -1);
	check_reply("the second export still imports the chunk",
		    run(OP_READ, 31, 0, a2), CUDA_SUCCESS, SAW_PATTERN);
	check("the replacement, exported by nothing now, is freed",
	      gc_count() == 1 && backing_files() == 1);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	check_reply("unexport of a file that is no export: CUDA_ERROR_INVALID_VALUE",
		    run(OP_UNEXPORT, 0, 0, null), CUDA_ERROR_INVALID_VALUE, -1);
	close(null);
	close(a1);
	close(a2);
	close(d);
	close(kfd);
}

/* Rule 5: a memset lands at a synchronize, not before. */
static void test_memset(const char *top)
{
	int fd, kfd, rs, ws, ws2;
	pid_t rp, wp, wp2;

	use_registry(top, "memset");
	kfd = keep_alive();
	check("a keep-alive file of the FIFO", kfd >= 0);
	if (make(41, &fd, NULL, 0))
		return;
	rp = start(OP_WATCH, 41, 0xa5, fd, &rs);
	check_reply("a reader maps the chunk", answer(rs), CUDA_SUCCESS, -1);
	wp = start(OP_MEMSET, 41, 0xa5, fd, &ws);
	check_reply("a writer queues a memset of it", answer(ws),
		    CUDA_SUCCESS, -1);
	sync_byte(rs, 'r');
	check_reply("the reader does not see a memset not synchronised",
		    answer(rs), CUDA_SUCCESS, SAW_PATTERN);
	sync_byte(ws, 's');
	check_reply("the writer synchronises", answer(ws), CUDA_SUCCESS, -1);
	sync_byte(rs, 'r');
	check_reply("then the reader sees it", answer(rs), CUDA_SUCCESS,
		    SAW_BYTE);
	check("the writer exits", finish(wp, ws));

	wp2 = start(OP_MEMSET, 41, 0x11, fd, &ws2);
	check_reply("a writer queues a memset and exits unsynchronised",
		    answer(ws2), CUDA_SUCCESS, -1);
	check("it exits", finish(wp2, ws2));
	sync_byte(rs, 'r');
	check_reply("work queued at exit is dropped", answer(rs),
		    CUDA_SUCCESS, SAW_BYTE);
	check("the reader exits", finish(rp, rs));
	close(fd);
	close(kfd);
}

/* Runs @fn in a process of its own, as the fake's state is per process. */
static void part(void (*fn)(const char *), const char *top)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		fn(top);
		fflush(stdout);
		_exit(nfail ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		if (pid > 0 && WIFSIGNALED(st))
			printf("FAIL a part died of signal %d\n", WTERMSIG(st));
		nfail++;
	}
}

static void no_device(const char *top)
{
	(void)top;
	test_no_device();
}

static void share(const char *top)
{
	char dir[300];

	snprintf(dir, sizeof(dir), "%s/share", top);
	mkdir(dir, 0700);
	setenv("KVPOOL_FAKECUDA_DIR", dir, 1);
	test_share();
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/fakecuda-test.XXXXXX", cmd[64];
	const char *missing;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH/libcuda.so.1\n", argv[0]);
		return 2;
	}
	fk_lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!fk_lib) {
		fprintf(stderr, "fakecuda_test: %s\n", dlerror());
		return 2;
	}
	missing = cu_entry_load(fk_lib);
	p_fakecuda_unexport = (__typeof__(p_fakecuda_unexport))
		dlsym(fk_lib, "fakecuda_unexport");
	p_fakecuda_export_replace = (__typeof__(p_fakecuda_export_replace))
		dlsym(fk_lib, "fakecuda_export_replace");
	p_fakecuda_gc = (__typeof__(p_fakecuda_gc))dlsym(fk_lib, "fakecuda_gc");
	if (!missing && !p_fakecuda_unexport)
		missing = "fakecuda_unexport";
	if (!missing && !p_fakecuda_export_replace)
		missing = "fakecuda_export_replace";
	if (!missing && !p_fakecuda_gc)
		missing = "fakecuda_gc";
	if (missing) {
		printf("FAIL the fake exports %s\n", missing);
		return 1;
	}
	if (!mkdtemp(dir)) {
		perror("fakecuda_test: mkdtemp");
		return 2;
	}
	unsetenv("KVPOOL_FAKECUDA_GRANULARITY");
	/* A worker that is done may be gone before it is told to go. */
	signal(SIGPIPE, SIG_IGN);

	/*
	 * This process never initialises CUDA: each part forks its CUDA
	 * processes from one that has not, and each has a registry.
	 */
	part(no_device, dir);
	part(share, dir);
	part(test_teardown, dir);
	part(test_free, dir);
	part(test_unexport, dir);
	part(test_memset, dir);

	/* Each test's registry is its own; the fake freed what it held. */
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fakecuda_test: could not remove %s\n", dir);
	return nfail ? 1 : 0;
}
