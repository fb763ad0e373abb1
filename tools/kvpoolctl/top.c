// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl top: status and clients, redrawn, with rates.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "text.h"
#include "kvpoolctl.h"

const char usage_top[] =
"top [-d SECS] [-n COUNT] [POOL]\n"
"    A live view of every pool (or POOL), its tenants and its clients,\n"
"    redrawn every SECS seconds (default 2): pages, rows, cache, pressure\n"
"    (asks, watermarks) and, from the second screen on, rates per second\n"
"    from one sample to the next. q quits. What a user may see of\n"
"    tenants and clients is what status and clients show them.\n"
"    -d SECS      seconds between screens, 0.1..3600\n"
"    -n COUNT     stop after COUNT screens (default: until q), leaving\n"
"                 the last on the screen (else top ends its own screen)\n";

/* The previous sample, for rates: one figure per key. */
struct top_sample {
	unsigned long long key;	/* kind << 56 | pool << 32 | id */
	unsigned long long v;
};

struct top_state {
	struct top_sample *prev, *cur;
	size_t nr_prev, nr_cur, alloc;
	double dt;		/* seconds since the previous sample; 0: none */
};

enum {
	TK_POOL_USED = 1, TK_POOL_HELD, TK_TENANT_PAGES, TK_TENANT_ROWS,
	TK_CLIENT_PAGES, TK_CLIENT_ROWS
};

static unsigned long long top_key(unsigned int kind, unsigned int pool,
				  unsigned int id)
{
	return (unsigned long long)kind << 56 |
	       (unsigned long long)(pool & 0xffffff) << 32 | id;
}

/*
 * Record @v under @key for the next screen, and write its rate since the
 * last one into @buf ("" on the first screen, or for a new key).
 */
static const char *top_rate(struct top_state *ts, unsigned long long key,
			    unsigned long long v, char *buf, size_t len)
{
	struct top_sample *n;
	size_t i;

	buf[0] = '\0';
	if (ts->nr_cur == ts->alloc) {
		size_t a = ts->alloc ? 2 * ts->alloc : 64;

		n = realloc(ts->cur, a * sizeof(*n));
		if (!n)
			return buf;
		ts->cur = n;
		ts->alloc = a;
	}
	ts->cur[ts->nr_cur++] = (struct top_sample){ key, v };
	if (ts->dt <= 0)
		return buf;
	for (i = 0; i < ts->nr_prev; i++) {
		if (ts->prev[i].key != key)
			continue;
		snprintf(buf, len, "%+.1f",
			 ((double)v - (double)ts->prev[i].v) / ts->dt);
		break;
	}
	return buf;
}

#define TOP_CELLS	16
#define TOP_TEXT	32

/* One screen's table: cells and their text, at most TOP_CELLS a row. */
struct top_table {
	struct cell *cells;
	char (*text)[TOP_TEXT];
	size_t nr, alloc;
};

static struct cell *top_row(struct top_table *t)
{
	if (t->nr == t->alloc) {
		size_t a = t->alloc ? 2 * t->alloc : 16;
		struct cell *c = realloc(t->cells, a * TOP_CELLS * sizeof(*c));
		char (*x)[TOP_TEXT];

		if (!c)
			return NULL;
		t->cells = c;
		x = realloc(t->text, a * TOP_CELLS * sizeof(*x));
		if (!x)
			return NULL;
		t->text = x;
		t->alloc = a;
	}
	memset(&t->cells[t->nr * TOP_CELLS], 0, TOP_CELLS * sizeof(*t->cells));
	return &t->cells[t->nr++ * TOP_CELLS];
}

/* A text cell of row @row's column @col: its buffer, for snprintf(). */
static char *top_text(struct top_table *t, struct cell *row, size_t col)
{
	size_t i = (size_t)(row - t->cells) + col;

	/* The text array moves as rows are added: top_put() points it. */
	row[col] = (struct cell){ CK_STR, i, NULL };
	return t->text[i];
}

/*
 * The cells the screen has across; 0: not a terminal, nothing is cut.
 * Tables are fitted to it (output.c: names cut, then folded).
 */
static int top_cols;

static void top_put(FILE *f, struct top_table *t, const struct colspec *cols,
		    size_t ncols, int keys)
{
	/* A fold repeats @keys columns: a tenant is its pool's and id. */
	struct outfmt o = { .width = top_cols, .keys = keys };
	size_t i;

	for (i = 0; i < ncols; i++)
		o.sel[o.nsel++] = (int)i;
	for (i = 0; i < t->nr * TOP_CELLS; i++)
		if (t->cells[i].kind == CK_STR && !t->cells[i].str)
			t->cells[i].str = t->text[t->cells[i].num];
	/* Rows of TOP_CELLS cells: put_table() wants ncols a row. */
	if (ncols != TOP_CELLS) {
		for (i = 1; i < t->nr; i++)
			memmove(&t->cells[i * ncols], &t->cells[i * TOP_CELLS],
				ncols * sizeof(*t->cells));
	}
	put_table_to(f, cols, ncols, t->cells, t->nr, &o, 0);
	t->nr = 0;
}

static const struct colspec top_pool_cols[] = {
	{ "POOL", "pool", false, true, false, 0, NULL },
	{ "PAGES", "pages", false, true, false, 0, NULL },
	{ "USED", "used", false, true, false, 0, NULL },
	{ "USED/s", "used_rate", false, true, false, 0, NULL },
	{ "FREE", "free", false, true, false, 0, NULL },
	{ "CACHE", "cache", false, true, false, 0, NULL },
	{ "QUAR", "quarantine", false, true, false, 0, NULL },
	{ "ROWS", "rows", false, true, false, 0, NULL },
	{ "HELD", "held", false, true, false, 0, NULL },
	{ "HELD/s", "held_rate", false, true, false, 0, NULL },
	{ "WMARK", "wmark", false, true, false, 0, NULL },
	{ "ASKED", "asked", false, true, false, 0, NULL },
	{ "TENANTS", "tenants", false, true, false, 0, NULL },
	{ "CLIENTS", "clients", false, true, false, 0, NULL },
};

/*
 * The figures before the names, which a narrow screen cuts (as
 * systemd-cgtop does): a long cgroup path takes no figure off the line.
 */
enum {
	TT_POOL, TT_TENANT, TT_UID, TT_PAGES, TT_PAGES_RATE, TT_CACHE,
	TT_ROWS, TT_ROWS_RATE, TT_CLIENTS, TT_MAX, TT_ASK, TT_LABEL,
	TT_CGROUP, TT_NR
};

static const struct colspec top_tenant_cols[TT_NR] = {
	[TT_POOL] = { "POOL", "pool", false, true, false, 0, NULL },
	[TT_TENANT] = { "TENANT", "tenant", false, true, false, 0, NULL },
	[TT_UID] = { "UID", "uid", false, true, false, 0, NULL },
	[TT_PAGES] = { "PAGES", "pages", false, true, false, 0, NULL },
	[TT_PAGES_RATE] = { "PAGES/s", "pages_rate", false, true, false, 0,
			    NULL },
	[TT_CACHE] = { "CACHE", "cache", false, true, false, 0, NULL },
	[TT_ROWS] = { "ROWS", "rows", false, true, false, 0, NULL },
	[TT_ROWS_RATE] = { "ROWS/s", "rows_rate", false, true, false, 0,
			   NULL },
	[TT_CLIENTS] = { "CLIENTS", "clients", false, true, false, 0, NULL },
	[TT_MAX] = { "MAX", "max", false, true, false, 0, NULL },
	[TT_ASK] = { "ASK", "ask", false, true, false, 0, NULL },
	[TT_LABEL] = { "LABEL", "label", true, true, false, 100, NULL },
	[TT_CGROUP] = { "CGROUP", "cgroup", true, true, false, 33, NULL },
};

/* Figures first here too; the command's name last. */
enum {
	TC2_POOL, TC2_CLIENT, TC2_TENANT, TC2_PID, TC2_PAGES, TC2_PAGES_RATE,
	TC2_CACHE, TC2_ROWS, TC2_ROWS_RATE, TC2_COMM, TC2_NR
};

static const struct colspec top_client_cols[TC2_NR] = {
	[TC2_POOL] = { "POOL", "pool", false, true, false, 0, NULL },
	[TC2_CLIENT] = { "CLIENT", "client", false, true, false, 0, NULL },
	[TC2_TENANT] = { "TENANT", "tenant", false, true, false, 0, NULL },
	[TC2_PID] = { "PID", "pid", false, true, false, 0, NULL },
	[TC2_PAGES] = { "PAGES", "pages", false, true, false, 0, NULL },
	[TC2_PAGES_RATE] = { "PAGES/s", "pages_rate", false, true, false, 0,
			     NULL },
	[TC2_CACHE] = { "CACHE", "cache", false, true, false, 0, NULL },
	[TC2_ROWS] = { "ROWS", "rows", false, true, false, 0, NULL },
	[TC2_ROWS_RATE] = { "ROWS/s", "rows_rate", false, true, false, 0,
			    NULL },
	[TC2_COMM] = { "COMMAND", "comm", true, true, false, 100, NULL },
};

#define NUMCELL(row, col, v)	((row)[col] = (struct cell){ CK_NUM, (v), NULL })

/* One screen of @rows and @cl into @f. */
static void top_screen(FILE *f, struct top_state *ts, const struct pool_row *rows,
		       size_t nr, const struct client_list *cl, double secs)
{
	struct top_table t = { 0 };
	struct cell *c;
	char clock[32];
	time_t now = time(NULL);
	size_t i, j;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&now));
	fprintf(f, "kvpoolctl top  %s  every %gs  q quits\n\n", clock, secs);
	for (i = 0; i < nr; i++) {
		const struct pool_row *r = &rows[i];
		unsigned long long used, ask = 0;

		c = top_row(&t);
		if (!c)
			break;
		used = (unsigned long long)r->info.out_nr_pages -
		       r->st.out_free_pages - r->st.out_reserved_pages;
		for (j = 0; j < r->nr_trows; j++)
			ask += r->trows[j].t.ask_pages;
		NUMCELL(c, 0, r->id);
		NUMCELL(c, 1, r->info.out_nr_pages);
		NUMCELL(c, 2, used);
		top_rate(ts, top_key(TK_POOL_USED, r->id, 0), used,
			 top_text(&t, c, 3), TOP_TEXT);
		NUMCELL(c, 4, r->st.out_free_pages);
		NUMCELL(c, 5, (unsigned long long)r->st.out_cache_evictable +
			r->st.out_cache_pinned);
		NUMCELL(c, 6, r->st.out_quarantine_pages);
		NUMCELL(c, 7, r->info.out_nr_rows);
		NUMCELL(c, 8, r->st.out_held_rows);
		top_rate(ts, top_key(TK_POOL_HELD, r->id, 0),
			 r->st.out_held_rows, top_text(&t, c, 9), TOP_TEXT);
		snprintf(top_text(&t, c, 10), TOP_TEXT, "%u/%u%s",
			 r->x.low_wmark, r->x.high_wmark,
			 r->x.low_wmark && r->st.out_free_pages < r->x.low_wmark ?
			 " LOW" : "");
		/* Asks are known from the tenant list only (root). */
		if (r->tenants_shown == TENANTS_ALL)
			NUMCELL(c, 11, ask);
		else
			c[11].kind = CK_NULL;
		NUMCELL(c, 12, r->x.nr_tenants);
		NUMCELL(c, 13, r->st.out_nr_clients);
	}
	top_put(f, &t, top_pool_cols, ARRAY_SIZE(top_pool_cols), 1);

	fputs("\nTENANTS\n", f);
	for (i = 0; i < nr; i++) {
		for (j = 0; j < rows[i].nr_trows; j++) {
			const struct tenant_row *tr = &rows[i].trows[j];

			c = top_row(&t);
			if (!c)
				break;
			NUMCELL(c, TT_POOL, rows[i].id);
			NUMCELL(c, TT_TENANT, tr->t.tenant_id);
			if (tr->t.flags & KVPOOL_TENANT_ANY_UID)
				snprintf(top_text(&t, c, TT_UID), TOP_TEXT, "*");
			else
				NUMCELL(c, TT_UID, tr->t.uid);
			/*
			 * The path whole, however long: the table cuts it
			 * to the screen, in characters, not bytes. It
			 * lives as long as @rows, past top_put().
			 */
			if (tr->cgroup)
				c[TT_CGROUP] = (struct cell){ CK_STR, 0,
							      tr->cgroup };
			else
				snprintf(top_text(&t, c, TT_CGROUP), TOP_TEXT,
					 "%llu",
					 (unsigned long long)tr->t.cgroup_id);
			/* Its bytes as they are: the table encodes them. */
			snprintf(top_text(&t, c, TT_LABEL), TOP_TEXT, "%.*s",
				 KVPOOL_LABEL_LEN, tr->t.label);
			NUMCELL(c, TT_PAGES, tr->t.pages);
			top_rate(ts, top_key(TK_TENANT_PAGES, rows[i].id,
					     tr->t.tenant_id), tr->t.pages,
				 top_text(&t, c, TT_PAGES_RATE), TOP_TEXT);
			NUMCELL(c, TT_CACHE, tr->t.cache_pages);
			NUMCELL(c, TT_ROWS, tr->t.rows);
			top_rate(ts, top_key(TK_TENANT_ROWS, rows[i].id,
					     tr->t.tenant_id), tr->t.rows,
				 top_text(&t, c, TT_ROWS_RATE), TOP_TEXT);
			NUMCELL(c, TT_CLIENTS, tr->t.nr_clients);
			c[TT_MAX] = (struct cell){ CK_LIMIT, tr->t.max_pages,
						   NULL };
			NUMCELL(c, TT_ASK, tr->t.ask_pages);
			if (tr->own) {
				c[TT_LABEL].kind = CK_NULL;
				c[TT_CACHE].kind = CK_NULL;
				c[TT_CLIENTS].kind = CK_NULL;
				c[TT_ASK].kind = CK_NULL;
			}
		}
	}
	if (t.nr)
		top_put(f, &t, top_tenant_cols, ARRAY_SIZE(top_tenant_cols), 2);
	else
		fputs("  none to show (all of them: as root)\n", f);

	fputs("\nCLIENTS\n", f);
	for (i = 0; i < cl->nr; i++) {
		const struct client_row *x = &cl->v[i];

		c = top_row(&t);
		if (!c)
			break;
		NUMCELL(c, TC2_POOL, x->pool);
		NUMCELL(c, TC2_CLIENT, x->client);
		NUMCELL(c, TC2_TENANT, x->tenant);
		NUMCELL(c, TC2_PID, x->pid);
		snprintf(top_text(&t, c, TC2_COMM), TOP_TEXT, "%s", x->comm);
		NUMCELL(c, TC2_PAGES, x->pages);
		top_rate(ts, top_key(TK_CLIENT_PAGES, x->pool, x->client),
			 x->pages, top_text(&t, c, TC2_PAGES_RATE), TOP_TEXT);
		NUMCELL(c, TC2_CACHE, x->cache);
		NUMCELL(c, TC2_ROWS, x->rows);
		top_rate(ts, top_key(TK_CLIENT_ROWS, x->pool, x->client),
			 x->rows, top_text(&t, c, TC2_ROWS_RATE), TOP_TEXT);
	}
	if (t.nr)
		top_put(f, &t, top_client_cols, ARRAY_SIZE(top_client_cols), 2);
	else
		fputs("  none to show\n", f);
	free(t.cells);
	free(t.text);
}

/* The terminal as it was, put back at exit. */
static struct termios top_tty;
static bool top_tty_set;

/*
 * top draws on the terminal's alternate screen (xterm's smcup, which
 * tmux, screen and the VTE terminals have too): the shell's screen comes
 * back as it was when top ends, by q, -n or a signal.
 */
#define TOP_ENTER	"\033[?1049h\033[?25l"	/* alternate screen, no cursor */
#define TOP_LEAVE	"\033[?25h\033[?1049l"	/* the cursor, the screen back */

/* 2: on the alternate screen; 1: on the shell's, the cursor hidden. */
static volatile sig_atomic_t top_on_screen;
static volatile sig_atomic_t top_resized;

/* Write @s (a literal) to the terminal, async-signal-safe. */
#define TOP_PUT(s)	(write(STDOUT_FILENO, s, sizeof(s) - 1) == sizeof(s) - 1)

/* Async-signal-safe: a signal handler calls it too. */
static void top_restore(void)
{
	if (top_tty_set)
		tcsetattr(STDIN_FILENO, TCSANOW, &top_tty);
	top_tty_set = false;
	/* A failed write leaves nothing to put back: the terminal is gone. */
	if (top_on_screen == 2 && !TOP_PUT(TOP_LEAVE))
		top_on_screen = 0;
	else if (top_on_screen == 1 && !TOP_PUT("\033[?25h"))
		top_on_screen = 0;
	top_on_screen = 0;
}

static void top_signal(int sig)
{
	(void)sig;
	top_restore();
	_exit(EXIT_OK);
}

/* A new width: the next screen comes now, fitted to it. */
static void top_winch(int sig)
{
	(void)sig;
	top_resized = 1;
}

/*
 * Write @buf to the terminal, each line cut at @cols cells so none
 * wraps (the tables fit already; this is for the rest), from the top
 * left of a cleared screen.
 */
static void top_draw(const char *buf, int cols, bool tty)
{
	const char *p = buf, *nl;

	if (tty)
		fputs("\033[H\033[2J", stdout);
	for (; *p; p = nl + 1) {
		size_t len;

		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		len = (size_t)(nl - p);
		if (cols > 0)
			len = text_fit(p, len, (size_t)cols);
		fwrite(p, 1, len, stdout);
		fputs(tty ? "\r\n" : "\n", stdout);
		if (!*nl)
			break;
	}
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

/* Wait up to @secs for a key; true if it was q (or end of input). */
static bool top_wait(double secs, bool tty)
{
	struct timespec end, now;
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char ch;
	int ms;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)secs;
	end.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (int)((end.tv_sec - now.tv_sec) * 1000 +
			   (end.tv_nsec - now.tv_nsec) / 1000000);
		if (ms <= 0)
			return false;
		/* Not a terminal: no keys; just sleep. */
		if (!tty) {
			poll(NULL, 0, ms);
			continue;
		}
		if (top_resized) {
			top_resized = 0;
			return false;
		}
		if (poll(&pfd, 1, ms) <= 0)
			continue;
		if (read(STDIN_FILENO, &ch, 1) != 1)
			return true;
		if (ch == 'q' || ch == 'Q')
			return true;
	}
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_state ts = { 0 };
	struct timespec t0, t1;
	struct winsize ws;
	struct termios raw;
	const char *pool = NULL;
	unsigned long count = 0, n;
	double secs = 2;
	bool tty;
	char *end;
	int c, ret = EXIT_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hd:n:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return usage_of(usage_top, stdout);
		case 'd':
			errno = 0;
			secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(secs >= 0.1) ||
			    secs > 3600) {
				err_msg("-d: '%s': want seconds, 0.1..3600",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno || *optarg < '1' || *optarg > '9' || *end) {
				err_msg("-n: '%s': want a count, 1 or more",
					optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			return usage_of(usage_top, stderr);
		}
	}
	if (argc - optind > 1)
		return usage_of(usage_top, stderr);
	if (optind < argc) {
		unsigned int id;

		if (!parse_pool(argv[optind], &id))
			return bad_pool(argv[optind]);
		pool = argv[optind];
	}

	tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (tty && !tcgetattr(STDIN_FILENO, &top_tty)) {
		raw = top_tty;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		top_tty_set = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		atexit(top_restore);
		signal(SIGINT, top_signal);
		signal(SIGTERM, top_signal);
		signal(SIGHUP, top_signal);
		signal(SIGWINCH, top_winch);
		/*
		 * With -n the last screen is what was asked for: it stays,
		 * on the screen of the shell.
		 */
		fputs(count ? "\033[?25l" : TOP_ENTER, stdout);
		fflush(stdout);
		top_on_screen = count ? 1 : 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; !count || n < count; n++) {
		struct client_list cl = { 0 };
		struct pool_row *rows;
		size_t nrows, len;
		char *buf = NULL;
		FILE *f;

		ret = collect_pools(pool, UNIT_PAGES, &rows, &nrows);
		if (ret)
			break;
		if (find_clients(&cl, pool ? (int)rows[0].id : -1))
			cl.nr = 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ts.dt = n ? (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 : 0;
		t0 = t1;
		ws.ws_col = 0;
		if (!tty || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws))
			ws.ws_col = 0;
		top_cols = ws.ws_col;
		f = open_memstream(&buf, &len);
		if (f) {
			top_screen(f, &ts, rows, nrows, &cl, secs);
			fclose(f);
			top_draw(buf ? buf : "", ws.ws_col, tty);
			free(buf);
		}
		/* This screen's figures are the next one's previous. */
		free(ts.prev);
		ts.prev = ts.cur;
		ts.nr_prev = ts.nr_cur;
		ts.cur = NULL;
		ts.nr_cur = 0;
		ts.alloc = 0;
		free(cl.v);
		free_pools(rows, nrows);
		if ((!count || n + 1 < count) && top_wait(secs, tty))
			break;
	}
	free(ts.prev);
	free(ts.cur);
	/* What is written goes out before the screen is left. */
	fflush(stdout);
	top_restore();
	return ret;
}
