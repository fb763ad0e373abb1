// SPDX-License-Identifier: GPL-2.0-only
/*
 * text_test: the other half of text_check.py. Reads byte strings, one a
 * line in hex, and writes each through text.c: with "json", one JSON
 * string a line; with "om", an OpenMetrics exposition with one sample a
 * string, its label v the string and i its line number.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <stdio.h>
#include <string.h>

#include "text.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int main(int argc, char **argv)
{
	char line[256], buf[128];
	unsigned long n = 0;
	int om;
	size_t i, len;

	if (argc != 2 || (strcmp(argv[1], "json") && strcmp(argv[1], "om"))) {
		fprintf(stderr, "usage: text_test json|om < HEX-LINES\n");
		return 2;
	}
	om = !strcmp(argv[1], "om");
	if (om)
		printf("# TYPE kvpool_text gauge\n");
	while (fgets(line, sizeof(line), stdin)) {
		len = strcspn(line, "\n");
		if (len % 2 || len / 2 >= sizeof(buf)) {
			fprintf(stderr, "text_test: bad line %lu\n", n);
			return 2;
		}
		for (i = 0; i < len / 2; i++) {
			int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);

			if (hi < 0 || lo < 0 || !(hi | lo)) {
				fprintf(stderr, "text_test: bad byte in line %lu\n",
					n);
				return 2;
			}
			buf[i] = (char)(hi << 4 | lo);
		}
		buf[len / 2] = '\0';
		if (om) {
			printf("kvpool_text{i=\"%lu\",v=", n);
			om_put_label_value(stdout, buf);
			printf("} 1\n");
		} else {
			json_put_string(stdout, buf);
			putchar('\n');
		}
		n++;
	}
	if (om)
		printf("# EOF\n");
	return ferror(stdout) ? 1 : 0;
}
