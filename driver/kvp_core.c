// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: the page pool and the row ownership state machine.
 *
 * Pages move between owners (the free stack, a row held by a request, a row
 * parked in a session slot) and never exist twice; rows move between the
 * free stack, a client's requests and a client's slots. Every operation
 * validates the whole request against the current state first and only
 * then applies it, so an error leaves the pool exactly as it was. See
 * docs/design.md for the model and kvp_core.h for the locking rule.
 */
#include "kvp_core.h"

#define KVP_ROW_MIN_CAP	16U

int kvp_geom_check(u32 flags, u32 nr_pages, u32 page_tokens,
		   u32 nr_rows, u32 row_tokens)
{
	u32 reserved = (flags & KVPOOL_CREATE_RESERVE_ZERO) ? 1 : 0;

	if (flags & ~KVPOOL_CREATE_RESERVE_ZERO)
		return -EOPNOTSUPP;
	if (nr_pages <= reserved || nr_pages > KVP_MAX_PAGES)
		return -EINVAL;
	if (!page_tokens || page_tokens > KVP_MAX_PAGE_TOKENS)
		return -EINVAL;
	if (nr_rows <= reserved || nr_rows > KVP_MAX_ROWS)
		return -EINVAL;
	if (!row_tokens || row_tokens > KVP_MAX_ROW_TOKENS)
		return -EINVAL;
	return 0;
}

static void kvp_page_push(struct kvp_pool *pool, u32 id)
{
	pool->pages[id].owner = KVP_OWNER_FREE;
	pool->pages[id].next = pool->free_head;
	pool->free_head = id;
	pool->free_pages++;
}

/* The caller has checked that enough pages are free. */
static u32 kvp_page_pop(struct kvp_pool *pool, u32 owner)
{
	u32 id = pool->free_head;

	pool->free_head = pool->pages[id].next;
	pool->pages[id].next = KVP_NIL;
	pool->pages[id].owner = owner;
	pool->free_pages--;
	return id;
}

/* Puts free row @idx on the free row stack; kvp_row_move() counts it. */
static void kvp_row_push(struct kvp_pool *pool, u32 idx)
{
	pool->rows[idx].next = pool->free_row_head;
	pool->free_row_head = idx;
}

int kvp_pool_init(struct kvp_pool *pool, u32 id, u32 flags, u32 nr_pages,
		  u32 page_tokens, u32 nr_rows, u32 row_tokens)
{
	u32 first = (flags & KVPOOL_CREATE_RESERVE_ZERO) ? 1 : 0;
	u32 i;
	int ret;

	ret = kvp_geom_check(flags, nr_pages, page_tokens, nr_rows, row_tokens);
	if (ret)
		return ret;

	memset(pool, 0, sizeof(*pool));
	/* An administrator's too-large pool is an ENOMEM, not a splat. */
	pool->pages = kvcalloc(nr_pages, sizeof(*pool->pages),
			       GFP_KERNEL | __GFP_NOWARN);
	if (!pool->pages)
		return -ENOMEM;
	pool->rows = kvcalloc(nr_rows, sizeof(*pool->rows),
			      GFP_KERNEL | __GFP_NOWARN);
	if (!pool->rows) {
		kvfree(pool->pages);
		pool->pages = NULL;
		return -ENOMEM;
	}
	mutex_init(&pool->lock);
	xa_init_flags(&pool->clients, XA_FLAGS_ALLOC);
	xa_init_flags(&pool->tenants, XA_FLAGS_ALLOC);
	pool->id = id;
	pool->flags = flags;
	pool->nr_pages = nr_pages;
	pool->page_tokens = page_tokens;
	pool->nr_rows = nr_rows;
	pool->row_tokens = row_tokens;
	pool->max_batch = nr_rows < KVP_MAX_BATCH ? nr_rows : KVP_MAX_BATCH;
	pool->free_head = KVP_NIL;
	pool->free_row_head = KVP_NIL;
	pool->blocked_tenant = KVP_NIL;
	pool->low_wmark = nr_pages / 32;
	pool->high_wmark = nr_pages / 16;

	/* Pushed from the top so that the lowest ids are handed out first. */
	for (i = nr_pages; i-- > first; )
		kvp_page_push(pool, i);
	for (i = nr_rows; i-- > first; )
		kvp_row_push(pool, i);
	pool->free_rows = nr_rows - first;
	if (first) {
		pool->pages[0].owner = KVP_OWNER_RESERVED;
		pool->pages[0].next = KVP_NIL;
		pool->reserved_pages = 1;
		pool->rows[0].state = KVP_ROW_RESERVED;
		pool->rows[0].next = KVP_NIL;
		pool->reserved_rows = 1;
	}
	return 0;
}

void kvp_pool_fini(struct kvp_pool *pool)
{
	struct kvp_tenant *t;
	unsigned long id;
	u32 i;

	/* Rows can only be held by clients, and clients pin the pool. */
	for (i = 0; i < pool->nr_rows; i++)
		kvfree(pool->rows[i].pages);
	xa_for_each(&pool->tenants, id, t)
		kvfree(t);	/* configured, client-less */
	xa_destroy(&pool->tenants);
	xa_destroy(&pool->clients);
	kvfree(pool->rows);
	kvfree(pool->pages);
	mutex_destroy(&pool->lock);
	pool->rows = NULL;
	pool->pages = NULL;
}

/*
 * Pollers should look at their ask again. Written under the pool lock and
 * read without it by the driver (before and after an op, to decide on a
 * wake-up), hence the _ONCE accesses.
 */
static void kvp_pressure_changed(struct kvp_pool *pool)
{
	WRITE_ONCE(pool->pressure_seq, pool->pressure_seq + 1);
}

static u32 kvp_unmet(const struct kvp_tenant *t)
{
	return t->min_pages > t->pages ? t->min_pages - t->pages : 0;
}

/* Pages @t may take: free ones less what others are guaranteed. */
static u32 kvp_available(struct kvp_pool *pool, const struct kvp_tenant *t)
{
	u32 others = pool->unmet - kvp_unmet(t);

	return pool->free_pages > others ? pool->free_pages - others : 0;
}

/* Charges @delta pages (may be negative) to @t; keeps pool->unmet. */
static void kvp_charge(struct kvp_pool *pool, struct kvp_tenant *t,
		       int delta)
{
	pool->unmet -= kvp_unmet(t);
	t->pages += delta;
	pool->unmet += kvp_unmet(t);
	if (pool->blocked_tenant == t->id && !kvp_unmet(t))
		pool->blocked_tenant = KVP_NIL;
	/*
	 * Growth can raise the ask of @t's clients: above its guarantee
	 * while another tenant waits below its own, or over its limit.
	 * Watermark crossings are the caller's to report.
	 */
	if (delta > 0 &&
	    ((pool->blocked_tenant != KVP_NIL && pool->blocked_tenant != t->id &&
	      t->pages > t->min_pages) ||
	     (t->max_pages && t->pages > t->max_pages)))
		kvp_pressure_changed(pool);
}

static struct hlist_head *kvp_tenant_bucket(struct kvp_pool *pool,
					    u64 cgroup_id, u32 uid)
{
	return &pool->tenant_hash[hash_64(cgroup_id ^ ((u64)uid << 32),
					  KVP_TENANT_HASH_BITS)];
}

static struct kvp_tenant *kvp_tenant_find(struct kvp_pool *pool,
					  u64 cgroup_id, u32 uid)
{
	struct kvp_tenant *t;

	hlist_for_each_entry(t, kvp_tenant_bucket(pool, cgroup_id, uid), hash)
		if (t->cgroup_id == cgroup_id && t->uid == uid)
			return t;
	return NULL;
}

static int kvp_tenant_get(struct kvp_pool *pool, u64 cgroup_id, u32 uid,
			  struct kvp_tenant **out)
{
	struct kvp_tenant *t = kvp_tenant_find(pool, cgroup_id, uid);
	int ret;

	if (t) {
		*out = t;
		return 0;
	}
	if (pool->nr_tenants >= KVP_MAX_TENANTS)
		return -EMFILE;
	t = kvcalloc(1, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ret = xa_alloc(&pool->tenants, &t->id, t,
		       XA_LIMIT(0, KVP_MAX_TENANTS - 1), GFP_KERNEL);
	if (ret) {
		kvfree(t);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	t->cgroup_id = cgroup_id;
	t->uid = uid;
	INIT_LIST_HEAD(&t->clients);
	hlist_add_head(&t->hash, kvp_tenant_bucket(pool, cgroup_id, uid));
	pool->nr_tenants++;
	*out = t;
	return 0;
}

/* Forgets @t once nothing refers to it. */
static void kvp_tenant_put(struct kvp_pool *pool, struct kvp_tenant *t)
{
	/* No client of it is waiting for pages any more. */
	if (!t->nr_clients && pool->blocked_tenant == t->id)
		pool->blocked_tenant = KVP_NIL;
	if (t->nr_clients || t->configured)
		return;
	hlist_del(&t->hash);
	xa_erase(&pool->tenants, t->id);
	pool->nr_tenants--;
	kvfree(t);
}

int kvp_client_attach_tenant_locked(struct kvp_pool *pool,
				    struct kvp_client *c, u64 cgroup_id,
				    u32 uid)
{
	struct kvp_tenant *t;
	u32 i, cidx;
	int ret;

	lockdep_assert_held(&pool->lock);
	if (pool->nr_clients >= KVP_MAX_CLIENTS)
		return -EMFILE;
	ret = xa_alloc(&pool->clients, &cidx, c,
		       XA_LIMIT(0, KVP_MAX_CLIENTS - 1), GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -EMFILE : ret;
	ret = kvp_tenant_get(pool, cgroup_id, uid, &t);
	if (ret) {
		xa_erase(&pool->clients, cidx);
		return ret;
	}

	memset(c, 0, sizeof(*c));
	c->pool = pool;
	c->id = ++pool->next_client_id;
	c->tenant = t;
	list_add_tail(&c->tenant_link, &t->clients);
	t->nr_clients++;
	for (i = 0; i < KVP_SLOT_BUCKETS; i++)
		c->slot_head[i] = KVP_NIL;
	c->held_head = KVP_NIL;
	c->cidx = cidx;
	pool->nr_clients++;
	return 0;
}

int kvp_client_attach_locked(struct kvp_pool *pool, struct kvp_client *c)
{
	return kvp_client_attach_tenant_locked(pool, c, 0, 0);
}

static bool kvp_is_cache(u32 owner)
{
	return (owner & KVP_OWNER_CACHE) && owner < KVP_OWNER_RESERVED;
}

/* The client whose cache page @id is. */
static struct kvp_client *kvp_cache_client(struct kvp_pool *pool,
					   u32 id)
{
	return xa_load(&pool->clients, pool->pages[id].owner & ~KVP_OWNER_CACHE);
}

/* The cache entry of page @id, which the caller knows is a cache page. */
static struct kvp_cache_ent *kvp_cache_ent(struct kvp_pool *pool,
					   u32 id)
{
	return &kvp_cache_client(pool, id)->cache[pool->pages[id].next];
}

/* Counts a cache page of @c going from unpinned to pinned (@d = 1) or back. */
static void kvp_pinned(struct kvp_client *c, int d)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_tenant *t = c->tenant;

	c->nr_cache_pinned += d;
	t->cache_pinned += d;
	pool->cache_pinned += d;
	pool->cache_evictable -= d;
	/* Under pressure, a page @c could give back makes its ask grow. */
	if (d < 0 && (pool->free_pages < pool->low_wmark ||
		      pool->blocked_tenant != KVP_NIL ||
		      (t->max_pages && t->pages > t->max_pages)))
		kvp_pressure_changed(pool);
}

static void kvp_pin(struct kvp_pool *pool, u32 id)
{
	if (!kvp_cache_ent(pool, id)->pins++)
		kvp_pinned(kvp_cache_client(pool, id), 1);
}

static void kvp_unpin(struct kvp_pool *pool, u32 id)
{
	if (!--kvp_cache_ent(pool, id)->pins)
		kvp_pinned(kvp_cache_client(pool, id), -1);
}

/* Room for @more pages in @c's cache: the one allocation a donate makes. */
static int kvp_cache_reserve(struct kvp_client *c, u32 more)
{
	u32 want = c->nr_cache_pages + more;
	u32 cap = c->cache_cap ? c->cache_cap : 64;
	struct kvp_cache_ent *ents;

	if (want <= c->cache_cap)
		return 0;
	while (cap < want)
		cap *= 2;
	ents = kvmalloc_array(cap, sizeof(*ents), GFP_KERNEL_ACCOUNT);
	if (!ents)
		return -ENOMEM;
	if (c->nr_cache_pages)
		memcpy(ents, c->cache, c->nr_cache_pages * sizeof(*ents));
	kvfree(c->cache);
	c->cache = ents;
	c->cache_cap = cap;
	return 0;
}

/* Moves page @id, owned by a row of @c, into @c's cache, pinned once. */
static void kvp_cache_add(struct kvp_client *c, u32 id)
{
	struct kvp_pool *pool = c->pool;
	u32 n = c->nr_cache_pages++;

	c->cache[n].page = id;
	c->cache[n].pins = 1;
	pool->pages[id].owner = KVP_OWNER_CACHE | c->cidx;
	pool->pages[id].next = n;
	pool->cache_pinned++;
	c->nr_cache_pinned++;
	c->tenant->cache_pages++;
	c->tenant->cache_pinned++;
}

/* Takes cache page @id out of @c's cache array; its owner is the caller's. */
static void kvp_cache_unlink(struct kvp_client *c, u32 id)
{
	struct kvp_pool *pool = c->pool;
	u32 n = pool->pages[id].next;
	u32 last = --c->nr_cache_pages;

	if (c->cache[n].pins)
		kvp_pinned(c, -1);
	pool->cache_evictable--;
	c->tenant->cache_pages--;
	if (n != last) {
		c->cache[n] = c->cache[last];
		pool->pages[c->cache[n].page].next = n;
	}
}

/* Frees unpinned cache page @id of @c. */
static void kvp_cache_free(struct kvp_client *c, u32 id)
{
	kvp_cache_unlink(c, id);
	kvp_page_push(c->pool, id);
	kvp_charge(c->pool, c->tenant, -1);
}

static u32 kvp_slot_bucket(u64 session)
{
	/* Fibonacci hashing: the top bits of a golden-ratio product. */
	return (u32)((session * 0x9e3779b97f4a7c15ULL) >> 58);
}

static struct kvp_row *kvp_slot_find(struct kvp_client *c, u64 session,
				     u32 **link)
{
	struct kvp_pool *pool = c->pool;
	u32 *pos = &c->slot_head[kvp_slot_bucket(session)];

	while (*pos != KVP_NIL) {
		struct kvp_row *r = &pool->rows[*pos];

		if (r->session == session) {
			if (link)
				*link = pos;
			return r;
		}
		pos = &r->next;
	}
	return NULL;
}

/* The generation a row's next taker gets; 0 is never issued. */
static u32 kvp_next_gen(u32 gen)
{
	return gen + 1 ? gen + 1 : 1;
}

static u32 kvp_row_index(const struct kvp_pool *pool,
			 const struct kvp_row *r)
{
	return (u32)(r - pool->rows);
}

/* @r becomes one of the rows @c holds. */
static void kvp_held_link(struct kvp_client *c, struct kvp_row *r)
{
	struct kvp_pool *pool = c->pool;
	u32 idx = kvp_row_index(pool, r);

	r->prev = KVP_NIL;
	r->next = c->held_head;
	if (c->held_head != KVP_NIL)
		pool->rows[c->held_head].prev = idx;
	c->held_head = idx;
}

/* @r stops being held by @c (its owner); next and prev are free again. */
static void kvp_held_unlink(struct kvp_client *c, struct kvp_row *r)
{
	struct kvp_pool *pool = c->pool;

	if (r->prev != KVP_NIL)
		pool->rows[r->prev].next = r->next;
	else
		c->held_head = r->next;
	if (r->next != KVP_NIL)
		pool->rows[r->next].prev = r->prev;
	r->next = KVP_NIL;
	r->prev = KVP_NIL;
}

/*
 * Adds @r (@d = 1) to, or takes it (@d = -1) out of, the counters of its
 * state: the pool's rows and pages in that state and, for a row a client
 * holds or parks, the client's. Every row is in exactly one state's row
 * count and its owned pages in that state's page count; these are the
 * identities kvp_verify_locked() checks.
 */
static void kvp_row_count(struct kvp_pool *pool, struct kvp_row *r, int d)
{
	struct kvp_client *c = r->owner;
	int pages = d * (int)r->owned;

	switch (r->state) {
	case KVP_ROW_FREE:
		pool->free_rows += d;
		return;
	case KVP_ROW_RESERVED:
		pool->reserved_rows += d;
		return;
	case KVP_ROW_EXPORTED:
		pool->export_rows += d;
		pool->export_pages += pages;
		return;
	case KVP_ROW_HELD:
		pool->held_rows += d;
		pool->row_pages += pages;
		c->nr_rows += d;
		break;
	case KVP_ROW_SLOT:
		pool->slot_rows += d;
		pool->slot_pages += pages;
		c->nr_slots += d;
		break;
	}
	c->nr_pages += pages;
}

static struct kvp_tenant *kvp_row_tenant(const struct kvp_row *r)
{
	return r->owner ? r->owner->tenant : NULL;
}

/*
 * The one place a row changes state or owner. Moves its counts from the
 * old state to the new, its place on the owner's held list, and, when the
 * tenant changes, its row and its owned pages from one tenant's charge to
 * the other's. The caller links or unlinks slot chains.
 */
static void kvp_row_move(struct kvp_pool *pool, struct kvp_row *r,
			 enum kvp_row_state state, struct kvp_client *owner)
{
	struct kvp_tenant *from = kvp_row_tenant(r);
	struct kvp_tenant *to = owner ? owner->tenant : NULL;

	if (r->state == KVP_ROW_HELD)
		kvp_held_unlink(r->owner, r);
	kvp_row_count(pool, r, -1);
	r->state = state;
	r->owner = owner;
	kvp_row_count(pool, r, 1);
	if (state == KVP_ROW_HELD)
		kvp_held_link(owner, r);
	if (from == to)
		return;
	if (from) {
		from->rows--;
		kvp_charge(pool, from, -(int)r->owned);
	}
	if (to) {
		to->rows++;
		kvp_charge(pool, to, r->owned);
	}
}

/*
 * @r owns @n more pages (fewer, for a negative @n) that stay with its
 * tenant: pages moving between the row and its client's prefix cache.
 */
static void kvp_row_own(struct kvp_pool *pool, struct kvp_row *r, int n)
{
	kvp_row_count(pool, r, -1);
	r->owned += n;
	kvp_row_count(pool, r, 1);
}

/*
 * @r owns @n more pages (fewer, for a negative @n) taken from (given back
 * to) the free stack: its tenant, if it has one, is charged for them.
 */
static void kvp_row_take(struct kvp_pool *pool, struct kvp_row *r, int n)
{
	kvp_row_own(pool, r, n);
	if (r->owner)
		kvp_charge(pool, r->owner->tenant, n);
}

/*
 * Frees every page @r owns and its page array and makes the row free: its
 * record zeroed but for @gen, on the free row stack. Returns the pages
 * freed. Slot chains are the caller's to unlink first.
 */
static u32 kvp_row_free(struct kvp_pool *pool, struct kvp_row *r)
{
	u32 idx = kvp_row_index(pool, r);
	u32 freed = 0;
	u32 i;

	for (i = 0; i < r->nr; i++) {
		u32 id = r->pages[i];

		if (id == KVPOOL_PAGE_NONE)
			continue;
		if (pool->pages[id].owner == idx) {
			kvp_page_push(pool, id);
			freed++;
		} else {
			kvp_unpin(pool, id);	/* borrowed from a cache */
		}
	}
	kvp_row_take(pool, r, -(int)freed);
	kvp_row_move(pool, r, KVP_ROW_FREE, NULL);
	kvfree(r->pages);
	r->pages = NULL;
	r->nr = 0;
	r->cap = 0;
	r->allocated = 0;
	r->committed = 0;
	r->protected = 0;
	r->swa_evicted = 0;
	r->session = 0;
	kvp_row_push(pool, idx);
	return freed;
}

static u32 kvp_slot_free(struct kvp_pool *pool, struct kvp_row *r, u32 *link)
{
	*link = r->next;
	return kvp_row_free(pool, r);
}

void kvp_client_detach_locked(struct kvp_client *c)
{
	struct kvp_pool *pool = c->pool;
	u32 b;

	lockdep_assert_held(&pool->lock);
	for (b = 0; b < KVP_SLOT_BUCKETS; b++)
		while (c->slot_head[b] != KVP_NIL)
			kvp_slot_free(pool, &pool->rows[c->slot_head[b]],
				      &c->slot_head[b]);
	/* O(what it holds), not O(nr_rows): any client can close at will. */
	while (c->held_head != KVP_NIL)
		kvp_row_free(pool, &pool->rows[c->held_head]);
	/* Only its own rows borrow from its cache: all unpinned by now. */
	while (c->nr_cache_pages)
		kvp_cache_free(c, c->cache[c->nr_cache_pages - 1].page);
	kvfree(c->cache);
	c->cache = NULL;
	c->cache_cap = 0;

	xa_erase(&pool->clients, c->cidx);
	list_del(&c->tenant_link);
	c->tenant->nr_clients--;
	kvp_tenant_put(pool, c->tenant);
	c->tenant = NULL;
	pool->nr_clients--;
}

void kvp_stats_locked(struct kvp_client *c, struct kvpool_stats *st)
{
	struct kvp_pool *pool = c->pool;

	lockdep_assert_held(&pool->lock);
	st->out_free_pages = pool->free_pages;
	st->out_row_pages = pool->row_pages;
	st->out_slot_pages = pool->slot_pages;
	st->out_cache_evictable = pool->cache_evictable;
	st->out_cache_pinned = pool->cache_pinned;
	st->out_reserved_pages = pool->reserved_pages;
	st->out_free_rows = pool->free_rows;
	st->out_held_rows = pool->held_rows;
	st->out_slot_rows = pool->slot_rows;
	st->out_reserved_rows = pool->reserved_rows;
	st->out_nr_clients = pool->nr_clients;
	st->out_client_rows = c->nr_rows;
	st->out_client_slots = c->nr_slots;
	st->out_client_pages = c->nr_pages;
	st->out_client_cache_pages = c->nr_cache_pages;
	st->out_export_rows = pool->export_rows;
	st->out_export_pages = pool->export_pages;
	st->out_tenant_id = c->tenant->id;
	st->out_tenant_pages = c->tenant->pages;
	st->out_tenant_rows = c->tenant->rows;
	st->out_tenant_max_pages = c->tenant->max_pages;
	st->out_tenant_min_pages = c->tenant->min_pages;
	st->out_tenant_max_rows = c->tenant->max_rows;
}

/*
 * Someone was refused: let pollers look at the pressure again. Refused
 * pages below its guarantee, @t now asks the tenants above theirs.
 */
static void kvp_refused(struct kvp_pool *pool, struct kvp_tenant *t,
			bool pages)
{
	if (pages && kvp_unmet(t))
		pool->blocked_tenant = t->id;
	kvp_pressure_changed(pool);
}

int kvp_row_alloc_locked(struct kvp_client *c, struct kvpool_handle *out,
			 u32 count, u32 *out_short)
{
	struct kvp_pool *pool = c->pool;
	u32 i;

	lockdep_assert_held(&pool->lock);
	*out_short = 0;
	if (!count || count > pool->max_batch)
		return -EINVAL;
	if (c->tenant->max_rows && c->tenant->rows + count > c->tenant->max_rows) {
		*out_short = c->tenant->rows + count - c->tenant->max_rows;
		kvp_refused(pool, c->tenant, false);
		return -EDQUOT;
	}
	if (count > pool->free_rows) {
		*out_short = count - pool->free_rows;
		kvp_refused(pool, c->tenant, false);
		return -ENOSPC;
	}
	for (i = 0; i < count; i++) {
		u32 idx = pool->free_row_head;
		struct kvp_row *r = &pool->rows[idx];

		pool->free_row_head = r->next;
		kvp_row_move(pool, r, KVP_ROW_HELD, c);
		r->gen = kvp_next_gen(r->gen);
		out[i].req_pool_idx = idx;
		out[i].generation = r->gen;
	}
	return 0;
}

/* A new epoch for marking the rows of one batch; see kvp_row_mark(). */
static void kvp_mark_begin(struct kvp_pool *pool)
{
	u32 i;

	if (++pool->mark_epoch)
		return;
	for (i = 0; i < pool->nr_rows; i++)
		pool->rows[i].mark = 0;
	pool->mark_epoch = 1;
}

/* Returns false if @r was already named in this batch. */
static bool kvp_row_mark(struct kvp_pool *pool, struct kvp_row *r)
{
	if (r->mark == pool->mark_epoch)
		return false;
	r->mark = pool->mark_epoch;
	return true;
}

static int kvp_lookup(struct kvp_client *c, const struct kvpool_handle *h,
		      struct kvp_row **out)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;

	if (h->req_pool_idx >= pool->nr_rows)
		return -ENOENT;
	r = &pool->rows[h->req_pool_idx];
	if (r->owner != c || r->state != KVP_ROW_HELD)
		return -ENOENT;
	/* A generation not issued yet names nothing; an older one is stale. */
	if (r->gen != h->generation)
		return (s32)(h->generation - r->gen) > 0 ? -ENOENT : -ESTALE;
	*out = r;
	return 0;
}

/* Looks up @count handles, refusing a row named twice. */
static int kvp_lookup_batch(struct kvp_client *c, const void *entries,
			    size_t stride, u32 count, u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 i;
	int ret;

	if (!count || count > pool->max_batch)
		return -EINVAL;
	kvp_mark_begin(pool);
	for (i = 0; i < count; i++) {
		const struct kvpool_handle *h = (const void *)
			((const char *)entries + i * stride);

		ret = kvp_lookup(c, h, &r);
		if (!ret && !kvp_row_mark(pool, r))
			ret = -EINVAL;
		if (ret) {
			*error_index = i;
			return ret;
		}
	}
	return 0;
}

static struct kvp_row *kvp_row_of(struct kvp_client *c,
				  const struct kvpool_handle *h)
{
	return &c->pool->rows[h->req_pool_idx];
}

/* Grows @r's page array to hold at least @want ids. */
static int kvp_row_reserve(struct kvp_row *r, u32 want)
{
	u32 cap = r->cap ? r->cap : KVP_ROW_MIN_CAP;
	u32 *pages;

	if (want <= r->cap)
		return 0;
	while (cap < want)
		cap = cap > U32_MAX / 2 ? want : cap * 2;
	pages = kvmalloc_array(cap, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		return -ENOMEM;
	if (r->nr)
		memcpy(pages, r->pages, r->nr * sizeof(*pages));
	kvfree(r->pages);
	r->pages = pages;
	r->cap = cap;
	return 0;
}

int kvp_extend_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
		      u32 count, u32 pages_cap, struct kvp_extend_result *res)
{
	struct kvp_pool *pool = c->pool;
	u32 free_before = pool->free_pages;
	struct kvp_tenant *t;
	u32 avail;
	u64 need = 0;
	u32 done = 0;
	u32 i, j;
	int ret;

	lockdep_assert_held(&pool->lock);
	memset(res, 0, sizeof(*res));
	res->error_index = ~0U;

	ret = kvp_lookup_batch(c, e, sizeof(*e), count, &res->error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);

		if (e[i].new_len < r->allocated ||
		    e[i].new_len > pool->row_tokens) {
			res->error_index = i;
			return -EINVAL;
		}
		need += kvp_pages_for(pool, e[i].new_len) - r->nr;
	}
	/* need <= count * 2^24 < 2^37: no overflow in u64. */
	if (need > pages_cap) {
		res->nr_pages = need > U32_MAX ? U32_MAX : (u32)need;
		return -ENOBUFS;
	}
	t = c->tenant;
	if (need && t->max_pages && t->pages + need > t->max_pages) {
		res->shortfall = (u32)(t->pages + need - t->max_pages);
		kvp_refused(pool, t, false);
		return -EDQUOT;
	}
	avail = kvp_available(pool, t);
	if (need > avail) {
		res->shortfall = (u32)(need - avail);
		kvp_refused(pool, t, true);
		return -ENOSPC;
	}

	/*
	 * Allocations come before any page moves. A row's array may keep
	 * the room it grew if a later one fails: that is capacity, not state.
	 */
	if (need) {
		res->pages = kvmalloc_array((u32)need, sizeof(u32),
					    GFP_KERNEL_ACCOUNT);
		if (!res->pages)
			return -ENOMEM;
	}
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);

		ret = kvp_row_reserve(r, kvp_pages_for(pool, e[i].new_len));
		if (ret) {
			kvfree(res->pages);
			res->pages = NULL;
			return ret;
		}
	}

	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);
		u32 idx = e[i].handle.req_pool_idx;
		u32 want = kvp_pages_for(pool, e[i].new_len);
		u32 n = want - r->nr;

		for (j = r->nr; j < want; j++) {
			u32 id = kvp_page_pop(pool, idx);

			r->pages[j] = id;
			res->pages[done++] = id;
		}
		r->nr = want;
		r->allocated = e[i].new_len;
		e[i].out_nr_new = n;
		kvp_row_take(pool, r, n);
	}
	res->nr_pages = done;
	/* Crossing the low watermark wakes pollers (see kvpool_pressure). */
	if (free_before >= pool->low_wmark && pool->free_pages < pool->low_wmark)
		kvp_pressure_changed(pool);
	return 0;
}

int kvp_commit_locked(struct kvp_client *c,
		      const struct kvpool_len_entry *e, u32 count,
		      u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*error_index = ~0U;
	ret = kvp_lookup_batch(c, e, sizeof(*e), count, error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);

		if (e[i].__reserved || e[i].len < r->committed ||
		    e[i].len > r->allocated) {
			*error_index = i;
			return -EINVAL;
		}
	}
	for (i = 0; i < count; i++)
		kvp_row_of(c, &e[i].handle)->committed = e[i].len;
	return 0;
}

int kvp_trim_locked(struct kvp_client *c, const struct kvpool_handle *h,
		    u32 count, u32 *nr_freed, u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	u32 freed = 0;
	u32 i, j;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_freed = 0;
	*error_index = ~0U;
	ret = kvp_lookup_batch(c, h, sizeof(*h), count, error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &h[i]);
		u32 idx = h[i].req_pool_idx;
		u32 keep = kvp_pages_for(pool, r->committed);
		u32 n = 0;

		/* committed >= protected, so borrowed pages are never here. */
		for (j = keep; j < r->nr; j++) {
			if (r->pages[j] == KVPOOL_PAGE_NONE ||
			    pool->pages[r->pages[j]].owner != idx)
				continue;
			kvp_page_push(pool, r->pages[j]);
			n++;
		}
		kvp_row_take(pool, r, -(int)n);
		freed += n;
		r->nr = keep;
		r->allocated = r->committed;
	}
	*nr_freed = freed;
	return 0;
}

/* Pages of @r a donate up to @upto would move: [protected, upto) whole. */
static u32 kvp_donate_count(struct kvp_pool *pool, struct kvp_row *r,
			    u32 upto)
{
	u32 end = upto / pool->page_tokens;
	u32 n = 0;
	u32 p;

	for (p = r->protected / pool->page_tokens; p < end; p++)
		n += r->pages[p] != KVPOOL_PAGE_NONE;
	return n;
}

/*
 * SWA_FREE has freed pages above the protected prefix: what is left of
 * the row's start is not a prefix any more, and a cache entry must be one
 * (ATTACH_PREFIX maps cached pages at positions 0..k). Such a row donates
 * nothing.
 */
static bool kvp_prefix_holed(const struct kvp_row *r)
{
	return r->swa_evicted > r->protected;
}

/* Moves them into @c's cache, which has room; the row borrows them now. */
static u32 kvp_row_donate(struct kvp_client *c, struct kvp_row *r, u32 upto)
{
	struct kvp_pool *pool = c->pool;
	u32 end = upto / pool->page_tokens;
	u32 n = 0;
	u32 p;

	for (p = r->protected / pool->page_tokens; p < end; p++) {
		if (r->pages[p] == KVPOOL_PAGE_NONE)
			continue;	/* freed by SWA_FREE */
		kvp_cache_add(c, r->pages[p]);
		n++;
	}
	if (end * pool->page_tokens > r->protected)
		r->protected = end * pool->page_tokens;
	kvp_row_own(pool, r, -(int)n);
	return n;
}

int kvp_release_locked(struct kvp_client *c, const struct kvpool_handle *h,
		       u32 count, u32 flags, u32 *nr_freed, u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	u32 freed = 0, donate = 0;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_freed = 0;
	*error_index = ~0U;
	if (flags & ~KVPOOL_RELEASE_DONATE)
		return -EOPNOTSUPP;
	ret = kvp_lookup_batch(c, h, sizeof(*h), count, error_index);
	if (ret)
		return ret;
	if (flags & KVPOOL_RELEASE_DONATE) {
		for (i = 0; i < count; i++) {
			struct kvp_row *r = kvp_row_of(c, &h[i]);

			if (kvp_prefix_holed(r)) {
				*error_index = i;
				return -EINVAL;
			}
			donate += kvp_donate_count(pool, r, r->committed);
		}
		ret = kvp_cache_reserve(c, donate);
		if (ret)
			return ret;
	}
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &h[i]);

		if (flags & KVPOOL_RELEASE_DONATE)
			kvp_row_donate(c, r, r->committed);
		freed += kvp_row_free(pool, r);
	}
	*nr_freed = freed;
	return 0;
}

int kvp_donate_locked(struct kvp_client *c,
		      const struct kvpool_len_entry *e, u32 count,
		      u32 *nr_donated, u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	u32 total = 0, done = 0;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_donated = 0;
	*error_index = ~0U;
	ret = kvp_lookup_batch(c, e, sizeof(*e), count, error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);

		if (e[i].__reserved || e[i].len > r->committed ||
		    kvp_prefix_holed(r))
			ret = -EINVAL;
		else if (e[i].len <= r->protected)
			ret = -EALREADY;
		if (ret) {
			*error_index = i;
			return ret;
		}
		total += kvp_donate_count(pool, r, e[i].len);
	}
	ret = kvp_cache_reserve(c, total);
	if (ret)
		return ret;
	for (i = 0; i < count; i++)
		done += kvp_row_donate(c, kvp_row_of(c, &e[i].handle),
				       e[i].len);
	*nr_donated = done;
	return 0;
}

int kvp_swa_free_locked(struct kvp_client *c,
			const struct kvpool_len_entry *e, u32 count,
			u32 *nr_freed, u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	u32 pt = pool->page_tokens;
	u32 freed = 0;
	u32 i, p;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_freed = 0;
	*error_index = ~0U;
	ret = kvp_lookup_batch(c, e, sizeof(*e), count, error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);

		if (e[i].__reserved || e[i].len > r->committed ||
		    e[i].len < r->protected || e[i].len < r->swa_evicted) {
			*error_index = i;
			return -EINVAL;
		}
	}
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);
		u32 start = (r->protected > r->swa_evicted ? r->protected :
			     r->swa_evicted) / pt;
		u32 end = e[i].len / pt;
		u32 n = 0;

		/* protected and swa_evicted are whole pages: all owned here. */
		for (p = start; p < end; p++) {
			if (r->pages[p] == KVPOOL_PAGE_NONE)
				continue;
			kvp_page_push(pool, r->pages[p]);
			r->pages[p] = KVPOOL_PAGE_NONE;
			n++;
		}
		if (end * pt > r->swa_evicted)
			r->swa_evicted = end * pt;
		kvp_row_take(pool, r, -(int)n);
		freed += n;
	}
	*nr_freed = freed;
	return 0;
}

/*
 * Set in a cache entry's pins while a batch that names it is validated, so
 * a page named twice is seen; pins never get near it (rows < 2^20).
 */
#define KVP_PIN_MARK	0x80000000U

/*
 * Checks that @pages are @c's cache pages, each named once and, with
 * @unpinned, borrowed by no row. Each is marked while the batch is checked
 * and all are unmarked before returning; *@bad is the first bad entry.
 */
static int kvp_cache_check(struct kvp_client *c, const u32 *pages, u32 n,
			   bool unpinned, u32 *bad)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_cache_ent *ent;
	int ret = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		if (pages[i] >= pool->nr_pages ||
		    pool->pages[pages[i]].owner != (KVP_OWNER_CACHE | c->cidx)) {
			ret = -ENOENT;
			break;
		}
		ent = kvp_cache_ent(pool, pages[i]);
		if (ent->pins & KVP_PIN_MARK) {
			ret = -EINVAL;
			break;
		}
		if (unpinned && ent->pins) {
			ret = -EBUSY;
			break;
		}
		ent->pins |= KVP_PIN_MARK;
	}
	*bad = i;
	while (i--)
		kvp_cache_ent(pool, pages[i])->pins &= ~KVP_PIN_MARK;
	return ret;
}

int kvp_attach_prefix_locked(struct kvp_client *c,
			     const struct kvpool_handle *h,
			     const u32 *pages, u32 nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 i, bad;
	int ret;

	lockdep_assert_held(&pool->lock);
	ret = kvp_lookup(c, h, &r);
	if (ret)
		return ret;
	if (r->allocated || !nr_pages ||
	    (u64)nr_pages * pool->page_tokens > pool->row_tokens)
		return -EINVAL;
	ret = kvp_cache_check(c, pages, nr_pages, false, &bad);
	if (ret)
		return ret;
	ret = kvp_row_reserve(r, nr_pages);
	if (ret)
		return ret;

	for (i = 0; i < nr_pages; i++) {
		kvp_pin(pool, pages[i]);
		r->pages[i] = pages[i];
	}
	r->nr = nr_pages;
	r->allocated = nr_pages * pool->page_tokens;
	r->committed = r->allocated;
	r->protected = r->allocated;
	return 0;
}

int kvp_cache_evict_locked(struct kvp_client *c, const u32 *pages,
			   u32 count, u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*error_index = ~0U;
	if (!count || count > pool->max_batch)
		return -EINVAL;
	ret = kvp_cache_check(c, pages, count, true, &i);
	if (ret) {
		*error_index = i;
		return ret;
	}
	for (i = 0; i < count; i++)
		kvp_cache_free(c, pages[i]);
	return 0;
}

int kvp_to_slot_locked(struct kvp_client *c, const struct kvpool_handle *h,
		       u64 session, u32 *nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 b;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_pages = 0;
	ret = kvp_lookup(c, h, &r);
	if (ret)
		return ret;
	if (kvp_slot_find(c, session, NULL))
		return -EEXIST;

	kvp_row_move(pool, r, KVP_ROW_SLOT, c);
	r->session = session;
	b = kvp_slot_bucket(session);
	r->next = c->slot_head[b];
	c->slot_head[b] = h->req_pool_idx;
	*nr_pages = r->owned;
	return 0;
}

int kvp_from_slot_peek_locked(struct kvp_client *c, u64 session,
			      struct kvpool_handle *out, u32 *nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 *link;

	lockdep_assert_held(&pool->lock);
	*nr_pages = 0;
	r = kvp_slot_find(c, session, &link);
	if (!r)
		return -ENOENT;
	out->req_pool_idx = kvp_row_index(pool, r);
	out->generation = kvp_next_gen(r->gen);
	*nr_pages = r->owned;
	return 0;
}

int kvp_from_slot_locked(struct kvp_client *c, u64 session,
			 struct kvpool_handle *out, u32 *nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 *link;

	lockdep_assert_held(&pool->lock);
	*nr_pages = 0;
	r = kvp_slot_find(c, session, &link);
	if (!r)
		return -ENOENT;

	*link = r->next;
	r->session = 0;
	kvp_row_move(pool, r, KVP_ROW_HELD, c);
	r->gen = kvp_next_gen(r->gen);
	out->req_pool_idx = kvp_row_index(pool, r);
	out->generation = r->gen;
	*nr_pages = r->owned;
	return 0;
}

int kvp_slot_release_locked(struct kvp_client *c, u64 session,
			    u32 *nr_freed)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 *link;

	lockdep_assert_held(&pool->lock);
	*nr_freed = 0;
	r = kvp_slot_find(c, session, &link);
	if (!r)
		return -ENOENT;
	*nr_freed = kvp_slot_free(pool, r, link);
	return 0;
}

int kvp_row_query_locked(struct kvp_client *c, struct kvpool_row_query *q,
			 u32 **pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r;
	u32 n;
	int ret;

	lockdep_assert_held(&pool->lock);
	if (pages)
		*pages = NULL;
	if (q->flags & KVPOOL_QUERY_BY_SLOT) {
		r = kvp_slot_find(c, q->session_id, NULL);
		if (!r)
			return -ENOENT;
	} else {
		ret = kvp_lookup(c, &q->handle, &r);
		if (ret)
			return ret;
	}

	n = r->nr < q->pages_cap ? r->nr : q->pages_cap;
	if (pages && n) {
		*pages = kvmalloc_array(n, sizeof(u32), GFP_KERNEL_ACCOUNT);
		if (!*pages)
			return -ENOMEM;
		memcpy(*pages, r->pages, n * sizeof(u32));
	}
	q->out_state = r->state;
	q->out_nr_pages = r->nr;
	q->out_req_pool_idx = kvp_row_index(pool, r);
	q->out_allocated_len = r->allocated;
	q->out_committed_len = r->committed;
	q->out_protected_len = r->protected;
	q->out_swa_evicted_len = r->swa_evicted;
	return 0;
}

int kvp_tenant_set_locked(struct kvp_pool *pool, struct kvpool_ctl_tenant *a)
{
	struct kvp_tenant *t;
	u64 sum_min;
	int ret;

	lockdep_assert_held(&pool->lock);
	if (a->flags & ~KVPOOL_TENANT_BY_ID)
		return -EOPNOTSUPP;
	if (a->__reserved || a->__reserved2 ||
	    !memchr(a->label, 0, sizeof(a->label)) ||
	    (a->max_pages && a->min_pages > a->max_pages))
		return -EINVAL;
	if (a->flags & KVPOOL_TENANT_BY_ID) {
		t = xa_load(&pool->tenants, a->tenant_id);
		if (!t)
			return -ENOENT;
	} else {
		t = kvp_tenant_find(pool, a->cgroup_id, a->uid);
	}
	/* Guarantees together must fit the pool, or they mean nothing. */
	sum_min = pool->sum_min - (t ? t->min_pages : 0) + a->min_pages;
	if (sum_min > pool->nr_pages - pool->reserved_pages)
		return -EINVAL;
	if (!t) {
		ret = kvp_tenant_get(pool, a->cgroup_id, a->uid, &t);
		if (ret)
			return ret;
	}

	pool->sum_min = sum_min;
	pool->unmet -= kvp_unmet(t);
	t->max_pages = a->max_pages;
	t->min_pages = a->min_pages;
	t->max_rows = a->max_rows;
	t->configured = true;
	pool->unmet += kvp_unmet(t);
	if (a->label[0])
		memcpy(t->label, a->label, sizeof(t->label));
	if (pool->blocked_tenant == t->id && !kvp_unmet(t))
		pool->blocked_tenant = KVP_NIL;
	kvp_pressure_changed(pool);
	a->tenant_id = t->id;
	a->cgroup_id = t->cgroup_id;
	a->uid = t->uid;
	memcpy(a->label, t->label, sizeof(a->label));
	return 0;
}

int kvp_set_wmark_locked(struct kvp_pool *pool, u32 low, u32 high)
{
	lockdep_assert_held(&pool->lock);
	if (high < low || high > pool->nr_pages)
		return -EINVAL;
	pool->low_wmark = low;
	pool->high_wmark = high;
	kvp_pressure_changed(pool);
	return 0;
}

/* ceil(a * b / c), for asking each client its share of @a. */
static u32 kvp_share(u32 a, u32 b, u32 c)
{
	return c ? (u32)(((u64)a * b + c - 1) / c) : 0;
}

/*
 * The policy (docs/design.md): a client is asked to evict cache pages,
 * never more than its unpinned ones, in proportion to them, when
 *  - free pages are below low_wmark: its share of (high_wmark - free);
 *  - its tenant is over max_pages: its share of the excess within the
 *    tenant;
 *  - a tenant was refused below its guarantee and this client's tenant is
 *    above its own: its share of that tenant's unmet guarantee among the
 *    tenants above theirs.
 * The largest of these is asked.
 */
u32 kvp_pressure_locked(struct kvp_client *c, u32 *reasons)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_tenant *t = c->tenant;
	u32 mine = c->nr_cache_pages - c->nr_cache_pinned;
	u32 ask = 0, want;

	lockdep_assert_held(&pool->lock);
	*reasons = 0;
	if (!mine)
		return 0;
	if (pool->free_pages < pool->low_wmark) {
		want = kvp_share(pool->high_wmark - pool->free_pages, mine,
				 pool->cache_evictable);
		ask = want > ask ? want : ask;
		*reasons |= KVPOOL_PRESSURE_LOW;
	}
	if (t->max_pages && t->pages > t->max_pages) {
		want = kvp_share(t->pages - t->max_pages, mine,
				 t->cache_pages - t->cache_pinned);
		ask = want > ask ? want : ask;
		*reasons |= KVPOOL_PRESSURE_OVER_MAX;
	}
	if (pool->blocked_tenant != KVP_NIL && pool->blocked_tenant != t->id &&
	    t->pages > t->min_pages) {
		struct kvp_tenant *b = xa_load(&pool->tenants,
					       pool->blocked_tenant);
		struct kvp_tenant *o;
		unsigned long id;
		u32 above = 0;

		xa_for_each(&pool->tenants, id, o)
			if (o != b && o->pages > o->min_pages)
				above += o->cache_pages - o->cache_pinned;
		want = kvp_share(kvp_unmet(b), mine, above);
		ask = want > ask ? want : ask;
		*reasons |= KVPOOL_PRESSURE_GUARANTEE;
	}
	return ask < mine ? ask : mine;
}

u32 kvp_tenant_list_locked(struct kvp_pool *pool,
			   struct kvpool_tenant_info *out, u32 count)
{
	struct kvp_tenant *t;
	struct kvp_client *c;
	unsigned long id;
	u32 n = 0, why;

	lockdep_assert_held(&pool->lock);
	/* O(tenants + clients): each client is asked once, by its tenant. */
	xa_for_each(&pool->tenants, id, t) {
		struct kvpool_tenant_info *ti;

		if (n >= count) {
			n++;
			continue;
		}
		ti = &out[n++];
		memset(ti, 0, sizeof(*ti));
		ti->tenant_id = t->id;
		ti->uid = t->uid;
		ti->cgroup_id = t->cgroup_id;
		ti->pages = t->pages;
		ti->cache_pages = t->cache_pages;
		ti->rows = t->rows;
		ti->nr_clients = t->nr_clients;
		ti->max_pages = t->max_pages;
		ti->min_pages = t->min_pages;
		ti->max_rows = t->max_rows;
		memcpy(ti->label, t->label, sizeof(ti->label));
		list_for_each_entry(c, &t->clients, tenant_link)
			ti->ask_pages += kvp_pressure_locked(c, &why);
	}
	return n;
}

/*
 * The row EXPORT would take, the pages it owns and those it borrows (which
 * would become its own); nothing changes. @link is where a slot's row
 * hangs, for the unlink.
 */
static int kvp_export_find(struct kvp_client *c, const struct kvpool_export *x,
			   struct kvp_row **out, u32 **link, u32 *owned,
			   u32 *borrowed)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r = NULL;
	u32 i, end;
	int ret;

	if (x->flags & KVPOOL_EXPORT_SLOT) {
		r = kvp_slot_find(c, x->session_id, link);
		if (!r)
			return -ENOENT;
	} else {
		ret = kvp_lookup(c, &x->handle, &r);
		if (ret)
			return ret;
	}

	/* What it borrows becomes its own: only if no other row borrows. */
	*borrowed = 0;
	end = r->protected / pool->page_tokens;
	for (i = 0; i < end; i++) {
		if (r->pages[i] == KVPOOL_PAGE_NONE)
			continue;
		if (kvp_cache_ent(pool, r->pages[i])->pins != 1)
			return -EBUSY;
		(*borrowed)++;
	}
	*out = r;
	*owned = r->owned;
	return 0;
}

int kvp_export_peek_locked(struct kvp_client *c,
			   const struct kvpool_export *x, u32 *nr_pages)
{
	struct kvp_row *r;
	u32 *link = NULL;
	u32 owned, borrowed;
	int ret;

	lockdep_assert_held(&c->pool->lock);
	*nr_pages = 0;
	ret = kvp_export_find(c, x, &r, &link, &owned, &borrowed);
	if (!ret)
		*nr_pages = owned + borrowed;
	return ret;
}

int kvp_export_locked(struct kvp_client *c, const struct kvpool_export *x,
		      u32 *idx, u32 *nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r = NULL;
	u32 *link = NULL;
	u32 i, end, owned, borrowed;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_pages = 0;
	ret = kvp_export_find(c, x, &r, &link, &owned, &borrowed);
	if (ret)
		return ret;

	/* The pages it borrows become its own; its tenant keeps them. */
	end = r->protected / pool->page_tokens;
	for (i = 0; i < end; i++) {
		u32 id = r->pages[i];

		if (id == KVPOOL_PAGE_NONE)
			continue;
		kvp_cache_unlink(c, id);
		pool->pages[id].owner = kvp_row_index(pool, r);
		pool->pages[id].next = KVP_NIL;
	}
	kvp_row_own(pool, r, borrowed);
	r->protected = 0;

	if (r->state == KVP_ROW_SLOT)
		*link = r->next;
	kvp_row_move(pool, r, KVP_ROW_EXPORTED, NULL);
	r->session = 0;
	r->next = KVP_NIL;
	*idx = kvp_row_index(pool, r);
	*nr_pages = owned + borrowed;
	return 0;
}

int kvp_import_peek_locked(struct kvp_client *c, u32 idx,
			   struct kvpool_handle *out, u32 *nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_row *r = &pool->rows[idx];

	lockdep_assert_held(&pool->lock);
	*nr_pages = 0;
	if (r->state != KVP_ROW_EXPORTED)
		return -EALREADY;
	out->req_pool_idx = idx;
	out->generation = kvp_next_gen(r->gen);
	*nr_pages = r->owned;
	return 0;
}

int kvp_import_locked(struct kvp_client *c, u32 idx,
		      struct kvpool_handle *out, u32 *nr_pages)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_tenant *t = c->tenant;
	struct kvp_row *r = &pool->rows[idx];
	u32 owned;

	lockdep_assert_held(&pool->lock);
	*nr_pages = 0;
	if (r->state != KVP_ROW_EXPORTED)
		return -EALREADY;
	owned = r->owned;
	if ((owned && t->max_pages && t->pages + owned > t->max_pages) ||
	    (t->max_rows && t->rows + 1 > t->max_rows)) {
		kvp_refused(pool, t, false);
		return -EDQUOT;
	}
	kvp_row_move(pool, r, KVP_ROW_HELD, c);
	r->gen = kvp_next_gen(r->gen);
	out->req_pool_idx = idx;
	out->generation = r->gen;
	*nr_pages = owned;
	return 0;
}

void kvp_export_drop_locked(struct kvp_pool *pool, u32 idx)
{
	struct kvp_row *r = &pool->rows[idx];

	lockdep_assert_held(&pool->lock);
	if (r->state != KVP_ROW_EXPORTED)
		return;		/* imported: the importer owns it now */
	kvp_row_free(pool, r);
}

/* Counts a violation and logs the first few. */
#define kvp_violation(pool, nbad, fmt, ...)				\
	do {								\
		if ((*(nbad))++ < KVP_REPORT_LIMIT)			\
			kvp_report(pool, fmt, ##__VA_ARGS__);		\
	} while (0)

/* What verify counts for a client, by its cidx. */
struct kvp_vclient {
	u32 rows, slots, pages;
	u32 base;	/* where its cache entries start in kvp_vstate.refs */
};

/* What verify counts for a tenant, by its id. */
struct kvp_vtenant {
	u32 rows, pages, clients;
};

/*
 * Verify's scratch memory and findings: everything it tallies lives here,
 * none of it in the structs it checks.
 */
struct kvp_vstate {
	u32 *per_row;	/* pages each row owns, by the page table */
	u8 *seen;	/* a bit per page some row maps as its own */
	u32 *refs;	/* borrowers of each cache entry */
	struct kvp_vclient *cl;		/* [nr_cl], by cidx */
	struct kvp_vtenant *tn;		/* [nr_tn], by tenant id */
	u32 nr_cl, nr_tn;		/* highest index in use, plus one */
	u32 bad;
};

/* One more than the highest index in use in @xa; 0 if it is empty. */
static u32 kvp_xa_span(struct xarray *xa)
{
	unsigned long id, last = 0;
	void *entry;

	xa_for_each(xa, id, entry)
		last = id + 1;
	return (u32)last;
}

static void kvp_vstate_free(struct kvp_vstate *vs)
{
	kvfree(vs->per_row);
	kvfree(vs->seen);
	kvfree(vs->refs);
	kvfree(vs->cl);
	kvfree(vs->tn);
}

/* The client whose cache owns page @id, or NULL if the owner is broken. */
static struct kvp_client *kvp_cache_owner(struct kvp_pool *pool, u32 id)
{
	u32 cidx = pool->pages[id].owner & ~KVP_OWNER_CACHE;
	struct kvp_client *c = xa_load(&pool->clients, cidx);

	if (!c)
		return NULL;
	if (pool->pages[id].next >= c->nr_cache_pages ||
	    c->cache[pool->pages[id].next].page != id)
		return NULL;
	return c;
}

static void kvp_verify_row(struct kvp_pool *pool, struct kvp_row *r,
			   struct kvp_vstate *vs, u32 *owned)
{
	u32 idx = kvp_row_index(pool, r);
	u32 *bad = &vs->bad;
	u32 i;

	switch (r->state) {
	case KVP_ROW_FREE:
	case KVP_ROW_RESERVED:
		if (r->owner || r->nr || r->allocated || r->committed ||
		    r->protected || r->swa_evicted || r->pages || r->owned)
			kvp_violation(pool, bad,
				      "row %u: free but not zeroed (nr %u alloc %u)",
				      idx, r->nr, r->allocated);
		return;
	case KVP_ROW_HELD:
	case KVP_ROW_SLOT:
		if (!r->owner)
			kvp_violation(pool, bad, "row %u: held by no client",
				      idx);
		break;
	case KVP_ROW_EXPORTED:
		if (r->owner || r->protected)
			kvp_violation(pool, bad,
				      "row %u: exported but owned or borrowing",
				      idx);
		break;
	default:
		kvp_violation(pool, bad, "row %u: unknown state %u",
			      idx, r->state);
		return;
	}

	if (r->committed > r->allocated || r->allocated > pool->row_tokens)
		kvp_violation(pool, bad,
			      "row %u: committed %u allocated %u row_tokens %u",
			      idx, r->committed, r->allocated, pool->row_tokens);
	if (r->protected > r->committed || r->swa_evicted > r->allocated ||
	    r->protected % pool->page_tokens ||
	    r->swa_evicted % pool->page_tokens)
		kvp_violation(pool, bad, "row %u: protected %u swa %u committed %u",
			      idx, r->protected, r->swa_evicted, r->committed);
	if (r->nr != kvp_pages_for(pool, r->allocated) || r->nr > r->cap)
		kvp_violation(pool, bad, "row %u: %u pages (room %u) for %u tokens",
			      idx, r->nr, r->cap, r->allocated);

	*owned = 0;
	for (i = 0; i < r->nr && i < r->cap; i++) {
		u32 id = r->pages[i];
		struct kvp_client *c;

		if (id == KVPOOL_PAGE_NONE) {
			if ((u64)(i + 1) * pool->page_tokens > r->swa_evicted)
				kvp_violation(pool, bad,
					      "row %u: hole at position %u", idx, i);
			continue;
		}
		if (id >= pool->nr_pages) {
			kvp_violation(pool, bad, "row %u: page %u out of range",
				      idx, id);
			continue;
		}
		if ((u64)i * pool->page_tokens < r->protected) {
			/* Borrowed: a page of its client's prefix cache. */
			c = kvp_is_cache(pool->pages[id].owner) ?
			    kvp_cache_owner(pool, id) : NULL;
			if (c && c == r->owner)
				vs->refs[vs->cl[c->cidx].base +
					 pool->pages[id].next]++;
			else
				kvp_violation(pool, bad,
					      "row %u: borrows page %u owned by %#x",
					      idx, id, pool->pages[id].owner);
			continue;
		}
		if (vs->seen[id / 8] & (1U << (id % 8)))
			kvp_violation(pool, bad,
				      "row %u: page %u mapped twice", idx, id);
		vs->seen[id / 8] |= 1U << (id % 8);
		if (pool->pages[id].owner == idx)
			(*owned)++;
		else
			kvp_violation(pool, bad,
				      "row %u: maps page %u owned by %#x",
				      idx, id, pool->pages[id].owner);
	}
}

/* The page table: owner of every page, the free stack, cache back-links. */
static void kvp_verify_pages(struct kvp_pool *pool, struct kvp_vstate *vs)
{
	u32 nfree = 0, nres = 0, ncache = 0;
	u32 *bad = &vs->bad;
	u32 i, id;

	for (i = 0; i < pool->nr_pages; i++) {
		u32 owner = pool->pages[i].owner;

		if (owner == KVP_OWNER_FREE) {
			nfree++;
		} else if (owner == KVP_OWNER_RESERVED) {
			nres++;
		} else if (owner < pool->nr_rows) {
			vs->per_row[owner]++;
		} else if (kvp_is_cache(owner) && kvp_cache_owner(pool, i)) {
			ncache++;
		} else {
			kvp_violation(pool, bad, "page %u: bad owner %#x (next %u)",
				      i, owner, pool->pages[i].next);
		}
	}

	/* The free stack holds exactly the free pages, each once. */
	for (i = 0, id = pool->free_head; id != KVP_NIL; i++) {
		if (i >= nfree || id >= pool->nr_pages ||
		    pool->pages[id].owner != KVP_OWNER_FREE) {
			kvp_violation(pool, bad,
				      "free list: entry %u is page %#x (owner %#x), %u pages free",
				      i, id, id < pool->nr_pages ?
				      pool->pages[id].owner : 0, nfree);
			i = nfree;	/* reported; skip the length check */
			break;
		}
		id = pool->pages[id].next;
	}
	if (i != nfree)
		kvp_violation(pool, bad, "free list: %u pages, %u marked free",
			      i, nfree);
	if (nfree != pool->free_pages)
		kvp_violation(pool, bad, "free pages: counted %u, kept %u",
			      nfree, pool->free_pages);
	if (nres != pool->reserved_pages)
		kvp_violation(pool, bad, "reserved pages: counted %u, kept %u",
			      nres, pool->reserved_pages);
	if ((u64)pool->cache_evictable + pool->cache_pinned != ncache)
		kvp_violation(pool, bad, "cache pages: counted %u, kept %u+%u",
			      ncache, pool->cache_evictable,
			      pool->cache_pinned);
}

/*
 * @c's list of held rows: each entry held by @c, back-linked, and as many
 * as it holds (bounded by that, so a cycle is found too).
 */
static void kvp_verify_held(struct kvp_pool *pool, struct kvp_client *c,
			    struct kvp_vstate *vs)
{
	u32 n = 0, prev = KVP_NIL, id;

	for (id = c->held_head; id != KVP_NIL; id = pool->rows[id].next) {
		struct kvp_row *r;

		if (n == c->nr_rows || id >= pool->nr_rows) {
			kvp_violation(pool, &vs->bad,
				      "client %u: held list runs past %u rows",
				      c->id, c->nr_rows);
			return;
		}
		r = &pool->rows[id];
		if (r->state != KVP_ROW_HELD || r->owner != c ||
		    r->prev != prev) {
			kvp_violation(pool, &vs->bad,
				      "client %u: held list: bad row %u",
				      c->id, id);
			return;
		}
		prev = id;
		n++;
	}
	if (n != c->nr_rows)
		kvp_violation(pool, &vs->bad,
			      "client %u: %u rows on its held list, holds %u",
			      c->id, n, c->nr_rows);
}

/* Each cache entry: its page points back, its pins are its borrowers. */
static void kvp_verify_caches(struct kvp_pool *pool, struct kvp_vstate *vs)
{
	u32 evictable = 0, pinned = 0;
	u32 *bad = &vs->bad;
	struct kvp_client *c;
	unsigned long i;
	u32 j;

	xa_for_each(&pool->clients, i, c) {
		struct kvp_vclient *vc = &vs->cl[i];

		if (vc->rows != c->nr_rows || vc->slots != c->nr_slots ||
		    vc->pages != c->nr_pages)
			kvp_violation(pool, bad,
				      "client %u: rows %u/%u slots %u/%u pages %u/%u (counted/kept)",
				      c->id, vc->rows, c->nr_rows, vc->slots,
				      c->nr_slots, vc->pages, c->nr_pages);
		kvp_verify_held(pool, c, vs);
		if (c->tenant->id < vs->nr_tn) {
			vs->tn[c->tenant->id].pages += c->nr_cache_pages;
			vs->tn[c->tenant->id].clients++;
		}
		for (j = 0; j < c->nr_cache_pages; j++) {
			struct kvp_cache_ent *ent = &c->cache[j];

			if (ent->page >= pool->nr_pages ||
			    pool->pages[ent->page].owner !=
			    (KVP_OWNER_CACHE | c->cidx) ||
			    pool->pages[ent->page].next != j)
				kvp_violation(pool, bad,
					      "client %u: cache entry %u names page %u, not its own",
					      c->id, j, ent->page);
			if (ent->pins != vs->refs[vc->base + j])
				kvp_violation(pool, bad,
					      "client %u: cache page %u pinned %u times, borrowed %u",
					      c->id, ent->page, ent->pins,
					      vs->refs[vc->base + j]);
			if (ent->pins)
				pinned++;
			else
				evictable++;
		}
	}
	if (evictable != pool->cache_evictable || pinned != pool->cache_pinned)
		kvp_violation(pool, bad,
			      "cache: evictable %u/%u pinned %u/%u (counted/kept)",
			      evictable, pool->cache_evictable,
			      pinned, pool->cache_pinned);
}

/* The row table, the free row stack, and the owned-page counts. */
static void kvp_verify_rows(struct kvp_pool *pool, struct kvp_vstate *vs)
{
	u32 row_pages = 0, slot_pages = 0, exp_pages = 0;
	u32 free_rows = 0, held = 0, slots = 0, res_rows = 0, exp_rows = 0;
	u32 *bad = &vs->bad;
	u32 i, id;

	for (i = 0; i < pool->nr_rows; i++) {
		struct kvp_row *r = &pool->rows[i];
		u32 owned = 0;

		kvp_verify_row(pool, r, vs, &owned);
		switch (r->state) {
		case KVP_ROW_FREE:
			free_rows++;
			break;
		case KVP_ROW_RESERVED:
			res_rows++;
			break;
		case KVP_ROW_HELD:
			held++;
			row_pages += owned;
			break;
		case KVP_ROW_SLOT:
			slots++;
			slot_pages += owned;
			break;
		case KVP_ROW_EXPORTED:
			exp_rows++;
			exp_pages += owned;
			break;
		}
		if (owned != vs->per_row[i])
			kvp_violation(pool, bad,
				      "row %u: maps %u of its pages, owns %u",
				      i, owned, vs->per_row[i]);
		if (owned != r->owned)
			kvp_violation(pool, bad,
				      "row %u: owns %u pages, counted as %u",
				      i, owned, r->owned);
		if (r->owner && (r->state == KVP_ROW_HELD ||
				 r->state == KVP_ROW_SLOT) &&
		    r->owner->cidx < vs->nr_cl &&
		    r->owner->tenant->id < vs->nr_tn) {
			struct kvp_vclient *vc = &vs->cl[r->owner->cidx];
			struct kvp_vtenant *vt = &vs->tn[r->owner->tenant->id];

			vc->rows += r->state == KVP_ROW_HELD;
			vc->slots += r->state == KVP_ROW_SLOT;
			vc->pages += owned;
			vt->rows++;
			vt->pages += owned;
		}
		if (r->state == KVP_ROW_SLOT && r->owner &&
		    kvp_slot_find(r->owner, r->session, NULL) != r)
			kvp_violation(pool, bad,
				      "row %u: slot %llu not found by its session",
				      i, (unsigned long long)r->session);
	}

	for (i = 0, id = pool->free_row_head; id != KVP_NIL; i++) {
		if (i >= free_rows || id >= pool->nr_rows ||
		    pool->rows[id].state != KVP_ROW_FREE) {
			kvp_violation(pool, bad, "free rows: bad entry %u", id);
			i = free_rows;
			break;
		}
		id = pool->rows[id].next;
	}
	if (i != free_rows)
		kvp_violation(pool, bad, "free rows: %u listed, %u free",
			      i, free_rows);
	if (row_pages != pool->row_pages || slot_pages != pool->slot_pages)
		kvp_violation(pool, bad,
			      "owned pages: rows %u/%u slots %u/%u (counted/kept)",
			      row_pages, pool->row_pages,
			      slot_pages, pool->slot_pages);
	if (exp_rows != pool->export_rows || exp_pages != pool->export_pages)
		kvp_violation(pool, bad,
			      "exported: rows %u/%u pages %u/%u (counted/kept)",
			      exp_rows, pool->export_rows, exp_pages,
			      pool->export_pages);
	if (free_rows != pool->free_rows || held != pool->held_rows ||
	    slots != pool->slot_rows || res_rows != pool->reserved_rows)
		kvp_violation(pool, bad,
			      "rows: free %u/%u held %u/%u slot %u/%u reserved %u/%u (counted/kept)",
			      free_rows, pool->free_rows, held, pool->held_rows,
			      slots, pool->slot_rows, res_rows,
			      pool->reserved_rows);
}

/* Tenants: usage, clients and the guarantee sum, from the bottom up. */
static void kvp_verify_tenants(struct kvp_pool *pool, struct kvp_vstate *vs)
{
	u32 n = 0, unmet = 0, clients, listed;
	struct kvp_tenant *t;
	struct kvp_client *c;
	u64 sum_min = 0;
	unsigned long i;

	xa_for_each(&pool->tenants, i, t) {
		n++;
		clients = vs->tn[i].clients;
		/* Its client list: each entry one of its clients, none left out. */
		listed = 0;
		list_for_each_entry(c, &t->clients, tenant_link) {
			if (c->tenant != t || listed++ > clients)
				break;
		}
		if (t->id != i || vs->tn[i].pages != t->pages ||
		    vs->tn[i].rows != t->rows || clients != t->nr_clients ||
		    listed != clients || (!clients && !t->configured) ||
		    kvp_tenant_find(pool, t->cgroup_id, t->uid) != t)
			kvp_violation(pool, &vs->bad,
				      "tenant %u: at %lu, pages %u/%u rows %u/%u clients %u/%u/%u (counted/kept/listed)",
				      t->id, i, vs->tn[i].pages, t->pages,
				      vs->tn[i].rows, t->rows, clients,
				      t->nr_clients, listed);
		unmet += kvp_unmet(t);
		sum_min += t->min_pages;
	}
	if (n != pool->nr_tenants || unmet != pool->unmet ||
	    sum_min != pool->sum_min)
		kvp_violation(pool, &vs->bad,
			      "tenants: %u/%u, unmet %u/%u, guarantees %llu/%llu (counted/kept)",
			      n, pool->nr_tenants, unmet, pool->unmet,
			      (unsigned long long)sum_min,
			      (unsigned long long)pool->sum_min);
}

int kvp_verify_locked(struct kvp_pool *pool, u32 *violations)
{
	struct kvp_vstate vs = { };
	u32 nclients = 0, ncache = 0;
	struct kvp_client *c;
	unsigned long i;

	lockdep_assert_held(&pool->lock);

	/* One more entry each, so that an empty table is no special case. */
	vs.nr_cl = kvp_xa_span(&pool->clients);
	vs.nr_tn = kvp_xa_span(&pool->tenants);
	vs.cl = kvcalloc(vs.nr_cl + 1, sizeof(*vs.cl), GFP_KERNEL);
	vs.tn = kvcalloc(vs.nr_tn + 1, sizeof(*vs.tn), GFP_KERNEL);
	if (!vs.cl || !vs.tn)
		goto nomem;
	xa_for_each(&pool->clients, i, c) {
		if (c->cidx != i || c->pool != pool)
			kvp_violation(pool, &vs.bad, "client %u: at %lu, says %u",
				      c->id, i, c->cidx);
		vs.cl[i].base = ncache;
		ncache += c->nr_cache_pages;
		nclients++;
	}
	if (nclients != pool->nr_clients)
		kvp_violation(pool, &vs.bad, "clients: counted %u, kept %u",
			      nclients, pool->nr_clients);

	vs.per_row = kvcalloc(pool->nr_rows, sizeof(*vs.per_row), GFP_KERNEL);
	vs.seen = kvcalloc(pool->nr_pages / 8 + 1, 1, GFP_KERNEL);
	vs.refs = kvcalloc(ncache + 1, sizeof(*vs.refs), GFP_KERNEL);
	if (!vs.per_row || !vs.seen || !vs.refs)
		goto nomem;

	kvp_verify_pages(pool, &vs);
	kvp_verify_rows(pool, &vs);
	kvp_verify_caches(pool, &vs);

	if ((u64)pool->free_pages + pool->row_pages + pool->slot_pages +
	    pool->cache_evictable + pool->cache_pinned +
	    pool->reserved_pages + pool->export_pages != pool->nr_pages)
		kvp_violation(pool, &vs.bad,
			      "pages: free %u + rows %u + slots %u + cache %u+%u + reserved %u + exported %u != %u",
			      pool->free_pages, pool->row_pages,
			      pool->slot_pages, pool->cache_evictable,
			      pool->cache_pinned, pool->reserved_pages,
			      pool->export_pages, pool->nr_pages);
	if ((u64)pool->free_rows + pool->held_rows + pool->slot_rows +
	    pool->reserved_rows + pool->export_rows != pool->nr_rows)
		kvp_violation(pool, &vs.bad, "rows: sum != %u", pool->nr_rows);
	kvp_verify_tenants(pool, &vs);
	*violations = vs.bad;
	kvp_vstate_free(&vs);
	return 0;

nomem:
	kvp_vstate_free(&vs);
	return -ENOMEM;
}
