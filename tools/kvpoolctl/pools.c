// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reading pools and their tenants, as status, metrics and top show
 * them: sysfs for the figures, /dev/kvpool-control for the tenants
 * (as root), the pool's own file for a user's own tenant.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kvpoolctl.h"

/*
 * All of pool @id's tenants: *@out is malloc()ed (NULL if none), *@nr
 * their number. Returns 0 or -errno from kvpool_tenant_list().
 */
int fetch_tenants(unsigned int id, struct kvpool_tenant_info **out,
		  size_t *nr, char **paths)
{
	struct kvpool_tenant_info *t = NULL, *tmp;
	size_t room = 0, need = 0;
	char *p = NULL, *ptmp;
	int n, m;

	*out = NULL;
	*nr = 0;
	if (paths)
		*paths = NULL;
	n = kvpool_tenant_list_paths(id, NULL, 0, NULL, 0, &need);
	/* Tenants come and go: ask again until the room was enough. */
	while (n > 0) {
		tmp = realloc(t, (size_t)n * sizeof(*t));
		ptmp = realloc(p, need ? need : 1);
		if (tmp)
			t = tmp;
		if (ptmp)
			p = ptmp;
		if (!tmp || !ptmp) {
			free(t);
			free(p);
			return -ENOMEM;
		}
		room = need;
		m = kvpool_tenant_list_paths(id, t, (unsigned int)n, p, room,
					     &need);
		if (m <= n && need <= room) {
			n = m;
			break;
		}
		n = m;
	}
	if (n < 0) {
		free(t);
		free(p);
		return n;
	}
	*out = t;
	*nr = (size_t)n;
	if (paths)
		*paths = p;
	else
		free(p);
	return 0;
}

/*
 * Each tenant's cgroup path, or NULL: a path tenant's own (from @kpaths,
 * the kernel's list), else its cgroup id's as found under the cgroup v2
 * root. A malloc()ed array of @nr.
 */
char **tenant_cgroups(const struct kvpool_tenant_info *t, size_t nr,
		      const char *kpaths)
{
	struct cg_want *w;
	char **paths;
	size_t i;

	paths = calloc(nr ? nr : 1, sizeof(*paths));
	w = calloc(nr ? nr : 1, sizeof(*w));
	if (!paths || !w) {
		free(w);
		return paths;	/* numbers only, or NULL */
	}
	for (i = 0; i < nr; i++)
		w[i].id = t[i].flags & KVPOOL_TENANT_BY_PATH ? 0 :
			  t[i].cgroup_id;
	resolve_cgroups(w, nr);
	for (i = 0; i < nr; i++) {
		paths[i] = w[i].path;
		if ((t[i].flags & KVPOOL_TENANT_BY_PATH) && kpaths &&
		    t[i].path_offset)
			paths[i] = strdup(kpaths + t[i].path_offset);
	}
	free(w);
	return paths;
}

void free_strings(char **v, size_t nr)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < nr; i++)
		free(v[i]);
	free(v);
}

static void free_pool_row(struct pool_row *r)
{
	free_strings(r->cgroups, r->nr_trows);
	free(r->trows);
	memset(r, 0, sizeof(*r));
}

/*
 * Pool @id's chunk budget (ABI 4) from sysfs: *@on whether it is on one
 * (its budget file holds an id, not -1, and it has a chunks file), its
 * id and the chunks it holds now. Only these two files: status and
 * arena show must not open the pool to know.
 */
void read_pool_budget(unsigned int id, bool *on, unsigned int *budget,
		      unsigned int *chunks)
{
	unsigned long long b = pool_sysfs_u64(id, "budget");
	unsigned long long c = pool_sysfs_u64(id, "chunks");

	*on = b <= UINT32_MAX && c <= UINT32_MAX;
	*budget = *on ? (unsigned int)b : 0;
	*chunks = *on ? (unsigned int)c : 0;
}

/*
 * The figures kvpool_pool_status() does not read; a module from before
 * tenants and pressure lacks them, and gets has_tenants false (so does a
 * pool whose figures cannot be read: they show as missing).
 */
static void read_pool_extra(struct pool_row *r)
{
	char path[80];

	r->has_tenants = !kvpool_pool_extra(r->id, &r->x);
	if (!r->has_tenants)
		memset(&r->x, 0, sizeof(r->x));
	pool_gpu_name(r->id, r->gpu, sizeof(r->gpu));
	/* kvpool_pool_status() reads a file an older module lacks as 0. */
	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/quarantine_pages",
		 r->id);
	r->has_quarantine = !access(path, F_OK);
	read_pool_budget(r->id, &r->on_budget, &r->budget, &r->chunks);
}

/*
 * The pools to act on: @arg's pool, or every pool. On success *@ids is a
 * malloc()ed array of *@nr ids; the return value is an exit code.
 */
int select_pools(const char *arg, unsigned int **ids, size_t *nr)
{
	unsigned int id;
	int n, m;

	*ids = NULL;
	*nr = 0;
	if (arg) {
		if (!parse_pool(arg, &id))
			return bad_pool(arg);
		*ids = malloc(sizeof(**ids));
		if (!*ids)
			return pool_error(-ENOMEM, "malloc", -1);
		**ids = id;
		*nr = 1;
		return EXIT_OK;
	}

	/* Count, then fetch; a pool made in between is simply not shown. */
	n = kvpool_pool_list(NULL, 0);
	if (n == -ENODEV && !module_loaded())
		return not_loaded();
	if (n < 0)
		return pool_error(n, "listing pools", -1);
	if (!n)
		return EXIT_OK;
	*ids = calloc((size_t)n, sizeof(**ids));
	if (!*ids)
		return pool_error(-ENOMEM, "malloc", -1);
	m = kvpool_pool_list(*ids, (unsigned int)n);
	if (m < 0) {
		free(*ids);
		*ids = NULL;
		return pool_error(m, "listing pools", -1);
	}
	*nr = (size_t)(m < n ? m : n);
	return EXIT_OK;
}

/*
 * The tenant rows of @nr tenants @t (taken over: freed here) and their
 * cgroups' paths; NULL if out of memory.
 */
struct tenant_row *tenant_rows(struct kvpool_tenant_info *t,
			       char **cgroups, size_t nr)
{
	struct tenant_row *rows;
	size_t i;

	rows = calloc(nr ? nr : 1, sizeof(*rows));
	for (i = 0; rows && i < nr; i++) {
		rows[i].t = t[i];
		rows[i].cgroup = cgroups ? cgroups[i] : NULL;
	}
	free(t);
	return rows;
}

/* This process's cgroup v2 path ("/user.slice/..."), or "" if unknown. */
static void own_cgroup(char *buf, size_t len)
{
	char line[PATH_MAX + 8];
	FILE *f;

	buf[0] = '\0';
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%.*s", (int)len - 1, line + 3);
		break;
	}
	fclose(f);
}

/*
 * What a user without CAP_SYS_ADMIN may see of pool @r's tenants: its
 * own, from KVPOOL_STATS, if it may open the pool. Opening it makes this
 * process a client for the moment (of its own tenant, which the kernel
 * makes if need be). Sets tenants_shown and tenant_note.
 */
static void own_tenant(struct pool_row *r)
{
	static char cgroup[PATH_MAX];
	const char *root = cgroup_root();
	char path[32], owner[160], dir[2 * PATH_MAX];
	struct kvpool_stats st;
	struct kvpool *kp;
	struct stat sb;
	int err;

	snprintf(path, sizeof(path), "/dev/kvpool%u", r->id);
	err = kvpool_open(path, &kp);
	if (err) {
		r->tenants_shown = TENANTS_NONE;
		dev_owner(path, owner, sizeof(owner));
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "listing them needs CAP_SYS_ADMIN, and %s, which would show yours, %s (%s)",
			 path, err == -EACCES ?
			 "is not open to you" : "could not be opened",
			 err == -EACCES ? owner : kvpool_strerror(err));
		return;
	}
	err = kvpool_stats(kp, &st);
	kvpool_close(kp);
	if (err) {
		r->tenants_shown = TENANTS_NONE;
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "KVPOOL_STATS: %s", kvpool_strerror(err));
		return;
	}
	r->trows = calloc(1, sizeof(*r->trows));
	if (!r->trows) {
		r->tenants_shown = TENANTS_NONE;
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "out of memory");
		return;
	}
	r->nr_trows = 1;
	r->trows->own = true;
	r->trows->t.tenant_id = st.out_tenant_id;
	r->trows->t.uid = (unsigned int)geteuid();
	r->trows->t.pages = st.out_tenant_pages;
	r->trows->t.rows = st.out_tenant_rows;
	r->trows->t.max_pages = st.out_tenant_max_pages;
	r->trows->t.min_pages = st.out_tenant_min_pages;
	r->trows->t.max_rows = st.out_tenant_max_rows;
	own_cgroup(cgroup, sizeof(cgroup));
	if (*cgroup) {
		r->trows->cgroup = cgroup;
		snprintf(dir, sizeof(dir), "%s%s", root ? root : "", cgroup);
		if (root && !stat(dir, &sb))
			r->trows->t.cgroup_id = sb.st_ino;
	}
	r->tenants_shown = TENANTS_OWN;
	snprintf(r->tenant_note, sizeof(r->tenant_note),
		 "listing them all needs CAP_SYS_ADMIN");
}

/*
 * Pool @r's tenants: all of them as root, else the caller's own where
 * it may open the pool. A pool destroyed meanwhile returns -ENODEV; any
 * other failure is said in tenant_note, in their place.
 */
static int status_tenants(struct pool_row *r)
{
	struct kvpool_tenant_info *t;
	char *paths;
	size_t nr;
	int err;

	err = fetch_tenants(r->id, &t, &nr, &paths);
	if (err == -ENODEV)
		return err;
	r->tenant_err = err;
	switch (-err) {
	case 0:
		r->cgroups = tenant_cgroups(t, nr, paths);
		free(paths);
		r->trows = tenant_rows(t, r->cgroups, nr);
		r->nr_trows = r->trows ? nr : 0;
		r->tenants_shown = TENANTS_ALL;
		return 0;
	case EPERM:
	case EACCES:
		own_tenant(r);
		return 0;
	case ENOTTY:
		snprintf(r->tenant_note, sizeof(r->tenant_note),
			 "this kvpool module predates tenants");
		break;
	default:
		snprintf(r->tenant_note, sizeof(r->tenant_note), "%s",
			 kvpool_strerror(err));
	}
	r->tenants_shown = TENANTS_NONE;
	return 0;
}

/*
 * A figure with no field in the library's structs: pool @id's sysfs file
 * @file. ULLONG_MAX when the module has no such file.
 */
unsigned long long pool_sysfs_u64(unsigned int id, const char *file)
{
	char path[96], buf[32], *end;
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/%s", id,
		 file);
	f = fopen(path, "re");
	if (!f)
		return ULLONG_MAX;
	if (!fgets(buf, sizeof(buf), f) || !parse_decimal(buf, &v, &end) ||
	    (*end && *end != '\n'))
		v = ULLONG_MAX;
	fclose(f);
	return v;
}

/*
 * Pool @id's arena: its page and whole size in bytes into *@page and
 * *@total, both 0 where it has none. sysfs has them for every user, and
 * reading them leaves no trace in the pool. A module older than those
 * files answers only a client: then the pool is opened for a moment,
 * where this user may (its mode decides; a refused open leaves 0), and
 * the open counts in its clients_opened.
 */
void pool_arena_bytes(unsigned int id, unsigned long long *page,
		      unsigned long long *total)
{
	struct kvpool_arena a;
	struct kvpool *kp;
	char path[32];

	*page = pool_sysfs_u64(id, "arena_page_bytes");
	*total = pool_sysfs_u64(id, "arena_bytes");
	if (*page != ULLONG_MAX && *total != ULLONG_MAX)
		return;
	*page = 0;
	*total = 0;
	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	if (kvpool_open(path, &kp))
		return;
	if (!kvpool_arena_info(kp, &a) && a.out_kind != KVPOOL_ARENA_NONE) {
		*page = a.out_page_bytes;
		*total = a.out_bytes;
	}
	kvpool_close(kp);
}

/*
 * Pool @r's page size in @units into r->factor; bytes come from its
 * arena (pool_arena_bytes(); 0 where it has none or, under an older
 * module, it cannot be opened: those figures show as unknown).
 */
void pool_units(struct pool_row *r, int units)
{
	unsigned long long total;

	r->factor = 1;
	if (units == UNIT_TOKENS)
		r->factor = r->info.out_page_tokens;
	if (units != UNIT_BYTES)
		return;
	pool_arena_bytes(r->id, &r->page_bytes, &total);
	r->factor = r->page_bytes;
}

/*
 * Read the pools of @arg (NULL: every pool) into *@rows, *@nrows of them:
 * sysfs's figures, the tenants as status_tenants() can, page sizes in
 * @units. Returns an exit code.
 */
int collect_pools(const char *arg, int units, struct pool_row **out,
		  size_t *nrows)
{
	struct pool_row *rows = NULL;
	unsigned int *ids;
	size_t nr, i;
	int ret;

	*out = NULL;
	*nrows = 0;
	ret = select_pools(arg, &ids, &nr);
	if (ret)
		return ret;
	rows = calloc(nr ? nr : 1, sizeof(*rows));
	if (!rows) {
		free(ids);
		return pool_error(-ENOMEM, "malloc", -1);
	}
	for (i = 0; i < nr; i++) {
		struct pool_row *r = &rows[*nrows];
		int err;

		r->id = ids[i];
		err = kvpool_pool_status(ids[i], &r->info, &r->st);
		if (!err) {
			read_pool_extra(r);
			err = status_tenants(r);
		}
		/* Listed but gone by now: it was destroyed meanwhile. */
		if (err == -ENODEV && !arg) {
			free_pool_row(r);
			continue;
		}
		if (err) {
			ret = pool_error(err, "reading sysfs", (int)ids[i]);
			free_pool_row(r);
			break;
		}
		pool_units(r, units);
		(*nrows)++;
	}
	free(ids);
	if (ret) {
		for (i = 0; i < *nrows; i++)
			free_pool_row(&rows[i]);
		free(rows);
		*nrows = 0;
		return ret;
	}
	*out = rows;
	return EXIT_OK;
}

void free_pools(struct pool_row *rows, size_t nr)
{
	size_t i;

	for (i = 0; rows && i < nr; i++)
		free_pool_row(&rows[i]);
	free(rows);
}
