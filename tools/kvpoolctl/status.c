// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl status: every pool's figures, and its tenants.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvpoolctl.h"

const char usage_status[] =
"status [--json | --csv] [-r] [-n] [-o COLS] [--units pages|tokens|bytes] [POOL]\n"
"    Show every pool (or POOL): pages (prefix-cache pages evictable and\n"
"    pinned, pages of rows in flight as export files), rows, pressure\n"
"    watermarks, tenants and clients, its GPU, the chunk budget it is on\n"
"    and the chunks it holds, from sysfs, and a table of each pool's\n"
"    tenants: use, limits and the pages they are asked back. Needs\n"
"    no privilege: every tenant as root (CAP_SYS_ADMIN), else only the\n"
"    user's own, where they may open the pool (which status then does,\n"
"    for a moment; as root it does not open pools). Destroyed pools\n"
"    that still hold their memory for a quarantine (retired) are\n"
"    counted under the tables when there are any.\n"
"    -j, --json   one JSON object, the sysfs attribute names as keys\n"
"    --csv        the pools as comma-separated values, a line of keys first\n"
"    -o COLS      only these columns of the pools, by key (as --json's)\n"
"    --units U    page counts in pages (default), tokens, or bytes (pools\n"
"                 with an arena; opens the pool to ask its page size)\n"
"    -r, --raw    the text tables unaligned and uncut, one space apart\n"
"    -n, --noheadings  the text tables without their heading lines\n";

/*
 * Pools destroyed with pages in quarantine that still hold their arena,
 * and their chunks (/sys/class/kvpool/retired_pools, retired_chunks;
 * ABI 3): -1 each where the module has no such file.
 */
struct retired {
	long long pools, chunks;
};

/* A decimal count of the class's file @name, or -1. */
static long long class_count(const char *name)
{
	char path[64], buf[32], *end;
	unsigned long long v;
	long long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kvpool/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && parse_decimal(buf, &v, &end) &&
	    (!*end || *end == '\n') && v <= INT32_MAX)
		n = (long long)v;
	fclose(f);
	return n;
}

static void read_retired(struct retired *r)
{
	r->pools = class_count("retired_pools");
	r->chunks = class_count("retired_chunks");
}

/* A count of read_retired()'s in JSON: null where the file is missing. */
static void json_count(const char *key, long long v, bool last)
{
	printf("  \"%s\": ", key);
	if (v < 0)
		printf("null");
	else
		printf("%lld", v);
	printf("%s\n", last ? "" : ",");
}

/* The text line about retired pools; nothing when there are none. */
static void print_retired(const struct retired *r)
{
	if (r->pools <= 0 && r->chunks <= 0)
		return;
	printf("\nretired pools: %lld, holding %lld chunk%s until the processes that used their quarantined pages exit\n",
	       r->pools, r->chunks, r->chunks == 1 ? "" : "s");
}

/* One table column: a heading and where in a struct pool_row its figure is. */
struct column {
	const char *group;	/* heading above a run of columns, or NULL */
	const char *name;
	const char *key;	/* -o and CSV: the JSON key */
	bool pages;		/* a page count: --units converts it */
	size_t offset;		/* of an unsigned int (or __u32) */
	bool newer;		/* "-" on a module without tenants and export */
	bool text;		/* a string, left-aligned; "" shows as "-" */
	bool abi2;		/* "-" on a module before ABI 2 (quarantine) */
	bool budget;		/* "-" for a pool on no budget (ABI 4) */
};

static const struct column columns[] = {
	{ NULL, "POOL", "pool_id", false, ROW_FIELD(id), false, false, false,
	  false },
	{ "pages", "TOTAL", "nr_pages", true,
	  ROW_FIELD(info.out_nr_pages), false, false, false, false },
	{ "pages", "FREE", "free_pages", true,
	  ROW_FIELD(st.out_free_pages), false, false, false, false },
	{ "pages", "ROW", "row_pages", true,
	  ROW_FIELD(st.out_row_pages), false, false, false, false },
	{ "pages", "SLOT", "slot_pages", true,
	  ROW_FIELD(st.out_slot_pages), false, false, false, false },
	/* Prefix-cache pages: evictable, and pinned by a row borrowing them. */
	{ "pages", "EVICT", "cache_evictable", true,
	  ROW_FIELD(st.out_cache_evictable), false, false, false, false },
	{ "pages", "PINNED", "cache_pinned", true,
	  ROW_FIELD(st.out_cache_pinned), false, false, false, false },
	/* Owned by rows in flight as export files. */
	{ "pages", "EXPORT", "export_pages", true,
	  ROW_FIELD(st.out_export_pages), true, false, false, false },
	{ "pages", "RSVD", "reserved_pages", true,
	  ROW_FIELD(st.out_reserved_pages), false, false, false, false },
	/* Taken back from dead clients, until their GPU work is done. */
	{ "pages", "QUAR", "quarantine_pages", true,
	  ROW_FIELD(st.out_quarantine_pages), false, false, true, false },
	{ "rows", "TOTAL", "nr_rows", false,
	  ROW_FIELD(info.out_nr_rows), false, false, false, false },
	{ "rows", "FREE", "free_rows", false,
	  ROW_FIELD(st.out_free_rows), false, false, false, false },
	{ "rows", "HELD", "held_rows", false,
	  ROW_FIELD(st.out_held_rows), false, false, false, false },
	{ "rows", "SLOT", "slot_rows", false,
	  ROW_FIELD(st.out_slot_rows), false, false, false, false },
	{ "rows", "EXPORT", "export_rows", false,
	  ROW_FIELD(st.out_export_rows), true, false, false, false },
	{ "rows", "RSVD", "reserved_rows", false,
	  ROW_FIELD(st.out_reserved_rows), false, false, false, false },
	{ "wmark", "LOW", "low_wmark", true,
	  ROW_FIELD(x.low_wmark), true, false, false, false },
	{ "wmark", "HIGH", "high_wmark", true,
	  ROW_FIELD(x.high_wmark), true, false, false, false },
	{ NULL, "TENANTS", "nr_tenants", false,
	  ROW_FIELD(x.nr_tenants), true, false, false, false },
	{ NULL, "CLIENTS", "nr_clients", false,
	  ROW_FIELD(st.out_nr_clients), false, false, false, false },
	{ NULL, "GPU", "gpu", false, ROW_FIELD(gpu), false, true, false, false },
	/* ABI 4: the chunk budget it is on, and the chunks it holds now. */
	{ "budget", "ID", "budget", false, ROW_FIELD(budget), false, false,
	  false, true },
	{ "budget", "CHUNKS", "chunks", false, ROW_FIELD(chunks), false,
	  false, false, true },
};

/* Column @col of @r as text. */
static void col_text(size_t col, const struct pool_row *r, char *buf,
		     size_t len)
{
	const char *field = (const char *)r + columns[col].offset;

	if ((columns[col].newer && !r->has_tenants) ||
	    (columns[col].abi2 && !r->has_quarantine) ||
	    (columns[col].budget && !r->on_budget))
		snprintf(buf, len, "-");
	else if (columns[col].text)
		snprintf(buf, len, "%s", *field ? field : "-");
	else if (columns[col].pages && !r->factor)
		snprintf(buf, len, "-");
	else if (columns[col].pages)
		snprintf(buf, len, "%llu",
			 *(const unsigned int *)field * r->factor);
	else
		snprintf(buf, len, "%u", *(const unsigned int *)field);
}

/*
 * The pools as put_table() writes them: a column a figure; for -o and
 * CSV under its JSON key, else (@headings) under its heading, with the
 * group line over them.
 */
static void print_pool_cells(const struct pool_row *rows, size_t nr,
			     struct outfmt *o, bool headings)
{
	struct colspec cols[ARRAY_SIZE(columns)];
	struct cell *cells;
	char (*text)[PCI_NAME_LEN];
	size_t i, j, n = ARRAY_SIZE(columns);

	cells = calloc(nr ? nr * n : 1, sizeof(*cells));
	text = calloc(nr ? nr * n : 1, sizeof(*text));
	if (!cells || !text) {
		free(cells);
		free(text);
		err_msg("out of memory");
		return;
	}
	for (j = 0; j < n; j++)
		cols[j] = (struct colspec){
			headings ? columns[j].name : columns[j].key,
			columns[j].key, columns[j].text, true,
			columns[j].pages, 0,
			headings ? columns[j].group : NULL };
	for (i = 0; i < nr; i++) {
		for (j = 0; j < n; j++) {
			struct cell *c = &cells[i * n + j];
			char *end;

			col_text(j, &rows[i], text[i * n + j], PCI_NAME_LEN);
			if (!strcmp(text[i * n + j], "-")) {
				c->kind = CK_NULL;
			} else if (columns[j].text) {
				c->kind = CK_STR;
				c->str = text[i * n + j];
			} else {
				c->kind = CK_NUM;
				c->num = strtoull(text[i * n + j], &end, 10);
			}
		}
	}
	put_table(cols, n, cells, nr, o, 0);
	free(cells);
	free(text);
}

/* The tenants of each pool, under the pools' table, as @o asks. */
static void print_tenants(const struct pool_row *rows, size_t nr,
			  const struct outfmt *o)
{
	size_t j;

	for (j = 0; j < nr; j++) {
		const struct pool_row *r = &rows[j];

		if (r->tenants_shown == TENANTS_NONE) {
			printf("\npool %u tenants not shown: %s\n", r->id,
			       r->tenant_note);
			continue;
		}
		if (r->tenants_shown == TENANTS_OWN)
			printf("\npool %u tenants: only yours (%s):\n", r->id,
			       r->tenant_note);
		else if (!r->nr_trows)
			/* No clients and no limits set: nothing to say. */
			continue;
		else
			printf("\npool %u tenants:\n", r->id);
		print_tenants_as(r->trows, r->nr_trows, o, r->factor, 2);
	}
}

/* A figure a module before tenants and export lacks: null there. */
static void json_newer(const struct pool_row *r, const char *key,
		       unsigned int v, bool last)
{
	printf("      \"%s\": ", key);
	if (r->has_tenants)
		printf("%u", v);
	else
		printf("null");
	printf("%s\n", last ? "" : ",");
}

static void print_json(const struct pool_row *rows, size_t nr,
		       const struct retired *rt)
{
	static const struct outfmt json_out = { .json = true };
	size_t j;

	printf("{\n  \"pools\": [");
	for (j = 0; j < nr; j++) {
		const struct pool_row *r = &rows[j];
		const struct kvpool_info *in = &r->info;
		const struct kvpool_stats *st = &r->st;

		/* The sysfs attribute names of docs/design.md, in its order. */
		printf("%s\n    {\n", j ? "," : "");
		printf("      \"pool_id\": %u,\n", r->id);
		printf("      \"nr_pages\": %u,\n", in->out_nr_pages);
		printf("      \"page_tokens\": %u,\n", in->out_page_tokens);
		printf("      \"nr_rows\": %u,\n", in->out_nr_rows);
		printf("      \"row_tokens\": %u,\n", in->out_row_tokens);
		printf("      \"create_flags\": %u,\n", in->out_create_flags);
		printf("      \"free_pages\": %u,\n", st->out_free_pages);
		printf("      \"row_pages\": %u,\n", st->out_row_pages);
		printf("      \"slot_pages\": %u,\n", st->out_slot_pages);
		printf("      \"cache_evictable\": %u,\n",
		       st->out_cache_evictable);
		printf("      \"cache_pinned\": %u,\n", st->out_cache_pinned);
		printf("      \"reserved_pages\": %u,\n",
		       st->out_reserved_pages);
		printf("      \"free_rows\": %u,\n", st->out_free_rows);
		printf("      \"held_rows\": %u,\n", st->out_held_rows);
		printf("      \"slot_rows\": %u,\n", st->out_slot_rows);
		printf("      \"reserved_rows\": %u,\n", st->out_reserved_rows);
		printf("      \"nr_clients\": %u,\n", st->out_nr_clients);
		json_newer(r, "nr_tenants", r->x.nr_tenants, false);
		json_newer(r, "export_rows", st->out_export_rows, false);
		json_newer(r, "export_pages", st->out_export_pages, false);
		json_newer(r, "low_wmark", r->x.low_wmark, false);
		json_newer(r, "high_wmark", r->x.high_wmark, false);
		/* null: a module before ABI 2 has no quarantine. */
		printf("      \"quarantine_pages\": ");
		if (r->has_quarantine)
			printf("%u,\n", st->out_quarantine_pages);
		else
			printf("null,\n");
		/* null: the pool names no GPU. */
		printf("      \"gpu\": ");
		json_string_or_null(r->gpu);
		printf(",\n");
		/* null: the pool is on no budget (or the module has none). */
		if (r->on_budget)
			printf("      \"budget\": %u,\n      \"chunks\": %u,\n",
			       r->budget, r->chunks);
		else
			printf("      \"budget\": null,\n      \"chunks\": null,\n");
		/*
		 * Always an array: all the tenants, the caller's own, or
		 * none, as tenants_shown says; tenants_note says why not all.
		 */
		printf("      \"tenants_shown\": \"%s\",\n",
		       tenants_shown_names[r->tenants_shown]);
		printf("      \"tenants_note\": ");
		json_string_or_null(r->tenant_note);
		printf(",\n      \"tenants\": ");
		print_tenants_as(r->trows, r->nr_trows, &json_out, 1, 6);
		printf("\n    }");
	}
	printf("%s],\n", nr ? "\n  " : "");
	json_count("retired_pools", rt->pools, false);
	json_count("retired_chunks", rt->chunks, true);
	printf("}\n");
}

int cmd_status(int argc, char **argv)
{
	struct colspec pcols[ARRAY_SIZE(columns)];
	struct retired retired;
	struct pool_row *rows;
	struct outfmt o;
	size_t nrows, j;
	bool done;
	int ret;

	ret = parse_table_opts(argc, argv, usage_status, &o, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_status, stderr);
	/* -o names the pools' columns; the tenants' tables show theirs. */
	for (j = 0; j < ARRAY_SIZE(columns); j++)
		pcols[j] = (struct colspec){ columns[j].key, columns[j].key,
					     false, true, false, 0, NULL };
	ret = select_columns(&o, pcols, ARRAY_SIZE(columns));
	if (ret)
		return ret;

	ret = collect_pools(optind < argc ? argv[optind] : NULL, o.units,
			    &rows, &nrows);
	if (ret)
		return ret;
	read_retired(&retired);
	if (o.json) {
		print_json(rows, nrows, &retired);
	} else if (o.csv || o.cols) {
		/* One table: the pools', machine-readable. */
		print_pool_cells(rows, nrows, &o, false);
	} else if (nrows) {
		/* Every column, under the headings of the groups. */
		print_pool_cells(rows, nrows, &o, true);
		o.cols = NULL;
		select_columns(&o, tenant_cols, TC_NR);
		print_tenants(rows, nrows, &o);
		print_retired(&retired);
	} else {
		printf("no pools (kvpoolctl create --help)\n");
		print_retired(&retired);
	}
	free_pools(rows, nrows);
	return EXIT_OK;
}
