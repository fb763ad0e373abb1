// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu-check: libkvpool's CUDA arena path, end to end, on a host with an
 * NVIDIA GPU and driver. The main process H stands in for the kernel: it
 * never calls CUDA, holds the files a pool would hold and hands out what
 * the kernel would. Every CUDA process is forked from H, which has not
 * initialised CUDA, since CUDA does not survive fork().
 *
 *  1. The facts: the driver's versions, the GPU's Device Minor (from
 *     /proc/driver/nvidia/gpus/<bdf>/information) and persistence mode
 *     (nvidia-smi: the driver publishes it nowhere else), and what the
 *     exported file is (type, rdev: 195:255 is /dev/nvidiactl).
 *  2. libkvpool's order (kvp_cu_chunk()): A creates a chunk, exports it
 *     and releases its handle at once; H holds the export and an open
 *     /dev/nvidiaN (the arena's KVPOOL_ARENA_SET_DEVICE keep-alive); A is
 *     SIGKILLed; B imports, maps and writes; C reads the bytes back.
 *  3. The GPU agent's re-export: R imports H's master, exports it afresh
 *     (a new file, not the master; libcuda 580.159.04 refuses to export
 *     an import: docs/gpu-agent.md), releases and exits; D imports that
 *     export alone and reads the bytes. Against the fake driver D then
 *     unexports its file, and E still reads the bytes through the master.
 *  4. Teardown: with persistence off and nobody holding /dev/nvidiaN, an
 *     export held alone dies with the last CUDA process (U's import
 *     fails); with H holding /dev/nvidiaN it lives (U reads it).
 *  5. The CUDA half of a chunk move between tenants, as a CUDA budget
 *     will do it (docs/gpu-budget.md; the kernel has none yet). W, the
 *     broker, stands in for the kernel where that needs CUDA: it makes one
 *     chunk of the allocation granularity (minimum) and exports it; X, a
 *     tenant, maps it, writes it whole and goes; W maps it, clears it
 *     (cuMemsetD8 0, timed: a figure, not asserted) and unmaps; Y, the
 *     next tenant, maps a fresh export and must read 0 in every byte, then
 *     writes, and W, mapping again, must see Y's bytes (the memory moved,
 *     not a copy). cuMemGetInfo()'s free must fall by the chunk when W
 *     makes it and come back only when W's handle and H's exports are all
 *     gone, within a slack of half the chunk for the driver's own use.
 *     Then a second chunk without the clear: Y must read X's bytes, which
 *     shows that the clear is what keeps one tenant's KV from the next.
 *  6. Through the module, if it is loaded and kvpool-gpud runs (as root):
 *     a pool for the GPU, an agent arena made by libkvpool, one client
 *     writing and another reading through exports the agent made for each.
 *
 * One line per step, "ok - ..." or "not ok - ..." ("ok - ... # SKIP why"
 * for one that cannot run here), and a summary. Exit status: 0 every step
 * passed, 1 one did not, 2 no CUDA driver to load. libcuda.so.1 is loaded
 * with dlopen(): nothing links it, so this builds without one.
 *
 * $KVPOOL_NVIDIA_PROC and $KVPOOL_NVIDIA_DEV, as for libkvpool, stand for
 * /proc/driver/nvidia and /dev: the fake driver's registry folder holds
 * both (selftests/lib/fakecuda/gpu-check-fake.sh). The fake runs every
 * step but answers only as it was written to; what the driver itself
 * does (the export's rdev, an imported handle exported afresh, what an
 * import of a torn-down GPU's export returns, how long teardown takes)
 * only a GPU shows.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <kvpool.h>

#include "cu_entry.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A run must stay well under the script's two minutes. */
#define GC_CHILD_TIMEOUT_S	50
#define GC_TIMEOUT_S		100

/* NVIDIA's character devices: /dev/nvidiaN is 195:N, nvidiactl 195:255. */
#define NV_MAJOR	195
#define NV_CTL_MINOR	255
/* The fake driver's export is a pty master, /dev/ptmx. */
#define PTMX_MAJOR	5
#define PTMX_MINOR	2

/* Shared by all the processes: the steps' tally. */
struct gc_tally {
	int pass, fail, skip;
};

static struct gc_tally *tally;

static void vline(const char *pre, const char *fmt, va_list ap)
{
	fputs(pre, stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

/* A step: "ok - what" or "not ok - what". */
static int step(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(ok ? "ok - " : "not ok - ", fmt, ap);
	va_end(ap);
	__atomic_fetch_add(ok ? &tally->pass : &tally->fail, 1,
			   __ATOMIC_SEQ_CST);
	return ok;
}

/*
 * A step that cannot run here: "ok - what # SKIP why" (@fmt carries the
 * directive), counted apart from the passes.
 */
static void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("ok - ", fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&tally->skip, 1, __ATOMIC_SEQ_CST);
}

static void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap);
	va_end(ap);
}

static const char *ename(CUresult r)
{
	const char *s = NULL;

	if (p_cuGetErrorName(r, &s) != CUDA_SUCCESS || !s)
		return "unknown CUresult";
	return s;
}

/* One CUDA call as a step: ok, or not ok with the error's name. */
static int cu_step(CUresult r, const char *who, const char *what)
{
	if (r == CUDA_SUCCESS)
		return step(1, "%s: %s", who, what);
	return step(0, "%s: %s: %s (%d)", who, what, ename(r), (int)r);
}

/*
 * What a chunk holds at @i. Each phase has its own seed, so bytes left
 * from an earlier phase cannot pass for a later one's.
 */
static unsigned char pattern(size_t i, unsigned int seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed;

	return (unsigned char)(x ^ x >> 13 ^ x >> 24);
}

/* The writer memsets the first page: an unsynchronised memset shows. */
#define GC_MEMSET_LEN	4096
#define GC_MEMSET_BYTE	0xa5

static unsigned char expected(size_t i, unsigned int seed)
{
	return i < GC_MEMSET_LEN ? GC_MEMSET_BYTE : pattern(i, seed);
}

/* A chunk cleared between tenants (the chunk move) holds this. */
#define GC_CLEARED	((unsigned int)-1)

/* What byte @i must be: @seed's pattern, or 0 in a cleared chunk. */
static unsigned char want_byte(size_t i, unsigned int seed)
{
	return seed == GC_CLEARED ? 0 : expected(i, seed);
}

/* What H tells a child, and what the creator tells H back. */
struct gc_job {
	size_t bytes;		/* 0 for A: 2 granules */
	int dev;		/* A: -1 for --gpu, else this ordinal */
	unsigned int seed;
	int fake;		/* the driver is the fake (its device name) */
	int expect;		/* U: 1 the import must work, 0 must fail */
	int has_fd;		/* a descriptor follows */
	char bdf[32];		/* A: --gpu; the others: A's device */
	/* The chunk move (phase 5). */
	int op;			/* W: what H asks (MV_*) */
	unsigned int last;	/* Y: the bytes it must find: the last
				 * tenant's seed, or GC_CLEARED */
	int write;		/* Y: then it writes its own, @seed's */
	int ok;			/* W's answer: the step went right */
	int have_free;		/* W's answer: @free is known */
	size_t free;		/* W's answer: cuMemGetInfo's free, after */
	double clear_s[2];	/* W's answer to MV_CLEAR: the clear's
				 * seconds, and a second memset's */
};

/* A peer that died gets us EPIPE, not SIGPIPE. */
static int send_all(int sock, const void *p, size_t n)
{
	return send(sock, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static int recv_all(int sock, void *p, size_t n)
{
	return read(sock, p, n) == (ssize_t)n ? 0 : -1;
}

/* A job and, if @fd >= 0, the descriptor, as the kernel hands a file. */
static int send_job(int sock, struct gc_job *job, int fd)
{
	job->has_fd = fd >= 0;
	if (send_all(sock, job, sizeof(*job)))
		return -1;
	return fd >= 0 && kvpool_send_fd(sock, fd) ? -1 : 0;
}

static int recv_job(int sock, struct gc_job *job, int *fd)
{
	*fd = -1;
	if (recv_all(sock, job, sizeof(*job)))
		return -1;
	if (job->has_fd) {
		*fd = kvpool_recv_fd(sock);
		if (*fd < 0)
			return -1;
	}
	return 0;
}

/* ---- what a file is ---- */

struct gc_file {
	char path[256];		/* readlink of /proc/self/fd/N */
	const char *type;
	unsigned int maj, min;
	int chr;
};

static void file_of(int fd, struct gc_file *f)
{
	char link[64];
	struct stat st;
	ssize_t n;

	memset(f, 0, sizeof(*f));
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, f->path, sizeof(f->path) - 1);
	if (n < 0)
		snprintf(f->path, sizeof(f->path), "(readlink failed)");
	if (fstat(fd, &st)) {
		f->type = "(fstat failed)";
		return;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFCHR:
		f->type = "character device";
		f->chr = 1;
		break;
	case S_IFREG:
		f->type = "regular file";
		break;
	case S_IFIFO:
		f->type = "fifo";
		break;
	case S_IFSOCK:
		f->type = "socket";
		break;
	default:
		f->type = "other";
	}
	f->maj = major(st.st_rdev);
	f->min = minor(st.st_rdev);
}

/*
 * Print what the export @fd is, and whether it is what the kvpool module
 * takes as a CUDA chunk: NVIDIA's control device, or (the fake driver's,
 * taken only under the module's fake_cuda hook) a pty master.
 */
static int export_step(const char *who, const char *what, int fd, int fake)
{
	struct gc_file f;

	file_of(fd, &f);
	info("%s: %s %d -> %s, st_mode type: %s (rdev %u:%u)", who, what,
	     fd, f.path, f.type, f.maj, f.min);
	if (f.chr && f.maj == NV_MAJOR && f.min == NV_CTL_MINOR)
		return step(1, "%s: the %s is the NVIDIA control device (195:255)",
			    who, what);
	if (fake && f.chr && f.maj == PTMX_MAJOR && f.min == PTMX_MINOR)
		return step(1, "%s: the %s is a pty master (5:2), the fake driver's stand-in for the NVIDIA control device",
			    who, what);
	return step(0, "%s: the %s is not the NVIDIA control device (%s %u:%u, want 195:255)",
		    who, what, f.type, f.maj, f.min);
}

/* ---- CUDA in the children ---- */

/* Every CUDA process works in its device's primary context. */
static int use_device(const char *who, CUdevice dev)
{
	CUcontext ctx;

	return cu_step(p_cuDevicePrimaryCtxRetain(&ctx, dev), who,
		       "cuDevicePrimaryCtxRetain") &&
	       cu_step(p_cuCtxSetCurrent(ctx), who, "cuCtxSetCurrent");
}

/* cuInit, A's device by its bus id, its primary context current. */
static int open_device(const char *who, struct gc_job *job, CUdevice *dev)
{
	return cu_step(p_cuInit(0), who, "cuInit") &&
	       cu_step(p_cuDeviceGetByPCIBusId(dev, job->bdf), who,
		       "find A's device by its PCI bus id") &&
	       use_device(who, *dev);
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

/* The chunks' granularity on @dev: the minimum, as libkvpool takes. */
static int granularity(const char *who, CUdevice dev, size_t *gran)
{
	CUmemAllocationProp prop = chunk_prop(dev);

	*gran = 0;
	return cu_step(p_cuMemGetAllocationGranularity(gran, &prop,
			CU_MEM_ALLOC_GRANULARITY_MINIMUM), who,
		       "allocation granularity");
}

/* A yes/no attribute as words: the reason a step may fail to come. */
static const char *attr_str(CUdevice dev, CUdevice_attribute a)
{
	int v = 0;

	if (p_cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
		return "unknown";
	return v ? "yes" : "no";
}

/* Reserve, map and open @h read-write for its device, as libkvpool does. */
static int map_handle(const char *who, struct gc_job *job, CUdevice dev,
		      CUmemGenericAllocationHandle h, CUdeviceptr *va)
{
	CUmemAccessDesc acc;

	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return cu_step(p_cuMemAddressReserve(va, job->bytes, 0, 0, 0), who,
		       "cuMemAddressReserve") &&
	       cu_step(p_cuMemMap(*va, job->bytes, 0, h, 0), who,
		       "cuMemMap") &&
	       cu_step(p_cuMemSetAccess(*va, job->bytes, &acc, 1), who,
		       "cuMemSetAccess (read-write)");
}

/* Import @fd (kept open: the caller's) and map it. */
static int import_map(const char *who, struct gc_job *job, CUdevice dev,
		      int fd, CUmemGenericAllocationHandle *h,
		      CUdeviceptr *va)
{
	CUmemAllocationProp prop;
	char bdf[32];

	if (!cu_step(p_cuMemImportFromShareableHandle(h,
			(void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), who,
		     "cuMemImportFromShareableHandle"))
		return 0;
	memset(&prop, 0, sizeof(prop));
	if (!cu_step(p_cuMemGetAllocationPropertiesFromHandle(&prop, *h),
		     who, "cuMemGetAllocationPropertiesFromHandle"))
		return 0;
	if (p_cuDeviceGetPCIBusId(bdf, sizeof(bdf), prop.location.id) !=
	    CUDA_SUCCESS)
		snprintf(bdf, sizeof(bdf), "?");
	if (!step(prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
		  prop.location.id == dev && !strcasecmp(bdf, job->bdf),
		  "%s: the import is on A's device (device %d, %s; A's: %s)",
		  who, prop.location.id, bdf, job->bdf))
		return 0;
	return map_handle(who, job, dev, *h, va);
}

static int unmap(const char *who, struct gc_job *job, CUdeviceptr va)
{
	return cu_step(p_cuMemUnmap(va, job->bytes), who, "cuMemUnmap") &&
	       cu_step(p_cuMemAddressFree(va, job->bytes), who,
		       "cuMemAddressFree");
}

/* Unmap and release; libkvpool releases right after the map, this later. */
static int unmap_release(const char *who, struct gc_job *job,
			 CUmemGenericAllocationHandle h, CUdeviceptr va)
{
	return unmap(who, job, va) &&
	       cu_step(p_cuMemRelease(h), who, "cuMemRelease");
}

/* Count the bytes of the chunk that are not what @seed says. */
static size_t mismatches(const unsigned char *buf, struct gc_job *job,
			 unsigned int seed, size_t *first)
{
	size_t i, bad = 0;

	*first = 0;
	for (i = 0; i < job->bytes; i++) {
		if (buf[i] != want_byte(i, seed)) {
			if (!bad)
				*first = i;
			bad++;
		}
	}
	return bad;
}

/*
 * Copy the chunk out (cuMemcpyDtoH) and check that every byte is what
 * @seed says (GC_CLEARED: 0).
 */
static int read_want(const char *who, struct gc_job *job, CUdeviceptr va,
		     unsigned int seed, const char *what)
{
	unsigned char *buf = malloc(job->bytes);
	size_t bad, first;
	int ok;

	if (!buf)
		return step(0, "%s: %s: out of memory", who, what);
	ok = cu_step(p_cuMemcpyDtoH(buf, va, job->bytes), who,
		     "cuMemcpyDtoH");
	if (ok) {
		bad = mismatches(buf, job, seed, &first);
		if (!bad)
			ok = step(1, "%s: %s (%zu bytes right)", who, what,
				  job->bytes);
		else
			ok = step(0, "%s: %s: %zu of %zu bytes differ, first at %zu (0x%02x, want 0x%02x)",
				  who, what, bad, job->bytes, first,
				  buf[first], want_byte(first, seed));
	}
	free(buf);
	return ok;
}

/* read_want() of the phase's own pattern. */
static int read_check(const char *who, struct gc_job *job, CUdeviceptr va,
		      const char *what)
{
	return read_want(who, job, va, job->seed, what);
}

/* Write the pattern through the driver: a copy, a memset, synchronise. */
static int write_pattern(const char *who, struct gc_job *job, CUdeviceptr va)
{
	unsigned char *buf = malloc(job->bytes);
	size_t i;
	int ok;

	if (!buf)
		return step(0, "%s: write: out of memory", who);
	for (i = 0; i < job->bytes; i++)
		buf[i] = pattern(i, job->seed);
	ok = cu_step(p_cuMemcpyHtoD(va, buf, job->bytes), who,
		     "cuMemcpyHtoD of the pattern") &&
	     cu_step(p_cuMemsetD8(va, GC_MEMSET_BYTE, GC_MEMSET_LEN), who,
		     "cuMemsetD8 of the first 4 KiB") &&
	     cu_step(p_cuCtxSynchronize(), who, "cuCtxSynchronize");
	free(buf);
	return ok;
}

/*
 * A: what libkvpool's kvp_cu_chunk() does: create, export, release at
 * once. The export is then all that holds the memory. A tells H its
 * device first and waits for H to hold the GPU's device node, so that
 * the GPU is kept up before anything depends on it.
 */
static int proc_a(int sock)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	struct gc_job job;
	CUdevice dev;
	size_t gran = 0;
	char name[256], go;
	int ver = 0, fd;
	CUresult r;

	if (recv_job(sock, &job, &fd))
		return 1;
	if (!cu_step(p_cuInit(0), "A", "cuInit"))
		return 1;
	if (p_cuDriverGetVersion(&ver) == CUDA_SUCCESS)
		info("driver: CUDA %d.%d (cuDriverGetVersion %d)", ver / 1000,
		     ver % 1000 / 10, ver);
	if (job.dev < 0)
		r = p_cuDeviceGetByPCIBusId(&dev, job.bdf);
	else
		r = p_cuDeviceGet(&dev, job.dev);
	if (!cu_step(r, "A", job.dev < 0 ? "find the --gpu device" :
		     "device 0"))
		return 1;
	if (p_cuDeviceGetName(name, sizeof(name), dev) != CUDA_SUCCESS)
		snprintf(name, sizeof(name), "?");
	if (p_cuDeviceGetPCIBusId(job.bdf, sizeof(job.bdf), dev) !=
	    CUDA_SUCCESS)
		snprintf(job.bdf, sizeof(job.bdf), "?");
	/* Only the fake calls itself that; its files are its own. */
	job.fake = strstr(name, "(fake driver)") != NULL;
	info("device %d: %s, PCI bus id %s", (int)dev, name, job.bdf);
	info("device %d: virtual memory management: %s, POSIX fd handles: %s",
	     (int)dev, attr_str(dev,
		CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
	     attr_str(dev,
		CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
	job.dev = dev;
	if (!use_device("A", dev))
		return 1;
	prop = chunk_prop(dev);
	if (!granularity("A", dev, &gran))
		return 1;
	info("granularity: %zu bytes", gran);
	job.bytes = job.bytes ? (job.bytes + gran - 1) / gran * gran :
		    2 * gran;
	info("chunk: %zu bytes", job.bytes);
	if (send_job(sock, &job, -1) || recv_all(sock, &go, 1))
		return 1;

	if (!cu_step(p_cuMemCreate(&h, job.bytes, &prop, 0), "A",
		     "cuMemCreate (POSIX fd handle type)"))
		return 1;
	r = p_cuMemExportToShareableHandle(&fd, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	if (!cu_step(r, "A", "cuMemExportToShareableHandle"))
		return 1;
	/* libkvpool's order: the export is the only owner from here. */
	if (!cu_step(p_cuMemRelease(h), "A",
		     "cuMemRelease right after the export, as libkvpool does"))
		return 1;
	export_step("A", "exported fd", fd, job.fake);
	if (send_job(sock, &job, fd)) {
		step(0, "A: send the export to H: %s", strerror(errno));
		return 1;
	}
	close(fd);
	/* As kvpoolctl would after ARENA_SET, A leaves: H SIGKILLs it. */
	for (;;)
		pause();
}

/*
 * What Y, the chunk move's next tenant, must find in the chunk before it
 * writes: 0 in every byte after a clear, else X's bytes (@last).
 */
static int find_last(const char *who, struct gc_job *job, CUdeviceptr va)
{
	if (job->last == GC_CLEARED)
		return read_want(who, job, va, GC_CLEARED,
				 "reads 0 in every byte, none of X's");
	if (!read_want(who, job, va, job->last,
		       "reads X's bytes in a chunk not cleared"))
		return 0;
	return step(1, "without a clear the next tenant reads the last one's bytes: the clear is needed");
}

/*
 * B, and the chunk move's tenants: import what H hands and map it. B and
 * X write the pattern over the whole chunk and read it back; Y, the next
 * tenant (@next), first reads what the chunk must hold (find_last()),
 * then writes its own only if @write.
 */
static int tenant_proc(const char *who, int sock, int next)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdeviceptr va;
	CUdevice dev;
	int fd, ok;

	if (recv_job(sock, &job, &fd))
		return 1;
	if (!open_device(who, &job, &dev) ||
	    !import_map(who, &job, dev, fd, &h, &va))
		return 1;
	close(fd);
	ok = !next || find_last(who, &job, va);
	if (!next || job.write)
		ok = write_pattern(who, &job, va) &&
		     read_check(who, &job, va, "reads back what it wrote") &&
		     ok;
	ok &= unmap_release(who, &job, h, va);
	return !ok;
}

static int proc_b(int sock)
{
	return tenant_proc("B", sock, 0);
}

/* C, D and E: import what H hands, map it and read the pattern. */
static int read_proc(const char *who, int sock, const char *what)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdeviceptr va;
	CUdevice dev;
	int fd, ok;

	if (recv_job(sock, &job, &fd))
		return 1;
	if (!open_device(who, &job, &dev) ||
	    !import_map(who, &job, dev, fd, &h, &va))
		return 1;
	close(fd);
	ok = read_check(who, &job, va, what);
	ok &= unmap_release(who, &job, h, va);
	return !ok;
}

static int proc_c(int sock)
{
	return read_proc("C", sock, "reads B's bytes after A's SIGKILL");
}

static int proc_e(int sock)
{
	return read_proc("E", sock,
			 "reads the bytes through the master after D's unexport");
}

/*
 * R: the GPU agent's work for one request (kvpool_agent_serve()): import
 * the master, export afresh, release, close the master, answer.
 */
static int proc_r(int sock)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdevice dev;
	int fd, fresh = -1;

	if (recv_job(sock, &job, &fd))
		return 1;
	if (!open_device("R", &job, &dev) ||
	    !cu_step(p_cuMemImportFromShareableHandle(&h,
			(void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "R",
		     "cuMemImportFromShareableHandle of the master") ||
	    !cu_step(p_cuMemExportToShareableHandle(&fresh, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "R",
		     "cuMemExportToShareableHandle afresh") ||
	    !cu_step(p_cuMemRelease(h), "R", "cuMemRelease"))
		return 1;
	close(fd);
	export_step("R", "fresh export fd", fresh, job.fake);
	if (send_job(sock, &job, fresh))
		return 1;
	close(fresh);
	return 0;
}

/* The fake driver's test-only unexport; NULL with a real driver. */
static CUresult (*p_fakecuda_unexport)(int fd);

/*
 * D: the client of a fresh export. It reads the bytes; then, where the
 * driver lets a test do it, unexports its own file and finds it dead,
 * while E, after it, still reads through the master. On NVIDIA's driver
 * any holder of an nvidiactl file can do that with an unprivileged
 * control, but no CUDA call does it, so only the fake shows it.
 */
static int proc_d(int sock)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdeviceptr va;
	CUdevice dev;
	int fd, ok;
	CUresult r;

	if (recv_job(sock, &job, &fd))
		return 1;
	if (!open_device("D", &job, &dev) ||
	    !import_map("D", &job, dev, fd, &h, &va))
		return 1;
	ok = read_check("D", &job, va, "reads the bytes through its own export");
	ok &= unmap_release("D", &job, h, va);
	if (p_fakecuda_unexport) {
		ok &= cu_step(p_fakecuda_unexport(fd), "D",
			      "unexports its own file (fakecuda_unexport)");
		r = p_cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
		ok &= step(r != CUDA_SUCCESS,
			   "D: an import through its unexported file fails (%s)",
			   ename(r));
		if (r == CUDA_SUCCESS)
			p_cuMemRelease(h);
	}
	close(fd);
	return !ok;
}

/*
 * T: a creator that writes its chunk before it exports it (so that U can
 * tell live bytes), then releases everything and exits.
 */
static int proc_t(int sock)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	struct gc_job job;
	CUdeviceptr va;
	CUdevice dev;
	int fd;

	if (recv_job(sock, &job, &fd) || !open_device("T", &job, &dev))
		return 1;
	prop = chunk_prop(dev);
	if (!cu_step(p_cuMemCreate(&h, job.bytes, &prop, 0), "T",
		     "cuMemCreate") ||
	    !map_handle("T", &job, dev, h, &va) ||
	    !write_pattern("T", &job, va) ||
	    !cu_step(p_cuMemExportToShareableHandle(&fd, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "T",
		     "cuMemExportToShareableHandle") ||
	    !unmap_release("T", &job, h, va))
		return 1;
	if (send_job(sock, &job, fd))
		return 1;
	close(fd);
	return 0;
}

/* U: import T's export once every CUDA process is gone. */
static int proc_u(int sock)
{
	CUmemGenericAllocationHandle h;
	struct gc_job job;
	CUdeviceptr va;
	CUdevice dev;
	CUresult r;
	int fd, ok;

	if (recv_job(sock, &job, &fd))
		return 1;
	if (!open_device("U", &job, &dev))
		return 1;
	r = p_cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	close(fd);
	if (!job.expect) {
		if (r != CUDA_SUCCESS)
			return !step(1, "U: without a keep-alive the import fails after teardown: the driver returned %s (%d)",
				     ename(r), (int)r);
		step(0, "U: without a keep-alive the import still works: the GPU was not torn down (persistence on, or another holder of its device node?)");
		p_cuMemRelease(h);
		return 1;
	}
	if (!cu_step(r, "U", "with the keep-alive the import works"))
		return 1;
	ok = map_handle("U", &job, dev, h, &va) &&
	     read_check("U", &job, va, "reads T's bytes after T exited");
	ok &= unmap_release("U", &job, h, va);
	return !ok;
}

/* ---- H: the kernel's stand-in ---- */

/*
 * The children alive: A (it waits to be killed), W (the chunk move's
 * broker) and the one running.
 */
static volatile pid_t gc_a, gc_w, gc_kid;
static const char *gc_smi = "nvidia-smi";
static char gc_smi_bdf[32];
static volatile sig_atomic_t gc_pm_toggled;

/* Run nvidia-smi -i BDF -pm @mode; its exit status, -1 if it did not run. */
static int smi_pm(const char *mode)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execlp(gc_smi, gc_smi, "-i", gc_smi_bdf, "-pm", mode,
		       (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Out of time, or told to stop: no child may outlive us (A waits), and a
 * persistence mode we turned off goes back on.
 */
static void on_fatal(int sig)
{
	static const char msg[] = "not ok - H: timed out or stopped\ngpu-check: FAIL: stopped\n";

	(void)sig;
	if (gc_a > 0)
		kill(gc_a, SIGKILL);
	if (gc_kid > 0)
		kill(gc_kid, SIGKILL);
	if (gc_w > 0)
		kill(gc_w, SIGKILL);
	if (gc_pm_toggled)
		smi_pm("1");
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
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
		signal(SIGALRM, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		alarm(GC_CHILD_TIMEOUT_S);
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

/*
 * Run @fn as @who with @job and @fd (-1: none); if @back, the child's
 * job and descriptor come back there before it is reaped. 0 if it
 * exited 0 (and sent what was asked).
 */
static int run_child(const char *who, int (*fn)(int), struct gc_job *job,
		     int fd, struct gc_job *back, int *back_fd)
{
	int sock, ok;
	pid_t pid;

	pid = spawn(fn, &sock);
	if (pid < 0) {
		step(0, "H: start %s: %s", who, strerror(errno));
		return -1;
	}
	gc_kid = pid;
	ok = !send_job(sock, job, fd);
	if (ok && back && back_fd)
		ok = !recv_job(sock, back, back_fd);
	if (!ok)
		kill(pid, SIGKILL);
	close(sock);
	ok = !reap(who, pid) && ok;
	gc_kid = 0;
	step(ok, "%s: exited 0", who);
	return ok ? 0 : -1;
}

/* The first line of @path starting with @key, its value trimmed. */
static int read_key(const char *path, const char *key, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "re");
	int found = 0;

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *v = line + strlen(key);

		if (strncmp(line, key, strlen(key)))
			continue;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, len, "%s", v);
		found = 1;
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

/* The kernel module's version, from procfs, else from sysfs. */
static void print_module_version(void)
{
	char path[4096], v[256];
	const char *proc = env_or("KVPOOL_NVIDIA_PROC", "/proc/driver/nvidia");

	snprintf(path, sizeof(path), "%s/version", proc);
	if (!read_key(path, "NVRM version:", v, sizeof(v))) {
		info("driver: kernel module: %s (%s)", v, path);
		return;
	}
	if (!read_key("/sys/module/nvidia/version", "", v, sizeof(v))) {
		info("driver: kernel module: %s (/sys/module/nvidia/version)",
		     v);
		return;
	}
	info("driver: kernel module: unknown (no %s, no /sys/module/nvidia/version)",
	     path);
}

/* The GPU as the NVIDIA driver's files know it. */
struct gc_gpu {
	char bdf[32];		/* as NVIDIA names its proc folder */
	int minor;		/* -1: unknown */
	char node[4096];	/* /dev/nvidia<minor> */
	int pm;			/* persistence: 1 on, 0 off, -1 unknown */
	char pm_why[256];
};

/* @bdf as NVIDIA's proc folder is named: 0000:3b:00.0, lower case. */
static int nv_bdf(const char *bdf, char *out, size_t len)
{
	unsigned int d, b, s, f;
	char end;

	if (sscanf(bdf, "%x:%x:%x.%x%c", &d, &b, &s, &f, &end) != 4)
		return -EINVAL;
	snprintf(out, len, "%04x:%02x:%02x.%x", d, b, s, f);
	return 0;
}

/*
 * Persistence mode. NVIDIA's kernel module shows it in no file (its
 * /proc/driver/nvidia/gpus/<bdf>/information has no such line, and the
 * driver adds nothing to sysfs); nvidia-smi asks the driver.
 */
static void read_persistence(struct gc_gpu *g, int fake)
{
	char out[64] = "";
	int pfd[2], st;
	ssize_t n;
	pid_t pid;

	g->pm = -1;
	if (fake) {
		g->pm = 0;
		snprintf(g->pm_why, sizeof(g->pm_why),
			 "the fake driver has none: a GPU no one holds is torn down");
		return;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		snprintf(g->pm_why, sizeof(g->pm_why), "pipe: %s",
			 strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execlp(gc_smi, gc_smi, "--query-gpu=persistence_mode",
		       "--format=csv,noheader", "-i", g->bdf, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	n = pid < 0 ? -1 : read(pfd[0], out, sizeof(out) - 1);
	close(pfd[0]);
	out[n < 0 ? 0 : n] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(g->pm_why, sizeof(g->pm_why), "no %s to ask", gc_smi);
		return;
	}
	if (!strcmp(out, "Enabled"))
		g->pm = 1;
	else if (!strcmp(out, "Disabled"))
		g->pm = 0;
	snprintf(g->pm_why, sizeof(g->pm_why), "%s says \"%s\"", gc_smi, out);
}

static const char *pm_word(int pm)
{
	return pm > 0 ? "on" : pm == 0 ? "off" : "unknown";
}

/* The GPU's minor and device node, and its persistence mode. */
static void gpu_facts(const struct gc_job *job, struct gc_gpu *g)
{
	const char *proc = env_or("KVPOOL_NVIDIA_PROC", "/proc/driver/nvidia");
	const char *dev = env_or("KVPOOL_NVIDIA_DEV", "/dev");
	char path[4096], v[64], *end;
	long m;

	memset(g, 0, sizeof(*g));
	g->minor = -1;
	if (nv_bdf(job->bdf, g->bdf, sizeof(g->bdf)))
		snprintf(g->bdf, sizeof(g->bdf), "%s", job->bdf);
	snprintf(path, sizeof(path), "%s/gpus/%s/information", proc, g->bdf);
	if (!read_key(path, "Device Minor:", v, sizeof(v))) {
		errno = 0;
		m = strtol(v, &end, 10);
		if (!errno && end != v && !*end && m >= 0 && m < NV_CTL_MINOR)
			g->minor = (int)m;
	}
	if (g->minor >= 0) {
		info("gpu %s: Device Minor: %d (%s)", g->bdf, g->minor, path);
		snprintf(g->node, sizeof(g->node), "%s/nvidia%d", dev,
			 g->minor);
	} else {
		info("gpu %s: Device Minor: unknown (no number 0..254 on a \"Device Minor:\" line of %s)",
		     g->bdf, path);
	}
	snprintf(gc_smi_bdf, sizeof(gc_smi_bdf), "%s", g->bdf);
	read_persistence(g, job->fake);
	info("gpu %s: persistence mode: %s (%s)", g->bdf, pm_word(g->pm),
	     g->pm_why);
}

/*
 * The processes other than this one with @node open: their count, and
 * in *@hidden those whose descriptors we may not read (not root). The
 * kernel's own files (a kvpool arena's keep-alive) are in no /proc.
 */
static int node_holders(const char *node, int *hidden, pid_t *first)
{
	char fdd[280], link[560], target[4096];
	struct dirent *p, *e;
	DIR *proc, *fds;
	int n = 0, held;
	ssize_t len;

	*hidden = 0;
	*first = 0;
	proc = opendir("/proc");
	if (!proc)
		return 0;
	while ((p = readdir(proc))) {
		if (!isdigit((unsigned char)p->d_name[0]) ||
		    atoi(p->d_name) == getpid())
			continue;
		snprintf(fdd, sizeof(fdd), "/proc/%s/fd", p->d_name);
		fds = opendir(fdd);
		if (!fds) {
			if (errno == EACCES)
				(*hidden)++;
			continue;
		}
		held = 0;
		while (!held && (e = readdir(fds))) {
			snprintf(link, sizeof(link), "%s/%s", fdd, e->d_name);
			len = readlink(link, target, sizeof(target) - 1);
			if (len < 0)
				continue;
			target[len] = '\0';
			held = !strcmp(target, node);
		}
		closedir(fds);
		if (held && !n++)
			*first = atoi(p->d_name);
	}
	closedir(proc);
	return n;
}

/* Open the GPU's device node as the arena's keep-alive would hold it. */
static int hold_node(const struct gc_gpu *g, int fake)
{
	struct gc_file f;
	int fd;

	if (!g->node[0]) {
		step(0, "H: hold the GPU's device node: its Device Minor is unknown");
		return -1;
	}
	fd = open(g->node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		step(0, "H: open %s: %s", g->node, strerror(errno));
		return -1;
	}
	file_of(fd, &f);
	if (f.chr && f.maj == NV_MAJOR && (int)f.min == g->minor)
		step(1, "H: holds %s open (rdev %u:%u), the arena's keep-alive",
		     g->node, f.maj, f.min);
	else if (fake && !strcmp(f.type, "fifo"))
		step(1, "H: holds %s open (the fake driver's FIFO), the arena's keep-alive",
		     g->node);
	else
		step(0, "H: %s is a %s %u:%u, not NVIDIA's 195:%d",
		     g->node, f.type, f.maj, f.min, g->minor);
	return fd;
}

/*
 * Whether descriptors @a and @b (both ours) are one open file. kcmp()
 * says; without it (no CONFIG_KCMP), the file status flags, which belong
 * to the open file: set O_NONBLOCK on @a and look at @b, then put it back.
 */
static int same_file(int a, int b, const char **how)
{
	int fa, fb, r;

	r = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, a, b);
	if (r >= 0) {
		*how = "kcmp";
		return r == 0;
	}
	*how = "F_SETFL";
	fa = fcntl(a, F_GETFL);
	if (fa < 0 || fcntl(a, F_SETFL, fa ^ O_NONBLOCK))
		return -1;
	fb = fcntl(b, F_GETFL);
	fcntl(a, F_SETFL, fa);
	if (fb < 0)
		return -1;
	return (fb & O_NONBLOCK) == ((fa ^ O_NONBLOCK) & O_NONBLOCK);
}

/* Hand @who a dup of @held, as the kernel's ARENA gives each client. */
static int hand_dup(const char *who, int (*fn)(int), struct gc_job *job,
		    int held)
{
	int d = dup(held), ret;

	if (d < 0)
		return step(0, "H: dup for %s: %s", who, strerror(errno)) - 1;
	ret = run_child(who, fn, job, d, NULL, NULL);
	close(d);
	return ret;
}

/* ---- the phases ---- */

static unsigned int next_seed(void)
{
	static unsigned int s;
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	s = (s + (unsigned int)getpid()) * 2654435761u ^
	    (unsigned int)t.tv_nsec;
	if (s == GC_CLEARED)	/* that one names no pattern */
		s = 1;
	return s;
}

/* 3. The agent's re-export of the master, and a client of it alone. */
static void phase_reexport(struct gc_job *job, int master)
{
	struct gc_job back;
	const char *how = "";
	int fresh = -1, same, d;
	struct gc_file f, m;

	d = dup(master);
	if (d < 0 || run_child("R", proc_r, job, d, &back, &fresh)) {
		if (d >= 0)
			close(d);
		if (fresh >= 0)
			close(fresh);
		step(0, "H: get R's fresh export");
		return;
	}
	close(d);
	file_of(master, &m);
	file_of(fresh, &f);
	info("H: the fresh export is rdev %u:%u, the master %u:%u", f.maj,
	     f.min, m.maj, m.min);
	same = same_file(master, fresh, &how);
	step(same == 0, "H: the fresh export is another open file than the master (%s)",
	     how);
	/* The kernel keeps no reference to a client's export: D has it. */
	run_child("D", proc_d, job, fresh, NULL, NULL);
	close(fresh);
	if (!p_fakecuda_unexport) {
		skip("D: unexports its own file, the master unaffected # SKIP the driver has no public unexport call: only the fake can show it");
		return;
	}
	hand_dup("E", proc_e, job, master);
}

/*
 * 4a. No keep-alive: with nobody holding the device node and every CUDA
 * process gone, T's export must die. Whether it may run here.
 */
static int teardown_allowed(const struct gc_gpu *g, int toggle)
{
	int hidden, n;
	pid_t first;

	if (!g->node[0]) {
		skip("teardown case without a keep-alive # SKIP the GPU's device node is unknown");
		return 0;
	}
	if (g->pm < 0) {
		skip("teardown case without a keep-alive # SKIP persistence mode unknown (%s): the GPU may stay up without one",
		     g->pm_why);
		return 0;
	}
	if (g->pm > 0 && !toggle) {
		skip("teardown case without a keep-alive # SKIP persistence mode is on: the GPU stays up without one (--allow-persistence-toggle, as root, turns it off for the case and back on)");
		return 0;
	}
	n = node_holders(g->node, &hidden, &first);
	if (n) {
		skip("teardown case without a keep-alive # SKIP %d other process(es) hold %s (pid %d first): the GPU cannot be torn down",
		     n, g->node, (int)first);
		return 0;
	}
	if (hidden)
		info("H: %d processes' descriptors are not ours to read: a holder of %s among them would keep the GPU up",
		     hidden, g->node);
	if (g->pm > 0) {
		if (geteuid()) {
			skip("teardown case without a keep-alive # SKIP persistence mode is on and --allow-persistence-toggle needs root");
			return 0;
		}
		gc_pm_toggled = 1;
		if (!step(smi_pm("0") == 0, "H: %s -i %s -pm 0 (put back after the case)",
			  gc_smi, g->bdf)) {
			gc_pm_toggled = 0;
			smi_pm("1");
			return 0;
		}
	}
	info("H: closes %s: no keep-alive, no other process holds it, persistence off",
	     g->node);
	return 1;
}

/* 4. T exports and exits; U imports with (@keep >= 0) or without one. */
static void phase_teardown(struct gc_job *job, int keep)
{
	struct gc_job back;
	int fd = -1;

	job->seed = next_seed();
	job->expect = keep >= 0;
	if (run_child("T", proc_t, job, -1, &back, &fd)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	run_child("U", proc_u, job, fd, NULL, NULL);
	close(fd);
}

/* ---- 5. the CUDA half of a chunk move ---- */

/*
 * What cuMemGetInfo()'s free may move by for reasons of the driver's own
 * (page tables for W's mappings, say) while the check counts a chunk's
 * bytes: half the chunk, so that "back" and "not back" are told apart
 * with the same margin either way.
 */
#define GC_FREE_SLACK(bytes)	((bytes) / 2)

/* What H asks W, the broker. */
enum {
	MV_INFO,	/* only cuMemGetInfo */
	MV_CREATE,	/* cuMemCreate one chunk, POSIX fd handle */
	MV_EXPORT,	/* a fresh export of it, sent with the answer */
	MV_CLEAR,	/* map it, cuMemsetD8 0, synchronise, unmap: timed */
	MV_CHECK,	/* map it and read @seed's pattern */
	MV_RELEASE,	/* cuMemRelease its handle */
	MV_QUIT,	/* release what is left and exit */
};

/*
 * W's one step of @job's op on its chunk *@h (*@have: it has one); an
 * export in *@efd. Whether it went right.
 */
static int broker_op(struct gc_job *job, CUdevice dev,
		     CUmemGenericAllocationHandle *h, int *have, int *efd)
{
	CUmemAllocationProp prop = chunk_prop(dev);
	struct timespec t0, t1;
	CUdeviceptr va;
	int ok, i;

	if (job->op == MV_CREATE && *have)
		return step(0, "W: a chunk is already made");
	if (job->op != MV_CREATE && job->op != MV_INFO &&
	    job->op != MV_QUIT && !*have)
		return step(0, "W: no chunk to work on (its cuMemCreate failed)");
	switch (job->op) {
	case MV_CREATE:
		*have = cu_step(p_cuMemCreate(h, job->bytes, &prop, 0), "W",
				"cuMemCreate of one granule (POSIX fd handle type)");
		return *have;
	case MV_EXPORT:
		return cu_step(p_cuMemExportToShareableHandle(efd, *h,
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
			       "W", "cuMemExportToShareableHandle, a fresh export");
	case MV_CLEAR:
		if (!map_handle("W", job, dev, *h, &va))
			return 0;
		/*
		 * The clear, timed; then once more, which the context's
		 * first memset (its setup included) is not.
		 */
		ok = 1;
		for (i = 0; i < 2 && ok; i++) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			ok = cu_step(p_cuMemsetD8(va, 0, job->bytes), "W",
				     i ? "cuMemsetD8 0 once more, to time it warm" :
				     "cuMemsetD8 0 over the whole chunk, the clear") &&
			     cu_step(p_cuCtxSynchronize(), "W",
				     "cuCtxSynchronize");
			clock_gettime(CLOCK_MONOTONIC, &t1);
			job->clear_s[i] = (double)(t1.tv_sec - t0.tv_sec) +
					  (t1.tv_nsec - t0.tv_nsec) / 1e9;
		}
		return unmap("W", job, va) && ok;
	case MV_CHECK:
		if (!map_handle("W", job, dev, *h, &va))
			return 0;
		ok = read_check("W", job, va,
				"maps the chunk again and reads Y's bytes: the same memory moved, not a copy");
		return unmap("W", job, va) && ok;
	case MV_RELEASE:
	case MV_QUIT:
		if (!*have)
			return job->op == MV_QUIT;
		*have = 0;
		return cu_step(p_cuMemRelease(*h), "W",
			       "cuMemRelease of its handle");
	}
	return 1;
}

/*
 * W: the broker, the kernel's stand-in on the CUDA side (the kernel will
 * hold the chunks of a CUDA budget as H holds files, but making and
 * clearing one takes a CUDA context, which H must not have). It answers
 * H's MV_* one at a time, each answer with cuMemGetInfo()'s free after
 * it, until MV_QUIT or H's socket closes. A failed CUDA call is a not ok
 * line and an answer, never an exit: H goes on.
 */
static int proc_w(int sock)
{
	CUmemGenericAllocationHandle h = 0;
	struct gc_job job;
	size_t gran, total;
	CUdevice dev;
	int fd, efd, have = 0, op;
	CUresult r;

	if (recv_job(sock, &job, &fd) || !open_device("W", &job, &dev))
		return 1;
	if (!granularity("W", dev, &gran))
		return 1;
	info("W: granularity: %zu bytes%s: the chunk is one granule", gran,
	     gran == (2u << 20) ? " (2 MiB, as expected)" :
	     " (not the 2 MiB expected)");
	job.bytes = gran;
	job.op = MV_INFO;
	for (;;) {
		efd = -1;
		op = job.op;
		job.ok = broker_op(&job, dev, &h, &have, &efd);
		/* Quiet when it works: it follows every step. */
		r = p_cuMemGetInfo(&job.free, &total);
		job.have_free = r == CUDA_SUCCESS;
		if (!job.have_free)
			cu_step(r, "W", "cuMemGetInfo");
		if (send_job(sock, &job, efd))
			return 1;
		if (efd >= 0)
			close(efd);
		if (op == MV_QUIT)
			return !job.ok;
		if (recv_job(sock, &job, &fd))
			return 1;
		if (fd >= 0)
			close(fd);
	}
}

static int proc_x(int sock)
{
	return tenant_proc("X", sock, 0);
}

static int proc_y(int sock)
{
	return tenant_proc("Y", sock, 1);
}

/* W's socket, -1 once it is gone; what it answered last. */
struct gc_broker {
	int sock;
	pid_t pid;
	struct gc_job job;
};

/* b->job to W and its answer back (@fd: its export); @fail if not. */
static int talk(struct gc_broker *b, const char *fail, int *fd)
{
	if (!send_job(b->sock, &b->job, -1) &&
	    !recv_job(b->sock, &b->job, fd))
		return 0;
	step(0, "%s", fail);
	close(b->sock);
	b->sock = -1;
	return -1;
}

/* Ask W for @op; its export in *@fd if @fd. 0 if W answered ok. */
static int ask(struct gc_broker *b, int op, unsigned int seed, int *fd)
{
	int efd = -1;

	if (fd)
		*fd = -1;
	if (b->sock < 0)
		return -1;
	b->job.op = op;
	b->job.seed = seed;
	if (talk(b, "H: W did not answer (it died?)", &efd))
		return -1;
	if (fd)
		*fd = efd;
	else if (efd >= 0)
		close(efd);
	return b->job.ok ? 0 : -1;
}

/* W, ready: the chunk's size in its job. 0 if it started. */
static int broker_start(struct gc_broker *b, const struct gc_job *job)
{
	int fd = -1;

	b->job = *job;
	b->pid = spawn(proc_w, &b->sock);
	if (b->pid < 0) {
		b->sock = -1;
		return step(0, "H: start W: %s", strerror(errno)) - 1;
	}
	gc_w = b->pid;
	return talk(b, "H: W found no device (above)", &fd);
}

/* MV_QUIT, and W reaped (killed if it does not take it). */
static void broker_stop(struct gc_broker *b)
{
	int ok = b->sock >= 0 && !ask(b, MV_QUIT, 0, NULL);

	if (b->sock >= 0)
		close(b->sock);
	b->sock = -1;
	if (b->pid <= 0)
		return;	/* it never started: said above */
	if (!ok)
		kill(b->pid, SIGKILL);
	ok = !reap("W", b->pid) && ok;
	gc_w = 0;
	step(ok, "W: exited 0");
}

/*
 * Whether W's last free says the chunk's bytes came @back with the
 * release @when: free up since @ref by the chunk less the slack, or not.
 * @ref is W's free right before the release, so that memory the driver
 * gives back late for a tenant gone earlier (its context) falls outside;
 * for a tenant's exit, the free with the chunk just made, @made, which
 * the line shows too.
 */
static void free_step(const struct gc_broker *b, size_t ref, size_t made,
		      int back, const char *when)
{
	long long up = ((long long)b->job.free - (long long)ref) / 1024;
	long long all = ((long long)b->job.free - (long long)made) / 1024;
	long long need = (long long)(b->job.bytes -
				     GC_FREE_SLACK(b->job.bytes)) / 1024;

	if (!b->job.have_free)
		return;	/* W's cuMemGetInfo failed, said above */
	step(back ? up >= need : up < need,
	     "H: %s: free rose %lld KiB with it (%lld KiB since the chunk was made): its bytes are %s (want %s %lld KiB: the chunk less %zu KiB of slack for the driver's own use)",
	     when, up, all, back ? "back" : "not back", back ? ">=" : "<",
	     need, GC_FREE_SLACK(b->job.bytes) >> 10);
}

static double gbps(size_t bytes, double s)
{
	return s > 0 ? bytes / s / 1e9 : 0.0;
}

/* A tenant @who on a dup of the export @fd (H keeps it), if W made one. */
static void tenant(const char *who, int (*fn)(int), struct gc_job *job,
		   int fd)
{
	if (fd < 0) {
		info("%s: not run: W made no export (above)", who);
		return;
	}
	hand_dup(who, fn, job, fd);
}

/*
 * 5a. The move: W makes a chunk, X maps it, writes and goes; W clears it;
 * Y maps a fresh export, finds 0, writes; W sees Y's bytes. Free memory
 * is counted at each step: the chunk's bytes must come back only when
 * W's handle and both of H's exports are gone, not with X's exit or any
 * release before the last.
 */
static void move_cleared(struct gc_broker *b, struct gc_job *job)
{
	size_t before, made, ref;
	int fx = -1, fy = -1;

	before = b->job.free;
	job->bytes = b->job.bytes;
	info("W: free before the chunk: %zu KiB", before >> 10);
	if (ask(b, MV_CREATE, 0, NULL))
		return;
	made = b->job.free;
	info("W: free with the chunk made: %zu KiB", made >> 10);
	if (b->job.have_free)
		step((long long)before - (long long)made >=
		     (long long)(b->job.bytes - GC_FREE_SLACK(b->job.bytes)),
		     "H: free fell by %lld KiB when W made the chunk (want >= %zu KiB: the chunk less %zu KiB of slack for the driver's own use)",
		     ((long long)before - (long long)made) / 1024,
		     (b->job.bytes - GC_FREE_SLACK(b->job.bytes)) >> 10,
		     GC_FREE_SLACK(b->job.bytes) >> 10);
	ask(b, MV_EXPORT, 0, &fx);
	job->seed = next_seed();
	tenant("X", proc_x, job, fx);
	if (!ask(b, MV_INFO, 0, NULL))
		free_step(b, made, made, 0,
			  "X gone, W's handle and H's export hold the chunk");
	if (!ask(b, MV_CLEAR, 0, NULL))
		info("W: cleared %zu bytes in %.1f us, %.2f GB/s; a second memset took %.1f us, %.2f GB/s (cuMemsetD8 and cuCtxSynchronize each, the first in W's context first: figures, not asserted)",
		     b->job.bytes, b->job.clear_s[0] * 1e6,
		     gbps(b->job.bytes, b->job.clear_s[0]),
		     b->job.clear_s[1] * 1e6,
		     gbps(b->job.bytes, b->job.clear_s[1]));
	ask(b, MV_EXPORT, 0, &fy);
	job->last = GC_CLEARED;
	job->write = 1;
	job->seed = next_seed();
	tenant("Y", proc_y, job, fy);
	ask(b, MV_CHECK, job->seed, NULL);
	/* Each release between two answers of W's: its own rise. */
	ref = b->job.free;
	if (!ask(b, MV_RELEASE, 0, NULL))
		free_step(b, ref, made, 0,
			  "W's handle released, H's two exports hold the chunk");
	ref = b->job.free;
	if (fx >= 0)
		close(fx);
	if (!ask(b, MV_INFO, 0, NULL))
		free_step(b, ref, made, 0,
			  "X's export closed, Y's holds the chunk");
	ref = b->job.free;
	if (fy >= 0)
		close(fy);
	if (!ask(b, MV_INFO, 0, NULL))
		free_step(b, ref, made, 1,
			  "Y's export closed too, nothing holds the chunk");
}

/* 5b. The same without the clear: Y must find X's bytes. */
static void move_uncleared(struct gc_broker *b, struct gc_job *job)
{
	int fx = -1, fy = -1;

	job->bytes = b->job.bytes;
	if (ask(b, MV_CREATE, 0, NULL))
		return;
	ask(b, MV_EXPORT, 0, &fx);
	job->seed = next_seed();
	tenant("X", proc_x, job, fx);
	ask(b, MV_EXPORT, 0, &fy);
	job->last = job->seed;
	job->write = 0;
	tenant("Y", proc_y, job, fy);
	if (fx >= 0)
		close(fx);
	if (fy >= 0)
		close(fy);
}

/*
 * 5. The CUDA half of a chunk move between tenants, as a CUDA budget will
 * do it, with W for the kernel: each part its own W, so that one that
 * fails does not stop the other.
 */
static void phase_move(const struct gc_job *a)
{
	struct gc_broker b;
	struct gc_job job = *a;

	info("chunk move: W (the broker, for the kernel) makes a chunk; X maps it, writes, goes; W clears it; Y maps it and must find 0");
	job.bytes = 0;
	if (!broker_start(&b, &job))
		move_cleared(&b, &job);
	broker_stop(&b);
	info("chunk move: again on a new chunk without the clear");
	job = *a;
	job.bytes = 0;
	if (!broker_start(&b, &job))
		move_uncleared(&b, &job);
	broker_stop(&b);
}

/* ---- 6. through the module and the GPU agent ---- */

/* A pool of 8 pages of 256 KiB: one 2 MiB chunk at the usual granule. */
#define GC_POOL_PAGES		8
#define GC_POOL_PAGE_BYTES	(256u << 10)

static unsigned int gc_pool;

/* K: the administrator's tool, as kvpoolctl arena create --cuda runs. */
static int proc_k(int sock)
{
	struct gc_job job;
	uint32_t ei = 0;
	int fd, ret;

	if (recv_job(sock, &job, &fd))
		return 1;
	ret = kvpool_arena_create_cuda_flags(gc_pool, GC_POOL_PAGE_BYTES, 1,
					     KVPOOL_ARENA_SET_AGENT, &ei);
	if (ret)
		return !step(0, "K: kvpool_arena_create_cuda_flags(pool %u, KVPOOL_ARENA_SET_AGENT): %s",
			     gc_pool, kvpool_arena_error());
	return !step(1, "K: kvpool_arena_create_cuda_flags(pool %u, KVPOOL_ARENA_SET_AGENT)",
		     gc_pool);
}

/* M writes, N reads: clients mapping the arena through the agent. */
static int agent_client(const char *who, int sock, int write)
{
	struct kvpool_arena_view v;
	struct kvpool *kp;
	struct gc_job job;
	char path[64];
	int fd, ret, ok;

	if (recv_job(sock, &job, &fd))
		return 1;
	snprintf(path, sizeof(path), "/dev/kvpool%u", gc_pool);
	ret = kvpool_open(path, &kp);
	if (ret)
		return !step(0, "%s: open %s: %s", who, path,
			     kvpool_strerror(ret));
	ret = kvpool_arena_map(kp, &v);
	if (!step(!ret, "%s: kvpool_arena_map through the agent%s%s", who,
		  ret ? ": " : "", ret ? kvpool_arena_error() : ""))
		return 1;
	job.bytes = v.bytes;
	if (write)
		ok = write_pattern(who, &job, (CUdeviceptr)(uintptr_t)v.base) &&
		     read_check(who, &job, (CUdeviceptr)(uintptr_t)v.base,
				"reads back what it wrote");
	else
		ok = read_check(who, &job, (CUdeviceptr)(uintptr_t)v.base,
				"reads M's bytes through its own export");
	ret = kvpool_arena_unmap(&v);
	ok &= step(!ret, "%s: kvpool_arena_unmap", who);
	kvpool_close(kp);
	return !ok;
}

static int proc_m(int sock)
{
	return agent_client("M", sock, 1);
}

static int proc_n(int sock)
{
	return agent_client("N", sock, 0);
}

/* Whether a process called @comm runs (root sees them all; so do we). */
static int comm_runs(const char *comm)
{
	char path[280], name[64];
	struct dirent *p;
	DIR *proc;
	int found = 0;

	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (!found && (p = readdir(proc))) {
		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		found = !read_key(path, "", name, sizeof(name)) &&
			!strcmp(name, comm);
	}
	closedir(proc);
	return found;
}

/*
 * 6. Where the module is loaded and kvpool-gpud runs: a pool for the GPU,
 * its agent arena made by libkvpool, a client writing and another reading
 * through exports the agent made for each; the pool destroyed after.
 * Optional on a GPU host: without kvpool installed it is skipped.
 */
static void phase_agent(struct gc_job *job, const char *lib)
{
	struct kvpool_pool_params p = {
		.nr_pages = GC_POOL_PAGES, .page_tokens = 16, .nr_rows = 8,
		.row_tokens = GC_POOL_PAGES * 16, .flags = KVPOOL_CREATE_GPU,
	};
	struct kvpool_info ki;
	struct kvpool *kp;
	char path[64];
	int ret;

	memset(&ki, 0, sizeof(ki));

	/* Optional: a GPU host need not have kvpool, and is not told off. */
	if (access(KVPOOL_CONTROL_PATH, F_OK)) {
		info("the module's path: not run: no %s (the kvpool module is not loaded)",
		     KVPOOL_CONTROL_PATH);
		return;
	}
	if (!comm_runs("kvpool-gpud")) {
		skip("agent path through the module # SKIP kvpool-gpud is not running (systemctl start kvpool-gpud)");
		return;
	}
	if (geteuid()) {
		skip("agent path through the module # SKIP a pool is made with CAP_SYS_ADMIN: run as root");
		return;
	}
	ret = kvpool_pci_parse(job->bdf, &p.gpu_domain, &p.gpu_devid);
	if (!ret)
		ret = kvpool_pool_create(&p, &gc_pool);
	if (!step(!ret, "H: a pool for %s (kvpool_pool_create)%s%s", job->bdf,
		  ret ? ": " : "", ret ? kvpool_strerror(ret) : ""))
		return;
	snprintf(path, sizeof(path), "/dev/kvpool%u", gc_pool);
	ret = kvpool_open(path, &kp);
	if (!ret) {
		ret = kvpool_info(kp, &ki);
		kvpool_close(kp);
	}
	if (ret || !(ki.out_features & KVPOOL_FEAT_GPU_AGENT)) {
		step(0, "H: pool %u's module has KVPOOL_FEAT_GPU_AGENT%s%s",
		     gc_pool, ret ? ": " : "", ret ? kvpool_strerror(ret) : "");
		goto out;
	}
	/* libkvpool loads the driver this check was told to. */
	if (strcmp(lib, "libcuda.so.1"))
		setenv("KVPOOL_LIBCUDA", lib, 1);
	job->seed = next_seed();
	if (run_child("K", proc_k, job, -1, NULL, NULL))
		goto out;
	if (!run_child("M", proc_m, job, -1, NULL, NULL))
		run_child("N", proc_n, job, -1, NULL, NULL);
out:
	ret = kvpool_pool_destroy(gc_pool);
	step(!ret, "H: destroy pool %u%s%s", gc_pool, ret ? ": " : "",
	     ret ? kvpool_strerror(ret) : "");
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--gpu BDF] [--bytes N] [--libcuda PATH]\n"
		"          [--allow-persistence-toggle]\n"
		"  --gpu BDF       the GPU by PCI bus id (default: device 0)\n"
		"  --bytes N       chunk size, rounded up to the granularity\n"
		"                  (default: 2 granules)\n"
		"  --libcuda PATH  the driver library (default: libcuda.so.1)\n"
		"  --allow-persistence-toggle\n"
		"                  with persistence mode on, turn it off for\n"
		"                  the teardown case and back on (root)\n"
		"Exit: 0 all steps passed, 1 a step failed, 2 no CUDA driver.\n",
		prog);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gpu", required_argument, NULL, 'g' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "libcuda", required_argument, NULL, 'l' },
		{ "allow-persistence-toggle", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lib = "libcuda.so.1", *missing;
	struct timespec t0, t1;
	struct gc_job job, back;
	struct gc_gpu g;
	int c, held = -1, keep = -1, toggle = 0, total, sa, st;
	char *end;
	pid_t pa;
	void *dl;

	memset(&job, 0, sizeof(job));
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (strlen(optarg) >= sizeof(job.bdf)) {
				fprintf(stderr, "gpu-check: --gpu %s: too long\n",
					optarg);
				return 1;
			}
			snprintf(job.bdf, sizeof(job.bdf), "%s", optarg);
			job.dev = -1;
			break;
		case 'b':
			errno = 0;
			job.bytes = strtoull(optarg, &end, 0);
			if (errno || *end || !job.bytes) {
				fprintf(stderr, "gpu-check: --bytes %s: not a size in bytes\n",
					optarg);
				return 1;
			}
			break;
		case 'l':
			lib = optarg;
			break;
		case 'p':
			toggle = 1;
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
		printf("not ok - %s has no %s\n", lib, missing);
		printf("gpu-check: FAIL: the driver lacks an entry point\n");
		return 1;
	}
	*(void **)&p_fakecuda_unexport = dlsym(dl, "fakecuda_unexport");
	info("libcuda: %s", lib);

	tally = mmap(NULL, sizeof(*tally), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tally == MAP_FAILED) {
		perror("gpu-check: mmap");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	signal(SIGALRM, on_fatal);
	signal(SIGTERM, on_fatal);
	signal(SIGINT, on_fatal);
	alarm(GC_TIMEOUT_S);

	/* 1. The facts; A finds the device, H its node and mode. */
	print_module_version();
	pa = spawn(proc_a, &sa);
	if (pa < 0) {
		step(0, "H: start A: %s", strerror(errno));
		goto out;
	}
	gc_a = pa;
	if (send_job(sa, &job, -1) || recv_job(sa, &job, &held)) {
		step(0, "H: A found no device");
		goto out_a;
	}
	gpu_facts(&job, &g);

	/* 2. libkvpool's order, the GPU held up as an arena holds it. */
	keep = hold_node(&g, job.fake);
	if (send_all(sa, "g", 1) || recv_job(sa, &back, &held) || held < 0) {
		step(0, "H: receive A's export");
		goto out_a;
	}
	export_step("H", "held fd", held, job.fake);
	job = back;
	job.seed = next_seed();
	hand_dup("B", proc_b, &job, held);
	/* The owner goes: from here H's files alone keep the chunk. */
	kill(pa, SIGKILL);
	st = 0;
	if (waitpid(pa, &st, 0) != pa)
		step(0, "H: reap A: %s", strerror(errno));
	else
		step(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
		     kill(pa, 0) < 0 && errno == ESRCH,
		     "H: A (pid %d) killed by SIGKILL, reaped, gone", (int)pa);
	gc_a = 0;
	close(sa);
	hand_dup("C", proc_c, &job, held);

	/* 3. The agent's path. */
	phase_reexport(&job, held);
	close(held);
	held = -1;

	/* 4. Teardown, without the keep-alive and with it. */
	if (keep < 0) {
		skip("teardown cases # SKIP H could not hold the GPU's device node (above)");
	} else {
		if (teardown_allowed(&g, toggle)) {
			close(keep);
			phase_teardown(&job, -1);
			if (gc_pm_toggled) {
				step(smi_pm("1") == 0,
				     "H: %s -i %s -pm 1 (put back)", gc_smi,
				     g.bdf);
				gc_pm_toggled = 0;
			}
			keep = hold_node(&g, job.fake);
		}
		if (keep >= 0)
			phase_teardown(&job, keep);
	}

	/* 5. The CUDA half of a chunk move. */
	phase_move(&job);

	/* 6. The module's path, where it is there. */
	phase_agent(&job, lib);
	goto out;
out_a:
	kill(pa, SIGKILL);
	reap("A", pa);
	gc_a = 0;
	close(sa);
out:
	if (held >= 0)
		close(held);
	if (keep >= 0)
		close(keep);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	total = tally->pass + tally->fail;
	printf("gpu-check: %s: %d of %d steps passed in %.1f s (%d skipped)\n",
	       tally->fail || !total ? "FAIL" : "PASS", tally->pass, total,
	       (double)(t1.tv_sec - t0.tv_sec) +
	       (t1.tv_nsec - t0.tv_nsec) / 1e9, tally->skip);
	return tally->fail || !total;
}
