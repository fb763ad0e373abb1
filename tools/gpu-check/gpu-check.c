// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu-check: the CUDA half of a kvpool CUDA arena, end to end, on a host
 * with an NVIDIA GPU and driver, without the kvpool module. The fds travel
 * as the kernel would hand them:
 *
 *   A  allocates a chunk (cuMemCreate, POSIX fd handle), exports it and
 *      sends the fd to the holder H, which stands in for the kernel: it
 *      keeps the file and hands out dups;
 *   B  gets a dup from H, imports, reserves, maps, sets access and writes
 *      a pattern (cuMemcpyHtoD, cuMemsetD8);
 *   A  is killed with SIGKILL and reaped;
 *   C  started after A is dead, gets a dup from H, imports, maps and reads
 *      (cuMemcpyDtoH) B's pattern back.
 *
 * It prints the driver version, the device, the granularity, and what the
 * exported fd is (readlink of /proc/self/fd/N, its file type: the kvpool
 * module takes only a character device), then PASS or FAIL per step and a
 * summary line. Exit status: 0 if every step passed, 1 if not, 2 if there
 * is no CUDA driver to load. libcuda.so.1 is loaded with dlopen(): nothing
 * links against it, so this builds on machines without one.
 *
 * H never calls CUDA: every CUDA process is forked from a process that
 * has not initialised it, since CUDA does not survive fork().
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <kvpool.h>

#include "cu_entry.h"

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A run must stay well under two minutes; each process gets this long. */
#define GC_TIMEOUT_S	90

/* Shared by all the processes: the steps' tally. */
struct gc_tally {
	int pass, fail;
};

static struct gc_tally *tally;

static void step(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	__atomic_fetch_add(ok ? &tally->pass : &tally->fail, 1,
			   __ATOMIC_SEQ_CST);
}

static void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *ename(CUresult r)
{
	const char *s = NULL;

	if (p_cuGetErrorName(r, &s) != CUDA_SUCCESS || !s)
		return "unknown CUresult";
	return s;
}

/* One CUDA call as a step: PASS, or FAIL with the error's name. */
static int cu_step(CUresult r, const char *who, const char *what)
{
	if (r == CUDA_SUCCESS)
		step(1, "%s: %s", who, what);
	else
		step(0, "%s: %s: %s (%d)", who, what, ename(r), (int)r);
	return r == CUDA_SUCCESS;
}

static unsigned char pattern(size_t i, unsigned int seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed;

	return (unsigned char)(x ^ x >> 13 ^ x >> 24);
}

/* What a chunk's pattern is at @i: B memsets the first page. */
#define GC_MEMSET_LEN	4096
#define GC_MEMSET_BYTE	0xa5

static unsigned char expected(size_t i, unsigned int seed)
{
	return i < GC_MEMSET_LEN ? GC_MEMSET_BYTE : pattern(i, seed);
}

/* What the holder tells a child: the chunk, and then the fd. */
struct gc_job {
	size_t bytes;
	int dev;		/* A: -1 for --gpu, else this ordinal */
	unsigned int seed;
	char bdf[32];		/* A: --gpu; B, C: the device A used */
};

static int send_all(int sock, const void *p, size_t n)
{
	return write(sock, p, n) == (ssize_t)n ? 0 : -1;
}

static int recv_all(int sock, void *p, size_t n)
{
	return read(sock, p, n) == (ssize_t)n ? 0 : -1;
}

static int cu_init(const char *who)
{
	return cu_step(p_cuInit(0), who, "cuInit");
}

/* The file the fd is, as /proc and fstat() see it; 1 if a char device. */
static int describe_fd(const char *who, int fd)
{
	char link[64], target[256];
	struct stat st;
	ssize_t n;
	const char *type;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n < 0 ? 0 : n] = '\0';
	if (fstat(fd, &st)) {
		info("%s: fd %d: fstat: %s", who, fd, strerror(errno));
		return 0;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFCHR:
		type = "character device";
		break;
	case S_IFREG:
		type = "regular file";
		break;
	case S_IFDIR:
		type = "directory";
		break;
	case S_IFIFO:
		type = "fifo";
		break;
	case S_IFSOCK:
		type = "socket";
		break;
	default:
		type = "other (not a character device)";
	}
	info("%s: fd %d -> %s, st_mode type: %s (rdev %u:%u)", who, fd,
	     n < 0 ? "(readlink failed)" : target, type,
	     major(st.st_rdev), minor(st.st_rdev));
	return S_ISCHR(st.st_mode);
}

/* A yes/no attribute as words: the reason a step may fail to come. */
static const char *attr_str(CUdevice dev, CUdevice_attribute a)
{
	int v = 0;

	if (p_cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
		return "unknown";
	return v ? "yes" : "no";
}

/* Every CUDA process works in its device's primary context. */
static int use_device(const char *who, CUdevice dev)
{
	CUcontext ctx;

	return cu_step(p_cuDevicePrimaryCtxRetain(&ctx, dev), who,
		       "cuDevicePrimaryCtxRetain") &&
	       cu_step(p_cuCtxSetCurrent(ctx), who, "cuCtxSetCurrent");
}

static CUmemAllocationProp chunk_prop(int dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return p;
}

/*
 * A: allocate and export one chunk, send the fd and the chunk's facts to
 * H, then wait to be killed, holding its handle as a live owner would.
 */
static int proc_a(int sock, struct gc_job *job)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	CUdevice dev;
	size_t gran = 0;
	char name[256];
	int ver = 0, fd = -1;
	CUresult r;

	if (!cu_init("A"))
		return 1;
	if (p_cuDriverGetVersion(&ver) == CUDA_SUCCESS)
		info("driver: CUDA %d.%d (cuDriverGetVersion %d)", ver / 1000,
		     ver % 1000 / 10, ver);
	if (job->dev < 0)
		r = p_cuDeviceGetByPCIBusId(&dev, job->bdf);
	else
		r = p_cuDeviceGet(&dev, job->dev);
	if (!cu_step(r, "A", job->dev < 0 ? "find the --gpu device" :
		     "device 0"))
		return 1;
	if (p_cuDeviceGetName(name, sizeof(name), dev) != CUDA_SUCCESS)
		snprintf(name, sizeof(name), "?");
	if (p_cuDeviceGetPCIBusId(job->bdf, sizeof(job->bdf), dev) !=
	    CUDA_SUCCESS)
		snprintf(job->bdf, sizeof(job->bdf), "?");
	info("device %d: %s, PCI bus id %s", (int)dev, name, job->bdf);
	info("device %d: virtual memory management: %s, POSIX fd handles: %s",
	     (int)dev, attr_str(dev,
		CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
	     attr_str(dev,
		CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
	job->dev = dev;
	if (!use_device("A", dev))
		return 1;

	prop = chunk_prop(dev);
	if (!cu_step(p_cuMemGetAllocationGranularity(&gran, &prop,
			CU_MEM_ALLOC_GRANULARITY_MINIMUM), "A",
		     "allocation granularity"))
		return 1;
	info("granularity: %zu bytes", gran);
	job->bytes = job->bytes ? (job->bytes + gran - 1) / gran * gran :
		     2 * gran;
	info("chunk: %zu bytes", job->bytes);

	if (!cu_step(p_cuMemCreate(&h, job->bytes, &prop, 0), "A",
		     "cuMemCreate (POSIX fd handle type)") ||
	    !cu_step(p_cuMemExportToShareableHandle(&fd, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "A",
		     "cuMemExportToShareableHandle"))
		return 1;
	step(describe_fd("A: exported", fd),
	     "A: the exported fd is a character device (kvpool requires one)");
	if (send_all(sock, job, sizeof(*job)) || kvpool_send_fd(sock, fd)) {
		step(0, "A: send the fd to the holder: %s", strerror(errno));
		return 1;
	}
	close(fd);
	/* Alive, owning the allocation, until H kills us. */
	for (;;)
		pause();
}

/* B and C: import the holder's dup and map it, readable and writable. */
static int attach(const char *who, int sock, struct gc_job *job,
		  CUmemGenericAllocationHandle *h, CUdeviceptr *va)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUdevice dev;
	char bdf[32];
	int fd;

	if (recv_all(sock, job, sizeof(*job))) {
		step(0, "%s: no chunk from the holder", who);
		return 0;
	}
	fd = kvpool_recv_fd(sock);
	if (fd < 0) {
		step(0, "%s: receive a dup from the holder: %s", who,
		     strerror(-fd));
		return 0;
	}
	if (!cu_init(who) ||
	    !cu_step(p_cuDeviceGetByPCIBusId(&dev, job->bdf), who,
		     "find A's device by its PCI bus id") ||
	    !use_device(who, dev))
		return 0;
	if (!cu_step(p_cuMemImportFromShareableHandle(h,
			(void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), who,
		     "cuMemImportFromShareableHandle of the holder's dup"))
		return 0;
	/* The handle is the import's: the fd is ours to close. */
	close(fd);
	memset(&prop, 0, sizeof(prop));
	if (!cu_step(p_cuMemGetAllocationPropertiesFromHandle(&prop, *h),
		     who, "cuMemGetAllocationPropertiesFromHandle"))
		return 0;
	if (p_cuDeviceGetPCIBusId(bdf, sizeof(bdf), prop.location.id) !=
	    CUDA_SUCCESS)
		snprintf(bdf, sizeof(bdf), "?");
	step(prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	     prop.location.id == dev && !strcasecmp(bdf, job->bdf),
	     "%s: the import is on A's device (device %d, %s; A's: %d, %s)",
	     who, prop.location.id, bdf, job->dev, job->bdf);
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return cu_step(p_cuMemAddressReserve(va, job->bytes, 0, 0, 0), who,
		       "cuMemAddressReserve") &&
	       cu_step(p_cuMemMap(*va, job->bytes, 0, *h, 0), who,
		       "cuMemMap") &&
	       cu_step(p_cuMemSetAccess(*va, job->bytes, &acc, 1), who,
		       "cuMemSetAccess (read-write)");
}

static int detach(const char *who, struct gc_job *job,
		  CUmemGenericAllocationHandle h, CUdeviceptr va)
{
	return cu_step(p_cuMemUnmap(va, job->bytes), who, "cuMemUnmap") &&
	       cu_step(p_cuMemAddressFree(va, job->bytes), who,
		       "cuMemAddressFree") &&
	       cu_step(p_cuMemRelease(h), who, "cuMemRelease");
}

/* Count the bytes of the chunk that are not B's pattern. */
static size_t mismatches(const unsigned char *buf, struct gc_job *job,
			 size_t *first)
{
	size_t i, bad = 0;

	*first = 0;
	for (i = 0; i < job->bytes; i++) {
		if (buf[i] != expected(i, job->seed)) {
			if (!bad)
				*first = i;
			bad++;
		}
	}
	return bad;
}

/* B: write the pattern, check it reads back, and unmap. */
static int proc_b(int sock)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdeviceptr va;
	unsigned char *buf;
	size_t i, bad, first;
	int ok;

	if (!attach("B", sock, &job, &h, &va))
		return 1;
	buf = malloc(job.bytes);
	if (!buf)
		return 1;
	for (i = 0; i < job.bytes; i++)
		buf[i] = pattern(i, job.seed);
	ok = cu_step(p_cuMemcpyHtoD(va, buf, job.bytes), "B",
		     "cuMemcpyHtoD of the pattern") &&
	     cu_step(p_cuMemsetD8(va, GC_MEMSET_BYTE, GC_MEMSET_LEN), "B",
		     "cuMemsetD8 of the first 4 KiB") &&
	     cu_step(p_cuCtxSynchronize(), "B", "cuCtxSynchronize");
	if (ok) {
		memset(buf, 0, job.bytes);
		ok = cu_step(p_cuMemcpyDtoH(buf, va, job.bytes), "B",
			     "cuMemcpyDtoH (read back)");
	}
	if (ok) {
		bad = mismatches(buf, &job, &first);
		ok = bad == 0;
		step(ok, "B: reads back what it wrote (%zu of %zu bytes differ)",
		     bad, job.bytes);
	}
	free(buf);
	ok &= detach("B", &job, h, va);
	/* Done: after this only H's file holds the chunk. */
	if (send_all(sock, "w", 1))
		return 1;
	return !ok;
}

/* C: after A's death, read B's pattern through a fresh import. */
static int proc_c(int sock)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdeviceptr va;
	unsigned char *buf;
	size_t bad, first;
	int ok;

	if (!attach("C", sock, &job, &h, &va))
		return 1;
	buf = malloc(job.bytes);
	if (!buf)
		return 1;
	ok = cu_step(p_cuMemcpyDtoH(buf, va, job.bytes), "C",
		     "cuMemcpyDtoH");
	if (ok) {
		bad = mismatches(buf, &job, &first);
		ok = bad == 0;
		if (ok)
			step(1, "C: reads B's pattern after A's death (%zu bytes)",
			     job.bytes);
		else
			step(0, "C: reads B's pattern after A's death: %zu of %zu bytes differ, first at %zu (0x%02x, want 0x%02x)",
			     bad, job.bytes, first, buf[first],
			     expected(first, job.seed));
	}
	free(buf);
	ok &= detach("C", &job, h, va);
	return !ok;
}

/* Run @fn in a child that shares a socket with us; its pid. */
static pid_t spawn(int (*fn)(int), int *sock)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		alarm(GC_TIMEOUT_S);
		_exit(fn(sv[1]));
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -1;
	}
	*sock = sv[0];
	return pid;
}

static struct gc_job a_job;
static volatile pid_t gc_kids[3];

/* Out of time: no child may outlive us, A least of all (it waits). */
static void on_alarm(int sig)
{
	static const char msg[] = "FAIL H: timed out\ngpu-check: FAIL: timed out\n";
	size_t i;

	(void)sig;
	for (i = 0; i < 3; i++)
		if (gc_kids[i] > 0)
			kill(gc_kids[i], SIGKILL);
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static int run_a(int sock)
{
	return proc_a(sock, &a_job);
}

/* What became of a child: 0 if it exited 0. */
static int reap(const char *who, pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid) {
		info("%s: waitpid: %s", who, strerror(errno));
		return -1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		info("%s (pid %d) died of signal %d", who, (int)pid,
		     WTERMSIG(st));
	else
		info("%s (pid %d) exited %d", who, (int)pid, WEXITSTATUS(st));
	return -1;
}

/* H hands a child its own dup of the held fd, as the kernel would. */
static int hand_dup(const char *who, int sock, int held, struct gc_job *job)
{
	int d = dup(held), ok;

	ok = d >= 0 && !send_all(sock, job, sizeof(*job)) &&
	     !kvpool_send_fd(sock, d);
	if (d >= 0)
		close(d);
	step(ok, "H: hands %s a dup of the held fd", who);
	return ok;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--gpu BDF] [--bytes N] [--libcuda PATH]\n"
		"  --gpu BDF       the GPU by PCI bus id (default: device 0)\n"
		"  --bytes N       chunk size, rounded up to the granularity\n"
		"                  (default: 2 granules)\n"
		"  --libcuda PATH  the driver library (default: libcuda.so.1)\n"
		"Exit: 0 all steps passed, 1 a step failed, 2 no CUDA driver.\n",
		prog);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gpu", required_argument, NULL, 'g' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "libcuda", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lib = "libcuda.so.1", *missing;
	struct timespec t0, t1;
	pid_t pa, pb, pc;
	int c, sa, sb, sc, held, st, total;
	char *end;
	void *dl;

	a_job.dev = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (strlen(optarg) >= sizeof(a_job.bdf)) {
				fprintf(stderr, "gpu-check: --gpu %s: too long\n",
					optarg);
				return 1;
			}
			snprintf(a_job.bdf, sizeof(a_job.bdf), "%s", optarg);
			a_job.dev = -1;
			break;
		case 'b':
			errno = 0;
			a_job.bytes = strtoull(optarg, &end, 0);
			if (errno || *end || !a_job.bytes) {
				fprintf(stderr, "gpu-check: --bytes %s: not a size in bytes\n",
					optarg);
				return 1;
			}
			break;
		case 'l':
			lib = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 1;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 1;
	}

	dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		printf("no CUDA driver (%s not found)\n", lib);
		fprintf(stderr, "gpu-check: %s\n", dlerror());
		return 2;
	}
	missing = cu_entry_load(dl);
	if (missing) {
		printf("FAIL %s has no %s\n", lib, missing);
		printf("gpu-check: FAIL: the driver lacks an entry point\n");
		return 1;
	}
	info("libcuda: %s", lib);

	tally = mmap(NULL, sizeof(*tally), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tally == MAP_FAILED) {
		perror("gpu-check: mmap");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	signal(SIGALRM, on_alarm);
	alarm(GC_TIMEOUT_S + 20);

	pa = spawn(run_a, &sa);
	gc_kids[0] = pa;
	if (pa < 0) {
		step(0, "H: start A: %s", strerror(errno));
		goto out;
	}
	held = -1;
	if (!recv_all(sa, &a_job, sizeof(a_job)))
		held = kvpool_recv_fd(sa);
	if (held < 0) {
		step(0, "H: receive A's exported fd");
		kill(pa, SIGKILL);
		reap("A", pa);
		goto out;
	}
	step(describe_fd("H: held", held),
	     "H: holds A's fd, a character device after SCM_RIGHTS");
	a_job.seed = (unsigned int)getpid() * 2654435761u ^
		     (unsigned int)t0.tv_nsec;

	pb = spawn(proc_b, &sb);
	gc_kids[1] = pb;
	if (pb < 0 || !hand_dup("B", sb, held, &a_job)) {
		kill(pa, SIGKILL);
		if (pb > 0)
			kill(pb, SIGKILL);
	} else {
		char w;

		if (read(sb, &w, 1) != 1)
			info("H: B stopped before writing");
	}
	step(pb > 0 && reap("B", pb) == 0, "B: exited 0");

	/* The owner dies: from here only H's file keeps the chunk alive. */
	kill(pa, SIGKILL);
	st = 0;
	if (waitpid(pa, &st, 0) != pa) {
		step(0, "H: reap A: %s", strerror(errno));
	} else {
		step(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
		     kill(pa, 0) < 0 && errno == ESRCH,
		     "H: A (pid %d) killed by SIGKILL, reaped, gone", (int)pa);
	}

	pc = spawn(proc_c, &sc);
	gc_kids[2] = pc;
	if (pc < 0 || !hand_dup("C", sc, held, &a_job)) {
		if (pc > 0)
			kill(pc, SIGKILL);
	}
	step(pc > 0 && reap("C", pc) == 0, "C: exited 0");
	close(held);
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	total = tally->pass + tally->fail;
	printf("gpu-check: %s: %d of %d steps passed in %.1f s\n",
	       tally->fail || !total ? "FAIL" : "PASS", tally->pass, total,
	       (double)(t1.tv_sec - t0.tv_sec) +
	       (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return tally->fail || !total;
}
