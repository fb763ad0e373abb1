// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvpool: kvpool_strerror(), the text of each errno the library and
 * the kernel give, worded for kvpool.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include "lib.h"

#include <limits.h>
#include <string.h>

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
 * file or the arena's chunks). ABI 4's chunk budgets gave ENODATA, EBUSY
 * and ENOSPC a meaning for CTL_BUDGET, and ENODEV one for mmap().
 */
static const struct kvp_errtext kvp_errtexts[] = {
	{ ENOTTY, "not a kvpool device, or an ioctl this kernel does not know" },
	{ EFAULT, "bad address passed to the kernel" },
	{ EINVAL, "invalid argument: a count, length, element length, field, limit or duplicate row the pool refuses, a donate of a row whose window was freed past its cached prefix, not an export file, or a GPU that is no display controller" },
	{ E2BIG, "request struct or array element too new for this kernel (non-zero unknown tail, or longer than a page)" },
	{ EOPNOTSUPP, "flag or operation not supported by this kernel" },
	{ ENOENT, "not found: from an ioctl, no such row, slot or prefix-cache page held by this client (or a handle generation never issued); from opening a device, no such device node (no such pool, the module not loaded, or no devtmpfs/udev to make the node)" },
	{ ESTALE, "stale handle: the row was released and reused (an older generation)" },
	{ ENOSPC, "pool exhausted: not enough free pages or rows (pages guaranteed to other tenants are not free; on a chunk budget, no chunk free within the pool's ceiling and the other pools' floors); or, of a budget, its pools' floors together would pass its chunks, or 64 budgets exist" },
	{ EDQUOT, "tenant limit reached: the request would take the tenant past its max_pages or max_rows" },
	{ ENOBUFS, "output array too small" },
	{ EEXIST, "session id already names a slot of this client, or the pool has an arena already" },
	{ EALREADY, "already done: that prefix is in the cache already (length not past the row's protected part), or the export was imported already" },
	{ ENOMEM, "out of kernel memory" },
	{ EPERM, "operation not permitted: needs CAP_SYS_ADMIN (control operations and verify); the device's file permissions let this process in" },
	{ EACCES, "permission denied opening the kvpool device: its file mode and owner keep this user out (root only by default; a missing capability is EPERM, not this)" },
	{ EBUSY, "busy: a row is in another thread's EXTEND, RELEASE, TRIM, SWA_FREE or DONATE of more than 16384 pages (call again), a cache page is pinned by a row that borrows it (evict, export), the pool still has clients or export files, a chunk file is a pool's already (or a destroyed pool's whose quarantine waits), the pool has a GPU agent, or a chunk budget still has pools on it (destroyed ones whose files are open included)" },
	{ EMFILE, "too many open files (no descriptor free, e.g. for an export or an arena's chunks), or the pool has its maximum of clients (65536) or tenants" },
	{ ENODEV, "no such pool, the pool is being destroyed, or the module is still loading; of mmap() of a pool file, the pool is on no chunk budget" },
	{ EBADF, "bad file descriptor: not an open file (an import's, or an arena chunk's)" },
	{ EXDEV, "the export file belongs to another pool" },
	{ EAGAIN, "try again: another thread of this client changed the slot while from_slot ran (nothing changed), a non-blocking socket had nothing, or no GPU agent serves the pool (is kvpool-gpud running?)" },
	{ EINTR, "interrupted: a signal came while the pool's GPU agent exported the arena's chunks; no descriptor was made" },
	{ EIO, "I/O error: the pool's GPU agent could not export a chunk (its log says why), or an answer that does not add up" },
	{ ENFILE, "the system's file table is full (no file for an export)" },
	{ ENXIO, "no PCI device at the GPU address a pool was to be created for (kvpoolctl gpus lists the GPUs)" },
	{ ENODATA, "the pool has no arena: no memory behind its page ids yet (kvpoolctl arena create); or no chunk budget with that id (kvpoolctl budget show)" },
	{ ELIBACC, "no CUDA driver: libcuda.so.1 (or $KVPOOL_LIBCUDA) could not be loaded, for a CUDA arena" },
};

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
