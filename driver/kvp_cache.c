// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: a client's prefix cache: donate, attach, evict, pins.
 *
 * A cache page is owned by its client (KVP_OWNER_CACHE | cidx) and sits
 * at pages[].next in the client's cache array; rows that map it below
 * their protected length borrow it and pin it. Only unpinned pages can
 * be evicted, and pressure asks for those.
 */
#include "kvp_priv.h"

/*
 * Room for @more pages in @c's cache: the one allocation a donate makes.
 * The room stepped donations still count on (another thread's) is kept.
 */
int kvp_cache_reserve(struct kvp_client *c, u32 more)
{
	u32 want = c->nr_cache_pages + c->cache_pending + more;
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
	c->pool->array_bytes += (u64)(cap - c->cache_cap) * sizeof(*ents);
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
void kvp_cache_unlink(struct kvp_client *c, u32 id)
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
void kvp_cache_free(struct kvp_client *c, u32 id)
{
	kvp_cache_unlink(c, id);
	kvp_page_push(c->pool, id);
	kvp_charge(c->pool, c->tenant, -1);
}

/*
 * Pages of @r a donate up to @upto would move: [protected, upto) whole.
 * Its callers refuse a row whose window passed its prefix
 * (kvp_prefix_holed()), so no hole is there: no walk needed.
 */
u32 kvp_donate_count(struct kvp_pool *pool, struct kvp_row *r,
		     u32 upto)
{
	u32 start = r->protected / pool->page_tokens;
	u32 end = upto / pool->page_tokens;

	return end > start ? end - start : 0;
}

/*
 * kvp_row_donate() of at most @budget more pages, toward @upto: for the
 * steps of DONATE and of RELEASE with the flag. A row left part-way has
 * donated a shorter prefix, a state of its own. Returns the pages moved.
 */
u32 kvp_donate_some(struct kvp_client *c, struct kvp_row *r, u32 upto,
		    u32 budget)
{
	u32 pt = c->pool->page_tokens;
	u64 most = (u64)(r->protected / pt + budget) * pt;

	return kvp_row_donate(c, r, most < upto ? (u32)most : upto);
}

/* Moves them into @c's cache, which has room; the row borrows them now. */
u32 kvp_row_donate(struct kvp_client *c, struct kvp_row *r, u32 upto)
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

/**
 * kvp_donate_locked() - move rows' prefixes into the prefix cache (DONATE)
 * @c: the client
 * @e: the entries: a handle and the length to donate up to, each
 * @count: entries
 * @nr_donated: gets the pages moved into the cache
 * @error_index: gets the entry at fault; ~0U when none is
 *
 * Each row's whole pages in [protected, len) become @c's cache pages; the
 * row keeps mapping them, now borrowed and pinning them, and its protected
 * length rises to len rounded down to a page. The cache array is grown
 * once for the whole batch before anything moves.
 *
 * Context: @c->pool->lock held; may sleep (allocates).
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch, a row
 * is named twice, an entry's reserved field is set, a len is above the
 * row's committed length, or the row's prefix has holes
 * (kvp_prefix_holed()); -EALREADY if a len is not above the row's
 * protected length (nothing to donate); -ENOENT or -ESTALE if a handle
 * names no row @c holds (kvp_lookup()); -ENOMEM if the cache cannot grow.
 * On error nothing changed (the cache array may keep room it grew).
 */
int kvp_donate_locked(struct kvp_client *c,
		      const struct kvpool_len_entry *e, u32 count,
		      u32 *nr_donated, u32 *error_index)
{
	struct kvp_op op;
	int ret;

	ret = kvp_donate_start_locked(c, e, count, nr_donated, error_index,
				      &op);
	return kvp_op_all(ret, &op);
}

/**
 * kvp_donate_start_locked() - check and prepare a DONATE
 * @c: the client
 * @e: the entries; the caller keeps them until the op's last step
 * @count: entries
 * @nr_donated: gets the pages moved, complete after the last step
 * @error_index: gets the entry at fault; ~0U when none is
 * @op: the op, for kvp_op_step_locked()
 *
 * Context: @c->pool->lock held; may sleep (allocates).
 * Return: as kvp_donate_locked(); on error nothing changed and @op must
 * not be stepped.
 */
int kvp_donate_start_locked(struct kvp_client *c,
			    const struct kvpool_len_entry *e, u32 count,
			    u32 *nr_donated, u32 *error_index,
			    struct kvp_op *op)
{
	struct kvp_pool *pool = c->pool;
	u32 total = 0;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_donated = 0;
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
	*op = (struct kvp_op){
		.c = c,
		.lens = e,
		.nr_freed = nr_donated,
		.count = count,
		.stepped = total > KVP_STEP_PAGES,
		.kind = KVP_OP_DONATE,
	};
	if (op->stepped) {
		c->cache_pending += total;
		kvp_rows_busy(c, e, sizeof(*e), count);
	}
	return 0;
}

/* One step of a DONATE: the rows' prefixes, a part at a time. */
bool kvp_donate_step(struct kvp_op *op)
{
	u32 budget = KVP_STEP_PAGES;

	for (; op->i < op->count; op->i++) {
		const struct kvpool_len_entry *x = &op->lens[op->i];
		struct kvp_row *r = kvp_row_of(op->c, &x->handle);
		u32 n = kvp_donate_some(op->c, r, x->len, budget);

		if (op->stepped)
			op->c->cache_pending -= n;
		*op->nr_freed += n;
		budget -= n;
		if (r->protected < x->len / op->c->pool->page_tokens *
				   op->c->pool->page_tokens)
			return true;	/* this row again, next step */
		r->busy = 0;
	}
	return false;
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
		ent = kvp_cache_ent(c, pages[i]);
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
		kvp_cache_ent(c, pages[i])->pins &= ~KVP_PIN_MARK;
	return ret;
}

/**
 * kvp_attach_prefix_locked() - map cached pages at a new row's start
 * @c: the client
 * @h: the row's handle; the row must have no tokens yet
 * @pages: @nr_pages pages of @c's prefix cache, each once
 * @nr_pages: pages to map
 *
 * The row's positions [0, k), k = @nr_pages * page_tokens, map @pages in
 * order, and its allocated, committed and protected lengths become k.
 * The pages stay the cache's: the row borrows them, and each is pinned
 * (eviction refuses it) until no row does.
 *
 * Context: @c->pool->lock held; may sleep (allocates).
 * Return: 0; -ENOENT or -ESTALE if @h names no row @c holds
 * (kvp_lookup()); -EINVAL if the row has tokens, @nr_pages is 0 or k is
 * above row_tokens, or a page is named twice; -ENOENT if a page is not
 * one of @c's cache pages; -ENOMEM. On error nothing changed (the row's
 * page array may keep room it grew).
 */
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
	ret = kvp_row_reserve(pool, r, nr_pages);
	if (ret)
		return ret;

	for (i = 0; i < nr_pages; i++) {
		kvp_pin(c, pages[i]);
		r->pages[i] = pages[i];
	}
	r->nr = nr_pages;
	r->allocated = nr_pages * pool->page_tokens;
	r->committed = r->allocated;
	r->protected = r->allocated;
	return 0;
}

/**
 * kvp_cache_evict_locked() - free prefix-cache pages (CACHE_EVICT)
 * @c: the client
 * @pages: page ids of @c's cache
 * @count: ids
 * @error_index: gets the entry at fault; ~0U when none is
 *
 * What a client does when kvp_pressure_locked() asks it to: the pages go
 * back to the free stack and its tenant is no longer charged for them.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch, or a
 * page is named twice; -ENOENT if a page is not one of @c's cache pages;
 * -EBUSY if a row borrows one. On error nothing changed.
 */
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
