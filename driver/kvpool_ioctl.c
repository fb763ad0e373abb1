// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: the ioctl dispatcher, arrays of caller-sized elements,
 * and the pool device's file operations and ioctls. Each op copies its
 * arguments in, checks their shape, takes the pool lock around one core
 * call (kvp_core.h) and copies the answer out.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kernfs.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "kvpool_drv.h"
#include "kvpool_trace.h"

/*
 * Structs, and arrays of at most this many bytes, of 4- or 8-byte words,
 * move between user and kernel one word at a time in a single
 * user-access section, as iovec arrays do (copy_iovec_from_user()),
 * rather than through copy_{from,to}_user(): an ioctl's struct is tens
 * of bytes and a decode step's arrays a few KiB, where the string copy
 * gains little natively, and costs a lot where it is emulated (rep movsb
 * under QEMU's TCG; docs/PERFORMANCE.md).
 */
#define KVP_WORDWISE_MAX	(64 * 1024)

static bool kvp_wordwise(size_t bytes, size_t word)
{
	return bytes <= KVP_WORDWISE_MAX && !(bytes % word);
}

/* copy_from_user() of @bytes, a multiple of @word (4 or 8), word by word. */
static int kvp_read_words(void *dst, const void __user *src, size_t bytes,
			  size_t word)
{
	size_t i;

	if (!user_read_access_begin(src, bytes))
		return -EFAULT;
	if (word == sizeof(u64)) {
		for (i = 0; i < bytes / sizeof(u64); i++)
			unsafe_get_user(((u64 *)dst)[i],
					(const u64 __user *)src + i, efault);
	} else {
		for (i = 0; i < bytes / sizeof(u32); i++)
			unsafe_get_user(((u32 *)dst)[i],
					(const u32 __user *)src + i, efault);
	}
	user_read_access_end();
	return 0;
efault:
	user_read_access_end();
	return -EFAULT;
}

/* copy_to_user() of @bytes, a multiple of @word (4 or 8), word by word. */
static int kvp_write_words(void __user *dst, const void *src, size_t bytes,
			   size_t word)
{
	size_t i;

	if (!user_write_access_begin(dst, bytes))
		return -EFAULT;
	if (word == sizeof(u64)) {
		for (i = 0; i < bytes / sizeof(u64); i++)
			unsafe_put_user(((const u64 *)src)[i],
					(u64 __user *)dst + i, efault);
	} else {
		for (i = 0; i < bytes / sizeof(u32); i++)
			unsafe_put_user(((const u32 *)src)[i],
					(u32 __user *)dst + i, efault);
	}
	user_write_access_end();
	return 0;
efault:
	user_write_access_end();
	return -EFAULT;
}

/* A whole array in, by words when kvp_wordwise() says so. */
static int kvp_copy_in(void *dst, const void __user *src, size_t bytes,
		       size_t ksize)
{
	size_t word = ksize % sizeof(u64) ? sizeof(u32) : sizeof(u64);

	if (kvp_wordwise(bytes, word))
		return kvp_read_words(dst, src, bytes, word);
	return copy_from_user(dst, src, bytes) ? -EFAULT : 0;
}

/* A whole array out, by words when kvp_wordwise() says so. */
static int kvp_copy_out(void __user *dst, const void *src, size_t bytes,
			size_t ksize)
{
	size_t word = ksize % sizeof(u64) ? sizeof(u32) : sizeof(u64);

	if (kvp_wordwise(bytes, word))
		return kvp_write_words(dst, src, bytes, word);
	return copy_to_user(dst, src, bytes) ? -EFAULT : 0;
}

/*
 * Copies the user's struct in (checking size and unknown tail), runs the
 * op, and copies the struct back so out_* fields reach the caller, also
 * on errors that report something (ENOSPC's shortfall, the bad entry).
 * Unknown numbers are ENOTTY for everyone; only then are privileges
 * checked.
 */
long kvp_dispatch(struct kvp_client *c, const struct kvp_ioctl_op *ops,
		  unsigned int nr_ops, unsigned int base,
		  unsigned int cmd, unsigned long arg)
{
	union kvp_ucmd_buffer buf;
	const struct kvp_ioctl_op *op;
	struct kvp_ucmd ucmd = { .client = c };
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != KVPOOL_TYPE || nr < base || nr - base >= nr_ops)
		return -ENOTTY;
	op = &ops[array_index_nospec(nr - base, nr_ops)];
	if (!op->execute || op->ioctl_num != cmd)
		return -ENOTTY;
	if ((op->flags & KVP_OP_ADMIN) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	/*
	 * Whoever acts on a client's pages may be writing them: a quarantine
	 * waits for it (kvpool_quarantine.c). After the checks above, so an
	 * unknown or refused op stays ENOTTY or EPERM and counts no one.
	 */
	if (c) {
		ret = kvp_users_note(&container_of(c, struct kvp_pool_file,
						   c)->users);
		if (ret)
			return ret;
	}

	ucmd.ubuffer = (void __user *)arg;
	ret = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (ret)
		return ret;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	if (ucmd.user_size > PAGE_SIZE)
		return -E2BIG;
	/* The struct as this header knows it: by words (kvp_copy_in()). */
	if (ucmd.user_size == op->size)
		ret = kvp_copy_in(&buf, ucmd.ubuffer, op->size, op->size);
	else
		ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
					    ucmd.user_size);
	if (ret)
		return ret;
	ucmd.cmd = &buf;
	ucmd.op_size = op->size;
	ret = op->execute(&ucmd);
	if (ret == -EFAULT || (!ret && ucmd.responded))
		return ret;
	if (kvp_copy_out(ucmd.ubuffer, &buf,
			 min_t(u32, ucmd.user_size, op->size),
			 min_t(u32, ucmd.user_size, op->size)))
		return -EFAULT;
	return ret;
}

/*
 * Writes the struct back now, before the op takes effect: for the ops
 * whose result (a new fd, handle or id) the caller could not learn any
 * other way. If this faults, nothing has happened yet.
 */
int kvp_respond(struct kvp_ucmd *ucmd)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min(ucmd->user_size, ucmd->op_size)))
		return -EFAULT;
	ucmd->responded = true;
	return 0;
}

/*
 * An element length: at least what this header's element has (shorter
 * ones were never released), at most a page, like the structs.
 */
int kvp_check_len(u32 len, size_t ksize)
{
	if (len < ksize)
		return -EINVAL;
	if (len > PAGE_SIZE)
		return -E2BIG;
	return 0;
}

/*
 * Reads @count elements of @len bytes at @uptr into an array of
 * @ksize-byte ones: @buf when they fit its @buf_size bytes, else a new
 * one; bytes of an element past @ksize must be zero (E2BIG, and
 * *@error_index names it). Returns the array (kvp_array_free() it) or an
 * ERR_PTR.
 */
void *kvp_read_array_buf(u64 uptr, u32 count, u32 len, size_t ksize,
			 u32 *error_index, void *buf, size_t buf_size)
{
	void __user *u = u64_to_user_ptr(uptr);
	char *p = buf;
	u32 i;
	int ret = 0;

	if ((size_t)count * ksize > buf_size) {
		p = kvmalloc_array(count, ksize, GFP_KERNEL_ACCOUNT);
		if (!p)
			return ERR_PTR(-ENOMEM);
	}
	if (len == ksize) {
		ret = kvp_copy_in(p, u, (size_t)count * ksize, ksize);
		goto out;
	}
	for (i = 0; i < count; i++) {
		ret = copy_struct_from_user(p + i * ksize, ksize,
					    u + (size_t)i * len, len);
		if (ret) {
			if (ret == -E2BIG && error_index)
				*error_index = i;
			break;
		}
		if (!(i % 1024))
			cond_resched();
	}
out:
	if (ret) {
		kvp_array_free(p, buf);
		return ERR_PTR(ret);
	}
	return p;
}

void *kvp_read_array(u64 uptr, u32 count, u32 len, size_t ksize,
		     u32 *error_index)
{
	return kvp_read_array_buf(uptr, count, len, ksize, error_index,
				  NULL, 0);
}

/* Frees what kvp_read_array_buf() returned, unless it is the caller's @buf. */
void kvp_array_free(void *p, const void *buf)
{
	if (p != buf)
		kvfree(p);
}

/*
 * Takes @c's scratch buffer (struct kvp_scratch) for this call: true,
 * with *@buf and *@size its memory (NULL and 0 before its first growth);
 * false, *@buf NULL and *@size 0, when another call of the file holds it.
 * A true is given back with kvp_scratch_put().
 */
bool kvp_scratch_get(struct kvp_client *c, void **buf, size_t *size)
{
	struct kvp_scratch *s = &container_of(c, struct kvp_pool_file,
					      c)->scratch;

	*buf = NULL;
	*size = 0;
	if (!mutex_trylock(&s->lock))
		return false;
	*buf = s->buf;
	*size = s->size;
	return true;
}

/*
 * Gives @c's scratch buffer back after a call that needed @want bytes of
 * it, growing it to fit the next such call unless that is above
 * KVP_SCRATCH_MAX (a failed growth keeps the old one).
 */
void kvp_scratch_put(struct kvp_client *c, size_t want)
{
	struct kvp_scratch *s = &container_of(c, struct kvp_pool_file,
					      c)->scratch;
	void *buf;

	if (want > s->size && want <= KVP_SCRATCH_MAX) {
		want = max_t(size_t, roundup_pow_of_two(want), PAGE_SIZE);
		buf = kvmalloc(want, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (buf) {
			kvfree(s->buf);
			s->buf = buf;
			s->size = want;
		}
	}
	mutex_unlock(&s->lock);
}

/*
 * Writes @count @ksize-byte elements to the caller's array of @len-byte
 * ones; with @zero_tail, the bytes of each past @ksize are zeroed (an
 * element the kernel alone writes), else left as the caller gave them
 * (an element it read: the tail was checked zero).
 */
int kvp_write_array(u64 uptr, const void *src, u32 count, u32 len,
		    size_t ksize, bool zero_tail)
{
	void __user *u = u64_to_user_ptr(uptr);
	const char *p = src;
	u32 i;

	if (len == ksize)
		return kvp_copy_out(u, p, (size_t)count * ksize, ksize);
	for (i = 0; i < count; i++) {
		void __user *e = u + (size_t)i * len;

		if (copy_to_user(e, p + i * ksize, ksize))
			return -EFAULT;
		if (zero_tail && clear_user(e + ksize, len - ksize))
			return -EFAULT;
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

static int kvp_check_batch(struct kvp_client *c, u32 flags, u32 count)
{
	if (flags)	/* flags a caller allows are masked off before */
		return -EOPNOTSUPP;
	if (!count || count > c->pool->max_batch)
		return -EINVAL;
	return 0;
}

static int kvp_info_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvp_pool *pool = c->pool;
	struct kvpool_info *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	/* Geometry never changes after creation: no lock needed. */
	cmd->out_abi_version = KVPOOL_ABI_VERSION;
	cmd->out_pool_id = pool->id;
	/* The core's ops, and the driver's own: files and cgroup paths. */
	cmd->out_features = KVP_CORE_FEATURES | KVPOOL_FEAT_ARENA |
			    KVPOOL_FEAT_TENANT_PATH;
	cmd->out_nr_pages = pool->nr_pages;
	cmd->out_page_tokens = pool->page_tokens;
	cmd->out_nr_rows = pool->nr_rows;
	cmd->out_row_tokens = pool->row_tokens;
	cmd->out_create_flags = pool->flags;
	cmd->out_max_batch = pool->max_batch;
	cmd->out_client_id = c->id;
	return 0;
}

static int kvp_stats_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_stats *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	mutex_lock(&c->pool->lock);
	kvp_stats_locked(c, cmd);
	mutex_unlock(&c->pool->lock);
	return 0;
}

static int kvp_row_alloc_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_row_alloc *cmd = ucmd->cmd;
	u64 hbuf[KVP_STACK_ARRAY / sizeof(u64)];
	struct kvpool_handle *h = (void *)hbuf;
	struct kvp_lock_ns lt;
	u32 freed, idx;
	int ret;

	cmd->out_short = 0;
	ret = kvp_check_batch(c, cmd->flags, cmd->count);
	if (!ret && cmd->__reserved)
		ret = -EINVAL;
	if (!ret)
		ret = kvp_check_len(cmd->entry_len, sizeof(*h));
	if (ret)
		return ret;
	if (cmd->count > sizeof(hbuf) / sizeof(*h)) {
		h = kvmalloc_array(cmd->count, sizeof(*h), GFP_KERNEL_ACCOUNT);
		if (!h)
			return -ENOMEM;
	}

	kvp_lock_timed(c->pool, &lt, trace_kvpool_row_alloc_enabled());
	ret = kvp_row_alloc_locked(c, h, cmd->count, &cmd->out_short);
	trace_kvpool_row_alloc(c, cmd->count, h, cmd->out_short, ret, &lt);
	trace_kvpool_refuse(c, KVPOOL_CMD_ROW_ALLOC, ret, cmd->out_short);
	mutex_unlock(&c->pool->lock);
	if (ret)
		goto out_free;

	if (kvp_write_array(cmd->handles, h, cmd->count, cmd->entry_len,
			    sizeof(*h), true)) {
		/*
		 * The caller cannot name rows it never learnt of: give them
		 * back rather than leave them held until close.
		 */
		mutex_lock(&c->pool->lock);
		ret = kvp_release_locked(c, h, cmd->count, 0, &freed, &idx);
		trace_kvpool_release(c, cmd->count, h[0].req_pool_idx, 0,
				     freed, idx, ret, NULL);
		mutex_unlock(&c->pool->lock);
		ret = -EFAULT;
	}
out_free:
	kvp_array_free(h, hbuf);
	return ret;
}

/*
 * EXTEND's one output per entry, out_nr_new, written in place: one
 * user-access section, a store an entry, the caller's own fields never
 * rewritten (docs/design.md, "Arrays").
 */
static int kvp_write_nr_new(u64 uptr, const struct kvpool_extend_entry *e,
			    u32 count, u32 len)
{
	char __user *u = u64_to_user_ptr(uptr);
	u32 i;

	if (!user_write_access_begin(u, (size_t)count * len))
		return -EFAULT;
	for (i = 0; i < count; i++)
		unsafe_put_user(e[i].out_nr_new,
				(u32 __user *)(u + (size_t)i * len +
					       offsetof(struct kvpool_extend_entry,
							out_nr_new)),
				efault);
	user_write_access_end();
	return 0;
efault:
	user_write_access_end();
	return -EFAULT;
}

/* Page ids an EXTEND keeps on its stack (docs/design.md, "Arrays"). */
#define KVP_STACK_PAGES	64

static int kvp_extend_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_extend *cmd = ucmd->cmd;
	u64 ebuf[KVP_STACK_ARRAY / sizeof(u64)];
	struct kvpool_extend_entry *e;
	struct kvp_extend_result res;
	struct kvp_lock_ns lt;
	u32 pbuf[KVP_STACK_PAGES];
	size_t ssize, esize, eroom;
	u32 *pages = pbuf, pcap;
	bool scratch;
	void *ebp;
	char *sb;
	int ret;

	cmd->out_nr_pages = 0;
	cmd->out_short = 0;
	cmd->out_error_index = ~0U;
	ret = kvp_check_batch(c, cmd->flags, cmd->count);
	if (!ret && cmd->__reserved)
		ret = -EINVAL;
	if (!ret)
		ret = kvp_check_len(cmd->entry_len, sizeof(*e));
	if (!ret)
		ret = kvp_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;

	/*
	 * The entries, then the new ids after them, in the file's scratch
	 * buffer when this call has it and they fit; else on the stack.
	 */
	scratch = kvp_scratch_get(c, (void **)&sb, &ssize);
	esize = (size_t)cmd->count * sizeof(*e);
	eroom = ALIGN(esize, sizeof(u64));
	ebp = ssize > sizeof(ebuf) ? (void *)sb : (void *)ebuf;
	e = kvp_read_array_buf(cmd->entries, cmd->count, cmd->entry_len,
			       sizeof(*e), &cmd->out_error_index, ebp,
			       ebp == sb ? ssize : sizeof(ebuf));
	if (IS_ERR(e)) {
		ret = PTR_ERR(e);
		goto out_scratch;
	}
	pcap = ARRAY_SIZE(pbuf);
	if ((void *)e == sb && ssize - eroom > sizeof(pbuf)) {
		pages = (u32 *)(sb + eroom);
		pcap = (ssize - eroom) / sizeof(u32);
	} else if ((void *)e != sb && ssize > sizeof(pbuf)) {
		pages = (u32 *)sb;
		pcap = ssize / sizeof(u32);
	}

	kvp_lock_timed(c->pool, &lt, trace_kvpool_extend_enabled());
	ret = kvp_extend_buf_locked(c, e, cmd->count, cmd->pages_cap,
				    pages, pcap, &res);
	trace_kvpool_extend(c, cmd->count, e, &res, ret, &lt);
	trace_kvpool_refuse(c, KVPOOL_CMD_EXTEND, ret, res.shortfall);
	mutex_unlock(&c->pool->lock);
	cmd->out_nr_pages = res.nr_pages;
	cmd->out_short = res.shortfall;
	cmd->out_error_index = res.error_index;
	if (ret)
		goto out_free;

	if (kvp_write_nr_new(cmd->entries, e, cmd->count, cmd->entry_len) ||
	    kvp_write_array(cmd->pages, res.pages, res.nr_pages,
			    cmd->page_entry_len, sizeof(u32), true))
		ret = -EFAULT;
out_free:
	kvp_array_free(res.pages, pages);
	kvp_array_free(e, ebp);
out_scratch:
	if (scratch)
		kvp_scratch_put(c, ret ? 0 :
				eroom + (size_t)res.nr_pages * sizeof(u32));
	return ret;
}

enum kvp_batch_op {
	KVP_BATCH_COMMIT,
	KVP_BATCH_TRIM,
	KVP_BATCH_RELEASE,
	KVP_BATCH_DONATE,
	KVP_BATCH_SWA_FREE,
	KVP_BATCH_CACHE_EVICT,
};

/* The ops that share struct kvpool_batch: entry size and allowed flags. */
static const struct {
	size_t entry_size;
	u32 flags;
} kvp_batch_ops[] = {
	[KVP_BATCH_COMMIT] = { sizeof(struct kvpool_len_entry), 0 },
	[KVP_BATCH_TRIM] = { sizeof(struct kvpool_handle), 0 },
	[KVP_BATCH_RELEASE] = { sizeof(struct kvpool_handle),
				KVPOOL_RELEASE_DONATE },
	[KVP_BATCH_DONATE] = { sizeof(struct kvpool_len_entry), 0 },
	[KVP_BATCH_SWA_FREE] = { sizeof(struct kvpool_len_entry), 0 },
	[KVP_BATCH_CACHE_EVICT] = { sizeof(u32), 0 },
};

/* Whether @op has an event, and it is enabled: then its lock is timed. */
static bool kvp_batch_traced(enum kvp_batch_op op)
{
	switch (op) {
	case KVP_BATCH_COMMIT:
		return false;
	case KVP_BATCH_TRIM:
		return trace_kvpool_trim_enabled();
	case KVP_BATCH_RELEASE:
		return trace_kvpool_release_enabled();
	case KVP_BATCH_DONATE:
		return trace_kvpool_donate_enabled();
	case KVP_BATCH_SWA_FREE:
		return trace_kvpool_swa_free_enabled();
	case KVP_BATCH_CACHE_EVICT:
		return trace_kvpool_cache_evict_enabled();
	}
	return false;
}

/*
 * The event of batch op @op, under the pool lock. @e holds the entries:
 * each starts with a handle, except CACHE_EVICT's, which are page ids.
 */
static void kvp_batch_trace(struct kvp_client *c,
			    const struct kvpool_batch *cmd,
			    enum kvp_batch_op op, const void *e, int ret,
			    const struct kvp_lock_ns *lt)
{
	const struct kvpool_handle *h = e;
	const u32 *id = e;

	switch (op) {
	case KVP_BATCH_COMMIT:
		break;
	case KVP_BATCH_TRIM:
		trace_kvpool_trim(c, cmd->count, h->req_pool_idx, cmd->flags,
				  cmd->out_nr_pages, cmd->out_error_index, ret,
				  lt);
		break;
	case KVP_BATCH_RELEASE:
		trace_kvpool_release(c, cmd->count, h->req_pool_idx,
				     cmd->flags, cmd->out_nr_pages,
				     cmd->out_error_index, ret, lt);
		break;
	case KVP_BATCH_DONATE:
		trace_kvpool_donate(c, cmd->count, h->req_pool_idx,
				    cmd->flags, cmd->out_nr_pages,
				    cmd->out_error_index, ret, lt);
		break;
	case KVP_BATCH_SWA_FREE:
		trace_kvpool_swa_free(c, cmd->count, h->req_pool_idx,
				      cmd->flags, cmd->out_nr_pages,
				      cmd->out_error_index, ret, lt);
		break;
	case KVP_BATCH_CACHE_EVICT:
		trace_kvpool_cache_evict(c, cmd->count, *id, cmd->flags,
					 cmd->out_nr_pages,
					 cmd->out_error_index, ret, lt);
		break;
	}
}

static int kvp_batch(struct kvp_client *c, struct kvpool_batch *cmd,
		     enum kvp_batch_op op)
{
	size_t size = kvp_batch_ops[op].entry_size;
	u64 ebuf[KVP_STACK_ARRAY / sizeof(u64)];
	void *e, *ebp, *sb;
	struct kvp_lock_ns lt;
	size_t ssize;
	bool scratch;
	int ret;

	cmd->out_error_index = ~0U;
	cmd->out_nr_pages = 0;
	ret = kvp_check_batch(c, cmd->flags & ~kvp_batch_ops[op].flags,
			      cmd->count);
	if (!ret)
		ret = kvp_check_len(cmd->entry_len, size);
	if (ret)
		return ret;
	scratch = kvp_scratch_get(c, &sb, &ssize);
	ebp = ssize > sizeof(ebuf) ? sb : ebuf;
	e = kvp_read_array_buf(cmd->entries, cmd->count, cmd->entry_len, size,
			       &cmd->out_error_index, ebp,
			       ebp == sb ? ssize : sizeof(ebuf));
	if (IS_ERR(e)) {
		ret = PTR_ERR(e);
		goto out_scratch;
	}

	kvp_lock_timed(c->pool, &lt, kvp_batch_traced(op));
	switch (op) {
	case KVP_BATCH_COMMIT:
		ret = kvp_commit_locked(c, e, cmd->count,
					&cmd->out_error_index);
		break;
	case KVP_BATCH_TRIM:
		ret = kvp_trim_locked(c, e, cmd->count, &cmd->out_nr_pages,
				      &cmd->out_error_index);
		break;
	case KVP_BATCH_RELEASE:
		ret = kvp_release_locked(c, e, cmd->count, cmd->flags,
					 &cmd->out_nr_pages,
					 &cmd->out_error_index);
		break;
	case KVP_BATCH_DONATE:
		ret = kvp_donate_locked(c, e, cmd->count, &cmd->out_nr_pages,
					&cmd->out_error_index);
		break;
	case KVP_BATCH_SWA_FREE:
		ret = kvp_swa_free_locked(c, e, cmd->count, &cmd->out_nr_pages,
					  &cmd->out_error_index);
		break;
	case KVP_BATCH_CACHE_EVICT:
		ret = kvp_cache_evict_locked(c, e, cmd->count,
					     &cmd->out_error_index);
		if (!ret)
			cmd->out_nr_pages = cmd->count;
		break;
	}
	kvp_batch_trace(c, cmd, op, e, ret, &lt);
	mutex_unlock(&c->pool->lock);
	kvp_array_free(e, ebp);
out_scratch:
	if (scratch)
		kvp_scratch_put(c, ret ? 0 : (size_t)cmd->count * size);
	return ret;
}

static int kvp_commit_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_COMMIT);
}

static int kvp_trim_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_TRIM);
}

static int kvp_release_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_RELEASE);
}

static int kvp_donate_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_DONATE);
}

static int kvp_swa_free_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_SWA_FREE);
}

static int kvp_cache_evict_ioctl(struct kvp_ucmd *ucmd)
{
	return kvp_batch(ucmd->client, ucmd->cmd, KVP_BATCH_CACHE_EVICT);
}

static int kvp_attach_prefix_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_attach *cmd = ucmd->cmd;
	u32 max = c->pool->row_tokens / c->pool->page_tokens;
	u32 *pages;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (!cmd->nr_pages || cmd->nr_pages > max)
		return -EINVAL;
	ret = kvp_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	pages = kvp_read_array(cmd->pages, cmd->nr_pages, cmd->page_entry_len,
			       sizeof(u32), NULL);
	if (IS_ERR(pages))
		return PTR_ERR(pages);
	mutex_lock(&c->pool->lock);
	ret = kvp_attach_prefix_locked(c, &cmd->handle, pages, cmd->nr_pages);
	mutex_unlock(&c->pool->lock);
	kvfree(pages);
	return ret;
}

/* TO_SLOT names a row; FROM_SLOT only writes one; SLOT_RELEASE needs none. */
static int kvp_slot_check(struct kvpool_slot *cmd, bool handle_must_be_0)
{
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (handle_must_be_0 &&
	    (cmd->handle.req_pool_idx || cmd->handle.generation))
		return -EINVAL;
	cmd->out_nr_pages = 0;
	return 0;
}

static int kvp_to_slot_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvp_slot_check(cmd, false);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_to_slot_locked(c, &cmd->handle, cmd->session_id,
				 &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static bool kvp_same_handle(const struct kvpool_handle *a,
			    const struct kvpool_handle *b)
{
	return a->req_pool_idx == b->req_pool_idx &&
	       a->generation == b->generation;
}

/*
 * The new handle is the only name the caller gets for the row: it is
 * written back before the row leaves the slot (see kvp_respond()).
 */
static int kvp_from_slot_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	struct kvpool_handle h, now;
	u32 n, n_now;
	int ret;

	ret = kvp_slot_check(cmd, false);
	if (ret)
		return ret;
	memset(&cmd->handle, 0, sizeof(cmd->handle));
	mutex_lock(&c->pool->lock);
	ret = kvp_from_slot_peek_locked(c, cmd->session_id, &h, &n);
	mutex_unlock(&c->pool->lock);
	if (ret)
		return ret;
	cmd->handle = h;
	cmd->out_nr_pages = n;
	ret = kvp_respond(ucmd);
	if (ret)
		return ret;

	mutex_lock(&c->pool->lock);
	/* Another thread of the caller may have changed the slot since. */
	ret = kvp_from_slot_peek_locked(c, cmd->session_id, &now, &n_now);
	if (!ret && (!kvp_same_handle(&h, &now) || n != n_now))
		ret = -EAGAIN;
	if (!ret)
		ret = kvp_from_slot_locked(c, cmd->session_id, &now, &n_now);
	mutex_unlock(&c->pool->lock);
	if (ret) {
		ucmd->responded = false;
		memset(&cmd->handle, 0, sizeof(cmd->handle));
		cmd->out_nr_pages = 0;
	}
	return ret;
}

static int kvp_slot_release_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_slot *cmd = ucmd->cmd;
	int ret;

	ret = kvp_slot_check(cmd, true);
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_slot_release_locked(c, cmd->session_id, &cmd->out_nr_pages);
	mutex_unlock(&c->pool->lock);
	return ret;
}

static int kvp_row_query_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_row_query *cmd = ucmd->cmd;
	u32 *pages = NULL;
	int ret;

	if (cmd->flags & ~KVPOOL_QUERY_BY_SLOT)
		return -EOPNOTSUPP;
	if (cmd->flags & KVPOOL_QUERY_BY_SLOT) {
		if (cmd->handle.req_pool_idx || cmd->handle.generation)
			return -EINVAL;
	} else if (cmd->session_id) {
		return -EINVAL;
	}
	if (cmd->__reserved)
		return -EINVAL;
	ret = kvp_check_len(cmd->page_entry_len, sizeof(u32));
	if (ret)
		return ret;
	mutex_lock(&c->pool->lock);
	ret = kvp_row_query_locked(c, cmd, &pages);
	mutex_unlock(&c->pool->lock);
	if (ret)
		return ret;
	if (pages &&
	    kvp_write_array(cmd->pages, pages,
			    min(cmd->pages_cap, cmd->out_nr_pages),
			    cmd->page_entry_len, sizeof(u32), true))
		ret = -EFAULT;
	kvfree(pages);
	return ret;
}

static int kvp_verify_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_pool *pool = ucmd->client->pool;
	struct kvpool_verify *cmd = ucmd->cmd;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&pool->lock);
	ret = kvp_verify_locked(pool, &cmd->out_violations);
	mutex_unlock(&pool->lock);
	if (ret)
		return ret;
	cmd->out_pages_checked = pool->nr_pages;
	cmd->out_rows_checked = pool->nr_rows;
	return 0;
}

static int kvp_pressure_ioctl(struct kvp_ucmd *ucmd)
{
	struct kvp_client *c = ucmd->client;
	struct kvpool_pressure *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	mutex_lock(&c->pool->lock);
	cmd->out_ask_pages = kvp_pressure_locked(c, &cmd->out_reasons);
	cmd->out_free_pages = c->pool->free_pages;
	cmd->out_low_wmark = c->pool->low_wmark;
	cmd->out_high_wmark = c->pool->high_wmark;
	trace_kvpool_pressure(c, cmd->out_ask_pages, cmd->out_reasons, false);
	mutex_unlock(&c->pool->lock);
	return 0;
}

#define KVP_POOL_OP(_name, _fn, _struct, _last, _flags)			\
	KVP_OP(KVPOOL_CMD_INFO, _name, _fn, _struct, _last, _flags)

static const struct kvp_ioctl_op kvp_pool_ops[] = {
	KVP_POOL_OP(INFO, kvp_info_ioctl, struct kvpool_info,
		    __reserved, 0),
	KVP_POOL_OP(STATS, kvp_stats_ioctl, struct kvpool_stats,
		    out_tenant_max_rows, 0),
	KVP_POOL_OP(ROW_ALLOC, kvp_row_alloc_ioctl,
		    struct kvpool_row_alloc, __reserved, 0),
	KVP_POOL_OP(EXTEND, kvp_extend_ioctl, struct kvpool_extend,
		    __reserved, 0),
	KVP_POOL_OP(COMMIT, kvp_commit_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(TRIM, kvp_trim_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(RELEASE, kvp_release_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(TO_SLOT, kvp_to_slot_ioctl, struct kvpool_slot,
		    __reserved, 0),
	KVP_POOL_OP(FROM_SLOT, kvp_from_slot_ioctl, struct kvpool_slot,
		    __reserved, 0),
	KVP_POOL_OP(SLOT_RELEASE, kvp_slot_release_ioctl,
		    struct kvpool_slot, __reserved, 0),
	KVP_POOL_OP(ROW_QUERY, kvp_row_query_ioctl,
		    struct kvpool_row_query, __reserved, 0),
	/* O(pool) under the pool lock: not for every client to repeat. */
	KVP_POOL_OP(VERIFY, kvp_verify_ioctl, struct kvpool_verify,
		    __reserved, KVP_OP_ADMIN),
	KVP_POOL_OP(DONATE, kvp_donate_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(ATTACH_PREFIX, kvp_attach_prefix_ioctl,
		    struct kvpool_attach, pages, 0),
	KVP_POOL_OP(CACHE_EVICT, kvp_cache_evict_ioctl,
		    struct kvpool_batch, out_nr_pages, 0),
	KVP_POOL_OP(SWA_FREE, kvp_swa_free_ioctl, struct kvpool_batch,
		    out_nr_pages, 0),
	KVP_POOL_OP(EXPORT, kvp_export_ioctl, struct kvpool_export,
		    out_nr_pages, 0),
	KVP_POOL_OP(IMPORT, kvp_import_ioctl, struct kvpool_import,
		    __reserved2, 0),
	KVP_POOL_OP(PRESSURE, kvp_pressure_ioctl,
		    struct kvpool_pressure, __reserved, 0),
	KVP_POOL_OP(ARENA, kvp_arena_ioctl, struct kvpool_arena, fds, 0),
};

static long kvp_pool_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct kvp_client *c = file->private_data;
	u32 seq = READ_ONCE(c->pool->pressure_seq), now;
	long ret;

	ret = kvp_dispatch(c, kvp_pool_ops, ARRAY_SIZE(kvp_pool_ops),
			   KVPOOL_CMD_INFO, cmd, arg);
	/* The op may have raised someone's ask: let pollers look again. */
	now = READ_ONCE(c->pool->pressure_seq);
	if (now != seq) {
		trace_kvpool_pressure_raise(c->pool->id, c->id, _IOC_NR(cmd),
					    now);
		wake_up_interruptible_all(&kvp_dev_of(c->pool)->wq);
	}
	return ret;
}

static __poll_t kvp_pool_poll(struct file *file, poll_table *wait)
{
	struct kvp_client *c = file->private_data;
	u32 ask, why;

	poll_wait(file, &kvp_dev_of(c->pool)->wq, wait);
	mutex_lock(&c->pool->lock);
	ask = kvp_pressure_locked(c, &why);
	trace_kvpool_pressure(c, ask, why, true);
	mutex_unlock(&c->pool->lock);
	return ask ? EPOLLPRI : 0;
}

/*
 * The opener's cgroup v2 id and, in @buf, the path kvp_tenant_match()
 * walks: its cgroup's, or, when that is too long for @buf, that of its
 * nearest ancestor whose path fits. A configured path is shorter than
 * that, so no descendant of one escapes it by a long name. Returns @buf,
 * or NULL when not even the root's path could be had (match by id only).
 */
static char *kvp_opener_cgroup(char *buf, u64 *cgid)
{
	char *path = NULL;
#ifdef CONFIG_CGROUPS
	struct cgroup *cg;
	int len;

	/* The css_set, and the cgroups in it, stay while RCU is held. */
	rcu_read_lock();
	cg = task_dfl_cgroup(current);
	*cgid = cgroup_id(cg);
	for (; cg; cg = cgroup_parent(cg)) {
		/* Older kernels give the full length, newer ones -E2BIG. */
		len = kernfs_path(cg->kn, buf, KVPOOL_CGROUP_PATH_MAX);
		if (len >= 0 && len < KVPOOL_CGROUP_PATH_MAX) {
			path = buf;
			break;
		}
	}
	rcu_read_unlock();
#else
	*cgid = 0;
#endif
	return path;
}

static int kvp_pool_open(struct inode *inode, struct file *file)
{
	struct kvp_dev *kd = container_of(inode->i_cdev, struct kvp_dev, cdev);
	struct kvp_pool_file *pf;
	char *buf, *path;
	u64 cgid = 0;
	u32 uid;
	int ret;

	/*
	 * A failing init frees the module: nothing may stay open on it.
	 * Pairs with the release at the end of kvpool_init().
	 */
	if (!smp_load_acquire(&kvp_live))
		return -ENODEV;

	/*
	 * The tenant is the opener's, fixed now: a client cannot change it
	 * by moving cgroups or passing the file on. Failing to read the path
	 * fails the open: joining another tenant instead would let a client
	 * out of its limits.
	 */
	buf = kmalloc(KVPOOL_CGROUP_PATH_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	path = kvp_opener_cgroup(buf, &cgid);
	uid = from_kuid(&init_user_ns, current_euid());

	pf = kzalloc(sizeof(*pf), GFP_KERNEL_ACCOUNT);
	if (!pf) {
		kfree(buf);
		return -ENOMEM;
	}
	ret = kvp_users_init(&pf->users);
	if (ret)
		goto out_free;
	mutex_init(&pf->scratch.lock);
	/* No global lock is held here: this waits for this pool only. */
	mutex_lock(&kd->core.lock);
	ret = kd->dead ? -ENODEV :
	      kvp_client_attach_tenant_locked(&kd->core, &pf->c, cgid, uid,
					      path);
	/* A full tenant table may hold dead cgroups' tenants: make room. */
	if (ret == -EMFILE) {
		kvp_tenant_prune_locked(&kd->core, kvp_cgroup_alive);
		ret = kvp_client_attach_tenant_locked(&kd->core, &pf->c, cgid,
						      uid, path);
	}
	mutex_unlock(&kd->core.lock);
	if (ret)
		goto out_users;
	kfree(buf);
	file->private_data = &pf->c;
	return nonseekable_open(inode, file);

out_users:
	mutex_destroy(&pf->scratch.lock);
	kvp_users_fini(&pf->users);
out_free:
	kfree(pf);
	kfree(buf);
	return ret;
}

/*
 * The last reference to the file is gone: give back all it held, at once
 * or after a quarantine. The file's cdev reference keeps the device alive
 * until after this returns; a quarantine needs none (kvpool_drv.h).
 */
static int kvp_pool_release(struct inode *inode, struct file *file)
{
	struct kvp_client *c = file->private_data;

	kvp_pool_file_release(container_of(c, struct kvp_pool_file, c));
	return 0;
}

static void kvp_pool_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct kvp_client *c = file->private_data;
	struct kvp_pool *pool = c->pool;

	mutex_lock(&pool->lock);
	seq_printf(m, "kvpool-pool:\t%u\n", pool->id);
	seq_printf(m, "kvpool-client-id:\t%u\n", c->id);
	seq_printf(m, "kvpool-tenant:\t%u\n", c->tenant->id);
	seq_printf(m, "kvpool-rows:\t%u\n", c->nr_rows);
	seq_printf(m, "kvpool-slots:\t%u\n", c->nr_slots);
	seq_printf(m, "kvpool-pages:\t%u\n", c->nr_pages);
	seq_printf(m, "kvpool-cache-pages:\t%u\n", c->nr_cache_pages);
	mutex_unlock(&pool->lock);
}

const struct file_operations kvp_pool_fops = {
	.owner = THIS_MODULE,
	.open = kvp_pool_open,
	.release = kvp_pool_release,
	.unlocked_ioctl = kvp_pool_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.show_fdinfo = kvp_pool_show_fdinfo,
	.poll = kvp_pool_poll,
};
