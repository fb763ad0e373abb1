// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * kvpool_strerror(): every errno of the uapi's errno table has kvpool's own
 * text, the sign does not matter, and anything else (EOVERFLOW, no longer
 * in the table, included) falls back to strerror(3). ABI 3 added EINTR
 * and EIO (an agent arena's map). So has ELIBACC, the
 * library's own errno for a CUDA arena with no CUDA driver to load.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kvpool.h"
#include "kvp_expect.h"

/* The "General ioctl format" table of <linux/kvpool.h>, in its order. */
static const int uapi_errnos[] = {
	ENOTTY, EFAULT, EINVAL, E2BIG, EOPNOTSUPP, ENOENT, ESTALE, ENOSPC,
	EDQUOT, ENOBUFS, EEXIST, EALREADY, EBUSY, ENOMEM, EPERM, EMFILE,
	EBADF, EXDEV, ENODEV, EAGAIN, EINTR, EIO, ENFILE, ENXIO, ENODATA,
	/* not the kernel's: the library's own */
	ELIBACC,
};

/*
 * What each text must say for the errnos whose meaning this ABI changed:
 * a future generation is ENOENT, VERIFY needs CAP_SYS_ADMIN, DONATE after
 * SWA_FREE is EINVAL, EXPORT can run out of descriptors, an element length
 * can be E2BIG, opening a pool while the module loads is ENODEV, and a
 * pool's GPU address with no device is ENXIO, with no display controller
 * EINVAL.
 */
static const struct {
	int err;
	const char *word;
} must_say[] = {
	{ ENOENT, "never issued" },
	/* ABI 3: the GPU agent and one owner per chunk. */
	{ EAGAIN, "kvpool-gpud" },
	{ EBUSY, "chunk file" },
	{ EIO, "GPU agent" },
	/* ENOENT from open() is a missing node: not a row's error. */
	{ ENOENT, "no such device node" },
	{ EACCES, "file mode" },
	{ EPERM, "CAP_SYS_ADMIN" },
	{ ESTALE, "older generation" },
	{ EPERM, "verify" },
	{ EINVAL, "element length" },
	{ EINVAL, "donate" },
	{ E2BIG, "element" },
	{ EMFILE, "export" },
	{ ENODEV, "still loading" },
	{ EAGAIN, "from_slot" },
	{ ENFILE, "file table" },
	{ ENODATA, "arena" },
	{ EEXIST, "arena" },
	{ ENXIO, "PCI device" },
	{ EINVAL, "display controller" },
	{ ELIBACC, "CUDA driver" },
	/* ABI 4: chunk budgets, and mmap() of a pool file. */
	{ ENODATA, "budget" },
	{ EBUSY, "budget" },
	{ ENOSPC, "floors" },
	{ ENODEV, "mmap" },
};

int main(void)
{
	const char *s;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(uapi_errnos); i++) {
		int e = uapi_errnos[i];
		char generic[256];

		/* strerror's buffer may be reused: keep a copy. */
		snprintf(generic, sizeof(generic), "%s", strerror(e));
		s = kvpool_strerror(-e);
		EXPECT_TRUE(s && *s) TH_LOG("errno %d: no text", e);
		EXPECT_EQ(s, kvpool_strerror(e))
			TH_LOG("errno %d: sign matters", e);
		EXPECT_TRUE(strcmp(s, generic))
			TH_LOG("errno %d: no kvpool text: %s", e, s);
	}

	for (i = 0; i < ARRAY_SIZE(must_say); i++) {
		s = kvpool_strerror(must_say[i].err);
		EXPECT_TRUE(strstr(s, must_say[i].word))
			TH_LOG("errno %d: '%s' does not say '%s'",
			       must_say[i].err, s, must_say[i].word);
	}

	/* Never returned by any op: not kvpool's any more. */
	EXPECT_EQ(0, strcmp(kvpool_strerror(-EOVERFLOW), strerror(EOVERFLOW)))
		TH_LOG("EOVERFLOW still has a kvpool text");

	EXPECT_EQ(0, strcmp(kvpool_strerror(0), "success"))
		TH_LOG("0 is not success");
	/* One no kvpool op gives (EINTR is the agent arena's since ABI 3). */
	EXPECT_EQ(0, strcmp(kvpool_strerror(ETIMEDOUT), strerror(ETIMEDOUT)))
		TH_LOG("ETIMEDOUT does not fall back to strerror");
	s = kvpool_strerror(INT_MIN);
	EXPECT_TRUE(s && *s) TH_LOG("INT_MIN: no text");
	s = kvpool_strerror(100000);
	EXPECT_TRUE(s && *s) TH_LOG("100000: no text");

	return kvp_expect_done("strerror");
}
