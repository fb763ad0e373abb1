// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: a pool on a chunk budget (ABI 4) through libkvpool,
 * as an administrator and a server use it, against the module.
 *
 * budget_test checks the ABI with raw ioctls; this one checks that the
 * library's calls mean what their man pages say on a real kernel:
 * kvpool_budget_create() and kvpool_pool_create_budget() make a budget
 * and a pool on it; kvpool_arena_map() maps the pool's file (a view of
 * its whole id space, the chunks held at map time, no descriptor left);
 * a row extended past the chunks the pool holds takes more, its pages
 * written through kvpool_page_addr() read back the same in a second
 * client's mapping; released, the pool gives the chunks back
 * (kvpool_budget_info() and sysfs count them) while the view stays; and
 * the library hands the kernel's refusals back unchanged (ARENA_FDS of a
 * budget pool, a busy budget, a missing one, a ceiling below a floor).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <dirent.h>
#include <kvpool.h>

#define NR_CHUNKS	8
#define CHUNK		(64u * 1024)
#define PAGE		4096u
#define PPC		(CHUNK / PAGE)		/* 16 pages a chunk */
#define NR_PAGES	(NR_CHUNKS * PPC)	/* the whole budget */
#define TOKENS		16

FIXTURE(blib) {
	int ctl;
	unsigned int budget;
	bool have_budget;
	unsigned int pool;
	bool have_pool;
	char path[64];
	/* A test's clients and views, for the teardown if it ends early. */
	struct kvpool *kp[2];
	struct kvpool_arena_view v[2];
};

FIXTURE_SETUP(blib)
{
	struct kvpool_pool_params p = {
		.nr_pages = NR_PAGES, .page_tokens = TOKENS, .nr_rows = 4,
		.row_tokens = NR_PAGES * TOKENS,
		.flags = KVPOOL_CREATE_RESERVE_ZERO,
	};

	self->ctl = kt_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, kvpool_budget_create(KVPOOL_ARENA_HOST, NR_CHUNKS, CHUNK,
					  &self->budget));
	self->have_budget = true;
	ASSERT_EQ(0, kvpool_pool_create_budget(&p, self->budget, PAGE,
					       &self->pool));
	self->have_pool = true;
	/* Watermarks 0: every wholly free slot goes back after each op. */
	ASSERT_EQ(0, kvpool_set_wmark(self->pool, 0, 0));
	kt_dev_path(self->path, sizeof(self->path), self->pool);
}

FIXTURE_TEARDOWN(blib)
{
	struct kvpool_ctl_budget b;
	int i;

	/* The pool is destroyed only once no client has it open. */
	for (i = 0; i < 2; i++) {
		kvpool_arena_unmap(&self->v[i]);
		kvpool_close(self->kp[i]);
	}
	if (self->have_pool)
		EXPECT_EQ(0, kvpool_pool_destroy(self->pool));
	/* Every chunk back before the budget goes. */
	if (self->have_budget) {
		EXPECT_EQ(0, kvpool_budget_info(self->budget, &b));
		EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);
		EXPECT_EQ(0, kvpool_budget_destroy(self->budget));
	}
	if (self->ctl >= 0)
		close(self->ctl);
}

/* Descriptors this process has open. */
static int nr_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static unsigned char pattern(__u32 page, __u32 off)
{
	return (unsigned char)(page * 7 + off / 512 + 1);
}

/*
 * A new budget pool holds slot 0 (RESERVE_ZERO): the map covers its id
 * space and says 1 chunk. A row of 40 pages takes slots up to the 3rd,
 * written through the view and read back through another client's; the
 * release gives them back, and the view's nr_chunks stays what it was.
 */
TEST_F(blib, map_extend_write_read)
{
	struct kvpool_arena_view *v1 = &self->v[0], *v2 = &self->v[1];
	struct kvpool_extend_entry e = { 0 };
	struct kvpool_ctl_budget b;
	struct kvpool_arena a;
	struct kvpool *k1, *k2;
	struct kvpool_handle h;
	__u32 pages[40], i, off, bad = 0;
	int fds;

	ASSERT_EQ(0, kvpool_open(self->path, &self->kp[0]));
	ASSERT_EQ(0, kvpool_open(self->path, &self->kp[1]));
	k1 = self->kp[0];
	k2 = self->kp[1];
	EXPECT_EQ(1, kt_sysfs_val(self->pool, "chunks"));
	EXPECT_EQ(self->budget, kt_sysfs_val(self->pool, "budget"));

	fds = nr_fds();
	ASSERT_EQ(0, kvpool_arena_map(k1, v1)) TH_LOG("%s",
						       kvpool_arena_error());
	EXPECT_EQ(fds, nr_fds()) TH_LOG("map left a descriptor open");
	EXPECT_EQ(KVPOOL_ARENA_HOST, v1->kind);
	EXPECT_EQ(PAGE, v1->page_bytes);
	EXPECT_EQ(NR_PAGES, v1->nr_pages);
	EXPECT_EQ((__u64)NR_CHUNKS * CHUNK, v1->bytes);
	EXPECT_EQ(1, v1->nr_chunks);

	/* 40 pages and page 0: slots 0 to 2, all backed by the extend. */
	ASSERT_EQ(1, kvpool_alloc_rows(k1, &h, 1, NULL));
	e.handle = h;
	e.new_len = 40 * TOKENS;
	ASSERT_EQ(40, kvpool_extend(k1, &e, 1, pages, 40, NULL));
	ASSERT_EQ(0, kvpool_arena_info(k1, &a));
	EXPECT_TRUE(a.out_set_flags & KVPOOL_ARENA_SET_BUDGET);
	EXPECT_EQ(3, a.out_nr_chunks);
	EXPECT_EQ(3, kt_sysfs_val(self->pool, "chunks"));
	EXPECT_EQ(1, v1->nr_chunks) TH_LOG("the view is the map's moment");

	for (i = 0; i < 40; i++) {
		unsigned char *p = kvpool_page_addr(v1, pages[i]);

		ASSERT_NE(NULL, p);
		for (off = 0; off < PAGE; off++)
			p[off] = pattern(pages[i], off);
	}
	/* Mapped after the writes, by another client: the same bytes. */
	ASSERT_EQ(0, kvpool_arena_map(k2, v2));
	EXPECT_NE(v1->base, v2->base);
	EXPECT_EQ(3, v2->nr_chunks);
	for (i = 0; i < 40; i++) {
		const unsigned char *p = kvpool_page_addr(v2, pages[i]);

		for (off = 0; off < PAGE; off++)
			bad += p[off] != pattern(pages[i], off);
	}
	EXPECT_EQ(0, bad) TH_LOG("bytes that differ between the mappings");

	/* ARENA_FDS has nothing to give: the kernel's EOPNOTSUPP. */
	EXPECT_EQ(-EOPNOTSUPP, kvpool_arena_fds(k1, 0, 1,
						&(struct kvpool_arena_fd){ 0 },
						NULL));

	/* Released: slots 1 and 2 go back; slot 0 (page 0) stays. */
	ASSERT_EQ(40, kvpool_release(k1, &h, 1, NULL));
	EXPECT_EQ(1, kt_sysfs_val(self->pool, "chunks"));
	ASSERT_EQ(0, kvpool_budget_info(self->budget, &b));
	EXPECT_EQ(NR_CHUNKS - 1, b.out_free_chunks);
	EXPECT_EQ(1, b.out_nr_pools);
	EXPECT_EQ(NR_CHUNKS, b.nr_chunks);
	EXPECT_EQ(CHUNK, b.chunk_bytes);
	EXPECT_EQ(KVPOOL_ARENA_HOST, b.kind);

	EXPECT_EQ(0, kvpool_arena_unmap(v1));
	EXPECT_EQ(NULL, v1->base);
	EXPECT_EQ(0, kvpool_arena_unmap(v2));
	kvpool_close(k1);
	kvpool_close(k2);
	self->kp[0] = self->kp[1] = NULL;
}

/* The kernel's refusals come back as they were, and change nothing. */
TEST_F(blib, refusals)
{
	struct kvpool_pool_params p = {
		.nr_pages = 64, .page_tokens = TOKENS, .nr_rows = 4,
		.row_tokens = 1024,
	};
	struct kvpool_ctl_budget b;
	unsigned int id = 77;

	EXPECT_EQ(-EBUSY, kvpool_budget_destroy(self->budget));
	EXPECT_EQ(-EINVAL, kvpool_budget_limits(self->budget, self->pool,
						2 * CHUNK, CHUNK));
	EXPECT_EQ(-ENOSPC, kvpool_budget_limits(self->budget, self->pool,
						(NR_CHUNKS + 1ull) * CHUNK,
						0));
	EXPECT_EQ(0, kvpool_budget_limits(self->budget, self->pool, CHUNK,
					  4 * CHUNK));
	/* A page that does not divide the chunk; a budget that is not. */
	EXPECT_EQ(-EINVAL, kvpool_pool_create_budget(&p, self->budget, 3000,
						     &id));
	EXPECT_EQ(77, id);
	memset(&b, 0xab, sizeof(b));
	EXPECT_EQ(-ENODATA, kvpool_budget_info(63, &b));
	EXPECT_EQ(0xabababab, b.nr_chunks) TH_LOG("written on failure");
	EXPECT_EQ(-EOPNOTSUPP, kvpool_budget_create(KVPOOL_ARENA_CUDA, 1,
						    CHUNK, NULL));
	EXPECT_EQ(-EINVAL, kvpool_budget_create(KVPOOL_ARENA_HOST, 1, 1000,
						NULL));
	/* The arena is the budget's: none can be set. */
	EXPECT_EQ(-EEXIST, kvpool_arena_create_host(self->pool, PAGE, 1,
						    NULL));
	ASSERT_EQ(0, kvpool_budget_info(self->budget, &b));
	EXPECT_EQ(1, b.out_nr_pools);
}

TEST_HARNESS_MAIN
