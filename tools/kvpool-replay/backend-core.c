// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-replay, core backend: the driver's core linked in, with the
 * userspace shim driver/user/kvp_os_user.c, one pool in this
 * process. Every op takes pool->lock around one *_locked call, as the
 * driver does around its ioctls, and answers as libkvpool would: the
 * driver's checks before the core is called (kvpd_check_batch() of
 * driver/kvpool_ioctl.c), libkvpool's choice of which entry an error
 * blames (kvp_error_index() of userlib/pool.c), a shortfall on ENOSPC
 * and EDQUOT alone, the driver's feature bits.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * The shim counts allocations: teardown fails if anything the core
 * allocated is still live once the pool is gone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvp_core.h"
#include "replay.h"

static struct kvp_pool pool;
static bool pool_live;

static void kvpool_lock(void)
{
	mutex_lock(&pool.lock);
}

static void kvpool_unlock(void)
{
	mutex_unlock(&pool.lock);
}

static void set_res(struct kvpool_batch_result *res, u32 index, u32 missing,
		    u32 nr_pages)
{
	if (!res)
		return;
	memset(res, 0, sizeof(*res));
	res->error_index = index;
	res->nr_missing = missing;
	res->nr_pages = nr_pages;
}

/*
 * The driver refuses an empty or oversized batch before the core sees
 * it; the core checks again, but not for every op, so check here too.
 */
static int check_batch(unsigned int n)
{
	return !n || n > pool.max_batch ? -EINVAL : 0;
}

/*
 * Which entry to blame for @ret, as libkvpool does: only the errnos
 * about one entry carry an index, and only one inside the batch; an
 * EINVAL for the count itself blames none.
 */
static u32 blame(int ret, unsigned int n, u32 index)
{
	switch (ret) {
	case -EINVAL:
		if (check_batch(n))
			return KVPOOL_NO_INDEX;
		/* fall through */
	case -ENOENT:
	case -ESTALE:
	case -E2BIG:
	case -EALREADY:
	case -EBUSY:
		return index < n ? index : KVPOOL_NO_INDEX;
	default:
		return KVPOOL_NO_INDEX;
	}
}

static int c_setup(struct rp_pool *p)
{
	int ret;

	kvp_user_verbose = true;	/* print each broken invariant */
	ret = kvp_pool_init(&pool, 0, p->flags, p->nr_pages, p->page_tokens,
			    p->nr_rows, p->row_tokens);
	if (ret) {
		fprintf(stderr, "kvpool-replay: kvp_pool_init: %s\n",
			strerror(-ret));
		return ret;
	}
	pool_live = true;
	snprintf(p->desc, sizeof(p->desc), "in-process core");
	return 0;
}

static int c_teardown(struct rp_pool *p)
{
	(void)p;
	if (!pool_live)
		return 0;
	kvp_pool_fini(&pool);
	pool_live = false;
	if (kvp_user_live_allocs) {
		fprintf(stderr,
			"kvpool-replay: core: %ld allocations still live after kvp_pool_fini()\n",
			kvp_user_live_allocs);
		return -ENOTRECOVERABLE;
	}
	return 0;
}

static int c_open(void **cl)
{
	struct kvp_client *c = malloc(sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	kvpool_lock();
	ret = kvp_client_attach_locked(&pool, c);
	kvpool_unlock();
	if (ret) {
		free(c);
		return ret;
	}
	*cl = c;
	return 0;
}

static void c_close(void *cl)
{
	if (!cl)
		return;
	kvpool_lock();
	kvp_client_detach_locked(cl);
	kvpool_unlock();
	free(cl);
}

static int c_info(void *cl, struct kvpool_info *info)
{
	struct kvp_client *c = cl;

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	info->out_abi_version = KVPOOL_ABI_VERSION;
	info->out_pool_id = pool.id;
	/*
	 * Everything the core implements, from the one list the driver's
	 * INFO takes it from too (KVP_CORE_FEATURES, driver/kvp_core.h);
	 * the driver adds the bits of what only it has (the arena, tenants
	 * named by path). The replay's ops table uses only some of it, but
	 * a caller testing a bit must see the core, not this backend's
	 * subset.
	 */
	info->out_features = KVP_CORE_FEATURES;
	info->out_nr_pages = pool.nr_pages;
	info->out_page_tokens = pool.page_tokens;
	info->out_nr_rows = pool.nr_rows;
	info->out_row_tokens = pool.row_tokens;
	info->out_create_flags = pool.flags;
	info->out_max_batch = pool.max_batch;
	info->out_client_id = c->id;
	return 0;
}

static int c_stats(void *cl, struct kvpool_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	kvpool_lock();
	kvp_stats_locked(cl, st);
	kvpool_unlock();
	return 0;
}

static int c_verify(void *cl)
{
	u32 bad = 0;
	int ret;

	(void)cl;
	kvpool_lock();
	ret = kvp_verify_locked(&pool, &bad);
	kvpool_unlock();
	return ret ? ret : (int)bad;
}

static int c_alloc_rows(void *cl, struct kvpool_handle *h, unsigned int n,
			struct kvpool_batch_result *res)
{
	u32 missing = 0;
	int ret;

	ret = check_batch(n);
	if (!ret) {
		kvpool_lock();
		ret = kvp_row_alloc_locked(cl, h, n, &missing);
		kvpool_unlock();
	}
	/* As libkvpool: the shortfall means something on both. */
	set_res(res, KVPOOL_NO_INDEX,
		(ret == -ENOSPC || ret == -EDQUOT) ? missing : 0, 0);
	return ret ? ret : (int)n;
}

static int c_extend(void *cl, struct kvpool_extend_entry *e, unsigned int n,
		    uint32_t *pages, unsigned int pages_cap,
		    struct kvpool_batch_result *res)
{
	struct kvp_extend_result r = { .error_index = KVPOOL_NO_INDEX };
	int ret;

	ret = check_batch(n);
	if (!ret) {
		kvpool_lock();
		ret = kvp_extend_locked(cl, e, n, pages_cap, &r);
		kvpool_unlock();
	}
	if (!ret && r.nr_pages)
		memcpy(pages, r.pages, (size_t)r.nr_pages * sizeof(u32));
	kvfree(r.pages);
	/* As libkvpool: nr_pages on success and ENOBUFS (the room needed). */
	set_res(res, blame(ret, n, r.error_index),
		(ret == -ENOSPC || ret == -EDQUOT) ? r.shortfall : 0,
		(!ret || ret == -ENOBUFS) ? r.nr_pages : 0);
	return ret ? ret : (int)r.nr_pages;
}

/* The ops on struct kvpool_batch, as the driver's kvp_batch() has them. */
enum batch_op {
	BATCH_COMMIT,
	BATCH_TRIM,
	BATCH_RELEASE,
	BATCH_DONATE,
	BATCH_SWA_FREE,
	BATCH_CACHE_EVICT,
};

/*
 * One op on @n entries at @e (len entries, handles or page ids, by op);
 * its count is what out_nr_pages would say: pages freed, or moved to
 * the cache by DONATE, or evicted.
 */
static int batch(void *cl, enum batch_op op, u32 flags, const void *e,
		 unsigned int n, struct kvpool_batch_result *res)
{
	u32 index = KVPOOL_NO_INDEX, out = 0;
	int ret;

	ret = check_batch(n);
	if (ret)
		goto done;
	kvpool_lock();
	switch (op) {
	case BATCH_COMMIT:
		ret = kvp_commit_locked(cl, e, n, &index);
		break;
	case BATCH_TRIM:
		ret = kvp_trim_locked(cl, e, n, &out, &index);
		break;
	case BATCH_RELEASE:
		ret = kvp_release_locked(cl, e, n, flags, &out, &index);
		break;
	case BATCH_DONATE:
		ret = kvp_donate_locked(cl, e, n, &out, &index);
		break;
	case BATCH_SWA_FREE:
		ret = kvp_swa_free_locked(cl, e, n, &out, &index);
		break;
	case BATCH_CACHE_EVICT:
		ret = kvp_cache_evict_locked(cl, e, n, &index);
		out = n;
		break;
	}
	kvpool_unlock();
done:
	set_res(res, blame(ret, n, index), 0, ret ? 0 : out);
	return ret ? ret : (int)out;
}

static int c_commit(void *cl, const struct kvpool_len_entry *e,
		    unsigned int n, struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_COMMIT, 0, e, n, res);
}

static int c_trim(void *cl, const struct kvpool_handle *h, unsigned int n,
		  struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_TRIM, 0, h, n, res);
}

static int c_release(void *cl, const struct kvpool_handle *h, unsigned int n,
		     struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_RELEASE, 0, h, n, res);
}

static int c_release_donate(void *cl, const struct kvpool_handle *h,
			    unsigned int n, struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_RELEASE, KVPOOL_RELEASE_DONATE, h, n, res);
}

static int c_donate(void *cl, const struct kvpool_len_entry *e,
		    unsigned int n, struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_DONATE, 0, e, n, res);
}

static int c_swa_free(void *cl, const struct kvpool_len_entry *e,
		      unsigned int n, struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_SWA_FREE, 0, e, n, res);
}

static int c_cache_evict(void *cl, const uint32_t *pages, unsigned int n,
			 struct kvpool_batch_result *res)
{
	return batch(cl, BATCH_CACHE_EVICT, 0, pages, n, res);
}

static int c_attach_prefix(void *cl, struct kvpool_handle h,
			   const uint32_t *pages, unsigned int n)
{
	int ret;

	kvpool_lock();
	ret = kvp_attach_prefix_locked(cl, &h, pages, n);
	kvpool_unlock();
	return ret;
}

static int c_to_slot(void *cl, struct kvpool_handle h, uint64_t session)
{
	u32 n;
	int ret;

	kvpool_lock();
	ret = kvp_to_slot_locked(cl, &h, session, &n);
	kvpool_unlock();
	return ret ? ret : (int)n;
}

static int c_from_slot(void *cl, uint64_t session, struct kvpool_handle *h)
{
	struct kvpool_handle out;
	u32 n;
	int ret;

	kvpool_lock();
	ret = kvp_from_slot_locked(cl, session, &out, &n);
	kvpool_unlock();
	if (ret)
		return ret;
	*h = out;
	return (int)n;
}

static int c_slot_release(void *cl, uint64_t session)
{
	u32 n;
	int ret;

	kvpool_lock();
	ret = kvp_slot_release_locked(cl, session, &n);
	kvpool_unlock();
	return ret ? ret : (int)n;
}

static int query(void *cl, struct kvpool_row_query *q, uint32_t *pages,
		 unsigned int pages_cap, struct kvpool_row_query *out)
{
	u32 *ids = NULL;
	int ret;

	q->size = sizeof(*q);
	q->pages_cap = pages_cap;
	kvpool_lock();
	ret = kvp_row_query_locked(cl, q, &ids);
	kvpool_unlock();
	if (ret)
		return ret;
	if (ids) {
		memcpy(pages, ids, (size_t)(q->out_nr_pages < pages_cap ?
				  q->out_nr_pages : pages_cap) * sizeof(u32));
		kvfree(ids);
	}
	if (out)
		*out = *q;
	return (int)q->out_nr_pages;
}

static int c_row_query(void *cl, struct kvpool_handle h, uint32_t *pages,
		       unsigned int pages_cap, struct kvpool_row_query *q)
{
	struct kvpool_row_query arg = { .handle = h };

	return query(cl, &arg, pages, pages_cap, q);
}

static int c_slot_query(void *cl, uint64_t session, uint32_t *pages,
			unsigned int pages_cap, struct kvpool_row_query *q)
{
	struct kvpool_row_query arg = {
		.flags = KVPOOL_QUERY_BY_SLOT,
		.session_id = session,
	};

	return query(cl, &arg, pages, pages_cap, q);
}

const struct rp_ops rp_core_ops = {
	.name = "core",
	.multiprocess = false,
	.setup = c_setup,
	.teardown = c_teardown,
	.open = c_open,
	.close = c_close,
	.info = c_info,
	.stats = c_stats,
	.verify = c_verify,
	.alloc_rows = c_alloc_rows,
	.extend = c_extend,
	.commit = c_commit,
	.trim = c_trim,
	.release = c_release,
	.release_donate = c_release_donate,
	.donate = c_donate,
	.attach_prefix = c_attach_prefix,
	.cache_evict = c_cache_evict,
	.swa_free = c_swa_free,
	.to_slot = c_to_slot,
	.from_slot = c_from_slot,
	.slot_release = c_slot_release,
	.row_query = c_row_query,
	.slot_query = c_slot_query,
};
