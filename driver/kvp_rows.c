// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool core: the request-row operations and session slots.
 *
 * Each batch op looks up and checks every entry before it changes
 * anything, so an error leaves the pool as it was (kvp_lookup_batch()
 * refuses a row named twice). Slots park a row under a session id of
 * its client's, in one of KVP_SLOT_BUCKETS hash chains.
 */
#include "kvp_priv.h"

/**
 * kvp_row_alloc_locked() - hand a client new request rows
 * @c: the client
 * @out: gets the @count rows' handles
 * @count: rows wanted
 * @out_short: gets how many rows were missing on -EDQUOT and -ENOSPC,
 *             else 0
 *
 * All @count or none: a scheduler cannot use part of a batch. Each row is
 * held by @c under a generation its previous takers never had.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch;
 * -EDQUOT if @c's tenant would go over its max_rows; -ENOSPC if fewer rows
 * are free. On error nothing changed (a refusal records pressure).
 */
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
		kvp_refused(pool, c->tenant, false, -EDQUOT);
		return -EDQUOT;
	}
	if (count > pool->free_rows) {
		*out_short = count - pool->free_rows;
		kvp_refused(pool, c->tenant, false, -ENOSPC);
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

/**
 * kvp_extend_locked() - give rows pages for a new length (EXTEND)
 * @c: the client
 * @e: the entries; out_nr_new of each is the answer on success, scratch
 *     on error
 * @count: entries
 * @pages_cap: most new page ids the caller can take
 * @res: the result: the new pages and, on error, what went wrong where
 *
 * Each row grows to new_len tokens and gets the pages that takes, off
 * the free stack. Everything is checked and allocated before the first
 * page moves, so the batch lands whole or not at all.
 *
 * Context: @c->pool->lock held; may sleep (allocates).
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch, a row
 * is named twice, or a new_len is below the row's allocated length or
 * above row_tokens; -ENOENT or -ESTALE if a handle names no row @c holds,
 * -EBUSY if one in another call's stepped op (kvp_lookup()); -ENOBUFS if
 * the new pages would not fit @pages_cap; -EDQUOT if @c's tenant would go
 * over its max_pages (counting its stepped EXTENDs' reserved pages);
 * -ENOSPC if fewer pages are available to the tenant (free ones less
 * those reserved and less other tenants' unmet guarantees); -ENOMEM. On
 * error nothing changed (a refusal records pressure; a row's page array
 * may keep room it grew) and @res says which entry and how many pages,
 * see &struct kvp_extend_result.
 */
int kvp_extend_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
		      u32 count, u32 pages_cap, struct kvp_extend_result *res)
{
	return kvp_extend_buf_locked(c, e, count, pages_cap, NULL, 0, res);
}

/**
 * kvp_extend_buf_locked() - kvp_extend_locked() into the caller's buffer
 * @c: the client
 * @e: the entries; out_nr_new of each is the answer on success, scratch
 *     on error
 * @count: entries
 * @pages_cap: most new page ids the caller can take
 * @buf: room for @buf_cap page ids, or NULL
 * @buf_cap: ids @buf holds
 * @res: as for kvp_extend_locked(); &kvp_extend_result.pages is @buf when
 *       the new ids fit it, which the caller must not kvfree()
 *
 * The driver offers a buffer on its stack, so that a decode step of a
 * small batch allocates nothing. This is kvp_extend_start_locked() and
 * all its steps in one hold of the lock.
 *
 * Context: @c->pool->lock held; may sleep (allocates).
 * Return: as kvp_extend_locked().
 */
int kvp_extend_buf_locked(struct kvp_client *c, struct kvpool_extend_entry *e,
			  u32 count, u32 pages_cap, u32 *buf, u32 buf_cap,
			  struct kvp_extend_result *res)
{
	struct kvp_op op;

	int ret;

	ret = kvp_extend_start_locked(c, e, count, pages_cap, buf, buf_cap,
				      res, &op, NULL);
	return kvp_op_all(ret, &op);
}

/**
 * kvp_extend_mem_get() - allocate what kvp_extend_start_locked() asked for
 * @mem: the arrays, with its want_* fields as the start left them
 *
 * Replaces the arrays the start asked for with ones of the sizes asked;
 * touches nothing but @mem, so the caller calls it without the pool lock.
 *
 * Context: may sleep; no lock needed.
 * Return: 0; -ENOMEM with every array of @mem freed and NULL.
 */
int kvp_extend_mem_get(struct kvp_extend_mem *mem)
{
	if (mem->want_pages) {
		kvfree(mem->pages);
		mem->pages_cap = mem->want_pages;
		mem->pages = kvmalloc_array(mem->pages_cap, sizeof(u32),
					    GFP_KERNEL_ACCOUNT);
	}
	if (mem->want_row_cap) {
		kvfree(mem->row);
		mem->row_idx = mem->want_row_idx;
		mem->row_cap = mem->want_row_cap;
		mem->row = kvmalloc_array(mem->row_cap, sizeof(u32),
					  GFP_KERNEL_ACCOUNT);
	}
	if ((mem->want_pages && !mem->pages) ||
	    (mem->want_row_cap && !mem->row)) {
		kvp_extend_mem_put(mem);
		return -ENOMEM;
	}
	return 0;
}

/**
 * kvp_extend_mem_put() - free what an EXTEND did not take of @mem
 * @mem: the arrays; NULL afterwards
 *
 * Context: any; no lock needed.
 */
void kvp_extend_mem_put(struct kvp_extend_mem *mem)
{
	kvfree(mem->pages);
	kvfree(mem->row);
	mem->pages = NULL;
	mem->row = NULL;
}

/*
 * Whether an EXTEND that passed its checks should have its big arrays
 * allocated without the lock first (struct kvp_extend_mem): the answer's
 * ids, and the biggest growth of a row's array, each when bigger than a
 * step's pages and not already given. Sets what to allocate.
 */
static bool kvp_extend_wants(struct kvp_client *c,
			     const struct kvpool_extend_entry *e, u32 count,
			     u32 need, u32 buf_cap, bool grow,
			     struct kvp_extend_mem *mem)
{
	struct kvp_pool *pool = c->pool;
	u32 i, best = 0, best_cap = 0, idx = 0;

	mem->want_pages = 0;
	mem->want_row_cap = 0;
	if (need > buf_cap && need > KVP_STEP_PAGES &&
	    (!mem->pages || mem->pages_cap < need))
		mem->want_pages = need;
	for (i = 0; grow && i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);
		u32 want = kvp_pages_for(pool, e[i].new_len);
		u32 cap;

		if (want <= r->cap)
			continue;
		cap = kvp_row_cap_for(r, want);
		if (cap - r->cap > best) {
			best = cap - r->cap;
			best_cap = cap;
			idx = kvp_row_index(pool, r);
		}
	}
	/* Given already, for this row and this room: nothing to ask. */
	if (best > KVP_STEP_PAGES &&
	    (!mem->row || mem->row_idx != idx || mem->row_cap != best_cap)) {
		mem->want_row_idx = idx;
		mem->want_row_cap = best_cap;
	}
	return mem->want_pages || mem->want_row_cap;
}

/*
 * An EXTEND that fails after its answer's array was had gives it back:
 * to @mem, for the caller's next try, if it came from there.
 */
static void kvp_extend_unwind(struct kvp_extend_result *res, u32 *buf,
			      struct kvp_extend_mem *mem, bool from_mem)
{
	if (from_mem)
		mem->pages = res->pages;
	else if (res->pages != buf)
		kvfree(res->pages);
	res->pages = NULL;
}

/**
 * kvp_extend_start_locked() - check and prepare an EXTEND
 * @c: the client
 * @e: the entries, as for kvp_extend_locked(); the caller keeps them
 *     until the op's last step
 * @count: entries
 * @pages_cap: most new page ids the caller can take
 * @buf: room for @buf_cap page ids, or NULL
 * @buf_cap: ids @buf holds
 * @res: the result, complete after the last step
 * @op: the op, for kvp_op_step_locked()
 * @mem: arrays the caller allocated without the lock, or NULL to
 *       allocate them here
 *
 * Everything that can fail happens here, before any page moves: the
 * lookups, the lengths, the quota and space checks and the allocations.
 * An op of more than %KVP_STEP_PAGES pages then reserves them
 * (&kvp_pool.pending_pages) and marks its rows busy, so that the lock may
 * be dropped between its steps.
 *
 * Context: @c->pool->lock held; may sleep (allocates).
 * Return: as kvp_extend_locked(), %KVP_EXTEND_NEED_CLEAR (with @mem given)
 * when its pool's budget is clearing the memory it lacks, or
 * %KVP_EXTEND_NEED_MEM when @mem
 * should hold more first (what, it says); on error and on that answer
 * nothing changed and @op must not be stepped.
 */
int kvp_extend_start_locked(struct kvp_client *c,
			    struct kvpool_extend_entry *e, u32 count,
			    u32 pages_cap, u32 *buf, u32 buf_cap,
			    struct kvp_extend_result *res, struct kvp_op *op,
			    struct kvp_extend_mem *mem)
{
	struct kvp_pool *pool = c->pool;
	const u32 pt = pool->page_tokens, row_tokens = pool->row_tokens;
	const u8 shift = pool->page_shift;
	u32 bad = ~0U;
	struct kvp_batch b;
	struct kvp_tenant *t;
	bool grow = false, from_mem = false;
	u64 need = 0;
	u32 avail, room = 0;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	memset(res, 0, sizeof(*res));
	res->error_index = ~0U;
	if (!count || count > pool->max_batch)
		return -EINVAL;
	/*
	 * One pass looks every entry up and checks its length. A lookup
	 * error is reported before any length error, as if the lookups had
	 * come first, so which errno an entry gets does not depend on how
	 * the checks are interleaved.
	 */
	kvp_batch_begin(&b, c);
	for (i = 0; i < count; i++) {
		u32 len = e[i].new_len;
		struct kvp_row *r;
		u32 want;

		ret = kvp_batch_lookup(&b, &e[i].handle, &r);
		if (ret) {
			res->error_index = i;
			return ret;
		}
		if (len < r->allocated || len > row_tokens) {
			if (bad == ~0U)
				bad = i;
			continue;
		}
		want = kvp_tokens_pages(len, pt, shift);
		grow |= want > r->cap;
		need += want - r->nr;
		e[i].out_nr_new = want - r->nr;	/* its answer, if all goes well */
	}
	if (bad != ~0U) {
		res->error_index = bad;
		return -EINVAL;
	}
	/* need <= count * 2^24 < 2^37: no overflow in u64. */
	if (need > pages_cap) {
		res->nr_pages = need > U32_MAX ? U32_MAX : (u32)need;
		return -ENOBUFS;
	}
	t = c->tenant;
	if (need && t->max_pages &&
	    t->pages + t->pending + need > t->max_pages) {
		res->shortfall = (u32)(t->pages + t->pending + need -
				       t->max_pages);
		kvp_refused(pool, t, false, -EDQUOT);
		return -EDQUOT;
	}
	avail = kvp_available(pool, t);
	/* What a budget could add is counted, not taken yet (see below). */
	if (need > avail && pool->headroom)
		room = pool->headroom(pool);
	if (need > (u64)avail + room) {
		res->shortfall = (u32)(need - avail - room);
		kvp_refused(pool, t, true, -ENOSPC);
		return -ENOSPC;
	}

	if (mem && kvp_extend_wants(c, e, count, (u32)need, buf_cap, grow,
				    mem))
		return KVP_EXTEND_NEED_MEM;

	/*
	 * Allocations come before any page moves. A row's array may keep
	 * the room it grew if a later one fails: that is capacity, not state.
	 */
	if (need > buf_cap && mem && mem->pages && mem->pages_cap >= need) {
		res->pages = mem->pages;
		mem->pages = NULL;
		from_mem = true;
	} else if (need > buf_cap) {
		res->pages = kvmalloc_array((u32)need, sizeof(u32),
					    GFP_KERNEL_ACCOUNT);
		if (!res->pages)
			return -ENOMEM;
	} else if (need) {
		res->pages = buf;
	}
	for (i = 0; grow && i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);
		u32 want = kvp_pages_for(pool, e[i].new_len);

		if (mem && mem->row && mem->row_idx == kvp_row_index(pool, r) &&
		    want > r->cap && mem->row_cap == kvp_row_cap_for(r, want)) {
			kvp_row_install(pool, r, mem->row, mem->row_cap);
			mem->row = NULL;
		}
		ret = kvp_row_reserve(pool, r, want);
		if (ret) {
			kvp_extend_unwind(res, buf, mem, from_mem);
			return ret;
		}
	}

	/*
	 * A pool on a budget takes the chunks it lacks last, when nothing
	 * else can fail, and its grow takes all it is asked for or none: an
	 * EXTEND that fails leaves the budget as it found it.
	 */
	if (need > avail && pool->grow) {
		ret = pool->grow(pool, (u32)(need - avail));
		if (ret >= 0)
			avail = kvp_available(pool, t);
		if (ret < 0 || need > avail) {
			kvp_extend_unwind(res, buf, mem, from_mem);
			if (ret < 0)
				return ret;
			/* Memory on its way: a caller that can drop the lock waits. */
			if (ret == KVP_GROW_WAIT && mem)
				return KVP_EXTEND_NEED_CLEAR;
			res->shortfall = (u32)(need - avail);
			kvp_refused(pool, t, true, -ENOSPC);
			return -ENOSPC;
		}
	}

	*op = (struct kvp_op){
		.c = c,
		.extend = e,
		.res = res,
		.count = count,
		.kind = KVP_OP_EXTEND,
		.left = (u32)need,
		.free_before = pool->free_pages,
		.stepped = need > KVP_STEP_PAGES,
	};
	if (op->stepped) {
		pool->pending_pages += (u32)need;
		t->pending += (u32)need;
		kvp_rows_busy(c, e, sizeof(*e), count);
	}
	return 0;
}

/*
 * One step of an EXTEND: up to %KVP_STEP_PAGES pages off the free map,
 * lowest first, into the answer; then the entries take their share from
 * there. Two tight loops: a decode step's rows take one page each, and
 * one loop doing both keeps too much live. A row that has not got all
 * its pages yet has the length of those it has (capped by its target),
 * so that between steps it is a row like any other.
 */
static bool kvp_extend_step(struct kvp_op *op)
{
	struct kvp_client *c = op->c;
	struct kvp_pool *pool = c->pool;
	struct kvpool_extend_entry *e = op->extend;
	struct kvp_extend_result *res = op->res;
	u32 n = op->left < KVP_STEP_PAGES ? op->left : KVP_STEP_PAGES;
	struct kvp_page *table = pool->pages;
	u32 done = res->nr_pages, end = done + n;
	struct kvp_popper pop;
	u32 *out;
	u32 j;

	/* No pages at all (growth within last pages): res->pages is NULL. */
	out = n ? res->pages + done : NULL;
	kvp_pop_begin(&pop, pool);
	for (j = 0; j < n; ) {
		kvp_pop_fill(&pop);
		/* A prefill takes whole free words: no bit scan per page. */
		if (pop.bits == ~0ULL && n - j >= 64) {
			u32 k, base = kvp_pop_word(&pop);

			for (k = 0; k < 64; k++)
				out[j + k] = base + k;
			j += 64;
			continue;
		}
		out[j++] = kvp_pop_next(&pop);
	}
	if (n)
		kvp_pop_end(&pop);
	out = res->pages;
	for (; op->i < op->count; op->i++, op->given = 0) {
		struct kvpool_extend_entry *x = &e[op->i];
		u32 idx = x->handle.req_pool_idx;
		struct kvp_row *r = &pool->rows[idx];
		u32 k = x->out_nr_new - op->given;
		u32 *pages;

		if (k > end - done)
			k = end - done;
		/* Within its last page a row may have no array at all. */
		if (k) {
			pages = r->pages + r->nr;
			for (j = 0; j < k; j++, done++) {
				pages[j] = out[done];
				table[out[done]] = (struct kvp_page){
					.next = KVP_NIL, .owner = idx };
			}
			r->nr += k;
			r->owned += k;
			op->given += k;
		}
		if (op->given < x->out_nr_new) {
			u64 len = (u64)r->nr * pool->page_tokens;

			r->allocated = len < x->new_len ? (u32)len : x->new_len;
			break;
		}
		r->allocated = x->new_len;
		r->busy = 0;
	}
	kvp_held_take(c, (int)n);
	res->nr_pages = done;
	op->left -= n;
	if (op->stepped) {
		pool->pending_pages -= n;
		c->tenant->pending -= n;
	}
	if (op->left)
		return true;
	/* Crossing the low watermark wakes pollers (see kvpool_pressure). */
	if (op->free_before >= pool->low_wmark &&
	    pool->free_pages < pool->low_wmark)
		kvp_pressure_changed(pool);
	return false;
}

static bool kvp_release_step(struct kvp_op *op);
static bool kvp_trim_step(struct kvp_op *op);
static bool kvp_swa_free_step(struct kvp_op *op);

/**
 * kvp_op_step_locked() - do the next step of a started op
 * @op: an op one of the _start_locked() functions returned 0 for
 *
 * Moves at most %KVP_STEP_PAGES pages. The caller calls it until it
 * returns false, and may drop and retake the pool lock between two
 * calls; the op's result is complete once it has returned false.
 *
 * Context: @op->c->pool->lock held.
 * Return: true while steps are left.
 */
bool kvp_op_step_locked(struct kvp_op *op)
{
	lockdep_assert_held(&op->c->pool->lock);
	switch (op->kind) {
	case KVP_OP_RELEASE:
		return kvp_release_step(op);
	case KVP_OP_TRIM:
		return kvp_trim_step(op);
	case KVP_OP_SWA_FREE:
		return kvp_swa_free_step(op);
	case KVP_OP_DONATE:
		return kvp_donate_step(op);
	default:
		return kvp_extend_step(op);
	}
}

/**
 * kvp_commit_locked() - move rows' committed lengths forward (COMMIT)
 * @c: the client
 * @e: the entries: a handle and the new committed length each
 * @count: entries
 * @error_index: gets the entry at fault; ~0U when none is
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch, a row
 * is named twice, an entry's reserved field is set, or a length is below
 * the row's committed length (tokens once written stay written) or above
 * its allocated one; -ENOENT or -ESTALE if a handle names no row @c holds
 * (kvp_lookup()). On error nothing changed.
 */
int kvp_commit_locked(struct kvp_client *c,
		      const struct kvpool_len_entry *e, u32 count,
		      u32 *error_index)
{
	struct kvp_pool *pool = c->pool;
	struct kvp_batch b;
	u32 bad = ~0U;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*error_index = ~0U;
	if (!count || count > pool->max_batch)
		return -EINVAL;
	/* One pass, lookup errors first: see kvp_extend_buf_locked(). */
	kvp_batch_begin(&b, c);
	for (i = 0; i < count; i++) {
		struct kvp_row *r;

		ret = kvp_batch_lookup(&b, &e[i].handle, &r);
		if (ret) {
			*error_index = i;
			return ret;
		}
		if (bad == ~0U && (e[i].__reserved || e[i].len < r->committed ||
				   e[i].len > r->allocated))
			bad = i;
	}
	if (bad != ~0U) {
		*error_index = bad;
		return -EINVAL;
	}
	for (i = 0; i < count; i++)
		b.rows[e[i].handle.req_pool_idx].committed = e[i].len;
	return 0;
}

/**
 * kvp_trim_locked() - free rows' speculative tails (TRIM)
 * @c: the client
 * @h: the rows' handles
 * @count: handles
 * @nr_freed: gets the pages freed
 * @error_index: gets the entry at fault; ~0U when none is
 *
 * Frees each row's pages that hold no committed token and cuts its
 * allocated length back to the committed one: what a scheduler does when
 * speculative tokens are rejected.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch or a
 * row is named twice; -ENOENT, -ESTALE or -EBUSY if a handle names no
 * row @c holds or one in another call's stepped op (kvp_lookup()). On
 * error nothing changed.
 */
int kvp_trim_locked(struct kvp_client *c, const struct kvpool_handle *h,
		    u32 count, u32 *nr_freed, u32 *error_index)
{
	struct kvp_op op;

	int ret;

	ret = kvp_trim_start_locked(c, h, count, nr_freed, error_index, &op);
	return kvp_op_all(ret, &op);
}

/**
 * kvp_trim_start_locked() - check and prepare a TRIM
 * @c: the client
 * @h: the rows' handles; the caller keeps them until the op's last step
 * @count: handles
 * @nr_freed: gets the pages freed, complete after the last step
 * @error_index: gets the entry at fault; ~0U when none is
 * @op: the op, for kvp_op_step_locked()
 *
 * Context: @c->pool->lock held.
 * Return: as kvp_trim_locked(); on error nothing changed and @op must not
 * be stepped.
 */
int kvp_trim_start_locked(struct kvp_client *c, const struct kvpool_handle *h,
			  u32 count, u32 *nr_freed, u32 *error_index,
			  struct kvp_op *op)
{
	struct kvp_pool *pool = c->pool;
	u64 beyond = 0;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_freed = 0;
	ret = kvp_lookup_batch(c, h, sizeof(*h), count, error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &h[i]);

		beyond += r->nr - kvp_pages_for(pool, r->committed);
	}
	*op = (struct kvp_op){
		.c = c,
		.handles = h,
		.nr_freed = nr_freed,
		.count = count,
		.stepped = beyond > KVP_STEP_PAGES,
		.kind = KVP_OP_TRIM,
	};
	if (op->stepped)
		kvp_rows_busy(c, h, sizeof(*h), count);
	return 0;
}

/* One step of a TRIM: each row's pages past its committed length. */
static bool kvp_trim_step(struct kvp_op *op)
{
	struct kvp_client *c = op->c;
	struct kvp_pool *pool = c->pool;
	u32 budget = KVP_STEP_PAGES;

	for (; op->i < op->count; op->i++) {
		struct kvp_row *r = kvp_row_of(c, &op->handles[op->i]);
		u32 freed;

		budget -= kvp_row_free_tail(pool, r, r->committed, budget, NULL,
					    &freed);
		*op->nr_freed += freed;
		if (r->nr > kvp_pages_for(pool, r->committed))
			return true;	/* this row again, next step */
		r->allocated = r->committed;
		r->busy = 0;
	}
	return false;
}

/**
 * kvp_release_locked() - free rows and what they own (RELEASE)
 * @c: the client
 * @h: the rows' handles
 * @count: handles
 * @flags: 0 or %KVPOOL_RELEASE_DONATE
 * @nr_freed: gets the pages freed (not those donated)
 * @error_index: gets the entry at fault; ~0U when none is
 *
 * With %KVPOOL_RELEASE_DONATE each row first donates its whole committed
 * pages to @c's prefix cache, as kvp_donate_locked() to the committed
 * length would; the handles are dead afterwards. This is
 * kvp_release_start_locked() and all its steps in one hold of the lock.
 *
 * Context: @c->pool->lock held; may sleep (allocates, with the flag).
 * Return: 0; -EOPNOTSUPP for another flag; -EINVAL if @count is 0 or
 * above &kvp_pool.max_batch, a row is named twice, or, with the flag, a
 * row's prefix has holes (kvp_prefix_holed()); -ENOENT, -ESTALE or
 * -EBUSY if a handle names no row @c holds or one in another call's
 * stepped op (kvp_lookup()); -ENOMEM, with the flag, if the cache cannot
 * grow. On error nothing changed (the cache array may keep room it grew).
 */
int kvp_release_locked(struct kvp_client *c, const struct kvpool_handle *h,
		       u32 count, u32 flags, u32 *nr_freed, u32 *error_index)
{
	struct kvp_op op;

	int ret;

	ret = kvp_release_start_locked(c, h, count, flags, nr_freed,
				       error_index, &op);
	return kvp_op_all(ret, &op);
}

/**
 * kvp_release_start_locked() - check and prepare a RELEASE
 * @c: the client
 * @h: the rows' handles; the caller keeps them until the op's last step
 * @count: handles
 * @flags: 0 or %KVPOOL_RELEASE_DONATE
 * @nr_freed: gets the pages freed, complete after the last step
 * @error_index: gets the entry at fault; ~0U when none is
 * @op: the op, for kvp_op_step_locked()
 *
 * Everything is checked here. With %KVPOOL_RELEASE_DONATE, or when the
 * rows own at most %KVP_STEP_PAGES pages, the whole op is done here;
 * otherwise the rows are marked busy and the steps free their pages from
 * each row's tail, as a TRIM would, then the rows.
 *
 * Context: @c->pool->lock held; may sleep (allocates, with the flag).
 * Return: as kvp_release_locked(); on error nothing changed and @op must
 * not be stepped.
 */
int kvp_release_start_locked(struct kvp_client *c,
			     const struct kvpool_handle *h, u32 count,
			     u32 flags, u32 *nr_freed, u32 *error_index,
			     struct kvp_op *op)
{
	struct kvp_pool *pool = c->pool;
	bool donate = flags & KVPOOL_RELEASE_DONATE;
	u32 freed = 0, moved = 0;
	u64 work = 0;
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
	for (i = 0; donate && i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &h[i]);

		if (kvp_prefix_holed(r)) {
			*error_index = i;
			return -EINVAL;
		}
		moved += kvp_donate_count(pool, r, r->committed);
	}
	if (donate) {
		ret = kvp_cache_reserve(c, moved);
		if (ret)
			return ret;
	}
	/* Every entry of every row is looked at once, donated ones twice. */
	for (i = 0; i < count; i++)
		work += kvp_row_of(c, &h[i])->nr;
	*op = (struct kvp_op){
		.c = c,
		.handles = h,
		.nr_freed = nr_freed,
		.count = count,
		.stepped = work + moved > KVP_STEP_PAGES,
		.donate = donate,
		.kind = KVP_OP_RELEASE,
	};
	if (op->stepped) {
		c->cache_pending += moved;
		kvp_rows_busy(c, h, sizeof(*h), count);
		return 0;
	}
	/* Not stepped: all of it now, and the steps find nothing left. */
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &h[i]);

		if (donate)
			kvp_row_donate(c, r, r->committed);
		freed += kvp_row_free(pool, r);
	}
	*nr_freed = freed;
	op->i = count;
	return 0;
}

/*
 * One step of a stepped RELEASE: with the flag, a row's donation first,
 * then its entries from the end, then the row, emptied.
 */
static bool kvp_release_step(struct kvp_op *op)
{
	struct kvp_client *c = op->c;
	struct kvp_pool *pool = c->pool;
	u32 budget = KVP_STEP_PAGES;

	for (; op->i < op->count; op->i++) {
		struct kvp_row *r = kvp_row_of(c, &op->handles[op->i]);
		u32 freed;

		if (op->donate) {
			u32 n = kvp_donate_some(c, r, r->committed, budget);

			c->cache_pending -= n;
			budget -= n;
			if (!budget)
				return true;	/* this row again, next step */
		}
		budget -= kvp_row_free_tail(pool, r, 0, budget, NULL, &freed);
		*op->nr_freed += freed;
		if (r->nr)
			return true;
		kvp_row_free(pool, r);
	}
	return false;
}

/**
 * kvp_swa_free_locked() - free pages behind a sliding window (SWA_FREE)
 * @c: the client
 * @e: the entries: a handle and the window's edge, in tokens, each
 * @count: entries
 * @nr_freed: gets the pages freed
 * @error_index: gets the entry at fault; ~0U when none is
 *
 * Frees each row's pages wholly below the edge, never below its protected
 * length (those are prefix-cache pages), and leaves
 * %KVPOOL_PAGE_NONE in their places, so positions keep their meaning;
 * &kvp_row.swa_evicted rises to the edge rounded down to a page.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -EINVAL if @count is 0 or above &kvp_pool.max_batch, a row
 * is named twice, an entry's reserved field is set, or an edge is above
 * the row's committed length or below its protected or swa_evicted one;
 * -ENOENT, -ESTALE or -EBUSY if a handle names no row @c holds or one in
 * another call's stepped op (kvp_lookup()). On error nothing changed.
 */
int kvp_swa_free_locked(struct kvp_client *c,
			const struct kvpool_len_entry *e, u32 count,
			u32 *nr_freed, u32 *error_index)
{
	struct kvp_op op;

	int ret;

	ret = kvp_swa_free_start_locked(c, e, count, nr_freed, error_index,
					&op);
	return kvp_op_all(ret, &op);
}

/* Where a row's window may free from: past its prefix and its holes. */
static u32 kvp_swa_start(const struct kvp_row *r, u32 pt)
{
	return kvp_row_prefix(r) / pt;
}

/**
 * kvp_swa_free_start_locked() - check and prepare a SWA_FREE
 * @c: the client
 * @e: the entries; the caller keeps them until the op's last step
 * @count: entries
 * @nr_freed: gets the pages freed, complete after the last step
 * @error_index: gets the entry at fault; ~0U when none is
 * @op: the op, for kvp_op_step_locked()
 *
 * Context: @c->pool->lock held.
 * Return: as kvp_swa_free_locked(); on error nothing changed and @op must
 * not be stepped.
 */
int kvp_swa_free_start_locked(struct kvp_client *c,
			      const struct kvpool_len_entry *e, u32 count,
			      u32 *nr_freed, u32 *error_index,
			      struct kvp_op *op)
{
	struct kvp_pool *pool = c->pool;
	u32 pt = pool->page_tokens;
	u64 span = 0;
	u32 i;
	int ret;

	lockdep_assert_held(&pool->lock);
	*nr_freed = 0;
	ret = kvp_lookup_batch(c, e, sizeof(*e), count, error_index);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct kvp_row *r = kvp_row_of(c, &e[i].handle);
		u32 start = kvp_swa_start(r, pt);

		if (e[i].__reserved || e[i].len > r->committed ||
		    e[i].len < r->protected || e[i].len < r->swa_evicted) {
			*error_index = i;
			return -EINVAL;
		}
		if (e[i].len / pt > start)
			span += e[i].len / pt - start;
	}
	*op = (struct kvp_op){
		.c = c,
		.lens = e,
		.nr_freed = nr_freed,
		.count = count,
		.stepped = span > KVP_STEP_PAGES,
		.kind = KVP_OP_SWA_FREE,
	};
	if (op->stepped)
		kvp_rows_busy(c, e, sizeof(*e), count);
	return 0;
}

/*
 * One step of a SWA_FREE. A row left mid-way has its window's edge where
 * the step stopped, a whole page: an ordinary row between steps.
 */
static bool kvp_swa_free_step(struct kvp_op *op)
{
	struct kvp_client *c = op->c;
	struct kvp_pool *pool = c->pool;
	u32 pt = pool->page_tokens;
	u32 budget = KVP_STEP_PAGES;

	for (; op->i < op->count; op->i++) {
		const struct kvpool_len_entry *x = &op->lens[op->i];
		struct kvp_row *r = kvp_row_of(c, &x->handle);
		u32 end = x->len / pt;
		u32 n = 0, p;

		/* protected and swa_evicted are whole pages: all owned here. */
		for (p = kvp_swa_start(r, pt); p < end && budget; p++) {
			if (r->pages[p] == KVPOOL_PAGE_NONE)
				continue;
			kvp_page_push(pool, r->pages[p]);
			r->pages[p] = KVPOOL_PAGE_NONE;
			n++;
			budget--;
		}
		if (p * pt > r->swa_evicted)
			r->swa_evicted = p * pt;
		kvp_row_take(pool, r, -(int)n);
		*op->nr_freed += n;
		if (p < end)
			return true;	/* this row again, next step */
		r->busy = 0;
	}
	return false;
}

/**
 * kvp_to_slot_locked() - park a row under a session id (TO_SLOT)
 * @c: the client
 * @h: the row's handle, dead afterwards
 * @session: the session id, unique among @c's slots
 * @nr_pages: gets the pages the row owns
 *
 * The row keeps its pages, lengths and cache pins, so that a streaming
 * session's next turn can take it back with kvp_from_slot_locked().
 *
 * Context: @c->pool->lock held.
 * Return: 0; -ENOENT or -ESTALE if @h names no row @c holds
 * (kvp_lookup()); -EEXIST if @c already has a slot @session. On error
 * nothing changed.
 */
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

/**
 * kvp_from_slot_peek_locked() - what FROM_SLOT would give, without it
 * @c: the client
 * @session: the slot's session id
 * @out: gets the handle kvp_from_slot_locked() would return now
 * @nr_pages: gets the pages the parked row owns
 *
 * The driver writes this answer to userspace before it takes the slot,
 * so that a fault on the way out cannot leave a row held under a handle
 * nobody knows.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -ENOENT if @c has no slot @session. Changes nothing either
 * way.
 */
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

/**
 * kvp_from_slot_locked() - take a parked row back (FROM_SLOT)
 * @c: the client
 * @session: the slot's session id
 * @out: gets the row's new handle
 * @nr_pages: gets the pages the row owns
 *
 * The row is held by @c again, under a new generation: a handle from
 * before it was parked stays dead.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -ENOENT if @c has no slot @session, and then nothing
 * changed.
 */
int kvp_from_slot_locked(struct kvp_client *c, u64 session,
			 struct kvpool_handle *out, u32 *nr_pages)
{
	struct kvp_row *r;
	u32 *link;
	int ret;

	/* The answer is the peek's, so the two cannot drift apart. */
	ret = kvp_from_slot_peek_locked(c, session, out, nr_pages);
	if (ret)
		return ret;
	r = kvp_slot_find(c, session, &link);
	*link = r->next;
	r->session = 0;
	kvp_row_move(c->pool, r, KVP_ROW_HELD, c);
	r->gen = out->generation;
	return 0;
}

/**
 * kvp_slot_release_locked() - free a parked row (SLOT_RELEASE)
 * @c: the client
 * @session: the slot's session id
 * @nr_freed: gets the pages freed
 *
 * Frees the row and every page it owns and unpins the cache pages it
 * borrows, as RELEASE would for a held row.
 *
 * Context: @c->pool->lock held.
 * Return: 0; -ENOENT if @c has no slot @session, and then nothing
 * changed.
 */
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
	*nr_freed = kvp_slot_free(pool, r, link, NULL);
	return 0;
}

/**
 * kvp_row_query_locked() - describe a row (ROW_QUERY)
 * @c: the client
 * @q: the query: a handle, or with %KVPOOL_QUERY_BY_SLOT a session id;
 *     its ``out_*`` fields are filled on success
 * @pages: NULL, or gets a core allocation of the first
 *         min(pages_cap, out_nr_pages) page ids, NULL if that is 0; the
 *         caller kvfree()s it
 *
 * Flags other than %KVPOOL_QUERY_BY_SLOT are the driver's to refuse.
 *
 * Context: @c->pool->lock held; may sleep (allocates, with @pages).
 * Return: 0; -ENOENT if @c has no such slot; -ENOENT or -ESTALE if the
 * handle names no row @c holds (kvp_lookup()); -ENOMEM. Changes nothing
 * either way.
 */
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
