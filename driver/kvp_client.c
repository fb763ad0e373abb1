// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: clients, the open files of a pool, joining and leaving it.
 *
 * A client joins its tenant (kvp_tenant.c says which) when it opens the
 * pool and, when its last reference goes, gives back everything it holds:
 * its slots, its held rows (walking only its own list, never the row
 * table) and its prefix cache. This file sits above the others: it
 * uses the row, cache and tenant layers and none of them uses it.
 */
#include "kvp_priv.h"

/**
 * kvp_client_attach_tenant_locked() - join a client to the pool
 * @pool: the pool
 * @c: the client: its memory, which is initialised here
 * @cgroup_id: the cgroup v2 id of the opener
 * @uid: the opener's uid
 * @path: the cgroup path of the opener, or of its nearest ancestor whose
 *        path fits %KVPOOL_CGROUP_PATH_MAX; NULL to match by id only
 *
 * @c joins the tenant kvp_tenant_match() finds for them, else that of
 * @cgroup_id and @uid, which is made if it is new, and gets the lowest
 * free &kvp_client.cidx and a new &kvp_client.id.
 *
 * Context: @pool->lock held; may sleep (allocates).
 * Return: 0; -EMFILE when the pool has %KVP_MAX_CLIENTS clients, or the
 * tenant is new and the pool has %KVP_MAX_TENANTS; -ENOMEM. On error
 * nothing changed and @c is untouched.
 */
int kvp_client_attach_tenant_locked(struct kvp_pool *pool,
				    struct kvp_client *c, u64 cgroup_id,
				    u32 uid, const char *path)
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
	t = kvp_tenant_match(pool, cgroup_id, uid, path);
	ret = t ? 0 : kvp_tenant_get(pool, cgroup_id, uid, &t);
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
	return kvp_client_attach_tenant_locked(pool, c, 0, 0, NULL);
}

/*
 * One row of a closing client: its entries from the end, within @budget,
 * then the row itself once it has none (@link: its slot chain link, or
 * NULL for a held row). Returns the budget used.
 */
static u32 kvp_reclaim_row(struct kvp_client *c, struct kvp_row *r,
			   u32 *link, struct kvp_quarantine *q, u32 budget)
{
	struct kvp_pool *pool = c->pool;
	u32 freed, n = kvp_row_free_tail(pool, r, 0, budget, q, &freed);

	pool->reclaimed_pages += freed;
	if (r->nr)
		return n;	/* the budget is spent */
	if (link)
		kvp_slot_free(pool, r, link, q);
	else
		kvp_row_free_quarantine(pool, r, q);
	return n;
}

/**
 * kvp_client_reclaim_step_locked() - give back part of a closing client's
 * @c: the client, whose file is gone: no call of its can run any more
 * @q: where the pages of its rows and slots go, or NULL to free them
 *
 * Frees (or puts in @q) at most about %KVP_STEP_PAGES pages of @c's
 * slots, rows and prefix cache, in the order
 * kvp_client_detach_quarantine_locked() would, so that the close of a
 * client that held most of a big pool does not hold the pool lock for
 * all of it at once: the driver calls it until it returns false,
 * dropping the lock between calls, then detaches the client, which
 * finds nothing left to free. Between two calls the pool is as if @c
 * had released part of what it held.
 *
 * Context: @c->pool->lock held.
 * Return: true while @c holds pages or rows.
 */
bool kvp_client_reclaim_step_locked(struct kvp_client *c,
				    struct kvp_quarantine *q)
{
	struct kvp_pool *pool = c->pool;
	u32 budget = KVP_STEP_PAGES;
	u32 b;

	lockdep_assert_held(&pool->lock);
	for (b = 0; b < KVP_SLOT_BUCKETS; b++) {
		while (c->slot_head[b] != KVP_NIL) {
			budget -= kvp_reclaim_row(c,
						  &pool->rows[c->slot_head[b]],
						  &c->slot_head[b], q, budget);
			if (!budget)
				return true;
		}
	}
	while (c->held_head != KVP_NIL) {
		budget -= kvp_reclaim_row(c, &pool->rows[c->held_head], NULL,
					  q, budget);
		if (!budget)
			return true;
	}
	/* Only its own rows borrow from its cache: all unpinned by now. */
	while (c->nr_cache_pages && budget) {
		kvp_cache_free(c, c->cache[c->nr_cache_pages - 1].page);
		pool->reclaimed_pages++;
		budget--;
	}
	return c->nr_cache_pages;
}

/**
 * kvp_client_detach_quarantine_locked() - take a client out of its pool
 * @c: the client
 * @q: where the pages of its rows and slots go, or NULL to free them
 *
 * Frees every slot and row @c holds, putting the pages they own in @q
 * (or on the free stack), frees its prefix-cache pages (those it gave
 * up itself when it donated them, so no writer of theirs is left), then
 * unlinks it from its tenant (forgotten if that leaves it empty and
 * unconfigured) and frees its &kvp_client.cidx. Held-back pages count
 * for no tenant: a restarted client gets its limits' room at once. Rows
 * @c exported stay with their export files.
 *
 * Context: @c->pool->lock held. Cannot fail: it runs on the last close.
 */
void kvp_client_detach_quarantine_locked(struct kvp_client *c,
					 struct kvp_quarantine *q)
{
	struct kvp_pool *pool = c->pool;
	u32 b;

	lockdep_assert_held(&pool->lock);
	pool->reclaimed_pages += c->nr_pages + c->nr_cache_pages;
	for (b = 0; b < KVP_SLOT_BUCKETS; b++)
		while (c->slot_head[b] != KVP_NIL)
			kvp_slot_free(pool, &pool->rows[c->slot_head[b]],
				      &c->slot_head[b], q);
	/* O(what it holds), not O(nr_rows): any client can close at will. */
	while (c->held_head != KVP_NIL)
		kvp_row_free_quarantine(pool, &pool->rows[c->held_head], q);
	/* Only its own rows borrow from its cache: all unpinned by now. */
	while (c->nr_cache_pages)
		kvp_cache_free(c, c->cache[c->nr_cache_pages - 1].page);
	kvfree(c->cache);
	pool->array_bytes -= (u64)c->cache_cap * sizeof(*c->cache);
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
 * kvp_client_detach_locked() - take a client out of its pool, freeing all
 * @c: the client
 *
 * kvp_client_detach_quarantine_locked() with every page freed at once: for a
 * pool whose pages name no memory, and for the tests and tools that
 * build the core in userspace.
 *
 * Context: @c->pool->lock held. Cannot fail.
 */
void kvp_client_detach_locked(struct kvp_client *c)
{
	kvp_client_detach_quarantine_locked(c, NULL);
}

/**
 * kvp_quarantine_end_locked() - free the pages a quarantine held back
 * @pool: the pool the pages are of
 * @q: the quarantine, emptied here
 *
 * Context: @pool->lock held.
 * Return: the pages freed.
 */
u32 kvp_quarantine_end_locked(struct kvp_pool *pool,
			      struct kvp_quarantine *q)
{
	u32 n = kvp_quarantine_free_locked(pool, q, U32_MAX);

	q->head = KVP_NIL;
	return n;
}

/**
 * kvp_quarantine_free_locked() - free some of the pages a quarantine held
 * @pool: the pool the pages are of
 * @q: the quarantine
 * @budget: most pages to free
 *
 * kvp_quarantine_end_locked() in steps, for a driver that drops the pool
 * lock between them: what is left stays held back, counted as before.
 *
 * Context: @pool->lock held.
 * Return: the pages freed.
 */
u32 kvp_quarantine_free_locked(struct kvp_pool *pool,
			       struct kvp_quarantine *q, u32 budget)
{
	u32 n = 0;

	lockdep_assert_held(&pool->lock);
	while (q->nr && n < budget) {
		u32 id = q->head;

		q->head = pool->pages[id].next;
		q->nr--;
		pool->quarantine_pages--;
		kvp_page_push(pool, id);
		n++;
	}
	/* Pages are free again: an ask may shrink, a waiter may go on. */
	if (n)
		kvp_pressure_changed(pool);
	return n;
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
	st->out_quarantine_pages = pool->quarantine_pages;
	st->__reserved2 = 0;
}
