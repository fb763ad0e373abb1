/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpool-bench: the sides it measures behind one ops table.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Each side holds at most one pool at a time (setup() makes it,
 * teardown() drops it), so that the workloads can run the same op
 * sequence on every side, round by round. The ops answer as libkvpool
 * does: >= 0 on success (a count where libkvpool returns one), a
 * negative errno on failure. Handles are opaque to the workloads: the
 * floor's are its own row indices.
 */
#ifndef KVPOOL_BENCH_H
#define KVPOOL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <kvpool.h>

#include "kvsched.h"

/*
 * The driver's KVP_MAX_BATCH, KVP_MAX_PAGES and KVP_MAX_ROW_TOKENS
 * (driver/kvp_core.h).
 */
#define KB_MAX_BATCH		8192U
#define KB_MAX_PAGES		0x8000000U
#define KB_MAX_ROW_TOKENS	0x1000000U

/* A pool's geometry, as kvpool_pool_create() takes it. */
struct kb_geom {
	u32 nr_pages;
	u32 page_tokens;
	u32 nr_rows;
	u32 row_tokens;
};

struct kb_side {
	const char *name;
	/* Make a pool of @g with one client; 0 or -errno (printed). */
	int (*setup)(const struct kb_geom *g);
	/* Drop it; every row need not be released first. */
	void (*teardown)(void);
	int (*alloc_rows)(struct kvpool_handle *h, u32 n);
	/* Returns the number of new page ids written to @pages. */
	int (*extend)(struct kvpool_extend_entry *e, u32 n, u32 *pages,
		      u32 pages_cap);
	int (*commit)(const struct kvpool_len_entry *e, u32 n);
	/* Returns the number of pages freed. */
	int (*release)(const struct kvpool_handle *h, u32 n);
	int (*to_slot)(struct kvpool_handle h, u64 session);
	int (*from_slot)(u64 session, struct kvpool_handle *h);
};

/* The sides, in the order every round runs them. */
enum { KB_CORE, KB_KERNEL, KB_NULL, KB_FLOOR, KB_NR_SIDES };

extern const struct kb_side kb_core_side;
extern const struct kb_side kb_kernel_side;
extern const struct kb_side kb_floor_side;

/* kvpool-bench agent (agent.c): a mode of its own, not a workload. */
int agent_main(int argc, char **argv);

/*
 * The kernel side: whether it can run here (module loaded, --create),
 * and why not; the open pool's fd (for null) and id (for sysfs).
 */
bool kb_kernel_probe(bool create, const char **why);
int kb_kernel_fd(void);
unsigned int kb_kernel_pool_id(void);
/* One ioctl the driver answers ENOTTY: 0, or -errno if it did not. */
int kb_null_call(int fd);
/* Time @n null calls on @fd; nanoseconds. */
u64 kb_null_round(int fd, u32 n);

/* CLOCK_MONOTONIC, nanoseconds. */
u64 kb_ns(void);

/* Print "kvpool-bench: ..." and exit EXIT_SETUP. */
__noreturn __printf(1, 2) void kb_die(const char *fmt, ...);

/* ---- the runner (kvpool-bench.c) and the workloads (workloads.c) ---- */

#define KB_MAX_ROUNDS	64U
#define KB_MAX_FIGS	2

/*
 * One figure a round measures, as nanoseconds per op for each side and
 * round; reported as ns / @div in @unit and, if @unit2, ns / @div2 in
 * @unit2 (decode: us/step and ns/row).
 */
struct kb_fig {
	const char *workload;	/* NULL: not reported */
	const char *unit;
	double div;
	const char *unit2;
	double div2;
	u32 nioctl;		/* ioctls one op makes: the null's weight */
	bool vs_null;		/* also report kernel / null */
	double ns[KB_NR_SIDES][KB_MAX_ROUNDS];
};

/*
 * A workload at one set of parameters: a pool of @geom on every side,
 * @prepare run once on each (untimed: fragmentation), then rounds of
 * @round, every side in turn, @reps ops each.
 */
struct kb_case {
	char params[96];	/* "B=8 pt=16": the JSON params, k=v */
	struct kb_geom geom;
	u32 rows;		/* B */
	u32 len;		/* tokens: start length, prefill length */
	u32 seg;		/* steps before the rows are rebuilt */
	u32 reps_min, reps_max;
	void (*prepare)(struct kb_case *c, const struct kb_side *s);
	void (*round)(struct kb_case *c, const struct kb_side *s, u32 reps,
		      double *ns);
	struct kb_fig fig[KB_MAX_FIGS];
	/* scratch for the rounds, sized by kb_case_alloc() */
	struct kvpool_handle *h;
	struct kvpool_extend_entry *e;
	struct kvpool_len_entry *l;
	u32 *lens;
	u32 *pages;
	u32 pages_cap;
	const char *state;	/* scale: fresh, churn, random */
};

struct kb_opts {
	const char *workloads;
	const char *json;
	const char *count_only;
	u32 iters;
	u32 rounds;
	u32 scale_max;
	u64 seed;
	double target_ms;	/* a round's length */
	double procs_s;		/* procs: seconds a run */
	double iso_s;		/* isolation: seconds a case */
	bool quick;
	bool create;
};

extern struct kb_opts kb_opt;
/* The sides that run here (kernel and null only with the module). */
extern bool kb_present[KB_NR_SIDES];
extern const char *kb_side_names[KB_NR_SIDES];

bool kb_want(const char *workload);
void kb_case_alloc(struct kb_case *c, u32 rows, u32 pages_cap);
void kb_run_case(struct kb_case *c);
/*
 * Record a figure: the median, min and max of @v[0..n-1] / @div in
 * @unit, and the same / @div2 in @unit2 if not NULL; one table line.
 * NaN values (a figure that could not be had) become JSON nulls.
 */
void kb_record(const char *workload, const char *params, const char *side,
	       const char *unit, const double *v, u32 n, double div,
	       const char *unit2, double div2);
/* The same with a p99, for per-process step times. */
void kb_record_p99(const char *workload, const char *params,
		   const char *side, const char *unit, double median,
		   double min, double max, double p99, u32 n);
/* The same with a p999 too (NaN: none), for isolation's tails. */
void kb_record_tail(const char *workload, const char *params,
		    const char *side, const char *unit, double median,
		    double min, double max, double p99, double p999, u32 n);
void kb_ratio(const char *workload, const char *params, const char *name,
	      double value);
/* A recorded median, or NaN. */
double kb_median_of(const char *workload, const char *params,
		    const char *side, const char *unit);
double kb_median(double *v, u32 n);
void kb_note(const char *fmt, ...) __printf(1, 2);

/* The workloads, each running its cases if kb_want() says so. */
void kb_workloads(void);
/* isolation (isolation.c): one tenant's worst op against another's. */
void kb_isolation(void);

/* ---- processes (workloads.c): procs and isolation fork them ---- */

/* Latencies, in microseconds; @n of them. */
struct kb_lat {
	u64 n;
	double median, p99, p999, min, max, mean;
};

/* Summarize @n nanosecond latencies @ns into *@out; sorts @ns. */
void kb_lat_of(u64 *ns, u64 n, struct kb_lat *out);

/*
 * Drop to @uid (and gid @uid, no supplementary groups) for good: a pool
 * opened after this joins the tenant of @uid. 0 or -errno.
 */
int kb_become(uid_t uid);

/* kb_decode_child()'s rows, and the tokens each reaches at most. */
#define KB_PROC_ROWS		64U
#define KB_PROC_ROW_TOKENS	(320U + 1024U)
/* kb_decode_child(): keep the parent's uid. */
#define KB_SAME_UID		((uid_t)-1)

/*
 * What a forked child sends back, once ready and at the end: @op[0] its
 * ops' latencies (decode steps, tenant A's EXTENDs, control ops),
 * @op[1] tenant A's RELEASEs; the tenant it joined (KVPOOL_STATS'
 * out_tenant_id, 0 for a child with no pool open); 0 or -errno.
 */
struct kb_proc_res {
	struct kb_lat op[2];
	u32 tenant_id;
	int err;
};

/*
 * A forked child's decode steps (KB_PROC_ROWS rows from 320 tokens, by
 * one token a step, released and rebuilt every 1024 steps, untimed) on
 * /dev/kvpool@id for @secs, every step timed. It first drops to @uid
 * (unless KB_SAME_UID) and opens the pool; if @ready >= 0 it writes a
 * struct kb_proc_res there with its tenant; then it waits for a byte on
 * @go. Returns the steps' latencies, or .err.
 */
struct kb_proc_res kb_decode_child(unsigned int id, double secs, uid_t uid,
				   int ready, int go);
/* --count-only: @iters ops of @workload on the core side, untimed. */
int kb_count_only(const char *workload, u32 iters);

/* Ops that must not fail: the error, the side and the op, then exit. */
int kb_must(int ret, const struct kb_side *s, const char *op);

#endif /* KVPOOL_BENCH_H */
