// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the control device, /dev/kvpool-control.
 *
 * KVPOOL_CTL_CREATE and KVPOOL_CTL_DESTROY: geometry limits, flags and
 * reserved fields, ENODEV and EBUSY on destroy, CAP_SYS_ADMIN (EPERM) and
 * the device's mode (EACCES), pool ids, the pool count limit, the sysfs
 * class of pools, a read-only CTL_CREATE struct (EFAULT, no pool made).
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <grp.h>
#include <time.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define NOBODY 65534
#define MAX_POOLS 64
/* The documented limits of struct kvpool_ctl_create. */
#define MAX_NR_PAGES	(1u << 27)
#define MAX_PT		65536u
#define MAX_NR_ROWS	(1u << 20)
#define MAX_ROW_TOKENS	(1u << 24)

FIXTURE(ctl) {
	int ctl;
	int nids;
	__u32 ids[MAX_POOLS + 8];
};

FIXTURE_SETUP(ctl)
{
	self->ctl = kt_ctl_open();
	ASSERT_LE(0, self->ctl) TH_LOG("open " KT_CTL_PATH ": %s",
				       strerror(errno));
}

FIXTURE_TEARDOWN(ctl)
{
	int i;

	for (i = 0; i < self->nids; i++)
		EXPECT_EQ(0, kt_destroy(self->ctl, self->ids[i]))
			TH_LOG("destroy pool %u", self->ids[i]);
	close(self->ctl);
}

/* Create a pool the teardown destroys unless ctl_destroy() did. */
static int ctl_create(FIXTURE_DATA(ctl) *self, __u32 flags, __u32 nr_pages,
		      __u32 page_tokens, __u32 nr_rows, __u32 row_tokens,
		      __u32 *id)
{
	__u32 tmp;
	int ret = kt_create(self->ctl, flags, nr_pages, page_tokens, nr_rows,
			    row_tokens, &tmp);

	if (!ret && self->nids < (int)ARRAY_SIZE(self->ids))
		self->ids[self->nids++] = tmp;
	if (id)
		*id = tmp;
	return ret;
}

static int ctl_destroy(FIXTURE_DATA(ctl) *self, __u32 id)
{
	int ret = kt_destroy(self->ctl, id), i;

	if (ret)
		return ret;
	for (i = 0; i < self->nids; i++) {
		if (self->ids[i] == id) {
			self->ids[i] = self->ids[--self->nids];
			break;
		}
	}
	return 0;
}

static bool path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static int become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	return 0;
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

TEST_F(ctl, create_destroy)
{
	const __u32 flags = KVPOOL_CREATE_RESERVE_ZERO;
	struct kvpool_stats st;
	struct kvpool_info info;
	char path[64];
	__u64 v = 0;
	__u32 id;
	int fd;

	ASSERT_EQ(0, ctl_create(self, flags, 64, 16, 32, 1024, &id));

	kt_dev_path(path, sizeof(path), id);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	ASSERT_EQ(0, kt_info(fd, &info));
	EXPECT_EQ(id, info.out_pool_id);
	EXPECT_EQ(64, info.out_nr_pages);
	EXPECT_EQ(16, info.out_page_tokens);
	EXPECT_EQ(32, info.out_nr_rows);
	EXPECT_EQ(1024, info.out_row_tokens);
	EXPECT_EQ(flags, info.out_create_flags);
	ASSERT_EQ(0, kt_stats(fd, &st));
	EXPECT_EQ(63, st.out_free_pages);
	EXPECT_EQ(1, st.out_reserved_pages);
	EXPECT_EQ(31, st.out_free_rows);
	EXPECT_EQ(1, st.out_reserved_rows);
	EXPECT_EQ(1, st.out_nr_clients);
	ASSERT_EQ(0, kt_sysfs_u64(id, "pool_id", &v));
	EXPECT_EQ(id, v);
	/*
	 * Pools have their own class; only the control device is a misc
	 * device.
	 */
	snprintf(path, sizeof(path), KT_SYSFS_CLASS "/kvpool%u", id);
	EXPECT_TRUE(path_exists(path)) TH_LOG("%s", path);
	snprintf(path, sizeof(path), "/sys/class/misc/kvpool%u", id);
	EXPECT_FALSE(path_exists(path)) TH_LOG("%s", path);
	EXPECT_TRUE(path_exists("/sys/class/misc/kvpool-control"));
	EXPECT_FALSE(path_exists(KT_SYSFS_CLASS "/kvpool-control"));
	close(fd);

	ASSERT_EQ(0, ctl_destroy(self, id));
	/* The device node and the sysfs directory go with the pool. */
	EXPECT_EQ(-1, kt_open_id(id, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);
	snprintf(path, sizeof(path), KT_SYSFS_CLASS "/kvpool%u", id);
	EXPECT_FALSE(path_exists(path));
	EXPECT_EQ(ENODEV, kt_destroy(self->ctl, id));
}

/*
 * mem_bytes counts the tables a pool is made with, then exactly the room
 * of a row's page array (128 ids once it holds 128 pages: 16 doubled
 * three times) while the row lives, and nothing of it after the release.
 * Opening the pool adds its tenant; closing takes it away again.
 */
TEST_F(ctl, mem_bytes)
{
	const __u32 pages = 65536, rows = 1024;
	__u64 made, opened, grown, released, closed;
	struct kvpool_handle h;
	__u32 id, nr;
	int fd;

	ASSERT_EQ(0, ctl_create(self, 0, pages, 1, rows, 4096, &id));
	ASSERT_EQ(0, kt_sysfs_u64(id, "mem_bytes", &made));
	/* 8 bytes a page, a bit a page of free map, 64 or more a row */
	EXPECT_LE(pages * 8ull + pages / 8 + rows * 64ull, made);
	EXPECT_GE(pages * 8ull + pages / 8 + 1024 + rows * 256ull, made);
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_sysfs_u64(id, "mem_bytes", &opened));
	EXPECT_LT(made, opened);	/* the client's tenant */
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_grow(fd, h, 128));
	ASSERT_EQ(0, kt_sysfs_u64(id, "mem_bytes", &grown));
	EXPECT_EQ(opened + 128 * 4, grown);
	ASSERT_EQ(0, kt_release1(fd, h, &nr));
	EXPECT_EQ(128, nr);
	ASSERT_EQ(0, kt_sysfs_u64(id, "mem_bytes", &released));
	EXPECT_EQ(opened, released);
	close(fd);	/* the last reference: released before close returns */
	ASSERT_EQ(0, kt_sysfs_u64(id, "mem_bytes", &closed));
	EXPECT_EQ(made, closed);
	ASSERT_EQ(0, ctl_destroy(self, id));
}

/*
 * The counters count exactly what they say: opens, refusals by ENOSPC and
 * by EDQUOT (ROW_ALLOC and EXTEND here), and what a closing client still
 * held; nothing else moves them.
 */
TEST_F(ctl, counters)
{
	struct kvpool_ctl_tenant t = {
		.size = sizeof(t),
		.flags = KVPOOL_TENANT_BY_PATH | KVPOOL_TENANT_ANY_UID,
		.max_pages = 4,
		.cgroup_path = (__u64)(uintptr_t)"/",
	};
	struct kvpool_handle h[3];
	__u32 id, nr, shortfall;
	int fd, fd2;

	ASSERT_EQ(0, ctl_create(self, 0, 64, 1, 2, 1024, &id));
	EXPECT_EQ(0, kt_sysfs_val(id, "clients_opened"));
	EXPECT_EQ(0, kt_sysfs_val(id, "refused_space"));
	EXPECT_EQ(0, kt_sysfs_val(id, "refused_quota"));
	EXPECT_EQ(0, kt_sysfs_val(id, "reclaimed_pages"));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, kt_sysfs_val(id, "clients_opened"));
	ASSERT_EQ(0, kt_row_alloc(fd, 1, h, NULL));
	EXPECT_EQ(ENOSPC, kt_row_alloc(fd, 2, h + 1, &shortfall));
	EXPECT_EQ(1, shortfall);
	EXPECT_EQ(ENOSPC, kt_grow(fd, h[0], 65));
	EXPECT_EQ(2, kt_sysfs_val(id, "refused_space"));
	EXPECT_EQ(0, kt_sysfs_val(id, "refused_quota"));
	ASSERT_EQ(0, kt_release1(fd, h[0], &nr));

	/* Opened after the limit: the root's path tenant, at most 4 pages. */
	t.pool_id = id;
	ASSERT_EQ(0, kt_ioctl(self->ctl, KVPOOL_CTL_TENANT_SET, &t));
	fd2 = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(2, kt_sysfs_val(id, "clients_opened"));
	ASSERT_EQ(0, kt_row_alloc(fd2, 1, h, NULL));
	EXPECT_EQ(EDQUOT, kt_grow(fd2, h[0], 5));
	EXPECT_EQ(1, kt_sysfs_val(id, "refused_quota"));
	EXPECT_EQ(2, kt_sysfs_val(id, "refused_space"));
	ASSERT_EQ(0, kt_grow(fd2, h[0], 3));
	close(fd2);	/* holding 3 pages */
	EXPECT_EQ(3, kt_sysfs_val(id, "reclaimed_pages"));
	close(fd);	/* holding nothing */
	EXPECT_EQ(3, kt_sysfs_val(id, "reclaimed_pages"));
	EXPECT_EQ(64, kt_sysfs_val(id, "free_pages"));
	ASSERT_EQ(0, ctl_destroy(self, id));
}

/*
 * Without RESERVE_ZERO one page and one row are a valid pool, and page 0
 * and row 0 are handed out like any other.
 */
TEST_F(ctl, create_minimal_no_reserve)
{
	struct kvpool_row_query q;
	struct kvpool_handle h;
	struct kvpool_stats st;
	__u32 id, page = KVPOOL_PAGE_NONE, nr_new = 0, sh = 0;
	int fd;

	ASSERT_EQ(0, ctl_create(self, 0, 1, 1, 1, 1, &id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_stats(fd, &st));
	EXPECT_EQ(1, st.out_free_pages);
	EXPECT_EQ(0, st.out_reserved_pages);
	EXPECT_EQ(1, st.out_free_rows);
	EXPECT_EQ(0, st.out_reserved_rows);

	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	EXPECT_EQ(0, h.req_pool_idx);
	EXPECT_NE(0, h.generation);
	EXPECT_EQ(ENOSPC, kt_row_alloc(fd, 1, &h, &sh));
	EXPECT_EQ(1, sh);
	ASSERT_EQ(0, kt_extend1(fd, h, 1, &page, 1, &nr_new));
	EXPECT_EQ(1, nr_new);
	EXPECT_EQ(0, page);
	ASSERT_EQ(0, kt_query(fd, h, NULL, 0, &q));
	EXPECT_EQ(1, q.out_nr_pages);
	EXPECT_EQ(1, q.out_allocated_len);
	close(fd);
	ASSERT_EQ(0, ctl_destroy(self, id));
}

/* RESERVE_ZERO with two pages and two rows leaves exactly page 1, row 1. */
TEST_F(ctl, create_minimal_reserve_zero)
{
	struct kvpool_handle h;
	__u32 id, page = KVPOOL_PAGE_NONE, sh = 0;
	int fd;

	ASSERT_EQ(0, ctl_create(self, KVPOOL_CREATE_RESERVE_ZERO, 2, 1, 2, 4,
				&id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	EXPECT_EQ(1, h.req_pool_idx);
	EXPECT_EQ(0, kt_extend1(fd, h, 1, &page, 1, NULL));
	EXPECT_EQ(1, page);
	EXPECT_EQ(ENOSPC, kt_extend1(fd, h, 2, &page, 1, NULL));
	EXPECT_EQ(ENOSPC, kt_row_alloc(fd, 1, &h, &sh));
	EXPECT_EQ(1, sh);
	close(fd);
	ASSERT_EQ(0, ctl_destroy(self, id));
}

TEST_F(ctl, create_bad_geometry)
{
	static const struct {
		const char *what;
		__u32 flags, nr_pages, page_tokens, nr_rows, row_tokens;
	} bad[] = {
		{ "nr_pages 0", 0, 0, 1, 4, 16 },
		{ "nr_pages max+1", 0, MAX_NR_PAGES + 1, 1, 4, 16 },
		{ "nr_pages 2^28+1", 0, (1u << 28) + 1, 1, 4, 16 },
		{ "nr_pages ~0", 0, ~0u, 1, 4, 16 },
		{ "page_tokens 0", 0, 16, 0, 4, 16 },
		{ "page_tokens max+1", 0, 16, MAX_PT + 1, 4, 16 },
		{ "page_tokens ~0", 0, 16, ~0u, 4, 16 },
		{ "nr_rows 0", 0, 16, 1, 0, 16 },
		{ "nr_rows max+1", 0, 16, 1, MAX_NR_ROWS + 1, 16 },
		{ "nr_rows ~0", 0, 16, 1, ~0u, 16 },
		{ "row_tokens 0", 0, 16, 1, 4, 0 },
		{ "row_tokens max+1", 0, 16, 1, 4, MAX_ROW_TOKENS + 1 },
		{ "row_tokens ~0", 0, 16, 1, 4, ~0u },
		{ "reserve_zero, 1 page", KVPOOL_CREATE_RESERVE_ZERO, 1, 1, 4, 16 },
		{ "reserve_zero, 1 row", KVPOOL_CREATE_RESERVE_ZERO, 16, 1, 1, 16 },
		{ "all zero", 0, 0, 0, 0, 0 },
	};
	int before = kt_count_pools();
	unsigned int i;

	ASSERT_LE(0, before);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		__u32 id = 0xdeadbeef;

		EXPECT_EQ(EINVAL, ctl_create(self, bad[i].flags, bad[i].nr_pages,
					     bad[i].page_tokens, bad[i].nr_rows,
					     bad[i].row_tokens, &id))
			TH_LOG("create with %s", bad[i].what);
	}
	EXPECT_EQ(before, kt_count_pools());
}

/* The documented maxima (other than nr_pages and nr_rows, see below) work. */
TEST_F(ctl, create_limits_accepted)
{
	struct kvpool_info info;
	__u32 id;
	int fd;

	ASSERT_EQ(0, ctl_create(self, 0, 4, MAX_PT, 2, MAX_ROW_TOKENS, &id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_info(fd, &info));
	EXPECT_EQ(MAX_PT, info.out_page_tokens);
	EXPECT_EQ(MAX_ROW_TOKENS, info.out_row_tokens);
	EXPECT_EQ(2, info.out_max_batch);
	close(fd);
	ASSERT_EQ(0, ctl_destroy(self, id));
}

/*
 * nr_rows at its maximum, 2^20, is in range; its row table is 64 MiB, so
 * the only other documented answer is ENOMEM. max_batch is capped at 8192.
 */
TEST_F(ctl, create_max_rows)
{
	struct kvpool_info info;
	__u32 id;
	int ret, fd;

	ret = ctl_create(self, KVPOOL_CREATE_RESERVE_ZERO, 16, 1, MAX_NR_ROWS,
			 16, &id);
	if (ret == ENOMEM) {
		/* The documented answer when the guest lacks 64 MiB. */
		TH_LOG("2^20 rows: ENOMEM in this guest");
		return;
	}
	ASSERT_EQ(0, ret);
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_info(fd, &info));
	EXPECT_EQ(MAX_NR_ROWS, info.out_nr_rows);
	EXPECT_EQ(8192, info.out_max_batch);
	close(fd);
	ASSERT_EQ(0, ctl_destroy(self, id));
}

TEST_F(ctl, create_unknown_flags)
{
	int before = kt_count_pools();
	__u32 id;

	/*
	 * Bit 1 is KVPOOL_CREATE_GPU (ABI 2), bit 2 KVPOOL_CREATE_BUDGET
	 * (ABI 4): the first unknown bit is the one above the newest.
	 */
	EXPECT_EQ(EOPNOTSUPP, ctl_create(self, KVPOOL_CREATE_BUDGET << 1,
					 16, 1, 4, 16, &id));
	EXPECT_EQ(EOPNOTSUPP, ctl_create(self, 1u << 31, 16, 1, 4, 16, &id));
	EXPECT_EQ(EOPNOTSUPP, ctl_create(self, KVPOOL_CREATE_RESERVE_ZERO |
					 (KVPOOL_CREATE_BUDGET << 1),
					 16, 1, 4, 16, &id));
	EXPECT_EQ(before, kt_count_pools());
}

/*
 * The first PCI device whose class is (@display) or is not a display
 * controller's, as domain and bus << 8 | devfn, and its name; false if
 * there is none.
 */
static bool find_pci(bool display, __u32 *domain, __u32 *devid, char *name,
		     size_t len)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		unsigned int dom, bus, dev, fn;
		char path[300], cls[32];

		if (sscanf(e->d_name, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class",
			 e->d_name);
		if (kt_read_text(path, cls, sizeof(cls)))
			continue;
		if ((strtoul(cls, NULL, 16) >> 16 == 0x03) != display)
			continue;
		*domain = dom;
		*devid = bus << 8 | dev << 3 | fn;
		snprintf(name, len, "%.*s", (int)len - 1, e->d_name);
		found = true;
	}
	closedir(d);
	return found;
}

static int create_gpu(FIXTURE_DATA(ctl) *self, __u32 flags, __u32 domain,
		      __u32 devid, __u32 *id)
{
	struct kvpool_ctl_create c = {
		.size = sizeof(c), .flags = flags, .nr_pages = 16,
		.page_tokens = 1, .nr_rows = 4, .row_tokens = 16,
		.gpu_domain = domain, .gpu_devid = devid,
	};
	int ret = kt_ioctl(self->ctl, KVPOOL_CTL_CREATE, &c);

	*id = c.out_pool_id;
	return ret;
}

/*
 * A pool for a GPU: its device is a child of the PCI device (the "device"
 * link, the gpu attribute, INFO's flags). The VM has a virtio GPU
 * (tools/vm/vm-run.sh) for this. Refused: no device at the
 * address (ENXIO), a device that is no display controller, an address
 * past 16 bits or one given without the flag (EINVAL).
 */
TEST_F(ctl, create_gpu)
{
	char name[64], other[64], link[512], path[128], txt[64];
	struct kvpool_info info;
	__u32 dom, devid, odom, odevid, id = 0;
	int before = kt_count_pools(), fd;
	ssize_t n;

	ASSERT_TRUE(find_pci(true, &dom, &devid, name, sizeof(name)))
		TH_LOG("no PCI display controller: vm-run.sh adds a virtio GPU");
	ASSERT_EQ(0, create_gpu(self, KVPOOL_CREATE_GPU, dom, devid, &id));
	snprintf(path, sizeof(path), KT_SYSFS_FMT, id, "device");
	n = readlink(path, link, sizeof(link) - 1);
	ASSERT_LT(0, n);
	link[n] = 0;
	EXPECT_NE(NULL, strstr(link, name)) TH_LOG("%s -> %s", path, link);
	snprintf(path, sizeof(path), KT_SYSFS_FMT, id, "gpu");
	ASSERT_EQ(0, kt_read_text(path, txt, sizeof(txt)));
	EXPECT_EQ(0, strncmp(txt, name, strlen(name))) TH_LOG("gpu: %s", txt);
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_info(fd, &info));
	EXPECT_EQ(KVPOOL_CREATE_GPU, info.out_create_flags);
	close(fd);
	snprintf(path, sizeof(path), KT_SYSFS_FMT, id, "create_flags");
	ASSERT_EQ(0, kt_read_text(path, txt, sizeof(txt)));
	EXPECT_STREQ("2\n", txt);
	EXPECT_EQ(0, ctl_destroy(self, id));

	/* A pool without a GPU has none, and no device link. */
	ASSERT_EQ(0, create_gpu(self, 0, 0, 0, &id));
	snprintf(path, sizeof(path), KT_SYSFS_FMT, id, "gpu");
	ASSERT_EQ(0, kt_read_text(path, txt, sizeof(txt)));
	EXPECT_STREQ("\n", txt);
	snprintf(path, sizeof(path), KT_SYSFS_FMT, id, "device");
	EXPECT_GT(0, readlink(path, link, sizeof(link)));
	EXPECT_EQ(0, ctl_destroy(self, id));

	EXPECT_EQ(ENXIO, create_gpu(self, KVPOOL_CREATE_GPU, 0xfffe, 0xffff,
				    &id));
	EXPECT_EQ(EINVAL, create_gpu(self, KVPOOL_CREATE_GPU, dom, 0x10000,
				     &id));
	EXPECT_EQ(EINVAL, create_gpu(self, 0, dom, devid, &id));
	EXPECT_EQ(EINVAL, create_gpu(self, 0, 1, 0, &id));
	if (find_pci(false, &odom, &odevid, other, sizeof(other)))
		EXPECT_EQ(EINVAL, create_gpu(self, KVPOOL_CREATE_GPU, odom,
					     odevid, &id)) TH_LOG("%s", other);
	EXPECT_EQ(before, kt_count_pools());
}

/* KVPOOL_CTL_ARENA_SET of one CUDA chunk of @bytes held by @fd. */
static int cuda_set(int ctl, __u32 id, int fd, __u64 bytes, __u32 *idx)
{
	struct kvpool_arena_chunk ch = { .fd = fd, .bytes = bytes };

	*idx = 0xdeadbeef;
	return kt_arena_set(ctl, id, KVPOOL_ARENA_CUDA, 4096, &ch, 1, idx);
}

/* The same with ARENA_SET's @flags and @device_fd. */
static int cuda_set_dev(int ctl, __u32 id, int fd, __u32 flags, int dev,
			__u32 *idx)
{
	struct kvpool_arena_chunk ch = { .fd = fd, .bytes = 16 * 4096 };
	struct kvpool_ctl_arena_set s = {
		.size = sizeof(s), .flags = flags, .pool_id = id,
		.kind = KVPOOL_ARENA_CUDA, .page_bytes = 4096, .nr_chunks = 1,
		.chunk_entry_len = sizeof(ch), .chunks = kt_ptr(&ch),
		.out_error_index = 0xdeadbeef, .device_fd = dev,
	};
	int ret = kt_ioctl(ctl, KVPOOL_CTL_ARENA_SET, &s);

	*idx = s.out_error_index;
	return ret;
}

/*
 * A CUDA arena (KVPOOL_ARENA_CUDA) is for a pool that names its GPU, and
 * its chunks are files of the NVIDIA control device (195:255), which the
 * kernel holds without knowing more of them. Refused with EINVAL: a pool
 * without a GPU, a memfd, a socket, a character device that is not
 * 195:255 (/dev/null, a tty, a pty master while the fake-driver hook is
 * off), a pool's own device or the control device; each leaves the pool
 * without an arena. With the hook on, a pty master (the fake driver's
 * export) is taken, and handed back as the same file.
 */
TEST_F(ctl, arena_cuda)
{
	struct kvpool_arena_fd f;
	struct kvpool_arena a;
	struct stat want, got;
	__u32 dom, devid, id, plain, idx;
	int null, tty, pty, mfd, sv[2], fd, pfd, old;
	char name[64];

	ASSERT_TRUE(find_pci(true, &dom, &devid, name, sizeof(name)))
		TH_LOG("no PCI display controller: vm-run.sh adds a virtio GPU");
	ASSERT_EQ(0, create_gpu(self, KVPOOL_CREATE_GPU, dom, devid, &id));
	self->ids[self->nids++] = id;
	ASSERT_EQ(0, create_gpu(self, 0, 0, 0, &plain));
	self->ids[self->nids++] = plain;
	old = kt_fake_cuda(0);
	ASSERT_LE(0, old) TH_LOG("no fake_cuda parameter: %s", strerror(-old));
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, null);
	tty = open("/dev/tty0", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0)
		tty = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
	ASSERT_LE(0, tty);
	pty = kt_fake_export();
	ASSERT_LE(0, pty);
	mfd = kt_host_memfd(16 * 4096);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	pfd = kt_open_id(plain, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, pfd);

	EXPECT_EQ(EINVAL, cuda_set(self->ctl, plain, pty, 16 * 4096, &idx));
	EXPECT_EQ(~0u, idx) TH_LOG("no GPU: about no chunk");
	EXPECT_EQ(0, kt_arena_info(pfd, &a));
	EXPECT_EQ(KVPOOL_ARENA_NONE, a.out_kind);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, mfd, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, sv[0], 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, pfd, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, self->ctl, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, null, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, tty, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	/* The fake's export is no NVIDIA file: only the test hook takes it. */
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, pty, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EBADF, cuda_set(self->ctl, id, -1, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	ASSERT_EQ(0, kt_fake_cuda(1));
	/* The hook takes a pty master, not any tty. */
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, tty, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, null, 16 * 4096, &idx));
	/* The sizes are checked as for any arena. */
	EXPECT_EQ(EINVAL, cuda_set(self->ctl, id, pty, 15 * 4096, &idx));
	/* ARENA_SET's flags: a device only with its flag, CUDA only. */
	EXPECT_EQ(EINVAL, cuda_set_dev(self->ctl, id, pty, 0, null, &idx));
	EXPECT_EQ(EOPNOTSUPP, cuda_set_dev(self->ctl, id, pty,
					   KVPOOL_ARENA_SET_AGENT << 1, 0,
					   &idx));
	EXPECT_EQ(EBADF, cuda_set_dev(self->ctl, id, pty,
				      KVPOOL_ARENA_SET_DEVICE, -1, &idx));
	EXPECT_EQ(~0u, idx);
	/* A GPU device is 195:0..253 (or, hooked, a FIFO): not a pty. */
	EXPECT_EQ(EINVAL, cuda_set_dev(self->ctl, id, pty,
				       KVPOOL_ARENA_SET_DEVICE, null, &idx));
	EXPECT_EQ(~0u, idx);
	EXPECT_EQ(EINVAL, cuda_set_dev(self->ctl, id, pty,
				       KVPOOL_ARENA_SET_DEVICE, pty, &idx));
	EXPECT_EQ(0, kt_arena_info(fd, &a));
	EXPECT_EQ(KVPOOL_ARENA_NONE, a.out_kind);

	ASSERT_EQ(0, cuda_set(self->ctl, id, pty, 16 * 4096, &idx));
	EXPECT_EQ(~0u, idx);
	ASSERT_EQ(0, kt_arena_info(fd, &a));
	EXPECT_EQ(KVPOOL_ARENA_CUDA, a.out_kind);
	EXPECT_EQ(16 * 4096, a.out_bytes);
	EXPECT_EQ(0, a.out_set_flags);
	EXPECT_EQ(0, a.out_agent_pid);
	ASSERT_EQ(0, kt_arena_fds(fd, 0, 1, &f, &a));
	ASSERT_EQ(0, fstat(pty, &want));
	ASSERT_EQ(0, fstat(f.out_fd, &got));
	EXPECT_TRUE(S_ISCHR(got.st_mode));
	EXPECT_EQ(want.st_rdev, got.st_rdev);
	EXPECT_EQ(kt_pty_index(pty), kt_pty_index(f.out_fd))
		TH_LOG("not the same file");
	EXPECT_EQ(FD_CLOEXEC, fcntl(f.out_fd, F_GETFD));
	close(f.out_fd);
	EXPECT_EQ(EEXIST, cuda_set(self->ctl, id, pty, 16 * 4096, &idx));

	EXPECT_EQ(1, kt_fake_cuda(old));
	close(fd);
	close(pfd);
	close(sv[0]);
	close(sv[1]);
	close(mfd);
	close(pty);
	close(tty);
	close(null);
}

/*
 * One owner per chunk file: a CUDA export another pool holds is refused
 * (EBUSY), and with its pool destroyed it may be given again.
 */
TEST_F(ctl, arena_cuda_owner)
{
	__u32 dom, devid, a, b, idx;
	char name[64];
	int pty, dup1, old;

	ASSERT_TRUE(find_pci(true, &dom, &devid, name, sizeof(name)));
	ASSERT_EQ(0, create_gpu(self, KVPOOL_CREATE_GPU, dom, devid, &b));
	self->ids[self->nids++] = b;
	ASSERT_EQ(0, create_gpu(self, KVPOOL_CREATE_GPU, dom, devid, &a));
	old = kt_fake_cuda(1);
	ASSERT_LE(0, old);
	pty = kt_fake_export();
	ASSERT_LE(0, pty);
	dup1 = dup(pty);
	ASSERT_LE(0, dup1);

	ASSERT_EQ(0, cuda_set(self->ctl, a, pty, 16 * 4096, &idx));
	/* A descriptor is not the file: a dup of it is the same chunk. */
	EXPECT_EQ(EBUSY, cuda_set(self->ctl, b, dup1, 16 * 4096, &idx));
	EXPECT_EQ(0, idx);
	ASSERT_EQ(0, kt_destroy(self->ctl, a));
	EXPECT_EQ(0, cuda_set(self->ctl, b, dup1, 16 * 4096, &idx));
	kt_fake_cuda(old);
	close(dup1);
	close(pty);
}

TEST_F(ctl, create_reserved_nonzero)
{
	struct kvpool_ctl_create c = {
		.size = sizeof(c), .nr_pages = 16, .page_tokens = 1,
		.nr_rows = 4, .row_tokens = 16, .__reserved = 1,
	};
	int before = kt_count_pools();

	EXPECT_EQ(EINVAL, kt_ioctl(self->ctl, KVPOOL_CTL_CREATE, &c));
	c.__reserved = 0x80000000u;
	EXPECT_EQ(EINVAL, kt_ioctl(self->ctl, KVPOOL_CTL_CREATE, &c));
	EXPECT_EQ(before, kt_count_pools());
}

TEST_F(ctl, destroy_unknown)
{
	__u32 id;

	EXPECT_EQ(ENODEV, kt_destroy(self->ctl, ~0u));
	EXPECT_EQ(ENODEV, kt_destroy(self->ctl, 1000000));
	/* An id that existed a moment ago. */
	ASSERT_EQ(0, ctl_create(self, 0, 4, 1, 2, 4, &id));
	ASSERT_EQ(0, ctl_destroy(self, id));
	EXPECT_EQ(ENODEV, kt_destroy(self->ctl, id));
}

TEST_F(ctl, destroy_bad_args)
{
	struct kvpool_ctl_destroy d = { .size = sizeof(d) };
	__u32 id;
	int fd;

	ASSERT_EQ(0, ctl_create(self, 0, 4, 1, 2, 4, &id));
	d.pool_id = id;
	d.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(self->ctl, KVPOOL_CTL_DESTROY, &d));
	d.flags = 1u << 31;
	EXPECT_EQ(EOPNOTSUPP, kt_ioctl(self->ctl, KVPOOL_CTL_DESTROY, &d));
	d.flags = 0;
	d.__reserved = 1;
	EXPECT_EQ(EINVAL, kt_ioctl(self->ctl, KVPOOL_CTL_DESTROY, &d));
	/* Still there. */
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);
	ASSERT_EQ(0, ctl_destroy(self, id));
}

/* EBUSY while a client is open: nothing is taken from it. */
TEST_F(ctl, destroy_busy)
{
	struct kvpool_row_query q;
	struct kvpool_info info;
	struct kvpool_handle h;
	__u32 id, pages[4];
	int fd, fd2;

	ASSERT_EQ(0, ctl_create(self, KVPOOL_CREATE_RESERVE_ZERO, 64, 16, 8, 256,
				&id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	ASSERT_EQ(0, kt_extend1(fd, h, 40, pages, 4, NULL));

	EXPECT_EQ(EBUSY, kt_destroy(self->ctl, id));
	EXPECT_EQ(EBUSY, kt_destroy(self->ctl, id));

	/* The client and its row are intact. */
	ASSERT_EQ(0, kt_info(fd, &info));
	EXPECT_EQ(id, info.out_pool_id);
	ASSERT_EQ(0, kt_query(fd, h, NULL, 0, &q));
	EXPECT_EQ(40, q.out_allocated_len);
	EXPECT_EQ(3, q.out_nr_pages);

	/* A second client makes it no less busy; closing one is not enough. */
	fd2 = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	close(fd);
	EXPECT_EQ(EBUSY, kt_destroy(self->ctl, id));
	close(fd2);
	EXPECT_EQ(0, ctl_destroy(self, id));
}

/* A client lives as long as its file, whoever holds it: a forked child. */
TEST_F(ctl, destroy_busy_inherited_fd)
{
	int go[2], ready[2], fd, status;
	struct kvpool_handle h;
	pid_t pid;
	__u32 id;

	ASSERT_EQ(0, ctl_create(self, 0, 16, 1, 4, 16, &id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_row_alloc(fd, 1, &h, NULL));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		close(ready[0]);
		close(self->ctl);
		kt_child_signal(ready[1], 'r');
		kt_pipe_wait(go[0]);
		close(fd);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	close(fd);
	ASSERT_EQ('r', kt_pipe_wait(ready[0]));
	EXPECT_EQ(EBUSY, kt_destroy(self->ctl, id));
	close(go[1]);
	status = wait_child(pid);
	EXPECT_TRUE(KT_CHILD_OK(status));
	close(ready[0]);
	EXPECT_EQ(0, ctl_destroy(self, id));
}

/* Ids are distinct, each names its own /dev node and its own pool. */
TEST_F(ctl, pools_independent)
{
	struct kvpool_stats a0, b0, b1;
	struct kvpool_info ia, ib;
	struct kvpool_row_query q;
	struct kvpool_handle h;
	__u32 a, b, pages[8];
	int fa, fb;

	ASSERT_EQ(0, ctl_create(self, KVPOOL_CREATE_RESERVE_ZERO, 64, 1, 8, 64,
				&a));
	ASSERT_EQ(0, ctl_create(self, 0, 32, 16, 4, 256, &b));
	ASSERT_NE(a, b);
	fa = kt_open_id(a, O_RDWR | O_CLOEXEC);
	fb = kt_open_id(b, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, kt_info(fa, &ia));
	ASSERT_EQ(0, kt_info(fb, &ib));
	EXPECT_EQ(a, ia.out_pool_id);
	EXPECT_EQ(b, ib.out_pool_id);
	EXPECT_EQ(64, ia.out_nr_pages);
	EXPECT_EQ(32, ib.out_nr_pages);
	EXPECT_EQ(0, ib.out_create_flags);

	ASSERT_EQ(0, kt_stats(fa, &a0));
	ASSERT_EQ(0, kt_stats(fb, &b0));
	ASSERT_EQ(0, kt_row_alloc(fa, 1, &h, NULL));
	ASSERT_EQ(0, kt_extend1(fa, h, 8, pages, 8, NULL));
	ASSERT_EQ(0, kt_stats(fb, &b1));
	EXPECT_STREQ("", kt_stats_diff(&b0, &b1, KT_ST_USAGE));
	/* A's handle names nothing in B. */
	EXPECT_EQ(ENOENT, kt_query(fb, h, NULL, 0, &q));
	EXPECT_EQ(ENOENT, kt_release1(fb, h, NULL));
	close(fa);
	close(fb);
	EXPECT_EQ(0, ctl_destroy(self, a));
	EXPECT_EQ(0, ctl_destroy(self, b));
}

TEST_F(ctl, device_modes)
{
	struct stat st;
	char path[32];
	__u32 id;

	ASSERT_EQ(0, stat(KT_CTL_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	ASSERT_EQ(0, ctl_create(self, 0, 4, 1, 2, 4, &id));
	kt_dev_path(path, sizeof(path), id);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
}

/*
 * Every control op, each with arguments that would succeed: EPERM without
 * CAP_SYS_ADMIN, and the struct is left as it was (the capability is
 * checked before anything is read or written). Returns true if all five
 * were refused so. For a child: no ASSERT/EXPECT.
 */
static bool ctl_all_eperm(int c, __u32 id)
{
	struct kvpool_ctl_tenant t = {
		.size = sizeof(t), .pool_id = id, .cgroup_id = 1,
		.uid = 4242, .max_pages = 8, .min_pages = 2, .max_rows = 2,
		.label = "eperm",
	};
	struct kvpool_ctl_tenant tid = {
		.size = sizeof(tid), .flags = KVPOOL_TENANT_BY_ID,
		.pool_id = id, .tenant_id = 0, .max_pages = 8,
	};
	struct kvpool_tenant_info ti[4];
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l), .pool_id = id, .count = ARRAY_SIZE(ti),
		.entry_len = sizeof(ti[0]), .tenants = kt_ptr(ti),
		.out_nr_tenants = 0xdeadbeef,
	};
	struct kvpool_ctl_wmark w = {
		.size = sizeof(w), .pool_id = id, .low_wmark = 4,
		.high_wmark = 8,
	};
	struct kvpool_ctl_arena_set as = {
		.size = sizeof(as), .pool_id = id, .kind = KVPOOL_ARENA_HOST,
		.page_bytes = 4096, .nr_chunks = 1,
		.chunk_entry_len = sizeof(struct kvpool_arena_chunk),
	};
	__u32 nid = 0xdeadbeef;
	bool ok = true;

	memset(ti, 0xa5, sizeof(ti));
	ok &= kt_create(c, 0, 16, 1, 4, 16, &nid) == EPERM;
	ok &= nid == 0;	/* kt_create() passes out_pool_id = 0 */
	ok &= kt_destroy(c, id) == EPERM;
	ok &= kt_destroy(c, ~0u) == EPERM;
	ok &= kt_ioctl(c, KVPOOL_CTL_TENANT_SET, &t) == EPERM;
	ok &= t.tenant_id == 0 && t.uid == 4242;
	ok &= kt_ioctl(c, KVPOOL_CTL_TENANT_SET, &tid) == EPERM;
	ok &= kt_ioctl(c, KVPOOL_CTL_TENANT_LIST, &l) == EPERM;
	ok &= l.out_nr_tenants == 0xdeadbeef;
	ok &= ((unsigned char *)ti)[0] == 0xa5;
	ok &= kt_ioctl(c, KVPOOL_CTL_SET_WMARK, &w) == EPERM;
	ok &= kt_ioctl(c, KVPOOL_CTL_ARENA_SET, &as) == EPERM;
	/* Not even a bad struct is looked at. */
	ok &= kt_ioctl(c, KVPOOL_CTL_TENANT_SET, NULL) == EPERM;
	ok &= kt_ioctl(c, KVPOOL_CTL_TENANT_LIST, NULL) == EPERM;
	ok &= kt_ioctl(c, KVPOOL_CTL_SET_WMARK, NULL) == EPERM;
	ok &= kt_ioctl(c, KVPOOL_CTL_ARENA_SET, NULL) == EPERM;
	return ok;
}

/* Pool @id's tenant count and watermarks, as root sees them. */
static void ctl_pool_state(struct __test_metadata *_metadata, int ctl,
			   __u32 id, __u32 *nr_tenants, __u32 *low,
			   __u32 *high)
{
	struct kvpool_ctl_tenant_list l = {
		.size = sizeof(l), .pool_id = id,
		.entry_len = sizeof(struct kvpool_tenant_info),
	};
	struct kvpool_pressure p = { .size = sizeof(p) };
	int fd;

	ASSERT_EQ(0, kt_ioctl(ctl, KVPOOL_CTL_TENANT_LIST, &l));
	*nr_tenants = l.out_nr_tenants;
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, kt_ioctl(fd, KVPOOL_PRESSURE, &p));
	close(fd);
	*low = p.out_low_wmark;
	*high = p.out_high_wmark;
}

/*
 * A root process without CAP_SYS_ADMIN may open the control device (it is
 * the owner of a 0600 node) but every control op (CREATE, DESTROY,
 * TENANT_SET, TENANT_LIST, SET_WMARK) fails with EPERM and changes
 * nothing; pool ops need no capability.
 */
TEST_F(ctl, eperm_without_cap_sys_admin)
{
	__u32 nt0, low0, high0, nt1, low1, high1;
	int before, status;
	__u32 id;
	pid_t pid;

	ASSERT_EQ(0, ctl_create(self, 0, 64, 1, 4, 16, &id));
	ctl_pool_state(_metadata, self->ctl, id, &nt0, &low0, &high0);
	before = kt_count_pools();
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvpool_info info;
		__u32 nid = 0xdeadbeef;
		int c, p;

		CHILD_CHECK(kt_drop_sys_admin() == 0);
		/* The inherited control fd: the op is checked, not the open. */
		CHILD_CHECK(kt_create(self->ctl, 0, 16, 1, 4, 16, &nid) == EPERM);
		CHILD_CHECK(kt_destroy(self->ctl, id) == EPERM);
		CHILD_CHECK(ctl_all_eperm(self->ctl, id));
		c = kt_ctl_open();
		CHILD_CHECK(c >= 0);
		CHILD_CHECK(kt_create(c, 0, 16, 1, 4, 16, &nid) == EPERM);
		CHILD_CHECK(kt_destroy(c, id) == EPERM);
		CHILD_CHECK(kt_destroy(c, ~0u) == EPERM);
		CHILD_CHECK(ctl_all_eperm(c, id));
		p = kt_open_id(id, O_RDWR | O_CLOEXEC);
		CHILD_CHECK(p >= 0);
		CHILD_CHECK(kt_info(p, &info) == 0);
		CHILD_CHECK(info.out_pool_id == id);
		_exit(0);
	}
	status = wait_child(pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(before, kt_count_pools());
	/* No tenant was made or set, the watermarks are as they were. */
	ctl_pool_state(_metadata, self->ctl, id, &nt1, &low1, &high1);
	EXPECT_EQ(nt0, nt1);
	EXPECT_EQ(low0, low1);
	EXPECT_EQ(high0, high1);
	/* The pool the child tried to destroy is still there. */
	EXPECT_EQ(0, ctl_destroy(self, id));
}

/*
 * Without CAP_SYS_ADMIN, what is not a control op (a pool op, an unknown
 * number) on the control device is still ENOTTY: EPERM is "a control op
 * without CAP_SYS_ADMIN", ENOTTY "unknown ioctl number".
 */
TEST_F(ctl, enotty_without_cap_sys_admin)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char buf[256] = { 0 };
		struct kvpool_info info;
		int c;

		CHILD_CHECK(kt_drop_sys_admin() == 0);
		c = kt_ctl_open();
		CHILD_CHECK(c >= 0);
		*(__u32 *)buf = 64;
		/*
		 * The first unknown control number, a pool op number kept
		 * for later and the control block's last.
		 */
		CHILD_CHECK(kt_ioctl(c, _IO(KVPOOL_TYPE, KT_CTL_CMD_END),
				     buf) == ENOTTY);
		CHILD_CHECK(kt_ioctl(c, _IO(KVPOOL_TYPE,
					    KT_CTL_CMD_BASE - 1),
				     buf) == ENOTTY);
		CHILD_CHECK(kt_ioctl(c, _IO(KVPOOL_TYPE,
					    KT_AGENT_CMD_BASE - 1),
				     buf) == ENOTTY);
		/* The development series' CTL_CREATE: type 0xb7, 0xa0. */
		CHILD_CHECK(kt_ioctl(c, _IO(0xb7, 0xa0), buf) == ENOTTY);
		CHILD_CHECK(kt_info(c, &info) == ENOTTY);
		_exit(0);
	}
	status = wait_child(pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
}

/*
 * nobody (65534) cannot open the 0600 nodes (EACCES) and, with fds it
 * inherited from root, gets EPERM from control ops and service from the
 * pool.
 */
TEST_F(ctl, nobody)
{
	int status, pfd;
	__u32 id;
	pid_t pid;

	ASSERT_EQ(0, ctl_create(self, 0, 16, 1, 4, 16, &id));
	pfd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, pfd);
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvpool_handle h;
		__u32 nid;

		CHILD_CHECK(become_nobody() == 0);
		CHILD_CHECK(kt_ctl_open() == -1 && errno == EACCES);
		CHILD_CHECK(kt_open_id(id, O_RDWR | O_CLOEXEC) == -1 &&
			    errno == EACCES);
		CHILD_CHECK(kt_create(self->ctl, 0, 16, 1, 4, 16, &nid) == EPERM);
		CHILD_CHECK(kt_destroy(self->ctl, id) == EPERM);
		CHILD_CHECK(ctl_all_eperm(self->ctl, id));
		CHILD_CHECK(kt_row_alloc(pfd, 1, &h, NULL) == 0);
		CHILD_CHECK(kt_release1(pfd, h, NULL) == 0);
		_exit(0);
	}
	status = wait_child(pid);
	EXPECT_TRUE(KT_CHILD_OK(status)) TH_LOG("child status %#x", status);
	close(pfd);
	EXPECT_EQ(0, ctl_destroy(self, id));
}

/* Pool ops on the control device and control ops on a pool: ENOTTY. */
TEST_F(ctl, wrong_device_enotty)
{
	unsigned char buf[256] = { 0 };
	struct kvpool_ctl_create c = {
		.size = sizeof(c), .nr_pages = 4, .page_tokens = 1,
		.nr_rows = 2, .row_tokens = 4,
	};
	struct kvpool_ctl_destroy d = { .size = sizeof(d) };
	struct kvpool_stats st;
	struct kvpool_info info;
	__u32 id;
	int fd, before;

	EXPECT_EQ(ENOTTY, kt_info(self->ctl, &info));
	EXPECT_EQ(ENOTTY, kt_stats(self->ctl, &st));
	*(__u32 *)buf = 64;
	/* Past the last control op, and the numbers kept for later. */
	EXPECT_EQ(ENOTTY, kt_ioctl(self->ctl, _IO(KVPOOL_TYPE, KT_CTL_CMD_END),
				   buf));
	EXPECT_EQ(ENOTTY, kt_ioctl(self->ctl,
				   _IO(KVPOOL_TYPE, KT_CTL_CMD_BASE - 1), buf));
	EXPECT_EQ(ENOTTY, kt_ioctl(self->ctl,
				   _IO(KVPOOL_TYPE, KT_AGENT_CMD_BASE - 1), buf));
	EXPECT_EQ(ENOTTY, kt_ioctl(self->ctl, _IO(KVPOOL_TYPE, KT_CMD_LIMIT - 1),
				   buf));
	EXPECT_EQ(ENOTTY, kt_ioctl(self->ctl, _IO(0xb7, 0xa0), buf));
	EXPECT_EQ(ENOTTY, kt_ioctl(self->ctl,
				   _IOWR(KVPOOL_TYPE, KVPOOL_CMD_CTL_CREATE,
					 struct kvpool_ctl_create), &c));

	ASSERT_EQ(0, ctl_create(self, 0, 4, 1, 2, 4, &id));
	fd = kt_open_id(id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	before = kt_count_pools();
	EXPECT_EQ(ENOTTY, kt_ioctl(fd, KVPOOL_CTL_CREATE, &c));
	d.pool_id = id;
	EXPECT_EQ(ENOTTY, kt_ioctl(fd, KVPOOL_CTL_DESTROY, &d));
	EXPECT_EQ(before, kt_count_pools());
	close(fd);
}

/* Creates report distinct ids and each id is its pool. */
TEST_F(ctl, ids_distinct)
{
	__u32 ids[4];
	int i, j;

	for (i = 0; i < 4; i++) {
		struct kvpool_info info;
		int fd;

		ASSERT_EQ(0, ctl_create(self, 0, 4 + i, 1, 2, 4, &ids[i]));
		fd = kt_open_id(ids[i], O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, kt_info(fd, &info));
		EXPECT_EQ(ids[i], info.out_pool_id);
		EXPECT_EQ(4 + i, info.out_nr_pages);
		close(fd);
		for (j = 0; j < i; j++)
			EXPECT_NE(ids[j], ids[i]);
	}
}

/* The /dev/kvpoolN nodes there are, as a bitmap of N (N < 1024). */
static int dev_pools(unsigned char *map, size_t len)
{
	DIR *d = opendir("/dev");
	struct dirent *de;
	int n = 0;

	memset(map, 0, len);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char *end;
		unsigned long id;

		if (strncmp(de->d_name, "kvpool", 6) || de->d_name[6] < '0' ||
		    de->d_name[6] > '9')
			continue;
		id = strtoul(de->d_name + 6, &end, 10);
		if (*end || id >= len)
			continue;
		map[id] = 1;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * CTL_CREATE writes its struct back (out_pool_id) before the pool comes
 * to be: with the struct read-only it fails with EFAULT and no pool was
 * made, no /dev/kvpoolN, no sysfs folder. From a writable copy the same
 * struct then works.
 */
TEST_F(ctl, create_readonly_struct)
{
	static unsigned char map0[1024], map1[1024];
	struct kvpool_ctl_create *ro, copy;
	int pools0, devs0, i;
	struct kvpool_info info;
	int fd;

	pools0 = kt_count_pools();
	devs0 = dev_pools(map0, sizeof(map0));
	ASSERT_LE(0, pools0);
	ASSERT_LE(0, devs0);
	ro = mmap(NULL, KT_PAGE_SIZE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0, sizeof(*ro));
	ro->size = sizeof(*ro);
	ro->flags = KVPOOL_CREATE_RESERVE_ZERO;
	ro->nr_pages = 64;
	ro->page_tokens = 16;
	ro->nr_rows = 8;
	ro->row_tokens = 256;
	ro->out_pool_id = 0xdeadbeef;
	ASSERT_EQ(0, mprotect(ro, KT_PAGE_SIZE, PROT_READ));

	for (i = 0; i < 3; i++) {
		EXPECT_EQ(EFAULT, kt_ioctl(self->ctl, KVPOOL_CTL_CREATE, ro));
		EXPECT_EQ(pools0, kt_count_pools());
		EXPECT_EQ(devs0, dev_pools(map1, sizeof(map1)));
		EXPECT_EQ(0, memcmp(map0, map1, sizeof(map0)))
			TH_LOG("a /dev/kvpoolN came and stayed");
	}
	EXPECT_EQ(0xdeadbeef, ro->out_pool_id);

	memcpy(&copy, ro, sizeof(copy));
	ASSERT_EQ(0, kt_ioctl(self->ctl, KVPOOL_CTL_CREATE, &copy));
	ASSERT_GT(ARRAY_SIZE(self->ids), self->nids);
	self->ids[self->nids++] = copy.out_pool_id;
	EXPECT_EQ(pools0 + 1, kt_count_pools());
	EXPECT_EQ(0, map0[copy.out_pool_id]);
	fd = kt_open_id(copy.out_pool_id, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kt_info(fd, &info));
	EXPECT_EQ(copy.out_pool_id, info.out_pool_id);
	EXPECT_EQ(64, info.out_nr_pages);
	close(fd);
	munmap(ro, KT_PAGE_SIZE);
}

/* At most 64 pools (design.md); the 65th create is ENOSPC (header). */
TEST_F(ctl, pool_limit)
{
	int existing = kt_count_pools(), made = 0, ret = 0, i;
	__u32 id;

	ASSERT_LE(0, existing);
	ASSERT_GE(MAX_POOLS, existing);
	for (i = 0; i < MAX_POOLS + 2; i++) {
		ret = ctl_create(self, 0, 2, 1, 1, 2, &id);
		if (ret)
			break;
		made++;
	}
	EXPECT_EQ(MAX_POOLS, existing + made)
		TH_LOG("%d pools existed, %d made", existing, made);
	EXPECT_EQ(ENOSPC, ret);
	EXPECT_EQ(MAX_POOLS, kt_count_pools());
	/* Destroying one makes room for one. */
	if (made) {
		ASSERT_EQ(0, ctl_destroy(self, self->ids[self->nids - 1]));
		EXPECT_EQ(0, ctl_create(self, 0, 2, 1, 1, 2, &id));
	}
}

/*
 * nr_pages at its maximum is in range. Its page table is 8 bytes a page,
 * 1 GiB: success or ENOMEM are the documented outcomes (and no kernel
 * warning: the runner checks dmesg). Last, since it presses the guest's
 * memory.
 */
TEST_F_TIMEOUT(ctl, create_max_pages, 120)
{
	struct timespec t0, t1;
	__u32 id;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = ctl_create(self, KVPOOL_CREATE_RESERVE_ZERO, MAX_NR_PAGES, 1, 4,
			 16, &id);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Under TCG filling 2^27 pages' free list takes tens of seconds. */
	TH_LOG("create with %u pages: %d (%s) in %ld ms", MAX_NR_PAGES, ret,
	       strerror(ret), (long)((t1.tv_sec - t0.tv_sec) * 1000 +
				    (t1.tv_nsec - t0.tv_nsec) / 1000000));
	EXPECT_TRUE(ret == 0 || ret == ENOMEM);
	if (!ret) {
		struct kvpool_stats st;
		int fd = kt_open_id(id, O_RDWR | O_CLOEXEC);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, kt_stats(fd, &st));
		EXPECT_EQ(MAX_NR_PAGES - 1, st.out_free_pages);
		close(fd);
		EXPECT_EQ(0, ctl_destroy(self, id));
	}
}

TEST_HARNESS_MAIN
