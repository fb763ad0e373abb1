// SPDX-License-Identifier: GPL-2.0-only
/*
 * libkvsched: the seeded RNG of the schedulers (splitmix64).
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Every figure the tools print for a seed depends on this sequence: the
 * constants and the order of the draws are part of their output.
 */
#include <math.h>

#include "kvsched.h"

u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

u64 rng_next(u64 *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return mix64(*s);
}

double rng_unit(u64 *s)
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

u32 rng_below(u64 *s, u32 n)
{
	return (u32)(((rng_next(s) >> 32) * n) >> 32);
}

double rng_normal(u64 *s)
{
	double u1 = rng_unit(s), u2 = rng_unit(s);

	/* log(0) would be -inf: the smallest draw stands in for it. */
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

u32 rng_lognormal(u64 *s, double median, double sigma, u32 lo, u32 hi)
{
	double v = median * exp(sigma * rng_normal(s));

	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return (u32)v;
}

double rng_exp(u64 *s, double mean)
{
	return -mean * log(1.0 - rng_unit(s));
}
