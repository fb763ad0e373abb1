/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvptest_agent: agents for the kvpool selftests. An agent is a forked
 * process that first joins a cgroup and drops to a uid (so that what it
 * opens belongs to another tenant), then runs ioctls for the test over a
 * SOCK_SEQPACKET socket, passing files both ways with SCM_RIGHTS. Its
 * wrappers (ag_*) return 0 or the errno of the op in the agent, or
 * KT_AG_BROKEN when the agent is gone, which no errno assertion accepts.
 * The agent never touches the harness: it only answers, so all checking
 * stays in the test process.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef KVPTEST_AGENT_H
#define KVPTEST_AGENT_H

#include "kvptest.h"

/* ---- agents ---------------------------------------------------------- */

enum {
	KT_AG_HELLO = 1,	/* the agent's first message */
	KT_AG_OPEN,		/* open @path O_RDWR|O_CLOEXEC: val = slot */
	KT_AG_CLOSE,		/* close @slot */
	KT_AG_TAKE_FD,		/* keep the file sent along: val = slot */
	KT_AG_GIVE_FD,		/* send the file in @slot back (kept) */
	KT_AG_IOCTL,		/* ioctl(@slot, @cmd, st) */
	KT_AG_FDINFO,		/* @path is a key of @slot's fdinfo: val */
	KT_AG_POLL,		/* poll(@slot, POLLPRI | POLLIN, @arg ms) */
	KT_AG_EXIT,		/* _exit(@arg) without an answer */
};

#define KT_AG_ST	256
#define KT_AG_ARR	8192
#define KT_AG_SLOTS	32
#define KT_AG_NONE	0xffffffffu
#define KT_AG_BROKEN	(-10000)	/* no errno: the agent did not answer */
#define KT_AG_TIMEOUT_MS 20000

struct kt_ag_req {
	__u32 op;
	__u32 slot;
	__u64 cmd;
	__u32 st_len;
	__u32 arr_len;
	__u32 ptr_off[2];	/* __u64 pointer fields of st to aim at arr */
	__u32 ptr_arr[2];	/* ... at these offsets in arr */
	__u32 fd_in_off;	/* __s32 in st to set to the file sent along */
	__u32 fd_out_off;	/* __s32 in st: a new file to send back, then close */
	__s32 arg;
	__u32 __pad;
	char path[64];
	unsigned char st[KT_AG_ST];
	unsigned char arr[KT_AG_ARR];
};

struct kt_ag_rep {
	__s32 err;		/* 0 or the errno of the op */
	__s32 ret;		/* HELLO: pid; POLL: poll()'s return */
	__u64 val;		/* see the ops */
	__u64 val2;		/* POLL: ms spent; IOCTL with fd_out: FD flags */
	unsigned char st[KT_AG_ST];
	unsigned char arr[KT_AG_ARR];
};

struct kt_agent {
	pid_t pid;
	int sock;
	int pending;	/* a request sent whose answer is not read yet */
};

/*
 * The request being built and the last answer: one of each per test
 * process (a test may fill kt_ag_rq itself and use kt_ag_send()).
 */
extern struct kt_ag_req kt_ag_rq;
extern struct kt_ag_rep kt_ag_rp;

/*
 * Start an agent: a child that joins @cgroup (a folder, or NULL to stay),
 * becomes @uid (or stays root when uid < 0), optionally drops
 * CAP_SYS_ADMIN, closes every file it inherited and then serves. Setup
 * only (ASSERTs); the fixture's teardown kills it.
 */
void kt_agent_start(struct __test_metadata *_metadata,
		    struct kt_pool *p, struct kt_agent *a,
		    const char *cgroup, int uid,
		    bool drop_sys_admin);

void kt_ag_req_init(__u32 op, int slot);

/* Send kt_ag_rq (and @fd_in if >= 0); 0 or KT_AG_BROKEN. */
int kt_ag_send(struct kt_agent *a, int fd_in);

/*
 * Wait up to @ms for the answer to a request sent; 0 and kt_ag_rp filled,
 * ETIMEDOUT (still pending), or KT_AG_BROKEN. *fd_out gets a file sent
 * back, or -1.
 */
int kt_ag_recv(struct kt_agent *a, int ms, int *fd_out);

/* One request, one answer: the op's errno, or KT_AG_BROKEN. */
int kt_ag_call(struct kt_agent *a, int fd_in, int *fd_out);

/* Open /dev/kvpool@pool in the agent: 0 and *slot, or the errno. */
int ag_open_path(struct kt_agent *a, const char *path,
		 int *slot);

int ag_open(struct kt_agent *a, __u32 pool, int *slot);

int ag_close(struct kt_agent *a, int slot);

/* Hand a file to the agent (it keeps a copy in a slot). */
int ag_take_fd(struct kt_agent *a, int fd, int *slot);

/* Get a copy of the agent's file in @slot. */
int ag_give_fd(struct kt_agent *a, int slot, int *fd);

int ag_fdinfo(struct kt_agent *a, int slot, const char *key,
	      __u64 *val);

/* Start a poll() in the agent without waiting for it. */
int ag_poll_start(struct kt_agent *a, int slot, int ms);

/*
 * Wait up to @ms for that poll() to end: 0 (then *ret is poll()'s value,
 * *revents its events, *spent_ms its time), ETIMEDOUT or KT_AG_BROKEN.
 */
int ag_poll_wait(struct kt_agent *a, int ms, int *ret,
		 int *revents, long *spent_ms);

int ag_poll(struct kt_agent *a, int slot, int ms, int *ret,
	    int *revents);

/*
 * ioctl(@slot, @cmd, @st) in the agent. @arr (@arr_len bytes) travels
 * along; the __u64 fields at @p0 and @p1 of @st (KT_AG_NONE: none) are
 * aimed at arr + @a0 and arr + @a1 there. @st and @arr come back as the
 * agent's ioctl left them, pointers restored.
 */
/* The same, with the array sent (@in, NULL: zeros) and got back (@out) apart. */
int ag_ioctl_io(struct kt_agent *a, int slot,
		unsigned long cmd, void *st, size_t st_len,
		const void *in, void *arr, size_t arr_len,
		__u32 p0, __u32 a0, __u32 p1, __u32 a1,
		int fd_in, __u32 fd_in_off, int *fd_out,
		__u32 fd_out_off);

int ag_ioctl_fd(struct kt_agent *a, int slot,
		unsigned long cmd, void *st, size_t st_len,
		void *arr, size_t arr_len, __u32 p0, __u32 a0,
		__u32 p1, __u32 a1, int fd_in, __u32 fd_in_off,
		int *fd_out, __u32 fd_out_off);

int ag_ioctl(struct kt_agent *a, int slot, unsigned long cmd,
	     void *st, size_t st_len, void *arr, size_t arr_len,
	     __u32 p0, __u32 a0, __u32 p1, __u32 a1);

/* A struct without arrays. */
int ag_ioctl0(struct kt_agent *a, int slot, unsigned long cmd,
	      void *st, size_t st_len);

int ag_stats(struct kt_agent *a, int slot,
	     struct kvpool_stats *s);

int ag_pressure(struct kt_agent *a, int slot,
		struct kvpool_pressure *p);

int ag_verify(struct kt_agent *a, int slot,
	      struct kvpool_verify *v);

int ag_alloc(struct kt_agent *a, int slot, __u32 count,
	     struct kvpool_handle *h, __u32 *out_short);

int ag_alloc1(struct kt_agent *a, int slot,
	      struct kvpool_handle *h);

/*
 * Extend one row to @new_len; *out_short gets out_short, *nr_new
 * out_nr_new, and @pages (if given, room for @cap <= 1024) the new ids.
 */
int ag_extend1(struct kt_agent *a, int slot,
	       struct kvpool_handle h, __u32 new_len,
	       __u32 *out_short, __u32 *nr_new, __u32 *pages,
	       __u32 cap);

int ag_grow(struct kt_agent *a, int slot,
	    struct kvpool_handle h, __u32 new_len);

/* A struct kvpool_batch op on @count entries of @esize bytes. */
int ag_batch(struct kt_agent *a, int slot, unsigned long cmd,
	     __u32 flags, void *entries, __u32 count,
	     size_t esize, struct kvpool_batch *out);

int ag_len_op1(struct kt_agent *a, int slot, unsigned long cmd,
	       struct kvpool_handle h, __u32 len, __u32 *nr);

int ag_commit1(struct kt_agent *a, int slot,
	       struct kvpool_handle h, __u32 len);

int ag_donate1(struct kt_agent *a, int slot,
	       struct kvpool_handle h, __u32 upto, __u32 *nr);

int ag_swa_free1(struct kt_agent *a, int slot,
		 struct kvpool_handle h, __u32 edge, __u32 *nr);

int ag_release1(struct kt_agent *a, int slot,
		struct kvpool_handle h, __u32 flags, __u32 *nr);

int ag_trim1(struct kt_agent *a, int slot,
	     struct kvpool_handle h, __u32 *nr);

int ag_evict(struct kt_agent *a, int slot, __u32 *ids,
	     __u32 count, __u32 *nr);

int ag_attach(struct kt_agent *a, int slot,
	      struct kvpool_handle h, __u32 *ids, __u32 n);

int ag_slot_op(struct kt_agent *a, int slot, unsigned long cmd,
	       __u64 session, struct kvpool_handle *h,
	       __u32 *nr);

int ag_to_slot(struct kt_agent *a, int slot, __u64 session,
	       struct kvpool_handle h);

/* ROW_QUERY: @q filled, @pages (room for @cap) the ids. */
int ag_query(struct kt_agent *a, int slot,
	     struct kvpool_handle h, __u32 *pages, __u32 cap,
	     struct kvpool_row_query *q);

/* A row as ag_query sees it, like kt_snap_row() (kvptest.h). */
void ag_snap_row(struct kt_agent *a, int slot,
		 struct kvpool_handle h, struct kt_row_snap *s);

/* EXPORT in the agent; *xfd gets the file, now the caller's. */
int ag_export(struct kt_agent *a, int slot, __u32 flags,
	      struct kvpool_handle h, __u64 session, int *xfd,
	      __u32 *nr_pages, int *fd_flags);

/* IMPORT in the agent of the caller's file @xfd (sent along). */
int ag_import(struct kt_agent *a, int slot, int xfd,
	      struct kvpool_handle *h, __u32 *nr_pages);

/*
 * Put @n pages into the agent client's prefix cache (unpinned): a row of
 * @n pages of @pt tokens, committed and released with
 * KVPOOL_RELEASE_DONATE. @ids (room for @n, may be NULL) gets their ids.
 */
int ag_make_cache(struct kt_agent *a, int slot, __u32 pt,
		  __u32 n, __u32 *ids);

/* SIGKILL an agent and reap it; returns its wait status. */
int kt_agent_kill(struct kt_pool *p, struct kt_agent *a);


#endif /* KVPTEST_AGENT_H */
