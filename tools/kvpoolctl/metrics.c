// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl metrics: pools' and tenants' figures in the OpenMetrics
 * text format.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE		/* asprintf() */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text.h"
#include "kvpoolctl.h"

/*
 * A pool figure for metrics: its name after "kvpool_pool_", its help,
 * its unit ("" for a count), where it is in a row; newer and
 * abi2 as in struct column (no sample where the module lacks it).
 */
struct pool_metric {
	const char *name;
	const char *unit;
	const char *help;
	size_t offset;		/* of an unsigned int, or PM_* */
	bool newer, abi2;
};

/*
 * A figure with no field in the library's structs: its own sysfs file.
 * ULLONG_MAX when the module has no such file.
 */
static unsigned long long pool_sysfs_value(const struct pool_row *r,
					   const char *file)
{
	char path[96], buf[32], *end;
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/%s", r->id,
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

/* Where a figure that is no field of struct pool_row comes from. */
#define PM_MEM_BYTES	((size_t)-1)
#define PM_LISTED	((size_t)-2)

/* Pool metric @m of @r; ULLONG_MAX: none to give. */
static unsigned long long pool_metric_value(const struct pool_metric *m,
					    const struct pool_row *r)
{
	if (m->offset == PM_MEM_BYTES)
		return pool_sysfs_value(r, "mem_bytes");
	if (m->offset == PM_LISTED)
		return r->tenants_shown == TENANTS_ALL;
	return *(const unsigned int *)((const char *)r + m->offset);
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

/* A family's metadata lines; @type gauge or info, @unit "" for none. */
static void om_family(FILE *f, const char *name, const char *type,
		      const char *unit, const char *help)
{
	fprintf(f, "# TYPE %s %s\n", name, type);
	if (*unit)
		fprintf(f, "# UNIT %s %s\n", name, unit);
	/* Help text is escaped as label values are, \n and \\ included. */
	fprintf(f, "# HELP %s %s\n", name, help);
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

/* Every pool's and tenant's figures of @rows, in the OpenMetrics format. */
static void write_metrics(FILE *f, const struct pool_row *rows, size_t nr)
{
	char name[96];
	size_t i, j, k;

	om_family(f, "kvpool_pool", "info",  "",
		  "A kvpool pool (/dev/kvpoolN) and the GPU it was made for");
	for (j = 0; j < nr; j++) {
		fprintf(f, "kvpool_pool_info{pool=\"%u\"", rows[j].id);
		if (*rows[j].gpu)
			fprintf(f, ",gpu=\"%s\"", rows[j].gpu);
		fputs("} 1\n", f);
	}
	for (i = 0; i < ARRAY_SIZE(pool_metrics); i++) {
		const struct pool_metric *m = &pool_metrics[i];

		snprintf(name, sizeof(name), "kvpool_pool_%s", m->name);
		om_family(f, name, "gauge", m->unit, m->help);
		for (j = 0; j < nr; j++) {
			const struct pool_row *r = &rows[j];
			unsigned long long v;

			if ((m->newer && !r->has_tenants) ||
			    (m->abi2 && !r->has_quarantine))
				continue;
			v = pool_metric_value(m, r);
			if (v == ULLONG_MAX)
				continue;
			fprintf(f, "%s{pool=\"%u\"} %llu\n", name, r->id, v);
		}
	}
	for (i = 0; i < ARRAY_SIZE(pool_counters); i++) {
		snprintf(name, sizeof(name), "kvpool_pool_%s",
			 pool_counters[i].name);
		om_family(f, name, "counter", "", pool_counters[i].help);
		for (j = 0; j < nr; j++) {
			unsigned long long v;

			v = pool_sysfs_value(&rows[j], pool_counters[i].name);
			if (v != ULLONG_MAX)
				fprintf(f, "%s_total{pool=\"%u\"} %llu\n", name,
					rows[j].id, v);
		}
	}
	for (i = 0; i < ARRAY_SIZE(tenant_metrics); i++) {
		const struct tenant_metric *m = &tenant_metrics[i];

		snprintf(name, sizeof(name), "kvpool_tenant_%s", m->name);
		om_family(f, name, "gauge", "", m->help);
		for (j = 0; j < nr; j++) {
			for (k = 0; k < rows[j].nr_trows; k++) {
				const struct tenant_row *t = &rows[j].trows[k];

				if (t->own && !m->own)
					continue;
				fprintf(f, "%s{", name);
				om_tenant_labels(f, rows[j].id, t);
				fprintf(f, "} %u\n", *(const __u32 *)
					((const char *)&t->t + m->offset));
			}
		}
	}
	fputs("# EOF\n", f);
}

const char usage_metrics[] =
"metrics [--output FILE] [POOL]\n"
"    Print every pool's (or POOL's) figures, and its tenants' as root (a\n"
"    user without CAP_SYS_ADMIN gets only their own tenant, if they may\n"
"    open the pool), in the OpenMetrics text format: Prometheus, or\n"
"    node_exporter's textfile collector. Gauges, and the pool's counters\n"
"    (opens, refusals, pages taken back at close) as _total. Reads sysfs,\n"
"    as status does.\n"
"    --output FILE   write FILE.tmp, then rename it to FILE: a reader\n"
"                    never sees a file half written\n";

/* @rows' metrics into @path, atomically: FILE.tmp, then a rename. */
static int write_metrics_file(const char *path, const struct pool_row *rows,
			      size_t nr)
{
	char *tmp;
	FILE *f;
	int ret = EXIT_OK;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return pool_error(-ENOMEM, "malloc", -1);
	f = fopen(tmp, "we");
	if (!f) {
		err_msg("metrics: %s: %s", tmp, strerror(errno));
		free(tmp);
		return EXIT_FAIL;
	}
	write_metrics(f, rows, nr);
	if (fflush(f) || fsync(fileno(f)) || ferror(f)) {
		err_msg("metrics: writing %s: %s", tmp, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (fclose(f) && !ret) {
		err_msg("metrics: writing %s: %s", tmp, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (!ret && rename(tmp, path)) {
		err_msg("metrics: renaming %s to %s: %s", tmp, path,
			strerror(errno));
		ret = EXIT_FAIL;
	}
	if (ret)
		unlink(tmp);
	free(tmp);
	return ret;
}

int cmd_metrics(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	struct pool_row *rows;
	size_t nrows;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_metrics, stdout);
		case 'O':
			output = optarg;
			break;
		default:
			return usage_of(usage_metrics, stderr);
		}
	}
	if (argc - optind > 1)
		return usage_of(usage_metrics, stderr);

	ret = collect_pools(optind < argc ? argv[optind] : NULL, UNIT_PAGES,
			    &rows, &nrows);
	if (ret)
		return ret;
	if (output) {
		ret = write_metrics_file(output, rows, nrows);
	} else {
		write_metrics(stdout, rows, nrows);
		if (fflush(stdout)) {
			err_msg("metrics: %s", strerror(errno));
			ret = EXIT_FAIL;
		}
	}
	free_pools(rows, nrows);
	return ret;
}
