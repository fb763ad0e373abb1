// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: the pool, its page and row stacks, and the row state machine.
 *
 * Pages move between owners (the free stack, a row held by a request, a
 * row parked in a session slot, a client's prefix cache, an export file)
 * and never exist twice; rows move between the free stack, a client's
 * requests, its slots and export files. kvp_row_move() is the one place a
 * row changes state and kvp_row_own()/kvp_row_take() the one place its
 * page count changes, each keeping every counter with it. The lookups
 * every op starts with (a handle, a batch of them, a slot by session)
 * are here too: this file is the core's ground floor, which the others
 * build on and which calls none of them but the tenants' charge. See
 * docs/ownership-model.rst for the model.
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
 * a flag other than %KVPOOL_CREATE_RESERVE_ZERO and %KVPOOL_CREATE_BUDGET;
 * -EINVAL if a count is 0
 * or above its ``KVP_MAX_*``, or, with %KVPOOL_CREATE_RESERVE_ZERO, if
 * @nr_pages or @nr_rows is 1 (the reserved page and row would be all).
 */
int kvp_geom_check(u32 flags, u32 nr_pages, u32 page_tokens,
		   u32 nr_rows, u32 row_tokens)
{
	u32 reserved = (flags & KVPOOL_CREATE_RESERVE_ZERO) ? 1 : 0;

	if (flags & ~(KVPOOL_CREATE_RESERVE_ZERO | KVPOOL_CREATE_BUDGET))
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

/*
 * Word @w of the free map's level 0 was 0 and has a bit now: set its bit
 * in each level above, as far as the word there was 0 too.
 */
void kvp_map_mark(struct kvp_pool *pool, u32 w)
{
	u32 l;

	for (l = 1; l < pool->map_levels; l++) {
		u64 *word = &pool->map_level[l][w / 64];
		u64 old = *word;

		*word = old | BIT_ULL(w % 64);
		if (old)
			return;
		w /= 64;
	}
}

/* Word @w of level 0 has become 0: clear its bits upwards as words empty. */
void kvp_map_unmark(struct kvp_pool *pool, u32 w)
{
	u32 l;

	for (l = 1; l < pool->map_levels; l++) {
		u64 *word = &pool->map_level[l][w / 64];

		*word &= ~BIT_ULL(w % 64);
		if (*word)
			return;
		w /= 64;
	}
}

/*
 * The lowest level-0 word with a free page, from the top level down, one
 * word a level; the caller knows a page is free.
 */
u32 kvp_map_first(struct kvp_pool *pool)
{
	u32 w = 0;
	u32 l;

	for (l = pool->map_levels - 1; l > 0; l--)
		w = w * 64 + (u32)__ffs64(pool->map_level[l][w]);
	return w;
}

/*
 * Lays out the free map of @pool->nr_pages pages: the words of each level
 * and where each starts. Returns the words in all.
 */
static size_t kvp_map_layout(struct kvp_pool *pool)
{
	size_t words = DIV_ROUND_UP(pool->nr_pages, 64), total = 0;
	u32 l = 0;

	for (;;) {
		pool->map_level[l] = (u64 *)(uintptr_t)total;	/* offsets */
		total += words;
		l++;
		if (words == 1)
			break;
		words = DIV_ROUND_UP(words, 64);
	}
	pool->map_levels = l;
	return total;
}

/* Page @id, which its row owned, goes to @q instead of the free stack. */
static void kvp_page_quarantine(struct kvp_pool *pool, struct kvp_quarantine *q,
				u32 id)
{
	pool->pages[id].owner = KVP_OWNER_QUARANTINE;
	pool->pages[id].next = q->nr ? q->head : KVP_NIL;
	q->head = id;
	q->nr++;
	pool->quarantine_pages++;
}

/* Counts a cache page of @c going from unpinned to pinned (@d = 1) or back. */
void kvp_pinned(struct kvp_client *c, int d)
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

/* A row of @c borrows its cache page @id once more. */
void kvp_pin(struct kvp_client *c, u32 id)
{
	if (!kvp_cache_ent(c, id)->pins++)
		kvp_pinned(c, 1);
}

/* A row of @c gives back a borrow of its cache page @id. */
static void kvp_unpin(struct kvp_client *c, u32 id)
{
	if (!--kvp_cache_ent(c, id)->pins)
		kvp_pinned(c, -1);
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
 * Pages are handed out lowest id first (the free map), rows lowest id
 * first until the free row stack's LIFO order takes over. With %KVPOOL_CREATE_RESERVE_ZERO,
 * page 0 and row 0 are reserved and never handed out: the scheduler pads
 * CUDA graphs with them. The watermarks start at 1/32 and 1/16 of the pages.
 * With %KVPOOL_CREATE_BUDGET no page is free yet: each is
 * %KVP_OWNER_UNBACKED until kvp_back_locked() backs it.
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
	size_t words;
	u32 i;
	int ret;

	ret = kvp_geom_check(flags, nr_pages, page_tokens, nr_rows, row_tokens);
	if (ret)
		return ret;

	memset(pool, 0, sizeof(*pool));
	pool->nr_pages = nr_pages;
	words = kvp_map_layout(pool);
	/* An administrator's too-large pool is an ENOMEM, not a splat. */
	pool->pages = kvcalloc(nr_pages, sizeof(*pool->pages),
			       GFP_KERNEL | __GFP_NOWARN);
	pool->free_map = kvcalloc(words, sizeof(u64), GFP_KERNEL | __GFP_NOWARN);
	pool->rows = kvcalloc(nr_rows, sizeof(*pool->rows),
			      GFP_KERNEL | __GFP_NOWARN);
	if (!pool->pages || !pool->free_map || !pool->rows) {
		kvfree(pool->rows);
		kvfree(pool->free_map);
		kvfree(pool->pages);
		memset(pool, 0, sizeof(*pool));
		return -ENOMEM;
	}
	for (i = 0; i < pool->map_levels; i++)
		pool->map_level[i] = pool->free_map +
				     (uintptr_t)pool->map_level[i];
	mutex_init(&pool->lock);
	xa_init_flags(&pool->clients, XA_FLAGS_ALLOC);
	xa_init_flags(&pool->tenants, XA_FLAGS_ALLOC);
	pool->id = id;
	pool->flags = flags;
	pool->page_tokens = page_tokens;
	/* Engines use powers of two: pages_for() shifts instead of dividing. */
	pool->page_shift = (page_tokens & (page_tokens - 1)) ? 0xff :
			   (u8)__ffs64(page_tokens);
	pool->nr_rows = nr_rows;
	pool->row_tokens = row_tokens;
	pool->max_batch = nr_rows < KVP_MAX_BATCH ? nr_rows : KVP_MAX_BATCH;
	pool->free_row_head = KVP_NIL;
	pool->blocked_tenant = KVP_NIL;
	pool->low_wmark = nr_pages / 32;
	pool->high_wmark = nr_pages / 16;

	/* A pool on a budget has no memory yet: kvp_back_locked() adds it. */
	for (i = first; i < nr_pages; i++) {
		if (flags & KVPOOL_CREATE_BUDGET)
			pool->pages[i].owner = KVP_OWNER_UNBACKED;
		else
			kvp_page_push(pool, i);
	}
	if (flags & KVPOOL_CREATE_BUDGET)
		pool->unbacked_pages = nr_pages - first;
	/* Rows pushed from the top so that the lowest are handed out first. */
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
 * kvp_back_locked() - memory now backs some pages of a pool on a budget
 * @pool: the pool
 * @first: the first page
 * @nr: pages from @first on (those past the pool's end are ignored)
 *
 * The unbacked pages of the range go on the free map; a reserved one (page
 * 0) stays reserved. Page ids never move: backing only makes them free.
 *
 * Context: @pool->lock held.
 * Return: the pages that became free.
 */
u32 kvp_back_locked(struct kvp_pool *pool, u32 first, u32 nr)
{
	u32 end = nr > pool->nr_pages - first ? pool->nr_pages : first + nr;
	u32 id, n = 0;

	for (id = first; id < end; id++) {
		if (pool->pages[id].owner != KVP_OWNER_UNBACKED)
			continue;
		kvp_page_push(pool, id);
		n++;
	}
	pool->unbacked_pages -= n;
	if (n)
		kvp_pressure_changed(pool);
	return n;
}

/**
 * kvp_unback_locked() - take a wholly free range of pages off the free map
 * @pool: the pool
 * @first: the first page
 * @nr: pages from @first on (those past the pool's end are ignored)
 *
 * For a pool on a budget giving a chunk back: the range must be free but
 * for the reserved page, so that nobody owns, caches or may still write a
 * page of it, and no stepped EXTEND may have free pages reserved (the
 * caller checks &kvp_pool.pending_pages). Either every page of the range
 * leaves the free map, or none does.
 *
 * Context: @pool->lock held.
 * Return: true if the range was free and is now unbacked.
 */
bool kvp_unback_locked(struct kvp_pool *pool, u32 first, u32 nr)
{
	u32 end = nr > pool->nr_pages - first ? pool->nr_pages : first + nr;
	u32 id, n = 0;

	for (id = first; id < end; id++) {
		u32 owner = pool->pages[id].owner;

		if (owner != KVP_OWNER_FREE && owner != KVP_OWNER_RESERVED)
			return false;
	}
	for (id = first; id < end; id++) {
		u64 *word = &pool->free_map[id / 64];

		if (pool->pages[id].owner != KVP_OWNER_FREE)
			continue;
		pool->pages[id].owner = KVP_OWNER_UNBACKED;
		*word &= ~BIT_ULL(id % 64);
		/* &kvp_pool.map_lo is only a lower bound: it may stay. */
		if (!*word)
			kvp_map_unmark(pool, id / 64);
		n++;
	}
	pool->free_pages -= n;
	pool->unbacked_pages += n;
	return true;
}

/**
 * kvp_pool_fini() - free what kvp_pool_init() and the pool's life made
 * @pool: the pool
 *
 * Frees the page and row tables, the free map, every row's page array (exported rows'
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
	xa_for_each(&pool->tenants, id, t) {
		kvfree(t->path);
		kvfree(t);	/* configured, client-less */
	}
	xa_destroy(&pool->tenants);
	xa_destroy(&pool->clients);
	kvfree(pool->rows);
	kvfree(pool->free_map);
	kvfree(pool->pages);
	mutex_destroy(&pool->lock);
	pool->rows = NULL;
	pool->free_map = NULL;
	pool->pages = NULL;
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
 * kvp_held_take() - count pages that held rows of a client took
 * @c: the client
 * @n: pages its held rows took off the free map, in all
 *
 * kvp_row_take() for a whole batch at once, which EXTEND's loop would
 * otherwise call once a row: every row of the batch is held by @c, so
 * the counters of the state (held), the client and its tenant are the
 * same for all of them. The caller has popped the pages (without
 * counting them) and added each row's share to its &kvp_row.owned.
 *
 * Context: @c->pool->lock held.
 */
void kvp_held_take(struct kvp_client *c, int n)
{
	struct kvp_pool *pool = c->pool;

	pool->free_pages -= n;
	pool->row_pages += n;
	c->nr_pages += n;
	kvp_charge(pool, c->tenant, n);
}

/**
 * kvp_row_free_quarantine() - free a row, and free or quarantine its pages
 * @pool: the pool
 * @r: the row, in any state but free or reserved
 * @q: where its own pages go instead of the free stack, or NULL
 *
 * Unpins the cache pages it borrows, frees its page array and puts it on
 * the free row stack, its record zeroed but for &kvp_row.gen: keeping the
 * generation is what keeps an old handle from naming the row once it is
 * handed out again. Slot chains are the caller's to unlink first.
 *
 * Context: @pool->lock held.
 * Return: the pages it owned, freed or held back (borrowed ones not
 * counted).
 */
u32 kvp_row_free_quarantine(struct kvp_pool *pool, struct kvp_row *r,
			    struct kvp_quarantine *q)
{
	u32 idx = kvp_row_index(pool, r);
	u32 freed = 0;
	u32 i;

	/*
	 * A row that owns every entry of its array (no cache page borrowed,
	 * no hole) frees them without looking at each: the common case, and
	 * a release frees most pages of all.
	 */
	if (!q && r->owned == r->nr) {
		for (i = 0; i < r->nr; i++)
			__kvp_page_push(pool, r->pages[i]);
		pool->free_pages += r->nr;
		freed = r->nr;
		goto counted;
	}
	for (i = 0; i < r->nr; i++) {
		u32 id = r->pages[i];

		if (id == KVPOOL_PAGE_NONE)
			continue;
		if (pool->pages[id].owner == idx) {
			if (q)
				kvp_page_quarantine(pool, q, id);
			else
				kvp_page_push(pool, id);
			freed++;
		} else {
			kvp_unpin(r->owner, id);	/* borrowed: its cache */
		}
	}
counted:
	kvp_row_take(pool, r, -(int)freed);
	kvp_row_move(pool, r, KVP_ROW_FREE, NULL);
	kvfree(r->pages);
	pool->array_bytes -= (u64)r->cap * sizeof(*r->pages);
	r->pages = NULL;
	r->nr = 0;
	r->cap = 0;
	r->allocated = 0;
	r->committed = 0;
	r->protected = 0;
	r->swa_evicted = 0;
	r->session = 0;
	r->busy = 0;
	kvp_row_push(pool, idx);
	return freed;
}

/**
 * kvp_row_free_tail() - drop part of a row's pages, from its end
 * @pool: the pool
 * @r: the row, held or parked
 * @keep: tokens at its start to keep
 * @budget: most entries to drop
 * @q: where its own pages go instead of the free stack, or NULL
 * @freed: gets the pages it owned that were freed (or put in @q)
 *
 * For the steps of a big RELEASE, TRIM and close: drops the row's last
 * entries down to @keep's pages, freeing (or quarantining) the pages it
 * owns, unpinning the cache pages it borrows and skipping holes, and
 * cuts its lengths, protected and window edge included, to what is
 * left, so that it is an ordinary row afterwards: one that was given a
 * shorter prefix, or trimmed.
 *
 * Context: @pool->lock held.
 * Return: the entries dropped, at most @budget.
 */
u32 kvp_row_free_tail(struct kvp_pool *pool, struct kvp_row *r, u32 keep,
		      u32 budget, struct kvp_quarantine *q, u32 *freed)
{
	u32 idx = kvp_row_index(pool, r);
	u32 floor = kvp_pages_for(pool, keep);
	u32 n = 0, own = 0;
	u32 len;

	while (r->nr > floor && n < budget) {
		u32 id = r->pages[--r->nr];

		n++;
		if (id == KVPOOL_PAGE_NONE)
			continue;	/* freed behind the window */
		if (pool->pages[id].owner != idx) {
			kvp_unpin(r->owner, id);	/* borrowed: its cache */
			continue;
		}
		if (q)
			kvp_page_quarantine(pool, q, id);
		else
			kvp_page_push(pool, id);
		own++;
	}
	*freed = own;
	if (!n)
		return 0;
	kvp_row_take(pool, r, -(int)own);
	/* r->nr <= 2^24 and page_tokens <= 2^16: clamp before multiplying. */
	len = r->nr > U32_MAX / pool->page_tokens ? U32_MAX :
	      r->nr * pool->page_tokens;
	r->allocated = min(r->allocated, len);
	r->committed = min(r->committed, r->allocated);
	r->protected = min(r->protected, len);
	r->swa_evicted = min(r->swa_evicted, len);
	return n;
}

/**
 * kvp_row_free() - free a row and every page it owns
 * @pool: the pool
 * @r: the row, in any state but free or reserved
 *
 * kvp_row_free_quarantine() with the pages going back to the free stack.
 *
 * Context: @pool->lock held.
 * Return: the pages freed (borrowed ones not counted).
 */
u32 kvp_row_free(struct kvp_pool *pool, struct kvp_row *r)
{
	return kvp_row_free_quarantine(pool, r, NULL);
}

#define KVP_ROW_MIN_CAP	16U

/* The room @r's page array grows to for @want ids: it doubles. */
u32 kvp_row_cap_for(const struct kvp_row *r, u32 want)
{
	u32 cap = r->cap ? r->cap : KVP_ROW_MIN_CAP;

	while (cap < want)
		cap = cap > U32_MAX / 2 ? want : cap * 2;
	return cap;
}

/*
 * Makes @pages, room for @cap ids (kvp_row_cap_for()), @r's page array,
 * its ids copied over: the array may come from the caller, allocated
 * without the pool lock.
 */
void kvp_row_install(struct kvp_pool *pool, struct kvp_row *r, u32 *pages,
		     u32 cap)
{
	if (r->nr)
		memcpy(pages, r->pages, r->nr * sizeof(*pages));
	kvfree(r->pages);
	pool->array_bytes += (u64)(cap - r->cap) * sizeof(*pages);
	r->pages = pages;
	r->cap = cap;
}

/* Grows @r's page array to hold at least @want ids. */
int kvp_row_reserve(struct kvp_pool *pool, struct kvp_row *r, u32 want)
{
	u32 cap;
	u32 *pages;

	if (want <= r->cap)
		return 0;
	cap = kvp_row_cap_for(r, want);
	pages = kvmalloc_array(cap, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		return -ENOMEM;
	kvp_row_install(pool, r, pages, cap);
	return 0;
}

/**
 * kvp_mem_bytes_locked() - kernel memory a pool's bookkeeping holds
 * @pool: the pool
 *
 * The page table, the free map, the row table, the rows' page arrays and
 * the clients' cache arrays (as allocated: their capacity), and the
 * tenants: what the sysfs attribute mem_bytes shows, so that the cost
 * per page and per row can be read from the module itself. The clients'
 * own records belong to their files and are not counted.
 *
 * Context: @pool->lock held.
 * Return: the bytes.
 */
u64 kvp_mem_bytes_locked(struct kvp_pool *pool)
{
	/* The top level of the free map is its last word. */
	u64 words = pool->map_level[pool->map_levels - 1] - pool->free_map + 1;

	lockdep_assert_held(&pool->lock);
	return (u64)pool->nr_pages * sizeof(*pool->pages) +
	       words * sizeof(u64) +
	       (u64)pool->nr_rows * sizeof(*pool->rows) +
	       pool->array_bytes +
	       (u64)pool->nr_tenants * sizeof(struct kvp_tenant) +
	       pool->path_bytes;
}

/* A new epoch for marking the rows of one batch; see kvp_batch_lookup(). */
void kvp_mark_begin(struct kvp_pool *pool)
{
	u32 i;

	if (++pool->mark_epoch)
		return;
	for (i = 0; i < pool->nr_rows; i++)
		pool->rows[i].mark = 0;
	pool->mark_epoch = 1;
}

/**
 * kvp_lookup_batch() - look up a batch's handles, each row once
 * @c: the client
 * @entries: the entries, each starting with a &struct kvpool_handle
 * @stride: bytes from one entry to the next
 * @count: entries
 * @error_index: gets the entry at fault on a lookup error, else ~0U (no
 *               entry), which the op's own checks may then overwrite
 *
 * The first step of every batched op: a row named twice would otherwise
 * be changed twice by one op, against what its checks allowed for.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch (no
 * entry at fault), or an entry names a row an earlier one did;
 * kvp_lookup()'s -ENOENT and -ESTALE.
 */
int kvp_lookup_batch(struct kvp_client *c, const void *entries,
		     size_t stride, u32 count, u32 *error_index)
{
	struct kvp_batch b;
	struct kvp_row *r;
	u32 i;
	int ret;

	lockdep_assert_held(&c->pool->lock);
	*error_index = ~0U;
	if (!count || count > c->pool->max_batch)
		return -EINVAL;
	kvp_batch_begin(&b, c);
	for (i = 0; i < count; i++) {
		const struct kvpool_handle *h = (const void *)
			((const char *)entries + i * stride);

		ret = kvp_batch_lookup(&b, h, &r);
		if (ret) {
			*error_index = i;
			return ret;
		}
	}
	return 0;
}

/*
 * Marks busy the rows a stepped op's entries name: entries as
 * kvp_lookup_batch() reads them, already looked up by it.
 */
void kvp_rows_busy(struct kvp_client *c, const void *entries, size_t stride,
		   u32 count)
{
	u32 i;

	for (i = 0; i < count; i++)
		kvp_row_of(c, (const void *)((const char *)entries +
					     i * stride))->busy = 1;
}

u32 kvp_slot_bucket(u64 session)
{
	/* Fibonacci hashing: the top bits of a golden-ratio product. */
	return (u32)((session * 0x9e3779b97f4a7c15ULL) >> 58);
}

struct kvp_row *kvp_slot_find(struct kvp_client *c, u64 session,
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

u32 kvp_slot_free(struct kvp_pool *pool, struct kvp_row *r, u32 *link,
		  struct kvp_quarantine *q)
{
	*link = r->next;
	return kvp_row_free_quarantine(pool, r, q);
}
