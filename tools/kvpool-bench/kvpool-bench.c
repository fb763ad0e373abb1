// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench: kvpool's own benchmark. The same op sequences on four
 * sides in one process, interleaved round by round so that the
 * machine's noise (frequency, caches, other tenants) hits every side
 * alike:
 *
 *   core    the driver's core linked in (side-core.c)
 *   kernel  libkvpool on /dev/kvpoolN, a pool made per workload
 *           (--create; side-kernel.c)
 *   null    the cheapest ioctl into the driver, answered ENOTTY: what a
 *           syscall into kvpool costs before any work
 *   floor   a plain LIFO array of free page ids (side-floor.c)
 *
 * Every figure is the median, min and max over --rounds rounds; every
 * kernel figure is also given as a ratio to the core and to the core
 * plus one null per ioctl the op makes, every core figure as a ratio to
 * the floor. workloads.c has the workloads; README.md the output.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct kb_opts kb_opt = {
	.workloads = "all",
	.rounds = 7,
	.scale_max = 16U << 20,
	.seed = 1,
	.target_ms = 10,
	.procs_s = 2,
	.iso_s = 3,
};

bool kb_present[KB_NR_SIDES];
const char *kb_side_names[KB_NR_SIDES] = { "core", "kernel", "null", "floor" };
static const struct kb_side *const sides[KB_NR_SIDES] = {
	[KB_CORE] = &kb_core_side,
	[KB_KERNEL] = &kb_kernel_side,
	[KB_FLOOR] = &kb_floor_side,
};

struct result {
	char workload[24];
	char params[96];
	char side[8];
	char unit[16];
	double median, min, max, p99, p999;
	u32 n;
};

struct ratio {
	char workload[24];
	char params[96];
	char name[40];
	double value;
};

static struct result *results;
static u32 nr_results, results_cap;
static struct ratio *ratios;
static u32 nr_ratios, ratios_cap;
static char **notes;
static u32 nr_notes;
static int saved_argc;
static char **saved_argv;

u64 kb_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

void kb_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("kvpool-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_SETUP);
}

int kb_must(int ret, const struct kb_side *s, const char *op)
{
	if (ret < 0)
		kb_die("%s: %s: %s", s->name, op, strerror(-ret));
	return ret;
}

/* A line for the table and for the JSON's "notes". */
void kb_note(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("%s\n", buf);
	fflush(stdout);
	notes = xrealloc(notes, nr_notes + 1, sizeof(*notes));
	notes[nr_notes++] = strdup(buf);
}

bool kb_want(const char *workload)
{
	const char *p = kb_opt.workloads;
	size_t n = strlen(workload);

	if (!strcmp(p, "all"))
		return true;
	while (*p) {
		size_t k = strcspn(p, ",");

		if (k == n && !strncmp(p, workload, n))
			return true;
		p += k + !!p[k];
	}
	return false;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @v. */
double kb_median(double *v, u32 n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct result *add_result(const char *workload, const char *params,
				 const char *side, const char *unit)
{
	struct result *r;

	if (nr_results == results_cap) {
		results_cap = results_cap ? results_cap * 2 : 64;
		results = xrealloc(results, results_cap, sizeof(*results));
	}
	r = &results[nr_results++];
	memset(r, 0, sizeof(*r));
	snprintf(r->workload, sizeof(r->workload), "%s", workload);
	snprintf(r->params, sizeof(r->params), "%s", params);
	snprintf(r->side, sizeof(r->side), "%s", side);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->p99 = NAN;
	r->p999 = NAN;
	return r;
}

static void print_line(const struct result *r, const struct result *r2)
{
	printf("%-16s %-38s %-6s %11.3f %-11s (%.3f..%.3f, n=%u)",
	       r->workload, r->params, r->side, r->median, r->unit, r->min,
	       r->max, r->n);
	if (!isnan(r->p99))
		printf(" p99 %.3f", r->p99);
	if (!isnan(r->p999))
		printf(" p999 %.3f", r->p999);
	if (r2)
		printf("  %10.2f %s", r2->median, r2->unit);
	printf("\n");
	fflush(stdout);
}

void kb_record(const char *workload, const char *params, const char *side,
	       const char *unit, const double *v, u32 n, double div,
	       const char *unit2, double div2)
{
	struct result *r, *r2 = NULL;
	double *s = xcalloc(n ? n : 1, sizeof(*s));
	double med;
	u32 i;

	memcpy(s, v, n * sizeof(*s));
	med = kb_median(s, n);
	r = add_result(workload, params, side, unit);
	r->median = med / div;
	r->min = n ? s[0] / div : NAN;
	r->max = n ? s[n - 1] / div : NAN;
	r->n = n;
	if (unit2) {
		i = nr_results - 1;
		r2 = add_result(workload, params, side, unit2);
		r = &results[i];	/* add_result() may have moved it */
		r2->median = med / div2;
		r2->min = n ? s[0] / div2 : NAN;
		r2->max = n ? s[n - 1] / div2 : NAN;
		r2->n = n;
	}
	free(s);
	print_line(r, r2);
}

void kb_record_tail(const char *workload, const char *params,
		    const char *side, const char *unit, double median,
		    double min, double max, double p99, double p999, u32 n)
{
	struct result *r = add_result(workload, params, side, unit);

	r->median = median;
	r->min = min;
	r->max = max;
	r->p99 = p99;
	r->p999 = p999;
	r->n = n;
	print_line(r, NULL);
}

void kb_record_p99(const char *workload, const char *params,
		   const char *side, const char *unit, double median,
		   double min, double max, double p99, u32 n)
{
	kb_record_tail(workload, params, side, unit, median, min, max, p99,
		       NAN, n);
}

void kb_ratio(const char *workload, const char *params, const char *name,
	      double value)
{
	struct ratio *r;

	if (isnan(value))
		return;
	if (nr_ratios == ratios_cap) {
		ratios_cap = ratios_cap ? ratios_cap * 2 : 64;
		ratios = xrealloc(ratios, ratios_cap, sizeof(*ratios));
	}
	r = &ratios[nr_ratios++];
	snprintf(r->workload, sizeof(r->workload), "%s", workload);
	snprintf(r->params, sizeof(r->params), "%s", params);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->value = value;
}

double kb_median_of(const char *workload, const char *params,
		    const char *side, const char *unit)
{
	u32 i;

	for (i = 0; i < nr_results; i++) {
		const struct result *r = &results[i];

		if (!strcmp(r->workload, workload) &&
		    !strcmp(r->params, params) && !strcmp(r->side, side) &&
		    !strcmp(r->unit, unit))
			return r->median;
	}
	return NAN;
}

void kb_case_alloc(struct kb_case *c, u32 rows, u32 pages_cap)
{
	c->h = xcalloc(rows, sizeof(*c->h));
	c->e = xcalloc(rows, sizeof(*c->e));
	c->l = xcalloc(rows, sizeof(*c->l));
	c->lens = xcalloc(rows, sizeof(*c->lens));
	c->pages = xcalloc(pages_cap, sizeof(*c->pages));
	c->pages_cap = pages_cap;
}

static void case_free(struct kb_case *c)
{
	free(c->h);
	free(c->e);
	free(c->l);
	free(c->lens);
	free(c->pages);
}

/* Nanoseconds one round should take (the slowest side's). */
static double target_ns(void)
{
	return kb_opt.target_ms * 1e6;
}

static u32 clamp_reps(double want, u32 lo, u32 hi)
{
	if (!(want >= lo))
		return lo;
	return want > hi ? hi : (u32)want;
}

static void case_ratios(struct kb_case *c, const struct kb_fig *f,
			const double *med)
{
	double k = med[KB_KERNEL], co = med[KB_CORE];

	if (kb_present[KB_KERNEL]) {
		kb_ratio(f->workload, c->params, "kernel/core", k / co);
		if (f->nioctl) {
			char name[40];

			snprintf(name, sizeof(name), "kernel/(%ux null + core)",
				 f->nioctl);
			kb_ratio(f->workload, c->params, name,
				 k / (f->nioctl * med[KB_NULL] + co));
		}
		if (f->vs_null)
			kb_ratio(f->workload, c->params, "kernel/null",
				 k / med[KB_NULL]);
	}
	if (f->vs_null)
		kb_ratio(f->workload, c->params, "core/null", co / med[KB_NULL]);
	kb_ratio(f->workload, c->params, "core/floor", co / med[KB_FLOOR]);
}

void kb_run_case(struct kb_case *c)
{
	u32 R = kb_opt.rounds, reps, nnull = 0, r, i, k;
	double worst = 0, ns[KB_MAX_FIGS];
	int fd = -1;

	for (i = 0; i < KB_NR_SIDES; i++) {
		if (!sides[i] || !kb_present[i])
			continue;
		if (sides[i]->setup(&c->geom))
			kb_die("%s: no pool for %s", sides[i]->name, c->params);
		if (c->prepare)
			c->prepare(c, sides[i]);
	}
	/* An untimed round each, which also sizes the rounds. */
	for (i = 0; i < KB_NR_SIDES; i++) {
		if (!sides[i] || !kb_present[i])
			continue;
		c->round(c, sides[i], c->reps_min, ns);
		if (ns[0] > worst)
			worst = ns[0];
	}
	reps = clamp_reps(target_ns() / worst, c->reps_min, c->reps_max);
	if (kb_present[KB_NULL]) {
		fd = kb_kernel_fd();
		nnull = clamp_reps(target_ns() / 4 /
				   ((double)kb_null_round(fd, 1000) / 1000),
				   100, 1000000);
	}
	for (r = 0; r < R; r++) {
		for (i = 0; i < KB_NR_SIDES; i++) {
			if (!kb_present[i])
				continue;
			if (i == KB_NULL) {
				ns[0] = (double)kb_null_round(fd, nnull) / nnull;
				ns[1] = ns[0];
			} else {
				c->round(c, sides[i], reps, ns);
			}
			for (k = 0; k < KB_MAX_FIGS; k++)
				c->fig[k].ns[i][r] = ns[k];
		}
	}
	for (i = 0; i < KB_NR_SIDES; i++)
		if (sides[i] && kb_present[i])
			sides[i]->teardown();

	for (k = 0; k < KB_MAX_FIGS; k++) {
		struct kb_fig *f = &c->fig[k];
		double med[KB_NR_SIDES] = { NAN, NAN, NAN, NAN };

		if (!f->workload)
			continue;
		for (i = 0; i < KB_NR_SIDES; i++) {
			double s[KB_MAX_ROUNDS];

			if (!kb_present[i])
				continue;
			if (i == KB_NULL)
				kb_record(f->workload, c->params, "null",
					  "us/ioctl", f->ns[i], R, 1000, NULL,
					  0);
			else
				kb_record(f->workload, c->params,
					  kb_side_names[i], f->unit, f->ns[i],
					  R, f->div, f->unit2, f->div2);
			memcpy(s, f->ns[i], R * sizeof(*s));
			med[i] = kb_median(s, R);
		}
		case_ratios(c, f, med);
	}
	case_free(c);
}

/* ---- JSON ---------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

/* "B=8 pt=16 state=fresh" as {"B": 8, "pt": 16, "state": "fresh"}. */
static void json_params(FILE *f, const char *p)
{
	bool first = true;

	fputc('{', f);
	while (*p) {
		char key[32], val[64], *end;
		size_t k = strcspn(p, " ");
		const char *eq = memchr(p, '=', k);

		if (eq && (size_t)(eq - p) < sizeof(key) &&
		    k - (eq - p) - 1 < sizeof(val)) {
			memcpy(key, p, eq - p);
			key[eq - p] = 0;
			memcpy(val, eq + 1, k - (eq - p) - 1);
			val[k - (eq - p) - 1] = 0;
			fputs(first ? "" : ", ", f);
			first = false;
			json_str(f, key);
			fputs(": ", f);
			strtod(val, &end);
			if (*val && !*end)
				fputs(val, f);
			else
				json_str(f, val);
		}
		p += k;
		while (*p == ' ')
			p++;
	}
	fputc('}', f);
}

static void json_key_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, ", \"%s\": ", key);
	json_str(f, v);
}

static void json_key_num(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": ", key);
	json_num(f, v);
}

/* The @i-th entry of a list, up to its workload and params. */
static void json_head(FILE *f, u32 i, const char *workload,
		      const char *params)
{
	fputs(i ? ",\n    {\"workload\": " : "\n    {\"workload\": ", f);
	json_str(f, workload);
	fputs(", \"params\": ", f);
	json_params(f, params);
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !c)
			continue;
		c += 1 + (c[1] == ' ');
		c[strcspn(c, "\n")] = 0;
		snprintf(buf, len, "%s", c);
		break;
	}
	fclose(f);
}

static void write_json(const char *path)
{
	struct utsname u;
	char cpu[128], un[400];
	FILE *f = fopen(path, "w");
	u32 i;
	int a;

	if (!f)
		kb_die("%s: %s", path, strerror(errno));
	uname(&u);
	snprintf(un, sizeof(un), "%s %s %s %s", u.sysname, u.nodename,
		 u.release, u.machine);
	cpu_model(cpu, sizeof(cpu));
	fputs("{\n  \"version\": ", f);
	json_str(f, kvpool_version());
	fputs(",\n  \"host\": {\"uname\": ", f);
	json_str(f, un);
	fputs(", \"cpu\": ", f);
	json_str(f, cpu);
	fprintf(f, ", \"nproc\": %ld},\n  \"args\": [", sysconf(_SC_NPROCESSORS_ONLN));
	for (a = 1; a < saved_argc; a++) {
		fputs(a > 1 ? ", " : "", f);
		json_str(f, saved_argv[a]);
	}
	fputs("],\n  \"notes\": [", f);
	for (i = 0; i < nr_notes; i++) {
		fputs(i ? ",\n    " : "\n    ", f);
		json_str(f, notes[i]);
	}
	fputs("],\n  \"results\": [", f);
	for (i = 0; i < nr_results; i++) {
		const struct result *r = &results[i];

		json_head(f, i, r->workload, r->params);
		json_key_str(f, "side", r->side);
		json_key_str(f, "unit", r->unit);
		json_key_num(f, "median", r->median);
		json_key_num(f, "min", r->min);
		json_key_num(f, "max", r->max);
		if (!isnan(r->p99))
			json_key_num(f, "p99", r->p99);
		if (!isnan(r->p999))
			json_key_num(f, "p999", r->p999);
		fprintf(f, ", \"n\": %u}", r->n);
	}
	fputs("\n  ],\n  \"ratios\": [", f);
	for (i = 0; i < nr_ratios; i++) {
		const struct ratio *r = &ratios[i];

		json_head(f, i, r->workload, r->params);
		json_key_str(f, "name", r->name);
		json_key_num(f, "value", r->value);
		fputc('}', f);
	}
	fputs("\n  ]\n}\n", f);
	if (fclose(f))
		kb_die("%s: %s", path, strerror(errno));
}

static void print_ratios(void)
{
	u32 i;

	if (!nr_ratios)
		return;
	printf("\nratios (of medians)\n");
	for (i = 0; i < nr_ratios; i++)
		printf("%-16s %-38s %-26s %9.3f\n", ratios[i].workload,
		       ratios[i].params, ratios[i].name, ratios[i].value);
}

/* ---- options ------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: kvpool-bench [--workload LIST] [--rounds R] [--quick] [--create]\n"
"                    [--json FILE] [--scale-max PAGES] [--target-ms MS]\n"
"                    [--procs-seconds S] [--iso-seconds S] [--seed N]\n"
"       kvpool-bench --count-only WORKLOAD --iters N\n"
"       kvpool-bench agent --gpu BDF [OPTIONS] (kvpool-bench agent --help)\n"
"\n"
"Workloads (comma list, default all): decode release release-256x128\n"
"prefill slot extend1 scale drift procs isolation mem.\n"
"\n"
"  --rounds R         rounds per figure, default 7 (--quick: 3)\n"
"  --quick            3 rounds, 1 ms rounds, small pools (make check)\n"
"  --create           kernel side: make a pool per workload through\n"
"                     /dev/kvpool-control (root); without it the kernel,\n"
"                     null, procs, isolation and mem figures are skipped\n"
"  --json FILE        write the figures as JSON (README.md)\n"
"  --scale-max PAGES  largest scale pool (k, M suffixes), default 16M\n"
"  --target-ms MS     length of the slowest side's round, default 10\n"
"  --procs-seconds S  procs: each run's length, default 2\n"
"  --iso-seconds S    isolation: each case's length, default 3\n"
"  --count-only W     W's op on the core side --iters times, no timing:\n"
"                     for callgrind (decode, release-256x128, extend1,\n"
"                     prefill)\n");
}

static u32 parse_pages(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || !v || v > KB_MAX_PAGES)
		kb_die("--scale-max: bad size '%s'", s);
	return (u32)v;
}

int main(int argc, char **argv)
{
	enum { O_WL = 256, O_ROUNDS, O_QUICK, O_CREATE, O_JSON, O_SMAX,
	       O_COUNT, O_ITERS, O_SEED, O_TARGET, O_PROCS, O_ISO, O_HELP,
	       O_VERSION };
	static const struct option lo[] = {
		{ "workload", required_argument, NULL, O_WL },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "create", no_argument, NULL, O_CREATE },
		{ "json", required_argument, NULL, O_JSON },
		{ "scale-max", required_argument, NULL, O_SMAX },
		{ "count-only", required_argument, NULL, O_COUNT },
		{ "iters", required_argument, NULL, O_ITERS },
		{ "seed", required_argument, NULL, O_SEED },
		{ "target-ms", required_argument, NULL, O_TARGET },
		{ "procs-seconds", required_argument, NULL, O_PROCS },
		{ "iso-seconds", required_argument, NULL, O_ISO },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	bool rounds_set = false, smax_set = false, iso_set = false;
	const char *why = "";
	int o;

	/* A mode of its own: CUDA arenas through the GPU agent (agent.c). */
	if (argc > 1 && !strcmp(argv[1], "agent"))
		return agent_main(argc - 1, argv + 1);
	saved_argc = argc;
	saved_argv = argv;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case O_WL:
			kb_opt.workloads = optarg;
			break;
		case O_ROUNDS:
			kb_opt.rounds = (u32)strtoul(optarg, NULL, 10);
			if (!kb_opt.rounds || kb_opt.rounds > KB_MAX_ROUNDS) {
				fprintf(stderr, "kvpool-bench: --rounds: 1..%u\n",
					KB_MAX_ROUNDS);
				return EXIT_USAGE;
			}
			rounds_set = true;
			break;
		case O_QUICK:
			kb_opt.quick = true;
			break;
		case O_CREATE:
			kb_opt.create = true;
			break;
		case O_JSON:
			kb_opt.json = optarg;
			break;
		case O_SMAX:
			kb_opt.scale_max = parse_pages(optarg);
			smax_set = true;
			break;
		case O_COUNT:
			kb_opt.count_only = optarg;
			break;
		case O_ITERS:
			kb_opt.iters = (u32)strtoul(optarg, NULL, 10);
			break;
		case O_SEED:
			kb_opt.seed = strtoull(optarg, NULL, 0);
			break;
		case O_TARGET:
			kb_opt.target_ms = strtod(optarg, NULL);
			break;
		case O_PROCS:
			kb_opt.procs_s = strtod(optarg, NULL);
			break;
		case O_ISO:
			kb_opt.iso_s = strtod(optarg, NULL);
			if (!(kb_opt.iso_s > 0)) {
				fprintf(stderr, "kvpool-bench: --iso-seconds: above 0\n");
				return EXIT_USAGE;
			}
			iso_set = true;
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		case O_VERSION:
			printf("kvpool-bench %s (kvpool ABI %d)\n",
			       kvpool_version(), KVPOOL_ABI_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (kb_opt.count_only)
		return kb_count_only(kb_opt.count_only, kb_opt.iters);
	if (kb_opt.quick) {
		if (!rounds_set)
			kb_opt.rounds = 3;
		if (!smax_set)
			kb_opt.scale_max = 1U << 20;
		kb_opt.target_ms = 1;
		kb_opt.procs_s = 0.2;
		if (!iso_set)
			kb_opt.iso_s = 0.3;
	}

	kb_present[KB_CORE] = true;
	kb_present[KB_FLOOR] = true;
	kb_present[KB_KERNEL] = kb_kernel_probe(kb_opt.create, &why);
	kb_present[KB_NULL] = kb_present[KB_KERNEL];
	printf("kvpool-bench %s: %u rounds%s, rounds of ~%g ms\n",
	       kvpool_version(), kb_opt.rounds, kb_opt.quick ? " (quick)" : "",
	       kb_opt.target_ms);
	if (!kb_present[KB_KERNEL])
		kb_note("kernel: %s", why);
	printf("%-16s %-38s %-6s %11s %-11s\n", "workload", "params", "side",
	       "median", "unit");
	kb_workloads();
	print_ratios();
	if (kb_opt.json)
		write_json(kb_opt.json);
	return 0;
}
