// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench, core side: the driver's core linked in with the
 * userspace shim of driver/user, one pool and one client in this
 * process. Each op is one *_locked call under pool->lock (the shim's
 * lock, a flag), with the entries built as libkvpool builds them and the
 * new page ids copied out as the driver copies them to userspace: what
 * is left between this and the kernel side is the syscall, the copies
 * across it and the kernel's own locking.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Only the API of kvp_core.h is used, never the pool's free list, so
 * that the bench keeps building while the allocator changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvp_core.h"
#include "bench.h"

static struct kvp_pool pool;
static struct kvp_client client;
static bool live;

/* The driver refuses these before the core sees them. */
static int check_batch(u32 n)
{
	return !n || n > pool.max_batch ? -EINVAL : 0;
}

static int c_setup(const struct kb_geom *g)
{
	int ret;

	ret = kvp_pool_init(&pool, 0, 0, g->nr_pages, g->page_tokens,
			    g->nr_rows, g->row_tokens);
	if (ret) {
		fprintf(stderr, "kvpool-bench: core: kvp_pool_init: %s\n",
			strerror(-ret));
		return ret;
	}
	mutex_lock(&pool.lock);
	ret = kvp_client_attach_locked(&pool, &client);
	mutex_unlock(&pool.lock);
	if (ret) {
		kvp_pool_fini(&pool);
		return ret;
	}
	live = true;
	return 0;
}

static void c_teardown(void)
{
	if (!live)
		return;
	mutex_lock(&pool.lock);
	kvp_client_detach_locked(&client);
	mutex_unlock(&pool.lock);
	kvp_pool_fini(&pool);
	live = false;
	if (kvp_user_live_allocs)
		kb_die("core: %ld allocations still live after kvp_pool_fini()",
		       kvp_user_live_allocs);
}

static int c_alloc_rows(struct kvpool_handle *h, u32 n)
{
	u32 missing = 0;
	int ret = check_batch(n);

	if (ret)
		return ret;
	mutex_lock(&pool.lock);
	ret = kvp_row_alloc_locked(&client, h, n, &missing);
	mutex_unlock(&pool.lock);
	return ret ? ret : (int)n;
}

static int c_extend(struct kvpool_extend_entry *e, u32 n, u32 *pages,
		    u32 pages_cap)
{
	struct kvp_extend_result r = { .error_index = KVPOOL_NO_INDEX };
	int ret = check_batch(n);

	if (ret)
		return ret;
	mutex_lock(&pool.lock);
	ret = kvp_extend_locked(&client, e, n, pages_cap, &r);
	mutex_unlock(&pool.lock);
	/* The driver's copy_to_user() of the new ids, after the unlock. */
	if (!ret && r.nr_pages)
		memcpy(pages, r.pages, (size_t)r.nr_pages * sizeof(u32));
	kvfree(r.pages);
	return ret ? ret : (int)r.nr_pages;
}

static int c_commit(const struct kvpool_len_entry *e, u32 n)
{
	u32 index;
	int ret = check_batch(n);

	if (ret)
		return ret;
	mutex_lock(&pool.lock);
	ret = kvp_commit_locked(&client, e, n, &index);
	mutex_unlock(&pool.lock);
	return ret;
}

static int c_release(const struct kvpool_handle *h, u32 n)
{
	u32 freed = 0, index;
	int ret = check_batch(n);

	if (ret)
		return ret;
	mutex_lock(&pool.lock);
	ret = kvp_release_locked(&client, h, n, 0, &freed, &index);
	mutex_unlock(&pool.lock);
	return ret ? ret : (int)freed;
}

static int c_to_slot(struct kvpool_handle h, u64 session)
{
	u32 n;
	int ret;

	mutex_lock(&pool.lock);
	ret = kvp_to_slot_locked(&client, &h, session, &n);
	mutex_unlock(&pool.lock);
	return ret ? ret : (int)n;
}

static int c_from_slot(u64 session, struct kvpool_handle *h)
{
	u32 n;
	int ret;

	mutex_lock(&pool.lock);
	ret = kvp_from_slot_locked(&client, session, h, &n);
	mutex_unlock(&pool.lock);
	return ret ? ret : (int)n;
}

const struct kb_side kb_core_side = {
	.name = "core",
	.setup = c_setup,
	.teardown = c_teardown,
	.alloc_rows = c_alloc_rows,
	.extend = c_extend,
	.commit = c_commit,
	.release = c_release,
	.to_slot = c_to_slot,
	.from_slot = c_from_slot,
};
