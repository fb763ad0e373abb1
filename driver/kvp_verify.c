// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: the invariant checker behind KVPOOL_VERIFY.
 *
 * Recounts everything from the page table and the row table up, in
 * scratch memory of its own, and reports each broken invariant (the
 * first KVP_REPORT_LIMIT through kvp_report()). The identities it
 * checks are listed in docs/ownership-model.rst.
 */
#include "kvp_priv.h"

/* Counts a violation and logs the first few. */
#define kvp_violation(pool, nbad, fmt, ...)				\
	do {								\
		if ((*(nbad))++ < KVP_REPORT_LIMIT)			\
			kvp_report(pool, fmt, ##__VA_ARGS__);		\
	} while (0)

/* What verify counts for a client, by its cidx. */
struct kvp_vclient {
	/*
	 * The client at this cidx, looked up once: verify resolves a cache
	 * page's owner for every cache page, and an xarray walk each time
	 * made VERIFY several times slower on a debug kernel.
	 */
	struct kvp_client *c;
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

static void kvp_vstate_free(struct kvp_vstate *vs)
{
	kvfree(vs->per_row);
	kvfree(vs->seen);
	kvfree(vs->refs);
	kvfree(vs->cl);
	kvfree(vs->tn);
}

/* The client whose cache owns page @id, or NULL if the owner is broken. */
static struct kvp_client *kvp_cache_owner(struct kvp_pool *pool,
					  struct kvp_vstate *vs, u32 id)
{
	u32 cidx = pool->pages[id].owner & ~KVP_OWNER_CACHE;
	struct kvp_client *c = cidx < vs->nr_cl ? vs->cl[cidx].c : NULL;

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
		    r->protected || r->swa_evicted || r->pages || r->owned ||
		    r->busy)
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
	/* Only a held row is ever in a stepped op. */
	if (r->busy && r->state != KVP_ROW_HELD)
		kvp_violation(pool, bad, "row %u: busy in state %u", idx,
			      r->state);

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
			    kvp_cache_owner(pool, vs, id) : NULL;
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

/*
 * The free map: level 0's bits are exactly the free pages (none past the
 * last page), each bit above is set exactly when its word below is not 0,
 * and no word below &kvp_pool.map_lo has a free page.
 */
static void kvp_verify_map(struct kvp_pool *pool, u32 *bad)
{
	u32 words = DIV_ROUND_UP(pool->nr_pages, 64);
	u32 l, w, i;

	for (w = 0; w < words; w++) {
		u64 want = 0, have = pool->map_level[0][w];

		for (i = 0; i < 64 && w * 64 + i < pool->nr_pages; i++)
			if (pool->pages[w * 64 + i].owner == KVP_OWNER_FREE)
				want |= BIT_ULL(i);
		if (have != want)
			kvp_violation(pool, bad,
				      "free map: pages %u..%u: bits %#llx, free %#llx",
				      w * 64, w * 64 + 63,
				      (unsigned long long)have,
				      (unsigned long long)want);
		if (have && w < pool->map_lo)
			kvp_violation(pool, bad,
				      "free map: page %u free below word %u",
				      w * 64 + (u32)__ffs64(have), pool->map_lo);
	}
	for (l = 1; l < pool->map_levels; l++) {
		u32 below = words;

		words = DIV_ROUND_UP(below, 64);
		for (w = 0; w < words; w++) {
			u64 want = 0, have = pool->map_level[l][w];

			for (i = 0; i < 64 && w * 64 + i < below; i++)
				if (pool->map_level[l - 1][w * 64 + i])
					want |= BIT_ULL(i);
			if (have != want)
				kvp_violation(pool, bad,
					      "free map: level %u word %u: bits %#llx, want %#llx",
					      l, w, (unsigned long long)have,
					      (unsigned long long)want);
		}
	}
	if (words != 1)
		kvp_violation(pool, bad, "free map: %u levels end in %u words",
			      pool->map_levels, words);
}

/* The page table: owner of every page, the free map, cache back-links. */
static void kvp_verify_pages(struct kvp_pool *pool, struct kvp_vstate *vs)
{
	u32 nfree = 0, nres = 0, ncache = 0, nquar = 0, nunb = 0;
	u32 *bad = &vs->bad;
	u32 i;

	for (i = 0; i < pool->nr_pages; i++) {
		u32 owner = pool->pages[i].owner;

		if (owner == KVP_OWNER_FREE) {
			nfree++;
		} else if (owner == KVP_OWNER_RESERVED) {
			nres++;
		} else if (owner == KVP_OWNER_QUARANTINE) {
			nquar++;
		} else if (owner == KVP_OWNER_UNBACKED) {
			nunb++;
		} else if (owner < pool->nr_rows) {
			vs->per_row[owner]++;
		} else if (kvp_is_cache(owner) && kvp_cache_owner(pool, vs, i)) {
			ncache++;
		} else {
			kvp_violation(pool, bad, "page %u: bad owner %#x (next %u)",
				      i, owner, pool->pages[i].next);
		}
	}

	kvp_verify_map(pool, bad);
	if (nfree != pool->free_pages)
		kvp_violation(pool, bad, "free pages: counted %u, kept %u",
			      nfree, pool->free_pages);
	if (nres != pool->reserved_pages)
		kvp_violation(pool, bad, "reserved pages: counted %u, kept %u",
			      nres, pool->reserved_pages);
	if (nunb != pool->unbacked_pages)
		kvp_violation(pool, bad, "unbacked pages: counted %u, kept %u",
			      nunb, pool->unbacked_pages);
	if (nquar != pool->quarantine_pages)
		kvp_violation(pool, bad,
			      "quarantined pages: counted %u, kept %u",
			      nquar, pool->quarantine_pages);
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

/*
 * The length of @t's client list, as far as its entries are clients of
 * @t and at most one past @clients (so a cycle ends the walk too).
 */
static u32 kvp_verify_listed(struct kvp_tenant *t, u32 clients)
{
	struct list_head *pos;
	u32 n = 0;

	for (pos = t->clients.next; pos != &t->clients && n <= clients;
	     pos = pos->next) {
		if (list_entry(pos, struct kvp_client, tenant_link)->tenant != t)
			break;
		n++;
	}
	return n;
}

/*
 * Whether @t is where lookups find it: an id tenant in the id hash; a path
 * tenant in the path hash while configured, in neither once removed.
 */
static bool kvp_verify_hashed(struct kvp_pool *pool, struct kvp_tenant *t)
{
	if (!t->path)
		return !t->flags &&
		       kvp_tenant_find(pool, t->cgroup_id, t->uid) == t;
	if (t->cgroup_id || t->path_len != strlen(t->path) ||
	    !(t->flags & KVPOOL_TENANT_BY_PATH))
		return false;
	if (!t->configured)
		return hlist_unhashed(&t->hash);
	return kvp_path_find(pool, t->path, t->path_len, t->uid,
			     t->flags & KVPOOL_TENANT_ANY_UID) == t;
}

/* Tenants: usage, clients and the guarantee sum, from the bottom up. */
static void kvp_verify_tenants(struct kvp_pool *pool, struct kvp_vstate *vs)
{
	u32 n = 0, unmet = 0, clients, listed, path_bytes = 0, pending = 0;
	struct kvp_tenant *t;
	u64 sum_min = 0;
	unsigned long i;

	xa_for_each(&pool->tenants, i, t) {
		n++;
		clients = vs->tn[i].clients;
		listed = kvp_verify_listed(t, clients);
		if (t->id != i || vs->tn[i].pages != t->pages ||
		    vs->tn[i].rows != t->rows || clients != t->nr_clients ||
		    listed != clients || (!clients && !t->configured) ||
		    !kvp_verify_hashed(pool, t))
			kvp_violation(pool, &vs->bad,
				      "tenant %u: at %lu, pages %u/%u rows %u/%u clients %u/%u/%u (counted/kept/listed)",
				      t->id, i, vs->tn[i].pages, t->pages,
				      vs->tn[i].rows, t->rows, clients,
				      t->nr_clients, listed);
		unmet += kvp_unmet(t);
		sum_min += t->min_pages;
		pending += t->pending;
		if (t->path)
			path_bytes += t->path_len + 1;
	}
	if (n != pool->nr_tenants || unmet != pool->unmet ||
	    sum_min != pool->sum_min || path_bytes != pool->path_bytes)
		kvp_violation(pool, &vs->bad,
			      "tenants: %u/%u, unmet %u/%u, guarantees %llu/%llu, path bytes %u/%u (counted/kept)",
			      n, pool->nr_tenants, unmet, pool->unmet,
			      (unsigned long long)sum_min,
			      (unsigned long long)pool->sum_min,
			      path_bytes, pool->path_bytes);
	/* A stepped EXTEND's reservation is of free pages, all its tenant's. */
	if (pending != pool->pending_pages ||
	    pool->pending_pages > pool->free_pages)
		kvp_violation(pool, &vs->bad,
			      "pending pages: tenants %u, pool %u, free %u",
			      pending, pool->pending_pages, pool->free_pages);
}

/**
 * kvp_verify_locked() - check every invariant of a pool (VERIFY)
 * @pool: the pool
 * @violations: gets the number of broken invariants
 *
 * Recounts, from the page and row tables alone and in scratch memory of
 * its own, everything the pool, its clients and tenants keep, and checks
 * each row's record against its state and pages. Each broken invariant is
 * counted, and the first %KVP_REPORT_LIMIT are kvp_report()ed, so that a
 * badly broken pool cannot flood the log. It is the oracle of the unit
 * test, the fuzzer and the selftests: any op that left a count wrong
 * shows here.
 *
 * Context: @pool->lock held; may sleep (allocates).
 * Return: 0, with @violations set (0: all hold); -ENOMEM if the scratch
 * memory cannot be had, @violations untouched. Changes nothing in the
 * pool either way.
 */
int kvp_verify_locked(struct kvp_pool *pool, u32 *violations)
{
	struct kvp_vstate vs = { };
	u32 nclients = 0, ncache = 0;
	struct kvp_client *c;
	u64 arrays = 0;
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
		/* Room a stepped donation counts on is there. */
		if ((u64)c->nr_cache_pages + c->cache_pending > c->cache_cap)
			kvp_violation(pool, &vs.bad,
				      "client %u: cache %u + %u pending, room %u",
				      c->id, c->nr_cache_pages,
				      c->cache_pending, c->cache_cap);
		vs.cl[i].c = c;
		vs.cl[i].base = ncache;
		ncache += c->nr_cache_pages;
		arrays += (u64)c->cache_cap * sizeof(*c->cache);
		nclients++;
	}
	for (i = 0; i < pool->nr_rows; i++)
		arrays += (u64)pool->rows[i].cap * sizeof(u32);
	if (arrays != pool->array_bytes)
		kvp_violation(pool, &vs.bad, "arrays: %llu bytes, kept %llu",
			      (unsigned long long)arrays,
			      (unsigned long long)pool->array_bytes);
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
	    pool->reserved_pages + pool->export_pages +
	    pool->quarantine_pages + pool->unbacked_pages != pool->nr_pages)
		kvp_violation(pool, &vs.bad,
			      "pages: free %u + rows %u + slots %u + cache %u+%u + reserved %u + exported %u + quarantined %u + unbacked %u != %u",
			      pool->free_pages, pool->row_pages,
			      pool->slot_pages, pool->cache_evictable,
			      pool->cache_pinned, pool->reserved_pages,
			      pool->export_pages, pool->quarantine_pages,
			      pool->unbacked_pages, pool->nr_pages);
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
