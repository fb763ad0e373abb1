// SPDX-License-Identifier: GPL-2.0-only
/*
 * libkvsched: allocation, whole reads and writes, the clock.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kvsched.h"

static void (*oom_fn)(void *ctx);
static void *oom_ctx;

void kvs_set_oom(void (*fn)(void *ctx), void *ctx)
{
	oom_fn = fn;
	oom_ctx = ctx;
}

static void __noreturn oom(void)
{
	if (oom_fn)
		oom_fn(oom_ctx);
	fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
	exit(EXIT_SETUP);
}

/* Never a zero size: NULL would read as a failure. */
void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n, size_t size)
{
	p = reallocarray(p, n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

/*
 * read_full() and write_full() are one loop twice: read() fills a
 * buffer and write() only reads its own, a const a shared loop would
 * have to cast away.
 */
bool read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t k = read(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		len -= (size_t)k;
	}
	return true;
}

bool write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t k = write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		len -= (size_t)k;
	}
	return true;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
