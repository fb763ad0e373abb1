/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * Files for the tests that lay out a fake sysfs (sysfs, arena): the
 * library under test is built with its sysfs root in a folder they own.
 * A failure to write one is the test's own (kvp_expect_die()).
 */
#ifndef KVP_TEST_TESTFS_H
#define KVP_TEST_TESTFS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "kvp_expect.h"

static inline void mkdir_p(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		kvp_expect_die(path);
}

static inline void put(const char *dir, const char *name, const char *val)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		kvp_expect_die(path);
	fputs(val, f);
	if (fclose(f))
		kvp_expect_die(path);
}

static inline void put_u32(const char *dir, const char *name,
			   unsigned int val)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u\n", val);
	put(dir, name, buf);
}

static inline void rm_rf(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		kvp_expect_die(cmd);
}

#endif /* KVP_TEST_TESTFS_H */
