// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: the control device, /dev/kvpool-control (CAP_SYS_ADMIN):
 * creating and destroying pools, their tenants and watermarks, and the
 * PCI address parser for a pool's GPU. The arena's CTL_ARENA_SET is
 * arena.c's.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* The control device the admin calls open; a test build may move it. */
#ifndef KVPOOL_CONTROL_DEV
#define KVPOOL_CONTROL_DEV	KVPOOL_CONTROL_PATH
#endif

/* Run one control ioctl on a freshly opened control device. */
int kvp_control(unsigned long cmd, void *arg)
{
	int fd, ret;

	fd = open(KVPOOL_CONTROL_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = kvp_ioctl(fd, cmd, arg);
	close(fd);
	return ret;
}

/*
 * The GPU fields took the place of __resv[0] and __resv[1]: a program
 * built against the header before them has the same struct.
 */
_Static_assert(sizeof(struct kvpool_pool_params) == 32,
	       "struct kvpool_pool_params is ABI: 32 bytes");
_Static_assert(offsetof(struct kvpool_pool_params, gpu_domain) == 20 &&
	       offsetof(struct kvpool_pool_params, gpu_devid) == 24 &&
	       offsetof(struct kvpool_pool_params, __resv) == 28,
	       "struct kvpool_pool_params is ABI: the old __resv offsets");

KVP_PUBLIC
int kvpool_pool_create(const struct kvpool_pool_params *params,
		       unsigned int *pool_id)
{
	/*
	 * Always the newest struct: a module of ABI 1 takes its zero GPU
	 * tail as no GPU, one before ABI 4 its zero budget tail as no
	 * budget, and each refuses the flag it does not know itself.
	 */
	struct kvpool_ctl_create arg = {
		.size = sizeof(arg),
		.flags = params->flags,
		.nr_pages = params->nr_pages,
		.page_tokens = params->page_tokens,
		.nr_rows = params->nr_rows,
		.row_tokens = params->row_tokens,
		.gpu_domain = params->gpu_domain,
		.gpu_devid = params->gpu_devid,
	};
	unsigned int i;
	int ret;

	/* Refuse what a later version of this library may give a meaning. */
	for (i = 0; i < ARRAY_SIZE(params->__resv); i++)
		if (params->__resv[i])
			return -EINVAL;

	ret = kvp_control(KVPOOL_CTL_CREATE, &arg);
	if (ret)
		return ret;
	if (pool_id)
		*pool_id = arg.out_pool_id;
	return 0;
}

KVP_PUBLIC
int kvpool_pool_destroy(unsigned int pool_id)
{
	struct kvpool_ctl_destroy arg = {
		.size = sizeof(arg),
		.pool_id = pool_id,
	};

	return kvp_control(KVPOOL_CTL_DESTROY, &arg);
}

/*
 * Exactly @min to @max hex digits at *@p, into *@v; *@p moves past them.
 * Not strtoul(): it would take blanks, a sign and "0x".
 */
static bool kvp_hex(const char **p, unsigned int min, unsigned int max,
		    uint32_t *v)
{
	const char *s = *p;
	unsigned int n = 0;
	uint32_t x = 0;

	for (; n < max; n++, s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		x = x << 4 | (uint32_t)d;
	}
	if (n < min)
		return false;
	*p = s;
	*v = x;
	return true;
}

KVP_PUBLIC
int kvpool_pci_parse(const char *s, uint32_t *domain, uint32_t *devid)
{
	uint32_t dom = 0, bus, dev, fn;
	const char *p = s;

	if (!s)
		return -EINVAL;
	/*
	 * Two colons: the domain leads, as lspci -D and sysfs write it
	 * (%04x, so more digits only above 0xffff); one: domain 0.
	 */
	if (strchr(s, ':') != strrchr(s, ':') &&
	    (!kvp_hex(&p, 4, 8, &dom) || *p++ != ':'))
		return -EINVAL;
	if (!kvp_hex(&p, 2, 2, &bus) || *p++ != ':' ||
	    !kvp_hex(&p, 2, 2, &dev) || *p++ != '.' ||
	    !kvp_hex(&p, 1, 1, &fn) || *p || dev > 0x1f || fn > 7)
		return -EINVAL;
	if (domain)
		*domain = dom;
	if (devid)
		*devid = bus << 8 | dev << 3 | fn;
	return 0;
}

/*
 * CTL_TENANT_SET of *@t, with the path @cgroup_path when not NULL. Only
 * the first release's 80 bytes of *@t are read and written: the caller's
 * struct may be that size, and a path travels beside it.
 */
static int kvp_tenant_set(unsigned int pool_id, struct kvpool_ctl_tenant *t,
			  const char *cgroup_path)
{
	struct kvpool_ctl_tenant arg = {
		.size = sizeof(arg),
		.flags = t->flags,
		.pool_id = pool_id,
		.tenant_id = t->tenant_id,
		.cgroup_id = t->cgroup_id,
		.uid = t->uid,
		.max_pages = t->max_pages,
		.min_pages = t->min_pages,
		.max_rows = t->max_rows,
		.cgroup_path = kvp_ptr(cgroup_path),
	};
	int ret;

	/* As kvpool_pool_create(): a later version may give it a meaning. */
	if (t->__reserved)
		return -EINVAL;
	if (cgroup_path)
		arg.flags |= KVPOOL_TENANT_BY_PATH;
	memcpy(arg.label, t->label, sizeof(arg.label));

	ret = kvp_control(KVPOOL_CTL_TENANT_SET, &arg);
	if (ret)
		return ret;
	memcpy(t, &arg, offsetof(struct kvpool_ctl_tenant, cgroup_path));
	/* At most 4096 tenants a pool: fits an int. */
	return (int)arg.tenant_id;
}

KVP_PUBLIC
int kvpool_tenant_set(unsigned int pool_id, struct kvpool_ctl_tenant *t)
{
	return kvp_tenant_set(pool_id, t, NULL);
}

KVP_PUBLIC
int kvpool_tenant_set_path(unsigned int pool_id, const char *cgroup_path,
			   struct kvpool_ctl_tenant *t)
{
	if (!cgroup_path)
		return -EINVAL;
	return kvp_tenant_set(pool_id, t, cgroup_path);
}

KVP_PUBLIC
int kvpool_tenant_list_paths(unsigned int pool_id,
			     struct kvpool_tenant_info *out,
			     unsigned int count, char *paths,
			     size_t paths_len, size_t *paths_need)
{
	struct kvpool_ctl_tenant_list arg = {
		.size = sizeof(arg),
		.pool_id = pool_id,
		.count = out ? count : 0,
		/* Checked even when count is 0: always the real length. */
		.entry_len = sizeof(*out),
		.tenants = kvp_ptr(out),
		/* The kernel uses at most 1 MiB + 1 of it. */
		.paths_len = paths && paths_len ?
			     (uint32_t)(paths_len < UINT32_MAX ? paths_len :
					UINT32_MAX) : 0,
	};
	int ret;

	arg.paths = arg.paths_len ? kvp_ptr(paths) : 0;
	/* An older module writes no paths: offset 0 is then still "". */
	if (arg.paths_len)
		paths[0] = '\0';
	ret = kvp_control(KVPOOL_CTL_TENANT_LIST, &arg);
	if (ret == -E2BIG && arg.paths_len) {
		/* A module without paths refuses the fields it lacks. */
		arg.paths = 0;
		arg.paths_len = 0;
		ret = kvp_control(KVPOOL_CTL_TENANT_LIST, &arg);
	}
	if (ret)
		return ret;
	if (paths_need)
		*paths_need = arg.out_paths_len;
	return (int)arg.out_nr_tenants;
}

KVP_PUBLIC
int kvpool_tenant_list(unsigned int pool_id, struct kvpool_tenant_info *out,
		       unsigned int count)
{
	/* With no paths buffer the struct's tail is 0: any module takes it. */
	return kvpool_tenant_list_paths(pool_id, out, count, NULL, 0, NULL);
}

KVP_PUBLIC
int kvpool_set_wmark(unsigned int pool_id, unsigned int low,
		     unsigned int high)
{
	struct kvpool_ctl_wmark arg = {
		.size = sizeof(arg),
		.pool_id = pool_id,
		.low_wmark = low,
		.high_wmark = high,
	};

	return kvp_control(KVPOOL_CTL_SET_WMARK, &arg);
}
