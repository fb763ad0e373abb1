/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The few kernel services the kvpool core uses, named so that the same
 * core source also builds into the userspace unit test, whose own version
 * of this header (selftests/unit/kvp_os_user.h) supplies malloc-backed,
 * failure-injecting equivalents.
 */
#ifndef _KVP_OS_H
#define _KVP_OS_H

#ifdef __KERNEL__

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>

/* The pool lock: a mutex, because holders allocate (see docs/design.md). */
typedef struct mutex kvp_lock_t;
#define kvp_lock_init(l)	mutex_init(l)
#define kvp_lock(l)		mutex_lock(l)
#define kvp_unlock(l)		mutex_unlock(l)
#define kvp_lock_destroy(l)	mutex_destroy(l)
#define kvp_assert_held(l)	lockdep_assert_held(l)

/*
 * Pool tables are the administrator's; what a client's rows grow to is
 * charged to the client's memory cgroup.
 */
#define kvp_table_zalloc(n, sz)	kvcalloc(n, sz, GFP_KERNEL)
#define kvp_client_alloc(n, sz)	kvmalloc_array(n, sz, GFP_KERNEL_ACCOUNT)
#define kvp_free(p)		kvfree(p)

#define kvp_report(pool, fmt, ...) \
	pr_err("kvpool: pool %u: invariant: " fmt "\n", (pool)->id, ##__VA_ARGS__)

#else

#include "kvp_os_user.h"

#endif

#endif /* _KVP_OS_H */
