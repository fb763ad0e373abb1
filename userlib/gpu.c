// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: a pool's GPU as the NVIDIA driver names it. Its PCI name,
 * its device node /dev/nvidiaN (the minor read from the driver's
 * /proc/driver/nvidia/gpus/<pci>/information), and the pool's features,
 * which say whether the kernel can hold that node for a CUDA arena.
 *
 * Why the node: NVIDIA's driver tears a GPU down, freeing every exported
 * allocation on it, when the last open file of its /dev/nvidiaN goes and
 * persistence mode is off (docs/gpu-agent.md). The kernel cannot tell
 * which GPU a minor is, so the library finds it and hands it over with
 * KVPOOL_ARENA_SET_DEVICE.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The driver's own places; the fake CUDA driver's tests move both. */
#define KVP_NVIDIA_PROC		"/proc/driver/nvidia"
#define KVP_NVIDIA_DEV		"/dev"
/*
 * GPUs are minors 0 to 253 of major 195: 254 is nvidia-modeset, 255
 * nvidiactl, neither a GPU, and the kernel refuses them as the device.
 */
#define KVP_NVIDIA_MINOR_MAX	253
/* The information file is a dozen short lines; more is not the driver's. */
#define KVP_NVIDIA_INFO_MAX	4096

int kvp_pool_bdf(unsigned int pool_id, int none, char bdf[KVP_BDF_LEN])
{
	uint32_t domain, devid;
	int ret;

	ret = kvpool_pool_gpu(pool_id, &domain, &devid);
	if (ret < 0) {
		kvp_arena_fail("pool %u's GPU (sysfs): %s", pool_id,
			       kvpool_strerror(ret));
		return ret;
	}
	if (!ret) {
		kvp_arena_fail("pool %u has no GPU (create it with one: kvpoolctl create --gpu)",
			       pool_id);
		return none;
	}
	snprintf(bdf, KVP_BDF_LEN, "%04x:%02x:%02x.%x", domain,
		 devid >> 8 & 0xff, devid >> 3 & 0x1f, devid & 7);
	return 0;
}

/*
 * @path (PATH_MAX bytes): @file in the folder environment variable @env
 * names, else in @def. secure_getenv(): a setuid program must not open
 * the caller's.
 */
static int kvp_nvidia_path(char *path, const char *env, const char *def,
			   const char *file)
{
	const char *dir = secure_getenv(env);

	if (snprintf(path, PATH_MAX, "%s/%s", dir && *dir ? dir : def,
		     file) < PATH_MAX)
		return 0;
	kvp_arena_fail("$%s is too long a path", env);
	return -ENAMETOOLONG;
}

/*
 * The "Device Minor:" of the information file @text (NUL-terminated),
 * read from @path, into *@minor: one line of it, a decimal number from 0
 * to KVP_NVIDIA_MINOR_MAX and nothing else but blanks. 0 or -EIO.
 */
static int kvp_parse_minor(const char *path, const char *text,
			   unsigned int *minor)
{
	static const char key[] = "Device Minor:";
	const char *line = text, *p;
	unsigned long val = ULONG_MAX;
	char *end = NULL;

	while (strncmp(line, key, sizeof(key) - 1)) {
		line = strchr(line, '\n');
		if (!line) {
			kvp_arena_fail("%s has no \"%s\" line", path, key);
			return -EIO;
		}
		line++;
	}
	p = line + sizeof(key) - 1;
	p += strspn(p, " \t");
	errno = 0;
	/* strtoul() would take a sign and leading blanks: digits only. */
	if (*p >= '0' && *p <= '9') {
		val = strtoul(p, &end, 10);
		end += strspn(end, " \t\r");
	}
	if (!end || errno || val > KVP_NVIDIA_MINOR_MAX ||
	    (*end != '\n' && *end != '\0')) {
		kvp_arena_fail("%s: \"%.*s\" is no GPU's minor (0 to %u)",
			       path, (int)strcspn(line, "\n"), line,
			       KVP_NVIDIA_MINOR_MAX);
		return -EIO;
	}
	*minor = (unsigned int)val;
	return 0;
}

/* The minor of the GPU at @bdf, from the driver's information file. */
static int kvp_nvidia_minor(const char *bdf, unsigned int *minor)
{
	char path[PATH_MAX], text[KVP_NVIDIA_INFO_MAX + 1];
	char file[sizeof("gpus//information") + KVP_BDF_LEN];
	ssize_t len;
	int fd, ret;

	snprintf(file, sizeof(file), "gpus/%s/information", bdf);
	ret = kvp_nvidia_path(path, "KVPOOL_NVIDIA_PROC", KVP_NVIDIA_PROC,
			      file);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		/* No file: no driver loaded, or no NVIDIA GPU there. */
		if (ret == -ENOENT) {
			kvp_arena_fail("no NVIDIA GPU at %s: %s: %s (is the nvidia module loaded?)",
				       bdf, path, strerror(ENOENT));
			return -ENODEV;
		}
		kvp_arena_fail("%s: %s", path, strerror(-ret));
		return ret;
	}
	len = read(fd, text, KVP_NVIDIA_INFO_MAX);
	ret = len < 0 ? -errno : 0;
	close(fd);
	if (ret) {
		kvp_arena_fail("reading %s: %s", path, strerror(-ret));
		return ret;
	}
	text[len] = '\0';
	return kvp_parse_minor(path, text, minor);
}

int kvp_gpu_device_open(unsigned int pool_id)
{
	char bdf[KVP_BDF_LEN], path[PATH_MAX], file[32];
	unsigned int minor = 0;
	int fd, ret;

	ret = kvp_pool_bdf(pool_id, -EINVAL, bdf);
	if (!ret)
		ret = kvp_nvidia_minor(bdf, &minor);
	if (ret)
		return ret;
	snprintf(file, sizeof(file), "nvidia%u", minor);
	ret = kvp_nvidia_path(path, "KVPOOL_NVIDIA_DEV", KVP_NVIDIA_DEV, file);
	if (ret)
		return ret;
	/* Read-write, as CUDA opens it: the driver counts every open. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		kvp_arena_fail("pool %u's GPU %s (minor %u): %s: %s", pool_id,
			       bdf, minor, path, strerror(-ret));
		return ret;
	}
	return fd;
}

KVP_PUBLIC
int kvpool_gpu_device_open(unsigned int pool_id)
{
	int fd;

	kvp_arena_clear();
	fd = kvp_gpu_device_open(pool_id);
	return fd < 0 ? kvp_arena_done(fd) : fd;
}

int kvp_pool_features(unsigned int pool_id, uint64_t *features)
{
	char path[sizeof(KVPOOL_DEV_DIR) + 32];
	struct kvpool *kp;
	int ret;

	/*
	 * Sysfs does not have them: ask the pool, as a client for the
	 * moment it takes (it holds nothing, so it leaves nothing behind).
	 */
	snprintf(path, sizeof(path), "%s/kvpool%u", KVPOOL_DEV_DIR, pool_id);
	ret = kvpool_open(path, &kp);
	if (ret) {
		kvp_arena_fail("asking pool %u for its features: %s: %s",
			       pool_id, path, kvpool_strerror(ret));
		return ret;
	}
	*features = kp->info.out_features;
	kvpool_close(kp);
	return 0;
}
