/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared helpers for the kvpool kernel selftests.
 *
 * The tests talk to the module with raw ioctl(2) on the structs of
 * <linux/kvpool.h>, so what they check is the ABI itself, not a library.
 * Every ioctl wrapper returns 0 on success or the positive errno, so a test
 * reads ASSERT_EQ(ENOENT, kvp_release1(fd, h, NULL)).
 *
 * Each fixture makes its own pool through /dev/kvpool-control
 * (struct kvp_pool), opens its clients through kvp_pool_open() and forks
 * through kvp_pool_fork(), so that kvp_pool_fini() in the teardown can:
 * run KVPOOL_VERIFY while the clients still hold their rows, reap every
 * child, close every client, check from a fresh client that the whole pool
 * came back, verify again and destroy the pool.
 *
 * The harness forks one process per test and runs the teardown in it after
 * an ASSERT_* longjmp()s out of the test. Two rules follow:
 * - teardown code uses EXPECT_*, never ASSERT_* (an ASSERT there would jump
 *   back into the teardown);
 * - a process the test forks never uses ASSERT_* or EXPECT_* (it would run
 *   the teardown in the child): it reports with CHILD_CHECK() and its exit
 *   code.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef KVPOOL_SELFTEST_UTIL_H
#define KVPOOL_SELFTEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvpool.h>

/*
 * The harness does not build warning-free with -Wextra: silence what it
 * trips itself. Its EXPECT_EQ(0, field) compares an int literal with a __u32
 * field (harmless), and its setjmp() in every test wrapper makes GCC warn
 * that locals "might be clobbered by longjmp" (none is used after the jump),
 * so those two stay off in the tests too.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wclobbered"

#define KVP_CTL_PATH		"/dev/kvpool-control"
/* Pools have their own device class (the control device is a misc one). */
#define KVP_SYSFS_CLASS		"/sys/class/kvpool"
#define KVP_SYSFS_FMT		KVP_SYSFS_CLASS "/kvpool%u/%s"
#define KVP_PAGE_SIZE		4096u	/* PAGE_SIZE on x86-64, the ABI's size cap */
#define KVP_MAX_FDS		16
#define KVP_MAX_PIDS		16
#define KVP_BAD_IDX		0xffffffffu
#define KVP_ERR_NONE		0xffffffffu	/* out_error_index "not an entry" */

#ifndef __maybe_unused
#define __maybe_unused __attribute__((unused))
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

static inline __u32 kvp_div_up(__u32 n, __u32 d)
{
	return n / d + !!(n % d);
}

static inline __u64 kvp_ptr(const void *p)
{
	return (__u64)(uintptr_t)p;
}

/*
 * ioctl(2) as 0 or the positive errno. A positive return from the kernel is
 * no documented outcome: report it as a negative number, which no errno
 * assertion accepts.
 */
static inline int kvp_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	if (ret == 0)
		return 0;
	if (ret < 0)
		return errno;
	return -ret;
}

/* ---- control device ---------------------------------------------------- */

static inline int kvp_ctl_open(void)
{
	return open(KVP_CTL_PATH, O_RDWR | O_CLOEXEC);
}

static inline int kvp_create(int ctl, __u32 flags, __u32 nr_pages,
			     __u32 page_tokens, __u32 nr_rows, __u32 row_tokens,
			     __u32 *out_id)
{
	struct kvpool_ctl_create c = {
		.size = sizeof(c),
		.flags = flags,
		.nr_pages = nr_pages,
		.page_tokens = page_tokens,
		.nr_rows = nr_rows,
		.row_tokens = row_tokens,
		.out_pool_id = 0,
	};
	int ret = kvp_ioctl(ctl, KVPOOL_CTL_CREATE, &c);

	if (out_id)
		*out_id = c.out_pool_id;
	return ret;
}

static inline int kvp_destroy(int ctl, __u32 id)
{
	struct kvpool_ctl_destroy d = { .size = sizeof(d), .pool_id = id };

	return kvp_ioctl(ctl, KVPOOL_CTL_DESTROY, &d);
}

static inline void kvp_dev_path(char *buf, size_t len, __u32 id)
{
	snprintf(buf, len, "/dev/kvpool%u", id);
}

static inline int kvp_open_id(__u32 id, int oflags)
{
	char path[32];

	kvp_dev_path(path, sizeof(path), id);
	return open(path, oflags);
}

/* Number of /sys/class/kvpool/kvpoolN entries: how many pools exist. */
static inline int kvp_count_pools(void)
{
	DIR *d = opendir(KVP_SYSFS_CLASS);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		const char *p = de->d_name;

		if (strncmp(p, "kvpool", 6) || !p[6])
			continue;
		for (p += 6; *p >= '0' && *p <= '9'; p++)
			;
		if (!*p)
			n++;
	}
	closedir(d);
	return n;
}

/* ---- pool ops ----------------------------------------------------------- */

static inline int kvp_info(int fd, struct kvpool_info *i)
{
	memset(i, 0, sizeof(*i));
	i->size = sizeof(*i);
	return kvp_ioctl(fd, KVPOOL_INFO, i);
}

static inline int kvp_stats(int fd, struct kvpool_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return kvp_ioctl(fd, KVPOOL_STATS, s);
}

static inline int kvp_verify(int fd, struct kvpool_verify *v)
{
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
	v->out_violations = 0xdeadbeef;
	return kvp_ioctl(fd, KVPOOL_VERIFY, v);
}

static inline int kvp_row_alloc(int fd, __u32 count,
				struct kvpool_handle *handles, __u32 *out_short)
{
	struct kvpool_row_alloc a = {
		.size = sizeof(a),
		.count = count,
		.entry_len = sizeof(*handles),
		.handles = kvp_ptr(handles),
	};
	int ret = kvp_ioctl(fd, KVPOOL_ROW_ALLOC, &a);

	if (out_short)
		*out_short = a.out_short;
	return ret;
}

static inline int kvp_extend(int fd, struct kvpool_extend_entry *e,
			     __u32 count, __u32 *pages, __u32 pages_cap,
			     struct kvpool_extend *out)
{
	struct kvpool_extend x = {
		.size = sizeof(x),
		.count = count,
		.entry_len = sizeof(*e),
		.pages_cap = pages_cap,
		.page_entry_len = sizeof(*pages),
		.entries = kvp_ptr(e),
		.pages = kvp_ptr(pages),
		.out_nr_pages = 0xdeadbeef,
		.out_short = 0xdeadbeef,
		.out_error_index = 0xdeadbeef,
	};
	int ret = kvp_ioctl(fd, KVPOOL_EXTEND, &x);

	if (out)
		*out = x;
	return ret;
}

/* Extend one row; *nr_new (if given) gets out_nr_new. */
static inline int kvp_extend1(int fd, struct kvpool_handle h, __u32 new_len,
			      __u32 *pages, __u32 pages_cap, __u32 *nr_new)
{
	struct kvpool_extend_entry e = { .handle = h, .new_len = new_len };
	int ret = kvp_extend(fd, &e, 1, pages, pages_cap, NULL);

	if (nr_new)
		*nr_new = e.out_nr_new;
	return ret;
}

/* Extend one row to new_len with a scratch page array big enough. */
static inline int kvp_grow(int fd, struct kvpool_handle h, __u32 new_len)
{
	static __u32 scratch[1u << 16];

	return kvp_extend1(fd, h, new_len, scratch, ARRAY_SIZE(scratch), NULL);
}

/*
 * The length of one entry of a struct kvpool_batch op, as this header has
 * it: what kvp_batch() puts in entry_len. 0 for a cmd that is no batch op
 * (the kernel refuses 0 with EINVAL).
 */
static inline __u32 kvp_batch_entry_len(unsigned long cmd)
{
	if (cmd == KVPOOL_COMMIT || cmd == KVPOOL_DONATE ||
	    cmd == KVPOOL_SWA_FREE)
		return sizeof(struct kvpool_len_entry);
	if (cmd == KVPOOL_TRIM || cmd == KVPOOL_RELEASE)
		return sizeof(struct kvpool_handle);
	if (cmd == KVPOOL_CACHE_EVICT)
		return sizeof(__u32);
	return 0;
}

/* A batch op with an explicit entry_len (for the element-length tests). */
static inline int kvp_batch_len(int fd, unsigned long cmd, __u32 flags,
				void *entries, __u32 count, __u32 entry_len,
				struct kvpool_batch *out)
{
	struct kvpool_batch b = {
		.size = sizeof(b),
		.flags = flags,
		.count = count,
		.entry_len = entry_len,
		.entries = kvp_ptr(entries),
		.out_error_index = 0xdeadbeef,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret = kvp_ioctl(fd, cmd, &b);

	if (out)
		*out = b;
	return ret;
}

static inline int kvp_batch(int fd, unsigned long cmd, __u32 flags,
			    void *entries, __u32 count,
			    struct kvpool_batch *out)
{
	struct kvpool_batch b = {
		.size = sizeof(b),
		.flags = flags,
		.count = count,
		.entry_len = kvp_batch_entry_len(cmd),
		.entries = kvp_ptr(entries),
		.out_error_index = 0xdeadbeef,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret = kvp_ioctl(fd, cmd, &b);

	if (out)
		*out = b;
	return ret;
}

static inline int kvp_commit1(int fd, struct kvpool_handle h, __u32 len)
{
	struct kvpool_len_entry e = { .handle = h, .len = len };

	return kvp_batch(fd, KVPOOL_COMMIT, 0, &e, 1, NULL);
}

static inline int kvp_trim1(int fd, struct kvpool_handle h, __u32 *nr_freed)
{
	struct kvpool_batch b;
	int ret = kvp_batch(fd, KVPOOL_TRIM, 0, &h, 1, &b);

	if (nr_freed)
		*nr_freed = b.out_nr_pages;
	return ret;
}

static inline int kvp_release1(int fd, struct kvpool_handle h,
			       __u32 *nr_freed)
{
	struct kvpool_batch b;
	int ret = kvp_batch(fd, KVPOOL_RELEASE, 0, &h, 1, &b);

	if (nr_freed)
		*nr_freed = b.out_nr_pages;
	return ret;
}

/* RELEASE of one row with KVPOOL_RELEASE_DONATE. */
static inline int kvp_release_donate1(int fd, struct kvpool_handle h,
				      __u32 *nr_freed)
{
	struct kvpool_batch b;
	int ret = kvp_batch(fd, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE, &h, 1,
			    &b);

	if (nr_freed)
		*nr_freed = b.out_nr_pages;
	return ret;
}

/* DONATE one row up to `upto`; *nr_moved gets out_nr_pages. */
static inline int kvp_donate1(int fd, struct kvpool_handle h, __u32 upto,
			      __u32 *nr_moved)
{
	struct kvpool_len_entry e = { .handle = h, .len = upto };
	struct kvpool_batch b;
	int ret = kvp_batch(fd, KVPOOL_DONATE, 0, &e, 1, &b);

	if (nr_moved)
		*nr_moved = b.out_nr_pages;
	return ret;
}

/* SWA_FREE one row at window edge `edge`; *nr_freed gets out_nr_pages. */
static inline int kvp_swa_free1(int fd, struct kvpool_handle h, __u32 edge,
				__u32 *nr_freed)
{
	struct kvpool_len_entry e = { .handle = h, .len = edge };
	struct kvpool_batch b;
	int ret = kvp_batch(fd, KVPOOL_SWA_FREE, 0, &e, 1, &b);

	if (nr_freed)
		*nr_freed = b.out_nr_pages;
	return ret;
}

static inline int kvp_evict(int fd, __u32 *ids, __u32 count,
			    struct kvpool_batch *out)
{
	return kvp_batch(fd, KVPOOL_CACHE_EVICT, 0, ids, count, out);
}

static inline int kvp_attach(int fd, struct kvpool_handle h,
			     const __u32 *ids, __u32 nr_pages)
{
	struct kvpool_attach a = {
		.size = sizeof(a),
		.handle = h,
		.nr_pages = nr_pages,
		.page_entry_len = sizeof(*ids),
		.pages = kvp_ptr(ids),
	};

	return kvp_ioctl(fd, KVPOOL_ATTACH_PREFIX, &a);
}

static inline int kvp_slot_op(int fd, unsigned long cmd, __u64 session,
			      struct kvpool_handle *h, __u32 *nr_pages)
{
	struct kvpool_slot s = {
		.size = sizeof(s),
		.session_id = session,
		.out_nr_pages = 0xdeadbeef,
	};
	int ret;

	if (cmd == KVPOOL_TO_SLOT)
		s.handle = *h;
	ret = kvp_ioctl(fd, cmd, &s);
	if (cmd == KVPOOL_FROM_SLOT && h && !ret)
		*h = s.handle;
	if (nr_pages)
		*nr_pages = s.out_nr_pages;
	return ret;
}

static inline int kvp_to_slot(int fd, __u64 session, struct kvpool_handle h,
			      __u32 *nr_pages)
{
	return kvp_slot_op(fd, KVPOOL_TO_SLOT, session, &h, nr_pages);
}

static inline int kvp_from_slot(int fd, __u64 session,
				struct kvpool_handle *h, __u32 *nr_pages)
{
	return kvp_slot_op(fd, KVPOOL_FROM_SLOT, session, h, nr_pages);
}

static inline int kvp_slot_release(int fd, __u64 session, __u32 *nr_pages)
{
	return kvp_slot_op(fd, KVPOOL_SLOT_RELEASE, session, NULL, nr_pages);
}

static inline int kvp_query(int fd, struct kvpool_handle h, __u32 *pages,
			    __u32 pages_cap, struct kvpool_row_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = h;
	q->pages_cap = pages_cap;
	q->page_entry_len = sizeof(*pages);
	q->pages = kvp_ptr(pages);
	return kvp_ioctl(fd, KVPOOL_ROW_QUERY, q);
}

static inline int kvp_query_slot(int fd, __u64 session, __u32 *pages,
				 __u32 pages_cap, struct kvpool_row_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->flags = KVPOOL_QUERY_BY_SLOT;
	q->session_id = session;
	q->pages_cap = pages_cap;
	q->page_entry_len = sizeof(*pages);
	q->pages = kvp_ptr(pages);
	return kvp_ioctl(fd, KVPOOL_ROW_QUERY, q);
}

/* ---- snapshots: "nothing changed" ---------------------------------------- */

/* Name of the first field that differs, or "" when the two are equal. */
static inline const char *kvp_stats_diff(const struct kvpool_stats *a,
					 const struct kvpool_stats *b)
{
#define KVP_CMP(f) do { if (a->f != b->f) return #f; } while (0)
	KVP_CMP(out_free_pages);
	KVP_CMP(out_row_pages);
	KVP_CMP(out_slot_pages);
	KVP_CMP(out_cache_evictable);
	KVP_CMP(out_cache_pinned);
	KVP_CMP(out_reserved_pages);
	KVP_CMP(out_free_rows);
	KVP_CMP(out_held_rows);
	KVP_CMP(out_slot_rows);
	KVP_CMP(out_reserved_rows);
	KVP_CMP(out_nr_clients);
	KVP_CMP(out_client_rows);
	KVP_CMP(out_client_slots);
	KVP_CMP(out_client_pages);
	KVP_CMP(out_client_cache_pages);
	KVP_CMP(out_export_rows);
	KVP_CMP(out_export_pages);
	KVP_CMP(out_tenant_pages);
	KVP_CMP(out_tenant_rows);
#undef KVP_CMP
	return "";
}

#define KVP_ROW_MAX_PAGES 1024

/* A row as ROW_QUERY shows it, pages included. */
struct kvp_row_snap {
	int err;
	__u32 state, nr_pages, idx, alloc, committed, protected_len, swa;
	__u32 pages[KVP_ROW_MAX_PAGES];
};

static inline void kvp_snap_row(int fd, struct kvpool_handle h,
				struct kvp_row_snap *s)
{
	struct kvpool_row_query q;

	memset(s, 0, sizeof(*s));
	s->err = kvp_query(fd, h, s->pages, KVP_ROW_MAX_PAGES, &q);
	if (s->err)
		return;
	s->state = q.out_state;
	s->nr_pages = q.out_nr_pages;
	s->idx = q.out_req_pool_idx;
	s->alloc = q.out_allocated_len;
	s->committed = q.out_committed_len;
	s->protected_len = q.out_protected_len;
	s->swa = q.out_swa_evicted_len;
}

/* kvp_snap_row() of the row parked in slot @session. */
static inline void kvp_snap_slot(int fd, __u64 session,
				 struct kvp_row_snap *s)
{
	struct kvpool_row_query q;

	memset(s, 0, sizeof(*s));
	s->err = kvp_query_slot(fd, session, s->pages, KVP_ROW_MAX_PAGES, &q);
	if (s->err)
		return;
	s->state = q.out_state;
	s->nr_pages = q.out_nr_pages;
	s->idx = q.out_req_pool_idx;
	s->alloc = q.out_allocated_len;
	s->committed = q.out_committed_len;
	s->protected_len = q.out_protected_len;
	s->swa = q.out_swa_evicted_len;
}

/* A held row of @alloc tokens, @committed of them committed. */
static inline struct kvpool_handle
kvp_new_row(struct __test_metadata *_metadata, int fd, __u32 alloc,
	    __u32 committed)
{
	struct kvpool_handle h;

	ASSERT_EQ(0, kvp_row_alloc(fd, 1, &h, NULL));
	if (alloc)
		ASSERT_EQ(0, kvp_grow(fd, h, alloc));
	if (committed)
		ASSERT_EQ(0, kvp_commit1(fd, h, committed));
	return h;
}

static inline const char *kvp_row_diff(const struct kvp_row_snap *a,
				       const struct kvp_row_snap *b)
{
#define KVP_CMP(f) do { if (a->f != b->f) return #f; } while (0)
	KVP_CMP(err);
	KVP_CMP(state);
	KVP_CMP(nr_pages);
	KVP_CMP(idx);
	KVP_CMP(alloc);
	KVP_CMP(committed);
	KVP_CMP(protected_len);
	KVP_CMP(swa);
#undef KVP_CMP
	if (a->nr_pages <= KVP_ROW_MAX_PAGES &&
	    memcmp(a->pages, b->pages, a->nr_pages * sizeof(__u32)))
		return "pages";
	return "";
}

/*
 * Snapshot of a client's view: STATS plus ROW_QUERY of the given rows.
 * kvp_state_diff() names the first difference ("" if none).
 */
#define KVP_SNAP_ROWS 8
struct kvp_state {
	struct kvpool_stats st;
	int nr;
	struct kvp_row_snap rows[KVP_SNAP_ROWS];
};

static inline void kvp_snap(int fd, const struct kvpool_handle *h, int nr,
			    struct kvp_state *s)
{
	int i;

	if (nr > KVP_SNAP_ROWS)
		nr = KVP_SNAP_ROWS;
	s->nr = nr;
	if (kvp_stats(fd, &s->st))
		memset(&s->st, 0xff, sizeof(s->st));
	for (i = 0; i < nr; i++)
		kvp_snap_row(fd, h[i], &s->rows[i]);
}

static inline const char *kvp_state_diff(const struct kvp_state *a,
					 const struct kvp_state *b)
{
	static char buf[64];
	const char *d = kvp_stats_diff(&a->st, &b->st);
	int i;

	if (*d)
		return d;
	for (i = 0; i < a->nr; i++) {
		d = kvp_row_diff(&a->rows[i], &b->rows[i]);
		if (*d) {
			snprintf(buf, sizeof(buf), "row[%d].%s", i, d);
			return buf;
		}
	}
	return "";
}

/* ---- sysfs and fdinfo -------------------------------------------------- */

/* Read /sys/class/kvpool/kvpoolN/<name>: strict "decimal\n". */
static inline int kvp_sysfs_u64(__u32 id, const char *name, __u64 *val)
{
	char path[128], buf[64], *end;
	ssize_t n;
	int fd, ret;

	snprintf(path, sizeof(path), KVP_SYSFS_FMT, id, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	/* A read error's errno (ENODEV: the device went), not close()'s. */
	ret = n < 0 ? errno : n == 0 ? EIO : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = 0;
	if (buf[n - 1] != '\n' || buf[0] < '0' || buf[0] > '9')
		return EBADMSG;
	errno = 0;
	*val = strtoull(buf, &end, 10);
	if (errno || *end != '\n' || end != buf + n - 1)
		return EBADMSG;
	return 0;
}

/*
 * Value of "key:\tvalue\n" in /proc/self/fdinfo/<fd>. Returns 0, ENOENT
 * (no such key), EBADMSG (malformed) or ENOTUNIQ (the key twice).
 */
static inline int kvp_fdinfo_u64(int fd, const char *key, __u64 *val)
{
	char path[64], buf[4096], *line, *save = NULL;
	size_t klen = strlen(key);
	bool found = false;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return errno;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return EIO;
	buf[n] = 0;
	if (buf[n - 1] != '\n')
		return EBADMSG;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end;

		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		if (found)
			return ENOTUNIQ;
		found = true;
		if (line[klen + 1] != '\t' || line[klen + 2] < '0' ||
		    line[klen + 2] > '9')
			return EBADMSG;
		errno = 0;
		*val = strtoull(line + klen + 2, &end, 10);
		if (errno || *end)
			return EBADMSG;
	}
	return found ? 0 : ENOENT;
}

/* ---- the fixture's pool -------------------------------------------------- */

struct kvp_pool {
	int ctl;
	bool created;
	__u32 id;
	struct kvpool_ctl_create geo;
	__u32 usable_pages;	/* nr_pages minus the reserved page */
	__u32 usable_rows;	/* nr_rows minus the reserved row */
	__u32 max_batch;	/* min(8192, nr_rows) */
	int fds[KVP_MAX_FDS];
	pid_t pids[KVP_MAX_PIDS];
};

static inline void kvp_pool_reset(struct kvp_pool *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->ctl = -1;
	for (i = 0; i < KVP_MAX_FDS; i++)
		p->fds[i] = -1;
	for (i = 0; i < KVP_MAX_PIDS; i++)
		p->pids[i] = -1;
}

/* Make a pool (setup only: uses ASSERT). */
static inline void kvp_pool_init(struct __test_metadata *_metadata,
				 struct kvp_pool *p, __u32 flags,
				 __u32 nr_pages, __u32 page_tokens,
				 __u32 nr_rows, __u32 row_tokens)
{
	bool rz = flags & KVPOOL_CREATE_RESERVE_ZERO;

	kvp_pool_reset(p);
	p->ctl = kvp_ctl_open();
	ASSERT_LE(0, p->ctl) TH_LOG("open " KVP_CTL_PATH ": %s (module loaded?)",
				     strerror(errno));
	p->geo.size = sizeof(p->geo);
	p->geo.flags = flags;
	p->geo.nr_pages = nr_pages;
	p->geo.page_tokens = page_tokens;
	p->geo.nr_rows = nr_rows;
	p->geo.row_tokens = row_tokens;
	ASSERT_EQ(0, kvp_ioctl(p->ctl, KVPOOL_CTL_CREATE, &p->geo));
	p->created = true;
	p->id = p->geo.out_pool_id;
	p->usable_pages = nr_pages - rz;
	p->usable_rows = nr_rows - rz;
	p->max_batch = nr_rows < 8192 ? nr_rows : 8192;
}

/* Open a client of the pool; the teardown closes it if the test did not. */
static inline int kvp_pool_open(struct __test_metadata *_metadata,
				struct kvp_pool *p)
{
	int fd = kvp_open_id(p->id, O_RDWR | O_CLOEXEC);
	int i;

	ASSERT_LE(0, fd) TH_LOG("open /dev/kvpool%u: %s", p->id,
				 strerror(errno));
	for (i = 0; i < KVP_MAX_FDS; i++) {
		if (p->fds[i] < 0) {
			p->fds[i] = fd;
			return fd;
		}
	}
	close(fd);
	ASSERT_TRUE(false) TH_LOG("too many fds");
	return -1;
}

static inline void kvp_pool_close(struct kvp_pool *p, int fd)
{
	int i;

	for (i = 0; i < KVP_MAX_FDS; i++)
		if (p->fds[i] == fd)
			p->fds[i] = -1;
	close(fd);
}

/*
 * fork() and remember the child so the teardown can kill and reap it if
 * the test ends early. Returns as fork() does.
 */
static inline pid_t kvp_pool_fork(struct __test_metadata *_metadata,
				  struct kvp_pool *p)
{
	pid_t pid;
	int i;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		return 0;
	for (i = 0; i < KVP_MAX_PIDS; i++) {
		if (p->pids[i] < 0) {
			p->pids[i] = pid;
			return pid;
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ASSERT_TRUE(false) TH_LOG("too many children");
	return -1;
}

/* Reap a child started with kvp_pool_fork(); returns its wait status. */
static inline int kvp_pool_wait(struct kvp_pool *p, pid_t pid)
{
	int status = -1, i;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	for (i = 0; i < KVP_MAX_PIDS; i++)
		if (p->pids[i] == pid)
			p->pids[i] = -1;
	return status;
}

/* Exit code a child reports; 0 = success, see CHILD_CHECK(). */
#define KVP_CHILD_OK(status) (WIFEXITED(status) && WEXITSTATUS(status) == 0)

/*
 * For forked children only: on failure print where and why, and exit with
 * a non-zero code (never returns into the harness).
 */
#define CHILD_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "# child %d: %s:%d: check failed: %s (errno %d)\n", \
			getpid(), __FILE__, __LINE__, #cond, errno);	\
		_exit(1);						\
	}								\
} while (0)

/* Child side of a pipe handshake: write one byte, or exit. */
static inline void kvp_child_signal(int wfd, char c)
{
	CHILD_CHECK(write(wfd, &c, 1) == 1);
}

/* Block until the other side writes a byte or closes; returns it or 0. */
static inline char kvp_pipe_wait(int rfd)
{
	char c = 0;
	ssize_t n;

	do {
		n = read(rfd, &c, 1);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? c : 0;
}

/* Check the pool's accounting identities on one STATS snapshot. */
static inline void kvp_check_identities(struct __test_metadata *_metadata,
					struct kvp_pool *p,
					const struct kvpool_stats *s)
{
	EXPECT_EQ(p->geo.nr_pages,
		  s->out_free_pages + s->out_row_pages + s->out_slot_pages +
		  s->out_cache_evictable + s->out_cache_pinned +
		  s->out_reserved_pages + s->out_export_pages);
	EXPECT_EQ(p->geo.nr_rows,
		  s->out_free_rows + s->out_held_rows + s->out_slot_rows +
		  s->out_reserved_rows + s->out_export_rows);
}

/*
 * VERIFY must find nothing broken and walk the whole pool. It needs
 * CAP_SYS_ADMIN (EPERM otherwise): call it from the test process (root),
 * not from a child that dropped privileges.
 */
static inline void kvp_expect_verify(struct __test_metadata *_metadata,
				     struct kvp_pool *p, int fd)
{
	struct kvpool_verify v;

	EXPECT_EQ(0, kvp_verify(fd, &v));
	EXPECT_EQ(0, v.out_violations)
		TH_LOG("pool %u: KVPOOL_VERIFY found %u broken invariants (see dmesg)",
		       p->id, v.out_violations);
	EXPECT_EQ(p->geo.nr_pages, v.out_pages_checked);
	EXPECT_EQ(p->geo.nr_rows, v.out_rows_checked);
}

/*
 * The whole pool is free: what a fresh client sees after every other
 * client is gone.
 */
static inline void kvp_expect_pool_full(struct __test_metadata *_metadata,
					struct kvp_pool *p, int fd,
					__u32 nr_clients)
{
	bool rz = p->geo.flags & KVPOOL_CREATE_RESERVE_ZERO;
	struct kvpool_stats s;

	EXPECT_EQ(0, kvp_stats(fd, &s));
	EXPECT_EQ(p->usable_pages, s.out_free_pages);
	EXPECT_EQ(0, s.out_row_pages);
	EXPECT_EQ(0, s.out_slot_pages);
	EXPECT_EQ(0, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(rz, s.out_reserved_pages);
	EXPECT_EQ(p->usable_rows, s.out_free_rows);
	EXPECT_EQ(0, s.out_held_rows);
	EXPECT_EQ(0, s.out_slot_rows);
	EXPECT_EQ(rz, s.out_reserved_rows);
	EXPECT_EQ(nr_clients, s.out_nr_clients);
	kvp_expect_verify(_metadata, p, fd);
}

/*
 * Teardown: verify with the clients' state in place, kill and reap
 * children, close every client, check that a fresh client sees the whole
 * pool free and verify again, then destroy the pool. EXPECT only.
 */
static inline void kvp_pool_fini(struct __test_metadata *_metadata,
				 struct kvp_pool *p)
{
	int i, fd;

	if (!p->created)
		goto out_ctl;

	for (i = 0; i < KVP_MAX_FDS; i++) {
		if (p->fds[i] >= 0) {
			kvp_expect_verify(_metadata, p, p->fds[i]);
			break;
		}
	}
	for (i = 0; i < KVP_MAX_PIDS; i++) {
		if (p->pids[i] > 0) {
			kill(p->pids[i], SIGKILL);
			kvp_pool_wait(p, p->pids[i]);
		}
	}
	for (i = 0; i < KVP_MAX_FDS; i++) {
		if (p->fds[i] >= 0) {
			close(p->fds[i]);
			p->fds[i] = -1;
		}
	}

	fd = kvp_open_id(p->id, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fd);
	if (fd >= 0) {
		kvp_expect_pool_full(_metadata, p, fd, 1);
		close(fd);
	}
	EXPECT_EQ(0, kvp_destroy(p->ctl, p->id));
	p->created = false;
out_ctl:
	if (p->ctl >= 0)
		close(p->ctl);
	p->ctl = -1;
}

/* ---- memory that faults ------------------------------------------------ */

/*
 * Two pages: the first read-write, the second PROT_NONE. Returns the start;
 * kvp_fault_edge(base) is the first byte that faults.
 */
static inline void *kvp_map_guarded(void)
{
	char *p = mmap(NULL, 2 * KVP_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + KVP_PAGE_SIZE, KVP_PAGE_SIZE, PROT_NONE)) {
		munmap(p, 2 * KVP_PAGE_SIZE);
		return NULL;
	}
	memset(p, 0, KVP_PAGE_SIZE);
	return p;
}

static inline void *kvp_fault_edge(void *base)
{
	return (char *)base + KVP_PAGE_SIZE;
}

/* ---- page-id bookkeeping ------------------------------------------------ */

/*
 * Every page id in ids[0..n) is a real, distinct page of the pool, and not
 * page 0 when the pool reserves it. seen (nr_pages bytes) accumulates over
 * calls so distinctness holds across rows. Returns "" or what is wrong.
 */
static inline const char *kvp_check_ids(const struct kvp_pool *p,
					const __u32 *ids, __u32 n,
					unsigned char *seen)
{
	static char buf[96];
	__u32 i;

	for (i = 0; i < n; i++) {
		__u32 id = ids[i];

		if (id == KVPOOL_PAGE_NONE || id >= p->geo.nr_pages) {
			snprintf(buf, sizeof(buf), "page id %u out of range", id);
			return buf;
		}
		if (id == 0 && (p->geo.flags & KVPOOL_CREATE_RESERVE_ZERO))
			return "reserved page 0 handed out";
		if (seen[id]) {
			snprintf(buf, sizeof(buf), "page %u handed out twice", id);
			return buf;
		}
		seen[id] = 1;
	}
	return "";
}

#endif /* KVPOOL_SELFTEST_UTIL_H */
