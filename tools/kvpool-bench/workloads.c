// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench, the workloads: what a scheduler asks of the broker,
 * one op kind at a time, on every side (kvpool-bench.c runs them).
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * A decode step is that of userlib/python/src/kvpool/bench.py: one
 * EXTEND of every row of the batch by one token (the new page ids into
 * a buffer the caller keeps) and one COMMIT of them to the same new
 * lengths, the entries packed from a lengths array each step.
 */
/* setresuid(), setresgid() */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/*
 * Tokens a decode row holds before its steps, and the most steps of one
 * segment: 320 + 192 = 512, so the page arrays (grown by doubling: room
 * for 512 once they hold 320) never grow in a timed step. A step that
 * doubles every row's array at once is an artefact of fresh rows: in a
 * server it comes once per row per doubling, and prefill shows its cost.
 */
#define DECODE_START	320
#define DECODE_SEG	192
#define SLOT_LEN	1024U
#define SCALE_B		256U
#define SCALE_START	1
#define SCALE_SEG	32
/* churn: requests of 64..4096 tokens, a quarter of it the prompt */
#define REQ_MIN		64
#define REQ_MAX		4096
/*
 * The mean tokens a live request holds once the churn is steady: a long
 * request is alive longer, so a live one's target averages
 * E[t^2] / E[t] = 2731 tokens, and it is anywhere between its prompt
 * and that: 0.625 of it.
 */
#define REQ_LIVE_MEAN	1707

static u32 max_batch_of(const struct kb_geom *g)
{
	return min_u32(g->nr_rows, KB_MAX_BATCH);
}

/* Take @n rows and grow each to @len tokens, committed: untimed. */
static void build_rows(struct kb_case *c, const struct kb_side *s, u32 n,
		       u32 len)
{
	u32 i;

	kb_must(s->alloc_rows(c->h, n), s, "ROW_ALLOC");
	for (i = 0; i < n; i++)
		c->lens[i] = len;
	if (!len)
		return;
	for (i = 0; i < n; i++) {
		c->e[i].handle = c->h[i];
		c->e[i].new_len = len;
		c->l[i].handle = c->h[i];
		c->l[i].len = len;
	}
	kb_must(s->extend(c->e, n, c->pages, c->pages_cap), s, "EXTEND");
	kb_must(s->commit(c->l, n), s, "COMMIT");
}

static void decode_step(struct kb_case *c, const struct kb_side *s, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		c->e[i].handle = c->h[i];
		c->e[i].new_len = c->lens[i] + 1;
	}
	kb_must(s->extend(c->e, n, c->pages, c->pages_cap), s, "EXTEND");
	for (i = 0; i < n; i++) {
		c->l[i].handle = c->h[i];
		c->l[i].len = ++c->lens[i];
	}
	kb_must(s->commit(c->l, n), s, "COMMIT");
}

/*
 * @reps decode steps of fresh rows of c->len tokens, in segments of at
 * most c->seg steps, each ending in the RELEASE of the batch: the rows
 * never reach row_tokens. ns[0]: a step; ns[1]: a release.
 */
static void decode_round(struct kb_case *c, const struct kb_side *s,
			 u32 reps, double *ns)
{
	u64 t_step = 0, t_rel = 0, pages = 0, t0;
	u32 done = 0, nrel = 0, n, k;

	while (done < reps) {
		n = min_u32(c->seg, reps - done);
		build_rows(c, s, c->rows, c->len);
		t0 = kb_ns();
		for (k = 0; k < n; k++)
			decode_step(c, s, c->rows);
		t_step += kb_ns() - t0;
		t0 = kb_ns();
		pages += kb_must(s->release(c->h, c->rows), s, "RELEASE");
		t_rel += kb_ns() - t0;
		nrel++;
		done += n;
	}
	ns[0] = (double)t_step / reps;
	ns[1] = (double)t_rel / nrel;
	c->fig[1].div2 = (double)pages / nrel;
}

static void set_fig(struct kb_fig *f, const char *workload,
		    const char *unit, double div, const char *unit2,
		    double div2, u32 nioctl)
{
	f->workload = workload;
	f->unit = unit;
	f->div = div;
	f->unit2 = unit2;
	f->div2 = div2;
	f->nioctl = nioctl;
}

/* A decode case of @rows rows at @pt, from @start tokens. */
static void decode_case(struct kb_case *c, u32 rows, u32 pt, u32 start,
			u32 seg)
{
	memset(c, 0, sizeof(*c));
	c->rows = rows;
	c->len = start;
	c->seg = seg;
	c->geom.page_tokens = pt;
	c->geom.nr_rows = rows + 4;
	c->geom.row_tokens = start + seg;
	c->geom.nr_pages = rows * div_up(start + seg, pt) + 64;
	c->reps_min = 16;
	c->reps_max = 1U << 20;
	c->round = decode_round;
	kb_case_alloc(c, rows, max_u32(rows * div_up(start, pt), rows));
}

static void run_decode(void)
{
	static const u32 bs[] = { 1, 8, 64, 256, 512 };
	static const u32 pts[] = { 1, 16 };
	bool dec = kb_want("decode"), rel = kb_want("release");
	u32 seg = kb_opt.quick ? 128 : DECODE_SEG;
	struct kb_case c;
	u32 i, j;

	if (!dec && !rel)
		return;
	for (j = 0; j < ARRAY_SIZE(pts); j++) {
		for (i = 0; i < ARRAY_SIZE(bs); i++) {
			decode_case(&c, bs[i], pts[j], DECODE_START, seg);
			snprintf(c.params, sizeof(c.params), "B=%u pt=%u",
				 bs[i], pts[j]);
			if (dec)
				set_fig(&c.fig[0], "decode", "us/step", 1000,
					"ns/row", bs[i], 2);
			if (rel)
				set_fig(&c.fig[1], "release", "us", 1000,
					"ns/page", 1, 1);
			kb_run_case(&c);
		}
	}
}

/*
 * 256 rows grown a token a step to 128 pages each (page_tokens 1), so
 * that their pages interleave as decode traffic's do, then one RELEASE
 * of all 256, the only timed part.
 */
static void release_big_round(struct kb_case *c, const struct kb_side *s,
			      u32 reps, double *ns)
{
	u64 t = 0, t0;
	u32 r, k;

	for (r = 0; r < reps; r++) {
		build_rows(c, s, c->rows, 0);
		for (k = 0; k < c->len; k++)
			decode_step(c, s, c->rows);
		t0 = kb_ns();
		kb_must(s->release(c->h, c->rows), s, "RELEASE");
		t += kb_ns() - t0;
	}
	ns[0] = (double)t / reps;
	ns[1] = 0;
}

static void release_big_case(struct kb_case *c)
{
	memset(c, 0, sizeof(*c));
	c->rows = 256;
	c->len = 128;
	c->geom = (struct kb_geom){ .nr_pages = 256 * 128 + 64,
				    .page_tokens = 1, .nr_rows = 260,
				    .row_tokens = 128 };
	c->reps_min = 1;
	c->reps_max = kb_opt.quick ? 2 : 16;
	c->round = release_big_round;
	snprintf(c->params, sizeof(c->params), "B=256 pages=128 pt=1");
	set_fig(&c->fig[0], "release-256x128", "us", 1000, "ns/page",
		256 * 128, 1);
	kb_case_alloc(c, c->rows, c->rows);
}

static void run_release_big(void)
{
	struct kb_case c;

	if (!kb_want("release-256x128"))
		return;
	release_big_case(&c);
	kb_run_case(&c);
}

/* One row from 0 to c->len tokens in one EXTEND, then its COMMIT. */
static void prefill_round(struct kb_case *c, const struct kb_side *s,
			  u32 reps, double *ns)
{
	u64 t = 0, t0;
	u32 r;

	for (r = 0; r < reps; r++) {
		kb_must(s->alloc_rows(c->h, 1), s, "ROW_ALLOC");
		c->e[0].handle = c->h[0];
		c->e[0].new_len = c->len;
		c->l[0].handle = c->h[0];
		c->l[0].len = c->len;
		t0 = kb_ns();
		kb_must(s->extend(c->e, 1, c->pages, c->pages_cap), s,
			"EXTEND");
		kb_must(s->commit(c->l, 1), s, "COMMIT");
		t += kb_ns() - t0;
		kb_must(s->release(c->h, 1), s, "RELEASE");
	}
	ns[0] = (double)t / reps;
	ns[1] = 0;
}

static void prefill_case(struct kb_case *c, u32 len, u32 pt)
{
	u32 pages = div_up(len, pt);

	memset(c, 0, sizeof(*c));
	c->len = len;
	c->geom = (struct kb_geom){ .nr_pages = pages + 16, .page_tokens = pt,
				    .nr_rows = 4, .row_tokens = len };
	c->reps_min = 2;
	c->reps_max = 100000;
	c->round = prefill_round;
	snprintf(c->params, sizeof(c->params), "len=%u pt=%u", len, pt);
	set_fig(&c->fig[0], "prefill", "us/op", 1000, "ns/page", pages, 2);
	kb_case_alloc(c, 1, pages);
}

static void run_prefill(void)
{
	static const u32 lens[] = { 2048, 32768 };
	static const u32 pts[] = { 1, 16 };
	struct kb_case c;
	u32 i, j;

	if (!kb_want("prefill"))
		return;
	for (j = 0; j < ARRAY_SIZE(pts); j++) {
		for (i = 0; i < ARRAY_SIZE(lens); i++) {
			prefill_case(&c, lens[i], pts[j]);
			kb_run_case(&c);
		}
	}
}

/* TO_SLOT then FROM_SLOT of one row of SLOT_LEN tokens: a round trip. */
static void slot_round(struct kb_case *c, const struct kb_side *s,
		       u32 reps, double *ns)
{
	u64 t0;
	u32 r;

	build_rows(c, s, 1, c->len);
	t0 = kb_ns();
	for (r = 0; r < reps; r++) {
		kb_must(s->to_slot(c->h[0], 7), s, "TO_SLOT");
		kb_must(s->from_slot(7, &c->h[0]), s, "FROM_SLOT");
	}
	ns[0] = (double)(kb_ns() - t0) / reps;
	ns[1] = 0;
	kb_must(s->release(c->h, 1), s, "RELEASE");
}

static void run_slot(void)
{
	struct kb_case c;

	if (!kb_want("slot"))
		return;
	memset(&c, 0, sizeof(c));
	c.len = SLOT_LEN;
	c.geom = (struct kb_geom){ .nr_pages = SLOT_LEN + 16,
				   .page_tokens = 1, .nr_rows = 4,
				   .row_tokens = SLOT_LEN };
	c.reps_min = 16;
	c.reps_max = 1U << 20;
	c.round = slot_round;
	snprintf(c.params, sizeof(c.params), "len=%u pt=1", SLOT_LEN);
	set_fig(&c.fig[0], "slot", "us/trip", 1000, NULL, 0, 2);
	kb_case_alloc(&c, 1, SLOT_LEN);
	kb_run_case(&c);
}

/* EXTEND of one row by one token, alone: the fixed cost of a call. */
static void extend1_round(struct kb_case *c, const struct kb_side *s,
			  u32 reps, double *ns)
{
	u64 t = 0, t0;
	u32 done = 0, n, k;

	while (done < reps) {
		n = min_u32(c->seg, reps - done);
		kb_must(s->alloc_rows(c->h, 1), s, "ROW_ALLOC");
		c->e[0].handle = c->h[0];
		t0 = kb_ns();
		for (k = 1; k <= n; k++) {
			c->e[0].new_len = k;
			kb_must(s->extend(c->e, 1, c->pages, c->pages_cap), s,
				"EXTEND");
		}
		t += kb_ns() - t0;
		kb_must(s->release(c->h, 1), s, "RELEASE");
		done += n;
	}
	ns[0] = (double)t / reps;
	ns[1] = 0;
}

static void extend1_case(struct kb_case *c)
{
	memset(c, 0, sizeof(*c));
	c->seg = 16384;
	c->geom = (struct kb_geom){ .nr_pages = c->seg + 16,
				    .page_tokens = 1, .nr_rows = 4,
				    .row_tokens = c->seg };
	c->reps_min = 64;
	c->reps_max = 1U << 22;
	c->round = extend1_round;
	snprintf(c->params, sizeof(c->params), "B=1 pt=1");
	set_fig(&c->fig[0], "extend1", "us/op", 1000, NULL, 0, 1);
	c->fig[0].vs_null = true;
	kb_case_alloc(c, 1, 1);
}

static void run_extend1(void)
{
	struct kb_case c;

	if (!kb_want("extend1"))
		return;
	extend1_case(&c);
	kb_run_case(&c);
}

/* ---- churn: requests arriving, decoding and finishing --------------- */

/*
 * Live requests on one side's pool: each a row, its length and the
 * length it finishes at (REQ_MIN..REQ_MAX tokens, uniform), a quarter
 * of which its prompt, prefilled on admission. Every step grows each by
 * one token (one EXTEND and one COMMIT per batch of max_batch); those
 * at their target are released and as many new ones admitted.
 */
struct churn {
	const struct kb_side *s;
	u64 rng;
	u32 pt, max_batch;
	u32 nr, conc;
	struct kvpool_handle *h;
	u32 *len, *target;
	u64 allocated;		/* pages handed out so far */
	struct kvpool_extend_entry *e;
	struct kvpool_len_entry *l;
	struct kvpool_handle *done;
	u32 *pages, pages_cap;
};

static void churn_init(struct churn *ch, const struct kb_side *s,
		       const struct kb_geom *g, u32 conc, u64 seed)
{
	memset(ch, 0, sizeof(*ch));
	ch->s = s;
	ch->rng = seed;
	ch->pt = g->page_tokens;
	ch->max_batch = max_batch_of(g);
	ch->conc = conc;
	ch->h = xcalloc(conc, sizeof(*ch->h));
	ch->len = xcalloc(conc, sizeof(u32));
	ch->target = xcalloc(conc, sizeof(u32));
	ch->done = xcalloc(conc, sizeof(*ch->done));
	ch->e = xcalloc(ch->max_batch, sizeof(*ch->e));
	ch->l = xcalloc(ch->max_batch, sizeof(*ch->l));
	ch->pages_cap = max_u32(1U << 18, div_up(REQ_MAX, ch->pt));
	ch->pages = xcalloc(ch->pages_cap, sizeof(u32));
}

/* The rows stay held: the pool's teardown takes them. */
static void churn_free(struct churn *ch)
{
	free(ch->h);
	free(ch->len);
	free(ch->target);
	free(ch->done);
	free(ch->e);
	free(ch->l);
	free(ch->pages);
}

/*
 * @n new requests at the end of the live set, prefilled to their prompt
 * or, @staggered (the first population), to a random point of their
 * life, so that they do not all finish together.
 */
static void churn_admit(struct churn *ch, u32 n, bool staggered)
{
	const struct kb_side *s = ch->s;
	u32 base = ch->nr, i, k, need;

	for (i = 0; i < n; i += k) {
		k = min_u32(n - i, ch->max_batch);
		kb_must(s->alloc_rows(ch->h + base + i, k), s, "ROW_ALLOC");
	}
	for (i = base; i < base + n; i++) {
		u32 t = REQ_MIN + rng_below(&ch->rng, REQ_MAX - REQ_MIN + 1);
		u32 p = max_u32(t / 4, 1);

		ch->target[i] = t;
		ch->len[i] = staggered ? p + rng_below(&ch->rng, t - p) : p;
	}
	for (i = base; i < base + n; i += k) {
		for (k = 0, need = 0; i + k < base + n && k < ch->max_batch;
		     k++) {
			u32 pg = div_up(ch->len[i + k], ch->pt);

			if (need + pg > ch->pages_cap)
				break;
			need += pg;
			ch->e[k].handle = ch->h[i + k];
			ch->e[k].new_len = ch->len[i + k];
			ch->l[k].handle = ch->h[i + k];
			ch->l[k].len = ch->len[i + k];
		}
		ch->allocated += kb_must(s->extend(ch->e, k, ch->pages,
						   ch->pages_cap), s, "EXTEND");
		kb_must(s->commit(ch->l, k), s, "COMMIT");
	}
	ch->nr += n;
}

/*
 * One decode step of every live request; the finished released and
 * replaced. Returns the nanoseconds of its EXTENDs and COMMITs.
 */
static u64 churn_step(struct churn *ch)
{
	const struct kb_side *s = ch->s;
	u32 i, j, k, nd = 0;
	u64 t = 0, t0;

	for (i = 0; i < ch->nr; i += k) {
		k = min_u32(ch->nr - i, ch->max_batch);
		for (j = 0; j < k; j++) {
			ch->e[j].handle = ch->h[i + j];
			ch->e[j].new_len = ch->len[i + j] + 1;
		}
		t0 = kb_ns();
		ch->allocated += kb_must(s->extend(ch->e, k, ch->pages,
						   ch->pages_cap), s, "EXTEND");
		for (j = 0; j < k; j++) {
			ch->l[j].handle = ch->h[i + j];
			ch->l[j].len = ++ch->len[i + j];
		}
		kb_must(s->commit(ch->l, k), s, "COMMIT");
		t += kb_ns() - t0;
	}
	for (i = 0; i < ch->nr;) {
		if (ch->len[i] < ch->target[i]) {
			i++;
			continue;
		}
		ch->done[nd++] = ch->h[i];
		ch->nr--;
		ch->h[i] = ch->h[ch->nr];
		ch->len[i] = ch->len[ch->nr];
		ch->target[i] = ch->target[ch->nr];
	}
	for (i = 0; i < nd; i += k) {
		k = min_u32(nd - i, ch->max_batch);
		kb_must(s->release(ch->done + i, k), s, "RELEASE");
	}
	if (nd)
		churn_admit(ch, nd, false);
	return t;
}

/* ---- scale: the decode step on large and fragmented pools ---------- */

static u32 scale_conc(u32 nr_pages)
{
	return max_u32(nr_pages / (2 * REQ_LIVE_MEAN), 8);
}

/* Rows of the random fill: 256 pages each, at least 256 of them. */
static u32 scale_fill_rows(u32 nr_pages)
{
	return max_u32(nr_pages / 256, 256);
}

/*
 * Requests decoding together and finishing at random until the pool
 * has been handed out twice over; the survivors, about half the pool,
 * stay held while the decode step is measured.
 */
static void prepare_churn(struct kb_case *c, const struct kb_side *s)
{
	struct churn ch;

	churn_init(&ch, s, &c->geom, scale_conc(c->geom.nr_pages),
		   kb_opt.seed);
	churn_admit(&ch, ch.conc, true);
	while (ch.allocated < 2ULL * c->geom.nr_pages)
		churn_step(&ch);
	churn_free(&ch);
}

/*
 * Every page taken, by rows grown a token at a time in a new random
 * order each pass, so that a row's pages lie all over the pool; then a
 * random half of the rows released in random order.
 */
static void prepare_random(struct kb_case *c, const struct kb_side *s)
{
	u32 m = scale_fill_rows(c->geom.nr_pages);
	u32 per = c->geom.nr_pages / m, mb = max_batch_of(&c->geom);
	struct kvpool_handle *h = xcalloc(m, sizeof(*h)), *hb;
	struct kvpool_extend_entry *e = xcalloc(mb, sizeof(*e));
	u32 *order = xcalloc(m, sizeof(u32)), *pages = xcalloc(mb, sizeof(u32));
	u64 rng = kb_opt.seed;
	u32 i, j, k, p;

	for (i = 0; i < m; i += k) {
		k = min_u32(m - i, mb);
		kb_must(s->alloc_rows(h + i, k), s, "ROW_ALLOC");
	}
	for (i = 0; i < m; i++)
		order[i] = i;
	for (p = 1; p <= per; p++) {
		for (i = m - 1; i > 0; i--) {
			u32 r = rng_below(&rng, i + 1), x = order[i];

			order[i] = order[r];
			order[r] = x;
		}
		for (i = 0; i < m; i += k) {
			k = min_u32(m - i, mb);
			for (j = 0; j < k; j++) {
				e[j].handle = h[order[i + j]];
				e[j].new_len = p * c->geom.page_tokens;
			}
			kb_must(s->extend(e, k, pages, mb), s, "EXTEND");
		}
	}
	/* The last pass's order is random: release its first half. */
	hb = xcalloc(m / 2, sizeof(*hb));
	for (i = 0; i < m / 2; i++)
		hb[i] = h[order[i]];
	for (i = 0; i < m / 2; i += k) {
		k = min_u32(m / 2 - i, mb);
		kb_must(s->release(hb + i, k), s, "RELEASE");
	}
	free(hb);
	free(h);
	free(e);
	free(order);
	free(pages);
}

static void run_scale(void)
{
	static const u32 sizes[] = { 64U << 10, 1U << 20, 4U << 20, 16U << 20 };
	static const char *const states[] = { "fresh", "churn", "random" };
	char base[96];
	struct kb_case c;
	u32 i, j, k;

	if (!kb_want("scale"))
		return;
	for (i = 0; i < ARRAY_SIZE(sizes) && sizes[i] <= kb_opt.scale_max;
	     i++) {
		for (j = 0; j < ARRAY_SIZE(states); j++) {
			decode_case(&c, SCALE_B, 1, SCALE_START, SCALE_SEG);
			/* Same geometry in every state, room for each. */
			c.geom.nr_pages = sizes[i];
			c.geom.nr_rows = max_u32(scale_fill_rows(sizes[i]),
						 scale_conc(sizes[i])) +
					 SCALE_B + 64;
			c.geom.row_tokens = REQ_MAX;
			c.state = states[j];
			c.prepare = j == 1 ? prepare_churn :
				    j == 2 ? prepare_random : NULL;
			snprintf(c.params, sizeof(c.params),
				 "pages=%u state=%s B=%u pt=1", sizes[i],
				 states[j], SCALE_B);
			set_fig(&c.fig[0], "scale", "us/step", 1000,
				"ns/page", SCALE_B, 2);
			kb_run_case(&c);
		}
	}
	if (sizes[0] > kb_opt.scale_max)
		return;
	snprintf(base, sizeof(base), "pages=%u state=fresh B=%u pt=1",
		 sizes[0], SCALE_B);
	for (i = 0; i < ARRAY_SIZE(sizes) && sizes[i] <= kb_opt.scale_max;
	     i++) {
		for (j = 0; j < ARRAY_SIZE(states); j++) {
			char p[96], name[40];

			snprintf(p, sizeof(p), "pages=%u state=%s B=%u pt=1",
				 sizes[i], states[j], SCALE_B);
			for (k = 0; k < KB_NR_SIDES; k++) {
				if (k == KB_NULL || !kb_present[k])
					continue;
				snprintf(name, sizeof(name),
					 "%s / fresh-64k", kb_side_names[k]);
				kb_ratio("scale", p, name,
					 kb_median_of("scale", p,
						      kb_side_names[k],
						      "ns/page") /
					 kb_median_of("scale", base,
						      kb_side_names[k],
						      "ns/page"));
			}
		}
	}
}

/* ---- drift: the decode step over a long run of churn --------------- */

static void run_drift(void)
{
	const struct kb_side *sv[KB_NR_SIDES] = {
		[KB_CORE] = &kb_core_side,
		[KB_KERNEL] = &kb_kernel_side,
		[KB_FLOOR] = &kb_floor_side,
	};
	u32 pages = kb_opt.quick ? 256U << 10 : 1U << 20;
	u32 b = kb_opt.quick ? 64 : 512;
	u32 nwin = kb_opt.quick ? 4 : 10, wsteps = kb_opt.quick ? 100 : 1000;
	struct kb_geom g = { .nr_pages = pages, .page_tokens = 1,
			     .nr_rows = 2 * b + 64, .row_tokens = REQ_MAX };
	struct churn ch[KB_NR_SIDES];
	double *v = xcalloc(wsteps, sizeof(*v));
	double *wmed[KB_NR_SIDES] = { 0 };
	char p[96];
	u32 i, w, k;

	if (!kb_want("drift"))
		return;
	for (i = 0; i < KB_NR_SIDES; i++) {
		if (!sv[i] || !kb_present[i])
			continue;
		if (sv[i]->setup(&g))
			kb_die("%s: no pool for drift", sv[i]->name);
		churn_init(&ch[i], sv[i], &g, b, kb_opt.seed);
		churn_admit(&ch[i], b, true);
		wmed[i] = xcalloc(nwin, sizeof(double));
	}
	for (w = 0; w < nwin; w++) {
		snprintf(p, sizeof(p), "pages=%u B=%u pt=1 window=%u", pages,
			 b, w + 1);
		for (i = 0; i < KB_NR_SIDES; i++) {
			if (!wmed[i])
				continue;
			for (k = 0; k < wsteps; k++)
				v[k] = (double)churn_step(&ch[i]);
			kb_record("drift", p, kb_side_names[i], "us/step", v,
				  wsteps, 1000, NULL, 0);
			wmed[i][w] = kb_median_of("drift", p, kb_side_names[i],
						  "us/step");
		}
	}
	snprintf(p, sizeof(p), "pages=%u B=%u pt=1", pages, b);
	for (i = 0; i < KB_NR_SIDES; i++) {
		double mx = 0;
		char name[40];

		if (!wmed[i])
			continue;
		for (w = 0; w < nwin; w++)
			mx = fmax(mx, wmed[i][w]);
		snprintf(name, sizeof(name), "%s last/first", kb_side_names[i]);
		kb_ratio("drift", p, name, wmed[i][nwin - 1] / wmed[i][0]);
		snprintf(name, sizeof(name), "%s max/first", kb_side_names[i]);
		kb_ratio("drift", p, name, mx / wmed[i][0]);
		churn_free(&ch[i]);
		sv[i]->teardown();
		free(wmed[i]);
	}
	free(v);
}

/* ---- procs: processes sharing one pool, or one pool each ----------- */

#define PROCS_B		KB_PROC_ROWS
#define PROCS_PT	16
#define PROCS_SEG	1024
#define PROCS_MAX	4

_Static_assert(DECODE_START + PROCS_SEG == KB_PROC_ROW_TOKENS,
	       "bench.h's KB_PROC_ROW_TOKENS is what a child's rows reach");

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

void kb_lat_of(u64 *ns, u64 n, struct kb_lat *out)
{
	double sum = 0;
	u64 i;

	memset(out, 0, sizeof(*out));
	out->n = n;
	if (!n)
		return;
	for (i = 0; i < n; i++)
		sum += ns[i];
	qsort(ns, n, sizeof(*ns), cmp_u64);
	out->median = ns[n / 2] / 1e3;
	out->p99 = ns[(u64)(n * 0.99)] / 1e3;
	out->p999 = ns[(u64)(n * 0.999)] / 1e3;
	out->min = ns[0] / 1e3;
	out->max = ns[n - 1] / 1e3;
	out->mean = sum / n / 1e3;
}

int kb_become(uid_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return -errno;
	return 0;
}

struct kb_proc_res kb_decode_child(unsigned int id, double secs, uid_t uid,
				   int ready, int go)
{
	struct kvpool_handle h[PROCS_B];
	struct kvpool_extend_entry e[PROCS_B];
	struct kvpool_len_entry l[PROCS_B] = { 0 };
	u32 lens[PROCS_B], pages[PROCS_B * DECODE_START], cap = 1U << 22;
	u64 *ts = xcalloc(cap, sizeof(u64));
	struct kb_proc_res res = { 0 };
	struct kvpool_stats st;
	struct kvpool *kp;
	char path[32], c;
	u64 n = 0, t_end, t0;
	u32 i, k = PROCS_SEG;
	int ret = 0;

	snprintf(path, sizeof(path), "/dev/kvpool%u", id);
	/* The tenant is read at open: drop the uid before it. */
	if (uid != KB_SAME_UID)
		ret = kb_become(uid);
	if (!ret)
		ret = kvpool_open(path, &kp);
	if (ret < 0) {
		res.err = ret;
		free(ts);
		return res;
	}
	if (ready >= 0) {
		ret = kvpool_stats(kp, &st);
		res.tenant_id = ret ? 0 : st.out_tenant_id;
		res.err = ret;
		if (!write_full(ready, &res, sizeof(res)) || ret < 0)
			goto fail;
	}
	if (read(go, &c, 1) != 1) {
		ret = -EPIPE;
		goto fail;
	}
	t_end = kb_ns() + (u64)(secs * 1e9);
	for (;;) {
		if (k == PROCS_SEG) {
			ret = n ? kvpool_release(kp, h, PROCS_B, NULL) : 0;
			if (ret >= 0)
				ret = kvpool_alloc_rows(kp, h, PROCS_B, NULL);
			if (ret < 0)
				goto fail;
			for (i = 0; i < PROCS_B; i++) {
				lens[i] = DECODE_START;
				e[i].handle = h[i];
				e[i].new_len = DECODE_START;
				l[i].handle = h[i];
				l[i].len = DECODE_START;
			}
			ret = kvpool_extend(kp, e, PROCS_B, pages,
					    ARRAY_SIZE(pages), NULL);
			if (ret >= 0)
				ret = kvpool_commit(kp, l, PROCS_B, NULL);
			if (ret < 0)
				goto fail;
			k = 0;
		}
		t0 = kb_ns();
		if (t0 >= t_end || n == cap)
			break;
		for (i = 0; i < PROCS_B; i++)
			e[i].new_len = lens[i] + 1;
		ret = kvpool_extend(kp, e, PROCS_B, pages, ARRAY_SIZE(pages),
				    NULL);
		for (i = 0; i < PROCS_B; i++)
			l[i].len = ++lens[i];
		if (ret >= 0)
			ret = kvpool_commit(kp, l, PROCS_B, NULL);
		if (ret < 0)
			goto fail;
		ts[n++] = kb_ns() - t0;
		k++;
	}
	kb_lat_of(ts, n, &res.op[0]);
	res.err = 0;
	kvpool_close(kp);
	free(ts);
	return res;
fail:
	res.err = ret < 0 ? ret : -EIO;
	kvpool_close(kp);
	free(ts);
	return res;
}

/* @n processes on one pool (@shared) or one pool each; steps a second. */
static double procs_run(u32 n, bool shared)
{
	struct kvpool_pool_params pp = {
		.page_tokens = PROCS_PT,
		.row_tokens = DECODE_START + PROCS_SEG,
	};
	unsigned int ids[PROCS_MAX];
	int fds[PROCS_MAX][2], go[2];
	pid_t pid[PROCS_MAX];
	struct kb_proc_res res[PROCS_MAX];
	u32 npools = shared ? 1 : n, per = shared ? n : 1, i;
	u64 total = 0;
	char p[96];
	int ret;

	pp.nr_rows = per * PROCS_B + 4;
	pp.nr_pages = per * PROCS_B * div_up(pp.row_tokens, PROCS_PT) + 64;
	for (i = 0; i < npools; i++) {
		ret = kvpool_pool_create(&pp, &ids[i]);
		if (ret < 0)
			kb_die("procs: creating a pool: %s", strerror(-ret));
	}
	if (pipe(go))
		kb_die("pipe: %s", strerror(errno));
	fflush(stdout);
	for (i = 0; i < n; i++) {
		if (pipe(fds[i]))
			kb_die("pipe: %s", strerror(errno));
		pid[i] = fork();
		if (pid[i] < 0)
			kb_die("fork: %s", strerror(errno));
		if (!pid[i]) {
			struct kb_proc_res r;

			close(go[1]);
			r = kb_decode_child(ids[shared ? 0 : i], kb_opt.procs_s,
					    KB_SAME_UID, -1, go[0]);
			_exit(write_full(fds[i][1], &r, sizeof(r)) ? 0 : 1);
		}
		close(fds[i][1]);
	}
	close(go[0]);
	/* All at once: every child waits for its byte. */
	for (i = 0; i < n; i++)
		if (write(go[1], "g", 1) != 1)
			kb_die("procs: starting the children: %s",
			       strerror(errno));
	close(go[1]);
	for (i = 0; i < n; i++) {
		int st;

		if (!read_full(fds[i][0], &res[i], sizeof(res[i])))
			res[i].err = -EPIPE;
		close(fds[i][0]);
		waitpid(pid[i], &st, 0);
	}
	for (i = 0; i < npools; i++) {
		ret = kvpool_pool_destroy(ids[i]);
		if (ret < 0)
			kb_die("procs: destroying pool %u: %s", ids[i],
			       strerror(-ret));
	}
	for (i = 0; i < n; i++) {
		if (res[i].err)
			kb_die("procs: process %u: %s", i,
			       strerror(-res[i].err));
		snprintf(p, sizeof(p), "procs=%u pools=%s proc=%u", n,
			 shared ? "shared" : "separate", i);
		kb_record_p99("procs", p, "kernel", "us/step",
			      res[i].op[0].median, res[i].op[0].min,
			      res[i].op[0].max, res[i].op[0].p99,
			      (u32)res[i].op[0].n);
		kb_record_p99("procs", p, "kernel", "us/step-mean",
			      res[i].op[0].mean, res[i].op[0].mean,
			      res[i].op[0].mean, NAN, (u32)res[i].op[0].n);
		total += res[i].op[0].n;
	}
	snprintf(p, sizeof(p), "procs=%u pools=%s", n,
		 shared ? "shared" : "separate");
	kb_record_p99("procs", p, "kernel", "steps/s", total / kb_opt.procs_s,
		      total / kb_opt.procs_s, total / kb_opt.procs_s, NAN, n);
	return total / kb_opt.procs_s;
}

static void run_procs(void)
{
	static const u32 ns[] = { 1, 2, 4 };
	char p[32];
	u32 i;

	if (!kb_want("procs"))
		return;
	if (!kb_present[KB_KERNEL]) {
		kb_note("procs: skipped (kernel side absent)");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(ns); i++) {
		double sh = procs_run(ns[i], true);
		double sep = procs_run(ns[i], false);

		snprintf(p, sizeof(p), "procs=%u", ns[i]);
		kb_ratio("procs", p, "shared/separate steps/s", sh / sep);
	}
}

/* ---- mem: kernel memory per page and per row ----------------------- */

static double read_mem_bytes(unsigned int id)
{
	char path[64], buf[32];
	FILE *f;
	double v = NAN;

	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%u/mem_bytes",
		 id);
	f = fopen(path, "r");
	if (!f)
		return NAN;
	if (fgets(buf, sizeof(buf), f))
		v = strtod(buf, NULL);
	fclose(f);
	return v;
}

static void run_mem(void)
{
	const u32 rows = 64, len = 128;
	struct kb_geom g = { .nr_pages = kb_opt.quick ? 64U << 10 : 1U << 20,
			     .page_tokens = 1, .nr_rows = 256,
			     .row_tokens = 4096 };
	double m0, m1, v[1];
	struct kb_case c;
	char p[64];

	if (!kb_want("mem"))
		return;
	kb_note("mem: core: skipped (the shim counts allocations, not bytes)");
	if (!kb_present[KB_KERNEL]) {
		kb_note("mem: kernel: skipped (kernel side absent)");
		return;
	}
	memset(&c, 0, sizeof(c));
	kb_case_alloc(&c, rows, rows * len);
	if (kb_kernel_side.setup(&g))
		kb_die("kernel: no pool for mem");
	snprintf(p, sizeof(p), "pages=%u rows=%u", g.nr_pages, g.nr_rows);
	m0 = read_mem_bytes(kb_kernel_pool_id());
	if (isnan(m0)) {
		kb_note("mem: module has no mem_bytes");
		kb_record("mem", p, "kernel", "bytes/page", v, 0, 1, NULL, 0);
		kb_record("mem", p, "kernel", "bytes/row128", v, 0, 1, NULL,
			  0);
	} else {
		build_rows(&c, &kb_kernel_side, rows, len);
		m1 = read_mem_bytes(kb_kernel_pool_id());
		v[0] = m0;
		kb_record("mem", p, "kernel", "bytes/page", v, 1, g.nr_pages,
			  NULL, 0);
		v[0] = m1 - m0;
		kb_record("mem", p, "kernel", "bytes/row128", v, 1, rows,
			  NULL, 0);
	}
	kb_kernel_side.teardown();
	free(c.h);
	free(c.e);
	free(c.l);
	free(c.lens);
	free(c.pages);
}

void kb_workloads(void)
{
	run_decode();
	run_release_big();
	run_prefill();
	run_slot();
	run_extend1();
	run_scale();
	run_drift();
	run_procs();
	kb_isolation();
	run_mem();
}

/* ---- --count-only: fixed work on the core side, for callgrind ------ */

int kb_count_only(const char *workload, u32 iters)
{
	double ns[KB_MAX_FIGS];
	struct kb_case c;

	if (!iters) {
		fprintf(stderr, "kvpool-bench: --count-only needs --iters N\n");
		return EXIT_USAGE;
	}
	if (!strcmp(workload, "decode")) {
		decode_case(&c, 256, 1, DECODE_START, iters);
	} else if (!strcmp(workload, "release-256x128")) {
		release_big_case(&c);
	} else if (!strcmp(workload, "extend1")) {
		extend1_case(&c);
		c.seg = iters;
		c.geom.nr_pages = iters + 16;
		c.geom.row_tokens = iters;
	} else if (!strcmp(workload, "prefill")) {
		prefill_case(&c, 2048, 1);
	} else {
		fprintf(stderr,
			"kvpool-bench: --count-only: decode, release-256x128, extend1 or prefill\n");
		return EXIT_USAGE;
	}
	if (kb_core_side.setup(&c.geom))
		return EXIT_SETUP;
	c.round(&c, &kb_core_side, iters, ns);
	kb_core_side.teardown();
	return 0;
}
