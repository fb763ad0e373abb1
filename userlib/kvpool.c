// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: userspace library for the kvpool KV-cache page broker.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Each function builds the one ioctl struct it needs on the stack, zeroed
 * by its initializer and with size = sizeof() of the struct in the
 * <linux/kvpool.h> we were built against, so an older or newer kernel sees
 * a well-formed request (see "General ioctl format" there). Nothing here
 * validates what the kernel validates: the kernel is the one authority on
 * the pool's state, and its errno reaches the caller unchanged.
 */
/* memfd_create() and the F_*_SEALS of fcntl(2), for host arenas. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

/* Types and names only: nothing links libcuda (see "CUDA arenas"). */
#include <cuda.h>

#include "kvpool.h"

/*
 * Only the functions marked so leave the library (see libkvpool.map too).
 * Not KVPOOL_*: that prefix is the uapi's (KVPOOL_EXPORT is an ioctl).
 */
#define KVP_PUBLIC	__attribute__((visibility("default")))

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

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

/* The control device the admin calls open; a test build may move it. */
#ifndef KVPOOL_CONTROL_DEV
#define KVPOOL_CONTROL_DEV	KVPOOL_CONTROL_PATH
#endif

/* The top-level VERSION file, passed in by the Makefile. */
#ifndef KVPOOL_VERSION
#error "build with -DKVPOOL_VERSION='\"x.y.z\"' (userlib/Makefile reads ../VERSION)"
#endif

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
static int kvp_ioctl(int fd, unsigned long cmd, void *arg)
{
	if (ioctl(fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

/*
 * Which entry to blame for @ret. The struct we pass has out_error_index 0,
 * as every output field; the kernel writes it back with the first bad
 * entry or ~0U, but a request refused before any entry is looked at (a
 * count out of range) need not be copied back at all, and then a 0 would
 * falsely blame entry 0. Only the errnos that can be about one entry carry
 * an index, and only an index inside the batch is believed.
 */
static __u32 kvp_error_index(const struct kvpool *kp, int ret,
			     unsigned int count, __u32 index)
{
	switch (ret) {
	case -EINVAL:
		if (!count || count > kp->info.out_max_batch)
			return KVPOOL_NO_INDEX;
		/* fall through */
	case -ENOENT:
	case -ESTALE:
	case -E2BIG:		/* an entry's bytes past those the kernel knows */
	case -EALREADY:		/* DONATE: the prefix is donated already */
	case -EBUSY:		/* CACHE_EVICT: the page is pinned */
		return index < count ? index : KVPOOL_NO_INDEX;
	default:
		return KVPOOL_NO_INDEX;
	}
}

static void kvp_set_result(struct kvpool_batch_result *res, __u32 error_index,
			   __u32 nr_missing, __u32 nr_pages)
{
	if (!res)
		return;
	memset(res, 0, sizeof(*res));
	res->error_index = error_index;
	res->nr_missing = nr_missing;
	res->nr_pages = nr_pages;
}

KVP_PUBLIC
int kvpool_open_fd(int fd, struct kvpool **kpp)
{
	struct kvpool_info info = { .size = sizeof(info) };
	struct kvpool *kp;
	int ret;

	if (fd < 0)
		return -EBADF;
	if (!kpp)
		return -EINVAL;

	/* Ask first: an fd that is not a pool fails here with -ENOTTY. */
	ret = kvp_ioctl(fd, KVPOOL_INFO, &info);
	if (ret)
		return ret;

	kp = calloc(1, sizeof(*kp));
	if (!kp)
		return -ENOMEM;
	kp->fd = fd;
	kp->info = info;
	*kpp = kp;
	return 0;
}

KVP_PUBLIC
int kvpool_open(const char *path, struct kvpool **kpp)
{
	int fd, ret;

	if (!kpp)
		return -EINVAL;
	fd = open(path ? path : KVPOOL_DEFAULT_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = kvpool_open_fd(fd, kpp);
	if (ret)
		close(fd);
	return ret;
}

KVP_PUBLIC
void kvpool_close(struct kvpool *kp)
{
	if (!kp)
		return;
	/*
	 * Linux drops the descriptor whatever close() returns, and the
	 * kernel's release of a client cannot fail: nothing to report.
	 */
	close(kp->fd);
	free(kp);
}

KVP_PUBLIC
int kvpool_fd(const struct kvpool *kp)
{
	return kp->fd;
}

KVP_PUBLIC
int kvpool_info(const struct kvpool *kp, struct kvpool_info *info)
{
	*info = kp->info;
	return 0;
}

/*
 * struct kvpool_stats grew in ABI 2 (out_quarantine_pages), and a program
 * built against an older <linux/kvpool.h> passes the 104 bytes it knew.
 * Such programs are bound to the KVPOOL_1.0 versions of kvpool_stats()
 * and kvpool_pool_status(), which write no more than that; those built
 * now get the KVPOOL_1.5 ones, which write the whole struct.
 */
#define KVP_STATS_V1_SIZE	offsetof(struct kvpool_stats, \
					 out_quarantine_pages)

static int kvp_stats(struct kvpool *kp, struct kvpool_stats *stats,
		     size_t len)
{
	struct kvpool_stats arg = { .size = sizeof(arg) };
	int ret;

	ret = kvp_ioctl(kp->fd, KVPOOL_STATS, &arg);
	if (ret)
		return ret;
	memcpy(stats, &arg, len);
	return 0;
}

KVP_PUBLIC
int kvp_stats_v2(struct kvpool *kp, struct kvpool_stats *stats)
{
	return kvp_stats(kp, stats, sizeof(*stats));
}
__asm__(".symver kvp_stats_v2,kvpool_stats@@KVPOOL_1.5");

KVP_PUBLIC
int kvp_stats_v1(struct kvpool *kp, struct kvpool_stats *stats)
{
	return kvp_stats(kp, stats, KVP_STATS_V1_SIZE);
}
__asm__(".symver kvp_stats_v1,kvpool_stats@KVPOOL_1.0");

KVP_PUBLIC
int kvpool_alloc_rows(struct kvpool *kp, struct kvpool_handle *handles,
		      unsigned int count, struct kvpool_batch_result *res)
{
	struct kvpool_row_alloc arg = {
		.size = sizeof(arg),
		.count = count,
		.entry_len = sizeof(*handles),
		.handles = kvp_ptr(handles),
	};
	int ret;

	ret = kvp_ioctl(kp->fd, KVPOOL_ROW_ALLOC, &arg);
	kvp_set_result(res, KVPOOL_NO_INDEX,
		       (ret == -ENOSPC || ret == -EDQUOT) ? arg.out_short : 0,
		       0);
	/* Success means count was within out_max_batch, so it fits an int. */
	return ret ? ret : (int)count;
}

KVP_PUBLIC
int kvpool_extend(struct kvpool *kp, struct kvpool_extend_entry *entries,
		  unsigned int count, uint32_t *pages, unsigned int pages_cap,
		  struct kvpool_batch_result *res)
{
	struct kvpool_extend arg = {
		.size = sizeof(arg),
		.count = count,
		.entry_len = sizeof(*entries),
		.entries = kvp_ptr(entries),
		.pages_cap = pages_cap,
		.page_entry_len = sizeof(*pages),
		.pages = kvp_ptr(pages),
	};
	__u32 index;
	int ret;

	ret = kvp_ioctl(kp->fd, KVPOOL_EXTEND, &arg);
	index = kvp_error_index(kp, ret, count, arg.out_error_index);
	/*
	 * out_nr_pages means something on success and on -ENOBUFS (the room
	 * needed), out_short only on -ENOSPC and -EDQUOT. After -EFAULT the
	 * struct may not have been copied back at all, so nothing is reported.
	 */
	kvp_set_result(res, index,
		       (ret == -ENOSPC || ret == -EDQUOT) ? arg.out_short : 0,
		       (!ret || ret == -ENOBUFS) ? arg.out_nr_pages : 0);
	/* At most nr_pages (<= 2^27) new pages exist, so this fits an int. */
	return ret ? ret : (int)arg.out_nr_pages;
}

/*
 * COMMIT, TRIM, RELEASE, DONATE, SWA_FREE and CACHE_EVICT share struct
 * kvpool_batch; out_nr_pages is pages freed (DONATE: moved to the cache).
 * @entry_len is the op's element: a kvpool_len_entry, a kvpool_handle or
 * a __u32 page id.
 */
static int kvp_batch(struct kvpool *kp, unsigned long cmd, __u32 flags,
		     const void *entries, __u32 entry_len, unsigned int count,
		     struct kvpool_batch_result *res)
{
	struct kvpool_batch arg = {
		.size = sizeof(arg),
		.flags = flags,
		.count = count,
		.entry_len = entry_len,
		.entries = kvp_ptr(entries),
	};
	__u32 index;
	int ret;

	ret = kvp_ioctl(kp->fd, cmd, &arg);
	index = kvp_error_index(kp, ret, count, arg.out_error_index);
	kvp_set_result(res, index, 0, ret ? 0 : arg.out_nr_pages);
	return ret ? ret : (int)arg.out_nr_pages;
}

KVP_PUBLIC
int kvpool_commit(struct kvpool *kp, const struct kvpool_len_entry *entries,
		  unsigned int count, struct kvpool_batch_result *res)
{
	int ret = kvp_batch(kp, KVPOOL_COMMIT, 0, entries,
			    sizeof(*entries), count, res);

	/* A commit frees nothing; a kernel saying otherwise is ignored. */
	return ret < 0 ? ret : 0;
}

KVP_PUBLIC
int kvpool_trim(struct kvpool *kp, const struct kvpool_handle *handles,
		unsigned int count, struct kvpool_batch_result *res)
{
	return kvp_batch(kp, KVPOOL_TRIM, 0, handles, sizeof(*handles),
			 count, res);
}

KVP_PUBLIC
int kvpool_release(struct kvpool *kp, const struct kvpool_handle *handles,
		   unsigned int count, struct kvpool_batch_result *res)
{
	return kvp_batch(kp, KVPOOL_RELEASE, 0, handles, sizeof(*handles),
			 count, res);
}

KVP_PUBLIC
int kvpool_release_donate(struct kvpool *kp,
			  const struct kvpool_handle *handles,
			  unsigned int count, struct kvpool_batch_result *res)
{
	return kvp_batch(kp, KVPOOL_RELEASE, KVPOOL_RELEASE_DONATE, handles,
			 sizeof(*handles), count, res);
}

KVP_PUBLIC
int kvpool_donate(struct kvpool *kp, const struct kvpool_len_entry *entries,
		  unsigned int count, struct kvpool_batch_result *res)
{
	return kvp_batch(kp, KVPOOL_DONATE, 0, entries, sizeof(*entries),
			 count, res);
}

KVP_PUBLIC
int kvpool_attach_prefix(struct kvpool *kp, struct kvpool_handle handle,
			 const uint32_t *pages, unsigned int nr_pages)
{
	struct kvpool_attach arg = {
		.size = sizeof(arg),
		.handle = handle,
		.nr_pages = nr_pages,
		.page_entry_len = sizeof(*pages),
		.pages = kvp_ptr(pages),
	};

	return kvp_ioctl(kp->fd, KVPOOL_ATTACH_PREFIX, &arg);
}

KVP_PUBLIC
int kvpool_cache_evict(struct kvpool *kp, const uint32_t *pages,
		       unsigned int count, struct kvpool_batch_result *res)
{
	return kvp_batch(kp, KVPOOL_CACHE_EVICT, 0, pages, sizeof(*pages),
			 count, res);
}

KVP_PUBLIC
int kvpool_swa_free(struct kvpool *kp, const struct kvpool_len_entry *entries,
		    unsigned int count, struct kvpool_batch_result *res)
{
	return kvp_batch(kp, KVPOOL_SWA_FREE, 0, entries, sizeof(*entries),
			 count, res);
}

/*
 * TO_SLOT, FROM_SLOT and SLOT_RELEASE share struct kvpool_slot: the
 * session id, the row's handle going in (@in, TO_SLOT) or coming out
 * (@out, FROM_SLOT; 0 going in), and the pages the slot held or holds.
 * Returns those pages, or -errno (and then *@out is left alone).
 */
static int kvp_slot(struct kvpool *kp, unsigned long cmd, uint64_t session_id,
		    const struct kvpool_handle *in, struct kvpool_handle *out)
{
	struct kvpool_slot arg = {
		.size = sizeof(arg),
		.session_id = session_id,
	};
	int ret;

	if (in)
		arg.handle = *in;
	ret = kvp_ioctl(kp->fd, cmd, &arg);
	if (ret)
		return ret;
	if (out)
		*out = arg.handle;
	return (int)arg.out_nr_pages;
}

KVP_PUBLIC
int kvpool_to_slot(struct kvpool *kp, struct kvpool_handle handle,
		   uint64_t session_id)
{
	return kvp_slot(kp, KVPOOL_TO_SLOT, session_id, &handle, NULL);
}

KVP_PUBLIC
int kvpool_from_slot(struct kvpool *kp, uint64_t session_id,
		     struct kvpool_handle *handle)
{
	return kvp_slot(kp, KVPOOL_FROM_SLOT, session_id, NULL, handle);
}

KVP_PUBLIC
int kvpool_slot_release(struct kvpool *kp, uint64_t session_id)
{
	return kvp_slot(kp, KVPOOL_SLOT_RELEASE, session_id, NULL, NULL);
}

static int kvp_query(struct kvpool *kp, struct kvpool_row_query *arg,
		     uint32_t *pages, unsigned int pages_cap,
		     struct kvpool_row_query *q)
{
	int ret;

	arg->size = sizeof(*arg);
	arg->pages_cap = pages_cap;
	/* Checked even when pages_cap is 0: always the real length. */
	arg->page_entry_len = sizeof(*pages);
	arg->pages = kvp_ptr(pages);
	ret = kvp_ioctl(kp->fd, KVPOOL_ROW_QUERY, arg);
	if (ret)
		return ret;
	if (q)
		*q = *arg;
	return (int)arg->out_nr_pages;
}

KVP_PUBLIC
int kvpool_row_query(struct kvpool *kp, struct kvpool_handle handle,
		     uint32_t *pages, unsigned int pages_cap,
		     struct kvpool_row_query *q)
{
	struct kvpool_row_query arg = { .handle = handle };

	return kvp_query(kp, &arg, pages, pages_cap, q);
}

KVP_PUBLIC
int kvpool_slot_query(struct kvpool *kp, uint64_t session_id,
		      uint32_t *pages, unsigned int pages_cap,
		      struct kvpool_row_query *q)
{
	struct kvpool_row_query arg = {
		.flags = KVPOOL_QUERY_BY_SLOT,
		.session_id = session_id,
	};

	return kvp_query(kp, &arg, pages, pages_cap, q);
}

KVP_PUBLIC
int kvpool_verify(struct kvpool *kp, struct kvpool_verify *v)
{
	struct kvpool_verify arg = { .size = sizeof(arg) };
	int ret;

	ret = kvp_ioctl(kp->fd, KVPOOL_VERIFY, &arg);
	if (ret)
		return ret;
	if (v)
		*v = arg;
	/* Bounded by nr_pages + nr_rows (< 2^29): fits an int. */
	return (int)arg.out_violations;
}

/* EXPORT of a row or a slot: the new file descriptor, or -errno. */
static int kvp_export(struct kvpool *kp, struct kvpool_export *arg)
{
	int ret;

	arg->size = sizeof(*arg);
	ret = kvp_ioctl(kp->fd, KVPOOL_EXPORT, arg);
	/* The kernel installed out_fd only on success (it is -1 otherwise). */
	return ret ? ret : arg->out_fd;
}

KVP_PUBLIC
int kvpool_export(struct kvpool *kp, struct kvpool_handle handle)
{
	struct kvpool_export arg = { .handle = handle };

	return kvp_export(kp, &arg);
}

KVP_PUBLIC
int kvpool_export_slot(struct kvpool *kp, uint64_t session_id)
{
	struct kvpool_export arg = {
		.flags = KVPOOL_EXPORT_SLOT,
		.session_id = session_id,
	};

	return kvp_export(kp, &arg);
}

KVP_PUBLIC
int kvpool_import(struct kvpool *kp, int fd, struct kvpool_handle *out)
{
	struct kvpool_import arg = {
		.size = sizeof(arg),
		.fd = fd,
	};
	int ret;

	ret = kvp_ioctl(kp->fd, KVPOOL_IMPORT, &arg);
	if (ret)
		return ret;
	*out = arg.out_handle;
	return (int)arg.out_nr_pages;
}

/*
 * SCM_RIGHTS needs at least one byte of data on a stream socket; its
 * value means nothing. Room for a few descriptors on receipt, so that a
 * peer sending more than one does not leave us guessing: the first is
 * returned, the others closed.
 */
#define KVP_FD_BYTE	'K'
#define KVP_RECV_FDS	4

/* A message of the one byte at @byte, with @ctl_len bytes of control. */
static void kvp_fd_msg(struct msghdr *msg, struct iovec *iov, char *byte,
		       void *ctl, size_t ctl_len)
{
	*iov = (struct iovec){ .iov_base = byte, .iov_len = 1 };
	*msg = (struct msghdr){
		.msg_iov = iov,
		.msg_iovlen = 1,
		.msg_control = ctl,
		.msg_controllen = ctl_len,
	};
}

KVP_PUBLIC
int kvpool_send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	char byte = KVP_FD_BYTE;
	struct iovec iov;
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	kvp_fd_msg(&msg, &iov, &byte, ctl.buf, sizeof(ctl.buf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));

	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

KVP_PUBLIC
int kvpool_recv_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(KVP_RECV_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	char byte;
	struct iovec iov;
	struct msghdr msg;
	struct cmsghdr *cm;
	int fd = -1;
	ssize_t n;

	kvp_fd_msg(&msg, &iov, &byte, ctl.buf, sizeof(ctl.buf));
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;

	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t i, nr;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		nr = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nr; i++) {
			int got;

			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(got));
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	if (fd >= 0)
		return fd;
	/* Nothing read at all: the peer is gone. */
	return n ? -EBADMSG : -ECONNRESET;
}

KVP_PUBLIC
int kvpool_pressure(struct kvpool *kp, struct kvpool_pressure *p)
{
	struct kvpool_pressure arg = { .size = sizeof(arg) };
	int ret;

	ret = kvp_ioctl(kp->fd, KVPOOL_PRESSURE, &arg);
	if (ret)
		return ret;
	if (p)
		*p = arg;
	/* Never more than the client's cache pages (< 2^27): fits an int. */
	return (int)arg.out_ask_pages;
}

KVP_PUBLIC
int kvpool_wait_pressure(struct kvpool *kp, int timeout_ms)
{
	struct pollfd pfd = { .fd = kp->fd, .events = POLLPRI };
	int ret;

	/*
	 * A module without pressure polls as a plain file, never POLLPRI:
	 * waiting would only ever time out.
	 */
	if (!(kp->info.out_features & KVPOOL_FEAT_PRESSURE))
		return -ENOTTY;
	/* No retry on EINTR: the caller knows what is left of its timeout. */
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return -errno;
	if (!ret)
		return 0;
	if (pfd.revents & POLLPRI)
		return 1;
	return pfd.revents & POLLNVAL ? -EBADF : -EIO;
}

/* Run one control ioctl on a freshly opened control device. */
static int kvp_control(unsigned long cmd, void *arg)
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
	 * Always the ABI 2 struct: a module of ABI 1 takes its zero GPU
	 * tail as no GPU, and refuses KVPOOL_CREATE_GPU itself.
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

/* ---- the arena ---- */

/* Chunks asked for per KVPOOL_ARENA_FDS: the descriptors open at once. */
#define KVP_ARENA_FD_BATCH	16

static int kvp_arena(struct kvpool *kp, struct kvpool_arena *arg)
{
	arg->size = sizeof(*arg);
	return kvp_ioctl(kp->fd, KVPOOL_ARENA, arg);
}

KVP_PUBLIC
int kvpool_arena_info(struct kvpool *kp, struct kvpool_arena *out)
{
	struct kvpool_arena arg = { 0 };
	int ret;

	ret = kvp_arena(kp, &arg);
	if (ret)
		return ret;
	*out = arg;
	return 0;
}

KVP_PUBLIC
int kvpool_arena_fds(struct kvpool *kp, uint32_t first_chunk, uint32_t count,
		     struct kvpool_arena_fd *fds, struct kvpool_arena *info)
{
	struct kvpool_arena arg = {
		.flags = KVPOOL_ARENA_FDS,
		.first_chunk = first_chunk,
		.count = count,
		.fd_entry_len = sizeof(*fds),
		.fds = kvp_ptr(fds),
	};
	int ret;

	ret = kvp_arena(kp, &arg);
	if (ret)
		return ret;
	if (info)
		*info = arg;
	/* At most KVPOOL_ARENA_MAX_CHUNKS: fits an int. */
	return (int)count;
}

static void kvp_close_fds(const struct kvpool_arena_fd *fds, uint32_t from,
			  uint32_t to)
{
	for (; from < to; from++)
		close(fds[from].out_fd);
}

/*
 * Map the @n chunks of @fds at @base, closing each descriptor as soon as
 * it is mapped, and every one of them on failure. A chunk must start where
 * the last one ended (*@next) and end within the @bytes reserved: mapping
 * MAP_FIXED anywhere else would replace someone else's memory.
 */
static int kvp_map_chunks(char *base, uint64_t bytes,
			  const struct kvpool_arena_fd *fds, uint32_t n,
			  uint64_t *next)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct kvpool_arena_fd *c = &fds[i];
		void *p;

		if (c->out_fd < 0 || c->out_offset != *next || !c->out_bytes ||
		    c->out_bytes > bytes - *next) {
			kvp_close_fds(fds, i, n);
			return -EIO;
		}
		p = mmap(base + c->out_offset, (size_t)c->out_bytes,
			 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 c->out_fd, 0);
		if (p == MAP_FAILED) {
			int err = -errno;

			kvp_close_fds(fds, i, n);
			return err;
		}
		close(c->out_fd);
		*next += c->out_bytes;
	}
	return 0;
}

/* ---- CUDA arenas ---- */

/*
 * The driver API is reached through dlopen(): the library must load, and
 * its host arenas work, on machines with no NVIDIA driver at all. The
 * names looked up are those cuda.h renames its functions to (cuMemMap is
 * itself, cuDevicePrimaryCtxRelease is cuDevicePrimaryCtxRelease_v2):
 * the plain names can be legacy entry points with other signatures.
 */
#define KVP_CU_STR(x)	#x
#define KVP_CU_NAME(x)	KVP_CU_STR(x)

#define KVP_CU_CALLS(X)							\
	X(cuInit) X(cuGetErrorName) X(cuGetErrorString)			\
	X(cuDeviceGetByPCIBusId) X(cuDeviceGetPCIBusId)			\
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)	\
	X(cuCtxGetCurrent) X(cuCtxSetCurrent)				\
	X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease)	\
	X(cuMemExportToShareableHandle)					\
	X(cuMemImportFromShareableHandle)				\
	X(cuMemGetAllocationPropertiesFromHandle)			\
	X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)		\
	X(cuMemUnmap) X(cuMemSetAccess)

static struct {
#define KVP_CU_FIELD(f) __typeof__(&f) f;
	KVP_CU_CALLS(KVP_CU_FIELD)
#undef KVP_CU_FIELD
} kvp_cu;

static pthread_once_t kvp_cu_once = PTHREAD_ONCE_INIT;
/* Set once by kvp_cu_load(): why there is no driver, "" if there is. */
static char kvp_cu_missing[256];

/* The text kvpool_arena_error() returns: this thread's last failure. */
static __thread char kvp_arena_err[512];

static void kvp_arena_clear(void)
{
	kvp_arena_err[0] = '\0';
}

static void __attribute__((format(printf, 1, 2)))
kvp_arena_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kvp_arena_err, sizeof(kvp_arena_err), fmt, ap);
	va_end(ap);
}

/* A failure that left no text of its own gets kvpool_strerror()'s. */
static int kvp_arena_done(int ret)
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

static void kvp_cu_load(void)
{
	/* secure_getenv(): a setuid program must not load the caller's. */
	const char *path = secure_getenv("KVPOOL_LIBCUDA");
	const char *err;
	void *dl;

	if (!path || !*path)
		path = "libcuda.so.1";
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		err = dlerror();
		if (!err || strstr(err, "No such file"))
			snprintf(kvp_cu_missing, sizeof(kvp_cu_missing),
				 "no CUDA driver (%s not found)", path);
		else
			snprintf(kvp_cu_missing, sizeof(kvp_cu_missing),
				 "no CUDA driver (%s)", err);
		return;
	}
#define KVP_CU_LOOKUP(f)						\
	kvp_cu.f = (__typeof__(&f))dlsym(dl, KVP_CU_NAME(f));		\
	if (!kvp_cu.f) {						\
		snprintf(kvp_cu_missing, sizeof(kvp_cu_missing),	\
			 "no CUDA driver (%s has no %s)", path,		\
			 KVP_CU_NAME(f));				\
		memset(&kvp_cu, 0, sizeof(kvp_cu));			\
		dlclose(dl);						\
		return;							\
	}
	KVP_CU_CALLS(KVP_CU_LOOKUP)
#undef KVP_CU_LOOKUP
	/* Never closed: its code may run until the process ends. */
}

/* 0 once the driver is loaded, else -ELIBACC with the reason as text. */
static int kvp_cu_ready(void)
{
	pthread_once(&kvp_cu_once, kvp_cu_load);
	if (kvp_cu_missing[0]) {
		kvp_arena_fail("%s", kvp_cu_missing);
		return -ELIBACC;
	}
	return 0;
}

/*
 * 0 for CUDA_SUCCESS, else the errno a caller gets (-ENOMEM for the
 * driver's out of memory, -EIO for the rest), with "@what: NAME: text".
 */
static int kvp_cu_check(CUresult r, const char *what)
{
	const char *name = NULL, *text = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (kvp_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "unknown CUDA error";
	if (kvp_cu.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
		text = "no description";
	kvp_arena_fail("%s: %s: %s", what, name, text);
	return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}

#define KVP_CU(call, fn)	kvp_cu_check(kvp_cu.fn call, #fn)

/* "DDDD:BB:DD.F" of a kvpool_pci_parse() domain and devid. */
static void kvp_pci_name(char *buf, size_t size, uint32_t domain,
			 uint32_t devid)
{
	snprintf(buf, size, "%04x:%02x:%02x.%x", domain, devid >> 8 & 0xff,
		 devid >> 3 & 0x1f, devid & 7);
}

/* What the CUDA side of an arena needs to know of the pool's GPU. */
struct kvp_cu_gpu {
	CUdevice dev;
	char bdf[16];
	size_t gran;
	bool retained;		/* its primary context, by us */
};

/*
 * Load the driver, find pool @pool_id's GPU in it, make sure this thread
 * has a current context (the device's primary one, retained, if it had
 * none) and read the granularity of the allocations @prop describes.
 * @none is the errno for a pool with no GPU.
 */
static int kvp_cu_open(unsigned int pool_id, int none, struct kvp_cu_gpu *g,
		       CUmemAllocationProp *prop)
{
	uint32_t domain, devid;
	CUcontext ctx = NULL;
	int ret;

	memset(g, 0, sizeof(*g));
	ret = kvpool_pool_gpu(pool_id, &domain, &devid);
	if (ret < 0)
		return ret;
	if (!ret) {
		kvp_arena_fail("pool %u has no GPU (create it with one: kvpoolctl create --gpu)",
			       pool_id);
		return none;
	}
	kvp_pci_name(g->bdf, sizeof(g->bdf), domain, devid);
	ret = kvp_cu_ready();
	if (ret)
		return ret;
	ret = KVP_CU((0), cuInit);
	if (!ret)
		ret = KVP_CU((&g->dev, g->bdf), cuDeviceGetByPCIBusId);
	if (!ret)
		ret = KVP_CU((&ctx), cuCtxGetCurrent);
	if (ret)
		return ret;
	if (!ctx) {
		ret = KVP_CU((&ctx, g->dev), cuDevicePrimaryCtxRetain);
		if (ret)
			return ret;
		g->retained = true;
		ret = KVP_CU((ctx), cuCtxSetCurrent);
		if (ret)
			goto fail;
	}

	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = g->dev;
	prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	ret = KVP_CU((&g->gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
		     cuMemGetAllocationGranularity);
	if (!ret && (!g->gran || g->gran > (1ULL << 32))) {
		kvp_arena_fail("CUDA device %d (%s) has a granularity of %zu bytes",
			       (int)g->dev, g->bdf, g->gran);
		ret = -EIO;
	}
	if (!ret)
		return 0;
fail:
	if (g->retained) {
		kvp_cu.cuCtxSetCurrent(NULL);
		kvp_cu.cuDevicePrimaryCtxRelease(g->dev);
	}
	return ret;
}

/* Chunk @c of @fds imported and mapped at @base + its offset. */
static int kvp_cu_map_chunk(const struct kvp_cu_gpu *g, CUdeviceptr base,
			    const struct kvpool_arena_fd *c, uint32_t index)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	char other[16] = "?";
	int ret;

	ret = KVP_CU((&h, (void *)(uintptr_t)c->out_fd,
		      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		     cuMemImportFromShareableHandle);
	/* The handle holds the memory now: the descriptor is no use. */
	close(c->out_fd);
	if (ret)
		return ret;
	memset(&prop, 0, sizeof(prop));
	ret = KVP_CU((&prop, h), cuMemGetAllocationPropertiesFromHandle);
	if (!ret && (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		     prop.location.id != g->dev)) {
		kvp_cu.cuDeviceGetPCIBusId(other, sizeof(other),
					   prop.location.id);
		kvp_arena_fail("chunk %u is on CUDA device %d (%s), the pool's GPU is device %d (%s)",
			       index, prop.location.id, other, (int)g->dev,
			       g->bdf);
		ret = -EXDEV;
	}
	if (!ret)
		ret = KVP_CU((base + c->out_offset, (size_t)c->out_bytes, 0, h,
			      0), cuMemMap);
	/* A mapping keeps its memory; the handle is not needed for it. */
	kvp_cu.cuMemRelease(h);
	return ret;
}

static void kvp_cu_close(struct kvp_cu_gpu *g)
{
	CUcontext cur = NULL;
	CUcontext ctx = NULL;

	if (!g->retained)
		return;
	/* Not leave this thread in a context we are letting go of. */
	if (kvp_cu.cuCtxGetCurrent(&cur) == CUDA_SUCCESS &&
	    kvp_cu.cuDevicePrimaryCtxRetain(&ctx, g->dev) == CUDA_SUCCESS) {
		if (cur == ctx)
			kvp_cu.cuCtxSetCurrent(NULL);
		kvp_cu.cuDevicePrimaryCtxRelease(g->dev);
	}
	kvp_cu.cuDevicePrimaryCtxRelease(g->dev);
	g->retained = false;
}

/* The view's __resv, for a CUDA arena: what unmap must give back. */
#define KVP_VIEW_RETAINED	0	/* 1: a primary context retained */
#define KVP_VIEW_DEVICE		1	/* its CUdevice */

static int kvp_cu_map(struct kvpool *kp, const struct kvpool_arena *a,
		      struct kvpool_arena_view *v)
{
	struct kvpool_arena_fd fds[KVP_ARENA_FD_BATCH];
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	struct kvpool_arena b;
	struct kvp_cu_gpu g;
	uint64_t next = 0;
	CUdeviceptr base;
	uint32_t first, n, i;
	int ret;

	ret = kvp_cu_open(kp->info.out_pool_id, -ENODEV, &g, &prop);
	if (ret)
		return ret;
	if (a->out_bytes % g.gran) {
		kvp_arena_fail("the arena's %llu bytes are no multiple of CUDA device %d's granularity, %zu",
			       (unsigned long long)a->out_bytes, (int)g.dev,
			       g.gran);
		ret = -EINVAL;
		goto out_ctx;
	}
	ret = KVP_CU((&base, (size_t)a->out_bytes, g.gran, 0, 0),
		     cuMemAddressReserve);
	if (ret)
		goto out_ctx;

	for (first = 0; first < a->out_nr_chunks; first += n) {
		n = a->out_nr_chunks - first;
		if (n > KVP_ARENA_FD_BATCH)
			n = KVP_ARENA_FD_BATCH;
		ret = kvpool_arena_fds(kp, first, n, fds, &b);
		if (ret < 0)
			goto out_unmap;
		ret = 0;
		if (b.out_kind != a->out_kind || b.out_bytes != a->out_bytes ||
		    b.out_nr_chunks != a->out_nr_chunks ||
		    b.out_page_bytes != a->out_page_bytes)
			ret = -EIO;
		for (i = 0; i < n; i++) {
			const struct kvpool_arena_fd *c = &fds[i];

			if (ret) {
				close(c->out_fd);
				continue;
			}
			if (c->out_fd < 0 || c->out_offset != next ||
			    !c->out_bytes ||
			    c->out_bytes > a->out_bytes - next) {
				close(c->out_fd);
				ret = -EIO;
				continue;
			}
			if (c->out_offset % g.gran || c->out_bytes % g.gran) {
				kvp_arena_fail("chunk %u (%llu bytes at %llu) is no multiple of CUDA device %d's granularity, %zu",
					       first + i,
					       (unsigned long long)c->out_bytes,
					       (unsigned long long)c->out_offset,
					       (int)g.dev, g.gran);
				close(c->out_fd);
				ret = -EINVAL;
				continue;
			}
			ret = kvp_cu_map_chunk(&g, base, c, first + i);
			if (!ret)
				next += c->out_bytes;
		}
		if (ret)
			goto out_unmap;
	}
	if (next != a->out_bytes) {
		ret = -EIO;
		goto out_unmap;
	}

	memset(&access, 0, sizeof(access));
	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = g.dev;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	ret = KVP_CU((base, (size_t)a->out_bytes, &access, 1), cuMemSetAccess);
	if (ret)
		goto out_unmap;

	v->base = (void *)(uintptr_t)base;
	v->__resv[KVP_VIEW_RETAINED] = g.retained;
	v->__resv[KVP_VIEW_DEVICE] = (uint32_t)g.dev;
	return 0;

out_unmap:
	/* The chunks mapped so far lie end to end from base. */
	if (next)
		kvp_cu.cuMemUnmap(base, (size_t)next);
	kvp_cu.cuMemAddressFree(base, (size_t)a->out_bytes);
out_ctx:
	kvp_cu_close(&g);
	return ret;
}

static int kvp_cu_unmap(struct kvpool_arena_view *v)
{
	CUdeviceptr base = (CUdeviceptr)(uintptr_t)v->base;
	struct kvp_cu_gpu g = { 0 };
	int ret;

	/* Mapped by this library, so the driver was loaded. */
	ret = kvp_cu_ready();
	if (!ret)
		ret = KVP_CU((base, (size_t)v->bytes), cuMemUnmap);
	if (!ret)
		ret = KVP_CU((base, (size_t)v->bytes), cuMemAddressFree);
	if (ret)
		return ret;
	if (v->__resv[KVP_VIEW_RETAINED]) {
		g.dev = (CUdevice)v->__resv[KVP_VIEW_DEVICE];
		g.retained = true;
		kvp_cu_close(&g);
	}
	return 0;
}

KVP_PUBLIC
int kvpool_arena_map(struct kvpool *kp, struct kvpool_arena_view *v)
{
	struct kvpool_arena_fd fds[KVP_ARENA_FD_BATCH];
	struct kvpool_arena a, b;
	uint64_t next = 0;
	uint32_t first, n;
	char *base;
	int ret;

	memset(v, 0, sizeof(*v));
	kvp_arena_clear();
	ret = kvpool_arena_info(kp, &a);
	if (ret)
		return kvp_arena_done(ret);
	if (a.out_kind == KVPOOL_ARENA_NONE)
		return kvp_arena_done(-ENODATA);
	/* Host memory maps with mmap(2), CUDA's with the driver's calls. */
	if (a.out_kind != KVPOOL_ARENA_HOST && a.out_kind != KVPOOL_ARENA_CUDA)
		return kvp_arena_done(-EOPNOTSUPP);
	if (!a.out_nr_chunks || !a.out_page_bytes || !a.out_bytes ||
	    a.out_bytes / a.out_page_bytes < kp->info.out_nr_pages)
		return kvp_arena_done(-EIO);
	if (a.out_bytes > SIZE_MAX)
		return kvp_arena_done(-ENOMEM);

	if (a.out_kind == KVPOOL_ARENA_CUDA) {
		ret = kvp_cu_map(kp, &a, v);
		if (ret)
			return kvp_arena_done(ret);
		goto done;
	}

	/* One range for all chunks: page i is base + i * page_bytes. */
	base = mmap(NULL, (size_t)a.out_bytes, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -errno;

	for (first = 0; first < a.out_nr_chunks; first += n) {
		n = a.out_nr_chunks - first;
		if (n > KVP_ARENA_FD_BATCH)
			n = KVP_ARENA_FD_BATCH;
		ret = kvpool_arena_fds(kp, first, n, fds, &b);
		if (ret < 0)
			goto fail;
		/* An arena is set once and never changes: a kernel bug. */
		if (b.out_kind != a.out_kind || b.out_bytes != a.out_bytes ||
		    b.out_nr_chunks != a.out_nr_chunks ||
		    b.out_page_bytes != a.out_page_bytes) {
			kvp_close_fds(fds, 0, n);
			ret = -EIO;
			goto fail;
		}
		ret = kvp_map_chunks(base, a.out_bytes, fds, n, &next);
		if (ret)
			goto fail;
	}
	/* The chunks must fill the range: no PROT_NONE hole inside it. */
	if (next != a.out_bytes) {
		ret = -EIO;
		goto fail;
	}

	v->base = base;
done:
	v->bytes = a.out_bytes;
	v->page_bytes = a.out_page_bytes;
	v->kind = a.out_kind;
	v->nr_pages = kp->info.out_nr_pages;
	v->nr_chunks = a.out_nr_chunks;
	return 0;

fail:
	/* Chunks mapped so far go with the reservation. */
	munmap(base, (size_t)a.out_bytes);
	return kvp_arena_done(ret);
}

KVP_PUBLIC
int kvpool_arena_unmap(struct kvpool_arena_view *v)
{
	int ret = 0;

	kvp_arena_clear();
	if (v->base && v->kind == KVPOOL_ARENA_CUDA)
		ret = kvp_cu_unmap(v);
	else if (v->base && munmap(v->base, (size_t)v->bytes))
		ret = -errno;
	if (ret)
		return kvp_arena_done(ret);
	memset(v, 0, sizeof(*v));
	return 0;
}

KVP_PUBLIC
void *kvpool_layer_addr(const struct kvpool_arena_view *v, uint32_t nr_layers,
			enum kvpool_layout layout, uint32_t layer,
			uint32_t page)
{
	uint64_t slice, off;

	if (!v->base || !v->page_bytes || !nr_layers ||
	    v->page_bytes % nr_layers || layer >= nr_layers ||
	    page >= v->nr_pages)
		return NULL;
	slice = v->page_bytes / nr_layers;
	switch (layout) {
	case KVPOOL_LAYOUT_PAGE_MAJOR:
		off = (uint64_t)page * v->page_bytes + layer * slice;
		break;
	case KVPOOL_LAYOUT_LAYER_MAJOR:
		/* slice * total is at most bytes: no overflow. */
		off = layer * (slice * (v->bytes / v->page_bytes)) +
		      (uint64_t)page * slice;
		break;
	default:
		return NULL;
	}
	return (char *)v->base + off;
}

/*
 * Which chunk to blame for @ret from CTL_ARENA_SET: as kvp_error_index(),
 * only an errno that can be about one chunk, for a count the kernel looked
 * at the chunks of, and an index inside them, is believed.
 */
static __u32 kvp_chunk_index(int ret, uint32_t nr_chunks, __u32 index)
{
	if (ret != -EINVAL && ret != -EBADF && ret != -E2BIG)
		return KVPOOL_NO_INDEX;
	if (!nr_chunks || nr_chunks > KVPOOL_ARENA_MAX_CHUNKS)
		return KVPOOL_NO_INDEX;
	return index < nr_chunks ? index : KVPOOL_NO_INDEX;
}

KVP_PUBLIC
int kvpool_arena_set(unsigned int pool_id, uint32_t kind, uint64_t page_bytes,
		     const struct kvpool_arena_chunk *chunks,
		     uint32_t nr_chunks, uint32_t *error_index)
{
	struct kvpool_ctl_arena_set arg = {
		.size = sizeof(arg),
		.pool_id = pool_id,
		.kind = kind,
		.page_bytes = page_bytes,
		.nr_chunks = nr_chunks,
		.chunk_entry_len = sizeof(*chunks),
		.chunks = kvp_ptr(chunks),
	};
	int ret;

	ret = kvp_control(KVPOOL_CTL_ARENA_SET, &arg);
	if (error_index)
		*error_index = kvp_chunk_index(ret, nr_chunks,
					       arg.out_error_index);
	return ret;
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
static int kvp_plan(uint32_t nr_pages, uint64_t page_bytes,
		    uint32_t nr_chunks, uint64_t align, uint64_t *chunk_bytes)
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
static int kvp_create_start(unsigned int pool_id, uint32_t *error_index,
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

/* One CUDA allocation of @bytes as @prop says, exported as a descriptor. */
static int kvp_cu_chunk(const CUmemAllocationProp *prop, uint64_t bytes,
			uint32_t index, int *fd)
{
	CUmemGenericAllocationHandle h;
	int ret;

	*fd = -1;
	ret = KVP_CU((&h, (size_t)bytes, prop, 0), cuMemCreate);
	if (ret) {
		/* Which one: the text is worth more with it. */
		char what[sizeof(kvp_arena_err)];

		snprintf(what, sizeof(what), "%s", kvp_arena_err);
		kvp_arena_fail("chunk %u: %s", index, what);
		return ret;
	}
	ret = KVP_CU((fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
		     cuMemExportToShareableHandle);
	/* The descriptor holds the memory now, or nothing does. */
	kvp_cu.cuMemRelease(h);
	if (ret) {
		*fd = -1;
		return ret;
	}
	/* Not for a program this one runs, as the library's own files. */
	if (fcntl(*fd, F_SETFD, FD_CLOEXEC)) {
		ret = -errno;
		close(*fd);
		*fd = -1;
	}
	return ret;
}

KVP_PUBLIC
int kvpool_arena_create_cuda(unsigned int pool_id, uint64_t page_bytes,
			     uint32_t nr_chunks, uint32_t *error_index)
{
	struct kvpool_arena_chunk chunks[KVPOOL_ARENA_MAX_CHUNKS];
	uint64_t bytes[KVPOOL_ARENA_MAX_CHUNKS];
	CUmemAllocationProp prop;
	struct kvpool_info info;
	struct kvp_cu_gpu g;
	uint32_t i, made = 0;
	int ret;

	ret = kvp_create_start(pool_id, error_index, &info);
	if (ret)
		return ret;
	ret = kvp_cu_open(pool_id, -EINVAL, &g, &prop);
	if (ret)
		return kvp_arena_done(ret);
	ret = kvp_plan(info.out_nr_pages, page_bytes, nr_chunks, g.gran, bytes);
	if (ret) {
		kvp_arena_fail("no plan of %u chunks for %u pages of %llu bytes in units of CUDA device %d's granularity, %zu: %s",
			       nr_chunks, info.out_nr_pages,
			       (unsigned long long)page_bytes, (int)g.dev,
			       g.gran, kvpool_strerror(ret));
		goto out;
	}

	memset(chunks, 0, sizeof(chunks));
	for (made = 0; made < nr_chunks; made++) {
		int fd;

		ret = kvp_cu_chunk(&prop, bytes[made], made, &fd);
		if (ret)
			goto out;
		chunks[made].fd = fd;
		chunks[made].bytes = bytes[made];
	}
	ret = kvpool_arena_set(pool_id, KVPOOL_ARENA_CUDA, page_bytes, chunks,
			       nr_chunks, error_index);
	if (ret)
		kvp_arena_fail("KVPOOL_CTL_ARENA_SET: %s", kvpool_strerror(ret));
out:
	/* The pool holds its own references now, or nothing was given. */
	for (i = 0; i < made; i++)
		close(chunks[i].fd);
	kvp_cu_close(&g);
	return kvp_arena_done(ret);
}

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

/* For programs built before ABI 2: see kvp_stats_v1(). */
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

struct kvp_errtext {
	int err;
	const char *text;
};

/*
 * One line per errno of the "General ioctl format" table in
 * <linux/kvpool.h>, worded for someone reading a log, plus EACCES, which
 * open(2) gives for the root-only (0600) device nodes. EMFILE comes from
 * open(2) (the process's descriptor limit or the pool's client limit) and
 * from KVPOOL_EXPORT and KVPOOL_ARENA (no descriptor free for the export
 * file or the arena's chunks).
 */
static const struct kvp_errtext kvp_errtexts[] = {
	{ ENOTTY, "not a kvpool device, or an ioctl this kernel does not know" },
	{ EFAULT, "bad address passed to the kernel" },
	{ EINVAL, "invalid argument: a count, length, element length, field, limit or duplicate row the pool refuses, a donate of a row whose window was freed past its cached prefix, not an export file, or a GPU that is no display controller" },
	{ E2BIG, "request struct or array element too new for this kernel (non-zero unknown tail, or longer than a page)" },
	{ EOPNOTSUPP, "flag or operation not supported by this kernel" },
	{ ENOENT, "not found: from an ioctl, no such row, slot or prefix-cache page held by this client (or a handle generation never issued); from opening a device, no such device node (no such pool, the module not loaded, or no devtmpfs/udev to make the node)" },
	{ ESTALE, "stale handle: the row was released and reused (an older generation)" },
	{ ENOSPC, "pool exhausted: not enough free pages or rows (pages guaranteed to other tenants are not free)" },
	{ EDQUOT, "tenant limit reached: the request would take the tenant past its max_pages or max_rows" },
	{ ENOBUFS, "output array too small" },
	{ EEXIST, "session id already names a slot of this client, or the pool has an arena already" },
	{ EALREADY, "already done: that prefix is in the cache already (length not past the row's protected part), or the export was imported already" },
	{ ENOMEM, "out of kernel memory" },
	{ EPERM, "operation not permitted: needs CAP_SYS_ADMIN (control operations and verify); the device's file permissions let this process in" },
	{ EACCES, "permission denied opening the kvpool device: its file mode and owner keep this user out (root only by default; a missing capability is EPERM, not this)" },
	{ EBUSY, "busy: a cache page is pinned by a row that borrows it (evict, export), or the pool still has clients or export files" },
	{ EMFILE, "too many open files (no descriptor free, e.g. for an export or an arena's chunks), or the pool has its maximum of clients (65536) or tenants" },
	{ ENODEV, "no such pool, the pool is being destroyed, or the module is still loading" },
	{ EBADF, "bad file descriptor: not an open file (an import's, or an arena chunk's)" },
	{ EXDEV, "the export file belongs to another pool" },
	{ EAGAIN, "try again: another thread of this client changed the slot while from_slot ran (nothing changed), or a non-blocking socket had nothing" },
	{ ENFILE, "the system's file table is full (no file for an export)" },
	{ ENXIO, "no PCI device at the GPU address a pool was to be created for (kvpoolctl gpus lists the GPUs)" },
	{ ENODATA, "the pool has no arena: no memory behind its page ids yet (kvpoolctl arena create)" },
	{ ELIBACC, "no CUDA driver: libcuda.so.1 (or $KVPOOL_LIBCUDA) could not be loaded, for a CUDA arena" },
};

KVP_PUBLIC
const char *kvpool_version(void)
{
	return KVPOOL_VERSION;
}

KVP_PUBLIC
const char *kvpool_strerror(int err)
{
	size_t i;

	if (err == 0)
		return "success";
	if (err < 0 && err != INT_MIN)
		err = -err;
	for (i = 0; i < ARRAY_SIZE(kvp_errtexts); i++)
		if (kvp_errtexts[i].err == err)
			return kvp_errtexts[i].text;
	return strerror(err);
}
