/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpool-replay: the backends behind one ops table.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Both backends answer exactly as libkvpool does (see userlib/kvpool.h):
 * >= 0 on success (a count where libkvpool returns one), a negative errno
 * on failure, and a struct kvpool_batch_result filled on both. A client
 * is an opaque pointer: a struct kvpool * for the kernel backend, a
 * struct kvp_client of the in-process pool for the core backend.
 */
#ifndef KVPOOL_REPLAY_H
#define KVPOOL_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kvpool.h>

/* The pool a run uses: what was asked for, and what it got. */
struct rp_pool {
	bool create;		/* make our own pool (kernel: --create) */
	const char *path;	/* kernel, without --create: /dev/kvpoolN */
	uint32_t flags;		/* KVPOOL_CREATE_* for a pool we create */
	uint32_t nr_pages;
	uint32_t page_tokens;
	uint32_t nr_rows;
	uint32_t row_tokens;
	/* filled in by setup */
	char desc[64];		/* e.g. "/dev/kvpool3 (created)" */
};

struct rp_ops {
	const char *name;
	/* Clients may be separate processes (fork after setup). */
	bool multiprocess;
	/* Make or find the pool; 0 or -errno, with a message printed. */
	int (*setup)(struct rp_pool *p);
	/* Undo setup (destroy a pool we made); 0 or -errno. */
	int (*teardown)(struct rp_pool *p);
	/* A new client of the pool. */
	int (*open)(void **cl);
	void (*close)(void *cl);

	int (*info)(void *cl, struct kvpool_info *info);
	int (*stats)(void *cl, struct kvpool_stats *st);
	/* Broken invariants (0: sound), or -errno. */
	int (*verify)(void *cl);
	int (*alloc_rows)(void *cl, struct kvpool_handle *h, unsigned int n,
			  struct kvpool_batch_result *res);
	int (*extend)(void *cl, struct kvpool_extend_entry *e, unsigned int n,
		      uint32_t *pages, unsigned int pages_cap,
		      struct kvpool_batch_result *res);
	int (*commit)(void *cl, const struct kvpool_len_entry *e,
		      unsigned int n, struct kvpool_batch_result *res);
	int (*trim)(void *cl, const struct kvpool_handle *h, unsigned int n,
		    struct kvpool_batch_result *res);
	int (*release)(void *cl, const struct kvpool_handle *h,
		       unsigned int n, struct kvpool_batch_result *res);
	int (*release_donate)(void *cl, const struct kvpool_handle *h,
			      unsigned int n,
			      struct kvpool_batch_result *res);
	int (*donate)(void *cl, const struct kvpool_len_entry *e,
		      unsigned int n, struct kvpool_batch_result *res);
	int (*attach_prefix)(void *cl, struct kvpool_handle h,
			     const uint32_t *pages, unsigned int n);
	int (*cache_evict)(void *cl, const uint32_t *pages, unsigned int n,
			   struct kvpool_batch_result *res);
	int (*swa_free)(void *cl, const struct kvpool_len_entry *e,
			unsigned int n, struct kvpool_batch_result *res);
	int (*to_slot)(void *cl, struct kvpool_handle h, uint64_t session);
	int (*from_slot)(void *cl, uint64_t session, struct kvpool_handle *h);
	int (*slot_release)(void *cl, uint64_t session);
	int (*row_query)(void *cl, struct kvpool_handle h, uint32_t *pages,
			 unsigned int pages_cap, struct kvpool_row_query *q);
	int (*slot_query)(void *cl, uint64_t session, uint32_t *pages,
			  unsigned int pages_cap, struct kvpool_row_query *q);
};

extern const struct rp_ops rp_kernel_ops;
extern const struct rp_ops rp_core_ops;

#endif /* KVPOOL_REPLAY_H */
