// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-gpud: the GPU agent of kvpool's pools (docs/gpu-agent.md). An
 * arena set with KVPOOL_ARENA_SET_AGENT never hands its chunk files out;
 * a client's map queues one request per chunk on the pool's agent file,
 * and this daemon answers each with a fresh export of the chunk's
 * allocation, made for that client alone (kvpool_agent_serve()).
 *
 *   kvpool-gpud [--pool N]... [--once] [--foreground]
 *
 * It attaches to every pool with a GPU (or to the pools named), looks
 * for new ones once a second, polls the agent files and serves them.
 * One line goes to stderr (the journal, under systemd) per attach, per
 * detach and per failed export. SIGTERM and SIGINT end it with status 0.
 * Nothing is lost when it dies: the kernel keeps the masters, and puts a
 * request it had taken back at the head of the queue for the next agent
 * (systemd restarts it: kvpool-gpud.service). kvpool-gpud(8).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include "kvpool.h"

/* kvpoolctl(8)'s exit codes: 2 a bad command line, 3 no module. */
#define EXIT_USAGE	2
#define EXIT_NO_MODULE	3

/* How often the pools are looked for again, in ms. */
#define RESCAN_MS	1000
/* Pool ids a rescan looks at: as many as the module makes. */
#define MAX_POOLS	4096

static const char *prog = "kvpool-gpud";

/*
 * One pool the daemon is, or wants to be, the agent of. @said: the last
 * errno its attach was logged for, so that a pool that cannot be
 * attached says why once, not every second.
 */
struct pool {
	unsigned int id;
	int fd;			/* the agent file, or -1 */
	bool named;		/* on the command line: kept when gone */
	int said;
};

static struct pool pools[MAX_POOLS];
static unsigned int nr_pools;
/* Only the --pool ones (attach only those), else every pool with a GPU. */
static bool only_named;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--pool N]... [--once] [--foreground]\n"
		"       %s -h|--help | --version\n\n"
		"The GPU agent of kvpool's pools: attaches to every pool with a\n"
		"GPU (or to the pools named), and answers their clients' requests\n"
		"for an agent arena's chunks with exports of their own.\n\n"
		"  --pool N      serve pool N only (repeatable; N, kvpoolN or\n"
		"                /dev/kvpoolN)\n"
		"  --once        serve what waits now, then exit\n"
		"  --foreground  run in the foreground (it always does)\n\n"
		"See kvpool-gpud(8).\n", prog, prog);
}

static struct pool *find_pool(unsigned int id)
{
	unsigned int i;

	for (i = 0; i < nr_pools; i++)
		if (pools[i].id == id)
			return &pools[i];
	return NULL;
}

static struct pool *add_pool(unsigned int id, bool named)
{
	struct pool *p = find_pool(id);

	if (p)
		return p;
	if (nr_pools == MAX_POOLS)
		return NULL;
	p = &pools[nr_pools++];
	*p = (struct pool){ .id = id, .fd = -1, .named = named };
	return p;
}

/* "N", "kvpoolN" or "/dev/kvpoolN", as kvpoolctl takes a POOL. */
static int parse_pool(const char *arg, unsigned int *id)
{
	const char *s = arg;
	unsigned long v;
	char *end;

	if (!strncmp(s, "/dev/", 5))
		s += 5;
	if (!strncmp(s, "kvpool", 6))
		s += 6;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT_MAX)
		return -1;
	*id = (unsigned int)v;
	return 0;
}

static void detach(struct pool *p, const char *why)
{
	close(p->fd);
	p->fd = -1;
	p->said = 0;
	fprintf(stderr, "pool %u: detached (%s)\n", p->id, why);
}

/* Attach to @p; a failure is logged once per errno. */
static void attach(struct pool *p)
{
	int fd = kvpool_agent_attach(p->id);

	if (fd >= 0) {
		p->fd = fd;
		p->said = 0;
		fprintf(stderr, "pool %u: attached as its GPU agent\n", p->id);
		return;
	}
	if (fd == p->said)
		return;
	p->said = fd;
	if (fd == -EBUSY)
		fprintf(stderr, "pool %u: another agent is attached; trying again\n",
			p->id);
	else
		fprintf(stderr, "pool %u: cannot attach: %s\n", p->id,
			kvpool_strerror(fd));
}

/*
 * The pools to attach to now: the named ones, or every pool with a GPU
 * (new ones added, the unattached ones that are gone forgotten), each
 * not attached tried again. -errno if the module's pools cannot be
 * listed (it is not loaded).
 */
static int rescan(void)
{
	static unsigned int ids[MAX_POOLS];
	unsigned int i, j;
	int n;

	if (!only_named) {
		n = kvpool_pool_list(ids, MAX_POOLS);
		if (n < 0)
			return n;
		if (n > MAX_POOLS)
			n = MAX_POOLS;
		for (i = 0; i < (unsigned int)n; i++)
			if (!find_pool(ids[i]) &&
			    kvpool_pool_gpu(ids[i], NULL, NULL) > 0)
				add_pool(ids[i], false);
	}
	for (i = j = 0; i < nr_pools; i++) {
		struct pool *p = &pools[i];

		if (p->fd < 0 && !p->named &&
		    kvpool_pool_gpu(p->id, NULL, NULL) <= 0)
			continue;
		if (p->fd < 0)
			attach(p);
		pools[j++] = *p;
	}
	nr_pools = j;
	return 0;
}

/*
 * Everything that waits on @p's agent file. Each failed export comes
 * back alone with its text: one line of the log each.
 */
static void serve(struct pool *p)
{
	int n;

	do {
		n = kvpool_agent_serve(p->fd);
		if (n > 0 && *kvpool_arena_error())
			fprintf(stderr, "pool %u: export failed: %s\n", p->id,
				kvpool_arena_error());
	} while (n > 0);
	if (n == -ENODEV)
		detach(p, "the pool was destroyed");
	else if (n < 0)
		fprintf(stderr, "pool %u: serving: %s\n", p->id,
			*kvpool_arena_error() ? kvpool_arena_error() :
			kvpool_strerror(n));
}

/* The signals that end the daemon, as a descriptor to poll. */
static int signal_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int run(bool once)
{
	struct pollfd fds[MAX_POOLS + 1];
	struct pool *of[MAX_POOLS + 1];
	struct signalfd_siginfo si;
	bool said_module = false;
	int sfd, ret;
	unsigned int i, n;

	sfd = signal_fd();
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		return 1;
	}
	for (;;) {
		ret = rescan();
		if (ret < 0 && once) {
			fprintf(stderr, "%s: the kvpool module is not loaded (%s)\n",
				prog, kvpool_strerror(ret));
			return EXIT_NO_MODULE;
		}
		if (ret < 0 && !said_module)
			fprintf(stderr, "%s: the kvpool module is not loaded (%s); waiting for it\n",
				prog, kvpool_strerror(ret));
		said_module = ret < 0;

		fds[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (i = 0, n = 1; i < nr_pools; i++) {
			if (pools[i].fd < 0)
				continue;
			of[n] = &pools[i];
			fds[n++] = (struct pollfd){ .fd = pools[i].fd,
						    .events = POLLIN };
		}
		/* --once: what waits now, without waiting for more. */
		ret = poll(fds, n, once ? 0 : RESCAN_MS);
		if (ret < 0 && errno != EINTR) {
			fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
			return 1;
		}
		if (ret > 0 && fds[0].revents &&
		    read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			fprintf(stderr, "%s: %s: exiting\n", prog,
				strsignal((int)si.ssi_signo));
			break;
		}
		for (i = 1; ret > 0 && i < n; i++) {
			if (fds[i].revents & POLLIN)
				serve(of[i]);
			/* Destroyed: its file says so once nothing waits. */
			if (of[i]->fd >= 0 && (fds[i].revents & POLLHUP))
				detach(of[i], "the pool was destroyed");
			if (of[i]->fd >= 0 && (fds[i].revents & POLLNVAL))
				detach(of[i], "its file is not open");
		}
		if (once)
			break;
	}
	/* --once: a pool it could not serve is a failure to report. */
	for (i = 0, ret = 0; once && i < nr_pools; i++)
		if (pools[i].fd < 0)
			ret = 1;
	for (i = 0; i < nr_pools; i++)
		if (pools[i].fd >= 0)
			detach(&pools[i], "exiting");
	close(sfd);
	return once ? ret : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "once", no_argument, NULL, 'o' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	bool once = false;
	unsigned int id;
	int c;

	/* A line of the log at once, as journald reads it. */
	setvbuf(stderr, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pool(optarg, &id)) {
				fprintf(stderr, "%s: --pool: not a pool: '%s'\n",
					prog, optarg);
				return EXIT_USAGE;
			}
			if (!add_pool(id, true))
				return EXIT_USAGE;
			only_named = true;
			break;
		case 'o':
			once = true;
			break;
		case 'f':
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s %s (kvpool ABI %d)\n", prog, kvpool_version(),
			       KVPOOL_ABI_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog,
			argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	return run(once);
}
