// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench, floor side: the least bookkeeping that does the same
 * page work. Free pages are a LIFO array of u32 ids, free rows another;
 * a row is one growable u32 array of its page ids and its lengths. An
 * extend is checked whole before any page is taken (all or nothing, as
 * kvpool's), nothing else is checked: no generations, owners, tenants,
 * counters or batch marks. What the core costs above this is what its
 * guarantees cost.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct f_row {
	u32 *pages;
	u32 nr;
	u32 cap;
	u32 allocated;
	u32 committed;
	u32 gen;
};

/* A parked row: the floor keeps few, and finds them by looking. */
struct f_slot {
	u64 session;
	u32 row;
};

static struct kb_geom geom;
static u32 *free_pages, nr_free;
static u32 *free_rows, nr_free_rows;
static struct f_row *rows;
static struct f_slot *slots;
static u32 nr_slots, slots_cap;

static int f_setup(const struct kb_geom *g)
{
	u32 i;

	geom = *g;
	free_pages = xcalloc(g->nr_pages, sizeof(u32));
	free_rows = xcalloc(g->nr_rows, sizeof(u32));
	rows = xcalloc(g->nr_rows, sizeof(*rows));
	/* Popped from the end: page 0 and row 0 first, as a fresh pool. */
	for (i = 0; i < g->nr_pages; i++)
		free_pages[i] = g->nr_pages - 1 - i;
	for (i = 0; i < g->nr_rows; i++)
		free_rows[i] = g->nr_rows - 1 - i;
	nr_free = g->nr_pages;
	nr_free_rows = g->nr_rows;
	nr_slots = 0;
	return 0;
}

static void f_teardown(void)
{
	u32 i;

	for (i = 0; rows && i < geom.nr_rows; i++)
		free(rows[i].pages);
	free(rows);
	free(free_pages);
	free(free_rows);
	free(slots);
	rows = NULL;
	free_pages = NULL;
	free_rows = NULL;
	slots = NULL;
	slots_cap = 0;
	nr_slots = 0;
}

static int f_alloc_rows(struct kvpool_handle *h, u32 n)
{
	u32 i;

	if (n > nr_free_rows)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		u32 r = free_rows[--nr_free_rows];

		rows[r].gen++;
		h[i].req_pool_idx = r;
		h[i].generation = rows[r].gen;
	}
	return (int)n;
}

static int f_extend(struct kvpool_extend_entry *e, u32 n, u32 *pages,
		    u32 pages_cap)
{
	u32 pt = geom.page_tokens, need = 0, out = 0, i;

	for (i = 0; i < n; i++)
		need += div_up(e[i].new_len, pt) -
			rows[e[i].handle.req_pool_idx].nr;
	if (need > pages_cap)
		return -ENOBUFS;
	if (need > nr_free)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		struct f_row *r = &rows[e[i].handle.req_pool_idx];
		u32 want = div_up(e[i].new_len, pt);

		if (want > r->cap) {
			r->cap = max_u32(want, r->cap * 2);
			r->pages = xrealloc(r->pages, r->cap, sizeof(u32));
		}
		e[i].out_nr_new = want - r->nr;
		while (r->nr < want) {
			u32 p = free_pages[--nr_free];

			r->pages[r->nr++] = p;
			pages[out++] = p;
		}
		r->allocated = e[i].new_len;
	}
	return (int)out;
}

static int f_commit(const struct kvpool_len_entry *e, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		rows[e[i].handle.req_pool_idx].committed = e[i].len;
	return 0;
}

static int f_release(const struct kvpool_handle *h, u32 n)
{
	u32 freed = 0, i;

	for (i = 0; i < n; i++) {
		u32 idx = h[i].req_pool_idx;
		struct f_row *r = &rows[idx];

		memcpy(free_pages + nr_free, r->pages, r->nr * sizeof(u32));
		nr_free += r->nr;
		freed += r->nr;
		r->nr = 0;
		r->allocated = 0;
		r->committed = 0;
		free_rows[nr_free_rows++] = idx;
	}
	return (int)freed;
}

static int f_to_slot(struct kvpool_handle h, u64 session)
{
	if (nr_slots == slots_cap) {
		slots_cap = slots_cap ? slots_cap * 2 : 16;
		slots = xrealloc(slots, slots_cap, sizeof(*slots));
	}
	slots[nr_slots].session = session;
	slots[nr_slots].row = h.req_pool_idx;
	nr_slots++;
	return (int)rows[h.req_pool_idx].nr;
}

static int f_from_slot(u64 session, struct kvpool_handle *h)
{
	u32 i;

	for (i = 0; i < nr_slots; i++) {
		if (slots[i].session != session)
			continue;
		h->req_pool_idx = slots[i].row;
		h->generation = ++rows[slots[i].row].gen;
		slots[i] = slots[--nr_slots];
		return (int)rows[h->req_pool_idx].nr;
	}
	return -ENOENT;
}

const struct kb_side kb_floor_side = {
	.name = "floor",
	.setup = f_setup,
	.teardown = f_teardown,
	.alloc_rows = f_alloc_rows,
	.extend = f_extend,
	.commit = f_commit,
	.release = f_release,
	.to_slot = f_to_slot,
	.from_slot = f_from_slot,
};
