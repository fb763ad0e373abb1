// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpool driver: moving structs and arrays of caller-sized elements
 * between userspace and the kernel, and the per-file scratch buffer the
 * arrays of the hot ops are read into. The handlers (kvpool_ioctl.c,
 * kvpool_exportfd.c, kvpool_arena.c, kvpool_ctl.c) and the dispatcher
 * call down into this file; it calls nothing of theirs.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kvpool_drv.h"

/*
 * Structs, and arrays of at most this many bytes, of 4- or 8-byte words,
 * move between user and kernel one word at a time in a single
 * user-access section, as iovec arrays do (copy_iovec_from_user()),
 * rather than through copy_{from,to}_user(): an ioctl's struct is tens
 * of bytes and a decode step's arrays a few KiB, where the string copy
 * gains little natively, and costs a lot where it is emulated (rep movsb
 * under QEMU's TCG; docs/PERFORMANCE.md).
 */
#define KVPD_WORDWISE_MAX	(64 * 1024)

static bool kvpd_wordwise(size_t bytes, size_t word)
{
	return bytes <= KVPD_WORDWISE_MAX && !(bytes % word);
}

/* copy_from_user() of @bytes, a multiple of @word (4 or 8), word by word. */
static int kvpd_read_words(void *dst, const void __user *src, size_t bytes,
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
static int kvpd_write_words(void __user *dst, const void *src, size_t bytes,
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

/* A whole array in, by words when kvpd_wordwise() says so. */
int kvpd_copy_in(void *dst, const void __user *src, size_t bytes,
		 size_t ksize)
{
	size_t word = ksize % sizeof(u64) ? sizeof(u32) : sizeof(u64);

	if (kvpd_wordwise(bytes, word))
		return kvpd_read_words(dst, src, bytes, word);
	return copy_from_user(dst, src, bytes) ? -EFAULT : 0;
}

/* A whole array out, by words when kvpd_wordwise() says so. */
int kvpd_copy_out(void __user *dst, const void *src, size_t bytes,
		  size_t ksize)
{
	size_t word = ksize % sizeof(u64) ? sizeof(u32) : sizeof(u64);

	if (kvpd_wordwise(bytes, word))
		return kvpd_write_words(dst, src, bytes, word);
	return copy_to_user(dst, src, bytes) ? -EFAULT : 0;
}

/*
 * An element length: at least what this header's element has (shorter
 * ones were never released), at most a page, like the structs.
 */
int kvpd_check_len(u32 len, size_t ksize)
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
 * *@error_index names it). Returns the array (kvpd_array_free() it) or an
 * ERR_PTR.
 */
void *kvpd_read_array_buf(u64 uptr, u32 count, u32 len, size_t ksize,
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
		ret = kvpd_copy_in(p, u, (size_t)count * ksize, ksize);
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
		kvpd_array_free(p, buf);
		return ERR_PTR(ret);
	}
	return p;
}

void *kvpd_read_array(u64 uptr, u32 count, u32 len, size_t ksize,
		      u32 *error_index)
{
	return kvpd_read_array_buf(uptr, count, len, ksize, error_index,
				   NULL, 0);
}

/* Frees what kvpd_read_array_buf() returned, unless it is the caller's @buf. */
void kvpd_array_free(void *p, const void *buf)
{
	if (p != buf)
		kvfree(p);
}

/*
 * Takes @c's scratch buffer (struct kvpd_scratch) for this call: true,
 * with *@buf and *@size its memory (NULL and 0 before its first growth);
 * false, *@buf NULL and *@size 0, when another call of the file holds it.
 * A true is given back with kvpd_scratch_put().
 */
bool kvpd_scratch_get(struct kvp_client *c, void **buf, size_t *size)
{
	struct kvpd_scratch *s = &container_of(c, struct kvpd_pool_file,
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
 * KVPD_SCRATCH_MAX (a failed growth keeps the old one).
 */
void kvpd_scratch_put(struct kvp_client *c, size_t want)
{
	struct kvpd_scratch *s = &container_of(c, struct kvpd_pool_file,
					       c)->scratch;
	void *buf;

	if (want > s->size && want <= KVPD_SCRATCH_MAX) {
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
int kvpd_write_array(u64 uptr, const void *src, u32 count, u32 len,
		     size_t ksize, bool zero_tail)
{
	void __user *u = u64_to_user_ptr(uptr);
	const char *p = src;
	u32 i;

	if (len == ksize)
		return kvpd_copy_out(u, p, (size_t)count * ksize, ksize);
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
