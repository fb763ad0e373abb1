// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: CUDA arenas served by the pool's GPU agent
 * (docs/gpu-agent.md), against the module with its fake_cuda hook on and
 * the fake CUDA driver (selftests/lib/fakecuda) in NVIDIA's place, the
 * tree's kvpool-gpud as the agent where a case needs a real one:
 *
 * - end to end: kvpoolctl makes an agent arena, which holds the GPU's
 *   device; with no agent a map waits (KVPOOL_ARENA_NOWAIT: EAGAIN) and
 *   arena show says none; with the daemon up, each ask gets a file of its
 *   own, and a client reads, through cuMemcpy, the bytes another wrote;
 * - a hostile client unexports, or replaces, its own chunk file (what any
 *   holder of an nvidiactl file may do on NVIDIA's driver): of an agent
 *   arena the next client still maps and reads the right bytes; of a
 *   --shared arena the same attack breaks it, which shows the fake models
 *   the danger the agent is for;
 * - an agent killed with a request taken: the waiting client keeps
 *   waiting, and once the daemon starts it is served, with nothing lost;
 * - teardown: an arena set without KVPOOL_ARENA_SET_DEVICE loses its
 *   memory when the last CUDA process exits (the fake tears the GPU down
 *   as NVIDIA's driver does with persistence off); with the device held
 *   it keeps it;
 * - a client killed, or signalled, while it waits: its request is gone
 *   (the agent's later reply is ENOENT; EINTR for the signalled one, and
 *   nothing left to receive).
 *
 * The test plays the agent itself where a case needs one that stops at a
 * chosen step: CTL_AGENT, AGENT_RECV, then it is killed. Every CUDA call
 * runs in a child forked before it (CUDA does not survive fork()), and
 * the bytes move only through the driver's copies: the fake faults a CPU
 * access to device memory, as a GPU does.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <cuda.h>
#include <fakecuda.h>
#include <kvpool.h>

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"
#define GPUD		KVP_TOPDIR "/tools/kvpool-gpud/kvpool-gpud"
#define FAKECUDA	KVP_TOPDIR "/selftests/lib/fakecuda/libcuda.so.1"
#define FAKE_CUDA_PARAM	"/sys/module/kvpool/parameters/fake_cuda"

#define PAGES		64
#define PAGE_BYTES	(64U << 10)	/* 64 pages: two 2 MiB granules */
#define ARENA_BYTES	((size_t)PAGES * PAGE_BYTES)
#define CHUNKS		2
#define CHUNK_BYTES	(ARENA_BYTES / CHUNKS)
#define WAIT_MS		20000		/* for the daemon to attach */

/* A child's exit status beyond a failed line's. */
#define KID_MAP_FAILED	250		/* kvpool_arena_map() failed */
#define KID_BYTES_DIFFER 251		/* mapped, but other bytes */

static int make_pool(const char *gpu, unsigned int *id)
{
	struct kvpool_pool_params p = {
		.nr_pages = PAGES, .page_tokens = 16, .nr_rows = 8,
		.row_tokens = PAGES * 16, .flags = KVPOOL_CREATE_GPU,
	};
	int ret = kvpool_pci_parse(gpu, &p.gpu_domain, &p.gpu_devid);

	return ret ? ret : kvpool_pool_create(&p, id);
}

static int open_pool(unsigned int id, struct kvpool **kp)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	return kvpool_open(path, kp);
}

/* ---- children ---- */

/*
 * What a child of the test reports: its exit status is 0, KID_* or the
 * line of its failure, and its text comes back here.
 */
struct report {
	int fd;		/* the write end, in the child */
	char text[512];
};

#define KID_CHECK(cond, r)						\
	do {								\
		if (!(cond)) {						\
			dprintf((r)->fd, "line %d: %s", __LINE__,	\
				kvpool_arena_error());			\
			_exit(__LINE__ % 200 + 1);			\
		}							\
	} while (0)

/* Fork @fn(@arg, report); its exit status, its text in @r->text. */
static int run_child(int (*fn)(void *, struct report *), void *arg,
		     struct report *r, pid_t *pidp)
{
	int p[2], st;
	ssize_t n;
	pid_t pid;

	r->text[0] = 0;
	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(p[0]);
		r->fd = p[1];
		_exit(fn(arg, r));
	}
	close(p[1]);
	if (pidp) {
		/* The caller collects it with child_wait(). */
		*pidp = pid;
		r->fd = p[0];
		return 0;
	}
	n = read(p[0], r->text, sizeof(r->text) - 1);
	r->text[n > 0 ? n : 0] = 0;
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The end of a child run_child() left running: as run_child() returns. */
static int child_wait(pid_t pid, struct report *r)
{
	ssize_t n;
	int st;

	n = read(r->fd, r->text, sizeof(r->text) - 1);
	r->text[n > 0 ? n : 0] = 0;
	close(r->fd);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The fake's driver API, as a child calls it (dlsym()'d, as libkvpool). */
struct cu {
	__typeof__(&cuInit) init;
	__typeof__(&cuDeviceGet) device_get;
	__typeof__(&cuDevicePrimaryCtxRetain) retain;
	__typeof__(&cuCtxSetCurrent) set_current;
	__typeof__(&cuCtxSynchronize) sync;
	__typeof__(&cuMemcpyHtoD) htod;
	__typeof__(&cuMemcpyDtoH) dtoh;
	__typeof__(&cuMemCreate) create;
	__typeof__(&cuMemRelease) release;
	__typeof__(&cuMemExportToShareableHandle) export;
	/* The fake's own (fakecuda.h): what NVIDIA's export control allows. */
	__typeof__(&fakecuda_unexport) unexport;
	__typeof__(&fakecuda_export_replace) replace;
};

/*
 * Load the fake (the instance libkvpool loaded, if it did: the same
 * path), initialise it and make device 0's primary context current.
 * Returns 0 or the line that failed.
 */
static int cu_open(struct cu *c)
{
	CUcontext ctx;
	CUdevice dev;
	void *dl;

	dl = dlopen(FAKECUDA, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return __LINE__;
	/* cuda.h names the _v2 entry points of copies as the plain ones. */
	c->init = (__typeof__(c->init))dlsym(dl, "cuInit");
	c->device_get = (__typeof__(c->device_get))dlsym(dl, "cuDeviceGet");
	c->retain = (__typeof__(c->retain))dlsym(dl,
						 "cuDevicePrimaryCtxRetain");
	c->set_current = (__typeof__(c->set_current))dlsym(dl,
							   "cuCtxSetCurrent");
	c->sync = (__typeof__(c->sync))dlsym(dl, "cuCtxSynchronize");
	c->htod = (__typeof__(c->htod))dlsym(dl, "cuMemcpyHtoD_v2");
	c->dtoh = (__typeof__(c->dtoh))dlsym(dl, "cuMemcpyDtoH_v2");
	c->create = (__typeof__(c->create))dlsym(dl, "cuMemCreate");
	c->release = (__typeof__(c->release))dlsym(dl, "cuMemRelease");
	c->export = (__typeof__(c->export))dlsym(dl,
					"cuMemExportToShareableHandle");
	c->unexport = (__typeof__(c->unexport))dlsym(dl, "fakecuda_unexport");
	c->replace = (__typeof__(c->replace))dlsym(dl,
						   "fakecuda_export_replace");
	if (!c->init || !c->device_get || !c->retain || !c->set_current ||
	    !c->sync || !c->htod || !c->dtoh || !c->create || !c->release ||
	    !c->export || !c->unexport || !c->replace)
		return __LINE__;
	if (c->init(0) != CUDA_SUCCESS || c->device_get(&dev, 0) ||
	    c->retain(&ctx, dev) || c->set_current(ctx))
		return __LINE__;
	return 0;
}

/* The byte at arena offset @off, of a run with @seed. */
static unsigned char pattern(unsigned int seed, size_t off)
{
	return (unsigned char)(off * 7 + (off >> 12) * 31 + seed);
}

/* What a writer or a reader is told. */
struct job {
	unsigned int id;
	unsigned int seed;
};

/* Map the arena and write every byte of it through cuMemcpyHtoD. */
static int child_write(void *arg, struct report *r)
{
	const struct job *j = arg;
	struct kvpool_arena_view v;
	unsigned char *buf;
	struct kvpool *kp;
	struct cu c;
	__u32 p;
	size_t i;

	buf = malloc(PAGE_BYTES);
	KID_CHECK(buf, r);
	KID_CHECK(!open_pool(j->id, &kp), r);
	KID_CHECK(!kvpool_arena_map(kp, &v), r);
	KID_CHECK(v.nr_pages == PAGES, r);
	KID_CHECK(!cu_open(&c), r);
	for (p = 0; p < PAGES; p++) {
		for (i = 0; i < PAGE_BYTES; i++)
			buf[i] = pattern(j->seed, (size_t)p * PAGE_BYTES + i);
		KID_CHECK(c.htod((CUdeviceptr)(uintptr_t)kvpool_page_addr(&v, p),
				 buf, PAGE_BYTES) == CUDA_SUCCESS, r);
	}
	KID_CHECK(c.sync() == CUDA_SUCCESS, r);
	KID_CHECK(!kvpool_arena_unmap(&v), r);
	kvpool_close(kp);
	return 0;
}

/*
 * Map the arena and read it back through cuMemcpyDtoH: 0 if every byte
 * is the writer's, KID_MAP_FAILED or KID_BYTES_DIFFER (with the text).
 */
static int child_read(void *arg, struct report *r)
{
	const struct job *j = arg;
	struct kvpool_arena_view v;
	unsigned char *buf;
	struct kvpool *kp;
	struct cu c;
	__u32 p;
	size_t i;

	buf = malloc(PAGE_BYTES);
	KID_CHECK(buf, r);
	KID_CHECK(!open_pool(j->id, &kp), r);
	if (kvpool_arena_map(kp, &v)) {
		dprintf(r->fd, "map: %s", kvpool_arena_error());
		return KID_MAP_FAILED;
	}
	KID_CHECK(!cu_open(&c), r);
	for (p = 0; p < PAGES; p++) {
		KID_CHECK(c.dtoh(buf,
				 (CUdeviceptr)(uintptr_t)kvpool_page_addr(&v, p),
				 PAGE_BYTES) == CUDA_SUCCESS, r);
		for (i = 0; i < PAGE_BYTES; i++) {
			size_t off = (size_t)p * PAGE_BYTES + i;

			if (buf[i] != pattern(j->seed, off)) {
				dprintf(r->fd, "byte %zu: %#x, want %#x", off,
					buf[i], pattern(j->seed, off));
				return KID_BYTES_DIFFER;
			}
		}
	}
	KID_CHECK(!kvpool_arena_unmap(&v), r);
	kvpool_close(kp);
	return 0;
}

/* ---- the fixture ---- */

FIXTURE(agent) {
	char gpu[64];
	char dir[64];
	char fake_was[8];	/* fake_cuda's value before the test */
	unsigned int id;
	pid_t gpud;		/* the daemon, or 0 */
};

/* Run cuInit in a child: the fake makes its registry's device files. */
static int child_prime(void *arg, struct report *r)
{
	struct cu c;

	(void)arg;
	KID_CHECK(!cu_open(&c), r);
	return 0;
}

static void env_setup(struct __test_metadata *_metadata,
		      FIXTURE_DATA(agent) *self)
{
	struct report r;
	char path[128];

	self->gpud = 0;
	/* The hook that lets the fake's files in: no hook, no test. */
	ASSERT_EQ(0, kt_read_text(FAKE_CUDA_PARAM, self->fake_was,
				  sizeof(self->fake_was)))
		TH_LOG("%s missing: the module has no fake_cuda hook",
		       FAKE_CUDA_PARAM);
	ASSERT_EQ(0, kt_write_text(FAKE_CUDA_PARAM, "1"));
	ASSERT_EQ(0, kt_find_gpu(NULL, NULL, self->gpu, sizeof(self->gpu)))
		TH_LOG("no PCI display controller: vm-run.sh adds one");
	ASSERT_EQ(0, make_pool(self->gpu, &self->id));
	snprintf(self->dir, sizeof(self->dir), "/dev/shm/kvpool-agent-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/*
	 * The pool's GPU is the fake's device 0; its registry stands in for
	 * /proc/driver/nvidia and /dev (nvidia0 is the GPU's FIFO).
	 */
	setenv("KVPOOL_FAKECUDA_GPUS", self->gpu, 1);
	setenv("KVPOOL_FAKECUDA_DIR", self->dir, 1);
	setenv("KVPOOL_NVIDIA_PROC", self->dir, 1);
	setenv("KVPOOL_NVIDIA_DEV", self->dir, 1);
	setenv("KVPOOL_LIBCUDA", FAKECUDA, 1);
	unsetenv("KVPOOL_FAKECUDA_GRANULARITY");
	/* A map waits for the agent longer than any case takes. */
	setenv("KVPOOL_AGENT_WAIT_MS", "60000", 1);
	ASSERT_EQ(0, run_child(child_prime, NULL, &r, NULL)) TH_LOG("%s",
								     r.text);
	snprintf(path, sizeof(path), "%s/nvidia0", self->dir);
	ASSERT_EQ(0, access(path, F_OK)) TH_LOG("the fake made no %s", path);
}

static void env_teardown(struct __test_metadata *_metadata,
			 FIXTURE_DATA(agent) *self)
{
	char cmd[128];

	if (self->gpud > 0) {
		kill(self->gpud, SIGKILL);
		waitpid(self->gpud, NULL, 0);
	}
	EXPECT_EQ(0, kvpool_pool_destroy(self->id));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	EXPECT_EQ(0, system(cmd));
	if (self->fake_was[0])
		EXPECT_EQ(0, kt_write_text(FAKE_CUDA_PARAM, self->fake_was));
}

FIXTURE_SETUP(agent)
{
	env_setup(_metadata, self);
}

FIXTURE_TEARDOWN(agent)
{
	env_teardown(_metadata, self);
}

/* Runs kvpoolctl with @args (split at spaces); output to @out. */
#define kvpoolctl(args, out, len) \
	kt_run_output(out, len, "%s %s", KVPOOLCTL, args)

/* kvpoolctl arena create @id --cuda [@extra]: its exit status. */
static int ctl_create(unsigned int id, const char *extra, char *out,
		      size_t len)
{
	char args[160];

	snprintf(args, sizeof(args),
		 "arena create %u --cuda %s --page-bytes 64K --chunks %d", id,
		 extra, CHUNKS);
	return kvpoolctl(args, out, len);
}

/* The pool's arena as KVPOOL_ARENA tells it, or -errno. */
static int arena_info(unsigned int id, struct kvpool_arena *a)
{
	struct kvpool *kp;
	int ret;

	ret = open_pool(id, &kp);
	if (ret)
		return ret;
	ret = kvpool_arena_info(kp, a);
	kvpool_close(kp);
	return ret;
}

/* The pid of the pool's attached agent, 0 for none, or -errno. */
static int agent_pid(unsigned int id)
{
	struct kvpool_arena a;
	int ret = arena_info(id, &a);

	return ret ? ret : (int)a.out_agent_pid;
}

/*
 * Start kvpool-gpud for the pool, its output in the registry folder, and
 * wait until it is the pool's agent. Returns its pid, or -1.
 */
static pid_t start_gpud(FIXTURE_DATA(agent) *self)
{
	char idstr[16], log[96];
	int i, fd;
	pid_t pid;

	snprintf(idstr, sizeof(idstr), "%u", self->id);
	snprintf(log, sizeof(log), "%s/gpud.log", self->dir);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(GPUD, GPUD, "--foreground", "--pool", idstr, (char *)NULL);
		_exit(127);
	}
	self->gpud = pid;
	/* A wait, not a timing check: it attaches at its start. */
	for (i = 0; i < WAIT_MS / 10; i++) {
		if (agent_pid(self->id) == pid)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			self->gpud = 0;
			return -1;
		}
		usleep(10 * 1000);
	}
	return -1;
}

/* SIGTERM the daemon; its exit status (0 expected), or -1. */
static int stop_gpud(FIXTURE_DATA(agent) *self)
{
	pid_t pid = self->gpud;
	int st;

	self->gpud = 0;
	if (pid <= 0 || kill(pid, SIGTERM) || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The daemon's log, for a failure's message. */
static const char *gpud_log(FIXTURE_DATA(agent) *self, char *buf,
			    size_t len)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/gpud.log", self->dir);
	kt_read_text(path, buf, len);
	return buf;
}

/* KVPOOL_ARENA with KVPOOL_ARENA_FDS (and @flags) for chunks [0, n). */
static int arena_fds(int fd, __u32 flags, __u32 n, struct kvpool_arena_fd *out)
{
	struct kvpool_arena a = {
		.size = sizeof(a), .flags = KVPOOL_ARENA_FDS | flags,
		.count = n, .fd_entry_len = sizeof(*out), .fds = kt_ptr(out),
	};

	return kt_ioctl(fd, KVPOOL_ARENA, &a);
}

/* The pty index of a fake export file (each export is a pty of its own). */
static int pty_index(int fd)
{
	unsigned int n;

	return ioctl(fd, TIOCGPTN, &n) ? -1 : (int)n;
}

/* ---- end to end ---- */

TEST_F_TIMEOUT(agent, end_to_end, 120)
{
	struct job j = { .id = self->id, .seed = 11 };
	struct kvpool_arena_fd f1, f2;
	char out[2048], args[64], want[64], log[2048];
	struct kvpool_arena a;
	struct report r;
	struct stat st;
	pid_t pid;
	int fd;

	/* Made by default as an agent arena, holding the GPU's device. */
	ASSERT_EQ(0, ctl_create(self->id, "", out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_EQ(0, arena_info(self->id, &a));
	EXPECT_EQ(KVPOOL_ARENA_CUDA, a.out_kind);
	EXPECT_EQ(KVPOOL_ARENA_SET_DEVICE | KVPOOL_ARENA_SET_AGENT,
		  a.out_set_flags);
	EXPECT_EQ(0, a.out_agent_pid);

	/* No agent: NOWAIT is EAGAIN, and show does not wait either. */
	fd = kt_open_id(self->id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(EAGAIN, arena_fds(fd, KVPOOL_ARENA_NOWAIT, 1, &f1));
	snprintf(args, sizeof(args), "arena show --json %u", self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"device_held\": true")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"agent_arena\": true")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"agent_pid\": null")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"chunks\": null")) TH_LOG("%s", out);
	snprintf(args, sizeof(args), "arena show %u", self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  device      held\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  agent       none")) TH_LOG("%s", out);

	pid = start_gpud(self);
	ASSERT_LT(0, pid) TH_LOG("kvpool-gpud did not attach: %s",
				 gpud_log(self, log, sizeof(log)));
	snprintf(args, sizeof(args), "arena show %u", self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "  agent       pid %d\n", pid);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "CHUNK")) TH_LOG("%s", out);

	/*
	 * Each ask gets an export of its own: two asks for chunk 0 are two
	 * files (two ptys of the fake), neither the kernel's.
	 */
	ASSERT_EQ(0, arena_fds(fd, 0, 1, &f1));
	ASSERT_EQ(0, arena_fds(fd, 0, 1, &f2));
	ASSERT_EQ(0, fstat(f1.out_fd, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 &&
		    minor(st.st_rdev) == 2);
	EXPECT_LE(0, pty_index(f1.out_fd));
	EXPECT_NE(pty_index(f1.out_fd), pty_index(f2.out_fd));
	close(f1.out_fd);
	close(f2.out_fd);
	close(fd);

	/* One client writes through cuMemcpy, another reads it back. */
	ASSERT_EQ(0, run_child(child_write, &j, &r, NULL)) TH_LOG("%s",
								   r.text);
	EXPECT_EQ(0, run_child(child_read, &j, &r, NULL)) TH_LOG("%s", r.text);

	EXPECT_EQ(0, stop_gpud(self)) TH_LOG("%s",
					     gpud_log(self, log, sizeof(log)));
	EXPECT_EQ(0, agent_pid(self->id));
}

/* --shared: the ABI 2 kind, still holding the device, needing no agent. */
TEST_F(agent, shared)
{
	struct job j = { .id = self->id, .seed = 12 };
	struct kvpool_arena_fd f1, f2;
	char out[2048], args[64];
	struct kvpool_arena a;
	struct report r;
	int fd;

	snprintf(args, sizeof(args),
		 "arena create %u --host --shared --page-bytes 64K", self->id);
	EXPECT_EQ(2, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl_create(self->id, "--shared", out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_EQ(0, arena_info(self->id, &a));
	EXPECT_EQ(KVPOOL_ARENA_SET_DEVICE, a.out_set_flags);
	snprintf(args, sizeof(args), "arena show %u", self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  device      held\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  agent       not used")) TH_LOG("%s", out);
	snprintf(args, sizeof(args), "arena show --json %u", self->id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"agent_arena\": false")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"index\": 1")) TH_LOG("%s", out);

	/* Every ask gets the one file the pool holds: the same pty. */
	fd = kt_open_id(self->id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, arena_fds(fd, KVPOOL_ARENA_NOWAIT, 1, &f1));
	ASSERT_EQ(0, arena_fds(fd, 0, 1, &f2));
	EXPECT_LE(0, pty_index(f1.out_fd));
	EXPECT_EQ(pty_index(f1.out_fd), pty_index(f2.out_fd));
	close(f1.out_fd);
	close(f2.out_fd);
	close(fd);

	ASSERT_EQ(0, run_child(child_write, &j, &r, NULL)) TH_LOG("%s",
								   r.text);
	EXPECT_EQ(0, run_child(child_read, &j, &r, NULL)) TH_LOG("%s", r.text);
}

/* ---- a hostile client ---- */

struct hostile {
	unsigned int id;
	bool replace;	/* replace chunk 0's export, else unexport it */
	int ready;	/* write end: 'h' once the attack is done */
	int hold;	/* read end: it exits when a byte comes */
};

/*
 * Take the arena's chunk files as any client may (KVPOOL_ARENA_FDS), and
 * unexport chunk 0 through its file or put an allocation of its own in
 * its place; stay alive, holding it all, until told to go.
 */
static int child_hostile(void *arg, struct report *r)
{
	const struct hostile *h = arg;
	struct kvpool_arena_fd f[CHUNKS];
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
		.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	};
	CUmemGenericAllocationHandle mine;
	struct cu c;
	char b;
	int fd;

	fd = kt_open_id(h->id, O_RDWR | O_CLOEXEC);
	KID_CHECK(fd >= 0, r);
	KID_CHECK(!arena_fds(fd, 0, CHUNKS, f), r);
	KID_CHECK(!cu_open(&c), r);
	if (h->replace) {
		/* Fresh memory: zeros, where the pool's chunk has the pattern. */
		KID_CHECK(c.create(&mine, CHUNK_BYTES, &prop, 0) ==
			  CUDA_SUCCESS, r);
		KID_CHECK(c.replace(f[0].out_fd, mine) == CUDA_SUCCESS, r);
	} else {
		KID_CHECK(c.unexport(f[0].out_fd) == CUDA_SUCCESS, r);
	}
	kt_child_signal(h->ready, 'h');
	while (read(h->hold, &b, 1) < 0 && errno == EINTR)
		;
	return 0;
}

/* The agent fixture again, in four variants. */
FIXTURE(attack) {
	FIXTURE_DATA(agent) e;
};

FIXTURE_VARIANT(attack) {
	bool shared;	/* the arena is --shared */
	bool replace;	/* the attack replaces, else unexports */
};

FIXTURE_VARIANT_ADD(attack, agent_unexport) { .shared = false };
FIXTURE_VARIANT_ADD(attack, agent_replace) { .replace = true };
FIXTURE_VARIANT_ADD(attack, shared_unexport) { .shared = true };
FIXTURE_VARIANT_ADD(attack, shared_replace) { .shared = true,
					      .replace = true };

FIXTURE_SETUP(attack)
{
	env_setup(_metadata, &self->e);
}

FIXTURE_TEARDOWN(attack)
{
	env_teardown(_metadata, &self->e);
}

/*
 * The attack on the variant's arena kind: after it, a new client of an
 * agent arena maps and reads the writer's bytes; of a --shared arena its
 * map fails (unexport) or it reads the attacker's bytes (replace).
 */
TEST_F_TIMEOUT(attack, hostile, 120)
{
	FIXTURE_DATA(agent) *e = &self->e;
	struct job j = { .id = e->id, .seed = 13 };
	struct hostile h = { .id = e->id, .replace = variant->replace };
	char out[2048], log[2048];
	int ready[2], hold[2], want;
	struct report r, rh;
	pid_t hp;

	ASSERT_EQ(0, ctl_create(e->id, variant->shared ? "--shared" : "",
				out, sizeof(out))) TH_LOG("%s", out);
	if (!variant->shared)
		ASSERT_LT(0, start_gpud(e)) TH_LOG("kvpool-gpud: %s",
					gpud_log(e, log, sizeof(log)));
	ASSERT_EQ(0, run_child(child_write, &j, &r, NULL)) TH_LOG("%s",
								   r.text);
	/* The right bytes before the attack, in either kind. */
	ASSERT_EQ(0, run_child(child_read, &j, &r, NULL)) TH_LOG("%s", r.text);

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(hold));
	h.ready = ready[1];
	h.hold = hold[0];
	ASSERT_EQ(0, run_child(child_hostile, &h, &rh, &hp));
	close(hold[0]);
	close(ready[1]);
	ASSERT_EQ('h', kt_pipe_wait(ready[0])) TH_LOG("the attacker failed");

	if (!variant->shared)
		want = 0;
	else
		want = variant->replace ? KID_BYTES_DIFFER : KID_MAP_FAILED;
	EXPECT_EQ(want, run_child(child_read, &j, &r, NULL))
		TH_LOG("after the attack: %s", r.text);
	/* The import of the emptied master is what failed. */
	if (want == KID_MAP_FAILED)
		EXPECT_NE(NULL, strstr(r.text, "CUDA_ERROR_INVALID_VALUE"))
			TH_LOG("%s", r.text);

	kt_child_signal(hold[1], 'g');
	close(hold[1]);
	close(ready[0]);
	EXPECT_EQ(0, child_wait(hp, &rh)) TH_LOG("attacker: %s", rh.text);
	if (!variant->shared)
		EXPECT_EQ(0, stop_gpud(e));
}

/* ---- the agent killed with a request taken ---- */

/* CTL_AGENT for @id: the agent file, or -errno. */
static int agent_attach(unsigned int id)
{
	struct kvpool_ctl_agent c = { .size = sizeof(c), .pool_id = id };
	int ctl = kt_ctl_open(), ret;

	if (ctl < 0)
		return -errno;
	ret = kt_ioctl(ctl, KVPOOL_CTL_AGENT, &c);
	close(ctl);
	return ret ? -ret : c.out_fd;
}

/* Whether a request waits on the agent file @afd, within WAIT_MS. */
static bool request_waits(int afd)
{
	struct pollfd p = { .fd = afd, .events = POLLIN };

	return poll(&p, 1, WAIT_MS) == 1 && p.revents & POLLIN;
}

/* AGENT_RECV on @afd into *@q: 0 or the errno. */
static int agent_recv(int afd, struct kvpool_agent_request *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	return kt_ioctl(afd, KVPOOL_AGENT_RECV, q);
}

static int agent_reply(int afd, __u64 id, int fd, int error)
{
	struct kvpool_agent_reply a = {
		.size = sizeof(a), .id = id, .fd = fd, .error = error,
	};

	return kt_ioctl(afd, KVPOOL_AGENT_REPLY, &a);
}

struct raw_agent {
	unsigned int id;
	int ready;	/* write end: 'a' attached, then 'r' received */
};

/* Attach, take one request (its master's descriptor too), then wait. */
static int child_raw_agent(void *arg, struct report *r)
{
	const struct raw_agent *ra = arg;
	struct kvpool_agent_request q;
	int afd = agent_attach(ra->id);

	KID_CHECK(afd >= 0, r);
	kt_child_signal(ra->ready, 'a');
	KID_CHECK(request_waits(afd), r);
	KID_CHECK(!agent_recv(afd, &q), r);
	KID_CHECK(q.out_pool_id == ra->id && q.out_chunk < CHUNKS, r);
	KID_CHECK(q.out_fd >= 0 && q.out_bytes == CHUNK_BYTES, r);
	kt_child_signal(ra->ready, 'r');
	for (;;)
		pause();
}

TEST_F_TIMEOUT(agent, agent_killed, 120)
{
	struct job j = { .id = self->id, .seed = 14 };
	struct raw_agent ra = { .id = self->id };
	struct report r, rr, rc;
	char out[2048], log[2048];
	pid_t ap, cp;
	int ready[2];

	ASSERT_EQ(0, ctl_create(self->id, "", out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_LT(0, start_gpud(self)) TH_LOG("kvpool-gpud: %s",
					      gpud_log(self, log, sizeof(log)));
	ASSERT_EQ(0, run_child(child_write, &j, &r, NULL)) TH_LOG("%s",
								   r.text);
	ASSERT_EQ(0, stop_gpud(self));
	ASSERT_EQ(0, agent_pid(self->id));

	ASSERT_EQ(0, pipe(ready));
	ra.ready = ready[1];
	ASSERT_EQ(0, run_child(child_raw_agent, &ra, &rr, &ap));
	close(ready[1]);
	ASSERT_EQ('a', kt_pipe_wait(ready[0]));
	EXPECT_EQ(ap, agent_pid(self->id));
	/* One agent a pool. */
	EXPECT_EQ(-EBUSY, agent_attach(self->id));

	/* The client asks; the agent takes a request and dies with it. */
	ASSERT_EQ(0, run_child(child_read, &j, &rc, &cp));
	ASSERT_EQ('r', kt_pipe_wait(ready[0]))
		TH_LOG("the raw agent got no request");
	ASSERT_EQ(0, kill(ap, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, child_wait(ap, &rr)) TH_LOG("%s", rr.text);
	close(ready[0]);
	EXPECT_EQ(0, agent_pid(self->id));
	/* Nobody can answer it: the client still waits. */
	EXPECT_EQ(0, waitpid(cp, NULL, WNOHANG));

	/* The daemon serves it, every chunk, the right bytes. */
	ASSERT_LT(0, start_gpud(self)) TH_LOG("kvpool-gpud: %s",
					      gpud_log(self, log, sizeof(log)));
	EXPECT_EQ(0, child_wait(cp, &rc)) TH_LOG("%s", rc.text);
	EXPECT_EQ(0, stop_gpud(self));
}

/* ---- a waiting client killed or signalled ---- */

/* Ask for chunk 0 and wait: the exit status is the errno (0: served). */
static int child_ask(void *arg, struct report *r)
{
	const struct job *j = arg;
	struct kvpool_arena_fd f;
	int fd = kt_open_id(j->id, O_RDWR | O_CLOEXEC);

	KID_CHECK(fd >= 0, r);
	return arena_fds(fd, 0, 1, &f);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* child_ask() with SIGUSR1 caught, without SA_RESTART: EINTR. */
static int child_ask_interrupted(void *arg, struct report *r)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	KID_CHECK(!sigaction(SIGUSR1, &sa, NULL), r);
	return child_ask(arg, r);
}

TEST_F_TIMEOUT(agent, client_gone, 120)
{
	struct job j = { .id = self->id };
	struct kvpool_agent_request q;
	int afd, pty, ret;
	char out[2048];
	struct report r;
	pid_t cp;

	ASSERT_EQ(0, ctl_create(self->id, "", out, sizeof(out)))
		TH_LOG("%s", out);
	afd = agent_attach(self->id);
	ASSERT_LE(0, afd);
	EXPECT_EQ(EAGAIN, agent_recv(afd, &q));

	/* Killed with its request taken: the reply finds it gone. */
	ASSERT_EQ(0, run_child(child_ask, &j, &r, &cp));
	ASSERT_TRUE(request_waits(afd));
	ASSERT_EQ(0, agent_recv(afd, &q));
	EXPECT_EQ(cp, (pid_t)q.out_client_pid);
	EXPECT_EQ(0, q.out_chunk);
	close(q.out_fd);
	ASSERT_EQ(0, kill(cp, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, child_wait(cp, &r));
	/* A fresh export, as far as the kernel's hook can tell: a pty. */
	pty = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ASSERT_LE(0, pty);
	EXPECT_EQ(ENOENT, agent_reply(afd, q.out_id, pty, 0));
	close(pty);

	/* Signalled while queued: EINTR, and nothing is left to take. */
	ASSERT_EQ(0, run_child(child_ask_interrupted, &j, &r, &cp));
	ASSERT_TRUE(request_waits(afd));
	ASSERT_EQ(0, kill(cp, SIGUSR1));
	EXPECT_EQ(EINTR, child_wait(cp, &r)) TH_LOG("%s", r.text);
	EXPECT_EQ(EAGAIN, agent_recv(afd, &q));

	/* A chunk the agent could not export: the client gets EIO. */
	ASSERT_EQ(0, run_child(child_ask, &j, &r, &cp));
	ASSERT_TRUE(request_waits(afd));
	ASSERT_EQ(0, agent_recv(afd, &q));
	close(q.out_fd);
	/* fd 0 with an error, as the header says. */
	ret = agent_reply(afd, q.out_id, 0, ENOMEM);
	EXPECT_EQ(0, ret);
	if (ret)
		kill(cp, SIGKILL);
	EXPECT_EQ(EIO, child_wait(cp, &r)) TH_LOG("%s", r.text);
	close(afd);
}

/* ---- teardown without the device held ---- */

struct setter {
	unsigned int id;
	const char *dir;	/* the fake's registry: nvidia0 is the GPU */
	bool hold_device;
	unsigned int seed;
};

/*
 * As a creator that bypasses libkvpool: make and export two chunks,
 * release them, set the arena by hand (with the GPU's device or
 * without), write the pattern into it through a map, and exit.
 */
static int child_set(void *arg, struct report *r)
{
	const struct setter *s = arg;
	struct kvpool_arena_chunk ch[CHUNKS] = { 0 };
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
		.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	};
	/* device_fd 0 without KVPOOL_ARENA_SET_DEVICE, as the header says. */
	struct kvpool_ctl_arena_set set = {
		.size = sizeof(set), .pool_id = s->id,
		.kind = KVPOOL_ARENA_CUDA, .page_bytes = PAGE_BYTES,
		.nr_chunks = CHUNKS, .chunk_entry_len = sizeof(ch[0]),
		.chunks = kt_ptr(ch),
	};
	struct job j = { .id = s->id, .seed = s->seed };
	CUmemGenericAllocationHandle h;
	int i, ctl, dev = -1;
	char path[96];
	struct cu c;

	KID_CHECK(!cu_open(&c), r);
	for (i = 0; i < CHUNKS; i++) {
		KID_CHECK(c.create(&h, CHUNK_BYTES, &prop, 0) == CUDA_SUCCESS,
			  r);
		KID_CHECK(c.export(&ch[i].fd, h,
				   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
				   0) == CUDA_SUCCESS, r);
		KID_CHECK(c.release(h) == CUDA_SUCCESS, r);
		ch[i].bytes = CHUNK_BYTES;
	}
	if (s->hold_device) {
		/* What kvpool_gpu_device_open() finds through the registry. */
		snprintf(path, sizeof(path), "%s/nvidia0", s->dir);
		dev = open(path, O_RDWR | O_CLOEXEC);
		KID_CHECK(dev >= 0, r);
		set.device_fd = dev;
		set.flags = KVPOOL_ARENA_SET_DEVICE;
	}
	ctl = kt_ctl_open();
	KID_CHECK(ctl >= 0, r);
	KID_CHECK(!kt_ioctl(ctl, KVPOOL_CTL_ARENA_SET, &set), r);
	close(ctl);
	for (i = 0; i < CHUNKS; i++)
		close(ch[i].fd);
	if (dev >= 0)
		close(dev);
	return child_write(&j, r);
}

/*
 * The creator gone and no process with a context: without the device
 * held the fake tears the GPU down and frees the memory, as NVIDIA's
 * driver does with persistence off, so the next map fails; with it held
 * the next client reads what the creator wrote.
 */
static void teardown_case(struct __test_metadata *_metadata,
			  FIXTURE_DATA(agent) *self, bool hold_device)
{
	struct setter s = { .id = self->id, .dir = self->dir,
			    .hold_device = hold_device, .seed = 15 };
	struct job j = { .id = self->id, .seed = 15 };
	struct kvpool_arena a;
	struct report r;

	ASSERT_EQ(0, run_child(child_set, &s, &r, NULL)) TH_LOG("%s", r.text);
	ASSERT_EQ(0, arena_info(self->id, &a));
	EXPECT_EQ(hold_device ? KVPOOL_ARENA_SET_DEVICE : 0, a.out_set_flags);
	EXPECT_EQ(hold_device ? 0 : KID_MAP_FAILED,
		  run_child(child_read, &j, &r, NULL)) TH_LOG("%s", r.text);
	/* Freed: the import of a dead export fails, as the fake documents. */
	if (!hold_device)
		EXPECT_NE(NULL, strstr(r.text, "CUDA_ERROR_INVALID_VALUE"))
			TH_LOG("%s", r.text);
}

TEST_F_TIMEOUT(agent, teardown_lost, 120)
{
	teardown_case(_metadata, self, false);
}

TEST_F_TIMEOUT(agent, teardown_kept, 120)
{
	teardown_case(_metadata, self, true);
}

TEST_HARNESS_MAIN
