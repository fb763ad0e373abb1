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
 * The prefix cache is a radix tree at page granularity kept here (the
 * kernel only knows which pages are in the cache and how many rows
 * borrow each). Token contents are not simulated, only their identity:
 * page i of a session is the same text as page i of every session that
 * shares its system prompt, if the page lies within that prompt, and of
 * no one else's otherwise. Every count the kernel returns is checked
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

#include "sim.h"

#define NIL		0xffffffffU
#define NOSHARED	0xffffffffU

/* ---- the model ---------------------------------------------------------- */

enum { RQ_WAIT, RQ_PREFILL, RQ_DECODE };

/* This program's mirror of a row the process holds (or parks). */
struct row {
	struct kvpool_handle h;
	u32 *pg;		/* page id by position page; NIL: SWA hole */
	u32 cap;
	u32 alloc, comm, prot, swa;	/* tokens */
};

/* A conversation; a single request is a one-turn session. */
struct sess {
	u32 id;
	u32 shared;		/* system prompt, or NOSHARED */
	u32 shared_len;
	u32 nturns;
	u32 user[SIM_MAX_TURNS], out[SIM_MAX_TURNS];
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

/* A cache page of this client: a node of the radix tree or a duplicate. */
enum { CN_NONE, CN_NODE, CN_ORPHAN };

struct cnode {
	u64 key;
	u32 parent;		/* node page of the previous position, or NIL */
	u32 nchild;
	u32 pins;		/* our rows that borrow it */
	u32 prev, next;		/* LRU of evictable pages */
	u32 hnext;
	u8 state;
	bool in_lru;
};

struct event {
	double t;
	struct req *q;
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

static struct {
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
	struct event *ev;
	u32 nev, ev_cap;
	struct sess *park_head, *park_tail;
	u32 nparked;
	struct pending *pend;
	u32 npend;
	/* the prefix cache */
	struct cnode *cn;
	u32 *bucket;
	u32 hmask;
	u32 lru_head, lru_tail;
	u32 ncache, npinned;
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
} S;

static void __printf(1, 2) __noreturn die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(S.me->err, sizeof(S.me->err), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kvpool-sim: %s[%d]: %s\n",
		S.a->cfg->name, (int)getpid(), S.me->err);
	sim_store(S.me->state, PROC_FAILED);
	_exit(1);
}

static void __noreturn oom(void *ctx)
{
	(void)ctx;
	die("out of memory");
}

static u32 pages_of(u32 tokens)
{
	return (tokens + S.pt - 1) / S.pt;
}

#define check_count(what, got, want)					\
	do {								\
		if ((u64)(got) != (u64)(want))				\
			die("%s: kernel says %lld pages, mirror %llu",	\
			    what, (long long)(got), (unsigned long long)(want)); \
	} while (0)

/* ---- sessions ----------------------------------------------------------- */

/* Session @id of this tenant: the same in every process of the tenant. */
static struct sess *sess_make(u32 id)
{
	const struct sim_workload *w = S.wl;
	struct sess *s = xcalloc(1, sizeof(*s));
	u64 rng = mix64(S.seed ^ mix64(0x5e55ULL + id));
	u32 len = 0, t, nturns = 1;

	s->id = id;
	s->rng = rng_next(&rng);
	s->shared = NOSHARED;
	if (w->nshared && rng_unit(&rng) < w->p_shared) {
		s->shared = rng_below(&rng, w->nshared);
		s->shared_len = S.shared_len[s->shared];
		len = s->shared_len;
	}
	if (rng_unit(&rng) < w->p_multi)
		nturns = 2 + rng_below(&rng, w->turns_max - 1);
	s->stream = nturns > 1 && rng_unit(&rng) < w->p_stream;
	s->swa = rng_unit(&rng) < w->p_swa;
	for (t = 0; t < nturns; t++) {
		u32 u = !t && w->first_median ?
			rng_lognormal(&rng, w->first_median, w->first_sigma, 1,
				      w->first_max) :
			rng_lognormal(&rng, w->user_median, w->user_sigma, 1,
				      w->user_max);
		u32 o = rng_lognormal(&rng, w->out_median, w->out_sigma, 1,
				      w->out_max);

		if (len + u + o > S.max_req) {
			if (t)
				break;
			/* One turn must fit: shorten its prompt. */
			if (len + 1 + o > S.max_req) {
				s->shared = NOSHARED;
				s->shared_len = len = 0;
			}
			u = min_u32(u, S.max_req - len - o);
		}
		s->user[t] = u;
		s->out[t] = o;
		len += u + o;
	}
	s->nturns = t;
	return s;
}

/* Identity of the text in page @i of session @s. */
static u64 page_key(const struct sess *s, u32 i)
{
	if (s->shared != NOSHARED && (u64)(i + 1) * S.pt <= s->shared_len)
		return mix64(0x5a5a000000000000ULL ^ ((u64)s->shared << 32) ^ i);
	return mix64(mix64(0xa5a5000000000000ULL ^ s->id) + i);
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

static void wait_push(struct req *q, bool front)
{
	q->state = RQ_WAIT;
	if (front) {
		q->next = S.wq_head;
		S.wq_head = q;
		if (!S.wq_tail)
			S.wq_tail = q;
	} else {
		q->next = NULL;
		if (S.wq_tail)
			S.wq_tail->next = q;
		else
			S.wq_head = q;
		S.wq_tail = q;
	}
	S.nwait++;
}

static void ev_push(double t, struct req *q)
{
	u32 i;

	if (S.nev == S.ev_cap) {
		S.ev_cap = S.ev_cap ? 2 * S.ev_cap : 64;
		S.ev = xrealloc(S.ev, S.ev_cap, sizeof(*S.ev));
	}
	i = S.nev++;
	while (i && S.ev[(i - 1) / 2].t > t) {
		S.ev[i] = S.ev[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	S.ev[i] = (struct event){ t, q };
}

static struct req *ev_pop(void)
{
	struct req *q = S.ev[0].q;
	struct event last = S.ev[--S.nev];
	u32 i = 0, c;

	while ((c = 2 * i + 1) < S.nev) {
		if (c + 1 < S.nev && S.ev[c + 1].t < S.ev[c].t)
			c++;
		if (S.ev[c].t >= last.t)
			break;
		S.ev[i] = S.ev[c];
		i = c;
	}
	if (S.nev)
		S.ev[i] = last;
	return q;
}

static void next_turn(struct sess *s, u32 turn)
{
	ev_push(S.now + rng_exp(&s->rng, S.wl->think_s), req_make(s, turn));
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
static u32 row_owned(const struct row *r)
{
	u32 i, n = 0;

	for (i = r->prot / S.pt; i < pages_of(r->alloc); i++)
		n += r->pg[i] != NIL;
	return n;
}

static void row_free(struct row *r)
{
	free(r->pg);
	free(r);
}

/* ---- the prefix cache --------------------------------------------------- */

static bool cn_evictable(u32 p)
{
	const struct cnode *n = &S.cn[p];

	if (n->pins)
		return false;
	return n->state == CN_ORPHAN || (n->state == CN_NODE && !n->nchild);
}

static void lru_del(u32 p)
{
	struct cnode *n = &S.cn[p];

	if (n->prev != NIL)
		S.cn[n->prev].next = n->next;
	else
		S.lru_head = n->next;
	if (n->next != NIL)
		S.cn[n->next].prev = n->prev;
	else
		S.lru_tail = n->prev;
	n->in_lru = false;
}

static void lru_add(u32 p, bool head)
{
	struct cnode *n = &S.cn[p];

	n->in_lru = true;
	if (head) {
		n->prev = NIL;
		n->next = S.lru_head;
		if (S.lru_head != NIL)
			S.cn[S.lru_head].prev = p;
		else
			S.lru_tail = p;
		S.lru_head = p;
	} else {
		n->next = NIL;
		n->prev = S.lru_tail;
		if (S.lru_tail != NIL)
			S.cn[S.lru_tail].next = p;
		else
			S.lru_head = p;
		S.lru_tail = p;
	}
}

/* Puts @p on the LRU list or takes it off as it became (un)evictable. */
static void lru_update(u32 p)
{
	bool e = cn_evictable(p);

	if (e && !S.cn[p].in_lru)
		/* Duplicates are no use to anyone: first to go. */
		lru_add(p, S.cn[p].state == CN_ORPHAN);
	else if (!e && S.cn[p].in_lru)
		lru_del(p);
}

static u32 cache_lookup(u64 key)
{
	u32 p;

	for (p = S.bucket[key & S.hmask]; p != NIL; p = S.cn[p].hnext)
		if (S.cn[p].key == key)
			return p;
	return NIL;
}

static void cache_unhash(u32 p)
{
	u32 *pp = &S.bucket[S.cn[p].key & S.hmask];

	while (*pp != p)
		pp = &S.cn[*pp].hnext;
	*pp = S.cn[p].hnext;
}

static void pin(u32 p)
{
	if (!S.cn[p].pins++)
		S.npinned++;
	lru_update(p);
}

static void unpin(u32 p)
{
	if (!S.cn[p].pins)
		die("mirror: unpin of page %u with no pins", p);
	if (!--S.cn[p].pins)
		S.npinned--;
	lru_update(p);
}

/* Page @p of the row at position @i of @s joins the cache. */
static void cache_add(const struct sess *s, u32 i, u32 p, u32 pins)
{
	struct cnode *n = &S.cn[p];
	u64 key = page_key(s, i);
	u32 parent = NIL;
	bool orphan = cache_lookup(key) != NIL;

	if (!orphan && i) {
		parent = cache_lookup(page_key(s, i - 1));
		/* The text before it left the cache: unreachable. */
		orphan = parent == NIL;
	}
	memset(n, 0, sizeof(*n));
	n->prev = n->next = n->hnext = NIL;
	n->parent = NIL;
	n->pins = pins;
	if (pins)
		S.npinned++;
	S.ncache++;
	if (orphan) {
		n->state = CN_ORPHAN;
	} else {
		n->state = CN_NODE;
		n->key = key;
		n->parent = parent;
		n->hnext = S.bucket[key & S.hmask];
		S.bucket[key & S.hmask] = p;
		if (parent != NIL) {
			S.cn[parent].nchild++;
			lru_update(parent);
		}
	}
	lru_update(p);
}

/* Evicts up to @want unpinned cache pages, LRU leaves first. */
static u32 cache_evict(u32 want)
{
	struct kvpool_batch_result res;
	u32 n = 0, done = 0;
	int ret;

	while (n < want && S.lru_head != NIL) {
		u32 p = S.lru_head;
		struct cnode *c = &S.cn[p];

		lru_del(p);
		if (c->state == CN_NODE) {
			cache_unhash(p);
			if (c->parent != NIL) {
				u32 up = c->parent;

				S.cn[up].nchild--;
				/* As old as its child: next in line. */
				if (cn_evictable(up) && !S.cn[up].in_lru)
					lru_add(up, true);
			}
		}
		c->state = CN_NONE;
		S.ids[n++] = p;
	}
	while (done < n) {
		u32 k = min_u32(n - done, S.max_batch);

		ret = kvpool_cache_evict(S.kp, S.ids + done, k, &res);
		if (ret < 0)
			die("cache evict of %u pages: %s (entry %u)", k,
			    kvpool_strerror(ret), res.error_index);
		check_count("cache evict", ret, k);
		done += k;
	}
	S.ncache -= n;
	S.me->evicted_pages += n;
	return n;
}

/* Cached pages matching the start of @s, at most @limit, into @out. */
static u32 cache_match(const struct sess *s, u32 limit, u32 *out)
{
	u32 i, p, prev = NIL;

	if (!S.use_cache)
		return 0;
	for (i = 0; i < limit; i++) {
		p = cache_lookup(page_key(s, i));
		if (p == NIL || S.cn[p].parent != prev)
			break;
		out[i] = p;
		prev = p;
	}
	return i;
}

/* The row's pages [prot, comm) whole join the cache; returns how many. */
static u32 mirror_donate(struct req *q, u32 pins)
{
	struct row *r = q->row;
	u32 i, n = 0, end = r->comm / S.pt;

	for (i = r->prot / S.pt; i < end; i++) {
		if (r->pg[i] == NIL)
			continue;
		cache_add(q->s, i, r->pg[i], pins);
		n++;
	}
	if (end * S.pt > r->prot)
		r->prot = end * S.pt;
	return n;
}

static void mirror_unpin_row(struct row *r)
{
	u32 i;

	for (i = 0; i < r->prot / S.pt; i++)
		unpin(r->pg[i]);
}

/* ---- active requests ---------------------------------------------------- */

static void act_remove(struct req *q)
{
	u32 i;

	for (i = 0; i < S.nact; i++)
		if (S.act[i] == q)
			break;
	if (i == S.nact)
		die("mirror: request not active");
	memmove(&S.act[i], &S.act[i + 1], (S.nact - i - 1) * sizeof(*S.act));
	S.nact--;
}

/* RELEASE without donate of one row; returns the pages freed. */
static u32 release_plain(struct row *r)
{
	struct kvpool_batch_result res;
	u32 owned = row_owned(r);
	int ret;

	ret = kvpool_release(S.kp, &r->h, 1, &res);
	if (ret < 0)
		die("release: %s", kvpool_strerror(ret));
	check_count("release", ret, owned);
	mirror_unpin_row(r);
	row_free(r);
	return owned;
}

/* Retraction: the newest request gives everything back and waits again. */
static u32 retract_newest(void)
{
	struct req *q = S.act[S.nact - 1];
	u32 freed;

	S.nact--;
	freed = release_plain(q->row);
	q->row = NULL;
	wait_push(q, true);
	S.me->retractions++;
	S.ratio = fmin(1.0, S.ratio + 0.3);
	return freed;
}

static void park_unlink(struct sess *s)
{
	if (s->pprev)
		s->pprev->pnext = s->pnext;
	else
		S.park_head = s->pnext;
	if (s->pnext)
		s->pnext->pprev = s->pprev;
	else
		S.park_tail = s->pprev;
	s->pprev = s->pnext = NULL;
	S.nparked--;
}

/* SLOT_RELEASE of the oldest parked session; its next turn recomputes. */
static u32 slot_drop_oldest(void)
{
	struct sess *s = S.park_head;
	struct row *r = s->parked;
	u32 owned = row_owned(r);
	int ret;

	ret = kvpool_slot_release(S.kp, s->id);
	if (ret < 0)
		die("slot release: %s", kvpool_strerror(ret));
	check_count("slot release", ret, owned);
	mirror_unpin_row(r);
	row_free(r);
	s->parked = NULL;
	park_unlink(s);
	S.me->slot_drops++;
	return owned;
}

/*
 * The kernel refused @short pages: evict cache, then drop parked slots,
 * then (if @retract) retract the newest requests. True if anything was
 * given back.
 */
static bool make_room(u32 shortfall, bool retract)
{
	u32 got = cache_evict(shortfall + shortfall / 4 + 8);

	while (got < shortfall && S.park_head)
		got += slot_drop_oldest();
	while (retract && got < shortfall && S.nact > 1)
		got += retract_newest();
	return got > 0;
}

static void count_refusal(int ret)
{
	if (ret == -ENOSPC)
		S.me->enospc++;
	else
		S.me->edquot++;
}

/* ---- pressure ----------------------------------------------------------- */

static void answer_pressure(void)
{
	struct kvpool_pressure p;
	int ask = kvpool_pressure(S.kp, &p);

	if (ask < 0)
		die("pressure: %s", kvpool_strerror(ask));
	if (!ask)
		return;
	S.me->pressure_events++;
	S.me->ask_pages += (u64)ask;
	cache_evict((u32)ask);
}

/*
 * A tenant split over two processes shares its limit between them, each
 * keeping to its part (the kernel only knows the whole): without that
 * the decode server's cache and requests could take all of it while the
 * prefill server holds half a document and waits for the rest, for ever.
 * Pages this process may hold, or UINT32_MAX.
 */
static u32 my_cap(void)
{
	if (S.a->share >= 1 || !S.st.out_tenant_max_pages)
		return UINT32_MAX;
	return (u32)(S.a->share * S.st.out_tenant_max_pages);
}

static u32 my_pages(void)
{
	return S.st.out_client_pages + S.st.out_client_cache_pages;
}

/*
 * Keeps the tenant (and this process's part) a little under its limit,
 * by this process's cache.
 */
static void keep_headroom(void)
{
	u32 max = S.st.out_tenant_max_pages, cap = my_cap(), want, room;

	if (!max || !S.use_cache)
		return;
	want = max / 16;
	room = S.st.out_tenant_pages < max ? max - S.st.out_tenant_pages : 0;
	if (cap != UINT32_MAX) {
		u32 mine = my_pages() < cap ? cap - my_pages() : 0;

		want = cap / 16;
		room = mine < room ? mine : room;
	}
	if (room < want)
		cache_evict(want - room);
}

/* ---- admission ---------------------------------------------------------- */

/* Pages this process may still take, as far as it can tell. */
static u64 room_estimate(void)
{
	u64 tenant = UINT64_MAX, pool, room, reserve = 0;
	u32 i, margin = S.nr_pages / 64, cap = my_cap();

	if (S.st.out_tenant_max_pages)
		tenant = S.st.out_tenant_max_pages > S.st.out_tenant_pages ?
			 S.st.out_tenant_max_pages - S.st.out_tenant_pages : 0;
	if (cap != UINT32_MAX && cap - my_pages() < tenant)
		tenant = cap > my_pages() ? cap - my_pages() : 0;
	pool = S.st.out_free_pages > margin ? S.st.out_free_pages - margin : 0;
	room = (tenant < pool ? tenant : pool) + (S.ncache - S.npinned);
	for (i = 0; i < S.nact; i++) {
		const struct req *q = S.act[i];

		reserve += (u64)(S.ratio * (q->out - q->gen) / S.pt) + 1;
	}
	return room > reserve ? room - reserve : 0;
}

static void admit(void)
{
	u64 room = room_estimate();
	struct kvpool_batch_result res;
	u32 n = 0, nrows = 0, i, j;
	struct req *q;
	int ret;

	/* The kernel said no to what runs already: admit nothing more. */
	if (S.stalled)
		return;
	/*
	 * Exported rows belong to no tenant until the decode server takes
	 * them: while it has not taken half our part, make no more.
	 */
	if (S.a->role == ROLE_PREFILL && my_cap() != UINT32_MAX &&
	    S.st.out_export_pages > my_cap() / 2)
		return;

	for (q = S.wq_head; q && S.nact + n < S.max_running &&
	     n < S.max_batch; q = q->next) {
		u64 need;

		q->target = q->prompt + q->gen;
		if (q->s->parked) {
			need = pages_of(q->target) - pages_of(q->s->parked->alloc);
		} else {
			u32 k = cache_match(q->s, (q->target - 1) / S.pt, S.ids);

			need = pages_of(q->target) - k;
			nrows++;
		}
		need += (u64)(S.ratio * q->out / S.pt) + 1;
		/* Something must run, or nothing ever frees. */
		if (need > room && (S.nact + n))
			break;
		room = room > need ? room - need : 0;
		S.xr[n++] = q;
	}
	if (!n)
		return;
	if (nrows) {
		ret = kvpool_alloc_rows(S.kp, S.hh, nrows, &res);
		if (ret == -ENOSPC || ret == -EDQUOT) {
			count_refusal(ret);
			nrows = 0;	/* slot resumes only, this step */
		} else if (ret < 0) {
			die("row alloc: %s", kvpool_strerror(ret));
		}
	}
	for (i = 0, j = 0; i < n; i++) {
		struct sess *s;
		u32 k;

		q = S.xr[i];
		s = q->s;
		if (!s->parked && j == nrows)
			break;		/* out of rows: the rest waits */
		/* The wait queue is FIFO and we walk it from the front. */
		S.wq_head = q->next;
		if (!S.wq_head)
			S.wq_tail = NULL;
		S.nwait--;
		S.me->prompt_tokens += q->target;
		if (s->parked) {
			struct kvpool_handle h;

			ret = kvpool_from_slot(S.kp, s->id, &h);
			if (ret < 0)
				die("from slot: %s", kvpool_strerror(ret));
			check_count("from slot", ret, row_owned(s->parked));
			q->row = s->parked;
			q->row->h = h;
			s->parked = NULL;
			park_unlink(s);
			S.me->hit_tokens += q->row->comm;
		} else {
			q->row = row_new(S.hh[j++]);
			k = cache_match(s, (q->target - 1) / S.pt, S.ids);
			if (k) {
				ret = kvpool_attach_prefix(S.kp, q->row->h,
							   S.ids, k);
				if (ret < 0)
					die("attach prefix of %u pages: %s", k,
					    kvpool_strerror(ret));
				row_reserve(q->row, k);
				memcpy(q->row->pg, S.ids, k * sizeof(u32));
				for (u32 m = 0; m < k; m++)
					pin(S.ids[m]);
				q->row->alloc = q->row->comm = q->row->prot =
					k * S.pt;
				S.me->hit_tokens += k * S.pt;
			}
		}
		q->state = RQ_PREFILL;
		S.act[S.nact++] = q;
	}
	if (j < nrows) {
		/* Rows taken for requests we could not place: give back. */
		ret = kvpool_release(S.kp, S.hh + j, nrows - j, NULL);
		if (ret < 0)
			die("release of spare rows: %s", kvpool_strerror(ret));
	}
}

/* ---- extend ------------------------------------------------------------- */

/* Applies a successful EXTEND of S.xe[0..n) for S.xr[0..n). */
static void extend_apply(u32 n, int got, u32 want)
{
	u32 i, k, off = 0;

	check_count("extend", got, want);
	for (i = 0; i < n; i++) {
		struct row *r = S.xr[i]->row;
		u32 have = pages_of(r->alloc), nn = pages_of(S.xe[i].new_len);

		check_count("extend entry", S.xe[i].out_nr_new, nn - have);
		row_reserve(r, nn);
		for (k = have; k < nn; k++)
			r->pg[k] = S.xpg[off++];
		r->alloc = S.xe[i].new_len;
	}
}

static void xpg_reserve(u32 n)
{
	if (n <= S.xpg_cap)
		return;
	S.xpg_cap = n + n / 2;
	S.xpg = xrealloc(S.xpg, S.xpg_cap, sizeof(u32));
}

/*
 * How far past its limit the tenant would go with @want more pages.
 * (The kernel says it in out_short, but libkvpool passes that on for
 * ENOSPC only: ask STATS.)
 */
static u32 quota_short(u32 want)
{
	struct kvpool_stats st;
	u64 after;
	int ret = kvpool_stats(S.kp, &st);

	if (ret < 0)
		die("stats: %s", kvpool_strerror(ret));
	S.st = st;
	after = (u64)st.out_tenant_pages + want;
	if (!st.out_tenant_max_pages || after <= st.out_tenant_max_pages)
		return want;	/* another process of the tenant raced us */
	return (u32)(after - st.out_tenant_max_pages);
}

/*
 * One EXTEND of the rows in S.xr[0..n) to S.xe[i].new_len; on refusal,
 * make room and try again. Returns false if the batch could not grow.
 */
static bool extend_batch(u32 n, bool retract)
{
	struct kvpool_batch_result res;
	int attempt, ret;

	for (attempt = 0; attempt < 6; attempt++) {
		u32 i, k = 0, want = 0;

		/* A retraction may have taken some rows out of the batch. */
		for (i = 0; i < n; i++) {
			struct row *r = S.xr[i]->row;

			if (!r || S.xr[i]->state == RQ_WAIT)
				continue;
			S.xr[k] = S.xr[i];
			S.xe[k] = S.xe[i];
			S.xe[k].handle = r->h;
			S.xe[k].out_nr_new = 0;
			want += pages_of(S.xe[k].new_len) - pages_of(r->alloc);
			k++;
		}
		n = k;
		if (!n)
			return false;
		xpg_reserve(want);
		ret = kvpool_extend(S.kp, S.xe, n, S.xpg, want, &res);
		if (ret >= 0) {
			extend_apply(n, ret, want);
			return true;
		}
		if (ret != -ENOSPC && ret != -EDQUOT)
			die("extend of %u rows: %s (entry %u)", n,
			    kvpool_strerror(ret), res.error_index);
		count_refusal(ret);
		S.last_short = ret == -ENOSPC ? res.nr_missing : quota_short(want);
		S.last_err = ret;
		if (!make_room(S.last_short, retract))
			return false;
	}
	return false;
}

static void commit_rows(u32 n)
{
	struct kvpool_batch_result res;
	u32 i;
	int ret;

	for (i = 0; i < n; i++)
		S.le[i] = (struct kvpool_len_entry){
			.handle = S.xr[i]->row->h, .len = S.xr[i]->row->comm,
		};
	ret = kvpool_commit(S.kp, S.le, n, &res);
	if (ret < 0)
		die("commit of %u rows: %s (entry %u)", n,
		    kvpool_strerror(ret), res.error_index);
}

/* ---- prefill ------------------------------------------------------------ */

static void export_row(struct req *q)
{
	struct row *r = q->row;
	struct handoff m = {
		.sess = q->s->id, .comm = r->comm,
		.nr_pages = row_owned(r), .magic = HANDOFF_MAGIC,
	};
	int fd, ret;

	fd = kvpool_export(S.kp, r->h);
	if (fd < 0)
		die("export: %s", kvpool_strerror(fd));
	ret = kvpool_send_fd(S.a->sock, fd);
	if (!ret && write(S.a->sock, &m, sizeof(m)) != (ssize_t)sizeof(m))
		ret = -errno;
	close(fd);
	if (ret < 0 && !sim_load(S.a->sh->stop))
		die("handing a row to decode: %s", strerror(-ret));
	S.me->exports++;
	act_remove(q);
	row_free(r);
	free(q->s);
	free(q);
}

static void prefill(void)
{
	struct kvpool_batch_result res;
	u32 budget = S.prefill_budget, n = 0, i, ndon = 0, ndecode = 0;
	int ret;

	for (i = 0; i < S.nact; i++) {
		struct req *q = S.act[i];
		u32 chunk;

		if (q->state != RQ_PREFILL) {
			ndecode++;
			continue;
		}
		if (!budget)
			continue;
		chunk = min_u32(q->target - q->row->comm, budget);
		budget -= chunk;
		S.xr[n] = q;
		S.xe[n] = (struct kvpool_extend_entry){
			.handle = q->row->h, .new_len = q->row->comm + chunk,
		};
		n++;
	}
	if (!n)
		return;
	if (!extend_batch(n, false)) {
		/*
		 * Stuck. At the tenant's limit, the room can only come
		 * from the tenant itself, and a prefill server holds no
		 * cache: ask the decode server to evict, now and every
		 * half second while it lasts. (A full pool is the kernel's
		 * to settle: it asks every client back by pressure.) If
		 * nothing moves for 2 s and nothing decodes here, retract
		 * the newest.
		 */
		if (S.a->need_fd >= 0 && S.a->role == ROLE_PREFILL &&
		    S.last_err == -EDQUOT && S.stalled % 20 == 0) {
			u32 need = S.last_short;

			if (write(S.a->need_fd, &need, sizeof(need)) < 0 &&
			    errno != EAGAIN)
				die("asking decode for room: %s",
				    strerror(errno));
		}
		if (S.stalled++ * S.a->step_s > 2.0 && !ndecode &&
		    S.nact > 1) {
			retract_newest();
			S.stalled = 0;
		}
		return;
	}
	S.stalled = 0;
	for (i = 0, n = 0; i < S.nact; i++)
		if (S.act[i]->state == RQ_PREFILL &&
		    S.act[i]->row->alloc > S.act[i]->row->comm) {
			S.act[i]->row->comm = S.act[i]->row->alloc;
			S.xr[n++] = S.act[i];
		}
	if (!n)
		return;
	commit_rows(n);
	for (i = 0; i < n; i++) {
		struct req *q = S.xr[i];
		struct row *r = q->row;

		if (r->comm < q->target)
			continue;
		q->state = RQ_DECODE;
		if (S.a->role == ROLE_PREFILL)
			continue;
		if (S.use_cache && !q->s->swa &&
		    (r->comm / S.pt) * S.pt > r->prot) {
			S.le[ndon] = (struct kvpool_len_entry){
				.handle = r->h, .len = r->comm,
			};
			S.xr[ndon++] = q;	/* i >= ndon: still unread */
		}
	}
	if (S.a->role == ROLE_PREFILL) {
		for (i = 0; i < S.nact;) {
			if (S.act[i]->state == RQ_DECODE)
				export_row(S.act[i]);
			else
				i++;
		}
		return;
	}
	if (!ndon)
		return;
	ret = kvpool_donate(S.kp, S.le, ndon, &res);
	if (ret < 0)
		die("donate of %u rows: %s (entry %u)", ndon,
		    kvpool_strerror(ret), res.error_index);
	{
		u64 want = 0;

		for (i = 0; i < ndon; i++)
			want += mirror_donate(S.xr[i], 1);
		check_count("donate", ret, want);
	}
}

/* ---- decode ------------------------------------------------------------- */

static void swa_free_rows(void)
{
	struct kvpool_batch_result res;
	u32 i, n = 0, p;
	u64 want = 0;
	int ret;

	for (i = 0; i < S.nact; i++) {
		struct req *q = S.act[i];
		struct row *r = q->row;
		u32 from, edge;

		if (!q->s->swa || q->state != RQ_DECODE ||
		    r->comm < S.wl->swa_window)
			continue;
		from = r->prot > r->swa ? r->prot : r->swa;
		edge = ((r->comm - S.wl->swa_window) / S.pt) * S.pt;
		if (edge < from + 4 * S.pt)
			continue;	/* free in runs of 4 pages */
		for (p = from / S.pt; p < edge / S.pt; p++) {
			want += r->pg[p] != NIL;
			r->pg[p] = NIL;
		}
		r->swa = edge;
		S.le[n++] = (struct kvpool_len_entry){ .handle = r->h, .len = edge };
	}
	if (!n)
		return;
	ret = kvpool_swa_free(S.kp, S.le, n, &res);
	if (ret < 0)
		die("swa free of %u rows: %s", n, kvpool_strerror(ret));
	check_count("swa free", ret, want);
}

static void finish(u32 nfin);

static void decode(void)
{
	u32 i, n = 0, nfin = 0;

	for (i = 0; i < S.nact; i++) {
		struct req *q = S.act[i];
		struct row *r = q->row;
		u32 want;

		if (q->state != RQ_DECODE)
			continue;
		want = min_u32(r->comm + S.ahead, q->prompt + q->out + S.ahead);
		want = min_u32(want, S.row_tokens);
		if (want <= r->alloc)
			continue;
		S.xr[n] = q;
		S.xe[n] = (struct kvpool_extend_entry){
			.handle = r->h, .new_len = want,
		};
		n++;
	}
	if (n && !extend_batch(n, true))
		return;		/* no room this step: nobody decodes */
	for (i = 0, n = 0; i < S.nact; i++) {
		struct req *q = S.act[i];
		struct row *r = q->row;
		u32 acc = 1, d;

		if (q->state != RQ_DECODE)
			continue;
		for (d = 0; d < S.wl->draft; d++) {
			if (rng_unit(&q->s->rng) >= S.wl->accept)
				break;
			acc++;
		}
		acc = min_u32(acc, q->out - q->gen);
		acc = min_u32(acc, r->alloc - r->comm);
		if (!acc)
			continue;
		r->comm += acc;
		q->gen += acc;
		S.me->gen_tokens += acc;
		S.xr[n++] = q;
	}
	if (!n)
		return;
	commit_rows(n);
	swa_free_rows();
	for (i = 0; i < S.nact; i++)
		if (S.act[i]->state == RQ_DECODE &&
		    S.act[i]->gen >= S.act[i]->out)
			S.xr[nfin++] = S.act[i];
	if (nfin)
		finish(nfin);
}

/* The rows of S.xr[0..nfin) are done. */
static void finish(u32 nfin)
{
	struct kvpool_batch_result res;
	struct req **fin = xcalloc(nfin, sizeof(*fin));
	u32 i, n = 0, ndon = 0, nrel = 0;
	u64 want = 0, dwant = 0;
	int ret;

	memcpy(fin, S.xr, nfin * sizeof(*fin));
	/* The speculative tail: TRIM, one call. */
	for (i = 0; i < nfin; i++) {
		struct row *r = fin[i]->row;

		if (r->alloc > r->comm) {
			u32 p;

			for (p = pages_of(r->comm); p < pages_of(r->alloc); p++)
				want += r->pg[p] != NIL;
			S.hh[n++] = r->h;
		}
		r->alloc = r->comm;
	}
	if (n) {
		ret = kvpool_trim(S.kp, S.hh, n, &res);
		if (ret < 0)
			die("trim of %u rows: %s", n, kvpool_strerror(ret));
		check_count("trim", ret, want);
	}
	for (i = 0; i < nfin; i++) {
		struct req *q = fin[i];
		struct sess *s = q->s;
		bool more = q->turn + 1 < s->nturns;

		act_remove(q);
		S.me->finished++;
		if (more && s->stream) {
			ret = kvpool_to_slot(S.kp, q->row->h, s->id);
			if (ret < 0)
				die("to slot: %s", kvpool_strerror(ret));
			check_count("to slot", ret, row_owned(q->row));
			s->parked = q->row;
			s->pprev = S.park_tail;
			s->pnext = NULL;
			if (S.park_tail)
				S.park_tail->pnext = s;
			else
				S.park_head = s;
			S.park_tail = s;
			S.nparked++;
			q->row = NULL;
		} else if (S.use_cache && !s->swa) {
			S.hh[ndon] = q->row->h;
			S.xr[ndon++] = q;
			continue;	/* released below */
		} else {
			release_plain(q->row);
			q->row = NULL;
			nrel++;
		}
		if (more)
			next_turn(s, q->turn + 1);
		else if (!s->parked)
			free(s);
		free(q);
	}
	if (ndon) {
		want = 0;
		for (i = 0; i < ndon; i++)
			want += row_owned(S.xr[i]->row);
		ret = kvpool_release_donate(S.kp, S.hh, ndon, &res);
		if (ret < 0)
			die("release with donate of %u rows: %s", ndon,
			    kvpool_strerror(ret));
		for (i = 0; i < ndon; i++) {
			struct req *q = S.xr[i];
			struct row *r = q->row;
			u32 np = r->prot / S.pt, k;

			dwant += mirror_donate(q, 0);
			for (k = 0; k < np; k++)
				unpin(r->pg[k]);
			row_free(r);
			if (q->turn + 1 < q->s->nturns)
				next_turn(q->s, q->turn + 1);
			else
				free(q->s);
			free(q);
		}
		check_count("release with donate", ret, want - dwant);
	}
	free(fin);
}

/* ---- handoff: the decode side ------------------------------------------- */

static void receive_rows(void)
{
	struct pollfd pfd = { .fd = S.a->sock, .events = POLLIN };

	while (S.npend < S.max_batch && poll(&pfd, 1, 0) == 1) {
		struct pending *pe = &S.pend[S.npend];
		int fd = kvpool_recv_fd(S.a->sock);

		if (fd == -ECONNRESET)
			return;
		if (fd < 0)
			die("receiving a row: %s", strerror(-fd));
		if (!read_full(S.a->sock, &pe->m, sizeof(pe->m)) ||
		    pe->m.magic != HANDOFF_MAGIC)
			die("handoff message lost");
		pe->fd = fd;
		S.npend++;
	}
}

/* The prefill server could not get pages: evict that much cache. */
static void read_needs(void)
{
	u32 need, sum = 0;

	while (read(S.a->need_fd, &need, sizeof(need)) == (ssize_t)sizeof(need))
		sum += need;
	if (sum)
		cache_evict(sum);
}

static void import_rows(void)
{
	u32 i = 0;

	read_needs();
	receive_rows();
	while (i < S.npend && S.nact < S.max_running) {
		struct pending *pe = &S.pend[i];
		struct kvpool_row_query rq;
		struct kvpool_handle h;
		struct req *q;
		struct row *r;
		int ret;

		/* Our part of the tenant first; but always one at a time. */
		if (S.nact && my_cap() != UINT32_MAX &&
		    my_pages() + pe->m.nr_pages > my_cap()) {
			u32 over = my_pages() + pe->m.nr_pages - my_cap();

			if (cache_evict(over) < over)
				break;
			S.st.out_client_cache_pages -= over;
		}
		ret = kvpool_import(S.kp, pe->fd, &h);
		if (ret == -EDQUOT) {
			count_refusal(ret);
			if (make_room(pe->m.nr_pages, false))
				ret = kvpool_import(S.kp, pe->fd, &h);
			if (ret == -EDQUOT)
				break;	/* later, in order */
		}
		if (ret < 0)
			die("import: %s", kvpool_strerror(ret));
		check_count("import", ret, pe->m.nr_pages);
		S.st.out_client_pages += (u32)ret;
		close(pe->fd);
		S.me->imports++;
		r = row_new(h);
		row_reserve(r, pe->m.nr_pages);
		ret = kvpool_row_query(S.kp, h, r->pg, r->cap, &rq);
		if (ret < 0)
			die("row query: %s", kvpool_strerror(ret));
		check_count("row query", ret, pe->m.nr_pages);
		if (rq.out_committed_len != pe->m.comm || rq.out_protected_len)
			die("imported row: committed %u protected %u, sent %u",
			    rq.out_committed_len, rq.out_protected_len,
			    pe->m.comm);
		r->alloc = rq.out_allocated_len;
		r->comm = rq.out_committed_len;
		q = req_make(sess_make(pe->m.sess), 0);
		q->row = r;
		q->target = q->prompt;
		q->state = RQ_DECODE;
		S.act[S.nact++] = q;
		i++;
	}
	memmove(S.pend, S.pend + i, (S.npend - i) * sizeof(*S.pend));
	S.npend -= i;
}

/* ---- the process -------------------------------------------------------- */

static void arrivals(void)
{
	if (S.a->role != ROLE_DECODE) {
		while (S.next_arrival <= S.now) {
			struct sess *s = sess_make(S.next_sess++);

			wait_push(req_make(s, 0), false);
			S.me->arrived++;
			S.next_arrival += rng_exp(&S.arr_rng, 1.0 / S.rate);
		}
	}
	while (S.nev && S.ev[0].t <= S.now) {
		wait_push(ev_pop(), false);
		S.me->arrived++;
	}
}

static void publish(void)
{
	sim_store(S.me->running, S.nact);
	sim_store(S.me->waiting, S.nwait);
	sim_store(S.me->slots, S.nparked);
	sim_store(S.me->cache_pages, S.ncache);
}

/* Everything back, by hand (a crash would do the same by close). */
static void drain(void)
{
	struct kvpool_stats st;
	int ret;
	u32 i;

	sim_store(S.me->state, PROC_DRAINING);
	while (S.nact)
		release_plain(S.act[--S.nact]->row);
	while (S.park_head)
		slot_drop_oldest();
	cache_evict(S.ncache);
	for (i = 0; i < S.npend; i++)
		close(S.pend[i].fd);
	S.npend = 0;
	publish();
	ret = kvpool_stats(S.kp, &st);
	if (ret < 0)
		die("stats: %s", kvpool_strerror(ret));
	if (st.out_client_rows || st.out_client_slots || st.out_client_pages ||
	    st.out_client_cache_pages || S.ncache || S.npinned)
		die("after drain: rows %u slots %u pages %u cache %u, mirror cache %u pinned %u",
		    st.out_client_rows, st.out_client_slots,
		    st.out_client_pages, st.out_client_cache_pages,
		    S.ncache, S.npinned);
}

static void init(const struct sim_sched_args *a)
{
	const struct sim_workload *w = &a->cfg->wl;
	struct kvpool_info info;
	u64 srng;
	u32 k, hsize;
	int ret;

	S.a = a;
	S.me = a->me;
	S.wl = w;
	/* Out of memory fails this process as any broken check does. */
	kvs_set_oom(oom, NULL);
	ret = kvpool_open(a->pool_path, &S.kp);
	if (ret < 0)
		die("open %s: %s", a->pool_path, kvpool_strerror(ret));
	kvpool_info(S.kp, &info);
	S.pt = info.out_page_tokens;
	S.nr_pages = info.out_nr_pages;
	S.row_tokens = info.out_row_tokens;
	S.max_batch = info.out_max_batch;
	S.max_running = (u32)fmax(4, w->max_running * a->scale);
	S.max_running = min_u32(S.max_running, S.max_batch);
	S.max_running = min_u32(S.max_running, info.out_nr_rows / 2);
	S.prefill_budget = w->prefill_budget;
	S.use_cache = a->role != ROLE_PREFILL;
	S.ahead = 1 + w->draft;
	S.ratio = 0.5;
	S.rate = w->sess_rate * a->scale;
	S.seed = mix64(a->seed ^ mix64(0x7e4a47ULL + (u64)a->tenant));
	S.arr_rng = mix64(S.seed ^ mix64(0xa77ULL + a->gen));
	S.next_arrival = (now_s() - a->t0) +
			 rng_exp(&S.arr_rng, 1.0 / S.rate);
	/* Restarts and the two roles draw from separate id ranges. */
	S.next_sess = (a->gen << 24) | ((u32)a->role << 22);
	/* Long enough to matter, never more than an eighth of the pool. */
	S.max_req = min_u32(S.row_tokens - (S.ahead + 2) * S.pt,
			    (u32)((u64)S.nr_pages * S.pt / 8));
	srng = mix64(S.seed ^ 0x5157ULL);
	for (k = 0; k < w->nshared && k < 16; k++)
		S.shared_len[k] = rng_lognormal(&srng, w->shared_median, 0.4,
						S.pt, S.max_req / 2);

	S.cn = xcalloc(S.nr_pages, sizeof(*S.cn));
	for (hsize = 1; hsize < S.nr_pages; hsize <<= 1)
		;
	S.hmask = hsize - 1;
	S.bucket = xcalloc(hsize, sizeof(u32));
	memset(S.bucket, 0xff, hsize * sizeof(u32));
	S.lru_head = S.lru_tail = NIL;
	S.act = xcalloc(S.max_batch, sizeof(*S.act));
	S.xe = xcalloc(S.max_batch, sizeof(*S.xe));
	S.le = xcalloc(S.max_batch, sizeof(*S.le));
	S.hh = xcalloc(S.max_batch, sizeof(*S.hh));
	S.xr = xcalloc(S.max_batch, sizeof(*S.xr));
	S.ids = xcalloc(S.nr_pages, sizeof(u32));
	S.pend = xcalloc(S.max_batch, sizeof(*S.pend));
	xpg_reserve(4096);
}

int sim_sched_main(const struct sim_sched_args *a)
{
	double next;
	int ret;

	init(a);
	sim_store(S.me->state, PROC_RUNNING);
	next = now_s();
	while (!sim_load(a->sh->stop)) {
		double left;

		S.now = now_s() - a->t0;
		ret = kvpool_stats(S.kp, &S.st);
		if (ret < 0)
			die("stats: %s", kvpool_strerror(ret));
		keep_headroom();
		arrivals();
		if (a->role == ROLE_DECODE)
			import_rows();
		admit();
		prefill();
		if (a->role != ROLE_PREFILL)
			decode();
		S.me->steps++;
		S.ratio = fmax(0.1, S.ratio - 0.002);
		publish();

		/* Until the next step: wait for the kernel to ask. */
		next += a->step_s;
		left = next - now_s();
		if (left < -a->step_s) {
			S.me->late_steps++;
			next = now_s();
			left = 0;
		}
		ret = kvpool_wait_pressure(S.kp, left > 0 ? (int)(left * 1000) : 0);
		if (ret < 0 && ret != -EINTR)
			die("poll: %s", kvpool_strerror(ret));
		if (ret == 1) {
			answer_pressure();
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
	drain();
	kvpool_close(S.kp);
	sim_store(S.me->state, PROC_DONE);
	return 0;
}
