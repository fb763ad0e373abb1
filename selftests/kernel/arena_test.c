// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the arena (KVPOOL_FEAT_ARENA), the memory page ids name.
 *
 * KVPOOL_CTL_ARENA_SET gives a pool its memory once: host chunks are
 * memfds sealed against shrinking and growing, laid end to end, covering
 * the pool. KVPOOL_ARENA reports it and hands out new O_CLOEXEC
 * descriptors of the chunks' files, which every client maps. Checked here:
 * every refusal (its errno, the chunk it names, and that the pool still
 * has no arena), that the descriptors are the chunks' own files, and that
 * the bytes are shared: a row written by one process, exported, reads the
 * same in the importer; a donated page reads the same when attached; the
 * arena outlives the process that made it and a SIGKILLed writer; and
 * destroying the pool gives the memory back.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <sys/resource.h>
#include <sys/socket.h>

#define NR_PAGES	65	/* page 0 reserved: 64 usable */
#define PT		16
#define NR_ROWS		9
#define ROW_TOKENS	1024
#define PB		4096u	/* page_bytes */
#define POOL_BYTES	((__u64)NR_PAGES * PB)

FIXTURE(arena) {
	struct kt_pool pool;
	int fd;
	int mfd[4];
};

FIXTURE_SETUP(arena)
{
	int i;

	for (i = 0; i < 4; i++)
		self->mfd[i] = -1;
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     NR_PAGES, PT, NR_ROWS, ROW_TOKENS);
	self->fd = kt_pool_open(_metadata, &self->pool);
}

FIXTURE_TEARDOWN(arena)
{
	int i;

	for (i = 0; i < 4; i++)
		if (self->mfd[i] >= 0)
			close(self->mfd[i]);
	kt_pool_fini(_metadata, &self->pool);
}

/* The fixture's pool has no arena: what every refusal must leave. */
static __u32 arena_kind(int fd)
{
	struct kvpool_arena a;

	return kt_arena_info(fd, &a) ? ~0u : a.out_kind;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Without an arena: NONE, and no descriptors to be had. */
TEST_F(arena, none)
{
	struct kvpool_arena_fd f[1];
	struct kvpool_arena a;
	struct kvpool_info i;

	ASSERT_EQ(0, kt_info(self->fd, &i));
	/* The arena came with ABI 2. */
	EXPECT_LE(2, i.out_abi_version);
	EXPECT_TRUE(i.out_features & KVPOOL_FEAT_ARENA);
	memset(&a, 0xa5, sizeof(a));
	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ(KVPOOL_ARENA_NONE, a.out_kind);
	EXPECT_EQ(0, a.out_nr_chunks);
	EXPECT_EQ(0, a.out_page_bytes);
	EXPECT_EQ(0, a.out_bytes);
	EXPECT_EQ(ENODATA, kt_arena_fds(self->fd, 0, 1, f, &a));
	EXPECT_EQ(KVPOOL_ARENA_NONE, a.out_kind);
	/* sysfs says the same without a client: no arena, no bytes. */
	EXPECT_EQ(0, kt_sysfs_val(self->pool.id, "arena_bytes"));
	EXPECT_EQ(0, kt_sysfs_val(self->pool.id, "arena_page_bytes"));
}

/*
 * Two chunks; the caller closes its memfds, and the descriptors ARENA
 * gives are of the same files (same inode), O_CLOEXEC, at the right
 * offsets; writes through one mapping are seen through the other.
 */
TEST_F(arena, set_and_fds)
{
	struct kvpool_arena_chunk ch[2] = {
		{ .fd = -1, .bytes = 32 * PB },
		{ .fd = -1, .bytes = 33 * PB },
	};
	struct kvpool_arena_fd f[2];
	struct kvpool_arena a;
	__u32 err = 0;
	char *m0, *m1;
	int i;

	for (i = 0; i < 2; i++) {
		self->mfd[i] = kt_host_memfd(ch[i].bytes);
		ASSERT_LE(0, self->mfd[i]);
		ch[i].fd = self->mfd[i];
	}
	ASSERT_EQ(0, kt_arena_set(self->pool.ctl, self->pool.id,
				  KVPOOL_ARENA_HOST, PB, ch, 2, &err));
	EXPECT_EQ(KT_ERR_NONE, err);
	m0 = mmap(NULL, ch[0].bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		  self->mfd[0], 0);
	ASSERT_NE(MAP_FAILED, m0);

	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ(KVPOOL_ARENA_HOST, a.out_kind);
	EXPECT_EQ(2, a.out_nr_chunks);
	EXPECT_EQ(PB, a.out_page_bytes);
	EXPECT_EQ(POOL_BYTES, a.out_bytes);
	EXPECT_EQ(PB, kt_sysfs_val(self->pool.id, "arena_page_bytes"));
	EXPECT_EQ(POOL_BYTES, kt_sysfs_val(self->pool.id, "arena_bytes"));

	memset(f, 0xa5, sizeof(f));
	ASSERT_EQ(0, kt_arena_fds(self->fd, 0, 2, f, &a));
	EXPECT_EQ(KVPOOL_ARENA_HOST, a.out_kind);
	for (i = 0; i < 2; i++) {
		int fl = fcntl(f[i].out_fd, F_GETFD);

		ASSERT_LE(0, f[i].out_fd);
		EXPECT_TRUE(fl >= 0 && (fl & FD_CLOEXEC)) TH_LOG("flags %#x", fl);
		EXPECT_TRUE(same_file(f[i].out_fd, self->mfd[i]));
		EXPECT_EQ(0, f[i].__reserved);
		EXPECT_EQ(ch[i].bytes, f[i].out_bytes);
	}
	EXPECT_EQ(0, f[0].out_offset);
	EXPECT_EQ(32 * PB, f[1].out_offset);
	/* No client can seal the others out of writing. */
	EXPECT_EQ(-1, fcntl(f[0].out_fd, F_ADD_SEALS, F_SEAL_WRITE));
	EXPECT_EQ(EPERM, errno);

	/* The kernel's reference keeps the memory: drop ours. */
	close(self->mfd[0]);
	close(self->mfd[1]);
	self->mfd[0] = self->mfd[1] = -1;
	m1 = mmap(NULL, f[0].out_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		  f[0].out_fd, 0);
	ASSERT_NE(MAP_FAILED, m1);
	close(f[0].out_fd);
	close(f[1].out_fd);
	memcpy(m1 + 5 * PB, "page five", 10);
	EXPECT_STREQ("page five", m0 + 5 * PB);
	munmap(m0, ch[0].bytes);
	munmap(m1, f[0].out_bytes);

	/* One chunk at a time, from the second. */
	ASSERT_EQ(0, kt_arena_fds(self->fd, 1, 1, f, &a));
	EXPECT_EQ(32 * PB, f[0].out_offset);
	EXPECT_EQ(33 * PB, f[0].out_bytes);
	close(f[0].out_fd);
	/* Once only. */
	self->mfd[0] = kt_host_memfd(POOL_BYTES);
	ASSERT_LE(0, self->mfd[0]);
	ch[0].fd = self->mfd[0];
	ch[0].bytes = POOL_BYTES;
	EXPECT_EQ(EEXIST, kt_arena_set(self->pool.ctl, self->pool.id,
				       KVPOOL_ARENA_HOST, PB, ch, 1, NULL));
	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ(2, a.out_nr_chunks);
}

/* An arena may end in a few pages no id names (the last chunk's rounding). */
TEST_F(arena, longer_than_pool)
{
	struct kvpool_arena_chunk ch = { .bytes = POOL_BYTES + 3 * PB };
	struct kvpool_arena a;

	self->mfd[0] = kt_host_memfd(ch.bytes);
	ASSERT_LE(0, self->mfd[0]);
	ch.fd = self->mfd[0];
	ASSERT_EQ(0, kt_arena_set(self->pool.ctl, self->pool.id,
				  KVPOOL_ARENA_HOST, PB, &ch, 1, NULL));
	ASSERT_EQ(0, kt_arena_info(self->fd, &a));
	EXPECT_EQ(POOL_BYTES + 3 * PB, a.out_bytes);
}

struct bad_set {
	const char *what;
	int err;
	__u32 index;		/* out_error_index wanted (EFAULT: as passed) */
};

/* Every refusal: its errno and chunk, and no arena afterwards. */
static void expect_refused(struct __test_metadata *_metadata,
			   FIXTURE_DATA(arena) *self,
			   const struct kvpool_ctl_arena_set *s,
			   const struct bad_set *want)
{
	struct kvpool_ctl_arena_set c = *s;

	c.out_error_index = 0xdeadbeef;
	EXPECT_EQ(want->err, kt_ioctl(self->pool.ctl, KVPOOL_CTL_ARENA_SET, &c))
		TH_LOG("%s", want->what);
	/* EFAULT is the one error after which the struct is not written. */
	EXPECT_EQ(want->index, c.out_error_index) TH_LOG("%s", want->what);
	EXPECT_EQ(KVPOOL_ARENA_NONE, arena_kind(self->fd)) TH_LOG("%s",
								 want->what);
}

/* A struct that would succeed, over @ch[0..n). */
static struct kvpool_ctl_arena_set good_set(FIXTURE_DATA(arena) *self,
					    struct kvpool_arena_chunk *ch,
					    __u32 n)
{
	struct kvpool_ctl_arena_set s = {
		.size = sizeof(s), .pool_id = self->pool.id,
		.kind = KVPOOL_ARENA_HOST, .page_bytes = PB, .nr_chunks = n,
		.chunk_entry_len = sizeof(*ch), .chunks = kt_ptr(ch),
	};

	return s;
}

TEST_F(arena, bad_struct)
{
	struct kvpool_arena_chunk ch[2] = { { .bytes = POOL_BYTES } };
	unsigned char wide[2][32];
	struct kvpool_ctl_arena_set s;

	self->mfd[0] = kt_host_memfd(POOL_BYTES);
	ASSERT_LE(0, self->mfd[0]);
	ch[0].fd = self->mfd[0];

	s = good_set(self, ch, 1);
	s.kind = KVPOOL_ARENA_NONE;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "kind 0", EINVAL, KT_ERR_NONE });
	s.kind = KVPOOL_ARENA_CUDA + 1;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "kind 3", EOPNOTSUPP, KT_ERR_NONE });
	s = good_set(self, ch, 1);
	s.page_bytes = 0;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "page_bytes 0", EINVAL, KT_ERR_NONE });
	s.page_bytes = (1ULL << 32) + 1;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "page_bytes 2^32+1", EINVAL,
					  KT_ERR_NONE });
	s = good_set(self, ch, 0);
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "no chunks", EINVAL, KT_ERR_NONE });
	s = good_set(self, ch, KVPOOL_ARENA_MAX_CHUNKS + 1);
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "257 chunks", EINVAL, KT_ERR_NONE });
	s = good_set(self, ch, 1);
	s.chunk_entry_len = sizeof(ch[0]) - 4;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "short entry", EINVAL, KT_ERR_NONE });
	s.chunk_entry_len = KT_PAGE_SIZE + 1;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "entry > page", E2BIG, KT_ERR_NONE });
	/* A longer element: a zero tail is fine, a non-zero one E2BIG. */
	memset(wide, 0, sizeof(wide));
	memcpy(wide[0], &ch[0], sizeof(ch[0]));
	wide[0][20] = 1;
	s = good_set(self, ch, 1);
	s.chunk_entry_len = sizeof(wide[0]);
	s.chunks = kt_ptr(wide);
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "element tail", E2BIG, 0 });
	s.chunks = 8;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "bad chunks pointer", EFAULT,
					  0xdeadbeef });
	s = good_set(self, ch, 1);
	s.pool_id = 63;
	if (s.pool_id == self->pool.id)
		s.pool_id = 62;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "no such pool", ENODEV, KT_ERR_NONE });
	s.pool_id = ~0u;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "pool ~0", ENODEV, KT_ERR_NONE });

	/* The wide element with a zero tail is the same as the exact one. */
	wide[0][20] = 0;
	s = good_set(self, ch, 1);
	s.chunk_entry_len = sizeof(wide[0]);
	s.chunks = kt_ptr(wide);
	EXPECT_EQ(0, kt_ioctl(self->pool.ctl, KVPOOL_CTL_ARENA_SET, &s));
	EXPECT_EQ(KVPOOL_ARENA_HOST, arena_kind(self->fd));
}

TEST_F(arena, bad_chunks)
{
	struct kvpool_arena_chunk ch[3];
	struct kvpool_ctl_arena_set s;
	int good, sealed_w, unsealed, short_fd, ro, regular, pfd[2];
	char path[64];

	good = self->mfd[0] = kt_host_memfd(POOL_BYTES);
	ASSERT_LE(0, good);
	short_fd = self->mfd[1] = kt_host_memfd(POOL_BYTES - PB);
	ASSERT_LE(0, short_fd);
	unsealed = self->mfd[2] = memfd_create("unsealed", MFD_CLOEXEC |
					       MFD_ALLOW_SEALING);
	ASSERT_LE(0, unsealed);
	ASSERT_EQ(0, ftruncate(unsealed, POOL_BYTES));
	sealed_w = self->mfd[3] = memfd_create("sealed-w", MFD_CLOEXEC |
					       MFD_ALLOW_SEALING);
	ASSERT_LE(0, sealed_w);
	ASSERT_EQ(0, ftruncate(sealed_w, POOL_BYTES));
	ASSERT_EQ(0, fcntl(sealed_w, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
			   F_SEAL_WRITE | F_SEAL_SEAL));

	memset(ch, 0, sizeof(ch));
	ch[0].fd = good;
	ch[0].bytes = POOL_BYTES;
	s = good_set(self, ch, 1);

	ch[0].__reserved = 1;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "chunk reserved", EINVAL, 0 });
	ch[0].__reserved = 0;
	ch[0].bytes = 0;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "chunk of 0", EINVAL, 0 });
	/* 3 KiB pages: 65 of them are not a whole number of CPU pages. */
	s.page_bytes = 3072;
	ch[0].bytes = NR_PAGES * 3072;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "not PAGE_SIZE aligned", EINVAL, 0 });
	s.page_bytes = 2 * PB;
	ch[0].bytes = POOL_BYTES;	/* 32.5 pages of 8 KiB */
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "not whole pages", EINVAL, 0 });
	s.page_bytes = PB;
	ch[0].bytes = POOL_BYTES - PB;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "short of the pool", EINVAL,
					  KT_ERR_NONE });
	/* A second chunk wholly past the pool's pages. */
	ch[0].bytes = POOL_BYTES;
	ch[1].fd = good;
	ch[1].bytes = PB;
	s = good_set(self, ch, 2);
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "chunk past the pool", EINVAL, 1 });
	/* Sizes overflow: caught, not wrapped. */
	ch[0].bytes = 32 * PB;
	ch[1].bytes = ~0ULL - PB + 1;
	ch[2].fd = good;
	ch[2].bytes = 64 * PB;
	s = good_set(self, ch, 3);
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "overflowing sizes", EINVAL, 1 });

	/* The files: each refusal names its chunk, the first one good. */
	ch[0].fd = good;
	ch[0].bytes = 32 * PB;
	ch[1].bytes = 33 * PB;
	s = good_set(self, ch, 2);
	ch[1].fd = -1;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "fd -1", EBADF, 1 });
	ch[1].fd = 1000;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "fd not open", EBADF, 1 });
	ch[1].fd = unsealed;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "no seals", EINVAL, 1 });
	ASSERT_EQ(0, fcntl(unsealed, F_ADD_SEALS, F_SEAL_SHRINK));
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "no F_SEAL_GROW", EINVAL, 1 });
	ASSERT_EQ(0, fcntl(unsealed, F_ADD_SEALS, F_SEAL_GROW));
	/* Still open to F_SEAL_WRITE from any client: refused. */
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "no F_SEAL_SEAL", EINVAL, 1 });
	ch[1].fd = sealed_w;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "F_SEAL_WRITE", EINVAL, 1 });
	ch[0].fd = short_fd;
	ch[0].bytes = POOL_BYTES;
	s = good_set(self, ch, 1);
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "memfd shorter than its chunk",
					  EINVAL, 0 });
	snprintf(path, sizeof(path), "/proc/self/fd/%d", good);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	ch[0].fd = ro;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "read-only memfd", EINVAL, 0 });
	close(ro);
	ASSERT_EQ(0, pipe2(pfd, O_CLOEXEC));
	ch[0].fd = pfd[0];
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "a pipe", EINVAL, 0 });
	close(pfd[0]);
	close(pfd[1]);
	ch[0].fd = self->fd;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "the pool itself", EINVAL, 0 });
	ch[0].fd = self->pool.ctl;
	expect_refused(_metadata, self, &s,
		       &(struct bad_set){ "the control device", EINVAL, 0 });
	regular = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (regular >= 0) {
		/* tmpfs, but not a memfd: it cannot be sealed. */
		ASSERT_EQ(0, ftruncate(regular, POOL_BYTES));
		ch[0].fd = regular;
		expect_refused(_metadata, self, &s,
			       &(struct bad_set){ "a tmpfs file", EINVAL, 0 });
		close(regular);
	}

	/* And after all that, the good one is taken. */
	ch[0].fd = good;
	EXPECT_EQ(0, kt_ioctl(self->pool.ctl, KVPOOL_CTL_ARENA_SET, &s));
	EXPECT_EQ(KVPOOL_ARENA_HOST, arena_kind(self->fd));
}

/* ARENA's own refusals, and no descriptor left behind by any. */
TEST_F(arena, bad_fds)
{
	struct kvpool_arena_chunk ch[2] = {
		{ .bytes = 32 * PB }, { .bytes = 33 * PB },
	};
	struct kvpool_arena_fd f[3];
	struct kvpool_arena a;
	struct rlimit rl, low;
	int before;

	self->mfd[0] = kt_host_memfd(ch[0].bytes);
	self->mfd[1] = kt_host_memfd(ch[1].bytes);
	ASSERT_LE(0, self->mfd[0]);
	ASSERT_LE(0, self->mfd[1]);
	ch[0].fd = self->mfd[0];
	ch[1].fd = self->mfd[1];
	ASSERT_EQ(0, kt_arena_set(self->pool.ctl, self->pool.id,
				  KVPOOL_ARENA_HOST, PB, ch, 2, NULL));
	before = kt_count_fds();
	ASSERT_LT(0, before);

	EXPECT_EQ(EINVAL, kt_arena_fds(self->fd, 0, 0, f, &a));
	EXPECT_EQ(EINVAL, kt_arena_fds(self->fd, 2, 1, f, &a));
	EXPECT_EQ(EINVAL, kt_arena_fds(self->fd, 1, 2, f, &a));
	EXPECT_EQ(EINVAL, kt_arena_fds(self->fd, 0, 3, f, &a));
	EXPECT_EQ(EINVAL, kt_arena_fds(self->fd, ~0u, 2, f, &a));
	/* Without KVPOOL_ARENA_FDS the array fields must be 0. */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.count = 1;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	a.count = 0;
	a.fds = kt_ptr(f);
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	a.fds = 0;
	a.fd_entry_len = sizeof(f[0]);
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	a.fd_entry_len = 0;
	a.first_chunk = 1;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	/* Element lengths. */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.flags = KVPOOL_ARENA_FDS;
	a.count = 1;
	a.fds = kt_ptr(f);
	a.fd_entry_len = sizeof(f[0]) - 8;
	EXPECT_EQ(EINVAL, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	a.fd_entry_len = KT_PAGE_SIZE + 8;
	EXPECT_EQ(E2BIG, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	/* A bad array: EFAULT, and no descriptor made. */
	a.fd_entry_len = sizeof(f[0]);
	a.fds = 8;
	EXPECT_EQ(EFAULT, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
	EXPECT_EQ(before, kt_count_fds());
	/* Too few free descriptors for both: EMFILE, and none made. */
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	low = rl;
	low.rlim_cur = before + 1;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	EXPECT_EQ(EMFILE, kt_arena_fds(self->fd, 0, 2, f, &a));
	EXPECT_EQ(before, kt_count_fds());
	/* One fits. */
	EXPECT_EQ(0, kt_arena_fds(self->fd, 0, 1, f, &a));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	EXPECT_EQ(before + 1, kt_count_fds());
	close(f[0].out_fd);
	/* A longer element: the kernel zeroes what it does not know. */
	{
		unsigned char wide[2][40];

		memset(wide, 0xa5, sizeof(wide));
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.flags = KVPOOL_ARENA_FDS;
		a.count = 2;
		a.fds = kt_ptr(wide);
		a.fd_entry_len = sizeof(wide[0]);
		ASSERT_EQ(0, kt_ioctl(self->fd, KVPOOL_ARENA, &a));
		memcpy(f, wide[1], sizeof(f[0]));
		EXPECT_EQ(32 * PB, f[0].out_offset);
		EXPECT_EQ(0, wide[1][sizeof(f[0])]);
		EXPECT_EQ(0, wide[1][39]);
		close(f[0].out_fd);
		memcpy(f, wide[0], sizeof(f[0]));
		close(f[0].out_fd);
	}
	EXPECT_EQ(before, kt_count_fds());
}

/* An unprivileged caller may read the arena but not set one. */
TEST_F(arena, eperm)
{
	struct kvpool_arena_chunk ch = { .bytes = POOL_BYTES };
	pid_t pid;
	int status;

	self->mfd[0] = kt_host_memfd(POOL_BYTES);
	ASSERT_LE(0, self->mfd[0]);
	ch.fd = self->mfd[0];
	pid = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvpool_arena a;

		CHILD_CHECK(kt_drop_sys_admin() == 0);
		CHILD_CHECK(kt_arena_set(self->pool.ctl, self->pool.id,
					 KVPOOL_ARENA_HOST, PB, &ch, 1,
					 NULL) == EPERM);
		CHILD_CHECK(kt_arena_info(self->fd, &a) == 0);
		_exit(0);
	}
	status = kt_pool_wait(&self->pool, pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("status %#x", status);
	EXPECT_EQ(KVPOOL_ARENA_NONE, arena_kind(self->fd));
}

/* Maps the whole arena of @fd at one address; NULL on failure. */
static unsigned char *map_arena(int fd, __u64 *bytes)
{
	struct kvpool_arena_fd f[KVPOOL_ARENA_MAX_CHUNKS];
	struct kvpool_arena a;
	unsigned char *base;
	__u32 i;

	if (kt_arena_info(fd, &a) || a.out_kind != KVPOOL_ARENA_HOST)
		return NULL;
	base = mmap(NULL, a.out_bytes, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	if (kt_arena_fds(fd, 0, a.out_nr_chunks, f, &a))
		return NULL;
	for (i = 0; i < a.out_nr_chunks; i++) {
		void *p = mmap(base + f[i].out_offset, f[i].out_bytes,
			       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			       f[i].out_fd, 0);

		close(f[i].out_fd);
		if (p == MAP_FAILED)
			return NULL;
	}
	*bytes = a.out_bytes;
	return base;
}

/* What writer A puts in page @id: its id and a per-test salt, repeated. */
static void fill_page(unsigned char *base, __u32 id, __u32 salt)
{
	__u32 *w = (__u32 *)(base + (size_t)id * PB);
	__u32 i;

	for (i = 0; i < PB / 4; i++)
		w[i] = id * 2654435761u ^ salt ^ i;
}

static bool page_is(const unsigned char *base, __u32 id, __u32 salt)
{
	const __u32 *w = (const __u32 *)(base + (size_t)id * PB);
	__u32 i;

	for (i = 0; i < PB / 4; i++)
		if (w[i] != (id * 2654435761u ^ salt ^ i))
			return false;
	return true;
}

#define SALT_A	0x5a17a000u
#define SALT_P	0x9e3779b9u

/*
 * Five processes: a creator that sets the arena and is SIGKILLed; A, which
 * writes a row's pages, exports the row to B, writes and donates another
 * row's pages and attaches them again, then is SIGKILLed too; B, which
 * imports the row and finds A's bytes in exactly its pages; and this
 * process, a fresh client, which still reads them all after both deaths.
 */
TEST_F(arena, shared_bytes)
{
	__u32 pages[32], nr, k;
	int sv[2], ab[2], status, got;
	pid_t creator, pa, pb;
	unsigned char *base;
	__u64 bytes = 0;
	char c;

	/* The creator: makes the memory, hands it over, dies hard. */
	creator = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, creator);
	if (creator == 0) {
		struct kvpool_arena_chunk ch = { .bytes = POOL_BYTES };

		ch.fd = kt_host_memfd(POOL_BYTES);
		CHILD_CHECK(ch.fd >= 0);
		CHILD_CHECK(kt_arena_set(self->pool.ctl, self->pool.id,
					 KVPOOL_ARENA_HOST, PB, &ch, 1,
					 NULL) == 0);
		kill(getpid(), SIGKILL);
		_exit(1);
	}
	status = kt_pool_wait(&self->pool, creator);
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("creator status %#x", status);
	ASSERT_EQ(KVPOOL_ARENA_HOST, arena_kind(self->fd));

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ab));
	pa = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pa);
	if (pa == 0) {
		struct kvpool_handle h, hc, hd;
		struct kvpool_row_query q;
		__u32 ids[32], cids[8], k;
		struct kvpool_export x = { .size = sizeof(x) };
		__u64 ab_bytes;
		unsigned char *m;
		int fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC);

		CHILD_CHECK(fd >= 0);
		m = map_arena(fd, &ab_bytes);
		CHILD_CHECK(m && ab_bytes == POOL_BYTES);
		/* A row of 20 pages, every page written. */
		CHILD_CHECK(kt_row_alloc(fd, 1, &h, NULL) == 0);
		CHILD_CHECK(kt_grow(fd, h, 20 * PT) == 0);
		CHILD_CHECK(kt_commit1(fd, h, 20 * PT) == 0);
		CHILD_CHECK(kt_query(fd, h, ids, 32, &q) == 0);
		CHILD_CHECK(q.out_nr_pages == 20);
		for (k = 0; k < 20; k++)
			fill_page(m, ids[k], SALT_A);
		/* A prefix: written, donated, attached to a new row. */
		CHILD_CHECK(kt_row_alloc(fd, 1, &hc, NULL) == 0);
		CHILD_CHECK(kt_grow(fd, hc, 8 * PT) == 0);
		CHILD_CHECK(kt_commit1(fd, hc, 8 * PT) == 0);
		CHILD_CHECK(kt_query(fd, hc, cids, 8, &q) == 0);
		for (k = 0; k < 8; k++)
			fill_page(m, cids[k], SALT_P);
		CHILD_CHECK(kt_release_donate1(fd, hc, NULL) == 0);
		CHILD_CHECK(kt_row_alloc(fd, 1, &hd, NULL) == 0);
		CHILD_CHECK(kt_attach(fd, hd, cids, 8) == 0);
		CHILD_CHECK(kt_query(fd, hd, ids + 20, 8, &q) == 0);
		CHILD_CHECK(q.out_nr_pages == 8 && q.out_protected_len ==
			    8 * PT);
		for (k = 0; k < 8; k++)
			CHILD_CHECK(ids[20 + k] == cids[k] &&
				    page_is(m, cids[k], SALT_P));
		/*
		 * Ready, then export the written row to B: "r" goes first, so
		 * it is ahead of B's message (B needs the file to go on).
		 */
		CHILD_CHECK(write(ab[1], "r", 1) == 1);
		x.handle = h;
		CHILD_CHECK(kt_ioctl(fd, KVPOOL_EXPORT, &x) == 0);
		CHILD_CHECK(kt_send_fds(sv[0], ids, 20 * sizeof(__u32),
					&x.out_fd, 1, 0) == 0);
		close(x.out_fd);
		/* Wait to be killed, still holding hd and the cache. */
		for (;;)
			pause();
	}
	/* B: imports the row and reads A's bytes in its pages. */
	pb = kt_pool_fork(_metadata, &self->pool);
	ASSERT_LE(0, pb);
	if (pb == 0) {
		struct kvpool_import im = { .size = sizeof(im) };
		struct kvpool_row_query q;
		__u32 ids[32], mine[32], k;
		int fd = kt_open_id(self->pool.id, O_RDWR | O_CLOEXEC), nf = 0;
		int xf = -1;
		__u64 b_bytes;
		unsigned char *m;
		ssize_t r;

		CHILD_CHECK(fd >= 0);
		r = kt_recv_fds(sv[1], ids, sizeof(ids), &xf, 1, &nf, 0);
		CHILD_CHECK(r == 20 * sizeof(__u32) && nf == 1);
		im.fd = xf;
		CHILD_CHECK(kt_ioctl(fd, KVPOOL_IMPORT, &im) == 0);
		CHILD_CHECK(im.out_nr_pages == 20);
		close(xf);
		CHILD_CHECK(kt_query(fd, im.out_handle, mine, 32, &q) == 0);
		CHILD_CHECK(q.out_nr_pages == 20);
		m = map_arena(fd, &b_bytes);
		CHILD_CHECK(m);
		for (k = 0; k < 20; k++)
			CHILD_CHECK(mine[k] == ids[k] &&
				    page_is(m, mine[k], SALT_A));
		/* Hand the page list on, and keep the row. */
		CHILD_CHECK(write(ab[1], mine, 20 * sizeof(__u32)) ==
			    20 * sizeof(__u32));
		for (;;)
			pause();
	}
	close(sv[0]);
	close(ab[1]);
	/* A's "ready", then B's page list (one message each, in order). */
	ASSERT_EQ(1, read(ab[0], &c, 1));
	ASSERT_EQ('r', c);
	got = read(ab[0], pages, sizeof(pages));
	ASSERT_EQ(20 * (int)sizeof(__u32), got);
	nr = got / sizeof(__u32);
	{
		struct kvpool_stats st;

		/* B imported: no row is in flight. */
		ASSERT_EQ(0, kt_stats(self->fd, &st));
		EXPECT_EQ(0, st.out_export_rows);
	}

	kill(pa, SIGKILL);
	status = kt_pool_wait(&self->pool, pa);
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("A status %#x", status);

	/* A fresh client after both deaths: B's row still reads as A wrote. */
	base = map_arena(self->fd, &bytes);
	ASSERT_NE(NULL, base);
	EXPECT_EQ(POOL_BYTES, bytes);
	for (k = 0; k < nr; k++) {
		EXPECT_TRUE(page_is(base, pages[k], SALT_A))
			TH_LOG("page %u of B's row", pages[k]);
	}
	munmap(base, bytes);

	kill(pb, SIGKILL);
	status = kt_pool_wait(&self->pool, pb);
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("B status %#x", status);
	close(sv[1]);
	close(ab[0]);
}

/* Shmem in /proc/meminfo, in KiB. */
static long shmem_kib(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Shmem: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/*
 * The pool keeps the memory after the maker closed it and nobody maps it;
 * destroying the pool frees it. 64 MiB, so that it stands out of the
 * guest's other shared memory.
 */
TEST_F(arena, destroy_frees)
{
	const __u32 pages = 16384;
	const __u64 bytes = (__u64)pages * PB;
	struct kvpool_arena_chunk ch = { .bytes = bytes };
	long s0, s1, s2, s3;
	__u64 got = 0;
	unsigned char *m;
	__u32 id;
	int fd, mfd;

	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, pages, 16, 4, 64, &id));
	s0 = shmem_kib();
	ASSERT_LE(0, s0);
	mfd = kt_host_memfd(bytes);
	ASSERT_LE(0, mfd);
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 0x5a, bytes);
	munmap(m, bytes);
	s1 = shmem_kib();
	EXPECT_LE(s0 + 60 * 1024, s1) TH_LOG("shmem %ld -> %ld kB", s0, s1);
	ch.fd = mfd;
	ASSERT_EQ(0, kt_arena_set(self->pool.ctl, id, KVPOOL_ARENA_HOST, PB,
				  &ch, 1, NULL));
	close(mfd);

	/* A client maps it and goes; the memory stays with the pool. */
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	m = map_arena(fd, &got);
	ASSERT_NE(NULL, m);
	EXPECT_EQ(got, bytes);
	EXPECT_EQ(0x5a, m[bytes - 1]);
	munmap(m, got);
	close(fd);
	s2 = shmem_kib();
	EXPECT_LE(s0 + 60 * 1024, s2) TH_LOG("shmem %ld -> %ld kB", s0, s2);

	ASSERT_EQ(0, kt_destroy(self->pool.ctl, id));
	s3 = shmem_kib();
	EXPECT_GT(s0 + 8 * 1024, s3)
		TH_LOG("shmem %ld before, %ld held, %ld after destroy", s0, s2,
		       s3);
}

/* A count in /sys/class/kvpool/, or -1. */
static long class_count(const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/class/kvpool/%s", name);
	if (kt_read_text(path, buf, sizeof(buf)) || !buf[0])
		return -1;
	return strtol(buf, NULL, 10);
}

/*
 * One owner per chunk: a memfd given twice in one set, or twice under
 * two opens (one inode), is EINVAL naming the second; one another pool
 * holds is EBUSY; once that pool is destroyed (no quarantine) it may be
 * given again.
 */
TEST_F(arena, one_owner)
{
	struct kvpool_arena_chunk ch[2] = {
		{ .bytes = 32 * PB }, { .bytes = 33 * PB },
	};
	struct kvpool_ctl_arena_set s;
	char path[64];
	__u32 idx, other;
	int reopen;

	self->mfd[0] = kt_host_memfd(33 * PB);
	self->mfd[1] = kt_host_memfd(33 * PB);
	ASSERT_LE(0, self->mfd[0]);
	ASSERT_LE(0, self->mfd[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", self->mfd[0]);
	reopen = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, reopen);

	ch[0].fd = self->mfd[0];
	ch[1].fd = self->mfd[0];
	EXPECT_EQ(EINVAL, kt_arena_set(self->pool.ctl, self->pool.id,
				       KVPOOL_ARENA_HOST, PB, ch, 2, &idx));
	EXPECT_EQ(1, idx);
	ch[1].fd = reopen;
	EXPECT_EQ(EINVAL, kt_arena_set(self->pool.ctl, self->pool.id,
				       KVPOOL_ARENA_HOST, PB, ch, 2, &idx));
	EXPECT_EQ(1, idx) TH_LOG("two opens of one memfd are one chunk");
	EXPECT_EQ(KVPOOL_ARENA_NONE, arena_kind(self->fd));

	/* Another pool's chunk, by any open of it. */
	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, 33, PT, 4, 64, &other));
	ch[1].bytes = 33 * PB;
	ASSERT_EQ(0, kt_arena_set(self->pool.ctl, other, KVPOOL_ARENA_HOST,
				  PB, &ch[1], 1, NULL));
	ch[0].fd = self->mfd[1];
	EXPECT_EQ(EBUSY, kt_arena_set(self->pool.ctl, self->pool.id,
				      KVPOOL_ARENA_HOST, PB, ch, 2, &idx));
	EXPECT_EQ(1, idx);
	ch[1].fd = self->mfd[0];
	EXPECT_EQ(EBUSY, kt_arena_set(self->pool.ctl, self->pool.id,
				      KVPOOL_ARENA_HOST, PB, ch, 2, &idx));
	EXPECT_EQ(1, idx);
	EXPECT_EQ(KVPOOL_ARENA_NONE, arena_kind(self->fd));
	/* Host arenas take no ARENA_SET flag. */
	s = good_set(self, ch, 1);
	ch[0].bytes = POOL_BYTES;
	s.flags = KVPOOL_ARENA_SET_DEVICE;
	s.device_fd = self->mfd[1];
	EXPECT_EQ(EINVAL, kt_ioctl(self->pool.ctl, KVPOOL_CTL_ARENA_SET, &s));
	s.flags = KVPOOL_ARENA_SET_AGENT;
	s.device_fd = 0;
	EXPECT_EQ(EINVAL, kt_ioctl(self->pool.ctl, KVPOOL_CTL_ARENA_SET, &s));
	ch[0].bytes = 32 * PB;

	ASSERT_EQ(0, kt_destroy(self->pool.ctl, other));
	EXPECT_EQ(0, class_count("retired_pools"));
	ch[1].bytes = 33 * PB;
	EXPECT_EQ(0, kt_arena_set(self->pool.ctl, self->pool.id,
				  KVPOOL_ARENA_HOST, PB, ch, 2, &idx));
	EXPECT_EQ(KVPOOL_ARENA_HOST, arena_kind(self->fd));
	close(reopen);
}

/*
 * A pool destroyed with pages in quarantine is retired: its memfd stays
 * its own (EBUSY for another pool, counted in /sys/class/kvpool/) until
 * the process that may still write those pages is gone; then it may be
 * given again. The writer here keeps writing its quarantined page
 * through its own mapping until it is killed.
 */
TEST_F(arena, retired_quarantine)
{
	const __u32 pages = 33;
	struct kvpool_arena_chunk ch = { .bytes = (__u64)pages * PB };
	struct kvpool_handle h;
	int sync[2], mfd, i;
	__u32 id, fresh, idx;
	long before;
	pid_t pid;
	char c;

	before = class_count("retired_pools");
	ASSERT_EQ(0, before) TH_LOG("retired pools before the test");
	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, pages, PT, 4, 64, &id));
	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, pages, PT, 4, 64, &fresh));
	mfd = kt_host_memfd(ch.bytes);
	ASSERT_LE(0, mfd);
	ch.fd = mfd;
	ASSERT_EQ(0, kt_arena_set(self->pool.ctl, id, KVPOOL_ARENA_HOST, PB,
				  &ch, 1, NULL));
	ASSERT_EQ(0, pipe(sync));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char *m;
		__u64 got = 0;
		int fd = kt_open_id(id, O_RDWR | O_CLOEXEC);

		if (fd < 0 || kt_row_alloc(fd, 1, &h, NULL) ||
		    kt_grow(fd, h, PT))
			_exit(1);
		m = map_arena(fd, &got);
		if (!m)
			_exit(2);
		/* Closed with its row held: quarantined while it lives. */
		close(fd);
		if (write(sync[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			memset(m, 0x77, got);
	}
	close(sync[1]);
	ASSERT_EQ(1, read(sync[0], &c, 1));
	close(sync[0]);

	ASSERT_EQ(0, kt_destroy(self->pool.ctl, id));
	EXPECT_EQ(1, class_count("retired_pools"));
	EXPECT_EQ(1, class_count("retired_chunks"));
	EXPECT_EQ(EBUSY, kt_arena_set(self->pool.ctl, fresh, KVPOOL_ARENA_HOST,
				      PB, &ch, 1, &idx));
	EXPECT_EQ(0, idx);

	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	/* The check runs within a second of the writer's exit. */
	for (i = 0; i < 1000 && class_count("retired_pools"); i++)
		usleep(10 * 1000);
	EXPECT_EQ(0, class_count("retired_pools"));
	EXPECT_EQ(0, class_count("retired_chunks"));
	EXPECT_EQ(0, kt_arena_set(self->pool.ctl, fresh, KVPOOL_ARENA_HOST,
				  PB, &ch, 1, &idx));
	ASSERT_EQ(0, kt_destroy(self->pool.ctl, fresh));
	close(mfd);
}

TEST_HARNESS_MAIN
