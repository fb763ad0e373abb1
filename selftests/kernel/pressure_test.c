// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: pressure (KVPOOL_FEAT_PRESSURE).
 *
 * Nothing is ever taken from a client: it is asked (KVPOOL_PRESSURE, poll()
 * EPOLLPRI) to evict unpinned prefix-cache pages, in proportion to them
 * and never more than it has, when free pages fall below the low watermark
 * (its share of high - free), when its tenant is over max_pages (its share
 * of the excess within the tenant), or when another tenant was refused
 * below its guarantee and its own tenant is above its own (its share of
 * the refused one's unmet guarantee among the tenants above theirs); the
 * largest applies (docs/design.md, "Pressure"). The numbers below are those
 * shares, computed by hand: ceil(need * mine / all).
 *
 * The askees are agents (kvptest_agent.h): processes of other uids,
 * so other tenants. A poll() runs in an agent while the test acts: it must
 * stay blocked while nothing is asked and come back promptly with POLLPRI
 * when another process's op crosses the low watermark, when limits or
 * watermarks change, when an allocation is refused, or when another client
 * of its tenant grows the tenant past its guarantee (extend or import)
 * while another tenant waits below its own: whenever its ask may have
 * risen.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenv.h"

#include <pthread.h>
#include <sys/epoll.h>

#define NR_PAGES	1024
#define NR_ROWS		64
#define ROW_TOKENS	1024
#define LOW		32	/* the defaults: nr_pages / 32 */
#define HIGH		64	/* and nr_pages / 16 */

#define UID_1		1001
#define UID_2		1002
#define UID_3		1003

/*
 * No assertion here is on how fast anything is: a loaded machine (TCG,
 * KASAN, a CI run beside it) can stall a process for seconds.
 *
 * A poll() that is still asleep after BLOCKED_MS has not returned for
 * nothing; a loaded machine can only make that check pass more easily.
 */
#define BLOCKED_MS	300
/*
 * A poll() that must be woken sleeps with this timeout: it returning 0
 * (timed out) rather than POLLPRI is the lost wake-up, however long the
 * wake-up took to come. Shorter than the harness's 30 s a test.
 */
#define LONG_POLL_MS	10000
/*
 * How long past a poll()'s own timeout the test waits for its agent to
 * answer: a guard against a hung agent, not a bound on the wake-up.
 */
#define REPLY_MS	10000

FIXTURE(pressure) {
	struct kt_tenv e;
};

FIXTURE_SETUP(pressure)
{
	/* page_tokens 1: pages and tokens are the same numbers. */
	kt_tenv_init(_metadata, &self->e, 0, NR_PAGES, 1, NR_ROWS,
		     ROW_TOKENS, 0);
}

FIXTURE_TEARDOWN(pressure)
{
	kt_tenv_fini(_metadata, &self->e);
}

/* Take @n pages with a new row of the test's own client; the handle. */
static struct kvpool_handle hog(struct __test_metadata *_metadata,
				struct kt_tenv *e, __u32 n)
{
	struct kvpool_handle h = { 0, 0 };

	EXPECT_EQ(0, kt_row_alloc(e->fd, 1, &h, NULL));
	EXPECT_EQ(0, kt_grow(e->fd, h, n));
	return h;
}

static int tenant_ask(struct kt_tenv *e, __u32 tid, __u32 *ask)
{
	struct kvpool_tenant_info ti;
	int ret = kt_tenant_get(e->pool.ctl, e->pool.id, tid, &ti);

	*ask = ti.ask_pages;
	return ret;
}

static __u32 ag_tid(struct kt_agent *a, int slot)
{
	struct kvpool_stats s;

	return ag_stats(a, slot, &s) ? KT_BAD_IDX : s.out_tenant_id;
}

/* KVPOOL_PRESSURE of an agent's client must be exactly (ask, reasons). */
#define EXPECT_ASK(a, slot, ask, why) do {				\
	struct kvpool_pressure __p;					\
	EXPECT_EQ(0, ag_pressure((a), (slot), &__p));			\
	EXPECT_EQ((ask), __p.out_ask_pages) TH_LOG("ask of %s", #a);	\
	EXPECT_EQ((why), __p.out_reasons) TH_LOG("reasons of %s", #a); \
} while (0)

/* poll() with timeout 0 in an agent: 1 and POLLPRI when @asked, else 0. */
#define EXPECT_POLL0(a, slot, asked) do {				\
	int __r = -1, __ev = -1;					\
	EXPECT_EQ(0, ag_poll((a), (slot), 0, &__r, &__ev));		\
	EXPECT_EQ((asked) ? 1 : 0, __r) TH_LOG("poll of %s", #a);	\
	if (asked)							\
		EXPECT_EQ(POLLPRI, __ev);				\
} while (0)

/* Start a long poll() in an agent and check that it blocks. */
#define START_BLOCKED_POLL(a, slot) do {				\
	int __r, __ev;							\
	ASSERT_EQ(0, ag_poll_start((a), (slot), LONG_POLL_MS));	\
	ASSERT_EQ(ETIMEDOUT, ag_poll_wait((a), BLOCKED_MS, &__r, &__ev, \
					  NULL))			\
		TH_LOG("%s's poll() returned %d (events %#x) with nothing asked", \
		       #a, __r, __ev);					\
} while (0)

/* ... and that it comes back with POLLPRI, not at its timeout. */
#define EXPECT_WOKEN(a) do {						\
	int __r = -1, __ev = -1;					\
	long __spent = -1;						\
	EXPECT_EQ(0, ag_poll_wait((a), LONG_POLL_MS + REPLY_MS, &__r,	\
				  &__ev, &__spent))			\
		TH_LOG("%s's poll() never came back", #a);		\
	EXPECT_EQ(1, __r)						\
		TH_LOG("%s's poll() returned %d after %ld ms: not woken", \
		       #a, __r, __spent);				\
	EXPECT_EQ(POLLPRI, __ev);					\
} while (0)

/* New pools start at nr_pages / 32 and nr_pages / 16. */
TEST_F(pressure, wmark_defaults)
{
	struct kt_tenv *e = &self->e;
	static const __u32 sizes[] = { 100, 31, 32, 65536 };
	struct kvpool_pressure p;
	unsigned int i;

	EXPECT_EQ(LOW, kt_sysfs_val(e->pool.id, "low_wmark"));
	EXPECT_EQ(HIGH, kt_sysfs_val(e->pool.id, "high_wmark"));
	ASSERT_EQ(0, kt_pressure(e->fd, &p));
	EXPECT_EQ(0, p.out_ask_pages);
	EXPECT_EQ(0, p.out_reasons);
	EXPECT_EQ(NR_PAGES, p.out_free_pages);
	EXPECT_EQ(LOW, p.out_low_wmark);
	EXPECT_EQ(HIGH, p.out_high_wmark);
	EXPECT_EQ(0, p.__reserved);

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		__u32 id;
		int fd;

		ASSERT_EQ(0, kt_create(e->pool.ctl, 0, sizes[i], 1, 4, 16, &id));
		EXPECT_EQ(sizes[i] / 32, kt_sysfs_val(id, "low_wmark"));
		EXPECT_EQ(sizes[i] / 16, kt_sysfs_val(id, "high_wmark"));
		fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
		EXPECT_LE(0, fd);
		if (fd >= 0) {
			EXPECT_EQ(0, kt_pressure(fd, &p));
			EXPECT_EQ(sizes[i] / 32, p.out_low_wmark);
			EXPECT_EQ(sizes[i] / 16, p.out_high_wmark);
			EXPECT_EQ(sizes[i], p.out_free_pages);
			close(fd);
		}
		EXPECT_EQ(0, kt_destroy(e->pool.ctl, id));
	}
}

/* CTL_SET_WMARK: each bad argument with its errno, nothing changed. */
TEST_F(pressure, wmark_validation)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_ctl_wmark w, ok;
	struct kvpool_pressure p;
	unsigned char big[KT_PAGE_SIZE + 8];
	int i;

	memset(&ok, 0, sizeof(ok));
	ok.size = sizeof(ok);
	ok.pool_id = e->pool.id;
	ok.low_wmark = 10;
	ok.high_wmark = 20;
	for (i = 0; i < 9; i++) {
		const char *what = "";
		int want = EINVAL;

		w = ok;
		switch (i) {
		case 0:
			w.flags = 1;
			want = EOPNOTSUPP;
			what = "flags";
			break;
		case 1:
			w.flags = 0x80000000u;
			want = EOPNOTSUPP;
			what = "flag 31";
			break;
		case 2:
			w.__reserved = 1;
			what = "__reserved";
			break;
		case 3:
			w.low_wmark = 21;
			what = "high < low";
			break;
		case 4:
			w.high_wmark = NR_PAGES + 1;
			what = "high > nr_pages";
			break;
		case 5:
			w.low_wmark = w.high_wmark = 0xffffffffu;
			what = "~0";
			break;
		case 6:
			w.pool_id = 64;
			want = ENODEV;
			what = "pool 64";
			break;
		case 7:
			w.pool_id = 0xffffffffu;
			want = ENODEV;
			what = "pool ~0";
			break;
		case 8:
			w.size = offsetof(struct kvpool_ctl_wmark, __reserved);
			what = "short";
			break;
		}
		EXPECT_EQ(want, kt_ioctl(e->pool.ctl, KVPOOL_CTL_SET_WMARK, &w))
			TH_LOG("%s", what);
		EXPECT_EQ(LOW, kt_sysfs_val(e->pool.id, "low_wmark"))
			TH_LOG("%s", what);
		EXPECT_EQ(HIGH, kt_sysfs_val(e->pool.id, "high_wmark"))
			TH_LOG("%s", what);
	}
	memset(big, 0, sizeof(big));
	memcpy(big, &ok, sizeof(ok));
	((struct kvpool_ctl_wmark *)big)->size = sizeof(ok) + 8;
	big[sizeof(ok) + 1] = 1;
	EXPECT_EQ(E2BIG, kt_ioctl(e->pool.ctl, KVPOOL_CTL_SET_WMARK, big));
	((struct kvpool_ctl_wmark *)big)->size = KT_PAGE_SIZE + 1;
	EXPECT_EQ(E2BIG, kt_ioctl(e->pool.ctl, KVPOOL_CTL_SET_WMARK, big));
	EXPECT_EQ(LOW, kt_sysfs_val(e->pool.id, "low_wmark"));

	/* The edges that are fine, and their effect. */
	EXPECT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 0, 0));
	EXPECT_EQ(0, kt_sysfs_val(e->pool.id, "low_wmark"));
	EXPECT_EQ(0, kt_sysfs_val(e->pool.id, "high_wmark"));
	EXPECT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, NR_PAGES, NR_PAGES));
	EXPECT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 7, 7));
	EXPECT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 5, NR_PAGES));
	EXPECT_EQ(5, kt_sysfs_val(e->pool.id, "low_wmark"));
	EXPECT_EQ(NR_PAGES, kt_sysfs_val(e->pool.id, "high_wmark"));
	ASSERT_EQ(0, kt_pressure(e->fd, &p));
	EXPECT_EQ(5, p.out_low_wmark);
	EXPECT_EQ(NR_PAGES, p.out_high_wmark);
	/* a larger size with a zero tail */
	big[sizeof(ok) + 1] = 0;
	((struct kvpool_ctl_wmark *)big)->size = sizeof(ok) + 8;
	EXPECT_EQ(0, kt_ioctl(e->pool.ctl, KVPOOL_CTL_SET_WMARK, big));
	EXPECT_EQ(10, kt_sysfs_val(e->pool.id, "low_wmark"));
	EXPECT_EQ(20, kt_sysfs_val(e->pool.id, "high_wmark"));
}

/* KVPOOL_PRESSURE's own checks; out fields are outputs only. */
TEST_F(pressure, pressure_validation)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_pressure p;

	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(e->fd, KVPOOL_PRESSURE, &p));
	p.flags = 0;
	p.__reserved = 1;
	EXPECT_EQ(EINVAL, kt_ioctl(e->fd, KVPOOL_PRESSURE, &p));
	p.__reserved = 0;
	p.size = offsetof(struct kvpool_pressure, __reserved);
	EXPECT_EQ(EINVAL, kt_ioctl(e->fd, KVPOOL_PRESSURE, &p));
	memset(&p, 0xff, sizeof(p));
	p.size = sizeof(p);
	p.flags = 0;
	p.__reserved = 0;
	EXPECT_EQ(0, kt_ioctl(e->fd, KVPOOL_PRESSURE, &p));
	EXPECT_EQ(0, p.out_ask_pages);
	EXPECT_EQ(0, p.out_reasons);
	EXPECT_EQ(NR_PAGES, p.out_free_pages);
}

/*
 * Below the low watermark each client with unpinned cache pages is asked
 * its share of (high - free); never more than it has, pinned pages not
 * counted; evicting the ask clears it; low 0 never asks.
 */
TEST_F(pressure, low_wmark_shares)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *c1, *c2;
	struct kvpool_pressure p;
	struct kvpool_handle h;
	__u32 ids1[40], ids2[24], ask;

	c1 = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	c2 = kt_tenv_client(_metadata, e, 1, -1, UID_2);
	ASSERT_EQ(0, ag_make_cache(c1, 0, 1, 40, ids1));
	ASSERT_EQ(0, ag_make_cache(c2, 0, 1, 24, ids2));
	EXPECT_ASK(c1, 0, 0, 0);
	EXPECT_ASK(c2, 0, 0, 0);

	hog(_metadata, e, NR_PAGES - 64 - 20);	/* 20 free */
	/* 64 - 20 = 44 wanted: 44 * 40 / 64 and 44 * 24 / 64, rounded up. */
	EXPECT_ASK(c1, 0, 28, KVPOOL_PRESSURE_LOW);
	EXPECT_ASK(c2, 0, 17, KVPOOL_PRESSURE_LOW);
	ASSERT_EQ(0, ag_pressure(c1, 0, &p));
	EXPECT_EQ(20, p.out_free_pages);
	EXPECT_EQ(LOW, p.out_low_wmark);
	EXPECT_EQ(HIGH, p.out_high_wmark);
	/* No cache, nothing to ask. */
	ASSERT_EQ(0, kt_pressure(e->fd, &p));
	EXPECT_EQ(0, p.out_ask_pages);
	EXPECT_EQ(0, p.out_reasons);
	ASSERT_EQ(0, tenant_ask(e, ag_tid(c1, 0), &ask));
	EXPECT_EQ(28, ask);
	ASSERT_EQ(0, tenant_ask(e, ag_tid(c2, 0), &ask));
	EXPECT_EQ(17, ask);
	EXPECT_POLL0(c1, 0, true);
	EXPECT_POLL0(c2, 0, true);
	{
		struct pollfd pfd = { .fd = e->fd, .events = POLLPRI };

		EXPECT_EQ(0, poll(&pfd, 1, 0));
	}

	/* c1 gives its 28: 48 free, above low: nobody is asked. */
	ASSERT_EQ(0, ag_evict(c1, 0, ids1, 28, NULL));
	EXPECT_ASK(c1, 0, 0, 0);
	EXPECT_ASK(c2, 0, 0, 0);
	EXPECT_POLL0(c1, 0, false);
	EXPECT_POLL0(c2, 0, false);

	/* Wanting far more than there is: each is asked all it has. */
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 100, NR_PAGES));
	EXPECT_ASK(c1, 0, 12, KVPOOL_PRESSURE_LOW);
	EXPECT_ASK(c2, 0, 24, KVPOOL_PRESSURE_LOW);
	/* Pinned pages are not asked for: c2 has 14 unpinned of 24. */
	ASSERT_EQ(0, ag_alloc1(c2, 0, &h));
	ASSERT_EQ(0, ag_attach(c2, 0, h, ids2, 10));
	EXPECT_ASK(c1, 0, 12, KVPOOL_PRESSURE_LOW);
	EXPECT_ASK(c2, 0, 14, KVPOOL_PRESSURE_LOW);
	/* 976 * 14 / 26 > 14 and 976 * 12 / 26 > 12 */
	EXPECT_EQ(EBUSY, ag_evict(c2, 0, ids2, 1, NULL));

	/* low 0: never. */
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 0, 0));
	EXPECT_ASK(c1, 0, 0, 0);
	EXPECT_ASK(c2, 0, 0, 0);
	EXPECT_POLL0(c2, 0, false);
	/* high == low, 1 above the 48 free: 1 wanted, rounded up for each. */
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 49, 49));
	EXPECT_ASK(c1, 0, 1, KVPOOL_PRESSURE_LOW);	/* ceil(1*12/26) */
	EXPECT_ASK(c2, 0, 1, KVPOOL_PRESSURE_LOW);	/* ceil(1*14/26) */
}

/*
 * poll() blocks while nothing is asked (its timeout runs out, no event)
 * and wakes promptly with POLLPRI when another process's extend takes the
 * pool below the low watermark; a client without cache pages sleeps on.
 * Evicting the ask clears it.
 */
TEST_F(pressure, poll_wakes_on_low_crossing)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *c1, *z;
	__u32 ids[40];
	long spent = 0;
	int r = -1, ev = -1;

	c1 = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	z = kt_tenv_client(_metadata, e, 1, -1, UID_2);
	ASSERT_EQ(0, ag_make_cache(c1, 0, 1, 40, ids));

	/* Nothing asked: the timeout runs out. */
	ASSERT_EQ(0, ag_poll_start(c1, 0, 400));
	ASSERT_EQ(0, ag_poll_wait(c1, 400 + REPLY_MS, &r, &ev, &spent));
	EXPECT_EQ(0, r) TH_LOG("events %#x after %ld ms", ev, spent);

	START_BLOCKED_POLL(c1, 0);
	ASSERT_EQ(0, ag_poll_start(z, 0, 1500));
	hog(_metadata, e, NR_PAGES - 40 - 20);	/* 20 free: crossed */
	EXPECT_WOKEN(c1);
	/* z has nothing to give: it sleeps until its timeout. */
	ASSERT_EQ(0, ag_poll_wait(z, 1500 + REPLY_MS, &r, &ev, &spent));
	EXPECT_EQ(0, r) TH_LOG("events %#x after %ld ms", ev, spent);

	/* Asked for all 40 (44 wanted); giving them clears it. */
	EXPECT_ASK(c1, 0, 40, KVPOOL_PRESSURE_LOW);
	ASSERT_EQ(0, ag_evict(c1, 0, ids, 40, NULL));
	EXPECT_ASK(c1, 0, 0, 0);
	EXPECT_POLL0(c1, 0, false);
}

/* A poller wakes when the administrator moves the watermarks. */
TEST_F(pressure, poll_wakes_on_wmark_change)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *c1;

	c1 = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	ASSERT_EQ(0, ag_make_cache(c1, 0, 1, 40, NULL));
	START_BLOCKED_POLL(c1, 0);
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 1000, 1010));
	EXPECT_WOKEN(c1);
	/* 984 free: 26 wanted, all of it c1's to give. */
	EXPECT_ASK(c1, 0, 26, KVPOOL_PRESSURE_LOW);
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, LOW, HIGH));
	EXPECT_ASK(c1, 0, 0, 0);
	EXPECT_POLL0(c1, 0, false);
}

/*
 * OVER_MAX: lowering a tenant's max_pages below use wakes its clients'
 * pollers; each is asked its share of the excess within the tenant; other
 * tenants are not asked; evicting the shares clears it.
 */
TEST_F(pressure, over_max)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *t1, *t2, *u;
	struct kvpool_handle h;
	__u32 ids1[40], ids2[20], ask, sh = 0, tid;

	t1 = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	t2 = kt_tenv_client(_metadata, e, 1, -1, UID_1);	/* same tenant */
	u = kt_tenv_client(_metadata, e, 2, -1, UID_2);
	tid = ag_tid(t1, 0);
	ASSERT_EQ(tid, ag_tid(t2, 0));
	ASSERT_EQ(0, ag_alloc1(t1, 0, &h));
	ASSERT_EQ(0, ag_grow(t1, 0, h, 100));
	ASSERT_EQ(0, ag_make_cache(t1, 0, 1, 40, ids1));
	ASSERT_EQ(0, ag_make_cache(t2, 0, 1, 20, ids2));
	ASSERT_EQ(0, ag_make_cache(u, 0, 1, 30, NULL));

	START_BLOCKED_POLL(t1, 0);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 130, 0, 0, NULL));
	EXPECT_WOKEN(t1);
	/* 160 held, 30 over: 30 * 40 / 60 and 30 * 20 / 60. */
	EXPECT_ASK(t1, 0, 20, KVPOOL_PRESSURE_OVER_MAX);
	EXPECT_ASK(t2, 0, 10, KVPOOL_PRESSURE_OVER_MAX);
	EXPECT_ASK(u, 0, 0, 0);
	EXPECT_POLL0(u, 0, false);
	ASSERT_EQ(0, tenant_ask(e, tid, &ask));
	EXPECT_EQ(30, ask);
	EXPECT_EQ(EDQUOT, ag_extend1(t1, 0, h, 101, &sh, NULL, NULL, 0));
	EXPECT_EQ(31, sh);

	/* t1 gives its share only: t2 still owes its own. */
	ASSERT_EQ(0, ag_evict(t1, 0, ids1, 20, NULL));
	EXPECT_ASK(t1, 0, 5, KVPOOL_PRESSURE_OVER_MAX);	/* 10 * 20 / 40 */
	EXPECT_ASK(t2, 0, 5, KVPOOL_PRESSURE_OVER_MAX);	/* 10 * 20 / 40 */
	ASSERT_EQ(0, ag_evict(t2, 0, ids2, 10, NULL));
	EXPECT_ASK(t1, 0, 0, 0);
	EXPECT_ASK(t2, 0, 0, 0);
	EXPECT_POLL0(t1, 0, false);
	ASSERT_EQ(0, tenant_ask(e, tid, &ask));
	EXPECT_EQ(0, ask);
}

/*
 * GUARANTEE: a tenant refused (ENOSPC) below its min wakes the others'
 * pollers; every other tenant above its own min is asked its share of the
 * refused one's unmet guarantee; a tenant at or below its min is not; it
 * ends when the guarantee is met.
 */
TEST_F(pressure, guarantee)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *g, *h1, *h2, *k;
	struct kvpool_handle hg;
	__u32 ids[100], ask, sh = 0;

	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 0, 100, 0, NULL));
	g = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	h1 = kt_tenv_client(_metadata, e, 1, -1, UID_2);
	h2 = kt_tenv_client(_metadata, e, 2, -1, UID_2);
	k = kt_tenv_client(_metadata, e, 3, -1, UID_3);
	ASSERT_EQ(0, ag_make_cache(h1, 0, 1, 100, ids));
	ASSERT_EQ(0, ag_make_cache(h2, 0, 1, 50, NULL));
	ASSERT_EQ(0, ag_make_cache(k, 0, 1, 50, NULL));
	hog(_metadata, e, 704);		/* 120 free */
	EXPECT_ASK(h1, 0, 0, 0);

	START_BLOCKED_POLL(h1, 0);
	ASSERT_EQ(0, ag_alloc1(g, 0, &hg));
	EXPECT_EQ(ENOSPC, ag_extend1(g, 0, hg, 150, &sh, NULL, NULL, 0));
	EXPECT_EQ(30, sh);
	EXPECT_WOKEN(h1);
	/* 100 unmet, 200 evictable above their mins: 100/200 each. */
	EXPECT_ASK(h1, 0, 50, KVPOOL_PRESSURE_GUARANTEE);
	EXPECT_ASK(h2, 0, 25, KVPOOL_PRESSURE_GUARANTEE);
	EXPECT_ASK(k, 0, 25, KVPOOL_PRESSURE_GUARANTEE);
	EXPECT_ASK(g, 0, 0, 0);
	ASSERT_EQ(0, tenant_ask(e, ag_tid(h1, 0), &ask));
	EXPECT_EQ(75, ask);
	ASSERT_EQ(0, tenant_ask(e, ag_tid(k, 0), &ask));
	EXPECT_EQ(25, ask);
	ASSERT_EQ(0, tenant_ask(e, ag_tid(g, 0), &ask));
	EXPECT_EQ(0, ask);

	/* K below its own min (50 of 60) is not asked; H shares it all. */
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_3, 0, 60, 0, NULL));
	EXPECT_ASK(k, 0, 0, 0);
	EXPECT_ASK(h1, 0, 67, KVPOOL_PRESSURE_GUARANTEE);
	EXPECT_ASK(h2, 0, 34, KVPOOL_PRESSURE_GUARANTEE);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_3, 0, 0, 0, NULL));

	/* Evicting does not meet G's guarantee: still asked, less. */
	ASSERT_EQ(0, ag_evict(h1, 0, ids, 50, NULL));
	EXPECT_ASK(h1, 0, 34, KVPOOL_PRESSURE_GUARANTEE);	/* 100*50/150 */
	/* G takes its 100 (170 free): met, nobody is asked. */
	EXPECT_EQ(0, ag_grow(g, 0, hg, 100));
	EXPECT_ASK(h1, 0, 0, 0);
	EXPECT_ASK(h2, 0, 0, 0);
	EXPECT_ASK(k, 0, 0, 0);
	EXPECT_POLL0(h1, 0, false);
}

/* The administrator lowering the refused tenant's min ends it too. */
TEST_F(pressure, guarantee_withdrawn)
{
	struct kt_tenv *e = &self->e;
	struct kt_agent *g, *h;
	struct kvpool_handle hg;
	__u32 sh = 0;

	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 0, 100, 0, NULL));
	g = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	h = kt_tenv_client(_metadata, e, 1, -1, UID_2);
	ASSERT_EQ(0, ag_make_cache(h, 0, 1, 40, NULL));
	hog(_metadata, e, NR_PAGES - 40 - 100 - 50);	/* 150 free */
	ASSERT_EQ(0, ag_alloc1(g, 0, &hg));
	EXPECT_EQ(ENOSPC, ag_extend1(g, 0, hg, 151, &sh, NULL, NULL, 0));
	EXPECT_EQ(1, sh);
	EXPECT_ASK(h, 0, 40, KVPOOL_PRESSURE_GUARANTEE);	/* 100 of 40 */
	EXPECT_POLL0(h, 0, true);
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 0, 0, 0, NULL));
	EXPECT_ASK(h, 0, 0, 0);
	EXPECT_POLL0(h, 0, false);
}

/*
 * GUARANTEE follows a refusal for want of pages (ENOSPC). A tenant refused
 * by its own quota (EDQUOT on max_rows or max_pages) is not helped by
 * others evicting: nobody is asked.
 */
TEST_F(pressure, guarantee_not_on_edquot)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle hg[2];
	struct kt_agent *g, *h;
	__u32 sh = 0;

	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 50, 50, 1, NULL));
	g = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	h = kt_tenv_client(_metadata, e, 1, -1, UID_2);
	ASSERT_EQ(0, ag_make_cache(h, 0, 1, 40, NULL));
	ASSERT_EQ(0, ag_alloc1(g, 0, &hg[0]));
	EXPECT_EQ(EDQUOT, ag_alloc(g, 0, 1, &hg[1], &sh));
	EXPECT_EQ(1, sh);
	EXPECT_ASK(h, 0, 0, 0);
	EXPECT_EQ(EDQUOT, ag_extend1(g, 0, hg[0], 60, &sh, NULL, NULL, 0));
	EXPECT_EQ(10, sh);
	EXPECT_ASK(h, 0, 0, 0);
	EXPECT_POLL0(h, 0, false);
}

/* Several reasons: all are reported, the largest ask applies. */
TEST_F(pressure, reasons_combined)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_handle h;
	struct kt_agent *t;
	__u32 ids[40];

	t = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	ASSERT_EQ(0, ag_alloc1(t, 0, &h));
	ASSERT_EQ(0, ag_grow(t, 0, h, 100));
	ASSERT_EQ(0, ag_make_cache(t, 0, 1, 40, ids));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 130, 0, 0, NULL));
	EXPECT_ASK(t, 0, 10, KVPOOL_PRESSURE_OVER_MAX);
	hog(_metadata, e, NR_PAGES - 140 - 50);		/* 50 free */
	EXPECT_ASK(t, 0, 10, KVPOOL_PRESSURE_OVER_MAX);
	hog(_metadata, e, 30);				/* 20 free */
	/* LOW wants 44 (capped at 40), OVER_MAX 10. */
	EXPECT_ASK(t, 0, 40, KVPOOL_PRESSURE_LOW | KVPOOL_PRESSURE_OVER_MAX);
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 21, 25));
	/* LOW wants 5, OVER_MAX 10. */
	EXPECT_ASK(t, 0, 10, KVPOOL_PRESSURE_LOW | KVPOOL_PRESSURE_OVER_MAX);
	ASSERT_EQ(0, ag_evict(t, 0, ids, 10, NULL));
	EXPECT_ASK(t, 0, 0, 0);
}

/*
 * The same from a thread of the polling process, with epoll: another
 * process's extend crossing the low watermark wakes epoll_wait().
 */
struct epoll_arg {
	int fd;
	int ret;
	__u32 events;
	long long spent;
	int started;	/* __atomic */
};

static void *epoll_thread(void *p)
{
	struct epoll_arg *a = p;
	struct epoll_event ev = { .events = EPOLLPRI };
	long long t0;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, a->fd, &ev)) {
		a->ret = -2;
		__atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	memset(&ev, 0, sizeof(ev));
	t0 = kt_now_ms();
	__atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
	a->ret = epoll_wait(ep, &ev, 1, LONG_POLL_MS);
	a->events = ev.events;
	a->spent = kt_now_ms() - t0;
	close(ep);
	return NULL;
}

TEST_F(pressure, epoll_thread_wakes_on_low_crossing)
{
	struct kt_tenv *e = &self->e;
	struct epoll_arg arg = { .ret = -1 };
	struct kvpool_handle h, hh;
	struct kt_agent *z;
	pthread_t th;
	int c;

	z = kt_tenv_client(_metadata, e, 0, -1, UID_2);
	c = kt_pool_open(_metadata, &e->pool);
	ASSERT_EQ(0, kt_row_alloc(c, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(c, h, 40));
	ASSERT_EQ(0, kt_commit1(c, h, 40));
	ASSERT_EQ(0, kt_release_donate1(c, h, NULL));
	arg.fd = c;
	ASSERT_EQ(0, pthread_create(&th, NULL, epoll_thread, &arg));
	while (!__atomic_load_n(&arg.started, __ATOMIC_ACQUIRE))
		kt_sleep_ms(1);
	kt_sleep_ms(BLOCKED_MS);
	EXPECT_EQ(-1, arg.ret) TH_LOG("epoll_wait returned with nothing asked");
	ASSERT_EQ(0, ag_alloc1(z, 0, &hh));
	ASSERT_EQ(0, ag_grow(z, 0, hh, NR_PAGES - 40 - 20));	/* 20 free */
	ASSERT_EQ(0, pthread_join(th, NULL));
	/* 0 would be the timeout: the crossing woke nobody. */
	EXPECT_EQ(1, arg.ret) TH_LOG("epoll_wait: %d after %lld ms",
				     arg.ret, arg.spent);
	EXPECT_EQ(EPOLLPRI, arg.events);
}

/*
 * A client's own evictable cache pages appearing while the pool is below
 * the low watermark (RELEASE with DONATE) make its ask non-zero: a poller
 * on that client (another process holding the same file, or another
 * thread) must see EPOLLPRI then, not at its timeout.
 */
TEST_F(pressure, poll_wakes_when_own_cache_appears)
{
	struct kt_tenv *e = &self->e;
	struct kvpool_pressure p;
	struct kvpool_handle h;
	struct kt_agent *pa;
	int c, slot;

	c = kt_pool_open(_metadata, &e->pool);
	hog(_metadata, e, NR_PAGES - 20);	/* 20 free: below low */
	pa = kt_tenv_agent(_metadata, e, 0, -1, UID_2);
	ASSERT_EQ(0, ag_take_fd(pa, c, &slot));	/* the same client */
	ASSERT_EQ(0, kt_pressure(c, &p));
	EXPECT_EQ(0, p.out_ask_pages);
	START_BLOCKED_POLL(pa, slot);
	ASSERT_EQ(0, kt_row_alloc(c, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(c, h, 10));	/* no crossing: below already */
	ASSERT_EQ(0, kt_commit1(c, h, 10));
	ASSERT_EQ(0, kt_release_donate1(c, h, NULL));
	ASSERT_EQ(0, kt_pressure(c, &p));
	EXPECT_EQ(10, p.out_ask_pages);
	EXPECT_EQ(KVPOOL_PRESSURE_LOW, p.out_reasons);
	EXPECT_WOKEN(pa);
}

/*
 * The lost wake-up. A tenant's ask also rises when one of its clients
 * grows it past its own guarantee while another tenant waits below its
 * guarantee (GUARANTEE: only tenants above their min are asked). That
 * growth is no watermark crossing, and the driver used to wake nobody for
 * it: a reproducer saw the ask at 10 pages while poll(-1) slept on for
 * 5 s. Here:
 *  - tenant A (uid 1001) is guaranteed 50 pages, tenant B (uid 1002) 100;
 *    the watermarks are 0, so LOW never asks;
 *  - a1, a client of A, holds 40 cache pages: A is below its min, so a1 is
 *    asked nothing, even once B is refused (ENOSPC) below its min;
 *  - a thread of the test sleeps in poll(POLLPRI) on a1's file (a copy
 *    from the agent: the same client);
 *  - a2, another client of A, takes 20 pages (@by_import: imports a row of
 *    20): A holds 60 > 50, so a1's ask is GUARANTEE's share of B's unmet
 *    100 among the tenants above their min: all of its 40.
 * The poll must come back with POLLPRI, not at its timeout. It runs with
 * LONG_POLL_MS (poll(-1) in the reproducer) so that a lost wake-up fails
 * the test, saying so, instead of hanging it; how soon the wake-up came
 * is logged, not checked.
 */

struct poll_arg {
	int fd;
	int ret, revents, err;
	long long spent;
	int done;	/* __atomic */
};

static void *poll_thread(void *p)
{
	struct poll_arg *a = p;
	struct pollfd pfd = { .fd = a->fd, .events = POLLPRI };
	long long t0 = kt_now_ms();

	a->ret = poll(&pfd, 1, LONG_POLL_MS);
	a->err = a->ret < 0 ? errno : 0;
	a->revents = pfd.revents;
	a->spent = kt_now_ms() - t0;
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Wait up to @ms for the thread to finish its poll(); true if it did. */
static bool poll_done_within(struct poll_arg *a, long ms)
{
	long long end = kt_now_ms() + ms;

	while (!__atomic_load_n(&a->done, __ATOMIC_ACQUIRE)) {
		if (kt_now_ms() >= end)
			return false;
		kt_sleep_ms(5);
	}
	return true;
}

static void lost_wakeup(struct __test_metadata *_metadata,
			struct kt_tenv *e, bool by_import)
{
	/* Static: an ASSERT must not leave the thread writing a dead frame. */
	static struct poll_arg arg;
	struct kvpool_handle hb, ha, hx;
	struct kt_agent *a1, *a2, *b;
	struct kvpool_pressure p;
	__u32 ids[40], sh = 0, nr = 0, ask, tid_a;
	pthread_t th;
	int xfd = -1;

	memset(&arg, 0, sizeof(arg));
	arg.fd = -1;
	arg.ret = -2;
	ASSERT_EQ(0, kt_set_wmark(e->pool.ctl, e->pool.id, 0, 0));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_1, 0, 50, 0, NULL));
	ASSERT_EQ(0, kt_tenant_limits(e->pool.ctl, e->pool.id, e->self_cgid,
				      UID_2, 0, 100, 0, NULL));
	a1 = kt_tenv_client(_metadata, e, 0, -1, UID_1);
	a2 = kt_tenv_client(_metadata, e, 1, -1, UID_1);
	b = kt_tenv_client(_metadata, e, 2, -1, UID_2);
	tid_a = ag_tid(a1, 0);
	ASSERT_EQ(tid_a, ag_tid(a2, 0));
	ASSERT_EQ(0, ag_make_cache(a1, 0, 1, 40, ids));	/* A: 40 < 50 */
	if (by_import) {
		hx = hog(_metadata, e, 20);
		ASSERT_EQ(0, kt_export_row(e->fd, hx, &xfd, &nr));
		ASSERT_EQ(20, nr);
	}
	/* Root (no guarantee) takes all but 150: A is owed 10, B 100. */
	hog(_metadata, e, NR_PAGES - 40 - (by_import ? 20 : 0) - 150);
	ASSERT_EQ(0, kt_pressure(e->fd, &p));
	ASSERT_EQ(150, p.out_free_pages);

	/* B is refused below its min: 150 free less A's 10 owed is 140. */
	ASSERT_EQ(0, ag_alloc1(b, 0, &hb));
	ASSERT_EQ(ENOSPC, ag_extend1(b, 0, hb, 145, &sh, NULL, NULL, 0));
	ASSERT_EQ(5, sh);
	/* A is at or below its own min: not asked. */
	EXPECT_ASK(a1, 0, 0, 0);
	ASSERT_EQ(0, tenant_ask(e, tid_a, &ask));
	EXPECT_EQ(0, ask);

	ASSERT_EQ(0, ag_give_fd(a1, 0, &arg.fd));
	ASSERT_LE(0, arg.fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, poll_thread, &arg));
	kt_sleep_ms(BLOCKED_MS);
	if (poll_done_within(&arg, 0)) {
		pthread_join(th, NULL);
		close(arg.fd);
		ASSERT_TRUE(false)
			TH_LOG("poll() returned %d (events %#x) with nothing asked",
			       arg.ret, arg.revents);
	}

	/* A grows past its min while B waits: a1's ask rises. */
	if (by_import) {
		ASSERT_EQ(0, ag_import(a2, 0, xfd, &ha, &nr));
		EXPECT_EQ(20, nr);
		close(xfd);
	} else {
		ASSERT_EQ(0, ag_alloc1(a2, 0, &ha));
		ASSERT_EQ(0, ag_grow(a2, 0, ha, 20));
	}
	/* Not woken: the long poll still ends, at its timeout. */
	pthread_join(th, NULL);
	EXPECT_EQ(1, arg.ret)
		TH_LOG("poll() not woken by A's %s past its min: it returned %d (%s) after %lld ms (its timeout: %d ms)",
		       by_import ? "import" : "extend", arg.ret,
		       strerror(arg.err), arg.spent, LONG_POLL_MS);
	EXPECT_EQ(POLLPRI, arg.revents);

	/* And PRESSURE says why: all of a1's 40 for B's unmet 100. */
	EXPECT_ASK(a1, 0, 40, KVPOOL_PRESSURE_GUARANTEE);
	ASSERT_EQ(0, kt_pressure(arg.fd, &p));
	EXPECT_EQ(40, p.out_ask_pages);
	EXPECT_EQ(KVPOOL_PRESSURE_GUARANTEE, p.out_reasons);
	EXPECT_ASK(a2, 0, 0, 0);	/* nothing in its cache */
	EXPECT_ASK(b, 0, 0, 0);
	ASSERT_EQ(0, tenant_ask(e, tid_a, &ask));
	EXPECT_EQ(40, ask);
	close(arg.fd);
}

TEST_F(pressure, poll_wakes_when_tenant_extends_past_min)
{
	lost_wakeup(_metadata, &self->e, false);
}

TEST_F(pressure, poll_wakes_when_tenant_imports_past_min)
{
	lost_wakeup(_metadata, &self->e, true);
}

TEST_HARNESS_MAIN
