/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace stand-ins for the kernel services the kvpool core uses
 * (driver/kvp_os.h), in the manner of the kernel's tools/testing/radix-tree:
 * allocations are counted so a test can prove nothing leaked, the Nth
 * allocation can be made to fail, and the pool lock is a flag the core
 * asserts, so a call without the lock aborts the test.
 *
 * It lives beside the core, not under selftests/, because programs link
 * it too (tools/kvpool-replay, tools/kvpool-bench): what they build
 * against belongs to the core's tree. driver/kvp_os.h includes it by its
 * path from there, so no -I is needed; driver/core.mk names its files
 * (KVP_USER_SRC_PATHS, KVP_USER_HDR_PATHS). Kbuild never builds it.
 */
#ifndef _KVP_OS_USER_H
#define _KVP_OS_USER_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint64_t u64;

#define U32_MAX		UINT32_MAX

/* The pool lock is a flag: taking it twice or asserting it unheld aborts. */
struct mutex {
	bool held;
};

void kvp_user_lock(struct mutex *l, bool take, const char *func);
void kvp_user_assert_held(const struct mutex *l, const char *func);

#define mutex_init(l)		((l)->held = false)
#define mutex_destroy(l)	((void)(l))
#define mutex_lock(l)		kvp_user_lock(l, true, __func__)
#define mutex_unlock(l)		kvp_user_lock(l, false, __func__)
#define lockdep_assert_held(l)	kvp_user_assert_held(l, __func__)

/* GFP flags only tell the kernel whom to charge; here they are ignored. */
#define GFP_KERNEL		0
#define GFP_KERNEL_ACCOUNT	1
#define __GFP_NOWARN		2

void *kvp_user_alloc(size_t n, size_t size, bool zero);
void kvp_user_free(void *p);

#define kvcalloc(n, sz, gfp)		kvp_user_alloc(n, sz, true)
#define kvmalloc_array(n, sz, gfp)	kvp_user_alloc(n, sz, false)
#define kvfree(p)			kvp_user_free(p)

/* Allocations made so far, live now, and the one to fail (0: none). */
extern unsigned long kvp_user_nr_allocs;
extern long kvp_user_live_allocs;
extern unsigned long kvp_user_fail_nth;
/* Invariant reports seen (each also printed when verbose). */
extern unsigned long kvp_user_reports;
extern bool kvp_user_verbose;

void kvp_user_report(unsigned int pool, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define kvp_report(pool, fmt, ...) \
	kvp_user_report((pool)->id, fmt, ##__VA_ARGS__)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define BIT_ULL(n)		(1ULL << (n))
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)

/* The kernel's: the index of the lowest set bit; @w is not 0. */
static inline unsigned long __ffs64(uint64_t w)
{
	return (unsigned long)__builtin_ctzll(w);
}

/*
 * The xarray calls the core makes, for an allocating xarray of pointers:
 * one flat array that doubles from 16 entries as it fills, so an index is
 * looked up in O(1) and xa_alloc() takes the lowest free one, as the
 * kernel's does. Growing is an allocation like any other: fail-nth can
 * make xa_alloc() return -ENOMEM.
 */
struct xarray {
	void **slots;
	unsigned long cap;
};

struct xa_limit {
	u32 min, max;
};

#define XA_FLAGS_ALLOC		0
#define XA_LIMIT(lo, hi)	((struct xa_limit){ .min = (lo), .max = (hi) })
#define XA_PRESENT		0

void xa_init_flags(struct xarray *xa, unsigned int flags);
void xa_destroy(struct xarray *xa);
void *xa_load(struct xarray *xa, unsigned long index);
void *xa_erase(struct xarray *xa, unsigned long index);
int xa_alloc(struct xarray *xa, u32 *id, void *entry, struct xa_limit limit,
	     unsigned int gfp);
void *xa_find(struct xarray *xa, unsigned long *index, unsigned long max,
	      unsigned int filter);
void *xa_find_after(struct xarray *xa, unsigned long *index,
		    unsigned long max, unsigned int filter);

#define xa_for_each(xa, index, entry)					\
	for (index = 0, entry = xa_find(xa, &index, ULONG_MAX, XA_PRESENT); \
	     entry;							\
	     entry = xa_find_after(xa, &index, ULONG_MAX, XA_PRESENT))

/* The list and hash-list calls the core makes, as <linux/list.h> has them. */
struct list_head {
	struct list_head *next, *prev;
};

static inline void INIT_LIST_HEAD(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = NULL;
	n->prev = NULL;
}

#define list_entry(ptr, type, member)	container_of(ptr, type, member)

#define list_for_each_entry(pos, head, member)				\
	for (pos = container_of((head)->next, __typeof__(*pos), member); \
	     &pos->member != (head);					\
	     pos = container_of(pos->member.next, __typeof__(*pos), member))

struct hlist_node {
	struct hlist_node *next, **pprev;
};

struct hlist_head {
	struct hlist_node *first;
};

static inline void hlist_add_head(struct hlist_node *n, struct hlist_head *h)
{
	n->next = h->first;
	if (h->first)
		h->first->pprev = &n->next;
	h->first = n;
	n->pprev = &h->first;
}

static inline void hlist_del(struct hlist_node *n)
{
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	n->next = NULL;
	n->pprev = NULL;
}

static inline void INIT_HLIST_NODE(struct hlist_node *n)
{
	n->next = NULL;
	n->pprev = NULL;
}

static inline bool hlist_unhashed(const struct hlist_node *n)
{
	return !n->pprev;
}

static inline void hlist_del_init(struct hlist_node *n)
{
	if (!hlist_unhashed(n))
		hlist_del(n);
}

#define hlist_for_each_entry(pos, head, member)				\
	for (pos = (head)->first ?					\
	     container_of((head)->first, __typeof__(*pos), member) : NULL; \
	     pos;							\
	     pos = pos->member.next ?					\
	     container_of(pos->member.next, __typeof__(*pos), member) : NULL)

/* <linux/hash.h>'s multiplicative hash, the same constant. */
#define GOLDEN_RATIO_64 0x61C8864680B583EBull

static inline u32 hash_64(u64 val, unsigned int bits)
{
	return (u32)((val * GOLDEN_RATIO_64) >> (64 - bits));
}

/* One thread here: plain accesses, as the kernel's do without KCSAN. */
#define READ_ONCE(x)		(*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

#endif /* _KVP_OS_USER_H */
