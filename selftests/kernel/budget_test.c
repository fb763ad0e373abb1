// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: chunk budgets (KVPOOL_FEAT_BUDGET, ABI 4), the memory
 * several pools grow and shrink on.
 *
 * KVPOOL_CTL_BUDGET makes a budget of chunks the kernel allocates; pools
 * created with KVPOOL_CREATE_BUDGET take chunks from it as their EXTENDs
 * need pages and give back their highest wholly free slots after each
 * ioctl; clients map the pool file itself, and a chunk the pool gives back
 * is unmapped from every client at once. Checked here, with raw ioctls:
 * every refusal of the control op and of CTL_CREATE (its errno, and that
 * nothing changed), ARENA and sysfs on a budget pool, a chunk moving from
 * one pool to another (its bytes cleared, the old owner's mapping SIGBUS),
 * floors and ceilings, pressure that counts the budget's free chunks, a
 * SIGKILLed client's chunks coming back, and a destroyed pool's chunks
 * returning to its budget.
 *
 * Every pool here has its watermarks at 0 unless a test says otherwise:
 * the shrink after each ioctl then gives back every wholly free slot at
 * once, so the counts each step leaves are exact. VERIFY runs at the end
 * of every test and again in the teardown, which destroys the pools and
 * checks that the budget has all its chunks back before destroying it.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <setjmp.h>

#define NR_CHUNKS	16
#define CHUNK		(64u * 1024)		/* chunk_bytes */
#define PB_A		4096u			/* pool A: 16 pages a chunk */
#define PB_B		16384u			/* pool B: 4 pages a chunk */
#define PPC_A		(CHUNK / PB_A)
#define PPC_B		(CHUNK / PB_B)
#define PAGES_A		(NR_CHUNKS * PPC_A)	/* A can hold the budget */
#define PAGES_B		(NR_CHUNKS * PPC_B)	/* and so can B */
#define NR_ROWS		9
#define SPACE		((__u64)NR_CHUNKS * CHUNK)	/* out_bytes of A, B */
#define GIB		(1ull << 30)

/* ---- the control op ----------------------------------------------------- */

static int budget_op(int ctl, struct kvpool_ctl_budget *b)
{
	b->size = sizeof(*b);
	return kt_ioctl(ctl, KVPOOL_CTL_BUDGET, b);
}

static int budget_create(int ctl, __u32 nr, __u64 bytes, __u32 *id)
{
	struct kvpool_ctl_budget b = {
		.op = KVPOOL_BUDGET_CREATE, .kind = KVPOOL_ARENA_HOST,
		.nr_chunks = nr, .chunk_bytes = bytes,
	};
	int ret = budget_op(ctl, &b);

	if (!ret && id)
		*id = b.budget_id;
	return ret;
}

/* INFO into @b: 0, or the errno (ENODATA: no such budget). */
static int budget_info(int ctl, __u32 id, struct kvpool_ctl_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->op = KVPOOL_BUDGET_INFO;
	b->budget_id = id;
	return budget_op(ctl, b);
}

/* out_free_chunks of budget @id, or ~0u when INFO fails. */
static __u32 budget_free(int ctl, __u32 id)
{
	struct kvpool_ctl_budget b;

	return budget_info(ctl, id, &b) ? ~0u : b.out_free_chunks;
}

static int budget_destroy(int ctl, __u32 id)
{
	struct kvpool_ctl_budget b = {
		.op = KVPOOL_BUDGET_DESTROY, .budget_id = id,
	};

	return budget_op(ctl, &b);
}

static int limits_set(int ctl, __u32 id, __u32 pool, __u64 min,
		      __u64 max)
{
	struct kvpool_ctl_budget b = {
		.op = KVPOOL_BUDGET_LIMITS, .budget_id = id, .pool_id = pool,
		.min_bytes = min, .max_bytes = max,
	};

	return budget_op(ctl, &b);
}

/* Which of the ids 0..63 name a budget now, one bit each. */
static __u64 budget_set(int ctl)
{
	struct kvpool_ctl_budget b;
	__u64 set = 0;
	__u32 id;

	for (id = 0; id < 64; id++)
		if (!budget_info(ctl, id, &b))
			set |= 1ull << id;
	return set;
}

/* An id no budget has: ENODATA for every op that names it. */
static __u32 budget_unused(int ctl)
{
	__u64 set = budget_set(ctl);
	__u32 id;

	for (id = 0; id < 64; id++)
		if (!(set & (1ull << id)))
			return id;
	return 64;
}

/* ---- pools on a budget -------------------------------------------------- */

static void budget_geo(struct kvpool_ctl_create *c, __u32 flags, __u32 bid,
		       __u32 nr_pages, __u64 page_bytes)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->flags = flags | KVPOOL_CREATE_BUDGET;
	c->nr_pages = nr_pages;
	c->page_tokens = 1;
	c->nr_rows = NR_ROWS;
	c->row_tokens = nr_pages;
	c->budget_id = bid;
	c->page_bytes = page_bytes;
}

/*
 * kt_pool_init() for a pool on budget @bid, one-token pages, its
 * watermarks at 0 (setup only: uses ASSERT).
 */
static void bpool_init(struct __test_metadata *_metadata, struct kt_pool *p,
		       int ctl, __u32 flags, __u32 bid, __u32 nr_pages,
		       __u64 page_bytes)
{
	bool rz = flags & KVPOOL_CREATE_RESERVE_ZERO;

	kt_pool_reset(p);
	p->ctl = dup(ctl);
	ASSERT_LE(0, p->ctl);
	budget_geo(&p->geo, flags, bid, nr_pages, page_bytes);
	ASSERT_EQ(0, kt_ioctl(p->ctl, KVPOOL_CTL_CREATE, &p->geo));
	p->created = true;
	p->id = p->geo.out_pool_id;
	p->usable_pages = nr_pages - rz;
	p->usable_rows = NR_ROWS - rz;
	p->max_batch = NR_ROWS;
	ASSERT_EQ(0, kt_set_wmark(p->ctl, p->id, 0, 0));
}

/* ARENA's out_nr_chunks: the chunks the pool holds (~0u on failure). */
static __u32 pool_chunks(int fd)
{
	struct kvpool_arena a;

	return kt_arena_info(fd, &a) ? ~0u : a.out_nr_chunks;
}

/* Extend row @h to @len pages; *@out_short gets out_short; 0 or errno. */
static int grow(int fd, struct kvpool_handle h, __u32 len, __u32 *ids,
		__u32 cap, __u32 *out_short)
{
	static __u32 scratch[PAGES_A];
	struct kvpool_extend_entry e = { .handle = h, .new_len = len };
	struct kvpool_extend x;
	int ret;

	if (!ids) {
		ids = scratch;
		cap = PAGES_A;
	}
	ret = kt_extend(fd, &e, 1, ids, cap, &x);
	if (out_short)
		*out_short = x.out_short;
	return ret;
}

/*
 * The teardown's check of one budget pool once its clients are gone:
 * nothing held or quarantined, and VERIFY clean. What STATS says of the
 * free pages depends on the chunks the pool keeps, so it is not checked.
 */
static void bpool_expect_empty(struct __test_metadata *_metadata,
			       struct kt_pool *p, int fd, __u32 nr_clients)
{
	struct kvpool_stats s;

	EXPECT_LE(0, kt_quarantine_settle(fd));
	EXPECT_EQ(0, kt_stats(fd, &s));
	EXPECT_EQ(0, s.out_quarantine_pages);
	EXPECT_EQ(0, s.out_row_pages);
	EXPECT_EQ(0, s.out_slot_pages);
	EXPECT_EQ(0, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_held_rows);
	EXPECT_EQ(nr_clients, s.out_nr_clients);
	kt_expect_verify(_metadata, p, fd);
}

static void bpool_fini(struct __test_metadata *_metadata, struct kt_pool *p)
{
	int i;

	if (p->created) {
		kt_pool_verify_open(_metadata, p);
		kt_pool_reap(p);
		for (i = 0; i < KT_MAX_FDS; i++) {
			if (p->fds[i] >= 0) {
				close(p->fds[i]);
				p->fds[i] = -1;
			}
		}
		kt_pool_destroy_whole(_metadata, p, bpool_expect_empty);
	}
	kt_pool_close_ctl(p);
}

/* ---- touching a mapping -------------------------------------------------- */

static sigjmp_buf touch_env;
static volatile sig_atomic_t touch_sig;

static void touch_handler(int sig)
{
	touch_sig = sig;
	siglongjmp(touch_env, 1);
}

/*
 * Read one byte at @p: 0 if that works, else the signal it raised
 * (SIGBUS for a slot the pool does not hold, SIGSEGV for no mapping).
 */
static int touch(const volatile char *p)
{
	struct sigaction sa = { .sa_handler = touch_handler }, obus, osegv;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &obus);
	sigaction(SIGSEGV, &sa, &osegv);
	touch_sig = 0;
	if (!sigsetjmp(touch_env, 1))
		(void)*p;
	sigaction(SIGBUS, &obus, NULL);
	sigaction(SIGSEGV, &osegv, NULL);
	return touch_sig;
}

/* Slots [0, n) of mapping @m whose first byte is SIGBUS. */
static __u32 count_sigbus(const char *m, __u32 n)
{
	__u32 s, bus = 0;

	for (s = 0; s < n; s++)
		bus += touch(m + (size_t)s * CHUNK) == SIGBUS;
	return bus;
}

/* ---- 1. the control op alone --------------------------------------------- */

FIXTURE(bare) {
	int ctl;
	__u32 ids[64];
	int nr;
};

FIXTURE_SETUP(bare)
{
	self->nr = 0;
	self->ctl = kt_ctl_open();
	ASSERT_LE(0, self->ctl) TH_LOG("open " KT_CTL_PATH ": %s",
				       strerror(errno));
}

FIXTURE_TEARDOWN(bare)
{
	int i;

	for (i = 0; i < self->nr; i++)
		EXPECT_EQ(0, budget_destroy(self->ctl, self->ids[i]));
	close(self->ctl);
}

/* Create, remembered for the teardown to destroy. */
static int bare_create(FIXTURE_DATA(bare) *self, __u32 nr, __u64 bytes,
		       __u32 *id)
{
	__u32 got;
	int ret = budget_create(self->ctl, nr, bytes, &got);

	if (!ret) {
		self->ids[self->nr++] = got;
		if (id)
			*id = got;
	}
	return ret;
}

static void bare_forget(FIXTURE_DATA(bare) *self, __u32 id)
{
	int i;

	for (i = 0; i < self->nr; i++)
		if (self->ids[i] == id)
			self->ids[i] = self->ids[--self->nr];
}

TEST_F(bare, create_info_destroy)
{
	struct kvpool_ctl_budget b;
	struct kvpool_info i;
	int pool_fd, status;
	__u32 id, pool;
	pid_t pid;

	/* The feature bit, seen from any pool. */
	ASSERT_EQ(0, kt_create(self->ctl, 0, 4, 1, 2, 4, &pool));
	pool_fd = kt_open_id(pool, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, pool_fd);
	ASSERT_EQ(0, kt_info(pool_fd, &i));
	close(pool_fd);
	EXPECT_EQ(0, kt_destroy(self->ctl, pool));
	EXPECT_LE(4, i.out_abi_version);
	EXPECT_TRUE(i.out_features & KVPOOL_FEAT_BUDGET);

	ASSERT_EQ(0, bare_create(self, NR_CHUNKS, CHUNK, &id));
	EXPECT_GT(64, id);
	memset(&b, 0xa5, sizeof(b));
	ASSERT_EQ(0, budget_info(self->ctl, id, &b));
	EXPECT_EQ(id, b.budget_id);
	EXPECT_EQ(KVPOOL_ARENA_HOST, b.kind);
	EXPECT_EQ(NR_CHUNKS, b.nr_chunks);
	EXPECT_EQ(CHUNK, b.chunk_bytes);
	EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);
	EXPECT_EQ(0, b.out_nr_pools);
	EXPECT_EQ(0, b.out_moves);
	EXPECT_EQ(0, b.out_cleared_bytes);
	EXPECT_EQ(0, b.out_clear_ns);
	EXPECT_EQ(0, b.pool_id);
	EXPECT_EQ(0, b.min_bytes);
	EXPECT_EQ(0, b.max_bytes);

	/* INFO's inputs: pool_id and the limits must be 0. */
	memset(&b, 0, sizeof(b));
	b.op = KVPOOL_BUDGET_INFO;
	b.budget_id = id;
	b.pool_id = 1;
	EXPECT_EQ(EINVAL, budget_op(self->ctl, &b));
	b.pool_id = 0;
	b.max_bytes = CHUNK;
	EXPECT_EQ(EINVAL, budget_op(self->ctl, &b));

	/* Control ops need CAP_SYS_ADMIN. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvpool_ctl_budget c;

		CHILD_CHECK(kt_drop_sys_admin() == 0);
		CHILD_CHECK(budget_info(self->ctl, id, &c) == EPERM);
		CHILD_CHECK(budget_create(self->ctl, 1, 4096, NULL) == EPERM);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(KT_CHILD_OK(status));

	ASSERT_EQ(0, budget_destroy(self->ctl, id));
	bare_forget(self, id);
	EXPECT_EQ(ENODATA, budget_info(self->ctl, id, &b));
	EXPECT_EQ(ENODATA, budget_destroy(self->ctl, id));
	EXPECT_EQ(ENODATA, limits_set(self->ctl, id, 0, 0, 0));
}

/* One field of a good CREATE changed to @val, and the errno it gets. */
struct bad_budget {
	const char *what;
	int err;
	size_t off, len;
	__u64 val;
};

#define BB_FIELD(f) offsetof(struct kvpool_ctl_budget, f), \
	sizeof(((struct kvpool_ctl_budget *)0)->f)

static const struct bad_budget bad_budgets[] = {
	{ "flags", EOPNOTSUPP, BB_FIELD(flags), 1 },
	{ "high flag", EOPNOTSUPP, BB_FIELD(flags), 1u << 31 },
	{ "reserved", EINVAL, BB_FIELD(__reserved), 1 },
	{ "op 0", EINVAL, BB_FIELD(op), 0 },
	{ "op 99", EOPNOTSUPP, BB_FIELD(op), 99 },
	{ "kind 0", EINVAL, BB_FIELD(kind), KVPOOL_ARENA_NONE },
	{ "kind CUDA", EOPNOTSUPP, BB_FIELD(kind), KVPOOL_ARENA_CUDA },
	{ "kind 7", EOPNOTSUPP, BB_FIELD(kind), 7 },
	{ "nr_chunks 0", EINVAL, BB_FIELD(nr_chunks), 0 },
	{ "nr_chunks 2^20+1", EINVAL, BB_FIELD(nr_chunks),
	  KVPOOL_BUDGET_MAX_CHUNKS + 1 },
	{ "chunk_bytes 0", EINVAL, BB_FIELD(chunk_bytes), 0 },
	{ "chunk_bytes 4095", EINVAL, BB_FIELD(chunk_bytes), 4095 },
	{ "chunk_bytes 4097", EINVAL, BB_FIELD(chunk_bytes), 4097 },
	{ "chunk_bytes 1 GiB+4096", EINVAL, BB_FIELD(chunk_bytes),
	  GIB + 4096 },
	{ "chunk_bytes 2^32", EINVAL, BB_FIELD(chunk_bytes), 1ull << 32 },
	{ "pool_id", EINVAL, BB_FIELD(pool_id), 1 },
	{ "min_bytes", EINVAL, BB_FIELD(min_bytes), CHUNK },
	{ "max_bytes", EINVAL, BB_FIELD(max_bytes), CHUNK },
	{ "budget_id", EINVAL, BB_FIELD(budget_id), 1 },
};

static void good_create(struct kvpool_ctl_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->op = KVPOOL_BUDGET_CREATE;
	b->kind = KVPOOL_ARENA_HOST;
	b->nr_chunks = NR_CHUNKS;
	b->chunk_bytes = CHUNK;
}

/* Each refusal its errno; the set of budgets and ours stay as they were. */
TEST_F(bare, bad_create)
{
	struct kvpool_ctl_budget before, after, b;
	__u64 set;
	__u32 id;
	size_t n;

	ASSERT_EQ(0, bare_create(self, NR_CHUNKS, CHUNK, &id));
	ASSERT_EQ(0, budget_info(self->ctl, id, &before));
	set = budget_set(self->ctl);
	for (n = 0; n < ARRAY_SIZE(bad_budgets); n++) {
		const struct bad_budget *t = &bad_budgets[n];
		__u32 v32 = t->val;

		good_create(&b);
		if (t->len == sizeof(__u64))
			memcpy((char *)&b + t->off, &t->val, sizeof(__u64));
		else
			memcpy((char *)&b + t->off, &v32, sizeof(v32));
		EXPECT_EQ(t->err, budget_op(self->ctl, &b)) TH_LOG("%s", t->what);
		EXPECT_EQ(set, budget_set(self->ctl)) TH_LOG("%s", t->what);
	}

	/* A non-zero tail the kernel does not know: E2BIG, nothing made. */
	{
		struct {
			struct kvpool_ctl_budget b;
			__u64 tail;
		} big = { .tail = 1 };

		good_create(&big.b);
		big.b.size = sizeof(big);
		EXPECT_EQ(E2BIG, kt_ioctl(self->ctl, KVPOOL_CTL_BUDGET, &big));
		EXPECT_EQ(set, budget_set(self->ctl));
		/* A zero tail is a longer struct of this release. */
		big.tail = 0;
		ASSERT_EQ(0, kt_ioctl(self->ctl, KVPOOL_CTL_BUDGET, &big));
		self->ids[self->nr++] = big.b.budget_id;
		EXPECT_EQ(set | 1ull << big.b.budget_id,
			  budget_set(self->ctl));
	}

	ASSERT_EQ(0, budget_info(self->ctl, id, &after));
	EXPECT_EQ(0, memcmp(&before, &after, sizeof(before)));

	/*
	 * The smallest chunk is accepted. (A 1 GiB one is too, but the
	 * guest's 2 GiB could not hold it beside the rest: not tried.)
	 */
	EXPECT_EQ(0, bare_create(self, 1, 4096, NULL));
}

/* Ids 0..63: the 65th budget is ENOSPC, and the ids are all below 64. */
TEST_F(bare, sixty_four)
{
	__u32 id, made = 0;
	int ret;

	while (!(ret = bare_create(self, 1, 4096, &id))) {
		EXPECT_GT(64, id);
		ASSERT_GE(64, ++made);
	}
	EXPECT_EQ(ENOSPC, ret);
	EXPECT_EQ(~0ull, budget_set(self->ctl));
}

/*
 * A chunk given back is free to the next pool at once, however its
 * clearing is done: 2 MiB chunks, so that clearing takes long enough for
 * B to ask while the chunks A gave back are still being zeroed.
 */
#define BIG_CHUNK	(2u << 20)
#define BIG_PB		(64u * 1024)
#define BIG_PAGES	(8 * (BIG_CHUNK / BIG_PB))
_Static_assert(BIG_PAGES <= PAGES_A, "grow()'s scratch ids");

TEST_F(bare, move_while_clearing)
{
	struct kvpool_ctl_budget b;
	struct kvpool_handle h;
	struct kt_pool pa, pb;
	__u32 id, i, sh = 0;
	int fa, fb, ret = 0;

	ASSERT_EQ(0, bare_create(self, 8, BIG_CHUNK, &id));
	bpool_init(_metadata, &pa, self->ctl, 0, id, BIG_PAGES, BIG_PB);
	bpool_init(_metadata, &pb, self->ctl, 0, id, BIG_PAGES, BIG_PB);
	fa = kt_pool_open(_metadata, &pa);
	fb = kt_pool_open(_metadata, &pb);
	/* No ASSERT from here on: the pools must go before the budget. */
	for (i = 0; i < 32 && !ret; i++) {
		ret = kt_row_alloc(fa, 1, &h, &sh);
		if (!ret)
			ret = grow(fa, h, BIG_PAGES, NULL, 0, &sh);
		EXPECT_EQ(0, ret) TH_LOG("round %u: A short %u", i, sh);
		if (!ret)
			ret = kt_release1(fa, h, NULL);
		if (!ret)
			ret = kt_row_alloc(fb, 1, &h, &sh);
		if (!ret) {
			/* Every chunk A gave back, all 8 free. */
			ret = grow(fb, h, BIG_PAGES, NULL, 0, &sh);
			EXPECT_EQ(0, ret) TH_LOG("round %u: B short %u", i, sh);
			kt_release1(fb, h, NULL);
		}
	}
	EXPECT_EQ(0, budget_info(self->ctl, id, &b));
	EXPECT_EQ(8, b.out_free_chunks);
	printf("# %u rounds: %llu moves, %llu MiB cleared in %llu us\n", i,
	       (unsigned long long)b.out_moves,
	       (unsigned long long)(b.out_cleared_bytes >> 20),
	       (unsigned long long)(b.out_clear_ns / 1000));
	kt_expect_verify(_metadata, &pa, fa);
	kt_expect_verify(_metadata, &pb, fb);
	bpool_fini(_metadata, &pa);
	bpool_fini(_metadata, &pb);
}

/*
 * An EXTEND of more than one step's pages (16384) runs in steps with the
 * lock dropped between them; its grow comes first, in the start, and the
 * shrink waits for the last step. 1280 chunks of 64 KiB (80 MiB).
 */
#define STEP_CHUNKS	1280
#define STEP_PAGES	(STEP_CHUNKS * PPC_A)
#define STEP_LEN	20000			/* 1250 chunks, 2 steps */

TEST_F(bare, stepped_extend)
{
	static __u32 ids[STEP_LEN];
	struct kvpool_ctl_budget b;
	struct kvpool_extend_entry e;
	struct kvpool_extend x;
	struct kvpool_handle h;
	struct kt_pool p;
	__u32 id, sh, n = 0;
	int fd;

	ASSERT_EQ(0, bare_create(self, STEP_CHUNKS, CHUNK, &id));
	bpool_init(_metadata, &p, self->ctl, 0, id, STEP_PAGES, PB_A);
	fd = kt_pool_open(_metadata, &p);
	/* No ASSERT from here on: the pool must go before the budget. */
	EXPECT_EQ(0, kt_row_alloc(fd, 1, &h, &sh));
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.new_len = STEP_LEN;
	EXPECT_EQ(0, kt_extend(fd, &e, 1, ids, STEP_LEN, &x));
	EXPECT_EQ(STEP_LEN, x.out_nr_pages);
	EXPECT_EQ(kt_div_up(STEP_LEN, PPC_A), pool_chunks(fd));
	EXPECT_EQ(STEP_CHUNKS - kt_div_up(STEP_LEN, PPC_A),
		  budget_free(self->ctl, id));
	kt_expect_verify(_metadata, &p, fd);
	EXPECT_EQ(0, kt_release1(fd, h, &n));
	EXPECT_EQ(STEP_LEN, n);
	EXPECT_EQ(0, budget_info(self->ctl, id, &b));
	EXPECT_EQ(STEP_CHUNKS, b.out_free_chunks);
	EXPECT_EQ(0, pool_chunks(fd));
	/* If not all at once: how many more ioctls it takes (for the log). */
	for (n = 0; n < 100 && budget_free(self->ctl, id) != STEP_CHUNKS; n++)
		pool_chunks(fd);
	printf("# %u more ioctls gave every chunk back\n", n);
	kt_expect_verify(_metadata, &p, fd);
	bpool_fini(_metadata, &p);
}

/* ---- 2-8. pools on a budget ---------------------------------------------- */

FIXTURE(budget) {
	int ctl;
	__u32 bid;
	bool made;
	struct kt_pool a, b;	/* 4 KiB pages, 16 KiB pages */
	void *map[4];
	size_t map_len[4];
};

FIXTURE_SETUP(budget)
{
	int i;

	self->made = false;
	for (i = 0; i < 4; i++)
		self->map[i] = MAP_FAILED;
	kt_pool_reset(&self->a);
	kt_pool_reset(&self->b);
	self->ctl = kt_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, budget_create(self->ctl, NR_CHUNKS, CHUNK, &self->bid));
	self->made = true;
	bpool_init(_metadata, &self->a, self->ctl, 0, self->bid, PAGES_A, PB_A);
	bpool_init(_metadata, &self->b, self->ctl, 0, self->bid, PAGES_B, PB_B);
}

FIXTURE_TEARDOWN(budget)
{
	struct kvpool_ctl_budget b;
	int i;

	for (i = 0; i < 4; i++)
		if (self->map[i] != MAP_FAILED)
			munmap(self->map[i], self->map_len[i]);
	bpool_fini(_metadata, &self->a);
	bpool_fini(_metadata, &self->b);
	if (self->made) {
		/* Every pool gone: every chunk back, then the budget goes. */
		EXPECT_EQ(0, budget_info(self->ctl, self->bid, &b));
		EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);
		EXPECT_EQ(0, b.out_nr_pools);
		EXPECT_EQ(0, budget_destroy(self->ctl, self->bid));
	}
	close(self->ctl);
}

/* Map @len bytes of pool file @fd, shared; the teardown unmaps it. */
static char *budget_map(FIXTURE_DATA(budget) *self, int fd, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int i;

	if (m == MAP_FAILED)
		return NULL;
	for (i = 0; i < 4; i++) {
		if (self->map[i] == MAP_FAILED) {
			self->map[i] = m;
			self->map_len[i] = len;
			return m;
		}
	}
	munmap(m, len);
	return NULL;
}

/* Two geometries on one budget; ARENA and sysfs describe them. */
TEST_F(budget, pools)
{
	int fa = kt_pool_open(_metadata, &self->a);
	int fb = kt_pool_open(_metadata, &self->b);
	struct kvpool_arena_chunk ch = { .fd = -1, .bytes = CHUNK };
	struct kvpool_arena_fd f;
	struct kvpool_ctl_budget b;
	struct kvpool_arena a;

	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(2, b.out_nr_pools);
	EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);

	ASSERT_EQ(0, kt_arena_info(fa, &a));
	EXPECT_EQ(KVPOOL_ARENA_HOST, a.out_kind);
	EXPECT_EQ(KVPOOL_ARENA_SET_BUDGET, a.out_set_flags);
	EXPECT_EQ(0, a.out_nr_chunks);
	EXPECT_EQ(SPACE, a.out_bytes);
	EXPECT_EQ(PB_A, a.out_page_bytes);
	EXPECT_EQ(0, a.out_agent_pid);
	ASSERT_EQ(0, kt_arena_info(fb, &a));
	EXPECT_EQ(KVPOOL_ARENA_HOST, a.out_kind);
	EXPECT_EQ(KVPOOL_ARENA_SET_BUDGET, a.out_set_flags);
	EXPECT_EQ(0, a.out_nr_chunks);
	EXPECT_EQ(SPACE, a.out_bytes);
	EXPECT_EQ(PB_B, a.out_page_bytes);

	/* No files to hand out; no arena to set. */
	EXPECT_EQ(EOPNOTSUPP, kt_arena_fds(fa, 0, 1, &f, &a));
	ch.fd = kt_host_memfd(CHUNK);
	ASSERT_LE(0, ch.fd);
	EXPECT_EQ(EEXIST, kt_arena_set(self->ctl, self->a.id,
				       KVPOOL_ARENA_HOST, PB_A, &ch, 1, NULL));
	close(ch.fd);
	EXPECT_EQ(0, pool_chunks(fa));

	EXPECT_EQ(self->bid, kt_sysfs_val(self->a.id, "budget"));
	EXPECT_EQ(self->bid, kt_sysfs_val(self->b.id, "budget"));
	EXPECT_EQ(0, kt_sysfs_val(self->a.id, "chunks"));

	/* A budget with pools on it stays. */
	EXPECT_EQ(EBUSY, budget_destroy(self->ctl, self->bid));
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(2, b.out_nr_pools);
	EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);

	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
}

/* The id space is in whole chunk slots, rounded up. */
TEST_F(budget, slots_round_up)
{
	struct kvpool_arena a;
	struct kt_pool c;
	int fd;

	bpool_init(_metadata, &c, self->ctl, 0, self->bid, PPC_A + 1, PB_A);
	fd = kt_pool_open(_metadata, &c);
	EXPECT_EQ(0, kt_arena_info(fd, &a));
	EXPECT_EQ(2 * CHUNK, a.out_bytes);
	EXPECT_EQ(0, a.out_nr_chunks);
	bpool_fini(_metadata, &c);
}

struct bad_pool {
	const char *what;
	int err;
	__u32 flags;
	int budget;		/* 1: ours, 0: none, -1: one no budget has */
	__u32 reserved2;
	__u64 page_bytes;
};

static const struct bad_pool bad_pools[] = {
	{ "no such budget", ENODATA, KVPOOL_CREATE_BUDGET, -1, 0, PB_A },
	{ "page_bytes 0", EINVAL, KVPOOL_CREATE_BUDGET, 1, 0, 0 },
	{ "page_bytes 12 KiB", EINVAL, KVPOOL_CREATE_BUDGET, 1, 0, 3 * 4096 },
	{ "page_bytes 128 KiB", EINVAL, KVPOOL_CREATE_BUDGET, 1, 0,
	  2 * CHUNK },
	{ "BUDGET|GPU", EINVAL, KVPOOL_CREATE_BUDGET | KVPOOL_CREATE_GPU, 1,
	  0, PB_A },
	{ "__reserved2", EINVAL, KVPOOL_CREATE_BUDGET, 1, 1, PB_A },
	{ "budget_id without the flag", EINVAL, 0, 1, 0, 0 },
	{ "__reserved2 without the flag", EINVAL, 0, 0, 1, 0 },
	{ "page_bytes without the flag", EINVAL, 0, 0, 0, PB_A },
};

TEST_F(budget, bad_pools)
{
	struct kvpool_ctl_budget b;
	struct kvpool_ctl_create c;
	__u32 none = budget_unused(self->ctl);
	int pools = kt_count_pools();
	size_t n;

	ASSERT_GT(64, none);
	for (n = 0; n < ARRAY_SIZE(bad_pools); n++) {
		const struct bad_pool *t = &bad_pools[n];
		__u32 id = t->budget > 0 ? self->bid :
			   t->budget < 0 ? none : 0;

		budget_geo(&c, 0, id, PAGES_A, t->page_bytes);
		c.flags = t->flags;
		c.__reserved2 = t->reserved2;
		/*
		 * Without the flag, budget 0 would read as "none": name
		 * another id (none is never 0 when ours is).
		 */
		if (!t->flags && t->budget > 0 && !id)
			c.budget_id = none;
		EXPECT_EQ(t->err, kt_ioctl(self->ctl, KVPOOL_CTL_CREATE, &c))
			TH_LOG("%s", t->what);
		EXPECT_EQ(pools, kt_count_pools()) TH_LOG("%s", t->what);
	}
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(2, b.out_nr_pools);
	EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);
}

/* A pool not on a budget says so in sysfs and has no file to map. */
TEST_F(budget, mmap_errors)
{
	int fb = kt_pool_open(_metadata, &self->b);
	struct kt_pool plain;
	char path[64], val[16];
	void *m;
	int fd;

	m = mmap(NULL, CHUNK, PROT_READ, MAP_PRIVATE, fb, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	m = mmap(NULL, SPACE + 4096, PROT_READ, MAP_SHARED, fb, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fb, SPACE);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	m = mmap(NULL, SPACE - CHUNK, PROT_READ, MAP_SHARED, fb, CHUNK);
	ASSERT_NE(MAP_FAILED, m);
	/* No slot is backed yet: every one is SIGBUS. */
	EXPECT_EQ(NR_CHUNKS - 1, count_sigbus(m, NR_CHUNKS - 1));
	munmap(m, SPACE - CHUNK);

	kt_pool_init(_metadata, &plain, 0, 16, 1, 2, 16);
	fd = kt_pool_open(_metadata, &plain);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(ENODEV, errno);
	snprintf(path, sizeof(path), KT_SYSFS_FMT, plain.id, "budget");
	EXPECT_EQ(0, kt_read_text(path, val, sizeof(val)));
	EXPECT_STREQ("-1\n", val);
	kt_pool_fini(_metadata, &plain);
	kt_expect_verify(_metadata, &self->b, fb);
}

/* A takes the whole budget; B waits for what A gives back. */
TEST_F(budget, grow_and_move)
{
	int fa = kt_pool_open(_metadata, &self->a);
	int fb = kt_pool_open(_metadata, &self->b);
	struct kvpool_handle ha[4], hb;
	struct kvpool_ctl_budget b;
	__u32 sh, i, n;

	ASSERT_EQ(0, kt_row_alloc(fa, 4, ha, &sh));
	ASSERT_EQ(0, kt_row_alloc(fb, 1, &hb, &sh));
	/* Rows take no pages, so no chunks. */
	EXPECT_EQ(0, pool_chunks(fa));
	EXPECT_EQ(0, pool_chunks(fb));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, grow(fa, ha[i], 4 * PPC_A, NULL, 0, NULL));
		EXPECT_EQ(4 * (i + 1), pool_chunks(fa));
		EXPECT_EQ(NR_CHUNKS - 4 * (i + 1),
			  budget_free(self->ctl, self->bid));
	}
	EXPECT_EQ(NR_CHUNKS, kt_sysfs_val(self->a.id, "chunks"));
	/* Empty: neither pool can grow, and out_short is the whole ask. */
	EXPECT_EQ(ENOSPC, grow(fa, ha[0], 4 * PPC_A + 1, NULL, 0, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(ENOSPC, grow(fb, hb, PPC_B, NULL, 0, &sh));
	EXPECT_EQ(PPC_B, sh);
	EXPECT_EQ(0, pool_chunks(fb));
	EXPECT_EQ(0, budget_free(self->ctl, self->bid));

	/* The last row is in the top four slots: they go back whole. */
	ASSERT_EQ(0, kt_release1(fa, ha[3], &n));
	EXPECT_EQ(4 * PPC_A, n);
	EXPECT_EQ(12, pool_chunks(fa));
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(4, b.out_free_chunks);
	EXPECT_EQ(0, b.out_moves);
	EXPECT_EQ(12, kt_sysfs_val(self->a.id, "chunks"));

	ASSERT_EQ(0, grow(fb, hb, 4 * PPC_B, NULL, 0, NULL));
	EXPECT_EQ(4, pool_chunks(fb));
	EXPECT_EQ(4, kt_sysfs_val(self->b.id, "chunks"));
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(0, b.out_free_chunks);
	EXPECT_EQ(4, b.out_moves);
	EXPECT_EQ(4ull * CHUNK, b.out_cleared_bytes);
	printf("# 4 chunks of %u KiB cleared in %llu ns\n", CHUNK / 1024,
	       (unsigned long long)b.out_clear_ns);
	EXPECT_EQ(ENOSPC, grow(fb, hb, 4 * PPC_B + 1, NULL, 0, &sh));
	EXPECT_EQ(1, sh);

	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
	/* Everything released: everything back. */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, kt_release1(fa, ha[i], NULL));
	ASSERT_EQ(0, kt_release1(fb, hb, NULL));
	EXPECT_EQ(0, pool_chunks(fa));
	EXPECT_EQ(0, pool_chunks(fb));
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
}

/*
 * Pressure counts what the budget could still give a pool as free: A,
 * with none of its own free and a low watermark of two chunks, is asked
 * nothing while the budget has chunks, and its poller is woken when B
 * takes them, though nothing happened in A.
 */
TEST_F(budget, pressure_counts_budget)
{
	int fa = kt_pool_open(_metadata, &self->a);
	int fb = kt_pool_open(_metadata, &self->b);
	struct kvpool_handle ha, hb;
	struct kvpool_pressure pr;
	int pfd[2], status;
	__u32 sh, n;
	pid_t pid;

	ASSERT_EQ(0, kt_row_alloc(fa, 1, &ha, &sh));
	ASSERT_EQ(0, kt_row_alloc(fb, 1, &hb, &sh));
	ASSERT_EQ(0, grow(fa, ha, PPC_A, NULL, 0, NULL));
	ASSERT_EQ(0, kt_commit1(fa, ha, PPC_A));
	ASSERT_EQ(0, kt_donate1(fa, ha, PPC_A, &n));
	ASSERT_EQ(PPC_A, n);
	/* The row gone, its pages are A's unpinned cache: all askable. */
	ASSERT_EQ(0, kt_release1(fa, ha, NULL));
	ASSERT_EQ(0, kt_set_wmark(self->ctl, self->a.id, 2 * PPC_A,
				  3 * PPC_A));
	EXPECT_EQ(1, pool_chunks(fa));
	/* No page of A is free, but the budget has 15 chunks for it. */
	ASSERT_EQ(0, kt_pressure(fa, &pr));
	EXPECT_EQ(0, pr.out_ask_pages);
	EXPECT_EQ(0, pr.out_reasons);

	ASSERT_EQ(0, pipe2(pfd, O_CLOEXEC));
	pid = kt_pool_fork(_metadata, &self->a);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd p = { .fd = fa, .events = POLLPRI };

		close(pfd[0]);
		kt_child_signal(pfd[1], 'r');
		/* 0 only if woken with POLLPRI before the 10 s are up. */
		_exit(poll(&p, 1, 10000) == 1 && (p.revents & POLLPRI) ? 0 : 1);
	}
	close(pfd[1]);
	ASSERT_EQ('r', kt_pipe_wait(pfd[0]));
	close(pfd[0]);
	/* Nothing asked: the poller stays asleep. */
	usleep(300 * 1000);
	EXPECT_EQ(0, kt_pool_trywait(&self->a, pid, &status));

	/* B takes every chunk the budget has left. */
	ASSERT_EQ(0, grow(fb, hb, (NR_CHUNKS - 1) * PPC_B, NULL, 0, NULL));
	EXPECT_EQ(0, budget_free(self->ctl, self->bid));
	status = kt_pool_wait(&self->a, pid);
	EXPECT_TRUE(KT_CHILD_OK(status))
		TH_LOG("A's poller was not woken by B's grow (status %#x)",
		       status);
	ASSERT_EQ(0, kt_pressure(fa, &pr));
	EXPECT_EQ(KVPOOL_PRESSURE_LOW, pr.out_reasons);
	EXPECT_EQ(PPC_A, pr.out_ask_pages);	/* all of its cache */

	/* B gives them back: nothing asked again. */
	ASSERT_EQ(0, kt_release1(fb, hb, NULL));
	ASSERT_EQ(0, kt_pressure(fa, &pr));
	EXPECT_EQ(0, pr.out_ask_pages);
	EXPECT_EQ(0, pr.out_reasons);
	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
}

/* What A wrote never reaches B, and A's mapping loses the chunks. */
TEST_F(budget, bytes_never_cross)
{
	static __u32 ids[PAGES_A];
	int fa = kt_pool_open(_metadata, &self->a);
	int fb = kt_pool_open(_metadata, &self->b);
	struct kvpool_handle ha[4], hb;
	struct kvpool_ctl_budget b;
	__u32 sh, i, nonzero = 0;
	char *ma, *mb;
	size_t j;

	ASSERT_EQ(0, kt_row_alloc(fa, 4, ha, &sh));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, grow(fa, ha[i], 4 * PPC_A, ids + i * 4 * PPC_A,
				  4 * PPC_A, NULL));
	ma = budget_map(self, fa, SPACE);
	ASSERT_NE(NULL, ma);
	for (i = 0; i < PAGES_A; i++) {
		ASSERT_GT(PAGES_A, ids[i]);
		memset(ma + (size_t)ids[i] * PB_A, 0xa5, PB_A);
	}
	EXPECT_EQ(0, count_sigbus(ma, NR_CHUNKS));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kt_release1(fa, ha[i], NULL));
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	/* Given back: gone from A's mapping at once. */
	EXPECT_EQ(NR_CHUNKS, count_sigbus(ma, NR_CHUNKS));

	ASSERT_EQ(0, kt_row_alloc(fb, 1, &hb, &sh));
	ASSERT_EQ(0, grow(fb, hb, PAGES_B, ids, PAGES_B, NULL));
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(0, b.out_free_chunks);
	EXPECT_EQ(NR_CHUNKS, b.out_moves);
	EXPECT_EQ((__u64)NR_CHUNKS * CHUNK, b.out_cleared_bytes);
	mb = budget_map(self, fb, SPACE);
	ASSERT_NE(NULL, mb);
	EXPECT_EQ(0, count_sigbus(mb, NR_CHUNKS));
	for (i = 0; i < PAGES_B; i++) {
		const char *p = mb + (size_t)ids[i] * PB_B;

		ASSERT_GT(PAGES_B, ids[i]);
		for (j = 0; j < PB_B; j++)
			nonzero += p[j] != 0;
	}
	EXPECT_EQ(0, nonzero);
	/* B holds them now: A still cannot reach them. */
	EXPECT_EQ(NR_CHUNKS, count_sigbus(ma, NR_CHUNKS));
	memset(mb, 0x5a, SPACE);

	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
	ASSERT_EQ(0, kt_release1(fb, hb, NULL));
	EXPECT_EQ(NR_CHUNKS, count_sigbus(mb, NR_CHUNKS));
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	kt_expect_verify(_metadata, &self->b, fb);
}

/* Ceilings, floors, and the refusals of LIMITS. */
TEST_F(budget, limits)
{
	int fa = kt_pool_open(_metadata, &self->a);
	int fb = kt_pool_open(_metadata, &self->b);
	struct kvpool_handle ha[4], hb;
	struct kvpool_ctl_budget b;
	struct kvpool_stats st;
	__u32 sh, other, none = budget_unused(self->ctl);
	char path[64];
	int i;

	ASSERT_EQ(0, kt_row_alloc(fa, 4, ha, &sh));
	ASSERT_EQ(0, kt_row_alloc(fb, 1, &hb, &sh));

	/* A ceiling of 4 chunks (max_bytes rounded down). */
	ASSERT_EQ(0, limits_set(self->ctl, self->bid, self->a.id, 0,
				   4 * CHUNK + 1000));
	ASSERT_EQ(0, grow(fa, ha[0], 4 * PPC_A, NULL, 0, NULL));
	EXPECT_EQ(4, pool_chunks(fa));
	EXPECT_EQ(ENOSPC, grow(fa, ha[1], 1, NULL, 0, &sh));
	EXPECT_EQ(1, sh);
	EXPECT_EQ(4, pool_chunks(fa));
	EXPECT_EQ(NR_CHUNKS - 4, budget_free(self->ctl, self->bid));

	/* B's floor of 8 chunks is out of A's reach, even with no ceiling. */
	ASSERT_EQ(0, limits_set(self->ctl, self->bid, self->b.id,
				   8 * CHUNK, 0));
	ASSERT_EQ(0, limits_set(self->ctl, self->bid, self->a.id, 0, 0));
	EXPECT_EQ(ENOSPC, grow(fa, ha[1], 8 * PPC_A, NULL, 0, &sh));
	/* It took the 4 chunks it could: short of the other 4's pages. */
	EXPECT_EQ(4 * PPC_A, sh);
	/* What the refused EXTEND took went back in the shrink after it. */
	EXPECT_EQ(4, pool_chunks(fa));
	EXPECT_EQ(NR_CHUNKS - 4, budget_free(self->ctl, self->bid));
	ASSERT_EQ(0, grow(fa, ha[1], 4 * PPC_A, NULL, 0, NULL));
	EXPECT_EQ(8, pool_chunks(fa));
	EXPECT_EQ(ENOSPC, grow(fa, ha[2], 1, NULL, 0, &sh));
	EXPECT_EQ(1, sh);

	/* B takes its floor, and keeps it with every page free. */
	ASSERT_EQ(0, grow(fb, hb, 8 * PPC_B, NULL, 0, NULL));
	EXPECT_EQ(0, budget_free(self->ctl, self->bid));
	ASSERT_EQ(0, kt_release1(fb, hb, NULL));
	EXPECT_EQ(8, pool_chunks(fb));
	EXPECT_EQ(0, budget_free(self->ctl, self->bid));
	EXPECT_EQ(ENOSPC, grow(fa, ha[2], 1, NULL, 0, &sh));
	/* A lower floor takes nothing at once; B's next ioctl gives back. */
	ASSERT_EQ(0, limits_set(self->ctl, self->bid, self->b.id, 0, 0));
	ASSERT_EQ(0, kt_stats(fb, &st));
	EXPECT_EQ(8, budget_free(self->ctl, self->bid));
	EXPECT_EQ(0, pool_chunks(fb));
	ASSERT_EQ(0, grow(fa, ha[2], 1, NULL, 0, NULL));
	EXPECT_EQ(9, pool_chunks(fa));

	/* Floors together may not pass the budget (min_bytes rounded up). */
	ASSERT_EQ(0, limits_set(self->ctl, self->bid, self->b.id,
				   8 * CHUNK, 0));
	EXPECT_EQ(ENOSPC, limits_set(self->ctl, self->bid, self->a.id,
					8 * CHUNK + 1, 0));
	EXPECT_EQ(0, limits_set(self->ctl, self->bid, self->a.id,
				   8 * CHUNK, 0));
	EXPECT_EQ(EINVAL, limits_set(self->ctl, self->bid, self->a.id,
					2 * CHUNK, CHUNK));

	/* Another budget, none, no such pool, and fields LIMITS has not. */
	ASSERT_EQ(0, budget_create(self->ctl, 1, 4096, &other));
	EXPECT_EQ(EINVAL, limits_set(self->ctl, other, self->a.id, 0, 0));
	EXPECT_EQ(0, budget_destroy(self->ctl, other));
	EXPECT_EQ(ENODATA, limits_set(self->ctl, none, self->a.id, 0, 0));
	/* Pool ids are 0..63: the highest one no pool has. */
	for (i = 63; i >= 0; i--) {
		snprintf(path, sizeof(path), KT_SYSFS_CLASS "/kvpool%d", i);
		if (access(path, F_OK))
			break;
	}
	ASSERT_LE(0, i);
	EXPECT_EQ(ENODEV, limits_set(self->ctl, self->bid, i, 0, 0));
	memset(&b, 0, sizeof(b));
	b.op = KVPOOL_BUDGET_LIMITS;
	b.budget_id = self->bid;
	b.pool_id = self->a.id;
	b.kind = KVPOOL_ARENA_HOST;
	EXPECT_EQ(EINVAL, budget_op(self->ctl, &b));
	b.kind = 0;
	b.nr_chunks = 1;
	EXPECT_EQ(EINVAL, budget_op(self->ctl, &b));
	b.nr_chunks = 0;
	b.chunk_bytes = CHUNK;
	EXPECT_EQ(EINVAL, budget_op(self->ctl, &b));

	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
	/*
	 * No floors, no rows: every chunk back. (A row still held at close
	 * would be quarantined while this process lives.)
	 */
	EXPECT_EQ(0, limits_set(self->ctl, self->bid, self->a.id, 0, 0));
	EXPECT_EQ(0, limits_set(self->ctl, self->bid, self->b.id, 0, 0));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, kt_release1(fa, ha[i], NULL));
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	kt_expect_verify(_metadata, &self->a, fa);
}

/* A SIGKILLed client's chunks come back once its pages may. */
TEST_F(budget, kill9)
{
	int fa = kt_pool_open(_metadata, &self->a);
	int pfd[2];
	long long t0, waited;
	struct kvpool_stats st;
	pid_t pid;
	int status;

	ASSERT_EQ(0, pipe2(pfd, O_CLOEXEC));
	pid = kt_pool_fork(_metadata, &self->a);
	if (pid == 0) {
		int fd = kt_open_id(self->a.id, O_RDWR | O_CLOEXEC);
		struct kvpool_handle h;
		__u32 sh, n = 0, i;
		static __u32 ids[8 * PPC_A];
		char *m;

		close(pfd[0]);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(!kt_row_alloc(fd, 1, &h, &sh));
		CHILD_CHECK(!grow(fd, h, 8 * PPC_A, ids, 8 * PPC_A, NULL));
		m = mmap(NULL, SPACE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHILD_CHECK(m != MAP_FAILED);
		/* Still writing when it dies, as a GPU kernel would be. */
		for (i = 0; i < 8 * PPC_A; i++)
			memset(m + (size_t)ids[i] * PB_A, 0x3c, PB_A);
		kt_child_signal(pfd[1], 'r');
		for (;;)
			m[(size_t)ids[n++ % (8 * PPC_A)] * PB_A] ^= 1;
	}
	close(pfd[1]);
	ASSERT_EQ('r', kt_pipe_wait(pfd[0]));
	close(pfd[0]);
	EXPECT_EQ(8, pool_chunks(fa));
	EXPECT_EQ(NR_CHUNKS - 8, budget_free(self->ctl, self->bid));

	kill(pid, SIGKILL);
	status = kt_pool_wait(&self->a, pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	t0 = kt_now_ms();
	while (budget_free(self->ctl, self->bid) != NR_CHUNKS &&
	       kt_now_ms() - t0 < 2 * KT_SETTLE_MS)
		kt_sleep_ms(2);
	waited = kt_now_ms() - t0;
	printf("# the dead client's 8 chunks came back %lld ms after its reap\n",
	       waited);
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	EXPECT_EQ(0, pool_chunks(fa));
	ASSERT_EQ(0, kt_stats(fa, &st));
	EXPECT_EQ(0, st.out_quarantine_pages);
	EXPECT_EQ(0, st.out_row_pages);
	EXPECT_EQ(1, st.out_nr_clients);
	kt_expect_verify(_metadata, &self->a, fa);
}

/*
 * A mapping holds its client's file: a client closed while mapped still
 * holds its pages. The munmap is its last close: what it held then is
 * quarantined while the process that used it lives, and its chunks come
 * back when the quarantine ends. A child plays the client, so that it can
 * exit while the test watches.
 */
TEST_F(budget, close_while_mapped)
{
	int fa = kt_pool_open(_metadata, &self->a);
	struct kvpool_stats st;
	int up[2], go[2];
	long long t0;
	pid_t pid;

	ASSERT_EQ(0, pipe2(up, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	pid = kt_pool_fork(_metadata, &self->a);
	if (pid == 0) {
		int fd = kt_open_id(self->a.id, O_RDWR | O_CLOEXEC);
		struct kvpool_handle h;
		__u32 sh;
		char *m;

		close(up[0]);
		close(go[1]);
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(!kt_row_alloc(fd, 1, &h, &sh));
		CHILD_CHECK(!grow(fd, h, 4 * PPC_A, NULL, 0, NULL));
		m = mmap(NULL, SPACE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		CHILD_CHECK(m != MAP_FAILED);
		close(fd);
		CHILD_CHECK(touch(m + 3 * CHUNK) == 0);
		kt_child_signal(up[1], 'c');
		CHILD_CHECK(kt_pipe_wait(go[0]) == 'u');
		munmap(m, SPACE);
		kt_child_signal(up[1], 'u');
		kt_pipe_wait(go[0]);
		_exit(0);
	}
	close(up[1]);
	close(go[0]);
	ASSERT_EQ('c', kt_pipe_wait(up[0]));
	ASSERT_EQ(0, kt_stats(fa, &st));
	EXPECT_EQ(2, st.out_nr_clients);
	EXPECT_EQ(4 * PPC_A, st.out_row_pages);
	EXPECT_EQ(4, pool_chunks(fa));

	kt_child_signal(go[1], 'u');
	ASSERT_EQ('u', kt_pipe_wait(up[0]));
	ASSERT_EQ(0, kt_stats(fa, &st));
	EXPECT_EQ(1, st.out_nr_clients);
	EXPECT_EQ(0, st.out_row_pages);
	/* Its process lives: the pages wait, and so do their chunks. */
	EXPECT_EQ(4 * PPC_A, st.out_quarantine_pages);
	EXPECT_EQ(4, pool_chunks(fa));

	close(go[1]);
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&self->a, pid)));
	close(up[0]);
	t0 = kt_now_ms();
	while (budget_free(self->ctl, self->bid) != NR_CHUNKS &&
	       kt_now_ms() - t0 < 2 * KT_SETTLE_MS)
		kt_sleep_ms(2);
	printf("# the unmapped client's chunks came back %lld ms after its reap\n",
	       kt_now_ms() - t0);
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	EXPECT_EQ(0, kt_sysfs_val(self->a.id, "chunks"));
	ASSERT_EQ(0, kt_stats(fa, &st));
	EXPECT_EQ(0, st.out_quarantine_pages);
	kt_expect_verify(_metadata, &self->a, fa);
}

/*
 * Two processes, one a pool, grow and release against each other while
 * writing every page they hold through their mappings: a page a row
 * holds is always backed (no SIGBUS), a refusal is only ENOSPC, and in
 * the end every chunk is back and both pools verify.
 */
#define ROUNDS 300

static void contend_child(__u32 pool_id, __u32 pages, __u64 page_bytes,
			  unsigned int seed)
{
	static __u32 ids[PAGES_A];
	int fd = kt_open_id(pool_id, O_RDWR | O_CLOEXEC);
	struct kvpool_handle h;
	__u32 sh, r, i, len;
	int ret;
	char *m;

	CHILD_CHECK(fd >= 0);
	m = mmap(NULL, SPACE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHILD_CHECK(m != MAP_FAILED);
	for (r = 0; r < ROUNDS; r++) {
		CHILD_CHECK(!kt_row_alloc(fd, 1, &h, &sh));
		len = 1 + rand_r(&seed) % pages;
		ret = grow(fd, h, len, ids, PAGES_A, NULL);
		CHILD_CHECK(ret == 0 || ret == ENOSPC);
		for (i = 0; !ret && i < len; i++)
			m[(size_t)ids[i] * page_bytes + r % page_bytes] = (char)r;
		CHILD_CHECK(!kt_release1(fd, h, NULL));
	}
	_exit(0);
}

TEST_F(budget, contend)
{
	int fa = kt_pool_open(_metadata, &self->a);
	int fb = kt_pool_open(_metadata, &self->b);
	pid_t pa, pb;

	pa = kt_pool_fork(_metadata, &self->a);
	if (pa == 0)
		contend_child(self->a.id, PAGES_A, PB_A, 1);
	pb = kt_pool_fork(_metadata, &self->b);
	if (pb == 0)
		contend_child(self->b.id, PAGES_B, PB_B, 2);
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&self->a, pa)));
	EXPECT_TRUE(KT_CHILD_OK(kt_pool_wait(&self->b, pb)));
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	kt_expect_verify(_metadata, &self->a, fa);
	kt_expect_verify(_metadata, &self->b, fb);
}

/* Destroying a pool gives its chunks back; then the budget can go. */
TEST_F(budget, destroy_returns_chunks)
{
	int fa = kt_pool_open(_metadata, &self->a);
	struct kvpool_ctl_budget b;
	struct kvpool_handle h;
	struct kt_pool c;
	__u32 sh;
	int fc;

	/* A high watermark of the whole pool: A keeps what it took. */
	ASSERT_EQ(0, kt_set_wmark(self->ctl, self->a.id, 0, PAGES_A));
	ASSERT_EQ(0, kt_row_alloc(fa, 1, &h, &sh));
	ASSERT_EQ(0, grow(fa, h, 8 * PPC_A, NULL, 0, NULL));
	kt_expect_verify(_metadata, &self->a, fa);
	/* Released first: a row held at close would be quarantined. */
	ASSERT_EQ(0, kt_release1(fa, h, NULL));
	EXPECT_EQ(8, pool_chunks(fa));
	kt_pool_close(&self->a, fa);
	EXPECT_EQ(8, kt_sysfs_val(self->a.id, "chunks"));
	EXPECT_EQ(NR_CHUNKS - 8, budget_free(self->ctl, self->bid));

	/* RESERVE_ZERO: slot 0 is backed at create and kept. */
	bpool_init(_metadata, &c, self->ctl, KVPOOL_CREATE_RESERVE_ZERO,
		   self->bid, 2 * PPC_A, PB_A);
	EXPECT_EQ(1, kt_sysfs_val(c.id, "chunks"));
	EXPECT_EQ(NR_CHUNKS - 9, budget_free(self->ctl, self->bid));
	fc = kt_pool_open(_metadata, &c);
	EXPECT_EQ(1, pool_chunks(fc));
	kt_expect_verify(_metadata, &c, fc);
	kt_pool_close(&c, fc);
	EXPECT_EQ(1, kt_sysfs_val(c.id, "chunks"));

	EXPECT_EQ(EBUSY, budget_destroy(self->ctl, self->bid));
	ASSERT_EQ(0, kt_destroy(self->ctl, self->a.id));
	self->a.created = false;
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(NR_CHUNKS - 1, b.out_free_chunks);
	EXPECT_EQ(2, b.out_nr_pools);
	ASSERT_EQ(0, kt_destroy(self->ctl, c.id));
	c.created = false;
	kt_pool_close_ctl(&c);
	EXPECT_EQ(NR_CHUNKS, budget_free(self->ctl, self->bid));
	EXPECT_EQ(EBUSY, budget_destroy(self->ctl, self->bid));
	ASSERT_EQ(0, kt_destroy(self->ctl, self->b.id));
	self->b.created = false;
	ASSERT_EQ(0, budget_info(self->ctl, self->bid, &b));
	EXPECT_EQ(0, b.out_nr_pools);
	EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);
	ASSERT_EQ(0, budget_destroy(self->ctl, self->bid));
	self->made = false;
	EXPECT_EQ(ENODATA, budget_info(self->ctl, self->bid, &b));
}

TEST_HARNESS_MAIN
