/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvptest_tenv: the tenant tests' fixture, struct kt_tenv: a pool plus
 * its agents (kvptest_agent.h) and cgroups (kvptest_tenant.h), and a
 * teardown that kills and reaps the agents, closes every file of the
 * pool (export files included) and checks that the whole pool came back
 * (export figures too), that VERIFY is clean and that it can be
 * destroyed. It sits above both: the agents use the tenant helpers, and
 * this uses the agents.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#ifndef KVPTEST_TENV_H
#define KVPTEST_TENV_H

#include "kvptest_agent.h"
#include "kvptest_tenant.h"

/* ---- the fixture: pool, agents, cgroups --------------------------------- */

#define KT_TENV_AGENTS	8
#define KT_TENV_CGS	4

struct kt_tenv {
	struct kt_pool pool;
	struct kt_agent ag[KT_TENV_AGENTS];
	int nr_cg;
	char cg[KT_TENV_CGS][128];
	__u64 cgid[KT_TENV_CGS];
	__u64 self_cgid;	/* the test's own cgroup: root's tenant */
	int fd;			/* a client of the test process (root) */
};

/*
 * Make the pool (anyone may open it) and, if @nr_cg, that many child
 * cgroups of /sys/fs/cgroup. Without cgroup v2 the setup FAILS: the tenant
 * tests are meaningless without it.
 */
void kt_tenv_init(struct __test_metadata *_metadata,
		  struct kt_tenv *e, __u32 flags,
		  __u32 nr_pages, __u32 page_tokens,
		  __u32 nr_rows, __u32 row_tokens, int nr_cg);

/* Start agent @i in cgroup @cg (-1: the test's own) as @uid (-1: root). */
struct kt_agent *kt_tenv_agent(struct __test_metadata *_metadata,
			       struct kt_tenv *e, int i,
			       int cg, int uid);

/* The same with a client of the pool already open in slot 0. */
struct kt_agent *kt_tenv_client(struct __test_metadata *_metadata,
				struct kt_tenv *e, int i,
				int cg, int uid);

/* Close every file of this process that keeps the pool: clients, exports. */
void kt_close_pool_files(__u32 id);

/*
 * The whole pool is free, exports included, and the caller's tenant holds
 * nothing: what a fresh client sees once every other file is gone.
 */
void kt_tenv_expect_full(struct __test_metadata *_metadata,
			 struct kt_pool *p, int fd,
			 __u32 nr_clients);

/*
 * Teardown (EXPECT only): VERIFY with everything in place, kill and reap
 * the agents and any other child, close every file of the pool in this
 * process (clients, export files), check from a fresh client that the
 * pool is whole, VERIFY, destroy it and remove the cgroups.
 */
void kt_tenv_fini(struct __test_metadata *_metadata,
		  struct kt_tenv *e);

#endif /* KVPTEST_TENV_H */
