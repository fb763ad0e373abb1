// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl metrics: pools' and tenants' figures for Prometheus, in its
 * text format (0.0.4, what node_exporter's textfile collector and
 * promtool take) or OpenMetrics, on stdout, into a file, or as the answer
 * to one HTTP request (--http, for a socket unit with Accept=yes).
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Every run writes kvpool_up: 1 when the module is loaded and every pool
 * asked for was read, else 0 and no other sample, so that a file left by
 * an earlier run never goes on saying what is no longer true. The bytes
 * (page_bytes, arena_bytes) come from the pool's arena, in sysfs
 * (arena_page_bytes, arena_bytes) for every user; only under a module
 * older than those files does this ask the pool itself, which needs a
 * user who may open it (root, or the kvpool group) and shows in
 * clients_opened.
 */
#define _GNU_SOURCE		/* asprintf(), open_memstream(), strcasestr() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "text.h"
#include "kvpoolctl.h"

/* The two formats; OpenMetrics only where it is asked for. */
enum { FMT_PROM, FMT_OM };

/*
 * A pool figure for metrics: its name after "kvpool_pool_", its unit
 * ("" for a count; OpenMetrics's UNIT, which the name ends with), its
 * help, where it is in a row; newer and abi2 as in struct column (no
 * sample where the module lacks it).
 */
struct pool_metric {
	const char *name;
	const char *unit;
	const char *help;
	size_t offset;		/* of an unsigned int, or PM_* */
	bool newer, abi2;
};

/* A pool as metrics shows it: what status reads, and its GPU and arena. */
struct metrics_pool {
	const struct pool_row *r;
	char uuid[96];		/* the GPU's UUID, NVIDIA's driver says; "" */
	unsigned long long page_bytes, arena_bytes;	/* 0: unknown */
};

/* Where a figure that is no field of struct pool_row comes from. */
#define PM_MEM_BYTES	((size_t)-1)
#define PM_LISTED	((size_t)-2)
#define PM_PAGE_BYTES	((size_t)-3)
#define PM_ARENA_BYTES	((size_t)-4)
#define PM_USAGE	((size_t)-5)

/*
 * The pages in use: neither free nor in a prefix cache no row borrows.
 * Evictable cache pages count as free, as vLLM's kv_cache_usage_perc
 * counts its evictable cached blocks, so that the two compare.
 */
static unsigned int pool_used_pages(const struct pool_row *r)
{
	unsigned long long idle = (unsigned long long)r->st.out_free_pages +
				  r->st.out_cache_evictable;

	/* Files read one by one are no snapshot: never below 0. */
	return idle >= r->info.out_nr_pages ? 0 :
	       r->info.out_nr_pages - (unsigned int)idle;
}

/*
 * @v into @buf as the shortest decimal that reads back as @v, as Go's
 * exporters write floats (%.6g would make 1/512 0.00195312).
 */
static void put_double(char *buf, size_t len, double v)
{
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, len, "%.17g", v);
}

/*
 * Pool metric @m of @p as a sample value into @buf; false if there is
 * none to give (the module or the arena lacks it).
 */
static bool pool_metric_text(const struct pool_metric *m,
			     const struct metrics_pool *p, char *buf,
			     size_t len)
{
	const struct pool_row *r = p->r;
	unsigned long long v;

	if ((m->newer && !r->has_tenants) || (m->abi2 && !r->has_quarantine))
		return false;
	switch (m->offset) {
	case PM_MEM_BYTES:
		v = pool_sysfs_u64(r->id, "mem_bytes");
		break;
	case PM_LISTED:
		v = r->tenants_shown == TENANTS_ALL;
		break;
	case PM_PAGE_BYTES:
		v = p->page_bytes ? p->page_bytes : ULLONG_MAX;
		break;
	case PM_ARENA_BYTES:
		v = p->arena_bytes ? p->arena_bytes : ULLONG_MAX;
		break;
	case PM_USAGE:
		if (!r->info.out_nr_pages)
			return false;
		put_double(buf, len,
			   (double)pool_used_pages(r) / r->info.out_nr_pages);
		return true;
	default:
		v = *(const unsigned int *)((const char *)r + m->offset);
	}
	if (v == ULLONG_MAX)
		return false;
	snprintf(buf, len, "%llu", v);
	return true;
}

/* The sysfs attributes of docs/ABI/testing/sysfs-class-kvpool. */
static const struct pool_metric pool_metrics[] = {
	{ "pages", "", "Pages in the pool (nr_pages)",
	  ROW_FIELD(info.out_nr_pages), false, false },
	{ "free_pages", "", "Free pages (free_pages)",
	  ROW_FIELD(st.out_free_pages), false, false },
	{ "row_pages", "", "Pages owned by rows (row_pages)",
	  ROW_FIELD(st.out_row_pages), false, false },
	{ "slot_pages", "", "Pages of parked rows, in slots (slot_pages)",
	  ROW_FIELD(st.out_slot_pages), false, false },
	{ "cache_evictable_pages", "",
	  "Prefix-cache pages no row borrows, evictable (cache_evictable)",
	  ROW_FIELD(st.out_cache_evictable), false, false },
	{ "cache_pinned_pages", "",
	  "Prefix-cache pages pinned by a row borrowing them (cache_pinned)",
	  ROW_FIELD(st.out_cache_pinned), false, false },
	{ "export_pages", "",
	  "Pages of rows in flight as export files (export_pages)",
	  ROW_FIELD(st.out_export_pages), true, false },
	{ "reserved_pages", "", "Pages kept out of circulation (reserved_pages)",
	  ROW_FIELD(st.out_reserved_pages), false, false },
	{ "quarantine_pages", "",
	  "Pages of dead clients held back until their GPU work is done (quarantine_pages)",
	  ROW_FIELD(st.out_quarantine_pages), false, true },
	{ "rows", "", "Rows in the pool (nr_rows)",
	  ROW_FIELD(info.out_nr_rows), false, false },
	{ "free_rows", "", "Free rows (free_rows)",
	  ROW_FIELD(st.out_free_rows), false, false },
	{ "held_rows", "", "Rows held by clients (held_rows)",
	  ROW_FIELD(st.out_held_rows), false, false },
	{ "slot_rows", "", "Rows parked in slots (slot_rows)",
	  ROW_FIELD(st.out_slot_rows), false, false },
	{ "export_rows", "", "Rows in flight as export files (export_rows)",
	  ROW_FIELD(st.out_export_rows), true, false },
	{ "reserved_rows", "", "Rows kept out of circulation (reserved_rows)",
	  ROW_FIELD(st.out_reserved_rows), false, false },
	{ "clients", "", "Open clients (nr_clients)",
	  ROW_FIELD(st.out_nr_clients), false, false },
	{ "tenants", "", "Tenants, with clients or limits (nr_tenants)",
	  ROW_FIELD(x.nr_tenants), true, false },
	{ "low_wmark_pages", "",
	  "Free pages below which clients are asked to evict; 0: never (low_wmark)",
	  ROW_FIELD(x.low_wmark), true, false },
	{ "high_wmark_pages", "",
	  "Free pages the asks restore (high_wmark)", ROW_FIELD(x.high_wmark), true,
	  false },
	{ "page_tokens", "", "Tokens per page (page_tokens)",
	  ROW_FIELD(info.out_page_tokens), false, false },
	{ "row_tokens", "", "Longest row in tokens (row_tokens)",
	  ROW_FIELD(info.out_row_tokens), false, false },
	{ "page_bytes", "bytes",
	  "Bytes of one page of the pool's arena (kvpoolctl arena show)",
	  PM_PAGE_BYTES, false, false },
	{ "arena_bytes", "bytes",
	  "Bytes of the pool's arena, the memory its pages are",
	  PM_ARENA_BYTES, false, false },
	{ "usage_ratio", "ratio",
	  "Pages in use over pages, 0 to 1: neither free nor evictable prefix cache (as vllm:kv_cache_usage_perc)",
	  PM_USAGE, false, false },
	{ "mem_bytes", "bytes",
	  "Kernel memory of the pool's bookkeeping (mem_bytes)", PM_MEM_BYTES,
	  false, false },
	{ "tenants_listed", "",
	  "1 if the kvpool_tenant_* samples are every tenant of the pool, 0 if not (no CAP_SYS_ADMIN: at most the caller's own)",
	  PM_LISTED, false, false },
};

/*
 * The pool's counters, which only grow: a counter family each, named
 * kvpool_pool_NAME with the sample NAME_total, read from sysfs file NAME
 * (no sample from a module without it).
 */
static const struct {
	const char *name;
	const char *help;
} pool_counters[] = {
	{ "clients_opened", "Opens of the pool since it was made" },
	{ "refused_space",
	  "ROW_ALLOC, EXTEND and IMPORT calls refused with ENOSPC" },
	{ "refused_quota",
	  "ROW_ALLOC, EXTEND and IMPORT calls refused with EDQUOT: a tenant at its limit" },
	{ "reclaimed_pages",
	  "Pages closing clients still held, taken back at their last close" },
};

/* A tenant figure: its name after "kvpool_tenant_", help, field. */
struct tenant_metric {
	const char *name;
	const char *help;
	size_t offset;		/* of a __u32 in struct kvpool_tenant_info */
	bool own;		/* KVPOOL_STATS tells it of one's own tenant */
};

#define TI_FIELD(f)	offsetof(struct kvpool_tenant_info, f)

static const struct tenant_metric tenant_metrics[] = {
	{ "pages", "Pages the tenant's clients hold (rows, slots, prefix caches)",
	  TI_FIELD(pages), true },
	{ "cache_pages", "Of the tenant's pages, those in prefix caches",
	  TI_FIELD(cache_pages), false },
	{ "rows", "Rows the tenant holds, parked ones included",
	  TI_FIELD(rows), true },
	{ "clients", "The tenant's open clients", TI_FIELD(nr_clients),
	  false },
	{ "max_pages", "The tenant's hard limit in pages; 0: none",
	  TI_FIELD(max_pages), true },
	{ "min_pages", "Pages guaranteed to the tenant; 0: none",
	  TI_FIELD(min_pages), true },
	{ "max_rows", "The tenant's limit in rows; 0: none",
	  TI_FIELD(max_rows), true },
	{ "ask_pages", "Pages the tenant's clients are asked to give back now",
	  TI_FIELD(ask_pages), false },
};

/*
 * A family's metadata lines, for @name as its samples are named (the
 * _total and _info suffixes included); @type gauge, counter or info,
 * @unit "" for none. The Prometheus text format has no info type and no
 * UNIT line (node_exporter and promtool refuse the file on them): an
 * info family is a gauge there, its sample always 1. OpenMetrics names a
 * family without the counter's _total and the info's _info.
 */
static void put_family(FILE *f, int fmt, const char *name, const char *type,
		       const char *unit, const char *help)
{
	size_t len = strlen(name);

	if (fmt == FMT_PROM) {
		/* HELP escapes only \\ and \n; help texts have neither. */
		fprintf(f, "# HELP %s %s\n", name, help);
		fprintf(f, "# TYPE %s %s\n", name,
			strcmp(type, "info") ? type : "gauge");
		return;
	}
	if (!strcmp(type, "counter"))
		len -= strlen("_total");
	else if (!strcmp(type, "info"))
		len -= strlen("_info");
	fprintf(f, "# TYPE %.*s %s\n", (int)len, name, type);
	if (*unit)
		fprintf(f, "# UNIT %.*s %s\n", (int)len, name, unit);
	fprintf(f, "# HELP %.*s %s\n", (int)len, name, help);
}

/*
 * The labels that name tenant @r of pool @pool, without the braces. A
 * label is added here (e.g. a configured path) and nowhere else.
 */
static void om_tenant_labels(FILE *f, unsigned int pool,
			     const struct tenant_row *r)
{
	char label[KVPOOL_LABEL_LEN + 1], id[24];

	fprintf(f, "pool=\"%u\",tenant=\"%u\",", pool, r->t.tenant_id);
	/* A path tenant of every user: uid "*", as tenant list shows it. */
	if (r->t.flags & KVPOOL_TENANT_ANY_UID)
		fputs("uid=\"*\",cgroup=", f);
	else
		fprintf(f, "uid=\"%u\",cgroup=", r->t.uid);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)r->t.cgroup_id);
	om_put_label_value(f, r->cgroup ? r->cgroup : id);
	memcpy(label, r->t.label, KVPOOL_LABEL_LEN);
	label[KVPOOL_LABEL_LEN] = '\0';
	if (*label) {
		fputs(",label=", f);
		om_put_label_value(f, label);
	}
}

static void put_up(FILE *f, int fmt, bool up)
{
	put_family(f, fmt, "kvpool_up", "gauge", "",
		   "1 if the kvpool module is loaded and every pool asked for was read; 0 if not, and no other kvpool sample");
	fprintf(f, "kvpool_up %d\n", up);
}

/*
 * Every pool's and tenant's figures of @pools in format @fmt; tenants
 * that are only the caller's own are left out with @no_own.
 */
static void write_metrics(FILE *f, int fmt, const struct metrics_pool *pools,
			  size_t nr, bool no_own)
{
	char name[96], val[32];
	size_t i, j, k;

	put_up(f, fmt, true);
	/*
	 * UUID is dcgm-exporter's name for the same label, so that
	 * on(UUID) joins the two with no label_replace().
	 */
	put_family(f, fmt, "kvpool_pool_info", "info", "",
		   "A kvpool pool (/dev/kvpoolN), the PCI address of the GPU it was made for, and that GPU's UUID where NVIDIA's driver gives it; always 1");
	for (j = 0; j < nr; j++) {
		fprintf(f, "kvpool_pool_info{pool=\"%u\"", pools[j].r->id);
		if (*pools[j].r->gpu)
			fprintf(f, ",gpu=\"%s\"", pools[j].r->gpu);
		if (*pools[j].uuid)
			fprintf(f, ",UUID=\"%s\"", pools[j].uuid);
		fputs("} 1\n", f);
	}
	for (i = 0; i < ARRAY_SIZE(pool_metrics); i++) {
		const struct pool_metric *m = &pool_metrics[i];

		snprintf(name, sizeof(name), "kvpool_pool_%s", m->name);
		put_family(f, fmt, name, "gauge", m->unit, m->help);
		for (j = 0; j < nr; j++) {
			if (pool_metric_text(m, &pools[j], val, sizeof(val)))
				fprintf(f, "%s{pool=\"%u\"} %s\n", name,
					pools[j].r->id, val);
		}
	}
	for (i = 0; i < ARRAY_SIZE(pool_counters); i++) {
		snprintf(name, sizeof(name), "kvpool_pool_%s_total",
			 pool_counters[i].name);
		put_family(f, fmt, name, "counter", "", pool_counters[i].help);
		for (j = 0; j < nr; j++) {
			unsigned long long v;

			v = pool_sysfs_u64(pools[j].r->id, pool_counters[i].name);
			if (v != ULLONG_MAX)
				fprintf(f, "%s{pool=\"%u\"} %llu\n", name,
					pools[j].r->id, v);
		}
	}
	for (i = 0; i < ARRAY_SIZE(tenant_metrics); i++) {
		const struct tenant_metric *m = &tenant_metrics[i];

		snprintf(name, sizeof(name), "kvpool_tenant_%s", m->name);
		put_family(f, fmt, name, "gauge", "", m->help);
		for (j = 0; j < nr; j++) {
			const struct pool_row *r = pools[j].r;

			for (k = 0; k < r->nr_trows; k++) {
				const struct tenant_row *t = &r->trows[k];

				if (t->own && (!m->own || no_own))
					continue;
				fprintf(f, "%s{", name);
				om_tenant_labels(f, r->id, t);
				fprintf(f, "} %u\n", *(const __u32 *)
					((const char *)&t->t + m->offset));
			}
		}
	}
	if (fmt == FMT_OM)
		fputs("# EOF\n", f);
}

/* kvpool_up 0 alone: the module is not loaded, or a pool was unreadable. */
static void write_down(FILE *f, int fmt)
{
	put_up(f, fmt, false);
	if (fmt == FMT_OM)
		fputs("# EOF\n", f);
}

/*
 * The UUID of the GPU at @domain/@devid into @buf ("" if unknown), from
 * the "GPU UUID:" line of NVIDIA's /proc/driver/nvidia/gpus/ADDR/
 * information: no NVML, and readable by any user. Only a value of the
 * form GPU-... is taken (a driver that cannot tell writes something
 * else there), and only its letters, digits and dashes, so that it is a
 * label value with nothing to escape.
 */
static void gpu_uuid(uint32_t domain, uint32_t devid, char *buf, size_t len)
{
	static const char uuid_chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
	char path[NAME_MAX + 16], line[256], *v;
	uint32_t d, id;
	struct dirent *de;
	FILE *f = NULL;
	DIR *dir;
	size_t n;
	int fd;

	*buf = '\0';
	dir = opendir(NVIDIA_GPUS);
	if (!dir)
		return;
	/* Named by address, in whatever case the driver writes it. */
	while (!f && (de = readdir(dir))) {
		if (kvpool_pci_parse(de->d_name, &d, &id) || d != domain ||
		    id != devid)
			continue;
		snprintf(path, sizeof(path), "%s/information", de->d_name);
		fd = openat(dirfd(dir), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		f = fdopen(fd, "r");
		if (!f)
			close(fd);
	}
	closedir(dir);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "GPU UUID:", 9))
			continue;
		v = line + 9;
		v += strspn(v, " \t");
		n = strspn(v, uuid_chars);
		if (!strncmp(v, "GPU-", 4) && n < len &&
		    strchr("\n\r\t ", v[n]))
			snprintf(buf, len, "%.*s", (int)n, v);
		break;
	}
	fclose(f);
}

/*
 * The pools of @arg (NULL: all) into *@out, with their GPUs' UUIDs and
 * their arenas. Returns an exit code; *@rows is for free_pools().
 */
static int collect(const char *arg, struct pool_row **rows, size_t *nrows,
		   struct metrics_pool **out)
{
	uint32_t domain, devid;
	size_t i;
	int ret;

	*out = NULL;
	if (!module_loaded()) {
		*rows = NULL;
		*nrows = 0;
		return not_loaded();
	}
	ret = collect_pools(arg, UNIT_PAGES, rows, nrows);
	if (ret)
		return ret;
	*out = calloc(*nrows ? *nrows : 1, sizeof(**out));
	if (!*out)
		return pool_error(-ENOMEM, "malloc", -1);
	for (i = 0; i < *nrows; i++) {
		struct metrics_pool *p = &(*out)[i];

		p->r = &(*rows)[i];
		if (kvpool_pool_gpu(p->r->id, &domain, &devid) > 0)
			gpu_uuid(domain, devid, p->uuid, sizeof(p->uuid));
		pool_arena_bytes(p->r->id, &p->page_bytes, &p->arena_bytes);
	}
	return EXIT_OK;
}

/*
 * The metrics, or kvpool_up 0 after a failed collect() (@ret its exit
 * code), into @f.
 */
static void write_result(FILE *f, int fmt, int ret,
			 const struct metrics_pool *pools, size_t nr,
			 bool no_own)
{
	if (ret)
		write_down(f, fmt);
	else
		write_metrics(f, fmt, pools, nr, no_own);
}

/*
 * The metrics into @path, atomically: FILE.tmp, then a rename, so that
 * a reader never sees half a file. Returns an exit code.
 */
static int write_metrics_file(const char *path, int fmt, int ret,
			      const struct metrics_pool *pools, size_t nr)
{
	char *tmp;
	FILE *f;
	int wret = EXIT_OK;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return pool_error(-ENOMEM, "malloc", -1);
	f = fopen(tmp, "we");
	if (!f) {
		err_msg("metrics: %s: %s", tmp, strerror(errno));
		free(tmp);
		return EXIT_FAIL;
	}
	write_result(f, fmt, ret, pools, nr, false);
	if (fflush(f) || fsync(fileno(f)) || ferror(f)) {
		err_msg("metrics: writing %s: %s", tmp, strerror(errno));
		wret = EXIT_FAIL;
	}
	if (fclose(f) && !wret) {
		err_msg("metrics: writing %s: %s", tmp, strerror(errno));
		wret = EXIT_FAIL;
	}
	if (!wret && rename(tmp, path)) {
		err_msg("metrics: renaming %s to %s: %s", tmp, path,
			strerror(errno));
		wret = EXIT_FAIL;
	}
	if (wret)
		unlink(tmp);
	free(tmp);
	return wret;
}

/* ---- --http: one request on stdin, its answer on stdout ---- */

/* A request's head past this, or slower than this, gets no answer. */
#define HTTP_HEAD_MAX	8192
#define HTTP_TIMEOUT_MS	10000

/*
 * The request's head (up to the empty line) from @fd into @buf, NUL
 * terminated. Returns its length, 0 if the peer sent nothing, -1 if it
 * was too long, too slow or broken off.
 */
static ssize_t http_read_head(int fd, char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	while (got < len - 1) {
		if (poll(&pfd, 1, HTTP_TIMEOUT_MS) <= 0)
			return -1;
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got ? -1 : 0;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (ssize_t)got;
	}
	return -1;
}

/* All of @len bytes at @p to @fd. Returns 0 or -1. */
static int write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * An HTTP/1.0 answer: @status ("404 Not Found"), @type, @body of @len
 * bytes (none for HEAD), @extra header lines. The connection closes
 * after it, as HTTP/1.0 says.
 */
static int http_answer(bool head, const char *status, const char *type,
		       const char *extra, const char *body, size_t len)
{
	char *hdr;
	int n, ret;

	n = asprintf(&hdr,
		     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
		     status, type, len, extra);
	if (n < 0)
		return -1;
	ret = write_all(STDOUT_FILENO, hdr, (size_t)n);
	free(hdr);
	if (!ret && !head)
		ret = write_all(STDOUT_FILENO, body, len);
	return ret;
}

static int http_text(bool head, const char *status, const char *extra,
		     const char *body)
{
	return http_answer(head, status, "text/plain; charset=utf-8", extra,
			   body, strlen(body));
}

/*
 * Whether the request's Accept header (in @head, the lines after the
 * request line) names OpenMetrics, as Prometheus's scrapes do: then the
 * answer is OpenMetrics, else the text format.
 */
static bool http_wants_om(const char *head)
{
	const char *l;
	size_t n;

	for (l = head; *l; l += n + (l[n] == '\n')) {
		n = strcspn(l, "\n");
		if (!strncasecmp(l, "Accept:", 7)) {
			char line[HTTP_HEAD_MAX];

			snprintf(line, sizeof(line), "%.*s", (int)n, l);
			if (strcasestr(line, "application/openmetrics-text"))
				return true;
		}
	}
	return false;
}

/*
 * Serve one request: GET or HEAD of /metrics (a query string is
 * ignored) answers 200 with the metrics, kvpool_up 0 if they cannot be
 * read; any other path 404, any other method 405, a line that is no
 * request 400. Nothing is taken from the request but the method, the
 * path and whether it accepts OpenMetrics. Returns an exit code: 0 once
 * an answer went out (a failed unit would stay listed), else EXIT_FAIL.
 */
static int serve_http(const char *pool)
{
	static char req[HTTP_HEAD_MAX];
	char method[16], target[1024], version[16], *body = NULL;
	struct metrics_pool *pools = NULL;
	struct pool_row *rows = NULL;
	size_t nrows = 0, len = 0, n;
	bool head, om;
	ssize_t got;
	FILE *f;
	int ret;

	got = http_read_head(STDIN_FILENO, req, sizeof(req));
	if (got <= 0)
		return got ? EXIT_FAIL : EXIT_OK;
	n = strcspn(req, "\r\n");
	req[n] = '\0';
	if (sscanf(req, "%15s %1023s %15s", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7))
		return http_text(false, "400 Bad Request", "",
				 "400 Bad Request\n") ? EXIT_FAIL : EXIT_OK;
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET"))
		return http_text(false, "405 Method Not Allowed",
				 "Allow: GET, HEAD\r\n",
				 "405 Method Not Allowed: GET or HEAD\n") ?
		       EXIT_FAIL : EXIT_OK;
	target[strcspn(target, "?")] = '\0';
	if (strcmp(target, "/metrics"))
		return http_text(head, "404 Not Found", "",
				 "404 Not Found: kvpool's metrics are at /metrics\n") ?
		       EXIT_FAIL : EXIT_OK;
	om = http_wants_om(req + n + 1);

	/* Errors go to stderr (the journal); the scrape gets kvpool_up 0. */
	ret = collect(pool, &rows, &nrows, &pools);
	f = open_memstream(&body, &len);
	if (!f) {
		free_pools(rows, nrows);
		free(pools);
		return EXIT_FAIL;
	}
	/* The server's own tenant, if it may open pools, is no one's. */
	write_result(f, om ? FMT_OM : FMT_PROM, ret, pools, nrows, true);
	free_pools(rows, nrows);
	free(pools);
	if (fclose(f)) {
		free(body);
		return EXIT_FAIL;
	}
	ret = http_answer(head, "200 OK", om ?
			  "application/openmetrics-text; version=1.0.0; charset=utf-8" :
			  "text/plain; version=0.0.4; charset=utf-8",
			  "", body, len);
	free(body);
	return ret ? EXIT_FAIL : EXIT_OK;
}

const char usage_metrics[] =
"metrics [--output FILE | --http] [--openmetrics] [POOL]\n"
"    Print every pool's (or POOL's) figures, and its tenants' as root (a\n"
"    user without CAP_SYS_ADMIN gets only their own tenant, if they may\n"
"    open the pool), in Prometheus's text format: for node_exporter's\n"
"    textfile collector, promtool, or any scraper. Gauges, the pool's\n"
"    counters (opens, refusals, pages taken back at close) as _total,\n"
"    kvpool_pool_info with the GPU's PCI address and UUID, and bytes\n"
"    where the arena can be read (root or the kvpool group: it opens\n"
"    the pool). kvpool_up is 1, or 0 (and nothing else) when the module\n"
"    is not loaded (exit code 3) or a pool cannot be read. Reads sysfs,\n"
"    as status does.\n"
"    --output FILE   write FILE.tmp, then rename it to FILE: a reader\n"
"                    never sees a file half written\n"
"    --http          answer one HTTP request on stdin, on stdout (a\n"
"                    socket unit's Accept=yes service): GET /metrics,\n"
"                    OpenMetrics if its Accept header asks; exit code 0\n"
"                    once answered, the server's own tenant left out\n"
"    --openmetrics   the OpenMetrics text format instead\n";

int cmd_metrics(int argc, char **argv)
{
	enum { OPT_HTTP = 256, OPT_OM };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'O' },
		{ "http", no_argument, NULL, OPT_HTTP },
		{ "openmetrics", no_argument, NULL, OPT_OM },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *pool;
	struct metrics_pool *pools;
	struct pool_row *rows;
	bool http = false;
	int c, ret, wret, fmt = FMT_PROM;
	size_t nrows;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_metrics, stdout);
		case 'O':
			output = optarg;
			break;
		case OPT_HTTP:
			http = true;
			break;
		case OPT_OM:
			fmt = FMT_OM;
			break;
		default:
			return usage_of(usage_metrics, stderr);
		}
	}
	/* --http takes its format from the request. */
	if (argc - optind > 1 || (http && (output || fmt == FMT_OM)))
		return usage_of(usage_metrics, stderr);
	pool = optind < argc ? argv[optind] : NULL;
	/* A bad POOL is a bad command line, before anything is written. */
	if (pool && !parse_pool(pool, &(unsigned int){ 0 }))
		return bad_pool(pool);
	if (http)
		return serve_http(pool);

	ret = collect(pool, &rows, &nrows, &pools);
	if (output) {
		wret = write_metrics_file(output, fmt, ret, pools, nrows);
	} else {
		write_result(stdout, fmt, ret, pools, nrows, false);
		wret = EXIT_OK;
		if (fflush(stdout)) {
			err_msg("metrics: %s", strerror(errno));
			wret = EXIT_FAIL;
		}
	}
	free_pools(rows, nrows);
	free(pools);
	return ret ? ret : wret;
}
