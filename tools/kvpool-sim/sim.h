/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpool-sim: what the monitor (kvpool-sim.c) and the scheduler processes
 * (sched.c) share.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * The monitor maps one struct sim_shared (MAP_SHARED | MAP_ANONYMOUS)
 * before it forks anything. Each scheduler process owns one struct
 * sim_proc in it and is its only writer; the monitor reads them to draw
 * the live view and the summary. Counters only grow, so a process that
 * is SIGKILLed leaves its totals behind and its successor gets a new
 * slot. Nothing here is a lock: a reader may see a counter one step old.
 */
#ifndef KVPOOL_SIM_H
#define KVPOOL_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include <kvpool.h>

#include "kvsched.h"
#include "workload.h"

#define SIM_MAX_TENANTS	3
#define SIM_MAX_PROCS	16
/* The pool the workloads are sized for: 80 GB GPU, 8B model. */
#define SIM_REF_TOKENS	400000.0

/* What a scheduler process does. */
enum sim_role {
	ROLE_FULL,	/* arrivals, prefill, decode, prefix cache */
	ROLE_PREFILL,	/* first turns only: prefill, then export the row */
	ROLE_DECODE,	/* imports rows, decodes, follow-up turns, cache */
};

/* A tenant's workload, at SIM_REF_TOKENS; rates scale with the pool. */
struct sim_workload {
	double sess_rate;	/* new sessions per second */
	u32 shared_median;	/* the shared prompts' length, tokens */
	struct kvs_workload sess;	/* what a session looks like */
	double think_s;		/* mean pause between turns */
	u32 swa_window;		/* tokens */
	u32 draft;		/* speculative tokens allocated ahead */
	double accept;		/* chance each draft token is accepted */
	u32 max_running;	/* requests holding rows, at most */
	u32 prefill_budget;	/* prefill tokens per step */
};

struct sim_tenant_cfg {
	const char *name;
	u32 uid;
	u32 max_pct;		/* limit, % of the pool's pages (0: none) */
	u32 min_pct;		/* guarantee, % (0: none) */
	bool split;		/* a prefill and a decode process */
	struct sim_workload wl;
};

extern const struct sim_tenant_cfg sim_tenants[SIM_MAX_TENANTS];

enum sim_proc_state {
	PROC_FREE,
	PROC_STARTING,
	PROC_RUNNING,
	PROC_DRAINING,
	PROC_DONE,	/* exited cleanly, everything given back */
	PROC_FAILED,	/* a check failed; err says what */
	PROC_KILLED,	/* SIGKILLed on purpose */
};

/* One scheduler process; written by it alone (monitor: state, pid). */
struct sim_proc {
	int state;
	int tenant;
	int role;
	int pid;
	u32 gen;		/* restart number of this tenant's process */
	/* gauges */
	u32 running;		/* requests holding rows */
	u32 waiting;
	u32 slots;
	u32 cache_pages;
	/* counters */
	u64 steps, late_steps;
	u64 arrived, finished;
	u64 gen_tokens;		/* output tokens generated */
	u64 prompt_tokens;	/* prompt tokens of admissions */
	u64 hit_tokens;		/* of which found in the cache or a slot */
	u64 retractions;
	u64 pressure_events;	/* steps that found an ask from the kernel */
	u64 ask_pages;		/* pages the kernel asked back */
	u64 evicted_pages;	/* cache pages evicted, for any reason */
	u64 slot_drops;
	u64 exports, imports;
	u64 enospc, edquot;
	/* the arena: pages stamped, read back (of which imported) */
	u64 arena_written, arena_checked, arena_imported;
	char err[160];
};

struct sim_shared {
	int stop;		/* monitor: drain and exit (sim_load) */
	u32 ntenants;
	struct sim_proc proc[SIM_MAX_PROCS];
};

/* What a scheduler process is told when it is forked. */
struct sim_sched_args {
	struct sim_shared *sh;
	struct sim_proc *me;
	const struct sim_tenant_cfg *cfg;
	int tenant;
	enum sim_role role;
	u32 gen;
	u64 seed;
	const char *pool_path;
	double t0;		/* CLOCK_MONOTONIC seconds of the start */
	double step_s;
	double scale;		/* pool tokens / SIM_REF_TOKENS */
	double share;		/* of the tenant's limit this process keeps to */
	int sock;		/* prefill/decode handoff socket, or -1 */
	/* prefill writes, decode reads: pages it could not get; or -1 */
	int need_fd;
	int verbose;
};

/* Runs one scheduler process; returns its exit status. */
int sim_sched_main(const struct sim_sched_args *a);

#define sim_store(p, v)	__atomic_store_n(&(p), (v), __ATOMIC_RELAXED)
#define sim_load(p)	__atomic_load_n(&(p), __ATOMIC_RELAXED)

#endif /* KVPOOL_SIM_H */
