/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpool's tracepoints: the ops that move pages, rows and pressure
 * (docs/admin-guide/kvpool-tracing.rst lists every event and field).
 *
 * Each op's event is emitted by the driver under the pool lock, once the
 * core call has returned, so that the counts it records (what the caller
 * now holds, what the pool has free) are the ones the op left; the
 * caller and the pool are read only when the event is enabled. An op that
 * fails emits its event too, with the negative errno in @err.
 *
 * Only numbers, no strings: the same header builds on every kernel the
 * module supports, before and after __assign_str() lost its source
 * argument (6.10). The fields are declared with C's own types, not u32
 * and u64: bpftrace turns an event's format file into a C struct, and
 * without BTF or kernel headers (a kernel built without
 * CONFIG_DEBUG_INFO_BTF) it knows no kernel typedefs.
 *
 * Not a stable ABI: fields may be added, renamed or dropped between
 * releases, as with the kernel's own tracepoints.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kvpool

#if !defined(_KVPOOL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KVPOOL_TRACE_H

#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>
#include <linux/types.h>

#include "kvp_core.h"

#ifndef _KVPOOL_TRACE_ONCE
#define _KVPOOL_TRACE_ONCE

/**
 * struct kvpd_lock_ns - how long an op waited for its pool lock
 * @t: ktime_get_ns() when it got the lock (last retook it, for a
 *     stepped op); 0 when it was not timed
 * @wait_ns: nanoseconds mutex_lock() took, every retake's added
 * @held_max: the longest of a stepped op's earlier holds
 *
 * Filled by kvpd_lock_timed() and kvpd_lock_break() only while the op's
 * event is enabled: with tracing off an op pays one patched-out jump for
 * it, nothing more.
 */
struct kvpd_lock_ns {
	u64 t;
	u64 wait_ns;
	u64 held_max;
};

/**
 * kvpd_lock_timed() - take a pool lock, timing it if asked
 * @pool: the pool
 * @l: where the times go
 * @on: whether to time it: the op's trace_<event>_enabled()
 *
 * Context: process context; may sleep. Takes @pool->lock.
 */
static inline void kvpd_lock_timed(struct kvp_pool *pool,
				   struct kvpd_lock_ns *l, bool on)
{
	u64 t0;

	l->t = 0;
	l->wait_ns = 0;
	l->held_max = 0;
	if (!on) {
		mutex_lock(&pool->lock);
		return;
	}
	t0 = ktime_get_ns();
	mutex_lock(&pool->lock);
	l->t = ktime_get_ns();
	l->wait_ns = l->t - t0;
}

/**
 * kvpd_lock_break_do() - drop a pool lock, do something, take it again
 * @pool: the pool, whose lock the caller holds
 * @l: the op's times, from kvpd_lock_timed()
 * @fn: what to do without the lock (an allocation), or NULL
 * @arg: its argument
 *
 * Context: process context, @pool->lock held; may sleep. Returns with the
 * lock held again.
 */
static inline void kvpd_lock_break_do(struct kvp_pool *pool,
				      struct kvpd_lock_ns *l,
				      void (*fn)(void *arg), void *arg)
{
	u64 t0 = 0;

	if (l->t) {
		t0 = ktime_get_ns();
		if (t0 - l->t > l->held_max)
			l->held_max = t0 - l->t;
	}
	mutex_unlock(&pool->lock);
	if (fn)
		fn(arg);
	cond_resched();
	if (l->t)
		t0 = ktime_get_ns();
	mutex_lock(&pool->lock);
	if (l->t) {
		l->t = ktime_get_ns();
		l->wait_ns += l->t - t0;
	}
}

/**
 * kvpd_lock_break() - let other clients have a pool lock between two steps
 * @pool: the pool, whose lock the caller holds
 * @l: the op's times, from kvpd_lock_timed()
 *
 * Context: process context, @pool->lock held; may sleep. Returns with the
 * lock held again.
 */
static inline void kvpd_lock_break(struct kvp_pool *pool,
				   struct kvpd_lock_ns *l)
{
	kvpd_lock_break_do(pool, l, NULL, NULL);
}

/*
 * Nanoseconds the lock has been held, the longest hold of a stepped op;
 * 0 if it was not timed.
 */
static inline u64 kvpd_lock_held_ns(const struct kvpd_lock_ns *l)
{
	u64 now;

	if (!l || !l->t)
		return 0;
	now = ktime_get_ns() - l->t;
	return now > l->held_max ? now : l->held_max;
}

static inline u64 kvpd_lock_wait_ns(const struct kvpd_lock_ns *l)
{
	return l ? l->wait_ns : 0;
}

/*
 * What a client held when its last close began: the rows, slots and
 * pages its file gives back (kvpool_reclaim).
 */
struct kvpd_trace_held {
	u32 tenant;
	u32 rows;
	u32 slots;
	u32 pages;
	u32 cache_pages;
};

#endif /* _KVPOOL_TRACE_ONCE */

/* Who did it: the pool, client and tenant every op event starts with. */
#define KVPD_TP_WHO_ASSIGN(c)						\
	do {								\
		const struct kvp_client *__c = (c);			\
									\
		__entry->pool = __c->pool->id;				\
		__entry->client = __c->id;				\
		__entry->tenant = __c->tenant->id;			\
	} while (0)

TRACE_EVENT(kvpool_row_alloc,
	    TP_PROTO(const struct kvp_client *c, u32 count,
		     const struct kvpool_handle *h, u32 short_rows, int err,
		     const struct kvpd_lock_ns *l),
	    TP_ARGS(c, count, h, short_rows, err, l),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, tenant)
			     __field(unsigned int, count)
			     __field(unsigned int, row)
			     __field(unsigned int, short_rows)
			     __field(unsigned int, client_rows)
			     __field(unsigned int, free_rows)
			     __field(int, err)
			     __field(unsigned long long, wait_ns)
			     __field(unsigned long long, hold_ns)),
	    TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
			   __entry->count = count;
			   __entry->row = err ? KVP_NIL : h[0].req_pool_idx;
			   __entry->short_rows = short_rows;
			   __entry->client_rows = c->nr_rows;
			   __entry->free_rows = c->pool->free_rows;
			   __entry->err = err;
			   __entry->wait_ns = kvpd_lock_wait_ns(l);
			   __entry->hold_ns = kvpd_lock_held_ns(l);),
	    TP_printk("pool=%u client=%u tenant=%u count=%u row=%d short=%u client_rows=%u free_rows=%u err=%d wait_ns=%llu hold_ns=%llu",
		      __entry->pool, __entry->client, __entry->tenant,
		      __entry->count, (int)__entry->row, __entry->short_rows,
		      __entry->client_rows, __entry->free_rows, __entry->err,
		      __entry->wait_ns, __entry->hold_ns));

TRACE_EVENT(kvpool_extend,
	    TP_PROTO(const struct kvp_client *c, u32 count,
		     const struct kvpool_extend_entry *e,
		     const struct kvp_extend_result *res, int err,
		     const struct kvpd_lock_ns *l),
	    TP_ARGS(c, count, e, res, err, l),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, tenant)
			     __field(unsigned int, count)
			     __field(unsigned int, row)
			     __field(unsigned int, new_len)
			     __field(unsigned int, pages)
			     __field(unsigned int, shortfall)
			     __field(unsigned int, error_index)
			     __field(unsigned int, client_pages)
			     __field(unsigned int, tenant_pages)
			     __field(unsigned int, free_pages)
			     __field(int, err)
			     __field(unsigned long long, wait_ns)
			     __field(unsigned long long, hold_ns)),
	    TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
			   __entry->count = count;
			   __entry->row = e[0].handle.req_pool_idx;
			   __entry->new_len = e[0].new_len;
			   __entry->pages = err ? 0 : res->nr_pages;
			   __entry->shortfall = res->shortfall;
			   __entry->error_index = res->error_index;
			   __entry->client_pages = c->nr_pages;
			   __entry->tenant_pages = c->tenant->pages;
			   __entry->free_pages = c->pool->free_pages;
			   __entry->err = err;
			   __entry->wait_ns = kvpd_lock_wait_ns(l);
			   __entry->hold_ns = kvpd_lock_held_ns(l);),
	    TP_printk("pool=%u client=%u tenant=%u count=%u row=%u new_len=%u pages=%u shortfall=%u error_index=%d client_pages=%u tenant_pages=%u free_pages=%u err=%d wait_ns=%llu hold_ns=%llu",
		      __entry->pool, __entry->client, __entry->tenant,
		      __entry->count, __entry->row, __entry->new_len,
		      __entry->pages, __entry->shortfall,
		      (int)__entry->error_index, __entry->client_pages,
		      __entry->tenant_pages, __entry->free_pages, __entry->err,
		      __entry->wait_ns, __entry->hold_ns));

/*
 * The batch ops that give pages up or move them between a row and the
 * prefix cache. @row is the first entry's req_pool_idx; for
 * CACHE_EVICT, whose entries are page ids, the first page's id. @pages
 * is out_nr_pages: pages freed (RELEASE, TRIM, SWA_FREE; with
 * KVPOOL_RELEASE_DONATE, those not donated), donated (DONATE) or
 * evicted (CACHE_EVICT).
 */
DECLARE_EVENT_CLASS(kvpool_batch,
		    TP_PROTO(const struct kvp_client *c, u32 count, u32 row,
			     u32 flags, u32 pages, u32 error_index, int err,
			     const struct kvpd_lock_ns *l),
		    TP_ARGS(c, count, row, flags, pages, error_index, err, l),
		    TP_STRUCT__entry(__field(unsigned int, pool)
				     __field(unsigned int, client)
				     __field(unsigned int, tenant)
				     __field(unsigned int, count)
				     __field(unsigned int, row)
				     __field(unsigned int, flags)
				     __field(unsigned int, pages)
				     __field(unsigned int, error_index)
				     __field(unsigned int, client_pages)
				     __field(unsigned int, cache_pages)
				     __field(unsigned int, free_pages)
				     __field(int, err)
				     __field(unsigned long long, wait_ns)
				     __field(unsigned long long, hold_ns)),
		    TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
				   __entry->count = count;
				   __entry->row = row;
				   __entry->flags = flags;
				   __entry->pages = err ? 0 : pages;
				   __entry->error_index = error_index;
				   __entry->client_pages = c->nr_pages;
				   __entry->cache_pages = c->nr_cache_pages;
				   __entry->free_pages = c->pool->free_pages;
				   __entry->err = err;
				   __entry->wait_ns = kvpd_lock_wait_ns(l);
				   __entry->hold_ns = kvpd_lock_held_ns(l);),
		    TP_printk("pool=%u client=%u tenant=%u count=%u row=%u flags=%#x pages=%u error_index=%d client_pages=%u cache_pages=%u free_pages=%u err=%d wait_ns=%llu hold_ns=%llu",
			      __entry->pool, __entry->client, __entry->tenant,
			      __entry->count, __entry->row, __entry->flags,
			      __entry->pages, (int)__entry->error_index,
			      __entry->client_pages, __entry->cache_pages,
			      __entry->free_pages, __entry->err,
			      __entry->wait_ns, __entry->hold_ns));

#define KVPD_DEFINE_BATCH_EVENT(_name)					\
DEFINE_EVENT(kvpool_batch, _name,					\
	TP_PROTO(const struct kvp_client *c, u32 count, u32 row,	\
		 u32 flags, u32 pages, u32 error_index, int err,	\
		 const struct kvpd_lock_ns *l),				\
	TP_ARGS(c, count, row, flags, pages, error_index, err, l))

KVPD_DEFINE_BATCH_EVENT(kvpool_release);
KVPD_DEFINE_BATCH_EVENT(kvpool_trim);
KVPD_DEFINE_BATCH_EVENT(kvpool_donate);
KVPD_DEFINE_BATCH_EVENT(kvpool_swa_free);
KVPD_DEFINE_BATCH_EVENT(kvpool_cache_evict);

/* EXPORT: a held row (or a slot's, @session) leaves the client for a file. */
TRACE_EVENT(kvpool_export,
	    TP_PROTO(const struct kvp_client *c, const struct kvpool_export *x,
		     u32 xidx, u32 pages, int err),
	    TP_ARGS(c, x, xidx, pages, err),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, tenant)
			     __field(unsigned int, row)
			     __field(unsigned int, flags)
			     __field(unsigned long long, session)
			     __field(unsigned int, export_row)
			     __field(unsigned int, pages)
			     __field(unsigned int, client_pages)
			     __field(unsigned int, export_pages)
			     __field(int, fd)
			     __field(int, err)),
	    TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
			   __entry->row = x->handle.req_pool_idx;
			   __entry->flags = x->flags;
			   __entry->session = x->session_id;
			   __entry->export_row = err ? KVP_NIL : xidx;
			   __entry->pages = err ? 0 : pages;
			   __entry->client_pages = c->nr_pages;
			   __entry->export_pages = c->pool->export_pages;
			   __entry->fd = err ? -1 : x->out_fd;
			   __entry->err = err;),
	    TP_printk("pool=%u client=%u tenant=%u row=%u flags=%#x session=%llu export_row=%d pages=%u client_pages=%u export_pages=%u fd=%d err=%d",
		      __entry->pool, __entry->client, __entry->tenant,
		      __entry->row, __entry->flags, __entry->session,
		      (int)__entry->export_row, __entry->pages,
		      __entry->client_pages, __entry->export_pages, __entry->fd,
		      __entry->err));

/* IMPORT: the row of an export file joins the client, as @row. */
TRACE_EVENT(kvpool_import,
	    TP_PROTO(const struct kvp_client *c, u32 xidx,
		     const struct kvpool_handle *h, u32 pages, int err),
	    TP_ARGS(c, xidx, h, pages, err),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, tenant)
			     __field(unsigned int, export_row)
			     __field(unsigned int, row)
			     __field(unsigned int, pages)
			     __field(unsigned int, client_pages)
			     __field(unsigned int, tenant_pages)
			     __field(int, err)),
	    TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
			   __entry->export_row = xidx;
			   __entry->row = err ? KVP_NIL : h->req_pool_idx;
			   __entry->pages = err ? 0 : pages;
			   __entry->client_pages = c->nr_pages;
			   __entry->tenant_pages = c->tenant->pages;
			   __entry->err = err;),
	    TP_printk("pool=%u client=%u tenant=%u export_row=%d row=%d pages=%u client_pages=%u tenant_pages=%u err=%d",
		      __entry->pool, __entry->client, __entry->tenant,
		      (int)__entry->export_row, (int)__entry->row,
		      __entry->pages, __entry->client_pages,
		      __entry->tenant_pages, __entry->err));

/*
 * An export file closed before anyone imported its row: the row and its
 * pages go back to the pool.
 */
TRACE_EVENT(kvpool_export_drop,
	    TP_PROTO(const struct kvp_pool *pool, u32 xidx, u32 pages),
	    TP_ARGS(pool, xidx, pages),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, export_row)
			     __field(unsigned int, pages)
			     __field(unsigned int, free_pages)),
	    TP_fast_assign(__entry->pool = pool->id;
			   __entry->export_row = xidx;
			   __entry->pages = pages;
			   __entry->free_pages = pool->free_pages;),
	    TP_printk("pool=%u export_row=%u pages=%u free_pages=%u",
		      __entry->pool, __entry->export_row, __entry->pages,
		      __entry->free_pages));

/*
 * The last close of a client: what it still held and gave back. On a
 * pool with an arena the pages of its rows and slots may be held back
 * (@quarantined) until its processes are gone (kvpool_quarantine_end).
 */
TRACE_EVENT(kvpool_reclaim,
	    TP_PROTO(const struct kvp_pool *pool, u32 client,
		     const struct kvpd_trace_held *held, u32 quarantined),
	    TP_ARGS(pool, client, held, quarantined),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, tenant)
			     __field(unsigned int, rows)
			     __field(unsigned int, slots)
			     __field(unsigned int, pages)
			     __field(unsigned int, cache_pages)
			     __field(unsigned int, quarantined)
			     __field(unsigned int, free_pages)),
	    TP_fast_assign(__entry->pool = pool->id;
			   __entry->client = client;
			   __entry->tenant = held->tenant;
			   __entry->rows = held->rows;
			   __entry->slots = held->slots;
			   __entry->pages = held->pages;
			   __entry->cache_pages = held->cache_pages;
			   __entry->quarantined = quarantined;
			   __entry->free_pages = pool->free_pages;),
	    TP_printk("pool=%u client=%u tenant=%u rows=%u slots=%u pages=%u cache_pages=%u quarantined=%u free_pages=%u",
		      __entry->pool, __entry->client, __entry->tenant,
		      __entry->rows, __entry->slots, __entry->pages,
		      __entry->cache_pages, __entry->quarantined,
		      __entry->free_pages));

/* A closed client's quarantine ends: its pages are free again. */
TRACE_EVENT(kvpool_quarantine_end,
	    TP_PROTO(const struct kvp_pool *pool, u32 client, u32 pages),
	    TP_ARGS(pool, client, pages),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, pages)
			     __field(unsigned int, free_pages)),
	    TP_fast_assign(__entry->pool = pool->id;
			   __entry->client = client;
			   __entry->pages = pages;
			   __entry->free_pages = pool->free_pages;),
	    TP_printk("pool=%u client=%u pages=%u free_pages=%u",
		      __entry->pool, __entry->client, __entry->pages,
		      __entry->free_pages));

TRACE_DEFINE_ENUM(KVPOOL_CMD_ROW_ALLOC);
TRACE_DEFINE_ENUM(KVPOOL_CMD_EXTEND);
TRACE_DEFINE_ENUM(KVPOOL_CMD_IMPORT);

/*
 * A refusal for want of room: ENOSPC (the pool) or EDQUOT (the tenant's
 * limit). @shortfall is what was missing, in rows for ROW_ALLOC and in
 * pages for EXTEND (0 for IMPORT, which does not say). Fired only for
 * those two errnos; it also raised an ask (kvpool_pressure_raise).
 */
TRACE_EVENT_CONDITION(kvpool_refuse,
		      TP_PROTO(const struct kvp_client *c, u32 op, int err,
			       u32 shortfall),
		      TP_ARGS(c, op, err, shortfall),
		      TP_CONDITION(err == -ENOSPC || err == -EDQUOT),
		      TP_STRUCT__entry(__field(unsigned int, pool)
				       __field(unsigned int, client)
				       __field(unsigned int, tenant)
				       __field(unsigned int, op)
				       __field(int, err)
				       __field(unsigned int, shortfall)
				       __field(unsigned int, free_pages)
				       __field(unsigned int, free_rows)
				       __field(unsigned int, tenant_pages)
				       __field(unsigned int, tenant_max_pages)
				       __field(unsigned int, tenant_rows)
				       __field(unsigned int, tenant_max_rows)),
		      TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
				     __entry->op = op;
				     __entry->err = err;
				     __entry->shortfall = shortfall;
				     __entry->free_pages = c->pool->free_pages;
				     __entry->free_rows = c->pool->free_rows;
				     __entry->tenant_pages = c->tenant->pages;
				     __entry->tenant_max_pages =
					c->tenant->max_pages;
				     __entry->tenant_rows = c->tenant->rows;
				     __entry->tenant_max_rows =
					c->tenant->max_rows;),
		      TP_printk("pool=%u client=%u tenant=%u op=%s err=%d shortfall=%u free_pages=%u free_rows=%u tenant_pages=%u/%u tenant_rows=%u/%u",
				__entry->pool, __entry->client, __entry->tenant,
				__print_symbolic(__entry->op,
						 { KVPOOL_CMD_ROW_ALLOC, "ROW_ALLOC" },
						 { KVPOOL_CMD_EXTEND, "EXTEND" },
						 { KVPOOL_CMD_IMPORT, "IMPORT" }),
				__entry->err, __entry->shortfall,
				__entry->free_pages,
				__entry->free_rows, __entry->tenant_pages,
				__entry->tenant_max_pages, __entry->tenant_rows,
				__entry->tenant_max_rows));

/*
 * A pool op changed the pressure (a refusal, or free pages crossing a
 * watermark): pollers are woken to look at their asks again. @seq is
 * the pool's pressure sequence after it; @op the ioctl's KVPOOL_CMD_*.
 */
TRACE_EVENT(kvpool_pressure_raise,
	    TP_PROTO(u32 pool, u32 client, u32 op, u32 seq),
	    TP_ARGS(pool, client, op, seq),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, op)
			     __field(unsigned int, seq)),
	    TP_fast_assign(__entry->pool = pool;
			   __entry->client = client;
			   __entry->op = op;
			   __entry->seq = seq;),
	    TP_printk("pool=%u client=%u op=%u seq=%u",
		      __entry->pool, __entry->client, __entry->op,
		      __entry->seq));

/*
 * A client looked at its ask: KVPOOL_PRESSURE (@poll 0) or poll() (@poll
 * 1). @ask is the pages it is asked to evict, @reasons the
 * KVPOOL_PRESSURE_* bits.
 */
TRACE_EVENT(kvpool_pressure,
	    TP_PROTO(const struct kvp_client *c, u32 ask, u32 reasons,
		     bool poll),
	    TP_ARGS(c, ask, reasons, poll),
	    TP_STRUCT__entry(__field(unsigned int, pool)
			     __field(unsigned int, client)
			     __field(unsigned int, tenant)
			     __field(unsigned int, ask)
			     __field(unsigned int, reasons)
			     __field(unsigned int, free_pages)
			     __field(unsigned int, low_wmark)
			     __field(unsigned int, high_wmark)
			     __field(unsigned int, cache_pages)
			     __field(unsigned char, poll)),
	    TP_fast_assign(KVPD_TP_WHO_ASSIGN(c);
			   __entry->ask = ask;
			   __entry->reasons = reasons;
			   __entry->free_pages = c->pool->free_pages;
			   __entry->low_wmark = c->pool->low_wmark;
			   __entry->high_wmark = c->pool->high_wmark;
			   __entry->cache_pages = c->nr_cache_pages;
			   __entry->poll = poll;),
	    TP_printk("pool=%u client=%u tenant=%u ask=%u reasons=%#x free_pages=%u wmark=%u/%u cache_pages=%u poll=%d",
		      __entry->pool, __entry->client, __entry->tenant,
		      __entry->ask, __entry->reasons, __entry->free_pages,
		      __entry->low_wmark, __entry->high_wmark,
		      __entry->cache_pages, __entry->poll));

#endif /* _KVPOOL_TRACE_H */

/*
 * Out of the kernel tree: define_trace.h reads this file again by the
 * name below, found through the driver folder's -I (Kbuild's ccflags-y).
 */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kvpool_trace
#include <trace/define_trace.h>
