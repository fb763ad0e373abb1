// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: handing a row to another process.
 *
 * EXPORT takes a row (held or in a slot) from its client into an export
 * file, which holds it with no client (KVP_ROW_EXPORTED), its borrowed
 * prefix pages becoming its own; IMPORT gives it to the importing client
 * under a new generation; an export file closed first frees it.
 */
#include "kvp_priv.h"

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
		if (kvp_cache_ent(c, r->pages[i])->pins != 1)
			return -EBUSY;
		(*borrowed)++;
	}
	*out = r;
	*owned = r->owned;
	return 0;
}

/**
 * kvp_export_peek_locked() - what EXPORT would report, without it
 * @c: the client
 * @x: the request: a handle, or with %KVPOOL_EXPORT_SLOT a session id
 * @nr_pages: gets the pages the row would own once exported
 *
 * Lets the driver write its answer before the row leaves @c; flags other
 * than %KVPOOL_EXPORT_SLOT are the driver's to refuse.
 *
 * Context: @c->pool->lock held.
 * Return: as kvp_export_locked(). Changes nothing either way.
 */
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

/**
 * kvp_export_locked() - hand a row from a client to an export file (EXPORT)
 * @c: the client
 * @x: the request: a handle, or with %KVPOOL_EXPORT_SLOT a session id
 * @idx: gets the row's index, by which the export file names it
 * @nr_pages: gets the pages the row owns now
 *
 * The row leaves @c and its tenant, neither of which is charged for it
 * any more, and belongs to no client until kvp_import_locked(). The pages
 * it borrowed from @c's prefix cache become its own and its protected
 * length drops to 0: the importer may be another process, whose cache
 * they are not.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -ENOENT if @c has no such slot; -ENOENT or -ESTALE if the
 * handle names no row @c holds (kvp_lookup()); -EBUSY if another row
 * borrows one of the row's prefix pages too, as they cannot then become
 * its own. On error nothing changed.
 */
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

/**
 * kvp_import_peek_locked() - the handle IMPORT would give, without it
 * @c: the importing client
 * @idx: the row, as kvp_export_locked() named it
 * @out: gets the handle kvp_import_locked() would return now
 * @nr_pages: gets the pages the row owns
 *
 * Lets the driver write its answer before the row is taken. It does not
 * check the tenant's limits: kvp_import_locked() may still refuse.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EALREADY if the row is exported no more (imported, or
 * dropped). Changes nothing either way.
 */
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

/**
 * kvp_import_locked() - take an exported row into a client (IMPORT)
 * @c: the importing client
 * @idx: the row, as kvp_export_locked() named it
 * @out: gets the row's new handle
 * @nr_pages: gets the pages the row owns
 *
 * The row is held by @c under a new generation and charged, row and
 * pages, to @c's tenant. Its pages are off the free stack already, so
 * only the tenant's limits are checked, not free pages or guarantees.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EALREADY if the row is exported no more (imported, or
 * dropped); -EDQUOT if @c's tenant would go over its max_pages or
 * max_rows. On error nothing changed (a refusal records pressure).
 */
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
	if ((owned && t->max_pages &&
	     t->pages + t->pending + owned > t->max_pages) ||
	    (t->max_rows && t->rows + 1 > t->max_rows)) {
		kvp_refused(pool, t, false, -EDQUOT);
		return -EDQUOT;
	}
	kvp_row_move(pool, r, KVP_ROW_HELD, c);
	r->gen = kvp_next_gen(r->gen);
	out->req_pool_idx = idx;
	out->generation = r->gen;
	*nr_pages = owned;
	return 0;
}

/**
 * kvp_export_drop_locked() - free a row its export file still holds
 * @pool: the pool
 * @idx: the row, as kvp_export_locked() named it
 *
 * Called when the export file's last reference goes, so that a row nobody
 * imported goes back to the pool with its pages; an imported row is the
 * importer's and is left alone.
 *
 * Context: @pool->lock held.
 */
void kvp_export_drop_locked(struct kvp_pool *pool, u32 idx)
{
	struct kvp_row *r = &pool->rows[idx];

	lockdep_assert_held(&pool->lock);
	if (r->state != KVP_ROW_EXPORTED)
		return;		/* imported: the importer owns it now */
	kvp_row_free(pool, r);
}
