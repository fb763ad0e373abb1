// SPDX-License-Identifier: GPL-2.0-only
/*
 * Userspace implementation of kvp_os_user.h: what the core is linked
 * with outside the kernel (the unit test, the fuzzer, kvpool-replay's
 * core backend, kvpool-bench's core side).
 */
#include <stdarg.h>

#include "kvp_os_user.h"

unsigned long kvp_user_nr_allocs;
long kvp_user_live_allocs;
unsigned long kvp_user_fail_nth;
unsigned long kvp_user_reports;
bool kvp_user_verbose;

void kvp_user_lock(struct mutex *l, bool take, const char *func)
{
	if (l->held == take) {
		fprintf(stderr, "%s: pool lock already %s\n", func,
			take ? "held" : "free");
		abort();
	}
	l->held = take;
}

void kvp_user_assert_held(const struct mutex *l, const char *func)
{
	if (!l->held) {
		fprintf(stderr, "%s called without the pool lock\n", func);
		abort();
	}
}

void *kvp_user_alloc(size_t n, size_t size, bool zero)
{
	void *p;

	if (++kvp_user_nr_allocs == kvp_user_fail_nth)
		return NULL;
	if (size && n > SIZE_MAX / size)
		return NULL;
	p = zero ? calloc(n ? n : 1, size ? size : 1) :
		   malloc((n && size) ? n * size : 1);
	if (p)
		kvp_user_live_allocs++;
	return p;
}

void kvp_user_free(void *p)
{
	if (!p)
		return;
	kvp_user_live_allocs--;
	free(p);
}

void kvp_user_report(unsigned int pool, const char *fmt, ...)
{
	va_list ap;

	kvp_user_reports++;
	if (!kvp_user_verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "kvpool: pool %u: invariant: ", pool);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void xa_init_flags(struct xarray *xa, unsigned int flags)
{
	(void)flags;
	xa->slots = NULL;
	xa->cap = 0;
}

void xa_destroy(struct xarray *xa)
{
	kvp_user_free(xa->slots);
	xa->slots = NULL;
	xa->cap = 0;
}

void *xa_load(struct xarray *xa, unsigned long index)
{
	return index < xa->cap ? xa->slots[index] : NULL;
}

void *xa_erase(struct xarray *xa, unsigned long index)
{
	void *old = xa_load(xa, index);

	if (old)
		xa->slots[index] = NULL;
	return old;
}

int xa_alloc(struct xarray *xa, u32 *id, void *entry, struct xa_limit limit,
	     unsigned int gfp)
{
	unsigned long i, n;
	void **t;

	(void)gfp;
	for (i = limit.min; i < xa->cap && i <= limit.max; i++) {
		if (!xa->slots[i]) {
			xa->slots[i] = entry;
			*id = (u32)i;
			return 0;
		}
	}
	if (i > limit.max)
		return -EBUSY;
	n = xa->cap ? xa->cap * 2 : 16;
	t = kvp_user_alloc(n, sizeof(*t), true);
	if (!t)
		return -ENOMEM;
	if (xa->cap)
		memcpy(t, xa->slots, xa->cap * sizeof(*t));
	kvp_user_free(xa->slots);
	xa->slots = t;
	xa->cap = n;
	xa->slots[i] = entry;
	*id = (u32)i;
	return 0;
}

void *xa_find(struct xarray *xa, unsigned long *index, unsigned long max,
	      unsigned int filter)
{
	unsigned long i;

	(void)filter;
	for (i = *index; i < xa->cap && i <= max; i++) {
		if (xa->slots[i]) {
			*index = i;
			return xa->slots[i];
		}
	}
	return NULL;
}

void *xa_find_after(struct xarray *xa, unsigned long *index,
		    unsigned long max, unsigned int filter)
{
	unsigned long i = *index + 1;
	void *entry;

	if (!i)
		return NULL;
	entry = xa_find(xa, &i, max, filter);
	if (entry)
		*index = i;
	return entry;
}
