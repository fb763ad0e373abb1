/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libkvsched: what the schedulers in tools/ (kvpool-replay, kvpool-sim)
 * and kvpool-demo share: integer types and attributes, the seeded RNG,
 * allocation that cannot fail, whole reads and writes, the clock.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Nothing here keeps state of its own beyond the out-of-memory handler:
 * an RNG is a u64 the caller owns, so two schedulers in one process (the
 * replay's clients) never share a stream.
 */
#ifndef KVPOOL_KVSCHED_H
#define KVPOOL_KVSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;

#define __printf(a, b)	__attribute__((format(printf, a, b)))
#define __noreturn	__attribute__((noreturn))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* The tools' exit status (their manuals and --help say the same). */
enum {
	EXIT_PASS = 0,
	EXIT_CHECK_FAILED = 1,
	EXIT_USAGE = 2,
	EXIT_SETUP = 3,		/* module, pool, privilege, memory */
};

static inline u32 div_up(u32 a, u32 b)
{
	return a / b + !!(a % b);
}

static inline u32 min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static inline u32 max_u32(u32 a, u32 b)
{
	return a > b ? a : b;
}

/*
 * Random numbers: splitmix64, the same sequence on every machine, so a
 * seed names one workload everywhere (replay_test.c compares the kernel
 * and core backends on it).
 */
u64 mix64(u64 x);
u64 rng_next(u64 *s);
/* Uniform in [0, 1). */
double rng_unit(u64 *s);
/* Uniform in [0, n). */
u32 rng_below(u64 *s, u32 n);
/* Standard normal (Box-Muller; two draws). */
double rng_normal(u64 *s);
/* Log-normal with the given median, clamped to [lo, hi]. */
u32 rng_lognormal(u64 *s, double median, double sigma, u32 lo, u32 hi);
/* Exponential with the given mean. */
double rng_exp(u64 *s, double mean);

/*
 * Allocation that does not come back empty. On failure the handler set
 * by kvs_set_oom() runs (it must not return); without one the program
 * says "out of memory" and exits EXIT_SETUP.
 */
void kvs_set_oom(void (*fn)(void *ctx), void *ctx);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n, size_t size);

/* All @len bytes, across EINTR and short counts; false on EOF or error. */
bool read_full(int fd, void *buf, size_t len);
bool write_full(int fd, const void *buf, size_t len);

/* CLOCK_MONOTONIC, in seconds. */
double now_s(void);

#endif /* KVPOOL_KVSCHED_H */
