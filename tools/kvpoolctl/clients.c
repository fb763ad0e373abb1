// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl clients: the open pool files, from /proc/PID/fdinfo.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvpoolctl.h"

/* The kvpool-* lines of one fdinfo file into *@c; false if not a pool's. */
static bool read_fdinfo(int dirfd_, const char *name, struct client_row *c)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "kvpool-pool:", offsetof(struct client_row, pool) },
		{ "kvpool-client-id:", offsetof(struct client_row, client) },
		{ "kvpool-tenant:", offsetof(struct client_row, tenant) },
		{ "kvpool-rows:", offsetof(struct client_row, rows) },
		{ "kvpool-slots:", offsetof(struct client_row, slots) },
		{ "kvpool-pages:", offsetof(struct client_row, pages) },
		{ "kvpool-cache-pages:", offsetof(struct client_row, cache) },
	};
	unsigned int seen = 0;
	char line[128];
	size_t i;
	FILE *f;
	int fd;

	fd = openat(dirfd_, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < ARRAY_SIZE(keys); i++) {
			size_t n = strlen(keys[i].key);

			if (strncmp(line, keys[i].key, n))
				continue;
			if (sscanf(line + n, "%u",
				   (unsigned int *)((char *)c + keys[i].off)) == 1)
				seen |= 1U << i;
		}
	}
	fclose(f);
	/* The pool and the client id at least; a newer field may lack. */
	return (seen & 3) == 3;
}

static int client_cmp(const void *a, const void *b)
{
	const struct client_row *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	return (x->client > y->client) - (x->client < y->client);
}

/* Add client @c, or count one more descriptor of a client listed. */
static int add_client(struct client_list *l, const struct client_row *c)
{
	struct client_row *v;
	size_t i;

	for (i = 0; i < l->nr; i++) {
		if (l->v[i].pool == c->pool && l->v[i].client == c->client) {
			l->v[i].nr_fds++;
			return 0;
		}
	}
	if (l->nr == l->alloc) {
		size_t n = l->alloc ? 2 * l->alloc : 16;

		v = realloc(l->v, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->alloc = n;
	}
	l->v[l->nr] = *c;
	l->v[l->nr].nr_fds = 1;
	l->nr++;
	return 0;
}

/*
 * The clients of every pool (@pool < 0) or of @pool that this user can
 * see: every process's as root, else those of its own processes (the
 * others' /proc/PID/fd cannot be read). Returns 0 or -ENOMEM.
 */
int find_clients(struct client_list *l, int pool)
{
	struct dirent *pe, *fe;
	char path[300], link[64];
	DIR *proc, *fds;
	int ret = 0;

	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (!ret && (pe = readdir(proc))) {
		int fdinfo;

		if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", pe->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fdinfo", pe->d_name);
		fdinfo = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		while (fdinfo >= 0 && !ret && (fe = readdir(fds))) {
			struct client_row c = { 0 };
			ssize_t n;
			FILE *cf;

			n = readlinkat(dirfd(fds), fe->d_name, link,
				       sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strncmp(link, "/dev/kvpool", 11) ||
			    link[11] < '0' || link[11] > '9')
				continue;
			if (!read_fdinfo(fdinfo, fe->d_name, &c))
				continue;
			if (pool >= 0 && c.pool != (unsigned int)pool)
				continue;
			c.pid = (unsigned int)strtoul(pe->d_name, NULL, 10);
			snprintf(path, sizeof(path), "/proc/%s/comm",
				 pe->d_name);
			/*
			 * All of it, but the newline the kernel ends it with:
			 * a process names itself, newlines included (the
			 * tables write them as \x0a).
			 */
			cf = fopen(path, "re");
			if (cf) {
				size_t n = fread(c.comm, 1, sizeof(c.comm) - 1,
						 cf);

				if (n && c.comm[n - 1] == '\n')
					n--;
				c.comm[n] = '\0';
				fclose(cf);
			}
			ret = add_client(l, &c);
		}
		if (fdinfo >= 0)
			close(fdinfo);
		closedir(fds);
	}
	closedir(proc);
	if (l->nr)
		qsort(l->v, l->nr, sizeof(*l->v), client_cmp);
	return ret;
}

enum {
	CC_POOL, CC_CLIENT, CC_TENANT, CC_PID, CC_COMM, CC_FDS, CC_ROWS,
	CC_SLOTS, CC_PAGES, CC_CACHE, CC_NR
};

static const struct colspec client_cols[CC_NR] = {
	[CC_POOL]	= { "POOL", "pool_id", false, true, false, 0, NULL },
	[CC_CLIENT]	= { "CLIENT", "client_id", false, true, false, 0, NULL },
	[CC_TENANT]	= { "TENANT", "tenant_id", false, true, false, 0, NULL },
	[CC_PID]	= { "PID", "pid", false, true, false, 0, NULL },
	[CC_COMM]	= { "COMMAND", "comm", true, true, false, 100, NULL },
	[CC_FDS]	= { "FDS", "nr_fds", false, true, false, 0, NULL },
	[CC_ROWS]	= { "ROWS", "rows", false, true, false, 0, NULL },
	[CC_SLOTS]	= { "SLOTS", "slots", false, true, false, 0, NULL },
	[CC_PAGES]	= { "PAGES", "pages", false, true, true, 0, NULL },
	[CC_CACHE]	= { "CACHE", "cache_pages", false, true, true, 0, NULL },
};

static void client_cells(const struct client_row *c, struct cell *x,
			 unsigned long long factor)
{
	x[CC_POOL] = (struct cell){ CK_NUM, c->pool, NULL };
	x[CC_CLIENT] = (struct cell){ CK_NUM, c->client, NULL };
	x[CC_TENANT] = (struct cell){ CK_NUM, c->tenant, NULL };
	x[CC_PID] = (struct cell){ CK_NUM, c->pid, NULL };
	x[CC_COMM] = (struct cell){ CK_STR, 0, c->comm };
	x[CC_FDS] = (struct cell){ CK_NUM, c->nr_fds, NULL };
	x[CC_ROWS] = (struct cell){ CK_NUM, c->rows, NULL };
	x[CC_SLOTS] = (struct cell){ CK_NUM, c->slots, NULL };
	x[CC_PAGES] = page_cell(c->pages, CK_NUM, factor);
	x[CC_CACHE] = page_cell(c->cache, CK_NUM, factor);
}

const char usage_clients[] =
"clients [--json | --csv] [-r] [-n] [-o COLS] [--units pages|tokens|bytes] [POOL]\n"
"    List the clients (open pool files) of every pool (or POOL) from\n"
"    /proc/PID/fdinfo: pool, client id, tenant, the first process holding\n"
"    it and how many descriptors do, its rows, slots, pages and cache\n"
"    pages. As root every process's; as a user only their own.\n"
TABLE_OPTS_HELP;

int cmd_clients(int argc, char **argv)
{
	struct client_list l = { 0 };
	struct pool_row pr = { 0 };
	struct cell *cells;
	struct outfmt o;
	unsigned int id = 0;
	bool one, done;
	size_t i;
	int ret;

	ret = parse_table_pool(argc, argv, usage_clients, &o, client_cols,
			       CC_NR, &id, &one, &done);
	if (done)
		return ret;
	if (!module_loaded())
		return not_loaded();
	ret = find_clients(&l, one ? (int)id : -1);
	if (ret) {
		free(l.v);
		return pool_error(ret, "clients", -1);
	}
	cells = calloc(l.nr ? l.nr * CC_NR : 1, sizeof(*cells));
	if (!cells) {
		free(l.v);
		return pool_error(-ENOMEM, "malloc", -1);
	}
	for (i = 0; i < l.nr; i++) {
		/* Each client in its own pool's units. */
		if (o.units && (!i || l.v[i].pool != pr.id)) {
			memset(&pr, 0, sizeof(pr));
			pr.id = l.v[i].pool;
			kvpool_pool_status(pr.id, &pr.info, NULL);
			pool_units(&pr, o.units);
		}
		client_cells(&l.v[i], &cells[i * CC_NR],
			     o.units ? pr.factor : 1);
	}
	if (o.json) {
		printf("{\n  \"clients\": [");
		for (i = 0; i < l.nr; i++) {
			printf("%s\n    ", i ? "," : "");
			put_json_object(client_cols, CC_NR, &cells[i * CC_NR],
					4);
		}
		printf("%s]\n}\n", l.nr ? "\n  " : "");
	} else if (l.nr || o.csv) {
		put_table(client_cols, CC_NR, cells, l.nr, &o, 0);
	} else {
		printf("no clients%s\n", geteuid() ?
		       " among your processes (as root: every process's)" : "");
	}
	free(cells);
	free(l.v);
	return EXIT_OK;
}
