// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-sim: several tenants' inference schedulers share one GPU's KV
 * pool through kvpool, for a minute; one of them is SIGKILLed midway.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Run as root on an idle pool (tools/sim.sh boots a VM for it). This
 * process is the administrator and the monitor:
 *
 *  - it makes each tenant a cgroup v2 group (mounting cgroup2 if need
 *    be; uids alone if it cannot) and a uid, sets its limit and guarantee
 *    (KVPOOL_CTL_TENANT_SET) and the pool's pressure watermarks, and opens
 *    the pool device to everyone (it is 0600 root);
 *  - it forks the scheduler processes (sched.c): each joins its tenant's
 *    cgroup and switches uid BEFORE it opens the pool, since a client's
 *    tenant is read at open; "docs" runs a prefill process that hands
 *    every prefilled row to a decode process (KVPOOL_EXPORT, SCM_RIGHTS
 *    over a Unix socket, KVPOOL_IMPORT);
 *  - it samples the tenants (KVPOOL_CTL_TENANT_LIST), the pool (sysfs)
 *    and the processes' counters 4 times a second into a CSV file, draws
 *    a live view (or logs a line every 5 s), and runs KVPOOL_VERIFY every
 *    5 s;
 *  - midway it SIGKILLs one tenant's process and measures how soon the
 *    pool has its pages back, then starts a new one;
 *  - at 3/4 of the run it halves the last tenant's limit, below what the
 *    tenant holds: the kernel refuses its growth (EDQUOT) and asks it
 *    back (pressure), and its scheduler evicts and retracts until it
 *    fits;
 *  - at the end it tells every process to give everything back and
 *    exit, checks the pool is whole (verify clean, free == nr_pages -
 *    reserved) and prints the summary.
 *
 * Files in the results folder: kvpool-sim.csv (time series),
 * kvpool-sim-events.csv, kvpool-sim-meta.gp (for plot.gp),
 * kvpool-sim-summary.txt.
 *
 * Exit status: 0 if every check held, 1 if one failed, 2 on a usage
 * error, 3 if the simulation could not start (module, pool, privilege).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "sim.h"

/*
 * The tenants. Rates are for a 400k-token pool (SIM_REF_TOKENS) and
 * scale with the pool; steps are 25 ms.
 */
const struct sim_tenant_cfg sim_tenants[SIM_MAX_TENANTS] = {
	{
		/*
		 * Chat: shared system prompts, multi-turn, some streaming
		 * sessions kept in slots, speculative decoding.
		 */
		.name = "chat", .uid = 1001, .max_pct = 60, .min_pct = 30,
		.wl = {
			.sess_rate = 20, .shared_median = 1200,
			.sess = {
				.nshared = 6, .p_shared = 0.9,
				.shared_first = true,
				.user = { 150, 1.0, 4000 },
				.out = { 200, 0.8, 2000 },
				.p_multi = 0.5, .turns_max = 6,
				.p_stream = 0.4,
			},
			.think_s = 2.0, .draft = 3, .accept = 0.6,
			.max_running = 256, .prefill_budget = 2048,
		},
	},
	{
		/*
		 * Long documents, several questions on each; a prefill
		 * process ingests a document and hands the row to the
		 * decode process, which answers and keeps the document in
		 * its prefix cache for the follow-up questions.
		 */
		.name = "docs", .uid = 1002, .max_pct = 50, .min_pct = 20,
		.split = true,
		.wl = {
			.sess_rate = 0.7,
			.sess = {
				.shared_first = true,
				.first = { 8000, 0.6, 48000 },
				.user = { 60, 0.6, 400 },
				.out = { 200, 0.6, 1000 },
				.p_multi = 0.8, .turns_max = 5,
			},
			.think_s = 1.0,
			.max_running = 64, .prefill_budget = 8192,
		},
	},
	{
		/*
		 * Offline batch: long outputs, a third with sliding-window
		 * attention; no guarantee.
		 */
		.name = "batch", .uid = 1003, .max_pct = 30, .min_pct = 0,
		.wl = {
			.sess_rate = 6, .shared_median = 600,
			.sess = {
				.nshared = 2, .p_shared = 0.8,
				.shared_first = true,
				.user = { 400, 0.8, 8000 },
				.out = { 600, 0.6, 4000 },
				.p_swa = 0.3,
			},
			.swa_window = 2048,
			.max_running = 192, .prefill_budget = 4096,
		},
	},
};

static const char *prog = "kvpool-sim";

static struct {
	double duration;
	u64 seed;
	u32 ntenants;
	double kill_at;		/* < 0: duration / 2; 0: no kill */
	double restart_after;
	double squeeze_at;	/* < 0: 3/4 of the duration; 0: never */
	u32 kill_tenant;
	double step_ms;
	double sample_ms;
	const char *results;
	bool live;
	u32 pool;
	bool verbose;
	u64 page_bytes;		/* the host arena's pages; 0: no arena */
} opt = {
	.duration = 60, .seed = 1, .ntenants = 3, .kill_at = -1,
	.squeeze_at = -1,
	.restart_after = 2.5, .step_ms = 25, .sample_ms = 250, .live = true,
	.page_bytes = 4096,
};

/* The arena the monitor gave the pool (setup()). */
#define SIM_ARENA_CHUNKS	4U
static u64 arena_bytes;

static void __printf(1, 2) msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void sleep_s(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

/* ---- state -------------------------------------------------------------- */

struct tenant {
	const struct sim_tenant_cfg *cfg;
	u32 id;			/* the kernel's tenant id */
	bool configured;	/* we set its limits */
	u64 cgroup_id;
	char cgroup[96];	/* its folder, or "" */
	u32 max_pages, min_pages;
	u32 max0;		/* the limit it started with */
	struct kvpool_tenant_info now;	/* last sample */
	u64 sum_pages;
	u32 peak_pages;
	u32 gen;		/* processes started after the first */
	u64 tok_prev[8];	/* gen_tokens, last 8 samples (2 s) */
};

static struct tenant T[SIM_MAX_TENANTS];
static struct sim_shared *sh;
static struct kvpool *mon;	/* the monitor's own client: verify, stats */
static struct kvpool_info pinfo;
static char pool_path[32];
static bool have_cgroups;
static double t0;
static u64 nsamples;
static volatile sig_atomic_t interrupted;

static struct {
	double t;
	char text[160];
} events[16];
static u32 nevents;

static FILE *csv, *evf;
static u32 low_wmark, high_wmark;
static struct kvpool_stats pst;	/* last pool sample */
static int last_verify = -1;
static double last_verify_t;
static u32 verify_bad;
static bool failed;

static void __printf(1, 2) event(const char *fmt, ...)
{
	double t = now_s() - t0;
	va_list ap;
	char buf[160];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (nevents == ARRAY_SIZE(events)) {
		memmove(events, events + 1, sizeof(events) - sizeof(events[0]));
		nevents--;
	}
	events[nevents].t = t;
	snprintf(events[nevents].text, sizeof(events[nevents].text), "%s", buf);
	nevents++;
	if (evf) {
		fprintf(evf, "%.2f,\"%s\"\n", t, buf);
		fflush(evf);
	}
	if (!opt.live)
		printf("[%6.1fs] %s\n", t, buf);
}

/* ---- setup -------------------------------------------------------------- */

static bool write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s);
}

/* A cgroup v2 group per tenant; false if cgroup2 is not to be had. */
static bool setup_cgroups(void)
{
	const char *root = "/sys/fs/cgroup";
	char path[128];
	struct stat st;
	u32 i;

	snprintf(path, sizeof(path), "%s/cgroup.procs", root);
	if (access(path, F_OK) &&
	    mount("cgroup2", root, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL)) {
		msg("cannot mount cgroup2 on %s (%s): tenants by uid only",
		    root, strerror(errno));
		return false;
	}
	for (i = 0; i < opt.ntenants; i++) {
		snprintf(T[i].cgroup, sizeof(T[i].cgroup), "%s/kvpool-sim-%s",
			 root, T[i].cfg->name);
		if ((mkdir(T[i].cgroup, 0755) && errno != EEXIST) ||
		    stat(T[i].cgroup, &st)) {
			msg("cannot make cgroup %s (%s): tenants by uid only",
			    T[i].cgroup, strerror(errno));
			while (i + 1 > 0)
				T[i--].cgroup[0] = 0;
			return false;
		}
		T[i].cgroup_id = st.st_ino;
	}
	return true;
}

/*
 * Leave the pool as we found it: our tenants without limits (a tenant
 * the administrator configured stays until the pool goes, and a
 * guarantee would keep reserving pages), default watermarks, no cgroups.
 */
static void cleanup(void)
{
	u32 i;

	for (i = 0; i < opt.ntenants; i++) {
		struct kvpool_ctl_tenant t = {
			.flags = KVPOOL_TENANT_BY_ID, .tenant_id = T[i].id,
		};

		if (T[i].configured && kvpool_tenant_set(opt.pool, &t) < 0)
			msg("tenant %s: could not lift its limits",
			    T[i].cfg->name);
		if (T[i].cgroup[0])
			rmdir(T[i].cgroup);
	}
	kvpool_set_wmark(opt.pool, pinfo.out_nr_pages / 32,
			 pinfo.out_nr_pages / 16);
}

static int setup(void)
{
	struct kvpool_stats st;
	u32 i, total_min = 0;
	int ret;

	if (geteuid()) {
		msg("run as root: it sets tenant limits and switches uids");
		return EXIT_SETUP;
	}
	ret = kvpool_pool_status(opt.pool, &pinfo, &st);
	if (ret < 0) {
		msg("pool %u: %s", opt.pool, ret == -ENODEV ?
		    "no such pool (is the kvpool module loaded?)" :
		    kvpool_strerror(ret));
		return EXIT_SETUP;
	}
	if (st.out_nr_clients || st.out_free_pages + st.out_reserved_pages !=
	    pinfo.out_nr_pages) {
		msg("pool %u is in use (%u clients, %u of %u pages free): want an idle pool",
		    opt.pool, st.out_nr_clients, st.out_free_pages,
		    pinfo.out_nr_pages);
		return EXIT_SETUP;
	}
	snprintf(pool_path, sizeof(pool_path), "/dev/kvpool%u", opt.pool);
	if (opt.page_bytes) {
		u64 ch[SIM_ARENA_CHUNKS];
		u32 ei = 0, k;

		/*
		 * Host memory for the pages, made here and handed to the
		 * kernel: every scheduler maps it, and a page one process
		 * wrote reads the same in another.
		 */
		ret = kvpool_arena_plan_host(pinfo.out_nr_pages,
					     opt.page_bytes, SIM_ARENA_CHUNKS,
					     ch);
		if (!ret)
			ret = kvpool_arena_create_host(opt.pool, opt.page_bytes,
						       SIM_ARENA_CHUNKS, &ei);
		if (ret < 0) {
			msg("arena of %llu-byte pages: %s",
			    (unsigned long long)opt.page_bytes,
			    kvpool_strerror(ret));
			return EXIT_SETUP;
		}
		for (k = 0; k < SIM_ARENA_CHUNKS; k++)
			arena_bytes += ch[k];
	}
	/* The device is root's; the tenants' uids must open it. */
	if (chmod(pool_path, 0666)) {
		msg("chmod %s: %s", pool_path, strerror(errno));
		return EXIT_SETUP;
	}
	for (i = 0; i < opt.ntenants; i++) {
		T[i].cfg = &sim_tenants[i];
		T[i].cgroup_id = 1;	/* the root cgroup, without cgroup2 */
	}
	have_cgroups = setup_cgroups();
	for (i = 0; i < opt.ntenants; i++) {
		struct kvpool_ctl_tenant t = {
			.cgroup_id = T[i].cgroup_id, .uid = T[i].cfg->uid,
			.max_pages = (u32)((u64)pinfo.out_nr_pages *
					   T[i].cfg->max_pct / 100),
			.min_pages = (u32)((u64)pinfo.out_nr_pages *
					   T[i].cfg->min_pct / 100),
		};

		snprintf(t.label, sizeof(t.label), "%s", T[i].cfg->name);
		ret = kvpool_tenant_set(opt.pool, &t);
		if (ret < 0) {
			msg("tenant %s: %s", T[i].cfg->name,
			    kvpool_strerror(ret));
			return EXIT_SETUP;
		}
		T[i].id = (u32)ret;
		T[i].configured = true;
		T[i].max_pages = T[i].max0 = t.max_pages;
		T[i].min_pages = t.min_pages;
		total_min += t.min_pages;
	}
	(void)total_min;
	/*
	 * Caches fill the pool; ask them back a little earlier than the
	 * defaults (1/32, 1/16) so that the pool keeps room for bursts.
	 */
	low_wmark = pinfo.out_nr_pages / 20;
	high_wmark = pinfo.out_nr_pages / 10;
	ret = kvpool_set_wmark(opt.pool, low_wmark, high_wmark);
	if (ret < 0) {
		msg("watermarks: %s", kvpool_strerror(ret));
		return EXIT_SETUP;
	}
	ret = kvpool_open(pool_path, &mon);
	if (ret < 0) {
		msg("open %s: %s", pool_path, kvpool_strerror(ret));
		return EXIT_SETUP;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		msg("mmap: %s", strerror(errno));
		return EXIT_SETUP;
	}
	memset(sh, 0, sizeof(*sh));
	sh->ntenants = opt.ntenants;
	return 0;
}

/* ---- processes ---------------------------------------------------------- */

static const char *role_name(int role)
{
	return role == ROLE_PREFILL ? "prefill" :
	       role == ROLE_DECODE ? "decode" : "server";
}

static void __noreturn child(struct sim_proc *p, int sock,
					     int need_fd, pid_t parent)
{
	const struct sim_tenant_cfg *cfg = T[p->tenant].cfg;
	struct sim_sched_args a = {
		.sh = sh, .me = p, .cfg = cfg, .tenant = p->tenant,
		.role = p->role, .gen = p->gen, .seed = opt.seed,
		.pool_path = pool_path, .t0 = t0, .step_s = opt.step_ms / 1000,
		.scale = (double)pinfo.out_nr_pages * pinfo.out_page_tokens /
			 SIM_REF_TOKENS,
		.sock = sock, .need_fd = need_fd, .verbose = opt.verbose,
		/* A split tenant: the documents being read, the answers. */
		.share = p->role == ROLE_PREFILL ? 0.3 :
			 p->role == ROLE_DECODE ? 0.7 : 1.0,
	};
	char path[128], pid[16], name[16];
	uid_t uid = cfg->uid;

	int fd;

	signal(SIGINT, SIG_IGN);
	/*
	 * Nothing of the monitor's: not its pool client, not the other
	 * process's ends of the socket and the pipe.
	 */
	for (fd = 3; fd < 1024; fd++)
		if (fd != sock && fd != need_fd)
			close(fd);
	/* The tenant is read at open: cgroup and uid first. */
	if (T[p->tenant].cgroup[0]) {
		snprintf(path, sizeof(path), "%s/cgroup.procs",
			 T[p->tenant].cgroup);
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (!write_str(path, pid)) {
			snprintf(p->err, sizeof(p->err), "join %s: %s",
				 T[p->tenant].cgroup, strerror(errno));
			sim_store(p->state, PROC_FAILED);
			_exit(1);
		}
	}
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid)) {
		snprintf(p->err, sizeof(p->err), "switch to uid %u: %s",
			 (unsigned int)uid, strerror(errno));
		sim_store(p->state, PROC_FAILED);
		_exit(1);
	}
	/* After the uid switch, which clears it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	snprintf(name, sizeof(name), "sim-%s-%.4s", cfg->name,
		 role_name(p->role));
	prctl(PR_SET_NAME, name);
	_exit(sim_sched_main(&a));
}

static struct sim_proc *spawn(u32 tenant, enum sim_role role, int sock,
			      int need_fd)
{
	struct sim_proc *p = NULL;
	pid_t pid, parent = getpid();
	u32 i;

	for (i = 0; i < SIM_MAX_PROCS; i++)
		if (sh->proc[i].state == PROC_FREE) {
			p = &sh->proc[i];
			break;
		}
	if (!p) {
		msg("too many processes");
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	p->state = PROC_STARTING;
	p->tenant = (int)tenant;
	p->role = role;
	p->gen = T[tenant].gen;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		msg("fork: %s", strerror(errno));
		p->state = PROC_FREE;
		return NULL;
	}
	if (!pid)
		child(p, sock, need_fd, parent);
	p->pid = pid;
	return p;
}

static bool start_all(void)
{
	u32 i;

	for (i = 0; i < opt.ntenants; i++) {
		int sv[2], pfd[2];

		if (!T[i].cfg->split) {
			if (!spawn(i, ROLE_FULL, -1, -1))
				return false;
			continue;
		}
		/*
		 * Rows go prefill -> decode over a Unix socket; the prefill
		 * asks the decode server for room over a pipe. All
		 * close-on-exec; each side's fds are the only ones it needs.
		 */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ||
		    pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
			msg("socketpair: %s", strerror(errno));
			return false;
		}
		if (!spawn(i, ROLE_PREFILL, sv[0], pfd[1]) ||
		    !spawn(i, ROLE_DECODE, sv[1], pfd[0]))
			return false;
		close(sv[0]);
		close(sv[1]);
		close(pfd[0]);
		close(pfd[1]);
	}
	return true;
}

static struct sim_proc *proc_of_pid(pid_t pid)
{
	u32 i;

	for (i = 0; i < SIM_MAX_PROCS; i++)
		if (sh->proc[i].state != PROC_FREE && sh->proc[i].pid == pid)
			return &sh->proc[i];
	return NULL;
}

static bool alive(const struct sim_proc *p)
{
	int s = sim_load(p->state);

	return s == PROC_STARTING || s == PROC_RUNNING || s == PROC_DRAINING;
}

/* Notes children that ended; returns how many are still running. */
static u32 reap(bool block)
{
	int status;
	pid_t pid;
	u32 i, n = 0;

	while ((pid = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
		struct sim_proc *p = proc_of_pid(pid);

		block = false;
		if (!p)
			continue;
		if (p->state == PROC_KILLED)
			continue;
		if (WIFEXITED(status) && !WEXITSTATUS(status) &&
		    p->state == PROC_DONE)
			continue;
		if (p->state != PROC_FAILED) {
			snprintf(p->err, sizeof(p->err), "%s %d",
				 WIFSIGNALED(status) ? "killed by signal" :
				 "exited with", WIFSIGNALED(status) ?
				 WTERMSIG(status) : WEXITSTATUS(status));
			p->state = PROC_FAILED;
		}
		event("FAILED: %s %s (pid %d): %s", T[p->tenant].cfg->name,
		      role_name(p->role), (int)pid, p->err);
		failed = true;
	}
	for (i = 0; i < SIM_MAX_PROCS; i++)
		n += alive(&sh->proc[i]);
	return n;
}

/* ---- sampling ----------------------------------------------------------- */

static u32 sample_tenants(void)
{
	struct kvpool_tenant_info ti[64];
	int n, i;
	u32 j;

	n = kvpool_tenant_list(opt.pool, ti, 64);
	if (n < 0) {
		msg("tenant list: %s", kvpool_strerror(n));
		return 0;
	}
	for (j = 0; j < opt.ntenants; j++)
		for (i = 0; i < n && i < 64; i++)
			if (ti[i].tenant_id == T[j].id)
				T[j].now = ti[i];
	return (u32)n;
}

struct tsum {
	u64 arrived, finished, gen_tokens, prompt_tokens, hit_tokens;
	u64 retractions, pressure_events, ask_pages, evicted_pages;
	u64 slot_drops, exports, imports, enospc, edquot, steps, late;
	u32 running, waiting, slots, procs;
};

static void tenant_sum(u32 t, struct tsum *s)
{
	u32 i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < SIM_MAX_PROCS; i++) {
		struct sim_proc *p = &sh->proc[i];

		if (p->state == PROC_FREE || p->tenant != (int)t)
			continue;
		s->arrived += sim_load(p->arrived);
		s->finished += sim_load(p->finished);
		s->gen_tokens += sim_load(p->gen_tokens);
		s->prompt_tokens += sim_load(p->prompt_tokens);
		s->hit_tokens += sim_load(p->hit_tokens);
		s->retractions += sim_load(p->retractions);
		s->pressure_events += sim_load(p->pressure_events);
		s->ask_pages += sim_load(p->ask_pages);
		s->evicted_pages += sim_load(p->evicted_pages);
		s->slot_drops += sim_load(p->slot_drops);
		s->exports += sim_load(p->exports);
		s->imports += sim_load(p->imports);
		s->enospc += sim_load(p->enospc);
		s->edquot += sim_load(p->edquot);
		s->steps += sim_load(p->steps);
		s->late += sim_load(p->late_steps);
		s->procs++;
		if (!alive(p))
			continue;
		s->running += sim_load(p->running);
		s->waiting += sim_load(p->waiting);
		s->slots += sim_load(p->slots);
	}
}

static void sample(double t)
{
	u32 i;

	sample_tenants();
	kvpool_stats(mon, &pst);
	nsamples++;
	fprintf(csv, "%.2f,%u,%u,%u,%u", t, pst.out_free_pages,
		pst.out_export_pages, pst.out_cache_evictable,
		pst.out_cache_pinned);
	for (i = 0; i < opt.ntenants; i++) {
		struct tenant *te = &T[i];
		struct tsum s;

		tenant_sum(i, &s);
		te->sum_pages += te->now.pages;
		if (te->now.pages > te->peak_pages)
			te->peak_pages = te->now.pages;
		memmove(te->tok_prev + 1, te->tok_prev,
			sizeof(te->tok_prev) - sizeof(te->tok_prev[0]));
		te->tok_prev[0] = s.gen_tokens;
		fprintf(csv, ",%u,%u,%u,%u,%u,%llu,%u", te->now.pages,
			te->now.cache_pages, te->now.rows, te->now.ask_pages,
			s.running, (unsigned long long)s.retractions,
			te->now.max_pages);
	}
	fputc('\n', csv);
	fflush(csv);
}

/*
 * A dead client's pages are held back until its processes are gone, and
 * come back a few milliseconds after: waits (up to 5 s) for none to be.
 * Returns the seconds it waited, or -1 if some still are.
 */
static double wait_quarantine(void)
{
	struct kvpool_stats st;
	double t0 = now_s();

	while (!kvpool_stats(mon, &st) && st.out_quarantine_pages) {
		if (now_s() - t0 > 5)
			return -1;
		usleep(1000);
	}
	return now_s() - t0;
}

static void do_verify(double t)
{
	int v = kvpool_verify(mon, NULL);

	if (v < 0) {
		msg("verify: %s", kvpool_strerror(v));
		failed = true;
		return;
	}
	last_verify = v;
	last_verify_t = t;
	if (v) {
		verify_bad += (u32)v;
		event("VERIFY: %d invariants broken (see the kernel log)", v);
		failed = true;
	}
}

/* ---- the live view ------------------------------------------------------ */

#define BAR_W	60

static const char *const color[SIM_MAX_TENANTS] = {
	"\033[1;34m", "\033[1;32m", "\033[1;35m",
};
#define C_OFF	"\033[0m"
#define C_DIM	"\033[2m"
#define C_RED	"\033[1;31m"

struct buf {
	char *p;
	size_t len, cap;
};

static void __printf(2, 3) bput(struct buf *b,
							const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap * 2 + (size_t)(n > 0 ? n : 0) + 256;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	b->len += (size_t)n;
}

/* Ends a line: clear what an earlier frame left to its right. */
static void eol(struct buf *b)
{
	bput(b, "\033[K\n");
}

static u32 cell(u64 pages)
{
	return (u32)((pages * BAR_W + pinfo.out_nr_pages / 2) /
		     pinfo.out_nr_pages);
}

static void bar(struct buf *b, u32 i)
{
	const struct tenant *te = &T[i];
	char c[BAR_W + 1];
	u32 rowc = cell(te->now.pages - te->now.cache_pages);
	u32 all = cell(te->now.pages), k, g, m;

	for (k = 0; k < BAR_W; k++)
		c[k] = k < rowc ? '#' : k < all ? '=' : ' ';
	c[BAR_W] = 0;
	g = te->min_pages ? cell(te->min_pages) : 0;
	m = te->max_pages ? cell(te->max_pages) : BAR_W;
	bput(b, "%s%-6s" C_OFF "%s", color[i], te->cfg->name, color[i]);
	for (k = 0; k < BAR_W; k++) {
		if (g && k == g - 1)
			bput(b, C_OFF "|%s", color[i]);
		else if (m < BAR_W && k == m - 1)
			bput(b, C_OFF "]%s", color[i]);
		else
			bput(b, "%c", c[k]);
	}
	bput(b, C_OFF " %3u%%", (te->now.pages * 100 + pinfo.out_nr_pages / 2) /
	     pinfo.out_nr_pages);
	eol(b);
}

static void render(double t, double kill_t, bool killed_now)
{
	static struct buf b;
	u32 i, nfree;
	struct tsum s;

	b.len = 0;
	bput(&b, "\033[H");
	bput(&b, "\033[1mkvpool-sim\033[0m  %5.1fs / %.0fs   %s: %u pages x %u tokens, %u rows",
	     t, opt.duration, pool_path, pinfo.out_nr_pages,
	     pinfo.out_page_tokens, pinfo.out_nr_rows);
	eol(&b);
	bput(&b, "free %6u pages  (asks below %u, up to %u)  exported %u  verify ",
	     pst.out_free_pages, low_wmark, high_wmark, pst.out_export_pages);
	if (last_verify < 0)
		bput(&b, "-");
	else
		bput(&b, "%s%d" C_OFF " @%.0fs", last_verify ? C_RED : "",
		     last_verify, last_verify_t);
	eol(&b);
	bput(&b, "tenants: %s", have_cgroups ? "cgroup v2 + uid" : "uid (no cgroup2)");
	if (kill_t > 0)
		bput(&b, "   kill: %s at %.0fs%s", T[opt.kill_tenant].cfg->name,
		     kill_t, killed_now ? C_RED "  << KILLED" C_OFF : "");
	eol(&b);
	eol(&b);
	bput(&b, C_DIM "tenant  pages  limit  guar. cache   run  wait  retr press   ask    done  tok/s" C_OFF);
	eol(&b);
	for (i = 0; i < opt.ntenants; i++) {
		const struct tenant *te = &T[i];
		double tps = (double)(te->tok_prev[0] - te->tok_prev[7]) /
			     (7 * opt.sample_ms / 1000);

		tenant_sum(i, &s);
		bput(&b, "%s%-6s" C_OFF " %6u %6u %6u %4u%% %5u %5u %5llu %5llu %5u %7llu %6.0f",
		     color[i], te->cfg->name, te->now.pages, te->max_pages,
		     te->min_pages,
		     te->now.pages ? te->now.cache_pages * 100 / te->now.pages : 0,
		     s.running, s.waiting, (unsigned long long)s.retractions,
		     (unsigned long long)s.pressure_events, te->now.ask_pages,
		     (unsigned long long)s.finished,
		     nsamples > 8 ? tps : 0.0);
		eol(&b);
	}
	eol(&b);
	bput(&b, C_DIM "pages 0%*s%u" C_OFF, BAR_W - 1, "", pinfo.out_nr_pages);
	eol(&b);
	for (i = 0; i < opt.ntenants; i++)
		bar(&b, i);
	nfree = cell(pst.out_free_pages);
	bput(&b, "free  ");
	for (i = 0; i < BAR_W; i++)
		bput(&b, "%c", i < nfree ? '.' : ' ');
	bput(&b, " %3u%%", (pst.out_free_pages * 100 + pinfo.out_nr_pages / 2) /
	     pinfo.out_nr_pages);
	eol(&b);
	bput(&b, C_DIM "      # rows and slots   = prefix cache   | guarantee   ] limit" C_OFF);
	eol(&b);
	eol(&b);
	for (i = nevents > 5 ? nevents - 5 : 0; i < nevents; i++) {
		bput(&b, "%6.1fs  %.70s", events[i].t, events[i].text);
		eol(&b);
	}
	bput(&b, "\033[J");
	fwrite(b.p, 1, b.len, stdout);
	fflush(stdout);
}

static void log_line(double t)
{
	struct tsum s;
	u32 i;

	printf("[%6.1fs] free %5u", t, pst.out_free_pages);
	for (i = 0; i < opt.ntenants; i++) {
		tenant_sum(i, &s);
		printf(" | %s %5u/%u run %u retr %llu", T[i].cfg->name,
		       T[i].now.pages, T[i].max_pages, s.running,
		       (unsigned long long)s.retractions);
	}
	printf("\n");
	fflush(stdout);
}

/* ---- the kill ----------------------------------------------------------- */

static struct sim_proc *victim(void)
{
	u32 i;

	for (i = 0; i < SIM_MAX_PROCS; i++) {
		struct sim_proc *p = &sh->proc[i];

		if (p->tenant == (int)opt.kill_tenant && alive(p) &&
		    p->role != ROLE_PREFILL)
			return p;
	}
	return NULL;
}

static double kill_one(void)
{
	struct tenant *te = &T[opt.kill_tenant];
	struct sim_proc *p = victim();
	u32 pages, rows, slots;
	double t_kill, ms;
	int status;

	if (!p) {
		event("no %s process to kill", te->cfg->name);
		return 0;
	}
	sample_tenants();
	pages = te->now.pages;
	rows = te->now.rows;
	slots = sim_load(p->slots);
	t_kill = now_s();
	p->state = PROC_KILLED;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	ms = (now_s() - t_kill) * 1000;
	sample_tenants();
	event("SIGKILL %s (pid %d): held %u pages, %u rows (%u in slots)",
	      te->cfg->name, p->pid, pages, rows, slots);
	event("  reaped in %.1f ms: %s holds %u pages, %u rows; pool free %u, %u held back",
	      ms, te->cfg->name, te->now.pages, te->now.rows,
	      (kvpool_stats(mon, &pst), pst.out_free_pages),
	      pst.out_quarantine_pages);
	if (te->now.pages || te->now.rows) {
		event("FAILED: the killed process's pages were not all reclaimed");
		failed = true;
	}
	ms = wait_quarantine() * 1000;
	if (ms < 0) {
		event("FAILED: the killed process's pages were still held back 5 s after it was reaped");
		failed = true;
	} else {
		event("  its pages free again %.1f ms after the kill (held back until the process was gone)",
		      (now_s() - t_kill) * 1000);
	}
	return t_kill - t0;
}

/*
 * The administrator halves the last tenant's limit, below what it holds:
 * nothing is taken from it, but its growth is refused (EDQUOT) and its
 * clients are asked to shrink (KVPOOL_PRESSURE_OVER_MAX) until it fits.
 */
static void squeeze(void)
{
	struct tenant *te = &T[opt.ntenants - 1];
	struct kvpool_ctl_tenant t = {
		.flags = KVPOOL_TENANT_BY_ID, .tenant_id = te->id,
		.max_pages = te->max_pages / 2, .min_pages = te->min_pages,
	};
	int ret;

	if (t.min_pages > t.max_pages)
		t.min_pages = t.max_pages;
	sample_tenants();
	ret = kvpool_tenant_set(opt.pool, &t);
	if (ret < 0) {
		event("FAILED: lowering %s's limit: %s", te->cfg->name,
		      kvpool_strerror(ret));
		failed = true;
		return;
	}
	event("admin: %s limit %u -> %u pages; it holds %u", te->cfg->name,
	      te->max_pages, t.max_pages, te->now.pages);
	te->max_pages = t.max_pages;
	te->min_pages = t.min_pages;
}

/* ---- the end ------------------------------------------------------------ */

static void fmt_count(char *buf, size_t len, u64 v)
{
	if (v >= 10000000)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else if (v >= 100000)
		snprintf(buf, len, "%.0fk", v / 1e3);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void summary(FILE *f, double secs)
{
	static const char *const end[] = {
		[PROC_FREE] = "-", [PROC_STARTING] = "start",
		[PROC_RUNNING] = "run", [PROC_DRAINING] = "drain",
		[PROC_DONE] = "done", [PROC_FAILED] = "FAIL",
		[PROC_KILLED] = "killed",
	};
	u32 i;

	fprintf(f, "\nkvpool-sim: %.0f s, seed %llu, %s: %u pages x %u tokens (%u tokens), %u rows\n\n",
		secs, (unsigned long long)opt.seed, pool_path,
		pinfo.out_nr_pages, pinfo.out_page_tokens,
		pinfo.out_nr_pages * pinfo.out_page_tokens, pinfo.out_nr_rows);
	fprintf(f, "tenant  limit  guar.  finished  tokens   peak    avg  hit%%  retract  asked  evicted  exp/imp\n");
	for (i = 0; i < opt.ntenants; i++) {
		const struct tenant *te = &T[i];
		char fin[16], tok[16], ask[16], ev[16];
		struct tsum s;

		tenant_sum(i, &s);
		fmt_count(fin, sizeof(fin), s.finished);
		fmt_count(tok, sizeof(tok), s.gen_tokens);
		fmt_count(ask, sizeof(ask), s.ask_pages);
		fmt_count(ev, sizeof(ev), s.evicted_pages);
		fprintf(f, "%-6s %6u %6u  %8s  %6s  %5u  %5llu  %4.1f  %7llu  %5s  %7s  %llu/%llu\n",
			te->cfg->name, te->max0, te->min_pages,
			fin, tok, te->peak_pages,
			(unsigned long long)(nsamples ? te->sum_pages / nsamples : 0),
			s.prompt_tokens ? 100.0 * s.hit_tokens / s.prompt_tokens : 0,
			(unsigned long long)s.retractions, ask, ev,
			(unsigned long long)s.exports,
			(unsigned long long)s.imports);
	}
	fprintf(f, "  pages: held by the tenant (rows, slots, prefix caches), peak and average of\n"
		"  the samples every %.0f ms; hit: prompt tokens found in the prefix cache or a\n"
		"  slot; asked: cache pages the kernel asked back (pressure); evicted: cache\n"
		"  pages evicted for any reason; exp/imp: rows handed prefill -> decode\n\n",
		opt.sample_ms);
	if (arena_bytes) {
		u64 wr = 0, chk = 0, imp = 0;

		for (i = 0; i < SIM_MAX_PROCS; i++) {
			wr += sh->proc[i].arena_written;
			chk += sh->proc[i].arena_checked;
			imp += sh->proc[i].arena_imported;
		}
		fprintf(f, "arena: host memory, %.1f MiB in %u chunks of memfds, %llu bytes a page\n",
			arena_bytes / 1048576.0, SIM_ARENA_CHUNKS,
			(unsigned long long)opt.page_bytes);
		fprintf(f, "  every process maps it; pages stamped %llu, read back %llu (%llu of them\n"
			"  written by the prefill process, read by decode), every one as written\n",
			(unsigned long long)wr, (unsigned long long)chk,
			(unsigned long long)imp);
		for (i = 0; i < opt.ntenants; i++)
			fprintf(f, "%s  %s peak %.1f MiB, avg %.1f MiB",
				i ? "," : "  bytes:", T[i].cfg->name,
				T[i].peak_pages * (double)opt.page_bytes /
				1048576.0,
				(nsamples ? T[i].sum_pages / nsamples : 0) *
				(double)opt.page_bytes / 1048576.0);
		fprintf(f, "\n\n");
	}
	fprintf(f, "process          pid     end  late  finished  hit%%  retract  slot-drop  ENOSPC  EDQUOT  pressure\n");
	for (i = 0; i < SIM_MAX_PROCS; i++) {
		const struct sim_proc *p = &sh->proc[i];

		if (p->state == PROC_FREE)
			continue;
		fprintf(f, "%-6s %-7s %6d  %6s  %3.0f%%  %8llu  %4.0f  %7llu  %9llu  %6llu  %6llu  %8llu\n",
			T[p->tenant].cfg->name, role_name(p->role), p->pid,
			end[p->state],
			p->steps ? 100.0 * p->late_steps / p->steps : 0,
			(unsigned long long)p->finished,
			p->prompt_tokens ? 100.0 * p->hit_tokens / p->prompt_tokens : 0,
			(unsigned long long)p->retractions,
			(unsigned long long)p->slot_drops,
			(unsigned long long)p->enospc,
			(unsigned long long)p->edquot,
			(unsigned long long)p->pressure_events);
	}
	fprintf(f, "  late: steps that started more than a step late (CPU); ENOSPC, EDQUOT:\n"
		"  refusals by the pool and by the tenant's limit; pressure: steps that found\n"
		"  an ask from the kernel\n\n");
	for (i = 0; i < nevents; i++)
		fprintf(f, "event %6.1fs  %s\n", events[i].t, events[i].text);
}

/* Every process is gone: the pool must be whole and sound. */
static bool final_checks(FILE *f)
{
	struct kvpool_stats st;
	bool ok = true;
	int v, ret;
	u32 i;

	/* The last processes' pages come back just after their exit. */
	if (wait_quarantine() < 0) {
		fprintf(f, "FAIL pages still held back 5 s after every process exited\n");
		ok = false;
	}

	for (i = 0; i < SIM_MAX_PROCS; i++) {
		struct sim_proc *p = &sh->proc[i];

		if (p->state == PROC_FAILED) {
			fprintf(f, "FAIL %s %s (pid %d): %s\n",
				T[p->tenant].cfg->name, role_name(p->role),
				p->pid, p->err);
			ok = false;
		}
	}
	v = kvpool_verify(mon, NULL);
	ret = kvpool_stats(mon, &st);
	if (v || ret) {
		fprintf(f, "FAIL verify: %d invariants broken (%s)\n", v,
			ret ? kvpool_strerror(ret) : "see the kernel log");
		ok = false;
	} else {
		fprintf(f, "PASS verify: 0 invariants broken (and %u during the run)\n",
			verify_bad);
	}
	if (verify_bad)
		ok = false;
	if (ret || st.out_free_pages + st.out_reserved_pages != pinfo.out_nr_pages ||
	    st.out_export_pages || st.out_row_pages || st.out_slot_pages ||
	    st.out_cache_evictable || st.out_cache_pinned ||
	    st.out_quarantine_pages) {
		fprintf(f, "FAIL pool not whole: free %u + reserved %u of %u (rows %u slots %u cache %u+%u exported %u held back %u)\n",
			st.out_free_pages, st.out_reserved_pages,
			pinfo.out_nr_pages, st.out_row_pages, st.out_slot_pages,
			st.out_cache_evictable, st.out_cache_pinned,
			st.out_export_pages, st.out_quarantine_pages);
		ok = false;
	} else {
		fprintf(f, "PASS pool whole: free %u == nr_pages %u - reserved %u, no rows, slots, cache or exports\n",
			st.out_free_pages, pinfo.out_nr_pages,
			st.out_reserved_pages);
	}
	sample_tenants();
	for (i = 0; i < opt.ntenants; i++)
		if (T[i].now.pages || T[i].now.rows || T[i].now.nr_clients) {
			fprintf(f, "FAIL tenant %s still holds %u pages, %u rows, %u clients\n",
				T[i].cfg->name, T[i].now.pages, T[i].now.rows,
				T[i].now.nr_clients);
			ok = false;
		}
	return ok;
}

static FILE *open_result(const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", opt.results, name);
	f = fopen(path, "we");
	if (!f)
		msg("%s: %s", path, strerror(errno));
	return f;
}

static void write_meta(double kill_t, double restart_t, double squeeze_t)
{
	FILE *f = open_result("kvpool-sim-meta.gp");
	u32 i;

	if (!f)
		return;
	fprintf(f, "# written by kvpool-sim for plot.gp\n");
	fprintf(f, "ntenants = %u\nnr_pages = %u\npage_tokens = %u\nduration = %.1f\n",
		opt.ntenants, pinfo.out_nr_pages, pinfo.out_page_tokens,
		opt.duration);
	fprintf(f, "low_wmark = %u\nhigh_wmark = %u\n", low_wmark, high_wmark);
	for (i = 0; i < opt.ntenants; i++)
		fprintf(f, "name%u = \"%s\"\nmax%u = %u\nmin%u = %u\n", i + 1,
			T[i].cfg->name, i + 1, T[i].max_pages, i + 1,
			T[i].min_pages);
	fprintf(f, "kill_t = %.2f\nrestart_t = %.2f\nkill_name = \"%s\"\n",
		kill_t, restart_t,
		kill_t > 0 ? T[opt.kill_tenant].cfg->name : "");
	fprintf(f, "squeeze_t = %.2f\nsqueeze_name = \"%s\"\n", squeeze_t,
		T[opt.ntenants - 1].cfg->name);
	fprintf(f, "title = \"kvpool-sim: %u tenants on %u pages x %u tokens, seed %llu\"\n",
		opt.ntenants, pinfo.out_nr_pages, pinfo.out_page_tokens,
		(unsigned long long)opt.seed);
	fclose(f);
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s [OPTIONS]\n"
"Tenants' inference schedulers share one kvpool pool; one is SIGKILLed\n"
"midway. Run as root on an idle pool.\n"
"  --duration S        seconds to run (default 60)\n"
"  --seed N            workload seed (default 1)\n"
"  --tenants 2|3       chat and docs, or also batch (default 3)\n"
"  --kill-at S         SIGKILL chat's server at S seconds (default\n"
"                      duration/2; 0: never)\n"
"  --kill TENANT       whose process to kill (default chat)\n"
"  --restart-after S   start a new one S seconds later (default 2.5)\n"
"  --squeeze-at S      halve the last tenant's limit at S seconds, as an\n"
"                      administrator would (default 3/4 of the duration;\n"
"                      0: never)\n"
"  --step-ms N         scheduler step (default 25)\n"
"  --pool N            /dev/kvpoolN (default 0)\n"
"  --page-bytes N      give the pool a host arena of N-byte pages, which the\n"
"                      schedulers map and stamp (default 4096; 0: none)\n"
"  --results DIR       where the CSV and summary go (default\n"
"                      $KVPOOL_RESULTS, else .)\n"
"  --no-live           a log line every 5 s instead of the live view\n"
"  -v, --verbose       more messages\n"
"  -V, --version       print kvpool's version and exit\n"
"  -h, --help\n", prog);
}

static bool parse_num(const char *name, const char *arg, double lo,
		      double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || v < lo || v > hi) {
		msg("%s wants a number in [%g, %g], not '%s'", name, lo, hi, arg);
		return false;
	}
	*out = v;
	return true;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 's' },
		{ "tenants", required_argument, NULL, 't' },
		{ "kill-at", required_argument, NULL, 'k' },
		{ "kill", required_argument, NULL, 'K' },
		{ "restart-after", required_argument, NULL, 'r' },
		{ "squeeze-at", required_argument, NULL, 'q' },
		{ "step-ms", required_argument, NULL, 'S' },
		{ "pool", required_argument, NULL, 'p' },
		{ "page-bytes", required_argument, NULL, 'B' },
		{ "results", required_argument, NULL, 'o' },
		{ "no-live", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *kill_name = "chat";
	double v;
	int c;
	u32 i;

	opt.results = getenv("KVPOOL_RESULTS");
	if (!opt.results)
		opt.results = ".";
	while ((c = getopt_long(argc, argv, "vVh", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!parse_num("--duration", optarg, 5, 3600, &opt.duration))
				return EXIT_USAGE;
			break;
		case 's':
			if (!parse_num("--seed", optarg, 0, 1e15, &v))
				return EXIT_USAGE;
			opt.seed = (u64)v;
			break;
		case 't':
			if (!parse_num("--tenants", optarg, 2, 3, &v))
				return EXIT_USAGE;
			opt.ntenants = (u32)v;
			break;
		case 'k':
			if (!parse_num("--kill-at", optarg, 0, 3600, &opt.kill_at))
				return EXIT_USAGE;
			break;
		case 'K':
			kill_name = optarg;
			break;
		case 'r':
			if (!parse_num("--restart-after", optarg, 0, 3600,
				       &opt.restart_after))
				return EXIT_USAGE;
			break;
		case 'q':
			if (!parse_num("--squeeze-at", optarg, 0, 3600,
				       &opt.squeeze_at))
				return EXIT_USAGE;
			break;
		case 'S':
			if (!parse_num("--step-ms", optarg, 1, 1000, &opt.step_ms))
				return EXIT_USAGE;
			break;
		case 'p':
			if (!parse_num("--pool", optarg, 0, 63, &v))
				return EXIT_USAGE;
			opt.pool = (u32)v;
			break;
		case 'B':
			if (!parse_num("--page-bytes", optarg, 0, 1 << 20, &v))
				return EXIT_USAGE;
			opt.page_bytes = (u64)v;
			if (opt.page_bytes && opt.page_bytes < 64) {
				msg("--page-bytes: 0, or at least 64 (a page holds two stamps)");
				return EXIT_USAGE;
			}
			break;
		case 'o':
			opt.results = optarg;
			break;
		case 'n':
			opt.live = false;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'V':
			/* kvpool's version, from the libkvpool linked in. */
			printf("%s %s (kvpool ABI %d)\n", prog,
			       kvpool_version(), KVPOOL_ABI_VERSION);
			exit(EXIT_PASS);
		case 'h':
			usage(stdout);
			exit(EXIT_PASS);
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		msg("unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	for (i = 0; i < opt.ntenants; i++)
		if (!strcmp(kill_name, sim_tenants[i].name))
			break;
	if (i == opt.ntenants) {
		msg("--kill: no tenant '%s'", kill_name);
		return EXIT_USAGE;
	}
	opt.kill_tenant = i;
	if (opt.kill_at < 0)
		opt.kill_at = opt.duration / 2;
	if (opt.kill_at >= opt.duration)
		opt.kill_at = 0;
	if (opt.squeeze_at < 0)
		opt.squeeze_at = opt.duration * 3 / 4;
	if (opt.squeeze_at >= opt.duration)
		opt.squeeze_at = 0;
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

int main(int argc, char **argv)
{
	double next, t = 0, kill_t = 0, restart_t = 0, next_log = 5;
	double next_verify = 5, killed_until = 0;
	bool killed = false, restarted = false, squeezed = false;
	double squeeze_t = 0;
	FILE *sf;
	u32 i, left;
	int ret;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	ret = setup();
	if (ret)
		return ret;
	csv = open_result("kvpool-sim.csv");
	evf = open_result("kvpool-sim-events.csv");
	if (!csv || !evf)
		return EXIT_SETUP;
	fprintf(csv, "t,free,export,cache_evictable,cache_pinned");
	for (i = 0; i < opt.ntenants; i++)
		fprintf(csv, ",%1$s_pages,%1$s_cache,%1$s_rows,%1$s_ask,%1$s_running,%1$s_retract,%1$s_max",
			T[i].cfg->name);
	fputc('\n', csv);
	fprintf(evf, "t,event\n");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	if (!opt.live) {
		printf("kvpool-sim: %u tenants (%s) on %s: %u pages x %u tokens, %u rows; %.0f s\n",
		       opt.ntenants, have_cgroups ? "cgroup v2 + uid" : "uid",
		       pool_path, pinfo.out_nr_pages, pinfo.out_page_tokens,
		       pinfo.out_nr_rows, opt.duration);
		for (i = 0; i < opt.ntenants; i++)
			printf("  tenant %-6s uid %u cgroup %llu: limit %u pages, guarantee %u%s\n",
			       T[i].cfg->name, T[i].cfg->uid,
			       (unsigned long long)T[i].cgroup_id,
			       T[i].max_pages, T[i].min_pages,
			       T[i].cfg->split ? "; prefill -> decode by export/import" : "");
		fflush(stdout);
	} else {
		printf("\033[2J");
	}
	t0 = now_s();
	if (!start_all()) {
		sim_store(sh->stop, 1);
		failed = true;
	}
	next = t0;
	for (;;) {
		t = now_s() - t0;
		if (t >= opt.duration || interrupted)
			break;
		if (opt.kill_at > 0 && !killed && t >= opt.kill_at) {
			kill_t = kill_one();
			killed = true;
			killed_until = t + 3;
			restart_t = t + opt.restart_after;
		}
		if (killed && !restarted && t >= restart_t) {
			struct sim_proc *p;

			T[opt.kill_tenant].gen++;
			p = spawn(opt.kill_tenant, ROLE_FULL, -1, -1);
			restarted = true;
			restart_t = t;
			if (p)
				event("%s restarted (pid %d), cold cache",
				      T[opt.kill_tenant].cfg->name, p->pid);
		}
		if (opt.squeeze_at > 0 && !squeezed && t >= opt.squeeze_at) {
			squeeze();
			squeezed = true;
			squeeze_t = t;
		}
		reap(false);
		sample(t);
		if (t >= next_verify) {
			do_verify(t);
			next_verify += 5;
		}
		if (opt.live) {
			render(t, opt.kill_at, killed && t < killed_until);
		} else if (t >= next_log) {
			log_line(t);
			next_log += 5;
		}
		next += opt.sample_ms / 1000;
		sleep_s(next - now_s());
	}
	if (opt.live)
		render(t, opt.kill_at, false);

	/* Everyone gives everything back, by hand, and exits. */
	sim_store(sh->stop, 1);
	next = now_s() + 15;
	while ((left = reap(false)) && now_s() < next)
		sleep_s(0.05);
	if (left) {
		msg("%u processes did not finish in 15 s: killing them", left);
		for (i = 0; i < SIM_MAX_PROCS; i++)
			if (alive(&sh->proc[i])) {
				snprintf(sh->proc[i].err, sizeof(sh->proc[i].err),
					 "did not drain in 15 s");
				sh->proc[i].state = PROC_FAILED;
				kill(sh->proc[i].pid, SIGKILL);
			}
	}
	while (waitpid(-1, NULL, 0) > 0)
		;
	fclose(csv);
	fclose(evf);
	evf = NULL;
	write_meta(kill_t, killed ? restart_t : 0, squeeze_t);

	summary(stdout, t);
	sf = open_result("kvpool-sim-summary.txt");
	if (sf)
		summary(sf, t);
	if (!final_checks(stdout))
		failed = true;
	if (sf) {
		final_checks(sf);
		fclose(sf);
	}
	kvpool_close(mon);
	cleanup();
	if (interrupted) {
		msg("interrupted");
		return EXIT_CHECK_FAILED;
	}
	return failed ? EXIT_CHECK_FAILED : EXIT_PASS;
}
