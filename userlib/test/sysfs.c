// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * kvpool_pool_list(), kvpool_pool_status(), kvpool_pool_extra() and
 * kvpool_pool_gpu() against a sysfs tree laid
 * out as docs/design.md describes it: pools are devices of their own
 * class, /sys/class/kvpool/kvpoolN, and the control device a misc device,
 * /sys/class/misc/kvpool-control. The library under test is built with
 * KVPOOL_SYSFS_DIR (its /sys/class) pointing at FAKE_SYSFS, a folder this
 * test fills in (its control device is moved there too, for the arena
 * test; this one does not use it); nothing else in the library changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kvpool.h"
#include "kvp_expect.h"
#include "testfs.h"

#ifndef FAKE_SYSFS
#error "build with -DFAKE_SYSFS=... (the KVPOOL_SYSFS_DIR of the library)"
#endif

#define CLASS	FAKE_SYSFS "/kvpool"
#define MISC	FAKE_SYSFS "/misc"

/*
 * A pool whose every figure is distinct, so a figure read into the wrong
 * field shows: attribute i holds base + i.
 */
static const char *const attrs[] = {
	"pool_id", "nr_pages", "page_tokens", "nr_rows", "row_tokens",
	"create_flags", "free_pages", "row_pages", "slot_pages",
	"cache_evictable", "cache_pinned", "reserved_pages", "free_rows",
	"held_rows", "slot_rows", "reserved_rows", "nr_clients",
	"export_rows", "export_pages", "nr_tenants", "low_wmark", "high_wmark",
	"quarantine_pages",
};

/*
 * kvpool_pool_status() as a program built before struct kvpool_stats
 * grew calls it: the version of the first release, which writes no more
 * than the 104 bytes of that struct.
 */
int kvpool_pool_status_v1(unsigned int pool_id, struct kvpool_info *info,
			  struct kvpool_stats *stats);
__asm__(".symver kvpool_pool_status_v1,kvpool_pool_status@KVPOOL_1.0");

static void make_pool_in(const char *parent, unsigned int id,
			 unsigned int base)
{
	char dir[256];
	size_t i;

	snprintf(dir, sizeof(dir), "%s/kvpool%u", parent, id);
	mkdir_p(dir);
	for (i = 0; i < ARRAY_SIZE(attrs); i++)
		put_u32(dir, attrs[i], i ? base + (unsigned int)i : id);
	/* A real attribute directory has more than the figures. */
	put(dir, "dev", "10:123\n");
	put(dir, "uevent", "MAJOR=10\n");
}

static void make_pool(unsigned int id, unsigned int base)
{
	make_pool_in(CLASS, id, base);
}

static void test_not_loaded(void)
{
	unsigned int ids[4];

	rm_rf(FAKE_SYSFS);
	EXPECT_EQ(-ENODEV, kvpool_pool_list(ids, 4)) TH_LOG("no sysfs dir");
	mkdir_p(FAKE_SYSFS);
	mkdir_p(MISC);
	mkdir_p(MISC "/fuse");
	mkdir_p(MISC "/kvpoolx");
	EXPECT_EQ(-ENODEV, kvpool_pool_list(ids, 4)) TH_LOG("no kvpool");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(0, NULL, NULL))
		TH_LOG("status of a missing pool");

	/*
	 * The old layout, pools as misc devices, is not read: without the
	 * class folder the module is not loaded, whatever misc/ holds.
	 */
	make_pool_in(MISC, 0, 100);
	mkdir_p(MISC "/kvpool-control");
	EXPECT_EQ(-ENODEV, kvpool_pool_list(ids, 4))
		TH_LOG("pools in /sys/class/misc");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(0, NULL, NULL))
		TH_LOG("status of a pool in /sys/class/misc");

	/* Loaded with nr_pages=0: the class folder, empty, and no pool. */
	mkdir_p(CLASS);
	EXPECT_EQ(0, kvpool_pool_list(ids, 4)) TH_LOG("empty class");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(0, NULL, NULL))
		TH_LOG("status in an empty class");
}

static void test_list(void)
{
	unsigned int ids[8];
	int ret;

	make_pool(10, 1000);
	make_pool(2, 200);
	make_pool(0, 100);
	/* Not pools: leading zero, sign, suffix, overflow, the old place. */
	mkdir_p(CLASS "/kvpool01");
	mkdir_p(CLASS "/kvpool+3");
	mkdir_p(CLASS "/kvpool3a");
	mkdir_p(CLASS "/kvpool99999999999");
	mkdir_p(CLASS "/kvpool-control");
	make_pool_in(MISC, 7, 700);

	memset(ids, 0xff, sizeof(ids));
	ret = kvpool_pool_list(ids, 8);
	EXPECT_EQ(3, ret) TH_LOG("list: pools");
	EXPECT_TRUE(ids[0] == 0 && ids[1] == 2 && ids[2] == 10)
		TH_LOG("list not sorted: %u %u %u", ids[0], ids[1], ids[2]);
	EXPECT_EQ(0xffffffffU, ids[3]) TH_LOG("list wrote past the pools");

	memset(ids, 0xff, sizeof(ids));
	ret = kvpool_pool_list(ids, 2);
	EXPECT_EQ(3, ret) TH_LOG("short list");
	EXPECT_TRUE(ids[0] == 0 && ids[1] == 2 && ids[2] == 0xffffffffU)
		TH_LOG("short list: %u %u %u", ids[0], ids[1], ids[2]);
	EXPECT_EQ(3, kvpool_pool_list(NULL, 0)) TH_LOG("count only");
}

/* The first release's version of kvpool_pool_status() keeps to its size. */
static void test_status_v1(void)
{
	unsigned char old[sizeof(struct kvpool_stats)];
	struct kvpool_stats *o = (void *)old;

	memset(old, 0xa5, sizeof(old));
	EXPECT_EQ(0, kvpool_pool_status_v1(2, NULL, o));
	EXPECT_EQ(206, o->out_free_pages);
	EXPECT_EQ(0, o->out_tenant_max_rows);
	EXPECT_EQ(0xa5, old[104]) TH_LOG("the old version wrote past 104 bytes");
	EXPECT_EQ(0xa5, old[sizeof(old) - 1]);
}

static void test_status(void)
{
	struct kvpool_stats st;
	struct kvpool_info in;
	int ret;

	memset(&in, 0xff, sizeof(in));
	memset(&st, 0xff, sizeof(st));
	ret = kvpool_pool_status(2, &in, &st);
	EXPECT_EQ(0, ret) TH_LOG("status");
	EXPECT_TRUE(in.size == sizeof(in) && in.flags == 0)
		TH_LOG("info header");
	EXPECT_EQ(2, in.out_pool_id);
	EXPECT_TRUE(in.out_nr_pages == 201 && in.out_page_tokens == 202 &&
	      in.out_nr_rows == 203 && in.out_row_tokens == 204 &&
	      in.out_create_flags == 205) TH_LOG("geometry read wrong");
	EXPECT_TRUE(in.out_abi_version == 0 && in.out_features == 0 &&
	      in.out_max_batch == 0 && in.out_client_id == 0 &&
	      in.__reserved == 0)
		TH_LOG("fields sysfs does not have are not 0");
	EXPECT_TRUE(st.size == sizeof(st) && st.flags == 0)
		TH_LOG("stats header");
	EXPECT_TRUE(st.out_free_pages == 206 && st.out_row_pages == 207 &&
	      st.out_slot_pages == 208 && st.out_cache_evictable == 209 &&
	      st.out_cache_pinned == 210 && st.out_reserved_pages == 211 &&
	      st.out_free_rows == 212 && st.out_held_rows == 213 &&
	      st.out_slot_rows == 214 && st.out_reserved_rows == 215 &&
	      st.out_nr_clients == 216) TH_LOG("counts read wrong");
	EXPECT_TRUE(st.out_export_rows == 217 && st.out_export_pages == 218)
		TH_LOG("export counts read wrong");
	EXPECT_TRUE(st.out_client_rows == 0 && st.out_client_slots == 0 &&
	      st.out_client_pages == 0 && st.out_client_cache_pages == 0 &&
	      st.__reserved == 0) TH_LOG("client fields are not 0");
	EXPECT_TRUE(st.out_tenant_id == 0 && st.out_tenant_pages == 0 &&
	      st.out_tenant_rows == 0 && st.out_tenant_max_pages == 0 &&
	      st.out_tenant_min_pages == 0 && st.out_tenant_max_rows == 0)
		TH_LOG("tenant fields are not 0");

	EXPECT_EQ(222, st.out_quarantine_pages);
	EXPECT_EQ(0, st.__reserved2);
	test_status_v1();

	EXPECT_TRUE(kvpool_pool_status(10, NULL, &st) == 0 &&
		    st.out_nr_clients == 1016) TH_LOG("stats only");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(3, &in, &st))
		TH_LOG("missing pool");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(7, &in, &st))
		TH_LOG("a pool in /sys/class/misc read");

	/* The largest __u32 is fine; one more, or junk, is -EIO. */
	put(CLASS "/kvpool0", "nr_clients", "4294967295\n");
	EXPECT_TRUE(kvpool_pool_status(0, NULL, &st) == 0 &&
		    st.out_nr_clients == 4294967295U) TH_LOG("UINT32_MAX");
	put(CLASS "/kvpool0", "nr_clients", "4294967296\n");
	EXPECT_EQ(-EIO, kvpool_pool_status(0, NULL, &st)) TH_LOG("2^32");
	put(CLASS "/kvpool0", "nr_clients", "-1\n");
	EXPECT_EQ(-EIO, kvpool_pool_status(0, NULL, &st)) TH_LOG("-1");
	put(CLASS "/kvpool0", "nr_clients", "12 apples\n");
	EXPECT_EQ(-EIO, kvpool_pool_status(0, NULL, &st)) TH_LOG("junk");
	put(CLASS "/kvpool0", "nr_clients", "");
	EXPECT_EQ(-EIO, kvpool_pool_status(0, NULL, &st)) TH_LOG("empty");
	/* Info alone does not read the counts. */
	EXPECT_EQ(0, kvpool_pool_status(0, &in, NULL)) TH_LOG("info only");

	/* A module from before export: no export_* files, figures 0. */
	if (unlink(CLASS "/kvpool2/export_rows") ||
	    unlink(CLASS "/kvpool2/export_pages"))
		kvp_expect_die("unlink");
	memset(&st, 0xff, sizeof(st));
	ret = kvpool_pool_status(2, NULL, &st);
	EXPECT_EQ(0, ret) TH_LOG("older module");
	EXPECT_TRUE(st.out_export_rows == 0 && st.out_export_pages == 0 &&
		    st.out_nr_clients == 216) TH_LOG("older module: figures");
	/* ... unless the pool itself is gone. */
	if (unlink(CLASS "/kvpool2/pool_id"))
		kvp_expect_die("unlink");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(2, NULL, &st))
		TH_LOG("gone pool without export files");

	/* A pool destroyed under us: its files are gone. */
	if (unlink(CLASS "/kvpool0/nr_clients"))
		kvp_expect_die("unlink");
	EXPECT_EQ(-ENODEV, kvpool_pool_status(0, NULL, &st))
		TH_LOG("vanished attribute");
}

static void test_extra(void)
{
	struct kvpool_pool_extra x;
	size_t i;
	int ret;

	memset(&x, 0xff, sizeof(x));
	ret = kvpool_pool_extra(10, &x);
	EXPECT_EQ(0, ret) TH_LOG("extra");
	EXPECT_TRUE(x.nr_tenants == 1019 && x.low_wmark == 1020 &&
		    x.high_wmark == 1021)
		TH_LOG("extra read wrong: %u %u %u",
		       x.nr_tenants, x.low_wmark, x.high_wmark);
	for (i = 0; i < ARRAY_SIZE(x.__resv); i++)
		EXPECT_EQ(0, x.__resv[i]) TH_LOG("extra: __resv[%zu]", i);
	EXPECT_EQ(-ENODEV, kvpool_pool_extra(3, &x))
		TH_LOG("extra of a missing pool");
	EXPECT_EQ(-ENODEV, kvpool_pool_extra(7, &x))
		TH_LOG("extra of a pool in /sys/class/misc read");

	put(CLASS "/kvpool10", "low_wmark", "12 apples\n");
	EXPECT_EQ(-EIO, kvpool_pool_extra(10, &x)) TH_LOG("extra: junk");

	/* A module from before tenants and pressure: no such files. */
	if (unlink(CLASS "/kvpool10/nr_tenants") ||
	    unlink(CLASS "/kvpool10/low_wmark") ||
	    unlink(CLASS "/kvpool10/high_wmark"))
		kvp_expect_die("unlink");
	memset(&x, 0xff, sizeof(x));
	ret = kvpool_pool_extra(10, &x);
	EXPECT_EQ(-EOPNOTSUPP, ret) TH_LOG("extra, older module");
	EXPECT_EQ(0xffffffffU, x.nr_tenants) TH_LOG("extra wrote on failure");
	/* ... and the rest of such a pool still reads. */
	EXPECT_EQ(0, kvpool_pool_status(10, NULL, NULL))
		TH_LOG("older module: status failed");
	if (unlink(CLASS "/kvpool10/pool_id"))
		kvp_expect_die("unlink");
	EXPECT_EQ(-ENODEV, kvpool_pool_extra(10, &x))
		TH_LOG("extra of a gone pool");
}

/* A pool's gpu file: the PCI name of its GPU, or an empty line. */
static void test_gpu(void)
{
	uint32_t domain, devid;

	make_pool(20, 2000);
	make_pool(21, 2100);
	put(CLASS "/kvpool20", "gpu", "0000:3b:00.0\n");
	put(CLASS "/kvpool21", "gpu", "\n");

	domain = devid = 7;
	EXPECT_EQ(1, kvpool_pool_gpu(20, &domain, &devid)) TH_LOG("gpu");
	EXPECT_TRUE(domain == 0 && devid == 0x3b00)
		TH_LOG("gpu read wrong: %#x %#x", domain, devid);
	EXPECT_EQ(1, kvpool_pool_gpu(20, NULL, NULL)) TH_LOG("gpu, no out");
	domain = devid = 7;
	EXPECT_EQ(0, kvpool_pool_gpu(21, &domain, &devid)) TH_LOG("no gpu");
	EXPECT_TRUE(domain == 0 && devid == 0) TH_LOG("no gpu: not zeroed");

	/* A domain above 0xffff has more digits; no newline is fine too. */
	put(CLASS "/kvpool20", "gpu", "10000:e1:1f.7\n");
	EXPECT_EQ(1, kvpool_pool_gpu(20, &domain, &devid));
	EXPECT_TRUE(domain == 0x10000 && devid == 0xe1ff)
		TH_LOG("gpu read wrong: %#x %#x", domain, devid);
	put(CLASS "/kvpool21", "gpu", "");
	EXPECT_EQ(0, kvpool_pool_gpu(21, &domain, &devid)) TH_LOG("empty");

	/* Anything else is -EIO, and nothing is written. */
	put(CLASS "/kvpool20", "gpu", "0000:3b:00.0 \n");
	domain = devid = 7;
	EXPECT_EQ(-EIO, kvpool_pool_gpu(20, &domain, &devid)) TH_LOG("blank");
	EXPECT_TRUE(domain == 7 && devid == 7) TH_LOG("written on -EIO");
	put(CLASS "/kvpool20", "gpu", "3b:00.0\n\n");
	EXPECT_EQ(-EIO, kvpool_pool_gpu(20, &domain, &devid)) TH_LOG("2 lines");
	put(CLASS "/kvpool20", "gpu", "none\n");
	EXPECT_EQ(-EIO, kvpool_pool_gpu(20, &domain, &devid)) TH_LOG("junk");

	/* A module before GPUs: no gpu file, no GPU. */
	if (unlink(CLASS "/kvpool21/gpu"))
		kvp_expect_die("unlink");
	domain = devid = 7;
	EXPECT_EQ(0, kvpool_pool_gpu(21, &domain, &devid))
		TH_LOG("older module");
	EXPECT_TRUE(domain == 0 && devid == 0) TH_LOG("older module: not 0");
	/* ... unless the pool itself is gone; or was never there. */
	if (unlink(CLASS "/kvpool21/pool_id"))
		kvp_expect_die("unlink");
	EXPECT_EQ(-ENODEV, kvpool_pool_gpu(21, &domain, &devid))
		TH_LOG("gone pool");
	EXPECT_EQ(-ENODEV, kvpool_pool_gpu(22, &domain, &devid))
		TH_LOG("missing pool");
	EXPECT_EQ(-ENODEV, kvpool_pool_gpu(7, &domain, &devid))
		TH_LOG("gpu of a pool in /sys/class/misc read");
}

int main(void)
{
	test_not_loaded();
	test_list();
	test_status();
	test_extra();
	test_gpu();
	rm_rf(FAKE_SYSFS);

	return kvp_expect_done("sysfs");
}
