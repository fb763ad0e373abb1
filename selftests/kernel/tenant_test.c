// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: tenants, their limits and guarantees (KVPOOL_FEAT_QUOTA).
 *
 * A tenant is the opener's cgroup v2 id and euid, fixed at open. The tenants
 * here are agents (kvptest_agent.h): processes that join one of two
 * child cgroups of /sys/fs/cgroup and drop to uid 1001 or 1002 before they
 * open the pool (chmod 0666 by the setup), so every combination of cgroup
 * and uid is its own tenant. cgroup v2 is mounted when the guest has not:
 * without it the setup fails, it does not skip.
 *
 * Covered: identity (cgroup and uid both count, fixed at open, kept across
 * SCM_RIGHTS), tenant lifetime, max_pages and max_rows (EDQUOT with the
 * exact out_short, nothing taken, checked before ENOSPC, for every client
 * of the tenant, rows and slots and cache pages all counting), guarantees
 * (others' unmet minimum is not free: ENOSPC with the exact shortfall, also
 * under a concurrent greedy tenant), limits lowered below use at run time
 * (nothing taken, growth refused, OVER_MAX pressure with the documented
 * shares, raised again), CTL_TENANT_LIST, CTL_TENANT_SET validation, the
 * control ops without CAP_SYS_ADMIN (EPERM; EACCES at open for nobody),
 * STATS out_tenant_* and fdinfo kvpool-tenant, and what a non-admin client
 * sees of others.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenv.h"

#include <sched.h>

#define NR_PAGES	1025	/* page 0 reserved: 1024 usable */
#define USABLE		1024
#define PT		4
#define NR_ROWS		65	/* row 0 reserved: 64 usable */
#define ROW_TOKENS	4096	/* 1024 pages */
#define T(n)		((n) * PT)	/* tokens of n whole pages */

#define UID_A		1001
#define UID_B		1002

FIXTURE(tenant) {
	struct kt_tenv e;
};

FIXTURE_SETUP(tenant)
{
	kt_tenv_init(_metadata, &self->e, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, PT, NR_ROWS, ROW_TOKENS, 2);
}

FIXTURE_TEARDOWN(tenant)
{
	kt_tenv_fini(_metadata, &self->e);
}

/* The tenant id a client of an agent is in, or KT_BAD_IDX. */
static __u32 ag_tid(struct kt_agent *a, int slot)
{
	struct kvpool_stats s;

	return ag_stats(a, slot, &s) ? KT_BAD_IDX : s.out_tenant_id;
}

static __u32 local_tid(int fd)
{
	struct kvpool_stats s;

	return kt_stats(fd, &s) ? KT_BAD_IDX : s.out_tenant_id;
}

/* TENANT_LIST, whole. */
static int list_all(struct kt_tenv *e, struct kvpool_tenant_info *ti,
		    __u32 *nr)
{
	memset(ti, 0, KT_MAX_LIST * sizeof(*ti));
	return kt_tenant_list(e->pool.ctl, e->pool.id, ti, KT_MAX_LIST, nr);
}

/* Take n pages into an agent's prefix cache. */
static int ag_cache_pages(struct kt_agent *a, int slot, __u32 n,
			  __u32 *ids)
{
	return ag_make_cache(a, slot, PT, n, ids);
}

/*
 * Identity: cgroup and uid both make the tenant, all clients of one
 * identity share it, and it is fixed at open: moving the process to
 * another cgroup or passing the file to another tenant's process changes
 * nothing for files already open.
 */
TEST_F(tenant, identity)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST];
	struct kt_agent *a, *b, *c, *d;
	__u32 ids[5], nr, i, j, ta2, tmoved;
	struct kvpool_handle h;
	int s1, s2, fd, bs;
	__u64 v;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	c = kt_tenv_client(_metadata, e, 2, 0, UID_B);	/* A's cgroup */
	d = kt_tenv_client(_metadata, e, 3, 1, UID_A);	/* A's uid */
	ASSERT_EQ(0, ag_open(a, e->pool.id, &s1));

	ids[0] = ag_tid(a, 0);
	ids[1] = ag_tid(b, 0);
	ids[2] = ag_tid(c, 0);
	ids[3] = ag_tid(d, 0);
	ids[4] = local_tid(e->fd);
	ta2 = ag_tid(a, s1);
	EXPECT_EQ(ids[0], ta2);
	for (i = 0; i < 5; i++) {
		ASSERT_NE(KT_BAD_IDX, ids[i]);
		for (j = 0; j < i; j++)
			EXPECT_NE(ids[i], ids[j]) TH_LOG("tenants %u and %u", i, j);
	}

	/* fdinfo names the same tenant. */
	ASSERT_EQ(0, ag_fdinfo(a, 0, "kvpool-tenant", &v));
	EXPECT_EQ(ids[0], v);
	ASSERT_EQ(0, ag_fdinfo(a, s1, "kvpool-tenant", &v));
	EXPECT_EQ(ids[0], v);
	ASSERT_EQ(0, ag_fdinfo(b, 0, "kvpool-tenant", &v));
	EXPECT_EQ(ids[1], v);
	ASSERT_EQ(0, kt_fdinfo_u64(e->fd, "kvpool-tenant", &v));
	EXPECT_EQ(ids[4], v);

	/* The list: cgroup ids are the folders' inode numbers. */
	ASSERT_EQ(0, list_all(e, ti, &nr));
	ASSERT_EQ(5, nr);
	EXPECT_EQ(5, kt_sysfs_val(e->pool.id, "nr_tenants"));
	for (i = 0; i < nr; i++) {
		__u64 cg = ~0ull;
		__u32 uid = ~0u, clients = 1;

		if (ti[i].tenant_id == ids[0]) {
			cg = e->cgid[0];
			uid = UID_A;
			clients = 2;
		} else if (ti[i].tenant_id == ids[1]) {
			cg = e->cgid[1];
			uid = UID_B;
		} else if (ti[i].tenant_id == ids[2]) {
			cg = e->cgid[0];
			uid = UID_B;
		} else if (ti[i].tenant_id == ids[3]) {
			cg = e->cgid[1];
			uid = UID_A;
		} else if (ti[i].tenant_id == ids[4]) {
			cg = e->self_cgid;
			uid = 0;
		} else {
			EXPECT_TRUE(false) TH_LOG("unknown tenant %u", ti[i].tenant_id);
			continue;
		}
		EXPECT_EQ(cg, ti[i].cgroup_id) TH_LOG("tenant %u", ti[i].tenant_id);
		EXPECT_EQ(uid, ti[i].uid);
		EXPECT_EQ(clients, ti[i].nr_clients);
		EXPECT_EQ(0, ti[i].pages);
		EXPECT_EQ(0, ti[i].rows);
		EXPECT_EQ(0, ti[i].max_pages);
		EXPECT_EQ(0, ti[i].min_pages);
		EXPECT_EQ(0, ti[i].max_rows);
		EXPECT_EQ(0, ti[i].ask_pages);
		EXPECT_EQ(0, ti[i].flags);
		EXPECT_EQ(0, ti[i].path_offset);
		EXPECT_EQ(0, ti[i].label[0]);
	}

	/* Moved to B's cgroup: open files keep A, a new open is (B's cg, A's uid). */
	ASSERT_EQ(0, kt_cgroup_move(e->cg[1], a->pid));
	EXPECT_EQ(ids[0], ag_tid(a, 0));
	EXPECT_EQ(ids[0], ag_tid(a, s1));
	ASSERT_EQ(0, ag_open(a, e->pool.id, &s2));
	tmoved = ag_tid(a, s2);
	EXPECT_EQ(ids[3], tmoved);

	/* A's file in root's and then B's hands is still A's client. */
	ASSERT_EQ(0, ag_give_fd(a, 0, &fd));
	ASSERT_LE(0, fd);
	EXPECT_EQ(ids[0], local_tid(fd));
	ASSERT_EQ(0, ag_take_fd(b, fd, &bs));
	close(fd);
	EXPECT_EQ(ids[0], ag_tid(b, bs));
	EXPECT_EQ(ids[1], ag_tid(b, 0));
	ASSERT_EQ(0, ag_alloc1(b, bs, &h));
	ASSERT_EQ(0, ag_grow(b, bs, h, T(3)));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ids[0], &ti[0]));
	EXPECT_EQ(1, ti[0].rows);
	EXPECT_EQ(3, ti[0].pages);
	EXPECT_EQ(2, ti[0].nr_clients);	/* a's slot 0 (b has it too) and s1 */
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ids[1], &ti[1]));
	EXPECT_EQ(0, ti[1].rows);
	EXPECT_EQ(0, ti[1].pages);
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ids[3], &ti[3]));
	EXPECT_EQ(2, ti[3].nr_clients);	/* d's and a's s2 */
	/* Only the last holder's close gives the rows back. */
	ASSERT_EQ(0, ag_close(a, 0));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ids[0], &ti[0]));
	EXPECT_EQ(1, ti[0].rows);
	ASSERT_EQ(0, ag_close(b, bs));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ids[0], &ti[0]));
	EXPECT_EQ(0, ti[0].rows);
	EXPECT_EQ(0, ti[0].pages);
	EXPECT_EQ(1, ti[0].nr_clients);
}

/*
 * A tenant lives from its first client or CTL_TENANT_SET until it has no
 * clients, unless limits were set: a configured tenant stays.
 */
TEST_F(tenant, lifetime)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti;
	struct kvpool_ctl_tenant t;
	struct kvpool_stats s;
	struct kt_agent *a, *b;
	__u32 ta;
	int sl;

	EXPECT_EQ(1, kt_sysfs_val(e->pool.id, "nr_tenants"));
	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	EXPECT_EQ(2, kt_sysfs_val(e->pool.id, "nr_tenants"));
	ta = ag_tid(a, 0);
	ASSERT_EQ(0, ag_close(a, 0));
	EXPECT_EQ(1, kt_sysfs_val(e->pool.id, "nr_tenants"));
	EXPECT_EQ(ENOENT, kt_tenant_get(e->pool.ctl, e->pool.id, ta, &ti));
	EXPECT_EQ(ENOENT, kt_tenant_limits_id(e->pool.ctl, e->pool.id, ta,
					      0, 0, 0));

	/* Configured before any client: made, and kept. */
	kt_tenant_init(&t, e->pool.id, e->cgid[1], UID_B, 10, 0, 0, "cfg");
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	EXPECT_EQ(2, kt_sysfs_val(e->pool.id, "nr_tenants"));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_EQ(0, ti.nr_clients);
	EXPECT_EQ(e->cgid[1], ti.cgroup_id);
	EXPECT_EQ(UID_B, ti.uid);
	EXPECT_EQ(10, ti.max_pages);
	EXPECT_STREQ("cfg", ti.label);

	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	ASSERT_EQ(0, ag_stats(b, 0, &s));
	EXPECT_EQ(t.tenant_id, s.out_tenant_id);
	EXPECT_EQ(10, s.out_tenant_max_pages);
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_EQ(1, ti.nr_clients);
	ASSERT_EQ(0, ag_close(b, 0));
	EXPECT_EQ(2, kt_sysfs_val(e->pool.id, "nr_tenants"));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_EQ(0, ti.nr_clients);
	EXPECT_EQ(10, ti.max_pages);
	/* Reopening finds it again. */
	ASSERT_EQ(0, ag_open(b, e->pool.id, &sl));
	EXPECT_EQ(t.tenant_id, ag_tid(b, sl));
}

/*
 * max_pages: growth past it is EDQUOT with the exact excess, for every
 * client of the tenant, nothing taken; other tenants are not limited;
 * EDQUOT comes before the pool's ENOSPC.
 */
TEST_F(tenant, max_pages)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_stats r0, r1, a0, a1, s;
	struct kt_row_snap *x0, *x1;
	struct kvpool_handle h1, h2, hb1, hb2;
	struct kt_agent *a, *b;
	__u32 id, sh, nn;
	int as;

	x0 = calloc(4, sizeof(*x0));
	ASSERT_NE(NULL, x0);
	x1 = x0 + 2;
	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	ASSERT_EQ(0, ag_open(a, e->pool.id, &as));

	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 40, 0, 0, &id));
	EXPECT_EQ(ag_tid(a, 0), id);
	ASSERT_EQ(0, ag_stats(a, as, &s));
	EXPECT_EQ(40, s.out_tenant_max_pages);
	EXPECT_EQ(0, s.out_tenant_min_pages);
	EXPECT_EQ(0, s.out_tenant_max_rows);

	ASSERT_EQ(0, ag_alloc1(a, 0, &h1));
	ASSERT_EQ(0, ag_grow(a, 0, h1, T(30)));
	ASSERT_EQ(0, ag_alloc1(a, as, &h2));
	ASSERT_EQ(0, ag_grow(a, as, h2, T(10) - 2));	/* 40 pages: at max */

	ASSERT_EQ(0, kt_stats(e->fd, &r0));
	ASSERT_EQ(0, ag_stats(a, 0, &a0));
	ag_snap_row(a, 0, h1, &x0[0]);
	ag_snap_row(a, as, h2, &x0[1]);
	ASSERT_EQ(0, x0[0].err);
	EXPECT_EQ(40, a0.out_tenant_pages);

	sh = 0;
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, h1, T(30) + 1, &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(EDQUOT, ag_extend1(a, as, h2, T(15), &sh, NULL, NULL, 0));
	EXPECT_EQ(5, sh);
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	ASSERT_EQ(0, ag_stats(a, 0, &a1));
	ag_snap_row(a, 0, h1, &x1[0]);
	ag_snap_row(a, as, h2, &x1[1]);
	EXPECT_STREQ("", kt_stats_diff(&r0, &r1, KT_ST_ALL));
	EXPECT_STREQ("", kt_stats_diff(&a0, &a1, KT_ST_ALL));
	EXPECT_STREQ("", kt_row_diff(&x0[0], &x1[0]));
	EXPECT_STREQ("", kt_row_diff(&x0[1], &x1[1]));

	/* At max, the rest of the last page is the row's already. */
	EXPECT_EQ(0, ag_extend1(a, as, h2, T(10), &sh, &nn, NULL, 0));
	EXPECT_EQ(0, nn);

	/* Another tenant is not limited by A's max. */
	ASSERT_EQ(0, ag_alloc1(b, 0, &hb1));
	EXPECT_EQ(0, ag_grow(b, 0, hb1, T(500)));
	ASSERT_EQ(0, ag_alloc1(b, 0, &hb2));
	EXPECT_EQ(0, ag_grow(b, 0, hb2, T(480)));	/* 4 pages left */

	/* Past max and past free: EDQUOT, with the quota's excess. */
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, h1, T(40), &sh, NULL, NULL, 0));
	EXPECT_EQ(10, sh);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 100, 0, 0, NULL));
	EXPECT_EQ(ENOSPC, ag_extend1(a, 0, h1, T(40), &sh, NULL, NULL, 0));
	EXPECT_EQ(6, sh);
	EXPECT_EQ(0, ag_grow(a, 0, h1, T(34)));
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	EXPECT_EQ(0, r1.out_free_pages);
	ASSERT_EQ(0, ag_stats(a, 0, &a1));
	EXPECT_EQ(44, a1.out_tenant_pages);
	EXPECT_EQ(34, a1.out_client_pages);
	EXPECT_EQ(100, a1.out_tenant_max_pages);
	ASSERT_EQ(0, ag_stats(a, as, &a1));
	EXPECT_EQ(44, a1.out_tenant_pages);
	EXPECT_EQ(10, a1.out_client_pages);
	ASSERT_EQ(0, ag_stats(b, 0, &s));
	EXPECT_EQ(980, s.out_tenant_pages);
	EXPECT_EQ(0, s.out_tenant_max_pages);
	free(x0);
}

/*
 * A tenant over max_pages (its limit lowered below use) is refused growth,
 * but an extend that takes no page (the same length, or the rest of its
 * last partial page) takes it nowhere past max: nothing to refuse.
 */
TEST_F(tenant, over_max_extend_takes_nothing)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle h;
	struct kt_agent *a;
	__u32 sh = 0, nn = ~0u;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 10, 0, 0, NULL));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h));
	ASSERT_EQ(0, ag_grow(a, 0, h, T(10) - 2));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 8, 0, 0, NULL));

	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, h, T(10) + 1, &sh, NULL, NULL, 0));
	EXPECT_EQ(3, sh);
	EXPECT_EQ(0, ag_extend1(a, 0, h, T(10) - 2, &sh, &nn, NULL, 0))
		TH_LOG("an extend to the same length takes no page (out_short %u)",
		       sh);
	EXPECT_EQ(0, ag_extend1(a, 0, h, T(10), &sh, &nn, NULL, 0))
		TH_LOG("the rest of the last page takes no page (out_short %u)",
		       sh);
	EXPECT_EQ(0, nn);
}

/* Pages in slots and in the prefix cache count for max_pages too. */
TEST_F(tenant, max_pages_counts_slots_and_cache)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle h1, h2, h3;
	struct kvpool_row_query q;
	struct kvpool_stats s;
	struct kt_agent *a;
	__u32 ids[8], sh, nr;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 20, 0, 0, NULL));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h1));
	ASSERT_EQ(0, ag_grow(a, 0, h1, T(8)));
	ASSERT_EQ(0, ag_commit1(a, 0, h1, T(8)));
	ASSERT_EQ(0, ag_query(a, 0, h1, ids, 8, &q));
	ASSERT_EQ(0, ag_donate1(a, 0, h1, T(8), &nr));
	EXPECT_EQ(8, nr);
	ASSERT_EQ(0, ag_stats(a, 0, &s));
	EXPECT_EQ(8, s.out_tenant_pages);
	EXPECT_EQ(0, s.out_client_pages);
	EXPECT_EQ(8, s.out_client_cache_pages);

	ASSERT_EQ(0, ag_alloc1(a, 0, &h2));
	ASSERT_EQ(0, ag_grow(a, 0, h2, T(6)));
	ASSERT_EQ(0, ag_to_slot(a, 0, 7, h2));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h3));
	ASSERT_EQ(0, ag_grow(a, 0, h3, T(6)));
	ASSERT_EQ(0, ag_stats(a, 0, &s));
	EXPECT_EQ(20, s.out_tenant_pages);
	EXPECT_EQ(3, s.out_tenant_rows);
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, h3, T(7), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);

	/* Released, the donor's pages stay in the cache: still counted. */
	ASSERT_EQ(0, ag_release1(a, 0, h1, 0, &nr));
	EXPECT_EQ(0, nr);
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, h3, T(7), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, ag_evict(a, 0, ids, 2, &nr));
	EXPECT_EQ(2, nr);
	EXPECT_EQ(0, ag_grow(a, 0, h3, T(8)));
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, h3, T(9), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, ag_slot_op(a, 0, KVPOOL_SLOT_RELEASE, 7, NULL, &nr));
	EXPECT_EQ(6, nr);
	EXPECT_EQ(0, ag_grow(a, 0, h3, T(14)));
	ASSERT_EQ(0, ag_stats(a, 0, &s));
	EXPECT_EQ(20, s.out_tenant_pages);
	EXPECT_EQ(1, s.out_tenant_rows);
}

/*
 * max_rows: held and parked rows count, for every client of the tenant;
 * lowering it below use takes no row; EDQUOT before the pool's ENOSPC.
 */
TEST_F(tenant, max_rows)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle h[64];
	struct kvpool_stats r0, r1, a0, a1;
	struct kt_agent *a, *b;
	__u32 sh;
	int as;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	ASSERT_EQ(0, ag_open(a, e->pool.id, &as));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 0, 3, NULL));
	ASSERT_EQ(0, ag_alloc(a, 0, 2, h, NULL));

	ASSERT_EQ(0, kt_stats(e->fd, &r0));
	ASSERT_EQ(0, ag_stats(a, 0, &a0));
	EXPECT_EQ(2, a0.out_tenant_rows);
	EXPECT_EQ(3, a0.out_tenant_max_rows);
	sh = 0;
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 2, h + 2, &sh));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	ASSERT_EQ(0, ag_stats(a, 0, &a1));
	EXPECT_STREQ("", kt_stats_diff(&r0, &r1, KT_ST_ALL));
	EXPECT_STREQ("", kt_stats_diff(&a0, &a1, KT_ST_ALL));

	/* A parked row is still the tenant's. */
	ASSERT_EQ(0, ag_to_slot(a, 0, 1, h[1]));
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 2, h + 2, &sh));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, ag_alloc(a, 0, 1, h + 2, NULL));
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 1, h + 3, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(EDQUOT, ag_alloc(a, as, 1, h + 3, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(0, ag_alloc(b, 0, 5, h + 10, NULL));

	/* Lowered below use: nothing taken, still refused. */
	ASSERT_EQ(0, kt_stats(e->fd, &r0));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 0, 1, NULL));
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	EXPECT_STREQ("", kt_stats_diff(&r0, &r1, KT_ST_ALL));
	ASSERT_EQ(0, ag_stats(a, 0, &a1));
	EXPECT_EQ(3, a1.out_tenant_rows);
	EXPECT_EQ(2, a1.out_client_rows);
	EXPECT_EQ(1, a1.out_client_slots);
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 1, h + 3, &sh));
	EXPECT_EQ(3, sh);
	ASSERT_EQ(0, ag_slot_op(a, 0, KVPOOL_SLOT_RELEASE, 1, NULL, NULL));
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 1, h + 3, &sh));
	EXPECT_EQ(2, sh);

	/* No limit: 10 more. */
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 0, 0, NULL));
	ASSERT_EQ(0, ag_alloc(a, 0, 10, h + 20, NULL));
	/* A holds 12, B 5: 47 free. B takes 46. */
	ASSERT_EQ(0, ag_alloc(b, 0, 46, h + 16, NULL));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 0, 13, NULL));
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 2, h, &sh));	/* and ENOSPC */
	EXPECT_EQ(1, sh);
	EXPECT_EQ(0, ag_alloc(a, 0, 1, h, NULL));
	EXPECT_EQ(EDQUOT, ag_alloc(a, 0, 1, h, &sh));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 0, 0, NULL));
	EXPECT_EQ(ENOSPC, ag_alloc(a, 0, 1, h, &sh));
	EXPECT_EQ(1, sh);
}

/*
 * min_pages: what a tenant is guaranteed and does not hold is not free to
 * others. Exact shortfalls as guarantees are added, met, and unmet again;
 * cache pages count towards the guarantee.
 */
TEST_F(tenant, guarantee)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle a1, a2, a3, b1, b2, b3, c1, hr;
	struct kvpool_extend_entry ent;
	struct kvpool_stats r0, r1, s;
	struct kvpool_extend x;
	struct kt_agent *a, *b, *c;
	__u32 sh, pages[4];

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	c = kt_tenv_client(_metadata, e, 2, 0, UID_B);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 300, 0, NULL));
	ASSERT_EQ(0, ag_stats(a, 0, &s));
	EXPECT_EQ(300, s.out_tenant_min_pages);
	EXPECT_EQ(0, s.out_tenant_pages);

	/* B may take 1024 - 300. */
	ASSERT_EQ(0, ag_alloc1(b, 0, &b1));
	ASSERT_EQ(0, kt_stats(e->fd, &r0));
	sh = 0;
	EXPECT_EQ(ENOSPC, ag_extend1(b, 0, b1, T(1024), &sh, NULL, NULL, 0));
	EXPECT_EQ(300, sh);
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	EXPECT_STREQ("", kt_stats_diff(&r0, &r1, KT_ST_ALL));
	EXPECT_EQ(0, ag_grow(b, 0, b1, T(724)));
	ASSERT_EQ(0, ag_alloc1(b, 0, &b2));
	EXPECT_EQ(ENOSPC, ag_extend1(b, 0, b2, T(1), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	/* So may root: the same for every other tenant. */
	ASSERT_EQ(0, kt_row_alloc(e->fd, 1, &hr, NULL));
	ent = (struct kvpool_extend_entry){ .handle = hr, .new_len = 1 };
	EXPECT_EQ(ENOSPC, kt_extend(e->fd, &ent, 1, pages, 4, &x));
	EXPECT_EQ(1, x.out_short);

	/* A gets its 300, not one more. */
	ASSERT_EQ(0, ag_alloc1(a, 0, &a1));
	EXPECT_EQ(0, ag_grow(a, 0, a1, T(300)));
	EXPECT_EQ(ENOSPC, ag_extend1(a, 0, a1, T(301), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, ag_stats(a, 0, &s));
	EXPECT_EQ(300, s.out_tenant_pages);
	EXPECT_EQ(0, s.out_free_pages);

	/* Met, A is like anyone else; a second guarantee applies to A too. */
	ASSERT_EQ(0, ag_release1(b, 0, b1, 0, NULL));
	EXPECT_EQ(0, ag_grow(a, 0, a1, T(400)));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_B, 0, 200, 0, NULL));
	EXPECT_EQ(ENOSPC, ag_extend1(b, 0, b2, T(425), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(0, ag_grow(b, 0, b2, T(424)));
	EXPECT_EQ(ENOSPC, ag_extend1(a, 0, a1, T(401), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, ag_alloc1(c, 0, &c1));
	EXPECT_EQ(0, ag_grow(c, 0, c1, T(200)));

	/* A lets go: its 300 are held back again. */
	ASSERT_EQ(0, ag_release1(a, 0, a1, 0, NULL));
	ASSERT_EQ(0, ag_alloc1(b, 0, &b3));
	EXPECT_EQ(ENOSPC, ag_extend1(b, 0, b3, T(101), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);

	/* A's cache pages are A's pages: 50 of the 300 met. */
	ASSERT_EQ(0, ag_cache_pages(a, 0, 50, NULL));
	ASSERT_EQ(0, ag_stats(a, 0, &s));
	EXPECT_EQ(50, s.out_tenant_pages);
	EXPECT_EQ(350, s.out_free_pages);
	EXPECT_EQ(ENOSPC, ag_extend1(b, 0, b3, T(101), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(0, ag_grow(b, 0, b3, T(100)));
	EXPECT_EQ(ENOSPC, ag_extend1(b, 0, b3, T(101), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, ag_alloc1(a, 0, &a2));
	EXPECT_EQ(0, ag_grow(a, 0, a2, T(250)));
	ASSERT_EQ(0, ag_alloc1(a, 0, &a3));
	EXPECT_EQ(ENOSPC, ag_extend1(a, 0, a3, T(1), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	EXPECT_EQ(0, r1.out_free_pages);
	kt_check_identities(_metadata, &e->pool, &r1);
}

/*
 * Under contention: a greedy tenant grabs all it can as fast as it can
 * while A, guaranteed 256 pages, takes them bit by bit: A is never refused
 * and the greedy one never holds more than 1024 - 256.
 */
TEST_F(tenant, guarantee_under_contention)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle ha;
	int ready[2], stop[2], status, k;
	struct kt_agent *a;
	pid_t pid;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 256, 0, NULL));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(stop));
	pid = kt_pool_fork(_metadata, &e->pool);
	if (pid == 0) {
		struct kvpool_handle h[16];
		unsigned int seed = getpid(), refused = 0, iter = 0;
		bool held[16] = { false }, told = false;
		__u32 len[16] = { 0 };
		struct pollfd pfd;
		int fd, i;

		close(ready[0]);
		close(stop[1]);
		close(e->fd);
		CHILD_CHECK(kt_cgroup_move(e->cg[1], 0) == 0);
		CHILD_CHECK(kt_become(UID_B) == 0);
		fd = kt_open_id(e->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		pfd.fd = stop[0];
		pfd.events = POLLIN;
		for (;; iter++) {
			struct kvpool_extend_entry ent;
			struct kvpool_extend x;
			static __u32 pages[64];
			struct kvpool_stats s;
			__u32 want;
			int ret;

			if (poll(&pfd, 1, 0))
				break;
			i = rand_r(&seed) % 16;
			if (!held[i]) {
				CHILD_CHECK(kt_row_alloc(fd, 1, &h[i], NULL) == 0);
				held[i] = true;
				len[i] = 0;
			}
			want = 1 + rand_r(&seed) % 32;
			if (len[i] + T(want) > ROW_TOKENS)
				want = (ROW_TOKENS - len[i]) / PT;
			ent = (struct kvpool_extend_entry){
				.handle = h[i], .new_len = len[i] + T(want),
			};
			ret = kt_extend(fd, &ent, 1, pages, 64, &x);
			CHILD_CHECK(ret == 0 || ret == ENOSPC);
			if (ret == ENOSPC) {
				CHILD_CHECK(x.out_short >= 1 && x.out_short <= want);
				if (!refused++ && !told) {
					kt_child_signal(ready[1], 'r');
					told = true;
				}
			} else {
				len[i] += T(want);
			}
			CHILD_CHECK(kt_stats(fd, &s) == 0);
			CHILD_CHECK(s.out_tenant_pages <= USABLE - 256);
			if (rand_r(&seed) % 8 == 0) {
				i = rand_r(&seed) % 16;
				if (held[i]) {
					CHILD_CHECK(kt_release1(fd, h[i], NULL) == 0);
					held[i] = false;
				}
			}
		}
		fprintf(stderr, "# greedy tenant: %u ops, %u refused\n", iter,
			refused);
		CHILD_CHECK(refused > 0);
		_exit(0);
	}
	close(ready[1]);
	close(stop[0]);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	ASSERT_EQ(0, ag_alloc1(a, 0, &ha));
	for (k = 1; k <= 16; k++) {
		EXPECT_EQ(0, ag_grow(a, 0, ha, T(16 * k)))
			TH_LOG("A refused at %d pages of its 256", 16 * k);
		kt_sleep_ms(10);
	}
	close(stop[1]);
	status = kt_pool_wait(&e->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("greedy child status %#x",
						status);
	close(ready[0]);
}

/*
 * The pool's guarantees together may not exceed its pages (EINVAL, nothing
 * changed, no tenant made); a tenant's new min replaces its old one.
 */
TEST_F(tenant, guarantee_sum)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info l0[KT_MAX_LIST], l1[KT_MAX_LIST];
	struct kvpool_extend_entry ent;
	struct kvpool_handle hr;
	struct kvpool_extend x;
	__u32 n0, n1, pages[4];

	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 600, 0, NULL));
	ASSERT_EQ(0, list_all(e, l0, &n0));
	EXPECT_EQ(EINVAL, kt_tenant_limits(e->pool.ctl, e->pool.id,
					   e->cgid[1], UID_B, 0, 425, 0,
					   NULL));
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(n0, n1);
	EXPECT_EQ(0, memcmp(l0, l1, sizeof(l0)));
	EXPECT_EQ(n0, kt_sysfs_val(e->pool.id, "nr_tenants"));
	EXPECT_EQ(EINVAL, kt_tenant_limits(e->pool.ctl, e->pool.id,
					   e->cgid[0], UID_A, 0, USABLE + 1,
					   0, NULL));
	EXPECT_EQ(EINVAL, kt_tenant_limits(e->pool.ctl, e->pool.id,
					   e->cgid[0], UID_A, 0, NR_PAGES,
					   0, NULL))
		TH_LOG("the reserved page is no page to guarantee");
	EXPECT_EQ(EINVAL, kt_tenant_limits(e->pool.ctl, e->pool.id,
					   e->cgid[0], UID_A, 0, 0xffffffffu,
					   0, NULL));
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(0, memcmp(l0, l1, sizeof(l0)));

	EXPECT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[1],
				      UID_B, 0, 424, 0, NULL));	/* 1024 */
	EXPECT_EQ(EINVAL, kt_tenant_limits(e->pool.ctl, e->pool.id,
					   e->cgid[0], UID_A, 0, 601, 0,
					   NULL));
	EXPECT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 0, 500, 0, NULL));
	EXPECT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[1],
				      UID_B, 0, 524, 0, NULL));
	/* Min with max: min <= max, max 0 being none. */
	EXPECT_EQ(EINVAL, kt_tenant_limits(e->pool.ctl, e->pool.id,
					   e->cgid[1], UID_B, 523, 524, 0,
					   NULL));
	EXPECT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[1],
				      UID_B, 524, 524, 0, NULL));

	/* All of the pool is someone's: nothing is free to root. */
	ASSERT_EQ(0, kt_row_alloc(e->fd, 1, &hr, NULL));
	ent = (struct kvpool_extend_entry){ .handle = hr, .new_len = 1 };
	EXPECT_EQ(ENOSPC, kt_extend(e->fd, &ent, 1, pages, 4, &x));
	EXPECT_EQ(1, x.out_short);
}

/*
 * A limit lowered below use at run time takes nothing, refuses growth and
 * asks the tenant's clients to shrink their caches (OVER_MAX, each its
 * share of the excess); evicting the ask clears it; raising the limit
 * allows growth again.
 */
TEST_F(tenant, lower_limit_at_runtime)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_stats r0, r1, a0, a1;
	struct kt_row_snap *x0, *x1;
	struct kvpool_pressure pr;
	struct kvpool_tenant_info ti;
	struct kvpool_handle r, r3;
	__u32 c0[30], c1[20], sh, ta;
	struct kt_agent *a, *b;
	int s1, ret, rev;

	x0 = calloc(2, sizeof(*x0));
	ASSERT_NE(NULL, x0);
	x1 = x0 + 1;
	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	ASSERT_EQ(0, ag_open(a, e->pool.id, &s1));
	ta = ag_tid(a, 0);
	ASSERT_EQ(0, ag_alloc1(a, 0, &r));
	ASSERT_EQ(0, ag_grow(a, 0, r, T(100)));
	ASSERT_EQ(0, ag_cache_pages(a, 0, 30, c0));
	ASSERT_EQ(0, ag_cache_pages(a, s1, 20, c1));
	ASSERT_EQ(0, ag_cache_pages(b, 0, 10, NULL));

	ASSERT_EQ(0, kt_stats(e->fd, &r0));
	ASSERT_EQ(0, ag_stats(a, 0, &a0));
	EXPECT_EQ(150, a0.out_tenant_pages);
	ag_snap_row(a, 0, r, x0);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 120, 0, 0, NULL));
	ASSERT_EQ(0, kt_stats(e->fd, &r1));
	ASSERT_EQ(0, ag_stats(a, 0, &a1));
	ag_snap_row(a, 0, r, x1);
	EXPECT_STREQ("", kt_stats_diff(&r0, &r1, KT_ST_ALL));
	EXPECT_STREQ("", kt_stats_diff(&a0, &a1, KT_ST_USAGE));
	EXPECT_STREQ("", kt_row_diff(x0, x1));
	EXPECT_EQ(150, a1.out_tenant_pages);
	EXPECT_EQ(120, a1.out_tenant_max_pages);

	/* Growth refused; rows (no row limit) are not. */
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, r, T(101), &sh, NULL, NULL, 0));
	EXPECT_EQ(31, sh);
	ASSERT_EQ(0, ag_alloc1(a, s1, &r3));
	EXPECT_EQ(EDQUOT, ag_extend1(a, s1, r3, T(1), &sh, NULL, NULL, 0));
	EXPECT_EQ(31, sh);

	/* Asked: 30 over, shared 30:20 by the two clients' caches. */
	ASSERT_EQ(0, ag_pressure(a, 0, &pr));
	EXPECT_EQ(18, pr.out_ask_pages);
	EXPECT_EQ(KVPOOL_PRESSURE_OVER_MAX, pr.out_reasons);
	ASSERT_EQ(0, ag_pressure(a, s1, &pr));
	EXPECT_EQ(12, pr.out_ask_pages);
	EXPECT_EQ(KVPOOL_PRESSURE_OVER_MAX, pr.out_reasons);
	ASSERT_EQ(0, ag_pressure(b, 0, &pr));
	EXPECT_EQ(0, pr.out_ask_pages);
	EXPECT_EQ(0, pr.out_reasons);
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ta, &ti));
	EXPECT_EQ(30, ti.ask_pages);
	ASSERT_EQ(0, ag_poll(a, 0, 0, &ret, &rev));
	EXPECT_EQ(1, ret);
	EXPECT_EQ(POLLPRI, rev);
	ASSERT_EQ(0, ag_poll(b, 0, 0, &ret, &rev));
	EXPECT_EQ(0, ret);

	/* Each evicts its ask: at max, nothing asked, still no growth. */
	ASSERT_EQ(0, ag_evict(a, 0, c0, 18, NULL));
	ASSERT_EQ(0, ag_evict(a, s1, c1, 12, NULL));
	ASSERT_EQ(0, ag_pressure(a, 0, &pr));
	EXPECT_EQ(0, pr.out_ask_pages);
	EXPECT_EQ(0, pr.out_reasons);
	ASSERT_EQ(0, ag_pressure(a, s1, &pr));
	EXPECT_EQ(0, pr.out_ask_pages);
	ASSERT_EQ(0, ag_poll(a, 0, 0, &ret, &rev));
	EXPECT_EQ(0, ret);
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, ta, &ti));
	EXPECT_EQ(0, ti.ask_pages);
	EXPECT_EQ(120, ti.pages);
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, r, T(101), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);

	/* Raised: growth up to the new limit. */
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 200, 0, 0, NULL));
	EXPECT_EQ(0, ag_grow(a, 0, r, T(180)));
	EXPECT_EQ(EDQUOT, ag_extend1(a, 0, r, T(181), &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	free(x0);
}

/* CTL_TENANT_LIST: every figure of every tenant; partial lists; errors. */
TEST_F(tenant, tenant_list)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST], *t;
	struct kvpool_ctl_tenant_list l;
	struct kvpool_ctl_tenant cfg;
	struct kvpool_handle h[4];
	struct kt_agent *a, *b;
	__u32 ta, tb, tr, nr, i;
	void *guard;
	int s1;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	ASSERT_EQ(0, ag_open(a, e->pool.id, &s1));
	kt_tenant_init(&cfg, e->pool.id, e->cgid[0], UID_A, 500, 100, 10,
		       "alpha");
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &cfg));
	ta = ag_tid(a, 0);
	EXPECT_EQ(ta, cfg.tenant_id);
	tb = ag_tid(b, 0);
	tr = local_tid(e->fd);
	/* C: configured, no client. */
	kt_tenant_init(&cfg, e->pool.id, e->cgid[1], UID_A, 0, 0, 0, "gamma");
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &cfg));

	/* A: rows 7 + 5 pages, a slot of 3, 4 cache pages; 2 clients. */
	ASSERT_EQ(0, ag_alloc(a, 0, 2, h, NULL));
	ASSERT_EQ(0, ag_grow(a, 0, h[0], T(7)));
	ASSERT_EQ(0, ag_grow(a, 0, h[1], T(3)));
	ASSERT_EQ(0, ag_to_slot(a, 0, 42, h[1]));
	ASSERT_EQ(0, ag_alloc1(a, s1, &h[2]));
	ASSERT_EQ(0, ag_grow(a, s1, h[2], T(5) - 1));
	ASSERT_EQ(0, ag_cache_pages(a, s1, 4, NULL));
	/* B: one row of 9. */
	ASSERT_EQ(0, ag_alloc1(b, 0, &h[3]));
	ASSERT_EQ(0, ag_grow(b, 0, h[3], T(9)));

	memset(ti, 0xaa, sizeof(ti));
	ASSERT_EQ(0, kt_tenant_list(e->pool.ctl, e->pool.id, ti,
				    KT_MAX_LIST, &nr));
	ASSERT_EQ(4, nr);
	EXPECT_EQ(4, kt_sysfs_val(e->pool.id, "nr_tenants"));
	for (i = 0; i < nr; i++) {
		t = &ti[i];
		EXPECT_EQ(0, t->flags & ~KVPOOL_TENANT_CONFIGURED);
		EXPECT_EQ(0, t->path_offset);
		EXPECT_EQ(0, t->ask_pages);
		if (t->tenant_id == ta) {
			EXPECT_EQ(UID_A, t->uid);
			EXPECT_EQ(e->cgid[0], t->cgroup_id);
			EXPECT_EQ(7 + 3 + 5 + 4, t->pages);
			EXPECT_EQ(4, t->cache_pages);
			EXPECT_EQ(3, t->rows);
			EXPECT_EQ(2, t->nr_clients);
			EXPECT_EQ(500, t->max_pages);
			EXPECT_EQ(100, t->min_pages);
			EXPECT_EQ(10, t->max_rows);
			EXPECT_STREQ("alpha", t->label);
		} else if (t->tenant_id == tb) {
			EXPECT_EQ(UID_B, t->uid);
			EXPECT_EQ(e->cgid[1], t->cgroup_id);
			EXPECT_EQ(9, t->pages);
			EXPECT_EQ(0, t->cache_pages);
			EXPECT_EQ(1, t->rows);
			EXPECT_EQ(1, t->nr_clients);
			EXPECT_EQ(0, t->max_pages);
			EXPECT_STREQ("", t->label);
		} else if (t->tenant_id == tr) {
			EXPECT_EQ(0, t->uid);
			EXPECT_EQ(e->self_cgid, t->cgroup_id);
			EXPECT_EQ(0, t->pages);
			EXPECT_EQ(1, t->nr_clients);
		} else if (t->tenant_id == cfg.tenant_id) {
			EXPECT_EQ(UID_A, t->uid);
			EXPECT_EQ(e->cgid[1], t->cgroup_id);
			EXPECT_EQ(0, t->pages);
			EXPECT_EQ(0, t->nr_clients);
			EXPECT_STREQ("gamma", t->label);
		} else {
			EXPECT_TRUE(false) TH_LOG("unknown tenant %u", t->tenant_id);
		}
		/* The label is NUL-terminated and zero-padded. */
		EXPECT_EQ(0, t->label[KVPOOL_LABEL_LEN - 1]);
	}
	for (i = nr; i < KT_MAX_LIST; i++)
		EXPECT_EQ(0xaaaaaaaau, ti[i].tenant_id) TH_LOG("entry %u", i);

	/* Room for 2: 2 written, the count is still 4. */
	memset(ti, 0xaa, sizeof(ti));
	ASSERT_EQ(0, kt_tenant_list(e->pool.ctl, e->pool.id, ti, 2, &nr));
	EXPECT_EQ(4, nr);
	EXPECT_NE(0xaaaaaaaau, ti[1].tenant_id);
	EXPECT_EQ(0xaaaaaaaau, ti[2].tenant_id);
	EXPECT_EQ(0xaaaaaaaau, ti[2].uid);
	/* Room for none, no array: the count only. */
	ASSERT_EQ(0, kt_tenant_list(e->pool.ctl, e->pool.id, NULL, 0, &nr));
	EXPECT_EQ(4, nr);

	/* An array that faults. */
	guard = kt_map_guarded();
	ASSERT_NE(NULL, guard);
	EXPECT_EQ(EFAULT, kt_tenant_list(e->pool.ctl, e->pool.id,
					 kt_fault_edge(guard), 1, NULL));
	EXPECT_EQ(EFAULT, kt_tenant_list(e->pool.ctl, e->pool.id,
					 (void *)((char *)kt_fault_edge(guard) -
						  sizeof(ti[0])), 2, NULL));
	EXPECT_EQ(0, kt_tenant_list(e->pool.ctl, e->pool.id,
				    (void *)((char *)kt_fault_edge(guard) -
					     sizeof(ti[0])), 1, &nr));
	EXPECT_EQ(4, nr);
	munmap(guard, 2 * KT_PAGE_SIZE);

	/* Bad calls. */
	memset(&l, 0, sizeof(l));
	l.size = sizeof(l);
	l.pool_id = e->pool.id;
	l.count = KT_MAX_LIST;
	l.entry_len = sizeof(ti[0]);
	l.tenants = kt_ptr(ti);
	l.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));
	l.flags = 0;
	l.pool_id = 64;
	EXPECT_EQ(ENODEV, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));
	l.pool_id = 0xffffffffu;
	EXPECT_EQ(ENODEV, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));
	l.pool_id = e->pool.id;
	l.size = offsetof(struct kvpool_ctl_tenant_list, tenants);
	EXPECT_EQ(EINVAL, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));

	/*
	 * entry_len: shorter than this header's entry (0, 84 of 88) is
	 * EINVAL, past PAGE_SIZE E2BIG, even when nothing is to be written
	 * (count 0); nothing written and the count not given.
	 */
	for (i = 0; i < 6; i++) {
		static const __u32 lens[] = {
			0, sizeof(ti[0]) - 4, sizeof(ti[0]) - 1,
			KT_PAGE_SIZE + 1, ~0u, 1,
		};
		int want = lens[i] > KT_PAGE_SIZE ? E2BIG : EINVAL;

		memset(ti, 0xaa, sizeof(ti));
		memset(&l, 0, sizeof(l));
		l.size = sizeof(l);
		l.pool_id = e->pool.id;
		l.count = i & 1 ? 0 : KT_MAX_LIST;
		l.entry_len = lens[i];
		l.tenants = kt_ptr(ti);
		l.out_nr_tenants = 0xdeadbeef;
		EXPECT_EQ(want, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST,
					 &l)) TH_LOG("entry_len %u, count %u",
						     l.entry_len, l.count);
		EXPECT_EQ(0xaaaaaaaau, ti[0].tenant_id);
		l.count = l.count ? 0 : KT_MAX_LIST;
		EXPECT_EQ(want, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST,
					 &l)) TH_LOG("entry_len %u, count %u",
						     l.entry_len, l.count);
		EXPECT_EQ(0xaaaaaaaau, ti[0].tenant_id);
	}

	/*
	 * Longer entries: the kernel writes what it knows and zeroes the
	 * rest of each entry; nothing past count entries.
	 */
	{
		const __u32 wide = sizeof(ti[0]) + 24;
		unsigned char *buf = malloc(5 * wide);
		struct kvpool_tenant_info one;
		__u32 k, found = 0;

		ASSERT_NE(NULL, buf);
		memset(buf, 0xaa, 5 * wide);
		memset(&l, 0, sizeof(l));
		l.size = sizeof(l);
		l.pool_id = e->pool.id;
		l.count = 4;
		l.entry_len = wide;
		l.tenants = kt_ptr(buf);
		EXPECT_EQ(0, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST,
				      &l));
		EXPECT_EQ(4, l.out_nr_tenants);
		for (i = 0; i < 4; i++) {
			memcpy(&one, buf + i * wide, sizeof(one));
			EXPECT_EQ(0, one.flags & ~KVPOOL_TENANT_CONFIGURED);
			EXPECT_EQ(0, one.path_offset);
			if (one.tenant_id == ta) {
				found++;
				EXPECT_EQ(7 + 3 + 5 + 4, one.pages);
				EXPECT_EQ(500, one.max_pages);
				EXPECT_STREQ("alpha", one.label);
			}
			for (k = sizeof(one); k < wide; k++)
				EXPECT_EQ(0, buf[i * wide + k])
					TH_LOG("entry %u, byte %u", i, k);
		}
		EXPECT_EQ(1, found);
		EXPECT_EQ(0xaa, buf[4 * wide]);
		EXPECT_EQ(0xaa, buf[5 * wide - 1]);
		free(buf);
	}
}

/* Labels: kept when empty, replaced, NUL-terminated, written back. */
TEST_F(tenant, labels)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti;
	struct kvpool_ctl_tenant t;
	char full[KVPOOL_LABEL_LEN];

	kt_tenant_init(&t, e->pool.id, e->cgid[0], UID_A, 0, 0, 0, "alpha");
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	EXPECT_STREQ("alpha", t.label);
	kt_tenant_init(&t, e->pool.id, e->cgid[0], UID_A, 5, 0, 0, NULL);
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	EXPECT_STREQ("alpha", t.label);	/* written back: the current one */
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_STREQ("alpha", ti.label);
	EXPECT_EQ(5, ti.max_pages);

	kt_tenant_init(&t, e->pool.id, e->cgid[0], UID_A, 5, 0, 0, "be");
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_STREQ("be", ti.label);
	EXPECT_EQ(0, ti.label[3]) TH_LOG("the old label's tail must not show");

	memset(full, 'x', sizeof(full));
	full[KVPOOL_LABEL_LEN - 1] = 0;
	kt_tenant_init(&t, e->pool.id, e->cgid[0], UID_A, 5, 0, 0, full);
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_STREQ(full, ti.label);
	memset(t.label, 'y', sizeof(t.label));
	EXPECT_EQ(EINVAL, kt_tenant_set(e->pool.ctl, &t));
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, t.tenant_id, &ti));
	EXPECT_STREQ(full, ti.label);
}

/*
 * CTL_TENANT_SET: each bad argument with its errno, nothing changed; by
 * id; what is written back.
 */
TEST_F(tenant, tenant_set_validation)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info l0[KT_MAX_LIST], l1[KT_MAX_LIST];
	struct kvpool_ctl_tenant t, ok;
	struct kt_agent *a;
	unsigned char big[KT_PAGE_SIZE + 8];
	__u32 n0, n1, ta, gone;
	int i;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	ta = ag_tid(a, 0);
	/* A tenant that came and went: its id names nothing now. */
	kt_agent_start(_metadata, &e->pool, &e->ag[1], e->cg[1], UID_B, false);
	ASSERT_EQ(0, ag_open(&e->ag[1], e->pool.id, &i));
	gone = ag_tid(&e->ag[1], i);
	ASSERT_EQ(0, ag_close(&e->ag[1], i));

	kt_tenant_init(&ok, e->pool.id, e->cgid[0], UID_A, 100, 10, 5, "a");
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &ok));
	ASSERT_EQ(ta, ok.tenant_id);
	ASSERT_EQ(0, list_all(e, l0, &n0));

	for (i = 0; i < 14; i++) {
		const char *what = "";
		int want = EINVAL, ret;

		t = ok;
		t.max_pages = 200;	/* would change something */
		switch (i) {
		case 0:
			t.flags = 1U << 5;
			want = EOPNOTSUPP;
			what = "flag 1<<5";
			break;
		case 1:
			t.flags = 0x80000000u;
			want = EOPNOTSUPP;
			what = "flag 1<<31";
			break;
		case 2:
			t.__reserved = 1;
			what = "__reserved";
			break;
		case 3:
			memset(t.label, 'z', sizeof(t.label));
			what = "label without NUL";
			break;
		case 4:
			t.max_pages = 9;
			t.min_pages = 10;
			what = "min > max";
			break;
		case 5:
			t.min_pages = USABLE + 1;
			t.max_pages = 0;
			what = "min > pool";
			break;
		case 6:
			t.flags = KVPOOL_TENANT_BY_ID;
			t.tenant_id = 4095;
			want = ENOENT;
			what = "unknown id";
			break;
		case 7:
			t.flags = KVPOOL_TENANT_BY_ID;
			t.tenant_id = 1u << 20;
			want = ENOENT;
			what = "id past the table";
			break;
		case 8:
			t.flags = KVPOOL_TENANT_BY_ID;
			t.tenant_id = gone;
			want = ENOENT;
			what = "id of a tenant gone";
			break;
		case 9:
			t.pool_id = 64;
			want = ENODEV;
			what = "pool 64";
			break;
		case 10:
			t.pool_id = 0xffffffffu;
			want = ENODEV;
			what = "pool ~0";
			break;
		case 11:
			t.size = offsetof(struct kvpool_ctl_tenant, label);
			what = "short size";
			break;
		case 13:
			t.__reserved2 = 1;
			what = "__reserved2";
			break;
		case 12:
			t.cgroup_id = e->cgid[1];
			t.uid = UID_B;
			t.min_pages = 1015;
			want = EINVAL;
			what = "new tenant past the pool";
			break;
		}
		ret = kt_tenant_set(e->pool.ctl, &t);
		EXPECT_EQ(want, ret) TH_LOG("%s", what);
		ASSERT_EQ(0, list_all(e, l1, &n1));
		EXPECT_EQ(n0, n1) TH_LOG("%s", what);
		EXPECT_EQ(0, memcmp(l0, l1, sizeof(l0))) TH_LOG("%s", what);
	}

	/* Size: above PAGE_SIZE, and a non-zero unknown tail. */
	memset(big, 0, sizeof(big));
	memcpy(big, &ok, sizeof(ok));
	((struct kvpool_ctl_tenant *)big)->size = KT_PAGE_SIZE + 1;
	EXPECT_EQ(E2BIG, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, big));
	((struct kvpool_ctl_tenant *)big)->size = sizeof(ok) + 8;
	big[sizeof(ok) + 3] = 1;
	EXPECT_EQ(E2BIG, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, big));
	big[sizeof(ok) + 3] = 0;
	((struct kvpool_ctl_tenant *)big)->max_pages = 100;
	EXPECT_EQ(0, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, big));
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(0, memcmp(l0, l1, sizeof(l0)));

	/* By id: cgroup_id and uid are ignored, and written back. */
	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	t.flags = KVPOOL_TENANT_BY_ID;
	t.pool_id = e->pool.id;
	t.tenant_id = ta;
	t.cgroup_id = 12345;
	t.uid = 777;
	t.max_pages = 300;
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	EXPECT_EQ(ta, t.tenant_id);
	EXPECT_EQ(e->cgid[0], t.cgroup_id);
	EXPECT_EQ(UID_A, t.uid);
	EXPECT_STREQ("a", t.label);
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(n0, n1);	/* no tenant (12345, 777) was made */
	for (i = 0; i < (int)n1; i++) {
		if (l1[i].tenant_id != ta)
			continue;
		EXPECT_EQ(300, l1[i].max_pages);
		EXPECT_EQ(0, l1[i].min_pages);	/* all limits are set at once */
		EXPECT_EQ(0, l1[i].max_rows);
	}

	/* Without BY_ID, tenant_id is ignored; a new identity is made. */
	kt_tenant_init(&t, e->pool.id, 12345, 777, 0, 0, 0, NULL);
	t.tenant_id = ta;
	ASSERT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	EXPECT_NE(ta, t.tenant_id);
	EXPECT_EQ(12345, t.cgroup_id);
	EXPECT_EQ(777, t.uid);
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(n0 + 1, n1);
}

/*
 * Validation order (docs/design.md): size, flags and reserved fields are
 * checked before anything is looked up, so a bad flag on an unknown pool
 * is EOPNOTSUPP, as it is for CTL_SET_WMARK and CTL_TENANT_LIST.
 */
TEST_F(tenant, tenant_set_validation_order)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_ctl_tenant_list l;
	struct kvpool_ctl_tenant t;
	struct kvpool_ctl_wmark w;

	memset(&w, 0, sizeof(w));
	w.size = sizeof(w);
	w.flags = 2;
	w.pool_id = 1000;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(e->pool.ctl, KVPOOL_CTL_SET_WMARK, &w));
	memset(&l, 0, sizeof(l));
	l.size = sizeof(l);
	l.flags = 2;
	l.pool_id = 1000;
	l.entry_len = sizeof(struct kvpool_tenant_info);
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));

	kt_tenant_init(&t, 1000, 1, 0, 0, 0, 0, NULL);
	t.flags = 1U << 5;
	EXPECT_EQ(EOPNOTSUPP, kt_tenant_set(e->pool.ctl, &t))
		TH_LOG("CTL_TENANT_SET looks the pool up before checking flags");
	t.flags = 0;
	t.__reserved = 1;
	EXPECT_EQ(EINVAL, kt_tenant_set(e->pool.ctl, &t))
		TH_LOG("CTL_TENANT_SET looks the pool up before reserved fields");
}

/*
 * Without CAP_SYS_ADMIN: nobody cannot open the control device (0600,
 * EACCES); given an open one, every control op is EPERM (unknown numbers
 * stay ENOTTY), and nothing changes. Root without CAP_SYS_ADMIN: the same.
 */
TEST_F(tenant, control_without_cap_sys_admin)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info l0[KT_MAX_LIST], l1[KT_MAX_LIST], info[4];
	struct kvpool_ctl_tenant_list tl;
	struct kvpool_ctl_create cr;
	struct kvpool_ctl_destroy de;
	struct kvpool_ctl_tenant t;
	struct kvpool_ctl_wmark w;
	struct kvpool_stats s, rs;
	struct kvpool_verify v;
	struct kt_agent *ags[2];
	int pools0, n, cs, ps, slot;
	__u32 n0, n1;
	__u64 low0, high0;

	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 50, 5, 5, NULL));
	ASSERT_EQ(0, list_all(e, l0, &n0));
	pools0 = kt_count_pools();
	low0 = kt_sysfs_val(e->pool.id, "low_wmark");
	high0 = kt_sysfs_val(e->pool.id, "high_wmark");

	ags[0] = kt_tenv_agent(_metadata, e, 0, -1, KT_NOBODY);
	kt_agent_start(_metadata, &e->pool, &e->ag[1], NULL, -1, true);
	ags[1] = &e->ag[1];
	EXPECT_EQ(EACCES, ag_open_path(ags[0], KT_CTL_PATH, NULL));

	for (n = 0; n < 2; n++) {
		struct kt_agent *a = ags[n];

		if (n == 0) {
			ASSERT_EQ(0, ag_take_fd(a, e->pool.ctl, &cs));
		} else {
			/* Root owns the 0600 node: the open works. */
			ASSERT_EQ(0, ag_open_path(a, KT_CTL_PATH, &cs));
		}
		memset(&cr, 0, sizeof(cr));
		cr.size = sizeof(cr);
		cr.nr_pages = 16;
		cr.page_tokens = 1;
		cr.nr_rows = 4;
		cr.row_tokens = 16;
		EXPECT_EQ(EPERM, ag_ioctl0(a, cs, KVPOOL_CTL_CREATE, &cr,
					   sizeof(cr))) TH_LOG("agent %d", n);
		memset(&de, 0, sizeof(de));
		de.size = sizeof(de);
		de.pool_id = e->pool.id;
		EXPECT_EQ(EPERM, ag_ioctl0(a, cs, KVPOOL_CTL_DESTROY, &de,
					   sizeof(de)));
		kt_tenant_init(&t, e->pool.id, e->cgid[0], UID_A, 1, 0, 1,
			       "evil");
		EXPECT_EQ(EPERM, ag_ioctl0(a, cs, KVPOOL_CTL_TENANT_SET, &t,
					   sizeof(t)));
		memset(&tl, 0, sizeof(tl));
		tl.size = sizeof(tl);
		tl.pool_id = e->pool.id;
		tl.count = 4;
		tl.entry_len = sizeof(info[0]);
		tl.out_nr_tenants = 0xdeadbeef;
		EXPECT_EQ(EPERM, ag_ioctl(a, cs, KVPOOL_CTL_TENANT_LIST, &tl,
					  sizeof(tl), info, sizeof(info),
					  offsetof(struct kvpool_ctl_tenant_list,
						   tenants), 0, KT_AG_NONE, 0));
		EXPECT_EQ(0xdeadbeef, tl.out_nr_tenants);
		memset(&w, 0, sizeof(w));
		w.size = sizeof(w);
		w.pool_id = e->pool.id;
		w.low_wmark = 1;
		w.high_wmark = 2;
		EXPECT_EQ(EPERM, ag_ioctl0(a, cs, KVPOOL_CTL_SET_WMARK, &w,
					   sizeof(w)));
		/*
		 * Not a control op: ENOTTY for everyone. KT_CTL_CMD_END is
		 * the first control number kept for later; 0xa0 was
		 * CTL_CREATE's before the numbers moved, and type 0xb7 the
		 * old type.
		 */
		EXPECT_EQ(ENOTTY, ag_ioctl0(a, cs,
					    _IO(KVPOOL_TYPE, KT_CTL_CMD_END),
					    &w, sizeof(w)));
		EXPECT_EQ(ENOTTY, ag_ioctl0(a, cs, _IO(KVPOOL_TYPE, 0xa0), &w,
					    sizeof(w)));
		EXPECT_EQ(ENOTTY, ag_ioctl0(a, cs, _IO(KVPOOL_TYPE, 0xaf), &w,
					    sizeof(w)));
		EXPECT_EQ(ENOTTY, ag_ioctl0(a, cs, _IO(0xb7, 0xa4), &w,
					    sizeof(w)));
		EXPECT_EQ(ENOTTY, ag_ioctl0(a, cs, KVPOOL_STATS, &s,
					    sizeof(s)));
	}
	EXPECT_EQ(pools0, kt_count_pools());
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(n0, n1);
	EXPECT_EQ(0, memcmp(l0, l1, sizeof(l0)));
	EXPECT_EQ(low0, kt_sysfs_val(e->pool.id, "low_wmark"));
	EXPECT_EQ(high0, kt_sysfs_val(e->pool.id, "high_wmark"));

	/* Pool ops need no capability: nobody has its own tenant. */
	ASSERT_EQ(0, ag_open(ags[0], e->pool.id, &ps));
	ASSERT_EQ(0, ag_stats(ags[0], ps, &s));
	ASSERT_EQ(0, kt_stats(e->fd, &rs));
	EXPECT_STREQ("", kt_stats_diff(&rs, &s, KT_ST_POOL));
	EXPECT_NE(rs.out_tenant_id, s.out_tenant_id);
	/*
	 * Except VERIFY: an O(pool) walk under the pool's lock is not for
	 * any client to repeat at will. EPERM for nobody and for root
	 * without CAP_SYS_ADMIN; root with it walks the pool.
	 */
	EXPECT_EQ(EPERM, ag_verify(ags[0], ps, &v));
	ASSERT_EQ(0, ag_open(ags[1], e->pool.id, &slot));
	EXPECT_EQ(EPERM, ag_verify(ags[1], slot, &v));
	ASSERT_EQ(0, kt_verify(e->fd, &v));
	EXPECT_EQ(0, v.out_violations);
	EXPECT_EQ(NR_PAGES, v.out_pages_checked);
	ASSERT_EQ(0, list_all(e, l1, &n1));
	EXPECT_EQ(n0 + 1, n1);
	for (slot = 0; slot < (int)n1; slot++)
		if (l1[slot].tenant_id == s.out_tenant_id)
			EXPECT_EQ(KT_NOBODY, l1[slot].uid);
}

/*
 * STATS: a client sees the pool's totals, its own figures and its own
 * tenant's, nothing of other tenants; fdinfo shows its tenant.
 */
TEST_F(tenant, stats_and_fdinfo)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_stats sa0, sa1, sb, sn, sr;
	struct kvpool_handle h[4], hb;
	struct kvpool_row_query q;
	struct kt_agent *a, *b, *nb;
	__u32 pages[4];
	char buf[4096], *line, *save = NULL;
	__u64 v;
	int s1, f;
	ssize_t len;

	a = kt_tenv_client(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_client(_metadata, e, 1, 1, UID_B);
	nb = kt_tenv_client(_metadata, e, 2, -1, KT_NOBODY);
	ASSERT_EQ(0, ag_open(a, e->pool.id, &s1));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->cgid[0],
				      UID_A, 900, 20, 30, NULL));
	/* A: slot 0 has a row of 6 and a slot of 2; s1 a row of 3 and 5 cached. */
	ASSERT_EQ(0, ag_alloc(a, 0, 2, h, NULL));
	ASSERT_EQ(0, ag_grow(a, 0, h[0], T(6)));
	ASSERT_EQ(0, ag_grow(a, 0, h[1], T(2)));
	ASSERT_EQ(0, ag_to_slot(a, 0, 9, h[1]));
	ASSERT_EQ(0, ag_alloc1(a, s1, &h[2]));
	ASSERT_EQ(0, ag_grow(a, s1, h[2], T(3)));
	ASSERT_EQ(0, ag_cache_pages(a, s1, 5, NULL));
	ASSERT_EQ(0, ag_alloc1(b, 0, &hb));
	ASSERT_EQ(0, ag_grow(b, 0, hb, T(11)));

	ASSERT_EQ(0, ag_stats(a, 0, &sa0));
	ASSERT_EQ(0, ag_stats(a, s1, &sa1));
	ASSERT_EQ(0, ag_stats(b, 0, &sb));
	ASSERT_EQ(0, ag_stats(nb, 0, &sn));
	ASSERT_EQ(0, kt_stats(e->fd, &sr));
	/* The pool's totals are the same for all. */
	EXPECT_STREQ("", kt_stats_diff(&sr, &sa0, KT_ST_POOL));
	EXPECT_STREQ("", kt_stats_diff(&sr, &sa1, KT_ST_POOL));
	EXPECT_STREQ("", kt_stats_diff(&sr, &sb, KT_ST_POOL));
	EXPECT_STREQ("", kt_stats_diff(&sr, &sn, KT_ST_POOL));
	kt_check_identities(_metadata, &e->pool, &sr);
	EXPECT_EQ(6 + 3 + 11, sr.out_row_pages);
	EXPECT_EQ(2, sr.out_slot_pages);
	EXPECT_EQ(5, sr.out_cache_evictable);
	EXPECT_EQ(5, sr.out_nr_clients);

	EXPECT_EQ(1, sa0.out_client_rows);
	EXPECT_EQ(1, sa0.out_client_slots);
	EXPECT_EQ(8, sa0.out_client_pages);
	EXPECT_EQ(0, sa0.out_client_cache_pages);
	EXPECT_EQ(1, sa1.out_client_rows);
	EXPECT_EQ(0, sa1.out_client_slots);
	EXPECT_EQ(3, sa1.out_client_pages);
	EXPECT_EQ(5, sa1.out_client_cache_pages);
	/* The tenant's figures, the same from both of A's clients. */
	EXPECT_EQ(sa0.out_tenant_id, sa1.out_tenant_id);
	EXPECT_EQ(16, sa0.out_tenant_pages);
	EXPECT_EQ(3, sa0.out_tenant_rows);
	EXPECT_EQ(900, sa0.out_tenant_max_pages);
	EXPECT_EQ(20, sa0.out_tenant_min_pages);
	EXPECT_EQ(30, sa0.out_tenant_max_rows);
	EXPECT_EQ(sa0.out_tenant_pages, sa1.out_tenant_pages);
	EXPECT_EQ(sa0.out_tenant_rows, sa1.out_tenant_rows);
	EXPECT_EQ(sa0.out_tenant_max_rows, sa1.out_tenant_max_rows);
	/* B and nobody see their own tenant only. */
	EXPECT_EQ(11, sb.out_tenant_pages);
	EXPECT_EQ(1, sb.out_tenant_rows);
	EXPECT_EQ(0, sb.out_tenant_max_pages);
	EXPECT_EQ(0, sn.out_client_rows);
	EXPECT_EQ(0, sn.out_client_pages);
	EXPECT_EQ(0, sn.out_tenant_pages);
	EXPECT_EQ(0, sn.out_tenant_rows);
	EXPECT_EQ(0, sn.out_tenant_max_pages);
	EXPECT_EQ(0, sn.out_tenant_min_pages);
	EXPECT_NE(sa0.out_tenant_id, sn.out_tenant_id);
	EXPECT_NE(sb.out_tenant_id, sn.out_tenant_id);
	/* Others' rows are not there for it. */
	EXPECT_EQ(ENOENT, ag_query(nb, 0, h[0], pages, 4, &q));
	EXPECT_EQ(ENOENT, ag_query(nb, 0, hb, pages, 4, &q));
	EXPECT_EQ(ENOENT, ag_export(nb, 0, 0, hb, 0, &f, NULL, NULL));

	/* fdinfo */
	ASSERT_EQ(0, ag_fdinfo(a, s1, "kvpool-tenant", &v));
	EXPECT_EQ(sa1.out_tenant_id, v);
	ASSERT_EQ(0, ag_fdinfo(a, s1, "kvpool-pages", &v));
	EXPECT_EQ(3, v);
	ASSERT_EQ(0, ag_fdinfo(a, s1, "kvpool-cache-pages", &v));
	EXPECT_EQ(5, v);
	ASSERT_EQ(0, ag_fdinfo(nb, 0, "kvpool-tenant", &v));
	EXPECT_EQ(sn.out_tenant_id, v);
	/* Only the documented kvpool keys, each once. */
	snprintf(buf, sizeof(buf), "/proc/self/fdinfo/%d", e->fd);
	f = open(buf, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f);
	len = read(f, buf, sizeof(buf) - 1);
	close(f);
	ASSERT_LT(0, len);
	buf[len] = 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		static const char * const keys[] = {
			"kvpool-pool:", "kvpool-client-id:", "kvpool-tenant:",
			"kvpool-rows:", "kvpool-slots:", "kvpool-pages:",
			"kvpool-cache-pages:",
		};
		bool known = false;
		unsigned int k;

		if (strncmp(line, "kvpool-", 7))
			continue;
		for (k = 0; k < ARRAY_SIZE(keys); k++)
			if (!strncmp(line, keys[k], strlen(keys[k])))
				known = true;
		EXPECT_TRUE(known) TH_LOG("fdinfo line '%s'", line);
	}
	EXPECT_EQ(4, kt_sysfs_val(e->pool.id, "nr_tenants"));
}

/*
 * The uid of a tenant is the one in the initial user namespace: a process
 * that is root in a user namespace of its own (mapped to 1001) is tenant
 * 1001, not root's; and CAP_SYS_ADMIN in that namespace is no
 * CAP_SYS_ADMIN for the control ops (EPERM), nor does it open the 0600
 * control device (EACCES).
 */
TEST_F(tenant, user_namespace)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti;
	int up[2], down[2], res[2], status, f;
	__u32 tid = KT_BAD_IDX, t1001;
	char path[64];
	struct kt_agent *a;
	pid_t pid;

	a = kt_tenv_client(_metadata, e, 0, -1, UID_A);
	t1001 = ag_tid(a, 0);
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	ASSERT_EQ(0, pipe(res));
	pid = kt_pool_fork(_metadata, &e->pool);
	if (pid == 0) {
		struct kvpool_ctl_tenant t;
		struct kvpool_stats s;
		__u32 nr;
		int fd;

		close(up[0]);
		close(down[1]);
		close(res[0]);
		close(e->fd);
		/*
		 * The kernel refuses a user namespace to a chrooted process
		 * (the test VM runs the tests in a chroot): step out to
		 * PID 1's root first (the same /dev devtmpfs, so the same
		 * device nodes). Where the tests are not chrooted this is /.
		 */
		CHILD_CHECK(chroot("/proc/1/root") == 0 && chdir("/") == 0);
		CHILD_CHECK(unshare(CLONE_NEWUSER) == 0);
		kt_child_signal(up[1], 'u');
		CHILD_CHECK(kt_pipe_wait(down[0]) == 'm');
		CHILD_CHECK(setresgid(0, 0, 0) == 0 && setresuid(0, 0, 0) == 0);
		CHILD_CHECK(geteuid() == 0);
		fd = kt_open_id(e->pool.id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(kt_stats(fd, &s) == 0);
		CHILD_CHECK(write(res[1], &s.out_tenant_id, 4) == 4);
		CHILD_CHECK(kt_tenant_list(e->pool.ctl, e->pool.id, NULL, 0,
					   &nr) == EPERM);
		kt_tenant_init(&t, e->pool.id, e->self_cgid, 0, 1, 0, 0, NULL);
		CHILD_CHECK(kt_tenant_set(e->pool.ctl, &t) == EPERM);
		CHILD_CHECK(kt_set_wmark(e->pool.ctl, e->pool.id, 1, 2) == EPERM);
		CHILD_CHECK(kt_destroy(e->pool.ctl, e->pool.id) == EPERM);
		CHILD_CHECK(open(KT_CTL_PATH, O_RDWR | O_CLOEXEC) < 0 &&
			    errno == EACCES);
		CHILD_CHECK(kt_pipe_wait(down[0]) == 'x');
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	close(res[1]);
	ASSERT_EQ('u', kt_pipe_wait(up[0]));
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	f = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, f);
	ASSERT_EQ(9, write(f, "0 1001 1\n", 9));
	close(f);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	f = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, f);
	ASSERT_EQ(9, write(f, "0 1001 1\n", 9));
	close(f);
	ASSERT_EQ(1, write(down[1], "m", 1));
	ASSERT_EQ(4, read(res[0], &tid, 4));
	EXPECT_EQ(t1001, tid) TH_LOG("root of a user namespace mapped to 1001");
	ASSERT_EQ(0, kt_tenant_get(e->pool.ctl, e->pool.id, tid, &ti));
	EXPECT_EQ(UID_A, ti.uid);
	EXPECT_EQ(e->self_cgid, ti.cgroup_id);
	EXPECT_EQ(2, ti.nr_clients);
	EXPECT_NE(local_tid(e->fd), tid);
	ASSERT_EQ(1, write(down[1], "x", 1));
	status = kt_pool_wait(&e->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	close(up[0]);
	close(down[1]);
	close(res[0]);
}

/*
 * A pool has at most 4096 tenants: an open that would make one more fails
 * with EMFILE (and makes nothing); an open into an existing tenant works.
 */
TEST_F(tenant, tenant_table_full)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_ctl_tenant t;
	struct kt_agent *a, *b;
	__u32 i, n0;
	int ret = 0, sl;

	a = kt_tenv_agent(_metadata, e, 0, 0, UID_A);
	b = kt_tenv_agent(_metadata, e, 1, 1, UID_B);
	ASSERT_EQ(0, ag_open(b, e->pool.id, &sl));	/* B exists */
	n0 = kt_sysfs_val(e->pool.id, "nr_tenants");
	ret = kt_tenant_fill(e->pool.ctl, e->pool.id, 1000000, 5000, 0, n0,
			     4096, &i);
	ASSERT_EQ(0, ret) TH_LOG("TENANT_SET of tenant %u", i);
	EXPECT_EQ(4096, kt_sysfs_val(e->pool.id, "nr_tenants"));
	kt_tenant_init(&t, e->pool.id, 1000000 + i, 5000, 0, 0, 0, NULL);
	ret = kt_tenant_set(e->pool.ctl, &t);
	EXPECT_EQ(EMFILE, ret) TH_LOG("TENANT_SET of a 4097th tenant: %s",
				      strerror(ret > 0 ? ret : 0));

	EXPECT_EQ(EMFILE, ag_open(a, e->pool.id, &sl));
	EXPECT_EQ(4096, kt_sysfs_val(e->pool.id, "nr_tenants"));
	EXPECT_EQ(2, kt_sysfs_val(e->pool.id, "nr_clients"));
	EXPECT_EQ(0, ag_open(b, e->pool.id, &sl));
	EXPECT_EQ(3, kt_sysfs_val(e->pool.id, "nr_clients"));
}

TEST_HARNESS_MAIN
