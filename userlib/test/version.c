// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * kvpool_version() is the top-level VERSION file, read here at run time
 * (not through the Makefile variable the library was built with), and has
 * the MAJOR.MINOR.PATCH form the library's real name uses. Built twice:
 * against libkvpool.a and against libkvpool.so.1, where the symbol must
 * be exported.
 */
#include <stdio.h>
#include <string.h>

#include "kvpool.h"
#include "kvp_expect.h"

#ifndef VERSION_FILE
#error "build with -DVERSION_FILE=... (the top-level VERSION file)"
#endif

int main(int argc, char **argv)
{
	const char *v = kvpool_version(), *name;
	unsigned int major, minor, patch;
	char want[64], tail;
	size_t len;
	FILE *f;

	(void)argc;
	f = fopen(VERSION_FILE, "r");
	if (!f) {
		perror(VERSION_FILE);
		return 2;
	}
	if (!fgets(want, sizeof(want), f)) {
		fprintf(stderr, "%s: empty\n", VERSION_FILE);
		fclose(f);
		return 2;
	}
	fclose(f);
	/* The file is the version and one newline. */
	len = strlen(want);
	EXPECT_TRUE(len && want[len - 1] == '\n')
		TH_LOG("VERSION does not end in a newline");
	if (len && want[len - 1] == '\n')
		want[--len] = '\0';

	EXPECT_TRUE(v && !strcmp(v, want))
		TH_LOG("kvpool_version() is '%s', VERSION is '%s'",
		       v ? v : "(null)", want);
	EXPECT_EQ(v, kvpool_version())
		TH_LOG("kvpool_version() is not one static string");
	EXPECT_TRUE(v && sscanf(v, "%u.%u.%u%c", &major, &minor, &patch,
				&tail) == 3)
		TH_LOG("'%s' is not MAJOR.MINOR.PATCH", v ? v : "(null)");

	name = argv[0][0] == '.' ? argv[0] + 2 : argv[0];
	if (kvp_expect_failures)
		return kvp_expect_done(name);
	printf("PASS %s: %s\n", name, v);
	return 0;
}
