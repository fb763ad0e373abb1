/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libkvsched: the shape of one session of a synthetic inference
 * workload, as both schedulers in tools/ draw it.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * A session is a conversation: it may start with one of a few shared
 * system prompts, has one or more turns (each a user prompt and an
 * output, log-normal in length), may park its row in a session slot
 * between turns (streaming), and may use sliding-window attention. The
 * whole conversation must fit one request's budget. What each tool adds
 * is its own: the replay draws the tokens and the arrival times from
 * the same RNG right after the shape, the sim names the text by the
 * session's id and keeps arrivals on a clock.
 *
 * The order of the draws is part of every seed's trace, and both tools'
 * figures depend on it, so it must not change. The two tools drew the
 * shared prompt at different points before they shared this code, so
 * where it is drawn is the workload's (shared_first): each seed still
 * names the sessions it always did.
 */
#ifndef KVPOOL_WORKLOAD_H
#define KVPOOL_WORKLOAD_H

#include "kvsched.h"

#define KVS_MAX_TURNS	8
#define KVS_NONE	0xffffffffU	/* no shared prompt */

/* Log-normal lengths with this median, clamped to [1, max]. */
struct kvs_len {
	double median;
	double sigma;
	u32 max;
};

struct kvs_workload {
	double p_multi;		/* a session has 2..turns_max turns */
	u32 turns_max;		/* at most KVS_MAX_TURNS */
	double p_stream;	/* a multi-turn one parks its row in a slot */
	double p_abandon;	/* a streaming one parks after its last turn */
	double p_swa;		/* sliding-window attention */
	double p_shared;	/* starts with one of the shared prompts */
	bool shared_first;	/* drawn before the turns, not after */
	u32 nshared;
	/* Their odds: nshared - 1 weights, the last the rest; NULL: even. */
	const double *shared_weight;
	struct kvs_len first;	/* the first turn's prompt; median 0: as user */
	struct kvs_len user;	/* a turn's new prompt tokens */
	struct kvs_len out;	/* a turn's output tokens */
};

struct kvs_shape {
	u32 nturns;
	bool stream, abandon, swa;
	u32 shared;		/* which shared prompt, or KVS_NONE */
	u32 prefix;		/* its length in tokens, or 0 */
	u32 user[KVS_MAX_TURNS];
	u32 out[KVS_MAX_TURNS];
};

/*
 * Draws a session from @rng: @shared_len[] the shared prompts' lengths,
 * @max_req the tokens the whole conversation may hold, @max_turns a cap
 * on its turns. A turn that would not fit ends the session there; a
 * first turn that would not fit drops the shared prompt if that makes
 * room, then is cut to fit.
 */
void kvs_shape_draw(u64 *rng, const struct kvs_workload *w,
		    const u32 *shared_len, u32 max_req, u32 max_turns,
		    struct kvs_shape *sh);

#endif /* KVPOOL_WORKLOAD_H */
