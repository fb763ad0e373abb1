// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: kvpoolctl's chunk budgets (ABI 4) against the module,
 * as an administrator runs it: budget create, two pools on the budget
 * (create --budget --page-bytes), budget limits (a ceiling the pool's
 * EXTEND then meets), budget show in text, CSV and JSON (chunks, free
 * chunks, pools, a chunk that moved between the pools and the bytes
 * cleared for it), status and arena show of a budget pool (its budget
 * and chunks from sysfs), every refusal with its exit code and the words
 * kvpoolctl(8) promises, and budget destroy, refused while pools are on
 * the budget.
 *
 * The teardown removes what a test left with raw ioctls, and checks that
 * the budget had every chunk back.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"
/* As root without CAP_SYS_ADMIN, for kvpoolctl and what it runs. */
#define NO_ADMIN	"setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "

#define NR_CHUNKS	16
#define CHUNK		(64u * 1024)
#define TOKENS		16

/* kvpoolctl(8)'s exit codes. */
enum { OK = 0, USAGE = 2, NO_POOL = 4, PERM = 5, BUSY = 6, FAIL = 7 };

FIXTURE(bctl) {
	int ctl;
	int budget;		/* -1: none made */
	int pools[3];		/* -1: none */
	int fd;			/* a client a test has open, or -1 */
	char out[8192];
};

static int budget_op(int ctl, __u32 op, __u32 id,
		     struct kvpool_ctl_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->size = sizeof(*b);
	b->op = op;
	b->budget_id = id;
	return kt_ioctl(ctl, KVPOOL_CTL_BUDGET, b);
}

FIXTURE_SETUP(bctl)
{
	size_t i;

	self->ctl = kt_ctl_open();
	ASSERT_LE(0, self->ctl);
	self->budget = -1;
	self->fd = -1;
	for (i = 0; i < ARRAY_SIZE(self->pools); i++)
		self->pools[i] = -1;
}

FIXTURE_TEARDOWN(bctl)
{
	struct kvpool_ctl_budget b;
	size_t i;

	/* A pool is destroyed only once no client has it open. */
	if (self->fd >= 0)
		close(self->fd);
	for (i = 0; i < ARRAY_SIZE(self->pools); i++)
		if (self->pools[i] >= 0)
			EXPECT_EQ(0, kt_destroy(self->ctl, self->pools[i]));
	if (self->budget >= 0) {
		EXPECT_EQ(0, budget_op(self->ctl, KVPOOL_BUDGET_INFO,
				       self->budget, &b));
		EXPECT_EQ(NR_CHUNKS, b.out_free_chunks);
		EXPECT_EQ(0, budget_op(self->ctl, KVPOOL_BUDGET_DESTROY,
				       self->budget, &b));
	}
	close(self->ctl);
}

/* Runs kvpoolctl with @fmt's arguments; its output in self->out. */
#define kvpoolctl(fmt, ...) \
	kt_run_output(self->out, sizeof(self->out), KVPOOLCTL " " fmt, \
		      ##__VA_ARGS__)

/* Whether kvpoolctl's last output holds @s. */
#define SAID(s)	(strstr(self->out, (s)) != NULL)

/* The number kvpoolctl printed alone on its first line, or -1. */
static int printed_id(const char *out)
{
	char *end;
	long v = strtol(out, &end, 10);

	return end != out && *end == '\n' && v >= 0 && v < 1 << 20 ?
	       (int)v : -1;
}

/* The budget of 16 chunks of 64 KiB, by kvpoolctl. */
static void make_budget(struct __test_metadata *_metadata,
			FIXTURE_DATA(bctl) *self)
{
	ASSERT_EQ(OK, kvpoolctl("budget create --chunks %u --chunk-bytes 64K",
				NR_CHUNKS)) TH_LOG("%s", self->out);
	self->budget = printed_id(self->out);
	ASSERT_LE(0, self->budget) TH_LOG("'%s'", self->out);
}

/* Pool @slot on the budget: @pages pages of @page_bytes. */
static void make_pool(struct __test_metadata *_metadata,
		      FIXTURE_DATA(bctl) *self, int slot, unsigned int pages,
		      unsigned int page_bytes)
{
	ASSERT_EQ(OK, kvpoolctl("create --pages %u --page-tokens %u --rows 8 --row-tokens %u --budget %d --page-bytes %u",
				pages, TOKENS, pages * TOKENS, self->budget,
				page_bytes)) TH_LOG("%s", self->out);
	self->pools[slot] = printed_id(self->out);
	ASSERT_LE(0, self->pools[slot]) TH_LOG("'%s'", self->out);
	/* Watermarks 0: the pool gives back every wholly free chunk. */
	ASSERT_EQ(OK, kvpoolctl("wmark %d --low 0 --high 0",
				self->pools[slot])) TH_LOG("%s", self->out);
}

/* One row of pool @id grown to @pages pages: 0 or the errno. */
static int grow(int fd, struct kvpool_handle *h, unsigned int pages)
{
	return kt_grow(fd, *h, pages * TOKENS);
}

/*
 * Create, two pools, show in its three forms, a move between the pools,
 * status and arena show, then destroy: refused while the pools exist.
 */
TEST_F(bctl, lifecycle)
{
	struct kvpool_handle h;
	char want[128];
	int a, b, fd;

	make_budget(_metadata, self);
	/* A: 4 KiB pages, 16 a chunk; B: 16 KiB pages, 4 a chunk. */
	make_pool(_metadata, self, 0, NR_CHUNKS * 16, 4096);
	make_pool(_metadata, self, 1, NR_CHUNKS * 4, 16384);
	a = self->pools[0];
	b = self->pools[1];

	/* Slot 0 of each (reserve-zero, the default): 14 chunks free. */
	ASSERT_EQ(OK, kvpoolctl("budget show --csv -o budget_id,kind,nr_chunks,chunk_bytes,free_chunks,nr_pools %d",
				self->budget)) TH_LOG("%s", self->out);
	snprintf(want, sizeof(want),
		 "budget_id,kind,nr_chunks,chunk_bytes,free_chunks,nr_pools\n"
		 "%d,host,16,65536,14,2\n", self->budget);
	EXPECT_STREQ(want, self->out);
	ASSERT_EQ(OK, kvpoolctl("budget show")) TH_LOG("%s", self->out);
	EXPECT_TRUE(SAID("FREE") && SAID("POOLS") && SAID("BYTES/S"))
		TH_LOG("%s", self->out);

	/* status: the pool's budget and its chunks, from sysfs. */
	ASSERT_EQ(OK, kvpoolctl("status --csv -o pool_id,budget,chunks %d", a))
		TH_LOG("%s", self->out);
	snprintf(want, sizeof(want), "pool_id,budget,chunks\n%d,%d,1\n", a,
		 self->budget);
	EXPECT_STREQ(want, self->out);
	ASSERT_EQ(OK, kvpoolctl("status --json %d", b)) TH_LOG("%s",
							       self->out);
	snprintf(want, sizeof(want), "\"budget\": %d,\n      \"chunks\": 1,",
		 self->budget);
	EXPECT_TRUE(SAID(want)) TH_LOG("%s", self->out);

	/*
	 * A takes 8 chunks (127 pages and page 0) and gives 7 back on
	 * release; B then takes chunks A held last: moved, and cleared.
	 */
	fd = self->fd = kt_open_id(a, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	ASSERT_EQ(0, grow(fd, &h, 127));
	ASSERT_EQ(OK, kvpoolctl("status --csv -o chunks %d", a));
	EXPECT_STREQ("chunks\n8\n", self->out);
	ASSERT_EQ(0, kt_release1(fd, h, NULL));
	close(fd);
	self->fd = -1;
	EXPECT_EQ(1, kt_sysfs_val(a, "chunks"));
	fd = self->fd = kt_open_id(b, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	/* 15 chunks of B's 4 pages, page 0's among them: all that is free. */
	ASSERT_EQ(0, grow(fd, &h, 15 * 4 - 1));
	ASSERT_EQ(OK, kvpoolctl("budget show --json %d", self->budget))
		TH_LOG("%s", self->out);
	EXPECT_TRUE(SAID("\"free_chunks\": 0,")) TH_LOG("%s", self->out);
	EXPECT_FALSE(SAID("\"moves\": 0,")) TH_LOG("no move: %s", self->out);
	EXPECT_FALSE(SAID("\"cleared_bytes\": 0,")) TH_LOG("%s", self->out);
	EXPECT_FALSE(SAID("\"clear_bytes_per_sec\": null"))
		TH_LOG("%s", self->out);
	ASSERT_EQ(0, kt_release1(fd, h, NULL));
	close(fd);
	self->fd = -1;

	/* arena show: the budget, the chunks held, no chunk table. */
	ASSERT_EQ(OK, kvpoolctl("arena show %d", a)) TH_LOG("%s", self->out);
	snprintf(want, sizeof(want), "budget      %d ", self->budget);
	EXPECT_TRUE(SAID(want) && SAID("1 held now")) TH_LOG("%s", self->out);
	EXPECT_FALSE(SAID("OFFSET")) TH_LOG("%s", self->out);
	ASSERT_EQ(OK, kvpoolctl("arena show --json %d", a));
	snprintf(want, sizeof(want), "\"budget\": %d,", self->budget);
	EXPECT_TRUE(SAID(want) && SAID("\"nr_chunks\": 1,") &&
		    SAID("\"chunks\": null")) TH_LOG("%s", self->out);
	/* Its arena is the budget's: none to set. */
	EXPECT_EQ(FAIL, kvpoolctl("arena create %d --host --page-bytes 4K",
				  a));
	EXPECT_TRUE(SAID("is on chunk budget")) TH_LOG("%s", self->out);

	/* Busy while pools are on it; then gone, and "no such budget". */
	EXPECT_EQ(BUSY, kvpoolctl("budget destroy %d", self->budget));
	EXPECT_TRUE(SAID("has pools on it")) TH_LOG("%s", self->out);
	EXPECT_EQ(OK, kvpoolctl("destroy %d", a)) TH_LOG("%s", self->out);
	self->pools[0] = -1;
	EXPECT_EQ(OK, kvpoolctl("destroy %d", b)) TH_LOG("%s", self->out);
	self->pools[1] = -1;
	EXPECT_EQ(OK, kvpoolctl("budget destroy %d", self->budget))
		TH_LOG("%s", self->out);
	EXPECT_EQ(FAIL, kvpoolctl("budget show %d", self->budget));
	EXPECT_TRUE(SAID("no such budget")) TH_LOG("%s", self->out);
	self->budget = -1;
}

/* limits: a ceiling the pool then meets; each refusal says which. */
TEST_F(bctl, limits)
{
	char path[64], text[16];
	struct kvpool_handle h;
	int a, plain, fd;
	__u32 id;

	make_budget(_metadata, self);
	make_pool(_metadata, self, 0, NR_CHUNKS * 16, 4096);
	a = self->pools[0];

	/* At most 2 chunks: 31 pages beside page 0, and not one more. */
	ASSERT_EQ(OK, kvpoolctl("budget limits %d %d --min 64K --max 128K",
				self->budget, a)) TH_LOG("%s", self->out);
	fd = self->fd = kt_open_id(a, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	EXPECT_EQ(0, grow(fd, &h, 31));
	EXPECT_EQ(ENOSPC, grow(fd, &h, 32));
	EXPECT_EQ(2, kt_sysfs_val(a, "chunks"));
	ASSERT_EQ(0, kt_release1(fd, h, NULL));
	close(fd);
	self->fd = -1;
	/* No limits again: the whole budget. */
	ASSERT_EQ(OK, kvpoolctl("budget limits %d %d", self->budget, a));
	fd = self->fd = kt_open_id(a, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	EXPECT_EQ(0, grow(fd, &h, 40));
	ASSERT_EQ(0, kt_release1(fd, h, NULL));
	close(fd);
	self->fd = -1;

	EXPECT_EQ(FAIL, kvpoolctl("budget limits %d %d --min 256K --max 128K",
				  self->budget, a));
	EXPECT_TRUE(SAID("refused --min 262144 --max 131072"))
		TH_LOG("%s", self->out);
	EXPECT_EQ(FAIL, kvpoolctl("budget limits %d %d --min 2M",
				  self->budget, a));
	EXPECT_TRUE(SAID("floors")) TH_LOG("%s", self->out);
	EXPECT_EQ(FAIL, kvpoolctl("budget limits 63 %d", a));
	EXPECT_TRUE(SAID("no such budget: 63")) TH_LOG("%s", self->out);
	/* A pool on no budget; one that is not there. */
	ASSERT_EQ(0, kt_create(self->ctl, 0, 64, TOKENS, 4, 1024, &id));
	plain = self->pools[1] = (int)id;
	EXPECT_EQ(FAIL, kvpoolctl("budget limits %d %d --max 64K",
				  self->budget, plain));
	EXPECT_TRUE(SAID("is not on budget") && SAID("it is on none"))
		TH_LOG("%s", self->out);
	snprintf(path, sizeof(path), "/sys/class/kvpool/kvpool%d/budget",
		 plain);
	EXPECT_EQ(0, kt_read_text(path, text, sizeof(text)));
	EXPECT_STREQ("-1\n", text);
	EXPECT_EQ(NO_POOL, kvpoolctl("budget limits %d 4000", self->budget));
	EXPECT_TRUE(SAID("no such pool")) TH_LOG("%s", self->out);
	/* The plain pool's status: no budget, no chunks. */
	ASSERT_EQ(OK, kvpoolctl("status --json %d", plain));
	EXPECT_TRUE(SAID("\"budget\": null,\n      \"chunks\": null,"))
		TH_LOG("%s", self->out);
}

/* create's and budget's refusals: exit codes and words. */
TEST_F(bctl, refusals)
{
	make_budget(_metadata, self);

	/* Usage errors: exit 2, nothing asked of the kernel. */
	EXPECT_EQ(USAGE, kvpoolctl("budget create --chunks 4"));
	EXPECT_EQ(USAGE, kvpoolctl("budget destroy 1k"));
	EXPECT_EQ(USAGE, kvpoolctl("budget show --units bytes"));
	EXPECT_EQ(USAGE, kvpoolctl("budget frob"));
	EXPECT_EQ(USAGE, kvpoolctl("create --pages 64 --page-tokens 16 --rows 4 --row-tokens 1024 --budget %d",
				   self->budget));
	EXPECT_TRUE(SAID("go together")) TH_LOG("%s", self->out);
	EXPECT_EQ(USAGE, kvpoolctl("create --pages 64 --page-tokens 16 --rows 4 --row-tokens 1024 --budget %d --page-bytes 4K --gpu 00:10.0",
				   self->budget));

	/* The kernel's: exit 7 and why. */
	EXPECT_EQ(FAIL, kvpoolctl("budget create --chunks 0 --chunk-bytes 64K"));
	EXPECT_TRUE(SAID("rules:")) TH_LOG("%s", self->out);
	EXPECT_EQ(FAIL, kvpoolctl("budget create --chunks 4 --chunk-bytes 1000"));
	EXPECT_TRUE(SAID("a multiple of the CPU page")) TH_LOG("%s",
							       self->out);
	EXPECT_EQ(FAIL, kvpoolctl("create --pages 64 --page-tokens 16 --rows 4 --row-tokens 1024 --budget 63 --page-bytes 4K"));
	EXPECT_TRUE(SAID("no such budget: 63")) TH_LOG("%s", self->out);
	EXPECT_EQ(FAIL, kvpoolctl("create --pages 64 --page-tokens 16 --rows 4 --row-tokens 1024 --budget %d --page-bytes 3K",
				  self->budget));
	EXPECT_TRUE(SAID("does not divide budget") && SAID("65536"))
		TH_LOG("%s", self->out);
	EXPECT_EQ(FAIL, kvpoolctl("budget destroy 63"));
	EXPECT_TRUE(SAID("no such budget: 63")) TH_LOG("%s", self->out);
	/* No pool was made by any of these. */
	EXPECT_EQ(OK, kvpoolctl("budget show --csv -o nr_pools,free_chunks %d",
				self->budget));
	EXPECT_STREQ("nr_pools,free_chunks\n0,16\n", self->out);

	/* Without CAP_SYS_ADMIN: exit 5, the kernel's EPERM. */
	EXPECT_EQ(PERM, kt_run_output(self->out, sizeof(self->out),
				      NO_ADMIN KVPOOLCTL " budget show %d",
				      self->budget));
	EXPECT_TRUE(SAID("CAP_SYS_ADMIN")) TH_LOG("%s", self->out);
}

TEST_HARNESS_MAIN
