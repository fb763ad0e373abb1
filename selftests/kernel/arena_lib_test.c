// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool selftests: the arena through libkvpool and kvpoolctl, as a server
 * and an administrator use it, against the module.
 *
 * arena_test checks the ABI with raw ioctls; this one checks that the
 * library's calls mean what their man pages say on a real kernel:
 * kvpoolctl arena create and show (exit codes, the chunks it made),
 * kvpool_arena_create_host() with pages that are not a divisor of the CPU
 * page, kvpool_arena_map() in two clients of one process (two mappings,
 * one memory: a row exported by one reads the same in the other), the
 * layer-major view over the same bytes, and a mapping that outlives its
 * client and its pool.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "kvptest_tenant.h"

#include <kvpool.h>

#define KVPOOLCTL	KVP_TOPDIR "/tools/kvpoolctl/kvpoolctl"

FIXTURE(alib) {
	struct kt_pool pool;
	char path[64];
};

FIXTURE_SETUP(alib)
{
	kt_pool_init(_metadata, &self->pool, KVPOOL_CREATE_RESERVE_ZERO,
		     1001, 16, 9, 2048);
	kt_dev_path(self->path, sizeof(self->path), self->pool.id);
}

FIXTURE_TEARDOWN(alib)
{
	kt_pool_fini(_metadata, &self->pool);
}

/* Runs kvpoolctl with @args (split at spaces); output to @out. */
#define kvpoolctl(args, out, len) \
	kt_run_output(out, len, "%s %s", KVPOOLCTL, args)

/* kvpoolctl makes the chunks it is asked for; show reports them; once only. */
TEST_F(alib, kvpoolctl_create_show)
{
	struct kvpool_arena a;
	char args[128], out[4096];
	int fd;

	snprintf(args, sizeof(args),
		 "arena create %u --host --page-bytes 8K --chunks 3",
		 self->pool.id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	fd = kt_pool_open(_metadata, &self->pool);
	ASSERT_EQ(0, kt_arena_info(fd, &a));
	EXPECT_EQ(KVPOOL_ARENA_HOST, a.out_kind);
	EXPECT_EQ(3, a.out_nr_chunks);
	EXPECT_EQ(8192, a.out_page_bytes);
	EXPECT_LE(1001ULL * 8192, a.out_bytes);
	EXPECT_GT(1001ULL * 8192 + 8192, a.out_bytes);

	snprintf(args, sizeof(args), "arena show --json %u", self->pool.id);
	ASSERT_EQ(0, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"kind\": \"host\"")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"page_bytes\": 8192")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"index\": 2")) TH_LOG("%s", out);

	/* EEXIST is "refused", kvpoolctl(8)'s 7, and nothing changes. */
	snprintf(args, sizeof(args), "arena create %u --host --page-bytes 4K",
		 self->pool.id);
	EXPECT_EQ(7, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, kt_arena_info(fd, &a));
	EXPECT_EQ(3, a.out_nr_chunks);
	EXPECT_EQ(8192, a.out_page_bytes);
}

/*
 * The layer-major view of 3 layers (2 KiB slices of 6 KiB pages) over the
 * same bytes: layer 2's slice of page 1 is where the formula says, and
 * the same memory in both mappings.
 */
static void check_layers(struct __test_metadata *_metadata,
			 const struct kvpool_arena_view *v1,
			 const struct kvpool_arena_view *v2)
{
	__u64 total = v1->bytes / v1->page_bytes;
	unsigned char *l1 = kvpool_layer_addr(v1, 3, KVPOOL_LAYOUT_LAYER_MAJOR,
					      2, 1);
	unsigned char *l2 = kvpool_layer_addr(v2, 3, KVPOOL_LAYOUT_LAYER_MAJOR,
					      2, 1);

	ASSERT_NE(NULL, l1);
	ASSERT_NE(NULL, l2);
	EXPECT_EQ((unsigned char *)v1->base + 2 * 2048 * total + 2048, l1);
	l1[0] = 0x77;
	EXPECT_EQ(0x77, l2[0]);
	/* 5 layers do not divide a 6 KiB page. */
	EXPECT_EQ(NULL, kvpool_layer_addr(v1, 5, KVPOOL_LAYOUT_PAGE_MAJOR, 0,
					  0));
}

/*
 * 6 KiB pages: the library's unit is lcm(6144, 4096) = 12288, two pages;
 * every chunk is a whole number of units and together they cover the
 * pool. Two clients of this process map it at two addresses: a row written
 * through one, exported and imported by the other, reads the same there.
 */
TEST_F(alib, two_mappings_one_memory)
{
	struct kvpool_arena_view v1 = { 0 }, v2 = { 0 };
	struct kvpool_row_query q = { 0 };
	struct kvpool_extend_entry e = { 0 };
	struct kvpool_handle h, h2;
	struct kvpool *k1, *k2;
	__u32 err = 0, pages[8], pages2[8], i;
	int xfd;

	ASSERT_EQ(0, kvpool_arena_create_host(self->pool.id, 6144, 4, &err))
		TH_LOG("error index %u", err);
	ASSERT_EQ(0, kvpool_open(self->path, &k1));
	ASSERT_EQ(0, kvpool_open(self->path, &k2));
	ASSERT_EQ(0, kvpool_arena_map(k1, &v1));
	ASSERT_EQ(0, kvpool_arena_map(k2, &v2));
	EXPECT_NE(v1.base, v2.base);
	EXPECT_EQ(6144, v1.page_bytes);
	EXPECT_EQ(1001, v1.nr_pages);
	EXPECT_EQ(4, v1.nr_chunks);
	EXPECT_LE(1001ULL * 6144, v1.bytes);
	EXPECT_EQ(0, v1.bytes % 12288);
	EXPECT_EQ(v1.bytes, v2.bytes);

	ASSERT_EQ(1, kvpool_alloc_rows(k1, &h, 1, NULL));
	e.handle = h;
	e.new_len = 8 * 16;
	ASSERT_EQ(8, kvpool_extend(k1, &e, 1, pages, 8, NULL));
	for (i = 0; i < 8; i++)
		memset(kvpool_page_addr(&v1, pages[i]), 0x40 + i, 6144);
	ASSERT_EQ(0, kvpool_commit(k1, &(struct kvpool_len_entry){
					   .handle = h, .len = 8 * 16 }, 1,
				   NULL));
	xfd = kvpool_export(k1, h);
	ASSERT_LE(0, xfd);
	ASSERT_EQ(8, kvpool_import(k2, xfd, &h2));
	close(xfd);
	ASSERT_EQ(8, kvpool_row_query(k2, h2, pages2, 8, &q));
	ASSERT_EQ(8, q.out_nr_pages);
	for (i = 0; i < 8; i++) {
		const unsigned char *p = kvpool_page_addr(&v2, pages2[i]);

		EXPECT_EQ(pages[i], pages2[i]);
		EXPECT_EQ(0x40 + i, p[0]);
		EXPECT_EQ(0x40 + i, p[6143]);
	}
	/* A page id that is not one names nothing. */
	EXPECT_EQ(NULL, kvpool_page_addr(&v2, 1001));

	check_layers(_metadata, &v1, &v2);

	EXPECT_EQ(8, kvpool_release(k2, &h2, 1, NULL));
	EXPECT_EQ(0, kvpool_arena_unmap(&v1));
	EXPECT_EQ(NULL, v1.base);
	EXPECT_EQ(0, kvpool_arena_unmap(&v2));
	kvpool_close(k1);
	kvpool_close(k2);
}

/* No arena: ENODATA, nothing mapped. */
TEST_F(alib, no_arena)
{
	struct kvpool_arena_view v;
	struct kvpool *k;

	memset(&v, 0xa5, sizeof(v));
	ASSERT_EQ(0, kvpool_open(self->path, &k));
	EXPECT_EQ(-ENODATA, kvpool_arena_map(k, &v));
	EXPECT_EQ(NULL, v.base);
	EXPECT_EQ(0, v.bytes);
	kvpool_close(k);
}

/* A mapping outlives its client and its pool (the memory goes with it). */
TEST_F(alib, mapping_outlives_pool)
{
	struct kvpool_arena_view v = { 0 };
	struct kvpool *k;
	char path[64];
	__u32 id;

	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, 64, 16, 4, 64, &id));
	kt_dev_path(path, sizeof(path), id);
	ASSERT_EQ(0, kvpool_arena_create_host(id, 4096, 1, NULL));
	ASSERT_EQ(0, kvpool_open(path, &k));
	ASSERT_EQ(0, kvpool_arena_map(k, &v));
	memcpy(kvpool_page_addr(&v, 63), "still here", 11);
	kvpool_close(k);
	ASSERT_EQ(0, kt_destroy(self->pool.ctl, id));
	EXPECT_STREQ("still here", (char *)v.base + 63 * 4096);
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
}

/*
 * The GPU's row as libdrm gives it: its render node, which exists, and
 * the driver bound to it.
 */
static void expect_drm_row(struct __test_metadata *_metadata,
			   const char *out)
{
	const char *r = strstr(out, "\"render_node\": \"/dev/dri/renderD");
	char node[64] = "";

	EXPECT_NE(NULL, strstr(out, "\"source\": \"drm\"")) TH_LOG("%s", out);
	ASSERT_NE(NULL, r) TH_LOG("%s", out);
	ASSERT_EQ(1, sscanf(r, "\"render_node\": \"%63[^\"]\"", node));
	EXPECT_EQ(0, access(node, F_OK)) TH_LOG("%s", node);
	EXPECT_NE(NULL, strstr(out, "\"vendor_id\": \"1af4\""))
		TH_LOG("virtio's vendor id: %s", out);
	EXPECT_NE(NULL, strstr(out, "\"driver\": \"virtio-pci\""))
		TH_LOG("%s", out);
}

/*
 * What the VM did with its virtio GPU's DRM driver (guest-init.sh):
 * true if it loaded it, false if the kernel has no modules to load it
 * from (6.1-debug, built here without DRM); a failed load fails.
 */
static bool vm_gpu_driver(struct __test_metadata *_metadata)
{
	char txt[512] = "";

	EXPECT_EQ(0, kt_read_text("/run/kvpool-vm/gpu-driver", txt,
				  sizeof(txt)))
		TH_LOG("not in the test VM (tools/vm/vm-run.sh)?");
	EXPECT_NE(0, strncmp(txt, "failed", 6)) TH_LOG("%s", txt);
	return !strcmp(txt, "virtio_gpu\n");
}

/*
 * The VM's display controller (tools/vm/vm-run.sh: a virtio GPU at
 * 0000:00:10.0) as kvpoolctl gpus and create --gpu see it. With its DRM
 * driver loaded, libdrm finds it ("drm") with its render node and
 * driver; on a kernel without DRM, sysfs does ("pci", no render node).
 * After a create --gpu the pool is listed under it; the library reads
 * the pool's GPU back; an address with no device exits 7.
 */
TEST_F(alib, kvpoolctl_gpus)
{
	char out[4096], args[160], want[64];
	__u32 id = ~0u, dom = 1, devid = 1;
	bool drm = vm_gpu_driver(_metadata);
	int ret;

	ASSERT_EQ(0, kvpoolctl("gpus --json", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"address\": \"0000:00:10.0\""))
		TH_LOG("%s", out);
	if (drm)
		expect_drm_row(_metadata, out);
	else
		EXPECT_NE(NULL, strstr(out, "\"source\": \"pci\""))
			TH_LOG("%s", out);

	ASSERT_EQ(0, kvpoolctl("create --pages 64 --page-tokens 16 --rows 4 --row-tokens 64 --gpu 0000:00:10.0",
			       out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(1, sscanf(out, "%u", &id)) TH_LOG("%s", out);
	ret = kvpool_pool_gpu(id, &dom, &devid);
	EXPECT_EQ(1, ret);
	EXPECT_EQ(0, dom);
	EXPECT_EQ(0x10 << 3, devid);
	ASSERT_EQ(0, kvpoolctl("gpus --json", out, sizeof(out)));
	snprintf(want, sizeof(want), "\"pools\": [%u]", id);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_EQ(0, kt_destroy(self->pool.ctl, id));

	/* No device there: "no PCI device", kvpoolctl(8)'s 7. */
	snprintf(args, sizeof(args), "%s",
		 "create --pages 64 --page-tokens 16 --rows 4 --row-tokens 64 --gpu 0000:00:1f.7");
	EXPECT_EQ(7, kvpoolctl(args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "no PCI device")) TH_LOG("%s", out);
}

/*
 * What mapping costs a client: 256 MiB in 16 chunks, mapped and unmapped
 * 50 times. A figure for the record (printed), not a check: the memory
 * is the same after every map.
 */
TEST_F(alib, map_time)
{
	struct kvpool_arena_view v = { 0 };
	struct timespec t0, t1;
	struct kvpool *k;
	char path[64];
	double us;
	__u32 id;
	int i;

	ASSERT_EQ(0, kt_create(self->pool.ctl, 0, 65536, 16, 4, 64, &id));
	kt_dev_path(path, sizeof(path), id);
	ASSERT_EQ(0, kvpool_arena_create_host(id, 4096, 16, NULL));
	ASSERT_EQ(0, kvpool_open(path, &k));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, kvpool_arena_map(k, &v));
		((volatile char *)v.base)[(size_t)i * 4096] = (char)i;
		ASSERT_EQ(0, kvpool_arena_unmap(&v));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
	     1e3 / 50;
	ksft_print_msg("arena map+unmap, 256 MiB in 16 chunks: %.1f us a client\n",
		       us);
	ASSERT_EQ(0, kvpool_arena_map(k, &v));
	for (i = 0; i < 50; i++)
		EXPECT_EQ((char)i, ((char *)v.base)[(size_t)i * 4096]);
	EXPECT_EQ(0, kvpool_arena_unmap(&v));
	kvpool_close(k);
	EXPECT_EQ(0, kt_destroy(self->pool.ctl, id));
}

TEST_HARNESS_MAIN
