/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkvpool: userspace library for the kvpool KV-cache page broker.
 * What its files share; nothing here is installed (kvpool.h is the API).
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Each function builds the one ioctl struct it needs on the stack, zeroed
 * by its initializer and with size = sizeof() of the struct in the
 * <linux/kvpool.h> we were built against, so an older or newer kernel sees
 * a well-formed request (see "General ioctl format" there). Nothing here
 * validates what the kernel validates: the kernel is the one authority on
 * the pool's state, and its errno reaches the caller unchanged.
 *
 * The files, one concern each (the order of kvpool.h):
 *
 *   pool.c     a pool's fd: open, info, stats, the row and slot ops,
 *              export/import, fd passing, pressure
 *   ctl.c      the control device: create, destroy, tenants, watermarks,
 *              and kvpool_pci_parse() for create's GPU address
 *   arena.c    arenas: info, chunk fds and their walk, host arenas
 *              (memfds), arena_set, the plan, kvpool_arena_error()'s text
 *   map.c      an arena mapped and unmapped (host: mmap), layer addresses
 *   cuda.c     CUDA arenas, through the driver API dlopen()ed at first use,
 *              and the agent's fresh export of a chunk
 *   gpu.c      a pool's GPU: its PCI name, its /dev/nvidiaN (found in
 *              the NVIDIA driver's /proc files), the pool's features
 *   agent.c    the pool's GPU agent: attach, and serve the requests
 *   budget.c   chunk budgets: create, destroy, limits, info, and a pool
 *              created on one (a budget pool maps in map.c)
 *   sysfs.c    what sysfs says without a pool fd: list, status, extra, gpu
 *   error.c    kvpool_strerror()
 *   version.c  kvpool_version()
 *
 * Include this file first: it sets _GNU_SOURCE for the system headers.
 * Functions shared between the files are declared here; they are hidden
 * (-fvisibility=hidden) and the Makefile makes them local to libkvpool.a's
 * one object, so neither a shared nor a static link sees them.
 */
#ifndef KVPOOL_LIB_H
#define KVPOOL_LIB_H

/* memfd_create(), secure_getenv() and the F_*_SEALS of fcntl(2). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kvpool.h"

/*
 * Only the functions marked so leave the library (see libkvpool.map too).
 * Not KVPOOL_*: that prefix is the uapi's (KVPOOL_EXPORT is an ioctl).
 */
#define KVP_PUBLIC	__attribute__((visibility("default")))

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct kvpool {
	int fd;
	/* KVPOOL_INFO as answered at open; immutable for the file's life. */
	struct kvpool_info info;
};

static inline __u64 kvp_ptr(const void *p)
{
	return (__u64)(uintptr_t)p;
}

/*
 * Every ioctl goes through here: the kernel answers 0 or -1 with errno,
 * which becomes our return value.
 */
static inline int kvp_ioctl(int fd, unsigned long cmd, void *arg)
{
	if (ioctl(fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

/*
 * One ioctl whose struct @arg the kernel writes back, its first @len
 * bytes then copied to @out if the caller asked for them (@out not NULL).
 * Only on success: after a failure the caller's struct is left alone.
 */
static inline int kvp_ioctl_out(int fd, unsigned long cmd, void *arg,
				void *out, size_t len)
{
	int ret = kvp_ioctl(fd, cmd, arg);

	if (!ret && out)
		memcpy(out, arg, len);
	return ret;
}

/*
 * struct kvpool_stats grew in ABI 2 (out_quarantine_pages), and a program
 * built against an older <linux/kvpool.h> passes the 104 bytes it knew.
 * Such programs are bound to the KVPOOL_1.0 versions of kvpool_stats()
 * (pool.c) and kvpool_pool_status() (sysfs.c), which write no more than
 * that; those built now get the KVPOOL_1.5 ones, which write the whole
 * struct.
 */
#define KVP_STATS_V1_SIZE	offsetof(struct kvpool_stats, \
					 out_quarantine_pages)

/* ctl.c: run one control ioctl on a freshly opened control device. */
int kvp_control(unsigned long cmd, void *arg);

/* gpu.c */

/* Where the pool device nodes are (/dev/kvpoolN); a test build moves it. */
#ifndef KVPOOL_DEV_DIR
#define KVPOOL_DEV_DIR		"/dev"
#endif

/* "DDDD:BB:DD.F" and NUL: the PCI name of a GPU, as pci_name() writes it. */
#define KVP_BDF_LEN		16

/*
 * Pool @pool_id's GPU by its PCI name, into @bdf; @none is the errno for
 * a pool without one. 0 or -errno, with the text set.
 */
int kvp_pool_bdf(unsigned int pool_id, int none, char bdf[KVP_BDF_LEN]);
/* kvpool_gpu_device_open() without clearing the text first. */
int kvp_gpu_device_open(unsigned int pool_id);
/* KVPOOL_INFO's out_features of pool @pool_id, through its device node. */
int kvp_pool_features(unsigned int pool_id, uint64_t *features);

/* arena.c */

/* Chunks asked for per KVPOOL_ARENA_FDS: the descriptors open at once. */
#define KVP_ARENA_FD_BATCH	16

/* The room kvpool_arena_error()'s text has, NUL included. */
#define KVP_ARENA_ERR_LEN	512

/*
 * kvpool_arena_error()'s text, this thread's: cleared when an arena call
 * starts, set by the failure that knows most, else by kvp_arena_done().
 */
void kvp_arena_clear(void);
void __attribute__((format(printf, 1, 2))) kvp_arena_fail(const char *fmt,
							   ...);
int kvp_arena_done(int ret);
int kvp_plan(uint32_t nr_pages, uint64_t page_bytes, uint32_t nr_chunks,
	     uint64_t align, uint64_t *chunk_bytes);
int kvp_create_start(unsigned int pool_id, uint32_t *error_index,
		     struct kvpool_info *info);

/*
 * Maps one chunk, at @c->out_offset of the arena, chunk @index; closes
 * @c->out_fd whether or not it maps it. 0 or -errno, with the text set.
 */
typedef int (*kvp_chunk_map_fn)(void *ctx, const struct kvpool_arena_fd *c,
				uint32_t index);
int kvp_arena_walk(struct kvpool *kp, const struct kvpool_arena *a,
		   kvp_chunk_map_fn map, void *ctx, uint64_t *next);
/* kvpool_arena_set() with CTL_ARENA_SET's @flags and @device_fd. */
int kvp_arena_set(unsigned int pool_id, uint32_t kind, uint32_t flags,
		  int device_fd, uint64_t page_bytes,
		  const struct kvpool_arena_chunk *chunks, uint32_t nr_chunks,
		  uint32_t *error_index);

/* cuda.c: a CUDA arena @a mapped into *@v, and unmapped (for map.c). */
int kvp_cu_map(struct kvpool *kp, const struct kvpool_arena *a,
	       struct kvpool_arena_view *v);
int kvp_cu_unmap(struct kvpool_arena_view *v);
/*
 * The agent's work for one request of pool @pool_id: import the chunk's
 * master file @master (closed either way), export the allocation afresh
 * into *@fd (O_CLOEXEC; -1 on failure) and release the handle, with a
 * context of the pool's GPU current. 0 or -errno, with the text set.
 */
int kvp_cu_reexport(unsigned int pool_id, int master, int *fd);

#endif /* KVPOOL_LIB_H */
