// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-demo: two inference clients share one pool; one is killed with
 * SIGKILL while it holds rows, a session slot and pages; everything it held
 * is back in the pool the moment it is reaped, with no one cleaning up.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Run as root where the module is loaded, on an idle pool (no clients,
 * every page free). The parent never opens the pool while the clients run,
 * except for a moment around each KVPOOL_VERIFY: it watches through sysfs,
 * so it is not itself a client that would hold the pool's figures up.
 * Parent and clients synchronise over pipes only; no step relies on a
 * sleep. Exit status: 0 if every check held, 1 if one failed, 2 on a
 * usage error, 3 if the demo could not run (module, pool, privilege).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <kvpool.h>

#include "kvsched.h"

#define MAX_ROWS	8	/* rows per client */
#define MAX_PAGES_ROW	4	/* pages per row at most */
#define DECODE_STEPS	8	/* one token per row per step */
/* Slot ids are per client: both clients use the same one on purpose. */
#define SESSION_ID	42

static const char *prog = "kvpool-demo";

/* What each client does, worked out by the parent from the geometry. */
struct plan {
	char path[32];		/* /dev/kvpoolN */
	unsigned int page_tokens;
	unsigned int rows;	/* rows each client takes */
	unsigned int prompt;	/* tokens per row after the prefill */
	unsigned int steps;	/* decode steps after it */
	unsigned int row_pages;	/* pages per row at the end */
};

/* Client to parent, once when holding and once when finished. */
struct report {
	int err;		/* 0, or the -errno of what failed */
	char what[120];		/* what failed, when err (or a check) */
	unsigned int rows;	/* kvpool_stats: out_client_rows */
	unsigned int slots;	/* out_client_slots */
	unsigned int pages;	/* out_client_pages */
	unsigned int freed_rows;	/* finish: pages freed by RELEASE */
	unsigned int freed_slot;	/* finish: by SLOT_RELEASE */
};

struct client {
	char name;
	pid_t pid;
	int cmd_fd;		/* parent writes: 'f' = finish */
	int rep_fd;		/* parent reads struct report */
	struct report held;
};

static void __printf(1, 2) err_msg(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *plural(unsigned int n)
{
	return n == 1 ? "" : "s";
}

/* ---- the client (child) side ---- */

/* Report a failure of @err (0: a wrong figure) and leave. */
static void __noreturn __printf(4, 5)
client_fail(int rep_fd, struct report *r, int err, const char *fmt, ...)
{
	va_list ap;

	r->err = err ? err : -EPROTO;
	va_start(ap, fmt);
	vsnprintf(r->what, sizeof(r->what), fmt, ap);
	va_end(ap);
	write_full(rep_fd, r, sizeof(*r));
	_exit(1);
}

/*
 * Grow every row to @len tokens with one batched extend, the way a
 * scheduler grows its whole decode batch per step, then commit @len.
 * Returns the number of new pages, after checking it against the
 * page_tokens arithmetic.
 */
static unsigned int client_grow(struct kvpool *kp, const struct plan *pl,
				const struct kvpool_handle *h,
				unsigned int *len, unsigned int new_len,
				uint32_t *pages, unsigned int pages_cap,
				int rep_fd, struct report *r)
{
	struct kvpool_extend_entry ext[MAX_ROWS] = { 0 };
	struct kvpool_len_entry com[MAX_ROWS] = { 0 };
	struct kvpool_batch_result res;
	unsigned int i, want = 0;
	int ret;

	for (i = 0; i < pl->rows; i++) {
		ext[i].handle = h[i];
		ext[i].new_len = new_len;
		want += div_up(new_len, pl->page_tokens) -
			div_up(len[i], pl->page_tokens);
	}
	ret = kvpool_extend(kp, ext, pl->rows, pages, pages_cap, &res);
	if (ret < 0)
		client_fail(rep_fd, r, ret,
			    "extend to %u tokens (entry %d, %u pages missing)",
			    new_len, (int)res.error_index, res.nr_missing);
	if ((unsigned int)ret != want)
		client_fail(rep_fd, r, 0, "extend to %u tokens gave %d pages, want %u",
			    new_len, ret, want);

	for (i = 0; i < pl->rows; i++) {
		com[i].handle = h[i];
		com[i].len = new_len;
		len[i] = new_len;
	}
	ret = kvpool_commit(kp, com, pl->rows, &res);
	if (ret < 0)
		client_fail(rep_fd, r, ret, "commit %u tokens (entry %d)",
			    new_len, (int)res.error_index);
	return want;
}

static void __noreturn
client_main(const struct plan *pl, int cmd_fd, int rep_fd)
{
	struct kvpool_handle h[MAX_ROWS];
	unsigned int len[MAX_ROWS] = { 0 };
	unsigned int prefill_cap, got, step, want_pages;
	struct kvpool_batch_result res;
	struct kvpool_row_query q;
	struct kvpool_stats st;
	struct report r = { 0 };
	struct kvpool *kp;
	uint32_t *pages;
	char cmd;
	int ret;

	ret = kvpool_open(pl->path, &kp);
	if (ret)
		client_fail(rep_fd, &r, ret, "open %s", pl->path);

	/* Room for the prefill's page ids, the largest single extend. */
	prefill_cap = pl->rows * div_up(pl->prompt, pl->page_tokens);
	pages = calloc(prefill_cap, sizeof(*pages));
	if (!pages)
		client_fail(rep_fd, &r, -ENOMEM, "calloc");

	ret = kvpool_alloc_rows(kp, h, pl->rows, &res);
	if (ret < 0)
		client_fail(rep_fd, &r, ret, "alloc %u rows (%u missing)",
			    pl->rows, res.nr_missing);

	/* Prefill: the prompt in one step, then decode one token a step. */
	got = client_grow(kp, pl, h, len, pl->prompt, pages, prefill_cap,
			  rep_fd, &r);
	for (step = 1; step <= pl->steps; step++)
		got += client_grow(kp, pl, h, len, pl->prompt + step, pages,
				   pl->rows, rep_fd, &r);
	want_pages = pl->rows * pl->row_pages;
	if (got != want_pages)
		client_fail(rep_fd, &r, 0, "took %u pages, want %u", got,
			    want_pages);

	/* The last row's turn is over: park it for the session's next one. */
	ret = kvpool_to_slot(kp, h[pl->rows - 1], SESSION_ID);
	if (ret < 0)
		client_fail(rep_fd, &r, ret, "park row %u in slot %d",
			    h[pl->rows - 1].req_pool_idx, SESSION_ID);
	if ((unsigned int)ret != pl->row_pages)
		client_fail(rep_fd, &r, 0, "slot holds %d pages, want %u", ret,
			    pl->row_pages);
	/* The parked row kept its record: lengths as they were. */
	ret = kvpool_slot_query(kp, SESSION_ID, NULL, 0, &q);
	if (ret < 0)
		client_fail(rep_fd, &r, ret, "query slot %d", SESSION_ID);
	if ((unsigned int)ret != pl->row_pages ||
	    q.out_state != KVPOOL_ROW_SLOT ||
	    q.out_req_pool_idx != h[pl->rows - 1].req_pool_idx ||
	    q.out_allocated_len != len[pl->rows - 1] ||
	    q.out_committed_len != len[pl->rows - 1])
		client_fail(rep_fd, &r, 0,
			    "slot query: %d pages, state %u, row %u, lengths %u/%u",
			    ret, q.out_state, q.out_req_pool_idx,
			    q.out_allocated_len, q.out_committed_len);

	ret = kvpool_stats(kp, &st);
	if (ret)
		client_fail(rep_fd, &r, ret, "stats");
	r.rows = st.out_client_rows;
	r.slots = st.out_client_slots;
	r.pages = st.out_client_pages;
	if (r.rows != pl->rows - 1 || r.slots != 1 || r.pages != want_pages)
		client_fail(rep_fd, &r, 0,
			    "stats say %u rows, %u slots, %u pages; want %u, 1, %u",
			    r.rows, r.slots, r.pages, pl->rows - 1, want_pages);
	if (!write_full(rep_fd, &r, sizeof(r)))
		_exit(1);

	/*
	 * Hold everything until told to finish. EOF means the parent is
	 * gone: just exit, the kernel takes everything back.
	 */
	if (!read_full(cmd_fd, &cmd, 1) || cmd != 'f')
		_exit(0);

	ret = kvpool_release(kp, h, pl->rows - 1, &res);
	if (ret < 0)
		client_fail(rep_fd, &r, ret, "release %u rows (entry %d)",
			    pl->rows - 1, (int)res.error_index);
	r.freed_rows = (unsigned int)ret;
	ret = kvpool_slot_release(kp, SESSION_ID);
	if (ret < 0)
		client_fail(rep_fd, &r, ret, "release slot %d", SESSION_ID);
	r.freed_slot = (unsigned int)ret;

	ret = kvpool_stats(kp, &st);
	if (ret)
		client_fail(rep_fd, &r, ret, "stats");
	if (st.out_client_rows || st.out_client_slots || st.out_client_pages)
		client_fail(rep_fd, &r, 0,
			    "still holding %u rows, %u slots, %u pages after release",
			    st.out_client_rows, st.out_client_slots,
			    st.out_client_pages);
	kvpool_close(kp);
	free(pages);
	_exit(write_full(rep_fd, &r, sizeof(r)) ? 0 : 1);
}

/* ---- the parent side ---- */

static unsigned int nr_checks, nr_failed;

static void __printf(2, 3) check(bool ok, const char *fmt, ...)
{
	va_list ap;

	nr_checks++;
	if (!ok)
		nr_failed++;
	printf("    %-4s  ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static struct client clients[2] = { { .name = 'A' }, { .name = 'B' } };

/* Take both clients down; their pages go back to the pool on exit. */
static void kill_clients(void)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		if (clients[i].pid <= 0)
			continue;
		kill(clients[i].pid, SIGKILL);
		waitpid(clients[i].pid, NULL, 0);
		clients[i].pid = 0;
	}
}

static void describe_exit(char *buf, size_t len, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d",
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "stopped with wait status 0x%x", status);
}

/* Read one report from @c; on any failure say why and return false. */
static bool get_report(struct client *c, struct report *r)
{
	char how[64];
	int status;

	if (!read_full(c->rep_fd, r, sizeof(*r))) {
		if (waitpid(c->pid, &status, 0) == c->pid) {
			c->pid = 0;
			describe_exit(how, sizeof(how), status);
		} else {
			snprintf(how, sizeof(how), "closed its pipe");
		}
		err_msg("client %c %s without reporting", c->name, how);
		return false;
	}
	if (r->err) {
		err_msg("client %c: %s: %s", c->name, r->what,
			r->err == -EPROTO ? "unexpected figure" :
			kvpool_strerror(r->err));
		return false;
	}
	return true;
}

static bool start_client(struct client *c, const struct plan *pl)
{
	int cmd[2], rep[2];
	size_t i;

	if (pipe(cmd) || pipe(rep)) {
		err_msg("pipe: %s", strerror(errno));
		return false;
	}
	fflush(stdout);
	c->pid = fork();
	if (c->pid < 0) {
		err_msg("fork: %s", strerror(errno));
		return false;
	}
	if (!c->pid) {
		/* The other client's pipes are not ours to hold open. */
		for (i = 0; i < 2; i++) {
			if (&clients[i] == c || !clients[i].pid)
				continue;
			close(clients[i].cmd_fd);
			close(clients[i].rep_fd);
		}
		close(cmd[1]);
		close(rep[0]);
		client_main(pl, cmd[0], rep[1]);
	}
	close(cmd[0]);
	close(rep[1]);
	c->cmd_fd = cmd[1];
	c->rep_fd = rep[0];
	return true;
}

static void print_header(void)
{
	printf("%-24s %9s %9s %9s %5s  %9s %6s  %7s\n", "pool",
	       "free", "row", "slot", "rsvd", "held-rows", "slots", "clients");
}

static void print_row(const char *label, const struct kvpool_stats *st)
{
	printf("  %-22s %9u %9u %9u %5u  %9u %6u  %7u\n", label,
	       st->out_free_pages, st->out_row_pages, st->out_slot_pages,
	       st->out_reserved_pages, st->out_held_rows, st->out_slot_rows,
	       st->out_nr_clients);
}

/* Read the pool's figures from sysfs and print them as one table row. */
static bool snapshot(unsigned int id, const char *label,
		     struct kvpool_stats *st)
{
	int ret = kvpool_pool_status(id, NULL, st);

	if (ret) {
		err_msg("reading pool %u from sysfs: %s", id,
			kvpool_strerror(ret));
		return false;
	}
	print_row(label, st);
	return true;
}

/* KVPOOL_VERIFY; opens the pool for the moment it takes. */
static bool check_verify(const char *path)
{
	struct kvpool_verify v;
	struct kvpool *kp;
	int ret;

	ret = kvpool_open(path, &kp);
	if (!ret) {
		ret = kvpool_verify(kp, &v);
		kvpool_close(kp);
	}
	if (ret < 0) {
		check(false, "verify: %s", kvpool_strerror(ret));
		return false;
	}
	check(!ret, "verify: %d violations in %u pages, %u rows%s", ret,
	      v.out_pages_checked, v.out_rows_checked,
	      ret ? " (see the kernel log)" : "");
	return !ret;
}

static int setup_error(int err, const char *what, unsigned int id)
{
	if (err == -ENODEV || err == -ENOENT) {
		if (access(KVPOOL_CONTROL_PATH, F_OK) &&
		    kvpool_pool_list(NULL, 0) < 0)
			err_msg("kvpool module is not loaded (insmod kvpool.ko)");
		else
			err_msg("no pool %u (kvpoolctl status lists them)", id);
	} else if (err == -EACCES || err == -EPERM) {
		err_msg("%s: permission denied: run as root", what);
	} else {
		err_msg("%s: %s", what, kvpool_strerror(err));
	}
	return EXIT_SETUP;
}

/*
 * Size the demo to the pool: up to MAX_ROWS rows per client and
 * MAX_PAGES_ROW pages per row, both clients at once, the last page of each
 * row half full so that decode steps fill it before taking a new one.
 */
static bool make_plan(const struct kvpool_info *in,
		      const struct kvpool_stats *st, struct plan *pl)
{
	unsigned int free_pages = st->out_free_pages;
	unsigned int free_rows = st->out_free_rows;
	unsigned int rows, per_row, len;

	rows = MAX_ROWS;
	if (rows > free_rows / 2)
		rows = free_rows / 2;
	if (rows > in->out_max_batch)
		rows = in->out_max_batch;
	if (rows > free_pages / 2)
		rows = free_pages / 2;
	/* Two rows each: one to release, one to park in a slot. */
	if (rows < 2) {
		err_msg("pool %u is too small: the demo needs 4 free rows, 4 free pages and batches of 2",
			in->out_pool_id);
		return false;
	}
	per_row = free_pages / (2 * rows);
	if (per_row > MAX_PAGES_ROW)
		per_row = MAX_PAGES_ROW;

	len = per_row * in->out_page_tokens - in->out_page_tokens / 2;
	if (len > in->out_row_tokens)
		len = in->out_row_tokens;
	pl->page_tokens = in->out_page_tokens;
	pl->rows = rows;
	pl->steps = len - 1 < DECODE_STEPS ? len - 1 : DECODE_STEPS;
	pl->prompt = len - pl->steps;
	pl->row_pages = div_up(len, in->out_page_tokens);
	return true;
}

static void print_usage(FILE *f)
{
	fprintf(f,
"usage: %s [--pool N] [--version]\n"
"\n"
"Two clients share pool N (default 0): each takes rows, grows them in\n"
"batched decode steps and parks one in a session slot. Client A is then\n"
"killed with SIGKILL; the demo checks that everything it held went back\n"
"to the pool, lets client B release its share, and checks the pool is\n"
"full and sound again (KVPOOL_VERIFY).\n"
"\n"
"Run as root where the kvpool module is loaded, on an idle pool.\n"
"\n"
"  -p, --pool N   the pool to use, /dev/kvpoolN\n"
"  -V, --version  print kvpool's version and exit\n"
"  -h, --help     this text\n"
"\n"
"Exit status: 0 every check held, 1 a check failed, 2 usage error,\n"
"3 the demo could not run (module not loaded, no pool, not root, pool busy).\n",
		prog);
}

static int run_demo(unsigned int id)
{
	const __u64 need = KVPOOL_FEAT_ROWS | KVPOOL_FEAT_EXTEND |
			   KVPOOL_FEAT_SLOTS | KVPOOL_FEAT_VERIFY;
	struct client *a = &clients[0], *b = &clients[1];
	unsigned int base_free, both, nr_pages;
	struct kvpool_stats st;
	struct kvpool_info in;
	struct plan pl = { 0 };
	struct report fin;
	struct kvpool *kp;
	char how[64];
	int ret, status;
	size_t i;

	/* Features and max_batch only come from KVPOOL_INFO. */
	snprintf(pl.path, sizeof(pl.path), "/dev/kvpool%u", id);
	ret = kvpool_open(pl.path, &kp);
	if (ret)
		return setup_error(ret, pl.path, id);
	kvpool_info(kp, &in);
	kvpool_close(kp);
	if ((in.out_features & need) != need) {
		err_msg("pool %u lacks rows, extend, slots or verify (features 0x%llx)",
			id, (unsigned long long)in.out_features);
		return EXIT_SETUP;
	}

	/* From here on the parent is no client: it reads sysfs. */
	ret = kvpool_pool_status(id, NULL, &st);
	if (ret)
		return setup_error(ret, "sysfs", id);
	nr_pages = in.out_nr_pages;
	if (st.out_nr_clients ||
	    st.out_free_pages != nr_pages - st.out_reserved_pages) {
		err_msg("pool %u is in use (%u client%s, %u of %u pages free); run the demo on an idle pool",
			id, st.out_nr_clients, plural(st.out_nr_clients),
			st.out_free_pages, nr_pages);
		return EXIT_SETUP;
	}
	if (!make_plan(&in, &st, &pl))
		return EXIT_SETUP;
	base_free = st.out_free_pages;

	printf("%s: %s: %u pages x %u tokens, %u rows of up to %u tokens\n",
	       prog, pl.path, nr_pages, in.out_page_tokens, in.out_nr_rows,
	       in.out_row_tokens);
	printf("each client: %u rows; prefill %u token%s, %u decode step%s -> %u tokens = %u page%s a row\n",
	       pl.rows, pl.prompt, plural(pl.prompt), pl.steps,
	       plural(pl.steps), pl.prompt + pl.steps, pl.row_pages,
	       plural(pl.row_pages));
	print_header();
	print_row("at start", &st);

	/* Past this point every failure is the demo's: exit 1. */
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < 2; i++)
		if (!start_client(&clients[i], &pl))
			goto failed;
	for (i = 0; i < 2; i++) {
		struct client *c = &clients[i];

		if (!get_report(c, &c->held))
			goto failed;
		printf("  client %c (pid %d) holds %u row%s + 1 slot (session %d), %u pages\n",
		       c->name, (int)c->pid, c->held.rows,
		       plural(c->held.rows), SESSION_ID, c->held.pages);
	}
	both = a->held.pages + b->held.pages;

	if (!snapshot(id, "A and B hold pages", &st))
		goto failed;
	check(st.out_free_pages == base_free - both,
	      "free pages fell by A's %u + B's %u", a->held.pages,
	      b->held.pages);
	check(st.out_nr_clients == 2 && st.out_slot_rows == 2 &&
	      st.out_held_rows == 2 * (pl.rows - 1),
	      "2 clients, %u held rows, 2 slot rows", 2 * (pl.rows - 1));
	check_verify(pl.path);

	/*
	 * The kernel frees a client on the last fput() of its file. A dying
	 * process drops its files in do_exit() before it becomes a zombie,
	 * and A's file has no other reference (A opened it after the fork),
	 * so once waitpid() returns, everything A held is back.
	 */
	printf("  kill -9 A (pid %d) while it holds %u row%s + 1 slot, %u pages\n",
	       (int)a->pid, a->held.rows, plural(a->held.rows),
	       a->held.pages);
	kill(a->pid, SIGKILL);
	if (waitpid(a->pid, &status, 0) != a->pid) {
		err_msg("waitpid A: %s", strerror(errno));
		goto failed;
	}
	a->pid = 0;
	if (!snapshot(id, "A killed", &st))
		goto failed;
	describe_exit(how, sizeof(how), status);
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "A %s", how);
	check(st.out_free_pages == base_free - both + a->held.pages,
	      "free pages rose by exactly A's %u", a->held.pages);
	check(st.out_nr_clients == 1 && st.out_slot_rows == 1 &&
	      st.out_held_rows == pl.rows - 1,
	      "1 client, %u held row%s, 1 slot row", pl.rows - 1,
	      plural(pl.rows - 1));
	check_verify(pl.path);

	if (!write_full(b->cmd_fd, "f", 1)) {
		err_msg("client B is gone");
		goto failed;
	}
	if (!get_report(b, &fin))
		goto failed;
	if (waitpid(b->pid, &status, 0) != b->pid) {
		err_msg("waitpid B: %s", strerror(errno));
		goto failed;
	}
	b->pid = 0;
	if (!snapshot(id, "B released, exited", &st))
		goto failed;
	check(WIFEXITED(status) && !WEXITSTATUS(status) &&
	      fin.freed_rows + fin.freed_slot == b->held.pages,
	      "B freed %u page%s from rows and %u from its slot, exited 0",
	      fin.freed_rows, plural(fin.freed_rows), fin.freed_slot);
	check(st.out_free_pages == nr_pages - st.out_reserved_pages,
	      "pool full again: free pages = %u - %u reserved", nr_pages,
	      st.out_reserved_pages);
	check(!st.out_nr_clients && !st.out_held_rows && !st.out_slot_rows &&
	      !st.out_row_pages && !st.out_slot_pages,
	      "no clients, no held or parked rows");
	check_verify(pl.path);

	if (nr_failed) {
		printf("%s: FAIL: %u of %u checks failed\n", prog, nr_failed,
		       nr_checks);
		return EXIT_CHECK_FAILED;
	}
	printf("%s: PASS: all %u checks held\n", prog, nr_checks);
	return EXIT_PASS;

failed:
	kill_clients();
	printf("%s: FAIL: stopped after %u checks (%u failed)\n", prog,
	       nr_checks, nr_failed);
	return EXIT_CHECK_FAILED;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long id = 0;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "p:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			id = strtoul(optarg, &end, 10);
			if (errno || *end || optarg[0] < '0' ||
			    optarg[0] > '9' || id > 0x7fffffff) {
				err_msg("--pool: not a pool number: '%s'",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'V':
			/* kvpool's version, from the libkvpool linked in. */
			printf("%s %s (kvpool ABI %d)\n", prog,
			       kvpool_version(), KVPOOL_ABI_VERSION);
			return EXIT_PASS;
		case 'h':
			print_usage(stdout);
			return EXIT_PASS;
		default:
			print_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		print_usage(stderr);
		return EXIT_USAGE;
	}
	return run_demo((unsigned int)id);
}
