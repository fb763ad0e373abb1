// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target over the kvpool core (driver/core.mk), compiled in
 * userspace against driver/user/kvp_os_user.{h,c} exactly as the unit
 * test is, with ASan and UBSan on, and with KVP_STEP_PAGES at 5 (see
 * the Makefile), so that EXTEND, RELEASE, TRIM, SWA_FREE and a close
 * run in steps here as they do only on big pools in the kernel.
 *
 * One input is one small pool and a sequence of operations on it by 3 or
 * 4 clients: every core op (row_alloc, extend, commit, trim, release with
 * and without KVPOOL_RELEASE_DONATE, to_slot, from_slot, slot_release,
 * row_query by handle and by slot, donate, attach_prefix, cache_evict,
 * swa_free, stats; export, import and an export file closing; the
 * administrator's tenant limits and guarantees, watermarks, tenant list;
 * pressure; the geometry check), a client closing (detach, then attach
 * again as a new client), clients in one tenant or two, and allocation
 * failure injected into the next op (kvp_user_fail_nth). Arguments are
 * mostly plausible (live handles of the caller, lengths next to the row's
 * current ones, pages of its cache) and often not: stale, not yet issued
 * (a generation ahead of the row's), other clients' and garbage handles,
 * lengths around every boundary, rows and pages named twice in a batch,
 * random page ids and session ids, unknown flags, counts of 0 and past
 * the batch limit.
 *
 * Checked after every op; any failure is a finding and abort()s:
 * - kvp_verify_locked() reports 0 violations, and no row has a hole
 *   (a page SWA_FREE freed) below its protected length;
 * - an op that failed left the whole pool exactly as it was (page table,
 *   rows and their page lists, clients, caches and pins, slot chains), so
 *   also every client's STATS; its errno is one the ABI documents for the
 *   op, is the one a small independent model of the ABI's validation rules
 *   predicts, and is ENOMEM exactly when the injected allocation failure
 *   was hit;
 * - an op that succeeded did what the ABI says (lengths, page lists, page
 *   owners, handles, counts it reports) and moved every client's STATS by
 *   exactly that.
 * At the end every client closes; the pool must be whole and every
 * allocation the core made freed (kvp_user_live_allocs).
 *
 * Env: KVP_FUZZ_TRACE=1 prints every decoded op and its result (use it on
 * a crashing input to read the sequence); KVP_FUZZ_STRICT=1 also fails
 * when a batch error names a bad entry that is not the first bad one (the
 * header promises the first; see check_first_bad()).
 *
 * Input format (little-endian; reading past the end yields zeros); its
 * codes are FZ_OPS and the enums of the "input format" section below,
 * which gen-corpus.py reads from this file:
 *   4 header bytes, see fz_setup():
 *     b0: bits 0-2 page_tokens {1,2,3,4,16,1,5,64}; bit 3 RESERVE_ZERO;
 *         bit 4 row generations start near 2^32; bit 5 the batch epoch
 *         starts near 2^32; bit 6 four clients (else three); bit 7
 *         clients in two tenants (cgroups 0 and 1), else all in one
 *     b1: nr_pages - 2 (2..257)
 *     b2: nr_rows - 2, low 6 bits (2..65)
 *     b3: row_tokens: k = 1 + (b3 & 63); b3 >> 6: 0 k*pt, 1 k*pt-1,
 *         2 k*pt+1, 3 k
 *   then op records: [op % FZ_NR_OPS] [client % nr_clients] [arguments],
 *   the op by its place in FZ_OPS, its arguments as its function reads
 *   them.
 */
#include <limits.h>
#include <stdarg.h>

#include "kvp_core.h"

#define FZ_MAX_CLIENTS		4
#define FZ_MAX_ROWS		66
#define FZ_MAX_PAGES		258
#define FZ_MAP_WORDS		8	/* free map words of 258 pages: 5 + 1 */
#define FZ_MAX_ROW_PAGES	72	/* pages_for(row_tokens) <= 66 */
#define FZ_MAX_OPS		1000
#define FZ_KNOWN		32
#define FZ_MAX_ARRAY		128	/* larger counts get a 1-entry array */

/*
 * The ops, one entry each: its id (enum fz_op: OP_<id>), its name (in
 * traces) and the call that decodes its arguments from @in and runs it
 * for client f->ci. An input's op byte modulo FZ_NR_OPS picks an op by
 * its place here; gen-corpus.py reads this list for the numbers, so an
 * op is added at the end (the corpus keeps its meaning) and only here.
 */
#define FZ_OPS(X)							\
	X(ALLOC, "row_alloc", op_alloc(f, in))				\
	X(EXTEND, "extend", op_extend(f, in))				\
	X(COMMIT, "commit", op_len(f, in, LEN_COMMIT))			\
	X(TRIM, "trim", op_handles(f, in, false))			\
	X(RELEASE, "release", op_handles(f, in, true))			\
	X(TO_SLOT, "to_slot", op_slot(f, in, OP_TO_SLOT))		\
	X(FROM_SLOT, "from_slot", op_slot(f, in, OP_FROM_SLOT))		\
	X(SLOT_RELEASE, "slot_release", op_slot(f, in, OP_SLOT_RELEASE)) \
	X(QUERY, "row_query", op_query(f, in, false))			\
	X(QUERY_SLOT, "row_query_slot", op_query(f, in, true))		\
	X(DONATE, "donate", op_len(f, in, LEN_DONATE))			\
	X(ATTACH, "attach_prefix", op_attach(f, in))			\
	X(EVICT, "cache_evict", op_evict(f, in))			\
	X(SWA, "swa_free", op_len(f, in, LEN_SWA))			\
	X(STATS, "stats", op_stats(f))					\
	X(REATTACH, "reattach", op_reattach(f, in))			\
	X(FAIL, "fail_nth", op_fail(f, in))				\
	X(EXPORT, "export", op_export(f, in))				\
	X(IMPORT, "import", op_import(f, in))				\
	X(DROP, "export_drop", op_drop(f, in))				\
	X(TENANT, "tenant_set", op_tenant(f, in))			\
	X(WMARK, "set_wmark", op_wmark(f, in))				\
	X(PRESSURE, "pressure", op_pressure(f))				\
	X(TENANT_LIST, "tenant_list", op_tenant_list(f, in))		\
	X(GEOM, "geom_check", op_geom(f, in))

enum fz_op {
#define FZ_OP_ID(id, name, run) OP_##id,
	FZ_OPS(FZ_OP_ID)
#undef FZ_OP_ID
	FZ_NR_OPS
};

static const char *const fz_op_names[FZ_NR_OPS] = {
#define FZ_OP_NAME(id, name, run) name,
	FZ_OPS(FZ_OP_NAME)
#undef FZ_OP_NAME
};

/* ---- input ---------------------------------------------------------- */

struct fz_in {
	const u8 *p;
	size_t n;
};

static u8 rd8(struct fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static u32 rd32(struct fz_in *in)
{
	u32 v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v |= (u32)rd8(in) << (8 * i);
	return v;
}

static u64 rd64(struct fz_in *in)
{
	u64 lo = rd32(in);

	return lo | (u64)rd32(in) << 32;
}

/* The first @n ids of two page lists agree (either may be NULL when @n is 0). */
static bool fz_same(const u32 *a, const u32 *b, u32 n)
{
	return !n || !memcmp(a, b, n * sizeof(u32));
}

/* ---- snapshots of the whole core state -------------------------------- */

struct fz_rsnap {
	u8 state;
	int owner;		/* client slot, -1 none, 99 not one of ours */
	u64 session;
	u32 nr, allocated, committed, protected, swa, next, gen, owned;
	u32 pages[FZ_MAX_ROW_PAGES];
};

struct fz_csnap {
	bool attached;
	u32 id, cidx, nr_rows, nr_slots, nr_pages, nr_cache;
	u32 nr_cache_pinned, tenant;
	u32 slot_head[KVP_SLOT_BUCKETS];
	struct kvp_cache_ent cache[FZ_MAX_PAGES];	/* nr_cache valid */
};

struct fz_tsnap {
	bool live, configured;
	u64 cgroup_id;
	u32 uid, id, max_pages, min_pages, max_rows;
	u32 pages, cache_pages, cache_pinned, rows, nr_clients;
	char label[KVPOOL_LABEL_LEN];
};

#define FZ_MAX_TENANTS	16

struct fz_snap {
	u32 map_lo, free_row_head, free_pages, row_pages, slot_pages;
	u32 reserved_pages, cache_evictable, cache_pinned, free_rows;
	u32 held_rows, slot_rows, reserved_rows, nr_clients, next_client_id;
	u32 clients_span;	/* highest client index in use, plus one */
	u32 tenants_span, nr_tenants, unmet, low_wmark, high_wmark;
	u32 export_rows, export_pages;
	u64 sum_min;
	int clients[16];	/* pool->clients[] as client slots */
	struct fz_tsnap tenants[FZ_MAX_TENANTS];
	struct kvp_page pages[FZ_MAX_PAGES];
	u64 map[FZ_MAP_WORDS];
	struct fz_rsnap rows[FZ_MAX_ROWS];
	struct fz_csnap cli[FZ_MAX_CLIENTS];
	struct kvpool_stats st[FZ_MAX_CLIENTS];
};

/* ---- the fuzzer's state for one input --------------------------------- */

struct fz {
	struct kvp_pool pool;
	struct kvp_client cli[FZ_MAX_CLIENTS];
	bool attached[FZ_MAX_CLIENTS];
	u32 ncli;
	struct kvpool_handle known[FZ_KNOWN];
	u32 nknown;
	u32 known_next;
	u32 exports[FZ_MAX_ROWS];	/* rows of export files not imported */
	u32 nexports;
	bool tenants_mode;	/* clients in two tenants (cgroups 0, 1) */
	u32 pending_fail;	/* fail the Nth allocation of the next op */
	unsigned long fail_at;
	bool injected;		/* the injected failure was hit */
	u32 opno;
	enum fz_op op;
	int ci;			/* the client of the current op */
	struct fz_snap before, after;
};

static bool fz_trace;
static bool fz_strict;
static bool fz_noted_first_bad;

static __attribute__((format(printf, 2, 3), noreturn))
void fz_finding(struct fz *f, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kvpool-fuzz: FINDING at op #%u (%s, client %d): ",
		f->opno, fz_op_names[f->op], f->ci);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

#define FZ_CHECK(f, cond, ...)						\
	do {								\
		if (!(cond))						\
			fz_finding(f, "check failed: " #cond ": " __VA_ARGS__); \
	} while (0)

#define FZ_EQ(f, a, b)							\
	do {								\
		unsigned long long _a = (a), _b = (b);			\
		if (_a != _b)						\
			fz_finding(f, "%s == %llu, expected %s == %llu", \
				   #a, _a, #b, _b);			\
	} while (0)

static __attribute__((format(printf, 2, 3)))
void fz_log(struct fz *f, const char *fmt, ...)
{
	va_list ap;

	if (!fz_trace)
		return;
	fprintf(stderr, "  #%u c%d %s: ", f->opno, f->ci, fz_op_names[f->op]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int fz_slot_of(struct fz *f, const struct kvp_client *c)
{
	u32 i;

	if (!c)
		return -1;
	for (i = 0; i < f->ncli; i++)
		if (c == &f->cli[i] && f->attached[i])
			return (int)i;
	return 99;
}

static void fz_snap(struct fz *f, struct fz_snap *s)
{
	struct kvp_pool *pool = &f->pool;
	u32 i, j;

	s->map_lo = pool->map_lo;
	memset(s->map, 0, sizeof(s->map));
	for (i = 0, j = 0; i < pool->map_levels; i++) {
		u32 w, words = i + 1 < pool->map_levels ?
			(u32)(pool->map_level[i + 1] - pool->map_level[i]) : 1;

		for (w = 0; w < words && j < FZ_MAP_WORDS; w++)
			s->map[j++] = pool->map_level[i][w];
	}
	s->free_row_head = pool->free_row_head;
	s->free_pages = pool->free_pages;
	s->row_pages = pool->row_pages;
	s->slot_pages = pool->slot_pages;
	s->reserved_pages = pool->reserved_pages;
	s->cache_evictable = pool->cache_evictable;
	s->cache_pinned = pool->cache_pinned;
	s->free_rows = pool->free_rows;
	s->held_rows = pool->held_rows;
	s->slot_rows = pool->slot_rows;
	s->reserved_rows = pool->reserved_rows;
	s->nr_clients = pool->nr_clients;
	s->next_client_id = pool->next_client_id;
	s->clients_span = kvp_xa_span(&pool->clients);
	s->tenants_span = kvp_xa_span(&pool->tenants);
	s->nr_tenants = pool->nr_tenants;
	s->unmet = pool->unmet;
	s->sum_min = pool->sum_min;
	s->low_wmark = pool->low_wmark;
	s->high_wmark = pool->high_wmark;
	s->export_rows = pool->export_rows;
	s->export_pages = pool->export_pages;
	FZ_CHECK(f, s->tenants_span <= FZ_MAX_TENANTS, "tenants_span %u",
		 s->tenants_span);
	memset(s->tenants, 0, sizeof(s->tenants));
	for (i = 0; i < s->tenants_span && i < FZ_MAX_TENANTS; i++) {
		const struct kvp_tenant *t = xa_load(&pool->tenants, i);
		struct fz_tsnap *ts = &s->tenants[i];

		if (!t)
			continue;
		ts->live = true;
		ts->configured = t->configured;
		ts->cgroup_id = t->cgroup_id;
		ts->uid = t->uid;
		ts->id = t->id;
		ts->max_pages = t->max_pages;
		ts->min_pages = t->min_pages;
		ts->max_rows = t->max_rows;
		ts->pages = t->pages;
		ts->cache_pages = t->cache_pages;
		ts->cache_pinned = t->cache_pinned;
		ts->rows = t->rows;
		ts->nr_clients = t->nr_clients;
		memcpy(ts->label, t->label, sizeof(ts->label));
	}
	FZ_CHECK(f, s->clients_span <= 16, "clients_span %u", s->clients_span);
	memset(s->clients, 0, sizeof(s->clients));
	for (i = 0; i < s->clients_span && i < 16; i++)
		s->clients[i] = fz_slot_of(f, xa_load(&pool->clients, i));
	memcpy(s->pages, pool->pages, pool->nr_pages * sizeof(*s->pages));
	for (i = 0; i < pool->nr_rows; i++) {
		const struct kvp_row *r = &pool->rows[i];
		struct fz_rsnap *rs = &s->rows[i];

		rs->state = r->state;
		rs->owner = fz_slot_of(f, r->owner);
		rs->session = r->session;
		rs->nr = r->nr;
		rs->allocated = r->allocated;
		rs->committed = r->committed;
		rs->protected = r->protected;
		rs->swa = r->swa_evicted;
		rs->next = r->next;
		rs->gen = r->gen;
		rs->owned = r->owned;
		FZ_CHECK(f, r->nr <= FZ_MAX_ROW_PAGES && r->nr <= r->cap,
			 "row %u: nr %u cap %u", i, r->nr, r->cap);
		if (r->nr)
			memcpy(rs->pages, r->pages, r->nr * sizeof(u32));
	}
	for (i = 0; i < f->ncli; i++) {
		const struct kvp_client *c = &f->cli[i];
		struct fz_csnap *cs = &s->cli[i];

		memset(cs, 0, offsetof(struct fz_csnap, cache));
		memset(&s->st[i], 0, sizeof(s->st[i]));
		cs->attached = f->attached[i];
		if (!cs->attached)
			continue;
		cs->id = c->id;
		cs->cidx = c->cidx;
		cs->nr_rows = c->nr_rows;
		cs->nr_slots = c->nr_slots;
		cs->nr_pages = c->nr_pages;
		cs->nr_cache = c->nr_cache_pages;
		cs->nr_cache_pinned = c->nr_cache_pinned;
		cs->tenant = c->tenant ? c->tenant->id : ~0U;
		FZ_CHECK(f, c->nr_cache_pages <= pool->nr_pages &&
			 c->nr_cache_pages <= c->cache_cap,
			 "client %u: %u cache pages, room %u", i,
			 c->nr_cache_pages, c->cache_cap);
		for (j = 0; j < c->nr_cache_pages; j++)
			cs->cache[j] = c->cache[j];
		memcpy(cs->slot_head, c->slot_head, sizeof(cs->slot_head));
		kvp_stats_locked((struct kvp_client *)c, &s->st[i]);
	}
}

/* Names the first difference of two snapshots, "" when there is none. */
static const char *fz_snap_diff(const struct fz *f, const struct fz_snap *a,
				const struct fz_snap *b)
{
	static char buf[96];
	u32 i;

#define FZ_SCMP(fld) do { if (a->fld != b->fld) return #fld; } while (0)
	FZ_SCMP(map_lo);
	if (memcmp(a->map, b->map, sizeof(a->map)))
		return "free map";
	FZ_SCMP(free_row_head);
	FZ_SCMP(free_pages);
	FZ_SCMP(row_pages);
	FZ_SCMP(slot_pages);
	FZ_SCMP(reserved_pages);
	FZ_SCMP(cache_evictable);
	FZ_SCMP(cache_pinned);
	FZ_SCMP(free_rows);
	FZ_SCMP(held_rows);
	FZ_SCMP(slot_rows);
	FZ_SCMP(reserved_rows);
	FZ_SCMP(nr_clients);
	FZ_SCMP(next_client_id);
	FZ_SCMP(clients_span);
	FZ_SCMP(tenants_span);
	FZ_SCMP(nr_tenants);
	FZ_SCMP(unmet);
	FZ_SCMP(sum_min);
	FZ_SCMP(low_wmark);
	FZ_SCMP(high_wmark);
	FZ_SCMP(export_rows);
	FZ_SCMP(export_pages);
#undef FZ_SCMP
	if (memcmp(a->clients, b->clients, sizeof(a->clients)))
		return "pool->clients[]";
	for (i = 0; i < FZ_MAX_TENANTS; i++) {
		if (memcmp(&a->tenants[i], &b->tenants[i], sizeof(a->tenants[i]))) {
			snprintf(buf, sizeof(buf), "tenant %u", i);
			return buf;
		}
	}
	for (i = 0; i < f->pool.nr_pages; i++) {
		if (a->pages[i].owner != b->pages[i].owner ||
		    a->pages[i].next != b->pages[i].next) {
			snprintf(buf, sizeof(buf), "page %u {next %u owner %#x} -> {%u %#x}",
				 i, a->pages[i].next, a->pages[i].owner,
				 b->pages[i].next, b->pages[i].owner);
			return buf;
		}
	}
	for (i = 0; i < f->pool.nr_rows; i++) {
		const struct fz_rsnap *x = &a->rows[i], *y = &b->rows[i];

		if (x->state != y->state || x->owner != y->owner ||
		    x->session != y->session || x->nr != y->nr ||
		    x->allocated != y->allocated ||
		    x->committed != y->committed ||
		    x->protected != y->protected || x->swa != y->swa ||
		    x->next != y->next || x->gen != y->gen ||
		    x->owned != y->owned ||
		    !fz_same(x->pages, y->pages, x->nr)) {
			snprintf(buf, sizeof(buf), "row %u", i);
			return buf;
		}
	}
	for (i = 0; i < f->ncli; i++) {
		const struct fz_csnap *x = &a->cli[i], *y = &b->cli[i];

		if (x->attached != y->attached || x->id != y->id ||
		    x->cidx != y->cidx || x->nr_rows != y->nr_rows ||
		    x->nr_slots != y->nr_slots || x->nr_pages != y->nr_pages ||
		    x->nr_cache != y->nr_cache ||
		    x->nr_cache_pinned != y->nr_cache_pinned ||
		    x->tenant != y->tenant ||
		    memcmp(x->slot_head, y->slot_head, sizeof(x->slot_head))) {
			snprintf(buf, sizeof(buf), "client %u", i);
			return buf;
		}
		if (memcmp(x->cache, y->cache, x->nr_cache * sizeof(x->cache[0]))) {
			snprintf(buf, sizeof(buf), "client %u: cache or pins", i);
			return buf;
		}
		if (memcmp(&a->st[i], &b->st[i], sizeof(a->st[i]))) {
			snprintf(buf, sizeof(buf), "client %u: STATS", i);
			return buf;
		}
	}
	return "";
}

/* ---- argument decoders ------------------------------------------------ */

static void fz_known_add(struct fz *f, struct kvpool_handle h)
{
	f->known[f->known_next] = h;
	f->known_next = (f->known_next + 1) % FZ_KNOWN;
	if (f->nknown < FZ_KNOWN)
		f->nknown++;
}

/* The i-th (mod their number) held row of client slot @ci, or -1. */
static int fz_nth_held(struct fz *f, int ci, u32 i)
{
	u32 n = 0, r, want;

	for (r = 0; r < f->pool.nr_rows; r++)
		n += f->pool.rows[r].state == KVP_ROW_HELD &&
		     (ci < 0 || f->pool.rows[r].owner == &f->cli[ci]);
	if (!n)
		return -1;
	want = i % n;
	for (r = 0; r < f->pool.nr_rows; r++) {
		if (f->pool.rows[r].state != KVP_ROW_HELD ||
		    (ci >= 0 && f->pool.rows[r].owner != &f->cli[ci]))
			continue;
		if (!want--)
			return (int)r;
	}
	return -1;
}

/*
 * ---- input format: the codes of the argument bytes --------------------
 *
 * gen-corpus.py reads these enums (and FZ_OPS, fz_pts) from this file to
 * encode its scenarios: the numbers are written here only.
 */

/* The header, fz_setup(): b0's bits, and b3's row_tokens rule. */
enum fz_header_code {
	FZ_HDR_PT = 7,			/* fz_pts[b0 & 7] */
	FZ_HDR_RESERVE_ZERO = 8,
	FZ_HDR_GEN_WRAP = 16,		/* generations start near 2^32 */
	FZ_HDR_EPOCH_WRAP = 32,		/* so does the batch epoch */
	FZ_HDR_FOUR = 64,		/* four clients, else three */
	FZ_HDR_TENANTS = 128,		/* in two tenants, else one */
	FZ_HDR_RT_SHIFT = 6,		/* b3 >> 6, see fz_setup() */
};

/* op_handles(): RELEASE's flag byte. */
enum fz_release_code {
	FZ_REL_DONATE = 1,	/* < FZ_REL_ODD: this bit is RELEASE_DONATE */
	FZ_REL_ODD = 0xc0,	/* FZ_REL_ODD | one of the next four */
	FZ_REL_ODD_2 = 0,	/* flags 2 */
	FZ_REL_ODD_3 = 1,	/* flags 3 */
	FZ_REL_ODD_HIGH = 2,	/* flags 0x80000000 */
	FZ_REL_ODD_RAW = 3,	/* a u32 of flags follows */
};

/* The bytes of single ops: reattach, export, import, geom_check. */
enum fz_op_code {
	FZ_REATTACH_STAY_CLOSED = 1,	/* b & 1: the client stays closed */
	FZ_EXPORT_SLOT = 1,		/* m & 1: a slot (session), else a row */
	FZ_IMPORT_NOT_EXPORTED = 0x80,	/* i & 0x80: a row never exported */
	FZ_GEOM_U32 = 1,		/* b & 1: a u32 follows, else a byte */
	FZ_GEOM_ODD_FLAG = 0xf0,	/* fl >= 0xf0: flag 1 << (fl & 15) */
};

/* dec_handle(): m & FZ_H_MODE picks the row, m >> FZ_GEN_SHIFT the tweak. */
enum fz_handle_code {
	FZ_H_OWN = 0,		/* 0-3: the i-th row the caller holds */
	FZ_H_KNOWN = 4,		/* 4-5: the i-th handle seen so far */
	FZ_H_ANY = 6,		/* the i-th held row of any client */
	FZ_H_RAW = 7,		/* two bytes, or two u32 with FZ_H_RAW32 */
	FZ_H_MODE = 7,
	FZ_GEN_SHIFT = 3,
	FZ_H_RAW32 = 0x80,
};

/* dec_handle(): the generation's tweak, (m >> FZ_GEN_SHIFT) & 15. */
enum fz_gen_code {
	FZ_GEN_SAME = 0,
	FZ_GEN_FAR = 11,	/* + 2^31 - 1: the farthest ahead */
	FZ_GEN_PLUS5 = 12,	/* + 5: not issued yet */
	FZ_GEN_HALF = 13,	/* + 2^31: as far behind as ahead */
	FZ_GEN_NEXT = 14,	/* + 1: not issued yet */
	FZ_GEN_PREV = 15,	/* - 1: stale */
};

/* dec_len(): m & 7 the base, (m >> FZ_ADJ_SHIFT) & 3 what d does. */
enum fz_len_base {
	FZ_LEN_ZERO, FZ_LEN_ALLOCATED, FZ_LEN_COMMITTED, FZ_LEN_PROTECTED,
	FZ_LEN_SWA_EVICTED, FZ_LEN_ROW_TOKENS, FZ_LEN_PAGE_UP,
	FZ_LEN_RAW,		/* a u32 follows, no d */
};

enum fz_len_adj {
	FZ_ADJ_PLUS,		/* + d */
	FZ_ADJ_PAGES,		/* + d pages */
	FZ_ADJ_MINUS,		/* - d */
	FZ_ADJ_PAGES_M1,	/* + d pages - 1 */
	FZ_ADJ_SHIFT = 3,
};

/* dec_count(): b < FZ_COUNT_SPECIAL is 1 + (b & 7), else these. */
enum fz_count_code {
	FZ_COUNT_SPECIAL = 0xf0,
	FZ_COUNT_ZERO = 0xf0,
	FZ_COUNT_MAX = 0xf1,	/* max_batch */
	FZ_COUNT_MAX1 = 0xf2,	/* max_batch + 1 */
	FZ_COUNT_HUGE = 0xf3,	/* U32_MAX */
	/* 0xf4..0xff: 1 + (b & 15) */
};

/* dec_page(): m & 7; FZ_P_RAW has a u32, the others a byte i. */
enum fz_page_code {
	FZ_P_OWN = 0,		/* 0-2: a page of the caller's cache */
	FZ_P_ANY_CACHE = 3,	/* of any client's cache */
	FZ_P_MAPPED = 4,	/* one a row of the caller maps */
	FZ_P_SMALL = 5,		/* i % (nr_pages + 2) */
	FZ_P_ZERO_NONE = 6,	/* i & 1 ? KVPOOL_PAGE_NONE : 0 */
	FZ_P_RAW = 7,
};

/* dec_page_list(): pm & FZ_PL_SEQ: the cache from pm >> 1, else dec_page()s. */
enum fz_page_list_code {
	FZ_PL_EACH = 0,
	FZ_PL_SEQ = 1,
};

/*
 * dec_session(): b & FZ_S_OWN a slot of the caller (b & 0x7f), b <
 * FZ_S_SPECIAL the id b & 15, else FZ_S_SPECIAL | one of fz_session_special.
 */
enum fz_session_code {
	FZ_S_SPECIAL = 0x70,
	FZ_S_OWN = 0x80,
};

enum fz_session_special {
	FZ_SS_ALL_ONES, FZ_SS_TOP_BIT, FZ_SS_GOLDEN, FZ_SS_64, FZ_SS_BIT58,
	FZ_SS_RAW,		/* a u64 follows */
	FZ_SS_ANY_SLOT,		/* a slot of any client */
	FZ_SS_0X10000,
};

/* dec_cap(): b & 3; the rest of b is v = b >> FZ_CAP_SHIFT. */
enum fz_cap_code {
	FZ_CAP_ALL,		/* ~0U */
	FZ_CAP_SMALL,		/* v */
	FZ_CAP_NEED,		/* what is needed + (v & 3) - 1 */
	FZ_CAP_ZERO,
	FZ_CAP_SHIFT = 2,
};

/*
 * A handle. m & 7: 0-3 a row the caller holds, 4-5 any handle seen so
 * far (others', released, stale), 6 any held row of any client, 7 garbage
 * (m & 0x80: two raw u32, else two bytes). (m >> 3) & 15 moves the
 * generation: 14 +1 and 12 +5 (not issued yet), 11 +2^31 - 1 (the
 * farthest ahead the wrap-around compare sees), 15 -1 (stale), 13 +2^31
 * (as far behind as ahead: stale).
 */
static struct kvpool_handle dec_handle(struct fz *f, struct fz_in *in)
{
	u8 m = rd8(in);
	u8 mode = m & FZ_H_MODE, tweak = (m >> FZ_GEN_SHIFT) & 15;
	struct kvpool_handle h = { 0, 0 };
	int r = -1;
	u8 i;

	if (mode == FZ_H_RAW) {
		if (m & FZ_H_RAW32) {
			h.req_pool_idx = rd32(in);
			h.generation = rd32(in);
		} else {
			h.req_pool_idx = rd8(in);
			h.generation = rd8(in);
		}
		return h;
	}
	i = rd8(in);
	if (mode < FZ_H_KNOWN)
		r = fz_nth_held(f, f->ci, i);
	else if (mode == FZ_H_ANY)
		r = fz_nth_held(f, -1, i);
	else if (f->nknown)
		h = f->known[i % f->nknown];
	else
		r = fz_nth_held(f, f->ci, i);
	if (r >= 0) {
		h.req_pool_idx = (u32)r;
		h.generation = f->pool.rows[r].gen;
	} else if (mode != FZ_H_KNOWN && mode != FZ_H_KNOWN + 1) {
		h.req_pool_idx = i % (f->pool.nr_rows + 1);
		h.generation = 1;
	}
	switch (tweak) {
	case FZ_GEN_FAR:
		h.generation += 0x7fffffffU;
		break;
	case FZ_GEN_PLUS5:
		h.generation += 5;
		break;
	case FZ_GEN_HALF:
		h.generation += 0x80000000U;
		break;
	case FZ_GEN_NEXT:
		h.generation++;
		break;
	case FZ_GEN_PREV:
		h.generation--;
		break;
	}
	return h;
}

/*
 * A length for row @h (its current lengths if it names a row). m & 7
 * picks the base: 0 zero, 1 allocated, 2 committed, 3 protected,
 * 4 swa_evicted, 5 row_tokens, 6 allocated rounded up to a page, 7 a raw
 * u32 (no second byte); (m >> 3) & 3 what the second byte d does:
 * + d, + d pages, - d, + d pages - 1.
 */
static u32 dec_len(struct fz *f, struct fz_in *in, struct kvpool_handle h)
{
	static const struct kvp_row zero;
	const struct kvp_row *r = h.req_pool_idx < f->pool.nr_rows ?
				  &f->pool.rows[h.req_pool_idx] : &zero;
	u32 pt = f->pool.page_tokens;
	u8 m = rd8(in);
	u32 base, d;

	switch (m & 7) {
	case FZ_LEN_ZERO:
		base = 0;
		break;
	case FZ_LEN_ALLOCATED:
		base = r->allocated;
		break;
	case FZ_LEN_COMMITTED:
		base = r->committed;
		break;
	case FZ_LEN_PROTECTED:
		base = r->protected;
		break;
	case FZ_LEN_SWA_EVICTED:
		base = r->swa_evicted;
		break;
	case FZ_LEN_ROW_TOKENS:
		base = f->pool.row_tokens;
		break;
	case FZ_LEN_PAGE_UP:
		base = kvp_pages_for(&f->pool, r->allocated) * pt;
		break;
	default:	/* FZ_LEN_RAW */
		return rd32(in);
	}
	d = rd8(in);
	switch ((m >> FZ_ADJ_SHIFT) & 3) {
	case FZ_ADJ_PLUS:
		return base + d;
	case FZ_ADJ_PAGES:
		return base + d * pt;
	case FZ_ADJ_MINUS:
		return base - d;
	default:	/* FZ_ADJ_PAGES_M1 */
		return base + d * pt - 1;
	}
}

/*
 * A batch count: 1..8 mostly; 0xf0.. give 0, max_batch, max_batch + 1,
 * U32_MAX and 5..16.
 */
static u32 dec_count(struct fz *f, struct fz_in *in)
{
	u8 b = rd8(in);

	switch (b) {
	case 0 ... FZ_COUNT_SPECIAL - 1:
		return 1 + (b & 7);
	case FZ_COUNT_ZERO:
		return 0;
	case FZ_COUNT_MAX:
		return f->pool.max_batch;
	case FZ_COUNT_MAX1:
		return f->pool.max_batch + 1;
	case FZ_COUNT_HUGE:
		return U32_MAX;
	default:
		return 1 + (b & 15);
	}
}

/* Entries to allocate for @count: a huge count gets one, never read. */
static u32 fz_array_len(u32 count)
{
	return count && count <= FZ_MAX_ARRAY ? count : 1;
}

/* Entries to decode: none when the core must refuse the count unread. */
static u32 fz_decode_len(struct fz *f, u32 count)
{
	return count <= f->pool.max_batch && count <= FZ_MAX_ARRAY ? count : 0;
}

static u32 fz_pick_cache_page(struct fz *f, int ci, u32 i)
{
	u32 n = 0, k;

	if (ci >= 0) {
		n = f->cli[ci].nr_cache_pages;
		return n ? f->cli[ci].cache[i % n].page : KVPOOL_PAGE_NONE;
	}
	for (k = 0; k < f->ncli; k++)
		if (f->attached[k])
			n += f->cli[k].nr_cache_pages;
	if (!n)
		return KVPOOL_PAGE_NONE;
	i %= n;
	for (k = 0; k < f->ncli; k++) {
		if (!f->attached[k])
			continue;
		if (i < f->cli[k].nr_cache_pages)
			return f->cli[k].cache[i].page;
		i -= f->cli[k].nr_cache_pages;
	}
	return KVPOOL_PAGE_NONE;
}

/*
 * A page id. m & 7: 0-2 a page of the caller's cache, 3 of any cache,
 * 4 a page a row of the caller maps, 5 small id, 6 0 or PAGE_NONE, 7 raw
 * u32 (no second byte).
 */
static u32 dec_page(struct fz *f, struct fz_in *in)
{
	u8 m = rd8(in);
	u32 i, id, r, n;

	if ((m & 7) == FZ_P_RAW)
		return rd32(in);
	i = rd8(in);
	switch (m & 7) {
	case FZ_P_OWN ... FZ_P_ANY_CACHE - 1:
		id = fz_pick_cache_page(f, f->ci, i);
		return id != KVPOOL_PAGE_NONE ? id : i % f->pool.nr_pages;
	case FZ_P_ANY_CACHE:
		id = fz_pick_cache_page(f, -1, i);
		return id != KVPOOL_PAGE_NONE ? id : i % f->pool.nr_pages;
	case FZ_P_MAPPED:
		n = 0;
		for (r = 0; r < f->pool.nr_rows; r++)
			if (f->pool.rows[r].owner == &f->cli[f->ci])
				n += f->pool.rows[r].nr;
		if (!n)
			return i % f->pool.nr_pages;
		i %= n;
		for (r = 0; r < f->pool.nr_rows; r++) {
			const struct kvp_row *row = &f->pool.rows[r];

			if (row->owner != &f->cli[f->ci])
				continue;
			if (i < row->nr)
				return row->pages[i];
			i -= row->nr;
		}
		return 0;
	case FZ_P_SMALL:
		return i % (f->pool.nr_pages + 2);
	default:	/* FZ_P_ZERO_NONE */
		return (i & 1) ? KVPOOL_PAGE_NONE : 0;
	}
}

/* The session of the i-th slot (mod their number) of @c, or none. */
static bool fz_nth_slot(struct fz *f, const struct kvp_client *c, u32 i,
			u64 *session)
{
	u32 n = 0, r;

	for (r = 0; r < f->pool.nr_rows; r++)
		n += f->pool.rows[r].state == KVP_ROW_SLOT &&
		     (!c || f->pool.rows[r].owner == c);
	if (!n)
		return false;
	i %= n;
	for (r = 0; r < f->pool.nr_rows; r++) {
		if (f->pool.rows[r].state != KVP_ROW_SLOT ||
		    (c && f->pool.rows[r].owner != c))
			continue;
		if (!i--) {
			*session = f->pool.rows[r].session;
			return true;
		}
	}
	return false;
}

/*
 * A session id. b & 0x80: a slot the caller has; b < 0x70: 0..15 (they
 * share hash buckets now and then); else special values, a raw u64 or a
 * slot of any client.
 */
static u64 dec_session(struct fz *f, struct fz_in *in)
{
	u8 b = rd8(in);
	u64 s;

	if (b & FZ_S_OWN)
		return fz_nth_slot(f, &f->cli[f->ci], b & 0x7f, &s) ? s :
		       b & 15;
	if (b < FZ_S_SPECIAL)
		return b & 15;
	switch (b & 7) {
	case FZ_SS_ALL_ONES:
		return ~0ULL;
	case FZ_SS_TOP_BIT:
		return 1ULL << 63;
	case FZ_SS_GOLDEN:
		return 0x9e3779b97f4a7c15ULL;
	case FZ_SS_64:
		return 64;
	case FZ_SS_BIT58:
		return 1ULL << 58;
	case FZ_SS_RAW:
		return rd64(in);
	case FZ_SS_ANY_SLOT:
		return fz_nth_slot(f, NULL, b, &s) ? s : 6;
	default:	/* FZ_SS_0X10000 */
		return 0x10000;
	}
}

/* pages_cap: b & 3: ~0U, b >> 2, @need + (b >> 2 & 3) - 1, 0. */
static u32 dec_cap(struct fz_in *in, u64 need)
{
	u8 b = rd8(in);

	switch (b & 3) {
	case FZ_CAP_ALL:
		return ~0U;
	case FZ_CAP_SMALL:
		return b >> FZ_CAP_SHIFT;
	case FZ_CAP_NEED:
		return (u32)(need + ((b >> FZ_CAP_SHIFT) & 3) - 1);
	default:	/* FZ_CAP_ZERO */
		return 0;
	}
}

/* ---- the model: what the ABI says an op must return ------------------- */

static struct kvp_client *fz_cur(struct fz *f)
{
	return &f->cli[f->ci];
}

/*
 * ENOENT / ESTALE / 0 for handle @h of the current client, from before.
 * A generation newer than the row's (with wrap-around: up to 2^31 - 1
 * ahead) was never issued and names nothing, ENOENT; an older one is an
 * earlier use of the row, ESTALE.
 */
static int model_lookup(struct fz *f, struct kvpool_handle h)
{
	const struct fz_rsnap *r;

	if (h.req_pool_idx >= f->pool.nr_rows)
		return -ENOENT;
	r = &f->before.rows[h.req_pool_idx];
	if (r->state != KVP_ROW_HELD || r->owner != f->ci)
		return -ENOENT;
	if (r->gen != h.generation)
		return (s32)(h.generation - r->gen) > 0 ? -ENOENT : -ESTALE;
	return 0;
}

/*
 * SWA_FREE freed pages above protected: the row's start has holes, is no
 * prefix, and may not be donated (DONATE, RELEASE_DONATE: EINVAL).
 */
static bool model_holed(const struct fz_rsnap *r)
{
	return r->swa > r->protected;
}

/*
 * A batch of handles at @stride: the first entry whose lookup fails or
 * that names a row again. Sets *@idx; 0 when all are fine.
 */
static int model_lookup_batch(struct fz *f, const void *entries,
			      size_t stride, u32 count, u32 *idx)
{
	u8 seen[FZ_MAX_ROWS] = { 0 };
	u32 i;
	int e;

	*idx = ~0U;
	if (!count || count > f->pool.max_batch)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		const struct kvpool_handle *h = (const void *)
			((const char *)entries + i * stride);

		e = model_lookup(f, *h);
		if (!e && seen[h->req_pool_idx])
			e = -EINVAL;
		if (e) {
			*idx = i;
			return e;
		}
		seen[h->req_pool_idx] = 1;
	}
	return 0;
}

static const struct fz_rsnap *fz_brow(struct fz *f, struct kvpool_handle h)
{
	return &f->before.rows[h.req_pool_idx];
}

static u32 fz_pages_for(struct fz *f, u32 tokens)
{
	return kvp_pages_for(&f->pool, tokens);
}

/* Pages row @idx owns (by the before snapshot) among positions [lo, hi). */
static u32 fz_owned(struct fz *f, u32 idx, u32 lo, u32 hi)
{
	const struct fz_rsnap *r = &f->before.rows[idx];
	u32 n = 0, p;

	for (p = lo; p < hi && p < r->nr; p++)
		n += r->pages[p] != KVPOOL_PAGE_NONE &&
		     f->before.pages[r->pages[p]].owner == idx;
	return n;
}

/*
 * The header promises that out_error_index names the first bad entry.
 * The core checks every handle of a batch before any length, so with a
 * bad length in entry i and a bad handle in entry j > i it names j. Noted
 * once (a finding only with KVP_FUZZ_STRICT=1).
 */
static void check_first_bad(struct fz *f, u32 named, u32 first_bad)
{
	if (named == first_bad || first_bad == ~0U)
		return;
	if (fz_strict)
		fz_finding(f, "out_error_index %u, but entry %u is bad already",
			   named, first_bad);
	if (!fz_noted_first_bad) {
		fz_noted_first_bad = true;
		fprintf(stderr,
			"kvpool-fuzz: note: a batch error named entry %u while entry %u was bad already (header: \"names the first bad entry\"); KVP_FUZZ_STRICT=1 makes this a finding\n",
			named, first_bad);
	}
}

/* ---- checks every op gets ---------------------------------------------- */

/* Expected moves of STATS; evictable and pinned only as their sum unless @split. */
struct fz_delta {
	int free_pages, row_pages, slot_pages, cache, pinned;
	int free_rows, held_rows, slot_rows, export_rows, export_pages;
	int c_rows, c_slots, c_pages, c_cache;
	bool split;
};

static void fz_check_stats(struct fz *f, const struct fz_delta *d)
{
	u32 i;

	for (i = 0; i < f->ncli; i++) {
		const struct kvpool_stats *b = &f->before.st[i];
		const struct kvpool_stats *a = &f->after.st[i];
		bool me = (int)i == f->ci;

		if (!f->before.cli[i].attached || !f->after.cli[i].attached)
			continue;
		FZ_EQ(f, a->out_free_pages, b->out_free_pages + d->free_pages);
		FZ_EQ(f, a->out_row_pages, b->out_row_pages + d->row_pages);
		FZ_EQ(f, a->out_slot_pages, b->out_slot_pages + d->slot_pages);
		FZ_EQ(f, a->out_cache_evictable + a->out_cache_pinned,
		      b->out_cache_evictable + b->out_cache_pinned + d->cache);
		if (d->split)
			FZ_EQ(f, a->out_cache_pinned,
			      b->out_cache_pinned + d->pinned);
		FZ_EQ(f, a->out_reserved_pages, b->out_reserved_pages);
		FZ_EQ(f, a->out_free_rows, b->out_free_rows + d->free_rows);
		FZ_EQ(f, a->out_held_rows, b->out_held_rows + d->held_rows);
		FZ_EQ(f, a->out_slot_rows, b->out_slot_rows + d->slot_rows);
		FZ_EQ(f, a->out_reserved_rows, b->out_reserved_rows);
		FZ_EQ(f, a->out_nr_clients, b->out_nr_clients);
		FZ_EQ(f, a->out_export_rows, b->out_export_rows + d->export_rows);
		FZ_EQ(f, a->out_export_pages,
		      b->out_export_pages + d->export_pages);
		FZ_EQ(f, a->out_client_rows, b->out_client_rows +
		      (me ? d->c_rows : 0));
		FZ_EQ(f, a->out_client_slots, b->out_client_slots +
		      (me ? d->c_slots : 0));
		FZ_EQ(f, a->out_client_pages, b->out_client_pages +
		      (me ? d->c_pages : 0));
		FZ_EQ(f, a->out_client_cache_pages,
		      b->out_client_cache_pages + (me ? d->c_cache : 0));
	}
}

static void fz_verify(struct fz *f)
{
	u32 bad = ~0U, i, p;
	int ret = kvp_verify_locked(&f->pool, &bad);

	if (ret || bad)
		fz_finding(f, "kvp_verify_locked: ret %d, %u violations%s",
			   ret, bad, kvp_user_verbose ? " (above)" : "");
	/*
	 * A prefix is cached whole or not at all: SWA_FREE never frees below
	 * protected and a holed row donates nothing, so no row has a hole
	 * among the pages it protects (what ATTACH_PREFIX would map).
	 */
	for (i = 0; i < f->pool.nr_rows; i++) {
		const struct kvp_row *r = &f->pool.rows[i];

		for (p = 0; p < r->protected / f->pool.page_tokens &&
		     p < r->nr; p++)
			if (r->pages[p] == KVPOOL_PAGE_NONE)
				fz_finding(f, "row %u: protected %u, page %u is a hole",
					   i, r->protected, p);
	}
}

static const char *fz_err(int ret)
{
	static const struct { int e; const char *name; } names[] = {
		{ 0, "0" }, { -EINVAL, "EINVAL" }, { -ENOENT, "ENOENT" },
		{ -ESTALE, "ESTALE" }, { -ENOSPC, "ENOSPC" },
		{ -ENOBUFS, "ENOBUFS" }, { -EEXIST, "EEXIST" },
		{ -EALREADY, "EALREADY" }, { -EBUSY, "EBUSY" },
		{ -EOPNOTSUPP, "EOPNOTSUPP" }, { -ENOMEM, "ENOMEM" },
		{ -EDQUOT, "EDQUOT" },
	};
	static char buf[16];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == ret)
			return names[i].name;
	snprintf(buf, sizeof(buf), "%d", ret);
	return buf;
}

/* Before an op: snapshot, and arm the injected allocation failure. */
static void fz_begin(struct fz *f)
{
	fz_snap(f, &f->before);
	f->injected = false;
	f->fail_at = 0;
	if (f->pending_fail) {
		f->fail_at = kvp_user_nr_allocs + f->pending_fail;
		kvp_user_fail_nth = f->fail_at;
		f->pending_fail = 0;
	}
}

/*
 * After an op that returned @ret where the model expected @want: disarm,
 * check the errno, and that a failure changed nothing.
 */
static void fz_end(struct fz *f, int ret, int want)
{
	const char *d;

	if (f->fail_at) {
		f->injected = kvp_user_nr_allocs >= f->fail_at;
		kvp_user_fail_nth = 0;
	}
	fz_log(f, "ret %s (model %s)%s", fz_err(ret), fz_err(want),
	       f->injected ? " [allocation failure injected]" : "");
	if (f->injected && ret != -ENOMEM)
		fz_finding(f, "an allocation failed, yet the op returned %d", ret);
	if (!f->injected && ret == -ENOMEM)
		fz_finding(f, "ENOMEM without an allocation failure");
	if (!f->injected && ret != want)
		fz_finding(f, "returned %d, the ABI's rules say %d", ret, want);
	fz_snap(f, &f->after);
	if (ret) {
		d = fz_snap_diff(f, &f->before, &f->after);
		if (*d)
			fz_finding(f, "failed with %d but changed %s", ret, d);
	}
	fz_verify(f);
}

/* ---- the ops ------------------------------------------------------------ */

/* The current client's tenant, as it was before the op. */
static const struct fz_tsnap *model_tenant(struct fz *f)
{
	return &f->before.tenants[f->before.cli[f->ci].tenant];
}

static u32 model_unmet(const struct fz_tsnap *t)
{
	return t->min_pages > t->pages ? t->min_pages - t->pages : 0;
}

/* Free pages the current client may take: others' guarantees kept. */
static u32 model_available(struct fz *f)
{
	u32 others = f->before.unmet - model_unmet(model_tenant(f));

	return f->before.free_pages > others ?
	       f->before.free_pages - others : 0;
}

static void op_alloc(struct fz *f, struct fz_in *in)
{
	u32 count = dec_count(f, in);
	struct kvpool_handle *h = calloc(fz_array_len(count), sizeof(*h));
	u32 i, j, sh = 0xdeadbeef;
	struct fz_delta d = { 0 };
	int ret, want = 0;

	const struct fz_tsnap *t;
	u64 over = 0;

	fz_begin(f);
	t = model_tenant(f);
	if (t->max_rows)
		over = (u64)t->rows + count;
	if (!count || count > f->pool.max_batch)
		want = -EINVAL;
	else if (t->max_rows && over > t->max_rows)
		want = -EDQUOT;
	else if (count > f->before.free_rows)
		want = -ENOSPC;
	ret = kvp_row_alloc_locked(fz_cur(f), h, count, &sh);
	fz_log(f, "count %u", count);
	fz_end(f, ret, want);
	if (ret == -ENOSPC)
		FZ_EQ(f, sh, count - f->before.free_rows);
	if (ret == -EDQUOT)
		FZ_EQ(f, sh, over - t->max_rows);
	if (ret)
		goto out;
	for (i = 0; i < count; i++) {
		const struct fz_rsnap *b = &f->before.rows[h[i].req_pool_idx];
		const struct kvp_row *r;

		FZ_CHECK(f, h[i].req_pool_idx < f->pool.nr_rows, "row %u",
			 h[i].req_pool_idx);
		r = &f->pool.rows[h[i].req_pool_idx];
		FZ_EQ(f, b->state, KVP_ROW_FREE);
		FZ_EQ(f, r->state, KVP_ROW_HELD);
		FZ_CHECK(f, r->owner == fz_cur(f), "row %u", h[i].req_pool_idx);
		FZ_EQ(f, h[i].generation, r->gen);
		FZ_EQ(f, r->gen, b->gen + 1 == 0 ? 1 : b->gen + 1);
		FZ_CHECK(f, !r->allocated && !r->committed && !r->protected &&
			 !r->swa_evicted && !r->nr, "row %u not empty",
			 h[i].req_pool_idx);
		for (j = 0; j < i; j++)
			FZ_CHECK(f, h[j].req_pool_idx != h[i].req_pool_idx,
				 "row %u handed out twice", h[i].req_pool_idx);
		fz_known_add(f, h[i]);
	}
	d.free_rows = -(int)count;
	d.held_rows = count;
	d.c_rows = count;
	fz_check_stats(f, &d);
out:
	free(h);
}

/*
 * EXTEND as the driver runs it (kvpd_extend_locked()): the big arrays
 * asked for by the start are allocated "without the lock" and the start
 * run again, up to three times, then the steps.
 */
static int fz_extend(struct kvp_client *c, struct kvpool_extend_entry *e,
		     u32 count, u32 cap, struct kvp_extend_result *res)
{
	struct kvp_extend_mem mem = { 0 };
	struct kvp_op op;
	int tries, ret;

	for (tries = 0; ; tries++) {
		ret = kvp_extend_start_locked(c, e, count, cap, NULL, 0, res,
					      &op, tries < 3 ? &mem : NULL);
		if (ret != KVP_EXTEND_NEED_MEM)
			break;
		ret = kvp_extend_mem_get(&mem);
		if (ret)
			break;
	}
	kvp_extend_mem_put(&mem);
	while (!ret && kvp_op_step_locked(&op))
		;
	return ret;
}

/* Bad entries by the value rules of each len-entry op, from before. */
static int extend_value(struct fz *f, const struct kvpool_extend_entry *e)
{
	const struct fz_rsnap *r = fz_brow(f, e->handle);

	return e->new_len < r->allocated || e->new_len > f->pool.row_tokens ?
	       -EINVAL : 0;
}

static void op_extend(struct fz *f, struct fz_in *in)
{
	u32 count = dec_count(f, in), n = fz_decode_len(f, count);
	struct kvpool_extend_entry *e = calloc(fz_array_len(count), sizeof(*e));
	struct kvp_extend_result res;
	struct fz_delta d = { 0 };
	const struct fz_tsnap *t;
	u32 i, j, k, cap, idx, first_bad = ~0U, avail, low = 0;
	u64 need = 0;
	int ret, want;

	for (i = 0; i < n; i++) {
		e[i].handle = dec_handle(f, in);
		e[i].new_len = dec_len(f, in, e[i].handle);
		e[i].out_nr_new = 0xdeadbeef;
	}
	fz_begin(f);
	want = model_lookup_batch(f, e, sizeof(*e), count, &idx);
	for (i = 0; i < n; i++) {
		u32 li;

		if (model_lookup_batch(f, e, sizeof(*e), i + 1, &li) ||
		    extend_value(f, &e[i])) {
			first_bad = i;
			break;
		}
	}
	for (i = 0; !want && i < count; i++) {
		want = extend_value(f, &e[i]);
		if (want)
			idx = i;
		else
			need += fz_pages_for(f, e[i].new_len) -
				fz_brow(f, e[i].handle)->nr;
	}
	cap = dec_cap(in, need);
	t = model_tenant(f);
	avail = model_available(f);
	if (!want && need > cap)
		want = -ENOBUFS;
	else if (!want && need && t->max_pages &&
		 t->pages + need > t->max_pages)
		want = -EDQUOT;	/* growth only: a limit below use takes nothing */
	else if (!want && need > avail)
		want = -ENOSPC;
	ret = fz_extend(fz_cur(f), e, count, cap, &res);
	fz_log(f, "count %u cap %u need %llu: %u@%u/%u ...", count, cap,
	       (unsigned long long)need, n ? e[0].handle.req_pool_idx : 0,
	       n ? e[0].handle.generation : 0, n ? e[0].new_len : 0);
	fz_end(f, ret, want);
	if (ret) {
		FZ_CHECK(f, !res.pages, "pages left on error");
		if (ret != -ENOMEM)
			FZ_EQ(f, res.error_index, idx);
		if (want == -EINVAL || want == -ENOENT || want == -ESTALE)
			check_first_bad(f, res.error_index, first_bad);
		if (ret == -ENOBUFS)
			FZ_EQ(f, res.nr_pages, need);
		if (ret == -ENOSPC)
			FZ_EQ(f, res.shortfall, need - avail);
		if (ret == -EDQUOT)
			FZ_EQ(f, res.shortfall, t->pages + need - t->max_pages);
		/* out_nr_new is scratch on error: the driver copies none back. */
		goto out;
	}
	FZ_EQ(f, res.nr_pages, need);
	for (i = 0, k = 0; i < count; i++) {
		u32 ri = e[i].handle.req_pool_idx;
		const struct fz_rsnap *b = &f->before.rows[ri];
		const struct kvp_row *r = &f->pool.rows[ri];
		u32 want_nr = fz_pages_for(f, e[i].new_len);

		FZ_EQ(f, r->allocated, e[i].new_len);
		FZ_EQ(f, r->nr, want_nr);
		FZ_EQ(f, e[i].out_nr_new, want_nr - b->nr);
		FZ_EQ(f, r->committed, b->committed);
		FZ_EQ(f, r->protected, b->protected);
		FZ_EQ(f, r->swa_evicted, b->swa);
		FZ_CHECK(f, fz_same(r->pages, b->pages, b->nr),
			 "row %u: old pages moved", ri);
		for (j = b->nr; j < want_nr; j++, k++) {
			u32 id = r->pages[j];

			FZ_EQ(f, res.pages[k], id);
			FZ_CHECK(f, id < f->pool.nr_pages, "page %u", id);
			FZ_EQ(f, f->before.pages[id].owner, KVP_OWNER_FREE);
			FZ_EQ(f, f->pool.pages[id].owner, ri);
			/* Lowest first: every free page below it was taken. */
			for (; low < id; low++)
				FZ_CHECK(f, f->before.pages[low].owner !=
					 KVP_OWNER_FREE ||
					 f->pool.pages[low].owner !=
					 KVP_OWNER_FREE, "page %u skipped", low);
			low = id + 1;
		}
	}
	FZ_EQ(f, k, need);
	d.free_pages = -(int)need;
	d.row_pages = need;
	d.c_pages = need;
	fz_check_stats(f, &d);
out:
	kvfree(res.pages);
	free(e);
}

enum fz_len_op { LEN_COMMIT, LEN_DONATE, LEN_SWA };

static int len_value(struct fz *f, enum fz_len_op op,
		     const struct kvpool_len_entry *e)
{
	const struct fz_rsnap *r = fz_brow(f, e->handle);

	switch (op) {
	case LEN_COMMIT:
		return e->__reserved || e->len < r->committed ||
		       e->len > r->allocated ? -EINVAL : 0;
	case LEN_DONATE:
		/* A holed row is EINVAL whatever the length. */
		if (e->__reserved || e->len > r->committed || model_holed(r))
			return -EINVAL;
		return e->len <= r->protected ? -EALREADY : 0;
	default:
		return e->__reserved || e->len > r->committed ||
		       e->len < r->protected || e->len < r->swa ? -EINVAL : 0;
	}
}

/* COMMIT, DONATE and SWA_FREE: batches of struct kvpool_len_entry. */
static void op_len(struct fz *f, struct fz_in *in, enum fz_len_op op)
{
	u32 count = dec_count(f, in), n = fz_decode_len(f, count);
	u32 resv = rd8(in);
	struct kvpool_len_entry *e = calloc(fz_array_len(count), sizeof(*e));
	struct fz_delta d = { 0 };
	u32 pt = f->pool.page_tokens;
	u32 i, p, idx, eidx = 0xdeadbeef, out = 0xdeadbeef, first_bad = ~0U;
	u32 total = 0;
	int ret, want;

	for (i = 0; i < n; i++) {
		e[i].handle = dec_handle(f, in);
		e[i].len = dec_len(f, in, e[i].handle);
		e[i].__reserved = resv == i + 1;
	}
	fz_begin(f);
	want = model_lookup_batch(f, e, sizeof(*e), count, &idx);
	for (i = 0; i < n; i++) {
		u32 li;

		if (model_lookup_batch(f, e, sizeof(*e), i + 1, &li) ||
		    len_value(f, op, &e[i])) {
			first_bad = i;
			break;
		}
	}
	for (i = 0; !want && i < count; i++) {
		want = len_value(f, op, &e[i]);
		if (want)
			idx = i;
	}
	switch (op) {
	case LEN_COMMIT:
		ret = kvp_commit_locked(fz_cur(f), e, count, &eidx);
		break;
	case LEN_DONATE:
		ret = kvp_donate_locked(fz_cur(f), e, count, &out, &eidx);
		break;
	default:
		ret = kvp_swa_free_locked(fz_cur(f), e, count, &out, &eidx);
		break;
	}
	fz_log(f, "count %u: %u@%u len %u ...", count,
	       n ? e[0].handle.req_pool_idx : 0,
	       n ? e[0].handle.generation : 0, n ? e[0].len : 0);
	fz_end(f, ret, want);
	if (ret) {
		if (ret != -ENOMEM)
			FZ_EQ(f, eidx, idx);
		check_first_bad(f, eidx, first_bad);
		goto out;
	}
	for (i = 0; i < count; i++) {
		u32 ri = e[i].handle.req_pool_idx;
		const struct fz_rsnap *b = &f->before.rows[ri];
		const struct kvp_row *r = &f->pool.rows[ri];
		u32 lo, hi;

		FZ_EQ(f, r->allocated, b->allocated);
		FZ_EQ(f, r->nr, b->nr);
		switch (op) {
		case LEN_COMMIT:
			FZ_EQ(f, r->committed, e[i].len);
			FZ_EQ(f, r->protected, b->protected);
			FZ_EQ(f, r->swa_evicted, b->swa);
			break;
		case LEN_DONATE:
			/* Full pages in [protected, len) move to the cache. */
			lo = b->protected / pt;
			hi = e[i].len / pt;
			FZ_EQ(f, r->committed, b->committed);
			FZ_EQ(f, r->protected, hi * pt > b->protected ?
			      hi * pt : b->protected);
			FZ_EQ(f, r->swa_evicted, b->swa);
			total += fz_owned(f, ri, lo, hi);
			for (p = lo; p < hi; p++) {
				u32 id = b->pages[p];

				/* The model let no holed row through. */
				FZ_CHECK(f, id != KVPOOL_PAGE_NONE,
					 "row %u: donated a hole at page %u",
					 ri, p);
				FZ_EQ(f, r->pages[p], id);
				FZ_EQ(f, f->pool.pages[id].owner,
				      KVP_OWNER_CACHE | fz_cur(f)->cidx);
			}
			break;
		default:
			/* Pages wholly below the edge, not below protected. */
			lo = (b->protected > b->swa ? b->protected : b->swa) / pt;
			hi = e[i].len / pt;
			FZ_EQ(f, r->committed, b->committed);
			FZ_EQ(f, r->protected, b->protected);
			FZ_EQ(f, r->swa_evicted, hi * pt > b->swa ?
			      hi * pt : b->swa);
			total += fz_owned(f, ri, lo, hi);
			for (p = lo; p < hi; p++) {
				u32 id = b->pages[p];

				FZ_EQ(f, r->pages[p], KVPOOL_PAGE_NONE);
				if (id != KVPOOL_PAGE_NONE)
					FZ_EQ(f, f->pool.pages[id].owner,
					      KVP_OWNER_FREE);
			}
			break;
		}
	}
	if (op == LEN_DONATE) {
		FZ_EQ(f, out, total);
		d.row_pages = -(int)total;
		d.c_pages = -(int)total;
		d.c_cache = total;
		d.cache = total;
		d.pinned = total;	/* each new cache page pinned by its donor */
		d.split = true;
	} else if (op == LEN_SWA) {
		FZ_EQ(f, out, total);
		d.free_pages = total;
		d.row_pages = -(int)total;
		d.c_pages = -(int)total;
	}
	fz_check_stats(f, &d);
out:
	free(e);
}

/* RELEASE (with flags) and TRIM: batches of handles. */
static void op_handles(struct fz *f, struct fz_in *in, bool release)
{
	u32 flags = 0, fb = release ? rd8(in) : 0;
	u32 count, n, i, p, idx, eidx = 0xdeadbeef, out = 0xdeadbeef;
	u32 pt = f->pool.page_tokens, freed = 0, donated = 0;
	struct kvpool_handle *h;
	struct fz_delta d = { 0 };
	int ret, want;

	if (fb < FZ_REL_ODD) {
		flags = fb & FZ_REL_DONATE ? KVPOOL_RELEASE_DONATE : 0;
	} else {
		switch (fb & 3) {
		case FZ_REL_ODD_2:
			flags = 2;
			break;
		case FZ_REL_ODD_3:
			flags = 3;
			break;
		case FZ_REL_ODD_HIGH:
			flags = 0x80000000U;
			break;
		default:	/* FZ_REL_ODD_RAW */
			flags = rd32(in);
			break;
		}
	}
	count = dec_count(f, in);
	n = fz_decode_len(f, count);
	h = calloc(fz_array_len(count), sizeof(*h));
	for (i = 0; i < n; i++)
		h[i] = dec_handle(f, in);
	fz_begin(f);
	if (release && (flags & ~KVPOOL_RELEASE_DONATE)) {
		want = -EOPNOTSUPP;
		idx = ~0U;
	} else {
		want = model_lookup_batch(f, h, sizeof(*h), count, &idx);
	}
	/* Every handle is good: RELEASE_DONATE refuses the first holed row. */
	for (i = 0; release && !want && (flags & KVPOOL_RELEASE_DONATE) &&
	     i < count; i++) {
		if (model_holed(fz_brow(f, h[i]))) {
			want = -EINVAL;
			idx = i;
		}
	}
	if (release)
		ret = kvp_release_locked(fz_cur(f), h, count, flags, &out,
					 &eidx);
	else
		ret = kvp_trim_locked(fz_cur(f), h, count, &out, &eidx);
	fz_log(f, "flags %#x count %u: %u@%u ...", flags, count,
	       n ? h[0].req_pool_idx : 0, n ? h[0].generation : 0);
	fz_end(f, ret, want);
	if (ret) {
		if (ret != -ENOMEM)
			FZ_EQ(f, eidx, idx);
		FZ_EQ(f, out, 0);
		goto out;
	}
	for (i = 0; i < count; i++) {
		u32 ri = h[i].req_pool_idx;
		const struct fz_rsnap *b = &f->before.rows[ri];
		const struct kvp_row *r = &f->pool.rows[ri];
		u32 keep = fz_pages_for(f, b->committed);
		u32 dn = 0;

		if (!release) {
			FZ_EQ(f, r->state, KVP_ROW_HELD);
			FZ_EQ(f, r->allocated, b->committed);
			FZ_EQ(f, r->committed, b->committed);
			FZ_EQ(f, r->nr, keep);
			FZ_CHECK(f, fz_same(r->pages, b->pages, keep),
				 "row %u: kept pages changed", ri);
			freed += fz_owned(f, ri, keep, b->nr);
			for (p = keep; p < b->nr; p++)
				if (b->pages[p] != KVPOOL_PAGE_NONE)
					FZ_EQ(f, f->pool.pages[b->pages[p]].owner,
					      KVP_OWNER_FREE);
			continue;
		}
		FZ_EQ(f, r->state, KVP_ROW_FREE);
		FZ_CHECK(f, !r->owner && !r->nr && !r->pages, "row %u", ri);
		if (flags & KVPOOL_RELEASE_DONATE) {
			FZ_CHECK(f, !model_holed(b), "row %u: holed, donated",
				 ri);
			dn = fz_owned(f, ri, b->protected / pt,
				      b->committed / pt);
		}
		donated += dn;
		freed += fz_owned(f, ri, 0, b->nr) - dn;
	}
	FZ_EQ(f, out, freed);
	d.free_pages = freed;
	d.row_pages = -(int)(freed + donated);
	d.c_pages = -(int)(freed + donated);
	if (release) {
		d.free_rows = count;
		d.held_rows = -(int)count;
		d.c_rows = -(int)count;
		d.cache = donated;
		d.c_cache = donated;
	}
	fz_check_stats(f, &d);
out:
	free(h);
}

/* Does the current client have a slot @s (before the op)? */
static const struct fz_rsnap *model_slot(struct fz *f, u64 s, u32 *idx)
{
	u32 i;

	for (i = 0; i < f->pool.nr_rows; i++) {
		const struct fz_rsnap *r = &f->before.rows[i];

		if (r->state == KVP_ROW_SLOT && r->owner == f->ci &&
		    r->session == s) {
			*idx = i;
			return r;
		}
	}
	return NULL;
}

static void op_slot(struct fz *f, struct fz_in *in, enum fz_op op)
{
	struct kvpool_handle h = { 0, 0 };
	const struct fz_rsnap *b;
	struct fz_delta d = { 0 };
	u32 npg = 0xdeadbeef, idx = ~0U;
	u64 s;
	int ret, want;

	if (op == OP_TO_SLOT)
		h = dec_handle(f, in);
	s = dec_session(f, in);
	fz_begin(f);
	b = model_slot(f, s, &idx);
	if (op == OP_TO_SLOT) {
		want = model_lookup(f, h);
		if (!want && b)
			want = -EEXIST;
		ret = kvp_to_slot_locked(fz_cur(f), &h, s, &npg);
	} else if (op == OP_FROM_SLOT) {
		want = b ? 0 : -ENOENT;
		ret = kvp_from_slot_locked(fz_cur(f), s, &h, &npg);
	} else {
		want = b ? 0 : -ENOENT;
		ret = kvp_slot_release_locked(fz_cur(f), s, &npg);
	}
	fz_log(f, "session %#llx handle %u@%u", (unsigned long long)s,
	       h.req_pool_idx, h.generation);
	fz_end(f, ret, want);
	if (ret) {
		FZ_EQ(f, npg, 0);
		return;
	}
	if (op == OP_TO_SLOT) {
		const struct kvp_row *r = &f->pool.rows[h.req_pool_idx];
		u32 n = fz_owned(f, h.req_pool_idx, 0, ~0U);

		b = fz_brow(f, h);
		FZ_EQ(f, r->state, KVP_ROW_SLOT);
		FZ_EQ(f, r->session, s);
		FZ_CHECK(f, r->owner == fz_cur(f), "row %u", h.req_pool_idx);
		FZ_CHECK(f, r->nr == b->nr && r->allocated == b->allocated &&
			 r->committed == b->committed &&
			 r->protected == b->protected && r->swa_evicted == b->swa &&
			 fz_same(r->pages, b->pages, b->nr),
			 "row %u changed on its way to the slot", h.req_pool_idx);
		FZ_EQ(f, npg, n);
		d.held_rows = -1;
		d.slot_rows = 1;
		d.c_rows = -1;
		d.c_slots = 1;
		d.row_pages = -(int)n;
		d.slot_pages = n;
	} else if (op == OP_FROM_SLOT) {
		const struct kvp_row *r = &f->pool.rows[idx];
		u32 n = fz_owned(f, idx, 0, ~0U);

		FZ_EQ(f, h.req_pool_idx, idx);
		FZ_EQ(f, h.generation, b->gen + 1 == 0 ? 1 : b->gen + 1);
		FZ_EQ(f, r->gen, h.generation);
		FZ_EQ(f, r->state, KVP_ROW_HELD);
		FZ_CHECK(f, r->nr == b->nr && r->allocated == b->allocated &&
			 r->committed == b->committed &&
			 r->protected == b->protected && r->swa_evicted == b->swa &&
			 fz_same(r->pages, b->pages, b->nr),
			 "row %u changed on its way out of the slot", idx);
		FZ_EQ(f, npg, n);
		fz_known_add(f, h);
		d.held_rows = 1;
		d.slot_rows = -1;
		d.c_rows = 1;
		d.c_slots = -1;
		d.row_pages = n;
		d.slot_pages = -(int)n;
	} else {
		u32 n = fz_owned(f, idx, 0, ~0U);

		FZ_EQ(f, f->pool.rows[idx].state, KVP_ROW_FREE);
		FZ_EQ(f, npg, n);
		d.slot_rows = -1;
		d.free_rows = 1;
		d.c_slots = -1;
		d.slot_pages = -(int)n;
		d.free_pages = n;
		d.c_pages = -(int)n;
	}
	fz_check_stats(f, &d);
}

static void op_query(struct fz *f, struct fz_in *in, bool by_slot)
{
	struct kvpool_row_query q;
	const struct fz_rsnap *b = NULL;
	u32 *pages = (u32 *)0x1, idx = ~0U, n;
	struct fz_delta d = { 0 };
	int ret, want;

	memset(&q, 0, sizeof(q));
	if (by_slot) {
		q.flags = KVPOOL_QUERY_BY_SLOT;
		q.session_id = dec_session(f, in);
	} else {
		q.handle = dec_handle(f, in);
	}
	fz_begin(f);
	if (by_slot) {
		b = model_slot(f, q.session_id, &idx);
		want = b ? 0 : -ENOENT;
	} else {
		want = model_lookup(f, q.handle);
		if (!want) {
			idx = q.handle.req_pool_idx;
			b = fz_brow(f, q.handle);
		}
	}
	q.pages_cap = dec_cap(in, b ? b->nr : 0);
	ret = kvp_row_query_locked(fz_cur(f), &q, &pages);
	fz_log(f, "handle %u@%u session %#llx cap %u", q.handle.req_pool_idx,
	       q.handle.generation, (unsigned long long)q.session_id,
	       q.pages_cap);
	fz_end(f, ret, want);
	if (ret) {
		FZ_CHECK(f, !pages, "pages on error");
		return;
	}
	n = b->nr < q.pages_cap ? b->nr : q.pages_cap;
	FZ_EQ(f, q.out_state, b->state);
	FZ_EQ(f, q.out_nr_pages, b->nr);
	FZ_EQ(f, q.out_req_pool_idx, idx);
	FZ_EQ(f, q.out_allocated_len, b->allocated);
	FZ_EQ(f, q.out_committed_len, b->committed);
	FZ_EQ(f, q.out_protected_len, b->protected);
	FZ_EQ(f, q.out_swa_evicted_len, b->swa);
	FZ_CHECK(f, n ? pages != NULL : pages == NULL, "%u pages", n);
	FZ_CHECK(f, !n || fz_same(pages, b->pages, n),
		 "wrong page list");
	kvfree(pages);
	fz_check_stats(f, &d);
}

/*
 * Page lists of ATTACH_PREFIX and CACHE_EVICT. pm & 1: the caller's cache
 * pages in order from entry pm >> 1 (no more bytes); else one dec_page()
 * per entry.
 */
static void dec_page_list(struct fz *f, struct fz_in *in, u32 *pages, u32 n)
{
	u8 pm = rd8(in);
	struct kvp_client *c = fz_cur(f);
	u32 i;

	for (i = 0; i < n; i++) {
		if (!(pm & FZ_PL_SEQ))
			pages[i] = dec_page(f, in);
		else if (c->nr_cache_pages)
			pages[i] = c->cache[((pm >> 1) + i) %
					    c->nr_cache_pages].page;
		else
			pages[i] = i + 1;
	}
}

/* The before snapshot's cache entry of page @id if the caller's, or NULL. */
static const struct kvp_cache_ent *model_cache_ent(struct fz *f, u32 id)
{
	const struct fz_csnap *cs = &f->before.cli[f->ci];

	if (id >= f->pool.nr_pages ||
	    f->before.pages[id].owner != (KVP_OWNER_CACHE | cs->cidx) ||
	    f->before.pages[id].next >= cs->nr_cache)
		return NULL;
	return &cs->cache[f->before.pages[id].next];
}

static void op_attach(struct fz *f, struct fz_in *in)
{
	struct kvpool_handle h = dec_handle(f, in);
	u8 b = rd8(in);
	u32 rt = f->pool.row_tokens, pt = f->pool.page_tokens;
	u32 nr, i, j, newly = 0;
	struct fz_delta d = { 0 };
	u32 *pages;
	int ret, want;

	/* dec_count()'s codes, 1..32 below them and a row's pages for max */
	if (b < FZ_COUNT_SPECIAL)
		nr = 1 + b % 32;
	else if (b == FZ_COUNT_ZERO)
		nr = 0;
	else if (b == FZ_COUNT_MAX)
		nr = rt / pt;
	else if (b == FZ_COUNT_MAX1)
		nr = rt / pt + 1;
	else if (b == FZ_COUNT_HUGE)
		nr = U32_MAX;
	else
		nr = 1 + (b & 15);
	pages = calloc(fz_array_len(nr), sizeof(u32));
	if (nr <= FZ_MAX_ARRAY)
		dec_page_list(f, in, pages, nr);
	fz_begin(f);
	want = model_lookup(f, h);
	if (!want && (fz_brow(f, h)->allocated || !nr ||
		      (u64)nr * pt > rt))
		want = -EINVAL;
	for (i = 0; !want && i < nr; i++) {
		if (!model_cache_ent(f, pages[i])) {
			want = -ENOENT;
			break;
		}
		for (j = 0; j < i; j++)
			if (pages[j] == pages[i])
				want = -EINVAL;
	}
	ret = kvp_attach_prefix_locked(fz_cur(f), &h, pages, nr);
	fz_log(f, "row %u@%u nr %u: %u ...", h.req_pool_idx, h.generation, nr,
	       nr ? pages[0] : 0);
	fz_end(f, ret, want);
	if (!ret) {
		const struct kvp_row *r = &f->pool.rows[h.req_pool_idx];

		FZ_EQ(f, r->nr, nr);
		FZ_EQ(f, r->allocated, nr * pt);
		FZ_EQ(f, r->committed, nr * pt);
		FZ_EQ(f, r->protected, nr * pt);
		FZ_EQ(f, r->swa_evicted, 0);
		FZ_CHECK(f, fz_same(r->pages, pages, nr),
			 "row %u maps other pages", h.req_pool_idx);
		for (i = 0; i < nr; i++) {
			const struct kvp_cache_ent *ent =
				model_cache_ent(f, pages[i]);

			newly += !ent->pins;
			FZ_EQ(f, f->pool.pages[pages[i]].owner,
			      f->before.pages[pages[i]].owner);
		}
		d.pinned = newly;
		d.split = true;
		fz_check_stats(f, &d);
	}
	free(pages);
}

static void op_evict(struct fz *f, struct fz_in *in)
{
	u32 count = dec_count(f, in), n = fz_decode_len(f, count);
	u32 *pages = calloc(fz_array_len(count), sizeof(u32));
	u32 i, j, idx = ~0U, eidx = 0xdeadbeef;
	struct fz_delta d = { 0 };
	int ret, want = 0;

	dec_page_list(f, in, pages, n);
	fz_begin(f);
	if (!count || count > f->pool.max_batch)
		want = -EINVAL;
	for (i = 0; !want && i < count; i++) {
		const struct kvp_cache_ent *ent = model_cache_ent(f, pages[i]);

		if (!ent) {
			want = -ENOENT;
		} else {
			for (j = 0; j < i; j++)
				if (pages[j] == pages[i])
					want = -EINVAL;
			if (!want && ent->pins)
				want = -EBUSY;
		}
		if (want)
			idx = i;
	}
	ret = kvp_cache_evict_locked(fz_cur(f), pages, count, &eidx);
	fz_log(f, "count %u: %u ...", count, n ? pages[0] : 0);
	fz_end(f, ret, want);
	if (ret) {
		FZ_EQ(f, eidx, idx);
	} else {
		for (i = 0; i < count; i++)
			FZ_EQ(f, f->pool.pages[pages[i]].owner, KVP_OWNER_FREE);
		d.free_pages = count;
		d.cache = -(int)count;
		d.pinned = 0;
		d.split = true;
		d.c_cache = -(int)count;
		fz_check_stats(f, &d);
	}
	free(pages);
}

static void op_stats(struct fz *f)
{
	struct kvpool_stats st;
	struct fz_delta d = { 0 };

	fz_begin(f);
	memset(&st, 0, sizeof(st));
	kvp_stats_locked(fz_cur(f), &st);
	fz_end(f, 0, 0);
	FZ_CHECK(f, !memcmp(&st, &f->before.st[f->ci], sizeof(st)),
		 "STATS differ from a moment ago");
	FZ_EQ(f, st.out_free_pages + st.out_row_pages + st.out_slot_pages +
	      st.out_cache_evictable + st.out_cache_pinned +
	      st.out_reserved_pages + st.out_export_pages, f->pool.nr_pages);
	FZ_EQ(f, st.out_free_rows + st.out_held_rows + st.out_slot_rows +
	      st.out_reserved_rows + st.out_export_rows, f->pool.nr_rows);
	fz_check_stats(f, &d);
}

static int fz_attach(struct fz *f, int i);

/* A client closes (detach); !(b & 1): a new one opens in its place. */
static void op_reattach(struct fz *f, struct fz_in *in)
{
	struct kvp_client *c = fz_cur(f);
	u8 b = rd8(in);
	u32 i;
	int ret;

	if (f->attached[f->ci]) {
		u32 pages = c->nr_pages, cache = c->nr_cache_pages;
		u32 rows = c->nr_rows + c->nr_slots;
		u32 free_pages = f->pool.free_pages;
		u32 free_rows = f->pool.free_rows;

		fz_log(f, "close (%u rows and slots, %u pages, %u cached)",
		       rows, pages, cache);
		/*
		 * As the driver closes: in steps (of 5 pages here: Makefile),
		 * the pool whole between every two, then the detach.
		 */
		while (kvp_client_reclaim_step_locked(c, NULL))
			fz_verify(f);
		kvp_client_detach_locked(c);
		f->attached[f->ci] = false;
		fz_verify(f);
		FZ_EQ(f, f->pool.free_pages, free_pages + pages + cache);
		FZ_EQ(f, f->pool.free_rows, free_rows + rows);
		for (i = 0; i < f->pool.nr_rows; i++)
			FZ_CHECK(f, f->pool.rows[i].owner != c,
				 "row %u still owned by the closed client", i);
		for (i = 0; i < f->pool.nr_pages; i++)
			FZ_CHECK(f, !(f->pool.pages[i].owner & KVP_OWNER_CACHE) ||
				 f->pool.pages[i].owner >= KVP_OWNER_RESERVED ||
				 (f->pool.pages[i].owner & ~KVP_OWNER_CACHE) !=
				 c->cidx, "page %u still in its cache", i);
		if (b & FZ_REATTACH_STAY_CLOSED)
			return;
	}
	/* May make a tenant: an injected failure there is an ENOMEM. */
	fz_begin(f);
	ret = fz_attach(f, f->ci);
	if (f->fail_at) {
		f->injected = kvp_user_nr_allocs >= f->fail_at;
		kvp_user_fail_nth = 0;
	}
	if (f->injected && ret == -ENOMEM) {
		fz_log(f, "open: ENOMEM [allocation failure injected]");
		fz_snap(f, &f->after);
		if (*fz_snap_diff(f, &f->before, &f->after))
			fz_finding(f, "failed open changed %s",
				   fz_snap_diff(f, &f->before, &f->after));
		fz_verify(f);
		return;
	}
	fz_log(f, "open: %d (id %u cidx %u)", ret, c->id, c->cidx);
	if (f->injected)
		fz_finding(f, "an allocation failed, yet open returned %d", ret);
	FZ_EQ(f, ret, 0);
	f->attached[f->ci] = true;
	fz_verify(f);
}

/* ---- export files, tenants, pressure ------------------------------------- */

/*
 * EXPORT: m & 1 names a slot (a session follows), else a row (a handle
 * follows). The row leaves the client for an "export file", remembered in
 * f->exports until imported or dropped (the file closing).
 */
static void op_export(struct fz *f, struct fz_in *in)
{
	struct kvpool_export x;
	const struct fz_rsnap *b = NULL;
	struct fz_delta d = { 0 };
	u32 m = rd8(in), idx = ~0U, npg = 0xdeadbeef, ri = ~0U;
	u32 pt = f->pool.page_tokens, owned = 0, borrowed = 0, p;
	int ret, want;

	memset(&x, 0, sizeof(x));
	if (m & FZ_EXPORT_SLOT) {
		x.flags = KVPOOL_EXPORT_SLOT;
		x.session_id = dec_session(f, in);
	} else {
		x.handle = dec_handle(f, in);
	}
	fz_begin(f);
	if (m & FZ_EXPORT_SLOT) {
		b = model_slot(f, x.session_id, &ri);
		want = b ? 0 : -ENOENT;
	} else {
		want = model_lookup(f, x.handle);
		if (!want) {
			ri = x.handle.req_pool_idx;
			b = fz_brow(f, x.handle);
		}
	}
	if (!want) {
		/* Borrowed pages become its own: only if no other row borrows. */
		for (p = 0; p < b->protected / pt; p++) {
			const struct kvp_cache_ent *ent;

			if (b->pages[p] == KVPOOL_PAGE_NONE)
				continue;
			ent = model_cache_ent(f, b->pages[p]);
			FZ_CHECK(f, ent, "row %u borrows page %u, not in its cache",
				 ri, b->pages[p]);
			if (ent->pins != 1)
				want = -EBUSY;
			borrowed++;
		}
		owned = fz_owned(f, ri, 0, ~0U);
	}
	ret = kvp_export_locked(fz_cur(f), &x, &idx, &npg);
	fz_log(f, "%s %u@%u session %#llx: idx %u",
	       (m & FZ_EXPORT_SLOT) ? "slot" : "row",
	       x.handle.req_pool_idx, x.handle.generation,
	       (unsigned long long)x.session_id, idx);
	fz_end(f, ret, want);
	if (ret) {
		FZ_EQ(f, npg, 0);
		return;
	}
	FZ_EQ(f, idx, ri);
	FZ_EQ(f, npg, owned + borrowed);
	FZ_EQ(f, f->pool.rows[idx].state, KVP_ROW_EXPORTED);
	FZ_CHECK(f, !f->pool.rows[idx].owner, "exported row %u has an owner", idx);
	FZ_EQ(f, f->pool.rows[idx].protected, 0);
	FZ_CHECK(f, fz_same(f->pool.rows[idx].pages, b->pages, b->nr),
		 "row %u: pages moved on export", idx);
	for (p = 0; p < b->nr; p++)
		if (b->pages[p] != KVPOOL_PAGE_NONE)
			FZ_EQ(f, f->pool.pages[b->pages[p]].owner, idx);
	f->exports[f->nexports++] = idx;
	if (b->state == KVP_ROW_SLOT) {
		d.slot_rows = -1;
		d.slot_pages = -(int)owned;
		d.c_slots = -1;
	} else {
		d.held_rows = -1;
		d.row_pages = -(int)owned;
		d.c_rows = -1;
	}
	d.c_pages = -(int)owned;
	d.cache = -(int)borrowed;
	d.c_cache = -(int)borrowed;
	d.pinned = -(int)borrowed;
	d.split = true;
	d.export_rows = 1;
	d.export_pages = owned + borrowed;
	fz_check_stats(f, &d);
}

/* IMPORT: i & 0x80 a row that may be no export at all, else an export. */
static void op_import(struct fz *f, struct fz_in *in)
{
	u32 i = rd8(in), idx, k = ~0U, npg = 0xdeadbeef, owned = 0;
	struct kvpool_handle h = { 0xdeadbeef, 0xdeadbeef };
	const struct fz_tsnap *t;
	const struct fz_rsnap *b;
	struct fz_delta d = { 0 };
	int ret, want = 0;

	if (f->nexports && !(i & FZ_IMPORT_NOT_EXPORTED)) {
		k = i % f->nexports;
		idx = f->exports[k];
	} else {
		idx = (i & 0x7f) % f->pool.nr_rows;
		for (k = 0; k < f->nexports && f->exports[k] != idx; k++)
			;
		if (k == f->nexports)
			k = ~0U;	/* no export file names it */
	}
	fz_begin(f);
	b = &f->before.rows[idx];
	t = model_tenant(f);
	if (b->state != KVP_ROW_EXPORTED) {
		want = -EALREADY;
	} else {
		owned = fz_owned(f, idx, 0, ~0U);
		if ((owned && t->max_pages &&
		     (u64)t->pages + owned > t->max_pages) ||
		    (t->max_rows && (u64)t->rows + 1 > t->max_rows))
			want = -EDQUOT;
	}
	ret = kvp_import_locked(fz_cur(f), idx, &h, &npg);
	fz_log(f, "row %u: handle %u@%u", idx, h.req_pool_idx, h.generation);
	fz_end(f, ret, want);
	if (ret) {
		FZ_EQ(f, npg, 0);
		return;
	}
	FZ_CHECK(f, k != ~0U, "row %u imported, never exported", idx);
	f->exports[k] = f->exports[--f->nexports];
	FZ_EQ(f, h.req_pool_idx, idx);
	FZ_EQ(f, h.generation, b->gen + 1 == 0 ? 1 : b->gen + 1);
	FZ_EQ(f, f->pool.rows[idx].state, KVP_ROW_HELD);
	FZ_CHECK(f, f->pool.rows[idx].owner == fz_cur(f), "row %u", idx);
	FZ_EQ(f, npg, owned);
	fz_known_add(f, h);
	d.held_rows = 1;
	d.row_pages = owned;
	d.c_rows = 1;
	d.c_pages = owned;
	d.export_rows = -1;
	d.export_pages = -(int)owned;
	fz_check_stats(f, &d);
}

/* An export file closes: its row, if not imported, goes back. */
static void op_drop(struct fz *f, struct fz_in *in)
{
	u32 k = rd8(in), idx, owned;
	struct fz_delta d = { 0 };

	if (!f->nexports)
		return;
	k %= f->nexports;
	idx = f->exports[k];
	f->nexports--;
	f->exports[k] = f->exports[f->nexports];
	fz_begin(f);
	FZ_EQ(f, f->before.rows[idx].state, KVP_ROW_EXPORTED);
	owned = fz_owned(f, idx, 0, ~0U);
	kvp_export_drop_locked(&f->pool, idx);
	fz_log(f, "row %u, %u pages", idx, owned);
	fz_end(f, 0, 0);
	FZ_EQ(f, f->pool.rows[idx].state, KVP_ROW_FREE);
	d.free_rows = 1;
	d.free_pages = owned;
	d.export_rows = -1;
	d.export_pages = -(int)owned;
	fz_check_stats(f, &d);
}

/* The administrator sets a tenant's limits (KVPOOL_CTL_TENANT_SET). */
/* TENANT's bytes: flags, id, who, max, min, rows, label. */
enum fz_tenant_code {
	FZ_TEN_BY_KEY = 0,	/* flags & 3: by cgroup and uid */
	FZ_TEN_BY_ID = 1,	/* KVPOOL_TENANT_BY_ID */
	FZ_TEN_BAD_FLAG = 2,	/* an unknown flag, 1 << (1 + flags % 31) */
	FZ_TEN_CGROUPS = 3,	/* who % 3: the cgroup id */
	FZ_TEN_UID_SHIFT = 7,	/* who >> 7 & 1: the uid */
	FZ_TEN_IDS = 8,		/* id % 8: the tenant id */
};

static void op_tenant(struct fz *f, struct fz_in *in)
{
	struct kvpool_ctl_tenant a;
	u32 fb = rd8(in), id = rd8(in), cg = rd8(in), mx = rd8(in);
	u32 mn = rd8(in), rows = rd8(in), lb = rd8(in);
	u32 usable = f->pool.nr_pages - f->pool.reserved_pages;
	const struct fz_tsnap *t = NULL;
	const struct kvp_tenant *t2;
	u64 sum_min;
	u32 k;
	int ret, want = 0;

	memset(&a, 0, sizeof(a));
	a.flags = (fb & 3) == FZ_TEN_BY_ID ? KVPOOL_TENANT_BY_ID :
		  (fb & 3) == FZ_TEN_BAD_FLAG ? 1U << (4 + fb % 28) : 0;
	a.tenant_id = id % FZ_TEN_IDS;
	a.cgroup_id = cg % FZ_TEN_CGROUPS;
	a.uid = (cg >> FZ_TEN_UID_SHIFT) & 1;
	/* 0: no limit; else a share of the pool, past it at 255. */
	a.max_pages = mx ? mx * usable / 200 : 0;
	a.min_pages = mn < 0xf0 ? mn * usable / 800 : mn * usable / 200;
	a.max_rows = rows % (f->pool.nr_rows + 2);
	if (lb == 1)
		memcpy(a.label, "syz", 4);
	else if (lb == 2)
		memset(a.label, 'A', sizeof(a.label));	/* no NUL */
	else if (lb == 3)
		a.__reserved = 1;
	fz_begin(f);
	if (a.flags & ~KVPOOL_TENANT_BY_ID) {
		want = -EOPNOTSUPP;
	} else if (a.__reserved || lb == 2 ||
		   (a.max_pages && a.min_pages > a.max_pages)) {
		want = -EINVAL;
	} else {
		if (a.flags & KVPOOL_TENANT_BY_ID) {
			if (a.tenant_id >= f->before.tenants_span ||
			    !f->before.tenants[a.tenant_id].live)
				want = -ENOENT;
			else
				t = &f->before.tenants[a.tenant_id];
		} else {
			for (k = 0; k < f->before.tenants_span; k++)
				if (f->before.tenants[k].live &&
				    f->before.tenants[k].cgroup_id == a.cgroup_id &&
				    f->before.tenants[k].uid == a.uid)
					t = &f->before.tenants[k];
		}
		sum_min = f->before.sum_min - (t ? t->min_pages : 0) +
			  a.min_pages;
		if (!want && sum_min > usable)
			want = -EINVAL;
	}
	ret = kvp_tenant_set_locked(&f->pool, &a, NULL);
	fz_log(f, "flags %#x id %u cgroup %llu uid %u max %u min %u rows %u",
	       a.flags, a.tenant_id, (unsigned long long)a.cgroup_id, a.uid,
	       a.max_pages, a.min_pages, a.max_rows);
	fz_end(f, ret, want);
	if (ret)
		return;
	t2 = xa_load(&f->pool.tenants, a.tenant_id);
	FZ_CHECK(f, t2, "tenant %u", a.tenant_id);
	if (!t2)
		return;
	FZ_EQ(f, t2->max_pages, a.max_pages);
	FZ_EQ(f, t2->min_pages, a.min_pages);
	FZ_EQ(f, t2->max_rows, a.max_rows);
	FZ_CHECK(f, t2->configured, "not kept");
}

static void op_wmark(struct fz *f, struct fz_in *in)
{
	u32 low = rd8(in) * f->pool.nr_pages / 200;
	u32 high = rd8(in) * f->pool.nr_pages / 200;
	int ret, want;

	fz_begin(f);
	want = high < low || high > f->pool.nr_pages ? -EINVAL : 0;
	ret = kvp_set_wmark_locked(&f->pool, low, high);
	fz_log(f, "low %u high %u", low, high);
	fz_end(f, ret, want);
}

/* PRESSURE asks, never takes; never more than the evictable cache. */
static void op_pressure(struct fz *f)
{
	struct kvp_client *c = fz_cur(f);
	u32 why = 0xdeadbeef, ask;
	const char *diff;

	fz_begin(f);
	ask = kvp_pressure_locked(c, &why);
	fz_log(f, "ask %u reasons %#x", ask, why);
	fz_end(f, 0, 0);
	diff = fz_snap_diff(f, &f->before, &f->after);
	if (*diff)
		fz_finding(f, "PRESSURE changed %s", diff);
	FZ_CHECK(f, !(why & ~(KVPOOL_PRESSURE_LOW | KVPOOL_PRESSURE_OVER_MAX |
			      KVPOOL_PRESSURE_GUARANTEE)), "reasons %#x", why);
	FZ_CHECK(f, ask <= c->nr_cache_pages - c->nr_cache_pinned,
		 "ask %u of %u evictable", ask,
		 c->nr_cache_pages - c->nr_cache_pinned);
	FZ_CHECK(f, !ask || why, "ask %u without a reason", ask);
}

/* KVPOOL_CTL_TENANT_LIST: room for count (0..5) entries. */
static void op_tenant_list(struct fz *f, struct fz_in *in)
{
	u32 count = rd8(in) % 6, n, i, k, used;
	struct kvpool_tenant_info *out;

	out = calloc(count ? count + 1 : 1, sizeof(*out));
	memset(out, 0xa5, (count ? count + 1 : 1) * sizeof(*out));
	fz_begin(f);
	n = kvp_tenant_list_locked(&f->pool, out, count, NULL, 0, &used);
	fz_log(f, "room %u: %u tenants", count, n);
	fz_end(f, 0, 0);
	if (*fz_snap_diff(f, &f->before, &f->after))
		fz_finding(f, "TENANT_LIST changed %s",
			   fz_snap_diff(f, &f->before, &f->after));
	FZ_EQ(f, n, f->before.nr_tenants);
	for (i = 0; i < count && i < n; i++) {
		const struct fz_tsnap *t;

		k = out[i].tenant_id;
		FZ_CHECK(f, k < FZ_MAX_TENANTS && f->before.tenants[k].live,
			 "entry %u names tenant %u", i, k);
		t = &f->before.tenants[k];
		FZ_EQ(f, out[i].uid, t->uid);
		FZ_EQ(f, out[i].cgroup_id, t->cgroup_id);
		FZ_EQ(f, out[i].pages, t->pages);
		FZ_EQ(f, out[i].cache_pages, t->cache_pages);
		FZ_EQ(f, out[i].rows, t->rows);
		FZ_EQ(f, out[i].nr_clients, t->nr_clients);
		FZ_EQ(f, out[i].max_pages, t->max_pages);
		FZ_EQ(f, out[i].min_pages, t->min_pages);
		FZ_EQ(f, out[i].max_rows, t->max_rows);
		FZ_EQ(f, out[i].flags & ~KVPOOL_TENANT_CONFIGURED, 0);
		FZ_EQ(f, out[i].path_offset, 0);
	}
	/* Nothing past the room it was given. */
	for (k = 0; k < sizeof(*out); k++)
		FZ_EQ(f, ((u8 *)&out[count])[k], 0xa5);
	free(out);
}

/* kvp_geom_check(): CTL_CREATE's geometry rules, from the header. */
static void op_geom(struct fz *f, struct fz_in *in)
{
	u32 fl = rd8(in), pages, pt, rows, rt, rz;
	int ret, want = 0;

	fl = fl < FZ_GEOM_ODD_FLAG ? fl & 1 : 1U << (fl & 15);
	pages = rd8(in) & FZ_GEOM_U32 ? rd32(in) : rd8(in);
	pt = rd8(in) & FZ_GEOM_U32 ? rd32(in) : rd8(in);
	rows = rd8(in) & FZ_GEOM_U32 ? rd32(in) : rd8(in);
	rt = rd8(in) & FZ_GEOM_U32 ? rd32(in) : rd8(in);
	rz = fl & KVPOOL_CREATE_RESERVE_ZERO ? 1 : 0;
	if (fl & ~KVPOOL_CREATE_RESERVE_ZERO)
		want = -EOPNOTSUPP;
	else if (pages <= rz || pages > (1U << 27) || !pt || pt > 65536 ||
		 rows <= rz || rows > (1U << 20) || !rt || rt > (1U << 24))
		want = -EINVAL;
	ret = kvp_geom_check(fl, pages, pt, rows, rt);
	fz_log(f, "flags %#x pages %u page_tokens %u rows %u row_tokens %u: %s",
	       fl, pages, pt, rows, rt, fz_err(ret));
	if (ret != want)
		fz_finding(f, "geometry flags %#x %u/%u/%u/%u: %d, the header says %d",
			   fl, pages, pt, rows, rt, ret, want);
}

/* ---- one input ---------------------------------------------------------- */

static const u32 fz_pts[8] = { 1, 2, 3, 4, 16, 1, 5, 64 };

/* A client opens: in tenants mode, client i is in cgroup i % 2. */
static int fz_attach(struct fz *f, int i)
{
	if (f->tenants_mode)
		return kvp_client_attach_tenant_locked(&f->pool, &f->cli[i],
							i % 2, 0, NULL);
	return kvp_client_attach_locked(&f->pool, &f->cli[i]);
}

static void fz_setup(struct fz *f, struct fz_in *in)
{
	u8 b0 = rd8(in), b1 = rd8(in), b2 = rd8(in), b3 = rd8(in);
	u32 pt = fz_pts[b0 & FZ_HDR_PT];
	u32 flags = (b0 & FZ_HDR_RESERVE_ZERO) ? KVPOOL_CREATE_RESERVE_ZERO : 0;
	u32 nr_pages = 2 + b1, nr_rows = 2 + (b2 & 63);
	u32 k = 1 + (b3 & 63), rt;
	u32 i;
	int ret;

	switch (b3 >> FZ_HDR_RT_SHIFT) {
	case 0:
		rt = k * pt;
		break;
	case 1:
		rt = k * pt - 1 ? k * pt - 1 : 1;
		break;
	case 2:
		rt = k * pt + 1;
		break;
	default:
		rt = k;
		break;
	}
	ret = kvp_pool_init(&f->pool, 0, flags, nr_pages, pt, nr_rows, rt);
	if (ret) {
		fprintf(stderr, "kvpool-fuzz: pool init: %d\n", ret);
		abort();
	}
	if (b0 & FZ_HDR_GEN_WRAP)	/* as after 2^32 row allocations */
		for (i = 0; i < nr_rows; i++)
			f->pool.rows[i].gen = 0xfffffffeU - (i & 1);
	if (b0 & FZ_HDR_EPOCH_WRAP)	/* as after 2^32 batches */
		f->pool.mark_epoch = 0xfffffffdU;
	f->ncli = (b0 & FZ_HDR_FOUR) ? 4 : 3;
	f->tenants_mode = b0 & FZ_HDR_TENANTS;
	mutex_lock(&f->pool.lock);
	for (i = 0; i < f->ncli; i++) {
		ret = fz_attach(f, (int)i);
		if (ret) {
			fprintf(stderr, "kvpool-fuzz: attach: %d\n", ret);
			abort();
		}
		f->attached[i] = true;
	}
	if (fz_trace)
		fprintf(stderr, "kvpool-fuzz: pool flags %u pages %u page_tokens %u rows %u row_tokens %u clients %u%s%s\n",
			flags, nr_pages, pt, nr_rows, rt, f->ncli,
			(b0 & FZ_HDR_GEN_WRAP) ? " gen-wrap" : "",
			(b0 & FZ_HDR_EPOCH_WRAP) ? " epoch-wrap" : "");
}

static void fz_teardown(struct fz *f)
{
	struct kvp_pool *pool = &f->pool;
	u32 i, rz = pool->flags & KVPOOL_CREATE_RESERVE_ZERO ? 1 : 0;

	f->op = OP_DROP;
	f->ci = -1;
	while (f->nexports) {	/* the export files close */
		kvp_export_drop_locked(pool, f->exports[--f->nexports]);
		fz_verify(f);
	}
	f->op = OP_REATTACH;
	for (i = 0; i < f->ncli; i++) {
		if (!f->attached[i])
			continue;
		f->ci = (int)i;
		kvp_client_detach_locked(&f->cli[i]);
		f->attached[i] = false;
		fz_verify(f);
	}
	f->ci = -1;
	FZ_EQ(f, pool->nr_clients, 0);
	FZ_EQ(f, pool->free_pages, pool->nr_pages - rz);
	FZ_EQ(f, pool->free_rows, pool->nr_rows - rz);
	FZ_EQ(f, pool->row_pages + pool->slot_pages + pool->cache_evictable +
	      pool->cache_pinned + pool->held_rows + pool->slot_rows, 0);
	FZ_EQ(f, pool->reserved_pages, rz);
	FZ_EQ(f, pool->reserved_rows, rz);
	FZ_EQ(f, pool->export_rows + pool->export_pages, 0);
	mutex_unlock(&pool->lock);
	kvp_pool_fini(pool);
}

static void op_fail(struct fz *f, struct fz_in *in)
{
	f->pending_fail = 1 + rd8(in) % 8;
	fz_log(f, "fail allocation %u of the next op", f->pending_fail);
}

/* Decode and run op f->op (see FZ_OPS). */
static void fz_run_op(struct fz *f, struct fz_in *in)
{
	switch (f->op) {
#define FZ_OP_CASE(id, name, run) case OP_##id: run; break;
	FZ_OPS(FZ_OP_CASE)
#undef FZ_OP_CASE
	default:
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *s;

	(void)argc;
	(void)argv;
	s = getenv("KVP_FUZZ_TRACE");
	fz_trace = s && *s && *s != '0';
	s = getenv("KVP_FUZZ_STRICT");
	fz_strict = s && *s && *s != '0';
	kvp_user_verbose = true;	/* print what verify finds */
	return 0;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	static struct fz fz;
	struct fz *f = &fz;
	struct fz_in in = { data, size };
	long live = kvp_user_live_allocs;

	memset(f, 0, sizeof(*f));
	kvp_user_fail_nth = 0;
	fz_setup(f, &in);

	for (f->opno = 0; in.n && f->opno < FZ_MAX_OPS; f->opno++) {
		f->op = (enum fz_op)(rd8(&in) % FZ_NR_OPS);
		f->ci = (int)(rd8(&in) % f->ncli);
		if (!f->attached[f->ci] && f->op != OP_REATTACH)
			continue;	/* a closed client does nothing */
		fz_run_op(f, &in);
	}
	fz_teardown(f);
	kvp_user_fail_nth = 0;
	if (kvp_user_live_allocs != live) {
		fprintf(stderr, "kvpool-fuzz: FINDING: %ld core allocations leaked\n",
			kvp_user_live_allocs - live);
		abort();
	}
	return 0;
}
