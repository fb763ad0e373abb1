// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakecuda: a test double of the CUDA driver API over host memory. It is
 * not a driver and drives no GPU: it lets the tests of kvpool's CUDA arenas
 * (and tools/gpu-check) run on machines that have no NVIDIA hardware, by
 * answering the subset of the driver API that a virtual memory management
 * (VMM) user calls, with the same types and signatures (it is compiled
 * against NVIDIA's own cuda.h) and the same rules, so that a caller's
 * mistakes fail here as they would on a GPU. Where NVIDIA's driver frees,
 * tears down or refuses something, the fake does too, so a test that
 * passes here by luck fails: the rules below say what is modelled, and
 * each has a test in fakecuda_test.c.
 *
 * Devices and calls:
 *  - KVPOOL_FAKECUDA_GPUS="0000:00:10.0,0000:00:11.0" lists the GPUs by
 *    PCI bus id, the ordinal being the position. Unset or empty, cuInit()
 *    fails with CUDA_ERROR_NO_DEVICE, as on a host with no GPU.
 *  - cuInit() first: every other call but cuDriverGetVersion() and the
 *    error strings returns CUDA_ERROR_NOT_INITIALIZED before it, and the
 *    error cuInit() gave after a failed one. A child forked after cuInit()
 *    gets CUDA_ERROR_NOT_INITIALIZED from everything, since CUDA does not
 *    survive fork(): a caller must fork first, then initialise. (The
 *    child still holds the parent's device files, as a child of a CUDA
 *    process holds its /dev/nvidiaN: see rule 1.)
 *  - cuDeviceGetAttribute(): only the VMM and POSIX fd handle support
 *    attributes (1); others are CUDA_ERROR_NOT_SUPPORTED, not invented.
 *  - primary contexts, retained and released, current per thread; copies
 *    and synchronisation need a live current context.
 *  - sizes must be multiples of the granularity, KVPOOL_FAKECUDA_GRANULARITY
 *    bytes (2 MiB by default); cuMemMap() takes offset 0 only, and memory
 *    is usable only after cuMemSetAccess(): copies and memsets check that
 *    every byte lies in mapped memory with the access they need.
 *  - cuMemRelease() of a handle leaves its mappings working, as in CUDA.
 *  - the plain names that cuda.h renames to _v2 are exported too, with
 *    their legacy signatures: cuMemcpyHtoD, cuMemcpyDtoH and cuMemsetD8
 *    take 32-bit device pointers, which never name fake memory, so a caller
 *    that dlsym()s the wrong name fails instead of passing by luck.
 *
 * The registry. Every process using the fake shares one folder,
 * KVPOOL_FAKECUDA_DIR (default /dev/shm/kvpool-fakecuda, created 0700),
 * which plays the driver's state: the allocations' backing files
 * (alloc-PID-START-SEQ-devD, never a name twice) with their records
 * (.info: device, size, generation; .pid-PID-START: a holder;
 * .pty-N-COOKIE: an export), the exports' own records (pty-N: what the
 * export names) and the GPUs' generations (gpuD.gen). Every change to it is made under an
 * flock() of its file "lock", so what a process reads there is whole.
 *
 * 1. The GPU device node and teardown. For GPU d the registry holds a
 *    FIFO nvidia<d> (0600, made at cuInit() if missing), the stand-in of
 *    /dev/nvidiaN, and gpus/<bdf>/information, the stand-in of
 *    /proc/driver/nvidia/gpus/<bdf>/information, with NVIDIA's "Model:",
 *    "Bus Location:" and "Device Minor: d" lines (bdf in lower case, the
 *    folder named as NVIDIA names it). libkvpool finds both with
 *    KVPOOL_NVIDIA_PROC and KVPOOL_NVIDIA_DEV set to the registry. A
 *    process holds an O_RDWR file of nvidia<d> while it uses GPU d: from
 *    the first cuDevicePrimaryCtxRetain() to the last release, and also
 *    while it has a handle or a mapping of memory on d (CUDA cannot hold
 *    memory of a GPU it has not opened); exit closes it, as it closes
 *    /dev/nvidiaN. The GPU is up while any open file of the FIFO exists,
 *    anyone's: a process's, or the one the kvpool module holds for an
 *    arena set with KVPOOL_ARENA_SET_DEVICE. Whenever a process opens its
 *    own file of nvidia<d> it first probes, under the lock, whether
 *    anyone holds one (an O_WRONLY|O_NONBLOCK open fails with ENXIO iff
 *    the FIFO has no reader). If nobody does, the GPU was torn down since
 *    it was last up: its generation goes up and every allocation of an
 *    older generation is freed, its exports dead, as NVIDIA's RM frees
 *    exported objects with their device instance when nv_close_device()
 *    stops a GPU whose use count fell to 0 (persistence mode off).
 * 2. Memory is freed when the last reference goes. An allocation lives
 *    while any of these exists: a handle (cuMemCreate() or
 *    cuMemImportFromShareableHandle(), not yet cuMemRelease()d) or a
 *    mapping (cuMemMap(), not yet unmapped) in a live process, or an open
 *    export file of it anywhere, the kernel's included. A process records
 *    itself as a holder (PID and start time, /proc/PID/stat field 22, so
 *    that a reused pid does not count, and a zombie does not either) when
 *    its first handle or mapping of the allocation comes and removes the
 *    record when the last goes. Garbage is collected in cuInit(),
 *    cuMemCreate(), cuMemImportFromShareableHandle(), cuMemGetInfo() and
 *    fakecuda_gc(): a dead allocation's backing file and records are
 *    unlinked, and an import of an export of it fails with
 *    CUDA_ERROR_INVALID_VALUE, the error cuda.h documents for an import
 *    that names nothing (RM refuses the fd's object as an invalid
 *    argument; 12.x has no CUDA_ERROR_INVALID_HANDLE for this).
 *    cuMemGetInfo() counts what lives: each GPU has KVPOOL_FAKECUDA_MEMORY
 *    bytes (80 GiB by default, none of it real), and free is that less
 *    the sizes of its allocations that live, so a chunk's bytes come
 *    back only when its last handle, mapping and export are gone. No
 *    limit is enforced: cuMemCreate() never runs out.
 * 3. Device memory is not reachable from the CPU. cuMemAddressReserve()
 *    hands out address space that stays PROT_NONE for the CPU forever: a
 *    load or store at a device pointer dies of SIGSEGV, as on a GPU. The
 *    bytes live in a shadow mapping of the backing file at another
 *    address, which only the fake's copies and memsets use.
 * 4. Exports, unexport and replace. cuMemExportToShareableHandle() with
 *    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR returns a new pty master: a
 *    character device file (5:2), as NVIDIA's handles (files of
 *    /dev/nvidiactl, 195:255) are, which the kvpool module takes under its
 *    fake_cuda test hook. Its pty index names the export in the registry
 *    (pty-N: the allocation, or "-" for none) and a random cookie kept in
 *    the pty's window size tells a reused index from the one exported; the
 *    pty is open iff /dev/pts/N exists with that cookie, a probe that sees
 *    the files the kernel holds too. The importer needs only the fd: the
 *    exporter may be dead by then. Each export is its own open file, as on
 *    NVIDIA's driver: fakecuda_unexport(fd) makes the export file (every
 *    descriptor of that open file, in every process) export nothing, and
 *    fakecuda_export_replace(fd, h) makes it export h's allocation, as the
 *    non-privileged NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD lets any
 *    holder of an nvidiactl file do; another export of the same allocation
 *    is not affected. (fakecuda.h declares these.)
 * 5. Asynchronous memsets. cuMemsetD8_v2 queues the work in the process;
 *    it is applied at cuCtxSynchronize(), or before the same process's next
 *    copy, unmap, access change or last context release (stream order: a
 *    cuMemcpyDtoH after a memset sees it). Another process reading through
 *    its own mapping does not see a memset the writer never synchronised.
 *    Work still queued when a process exits is dropped: a GPU need not
 *    finish the work of a process that exits without synchronising.
 *
 * What it does not model: kernels, streams, events, peer access rules,
 * running out of memory, the driver's own use of memory (contexts, page
 * tables), RM clients made on an export file. The probes need devpts
 * mounted for /dev/ptmx and /dev/pts/N; a pty whose /dev/pts/N this
 * process may not open is taken as open (kept, not freed).
 */
#define _GNU_SOURCE
#include <cuda.h>

#include "fakecuda.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define FAKE_MAX_GPUS	16
#define FAKE_DEF_DIR	"/dev/shm/kvpool-fakecuda"
#define FAKE_DEF_GRAN	(2UL << 20)
#define FAKE_DEF_MEMORY	(80ULL << 30)	/* an 80 GB card's */
#define FAKE_NAME_LEN	64
#define FAKE_PATH_LEN	(4096 + 2 * FAKE_NAME_LEN)

struct fake_gpu {
	unsigned int domain, bus, dev, fn;
};

struct CUctx_st {
	int dev;
	int refs;
};

/*
 * This process's hold on one allocation: one per allocation however many
 * handles and mappings of it the process has (@refs counts them), since
 * the registry knows the process as one holder.
 */
struct fake_mem {
	char name[FAKE_NAME_LEN];	/* the backing file's name */
	int fd;				/* the backing file */
	size_t size;
	int dev;
	int refs;			/* handles + mappings */
	struct fake_mem *next;
};

struct fake_alloc {
	unsigned long long id;
	struct fake_mem *mem;
	CUmemAllocationHandleType types;
	struct fake_alloc *next;
};

struct fake_resv {
	uintptr_t base;
	size_t size;
	struct fake_resv *next;
};

/* A device range and the shadow mapping that holds its bytes. */
struct fake_map {
	uintptr_t base;
	size_t size;
	int prot;		/* the access cuMemSetAccess() gave */
	unsigned char *shadow;
	struct fake_mem *mem;
	struct fake_map *next;
};

/* A queued memset, applied by fk_flush(). */
struct fake_op {
	uintptr_t dst;
	size_t n;
	unsigned char value;
	struct fake_op *next;
};

/* All under fk_lock; the registry's files under its flock too. */
static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static int fk_inited;		/* cuInit() was called */
static CUresult fk_init_err;	/* and returned this */
static int fk_forked;		/* we are a child forked after cuInit() */
static int fk_ngpus;
static struct fake_gpu fk_gpus[FAKE_MAX_GPUS];
static struct CUctx_st fk_ctx[FAKE_MAX_GPUS];
static int fk_devfd[FAKE_MAX_GPUS];	/* our file of nvidia<d>, or -1 */
static int fk_devrefs[FAKE_MAX_GPUS];	/* contexts + fake_mems on d */
static size_t fk_gran;
static size_t fk_mem_total;	/* each GPU's memory, in bytes */
static char fk_dir[4096];
static int fk_lockfd = -1;
static unsigned long long fk_start;	/* our start time, field 22 */
static unsigned long long fk_next_id = 1;
static unsigned int fk_seq;
static struct fake_mem *fk_mems;
static struct fake_alloc *fk_allocs;
static struct fake_resv *fk_resvs;
static struct fake_map *fk_maps;
static struct fake_op *fk_ops, **fk_ops_tail = &fk_ops;
static __thread CUcontext fk_cur;

static void fk_atfork_child(void)
{
	if (fk_inited)
		fk_forked = 1;
}

/* Callers hold fk_lock. */
static CUresult fk_ready(void)
{
	if (fk_forked || !fk_inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	return fk_init_err;
}

/*
 * Every call but the few that work before cuInit() starts here: on
 * success with fk_lock held, which fk_out() drops.
 */
static CUresult fk_enter(void)
{
	CUresult err;

	pthread_mutex_lock(&fk_lock);
	err = fk_ready();
	if (err != CUDA_SUCCESS)
		pthread_mutex_unlock(&fk_lock);
	return err;
}

static CUresult fk_out(CUresult r)
{
	pthread_mutex_unlock(&fk_lock);
	return r;
}

static const struct {
	CUresult code;
	const char *name;
	const char *str;
} fk_errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
	  "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
	  "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
	  "initialization error" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
	  "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
	  "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
	  "invalid device context" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
	  "operation not supported" },
	{ CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
	  "OS call failed or operation not supported on this OS" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

/* The name (or the description) of @error; unknown codes get NULL. */
static CUresult fk_error(CUresult error, const char **pStr, int name)
{
	size_t i;

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < sizeof(fk_errors) / sizeof(fk_errors[0]); i++) {
		if (fk_errors[i].code == error) {
			*pStr = name ? fk_errors[i].name : fk_errors[i].str;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	return fk_error(error, pStr, 1);
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	return fk_error(error, pStr, 0);
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CUDA_VERSION;
	return CUDA_SUCCESS;
}

/* "DDDD:BB:DD.F" or "BB:DD.F", hex in either case; 0 when it is one. */
static int fk_parse_bdf(const char *s, size_t len, struct fake_gpu *g)
{
	char buf[32], tail;
	int n;

	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (strspn(buf, "0123456789abcdefABCDEF:.") != len)
		return -1;
	g->domain = 0;
	n = sscanf(buf, "%x:%x:%x.%x%c", &g->domain, &g->bus, &g->dev,
		   &g->fn, &tail);
	if (n != 4) {
		g->domain = 0;
		n = sscanf(buf, "%x:%x.%x%c", &g->bus, &g->dev, &g->fn, &tail);
		if (n != 3)
			return -1;
	}
	if (g->domain > 0xffff || g->bus > 0xff || g->dev > 0x1f ||
	    g->fn > 7)
		return -1;
	return 0;
}

/* A pty's window size is where an export keeps its cookie (rule 4). */
static void fk_cookie_to_ws(unsigned long long c, struct winsize *ws)
{
	ws->ws_row = c & 0xffff;
	ws->ws_col = (c >> 16) & 0xffff;
	ws->ws_xpixel = (c >> 32) & 0xffff;
	ws->ws_ypixel = (c >> 48) & 0xffff;
}

static unsigned long long fk_ws_to_cookie(const struct winsize *ws)
{
	return (unsigned long long)ws->ws_row |
	       (unsigned long long)ws->ws_col << 16 |
	       (unsigned long long)ws->ws_xpixel << 32 |
	       (unsigned long long)ws->ws_ypixel << 48;
}

/*
 * The registry. Paths are fk_dir + "/" + a name the fake made, which
 * FAKE_PATH_LEN always holds (fk_configure() checks fk_dir's length).
 */
static void fk_path(char *buf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fk_path(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, FAKE_PATH_LEN, "%s/", fk_dir);

	va_start(ap, fmt);
	vsnprintf(buf + n, FAKE_PATH_LEN - n, fmt, ap);
	va_end(ap);
}

/* The registry's lock, across processes; fk_lock is held already. */
static void fk_reg_lock(void)
{
	while (flock(fk_lockfd, LOCK_EX) && errno == EINTR)
		;
}

static void fk_reg_unlock(void)
{
	flock(fk_lockfd, LOCK_UN);
}

/* @name's whole new text, or its old one: written aside, then renamed. */
static int fk_write_file(const char *name, const char *text)
{
	char path[FAKE_PATH_LEN], tmp[FAKE_PATH_LEN];
	size_t len = strlen(text);
	int fd, ok;

	fk_path(path, "%s", name);
	fk_path(tmp, ".tmp-%d-%s", (int)getpid(), strrchr(name, '/') ?
		strrchr(name, '/') + 1 : name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == (ssize_t)len;
	ok &= !close(fd);
	if (!ok || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* @name's first line, NUL-terminated, in @buf; -1 if it cannot be read. */
static int fk_read_file(const char *name, char *buf, size_t len)
{
	char path[FAKE_PATH_LEN];
	ssize_t n;
	int fd;

	fk_path(path, "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/*
 * Process @pid's start time (/proc/PID/stat field 22), and whether it is
 * still running: a zombie's files and mappings are gone already. -1 if
 * there is no such process.
 */
static int fk_proc_start(int pid, unsigned long long *start, int *running)
{
	char path[64], buf[1024], *p, state;
	unsigned long long st;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The name may hold anything, ')' too: fields follow the last. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c", &state) != 1)
		return -1;
	/* Field 3 is the state; skip 4..21 to reach 22. */
	for (p += 2, i = 3; i < 22 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &st) != 1)
		return -1;
	*start = st;
	*running = state != 'Z' && state != 'X';
	return 0;
}

static unsigned long long fk_gen(int dev)
{
	char name[32], buf[32];

	snprintf(name, sizeof(name), "gpu%d.gen", dev);
	if (fk_read_file(name, buf, sizeof(buf)))
		return 0;
	return strtoull(buf, NULL, 10);
}

static int fk_gen_set(int dev, unsigned long long gen)
{
	char name[32], buf[32];

	snprintf(name, sizeof(name), "gpu%d.gen", dev);
	snprintf(buf, sizeof(buf), "%llu\n", gen);
	return fk_write_file(name, buf);
}

/*
 * Whether pty @n is still the one exported with @cookie: its slave node
 * exists only while its master is open anywhere (a file the kernel holds
 * counts), and shares its window size. One we may not open is taken as
 * open: better kept than freed under a holder.
 */
static int fk_pty_live(unsigned int n, unsigned long long cookie)
{
	char path[64];
	struct winsize ws;
	int fd, live;

	snprintf(path, sizeof(path), "/dev/pts/%u", n);
	fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES || errno == EPERM;
	live = !ioctl(fd, TIOCGWINSZ, &ws) && fk_ws_to_cookie(&ws) == cookie;
	close(fd);
	return live;
}

/* An export's record: the allocation it names ("-": none), its cookie. */
struct fk_entry {
	char name[FAKE_NAME_LEN];
	unsigned long long cookie;
};

static int fk_entry_read(unsigned int ptn, struct fk_entry *e)
{
	char file[32], buf[FAKE_NAME_LEN + 64];

	snprintf(file, sizeof(file), "pty-%u", ptn);
	if (fk_read_file(file, buf, sizeof(buf)) ||
	    sscanf(buf, "%63s %llx", e->name, &e->cookie) != 2 ||
	    strchr(e->name, '/'))
		return -1;
	return 0;
}

static void fk_unlink(const char *name)
{
	char path[FAKE_PATH_LEN];

	fk_path(path, "%s", name);
	unlink(path);
}

/* Creates the empty file @name in the registry. */
static int fk_touch(const char *name)
{
	char path[FAKE_PATH_LEN];
	int fd;

	fk_path(path, "%s", name);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * Points export pty @ptn (of @cookie) at allocation @name ("-": none),
 * from @old (NULL for a new export). Besides its record pty-N, an export
 * of an allocation is named by a marker NAME.pty-N-COOKIE, so that the
 * garbage collector finds an allocation's exports by listing the folder,
 * reading nothing. Registry lock held.
 */
static int fk_entry_set(unsigned int ptn, const char *old, const char *name,
			unsigned long long cookie)
{
	char file[32], buf[FAKE_NAME_LEN + 64];

	if (old && strcmp(old, "-")) {
		snprintf(buf, sizeof(buf), "%s.pty-%u-%llx", old, ptn, cookie);
		fk_unlink(buf);
	}
	snprintf(file, sizeof(file), "pty-%u", ptn);
	snprintf(buf, sizeof(buf), "%s %llx\n", name, cookie);
	if (fk_write_file(file, buf))
		return -1;
	if (!strcmp(name, "-"))
		return 0;
	snprintf(buf, sizeof(buf), "%s.pty-%u-%llx", name, ptn, cookie);
	return fk_touch(buf);
}

/* An allocation's record: its device, size and GPU generation. */
static int fk_info_read(const char *name, int *dev, size_t *size,
			unsigned long long *gen)
{
	char file[FAKE_NAME_LEN + 8], buf[128];

	snprintf(file, sizeof(file), "%s.info", name);
	if (fk_read_file(file, buf, sizeof(buf)) ||
	    sscanf(buf, "%d %zu %llu", dev, size, gen) != 3 ||
	    *dev < 0 || *dev >= FAKE_MAX_GPUS)
		return -1;
	return 0;
}

static int fk_names_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Whether process @pid, started at @start, still runs: then the handles
 * and mappings it recorded still hold their allocation.
 */
static int fk_holder_live(int pid, unsigned long long start)
{
	unsigned long long st;
	int running;

	return !fk_proc_start(pid, &st, &running) && st == start && running;
}

/* Export pty @ptn was found closed: its marker @mark and its record go. */
static void fk_forget_export(const char *mark, unsigned int ptn,
			     unsigned long long cookie)
{
	struct fk_entry e;
	char file[32];

	fk_unlink(mark);
	snprintf(file, sizeof(file), "pty-%u", ptn);
	/* Unless the index was reused: its record is a new export's. */
	if (!fk_entry_read(ptn, &e) && e.cookie == cookie)
		fk_unlink(file);
}

/*
 * Frees every allocation nothing holds any more (rule 2) or whose GPU
 * was torn down since it was made (rule 1), and forgets exports found
 * closed. An allocation's records follow its backing file in the sorted
 * listing: NAME.info, NAME.pid-PID-START per holding process, and
 * NAME.pty-N-COOKIE per export. Its exports are probed only when no
 * process holds it, and only until one is found open: the kernel's
 * masters keep most allocations of a test, and probing each at every
 * import would cost the figures measured through the fake. Returns how
 * many allocations live, or -1 if the registry cannot be read; with
 * @used (FAKE_MAX_GPUS counters, zeroed by the caller), adds each live
 * allocation's size to its GPU's. Registry lock held.
 */
static int fk_gc_locked(size_t *used)
{
	unsigned long long gens[FAKE_MAX_GPUS];
	int have_gen[FAKE_MAX_GPUS] = { 0 };
	char **names = NULL;
	size_t nnames = 0, cap = 0, i, j, len;
	struct dirent *de;
	int count = 0;
	DIR *d = opendir(fk_dir);

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "alloc-", 6))
			continue;
		if (nnames == cap) {
			char **n = realloc(names, (cap = cap * 2 + 64) *
					   sizeof(*n));

			if (!n)
				goto fail;
			names = n;
		}
		names[nnames] = strdup(de->d_name);
		if (!names[nnames])
			goto fail;
		nnames++;
	}
	closedir(d);
	d = NULL;
	qsort(names, nnames, sizeof(*names), fk_names_cmp);

	for (i = 0; i < nnames; i = j) {
		const char *n = names[i];
		unsigned long long gen, start, cookie;
		int dev, pid, alive = 0, ok;
		unsigned int ptn;
		size_t size;

		len = strlen(n);
		/* NAME's records, or a record whose backing file is gone. */
		for (j = i + 1; j < nnames && !strncmp(names[j], n, len) &&
		     names[j][len] == '.'; j++)
			;
		if (strchr(n, '.')) {
			fk_unlink(n);
			continue;
		}
		ok = !fk_info_read(n, &dev, &size, &gen);
		if (ok && !have_gen[dev]) {
			gens[dev] = fk_gen(dev);
			have_gen[dev] = 1;
		}
		ok = ok && gen == gens[dev];
		for (size_t k = i + 1; ok && k < j && !alive; k++)
			if (sscanf(names[k] + len, ".pid-%d-%llu", &pid,
				   &start) == 2) {
				alive = fk_holder_live(pid, start);
				if (!alive)
					fk_unlink(names[k]);
			}
		for (size_t k = i + 1; ok && k < j && !alive; k++)
			if (sscanf(names[k] + len, ".pty-%u-%llx", &ptn,
				   &cookie) == 2) {
				alive = fk_pty_live(ptn, cookie);
				if (!alive)
					fk_forget_export(names[k], ptn, cookie);
			}
		if (alive) {
			count++;
			if (used)
				used[dev] += size;
			continue;
		}
		/*
		 * Freed: the backing file and every record of it. Its
		 * exports' pty-N records stay, naming what is gone: an
		 * import through them fails, a replace still works.
		 */
		for (size_t k = i; k < j; k++)
			fk_unlink(names[k]);
	}
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	return count;
fail:
	if (d)
		closedir(d);
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	return -1;
}

/*
 * Our file of GPU @dev's node, opened on first use (rule 1): if nobody
 * holds one, the GPU was down, and what it held is freed first. Registry
 * lock held.
 */
static CUresult fk_dev_get_locked(int dev)
{
	char path[FAKE_PATH_LEN];
	int fd;

	if (fk_devrefs[dev]++)
		return CUDA_SUCCESS;
	fk_path(path, "nvidia%d", dev);
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
	} else if (errno == ENXIO) {
		/* Down: a new device instance, the old one's memory gone. */
		if (fk_gen_set(dev, fk_gen(dev) + 1))
			goto fail;
		fk_gc_locked(NULL);
	} else {
		goto fail;
	}
	fk_devfd[dev] = open(path, O_RDWR | O_CLOEXEC);
	if (fk_devfd[dev] >= 0)
		return CUDA_SUCCESS;
fail:
	fk_devrefs[dev]--;
	return CUDA_ERROR_OPERATING_SYSTEM;
}

static void fk_dev_put(int dev)
{
	if (--fk_devrefs[dev] == 0) {
		close(fk_devfd[dev]);
		fk_devfd[dev] = -1;
	}
}

/* "NAME.pid-PID-START", our holder record of allocation @name. */
static void fk_holder_name(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s.pid-%d-%llu", name, (int)getpid(), fk_start);
}

static struct fake_mem *fk_find_mem(const char *name)
{
	struct fake_mem *m;

	for (m = fk_mems; m; m = m->next)
		if (!strcmp(m->name, name))
			return m;
	return NULL;
}

/*
 * Our hold on allocation @name, backed by @fd: recorded in the registry.
 * The caller took the device reference it keeps (fk_dev_get_locked());
 * on failure it gives that and @fd back. Registry lock held.
 */
static struct fake_mem *fk_mem_new_locked(const char *name, int fd,
					  size_t size, int dev)
{
	char holder[FAKE_NAME_LEN + 64], path[FAKE_PATH_LEN];
	struct fake_mem *m = calloc(1, sizeof(*m));
	int hfd;

	if (!m)
		return NULL;
	fk_holder_name(holder, sizeof(holder), name);
	fk_path(path, "%s", holder);
	hfd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (hfd < 0) {
		free(m);
		return NULL;
	}
	close(hfd);
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->fd = fd;
	m->size = size;
	m->dev = dev;
	m->refs = 1;
	m->next = fk_mems;
	fk_mems = m;
	return m;
}

/* A handle or mapping of @m is gone; with the last, our hold is. */
static void fk_mem_put(struct fake_mem *m)
{
	char holder[FAKE_NAME_LEN + 64];
	struct fake_mem **pp;

	if (--m->refs)
		return;
	for (pp = &fk_mems; *pp != m; pp = &(*pp)->next)
		;
	*pp = m->next;
	fk_holder_name(holder, sizeof(holder), m->name);
	fk_reg_lock();
	fk_unlink(holder);
	fk_reg_unlock();
	close(m->fd);
	fk_dev_put(m->dev);
	free(m);
}

/*
 * GPU @d's stand-ins in the registry (rule 1): the FIFO nvidia<d> and
 * gpus/<bdf>/information, in the format of NVIDIA's procfs file, whose
 * folder name is the bus id in lower case. Registry lock held.
 */
static CUresult fk_make_gpu_locked(int d)
{
	const struct fake_gpu *g = &fk_gpus[d];
	char path[FAKE_PATH_LEN], bdf[16], text[512], name[64];
	struct stat st;

	fk_path(path, "nvidia%d", d);
	if (mkfifo(path, 0600) && errno != EEXIST)
		return CUDA_ERROR_OPERATING_SYSTEM;
	if (stat(path, &st) || !S_ISFIFO(st.st_mode)) {
		fprintf(stderr, "fakecuda: %s is not a FIFO\n", path);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", g->domain, g->bus,
		 g->dev, g->fn);
	fk_path(path, "gpus/%s", bdf);
	if (mkdir(path, 0700) && errno != EEXIST)
		return CUDA_ERROR_OPERATING_SYSTEM;
	snprintf(text, sizeof(text),
		 "Model: \t\t kvpool fakecuda GPU %d (fake driver)\n"
		 "IRQ:   \t\t 0\n"
		 "GPU UUID: \t GPU-00000000-0000-0000-0000-%012x\n"
		 "Bus Type: \t PCIe\n"
		 "Bus Location: \t %s\n"
		 "Device Minor: \t %d\n"
		 "GPU Excluded:\t No\n", d, d, bdf, d);
	snprintf(name, sizeof(name), "gpus/%s/information", bdf);
	if (fk_write_file(name, text))
		return CUDA_ERROR_OPERATING_SYSTEM;
	return CUDA_SUCCESS;
}

/*
 * A size in bytes from the environment's @name into *@v, @def if it is
 * unset or empty; -1 (said on stderr) if it is not a number > 0 that
 * @ok (NULL: any) takes.
 */
static int fk_env_size(const char *name, size_t def, int (*ok)(size_t),
		       const char *want, size_t *v)
{
	const char *s = getenv(name);
	unsigned long long n;
	char *end;

	*v = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || *end || !n || n > SIZE_MAX || (ok && !ok(n))) {
		fprintf(stderr, "fakecuda: %s=%s: not %s\n", name, s, want);
		return -1;
	}
	*v = n;
	return 0;
}

/* mmap() works in pages: a smaller granularity cannot be. */
static int fk_gran_ok(size_t v)
{
	return !(v % (size_t)sysconf(_SC_PAGESIZE)) && !(v & (v - 1));
}

static CUresult fk_configure(void)
{
	const char *gpus = getenv("KVPOOL_FAKECUDA_GPUS");
	const char *dir = getenv("KVPOOL_FAKECUDA_DIR");
	char path[FAKE_PATH_LEN];
	const char *p;
	int running, d;
	CUresult r = CUDA_SUCCESS;

	if (fk_env_size("KVPOOL_FAKECUDA_GRANULARITY", FAKE_DEF_GRAN,
			fk_gran_ok, "a power of two multiple of the page size",
			&fk_gran) ||
	    fk_env_size("KVPOOL_FAKECUDA_MEMORY", FAKE_DEF_MEMORY, NULL,
			"a size in bytes", &fk_mem_total))
		return CUDA_ERROR_INVALID_VALUE;

	if (!dir || !*dir)
		dir = FAKE_DEF_DIR;
	if (strlen(dir) >= sizeof(fk_dir))
		return CUDA_ERROR_INVALID_VALUE;
	strcpy(fk_dir, dir);
	if (mkdir(fk_dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "fakecuda: cannot create %s: %s\n", fk_dir,
			strerror(errno));
		return CUDA_ERROR_OPERATING_SYSTEM;
	}

	fk_ngpus = 0;
	if (!gpus || !*gpus)
		return CUDA_ERROR_NO_DEVICE;
	for (p = gpus; *p; ) {
		size_t len = strcspn(p, ",");

		if (fk_ngpus == FAKE_MAX_GPUS ||
		    fk_parse_bdf(p, len, &fk_gpus[fk_ngpus])) {
			fprintf(stderr,
				"fakecuda: KVPOOL_FAKECUDA_GPUS=%s: bad or too many PCI bus ids\n",
				gpus);
			fk_ngpus = 0;
			return CUDA_ERROR_INVALID_VALUE;
		}
		fk_ngpus++;
		p += len;
		if (*p == ',')
			p++;
	}

	if (fk_proc_start(getpid(), &fk_start, &running))
		return CUDA_ERROR_OPERATING_SYSTEM;
	for (d = 0; d < FAKE_MAX_GPUS; d++)
		fk_devfd[d] = -1;
	fk_path(path, "lock");
	fk_lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fk_lockfd < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	fk_reg_lock();
	fk_path(path, "gpus");
	if (mkdir(path, 0700) && errno != EEXIST)
		r = CUDA_ERROR_OPERATING_SYSTEM;
	for (d = 0; d < fk_ngpus && r == CUDA_SUCCESS; d++)
		r = fk_make_gpu_locked(d);
	if (r == CUDA_SUCCESS)
		fk_gc_locked(NULL);
	fk_reg_unlock();
	return r;
}

CUresult cuInit(unsigned int Flags)
{
	static int atfork_done;
	CUresult r;

	pthread_mutex_lock(&fk_lock);
	if (fk_forked) {
		pthread_mutex_unlock(&fk_lock);
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (Flags) {
		pthread_mutex_unlock(&fk_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (fk_inited) {
		r = fk_init_err;
		pthread_mutex_unlock(&fk_lock);
		return r;
	}
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, fk_atfork_child);
		atfork_done = 1;
	}
	fk_init_err = fk_configure();
	fk_inited = 1;
	r = fk_init_err;
	pthread_mutex_unlock(&fk_lock);
	return r;
}

CUresult cuDeviceGetCount(int *count)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!count)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	*count = fk_ngpus;
	return fk_out(CUDA_SUCCESS);
}

static int fk_devok(CUdevice d)
{
	return d >= 0 && d < fk_ngpus;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!device)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_devok(ordinal))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	*device = ordinal;
	return fk_out(CUDA_SUCCESS);
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	struct fake_gpu g;
	int i;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!dev || !pciBusId ||
	    fk_parse_bdf(pciBusId, strlen(pciBusId), &g))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < fk_ngpus; i++) {
		if (!memcmp(&g, &fk_gpus[i], sizeof(g))) {
			*dev = i;
			return fk_out(CUDA_SUCCESS);
		}
	}
	return fk_out(CUDA_ERROR_INVALID_DEVICE);
}

/*
 * Upper-case hex, as the NVIDIA driver writes it, where sysfs writes lower
 * case: a caller comparing the two must ignore case.
 */
CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	struct fake_gpu *g;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!pciBusId || len <= 0)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_devok(dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	g = &fk_gpus[dev];
	snprintf(pciBusId, len, "%04X:%02X:%02X.%X", g->domain, g->bus,
		 g->dev, g->fn);
	return fk_out(CUDA_SUCCESS);
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!name || len <= 0)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_devok(dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	snprintf(name, len, "kvpool fakecuda GPU %d (fake driver)", dev);
	return fk_out(CUDA_SUCCESS);
}

/* Only what a VMM user asks before relying on it; the rest is unmodelled. */
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!pi)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_devok(dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
		*pi = 1;
		return fk_out(CUDA_SUCCESS);
	default:
		return fk_out(CUDA_ERROR_NOT_SUPPORTED);
	}
}

static int fk_overlaps(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
	return a < b + bn && b < a + an;
}

/*
 * Whether [p, p + n) is covered by mappings wholly inside it (want_whole)
 * or simply covered; each mapping's access must include prot.
 */
static int fk_covered(uintptr_t p, size_t n, int prot, int want_whole)
{
	uintptr_t at = p, end = p + n;
	struct fake_map *m;

	if (!n || end < p)
		return 0;
	while (at < end) {
		for (m = fk_maps; m; m = m->next)
			if (at >= m->base && at < m->base + m->size)
				break;
		if (!m || (m->prot & prot) != prot)
			return 0;
		if (want_whole && (m->base < p || m->base + m->size > end))
			return 0;
		at = m->base + m->size;
	}
	return 1;
}

enum fk_xfer_op { FK_HTOD, FK_DTOH, FK_MEMSET };

/*
 * The bytes of device range [p, p + n), which fk_covered() passed, reached
 * through their shadow mappings (rule 3): the device addresses themselves
 * are never touched. @host is the source or destination, or for a memset
 * points at the byte.
 */
static void fk_xfer(uintptr_t p, size_t n, void *host, enum fk_xfer_op op)
{
	unsigned char *h = host;
	uintptr_t at = p, end = p + n;
	struct fake_map *m;

	while (at < end) {
		unsigned char *s;
		size_t len;

		for (m = fk_maps; m; m = m->next)
			if (at >= m->base && at < m->base + m->size)
				break;
		if (!m)
			return;	/* not reached: the range was checked */
		len = (end < m->base + m->size ? end : m->base + m->size) - at;
		s = m->shadow + (at - m->base);
		if (op == FK_HTOD)
			memcpy(s, h + (at - p), len);
		else if (op == FK_DTOH)
			memcpy(h + (at - p), s, len);
		else
			memset(s, *h, len);
		at += len;
	}
}

/*
 * Applies the queued memsets, in order (rule 5). Before any copy, unmap,
 * access change and context release, as the stream would have run them
 * by then; the mappings they were checked against are still there.
 */
static void fk_flush(void)
{
	struct fake_op *op;

	while ((op = fk_ops)) {
		fk_ops = op->next;
		fk_xfer(op->dst, op->n, &op->value, FK_MEMSET);
		free(op);
	}
	fk_ops_tail = &fk_ops;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult r = CUDA_SUCCESS;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!pctx)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_devok(dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	/* The first retain opens the device, which may find it torn down. */
	if (!fk_ctx[dev].refs) {
		fk_reg_lock();
		r = fk_dev_get_locked(dev);
		fk_reg_unlock();
		if (r != CUDA_SUCCESS)
			return fk_out(r);
	}
	fk_ctx[dev].dev = dev;
	fk_ctx[dev].refs++;
	*pctx = &fk_ctx[dev];
	return fk_out(CUDA_SUCCESS);
}

static CUresult fk_ctx_release(CUdevice dev)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!fk_devok(dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	if (fk_ctx[dev].refs <= 0)
		return fk_out(CUDA_ERROR_INVALID_CONTEXT);
	if (!--fk_ctx[dev].refs) {
		/* A context goes only once its work is done. */
		fk_flush();
		fk_dev_put(dev);
	}
	return fk_out(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return fk_ctx_release(dev);
}

/* The pre-11.0 name: same signature, same job for a primary context. */
CUresult fk_ctx_release_v1(CUdevice dev) __asm__("cuDevicePrimaryCtxRelease");
CUresult fk_ctx_release_v1(CUdevice dev)
{
	return fk_ctx_release(dev);
}

/* A context is live while its device's primary context is retained. */
static int fk_ctxok(CUcontext c)
{
	int i;

	for (i = 0; i < fk_ngpus; i++)
		if (c == &fk_ctx[i])
			return fk_ctx[i].refs > 0;
	return 0;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (ctx && !fk_ctxok(ctx))
		return fk_out(CUDA_ERROR_INVALID_CONTEXT);
	fk_cur = ctx;
	return fk_out(CUDA_SUCCESS);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!pctx)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	*pctx = fk_cur;
	return fk_out(CUDA_SUCCESS);
}

/* The one place queued memsets land, besides stream order (rule 5). */
CUresult cuCtxSynchronize(void)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!fk_cur || !fk_ctxok(fk_cur))
		return fk_out(CUDA_ERROR_INVALID_CONTEXT);
	fk_flush();
	return fk_out(CUDA_SUCCESS);
}

/*
 * Free memory (rule 2): the current context's GPU has KVPOOL_FAKECUDA_MEMORY
 * bytes, less every allocation on it that lives, counted after a garbage
 * collection, so memory comes back as soon as its last reference goes.
 */
CUresult cuMemGetInfo(size_t *pfree, size_t *ptotal)
{
	size_t used[FAKE_MAX_GPUS] = { 0 };
	CUresult err = fk_enter();
	int dev;

	if (err != CUDA_SUCCESS)
		return err;
	if (!pfree || !ptotal)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_cur || !fk_ctxok(fk_cur))
		return fk_out(CUDA_ERROR_INVALID_CONTEXT);
	dev = fk_cur->dev;
	fk_reg_lock();
	if (fk_gc_locked(used) < 0) {
		fk_reg_unlock();
		return fk_out(CUDA_ERROR_OPERATING_SYSTEM);
	}
	fk_reg_unlock();
	*ptotal = fk_mem_total;
	*pfree = used[dev] < fk_mem_total ? fk_mem_total - used[dev] : 0;
	return fk_out(CUDA_SUCCESS);
}

/* A pinned device allocation on a GPU we have; the error if not. */
static CUresult fk_check_prop(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (!fk_devok(prop->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity,
				       const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	r = fk_check_prop(prop);
	if (r == CUDA_SUCCESS)
		*granularity = fk_gran;
	return fk_out(r);
}

static struct fake_alloc *fk_find_alloc(CUmemGenericAllocationHandle h)
{
	struct fake_alloc *a;

	for (a = fk_allocs; a; a = a->next)
		if (a->id == h)
			return a;
	return NULL;
}

/* A new handle on @m, which holds one reference for it already. */
static CUresult fk_new_alloc(CUmemGenericAllocationHandle *handle,
			     struct fake_mem *m,
			     CUmemAllocationHandleType types)
{
	struct fake_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->id = fk_next_id++;
	a->mem = m;
	a->types = types;
	a->next = fk_allocs;
	fk_allocs = a;
	*handle = a->id;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	char name[FAKE_NAME_LEN], info[FAKE_NAME_LEN + 8], text[128];
	char path[FAKE_PATH_LEN];
	struct fake_mem *m;
	CUresult r;
	int fd, dev;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!handle || flags)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	r = fk_check_prop(prop);
	if (r != CUDA_SUCCESS)
		return fk_out(r);
	if (!size || size % fk_gran)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	dev = prop->location.id;

	fk_reg_lock();
	r = fk_dev_get_locked(dev);
	if (r != CUDA_SUCCESS)
		goto out;
	fk_gc_locked(NULL);
	/* The device is in the name, for whoever lists the registry. */
	snprintf(name, sizeof(name), "alloc-%d-%llu-%u-dev%d", (int)getpid(),
		 fk_start, fk_seq++, dev);
	fk_path(path, "%s", name);
	r = CUDA_ERROR_OPERATING_SYSTEM;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out_dev;
	r = CUDA_ERROR_OUT_OF_MEMORY;
	if (ftruncate(fd, size))
		goto out_file;
	/* Made at the GPU's present generation: a teardown frees it. */
	snprintf(info, sizeof(info), "%s.info", name);
	snprintf(text, sizeof(text), "%d %zu %llu\n", dev, size, fk_gen(dev));
	r = CUDA_ERROR_OPERATING_SYSTEM;
	if (fk_write_file(info, text))
		goto out_file;
	m = fk_mem_new_locked(name, fd, size, dev);
	if (!m)
		goto out_info;
	r = fk_new_alloc(handle, m, prop->requestedHandleTypes);
	fk_reg_unlock();
	if (r != CUDA_SUCCESS)
		fk_mem_put(m);
	return fk_out(r);

out_info:
	fk_unlink(info);
out_file:
	close(fd);
	unlink(path);
out_dev:
	fk_dev_put(dev);
out:
	fk_reg_unlock();
	return fk_out(r);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct fake_alloc **pp, *a;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	for (pp = &fk_allocs; (a = *pp); pp = &a->next) {
		if (a->id == handle) {
			*pp = a->next;
			/* Mappings hold the memory too: they stay usable. */
			fk_mem_put(a->mem);
			free(a);
			return fk_out(CUDA_SUCCESS);
		}
	}
	return fk_out(CUDA_ERROR_INVALID_VALUE);
}

CUresult cuMemExportToShareableHandle(void *shareableHandle,
				      CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType handleType,
				      unsigned long long flags)
{
	char pts[64];
	struct fake_alloc *a;
	struct winsize ws;
	unsigned int ptn;
	unsigned long long cookie = 0;
	int fd, unlock = 0;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	a = fk_find_alloc(handle);
	if (!shareableHandle || flags || !a ||
	    handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    !(a->types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		return fk_out(CUDA_ERROR_INVALID_VALUE);

	fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fk_out(CUDA_ERROR_OPERATING_SYSTEM);
	/* Never 0: a fresh pty's window size is all zeroes. */
	while (!cookie)
		if (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie))
			goto fail;
	fk_cookie_to_ws(cookie, &ws);
	/* Unlocked, so that the probe (fk_pty_live()) can open its slave. */
	if (ioctl(fd, TIOCGPTN, &ptn) || ioctl(fd, TIOCSWINSZ, &ws) ||
	    ioctl(fd, TIOCSPTLCK, &unlock))
		goto fail;
	snprintf(pts, sizeof(pts), "/dev/pts/%u", ptn);
	if (access(pts, F_OK)) {
		fprintf(stderr,
			"fakecuda: /dev/ptmx gave pty %u, but there is no %s: /dev/ptmx is not /dev/pts's\n",
			ptn, pts);
		goto fail;
	}
	fk_reg_lock();
	if (fk_entry_set(ptn, NULL, a->mem->name, cookie)) {
		fk_reg_unlock();
		goto fail;
	}
	fk_reg_unlock();
	*(int *)shareableHandle = fd;
	return fk_out(CUDA_SUCCESS);
fail:
	close(fd);
	return fk_out(CUDA_ERROR_OPERATING_SYSTEM);
}

/*
 * The export a shareable handle fd is and the record of it; -1 if it is
 * none the fake made (or the pty of one that was closed).
 */
static int fk_lookup(int fd, unsigned int *ptn, struct fk_entry *e)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGPTN, ptn) || ioctl(fd, TIOCGWINSZ, &ws) ||
	    fk_entry_read(*ptn, e) || e->cookie != fk_ws_to_cookie(&ws))
		return -1;
	return 0;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
					void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	char path[FAKE_PATH_LEN];
	unsigned long long gen;
	struct fake_mem *m;
	struct fk_entry e;
	struct stat st;
	unsigned int ptn;
	int fd = (int)(intptr_t)osHandle, bfd, dev;
	size_t size;
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    fd < 0)
		return fk_out(CUDA_ERROR_INVALID_VALUE);

	fk_reg_lock();
	r = CUDA_ERROR_INVALID_VALUE;
	/* Unexported, or its allocation freed: it names nothing. */
	if (fk_lookup(fd, &ptn, &e) || !strcmp(e.name, "-") ||
	    fk_info_read(e.name, &dev, &size, &gen))
		goto out;
	/* An allocation of a GPU this process was not given. */
	r = CUDA_ERROR_INVALID_DEVICE;
	if (!fk_devok(dev))
		goto out;
	m = fk_find_mem(e.name);
	if (m) {
		m->refs++;
		goto have;
	}
	/* Opening the device may find it was torn down, and free this. */
	r = fk_dev_get_locked(dev);
	if (r != CUDA_SUCCESS)
		goto out;
	fk_gc_locked(NULL);
	r = CUDA_ERROR_INVALID_VALUE;
	if (fk_info_read(e.name, &dev, &size, &gen) || gen != fk_gen(dev))
		goto out_dev;
	fk_path(path, "%s", e.name);
	bfd = open(path, O_RDWR | O_CLOEXEC);
	if (bfd < 0)
		goto out_dev;
	if (fstat(bfd, &st) || (size_t)st.st_size != size) {
		close(bfd);
		goto out_dev;
	}
	m = fk_mem_new_locked(e.name, bfd, size, dev);
	if (!m) {
		close(bfd);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_dev;
	}
have:
	fk_reg_unlock();
	r = fk_new_alloc(handle, m, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (r != CUDA_SUCCESS)
		fk_mem_put(m);
	return fk_out(r);

out_dev:
	fk_dev_put(dev);
out:
	fk_reg_unlock();
	return fk_out(r);
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						CUmemGenericAllocationHandle handle)
{
	struct fake_alloc *a;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	a = fk_find_alloc(handle);
	if (!prop || !a)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->requestedHandleTypes = a->types;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = a->mem->dev;
	return fk_out(CUDA_SUCCESS);
}

/*
 * Device address space: reserved PROT_NONE and left so (rule 3), a CPU
 * access to it faults whatever is mapped there.
 */
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
			     CUdeviceptr addr, unsigned long long flags)
{
	struct fake_resv *rv;
	uintptr_t base, end;
	size_t span;
	void *p;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	(void)addr;	/* a hint, which the driver too may ignore */
	if (!ptr || flags || !size || size % fk_gran ||
	    (alignment & (alignment - 1)))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (alignment < fk_gran)
		alignment = fk_gran;
	span = size + alignment;
	if (span < size)
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	rv = calloc(1, sizeof(*rv));
	if (!rv)
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	p = mmap(NULL, span, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		free(rv);
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	}
	/* Over-reserve, then give back the ends to get the alignment. */
	base = ((uintptr_t)p + alignment - 1) & ~(uintptr_t)(alignment - 1);
	end = base + size;
	if (base > (uintptr_t)p)
		munmap(p, base - (uintptr_t)p);
	if ((uintptr_t)p + span > end)
		munmap((void *)end, (uintptr_t)p + span - end);
	rv->base = base;
	rv->size = size;
	rv->next = fk_resvs;
	fk_resvs = rv;
	*ptr = (CUdeviceptr)base;
	return fk_out(CUDA_SUCCESS);
}

/* The mappings in [base, base + size) go, with their holds. */
static void fk_drop_maps(uintptr_t base, size_t size)
{
	struct fake_map **pp = &fk_maps, *m;

	fk_flush();
	while ((m = *pp)) {
		if (fk_overlaps(m->base, m->size, base, size)) {
			*pp = m->next;
			munmap(m->shadow, m->size);
			fk_mem_put(m->mem);
			free(m);
		} else {
			pp = &m->next;
		}
	}
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct fake_resv **pp, *rv;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	for (pp = &fk_resvs; (rv = *pp); pp = &rv->next) {
		if (rv->base == ptr && rv->size == size) {
			*pp = rv->next;
			munmap((void *)rv->base, rv->size);
			fk_drop_maps(rv->base, rv->size);
			free(rv);
			return fk_out(CUDA_SUCCESS);
		}
	}
	return fk_out(CUDA_ERROR_INVALID_VALUE);
}

static int fk_in_resv(uintptr_t p, size_t n)
{
	struct fake_resv *rv;

	for (rv = fk_resvs; rv; rv = rv->next)
		if (p >= rv->base && n <= rv->size &&
		    p - rv->base <= rv->size - n)
			return 1;
	return 0;
}

/*
 * A mapping: the device range is only recorded, its bytes go to a shadow
 * mapping of the backing file that the CPU is never given (rule 3). It
 * holds the allocation as a handle does (rule 2).
 */
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct fake_alloc *a;
	struct fake_map *m;
	void *p;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	a = fk_find_alloc(handle);
	/* The driver, too, takes only offset 0 for now. */
	if (!a || flags || offset || !size || size % fk_gran ||
	    size > a->mem->size || ptr % fk_gran || !fk_in_resv(ptr, size))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	for (m = fk_maps; m; m = m->next)
		if (fk_overlaps(m->base, m->size, ptr, size))
			return fk_out(CUDA_ERROR_INVALID_VALUE);
	m = calloc(1, sizeof(*m));
	if (!m)
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->mem->fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	}
	m->base = ptr;
	m->size = size;
	m->prot = PROT_NONE;
	m->shadow = p;
	m->mem = a->mem;
	a->mem->refs++;
	m->next = fk_maps;
	fk_maps = m;
	return fk_out(CUDA_SUCCESS);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!fk_in_resv(ptr, size) || !fk_covered(ptr, size, PROT_NONE, 1))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	/* The address space stays reserved, and PROT_NONE as ever. */
	fk_drop_maps(ptr, size);
	return fk_out(CUDA_SUCCESS);
}

/* Access for copies and memsets only: the CPU never gets any (rule 3). */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
			const CUmemAccessDesc *desc, size_t count)
{
	struct fake_map *m;
	int prot = -1;
	size_t i;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!desc || !count)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < count; i++) {
		int pr;

		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
			return fk_out(CUDA_ERROR_INVALID_VALUE);
		if (!fk_devok(desc[i].location.id))
			return fk_out(CUDA_ERROR_INVALID_DEVICE);
		switch (desc[i].flags) {
		case CU_MEM_ACCESS_FLAGS_PROT_NONE:
			pr = PROT_NONE;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READ:
			pr = PROT_READ;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
			pr = PROT_READ | PROT_WRITE;
			break;
		default:
			return fk_out(CUDA_ERROR_INVALID_VALUE);
		}
		/* One host: the widest access any device is given. */
		prot = pr > prot ? pr : prot;
	}
	if (!fk_covered(ptr, size, PROT_NONE, 1))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	/* Work queued under the old access runs under it. */
	fk_flush();
	for (m = fk_maps; m; m = m->next)
		if (fk_overlaps(m->base, m->size, ptr, size))
			m->prot = prot;
	return fk_out(CUDA_SUCCESS);
}

/* Copies need a context, and memory mapped with the access they use. */
static CUresult fk_dev_range(CUdeviceptr p, size_t n, int prot)
{
	if (!fk_cur || !fk_ctxok(fk_cur))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!n)
		return CUDA_SUCCESS;
	if (!fk_covered(p, n, prot, 0))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Synchronous, after the memsets queued before it (stream order). */
CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
		      size_t ByteCount)
{
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (ByteCount && !srcHost)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	r = fk_dev_range(dstDevice, ByteCount, PROT_WRITE);
	if (r == CUDA_SUCCESS && ByteCount) {
		fk_flush();
		fk_xfer(dstDevice, ByteCount, (void *)srcHost, FK_HTOD);
	}
	return fk_out(r);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (ByteCount && !dstHost)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	r = fk_dev_range(srcDevice, ByteCount, PROT_READ);
	if (r == CUDA_SUCCESS && ByteCount) {
		fk_flush();
		fk_xfer(srcDevice, ByteCount, dstHost, FK_DTOH);
	}
	return fk_out(r);
}

/* Checked now, done later (rule 5): queued until a sync or a copy. */
CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	struct fake_op *op;
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	r = fk_dev_range(dstDevice, N, PROT_WRITE);
	if (r != CUDA_SUCCESS || !N)
		return fk_out(r);
	op = calloc(1, sizeof(*op));
	if (!op)
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	op->dst = dstDevice;
	op->n = N;
	op->value = uc;
	*fk_ops_tail = op;
	fk_ops_tail = &op->next;
	return fk_out(CUDA_SUCCESS);
}

/*
 * The legacy entry points behind the plain names, with 32-bit device
 * pointers and sizes: fake memory is never below 4 GiB, so these fail as
 * a caller that meant the _v2 functions deserves.
 */
CUresult fk_htod_v1(unsigned int dst, const void *src, unsigned int n)
	__asm__("cuMemcpyHtoD");
CUresult fk_htod_v1(unsigned int dst, const void *src, unsigned int n)
{
	return cuMemcpyHtoD(dst, src, n);
}

CUresult fk_dtoh_v1(void *dst, unsigned int src, unsigned int n)
	__asm__("cuMemcpyDtoH");
CUresult fk_dtoh_v1(void *dst, unsigned int src, unsigned int n)
{
	return cuMemcpyDtoH(dst, src, n);
}

CUresult fk_memset_v1(unsigned int dst, unsigned char uc, unsigned int n)
	__asm__("cuMemsetD8");
CUresult fk_memset_v1(unsigned int dst, unsigned char uc, unsigned int n)
{
	return cuMemsetD8(dst, uc, n);
}

/* The test-only entry points (fakecuda.h). */

/* Points export file @fd at @name ("-": nothing), rule 4. */
static CUresult fk_reexport(int fd, const char *name)
{
	struct fk_entry e;
	unsigned int ptn;
	CUresult r = CUDA_SUCCESS;

	fk_reg_lock();
	if (fd < 0 || fk_lookup(fd, &ptn, &e))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (fk_entry_set(ptn, e.name, name, e.cookie))
		r = CUDA_ERROR_OPERATING_SYSTEM;
	fk_reg_unlock();
	return r;
}

CUresult fakecuda_unexport(int fd)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	return fk_out(fk_reexport(fd, "-"));
}

CUresult fakecuda_export_replace(int fd, CUmemGenericAllocationHandle h)
{
	struct fake_alloc *a;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	a = fk_find_alloc(h);
	if (!a)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	return fk_out(fk_reexport(fd, a->mem->name));
}

int fakecuda_gc(void)
{
	int n;

	if (fk_enter() != CUDA_SUCCESS)
		return -1;
	fk_reg_lock();
	n = fk_gc_locked(NULL);
	fk_reg_unlock();
	fk_out(CUDA_SUCCESS);
	return n;
}
