// SPDX-License-Identifier: GPL-2.0-only
/*
 * libkvsched: timed events (evq.h).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <stdlib.h>

#include "evq.h"

static bool ev_less(const struct kvs_event *a, const struct kvs_event *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

void evq_push(struct kvs_evq *q, double when, u32 kind, u32 id, void *ptr)
{
	struct kvs_event e = {
		.when = when, .seq = q->seq++, .kind = kind, .id = id,
		.ptr = ptr,
	};
	u32 i;

	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 64;
		q->ev = xrealloc(q->ev, q->cap, sizeof(*q->ev));
	}
	i = q->n++;
	while (i && ev_less(&e, &q->ev[(i - 1) / 2])) {
		q->ev[i] = q->ev[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->ev[i] = e;
}

struct kvs_event evq_pop(struct kvs_evq *q)
{
	struct kvs_event top = q->ev[0], last = q->ev[--q->n];
	u32 i = 0;

	for (;;) {
		u32 l = 2 * i + 1, m = i;

		if (l < q->n && ev_less(&q->ev[l], &last))
			m = l;
		if (l + 1 < q->n &&
		    ev_less(&q->ev[l + 1], m == i ? &last : &q->ev[l]))
			m = l + 1;
		if (m == i)
			break;
		q->ev[i] = q->ev[m];
		i = m;
	}
	if (q->n)
		q->ev[i] = last;
	return top;
}

void evq_free(struct kvs_evq *q)
{
	free(q->ev);
	q->ev = NULL;
	q->n = q->cap = 0;
}
