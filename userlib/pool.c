// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: a pool's file descriptor. Opening a pool and what its fd
 * answers (info, stats), the row and slot ops, verify, export and import
 * of a row or slot, passing an fd over a socket, and pressure.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

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

static int kvp_stats(struct kvpool *kp, struct kvpool_stats *stats,
		     size_t len)
{
	struct kvpool_stats arg = { .size = sizeof(arg) };

	return kvp_ioctl_out(kp->fd, KVPOOL_STATS, &arg, stats, len);
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
	int ret = kvp_ioctl_out(kp->fd, KVPOOL_VERIFY, &arg, v, sizeof(arg));

	/* Bounded by nr_pages + nr_rows (< 2^29): fits an int. */
	return ret ? ret : (int)arg.out_violations;
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
	int ret = kvp_ioctl_out(kp->fd, KVPOOL_PRESSURE, &arg, p, sizeof(arg));

	/* Never more than the client's cache pages (< 2^27): fits an int. */
	return ret ? ret : (int)arg.out_ask_pages;
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
