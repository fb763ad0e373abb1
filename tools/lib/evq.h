/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libkvsched: a scheduler's timed events (arrivals, turns after a think
 * time, slots that expire), a binary min-heap.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Time is the scheduler's own: steps (kvpool-replay) or seconds
 * (kvpool-sim), as a double either way. Events due at the same time pop
 * in the order they were pushed, so a seed gives one order everywhere.
 */
#ifndef KVPOOL_EVQ_H
#define KVPOOL_EVQ_H

#include "kvsched.h"

struct kvs_event {
	double when;
	u64 seq;		/* pushes before this one */
	u32 kind;		/* the scheduler's */
	u32 id;
	void *ptr;
};

struct kvs_evq {
	struct kvs_event *ev;
	u32 n, cap;
	u64 seq;
};

void evq_push(struct kvs_evq *q, double when, u32 kind, u32 id, void *ptr);
/* The earliest event, taken off; the queue must not be empty. */
struct kvs_event evq_pop(struct kvs_evq *q);
void evq_free(struct kvs_evq *q);

/* Whether an event is due at @now. */
static inline bool evq_due(const struct kvs_evq *q, double now)
{
	return q->n && q->ev[0].when <= now;
}

#endif /* KVPOOL_EVQ_H */
