// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: CUDA arenas, mapped and made with the CUDA driver API's
 * virtual memory calls, the driver dlopen()ed at first use.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Types and names only: nothing links libcuda (see kvp_cu_load()). */
#include <cuda.h>

/*
 * The driver API is reached through dlopen(): the library must load, and
 * its host arenas work, on machines with no NVIDIA driver at all. The
 * names looked up are those cuda.h renames its functions to (cuMemMap is
 * itself, cuDevicePrimaryCtxRelease is cuDevicePrimaryCtxRelease_v2):
 * the plain names can be legacy entry points with other signatures.
 */
#define KVP_CU_STR(x)	#x
#define KVP_CU_NAME(x)	KVP_CU_STR(x)

#define KVP_CU_CALLS(X)							\
	X(cuInit) X(cuGetErrorName) X(cuGetErrorString)			\
	X(cuDeviceGetByPCIBusId) X(cuDeviceGetPCIBusId)			\
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)	\
	X(cuCtxGetCurrent) X(cuCtxSetCurrent)				\
	X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease)	\
	X(cuMemExportToShareableHandle)					\
	X(cuMemImportFromShareableHandle)				\
	X(cuMemGetAllocationPropertiesFromHandle)			\
	X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)		\
	X(cuMemUnmap) X(cuMemSetAccess)

static struct {
#define KVP_CU_FIELD(f) __typeof__(&f) f;
	KVP_CU_CALLS(KVP_CU_FIELD)
#undef KVP_CU_FIELD
} kvp_cu;

static pthread_once_t kvp_cu_once = PTHREAD_ONCE_INIT;
/* Set once by kvp_cu_load(): why there is no driver, "" if there is. */
static char kvp_cu_missing[256];

static void kvp_cu_load(void)
{
	/* secure_getenv(): a setuid program must not load the caller's. */
	const char *path = secure_getenv("KVPOOL_LIBCUDA");
	const char *err;
	void *dl;

	if (!path || !*path)
		path = "libcuda.so.1";
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		err = dlerror();
		if (!err || strstr(err, "No such file"))
			snprintf(kvp_cu_missing, sizeof(kvp_cu_missing),
				 "no CUDA driver (%s not found)", path);
		else
			snprintf(kvp_cu_missing, sizeof(kvp_cu_missing),
				 "no CUDA driver (%s)", err);
		return;
	}
#define KVP_CU_LOOKUP(f)						\
	kvp_cu.f = (__typeof__(&f))dlsym(dl, KVP_CU_NAME(f));		\
	if (!kvp_cu.f) {						\
		snprintf(kvp_cu_missing, sizeof(kvp_cu_missing),	\
			 "no CUDA driver (%s has no %s)", path,		\
			 KVP_CU_NAME(f));				\
		memset(&kvp_cu, 0, sizeof(kvp_cu));			\
		dlclose(dl);						\
		return;							\
	}
	KVP_CU_CALLS(KVP_CU_LOOKUP)
#undef KVP_CU_LOOKUP
	/* Never closed: its code may run until the process ends. */
}

/* 0 once the driver is loaded, else -ELIBACC with the reason as text. */
static int kvp_cu_ready(void)
{
	pthread_once(&kvp_cu_once, kvp_cu_load);
	if (kvp_cu_missing[0]) {
		kvp_arena_fail("%s", kvp_cu_missing);
		return -ELIBACC;
	}
	return 0;
}

/*
 * 0 for CUDA_SUCCESS, else the errno a caller gets (-ENOMEM for the
 * driver's out of memory, -EIO for the rest), with "@what: NAME: text".
 */
static int kvp_cu_check(CUresult r, const char *what)
{
	const char *name = NULL, *text = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (kvp_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "unknown CUDA error";
	if (kvp_cu.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
		text = "no description";
	kvp_arena_fail("%s: %s: %s", what, name, text);
	return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}

#define KVP_CU(call, fn)	kvp_cu_check(kvp_cu.fn call, #fn)

/* What the CUDA side of an arena needs to know of the pool's GPU. */
struct kvp_cu_gpu {
	CUdevice dev;
	char bdf[KVP_BDF_LEN];
	size_t gran;
	bool retained;		/* its primary context, by us */
};

/*
 * Load the driver and find pool @pool_id's GPU in it, into @g (zeroed
 * first). @none is the errno for a pool with no GPU.
 */
static int kvp_cu_device(unsigned int pool_id, int none, struct kvp_cu_gpu *g)
{
	int ret;

	memset(g, 0, sizeof(*g));
	ret = kvp_pool_bdf(pool_id, none, g->bdf);
	if (!ret)
		ret = kvp_cu_ready();
	if (!ret)
		ret = KVP_CU((0), cuInit);
	if (!ret)
		ret = KVP_CU((&g->dev, g->bdf), cuDeviceGetByPCIBusId);
	return ret;
}

/*
 * kvp_cu_device(), then make sure this thread has a current context (the
 * device's primary one, retained, if it had none) and read the
 * granularity of the allocations @prop describes.
 */
static int kvp_cu_open(unsigned int pool_id, int none, struct kvp_cu_gpu *g,
		       CUmemAllocationProp *prop)
{
	CUcontext ctx = NULL;
	int ret;

	ret = kvp_cu_device(pool_id, none, g);
	if (!ret)
		ret = KVP_CU((&ctx), cuCtxGetCurrent);
	if (ret)
		return ret;
	if (!ctx) {
		ret = KVP_CU((&ctx, g->dev), cuDevicePrimaryCtxRetain);
		if (ret)
			return ret;
		g->retained = true;
		ret = KVP_CU((ctx), cuCtxSetCurrent);
		if (ret)
			goto fail;
	}

	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = g->dev;
	prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	ret = KVP_CU((&g->gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
		     cuMemGetAllocationGranularity);
	if (!ret && (!g->gran || g->gran > (1ULL << 32))) {
		kvp_arena_fail("CUDA device %d (%s) has a granularity of %zu bytes",
			       (int)g->dev, g->bdf, g->gran);
		ret = -EIO;
	}
	if (!ret)
		return 0;
fail:
	if (g->retained) {
		kvp_cu.cuCtxSetCurrent(NULL);
		kvp_cu.cuDevicePrimaryCtxRelease(g->dev);
	}
	return ret;
}

/* Where kvp_cu_map_chunk() maps: the pool's GPU and the reservation. */
struct kvp_cu_target {
	const struct kvp_cu_gpu *g;
	CUdeviceptr base;
};

/*
 * Chunk @c, chunk @index of the arena, imported and mapped at the
 * reservation's start + its offset: a kvp_arena_walk() map function.
 */
static int kvp_cu_map_chunk(void *ctx, const struct kvpool_arena_fd *c,
			    uint32_t index)
{
	const struct kvp_cu_target *t = ctx;
	const struct kvp_cu_gpu *g = t->g;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	char other[16] = "?";
	int ret;

	if (c->out_offset % g->gran || c->out_bytes % g->gran) {
		kvp_arena_fail("chunk %u (%llu bytes at %llu) is no multiple of CUDA device %d's granularity, %zu",
			       index, (unsigned long long)c->out_bytes,
			       (unsigned long long)c->out_offset, (int)g->dev,
			       g->gran);
		close(c->out_fd);
		return -EINVAL;
	}
	ret = KVP_CU((&h, (void *)(uintptr_t)c->out_fd,
		      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		     cuMemImportFromShareableHandle);
	/* The handle holds the memory now: the descriptor is no use. */
	close(c->out_fd);
	if (ret)
		return ret;
	memset(&prop, 0, sizeof(prop));
	ret = KVP_CU((&prop, h), cuMemGetAllocationPropertiesFromHandle);
	if (!ret && (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		     prop.location.id != g->dev)) {
		kvp_cu.cuDeviceGetPCIBusId(other, sizeof(other),
					   prop.location.id);
		kvp_arena_fail("chunk %u is on CUDA device %d (%s), the pool's GPU is device %d (%s)",
			       index, prop.location.id, other, (int)g->dev,
			       g->bdf);
		ret = -EXDEV;
	}
	if (!ret)
		ret = KVP_CU((t->base + c->out_offset, (size_t)c->out_bytes, 0,
			      h, 0), cuMemMap);
	/* A mapping keeps its memory; the handle is not needed for it. */
	kvp_cu.cuMemRelease(h);
	return ret;
}

static void kvp_cu_close(struct kvp_cu_gpu *g)
{
	CUcontext cur = NULL;
	CUcontext ctx = NULL;

	if (!g->retained)
		return;
	/* Not leave this thread in a context we are letting go of. */
	if (kvp_cu.cuCtxGetCurrent(&cur) == CUDA_SUCCESS &&
	    kvp_cu.cuDevicePrimaryCtxRetain(&ctx, g->dev) == CUDA_SUCCESS) {
		if (cur == ctx)
			kvp_cu.cuCtxSetCurrent(NULL);
		kvp_cu.cuDevicePrimaryCtxRelease(g->dev);
	}
	kvp_cu.cuDevicePrimaryCtxRelease(g->dev);
	g->retained = false;
}

/* The view's __resv, for a CUDA arena: what unmap must give back. */
#define KVP_VIEW_RETAINED	0	/* 1: a primary context retained */
#define KVP_VIEW_DEVICE		1	/* its CUdevice */

int kvp_cu_map(struct kvpool *kp, const struct kvpool_arena *a,
	       struct kvpool_arena_view *v)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	struct kvp_cu_gpu g;
	struct kvp_cu_target t = { .g = &g };
	uint64_t next = 0;
	CUdeviceptr base;
	int ret;

	ret = kvp_cu_open(kp->info.out_pool_id, -ENODEV, &g, &prop);
	if (ret)
		return ret;
	if (a->out_bytes % g.gran) {
		kvp_arena_fail("the arena's %llu bytes are no multiple of CUDA device %d's granularity, %zu",
			       (unsigned long long)a->out_bytes, (int)g.dev,
			       g.gran);
		ret = -EINVAL;
		goto out_ctx;
	}
	ret = KVP_CU((&base, (size_t)a->out_bytes, g.gran, 0, 0),
		     cuMemAddressReserve);
	if (ret)
		goto out_ctx;

	t.base = base;
	ret = kvp_arena_walk(kp, a, kvp_cu_map_chunk, &t, &next);
	if (ret)
		goto out_unmap;

	memset(&access, 0, sizeof(access));
	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = g.dev;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	ret = KVP_CU((base, (size_t)a->out_bytes, &access, 1), cuMemSetAccess);
	if (ret)
		goto out_unmap;

	v->base = (void *)(uintptr_t)base;
	v->__resv[KVP_VIEW_RETAINED] = g.retained;
	v->__resv[KVP_VIEW_DEVICE] = (uint32_t)g.dev;
	return 0;

out_unmap:
	/* The chunks mapped so far lie end to end from base. */
	if (next)
		kvp_cu.cuMemUnmap(base, (size_t)next);
	kvp_cu.cuMemAddressFree(base, (size_t)a->out_bytes);
out_ctx:
	kvp_cu_close(&g);
	return ret;
}

int kvp_cu_unmap(struct kvpool_arena_view *v)
{
	CUdeviceptr base = (CUdeviceptr)(uintptr_t)v->base;
	struct kvp_cu_gpu g = { 0 };
	int ret;

	/* Mapped by this library, so the driver was loaded. */
	ret = kvp_cu_ready();
	if (!ret)
		ret = KVP_CU((base, (size_t)v->bytes), cuMemUnmap);
	if (!ret)
		ret = KVP_CU((base, (size_t)v->bytes), cuMemAddressFree);
	if (ret)
		return ret;
	if (v->__resv[KVP_VIEW_RETAINED]) {
		g.dev = (CUdevice)v->__resv[KVP_VIEW_DEVICE];
		g.retained = true;
		kvp_cu_close(&g);
	}
	return 0;
}

/*
 * Handle @h exported as a new O_CLOEXEC descriptor into *@fd (-1 on
 * failure), and released: the descriptor holds the memory now, or
 * nothing does.
 */
static int kvp_cu_export(CUmemGenericAllocationHandle h, int *fd)
{
	int ret;

	ret = KVP_CU((fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
		     cuMemExportToShareableHandle);
	kvp_cu.cuMemRelease(h);
	if (ret) {
		*fd = -1;
		return ret;
	}
	/* Not for a program this one runs, as the library's own files. */
	if (fcntl(*fd, F_SETFD, FD_CLOEXEC)) {
		ret = -errno;
		kvp_arena_fail("fcntl(F_SETFD) of an export: %s",
			       strerror(-ret));
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/* One CUDA allocation of @bytes as @prop says, exported as a descriptor. */
static int kvp_cu_chunk(const CUmemAllocationProp *prop, uint64_t bytes,
			uint32_t index, int *fd)
{
	CUmemGenericAllocationHandle h;
	int ret;

	*fd = -1;
	ret = KVP_CU((&h, (size_t)bytes, prop, 0), cuMemCreate);
	if (ret) {
		/* Which one: the text is worth more with it. */
		char what[KVP_ARENA_ERR_LEN];

		snprintf(what, sizeof(what), "%s", kvpool_arena_error());
		kvp_arena_fail("chunk %u: %s", index, what);
		return ret;
	}
	return kvp_cu_export(h, fd);
}

/*
 * The flags CTL_ARENA_SET gets for a CUDA arena of pool @pool_id asked
 * with @flags: where the kernel has KVPOOL_FEAT_GPU_AGENT the pool holds
 * the GPU up (KVPOOL_ARENA_SET_DEVICE); where it has not, an agent arena
 * cannot be. Before any CUDA call, so that a refusal costs nothing.
 */
static int kvp_cu_set_flags(unsigned int pool_id, uint32_t flags,
			    uint32_t *set_flags)
{
	uint64_t features;
	int ret;

	if (flags & ~KVPOOL_ARENA_SET_AGENT) {
		kvp_arena_fail("flags %#x: only KVPOOL_ARENA_SET_AGENT is the caller's (the library adds KVPOOL_ARENA_SET_DEVICE itself)",
			       flags);
		return -EINVAL;
	}
	ret = kvp_pool_features(pool_id, &features);
	if (ret)
		return ret;
	if (!(features & KVPOOL_FEAT_GPU_AGENT)) {
		if (flags & KVPOOL_ARENA_SET_AGENT) {
			kvp_arena_fail("the kvpool module has no GPU agent (KVPOOL_FEAT_GPU_AGENT): an agent arena needs ABI 3");
			return -EOPNOTSUPP;
		}
		/* ABI 2: the GPU stays up only with persistence mode on. */
		*set_flags = 0;
		return 0;
	}
	*set_flags = flags | KVPOOL_ARENA_SET_DEVICE;
	return 0;
}

KVP_PUBLIC
int kvpool_arena_create_cuda_flags(unsigned int pool_id, uint64_t page_bytes,
				   uint32_t nr_chunks, uint32_t flags,
				   uint32_t *error_index)
{
	struct kvpool_arena_chunk chunks[KVPOOL_ARENA_MAX_CHUNKS];
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS];
	CUmemAllocationProp prop;
	struct kvpool_info info;
	struct kvp_cu_gpu g;
	uint32_t i, made = 0, set_flags;
	int ret, device_fd = -1;

	ret = kvp_create_start(pool_id, error_index, &info);
	if (ret)
		return ret;
	ret = kvp_cu_set_flags(pool_id, flags, &set_flags);
	if (ret)
		return kvp_arena_done(ret);
	ret = kvp_cu_open(pool_id, -EINVAL, &g, &prop);
	if (ret)
		return kvp_arena_done(ret);
	/*
	 * The GPU's node once the driver is loaded: its /proc files are
	 * there from then on (the fake driver's stand-ins from cuInit()).
	 */
	if (set_flags & KVPOOL_ARENA_SET_DEVICE) {
		device_fd = kvp_gpu_device_open(pool_id);
		if (device_fd < 0) {
			ret = device_fd;
			goto out;
		}
	}
	ret = kvp_plan(info.out_nr_pages, page_bytes, nr_chunks, g.gran, bytes);
	if (ret) {
		kvp_arena_fail("no plan of %u chunks for %u pages of %llu bytes in units of CUDA device %d's granularity, %zu: %s",
			       nr_chunks, info.out_nr_pages,
			       (unsigned long long)page_bytes, (int)g.dev,
			       g.gran, kvpool_strerror(ret));
		goto out;
	}

	memset(chunks, 0, sizeof(chunks));
	for (made = 0; made < nr_chunks; made++) {
		int fd;

		ret = kvp_cu_chunk(&prop, bytes[made], made, &fd);
		if (ret)
			goto out;
		chunks[made].fd = fd;
		chunks[made].bytes = bytes[made];
	}
	ret = kvp_arena_set(pool_id, KVPOOL_ARENA_CUDA, set_flags, device_fd,
			    page_bytes, chunks, nr_chunks, error_index);
	if (ret)
		kvp_arena_fail("KVPOOL_CTL_ARENA_SET: %s", kvpool_strerror(ret));
out:
	/* The pool holds its own references now, or nothing was given. */
	for (i = 0; i < made; i++)
		close(chunks[i].fd);
	kvp_cu_close(&g);
	/* The pool's own reference holds the GPU up now, if it has one. */
	if (device_fd >= 0)
		close(device_fd);
	return kvp_arena_done(ret);
}

KVP_PUBLIC
int kvpool_arena_create_cuda(unsigned int pool_id, uint64_t page_bytes,
			     uint32_t nr_chunks, uint32_t *error_index)
{
	return kvpool_arena_create_cuda_flags(pool_id, page_bytes, nr_chunks,
					      0, error_index);
}

/*
 * The agent's contexts: the primary context of each GPU it has served,
 * retained at its first request and kept for the process's life. A
 * daemon that retained and released per request would have the driver
 * make and tear down a context each time (it goes with the last
 * release), the costliest call there is.
 */
#define KVP_AGENT_MAX_GPUS	64

static pthread_mutex_t kvp_agent_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	CUdevice dev;
	CUcontext ctx;
} kvp_agent_ctx[KVP_AGENT_MAX_GPUS];
static unsigned int kvp_agent_nr_ctx;

/* The retained primary context of @dev, retained now if it was not. */
static int kvp_agent_context(CUdevice dev, CUcontext *ctx)
{
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&kvp_agent_lock);
	for (i = 0; i < kvp_agent_nr_ctx; i++)
		if (kvp_agent_ctx[i].dev == dev)
			break;
	if (i == kvp_agent_nr_ctx) {
		if (i == KVP_AGENT_MAX_GPUS) {
			kvp_arena_fail("CUDA device %d: this agent serves %u GPUs already",
				       (int)dev, KVP_AGENT_MAX_GPUS);
			ret = -ENOSPC;
		} else {
			ret = KVP_CU((&kvp_agent_ctx[i].ctx, dev),
				     cuDevicePrimaryCtxRetain);
			if (!ret) {
				kvp_agent_ctx[i].dev = dev;
				kvp_agent_nr_ctx++;
			}
		}
	}
	if (!ret)
		*ctx = kvp_agent_ctx[i].ctx;
	pthread_mutex_unlock(&kvp_agent_lock);
	return ret;
}

int kvp_cu_reexport(unsigned int pool_id, int master, int *fd)
{
	CUmemGenericAllocationHandle h;
	CUcontext ctx, prev = NULL;
	struct kvp_cu_gpu g;
	int ret;

	*fd = -1;
	ret = kvp_cu_device(pool_id, -EINVAL, &g);
	if (!ret)
		ret = kvp_agent_context(g.dev, &ctx);
	if (!ret)
		ret = KVP_CU((&prev), cuCtxGetCurrent);
	if (!ret)
		ret = KVP_CU((ctx), cuCtxSetCurrent);
	if (ret) {
		close(master);
		return ret;
	}
	ret = KVP_CU((&h, (void *)(uintptr_t)master,
		      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		     cuMemImportFromShareableHandle);
	/* The handle holds the memory now: the master is the pool's. */
	close(master);
	if (!ret)
		ret = kvp_cu_export(h, fd);
	/* Leave the thread as it was: the caller's context is its own. */
	kvp_cu.cuCtxSetCurrent(prev);
	return ret;
}
