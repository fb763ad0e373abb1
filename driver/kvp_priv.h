/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kvpool core's private header: what its files (kvp_pool.c,
 * kvp_client.c, kvp_rows.c, kvp_cache.c, kvp_tenant.c, kvp_export.c,
 * kvp_verify.c) share and nothing outside the core may call. They are
 * layered: kvp_pool.c and kvp_tenant.c at the bottom, kvp_cache.c on
 * them, kvp_rows.c and kvp_export.c on that, kvp_client.c and
 * kvp_verify.c on top; no file calls one above it. The API is kvp_core.h.
 * Everything here runs with pool->lock held, as the _locked API that
 * calls it does.
 */
#ifndef _KVP_PRIV_H
#define _KVP_PRIV_H

#include "kvp_core.h"

static inline bool kvp_is_cache(u32 owner)
{
	return (owner & KVP_OWNER_CACHE) && owner < KVP_OWNER_QUARANTINE;
}

/*
 * The entry of page @id in @c's cache; the caller knows the page is one
 * of @c's cache pages. A row borrows only from its own client's cache,
 * so the row ops always know that client: the hot paths never look the
 * owner up in the clients xarray (an RCU walk per page).
 */
static inline struct kvp_cache_ent *kvp_cache_ent(const struct kvp_client *c,
						  u32 id)
{
	return &c->cache[c->pool->pages[id].next];
}

/* The generation a row's next taker gets; 0 is never issued. */
static inline u32 kvp_next_gen(u32 gen)
{
	return gen + 1 ? gen + 1 : 1;
}

static inline u32 kvp_row_index(const struct kvp_pool *pool,
				const struct kvp_row *r)
{
	return (u32)(r - pool->rows);
}

static inline struct kvp_row *kvp_row_of(struct kvp_client *c,
					 const struct kvpool_handle *h)
{
	return &c->pool->rows[h->req_pool_idx];
}

static inline u32 kvp_unmet(const struct kvp_tenant *t)
{
	return t->min_pages > t->pages ? t->min_pages - t->pages : 0;
}

/*
 * Pollers should look at their ask again. Written under the pool lock and
 * read without it by the driver (before and after an op, to decide on a
 * wake-up), hence the _ONCE accesses.
 */
static inline void kvp_pressure_changed(struct kvp_pool *pool)
{
	WRITE_ONCE(pool->pressure_seq, pool->pressure_seq + 1);
}

/* The free map's slow paths (kvp_pool.c), for the inline push and pop. */
void kvp_map_mark(struct kvp_pool *pool, u32 w);
void kvp_map_unmark(struct kvp_pool *pool, u32 w);
u32 kvp_map_first(struct kvp_pool *pool);

/*
 * Page @id, which nobody owns any more, is free. Inline, as are pops: the
 * release and extend loops run them once a page. Only a word that was 0
 * needs its summary bits set and can move the lowest non-empty word down.
 */
static inline void kvp_page_push(struct kvp_pool *pool, u32 id)
{
	u64 *word = &pool->free_map[id / 64];
	u64 old = *word;

	pool->pages[id].owner = KVP_OWNER_FREE;
	*word = old | BIT_ULL(id % 64);
	if (!old) {
		kvp_map_mark(pool, id / 64);
		if (id / 64 < pool->map_lo)
			pool->map_lo = id / 64;
	}
	pool->free_pages++;
}

/*
 * The lowest free page, now @owner's. The caller has checked that enough
 * pages are free.
 */
static inline u32 kvp_page_pop(struct kvp_pool *pool, u32 owner)
{
	u32 w = pool->map_lo;
	u64 bits = pool->free_map[w];
	u32 id;

	if (unlikely(!bits)) {
		w = kvp_map_first(pool);
		pool->map_lo = w;
		bits = pool->free_map[w];
	}
	id = w * 64 + (u32)__ffs64(bits);
	bits &= bits - 1;
	pool->free_map[w] = bits;
	if (!bits)
		kvp_map_unmark(pool, w);
	pool->pages[id].next = KVP_NIL;
	pool->pages[id].owner = owner;
	pool->free_pages--;
	return id;
}

/*
 * SWA_FREE has freed pages above the protected prefix: what is left of
 * the row's start is not a prefix any more, and a cache entry must be one
 * (ATTACH_PREFIX maps cached pages at positions 0..k). Such a row donates
 * nothing.
 */
static inline bool kvp_prefix_holed(const struct kvp_row *r)
{
	return r->swa_evicted > r->protected;
}

/* kvp_pool.c */
void kvp_pinned(struct kvp_client *c, int d);
void kvp_pin(struct kvp_client *c, u32 id);
void kvp_row_move(struct kvp_pool *pool, struct kvp_row *r,
		  enum kvp_row_state state, struct kvp_client *owner);
void kvp_row_own(struct kvp_pool *pool, struct kvp_row *r, int n);
void kvp_row_take(struct kvp_pool *pool, struct kvp_row *r, int n);
u32 kvp_row_free(struct kvp_pool *pool, struct kvp_row *r);
u32 kvp_row_free_hold(struct kvp_pool *pool, struct kvp_row *r,
		      struct kvp_quarantine *q);
int kvp_row_reserve(struct kvp_row *r, u32 want);
int kvp_lookup(struct kvp_client *c, const struct kvpool_handle *h,
	       struct kvp_row **out);
int kvp_lookup_batch(struct kvp_client *c, const void *entries,
		     size_t stride, u32 count, u32 *error_index);
u32 kvp_slot_bucket(u64 session);
struct kvp_row *kvp_slot_find(struct kvp_client *c, u64 session,
			      u32 **link);
u32 kvp_slot_free(struct kvp_pool *pool, struct kvp_row *r, u32 *link,
		  struct kvp_quarantine *q);

/* kvp_cache.c */
int kvp_cache_reserve(struct kvp_client *c, u32 more);
void kvp_cache_unlink(struct kvp_client *c, u32 id);
void kvp_cache_free(struct kvp_client *c, u32 id);
u32 kvp_donate_count(struct kvp_pool *pool, struct kvp_row *r,
		     u32 upto);
u32 kvp_row_donate(struct kvp_client *c, struct kvp_row *r, u32 upto);

/* kvp_tenant.c */
u32 kvp_available(struct kvp_pool *pool, const struct kvp_tenant *t);
void kvp_charge(struct kvp_pool *pool, struct kvp_tenant *t,
		int delta);
struct kvp_tenant *kvp_tenant_find(struct kvp_pool *pool,
				   u64 cgroup_id, u32 uid);
int kvp_tenant_get(struct kvp_pool *pool, u64 cgroup_id, u32 uid,
		   struct kvp_tenant **out);
void kvp_tenant_put(struct kvp_pool *pool, struct kvp_tenant *t);
void kvp_refused(struct kvp_pool *pool, struct kvp_tenant *t,
		 bool pages);

#endif /* _KVP_PRIV_H */
