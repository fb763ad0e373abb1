/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The one assertion vocabulary of libkvpool's unit tests.
 *
 * CHECK() is an expectation, as the kselftest harness's EXPECT_*: a false
 * condition is reported with its file, line and message, counted, and
 * the test goes on, so that one run shows every failure. A test exits 1
 * if any CHECK() failed and prints one "PASS name" line if none did.
 * die() is for the test's own setup (a file it cannot write, a socket it
 * cannot make): not a finding about the library, so exit 2.
 */
#ifndef KVP_TEST_CHECK_H
#define KVP_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int check_failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			check_failures++;				\
		}							\
	} while (0)

/* The end of main(): 1 if a CHECK() failed, else "PASS @name" and 0. */
static inline int check_done(const char *name)
{
	if (check_failures)
		return 1;
	printf("PASS %s\n", name);
	return 0;
}

static inline __attribute__((noreturn)) void die(const char *what)
{
	perror(what);
	exit(2);
}

#endif /* KVP_TEST_CHECK_H */
