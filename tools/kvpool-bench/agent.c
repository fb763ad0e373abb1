// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench agent: what a client's map of a CUDA arena costs through
 * the pool's GPU agent (docs/gpu-agent.md), against the same arena made
 * --shared, where the kernel hands every client its own files.
 *
 * Two pools of the GPU, one chunk a page: an agent arena and a shared
 * one of as many chunks. The agent is the one attached (kvpool-gpud.service)
 * or, with --gpud, a kvpool-gpud this program starts for the agent
 * arena's pool. One client process times, round by round and the two
 * kinds interleaved, kvpool_arena_map() of the whole arena (its fds, the
 * driver's import and map of each chunk; unmapped untimed) and
 * KVPOOL_ARENA with KVPOOL_ARENA_FDS of every chunk alone (the kernel's
 * part and the agent's round trips; the files closed untimed). It prints
 * the median, min and max of each and the ratios; nothing is asserted.
 *
 * Root (it creates and destroys the pools). Every CUDA call is in a
 * child, the arenas' maker and the client: this process forks them and
 * makes none. tools/kvpool-bench/agent-fake.sh runs it against the fake
 * driver in the VM.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define AG_MAX_ROUNDS	1001

struct ag_opts {
	const char *gpu;
	const char *gpud;
	unsigned long long page_bytes;
	unsigned int chunks, rounds;
};

static unsigned long long ag_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static int ag_cmp(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a;
	unsigned long long y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @v; its median, min and max in microseconds. */
static void ag_stats(unsigned long long *v, unsigned int n, double *med,
		     double *min, double *max)
{
	qsort(v, n, sizeof(*v), ag_cmp);
	*med = v[n / 2] / 1e3;
	*min = v[0] / 1e3;
	*max = v[n - 1] / 1e3;
}

static int ag_open(unsigned int id, struct kvpool **kp)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	return kvpool_open(path, kp);
}

/* KVPOOL_ARENA with KVPOOL_ARENA_FDS of all @n chunks: ns, or 0. */
static unsigned long long ag_time_fds(struct kvpool *kp, unsigned int n,
				      struct kvpool_arena_fd *f)
{
	unsigned long long t0, t1;
	unsigned int i;

	t0 = ag_now_ns();
	if (kvpool_arena_fds(kp, 0, n, f, NULL) != (int)n)
		return 0;
	t1 = ag_now_ns();
	for (i = 0; i < n; i++)
		close(f[i].out_fd);
	return t1 - t0;
}

/* kvpool_arena_map() of the whole arena: ns, or 0. */
static unsigned long long ag_time_map(struct kvpool *kp)
{
	struct kvpool_arena_view v;
	unsigned long long t0, t1;

	t0 = ag_now_ns();
	if (kvpool_arena_map(kp, &v))
		return 0;
	t1 = ag_now_ns();
	kvpool_arena_unmap(&v);
	return t1 - t0;
}

/* The client: times both kinds, prints the table. Its exit status. */
static int ag_client(const struct ag_opts *o, const unsigned int id[2])
{
	static unsigned long long map[2][AG_MAX_ROUNDS], fds[2][AG_MAX_ROUNDS];
	static const char *const kind[2] = { "agent", "shared" };
	struct kvpool_arena_fd *f;
	double med[2][2], min[2][2], max[2][2];
	struct kvpool *kp[2];
	unsigned int r, k;

	f = calloc(o->chunks, sizeof(*f));
	if (!f)
		return 1;
	for (k = 0; k < 2; k++) {
		if (ag_open(id[k], &kp[k])) {
			fprintf(stderr, "kvpool-bench agent: open pool %u failed\n",
				id[k]);
			return 1;
		}
		/* Untimed: the driver's first context, the first imports. */
		if (!ag_time_map(kp[k])) {
			fprintf(stderr, "kvpool-bench agent: map of the %s arena: %s\n",
				kind[k], kvpool_arena_error());
			return 1;
		}
	}
	for (r = 0; r < o->rounds; r++) {
		for (k = 0; k < 2; k++) {
			map[k][r] = ag_time_map(kp[k]);
			fds[k][r] = ag_time_fds(kp[k], o->chunks, f);
			if (!map[k][r] || !fds[k][r]) {
				fprintf(stderr, "kvpool-bench agent: round %u, %s arena: %s\n",
					r, kind[k], kvpool_arena_error());
				return 1;
			}
		}
	}
	for (k = 0; k < 2; k++) {
		ag_stats(map[k], o->rounds, &med[0][k], &min[0][k], &max[0][k]);
		ag_stats(fds[k], o->rounds, &med[1][k], &min[1][k], &max[1][k]);
		kvpool_close(kp[k]);
	}
	printf("kvpool-bench agent: a client's map of an arena of %u chunks of %llu bytes, %u rounds (us: median, min, max)\n",
	       o->chunks, o->page_bytes, o->rounds);
	for (k = 0; k < 2; k++)
		printf("  map, %-6s  %12.1f %12.1f %12.1f\n", kind[k],
		       med[0][k], min[0][k], max[0][k]);
	printf("  map, ratio agent/shared  %.2f\n", med[0][0] / med[0][1]);
	for (k = 0; k < 2; k++)
		printf("  fds, %-6s  %12.1f %12.1f %12.1f\n", kind[k],
		       med[1][k], min[1][k], max[1][k]);
	printf("  fds, ratio agent/shared  %.2f\n", med[1][0] / med[1][1]);
	printf("  agent's round trip per chunk (fds, agent - shared)  %.1f us\n",
	       (med[1][0] - med[1][1]) / o->chunks);
	free(f);
	return 0;
}

/* The maker: both arenas, in a child of its own (CUDA and fork). */
static int ag_make(const struct ag_opts *o, const unsigned int id[2])
{
	uint32_t idx;
	int ret;

	ret = kvpool_arena_create_cuda_flags(id[0], o->page_bytes, o->chunks,
					     KVPOOL_ARENA_SET_AGENT, &idx);
	if (!ret)
		ret = kvpool_arena_create_cuda(id[1], o->page_bytes, o->chunks,
					       &idx);
	if (ret)
		fprintf(stderr, "kvpool-bench agent: arena create: %s\n",
			kvpool_arena_error());
	return ret ? 1 : 0;
}

/* Run @fn in a child; its exit status, or -1. */
static int ag_fork(int (*fn)(const struct ag_opts *, const unsigned int *),
		   const struct ag_opts *o, const unsigned int id[2])
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		st = fn(o, id);
		fflush(stdout);
		_exit(st);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The attached agent's pid of pool @id, 0 for none, or -errno. */
static int ag_agent_pid(unsigned int id)
{
	struct kvpool_arena a;
	struct kvpool *kp;
	int ret = ag_open(id, &kp);

	if (ret)
		return ret;
	ret = kvpool_arena_info(kp, &a);
	kvpool_close(kp);
	return ret ? ret : (int)a.out_agent_pid;
}

/* Start --gpud for pool @id (0 if none asked), or -1. */
static pid_t ag_start_gpud(const struct ag_opts *o, unsigned int id)
{
	char idstr[16];
	pid_t pid;

	if (!o->gpud)
		return 0;
	snprintf(idstr, sizeof(idstr), "%u", id);
	pid = fork();
	if (!pid) {
		execl(o->gpud, o->gpud, "--foreground", "--pool", idstr,
		      (char *)NULL);
		perror(o->gpud);
		_exit(127);
	}
	return pid;
}

static void ag_usage(FILE *f)
{
	fprintf(f,
"usage: kvpool-bench agent --gpu BDF [--chunks N] [--page-bytes N]\n"
"                          [--rounds R] [--gpud PATH]\n"
"    A client's map of a CUDA arena of N chunks (64) through the pool's\n"
"    GPU agent, against the same arena --shared. Root; two pools of the\n"
"    GPU at BDF are made and destroyed. --gpud starts that kvpool-gpud\n"
"    for the agent pool, else an attached one is waited for.\n");
}

int agent_main(int argc, char **argv)
{
	enum { O_GPU = 256, O_CHUNKS, O_PB, O_ROUNDS, O_GPUD, O_HELP };
	static const struct option lo[] = {
		{ "gpu", required_argument, NULL, O_GPU },
		{ "chunks", required_argument, NULL, O_CHUNKS },
		{ "page-bytes", required_argument, NULL, O_PB },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "gpud", required_argument, NULL, O_GPUD },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ag_opts o = { .page_bytes = 2ULL << 20, .chunks = 64,
			     .rounds = 21 };
	struct kvpool_pool_params p = { .page_tokens = 16, .nr_rows = 4,
					.flags = KVPOOL_CREATE_GPU };
	unsigned int id[2];
	int c, i, ret = 1, st;
	char *end;
	pid_t gpud;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_GPU:
			o.gpu = optarg;
			break;
		case O_CHUNKS:
			o.chunks = strtoul(optarg, &end, 10);
			if (*end || !o.chunks ||
			    o.chunks > KVPOOL_ARENA_MAX_CHUNKS)
				goto bad;
			break;
		case O_PB:
			o.page_bytes = strtoull(optarg, &end, 10);
			if (*end == 'K')
				o.page_bytes <<= 10, end++;
			else if (*end == 'M')
				o.page_bytes <<= 20, end++;
			if (*end || !o.page_bytes)
				goto bad;
			break;
		case O_ROUNDS:
			o.rounds = strtoul(optarg, &end, 10);
			if (*end || !o.rounds || o.rounds > AG_MAX_ROUNDS)
				goto bad;
			break;
		case O_GPUD:
			o.gpud = optarg;
			break;
		case O_HELP:
			ag_usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (!o.gpu || optind != argc)
		goto bad;
	if (kvpool_pci_parse(o.gpu, &p.gpu_domain, &p.gpu_devid)) {
		fprintf(stderr, "kvpool-bench agent: --gpu %s: not a PCI address\n",
			o.gpu);
		return 2;
	}
	/* One page a chunk: the page is the GPU's granularity, or more. */
	p.nr_pages = o.chunks;
	p.row_tokens = o.chunks * p.page_tokens;
	for (i = 0; i < 2; i++) {
		ret = kvpool_pool_create(&p, &id[i]);
		if (ret) {
			fprintf(stderr, "kvpool-bench agent: create: %s\n",
				kvpool_strerror(ret));
			if (i)
				kvpool_pool_destroy(id[0]);
			return 1;
		}
	}
	ret = 1;
	gpud = 0;
	if (ag_fork(ag_make, &o, id))
		goto out;
	gpud = ag_start_gpud(&o, id[0]);
	if (gpud < 0)
		goto out;
	/* A wait for the agent, not a figure: up to 10 s. */
	for (i = 0; i < 1000 && ag_agent_pid(id[0]) <= 0; i++)
		usleep(10 * 1000);
	if (ag_agent_pid(id[0]) <= 0) {
		fprintf(stderr, "kvpool-bench agent: no GPU agent attached to pool %u\n",
			id[0]);
		goto out;
	}
	ret = ag_fork(ag_client, &o, id) ? 1 : 0;
out:
	if (gpud > 0) {
		kill(gpud, SIGTERM);
		waitpid(gpud, &st, 0);
	}
	for (i = 0; i < 2; i++)
		kvpool_pool_destroy(id[i]);
	return ret;
bad:
	ag_usage(stderr);
	return 2;
}
