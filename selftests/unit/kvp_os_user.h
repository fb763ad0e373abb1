/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace stand-ins for the kernel services the kvpool core uses
 * (driver/kvp_os.h), in the manner of the kernel's tools/testing/radix-tree:
 * allocations are counted so a test can prove nothing leaked, the Nth
 * allocation can be made to fail, and the pool lock is a flag the core
 * asserts, so a call without the lock aborts the test.
 */
#ifndef _KVP_OS_USER_H
#define _KVP_OS_USER_H

#include <errno.h>
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

/* One thread here: plain accesses, as the kernel's do without KCSAN. */
#define READ_ONCE(x)		(*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

#endif /* _KVP_OS_USER_H */
