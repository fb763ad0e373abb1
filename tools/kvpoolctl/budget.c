// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl budget: chunk budgets (ABI 4), the memory that pools created
 * on them (create --budget) grow and shrink on, through
 * /dev/kvpool-control.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvpoolctl.h"

/*
 * Budgets are numbered 0..63 (the module's table; CREATE is ENOSPC past
 * it): show without an id asks each in turn, as the uapi has no list.
 */
#define BUDGET_IDS	64

const char usage_budget[] =
"budget create --chunks N --chunk-bytes B\n"
"budget destroy ID\n"
"budget limits ID POOL [--min B] [--max B]\n"
"budget show [--json | --csv] [-r] [-n] [-o COLS] [ID]\n"
"    A chunk budget is host memory in equal chunks, all allocated when it\n"
"    is made, that the pools created on it (create --budget ID) take as\n"
"    their allocations need and give back when their pages come free.\n"
"    Needs root.\n"
"    create: make one and print its id (0..63).\n"
"    --chunks N        chunks, 1..1048576 (2^20)\n"
"    --chunk-bytes B   bytes of a chunk, a multiple of the CPU page, up to\n"
"                      1G; every pool's page size divides it\n"
"    destroy: remove budget ID. Refused while a pool is on it.\n"
"    limits: POOL's floor (--min: bytes of chunks it keeps and no other\n"
"    pool may take, rounded up to chunks) and ceiling (--max: the most it\n"
"    may hold, rounded down; 0: none) on budget ID. Either left out is 0.\n"
"    show: every budget (or ID): chunks, free chunks, pools, chunks that\n"
"    moved between pools, the bytes cleared for them and how fast.\n"
"    Numbers take a K, M or G suffix (x1024, x1024^2, x1024^3).\n"
TABLE_OPTS_HELP;

/*
 * Budget @id (-1: none) refused with @err by @what, about pool @pool
 * (-1: none): the meanings CTL_BUDGET gives errnos, else the pools'.
 * Returns the exit code.
 */
static int budget_error(int err, const char *what, int id, int pool)
{
	switch (-err) {
	case ENOTTY:
		err_msg("%s: this kvpool module has no chunk budgets (kvpool ABI 4; load a newer kvpool.ko)",
			what);
		return EXIT_FAIL;
	case ENODATA:
		err_msg("%s: no such budget: %d (kvpoolctl budget show lists them)",
			what, id);
		return EXIT_FAIL;
	case EBUSY:
		err_msg("%s: budget %d has pools on it (destroyed ones still open count too); destroy them first (kvpoolctl status shows each pool's budget)",
			what, id);
		return EXIT_BUSY;
	}
	return pool_error(err, what, pool);
}

/* A byte count option's value into *@v; false (and said) if none. */
static bool parse_bytes_opt(const char *name, const char *arg,
			    unsigned long long *v)
{
	int ret = parse_scaled(arg, ULLONG_MAX, v);

	if (ret == NUM_OK)
		return true;
	bad_number(name, arg, ret, ULLONG_MAX);
	return false;
}

static int budget_create(int argc, char **argv)
{
	enum { OPT_CHUNKS = 256, OPT_CHUNK_BYTES };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "chunks", required_argument, NULL, OPT_CHUNKS },
		{ "chunk-bytes", required_argument, NULL, OPT_CHUNK_BYTES },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long bytes = 0;
	unsigned int chunks = 0, id, seen = 0;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_budget, stdout);
		case OPT_CHUNKS:
			if (!parse_count_opt("chunks", optarg, &chunks))
				return EXIT_USAGE;
			break;
		case OPT_CHUNK_BYTES:
			if (!parse_bytes_opt("chunk-bytes", optarg, &bytes))
				return EXIT_USAGE;
			break;
		default:
			return usage_of(usage_budget, stderr);
		}
		seen |= 1U << (c - OPT_CHUNKS);
	}
	if (optind != argc || seen != 0x3) {
		err_msg("budget create needs --chunks and --chunk-bytes");
		return usage_of(usage_budget, stderr);
	}

	ret = kvpool_budget_create(KVPOOL_ARENA_HOST, chunks, bytes, &id);
	if (ret == -ENOENT && !module_loaded())
		return not_loaded();
	switch (-ret) {
	case 0:
		printf("%u\n", id);
		return EXIT_OK;
	case EINVAL:
		err_msg("budget create: the kernel refused --chunks %u --chunk-bytes %llu",
			chunks, bytes);
		fprintf(stderr, "rules: --chunks 1..%u; --chunk-bytes a multiple of the CPU page (%ld bytes), at most 1G\n",
			KVPOOL_BUDGET_MAX_CHUNKS, sysconf(_SC_PAGESIZE));
		return EXIT_FAIL;
	case ENOMEM:
		err_msg("budget create: %u chunks of %llu bytes are not there, or are more than half of the machine's memory (the kernel's limit)",
			chunks, bytes);
		return EXIT_FAIL;
	case ENOSPC:
		err_msg("budget create: no free budget id (the module allows %d budgets)",
			BUDGET_IDS);
		return EXIT_FAIL;
	}
	return budget_error(ret, "budget create", -1, -1);
}

/* A budget's id on the command line: digits only, as POOL ("1k" is none). */
bool parse_budget(const char *s, unsigned int *id)
{
	return *s && !s[strspn(s, "0123456789")] &&
	       parse_u32(s, id) == NUM_OK && *id <= INT_MAX;
}

/* One ID argument, into *@id: an exit code, or -1 to go on. */
static int parse_budget_id(const char *s, unsigned int *id)
{
	if (!parse_budget(s, id)) {
		err_msg("not a budget id: '%s' (want a number, kvpoolctl budget show lists them)",
			s);
		return EXIT_USAGE;
	}
	return -1;
}

static int budget_destroy(int argc, char **argv)
{
	unsigned int id;
	int ret;

	if (argc == 2 && (!strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "--help")))
		return usage_of(usage_budget, stdout);
	if (argc != 2 || argv[1][0] == '-')
		return usage_of(usage_budget, stderr);
	ret = parse_budget_id(argv[1], &id);
	if (ret >= 0)
		return ret;
	ret = kvpool_budget_destroy(id);
	if (ret)
		return budget_error(ret, "budget destroy", (int)id, -1);
	return EXIT_OK;
}

/*
 * Pool @pool's budget, from its sysfs attribute: its id, or -1 for none
 * (the file says -1), -2 where the module has no such file.
 */
static long long pool_budget(unsigned int pool)
{
	char path[96], buf[32];
	long long v = -2;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/budget",
		 pool);
	f = fopen(path, "re");
	if (!f)
		return -2;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	fclose(f);
	return v;
}

static int budget_limits(int argc, char **argv)
{
	enum { OPT_MIN = 256, OPT_MAX };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "min", required_argument, NULL, OPT_MIN },
		{ "max", required_argument, NULL, OPT_MAX },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long min = 0, max = 0;
	unsigned int id, pool;
	long long on;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_budget, stdout);
		case OPT_MIN:
			if (!parse_bytes_opt("min", optarg, &min))
				return EXIT_USAGE;
			break;
		case OPT_MAX:
			if (!parse_bytes_opt("max", optarg, &max))
				return EXIT_USAGE;
			break;
		default:
			return usage_of(usage_budget, stderr);
		}
	}
	if (argc - optind != 2) {
		err_msg("budget limits needs ID and POOL");
		return usage_of(usage_budget, stderr);
	}
	ret = parse_budget_id(argv[optind], &id);
	if (ret >= 0)
		return ret;
	if (!parse_pool(argv[optind + 1], &pool))
		return bad_pool(argv[optind + 1]);

	ret = kvpool_budget_limits(id, pool, min, max);
	if (ret == -EINVAL) {
		/* Which rule: the pool's budget tells them apart. */
		on = pool_budget(pool);
		if (on != -2 && on != (long long)id)
			err_msg("budget limits: pool %u is not on budget %u (%s)",
				pool, id, on < 0 ? "it is on none" :
				"kvpoolctl status shows its budget");
		else
			err_msg("budget limits: the kernel refused --min %llu --max %llu (rule: --max 0, or at least --min)",
				min, max);
		return EXIT_FAIL;
	}
	if (ret == -ENOSPC) {
		err_msg("budget limits: the floors of budget %u's pools together would pass its chunks (kvpoolctl budget show %u)",
			id, id);
		return EXIT_FAIL;
	}
	if (ret)
		return budget_error(ret, "budget limits", (int)id, (int)pool);
	return EXIT_OK;
}

/* ---- show ---- */

enum {
	BC_ID, BC_KIND, BC_CHUNKS, BC_CHUNK_BYTES, BC_FREE, BC_POOLS,
	BC_MOVES, BC_CLEARED, BC_CLEAR_NS, BC_RATE, BC_NR
};

static const struct colspec budget_cols[BC_NR] = {
	[BC_ID]		 = { "ID", "budget_id", false, true, false, 0, NULL },
	[BC_KIND]	 = { "KIND", "kind", true, true, false, 0, NULL },
	[BC_CHUNKS]	 = { "TOTAL", "nr_chunks", false, true, false, 0,
			     "chunks" },
	[BC_CHUNK_BYTES] = { "BYTES", "chunk_bytes", false, true, false, 0,
			     "chunks" },
	[BC_FREE]	 = { "FREE", "free_chunks", false, true, false, 0,
			     "chunks" },
	[BC_POOLS]	 = { "POOLS", "nr_pools", false, true, false, 0, NULL },
	/* Chunks that changed pools, and what clearing them cost. */
	[BC_MOVES]	 = { "MOVES", "moves", false, true, false, 0, "moved" },
	[BC_CLEARED]	 = { "CLEARED", "cleared_bytes", false, true, false,
			     0, "moved" },
	[BC_CLEAR_NS]	 = { "NS", "clear_ns", false, false, false, 0,
			     "moved" },
	[BC_RATE]	 = { "BYTES/S", "clear_bytes_per_sec", false, true,
			     false, 0, "moved" },
};

static void budget_cells(unsigned int id, const struct kvpool_ctl_budget *b,
			 struct cell *x)
{
	x[BC_ID] = (struct cell){ CK_NUM, id, NULL };
	x[BC_KIND] = (struct cell){ CK_STR, 0, arena_kind(b->kind) };
	x[BC_CHUNKS] = (struct cell){ CK_NUM, b->nr_chunks, NULL };
	x[BC_CHUNK_BYTES] = (struct cell){ CK_NUM, b->chunk_bytes, NULL };
	x[BC_FREE] = (struct cell){ CK_NUM, b->out_free_chunks, NULL };
	x[BC_POOLS] = (struct cell){ CK_NUM, b->out_nr_pools, NULL };
	x[BC_MOVES] = (struct cell){ CK_NUM, b->out_moves, NULL };
	x[BC_CLEARED] = (struct cell){ CK_NUM, b->out_cleared_bytes, NULL };
	x[BC_CLEAR_NS] = (struct cell){ CK_NUM, b->out_clear_ns, NULL };
	/* Nothing cleared yet: no rate to tell (null, "-"). */
	if (b->out_clear_ns)
		x[BC_RATE] = (struct cell){ CK_NUM,
			(unsigned long long)((long double)b->out_cleared_bytes *
					     1e9L / b->out_clear_ns), NULL };
	else
		x[BC_RATE] = (struct cell){ CK_NULL, 0, NULL };
	/* arena_kind()'s buffer is static: only "host" is made today. */
}

static int budget_show(int argc, char **argv)
{
	struct kvpool_ctl_budget b[BUDGET_IDS];
	unsigned int ids[BUDGET_IDS], id = 0, first, last, i;
	struct cell cells[BUDGET_IDS * BC_NR];
	size_t nr = 0, j;
	struct outfmt o;
	bool one, done;
	int ret;

	ret = parse_table_opts(argc, argv, usage_budget, &o, &done);
	if (done)
		return ret;
	if (o.units) {
		err_msg("budget show: --units is for pages; a budget counts chunks and bytes");
		return EXIT_USAGE;
	}
	if (argc - optind > 1)
		return usage_of(usage_budget, stderr);
	one = optind < argc;
	if (one) {
		ret = parse_budget_id(argv[optind], &id);
		if (ret >= 0)
			return ret;
	}
	ret = select_columns(&o, budget_cols, BC_NR);
	if (ret)
		return ret;
	if (!module_loaded())
		return not_loaded();

	first = one ? id : 0;
	last = one ? id : BUDGET_IDS - 1;
	for (i = first; i <= last; i++) {
		ret = kvpool_budget_info(i, &b[nr]);
		/* Not there: skipped in the list, an error for one ID. */
		if (ret == -ENODATA && !one)
			continue;
		if (ret)
			return budget_error(ret, "budget show", (int)i, -1);
		ids[nr++] = i;
	}
	for (j = 0; j < nr; j++)
		budget_cells(ids[j], &b[j], &cells[j * BC_NR]);
	if (o.json) {
		printf("{\n  \"budgets\": [");
		for (j = 0; j < nr; j++) {
			printf("%s\n    ", j ? "," : "");
			put_json_object(budget_cols, BC_NR, &cells[j * BC_NR],
					4);
		}
		printf("%s]\n}\n", nr ? "\n  " : "");
	} else if (nr || o.csv) {
		put_table(budget_cols, BC_NR, cells, nr, &o, 0);
	} else {
		printf("no budgets (kvpoolctl budget create --help)\n");
	}
	return EXIT_OK;
}

int cmd_budget(int argc, char **argv)
{
	static const struct subcommand sub[] = {
		{ "create", budget_create }, { "destroy", budget_destroy },
		{ "limits", budget_limits }, { "show", budget_show },
	};

	return run_subcommand(argc, argv, usage_budget, sub, ARRAY_SIZE(sub));
}
