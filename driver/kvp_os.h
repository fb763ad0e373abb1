/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel services the kvpool core uses: mutexes and lockdep
 * assertions, bit operations, kvmalloc-family allocations, xarrays, lists,
 * hash_64, min/max, and one logging hook. The core calls them by their
 * kernel names; outside the kernel (the unit test, the fuzzer, the
 * replay and bench tools) the shim driver/user/kvp_os_user.h supplies
 * malloc-backed, failure-injecting versions of exactly these, as the
 * kernel's tools/testing/radix-tree does.
 */
#ifndef _KVP_OS_H
#define _KVP_OS_H

#ifdef __KERNEL__

#include <linux/bitops.h>
#include <linux/bits.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/hash.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/math.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/xarray.h>

/* One broken invariant, in a form tests can catch in the kernel log. */
#define kvp_report(pool, fmt, ...) \
	pr_err("kvpool: pool %u: invariant: " fmt "\n", (pool)->id, ##__VA_ARGS__)

#else

#include "user/kvp_os_user.h"

#endif

#endif /* _KVP_OS_H */
