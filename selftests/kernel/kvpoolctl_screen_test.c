// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: kvpoolctl on a real terminal, against names chosen
 * to break it. Anyone with a delegated cgroup subtree names cgroups,
 * tenants' labels are set by an administrator from whatever a service
 * calls itself, and any process names its command: here cgroups whose
 * names hold an escape sequence (reverse video), 0xff and wide
 * characters, one 3.8 KiB deep, a path tenant with a newline, labels
 * with an escape, a newline, 0xff and wide characters, and a client
 * whose command name is an escape sequence and a newline.
 *
 * status, tenant list, clients and top run in tmux, in C.UTF-8, on
 * screens 80 and 60 cells wide, and tmux's own screen is read back
 * (capture-pane -e shows the attributes a cell was drawn with, -J joins
 * what it wrapped):
 *   - nothing is drawn with an attribute and no escape passes through:
 *     no ESC at all in what -e writes;
 *   - every line fits the screen: none was wrapped;
 *   - no row was split: no line begins with what followed a newline;
 *   - every tenant's figures show, its id and MAX on one line, and the
 *     deep path's end (".service") with an ellipsis before it;
 *   - top leaves its alternate screen when q ends it: what the shell
 *     printed before is there again.
 * And status as a user who may open the pool leaves no tenant behind
 * in the kernel's list (a read-only command leaves no state).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE
#include "kvptest_tenant.h"

#include <locale.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <wchar.h>

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"
#define TMUX		"LC_ALL=C.UTF-8 tmux -u -S %s/tmux"
#define AS_NOBODY	"setpriv --reuid=65534 --regid=65534 --clear-groups "
#define BASE		KT_CGROOT "/kvpctl-screen"
#define SCREEN		65536	/* a capture, with attributes */

/* The hostile cgroups under BASE, and each one's tenant's label. */
static const char *const cg_names[] = {
	"esc\033[7mREV\033[0m",
	"ff\xff\xfe",
	"\xe4\xb8\xad\xe6\x96\x87\xe5\x90\x8d\xe5\xad\x97",
};
static const char *const cg_labels[] = {
	"\033[7mREV\033[0m",
	"two\nlines",
	"\xe5\xad\x97\xe5\xad\x97\xe5\xad\x97\xe5\xad\x97\xe5\xad\x97wide",
};
#define NR_CG		3
#define DEEP_LEVELS	15	/* of 250 bytes: a 3.8 KiB path */
/* Each tenant's max pages, a figure to find on its line. */
#define MAX_OF(i)	(1101 + (i))
#define NR_TENANTS	(NR_CG + 2)	/* and the deep one, and a path */
#define CHILD_COMM	"\033[7mX\nsplit"

FIXTURE(screen) {
	struct kt_pool pool;
	char dir[64];
	char deep[4096];
	__u32 tid[NR_TENANTS];
	pid_t child;
};

/* mkdir -p of @path's last part; 0 or the errno. */
static int mkcg(const char *path)
{
	return mkdir(path, 0755) && errno != EEXIST ? errno : 0;
}

/* The hostile tenants: three cgroups, the deep one, and a path one. */
FIXTURE_SETUP(screen)
{
	struct kvpool_ctl_tenant t;
	char path[4096], out[4096];
	size_t len;
	__u64 id;
	int i, p[2];
	char c;

	snprintf(self->dir, sizeof(self->dir), "/tmp/kvpoolctl_screen.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, kt_cgroup2_ready());
	if (access("/dev/pts/ptmx", F_OK))
		kt_run_output(NULL, 0, "mkdir -p /dev/pts && mount -t devpts devpts /dev/pts");
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     512, 16, 32, 4096);
	ASSERT_EQ(0, mkcg(BASE));
	for (i = 0; i < NR_CG; i++) {
		snprintf(path, sizeof(path), BASE "/%s", cg_names[i]);
		ASSERT_EQ(0, mkcg(path)) TH_LOG("mkdir %s", path);
		ASSERT_EQ(0, kt_cgroup_id(path, &id));
		kt_tenant_init(&t, self->pool.id, id, 0, MAX_OF(i), 0, 0,
			       cg_labels[i]);
		ASSERT_EQ(0, kt_tenant_set(self->pool.ctl, &t));
		self->tid[i] = t.tenant_id;
	}
	/* BASE/ddd.../ddd.../leaf.service, 15 levels of 250 bytes. */
	len = (size_t)snprintf(self->deep, sizeof(self->deep), "%s", BASE);
	for (i = 0; i < DEEP_LEVELS; i++) {
		len += (size_t)snprintf(self->deep + len,
					sizeof(self->deep) - len, "/%0250d", i);
		ASSERT_EQ(0, mkcg(self->deep)) TH_LOG("mkdir at level %d", i);
	}
	snprintf(self->deep + len, sizeof(self->deep) - len, "/leaf.service");
	ASSERT_EQ(0, mkcg(self->deep));
	ASSERT_EQ(0, kt_cgroup_id(self->deep, &id));
	kt_tenant_init(&t, self->pool.id, id, 0, MAX_OF(NR_CG), 0, 0, "deep");
	ASSERT_EQ(0, kt_tenant_set(self->pool.ctl, &t));
	self->tid[NR_CG] = t.tenant_id;
	/* A path tenant: its path need not exist, so it can hold a newline. */
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " tenant set %u --cgroup \"$(printf '/nl\\nsplit')\" --uid 0 --max %d --label \"$(printf 'ff\\377')\"",
				   self->pool.id, MAX_OF(NR_CG + 1)))
		TH_LOG("%s", out);
	self->tid[NR_CG + 1] = (__u32)atoi(out);

	/*
	 * A client in the first cgroup, named CHILD_COMM: clients and top
	 * show its command. It says when it has the pool open.
	 */
	ASSERT_EQ(0, pipe(p));
	self->child = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, self->child);
	if (!self->child) {
		snprintf(path, sizeof(path), BASE "/%s", cg_names[0]);
		kt_dev_path(out, sizeof(out), self->pool.id);
		if (kt_cgroup_move(path, 0) ||
		    prctl(PR_SET_NAME, CHILD_COMM, 0, 0, 0) ||
		    open(out, O_RDWR | O_CLOEXEC) < 0)
			_exit(1);
		c = 'y';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1)) TH_LOG("the client did not start");
	close(p[0]);
}

FIXTURE_TEARDOWN(screen)
{
	char path[4096];
	int i;

	kt_run_output(NULL, 0, TMUX " kill-server", self->dir);
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		kt_pool_wait(&self->pool, self->child);
	}
	kt_pool_fini(_metadata, &self->pool);
	/* rmdir deepest first. */
	for (i = DEEP_LEVELS + 1; i > 0 && *self->deep; i--) {
		rmdir(self->deep);
		*strrchr(self->deep, '/') = '\0';
	}
	for (i = 0; i < NR_CG; i++) {
		snprintf(path, sizeof(path), BASE "/%s", cg_names[i]);
		rmdir(path);
	}
	rmdir(BASE);
	snprintf(path, sizeof(path), "rm -rf %s", self->dir);
	kt_run_output(NULL, 0, "%s", path);
}

/*
 * The screen of tmux session @s, attributes as escapes (-e), wrapped
 * lines joined (-J), into @buf.
 */
static int capture(const char *dir, const char *s, char *buf, size_t len)
{
	return kt_run_output(buf, len, TMUX " capture-pane -p -e -J -t %s",
			     dir, s);
}

/*
 * Run @cmd in a new tmux session @s, @cols wide, and wait (up to 30 s)
 * until its screen shows @until; the screen into @buf. 0 or -1.
 */
static int run_screen(const char *dir, const char *s, int cols,
		      const char *cmd, const char *until, char *buf,
		      size_t len)
{
	int i;

	if (kt_run_output(buf, len,
			  TMUX " new-session -d -s %s -x %d -y 200 'LC_ALL=C.UTF-8 %s; echo @@END@@; sleep 3600'",
			  dir, s, cols, cmd))
		return -1;
	for (i = 0; i < 300; i++) {
		if (!capture(dir, s, buf, len) && strstr(buf, until))
			return 0;
		kt_sleep_ms(100);
	}
	return -1;
}

/*
 * run_screen() of "kvpoolctl @sub POOL" in session @s, to its end mark:
 * the table commands' one way of being run, the pool's id appended.
 */
static int pool_screen(FIXTURE_DATA(screen) *self, const char *s, int cols,
		       const char *sub, char *buf)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), KVPOOLCTL " %s %u", sub, self->pool.id);
	return run_screen(self->dir, s, cols, cmd, "@@END@@", buf, SCREEN);
}

/* Display cells of @l's @n bytes in UTF-8; -1 if it is no valid text. */
static int cells(const char *l, size_t n)
{
	mbstate_t st;
	size_t i = 0;
	int w = 0;

	memset(&st, 0, sizeof(st));
	while (i < n) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, l + i, n - i, &st);

		if (k == (size_t)-1 || k == (size_t)-2 || !k || wcwidth(wc) < 0)
			return -1;
		w += wcwidth(wc);
		i += k;
	}
	return w;
}

/* A line of @screen that starts (after blanks) with @first and has @also. */
static bool has_line(const char *screen, const char *first, const char *also)
{
	const char *l, *nl;
	size_t n = strlen(first);

	for (l = screen; *l; l = nl + 1) {
		const char *p = l;

		nl = strchrnul(l, '\n');
		while (*p == ' ')
			p++;
		if (!strncmp(p, first, n) && (p[n] == ' ' || p + n == nl) &&
		    (!also || memmem(l, (size_t)(nl - l), also, strlen(also))))
			return true;
		if (!*nl)
			break;
	}
	return false;
}

/*
 * What every screen must hold to: no attribute or escape, no line past
 * @cols, no row split at a newline. Each failure is said with the screen.
 */
static void check_screen(struct __test_metadata *_metadata,
			 const char *what, int cols, const char *screen)
{
	const char *l, *nl;
	int w;

	EXPECT_EQ(NULL, strchr(screen, '\033'))
		TH_LOG("%s at %d: an escape or attribute reached the screen:\n%s",
		       what, cols, screen);
	for (l = screen; *l; l = nl + 1) {
		nl = strchrnul(l, '\n');
		w = cells(l, (size_t)(nl - l));
		EXPECT_LE(0, w) TH_LOG("%s at %d: no valid UTF-8: %.*s", what,
				       cols, (int)(nl - l), l);
		EXPECT_GE(cols, w) TH_LOG("%s at %d: a line of %d cells:\n%s",
					  what, cols, w, screen);
		/* What followed a newline in a label, a path or a command. */
		EXPECT_FALSE(has_line(l, "lines", NULL) ||
			     has_line(l, "split", NULL))
			TH_LOG("%s at %d: a row was split:\n%s", what, cols,
			       screen);
		if (!*nl)
			break;
	}
}

/*
 * Every tenant's id (or, @first, what its rows start with: top's start
 * with the pool) and MAX on one line; the deep path's end, cut.
 */
static void check_tenants(struct __test_metadata *_metadata,
			  FIXTURE_DATA(screen) *self, const char *what,
			  int cols, const char *screen, const char *first)
{
	char id[16], max[16];
	int i;

	for (i = 0; i < NR_TENANTS; i++) {
		snprintf(id, sizeof(id), "%u", self->tid[i]);
		if (first)
			snprintf(id, sizeof(id), "%s", first);
		snprintf(max, sizeof(max), " %d", MAX_OF(i));
		EXPECT_TRUE(has_line(screen, id, max))
			TH_LOG("%s at %d: tenant %s's max %s is not on its line:\n%s",
			       what, cols, id, max, screen);
	}
	EXPECT_NE(NULL, strstr(screen, ".service"))
		TH_LOG("%s at %d: the deep path's end is cut off:\n%s", what,
		       cols, screen);
	EXPECT_NE(NULL, strstr(screen, "\u2026"))
		TH_LOG("%s at %d: no ellipsis:\n%s", what, cols, screen);
	/* The escape is there, as text. */
	EXPECT_NE(NULL, strstr(screen, "\\x1b"))
		TH_LOG("%s at %d: the escape is not shown as \\x1b:\n%s", what,
		       cols, screen);
}

/* A screen into the log, up to its end mark; "#" a line, for TAP. */
static void print_screen(const char *screen)
{
	const char *l, *nl;

	for (l = screen; *l && strncmp(l, "@@END@@", 7); l = nl + 1) {
		nl = strchrnul(l, '\n');
		printf("#   %.*s\n", (int)(nl - l), l);
		if (!*nl)
			break;
	}
}

/* status, tenant list and clients at 80 and 60 cells. */
TEST_F_TIMEOUT(screen, tables, 300)
{
	static const int widths[] = { 80, 60 };
	char *screen = malloc(SCREEN), pid[16];
	size_t k;

	ASSERT_NE(NULL, screen);
	snprintf(pid, sizeof(pid), "%d", self->child);
	for (k = 0; k < ARRAY_SIZE(widths); k++) {
		int w = widths[k];

		ASSERT_EQ(0, pool_screen(self, "status", w, "status", screen))
			TH_LOG("%s", screen);
		check_screen(_metadata, "status", w, screen);
		check_tenants(_metadata, self, "status", w, screen, NULL);
		/* The pool's figures: its 512 pages, under TOTAL. */
		EXPECT_NE(NULL, strstr(screen, " 512")) TH_LOG("%s", screen);
		printf("# status at %d cells (tmux capture-pane):\n", w);
		print_screen(screen);
		kt_run_output(NULL, 0, TMUX " kill-session -t status", self->dir);

		ASSERT_EQ(0, pool_screen(self, "list", w, "tenant list",
					 screen)) TH_LOG("%s", screen);
		check_screen(_metadata, "tenant list", w, screen);
		check_tenants(_metadata, self, "tenant list", w, screen, NULL);
		kt_run_output(NULL, 0, TMUX " kill-session -t list", self->dir);

		ASSERT_EQ(0, pool_screen(self, "clients", w, "clients", screen))
			TH_LOG("%s", screen);
		check_screen(_metadata, "clients", w, screen);
		/* The client's row: its pool first, its pid and command. */
		EXPECT_TRUE(has_line(screen, "POOL", "PID"))
			TH_LOG("%s", screen);
		EXPECT_NE(NULL, strstr(screen, pid)) TH_LOG("%s", screen);
		EXPECT_NE(NULL, strstr(screen, "\\x1b[7m"))
			TH_LOG("clients at %d: the command is not shown as text:\n%s",
			       w, screen);
		kt_run_output(NULL, 0, TMUX " kill-session -t clients",
			      self->dir);
	}
	free(screen);
}

/*
 * top at 80 and 60 cells: the same, the figures of the pool before any
 * name, and q gives the shell's screen back.
 */
TEST_F_TIMEOUT(screen, top, 300)
{
	static const int widths[] = { 80, 60 };
	char *screen = malloc(SCREEN), cmd[256], pid[16], pool[32];
	size_t k;
	int i;

	ASSERT_NE(NULL, screen);
	snprintf(pid, sizeof(pid), "%d", self->child);
	snprintf(pool, sizeof(pool), "%u", self->pool.id);
	for (k = 0; k < ARRAY_SIZE(widths); k++) {
		int w = widths[k];

		snprintf(cmd, sizeof(cmd), "echo BEFORE-TOP; " KVPOOLCTL " top -d 1 %u",
			 self->pool.id);
		ASSERT_EQ(0, run_screen(self->dir, "top", w, cmd, pid, screen,
					SCREEN)) TH_LOG("%s", screen);
		/* On the alternate screen: the shell's line is not there. */
		EXPECT_EQ(NULL, strstr(screen, "BEFORE-TOP")) TH_LOG("%s", screen);
		check_screen(_metadata, "top", w, screen);
		check_tenants(_metadata, self, "top", w, screen, pool);
		/* The pool's line: its id, then its 512 pages. */
		EXPECT_TRUE(has_line(screen, pool, " 512")) TH_LOG("%s", screen);
		EXPECT_NE(NULL, strstr(screen, "\\x1b[7m"))
			TH_LOG("top at %d: the command is not shown as text:\n%s",
			       w, screen);
		printf("# top at %d cells (tmux capture-pane):\n", w);
		print_screen(screen);

		ASSERT_EQ(0, kt_run_output(NULL, 0, TMUX " send-keys -t top q",
					   self->dir));
		for (i = 0; i < 100; i++) {
			if (!capture(self->dir, "top", screen, SCREEN) &&
			    strstr(screen, "@@END@@"))
				break;
			kt_sleep_ms(100);
		}
		EXPECT_LT(i, 100) TH_LOG("top did not end on q:\n%s", screen);
		/* The shell's screen is back, with nothing of top's on it. */
		EXPECT_NE(NULL, strstr(screen, "BEFORE-TOP")) TH_LOG("%s", screen);
		EXPECT_EQ(NULL, strstr(screen, "CLIENTS")) TH_LOG("%s", screen);
		EXPECT_EQ(NULL, strchr(screen, '\033')) TH_LOG("%s", screen);
		kt_run_output(NULL, 0, TMUX " kill-session -t top", self->dir);
	}
	free(screen);
}

/*
 * status by a user who may open the pool (it opens it for a moment, for
 * their own tenant): the kernel's list of tenants is the same after.
 */
TEST_F_TIMEOUT(screen, status_leaves_no_tenant, 120)
{
	struct kvpool_tenant_info before[KT_MAX_LIST], after[KT_MAX_LIST];
	__u32 nr_before, nr_after, i;
	char out[8192];

	ASSERT_EQ(0, kt_pool_chmod(self->pool.id, 0666));
	ASSERT_EQ(0, kt_tenant_list(self->pool.ctl, self->pool.id, before,
				    KT_MAX_LIST, &nr_before));
	ASSERT_EQ(0, kt_run_output(out, sizeof(out), AS_NOBODY KVPOOLCTL
				   " status %u", self->pool.id)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "tenants: only yours")) TH_LOG("%s", out);
	ASSERT_EQ(0, kt_run_output(out, sizeof(out), AS_NOBODY KVPOOLCTL
				   " status --units bytes %u", self->pool.id))
		TH_LOG("%s", out);
	ASSERT_EQ(0, kt_tenant_list(self->pool.ctl, self->pool.id, after,
				    KT_MAX_LIST, &nr_after));
	EXPECT_EQ(nr_before, nr_after);
	for (i = 0; i < nr_after && i < nr_before; i++)
		EXPECT_EQ(before[i].tenant_id, after[i].tenant_id)
			TH_LOG("tenant %u after status, %u before",
			       after[i].tenant_id, before[i].tenant_id);
	ASSERT_EQ(0, kt_pool_chmod(self->pool.id, 0600));
}

int main(int argc, char **argv)
{
	/* cells() counts as tmux does: UTF-8, wide characters two cells. */
	if (!setlocale(LC_CTYPE, "C.UTF-8")) {
		printf("# no C.UTF-8 locale: cells cannot be counted\n");
		return KSFT_FAIL;
	}
	return test_harness_run(argc, argv);
}
