/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kvpool: a kernel broker for GPU KV-cache page ownership.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef _UAPI_LINUX_KVPOOL_H
#define _UAPI_LINUX_KVPOOL_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/**
 * DOC: General ioctl format
 *
 * Every pool is a character device, /dev/kvpoolN. One open file is one
 * client: it owns the rows, slots and pages it takes, and all of them go
 * back to the pool when the last reference to the file is dropped. Open it
 * with O_CLOEXEC unless the client is meant to survive exec.
 *
 * Every ioctl struct starts with ``__u32 size`` and ``__u32 flags``. Set
 * size to sizeof() of the struct you were built against. The kernel accepts
 * any size from the op's first release up to PAGE_SIZE: bytes it does not
 * know must be zero, and fields it knows but you did not pass read as zero.
 * Pointers to arrays are passed as __aligned_u64. All reserved fields and
 * padding must be zero.
 *
 * Every batched op is all-or-nothing: the whole batch is validated before
 * any state changes, and if one entry is bad, nothing changes and
 * ``out_error_index`` names the first bad entry (it is ~0U when the error
 * was not about one entry).
 *
 * Once the struct has been read, it is written back (so its out_* fields
 * reach the caller) on success and on every error except EFAULT; errors
 * found in size or the unknown tail leave it untouched. Arrays of results
 * are copied out after the pool lock is dropped: if that copy faults, the
 * op has taken effect and -EFAULT is returned, except ROW_ALLOC, which
 * gives the rows back first. Ioctls sleep on the pool lock without being
 * interruptible: they never fail with EINTR.
 *
 * Errnos, for every ioctl unless the op says otherwise:
 *
 * - ENOTTY:     unknown ioctl number.
 * - EFAULT:     a pointer (the struct or an array) is not accessible.
 * - EINVAL:     size shorter than the op's first release, a reserved field
 *               or padding not zero, count of 0 or above the pool's limit,
 *               a length out of range (above row_tokens, an extend that
 *               shrinks, a commit past allocated or backwards), or the same
 *               row twice in one batch.
 * - E2BIG:      size larger than this kernel knows with a non-zero byte in
 *               the unknown tail, or size above PAGE_SIZE.
 * - EOPNOTSUPP: a flag or op value this kernel does not know.
 * - ENOENT:     the handle or session id does not name a row or slot this
 *               client holds (never held, released, another client's, or
 *               req_pool_idx out of range; these are not told apart so a
 *               client learns nothing of others); or a page id is not a
 *               page of this client's prefix cache.
 * - ESTALE:     this client holds the row, but under a newer generation:
 *               the handle is from an earlier use of the row.
 * - ENOSPC:     not enough free pages or rows; ``out_short`` says how many
 *               were missing. Nothing was taken. (control) all 64 pools
 *               exist.
 * - ENOBUFS:    an output array is too small; ``out_nr_pages`` says how
 *               many entries are needed (saturating at 2^32 - 1). Checked
 *               before ENOSPC. Nothing changed.
 * - EEXIST:     the session id already names a slot of this client.
 * - EALREADY:   DONATE: the row's cache already holds that prefix.
 * - EBUSY:      CACHE_EVICT: a page is pinned (a row borrows it).
 * - EOVERFLOW:  arithmetic on the inputs would overflow.
 * - ENOMEM:     the kernel could not allocate memory. Nothing changed.
 * - EPERM:      a control op without CAP_SYS_ADMIN.
 * - EBUSY:      (control) destroying a pool that still has clients.
 * - EMFILE:     (open) the pool has 65536 clients already.
 * - ENODEV:     (control) no pool with that id; (open) the pool is going.
 */

#define KVPOOL_TYPE		0xb7	/* Documentation/userspace-api/ioctl */

/* Version of this ABI; bumped when ops or fields are added. */
#define KVPOOL_ABI_VERSION	1

/* Returned in kvpool_info.out_features. */
#define KVPOOL_FEAT_ROWS	_BITULL(0)	/* ROW_ALLOC, RELEASE, ROW_QUERY */
#define KVPOOL_FEAT_EXTEND	_BITULL(1)	/* EXTEND, COMMIT, TRIM */
#define KVPOOL_FEAT_SLOTS	_BITULL(2)	/* TO_SLOT, FROM_SLOT, SLOT_RELEASE */
#define KVPOOL_FEAT_VERIFY	_BITULL(3)	/* VERIFY */
/* DONATE, ATTACH_PREFIX, CACHE_EVICT, KVPOOL_RELEASE_DONATE */
#define KVPOOL_FEAT_PREFIX_CACHE _BITULL(4)
#define KVPOOL_FEAT_SWA		_BITULL(5)	/* SWA_FREE */
/*
 * Reserved for ops that later ABI versions add; a client must test the bit
 * before using them: export/import to another process, tenant quotas and
 * pressure notification.
 */
#define KVPOOL_FEAT_EXPORT	_BITULL(6)
#define KVPOOL_FEAT_QUOTA	_BITULL(7)
#define KVPOOL_FEAT_PRESSURE	_BITULL(8)

enum {
	KVPOOL_CMD_BASE = 0x80,
	KVPOOL_CMD_INFO = KVPOOL_CMD_BASE,
	KVPOOL_CMD_STATS,
	KVPOOL_CMD_ROW_ALLOC,
	KVPOOL_CMD_EXTEND,
	KVPOOL_CMD_COMMIT,
	KVPOOL_CMD_TRIM,
	KVPOOL_CMD_RELEASE,
	KVPOOL_CMD_TO_SLOT,
	KVPOOL_CMD_FROM_SLOT,
	KVPOOL_CMD_SLOT_RELEASE,
	KVPOOL_CMD_ROW_QUERY,
	KVPOOL_CMD_VERIFY,
	KVPOOL_CMD_DONATE,
	KVPOOL_CMD_ATTACH_PREFIX,
	KVPOOL_CMD_CACHE_EVICT,
	KVPOOL_CMD_SWA_FREE,
	/* 0x90..0x9f: reserved for the ops named above KVPOOL_FEAT_* */
	KVPOOL_CMD_CTL_CREATE = 0xa0,
	KVPOOL_CMD_CTL_DESTROY,
};

/**
 * struct kvpool_handle - a client's name for a row
 * @req_pool_idx: the row, an index into the GPU's req_to_token table
 * @generation: bumped each time the row is taken; an older value is stale
 */
struct kvpool_handle {
	__u32 req_pool_idx;
	__u32 generation;
};

/* The page id the kernel never hands out; marks "no page" in lists. */
#define KVPOOL_PAGE_NONE	0xffffffffU

/* Create flags: keep page 0 and row 0 out of circulation (CUDA-graph padding). */
#define KVPOOL_CREATE_RESERVE_ZERO	_BITUL(0)

/**
 * struct kvpool_info - KVPOOL_INFO: geometry and feature discovery
 * @size: sizeof(struct kvpool_info)
 * @flags: must be 0
 * @out_abi_version: KVPOOL_ABI_VERSION of the running module
 * @out_pool_id: N of /dev/kvpoolN
 * @out_features: KVPOOL_FEAT_* this module supports
 * @out_nr_pages: pages in the pool, reserved ones included
 * @out_page_tokens: tokens per page
 * @out_nr_rows: rows in the pool, reserved ones included
 * @out_row_tokens: the longest a row may grow, in tokens
 * @out_create_flags: KVPOOL_CREATE_* the pool was made with
 * @out_max_batch: the most entries one batched op accepts
 * @out_client_id: this client's id, as fdinfo shows it
 * @__reserved: must be 0
 */
struct kvpool_info {
	__u32 size;
	__u32 flags;
	__u32 out_abi_version;
	__u32 out_pool_id;
	__aligned_u64 out_features;
	__u32 out_nr_pages;
	__u32 out_page_tokens;
	__u32 out_nr_rows;
	__u32 out_row_tokens;
	__u32 out_create_flags;
	__u32 out_max_batch;
	__u32 out_client_id;
	__u32 __reserved;
};

#define KVPOOL_INFO _IO(KVPOOL_TYPE, KVPOOL_CMD_INFO)

/**
 * struct kvpool_stats - KVPOOL_STATS: the pool's and the caller's counts
 * @size: sizeof(struct kvpool_stats)
 * @flags: must be 0
 * @out_free_pages: pages on the free list
 * @out_row_pages: pages owned by rows that requests hold
 * @out_slot_pages: pages owned by rows parked in session slots
 * @out_cache_evictable: pages in prefix caches, not pinned (0 until
 *                       KVPOOL_FEAT_PREFIX_CACHE)
 * @out_cache_pinned: pages in prefix caches borrowed by a row
 * @out_reserved_pages: pages kept out of circulation (page 0)
 * @out_free_rows: rows free to allocate
 * @out_held_rows: rows held by requests
 * @out_slot_rows: rows parked in session slots
 * @out_reserved_rows: rows kept out of circulation (row 0)
 * @out_nr_clients: open clients of the pool
 * @out_client_rows: rows the caller holds
 * @out_client_slots: slots the caller holds
 * @out_client_pages: pages the caller's rows and slots own
 * @out_client_cache_pages: pages in the caller's prefix cache
 *
 * For every pool: free + row + slot + cache_evictable + cache_pinned +
 * reserved pages == nr_pages, and free + held + slot + reserved rows ==
 * nr_rows. The figures are one consistent snapshot.
 */
struct kvpool_stats {
	__u32 size;
	__u32 flags;
	__u32 out_free_pages;
	__u32 out_row_pages;
	__u32 out_slot_pages;
	__u32 out_cache_evictable;
	__u32 out_cache_pinned;
	__u32 out_reserved_pages;
	__u32 out_free_rows;
	__u32 out_held_rows;
	__u32 out_slot_rows;
	__u32 out_reserved_rows;
	__u32 out_nr_clients;
	__u32 out_client_rows;
	__u32 out_client_slots;
	__u32 out_client_pages;
	__u32 out_client_cache_pages;
	__u32 __reserved;
};

#define KVPOOL_STATS _IO(KVPOOL_TYPE, KVPOOL_CMD_STATS)

/**
 * struct kvpool_row_alloc - KVPOOL_ROW_ALLOC: take rows for new requests
 * @size: sizeof(struct kvpool_row_alloc)
 * @flags: must be 0
 * @count: rows to take, 1..out_max_batch
 * @out_short: on ENOSPC, how many rows were missing
 * @handles: user pointer to @count struct kvpool_handle, written by the
 *           kernel; every new row has all lengths 0 and no pages
 *
 * All-or-nothing.
 */
struct kvpool_row_alloc {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 out_short;
	__aligned_u64 handles;
};

#define KVPOOL_ROW_ALLOC _IO(KVPOOL_TYPE, KVPOOL_CMD_ROW_ALLOC)

/**
 * struct kvpool_extend_entry - one row of an extend batch
 * @handle: the row
 * @new_len: the row's new allocated length in tokens, >= the current one
 *           and <= row_tokens
 * @out_nr_new: pages added to this row (written by the kernel)
 */
struct kvpool_extend_entry {
	struct kvpool_handle handle;
	__u32 new_len;
	__u32 out_nr_new;
};

/**
 * struct kvpool_extend - KVPOOL_EXTEND: grow a decode batch's rows
 * @size: sizeof(struct kvpool_extend)
 * @flags: must be 0
 * @count: entries, 1..out_max_batch
 * @pages_cap: room in @pages, in page ids
 * @entries: user pointer to @count struct kvpool_extend_entry
 * @pages: user pointer to @pages_cap __u32, filled with the new page ids:
 *         entry 0's first, in row position order, then entry 1's, ...
 * @out_nr_pages: new page ids written (on ENOBUFS: needed)
 * @out_short: on ENOSPC, how many pages were missing
 * @out_error_index: first bad entry, or ~0U
 * @__reserved: must be 0
 *
 * A row's last partial page is filled before whole pages are taken, so a
 * row gets ceil(new_len / page_tokens) - ceil(old_len / page_tokens) pages.
 * All-or-nothing: on ENOSPC nothing is taken.
 */
struct kvpool_extend {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 pages_cap;
	__aligned_u64 entries;
	__aligned_u64 pages;
	__u32 out_nr_pages;
	__u32 out_short;
	__u32 out_error_index;
	__u32 __reserved;
};

#define KVPOOL_EXTEND _IO(KVPOOL_TYPE, KVPOOL_CMD_EXTEND)

/**
 * struct kvpool_len_entry - one row of a commit batch
 * @handle: the row
 * @len: the new committed length: >= the current one, <= allocated
 */
struct kvpool_len_entry {
	struct kvpool_handle handle;
	__u32 len;
	__u32 __reserved;
};

/* RELEASE flags */
#define KVPOOL_RELEASE_DONATE	_BITUL(0)	/* DONATE up to committed first */

/**
 * struct kvpool_batch - the batched ops on rows and cache pages
 * @size: sizeof(struct kvpool_batch)
 * @flags: must be 0; RELEASE: KVPOOL_RELEASE_*
 * @count: entries, 1..out_max_batch
 * @out_error_index: first bad entry, or ~0U
 * @entries: COMMIT, DONATE, SWA_FREE: struct kvpool_len_entry[count];
 *           TRIM, RELEASE: struct kvpool_handle[count];
 *           CACHE_EVICT: __u32 page ids[count]
 * @out_nr_pages: pages returned to the free list by the whole batch
 *                (DONATE: pages moved into the prefix cache)
 * @__reserved: must be 0
 *
 * COMMIT moves committed forward. TRIM frees the speculative tail: pages
 * from ceil(committed / page_tokens) on, and sets allocated = committed.
 * RELEASE (SGLang's mark_released) frees every page the row owns, unpins
 * the cache pages it borrows, and frees the row itself; the handle is dead
 * afterwards and a second release fails with ENOENT. With
 * KVPOOL_RELEASE_DONATE the row's full committed pages go to the client's
 * prefix cache first (as DONATE to committed would). A retraction is a
 * RELEASE without it: the request holds nothing and may take a row again.
 *
 * DONATE (len = upto <= committed, > protected, else EALREADY) moves the
 * row's full pages in [protected, upto) to the client's prefix cache;
 * protected rises to upto rounded down to a page. The row keeps mapping
 * them, now borrowed: each stays pinned until the row lets go.
 *
 * SWA_FREE (len = window edge: protected <= edge <= committed and edge >=
 * swa_evicted, else EINVAL) frees the row's pages wholly below the edge,
 * never below protected; swa_evicted becomes the edge rounded down to a
 * page, and ROW_QUERY lists KVPOOL_PAGE_NONE where pages were freed.
 *
 * CACHE_EVICT frees pages of the client's prefix cache: ENOENT if one is
 * not the caller's cache page, EBUSY if one is pinned, EINVAL if one is
 * named twice; then nothing is freed.
 *
 * All-or-nothing.
 */
struct kvpool_batch {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 out_error_index;
	__aligned_u64 entries;
	__u32 out_nr_pages;
	__u32 __reserved;
};

#define KVPOOL_COMMIT	_IO(KVPOOL_TYPE, KVPOOL_CMD_COMMIT)
#define KVPOOL_TRIM	_IO(KVPOOL_TYPE, KVPOOL_CMD_TRIM)
#define KVPOOL_RELEASE	_IO(KVPOOL_TYPE, KVPOOL_CMD_RELEASE)
#define KVPOOL_DONATE	_IO(KVPOOL_TYPE, KVPOOL_CMD_DONATE)
#define KVPOOL_CACHE_EVICT _IO(KVPOOL_TYPE, KVPOOL_CMD_CACHE_EVICT)
#define KVPOOL_SWA_FREE	_IO(KVPOOL_TYPE, KVPOOL_CMD_SWA_FREE)

/**
 * struct kvpool_attach - KVPOOL_ATTACH_PREFIX: borrow cached pages
 * @size: sizeof(struct kvpool_attach)
 * @flags: must be 0
 * @handle: a row with no tokens yet (else EINVAL)
 * @nr_pages: pages in @pages, >= 1, nr_pages * page_tokens <= row_tokens
 * @__reserved: must be 0
 * @pages: user pointer to @nr_pages __u32: pages of the caller's prefix
 *         cache (ENOENT otherwise), each once (EINVAL otherwise)
 *
 * The row's positions [0, k), k = nr_pages * page_tokens, map @pages in
 * order; allocated, committed and protected become k. The pages stay the
 * cache's and each is pinned (CACHE_EVICT refuses it) while any row
 * borrows it; RELEASE, SLOT_RELEASE and the client's close unpin them,
 * TO_SLOT and FROM_SLOT carry the pins along.
 */
struct kvpool_attach {
	__u32 size;
	__u32 flags;
	struct kvpool_handle handle;
	__u32 nr_pages;
	__u32 __reserved;
	__aligned_u64 pages;
};

#define KVPOOL_ATTACH_PREFIX _IO(KVPOOL_TYPE, KVPOOL_CMD_ATTACH_PREFIX)

/**
 * struct kvpool_slot - KVPOOL_TO_SLOT, KVPOOL_FROM_SLOT, KVPOOL_SLOT_RELEASE
 * @size: sizeof(struct kvpool_slot)
 * @flags: must be 0
 * @session_id: the streaming session, any 64-bit value the client picks
 * @handle: TO_SLOT: the row to park (dead afterwards);
 *          FROM_SLOT: written with the row's new handle; same
 *          req_pool_idx, next generation; SLOT_RELEASE: unused, must be 0
 * @out_nr_pages: pages the slot holds (SLOT_RELEASE: pages freed)
 * @__reserved: must be 0
 *
 * TO_SLOT moves a held row, its pages and lengths to the client's slot
 * named @session_id (EEXIST if taken); the row stops being a request's.
 * FROM_SLOT gives the row back to a new request with its lengths and pages
 * as they were. SLOT_RELEASE frees the slot's row and pages. Pages never
 * move in either direction.
 */
struct kvpool_slot {
	__u32 size;
	__u32 flags;
	__aligned_u64 session_id;
	struct kvpool_handle handle;
	__u32 out_nr_pages;
	__u32 __reserved;
};

#define KVPOOL_TO_SLOT		_IO(KVPOOL_TYPE, KVPOOL_CMD_TO_SLOT)
#define KVPOOL_FROM_SLOT	_IO(KVPOOL_TYPE, KVPOOL_CMD_FROM_SLOT)
#define KVPOOL_SLOT_RELEASE	_IO(KVPOOL_TYPE, KVPOOL_CMD_SLOT_RELEASE)

/* Row states, as KVPOOL_ROW_QUERY reports them. */
enum kvpool_row_state {
	KVPOOL_ROW_HELD = 1,	/* a request holds it */
	KVPOOL_ROW_SLOT = 2,	/* parked in a session slot */
};

/* ROW_QUERY flags */
#define KVPOOL_QUERY_BY_SLOT	_BITUL(0)	/* name the row by @session_id */

/**
 * struct kvpool_row_query - KVPOOL_ROW_QUERY: a row's record and pages
 * @size: sizeof(struct kvpool_row_query)
 * @flags: 0 or KVPOOL_QUERY_BY_SLOT
 * @handle: the row (must be 0 with KVPOOL_QUERY_BY_SLOT)
 * @session_id: the slot (must be 0 without KVPOOL_QUERY_BY_SLOT)
 * @pages_cap: room in @pages, in page ids; may be 0
 * @out_state: enum kvpool_row_state
 * @pages: user pointer to @pages_cap __u32: the row's page ids in
 *         position order, min(pages_cap, out_nr_pages) of them
 * @out_nr_pages: ceil(allocated / page_tokens), the full list's length
 * @out_req_pool_idx: the row (useful with KVPOOL_QUERY_BY_SLOT)
 * @out_allocated_len: kv_allocated_len
 * @out_committed_len: kv_committed_len
 * @out_protected_len: cache_protected_len
 * @out_swa_evicted_len: swa_evicted_seqlen
 */
struct kvpool_row_query {
	__u32 size;
	__u32 flags;
	struct kvpool_handle handle;
	__aligned_u64 session_id;
	__u32 pages_cap;
	__u32 out_state;
	__aligned_u64 pages;
	__u32 out_nr_pages;
	__u32 out_req_pool_idx;
	__u32 out_allocated_len;
	__u32 out_committed_len;
	__u32 out_protected_len;
	__u32 out_swa_evicted_len;
};

#define KVPOOL_ROW_QUERY _IO(KVPOOL_TYPE, KVPOOL_CMD_ROW_QUERY)

/**
 * struct kvpool_verify - KVPOOL_VERIFY: check every invariant of the pool
 * @size: sizeof(struct kvpool_verify)
 * @flags: must be 0
 * @out_violations: invariants found broken (0: the pool is sound); each
 *                  is also logged as "kvpool: pool N: invariant: ..."
 * @out_pages_checked: pages walked
 * @out_rows_checked: rows walked
 * @__reserved: must be 0
 *
 * Walks the whole pool under its lock: O(nr_pages + nr_rows).
 */
struct kvpool_verify {
	__u32 size;
	__u32 flags;
	__u32 out_violations;
	__u32 out_pages_checked;
	__u32 out_rows_checked;
	__u32 __reserved;
};

#define KVPOOL_VERIFY _IO(KVPOOL_TYPE, KVPOOL_CMD_VERIFY)

/*
 * Control device: /dev/kvpool-control creates and destroys pools. Both ops
 * need CAP_SYS_ADMIN.
 */

/**
 * struct kvpool_ctl_create - KVPOOL_CTL_CREATE: make /dev/kvpoolN
 * @size: sizeof(struct kvpool_ctl_create)
 * @flags: KVPOOL_CREATE_*
 * @nr_pages: pages, 1..2^27 (more than the reserved one)
 * @page_tokens: tokens per page, 1..65536
 * @nr_rows: rows, 1..2^20 (more than the reserved one)
 * @row_tokens: longest row in tokens, 1..2^24
 * @out_pool_id: N of the new /dev/kvpoolN
 * @__reserved: must be 0
 */
struct kvpool_ctl_create {
	__u32 size;
	__u32 flags;
	__u32 nr_pages;
	__u32 page_tokens;
	__u32 nr_rows;
	__u32 row_tokens;
	__u32 out_pool_id;
	__u32 __reserved;
};

#define KVPOOL_CTL_CREATE _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_CREATE)

/**
 * struct kvpool_ctl_destroy - KVPOOL_CTL_DESTROY: remove /dev/kvpoolN
 * @size: sizeof(struct kvpool_ctl_destroy)
 * @flags: must be 0
 * @pool_id: N
 * @__reserved: must be 0
 *
 * EBUSY while the pool has clients: nothing is taken from anyone.
 */
struct kvpool_ctl_destroy {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__u32 __reserved;
};

#define KVPOOL_CTL_DESTROY _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_DESTROY)

#endif /* _UAPI_LINUX_KVPOOL_H */
