// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: an arena mapped into this process and unmapped, and page and
 * layer addresses in the mapping. A host arena maps here with mmap(2), a
 * CUDA one through cuda.c; both walk the chunks with arena.c's
 * kvp_arena_walk(). A pool on a budget maps its own file instead, in one
 * mmap(2), and unmaps as a host arena does. Kept apart from arena.c so
 * that the arena's calls do not depend on the CUDA backend that depends
 * on them.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/*
 * A pool on a budget (ABI 4): no chunk files, the pool file itself,
 * mapped whole and shared. The kernel backs each chunk the pool holds
 * on first touch and takes it out of every mapping when the pool gives
 * it back, so the one mapping stays right as the pool grows and
 * shrinks; a page of a slot not backed is SIGBUS, not this call's
 * concern.
 */
static int kvp_budget_map(struct kvpool *kp, const struct kvpool_arena *a,
			  void **base)
{
	void *p;
	int ret;

	p = mmap(NULL, (size_t)a->out_bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED, kp->fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		kvp_arena_fail("mapping pool %u's %llu bytes (a budget pool's file): mmap: %s",
			       kp->info.out_pool_id,
			       (unsigned long long)a->out_bytes,
			       strerror(-ret));
		return ret;
	}
	*base = p;
	return 0;
}

/* A host arena's chunk @c mapped into the reservation at @ctx. */
static int kvp_host_map_chunk(void *ctx, const struct kvpool_arena_fd *c,
			      uint32_t index)
{
	void *p = mmap((char *)ctx + c->out_offset, (size_t)c->out_bytes,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		       c->out_fd, 0);
	int err = p == MAP_FAILED ? -errno : 0;

	/*
	 * mmap(2)'s errno, not the kernel's: kvpool_strerror() would word
	 * it as a kvpool ioctl's.
	 */
	if (err)
		kvp_arena_fail("mapping chunk %u (%llu bytes at %llu): mmap: %s",
			       index, (unsigned long long)c->out_bytes,
			       (unsigned long long)c->out_offset,
			       strerror(-err));
	/* The mapping holds the file now, or nothing does. */
	close(c->out_fd);
	return err;
}

KVP_PUBLIC
int kvpool_arena_map(struct kvpool *kp, struct kvpool_arena_view *v)
{
	struct kvpool_arena a;
	uint64_t next = 0;
	bool budget;
	char *base;
	int ret;

	memset(v, 0, sizeof(*v));
	kvp_arena_clear();
	ret = kvpool_arena_info(kp, &a);
	if (ret)
		return kvp_arena_done(ret);
	if (a.out_kind == KVPOOL_ARENA_NONE)
		return kvp_arena_done(-ENODATA);
	/* Host memory maps with mmap(2), CUDA's with the driver's calls. */
	if (a.out_kind != KVPOOL_ARENA_HOST && a.out_kind != KVPOOL_ARENA_CUDA)
		return kvp_arena_done(-EOPNOTSUPP);
	budget = a.out_set_flags & KVPOOL_ARENA_SET_BUDGET;
	/* Only host budgets exist; a budget pool may hold no chunk yet. */
	if (budget && a.out_kind != KVPOOL_ARENA_HOST)
		return kvp_arena_done(-EOPNOTSUPP);
	if ((!budget && !a.out_nr_chunks) || !a.out_page_bytes ||
	    !a.out_bytes ||
	    a.out_bytes / a.out_page_bytes < kp->info.out_nr_pages)
		return kvp_arena_done(-EIO);
	if (a.out_bytes > SIZE_MAX)
		return kvp_arena_done(-ENOMEM);

	if (budget) {
		ret = kvp_budget_map(kp, &a, &v->base);
		if (ret)
			return kvp_arena_done(ret);
		goto done;
	}
	if (a.out_kind == KVPOOL_ARENA_CUDA) {
		ret = kvp_cu_map(kp, &a, v);
		if (ret)
			return kvp_arena_done(ret);
		goto done;
	}

	/* One range for all chunks: page i is base + i * page_bytes. */
	base = mmap(NULL, (size_t)a.out_bytes, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		ret = -errno;
		kvp_arena_fail("reserving %llu bytes of address space for the arena: mmap: %s",
			       (unsigned long long)a.out_bytes, strerror(-ret));
		return ret;
	}

	/* No PROT_NONE hole left: the walk has the chunks fill the range. */
	ret = kvp_arena_walk(kp, &a, kvp_host_map_chunk, base, &next);
	if (ret)
		goto fail;

	v->base = base;
done:
	v->bytes = a.out_bytes;
	v->page_bytes = a.out_page_bytes;
	v->kind = a.out_kind;
	v->nr_pages = kp->info.out_nr_pages;
	v->nr_chunks = a.out_nr_chunks;
	return 0;

fail:
	/* Chunks mapped so far go with the reservation. */
	munmap(base, (size_t)a.out_bytes);
	return kvp_arena_done(ret);
}

KVP_PUBLIC
int kvpool_arena_unmap(struct kvpool_arena_view *v)
{
	int ret = 0;

	kvp_arena_clear();
	if (v->base && v->kind == KVPOOL_ARENA_CUDA)
		ret = kvp_cu_unmap(v);
	else if (v->base && munmap(v->base, (size_t)v->bytes)) {
		ret = -errno;
		kvp_arena_fail("unmapping the arena's %llu bytes at %p: munmap: %s",
			       (unsigned long long)v->bytes, v->base,
			       strerror(-ret));
	}
	if (ret)
		return kvp_arena_done(ret);
	memset(v, 0, sizeof(*v));
	return 0;
}

KVP_PUBLIC
void *kvpool_layer_addr(const struct kvpool_arena_view *v, uint32_t nr_layers,
			enum kvpool_layout layout, uint32_t layer,
			uint32_t page)
{
	uint64_t slice, off;

	if (!v->base || !v->page_bytes || !nr_layers ||
	    v->page_bytes % nr_layers || layer >= nr_layers ||
	    page >= v->nr_pages)
		return NULL;
	slice = v->page_bytes / nr_layers;
	switch (layout) {
	case KVPOOL_LAYOUT_PAGE_MAJOR:
		off = (uint64_t)page * v->page_bytes + layer * slice;
		break;
	case KVPOOL_LAYOUT_LAYER_MAJOR:
		/* slice * total is at most bytes: no overflow. */
		off = layer * (slice * (v->bytes / v->page_bytes)) +
		      (uint64_t)page * slice;
		break;
	default:
		return NULL;
	}
	return (char *)v->base + off;
}
