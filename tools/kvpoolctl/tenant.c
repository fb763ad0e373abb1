// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl tenant set, remove and list.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "kvpoolctl.h"

const char usage_tenant[] =
"tenant set POOL (--cgroup PATH [--uid UID] | --cgroup-id N --uid UID)\n"
"           [LIMITS] [--label NAME]\n"
"tenant remove POOL (--cgroup PATH [--uid UID] | --cgroup-id N --uid UID |\n"
"                    --id ID)\n"
"tenant list [--json | --csv] [-r] [-n] [-o COLS] [--units pages|tokens|bytes] POOL\n"
"    A client's tenant is chosen when it opens the pool, from its cgroup v2\n"
"    and uid: one set on that cgroup's id and uid; else one set on the path\n"
"    of that cgroup or its nearest ancestor (for the uid, then for every\n"
"    uid); else its own cgroup's, without limits. Needs root.\n"
"    set: give the tenant LIMITS, creating it if need be; print its id.\n"
"    --cgroup PATH     the cgroup by path, as /proc/PID/cgroup shows it\n"
"                      (/system.slice/x.service) or as a folder under\n"
"                      /sys/fs/cgroup; it need not exist yet. The limits\n"
"                      cover every cgroup below it and survive a restart\n"
"                      of the service (its cgroup made again)\n"
"    --cgroup-id N     the cgroup by id (the inode number of its folder):\n"
"                      this one cgroup, until it is removed\n"
"    --uid UID         the user, a number or a name; with --cgroup, left\n"
"                      out: every user\n"
"    --id ID           (remove) the tenant by id, as list shows it\n"
"    --label NAME      a name for status output, at most 31 bytes\n"
"    LIMITS, any of:\n"
"    --max PAGES       hard limit on the pages its clients hold\n"
"    --min PAGES       pages guaranteed to it: not free to other tenants\n"
"    --max-rows N      limit on the rows it holds, parked ones included\n"
"    Every limit not given is set to 0, none; the label is kept unless\n"
"    given. The pool's guarantees together may not exceed its pages.\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n"
"    remove: drop the tenant's limits. Nothing is taken: its clients keep\n"
"    it, unlimited, until they close, and new ones no longer join it.\n"
"    list: show the pool's tenants, their use and limits; UID * is every\n"
"    user, CGROUP a path the limits were set on or the cgroup of an id.\n"
TABLE_OPTS_HELP;

/* --uid: a number or a user name. */
static bool parse_uid(const char *s, unsigned int *uid)
{
	struct passwd *pw;

	if (*s >= '0' && *s <= '9')
		return !strpbrk(s, "kKmMgG") && parse_u32(s, uid) == NUM_OK &&
		       *uid != UINT32_MAX;
	pw = getpwnam(s);
	if (!pw)
		return false;
	*uid = (unsigned int)pw->pw_uid;
	return true;
}

/* --cgroup-id: a 64-bit decimal. */
static bool parse_u64(const char *s, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (!parse_decimal(s, &v, &end) || *end)
		return false;
	*out = v;
	return true;
}

/*
 * tenant set refused with EINVAL: say what the rules are and, as far as
 * they can be read, where this pool stands against them.
 */
/* Whether list entry @ti is the tenant @t (and @rel, for a path) names. */
static bool tenant_is(const struct kvpool_tenant_info *ti, const char *kpaths,
		      const struct kvpool_ctl_tenant *t, const char *rel)
{
	const __u32 how = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_ANY_UID;

	if (rel)
		return (ti->flags & how) == (t->flags & how) &&
		       ti->uid == t->uid && kpaths && ti->path_offset &&
		       !strcmp(kpaths + ti->path_offset, rel);
	return !(ti->flags & KVPOOL_TENANT_BY_PATH) &&
	       ti->cgroup_id == t->cgroup_id && ti->uid == t->uid;
}

static void explain_tenant_einval(unsigned int id,
				  const struct kvpool_ctl_tenant *t,
				  const char *rel)
{
	struct kvpool_tenant_info *ti;
	struct kvpool_stats st;
	struct kvpool_info in;
	unsigned long long others = 0;
	char *kpaths;
	size_t nr, i;

	err_msg("tenant set: the kernel refused these limits");
	fprintf(stderr, "rules: --min may not exceed --max (when --max is set);\n"
		"the pool's guarantees (--min) together may not exceed its pages, reserved ones not counted;\n"
		"--label has at most %d bytes\n", KVPOOL_LABEL_LEN - 1);
	if (t->max_pages && t->min_pages > t->max_pages) {
		fprintf(stderr, "here: --min %u is above --max %u\n",
			t->min_pages, t->max_pages);
		return;
	}
	if (kvpool_pool_status(id, &in, &st) ||
	    fetch_tenants(id, &ti, &nr, &kpaths))
		return;
	for (i = 0; i < nr; i++)
		if (!tenant_is(&ti[i], kpaths, t, rel))
			others += ti[i].min_pages;
	free(kpaths);
	free(ti);
	fprintf(stderr, "here: pool %u has %u pages not reserved; other tenants are guaranteed %llu, this one asks %u\n",
		id, in.out_nr_pages - st.out_reserved_pages, others,
		t->min_pages);
}

/*
 * CTL_TENANT_SET by path when @rel is given, else as @t names the tenant.
 * The errors only a path has are said here, with @what before them.
 */
static int tenant_set_call(unsigned int id, struct kvpool_ctl_tenant *t,
			   const char *rel, const char *what)
{
	int ret;

	if (!rel)
		return kvpool_tenant_set(id, t);
	ret = kvpool_tenant_set_path(id, rel, t);
	if (ret == -E2BIG)
		err_msg("%s: the kvpool module predates tenants by cgroup path; use --cgroup-id (the limit then covers that one cgroup, not a restart of it)",
			what);
	else if (ret == -ENAMETOOLONG)
		err_msg("%s: the cgroup path '%s' is longer than %d bytes",
			what, rel, KVPOOL_CGROUP_PATH_MAX - 1);
	else if (ret == -ENOSPC)
		err_msg("%s: pool %u's tenant paths would pass 1 MiB together",
			what, id);
	return ret;
}

/* The options of tenant set and remove; TOPT_ID is remove's only. */
enum {
	TOPT_CGROUP = 256, TOPT_CGROUP_ID, TOPT_UID, TOPT_ID, TOPT_MAX,
	TOPT_MIN, TOPT_MAX_ROWS, TOPT_LABEL
};

/* How a tenant set or remove names the tenant, as its options gave it. */
struct tenant_name {
	const char *cgroup;	/* --cgroup */
	bool cgroup_id;		/* --cgroup-id, in kvpool_ctl_tenant */
	bool uid;		/* --uid, likewise */
	bool id;		/* --id, likewise */
};

/*
 * Option @c (with @arg) if it is one that names the tenant: into @t and
 * @n. Returns EXIT_OK, EXIT_USAGE for a bad value, or -1 when @c is not
 * one of them.
 */
static int tenant_name_opt(int c, const char *arg,
			   struct kvpool_ctl_tenant *t, struct tenant_name *n)
{
	switch (c) {
	case TOPT_CGROUP:
		n->cgroup = arg;
		return EXIT_OK;
	case TOPT_CGROUP_ID:
		if (!parse_u64(arg, &t->cgroup_id)) {
			err_msg("--cgroup-id: not a number: '%s'", arg);
			return EXIT_USAGE;
		}
		n->cgroup_id = true;
		return EXIT_OK;
	case TOPT_UID:
		if (!parse_uid(arg, &t->uid)) {
			err_msg("--uid: no such user: '%s'", arg);
			return EXIT_USAGE;
		}
		n->uid = true;
		return EXIT_OK;
	case TOPT_ID:
		if (!parse_u32(arg, &t->tenant_id)) {
			err_msg("--id: not a tenant id: '%s'", arg);
			return EXIT_USAGE;
		}
		n->id = true;
		t->flags |= KVPOOL_TENANT_BY_ID;
		return EXIT_OK;
	}
	return -1;
}

/*
 * The pool argument and, for --cgroup, the path as the kernel names it
 * (*@rel, malloc()ed) and every uid unless --uid was given. Exactly one
 * way of naming it, and --uid only where it means something, else a
 * usage error naming @what. The return value is an exit code.
 */
static int tenant_name_end(int argc, char **argv, const char *what,
			   const struct tenant_name *n,
			   struct kvpool_ctl_tenant *t, unsigned int *id,
			   char **rel)
{
	*rel = NULL;
	if (argc - optind != 1 || !!n->cgroup + n->cgroup_id + n->id != 1 ||
	    (n->cgroup_id && !n->uid) || (n->id && n->uid)) {
		err_msg("%s needs POOL and one of --cgroup PATH [--uid UID], --cgroup-id N --uid UID%s",
			what, t->flags & KVPOOL_TENANT_REMOVE ? ", --id ID" : "");
		return usage_of(usage_tenant, stderr);
	}
	if (!parse_pool(argv[optind], id))
		return bad_pool(argv[optind]);
	if (!n->cgroup)
		return EXIT_OK;
	if (!n->uid)
		t->flags |= KVPOOL_TENANT_ANY_UID;
	return cgroup_rel_of(n->cgroup, rel);
}

static int tenant_remove(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, TOPT_CGROUP },
		{ "cgroup-id", required_argument, NULL, TOPT_CGROUP_ID },
		{ "uid", required_argument, NULL, TOPT_UID },
		{ "id", required_argument, NULL, TOPT_ID },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_ctl_tenant t = { .flags = KVPOOL_TENANT_REMOVE };
	struct tenant_name n = { 0 };
	char *rel;
	unsigned int id;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return usage_of(usage_tenant, stdout);
		ret = tenant_name_opt(c, optarg, &t, &n);
		if (ret < 0)
			return usage_of(usage_tenant, stderr);
		if (ret)
			return ret;
	}
	ret = tenant_name_end(argc, argv, "tenant remove", &n, &t, &id, &rel);
	if (ret)
		return ret;
	ret = tenant_set_call(id, &t, rel, "tenant remove");
	free(rel);
	if (ret == -ENOENT) {
		err_msg("tenant remove: pool %u has no tenant with limits set so named%s",
			id, n.cgroup && !n.uid ?
			" (for every uid; give --uid for one user's)" : "");
		return EXIT_FAIL;
	}
	if (ret == -E2BIG || ret == -ENAMETOOLONG)
		return EXIT_FAIL;	/* said */
	if (ret < 0)
		return ctl_error(ret, "tenant remove", id, "tenants");
	printf("%d\n", ret);
	return EXIT_OK;
}

static int tenant_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cgroup", required_argument, NULL, TOPT_CGROUP },
		{ "cgroup-id", required_argument, NULL, TOPT_CGROUP_ID },
		{ "uid", required_argument, NULL, TOPT_UID },
		{ "max", required_argument, NULL, TOPT_MAX },
		{ "min", required_argument, NULL, TOPT_MIN },
		{ "max-rows", required_argument, NULL, TOPT_MAX_ROWS },
		{ "label", required_argument, NULL, TOPT_LABEL },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_ctl_tenant t = { 0 };
	struct tenant_name n = { 0 };
	unsigned int id, *field;
	const char *name;
	char *rel;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_tenant, stdout);
		case TOPT_LABEL:
			if (strlen(optarg) >= sizeof(t.label)) {
				err_msg("--label: '%s' is longer than %zu bytes",
					optarg, sizeof(t.label) - 1);
				return EXIT_USAGE;
			}
			memcpy(t.label, optarg, strlen(optarg));
			continue;
		case TOPT_MAX:
			field = &t.max_pages;
			name = "max";
			break;
		case TOPT_MIN:
			field = &t.min_pages;
			name = "min";
			break;
		case TOPT_MAX_ROWS:
			field = &t.max_rows;
			name = "max-rows";
			break;
		case TOPT_ID:
			return usage_of(usage_tenant, stderr);
		default:
			ret = tenant_name_opt(c, optarg, &t, &n);
			if (ret < 0)
				return usage_of(usage_tenant, stderr);
			if (ret)
				return ret;
			continue;
		}
		if (!parse_count_opt(name, optarg, field))
			return EXIT_USAGE;
	}
	ret = tenant_name_end(argc, argv, "tenant set", &n, &t, &id, &rel);
	if (ret)
		return ret;

	ret = tenant_set_call(id, &t, rel, "tenant set");
	if (ret == -EINVAL) {
		explain_tenant_einval(id, &t, rel);
		free(rel);
		return EXIT_FAIL;
	}
	free(rel);
	if (ret == -E2BIG || ret == -ENAMETOOLONG || ret == -ENOSPC)
		return EXIT_FAIL;	/* said */
	if (ret == -EMFILE) {
		err_msg("tenant set: pool %u has its maximum of 4096 tenants",
			id);
		return EXIT_FAIL;
	}
	if (ret < 0)
		return ctl_error(ret, "tenant set", id, "tenants");
	printf("%d\n", ret);
	return EXIT_OK;
}

static int tenant_list(int argc, char **argv)
{
	struct kvpool_tenant_info *t;
	struct tenant_row *rows;
	struct pool_row pr = { 0 };
	struct outfmt o;
	char **cgroups, *paths;
	unsigned int id;
	size_t nr;
	bool done;
	int ret;

	ret = parse_table_pool(argc, argv, usage_tenant, &o, tenant_cols,
			       TC_NR, &id, NULL, &done);
	if (done)
		return ret;
	ret = fetch_tenants(id, &t, &nr, &paths);
	if (ret)
		return ctl_error(ret, "tenant list", id, "tenants");
	pr.id = id;
	if (o.units && kvpool_pool_status(id, &pr.info, NULL)) {
		free(t);
		free(paths);
		return pool_error(-ENODEV, "tenant list", (int)id);
	}
	pool_units(&pr, o.units);
	cgroups = tenant_cgroups(t, nr, paths);
	free(paths);
	rows = tenant_rows(t, cgroups, nr);
	if (!rows) {
		free_strings(cgroups, nr);
		return pool_error(-ENOMEM, "malloc", -1);
	}
	if (o.json) {
		printf("{\n  \"pool_id\": %u,\n  \"tenants\": ", id);
		print_tenants_as(rows, nr, &o, 1, 2);
		printf("\n}\n");
	} else if (nr || o.csv) {
		print_tenants_as(rows, nr, &o, pr.factor, 0);
	} else {
		printf("pool %u has no tenants\n", id);
	}
	free_strings(cgroups, nr);
	free(rows);
	return EXIT_OK;
}

int cmd_tenant(int argc, char **argv)
{
	static const struct subcommand sub[] = {
		{ "set", tenant_set }, { "remove", tenant_remove },
		{ "list", tenant_list },
	};

	return run_subcommand(argc, argv, usage_tenant, sub, ARRAY_SIZE(sub));
}
