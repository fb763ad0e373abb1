// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the general ioctl format, for every op.
 *
 * Fixture "abi" runs the same checks on each ioctl (one variant per op):
 * size below the first release (EINVAL), a longer struct with a zero tail
 * (accepted) or a non-zero tail (E2BIG), size up to PAGE_SIZE (accepted)
 * and above (E2BIG), a bad struct pointer (EFAULT), unknown flags
 * (EOPNOTSUPP), a non-zero reserved field (EINVAL), the validation order of
 * design.md, and that every refused call changed nothing.
 *
 * Fixture "info" checks discovery and accounting: INFO, STATS, VERIFY,
 * fdinfo, sysfs, ENOTTY.
 *
 * Fixture "elen" runs the element-length checks on each array (one variant
 * per array): entry_len and page_entry_len below the element (EINVAL),
 * above PAGE_SIZE (E2BIG), longer with a zero tail (the same as exact), a
 * non-zero tail (E2BIG on the element in an array the kernel reads,
 * zeroed in one it writes). Fixture "misc": lengths checked with nothing
 * to copy, STATS sizes, VERIFY's CAP_SYS_ADMIN (EPERM).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <poll.h>

#define BIG_PAGES 3

FIXTURE(abi) {
	struct kt_pool pool;
	int fd;
	unsigned char *big;	/* BIG_PAGES read-write pages */
	unsigned char *guard;	/* one read-write page, then PROT_NONE */
	struct kvpool_handle handles[8];
	struct kvpool_extend_entry ext[1];
	struct kvpool_len_entry len[1];
	struct kvpool_handle h[1];
	struct kvpool_len_entry donate[1];
	struct kvpool_len_entry swa[1];
	__u32 evict[1];		/* CACHE_EVICT's page ids */
	__u32 attach[2];	/* ATTACH_PREFIX's page ids */
	__u32 pages[64];
	__u64 next_session;
	int nextra;
	__u32 extra[64];	/* pools made by the CTL_DESTROY variant */
	int nexp;
	int exp_fds[16];	/* export files made for IMPORT (-1: closed) */
	struct kvpool_tenant_info tinfo[4];	/* CTL_TENANT_LIST's array */
	int arena_fd;			/* CTL_ARENA_SET's memfd, or -1 */
	struct kvpool_arena_chunk chunk[1];	/* and its chunk */
	/*
	 * CTL_AGENT and the agent file's ops: a GPU pool whose arena is
	 * one fake CUDA export (a pty master) handed out by an agent, the
	 * agent file, and clients blocked in ARENA on it, for requests.
	 */
	bool gpu_made;
	__u32 gpu_pool;
	int gpu_master;
	int old_hook;
	int agent;
	int nwait;
	pid_t waiter[64];
	int fresh;			/* AGENT_REPLY's export, or -1 */
};

typedef void (*abi_prepare_fn)(struct __test_metadata *_metadata,
			       FIXTURE_DATA(abi) *self, void *buf);

struct abi_op {
	const char *name;
	unsigned long cmd;
	__u32 size;		/* sizeof the struct this test builds */
	__u32 min_size;		/* sizeof in the op's first release */
	__u32 ksize;		/* sizeof the struct this kernel knows */
	bool ctl;		/* issued on /dev/kvpool-control */
	bool agent;		/* issued on an agent file */
	int reserved_off;	/* a must-be-zero __u32, or -1 */
	__u32 bad_flag;		/* the lowest flag bit the op does not know */
	abi_prepare_fn prepare;	/* write a valid struct (size = sizeof) */
};

FIXTURE_VARIANT(abi) {
	const struct abi_op *op;
};

/* A fresh held row with `tokens` allocated (pt 16 in this fixture). */
static struct kvpool_handle abi_row(struct __test_metadata *_metadata,
				    FIXTURE_DATA(abi) *self, __u32 tokens)
{
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	if (tokens)
		ASSERT_EQ(0, kt_grow(self->fd, h, tokens));
	return h;
}

static void prep_info(struct __test_metadata __maybe_unused *_metadata,
		      FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_info s = { .size = sizeof(s) };

	memcpy(buf, &s, sizeof(s));
}

static void prep_stats(struct __test_metadata __maybe_unused *_metadata,
		       FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_stats s = { .size = sizeof(s) };

	memcpy(buf, &s, sizeof(s));
}

static void prep_verify(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_verify s = { .size = sizeof(s) };

	memcpy(buf, &s, sizeof(s));
}

static void prep_row_alloc(struct __test_metadata __maybe_unused *_metadata,
			   FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_row_alloc s = {
		.size = sizeof(s), .count = 1,
		.entry_len = sizeof(struct kvpool_handle),
		.handles = kt_ptr(self->handles),
	};

	memcpy(buf, &s, sizeof(s));
}

static void prep_extend(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_extend s = {
		.size = sizeof(s), .count = 1,
		.entry_len = sizeof(struct kvpool_extend_entry),
		.pages_cap = ARRAY_SIZE(self->pages),
		.page_entry_len = sizeof(__u32),
		.entries = kt_ptr(self->ext), .pages = kt_ptr(self->pages),
	};

	self->ext[0].handle = abi_row(_metadata, self, 0);
	self->ext[0].new_len = 20;	/* 2 pages */
	self->ext[0].out_nr_new = 0;
	memcpy(buf, &s, sizeof(s));
}

static void prep_commit(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1,
		.entry_len = sizeof(struct kvpool_len_entry),
		.entries = kt_ptr(self->len),
	};

	self->len[0].handle = abi_row(_metadata, self, 20);
	self->len[0].len = 10;
	self->len[0].__reserved = 0;
	memcpy(buf, &s, sizeof(s));
}

static void prep_trim_release(struct __test_metadata __maybe_unused *_metadata,
			      FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1,
		.entry_len = sizeof(struct kvpool_handle),
		.entries = kt_ptr(self->h),
	};

	self->h[0] = abi_row(_metadata, self, 40);
	ASSERT_EQ(0, kt_commit1(self->fd, self->h[0], 17));
	memcpy(buf, &s, sizeof(s));
}

static void prep_to_slot(struct __test_metadata __maybe_unused *_metadata,
			 FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_slot s = {
		.size = sizeof(s), .session_id = ++self->next_session,
	};

	s.handle = abi_row(_metadata, self, 20);
	memcpy(buf, &s, sizeof(s));
}

/* DONATE: a row of 3 pages, all committed; donate the first 2. */
static void prep_donate(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1,
		.entry_len = sizeof(struct kvpool_len_entry),
		.entries = kt_ptr(self->donate),
	};

	self->donate[0].handle = abi_row(_metadata, self, 40);
	ASSERT_EQ(0, kt_commit1(self->fd, self->donate[0].handle, 40));
	self->donate[0].len = 32;
	self->donate[0].__reserved = 0;
	memcpy(buf, &s, sizeof(s));
}

/* SWA_FREE: a row of 3 pages, all committed; the edge frees 2. */
static void prep_swa_free(struct __test_metadata __maybe_unused *_metadata,
			  FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1,
		.entry_len = sizeof(struct kvpool_len_entry),
		.entries = kt_ptr(self->swa),
	};

	self->swa[0].handle = abi_row(_metadata, self, 40);
	ASSERT_EQ(0, kt_commit1(self->fd, self->swa[0].handle, 40));
	self->swa[0].len = 33;
	self->swa[0].__reserved = 0;
	memcpy(buf, &s, sizeof(s));
}

/*
 * Two new, unpinned pages of the client's prefix cache: a row of 2 full
 * committed pages released with KVPOOL_RELEASE_DONATE.
 */
static void abi_cache_pages(struct __test_metadata *_metadata,
			    FIXTURE_DATA(abi) *self, __u32 ids[2])
{
	struct kvpool_handle h = abi_row(_metadata, self, 32);
	struct kvpool_row_query q;
	struct kvpool_batch b;

	ASSERT_EQ(0, kt_commit1(self->fd, h, 32));
	ASSERT_EQ(0, kt_query(self->fd, h, ids, 2, &q));
	ASSERT_EQ(2, q.out_nr_pages);
	ASSERT_EQ(0, kt_batch(self->fd, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE,
			      &h, 1, &b));
	ASSERT_EQ(0, b.out_nr_pages);
}

static void prep_cache_evict(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1, .entry_len = sizeof(__u32),
		.entries = kt_ptr(self->evict),
	};
	__u32 ids[2];

	abi_cache_pages(_metadata, self, ids);
	self->evict[0] = ids[1];
	memcpy(buf, &s, sizeof(s));
}

static void prep_attach(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_attach s = {
		.size = sizeof(s), .nr_pages = 2,
		.page_entry_len = sizeof(__u32),
		.pages = kt_ptr(self->attach),
	};

	abi_cache_pages(_metadata, self, self->attach);
	s.handle = abi_row(_metadata, self, 0);
	memcpy(buf, &s, sizeof(s));
}

/* FROM_SLOT and SLOT_RELEASE: a parked slot to name. */
static void prep_slot(struct __test_metadata __maybe_unused *_metadata,
		      FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_slot s = {
		.size = sizeof(s), .session_id = ++self->next_session,
	};
	struct kvpool_handle h = abi_row(_metadata, self, 20);

	ASSERT_EQ(0, kt_to_slot(self->fd, s.session_id, h, NULL));
	memcpy(buf, &s, sizeof(s));
}

static void prep_row_query(struct __test_metadata __maybe_unused *_metadata,
			   FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_row_query s = {
		.size = sizeof(s), .pages_cap = ARRAY_SIZE(self->pages),
		.page_entry_len = sizeof(__u32),
		.pages = kt_ptr(self->pages),
	};

	s.handle = abi_row(_metadata, self, 20);
	memcpy(buf, &s, sizeof(s));
}

static void prep_ctl_create(struct __test_metadata __maybe_unused *_metadata,
			    FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_create s = {
		.size = sizeof(s), .nr_pages = 8, .page_tokens = 1,
		.nr_rows = 2, .row_tokens = 8,
	};

	memcpy(buf, &s, sizeof(s));
}

static void prep_ctl_destroy(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_destroy s = { .size = sizeof(s) };

	ASSERT_GT(ARRAY_SIZE(self->extra), self->nextra);
	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, 8, 1, 2, 8, &s.pool_id));
	self->extra[self->nextra++] = s.pool_id;
	memcpy(buf, &s, sizeof(s));
}

/* EXPORT of a held row with 2 pages. */
static void prep_export(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_export s = { .size = sizeof(s), .out_fd = -1 };

	s.handle = abi_row(_metadata, self, 20);
	memcpy(buf, &s, sizeof(s));
}

/* EXPORT of a parked slot (KVPOOL_EXPORT_SLOT): handle must be 0. */
static void prep_export_slot(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_export s = {
		.size = sizeof(s), .flags = KVPOOL_EXPORT_SLOT,
		.session_id = ++self->next_session, .out_fd = -1,
	};
	struct kvpool_handle h = abi_row(_metadata, self, 20);

	ASSERT_EQ(0, kt_to_slot(self->fd, s.session_id, h, NULL));
	memcpy(buf, &s, sizeof(s));
}

/*
 * IMPORT: a fresh export file of a 2-page row of this pool. The fixture
 * keeps it so the teardown can close it (an unimported export file keeps
 * its row and the pool busy).
 */
static void prep_import(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_import s = { .size = sizeof(s) };
	struct kvpool_export x = { .size = sizeof(x), .out_fd = -1 };

	ASSERT_GT(ARRAY_SIZE(self->exp_fds), self->nexp);
	x.handle = abi_row(_metadata, self, 20);
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_EXPORT, &x));
	ASSERT_LE(0, x.out_fd);
	self->exp_fds[self->nexp++] = x.out_fd;
	s.fd = x.out_fd;
	memcpy(buf, &s, sizeof(s));
}

static void prep_pressure(struct __test_metadata __maybe_unused *_metadata,
			  FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_pressure s = { .size = sizeof(s) };

	memcpy(buf, &s, sizeof(s));
}

/* TENANT_SET by (cgroup_id, uid): a tenant no client has (made new). */
static void prep_tenant_set(struct __test_metadata __maybe_unused *_metadata,
			    FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_tenant s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.cgroup_id = 1, .uid = 4242, .max_pages = 100,
		.min_pages = 8, .max_rows = 10, .label = "abi",
	};

	memcpy(buf, &s, sizeof(s));
}

/* TENANT_SET with KVPOOL_TENANT_BY_ID: the caller's own tenant. */
static void prep_tenant_set_id(struct __test_metadata __maybe_unused *_metadata,
			       FIXTURE_DATA(abi) __maybe_unused *self,
			       void *buf)
{
	struct kvpool_ctl_tenant s = {
		.size = sizeof(s), .flags = KVPOOL_TENANT_BY_ID,
		.pool_id = self->pool.id, .max_pages = 400, .min_pages = 4,
	};
	struct kvpool_stats st;

	ASSERT_EQ(0, kt_stats(self->fd, &st));
	s.tenant_id = st.out_tenant_id;
	memcpy(buf, &s, sizeof(s));
}

static void prep_tenant_list(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_tenant_list s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.count = ARRAY_SIZE(self->tinfo),
		.entry_len = sizeof(struct kvpool_tenant_info),
		.tenants = kt_ptr(self->tinfo),
	};

	memcpy(buf, &s, sizeof(s));
}

static void prep_set_wmark(struct __test_metadata __maybe_unused *_metadata,
			   FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_wmark s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.low_wmark = 20, .high_wmark = 40,
	};

	memcpy(buf, &s, sizeof(s));
}

static void prep_ctl_budget(struct __test_metadata __maybe_unused *_metadata,
			    FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_budget s = {
		.size = sizeof(s), .op = KVPOOL_BUDGET_CREATE,
		.kind = KVPOOL_ARENA_HOST, .nr_chunks = 1,
		.chunk_bytes = (__u64)sysconf(_SC_PAGESIZE),
	};

	memcpy(buf, &s, sizeof(s));
}

static void prep_arena(struct __test_metadata __maybe_unused *_metadata,
		       FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_arena s = { .size = sizeof(s) };

	memcpy(buf, &s, sizeof(s));
}

/* One memfd chunk covering the fixture's 512 pages of 4 KiB. */
static void prep_ctl_arena_set(struct __test_metadata *_metadata,
			       FIXTURE_DATA(abi) *self, void *buf)
{
	struct kvpool_ctl_arena_set s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.kind = KVPOOL_ARENA_HOST, .page_bytes = KT_PAGE_SIZE,
		.nr_chunks = 1,
		.chunk_entry_len = sizeof(struct kvpool_arena_chunk),
		.chunks = kt_ptr(self->chunk),
	};

	if (self->arena_fd < 0) {
		self->arena_fd = kt_host_memfd(512 * KT_PAGE_SIZE);
		ASSERT_LE(0, self->arena_fd);
	}
	self->chunk[0].fd = self->arena_fd;
	self->chunk[0].bytes = 512 * KT_PAGE_SIZE;
	memcpy(buf, &s, sizeof(s));
}

/* The GPU pool with its agent arena, made once per test. */
static void abi_gpu_pool(struct __test_metadata *_metadata,
			 FIXTURE_DATA(abi) *self)
{
	struct kvpool_arena_chunk ch = { .bytes = 16 * KT_PAGE_SIZE };
	struct kvpool_ctl_arena_set s = {
		.size = sizeof(s), .flags = KVPOOL_ARENA_SET_AGENT,
		.kind = KVPOOL_ARENA_CUDA, .page_bytes = KT_PAGE_SIZE,
		.nr_chunks = 1, .chunk_entry_len = sizeof(ch),
		.chunks = kt_ptr(&ch),
	};
	int ret;

	if (self->gpu_made)
		return;
	self->old_hook = kt_fake_cuda(1);
	ASSERT_LE(0, self->old_hook) TH_LOG("no fake_cuda parameter");
	ret = kt_create_gpu_pool(self->pool.ctl, 16, &self->gpu_pool);
	ASSERT_EQ(0, ret) TH_LOG("a GPU pool: %s", strerror(-ret));
	self->gpu_made = true;
	self->gpu_master = kt_fake_export();
	ASSERT_LE(0, self->gpu_master);
	ch.fd = self->gpu_master;
	s.pool_id = self->gpu_pool;
	ASSERT_EQ(0, kt_ioctl(self->pool.ctl, KVPOOL_CTL_ARENA_SET, &s));
}

/*
 * The agent file, attached, with a request waiting on it: a client is
 * forked to ask (it waits in ARENA until answered or killed) unless one
 * waits already.
 */
static void abi_agent_request(struct __test_metadata *_metadata,
			      FIXTURE_DATA(abi) *self)
{
	struct kvpool_ctl_agent a = { .size = sizeof(a) };
	struct pollfd p = { .events = POLLIN };
	pid_t pid;

	abi_gpu_pool(_metadata, self);
	if (self->agent < 0) {
		a.pool_id = self->gpu_pool;
		ASSERT_EQ(0, kt_ioctl(self->pool.ctl, KVPOOL_CTL_AGENT, &a));
		self->agent = a.out_fd;
	}
	p.fd = self->agent;
	if (poll(&p, 1, 0) == 1)
		return;
	ASSERT_GT(64, self->nwait);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kvpool_arena_fd f;
		struct kvpool_arena r = {
			.size = sizeof(r), .flags = KVPOOL_ARENA_FDS,
			.count = 1, .fd_entry_len = sizeof(f),
			.fds = kt_ptr(&f),
		};
		int fd = kt_open_id(self->gpu_pool, O_RDWR | O_CLOEXEC);

		close(self->agent);
		_exit(fd < 0 ? 1 : kt_ioctl(fd, KVPOOL_ARENA, &r) ? 2 : 0);
	}
	self->waiter[self->nwait++] = pid;
	ASSERT_EQ(1, poll(&p, 1, 10000));
}

static void prep_ctl_agent(struct __test_metadata *_metadata,
			   FIXTURE_DATA(abi) *self, void *buf)
{
	struct kvpool_ctl_agent s = { .size = sizeof(s) };

	abi_gpu_pool(_metadata, self);
	/* One agent at a time: the last call's file must go first. */
	if (self->agent >= 0) {
		close(self->agent);
		self->agent = -1;
	}
	s.pool_id = self->gpu_pool;
	memcpy(buf, &s, sizeof(s));
}

static void prep_agent_recv(struct __test_metadata *_metadata,
			    FIXTURE_DATA(abi) *self, void *buf)
{
	struct kvpool_agent_request s = { .size = sizeof(s) };

	abi_agent_request(_metadata, self);
	memcpy(buf, &s, sizeof(s));
}

/* A request taken and a fresh export to answer it with. */
static void prep_agent_reply(struct __test_metadata *_metadata,
			     FIXTURE_DATA(abi) *self, void *buf)
{
	struct kvpool_agent_request r = { .size = sizeof(r) };
	struct kvpool_agent_reply s = { .size = sizeof(s) };

	abi_agent_request(_metadata, self);
	ASSERT_EQ(0, kt_ioctl(self->agent, KVPOOL_AGENT_RECV, &r));
	close(r.out_fd);
	if (self->fresh < 0)
		self->fresh = kt_fake_export();
	ASSERT_LE(0, self->fresh);
	s.id = r.out_id;
	s.fd = self->fresh;
	memcpy(buf, &s, sizeof(s));
}

#define OP_KMIN(_name, _cmd, _type, _min, _ksize, _ctl, _roff, _bad, _prep) \
	static const struct abi_op op_##_name = {			\
		.name = #_name, .cmd = _cmd, .size = sizeof(_type),	\
		.min_size = _min, .ksize = _ksize,			\
		.ctl = _ctl, .reserved_off = _roff, .bad_flag = _bad,	\
		.agent = (_cmd) == KVPOOL_AGENT_RECV ||			\
			 (_cmd) == KVPOOL_AGENT_REPLY,			\
		.prepare = _prep,					\
	};								\
	FIXTURE_VARIANT_ADD(abi, _name) { .op = &op_##_name }

#define OP_MIN(_name, _cmd, _type, _min, _ctl, _roff, _bad, _prep)	\
	OP_KMIN(_name, _cmd, _type, _min, sizeof(_type), _ctl, _roff, _bad, \
		_prep)

/* An op whose struct never grew: its first release is today's size. */
#define OP(_name, _cmd, _type, _ctl, _roff, _bad, _prep)		\
	OP_MIN(_name, _cmd, _type, sizeof(_type), _ctl, _roff, _bad, _prep)

#define ROFF(type) ((int)offsetof(type, __reserved))

OP(info, KVPOOL_INFO, struct kvpool_info, false,
   ROFF(struct kvpool_info), 1, prep_info);
/*
 * STATS: the first release ended at out_tenant_max_rows (104 bytes); ABI
 * 2 adds out_quarantine_pages. The 72-byte struct of the development
 * series is EINVAL (short_size checks 100 and 103, info.stats_sizes 72).
 */
OP_MIN(stats, KVPOOL_STATS, struct kvpool_stats,
       offsetof(struct kvpool_stats, out_tenant_max_rows) + 4, false,
       ROFF(struct kvpool_stats), 1, prep_stats);
/* __reserved2 is ABI 2's, and must be 0 as well. */
OP_MIN(stats_reserved2, KVPOOL_STATS, struct kvpool_stats,
       offsetof(struct kvpool_stats, out_tenant_max_rows) + 4, false,
       (int)offsetof(struct kvpool_stats, __reserved2), 1, prep_stats);
OP(row_alloc, KVPOOL_ROW_ALLOC, struct kvpool_row_alloc, false,
   ROFF(struct kvpool_row_alloc), 1, prep_row_alloc);
OP(extend, KVPOOL_EXTEND, struct kvpool_extend, false,
   ROFF(struct kvpool_extend), 1, prep_extend);
/*
 * struct kvpool_batch has no must-be-zero field (-1): reserved_nonzero
 * checks instead that what the caller left in out_error_index is ignored.
 */
OP(commit, KVPOOL_COMMIT, struct kvpool_batch, false, -1, 1, prep_commit);
OP(trim, KVPOOL_TRIM, struct kvpool_batch, false, -1, 1, prep_trim_release);
/* Bit 0 is KVPOOL_RELEASE_DONATE. */
OP(release, KVPOOL_RELEASE, struct kvpool_batch, false, -1,
   KVPOOL_RELEASE_DONATE << 1, prep_trim_release);
OP(to_slot, KVPOOL_TO_SLOT, struct kvpool_slot, false,
   ROFF(struct kvpool_slot), 1, prep_to_slot);
OP(from_slot, KVPOOL_FROM_SLOT, struct kvpool_slot, false,
   ROFF(struct kvpool_slot), 1, prep_slot);
OP(slot_release, KVPOOL_SLOT_RELEASE, struct kvpool_slot, false,
   ROFF(struct kvpool_slot), 1, prep_slot);
OP(row_query, KVPOOL_ROW_QUERY, struct kvpool_row_query, false,
   ROFF(struct kvpool_row_query), 2, prep_row_query);
/* session_id must be 0 without KVPOOL_QUERY_BY_SLOT, like a reserved field. */
OP(row_query_session, KVPOOL_ROW_QUERY, struct kvpool_row_query, false,
   (int)offsetof(struct kvpool_row_query, session_id), 2, prep_row_query);
OP(verify, KVPOOL_VERIFY, struct kvpool_verify, false,
   ROFF(struct kvpool_verify), 1, prep_verify);
OP(donate, KVPOOL_DONATE, struct kvpool_batch, false, -1, 1, prep_donate);
/* No must-be-zero field and no output: the struct must come back as is. */
OP(attach_prefix, KVPOOL_ATTACH_PREFIX, struct kvpool_attach, false, -1, 1,
   prep_attach);
OP(cache_evict, KVPOOL_CACHE_EVICT, struct kvpool_batch, false, -1, 1,
   prep_cache_evict);
OP(swa_free, KVPOOL_SWA_FREE, struct kvpool_batch, false, -1, 1,
   prep_swa_free);
/* ABI 1's struct ended at __reserved (32 bytes); bit 1 is CREATE_GPU. */
OP_MIN(ctl_create, KVPOOL_CTL_CREATE, struct kvpool_ctl_create,
       offsetof(struct kvpool_ctl_create, __reserved) + 4, true,
       ROFF(struct kvpool_ctl_create), KVPOOL_CREATE_BUDGET << 1,
       prep_ctl_create);
/* ABI 4 adds budget_id, __reserved2 and page_bytes. */
OP_MIN(ctl_create_reserved2, KVPOOL_CTL_CREATE, struct kvpool_ctl_create,
       offsetof(struct kvpool_ctl_create, __reserved) + 4, true,
       (int)offsetof(struct kvpool_ctl_create, __reserved2),
       KVPOOL_CREATE_BUDGET << 1, prep_ctl_create);
/* No flag yet; CREATE of one page-sized chunk, destroyed after. */
OP(ctl_budget, KVPOOL_CTL_BUDGET, struct kvpool_ctl_budget, true,
   ROFF(struct kvpool_ctl_budget), 1, prep_ctl_budget);
OP(ctl_destroy, KVPOOL_CTL_DESTROY, struct kvpool_ctl_destroy, true,
   ROFF(struct kvpool_ctl_destroy), 1, prep_ctl_destroy);
/*
 * kvpool_export has no __reserved member: session_id, which must be 0
 * without KVPOOL_EXPORT_SLOT, stands in; with it, the handle must be 0.
 */
OP(export, KVPOOL_EXPORT, struct kvpool_export, false,
   (int)offsetof(struct kvpool_export, session_id), KVPOOL_EXPORT_SLOT << 1,
   prep_export);
OP(export_slot, KVPOOL_EXPORT, struct kvpool_export, false,
   (int)offsetof(struct kvpool_export, handle.req_pool_idx),
   KVPOOL_EXPORT_SLOT << 1, prep_export_slot);
OP(export_slot_gen, KVPOOL_EXPORT, struct kvpool_export, false,
   (int)offsetof(struct kvpool_export, handle.generation),
   KVPOOL_EXPORT_SLOT << 1, prep_export_slot);
/* IMPORT has two reserved words: one variant each. */
OP(import, KVPOOL_IMPORT, struct kvpool_import, false,
   ROFF(struct kvpool_import), 1, prep_import);
OP(import_reserved2, KVPOOL_IMPORT, struct kvpool_import, false,
   (int)offsetof(struct kvpool_import, __reserved2), 1, prep_import);
OP(pressure, KVPOOL_PRESSURE, struct kvpool_pressure, false,
   ROFF(struct kvpool_pressure), 1, prep_pressure);
/* Bits 0-3 are BY_ID, BY_PATH, ANY_UID, REMOVE; bit 4 is list-only. */
#define TENANT_SET_V1 offsetof(struct kvpool_ctl_tenant, cgroup_path)
OP_MIN(ctl_tenant_set, KVPOOL_CTL_TENANT_SET, struct kvpool_ctl_tenant,
       TENANT_SET_V1, true, ROFF(struct kvpool_ctl_tenant),
       KVPOOL_TENANT_CONFIGURED, prep_tenant_set);
OP_MIN(ctl_tenant_set_by_id, KVPOOL_CTL_TENANT_SET, struct kvpool_ctl_tenant,
       TENANT_SET_V1, true, ROFF(struct kvpool_ctl_tenant),
       KVPOOL_TENANT_CONFIGURED, prep_tenant_set_id);
/* __reserved2 follows label; cgroup_path (ABI 2) comes after it. */
OP_MIN(ctl_tenant_set_reserved2, KVPOOL_CTL_TENANT_SET,
       struct kvpool_ctl_tenant, TENANT_SET_V1, true,
       (int)offsetof(struct kvpool_ctl_tenant, __reserved2),
       KVPOOL_TENANT_CONFIGURED, prep_tenant_set);
/*
 * No must-be-zero field: out_nr_tenants's input must be ignored. ABI 2
 * adds the paths buffer after tenants.
 */
OP_MIN(ctl_tenant_list, KVPOOL_CTL_TENANT_LIST, struct kvpool_ctl_tenant_list,
       offsetof(struct kvpool_ctl_tenant_list, paths), true, -1, 1,
       prep_tenant_list);
OP(ctl_set_wmark, KVPOOL_CTL_SET_WMARK, struct kvpool_ctl_wmark, true,
   ROFF(struct kvpool_ctl_wmark), 1, prep_set_wmark);
/* The agent ops have no reserved field and no flag yet. */
OP(ctl_agent, KVPOOL_CTL_AGENT, struct kvpool_ctl_agent, true, -1, 1,
   prep_ctl_agent);
OP(agent_recv, KVPOOL_AGENT_RECV, struct kvpool_agent_request, false, -1, 1,
   prep_agent_recv);
OP(agent_reply, KVPOOL_AGENT_REPLY, struct kvpool_agent_reply, false, -1, 1,
   prep_agent_reply);
/* Bits 0-1 are FDS and NOWAIT; ABI 3 adds out_set_flags and on. */
OP_MIN(arena, KVPOOL_ARENA, struct kvpool_arena,
       offsetof(struct kvpool_arena, out_set_flags), false,
       ROFF(struct kvpool_arena), KVPOOL_ARENA_NOWAIT << 1, prep_arena);
/* Bits 0-1 are DEVICE and AGENT; ABI 3 adds device_fd and on. */
OP_MIN(ctl_arena_set, KVPOOL_CTL_ARENA_SET, struct kvpool_ctl_arena_set,
       offsetof(struct kvpool_ctl_arena_set, device_fd), true,
       ROFF(struct kvpool_ctl_arena_set), KVPOOL_ARENA_SET_AGENT << 1,
       prep_ctl_arena_set);
OP_MIN(ctl_arena_set_reserved2, KVPOOL_CTL_ARENA_SET,
       struct kvpool_ctl_arena_set,
       offsetof(struct kvpool_ctl_arena_set, device_fd), true,
       (int)offsetof(struct kvpool_ctl_arena_set, __reserved2),
       KVPOOL_ARENA_SET_AGENT << 1, prep_ctl_arena_set);

FIXTURE_SETUP(abi)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     512, 16, 64, 1024);
	self->fd = kt_pool_open(_metadata, &self->pool);
	self->big = mmap(NULL, BIG_PAGES * KT_PAGE_SIZE,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	ASSERT_NE(MAP_FAILED, self->big);
	self->guard = kt_map_guarded();
	ASSERT_NE(NULL, self->guard);
	self->arena_fd = -1;
	self->gpu_master = -1;
	self->agent = -1;
	self->fresh = -1;
	self->old_hook = -1;
	/* Every call of an agent op, a bad one too, needs the file. */
	if (variant->op->agent)
		abi_agent_request(_metadata, self);
}

FIXTURE_TEARDOWN(abi)
{
	int i;

	if (self->arena_fd >= 0)
		close(self->arena_fd);
	for (i = 0; i < self->nwait; i++) {
		kill(self->waiter[i], SIGKILL);
		waitpid(self->waiter[i], NULL, 0);
	}
	if (self->agent >= 0)
		close(self->agent);
	if (self->fresh >= 0)
		close(self->fresh);
	if (self->gpu_made)
		EXPECT_EQ(0, kt_destroy(self->pool.ctl, self->gpu_pool));
	if (self->gpu_master >= 0)
		close(self->gpu_master);
	if (self->old_hook >= 0)
		kt_fake_cuda(self->old_hook);
	for (i = 0; i < self->nextra; i++) {
		int ret = kt_destroy(self->pool.ctl, self->extra[i]);

		EXPECT_TRUE(ret == 0 || ret == ENODEV);
	}
	for (i = 0; i < self->nexp; i++)
		if (self->exp_fds[i] >= 0)
			close(self->exp_fds[i]);
	kt_pool_fini(_metadata, &self->pool);
}

/* Zero `span` bytes at buf, then write a valid struct there. */
static void abi_prep(struct __test_metadata *_metadata,
		     FIXTURE_DATA(abi) *self,
		     const FIXTURE_VARIANT(abi) *variant,
		     void *buf, size_t span)
{
	memset(buf, 0, span);
	variant->op->prepare(_metadata, self, buf);
}

static int abi_call(FIXTURE_DATA(abi) *self,
		    const FIXTURE_VARIANT(abi) *variant, void *arg)
{
	return kt_ioctl(variant->op->agent ? self->agent :
			variant->op->ctl ? self->pool.ctl : self->fd,
			variant->op->cmd, arg);
}

/* Undo what a successful call made that the pool's teardown would not. */
static void abi_after_ok(struct __test_metadata *_metadata,
			 FIXTURE_DATA(abi) *self,
			 const FIXTURE_VARIANT(abi) *variant, void *buf)
{
	if (variant->op->cmd == KVPOOL_CTL_CREATE) {
		__u32 id = ((struct kvpool_ctl_create *)buf)->out_pool_id;

		EXPECT_EQ(0, kt_destroy(self->pool.ctl, id));
	} else if (variant->op->cmd == KVPOOL_CTL_BUDGET) {
		struct kvpool_ctl_budget d = {
			.size = sizeof(d), .op = KVPOOL_BUDGET_DESTROY,
			.budget_id = ((struct kvpool_ctl_budget *)buf)->budget_id,
		};

		EXPECT_EQ(0, kt_ioctl(self->pool.ctl, KVPOOL_CTL_BUDGET, &d));
	} else if (variant->op->cmd == KVPOOL_CTL_AGENT) {
		self->agent = ((struct kvpool_ctl_agent *)buf)->out_fd;
		EXPECT_LE(0, self->agent);
	} else if (variant->op->cmd == KVPOOL_AGENT_RECV) {
		struct kvpool_agent_request *r = buf;
		struct kvpool_agent_reply y = {
			.size = sizeof(y), .id = r->out_id, .error = EIO,
		};

		/* The client is answered (EIO) and exits. */
		EXPECT_EQ(0, close(r->out_fd));
		EXPECT_EQ(0, kt_ioctl(self->agent, KVPOOL_AGENT_REPLY, &y));
	} else if (variant->op->cmd == KVPOOL_EXPORT) {
		int fd = ((struct kvpool_export *)buf)->out_fd;

		/* Closing the unimported file gives the row back. */
		EXPECT_LE(0, fd);
		EXPECT_EQ(2, ((struct kvpool_export *)buf)->out_nr_pages);
		if (fd >= 0)
			close(fd);
	} else if (variant->op->cmd == KVPOOL_IMPORT) {
		int fd = ((struct kvpool_import *)buf)->fd, i;

		EXPECT_EQ(2, ((struct kvpool_import *)buf)->out_nr_pages);
		for (i = 0; i < self->nexp; i++) {
			if (self->exp_fds[i] == fd) {
				close(fd);
				self->exp_fds[i] = -1;
			}
		}
	}
}

static void abi_set_size(void *buf, __u32 size)
{
	memcpy(buf, &size, sizeof(size));
}

static void abi_set_flags(void *buf, __u32 flags)
{
	memcpy((char *)buf + 4, &flags, sizeof(flags));
}

/*
 * What "nothing changed" means here: the pool's STATS, the pool count, the
 * pool's tenants (how many, and the first limits) and its watermarks.
 */
struct abi_snap {
	struct kvpool_stats st;
	int pools;
	__u32 nr_tenants;
	struct kvpool_tenant_info ti[8];
	__u32 low_wmark, high_wmark;
	__u32 arena_kind;
};

static void abi_snap(FIXTURE_DATA(abi) *self, struct abi_snap *s)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l), .pool_id = self->pool.id,
		.count = ARRAY_SIZE(s->ti),
		.entry_len = sizeof(struct kvpool_tenant_info),
		.tenants = kt_ptr(s->ti),
	};
	struct kvpool_pressure p = { .size = sizeof(p) };
	struct kvpool_arena a = { .size = sizeof(a) };

	memset(s, 0, sizeof(*s));
	kt_stats(self->fd, &s->st);
	s->arena_kind = kt_ioctl(self->fd, KVPOOL_ARENA, &a) ? ~0u :
			a.out_kind;
	s->pools = kt_count_pools();
	if (kt_ioctl(self->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l) == 0)
		s->nr_tenants = l.out_nr_tenants;
	else
		s->nr_tenants = ~0u;
	if (kt_ioctl(self->fd, KVPOOL_PRESSURE, &p) == 0) {
		s->low_wmark = p.out_low_wmark;
		s->high_wmark = p.out_high_wmark;
	}
}

/* "" or the first tenant field that differs. */
static const char *abi_tenants_diff(const struct abi_snap *a,
				    const struct abi_snap *b)
{
	__u32 i, n = a->nr_tenants < ARRAY_SIZE(a->ti) ? a->nr_tenants :
		     ARRAY_SIZE(a->ti);

	if (a->nr_tenants != b->nr_tenants)
		return "nr_tenants";
	for (i = 0; i < n; i++) {
		if (a->ti[i].tenant_id != b->ti[i].tenant_id)
			return "tenant_id";
		if (a->ti[i].max_pages != b->ti[i].max_pages)
			return "max_pages";
		if (a->ti[i].min_pages != b->ti[i].min_pages)
			return "min_pages";
		if (a->ti[i].max_rows != b->ti[i].max_rows)
			return "max_rows";
		if (memcmp(a->ti[i].label, b->ti[i].label,
			   sizeof(a->ti[i].label)))
			return "label";
	}
	return "";
}

/*
 * Errors in size or the unknown tail leave the struct untouched (header):
 * compare `len` bytes at buf with the copy taken before the call.
 */
static unsigned char abi_copy[BIG_PAGES * KT_PAGE_SIZE];

#define EXPECT_UNTOUCHED(buf, len)					\
	EXPECT_EQ(0, memcmp(abi_copy, (buf), (len)))			\
		TH_LOG("%s wrote to the struct on a size error",	\
		       variant->op->name)

#define EXPECT_UNCHANGED(before) do {					\
	struct abi_snap __now;						\
	abi_snap(self, &__now);						\
	EXPECT_STREQ("", kt_stats_diff(&(before)->st, &__now.st,	\
				       KT_ST_USAGE));			\
	EXPECT_EQ((before)->pools, __now.pools);			\
	EXPECT_STREQ("", abi_tenants_diff((before), &__now));		\
	EXPECT_EQ((before)->low_wmark, __now.low_wmark);		\
	EXPECT_EQ((before)->high_wmark, __now.high_wmark);		\
	EXPECT_EQ((before)->arena_kind, __now.arena_kind);		\
} while (0)

/* The struct exactly as built: accepted, nothing written past it. */
TEST_F(abi, exact_size)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = self->big;
	__u32 i;

	abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
	memset(buf + op->size, 0xa5, 64);
	ASSERT_EQ(0, abi_call(self, variant, buf));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0xa5, buf[op->size + i])
			TH_LOG("%s wrote byte %u past size", op->name, i);
	abi_after_ok(_metadata, self, variant, buf);
}

/* Ends at the last readable byte: the kernel reads only `size` bytes. */
TEST_F(abi, exact_size_at_fault_edge)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = (unsigned char *)kt_fault_edge(self->guard) -
			     op->size;

	abi_prep(_metadata, self, variant, buf, op->size);
	ASSERT_EQ(0, abi_call(self, variant, buf));
	abi_after_ok(_metadata, self, variant, buf);
}

TEST_F(abi, short_size)
{
	const struct abi_op *op = variant->op;
	const __u32 sizes[] = { 0, 4, 8, op->min_size - 4, op->min_size - 1 };
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
		abi_set_size(buf, sizes[i]);
		memcpy(abi_copy, buf, KT_PAGE_SIZE);
		abi_snap(self, &before);
		EXPECT_EQ(EINVAL, abi_call(self, variant, buf))
			TH_LOG("%s with size %u", op->name, sizes[i]);
		EXPECT_UNTOUCHED(buf, KT_PAGE_SIZE);
		EXPECT_UNCHANGED(&before);
	}
}

/* A newer, longer struct whose unknown tail is zero: accepted as is. */
TEST_F(abi, zero_tail)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = self->big;
	__u32 i;

	abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
	abi_set_size(buf, op->size + 8);
	memset(buf + op->size + 8, 0x5a, 64);
	ASSERT_EQ(0, abi_call(self, variant, buf));
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, buf[op->size + i]) TH_LOG("tail byte %u", i);
	for (i = 0; i < 64; i++)
		EXPECT_EQ(0x5a, buf[op->size + 8 + i])
			TH_LOG("%s wrote byte %u past size", op->name, i);
	abi_after_ok(_metadata, self, variant, buf);
}

TEST_F(abi, nonzero_tail)
{
	const struct abi_op *op = variant->op;
	/* Unknown bytes start where the kernel's struct ends. */
	const struct { __u32 size, pos; } cases[] = {
		{ op->ksize + 8, op->ksize },
		{ op->ksize + 8, op->ksize + 7 },
		{ op->ksize + 1, op->ksize },
		{ op->ksize + 100, op->ksize + 57 },
	};
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
		abi_set_size(buf, cases[i].size);
		buf[cases[i].pos] = 0x80;
		memcpy(abi_copy, buf, KT_PAGE_SIZE);
		abi_snap(self, &before);
		EXPECT_EQ(E2BIG, abi_call(self, variant, buf))
			TH_LOG("%s size %u, byte %u set", op->name,
			       cases[i].size, cases[i].pos);
		EXPECT_UNTOUCHED(buf, KT_PAGE_SIZE);
		EXPECT_UNCHANGED(&before);
	}
}

/* PAGE_SIZE is the largest size accepted. */
TEST_F(abi, page_size)
{
	unsigned char *buf = self->big;
	struct abi_snap before;

	abi_prep(_metadata, self, variant, buf, 2 * KT_PAGE_SIZE);
	abi_set_size(buf, KT_PAGE_SIZE);
	ASSERT_EQ(0, abi_call(self, variant, buf));
	abi_after_ok(_metadata, self, variant, buf);

	abi_prep(_metadata, self, variant, buf, 2 * KT_PAGE_SIZE);
	abi_set_size(buf, KT_PAGE_SIZE);
	buf[KT_PAGE_SIZE - 1] = 1;
	abi_snap(self, &before);
	EXPECT_EQ(E2BIG, abi_call(self, variant, buf));
	EXPECT_UNCHANGED(&before);
}

/* Above PAGE_SIZE: E2BIG even with a zero tail, without reading it. */
TEST_F(abi, above_page_size)
{
	const __u32 sizes[] = {
		KT_PAGE_SIZE + 1, 2 * KT_PAGE_SIZE, 1u << 16, 1u << 31, ~0u,
	};
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		abi_prep(_metadata, self, variant, buf,
			 BIG_PAGES * KT_PAGE_SIZE);
		abi_set_size(buf, sizes[i]);
		memcpy(abi_copy, buf, BIG_PAGES * KT_PAGE_SIZE);
		abi_snap(self, &before);
		EXPECT_EQ(E2BIG, abi_call(self, variant, buf))
			TH_LOG("%s with size %u", variant->op->name, sizes[i]);
		EXPECT_UNTOUCHED(buf, BIG_PAGES * KT_PAGE_SIZE);
		EXPECT_UNCHANGED(&before);
	}
}

TEST_F(abi, efault_struct)
{
	void *const bad[] = {
		NULL, (void *)1, kt_fault_edge(self->guard),
		(void *)0xffff888000000000ull, (void *)~0ull,
	};
	struct abi_snap before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		abi_snap(self, &before);
		EXPECT_EQ(EFAULT, abi_call(self, variant, bad[i]))
			TH_LOG("%s with struct at %p", variant->op->name, bad[i]);
		EXPECT_UNCHANGED(&before);
	}
}

/* A longer struct whose tail runs into an unmapped page. */
TEST_F(abi, efault_tail)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = (unsigned char *)kt_fault_edge(self->guard) -
			     op->size;
	struct abi_snap before;

	abi_prep(_metadata, self, variant, buf, op->size);
	abi_set_size(buf, op->size + 8);
	abi_snap(self, &before);
	EXPECT_EQ(EFAULT, abi_call(self, variant, buf));
	EXPECT_UNCHANGED(&before);
}

TEST_F(abi, unknown_flags)
{
	const __u32 flags[] = {
		variant->op->bad_flag, 1u << 31, ~0u,
		variant->op->bad_flag | (variant->op->bad_flag >> 1),
	};
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
		abi_set_flags(buf, flags[i]);
		abi_snap(self, &before);
		EXPECT_EQ(EOPNOTSUPP, abi_call(self, variant, buf))
			TH_LOG("%s with flags %#x", variant->op->name, flags[i]);
		EXPECT_UNCHANGED(&before);
	}
}

/*
 * An op whose struct has no must-be-zero field: its words that are not
 * inputs must be ignored on the way in and written on the way out, and
 * ATTACH_PREFIX, which has none, must come back as it went in.
 */
static void abi_no_reserved(struct __test_metadata *_metadata,
			    FIXTURE_DATA(abi) *self,
			    const FIXTURE_VARIANT(abi) *variant,
			    unsigned char *buf)
{
	const __u32 junk = 0xdeadbeef;
	unsigned long cmd = variant->op->cmd;
	unsigned char copy[256];
	__u32 v;

	abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
	if (cmd == KVPOOL_ATTACH_PREFIX) {
		memcpy(copy, buf, variant->op->size);
		ASSERT_EQ(0, abi_call(self, variant, buf));
		EXPECT_EQ(0, memcmp(copy, buf, variant->op->size));
	} else if (cmd == KVPOOL_CTL_TENANT_LIST) {
		size_t off = offsetof(struct kvpool_ctl_tenant_list,
				      out_nr_tenants);

		memcpy(buf + off, &junk, 4);
		ASSERT_EQ(0, abi_call(self, variant, buf));
		memcpy(&v, buf + off, 4);
		/* The fixture's own client made one tenant. */
		EXPECT_LE(1, v);
		EXPECT_GE(ARRAY_SIZE(self->tinfo), v);
	} else if (cmd == KVPOOL_CTL_AGENT || cmd == KVPOOL_AGENT_RECV) {
		/* The fd's word is an output: junk there is overwritten. */
		size_t off = cmd == KVPOOL_CTL_AGENT ?
			     offsetof(struct kvpool_ctl_agent, out_fd) :
			     offsetof(struct kvpool_agent_request, out_fd);

		memcpy(buf + off, &junk, 4);
		ASSERT_EQ(0, abi_call(self, variant, buf));
		memcpy(&v, buf + off, 4);
		EXPECT_GT(1024, v);
		abi_after_ok(_metadata, self, variant, buf);
	} else if (cmd == KVPOOL_AGENT_REPLY) {
		/* Every word is an input, and none is written back. */
		memcpy(copy, buf, variant->op->size);
		ASSERT_EQ(0, abi_call(self, variant, buf));
		EXPECT_EQ(0, memcmp(copy, buf, variant->op->size));
	} else {
		size_t off = offsetof(struct kvpool_batch, out_error_index);

		ASSERT_NE(0, kt_batch_entry_len(cmd)) TH_LOG("%s",
							   variant->op->name);
		memcpy(buf + off, &junk, 4);
		ASSERT_EQ(0, abi_call(self, variant, buf));
		memcpy(&v, buf + off, 4);
		EXPECT_EQ(KT_ERR_NONE, v);
	}
}

TEST_F(abi, reserved_nonzero)
{
	const __u32 vals[] = { 1, 0x80000000u, ~0u };
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	if (variant->op->reserved_off < 0) {
		abi_no_reserved(_metadata, self, variant, buf);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
		memcpy(buf + variant->op->reserved_off, &vals[i], 4);
		abi_snap(self, &before);
		EXPECT_EQ(EINVAL, abi_call(self, variant, buf))
			TH_LOG("%s with reserved %#x", variant->op->name, vals[i]);
		EXPECT_UNCHANGED(&before);
	}
}

/* design.md: size, then flags, then reserved fields. */
TEST_F(abi, validation_order)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = self->big;
	__u32 one = 1;

	abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
	abi_set_size(buf, op->min_size - 4);
	abi_set_flags(buf, 1u << 31);
	EXPECT_EQ(EINVAL, abi_call(self, variant, buf));

	abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
	abi_set_size(buf, op->ksize + 8);
	buf[op->ksize + 3] = 1;
	abi_set_flags(buf, 1u << 31);
	EXPECT_EQ(E2BIG, abi_call(self, variant, buf));

	abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
	abi_set_size(buf, KT_PAGE_SIZE + 4);
	abi_set_flags(buf, 1u << 31);
	EXPECT_EQ(E2BIG, abi_call(self, variant, buf));

	if (op->reserved_off >= 0) {
		abi_prep(_metadata, self, variant, buf, KT_PAGE_SIZE);
		abi_set_flags(buf, 1u << 31);
		memcpy(buf + op->reserved_off, &one, 4);
		EXPECT_EQ(EOPNOTSUPP, abi_call(self, variant, buf));
	}
}

/* ------------------------------------------------------------------------ */

FIXTURE(info) {
	struct kt_pool pool;
	int fd;
};

FIXTURE_VARIANT(info) {
	__u32 flags, nr_pages, page_tokens, nr_rows, row_tokens;
};

FIXTURE_VARIANT_ADD(info, pt1_rz) {
	.flags = KVPOOL_CREATE_RESERVE_ZERO, .nr_pages = 64,
	.page_tokens = 1, .nr_rows = 32, .row_tokens = 64,
};

FIXTURE_VARIANT_ADD(info, pt16_rz) {
	.flags = KVPOOL_CREATE_RESERVE_ZERO, .nr_pages = 4096,
	.page_tokens = 16, .nr_rows = 32, .row_tokens = 4096,
};

FIXTURE_VARIANT_ADD(info, pt16) {
	.flags = 0, .nr_pages = 1000, .page_tokens = 16, .nr_rows = 48,
	.row_tokens = 2048,
};

/* More rows than the batch cap: max_batch is 8192, not nr_rows. */
FIXTURE_VARIANT_ADD(info, many_rows) {
	.flags = KVPOOL_CREATE_RESERVE_ZERO, .nr_pages = 64,
	.page_tokens = 1, .nr_rows = 9000, .row_tokens = 64,
};

FIXTURE_SETUP(info)
{
	kt_pool_init(_metadata, &self->pool, variant->flags, variant->nr_pages,
		     variant->page_tokens, variant->nr_rows,
		     variant->row_tokens);
	self->fd = kt_pool_open(_metadata, &self->pool);
}

FIXTURE_TEARDOWN(info)
{
	kt_pool_fini(_metadata, &self->pool);
}

TEST_F(info, geometry)
{
	struct kvpool_info i;

	ASSERT_EQ(0, kt_info(self->fd, &i));
	EXPECT_EQ(sizeof(i), i.size);
	EXPECT_EQ(0, i.flags);
	EXPECT_EQ(KVPOOL_ABI_VERSION, i.out_abi_version);
	/*
	 * 1 was the first release; 2 added the arena; 3 the GPU agent; 4
	 * chunk budgets.
	 */
	EXPECT_EQ(4, i.out_abi_version);
	EXPECT_EQ(self->pool.id, i.out_pool_id);
	EXPECT_EQ(variant->nr_pages, i.out_nr_pages);
	EXPECT_EQ(variant->page_tokens, i.out_page_tokens);
	EXPECT_EQ(variant->nr_rows, i.out_nr_rows);
	EXPECT_EQ(variant->row_tokens, i.out_row_tokens);
	EXPECT_EQ(variant->flags, i.out_create_flags);
	EXPECT_EQ(variant->nr_rows < 8192 ? variant->nr_rows : 8192,
		  i.out_max_batch);
	EXPECT_EQ(0, i.__reserved);
}

/*
 * Exactly the documented set: rows, extend, slots, verify, the prefix
 * cache, sliding-window free, export/import, quotas, pressure, the arena,
 * tenants by path, the GPU agent and chunk budgets; no undefined bit.
 */
TEST_F(info, features)
{
	const __u64 want = KVPOOL_FEAT_ROWS | KVPOOL_FEAT_EXTEND |
			   KVPOOL_FEAT_SLOTS | KVPOOL_FEAT_VERIFY |
			   KVPOOL_FEAT_PREFIX_CACHE | KVPOOL_FEAT_SWA |
			   KVPOOL_FEAT_EXPORT | KVPOOL_FEAT_QUOTA |
			   KVPOOL_FEAT_PRESSURE | KVPOOL_FEAT_ARENA |
			   KVPOOL_FEAT_TENANT_PATH | KVPOOL_FEAT_GPU_AGENT |
			   KVPOOL_FEAT_BUDGET;
	struct kvpool_info i;

	ASSERT_EQ(0, kt_info(self->fd, &i));
	EXPECT_EQ(want, i.out_features & want)
		TH_LOG("features %#llx: a documented bit is missing",
		       (unsigned long long)i.out_features);
	EXPECT_EQ(0, i.out_features & ~want)
		TH_LOG("features %#llx at ABI version %u",
		       (unsigned long long)i.out_features, i.out_abi_version);
}

/* out_* fields are outputs: whatever the caller left there is ignored. */
TEST_F(info, out_fields_ignored)
{
	struct kvpool_info i, j;

	ASSERT_EQ(0, kt_info(self->fd, &i));
	memset(&j, 0xff, sizeof(j));
	j.size = sizeof(j);
	j.flags = 0;
	j.__reserved = 0;
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_INFO, &j));
	EXPECT_EQ(0, memcmp(&i, &j, sizeof(i)));
}

/* The result cannot be copied out: EFAULT. */
TEST_F(info, readonly_struct_efault)
{
	struct kvpool_info *ro;
	struct kvpool_stats *sro;

	ro = mmap(NULL, KT_PAGE_SIZE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->size = sizeof(*ro);
	sro = (struct kvpool_stats *)(ro + 1);
	sro->size = sizeof(*sro);
	ASSERT_EQ(0, mprotect(ro, KT_PAGE_SIZE, PROT_READ));
	EXPECT_EQ(EFAULT, kt_ioctl(self->fd, KVPOOL_INFO, ro));
	EXPECT_EQ(EFAULT, kt_ioctl(self->fd, KVPOOL_STATS, sro));
	munmap(ro, KT_PAGE_SIZE);
}

TEST_F(info, client_ids)
{
	struct kvpool_info a, a2, b, d;
	__u64 v = 0;
	int fd2, fdd;

	fd2 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_info(self->fd, &a));
	ASSERT_EQ(0, kt_info(self->fd, &a2));
	ASSERT_EQ(0, kt_info(fd2, &b));
	EXPECT_EQ(a.out_client_id, a2.out_client_id);
	EXPECT_NE(a.out_client_id, b.out_client_id);

	/* dup() is the same open file: the same client. */
	fdd = dup(self->fd);
	ASSERT_LE(0, fdd);
	ASSERT_EQ(0, kt_info(fdd, &d));
	EXPECT_EQ(a.out_client_id, d.out_client_id);
	ASSERT_EQ(0, kt_fdinfo_u64(fdd, "kvpool-client-id", &v));
	EXPECT_EQ(a.out_client_id, v);
	close(fdd);
}

TEST_F(info, stats_initial)
{
	bool rz = variant->flags & KVPOOL_CREATE_RESERVE_ZERO;
	struct kvpool_stats s;
	int fd2, fd3;

	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(variant->nr_pages - rz, s.out_free_pages);
	EXPECT_EQ(rz, s.out_reserved_pages);
	EXPECT_EQ(variant->nr_rows - rz, s.out_free_rows);
	EXPECT_EQ(rz, s.out_reserved_rows);
	EXPECT_EQ(0, s.out_row_pages);
	EXPECT_EQ(0, s.out_slot_pages);
	EXPECT_EQ(0, s.out_cache_evictable);
	EXPECT_EQ(0, s.out_cache_pinned);
	EXPECT_EQ(0, s.out_held_rows);
	EXPECT_EQ(0, s.out_slot_rows);
	EXPECT_EQ(1, s.out_nr_clients);
	EXPECT_EQ(0, s.out_client_rows);
	EXPECT_EQ(0, s.out_client_slots);
	EXPECT_EQ(0, s.out_client_pages);
	EXPECT_EQ(0, s.out_client_cache_pages);
	EXPECT_EQ(0, s.__reserved);
	kt_check_identities(_metadata, &self->pool, &s);

	fd2 = kt_pool_open(_metadata, &self->pool);
	fd3 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(3, s.out_nr_clients);
	kt_pool_close(&self->pool, fd2);
	ASSERT_EQ(0, kt_stats(fd3, &s));
	EXPECT_EQ(2, s.out_nr_clients);
}

/* Pool figures are shared; out_client_* are the caller's own. */
TEST_F(info, stats_client_view)
{
	const __u32 pt = variant->page_tokens;
	struct kvpool_handle h[3];
	struct kvpool_stats a, b;
	__u32 rz = !!(variant->flags & KVPOOL_CREATE_RESERVE_ZERO);
	__u32 p0 = kt_div_up(5 * pt, pt), p1 = kt_div_up(3 * pt + 1, pt);
	__u32 p2 = kt_div_up(7, pt);
	int fd2;

	fd2 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 3, h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h[0], 5 * pt));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 3 * pt + 1));
	ASSERT_EQ(0, kt_grow(self->fd, h[2], 7));
	ASSERT_EQ(0, kt_to_slot(self->fd, 77, h[2], NULL));

	ASSERT_EQ(0, kt_stats(self->fd, &a));
	ASSERT_EQ(0, kt_stats(fd2, &b));
	EXPECT_EQ(variant->nr_pages - rz - p0 - p1 - p2, a.out_free_pages);
	EXPECT_EQ(p0 + p1, a.out_row_pages);
	EXPECT_EQ(p2, a.out_slot_pages);
	EXPECT_EQ(2, a.out_held_rows);
	EXPECT_EQ(1, a.out_slot_rows);
	EXPECT_EQ(variant->nr_rows - rz - 3, a.out_free_rows);
	EXPECT_EQ(2, a.out_nr_clients);
	EXPECT_EQ(2, a.out_client_rows);
	EXPECT_EQ(1, a.out_client_slots);
	EXPECT_EQ(p0 + p1 + p2, a.out_client_pages);
	kt_check_identities(_metadata, &self->pool, &a);

	EXPECT_EQ(a.out_free_pages, b.out_free_pages);
	EXPECT_EQ(a.out_row_pages, b.out_row_pages);
	EXPECT_EQ(a.out_slot_pages, b.out_slot_pages);
	EXPECT_EQ(a.out_held_rows, b.out_held_rows);
	EXPECT_EQ(a.out_slot_rows, b.out_slot_rows);
	EXPECT_EQ(a.out_free_rows, b.out_free_rows);
	EXPECT_EQ(0, b.out_client_rows);
	EXPECT_EQ(0, b.out_client_slots);
	EXPECT_EQ(0, b.out_client_pages);
}

TEST_F(info, verify_fresh)
{
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

TEST_F(info, verify_loaded)
{
	struct kvpool_handle h[4];
	int i;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 4, h, NULL));
	/* 50 tokens in all: fits the smallest variant (63 pages at pt 1). */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kt_grow(self->fd, h[i], (i + 1) * 5));
	ASSERT_EQ(0, kt_commit1(self->fd, h[1], 5));
	ASSERT_EQ(0, kt_trim1(self->fd, h[1], NULL));
	ASSERT_EQ(0, kt_to_slot(self->fd, 5, h[3], NULL));
	ASSERT_EQ(0, kt_release1(self->fd, h[0], NULL));
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

static void expect_fdinfo(struct __test_metadata *_metadata, int fd,
			  __u32 pool, __u32 client, __u32 rows, __u32 slots,
			  __u32 pages)
{
	static const char *const keys[] = {
		"kvpool-pool", "kvpool-client-id", "kvpool-rows",
		"kvpool-slots", "kvpool-pages", "kvpool-cache-pages",
	};
	const __u32 want[] = { pool, client, rows, slots, pages, 0 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		__u64 v = ~0ull;

		EXPECT_EQ(0, kt_fdinfo_u64(fd, keys[i], &v))
			TH_LOG("fdinfo key %s", keys[i]);
		EXPECT_EQ(want[i], v) TH_LOG("fdinfo %s", keys[i]);
	}
}

TEST_F(info, fdinfo)
{
	const __u32 pt = variant->page_tokens;
	struct kvpool_handle h[3];
	struct kvpool_info inf, inf2;
	struct kvpool_stats st;
	__u64 v;
	int fd2;

	ASSERT_EQ(0, kt_info(self->fd, &inf));
	/* The generic lines come first. */
	ASSERT_EQ(0, kt_fdinfo_u64(self->fd, "pos", &v));
	expect_fdinfo(_metadata, self->fd, self->pool.id, inf.out_client_id,
		      0, 0, 0);

	ASSERT_EQ(0, kt_row_alloc(self->fd, 3, h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h[0], 2 * pt + 1));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 1));
	ASSERT_EQ(0, kt_to_slot(self->fd, 9, h[1], NULL));
	ASSERT_EQ(0, kt_stats(self->fd, &st));
	EXPECT_EQ(4, st.out_client_pages);
	expect_fdinfo(_metadata, self->fd, self->pool.id, inf.out_client_id,
		      st.out_client_rows, st.out_client_slots,
		      st.out_client_pages);
	EXPECT_EQ(2, st.out_client_rows);
	EXPECT_EQ(1, st.out_client_slots);

	/* Another client: its own id and nothing held. */
	fd2 = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_info(fd2, &inf2));
	expect_fdinfo(_metadata, fd2, self->pool.id, inf2.out_client_id,
		      0, 0, 0);

	ASSERT_EQ(0, kt_release1(self->fd, h[0], NULL));
	ASSERT_EQ(0, kt_slot_release(self->fd, 9, NULL));
	expect_fdinfo(_metadata, self->fd, self->pool.id, inf.out_client_id,
		      1, 0, 0);
}

static void expect_sysfs_one(struct __test_metadata *_metadata, __u32 id,
			     const char *name, __u32 want)
{
	__u64 v = ~0ull;

	EXPECT_EQ(0, kt_sysfs_u64(id, name, &v)) TH_LOG("sysfs %s", name);
	EXPECT_EQ(want, v) TH_LOG("sysfs %s", name);
}

static void expect_sysfs(struct __test_metadata *_metadata,
			 struct kt_pool *p, int fd)
{
	struct kvpool_stats s;
	struct kvpool_info i;

	ASSERT_EQ(0, kt_info(fd, &i));
	ASSERT_EQ(0, kt_stats(fd, &s));
#define SYSFS(name, val) expect_sysfs_one(_metadata, p->id, name, val)
	SYSFS("pool_id", i.out_pool_id);
	SYSFS("nr_pages", i.out_nr_pages);
	SYSFS("page_tokens", i.out_page_tokens);
	SYSFS("nr_rows", i.out_nr_rows);
	SYSFS("row_tokens", i.out_row_tokens);
	SYSFS("create_flags", i.out_create_flags);
	SYSFS("free_pages", s.out_free_pages);
	SYSFS("row_pages", s.out_row_pages);
	SYSFS("slot_pages", s.out_slot_pages);
	SYSFS("cache_evictable", s.out_cache_evictable);
	SYSFS("cache_pinned", s.out_cache_pinned);
	SYSFS("reserved_pages", s.out_reserved_pages);
	SYSFS("free_rows", s.out_free_rows);
	SYSFS("held_rows", s.out_held_rows);
	SYSFS("slot_rows", s.out_slot_rows);
	SYSFS("reserved_rows", s.out_reserved_rows);
	SYSFS("nr_clients", s.out_nr_clients);
#undef SYSFS
}

TEST_F(info, sysfs)
{
	struct kvpool_handle h[2];
	int fd2;

	expect_sysfs(_metadata, &self->pool, self->fd);
	ASSERT_EQ(0, kt_row_alloc(self->fd, 2, h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h[0], 3 * variant->page_tokens));
	ASSERT_EQ(0, kt_grow(self->fd, h[1], 1));
	ASSERT_EQ(0, kt_to_slot(self->fd, 1, h[1], NULL));
	fd2 = kt_pool_open(_metadata, &self->pool);
	expect_sysfs(_metadata, &self->pool, fd2);
	kt_pool_close(&self->pool, fd2);
	expect_sysfs(_metadata, &self->pool, self->fd);
}

/* Read-only files: writing them fails (mode 0444 or no store op). */
TEST_F(info, sysfs_read_only)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), KT_SYSFS_FMT, self->pool.id,
		 "free_pages");
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0, st.st_mode & 0222);
}

TEST_F(info, enotty)
{
	const unsigned long cmds[] = {
		_IO(KVPOOL_TYPE, 0x7f),
		/* Past the last pool op, the block is kept for later. */
		_IO(KVPOOL_TYPE, KT_POOL_CMD_END),
		_IO(KVPOOL_TYPE, KT_CTL_CMD_BASE - 2),
		_IO(KVPOOL_TYPE, KT_CTL_CMD_BASE - 1),
		/* Control ops are not pool ops; nor is what follows them. */
		_IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_CREATE),
		_IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_TENANT_SET),
		_IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_SET_WMARK),
		_IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_ARENA_SET),
		_IO(KVPOOL_TYPE, KT_CTL_CMD_END),
		/* The agent file's ops are not pool ops; nothing above is ours. */
		_IO(KVPOOL_TYPE, KVPOOL_CMD_AGENT_RECV),
		_IO(KVPOOL_TYPE, KVPOOL_CMD_AGENT_REPLY),
		_IO(KVPOOL_TYPE, KT_AGENT_CMD_END),
		_IO(KVPOOL_TYPE, KT_CMD_LIMIT - 1),
		_IO(KVPOOL_TYPE, KT_CMD_LIMIT),
		_IO(KVPOOL_TYPE, 0xff),
		/* The development series' numbers: type 0xb7, ops from 0x80. */
		_IO(KVPOOL_TYPE, 0x80),
		_IO(0xb7, 0x80),
		_IO(0xb7, 0x81),
		_IO(0xb7, KVPOOL_CMD_INFO),
		_IO(KVPOOL_TYPE - 1, KVPOOL_CMD_INFO),
		_IO(KVPOOL_TYPE + 1, KVPOOL_CMD_INFO),
		/* The right number with a size/direction encoded. */
		_IOWR(KVPOOL_TYPE, KVPOOL_CMD_INFO, struct kvpool_info),
		_IOR(KVPOOL_TYPE, KVPOOL_CMD_STATS, struct kvpool_stats),
		_IOW(KVPOOL_TYPE, KVPOOL_CMD_ROW_ALLOC, struct kvpool_row_alloc),
		_IOWR(KVPOOL_TYPE, KVPOOL_CMD_DONATE, struct kvpool_batch),
		_IOW(KVPOOL_TYPE, KVPOOL_CMD_ATTACH_PREFIX,
		     struct kvpool_attach),
		_IOW(KVPOOL_TYPE, KVPOOL_CMD_CACHE_EVICT, struct kvpool_batch),
		_IOR(KVPOOL_TYPE, KVPOOL_CMD_SWA_FREE, struct kvpool_batch),
	};
	unsigned char buf[256] = { 0 };
	struct kvpool_stats before, after;
	unsigned int i;

	ASSERT_EQ(0, kt_stats(self->fd, &before));
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		memset(buf, 0, sizeof(buf));
		*(__u32 *)buf = 64;
		EXPECT_EQ(ENOTTY, kt_ioctl(self->fd, cmds[i], buf))
			TH_LOG("cmd %#lx", cmds[i]);
	}
	ASSERT_EQ(0, kt_stats(self->fd, &after));
	EXPECT_STREQ("", kt_stats_diff(&before, &after, KT_ST_USAGE));
}

/* ---- element lengths: entry_len and page_entry_len ---------------------- */

/*
 * Fixture "elen" runs the checks of the struct sizes above on each array
 * of the ABI (one variant per array): an element length below the
 * element's first release, 0 included (EINVAL), above PAGE_SIZE (E2BIG),
 * longer than this header's element with a zero tail (accepted, the same
 * as the exact length), and with a non-zero tail: E2BIG with
 * out_error_index on the element in an array the kernel reads, ignored and
 * zeroed in one it writes. Every refused call changes nothing: STATS, the
 * rows involved, the array, and VERIFY stays clean.
 */
#define ELEN_ARR_BYTES	(10 * KT_PAGE_SIZE)	/* 8 elements of 4096, slack */
#define ELEN_MAX_NR	8

enum elen_dir {
	ELEN_READ,	/* the kernel reads the elements */
	ELEN_WRITE,	/* the kernel writes them */
	ELEN_RW,	/* it reads them and writes their out_* fields */
};

FIXTURE(elen) {
	struct kt_pool pool;
	int fd;
	unsigned char *arr;		/* the array under test */
	unsigned char copy[ELEN_ARR_BYTES];
	unsigned char st[256];		/* the op's struct */
	struct kvpool_handle rows[KT_SNAP_ROWS];	/* rows prep made */
	int nr_rows;
	struct kvpool_extend_entry ext[2];	/* EXTEND's other array */
	__u32 pages[64];
	__u32 cache[2];			/* prefix-cache page ids */
};

typedef void (*elen_prep_fn)(struct __test_metadata *_metadata,
			     FIXTURE_DATA(elen) *self, __u32 stride);
/* After a call that succeeded: check the results; returns elements written. */
typedef __u32 (*elen_check_fn)(struct __test_metadata *_metadata,
			       FIXTURE_DATA(elen) *self, __u32 stride);

struct elen_op {
	const char *name;
	unsigned long cmd;
	bool ctl;		/* issued on /dev/kvpool-control */
	__u32 esize;		/* sizeof the element in this header */
	__u32 len_off;		/* the element length field in the struct */
	enum elen_dir dir;
	int err_off;		/* out_error_index in the struct, or -1 */
	__u32 nr;		/* elements the call reads or has room for */
	elen_prep_fn prep;	/* the struct in st, elements at stride */
	elen_check_fn check;
};

FIXTURE_VARIANT(elen) {
	const struct elen_op *op;
};

FIXTURE_SETUP(elen)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     512, 16, 64, 1024);
	self->fd = kt_pool_open(_metadata, &self->pool);
	self->arr = mmap(NULL, ELEN_ARR_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->arr);
}

FIXTURE_TEARDOWN(elen)
{
	if (self->arr && self->arr != MAP_FAILED)
		munmap(self->arr, ELEN_ARR_BYTES);
	kt_pool_fini(_metadata, &self->pool);
}

static unsigned char *elen_elem(FIXTURE_DATA(elen) *self, __u32 i,
				__u32 stride)
{
	return self->arr + (size_t)i * stride;
}

/* A held row of @tokens (pt 16), @committed of them committed. */
static struct kvpool_handle elen_row(struct __test_metadata *_metadata,
				     FIXTURE_DATA(elen) *self, __u32 tokens,
				     __u32 committed)
{
	struct kvpool_handle h;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	if (tokens)
		ASSERT_EQ(0, kt_grow(self->fd, h, tokens));
	if (committed)
		ASSERT_EQ(0, kt_commit1(self->fd, h, committed));
	ASSERT_GT(KT_SNAP_ROWS, self->nr_rows);
	self->rows[self->nr_rows++] = h;
	return h;
}

/* Two len entries { a, la }, { b, lb } at @stride in the array. */
static void elen_len_entries(FIXTURE_DATA(elen) *self, __u32 stride,
			     struct kvpool_handle a, __u32 la,
			     struct kvpool_handle b, __u32 lb)
{
	struct kvpool_len_entry e[2] = {
		{ .handle = a, .len = la }, { .handle = b, .len = lb },
	};

	memcpy(elen_elem(self, 0, stride), &e[0], sizeof(e[0]));
	memcpy(elen_elem(self, 1, stride), &e[1], sizeof(e[1]));
}

static void elen_batch_st(FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_batch b = {
		.size = sizeof(b), .count = 2, .entry_len = stride,
		.entries = kt_ptr(self->arr), .out_error_index = 0xdeadbeef,
		.out_nr_pages = 0xdeadbeef,
	};

	memcpy(self->st, &b, sizeof(b));
}

static __u32 elen_batch_pages(FIXTURE_DATA(elen) *self)
{
	return ((struct kvpool_batch *)self->st)->out_nr_pages;
}

/* The row's state as ROW_QUERY reports it (with the pages, stride 4). */
static void elen_query(struct __test_metadata *_metadata,
		       FIXTURE_DATA(elen) *self, struct kvpool_handle h,
		       struct kt_row_snap *s)
{
	kt_snap_row(self->fd, h, s);
	ASSERT_EQ(0, s->err);
}

static void prep_e_row_alloc(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_row_alloc s = {
		.size = sizeof(s), .count = 2, .entry_len = stride,
		.handles = kt_ptr(self->arr), .out_short = 0xdeadbeef,
	};

	memcpy(self->st, &s, sizeof(s));
}

static __u32 check_e_row_alloc(struct __test_metadata *_metadata,
			       FIXTURE_DATA(elen) *self, __u32 stride)
{
	static struct kt_row_snap s;
	struct kvpool_handle h[2];
	int i;

	for (i = 0; i < 2; i++) {
		memcpy(&h[i], elen_elem(self, i, stride), sizeof(h[i]));
		elen_query(_metadata, self, h[i], &s);
		EXPECT_EQ(KVPOOL_ROW_HELD, s.state);
		EXPECT_EQ(h[i].req_pool_idx, s.idx);
		EXPECT_EQ(0, s.alloc);
		EXPECT_NE(0, h[i].req_pool_idx);	/* row 0 is reserved */
	}
	EXPECT_NE(h[0].req_pool_idx, h[1].req_pool_idx);
	EXPECT_EQ(0, ((struct kvpool_row_alloc *)self->st)->out_short);
	return 2;
}

/* EXTEND of two empty rows to 20 and 40 tokens: 2 + 3 pages. */
static void prep_e_extend_entries(struct __test_metadata *_metadata,
				  FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_extend s = {
		.size = sizeof(s), .count = 2, .entry_len = stride,
		.entries = kt_ptr(self->arr),
		.pages_cap = ARRAY_SIZE(self->pages),
		.page_entry_len = sizeof(__u32), .pages = kt_ptr(self->pages),
		.out_error_index = 0xdeadbeef,
	};
	struct kvpool_extend_entry e[2] = {
		{ .handle = elen_row(_metadata, self, 0, 0), .new_len = 20 },
		{ .handle = elen_row(_metadata, self, 0, 0), .new_len = 40 },
	};

	memcpy(elen_elem(self, 0, stride), &e[0], sizeof(e[0]));
	memcpy(elen_elem(self, 1, stride), &e[1], sizeof(e[1]));
	memcpy(self->st, &s, sizeof(s));
}

static __u32 check_e_extend_entries(struct __test_metadata *_metadata,
				    FIXTURE_DATA(elen) *self, __u32 stride)
{
	const struct kvpool_extend *x = (void *)self->st;
	static struct kt_row_snap a, b;
	struct kvpool_extend_entry e[2];

	memcpy(&e[0], elen_elem(self, 0, stride), sizeof(e[0]));
	memcpy(&e[1], elen_elem(self, 1, stride), sizeof(e[1]));
	EXPECT_EQ(2, e[0].out_nr_new);
	EXPECT_EQ(3, e[1].out_nr_new);
	/* The inputs are as given. */
	EXPECT_EQ(20, e[0].new_len);
	EXPECT_EQ(40, e[1].new_len);
	EXPECT_EQ(5, x->out_nr_pages);
	EXPECT_EQ(KT_ERR_NONE, x->out_error_index);
	elen_query(_metadata, self, e[0].handle, &a);
	elen_query(_metadata, self, e[1].handle, &b);
	EXPECT_EQ(20, a.alloc);
	EXPECT_EQ(40, b.alloc);
	EXPECT_EQ(0, memcmp(self->pages, a.pages, 2 * sizeof(__u32)));
	EXPECT_EQ(0, memcmp(self->pages + 2, b.pages, 3 * sizeof(__u32)));
	return 2;
}

/* The same EXTEND, the page id array under test (room for 8). */
static void prep_e_extend_pages(struct __test_metadata *_metadata,
				FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_extend s = {
		.size = sizeof(s), .count = 2,
		.entry_len = sizeof(struct kvpool_extend_entry),
		.entries = kt_ptr(self->ext), .pages_cap = ELEN_MAX_NR,
		.page_entry_len = stride, .pages = kt_ptr(self->arr),
		.out_error_index = 0xdeadbeef,
	};

	self->ext[0] = (struct kvpool_extend_entry){
		.handle = elen_row(_metadata, self, 0, 0), .new_len = 20 };
	self->ext[1] = (struct kvpool_extend_entry){
		.handle = elen_row(_metadata, self, 0, 0), .new_len = 40 };
	memcpy(self->st, &s, sizeof(s));
}

static __u32 check_e_extend_pages(struct __test_metadata *_metadata,
				  FIXTURE_DATA(elen) *self, __u32 stride)
{
	const struct kvpool_extend *x = (void *)self->st;
	static struct kt_row_snap a, b;
	__u32 i, id;

	EXPECT_EQ(5, x->out_nr_pages);
	EXPECT_EQ(2, self->ext[0].out_nr_new);
	EXPECT_EQ(3, self->ext[1].out_nr_new);
	elen_query(_metadata, self, self->ext[0].handle, &a);
	elen_query(_metadata, self, self->ext[1].handle, &b);
	for (i = 0; i < 5; i++) {
		memcpy(&id, elen_elem(self, i, stride), sizeof(id));
		EXPECT_EQ(i < 2 ? a.pages[i] : b.pages[i - 2], id)
			TH_LOG("page %u at stride %u", i, stride);
	}
	return 5;
}

/* COMMIT of two rows of 40 tokens to 10 and 33. */
static void prep_e_commit(struct __test_metadata *_metadata,
			  FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_handle a = elen_row(_metadata, self, 40, 0);
	struct kvpool_handle b = elen_row(_metadata, self, 40, 0);

	elen_len_entries(self, stride, a, 10, b, 33);
	elen_batch_st(self, stride);
}

static __u32 check_e_commit(struct __test_metadata *_metadata,
			    FIXTURE_DATA(elen) *self,
			    __u32 __maybe_unused stride)
{
	static struct kt_row_snap a, b;

	elen_query(_metadata, self, self->rows[0], &a);
	elen_query(_metadata, self, self->rows[1], &b);
	EXPECT_EQ(10, a.committed);
	EXPECT_EQ(33, b.committed);
	EXPECT_EQ(40, a.alloc);
	return 0;
}

static void elen_handles(FIXTURE_DATA(elen) *self, __u32 stride)
{
	memcpy(elen_elem(self, 0, stride), &self->rows[0],
	       sizeof(self->rows[0]));
	memcpy(elen_elem(self, 1, stride), &self->rows[1],
	       sizeof(self->rows[1]));
	elen_batch_st(self, stride);
}

/* TRIM of rows of 40 tokens committed to 17 and 1: 1 + 2 pages freed. */
static void prep_e_trim(struct __test_metadata *_metadata,
			FIXTURE_DATA(elen) *self, __u32 stride)
{
	elen_row(_metadata, self, 40, 17);
	elen_row(_metadata, self, 40, 1);
	elen_handles(self, stride);
}

static __u32 check_e_trim(struct __test_metadata *_metadata,
			  FIXTURE_DATA(elen) *self,
			  __u32 __maybe_unused stride)
{
	static struct kt_row_snap a, b;

	EXPECT_EQ(3, elen_batch_pages(self));
	elen_query(_metadata, self, self->rows[0], &a);
	elen_query(_metadata, self, self->rows[1], &b);
	EXPECT_EQ(17, a.alloc);
	EXPECT_EQ(1, b.alloc);
	EXPECT_EQ(2, a.nr_pages);
	EXPECT_EQ(1, b.nr_pages);
	return 0;
}

/* RELEASE of rows of 40 and 20 tokens: 3 + 2 pages. */
static void prep_e_release(struct __test_metadata *_metadata,
			   FIXTURE_DATA(elen) *self, __u32 stride)
{
	elen_row(_metadata, self, 40, 0);
	elen_row(_metadata, self, 20, 0);
	elen_handles(self, stride);
}

static __u32 check_e_release(struct __test_metadata *_metadata,
			     FIXTURE_DATA(elen) *self,
			     __u32 __maybe_unused stride)
{
	struct kvpool_row_query q;

	EXPECT_EQ(5, elen_batch_pages(self));
	EXPECT_EQ(ENOENT, kt_query(self->fd, self->rows[0], NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_query(self->fd, self->rows[1], NULL, 0, &q));
	return 0;
}

/* DONATE of two committed rows of 40 tokens up to 32 and 16. */
static void prep_e_donate(struct __test_metadata *_metadata,
			  FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_handle a = elen_row(_metadata, self, 40, 40);
	struct kvpool_handle b = elen_row(_metadata, self, 40, 40);

	elen_len_entries(self, stride, a, 32, b, 16);
	elen_batch_st(self, stride);
}

static __u32 check_e_donate(struct __test_metadata *_metadata,
			    FIXTURE_DATA(elen) *self,
			    __u32 __maybe_unused stride)
{
	static struct kt_row_snap a, b;

	EXPECT_EQ(3, elen_batch_pages(self));
	elen_query(_metadata, self, self->rows[0], &a);
	elen_query(_metadata, self, self->rows[1], &b);
	EXPECT_EQ(32, a.protected_len);
	EXPECT_EQ(16, b.protected_len);
	return 0;
}

/* SWA_FREE of two committed rows of 40 tokens at edges 33 and 17. */
static void prep_e_swa_free(struct __test_metadata *_metadata,
			    FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_handle a = elen_row(_metadata, self, 40, 40);
	struct kvpool_handle b = elen_row(_metadata, self, 40, 40);

	elen_len_entries(self, stride, a, 33, b, 17);
	elen_batch_st(self, stride);
}

static __u32 check_e_swa_free(struct __test_metadata *_metadata,
			      FIXTURE_DATA(elen) *self,
			      __u32 __maybe_unused stride)
{
	static struct kt_row_snap a, b;

	EXPECT_EQ(3, elen_batch_pages(self));
	elen_query(_metadata, self, self->rows[0], &a);
	elen_query(_metadata, self, self->rows[1], &b);
	EXPECT_EQ(32, a.swa);
	EXPECT_EQ(16, b.swa);
	EXPECT_EQ(KVPOOL_PAGE_NONE, a.pages[0]);
	EXPECT_EQ(KVPOOL_PAGE_NONE, a.pages[1]);
	EXPECT_NE(KVPOOL_PAGE_NONE, a.pages[2]);
	return 0;
}

/* Two unpinned pages of the prefix cache, ids in self->cache. */
static void elen_cache_pages(struct __test_metadata *_metadata,
			     FIXTURE_DATA(elen) *self)
{
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 n = ~0u;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, 32));
	ASSERT_EQ(0, kt_commit1(self->fd, h, 32));
	ASSERT_EQ(0, kt_query(self->fd, h, self->cache, 2, &q));
	ASSERT_EQ(2, q.out_nr_pages);
	ASSERT_EQ(0, kt_release_donate1(self->fd, h, &n));
	ASSERT_EQ(0, n);
}

static void prep_e_cache_evict(struct __test_metadata *_metadata,
			       FIXTURE_DATA(elen) *self, __u32 stride)
{
	elen_cache_pages(_metadata, self);
	memcpy(elen_elem(self, 0, stride), &self->cache[0], sizeof(__u32));
	memcpy(elen_elem(self, 1, stride), &self->cache[1], sizeof(__u32));
	elen_batch_st(self, stride);
}

static __u32 check_e_cache_evict(struct __test_metadata *_metadata,
				 FIXTURE_DATA(elen) *self,
				 __u32 __maybe_unused stride)
{
	EXPECT_EQ(2, elen_batch_pages(self));
	/* Gone from the cache: evicting them again names no cache page. */
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &self->cache[0], 1, NULL));
	EXPECT_EQ(ENOENT, kt_evict(self->fd, &self->cache[1], 1, NULL));
	return 0;
}

/* ATTACH_PREFIX of two cache pages to a fresh row. */
static void prep_e_attach(struct __test_metadata *_metadata,
			  FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_attach s = {
		.size = sizeof(s), .nr_pages = 2, .page_entry_len = stride,
		.pages = kt_ptr(self->arr),
	};

	elen_cache_pages(_metadata, self);
	s.handle = elen_row(_metadata, self, 0, 0);
	memcpy(elen_elem(self, 0, stride), &self->cache[0], sizeof(__u32));
	memcpy(elen_elem(self, 1, stride), &self->cache[1], sizeof(__u32));
	memcpy(self->st, &s, sizeof(s));
}

static __u32 check_e_attach(struct __test_metadata *_metadata,
			    FIXTURE_DATA(elen) *self,
			    __u32 __maybe_unused stride)
{
	static struct kt_row_snap a;

	elen_query(_metadata, self, self->rows[0], &a);
	EXPECT_EQ(32, a.alloc);
	EXPECT_EQ(32, a.committed);
	EXPECT_EQ(32, a.protected_len);
	EXPECT_EQ(self->cache[0], a.pages[0]);
	EXPECT_EQ(self->cache[1], a.pages[1]);
	return 0;
}

/* ROW_QUERY of a row of 40 tokens (3 pages) with room for 8. */
static void prep_e_row_query(struct __test_metadata *_metadata,
			     FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_row_query s = {
		.size = sizeof(s), .pages_cap = ELEN_MAX_NR,
		.page_entry_len = stride, .pages = kt_ptr(self->arr),
	};

	s.handle = elen_row(_metadata, self, 40, 0);
	memcpy(self->st, &s, sizeof(s));
}

static __u32 check_e_row_query(struct __test_metadata *_metadata,
			       FIXTURE_DATA(elen) *self, __u32 stride)
{
	const struct kvpool_row_query *q = (void *)self->st;
	static struct kt_row_snap a;
	__u32 i, id;

	elen_query(_metadata, self, self->rows[0], &a);
	EXPECT_EQ(3, q->out_nr_pages);
	EXPECT_EQ(40, q->out_allocated_len);
	EXPECT_EQ(KVPOOL_ROW_HELD, q->out_state);
	for (i = 0; i < 3; i++) {
		memcpy(&id, elen_elem(self, i, stride), sizeof(id));
		EXPECT_EQ(a.pages[i], id) TH_LOG("page %u at stride %u", i,
						 stride);
	}
	return 3;
}

/* TENANT_LIST with room for 8: the pool has one tenant, the fixture's. */
static void prep_e_tenant_list(struct __test_metadata __maybe_unused *_metadata,
			       FIXTURE_DATA(elen) *self, __u32 stride)
{
	struct kvpool_ctl_tenant_list s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.count = ELEN_MAX_NR, .entry_len = stride,
		.tenants = kt_ptr(self->arr), .out_nr_tenants = 0xdeadbeef,
	};

	memcpy(self->st, &s, sizeof(s));
}

static __u32 check_e_tenant_list(struct __test_metadata *_metadata,
				 FIXTURE_DATA(elen) *self, __u32 stride)
{
	const struct kvpool_ctl_tenant_list *l = (void *)self->st;
	struct kvpool_tenant_info ti;
	struct kvpool_stats s;

	ASSERT_EQ(0, kt_stats(self->fd, &s));
	EXPECT_EQ(1, l->out_nr_tenants);
	memcpy(&ti, elen_elem(self, 0, stride), sizeof(ti));
	EXPECT_EQ(s.out_tenant_id, ti.tenant_id);
	EXPECT_EQ(getuid(), ti.uid);
	EXPECT_EQ(1, ti.nr_clients);
	EXPECT_EQ(s.out_tenant_pages, ti.pages);
	EXPECT_EQ(0, ti.flags & ~KVPOOL_TENANT_CONFIGURED);
	EXPECT_EQ(0, ti.path_offset);
	return l->out_nr_tenants < ELEN_MAX_NR ? l->out_nr_tenants :
	       ELEN_MAX_NR;
}

#define ELEN(_name, _cmd, _ctl, _esize, _type, _lenf, _dir, _erroff, _nr) \
	static const struct elen_op elen_##_name = {			\
		.name = #_name, .cmd = _cmd, .ctl = _ctl,		\
		.esize = _esize, .len_off = offsetof(_type, _lenf),	\
		.dir = _dir, .err_off = _erroff, .nr = _nr,		\
		.prep = prep_e_##_name, .check = check_e_##_name,	\
	};								\
	FIXTURE_VARIANT_ADD(elen, _name) { .op = &elen_##_name }

#define BATCH_ERR ((int)offsetof(struct kvpool_batch, out_error_index))

ELEN(row_alloc, KVPOOL_ROW_ALLOC, false, sizeof(struct kvpool_handle),
     struct kvpool_row_alloc, entry_len, ELEN_WRITE, -1, 2);
ELEN(extend_entries, KVPOOL_EXTEND, false, sizeof(struct kvpool_extend_entry),
     struct kvpool_extend, entry_len, ELEN_RW,
     (int)offsetof(struct kvpool_extend, out_error_index), 2);
ELEN(extend_pages, KVPOOL_EXTEND, false, sizeof(__u32),
     struct kvpool_extend, page_entry_len, ELEN_WRITE, -1, ELEN_MAX_NR);
ELEN(commit, KVPOOL_COMMIT, false, sizeof(struct kvpool_len_entry),
     struct kvpool_batch, entry_len, ELEN_READ, BATCH_ERR, 2);
ELEN(trim, KVPOOL_TRIM, false, sizeof(struct kvpool_handle),
     struct kvpool_batch, entry_len, ELEN_READ, BATCH_ERR, 2);
ELEN(release, KVPOOL_RELEASE, false, sizeof(struct kvpool_handle),
     struct kvpool_batch, entry_len, ELEN_READ, BATCH_ERR, 2);
ELEN(donate, KVPOOL_DONATE, false, sizeof(struct kvpool_len_entry),
     struct kvpool_batch, entry_len, ELEN_READ, BATCH_ERR, 2);
ELEN(swa_free, KVPOOL_SWA_FREE, false, sizeof(struct kvpool_len_entry),
     struct kvpool_batch, entry_len, ELEN_READ, BATCH_ERR, 2);
ELEN(cache_evict, KVPOOL_CACHE_EVICT, false, sizeof(__u32),
     struct kvpool_batch, entry_len, ELEN_READ, BATCH_ERR, 2);
ELEN(attach, KVPOOL_ATTACH_PREFIX, false, sizeof(__u32),
     struct kvpool_attach, page_entry_len, ELEN_READ, -1, 2);
ELEN(row_query, KVPOOL_ROW_QUERY, false, sizeof(__u32),
     struct kvpool_row_query, page_entry_len, ELEN_WRITE, -1, ELEN_MAX_NR);
ELEN(tenant_list, KVPOOL_CTL_TENANT_LIST, true,
     sizeof(struct kvpool_tenant_info), struct kvpool_ctl_tenant_list,
     entry_len, ELEN_WRITE, -1, ELEN_MAX_NR);

/*
 * Fill the array (@fill: what a written array holds beforehand; an array
 * the kernel reads gets zeros, so that the tails are zero), then let the
 * variant build its struct and elements at @stride.
 */
static void elen_prep(struct __test_metadata *_metadata,
		      FIXTURE_DATA(elen) *self,
		      const FIXTURE_VARIANT(elen) *variant, __u32 stride,
		      unsigned char fill)
{
	const struct elen_op *op = variant->op;

	memset(self->arr, op->dir == ELEN_WRITE ? fill : 0, ELEN_ARR_BYTES);
	memset(self->st, 0, sizeof(self->st));
	self->nr_rows = 0;
	op->prep(_metadata, self, stride);
}

static void elen_set_len(FIXTURE_DATA(elen) *self,
			 const FIXTURE_VARIANT(elen) *variant, __u32 len)
{
	memcpy(self->st + variant->op->len_off, &len, sizeof(len));
}

static int elen_call(FIXTURE_DATA(elen) *self,
		     const FIXTURE_VARIANT(elen) *variant)
{
	return kt_ioctl(variant->op->ctl ? self->pool.ctl : self->fd,
			variant->op->cmd, self->st);
}

static __u32 elen_err_index(FIXTURE_DATA(elen) *self,
			    const FIXTURE_VARIANT(elen) *variant)
{
	__u32 v;

	memcpy(&v, self->st + variant->op->err_off, sizeof(v));
	return v;
}

/*
 * The call was refused with @err and changed nothing: STATS and the rows
 * prep made are as in @before, the array is as it went in (self->copy),
 * VERIFY is clean; @index is the out_error_index it must report.
 */
static void elen_expect_refused(struct __test_metadata *_metadata,
				FIXTURE_DATA(elen) *self,
				const FIXTURE_VARIANT(elen) *variant,
				const struct kt_state *before, int err,
				__u32 index, __u32 len)
{
	static struct kt_state after;
	const struct elen_op *op = variant->op;

	EXPECT_EQ(err, elen_call(self, variant))
		TH_LOG("%s with element length %u", op->name, len);
	if (op->err_off >= 0) {
		EXPECT_EQ(index, elen_err_index(self, variant))
			TH_LOG("%s with element length %u: out_error_index",
			       op->name, len);
	}
	kt_snap(self->fd, self->rows, self->nr_rows, &after);
	EXPECT_STREQ("", kt_state_diff(before, &after))
		TH_LOG("%s with element length %u", op->name, len);
	EXPECT_EQ(0, memcmp(self->copy, self->arr, ELEN_ARR_BYTES))
		TH_LOG("%s with element length %u changed the array",
		       op->name, len);
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

/* Shorter than the element, 0 included: EINVAL, nothing changed. */
TEST_F(elen, short_len)
{
	const struct elen_op *op = variant->op;
	const __u32 lens[] = { 0, 1, op->esize - 1, op->esize / 2 };
	static struct kt_state before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		elen_prep(_metadata, self, variant, op->esize, 0xff);
		elen_set_len(self, variant, lens[i]);
		memcpy(self->copy, self->arr, ELEN_ARR_BYTES);
		kt_snap(self->fd, self->rows, self->nr_rows, &before);
		/* Not about one element: out_error_index stays ~0U. */
		elen_expect_refused(_metadata, self, variant, &before, EINVAL,
				    KT_ERR_NONE, lens[i]);
	}
}

/* Above PAGE_SIZE: E2BIG without a look at the elements. */
TEST_F(elen, above_page_size)
{
	const struct elen_op *op = variant->op;
	const __u32 lens[] = {
		KT_PAGE_SIZE + 1, KT_PAGE_SIZE + op->esize,
		2 * KT_PAGE_SIZE, 1u << 16, 1u << 31, ~0u,
	};
	static struct kt_state before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		elen_prep(_metadata, self, variant, op->esize, 0xff);
		elen_set_len(self, variant, lens[i]);
		memcpy(self->copy, self->arr, ELEN_ARR_BYTES);
		kt_snap(self->fd, self->rows, self->nr_rows, &before);
		elen_expect_refused(_metadata, self, variant, &before, E2BIG,
				    KT_ERR_NONE, lens[i]);
	}
}

/* STATS after minus STATS before, field by field. */
static void elen_delta(const struct kvpool_stats *a,
		       const struct kvpool_stats *b, struct kvpool_stats *d)
{
	const __u32 *pa = (const __u32 *)a, *pb = (const __u32 *)b;
	__u32 *pd = (__u32 *)d;
	size_t i;

	for (i = 0; i < sizeof(*d) / sizeof(__u32); i++)
		pd[i] = pb[i] - pa[i];
}

/*
 * One accepted call at element length @stride on an array prefilled with
 * @fill: the variant's results are right, its effect on STATS is @want
 * (when given; else it is stored there), and the array is as the header
 * says: in a written element, the bytes past the known ones are zeroed and
 * the elements past those written are untouched; in a read element (or
 * the tails of read-and-written ones) nothing is written.
 */
static void elen_accepted(struct __test_metadata *_metadata,
			  FIXTURE_DATA(elen) *self,
			  const FIXTURE_VARIANT(elen) *variant, __u32 stride,
			  unsigned char fill, struct kvpool_stats *want,
			  bool have_want)
{
	const struct elen_op *op = variant->op;
	struct kvpool_stats s0, s1, d;
	__u32 i, j, nw;
	size_t end;

	elen_prep(_metadata, self, variant, stride, fill);
	memcpy(self->copy, self->arr, ELEN_ARR_BYTES);
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	ASSERT_EQ(0, elen_call(self, variant))
		TH_LOG("%s with element length %u", op->name, stride);
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	nw = op->check(_metadata, self, stride);
	elen_delta(&s0, &s1, &d);
	if (have_want) {
		EXPECT_STREQ("", kt_stats_diff(want, &d, KT_ST_USAGE))
			TH_LOG("%s: element length %u did not act as %u",
			       op->name, stride, op->esize);
	} else {
		*want = d;
	}

	end = (size_t)op->nr * stride;
	if (op->dir == ELEN_READ) {
		EXPECT_EQ(0, memcmp(self->copy, self->arr, ELEN_ARR_BYTES))
			TH_LOG("%s wrote to an array it only reads", op->name);
		return;
	}
	for (i = 0; i < op->nr; i++) {
		unsigned char *e = elen_elem(self, i, stride);

		for (j = op->esize; j < stride; j++) {
			if (op->dir == ELEN_WRITE && i < nw) {
				ASSERT_EQ(0, e[j])
					TH_LOG("%s: element %u, byte %u not zeroed",
					       op->name, i, j);
			} else {
				ASSERT_EQ(self->copy[e - self->arr + j], e[j])
					TH_LOG("%s: element %u, byte %u written",
					       op->name, i, j);
			}
		}
		if (op->dir == ELEN_WRITE && i >= nw) {
			ASSERT_EQ(0, memcmp(self->copy + (e - self->arr), e,
					    op->esize))
				TH_LOG("%s: element %u of %u written",
				       op->name, i, nw);
		}
	}
	EXPECT_EQ(0, memcmp(self->copy + end, self->arr + end,
			    ELEN_ARR_BYTES - end))
		TH_LOG("%s wrote past its array", op->name);
}

/*
 * Longer elements with a zero tail are accepted and act as this header's
 * (exact length first, then +8 and PAGE_SIZE). A written array comes in
 * full of 0xff: every tail written must come back zeroed.
 */
TEST_F(elen, zero_tail)
{
	const struct elen_op *op = variant->op;
	struct kvpool_stats want;

	elen_accepted(_metadata, self, variant, op->esize, 0xff, &want, false);
	elen_accepted(_metadata, self, variant, op->esize + 8, 0xff, &want,
		      true);
	elen_accepted(_metadata, self, variant, op->esize + 1, 0xff, &want,
		      true);
	elen_accepted(_metadata, self, variant, KT_PAGE_SIZE, 0xff, &want,
		      true);
}

/*
 * A non-zero byte past the known part of an element: in an array the
 * kernel reads, E2BIG naming that element, nothing changed; in an array
 * it only writes, nothing was read there: accepted and zeroed.
 */
TEST_F(elen, nonzero_tail)
{
	const struct elen_op *op = variant->op;
	const struct { __u32 len, elem, byte; } cases[] = {
		{ op->esize + 8, 0, op->esize },
		{ op->esize + 8, 1, op->esize + 7 },
		{ op->esize + 8, 1, op->esize + 3 },
		{ op->esize + 1, 1, op->esize },
		{ KT_PAGE_SIZE, 1, KT_PAGE_SIZE - 1 },
		{ KT_PAGE_SIZE, 0, op->esize + 100 },
	};
	static struct kt_state before;
	struct kvpool_stats want;
	unsigned char *e;
	unsigned int i;

	if (op->dir == ELEN_WRITE) {
		elen_accepted(_metadata, self, variant, op->esize, 0x5a,
			      &want, false);
		for (i = 0; i < ARRAY_SIZE(cases); i++)
			elen_accepted(_metadata, self, variant, cases[i].len,
				      0x5a, &want, true);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		elen_prep(_metadata, self, variant, cases[i].len, 0);
		elen_set_len(self, variant, cases[i].len);
		e = elen_elem(self, cases[i].elem, cases[i].len);
		e[cases[i].byte] = 0x80;
		memcpy(self->copy, self->arr, ELEN_ARR_BYTES);
		kt_snap(self->fd, self->rows, self->nr_rows, &before);
		elen_expect_refused(_metadata, self, variant, &before, E2BIG,
				    cases[i].elem, cases[i].len);
	}
}

/* ------------------------------------------------------------------------ */

/*
 * Fixture "misc": one pool; the checks that need no variant: element
 * lengths with nothing to copy, STATS sizes, VERIFY's capability.
 */
FIXTURE(misc) {
	struct kt_pool pool;
	int fd;
};

FIXTURE_SETUP(misc)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     256, 16, 16, 1024);
	self->fd = kt_pool_open(_metadata, &self->pool);
}

FIXTURE_TEARDOWN(misc)
{
	kt_pool_fini(_metadata, &self->pool);
}

/*
 * An element length is checked even when no element is copied: ROW_QUERY
 * with pages_cap 0, TENANT_LIST with count 0, EXTEND that needs no new
 * page.
 */
TEST_F(misc, elen_without_elements)
{
	const __u32 bad[] = { 0, 3, KT_PAGE_SIZE + 1, ~0u };
	const int want[] = { EINVAL, EINVAL, E2BIG, E2BIG };
	struct kvpool_ctl_tenant_list l;
	struct kvpool_extend_entry e;
	struct kvpool_row_query q;
	struct kvpool_stats s0, s1;
	struct kvpool_extend x;
	struct kvpool_handle h;
	unsigned int i;

	ASSERT_EQ(0, kt_row_alloc(self->fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(self->fd, h, 5));
	ASSERT_EQ(0, kt_stats(self->fd, &s0));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.handle = h;
		q.page_entry_len = bad[i];
		q.out_nr_pages = 0xdeadbeef;
		EXPECT_EQ(want[i], kt_ioctl(self->fd, KVPOOL_ROW_QUERY, &q))
			TH_LOG("ROW_QUERY, pages_cap 0, page_entry_len %u",
			       bad[i]);

		memset(&l, 0, sizeof(l));
		l.size = sizeof(l);
		l.pool_id = self->pool.id;
		l.entry_len = bad[i];
		EXPECT_EQ(want[i], kt_ioctl(self->pool.ctl,
					    KVPOOL_CTL_TENANT_LIST, &l))
			TH_LOG("TENANT_LIST, count 0, entry_len %u", bad[i]);

		/* 5 -> 9 tokens stays in the row's first page. */
		e = (struct kvpool_extend_entry){ .handle = h, .new_len = 9 };
		memset(&x, 0, sizeof(x));
		x.size = sizeof(x);
		x.count = 1;
		x.entry_len = sizeof(e);
		x.entries = kt_ptr(&e);
		x.page_entry_len = bad[i];
		EXPECT_EQ(want[i], kt_ioctl(self->fd, KVPOOL_EXTEND, &x))
			TH_LOG("EXTEND, pages_cap 0, page_entry_len %u",
			       bad[i]);
	}
	ASSERT_EQ(0, kt_stats(self->fd, &s1));
	EXPECT_STREQ("", kt_stats_diff(&s0, &s1, KT_ST_USAGE));
	ASSERT_EQ(0, kt_query(self->fd, h, NULL, 0, &q));
	EXPECT_EQ(5, q.out_allocated_len);

	/* With a valid length the same calls work. */
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.handle = h;
	q.page_entry_len = sizeof(__u32);
	EXPECT_EQ(0, kt_ioctl(self->fd, KVPOOL_ROW_QUERY, &q));
	EXPECT_EQ(1, q.out_nr_pages);
	memset(&l, 0, sizeof(l));
	l.size = sizeof(l);
	l.pool_id = self->pool.id;
	l.entry_len = sizeof(struct kvpool_tenant_info);
	l.out_nr_tenants = 0xdeadbeef;
	EXPECT_EQ(0, kt_ioctl(self->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l));
	EXPECT_EQ(1, l.out_nr_tenants);
	x.page_entry_len = sizeof(__u32);
	EXPECT_EQ(0, kt_ioctl(self->fd, KVPOOL_EXTEND, &x));
	EXPECT_EQ(0, x.out_nr_pages);
	EXPECT_EQ(0, e.out_nr_new);
}

/*
 * STATS: 104 bytes is the first release's size, 112 ABI 2's (with
 * out_quarantine_pages); both work, and the kernel writes no more than
 * it was given. The 72-byte struct of the development series (up to
 * __reserved) and anything short of 104 are EINVAL and written nothing,
 * and so is a __reserved2 that is not 0.
 */
TEST_F(misc, stats_sizes)
{
	const __u32 bad[] = {
		72, 76, 88, 103,
		offsetof(struct kvpool_stats, out_tenant_max_rows),
	};
	unsigned char buf[2 * sizeof(struct kvpool_stats)];
	struct kvpool_stats *s = (void *)buf;
	unsigned int i;
	__u32 size;

	ASSERT_EQ(112, sizeof(struct kvpool_stats));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(buf, 0, sizeof(buf));
		s->size = bad[i];
		s->out_free_pages = 0xdeadbeef;
		EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_STATS, buf))
			TH_LOG("STATS with size %u", bad[i]);
		EXPECT_EQ(0xdeadbeef, s->out_free_pages);
	}
	memset(buf, 0xa5, sizeof(buf));
	size = sizeof(struct kvpool_stats);
	memset(buf, 0, size);
	s->size = size;
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_STATS, buf));
	EXPECT_EQ(self->pool.usable_pages, s->out_free_pages);
	EXPECT_EQ(1, s->out_nr_clients);
	EXPECT_EQ(0, s->out_tenant_max_rows);
	EXPECT_EQ(0, s->out_quarantine_pages);
	EXPECT_EQ(0xa5, buf[size]);
	kt_check_identities(_metadata, &self->pool, s);

	memset(buf, 0xa5, sizeof(buf));
	memset(buf, 0, 104);
	s->size = 104;
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_STATS, buf));
	EXPECT_EQ(self->pool.usable_pages, s->out_free_pages);
	EXPECT_EQ(0, s->out_tenant_max_rows);
	EXPECT_EQ(0xa5, buf[104]) TH_LOG("an ABI 1 caller's struct ends there");

	memset(buf, 0, sizeof(buf));
	s->size = size;
	s->__reserved2 = 1;
	s->out_free_pages = 0xdeadbeef;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_STATS, buf));
	EXPECT_EQ(0xdeadbeef, s->out_free_pages);
}

/* ROW_ALLOC's out_short is an output: what the caller left is ignored. */
TEST_F(misc, row_alloc_out_short_ignored)
{
	struct kvpool_row_alloc a = {
		.size = sizeof(a), .count = 1,
		.entry_len = sizeof(struct kvpool_handle),
		.out_short = 0xdeadbeef,
	};
	struct kvpool_handle h = { 0, 0 };

	a.handles = kt_ptr(&h);
	ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_ROW_ALLOC, &a));
	EXPECT_EQ(0, a.out_short);
	EXPECT_NE(0, h.req_pool_idx);
	EXPECT_NE(0, h.generation);
}

/*
 * VERIFY needs CAP_SYS_ADMIN: a client without it (root that dropped the
 * capability, and nobody through a file root opened) gets EPERM, the
 * struct is not filled, and nothing else of the client changes; the
 * other ops still work for it. Run in forked children (CHILD_CHECK).
 */
static void misc_verify_child(FIXTURE_DATA(misc) *self, bool drop_cap)
{
	struct kvpool_verify v;
	struct kvpool_stats s0, s1;
	struct kvpool_handle h;

	CHILD_CHECK((drop_cap ? kt_drop_sys_admin() : kt_become(KT_NOBODY))
		    == 0);
	CHILD_CHECK(kt_stats(self->fd, &s0) == 0);
	memset(&v, 0, sizeof(v));
	v.size = sizeof(v);
	v.out_violations = v.out_pages_checked = v.out_rows_checked = 0xa5a5;
	CHILD_CHECK(kt_ioctl(self->fd, KVPOOL_VERIFY, &v) == EPERM);
	CHILD_CHECK(v.out_violations == 0xa5a5);
	CHILD_CHECK(v.out_pages_checked == 0xa5a5);
	CHILD_CHECK(v.out_rows_checked == 0xa5a5);
	CHILD_CHECK(kt_ioctl(self->fd, KVPOOL_VERIFY, NULL) == EPERM);
	CHILD_CHECK(kt_stats(self->fd, &s1) == 0);
	CHILD_CHECK(!*kt_stats_diff(&s0, &s1, KT_ST_USAGE));
	CHILD_CHECK(kt_row_alloc(self->fd, 1, &h, NULL) == 0);
	CHILD_CHECK(kt_grow(self->fd, h, 17) == 0);
	CHILD_CHECK(kt_release1(self->fd, h, NULL) == 0);
	_exit(0);
}

TEST_F(misc, verify_eperm)
{
	int i, status;
	pid_t pid;

	for (i = 0; i < 2; i++) {
		pid = kt_pool_fork(_metadata, &self->pool);
		if (pid == 0)
			misc_verify_child(self, i == 0);
		status = kt_pool_wait(&self->pool, pid);
		EXPECT_TRUE(KT_CHILD_OK(status))
			TH_LOG("%s: child status %#x",
			       i == 0 ? "without CAP_SYS_ADMIN" : "as nobody",
			       status);
	}
	/* Root still may. */
	kt_expect_verify(_metadata, &self->pool, self->fd);
}

TEST_HARNESS_MAIN
