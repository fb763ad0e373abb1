// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakecuda: a test double of the CUDA driver API over host memory. It is
 * not a driver and drives no GPU: it lets the tests of kvpool's CUDA arenas
 * (and tools/gpu-check) run on machines that have no NVIDIA hardware, by
 * answering the subset of the driver API that a virtual memory management
 * (VMM) user calls, with the same types and signatures (it is compiled
 * against NVIDIA's own cuda.h) and the same rules, so that a caller's
 * mistakes fail here as they would on a GPU.
 *
 * What it models:
 *  - devices: KVPOOL_FAKECUDA_GPUS="0000:00:10.0,0000:00:11.0" lists the
 *    GPUs by PCI bus id, the ordinal being the position. Unset or empty,
 *    cuInit() fails with CUDA_ERROR_NO_DEVICE, as on a host with no GPU.
 *  - cuInit() first: every other call but cuDriverGetVersion() and the
 *    error strings returns CUDA_ERROR_NOT_INITIALIZED before it, and the
 *    error cuInit() gave after a failed one. A child forked after cuInit()
 *    gets CUDA_ERROR_NOT_INITIALIZED from everything, since CUDA does not
 *    survive fork(): a caller must fork first, then initialise.
 *  - cuDeviceGetAttribute(): only the VMM and POSIX fd handle support
 *    attributes (1); others are CUDA_ERROR_NOT_SUPPORTED, not invented.
 *  - primary contexts, retained and released, current per thread; copies
 *    and synchronisation need a live current context.
 *  - "device pointers" are host virtual addresses. cuMemAddressReserve()
 *    reserves PROT_NONE address space; cuMemCreate() makes a backing file
 *    (sizes must be multiples of the granularity, KVPOOL_FAKECUDA_GRANULARITY
 *    bytes, 2 MiB by default); cuMemMap() maps it there still PROT_NONE, and
 *    only cuMemSetAccess() makes it readable and writable, so memory touched
 *    before access is granted faults, as on a GPU. Copies and memsets check
 *    every byte lies in mapped memory with the access they need.
 *  - shareable handles: cuMemExportToShareableHandle() with
 *    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR returns a new pty master: a
 *    character device file, as the NVIDIA driver's handles (files of
 *    /dev/nvidiactl) are, so the kvpool module takes it as it takes theirs.
 *    Its pty index names the allocation in a registry folder that every
 *    process using the fake shares, KVPOOL_FAKECUDA_DIR (default
 *    /dev/shm/kvpool-fakecuda, created 0700); a random cookie kept in the
 *    pty's window size tells a reused index from the one exported. The
 *    importer needs only the fd: the exporter may be dead by then.
 *  - cuMemRelease() of a handle leaves its mappings working, as in CUDA.
 *  - the plain names that cuda.h renames to _v2 are exported too, with
 *    their legacy signatures: cuMemcpyHtoD, cuMemcpyDtoH and cuMemsetD8
 *    take 32-bit device pointers, which never name fake memory, so a caller
 *    that dlsym()s the wrong name fails instead of passing by luck.
 *
 * What it does not: kernels, streams, events, peer access rules, memory
 * limits. Nor does it free backing files when the last reference goes:
 * a registry folder belongs to one test run, and the test removes it.
 * Needs devpts mounted for /dev/ptmx.
 */
#define _GNU_SOURCE
#include <cuda.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define FAKE_MAX_GPUS	16
#define FAKE_DEF_DIR	"/dev/shm/kvpool-fakecuda"
#define FAKE_DEF_GRAN	(2UL << 20)

struct fake_gpu {
	unsigned int domain, bus, dev, fn;
};

struct CUctx_st {
	int dev;
	int refs;
};

struct fake_alloc {
	unsigned long long id;
	int fd;			/* the backing file */
	size_t size;
	int dev;
	CUmemAllocationHandleType types;
	char name[64];		/* the backing file's name in the registry */
	struct fake_alloc *next;
};

struct fake_resv {
	uintptr_t base;
	size_t size;
	struct fake_resv *next;
};

struct fake_map {
	uintptr_t base;
	size_t size;
	int prot;
	struct fake_map *next;
};

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static int fk_inited;		/* cuInit() was called */
static CUresult fk_init_err;	/* and returned this */
static int fk_forked;		/* we are a child forked after cuInit() */
static int fk_ngpus;
static struct fake_gpu fk_gpus[FAKE_MAX_GPUS];
static struct CUctx_st fk_ctx[FAKE_MAX_GPUS];
static size_t fk_gran;
static char fk_dir[4096];
static unsigned long long fk_next_id = 1;
static unsigned int fk_seq;
static struct fake_alloc *fk_allocs;
static struct fake_resv *fk_resvs;
static struct fake_map *fk_maps;
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

static CUresult fk_configure(void)
{
	const char *gpus = getenv("KVPOOL_FAKECUDA_GPUS");
	const char *dir = getenv("KVPOOL_FAKECUDA_DIR");
	const char *gran = getenv("KVPOOL_FAKECUDA_GRANULARITY");
	const char *p;
	long page = sysconf(_SC_PAGESIZE);

	fk_gran = FAKE_DEF_GRAN;
	if (gran && *gran) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(gran, &end, 0);
		/* mmap() works in pages: a smaller granularity cannot be. */
		if (errno || *end || !v || v % (unsigned long long)page ||
		    (v & (v - 1))) {
			fprintf(stderr,
				"fakecuda: KVPOOL_FAKECUDA_GRANULARITY=%s: not a power of two multiple of %ld\n",
				gran, page);
			return CUDA_ERROR_INVALID_VALUE;
		}
		fk_gran = v;
	}

	if (!dir || !*dir)
		dir = FAKE_DEF_DIR;
	if (strlen(dir) >= sizeof(fk_dir) - 64)
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
	return CUDA_SUCCESS;
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

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!pctx)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (!fk_devok(dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
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
	fk_ctx[dev].refs--;
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

CUresult cuCtxSynchronize(void)
{
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!fk_cur || !fk_ctxok(fk_cur))
		return fk_out(CUDA_ERROR_INVALID_CONTEXT);
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

static CUresult fk_new_alloc(CUmemGenericAllocationHandle *handle, int fd,
			     size_t size, int dev,
			     CUmemAllocationHandleType types, const char *name)
{
	struct fake_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->id = fk_next_id++;
	a->fd = fd;
	a->size = size;
	a->dev = dev;
	a->types = types;
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->next = fk_allocs;
	fk_allocs = a;
	*handle = a->id;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	char name[64], path[sizeof(fk_dir) + 64];
	CUresult r;
	int fd;
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
	/* The device is in the name, for whoever lists the registry. */
	snprintf(name, sizeof(name), "alloc-%d-%u-dev%d", (int)getpid(),
		 fk_seq++, prop->location.id);
	snprintf(path, sizeof(path), "%s/%s", fk_dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return fk_out(CUDA_ERROR_OPERATING_SYSTEM);
	if (ftruncate(fd, size)) {
		close(fd);
		unlink(path);
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	}
	r = fk_new_alloc(handle, fd, size, prop->location.id,
			 prop->requestedHandleTypes, name);
	if (r != CUDA_SUCCESS) {
		close(fd);
		unlink(path);
	}
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
			/* Mappings hold the file: they stay usable. */
			close(a->fd);
			free(a);
			return fk_out(CUDA_SUCCESS);
		}
	}
	return fk_out(CUDA_ERROR_INVALID_VALUE);
}

/* The registry entry: what a pty index stands for. */
struct fk_entry {
	char name[64];
	int dev;
	size_t size;
	unsigned long long cookie;
};

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

CUresult cuMemExportToShareableHandle(void *shareableHandle,
				      CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType handleType,
				      unsigned long long flags)
{
	char path[sizeof(fk_dir) + 64], tmp[sizeof(fk_dir) + 80];
	struct fake_alloc *a;
	struct winsize ws;
	unsigned int ptn;
	unsigned long long cookie = 0;
	FILE *f;
	int fd, ok;
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
	if (ioctl(fd, TIOCGPTN, &ptn) || ioctl(fd, TIOCSWINSZ, &ws))
		goto fail;

	/* Written whole, then renamed: an importer never reads half. */
	snprintf(path, sizeof(path), "%s/pty-%u", fk_dir, ptn);
	snprintf(tmp, sizeof(tmp), "%s/.pty-%u.%d", fk_dir, ptn, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		goto fail;
	ok = fprintf(f, "%s %d %zu %llx\n", a->name, a->dev, a->size,
		     cookie) > 0;
	ok &= !fclose(f);
	if (!ok || rename(tmp, path)) {
		unlink(tmp);
		goto fail;
	}
	*(int *)shareableHandle = fd;
	return fk_out(CUDA_SUCCESS);
fail:
	close(fd);
	return fk_out(CUDA_ERROR_OPERATING_SYSTEM);
}

/* The allocation a shareable handle fd stands for; -1 if none. */
static int fk_lookup(int fd, struct fk_entry *e)
{
	char path[sizeof(fk_dir) + 64];
	struct winsize ws;
	unsigned int ptn;
	FILE *f;
	int n;

	if (ioctl(fd, TIOCGPTN, &ptn) || ioctl(fd, TIOCGWINSZ, &ws))
		return -1;
	snprintf(path, sizeof(path), "%s/pty-%u", fk_dir, ptn);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fscanf(f, "%63s %d %zu %llx", e->name, &e->dev, &e->size,
		   &e->cookie);
	fclose(f);
	if (n != 4 || e->cookie != fk_ws_to_cookie(&ws) ||
	    strchr(e->name, '/'))
		return -1;
	return 0;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
					void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	char path[sizeof(fk_dir) + 64];
	struct fk_entry e;
	struct stat st;
	int fd = (int)(intptr_t)osHandle, bfd;
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    fd < 0 || fk_lookup(fd, &e))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	/* An allocation of a GPU this process was not given. */
	if (!fk_devok(e.dev))
		return fk_out(CUDA_ERROR_INVALID_DEVICE);
	snprintf(path, sizeof(path), "%s/%s", fk_dir, e.name);
	bfd = open(path, O_RDWR | O_CLOEXEC);
	if (bfd < 0)
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	if (fstat(bfd, &st) || (size_t)st.st_size != e.size) {
		close(bfd);
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	}
	r = fk_new_alloc(handle, bfd, e.size, e.dev,
			 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, e.name);
	if (r != CUDA_SUCCESS)
		close(bfd);
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
	prop->location.id = a->dev;
	return fk_out(CUDA_SUCCESS);
}

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

static int fk_overlaps(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
	return a < b + bn && b < a + an;
}

static void fk_drop_maps(uintptr_t base, size_t size)
{
	struct fake_map **pp = &fk_maps, *m;

	while ((m = *pp)) {
		if (fk_overlaps(m->base, m->size, base, size)) {
			*pp = m->next;
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
	    size > a->size || ptr % fk_gran || !fk_in_resv(ptr, size))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	for (m = fk_maps; m; m = m->next)
		if (fk_overlaps(m->base, m->size, ptr, size))
			return fk_out(CUDA_ERROR_INVALID_VALUE);
	m = calloc(1, sizeof(*m));
	if (!m)
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_SHARED | MAP_FIXED, a->fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		return fk_out(CUDA_ERROR_OUT_OF_MEMORY);
	}
	m->base = ptr;
	m->size = size;
	m->prot = PROT_NONE;
	m->next = fk_maps;
	fk_maps = m;
	return fk_out(CUDA_SUCCESS);
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

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	void *p;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!fk_in_resv(ptr, size) || !fk_covered(ptr, size, PROT_NONE, 1))
		return fk_out(CUDA_ERROR_INVALID_VALUE);
	/* Back to reserved address space, not to nothing. */
	p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		 -1, 0);
	if (p == MAP_FAILED)
		return fk_out(CUDA_ERROR_UNKNOWN);
	fk_drop_maps(ptr, size);
	return fk_out(CUDA_SUCCESS);
}

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
	if (mprotect((void *)(uintptr_t)ptr, size, prot))
		return fk_out(CUDA_ERROR_UNKNOWN);
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
	if (r == CUDA_SUCCESS && ByteCount)
		memcpy((void *)(uintptr_t)dstDevice, srcHost, ByteCount);
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
	if (r == CUDA_SUCCESS && ByteCount)
		memcpy(dstHost, (void *)(uintptr_t)srcDevice, ByteCount);
	return fk_out(r);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	CUresult r;
	CUresult err = fk_enter();

	if (err != CUDA_SUCCESS)
		return err;
	r = fk_dev_range(dstDevice, N, PROT_WRITE);
	if (r == CUDA_SUCCESS && N)
		memset((void *)(uintptr_t)dstDevice, uc, N);
	return fk_out(r);
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
