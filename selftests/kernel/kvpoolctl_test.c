// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: kvpoolctl as a host administrator and its users run
 * it, against the module: status --json and tenant list --json with
 * tenant labels of every byte value (valid JSON, one shape), metrics
 * parsed by a real OpenMetrics parser (and --output written whole),
 * what a user without CAP_SYS_ADMIN sees and why they are refused
 * (device permissions vs the capability), clients from fdinfo, a
 * retired pool counted by status while its quarantine lasts, and top
 * driven through tmux: the screen shows the pool, and its figures and
 * rates change when a client takes pages.
 *
 * The checks of the output are kvpoolctl_check.py's (Python's json, the
 * prometheus_client package's parser); /usr/bin/python3 and tmux come
 * from the host root the guest runs on (tools/vm/install-deps.sh).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <sys/wait.h>

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"
#define CHECK		"/usr/bin/python3 " KVP_TOPDIR \
			"/selftests/kernel/kvpoolctl_check.py"
/* As nobody, no groups, no capabilities. */
#define AS_NOBODY	"setpriv --reuid=65534 --regid=65534 --clear-groups "
/* As root without CAP_SYS_ADMIN, for kvpoolctl and what it runs. */
#define NO_ADMIN	"setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "

#define NR_LABELS	9	/* 9 labels of 31 bytes: bytes 1..255 */

FIXTURE(ctl) {
	struct kt_pool pool;
	char dir[64];
};

FIXTURE_SETUP(ctl)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/kvpoolctl_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, kt_cgroup2_ready());
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     512, 16, 32, 4096);
}

FIXTURE_TEARDOWN(ctl)
{
	char cmd[128];

	kt_pool_fini(_metadata, &self->pool);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	kt_run_output(NULL, 0, "%s", cmd);
}

/* Label @i of the NR_LABELS: the bytes 1 + 31 * i on, up to 31 of them. */
static void label_bytes(int i, char *label, char *hex)
{
	int b, n = 0;

	for (b = 1 + 31 * i; b <= 255 && n < KVPOOL_LABEL_LEN - 1; b++, n++) {
		label[n] = (char)b;
		sprintf(hex + 2 * n, "%02x", b);
	}
	label[n] = '\0';
	hex[2 * n] = '\0';
}

/* Tenants labelled with every byte value, as root: valid JSON both ways. */
TEST_F_TIMEOUT(ctl, json_every_byte, 120)
{
	char label[KVPOOL_LABEL_LEN], hex[NR_LABELS][2 * KVPOOL_LABEL_LEN];
	struct kvpool_ctl_tenant t;
	char out[4096], path[96], lines[NR_LABELS * 2 * KVPOOL_LABEL_LEN];
	__u64 cg;
	int i, n;

	ASSERT_EQ(0, kt_self_cgroup_id(&cg));
	for (i = 0; i < NR_LABELS; i++) {
		label_bytes(i, label, hex[i]);
		kt_tenant_init(&t, self->pool.id, cg, 2000 + i, 100, 0, 0,
			       label);
		ASSERT_EQ(0, kt_tenant_set(self->pool.ctl, &t));
	}
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " status --json %u > %s/status.json",
				   self->pool.id, self->dir)) TH_LOG("%s", out);
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " tenant list --json %u > %s/list.json",
				   self->pool.id, self->dir)) TH_LOG("%s", out);
	/* Every label at once: python starts slowly under TCG. */
	snprintf(path, sizeof(path), "%s/labels", self->dir);
	for (i = 0, n = 0; i < NR_LABELS; i++)
		n += snprintf(lines + n, sizeof(lines) - n, "%s\n", hex[i]);
	ASSERT_GT(sizeof(lines), (size_t)n);
	/* The file is made first: kt_write_text() writes an existing one. */
	ASSERT_EQ(0, kt_run_output(NULL, 0, ": > %s", path));
	ASSERT_EQ(0, kt_write_text(path, lines));
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   CHECK " json %u @%s < %s/status.json",
				   self->pool.id, path, self->dir)) TH_LOG("%s", out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   CHECK " list %u @%s < %s/list.json",
				   self->pool.id, path, self->dir)) TH_LOG("%s", out);
	/* CSV: a line of keys and one a tenant, all UTF-8. */
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " tenant list --csv %u | /usr/bin/python3 -c 'import sys,csv; r=list(csv.reader(sys.stdin.buffer.read().decode().splitlines())); sys.exit(len(r) != %d or r[0][0] != \"tenant_id\")'",
				   self->pool.id, NR_LABELS + 1)) TH_LOG("%s", out);
}

/*
 * metrics parses, in the text format and OpenMetrics, says the pool's
 * pages and a tenant's odd label; --output.
 */
TEST_F_TIMEOUT(ctl, metrics, 120)
{
	static const char label[] = "svc \"a\\b\"\nc\xff";
	struct kvpool_ctl_tenant t;
	char out[8192], hex[2 * sizeof(label) + 1], path[128];
	struct stat st;
	__u64 cg;
	size_t i;

	for (i = 0; i + 1 < sizeof(label); i++)
		sprintf(hex + 2 * i, "%02x", (unsigned char)label[i]);
	ASSERT_EQ(0, kt_self_cgroup_id(&cg));
	kt_tenant_init(&t, self->pool.id, cg, 0, 64, 0, 0, label);
	ASSERT_EQ(0, kt_tenant_set(self->pool.ctl, &t));
	ASSERT_EQ(0, kt_run_output(out, sizeof(out), KVPOOLCTL " metrics %u",
				   self->pool.id));
	/* The sample the report quotes: kvpool_pool_* and kvpool_tenant_*. */
	printf("# metrics sample:\n");
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
		printf("#   %s\n", l);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " metrics %u | " CHECK " metrics %u 512 %s",
				   self->pool.id, self->pool.id, hex))
		TH_LOG("%s", out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " metrics --output %s/kvpool.prom && " CHECK " metrics %u 512 %s < %s/kvpool.prom",
				   self->dir, self->pool.id, hex, self->dir))
		TH_LOG("%s", out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " metrics --openmetrics %u | " CHECK " openmetrics %u 512 %s",
				   self->pool.id, self->pool.id, hex))
		TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/kvpool.prom.tmp", self->dir);
	EXPECT_NE(0, stat(path, &st)) TH_LOG("%s left behind", path);
	/* Unwritable: exit 7, and no file there. */
	EXPECT_EQ(7, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " metrics --output %s/no/such/file",
				   self->dir)) TH_LOG("%s", out);
}

/*
 * A user who cannot open the pool: status works, shows no tenants and
 * says why; the control device's permissions refuse tenant list (5, and
 * the message names the device, not the capability).
 */
TEST_F_TIMEOUT(ctl, user_without_access, 120)
{
	char out[4096], dev[64];

	kt_dev_path(dev, sizeof(dev), self->pool.id);
	ASSERT_EQ(0, chmod(dev, 0600));
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   AS_NOBODY KVPOOLCTL " status %u", self->pool.id))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "is not open to you (mode 0600"))
		TH_LOG("%s", out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   AS_NOBODY KVPOOLCTL " status --json %u | " CHECK " none %u",
				   self->pool.id, self->pool.id)) TH_LOG("%s", out);
	EXPECT_EQ(5, kt_run_output(out, sizeof(out),
				   AS_NOBODY KVPOOLCTL " tenant list %u", self->pool.id))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "cannot open /dev/kvpool-control: permission denied"))
		TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "CAP_SYS_ADMIN")) TH_LOG("%s", out);
	/* info opens the pool: refused by its mode, said so. */
	EXPECT_EQ(5, kt_run_output(out, sizeof(out),
				   AS_NOBODY KVPOOLCTL " info %u", self->pool.id))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "permission denied (mode 0600"))
		TH_LOG("%s", out);
}

/*
 * A user who may open the pool sees their own tenant, from KVPOOL_STATS;
 * root without CAP_SYS_ADMIN is refused by the kernel, and told so.
 */
TEST_F_TIMEOUT(ctl, user_with_access, 120)
{
	char out[4096], dev[64];

	kt_dev_path(dev, sizeof(dev), self->pool.id);
	ASSERT_EQ(0, chmod(dev, 0666));
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   AS_NOBODY KVPOOLCTL " status --json %u | " CHECK " own %u 65534",
				   self->pool.id, self->pool.id)) TH_LOG("%s", out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   AS_NOBODY KVPOOLCTL " status %u", self->pool.id))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "tenants: only yours")) TH_LOG("%s", out);
	EXPECT_EQ(5, kt_run_output(out, sizeof(out),
				   NO_ADMIN KVPOOLCTL " tenant list %u", self->pool.id))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "operation not permitted: needs CAP_SYS_ADMIN"))
		TH_LOG("%s", out);
	EXPECT_EQ(5, kt_run_output(out, sizeof(out),
				   NO_ADMIN KVPOOLCTL " verify %u", self->pool.id))
		TH_LOG("%s", out);
	ASSERT_EQ(0, chmod(dev, 0600));
}

/*
 * A link to the pool's device, as udev's /dev/kvpool/by-name/NAME, names
 * the pool; a link to anything else, or to nothing, is no pool (exit 2).
 */
TEST_F_TIMEOUT(ctl, pool_by_link, 60)
{
	char out[4096], dev[64], link[128], want[32];

	kt_dev_path(dev, sizeof(dev), self->pool.id);
	snprintf(link, sizeof(link), "%s/by-name-a", self->dir);
	ASSERT_EQ(0, symlink(dev, link));
	snprintf(want, sizeof(want), "pool %u", self->pool.id);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out), KVPOOLCTL " info %s",
				   link)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("want '%s': %s", want, out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out), KVPOOLCTL " status %s",
				   link)) TH_LOG("%s", out);

	snprintf(link, sizeof(link), "%s/not-a-pool", self->dir);
	ASSERT_EQ(0, symlink("/dev/null", link));
	EXPECT_EQ(2, kt_run_output(out, sizeof(out), KVPOOLCTL " info %s",
				   link)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "not a pool")) TH_LOG("%s", out);
	snprintf(link, sizeof(link), "%s/dangling", self->dir);
	ASSERT_EQ(0, symlink("/dev/kvpool-none", link));
	EXPECT_EQ(2, kt_run_output(out, sizeof(out), KVPOOLCTL " info %s",
				   link)) TH_LOG("%s", out);
}

/* /sys/class/kvpool/@name as a number, or -1 (no such file: ABI 2). */
static long class_count(const char *name)
{
	char path[64], buf[32];

	snprintf(path, sizeof(path), "/sys/class/kvpool/%s", name);
	if (kt_read_text(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/*
 * In a forked child: open pool @id, hold @pages pages in a row, close
 * the file (its pages go to quarantine: this process used it and lives),
 * say so on @ready and live until a byte comes on @go.
 */
static void __attribute__((noreturn))
child_quarantine(__u32 id, __u32 pages, int ready, int go)
{
	struct kvpool_handle h;
	__u32 ids[64];
	int fd = kt_open_id(id, O_RDWR | O_CLOEXEC);

	if (fd < 0 || kt_row_alloc(fd, 1, &h, NULL) ||
	    kt_extend1(fd, h, pages * 16, ids, 64, NULL))
		_exit(1);
	close(fd);
	kt_child_signal(ready, 'q');
	kt_pipe_wait(go);
	_exit(0);
}

/*
 * A pool destroyed with pages in quarantine is retired: status counts it
 * and its chunk, in text and JSON, until its user exits; then neither.
 */
TEST_F_TIMEOUT(ctl, retired, 60)
{
	struct kvpool_arena_chunk ch = { .bytes = 64 * 4096 };
	long pools = class_count("retired_pools");
	long chunks = class_count("retired_chunks");
	int ctl = kt_ctl_open(), go[2], ready[2], i;
	char out[8192], want[96];
	__u32 id;
	pid_t pid;

	ASSERT_LE(0, pools) TH_LOG("no /sys/class/kvpool/retired_pools");
	ASSERT_LE(0, chunks);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kt_create(ctl, 0, 64, 16, 8, 64 * 16, &id));
	ch.fd = kt_host_memfd(ch.bytes);
	ASSERT_LE(0, ch.fd);
	ASSERT_EQ(0, kt_arena_set(ctl, id, KVPOOL_ARENA_HOST, 4096, &ch, 1,
				  NULL));
	close(ch.fd);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		child_quarantine(id, 12, ready[1], go[0]);
	close(go[0]);
	ASSERT_EQ('q', kt_pipe_wait(ready[0]));
	ASSERT_EQ(0, kt_destroy(ctl, id));

	snprintf(want, sizeof(want),
		 "\nretired pools: %ld, holding %ld chunk%s until", pools + 1,
		 chunks + 1, chunks + 1 == 1 ? "" : "s");
	EXPECT_EQ(0, kt_run_output(out, sizeof(out), KVPOOLCTL " status"))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("want '%s': %s", want, out);
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " status --json | " CHECK
				   " retired %ld %ld", pools + 1, chunks + 1))
		TH_LOG("%s", out);

	/* Its user gone, the pool's memory is let go: a wait, bounded. */
	kt_child_signal(go[1], 'g');
	EXPECT_EQ(pid, waitpid(pid, NULL, 0));
	for (i = 0; i < 2000 && class_count("retired_pools") != pools; i++)
		usleep(10 * 1000);
	EXPECT_EQ(pools, class_count("retired_pools"));
	EXPECT_EQ(chunks, class_count("retired_chunks"));
	EXPECT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " status --json | " CHECK
				   " retired %ld %ld", pools, chunks))
		TH_LOG("%s", out);
	if (!pools) {
		EXPECT_EQ(0, kt_run_output(out, sizeof(out),
					   KVPOOLCTL " status")) TH_LOG("%s", out);
		EXPECT_EQ(NULL, strstr(out, "retired")) TH_LOG("%s", out);
	}
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	close(ctl);
}

/* clients lists this process's client with the pages it holds. */
TEST_F_TIMEOUT(ctl, clients, 60)
{
	char out[4096], want[64];
	int fd;

	fd = kt_pool_open(_metadata, &self->pool);
	kt_new_row(_metadata, fd, 5 * 16, 0);
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " clients --csv -o pool_id,pid,rows,pages %u",
				   self->pool.id)) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "pool_id,pid,rows,pages\n%u,%d,1,5\n",
		 self->pool.id, getpid());
	EXPECT_STREQ(want, out);
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   KVPOOLCTL " clients --units tokens -o pages %u",
				   self->pool.id)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "   80\n")) TH_LOG("%s", out);
	kt_pool_close(&self->pool, fd);
}

/* The pool's line of a top screen: its pages, used pages, and rate. */
static int top_pool_line(const char *screen, unsigned int id,
			 unsigned int *used, char *rate, size_t len)
{
	const char *l;
	unsigned int p, pages;
	char r[32];

	for (l = screen; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (sscanf(l, " %u %u %u %31s", &p, &pages, used, r) == 4 &&
		    p == id && pages == 512) {
			snprintf(rate, len, "%s", r);
			return 0;
		}
	}
	return -1;
}

#define TMUX	"tmux -S %s/tmux"
/* Looks at top's screen, 0.2 s apart, before a wait counts as a hang. */
#define TOP_POLLS	150

/* top in tmux: the pool shows, its use and rate follow a client; q quits. */
TEST_F_TIMEOUT(ctl, top_tmux, 120)
{
	char screen[8192], rate[32], out[256];
	unsigned int used0, used1;
	int fd, i;

	if (access("/dev/pts/ptmx", F_OK))
		kt_run_output(NULL, 0, "mkdir -p /dev/pts && mount -t devpts devpts /dev/pts");
	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   TMUX " new-session -d -s top -x 160 -y 40 '" KVPOOLCTL " top -d 2 %u'",
				   self->dir, self->pool.id)) TH_LOG("%s", out);
	/*
	 * The first screen. However long a busy machine takes to start
	 * tmux and top, it comes; the bound only stops a hang.
	 */
	for (i = 0; i < TOP_POLLS; i++) {
		kt_sleep_ms(200);
		ASSERT_EQ(0, kt_run_output(screen, sizeof(screen),
					   TMUX " capture-pane -p -t top",
					   self->dir));
		if (!top_pool_line(screen, self->pool.id, &used0, rate,
				   sizeof(rate)))
			break;
	}
	ASSERT_LT(i, TOP_POLLS) TH_LOG("top drew no pool line: %s", screen);
	EXPECT_NE(NULL, strstr(screen, "kvpoolctl top")) TH_LOG("%s", screen);

	kt_new_row(_metadata, fd, 40 * 16, 0);
	/*
	 * The screen after the rows came shows them, and a rate above 0
	 * (the next ones +0.0 again): screens 2 s apart, looked at every
	 * 0.2 s, so a capture would have to take 2 s to miss it. The bound
	 * only stops a hang: load delays the screen, it cannot hide it.
	 */
	for (i = 0; i < TOP_POLLS; i++) {
		kt_sleep_ms(200);
		ASSERT_EQ(0, kt_run_output(screen, sizeof(screen),
					   TMUX " capture-pane -p -t top",
					   self->dir));
		if (!top_pool_line(screen, self->pool.id, &used1, rate,
				   sizeof(rate)) && used1 == used0 + 40 &&
		    rate[0] == '+' && strcmp(rate, "+0.0"))
			break;
	}
	printf("# top screen (tmux capture-pane), %d ms after the client took 40 pages:\n",
	       (i + 1) * 200);
	snprintf(out, sizeof(out), "%s", rate);
	for (char *l = strtok(screen, "\n"); l; l = strtok(NULL, "\n"))
		printf("#   %s\n", l);
	EXPECT_EQ(used0 + 40, used1);
	EXPECT_LT(i, TOP_POLLS) TH_LOG("no screen showed a rate above +0.0 (last '%s')",
				out);
	EXPECT_NE(0, strtod(out, NULL)) TH_LOG("rate '%s'", out);

	ASSERT_EQ(0, kt_run_output(out, sizeof(out),
				   TMUX " send-keys -t top q", self->dir));
	for (i = 0; i < TOP_POLLS; i++) {
		if (kt_run_output(NULL, 0, TMUX " has-session -t top",
				  self->dir))
			break;
		kt_sleep_ms(200);
	}
	EXPECT_LT(i, TOP_POLLS) TH_LOG("top did not quit on q");
	kt_run_output(NULL, 0, TMUX " kill-server", self->dir);
	kt_pool_close(&self->pool, fd);
}

TEST_HARNESS_MAIN
