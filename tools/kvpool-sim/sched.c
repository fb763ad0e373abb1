// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-sim: one scheduler process of one tenant, built on libkvpool.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * The process is an inference server's scheduler without the GPU: it
 * keeps its KV pages in the kernel's pool exactly as SGLang keeps them in
 * its own, at a fixed step rate. Per step:
 *
 *  - pressure: if the kernel asks (poll POLLPRI, KVPOOL_PRESSURE), evict
 *    that many unpinned prefix-cache pages, least recently used leaves
 *    first; also keep some headroom under the tenant's own limit, so that
 *    the tenant's other process (prefill) is not starved by this one's
 *    cache;
 *  - arrivals: new sessions from the workload model (Poisson), follow-up
 *    turns after a think time, rows imported from the prefill process;
 *  - admission within an estimate of the room left (the tenant's limit,
 *    the pool's free pages, this process's evictable cache, what the
 *    running requests will still need): one ROW_ALLOC for the step, then
 *    ATTACH_PREFIX of the longest cached prefix, or FROM_SLOT for a
 *    streaming session's next turn;
 *  - chunked prefill within a token budget: one EXTEND, one COMMIT, then
 *    one DONATE of the prefilled full pages (or, in the prefill process,
 *    EXPORT and SCM_RIGHTS of each finished row);
 *  - decode: ONE EXTEND for the whole running batch, speculative rows
 *    allocated a few tokens ahead, one COMMIT of the accepted tokens,
 *    SWA_FREE for sliding-window rows;
 *  - on ENOSPC or EDQUOT: evict cache, then drop parked session slots,
 *    then retract the newest request (RELEASE without donate; it is
 *    requeued and recomputed later), and retry;
 *  - finish: TRIM of the speculative tail, then TO_SLOT (streaming
 *    session) or RELEASE with KVPOOL_RELEASE_DONATE (one call).
 *
 * The prefix cache is a radix tree at page granularity kept here, in
 * libkvsched's pcache (the kernel only knows which pages are in the
 * cache and how many rows borrow each), ordered by release: a page's
 * turn to go comes from when it was last unpinned, not when it was last
 * matched, as the replay orders it. Token contents are not simulated,
 * only their identity: page i of a session is the same text as page i
 * of every session that shares its system prompt, if the page lies
 * within that prompt, and of no one else's otherwise. Every count the kernel returns is checked
 * against this program's mirror of its rows and cache.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evq.h"
#include "pcache.h"
#include "sim.h"

#define NIL		0xffffffffU

/* ---- the model ---------------------------------------------------------- */

enum { RQ_WAIT, RQ_PREFILL, RQ_DECODE };

/* This program's mirror of a row the process holds (or parks). */
struct row {
	struct kvpool_handle h;
	u32 *pg;		/* page id by position page; NIL: SWA hole */
	u32 cap;
	u32 alloc, comm, prot, swa;	/* tokens */
	u32 stamped;		/* pages whose arena bytes hold their text */
};

/* A conversation; a single request is a one-turn session. */
struct sess {
	u32 id;
	u32 shared;		/* system prompt, or KVS_NONE */
	u32 shared_len;
	u32 nturns;
	u32 user[KVS_MAX_TURNS], out[KVS_MAX_TURNS];
	bool stream, swa;
	u64 rng;		/* draft acceptance, think times */
	struct row *parked;	/* its row in a session slot */
	struct sess *pprev, *pnext;	/* parked sessions, oldest first */
};

struct req {
	struct sess *s;
	u32 turn;
	u32 prompt;		/* tokens before this turn's output */
	u32 out;		/* output tokens to generate */
	u32 gen;		/* generated so far (kept over a retraction) */
	u32 target;		/* what this admission prefills */
	int state;
	struct row *row;
	struct req *next;	/* wait queue */
};

/* Prefill to decode: sent on the socket right after the row's fd. */
struct handoff {
	u32 sess;
	u32 comm;
	u32 nr_pages;
	u32 magic;
};

#define HANDOFF_MAGIC	0x6b767068U

struct pending {
	int fd;
	struct handoff m;
};

/*
 * One scheduler process's whole state. sim_sched_main() owns it and
 * hands it down by pointer: nothing in this file is global, so the
 * scheduler does not depend on being alone in its process.
 */
struct sched {
	const struct sim_sched_args *a;
	struct sim_proc *me;
	const struct sim_workload *wl;
	struct kvpool *kp;
	u32 pt, nr_pages, row_tokens, max_batch, max_running;
	u32 prefill_budget;
	u32 stalled;		/* steps the prefill could not grow */
	u32 last_short;		/* pages the last refusal was short of */
	int last_err;		/* and its errno */
	bool use_cache;
	u64 seed;		/* the tenant's: sessions are the same anywhere */
	u64 arr_rng;		/* this process's arrivals */
	double rate;
	double next_arrival;
	u32 next_sess;
	u32 shared_len[16];
	u32 max_req;
	double ratio;		/* share of the remaining output to reserve */
	u32 ahead;		/* tokens a decode step allocates ahead */
	/* queues */
	struct req *wq_head, *wq_tail;
	u32 nwait;
	struct req **act;	/* holding rows, oldest admission first */
	u32 nact;
	struct kvs_evq evq;	/* follow-up turns, by seconds */
	struct sess *park_head, *park_tail;
	u32 nparked;
	struct pending *pend;
	u32 npend;
	struct pcache pc;	/* the prefix cache's mirror */
	struct kvpool_arena_view view;	/* the pool's memory; base NULL: none */
	/* scratch, max_batch entries or nr_pages ids */
	struct kvpool_extend_entry *xe;
	struct kvpool_len_entry *le;
	struct kvpool_handle *hh;
	struct req **xr;
	u32 *ids;
	u32 *xpg;
	u32 xpg_cap;
	struct kvpool_stats st;
	double now;
};

static void __printf(2, 3) __noreturn die(struct sched *sc,
						 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sc->me->err, sizeof(sc->me->err), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kvpool-sim: %s[%d]: %s\n",
		sc->a->cfg->name, (int)getpid(), sc->me->err);
	sim_store(sc->me->state, PROC_FAILED);
	_exit(1);
}

static void __noreturn oom(void *ctx)
{
	die(ctx, "out of memory");
}

static u32 pages_of(struct sched *sc, u32 tokens)
{
	return (tokens + sc->pt - 1) / sc->pt;
}

#define check_count(what, got, want)					\
	do {								\
		if ((u64)(got) != (u64)(want))				\
			die(sc, "%s: kernel says %lld pages, mirror %llu", \
			    what, (long long)(got),			\
			    (unsigned long long)(want));		\
	} while (0)

/* ---- sessions ----------------------------------------------------------- */

/* Session @id of this tenant: the same in every process of the tenant. */
static struct sess *sess_make(struct sched *sc, u32 id)
{
	struct sess *s = xcalloc(1, sizeof(*s));
	u64 rng = mix64(sc->seed ^ mix64(0x5e55ULL + id));
	struct kvs_shape sh;
	u32 t;

	s->id = id;
	s->rng = rng_next(&rng);
	kvs_shape_draw(&rng, &sc->wl->sess, sc->shared_len, sc->max_req,
		       KVS_MAX_TURNS, &sh);
	s->shared = sh.shared;
	s->shared_len = sh.prefix;
	s->nturns = sh.nturns;
	s->stream = sh.stream;
	s->swa = sh.swa;
	for (t = 0; t < sh.nturns; t++) {
		s->user[t] = sh.user[t];
		s->out[t] = sh.out[t];
	}
	return s;
}

/* Identity of the text in page @i of session @s. */
static u64 page_key(struct sched *sc, const struct sess *s, u32 i)
{
	if (s->shared != KVS_NONE && (u64)(i + 1) * sc->pt <= s->shared_len)
		return mix64(0x5a5a000000000000ULL ^ ((u64)s->shared << 32) ^ i);
	return mix64(mix64(0xa5a5000000000000ULL ^ s->id) + i);
}

/*
 * With an arena, a page's KV is memory every process of the pool sees. The
 * sim computes no KV, so it writes a stamp instead: which text the page
 * holds (its key and position), at both ends of the page, when the page's
 * tokens are committed; and it checks the stamp whenever a page comes to a
 * row it did not compute it for: attached from the prefix cache, or
 * imported from the prefill process, which wrote it in another process.
 */
struct stamp {
	u64 key;
	u64 pos;
};

static struct stamp *stamp_at(struct sched *sc, u32 p, bool end)
{
	char *a = kvpool_page_addr(&sc->view, p);

	if (!a)
		die(sc, "arena: page %u is not in the arena", p);
	return (struct stamp *)(a + (end ? sc->view.page_bytes -
					   sizeof(struct stamp) : 0));
}

static void stamp_write(struct sched *sc, const struct sess *s, u32 i, u32 p)
{
	struct stamp st = { .key = page_key(sc, s, i), .pos = i };

	*stamp_at(sc, p, false) = st;
	*stamp_at(sc, p, true) = st;
	sc->me->arena_written++;
}

static void stamp_check(struct sched *sc, const struct sess *s, u32 i, u32 p,
			const char *how)
{
	const struct stamp *a = stamp_at(sc, p, false);
	const struct stamp *b = stamp_at(sc, p, true);
	u64 key = page_key(sc, s, i);

	if (a->key != key || a->pos != i || b->key != key || b->pos != i)
		die(sc, "arena: %s page %u (position %u of session %u) holds %llx/%llu, not %llx",
		    how, p, i, s->id, (unsigned long long)a->key,
		    (unsigned long long)a->pos, (unsigned long long)key);
	sc->me->arena_checked++;
}

/* The row's newly committed full pages get their stamps. */
static void stamp_row(struct sched *sc, struct req *q)
{
	struct row *r = q->row;
	u32 i, end = r->comm / sc->pt;

	if (!sc->view.base)
		return;
	for (i = r->stamped; i < end; i++)
		if (r->pg[i] != NIL)
			stamp_write(sc, q->s, i, r->pg[i]);
	if (end > r->stamped)
		r->stamped = end;
}

static struct req *req_make(struct sess *s, u32 turn)
{
	struct req *q = xcalloc(1, sizeof(*q));
	u32 t, len = s->shared_len;

	for (t = 0; t < turn; t++)
		len += s->user[t] + s->out[t];
	q->s = s;
	q->turn = turn;
	q->prompt = len + s->user[turn];
	q->out = s->out[turn];
	q->state = RQ_WAIT;
	return q;
}

static void wait_push(struct sched *sc, struct req *q, bool front)
{
	q->state = RQ_WAIT;
	if (front) {
		q->next = sc->wq_head;
		sc->wq_head = q;
		if (!sc->wq_tail)
			sc->wq_tail = q;
	} else {
		q->next = NULL;
		if (sc->wq_tail)
			sc->wq_tail->next = q;
		else
			sc->wq_head = q;
		sc->wq_tail = q;
	}
	sc->nwait++;
}

static void next_turn(struct sched *sc, struct sess *s, u32 turn)
{
	evq_push(&sc->evq, sc->now + rng_exp(&s->rng, sc->wl->think_s), 0,
		 0, req_make(s, turn));
}

/* ---- rows --------------------------------------------------------------- */

static struct row *row_new(struct kvpool_handle h)
{
	struct row *r = xcalloc(1, sizeof(*r));

	r->h = h;
	return r;
}

static void row_reserve(struct row *r, u32 npages)
{
	if (npages <= r->cap)
		return;
	while (r->cap < npages)
		r->cap = r->cap ? 2 * r->cap : 64;
	r->pg = xrealloc(r->pg, r->cap, sizeof(u32));
}

/* Pages the row owns: mapped, not borrowed from the cache. */
static u32 row_owned(struct sched *sc, const struct row *r)
{
	u32 i, n = 0;

	for (i = r->prot / sc->pt; i < pages_of(sc, r->alloc); i++)
		n += r->pg[i] != NIL;
	return n;
}

static void row_free(struct row *r)
{
	free(r->pg);
	free(r);
}

/* ---- the prefix cache: libkvsched's mirror, by release ----------------- */

/*
 * The cache's node for page @i of @s's text, given the node of page
 * i - 1 (PC_ROOT for the first page), or PC_NIL. A text page has at
 * most one node: a donate of text the index already holds leaves an
 * orphan, and a node's parent cannot go while the node is there, so a
 * page's node is its predecessor's child or nobody's.
 */
static u32 text_child(struct sched *sc, const struct sess *s, u32 parent,
		      u32 i)
{
	if (parent == PC_NIL)
		return PC_NIL;
	return pc_lookup(&sc->pc, parent, page_key(sc, s, i));
}

/* The node of page @i - 1 of @s's text; @hint, the row's page there. */
static u32 text_parent(struct sched *sc, const struct sess *s, u32 i,
		       u32 hint)
{
	const struct pc_page *e = hint != NIL ? &sc->pc.pg[hint] : NULL;
	u32 k, node = PC_ROOT;

	if (!i)
		return PC_ROOT;
	/* Usually the row's own page is the node: no walk from the root. */
	if (e && e->state == PG_NODE && e->key == page_key(sc, s, i - 1))
		return hint;
	for (k = 0; k < i && node != PC_NIL; k++)
		node = text_child(sc, s, node, k);
	return node;
}

static void pin(struct sched *sc, u32 p)
{
	pc_pin(&sc->pc, p);
}

static void unpin(struct sched *sc, u32 p)
{
	if (!pc_unpin(&sc->pc, p))
		die(sc, "mirror: unpin of page %u with no pins", p);
}

/*
 * Evicts up to @want unpinned cache pages: duplicates first, then leaves
 * in the order they were last unpinned, each bare parent right after.
 */
static u32 cache_evict(struct sched *sc, u32 want)
{
	struct kvpool_batch_result res;
	u32 n, done = 0;
	int ret;

	n = pc_pick_lru(&sc->pc, sc->ids, min_u32(want, sc->nr_pages));
	while (done < n) {
		u32 k = min_u32(n - done, sc->max_batch);

		ret = kvpool_cache_evict(sc->kp, sc->ids + done, k, &res);
		if (ret < 0)
			die(sc, "cache evict of %u pages: %s (entry %u)", k,
			    kvpool_strerror(ret), res.error_index);
		check_count("cache evict", ret, k);
		done += k;
	}
	pc_evicted(&sc->pc, sc->ids, n);
	sc->me->evicted_pages += n;
	return n;
}

/* Cached pages matching the start of @s, at most @limit, into @out. */
static u32 cache_match(struct sched *sc, const struct sess *s, u32 limit,
		       u32 *out)
{
	u32 i, p = PC_ROOT;

	if (!sc->use_cache)
		return 0;
	for (i = 0; i < limit; i++) {
		p = text_child(sc, s, p, i);
		if (p == PC_NIL)
			break;
		out[i] = p;
	}
	return i;
}

/*
 * The row's pages [prot, comm) whole join the cache, each with @pins;
 * returns how many. A page becomes its text's node unless the text is
 * there already or the text before it is not (then it is an orphan).
 */
static u32 mirror_donate(struct sched *sc, struct req *q, u32 pins)
{
	struct row *r = q->row;
	u32 i, n = 0, start = r->prot / sc->pt, end = r->comm / sc->pt;
	u32 node = text_parent(sc, q->s, start, start ? r->pg[start - 1] : NIL);

	for (i = start; i < end; i++) {
		u32 p = r->pg[i], have = text_child(sc, q->s, node, i), k;

		if (p == NIL) {
			node = have;
			continue;
		}
		pc_add_orphan(&sc->pc, p);
		for (k = 0; k < pins; k++)
			pc_pin(&sc->pc, p);
		if (have == PC_NIL && node != PC_NIL) {
			pc_insert(&sc->pc, node, page_key(sc, q->s, i), p);
			have = p;
		}
		node = have;
		n++;
	}
	if (end * sc->pt > r->prot)
		r->prot = end * sc->pt;
	return n;
}

static void mirror_unpin_row(struct sched *sc, struct row *r)
{
	u32 i;

	for (i = 0; i < r->prot / sc->pt; i++)
		unpin(sc, r->pg[i]);
}

/* ---- active requests ---------------------------------------------------- */

static void act_remove(struct sched *sc, struct req *q)
{
	u32 i;

	for (i = 0; i < sc->nact; i++)
		if (sc->act[i] == q)
			break;
	if (i == sc->nact)
		die(sc, "mirror: request not active");
	memmove(&sc->act[i], &sc->act[i + 1],
		(sc->nact - i - 1) * sizeof(*sc->act));
	sc->nact--;
}

/* RELEASE without donate of one row; returns the pages freed. */
static u32 release_plain(struct sched *sc, struct row *r)
{
	struct kvpool_batch_result res;
	u32 owned = row_owned(sc, r);
	int ret;

	ret = kvpool_release(sc->kp, &r->h, 1, &res);
	if (ret < 0)
		die(sc, "release: %s", kvpool_strerror(ret));
	check_count("release", ret, owned);
	mirror_unpin_row(sc, r);
	row_free(r);
	return owned;
}

/* Retraction: the newest request gives everything back and waits again. */
static u32 retract_newest(struct sched *sc)
{
	struct req *q = sc->act[sc->nact - 1];
	u32 freed;

	sc->nact--;
	freed = release_plain(sc, q->row);
	q->row = NULL;
	wait_push(sc, q, true);
	sc->me->retractions++;
	sc->ratio = fmin(1.0, sc->ratio + 0.3);
	return freed;
}

static void park_unlink(struct sched *sc, struct sess *s)
{
	if (s->pprev)
		s->pprev->pnext = s->pnext;
	else
		sc->park_head = s->pnext;
	if (s->pnext)
		s->pnext->pprev = s->pprev;
	else
		sc->park_tail = s->pprev;
	s->pprev = s->pnext = NULL;
	sc->nparked--;
}

/* SLOT_RELEASE of the oldest parked session; its next turn recomputes. */
static u32 slot_drop_oldest(struct sched *sc)
{
	struct sess *s = sc->park_head;
	struct row *r = s->parked;
	u32 owned = row_owned(sc, r);
	int ret;

	ret = kvpool_slot_release(sc->kp, s->id);
	if (ret < 0)
		die(sc, "slot release: %s", kvpool_strerror(ret));
	check_count("slot release", ret, owned);
	mirror_unpin_row(sc, r);
	row_free(r);
	s->parked = NULL;
	park_unlink(sc, s);
	sc->me->slot_drops++;
	return owned;
}

/*
 * The kernel refused @short pages: evict cache, then drop parked slots,
 * then (if @retract) retract the newest requests. True if anything was
 * given back.
 */
static bool make_room(struct sched *sc, u32 shortfall, bool retract)
{
	u32 got = cache_evict(sc, shortfall + shortfall / 4 + 8);

	while (got < shortfall && sc->park_head)
		got += slot_drop_oldest(sc);
	while (retract && got < shortfall && sc->nact > 1)
		got += retract_newest(sc);
	return got > 0;
}

static void count_refusal(struct sched *sc, int ret)
{
	if (ret == -ENOSPC)
		sc->me->enospc++;
	else
		sc->me->edquot++;
}

/* ---- pressure ----------------------------------------------------------- */

static void answer_pressure(struct sched *sc)
{
	struct kvpool_pressure p;
	int ask = kvpool_pressure(sc->kp, &p);

	if (ask < 0)
		die(sc, "pressure: %s", kvpool_strerror(ask));
	if (!ask)
		return;
	sc->me->pressure_events++;
	sc->me->ask_pages += (u64)ask;
	cache_evict(sc, (u32)ask);
}

/*
 * A tenant split over two processes shares its limit between them, each
 * keeping to its part (the kernel only knows the whole): without that
 * the decode server's cache and requests could take all of it while the
 * prefill server holds half a document and waits for the rest, for ever.
 * Pages this process may hold, or UINT32_MAX.
 */
static u32 my_cap(struct sched *sc)
{
	if (sc->a->share >= 1 || !sc->st.out_tenant_max_pages)
		return UINT32_MAX;
	return (u32)(sc->a->share * sc->st.out_tenant_max_pages);
}

static u32 my_pages(struct sched *sc)
{
	return sc->st.out_client_pages + sc->st.out_client_cache_pages;
}

/*
 * Keeps the tenant (and this process's part) a little under its limit,
 * by this process's cache.
 */
static void keep_headroom(struct sched *sc)
{
	u32 max = sc->st.out_tenant_max_pages, cap = my_cap(sc), want, room;

	if (!max || !sc->use_cache)
		return;
	want = max / 16;
	room = sc->st.out_tenant_pages < max ?
	       max - sc->st.out_tenant_pages : 0;
	if (cap != UINT32_MAX) {
		u32 mine = my_pages(sc) < cap ? cap - my_pages(sc) : 0;

		want = cap / 16;
		room = mine < room ? mine : room;
	}
	if (room < want)
		cache_evict(sc, want - room);
}

/* ---- admission ---------------------------------------------------------- */

/* Pages this process may still take, as far as it can tell. */
static u64 room_estimate(struct sched *sc)
{
	u64 tenant = UINT64_MAX, pool, room, reserve = 0;
	u32 i, margin = sc->nr_pages / 64, cap = my_cap(sc);

	if (sc->st.out_tenant_max_pages)
		tenant = sc->st.out_tenant_max_pages > sc->st.out_tenant_pages ?
			 sc->st.out_tenant_max_pages -
			 sc->st.out_tenant_pages : 0;
	if (cap != UINT32_MAX && cap - my_pages(sc) < tenant)
		tenant = cap > my_pages(sc) ? cap - my_pages(sc) : 0;
	pool = sc->st.out_free_pages > margin ?
	       sc->st.out_free_pages - margin : 0;
	room = (tenant < pool ? tenant : pool) + (sc->pc.ncache - sc->pc.npinned);
	for (i = 0; i < sc->nact; i++) {
		const struct req *q = sc->act[i];

		reserve += (u64)(sc->ratio * (q->out - q->gen) / sc->pt) + 1;
	}
	return room > reserve ? room - reserve : 0;
}

static void admit(struct sched *sc)
{
	u64 room = room_estimate(sc);
	struct kvpool_batch_result res;
	u32 n = 0, nrows = 0, i, j;
	struct req *q;
	int ret;

	/* The kernel said no to what runs already: admit nothing more. */
	if (sc->stalled)
		return;
	/*
	 * Exported rows belong to no tenant until the decode server takes
	 * them: while it has not taken half our part, make no more.
	 */
	if (sc->a->role == ROLE_PREFILL && my_cap(sc) != UINT32_MAX &&
	    sc->st.out_export_pages > my_cap(sc) / 2)
		return;

	for (q = sc->wq_head; q && sc->nact + n < sc->max_running &&
	     n < sc->max_batch; q = q->next) {
		u64 need;

		q->target = q->prompt + q->gen;
		if (q->s->parked) {
			need = pages_of(sc, q->target) -
			       pages_of(sc, q->s->parked->alloc);
		} else {
			u32 k = cache_match(sc, q->s, (q->target - 1) / sc->pt,
					    sc->ids);

			need = pages_of(sc, q->target) - k;
			nrows++;
		}
		need += (u64)(sc->ratio * q->out / sc->pt) + 1;
		/* Something must run, or nothing ever frees. */
		if (need > room && (sc->nact + n))
			break;
		room = room > need ? room - need : 0;
		sc->xr[n++] = q;
	}
	if (!n)
		return;
	if (nrows) {
		ret = kvpool_alloc_rows(sc->kp, sc->hh, nrows, &res);
		if (ret == -ENOSPC || ret == -EDQUOT) {
			count_refusal(sc, ret);
			nrows = 0;	/* slot resumes only, this step */
		} else if (ret < 0) {
			die(sc, "row alloc: %s", kvpool_strerror(ret));
		}
	}
	for (i = 0, j = 0; i < n; i++) {
		struct sess *s;
		u32 k;

		q = sc->xr[i];
		s = q->s;
		if (!s->parked && j == nrows)
			break;		/* out of rows: the rest waits */
		/* The wait queue is FIFO and we walk it from the front. */
		sc->wq_head = q->next;
		if (!sc->wq_head)
			sc->wq_tail = NULL;
		sc->nwait--;
		sc->me->prompt_tokens += q->target;
		if (s->parked) {
			struct kvpool_handle h;

			ret = kvpool_from_slot(sc->kp, s->id, &h);
			if (ret < 0)
				die(sc, "from slot: %s", kvpool_strerror(ret));
			check_count("from slot", ret, row_owned(sc, s->parked));
			q->row = s->parked;
			q->row->h = h;
			s->parked = NULL;
			park_unlink(sc, s);
			sc->me->hit_tokens += q->row->comm;
		} else {
			q->row = row_new(sc->hh[j++]);
			k = cache_match(sc, s, (q->target - 1) / sc->pt,
					sc->ids);
			if (k) {
				ret = kvpool_attach_prefix(sc->kp, q->row->h,
							   sc->ids, k);
				if (ret < 0)
					die(sc, "attach prefix of %u pages: %s",
					    k, kvpool_strerror(ret));
				row_reserve(q->row, k);
				memcpy(q->row->pg, sc->ids, k * sizeof(u32));
				for (u32 m = 0; m < k; m++) {
					pin(sc, sc->ids[m]);
					if (sc->view.base)
						stamp_check(sc, s, m,
							    sc->ids[m],
							    "attached");
				}
				q->row->stamped = k;
				q->row->alloc = q->row->comm = q->row->prot =
					k * sc->pt;
				sc->me->hit_tokens += k * sc->pt;
			}
		}
		q->state = RQ_PREFILL;
		sc->act[sc->nact++] = q;
	}
	if (j < nrows) {
		/* Rows taken for requests we could not place: give back. */
		ret = kvpool_release(sc->kp, sc->hh + j, nrows - j, NULL);
		if (ret < 0)
			die(sc, "release of spare rows: %s",
			    kvpool_strerror(ret));
	}
}

/* ---- extend ------------------------------------------------------------- */

/* Applies a successful EXTEND of sc->xe[0..n) for sc->xr[0..n). */
static void extend_apply(struct sched *sc, u32 n, int got, u32 want)
{
	u32 i, k, off = 0;

	check_count("extend", got, want);
	for (i = 0; i < n; i++) {
		struct row *r = sc->xr[i]->row;
		u32 have = pages_of(sc, r->alloc);
		u32 nn = pages_of(sc, sc->xe[i].new_len);

		check_count("extend entry", sc->xe[i].out_nr_new, nn - have);
		row_reserve(r, nn);
		for (k = have; k < nn; k++)
			r->pg[k] = sc->xpg[off++];
		r->alloc = sc->xe[i].new_len;
	}
}

static void xpg_reserve(struct sched *sc, u32 n)
{
	if (n <= sc->xpg_cap)
		return;
	sc->xpg_cap = n + n / 2;
	sc->xpg = xrealloc(sc->xpg, sc->xpg_cap, sizeof(u32));
}

/*
 * How far past its limit the tenant would go with @want more pages,
 * from STATS: the tenant's pages now, its other process's included.
 */
static u32 quota_short(struct sched *sc, u32 want)
{
	struct kvpool_stats st;
	u64 after;
	int ret = kvpool_stats(sc->kp, &st);

	if (ret < 0)
		die(sc, "stats: %s", kvpool_strerror(ret));
	sc->st = st;
	after = (u64)st.out_tenant_pages + want;
	if (!st.out_tenant_max_pages || after <= st.out_tenant_max_pages)
		return want;	/* another process of the tenant raced us */
	return (u32)(after - st.out_tenant_max_pages);
}

/*
 * One EXTEND of the rows in sc->xr[0..n) to sc->xe[i].new_len; on refusal,
 * make room and try again. Returns false if the batch could not grow.
 */
static bool extend_batch(struct sched *sc, u32 n, bool retract)
{
	struct kvpool_batch_result res;
	int attempt, ret;

	for (attempt = 0; attempt < 6; attempt++) {
		u32 i, k = 0, want = 0;

		/* A retraction may have taken some rows out of the batch. */
		for (i = 0; i < n; i++) {
			struct row *r = sc->xr[i]->row;

			if (!r || sc->xr[i]->state == RQ_WAIT)
				continue;
			sc->xr[k] = sc->xr[i];
			sc->xe[k] = sc->xe[i];
			sc->xe[k].handle = r->h;
			sc->xe[k].out_nr_new = 0;
			want += pages_of(sc, sc->xe[k].new_len) -
				pages_of(sc, r->alloc);
			k++;
		}
		n = k;
		if (!n)
			return false;
		xpg_reserve(sc, want);
		ret = kvpool_extend(sc->kp, sc->xe, n, sc->xpg, want, &res);
		if (ret >= 0) {
			extend_apply(sc, n, ret, want);
			return true;
		}
		if (ret != -ENOSPC && ret != -EDQUOT)
			die(sc, "extend of %u rows: %s (entry %u)", n,
			    kvpool_strerror(ret), res.error_index);
		count_refusal(sc, ret);
		sc->last_short = ret == -ENOSPC ? res.nr_missing :
				 quota_short(sc, want);
		sc->last_err = ret;
		if (!make_room(sc, sc->last_short, retract))
			return false;
	}
	return false;
}

static void commit_rows(struct sched *sc, u32 n)
{
	struct kvpool_batch_result res;
	u32 i;
	int ret;

	for (i = 0; i < n; i++)
		sc->le[i] = (struct kvpool_len_entry){
			.handle = sc->xr[i]->row->h,
			.len = sc->xr[i]->row->comm,
		};
	ret = kvpool_commit(sc->kp, sc->le, n, &res);
	if (ret < 0)
		die(sc, "commit of %u rows: %s (entry %u)", n,
		    kvpool_strerror(ret), res.error_index);
	for (i = 0; i < n; i++)
		stamp_row(sc, sc->xr[i]);
}

/* ---- prefill ------------------------------------------------------------ */

static void export_row(struct sched *sc, struct req *q)
{
	struct row *r = q->row;
	struct handoff m = {
		.sess = q->s->id, .comm = r->comm,
		.nr_pages = row_owned(sc, r), .magic = HANDOFF_MAGIC,
	};
	int fd, ret;

	fd = kvpool_export(sc->kp, r->h);
	if (fd < 0)
		die(sc, "export: %s", kvpool_strerror(fd));
	ret = kvpool_send_fd(sc->a->sock, fd);
	if (!ret && write(sc->a->sock, &m, sizeof(m)) != (ssize_t)sizeof(m))
		ret = -errno;
	close(fd);
	if (ret < 0 && !sim_load(sc->a->sh->stop))
		die(sc, "handing a row to decode: %s", strerror(-ret));
	sc->me->exports++;
	act_remove(sc, q);
	row_free(r);
	free(q->s);
	free(q);
}

static void prefill(struct sched *sc)
{
	struct kvpool_batch_result res;
	u32 budget = sc->prefill_budget, n = 0, i, ndon = 0, ndecode = 0;
	int ret;

	for (i = 0; i < sc->nact; i++) {
		struct req *q = sc->act[i];
		u32 chunk;

		if (q->state != RQ_PREFILL) {
			ndecode++;
			continue;
		}
		if (!budget)
			continue;
		chunk = min_u32(q->target - q->row->comm, budget);
		budget -= chunk;
		sc->xr[n] = q;
		sc->xe[n] = (struct kvpool_extend_entry){
			.handle = q->row->h, .new_len = q->row->comm + chunk,
		};
		n++;
	}
	if (!n)
		return;
	if (!extend_batch(sc, n, false)) {
		/*
		 * Stuck. At the tenant's limit, the room can only come
		 * from the tenant itself, and a prefill server holds no
		 * cache: ask the decode server to evict, now and every
		 * half second while it lasts. (A full pool is the kernel's
		 * to settle: it asks every client back by pressure.) If
		 * nothing moves for 2 s and nothing decodes here, retract
		 * the newest.
		 */
		if (sc->a->need_fd >= 0 && sc->a->role == ROLE_PREFILL &&
		    sc->last_err == -EDQUOT && sc->stalled % 20 == 0) {
			u32 need = sc->last_short;

			if (write(sc->a->need_fd, &need, sizeof(need)) < 0 &&
			    errno != EAGAIN)
				die(sc, "asking decode for room: %s",
				    strerror(errno));
		}
		if (sc->stalled++ * sc->a->step_s > 2.0 && !ndecode &&
		    sc->nact > 1) {
			retract_newest(sc);
			sc->stalled = 0;
		}
		return;
	}
	sc->stalled = 0;
	for (i = 0, n = 0; i < sc->nact; i++)
		if (sc->act[i]->state == RQ_PREFILL &&
		    sc->act[i]->row->alloc > sc->act[i]->row->comm) {
			sc->act[i]->row->comm = sc->act[i]->row->alloc;
			sc->xr[n++] = sc->act[i];
		}
	if (!n)
		return;
	commit_rows(sc, n);
	for (i = 0; i < n; i++) {
		struct req *q = sc->xr[i];
		struct row *r = q->row;

		if (r->comm < q->target)
			continue;
		q->state = RQ_DECODE;
		if (sc->a->role == ROLE_PREFILL)
			continue;
		if (sc->use_cache && !q->s->swa &&
		    (r->comm / sc->pt) * sc->pt > r->prot) {
			sc->le[ndon] = (struct kvpool_len_entry){
				.handle = r->h, .len = r->comm,
			};
			sc->xr[ndon++] = q;	/* i >= ndon: still unread */
		}
	}
	if (sc->a->role == ROLE_PREFILL) {
		for (i = 0; i < sc->nact;) {
			if (sc->act[i]->state == RQ_DECODE)
				export_row(sc, sc->act[i]);
			else
				i++;
		}
		return;
	}
	if (!ndon)
		return;
	ret = kvpool_donate(sc->kp, sc->le, ndon, &res);
	if (ret < 0)
		die(sc, "donate of %u rows: %s (entry %u)", ndon,
		    kvpool_strerror(ret), res.error_index);
	{
		u64 want = 0;

		for (i = 0; i < ndon; i++)
			want += mirror_donate(sc, sc->xr[i], 1);
		check_count("donate", ret, want);
	}
}

/* ---- decode ------------------------------------------------------------- */

static void swa_free_rows(struct sched *sc)
{
	struct kvpool_batch_result res;
	u32 i, n = 0, p;
	u64 want = 0;
	int ret;

	for (i = 0; i < sc->nact; i++) {
		struct req *q = sc->act[i];
		struct row *r = q->row;
		u32 from, edge;

		if (!q->s->swa || q->state != RQ_DECODE ||
		    r->comm < sc->wl->swa_window)
			continue;
		from = r->prot > r->swa ? r->prot : r->swa;
		edge = ((r->comm - sc->wl->swa_window) / sc->pt) * sc->pt;
		if (edge < from + 4 * sc->pt)
			continue;	/* free in runs of 4 pages */
		for (p = from / sc->pt; p < edge / sc->pt; p++) {
			want += r->pg[p] != NIL;
			r->pg[p] = NIL;
		}
		r->swa = edge;
		sc->le[n++] = (struct kvpool_len_entry){
			.handle = r->h, .len = edge,
		};
	}
	if (!n)
		return;
	ret = kvpool_swa_free(sc->kp, sc->le, n, &res);
	if (ret < 0)
		die(sc, "swa free of %u rows: %s", n, kvpool_strerror(ret));
	check_count("swa free", ret, want);
}

static void finish(struct sched *sc, u32 nfin);

static void decode(struct sched *sc)
{
	u32 i, n = 0, nfin = 0;

	for (i = 0; i < sc->nact; i++) {
		struct req *q = sc->act[i];
		struct row *r = q->row;
		u32 want;

		if (q->state != RQ_DECODE)
			continue;
		want = min_u32(r->comm + sc->ahead,
			       q->prompt + q->out + sc->ahead);
		want = min_u32(want, sc->row_tokens);
		if (want <= r->alloc)
			continue;
		sc->xr[n] = q;
		sc->xe[n] = (struct kvpool_extend_entry){
			.handle = r->h, .new_len = want,
		};
		n++;
	}
	if (n && !extend_batch(sc, n, true))
		return;		/* no room this step: nobody decodes */
	for (i = 0, n = 0; i < sc->nact; i++) {
		struct req *q = sc->act[i];
		struct row *r = q->row;
		u32 acc = 1, d;

		if (q->state != RQ_DECODE)
			continue;
		for (d = 0; d < sc->wl->draft; d++) {
			if (rng_unit(&q->s->rng) >= sc->wl->accept)
				break;
			acc++;
		}
		acc = min_u32(acc, q->out - q->gen);
		acc = min_u32(acc, r->alloc - r->comm);
		if (!acc)
			continue;
		r->comm += acc;
		q->gen += acc;
		sc->me->gen_tokens += acc;
		sc->xr[n++] = q;
	}
	if (!n)
		return;
	commit_rows(sc, n);
	swa_free_rows(sc);
	for (i = 0; i < sc->nact; i++)
		if (sc->act[i]->state == RQ_DECODE &&
		    sc->act[i]->gen >= sc->act[i]->out)
			sc->xr[nfin++] = sc->act[i];
	if (nfin)
		finish(sc, nfin);
}

/* The rows of sc->xr[0..nfin) are done. */
static void finish(struct sched *sc, u32 nfin)
{
	struct kvpool_batch_result res;
	struct req **fin = xcalloc(nfin, sizeof(*fin));
	u32 i, n = 0, ndon = 0, nrel = 0;
	u64 want = 0, dwant = 0;
	int ret;

	memcpy(fin, sc->xr, nfin * sizeof(*fin));
	/* The speculative tail: TRIM, one call. */
	for (i = 0; i < nfin; i++) {
		struct row *r = fin[i]->row;

		if (r->alloc > r->comm) {
			u32 p;

			for (p = pages_of(sc, r->comm);
			     p < pages_of(sc, r->alloc); p++)
				want += r->pg[p] != NIL;
			sc->hh[n++] = r->h;
		}
		r->alloc = r->comm;
	}
	if (n) {
		ret = kvpool_trim(sc->kp, sc->hh, n, &res);
		if (ret < 0)
			die(sc, "trim of %u rows: %s", n, kvpool_strerror(ret));
		check_count("trim", ret, want);
	}
	for (i = 0; i < nfin; i++) {
		struct req *q = fin[i];
		struct sess *s = q->s;
		bool more = q->turn + 1 < s->nturns;

		act_remove(sc, q);
		sc->me->finished++;
		if (more && s->stream) {
			ret = kvpool_to_slot(sc->kp, q->row->h, s->id);
			if (ret < 0)
				die(sc, "to slot: %s", kvpool_strerror(ret));
			check_count("to slot", ret, row_owned(sc, q->row));
			s->parked = q->row;
			s->pprev = sc->park_tail;
			s->pnext = NULL;
			if (sc->park_tail)
				sc->park_tail->pnext = s;
			else
				sc->park_head = s;
			sc->park_tail = s;
			sc->nparked++;
			q->row = NULL;
		} else if (sc->use_cache && !s->swa) {
			sc->hh[ndon] = q->row->h;
			sc->xr[ndon++] = q;
			continue;	/* released below */
		} else {
			release_plain(sc, q->row);
			q->row = NULL;
			nrel++;
		}
		if (more)
			next_turn(sc, s, q->turn + 1);
		else if (!s->parked)
			free(s);
		free(q);
	}
	if (ndon) {
		want = 0;
		for (i = 0; i < ndon; i++)
			want += row_owned(sc, sc->xr[i]->row);
		ret = kvpool_release_donate(sc->kp, sc->hh, ndon, &res);
		if (ret < 0)
			die(sc, "release with donate of %u rows: %s", ndon,
			    kvpool_strerror(ret));
		for (i = 0; i < ndon; i++) {
			struct req *q = sc->xr[i];
			struct row *r = q->row;
			u32 np = r->prot / sc->pt, k;

			dwant += mirror_donate(sc, q, 0);
			for (k = 0; k < np; k++)
				unpin(sc, r->pg[k]);
			row_free(r);
			if (q->turn + 1 < q->s->nturns)
				next_turn(sc, q->s, q->turn + 1);
			else
				free(q->s);
			free(q);
		}
		check_count("release with donate", ret, want - dwant);
	}
	free(fin);
}

/* ---- handoff: the decode side ------------------------------------------- */

static void receive_rows(struct sched *sc)
{
	struct pollfd pfd = { .fd = sc->a->sock, .events = POLLIN };

	while (sc->npend < sc->max_batch && poll(&pfd, 1, 0) == 1) {
		struct pending *pe = &sc->pend[sc->npend];
		int fd = kvpool_recv_fd(sc->a->sock);

		if (fd == -ECONNRESET)
			return;
		if (fd < 0)
			die(sc, "receiving a row: %s", strerror(-fd));
		if (!read_full(sc->a->sock, &pe->m, sizeof(pe->m)) ||
		    pe->m.magic != HANDOFF_MAGIC)
			die(sc, "handoff message lost");
		pe->fd = fd;
		sc->npend++;
	}
}

/* The prefill server could not get pages: evict that much cache. */
static void read_needs(struct sched *sc)
{
	u32 need, sum = 0;

	while (read(sc->a->need_fd, &need, sizeof(need)) ==
	       (ssize_t)sizeof(need))
		sum += need;
	if (sum)
		cache_evict(sc, sum);
}

static void import_rows(struct sched *sc)
{
	u32 i = 0;

	read_needs(sc);
	receive_rows(sc);
	while (i < sc->npend && sc->nact < sc->max_running) {
		struct pending *pe = &sc->pend[i];
		struct kvpool_row_query rq;
		struct kvpool_handle h;
		struct req *q;
		struct row *r;
		int ret;

		/* Our part of the tenant first; but always one at a time. */
		if (sc->nact && my_cap(sc) != UINT32_MAX &&
		    my_pages(sc) + pe->m.nr_pages > my_cap(sc)) {
			u32 over = my_pages(sc) + pe->m.nr_pages - my_cap(sc);

			if (cache_evict(sc, over) < over)
				break;
			sc->st.out_client_cache_pages -= over;
		}
		ret = kvpool_import(sc->kp, pe->fd, &h);
		if (ret == -EDQUOT) {
			count_refusal(sc, ret);
			if (make_room(sc, pe->m.nr_pages, false))
				ret = kvpool_import(sc->kp, pe->fd, &h);
			if (ret == -EDQUOT)
				break;	/* later, in order */
		}
		if (ret < 0)
			die(sc, "import: %s", kvpool_strerror(ret));
		check_count("import", ret, pe->m.nr_pages);
		sc->st.out_client_pages += (u32)ret;
		close(pe->fd);
		sc->me->imports++;
		r = row_new(h);
		row_reserve(r, pe->m.nr_pages);
		ret = kvpool_row_query(sc->kp, h, r->pg, r->cap, &rq);
		if (ret < 0)
			die(sc, "row query: %s", kvpool_strerror(ret));
		check_count("row query", ret, pe->m.nr_pages);
		if (rq.out_committed_len != pe->m.comm || rq.out_protected_len)
			die(sc,
			    "imported row: committed %u protected %u, sent %u",
			    rq.out_committed_len, rq.out_protected_len,
			    pe->m.comm);
		r->alloc = rq.out_allocated_len;
		r->comm = rq.out_committed_len;
		q = req_make(sess_make(sc, pe->m.sess), 0);
		/* The prefill process wrote these pages. */
		for (r->stamped = 0; sc->view.base &&
		     r->stamped < r->comm / sc->pt; r->stamped++) {
			if (r->pg[r->stamped] == NIL)
				continue;
			stamp_check(sc, q->s, r->stamped, r->pg[r->stamped],
				    "imported");
			sc->me->arena_imported++;
		}
		q->row = r;
		q->target = q->prompt;
		q->state = RQ_DECODE;
		sc->act[sc->nact++] = q;
		i++;
	}
	memmove(sc->pend, sc->pend + i, (sc->npend - i) * sizeof(*sc->pend));
	sc->npend -= i;
}

/* ---- the process -------------------------------------------------------- */

static void arrivals(struct sched *sc)
{
	if (sc->a->role != ROLE_DECODE) {
		while (sc->next_arrival <= sc->now) {
			struct sess *s = sess_make(sc, sc->next_sess++);

			wait_push(sc, req_make(s, 0), false);
			sc->me->arrived++;
			sc->next_arrival += rng_exp(&sc->arr_rng,
						    1.0 / sc->rate);
		}
	}
	while (evq_due(&sc->evq, sc->now)) {
		wait_push(sc, evq_pop(&sc->evq).ptr, false);
		sc->me->arrived++;
	}
}

static void publish(struct sched *sc)
{
	sim_store(sc->me->running, sc->nact);
	sim_store(sc->me->waiting, sc->nwait);
	sim_store(sc->me->slots, sc->nparked);
	sim_store(sc->me->cache_pages, sc->pc.ncache);
}

/* Everything back, by hand (a crash would do the same by close). */
static void drain(struct sched *sc)
{
	struct kvpool_stats st;
	int ret;
	u32 i;

	sim_store(sc->me->state, PROC_DRAINING);
	while (sc->nact)
		release_plain(sc, sc->act[--sc->nact]->row);
	while (sc->park_head)
		slot_drop_oldest(sc);
	cache_evict(sc, sc->pc.ncache);
	for (i = 0; i < sc->npend; i++)
		close(sc->pend[i].fd);
	sc->npend = 0;
	publish(sc);
	ret = kvpool_stats(sc->kp, &st);
	if (ret < 0)
		die(sc, "stats: %s", kvpool_strerror(ret));
	if (st.out_client_rows || st.out_client_slots || st.out_client_pages ||
	    st.out_client_cache_pages || sc->pc.ncache || sc->pc.npinned)
		die(sc, "after drain: rows %u slots %u pages %u cache %u, mirror cache %u pinned %u",
		    st.out_client_rows, st.out_client_slots,
		    st.out_client_pages, st.out_client_cache_pages,
		    sc->pc.ncache, sc->pc.npinned);
}

static void init(struct sched *sc, const struct sim_sched_args *a)
{
	const struct sim_workload *w = &a->cfg->wl;
	struct kvpool_info info;
	u64 srng;
	u32 k;
	int ret;

	sc->a = a;
	sc->me = a->me;
	sc->wl = w;
	/* Out of memory fails this process as any broken check does. */
	kvs_set_oom(oom, sc);
	ret = kvpool_open(a->pool_path, &sc->kp);
	if (ret < 0)
		die(sc, "open %s: %s", a->pool_path, kvpool_strerror(ret));
	kvpool_info(sc->kp, &info);
	sc->pt = info.out_page_tokens;
	sc->nr_pages = info.out_nr_pages;
	sc->row_tokens = info.out_row_tokens;
	sc->max_batch = info.out_max_batch;
	sc->max_running = (u32)fmax(4, w->max_running * a->scale);
	sc->max_running = min_u32(sc->max_running, sc->max_batch);
	sc->max_running = min_u32(sc->max_running, info.out_nr_rows / 2);
	sc->prefill_budget = w->prefill_budget;
	sc->use_cache = a->role != ROLE_PREFILL;
	sc->ahead = 1 + w->draft;
	sc->ratio = 0.5;
	sc->rate = w->sess_rate * a->scale;
	sc->seed = mix64(a->seed ^ mix64(0x7e4a47ULL + (u64)a->tenant));
	sc->arr_rng = mix64(sc->seed ^ mix64(0xa77ULL + a->gen));
	sc->next_arrival = (now_s() - a->t0) +
			 rng_exp(&sc->arr_rng, 1.0 / sc->rate);
	/* Restarts and the two roles draw from separate id ranges. */
	sc->next_sess = (a->gen << 24) | ((u32)a->role << 22);
	/* Long enough to matter, never more than an eighth of the pool. */
	sc->max_req = min_u32(sc->row_tokens - (sc->ahead + 2) * sc->pt,
			    (u32)((u64)sc->nr_pages * sc->pt / 8));
	srng = mix64(sc->seed ^ 0x5157ULL);
	for (k = 0; k < w->sess.nshared && k < 16; k++)
		sc->shared_len[k] = rng_lognormal(&srng, w->shared_median, 0.4,
						sc->pt, sc->max_req / 2);

	pc_init(&sc->pc, sc->nr_pages, PC_BY_RELEASE);
	ret = kvpool_arena_map(sc->kp, &sc->view);
	if (ret < 0 && ret != -ENODATA)
		die(sc, "mapping the arena: %s", kvpool_strerror(ret));
	sc->act = xcalloc(sc->max_batch, sizeof(*sc->act));
	sc->xe = xcalloc(sc->max_batch, sizeof(*sc->xe));
	sc->le = xcalloc(sc->max_batch, sizeof(*sc->le));
	sc->hh = xcalloc(sc->max_batch, sizeof(*sc->hh));
	sc->xr = xcalloc(sc->max_batch, sizeof(*sc->xr));
	sc->ids = xcalloc(sc->nr_pages, sizeof(u32));
	sc->pend = xcalloc(sc->max_batch, sizeof(*sc->pend));
	xpg_reserve(sc, 4096);
}

int sim_sched_main(const struct sim_sched_args *a)
{
	/* The process's whole state: one scheduler, here for its lifetime. */
	struct sched sched = { 0 };
	struct sched *sc = &sched;
	double next;
	int ret;

	init(sc, a);
	sim_store(sc->me->state, PROC_RUNNING);
	next = now_s();
	while (!sim_load(a->sh->stop)) {
		double left;

		sc->now = now_s() - a->t0;
		ret = kvpool_stats(sc->kp, &sc->st);
		if (ret < 0)
			die(sc, "stats: %s", kvpool_strerror(ret));
		keep_headroom(sc);
		arrivals(sc);
		if (a->role == ROLE_DECODE)
			import_rows(sc);
		admit(sc);
		prefill(sc);
		if (a->role != ROLE_PREFILL)
			decode(sc);
		sc->me->steps++;
		sc->ratio = fmax(0.1, sc->ratio - 0.002);
		publish(sc);

		/* Until the next step: wait for the kernel to ask. */
		next += a->step_s;
		left = next - now_s();
		if (left < -a->step_s) {
			sc->me->late_steps++;
			next = now_s();
			left = 0;
		}
		ret = kvpool_wait_pressure(sc->kp,
					   left > 0 ? (int)(left * 1000) : 0);
		if (ret < 0 && ret != -EINTR)
			die(sc, "poll: %s", kvpool_strerror(ret));
		if (ret == 1) {
			answer_pressure(sc);
			left = next - now_s();
			if (left > 0) {
				struct timespec ts = {
					.tv_sec = (time_t)left,
					.tv_nsec = (long)((left - (time_t)left) * 1e9),
				};

				nanosleep(&ts, NULL);
			}
		}
	}
	drain(sc);
	kvpool_close(sc->kp);
	sim_store(sc->me->state, PROC_DONE);
	return 0;
}
