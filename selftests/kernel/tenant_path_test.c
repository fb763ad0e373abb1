// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: tenants named by cgroup path (KVPOOL_FEAT_TENANT_PATH).
 *
 * What an administrator expects of a limit set on a service's cgroup, each
 * case as it was seen to fail before tenants had paths:
 *
 * - a service restarted the way systemd does it (rmdir and mkdir of the
 *   same path: a new cgroup id) gets its limits back;
 * - a process in a child cgroup (svc.service/worker), and one nested so
 *   deep that its path does not fit KVPOOL_CGROUP_PATH_MAX, stays in its
 *   ancestor's tenant and cannot pass its limit;
 * - a tenant configured on a uid beats the any-uid tenant of the same path;
 * - a tenant configured by cgroup id whose cgroup is gone, with nothing
 *   held, is no longer listed, and gives its place in a full table to a
 *   new tenant;
 * - KVPOOL_TENANT_REMOVE drops a configuration without taking anything;
 * - CTL_TENANT_SET's validation (each errno, nothing changed) and
 *   CTL_TENANT_LIST's paths buffer;
 * - libkvpool's kvpool_tenant_set_path() and kvpool_tenant_list_paths(),
 *   and kvpoolctl's tenant set --cgroup, list and remove.
 *
 * The cgroups are made under /sys/fs/cgroup/kvpool-path-PID; cgroup v2 is
 * mounted when the guest has not, and without it the setup fails.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenv.h"

#include <fcntl.h>

#include "kvpool.h"

#define NR_PAGES	257	/* page 0 reserved: 256 usable */
#define PT		4
#define NR_ROWS		33
#define ROW_TOKENS	1024
#define T(n)		((n) * PT)	/* tokens of n whole pages */

#define UID_A		1001
#define UID_B		1002

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"

FIXTURE(tpath) {
	struct kt_tenv e;
	char base[96];		/* the folder under /sys/fs/cgroup */
	char rel[48];		/* its path as the kernel names it */
	char svc[160], svc_rel[160];
	char worker[192];
};

FIXTURE_SETUP(tpath)
{
	kt_tenv_init(_metadata, &self->e, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, PT, NR_ROWS, ROW_TOKENS, 0);
	snprintf(self->rel, sizeof(self->rel), "/kvpool-path-%d",
		 (int)getpid());
	snprintf(self->base, sizeof(self->base), KT_CGROOT "%s", self->rel);
	snprintf(self->svc, sizeof(self->svc), "%s/svc.service", self->base);
	snprintf(self->svc_rel, sizeof(self->svc_rel), "%s/svc.service",
		 self->rel);
	snprintf(self->worker, sizeof(self->worker), "%s/worker", self->svc);
	ASSERT_EQ(0, mkdir(self->base, 0755))
		TH_LOG("mkdir %s: %s", self->base, strerror(errno));
	ASSERT_EQ(0, mkdir(self->svc, 0755));
	ASSERT_EQ(0, mkdir(self->worker, 0755));
}

/* Every cgroup below @fd, depth first; the agents are dead by now. */
static void rm_tree(int fd)
{
	struct dirent *d;
	DIR *dir = fdopendir(fd);

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		int sub;

		if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") ||
		    !strcmp(d->d_name, ".."))
			continue;
		sub = openat(dirfd(dir), d->d_name, O_RDONLY | O_DIRECTORY);
		if (sub >= 0)
			rm_tree(sub);
		unlinkat(dirfd(dir), d->d_name, AT_REMOVEDIR);
		rewinddir(dir);
	}
	closedir(dir);
}

FIXTURE_TEARDOWN(tpath)
{
	int fd;

	kt_tenv_fini(_metadata, &self->e);
	fd = open(self->base, O_RDONLY | O_DIRECTORY);
	if (fd >= 0)
		rm_tree(fd);
	EXPECT_EQ(0, rmdir(self->base)) TH_LOG("rmdir %s: %s", self->base,
					       strerror(errno));
}

static __u32 ag_tid(struct kt_agent *a, int slot)
{
	struct kvpool_stats s;

	return ag_stats(a, slot, &s) ? KT_BAD_IDX : s.out_tenant_id;
}

/* Agent @i in folder @cg as @uid, with a client open in slot 0. */
static struct kt_agent *client(struct __test_metadata *_metadata,
			       struct kt_tenv *e, int i, const char *cg,
			       int uid)
{
	struct kt_agent *a = &e->ag[i];
	int slot = -1;

	kt_agent_start(_metadata, &e->pool, a, cg, uid, false);
	EXPECT_EQ(0, ag_open(a, e->pool.id, &slot));
	EXPECT_EQ(0, slot);
	return a;
}

/* CTL_TENANT_SET by path: 0 or the errno; *id gets the tenant. */
static int set_path(struct kt_tenv *e, const char *path, __u32 flags,
		    __u32 uid, __u32 max_pages, __u32 *id)
{
	struct kvpool_ctl_tenant t = {
		.size = sizeof(t),
		.flags = KVPOOL_TENANT_BY_PATH | flags,
		.pool_id = e->pool.id,
		.uid = uid,
		.max_pages = max_pages,
		.cgroup_path = (__u64)(uintptr_t)path,
	};

	if (ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, &t))
		return errno;
	if (id)
		*id = t.tenant_id;
	return 0;
}

/* CTL_TENANT_LIST with a paths buffer; 0 or the errno. */
static int list_paths(struct kt_tenv *e, struct kvpool_tenant_info *ti,
		      __u32 count, char *paths, __u32 paths_len, __u32 *nr,
		      __u32 *need)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l),
		.pool_id = e->pool.id,
		.count = count,
		.entry_len = sizeof(*ti),
		.tenants = (__u64)(uintptr_t)ti,
		.paths = (__u64)(uintptr_t)paths,
		.paths_len = paths_len,
	};

	memset(ti, 0xa5, count * sizeof(*ti));
	if (ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l))
		return errno;
	*nr = l.out_nr_tenants;
	if (need)
		*need = l.out_paths_len;
	return 0;
}

/* The list's entry of tenant @id, or NULL. */
static struct kvpool_tenant_info *entry(struct kvpool_tenant_info *ti,
					__u32 nr, __u32 id)
{
	__u32 i;

	for (i = 0; i < nr; i++)
		if (ti[i].tenant_id == id)
			return &ti[i];
	return NULL;
}

static void expect_verify_clean(struct __test_metadata *_metadata,
				struct kt_tenv *e)
{
	struct kvpool_verify v;

	ASSERT_EQ(0, kt_verify(e->fd, &v));
	EXPECT_EQ(0, v.out_violations);
}

TEST_F(tpath, feature_bit)
{
	struct kvpool_info info;

	ASSERT_EQ(0, kt_info(self->e.fd, &info));
	EXPECT_TRUE(info.out_features & KVPOOL_FEAT_TENANT_PATH);
}

/*
 * systemd restarts a service by removing its cgroup and making it again:
 * a new id on the same path. The limit set on the path still holds, and
 * the old incarnation leaves nothing listed.
 */
TEST_F(tpath, restart_keeps_limits)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST], *t;
	struct kvpool_handle h;
	__u64 cg_old, cg_new;
	struct kt_agent *a;
	__u32 id, nr, i;

	ASSERT_EQ(0, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID, 0, 3,
			      &id));
	ASSERT_EQ(0, kt_cgroup_id(self->svc, &cg_old));
	a = client(_metadata, e, 0, self->svc, UID_A);
	EXPECT_EQ(id, ag_tid(a, 0));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h));
	EXPECT_EQ(EDQUOT, ag_grow(a, 0, h, T(5)));
	EXPECT_EQ(0, ag_grow(a, 0, h, T(3)));
	kt_agent_kill(&e->pool, a);

	ASSERT_EQ(0, rmdir(self->worker));
	ASSERT_EQ(0, rmdir(self->svc)) TH_LOG("rmdir %s: %s", self->svc,
					      strerror(errno));
	ASSERT_EQ(0, mkdir(self->svc, 0755));
	ASSERT_EQ(0, kt_cgroup_id(self->svc, &cg_new));
	EXPECT_NE(cg_old, cg_new);

	a = client(_metadata, e, 1, self->svc, UID_B);
	EXPECT_EQ(id, ag_tid(a, 0));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h));
	EXPECT_EQ(EDQUOT, ag_grow(a, 0, h, T(5)));
	EXPECT_EQ(0, ag_grow(a, 0, h, T(3)));

	/* One tenant for the path; none left under either cgroup id. */
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, NULL, 0, &nr, NULL));
	t = entry(ti, nr, id);
	ASSERT_NE(NULL, t);
	EXPECT_EQ(KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_ANY_UID |
		  KVPOOL_TENANT_CONFIGURED, t->flags);
	EXPECT_EQ(0, t->cgroup_id);
	EXPECT_EQ(3, t->pages);
	EXPECT_EQ(1, t->nr_clients);
	for (i = 0; i < nr; i++) {
		EXPECT_NE(cg_old, ti[i].cgroup_id);
		EXPECT_NE(cg_new, ti[i].cgroup_id);
	}
	expect_verify_clean(_metadata, e);
}

/*
 * A child cgroup is its parent's tenant: a service cannot make itself a
 * new, unlimited tenant. Neither can a cgroup nested so deep that its
 * path does not fit KVPOOL_CGROUP_PATH_MAX.
 */
TEST_F(tpath, child_cannot_escape)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle h[3];
	struct kt_agent *a, *b, *c;
	char name[201];
	int fd, sub, depth;
	__u32 id;
	char pid[24];

	ASSERT_EQ(0, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID, 0, 4,
			      &id));
	a = client(_metadata, e, 0, self->svc, UID_A);
	b = client(_metadata, e, 1, self->worker, UID_A);
	EXPECT_EQ(id, ag_tid(a, 0));
	EXPECT_EQ(id, ag_tid(b, 0));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h[0]));
	ASSERT_EQ(0, ag_alloc1(b, 0, &h[1]));
	EXPECT_EQ(0, ag_grow(a, 0, h[0], T(2)));
	EXPECT_EQ(EDQUOT, ag_grow(b, 0, h[1], T(3)));
	EXPECT_EQ(0, ag_grow(b, 0, h[1], T(1)));

	/* 21 levels of 200 bytes below worker: past 4096 bytes. */
	memset(name, 'd', 200);
	name[200] = '\0';
	fd = open(self->worker, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd);
	for (depth = 0; depth < 21; depth++) {
		ASSERT_EQ(0, mkdirat(fd, name, 0755)) TH_LOG("depth %d: %s",
							     depth,
							     strerror(errno));
		sub = openat(fd, name, O_RDONLY | O_DIRECTORY);
		close(fd);
		ASSERT_LE(0, sub);
		fd = sub;
	}
	/* Moved there before it opens the pool. */
	kt_agent_start(_metadata, &e->pool, &e->ag[2], self->svc, UID_A,
		       false);
	c = &e->ag[2];
	sub = openat(fd, "cgroup.procs", O_WRONLY);
	close(fd);
	ASSERT_LE(0, sub);
	snprintf(pid, sizeof(pid), "%d", (int)c->pid);
	ASSERT_EQ((ssize_t)strlen(pid), write(sub, pid, strlen(pid)));
	close(sub);
	ASSERT_EQ(0, ag_open(c, e->pool.id, &depth));
	EXPECT_EQ(id, ag_tid(c, depth));
	ASSERT_EQ(0, ag_alloc1(c, depth, &h[2]));
	EXPECT_EQ(EDQUOT, ag_grow(c, depth, h[2], T(2)));
	EXPECT_EQ(0, ag_grow(c, depth, h[2], T(1)));
	expect_verify_clean(_metadata, e);
}

/* At one level, a uid's own tenant first; others take the any-uid one. */
TEST_F(tpath, uid_before_any)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *a, *b;
	struct kvpool_handle h;
	__u32 mine, any, deep;

	ASSERT_EQ(0, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID, 0, 5,
			      &any));
	ASSERT_EQ(0, set_path(e, self->svc_rel, 0, UID_A, 2, &mine));
	/* The root "/" for UID_B: farther away than svc's any-uid. */
	ASSERT_EQ(0, set_path(e, "/", 0, UID_B, 1, &deep));
	EXPECT_NE(mine, any);
	/* Setting it again names the same tenant. */
	ASSERT_EQ(0, set_path(e, self->svc_rel, 0, UID_A, 2, &deep));
	EXPECT_EQ(mine, deep);

	a = client(_metadata, e, 0, self->worker, UID_A);
	b = client(_metadata, e, 1, self->worker, UID_B);
	EXPECT_EQ(mine, ag_tid(a, 0));
	EXPECT_EQ(any, ag_tid(b, 0));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h));
	EXPECT_EQ(EDQUOT, ag_grow(a, 0, h, T(3)));
	ASSERT_EQ(0, ag_alloc1(b, 0, &h));
	EXPECT_EQ(0, ag_grow(b, 0, h, T(5)));
	expect_verify_clean(_metadata, e);
}

/* A tenant configured on a cgroup id goes once the cgroup has. */
TEST_F(tpath, dead_id_tenant_pruned)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST];
	char tmp[200];
	__u32 id, nr, before;
	__u64 cg;

	snprintf(tmp, sizeof(tmp), "%s/tmp", self->base);
	ASSERT_EQ(0, mkdir(tmp, 0755));
	ASSERT_EQ(0, kt_cgroup_id(tmp, &cg));
	before = kt_sysfs_val(e->pool.id, "nr_tenants");
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, cg, UID_A, 7,
				      0, 0, &id));
	EXPECT_EQ(before + 1, kt_sysfs_val(e->pool.id, "nr_tenants"));
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, NULL, 0, &nr, NULL));
	ASSERT_NE(NULL, entry(ti, nr, id));
	EXPECT_EQ(KVPOOL_TENANT_CONFIGURED, entry(ti, nr, id)->flags);
	/* Still alive: listing keeps it. */
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, NULL, 0, &nr, NULL));
	ASSERT_NE(NULL, entry(ti, nr, id));

	ASSERT_EQ(0, rmdir(tmp));
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, NULL, 0, &nr, NULL));
	EXPECT_EQ(NULL, entry(ti, nr, id));
	EXPECT_EQ(before, nr);
	EXPECT_EQ(before, kt_sysfs_val(e->pool.id, "nr_tenants"));
	expect_verify_clean(_metadata, e);
}

/*
 * A full table (4096 tenants) makes room by dropping the tenants of dead
 * cgroups, for a CTL_TENANT_SET and for an open alike; made-up ids and
 * live cgroups' tenants stay, and then a full table refuses (EMFILE).
 */
TEST_F_TIMEOUT(tpath, full_table_drops_dead, 120)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *a = &e->ag[0];
	struct kvpool_ctl_tenant t;
	char dead[2][200];
	__u32 i, id;
	int k, ret = 0, slot = -1;
	__u64 cg;

	for (k = 0; k < 2; k++) {
		snprintf(dead[k], sizeof(dead[k]), "%s/dead%d", self->base, k);
		ASSERT_EQ(0, mkdir(dead[k], 0755));
		ASSERT_EQ(0, kt_cgroup_id(dead[k], &cg));
		ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, cg,
					      UID_A, 7, 0, 0, &id));
	}
	ret = kt_tenant_fill(e->pool.ctl, e->pool.id, 1000000, UID_B, 5,
			     kt_sysfs_val(e->pool.id, "nr_tenants"), 4096, &i);
	ASSERT_EQ(0, ret) TH_LOG("TENANT_SET of tenant %u", i);
	ASSERT_EQ(4096, kt_sysfs_val(e->pool.id, "nr_tenants"));

	kt_tenant_init(&t, e->pool.id, 3000000, UID_B, 5, 0, 0, NULL);
	EXPECT_EQ(EMFILE, kt_tenant_set(e->pool.ctl, &t));
	kt_agent_start(_metadata, &e->pool, a, self->worker, UID_B, false);
	EXPECT_EQ(EMFILE, ag_open(a, e->pool.id, &slot));
	EXPECT_EQ(4096, kt_sysfs_val(e->pool.id, "nr_tenants"));

	/* One cgroup gone: the SET takes its tenant's place... */
	ASSERT_EQ(0, rmdir(dead[0]));
	kt_tenant_init(&t, e->pool.id, 3000000, UID_B, 5, 0, 0, NULL);
	EXPECT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	EXPECT_EQ(4096, kt_sysfs_val(e->pool.id, "nr_tenants"));
	/* ...and the other's, the open's new tenant. */
	ASSERT_EQ(0, rmdir(dead[1]));
	EXPECT_EQ(0, ag_open(a, e->pool.id, &slot));
	EXPECT_EQ(4096, kt_sysfs_val(e->pool.id, "nr_tenants"));
	/* Full again: setting an existing tenant works, a new one not. */
	kt_tenant_init(&t, e->pool.id, 3000000, UID_B, 6, 0, 0, NULL);
	EXPECT_EQ(0, kt_tenant_set(e->pool.ctl, &t));
	kt_tenant_init(&t, e->pool.id, 3000001, UID_B, 5, 0, 0, NULL);
	EXPECT_EQ(EMFILE, kt_tenant_set(e->pool.ctl, &t));
	expect_verify_clean(_metadata, e);
}

/*
 * REMOVE takes nothing: the tenant keeps its client, without limits; new
 * opens no longer join it, and it goes with its last client.
 */
TEST_F(tpath, remove)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST], *t;
	struct kvpool_handle h;
	struct kt_agent *a, *b;
	__u32 id, nr;

	ASSERT_EQ(0, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID, 0, 2,
			      &id));
	a = client(_metadata, e, 0, self->svc, UID_A);
	EXPECT_EQ(id, ag_tid(a, 0));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h));
	EXPECT_EQ(0, ag_grow(a, 0, h, T(2)));
	EXPECT_EQ(EDQUOT, ag_grow(a, 0, h, T(3)));

	EXPECT_EQ(EINVAL, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID |
				   KVPOOL_TENANT_REMOVE, 0, 1, NULL));
	ASSERT_EQ(0, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID |
			      KVPOOL_TENANT_REMOVE, 0, 0, NULL));
	EXPECT_EQ(ENOENT, set_path(e, self->svc_rel, KVPOOL_TENANT_ANY_UID |
				   KVPOOL_TENANT_REMOVE, 0, 0, NULL));
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, NULL, 0, &nr, NULL));
	t = entry(ti, nr, id);
	ASSERT_NE(NULL, t);
	EXPECT_EQ(KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_ANY_UID, t->flags);
	EXPECT_EQ(0, t->max_pages);
	EXPECT_EQ(2, t->pages);
	EXPECT_EQ(id, ag_tid(a, 0));
	EXPECT_EQ(0, ag_grow(a, 0, h, T(6)));

	b = client(_metadata, e, 1, self->svc, UID_A);
	EXPECT_NE(id, ag_tid(b, 0));
	kt_agent_kill(&e->pool, a);
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, NULL, 0, &nr, NULL));
	EXPECT_EQ(NULL, entry(ti, nr, id));
	expect_verify_clean(_metadata, e);
}

/* Each malformed CTL_TENANT_SET: its errno, and nothing changed. */
TEST_F(tpath, set_validation)
{
	static const char *const bad[] = {
		"", "svc", "//", "/svc/", "/a//b", "/.", "/a/./b", "/..",
		"/a/..", "/a/../b",
	};
	struct kt_tenv *e = &self->e;
	struct kvpool_ctl_tenant t;
	__u32 before, i;
	char *big;

	before = kt_sysfs_val(e->pool.id, "nr_tenants");
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_EQ(EINVAL, set_path(e, bad[i], 0, 0, 1, NULL))
			TH_LOG("bad path %u", i);
	big = malloc(KVPOOL_CGROUP_PATH_MAX + 1);
	ASSERT_NE(NULL, big);
	memset(big, 'a', KVPOOL_CGROUP_PATH_MAX);
	big[0] = '/';
	big[KVPOOL_CGROUP_PATH_MAX] = '\0';
	EXPECT_EQ(ENAMETOOLONG, set_path(e, big, 0, 0, 1, NULL));
	free(big);
	EXPECT_EQ(EFAULT, set_path(e, (const char *)8, 0, 0, 1, NULL));
	EXPECT_EQ(EINVAL, set_path(e, "/x", KVPOOL_TENANT_BY_ID, 0, 1, NULL));
	EXPECT_EQ(EINVAL, set_path(e, "/x", KVPOOL_TENANT_ANY_UID, 5, 1,
				   NULL));
	EXPECT_EQ(EINVAL, set_path(e, "/x", KVPOOL_TENANT_REMOVE, 0, 1, NULL));
	EXPECT_EQ(ENOENT, set_path(e, "/x", KVPOOL_TENANT_REMOVE, 0, 0,
				   NULL));
	EXPECT_EQ(EOPNOTSUPP, set_path(e, "/x", KVPOOL_TENANT_CONFIGURED, 0, 1,
				       NULL));

	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	t.pool_id = e->pool.id;
	t.max_pages = 1;
	/* BY_PATH without a path; a path without BY_PATH; ANY_UID alone. */
	t.flags = KVPOOL_TENANT_BY_PATH;
	EXPECT_EQ(-1, ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, &t));
	EXPECT_EQ(EINVAL, errno);
	t.flags = 0;
	t.cgroup_path = (__u64)(uintptr_t)"/x";
	EXPECT_EQ(-1, ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, &t));
	EXPECT_EQ(EINVAL, errno);
	t.flags = KVPOOL_TENANT_ANY_UID;
	t.cgroup_path = 0;
	EXPECT_EQ(-1, ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, &t));
	EXPECT_EQ(EINVAL, errno);
	/* A cgroup id with a path. */
	t.flags = KVPOOL_TENANT_BY_PATH;
	t.cgroup_path = (__u64)(uintptr_t)"/x";
	t.cgroup_id = 5;
	EXPECT_EQ(-1, ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, &t));
	EXPECT_EQ(EINVAL, errno);
	/* The first release's 80 bytes have no room for a path. */
	t.cgroup_id = 0;
	t.size = offsetof(struct kvpool_ctl_tenant, cgroup_path);
	EXPECT_EQ(-1, ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_SET, &t));
	EXPECT_EQ(EINVAL, errno);

	EXPECT_EQ(before, kt_sysfs_val(e->pool.id, "nr_tenants"));
	/* The longest path that fits is taken. */
	big = malloc(KVPOOL_CGROUP_PATH_MAX);
	ASSERT_NE(NULL, big);
	memset(big, 'a', KVPOOL_CGROUP_PATH_MAX - 1);
	big[0] = '/';
	big[KVPOOL_CGROUP_PATH_MAX - 1] = '\0';
	EXPECT_EQ(0, set_path(e, big, 0, 0, 1, NULL));
	free(big);
	EXPECT_EQ(before + 1, kt_sysfs_val(e->pool.id, "nr_tenants"));
	expect_verify_clean(_metadata, e);
}

/* The list's paths: written while they fit, and the room they need. */
TEST_F(tpath, list_paths)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST], *t;
	struct kvpool_ctl_tenant_list l;
	__u32 a, b, nr, need, i, fit;
	char paths[256];

	ASSERT_EQ(0, set_path(e, self->svc_rel, 0, UID_A, 9, &a));
	ASSERT_EQ(0, set_path(e, "/", KVPOOL_TENANT_ANY_UID, 0, 0, &b));
	memset(paths, 'z', sizeof(paths));
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, paths, sizeof(paths),
				&nr, &need));
	EXPECT_EQ(1 + strlen(self->svc_rel) + 1 + 2, need);
	EXPECT_EQ(0, paths[0]);
	t = entry(ti, nr, a);
	ASSERT_NE(NULL, t);
	EXPECT_NE(0, t->path_offset);
	EXPECT_STREQ(self->svc_rel, paths + t->path_offset);
	EXPECT_EQ(UID_A, t->uid);
	EXPECT_EQ(9, t->max_pages);
	t = entry(ti, nr, b);
	ASSERT_NE(NULL, t);
	EXPECT_STREQ("/", paths + t->path_offset);
	for (i = 0; i < nr; i++)
		if (ti[i].tenant_id != a && ti[i].tenant_id != b)
			EXPECT_EQ(0, ti[i].path_offset);
	/* Room for the empty string and "/" only, if "/" comes first. */
	ASSERT_EQ(0, list_paths(e, ti, KT_MAX_LIST, paths, 3, &nr, &need));
	EXPECT_EQ(1 + strlen(self->svc_rel) + 1 + 2, need);
	for (i = 0, fit = 0; i < nr; i++)
		fit += ti[i].path_offset != 0;
	EXPECT_GE(1, fit);
	EXPECT_EQ(KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_CONFIGURED,
		  entry(ti, nr, a)->flags);
	/* A pointer without room, room without a pointer: EINVAL. */
	EXPECT_EQ(EINVAL, list_paths(e, ti, KT_MAX_LIST, paths, 0, &nr, NULL));
	EXPECT_EQ(EINVAL, list_paths(e, ti, KT_MAX_LIST, NULL, 8, &nr, NULL));
	EXPECT_EQ(EFAULT, list_paths(e, ti, KT_MAX_LIST, (char *)8, 64, &nr,
				     NULL));
	/* The first release's 32 bytes: entries as before, no paths. */
	memset(&l, 0, sizeof(l));
	l.size = offsetof(struct kvpool_ctl_tenant_list, paths);
	l.pool_id = e->pool.id;
	l.count = KT_MAX_LIST;
	l.entry_len = sizeof(ti[0]);
	l.tenants = (__u64)(uintptr_t)ti;
	ASSERT_EQ(0, ioctl(e->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));
	EXPECT_EQ(nr, l.out_nr_tenants);
	EXPECT_EQ(0, l.out_paths_len);
	for (i = 0; i < nr; i++)
		EXPECT_EQ(0, ti[i].path_offset);
}

/* The library's calls: the path beside the struct, a second sized call. */
TEST_F(tpath, libkvpool)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_tenant_info ti[KT_MAX_LIST];
	struct kvpool_ctl_tenant t = {
		.flags = KVPOOL_TENANT_ANY_UID,
		.max_pages = 6,
		.label = "svc",
	};
	size_t need = 0;
	char *paths;
	int id, nr, i, found = 0;

	id = kvpool_tenant_set_path(e->pool.id, self->svc_rel, &t);
	ASSERT_LE(0, id) TH_LOG("%s", kvpool_strerror(id));
	EXPECT_EQ(id, (int)t.tenant_id);
	EXPECT_STREQ("svc", t.label);
	EXPECT_EQ(-EINVAL, kvpool_tenant_set_path(e->pool.id, "svc/", &t));
	EXPECT_EQ(-EINVAL, kvpool_tenant_set_path(e->pool.id, NULL, &t));
	/* kvpool_tenant_set() cannot name a path. */
	t.flags = KVPOOL_TENANT_BY_PATH;
	EXPECT_EQ(-EINVAL, kvpool_tenant_set(e->pool.id, &t));

	/* Room for nothing: the count and the bytes needed. */
	nr = kvpool_tenant_list_paths(e->pool.id, NULL, 0, NULL, 0, &need);
	ASSERT_LE(1, nr);
	EXPECT_EQ(1 + strlen(self->svc_rel) + 1, need);
	paths = malloc(need);
	ASSERT_NE(NULL, paths);
	nr = kvpool_tenant_list_paths(e->pool.id, ti, KT_MAX_LIST, paths, need,
				      &need);
	ASSERT_LE(1, nr);
	for (i = 0; i < nr; i++) {
		if ((int)ti[i].tenant_id != id)
			continue;
		found++;
		EXPECT_STREQ(self->svc_rel, paths + ti[i].path_offset);
		EXPECT_EQ(6, ti[i].max_pages);
	}
	EXPECT_EQ(1, found);
	free(paths);

	t.flags = KVPOOL_TENANT_ANY_UID | KVPOOL_TENANT_REMOVE;
	t.max_pages = 0;
	t.label[0] = '\0';
	EXPECT_EQ(id, kvpool_tenant_set_path(e->pool.id, self->svc_rel, &t));
	/* Written back with the label, which REMOVE may not carry. */
	EXPECT_STREQ("svc", t.label);
	t.label[0] = '\0';
	EXPECT_EQ(-ENOENT, kvpool_tenant_set_path(e->pool.id, self->svc_rel,
						  &t));
}

/*
 * kvpoolctl: --cgroup takes the folder or the path the kernel names and
 * sets a path tenant (every uid without --uid) that a process of the
 * service joins; list shows the path and "*"; remove drops it, once.
 */
TEST_F(tpath, kvpoolctl)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *a;
	struct kvpool_handle h;
	char out[4096], want[256];
	int id;

	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   "%s tenant set %u --cgroup %s/ --max 2 --label svc",
				   KVPOOLCTL, e->pool.id, self->svc))
		TH_LOG("%s", out);
	id = atoi(out);
	a = client(_metadata, e, 0, self->worker, UID_B);
	EXPECT_EQ((__u32)id, ag_tid(a, 0));
	ASSERT_EQ(0, ag_alloc1(a, 0, &h));
	EXPECT_EQ(EDQUOT, ag_grow(a, 0, h, T(3)));

	ASSERT_EQ(0, kt_run_output(out, sizeof(out), "%s tenant list %u",
				   KVPOOLCTL, e->pool.id));
	EXPECT_NE(NULL, strstr(out, self->svc_rel)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, " * ")) TH_LOG("%s", out);
	ASSERT_EQ(0, kt_run_output(out, sizeof(out), "%s tenant list --json %u",
				   KVPOOLCTL, e->pool.id));
	snprintf(want, sizeof(want), "\"cgroup\": \"%s\"", self->svc_rel);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"by_path\": true")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"uid\": null")) TH_LOG("%s", out);

	/* Relative to the root works too; a second remove is refused (7). */
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   "%s tenant remove %u --cgroup %s", KVPOOLCTL,
				   e->pool.id, self->svc_rel + 1))
		TH_LOG("%s", out);
	EXPECT_EQ(7, kt_run_output(out, sizeof(out),
				   "%s tenant remove %u --cgroup %s", KVPOOLCTL,
				   e->pool.id, self->svc))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "no tenant")) TH_LOG("%s", out);
	/* The client keeps its tenant, now without the limit. */
	EXPECT_EQ(0, ag_grow(a, 0, h, T(3)));
	/* Usage errors: --cgroup-id needs --uid; not both ways. */
	EXPECT_EQ(2, kt_run_output(out, sizeof(out),
				   "%s tenant set %u --cgroup-id 5 --max 1",
				   KVPOOLCTL, e->pool.id));
	EXPECT_EQ(2, kt_run_output(out, sizeof(out),
				   "%s tenant remove %u --id 1 --cgroup /x",
				   KVPOOLCTL, e->pool.id));
}

TEST_HARNESS_MAIN
