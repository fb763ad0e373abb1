// SPDX-License-Identifier: GPL-2.0-only
/*
 * libkvsched: a synthetic session's shape (workload.h).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <string.h>

#include "workload.h"

static u32 pick_shared(u64 *rng, const struct kvs_workload *w)
{
	double x;
	u32 k;

	if (!w->shared_weight)
		return rng_below(rng, w->nshared);
	x = rng_unit(rng);
	for (k = 0; k < w->nshared - 1; k++) {
		if (x < w->shared_weight[k])
			break;
		x -= w->shared_weight[k];
	}
	return k;
}

static void draw_shared(u64 *rng, const struct kvs_workload *w,
			const u32 *shared_len, struct kvs_shape *sh)
{
	if (w->nshared && rng_unit(rng) < w->p_shared) {
		sh->shared = pick_shared(rng, w);
		sh->prefix = shared_len[sh->shared];
	}
}

void kvs_shape_draw(u64 *rng, const struct kvs_workload *w,
		    const u32 *shared_len, u32 max_req, u32 max_turns,
		    struct kvs_shape *sh)
{
	u32 t, len, nturns = 1;

	memset(sh, 0, sizeof(*sh));
	sh->shared = KVS_NONE;
	if (w->shared_first)
		draw_shared(rng, w, shared_len, sh);
	if (rng_unit(rng) < w->p_multi)
		nturns = 2 + rng_below(rng, w->turns_max - 1);
	nturns = min_u32(min_u32(nturns, max_turns), KVS_MAX_TURNS);
	sh->stream = nturns > 1 && rng_unit(rng) < w->p_stream;
	/* No draw where it cannot happen: the sim's tenants never abandon. */
	sh->abandon = sh->stream && w->p_abandon > 0 &&
		      rng_unit(rng) < w->p_abandon;
	sh->swa = rng_unit(rng) < w->p_swa;
	if (!w->shared_first)
		draw_shared(rng, w, shared_len, sh);
	len = sh->prefix;
	/* Lengths first: the conversation must fit one row. */
	for (t = 0; t < nturns; t++) {
		const struct kvs_len *um = !t && w->first.median ?
					   &w->first : &w->user;
		u32 u = rng_lognormal(rng, um->median, um->sigma, 1, um->max);
		u32 o = rng_lognormal(rng, w->out.median, w->out.sigma, 1,
				      w->out.max);

		if (len + u + o > max_req) {
			if (t)
				break;
			if (len + 1 + o > max_req) {
				sh->shared = KVS_NONE;
				sh->prefix = len = 0;
			}
			u = min_u32(u, max_req - len - o);
		}
		sh->user[t] = u;
		sh->out[t] = o;
		len += u + o;
	}
	sh->nturns = t;
}
