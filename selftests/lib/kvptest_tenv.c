// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvptest_tenv: the tenant tests' fixture (pool, agents, cgroups) and
 * its teardown; see kvptest_tenv.h.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenv.h"

/*
 * Make the pool (anyone may open it) and, if @nr_cg, that many child
 * cgroups of /sys/fs/cgroup. Without cgroup v2 the setup FAILS: the tenant
 * tests are meaningless without it.
 */
void kt_tenv_init(struct __test_metadata *_metadata,
		  struct kt_tenv *e, __u32 flags,
		  __u32 nr_pages, __u32 page_tokens,
		  __u32 nr_rows, __u32 row_tokens, int nr_cg)
{
	int i, ret;

	for (i = 0; i < KT_TENV_AGENTS; i++) {
		e->ag[i].pid = -1;
		e->ag[i].sock = -1;
	}
	e->nr_cg = 0;
	e->fd = -1;
	kt_pool_init(_metadata, &e->pool, flags, nr_pages, page_tokens,
		     nr_rows, row_tokens);
	ASSERT_EQ(0, kt_pool_chmod(e->pool.id, 0666));
	ret = kt_cgroup2_ready();
	ASSERT_EQ(0, ret) TH_LOG("cgroup v2 at " KT_CGROOT ": %s: tenants are cgroup v2 ids, this test needs it",
				 strerror(ret));
	ASSERT_EQ(0, kt_self_cgroup_id(&e->self_cgid));
	for (i = 0; i < nr_cg && i < KT_TENV_CGS; i++) {
		snprintf(e->cg[i], sizeof(e->cg[i]),
			 KT_CGROOT "/kvpool-test-%d-%d", (int)getpid(), i);
		rmdir(e->cg[i]);
		ASSERT_EQ(0, mkdir(e->cg[i], 0755))
			TH_LOG("mkdir %s: %s", e->cg[i], strerror(errno));
		e->nr_cg = i + 1;
		ASSERT_EQ(0, kt_cgroup_id(e->cg[i], &e->cgid[i]));
		ASSERT_NE(e->self_cgid, e->cgid[i]);
	}
	e->fd = kt_pool_open(_metadata, &e->pool);
}

/* Start agent @i in cgroup @cg (-1: the test's own) as @uid (-1: root). */
struct kt_agent *kt_tenv_agent(struct __test_metadata *_metadata,
			       struct kt_tenv *e, int i,
			       int cg, int uid)
{
	kt_agent_start(_metadata, &e->pool, &e->ag[i],
		       cg >= 0 ? e->cg[cg] : NULL, uid, false);
	return &e->ag[i];
}

/* The same with a client of the pool already open in slot 0. */
struct kt_agent *kt_tenv_client(struct __test_metadata *_metadata,
				struct kt_tenv *e, int i,
				int cg, int uid)
{
	struct kt_agent *a = kt_tenv_agent(_metadata, e, i, cg, uid);
	int slot = -1;

	ASSERT_EQ(0, ag_open(a, e->pool.id, &slot));
	ASSERT_EQ(0, slot);
	return a;
}

/* Close every file of this process that keeps the pool: clients, exports. */
void kt_close_pool_files(__u32 id)
{
	char want[32], path[300], link[128];
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int fds[256], n = 0, i;

	if (!d)
		return;
	kt_dev_path(want, sizeof(want), id);
	while ((de = readdir(d)) && n < 256) {
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		if (!strcmp(link, want) || !strcmp(link, KT_EXPORT_LINK))
			fds[n++] = atoi(de->d_name);
	}
	closedir(d);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * The whole pool is free, exports included, and the caller's tenant holds
 * nothing: what a fresh client sees once every other file is gone.
 */
void kt_tenv_expect_full(struct __test_metadata *_metadata,
			 struct kt_pool *p, int fd,
			 __u32 nr_clients)
{
	struct kvpool_stats s;

	kt_expect_pool_full(_metadata, p, fd, nr_clients);
	EXPECT_EQ(0, kt_stats(fd, &s));
	EXPECT_EQ(0, s.out_export_rows);
	EXPECT_EQ(0, s.out_export_pages);
	EXPECT_EQ(0, s.out_tenant_pages);
	EXPECT_EQ(0, s.out_tenant_rows);
}

/*
 * Teardown (EXPECT only): VERIFY with everything in place, kill and reap
 * the agents and any other child, close every file of the pool in this
 * process (clients, export files), check from a fresh client that the
 * pool is whole, VERIFY, destroy it and remove the cgroups.
 */
void kt_tenv_fini(struct __test_metadata *_metadata,
		  struct kt_tenv *e)
{
	struct kt_pool *p = &e->pool;
	int i;

	if (p->created)
		kt_pool_verify_open(_metadata, p);
	for (i = 0; i < KT_TENV_AGENTS; i++)
		if (e->ag[i].pid > 0 || e->ag[i].sock >= 0)
			kt_agent_kill(p, &e->ag[i]);
	kt_pool_reap(p);
	if (p->created) {
		for (i = 0; i < KT_MAX_FDS; i++)
			p->fds[i] = -1;
		kt_close_pool_files(p->id);
		kt_pool_destroy_whole(_metadata, p, kt_tenv_expect_full);
	}
	kt_pool_close_ctl(p);
	for (i = 0; i < e->nr_cg; i++)
		EXPECT_EQ(0, rmdir(e->cg[i])) TH_LOG("rmdir %s: %s", e->cg[i],
						     strerror(errno));
	e->nr_cg = 0;
}
