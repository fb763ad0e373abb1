// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool-bench, kernel side: libkvpool on /dev/kvpoolN, a pool made for
 * each workload through /dev/kvpool-control (--create, root) and
 * destroyed after it. Also the null call: the cheapest way into the
 * driver's ioctl handler and out again.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bench.h"

/*
 * An ioctl number of kvpool's type past every op: kvpd_dispatch() answers
 * ENOTTY on its first test, before it reads the argument or counts the
 * caller. What it costs is the syscall, the VFS's ioctl path and the
 * driver's entry and exit.
 */
#define KB_NULL_IOCTL	_IO(KVPOOL_TYPE, 0xff)

static struct kvpool *kp;
static unsigned int pool_id;
static bool created;

bool kb_kernel_probe(bool create, const char **why)
{
	if (access(KVPOOL_CONTROL_PATH, F_OK)) {
		*why = "not loaded";
		return false;
	}
	if (!create) {
		*why = "skipped (needs --create, as root)";
		return false;
	}
	return true;
}

int kb_kernel_fd(void)
{
	return kp ? kvpool_fd(kp) : -1;
}

unsigned int kb_kernel_pool_id(void)
{
	return pool_id;
}

int kb_null_call(int fd)
{
	if (ioctl(fd, KB_NULL_IOCTL, 0) != -1)
		return -EPROTO;
	return errno == ENOTTY ? 0 : -errno;
}

u64 kb_null_round(int fd, u32 n)
{
	u64 t0 = kb_ns();
	u32 i;

	for (i = 0; i < n; i++)
		ioctl(fd, KB_NULL_IOCTL, 0);
	return kb_ns() - t0;
}

static void k_teardown(void);

static int k_setup(const struct kb_geom *g)
{
	struct kvpool_pool_params pp = {
		.nr_pages = g->nr_pages,
		.page_tokens = g->page_tokens,
		.nr_rows = g->nr_rows,
		.row_tokens = g->row_tokens,
	};
	char path[32];
	int ret;

	ret = kvpool_pool_create(&pp, &pool_id);
	if (ret < 0) {
		fprintf(stderr, "kvpool-bench: kernel: creating a pool of %u pages: %s%s\n",
			g->nr_pages, strerror(-ret),
			ret == -EPERM || ret == -EACCES ? " (root?)" : "");
		return ret;
	}
	created = true;
	snprintf(path, sizeof(path), "/dev/kvpool%u", pool_id);
	ret = kvpool_open(path, &kp);
	if (ret < 0) {
		fprintf(stderr, "kvpool-bench: kernel: opening %s: %s\n", path,
			strerror(-ret));
		k_teardown();
	}
	return ret;
}

static void k_teardown(void)
{
	int ret;

	kvpool_close(kp);
	kp = NULL;
	if (!created)
		return;
	created = false;
	ret = kvpool_pool_destroy(pool_id);
	if (ret < 0)
		kb_die("kernel: destroying pool %u: %s", pool_id,
		       kvpool_strerror(ret));
}

static int k_alloc_rows(struct kvpool_handle *h, u32 n)
{
	return kvpool_alloc_rows(kp, h, n, NULL);
}

static int k_extend(struct kvpool_extend_entry *e, u32 n, u32 *pages,
		    u32 pages_cap)
{
	return kvpool_extend(kp, e, n, pages, pages_cap, NULL);
}

static int k_commit(const struct kvpool_len_entry *e, u32 n)
{
	return kvpool_commit(kp, e, n, NULL);
}

static int k_release(const struct kvpool_handle *h, u32 n)
{
	return kvpool_release(kp, h, n, NULL);
}

static int k_to_slot(struct kvpool_handle h, u64 session)
{
	return kvpool_to_slot(kp, h, session);
}

static int k_from_slot(u64 session, struct kvpool_handle *h)
{
	return kvpool_from_slot(kp, session, h);
}

const struct kb_side kb_kernel_side = {
	.name = "kernel",
	.setup = k_setup,
	.teardown = k_teardown,
	.alloc_rows = k_alloc_rows,
	.extend = k_extend,
	.commit = k_commit,
	.release = k_release,
	.to_slot = k_to_slot,
	.from_slot = k_from_slot,
};
