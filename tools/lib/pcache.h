/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libkvsched: a scheduler's mirror of its prefix cache, the radix index
 * SGLang keeps, at page granularity.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * The broker only knows which pages are in a client's cache and how many
 * of its rows pin each; the index lives here. Each cached page is a node
 * of the index (keyed by its parent node and a hash of its tokens) or an
 * orphan (a duplicate a donate left, or a page whose text fell out of
 * the index). Eviction takes unpinned orphans first, then unpinned
 * leaves from the head of the LRU list, a leaf's parent right after it
 * once it became a leaf. What "least recently used" means is the
 * scheduler's choice, made once at pc_init():
 *
 *  - PC_BY_USE (kvpool-replay): every leaf is on the LRU list, pinned or
 *    not, and goes to its tail when the scheduler touches it (a match at
 *    admission); orphans leave in the order they came.
 *  - PC_BY_RELEASE (kvpool-sim): a page is on a list exactly while it
 *    can be evicted, and joins it when it becomes so: a node at the
 *    LRU's tail (its last unpin, or its donate), an orphan at the head of
 *    the orphans (a fresh duplicate is the first to go). pc_touch() does
 *    nothing; urefs are not used.
 *
 * What a key is and what happens to a row's pages are the scheduler's:
 * the replay hashes tokens and walks the index with a cursor per row
 * (urefs); the sim names each page's text by its session and position.
 * A seed's figures depend on the order pages are picked in, so neither
 * order may change without the tools' figures changing with it.
 */
#ifndef KVPOOL_PCACHE_H
#define KVPOOL_PCACHE_H

#include "kvsched.h"

#define PC_NIL		0xffffffffU	/* end of a list, no page */
#define PC_ROOT		0xfffffffeU	/* the index's root */

/* This client's view of a page. */
enum {
	PG_NONE,		/* not ours, or free */
	PG_ROW,			/* owned by one of our rows or slots */
	PG_NODE,		/* in our cache, a node of the index */
	PG_ORPHAN,		/* in our cache, in no node */
	PG_EVICT_NODE,		/* picked for eviction */
	PG_EVICT_ORPHAN,
};

struct pc_page {
	u32 prev, next;		/* LRU (nodes) or orphan list */
	u32 hnext;		/* hash chain */
	u32 parent;		/* node: parent node or PC_ROOT */
	u32 nchild;
	u32 pins;		/* our rows mapping it below protected */
	u32 urefs;		/* the scheduler's own references */
	u8 state;
	bool in_lru;		/* on the LRU list; by release: or orphans */
	u64 key;		/* node: hash of its page's tokens */
};

enum pc_order {
	PC_BY_USE,
	PC_BY_RELEASE,
};

struct pc_list {
	u32 head, tail, n;
};

struct pcache {
	struct pc_page *pg;	/* by page id */
	u32 *bucket;
	u32 hmask;
	struct pc_list lru;	/* leaf nodes, least recently used first */
	struct pc_list orphans;
	u32 ncache, npinned;
	enum pc_order order;
};

void pc_init(struct pcache *pc, u32 nr_pages, enum pc_order order);
void pc_free(struct pcache *pc);

/* The node under @parent for @key, or PC_NIL. */
u32 pc_lookup(const struct pcache *pc, u32 parent, u64 key);
/* Orphan @p becomes the node under @parent for @key, a new leaf. */
void pc_insert(struct pcache *pc, u32 parent, u64 key, u32 p);
/* By use: a leaf used now goes to the LRU's tail; inner nodes are not on it. */
void pc_touch(struct pcache *pc, u32 p);
/* Page @p, unpinned, joins the cache as an orphan. */
void pc_add_orphan(struct pcache *pc, u32 p);

void pc_pin(struct pcache *pc, u32 p);
/* false, and nothing changed, if @p had no pins: the mirror is wrong. */
bool pc_unpin(struct pcache *pc, u32 p);
bool pc_evictable(const struct pcache *pc, u32 p);

/*
 * Picking pages for eviction into @ids (at most @cap): the caller
 * evicts ids[0..n) at the broker, then tells pc_evicted(). Each returns
 * n; 0 when there is nothing (more) to pick.
 */
/* Unpinned orphans, then unpinned leaves with their parent chains. */
u32 pc_pick_lru(struct pcache *pc, u32 *ids, u32 cap);
/* Unpinned orphans only: the duplicates donates left. */
u32 pc_pick_orphans(struct pcache *pc, u32 *ids, u32 cap);
/* Every orphan and leaf, pinned or not (by release: the unpinned). */
u32 pc_pick_all(struct pcache *pc, u32 *ids, u32 cap);
/* ids[0..n), picked above, are gone from the broker's cache. */
void pc_evicted(struct pcache *pc, const u32 *ids, u32 n);

#endif /* KVPOOL_PCACHE_H */
