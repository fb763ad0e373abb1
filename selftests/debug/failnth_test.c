// SPDX-License-Identifier: GPL-2.0-only
/*
 * failnth_test: every kvpool ioctl sequence under fail-nth fault injection.
 *
 * Runs in the 6.1-debug kernel (tools/vm/debug-lane.sh), which has
 * CONFIG_FAILSLAB and /proc/<pid>/task/<tid>/fail-nth; skips elsewhere.
 * Writing N to fail-nth makes the task's N-th fault-injection point fail;
 * with failslab the only such points are slab allocations (kmalloc,
 * kmem_cache_alloc, and the kmalloc half of kvmalloc), so an injected
 * failure is an allocation failure somewhere in the syscall: the module's
 * own, the VFS's (open, close, fd tables) or the driver core's (creating a
 * pool's device in the kvpool class). The kernel counts down only in this
 * task, so nothing else running is affected.
 *
 * A sequence is a list of steps (ioctls, open, close); the setup steps run
 * plainly and the armed ones under fail-nth = N, for N = 1, 2, ... until a
 * run goes through without an injected failure: N - 1 is the number of
 * failure points the armed steps have, printed per sequence as
 *   # failnth: NAME: K failure points (E ENOMEM, A absorbed)
 * ("absorbed": the failed allocation had a fallback, e.g. kmemleak's own
 * metadata or kvmalloc's vmalloc, and the step succeeded).
 *
 * What every run must show (the header, uapi/linux/kvpool.h: "ENOMEM: the
 * kernel could not allocate memory. Nothing changed."; the core validates
 * and allocates before it changes anything):
 *  - a step whose allocation failed returns ENOMEM and nothing else (no
 *    EFAULT either: every buffer is locked in memory, so no copy can fail);
 *  - after an ENOMEM the pool, the client and the process look exactly as
 *    before the step: STATS, ROW_QUERY of every row and slot the client
 *    holds, ARENA, the fd's fdinfo, the pool's sysfs counts
 *    (/sys/class/kvpool/kvpoolN/, a budget pool's chunks included), the
 *    process's open fds and its mappings of the pool, and the kvpool
 *    devices in /sys/class/kvpool, /sys/class/misc (the control device)
 *    and /dev; in a sequence on a chunk budget also which of the budget
 *    ids 0..63 exist (INFO, ENODATA for none) and the budget's INFO
 *    counters (free chunks, pools, moves);
 *  - a step that was not injected succeeds, and so do the steps after an
 *    absorbed failure;
 *  - afterwards VERIFY finds 0 violations, and once the client is closed a
 *    fresh client sees the whole pool free (nothing leaked into a row,
 *    slot, cache or export), and the pool can be destroyed (no client or
 *    export file leaked); a new pool gets the lowest free id (no id leaked).
 *    A budget then has every chunk back and no pool on it, and can be
 *    destroyed; a new budget gets the lowest free id too. (A budget
 *    pool's rows are released before its client closes: pages left in
 *    quarantine would keep pool and budget until this process exits.)
 * Leaked memory is kmemleak's to find: debug-lane.sh scans after the run.
 *
 * Between steps the test pauses the countdown (reads fail-nth, writes 0)
 * to take its snapshots, then re-arms it with what was left: the checks'
 * own syscalls never use up a failure point. While armed, the test makes
 * no syscall but the step's own, allocates nothing and prints nothing.
 *
 * Every array is passed with its element length (entry_len,
 * page_entry_len) at the header's sizeof(); the wide_elements sequence
 * passes longer ones (zero tails in, zeroed tails out). VERIFY needs
 * CAP_SYS_ADMIN, as does the control device: the test runs as root.
 *
 * Env: FAILNTH_VERBOSE=1 logs every injected run (N, step, errno).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <linux/kvpool.h>

#include "kvptest_tenant.h"

/* A small pool: every array the module allocates for it fits a slab. */
#define G_PAGES		64
#define G_PTOK		4
#define G_ROWS		8
#define G_RTOK		64
#define G_MAXP		(G_RTOK / G_PTOK)	/* pages of a full row */
#define G_RESERVED	1			/* KVPOOL_CREATE_RESERVE_ZERO */

#define MAX_N		5000	/* no sequence has this many points */
#define SESSION		7
#define FAILSLAB	"/sys/kernel/debug/failslab"
#define MISC_CLASS	"/sys/class/misc"
/* An element length past every struct here, for the wide steps. */
#define WIDE		8
/*
 * The budget sequences' budget: chunks of 16 pages of 4 KiB, twice as
 * many as one pool of G_PAGES can hold, so a grow never runs short.
 */
#define BG_PAGE		4096u
#define BG_CHUNK	(64u * 1024)
#define BG_PPC		(BG_CHUNK / BG_PAGE)
#define BG_SLOTS	(G_PAGES / BG_PPC)
#define BG_CHUNKS	(2 * BG_SLOTS)
#define BG_MAP		((size_t)BG_SLOTS * BG_CHUNK)	/* ARENA's out_bytes */
#define MAX_BUDGETS	64	/* ids 0..63, as the module has them */

/* A step's verdict that is no errno: VERIFY found violations. */
#define E_VIOLATIONS	10000
/* ioctl returned a positive value: no documented outcome. */
#define E_POSITIVE	10001
/* An element the kernel writes came back with a non-zero tail. */
#define E_TAIL		10002
/* A budget pool holds another number of chunks than the step expects. */
#define E_CHUNKS	10003

enum { A, B, C, D, NR_LETTERS };

struct row {
	bool live;		/* held: @h is valid */
	bool slot;		/* parked in slot @session; @h is dead */
	struct kvpool_handle h;
	__u64 session;
	/* refreshed from ROW_QUERY after every step */
	__u32 pages[G_MAXP];
	__u32 nr;
	__u32 committed, protected;
};

struct ctx {
	int ctl;
	bool pool;
	__u32 id;
	__u32 expect_id;	/* lowest free pool id when the run began */
	bool id_checked;
	char path[64];		/* the pool's device node ("" until known) */
	bool private_node;	/* @path is a node this test made */
	int fd;			/* the client, or -1 */
	int xfd;		/* an export file, or -1 */
	int mfd;		/* a memfd for the arena, or -1 */
	int afd;		/* a descriptor ARENA gave, or -1 */
	int pty;		/* a fake CUDA export (a pty master), or -1 */
	int agfd;		/* the pool's agent file, or -1 */
	pid_t waiter;		/* a client waiting in ARENA, or 0 */
	__u64 req_id;		/* the request the agent took, or 0 */
	bool answered;		/* the waiter got its file and exits */
	int xrow;		/* the letter the export file holds */
	__u32 reserved;		/* page and row 0 kept out (RESERVE_ZERO) */
	bool budgets;		/* a budget sequence: snapshots read budgets */
	bool budget;		/* @bid is a budget this run made */
	bool bid_checked;
	bool bpool;		/* the pool is on budget @bid */
	__u32 bid;
	__u32 expect_bid;	/* lowest free budget id when the run began */
	char *map;		/* the pool file mapped, BG_MAP bytes, or NULL */
	struct row r[NR_LETTERS];
	__u32 cache[G_PAGES];	/* the client's prefix-cache pages */
	__u32 nr_cache;
	char note[2048];	/* why a check failed */
};

static __u64 features;
static int nth_fd = -1;
static bool verbose;

/* ---- fail-nth ---------------------------------------------------------- */

static int nth_open(void)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	nth_fd = open(p, O_RDWR | O_CLOEXEC);
	return nth_fd < 0 ? -errno : 0;
}

/* Formatted before the write: nothing runs after the arming syscall. */
static void nth_arm(unsigned int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%u", n);

	if (pwrite(nth_fd, b, len, 0) != len)
		abort();
}

/* Stops the countdown; returns what was left of it (0: a fault fired). */
static unsigned int nth_pause(void)
{
	char b[16] = "";
	ssize_t len = pread(nth_fd, b, sizeof(b) - 1, 0);

	if (pwrite(nth_fd, "0", 1, 0) != 1 || len <= 0)
		abort();
	return (unsigned int)strtoul(b, NULL, 10);
}

/* ---- small helpers (never called while armed unless said so) ----------- */

/* kt_ioctl(), with the positive return no ioctl documents as E_POSITIVE. */
static int xioctl(int fd, unsigned long cmd, void *arg)
{
	int e = kt_ioctl(fd, cmd, arg);

	return e < 0 ? E_POSITIVE : e;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in @dir starting with @prefix, joined by spaces. */
static void list_dir(const char *dir, const char *prefix, char *out,
		     size_t len)
{
	char names[128][64];
	char *ptrs[128];
	struct dirent *de;
	size_t n = 0, i, off = 0;
	DIR *d = opendir(dir);

	out[0] = 0;
	if (!d)
		return;
	while ((de = readdir(d)) && n < ARRAY_SIZE(names)) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(names[n], sizeof(names[n]), "%.63s", de->d_name);
		ptrs[n] = names[n];
		n++;
	}
	closedir(d);
	qsort(ptrs, n, sizeof(ptrs[0]), cmp_str);
	for (i = 0; i < n && off < len; i++)
		off += snprintf(out + off, len - off, "%s ", ptrs[i]);
}

/* The lowest pool id with no device: what the next create must get. */
static __u32 lowest_free_id(void)
{
	char p[64];
	__u32 id;

	for (id = 0; id < 64; id++) {
		snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%u", id);
		if (access(p, F_OK))
			break;
	}
	return id;
}

/* ---- steps: 0 or the errno; the ctx changes only on success ----------- */

typedef int (*step_fn)(struct ctx *c);

static int st_create(struct ctx *c)
{
	struct kvpool_ctl_create a = {
		.size = sizeof(a), .flags = KVPOOL_CREATE_RESERVE_ZERO,
		.nr_pages = G_PAGES, .page_tokens = G_PTOK,
		.nr_rows = G_ROWS, .row_tokens = G_RTOK,
	};
	int e = xioctl(c->ctl, KVPOOL_CTL_CREATE, &a);

	if (!e) {
		c->pool = true;
		c->id = a.out_pool_id;
	}
	return e;
}

static int st_destroy(struct ctx *c)
{
	struct kvpool_ctl_destroy d = { .size = sizeof(d), .pool_id = c->id };
	int e = xioctl(c->ctl, KVPOOL_CTL_DESTROY, &d);

	if (!e)
		c->pool = false;
	return e;
}

static int st_open(struct ctx *c)
{
	int fd = open(c->path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return errno;
	c->fd = fd;
	return 0;
}

static int st_close(struct ctx *c)
{
	int e = close(c->fd) ? errno : 0;

	c->fd = -1;	/* gone whatever close said */
	memset(c->r, 0, sizeof(c->r));
	c->nr_cache = 0;
	return e;
}

/*
 * Handles of @wide extra bytes each: the kernel writes the known part and
 * zeroes the rest (a tail it left alone is E_TAIL).
 */
static int row_alloc(struct ctx *c, int first, int n, unsigned int wide)
{
	struct {
		struct kvpool_handle h;
		__u8 tail[WIDE];
	} w[NR_LETTERS];
	size_t len = sizeof(struct kvpool_handle) + wide;
	__u8 buf[sizeof(w)];
	struct kvpool_row_alloc a = {
		.size = sizeof(a), .count = n, .entry_len = len,
		.handles = kt_ptr(buf),
	};
	int e, i;
	size_t k;

	memset(buf, 0xa5, sizeof(buf));
	e = xioctl(c->fd, KVPOOL_ROW_ALLOC, &a);
	if (e)
		return e;
	for (i = 0; i < n; i++) {
		memcpy(&w[i], buf + i * len, len);
		memset(&c->r[first + i], 0, sizeof(c->r[0]));
		c->r[first + i].live = true;
		c->r[first + i].h = w[i].h;
		for (k = 0; k < wide; k++)
			if (w[i].tail[k])
				return E_TAIL;
	}
	return 0;
}

static int st_alloc_abc(struct ctx *c) { return row_alloc(c, A, 3, 0); }
static int st_alloc_d(struct ctx *c) { return row_alloc(c, D, 1, 0); }
static int st_alloc_abc_wide(struct ctx *c) { return row_alloc(c, A, 3, WIDE); }

/* Entries and page ids @wide bytes longer than the header's, zero tails. */
static int extend_abc(struct ctx *c, unsigned int wide)
{
	struct kvpool_extend_entry e[3] = {
		{ .handle = c->r[A].h, .new_len = 12 },	/* 3 pages */
		{ .handle = c->r[B].h, .new_len = 10 },	/* 3 pages */
		{ .handle = c->r[C].h, .new_len = 16 },	/* 4 pages */
	};
	size_t elen = sizeof(e[0]) + wide, plen = sizeof(__u32) + wide;
	__u8 ebuf[3 * (sizeof(e[0]) + WIDE)];
	__u8 pbuf[3 * G_MAXP * (sizeof(__u32) + WIDE)];
	struct kvpool_extend x = {
		.size = sizeof(x), .count = 3, .entry_len = elen,
		.entries = kt_ptr(ebuf), .pages_cap = 3 * G_MAXP,
		.page_entry_len = plen, .pages = kt_ptr(pbuf),
	};
	int i;

	memset(ebuf, 0, sizeof(ebuf));
	for (i = 0; i < 3; i++)
		memcpy(ebuf + i * elen, &e[i], sizeof(e[i]));
	return xioctl(c->fd, KVPOOL_EXTEND, &x);
}

static int st_extend_abc(struct ctx *c) { return extend_abc(c, 0); }
static int st_extend_abc_wide(struct ctx *c) { return extend_abc(c, WIDE); }

/* A struct kvpool_batch op over @n len entries. */
static int len_batch(struct ctx *c, unsigned long cmd, const int *who,
		     const __u32 *len, int n, __u32 *out_nr)
{
	struct kvpool_len_entry e[NR_LETTERS] = {};
	struct kvpool_batch b = {
		.size = sizeof(b), .count = n, .entry_len = sizeof(e[0]),
		.entries = kt_ptr(e),
	};
	int i, ret;

	for (i = 0; i < n; i++) {
		e[i].handle = c->r[who[i]].h;
		e[i].len = len[i];
	}
	ret = xioctl(c->fd, cmd, &b);
	if (out_nr)
		*out_nr = b.out_nr_pages;
	return ret;
}

/* A struct kvpool_batch op over @n handles. */
static int handle_batch(struct ctx *c, unsigned long cmd, __u32 flags,
			const int *who, int n)
{
	struct kvpool_handle h[NR_LETTERS] = {};
	struct kvpool_batch b = {
		.size = sizeof(b), .flags = flags, .count = n,
		.entry_len = sizeof(h[0]), .entries = kt_ptr(h),
	};
	int i;

	for (i = 0; i < n; i++)
		h[i] = c->r[who[i]].h;
	return xioctl(c->fd, cmd, &b);
}

static int st_commit_abc(struct ctx *c)
{
	static const int who[] = { A, B, C };
	static const __u32 len[] = { 12, 8, 16 };

	return len_batch(c, KVPOOL_COMMIT, who, len, 3, NULL);
}

static int st_trim_b(struct ctx *c)
{
	static const int who[] = { B };

	return handle_batch(c, KVPOOL_TRIM, 0, who, 1);
}

static int st_to_slot_c(struct ctx *c)
{
	struct kvpool_slot s = {
		.size = sizeof(s), .session_id = SESSION, .handle = c->r[C].h,
	};
	int e = xioctl(c->fd, KVPOOL_TO_SLOT, &s);

	if (!e) {
		c->r[C].live = false;
		c->r[C].slot = true;
		c->r[C].session = SESSION;
	}
	return e;
}

static int st_from_slot_c(struct ctx *c)
{
	struct kvpool_slot s = { .size = sizeof(s), .session_id = SESSION };
	int e = xioctl(c->fd, KVPOOL_FROM_SLOT, &s);

	if (!e) {
		c->r[C].live = true;
		c->r[C].slot = false;
		c->r[C].h = s.handle;
	}
	return e;
}

static int st_slot_release_c(struct ctx *c)
{
	struct kvpool_slot s = { .size = sizeof(s), .session_id = SESSION };
	int e = xioctl(c->fd, KVPOOL_SLOT_RELEASE, &s);

	if (!e)
		memset(&c->r[C], 0, sizeof(c->r[C]));
	return e;
}

/* Cache pages a donate of row @w up to @upto moves (see the header). */
static void note_donated(struct ctx *c, int w, __u32 upto)
{
	struct row *r = &c->r[w];
	__u32 p;

	for (p = r->protected / G_PTOK; p < upto / G_PTOK && p < r->nr; p++)
		if (r->pages[p] != KVPOOL_PAGE_NONE)
			c->cache[c->nr_cache++] = r->pages[p];
}

static int st_donate_a8(struct ctx *c)
{
	static const int who[] = { A };
	static const __u32 len[] = { 8 };
	int e = len_batch(c, KVPOOL_DONATE, who, len, 1, NULL);

	if (!e)
		note_donated(c, A, 8);
	return e;
}

/* D borrows A's donated pages (the first two of A's row). */
static int st_attach_d(struct ctx *c)
{
	__u32 pages[2] = { c->r[A].pages[0], c->r[A].pages[1] };
	struct kvpool_attach a = {
		.size = sizeof(a), .handle = c->r[D].h, .nr_pages = 2,
		.page_entry_len = sizeof(pages[0]), .pages = kt_ptr(pages),
	};

	return xioctl(c->fd, KVPOOL_ATTACH_PREFIX, &a);
}

static int st_swa_c8(struct ctx *c)
{
	static const int who[] = { C };
	static const __u32 len[] = { 8 };

	return len_batch(c, KVPOOL_SWA_FREE, who, len, 1, NULL);
}

static int st_release_donate_a(struct ctx *c)
{
	static const int who[] = { A };
	int e = handle_batch(c, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE, who, 1);

	if (!e) {
		note_donated(c, A, c->r[A].committed);
		memset(&c->r[A], 0, sizeof(c->r[A]));
	}
	return e;
}

static int st_release_d(struct ctx *c)
{
	static const int who[] = { D };
	int e = handle_batch(c, KVPOOL_RELEASE, 0, who, 1);

	if (!e)
		memset(&c->r[D], 0, sizeof(c->r[D]));
	return e;
}

static int st_release_abc(struct ctx *c)
{
	static const int who[] = { A, B, C };
	int e = handle_batch(c, KVPOOL_RELEASE, 0, who, 3);

	if (!e)
		memset(&c->r[A], 0, 3 * sizeof(c->r[0]));
	return e;
}

static int st_evict(struct ctx *c)
{
	__u32 pages[G_PAGES];
	struct kvpool_batch b = {
		.size = sizeof(b), .count = c->nr_cache,
		.entry_len = sizeof(pages[0]), .entries = kt_ptr(pages),
	};
	int e;

	memcpy(pages, c->cache, c->nr_cache * sizeof(pages[0]));
	e = xioctl(c->fd, KVPOOL_CACHE_EVICT, &b);
	if (!e)
		c->nr_cache = 0;
	return e;
}

static int st_query_c(struct ctx *c)
{
	__u32 pages[G_MAXP];
	struct kvpool_row_query q = {
		.size = sizeof(q), .handle = c->r[C].h, .pages_cap = G_MAXP,
		.page_entry_len = sizeof(pages[0]), .pages = kt_ptr(pages),
	};

	return xioctl(c->fd, KVPOOL_ROW_QUERY, &q);
}

/* Page ids of sizeof(__u32) + WIDE bytes: each tail comes back zeroed. */
static int st_query_c_wide(struct ctx *c)
{
	const size_t len = sizeof(__u32) + WIDE;
	__u8 buf[G_MAXP * (sizeof(__u32) + WIDE)];
	struct kvpool_row_query q = {
		.size = sizeof(q), .handle = c->r[C].h, .pages_cap = G_MAXP,
		.page_entry_len = len, .pages = kt_ptr(buf),
	};
	__u32 i, k;
	int e;

	memset(buf, 0xa5, sizeof(buf));
	e = xioctl(c->fd, KVPOOL_ROW_QUERY, &q);
	if (e)
		return e;
	for (i = 0; i < q.out_nr_pages && i < G_MAXP; i++)
		for (k = sizeof(__u32); k < len; k++)
			if (buf[i * len + k])
				return E_TAIL;
	return 0;
}

static int st_stats(struct ctx *c)
{
	struct kvpool_stats s = { .size = sizeof(s) };

	return xioctl(c->fd, KVPOOL_STATS, &s);
}

static int st_verify(struct ctx *c)
{
	struct kvpool_verify v = { .size = sizeof(v) };
	int e = xioctl(c->fd, KVPOOL_VERIFY, &v);

	return e ? e : v.out_violations ? E_VIOLATIONS : 0;
}

#ifdef KVPOOL_EXPORT
static int export_row(struct ctx *c, int w)
{
	struct kvpool_export x = { .size = sizeof(x), .handle = c->r[w].h };
	int e = xioctl(c->fd, KVPOOL_EXPORT, &x);
	__u32 p, i;

	if (e)
		return e;
	c->xfd = x.out_fd;
	c->xrow = w;
	/* Pages it borrowed from the cache are the row's own now. */
	for (p = 0; p < c->r[w].protected / G_PTOK; p++)
		for (i = 0; i < c->nr_cache; i++)
			if (c->cache[i] == c->r[w].pages[p])
				c->cache[i] = c->cache[--c->nr_cache];
	memset(&c->r[w], 0, sizeof(c->r[w]));
	return 0;
}

static int st_export_a(struct ctx *c) { return export_row(c, A); }
static int st_export_b(struct ctx *c) { return export_row(c, B); }

static int st_import(struct ctx *c)
{
	struct kvpool_import im = { .size = sizeof(im), .fd = c->xfd };
	int e = xioctl(c->fd, KVPOOL_IMPORT, &im);

	if (!e) {
		memset(&c->r[c->xrow], 0, sizeof(c->r[0]));
		c->r[c->xrow].live = true;
		c->r[c->xrow].h = im.out_handle;
	}
	return e;
}

static int st_close_x(struct ctx *c)
{
	int e = close(c->xfd) ? errno : 0;

	c->xfd = -1;
	return e;
}
#define HAVE_EXPORT 1
#else
#define HAVE_EXPORT 0
#endif

#if defined(KVPOOL_CTL_TENANT_SET) && defined(KVPOOL_CTL_TENANT_LIST)
/* Limits for a tenant nobody has opened as yet: a new tenant record. */
static int st_tenant_set(struct ctx *c)
{
	struct kvpool_ctl_tenant t = {
		.size = sizeof(t), .pool_id = c->id, .cgroup_id = 4242,
		.uid = 4242, .max_pages = 16, .min_pages = 4, .max_rows = 2,
		.label = "failnth",
	};

	return xioctl(c->ctl, KVPOOL_CTL_TENANT_SET, &t);
}

static int tenant_list(struct ctx *c, struct kvpool_tenant_info *info,
		       __u32 count, __u32 *nr)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l), .pool_id = c->id, .count = count,
		.entry_len = sizeof(*info), .tenants = kt_ptr(info),
	};
	int e = xioctl(c->ctl, KVPOOL_CTL_TENANT_LIST, &l);

	*nr = l.out_nr_tenants;
	return e;
}

static int st_tenant_list(struct ctx *c)
{
	struct kvpool_tenant_info info[4];
	__u32 nr;

	return tenant_list(c, info, 4, &nr);
}
#define HAVE_TENANTS 1
#else
#define HAVE_TENANTS 0
#endif

#if defined(KVPOOL_CTL_SET_WMARK) && defined(KVPOOL_PRESSURE)
static int st_set_wmark(struct ctx *c)
{
	struct kvpool_ctl_wmark w = {
		.size = sizeof(w), .pool_id = c->id, .low_wmark = 8,
		.high_wmark = 16,
	};

	return xioctl(c->ctl, KVPOOL_CTL_SET_WMARK, &w);
}

static int st_pressure(struct ctx *c)
{
	struct kvpool_pressure pr = { .size = sizeof(pr) };

	return xioctl(c->fd, KVPOOL_PRESSURE, &pr);
}
#define HAVE_PRESSURE 1
#else
#define HAVE_PRESSURE 0
#endif

#if defined(KVPOOL_CTL_ARENA_SET) && defined(KVPOOL_ARENA)
/* Setup: the memfd (its syscalls allocate, so never while armed). */
static int st_memfd(struct ctx *c)
{
	c->mfd = kt_host_memfd((__u64)G_PAGES * 4096);
	return c->mfd < 0 ? errno : 0;
}

static int st_arena_set(struct ctx *c)
{
	struct kvpool_arena_chunk ch = {
		.fd = c->mfd, .bytes = (__u64)G_PAGES * 4096,
	};
	struct kvpool_ctl_arena_set a = {
		.size = sizeof(a), .pool_id = c->id, .kind = KVPOOL_ARENA_HOST,
		.page_bytes = 4096, .nr_chunks = 1,
		.chunk_entry_len = sizeof(ch), .chunks = kt_ptr(&ch),
	};

	return xioctl(c->ctl, KVPOOL_CTL_ARENA_SET, &a);
}

static int st_arena_fds(struct ctx *c)
{
	struct kvpool_arena_fd f = { .out_fd = -1 };
	struct kvpool_arena a = {
		.size = sizeof(a), .flags = KVPOOL_ARENA_FDS, .count = 1,
		.fd_entry_len = sizeof(f), .fds = kt_ptr(&f),
	};
	int e = xioctl(c->fd, KVPOOL_ARENA, &a);

	if (!e)
		c->afd = f.out_fd;
	return e;
}
#define HAVE_ARENA 1
#else
#define HAVE_ARENA 0
#endif

#ifdef KVPOOL_CTL_AGENT
/*
 * The GPU agent's ops (docs/gpu-agent.md) on a pool for the guest's GPU
 * whose arena is one fake CUDA export under the module's fake_cuda hook
 * (set by prepare()). Setup: the pool, the export, a client of it
 * forked to wait in ARENA so that a request is queued.
 */
/* st_create()'s pool, for the guest's GPU. */
static int st_create_gpu(struct ctx *c)
{
	struct kvpool_ctl_create a = {
		.size = sizeof(a),
		.flags = KVPOOL_CREATE_RESERVE_ZERO | KVPOOL_CREATE_GPU,
		.nr_pages = G_PAGES, .page_tokens = G_PTOK,
		.nr_rows = G_ROWS, .row_tokens = G_RTOK,
	};
	int e = -kt_find_gpu(&a.gpu_domain, &a.gpu_devid, NULL, 0);

	if (!e)
		e = xioctl(c->ctl, KVPOOL_CTL_CREATE, &a);
	if (!e) {
		c->pool = true;
		c->id = a.out_pool_id;
	}
	return e;
}

static int st_pty(struct ctx *c)
{
	c->pty = kt_fake_export();
	return c->pty < 0 ? errno : 0;
}

static int st_arena_set_agent(struct ctx *c)
{
	struct kvpool_arena_chunk ch = {
		.fd = c->pty, .bytes = (__u64)G_PAGES * 4096,
	};
	struct kvpool_ctl_arena_set a = {
		.size = sizeof(a), .flags = KVPOOL_ARENA_SET_AGENT,
		.pool_id = c->id, .kind = KVPOOL_ARENA_CUDA,
		.page_bytes = 4096, .nr_chunks = 1,
		.chunk_entry_len = sizeof(ch), .chunks = kt_ptr(&ch),
	};

	return xioctl(c->ctl, KVPOOL_CTL_ARENA_SET, &a);
}

static int st_agent(struct ctx *c)
{
	struct kvpool_ctl_agent a = { .size = sizeof(a), .pool_id = c->id };
	int e = xioctl(c->ctl, KVPOOL_CTL_AGENT, &a);

	if (!e)
		c->agfd = a.out_fd;
	return e;
}

/* Setup: a client process that waits in ARENA; its request is queued. */
static int st_waiter(struct ctx *c)
{
	struct pollfd p = { .fd = c->agfd, .events = POLLIN };

	c->waiter = fork();
	if (c->waiter < 0)
		return errno;
	if (!c->waiter) {
		struct kvpool_arena_fd f;
		struct kvpool_arena a = {
			.size = sizeof(a), .flags = KVPOOL_ARENA_FDS,
			.count = 1, .fd_entry_len = sizeof(f),
			.fds = kt_ptr(&f),
		};
		int fd = open(c->path, O_RDWR | O_CLOEXEC);

		close(c->agfd);
		_exit(fd < 0 || ioctl(fd, KVPOOL_ARENA, &a) ? 1 : 0);
	}
	return poll(&p, 1, 10000) == 1 ? 0 : ETIMEDOUT;
}

static int st_agent_recv(struct ctx *c)
{
	struct kvpool_agent_request r = { .size = sizeof(r), .out_fd = -1 };
	int e = xioctl(c->agfd, KVPOOL_AGENT_RECV, &r);

	if (!e) {
		c->req_id = r.out_id;
		c->afd = r.out_fd;
	}
	return e;
}

/* Answers with a fresh export (a second pty, made before arming). */
static int st_agent_reply(struct ctx *c)
{
	struct kvpool_agent_reply r = {
		.size = sizeof(r), .id = c->req_id, .fd = c->mfd,
	};
	int e = xioctl(c->agfd, KVPOOL_AGENT_REPLY, &r);

	if (!e)
		c->answered = true;
	return e;
}

static int st_fresh(struct ctx *c)
{
	c->mfd = kt_fake_export();
	return c->mfd < 0 ? errno : 0;
}
#define HAVE_AGENT 1
#else
#define HAVE_AGENT 0
#endif

#if defined(KVPOOL_CTL_BUDGET) && defined(KVPOOL_CREATE_BUDGET)
/*
 * Chunk budgets (ABI 4, docs/gpu-budget.md): a budget of BG_CHUNKS
 * chunks and a pool of G_PAGES on it, which backs its pages chunk by
 * chunk as EXTEND needs them and gives back its wholly free top slots
 * after every ioctl while it keeps its high watermark's worth free (the
 * default, G_PAGES / 16: a slot goes back once BG_PPC + 4 pages are
 * free).
 */
static int budget_op(struct ctx *c, __u32 op, struct kvpool_ctl_budget *b)
{
	b->size = sizeof(*b);
	b->op = op;
	return xioctl(c->ctl, KVPOOL_CTL_BUDGET, b);
}

static int budget_info(struct ctx *c, __u32 id, struct kvpool_ctl_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->budget_id = id;
	return budget_op(c, KVPOOL_BUDGET_INFO, b);
}

static int st_budget_create(struct ctx *c)
{
	struct kvpool_ctl_budget b = {
		.kind = KVPOOL_ARENA_HOST, .nr_chunks = BG_CHUNKS,
		.chunk_bytes = BG_CHUNK,
	};
	int e = budget_op(c, KVPOOL_BUDGET_CREATE, &b);

	if (!e) {
		c->budget = true;
		c->bid = b.budget_id;
	}
	return e;
}

static int st_budget_destroy(struct ctx *c)
{
	struct kvpool_ctl_budget b = { .budget_id = c->bid };
	int e = budget_op(c, KVPOOL_BUDGET_DESTROY, &b);

	if (!e)
		c->budget = false;
	return e;
}

/* A floor of one chunk and a ceiling of two for the pool. */
static int st_budget_limits(struct ctx *c)
{
	struct kvpool_ctl_budget b = {
		.budget_id = c->bid, .pool_id = c->id,
		.min_bytes = BG_CHUNK, .max_bytes = 2 * BG_CHUNK,
	};

	return budget_op(c, KVPOOL_BUDGET_LIMITS, &b);
}

static int st_budget_info(struct ctx *c)
{
	struct kvpool_ctl_budget b;

	return budget_info(c, c->bid, &b);
}

/* st_create()'s pool geometry on budget @bid, 4 KiB pages. */
static int create_bpool(struct ctx *c, __u32 flags)
{
	struct kvpool_ctl_create a = {
		.size = sizeof(a), .flags = flags | KVPOOL_CREATE_BUDGET,
		.nr_pages = G_PAGES, .page_tokens = G_PTOK,
		.nr_rows = G_ROWS, .row_tokens = G_RTOK,
		.budget_id = c->bid, .page_bytes = BG_PAGE,
	};
	int e = xioctl(c->ctl, KVPOOL_CTL_CREATE, &a);

	if (!e) {
		c->pool = true;
		c->bpool = true;
		c->id = a.out_pool_id;
		c->reserved = flags & KVPOOL_CREATE_RESERVE_ZERO ? 1 : 0;
	}
	return e;
}

/* Slot 0 backed at once and kept: it holds the reserved page. */
static int st_create_bpool(struct ctx *c)
{
	return create_bpool(c, KVPOOL_CREATE_RESERVE_ZERO);
}

/* No page reserved: the pool starts with no chunk at all. */
static int st_create_bpool_bare(struct ctx *c)
{
	return create_bpool(c, 0);
}

/* Row D to a full row: G_MAXP pages. */
static int st_extend_d(struct ctx *c)
{
	__u32 pages[G_MAXP];
	struct kvpool_extend_entry e = {
		.handle = c->r[D].h, .new_len = G_RTOK,
	};
	struct kvpool_extend x = {
		.size = sizeof(x), .count = 1, .entry_len = sizeof(e),
		.entries = kt_ptr(&e), .pages_cap = G_MAXP,
		.page_entry_len = sizeof(pages[0]), .pages = kt_ptr(pages),
	};

	return xioctl(c->fd, KVPOOL_EXTEND, &x);
}

/*
 * Setup: the pool holds @n chunks (ARENA, sysfs) and the budget has the
 * rest free: a step meant to grow or shrink the pool did.
 */
static int expect_chunks(struct ctx *c, __u32 n)
{
	struct kvpool_ctl_budget b;
	struct kvpool_arena a;
	char p[128], v[32];
	int e;

	snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%u/chunks", c->id);
	e = kt_arena_info(c->fd, &a);
	if (!e)
		e = budget_info(c, c->bid, &b);
	if (!e)
		e = kt_read_text(p, v, sizeof(v));
	if (e)
		return e;
	if (a.out_nr_chunks != n || strtoul(v, NULL, 10) != n ||
	    b.out_free_chunks != BG_CHUNKS - n)
		return E_CHUNKS;
	return 0;
}

static int st_chunks0(struct ctx *c) { return expect_chunks(c, 0); }
static int st_chunks1(struct ctx *c) { return expect_chunks(c, 1); }
static int st_chunks2(struct ctx *c) { return expect_chunks(c, 2); }

/* The pool file, all of its id space, shared (a private map is EINVAL). */
static int st_mmap(struct ctx *c)
{
	void *m = mmap(NULL, BG_MAP, PROT_READ | PROT_WRITE, MAP_SHARED,
		       c->fd, 0);

	if (m == MAP_FAILED)
		return errno;
	c->map = m;
	return 0;
}

static sigjmp_buf touch_env;

static void touch_bus(int sig __attribute__((unused)))
{
	siglongjmp(touch_env, 1);
}

/* Setup: the mapping works: slot 0 (the kept one) reads and writes. */
static int st_touch(struct ctx *c)
{
	struct sigaction sa = { .sa_handler = touch_bus }, old;
	volatile char *p = c->map;
	int e = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(touch_env, 1)) {
		p[0] = 'k';
		if (p[0] != 'k')
			e = EIO;
	} else {
		e = EFAULT;
	}
	sigaction(SIGBUS, &old, NULL);
	return e;
}
#define HAVE_BUDGET 1
#else
#define HAVE_BUDGET 0
#endif

/* ---- sequences ------------------------------------------------------- */

struct step {
	const char *name;
	step_fn fn;
	bool armed;
	__u64 needs;		/* KVPOOL_FEAT_*: skipped when the module lacks one */
};

#define SETUP(f)	{ #f + 3, f, false, 0 }
#define ARMED(f)	{ #f + 3, f, true, 0 }
#define SETUP_X(f)	{ #f + 3, f, false, KVPOOL_FEAT_EXPORT }
#define ARMED_X(f)	{ #f + 3, f, true, KVPOOL_FEAT_EXPORT }
#define SETUP_Q(f)	{ #f + 3, f, false, KVPOOL_FEAT_QUOTA }
#define ARMED_Q(f)	{ #f + 3, f, true, KVPOOL_FEAT_QUOTA }
#define ARMED_P(f)	{ #f + 3, f, true, KVPOOL_FEAT_PRESSURE }
#define SETUP_M(f)	{ #f + 3, f, false, KVPOOL_FEAT_ARENA }
#define ARMED_M(f)	{ #f + 3, f, true, KVPOOL_FEAT_ARENA }
#define SETUP_G(f)	{ #f + 3, f, false, KVPOOL_FEAT_GPU_AGENT }
#define ARMED_G(f)	{ #f + 3, f, true, KVPOOL_FEAT_GPU_AGENT }
#if HAVE_BUDGET
#define SETUP_B(f)	{ #f + 3, f, false, KVPOOL_FEAT_BUDGET }
#define ARMED_B(f)	{ #f + 3, f, true, KVPOOL_FEAT_BUDGET }
#endif

/* The common start: a pool, a client, three rows with pages. */
#define ROWS_SETUP \
	SETUP(st_create), SETUP(st_open), SETUP(st_alloc_abc), \
	SETUP(st_extend_abc), SETUP(st_commit_abc)

/* ---- state snapshots ------------------------------------------------- */

struct snap {
	int stats_err;
	struct kvpool_stats st;
	int q_err[NR_LETTERS];
	struct kvpool_row_query q[NR_LETTERS];
	__u32 qp[NR_LETTERS][G_MAXP];
	unsigned int nfds;
	int tl_err;
	__u32 nr_tenants;
	int arena_err;
	struct kvpool_arena arena;
	/* budget sequences: which ids name a budget, and this run's one */
	__u64 bset;
	int bset_err;		/* an INFO errno that is not ENODATA, or 0 */
	int binfo_err;
	struct kvpool_ctl_budget binfo;
	unsigned int nmaps;	/* mappings of the pool's node */
#if HAVE_TENANTS
	struct kvpool_tenant_info tenants[8];
#endif
	char fdinfo[512];
	char sysfs[256];
	char pools[512];	/* KT_SYSFS_CLASS */
	char misc[512];		/* MISC_CLASS: the control device */
	char dev[512];
};

static const char *const sysfs_attrs[] = {
	"nr_clients", "nr_tenants", "free_pages", "free_rows", "held_rows",
	"slot_rows", "export_rows", "chunks", "unbacked_pages",
};

static int query(struct ctx *c, int w, struct kvpool_row_query *q,
		 __u32 *pages)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->pages_cap = G_MAXP;
	q->page_entry_len = sizeof(pages[0]);
	q->pages = kt_ptr(pages);
	if (c->r[w].slot) {
		q->flags = KVPOOL_QUERY_BY_SLOT;
		q->session_id = c->r[w].session;
	} else {
		q->handle = c->r[w].h;
	}
	return xioctl(c->fd, KVPOOL_ROW_QUERY, q);
}

/* Lines of /proc/self/maps whose file is @path. */
static unsigned int count_maps(const char *path)
{
	FILE *f = fopen("/proc/self/maps", "re");
	size_t plen = strlen(path);
	unsigned int n = 0;
	char line[512];

	if (!f)
		return ~0u;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");

		if (len > plen && line[len - plen - 1] == ' ' &&
		    !strncmp(line + len - plen, path, plen))
			n++;
	}
	fclose(f);
	return n;
}

#if HAVE_BUDGET
/*
 * Every budget id's INFO (ENODATA: none), and this run's budget's
 * counters. Its cleared bytes and clearing time are left out: the
 * clearing work moves them behind every op's back.
 */
static void budget_snap(struct ctx *c, struct snap *s)
{
	struct kvpool_ctl_budget b;
	__u32 id;
	int e;

	for (id = 0; id < MAX_BUDGETS; id++) {
		e = budget_info(c, id, &b);
		if (!e)
			s->bset |= 1ull << id;
		else if (e != ENODATA && !s->bset_err)
			s->bset_err = e;
	}
	if (!c->budget)
		return;
	s->binfo_err = budget_info(c, c->bid, &s->binfo);
	s->binfo.out_cleared_bytes = 0;
	s->binfo.out_clear_ns = 0;
}
#endif

static void snap_take(struct ctx *c, struct snap *s)
{
	char p[128], v[64];
	size_t off = 0;
	unsigned int i;
	int w;

	memset(s, 0, sizeof(*s));
	s->stats_err = EBADF;
	if (c->fd >= 0) {
		s->st.size = sizeof(s->st);
		s->stats_err = xioctl(c->fd, KVPOOL_STATS, &s->st);
		snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", c->fd);
		kt_read_text(p, s->fdinfo, sizeof(s->fdinfo));
		for (w = 0; w < NR_LETTERS; w++)
			if (c->r[w].live || c->r[w].slot)
				s->q_err[w] = query(c, w, &s->q[w], s->qp[w]);
		/* the user pointer is ours, not state */
		for (w = 0; w < NR_LETTERS; w++)
			s->q[w].pages = 0;
	}
#if HAVE_TENANTS
	if (c->pool && (features & KVPOOL_FEAT_QUOTA))
		s->tl_err = tenant_list(c, s->tenants, ARRAY_SIZE(s->tenants),
					&s->nr_tenants);
#endif
#if HAVE_ARENA
	if (c->fd >= 0 && (features & KVPOOL_FEAT_ARENA))
		s->arena_err = kt_arena_info(c->fd, &s->arena);
#endif
#if HAVE_BUDGET
	if (c->budgets)
		budget_snap(c, s);
#endif
	if (c->pool) {
		for (i = 0; i < ARRAY_SIZE(sysfs_attrs); i++) {
			snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%u/%s",
				 c->id, sysfs_attrs[i]);
			if (kt_read_text(p, v, sizeof(v)))
				snprintf(v, sizeof(v), "-\n");
			off += snprintf(s->sysfs + off, sizeof(s->sysfs) - off,
					"%s=%s", sysfs_attrs[i], v);
			if (off >= sizeof(s->sysfs))
				break;
		}
	}
	s->nfds = kt_count_fds();
	if (c->path[0])
		s->nmaps = count_maps(c->path);
	list_dir(KT_SYSFS_CLASS, "kvpool", s->pools, sizeof(s->pools));
	list_dir(MISC_CLASS, "kvpool", s->misc, sizeof(s->misc));
	list_dir("/dev", "kvpool", s->dev, sizeof(s->dev));
}

/* Names the first part of @a and @b that differs, into c->note. */
static bool snap_same(struct ctx *c, const struct snap *a,
		      const struct snap *b)
{
	int w;

	/* First: a budget's chunks also show in STATS, ARENA and sysfs. */
	if (a->bset != b->bset || a->bset_err != b->bset_err) {
		snprintf(c->note, sizeof(c->note),
			 "budget ids changed: %#llx -> %#llx (INFO errno %d -> %d)",
			 (unsigned long long)a->bset,
			 (unsigned long long)b->bset, a->bset_err, b->bset_err);
		return false;
	}
	if (a->binfo_err != b->binfo_err ||
	    memcmp(&a->binfo, &b->binfo, sizeof(a->binfo))) {
		snprintf(c->note, sizeof(c->note),
			 "budget INFO changed (err %d->%d, free_chunks %u->%u, nr_pools %u->%u, moves %llu->%llu)",
			 a->binfo_err, b->binfo_err, a->binfo.out_free_chunks,
			 b->binfo.out_free_chunks, a->binfo.out_nr_pools,
			 b->binfo.out_nr_pools,
			 (unsigned long long)a->binfo.out_moves,
			 (unsigned long long)b->binfo.out_moves);
		return false;
	}
	if (a->nmaps != b->nmaps) {
		snprintf(c->note, sizeof(c->note),
			 "mappings of the pool changed: %u -> %u", a->nmaps,
			 b->nmaps);
		return false;
	}
	if (a->stats_err != b->stats_err ||
	    memcmp(&a->st, &b->st, sizeof(a->st))) {
		snprintf(c->note, sizeof(c->note),
			 "STATS changed (free_pages %u->%u, row_pages %u->%u, free_rows %u->%u, cache %u+%u->%u+%u, client rows %u->%u slots %u->%u pages %u->%u)",
			 a->st.out_free_pages, b->st.out_free_pages,
			 a->st.out_row_pages, b->st.out_row_pages,
			 a->st.out_free_rows, b->st.out_free_rows,
			 a->st.out_cache_evictable, a->st.out_cache_pinned,
			 b->st.out_cache_evictable, b->st.out_cache_pinned,
			 a->st.out_client_rows, b->st.out_client_rows,
			 a->st.out_client_slots, b->st.out_client_slots,
			 a->st.out_client_pages, b->st.out_client_pages);
		return false;
	}
	for (w = 0; w < NR_LETTERS; w++)
		if (a->q_err[w] != b->q_err[w] ||
		    memcmp(&a->q[w], &b->q[w], sizeof(a->q[w])) ||
		    memcmp(a->qp[w], b->qp[w], sizeof(a->qp[w]))) {
			snprintf(c->note, sizeof(c->note),
				 "ROW_QUERY of row %c changed (err %d->%d, alloc %u->%u, committed %u->%u, protected %u->%u, nr_pages %u->%u)",
				 'A' + w, a->q_err[w], b->q_err[w],
				 a->q[w].out_allocated_len, b->q[w].out_allocated_len,
				 a->q[w].out_committed_len, b->q[w].out_committed_len,
				 a->q[w].out_protected_len, b->q[w].out_protected_len,
				 a->q[w].out_nr_pages, b->q[w].out_nr_pages);
			return false;
		}
	if (a->tl_err != b->tl_err || a->nr_tenants != b->nr_tenants
#if HAVE_TENANTS
	    || memcmp(a->tenants, b->tenants, sizeof(a->tenants))
#endif
	    ) {
		snprintf(c->note, sizeof(c->note),
			 "CTL_TENANT_LIST changed (err %d->%d, tenants %u->%u)",
			 a->tl_err, b->tl_err, a->nr_tenants, b->nr_tenants);
		return false;
	}
	if (a->arena_err != b->arena_err ||
	    memcmp(&a->arena, &b->arena, sizeof(a->arena))) {
		snprintf(c->note, sizeof(c->note),
			 "ARENA changed (err %d->%d, kind %u->%u, chunks %u->%u, set_flags %#x->%#x)",
			 a->arena_err, b->arena_err, a->arena.out_kind,
			 b->arena.out_kind, a->arena.out_nr_chunks,
			 b->arena.out_nr_chunks, a->arena.out_set_flags,
			 b->arena.out_set_flags);
		return false;
	}
	if (strcmp(a->fdinfo, b->fdinfo)) {
		snprintf(c->note, sizeof(c->note), "fdinfo changed: [%s] -> [%s]",
			 a->fdinfo, b->fdinfo);
		return false;
	}
	if (strcmp(a->sysfs, b->sysfs)) {
		snprintf(c->note, sizeof(c->note), "sysfs changed: [%s] -> [%s]",
			 a->sysfs, b->sysfs);
		return false;
	}
	if (a->nfds != b->nfds) {
		snprintf(c->note, sizeof(c->note),
			 "open fds changed: %u -> %u", a->nfds, b->nfds);
		return false;
	}
	if (strcmp(a->pools, b->pools) || strcmp(a->misc, b->misc) ||
	    strcmp(a->dev, b->dev)) {
		snprintf(c->note, sizeof(c->note),
			 "kvpool devices changed: class [%.300s] -> [%.300s], misc [%.200s] -> [%.200s], dev [%.300s] -> [%.300s]",
			 a->pools, b->pools, a->misc, b->misc, a->dev, b->dev);
		return false;
	}
	return true;
}

/* ---- between steps (never armed) --------------------------------------- */

/*
 * After a successful step: learn the pool's node and the rows' pages.
 * The driver core ignores devtmpfs errors: a create whose devtmpfs request
 * failed leaves the device without a node, a destroy whose request failed
 * leaves a stale node behind. Neither is kvpool state, so when /dev has no
 * node of the pool's own number, make a private one from sysfs.
 */
static bool settle(struct __test_metadata *_metadata, struct ctx *c)
{
	char p[128], v[32];
	unsigned int maj, min;
	struct stat st;
	int w;

	if (c->pool && !c->id_checked) {
		c->id_checked = true;
		if (c->id != c->expect_id) {
			snprintf(c->note, sizeof(c->note),
				 "new pool got id %u, the lowest free was %u: an id leaked",
				 c->id, c->expect_id);
			return false;
		}
	}
	if (c->budget && !c->bid_checked) {
		c->bid_checked = true;
		if (c->bid != c->expect_bid) {
			snprintf(c->note, sizeof(c->note),
				 "new budget got id %u, the lowest free was %u: an id leaked",
				 c->bid, c->expect_bid);
			return false;
		}
	}
	if (c->pool && !c->path[0]) {
		snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%u/dev", c->id);
		if (kt_read_text(p, v, sizeof(v)) ||
		    sscanf(v, "%u:%u", &maj, &min) != 2) {
			snprintf(c->note, sizeof(c->note),
				 "pool %u has no %s", c->id, p);
			return false;
		}
		snprintf(c->path, sizeof(c->path), "/dev/kvpool%u", c->id);
		if (stat(c->path, &st) || !S_ISCHR(st.st_mode) ||
		    st.st_rdev != makedev(maj, min)) {
			snprintf(c->path, sizeof(c->path),
				 "/run/failnth-kvpool%u", c->id);
			unlink(c->path);
			if (mknod(c->path, S_IFCHR | 0600, makedev(maj, min))) {
				snprintf(c->note, sizeof(c->note),
					 "mknod %s: %s", c->path, strerror(errno));
				return false;
			}
			c->private_node = true;
			if (verbose)
				TH_LOG("no /dev/kvpool%u of %u:%u (an injected fault in a devtmpfs request); using %s",
				       c->id, maj, min, c->path);
		}
	}
	if (c->fd < 0)
		return true;
	for (w = 0; w < NR_LETTERS; w++) {
		struct kvpool_row_query q;
		struct row *r = &c->r[w];
		int e;

		if (!r->live && !r->slot)
			continue;
		e = query(c, w, &q, r->pages);
		if (e) {
			snprintf(c->note, sizeof(c->note),
				 "ROW_QUERY of row %c: %s", 'A' + w, strerror(e));
			return false;
		}
		r->nr = q.out_nr_pages;
		r->committed = q.out_committed_len;
		r->protected = q.out_protected_len;
	}
	return true;
}

#if HAVE_BUDGET
/*
 * The budget once its pool is gone: every chunk back, no pool on it
 * (the pool's device may be released a little after the destroy), and
 * then it can go.
 */
static void budget_finish(struct __test_metadata *_metadata, struct ctx *c)
{
	struct kvpool_ctl_budget b;
	int tries;

	for (tries = 0; tries < 200; tries++) {
		if (budget_info(c, c->bid, &b) || !b.out_nr_pools)
			break;
		usleep(10 * 1000);
	}
	EXPECT_EQ(0, budget_info(c, c->bid, &b));
	EXPECT_EQ(0, b.out_nr_pools);
	EXPECT_EQ(BG_CHUNKS, b.out_free_chunks);
	EXPECT_EQ(0, st_budget_destroy(c));
}

/* The lowest id no budget has: what the next CREATE must get. */
static __u32 lowest_free_bid(struct ctx *c)
{
	struct kvpool_ctl_budget b;
	__u32 id;

	for (id = 0; id < MAX_BUDGETS; id++)
		if (budget_info(c, id, &b) == ENODATA)
			break;
	return id;
}
#endif

/*
 * The end of every run: VERIFY, close everything, check from a fresh
 * client that the whole pool is free, destroy it. EXPECT only: it also
 * cleans up after a failed check.
 */
static void finish(struct __test_metadata *_metadata, struct ctx *c)
{
	struct kvpool_verify v = { .size = sizeof(v) };
	struct kvpool_stats st = { .size = sizeof(st) };
	unsigned int live = 0, slots = 0, held = 0, unbacked = 0;
	char p[128], txt[32];
	int fd, w;

	if (c->map) {
		EXPECT_EQ(0, munmap(c->map, BG_MAP));
		c->map = NULL;
	}
	if (c->fd >= 0) {
		struct kvpool_arena a;

		EXPECT_EQ(0, xioctl(c->fd, KVPOOL_VERIFY, &v));
		EXPECT_EQ(0, v.out_violations);
		for (w = 0; w < NR_LETTERS; w++) {
			live += c->r[w].live;
			slots += c->r[w].slot;
		}
		EXPECT_EQ(0, xioctl(c->fd, KVPOOL_STATS, &st));
		EXPECT_EQ(live, st.out_client_rows);
		EXPECT_EQ(slots, st.out_client_slots);
		EXPECT_EQ(c->nr_cache, st.out_client_cache_pages);
		/*
		 * A budget pool's rows go back before the close: pages left
		 * in quarantine would retire the pool at destroy, and with it
		 * keep the budget, until this process is gone.
		 */
		if (c->pool && c->bpool) {
			static const int all[] = { A, B, C, D };

			EXPECT_EQ(0, slots + c->nr_cache);
			for (w = 0; w < NR_LETTERS; w++)
				if (c->r[w].live)
					EXPECT_EQ(0, handle_batch(c, KVPOOL_RELEASE,
								  0, all + w, 1));
			memset(c->r, 0, sizeof(c->r));
			EXPECT_EQ(0, xioctl(c->fd, KVPOOL_STATS, &st));
		}
		/*
		 * On a pool with an arena, what its rows and slots own is held
		 * back after the close while this process lives (design.md, "A
		 * dead client's pages"); destroy drops it.
		 */
		if (!kt_arena_info(c->fd, &a) && a.out_kind != KVPOOL_ARENA_NONE)
			held = st.out_client_pages;
		EXPECT_EQ(0, close(c->fd));
		c->fd = -1;
	}
	if (c->xfd >= 0) {
		EXPECT_EQ(0, close(c->xfd));
		c->xfd = -1;
	}
	if (c->mfd >= 0) {
		EXPECT_EQ(0, close(c->mfd));
		c->mfd = -1;
	}
	if (c->afd >= 0) {
		EXPECT_EQ(0, close(c->afd));
		c->afd = -1;
	}
	/* A waiter still waits unless it was answered: it is a client. */
	if (c->waiter > 0) {
		if (!c->answered)
			kill(c->waiter, SIGKILL);
		EXPECT_EQ(c->waiter, waitpid(c->waiter, NULL, 0));
		c->waiter = 0;
	}
	if (c->agfd >= 0) {
		EXPECT_EQ(0, close(c->agfd));
		c->agfd = -1;
	}
	if (c->pty >= 0) {
		EXPECT_EQ(0, close(c->pty));
		c->pty = -1;
	}
	if (c->pool) {
		fd = open(c->path, O_RDWR | O_CLOEXEC);
		EXPECT_LE(0, fd) {
			TH_LOG("open %s: %s", c->path, strerror(errno));
		}
		if (fd >= 0) {
			memset(&st, 0, sizeof(st));
			st.size = sizeof(st);
			EXPECT_EQ(0, xioctl(fd, KVPOOL_STATS, &st));
			/* A budget pool's unbacked pages are not free. */
			if (c->bpool) {
				snprintf(p, sizeof(p), KT_SYSFS_CLASS
					 "/kvpool%u/unbacked_pages", c->id);
				EXPECT_EQ(0, kt_read_text(p, txt, sizeof(txt)));
				unbacked = strtoul(txt, NULL, 10);
			}
			EXPECT_EQ(G_PAGES - c->reserved - held - unbacked,
				  st.out_free_pages);
			EXPECT_EQ(held, st.out_quarantine_pages);
			EXPECT_EQ(c->reserved, st.out_reserved_pages);
			EXPECT_EQ(0, st.out_row_pages + st.out_slot_pages +
				     st.out_cache_evictable + st.out_cache_pinned);
			EXPECT_EQ(G_ROWS - c->reserved, st.out_free_rows);
			EXPECT_EQ(0, st.out_held_rows + st.out_slot_rows);
			EXPECT_EQ(1, st.out_nr_clients);
			memset(&v, 0, sizeof(v));
			v.size = sizeof(v);
			EXPECT_EQ(0, xioctl(fd, KVPOOL_VERIFY, &v));
			EXPECT_EQ(0, v.out_violations);
			EXPECT_EQ(0, close(fd));
		}
		snprintf(p, sizeof(p), KT_SYSFS_CLASS "/kvpool%u/nr_clients",
			 c->id);
		EXPECT_EQ(0, kt_read_text(p, txt, sizeof(txt)));
		EXPECT_STREQ("0\n", txt);
		EXPECT_EQ(0, st_destroy(c));
	}
	if (c->private_node)
		unlink(c->path);
	c->pool = false;
#if HAVE_BUDGET
	if (c->budget)
		budget_finish(_metadata, c);
#endif
}

static void ctx_init(struct ctx *c, int ctl)
{
	memset(c, 0, sizeof(*c));
	c->ctl = ctl;
	c->fd = -1;
	c->xfd = -1;
	c->mfd = -1;
	c->afd = -1;
	c->pty = -1;
	c->agfd = -1;
	c->reserved = G_RESERVED;
	c->expect_id = lowest_free_id();
}

static const char *ename(int e)
{
	switch (e) {
	case E_VIOLATIONS:	return "VERIFY found violations";
	case E_POSITIVE:	return "ioctl returned a positive value";
	case E_TAIL:		return "an element's tail was not zeroed";
	case E_CHUNKS:		return "the pool holds other chunks than expected";
	default:		return strerror(e);
	}
}

/*
 * Runs @steps for N = 1, 2, ... until no fault fires. False (with the
 * failure logged) on the first broken rule.
 */
static bool run_seq(struct __test_metadata *_metadata, const char *name,
		    const struct step *steps, int nsteps)
{
	unsigned int n, enomem = 0, absorbed = 0;
	static struct snap before, after;
	bool budgets = false;
	struct ctx c;
	int ctl, i;

	ctl = kt_ctl_open();
	EXPECT_LE(0, ctl)
		return false;
#if HAVE_BUDGET
	for (i = 0; i < nsteps; i++)
		budgets |= (steps[i].needs & features & KVPOOL_FEAT_BUDGET) != 0;
#endif

	for (n = 1; n < MAX_N; n++) {
		unsigned int left = n;
		bool hit = false, ok = true;

		ctx_init(&c, ctl);
#if HAVE_BUDGET
		c.budgets = budgets;
		if (budgets)
			c.expect_bid = lowest_free_bid(&c);
#endif
		for (i = 0; i < nsteps && ok; i++) {
			const struct step *s = &steps[i];
			bool armed = s->armed && !hit;
			int e;

			if ((s->needs & features) != s->needs)
				continue;
			if (armed) {
				snap_take(&c, &before);
				nth_arm(left);
			}
			e = s->fn(&c);
			if (armed) {
				left = nth_pause();
				hit = !left;
			}
			if (armed && hit) {
				if (verbose)
					TH_LOG("%s: N=%u: fault in %s: %s", name,
					       n, s->name, e ? ename(e) : "absorbed");
				if (!e) {
					absorbed++;
				} else if (e != ENOMEM) {
					TH_LOG("%s: N=%u: %s failed with %s (%d) for an injected allocation failure; want ENOMEM",
					       name, n, s->name, ename(e), e);
					ok = false;
					break;
				} else {
					enomem++;
					snap_take(&c, &after);
					if (!snap_same(&c, &before, &after)) {
						TH_LOG("%s: N=%u: %s gave ENOMEM but changed state: %s",
						       name, n, s->name, c.note);
						ok = false;
					}
					break;	/* the rest cannot run */
				}
			} else if (e) {
				TH_LOG("%s: N=%u: %s failed with %s (%d) without an injected fault",
				       name, n, s->name, ename(e), e);
				ok = false;
				break;
			}
			if (!settle(_metadata, &c)) {
				TH_LOG("%s: N=%u: after %s: %s", name, n,
				       s->name, c.note);
				ok = false;
			}
		}
		finish(_metadata, &c);
		if (!ok || !_metadata->passed) {
			TH_LOG("%s: stopped at N=%u", name, n);
			close(ctl);
			return false;
		}
		if (!hit)
			break;
	}
	close(ctl);
	EXPECT_LT(n, MAX_N);
	ksft_print_msg("failnth: %s: %u failure points (%u ENOMEM, %u absorbed)\n",
		       name, n - 1, enomem, absorbed);
	return true;
}

/* ---- the environment ----------------------------------------------------- */

/* Why the test cannot run here, or NULL; also learns the features. */
static const char *prepare(void)
{
	static char why[160];
	struct kvpool_info info = { .size = sizeof(info) };
	struct ctx c;
	char txt[16];
	int ctl;

	if (geteuid())
		return "needs root";
	if (access(KT_CTL_PATH, F_OK))
		return "no " KT_CTL_PATH " (kvpool.ko not loaded)";
	if (nth_open())
		return "no /proc/self/task/TID/fail-nth (kernel without CONFIG_FAULT_INJECTION; run in tools/vm/debug-lane.sh)";
	if (access(FAILSLAB, F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (access(FAILSLAB, F_OK))
		return "no " FAILSLAB " (kernel without CONFIG_FAILSLAB)";
	/*
	 * GFP_KERNEL allocations may sleep: failslab leaves them alone unless
	 * told otherwise. verbose 0: no "forcing a failure" stack dumps.
	 */
	if (kt_write_text(FAILSLAB "/ignore-gfp-wait", "N") ||
	    kt_write_text(FAILSLAB "/verbose", "0") ||
	    kt_read_text(FAILSLAB "/ignore-gfp-wait", txt, sizeof(txt)) ||
	    txt[0] != 'N')
		return "cannot set " FAILSLAB "/ignore-gfp-wait to N";
	/* Fault-free paging from here on: no copy to or from us can fail. */
	mlockall(MCL_CURRENT | MCL_FUTURE);

	ctl = kt_ctl_open();
	if (ctl < 0) {
		snprintf(why, sizeof(why), "open %s: %s", KT_CTL_PATH,
			 strerror(errno));
		return why;
	}
	ctx_init(&c, ctl);
	if (st_create(&c) || (snprintf(c.path, sizeof(c.path),
				       "/dev/kvpool%u", c.id), st_open(&c))) {
		snprintf(why, sizeof(why), "cannot create and open a pool: %s",
			 strerror(errno));
		if (c.pool)
			st_destroy(&c);
		close(ctl);
		return why;
	}
	if (!xioctl(c.fd, KVPOOL_INFO, &info))
		features = info.out_features;
	close(c.fd);
	st_destroy(&c);
	close(ctl);
	verbose = getenv("FAILNTH_VERBOSE") && *getenv("FAILNTH_VERBOSE") == '1';
	return NULL;
}

FIXTURE(failnth) {
	const char *skip;
};

/* The fake CUDA driver's files stand in for NVIDIA's (fake_cuda). */
static int old_fake_cuda = -1;

FIXTURE_SETUP(failnth)
{
	self->skip = prepare();
	if (!self->skip && (features & KVPOOL_FEAT_GPU_AGENT)) {
		old_fake_cuda = kt_fake_cuda(1);
		ASSERT_LE(0, old_fake_cuda);
	}
}

FIXTURE_TEARDOWN(failnth)
{
	if (old_fake_cuda >= 0)
		kt_fake_cuda(old_fake_cuda);
	if (nth_fd >= 0)
		close(nth_fd);
}

#define SEQ_RUN(test, steps)						\
	TEST_F_TIMEOUT(failnth, test, 600)				\
	{								\
		if (self->skip)						\
			SKIP(return, "%s", self->skip);			\
		ASSERT_TRUE(run_seq(_metadata, #test, steps,		\
				    ARRAY_SIZE(steps)));		\
	}

#define SEQ(test, ...)							\
	static const struct step test##_steps[] = { __VA_ARGS__ };	\
	SEQ_RUN(test, test##_steps)

SEQ(ctl_create, ARMED(st_create))
SEQ(open, SETUP(st_create), ARMED(st_open))
SEQ(row_alloc, SETUP(st_create), SETUP(st_open), ARMED(st_alloc_abc))
SEQ(extend, SETUP(st_create), SETUP(st_open), SETUP(st_alloc_abc),
    ARMED(st_extend_abc))
SEQ(commit, SETUP(st_create), SETUP(st_open), SETUP(st_alloc_abc),
    SETUP(st_extend_abc), ARMED(st_commit_abc))
SEQ(trim, ROWS_SETUP, ARMED(st_trim_b))
SEQ(to_slot, ROWS_SETUP, ARMED(st_to_slot_c))
SEQ(from_slot, ROWS_SETUP, SETUP(st_to_slot_c), ARMED(st_from_slot_c))
SEQ(slot_release, ROWS_SETUP, SETUP(st_to_slot_c), ARMED(st_slot_release_c))
SEQ(donate, ROWS_SETUP, ARMED(st_donate_a8))
SEQ(attach_prefix, ROWS_SETUP, SETUP(st_donate_a8), SETUP(st_alloc_d),
    ARMED(st_attach_d))
SEQ(cache_evict, ROWS_SETUP, SETUP(st_donate_a8), SETUP(st_alloc_d),
    SETUP(st_attach_d), SETUP(st_release_donate_a), SETUP(st_release_d),
    ARMED(st_evict))
SEQ(swa_free, ROWS_SETUP, ARMED(st_swa_c8))
SEQ(release_donate, ROWS_SETUP, SETUP(st_donate_a8), SETUP(st_alloc_d),
    SETUP(st_attach_d), ARMED(st_release_donate_a))
SEQ(release, ROWS_SETUP, ARMED(st_release_abc))
SEQ(row_query, ROWS_SETUP, ARMED(st_query_c))
SEQ(stats, ROWS_SETUP, ARMED(st_stats))
SEQ(verify, ROWS_SETUP, SETUP(st_donate_a8), SETUP(st_alloc_d),
    SETUP(st_attach_d), ARMED(st_verify))
SEQ(close, ROWS_SETUP, SETUP(st_to_slot_c), SETUP(st_donate_a8),
    SETUP(st_alloc_d), SETUP(st_attach_d), ARMED(st_close))
SEQ(ctl_destroy, SETUP(st_create), ARMED(st_destroy))
/* Element lengths past the header's: the same ops, the same rules. */
SEQ(wide_elements, SETUP(st_create), SETUP(st_open),
    ARMED(st_alloc_abc_wide), ARMED(st_extend_abc_wide), SETUP(st_commit_abc),
    ARMED(st_query_c_wide))
#if HAVE_EXPORT
SEQ(export, ROWS_SETUP, SETUP(st_donate_a8), ARMED_X(st_export_a))
SEQ(import, ROWS_SETUP, SETUP(st_donate_a8), SETUP_X(st_export_a),
    ARMED_X(st_import))
SEQ(export_drop, ROWS_SETUP, SETUP_X(st_export_b), ARMED_X(st_close_x))
#endif
#if HAVE_TENANTS
SEQ(tenant_set, SETUP(st_create), SETUP(st_open), ARMED_Q(st_tenant_set))
SEQ(tenant_list, SETUP(st_create), SETUP(st_open), SETUP_Q(st_tenant_set),
    ARMED_Q(st_tenant_list))
#endif
#if HAVE_PRESSURE
SEQ(set_wmark, SETUP(st_create), ARMED_P(st_set_wmark))
SEQ(pressure, ROWS_SETUP, ARMED_P(st_pressure))
#endif
#if HAVE_ARENA
SEQ(arena_set, SETUP(st_create), SETUP(st_open), SETUP_M(st_memfd),
    ARMED_M(st_arena_set))
SEQ(arena_fds, SETUP(st_create), SETUP(st_open), SETUP_M(st_memfd),
    SETUP_M(st_arena_set), ARMED_M(st_arena_fds))
#endif
#if HAVE_AGENT
SEQ(arena_set_agent, SETUP_G(st_create_gpu), SETUP(st_open), SETUP_G(st_pty),
    ARMED_G(st_arena_set_agent))
SEQ(ctl_agent, SETUP_G(st_create_gpu), SETUP_G(st_pty),
    SETUP_G(st_arena_set_agent), ARMED_G(st_agent))
SEQ(agent_recv, SETUP_G(st_create_gpu), SETUP_G(st_pty),
    SETUP_G(st_arena_set_agent), SETUP_G(st_agent), SETUP_G(st_waiter),
    ARMED_G(st_agent_recv))
SEQ(agent_reply, SETUP_G(st_create_gpu), SETUP_G(st_pty),
    SETUP_G(st_arena_set_agent), SETUP_G(st_agent), SETUP_G(st_waiter),
    SETUP_G(st_agent_recv), SETUP_G(st_fresh), ARMED_G(st_agent_reply))
#endif
#if HAVE_BUDGET
/*
 * Chunk budgets: the control op, a pool made on one (no new pool, no
 * device, the budget's pool count the same after an ENOMEM), an EXTEND
 * that has to take a chunk (from none, and a second one) and a RELEASE
 * that gives one back, the pool file mapped. Every step needs the
 * budget feature: without it the whole sequence is skipped.
 */
SEQ(budget_create, ARMED_B(st_budget_create))
SEQ(budget_destroy, SETUP_B(st_budget_create), ARMED_B(st_budget_destroy))
SEQ(budget_info, SETUP_B(st_budget_create), ARMED_B(st_budget_info))
SEQ(budget_limits, SETUP_B(st_budget_create), SETUP_B(st_create_bpool),
    ARMED_B(st_budget_limits))
SEQ(budget_pool_create, SETUP_B(st_budget_create), ARMED_B(st_create_bpool))
SEQ(budget_pool_create_bare, SETUP_B(st_budget_create),
    ARMED_B(st_create_bpool_bare))
/* No chunk yet: the EXTEND takes slot 0 before its rows' arrays grow. */
SEQ(budget_extend, SETUP_B(st_budget_create), SETUP_B(st_create_bpool_bare),
    SETUP_B(st_open), SETUP_B(st_alloc_abc), SETUP_B(st_chunks0),
    ARMED_B(st_extend_abc), SETUP_B(st_chunks1))
/* Slot 0 has 5 pages free: D's 16 take slot 1 too. */
SEQ(budget_extend_more, SETUP_B(st_budget_create), SETUP_B(st_create_bpool),
    SETUP_B(st_open), SETUP_B(st_alloc_abc), SETUP_B(st_extend_abc),
    SETUP_B(st_alloc_d), SETUP_B(st_chunks1), ARMED_B(st_extend_d),
    SETUP_B(st_chunks2))
/* D's pages back: 21 free, so slot 1 goes back to the budget. */
SEQ(budget_release, SETUP_B(st_budget_create), SETUP_B(st_create_bpool),
    SETUP_B(st_open), SETUP_B(st_alloc_abc), SETUP_B(st_extend_abc),
    SETUP_B(st_alloc_d), SETUP_B(st_extend_d), SETUP_B(st_chunks2),
    ARMED_B(st_release_d), SETUP_B(st_chunks1))
SEQ(budget_mmap, SETUP_B(st_budget_create), SETUP_B(st_create_bpool),
    SETUP_B(st_open), ARMED_B(st_mmap), SETUP_B(st_touch))
#endif
/*
 * Everything in one run, armed from the first step to the last: each
 * fault point of the whole life of a pool, client and export file.
 */
static const struct step lifecycle_steps[] = {
	ARMED(st_create), ARMED(st_open),
#if HAVE_TENANTS
	ARMED_Q(st_tenant_set), ARMED_Q(st_tenant_list),
#endif
#if HAVE_PRESSURE
	ARMED_P(st_set_wmark),
#endif
#if HAVE_ARENA
	SETUP_M(st_memfd), ARMED_M(st_arena_set), ARMED_M(st_arena_fds),
#endif
	ARMED(st_alloc_abc),
	ARMED(st_extend_abc), ARMED(st_commit_abc), ARMED(st_trim_b),
	ARMED(st_to_slot_c), ARMED(st_from_slot_c), ARMED(st_donate_a8),
	ARMED(st_alloc_d), ARMED(st_attach_d), ARMED(st_swa_c8),
	ARMED(st_release_donate_a), ARMED(st_release_d), ARMED(st_evict),
	ARMED(st_query_c), ARMED(st_stats), ARMED(st_verify),
#if HAVE_PRESSURE
	ARMED_P(st_pressure),
#endif
#if HAVE_EXPORT
	/* out and back in; the spent file closed; out again and dropped */
	ARMED_X(st_export_b), ARMED_X(st_import), ARMED_X(st_close_x),
	ARMED_X(st_export_b), ARMED_X(st_close_x),
#endif
	ARMED(st_close), ARMED(st_destroy),
};
SEQ_RUN(lifecycle, lifecycle_steps)

#define NR_USERS	5	/* one more than a client's first users list */

/*
 * In a child: STATS on @fd under fail-nth @n (0: not armed), so that this
 * process becomes one more user of the client; exit code 0 (it worked),
 * 1 (ENOMEM, and STATS wrote nothing) or 2 (anything else).
 */
static int __attribute__((noreturn)) child_stats(int fd, unsigned int n)
{
	struct kvpool_stats s = { .size = sizeof(s), .out_free_pages = 7 };
	int e;

	if (n && nth_open())
		_exit(2);
	if (n)
		nth_arm(n);
	e = kt_ioctl(fd, KVPOOL_STATS, &s);
	if (n)
		nth_pause();
	if (!e)
		_exit(0);
	_exit(e == ENOMEM && s.out_free_pages == 7 ? 1 : 2);
}

/*
 * A client's list of the processes that used it (for its quarantine)
 * grows when a fifth live process makes an ioctl on it: that allocation
 * failing is ENOMEM, the op not run, and the process not counted, so the
 * next try allocates again and goes through.
 */
TEST_F_TIMEOUT(failnth, users_grow, 120)
{
	int ctl, fd, gate[2], i, st, got1 = 0, got0 = 0;
	pid_t kid[NR_USERS];
	unsigned int n;
	__u32 id;

	if (self->skip)
		SKIP(return, "%s", self->skip);
	ctl = kt_ctl_open();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kt_create(ctl, 0, G_PAGES, 1, 8, G_PAGES, &id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(gate));
	/* The opener and three more: the list is full. */
	for (i = 0; i < NR_USERS - 2; i++) {
		kid[i] = fork();
		ASSERT_LE(0, kid[i]);
		if (kid[i] == 0) {
			struct kvpool_stats s = { .size = sizeof(s) };
			char c;

			close(gate[1]);
			if (kt_ioctl(fd, KVPOOL_STATS, &s))
				_exit(2);
			if (read(gate[0], &c, 1) < 0)
				_exit(2);
			_exit(0);
		}
	}
	usleep(200 * 1000);
	/* The fifth: its first allocation fails, the next run does not. */
	for (n = 1; n < 8 && !got0; n++) {
		pid_t p = fork();

		ASSERT_LE(0, p);
		if (p == 0)
			child_stats(fd, n);
		ASSERT_EQ(p, waitpid(p, &st, 0));
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) < 2)
			TH_LOG("fail-nth %u: status %#x", n, st);
		if (WEXITSTATUS(st) == 1)
			got1++;
		else
			got0 = 1;
	}
	EXPECT_EQ(1, got1) TH_LOG("failure points in the users list's growth");
	EXPECT_EQ(1, got0);
	close(gate[1]);
	for (i = 0; i < NR_USERS - 2; i++) {
		EXPECT_EQ(kid[i], waitpid(kid[i], &st, 0));
		EXPECT_TRUE(KT_CHILD_OK(st));
	}
	close(gate[0]);
	close(fd);
	EXPECT_EQ(0, kt_destroy(ctl, id));
	close(ctl);
}

TEST_HARNESS_MAIN
