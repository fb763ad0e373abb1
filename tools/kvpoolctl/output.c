// SPDX-License-Identifier: GPL-2.0-only
/*
 * The output layer every table command writes through: a table's cells
 * as CSV, JSON or text (table.c lays text out), -o columns, and the
 * tenant tables status and tenant list share.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "kvpoolctl.h"

/*
 * @str as a JSON string; bytes that are no UTF-8 as U+FFFD (text.h).
 */
static void json_string(const char *str)
{
	json_put_string(stdout, str);
}

/* A string, or null for none (""). */
void json_string_or_null(const char *s)
{
	if (*s)
		json_string(s);
	else
		printf("null");
}

/*
 * Resolve -o's list (or the default columns) of @cols into @o->sel. A
 * name is a key or a heading, in any case. Returns an exit code.
 */
int select_columns(struct outfmt *o, const struct colspec *cols,
		   size_t ncols)
{
	char *list, *tok, *save;
	size_t i;

	o->nsel = 0;
	if (!o->cols) {
		for (i = 0; i < ncols; i++)
			if (cols[i].dflt || o->csv)
				o->sel[o->nsel++] = (int)i;
		return EXIT_OK;
	}
	list = strdup(o->cols);
	if (!list)
		return pool_error(-ENOMEM, "malloc", -1);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ncols; i++)
			if (!strcasecmp(tok, cols[i].key) ||
			    !strcasecmp(tok, cols[i].head))
				break;
		if (i == ncols || o->nsel == ARRAY_SIZE(o->sel)) {
			err_msg("-o: no column '%s'; the columns are:", tok);
			for (i = 0; i < ncols; i++)
				fprintf(stderr, "%s%s", i ? "," : "  ",
					cols[i].key);
			fputc('\n', stderr);
			free(list);
			return EXIT_USAGE;
		}
		o->sel[o->nsel++] = (int)i;
	}
	free(list);
	if (!o->nsel) {
		err_msg("-o: no columns given");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* A page count in @o's units: @factor per page, 0 if unknown. */
struct cell page_cell(unsigned long long pages, int kind,
		      unsigned long long factor)
{
	struct cell c = { .kind = kind, .num = pages };

	if (factor == 0 && kind != CK_NULL)
		c.kind = CK_NULL;
	else
		c.num = pages * factor;
	return c;
}

/* A CSV field (RFC 4180): quoted when it must be; text as UTF-8. */
static void csv_field(FILE *f, const struct cell *c)
{
	const char *s;
	char *u;

	switch (c->kind) {
	case CK_NUM:
	case CK_LIMIT:
		fprintf(f, "%llu", c->num);
		return;
	case CK_BOOL:
		fputs(c->num ? "true" : "false", f);
		return;
	case CK_NULL:
		return;
	}
	u = utf8_sanitized(c->str);
	s = u ? u : "";
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
	} else {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	}
	free(u);
}

/*
 * Write @nrows rows of @ncols cells each (row-major) as @o asks: CSV with
 * a line of keys first, or text under the headings (put_text()), @indent
 * spaces in.
 */
void put_table_to(FILE *f, const struct colspec *cols, size_t ncols,
		  const struct cell *cells, size_t nrows,
		  const struct outfmt *o, int indent)
{
	size_t i, j;

	if (o->csv) {
		for (j = 0; j < o->nsel; j++)
			fprintf(f, "%s%s", j ? "," : "", cols[o->sel[j]].key);
		fputc('\n', f);
		for (i = 0; i < nrows; i++) {
			for (j = 0; j < o->nsel; j++) {
				if (j)
					fputc(',', f);
				csv_field(f, &cells[i * ncols + o->sel[j]]);
			}
			fputc('\n', f);
		}
		return;
	}
	if (put_text(f, cols, ncols, cells, nrows, o, indent))
		err_msg("out of memory");
}

void put_table(const struct colspec *cols, size_t ncols,
	       const struct cell *cells, size_t nrows,
	       const struct outfmt *o, int indent)
{
	put_table_to(stdout, cols, ncols, cells, nrows, o, indent);
}

/*
 * The JSON object of one row of the table: every column, under its key,
 * @indent spaces in (its "{" not included).
 */
void put_json_object(const struct colspec *cols, size_t ncols,
		     const struct cell *row, int indent)
{
	size_t j;

	printf("{");
	for (j = 0; j < ncols; j++) {
		printf("%s\n%*s\"%s\": ", j ? "," : "", indent + 2, "",
		       cols[j].key);
		switch (row[j].kind) {
		case CK_NUM:
		case CK_LIMIT:
			printf("%llu", row[j].num);
			break;
		case CK_STR:
			json_string(row[j].str);
			break;
		case CK_BOOL:
			printf("%s", row[j].num ? "true" : "false");
			break;
		default:
			printf("null");
		}
	}
	printf("\n%*s}", indent, "");
}

const struct colspec tenant_cols[TC_NR] = {
	[TC_ID]		= { "TENANT", "tenant_id", false, true, false, 0, NULL },
	[TC_UID]	= { "UID", "uid", false, true, false, 0, NULL },
	[TC_BY_PATH]	= { "BY-PATH", "by_path", false, false, false, 0, NULL },
	[TC_CONFIGURED]	= { "CONFIGURED", "configured", false, false, false, 0, NULL },
	[TC_CGROUP_ID]	= { "CGROUP-ID", "cgroup_id", false, false, false, 0, NULL },
	[TC_CGROUP]	= { "CGROUP", "cgroup", true, true, false, 33, NULL },
	[TC_LABEL]	= { "LABEL", "label", true, true, false, 100, NULL },
	[TC_PAGES]	= { "PAGES", "pages", false, true, true, 0, NULL },
	[TC_CACHE]	= { "CACHE", "cache_pages", false, true, true, 0, NULL },
	[TC_ROWS]	= { "ROWS", "rows", false, true, false, 0, NULL },
	[TC_CLIENTS]	= { "CLIENTS", "nr_clients", false, true, false, 0, NULL },
	[TC_MAX]	= { "MAX", "max_pages", false, true, true, 0, NULL },
	[TC_MIN]	= { "MIN", "min_pages", false, true, true, 0, NULL },
	[TC_MAXROWS]	= { "MAX-ROWS", "max_rows", false, true, false, 0, NULL },
	[TC_ASK]	= { "ASK", "ask_pages", false, true, true, 0, NULL },
};

/*
 * The cells of tenant @r (TC_NR of them), page counts times @factor
 * (0: unknown, e.g. bytes without an arena); @json: the cgroup cell is
 * null, not its id, when its path is not known.
 */
void tenant_cells(struct tenant_row *r, struct cell *c,
		  unsigned long long factor, bool json,
		  struct tenant_scratch *scr)
{
	const struct kvpool_tenant_info *t = &r->t;
	int own = r->own ? CK_NULL : CK_NUM;

	memcpy(r->label, t->label, KVPOOL_LABEL_LEN);
	r->label[KVPOOL_LABEL_LEN] = '\0';
	c[TC_ID] = (struct cell){ CK_NUM, t->tenant_id, NULL };
	/* A tenant of every uid: "*" in text, null in JSON. */
	if (t->flags & KVPOOL_TENANT_ANY_UID)
		c[TC_UID] = (struct cell){ json ? CK_NULL : CK_STR, 0, "*" };
	else
		c[TC_UID] = (struct cell){ CK_NUM, t->uid, NULL };
	c[TC_BY_PATH] = (struct cell){ CK_BOOL,
				       !!(t->flags & KVPOOL_TENANT_BY_PATH),
				       NULL };
	c[TC_CONFIGURED] = (struct cell){ CK_BOOL,
					  !!(t->flags & KVPOOL_TENANT_CONFIGURED),
					  NULL };
	c[TC_CGROUP_ID] = (struct cell){ CK_NUM, t->cgroup_id, NULL };
	snprintf(scr->cgroup_id, sizeof(scr->cgroup_id), "%llu",
		 (unsigned long long)t->cgroup_id);
	if (r->cgroup)
		c[TC_CGROUP] = (struct cell){ CK_STR, 0, r->cgroup };
	else
		c[TC_CGROUP] = (struct cell){ json ? CK_NULL : CK_STR, 0,
					      scr->cgroup_id };
	c[TC_LABEL] = (struct cell){ r->own ? CK_NULL : CK_STR, 0, r->label };
	if (r->own) {
		c[TC_BY_PATH].kind = CK_NULL;
		c[TC_CONFIGURED].kind = CK_NULL;
	}
	c[TC_PAGES] = page_cell(t->pages, CK_NUM, factor);
	c[TC_CACHE] = page_cell(t->cache_pages, own, factor);
	c[TC_ROWS] = (struct cell){ CK_NUM, t->rows, NULL };
	c[TC_CLIENTS] = (struct cell){ own, t->nr_clients, NULL };
	c[TC_MAX] = page_cell(t->max_pages, CK_LIMIT, factor);
	c[TC_MIN] = page_cell(t->min_pages, CK_LIMIT, factor);
	c[TC_MAXROWS] = (struct cell){ CK_LIMIT, t->max_rows, NULL };
	c[TC_ASK] = page_cell(t->ask_pages, own, factor);
}

/*
 * @nr tenants as @o asks (JSON: an array, its "[" not included, @indent
 * spaces in).
 */
void print_tenants_as(struct tenant_row *rows, size_t nr,
		      const struct outfmt *o, unsigned long long factor,
		      int indent)
{
	struct tenant_scratch *scr;
	struct cell *cells;
	size_t i;

	cells = calloc(nr ? nr * TC_NR : 1, sizeof(*cells));
	scr = calloc(nr ? nr : 1, sizeof(*scr));
	if (!cells || !scr) {
		free(cells);
		free(scr);
		err_msg("out of memory");
		return;
	}
	for (i = 0; i < nr; i++)
		tenant_cells(&rows[i], &cells[i * TC_NR], factor, o->json,
			     &scr[i]);
	if (o->json) {
		printf("[");
		for (i = 0; i < nr; i++) {
			printf("%s\n%*s", i ? "," : "", indent + 2, "");
			put_json_object(tenant_cols, TC_NR, &cells[i * TC_NR],
					indent + 2);
		}
		if (nr)
			printf("\n%*s", indent, "");
		printf("]");
	} else {
		put_table(tenant_cols, TC_NR, cells, nr, o, indent);
	}
	free(cells);
	free(scr);
}

/*
 * The options of the table commands (status, tenant list, clients) into
 * *@o: -h, -j/--json, --csv, -o COLS, --units pages|tokens|bytes,
 * -r/--raw, -n/--noheadings. *@done as
 * parse_simple()'s. Returns an exit code.
 */
int parse_table_opts(int argc, char **argv, const char *usage,
		     struct outfmt *o, bool *done)
{
	enum { OPT_CSV = 256, OPT_UNITS };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "output", required_argument, NULL, 'o' },
		{ "units", required_argument, NULL, OPT_UNITS },
		{ "raw", no_argument, NULL, 'r' },
		{ "noheadings", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	*done = true;
	optind = 0;
	while ((c = getopt_long(argc, argv, "hjo:rn", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage, stdout);
		case 'j':
			o->json = true;
			break;
		case OPT_CSV:
			o->csv = true;
			break;
		case 'o':
			o->cols = optarg;
			break;
		case 'r':
			o->raw = true;
			break;
		case 'n':
			o->noheadings = true;
			break;
		case OPT_UNITS:
			if (!strcmp(optarg, "pages")) {
				o->units = UNIT_PAGES;
			} else if (!strcmp(optarg, "tokens")) {
				o->units = UNIT_TOKENS;
			} else if (!strcmp(optarg, "bytes")) {
				o->units = UNIT_BYTES;
			} else {
				err_msg("--units: '%s': want pages, tokens or bytes",
					optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			return usage_of(usage, stderr);
		}
	}
	if (o->json && (o->csv || o->cols || o->units)) {
		err_msg("--json writes every figure, in pages: not with --csv, -o or --units");
		return EXIT_USAGE;
	}
	if ((o->json || o->csv) && (o->raw || o->noheadings)) {
		err_msg("--raw and --noheadings are the text table's: not with --json or --csv");
		return EXIT_USAGE;
	}
	*done = false;
	return EXIT_OK;
}

/*
 * parse_table_opts() for a table of one pool's things (tenant list,
 * clients): the options, then one POOL into *@id, then -o checked
 * against @cols. With @given, POOL may be left out (*@given says if it
 * was, and *@id is then untouched); without, it must be there. *@done
 * as parse_simple()'s. Returns an exit code.
 */
int parse_table_pool(int argc, char **argv, const char *usage,
		     struct outfmt *o, const struct colspec *cols,
		     size_t ncols, unsigned int *id, bool *given, bool *done)
{
	int ret;

	ret = parse_table_opts(argc, argv, usage, o, done);
	if (*done)
		return ret;
	*done = true;
	if (argc - optind > 1 || (!given && argc - optind != 1))
		return usage_of(usage, stderr);
	if (given)
		*given = optind < argc;
	if (optind < argc && !parse_pool(argv[optind], id))
		return bad_pool(argv[optind]);
	ret = select_columns(o, cols, ncols);
	if (ret)
		return ret;
	*done = false;
	return EXIT_OK;
}
