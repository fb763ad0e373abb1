// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-replay, kernel backend: libkvpool on /dev/kvpoolN.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * With --create the pool is made through /dev/kvpool-control with the
 * geometry asked for and destroyed again at the end; without it the pool
 * named by --pool is used as it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "replay.h"

static unsigned int created_id;
static const char *pool_path;
static char path_buf[32];

static int k_setup(struct rp_pool *p)
{
	struct kvpool_pool_params pp = {
		.nr_pages = p->nr_pages,
		.page_tokens = p->page_tokens,
		.nr_rows = p->nr_rows,
		.row_tokens = p->row_tokens,
		.flags = p->flags,
	};
	int ret;

	if (!p->create) {
		pool_path = p->path;
		snprintf(p->desc, sizeof(p->desc), "%s", p->path);
		return 0;
	}
	ret = kvpool_pool_create(&pp, &created_id);
	if (ret < 0) {
		fprintf(stderr, "kvpool-replay: creating a pool through %s: %s%s\n",
			KVPOOL_CONTROL_PATH, strerror(-ret),
			ret == -ENOENT ? " (is the kvpool module loaded?)" :
			ret == -EPERM || ret == -EACCES ? " (root?)" : "");
		return ret;
	}
	snprintf(path_buf, sizeof(path_buf), "/dev/kvpool%u", created_id);
	pool_path = path_buf;
	snprintf(p->desc, sizeof(p->desc), "%s (created)", path_buf);
	return 0;
}

static int k_teardown(struct rp_pool *p)
{
	int ret;

	if (!p->create)
		return 0;
	ret = kvpool_pool_destroy(created_id);
	if (ret < 0)
		fprintf(stderr, "kvpool-replay: destroying pool %u: %s\n",
			created_id, kvpool_strerror(ret));
	return ret;
}

static int k_open(void **cl)
{
	struct kvpool *kp;
	int ret = kvpool_open(pool_path, &kp);

	if (ret < 0) {
		fprintf(stderr, "kvpool-replay: opening %s: %s%s\n", pool_path,
			strerror(-ret),
			ret == -ENOENT ? " (no such pool; module loaded?)" : "");
		return ret;
	}
	*cl = kp;
	return 0;
}

static void k_close(void *cl)
{
	kvpool_close(cl);
}

static int k_info(void *cl, struct kvpool_info *info)
{
	return kvpool_info(cl, info);
}

static int k_stats(void *cl, struct kvpool_stats *st)
{
	return kvpool_stats(cl, st);
}

static int k_verify(void *cl)
{
	return kvpool_verify(cl, NULL);
}

static int k_alloc_rows(void *cl, struct kvpool_handle *h, unsigned int n,
			struct kvpool_batch_result *res)
{
	return kvpool_alloc_rows(cl, h, n, res);
}

static int k_extend(void *cl, struct kvpool_extend_entry *e, unsigned int n,
		    uint32_t *pages, unsigned int pages_cap,
		    struct kvpool_batch_result *res)
{
	return kvpool_extend(cl, e, n, pages, pages_cap, res);
}

static int k_commit(void *cl, const struct kvpool_len_entry *e,
		    unsigned int n, struct kvpool_batch_result *res)
{
	return kvpool_commit(cl, e, n, res);
}

static int k_trim(void *cl, const struct kvpool_handle *h, unsigned int n,
		  struct kvpool_batch_result *res)
{
	return kvpool_trim(cl, h, n, res);
}

static int k_release(void *cl, const struct kvpool_handle *h, unsigned int n,
		     struct kvpool_batch_result *res)
{
	return kvpool_release(cl, h, n, res);
}

static int k_release_donate(void *cl, const struct kvpool_handle *h,
			    unsigned int n, struct kvpool_batch_result *res)
{
	return kvpool_release_donate(cl, h, n, res);
}

static int k_donate(void *cl, const struct kvpool_len_entry *e,
		    unsigned int n, struct kvpool_batch_result *res)
{
	return kvpool_donate(cl, e, n, res);
}

static int k_attach_prefix(void *cl, struct kvpool_handle h,
			   const uint32_t *pages, unsigned int n)
{
	return kvpool_attach_prefix(cl, h, pages, n);
}

static int k_cache_evict(void *cl, const uint32_t *pages, unsigned int n,
			 struct kvpool_batch_result *res)
{
	return kvpool_cache_evict(cl, pages, n, res);
}

static int k_swa_free(void *cl, const struct kvpool_len_entry *e,
		      unsigned int n, struct kvpool_batch_result *res)
{
	return kvpool_swa_free(cl, e, n, res);
}

static int k_to_slot(void *cl, struct kvpool_handle h, uint64_t session)
{
	return kvpool_to_slot(cl, h, session);
}

static int k_from_slot(void *cl, uint64_t session, struct kvpool_handle *h)
{
	return kvpool_from_slot(cl, session, h);
}

static int k_slot_release(void *cl, uint64_t session)
{
	return kvpool_slot_release(cl, session);
}

static int k_row_query(void *cl, struct kvpool_handle h, uint32_t *pages,
		       unsigned int pages_cap, struct kvpool_row_query *q)
{
	return kvpool_row_query(cl, h, pages, pages_cap, q);
}

static int k_slot_query(void *cl, uint64_t session, uint32_t *pages,
			unsigned int pages_cap, struct kvpool_row_query *q)
{
	return kvpool_slot_query(cl, session, pages, pages_cap, q);
}

const struct rp_ops rp_kernel_ops = {
	.name = "kernel",
	.multiprocess = true,
	.setup = k_setup,
	.teardown = k_teardown,
	.open = k_open,
	.close = k_close,
	.info = k_info,
	.stats = k_stats,
	.verify = k_verify,
	.alloc_rows = k_alloc_rows,
	.extend = k_extend,
	.commit = k_commit,
	.trim = k_trim,
	.release = k_release,
	.release_donate = k_release_donate,
	.donate = k_donate,
	.attach_prefix = k_attach_prefix,
	.cache_evict = k_cache_evict,
	.swa_free = k_swa_free,
	.to_slot = k_to_slot,
	.from_slot = k_from_slot,
	.slot_release = k_slot_release,
	.row_query = k_row_query,
	.slot_query = k_slot_query,
};
