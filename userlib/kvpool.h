/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkvpool: userspace library for the kvpool KV-cache page broker.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * A thin, allocation-free wrapper around the ioctls of <linux/kvpool.h>.
 * Conventions, as in liburing:
 *
 * - every function that can fail returns >= 0 on success and a negative
 *   errno on failure; none of them sets errno as part of its API;
 * - the library fills every struct it passes to the kernel itself: size is
 *   sizeof() of the struct this library was built against, so is every
 *   array's element length (entry_len, page_entry_len), and every other
 *   field the caller does not name is zero;
 * - a struct kvpool is only read after kvpool_open(), so calls on one
 *   struct kvpool may come from several threads at once (the kernel
 *   serialises them per pool); kvpool_close() must not race with them.
 *
 * The meaning of each errno is fixed by the "General ioctl format" comment
 * in <linux/kvpool.h>; kvpool_strerror() turns one into text.
 */
#ifndef LIBKVPOOL_KVPOOL_H
#define LIBKVPOOL_KVPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvpool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Pool opened by kvpool_open(NULL, ...). */
#define KVPOOL_DEFAULT_PATH	"/dev/kvpool0"
/* Control device for kvpool_pool_create() and kvpool_pool_destroy(). */
#define KVPOOL_CONTROL_PATH	"/dev/kvpool-control"
/* Value of kvpool_batch_result.error_index when no entry was at fault. */
#define KVPOOL_NO_INDEX		0xffffffffU

/* An open pool: one client of /dev/kvpoolN. Opaque. */
struct kvpool;

/*
 * What a batched op reports besides its return value. The library writes
 * every field, on success and on failure, whenever a result is passed.
 *
 * @error_index: the first entry the kernel refused, or KVPOOL_NO_INDEX
 *               when the error was not about one entry (or no error);
 * @nr_missing:  on -ENOSPC or -EDQUOT, how many rows (kvpool_alloc_rows())
 *               or pages (kvpool_extend()) were missing or over the
 *               tenant's limit; 0 otherwise;
 * @nr_pages:    kvpool_extend(): new page ids written, or on -ENOBUFS the
 *               room needed in the page array; kvpool_trim(),
 *               kvpool_release(), kvpool_release_donate(),
 *               kvpool_cache_evict() and kvpool_swa_free(): pages freed;
 *               kvpool_donate(): pages moved into the prefix cache; 0 for
 *               the others and on failure;
 * @__resv:      set to 0; room for later versions of this library.
 */
struct kvpool_batch_result {
	uint32_t error_index;
	uint32_t nr_missing;
	uint32_t nr_pages;
	uint32_t __resv[5];
};

/*
 * Geometry of a new pool, for kvpool_pool_create(). Zero the whole struct
 * (e.g. with a designated initializer) before filling it in: the reserved
 * fields must be 0.
 *
 * @nr_pages:    pages, 1..2^27 (at least 2 with KVPOOL_CREATE_RESERVE_ZERO)
 * @page_tokens: tokens per page, 1..65536
 * @nr_rows:     rows, 1..2^20 (at least 2 with KVPOOL_CREATE_RESERVE_ZERO)
 * @row_tokens:  the longest a row may grow, in tokens, 1..2^24
 * @flags:       KVPOOL_CREATE_* from <linux/kvpool.h>
 * @gpu_domain:  with KVPOOL_CREATE_GPU, the PCI domain of the GPU the pool
 *               is for (else 0)
 * @gpu_devid:   with KVPOOL_CREATE_GPU, its bus << 8 | device << 3 |
 *               function (else 0); kvpool_pci_parse() turns an address as
 *               lspci prints it into both
 * @__resv:      must be 0
 *
 * gpu_domain and gpu_devid were __resv[0] and __resv[1]: the struct keeps
 * its size (32 bytes) and every other field its offset, so it is the same
 * ABI for libkvpool.so.1 and a program built against the older header
 * passes zeros there, no GPU, as before. Run against an older library, a
 * program that sets them gets -EINVAL (reserved fields not 0), never a
 * pool without its GPU.
 */
struct kvpool_pool_params {
	uint32_t nr_pages;
	uint32_t page_tokens;
	uint32_t nr_rows;
	uint32_t row_tokens;
	uint32_t flags;
	uint32_t gpu_domain;
	uint32_t gpu_devid;
	uint32_t __resv[1];
};

/*
 * Open the pool device at @path (NULL: KVPOOL_DEFAULT_PATH) read-write and
 * close-on-exec, query its geometry with KVPOOL_INFO and store a new
 * struct kvpool in *@kpp. The open file is the client: everything it takes
 * goes back to the pool when the last reference to the file is dropped
 * (on a pool with an arena, the pages of rows and slots it had not
 * released once every process that used it has exited).
 * Returns 0, or -errno from open(2), malloc(3) or KVPOOL_INFO; *@kpp is
 * left alone on failure.
 */
int kvpool_open(const char *path, struct kvpool **kpp);

/*
 * Like kvpool_open(), on a pool device the caller already opened (or
 * received over a Unix socket). On success the struct kvpool owns @fd and
 * kvpool_close() closes it; on failure @fd stays the caller's.
 */
int kvpool_open_fd(int fd, struct kvpool **kpp);

/*
 * Close the pool's file descriptor and free @kp. If no other reference to
 * the file exists (dup(2), fork(2), SCM_RIGHTS), the kernel frees every
 * row, slot and page the client holds. @kp may be NULL.
 */
void kvpool_close(struct kvpool *kp);

/* The file descriptor of an open pool, for poll(2), fdinfo or SCM_RIGHTS. */
int kvpool_fd(const struct kvpool *kp);

/*
 * Copy the pool's KVPOOL_INFO answer, taken when it was opened, to *@info:
 * geometry, ABI version, features (KVPOOL_FEAT_*), the largest batch and
 * this client's id. None of these change while the pool is open. Returns 0.
 */
int kvpool_info(const struct kvpool *kp, struct kvpool_info *info);

/*
 * Fill *@stats with one consistent snapshot of the pool's counts, of the
 * caller's (the out_client_* fields) and of its tenant's (out_tenant_*)
 * with KVPOOL_STATS. Returns 0 or -errno.
 */
int kvpool_stats(struct kvpool *kp, struct kvpool_stats *stats);

/*
 * Take @count rows (1..out_max_batch) for new requests and write their
 * handles to @handles[0..count-1]. Each new row is empty: all lengths 0, no
 * pages. All or nothing: on -ENOSPC no row is taken and
 * @res->nr_missing says how many rows were missing. @res may be NULL.
 * Returns @count, or -errno.
 */
int kvpool_alloc_rows(struct kvpool *kp, struct kvpool_handle *handles,
		      unsigned int count, struct kvpool_batch_result *res);

/*
 * Grow the allocated length of @count rows (a decode batch) to each
 * entry's new_len with one KVPOOL_EXTEND. A row's last partial page is
 * filled first, so it gets ceil(new_len / page_tokens) -
 * ceil(old_len / page_tokens) new pages; each entry's out_nr_new is set to
 * that number, and the new page ids are written to @pages, entry 0's first,
 * in position order. All or nothing: on -ENOSPC nothing is taken and
 * @res->nr_missing says how many pages were missing; on -ENOBUFS
 * @pages_cap was too small and @res->nr_pages says how many are needed.
 * @res may be NULL. Returns the number of new page ids written, or -errno.
 */
int kvpool_extend(struct kvpool *kp, struct kvpool_extend_entry *entries,
		  unsigned int count, uint32_t *pages, unsigned int pages_cap,
		  struct kvpool_batch_result *res);

/*
 * Move the committed length of @count rows forward to each entry's len
 * (tokens whose KV was computed; never past the allocated length) with one
 * KVPOOL_COMMIT. All or nothing. @res may be NULL. Returns 0 or -errno.
 */
int kvpool_commit(struct kvpool *kp, const struct kvpool_len_entry *entries,
		  unsigned int count, struct kvpool_batch_result *res);

/*
 * Free the speculative tail of @count rows: every page from
 * ceil(committed / page_tokens) on goes back to the pool and the allocated
 * length drops to the committed one. All or nothing. @res may be NULL.
 * Returns the number of pages freed by the whole batch, or -errno.
 */
int kvpool_trim(struct kvpool *kp, const struct kvpool_handle *handles,
		unsigned int count, struct kvpool_batch_result *res);

/*
 * Release @count rows (a request finished, aborted or was retracted): each
 * row's pages and the row itself go back to the pool and the handles are
 * dead; releasing one again fails with -ENOENT. All or nothing. @res may
 * be NULL. Returns the number of pages freed, or -errno.
 */
int kvpool_release(struct kvpool *kp, const struct kvpool_handle *handles,
		   unsigned int count, struct kvpool_batch_result *res);

/*
 * Prefix cache (KVPOOL_FEAT_PREFIX_CACHE in kvpool_info()'s out_features;
 * without it these calls fail with -ENOTTY, kvpool_release_donate() with
 * -EOPNOTSUPP). Each client has one: the pages its radix tree holds. A row
 * donates its full committed pages to the cache and keeps mapping them,
 * borrowed; a new request attaches cached pages as its prefix; a page stays
 * pinned, and cannot be evicted, while any row borrows it.
 */

/*
 * Move each of @count rows' full pages in [protected, len) into the
 * caller's prefix cache with one KVPOOL_DONATE (len: the entry's len, at
 * most the committed length and above the part already cached, else
 * -EINVAL or -EALREADY). The row keeps mapping them, borrowed and pinned;
 * its protected length rises to len rounded down to a page. A prefix is
 * cached whole or not at all: a row whose pages above its protected length
 * kvpool_swa_free() has freed is -EINVAL (donate before the window
 * slides). All or nothing. @res may be NULL. Returns the number of pages
 * moved into the cache, or -errno.
 */
int kvpool_donate(struct kvpool *kp, const struct kvpool_len_entry *entries,
		  unsigned int count, struct kvpool_batch_result *res);

/*
 * kvpool_release() with KVPOOL_RELEASE_DONATE: each row's full committed
 * pages go to the caller's prefix cache first (as kvpool_donate() to the
 * committed length would), then the rest of its pages and the row itself
 * go back to the pool and its pins are dropped. -EINVAL, as for
 * kvpool_donate(), for a row kvpool_swa_free() freed pages of above its
 * protected length: release it with kvpool_release(). All or nothing.
 * @res may be NULL. Returns the number of pages freed (not those donated),
 * or -errno.
 */
int kvpool_release_donate(struct kvpool *kp,
			  const struct kvpool_handle *handles,
			  unsigned int count, struct kvpool_batch_result *res);

/*
 * Map @nr_pages pages of the caller's prefix cache, in order, at the start
 * of the empty row @handle with KVPOOL_ATTACH_PREFIX: its allocated,
 * committed and protected lengths become nr_pages * page_tokens, and each
 * page is pinned until the row is released. Returns 0 or -errno (-EINVAL:
 * the row has tokens, @nr_pages is 0 or too long for a row, or a page is
 * named twice; -ENOENT: a page is not in the caller's cache).
 */
int kvpool_attach_prefix(struct kvpool *kp, struct kvpool_handle handle,
			 const uint32_t *pages, unsigned int nr_pages);

/*
 * Free @count pages of the caller's prefix cache with one
 * KVPOOL_CACHE_EVICT. All or nothing: -EBUSY if one is pinned (a row
 * borrows it), -ENOENT if one is not in the caller's cache, -EINVAL if one
 * is named twice; @res->error_index names it. @res may be NULL. Returns
 * the number of pages freed (@count), or -errno.
 */
int kvpool_cache_evict(struct kvpool *kp, const uint32_t *pages,
		       unsigned int count, struct kvpool_batch_result *res);

/*
 * Sliding-window attention (KVPOOL_FEAT_SWA; without it -ENOTTY): free
 * each of @count rows' pages wholly below its entry's len, the window's
 * left edge, with one KVPOOL_SWA_FREE. The edge must lie within
 * [max(protected, swa_evicted), committed], else -EINVAL; pages below the
 * protected (cached) length are never freed. Freed positions read as
 * KVPOOL_PAGE_NONE in kvpool_row_query(). All or nothing. @res may be
 * NULL. Returns the number of pages freed, or -errno.
 */
int kvpool_swa_free(struct kvpool *kp, const struct kvpool_len_entry *entries,
		    unsigned int count, struct kvpool_batch_result *res);

/*
 * Park the held row @handle, with its pages and lengths, in this client's
 * session slot @session_id (any value the client picks). @handle is dead
 * afterwards. Returns the number of pages the slot holds, or -errno
 * (-EEXIST: the client already has a slot with that id).
 */
int kvpool_to_slot(struct kvpool *kp, struct kvpool_handle handle,
		   uint64_t session_id);

/*
 * Give the row parked in slot @session_id back to a new request, with its
 * lengths and pages as they were, and write its new handle (same
 * req_pool_idx, next generation) to *@handle. The slot is gone afterwards.
 * Returns the number of pages the row holds, or -errno.
 */
int kvpool_from_slot(struct kvpool *kp, uint64_t session_id,
		     struct kvpool_handle *handle);

/*
 * Free slot @session_id: its row and pages go back to the pool. Returns
 * the number of pages freed, or -errno.
 */
int kvpool_slot_release(struct kvpool *kp, uint64_t session_id);

/*
 * Read the record of the held row @handle with KVPOOL_ROW_QUERY: its
 * state and lengths go to *@q (may be NULL), and the first @pages_cap of
 * its page ids, in position order, to @pages (may be NULL if @pages_cap is
 * 0). Returns the length of the row's full page list,
 * ceil(allocated / page_tokens); if that is larger than @pages_cap the list
 * was cut short. -errno on failure.
 */
int kvpool_row_query(struct kvpool *kp, struct kvpool_handle handle,
		     uint32_t *pages, unsigned int pages_cap,
		     struct kvpool_row_query *q);

/*
 * kvpool_row_query() for the row parked in slot @session_id
 * (KVPOOL_QUERY_BY_SLOT); q->out_req_pool_idx names the row.
 */
int kvpool_slot_query(struct kvpool *kp, uint64_t session_id,
		      uint32_t *pages, unsigned int pages_cap,
		      struct kvpool_row_query *q);

/*
 * Check every invariant of the whole pool with KVPOOL_VERIFY (O(pages +
 * rows), under the pool's lock: a debugging aid, not for a hot path). The
 * kernel logs each violation as "kvpool: pool N: invariant: ...". The full
 * answer goes to *@v if @v is not NULL. Returns the number of violations
 * (0: the pool is sound), or -errno (-EPERM: the caller lacks
 * CAP_SYS_ADMIN, which VERIFY needs since it holds the whole pool's lock).
 */
int kvpool_verify(struct kvpool *kp, struct kvpool_verify *v);

/*
 * Handing requests between processes (KVPOOL_FEAT_EXPORT; without it
 * -ENOTTY). A row leaves its client as a file descriptor, which another
 * process, e.g. a decode server after a prefill server, receives over a
 * Unix socket (kvpool_send_fd(), kvpool_recv_fd()) and imports into its
 * own client of the same pool. Pages never move.
 */

/*
 * Export the held row @handle with KVPOOL_EXPORT: the row, its pages and
 * lengths leave the client and belong to a new file, returned as an
 * O_CLOEXEC file descriptor; @handle is dead afterwards. Cache pages the
 * row borrowed become its own (its protected length drops to 0). Until
 * some client imports it, the row counts in the pool's out_export_rows and
 * out_export_pages, and to no client or tenant; if the file is closed
 * unimported, the row goes back to the pool. Returns the new descriptor,
 * or -errno (-EBUSY: a borrowed cache page is borrowed by another row too;
 * -EMFILE: the caller has no free descriptor; the row stays the caller's).
 */
int kvpool_export(struct kvpool *kp, struct kvpool_handle handle);

/* kvpool_export() of the row parked in slot @session_id; the slot goes. */
int kvpool_export_slot(struct kvpool *kp, uint64_t session_id);

/*
 * Take the row exported as @fd into this client with KVPOOL_IMPORT and
 * write its handle (same req_pool_idx, next generation) to *@out. Each
 * export is imported once. The caller's tenant limits apply. @fd stays
 * open: close it afterwards. Returns the number of pages the row owns, or
 * -errno (-EDQUOT: over the tenant's limits; -EALREADY: imported before;
 * -EXDEV: another pool's export; -EINVAL: not an export; -EBADF: @fd is
 * not open).
 */
int kvpool_import(struct kvpool *kp, int fd, struct kvpool_handle *out);

/*
 * Send the descriptor @fd over the connected Unix socket @sock as
 * SCM_RIGHTS, with one byte of data. The receiver gets its own reference
 * to the file; close @fd afterwards if it is no longer needed. Never
 * raises SIGPIPE. Returns 0, or -errno from sendmsg(2).
 */
int kvpool_send_fd(int sock, int fd);

/*
 * Receive one descriptor sent with kvpool_send_fd() on @sock, close-on-
 * exec. Returns it, or -errno: from recvmsg(2); -ECONNRESET if the peer
 * closed the socket first; -EBADMSG if a message came without a
 * descriptor (any extra descriptors in it are closed).
 */
int kvpool_recv_fd(int sock);

/*
 * Pressure (KVPOOL_FEAT_PRESSURE; without it -ENOTTY). The kernel never
 * takes pages from a client: when free pages run low, a tenant is over
 * its limit or another tenant is kept below its guarantee, it asks each
 * client to evict some of its unpinned prefix-cache pages
 * (kvpool_cache_evict()).
 */

/*
 * Ask the kernel how many prefix-cache pages this client should evict
 * now, with KVPOOL_PRESSURE; the full answer (reasons, free pages,
 * watermarks) goes to *@p if @p is not NULL. Returns the pages asked (0:
 * none), or -errno.
 */
int kvpool_pressure(struct kvpool *kp, struct kvpool_pressure *p);

/*
 * Wait up to @timeout_ms milliseconds (-1: for ever, 0: do not wait) until
 * the kernel asks this client to give pages back: poll(2) for POLLPRI on
 * the pool's descriptor. The condition is a level: while an ask is
 * pending, this returns at once. Returns 1 if pages are asked
 * (kvpool_pressure() says how many), 0 on timeout, or -errno (-EINTR: a
 * signal came first).
 */
int kvpool_wait_pressure(struct kvpool *kp, int timeout_ms);

/*
 * Create a pool through KVPOOL_CONTROL_PATH (needs CAP_SYS_ADMIN) and
 * store its id N, as in /dev/kvpoolN, in *@pool_id. With
 * KVPOOL_CREATE_GPU in @params->flags the pool is made for the PCI device
 * at @params->gpu_domain and gpu_devid, which must be a display
 * controller. Returns 0 or -errno (-EINVAL: geometry out of range,
 * reserved field not 0, GPU fields without the flag, or the device is no
 * display controller; -ENXIO: no PCI device at that address; -EOPNOTSUPP
 * or -E2BIG: KVPOOL_CREATE_GPU on a module before ABI 2; -EPERM or
 * -EACCES: not privileged; -ENOENT: no control device, the module is not
 * loaded).
 */
int kvpool_pool_create(const struct kvpool_pool_params *params,
		       unsigned int *pool_id);

/*
 * Parse the PCI address @s as lspci prints it, "DDDD:BB:dd.f" (lspci -D,
 * and sysfs; the domain 4 to 8 hex digits) or "BB:dd.f" (domain 0): bus
 * and device 2 hex digits each, the device at most 1f, the function one
 * digit 0..7, nothing before or after. On success *@domain and *@devid
 * (bus << 8 | device << 3 | function, as struct kvpool_pool_params wants
 * it) get the address, each if not NULL. Returns 0 or -EINVAL, and then
 * writes nothing.
 */
int kvpool_pci_parse(const char *s, uint32_t *domain, uint32_t *devid);

/*
 * Destroy pool @pool_id through KVPOOL_CONTROL_PATH (needs CAP_SYS_ADMIN).
 * Returns 0 or -errno (-EBUSY: the pool has clients and was left as it
 * was; -ENODEV: no such pool).
 */
int kvpool_pool_destroy(unsigned int pool_id);

/*
 * List the pools that exist, from sysfs (/sys/class/kvpool/kvpoolN): the
 * first @cap ids in ascending order go to @ids (may be NULL if @cap is 0).
 * Returns the number of pools, which may exceed @cap, or -errno (-ENODEV:
 * the kvpool module is not loaded: no /sys/class/kvpool).
 */
int kvpool_pool_list(unsigned int *ids, unsigned int cap);

/*
 * Read pool @pool_id's figures from sysfs (/sys/class/kvpool/kvpoolN/)
 * without becoming a client of it (so without keeping it from being
 * destroyed). *@info, if not NULL, gets
 * the geometry (out_pool_id, out_nr_pages, out_page_tokens, out_nr_rows,
 * out_row_tokens, out_create_flags; the rest 0); *@stats, if not NULL,
 * gets the pool's counts (the out_client_* and out_tenant_* fields 0;
 * out_export_rows and out_export_pages 0 on a module without
 * KVPOOL_FEAT_EXPORT). Each figure is read from its own file, so unlike
 * kvpool_stats() they are not one snapshot while the pool is in use.
 * The number of tenants and the watermarks are in neither struct:
 * kvpool_pool_extra() reads them; kvpool_pool_gpu() reads the GPU. Returns 0 or -errno (-ENODEV: no such
 * pool).
 */
int kvpool_pool_status(unsigned int pool_id, struct kvpool_info *info,
		       struct kvpool_stats *stats);

/*
 * The figures of a pool that sysfs shows and neither struct kvpool_info
 * nor struct kvpool_stats has a field for, from kvpool_pool_extra(). The
 * library writes every field.
 *
 * @nr_tenants:  the pool's tenants (KVPOOL_FEAT_QUOTA): those with clients
 *               and those the administrator gave limits;
 * @low_wmark:   below this many free pages clients are asked to give
 *               pages back (KVPOOL_FEAT_PRESSURE; 0: never);
 * @high_wmark:  the free pages they are asked to restore;
 * @__resv:      set to 0; room for later versions of this library.
 */
struct kvpool_pool_extra {
	uint32_t nr_tenants;
	uint32_t low_wmark;
	uint32_t high_wmark;
	uint32_t __resv[5];
};

/*
 * Read the figures of struct kvpool_pool_extra for pool @pool_id from
 * sysfs into *@extra, as kvpool_pool_status() reads the others: without
 * becoming a client, one file a figure. Returns 0 or -errno (-ENODEV: no
 * such pool; -EOPNOTSUPP: the module predates tenants and pressure, its
 * sysfs lacks these figures).
 */
int kvpool_pool_extra(unsigned int pool_id, struct kvpool_pool_extra *extra);

/*
 * The GPU pool @pool_id was created for, from sysfs
 * (/sys/class/kvpool/kvpoolN/gpu), without becoming a client of it: its
 * address goes to *@domain and *@devid (each if not NULL), as
 * kvpool_pci_parse() gives it. Returns 1 if the pool names a GPU, 0 if not
 * (also on a module before GPUs, whose sysfs lacks the file; both get 0),
 * or -errno, writing nothing (-ENODEV: no such pool; -EIO: the file holds
 * no PCI address).
 */
int kvpool_pool_gpu(unsigned int pool_id, uint32_t *domain, uint32_t *devid);

/*
 * Tenants (KVPOOL_FEAT_QUOTA; without it -ENOTTY). A client's tenant is
 * fixed at open from its opener's cgroup v2 and effective uid: a tenant
 * configured on that cgroup id and uid, else one configured on the cgroup
 * path of the nearest ancestor-or-self (KVPOOL_FEAT_TENANT_PATH), else
 * the unconfigured tenant of that cgroup id and uid. Through
 * KVPOOL_CONTROL_PATH (needs CAP_SYS_ADMIN) each tenant of a pool may get
 * a hard limit in pages and in rows, and a guarantee in pages.
 */

/*
 * Set the limits of a tenant of pool @pool_id with KVPOOL_CTL_TENANT_SET.
 * Zero *@t, then fill in: @t->cgroup_id (the inode number of the cgroup's
 * folder under /sys/fs/cgroup) and @t->uid, which name the tenant and
 * create it if it is new, or @t->flags = KVPOOL_TENANT_BY_ID and
 * @t->tenant_id; @t->max_pages, @t->min_pages, @t->max_rows (0: none);
 * @t->label (empty: keep the current one). The library sets size and
 * pool_id itself. On success *@t gets the tenant's id, cgroup id, uid and
 * label. With KVPOOL_TENANT_REMOVE in @t->flags (and no limits or label)
 * the tenant's configuration is dropped instead. Only the first release's
 * 80 bytes of *@t are read and written: @t->cgroup_path is not, so
 * KVPOOL_TENANT_BY_PATH is -EINVAL here (kvpool_tenant_set_path() names
 * a tenant by path). Returns the tenant's id, or -errno
 * (-EINVAL: min_pages above max_pages, the pool's guarantees together
 * above its pages, the label not NUL-terminated, or @t->__reserved not 0;
 * -ENOENT: no tenant with that id, or REMOVE of a tenant with no
 * configuration; -EMFILE: the pool has 4096 tenants; -ENODEV: no such
 * pool).
 */
int kvpool_tenant_set(unsigned int pool_id, struct kvpool_ctl_tenant *t);

/*
 * The same for the tenant of cgroup path @cgroup_path (as /sys/fs/cgroup
 * shows it on the host, "/" for the root; it need not exist yet) and
 * @t->uid, or every uid with KVPOOL_TENANT_ANY_UID in @t->flags (then
 * @t->uid 0); KVPOOL_TENANT_REMOVE drops its configuration. The library
 * adds KVPOOL_TENANT_BY_PATH; @t->cgroup_id must be 0. Needs
 * KVPOOL_FEAT_TENANT_PATH (an older module: -E2BIG). Returns the
 * tenant's id, or -errno as kvpool_tenant_set(), and -EINVAL for a path
 * that is not absolute and canonical ("/a/b": no empty, "." or ".."
 * component, no trailing "/"), -ENAMETOOLONG for one of
 * KVPOOL_CGROUP_PATH_MAX bytes or more, -ENOSPC when the pool's paths
 * would pass 1 MiB together.
 */
int kvpool_tenant_set_path(unsigned int pool_id, const char *cgroup_path,
			   struct kvpool_ctl_tenant *t);

/*
 * List the tenants of pool @pool_id with KVPOOL_CTL_TENANT_LIST (needs
 * CAP_SYS_ADMIN): the first @count go to @out (may be NULL if @count is
 * 0). Returns the number of tenants the pool has, which may exceed
 * @count, or -errno.
 */
int kvpool_tenant_list(unsigned int pool_id, struct kvpool_tenant_info *out,
		       unsigned int count);

/*
 * The same, with the tenants' cgroup paths (KVPOOL_FEAT_TENANT_PATH): the
 * paths of the entries written go to @paths (@paths_len bytes; NULL if 0)
 * and entry i's is @paths + @out[i].path_offset, the empty string when it
 * has none or @paths had no room for it. *@paths_need (may be NULL) gets
 * the bytes @paths needs for every tenant of the pool, so that a second
 * call can be sized. From a module without the feature, every path is
 * empty and *@paths_need is 0.
 */
int kvpool_tenant_list_paths(unsigned int pool_id,
			     struct kvpool_tenant_info *out,
			     unsigned int count, char *paths,
			     size_t paths_len, size_t *paths_need);

/*
 * Set pool @pool_id's pressure watermarks with KVPOOL_CTL_SET_WMARK
 * (needs CAP_SYS_ADMIN): below @low free pages clients are asked to give
 * pages back (0: never), enough to restore @high. Returns 0 or -errno
 * (-EINVAL: @high below @low or above the pool's pages).
 */
int kvpool_set_wmark(unsigned int pool_id, unsigned int low,
		     unsigned int high);

/*
 * The arena (KVPOOL_FEAT_ARENA; without it the pool ops fail with -ENOTTY):
 * the memory the page ids name. Page id i is arena bytes [i * page_bytes,
 * (i + 1) * page_bytes), the same bytes in every process that maps it.
 * The administrator gives a pool its arena once (kvpool_arena_set(),
 * kvpool_arena_create_host()); every client may map all of it: the
 * kernel's refusals govern which pages a client owns, not which bytes it
 * can touch, so a pool is one trust domain for memory.
 */

/*
 * Ask the pool about its arena with KVPOOL_ARENA (flags 0) and copy the
 * answer to *@out: out_kind (KVPOOL_ARENA_NONE if it has none),
 * out_nr_chunks, out_page_bytes, out_bytes; of a pool on a budget,
 * KVPOOL_ARENA_SET_BUDGET in out_set_flags, the chunks it holds now and
 * the bytes of its whole id space in chunks. Returns 0 or -errno.
 */
int kvpool_arena_info(struct kvpool *kp, struct kvpool_arena *out);

/*
 * KVPOOL_ARENA with KVPOOL_ARENA_FDS: new O_CLOEXEC descriptors of chunks
 * [@first_chunk, @first_chunk + @count) go to @fds[0..count-1], each with
 * the chunk's offset in the arena and its length; the caller maps and
 * closes them. *@info, if not NULL, gets the rest of the answer. Returns
 * @count, or -errno (and then no descriptor was made: -ENODATA the pool
 * has no arena, -EINVAL a range past its chunks, -EMFILE too few free
 * descriptors, -EOPNOTSUPP a pool on a budget, which has no chunk files).
 * kvpool_arena_map() does all of this. Of an arena set with
 * KVPOOL_ARENA_SET_AGENT, each descriptor is an export the pool's GPU
 * agent made for this call, and the call sleeps until the agent has
 * answered (-EINTR on a signal, -EIO if it failed a chunk), however long
 * no agent is attached: kvpool_arena_map() asks with KVPOOL_ARENA_NOWAIT
 * and a bound.
 */
int kvpool_arena_fds(struct kvpool *kp, uint32_t first_chunk, uint32_t count,
		     struct kvpool_arena_fd *fds, struct kvpool_arena *info);

/*
 * The arena as kvpool_arena_map() mapped it into this process. The
 * library writes every field, the caller only reads them.
 *
 * Not opaque, so that kvpool_page_addr() is an inline function a hot
 * path can call; the caller keeps it where it likes (a struct of its
 * own), so its size is fixed for libkvpool.so.1 and __resv is the room
 * for later versions (set to 0 today), as in struct kvpool_batch_result:
 * a later field that does not fit there comes with a new function.
 *
 * @base:       where the arena starts: page id i is at
 *              base + i * page_bytes; NULL when nothing is mapped. For a
 *              KVPOOL_ARENA_CUDA arena it is a CUdeviceptr (cast to
 *              void *), a GPU address for CUDA calls and kernels, not
 *              for the CPU to dereference; kvpool_page_addr() and
 *              kvpool_layer_addr() give device addresses the same way
 * @bytes:      the length of the mapping, the arena's (it may end in a few
 *              pages past nr_pages that no id names)
 * @page_bytes: bytes of one page
 * @kind:       KVPOOL_ARENA_HOST or KVPOOL_ARENA_CUDA
 * @nr_pages:   the pool's pages: ids 0..nr_pages-1
 * @nr_chunks:  the files the arena is made of, mapped end to end; of a
 *              pool on a budget, the chunks it held when it was mapped:
 *              that changes as the pool grows and shrinks, and
 *              kvpool_arena_info()'s out_nr_chunks says how many now
 * @__resv:     room for later versions of this library; 0 for a host
 *              arena. For a CUDA arena the library keeps there what
 *              kvpool_arena_unmap() must give back (whether it retained
 *              the device's primary context, and the device): the caller
 *              leaves it alone.
 */
struct kvpool_arena_view {
	void *base;
	uint64_t bytes;
	uint64_t page_bytes;
	uint32_t kind;
	uint32_t nr_pages;
	uint32_t nr_chunks;
	uint32_t __resv[7];
};

/*
 * Map the whole arena of @kp's pool, read-write and shared, into one range
 * of this process, and describe it in *@v: KVPOOL_ARENA for its shape, one
 * PROT_NONE reservation of its length, then each chunk's descriptor
 * (KVPOOL_ARENA_FDS, a few chunks a call) mapped MAP_SHARED | MAP_FIXED
 * at its offset and closed at once. The mapping does not depend on @kp:
 * it stays after kvpool_close() (the memory, after the pool's destroy
 * too) until kvpool_arena_unmap(). Returns 0, or -errno with nothing
 * mapped, no descriptor left open and *@v zeroed (-ENODATA: the pool has
 * no arena; -EOPNOTSUPP: a kind this library cannot map; -EIO: the
 * kernel's answer does not add up; -ENOMEM, -EMFILE, or mmap(2)'s).
 *
 * A KVPOOL_ARENA_CUDA arena is mapped into the GPU's address space of
 * this process instead, with the CUDA driver API, which the library
 * loads with dlopen() on first use (libcuda.so.1, or the file named by
 * $KVPOOL_LIBCUDA): cuInit(), the pool's GPU (kvpool_pool_gpu()) by its
 * PCI address, this thread's current context or, if it has none, the
 * device's primary context, retained and made current (until unmap); one
 * cuMemAddressReserve() of the arena's length, each chunk imported
 * (cuMemImportFromShareableHandle() of its descriptor, closed at once),
 * cuMemMap()ed at its offset and its handle released; then one
 * cuMemSetAccess(), read-write for that device. CUDA does not survive
 * fork(): a process that forks does so before its first CUDA arena call.
 * Further errors: -ENODEV: the pool has no GPU; -ELIBACC: no CUDA driver;
 * -EINVAL: a chunk's offset or length no multiple of the device's
 * allocation granularity; -EXDEV: a chunk's memory is on another device
 * than the pool's GPU; -EIO (-ENOMEM for CUDA_ERROR_OUT_OF_MEMORY): a
 * CUDA call failed. kvpool_arena_error() says which and why.
 *
 * The chunks of an arena set with KVPOOL_ARENA_SET_AGENT are exports the
 * pool's GPU agent makes for this call alone: asked with
 * KVPOOL_ARENA_NOWAIT, and while no agent is attached (-EAGAIN) asked
 * again every 50 ms, for up to $KVPOOL_AGENT_WAIT_MS milliseconds (10000
 * by default; 0: once). Then -EAGAIN, "no GPU agent serves pool N (is
 * kvpool-gpud running?)"; -EINVAL: $KVPOOL_AGENT_WAIT_MS is no number
 * from 0 to 86400000; -EINTR: a signal came while the agent worked; -EIO:
 * the agent could not export a chunk.
 *
 * A pool on a chunk budget (ABI 4: KVPOOL_ARENA_SET_BUDGET in
 * out_set_flags, a KVPOOL_ARENA_HOST arena) hands out no chunk files:
 * the pool's own file is mapped instead, whole, in one mmap(2) of
 * out_bytes (its id space in chunks), read-write and MAP_SHARED, and no
 * descriptor is opened. The kernel backs each chunk the pool holds on
 * first touch, and takes a chunk the pool gives back out of every
 * client's mapping at once: touching a page of a chunk the pool does not
 * hold (one it has not taken yet, or gave back) is SIGBUS, so a client
 * touches only the pages of rows it holds. @v->nr_chunks is the chunks
 * held at the time of the map. kvpool_arena_unmap() unmaps it as a host
 * arena. Further errors: mmap(2)'s (-ENODEV: the kernel says the pool is
 * on no budget after all).
 */
int kvpool_arena_map(struct kvpool *kp, struct kvpool_arena_view *v);

/*
 * Unmap what kvpool_arena_map() mapped in *@v and zero *@v. A zeroed view
 * (nothing mapped) is left alone. Returns 0 or -errno from munmap(2); for
 * a CUDA arena, cuMemUnmap() and cuMemAddressFree() (-EIO if one fails,
 * and then *@v is kept), and the primary context map retained is
 * released.
 */
int kvpool_arena_unmap(struct kvpool_arena_view *v);

/*
 * The address of page id @page in the mapped arena @v, or NULL if @page is
 * not a page id of the pool (or nothing is mapped).
 */
static inline void *kvpool_page_addr(const struct kvpool_arena_view *v,
				     uint32_t page)
{
	if (page >= v->nr_pages)
		return NULL;
	return (char *)v->base + (uint64_t)page * v->page_bytes;
}

/*
 * How an engine lays out the K and V of its layers in the arena; every
 * client of a pool must use the same layout and number of layers. With
 * slice = page_bytes / nr_layers and total = bytes / page_bytes:
 *
 * KVPOOL_LAYOUT_PAGE_MAJOR:  page i holds every layer's slice, the arena's
 *                            own view: base + i * page_bytes + l * slice;
 * KVPOOL_LAYOUT_LAYER_MAJOR: layer l is one run of every page's slice, as
 *                            engines with per-layer buffers keep it:
 *                            base + l * slice * total + i * slice.
 */
enum kvpool_layout {
	KVPOOL_LAYOUT_PAGE_MAJOR = 0,
	KVPOOL_LAYOUT_LAYER_MAJOR = 1,
};

/*
 * The address of layer @layer's slice of page id @page in @v, for an
 * engine of @nr_layers layers (count K and V apart as two layers to get a
 * run of each) laid out as @layout. NULL if nothing is mapped, @nr_layers
 * is 0 or does not divide page_bytes, @layer >= @nr_layers, @page is not a
 * page id or @layout is unknown.
 */
void *kvpool_layer_addr(const struct kvpool_arena_view *v, uint32_t nr_layers,
			enum kvpool_layout layout, uint32_t layer,
			uint32_t page);

/*
 * Give pool @pool_id its arena with KVPOOL_CTL_ARENA_SET (needs
 * CAP_SYS_ADMIN), once: @nr_chunks chunks of @kind, laid end to end in
 * the order given, of @page_bytes pages. Each chunk is an open file and a
 * length (struct kvpool_arena_chunk; __reserved 0); the pool keeps a
 * reference to each file, so the caller closes its descriptors afterwards
 * and may exit. *@error_index, if not NULL, gets the chunk the kernel
 * refused, or KVPOOL_NO_INDEX. Returns 0 or -errno (-EEXIST: the pool has
 * an arena; -EINVAL: see <linux/kvpool.h>; -EBADF: a chunk's fd is not
 * open; -EOPNOTSUPP: an unknown kind; -ENODEV: no such pool).
 */
int kvpool_arena_set(unsigned int pool_id, uint32_t kind, uint64_t page_bytes,
		     const struct kvpool_arena_chunk *chunks,
		     uint32_t nr_chunks, uint32_t *error_index);

/*
 * The chunk lengths kvpool_arena_create_host() uses for a pool of
 * @nr_pages pages of @page_bytes bytes in @nr_chunks chunks, to
 * @chunk_bytes[0..nr_chunks-1]: each a multiple of page_bytes and of the
 * CPU page size (their lcm, the unit), all of the same number of units
 * but the last, which takes the rest; together they cover the pages and
 * end less than a unit past them. Returns 0 or -EINVAL (@nr_pages or
 * @page_bytes 0, @page_bytes above 2^32, @nr_chunks 0 or above
 * KVPOOL_ARENA_MAX_CHUNKS, or more chunks than units: one would lie
 * wholly past the pages) or -EOVERFLOW.
 */
int kvpool_arena_plan_host(uint32_t nr_pages, uint64_t page_bytes,
			   uint32_t nr_chunks, uint64_t *chunk_bytes);

/*
 * Give pool @pool_id a host arena of @page_bytes pages in @nr_chunks
 * chunks (needs CAP_SYS_ADMIN): read its nr_pages from sysfs, size the
 * chunks with kvpool_arena_plan_host(), make each a memfd of exactly its
 * length sealed against shrinking, growing and further seals, hand them
 * over with kvpool_arena_set() and close them. Nothing is allocated until
 * a process touches the memory. *@error_index as kvpool_arena_set()'s.
 * Returns 0 or -errno, with every descriptor closed either way.
 */
int kvpool_arena_create_host(unsigned int pool_id, uint64_t page_bytes,
			     uint32_t nr_chunks, uint32_t *error_index);

/*
 * Give pool @pool_id, created with a GPU (KVPOOL_CREATE_GPU), a CUDA
 * arena of @page_bytes pages in @nr_chunks chunks (needs CAP_SYS_ADMIN):
 * read its nr_pages and its GPU from sysfs, load the CUDA driver (as
 * kvpool_arena_map() does), find the GPU and its allocation granularity,
 * size the chunks as kvpool_arena_plan_host() does but in units of
 * lcm(@page_bytes, granularity), make each with cuMemCreate() (pinned
 * device memory, exportable as a POSIX file descriptor), export it with
 * cuMemExportToShareableHandle() and release the handle, hand the
 * descriptors over with kvpool_arena_set(KVPOOL_ARENA_CUDA) and close
 * them. The memory lives as long as the pool holds the descriptors.
 * *@error_index as kvpool_arena_set()'s. Returns 0 or -errno, with every
 * descriptor closed and every handle released either way: -EINVAL also
 * for a pool with no GPU or a plan that cannot be; -ELIBACC: no CUDA
 * driver; -EIO or -ENOMEM: a CUDA call failed (kvpool_arena_error()).
 */
int kvpool_arena_create_cuda(unsigned int pool_id, uint64_t page_bytes,
			     uint32_t nr_chunks, uint32_t *error_index);

/*
 * kvpool_arena_create_cuda() with CTL_ARENA_SET @flags: 0 (every client
 * gets a descriptor of the same exported files, as in ABI 2: one trust
 * domain) or KVPOOL_ARENA_SET_AGENT (each client gets only exports the
 * pool's GPU agent made for it alone: kvpool_agent_serve(), kvpool-gpud).
 * Where the kernel has KVPOOL_FEAT_GPU_AGENT (its KVPOOL_INFO, asked of
 * /dev/kvpoolN), this and kvpool_arena_create_cuda() also have the pool
 * hold the GPU up (KVPOOL_ARENA_SET_DEVICE with kvpool_gpu_device_open()),
 * and fail if its device node cannot be found or opened; without the
 * feature, the GPU's memory lives only while persistence mode is on or
 * a process holds the GPU. Returns 0 or -errno as
 * kvpool_arena_create_cuda() (-EINVAL: @flags has another bit;
 * -EOPNOTSUPP: KVPOOL_ARENA_SET_AGENT from a kernel without the agent;
 * kvpool_gpu_device_open()'s), the text in kvpool_arena_error().
 */
int kvpool_arena_create_cuda_flags(unsigned int pool_id, uint64_t page_bytes,
				   uint32_t nr_chunks, uint32_t flags,
				   uint32_t *error_index);

/*
 * A new O_RDWR | O_CLOEXEC descriptor of pool @pool_id's GPU device node,
 * /dev/nvidia<minor>: the minor read from the "Device Minor:" line of the
 * NVIDIA driver's /proc/driver/nvidia/gpus/<pci>/information, <pci> the
 * pool's GPU (kvpool_pool_gpu()). $KVPOOL_NVIDIA_PROC and
 * $KVPOOL_NVIDIA_DEV, when set (secure_getenv()), take the place of
 * /proc/driver/nvidia and /dev (the fake CUDA driver's tests). Opening
 * it counts as a use of the GPU: while it is open the driver does not
 * tear the GPU down. Returns the descriptor, or -errno with the text in
 * kvpool_arena_error() (-EINVAL: the pool has no GPU; -ENODEV: no such
 * pool, or no NVIDIA GPU at its address (no information file); -EIO: the
 * file has no "Device Minor:" line, or not a number from 0 to 253 there;
 * open(2)'s errno for the device node).
 */
int kvpool_gpu_device_open(unsigned int pool_id);

/*
 * Become pool @pool_id's GPU agent with KVPOOL_CTL_AGENT (needs
 * CAP_SYS_ADMIN): the agent file (O_CLOEXEC), polled for POLLIN while
 * clients' requests wait and POLLHUP once the pool is destroyed; closing
 * it detaches the agent (the requests it took but did not answer go to
 * the next one). Returns the descriptor or -errno (-EBUSY: the pool has
 * an agent; -EINVAL: the pool has no GPU; -ENODEV: no such pool).
 */
int kvpool_agent_attach(unsigned int pool_id);

/*
 * Answer the requests waiting on agent file @agent_fd: for each,
 * KVPOOL_AGENT_RECV (the chunk's master file), import of the master and
 * a new export of it through the CUDA driver (the pool's GPU's primary
 * context, retained at the first request for the process's life, current
 * for the call), cuMemRelease(), the master closed, KVPOOL_AGENT_REPLY
 * with the export (closed after; the client has its own), or with the
 * errno if CUDA failed (the client gets EIO). It stops after a request
 * it answered so, with the text in kvpool_arena_error(), so that the
 * caller can log each: call it again while it returns more than 0.
 * Returns how many it answered (0: none waited; a request whose client
 * gave up counts), or -errno (-ENODEV: the pool was destroyed: close the
 * file).
 */
int kvpool_agent_serve(int agent_fd);

/*
 * Chunk budgets (ABI 4, KVPOOL_FEAT_BUDGET; without it the control ops
 * fail with -ENOTTY). A budget is a set of equal chunks of host memory,
 * all allocated when it is made; the pools created on it
 * (kvpool_pool_create_budget()) take its free chunks as their
 * allocations need them and give back their wholly free ones, so that
 * memory one pool does not use is there for another. Budgets are named
 * by ids 0..63, each a control op through KVPOOL_CONTROL_PATH (needs
 * CAP_SYS_ADMIN). A pool's sysfs attributes budget (its budget's id, -1
 * for none) and chunks (the chunks it holds now) show where it stands.
 */

/*
 * Make a budget of @nr_chunks chunks (1..KVPOOL_BUDGET_MAX_CHUNKS) of
 * @chunk_bytes bytes each (a multiple of the CPU page, at most 1 GiB) of
 * memory @kind, KVPOOL_ARENA_HOST, with KVPOOL_CTL_BUDGET
 * (KVPOOL_BUDGET_CREATE), and store its id in *@budget_id (if not NULL).
 * Every chunk is allocated, zeroed, at once and charged to the caller's
 * memory cgroup. Returns 0 or -errno (-EINVAL: a figure out of range;
 * -EOPNOTSUPP: KVPOOL_ARENA_CUDA, or a kind the module does not know;
 * -ENOMEM: the memory is not there, or the budget would be above half
 * of the machine's RAM; -ENOSPC: 64 budgets exist; -ENOTTY: a module
 * before ABI 4).
 */
int kvpool_budget_create(uint32_t kind, uint32_t nr_chunks,
			 uint64_t chunk_bytes, unsigned int *budget_id);

/*
 * Remove budget @budget_id and free its memory (KVPOOL_BUDGET_DESTROY).
 * Returns 0 or -errno (-EBUSY: a pool is on it, a destroyed one whose
 * file is still open included; -ENODATA: no such budget).
 */
int kvpool_budget_destroy(unsigned int budget_id);

/*
 * Set pool @pool_id's floor and ceiling on its budget @budget_id
 * (KVPOOL_BUDGET_LIMITS): @min_bytes of chunks (rounded up to chunks)
 * the pool keeps and no other pool may take, at most @max_bytes
 * (rounded down to chunks; 0: no limit) it may hold. A ceiling below
 * what the pool holds takes nothing at once: the pool gives chunks back
 * as their pages come free. Returns 0 or -errno (-EINVAL: @max_bytes
 * below @min_bytes, or the pool is not on @budget_id; -ENOSPC: the
 * budget's floors together would pass its chunks; -ENODEV: no such
 * pool; -ENODATA: no such budget).
 */
int kvpool_budget_limits(unsigned int budget_id, unsigned int pool_id,
			 uint64_t min_bytes, uint64_t max_bytes);

/*
 * Read budget @budget_id (KVPOOL_BUDGET_INFO) into *@out, if not NULL:
 * kind, nr_chunks and chunk_bytes as it was made, out_free_chunks (no
 * pool holds them), out_nr_pools, out_moves (chunks a pool took that
 * another pool held last), out_cleared_bytes and out_clear_ns (the
 * clearing those moves cost). Returns 0 or -errno (-ENODATA: no such
 * budget), and writes *@out only on success.
 */
int kvpool_budget_info(unsigned int budget_id, struct kvpool_ctl_budget *out);

/*
 * kvpool_pool_create() of a pool on budget @budget_id, of @page_bytes
 * pages (KVPOOL_CREATE_BUDGET; @page_bytes divides the budget's
 * chunk_bytes). @params->nr_pages is its id space: page p lives in the
 * budget chunk the pool holds as slot p / (chunk_bytes / page_bytes),
 * and a new pool holds none (with KVPOOL_CREATE_RESERVE_ZERO, slot 0).
 * Its arena is the budget's: kvpool_arena_set() is -EEXIST, and clients
 * map it with kvpool_arena_map(). Returns 0 or -errno as
 * kvpool_pool_create(), and -EINVAL: @page_bytes 0 or no divisor of the
 * chunks, or KVPOOL_CREATE_GPU in @params->flags; -ENODATA: no such
 * budget; -EOPNOTSUPP or -E2BIG: a module before ABI 4.
 */
int kvpool_pool_create_budget(const struct kvpool_pool_params *params,
			      unsigned int budget_id, uint64_t page_bytes,
			      unsigned int *pool_id);

/*
 * Why this thread's last arena call (kvpool_arena_map(),
 * kvpool_arena_unmap(), kvpool_arena_create_host(),
 * kvpool_arena_create_cuda(), kvpool_arena_create_cuda_flags(),
 * kvpool_gpu_device_open(), kvpool_agent_serve()) failed, in words: e.g. "no CUDA driver
 * (libcuda.so.1 not found)", "cuMemImportFromShareableHandle:
 * CUDA_ERROR_INVALID_VALUE: invalid argument", or kvpool_strerror()'s
 * text for a failure with no more to say; "" after one that succeeded.
 * The string is this thread's and stays until its next arena call.
 */
const char *kvpool_arena_error(void);

/*
 * A short description of @err (negative or positive errno) as the kvpool
 * ioctls use it, e.g. "stale handle: the row was released and reused (an
 * older generation)" for ESTALE; strerror(3) for errnos kvpool gives no meaning of its own. The
 * string is static and must not be modified.
 */
const char *kvpool_strerror(int err);

/*
 * This library's version, "MAJOR.MINOR.PATCH" (the kvpool release it came
 * with; the file is libkvpool.so.MAJOR.MINOR.PATCH). The string is static.
 */
const char *kvpool_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBKVPOOL_KVPOOL_H */
