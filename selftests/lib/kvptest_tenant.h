/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvptest_tenant: helpers for the kvpool selftests of tenants, pressure
 * and export/import (tenant_test, pressure_test, export_test,
 * torture_test, abi_test), on top of kvptest.h; the agents are
 * kvptest_agent.h's, and the fixture that runs them kvptest_tenv.h's.
 *
 * - Wrappers for the control ops of tenants and watermarks, PRESSURE,
 *   EXPORT and IMPORT: 0 or the positive errno, like kvptest.h's.
 * - cgroup v2: mount it at /sys/fs/cgroup when the guest has not, make and
 *   remove child cgroups, the ids the kernel uses for tenants.
 * - SCM_RIGHTS and credentials, for the agents (kvptest_agent.h).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef KVPTEST_TENANT_H
#define KVPTEST_TENANT_H

#include "kvptest.h"

#include <grp.h>
#include <poll.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/capability.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

#define KT_CGROOT		"/sys/fs/cgroup"
#define KT_NOBODY		65534
#define KT_EXPORT_LINK		"anon_inode:[kvpool-row]"

/* ---- time ---------------------------------------------------------------- */

long long kt_now_ms(void);

void kt_sleep_ms(long ms);

/* ---- control ops of tenants and watermarks -------------------------------- */

void kt_tenant_init(struct kvpool_ctl_tenant *t, __u32 pool,
		    __u64 cgroup_id, __u32 uid,
		    __u32 max_pages, __u32 min_pages,
		    __u32 max_rows, const char *label);

int kt_tenant_set(int ctl, struct kvpool_ctl_tenant *t);

/* Tenants (first + n, uid) for n in [from, upto): 0 or the errno at *at. */
int kt_tenant_fill(int ctl, __u32 pool, __u64 first, __u32 uid, __u32 max,
		   __u32 from, __u32 upto, __u32 *at);

/* Set the limits of the tenant (cgroup_id, uid); *id gets its id. */
int kt_tenant_limits(int ctl, __u32 pool, __u64 cgroup_id,
		     __u32 uid, __u32 max_pages,
		     __u32 min_pages, __u32 max_rows, __u32 *id);

/* The same, naming the tenant by id. */
int kt_tenant_limits_id(int ctl, __u32 pool, __u32 id,
			__u32 max_pages, __u32 min_pages,
			__u32 max_rows);

int kt_tenant_list(int ctl, __u32 pool,
		   struct kvpool_tenant_info *ti, __u32 count,
		   __u32 *nr);

#define KT_MAX_LIST 64

/* The entry of tenant @id from a fresh TENANT_LIST: 0, ENOENT or an errno. */
int kt_tenant_get(int ctl, __u32 pool, __u32 id,
		  struct kvpool_tenant_info *out);

int kt_set_wmark(int ctl, __u32 pool, __u32 low, __u32 high);

int kt_pressure(int fd, struct kvpool_pressure *p);

/* ---- export and import ------------------------------------------------ */

/* An EXPORT request: out_fd -2 and out_nr_pages poisoned. */
void kt_export_init(struct kvpool_export *x, __u32 flags,
		    struct kvpool_handle h, __u64 session);

int kt_export(int fd, __u32 flags, struct kvpool_handle h,
	      __u64 session, int *out_fd, __u32 *nr_pages);

int kt_export_row(int fd, struct kvpool_handle h, int *xfd,
		  __u32 *nr_pages);

int kt_import(int fd, int xfd, struct kvpool_handle *h,
	      __u32 *nr_pages);

/* Is @fd an export file? (by its /proc link, "anon_inode:[kvpool-row]") */
bool kt_is_export_fd(int fd);

/* Open files of this process, by /proc/self/fd. */
int kt_count_fds(void);

/* ---- SCM_RIGHTS ------------------------------------------------------ */

/* Send @len bytes with up to 8 files; 0 or the errno. */
int kt_send_fds(int sock, const void *buf, size_t len,
		const int *fds, int nfds, int flags);

/*
 * Receive one message of at most @len bytes and up to @maxfds files
 * (O_CLOEXEC). Returns the bytes read (0: the other end is gone) or
 * -errno; *nfds gets the number of files.
 */
ssize_t kt_recv_fds(int sock, void *buf, size_t len, int *fds,
		    int maxfds, int *nfds, int flags);

/* ---- credentials ------------------------------------------------------ */

/* Become uid (and gid = uid) with no groups; every capability goes. */
int kt_become(uid_t uid);

/* Drop CAP_SYS_ADMIN from every set, staying uid 0. */
int kt_drop_sys_admin(void);

/* Let anyone open /dev/kvpoolN (the guest's /dev is a writable devtmpfs). */
int kt_pool_chmod(__u32 id, mode_t mode);

/* ---- cgroup v2 ------------------------------------------------------- */

/*
 * cgroup2 at /sys/fs/cgroup: mounts it there when nothing is (the test
 * VM's init mounts only proc, sysfs and devtmpfs). 0 or the errno.
 */
int kt_cgroup2_ready(void);

/* The cgroup v2 id of a cgroup folder: its inode number (see the uapi). */
int kt_cgroup_id(const char *path, __u64 *id);

/* The id of the caller's own cgroup, from /proc/self/cgroup ("0::/path"). */
int kt_self_cgroup_id(__u64 *id);

/* Move process @pid (0: the caller) into the cgroup folder @path. */
int kt_cgroup_move(const char *path, pid_t pid);

#endif /* KVPTEST_TENANT_H */
