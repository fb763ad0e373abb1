/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpool core: the page pool and the row ownership state machine.
 *
 * Kernel-agnostic: it builds into kvpool.ko and, against the userspace
 * shim driver/user/kvp_os_user.c, into the unit test, the fuzzer,
 * kvpool-replay's core backend and kvpool-bench (driver/core.mk). It
 * takes no locks of its own; every function whose name ends in _locked
 * must be called with pool->lock held, and asserts it.
 *
 * Functions validate everything against the pool's state before changing
 * anything, so an error return means nothing changed: no page, row, cache
 * entry or count moved. Two traces of a failed op are not state: a
 * refusal for want of pages or rows records pressure (kvp_refused()), so
 * that pollers are asked to evict, and an array grown before the failure
 * keeps its room.
 */
#ifndef _KVP_CORE_H
#define _KVP_CORE_H

#include "kvp_os.h"
#include <linux/kvpool.h>

#define KVP_NIL			0xffffffffU	/* end of a u32-linked list */
#define KVP_OWNER_FREE		0xffffffffU
#define KVP_OWNER_RESERVED	0xfffffffeU
#define KVP_OWNER_QUARANTINE	0xfffffffdU	/* held back: see kvp_quarantine */
/* no memory behind it yet: a pool on a budget backs pages chunk by chunk */
#define KVP_OWNER_UNBACKED	0xfffffffcU
#define KVP_OWNER_CACHE		0x80000000U	/* | the client's index */

#define KVP_MAX_PAGES		0x8000000U	/* 2^27: page table <= 1 GiB */
#define KVP_MAX_PAGE_TOKENS	65536U
#define KVP_MAX_ROWS		0x100000U	/* 2^20 */
#define KVP_MAX_ROW_TOKENS	0x1000000U	/* 2^24 */
#define KVP_MAX_BATCH		8192U
#define KVP_SLOT_BUCKETS	64U
#define KVP_MAX_CLIENTS		65536U
#define KVP_MAX_TENANTS		4096U
#define KVP_REPORT_LIMIT	16U
#define KVP_TENANT_HASH_BITS	6	/* buckets of the tenant lookup */
#define KVP_PATH_BYTES_MAX	(1024U * 1024)	/* a pool's tenant paths */
#define KVP_MAP_LEVELS		5	/* the free map of 2^27 pages */
/*
 * Most pages one step of an op moves under one hold of the pool lock:
 * a bigger EXTEND, RELEASE, TRIM, SWA_FREE or DONATE is stepped (struct
 * kvp_op), as is a close (kvp_client_reclaim_step_locked()), so that no
 * client holds the lock that every other client of the pool needs for
 * longer than this many page moves (docs/gpu-budget.md). The fuzzer
 * builds the core with a step of a few pages, so that its small pools
 * go through the steps' every edge.
 */
#ifndef KVP_STEP_PAGES
#define KVP_STEP_PAGES		16384U
#endif

/*
 * The KVPOOL_FEAT_* whose ops the core implements, the one list of them:
 * the driver's INFO reports these and the two of its own (the arena and
 * tenants named by path: kvpd_info_ioctl()), kvpool-replay's core backend
 * these alone. A feature of a new core op is added here.
 */
#define KVP_CORE_FEATURES						\
	(KVPOOL_FEAT_ROWS | KVPOOL_FEAT_EXTEND | KVPOOL_FEAT_SLOTS |	\
	 KVPOOL_FEAT_VERIFY | KVPOOL_FEAT_PREFIX_CACHE | KVPOOL_FEAT_SWA | \
	 KVPOOL_FEAT_EXPORT | KVPOOL_FEAT_QUOTA | KVPOOL_FEAT_PRESSURE)

/**
 * struct kvp_page - one page of the pool
 * @next: in a prefix cache: its index in the owning client's
 *        &kvp_client.cache array; quarantined: the next page of its
 *        &struct kvp_quarantine; free or owned by a row: unused.
 *        (Free pages are found through &kvp_pool.free_map.)
 * @owner: %KVP_OWNER_FREE, %KVP_OWNER_RESERVED, %KVP_OWNER_QUARANTINE, the
 *         owning row's index, or %KVP_OWNER_CACHE | the owning client's
 *         &kvp_client.cidx.
 *
 * The per-page memory, 8 bytes and a bit of the free map, so that a pool
 * of 2^27 pages still has its page table below 1 GiB.
 */
struct kvp_page {
	u32 next;
	u32 owner;
};

/**
 * enum kvp_row_state - who holds a row
 * @KVP_ROW_FREE: on the free row stack
 * @KVP_ROW_HELD: held by a request of its client, named by a handle
 * @KVP_ROW_SLOT: parked in one of its client's session slots
 * @KVP_ROW_RESERVED: row 0 of a %KVPOOL_CREATE_RESERVE_ZERO pool, never
 *                    handed out
 * @KVP_ROW_EXPORTED: held by an export file, no client
 *
 * HELD and SLOT equal their uapi values, so that ROW_QUERY reports the
 * state as it is.
 */
enum kvp_row_state {
	KVP_ROW_FREE = 0,
	KVP_ROW_HELD = KVPOOL_ROW_HELD,
	KVP_ROW_SLOT = KVPOOL_ROW_SLOT,
	KVP_ROW_RESERVED,
	KVP_ROW_EXPORTED,
};

struct kvp_client;

/**
 * struct kvp_row - one request row (req_pool_idx)
 * @pages: page ids by position, @nr of them valid, room for @cap; NULL
 *         when @cap is 0. Entries below @swa_evicted may be
 *         %KVPOOL_PAGE_NONE.
 * @owner: the client holding the row (held or slot); NULL when free or
 *         exported
 * @session: the slot's session id while @state is %KVP_ROW_SLOT
 * @nr: valid entries of @pages: ceil(@allocated / page_tokens)
 * @cap: room in @pages; it only grows while the row lives, so a failed
 *       batch may leave it larger (capacity, not state)
 * @owned: how many of its @pages it owns (the rest it borrows from its
 *         client's prefix cache, or are holes): what the counters of its
 *         state and owner hold for it
 * @allocated: tokens the row has pages for (EXTEND's new_len)
 * @committed: tokens written (COMMIT); TRIM cuts @allocated back to it
 * @protected: tokens at its start that are prefix-cache pages (attached
 *             or donated): whole pages, which TRIM and SWA_FREE leave
 * @swa_evicted: tokens at its start that SWA_FREE has freed: whole pages
 * @next: free: next free row; slot: next row in the client's slot bucket;
 *        held: next row the client holds (%KVP_NIL ends each list)
 * @prev: held: the previous row the client holds, so any can be unlinked
 * @mark: batch epoch, to refuse a row named twice in one batch
 * @gen: generation of the current (or last) handle; never 0
 * @state: an &enum kvp_row_state
 * @busy: a stepped op (&struct kvp_op) is working on it: lookups answer
 *        -EBUSY until its last step
 *
 * Everything is protected by &kvp_pool.lock. @state, @owner and @owned
 * change only through kvp_row_move(), kvp_row_own() and kvp_row_take()
 * (kvp_pool.c), which keep every counter with them, and EXTEND's
 * batched form of the last, which counts with kvp_held_take().
 */
struct kvp_row {
	u32 *pages;
	struct kvp_client *owner;
	u64 session;
	u32 nr;
	u32 cap;
	u32 owned;
	u32 allocated;
	u32 committed;
	u32 protected;
	u32 swa_evicted;
	u32 next;
	u32 prev;
	u32 mark;
	u32 gen;
	u8 state;
	u8 busy;
};

/**
 * struct kvp_cache_ent - a page of a client's prefix cache
 * @page: its id
 * @pins: rows that borrow it (map it below their protected length); only
 *        an unpinned page can be evicted
 */
struct kvp_cache_ent {
	u32 page;
	u32 pins;
};

/**
 * struct kvp_quarantine - pages a closed client did not give back itself
 * @head: the first, linked by &kvp_page.next (%KVP_NIL ends the list)
 * @nr: how many
 *
 * kvp_client_detach_quarantine_locked() puts here the pages of the rows and
 * slots a client still held when it closed, instead of freeing them: on
 * a pool with memory behind its pages, a process that did not release a
 * page may still be writing it (a GPU kernel it launched). They belong
 * to no row or tenant and are counted in &kvp_pool.quarantine_pages until
 * the owner of the struct, who knows when no such writer is left (the
 * driver: design.md, "A dead client's pages"), frees them with
 * kvp_quarantine_end_locked(). Zero-initialised, it is empty.
 */
struct kvp_quarantine {
	u32 head;
	u32 nr;
};

/**
 * struct kvp_tenant - the clients of one cgroup v2 and uid, or of a subtree
 * @hash: its place in &kvp_pool.tenant_hash, by cgroup and uid; in
 *        &kvp_pool.tenant_path_hash, by path and uid, for a path tenant
 *        while it is configured (unhashed once removed)
 * @clients: its clients, by their &kvp_client.tenant_link
 * @cgroup_id: the cgroup v2 id its clients opened the pool from; 0 for a
 *             path tenant
 * @path: a path tenant's cgroup path (kvmalloc()ed, NUL-terminated), else
 *        NULL
 * @path_len: strlen(@path)
 * @flags: %KVPOOL_TENANT_BY_PATH for a path tenant, with
 *         %KVPOOL_TENANT_ANY_UID when it takes every uid
 * @uid: their uid (0 with %KVPOOL_TENANT_ANY_UID)
 * @id: index in &kvp_pool.tenants
 * @max_pages: limit on @pages (EDQUOT beyond); 0: none
 * @min_pages: guarantee: pages other tenants' allocations leave free for
 *             it until it holds that many
 * @max_rows: limit on @rows (EDQUOT beyond); 0: none
 * @pages: pages its clients hold: rows, slots and caches
 * @cache_pages: of which in caches
 * @cache_pinned: of which pinned there
 * @rows: rows its clients hold, parked included
 * @pending: pages stepped EXTENDs of its clients have reserved and not
 *           taken yet: counted as held by every quota check
 * @nr_clients: its clients, the length of @clients
 * @configured: the administrator set limits: kept with no clients
 * @cgroup_seen: its cgroup was seen alive (kvp_tenant_seen_locked(),
 *               kvp_tenant_prune_locked()), so that it can be seen to die
 * @label: the administrator's name for it, NUL-terminated
 *
 * Protected by &kvp_pool.lock.
 */
struct kvp_tenant {
	struct hlist_node hash;
	struct list_head clients;
	u64 cgroup_id;
	char *path;
	u32 path_len;
	u32 flags;
	u32 uid;
	u32 id;
	u32 max_pages;
	u32 min_pages;
	u32 max_rows;
	u32 pages;
	u32 cache_pages;
	u32 cache_pinned;
	u32 rows;
	u32 pending;
	u32 nr_clients;
	bool configured;
	bool cgroup_seen;
	char label[KVPOOL_LABEL_LEN];
};

/**
 * struct kvp_client - one open file of the pool
 * @pool: the pool it joined
 * @id: its id, never reused within the pool: what fdinfo shows
 * @cidx: index in &kvp_pool.clients; names the client in page owners
 * @nr_rows: rows held by requests
 * @nr_slots: rows parked in slots
 * @nr_pages: pages its rows and slots own
 * @nr_cache_pages: pages in @cache
 * @nr_cache_pinned: of which a row borrows
 * @cache_cap: room in @cache
 * @cache_pending: of that room, entries stepped donations of its own
 *                 still to add have reserved: kvp_cache_reserve() keeps
 *                 it for them
 * @cache: its prefix cache's pages, @nr_cache_pages of them, room for
 *         @cache_cap; order is arbitrary (removal swaps the last in)
 * @tenant: the tenant it belongs to
 * @tenant_link: its place on its tenant's &kvp_tenant.clients
 * @slot_head: row index chains of its slots, by session hash
 * @held_head: its held rows, linked by &kvp_row.next and &kvp_row.prev:
 *             close walks only these
 *
 * Protected by &kvp_pool.lock. The counts are kept for STATS and fdinfo,
 * and recomputed by kvp_verify_locked().
 */
struct kvp_client {
	struct kvp_pool *pool;
	u32 id;
	u32 cidx;
	u32 nr_rows;
	u32 nr_slots;
	u32 nr_pages;
	u32 nr_cache_pages;
	u32 nr_cache_pinned;
	u32 cache_cap;
	u32 cache_pending;
	struct kvp_cache_ent *cache;
	struct kvp_tenant *tenant;
	struct list_head tenant_link;
	u32 slot_head[KVP_SLOT_BUCKETS];
	u32 held_head;
};

/**
 * struct kvp_pool - one pool: its page and row tables, counters and tenants
 * @lock: the caller's to take: the core never does, and every _locked
 *        function asserts it is held
 * @id: the pool's number (/dev/kvpoolN)
 * @flags: ``KVPOOL_CREATE_*`` it was made with
 * @nr_pages: pages in @pages
 * @page_tokens: tokens a page holds
 * @page_shift: log2(@page_tokens) when that is a power of two, else 0xff
 * @nr_rows: rows in @rows
 * @row_tokens: most tokens one row may hold
 * @max_batch: most entries of one batch: min(@nr_rows, %KVP_MAX_BATCH)
 * @pages: the page table, [@nr_pages]
 * @rows: the row table, [@nr_rows]
 * @free_map: the free page map: level 0, a bit a page, set while the page
 *            is free, then each level above it, a bit a word of the one
 *            below, set while that word is not 0; one allocation
 * @map_level: where each level of @free_map starts, [0, @map_levels)
 * @map_levels: levels of @free_map; the top one is a single word
 * @map_lo: a level-0 word index; every word below it is 0, so the lowest
 *          free page is at or above it
 * @free_row_head: top of the free row stack
 * @mark_epoch: the current batch's mark, see &kvp_row.mark
 * @free_pages: free pages, the bits set in level 0 of @free_map
 * @row_pages: pages held rows own
 * @slot_pages: pages parked rows own
 * @reserved_pages: page 0 of a %KVPOOL_CREATE_RESERVE_ZERO pool, else 0
 * @cache_evictable: prefix-cache pages no row borrows
 * @cache_pinned: prefix-cache pages some row borrows
 * @free_rows: rows on the free stack
 * @held_rows: rows held by requests
 * @slot_rows: rows parked in slots
 * @reserved_rows: row 0 of a %KVPOOL_CREATE_RESERVE_ZERO pool, else 0
 * @nr_clients: live clients, the entries of @clients
 * @next_client_id: the last &kvp_client.id handed out
 * @clients: live clients by &kvp_client.cidx
 * @tenants: tenants by &kvp_tenant.id
 * @tenant_hash: tenants by cgroup and uid, for attaching a client
 * @tenant_path_hash: configured path tenants by path and uid
 * @path_bytes: the tenants' &kvp_tenant.path_len + 1, summed
 * @nr_tenants: the entries of @tenants
 * @unmet: sum of tenants' (min_pages - pages) where that is > 0
 * @sum_min: sum of tenants' min_pages
 * @low_wmark: below this many free pages, clients are asked to evict
 * @high_wmark: the free pages that ask aims for
 * @pressure_seq: bumped when pollers should look again
 * @blocked_tenant: %KVP_NIL, or a tenant refused below its guarantee
 * @export_rows: rows held by export files
 * @export_pages: pages those rows own
 * @quarantine_pages: pages in some &struct kvp_quarantine
 * @pending_pages: free pages stepped EXTENDs have reserved: still on the
 *                 free map, but not available to anyone else (the sum of
 *                 the tenants' &kvp_tenant.pending)
 * @array_bytes: bytes of the rows' page arrays and the clients' cache
 *               arrays (their capacity), for kvp_mem_bytes_locked()
 * @refused_space: ROW_ALLOC, EXTEND and IMPORT refused with ENOSPC, ever
 * @refused_quota: the same refused with EDQUOT, ever
 * @reclaimed_pages: pages closing clients held (rows, slots, caches), ever
 * @unbacked_pages: pages of a pool on a budget that no chunk backs: off
 *                  the free map, owner %KVP_OWNER_UNBACKED (kvp_back_locked())
 * @grow: for a pool on a budget, asked under @lock for chunks backing at
 *        least its second argument's pages more when an EXTEND finds too
 *        few free, once nothing else of the EXTEND can fail; it backs all
 *        of them with kvp_back_locked() or none, and returns 0 (having
 *        backed them, or none if the budget cannot), a negative errno, or
 *        %KVP_GROW_WAIT (none backed) if they would be ready once memory
 *        being cleared is. NULL otherwise.
 * @headroom: for a pool on a budget, asked under @lock for the pages its
 *            budget could still give it (free chunks the other pools'
 *            floors and its own ceiling leave it, those being cleared
 *            included), which pressure counts as free. NULL otherwise.
 *
 * The page and row counters are those of &struct kvpool_stats; together
 * they add up to @nr_pages and @nr_rows, which kvp_verify_locked()
 * checks. @clients and @tenants take the lowest free index, so ids stay
 * small and dense; the xarrays' own locks are taken inside @lock, which
 * is what protects their contents. See kvp_pressure_locked() for how the
 * watermarks and @blocked_tenant turn into an eviction ask.
 */
struct kvp_pool {
	struct mutex lock;	/* protects everything below and all clients */
	u32 id;
	u32 flags;
	u32 nr_pages;
	u32 page_tokens;
	u8 page_shift;
	u32 nr_rows;
	u32 row_tokens;
	u32 max_batch;

	struct kvp_page *pages;
	struct kvp_row *rows;
	u64 *free_map;
	u64 *map_level[KVP_MAP_LEVELS];
	u32 map_levels;
	u32 map_lo;
	u32 free_row_head;
	u32 mark_epoch;

	u32 free_pages, row_pages, slot_pages, reserved_pages;
	u32 cache_evictable, cache_pinned;
	u32 free_rows, held_rows, slot_rows, reserved_rows;
	u32 nr_clients;
	u32 next_client_id;
	struct xarray clients;
	struct xarray tenants;
	struct hlist_head tenant_hash[1 << KVP_TENANT_HASH_BITS];
	struct hlist_head tenant_path_hash[1 << KVP_TENANT_HASH_BITS];
	u32 path_bytes;
	u32 nr_tenants;
	u32 unmet;
	u64 sum_min;

	u32 low_wmark, high_wmark;
	u32 pressure_seq;
	u32 blocked_tenant;

	u32 export_rows, export_pages;
	u32 quarantine_pages;
	u32 pending_pages;
	u64 array_bytes;
	u64 refused_space, refused_quota;
	u64 reclaimed_pages;
	u32 unbacked_pages;
	int (*grow)(struct kvp_pool *pool, u32 pages);
	u32 (*headroom)(struct kvp_pool *pool);
};

/*
 * The API, by the file that defines it; the kernel-doc of each function
 * is at its definition.
 */

/* Pools (kvp_pool.c). */
int kvp_geom_check(u32 flags, u32 nr_pages, u32 page_tokens,
		   u32 nr_rows, u32 row_tokens);
int kvp_pool_init(struct kvp_pool *pool, u32 id, u32 flags, u32 nr_pages,
		  u32 page_tokens, u32 nr_rows, u32 row_tokens);
void kvp_pool_fini(struct kvp_pool *pool);
u32 kvp_back_locked(struct kvp_pool *pool, u32 first, u32 nr);
bool kvp_unback_locked(struct kvp_pool *pool, u32 first, u32 nr);

/* Clients (kvp_client.c). */
int kvp_client_attach_tenant_locked(struct kvp_pool *pool,
				    struct kvp_client *c, u64 cgroup_id,
				    u32 uid, const char *path);
int kvp_client_attach_locked(struct kvp_pool *pool, struct kvp_client *c);
void kvp_client_detach_locked(struct kvp_client *c);
void kvp_client_detach_quarantine_locked(struct kvp_client *c,
					 struct kvp_quarantine *q);
bool kvp_client_reclaim_step_locked(struct kvp_client *c,
				    struct kvp_quarantine *q);
u32 kvp_quarantine_end_locked(struct kvp_pool *pool,
			      struct kvp_quarantine *q);
u32 kvp_quarantine_free_locked(struct kvp_pool *pool,
			       struct kvp_quarantine *q, u32 budget);

void kvp_stats_locked(struct kvp_client *c, struct kvpool_stats *st);

/*
 * Request rows (kvp_rows.c; DONATE, ATTACH_PREFIX and CACHE_EVICT, the
 * prefix cache's, in kvp_cache.c).
 */
int kvp_row_alloc_locked(struct kvp_client *c, struct kvpool_handle *out,
			 u32 count, u32 *out_short);

/**
 * struct kvp_extend_result - what kvp_extend_locked() hands back
 * @pages: the new pages' ids, in entry order; allocated by the core, the
 *         caller kvfree()s it (unless it is the buffer the caller gave
 *         kvp_extend_buf_locked()); NULL when there are none
 * @nr_pages: ids in @pages; on -ENOBUFS, how many there would have been
 * @shortfall: on -EDQUOT and -ENOSPC, how many pages were missing
 * @error_index: the entry an error is about; ~0U when it is about none
 */
struct kvp_extend_result {
	u32 *pages;
	u32 nr_pages;
	u32 shortfall;
	u32 error_index;
};

/**
 * enum kvp_op_kind - the ops that run in steps
 * @KVP_OP_EXTEND: EXTEND
 * @KVP_OP_RELEASE: RELEASE, with or without %KVPOOL_RELEASE_DONATE
 * @KVP_OP_TRIM: TRIM
 * @KVP_OP_SWA_FREE: SWA_FREE
 * @KVP_OP_DONATE: DONATE
 */
enum kvp_op_kind {
	KVP_OP_EXTEND,
	KVP_OP_RELEASE,
	KVP_OP_TRIM,
	KVP_OP_SWA_FREE,
	KVP_OP_DONATE,
};

/**
 * struct kvp_op - an op done in steps
 * @c: the client
 * @extend: EXTEND's entries (the caller's, kept until the last step)
 * @handles: RELEASE's and TRIM's handles (likewise)
 * @lens: SWA_FREE's and DONATE's entries (likewise)
 * @res: EXTEND's result, completed by the last step
 * @nr_freed: the other ops' count of freed (DONATE: donated) pages,
 *            likewise
 * @count: entries
 * @i: the entry being worked on
 * @given: pages entry @i has been given (EXTEND)
 * @left: pages still to move (EXTEND), 0 once done
 * @free_before: free pages before the op, for the watermark crossing
 * @stepped: the op moves more than %KVP_STEP_PAGES pages: its rows are
 *           busy (and an EXTEND's pages reserved) until its last step
 * @donate: RELEASE with %KVPOOL_RELEASE_DONATE: each row donates first
 * @kind: an &enum kvp_op_kind
 *
 * The ops' _start_locked() functions check and allocate everything, so
 * that no step can fail; kvp_op_step_locked() then moves at most
 * %KVP_STEP_PAGES pages a call. The caller may drop the pool lock
 * between two steps: every state in between is one the invariants hold
 * for (docs/gpu-budget.md, "Stepped ops").
 */
struct kvp_op {
	struct kvp_client *c;
	union {
		struct kvpool_extend_entry *extend;
		const struct kvpool_handle *handles;
		const struct kvpool_len_entry *lens;
	};
	union {
		struct kvp_extend_result *res;
		u32 *nr_freed;
	};
	u32 count;
	u32 i;
	u32 given;
	u32 left;
	u32 free_before;
	bool stepped;
	bool donate;
	u8 kind;
};

/**
 * struct kvp_extend_mem - the big arrays of an EXTEND, allocated unlocked
 * @pages: room for the answer's ids, @pages_cap of them, or NULL
 * @pages_cap: ids @pages holds
 * @row: a page array for row @row_idx, room for @row_cap ids, or NULL
 * @row_idx: the row @row is for
 * @row_cap: ids @row holds
 * @want_pages: set when kvp_extend_start_locked() asks: the ids @pages
 *              must hold, or 0
 * @want_row_idx: likewise, the row whose array to allocate
 * @want_row_cap: and its room, or 0
 *
 * A big EXTEND's two allocations (the answer's ids, and the growth of
 * its biggest row's array, a copy of the row's ids included) would hold
 * the pool lock for as long as the allocation of megabytes takes, steps
 * or none. Given one of these, kvp_extend_start_locked() answers
 * %KVP_EXTEND_NEED_MEM, changing nothing, when it needs more of them
 * than a step's worth; the caller drops the lock, allocates what is
 * asked (kvp_extend_mem_get()), takes the lock and starts again. What
 * the op uses becomes its own (NULL here); the caller frees what is left
 * (kvp_extend_mem_put()).
 */
struct kvp_extend_mem {
	u32 *pages;
	u32 pages_cap;
	u32 *row;
	u32 row_idx;
	u32 row_cap;
	u32 want_pages;
	u32 want_row_idx;
	u32 want_row_cap;
};

#define KVP_EXTEND_NEED_MEM	1	/* see struct kvp_extend_mem */
/*
 * kvp_pool.grow found too little memory ready but some being cleared:
 * with @mem given, the start answers this, and the caller drops the lock,
 * waits for the clearing and starts again (as for %KVP_EXTEND_NEED_MEM).
 */
#define KVP_EXTEND_NEED_CLEAR	2
#define KVP_GROW_WAIT		1	/* kvp_pool.grow: see above */

int kvp_extend_mem_get(struct kvp_extend_mem *mem);
void kvp_extend_mem_put(struct kvp_extend_mem *mem);

int kvp_extend_start_locked(struct kvp_client *c,
			    struct kvpool_extend_entry *e, u32 count,
			    u32 pages_cap, u32 *buf, u32 buf_cap,
			    struct kvp_extend_result *res, struct kvp_op *op,
			    struct kvp_extend_mem *mem);
int kvp_release_start_locked(struct kvp_client *c,
			     const struct kvpool_handle *h, u32 count,
			     u32 flags, u32 *nr_freed, u32 *error_index,
			     struct kvp_op *op);
int kvp_trim_start_locked(struct kvp_client *c, const struct kvpool_handle *h,
			  u32 count, u32 *nr_freed, u32 *error_index,
			  struct kvp_op *op);
int kvp_swa_free_start_locked(struct kvp_client *c,
			      const struct kvpool_len_entry *e, u32 count,
			      u32 *nr_freed, u32 *error_index,
			      struct kvp_op *op);
int kvp_donate_start_locked(struct kvp_client *c,
			    const struct kvpool_len_entry *e, u32 count,
			    u32 *nr_donated, u32 *error_index,
			    struct kvp_op *op);
bool kvp_op_step_locked(struct kvp_op *op);

int kvp_extend_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
		      u32 count, u32 pages_cap, struct kvp_extend_result *res);
int kvp_extend_buf_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
			  u32 count, u32 pages_cap, u32 *buf, u32 buf_cap,
			  struct kvp_extend_result *res);
int kvp_commit_locked(struct kvp_client *c,
		      const struct kvpool_len_entry *e, u32 count,
		      u32 *error_index);
int kvp_trim_locked(struct kvp_client *c, const struct kvpool_handle *h,
		    u32 count, u32 *nr_freed, u32 *error_index);
int kvp_release_locked(struct kvp_client *c, const struct kvpool_handle *h,
		       u32 count, u32 flags, u32 *nr_freed, u32 *error_index);
int kvp_donate_locked(struct kvp_client *c,
		      const struct kvpool_len_entry *e, u32 count,
		      u32 *nr_donated, u32 *error_index);
int kvp_swa_free_locked(struct kvp_client *c,
			const struct kvpool_len_entry *e, u32 count,
			u32 *nr_freed, u32 *error_index);
int kvp_attach_prefix_locked(struct kvp_client *c,
			     const struct kvpool_handle *h,
			     const u32 *pages, u32 nr_pages);
int kvp_cache_evict_locked(struct kvp_client *c, const u32 *pages,
			   u32 count, u32 *error_index);

/* Session slots and ROW_QUERY (kvp_rows.c). */
int kvp_to_slot_locked(struct kvp_client *c, const struct kvpool_handle *h,
		       u64 session, u32 *nr_pages);
int kvp_from_slot_locked(struct kvp_client *c, u64 session,
			 struct kvpool_handle *out, u32 *nr_pages);
int kvp_from_slot_peek_locked(struct kvp_client *c, u64 session,
			      struct kvpool_handle *out, u32 *nr_pages);
int kvp_slot_release_locked(struct kvp_client *c, u64 session,
			    u32 *nr_freed);

int kvp_row_query_locked(struct kvp_client *c, struct kvpool_row_query *q,
			 u32 **pages);

/* Tenants and pressure, the administrator's side (kvp_tenant.c). */
int kvp_cgroup_path_check(const char *path);
int kvp_tenant_set_locked(struct kvp_pool *pool,
			  struct kvpool_ctl_tenant *t, const char *path);
u32 kvp_tenant_list_locked(struct kvp_pool *pool,
			   struct kvpool_tenant_info *out, u32 count,
			   char *paths, u32 paths_len, u32 *paths_used);
void kvp_tenant_prune_locked(struct kvp_pool *pool,
			     bool (*alive)(u64 cgroup_id));
void kvp_tenant_seen_locked(struct kvp_pool *pool, u32 id,
			    bool (*alive)(u64 cgroup_id));
int kvp_set_wmark_locked(struct kvp_pool *pool, u32 low, u32 high);
u32 kvp_pressure_locked(struct kvp_client *c, u32 *reasons);

/*
 * Export and import (kvp_export.c). The _peek_ functions exist so the
 * driver can write its answer to userspace before the op takes effect.
 */
int kvp_export_locked(struct kvp_client *c, const struct kvpool_export *x,
		      u32 *idx, u32 *nr_pages);
int kvp_import_locked(struct kvp_client *c, u32 idx,
		      struct kvpool_handle *out, u32 *nr_pages);
void kvp_export_drop_locked(struct kvp_pool *pool, u32 idx);
int kvp_export_peek_locked(struct kvp_client *c,
			   const struct kvpool_export *x, u32 *nr_pages);
int kvp_import_peek_locked(struct kvp_client *c, u32 idx,
			   struct kvpool_handle *out, u32 *nr_pages);

u64 kvp_mem_bytes_locked(struct kvp_pool *pool);

/* The invariant checker (kvp_verify.c). */
int kvp_verify_locked(struct kvp_pool *pool, u32 *violations);

/*
 * kvp_pages_for() with the page size passed in, for loops that keep it in
 * a register: @pt tokens a page, @shift log2(@pt) or 0xff.
 */
static inline u32 kvp_tokens_pages(u32 tokens, u32 pt, u8 shift)
{
	if (likely(shift != 0xff))
		return (tokens >> shift) + !!(tokens & (pt - 1));
	return tokens / pt + !!(tokens % pt);
}

/**
 * kvp_pages_for() - pages that hold a number of tokens
 * @pool: the pool, for its page size
 * @tokens: a length in tokens
 *
 * Context: any; reads only the pool's fixed geometry.
 * Return: ceil(@tokens / page_tokens), without the overflow of adding
 * page_tokens - 1 first (@tokens may be near U32_MAX).
 */
static inline u32 kvp_pages_for(const struct kvp_pool *pool, u32 tokens)
{
	return kvp_tokens_pages(tokens, pool->page_tokens, pool->page_shift);
}

/**
 * kvp_xa_span() - one more than the highest id in use in an id table
 * @xa: the pool's clients or tenants
 *
 * For walkers that keep an array indexed by id beside the table: the
 * invariant checker, and the fuzzer's snapshots of the core.
 *
 * Context: @lock of the pool @xa belongs to held.
 * Return: the span; 0 if @xa is empty.
 */
static inline u32 kvp_xa_span(struct xarray *xa)
{
	unsigned long id, last = 0;
	void *entry;

	xa_for_each(xa, id, entry)
		last = id + 1;
	return (u32)last;
}

#endif /* _KVP_CORE_H */
