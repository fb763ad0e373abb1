// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: what sysfs says of the pools, for callers with no pool fd:
 * the list of pools, a pool's geometry and counters, its tenants and
 * watermarks, and its GPU.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * sysfs's class folder: the pools are devices of their own class,
 * /sys/class/kvpool/kvpoolN; a test build may point it elsewhere. The
 * class folder exists from the module's load to its unload, pools or no
 * pools, so it alone says whether the module is there (the control device
 * is a misc device, /sys/class/misc/kvpool-control, and is not looked at).
 */
#ifndef KVPOOL_SYSFS_DIR
#define KVPOOL_SYSFS_DIR	"/sys/class"
#endif
#define KVPOOL_CLASS_DIR	KVPOOL_SYSFS_DIR "/kvpool"
#define KVPOOL_DEV_PREFIX	"kvpool"

/*
 * Parse "kvpoolN" (N decimal, no sign, no leading zero unless N is 0) into
 * *id. Anything else in the class folder is not a pool.
 */
static bool kvp_parse_pool_name(const char *name, unsigned int *id)
{
	const char *p = name + strlen(KVPOOL_DEV_PREFIX);
	unsigned long v = 0;

	if (strncmp(name, KVPOOL_DEV_PREFIX, strlen(KVPOOL_DEV_PREFIX)))
		return false;
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1]))
		return false;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > UINT_MAX)
			return false;
	}
	*id = (unsigned int)v;
	return true;
}

static int kvp_cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a;
	unsigned int y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

KVP_PUBLIC
int kvpool_pool_list(unsigned int *ids, unsigned int cap)
{
	unsigned int *all = NULL, nr = 0, alloc = 0, id;
	struct dirent *de;
	DIR *dir;
	int ret;

	/* No class folder: the module is not loaded (or is gone by now). */
	dir = opendir(KVPOOL_CLASS_DIR);
	if (!dir)
		return errno == ENOENT ? -ENODEV : -errno;

	/* Collect every id first: readdir order is not numeric order. */
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			ret = -errno;
			if (ret)
				goto out;
			break;
		}
		if (!kvp_parse_pool_name(de->d_name, &id))
			continue;
		if (nr == alloc) {
			unsigned int *tmp;

			alloc = alloc ? alloc * 2 : 64;
			tmp = realloc(all, alloc * sizeof(*all));
			if (!tmp) {
				ret = -ENOMEM;
				goto out;
			}
			all = tmp;
		}
		all[nr++] = id;
	}

	if (nr > INT_MAX) {
		ret = -EOVERFLOW;
		goto out;
	}
	if (nr) {
		qsort(all, nr, sizeof(*all), kvp_cmp_uint);
		if (ids && cap)
			memcpy(ids, all, (nr < cap ? nr : cap) * sizeof(*ids));
	}
	ret = (int)nr;
out:
	free(all);
	closedir(dir);
	return ret;
}

/*
 * Read one sysfs attribute into @buf, NUL-terminated, and return its
 * length (at most @size - 1), or -errno. A file that has gone means the
 * pool has gone (destroyed while we read it): -ENODEV.
 */
static int kvp_read_text(int dirfd, const char *name, char *buf, size_t size)
{
	ssize_t len;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	do {
		len = read(fd, buf, size - 1);
	} while (len < 0 && errno == EINTR);
	if (len < 0) {
		int err = -errno;

		close(fd);
		return err == -ENOENT ? -ENODEV : err;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

/* Read one sysfs attribute: a decimal __u32 and a newline. */
static int kvp_read_attr(int dirfd, const char *name, __u32 *val)
{
	char buf[32], *end;
	unsigned long v;
	int len;

	len = kvp_read_text(dirfd, name, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (buf[0] < '0' || buf[0] > '9')
		return -EIO;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || v > UINT32_MAX || (*end != '\n' && *end != '\0'))
		return -EIO;
	*val = (__u32)v;
	return 0;
}

/* sysfs attribute names (docs/design.md) and where each figure goes. */
#define KVP_ATTR(type, name, field) \
	{ name, offsetof(type, field), false }
/* An attribute newer modules have and older ones lack: 0 there. */
#define KVP_ATTR_NEW(type, name, field) \
	{ name, offsetof(type, field), true }

struct kvp_attr {
	const char *name;
	size_t offset;
	bool optional;
};

static const struct kvp_attr kvp_info_attrs[] = {
	KVP_ATTR(struct kvpool_info, "pool_id", out_pool_id),
	KVP_ATTR(struct kvpool_info, "nr_pages", out_nr_pages),
	KVP_ATTR(struct kvpool_info, "page_tokens", out_page_tokens),
	KVP_ATTR(struct kvpool_info, "nr_rows", out_nr_rows),
	KVP_ATTR(struct kvpool_info, "row_tokens", out_row_tokens),
	KVP_ATTR(struct kvpool_info, "create_flags", out_create_flags),
};

static const struct kvp_attr kvp_stats_attrs[] = {
	KVP_ATTR(struct kvpool_stats, "free_pages", out_free_pages),
	KVP_ATTR(struct kvpool_stats, "row_pages", out_row_pages),
	KVP_ATTR(struct kvpool_stats, "slot_pages", out_slot_pages),
	KVP_ATTR(struct kvpool_stats, "cache_evictable", out_cache_evictable),
	KVP_ATTR(struct kvpool_stats, "cache_pinned", out_cache_pinned),
	KVP_ATTR(struct kvpool_stats, "reserved_pages", out_reserved_pages),
	KVP_ATTR(struct kvpool_stats, "free_rows", out_free_rows),
	KVP_ATTR(struct kvpool_stats, "held_rows", out_held_rows),
	KVP_ATTR(struct kvpool_stats, "slot_rows", out_slot_rows),
	KVP_ATTR(struct kvpool_stats, "reserved_rows", out_reserved_rows),
	KVP_ATTR(struct kvpool_stats, "nr_clients", out_nr_clients),
	KVP_ATTR_NEW(struct kvpool_stats, "export_rows", out_export_rows),
	KVP_ATTR_NEW(struct kvpool_stats, "export_pages", out_export_pages),
	KVP_ATTR_NEW(struct kvpool_stats, "quarantine_pages",
		     out_quarantine_pages),
};

/*
 * Not optional one by one: they came with one module, so a pool that
 * lacks one predates them all (kvpool_pool_extra() says -EOPNOTSUPP).
 */
static const struct kvp_attr kvp_extra_attrs[] = {
	KVP_ATTR(struct kvpool_pool_extra, "nr_tenants", nr_tenants),
	KVP_ATTR(struct kvpool_pool_extra, "low_wmark", low_wmark),
	KVP_ATTR(struct kvpool_pool_extra, "high_wmark", high_wmark),
};

/*
 * Whether the pool of @dirfd is still there: its first attribute is. A
 * missing file of a pool still there is one an older module lacks.
 */
static bool kvp_pool_there(int dirfd)
{
	return !faccessat(dirfd, "pool_id", F_OK, 0);
}

static int kvp_read_attrs(int dirfd, const struct kvp_attr *attrs,
			  size_t nr, void *base)
{
	size_t i;
	int ret;

	for (i = 0; i < nr; i++) {
		__u32 *val = (__u32 *)((char *)base + attrs[i].offset);

		ret = kvp_read_attr(dirfd, attrs[i].name, val);
		if (ret == -ENODEV && attrs[i].optional &&
		    kvp_pool_there(dirfd)) {
			*val = 0;
			ret = 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Open /sys/class/kvpool/kvpoolN; -ENODEV if there is no such pool. */
static int kvp_open_pool_dir(unsigned int pool_id)
{
	char path[sizeof(KVPOOL_CLASS_DIR "/" KVPOOL_DEV_PREFIX) + 16];
	int dirfd;

	snprintf(path, sizeof(path), "%s/%s%u", KVPOOL_CLASS_DIR,
		 KVPOOL_DEV_PREFIX, pool_id);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	return dirfd;
}

static int kvp_pool_status(unsigned int pool_id, struct kvpool_info *info,
			   struct kvpool_stats *stats, size_t stats_len)
{
	struct kvpool_info i = { .size = sizeof(i) };
	struct kvpool_stats s = { .size = sizeof(s) };
	int dirfd, ret = 0;

	dirfd = kvp_open_pool_dir(pool_id);
	if (dirfd < 0)
		return dirfd;

	if (info)
		ret = kvp_read_attrs(dirfd, kvp_info_attrs,
				     ARRAY_SIZE(kvp_info_attrs), &i);
	if (!ret && stats)
		ret = kvp_read_attrs(dirfd, kvp_stats_attrs,
				     ARRAY_SIZE(kvp_stats_attrs), &s);
	close(dirfd);
	if (ret)
		return ret;

	if (info)
		*info = i;
	if (stats)
		memcpy(stats, &s, stats_len);
	return 0;
}

KVP_PUBLIC
int kvp_pool_status_v2(unsigned int pool_id, struct kvpool_info *info,
		       struct kvpool_stats *stats)
{
	return kvp_pool_status(pool_id, info, stats, sizeof(*stats));
}
__asm__(".symver kvp_pool_status_v2,kvpool_pool_status@@KVPOOL_1.5");

/* For programs built before ABI 2: see kvp_stats_v1() in pool.c. */
KVP_PUBLIC
int kvp_pool_status_v1(unsigned int pool_id, struct kvpool_info *info,
		       struct kvpool_stats *stats)
{
	return kvp_pool_status(pool_id, info, stats, KVP_STATS_V1_SIZE);
}
__asm__(".symver kvp_pool_status_v1,kvpool_pool_status@KVPOOL_1.0");
KVP_PUBLIC
int kvpool_pool_extra(unsigned int pool_id, struct kvpool_pool_extra *extra)
{
	struct kvpool_pool_extra x = { 0 };
	int dirfd, ret;

	dirfd = kvp_open_pool_dir(pool_id);
	if (dirfd < 0)
		return dirfd;

	ret = kvp_read_attrs(dirfd, kvp_extra_attrs,
			     ARRAY_SIZE(kvp_extra_attrs), &x);
	if (ret == -ENODEV && kvp_pool_there(dirfd))
		ret = -EOPNOTSUPP;
	close(dirfd);
	if (ret)
		return ret;

	*extra = x;
	return 0;
}

KVP_PUBLIC
int kvpool_pool_gpu(unsigned int pool_id, uint32_t *domain, uint32_t *devid)
{
	uint32_t dom = 0, id = 0;
	char buf[32];
	int dirfd, len, ret = 0;

	dirfd = kvp_open_pool_dir(pool_id);
	if (dirfd < 0)
		return dirfd;
	len = kvp_read_text(dirfd, "gpu", buf, sizeof(buf));
	/* No file in a pool still there: a module before GPUs, no GPU. */
	if (len == -ENODEV && kvp_pool_there(dirfd))
		len = 0;
	close(dirfd);
	if (len < 0)
		return len;

	/* "0000:3b:00.0\n", or "\n" for none (pci_name(), or nothing). */
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (len) {
		if (kvpool_pci_parse(buf, &dom, &id))
			return -EIO;
		ret = 1;
	}
	if (domain)
		*domain = dom;
	if (devid)
		*devid = id;
	return ret;
}
