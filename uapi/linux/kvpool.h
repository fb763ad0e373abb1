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
 * In this release, the first, every op's first size is the sizeof() of its
 * struct in this header. All reserved fields and padding must be zero.
 *
 * Arrays are passed as an __aligned_u64 user pointer, a count and the
 * length in bytes of one element (``entry_len``, ``page_entry_len``), as
 * iommufd does, so an element can grow a field in a later release. Set it
 * to sizeof() of the element you were built against (sizeof(__u32) for
 * page ids). The kernel accepts any length from the element's first
 * release (this header's sizeof()) up to PAGE_SIZE: in an element it
 * reads, bytes past those it knows must be zero (E2BIG otherwise, and
 * ``out_error_index`` names the element); in an element it writes, it
 * writes the fields it knows and zeroes the rest; in an element it reads
 * and writes, it writes only the out_* fields it knows.
 *
 * Every batched op is all-or-nothing: the whole batch is validated before
 * any state changes, and if one entry is bad, nothing changes and
 * ``out_error_index`` names the bad entry found first (it is ~0U when the
 * error was not about one entry): the handles of the whole batch are
 * checked, in order, before the other fields of any entry.
 *
 * Once the struct has been read, it is written back (so its out_* fields
 * reach the caller) on success and on every error except EFAULT; errors
 * found in size or the unknown tail leave it untouched. That write-back
 * comes after the op: a struct the caller may read but not write (say,
 * in read-only memory) gets -EFAULT from an op that has taken effect.
 * ROW_ALLOC's rows are then the caller's, their handles in its array
 * (RELEASE or close gives them back), and a CTL_ARENA_SET tried again
 * gets EEXIST: the pool has the arena. Arrays of results
 * are copied out after the pool lock is dropped: if that copy faults, the
 * op has taken effect and -EFAULT is returned, except ROW_ALLOC, which
 * gives the rows back first. The ops whose result is a new name the caller
 * could not find otherwise (EXPORT's fd, IMPORT's and FROM_SLOT's handle,
 * CTL_CREATE's pool id) write their struct back before they take effect:
 * if it cannot be written they fail with EFAULT and change nothing, and
 * once they have taken effect they succeed. Ioctls sleep on the pool lock
 * without being interruptible: they never fail with EINTR.
 *
 * Errnos, for every ioctl unless the op says otherwise:
 *
 * - ENOTTY:     unknown ioctl number.
 * - EFAULT:     a pointer (the struct or an array) is not accessible.
 * - EINVAL:     size or an element length shorter than the first
 *               release's, a reserved field or padding not zero, count of 0
 *               or above the pool's limit, a length out of range (above
 *               row_tokens, an extend that shrinks, a commit past allocated
 *               or backwards), or the same row twice in one batch.
 * - E2BIG:      size or an element length larger than this kernel knows
 *               with a non-zero byte in the unknown tail, or above
 *               PAGE_SIZE.
 * - EOPNOTSUPP: a flag or op value this kernel does not know.
 * - ENOENT:     the handle or session id does not name a row or slot this
 *               client holds (never held, released, another client's, or
 *               req_pool_idx out of range; these are not told apart so a
 *               client learns nothing of others); or a page id is not a
 *               page of this client's prefix cache.
 *               AGENT_REPLY: the id names no request this agent holds
 *               (its client gave up, or it was answered).
 * - ESTALE:     this client holds the row, but under a newer generation:
 *               the handle is from an earlier use of the row. A generation
 *               never issued yet names nothing: ENOENT.
 * - ENOSPC:     not enough free pages or rows; ``out_short`` says how many
 *               were missing. Pages other tenants are guaranteed (and
 *               do not hold yet) are not free to this one. Nothing was
 *               taken. (control) all 64 pools exist; TENANT_SET: the
 *               pool's tenant paths would pass 1 MiB together.
 * - EDQUOT:     the caller's tenant would go past its max_pages or
 *               max_rows; ``out_short`` says by how many. Nothing taken.
 * - ENOBUFS:    an output array is too small; ``out_nr_pages`` says how
 *               many entries are needed (saturating at 2^32 - 1). Checked
 *               before ENOSPC. Nothing changed.
 * - EEXIST:     the session id already names a slot of this client.
 *               (control) ARENA_SET: the pool has an arena already.
 * - EALREADY:   DONATE: the row's cache already holds that prefix.
 *               IMPORT: the export file was imported already.
 * - EBUSY:      a handle names a row that another call of this client
 *               (another thread) is working on in steps: an EXTEND,
 *               RELEASE, TRIM, SWA_FREE or DONATE of more than 16384
 *               pages lets other clients have the pool lock between
 *               steps, and its rows are busy until it returns. Nothing
 *               changed; call again.
 *               CACHE_EVICT: a page is pinned (a row borrows it).
 *               EXPORT: the row borrows a cache page another row also
 *               borrows. (control) DESTROY: the pool still has clients or
 *               export files. ARENA_SET: a chunk's file (or its memfd)
 *               is a chunk of a pool already, or of a destroyed pool
 *               whose quarantined pages may still be written (ABI 3).
 *               AGENT: the pool has an agent. AGENT_REPLY: the file is
 *               a chunk of a pool (the request's master included).
 *               BUDGET: destroying a budget that pools are on (ABI 4).
 * - ENOMEM:     the kernel could not allocate memory. Nothing changed.
 * - EPERM:      a control op, or VERIFY, without CAP_SYS_ADMIN.
 * - EAGAIN:     FROM_SLOT: another thread of the caller changed the slot
 *               between the answer being written back and the op taking
 *               effect. Nothing changed; call again. ARENA with
 *               KVPOOL_ARENA_NOWAIT: no agent is attached. AGENT_RECV: no
 *               request waits (poll the agent file for POLLIN).
 * - EINTR:      ARENA of an agent arena: a signal came while it waited
 *               for the agent (the one wait an ioctl here makes). No
 *               descriptor was made.
 * - EIO:        ARENA of an agent arena: the agent could not export a
 *               chunk. No descriptor was made.
 * - ENAMETOOLONG: (control) TENANT_SET: the cgroup path is longer than
 *               KVPOOL_CGROUP_PATH_MAX - 1 bytes.
 * - EMFILE:     (open) the pool has 65536 clients already, or 4096
 *               tenants; (control) TENANT_SET of a 4097th tenant. EXPORT,
 *               ARENA: the caller has no free file descriptor.
 * - ENFILE:     EXPORT: the system's file table is full.
 * - EBADF:      IMPORT: @fd is not an open file. (control) ARENA_SET: a
 *               chunk's fd is not an open file.
 * - EXDEV:      IMPORT: the export file belongs to another pool.
 * - ENODEV:     (control) no pool with that id, or it is being
 *               destroyed; (open) the pool is going
 *               or the module is still loading. AGENT_RECV, AGENT_REPLY:
 *               the agent's pool was destroyed.
 * - ENXIO:      (control) CREATE: no PCI device at the GPU address.
 * - ENODATA:    ARENA with KVPOOL_ARENA_FDS: the pool has no arena.
 *               (control) BUDGET: no budget with that id (ABI 4).
 *
 * mmap() of a pool file (ABI 4, pools on a budget only): ENODEV for a
 * pool not on a budget, EINVAL for a private mapping or a range past
 * kvpool_arena.out_bytes. A page of the mapping whose chunk the pool does
 * not hold is SIGBUS when touched.
 */

/*
 * The ioctl type: 0xB9, numbers 0x00-0x3f. Checked free against the
 * table in Documentation/userspace-api/ioctl/ioctl-number.rst of Linux
 * 7.3 (0xB8 is mshv.h and mrvl_cn10k_dpi.h, 0xBA liveupdate.h; 0xB9 is
 * listed for no one) and against every _IO*() in that release's uapi
 * headers (none uses type 0xB9). docs/userspace-api/ioctl/ioctl-number.patch
 * registers it.
 */
#define KVPOOL_TYPE		0xb9

/*
 * Version of this ABI: 1 is the first release; 2 adds the arena (ARENA,
 * CTL_ARENA_SET, host and CUDA kinds, the quarantine of a dead client's
 * pages and kvpool_stats.out_quarantine_pages) and tenants named by cgroup
 * path (KVPOOL_FEAT_TENANT_PATH); 3 the GPU device a CUDA arena holds
 * and the pool's GPU agent (KVPOOL_FEAT_GPU_AGENT); 4 chunk budgets that
 * pools grow and shrink on (KVPOOL_FEAT_BUDGET). It is bumped when a
 * later release adds ops or fields; test out_features, not this number.
 */
#define KVPOOL_ABI_VERSION	4

/* Returned in kvpool_info.out_features. */
#define KVPOOL_FEAT_ROWS	_BITULL(0)	/* ROW_ALLOC, RELEASE, ROW_QUERY */
#define KVPOOL_FEAT_EXTEND	_BITULL(1)	/* EXTEND, COMMIT, TRIM */
#define KVPOOL_FEAT_SLOTS	_BITULL(2)	/* TO_SLOT, FROM_SLOT, SLOT_RELEASE */
#define KVPOOL_FEAT_VERIFY	_BITULL(3)	/* VERIFY */
/* DONATE, ATTACH_PREFIX, CACHE_EVICT, KVPOOL_RELEASE_DONATE */
#define KVPOOL_FEAT_PREFIX_CACHE _BITULL(4)
#define KVPOOL_FEAT_SWA		_BITULL(5)	/* SWA_FREE */
#define KVPOOL_FEAT_EXPORT	_BITULL(6)	/* EXPORT, IMPORT */
#define KVPOOL_FEAT_QUOTA	_BITULL(7)	/* tenants, CTL_TENANT_* */
#define KVPOOL_FEAT_PRESSURE	_BITULL(8)	/* PRESSURE, poll, CTL_SET_WMARK */
#define KVPOOL_FEAT_ARENA	_BITULL(9)	/* ARENA, CTL_ARENA_SET (ABI 2) */
/* CTL_TENANT_SET by cgroup path, TENANT_REMOVE, paths in the list (ABI 2) */
#define KVPOOL_FEAT_TENANT_PATH	_BITULL(10)
/*
 * ARENA_SET's KVPOOL_ARENA_SET_DEVICE and KVPOOL_ARENA_SET_AGENT, ARENA's
 * KVPOOL_ARENA_NOWAIT and out_set_flags, CTL_AGENT and the agent file's
 * AGENT_RECV and AGENT_REPLY (ABI 3)
 */
#define KVPOOL_FEAT_GPU_AGENT	_BITULL(11)
/* CTL_BUDGET, KVPOOL_CREATE_BUDGET, mmap() of a pool file (ABI 4) */
#define KVPOOL_FEAT_BUDGET	_BITULL(12)

/* Pool ops are 0x00-0x1f, control ops 0x20-0x2f, agent file ops 0x30-0x3f. */
enum {
	KVPOOL_CMD_INFO = 0x00,
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
	KVPOOL_CMD_EXPORT,
	KVPOOL_CMD_IMPORT,
	KVPOOL_CMD_PRESSURE,
	KVPOOL_CMD_ARENA,
	/* 0x14..0x1f: kept for later pool ops */
	KVPOOL_CMD_CTL_CREATE = 0x20,
	KVPOOL_CMD_CTL_DESTROY,
	KVPOOL_CMD_CTL_TENANT_SET,
	KVPOOL_CMD_CTL_TENANT_LIST,
	KVPOOL_CMD_CTL_SET_WMARK,
	KVPOOL_CMD_CTL_ARENA_SET,
	KVPOOL_CMD_CTL_AGENT,
	KVPOOL_CMD_CTL_BUDGET,
	/* 0x28..0x2f: kept for later control ops */
	KVPOOL_CMD_AGENT_RECV = 0x30,
	KVPOOL_CMD_AGENT_REPLY,
	/* 0x32..0x3f: kept for later agent file ops */
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
/* The pool belongs to the GPU at gpu_domain/gpu_devid (ABI 2). */
#define KVPOOL_CREATE_GPU		_BITUL(1)
/* The pool's pages are backed by chunks of budget_id, on demand (ABI 4). */
#define KVPOOL_CREATE_BUDGET		_BITUL(2)

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
 * @out_cache_evictable: pages in prefix caches, not pinned
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
 * @__reserved: must be 0
 * @out_export_rows: rows in flight as export files (KVPOOL_EXPORT)
 * @out_export_pages: pages those rows own
 * @out_tenant_id: the caller's tenant, as KVPOOL_CTL_TENANT_LIST names it
 * @out_tenant_pages: pages the caller's tenant holds: its clients' rows,
 *                    slots and prefix caches
 * @out_tenant_rows: rows (held and parked) the caller's tenant holds
 * @out_tenant_max_pages: its hard limit in pages (0: none)
 * @out_tenant_min_pages: its guarantee in pages (0: none)
 * @out_tenant_max_rows: its limit in rows (0: none)
 * @out_quarantine_pages: pages taken back from closed clients that did not
 *                        release them, held out of circulation until no
 *                        process that used those clients is alive (pools
 *                        with an arena only; design.md, "A dead client's
 *                        pages"); 0 from a kernel of ABI 1
 * @__reserved2: 0
 *
 * For every pool: free + row + slot + cache_evictable + cache_pinned +
 * reserved + export + quarantine pages == nr_pages, and free + held +
 * slot + reserved + export rows == nr_rows. The figures are one
 * consistent snapshot. Of other tenants a client sees nothing but these
 * pool totals.
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
	__u32 out_export_rows;
	__u32 out_export_pages;
	__u32 out_tenant_id;
	__u32 out_tenant_pages;
	__u32 out_tenant_rows;
	__u32 out_tenant_max_pages;
	__u32 out_tenant_min_pages;
	__u32 out_tenant_max_rows;
	__u32 out_quarantine_pages;
	__u32 __reserved2;
};

#define KVPOOL_STATS _IO(KVPOOL_TYPE, KVPOOL_CMD_STATS)

/**
 * struct kvpool_row_alloc - KVPOOL_ROW_ALLOC: take rows for new requests
 * @size: sizeof(struct kvpool_row_alloc)
 * @flags: must be 0
 * @count: rows to take, 1..out_max_batch
 * @entry_len: sizeof(struct kvpool_handle)
 * @handles: user pointer to @count handles of @entry_len bytes, written
 *           by the kernel; every new row has all lengths 0 and no pages
 * @out_short: on ENOSPC, how many rows were missing
 * @__reserved: must be 0
 *
 * All-or-nothing.
 */
struct kvpool_row_alloc {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 entry_len;
	__aligned_u64 handles;
	__u32 out_short;
	__u32 __reserved;
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
 * @entry_len: sizeof(struct kvpool_extend_entry)
 * @entries: user pointer to @count entries of @entry_len bytes
 * @pages_cap: room in @pages, in page ids
 * @page_entry_len: sizeof(__u32)
 * @pages: user pointer to @pages_cap page ids of @page_entry_len bytes,
 *         filled with the new page ids: entry 0's first, in row position
 *         order, then entry 1's, ...
 * @out_nr_pages: new page ids written (on ENOBUFS: needed)
 * @out_short: on ENOSPC, how many pages were missing
 * @out_error_index: the bad entry found first, or ~0U
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
	__u32 entry_len;
	__aligned_u64 entries;
	__u32 pages_cap;
	__u32 page_entry_len;
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
 * @__reserved: must be 0
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
 * @entry_len: the size of one entry: COMMIT, DONATE, SWA_FREE:
 *             sizeof(struct kvpool_len_entry); TRIM, RELEASE:
 *             sizeof(struct kvpool_handle); CACHE_EVICT: sizeof(__u32)
 * @entries: user pointer to @count entries of @entry_len bytes: COMMIT,
 *           DONATE, SWA_FREE: struct kvpool_len_entry; TRIM, RELEASE:
 *           struct kvpool_handle; CACHE_EVICT: __u32 page ids
 * @out_error_index: the bad entry found first, or ~0U
 * @out_nr_pages: pages returned to the free list by the whole batch
 *                (DONATE: pages moved into the prefix cache)
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
 * them, now borrowed: each stays pinned until the row lets go. A prefix
 * is cached whole or not at all: once SWA_FREE has freed pages above
 * protected (swa_evicted > protected), the row's start has holes and
 * DONATE, and RELEASE with KVPOOL_RELEASE_DONATE, are EINVAL for it
 * (release it without the flag). Donate a prefix before the window
 * slides past it: SWA_FREE never frees below protected.
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
	__u32 entry_len;
	__aligned_u64 entries;
	__u32 out_error_index;
	__u32 out_nr_pages;
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
 * @page_entry_len: sizeof(__u32)
 * @pages: user pointer to @nr_pages page ids of @page_entry_len bytes:
 *         pages of the caller's prefix cache (ENOENT otherwise), each once
 *         (EINVAL otherwise)
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
	__u32 page_entry_len;
	__aligned_u64 pages;
};

#define KVPOOL_ATTACH_PREFIX _IO(KVPOOL_TYPE, KVPOOL_CMD_ATTACH_PREFIX)

/**
 * struct kvpool_slot - KVPOOL_TO_SLOT, KVPOOL_FROM_SLOT, KVPOOL_SLOT_RELEASE
 * @size: sizeof(struct kvpool_slot)
 * @flags: must be 0
 * @session_id: the streaming session, any 64-bit value the client picks
 * @handle: TO_SLOT: the row to park (dead afterwards);
 *          FROM_SLOT: written with the row's new handle (same
 *          req_pool_idx, next generation); what it held is ignored, so
 *          TO_SLOT's struct can be reused; SLOT_RELEASE: must be 0
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
 * @page_entry_len: sizeof(__u32)
 * @pages: user pointer to @pages_cap page ids of @page_entry_len bytes:
 *         the row's page ids in position order, min(pages_cap,
 *         out_nr_pages) of them
 * @out_state: enum kvpool_row_state
 * @out_nr_pages: ceil(allocated / page_tokens), the full list's length
 * @out_req_pool_idx: the row (useful with KVPOOL_QUERY_BY_SLOT)
 * @out_allocated_len: kv_allocated_len
 * @out_committed_len: kv_committed_len
 * @out_protected_len: cache_protected_len
 * @out_swa_evicted_len: swa_evicted_seqlen
 * @__reserved: must be 0
 */
struct kvpool_row_query {
	__u32 size;
	__u32 flags;
	struct kvpool_handle handle;
	__aligned_u64 session_id;
	__u32 pages_cap;
	__u32 page_entry_len;
	__aligned_u64 pages;
	__u32 out_state;
	__u32 out_nr_pages;
	__u32 out_req_pool_idx;
	__u32 out_allocated_len;
	__u32 out_committed_len;
	__u32 out_protected_len;
	__u32 out_swa_evicted_len;
	__u32 __reserved;
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
 * Walks the whole pool under its lock: O(nr_pages + nr_rows). It needs
 * CAP_SYS_ADMIN (EPERM otherwise): one client must not be able to hold
 * every other client of the pool behind a walk it can repeat at will.
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

/* EXPORT flags */
#define KVPOOL_EXPORT_SLOT	_BITUL(0)	/* export the slot @session_id */

/**
 * struct kvpool_export - KVPOOL_EXPORT: turn a row into a file descriptor
 * @size: sizeof(struct kvpool_export)
 * @flags: 0 or KVPOOL_EXPORT_SLOT
 * @handle: the row (must be 0 with KVPOOL_EXPORT_SLOT)
 * @session_id: the slot (must be 0 without KVPOOL_EXPORT_SLOT)
 * @out_fd: a new O_CLOEXEC file descriptor that holds the row (-1 on
 *          error)
 * @out_nr_pages: pages the row owns (written back a second time, where it
 *                can be, if another thread of the caller changed the row
 *                while the fd was being handed out)
 *
 * The row, its pages and lengths leave the client: the handle or slot is
 * dead, and until some client imports it the row belongs to the file, not
 * to any client or tenant. Pages the row borrowed from the caller's prefix
 * cache become the row's own (EBUSY if another row borrows one too), so
 * protected drops to 0. Pass the fd to another process (SCM_RIGHTS); if
 * its last reference goes unimported, the row and its pages go back to the
 * pool.
 */
struct kvpool_export {
	__u32 size;
	__u32 flags;
	struct kvpool_handle handle;
	__aligned_u64 session_id;
	__s32 out_fd;
	__u32 out_nr_pages;
};

#define KVPOOL_EXPORT _IO(KVPOOL_TYPE, KVPOOL_CMD_EXPORT)

/**
 * struct kvpool_import - KVPOOL_IMPORT: take an exported row
 * @size: sizeof(struct kvpool_import)
 * @flags: must be 0
 * @fd: a file from KVPOOL_EXPORT on this pool
 * @__reserved: must be 0
 * @out_handle: the row's handle in this client: same req_pool_idx, next
 *              generation
 * @out_nr_pages: pages the row owns
 * @__reserved2: must be 0
 *
 * The caller's tenant limits apply (EDQUOT); EALREADY if the file was
 * imported before, EXDEV if it is another pool's, EINVAL if it is not an
 * export file, EBADF if @fd is not open. The file stays open (close it).
 */
struct kvpool_import {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__u32 __reserved;
	struct kvpool_handle out_handle;
	__u32 out_nr_pages;
	__u32 __reserved2;
};

#define KVPOOL_IMPORT _IO(KVPOOL_TYPE, KVPOOL_CMD_IMPORT)

/* Why a client is asked to give pages back (kvpool_pressure.out_reasons) */
#define KVPOOL_PRESSURE_LOW	  _BITUL(0)	/* free (+ budget's) < low wmark */
#define KVPOOL_PRESSURE_OVER_MAX  _BITUL(1)	/* its tenant is over max_pages */
#define KVPOOL_PRESSURE_GUARANTEE _BITUL(2)	/* a tenant is blocked below min */

/**
 * struct kvpool_pressure - KVPOOL_PRESSURE: how much to give back
 * @size: sizeof(struct kvpool_pressure)
 * @flags: must be 0
 * @out_ask_pages: prefix-cache pages this client is asked to evict now
 *                 (never more than its evictable cache pages)
 * @out_reasons: KVPOOL_PRESSURE_*; 0 when nothing is asked
 * @out_free_pages: free pages in the pool
 * @out_low_wmark: pressure starts below this many free pages
 * @out_high_wmark: and asks for enough to get back to this many
 * @__reserved: must be 0
 *
 * poll() on the pool fd reports EPOLLPRI while out_ask_pages > 0. Nothing
 * is ever taken from a client: evicting is up to it (KVPOOL_CACHE_EVICT).
 * The policy is in docs/design.md.
 */
struct kvpool_pressure {
	__u32 size;
	__u32 flags;
	__u32 out_ask_pages;
	__u32 out_reasons;
	__u32 out_free_pages;
	__u32 out_low_wmark;
	__u32 out_high_wmark;
	__u32 __reserved;
};

#define KVPOOL_PRESSURE _IO(KVPOOL_TYPE, KVPOOL_CMD_PRESSURE)

/* Arena kinds (kvpool_ctl_arena_set.kind, kvpool_arena.out_kind) */
#define KVPOOL_ARENA_NONE	0	/* the pool has no arena */
#define KVPOOL_ARENA_HOST	1	/* memfds: host memory */
#define KVPOOL_ARENA_CUDA	2	/* CUDA VMM allocations of the pool's GPU */

/* The most chunks one arena has. */
#define KVPOOL_ARENA_MAX_CHUNKS	256

/* ARENA flags */
#define KVPOOL_ARENA_FDS	_BITUL(0)	/* also hand out chunks' fds */
/* with KVPOOL_ARENA_FDS on an agent arena: EAGAIN, not wait, if no agent */
#define KVPOOL_ARENA_NOWAIT	_BITUL(1)

/**
 * struct kvpool_arena_fd - one chunk of the arena, as KVPOOL_ARENA gives it
 * @out_fd: a new O_CLOEXEC file descriptor of the chunk's file (of an
 *          agent arena: a file the agent exported for this call alone);
 *          map @out_bytes of it from file offset 0, then close it
 * @__reserved: 0
 * @out_offset: where the chunk starts in the arena, in bytes
 * @out_bytes: its length, a multiple of the arena's page_bytes
 */
struct kvpool_arena_fd {
	__s32 out_fd;
	__u32 __reserved;
	__aligned_u64 out_offset;
	__aligned_u64 out_bytes;
};

/**
 * struct kvpool_arena - KVPOOL_ARENA: the memory the page ids name
 * @size: sizeof(struct kvpool_arena)
 * @flags: 0, or KVPOOL_ARENA_FDS to be given chunks' fds in @fds
 * @out_kind: KVPOOL_ARENA_*; KVPOOL_ARENA_NONE if the pool has none
 * @out_nr_chunks: chunks in the arena
 * @out_page_bytes: bytes of one page: page id i is arena bytes
 *                  [i * out_page_bytes, (i + 1) * out_page_bytes)
 * @out_bytes: the arena's length, the chunks' sum (it covers nr_pages
 *             pages, and may end in a few more that no id names)
 * @first_chunk: with KVPOOL_ARENA_FDS, the first chunk wanted (else 0)
 * @count: with KVPOOL_ARENA_FDS, entries in @fds, 1..out_nr_chunks -
 *         @first_chunk (else 0)
 * @fd_entry_len: with KVPOOL_ARENA_FDS, sizeof(struct kvpool_arena_fd)
 *                (else 0)
 * @__reserved: must be 0
 * @fds: user pointer to @count entries of @fd_entry_len bytes, written
 * @out_set_flags: the KVPOOL_ARENA_SET_* flags the arena was set with
 *                 (ABI 3)
 * @out_agent_pid: the process of the pool's attached GPU agent, in the
 *                 caller's pid namespace; 0 if none is attached (or it
 *                 is not visible there) (ABI 3)
 *
 * Any client may ask. Without an arena, out_kind is KVPOOL_ARENA_NONE and
 * KVPOOL_ARENA_FDS is ENODATA. The struct and @fds are written back before
 * the descriptors exist: if that faults, EFAULT and no descriptor is left;
 * EMFILE if the caller has too few free descriptors for @count, and none
 * is made. Every client maps the whole arena: the kernel's refusals govern
 * which pages a client owns, not which bytes it can touch, so a pool is
 * one trust domain for memory.
 *
 * An arena set with KVPOOL_ARENA_SET_AGENT never hands out the files it
 * was given: for each chunk asked for, the pool's GPU agent is asked to
 * import the allocation and export it afresh, and the caller alone gets
 * that file (docs/gpu-agent.md). The call sleeps, interruptibly, until
 * the agent has answered for every chunk: an agent that dies with the
 * request taken leaves it for the next one. With KVPOOL_ARENA_NOWAIT it
 * fails with EAGAIN instead when no agent is attached. EINTR on a
 * signal, EIO if the agent failed a chunk; no descriptor is made then.
 *
 * A pool on a budget (ABI 4) says KVPOOL_ARENA_HOST and, in
 * @out_set_flags, KVPOOL_ARENA_SET_BUDGET; @out_nr_chunks is the chunks it
 * holds now and @out_bytes the length of its whole id space in chunks.
 * It hands out no files (KVPOOL_ARENA_FDS is EOPNOTSUPP): a client maps
 * the pool file, MAP_SHARED, at offsets 0..@out_bytes, and the kernel
 * maps each chunk the pool holds on first touch and unmaps it from every
 * client when the pool gives it back. The pool is one trust domain, as
 * above; what a client can never reach is a chunk while another pool
 * holds it, or the bytes it held before it was cleared.
 */
struct kvpool_arena {
	__u32 size;
	__u32 flags;
	__u32 out_kind;
	__u32 out_nr_chunks;
	__aligned_u64 out_page_bytes;
	__aligned_u64 out_bytes;
	__u32 first_chunk;
	__u32 count;
	__u32 fd_entry_len;
	__u32 __reserved;
	__aligned_u64 fds;
	__u32 out_set_flags;
	__u32 out_agent_pid;
};

#define KVPOOL_ARENA _IO(KVPOOL_TYPE, KVPOOL_CMD_ARENA)

/*
 * Control device: /dev/kvpool-control creates and destroys pools, sets
 * tenants' limits and gives pools their arenas. Every op needs
 * CAP_SYS_ADMIN.
 */

/**
 * struct kvpool_ctl_create - KVPOOL_CTL_CREATE: make /dev/kvpoolN
 * @size: sizeof(struct kvpool_ctl_create); 32 (up to @__reserved, ABI 1)
 *        is still accepted and means no GPU
 * @flags: KVPOOL_CREATE_*
 * @nr_pages: pages, 1..2^27 (more than the reserved one)
 * @page_tokens: tokens per page, 1..65536
 * @nr_rows: rows, 1..2^20 (more than the reserved one)
 * @row_tokens: longest row in tokens, 1..2^24
 * @out_pool_id: N of the new /dev/kvpoolN
 * @__reserved: must be 0
 * @gpu_domain: with KVPOOL_CREATE_GPU, the GPU's PCI domain (else 0)
 * @gpu_devid: with KVPOOL_CREATE_GPU, its bus << 8 | device << 3 |
 *             function, as lspci's bb:dd.f (else 0)
 * @budget_id: with KVPOOL_CREATE_BUDGET, the budget the pool's chunks come
 *             from (ENODATA if there is none; else 0) (ABI 4)
 * @__reserved2: must be 0
 * @page_bytes: with KVPOOL_CREATE_BUDGET, bytes of one page: it divides
 *              the budget's chunk_bytes (EINVAL otherwise; else 0)
 *
 * A pool on a budget holds no memory at first: @nr_pages is its id space,
 * page p living in chunk slot p / (chunk_bytes / page_bytes). It takes the
 * budget's free chunks as its allocations need them, lowest slot first,
 * and gives back its highest wholly free slots once more than its high
 * watermark's worth of pages is free; a chunk given back is zeroed, with
 * no pool's lock held, before any pool uses it again, and an EXTEND that
 * needs it waits for that (docs/gpu-budget.md). With
 * KVPOOL_CREATE_RESERVE_ZERO, slot 0 is backed at once and kept. Its
 * arena is the budget's: ARENA_SET is EEXIST, and clients map the pool
 * file itself (ARENA's KVPOOL_ARENA_SET_BUDGET).
 *
 * With KVPOOL_CREATE_GPU the pool's device is a child of that PCI device
 * (/sys/class/kvpool/kvpoolN/device links to it, and its gpu attribute
 * names it), so tools and udev see which card a pool's memory is on.
 * ENXIO if there is no PCI device at that address, EINVAL if it is not a
 * display controller (PCI class 0x03) or @gpu_devid is above 0xffff.
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
	__u32 gpu_domain;
	__u32 gpu_devid;
	__u32 budget_id;
	__u32 __reserved2;
	__aligned_u64 page_bytes;
};

#define KVPOOL_CTL_CREATE _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_CREATE)

/**
 * struct kvpool_ctl_destroy - KVPOOL_CTL_DESTROY: remove /dev/kvpoolN
 * @size: sizeof(struct kvpool_ctl_destroy)
 * @flags: must be 0
 * @pool_id: N
 * @__reserved: must be 0
 *
 * EBUSY while the pool has clients or an export file of it is open:
 * nothing is taken from anyone.
 */
struct kvpool_ctl_destroy {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__u32 __reserved;
};

#define KVPOOL_CTL_DESTROY _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_DESTROY)

#define KVPOOL_LABEL_LEN	32

/*
 * CTL_TENANT_SET flags; BY_PATH, ANY_UID and CONFIGURED also describe a
 * tenant in kvpool_tenant_info.flags.
 */
#define KVPOOL_TENANT_BY_ID	_BITUL(0)	/* select by @tenant_id */
#define KVPOOL_TENANT_BY_PATH	_BITUL(1)	/* select by @cgroup_path, @uid */
#define KVPOOL_TENANT_ANY_UID	_BITUL(2)	/* with BY_PATH: every uid */
#define KVPOOL_TENANT_REMOVE	_BITUL(3)	/* drop its configuration */
#define KVPOOL_TENANT_CONFIGURED _BITUL(4)	/* (list only) limits were set */

/* Longest cgroup path of a tenant, its NUL included. */
#define KVPOOL_CGROUP_PATH_MAX	4096

/**
 * struct kvpool_ctl_tenant - KVPOOL_CTL_TENANT_SET: a tenant's limits
 * @size: sizeof(struct kvpool_ctl_tenant); 80 (up to @__reserved2) is the
 *        first release's and cannot name a path
 * @flags: how the tenant is named: 0 (by @cgroup_id and @uid, creating the
 *         tenant if it is new), KVPOOL_TENANT_BY_ID, or
 *         KVPOOL_TENANT_BY_PATH (by @cgroup_path and @uid, creating it if
 *         new), that with KVPOOL_TENANT_ANY_UID (by @cgroup_path alone;
 *         @uid must be 0); plus KVPOOL_TENANT_REMOVE to drop the
 *         configuration of the tenant so named instead of setting it
 *         (ENOENT if it has none; EINVAL if a limit or @label comes
 *         with it: removing sets nothing). More than one way of naming
 *         it, or ANY_UID without BY_PATH: EINVAL; an unknown flag:
 *         EOPNOTSUPP
 * @pool_id: the pool
 * @tenant_id: with KVPOOL_TENANT_BY_ID, the tenant; written back
 * @cgroup_id: the tenant's cgroup v2 id (the inode number of its folder
 *             under /sys/fs/cgroup); with BY_PATH or BY_ID must be 0, and
 *             written back as 0 for a path tenant
 * @uid: the tenant's uid in the initial user namespace
 * @max_pages: hard limit on pages held (0: none)
 * @min_pages: pages guaranteed (0: none); the pool's guarantees together
 *             may not exceed its pages (EINVAL)
 * @max_rows: limit on rows held, parked included (0: none)
 * @__reserved: must be 0
 * @label: a name for status output, NUL-terminated (EINVAL otherwise);
 *         empty keeps the current one
 * @__reserved2: must be 0
 * @cgroup_path: with KVPOOL_TENANT_BY_PATH, a user pointer to the cgroup's
 *               path, NUL-terminated, as the initial cgroup namespace
 *               names it (/sys/fs/cgroup/a/b is "/a/b"; the root is "/"):
 *               absolute, no empty, "." or ".." component and no trailing
 *               "/" (EINVAL), shorter than KVPOOL_CGROUP_PATH_MAX
 *               (ENAMETOOLONG); it need not exist. Else must be 0
 *
 * A client's tenant is fixed at open: a tenant configured on the opener's
 * cgroup id and uid; else the path tenant of its nearest ancestor-or-self
 * cgroup (for its uid, then for any uid); else that of its own cgroup and
 * uid, unconfigured (docs/design.md, "Tenants"). A limit set below current
 * use takes nothing from anyone: it refuses growth and asks the tenant's
 * clients to shrink their caches. REMOVE takes nothing either: the tenant
 * keeps its clients until they close, without limits, and new opens no
 * longer join it.
 */
struct kvpool_ctl_tenant {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__u32 tenant_id;
	__aligned_u64 cgroup_id;
	__u32 uid;
	__u32 max_pages;
	__u32 min_pages;
	__u32 max_rows;
	__u32 __reserved;
	char label[KVPOOL_LABEL_LEN];
	__u32 __reserved2;
	__aligned_u64 cgroup_path;
};

#define KVPOOL_CTL_TENANT_SET _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_TENANT_SET)

/**
 * struct kvpool_tenant_info - one tenant, as KVPOOL_CTL_TENANT_LIST reports
 * @tenant_id: its id in the pool
 * @uid: its uid (0 with KVPOOL_TENANT_ANY_UID)
 * @cgroup_id: its cgroup v2 id (0 for a path tenant)
 * @pages: pages it holds (rows, slots, prefix caches)
 * @cache_pages: of which in prefix caches
 * @rows: rows it holds, parked included
 * @nr_clients: its open clients
 * @max_pages: see struct kvpool_ctl_tenant
 * @min_pages: see struct kvpool_ctl_tenant
 * @max_rows: see struct kvpool_ctl_tenant
 * @ask_pages: pages its clients are asked to give back now
 * @flags: KVPOOL_TENANT_BY_PATH (named by a path), KVPOOL_TENANT_ANY_UID,
 *         KVPOOL_TENANT_CONFIGURED (limits set and not removed); 0 from a
 *         kernel without KVPOOL_FEAT_TENANT_PATH
 * @label: its label
 * @path_offset: where its path starts in the list's @paths; 0 (where
 *               @paths holds an empty string) when it has no path or
 *               @paths had no room for it (then @flags has BY_PATH)
 */
struct kvpool_tenant_info {
	__u32 tenant_id;
	__u32 uid;
	__aligned_u64 cgroup_id;
	__u32 pages;
	__u32 cache_pages;
	__u32 rows;
	__u32 nr_clients;
	__u32 max_pages;
	__u32 min_pages;
	__u32 max_rows;
	__u32 ask_pages;
	__u32 flags;
	char label[KVPOOL_LABEL_LEN];
	__u32 path_offset;
};

/**
 * struct kvpool_ctl_tenant_list - KVPOOL_CTL_TENANT_LIST
 * @size: sizeof(struct kvpool_ctl_tenant_list)
 * @flags: must be 0
 * @pool_id: the pool
 * @count: room in @tenants, in entries; may be 0
 * @entry_len: sizeof(struct kvpool_tenant_info)
 * @out_nr_tenants: tenants the pool has; min(count, out_nr_tenants) are
 *                  written
 * @tenants: user pointer to @count entries of @entry_len bytes
 * @paths: user pointer to @paths_len bytes, or 0: an empty string, then
 *         the paths of the entries written, NUL-terminated, back to back,
 *         each while it fits
 * @paths_len: room in @paths, in bytes; at most 1 MiB + 1 is used
 * @out_paths_len: bytes @paths needs for all the pool's tenants (the
 *                 leading empty string included), so that a caller can
 *                 size a second call
 *
 * A size of 32 (up to @tenants) is the first release's: no paths.
 */
struct kvpool_ctl_tenant_list {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__u32 count;
	__u32 entry_len;
	__u32 out_nr_tenants;
	__aligned_u64 tenants;
	__aligned_u64 paths;
	__u32 paths_len;
	__u32 out_paths_len;
};

#define KVPOOL_CTL_TENANT_LIST _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_TENANT_LIST)

/**
 * struct kvpool_ctl_wmark - KVPOOL_CTL_SET_WMARK: the pressure watermarks
 * @size: sizeof(struct kvpool_ctl_wmark)
 * @flags: must be 0
 * @pool_id: the pool
 * @low_wmark: free pages below which clients are asked to shrink (0: never)
 * @high_wmark: free pages they are asked to restore; >= low_wmark and <=
 *              nr_pages (EINVAL otherwise)
 * @__reserved: must be 0
 *
 * A new pool starts at low = nr_pages / 32, high = nr_pages / 16.
 */
struct kvpool_ctl_wmark {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__u32 low_wmark;
	__u32 high_wmark;
	__u32 __reserved;
};

#define KVPOOL_CTL_SET_WMARK _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_SET_WMARK)

/**
 * struct kvpool_arena_chunk - one chunk handed to KVPOOL_CTL_ARENA_SET
 * @fd: an open file holding the chunk from offset 0: for
 *      KVPOOL_ARENA_HOST a memfd (not MFD_HUGETLB) open for reading and
 *      writing, sealed with F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL
 *      (so no client can add F_SEAL_WRITE) but not against writes, at
 *      least @bytes long; for KVPOOL_ARENA_CUDA the descriptor
 *      cuMemExportToShareableHandle() gave for one allocation
 *      (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), a file of the NVIDIA
 *      control device (/dev/nvidiactl, 195:255; ABI 2 took any character
 *      device), whose length the kernel cannot see: the allocation must
 *      be at least @bytes long. No file (nor, for HOST, memfd) may be
 *      a chunk twice
 * @__reserved: must be 0
 * @bytes: the chunk's length: a multiple of page_bytes and of the CPU's
 *         page size
 */
struct kvpool_arena_chunk {
	__s32 fd;
	__u32 __reserved;
	__aligned_u64 bytes;
};

/* CTL_ARENA_SET flags (ABI 3), for CUDA arenas */
#define KVPOOL_ARENA_SET_DEVICE	_BITUL(0)	/* hold device_fd's GPU up */
/* clients get chunks only as fresh exports of the pool's GPU agent */
#define KVPOOL_ARENA_SET_AGENT	_BITUL(1)
/* In ARENA's out_set_flags only: the pool is on a budget (ABI 4) */
#define KVPOOL_ARENA_SET_BUDGET	_BITUL(2)

/**
 * struct kvpool_ctl_arena_set - KVPOOL_CTL_ARENA_SET: give a pool memory
 * @size: sizeof(struct kvpool_ctl_arena_set)
 * @flags: KVPOOL_ARENA_SET_* (ABI 3; CUDA arenas only, EINVAL for HOST),
 *         else 0
 * @pool_id: the pool
 * @kind: KVPOOL_ARENA_HOST, or KVPOOL_ARENA_CUDA for a pool created with
 *        KVPOOL_CREATE_GPU (EINVAL without; the allocations must be on
 *        that GPU, which libkvpool checks as it maps them).
 *        KVPOOL_ARENA_NONE is EINVAL; a kind this kernel does not know,
 *        EOPNOTSUPP
 * @page_bytes: bytes of one page, every layer's K and V of page_tokens
 *              tokens: 1..2^32
 * @nr_chunks: entries in @chunks, 1..KVPOOL_ARENA_MAX_CHUNKS
 * @chunk_entry_len: sizeof(struct kvpool_arena_chunk)
 * @chunks: user pointer to @nr_chunks entries of @chunk_entry_len bytes
 * @out_error_index: the chunk an error is about, else ~0U
 * @__reserved: must be 0
 * @device_fd: with KVPOOL_ARENA_SET_DEVICE, an open file of the pool's
 *             GPU device node, /dev/nvidiaN (195:0..253) (ABI 3)
 * @__reserved2: must be 0
 *
 * The chunks are laid end to end in the order given and must cover the
 * pool's nr_pages pages; none may lie wholly past them. The pool keeps a
 * reference to each chunk's file until it is destroyed, so the caller may
 * close its fds and exit. Once only: EEXIST if the pool has an arena.
 * EINVAL for a size that is not a multiple of page_bytes and the CPU page
 * size, chunks that do not cover the pool, a chunk file of the wrong
 * kind (for HOST: not a sealed memfd, or shorter than @bytes; for CUDA:
 * not a file of /dev/nvidiactl) or the same file (memfd) twice; EBUSY
 * for one that is a chunk of a pool already, or of a destroyed pool
 * whose quarantine still waits for its writers; EBADF for a chunk fd
 * that is not open; all name the chunk in @out_error_index. A bad
 * @device_fd is EBADF or EINVAL with @out_error_index ~0U.
 *
 * The NVIDIA driver tears a GPU down, freeing every allocation on it
 * that was exported, when the last open file of its /dev/nvidiaN goes
 * and persistence mode is off: KVPOOL_ARENA_SET_DEVICE has the pool
 * hold @device_fd's file with the chunks' (the kernel cannot tell which
 * GPU a minor is: libkvpool finds it by the pool's PCI address).
 */
struct kvpool_ctl_arena_set {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__u32 kind;
	__aligned_u64 page_bytes;
	__u32 nr_chunks;
	__u32 chunk_entry_len;
	__aligned_u64 chunks;
	__u32 out_error_index;
	__u32 __reserved;
	__s32 device_fd;
	__u32 __reserved2;
};

#define KVPOOL_CTL_ARENA_SET _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_ARENA_SET)

/**
 * struct kvpool_ctl_agent - KVPOOL_CTL_AGENT: become a pool's GPU agent
 * @size: sizeof(struct kvpool_ctl_agent)
 * @flags: must be 0
 * @pool_id: the pool, one created with KVPOOL_CREATE_GPU (EINVAL
 *           without)
 * @out_fd: a new O_CLOEXEC file descriptor of the agent file
 *
 * One agent per pool: EBUSY while another's file is open. The agent file
 * polls readable (POLLIN) while a client's request waits, and POLLHUP
 * once the pool is destroyed; closing it detaches the agent, and the
 * requests it had taken but not answered go back to the head of the
 * queue for the next one. The pool does not hold the agent's file, and
 * the agent's file holds the pool's memory, not its id (ABI 3).
 */
struct kvpool_ctl_agent {
	__u32 size;
	__u32 flags;
	__u32 pool_id;
	__s32 out_fd;
};

#define KVPOOL_CTL_AGENT _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_AGENT)

/* CTL_BUDGET ops (kvpool_ctl_budget.op, ABI 4) */
#define KVPOOL_BUDGET_CREATE	1	/* make a budget of @nr_chunks chunks */
#define KVPOOL_BUDGET_DESTROY	2	/* remove budget @budget_id */
#define KVPOOL_BUDGET_LIMITS	3	/* set pool @pool_id's floor, ceiling */
#define KVPOOL_BUDGET_INFO	4	/* read @budget_id's counters */

/* The most chunks one budget has (2^20: 2 TiB in 2 MiB chunks). */
#define KVPOOL_BUDGET_MAX_CHUNKS	0x100000U

/**
 * struct kvpool_ctl_budget - KVPOOL_CTL_BUDGET: memory pools grow and
 *                            shrink on (ABI 4)
 * @size: sizeof(struct kvpool_ctl_budget)
 * @flags: must be 0
 * @op: KVPOOL_BUDGET_*; 0 is EINVAL, one this kernel does not know
 *      EOPNOTSUPP
 * @budget_id: CREATE: written back; the others: the budget (ENODATA if
 *             none; LIMITS: the pool's own, EINVAL for another)
 * @kind: CREATE: KVPOOL_ARENA_HOST (host memory the kernel allocates;
 *        KVPOOL_ARENA_CUDA, and a kind this kernel does not know, are
 *        EOPNOTSUPP in this release; 0 is EINVAL); INFO: written
 *        back; else 0
 * @nr_chunks: CREATE: chunks, 1..KVPOOL_BUDGET_MAX_CHUNKS; INFO: written
 *             back; else 0
 * @chunk_bytes: CREATE: bytes of a chunk, a multiple of PAGE_SIZE up to
 *               1 GiB; INFO: written back; else 0
 * @pool_id: LIMITS: the pool, one created on @budget_id; else 0
 * @__reserved: must be 0
 * @min_bytes: LIMITS: bytes of chunks the pool keeps and that no other
 *             pool may take from the budget (rounded up to chunks; the
 *             floors together may not pass the budget: ENOSPC); else 0
 * @max_bytes: LIMITS: the most bytes of chunks the pool may hold (rounded
 *             down to chunks; 0: no limit; below @min_bytes: EINVAL);
 *             else 0
 * @out_free_chunks: INFO: chunks no pool holds
 * @out_nr_pools: INFO: pools on the budget
 * @out_moves: INFO: chunks a pool took that another pool held last
 * @out_cleared_bytes: INFO: bytes of chunks pools gave back, cleared since
 * @out_clear_ns: INFO: time spent clearing them, in nanoseconds
 *
 * CREATE allocates every chunk at once (ENOMEM if the memory is not
 * there, or the budget would be above half of the machine's RAM) and
 * charges it to the caller's memory cgroup. DESTROY is EBUSY while a pool
 * is on the budget; a destroyed pool's chunks return to it once no
 * client of the pool has it open. A limit below what the pool holds
 * takes nothing at once: the pool gives chunks back as their pages come
 * free.
 */
struct kvpool_ctl_budget {
	__u32 size;
	__u32 flags;
	__u32 op;
	__u32 budget_id;
	__u32 kind;
	__u32 nr_chunks;
	__aligned_u64 chunk_bytes;
	__u32 pool_id;
	__u32 __reserved;
	__aligned_u64 min_bytes;
	__aligned_u64 max_bytes;
	__u32 out_free_chunks;
	__u32 out_nr_pools;
	__aligned_u64 out_moves;
	__aligned_u64 out_cleared_bytes;
	__aligned_u64 out_clear_ns;
};

#define KVPOOL_CTL_BUDGET _IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_BUDGET)

/*
 * Agent file: the ops of the file KVPOOL_CTL_AGENT gives. Whoever holds
 * it may call them; it is made only for CAP_SYS_ADMIN.
 */

/**
 * struct kvpool_agent_request - KVPOOL_AGENT_RECV: take the next request
 * @size: sizeof(struct kvpool_agent_request)
 * @flags: must be 0
 * @out_id: the request, for AGENT_REPLY; never reused
 * @out_pool_id: the pool
 * @out_chunk: the chunk asked for
 * @out_fd: a new O_CLOEXEC file descriptor of the chunk's file as the
 *          administrator gave it (the export of its allocation)
 * @out_client_pid: the asking process, in the agent's pid namespace
 *                  (0 if not visible there)
 * @out_bytes: the chunk's length
 *
 * Non-blocking: EAGAIN when no request waits. The struct is written back
 * before @out_fd exists: on EFAULT the request stays queued.
 */
struct kvpool_agent_request {
	__u32 size;
	__u32 flags;
	__aligned_u64 out_id;
	__u32 out_pool_id;
	__u32 out_chunk;
	__s32 out_fd;
	__u32 out_client_pid;
	__aligned_u64 out_bytes;
};

#define KVPOOL_AGENT_RECV _IO(KVPOOL_TYPE, KVPOOL_CMD_AGENT_RECV)

/**
 * struct kvpool_agent_reply - KVPOOL_AGENT_REPLY: answer a request
 * @size: sizeof(struct kvpool_agent_reply)
 * @flags: must be 0
 * @id: a request this agent took with AGENT_RECV
 * @fd: with @error 0, a new export of the chunk's allocation: a file of
 *      the NVIDIA control device (EINVAL) that is no pool's chunk, the
 *      file AGENT_RECV gave included (EBUSY). The asking client gets it; the
 *      caller may close its descriptor. With @error, 0
 * @error: 0, or a positive errno up to 4095 saying why no export could
 *         be made (the client gets EIO)
 *
 * ENOENT if the request is not this agent's to answer any more: close
 * the export.
 */
struct kvpool_agent_reply {
	__u32 size;
	__u32 flags;
	__aligned_u64 id;
	__s32 fd;
	__s32 error;
};

#define KVPOOL_AGENT_REPLY _IO(KVPOOL_TYPE, KVPOOL_CMD_AGENT_REPLY)

#endif /* _UAPI_LINUX_KVPOOL_H */
