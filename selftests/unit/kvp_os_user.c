// SPDX-License-Identifier: GPL-2.0-only
/* Userspace implementation of kvp_os_user.h for the core's unit test. */
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
