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
	return (owner & KVP_OWNER_CACHE) && owner < KVP_OWNER_UNBACKED;
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

/* The slow paths of the inline helpers below (kvp_pool.c). */
void kvp_map_mark(struct kvp_pool *pool, u32 w);
void kvp_map_unmark(struct kvp_pool *pool, u32 w);
u32 kvp_map_first(struct kvp_pool *pool);
void kvp_mark_begin(struct kvp_pool *pool);

/*
 * Page @id, which nobody owns any more, is free; the caller adds it to
 * &kvp_pool.free_pages. Inline, as are pops (struct kvp_popper): the
 * release and extend loops run them once a page, and count once a batch. Only a word that
 * was 0 needs its summary bits set and can move the lowest non-empty word
 * down.
 */
static inline void __kvp_page_push(struct kvp_pool *pool, u32 id)
{
	u64 *word = &pool->free_map[id / 64];
	u64 old = *word;

	pool->pages[id].owner = KVP_OWNER_FREE;
	*word = old | BIT_ULL(id % 64);
	if (unlikely(!old)) {
		kvp_map_mark(pool, id / 64);
		if (id / 64 < pool->map_lo)
			pool->map_lo = id / 64;
	}
}

static inline void kvp_page_push(struct kvp_pool *pool, u32 id)
{
	__kvp_page_push(pool, id);
	pool->free_pages++;
}

/*
 * Whether @c holds row @r under @h's generation: kvp_lookup()'s answer
 * once @h is known to be in range.
 */
static inline int kvp_held_by(const struct kvp_row *r,
			      const struct kvp_client *c,
			      const struct kvpool_handle *h)
{
	if (r->owner != c || r->state != KVP_ROW_HELD)
		return -ENOENT;
	/* A generation not issued yet names nothing; an older one is stale. */
	if (r->gen != h->generation)
		return (s32)(h->generation - r->gen) > 0 ? -ENOENT : -ESTALE;
	/* Mid-way through a stepped op of another thread of @c's. */
	if (unlikely(r->busy))
		return -EBUSY;
	return 0;
}

/**
 * kvp_lookup() - the row a handle names, if its client holds it
 * @c: the client
 * @h: the handle
 * @out: gets the row
 *
 * Context: @c->pool->lock held.
 * Return: 0; -ENOENT if @h is out of range, names a row @c does not hold
 * (free, parked, exported or another client's) or has a generation not
 * issued yet; -ESTALE if @c holds the row under a newer generation, so
 * the caller's handle is a dead one; -EBUSY if the row is in a stepped
 * op (&struct kvp_op) another call of @c's has not finished.
 */
static inline int kvp_lookup(struct kvp_client *c,
			     const struct kvpool_handle *h,
			     struct kvp_row **out)
{
	struct kvp_pool *pool = c->pool;
	int ret;

	if (h->req_pool_idx >= pool->nr_rows)
		return -ENOENT;
	ret = kvp_held_by(&pool->rows[h->req_pool_idx], c, h);
	if (!ret)
		*out = &pool->rows[h->req_pool_idx];
	return ret;
}

/*
 * A batch's lookups with what they read of the pool in locals: the core
 * is built with -fno-strict-aliasing, so through @c->pool every store to
 * a row would make the next entry load the pool's fields again.
 */
struct kvp_batch {
	struct kvp_client *c;
	struct kvp_row *rows;
	u32 nr_rows;
	u32 epoch;
};

static inline void kvp_batch_begin(struct kvp_batch *b, struct kvp_client *c)
{
	kvp_mark_begin(c->pool);
	b->c = c;
	b->rows = c->pool->rows;
	b->nr_rows = c->pool->nr_rows;
	b->epoch = c->pool->mark_epoch;
}

/*
 * kvp_lookup() for an entry of batch @b: also -EINVAL if an earlier entry
 * named the same row.
 */
static inline int kvp_batch_lookup(const struct kvp_batch *b,
				   const struct kvpool_handle *h,
				   struct kvp_row **out)
{
	u32 idx = h->req_pool_idx;
	struct kvp_row *r;
	int ret;

	if (idx >= b->nr_rows)
		return -ENOENT;
	r = &b->rows[idx];
	ret = kvp_held_by(r, b->c, h);
	if (ret)
		return ret;
	if (r->mark == b->epoch)
		return -EINVAL;
	r->mark = b->epoch;
	*out = r;
	return 0;
}

/*
 * A run of pops, the level-0 word being taken from kept in a register
 * and written back when it is used up or the run ends (kvp_pop_end()).
 * Nothing else may touch the free map during the run.
 */
struct kvp_popper {
	struct kvp_pool *pool;
	u64 *map;
	u32 w;
	u64 bits;
};

static inline void kvp_pop_begin(struct kvp_popper *p, struct kvp_pool *pool)
{
	p->pool = pool;
	p->map = pool->free_map;
	p->w = pool->map_lo;
	p->bits = p->map[p->w];
}

/* The next free word into the run, if the last one is used up. */
static inline void kvp_pop_fill(struct kvp_popper *p)
{
	if (unlikely(!p->bits)) {
		p->w = kvp_map_first(p->pool);
		p->bits = p->map[p->w];
	}
}

/*
 * The lowest free page, taken within a run after kvp_pop_fill(); the
 * caller has checked that enough pages are free, takes them off
 * &kvp_pool.free_pages, and sets the page's record before anything else
 * looks at it: the page is off the free map and its record still says
 * free.
 */
static inline u32 kvp_pop_next(struct kvp_popper *p)
{
	u32 id;

	id = p->w * 64 + (u32)__ffs64(p->bits);
	p->bits &= p->bits - 1;
	if (unlikely(!p->bits)) {
		p->map[p->w] = 0;
		kvp_map_unmark(p->pool, p->w);
	}
	return id;
}

/*
 * All 64 pages of the current word, which the caller knows are free:
 * returns the first id, the other 63 follow it.
 */
static inline u32 kvp_pop_word(struct kvp_popper *p)
{
	p->bits = 0;
	p->map[p->w] = 0;
	kvp_map_unmark(p->pool, p->w);
	return p->w * 64;
}

static inline void kvp_pop_end(struct kvp_popper *p)
{
	p->map[p->w] = p->bits;
	p->pool->map_lo = p->w;
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

/*
 * Tokens at a row's start that may hold pages not its own (borrowed
 * cache pages) or holes (freed behind its window): past them, every
 * entry is a page the row owns.
 */
static inline u32 kvp_row_prefix(const struct kvp_row *r)
{
	return r->protected > r->swa_evicted ? r->protected : r->swa_evicted;
}

/* kvp_pool.c */
void kvp_pinned(struct kvp_client *c, int d);
void kvp_pin(struct kvp_client *c, u32 id);
void kvp_row_move(struct kvp_pool *pool, struct kvp_row *r,
		  enum kvp_row_state state, struct kvp_client *owner);
void kvp_row_own(struct kvp_pool *pool, struct kvp_row *r, int n);
void kvp_row_take(struct kvp_pool *pool, struct kvp_row *r, int n);
void kvp_held_take(struct kvp_client *c, int n);
u32 kvp_row_free(struct kvp_pool *pool, struct kvp_row *r);
u32 kvp_row_free_tail(struct kvp_pool *pool, struct kvp_row *r, u32 keep,
		      u32 budget, struct kvp_quarantine *q, u32 *freed);
u32 kvp_row_free_quarantine(struct kvp_pool *pool, struct kvp_row *r,
			    struct kvp_quarantine *q);
int kvp_row_reserve(struct kvp_pool *pool, struct kvp_row *r, u32 want);
u32 kvp_row_cap_for(const struct kvp_row *r, u32 want);
void kvp_row_install(struct kvp_pool *pool, struct kvp_row *r, u32 *pages,
		     u32 cap);
int kvp_lookup_batch(struct kvp_client *c, const void *entries,
		     size_t stride, u32 count, u32 *error_index);
void kvp_rows_busy(struct kvp_client *c, const void *entries, size_t stride,
		   u32 count);
u32 kvp_slot_bucket(u64 session);
struct kvp_row *kvp_slot_find(struct kvp_client *c, u64 session,
			      u32 **link);
u32 kvp_slot_free(struct kvp_pool *pool, struct kvp_row *r, u32 *link,
		  struct kvp_quarantine *q);

/*
 * An op started by one of the _start_locked() functions, done in one
 * hold: for the core's users that never drop the lock between steps.
 */
static inline int kvp_op_all(int ret, struct kvp_op *op)
{
	while (!ret && kvp_op_step_locked(op))
		;
	return ret;
}

/* kvp_cache.c */
int kvp_cache_reserve(struct kvp_client *c, u32 more);
void kvp_cache_unlink(struct kvp_client *c, u32 id);
void kvp_cache_free(struct kvp_client *c, u32 id);
u32 kvp_donate_count(struct kvp_pool *pool, struct kvp_row *r,
		     u32 upto);
u32 kvp_row_donate(struct kvp_client *c, struct kvp_row *r, u32 upto);
u32 kvp_donate_some(struct kvp_client *c, struct kvp_row *r, u32 upto,
		    u32 budget);
bool kvp_donate_step(struct kvp_op *op);

/* kvp_tenant.c */
u32 kvp_available(struct kvp_pool *pool, const struct kvp_tenant *t);
void kvp_charge(struct kvp_pool *pool, struct kvp_tenant *t,
		int delta);
struct kvp_tenant *kvp_tenant_find(struct kvp_pool *pool,
				   u64 cgroup_id, u32 uid);
struct kvp_tenant *kvp_path_find(struct kvp_pool *pool, const char *path,
				 u32 len, u32 uid, bool any);
struct kvp_tenant *kvp_tenant_match(struct kvp_pool *pool, u64 cgroup_id,
				    u32 uid, const char *path);
int kvp_tenant_get(struct kvp_pool *pool, u64 cgroup_id, u32 uid,
		   struct kvp_tenant **out);
void kvp_tenant_put(struct kvp_pool *pool, struct kvp_tenant *t);
void kvp_refused(struct kvp_pool *pool, struct kvp_tenant *t,
		 bool pages, int err);

#endif /* _KVP_PRIV_H */
