// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: a pool's arena, the memory behind its page ids. Asking the
 * pool what it is and for its chunks' descriptors, walking them for a
 * mapper (map.c, cuda.c), handing the pool an arena (CTL_ARENA_SET),
 * planning chunks and making a host arena of sealed memfds; and
 * kvpool_arena_error()'s text, which map.c and cuda.c write too.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

/* KVPOOL_ARENA of @arg, the answer copied to @out if not NULL. */
static int kvp_arena(struct kvpool *kp, struct kvpool_arena *arg,
		     struct kvpool_arena *out)
{
	arg->size = sizeof(*arg);
	return kvp_ioctl_out(kp->fd, KVPOOL_ARENA, arg, out, sizeof(*arg));
}

KVP_PUBLIC
int kvpool_arena_info(struct kvpool *kp, struct kvpool_arena *out)
{
	struct kvpool_arena arg = { 0 };

	return kvp_arena(kp, &arg, out);
}

/* KVPOOL_ARENA with KVPOOL_ARENA_FDS and @flags: kvpool_arena_fds(). */
static int kvp_arena_fds(struct kvpool *kp, uint32_t flags,
			 uint32_t first_chunk, uint32_t count,
			 struct kvpool_arena_fd *fds,
			 struct kvpool_arena *info)
{
	struct kvpool_arena arg = {
		.flags = KVPOOL_ARENA_FDS | flags,
		.first_chunk = first_chunk,
		.count = count,
		.fd_entry_len = sizeof(*fds),
		.fds = kvp_ptr(fds),
	};
	int ret = kvp_arena(kp, &arg, info);

	/* At most KVPOOL_ARENA_MAX_CHUNKS: fits an int. */
	return ret ? ret : (int)count;
}

KVP_PUBLIC
int kvpool_arena_fds(struct kvpool *kp, uint32_t first_chunk, uint32_t count,
		     struct kvpool_arena_fd *fds, struct kvpool_arena *info)
{
	return kvp_arena_fds(kp, 0, first_chunk, count, fds, info);
}

/* How often an agent arena's map asks again while no agent is attached. */
#define KVP_AGENT_RETRY_MS	50
#define KVP_AGENT_WAIT_DEF_MS	10000
#define KVP_AGENT_WAIT_MAX_MS	86400000L	/* a day */

/* $KVPOOL_AGENT_WAIT_MS, or its default; -EINVAL if it is no number. */
static long kvp_agent_wait_ms(void)
{
	const char *env = secure_getenv("KVPOOL_AGENT_WAIT_MS");
	char *end;
	long ms;

	if (!env || !*env)
		return KVP_AGENT_WAIT_DEF_MS;
	errno = 0;
	ms = env[0] >= '0' && env[0] <= '9' ? strtol(env, &end, 10) : -1;
	if (ms < 0 || errno || *end || ms > KVP_AGENT_WAIT_MAX_MS) {
		kvp_arena_fail("KVPOOL_AGENT_WAIT_MS='%s' is no number of milliseconds (0 to %ld)",
			       env, KVP_AGENT_WAIT_MAX_MS);
		return -EINVAL;
	}
	return ms;
}

/*
 * kvpool_arena_fds() of an agent arena: the kernel asks the pool's GPU
 * agent for a fresh export of each chunk, and sleeps until it has
 * answered. Asked with KVPOOL_ARENA_NOWAIT, so that with no agent
 * attached (kvpool-gpud not running, or restarting) this says so instead
 * of sleeping for ever: EAGAIN, and another try every KVP_AGENT_RETRY_MS
 * until *@wait_ms, the map's budget, is spent. The budget is counted in
 * retries, not by a clock: a slow machine waits longer, never less.
 */
static int kvp_agent_fds(struct kvpool *kp, uint32_t first, uint32_t count,
			 struct kvpool_arena_fd *fds, struct kvpool_arena *info,
			 long *wait_ms)
{
	const struct timespec retry = {
		.tv_nsec = KVP_AGENT_RETRY_MS * 1000000L,
	};
	unsigned int pool = kp->info.out_pool_id;
	int ret;

	for (;;) {
		ret = kvp_arena_fds(kp, KVPOOL_ARENA_NOWAIT, first, count,
				    fds, info);
		if (ret != -EAGAIN)
			break;
		if (*wait_ms <= 0) {
			kvp_arena_fail("no GPU agent serves pool %u (is kvpool-gpud running?)",
				       pool);
			return ret;
		}
		nanosleep(&retry, NULL);
		*wait_ms -= KVP_AGENT_RETRY_MS;
	}
	if (ret == -EIO)
		kvp_arena_fail("the GPU agent of pool %u could not export chunks %u to %u (its log says why)",
			       pool, first, first + count - 1);
	else if (ret == -EINTR)
		kvp_arena_fail("a signal came while the GPU agent of pool %u exported chunks %u to %u",
			       pool, first, first + count - 1);
	return ret;
}

/*
 * Every chunk of arena @a, asked for in batches of KVP_ARENA_FD_BATCH
 * descriptors, checked and handed to @map in order; host and CUDA arenas
 * differ only in @map. A chunk must start where the last one ended
 * (*@next, from 0) and end within the arena: mapped MAP_FIXED (or by
 * cuMemMap()) anywhere else it would replace someone else's memory. The
 * chunks must fill the arena, with no hole. On failure every descriptor
 * not handed to @map is closed, and the chunks mapped so far lie end to
 * end from the start, *@next bytes of them.
 */
int kvp_arena_walk(struct kvpool *kp, const struct kvpool_arena *a,
		   kvp_chunk_map_fn map, void *ctx, uint64_t *next)
{
	struct kvpool_arena_fd fds[KVP_ARENA_FD_BATCH];
	bool agent = a->out_set_flags & KVPOOL_ARENA_SET_AGENT;
	long wait_ms = agent ? kvp_agent_wait_ms() : 0;
	struct kvpool_arena b;
	uint32_t first, n, i;
	int ret;

	if (wait_ms < 0)
		return (int)wait_ms;
	for (first = 0; first < a->out_nr_chunks; first += n) {
		n = a->out_nr_chunks - first;
		if (n > KVP_ARENA_FD_BATCH)
			n = KVP_ARENA_FD_BATCH;
		ret = agent ? kvp_agent_fds(kp, first, n, fds, &b, &wait_ms) :
			      kvpool_arena_fds(kp, first, n, fds, &b);
		if (ret < 0)
			return ret;
		/* An arena is set once and never changes: a kernel bug. */
		ret = 0;
		if (b.out_kind != a->out_kind || b.out_bytes != a->out_bytes ||
		    b.out_nr_chunks != a->out_nr_chunks ||
		    b.out_page_bytes != a->out_page_bytes)
			ret = -EIO;
		for (i = 0; i < n; i++) {
			const struct kvpool_arena_fd *c = &fds[i];

			if (!ret && (c->out_fd < 0 || c->out_offset != *next ||
				     !c->out_bytes ||
				     c->out_bytes > a->out_bytes - *next))
				ret = -EIO;
			if (ret) {
				close(c->out_fd);
				continue;
			}
			ret = map(ctx, c, first + i);
			if (!ret)
				*next += c->out_bytes;
		}
		if (ret)
			return ret;
	}
	return *next == a->out_bytes ? 0 : -EIO;
}

/* The text kvpool_arena_error() returns: this thread's last failure. */
static __thread char kvp_arena_err[KVP_ARENA_ERR_LEN];

void kvp_arena_clear(void)
{
	kvp_arena_err[0] = '\0';
}

void kvp_arena_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kvp_arena_err, sizeof(kvp_arena_err), fmt, ap);
	va_end(ap);
}

/* A failure that left no text of its own gets kvpool_strerror()'s. */
int kvp_arena_done(int ret)
{
	if (ret && !kvp_arena_err[0])
		kvp_arena_fail("%s", kvpool_strerror(ret));
	return ret;
}

KVP_PUBLIC
const char *kvpool_arena_error(void)
{
	return kvp_arena_err;
}

/*
 * Which chunk to blame for @ret from CTL_ARENA_SET: as kvp_error_index(),
 * only an errno that can be about one chunk, for a count the kernel looked
 * at the chunks of, and an index inside them, is believed.
 */
static __u32 kvp_chunk_index(int ret, uint32_t nr_chunks, __u32 index)
{
	if (ret != -EINVAL && ret != -EBADF && ret != -E2BIG && ret != -EBUSY)
		return KVPOOL_NO_INDEX;
	if (!nr_chunks || nr_chunks > KVPOOL_ARENA_MAX_CHUNKS)
		return KVPOOL_NO_INDEX;
	return index < nr_chunks ? index : KVPOOL_NO_INDEX;
}

int kvp_arena_set(unsigned int pool_id, uint32_t kind, uint32_t flags,
		  int device_fd, uint64_t page_bytes,
		  const struct kvpool_arena_chunk *chunks, uint32_t nr_chunks,
		  uint32_t *error_index)
{
	/*
	 * Without flags, device_fd is 0 like the rest of the tail an ABI 2
	 * kernel does not know: it takes the struct as its own.
	 */
	struct kvpool_ctl_arena_set arg = {
		.size = sizeof(arg),
		.flags = flags,
		.pool_id = pool_id,
		.kind = kind,
		.page_bytes = page_bytes,
		.nr_chunks = nr_chunks,
		.chunk_entry_len = sizeof(*chunks),
		.chunks = kvp_ptr(chunks),
		.device_fd = flags & KVPOOL_ARENA_SET_DEVICE ? device_fd : 0,
	};
	int ret;

	ret = kvp_control(KVPOOL_CTL_ARENA_SET, &arg);
	if (error_index)
		*error_index = kvp_chunk_index(ret, nr_chunks,
					       arg.out_error_index);
	return ret;
}

KVP_PUBLIC
int kvpool_arena_set(unsigned int pool_id, uint32_t kind, uint64_t page_bytes,
		     const struct kvpool_arena_chunk *chunks,
		     uint32_t nr_chunks, uint32_t *error_index)
{
	return kvp_arena_set(pool_id, kind, 0, -1, page_bytes, chunks,
			     nr_chunks, error_index);
}

static uint64_t kvp_gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * Chunk lengths for @nr_pages pages of @page_bytes in @nr_chunks chunks,
 * in units of lcm(@page_bytes, @align) (@align at most 2^32): all of the
 * same number of units but the last, which takes the rest.
 */
int kvp_plan(uint32_t nr_pages, uint64_t page_bytes, uint32_t nr_chunks,
	     uint64_t align, uint64_t *chunk_bytes)
{
	uint64_t unit, unit_pages, units, each;
	uint32_t i;

	if (!nr_pages || !page_bytes || page_bytes > (1ULL << 32) ||
	    !nr_chunks || nr_chunks > KVPOOL_ARENA_MAX_CHUNKS || !align ||
	    align > (1ULL << 32))
		return -EINVAL;
	/* The smallest length that is a multiple of both: no overflow, the
	 * two are at most 2^32. */
	unit = page_bytes / kvp_gcd(page_bytes, align) * align;
	unit_pages = unit / page_bytes;
	units = (nr_pages + unit_pages - 1) / unit_pages;
	/* Each chunk at least one unit, and none wholly past the pages. */
	if (nr_chunks > units)
		return -EINVAL;
	if (units > INT64_MAX / unit)
		return -EOVERFLOW;	/* ftruncate(2) takes an off_t */
	each = units / nr_chunks;
	for (i = 0; i + 1 < nr_chunks; i++)
		chunk_bytes[i] = each * unit;
	chunk_bytes[i] = (units - each * (nr_chunks - 1)) * unit;
	return 0;
}

KVP_PUBLIC
int kvpool_arena_plan_host(uint32_t nr_pages, uint64_t page_bytes,
			   uint32_t nr_chunks, uint64_t *chunk_bytes)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps <= 0)
		return -EINVAL;
	return kvp_plan(nr_pages, page_bytes, nr_chunks, (uint64_t)ps,
			chunk_bytes);
}

/* A sealed memfd of @bytes for chunk @index of pool @pool_id, or -errno. */
static int kvp_host_chunk(unsigned int pool_id, uint32_t index, uint64_t bytes)
{
	char name[64];
	int fd, err;

	/* The name shows in /proc/PID/maps of every process that maps it. */
	snprintf(name, sizeof(name), "kvpool%u-arena-%u", pool_id, index);
	if ((uint64_t)(off_t)bytes != bytes)
		return -EFBIG;
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/*
	 * Shrink and grow sealed, as the kernel wants, so no client can cut
	 * the memory from under another's mapping; and F_SEAL_SEAL, so none
	 * can add F_SEAL_WRITE and break everyone's writable mappings.
	 */
	if (ftruncate(fd, (off_t)bytes) ||
	    fcntl(fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* What an arena_create_*() does first: no text, no chunk, the pool. */
int kvp_create_start(unsigned int pool_id, uint32_t *error_index,
		     struct kvpool_info *info)
{
	kvp_arena_clear();
	if (error_index)
		*error_index = KVPOOL_NO_INDEX;
	return kvp_arena_done(kvpool_pool_status(pool_id, info, NULL));
}

KVP_PUBLIC
int kvpool_arena_create_host(unsigned int pool_id, uint64_t page_bytes,
			     uint32_t nr_chunks, uint32_t *error_index)
{
	struct kvpool_arena_chunk chunks[KVPOOL_ARENA_MAX_CHUNKS];
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS];
	struct kvpool_info info;
	uint32_t i, made;
	int ret;

	ret = kvp_create_start(pool_id, error_index, &info);
	if (ret)
		return ret;
	ret = kvpool_arena_plan_host(info.out_nr_pages, page_bytes, nr_chunks,
				     bytes);
	if (ret)
		return kvp_arena_done(ret);

	memset(chunks, 0, sizeof(chunks));
	for (made = 0; made < nr_chunks; made++) {
		int fd = kvp_host_chunk(pool_id, made, bytes[made]);

		if (fd < 0) {
			ret = fd;
			goto out;
		}
		chunks[made].fd = fd;
		chunks[made].bytes = bytes[made];
	}
	ret = kvpool_arena_set(pool_id, KVPOOL_ARENA_HOST, page_bytes, chunks,
			       nr_chunks, error_index);
out:
	/* The pool holds its own references now, or nothing was given. */
	for (i = 0; i < made; i++)
		close(chunks[i].fd);
	return kvp_arena_done(ret);
}
