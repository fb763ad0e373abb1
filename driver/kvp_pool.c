// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: the pool, its page and row stacks, and the row state machine.
 *
 * Pages move between owners (the free stack, a row held by a request, a
 * row parked in a session slot, a client's prefix cache, an export file)
 * and never exist twice; rows move between the free stack, a client's
 * requests, its slots and export files. kvp_row_move() is the one place a
 * row changes state and kvp_row_own()/kvp_row_take() the one place its
 * page count changes, each keeping every counter with it; clients join
 * and leave here. See docs/ownership-model.rst for the model.
 */
#include "kvp_priv.h"

/**
 * kvp_geom_check() - check the geometry of a pool to be made
 * @flags: ``KVPOOL_CREATE_*`` flags
 * @nr_pages: pages in the pool
 * @page_tokens: tokens a page holds
 * @nr_rows: request rows in the pool
 * @row_tokens: most tokens one row may hold
 *
 * Separate from kvp_pool_init() so that the driver can refuse a bad
 * KVPOOL_CTL_CREATE before it takes an id or makes a device.
 *
 * Context: any; touches no pool.
 * Return: 0 if kvp_pool_init() would accept the geometry; -EOPNOTSUPP for
 * a flag other than %KVPOOL_CREATE_RESERVE_ZERO; -EINVAL if a count is 0
 * or above its ``KVP_MAX_*``, or, with %KVPOOL_CREATE_RESERVE_ZERO, if
 * @nr_pages or @nr_rows is 1 (the reserved page and row would be all).
 */
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

void kvp_page_push(struct kvp_pool *pool, u32 id)
{
	pool->pages[id].owner = KVP_OWNER_FREE;
	pool->pages[id].next = pool->free_head;
	pool->free_head = id;
	pool->free_pages++;
}

/* The caller has checked that enough pages are free. */
u32 kvp_page_pop(struct kvp_pool *pool, u32 owner)
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

/**
 * kvp_pool_init() - make a pool: all its pages and rows free
 * @pool: the pool, not yet reachable by anyone
 * @id: its number (/dev/kvpoolN)
 * @flags: ``KVPOOL_CREATE_*`` flags
 * @nr_pages: pages in the pool
 * @page_tokens: tokens a page holds
 * @nr_rows: request rows in the pool
 * @row_tokens: most tokens one row may hold
 *
 * The free stacks hand out the lowest ids first, which keeps pages and
 * rows of a lightly used pool dense. With %KVPOOL_CREATE_RESERVE_ZERO,
 * page 0 and row 0 are reserved and never handed out: the scheduler pads
 * CUDA graphs with them. The watermarks start at 1/32 and 1/16 of the pages.
 *
 * Context: process context, may sleep; @pool->lock is initialised here.
 * Return: 0; the errors of kvp_geom_check(), @pool untouched; -ENOMEM if
 * the page or row table cannot be had, @pool zeroed and holding nothing
 * (no kvp_pool_fini() needed).
 */
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

/**
 * kvp_pool_fini() - free what kvp_pool_init() and the pool's life made
 * @pool: the pool
 *
 * Frees the page and row tables, every row's page array (exported rows'
 * included) and the configured tenants that outlived their clients.
 *
 * Context: process context, no clients attached and nobody else able to
 * reach @pool; @pool->lock is not held (it is destroyed here).
 */
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

/**
 * kvp_client_attach_tenant_locked() - join a client to the pool
 * @pool: the pool
 * @c: the client: its memory, which is initialised here
 * @cgroup_id: the cgroup v2 id of the opener
 * @uid: the opener's uid
 *
 * @c joins the tenant of @cgroup_id and @uid, which is made if it is new,
 * and gets the lowest free &kvp_client.cidx and a new &kvp_client.id.
 *
 * Context: @pool->lock held; may sleep (allocates).
 * Return: 0; -EMFILE when the pool has %KVP_MAX_CLIENTS clients, or the
 * tenant is new and the pool has %KVP_MAX_TENANTS; -ENOMEM. On error
 * nothing changed and @c is untouched.
 */
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

/**
 * kvp_client_attach_locked() - join a client to the tenant of cgroup 0, uid 0
 * @pool: the pool
 * @c: the client, initialised here
 *
 * kvp_client_attach_tenant_locked() for callers with no cgroup or uid of
 * their own to give: the unit test, the fuzzer and kvpool-replay.
 *
 * Context: @pool->lock held; may sleep (allocates).
 * Return: as kvp_client_attach_tenant_locked().
 */
int kvp_client_attach_locked(struct kvp_pool *pool, struct kvp_client *c)
{
	return kvp_client_attach_tenant_locked(pool, c, 0, 0);
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

/**
 * kvp_row_move() - the one place a row changes state or owner
 * @pool: the pool
 * @r: the row
 * @state: its new state
 * @owner: its new owner; NULL for a free or exported row
 *
 * Moves its counts from the old state to the new, its place on the
 * owner's held list, and, when the tenant changes, its row and its owned
 * pages from one tenant's charge to the other's. Doing all of it here is
 * what keeps the identities kvp_verify_locked() checks true whatever the
 * op. Slot chains are the caller's to link or unlink: only the caller
 * knows the bucket link.
 *
 * Context: @pool->lock held.
 */
void kvp_row_move(struct kvp_pool *pool, struct kvp_row *r,
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

/**
 * kvp_row_own() - change a row's owned pages within its tenant
 * @pool: the pool
 * @r: the row
 * @n: pages it owns more (fewer, when negative)
 *
 * For pages that move between the row and its client's prefix cache (or
 * become its own on export): they stay charged to the same tenant, so
 * only the state counts move.
 *
 * Context: @pool->lock held.
 */
void kvp_row_own(struct kvp_pool *pool, struct kvp_row *r, int n)
{
	kvp_row_count(pool, r, -1);
	r->owned += n;
	kvp_row_count(pool, r, 1);
}

/**
 * kvp_row_take() - change a row's owned pages, from or to the free stack
 * @pool: the pool
 * @r: the row
 * @n: pages it took (gave back, when negative)
 *
 * As kvp_row_own(), and its tenant, if it has one (an exported row has
 * none), is charged for them; the caller has moved the pages themselves.
 *
 * Context: @pool->lock held.
 */
void kvp_row_take(struct kvp_pool *pool, struct kvp_row *r, int n)
{
	kvp_row_own(pool, r, n);
	if (r->owner)
		kvp_charge(pool, r->owner->tenant, n);
}

/**
 * kvp_row_free() - free a row and every page it owns
 * @pool: the pool
 * @r: the row, in any state but free or reserved
 *
 * Unpins the cache pages it borrows, frees its page array and puts it on
 * the free row stack, its record zeroed but for &kvp_row.gen: keeping the
 * generation is what keeps an old handle from naming the row once it is
 * handed out again. Slot chains are the caller's to unlink first.
 *
 * Context: @pool->lock held.
 * Return: the pages freed (borrowed ones not counted).
 */
u32 kvp_row_free(struct kvp_pool *pool, struct kvp_row *r)
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

/**
 * kvp_client_detach_locked() - take a client out of its pool
 * @c: the client
 *
 * Frees every slot, row and prefix-cache page @c holds, then unlinks it
 * from its tenant (forgotten if that leaves it empty and unconfigured) and
 * frees its &kvp_client.cidx. Rows @c exported stay with their export
 * files.
 *
 * Context: @c->pool->lock held. Cannot fail: it runs on the last close.
 */
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

/**
 * kvp_stats_locked() - fill the counters of KVPOOL_STATS
 * @c: the asking client
 * @st: the answer: its ``out_*`` fields are written, the rest left alone
 *
 * The pool's counts, @c's own and those of @c's tenant, all taken under
 * one hold of the lock so that they add up.
 *
 * Context: @c->pool->lock held.
 */
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
