/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpool core: the page pool and the row ownership state machine.
 *
 * Kernel-agnostic: it builds into kvpool.ko and into the userspace unit
 * test (selftests/unit). It takes no locks of its own; every function whose
 * name ends in _locked must be called with pool->lock held, and asserts it.
 * Functions validate everything against the pool's state before changing
 * anything, so an error return means nothing changed.
 */
#ifndef _KVP_CORE_H
#define _KVP_CORE_H

#include "kvp_os.h"
#include <linux/kvpool.h>

#define KVP_NIL			0xffffffffU	/* end of a u32-linked list */
#define KVP_OWNER_FREE		0xffffffffU
#define KVP_OWNER_RESERVED	0xfffffffeU
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

/*
 * One page: the only per-page memory, 8 bytes.
 * @next: free: the next free page (KVP_NIL ends the stack); in a prefix
 *        cache: its index in the owning client's @cache array; owned by a
 *        row: unused.
 * @owner: KVP_OWNER_FREE, KVP_OWNER_RESERVED, the owning row's index, or
 *         KVP_OWNER_CACHE | the owning client's @cidx.
 */
struct kvp_page {
	u32 next;
	u32 owner;
};

enum kvp_row_state {
	KVP_ROW_FREE = 0,
	KVP_ROW_HELD = KVPOOL_ROW_HELD,
	KVP_ROW_SLOT = KVPOOL_ROW_SLOT,
	KVP_ROW_RESERVED,
	KVP_ROW_EXPORTED,	/* held by an export file, no client */
};

struct kvp_client;

/*
 * One row (req_pool_idx). Everything is protected by pool->lock.
 * @pages: page ids by position, @nr of them valid (ceil(allocated /
 *         page_tokens)), room for @cap; NULL when @cap is 0. Entries below
 *         swa_evicted may be KVPOOL_PAGE_NONE.
 * @owner: the client holding the row (held or slot); NULL when free or
 *         exported
 * @session: the slot's session id while state is KVP_ROW_SLOT
 * @next: free: next free row; slot: next row in the client's slot bucket;
 *        held: next row the client holds (KVP_NIL ends each list)
 * @prev: held: the previous row the client holds, so any can be unlinked
 * @mark: batch epoch, to refuse a row named twice in one batch
 * @gen: generation of the current (or last) handle; never 0
 * @owned: how many of its @pages it owns (the rest it borrows from its
 *         client's prefix cache, or are holes): what the counters of its
 *         state and owner hold for it
 * @state, @owner and @owned change only through kvp_row_move(),
 * kvp_row_own() and kvp_row_take() (kvp_pool.c), which keep every
 * counter with them.
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
};

/*
 * A page of a client's prefix cache.
 * @page: its id
 * @pins: rows that borrow it (map it below their protected length)
 */
struct kvp_cache_ent {
	u32 page;
	u32 pins;
};

/*
 * A tenant: the clients of one cgroup v2 and uid. Protected by pool->lock.
 * @id: index in pool->tenants
 * @hash: its place in pool->tenant_hash, by cgroup and uid
 * @clients: its clients, by their @tenant_link
 * @pages: pages its clients hold: rows, slots and caches
 * @cache_pages, @cache_pinned: of which in caches, and pinned there
 * @rows: rows its clients hold, parked included
 * @configured: the administrator set limits: kept with no clients
 */
struct kvp_tenant {
	struct hlist_node hash;
	struct list_head clients;
	u64 cgroup_id;
	u32 uid;
	u32 id;
	u32 max_pages;
	u32 min_pages;
	u32 max_rows;
	u32 pages;
	u32 cache_pages;
	u32 cache_pinned;
	u32 rows;
	u32 nr_clients;
	bool configured;
	char label[KVPOOL_LABEL_LEN];
};

/*
 * A client: one open file of the pool. Protected by pool->lock.
 * Counts are kept for STATS and fdinfo, and recomputed by verify.
 * @cidx: index in pool->clients; names the client in page owners
 * @tenant_link: its place on its tenant's @clients
 * @cache: its prefix cache's pages, @nr_cache_pages of them, room for
 *         @cache_cap; order is arbitrary (removal swaps the last in)
 */
struct kvp_client {
	struct kvp_pool *pool;
	u32 id;
	u32 cidx;
	u32 nr_rows;		/* rows held by requests */
	u32 nr_slots;		/* rows parked in slots */
	u32 nr_pages;		/* pages its rows and slots own */
	u32 nr_cache_pages;
	u32 nr_cache_pinned;	/* of which a row borrows */
	u32 cache_cap;
	struct kvp_cache_ent *cache;
	struct kvp_tenant *tenant;
	struct list_head tenant_link;
	u32 slot_head[KVP_SLOT_BUCKETS];	/* row index chains, by session */
	/* its held rows, linked by next/prev: close walks only these */
	u32 held_head;
};

struct kvp_pool {
	struct mutex lock;	/* protects everything below and all clients */
	u32 id;
	u32 flags;		/* KVPOOL_CREATE_* */
	u32 nr_pages;
	u32 page_tokens;
	u32 nr_rows;
	u32 row_tokens;
	u32 max_batch;

	struct kvp_page *pages;	/* [nr_pages] */
	struct kvp_row *rows;	/* [nr_rows] */
	u32 free_head;		/* free page stack */
	u32 free_row_head;	/* free row stack */
	u32 mark_epoch;

	/* accounting, see struct kvpool_stats */
	u32 free_pages, row_pages, slot_pages, reserved_pages;
	u32 cache_evictable, cache_pinned;
	u32 free_rows, held_rows, slot_rows, reserved_rows;
	u32 nr_clients;
	u32 next_client_id;
	/*
	 * Live clients by cidx and tenants by id: the lowest free index is
	 * taken, so ids stay small and dense. The xarrays' own locks are
	 * taken inside pool->lock, which is what protects their contents.
	 */
	struct xarray clients;
	struct xarray tenants;
	struct hlist_head tenant_hash[1 << KVP_TENANT_HASH_BITS];
	u32 nr_tenants;
	u32 unmet;		/* sum of tenants' (min_pages - pages) > 0 */
	u64 sum_min;		/* sum of tenants' min_pages */

	/* pressure, see kvp_pressure_locked() */
	u32 low_wmark, high_wmark;
	u32 pressure_seq;	/* bumped when pollers should look again */
	u32 blocked_tenant;	/* KVP_NIL, or refused below its guarantee */

	u32 export_rows, export_pages;
};

/* Geometry of a new pool; errors are EINVAL or EOPNOTSUPP (flags). */
int kvp_geom_check(u32 flags, u32 nr_pages, u32 page_tokens,
		   u32 nr_rows, u32 row_tokens);
int kvp_pool_init(struct kvp_pool *pool, u32 id, u32 flags, u32 nr_pages,
		  u32 page_tokens, u32 nr_rows, u32 row_tokens);
/* Only with no clients left. */
void kvp_pool_fini(struct kvp_pool *pool);

/*
 * Joins @c to the tenant of @cgroup_id and @uid, made if new.
 * -EMFILE past KVP_MAX_CLIENTS or KVP_MAX_TENANTS, -ENOMEM; nothing
 * changed then.
 */
int kvp_client_attach_tenant_locked(struct kvp_pool *pool,
				    struct kvp_client *c, u64 cgroup_id,
				    u32 uid);
/* The same, in the tenant of cgroup 0 and uid 0. */
int kvp_client_attach_locked(struct kvp_pool *pool, struct kvp_client *c);
/* Frees every row, slot and page @c holds and unlinks it. */
void kvp_client_detach_locked(struct kvp_client *c);

void kvp_stats_locked(struct kvp_client *c, struct kvpool_stats *st);

int kvp_row_alloc_locked(struct kvp_client *c, struct kvpool_handle *out,
			 u32 count, u32 *out_short);

/* Result of an extend; @pages is allocated by the core, kvfree() it. */
struct kvp_extend_result {
	u32 *pages;
	u32 nr_pages;
	u32 shortfall;
	u32 error_index;
};

int kvp_extend_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
		      u32 count, u32 pages_cap, struct kvp_extend_result *res);
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

int kvp_to_slot_locked(struct kvp_client *c, const struct kvpool_handle *h,
		       u64 session, u32 *nr_pages);
int kvp_from_slot_locked(struct kvp_client *c, u64 session,
			 struct kvpool_handle *out, u32 *nr_pages);
/* What FROM_SLOT would give (handle, pages) without doing it. */
int kvp_from_slot_peek_locked(struct kvp_client *c, u64 session,
			      struct kvpool_handle *out, u32 *nr_pages);
int kvp_slot_release_locked(struct kvp_client *c, u64 session,
			    u32 *nr_freed);

/*
 * Fills @q's out_* fields. With @pages non-NULL, *@pages gets a core
 * allocation of min(q->pages_cap, out_nr_pages) ids (NULL if that is 0).
 */
int kvp_row_query_locked(struct kvp_client *c, struct kvpool_row_query *q,
			 u32 **pages);

/* Tenants and pressure (the administrator's side). */
int kvp_tenant_set_locked(struct kvp_pool *pool,
			  struct kvpool_ctl_tenant *t);
/* Fills min(@count, nr_tenants) entries; returns nr_tenants. */
u32 kvp_tenant_list_locked(struct kvp_pool *pool,
			   struct kvpool_tenant_info *out, u32 count);
int kvp_set_wmark_locked(struct kvp_pool *pool, u32 low, u32 high);
/* Pages @c is asked to evict now, and why (KVPOOL_PRESSURE_*). */
u32 kvp_pressure_locked(struct kvp_client *c, u32 *reasons);

/*
 * Export: the row leaves @c for an export file (*@idx names it there);
 * import takes an exported row into @c; drop frees one never imported.
 */
int kvp_export_locked(struct kvp_client *c, const struct kvpool_export *x,
		      u32 *idx, u32 *nr_pages);
int kvp_import_locked(struct kvp_client *c, u32 idx,
		      struct kvpool_handle *out, u32 *nr_pages);
void kvp_export_drop_locked(struct kvp_pool *pool, u32 idx);
/*
 * What EXPORT and IMPORT would report (pages, the new handle) without
 * doing it, so the driver can write its answer before the op takes effect.
 */
int kvp_export_peek_locked(struct kvp_client *c,
			   const struct kvpool_export *x, u32 *nr_pages);
int kvp_import_peek_locked(struct kvp_client *c, u32 idx,
			   struct kvpool_handle *out, u32 *nr_pages);

/*
 * Sets *@violations to the number of broken invariants, each also
 * kvp_report()ed; -ENOMEM if it could not get its scratch memory.
 */
int kvp_verify_locked(struct kvp_pool *pool, u32 *violations);

static inline u32 kvp_pages_for(const struct kvp_pool *pool, u32 tokens)
{
	return tokens / pool->page_tokens + !!(tokens % pool->page_tokens);
}

#endif /* _KVP_CORE_H */
