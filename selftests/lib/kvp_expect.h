/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The kselftest harness's expectations, for kvpool's userspace suites that
 * cannot use the harness itself: the core's unit test (selftests/unit, one
 * TAP line per test of its own runner) and libkvpool's tests (userlib/test,
 * one program per test, built without the kernel tree). With it every
 * kvpool test asserts in one vocabulary, the harness's, and means the same
 * by it.
 *
 * It lives in selftests/lib beside the harness's other users, and carries
 * libkvpool's licence, not the kernel selftests' GPL, so that both suites
 * may include it. It is not the harness: never include both in one unit
 * (the names clash, and the #error below says so).
 *
 * EXPECT_EQ(expected, seen) and its kin compare as the harness does: each
 * side is evaluated once into a variable of its own type, and the two are
 * compared with C's conversions, as the expression "expected == seen"
 * would be. A failure prints file:line, both expressions' text and their
 * values (each as signed or unsigned long long, by the signedness of its
 * type), counts one in kvp_expect_failures, and the test goes on. As in
 * the harness, the statement after a failed expectation runs, and only
 * then:
 *
 *	EXPECT_EQ(0, ret) TH_LOG("pool %u", id);
 *
 * There are no ASSERT_*: no expectation of these suites stops its test.
 *
 * TH_LOG_STREAM picks where the lines go (stderr unless defined before
 * the #include; the unit test keeps its TAP diagnostics on stdout).
 */
#ifndef KVP_EXPECT_H
#define KVP_EXPECT_H

#ifdef __KSELFTEST_HARNESS_H
#error "kvp_expect.h is for suites without kselftest_harness.h"
#endif

#include <stdio.h>
#include <stdlib.h>

#ifndef TH_LOG_STREAM
#define TH_LOG_STREAM stderr
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* Failed expectations so far: a suite's runner may read and reset it. */
static int kvp_expect_failures;

/* "# file:line: ..." is the harness's diagnostic line, less the test name. */
#define TH_LOG(fmt, ...)						\
	fprintf(TH_LOG_STREAM, "# %s:%d: " fmt "\n", __FILE__, __LINE__, \
		##__VA_ARGS__)

/* True for a signed arithmetic type (false for pointers and bool). */
#define __kvp_signed(v)	(((__typeof__(v))-1) < (__typeof__(v))1)

/* One side of a failed comparison, as "text (value)" in its signedness. */
#define __kvp_side(v, text)						\
	do {								\
		if (__kvp_signed(v))					\
			fprintf(TH_LOG_STREAM, "%s (%lld)", text,	\
				(long long)(v));			\
		else							\
			fprintf(TH_LOG_STREAM, "%s (%llu)", text,	\
				(unsigned long long)(v));		\
	} while (0)

/*
 * Each expectation is one statement, a for loop whose body is the
 * statement after it: that body runs once if the check failed, never if
 * it held ("EXPECT_EQ(a, b);" has an empty one). Unlike the harness's
 * (a do-while and a for), it may stand unbraced under an if, else or loop
 * without -Wmultistatement-macros.
 *
 * The comparison is C's own, mixed signedness included (an int literal
 * against a u32 field is the common case), so -Wsign-compare is off for
 * it alone.
 */
#define __kvp_on_failure(failed)					\
	for (int __kvp_fail = (failed); __kvp_fail; __kvp_fail = 0)

/* The end of a failure's line: counted, and true for __kvp_on_failure. */
static inline int __kvp_failed(void)
{
	fputc('\n', TH_LOG_STREAM);
	kvp_expect_failures++;
	return 1;
}

#define __kvp_expect(expected, expected_text, op, seen, seen_text)	\
	__kvp_on_failure(({						\
		__typeof__(expected) __kvp_e = (expected);		\
		__typeof__(seen) __kvp_s = (seen);			\
		int __kvp_ok;						\
									\
		_Pragma("GCC diagnostic push")				\
		_Pragma("GCC diagnostic ignored \"-Wsign-compare\"")	\
		__kvp_ok = __kvp_e op __kvp_s;				\
		_Pragma("GCC diagnostic pop")				\
		if (!__kvp_ok) {					\
			fprintf(TH_LOG_STREAM, "# %s:%d: Expected ",	\
				__FILE__, __LINE__);			\
			__kvp_side(__kvp_e, expected_text);		\
			fprintf(TH_LOG_STREAM, " %s ", #op);		\
			__kvp_side(__kvp_s, seen_text);			\
		}							\
		!__kvp_ok && __kvp_failed();				\
	}))

/*
 * EXPECT_TRUE(seen) is "0 != seen" and EXPECT_FALSE(seen) "0 == seen",
 * as in the harness, but tested with ! so that a pointer may be seen too.
 */
#define __kvp_expect_truth(want, seen, seen_text)			\
	__kvp_on_failure(({						\
		__typeof__(seen) __kvp_s = (seen);			\
		int __kvp_ok = !__kvp_s == !(want);			\
									\
		if (!__kvp_ok) {					\
			fprintf(TH_LOG_STREAM, "# %s:%d: Expected 0 %s ", \
				__FILE__, __LINE__, (want) ? "!=" : "=="); \
			__kvp_side(__kvp_s, seen_text);			\
		}							\
		!__kvp_ok && __kvp_failed();				\
	}))

#define EXPECT_EQ(expected, seen)					\
	__kvp_expect(expected, #expected, ==, seen, #seen)
#define EXPECT_NE(expected, seen)					\
	__kvp_expect(expected, #expected, !=, seen, #seen)
#define EXPECT_LT(expected, seen)					\
	__kvp_expect(expected, #expected, <, seen, #seen)
#define EXPECT_LE(expected, seen)					\
	__kvp_expect(expected, #expected, <=, seen, #seen)
#define EXPECT_GT(expected, seen)					\
	__kvp_expect(expected, #expected, >, seen, #seen)
#define EXPECT_GE(expected, seen)					\
	__kvp_expect(expected, #expected, >=, seen, #seen)
#define EXPECT_TRUE(seen)	__kvp_expect_truth(1, seen, #seen)
#define EXPECT_FALSE(seen)	__kvp_expect_truth(0, seen, #seen)

/*
 * For one-program tests (userlib/test): the end of main(), 1 if an
 * expectation failed (with a "FAIL name" line), else "PASS name" and 0.
 */
static inline int kvp_expect_done(const char *name)
{
	if (kvp_expect_failures) {
		printf("FAIL %s: %d failed\n", name, kvp_expect_failures);
		return 1;
	}
	printf("PASS %s\n", name);
	return 0;
}

/*
 * The test's own setup failed (a file it cannot write, a socket it cannot
 * make): not a finding about the code under test, so exit 2.
 */
static inline __attribute__((noreturn)) void kvp_expect_die(const char *what)
{
	perror(what);
	exit(2);
}

#endif /* KVP_EXPECT_H */
