// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: a randomized, seeded exerciser of the whole ioctl ABI
 * by many processes at once.
 *
 * The test makes its own pool and keeps EX_WORKERS worker processes
 * running against it for KVPOOL_EXERCISER_SECS seconds (default 20). Each
 * worker issues mostly-valid random sequences of every ioctl of
 * <linux/kvpool.h> (and the control device's), with random struct sizes
 * (too short, the v1 size, exact, longer with a zero or a non-zero tail,
 * past PAGE_SIZE), garbage flags and reserved fields, bad pointers (NULL,
 * unmapped, kernel, straddling a PROT_NONE page) for the struct and for
 * every array, structs in a read-only page (the kernel reads them and
 * cannot write them back: EXPORT, IMPORT, FROM_SLOT and CTL_CREATE then
 * change nothing, the others may have acted), and element lengths
 * (entry_len, page_entry_len) too short or past PAGE_SIZE, which no call
 * may get through, or longer, which the kernel zero-fills where it writes.
 * Workers get their clients three ways: opened themselves, inherited over
 * fork() from the parent, or passed over a socketpair with SCM_RIGHTS;
 * they pass clients and export fds back up, the parent hands them to
 * other workers, and workers fork grandchildren that share their files.
 * The parent SIGKILLs random workers at random moments and starts new
 * ones, and runs VERIFY while all this goes on.
 *
 * Every ioctl's result is checked against what the header allows: only
 * documented errnos, EFAULT only when a pointer was bad, EINVAL for a size
 * below the first release, E2BIG for a non-zero tail or a size past
 * PAGE_SIZE, ENOTTY for unknown numbers (the old type 0xb7's too), the
 * struct untouched on size errors, EFAULT for a read-only struct, never
 * EINTR; successful results are sane (handles, page ids, STATS
 * identities, VERIFY finds nothing). At the end every child is reaped,
 * the pool is whole again and VERIFY finds nothing broken, and the pool
 * can be destroyed. The VM runner also fails the run on any WARN, BUG or
 * oops in the kernel log.
 *
 * Env: KVPOOL_SEED (the run prints its seed; the same seed replays the
 * same choices, though the interleaving of processes differs),
 * KVPOOL_EXERCISER_SECS (wall time of the storm).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#define EX_PAGES	512
#define EX_PT		4
#define EX_ROWS		64
#define EX_ROW_TOKENS	256	/* 64 pages */
#define EX_WORKERS	4
#define EX_SECS		20
#define EX_MAX_SPAWNS	100000	/* the iteration bound besides wall time */
#define EX_CLIENTS	3	/* clients one worker uses at most */
#define EX_CROWS	12	/* rows a worker remembers per client */
#define EX_CSESS	8
#define EX_CCACHE	32
#define EX_EXPORTS	6
#define EX_PARENT_FDS	16
#define EX_ARR		4096	/* u32 of scratch for arrays */
#define EX_GRANDKIDS	2

/*
 * STATS's first release ends at out_tenant_max_rows (104 bytes; ABI 2
 * adds out_quarantine_pages): the 72-byte struct of the drafts before
 * it, up to __reserved, is refused (EINVAL).
 */
#define EX_STATS_V1_SIZE	(offsetof(struct kvpool_stats, \
					  out_tenant_max_rows) + 4)
#define EX_STATS_DRAFT_SIZE	(offsetof(struct kvpool_stats, __reserved) + 4)

/* ---- shared counters (MAP_SHARED, atomic) ------------------------------- */

enum {
	C_IOCTLS, C_OK, C_EFAULT_PLANTED, C_SIZE_CASES, C_UNKNOWN_IOCTLS,
	C_SPAWNED, C_SPAWN_OPEN, C_SPAWN_FORKFD, C_SPAWN_SCM, C_KILLED,
	C_EXITED, C_GRANDKIDS, C_EXPORTS, C_IMPORTS, C_FD_UP, C_FD_DOWN,
	C_FD_RECV, C_VERIFY_MID, C_TENANT_SETS, C_FAILURES, C_NR
};

static const char *const ex_cnames[C_NR] = {
	"ioctls", "ok", "efault-planted", "size-cases", "unknown-ioctls",
	"spawned", "spawn-open", "spawn-forkfd", "spawn-scm", "killed",
	"exited", "grandchildren", "exports", "imports", "fds-up",
	"fds-down", "fds-received", "mid-verifies", "tenant-sets",
	"failures",
};

struct ex_shared {
	unsigned long c[C_NR];
	unsigned long by_errno[160];
};

static struct ex_shared *ex_sh;

static void ex_count(int i, unsigned long n)
{
	__atomic_fetch_add(&ex_sh->c[i], n, __ATOMIC_RELAXED);
}

/* ---- the pool every process knows -------------------------------------- */

static __u32 ex_pool_id;
static __u32 ex_max_batch;
static unsigned long long ex_deadline_ns;	/* CLOCK_MONOTONIC */

static unsigned long long ex_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ---- randomness ---------------------------------------------------------- */

static __u64 ex_rng;

static __u64 ex_rand(void)
{
	/* xorshift64* */
	ex_rng ^= ex_rng >> 12;
	ex_rng ^= ex_rng << 25;
	ex_rng ^= ex_rng >> 27;
	return ex_rng * 0x2545f4914f6cdd1dULL;
}

static __u32 ex_below(__u32 n)
{
	return n ? (__u32)(ex_rand() % n) : 0;
}

static bool ex_chance(__u32 percent)
{
	return ex_below(100) < percent;
}

/* ---- a worker's view ------------------------------------------------------- */

struct ex_row {
	struct kvpool_handle h;
	__u32 alloc, committed, protected_len;
};

struct ex_client {
	int fd;
	int nrows, nsess, ncache;
	struct ex_row rows[EX_CROWS];
	__u64 sess[EX_CSESS];
	__u32 cache[EX_CCACHE];
};

struct ex_worker {
	int sock;		/* to the parent; -1 in grandchildren */
	int ctl;		/* /dev/kvpool-control, opened lazily */
	int ncl;
	struct ex_client cl[EX_CLIENTS];
	int nexp;
	int exports[EX_EXPORTS];
	int grandkids;
	bool grandchild;
	char *arg;		/* 2 pages, then a PROT_NONE page */
	char *edge;		/* first byte of the PROT_NONE page */
	char *ro;		/* a page made read-only for M_RO calls */
	__u32 *arr;		/* EX_ARR u32 for arrays */
	__u32 *arr2;
	bool planted;		/* a bad pointer went into this call */
	bool bad_elen;		/* ... or an element length to refuse */
	bool normal;		/* the last call passed a sane struct */
	bool v1;		/* ... of its first release's size */
};

static struct ex_worker ex_w;

static __attribute__((format(printf, 1, 2), noreturn))
void ex_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "# worker %d: FAIL: ", getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	ex_count(C_FAILURES, 1);
	_exit(1);
}

/* A bad user pointer of one of several kinds. */
static __u64 ex_bad_ptr(size_t len)
{
	ex_w.planted = true;
	switch (ex_below(5)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return 0xffff888000000000ULL;	/* kernel address */
	case 3:
		return kt_ptr(ex_w.edge);	/* unmapped */
	default:	/* starts readable, runs into the PROT_NONE page */
		return kt_ptr(ex_w.edge - (len > 8 ? len / 2 : 4));
	}
}

/* Usually @good, sometimes a bad pointer for an array of @len bytes. */
static __u64 ex_arr_ptr(void *good, size_t len)
{
	if (len && ex_chance(3))
		return ex_bad_ptr(len);
	return kt_ptr(good);
}

static bool ex_errno_ok(int err, bool planted, unsigned long cmd)
{
	switch (err) {
	case 0: case EINVAL: case E2BIG: case EOPNOTSUPP: case ENOENT:
	case ESTALE: case ENOSPC: case ENOBUFS: case EEXIST: case EALREADY:
	case EBUSY: case ENOMEM: case EDQUOT:
		return true;	/* EOVERFLOW is in no errno list any more */
	case EFAULT:
		return planted;
	case EBADF: case EXDEV:
#ifdef KVPOOL_IMPORT
		return cmd == KVPOOL_IMPORT;
#else
		return false;
#endif
	case EMFILE: case ENFILE:
#ifdef KVPOOL_EXPORT
		return cmd == KVPOOL_EXPORT;
#else
		return false;
#endif
	case EAGAIN:	/* another worker changed the slot in between */
		return cmd == KVPOOL_FROM_SLOT;
	case ENODEV: case EPERM:
		return _IOC_NR(cmd) >= KVPOOL_CMD_CTL_CREATE;
	default:
		return false;
	}
}

static const char *ex_cmd_name(unsigned long cmd)
{
	static const char *const pool[] = {
		"INFO", "STATS", "ROW_ALLOC", "EXTEND", "COMMIT", "TRIM",
		"RELEASE", "TO_SLOT", "FROM_SLOT", "SLOT_RELEASE", "ROW_QUERY",
		"VERIFY", "DONATE", "ATTACH_PREFIX", "CACHE_EVICT", "SWA_FREE",
		"EXPORT", "IMPORT", "PRESSURE",
	};
	static const char *const ctl[] = {
		"CTL_CREATE", "CTL_DESTROY", "CTL_TENANT_SET",
		"CTL_TENANT_LIST", "CTL_SET_WMARK",
	};
	static char buf[24];
	unsigned int nr = _IOC_NR(cmd);

	if (nr < ARRAY_SIZE(pool))
		return pool[nr];
	if (nr >= KVPOOL_CMD_CTL_CREATE &&
	    nr - KVPOOL_CMD_CTL_CREATE < ARRAY_SIZE(ctl))
		return ctl[nr - KVPOOL_CMD_CTL_CREATE];
	snprintf(buf, sizeof(buf), "ioctl %#x", nr);
	return buf;
}

enum ex_size_mode {
	M_EXACT, M_V1, M_SHORT, M_LONG0, M_LONGX, M_HUGE, M_BADPTR, M_RO,
};

/*
 * ioctl @cmd on @fd with struct @st of @len bytes whose first release was
 * @v1 bytes, at a random size and place. Returns 0 or the errno; *@st gets
 * the struct back when the call saw a sane one (ex_w.normal).
 */
static int ex_ioctl(int fd, unsigned long cmd, void *st, size_t len, size_t v1)
{
	char *buf = ex_w.arg, *save;
	bool planted = ex_w.planted;
	enum ex_size_mode mode = M_EXACT;
	__u32 r = ex_below(1000), size = len;
	size_t tail = 0;
	int ret, err;

	bool bad_elen = ex_w.bad_elen;

	ex_w.planted = false;
	ex_w.bad_elen = false;
	if (r >= 880)
		mode = (enum ex_size_mode)(1 + (r - 880) / 20);	/* 1..6 */
	else if (r >= 870)
		mode = M_RO;	/* readable, not writable: no write-back */
	if (mode == M_V1 && v1 >= len)
		mode = M_EXACT;
	memset(buf, 0, 2 * KT_PAGE_SIZE);
	memcpy(buf, st, len);
	switch (mode) {
	case M_V1:
		size = v1;
		break;
	case M_SHORT:
		size = ex_below(v1);
		break;
	case M_LONG0:
	case M_LONGX:
		tail = 1 + ex_below(KT_PAGE_SIZE - len);
		size = len + tail;
		if (mode == M_LONGX)
			buf[len + ex_below(tail)] = 1 + ex_below(255);
		break;
	case M_HUGE:
		size = ex_chance(50) ? KT_PAGE_SIZE + 1 + ex_below(64) :
		       0xffffffffu - ex_below(16);
		break;
	case M_BADPTR:
		break;
	default:
		break;
	}
	memcpy(buf, &size, sizeof(size));
	save = ex_w.arg + 2 * KT_PAGE_SIZE - 512;	/* copy of the head */
	memcpy(save, buf, len < 512 ? len : 512);

	if (mode == M_RO) {
		/* The lowest free fd: where an export file would go. */
		int low = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (low >= 0)
			close(low);
		memcpy(ex_w.ro, buf, len);
		if (mprotect(ex_w.ro, KT_PAGE_SIZE, PROT_READ))
			ex_fail("mprotect: %s", strerror(errno));
		ret = ioctl(fd, cmd, ex_w.ro);
		err = ret < 0 ? errno : 0;
		mprotect(ex_w.ro, KT_PAGE_SIZE, PROT_READ | PROT_WRITE);
		/* EXPORT could not say which fd: it must not install one. */
		if (cmd == KVPOOL_EXPORT && low >= 0 && fcntl(low, F_GETFD) >= 0)
			ex_fail("EXPORT with a read-only struct (%s) installed fd %d",
				strerror(err), low);
		errno = err;
	} else if (mode == M_BADPTR) {
		__u64 p = ex_bad_ptr(len);

		if (p == kt_ptr(ex_w.edge - (len > 8 ? len / 2 : 4)))
			memcpy((void *)(uintptr_t)p, &size, sizeof(size));
		ret = ioctl(fd, cmd, (void *)(uintptr_t)p);
	} else {
		ret = ioctl(fd, cmd, buf);
	}
	err = ret < 0 ? errno : 0;
	ex_count(C_IOCTLS, 1);
	if (err < 160)
		__atomic_fetch_add(&ex_sh->by_errno[err], 1, __ATOMIC_RELAXED);
	if (ret > 0)
		ex_fail("%s returned %d", ex_cmd_name(cmd), ret);
	if (err == EINTR || err == ENOTTY)
		ex_fail("%s: %s", ex_cmd_name(cmd), strerror(err));

	/*
	 * A bad array pointer that still worked (one running into the
	 * PROT_NONE page, for a short array) put the results elsewhere.
	 */
	ex_w.normal = (mode == M_EXACT || mode == M_V1 || mode == M_LONG0) &&
		      !planted;
	ex_w.v1 = mode == M_V1;	/* even when not normal */
	if (mode != M_EXACT)
		ex_count(C_SIZE_CASES, 1);
	switch (mode) {
	case M_SHORT:
		if (err != EINVAL)
			ex_fail("%s with size %u < %zu: %s, not EINVAL",
				ex_cmd_name(cmd), size, v1, strerror(err));
		break;
	case M_LONGX:
	case M_HUGE:
		if (err != E2BIG)
			ex_fail("%s with size %u (%s): %s, not E2BIG",
				ex_cmd_name(cmd), size,
				mode == M_HUGE ? "past PAGE_SIZE" : "non-zero tail",
				strerror(err));
		break;
	case M_BADPTR:
		if (err != EFAULT)
			ex_fail("%s with a bad struct pointer: %s, not EFAULT",
				ex_cmd_name(cmd), strerror(err));
		break;
	case M_RO:
		/*
		 * The write-back always faults. EXPORT, IMPORT, FROM_SLOT
		 * (checked above for EXPORT's fd) then did nothing; any
		 * other op may have happened.
		 */
		if (err != EFAULT)
			ex_fail("%s with a read-only struct: %s, not EFAULT",
				ex_cmd_name(cmd), strerror(err));
		break;
	default:
		if (!ex_errno_ok(err, planted, cmd))
			ex_fail("%s (size %u%s): undocumented %s",
				ex_cmd_name(cmd), size,
				planted ? ", bad array pointer" : "",
				strerror(err));
		break;
	}
	/* Size errors leave the struct as it was. */
	if ((mode == M_SHORT || mode == M_LONGX || mode == M_HUGE) &&
	    memcmp(save, buf, len < 512 ? len : 512))
		ex_fail("%s: size error, yet the struct was written",
			ex_cmd_name(cmd));
	if (mode == M_LONG0) {
		size_t i;

		for (i = len; i < len + tail; i++)
			if (buf[i])
				ex_fail("%s: the kernel wrote past the struct",
					ex_cmd_name(cmd));
	}
	/* Shorter than the element, or past PAGE_SIZE: always refused. */
	if (bad_elen && !err)
		ex_fail("%s with an element length to refuse: succeeded",
			ex_cmd_name(cmd));
	if (ex_w.normal)
		memcpy(st, buf, mode == M_V1 ? v1 : len);
	if (!err)
		ex_count(C_OK, 1);
	if (planted && err == EFAULT)
		ex_count(C_EFAULT_PLANTED, 1);
	return err;
}

#define EX_IOCTL(fd, cmd, st, v1) ex_ioctl(fd, cmd, &(st), sizeof(st), v1)
#define EX_FULL(type) sizeof(type)

/* ---- picking arguments ------------------------------------------------------ */

static struct ex_client *ex_pick_client(void)
{
	return ex_w.ncl ? &ex_w.cl[ex_below(ex_w.ncl)] : NULL;
}

/* A handle: mostly one the client holds, else stale or garbage. */
static struct kvpool_handle ex_pick_handle(struct ex_client *c, int *ri)
{
	struct kvpool_handle h;
	__u32 r = ex_below(100);

	*ri = -1;
	if (c->nrows && r < 85) {
		*ri = ex_below(c->nrows);
		h = c->rows[*ri].h;
		if (r < 4)
			h.generation--;
		return h;
	}
	h.req_pool_idx = ex_below(EX_ROWS + 2);
	h.generation = ex_below(4);
	if (r > 97) {
		h.req_pool_idx = (__u32)ex_rand();
		h.generation = (__u32)ex_rand();
	}
	return h;
}

static void ex_row_forget(struct ex_client *c, int ri)
{
	if (ri < 0 || ri >= c->nrows)
		return;
	c->rows[ri] = c->rows[--c->nrows];
}

static void ex_row_add(struct ex_client *c, struct kvpool_handle h)
{
	struct ex_row *r;

	if (c->nrows == EX_CROWS)
		return;		/* held until release, slot or close */
	r = &c->rows[c->nrows++];
	memset(r, 0, sizeof(*r));
	r->h = h;
}

/* A length near the row's current ones. */
static __u32 ex_pick_len(struct ex_row *r, __u32 lo, __u32 hi)
{
	__u32 v = ex_below(100);

	if (v < 80)
		return lo + ex_below(hi - lo + 1);
	if (v < 85)
		return lo ? lo - 1 : 0;
	if (v < 90)
		return hi + 1;
	if (v < 95)
		return EX_ROW_TOKENS + ex_below(2);
	if (v < 98)
		return r ? r->alloc + EX_PT : 0;
	return (__u32)ex_rand();
}

static __u32 ex_pick_count(__u32 usual)
{
	__u32 v = ex_below(100);

	if (v < 94)
		return 1 + ex_below(usual);
	if (v < 96)
		return 0;
	if (v < 98)
		return ex_max_batch + ex_below(2);
	return (__u32)ex_rand();
}

/* Entries to fill for @count: a count the kernel refuses gets one. */
static __u32 ex_fill(__u32 count)
{
	return count <= ex_max_batch ? count : 1;
}

static __u32 ex_pick_flags(__u32 valid)
{
	__u32 v = ex_below(100);

	if (v < 93)
		return valid;
	if (v < 97)
		return valid | (1u << ex_below(32));
	return (__u32)ex_rand();
}

/* Zero, usually; sometimes not (a reserved field). */
static __u32 ex_resv(void)
{
	return ex_chance(2) ? 1 + ex_below(0xffff) : 0;
}

/*
 * An element length (entry_len, page_entry_len): mostly @known, the
 * header's sizeof(); sometimes one the kernel must refuse whatever else
 * the call holds: shorter (0 too: EINVAL) or past PAGE_SIZE (E2BIG).
 */
static __u32 ex_pick_elen(__u32 known)
{
	__u32 v = ex_below(1000);

	if (v < 985)
		return known;
	ex_w.bad_elen = true;
	if (v < 990)
		return 0;
	if (v < 995)
		return ex_below(known);
	return KT_PAGE_SIZE + 1 + ex_below(1u << 20);
}

static __u64 ex_pick_session(struct ex_client *c, int *si)
{
	*si = -1;
	if (c->nsess && ex_chance(80)) {
		*si = ex_below(c->nsess);
		return c->sess[*si];
	}
	return ex_chance(95) ? ex_below(32) : ex_rand();
}

/* ---- the ops ------------------------------------------------------------------ */

static void ex_check_ids(const __u32 *ids, __u32 n, bool holes, const char *what)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		if (holes && ids[i] == KVPOOL_PAGE_NONE)
			continue;
		if (ids[i] == 0 || ids[i] >= EX_PAGES)
			ex_fail("%s: page id %u", what, ids[i]);
	}
}

static void op_handles(struct ex_client *c, bool release);

static void op_alloc(struct ex_client *c)
{
	struct kvpool_row_alloc a = { 0 };
	struct kvpool_handle h[EX_ROWS + 2];
	__u32 i, j, k, n, el;
	unsigned char *out = (void *)ex_w.arr;
	int err;

	a.flags = ex_pick_flags(0);
	a.count = ex_pick_count(3);
	n = ex_fill(a.count);
	/* Sometimes handles of a later release: 12 or 16 bytes. */
	a.entry_len = ex_chance(3) ? 12 + 4 * ex_below(2) :
		      ex_pick_elen(sizeof(struct kvpool_handle));
	el = a.entry_len >= 8 && a.entry_len <= 16 ? a.entry_len : 8;
	a.handles = ex_arr_ptr(ex_w.arr, n * el);
	a.__reserved = ex_resv();
	memset(ex_w.arr, 0xa5, n * el + 16);
	err = EX_IOCTL(c->fd, KVPOOL_ROW_ALLOC, a, sizeof(a));
	if (err == ENOSPC && c->nrows && ex_chance(50))
		op_handles(c, true);	/* make room, as a scheduler would */
	if (err || !ex_w.normal)
		return;
	for (i = 0; i < a.count; i++) {
		memcpy(&h[i], out + i * el, sizeof(h[i]));
		/* The kernel zeroes what it does not know of each element. */
		for (k = sizeof(h[i]); k < el; k++)
			if (out[i * el + k])
				ex_fail("ROW_ALLOC: entry_len %u: byte %u of handle %u is %#x",
					el, k, i, out[i * el + k]);
		if (!h[i].req_pool_idx || h[i].req_pool_idx >= EX_ROWS ||
		    !h[i].generation)
			ex_fail("ROW_ALLOC: handle %u@%u", h[i].req_pool_idx,
				h[i].generation);
		for (j = 0; j < i; j++)
			if (h[j].req_pool_idx == h[i].req_pool_idx)
				ex_fail("ROW_ALLOC: row %u twice", h[i].req_pool_idx);
		ex_row_add(c, h[i]);
	}
	if (out[a.count * el] != 0xa5)
		ex_fail("ROW_ALLOC: wrote past %u handles of %u bytes", a.count,
			el);
}

static void op_extend(struct ex_client *c)
{
	struct kvpool_extend x = { 0 };
	struct kvpool_extend_entry *e = (void *)ex_w.arr;
	int ri[EX_ROWS + 2];
	__u32 i, n, sum = 0;
	int err;

	x.flags = ex_pick_flags(0);
	x.count = ex_pick_count(3);
	n = ex_fill(x.count);
	for (i = 0; i < n; i++) {
		struct ex_row *r;

		memset(&e[i], 0, sizeof(e[i]));
		e[i].handle = ex_pick_handle(c, &ri[i]);
		r = ri[i] >= 0 ? &c->rows[ri[i]] : NULL;
		e[i].new_len = ex_pick_len(r, r ? r->alloc : 0,
					   r ? (r->alloc + 3 * EX_PT <
						EX_ROW_TOKENS ? r->alloc + 3 * EX_PT :
						EX_ROW_TOKENS) : EX_ROW_TOKENS);
	}
	x.pages_cap = ex_chance(90) ? EX_ARR : ex_below(8);
	x.entry_len = ex_pick_elen(sizeof(*e));
	x.page_entry_len = ex_pick_elen(sizeof(__u32));
	x.entries = ex_arr_ptr(e, n * sizeof(*e));
	x.pages = ex_arr_ptr(ex_w.arr2, 4);
	x.__reserved = ex_resv();
	err = EX_IOCTL(c->fd, KVPOOL_EXTEND, x, sizeof(x));
	if ((err == ENOSPC || err == EDQUOT) && c->nrows && ex_chance(30))
		op_handles(c, true);
	if (err || !ex_w.normal)
		return;
	for (i = 0; i < x.count; i++) {
		sum += e[i].out_nr_new;
		if (ri[i] >= 0)
			c->rows[ri[i]].alloc = e[i].new_len;
	}
	if (sum != x.out_nr_pages)
		ex_fail("EXTEND: %u new pages, entries say %u", x.out_nr_pages, sum);
	ex_check_ids(ex_w.arr2, x.out_nr_pages, false, "EXTEND");
}

enum ex_len_op { LEN_COMMIT, LEN_DONATE, LEN_SWA };

static void ex_learn_cache(struct ex_client *c, struct kvpool_handle h);

static void op_len(struct ex_client *c, enum ex_len_op op)
{
	static const unsigned long cmds[] = {
		KVPOOL_COMMIT, KVPOOL_DONATE, KVPOOL_SWA_FREE,
	};
	struct kvpool_batch b = { 0 };
	struct kvpool_len_entry *e = (void *)ex_w.arr;
	int ri[EX_ROWS + 2];
	__u32 i, n;
	int err;

	b.flags = ex_pick_flags(0);
	b.count = ex_pick_count(2);
	n = ex_fill(b.count);
	for (i = 0; i < n; i++) {
		struct ex_row *r;

		memset(&e[i], 0, sizeof(e[i]));
		e[i].handle = ex_pick_handle(c, &ri[i]);
		r = ri[i] >= 0 ? &c->rows[ri[i]] : NULL;
		if (op == LEN_COMMIT)
			e[i].len = ex_pick_len(r, r ? r->committed : 0,
					       r ? r->alloc : 0);
		else
			e[i].len = ex_pick_len(r, r ? r->protected_len : 0,
					       r ? r->committed : 0);
		e[i].__reserved = ex_resv();
	}
	b.entry_len = ex_pick_elen(sizeof(*e));
	b.entries = ex_arr_ptr(e, n * sizeof(*e));
	err = EX_IOCTL(c->fd, cmds[op], b, sizeof(b));
	if (err || !ex_w.normal)
		return;
	for (i = 0; i < b.count; i++) {
		struct ex_row *r;

		if (ri[i] < 0)
			continue;
		r = &c->rows[ri[i]];
		if (op == LEN_COMMIT) {
			r->committed = e[i].len;
		} else if (op == LEN_DONATE) {
			if (e[i].len / EX_PT * EX_PT > r->protected_len)
				r->protected_len = e[i].len / EX_PT * EX_PT;
			ex_learn_cache(c, r->h);
		}
	}
}

static void op_handles(struct ex_client *c, bool release)
{
	struct kvpool_batch b = { 0 };
	struct kvpool_handle *h = (void *)ex_w.arr;
	int ri[EX_ROWS + 2];
	__u32 i, n;
	int err;

	b.flags = ex_pick_flags(release && ex_chance(30) ?
				KVPOOL_RELEASE_DONATE : 0);
	b.count = ex_pick_count(2);
	n = ex_fill(b.count);
	for (i = 0; i < n; i++)
		h[i] = ex_pick_handle(c, &ri[i]);
	b.entry_len = ex_pick_elen(sizeof(*h));
	b.entries = ex_arr_ptr(h, n * sizeof(*h));
	err = EX_IOCTL(c->fd, release ? KVPOOL_RELEASE : KVPOOL_TRIM, b,
		       sizeof(b));
	if (err || !ex_w.normal)
		return;
	if (!release) {
		for (i = 0; i < b.count; i++)
			if (ri[i] >= 0)
				c->rows[ri[i]].alloc = c->rows[ri[i]].committed;
		return;
	}
	/* Forget released rows, highest index first. */
	for (i = 0; i < c->nrows; ) {
		__u32 k;
		bool gone = false;

		for (k = 0; k < b.count; k++)
			if (h[k].req_pool_idx == c->rows[i].h.req_pool_idx &&
			    h[k].generation == c->rows[i].h.generation)
				gone = true;
		if (gone)
			ex_row_forget(c, (int)i);
		else
			i++;
	}
}

static void ex_sess_add(struct ex_client *c, __u64 s)
{
	if (c->nsess < EX_CSESS)
		c->sess[c->nsess++] = s;
}

static void ex_sess_forget(struct ex_client *c, int si)
{
	if (si >= 0 && si < c->nsess)
		c->sess[si] = c->sess[--c->nsess];
}

static void op_slot(struct ex_client *c, unsigned long cmd)
{
	struct kvpool_slot s = { 0 };
	int ri = -1, si;
	int err;

	s.flags = ex_pick_flags(0);
	s.session_id = ex_pick_session(c, &si);
	if (cmd == KVPOOL_TO_SLOT) {
		s.handle = ex_pick_handle(c, &ri);
		if (si >= 0 && ex_chance(70))
			s.session_id = ex_below(32) + 32 * ex_below(2);
	} else if (ex_chance(2)) {
		s.handle.generation = 1;	/* must be 0 */
	}
	s.__reserved = ex_resv();
	err = EX_IOCTL(c->fd, cmd, s, sizeof(s));
	if (err || !ex_w.normal)
		return;
	if (cmd == KVPOOL_TO_SLOT) {
		ex_row_forget(c, ri);
		ex_sess_add(c, s.session_id);
	} else if (cmd == KVPOOL_FROM_SLOT) {
		ex_sess_forget(c, si);
		if (!s.handle.req_pool_idx || s.handle.req_pool_idx >= EX_ROWS)
			ex_fail("FROM_SLOT: handle %u@%u",
				s.handle.req_pool_idx, s.handle.generation);
		ex_row_add(c, s.handle);
	} else {
		ex_sess_forget(c, si);
	}
}

/* ROW_QUERY into the worker's mirror; by slot or by handle. */
static void op_query(struct ex_client *c, bool by_slot)
{
	struct kvpool_row_query q = { 0 };
	int ri = -1, si = -1;
	int err;

	q.flags = ex_pick_flags(by_slot ? KVPOOL_QUERY_BY_SLOT : 0);
	if (by_slot)
		q.session_id = ex_pick_session(c, &si);
	else
		q.handle = ex_pick_handle(c, &ri);
	q.pages_cap = ex_chance(80) ? EX_ARR : ex_below(4);
	q.page_entry_len = ex_pick_elen(sizeof(__u32));
	q.pages = ex_arr_ptr(ex_w.arr2, q.pages_cap ? 4 : 0);
	q.__reserved = ex_resv();
	err = EX_IOCTL(c->fd, KVPOOL_ROW_QUERY, q, sizeof(q));
	if (err || !ex_w.normal)
		return;
	if (q.out_committed_len > q.out_allocated_len ||
	    q.out_allocated_len > EX_ROW_TOKENS ||
	    q.out_protected_len > q.out_committed_len ||
	    q.out_nr_pages != kt_div_up(q.out_allocated_len, EX_PT) ||
	    q.out_state != (by_slot ? KVPOOL_ROW_SLOT : KVPOOL_ROW_HELD))
		ex_fail("ROW_QUERY: state %u nr %u alloc %u committed %u protected %u",
			q.out_state, q.out_nr_pages, q.out_allocated_len,
			q.out_committed_len, q.out_protected_len);
	ex_check_ids(ex_w.arr2, q.pages_cap < q.out_nr_pages ? q.pages_cap :
		     q.out_nr_pages, true, "ROW_QUERY");
	if (ri >= 0) {
		c->rows[ri].alloc = q.out_allocated_len;
		c->rows[ri].committed = q.out_committed_len;
		c->rows[ri].protected_len = q.out_protected_len;
	}
}

/* Learn the cache pages a row borrows: its page list below protected. */
static void ex_learn_cache(struct ex_client *c, struct kvpool_handle h)
{
	struct kvpool_row_query q = { 0 };
	__u32 i, j, n;

	q.size = sizeof(q);
	q.handle = h;
	q.pages_cap = EX_ARR;
	q.page_entry_len = sizeof(__u32);
	q.pages = kt_ptr(ex_w.arr2);
	if (kt_ioctl(c->fd, KVPOOL_ROW_QUERY, &q))
		return;
	n = q.out_protected_len / EX_PT;
	for (i = 0; i < n && c->ncache < EX_CCACHE; i++) {
		for (j = 0; j < (__u32)c->ncache; j++)
			if (c->cache[j] == ex_w.arr2[i])
				break;
		if (j == (__u32)c->ncache && ex_w.arr2[i] != KVPOOL_PAGE_NONE)
			c->cache[c->ncache++] = ex_w.arr2[i];
	}
}

static __u32 ex_pick_page(struct ex_client *c)
{
	__u32 v = ex_below(100);

	if (c->ncache && v < 85)
		return c->cache[ex_below(c->ncache)];
	if (v < 95)
		return ex_below(EX_PAGES + 1);
	return v < 97 ? KVPOOL_PAGE_NONE : (__u32)ex_rand();
}

static void op_attach(struct ex_client *c)
{
	struct kvpool_attach a = { 0 };
	int ri;
	__u32 i, n;
	int err;

	a.flags = ex_pick_flags(0);
	a.handle = ex_pick_handle(c, &ri);
	a.nr_pages = ex_chance(95) ? 1 + ex_below(3) : (__u32)ex_rand() % 100;
	n = a.nr_pages < 64 ? a.nr_pages : 1;
	for (i = 0; i < n; i++)
		ex_w.arr[i] = ex_pick_page(c);
	a.page_entry_len = ex_pick_elen(sizeof(__u32));
	a.pages = ex_arr_ptr(ex_w.arr, n * 4);
	err = EX_IOCTL(c->fd, KVPOOL_ATTACH_PREFIX, a, sizeof(a));
	if (err || !ex_w.normal || ri < 0)
		return;
	c->rows[ri].alloc = a.nr_pages * EX_PT;
	c->rows[ri].committed = c->rows[ri].alloc;
	c->rows[ri].protected_len = c->rows[ri].alloc;
}

static void op_evict(struct ex_client *c)
{
	struct kvpool_batch b = { 0 };
	__u32 i, j, n;
	int err;

	b.flags = ex_pick_flags(0);
	b.count = ex_pick_count(2);
	n = ex_fill(b.count);
	for (i = 0; i < n; i++)
		ex_w.arr[i] = ex_pick_page(c);
	b.entry_len = ex_pick_elen(sizeof(__u32));
	b.entries = ex_arr_ptr(ex_w.arr, n * 4);
	err = EX_IOCTL(c->fd, KVPOOL_CACHE_EVICT, b, sizeof(b));
	if (err || !ex_w.normal)
		return;
	for (i = 0; i < b.count; i++)
		for (j = 0; j < (__u32)c->ncache; j++)
			if (c->cache[j] == ex_w.arr[i])
				c->cache[j--] = c->cache[--c->ncache];
}

static void op_stats(struct ex_client *c)
{
	struct kvpool_stats s = { 0 };
	__u64 pages, rows;
	bool clean;
	int err;

	if (ex_chance(5)) {
		/* The drafts' 72 bytes: refused, the struct not written. */
		memset(&s, 0, sizeof(s));
		s.size = EX_STATS_DRAFT_SIZE;
		s.out_free_pages = 0xa5a5a5a5;
		err = kt_ioctl(c->fd, KVPOOL_STATS, &s);
		if (err != EINVAL || s.out_free_pages != 0xa5a5a5a5)
			ex_fail("STATS at %zu bytes: %s, free %#x",
				(size_t)EX_STATS_DRAFT_SIZE, strerror(err),
				s.out_free_pages);
		memset(&s, 0, sizeof(s));
	}
	s.flags = ex_pick_flags(0);
	s.__reserved = ex_resv();
	clean = !s.flags && !s.__reserved;
	err = ex_ioctl(c->fd, KVPOOL_STATS, &s, sizeof(s), EX_STATS_V1_SIZE);
	if (ex_w.v1 && clean && err == EINVAL)	/* a v1 binary is refused */
		ex_fail("STATS at its first release's size (%zu bytes): EINVAL",
			(size_t)EX_STATS_V1_SIZE);
	if (err || !ex_w.normal)
		return;
	pages = (__u64)s.out_free_pages + s.out_row_pages + s.out_slot_pages +
		s.out_cache_evictable + s.out_cache_pinned +
		s.out_reserved_pages + s.out_export_pages +
		s.out_quarantine_pages;
	rows = (__u64)s.out_free_rows + s.out_held_rows + s.out_slot_rows +
	       s.out_reserved_rows + s.out_export_rows;
	if (pages != EX_PAGES || rows != EX_ROWS)
		ex_fail("STATS: %llu pages, %llu rows",
			(unsigned long long)pages, (unsigned long long)rows);
}

static void op_info(struct ex_client *c)
{
	struct kvpool_info i = { 0 };
	int err;

	i.flags = ex_pick_flags(0);
	i.__reserved = ex_resv();
	err = EX_IOCTL(c->fd, KVPOOL_INFO, i, sizeof(i));
	if (err || !ex_w.normal)
		return;
	if (i.out_pool_id != ex_pool_id || i.out_nr_pages != EX_PAGES ||
	    i.out_page_tokens != EX_PT || i.out_nr_rows != EX_ROWS ||
	    i.out_row_tokens != EX_ROW_TOKENS ||
	    i.out_max_batch != ex_max_batch ||
	    i.out_abi_version != KVPOOL_ABI_VERSION)
		ex_fail("INFO: pool %u geometry %u/%u/%u/%u batch %u",
			i.out_pool_id, i.out_nr_pages, i.out_page_tokens,
			i.out_nr_rows, i.out_row_tokens, i.out_max_batch);
}

static void op_verify(int fd)
{
	struct kvpool_verify v = { 0 };
	int err;

	v.flags = ex_pick_flags(0);
	v.__reserved = ex_resv();
	err = EX_IOCTL(fd, KVPOOL_VERIFY, v, sizeof(v));
	if (err || !ex_w.normal)
		return;
	if (v.out_violations || v.out_pages_checked != EX_PAGES ||
	    v.out_rows_checked != EX_ROWS)
		ex_fail("VERIFY: %u violations (see dmesg), %u pages %u rows",
			v.out_violations, v.out_pages_checked,
			v.out_rows_checked);
}

static void op_pressure(struct ex_client *c)
{
#ifdef KVPOOL_PRESSURE
	struct kvpool_pressure p = { 0 };
	struct pollfd pfd = { .fd = c->fd, .events = POLLPRI | POLLIN };

	p.flags = ex_pick_flags(0);
	p.__reserved = ex_resv();
	EX_IOCTL(c->fd, KVPOOL_PRESSURE, p, sizeof(p));
	if (poll(&pfd, 1, 0) < 0)
		ex_fail("poll: %s", strerror(errno));
#else
	(void)c;
#endif
}

static void ex_export_keep(int fd)
{
	if (ex_w.nexp < EX_EXPORTS)
		ex_w.exports[ex_w.nexp++] = fd;
	else
		close(fd);
}

static void op_export(struct ex_client *c)
{
#ifdef KVPOOL_EXPORT
	struct kvpool_export x = { 0 };
	int ri = -1, si = -1;
	int err;

	if (ex_chance(30)) {
		x.flags = ex_pick_flags(KVPOOL_EXPORT_SLOT);
		x.session_id = ex_pick_session(c, &si);
	} else {
		x.flags = ex_pick_flags(0);
		x.handle = ex_pick_handle(c, &ri);
	}
	x.out_fd = -1;
	err = EX_IOCTL(c->fd, KVPOOL_EXPORT, x, sizeof(x));
	if (err || !ex_w.normal)
		return;
	if (x.out_fd < 0)
		ex_fail("EXPORT: fd %d", x.out_fd);
	ex_count(C_EXPORTS, 1);
	if (x.flags & KVPOOL_EXPORT_SLOT)
		ex_sess_forget(c, si);
	else
		ex_row_forget(c, ri);
	if (ex_chance(20))
		close(x.out_fd);	/* unimported: the row goes back */
	else
		ex_export_keep(x.out_fd);
#else
	(void)c;
#endif
}

static void op_import(struct ex_client *c)
{
#ifdef KVPOOL_IMPORT
	struct kvpool_import m = { 0 };
	int k = -1, err;
	__u32 v = ex_below(100);

	m.flags = ex_pick_flags(0);
	if (ex_w.nexp && v < 85) {
		k = ex_below(ex_w.nexp);
		m.fd = ex_w.exports[k];
	} else if (v < 90) {
		m.fd = c->fd;		/* not an export file */
	} else if (v < 95) {
		m.fd = -1;
	} else {
		m.fd = 1000 + ex_below(1000);
	}
	m.__reserved = ex_resv();
	err = EX_IOCTL(c->fd, KVPOOL_IMPORT, m, sizeof(m));
	if (err || !ex_w.normal)
		return;
	if (k < 0)
		ex_fail("IMPORT of fd %d, no export file, succeeded", m.fd);
	ex_count(C_IMPORTS, 1);
	ex_row_add(c, m.out_handle);
	if (ex_chance(70)) {
		close(ex_w.exports[k]);
		ex_w.exports[k] = ex_w.exports[--ex_w.nexp];
	}
#else
	(void)c;
#endif
}

/* An ioctl number of ours that no op has. */
static void op_unknown(int fd)
{
	static const unsigned long known[] = {
		KVPOOL_INFO, KVPOOL_STATS, KVPOOL_ROW_ALLOC, KVPOOL_EXTEND,
		KVPOOL_COMMIT, KVPOOL_TRIM, KVPOOL_RELEASE, KVPOOL_TO_SLOT,
		KVPOOL_FROM_SLOT, KVPOOL_SLOT_RELEASE, KVPOOL_ROW_QUERY,
		KVPOOL_VERIFY, KVPOOL_DONATE, KVPOOL_ATTACH_PREFIX,
		KVPOOL_CACHE_EVICT, KVPOOL_SWA_FREE,
#ifdef KVPOOL_EXPORT
		KVPOOL_EXPORT, KVPOOL_IMPORT, KVPOOL_PRESSURE,
#endif
#ifdef KVPOOL_ARENA
		KVPOOL_ARENA,
#endif
	};
	unsigned long cmd;
	size_t i;
	__u32 v;
	int ret;

	/*
	 * Mostly the type's own numbers (0x00-0x3f: pool ops, control ops
	 * a pool does not serve, the kept ones), with any direction and size;
	 * sometimes any number, or the numbers of the old type 0xb7.
	 */
	v = ex_below(100);
	cmd = _IOC(ex_below(4), v < 90 ? KVPOOL_TYPE : 0xb7,
		   v < 70 ? ex_below(0x40) : v < 90 ? ex_below(256) :
		   0x80 + ex_below(0x30), v < 50 ? 0 : ex_below(256));
	for (i = 0; i < ARRAY_SIZE(known); i++)
		if (cmd == known[i])
			return;
	memset(ex_w.arr, 0, 256);
	ex_w.arr[0] = 256;
	ret = ioctl(fd, cmd, ex_w.arr);
	ex_count(C_UNKNOWN_IOCTLS, 1);
	if (ret != -1 || errno != ENOTTY)
		ex_fail("unknown ioctl %#lx: %d (%s), not ENOTTY", cmd, ret,
			strerror(errno));
}

/* Control ops that must fail: they may not make or break pools. */
static void op_ctl(void)
{
	struct kvpool_ctl_create cr = { 0 };
	struct kvpool_ctl_destroy de = { 0 };

	if (ex_w.ctl < 0)
		ex_w.ctl = kt_ctl_open();
	if (ex_w.ctl < 0)
		ex_fail("open " KT_CTL_PATH ": %s", strerror(errno));
	switch (ex_below(4)) {
	case 0:	/* no pages: EINVAL whatever else */
		cr.flags = ex_pick_flags(KVPOOL_CREATE_RESERVE_ZERO);
		cr.nr_pages = 0;
		cr.page_tokens = ex_below(3);
		cr.nr_rows = ex_below(3);
		cr.row_tokens = ex_below(3);
		/* ABI 1's struct ended at __reserved: 32 bytes. */
		if (!EX_IOCTL(ex_w.ctl, KVPOOL_CTL_CREATE, cr,
			      offsetof(struct kvpool_ctl_create, __reserved) +
			      sizeof(cr.__reserved)))
			ex_fail("CTL_CREATE without pages succeeded");
		break;
	case 1:	/* our pool has clients: EBUSY */
		de.flags = ex_pick_flags(0);
		de.pool_id = ex_pool_id;
		if (!EX_IOCTL(ex_w.ctl, KVPOOL_CTL_DESTROY, de, sizeof(de)))
			ex_fail("CTL_DESTROY of a pool in use succeeded");
		break;
	case 2:
		de.pool_id = 64 + ex_below(1000);
		if (!EX_IOCTL(ex_w.ctl, KVPOOL_CTL_DESTROY, de, sizeof(de)))
			ex_fail("CTL_DESTROY of pool %u succeeded", de.pool_id);
		break;
	default:
#ifdef KVPOOL_CTL_TENANT_LIST
		{
			struct kvpool_ctl_tenant_list l = { 0 };

			l.flags = ex_pick_flags(0);
			l.pool_id = ex_chance(90) ? ex_pool_id : 64;
			l.count = ex_below(4);
			l.entry_len =
				ex_pick_elen(sizeof(struct kvpool_tenant_info));
			l.tenants = ex_arr_ptr(ex_w.arr, l.count *
				sizeof(struct kvpool_tenant_info));
			/* The first release's struct ended at tenants. */
			EX_IOCTL(ex_w.ctl, KVPOOL_CTL_TENANT_LIST, l,
				 offsetof(struct kvpool_ctl_tenant_list,
					  paths));
		}
#endif
		break;
	}
}

static void ex_loop(unsigned long nops);

/* A grandchild shares this worker's files for a while. */
static void op_fork(void)
{
	pid_t pid;

	if (ex_w.grandkids >= EX_GRANDKIDS || ex_w.grandchild)
		return;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return;
	if (pid) {
		ex_w.grandkids++;
		ex_count(C_GRANDKIDS, 1);
		return;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ex_w.grandchild = true;
	ex_rng ^= (__u64)getpid() * 0x9e3779b97f4a7c15ULL;
	ex_loop(20 + ex_below(200));
	_exit(0);
}

/* ---- passing files ------------------------------------------------------------- */

static int ex_send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* One fd from the socket, or -1 (none waiting, or the peer is gone). */
static int ex_recv_fd(int sock, bool wait)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT)) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static bool ex_is_pool_fd(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode);
}

static void ex_add_client(int fd)
{
	struct ex_client *c;

	if (ex_w.ncl == EX_CLIENTS) {
		close(fd);
		return;
	}
	c = &ex_w.cl[ex_w.ncl++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
}

static void ex_take_fd(int fd)
{
	if (ex_is_pool_fd(fd))
		ex_add_client(fd);
	else
		ex_export_keep(fd);
}

static void op_files(void)
{
	__u32 v = ex_below(100);
	int fd, k;

	if (v < 30) {			/* a new client of our own */
		if (ex_w.ncl < EX_CLIENTS) {
			fd = kt_open_id(ex_pool_id, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				ex_fail("open /dev/kvpool%u: %s", ex_pool_id,
					strerror(errno));
			ex_add_client(fd);
		}
	} else if (v < 50) {		/* close one */
		if (ex_w.ncl > 1) {
			k = ex_below(ex_w.ncl);
			close(ex_w.cl[k].fd);
			ex_w.cl[k] = ex_w.cl[--ex_w.ncl];
		}
	} else if (v < 75) {		/* pass one up to the parent */
		if (ex_w.sock < 0)
			return;
		if (ex_w.nexp && ex_chance(60)) {
			k = ex_below(ex_w.nexp);
			if (!ex_send_fd(ex_w.sock, ex_w.exports[k])) {
				ex_count(C_FD_UP, 1);
				close(ex_w.exports[k]);
				ex_w.exports[k] = ex_w.exports[--ex_w.nexp];
			}
		} else if (ex_w.ncl) {
			k = ex_below(ex_w.ncl);
			if (!ex_send_fd(ex_w.sock, ex_w.cl[k].fd)) {
				ex_count(C_FD_UP, 1);
				if (ex_w.ncl > 1 && ex_chance(50)) {
					close(ex_w.cl[k].fd);
					ex_w.cl[k] = ex_w.cl[--ex_w.ncl];
				}
			}
		}
	} else {			/* take what the parent sent */
		if (ex_w.sock < 0)
			return;
		while ((fd = ex_recv_fd(ex_w.sock, false)) >= 0) {
			ex_count(C_FD_RECV, 1);
			ex_take_fd(fd);
		}
	}
}

/* ---- the worker ------------------------------------------------------------------ */

static void ex_op(void)
{
	struct ex_client *c = ex_pick_client();
	__u32 v = ex_below(1000);

	if (!c || v < 25) {
		op_files();
		return;
	}
	/* Keep within the pool, as a scheduler would: finish requests. */
	if (c->nrows >= 5 && ex_chance(35)) {
		op_handles(c, true);
		return;
	}
	if (c->nsess >= 3 && ex_chance(30)) {
		op_slot(c, ex_chance(50) ? KVPOOL_FROM_SLOT :
			KVPOOL_SLOT_RELEASE);
		return;
	}
	if (v < 130 || (!c->nrows && ex_chance(60)))
		op_alloc(c);
	else if (v < 280)
		op_extend(c);
	else if (v < 350)
		op_len(c, LEN_COMMIT);
	else if (v < 380)
		op_handles(c, false);
	else if (v < 460)
		op_handles(c, true);
	else if (v < 500)
		op_slot(c, KVPOOL_TO_SLOT);
	else if (v < 535)
		op_slot(c, KVPOOL_FROM_SLOT);
	else if (v < 555)
		op_slot(c, KVPOOL_SLOT_RELEASE);
	else if (v < 595)
		op_query(c, false);
	else if (v < 610)
		op_query(c, true);
	else if (v < 660)
		op_len(c, LEN_DONATE);
	else if (v < 700)
		op_attach(c);
	else if (v < 735)
		op_evict(c);
	else if (v < 765)
		op_len(c, LEN_SWA);
	else if (v < 790)
		op_stats(c);
	else if (v < 805)
		op_info(c);
	else if (v < 820)
		op_verify(c->fd);
	else if (v < 840)
		op_pressure(c);
	else if (v < 880)
		op_export(c);
	else if (v < 920)
		op_import(c);
	else if (v < 935)
		op_unknown(c->fd);
	else if (v < 945)
		op_ctl();
	else if (v < 950)
		op_fork();
	else
		op_files();
}

static void ex_loop(unsigned long nops)
{
	unsigned long i;

	for (i = 0; i < nops; i++) {
		if ((i & 63) == 0 && ex_now_ns() > ex_deadline_ns)
			break;
		ex_op();
	}
}

static void ex_worker_main(int sock, int inherited, __u64 seed)
{
	char *m;
	int fd;

	memset(&ex_w, 0, sizeof(ex_w));
	ex_w.sock = sock;
	ex_w.ctl = -1;
	ex_rng = seed | 1;
	m = mmap(NULL, 4 * KT_PAGE_SIZE + 2 * EX_ARR * 4,
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 2 * KT_PAGE_SIZE, KT_PAGE_SIZE,
					PROT_NONE))
		ex_fail("mmap: %s", strerror(errno));
	ex_w.arg = m;
	ex_w.edge = m + 2 * KT_PAGE_SIZE;
	ex_w.ro = m + 3 * KT_PAGE_SIZE;
	ex_w.arr = (__u32 *)(m + 4 * KT_PAGE_SIZE);
	ex_w.arr2 = ex_w.arr + EX_ARR;

	if (inherited >= 0)
		ex_add_client(inherited);
	/* Clients the parent sent before starting us (SCM_RIGHTS). */
	if (sock >= 0 && inherited == -2) {
		while ((fd = ex_recv_fd(sock, false)) >= 0) {
			ex_count(C_FD_RECV, 1);
			ex_take_fd(fd);
		}
	}
	if (!ex_w.ncl) {
		fd = kt_open_id(ex_pool_id, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			ex_fail("open: %s", strerror(errno));
		ex_add_client(fd);
	}
	ex_loop(200 + ex_below(3000));
	if (ex_chance(50)) {	/* else exit drops the files */
		while (ex_w.ncl)
			close(ex_w.cl[--ex_w.ncl].fd);
		while (ex_w.nexp)
			close(ex_w.exports[--ex_w.nexp]);
	}
	_exit(0);
}

/* ---- the parent ------------------------------------------------------------------- */

struct ex_slot {
	pid_t pid;
	int sock;
};

FIXTURE(exerciser) {
	struct kt_pool pool;
	int fd;			/* the observer */
	struct ex_slot w[EX_WORKERS];
	int held[EX_PARENT_FDS];	/* fds passed up, to hand on */
	int nheld;
	__u32 tenant_id;
};

FIXTURE_SETUP(exerciser)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     EX_PAGES, EX_PT, EX_ROWS, EX_ROW_TOKENS);
	self->fd = kt_pool_open(_metadata, &self->pool);
	ex_pool_id = self->pool.id;
	ex_max_batch = self->pool.max_batch;
	ex_sh = mmap(NULL, sizeof(*ex_sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ex_sh);
	memset(ex_sh, 0, sizeof(*ex_sh));
}

FIXTURE_TEARDOWN(exerciser)
{
	/* Verify, close, check a fresh client sees it whole, destroy. */
	kt_pool_fini(_metadata, &self->pool);
}

static __u64 ex_seed(void)
{
	const char *s = getenv("KVPOOL_SEED");

	if (s && *s)
		return strtoull(s, NULL, 0);
	return ((__u64)time(NULL) << 20) ^ (__u64)getpid() ^ ex_now_ns();
}

static void ex_spawn(FIXTURE_DATA(exerciser) *self, int slot, __u64 seed)
{
	int sv[2], kind = ex_below(3), inherited = -1, fd, i;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return;
	if (kind == 1) {		/* a client the child inherits */
		inherited = kt_open_id(ex_pool_id, O_RDWR | O_CLOEXEC);
		ex_count(C_SPAWN_FORKFD, 1);
	} else if (kind == 2) {		/* clients sent over the socket */
		for (i = 0; i < 1 + (int)ex_below(2); i++) {
			fd = kt_open_id(ex_pool_id, O_RDWR | O_CLOEXEC);
			if (fd >= 0 && !ex_send_fd(sv[0], fd))
				ex_count(C_FD_DOWN, 1);
			if (fd >= 0)
				close(fd);
		}
		inherited = -2;
		ex_count(C_SPAWN_SCM, 1);
	} else {
		ex_count(C_SPAWN_OPEN, 1);
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		for (i = 0; i < self->nheld; i++)
			close(self->held[i]);
		for (i = 0; i < EX_WORKERS; i++)
			if (self->w[i].sock >= 0)
				close(self->w[i].sock);
		ex_worker_main(sv[1], inherited, seed);
	}
	close(sv[1]);
	/* The parent keeps an inherited client open a while, sometimes. */
	if (inherited >= 0) {
		if (ex_chance(30) && self->nheld < EX_PARENT_FDS)
			self->held[self->nheld++] = inherited;
		else
			close(inherited);
	}
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	self->w[slot].pid = pid;
	self->w[slot].sock = sv[0];
	ex_count(C_SPAWNED, 1);
}

/* Reap whatever exited: workers and orphaned grandchildren alike. */
static int ex_reap(FIXTURE_DATA(exerciser) *self, bool block)
{
	int status, i, bad = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
		for (i = 0; i < EX_WORKERS; i++) {
			if (self->w[i].pid != pid)
				continue;
			self->w[i].pid = 0;
			close(self->w[i].sock);
			self->w[i].sock = -1;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			ex_count(C_EXITED, 1);
		} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			;	/* ours, or a grandchild whose worker died */
		} else {
			fprintf(stderr, "# process %d ended with status %#x\n",
				pid, status);
			bad++;
		}
	}
	return bad;
}

static void ex_drain(FIXTURE_DATA(exerciser) *self)
{
	int i, fd;

	for (i = 0; i < EX_WORKERS; i++) {
		if (!self->w[i].pid)
			continue;
		while ((fd = ex_recv_fd(self->w[i].sock, false)) >= 0) {
			if (self->nheld < EX_PARENT_FDS)
				self->held[self->nheld++] = fd;
			else
				close(fd);
		}
	}
}

static void ex_tenant(struct __test_metadata *_metadata,
		      FIXTURE_DATA(exerciser) *self, bool reset)
{
#ifdef KVPOOL_CTL_TENANT_SET
	struct kvpool_ctl_tenant t = { .size = sizeof(t) };
	struct kvpool_ctl_wmark wm = { .size = sizeof(wm) };
	int ret;

	t.flags = KVPOOL_TENANT_BY_ID;
	t.pool_id = self->pool.id;
	t.tenant_id = self->tenant_id;
	if (!reset && ex_chance(60)) {
		t.max_pages = ex_chance(50) ? 0 : 64 + ex_below(EX_PAGES);
		t.min_pages = ex_chance(50) ? 0 : ex_below(64);
		if (t.max_pages && t.min_pages > t.max_pages)
			t.min_pages = t.max_pages;
		t.max_rows = ex_chance(50) ? 0 : 8 + ex_below(EX_ROWS);
	}
	ret = kt_ioctl(self->pool.ctl, KVPOOL_CTL_TENANT_SET, &t);
	EXPECT_EQ(0, ret) TH_LOG("CTL_TENANT_SET: %s", strerror(ret));
	ex_count(C_TENANT_SETS, 1);
	wm.pool_id = self->pool.id;
	if (reset) {
		wm.low_wmark = EX_PAGES / 32;
		wm.high_wmark = EX_PAGES / 16;
	} else {
		wm.low_wmark = ex_below(EX_PAGES / 2);
		wm.high_wmark = wm.low_wmark + ex_below(EX_PAGES / 2);
	}
	ret = kt_ioctl(self->pool.ctl, KVPOOL_CTL_SET_WMARK, &wm);
	EXPECT_EQ(0, ret) TH_LOG("CTL_SET_WMARK: %s", strerror(ret));
#else
	(void)_metadata;
	(void)self;
	(void)reset;
#endif
}

TEST_F_TIMEOUT(exerciser, storm, 240)
{
	__u64 seed = ex_seed(), wseed;
	const char *s = getenv("KVPOOL_EXERCISER_SECS");
	unsigned long long secs = s && *s ? strtoull(s, NULL, 0) : EX_SECS;
	unsigned long long t0 = ex_now_ns();
	unsigned long iter = 0, spawns = 0;
	struct kvpool_stats st;
	struct kvpool_verify v;
	int i, bad = 0, tries;

	printf("# seed %llu (KVPOOL_SEED=%llu repeats the choices), %llu s, %d workers\n",
	       (unsigned long long)seed, (unsigned long long)seed, secs,
	       EX_WORKERS);
	fflush(stdout);
	ex_rng = seed | 1;
	ex_deadline_ns = t0 + secs * 1000000000ULL;
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, kt_stats(self->fd, &st));
	self->tenant_id = st.out_tenant_id;
	for (i = 0; i < EX_WORKERS; i++)
		self->w[i].sock = -1;

	while (ex_now_ns() < ex_deadline_ns && spawns < EX_MAX_SPAWNS) {
		struct timespec nap = { 0, 1000 * (long)ex_below(8000) };
		__u32 pick;

		iter++;
		bad += ex_reap(self, false);
		for (i = 0; i < EX_WORKERS; i++) {
			if (self->w[i].pid)
				continue;
			wseed = ex_rand();
			ex_spawn(self, i, wseed);
			spawns++;
		}
		ex_drain(self);
		pick = ex_below(100);
		if (pick < 25) {		/* kill one */
			i = ex_below(EX_WORKERS);
			if (self->w[i].pid && !kill(self->w[i].pid, SIGKILL))
				ex_count(C_KILLED, 1);
		} else if (pick < 40 && self->nheld) {	/* hand a file down */
			int k = ex_below(self->nheld);

			i = ex_below(EX_WORKERS);
			if (self->w[i].pid &&
			    !ex_send_fd(self->w[i].sock, self->held[k]))
				ex_count(C_FD_DOWN, 1);
			close(self->held[k]);
			self->held[k] = self->held[--self->nheld];
		} else if (pick < 45 && self->nheld) {	/* drop one */
			close(self->held[--self->nheld]);
		} else if (pick < 48) {
			ex_tenant(_metadata, self, false);
		} else if (pick < 58) {
			ASSERT_EQ(0, kt_verify(self->fd, &v));
			EXPECT_EQ(0, v.out_violations)
				TH_LOG("VERIFY during the storm: %u violations (dmesg)",
				       v.out_violations);
			ex_count(C_VERIFY_MID, 1);
		}
		nanosleep(&nap, NULL);
	}

	/* Stop: kill what runs, close what we hold, reap every process. */
	for (i = 0; i < EX_WORKERS; i++)
		if (self->w[i].pid && !kill(self->w[i].pid, SIGKILL))
			ex_count(C_KILLED, 1);
	while (self->nheld)
		close(self->held[--self->nheld]);
	bad += ex_reap(self, true);
	for (i = 0; i < EX_WORKERS; i++)
		if (self->w[i].sock >= 0)
			close(self->w[i].sock);
	EXPECT_EQ(ECHILD, waitpid(-1, NULL, WNOHANG) < 0 ? errno : 0);
	ex_tenant(_metadata, self, true);

	/* Everything anyone held is back; the observer is the one client. */
	for (tries = 0; tries < 30; tries++) {
		ASSERT_EQ(0, kt_stats(self->fd, &st));
		if (st.out_free_pages == self->pool.usable_pages &&
		    st.out_free_rows == self->pool.usable_rows &&
		    st.out_nr_clients == 1)
			break;
		usleep(100 * 1000);
	}
	if (tries)
		printf("# note: the pool took %d00 ms to come back whole\n", tries);
	kt_expect_pool_full(_metadata, &self->pool, self->fd, 1);
	EXPECT_EQ(0, st.out_export_rows);
	EXPECT_EQ(0, st.out_export_pages);
	ASSERT_EQ(0, kt_verify(self->fd, &v));
	EXPECT_EQ(0, v.out_violations);

	printf("# seed %llu: %lu parent iterations in %.1f s\n",
	       (unsigned long long)seed, iter, (ex_now_ns() - t0) / 1e9);
	for (i = 0; i < C_NR; i++)
		printf("#   %-16s %lu\n", ex_cnames[i], ex_sh->c[i]);
	printf("#   errnos:");
	for (i = 0; i < 160; i++)
		if (ex_sh->by_errno[i])
			printf(" %s=%lu", i ? strerror(i) : "ok",
			       ex_sh->by_errno[i]);
	printf("\n");
	fflush(stdout);
	EXPECT_EQ(0, bad) TH_LOG("%d processes failed (see above)", bad);
	EXPECT_EQ(0, ex_sh->c[C_FAILURES]);
	EXPECT_LT(0, ex_sh->c[C_OK]);
}

TEST_HARNESS_MAIN
