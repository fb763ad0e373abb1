/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * count_fds() for the tests that check a call leaves no descriptor
 * behind (fdpass, arena).
 */
#ifndef KVP_TEST_FDCOUNT_H
#define KVP_TEST_FDCOUNT_H

#include <dirent.h>

#include "kvp_expect.h"

/* How many descriptors this process has open. */
static inline int count_fds(void)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir("/proc/self/fd");
	if (!dir)
		kvp_expect_die("/proc/self/fd");
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

#endif /* KVP_TEST_FDCOUNT_H */
