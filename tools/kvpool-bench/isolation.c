// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench isolation: what one tenant's worst legal op does to
 * another tenant, measured from outside (issue 25, "One tenant cannot
 * stall another"). Kernel only; README.md says what each figure means.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Data path, on one pool X of page_tokens 1: tenant B's decode steps
 * (kb_decode_child(), as procs runs them), every step timed, for
 * --iso-seconds, in three cases:
 *
 *   alone    B alone on X;
 *   one-row  while tenant A loops: ROW_ALLOC of one row, one EXTEND of
 *            it from 0 to every page of X that B can never need, and
 *            the RELEASE of it;
 *   batch    the same with max_batch rows that take those pages
 *            together: one ROW_ALLOC, one EXTEND and one RELEASE of all.
 *
 * Control path: process C sets the watermarks of another pool Y, which
 * nothing else touches, in a loop (CTL_SET_WMARK), while process M
 * lists X's tenants in a loop (CTL_TENANT_LIST, as a monitor does):
 *
 *   ctl-idle   M and C, nothing else on X;
 *   ctl-busy   M and C, A and B on X as in one-row;
 *   ctl-nomon  C, A and B on X as in one-row: no control op on X.
 *
 * Each control op on a pool takes the pool table's lock and then the
 * pool's (driver/kvpool_ctl.c), so M waits for X's lock while A holds
 * it, and as long as M holds the table's lock while it waits, C waits
 * too, for a pool it does not name. The data path never takes the
 * table's lock, so ctl-nomon shows what C pays for the busy CPUs alone.
 *
 * A and B are two tenants by uid: the driver reads the tenant from the
 * opener's cgroup and euid at open (driver/kvpool_file.c), so each child
 * drops to its own uid before it opens X, whose node the bench makes
 * 0666 for them (its own pool, destroyed after). Both stay in the
 * bench's cgroup. A does only what any client may: no tenant has
 * limits, and its pages are what B leaves free. C and M stay root:
 * control ops need CAP_SYS_ADMIN.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define ISO_UID_A	65534U	/* nobody */
#define ISO_UID_B	65533U
#define ISO_PAGES	(4U << 20)
#define ISO_PAGES_QUICK	(256U << 10)
#define ISO_Y_PAGES	1024U
/* The most ops a child records a case (A's, M's or C's). */
#define ISO_MAX_OPS	(1U << 18)
/*
 * M and C pause this long between their ops, as a monitor or an admin
 * script does, so that on a guest of two CPUs they leave the CPUs to A
 * and B; the latency of each op is what counts, not their rate.
 */
#define ISO_PAUSE_US	1000
/* Tenants CTL_TENANT_LIST may report on X: A, B, and the bench's own. */
#define ISO_MAX_TENANTS	8

enum iso_role { ISO_B, ISO_A, ISO_M, ISO_C, ISO_NR_ROLES };

/* The cases, in the order they run (kb_isolation() has the table). */
enum {
	CS_ALONE, CS_ONE_ROW, CS_BATCH, CS_CTL_IDLE, CS_CTL_BUSY,
	CS_CTL_NOMON, CS_NR
};

/* What a child needs to know: the pools and tenant A's op. */
struct iso_env {
	unsigned int x, y;	/* the pools' ids */
	u32 pages;		/* X's */
	u32 a_rows;		/* A's rows an op: 1 or max_batch */
	u32 a_pages;		/* A's pages an op, all rows together */
	double secs;
};

struct iso_case {
	const char *name;
	bool b;			/* tenant B decodes on X */
	u32 a_rows;		/* tenant A's rows an op; 0: no A */
	bool mon;		/* M lists X's tenants */
	bool ctl;		/* C sets Y's watermarks */
};

/* Send the ready message, then wait for the start: 0 or -EPIPE. */
static int iso_ready(int out, const struct kb_proc_res *res, int go)
{
	char c;

	if (!write_full(out, res, sizeof(*res)) || read(go, &c, 1) != 1)
		return -EPIPE;
	return 0;
}

/*
 * Tenant A: ROW_ALLOC of @env->a_rows rows, one EXTEND that gives them
 * @env->a_pages pages together, one RELEASE of all, until @env->secs
 * have passed; EXTEND and RELEASE timed.
 */
static struct kb_proc_res iso_tenant_a(const struct iso_env *env, int out,
				       int go)
{
	u32 rows = env->a_rows, per = env->a_pages / rows, i;
	struct kvpool_handle *h = xcalloc(rows, sizeof(*h));
	struct kvpool_extend_entry *e = xcalloc(rows, sizeof(*e));
	u32 *ids = xcalloc((size_t)per * rows, sizeof(u32));
	u64 *t_ext = xcalloc(ISO_MAX_OPS, sizeof(u64));
	u64 *t_rel = xcalloc(ISO_MAX_OPS, sizeof(u64));
	struct kb_proc_res res = { 0 };
	struct kvpool_stats st;
	struct kvpool *kp = NULL;
	u64 n = 0, t_end, t0, t1, t2;
	char path[32];
	int ret;

	snprintf(path, sizeof(path), "/dev/kvpool%u", env->x);
	ret = kb_become(ISO_UID_A);
	if (!ret)
		ret = kvpool_open(path, &kp);
	if (!ret)
		ret = kvpool_stats(kp, &st);
	res.tenant_id = ret ? 0 : st.out_tenant_id;
	res.err = ret;
	if (!ret)
		ret = iso_ready(out, &res, go);
	if (ret)
		goto out;
	t_end = kb_ns() + (u64)(env->secs * 1e9);
	while (n < ISO_MAX_OPS && kb_ns() < t_end) {
		ret = kvpool_alloc_rows(kp, h, rows, NULL);
		if (ret < 0)
			goto out;
		for (i = 0; i < rows; i++) {
			e[i].handle = h[i];
			e[i].new_len = per;
		}
		t0 = kb_ns();
		ret = kvpool_extend(kp, e, rows, ids, per * rows, NULL);
		t1 = kb_ns();
		if (ret >= 0)
			ret = kvpool_release(kp, h, rows, NULL);
		t2 = kb_ns();
		if (ret < 0)
			goto out;
		t_ext[n] = t1 - t0;
		t_rel[n++] = t2 - t1;
	}
	ret = 0;
	kb_lat_of(t_ext, n, &res.op[0]);
	kb_lat_of(t_rel, n, &res.op[1]);
out:
	res.err = ret < 0 ? ret : 0;
	kvpool_close(kp);
	free(h);
	free(e);
	free(ids);
	free(t_ext);
	free(t_rel);
	return res;
}

/* C's op: Y's watermarks, to one of two values in turn. */
static int iso_set_wmark(unsigned int pool, u64 i)
{
	return kvpool_set_wmark(pool, i % 2 ? 16 : 8, 32);
}

/* M's op: X's tenants. */
static int iso_list(unsigned int pool, u64 i)
{
	struct kvpool_tenant_info ti[ISO_MAX_TENANTS];
	int ret = kvpool_tenant_list(pool, ti, ISO_MAX_TENANTS);

	(void)i;
	return ret < 0 ? ret : 0;
}

/* M or C: @op on @pool until @secs have passed, each op timed. */
static struct kb_proc_res iso_ctl(int (*op)(unsigned int pool, u64 i),
				  unsigned int pool, double secs, int out,
				  int go)
{
	u64 *ts = xcalloc(ISO_MAX_OPS, sizeof(u64));
	struct kb_proc_res res = { 0 };
	u64 n = 0, t_end, t0;
	int ret;

	ret = iso_ready(out, &res, go);
	if (ret)
		goto out;
	t_end = kb_ns() + (u64)(secs * 1e9);
	while (n < ISO_MAX_OPS && (t0 = kb_ns()) < t_end) {
		ret = op(pool, n);
		if (ret < 0)
			goto out;
		ts[n++] = kb_ns() - t0;
		usleep(ISO_PAUSE_US);
	}
	ret = 0;
	kb_lat_of(ts, n, &res.op[0]);
out:
	res.err = ret;
	free(ts);
	return res;
}

static struct kb_proc_res iso_child(enum iso_role role,
				    const struct iso_env *env, int out, int go)
{
	switch (role) {
	case ISO_B:
		return kb_decode_child(env->x, env->secs, ISO_UID_B, out, go);
	case ISO_A:
		return iso_tenant_a(env, out, go);
	case ISO_M:
		return iso_ctl(iso_list, env->x, env->secs, out, go);
	default:
		return iso_ctl(iso_set_wmark, env->y, env->secs, out, go);
	}
}

struct iso_kid {
	pid_t pid;
	int fd;			/* its messages: ready, then the result */
};

static void iso_fork(struct iso_kid *k, enum iso_role role,
		     const struct iso_env *env, const int go[2])
{
	int fd[2];

	if (pipe(fd))
		kb_die("isolation: pipe: %s", strerror(errno));
	fflush(stdout);
	k->pid = fork();
	if (k->pid < 0)
		kb_die("isolation: fork: %s", strerror(errno));
	if (!k->pid) {
		struct kb_proc_res r;

		close(go[1]);
		close(fd[0]);
		r = iso_child(role, env, fd[1], go[0]);
		_exit(write_full(fd[1], &r, sizeof(r)) ? 0 : 1);
	}
	close(fd[1]);
	k->fd = fd[0];
}

static const char *const iso_role_names[ISO_NR_ROLES] = {
	[ISO_B] = "tenant B", [ISO_A] = "tenant A",
	[ISO_M] = "tenant list", [ISO_C] = "set_wmark",
};

/*
 * Say which tenants A and B joined, as the driver lists them, so that
 * the reader can see that they differ; they must, or nothing here
 * measures one tenant against another.
 */
static void iso_tenants(unsigned int x, const struct kb_proc_res *res)
{
	struct kvpool_tenant_info ti[ISO_MAX_TENANTS];
	u32 a = res[ISO_A].tenant_id, b = res[ISO_B].tenant_id;
	char list[160] = "";
	size_t len = 0;
	int n, i;

	n = kvpool_tenant_list(x, ti, ISO_MAX_TENANTS);
	if (n < 0)
		kb_die("isolation: CTL_TENANT_LIST of pool %u: %s", x,
		       kvpool_strerror(n));
	for (i = 0; i < n && i < ISO_MAX_TENANTS && len < sizeof(list); i++)
		len += snprintf(list + len, sizeof(list) - len,
				"%s%u (uid %u, %u clients)", i ? ", " : "",
				ti[i].tenant_id, ti[i].uid, ti[i].nr_clients);
	kb_note("isolation: pool %u: tenant A %u (uid %u), tenant B %u (uid %u); %s: %s",
		x, a, ISO_UID_A, b, ISO_UID_B, "CTL_TENANT_LIST", list);
	if (a == b)
		kb_die("isolation: A and B joined the same tenant %u", a);
}

/* Run case @cs: its children, all started at once; their results. */
static void iso_run(const struct iso_case *cs, struct iso_env env,
		    struct kb_proc_res *res, bool *listed)
{
	bool on[ISO_NR_ROLES] = {
		[ISO_B] = cs->b, [ISO_A] = cs->a_rows,
		[ISO_M] = cs->mon, [ISO_C] = cs->ctl,
	};
	struct iso_kid kid[ISO_NR_ROLES];
	int go[2], i;

	memset(res, 0, ISO_NR_ROLES * sizeof(*res));
	if (cs->a_rows) {
		env.a_rows = cs->a_rows;
		env.a_pages -= env.a_pages % cs->a_rows;
	}
	if (pipe(go))
		kb_die("isolation: pipe: %s", strerror(errno));
	for (i = 0; i < ISO_NR_ROLES; i++)
		if (on[i])
			iso_fork(&kid[i], i, &env, go);
	close(go[0]);
	/* Every child has opened what it needs before any starts. */
	for (i = 0; i < ISO_NR_ROLES; i++) {
		if (!on[i])
			continue;
		if (!read_full(kid[i].fd, &res[i], sizeof(res[i])))
			kb_die("isolation: %s: %s died before it started",
			       cs->name, iso_role_names[i]);
		if (res[i].err)
			kb_die("isolation: %s: %s: %s", cs->name,
			       iso_role_names[i], strerror(-res[i].err));
	}
	if (on[ISO_A] && on[ISO_B] && !*listed) {
		iso_tenants(env.x, res);
		*listed = true;
	}
	for (i = 0; i < ISO_NR_ROLES; i++)
		if (on[i] && write(go[1], "g", 1) != 1)
			kb_die("isolation: starting: %s", strerror(errno));
	close(go[1]);
	for (i = 0; i < ISO_NR_ROLES; i++) {
		u32 tid = res[i].tenant_id;
		int st;

		if (!on[i])
			continue;
		if (!read_full(kid[i].fd, &res[i], sizeof(res[i])))
			res[i].err = -EPIPE;
		res[i].tenant_id = tid;
		close(kid[i].fd);
		waitpid(kid[i].pid, &st, 0);
		if (res[i].err)
			kb_die("isolation: %s: %s: %s", cs->name,
			       iso_role_names[i], strerror(-res[i].err));
	}
}

/* M's and C's ops, of those in case @cs. */
static void iso_record_ctl(const struct iso_case *cs,
			   const struct kb_proc_res *res)
{
	static const char *const ops[] = { "tenant_list pool=X",
					   "set_wmark pool=Y" };
	const bool on[] = { cs->mon, cs->ctl };
	const struct kb_lat *l;
	char p[96];
	int i;

	for (i = 0; i < 2; i++) {
		if (!on[i])
			continue;
		l = &res[i ? ISO_C : ISO_M].op[0];
		snprintf(p, sizeof(p), "case=%s op=%s", cs->name, ops[i]);
		kb_record_tail("isolation", p, "kernel", "us/op", l->median,
			       l->min, l->max, l->p99, NAN, (u32)l->n);
		kb_record_tail("isolation", p, "kernel", "us/op-mean", l->mean,
			       l->mean, l->mean, NAN, NAN, (u32)l->n);
	}
}

static void iso_record(const struct iso_case *cs, const struct iso_env *env,
		       const struct kb_proc_res *res)
{
	static const char *const aops[] = { "extend", "release" };
	const struct kb_lat *l;
	char p[96];
	int i;

	if (cs->b) {
		l = &res[ISO_B].op[0];
		snprintf(p, sizeof(p), "case=%s pages=%u B=%u pt=1", cs->name,
			 env->pages, KB_PROC_ROWS);
		kb_record_tail("isolation", p, "kernel", "us/step", l->median,
			       l->min, l->max, l->p99, l->p999, (u32)l->n);
		/* What the stalls cost B in all: its steps in the time. */
		kb_record_tail("isolation", p, "kernel", "steps/s",
			       l->n / env->secs, l->n / env->secs,
			       l->n / env->secs, NAN, NAN, 1);
	}
	for (i = 0; cs->a_rows && i < 2; i++) {
		l = &res[ISO_A].op[i];
		snprintf(p, sizeof(p), "case=%s op=%s rows=%u pages=%u",
			 cs->name, aops[i], cs->a_rows,
			 env->a_pages - env->a_pages % cs->a_rows);
		kb_record_tail("isolation", p, "kernel", "ms/op",
			       l->median / 1e3, l->min / 1e3, l->max / 1e3,
			       NAN, NAN, (u32)l->n);
	}
	iso_record_ctl(cs, res);
}

static unsigned int iso_pool(u32 pages, u32 rows, u32 row_tokens)
{
	struct kvpool_pool_params pp = {
		.nr_pages = pages,
		.page_tokens = 1,
		.nr_rows = rows,
		.row_tokens = row_tokens,
	};
	unsigned int id;
	int ret;

	ret = kvpool_pool_create(&pp, &id);
	if (ret < 0)
		kb_die("isolation: creating a pool of %u pages: %s", pages,
		       kvpool_strerror(ret));
	return id;
}

static void iso_destroy(unsigned int id)
{
	int ret = kvpool_pool_destroy(id);

	if (ret < 0)
		kb_die("isolation: destroying pool %u: %s", id,
		       kvpool_strerror(ret));
}

static void iso_ratio(const char *params, const char *name, double num,
		      double den)
{
	kb_ratio("isolation", params, name, den > 0 ? num / den : NAN);
}

void kb_isolation(void)
{
	/* B's pages at most: every row at its longest (pt 1). */
	const u32 b_pages = KB_PROC_ROWS * KB_PROC_ROW_TOKENS;
	const u32 batch = KB_MAX_BATCH;
	const struct iso_case cases[CS_NR] = {
		[CS_ALONE] = { .name = "alone", .b = true },
		[CS_ONE_ROW] = { .name = "one-row", .b = true, .a_rows = 1 },
		[CS_BATCH] = { .name = "batch", .b = true, .a_rows = batch },
		[CS_CTL_IDLE] = { .name = "ctl-idle", .mon = true,
				  .ctl = true },
		[CS_CTL_BUSY] = { .name = "ctl-busy", .b = true, .a_rows = 1,
				  .mon = true, .ctl = true },
		[CS_CTL_NOMON] = { .name = "ctl-nomon", .b = true,
				   .a_rows = 1, .ctl = true },
	};
	struct kb_proc_res res[CS_NR][ISO_NR_ROLES];
	u32 pages = min_u32(kb_opt.quick ? ISO_PAGES_QUICK : ISO_PAGES,
			    kb_opt.scale_max);
	struct iso_env env = { .pages = pages, .secs = kb_opt.iso_s };
	struct kvpool_info info;
	struct kvpool *kp;
	bool listed = false;
	char path[32], p[96];
	const struct kb_lat *l0, *l;
	u32 i;
	int ret;

	if (!kb_want("isolation"))
		return;
	if (!kb_present[KB_KERNEL]) {
		kb_note("isolation: skipped: kernel only (kernel side absent)");
		return;
	}
	/* A's ops must take most of the pool, or they are not its worst. */
	if (pages < 2 * b_pages) {
		kb_note("isolation: skipped: a pool of %u pages is under %u (--scale-max)",
			pages, 2 * b_pages);
		return;
	}
	env.a_pages = min_u32(pages - b_pages, KB_MAX_ROW_TOKENS);
	/* Room for A's batch and B's rows; row_tokens for A's one row. */
	env.x = iso_pool(pages, batch + KB_PROC_ROWS + 16, env.a_pages);
	env.y = iso_pool(ISO_Y_PAGES, 4, ISO_Y_PAGES);
	snprintf(path, sizeof(path), "/dev/kvpool%u", env.x);
	if (chmod(path, 0666))
		kb_die("isolation: chmod %s: %s", path, strerror(errno));
	/* The batch is the most rows one call may name (KVPOOL_INFO). */
	ret = kvpool_open(path, &kp);
	if (ret < 0)
		kb_die("isolation: opening %s: %s", path, kvpool_strerror(ret));
	kvpool_info(kp, &info);
	kvpool_close(kp);
	if (info.out_max_batch < batch)
		kb_die("isolation: pool %u: max_batch %u, not %u", env.x,
		       info.out_max_batch, batch);

	for (i = 0; i < CS_NR; i++) {
		iso_run(&cases[i], env, res[i], &listed);
		iso_record(&cases[i], &env, res[i]);
	}
	iso_destroy(env.x);
	iso_destroy(env.y);

	/* Tenant B's steps beside its steps alone; C's ops likewise. */
	snprintf(p, sizeof(p), "pages=%u B=%u pt=1", pages, KB_PROC_ROWS);
	l0 = &res[CS_ALONE][ISO_B].op[0];
	for (i = CS_ONE_ROW; i <= CS_BATCH; i++) {
		char name[40];

		l = &res[i][ISO_B].op[0];
		snprintf(name, sizeof(name), "%s/alone p50", cases[i].name);
		iso_ratio(p, name, l->median, l0->median);
		snprintf(name, sizeof(name), "%s/alone p99", cases[i].name);
		iso_ratio(p, name, l->p99, l0->p99);
		snprintf(name, sizeof(name), "%s/alone steps/s",
			 cases[i].name);
		iso_ratio(p, name, l->n, l0->n);
	}
	l0 = &res[CS_CTL_IDLE][ISO_C].op[0];
	for (i = CS_CTL_BUSY; i <= CS_CTL_NOMON; i++) {
		char name[40];

		l = &res[i][ISO_C].op[0];
		snprintf(name, sizeof(name), "%s/ctl-idle mean",
			 cases[i].name);
		iso_ratio("op=set_wmark pool=Y", name, l->mean, l0->mean);
		snprintf(name, sizeof(name), "%s/ctl-idle max", cases[i].name);
		iso_ratio("op=set_wmark pool=Y", name, l->max, l0->max);
	}
}
