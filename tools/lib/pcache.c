// SPDX-License-Identifier: GPL-2.0-only
/*
 * libkvsched: the prefix-cache mirror (pcache.h).
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * The order in which pages are picked is part of the tools' output: a
 * seed's figures (kvpool-replay's summary line) depend on it.
 */
#include <stdlib.h>
#include <string.h>

#include "pcache.h"

/* ---- lists of pages (LRU, orphans) -------------------------------------- */

static void list_add_tail(struct pcache *pc, struct pc_list *l, u32 p)
{
	pc->pg[p].prev = l->tail;
	pc->pg[p].next = PC_NIL;
	if (l->tail != PC_NIL)
		pc->pg[l->tail].next = p;
	else
		l->head = p;
	l->tail = p;
	l->n++;
}

static void list_add_head(struct pcache *pc, struct pc_list *l, u32 p)
{
	pc->pg[p].prev = PC_NIL;
	pc->pg[p].next = l->head;
	if (l->head != PC_NIL)
		pc->pg[l->head].prev = p;
	else
		l->tail = p;
	l->head = p;
	l->n++;
}

static void list_del(struct pcache *pc, struct pc_list *l, u32 p)
{
	struct pc_page *e = &pc->pg[p];

	if (e->prev != PC_NIL)
		pc->pg[e->prev].next = e->next;
	else
		l->head = e->next;
	if (e->next != PC_NIL)
		pc->pg[e->next].prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = PC_NIL;
	l->n--;
}

static void list_init(struct pc_list *l)
{
	l->head = l->tail = PC_NIL;
	l->n = 0;
}

/*
 * By release, a page is on a list exactly while it can be evicted:
 * called after anything that may change that (pins, children, state).
 */
static void relist(struct pcache *pc, u32 p)
{
	struct pc_page *e = &pc->pg[p];
	bool orphan = e->state == PG_ORPHAN;
	bool evictable = pc_evictable(pc, p);

	if (pc->order != PC_BY_RELEASE || evictable == e->in_lru)
		return;
	if (!evictable)
		list_del(pc, orphan ? &pc->orphans : &pc->lru, p);
	else if (orphan)
		list_add_head(pc, &pc->orphans, p);
	else
		list_add_tail(pc, &pc->lru, p);
	e->in_lru = evictable;
}

void pc_init(struct pcache *pc, u32 nr_pages, enum pc_order order)
{
	u32 i, nb = 1;

	memset(pc, 0, sizeof(*pc));
	pc->order = order;
	pc->pg = xcalloc(nr_pages, sizeof(*pc->pg));
	for (i = 0; i < nr_pages; i++) {
		pc->pg[i].prev = pc->pg[i].next = pc->pg[i].hnext = PC_NIL;
		pc->pg[i].parent = PC_ROOT;
	}
	while (nb < nr_pages)
		nb *= 2;
	pc->bucket = xcalloc(nb, sizeof(u32));
	memset(pc->bucket, 0xff, nb * sizeof(u32));
	pc->hmask = nb - 1;
	list_init(&pc->lru);
	list_init(&pc->orphans);
}

void pc_free(struct pcache *pc)
{
	free(pc->pg);
	free(pc->bucket);
	pc->pg = NULL;
	pc->bucket = NULL;
}

/* ---- the radix index: one node per cached page ------------------------- */

static u32 bucket_of(const struct pcache *pc, u32 parent, u64 key)
{
	return (u32)mix64(key ^ ((u64)parent * 0x9e3779b97f4a7c15ULL)) &
	       pc->hmask;
}

u32 pc_lookup(const struct pcache *pc, u32 parent, u64 key)
{
	u32 p = pc->bucket[bucket_of(pc, parent, key)];

	while (p != PC_NIL) {
		const struct pc_page *e = &pc->pg[p];

		if (e->state == PG_NODE && e->parent == parent &&
		    e->key == key)
			return p;
		p = e->hnext;
	}
	return PC_NIL;
}

void pc_touch(struct pcache *pc, u32 p)
{
	if (pc->order != PC_BY_USE || !pc->pg[p].in_lru)
		return;
	list_del(pc, &pc->lru, p);
	list_add_tail(pc, &pc->lru, p);
}

void pc_insert(struct pcache *pc, u32 parent, u64 key, u32 p)
{
	struct pc_page *e = &pc->pg[p];
	u32 b = bucket_of(pc, parent, key);

	if (pc->order == PC_BY_USE || e->in_lru)
		list_del(pc, &pc->orphans, p);
	e->in_lru = false;
	e->state = PG_NODE;
	e->parent = parent;
	e->key = key;
	e->nchild = 0;
	e->hnext = pc->bucket[b];
	pc->bucket[b] = p;
	if (parent != PC_ROOT && !pc->pg[parent].nchild++ &&
	    pc->pg[parent].in_lru) {
		list_del(pc, &pc->lru, parent);
		pc->pg[parent].in_lru = false;
	}
	if (pc->order == PC_BY_RELEASE) {
		relist(pc, p);
		return;
	}
	list_add_tail(pc, &pc->lru, p);
	e->in_lru = true;
}

static void unhash(struct pcache *pc, u32 p)
{
	u32 *pos = &pc->bucket[bucket_of(pc, pc->pg[p].parent,
					 pc->pg[p].key)];

	while (*pos != p)
		pos = &pc->pg[*pos].hnext;
	*pos = pc->pg[p].hnext;
	pc->pg[p].hnext = PC_NIL;
}

void pc_add_orphan(struct pcache *pc, u32 p)
{
	pc->pg[p].state = PG_ORPHAN;
	pc->pg[p].pins = 0;
	pc->ncache++;
	if (pc->order == PC_BY_RELEASE)
		relist(pc, p);
	else
		list_add_tail(pc, &pc->orphans, p);
}

/* ---- pins --------------------------------------------------------------- */

void pc_pin(struct pcache *pc, u32 p)
{
	if (!pc->pg[p].pins++)
		pc->npinned++;
	relist(pc, p);
}

bool pc_unpin(struct pcache *pc, u32 p)
{
	if (!pc->pg[p].pins)
		return false;
	if (!--pc->pg[p].pins)
		pc->npinned--;
	relist(pc, p);
	return true;
}

bool pc_evictable(const struct pcache *pc, u32 p)
{
	const struct pc_page *e = &pc->pg[p];

	if (e->pins || e->urefs)
		return false;
	return e->state == PG_ORPHAN || (e->state == PG_NODE && !e->nchild);
}

/* ---- eviction ----------------------------------------------------------- */

/* Mark @p for eviction into @ids; its parent may become a leaf. */
static void pick(struct pcache *pc, u32 p, u32 *ids, u32 *n)
{
	struct pc_page *e = &pc->pg[p];

	if (e->state == PG_NODE) {
		if (e->parent != PC_ROOT)
			pc->pg[e->parent].nchild--;
		e->state = PG_EVICT_NODE;
	} else {
		e->state = PG_EVICT_ORPHAN;
	}
	ids[(*n)++] = p;
}

u32 pc_pick_orphans(struct pcache *pc, u32 *ids, u32 cap)
{
	u32 n = 0, p;

	for (p = pc->orphans.head; p != PC_NIL && n < cap; p = pc->pg[p].next)
		if (pc_evictable(pc, p))
			pick(pc, p, ids, &n);
	return n;
}

u32 pc_pick_lru(struct pcache *pc, u32 *ids, u32 cap)
{
	u32 n = 0, p;

	for (p = pc->orphans.head; p != PC_NIL && n < cap; p = pc->pg[p].next)
		if (pc_evictable(pc, p))
			pick(pc, p, ids, &n);
	for (p = pc->lru.head; p != PC_NIL && n < cap; p = pc->pg[p].next) {
		u32 q;

		if (!pc_evictable(pc, p))
			continue;
		pick(pc, p, ids, &n);
		for (q = pc->pg[p].parent;
		     q != PC_ROOT && n < cap && pc_evictable(pc, q);
		     q = pc->pg[q].parent)
			pick(pc, q, ids, &n);
	}
	return n;
}

u32 pc_pick_all(struct pcache *pc, u32 *ids, u32 cap)
{
	u32 n = 0, p;

	for (p = pc->orphans.head; p != PC_NIL && n < cap; p = pc->pg[p].next)
		pick(pc, p, ids, &n);
	for (p = pc->lru.head; p != PC_NIL && n < cap; p = pc->pg[p].next)
		pick(pc, p, ids, &n);
	return n;
}

void pc_evicted(struct pcache *pc, const u32 *ids, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		u32 p = ids[i];
		struct pc_page *e = &pc->pg[p];

		if (e->state == PG_EVICT_ORPHAN) {
			list_del(pc, &pc->orphans, p);
			e->in_lru = false;
		} else {
			unhash(pc, p);
			if (e->in_lru)
				list_del(pc, &pc->lru, p);
			e->in_lru = false;
		}
		e->state = PG_NONE;
		pc->ncache--;
	}
	/* A parent whose last child went is a leaf again, the oldest. */
	for (i = 0; i < n; i++) {
		u32 q = pc->pg[ids[i]].parent;

		pc->pg[ids[i]].parent = PC_ROOT;
		if (q == PC_ROOT || pc->pg[q].state != PG_NODE ||
		    pc->pg[q].nchild || pc->pg[q].in_lru)
			continue;
		/* By release, a pinned one joins at its last unpin. */
		if (pc->order == PC_BY_RELEASE && !pc_evictable(pc, q))
			continue;
		list_add_head(pc, &pc->lru, q);
		pc->pg[q].in_lru = true;
	}
}
