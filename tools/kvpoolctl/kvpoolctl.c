// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl: show, check, create and destroy kvpool pools.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * status reads sysfs and never opens a pool, so it works as any user and
 * never keeps a pool from being destroyed; info and verify open the pool
 * (becoming a client for the moment), create and destroy go through
 * /dev/kvpool-control. See kvpoolctl(8) for the exit codes.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kvpool.h>

#define KVPOOLCTL_VERSION	"1.1.0"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

/* Exit codes; kvpoolctl(8) documents them, keep the two in step. */
enum {
	EXIT_OK = 0,
	EXIT_VIOLATIONS = 1,	/* verify found broken invariants */
	EXIT_USAGE = 2,		/* bad command line */
	EXIT_NOT_LOADED = 3,	/* the kvpool module is not loaded */
	EXIT_NO_POOL = 4,	/* no such pool */
	EXIT_PERM = 5,		/* permission denied: needs root */
	EXIT_BUSY = 6,		/* the pool has clients */
	EXIT_FAIL = 7,		/* any other error */
};

static const char *prog = "kvpoolctl";

static void __printf(1, 2) err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * The module is loaded when its control device or any of its devices is
 * there: the control device alone covers a module loaded with nr_pages=0.
 */
static bool module_loaded(void)
{
	return !access(KVPOOL_CONTROL_PATH, F_OK) ||
	       kvpool_pool_list(NULL, 0) >= 0;
}

static int not_loaded(void)
{
	err_msg("kvpool module is not loaded (insmod kvpool.ko)");
	return EXIT_NOT_LOADED;
}

/*
 * Report @err from @what on pool @pool (-1: no pool involved) and map it to
 * an exit code. ENODEV and ENOENT mean the pool (or the module) is not
 * there; which one is told apart here, after the fact.
 */
static int pool_error(int err, const char *what, int pool)
{
	switch (-err) {
	case ENODEV:
	case ENOENT:
		if (!module_loaded())
			return not_loaded();
		if (pool >= 0) {
			err_msg("no such pool: %d (kvpoolctl status lists them)",
				pool);
			return EXIT_NO_POOL;
		}
		break;
	case EACCES:
	case EPERM:
		err_msg("%s: permission denied: needs root (CAP_SYS_ADMIN)",
			what);
		return EXIT_PERM;
	case EBUSY:
		err_msg("%s: pool %d has clients; stop them first (fuser -v /dev/kvpool%d)",
			what, pool, pool);
		return EXIT_BUSY;
	}
	err_msg("%s: %s", what, kvpool_strerror(err));
	return EXIT_FAIL;
}

/*
 * Parse a count: decimal, optionally followed by K, M or G (times 1024,
 * 1024^2, 1024^3), at most UINT32_MAX. The kernel checks the ranges.
 */
static bool parse_u32(const char *s, unsigned int *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	switch (*end) {
	case 'k': case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'm': case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'g': case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	}
	if (*end || v > UINT32_MAX / mul)
		return false;
	*out = (unsigned int)(v * mul);
	return true;
}

/* POOL on the command line: "N", "kvpoolN" or "/dev/kvpoolN". */
static bool parse_pool(const char *s, unsigned int *id)
{
	if (!strncmp(s, "/dev/", 5))
		s += 5;
	if (!strncmp(s, "kvpool", 6))
		s += 6;
	/* No suffix here: "kvpool1k" is no pool. */
	return *s >= '0' && *s <= '9' && !strpbrk(s, "kKmMgG") &&
	       parse_u32(s, id) && *id <= INT_MAX;
}

static int bad_pool(const char *s)
{
	err_msg("not a pool: '%s' (want N, kvpoolN or /dev/kvpoolN)", s);
	return EXIT_USAGE;
}

/* Usage text of each command; the first line doubles as its synopsis. */
static const char usage_status[] =
"status [--json] [POOL]\n"
"    Show every pool (or POOL): pages (prefix-cache pages evictable and\n"
"    pinned), rows and clients, from sysfs.\n"
"    Needs no privilege and does not open the pool.\n"
"    -j, --json   one JSON object, the sysfs attribute names as keys\n";

static const char usage_info[] =
"info [--json] POOL\n"
"    Show POOL's geometry, ABI version and features (KVPOOL_INFO).\n"
"    Opens /dev/kvpoolN, which is root-only by default.\n"
"    -j, --json   one JSON object\n";

static const char usage_verify[] =
"verify [POOL]\n"
"    Check every invariant of POOL (default: every pool) with KVPOOL_VERIFY.\n"
"    Exits 1 if any is broken; the kernel log has one line for each.\n";

static const char usage_create[] =
"create --pages N --page-tokens N --rows N --row-tokens N [--no-reserve-zero]\n"
"    Create a pool and print its id N (/dev/kvpoolN). Needs root.\n"
"    --pages N         pages in the pool, 1..134217728 (2^27)\n"
"    --page-tokens N   tokens per page, 1..65536\n"
"    --rows N          rows (requests), 1..1048576 (2^20)\n"
"    --row-tokens N    longest row in tokens, 1..16777216 (2^24)\n"
"    --no-reserve-zero hand out page 0 and row 0 too (by default they are\n"
"                      kept back as CUDA-graph padding)\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n";

static const char usage_destroy[] =
"destroy POOL\n"
"    Destroy POOL. Refused while it has clients. Needs root.\n";

static int usage_of(const char *text, FILE *f)
{
	fprintf(f, "usage: %s %s", prog, text);
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

/* Parse only -h/--help and -j/--json (if @json is not NULL). */
static int parse_simple(int argc, char **argv, const char *usage, bool *json,
			bool *done)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*done = false;
	optind = 0;
	while ((c = getopt_long(argc, argv, json ? "hj" : "h", opts,
				NULL)) != -1) {
		switch (c) {
		case 'h':
			*done = true;
			return usage_of(usage, stdout);
		case 'j':
			if (json) {
				*json = true;
				break;
			}
			/* fall through */
		default:
			*done = true;
			return usage_of(usage, stderr);
		}
	}
	return EXIT_OK;
}

/* ---- status ---- */

struct pool_row {
	unsigned int id;
	struct kvpool_info info;
	struct kvpool_stats st;
};

/* One table column: a heading and where in a struct pool_row its figure is. */
struct column {
	const char *group;	/* heading above a run of columns, or NULL */
	const char *name;
	size_t offset;		/* of an unsigned int (or __u32) */
};

#define ROW_FIELD(f)	offsetof(struct pool_row, f)

static const struct column columns[] = {
	{ NULL, "POOL", ROW_FIELD(id) },
	{ "pages", "TOTAL", ROW_FIELD(info.out_nr_pages) },
	{ "pages", "FREE", ROW_FIELD(st.out_free_pages) },
	{ "pages", "ROW", ROW_FIELD(st.out_row_pages) },
	{ "pages", "SLOT", ROW_FIELD(st.out_slot_pages) },
	/* Prefix-cache pages: evictable, and pinned by a row borrowing them. */
	{ "pages", "EVICT", ROW_FIELD(st.out_cache_evictable) },
	{ "pages", "PINNED", ROW_FIELD(st.out_cache_pinned) },
	{ "pages", "RSVD", ROW_FIELD(st.out_reserved_pages) },
	{ "rows", "TOTAL", ROW_FIELD(info.out_nr_rows) },
	{ "rows", "FREE", ROW_FIELD(st.out_free_rows) },
	{ "rows", "HELD", ROW_FIELD(st.out_held_rows) },
	{ "rows", "SLOT", ROW_FIELD(st.out_slot_rows) },
	{ "rows", "RSVD", ROW_FIELD(st.out_reserved_rows) },
	{ NULL, "CLIENTS", ROW_FIELD(st.out_nr_clients) },
};

static unsigned int col_value(size_t col, const struct pool_row *r)
{
	return *(const unsigned int *)((const char *)r + columns[col].offset);
}

static bool same_group(size_t a, size_t b)
{
	const char *x = columns[a].group, *y = columns[b].group;

	return x == y || (x && y && !strcmp(x, y));
}

/* Columns are one space apart, two between groups. */
static int col_gap(size_t i)
{
	if (!i)
		return 0;
	return same_group(i, i - 1) ? 1 : 2;
}

static void put_chars(int c, int n)
{
	while (n-- > 0)
		putchar(c);
}

static void print_table(const struct pool_row *rows, size_t nr)
{
	int width[ARRAY_SIZE(columns)], pad = 0;
	char buf[16];
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(columns); i++) {
		width[i] = (int)strlen(columns[i].name);
		for (j = 0; j < nr; j++) {
			int w = snprintf(buf, sizeof(buf), "%u",
					 col_value(i, &rows[j]));

			if (w > width[i])
				width[i] = w;
		}
	}

	/*
	 * The group line: "---- pages ----" over each run of columns; blanks
	 * over the others are only written when a group follows them.
	 */
	for (i = 0; i < ARRAY_SIZE(columns); i = j) {
		int span = width[i], label, left;

		for (j = i + 1; j < ARRAY_SIZE(columns); j++) {
			if (!same_group(i, j))
				break;
			span += 1 + width[j];
		}
		pad += col_gap(i);
		if (!columns[i].group) {
			pad += span;
			continue;
		}
		label = (int)strlen(columns[i].group) + 2;
		left = (span - label) / 2;
		put_chars(' ', pad);
		pad = 0;
		put_chars('-', left);
		printf(" %s ", columns[i].group);
		put_chars('-', span - label - left);
	}
	putchar('\n');

	for (i = 0; i < ARRAY_SIZE(columns); i++)
		printf("%*s%*s", col_gap(i), "", width[i], columns[i].name);
	putchar('\n');
	for (j = 0; j < nr; j++) {
		for (i = 0; i < ARRAY_SIZE(columns); i++)
			printf("%*s%*u", col_gap(i), "", width[i],
			       col_value(i, &rows[j]));
		putchar('\n');
	}
}

static void print_json(const struct pool_row *rows, size_t nr)
{
	size_t j;

	printf("{\n  \"pools\": [");
	for (j = 0; j < nr; j++) {
		const struct kvpool_info *in = &rows[j].info;
		const struct kvpool_stats *st = &rows[j].st;

		/* The sysfs attribute names of docs/design.md, in its order. */
		printf("%s\n    {\n", j ? "," : "");
		printf("      \"pool_id\": %u,\n", rows[j].id);
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
		printf("      \"nr_clients\": %u\n", st->out_nr_clients);
		printf("    }");
	}
	printf("%s]\n}\n", nr ? "\n  " : "");
}

/*
 * The pools to act on: @arg's pool, or every pool. On success *@ids is a
 * malloc()ed array of *@nr ids; the return value is an exit code.
 */
static int select_pools(const char *arg, unsigned int **ids, size_t *nr)
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

static int cmd_status(int argc, char **argv)
{
	struct pool_row *rows = NULL;
	unsigned int *ids;
	size_t nr, nrows = 0, i;
	bool json = false, explicit, done;
	int ret;

	ret = parse_simple(argc, argv, usage_status, &json, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_status, stderr);

	explicit = optind < argc;
	ret = select_pools(explicit ? argv[optind] : NULL, &ids, &nr);
	if (ret)
		return ret;
	if (nr) {
		rows = calloc(nr, sizeof(*rows));
		if (!rows) {
			free(ids);
			return pool_error(-ENOMEM, "malloc", -1);
		}
	}
	for (i = 0; i < nr; i++) {
		int err = kvpool_pool_status(ids[i], &rows[nrows].info,
					     &rows[nrows].st);

		/* Listed but gone by now: it was destroyed meanwhile. */
		if (err == -ENODEV && !explicit)
			continue;
		if (err) {
			ret = pool_error(err, "reading sysfs", (int)ids[i]);
			goto out;
		}
		rows[nrows].id = ids[i];
		nrows++;
	}

	if (json)
		print_json(rows, nrows);
	else if (nrows)
		print_table(rows, nrows);
	else
		printf("no pools (kvpoolctl create --help)\n");
out:
	free(rows);
	free(ids);
	return ret;
}

/* ---- info ---- */

static const char *const feature_names[] = {
	"rows", "extend", "slots", "verify", "prefix-cache", "swa", "export",
	"quota", "pressure",
};

static void print_features(__u64 feat, bool json)
{
	const char *sep = "";
	unsigned int bit;

	for (bit = 0; bit < 64; bit++) {
		if (!(feat & (1ULL << bit)))
			continue;
		printf("%s%s", sep, json ? "\"" : "");
		if (bit < ARRAY_SIZE(feature_names))
			printf("%s", feature_names[bit]);
		else
			printf("bit%u", bit);
		printf("%s", json ? "\"" : "");
		sep = json ? ", " : " ";
	}
	if (!*sep && !json)
		printf("none");
}

/* Open pool @id; the return value is an exit code. */
static int open_pool(unsigned int id, struct kvpool **kpp)
{
	char path[32];
	int err;

	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	err = kvpool_open(path, kpp);
	if (!err)
		return EXIT_OK;
	/* The sysfs entry without the node would be a udev problem. */
	if (err == -ENOENT && kvpool_pool_status(id, NULL, NULL) == 0) {
		err_msg("%s: no device node, but pool %u exists in sysfs (devtmpfs or udev missing?)",
			path, id);
		return EXIT_FAIL;
	}
	return pool_error(err, path, (int)id);
}

static int cmd_info(int argc, char **argv)
{
	struct kvpool_info in;
	struct kvpool *kp;
	bool json = false, done;
	unsigned int id;
	int ret;

	ret = parse_simple(argc, argv, usage_info, &json, &done);
	if (done)
		return ret;
	if (argc - optind != 1)
		return usage_of(usage_info, stderr);
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	kvpool_info(kp, &in);
	kvpool_close(kp);

	if (json) {
		printf("{\n");
		printf("  \"pool_id\": %u,\n", in.out_pool_id);
		printf("  \"abi_version\": %u,\n", in.out_abi_version);
		printf("  \"features\": [");
		print_features(in.out_features, true);
		printf("],\n");
		printf("  \"features_mask\": %llu,\n",
		       (unsigned long long)in.out_features);
		printf("  \"nr_pages\": %u,\n", in.out_nr_pages);
		printf("  \"page_tokens\": %u,\n", in.out_page_tokens);
		printf("  \"nr_rows\": %u,\n", in.out_nr_rows);
		printf("  \"row_tokens\": %u,\n", in.out_row_tokens);
		printf("  \"create_flags\": %u,\n", in.out_create_flags);
		printf("  \"max_batch\": %u\n", in.out_max_batch);
		printf("}\n");
		return EXIT_OK;
	}

	printf("pool %u (/dev/kvpool%u)\n", in.out_pool_id, in.out_pool_id);
	printf("  abi version   %u\n", in.out_abi_version);
	printf("  pages         %u x %u tokens\n", in.out_nr_pages,
	       in.out_page_tokens);
	printf("  rows          %u, up to %u tokens each\n", in.out_nr_rows,
	       in.out_row_tokens);
	printf("  create flags  0x%x%s\n", in.out_create_flags,
	       in.out_create_flags & KVPOOL_CREATE_RESERVE_ZERO ?
	       " (reserve-zero: page 0 and row 0 kept back)" : "");
	printf("  max batch     %u entries\n", in.out_max_batch);
	printf("  features      ");
	print_features(in.out_features, false);
	putchar('\n');
	return EXIT_OK;
}

/* ---- verify ---- */

static int verify_one(unsigned int id, unsigned int *violations)
{
	struct kvpool_verify v;
	struct kvpool_info in;
	struct kvpool *kp;
	char what[32];
	int ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	kvpool_info(kp, &in);
	snprintf(what, sizeof(what), "verify pool %u", id);
	if (!(in.out_features & KVPOOL_FEAT_VERIFY)) {
		kvpool_close(kp);
		return pool_error(-EOPNOTSUPP, what, (int)id);
	}
	ret = kvpool_verify(kp, &v);
	kvpool_close(kp);
	if (ret < 0)
		return pool_error(ret, what, (int)id);

	if (!ret) {
		printf("pool %u: ok (%u pages, %u rows checked)\n", id,
		       v.out_pages_checked, v.out_rows_checked);
		return EXIT_OK;
	}
	printf("pool %u: %d invariant violation%s (%u pages, %u rows checked)\n",
	       id, ret, ret == 1 ? "" : "s", v.out_pages_checked,
	       v.out_rows_checked);
	printf("  see the kernel log: dmesg | grep 'kvpool: pool %u: invariant'\n",
	       id);
	*violations += (unsigned int)ret;
	return EXIT_OK;
}

static int cmd_verify(int argc, char **argv)
{
	unsigned int *ids, violations = 0;
	size_t nr, i;
	bool done;
	int ret, err = EXIT_OK;

	ret = parse_simple(argc, argv, usage_verify, NULL, &done);
	if (done)
		return ret;
	if (argc - optind > 1)
		return usage_of(usage_verify, stderr);

	ret = select_pools(optind < argc ? argv[optind] : NULL, &ids, &nr);
	if (ret)
		return ret;
	if (!nr)
		printf("no pools\n");
	/* Check every pool even if one fails; an error outranks exit 1. */
	for (i = 0; i < nr; i++) {
		ret = verify_one(ids[i], &violations);
		if (ret)
			err = ret;
	}
	free(ids);
	if (err)
		return err;
	return violations ? EXIT_VIOLATIONS : EXIT_OK;
}

/* ---- create, destroy ---- */

static int cmd_create(int argc, char **argv)
{
	enum { OPT_PAGES = 256, OPT_PAGE_TOKENS, OPT_ROWS, OPT_ROW_TOKENS,
	       OPT_NO_RESERVE_ZERO };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "pages", required_argument, NULL, OPT_PAGES },
		{ "page-tokens", required_argument, NULL, OPT_PAGE_TOKENS },
		{ "rows", required_argument, NULL, OPT_ROWS },
		{ "row-tokens", required_argument, NULL, OPT_ROW_TOKENS },
		{ "no-reserve-zero", no_argument, NULL, OPT_NO_RESERVE_ZERO },
		{ NULL, 0, NULL, 0 },
	};
	struct kvpool_pool_params p = { .flags = KVPOOL_CREATE_RESERVE_ZERO };
	unsigned int *field, seen = 0, id;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_create, stdout);
		case OPT_PAGES:
			field = &p.nr_pages;
			break;
		case OPT_PAGE_TOKENS:
			field = &p.page_tokens;
			break;
		case OPT_ROWS:
			field = &p.nr_rows;
			break;
		case OPT_ROW_TOKENS:
			field = &p.row_tokens;
			break;
		case OPT_NO_RESERVE_ZERO:
			p.flags &= ~KVPOOL_CREATE_RESERVE_ZERO;
			continue;
		default:
			return usage_of(usage_create, stderr);
		}
		if (!parse_u32(optarg, field)) {
			err_msg("--%s: not a number: '%s'",
				opts[c - OPT_PAGES + 1].name, optarg);
			return EXIT_USAGE;
		}
		seen |= 1U << (c - OPT_PAGES);
	}
	if (optind != argc || seen != 0xf) {
		err_msg("create needs --pages, --page-tokens, --rows and --row-tokens");
		return usage_of(usage_create, stderr);
	}

	ret = kvpool_pool_create(&p, &id);
	if (ret == -ENOENT && !module_loaded())
		return not_loaded();
	if (ret == -EINVAL) {
		err_msg("create: the kernel refused this geometry");
		fprintf(stderr, "limits: pages 1..2^27, page-tokens 1..65536, rows 1..2^20, row-tokens 1..2^24;\n"
			"with reserve-zero (the default) at least 2 pages and 2 rows\n");
		return EXIT_FAIL;
	}
	if (ret == -ENOSPC) {
		/* Not in the uapi's table: the module's limit on pools. */
		err_msg("create: no free pool id (the module allows 64 pools)");
		return EXIT_FAIL;
	}
	if (ret)
		return pool_error(ret, "create", -1);
	printf("%u\n", id);
	return EXIT_OK;
}

static int cmd_destroy(int argc, char **argv)
{
	unsigned int id;
	bool done;
	int ret;

	ret = parse_simple(argc, argv, usage_destroy, NULL, &done);
	if (done)
		return ret;
	if (argc - optind != 1)
		return usage_of(usage_destroy, stderr);
	if (!parse_pool(argv[optind], &id))
		return bad_pool(argv[optind]);

	ret = kvpool_pool_destroy(id);
	if (ret)
		return pool_error(ret, "destroy", (int)id);
	return EXIT_OK;
}

/* ---- main ---- */

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
	{ "status", cmd_status, usage_status },
	{ "info", cmd_info, usage_info },
	{ "verify", cmd_verify, usage_verify },
	{ "create", cmd_create, usage_create },
	{ "destroy", cmd_destroy, usage_destroy },
};

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int print_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: %s [-h|--help] [--version] COMMAND [ARGS]\n\n"
		"Show, check, create and destroy kvpool pools (/dev/kvpoolN).\n"
		"POOL is N, kvpoolN or /dev/kvpoolN.\n\ncommands:\n", prog);
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		const char *u = commands[i].usage;

		fprintf(f, "  %.*s\n", (int)strcspn(u, "\n"), u);
	}
	fprintf(f, "\n'%s COMMAND --help' or '%s help COMMAND' tells more; "
		"see kvpoolctl(8).\n", prog, prog);
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *cmd;
	int c;

	/* '+': stop at the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return print_usage(stdout);
		case 'V':
			printf("kvpoolctl %s (kvpool ABI %d)\n",
			       KVPOOLCTL_VERSION, KVPOOL_ABI_VERSION);
			return EXIT_OK;
		default:
			return print_usage(stderr);
		}
	}
	if (optind >= argc)
		return print_usage(stderr);

	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help")) {
		if (argc == 1)
			return print_usage(stdout);
		cmd = find_command(argv[1]);
		if (!cmd || argc > 2)
			return print_usage(stderr);
		return usage_of(cmd->usage, stdout);
	}

	cmd = find_command(argv[0]);
	if (!cmd) {
		err_msg("unknown command '%s'", argv[0]);
		return print_usage(stderr);
	}
	return cmd->fn(argc, argv);
}
