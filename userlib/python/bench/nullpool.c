// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * nullpool: an LD_PRELOAD stand-in for a kvpool device that costs next to
 * nothing, for timing what the Python binding adds to libkvpool natively.
 *
 * The test VMs run under QEMU's TCG, which slows the interpreter far more
 * than the kernel's ioctl path, so a Python-vs-C figure from there says
 * little about a real host. Here both sides run natively and reach the
 * same trivial "kernel": ioctl(2) on a descriptor of /dev/null answers the
 * kvpool ioctls a decode step needs (INFO, STATS, ROW_ALLOC, EXTEND,
 * COMMIT, TRIM, RELEASE) from a few arrays, without a system call. The
 * C loop and the Python loop pay the same for it, so their difference is
 * the binding's own cost. It checks nothing and models no pool: it is a
 * timing rig, never a test double of the ABI's rules.
 *
 *   make -C userlib/python/bench
 *   LD_PRELOAD=userlib/python/bench/libnullpool.so \
 *	python3 -m kvpool.bench --path /dev/null
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/kvpool.h>

#define NP_ROWS		4096
#define NP_BATCH	4096
#define NP_PAGES	(1U << 26)

static int (*real_ioctl)(int, unsigned long, ...);
static uint32_t np_len[NP_ROWS];	/* allocated tokens per row */
static uint32_t np_gen[NP_ROWS];
static uint32_t np_next_row = 1, np_next_page = 1;

static int np_is_null(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(1, 3);
}

static int np_fail(int err)
{
	errno = err;
	return -1;
}

static int np_answer(unsigned long cmd, void *arg)
{
	switch (cmd) {
	case KVPOOL_INFO: {
		struct kvpool_info *i = arg;

		i->out_abi_version = KVPOOL_ABI_VERSION;
		i->out_features = KVPOOL_FEAT_ROWS | KVPOOL_FEAT_EXTEND;
		i->out_nr_pages = NP_PAGES;
		i->out_page_tokens = 1;
		i->out_nr_rows = NP_ROWS;
		i->out_row_tokens = 1U << 24;
		i->out_max_batch = NP_BATCH;
		return 0;
	}
	case KVPOOL_STATS:
		return 0;
	case KVPOOL_ROW_ALLOC: {
		struct kvpool_row_alloc *a = arg;
		struct kvpool_handle *h = (void *)(uintptr_t)a->handles;

		for (uint32_t k = 0; k < a->count; k++) {
			uint32_t r = np_next_row++ % NP_ROWS;

			if (!r)
				r = np_next_row++ % NP_ROWS;
			np_len[r] = 0;
			h[k].req_pool_idx = r;
			h[k].generation = ++np_gen[r];
		}
		return 0;
	}
	case KVPOOL_EXTEND: {
		struct kvpool_extend *x = arg;
		struct kvpool_extend_entry *e = (void *)(uintptr_t)x->entries;
		uint32_t *pages = (void *)(uintptr_t)x->pages, n = 0;

		for (uint32_t k = 0; k < x->count; k++) {
			uint32_t r = e[k].handle.req_pool_idx % NP_ROWS;
			uint32_t add = e[k].new_len - np_len[r];

			if (e[k].new_len < np_len[r])
				return np_fail(EINVAL);
			if (n + add > x->pages_cap)
				return np_fail(ENOBUFS);
			for (uint32_t p = 0; p < add; p++)
				pages[n++] = np_next_page++ % NP_PAGES;
			np_len[r] = e[k].new_len;
			e[k].out_nr_new = add;
		}
		x->out_nr_pages = n;
		return 0;
	}
	case KVPOOL_COMMIT:
	case KVPOOL_TRIM:
	case KVPOOL_RELEASE: {
		struct kvpool_batch *b = arg;

		b->out_nr_pages = 0;
		return 0;
	}
	default:
		return np_fail(ENOTTY);
	}
}

int ioctl(int fd, unsigned long cmd, ...)
{
	static int null_fd = -1;
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (_IOC_TYPE(cmd) == KVPOOL_TYPE &&
	    (fd == null_fd || (cmd == KVPOOL_INFO && np_is_null(fd)))) {
		if (cmd == KVPOOL_INFO)
			null_fd = fd;
		return np_answer(cmd, arg);
	}
	if (!real_ioctl)
		real_ioctl = (int (*)(int, unsigned long, ...))
			dlsym(RTLD_NEXT, "ioctl");
	return real_ioctl(fd, cmd, arg);
}
