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
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvpool_util.h"

#define BIG_PAGES 3

#ifndef offsetofend
#define offsetofend(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))
#endif

FIXTURE(abi) {
	struct kvp_pool pool;
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

	ASSERT_EQ(0, kvp_row_alloc(self->fd, 1, &h, NULL));
	if (tokens)
		ASSERT_EQ(0, kvp_grow(self->fd, h, tokens));
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

/*
 * struct kvpool_stats as its first release had it (up to and including
 * __reserved, 72 bytes); later fields were appended after it. A client
 * built then still passes this size.
 */
struct kvp_stats_v1 {
	__u32 size;
	__u32 flags;
	__u32 out[15];
	__u32 __reserved;
};

static void prep_stats_v1(struct __test_metadata __maybe_unused *_metadata,
			  FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvp_stats_v1 s = { .size = sizeof(s) };

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
		.handles = kvp_ptr(self->handles),
	};

	memcpy(buf, &s, sizeof(s));
}

static void prep_extend(struct __test_metadata __maybe_unused *_metadata,
			FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_extend s = {
		.size = sizeof(s), .count = 1,
		.pages_cap = ARRAY_SIZE(self->pages),
		.entries = kvp_ptr(self->ext), .pages = kvp_ptr(self->pages),
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
		.size = sizeof(s), .count = 1, .entries = kvp_ptr(self->len),
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
		.size = sizeof(s), .count = 1, .entries = kvp_ptr(self->h),
	};

	self->h[0] = abi_row(_metadata, self, 40);
	ASSERT_EQ(0, kvp_commit1(self->fd, self->h[0], 17));
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
		.entries = kvp_ptr(self->donate),
	};

	self->donate[0].handle = abi_row(_metadata, self, 40);
	ASSERT_EQ(0, kvp_commit1(self->fd, self->donate[0].handle, 40));
	self->donate[0].len = 32;
	self->donate[0].__reserved = 0;
	memcpy(buf, &s, sizeof(s));
}

/* SWA_FREE: a row of 3 pages, all committed; the edge frees 2. */
static void prep_swa_free(struct __test_metadata __maybe_unused *_metadata,
			  FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1, .entries = kvp_ptr(self->swa),
	};

	self->swa[0].handle = abi_row(_metadata, self, 40);
	ASSERT_EQ(0, kvp_commit1(self->fd, self->swa[0].handle, 40));
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

	ASSERT_EQ(0, kvp_commit1(self->fd, h, 32));
	ASSERT_EQ(0, kvp_query(self->fd, h, ids, 2, &q));
	ASSERT_EQ(2, q.out_nr_pages);
	ASSERT_EQ(0, kvp_batch(self->fd, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE,
			       &h, 1, &b));
	ASSERT_EQ(0, b.out_nr_pages);
}

static void prep_cache_evict(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_batch s = {
		.size = sizeof(s), .count = 1, .entries = kvp_ptr(self->evict),
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
		.pages = kvp_ptr(self->attach),
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

	ASSERT_EQ(0, kvp_to_slot(self->fd, s.session_id, h, NULL));
	memcpy(buf, &s, sizeof(s));
}

static void prep_row_query(struct __test_metadata __maybe_unused *_metadata,
			   FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_row_query s = {
		.size = sizeof(s), .pages_cap = ARRAY_SIZE(self->pages),
		.pages = kvp_ptr(self->pages),
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
	ASSERT_EQ(0, kvp_create(self->pool.ctl, 0, 8, 1, 2, 8, &s.pool_id));
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

	ASSERT_EQ(0, kvp_to_slot(self->fd, s.session_id, h, NULL));
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
	ASSERT_EQ(0, kvp_ioctl(self->fd, KVPOOL_EXPORT, &x));
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

	ASSERT_EQ(0, kvp_stats(self->fd, &st));
	s.tenant_id = st.out_tenant_id;
	memcpy(buf, &s, sizeof(s));
}

static void prep_tenant_list(struct __test_metadata __maybe_unused *_metadata,
			     FIXTURE_DATA(abi) __maybe_unused *self, void *buf)
{
	struct kvpool_ctl_tenant_list s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.count = ARRAY_SIZE(self->tinfo),
		.tenants = kvp_ptr(self->tinfo),
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

#define OP_KMIN(_name, _cmd, _type, _min, _ksize, _ctl, _roff, _bad, _prep) \
	static const struct abi_op op_##_name = {			\
		.name = #_name, .cmd = _cmd, .size = sizeof(_type),	\
		.min_size = _min, .ksize = _ksize,			\
		.ctl = _ctl, .reserved_off = _roff, .bad_flag = _bad,	\
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
/* STATS grew (export and tenant figures): sizes from 72 bytes are valid. */
OP_MIN(stats, KVPOOL_STATS, struct kvpool_stats, sizeof(struct kvp_stats_v1),
       false, ROFF(struct kvpool_stats), 1, prep_stats);
/* An old caller: the bytes past its struct are ones the kernel knows. */
OP_KMIN(stats_v1, KVPOOL_STATS, struct kvp_stats_v1,
	sizeof(struct kvp_stats_v1), sizeof(struct kvpool_stats), false,
	ROFF(struct kvp_stats_v1), 1, prep_stats_v1);
OP(row_alloc, KVPOOL_ROW_ALLOC, struct kvpool_row_alloc, false,
   -1, 1, prep_row_alloc);
OP(extend, KVPOOL_EXTEND, struct kvpool_extend, false,
   ROFF(struct kvpool_extend), 1, prep_extend);
OP(commit, KVPOOL_COMMIT, struct kvpool_batch, false,
   ROFF(struct kvpool_batch), 1, prep_commit);
OP(trim, KVPOOL_TRIM, struct kvpool_batch, false,
   ROFF(struct kvpool_batch), 1, prep_trim_release);
/* Bit 0 is KVPOOL_RELEASE_DONATE. */
OP(release, KVPOOL_RELEASE, struct kvpool_batch, false,
   ROFF(struct kvpool_batch), KVPOOL_RELEASE_DONATE << 1, prep_trim_release);
OP(to_slot, KVPOOL_TO_SLOT, struct kvpool_slot, false,
   ROFF(struct kvpool_slot), 1, prep_to_slot);
OP(from_slot, KVPOOL_FROM_SLOT, struct kvpool_slot, false,
   ROFF(struct kvpool_slot), 1, prep_slot);
OP(slot_release, KVPOOL_SLOT_RELEASE, struct kvpool_slot, false,
   ROFF(struct kvpool_slot), 1, prep_slot);
/*
 * kvpool_row_query has no __reserved member:
 * session_id, which must be 0 without KVPOOL_QUERY_BY_SLOT, stands in.
 */
OP(row_query, KVPOOL_ROW_QUERY, struct kvpool_row_query, false,
   (int)offsetof(struct kvpool_row_query, session_id), 2, prep_row_query);
OP(verify, KVPOOL_VERIFY, struct kvpool_verify, false,
   ROFF(struct kvpool_verify), 1, prep_verify);
OP(donate, KVPOOL_DONATE, struct kvpool_batch, false,
   ROFF(struct kvpool_batch), 1, prep_donate);
OP(attach_prefix, KVPOOL_ATTACH_PREFIX, struct kvpool_attach, false,
   ROFF(struct kvpool_attach), 1, prep_attach);
OP(cache_evict, KVPOOL_CACHE_EVICT, struct kvpool_batch, false,
   ROFF(struct kvpool_batch), 1, prep_cache_evict);
OP(swa_free, KVPOOL_SWA_FREE, struct kvpool_batch, false,
   ROFF(struct kvpool_batch), 1, prep_swa_free);
OP(ctl_create, KVPOOL_CTL_CREATE, struct kvpool_ctl_create, true,
   ROFF(struct kvpool_ctl_create), 2, prep_ctl_create);
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
/* Bit 0 is KVPOOL_TENANT_BY_ID. */
OP(ctl_tenant_set, KVPOOL_CTL_TENANT_SET, struct kvpool_ctl_tenant, true,
   ROFF(struct kvpool_ctl_tenant), KVPOOL_TENANT_BY_ID << 1,
   prep_tenant_set);
OP(ctl_tenant_set_by_id, KVPOOL_CTL_TENANT_SET, struct kvpool_ctl_tenant,
   true, ROFF(struct kvpool_ctl_tenant), KVPOOL_TENANT_BY_ID << 1,
   prep_tenant_set_id);
/*
 * struct kvpool_ctl_tenant ends in 4 bytes of padding after label (76 to
 * 80): padding must be zero like a reserved field.
 */
OP(ctl_tenant_set_padding, KVPOOL_CTL_TENANT_SET, struct kvpool_ctl_tenant,
   true, (int)offsetofend(struct kvpool_ctl_tenant, label),
   KVPOOL_TENANT_BY_ID << 1, prep_tenant_set);
OP(ctl_tenant_list, KVPOOL_CTL_TENANT_LIST, struct kvpool_ctl_tenant_list,
   true, ROFF(struct kvpool_ctl_tenant_list), 1, prep_tenant_list);
OP(ctl_set_wmark, KVPOOL_CTL_SET_WMARK, struct kvpool_ctl_wmark, true,
   ROFF(struct kvpool_ctl_wmark), 1, prep_set_wmark);

FIXTURE_SETUP(abi)
{
	kvp_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		      512, 16, 64, 1024);
	self->fd = kvp_pool_open(_metadata, &self->pool);
	self->big = mmap(NULL, BIG_PAGES * KVP_PAGE_SIZE,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	ASSERT_NE(MAP_FAILED, self->big);
	self->guard = kvp_map_guarded();
	ASSERT_NE(NULL, self->guard);
}

FIXTURE_TEARDOWN(abi)
{
	int i;

	for (i = 0; i < self->nextra; i++) {
		int ret = kvp_destroy(self->pool.ctl, self->extra[i]);

		EXPECT_TRUE(ret == 0 || ret == ENODEV);
	}
	for (i = 0; i < self->nexp; i++)
		if (self->exp_fds[i] >= 0)
			close(self->exp_fds[i]);
	kvp_pool_fini(_metadata, &self->pool);
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
	return kvp_ioctl(variant->op->ctl ? self->pool.ctl : self->fd,
			 variant->op->cmd, arg);
}

/* Undo what a successful call made that the pool's teardown would not. */
static void abi_after_ok(struct __test_metadata *_metadata,
			 FIXTURE_DATA(abi) *self,
			 const FIXTURE_VARIANT(abi) *variant, void *buf)
{
	if (variant->op->cmd == KVPOOL_CTL_CREATE) {
		__u32 id = ((struct kvpool_ctl_create *)buf)->out_pool_id;

		EXPECT_EQ(0, kvp_destroy(self->pool.ctl, id));
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
};

static void abi_snap(FIXTURE_DATA(abi) *self, struct abi_snap *s)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l), .pool_id = self->pool.id,
		.count = ARRAY_SIZE(s->ti), .tenants = kvp_ptr(s->ti),
	};
	struct kvpool_pressure p = { .size = sizeof(p) };

	memset(s, 0, sizeof(*s));
	kvp_stats(self->fd, &s->st);
	s->pools = kvp_count_pools();
	if (kvp_ioctl(self->pool.ctl, KVPOOL_CTL_TENANT_LIST, &l) == 0)
		s->nr_tenants = l.out_nr_tenants;
	else
		s->nr_tenants = ~0u;
	if (kvp_ioctl(self->fd, KVPOOL_PRESSURE, &p) == 0) {
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
static unsigned char abi_copy[BIG_PAGES * KVP_PAGE_SIZE];

#define EXPECT_UNTOUCHED(buf, len)					\
	EXPECT_EQ(0, memcmp(abi_copy, (buf), (len)))			\
		TH_LOG("%s wrote to the struct on a size error",	\
		       variant->op->name)

#define EXPECT_UNCHANGED(before) do {					\
	struct abi_snap __now;						\
	abi_snap(self, &__now);						\
	EXPECT_STREQ("", kvp_stats_diff(&(before)->st, &__now.st));	\
	EXPECT_EQ((before)->pools, __now.pools);			\
	EXPECT_STREQ("", abi_tenants_diff((before), &__now));		\
	EXPECT_EQ((before)->low_wmark, __now.low_wmark);		\
	EXPECT_EQ((before)->high_wmark, __now.high_wmark);		\
} while (0)

/* The struct exactly as built: accepted, nothing written past it. */
TEST_F(abi, exact_size)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = self->big;
	__u32 i;

	abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
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
	unsigned char *buf = (unsigned char *)kvp_fault_edge(self->guard) -
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
		abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
		abi_set_size(buf, sizes[i]);
		memcpy(abi_copy, buf, KVP_PAGE_SIZE);
		abi_snap(self, &before);
		EXPECT_EQ(EINVAL, abi_call(self, variant, buf))
			TH_LOG("%s with size %u", op->name, sizes[i]);
		EXPECT_UNTOUCHED(buf, KVP_PAGE_SIZE);
		EXPECT_UNCHANGED(&before);
	}
}

/* A newer, longer struct whose unknown tail is zero: accepted as is. */
TEST_F(abi, zero_tail)
{
	const struct abi_op *op = variant->op;
	unsigned char *buf = self->big;
	__u32 i;

	abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
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
		abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
		abi_set_size(buf, cases[i].size);
		buf[cases[i].pos] = 0x80;
		memcpy(abi_copy, buf, KVP_PAGE_SIZE);
		abi_snap(self, &before);
		EXPECT_EQ(E2BIG, abi_call(self, variant, buf))
			TH_LOG("%s size %u, byte %u set", op->name,
			       cases[i].size, cases[i].pos);
		EXPECT_UNTOUCHED(buf, KVP_PAGE_SIZE);
		EXPECT_UNCHANGED(&before);
	}
}

/* PAGE_SIZE is the largest size accepted. */
TEST_F(abi, page_size)
{
	unsigned char *buf = self->big;
	struct abi_snap before;

	abi_prep(_metadata, self, variant, buf, 2 * KVP_PAGE_SIZE);
	abi_set_size(buf, KVP_PAGE_SIZE);
	ASSERT_EQ(0, abi_call(self, variant, buf));
	abi_after_ok(_metadata, self, variant, buf);

	abi_prep(_metadata, self, variant, buf, 2 * KVP_PAGE_SIZE);
	abi_set_size(buf, KVP_PAGE_SIZE);
	buf[KVP_PAGE_SIZE - 1] = 1;
	abi_snap(self, &before);
	EXPECT_EQ(E2BIG, abi_call(self, variant, buf));
	EXPECT_UNCHANGED(&before);
}

/* Above PAGE_SIZE: E2BIG even with a zero tail, without reading it. */
TEST_F(abi, above_page_size)
{
	const __u32 sizes[] = {
		KVP_PAGE_SIZE + 1, 2 * KVP_PAGE_SIZE, 1u << 16, 1u << 31, ~0u,
	};
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		abi_prep(_metadata, self, variant, buf,
			 BIG_PAGES * KVP_PAGE_SIZE);
		abi_set_size(buf, sizes[i]);
		memcpy(abi_copy, buf, BIG_PAGES * KVP_PAGE_SIZE);
		abi_snap(self, &before);
		EXPECT_EQ(E2BIG, abi_call(self, variant, buf))
			TH_LOG("%s with size %u", variant->op->name, sizes[i]);
		EXPECT_UNTOUCHED(buf, BIG_PAGES * KVP_PAGE_SIZE);
		EXPECT_UNCHANGED(&before);
	}
}

TEST_F(abi, efault_struct)
{
	void *const bad[] = {
		NULL, (void *)1, kvp_fault_edge(self->guard),
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
	unsigned char *buf = (unsigned char *)kvp_fault_edge(self->guard) -
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
		abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
		abi_set_flags(buf, flags[i]);
		abi_snap(self, &before);
		EXPECT_EQ(EOPNOTSUPP, abi_call(self, variant, buf))
			TH_LOG("%s with flags %#x", variant->op->name, flags[i]);
		EXPECT_UNCHANGED(&before);
	}
}

TEST_F(abi, reserved_nonzero)
{
	const __u32 vals[] = { 1, 0x80000000u, ~0u };
	unsigned char *buf = self->big;
	struct abi_snap before;
	unsigned int i;

	if (variant->op->reserved_off < 0) {
		/*
		 * ROW_ALLOC has no must-be-zero field. Its one word that is
		 * not an input, out_short, must then be ignored on the way in
		 * and written on the way out.
		 */
		const __u32 junk = 0xdeadbeef;
		size_t off = offsetof(struct kvpool_row_alloc, out_short);

		ASSERT_EQ(KVPOOL_ROW_ALLOC, variant->op->cmd);
		abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
		memcpy(buf + off, &junk, 4);
		EXPECT_EQ(0, abi_call(self, variant, buf));
		EXPECT_EQ(0, ((struct kvpool_row_alloc *)buf)->out_short);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
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

	abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
	abi_set_size(buf, op->min_size - 4);
	abi_set_flags(buf, 1u << 31);
	EXPECT_EQ(EINVAL, abi_call(self, variant, buf));

	abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
	abi_set_size(buf, op->ksize + 8);
	buf[op->ksize + 3] = 1;
	abi_set_flags(buf, 1u << 31);
	EXPECT_EQ(E2BIG, abi_call(self, variant, buf));

	abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
	abi_set_size(buf, KVP_PAGE_SIZE + 4);
	abi_set_flags(buf, 1u << 31);
	EXPECT_EQ(E2BIG, abi_call(self, variant, buf));

	if (op->reserved_off >= 0) {
		abi_prep(_metadata, self, variant, buf, KVP_PAGE_SIZE);
		abi_set_flags(buf, 1u << 31);
		memcpy(buf + op->reserved_off, &one, 4);
		EXPECT_EQ(EOPNOTSUPP, abi_call(self, variant, buf));
	}
}

/* ------------------------------------------------------------------------ */

FIXTURE(info) {
	struct kvp_pool pool;
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
	kvp_pool_init(_metadata, &self->pool, variant->flags, variant->nr_pages,
		      variant->page_tokens, variant->nr_rows,
		      variant->row_tokens);
	self->fd = kvp_pool_open(_metadata, &self->pool);
}

FIXTURE_TEARDOWN(info)
{
	kvp_pool_fini(_metadata, &self->pool);
}

TEST_F(info, geometry)
{
	struct kvpool_info i;

	ASSERT_EQ(0, kvp_info(self->fd, &i));
	EXPECT_EQ(sizeof(i), i.size);
	EXPECT_EQ(0, i.flags);
	EXPECT_EQ(KVPOOL_ABI_VERSION, i.out_abi_version);
	EXPECT_EQ(1, i.out_abi_version);
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
 * cache, sliding-window free, export/import, quotas and pressure; no
 * undefined bit.
 */
TEST_F(info, features)
{
	const __u64 want = KVPOOL_FEAT_ROWS | KVPOOL_FEAT_EXTEND |
			   KVPOOL_FEAT_SLOTS | KVPOOL_FEAT_VERIFY |
			   KVPOOL_FEAT_PREFIX_CACHE | KVPOOL_FEAT_SWA |
			   KVPOOL_FEAT_EXPORT | KVPOOL_FEAT_QUOTA |
			   KVPOOL_FEAT_PRESSURE;
	struct kvpool_info i;

	ASSERT_EQ(0, kvp_info(self->fd, &i));
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

	ASSERT_EQ(0, kvp_info(self->fd, &i));
	memset(&j, 0xff, sizeof(j));
	j.size = sizeof(j);
	j.flags = 0;
	j.__reserved = 0;
	ASSERT_EQ(0, kvp_ioctl(self->fd, KVPOOL_INFO, &j));
	EXPECT_EQ(0, memcmp(&i, &j, sizeof(i)));
}

/* The result cannot be copied out: EFAULT. */
TEST_F(info, readonly_struct_efault)
{
	struct kvpool_info *ro;
	struct kvpool_stats *sro;

	ro = mmap(NULL, KVP_PAGE_SIZE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->size = sizeof(*ro);
	sro = (struct kvpool_stats *)(ro + 1);
	sro->size = sizeof(*sro);
	ASSERT_EQ(0, mprotect(ro, KVP_PAGE_SIZE, PROT_READ));
	EXPECT_EQ(EFAULT, kvp_ioctl(self->fd, KVPOOL_INFO, ro));
	EXPECT_EQ(EFAULT, kvp_ioctl(self->fd, KVPOOL_STATS, sro));
	munmap(ro, KVP_PAGE_SIZE);
}

TEST_F(info, client_ids)
{
	struct kvpool_info a, a2, b, d;
	__u64 v = 0;
	int fd2, fdd;

	fd2 = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kvp_info(self->fd, &a));
	ASSERT_EQ(0, kvp_info(self->fd, &a2));
	ASSERT_EQ(0, kvp_info(fd2, &b));
	EXPECT_EQ(a.out_client_id, a2.out_client_id);
	EXPECT_NE(a.out_client_id, b.out_client_id);

	/* dup() is the same open file: the same client. */
	fdd = dup(self->fd);
	ASSERT_LE(0, fdd);
	ASSERT_EQ(0, kvp_info(fdd, &d));
	EXPECT_EQ(a.out_client_id, d.out_client_id);
	ASSERT_EQ(0, kvp_fdinfo_u64(fdd, "kvpool-client-id", &v));
	EXPECT_EQ(a.out_client_id, v);
	close(fdd);
}

TEST_F(info, stats_initial)
{
	bool rz = variant->flags & KVPOOL_CREATE_RESERVE_ZERO;
	struct kvpool_stats s;
	int fd2, fd3;

	ASSERT_EQ(0, kvp_stats(self->fd, &s));
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
	kvp_check_identities(_metadata, &self->pool, &s);

	fd2 = kvp_pool_open(_metadata, &self->pool);
	fd3 = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kvp_stats(self->fd, &s));
	EXPECT_EQ(3, s.out_nr_clients);
	kvp_pool_close(&self->pool, fd2);
	ASSERT_EQ(0, kvp_stats(fd3, &s));
	EXPECT_EQ(2, s.out_nr_clients);
}

/* Pool figures are shared; out_client_* are the caller's own. */
TEST_F(info, stats_client_view)
{
	const __u32 pt = variant->page_tokens;
	struct kvpool_handle h[3];
	struct kvpool_stats a, b;
	__u32 rz = !!(variant->flags & KVPOOL_CREATE_RESERVE_ZERO);
	__u32 p0 = kvp_div_up(5 * pt, pt), p1 = kvp_div_up(3 * pt + 1, pt);
	__u32 p2 = kvp_div_up(7, pt);
	int fd2;

	fd2 = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kvp_row_alloc(self->fd, 3, h, NULL));
	ASSERT_EQ(0, kvp_grow(self->fd, h[0], 5 * pt));
	ASSERT_EQ(0, kvp_grow(self->fd, h[1], 3 * pt + 1));
	ASSERT_EQ(0, kvp_grow(self->fd, h[2], 7));
	ASSERT_EQ(0, kvp_to_slot(self->fd, 77, h[2], NULL));

	ASSERT_EQ(0, kvp_stats(self->fd, &a));
	ASSERT_EQ(0, kvp_stats(fd2, &b));
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
	kvp_check_identities(_metadata, &self->pool, &a);

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
	kvp_expect_verify(_metadata, &self->pool, self->fd);
}

TEST_F(info, verify_loaded)
{
	struct kvpool_handle h[4];
	int i;

	ASSERT_EQ(0, kvp_row_alloc(self->fd, 4, h, NULL));
	/* 50 tokens in all: fits the smallest variant (63 pages at pt 1). */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kvp_grow(self->fd, h[i], (i + 1) * 5));
	ASSERT_EQ(0, kvp_commit1(self->fd, h[1], 5));
	ASSERT_EQ(0, kvp_trim1(self->fd, h[1], NULL));
	ASSERT_EQ(0, kvp_to_slot(self->fd, 5, h[3], NULL));
	ASSERT_EQ(0, kvp_release1(self->fd, h[0], NULL));
	kvp_expect_verify(_metadata, &self->pool, self->fd);
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

		EXPECT_EQ(0, kvp_fdinfo_u64(fd, keys[i], &v))
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

	ASSERT_EQ(0, kvp_info(self->fd, &inf));
	/* The generic lines come first. */
	ASSERT_EQ(0, kvp_fdinfo_u64(self->fd, "pos", &v));
	expect_fdinfo(_metadata, self->fd, self->pool.id, inf.out_client_id,
		      0, 0, 0);

	ASSERT_EQ(0, kvp_row_alloc(self->fd, 3, h, NULL));
	ASSERT_EQ(0, kvp_grow(self->fd, h[0], 2 * pt + 1));
	ASSERT_EQ(0, kvp_grow(self->fd, h[1], 1));
	ASSERT_EQ(0, kvp_to_slot(self->fd, 9, h[1], NULL));
	ASSERT_EQ(0, kvp_stats(self->fd, &st));
	EXPECT_EQ(4, st.out_client_pages);
	expect_fdinfo(_metadata, self->fd, self->pool.id, inf.out_client_id,
		      st.out_client_rows, st.out_client_slots,
		      st.out_client_pages);
	EXPECT_EQ(2, st.out_client_rows);
	EXPECT_EQ(1, st.out_client_slots);

	/* Another client: its own id and nothing held. */
	fd2 = kvp_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kvp_info(fd2, &inf2));
	expect_fdinfo(_metadata, fd2, self->pool.id, inf2.out_client_id,
		      0, 0, 0);

	ASSERT_EQ(0, kvp_release1(self->fd, h[0], NULL));
	ASSERT_EQ(0, kvp_slot_release(self->fd, 9, NULL));
	expect_fdinfo(_metadata, self->fd, self->pool.id, inf.out_client_id,
		      1, 0, 0);
}

static void expect_sysfs_one(struct __test_metadata *_metadata, __u32 id,
			     const char *name, __u32 want)
{
	__u64 v = ~0ull;

	EXPECT_EQ(0, kvp_sysfs_u64(id, name, &v)) TH_LOG("sysfs %s", name);
	EXPECT_EQ(want, v) TH_LOG("sysfs %s", name);
}

static void expect_sysfs(struct __test_metadata *_metadata,
			 struct kvp_pool *p, int fd)
{
	struct kvpool_stats s;
	struct kvpool_info i;

	ASSERT_EQ(0, kvp_info(fd, &i));
	ASSERT_EQ(0, kvp_stats(fd, &s));
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
	ASSERT_EQ(0, kvp_row_alloc(self->fd, 2, h, NULL));
	ASSERT_EQ(0, kvp_grow(self->fd, h[0], 3 * variant->page_tokens));
	ASSERT_EQ(0, kvp_grow(self->fd, h[1], 1));
	ASSERT_EQ(0, kvp_to_slot(self->fd, 1, h[1], NULL));
	fd2 = kvp_pool_open(_metadata, &self->pool);
	expect_sysfs(_metadata, &self->pool, fd2);
	kvp_pool_close(&self->pool, fd2);
	expect_sysfs(_metadata, &self->pool, self->fd);
}

/* Read-only files: writing them fails (mode 0444 or no store op). */
TEST_F(info, sysfs_read_only)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), KVP_SYSFS_FMT, self->pool.id,
		 "free_pages");
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0, st.st_mode & 0222);
}

TEST_F(info, enotty)
{
	const unsigned long cmds[] = {
		_IO(KVPOOL_TYPE, 0x7f),
		/* 0x8c..0x92 are real ops; 0x93..0x9f are not (yet). */
		_IO(KVPOOL_TYPE, KVPOOL_CMD_PRESSURE + 1),
		_IO(KVPOOL_TYPE, 0x93),
		_IO(KVPOOL_TYPE, 0x9e),
		_IO(KVPOOL_TYPE, 0x9f),
		/* Control ops are not pool ops. */
		_IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_CREATE),
		_IO(KVPOOL_TYPE, KVPOOL_CMD_CTL_SET_WMARK),
		_IO(KVPOOL_TYPE, 0xa2),
		_IO(KVPOOL_TYPE, 0xff),
		_IO(KVPOOL_TYPE, 0x00),
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

	ASSERT_EQ(0, kvp_stats(self->fd, &before));
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		memset(buf, 0, sizeof(buf));
		*(__u32 *)buf = 64;
		EXPECT_EQ(ENOTTY, kvp_ioctl(self->fd, cmds[i], buf))
			TH_LOG("cmd %#lx", cmds[i]);
	}
	ASSERT_EQ(0, kvp_stats(self->fd, &after));
	EXPECT_STREQ("", kvp_stats_diff(&before, &after));
}

TEST_HARNESS_MAIN
