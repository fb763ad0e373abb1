// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-replay: drive the kvpool broker exactly as a continuous-batching
 * scheduler (SGLang, vLLM) does, from a seeded random workload, and check
 * the broker after every step.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Each client is one scheduler. Its requests arrive over time with prompt
 * and output lengths drawn from log-normal distributions; some start with
 * one of a few shared system prompts, some are turns of multi-turn
 * sessions, some of those stream (their row waits in a session slot
 * between turns). Per step a client:
 *
 *  - admits waiting requests: a row each (one ROW_ALLOC for the step),
 *    ATTACH_PREFIX of the longest cached prefix of the prompt (the radix
 *    index lives in this program, at page granularity, with an LRU:
 *    tools/lib/pcache.c, shared with kvpool-sim), or FROM_SLOT for a
 *    streaming session's next turn;
 *  - prefills in chunks within a token budget: one EXTEND for all chunks,
 *    COMMIT, then DONATE of the full pages to the prefix cache;
 *  - decodes the whole running batch with ONE EXTEND; with --spec the
 *    rows are over-allocated that many pages ahead of what a step can
 *    accept, COMMIT takes the accepted tokens; SWA_FREE for the
 *    sliding-window requests every --swa-every tokens;
 *  - on ENOSPC first evicts unpinned cache pages (LRU leaves, one batched
 *    CACHE_EVICT), then drops parked session slots (SLOT_RELEASE), then
 *    retracts the newest request (RELEASE without donate: it is requeued
 *    and gets a new row later);
 *  - finishes requests: TRIM of the speculative tail, then RELEASE with
 *    donate (one call), or TO_SLOT for a streaming session; a row whose
 *    sliding window freed pages above its cached prefix cannot donate
 *    (its prefix has holes): RELEASE with donate must refuse it (EINVAL,
 *    nothing changed), then a plain RELEASE frees it;
 *  - frees the duplicate pages a donate put in the cache (CACHE_EVICT);
 *  - checks: KVPOOL_VERIFY finds 0 violations, the STATS identities hold
 *    and STATS agrees with this program's own mirror of every row, slot
 *    and cache page, and ROW_QUERY of one row (and one slot) per step
 *    matches the mirror page for page; every count an op returns (pages
 *    taken, freed, donated) is the one the mirror predicts.
 *
 * At the end every client releases everything and evicts its whole
 * cache, each client checks that it cannot evict or attach a cache page
 * of another client (ENOENT), and a fresh client checks that the pool is
 * whole again. Exit status: 0 if every check held, 1 if one failed, 2 on
 * a usage error, 3 if the run could not start (module, pool, privilege).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "evq.h"
#include "kvsched.h"
#include "pcache.h"
#include "workload.h"
#include "replay.h"

#define RP_NIL		PC_NIL		/* end of a list */
#define RP_ROOT		PC_ROOT		/* the radix index's root */
#define RP_NONE		KVPOOL_PAGE_NONE
#define RP_NR_SYS	4		/* shared system prompts */
#define RP_DRAFT	3		/* speculative draft tokens per step */
#define RP_IDLE_LIMIT	200000		/* steps without progress: stalled */
/* The new-token ratio: start, floor, decay per step, rise per retraction. */
#define RP_RATIO_INIT	0.7
#define RP_RATIO_MIN	0.15
#define RP_RATIO_DECAY	0.002
#define RP_RATIO_STEP	0.3

/* ---- options ------------------------------------------------------------ */

struct rp_opts {
	u64 seed;
	u32 requests;		/* per client */
	u32 page_tokens;
	u32 pages;		/* 0: 65536 tokens' worth */
	u32 rows;
	u32 row_tokens;
	u32 chunk;
	u32 max_batch;
	u32 spec;		/* pages allocated ahead */
	u32 swa_every;
	u32 swa_window;
	double swa_frac;
	double rate;		/* arrivals per step; 0: from max_batch */
	u32 prompt_len;		/* median new prompt tokens per turn */
	u32 output_len;		/* median output tokens */
	u32 clients;
	u32 verify_every;
	const struct rp_ops *ops;
	const char *pool;
	bool create;
	bool quiet;
};

static struct rp_opts o = {
	.seed = 1,
	.requests = 2000,
	.page_tokens = 16,
	.rows = 256,
	.row_tokens = 4096,
	.chunk = 512,
	.max_batch = 64,
	.spec = 1,
	.swa_every = 32,
	.swa_window = 64,
	.swa_frac = 0.25,
	.prompt_len = 200,
	.output_len = 120,
	.clients = 1,
	.verify_every = 1,
	.pool = "0",
};

static char cmdline[1024];	/* for the reproducer line */
static bool in_child;		/* a forked client: _exit() on failure */

/* ---- tallies ------------------------------------------------------------ */

struct rp_counts {
	u64 finished;
	u64 steps;
	u64 retractions;
	u64 slot_parks;
	u64 slot_resumes;
	u64 slot_drops;		/* SLOT_RELEASE under pressure */
	u64 abandons;		/* SLOT_RELEASE of an abandoned session */
	u64 enospc;		/* ENOSPC answers to EXTEND */
	u64 row_enospc;		/* ENOSPC answers to ROW_ALLOC */
	u64 pg_extend, pg_trim, pg_release, pg_donate, pg_swa, pg_evict;
	u64 tok_prompt, tok_prefix, tok_slot;
	u64 verify;
	u64 calls;
};

static void counts_add(struct rp_counts *a, const struct rp_counts *b)
{
	const u64 *s = (const u64 *)b;
	u64 *d = (u64 *)a;
	size_t i;

	for (i = 0; i < sizeof(*a) / sizeof(u64); i++)
		d[i] += s[i];
}

/* ---- workload ----------------------------------------------------------- */

enum rp_state { RQ_FUTURE, RQ_WAIT, RQ_PREFILL, RQ_RUN, RQ_DONE };

struct rp_row;

/* A session: one conversation; a single request is a one-turn session. */
struct rp_sess {
	u32 id;
	u32 *tok;		/* the whole conversation's tokens */
	u32 len;
	u32 first_req;
	u32 nturns;
	bool streaming;		/* parks its row in a slot between turns */
	bool abandon;		/* parks after its last turn, never returns */
	bool swa;		/* sliding-window request */
	u64 rng;		/* think times */
	struct rp_row *parked;	/* the row in its slot, or NULL */
	u64 slot_id;
	struct rp_sess *park_prev, *park_next;
};

/* A request: one turn of a session. */
struct rp_req {
	u32 id;
	u32 turn;
	struct rp_sess *sess;
	u32 prompt_len;
	u32 total_len;		/* prompt + output */
	enum rp_state state;
	struct rp_row *row;	/* while it holds one */
	u32 fill_len;		/* prefill target of this admission */
	u32 generated;		/* output tokens kept over a retraction */
	u32 chunk;		/* this step's prefill chunk */
	u32 match;		/* pages of cached prefix found at admission */
	u64 run_since;		/* step its prefill completed */
	u64 rng;		/* accepted draft tokens */
};

/* This program's mirror of one row, held or parked. */
struct rp_row {
	struct kvpool_handle h;
	const u32 *tok;
	u32 *pages;		/* by position; RP_NONE where SWA freed */
	u32 nr, cap;
	u32 allocated, committed, protected_len, swa_evicted;
	u32 owned;		/* pages the row owns (not borrowed) */
	u32 cursor;		/* index node at position walked - 1, or root */
	u32 walked;		/* positions matched along the index */
	bool broken;		/* a hole ended indexing for this row */
	u32 last_swa;		/* committed at the last SWA_FREE */
};

/* Events: a request arrives, or an abandoned session's slot expires. */
enum { EV_ARRIVE, EV_ABANDON };

struct rp_client {
	u32 idx;
	void *cl;
	bool open;
	/* geometry */
	u32 nr_pages, pt, nr_rows, row_tokens, max_batch, reserved;
	u32 usable;
	/* workload */
	struct rp_sess *sess;
	u32 nsess;
	struct rp_req *req;
	u32 nreq;
	u32 *tokens;
	u64 tok_total, tok_out;
	u32 nstreaming;
	/* scheduler */
	u64 now;
	struct kvs_evq evq;	/* by step */
	struct rp_req **wait;	/* ring */
	u32 wait_head, nwait, wait_cap;
	struct rp_req **act;	/* holding rows, in admission order */
	u32 nact;
	struct rp_sess *park_head, *park_tail;
	u32 nparked;
	u64 idle;
	bool done;
	double ratio;		/* new-token ratio, for admission */
	struct kvpool_stats st;	/* the last STATS */
	struct pcache pc;	/* the prefix cache's mirror */
	/* scratch */
	struct kvpool_extend_entry *xe;
	struct rp_req **xr;
	u32 *xpages;
	u32 xpages_cap;
	struct kvpool_len_entry *le;
	struct kvpool_handle *hh;
	struct rp_req **fin;
	struct rp_req **drop;	/* finished, with holes: no donate */
	u32 *ids;
	u32 ids_cap;
	u32 *qpages;
	u32 qcap;
	u32 qrr;
	u32 marker;		/* the end check's cache page */
	struct rp_counts cnt;
};

static struct rp_client *clients;	/* in this process */
static u32 nclients;
static struct rp_pool pool;
static bool pool_ready;

static const char *errname(int err)
{
	const char *n = strerrorname_np(err < 0 ? -err : err);

	return n ? n : "E?";
}

static void cleanup_all(void);

static void __printf(2, 3) __noreturn fail(const struct rp_client *c,
					   const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	if (c)
		fprintf(stderr, "kvpool-replay: FAIL: client %u step %" PRIu64
			": ", c->idx, c->now);
	else
		fprintf(stderr, "kvpool-replay: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nkvpool-replay: reproduce with: %s\n", cmdline);
	if (in_child)
		_exit(EXIT_CHECK_FAILED);
	cleanup_all();
	exit(EXIT_CHECK_FAILED);
}

/* Every broker call goes through here, to be counted. */
#define CALL(c, op, ...) \
	((c)->cnt.calls++, o.ops->op((c)->cl, ##__VA_ARGS__))

static void expect_ok(struct rp_client *c, int ret, const char *what)
{
	if (ret < 0)
		fail(c, "%s: %s (%s)", what, errname(ret),
		     kvpool_strerror(ret));
}

static void expect_count(struct rp_client *c, int ret, u64 want,
			 const char *what)
{
	expect_ok(c, ret, what);
	if ((u64)ret != want)
		fail(c, "%s: answered %d pages, the mirror says %" PRIu64,
		     what, ret, want);
}

/* ---- the radix index: one node per cached page ------------------------- */

static u64 page_key(const struct rp_client *c, const u32 *tok, u32 pos)
{
	u64 h = 0x6a09e667f3bcc909ULL;
	u32 i;

	for (i = 0; i < c->pt; i++)
		h = mix64(h ^ tok[(u64)pos * c->pt + i]);
	return h;
}

/* Longest cached prefix of @tok, at most @limit pages, into c->ids. */
static u32 idx_match(struct rp_client *c, const u32 *tok, u32 limit)
{
	u32 node = RP_ROOT, n = 0;

	while (n < limit) {
		u32 p = pc_lookup(&c->pc, node, page_key(c, tok, n));

		if (p == RP_NIL)
			break;
		c->ids[n++] = p;
		node = p;
	}
	return n;
}

static void set_cursor(struct rp_client *c, struct rp_row *r, u32 node)
{
	if (r->cursor != RP_ROOT)
		c->pc.pg[r->cursor].urefs--;
	r->cursor = node;
	if (node != RP_ROOT)
		c->pc.pg[node].urefs++;
}

/*
 * After a donate: walk the row's pages below protected along the index,
 * making each donated page the node for its tokens unless one exists
 * already (then the donated page stays an orphan, a duplicate, freed at
 * the end of the step once no row maps it). A hole (SWA_FREE) ends it.
 */
static void idx_insert_row(struct rp_client *c, struct rp_row *r)
{
	u32 end = r->protected_len / c->pt;

	while (!r->broken && r->walked < end) {
		u32 pos = r->walked;
		u32 page = r->pages[pos];
		u64 key;
		u32 node;

		if (page == RP_NONE) {
			r->broken = true;
			break;
		}
		key = page_key(c, r->tok, pos);
		node = pc_lookup(&c->pc, r->cursor, key);
		if (node == RP_NIL) {
			if (c->pc.pg[page].state != PG_ORPHAN)
				fail(c, "mirror: row %u position %u: page %u is no orphan (state %u)",
				     r->h.req_pool_idx, pos, page,
				     c->pc.pg[page].state);
			pc_insert(&c->pc, r->cursor, key, page);
			node = page;
		} else {
			pc_touch(&c->pc, node);
		}
		set_cursor(c, r, node);
		r->walked++;
	}
}

/* ---- pins and cache accounting ----------------------------------------- */

static void unpin(struct rp_client *c, u32 p)
{
	if (!pc_unpin(&c->pc, p))
		fail(c, "mirror: unpinning page %u with no pins", p);
}

/* ---- rows --------------------------------------------------------------- */

static struct rp_row *row_new(struct rp_client *c, struct kvpool_handle h,
			      const u32 *tok)
{
	struct rp_row *r = xcalloc(1, sizeof(*r));

	r->h = h;
	r->tok = tok;
	r->cap = 16;
	r->pages = xcalloc(r->cap, sizeof(u32));
	r->cursor = RP_ROOT;
	(void)c;
	return r;
}

static void row_reserve(struct rp_row *r, u32 want)
{
	if (want <= r->cap)
		return;
	while (r->cap < want)
		r->cap *= 2;
	r->pages = xrealloc(r->pages, r->cap, sizeof(u32));
}

/* The row is gone from the broker: unpin, drop, free the mirror. */
static void row_forget(struct rp_client *c, struct rp_row *r)
{
	u32 i;

	for (i = 0; i < r->nr; i++) {
		u32 p = r->pages[i];

		if (p == RP_NONE)
			continue;
		if ((u64)i * c->pt < r->protected_len) {
			unpin(c, p);
		} else {
			if (c->pc.pg[p].state != PG_ROW)
				fail(c, "mirror: row page %u in state %u",
				     p, c->pc.pg[p].state);
			c->pc.pg[p].state = PG_NONE;
		}
	}
	set_cursor(c, r, RP_ROOT);
	free(r->pages);
	free(r);
}

/*
 * A prefix is cached whole or not at all: once SWA_FREE freed pages above
 * the row's protected length, DONATE and RELEASE with donate are EINVAL
 * for it (and change nothing).
 */
static bool row_has_holes(const struct rp_row *r)
{
	return r->swa_evicted > r->protected_len;
}

/* Pages a donate up to @upto moves: [protected, upto) whole, no holes. */
static u32 donate_count(const struct rp_client *c, const struct rp_row *r,
			u32 upto)
{
	u32 end = upto / c->pt, n = 0, p;

	for (p = r->protected_len / c->pt; p < end; p++)
		n += r->pages[p] != RP_NONE;
	return n;
}

/* The mirror of a donate: the pages become orphans pinned by the row. */
static u32 row_donate(struct rp_client *c, struct rp_row *r, u32 upto)
{
	u32 end = upto / c->pt, n = 0, p;

	for (p = r->protected_len / c->pt; p < end; p++) {
		u32 id = r->pages[p];

		if (id == RP_NONE)
			continue;
		if (c->pc.pg[id].state != PG_ROW)
			fail(c, "mirror: donating page %u in state %u", id,
			     c->pc.pg[id].state);
		pc_add_orphan(&c->pc, id);
		pc_pin(&c->pc, id);
		n++;
	}
	if (end * c->pt > r->protected_len)
		r->protected_len = end * c->pt;
	r->owned -= n;
	idx_insert_row(c, r);
	return n;
}

/* ---- the wait queue and events ----------------------------------------- */

static void wait_push(struct rp_client *c, struct rp_req *q, bool front)
{
	if (c->nwait == c->wait_cap) {
		u32 i, cap = c->wait_cap * 2;
		struct rp_req **w = xcalloc(cap, sizeof(*w));

		for (i = 0; i < c->nwait; i++)
			w[i] = c->wait[(c->wait_head + i) % c->wait_cap];
		free(c->wait);
		c->wait = w;
		c->wait_head = 0;
		c->wait_cap = cap;
	}
	if (front) {
		c->wait_head = (c->wait_head + c->wait_cap - 1) % c->wait_cap;
		c->wait[c->wait_head] = q;
	} else {
		c->wait[(c->wait_head + c->nwait) % c->wait_cap] = q;
	}
	c->nwait++;
	q->state = RQ_WAIT;
}

static struct rp_req *wait_front(struct rp_client *c)
{
	return c->nwait ? c->wait[c->wait_head] : NULL;
}

static void wait_pop(struct rp_client *c)
{
	c->wait_head = (c->wait_head + 1) % c->wait_cap;
	c->nwait--;
}

static void ev_push(struct rp_client *c, u64 when, u32 kind, u32 id)
{
	evq_push(&c->evq, (double)when, kind, id, NULL);
}

/* ---- workload generation ------------------------------------------------ */

/* The longest request, so that two per client always fit in the pool. */
static u32 max_req_tokens(const struct rp_client *c)
{
	u64 share = (u64)c->usable * c->pt / (2 * o.clients);
	u64 slack = (u64)(o.spec + 1) * c->pt + RP_DRAFT + 1;
	u64 m = c->row_tokens < share ? c->row_tokens : share;

	return m > slack ? (u32)(m - slack) : 0;
}

static void gen_workload(struct rp_client *c)
{
	static const double sys_weight[RP_NR_SYS] = { 0.45, 0.25, 0.18, 0.12 };
	u32 sys_len[RP_NR_SYS];
	u32 *sys_tok[RP_NR_SYS];
	u32 max_req = max_req_tokens(c);
	u32 len_max = max_u32(1, max_req / 4);
	const struct kvs_workload wl = {
		.p_multi = 0.3, .turns_max = 6,
		.p_stream = 0.5, .p_abandon = 0.15, .p_swa = o.swa_frac,
		.p_shared = 0.75, .nshared = RP_NR_SYS,
		.shared_weight = sys_weight,
		.user = { o.prompt_len, 1.0, len_max },
		.out = { o.output_len, 0.9, len_max },
	};
	u64 sys_rng = mix64(o.seed ^ 0x5157ULL);
	u64 rng = mix64(o.seed ^ mix64(0xc11e47ULL + c->idx));
	double rate = o.rate > 0 ? o.rate :
		      o.max_batch / (0.8 * o.output_len);
	u64 ntok = 0, cap = 1 << 16;
	double arrival = 0;
	u32 i, k, t, cap_sess = 64;

	/* System prompts are the same text for every client of a seed. */
	for (k = 0; k < RP_NR_SYS; k++) {
		sys_len[k] = rng_lognormal(&sys_rng, 2.0 * o.prompt_len, 0.5,
					   1, len_max);
		sys_tok[k] = xcalloc(sys_len[k], sizeof(u32));
		for (i = 0; i < sys_len[k]; i++)
			sys_tok[k][i] = (u32)rng_next(&sys_rng);
	}

	c->req = xcalloc(o.requests, sizeof(*c->req));
	c->sess = xcalloc(cap_sess, sizeof(*c->sess));
	c->tokens = xcalloc(cap, sizeof(u32));

	while (c->nreq < o.requests) {
		struct rp_sess *s;
		struct kvs_shape sh;
		u32 nturns, sys, len;
		const u32 *user, *out;
		u64 start;

		if (c->nsess == cap_sess) {
			cap_sess *= 2;
			c->sess = xrealloc(c->sess, cap_sess, sizeof(*c->sess));
		}
		s = &c->sess[c->nsess];
		memset(s, 0, sizeof(*s));
		s->id = c->nsess++;
		s->rng = rng_next(&rng);
		kvs_shape_draw(&rng, &wl, sys_len, max_req, o.requests - c->nreq,
			       &sh);
		nturns = sh.nturns;
		s->streaming = sh.stream;
		s->abandon = sh.abandon;
		s->swa = sh.swa;
		sys = sh.shared;
		user = sh.user;
		out = sh.out;
		len = sh.prefix;
		for (t = 0; t < nturns; t++)
			len += user[t] + out[t];
		s->nturns = nturns;
		s->first_req = c->nreq;

		if (ntok + len > cap) {
			while (ntok + len > cap)
				cap *= 2;
			c->tokens = xrealloc(c->tokens, cap, sizeof(u32));
		}
		start = ntok;
		if (sys < RP_NR_SYS) {
			memcpy(c->tokens + ntok, sys_tok[sys],
			       sys_len[sys] * sizeof(u32));
			ntok += sys_len[sys];
		}
		arrival += -log(1.0 - rng_unit(&rng)) / rate;
		for (t = 0; t < nturns; t++) {
			struct rp_req *q = &c->req[c->nreq];

			q->id = c->nreq++;
			q->turn = t;
			/* c->sess may still move: the pointer is set below */
			q->sess = (struct rp_sess *)(uintptr_t)s->id;
			q->rng = rng_next(&rng);
			for (i = 0; i < user[t]; i++)
				c->tokens[ntok++] = (u32)rng_next(&rng);
			q->prompt_len = (u32)(ntok - start);
			for (i = 0; i < out[t]; i++)
				c->tokens[ntok++] = (u32)rng_next(&rng);
			q->total_len = (u32)(ntok - start);
			q->state = RQ_FUTURE;
			c->tok_total += q->total_len;
			c->tok_out += out[t];
			if (!t)
				ev_push(c, (u64)arrival, EV_ARRIVE, q->id);
		}
		s->len = (u32)(ntok - start);
		/* Pointer set below, once c->tokens stops moving. */
		s->tok = (u32 *)(uintptr_t)start;
		c->nstreaming += s->streaming;
	}
	for (i = 0; i < c->nsess; i++)
		c->sess[i].tok = c->tokens + (uintptr_t)c->sess[i].tok;
	for (i = 0; i < c->nreq; i++)
		c->req[i].sess = &c->sess[(uintptr_t)c->req[i].sess];
	for (k = 0; k < RP_NR_SYS; k++)
		free(sys_tok[k]);
}

/* ---- client setup ------------------------------------------------------- */

static void client_init(struct rp_client *c, u32 idx)
{
	struct kvpool_info info;
	int ret;

	memset(c, 0, sizeof(*c));
	c->idx = idx;
	ret = o.ops->open(&c->cl);
	if (ret < 0) {
		if (in_child)
			_exit(EXIT_SETUP);
		cleanup_all();
		exit(EXIT_SETUP);
	}
	c->open = true;
	ret = CALL(c, info, &info);
	expect_ok(c, ret, "INFO");
	if ((info.out_features & (KVPOOL_FEAT_PREFIX_CACHE | KVPOOL_FEAT_SWA |
				  KVPOOL_FEAT_VERIFY | KVPOOL_FEAT_SLOTS)) !=
	    (KVPOOL_FEAT_PREFIX_CACHE | KVPOOL_FEAT_SWA | KVPOOL_FEAT_VERIFY |
	     KVPOOL_FEAT_SLOTS))
		fail(c, "the pool lacks features (0x%llx)",
		     (unsigned long long)info.out_features);
	c->nr_pages = info.out_nr_pages;
	c->pt = info.out_page_tokens;
	c->nr_rows = info.out_nr_rows;
	c->row_tokens = info.out_row_tokens;
	c->reserved = !!(info.out_create_flags & KVPOOL_CREATE_RESERVE_ZERO);
	c->usable = c->nr_pages - c->reserved;
	c->max_batch = min_u32(o.max_batch, info.out_max_batch);

	pc_init(&c->pc, c->nr_pages, PC_BY_USE);

	c->xe = xcalloc(c->max_batch, sizeof(*c->xe));
	c->xr = xcalloc(c->max_batch, sizeof(*c->xr));
	c->le = xcalloc(c->max_batch, sizeof(*c->le));
	c->hh = xcalloc(c->max_batch, sizeof(*c->hh));
	c->fin = xcalloc(c->max_batch, sizeof(*c->fin));
	c->drop = xcalloc(c->max_batch, sizeof(*c->drop));
	c->act = xcalloc(c->max_batch, sizeof(*c->act));
	c->ids_cap = max_u32(c->max_batch, c->row_tokens / c->pt + 1);
	c->ids = xcalloc(c->ids_cap, sizeof(u32));
	c->qcap = c->row_tokens / c->pt + 2;
	c->qpages = xcalloc(c->qcap, sizeof(u32));
	c->wait_cap = 64;
	c->wait = xcalloc(c->wait_cap, sizeof(*c->wait));
	c->marker = RP_NIL;
	c->ratio = RP_RATIO_INIT;

	if (max_req_tokens(c) < 2 * c->pt + 8) {
		fprintf(stderr, "kvpool-replay: the pool is too small for %u client(s): %u pages of %u tokens, rows of %u tokens\n",
			o.clients, c->usable, c->pt, c->row_tokens);
		if (in_child)
			_exit(EXIT_USAGE);
		cleanup_all();
		exit(EXIT_USAGE);
	}
	ret = CALL(c, stats, &c->st);
	expect_ok(c, ret, "STATS");
	gen_workload(c);
}

static void client_close(struct rp_client *c)
{
	if (c->open)
		o.ops->close(c->cl);
	c->open = false;
}

static void client_free(struct rp_client *c)
{
	u32 i;

	pc_free(&c->pc);
	free(c->xe);
	free(c->xr);
	free(c->xpages);
	free(c->le);
	free(c->hh);
	free(c->fin);
	free(c->drop);
	free(c->act);
	free(c->ids);
	free(c->qpages);
	free(c->wait);
	evq_free(&c->evq);
	for (i = 0; i < c->nreq; i++)
		if (c->req[i].row)
			free(c->req[i].row->pages), free(c->req[i].row);
	for (i = 0; i < c->nsess; i++)
		if (c->sess[i].parked)
			free(c->sess[i].parked->pages),
			free(c->sess[i].parked);
	free(c->req);
	free(c->sess);
	free(c->tokens);
}

/* ---- eviction ----------------------------------------------------------- */

/* Evict c->ids[0..n), picked by pick(): one CACHE_EVICT per max_batch. */
static void evict_ids(struct rp_client *c, u32 n)
{
	struct kvpool_batch_result res;
	u32 done = 0;
	int ret;

	while (done < n) {
		u32 k = min_u32(n - done, c->max_batch);

		ret = CALL(c, cache_evict, c->ids + done, k, &res);
		if (ret < 0)
			fail(c, "CACHE_EVICT of %u pages: %s (entry %d, page %u)",
			     k, errname(ret), (int)res.error_index,
			     res.error_index < k ?
			     c->ids[done + res.error_index] : RP_NIL);
		expect_count(c, ret, k, "CACHE_EVICT");
		done += k;
	}
	pc_evicted(&c->pc, c->ids, n);
	c->cnt.pg_evict += n;
}

/*
 * Evict up to @want unpinned pages: orphans first, then index leaves from
 * the LRU's head, a leaf's parent right after it when it becomes a leaf.
 * Returns how many were evicted.
 */
static u32 evict_lru(struct rp_client *c, u32 want)
{
	u32 total = 0;

	while (total < want) {
		u32 n = pc_pick_lru(&c->pc, c->ids,
				    min_u32(want - total, c->ids_cap));

		if (!n)
			break;
		evict_ids(c, n);
		total += n;
	}
	return total;
}

/* Free the duplicates donates left behind, once nothing maps them. */
static void sweep_orphans(struct rp_client *c)
{
	u32 n = pc_pick_orphans(&c->pc, c->ids, c->ids_cap);

	if (n)
		evict_ids(c, n);
}

/* ---- slots -------------------------------------------------------------- */

static u64 slot_id(const struct rp_client *c, const struct rp_sess *s)
{
	return ((u64)(c->idx + 1) << 40) | s->id;
}

static void park_unlink(struct rp_client *c, struct rp_sess *s)
{
	if (s->park_prev)
		s->park_prev->park_next = s->park_next;
	else
		c->park_head = s->park_next;
	if (s->park_next)
		s->park_next->park_prev = s->park_prev;
	else
		c->park_tail = s->park_prev;
	s->park_prev = s->park_next = NULL;
	c->nparked--;
}

/* SLOT_RELEASE of a parked session. */
static u32 slot_drop(struct rp_client *c, struct rp_sess *s)
{
	struct rp_row *r = s->parked;
	u32 owned = r->owned;
	int ret;

	ret = CALL(c, slot_release, s->slot_id);
	expect_count(c, ret, owned, "SLOT_RELEASE");
	c->cnt.pg_release += owned;
	park_unlink(c, s);
	s->parked = NULL;
	row_forget(c, r);
	return owned;
}

/* ---- retraction --------------------------------------------------------- */

static void act_remove(struct rp_client *c, struct rp_req *q)
{
	u32 i;

	for (i = 0; i < c->nact && c->act[i] != q; i++)
		;
	if (i == c->nact)
		fail(c, "internal: request %u not active", q->id);
	memmove(&c->act[i], &c->act[i + 1],
		(c->nact - i - 1) * sizeof(*c->act));
	c->nact--;
}

/*
 * RELEASE without donate: the request holds nothing afterwards and waits
 * at the head of the queue for a new row. Its handle is dead.
 */
static void retract(struct rp_client *c, struct rp_req *q)
{
	struct rp_row *r = q->row;
	struct kvpool_len_entry e = { .handle = r->h, .len = r->committed };
	struct kvpool_batch_result res;
	int ret;

	ret = CALL(c, release, &r->h, 1, &res);
	expect_count(c, ret, r->owned, "RELEASE (retraction)");
	c->cnt.pg_release += r->owned;
	/* Output kept as text; a second retraction mid-prefill keeps it too. */
	if (r->committed > q->prompt_len + q->generated)
		q->generated = r->committed - q->prompt_len;
	row_forget(c, r);
	q->row = NULL;
	act_remove(c, q);
	wait_push(c, q, true);
	c->cnt.retractions++;
	c->ratio = c->ratio + RP_RATIO_STEP < 1 ? c->ratio + RP_RATIO_STEP : 1;

	/* The dead handle names nothing of ours any more. */
	ret = CALL(c, commit, &e, 1, &res);
	if (ret != -ENOENT)
		fail(c, "COMMIT with a retracted handle (row %u gen %u): %s, want ENOENT",
		     e.handle.req_pool_idx, e.handle.generation,
		     ret < 0 ? errname(ret) : "success");
}

/*
 * Make room for @need pages: evict unpinned cache pages (with some slack,
 * so the next steps do not come back at once), else drop parked slots,
 * oldest first. Returns false if there was nothing to give back.
 */
static bool make_room(struct rp_client *c, u32 need)
{
	u32 got = evict_lru(c, need + max_u32(need, c->usable / 64));

	if (got)
		return true;
	while (c->park_head && got < need) {
		got += slot_drop(c, c->park_head) + 1;
		c->cnt.slot_drops++;
	}
	return got > 0;
}

/* ---- extend ------------------------------------------------------------- */

/* Room for the new page ids of c->xe[0..n). */
static u32 extend_need(struct rp_client *c, u32 n)
{
	u32 i, need = 0;

	for (i = 0; i < n; i++)
		need += div_up(c->xe[i].new_len, c->pt) - c->xr[i]->row->nr;
	if (need > c->xpages_cap) {
		c->xpages_cap = max_u32(need, 2 * c->xpages_cap);
		c->xpages = xrealloc(c->xpages, c->xpages_cap, sizeof(u32));
	}
	return need;
}

/* The mirror of a successful extend of c->xe[0..n). */
static void extend_apply(struct rp_client *c, u32 n, int got, u32 need)
{
	u32 i, j, k = 0;

	if (got < 0 || (u32)got != need)
		fail(c, "EXTEND: %d new pages, the mirror says %u", got, need);
	for (i = 0; i < n; i++) {
		struct rp_row *r = c->xr[i]->row;
		u32 want = div_up(c->xe[i].new_len, c->pt);

		if (c->xe[i].out_nr_new != want - r->nr)
			fail(c, "EXTEND: entry %u got %u pages, want %u", i,
			     c->xe[i].out_nr_new, want - r->nr);
		row_reserve(r, want);
		for (j = r->nr; j < want; j++) {
			u32 p = c->xpages[k++];

			if (p >= c->nr_pages || (c->reserved && p == 0))
				fail(c, "EXTEND handed out page %u", p);
			if (c->pc.pg[p].state != PG_NONE)
				fail(c, "EXTEND handed out page %u, which this client holds (state %u)",
				     p, c->pc.pg[p].state);
			c->pc.pg[p].state = PG_ROW;
			r->pages[j] = p;
		}
		r->owned += want - r->nr;
		r->nr = want;
		r->allocated = c->xe[i].new_len;
	}
	c->cnt.pg_extend += need;
}

/*
 * One EXTEND for c->xe/c->xr[0..*n). On ENOSPC: make room, else retract
 * the newest active request (dropping its entry if it has one), and try
 * again. Returns false if every entry was retracted.
 */
static bool extend_batch(struct rp_client *c, u32 *n, const char *what)
{
	struct kvpool_batch_result res;
	u32 need;
	int ret;

	while (*n) {
		need = extend_need(c, *n);
		ret = CALL(c, extend, c->xe, *n, c->xpages, need, &res);
		if (ret >= 0) {
			extend_apply(c, *n, ret, need);
			return true;
		}
		if (ret != -ENOSPC)
			fail(c, "EXTEND (%s, %u entries, %u pages): %s (entry %d)",
			     what, *n, need, errname(ret),
			     (int)res.error_index);
		c->cnt.enospc++;
		if (!res.nr_missing || res.nr_missing > need)
			fail(c, "EXTEND: ENOSPC missing %u of %u pages",
			     res.nr_missing, need);
		if (make_room(c, res.nr_missing))
			continue;
		{
			struct rp_req *q = c->act[c->nact - 1];
			u32 i;

			for (i = 0; i < *n && c->xr[i] != q; i++)
				;
			if (i < *n) {
				memmove(&c->xe[i], &c->xe[i + 1],
					(*n - i - 1) * sizeof(*c->xe));
				memmove(&c->xr[i], &c->xr[i + 1],
					(*n - i - 1) * sizeof(*c->xr));
				(*n)--;
			}
			retract(c, q);
		}
	}
	return false;
}

/* One COMMIT of c->xr[i]'s row to c->le[i].len, i < n. */
static void commit_batch(struct rp_client *c, u32 n)
{
	struct kvpool_batch_result res;
	u32 i;
	int ret;

	if (!n)
		return;
	ret = CALL(c, commit, c->le, n, &res);
	if (ret < 0)
		fail(c, "COMMIT of %u rows: %s (entry %d)", n, errname(ret),
		     (int)res.error_index);
	for (i = 0; i < n; i++)
		c->xr[i]->row->committed = c->le[i].len;
}

/* One DONATE of what the rows in c->xr[0..n) computed. */
static void donate_batch(struct rp_client *c, u32 n)
{
	struct kvpool_batch_result res;
	u32 i, k = 0, want = 0;
	int ret;

	for (i = 0; i < n; i++) {
		struct rp_row *r = c->xr[i]->row;

		if ((r->committed / c->pt) * c->pt <= r->protected_len ||
		    row_has_holes(r))
			continue;
		c->le[k].handle = r->h;
		c->le[k].len = r->committed;
		c->le[k].__reserved = 0;
		c->fin[k++] = c->xr[i];
		want += donate_count(c, r, r->committed);
	}
	if (!k)
		return;
	ret = CALL(c, donate, c->le, k, &res);
	if (ret < 0)
		fail(c, "DONATE of %u rows: %s (entry %d)", k, errname(ret),
		     (int)res.error_index);
	expect_count(c, ret, want, "DONATE");
	for (i = 0; i < k; i++)
		row_donate(c, c->fin[i]->row, c->le[i].len);
	c->cnt.pg_donate += want;
}

/* ---- one scheduler step ------------------------------------------------- */

/* Pages the pool could give us now, by the last STATS. */
static u64 room_estimate(const struct rp_client *c)
{
	return (u64)c->st.out_free_pages + (c->pc.ncache - c->pc.npinned);
}

/*
 * Pages a request may still take: what is left of its prefill and of its
 * output, the output scaled by the new-token ratio (SGLang's estimate of
 * how much of max_new_tokens a request really uses; it jumps up after a
 * retraction and decays back while none happens).
 */
static u64 future_pages(const struct rp_client *c, const struct rp_req *q,
			u32 from)
{
	u32 fill = q->fill_len > from ? q->fill_len - from : 0;
	u32 out = q->total_len - max_u32(from, q->fill_len);

	return div_up(fill, c->pt) + (u64)(out * c->ratio / c->pt) + o.spec +
	       1;
}

static void admit(struct rp_client *c, u32 *budget, u32 *nnew)
{
	u32 rows = 0, i, k;
	struct kvpool_batch_result res;
	u64 reserve = 0;
	int ret;

	for (i = 0; i < c->nact; i++)
		reserve += future_pages(c, c->act[i], c->act[i]->row->committed);
	*nnew = 0;
	/* Parked sessions hold every row and nothing runs: drop the oldest. */
	if (!c->nact && c->nwait && !c->st.out_free_rows && c->park_head &&
	    !wait_front(c)->sess->parked) {
		slot_drop(c, c->park_head);
		c->cnt.slot_drops++;
		c->st.out_free_rows++;
	}
	while (*budget && c->nwait &&
	       c->nact + *nnew < c->max_batch) {
		struct rp_req *q = wait_front(c);
		struct rp_sess *s = q->sess;
		u32 start;
		u64 want;

		q->fill_len = q->prompt_len + q->generated;
		q->match = 0;
		if (s->parked) {
			start = s->parked->committed;
		} else {
			/* Keep at least one token to compute. */
			q->match = idx_match(c, s->tok,
					     (q->fill_len - 1) / c->pt);
			start = q->match * c->pt;
		}
		q->chunk = min_u32(q->fill_len - start, *budget);
		want = future_pages(c, q, start);
		/* One request at least, or nothing would ever run. */
		if ((c->nact + *nnew) && room_estimate(c) < want + reserve)
			break;
		/* Rows, as the last STATS counted them (others may take some). */
		if (!s->parked && rows >= c->st.out_free_rows)
			break;
		reserve += want;
		wait_pop(c);
		*budget -= q->chunk;
		c->fin[(*nnew)++] = q;
		rows += !s->parked;
	}
	if (!*nnew)
		return;

	/* One ROW_ALLOC for the step; on ENOSPC admit fewer. */
	while (rows) {
		ret = CALL(c, alloc_rows, c->hh, rows, &res);
		if (ret >= 0)
			break;
		if (ret != -ENOSPC)
			fail(c, "ROW_ALLOC of %u: %s", rows, errname(ret));
		c->cnt.row_enospc++;
		if (!res.nr_missing || res.nr_missing > rows)
			fail(c, "ROW_ALLOC: ENOSPC missing %u of %u rows",
			     res.nr_missing, rows);
		/* Give the newest ones needing a row back to the queue. */
		for (i = *nnew; i-- > 0 && res.nr_missing;) {
			struct rp_req *q = c->fin[i];

			if (q->sess->parked)
				continue;
			memmove(&c->fin[i], &c->fin[i + 1],
				(*nnew - i - 1) * sizeof(*c->fin));
			(*nnew)--;
			*budget += q->chunk;
			wait_push(c, q, true);
			res.nr_missing--;
			rows--;
		}
	}

	for (i = 0, k = 0; i < *nnew; i++) {
		struct rp_req *q = c->fin[i];
		struct rp_sess *s = q->sess;
		struct rp_row *r;

		c->cnt.tok_prompt += q->fill_len;
		if (s->parked) {
			struct kvpool_handle h;
			u32 gen;

			r = s->parked;
			ret = CALL(c, from_slot, s->slot_id, &h);
			expect_count(c, ret, r->owned, "FROM_SLOT");
			gen = r->h.generation + 1 ? r->h.generation + 1 : 1;
			if (h.req_pool_idx != r->h.req_pool_idx ||
			    h.generation != gen)
				fail(c, "FROM_SLOT: row %u gen %u, want row %u gen %u",
				     h.req_pool_idx, h.generation,
				     r->h.req_pool_idx, gen);
			r->h = h;
			park_unlink(c, s);
			s->parked = NULL;
			c->cnt.slot_resumes++;
			c->cnt.tok_slot += r->committed;
		} else {
			r = row_new(c, c->hh[k++], s->tok);
			if (q->match) {
				/* idx_match() again: c->ids is scratch */
				u32 n = idx_match(c, s->tok, q->match), j;

				if (n != q->match)
					fail(c, "internal: prefix of %u pages became %u",
					     q->match, n);
				ret = CALL(c, attach_prefix, r->h, c->ids, n);
				if (ret < 0)
					fail(c, "ATTACH_PREFIX of %u pages to row %u: %s",
					     n, r->h.req_pool_idx,
					     errname(ret));
				row_reserve(r, n);
				for (j = 0; j < n; j++) {
					r->pages[j] = c->ids[j];
					pc_pin(&c->pc, c->ids[j]);
					pc_touch(&c->pc, c->ids[j]);
				}
				r->nr = n;
				r->allocated = r->committed =
					r->protected_len = n * c->pt;
				r->walked = n;
				set_cursor(c, r, c->ids[n - 1]);
				c->cnt.tok_prefix += n * c->pt;
			}
		}
		q->row = r;
		q->state = RQ_PREFILL;
		c->act[c->nact++] = q;
	}
}

static void prefill(struct rp_client *c)
{
	u32 budget = o.chunk, nnew, n = 0, i;

	/* Requests part-way through their prefill go first. */
	for (i = 0; i < c->nact; i++) {
		struct rp_req *q = c->act[i];

		if (q->state != RQ_PREFILL)
			continue;
		q->chunk = min_u32(q->fill_len - q->row->committed, budget);
		budget -= q->chunk;
	}
	admit(c, &budget, &nnew);

	for (i = 0; i < c->nact; i++) {
		struct rp_req *q = c->act[i];

		if (q->state != RQ_PREFILL || !q->chunk)
			continue;
		c->xr[n] = q;
		c->xe[n].handle = q->row->h;
		c->xe[n].new_len = q->row->committed + q->chunk;
		c->xe[n].out_nr_new = 0;
		n++;
	}
	if (!n || !extend_batch(c, &n, "prefill"))
		return;
	for (i = 0; i < n; i++) {
		c->le[i].handle = c->xr[i]->row->h;
		c->le[i].len = c->xe[i].new_len;
		c->le[i].__reserved = 0;
	}
	commit_batch(c, n);
	donate_batch(c, n);
	for (i = 0; i < n; i++) {
		struct rp_req *q = c->xr[i];

		q->chunk = 0;
		if (q->row->committed == q->fill_len) {
			q->state = RQ_RUN;
			q->run_since = c->now;
		}
		c->idle = 0;
	}
}

static void swa_batch(struct rp_client *c, u32 n)
{
	struct kvpool_batch_result res;
	u32 i, k = 0, want = 0;
	int ret;

	if (!o.swa_every)
		return;
	for (i = 0; i < n; i++) {
		struct rp_row *r = c->xr[i]->row;
		u32 lo = max_u32(r->protected_len, r->swa_evicted);
		u32 edge, p;

		if (!c->xr[i]->sess->swa ||
		    r->committed - r->last_swa < o.swa_every)
			continue;
		r->last_swa = r->committed;
		edge = r->committed > o.swa_window ?
		       r->committed - o.swa_window : 0;
		if (edge / c->pt <= lo / c->pt)
			continue;
		for (p = lo / c->pt; p < edge / c->pt; p++)
			want += r->pages[p] != RP_NONE;
		c->le[k].handle = r->h;
		c->le[k].len = edge;
		c->le[k].__reserved = 0;
		c->fin[k++] = c->xr[i];
	}
	if (!k)
		return;
	ret = CALL(c, swa_free, c->le, k, &res);
	if (ret < 0)
		fail(c, "SWA_FREE of %u rows: %s (entry %d)", k, errname(ret),
		     (int)res.error_index);
	expect_count(c, ret, want, "SWA_FREE");
	for (i = 0; i < k; i++) {
		struct rp_row *r = c->fin[i]->row;
		u32 lo = max_u32(r->protected_len, r->swa_evicted) / c->pt;
		u32 end = c->le[i].len / c->pt, p;

		for (p = lo; p < end; p++) {
			if (r->pages[p] == RP_NONE)
				continue;
			c->pc.pg[r->pages[p]].state = PG_NONE;
			r->pages[p] = RP_NONE;
			r->owned--;
		}
		r->swa_evicted = max_u32(r->swa_evicted, end * c->pt);
	}
	c->cnt.pg_swa += want;
}

static void finish(struct rp_client *c, u32 nfin);

static void decode(struct rp_client *c)
{
	u32 draft = o.spec ? RP_DRAFT : 0;
	u32 n = 0, i, nfin = 0;

	for (i = 0; i < c->nact; i++) {
		struct rp_req *q = c->act[i];
		struct rp_row *r = q->row;
		u32 need, len;

		if (q->state != RQ_RUN || q->run_since >= c->now)
			continue;
		need = min_u32(c->row_tokens, r->committed + 1 + draft);
		if (!o.spec)
			len = max_u32(r->allocated, r->committed + 1);
		else if (r->allocated < need)
			len = min_u32(c->row_tokens,
				      div_up(need, c->pt) * c->pt +
				      o.spec * c->pt);
		else
			len = r->allocated;
		c->xr[n] = q;
		c->xe[n].handle = r->h;
		c->xe[n].new_len = len;
		c->xe[n].out_nr_new = 0;
		n++;
	}
	/* ONE extend for the whole running batch. */
	if (!n || !extend_batch(c, &n, "decode"))
		return;
	for (i = 0; i < n; i++) {
		struct rp_req *q = c->xr[i];
		struct rp_row *r = q->row;
		u32 acc = 1 + (draft ? rng_below(&q->rng, draft + 1) : 0);

		acc = min_u32(acc, q->total_len - r->committed);
		c->le[i].handle = r->h;
		c->le[i].len = r->committed + acc;
		c->le[i].__reserved = 0;
	}
	commit_batch(c, n);
	c->idle = 0;
	swa_batch(c, n);
	for (i = 0; i < n; i++)
		if (c->xr[i]->row->committed == c->xr[i]->total_len)
			c->fin[nfin++] = c->xr[i];
	if (nfin)
		finish(c, nfin);
}

static u32 think_time(struct rp_sess *s)
{
	return 1 + (u32)rng_exp(&s->rng, 8.0);
}

/*
 * The finished rows c->drop[0..n) have holes above their cached prefix
 * (row_has_holes()): RELEASE with donate must refuse them, naming the
 * first and changing nothing, so they go back with a plain RELEASE, which
 * frees every page they own.
 */
static void release_holed(struct rp_client *c, u32 n)
{
	struct kvpool_batch_result res;
	u32 i, freed = 0;
	int ret;

	if (!n)
		return;
	for (i = 0; i < n; i++) {
		c->hh[i] = c->drop[i]->row->h;
		freed += c->drop[i]->row->owned;
	}
	ret = CALL(c, release_donate, c->hh, n, &res);
	if (ret != -EINVAL || res.error_index != 0)
		fail(c, "RELEASE with donate of %u rows, the first with holes (swa_evicted %u > protected %u): %s (entry %d), want EINVAL (entry 0)",
		     n, c->drop[0]->row->swa_evicted,
		     c->drop[0]->row->protected_len,
		     ret < 0 ? errname(ret) : "success", (int)res.error_index);
	ret = CALL(c, release, c->hh, n, &res);
	if (ret < 0)
		fail(c, "RELEASE of %u rows with holes: %s (entry %d)", n,
		     errname(ret), (int)res.error_index);
	expect_count(c, ret, freed, "RELEASE (rows with holes)");
	for (i = 0; i < n; i++) {
		row_forget(c, c->drop[i]->row);
		c->drop[i]->row = NULL;
	}
	c->cnt.pg_release += freed;
}

/* c->fin[0..nfin) are done: trim, then park or release with donate. */
static void finish(struct rp_client *c, u32 nfin)
{
	struct kvpool_batch_result res;
	u32 i, k = 0, nd = 0, want = 0, donated = 0, freed = 0;
	int ret;

	/* TRIM the speculative tails, one call. */
	for (i = 0; i < nfin; i++) {
		struct rp_row *r = c->fin[i]->row;
		u32 keep = div_up(r->committed, c->pt), p;

		if (r->allocated == r->committed)
			continue;
		for (p = keep; p < r->nr; p++)
			want += r->pages[p] != RP_NONE;
		c->hh[k++] = r->h;
	}
	if (k) {
		ret = CALL(c, trim, c->hh, k, &res);
		expect_count(c, ret, want, "TRIM");
		for (i = 0; i < nfin; i++) {
			struct rp_row *r = c->fin[i]->row;
			u32 keep = div_up(r->committed, c->pt), p;

			for (p = keep; p < r->nr; p++) {
				if (r->pages[p] == RP_NONE)
					continue;
				c->pc.pg[r->pages[p]].state = PG_NONE;
				r->owned--;
			}
			r->nr = keep;
			r->allocated = r->committed;
		}
		c->cnt.pg_trim += want;
	}

	/*
	 * Streaming sessions park; the rest RELEASE with donate, one call,
	 * but for rows with holes above their cached prefix (a sliding
	 * window freed them), which cannot donate: release_holed().
	 */
	k = 0;
	for (i = 0; i < nfin; i++) {
		struct rp_req *q = c->fin[i];
		struct rp_sess *s = q->sess;
		struct rp_row *r = q->row;
		bool last = q->turn + 1 == s->nturns;

		act_remove(c, q);
		q->state = RQ_DONE;
		c->cnt.finished++;
		if (s->streaming && (!last || s->abandon)) {
			s->slot_id = slot_id(c, s);
			ret = CALL(c, to_slot, r->h, s->slot_id);
			expect_count(c, ret, r->owned, "TO_SLOT");
			q->row = NULL;
			s->parked = r;
			s->park_prev = c->park_tail;
			s->park_next = NULL;
			if (c->park_tail)
				c->park_tail->park_next = s;
			else
				c->park_head = s;
			c->park_tail = s;
			c->nparked++;
			c->cnt.slot_parks++;
			ev_push(c, c->now + think_time(s),
				last ? EV_ABANDON : EV_ARRIVE,
				last ? s->id : q->id + 1);
			continue;
		}
		if (row_has_holes(r)) {
			c->drop[nd++] = q;
		} else {
			donated += donate_count(c, r, r->committed);
			c->hh[k] = r->h;
			c->fin[k++] = q;
		}
		if (!last)
			ev_push(c, c->now + think_time(s), EV_ARRIVE,
				q->id + 1);
	}
	if (!k) {
		release_holed(c, nd);
		return;
	}
	for (i = 0; i < k; i++)
		freed += c->fin[i]->row->owned;
	freed -= donated;
	ret = CALL(c, release_donate, c->hh, k, &res);
	if (ret < 0)
		fail(c, "RELEASE with donate of %u rows: %s (entry %d)", k,
		     errname(ret), (int)res.error_index);
	expect_count(c, ret, freed, "RELEASE with donate");
	for (i = 0; i < k; i++) {
		struct rp_req *q = c->fin[i];

		row_donate(c, q->row, q->row->committed);
		row_forget(c, q->row);
		q->row = NULL;
	}
	c->cnt.pg_donate += donated;
	c->cnt.pg_release += freed;
	release_holed(c, nd);
}

/* ---- checks ------------------------------------------------------------- */

static void check_row(struct rp_client *c, const struct rp_row *r,
		      const struct kvpool_row_query *q, int ret, u32 state,
		      const char *what)
{
	u32 i;

	expect_ok(c, ret, what);
	if (q->out_state != state || q->out_nr_pages != r->nr ||
	    q->out_req_pool_idx != r->h.req_pool_idx ||
	    q->out_allocated_len != r->allocated ||
	    q->out_committed_len != r->committed ||
	    q->out_protected_len != r->protected_len ||
	    q->out_swa_evicted_len != r->swa_evicted)
		fail(c, "%s of row %u: state %u pages %u alloc %u commit %u prot %u swa %u; mirror: %u %u %u %u %u %u",
		     what, r->h.req_pool_idx, q->out_state, q->out_nr_pages,
		     q->out_allocated_len, q->out_committed_len,
		     q->out_protected_len, q->out_swa_evicted_len, state,
		     r->nr, r->allocated, r->committed, r->protected_len,
		     r->swa_evicted);
	for (i = 0; i < r->nr; i++)
		if (c->qpages[i] != r->pages[i])
			fail(c, "%s of row %u: position %u is page %u, mirror %u",
			     what, r->h.req_pool_idx, i, c->qpages[i],
			     r->pages[i]);
}

/*
 * STATS against the mirror. @exact: the caller knows every client of the
 * pool and passes the sums of their mirrors in @sum (row, slot, pinned,
 * evictable pages).
 */
static void check_stats(struct rp_client *c)
{
	const struct kvpool_stats *s = &c->st;
	u64 pages = 0;
	u32 i;
	struct rp_sess *ps;
	int ret;

	ret = CALL(c, stats, &c->st);
	expect_ok(c, ret, "STATS");
	if ((u64)s->out_free_pages + s->out_row_pages + s->out_slot_pages +
	    s->out_cache_evictable + s->out_cache_pinned +
	    s->out_reserved_pages != c->nr_pages)
		fail(c, "STATS: free %u + row %u + slot %u + evictable %u + pinned %u + reserved %u != %u pages",
		     s->out_free_pages, s->out_row_pages, s->out_slot_pages,
		     s->out_cache_evictable, s->out_cache_pinned,
		     s->out_reserved_pages, c->nr_pages);
	if ((u64)s->out_free_rows + s->out_held_rows + s->out_slot_rows +
	    s->out_reserved_rows != c->nr_rows)
		fail(c, "STATS: free %u + held %u + slot %u + reserved %u != %u rows",
		     s->out_free_rows, s->out_held_rows, s->out_slot_rows,
		     s->out_reserved_rows, c->nr_rows);
	if (s->out_reserved_pages != c->reserved ||
	    s->out_reserved_rows != c->reserved)
		fail(c, "STATS: %u reserved pages, %u reserved rows",
		     s->out_reserved_pages, s->out_reserved_rows);
	for (i = 0; i < c->nact; i++)
		pages += c->act[i]->row->owned;
	for (ps = c->park_head; ps; ps = ps->park_next)
		pages += ps->parked->owned;
	if (s->out_client_rows != c->nact ||
	    s->out_client_slots != c->nparked ||
	    s->out_client_pages != pages ||
	    s->out_client_cache_pages != c->pc.ncache)
		fail(c, "STATS: client rows %u slots %u pages %u cache %u; mirror %u %u %" PRIu64 " %u",
		     s->out_client_rows, s->out_client_slots,
		     s->out_client_pages, s->out_client_cache_pages,
		     c->nact, c->nparked, pages, c->pc.ncache);
}

/* Pool-wide figures against the sum of every client's mirror. */
static void check_pool_exact(struct rp_client *c, struct rp_client *all,
			     u32 n)
{
	const struct kvpool_stats *s = &c->st;
	u64 row = 0, slot = 0, pinned = 0, cache = 0, held = 0, parked = 0;
	struct rp_sess *ps;
	u32 i, j;

	if (s->out_nr_clients != n)
		return;		/* someone else uses the pool */
	for (j = 0; j < n; j++) {
		struct rp_client *k = &all[j];

		for (i = 0; i < k->nact; i++)
			row += k->act[i]->row->owned;
		for (ps = k->park_head; ps; ps = ps->park_next)
			slot += ps->parked->owned;
		pinned += k->pc.npinned;
		cache += k->pc.ncache;
		held += k->nact;
		parked += k->nparked;
	}
	if (s->out_row_pages != row || s->out_slot_pages != slot ||
	    s->out_cache_pinned != pinned ||
	    s->out_cache_evictable != cache - pinned ||
	    s->out_held_rows != held || s->out_slot_rows != parked)
		fail(c, "STATS: row %u slot %u pinned %u evictable %u held %u parked %u; mirrors: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
		     s->out_row_pages, s->out_slot_pages,
		     s->out_cache_pinned, s->out_cache_evictable,
		     s->out_held_rows, s->out_slot_rows, row, slot, pinned,
		     cache - pinned, held, parked);
}

static void check_verify(struct rp_client *c)
{
	int ret = CALL(c, verify);

	c->cnt.verify++;
	if (ret < 0)
		fail(c, "VERIFY: %s", errname(ret));
	if (ret)
		fail(c, "VERIFY: %d broken invariants (see the kernel log or stderr)",
		     ret);
}

static void check_step(struct rp_client *c)
{
	struct kvpool_row_query q;
	int ret;

	if (o.verify_every && !(c->cnt.steps % o.verify_every))
		check_verify(c);
	check_stats(c);
	if (c->nact) {
		struct rp_row *r = c->act[c->qrr++ % c->nact]->row;

		ret = CALL(c, row_query, r->h, c->qpages, c->qcap, &q);
		check_row(c, r, &q, ret, KVPOOL_ROW_HELD, "ROW_QUERY");
	}
	if (c->park_head) {
		struct rp_sess *s = c->park_head;

		ret = CALL(c, slot_query, s->slot_id, c->qpages, c->qcap, &q);
		check_row(c, s->parked, &q, ret, KVPOOL_ROW_SLOT,
			  "ROW_QUERY by slot");
	}
}

/* ---- the client's life -------------------------------------------------- */

/* One scheduler step; false once the workload is done. */
static bool client_step(struct rp_client *c)
{
	if (c->cnt.finished == c->nreq && !c->evq.n)
		return false;
	c->now++;
	/* Nothing to run: skip to the next arrival. */
	if (!c->nact && !c->nwait && c->evq.n &&
	    c->evq.ev[0].when > (double)c->now)
		c->now = (u64)c->evq.ev[0].when;
	while (evq_due(&c->evq, (double)c->now)) {
		struct kvs_event e = evq_pop(&c->evq);

		if (e.kind == EV_ARRIVE) {
			struct rp_req *q = &c->req[e.id];

			/* A streaming session waits at the head of the queue. */
			wait_push(c, q, q->sess->parked != NULL);
		} else if (c->sess[e.id].parked) {
			slot_drop(c, &c->sess[e.id]);
			c->cnt.abandons++;
		}
	}
	c->idle++;
	c->ratio = c->ratio > RP_RATIO_MIN + RP_RATIO_DECAY ?
		   c->ratio - RP_RATIO_DECAY : RP_RATIO_MIN;
	prefill(c);
	decode(c);
	sweep_orphans(c);
	if (o.clients > 1 && c->pc.ncache > c->pc.npinned) {
		/* What a pressure notice would ask of us: shrink the cache. */
		struct kvpool_stats st;
		int ret = CALL(c, stats, &st);

		expect_ok(c, ret, "STATS");
		if (st.out_free_pages < c->usable / 16)
			evict_lru(c, c->usable / 32);
	}
	c->cnt.steps++;
	check_step(c);
	/* Blocked on another process's pages: let it run. */
	if (in_child && c->idle > 1)
		usleep(100);
	if (c->idle > RP_IDLE_LIMIT)
		fail(c, "no progress in %u steps: %u active, %u waiting, %u parked, %u cache pages (%u pinned), %u free pages",
		     RP_IDLE_LIMIT, c->nact, c->nwait, c->nparked, c->pc.ncache,
		     c->pc.npinned, c->st.out_free_pages);
	return true;
}

/* Release everything left and evict the whole cache. */
static void client_drain(struct rp_client *c)
{
	u32 n;

	while (c->nact) {
		struct rp_req *q = c->act[c->nact - 1];

		retract(c, q);
		c->cnt.retractions--;	/* not pressure */
	}
	while (c->park_head)
		slot_drop(c, c->park_head);
	while ((n = pc_pick_all(&c->pc, c->ids, c->ids_cap)))
		evict_ids(c, n);
	check_verify(c);
	check_stats(c);
	if (c->st.out_client_rows || c->st.out_client_slots ||
	    c->st.out_client_pages || c->st.out_client_cache_pages ||
	    c->pc.ncache || c->pc.npinned)
		fail(c, "after draining: client rows %u slots %u pages %u cache %u",
		     c->st.out_client_rows, c->st.out_client_slots,
		     c->st.out_client_pages, c->st.out_client_cache_pages);
	if (c->cnt.finished != c->nreq)
		fail(c, "finished %" PRIu64 " of %u requests",
		     c->cnt.finished, c->nreq);
}

/* One page in our cache, to show another client it cannot touch it. */
static void make_marker(struct rp_client *c)
{
	struct kvpool_extend_entry e = { .new_len = c->pt };
	struct kvpool_len_entry le = { .len = c->pt };
	struct kvpool_batch_result res;
	u32 page;
	int ret;

	ret = CALL(c, alloc_rows, &e.handle, 1, &res);
	expect_count(c, ret, 1, "ROW_ALLOC (marker)");
	ret = CALL(c, extend, &e, 1, &page, 1, &res);
	expect_count(c, ret, 1, "EXTEND (marker)");
	le.handle = e.handle;
	ret = CALL(c, commit, &le, 1, &res);
	expect_ok(c, ret, "COMMIT (marker)");
	ret = CALL(c, release_donate, &e.handle, 1, &res);
	expect_count(c, ret, 0, "RELEASE with donate (marker)");
	c->marker = page;
	c->cnt.pg_extend++;
	c->cnt.pg_donate++;
}

/* Another client's cache page is not ours: ENOENT to evict or attach. */
static void check_foreign(struct rp_client *c, u32 page)
{
	struct kvpool_batch_result res;
	struct kvpool_handle h;
	int ret;

	if (page == c->marker)
		fail(c, "two clients' cache pages are both page %u", page);
	ret = CALL(c, cache_evict, &page, 1, &res);
	if (ret != -ENOENT || res.error_index != 0)
		fail(c, "CACHE_EVICT of another client's cache page %u: %s (entry %d), want ENOENT",
		     page, ret < 0 ? errname(ret) : "success",
		     (int)res.error_index);
	ret = CALL(c, alloc_rows, &h, 1, &res);
	expect_count(c, ret, 1, "ROW_ALLOC");
	ret = CALL(c, attach_prefix, h, &page, 1);
	if (ret != -ENOENT)
		fail(c, "ATTACH_PREFIX of another client's cache page %u: %s, want ENOENT",
		     page, ret < 0 ? errname(ret) : "success");
	ret = CALL(c, release, &h, 1, &res);
	expect_count(c, ret, 0, "RELEASE");
	check_verify(c);
}

static void drop_marker(struct rp_client *c)
{
	struct kvpool_batch_result res;
	int ret;

	ret = CALL(c, cache_evict, &c->marker, 1, &res);
	expect_count(c, ret, 1, "CACHE_EVICT (own marker page)");
	c->cnt.pg_evict++;
	check_stats(c);
	if (c->st.out_client_cache_pages)
		fail(c, "cache pages left: %u", c->st.out_client_cache_pages);
}

/* A fresh client sees the whole pool free and sound. */
static void check_pool_whole(void)
{
	struct rp_client probe = { .idx = ~0U };
	const struct kvpool_stats *s = &probe.st;
	u32 nr_pages, nr_rows, rz;
	struct kvpool_info info;
	int ret;

	ret = o.ops->open(&probe.cl);
	if (ret < 0)
		fail(NULL, "opening the pool for the final check: %s",
		     errname(ret));
	probe.open = true;
	ret = CALL(&probe, info, &info);
	expect_ok(&probe, ret, "INFO");
	nr_pages = info.out_nr_pages;
	nr_rows = info.out_nr_rows;
	rz = !!(info.out_create_flags & KVPOOL_CREATE_RESERVE_ZERO);
	ret = CALL(&probe, stats, &probe.st);
	expect_ok(&probe, ret, "STATS");
	if (s->out_nr_clients == 1 &&
	    (s->out_free_pages != nr_pages - rz || s->out_row_pages ||
	     s->out_slot_pages || s->out_cache_evictable ||
	     s->out_cache_pinned || s->out_free_rows != nr_rows - rz ||
	     s->out_held_rows || s->out_slot_rows))
		fail(NULL, "the pool is not whole at the end: free %u/%u pages, row %u slot %u cache %u+%u, free rows %u/%u, held %u parked %u",
		     s->out_free_pages, nr_pages - rz, s->out_row_pages,
		     s->out_slot_pages, s->out_cache_evictable,
		     s->out_cache_pinned, s->out_free_rows, nr_rows - rz,
		     s->out_held_rows, s->out_slot_rows);
	if (s->out_nr_clients != 1 && !o.quiet)
		printf("kvpool-replay: %u other clients use the pool: not checking that it is whole\n",
		       s->out_nr_clients - 1);
	ret = CALL(&probe, verify);
	if (ret)
		fail(NULL, "VERIFY at the end: %d (%s)", ret,
		     ret < 0 ? errname(ret) : "broken invariants");
	client_close(&probe);
}

/* ---- output ------------------------------------------------------------- */

static void print_counts(const char *label, const struct rp_counts *k)
{
	u64 served = k->tok_prefix + k->tok_slot;

	printf("%s: finished %" PRIu64 " steps %" PRIu64 " retractions %" PRIu64
	       " enospc %" PRIu64 "+%" PRIu64 " slots %" PRIu64 "/%" PRIu64
	       " drops %" PRIu64
	       " abandons %" PRIu64 " | pages extend %" PRIu64 " trim %" PRIu64
	       " release %" PRIu64 " donate %" PRIu64 " swa_free %" PRIu64
	       " evict %" PRIu64 " | hit %.1f%% (prefix %" PRIu64 " + slot %"
	       PRIu64 " of %" PRIu64 " prompt tokens) | verify %" PRIu64
	       " ops %" PRIu64 "\n",
	       label, k->finished, k->steps, k->retractions, k->enospc,
	       k->row_enospc,
	       k->slot_parks, k->slot_resumes, k->slot_drops, k->abandons,
	       k->pg_extend, k->pg_trim, k->pg_release, k->pg_donate,
	       k->pg_swa, k->pg_evict,
	       k->tok_prompt ? 100.0 * served / k->tok_prompt : 0.0,
	       k->tok_prefix, k->tok_slot, k->tok_prompt, k->verify,
	       k->calls);
}

static void print_header(const struct rp_client *c)
{
	if (o.quiet)
		return;
	printf("kvpool-replay: backend %s, pool %s: %u pages x %u tokens, %u rows x %u tokens%s; seed %" PRIu64 ", %u client%s\n",
	       o.ops->name, pool.desc, c->nr_pages, c->pt, c->nr_rows,
	       c->row_tokens, c->reserved ? ", reserve_zero" : "", o.seed,
	       o.clients, o.clients == 1 ? "" : "s");
	printf("kvpool-replay: workload: %u requests/client in %u sessions (%u streaming), %" PRIu64 " tokens (%" PRIu64 " output); chunk %u, batch %u, spec %u, swa every %u window %u (%.0f%%)\n",
	       c->nreq, c->nsess, c->nstreaming, c->tok_total, c->tok_out,
	       o.chunk, c->max_batch, o.spec, o.swa_every, o.swa_window,
	       100 * o.swa_frac);
	fflush(stdout);
}

static void print_summary(const struct rp_counts *per, u32 n, double secs)
{
	struct rp_counts tot = { 0 };
	char label[32];
	u32 i;

	for (i = 0; i < n; i++) {
		counts_add(&tot, &per[i]);
		if (n > 1 && !o.quiet) {
			snprintf(label, sizeof(label), "client %u", i);
			print_counts(label, &per[i]);
		}
	}
	print_counts("summary", &tot);
	printf("time: %.3f s, %.0f ops/s\n", secs,
	       secs > 0 ? tot.calls / secs : 0.0);
}

/* ---- running: in this process, or one forked process per client -------- */

static void cleanup_all(void)
{
	u32 i;

	/* A core pool that failed a check is left alone: just exit. */
	if (o.ops != &rp_kernel_ops)
		return;
	for (i = 0; i < nclients; i++)
		client_close(&clients[i]);
	if (pool_ready)
		o.ops->teardown(&pool);
	pool_ready = false;
}

static void run_in_process(void)
{
	struct rp_counts *per;
	u32 n = o.clients, i;
	bool busy = true;
	double t0;

	nclients = n + (n == 1);	/* one client: a probe for the end */
	clients = xcalloc(nclients, sizeof(*clients));
	for (i = 0; i < n; i++)
		client_init(&clients[i], i);
	print_header(&clients[0]);

	t0 = now_s();
	while (busy) {
		busy = false;
		for (i = 0; i < n; i++) {
			struct rp_client *c = &clients[i];

			if (c->done)
				continue;
			if (client_step(c)) {
				check_pool_exact(c, clients, n);
				busy = true;
				continue;
			}
			client_drain(c);
			c->done = true;
		}
	}
	if (n == 1) {
		struct rp_client *c = &clients[1];

		c->idx = 1;
		if (o.ops->open(&c->cl) < 0)
			fail(NULL, "opening the probe client");
		c->open = true;
		c->pt = clients[0].pt;
		c->nr_pages = clients[0].nr_pages;
		c->nr_rows = clients[0].nr_rows;
		c->reserved = clients[0].reserved;
		c->marker = RP_NIL;
	}
	for (i = 0; i < nclients; i++)
		make_marker(&clients[i]);
	for (i = 0; i < nclients; i++)
		check_foreign(&clients[i], clients[(i + 1) % nclients].marker);
	for (i = 0; i < nclients; i++)
		drop_marker(&clients[i]);
	for (i = 0; i < nclients; i++)
		client_close(&clients[i]);
	per = xcalloc(nclients, sizeof(*per));
	for (i = 0; i < nclients; i++)
		per[i] = clients[i].cnt;
	/* The probe's few calls count with client 0's. */
	if (n == 1)
		counts_add(&per[0], &per[1]);
	check_pool_whole();
	print_summary(per, n, now_s() - t0);
	free(per);
	for (i = 0; i < n; i++)
		client_free(&clients[i]);
	free(clients);
	clients = NULL;
	nclients = 0;
}

/*
 * A forked client: run, drain, then the cross-client check with the
 * parent passing marker pages around:
 *   child -> parent: its marker page; parent -> child: a peer's marker;
 *   child -> parent: its counts (the peer check is done);
 *   parent -> child: 'g' once every child checked; child drops its marker.
 */
static void __noreturn child_main(u32 idx, int up, int down, pid_t parent)
{
	struct rp_client c;
	u32 peer;
	char go;

	in_child = true;
	/* A client outliving the run would keep the pool from being whole. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(EXIT_CHECK_FAILED);
	nclients = 1;
	clients = &c;
	client_init(&c, idx);
	while (client_step(&c))
		;
	client_drain(&c);
	make_marker(&c);
	if (!write_full(up, &c.marker, sizeof(c.marker)) ||
	    !read_full(down, &peer, sizeof(peer)))
		_exit(EXIT_CHECK_FAILED);
	check_foreign(&c, peer);
	if (!write_full(up, &c.cnt, sizeof(c.cnt)) ||
	    !read_full(down, &go, 1))
		_exit(EXIT_CHECK_FAILED);
	drop_marker(&c);
	client_close(&c);
	/* The last few calls: send the final counts. */
	if (!write_full(up, &c.cnt, sizeof(c.cnt)))
		_exit(EXIT_CHECK_FAILED);
	_exit(EXIT_PASS);
}

static void run_forked(void)
{
	u32 n = o.clients, i;
	pid_t *pid = xcalloc(n, sizeof(*pid));
	int *up = xcalloc(n, sizeof(int)), *down = xcalloc(n, sizeof(int));
	u32 *marker = xcalloc(n, sizeof(u32));
	struct rp_counts *per = xcalloc(n, sizeof(*per));
	pid_t parent = getpid();
	bool ok = true;
	double t0;

	if (!o.quiet)
		printf("kvpool-replay: backend %s, pool %s; seed %" PRIu64 ", %u client processes\n",
		       o.ops->name, pool.desc, o.seed, n);
	fflush(stdout);
	fflush(stderr);
	/* A client that died must not take us with it: EPIPE, then cleanup. */
	signal(SIGPIPE, SIG_IGN);
	t0 = now_s();
	for (i = 0; i < n; i++) {
		int u[2], d[2];

		if (pipe(u) || pipe(d)) {
			perror("kvpool-replay: pipe");
			ok = false;
			n = i;
			break;
		}
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("kvpool-replay: fork");
			ok = false;
			n = i;
			break;
		}
		if (!pid[i]) {
			u32 j;

			signal(SIGPIPE, SIG_DFL);
			for (j = 0; j < i; j++) {
				close(up[j]);
				close(down[j]);
			}
			close(u[0]);
			close(d[1]);
			child_main(i, u[1], d[0], parent);
		}
		close(u[1]);
		close(d[0]);
		up[i] = u[0];
		down[i] = d[1];
	}
	for (i = 0; ok && i < n; i++)
		ok = read_full(up[i], &marker[i], sizeof(u32));
	for (i = 0; ok && i < n; i++)
		ok = write_full(down[i], &marker[(i + 1) % n], sizeof(u32));
	for (i = 0; ok && i < n; i++)
		ok = read_full(up[i], &per[i], sizeof(per[i]));
	for (i = 0; ok && i < n; i++)
		ok = write_full(down[i], "g", 1);
	for (i = 0; ok && i < n; i++)
		ok = read_full(up[i], &per[i], sizeof(per[i]));
	if (!ok)
		for (i = 0; i < n; i++)
			kill(pid[i], SIGKILL);
	for (i = 0; i < n; i++) {
		int status;

		while (waitpid(pid[i], &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
				fprintf(stderr, "kvpool-replay: client %u killed by signal %d\n",
					i, WTERMSIG(status));
			ok = false;
		}
		close(up[i]);
		close(down[i]);
	}
	if (!ok)
		fail(NULL, "a client process failed");
	check_pool_whole();
	print_summary(per, n, now_s() - t0);
	free(pid);
	free(up);
	free(down);
	free(marker);
	free(per);
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: kvpool-replay [OPTION]...\n"
"Replay a seeded continuous-batching scheduler workload against the kvpool\n"
"broker and check it after every step.\n"
"\n"
"  --backend kernel|core  kernel: libkvpool on /dev/kvpoolN; core: the\n"
"                         driver's core linked in, in this process (core)\n"
"  --pool N|PATH          kernel: the pool to use without --create (0)\n"
"  --create               kernel: create a pool with the geometry below\n"
"                         (root), destroy it at the end\n"
"  --seed N               workload seed (1); same seed, same workload\n"
"  --requests N           requests per client (2000)\n"
"  --page-tokens N        tokens per page (16)\n"
"  --pages N              pages in the pool (65536 tokens' worth)\n"
"  --rows N               rows in the pool (256)\n"
"  --row-tokens N         longest row, tokens (4096)\n"
"  --chunk N              prefill token budget per step (512)\n"
"  --max-batch N          most requests holding rows per client (64)\n"
"  --spec N               speculative decoding: allocate N pages ahead,\n"
"                         up to %d draft tokens a step; 0: off (1)\n"
"  --swa-every N          SWA_FREE every N decoded tokens; 0: off (32)\n"
"  --swa-window N         sliding window, tokens (64)\n"
"  --swa-frac F           fraction of sessions with a sliding window (0.25)\n"
"  --prompt-len N         median new prompt tokens per turn (200); system\n"
"                         prompts twice that; log-normal, long-tailed\n"
"  --output-len N         median output tokens per turn (120)\n"
"  --rate F               arrivals per step (max-batch / output-len / 0.8)\n"
"  --clients N            schedulers on the pool (1): kernel: one process\n"
"                         each; core: interleaved in this process\n"
"  --verify-every N       KVPOOL_VERIFY every N steps (1)\n"
"  --quiet                print only the summary\n"
"  --version              print kvpool's version and exit\n"
"  --help                 this text\n"
"\n"
"Exit status: 0 every check held, 1 a check failed, 2 usage, 3 setup.\n",
		RP_DRAFT);
}

static bool parse_u32(const char *name, const char *arg, u32 lo, u32 hi,
		      u32 *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || *end || !*arg || arg[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "kvpool-replay: --%s: want a number in %u..%u, not '%s'\n",
			name, lo, hi, arg);
		return false;
	}
	*out = (u32)v;
	return true;
}

static bool parse_frac(const char *name, const char *arg, double hi,
		       double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (errno || *end || !*arg || !(*out >= 0 && *out <= hi)) {
		fprintf(stderr, "kvpool-replay: --%s: want a number in 0..%g, not '%s'\n",
			name, hi, arg);
		return false;
	}
	return true;
}

enum {
	OPT_BACKEND = 256, OPT_POOL, OPT_CREATE, OPT_SEED, OPT_REQUESTS,
	OPT_PT, OPT_PAGES, OPT_ROWS, OPT_ROW_TOKENS, OPT_CHUNK, OPT_BATCH,
	OPT_SPEC, OPT_SWA_EVERY, OPT_SWA_WINDOW, OPT_SWA_FRAC, OPT_RATE,
	OPT_CLIENTS, OPT_VERIFY_EVERY, OPT_QUIET, OPT_HELP, OPT_PROMPT_LEN,
	OPT_OUTPUT_LEN, OPT_VERSION,
};

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "pool", required_argument, NULL, OPT_POOL },
		{ "create", no_argument, NULL, OPT_CREATE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "requests", required_argument, NULL, OPT_REQUESTS },
		{ "page-tokens", required_argument, NULL, OPT_PT },
		{ "pages", required_argument, NULL, OPT_PAGES },
		{ "rows", required_argument, NULL, OPT_ROWS },
		{ "row-tokens", required_argument, NULL, OPT_ROW_TOKENS },
		{ "chunk", required_argument, NULL, OPT_CHUNK },
		{ "max-batch", required_argument, NULL, OPT_BATCH },
		{ "spec", required_argument, NULL, OPT_SPEC },
		{ "swa-every", required_argument, NULL, OPT_SWA_EVERY },
		{ "swa-window", required_argument, NULL, OPT_SWA_WINDOW },
		{ "swa-frac", required_argument, NULL, OPT_SWA_FRAC },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "prompt-len", required_argument, NULL, OPT_PROMPT_LEN },
		{ "output-len", required_argument, NULL, OPT_OUTPUT_LEN },
		{ "clients", required_argument, NULL, OPT_CLIENTS },
		{ "verify-every", required_argument, NULL, OPT_VERIFY_EVERY },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long seed;
	char *end;
	bool ok = true;
	int c;

	o.ops = &rp_core_ops;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case OPT_BACKEND:
			if (!strcmp(optarg, "kernel")) {
				o.ops = &rp_kernel_ops;
			} else if (!strcmp(optarg, "core")) {
				o.ops = &rp_core_ops;
			} else {
				fprintf(stderr, "kvpool-replay: --backend: kernel or core, not '%s'\n",
					optarg);
				ok = false;
			}
			break;
		case OPT_POOL:
			o.pool = optarg;
			break;
		case OPT_CREATE:
			o.create = true;
			break;
		case OPT_SEED:
			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || optarg[0] == '-') {
				fprintf(stderr, "kvpool-replay: --seed: not a number: '%s'\n",
					optarg);
				ok = false;
			}
			o.seed = seed;
			break;
		case OPT_REQUESTS:
			ok &= parse_u32("requests", optarg, 1, 10000000,
					&o.requests);
			break;
		case OPT_PT:
			ok &= parse_u32("page-tokens", optarg, 1, 65536,
					&o.page_tokens);
			break;
		case OPT_PAGES:
			ok &= parse_u32("pages", optarg, 2, 1U << 27, &o.pages);
			break;
		case OPT_ROWS:
			ok &= parse_u32("rows", optarg, 2, 1U << 20, &o.rows);
			break;
		case OPT_ROW_TOKENS:
			ok &= parse_u32("row-tokens", optarg, 1, 1U << 24,
					&o.row_tokens);
			break;
		case OPT_CHUNK:
			ok &= parse_u32("chunk", optarg, 1, 1U << 24, &o.chunk);
			break;
		case OPT_BATCH:
			ok &= parse_u32("max-batch", optarg, 1, 8192,
					&o.max_batch);
			break;
		case OPT_SPEC:
			ok &= parse_u32("spec", optarg, 0, 64, &o.spec);
			break;
		case OPT_SWA_EVERY:
			ok &= parse_u32("swa-every", optarg, 0, 1U << 24,
					&o.swa_every);
			break;
		case OPT_SWA_WINDOW:
			ok &= parse_u32("swa-window", optarg, 1, 1U << 24,
					&o.swa_window);
			break;
		case OPT_SWA_FRAC:
			ok &= parse_frac("swa-frac", optarg, 1, &o.swa_frac);
			break;
		case OPT_RATE:
			ok &= parse_frac("rate", optarg, 1e6, &o.rate);
			break;
		case OPT_PROMPT_LEN:
			ok &= parse_u32("prompt-len", optarg, 1, 1U << 24,
					&o.prompt_len);
			break;
		case OPT_OUTPUT_LEN:
			ok &= parse_u32("output-len", optarg, 1, 1U << 24,
					&o.output_len);
			break;
		case OPT_CLIENTS:
			ok &= parse_u32("clients", optarg, 1, 64, &o.clients);
			break;
		case OPT_VERIFY_EVERY:
			ok &= parse_u32("verify-every", optarg, 0, 1U << 30,
					&o.verify_every);
			break;
		case OPT_QUIET:
			o.quiet = true;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(EXIT_PASS);
		case OPT_VERSION:
			/* kvpool's version, from the libkvpool linked in. */
			printf("kvpool-replay %s (kvpool ABI %d)\n",
			       kvpool_version(), KVPOOL_ABI_VERSION);
			exit(EXIT_PASS);
		default:
			ok = false;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "kvpool-replay: unexpected argument '%s'\n",
			argv[optind]);
		ok = false;
	}
	if (o.create && o.ops != &rp_kernel_ops) {
		fprintf(stderr, "kvpool-replay: --create is for --backend kernel\n");
		ok = false;
	}
	if (!ok) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!o.pages)
		o.pages = max_u32(64, 65536 / o.page_tokens);
	return EXIT_PASS;
}

int main(int argc, char **argv)
{
	static char path[64];
	size_t len = 0;
	int i, ret;

	for (i = 0; i < argc && len < sizeof(cmdline) - 1; i++)
		len += snprintf(cmdline + len, sizeof(cmdline) - len, "%s%s",
				i ? " " : "", argv[i]);
	ret = parse_args(argc, argv);
	if (ret)
		return ret;

	pool.create = o.create || o.ops == &rp_core_ops;
	pool.flags = KVPOOL_CREATE_RESERVE_ZERO;
	pool.nr_pages = o.pages;
	pool.page_tokens = o.page_tokens;
	pool.nr_rows = o.rows;
	pool.row_tokens = o.row_tokens;
	if (o.pool[0] >= '0' && o.pool[0] <= '9')
		snprintf(path, sizeof(path), "/dev/kvpool%s", o.pool);
	else
		snprintf(path, sizeof(path), "%s", o.pool);
	pool.path = path;
	if (o.ops->setup(&pool) < 0)
		return EXIT_SETUP;
	pool_ready = true;

	if (o.clients > 1 && o.ops->multiprocess)
		run_forked();
	else
		run_in_process();

	pool_ready = false;
	ret = o.ops->teardown(&pool);
	if (ret < 0)
		fail(NULL, "tearing the pool down: %s", errname(ret));
	return EXIT_PASS;
}
