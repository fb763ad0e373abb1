/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvptest: the shared helpers of the kvpool kernel selftests
 * (selftests/kernel, selftests/debug), built once into libkvptest.a.
 *
 * The tests talk to the module with raw ioctl(2) on the structs of
 * <linux/kvpool.h>, so what they check is the ABI itself, not a library.
 * Every ioctl wrapper returns 0 on success or the positive errno, so a test
 * reads ASSERT_EQ(ENOENT, kt_release1(fd, h, NULL)).
 *
 * Each fixture makes its own pool through /dev/kvpool-control
 * (struct kt_pool), opens its clients through kt_pool_open() and forks
 * through kt_pool_fork(), so that kt_pool_fini() in the teardown can:
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
#ifndef KVPTEST_H
#define KVPTEST_H

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
 * so those two stay off in the tests too. The library's own units use
 * the assertions but none of the runner's static functions.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wclobbered"

#define KT_CTL_PATH		"/dev/kvpool-control"
/* Pools have their own device class (the control device is a misc one). */
#define KT_SYSFS_CLASS		"/sys/class/kvpool"
#define KT_SYSFS_FMT		KT_SYSFS_CLASS "/kvpool%u/%s"
#define KT_PAGE_SIZE		4096u	/* PAGE_SIZE on x86-64, the ABI's size cap */
#define KT_MAX_FDS		16
#define KT_MAX_PIDS		16
#define KT_BAD_IDX		0xffffffffu
#define KT_ERR_NONE		0xffffffffu	/* out_error_index "not an entry" */

/*
 * The numbers of type KVPOOL_TYPE, as uapi/linux/kvpool.h lays them out:
 * pool ops in [KT_POOL_CMD_BASE, KT_CTL_CMD_BASE), control ops in
 * [KT_CTL_CMD_BASE, KT_AGENT_CMD_BASE), then the agent file's ops up to
 * KT_CMD_LIMIT; nothing at or above it is the module's.
 *
 * KT_POOL_CMD_END, KT_CTL_CMD_END and KT_AGENT_CMD_END are one past the
 * last command each
 * block defines: the first unknown number, ENOTTY until a release takes
 * it. The header has no count, so they name its last KVPOOL_CMD_* of
 * each block; tools/doc-check.sh fails if a later one is added without
 * moving them, and the asserts below if a block overflows. Tests take
 * unknown numbers from these, never as literals.
 */
#define KT_POOL_CMD_BASE	0x00
#define KT_CTL_CMD_BASE		0x20
#define KT_AGENT_CMD_BASE	0x30
#define KT_CMD_LIMIT		0x40
#define KT_POOL_CMD_END		(KVPOOL_CMD_ARENA + 1)
#define KT_CTL_CMD_END		(KVPOOL_CMD_CTL_BUDGET + 1)
#define KT_AGENT_CMD_END	(KVPOOL_CMD_AGENT_REPLY + 1)
_Static_assert(KT_POOL_CMD_END <= KT_CTL_CMD_BASE,
	       "the pool ops ran into the control block");
_Static_assert(KVPOOL_CMD_CTL_CREATE == KT_CTL_CMD_BASE,
	       "the control block moved");
_Static_assert(KT_CTL_CMD_END <= KT_AGENT_CMD_BASE,
	       "the control ops ran into the agent block");
_Static_assert(KVPOOL_CMD_AGENT_RECV == KT_AGENT_CMD_BASE,
	       "the agent block moved");
_Static_assert(KT_AGENT_CMD_END <= KT_CMD_LIMIT,
	       "the agent ops ran out of numbers");

#ifndef __maybe_unused
#define __maybe_unused __attribute__((unused))
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

static inline __u32 kt_div_up(__u32 n, __u32 d)
{
	return n / d + !!(n % d);
}

static inline __u64 kt_ptr(const void *p)
{
	return (__u64)(uintptr_t)p;
}

/*
 * ioctl(2) as 0 or the positive errno. A positive return from the kernel is
 * no documented outcome: report it as a negative number, which no errno
 * assertion accepts.
 */
int kt_ioctl(int fd, unsigned long cmd, void *arg);

/* ---- control device ---------------------------------------------------- */

int kt_ctl_open(void);

int kt_create(int ctl, __u32 flags, __u32 nr_pages,
	      __u32 page_tokens, __u32 nr_rows, __u32 row_tokens,
	      __u32 *out_id);

int kt_destroy(int ctl, __u32 id);

void kt_dev_path(char *buf, size_t len, __u32 id);

int kt_open_id(__u32 id, int oflags);

/* Number of /sys/class/kvpool/kvpoolN entries: how many pools exist. */
int kt_count_pools(void);

/* ---- pool ops ----------------------------------------------------------- */

int kt_info(int fd, struct kvpool_info *i);

int kt_stats(int fd, struct kvpool_stats *s);

int kt_verify(int fd, struct kvpool_verify *v);

int kt_row_alloc(int fd, __u32 count,
		 struct kvpool_handle *handles, __u32 *out_short);

int kt_extend(int fd, struct kvpool_extend_entry *e,
	      __u32 count, __u32 *pages, __u32 pages_cap,
	      struct kvpool_extend *out);

/* Extend one row; *nr_new (if given) gets out_nr_new. */
int kt_extend1(int fd, struct kvpool_handle h, __u32 new_len,
	       __u32 *pages, __u32 pages_cap, __u32 *nr_new);

/* Extend one row to new_len with a scratch page array big enough. */
int kt_grow(int fd, struct kvpool_handle h, __u32 new_len);

/*
 * The length of one entry of a struct kvpool_batch op, as this header has
 * it: what kt_batch() puts in entry_len. 0 for a cmd that is no batch op
 * (the kernel refuses 0 with EINVAL).
 */
__u32 kt_batch_entry_len(unsigned long cmd);

/* A batch op with an explicit entry_len (for the element-length tests). */
int kt_batch_len(int fd, unsigned long cmd, __u32 flags,
		 void *entries, __u32 count, __u32 entry_len,
		 struct kvpool_batch *out);

int kt_batch(int fd, unsigned long cmd, __u32 flags,
	     void *entries, __u32 count,
	     struct kvpool_batch *out);

int kt_commit1(int fd, struct kvpool_handle h, __u32 len);

int kt_trim1(int fd, struct kvpool_handle h, __u32 *nr_freed);

int kt_release1(int fd, struct kvpool_handle h,
		__u32 *nr_freed);

/* RELEASE of one row with KVPOOL_RELEASE_DONATE. */
int kt_release_donate1(int fd, struct kvpool_handle h,
		       __u32 *nr_freed);

/* DONATE one row up to `upto`; *nr_moved gets out_nr_pages. */
int kt_donate1(int fd, struct kvpool_handle h, __u32 upto,
	       __u32 *nr_moved);

/* SWA_FREE one row at window edge `edge`; *nr_freed gets out_nr_pages. */
int kt_swa_free1(int fd, struct kvpool_handle h, __u32 edge,
		 __u32 *nr_freed);

int kt_evict(int fd, __u32 *ids, __u32 count,
	     struct kvpool_batch *out);

int kt_attach(int fd, struct kvpool_handle h,
	      const __u32 *ids, __u32 nr_pages);

int kt_slot_op(int fd, unsigned long cmd, __u64 session,
	       struct kvpool_handle *h, __u32 *nr_pages);

int kt_to_slot(int fd, __u64 session, struct kvpool_handle h,
	       __u32 *nr_pages);

int kt_from_slot(int fd, __u64 session,
		 struct kvpool_handle *h, __u32 *nr_pages);

int kt_slot_release(int fd, __u64 session, __u32 *nr_pages);

int kt_query(int fd, struct kvpool_handle h, __u32 *pages,
	     __u32 pages_cap, struct kvpool_row_query *q);

int kt_query_slot(int fd, __u64 session, __u32 *pages,
		  __u32 pages_cap, struct kvpool_row_query *q);

/* ---- snapshots: "nothing changed" ---------------------------------------- */

/*
 * The fields of struct kvpool_stats fall into groups; kt_stats_diff()
 * compares the groups asked for.
 */
#define KT_ST_POOL	0x1	/* pool-wide: what every client sees alike */
#define KT_ST_CLIENT	0x2	/* the caller's own rows, slots and pages */
#define KT_ST_TENANT	0x4	/* what the caller's tenant holds */
#define KT_ST_LIMITS	0x8	/* the caller's tenant id and its limits */
/* What changes when something is allocated or freed. */
#define KT_ST_USAGE	(KT_ST_POOL | KT_ST_CLIENT | KT_ST_TENANT)
#define KT_ST_ALL	(KT_ST_USAGE | KT_ST_LIMITS)

/*
 * Name of the first field of @groups that differs (in the struct's
 * order), or "" when they are all equal.
 */
const char *kt_stats_diff(const struct kvpool_stats *a,
			  const struct kvpool_stats *b, unsigned int groups);

#define KT_ROW_MAX_PAGES 1024

/* A row as ROW_QUERY shows it, pages included. */
struct kt_row_snap {
	int err;
	__u32 state, nr_pages, idx, alloc, committed, protected_len, swa;
	__u32 pages[KT_ROW_MAX_PAGES];
};

/* Fill @s from the ROW_QUERY answer @q (whose ioctl returned @err). */
void kt_snap_fill(struct kt_row_snap *s, int err,
		  const struct kvpool_row_query *q);

void kt_snap_row(int fd, struct kvpool_handle h,
		 struct kt_row_snap *s);

/* kt_snap_row() of the row parked in slot @session. */
void kt_snap_slot(int fd, __u64 session,
		  struct kt_row_snap *s);

/* A held row of @alloc tokens, @committed of them committed. */
struct kvpool_handle kt_new_row(struct __test_metadata *_metadata, int fd,
				__u32 alloc, __u32 committed);

const char *kt_row_diff(const struct kt_row_snap *a,
			const struct kt_row_snap *b);

/*
 * Snapshot of a client's view: STATS plus ROW_QUERY of the given rows.
 * kt_state_diff() names the first difference ("" if none).
 */
#define KT_SNAP_ROWS 8
struct kt_state {
	struct kvpool_stats st;
	int nr;
	struct kt_row_snap rows[KT_SNAP_ROWS];
};

void kt_snap(int fd, const struct kvpool_handle *h, int nr,
	     struct kt_state *s);

const char *kt_state_diff(const struct kt_state *a,
			  const struct kt_state *b);

/* ---- sysfs and fdinfo -------------------------------------------------- */

/*
 * The contents of a small text file, NUL-terminated, into @buf (@len
 * bytes with the NUL): 0 or the errno. @buf is "" on failure.
 */
int kt_read_text(const char *path, char *buf, size_t len);

/*
 * Run the shell command printf(@fmt, ...) makes, with its stdout and
 * stderr (2>&1) into @out (@len bytes with the NUL; NULL to drop them):
 * its exit status, or -1 if it could not run or was killed.
 */
int kt_run_output(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Write @s to an existing file: 0, the errno, or EIO on a short write. */
int kt_write_text(const char *path, const char *s);

/* Read /sys/class/kvpool/kvpoolN/<name>: strict "decimal\n". */
int kt_sysfs_u64(__u32 id, const char *name, __u64 *val);

/* kt_sysfs_u64()'s value, or ~0ull when it fails. */
__u64 kt_sysfs_val(__u32 id, const char *name);

/*
 * Value of "key:\tvalue\n" in /proc/self/fdinfo/<fd>. Returns 0, ENOENT
 * (no such key), EBADMSG (malformed) or ENOTUNIQ (the key twice).
 */
int kt_fdinfo_u64(int fd, const char *key, __u64 *val);

/* ---- the fixture's pool -------------------------------------------------- */

struct kt_pool {
	int ctl;
	bool created;
	__u32 id;
	struct kvpool_ctl_create geo;
	__u32 usable_pages;	/* nr_pages minus the reserved page */
	__u32 usable_rows;	/* nr_rows minus the reserved row */
	__u32 max_batch;	/* min(8192, nr_rows) */
	int fds[KT_MAX_FDS];
	pid_t pids[KT_MAX_PIDS];
};

void kt_pool_reset(struct kt_pool *p);

/* Make a pool (setup only: uses ASSERT). */
void kt_pool_init(struct __test_metadata *_metadata,
		  struct kt_pool *p, __u32 flags,
		  __u32 nr_pages, __u32 page_tokens,
		  __u32 nr_rows, __u32 row_tokens);

/* Open a client of the pool; the teardown closes it if the test did not. */
int kt_pool_open(struct __test_metadata *_metadata,
		 struct kt_pool *p);

void kt_pool_close(struct kt_pool *p, int fd);

/*
 * fork() and remember the child so the teardown can kill and reap it if
 * the test ends early. Returns as fork() does.
 */
pid_t kt_pool_fork(struct __test_metadata *_metadata,
		   struct kt_pool *p);

/* Reap a child started with kt_pool_fork(); returns its wait status. */
int kt_pool_wait(struct kt_pool *p, pid_t pid);

/*
 * kt_pool_wait() without blocking: @pid if the child was reaped (its
 * status in *@status), 0 if it is still running, -1 with errno on error.
 */
pid_t kt_pool_trywait(struct kt_pool *p, pid_t pid, int *status);

/*
 * A child's wait status says it exited 0 (CHILD_CHECK()'s success). A
 * function, not a macro: its argument, often a kt_pool_wait() call, is
 * evaluated once.
 */
static inline bool KT_CHILD_OK(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

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
void kt_child_signal(int wfd, char c);

/* Block until the other side writes a byte or closes; returns it or 0. */
char kt_pipe_wait(int rfd);

/*
 * How long a dead client's quarantined pages may take to come back once
 * its processes are reaped: the pool looks again within a second.
 */
#define KT_SETTLE_MS	5000

/*
 * Waits, up to KT_SETTLE_MS, until pool @fd has no page in quarantine.
 * Returns the milliseconds waited, or -1 if some still are.
 */
int kt_quarantine_settle(int fd);

/* Check the pool's accounting identities on one STATS snapshot. */
void kt_check_identities(struct __test_metadata *_metadata,
			 struct kt_pool *p,
			 const struct kvpool_stats *s);

/*
 * VERIFY must find nothing broken and walk the whole pool. It needs
 * CAP_SYS_ADMIN (EPERM otherwise): call it from the test process (root),
 * not from a child that dropped privileges.
 */
void kt_expect_verify(struct __test_metadata *_metadata,
		      struct kt_pool *p, int fd);

/*
 * The whole pool is free: what a fresh client sees after every other
 * client is gone.
 */
void kt_expect_pool_full(struct __test_metadata *_metadata,
			 struct kt_pool *p, int fd,
			 __u32 nr_clients);

/* The pieces of the teardowns (kt_pool_fini(), kt_tenv_fini()). */
typedef void (*kt_expect_full_fn)(struct __test_metadata *_metadata,
				  struct kt_pool *p, int fd, __u32 nr_clients);
/* VERIFY through the first client still open, if any. */
void kt_pool_verify_open(struct __test_metadata *_metadata, struct kt_pool *p);
/* SIGKILL and reap every child kt_pool_fork() started. */
void kt_pool_reap(struct kt_pool *p);
/*
 * Once every client is closed: @expect_full from a fresh client, then
 * destroy the pool.
 */
void kt_pool_destroy_whole(struct __test_metadata *_metadata,
			   struct kt_pool *p, kt_expect_full_fn expect_full);
void kt_pool_close_ctl(struct kt_pool *p);

/*
 * Teardown: verify with the clients' state in place, kill and reap
 * children, close every client, check that a fresh client sees the whole
 * pool free and verify again, then destroy the pool. EXPECT only.
 */
void kt_pool_fini(struct __test_metadata *_metadata,
		  struct kt_pool *p);

/* ---- memory that faults ------------------------------------------------ */

/*
 * Two pages: the first read-write, the second PROT_NONE. Returns the start;
 * kt_fault_edge(base) is the first byte that faults.
 */
void *kt_map_guarded(void);

void *kt_fault_edge(void *base);

/* ---- arenas ------------------------------------------------------------- */

/*
 * A memfd of @bytes that KVPOOL_CTL_ARENA_SET takes as a host chunk:
 * sealed against shrinking, growing and more seals (not against writes),
 * O_CLOEXEC.
 * Returns the fd or -1.
 */
int kt_host_memfd(__u64 bytes);

/*
 * Give pool @id a host arena of one memfd chunk, @nr_pages of
 * @page_bytes (their product a multiple of the CPU page); 0 or an errno.
 */
int kt_host_arena(int ctl, __u32 id, __u32 nr_pages, __u64 page_bytes);

/* KVPOOL_CTL_ARENA_SET; *@error_index (if not NULL) gets out_error_index. */
int kt_arena_set(int ctl, __u32 id, __u32 kind, __u64 page_bytes,
		 const struct kvpool_arena_chunk *chunks, __u32 nr,
		 __u32 *error_index);

/* KVPOOL_ARENA without descriptors. */
int kt_arena_info(int fd, struct kvpool_arena *a);

/*
 * The module's test hook for the fake CUDA driver's files (its parameter
 * fake_cuda): set it to @on. Returns the value it had (0 or 1), or -errno
 * (-ENOENT: a module without the hook).
 */
int kt_fake_cuda(int on);

/*
 * A pty master, O_RDWR | O_CLOEXEC: what the fake CUDA driver exports,
 * and the kernel takes as a CUDA chunk under kt_fake_cuda(1). Returns
 * the fd or -1.
 */
int kt_fake_export(void);

/*
 * The index of the pty whose master @fd is (TIOCGPTN), or -1: each open
 * of /dev/ptmx is a pty of its own, so two masters with one index are
 * one open file (kcmp(2) says so too, but debug kernels lack it).
 */
int kt_pty_index(int fd);

/*
 * The guest's first PCI display controller (vm-run.sh gives the VM a
 * virtio GPU): as KVPOOL_CTL_CREATE names it in *@domain and *@devid,
 * and by its sysfs name ("0000:00:02.0") in @name, @len bytes; each may
 * be NULL. 0, or -ENODEV.
 */
int kt_find_gpu(__u32 *domain, __u32 *devid, char *name, size_t len);

/*
 * KVPOOL_CTL_CREATE of a pool of @nr_pages one-token pages (4 rows of 16
 * tokens) for that GPU. 0 and *@id, -ENODEV without one, or -errno.
 */
int kt_create_gpu_pool(int ctl, __u32 nr_pages, __u32 *id);

/* KVPOOL_ARENA with KVPOOL_ARENA_FDS for chunks [first, first + count). */
int kt_arena_fds(int fd, __u32 first, __u32 count,
		 struct kvpool_arena_fd *out, struct kvpool_arena *a);

/* ---- page-id bookkeeping ------------------------------------------------ */

/*
 * Every page id in ids[0..n) is a real, distinct page of the pool, and not
 * page 0 when the pool reserves it. seen (nr_pages bytes) accumulates over
 * calls so distinctness holds across rows. Returns "" or what is wrong.
 */
const char *kt_check_ids(const struct kt_pool *p,
			 const __u32 *ids, __u32 n,
			 unsigned char *seen);

#endif /* KVPTEST_H */
