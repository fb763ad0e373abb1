// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the scheduler replay against the module.
 *
 * Each test runs tools/kvpool-replay/kvpool-replay --backend kernel
 * --create: a seeded continuous-batching workload (chunked prefill with
 * donate, prefix hits through ATTACH_PREFIX, one batched EXTEND per decode
 * step, speculative over-allocation with COMMIT and TRIM, SWA_FREE,
 * ENOSPC handled by CACHE_EVICT, SLOT_RELEASE and retraction, streaming
 * sessions through TO_SLOT and FROM_SLOT) on its own pool, with
 * KVPOOL_VERIFY and the STATS identities checked after every step, the
 * pool whole at the end, and another client's cache pages out of reach.
 * A few thousand requests per page size, and two client processes at
 * once. The replay's exit status is the verdict; its output is passed on
 * as TAP comments.
 *
 * The binary is found from this test's own path: the repository root is
 * two folders above selftests/kernel/. Build it first with
 * `make -C tools/kvpool-replay`.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest.h"

#include <sys/prctl.h>
#include <time.h>

#define REPLAY_REL	"tools/kvpool-replay/kvpool-replay"
#define MAX_ARGS	48

/*
 * Sized for QEMU's TCG (10-30x slower than native here): the four runs
 * take about 25-30 s there. Pools small enough that ENOSPC, LRU eviction,
 * slot drops and retraction all happen. The same runs as `make -C
 * tools/kvpool-replay check` does on the core backend: the summaries of
 * the single-client runs must be the same line for line.
 */
static const char *const common_args[] = {
	"--backend", "kernel", "--create", "--quiet", "--seed", "1",
	"--max-batch", "32", NULL,
};

FIXTURE(replay) {
	char bin[PATH_MAX];
};

FIXTURE_VARIANT(replay) {
	const char *const *args;
};

FIXTURE_VARIANT_ADD(replay, pt1) {
	.args = (const char *const[]){ "--page-tokens", "1", "--pages", "3072",
				       "--row-tokens", "1024", "--prompt-len",
				       "48", "--output-len", "40", "--requests",
				       "3000", NULL },
};

FIXTURE_VARIANT_ADD(replay, pt16) {
	.args = (const char *const[]){ "--page-tokens", "16", "--pages", "700",
				       "--requests", "3000", NULL },
};

FIXTURE_VARIANT_ADD(replay, pt64) {
	.args = (const char *const[]){ "--page-tokens", "64", "--pages", "180",
				       "--requests", "3000", NULL },
};

FIXTURE_VARIANT_ADD(replay, clients2) {
	.args = (const char *const[]){ "--page-tokens", "16", "--pages", "600",
				       "--row-tokens", "2048", "--prompt-len",
				       "96", "--output-len", "64", "--requests",
				       "1500", "--clients", "2", NULL },
};

/* @path with its last @n components cut off, in place. */
static bool cut_components(char *path, int n)
{
	while (n--) {
		char *slash = strrchr(path, '/');

		if (!slash || slash == path)
			return false;
		*slash = 0;
	}
	return true;
}

FIXTURE_SETUP(replay)
{
	char self_path[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	ASSERT_LT(0, n) TH_LOG("readlink /proc/self/exe: %s", strerror(errno));
	self_path[n] = 0;
	/* .../selftests/kernel/replay_test -> ... */
	ASSERT_TRUE(cut_components(self_path, 3))
		TH_LOG("%s: not under selftests/kernel/", self_path);
	ASSERT_GT(sizeof(self->bin),
		  (size_t)snprintf(self->bin, sizeof(self->bin), "%s/%s",
				   self_path, REPLAY_REL));
	ASSERT_EQ(0, access(self->bin, X_OK))
		TH_LOG("%s: %s (build it: make -C tools/kvpool-replay)",
		       self->bin, strerror(errno));
	ASSERT_EQ(0, access(KT_CTL_PATH, R_OK | W_OK))
		TH_LOG(KT_CTL_PATH ": %s (module loaded? root?)",
		       strerror(errno));
}

FIXTURE_TEARDOWN(replay)
{
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Run the replay with the common and the variant's arguments; its output
 * (stdout and stderr) is printed as "# replay: ..." lines. Returns its
 * wait status.
 */
static int run_replay(const char *bin, const char *const *args, double *secs)
{
	const char *argv[MAX_ARGS];
	int argc = 0, i, pfd[2], status = -1;
	pid_t parent = getpid(), pid;
	char line[1024];
	double t0;
	FILE *out;

	argv[argc++] = bin;
	for (i = 0; common_args[i]; i++)
		argv[argc++] = common_args[i];
	for (i = 0; args[i] && argc < MAX_ARGS - 1; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;

	printf("# replay:");
	for (i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	fflush(stdout);
	fflush(stderr);

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* If the harness kills this test on timeout, the replay goes too. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		execv(bin, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	out = fdopen(pfd[0], "r");
	if (out) {
		while (fgets(line, sizeof(line), out)) {
			printf("# replay: %s", line);
			if (!strchr(line, '\n'))
				printf("\n");
			fflush(stdout);
		}
		fclose(out);
	} else {
		close(pfd[0]);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*secs = now_s() - t0;
	return status;
}

/*
 * A guard against a hung replay, not a speed check: on the KASAN kernel
 * under TCG on a busy 2-core machine one run takes over 110 s (a
 * fresh-check saw pt16 and pt64 killed there). The binary's own limit
 * (KVPOOL_TEST_TIMEOUT, KVPOOL_DEBUG_TEST_TIMEOUT) still bounds the four.
 */
TEST_F_TIMEOUT(replay, run, 300)
{
	double secs = 0;
	int status;

	status = run_replay(self->bin, variant->args, &secs);
	printf("# replay: %.1f s\n", secs);
	ASSERT_TRUE(WIFEXITED(status))
		TH_LOG("kvpool-replay died (wait status %#x)", status);
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("kvpool-replay exit status %d (1: a check failed, 2: usage, 3: setup)",
		       WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
