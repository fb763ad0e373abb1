// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakecuda_test: the fake CUDA driver's own test. The fake stands in for
 * the GPU in the CUDA arena tests, so what they rely on is checked here:
 * an allocation exported in one process and imported in another through a
 * descriptor passed over a Unix socket, memory shared both ways through
 * the mappings, the allocation's device reported to the importer, faults
 * before cuMemSetAccess(), the errors a caller's mistakes get, and
 * CUDA_ERROR_NO_DEVICE without KVPOOL_FAKECUDA_GPUS.
 *
 * Usage: fakecuda_test PATH/libcuda.so.1
 * Prints "PASS name" or "FAIL name" per check (the forked processes'
 * too); exits non-zero if any check failed.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <kvpool.h>

#include "cu_entry.h"

#include <dlfcn.h>
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
	size_t gran = 0, size, i, bad;
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
	      ((volatile unsigned char *)(uintptr_t)va)[5000] ==
	      pattern(5000, 7));

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
	free(buf);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/fakecuda-test.XXXXXX", cmd[64];
	const char *missing;
	pid_t pid;
	int st;

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
	if (missing) {
		printf("FAIL the fake exports %s\n", missing);
		return 1;
	}
	if (!mkdtemp(dir)) {
		perror("fakecuda_test: mkdtemp");
		return 2;
	}
	setenv("KVPOOL_FAKECUDA_DIR", dir, 1);
	unsetenv("KVPOOL_FAKECUDA_GRANULARITY");

	/* Each part in a process of its own: the fake's state is too. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		test_no_device();
		fflush(stdout);
		_exit(nfail ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		nfail++;
	test_share();

	/* The registry is this run's alone (see fakecuda.c). */
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fakecuda_test: could not remove %s\n", dir);
	return nfail ? 1 : 0;
}
