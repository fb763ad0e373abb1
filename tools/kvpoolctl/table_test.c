// SPDX-License-Identifier: GPL-2.0-only
/*
 * table_test: table.c's text tables against hostile names, without the
 * module. A tenant table whose cgroups and labels hold an escape
 * sequence, a newline, a C1 control, 0xff, wide characters and a 4 KiB
 * path is written at 80 and 60 cells and in full (a pipe), in the
 * locale the environment gives (make check runs it in C.UTF-8 and in
 * C), and the text checked as a terminal would show it:
 *   - no control character but the newlines, nor a C1 one, reaches it,
 *     and it is valid UTF-8 (C: plain ASCII);
 *   - every line fits the width, in display cells;
 *   - no row is split: each table has its heading and one line a row;
 *   - every figure of every row is there, whatever was cut;
 *   - the long path was cut, keeping its end (".service");
 *   - group headings ("pages") fit over a folded table's columns;
 *   - a table without rows still has its heading line.
 * Exits 0 if all hold; else says which did not, and the text.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE		/* open_memstream() */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "text.h"
#include "kvpoolctl.h"

#define NR_ROWS	8

static const char *const labels[NR_ROWS] = {
	"plain", "\033[7mREV\033[0m", "two\nlines", "ff\xff\xfe",
	"\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97", "c1\xc2\x9b" "31m",
	"tab\there", "\\x41 literal",
};

static int failed;

static void fail(const char *what, const char *text)
{
	printf("FAIL table_test: %s:\n%s\n", what, text);
	failed = 1;
}

/* Display cells of the line @l (@len bytes), -1 if not valid text. */
static int line_cells(const char *l, size_t len)
{
	mbstate_t st;
	size_t i = 0;
	int w = 0;

	memset(&st, 0, sizeof(st));
	while (i < len) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, l + i, len - i, &st);

		if (n == (size_t)-1 || n == (size_t)-2 || !n ||
		    wcwidth(wc) < 0)
			return -1;
		w += wcwidth(wc);
		i += n;
	}
	return w;
}

static void check(const char *text, int width, size_t nr_lines_min)
{
	const char *l, *nl;
	size_t lines = 0, i;
	char want[32];

	for (i = 0; text[i]; i++) {
		unsigned char c = (unsigned char)text[i];

		if ((c < 0x20 && c != '\n') || c == 0x7f ||
		    (c == 0xc2 && (unsigned char)text[i + 1] >= 0x80 &&
		     (unsigned char)text[i + 1] <= 0x9f))
			return fail("a control character reached the text", text);
	}
	for (l = text; *l; l = nl + 1) {
		int w;

		nl = strchr(l, '\n');
		if (!nl)
			return fail("no newline at the end", text);
		w = line_cells(l, (size_t)(nl - l));
		if (w < 0)
			return fail("a line is no valid text in this locale", text);
		if (width && w > width) {
			snprintf(want, sizeof(want), "a line of %d cells", w);
			return fail(want, text);
		}
		lines++;
	}
	if (lines < nr_lines_min)
		return fail("too few lines", text);
	/* Every row's figures: pages 1000 + i, max 2000 + i, ask 3000 + i. */
	for (i = 0; i < NR_ROWS; i++) {
		snprintf(want, sizeof(want), " %zu", 1000 + i);
		if (!strstr(text, want))
			return fail("a row's pages are missing", text);
		snprintf(want, sizeof(want), " %zu", 3000 + i);
		if (!strstr(text, want))
			return fail("a row's ask is missing", text);
	}
}

int main(void)
{
	static char path[4200];
	struct tenant_row rows[NR_ROWS] = { 0 };
	struct tenant_scratch scr[NR_ROWS];
	struct cell cells[NR_ROWS * TC_NR];
	struct outfmt o = { 0 };
	size_t i, len, heads;
	char *buf, *p;
	FILE *f;
	int width;

	setlocale(LC_CTYPE, "");
	/* 4 KiB: /deep/deep/.../leaf.service */
	for (p = path; p < path + 4096; p += 5)
		memcpy(p, "/deep", 5);
	strcpy(p, "/leaf.service");
	for (i = 0; i < NR_ROWS; i++) {
		struct kvpool_tenant_info *t = &rows[i].t;

		t->tenant_id = (unsigned int)i + 1;
		t->uid = 1000;
		t->pages = 1000 + i;
		t->max_pages = 2000 + i;
		t->ask_pages = 3000 + i;
		snprintf(t->label, sizeof(t->label), "%s", labels[i]);
		rows[i].cgroup = i == 2 ? path : labels[(i + 1) % NR_ROWS];
	}
	for (width = 80; width >= 0; width -= width == 80 ? 20 : 60) {
		o.width = width;
		o.cols = NULL;
		if (select_columns(&o, tenant_cols, TC_NR))
			return 1;
		for (i = 0; i < NR_ROWS; i++)
			tenant_cells(&rows[i], &cells[i * TC_NR], 1, false,
				     &scr[i]);
		f = open_memstream(&buf, &len);
		if (!f)
			return 1;
		put_table_to(f, tenant_cols, TC_NR, cells, NR_ROWS, &o, 0);
		fclose(f);
		/* A heading and NR_ROWS lines for each table of the fold. */
		for (heads = 0, p = buf; (p = strstr(p, "TENANT")); p++)
			heads++;
		check(buf, width, heads * (NR_ROWS + 1));
		if (!heads)
			fail("no heading", buf);
		if (width && !strstr(buf, ".service"))
			fail("the long path lost its last part", buf);
		if (width && strstr(buf, "/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/deep/"))
			fail("the long path was not cut", buf);
		if (!failed)
			printf("PASS table_test: %d cells (0: a pipe), %zu table(s)\n",
			       width, heads);
		free(buf);
	}
	/* No rows: the heading line still says what would be shown. */
	o.width = 0;
	o.cols = NULL;
	if (select_columns(&o, tenant_cols, TC_NR))
		return 1;
	f = open_memstream(&buf, &len);
	if (!f)
		return 1;
	put_table_to(f, tenant_cols, TC_NR, cells, 0, &o, 2);
	fclose(f);
	if (strncmp(buf, "  TENANT  UID  CGROUP", 21) || strchr(buf, '\n')[1])
		fail("no rows: not the heading line alone", buf);
	free(buf);

	/*
	 * Groups over folded figures: 12 columns under "pages" and "rows"
	 * at 40 cells, each heading over its own columns, none too wide.
	 */
	{
		static const char *const heads[12] = {
			"POOL", "TOTAL", "FREE", "ROW", "SLOT", "EVICT",
			"PINNED", "EXPORT", "TOTAL", "FREE", "HELD", "SLOT",
		};
		struct colspec gcols[12];
		struct cell gcells[12];

		for (i = 0; i < 12; i++) {
			gcols[i] = (struct colspec){ heads[i], heads[i], false,
						     true, false, 0,
						     !i ? NULL : i < 8 ?
						     "pages" : "rows" };
			gcells[i] = (struct cell){ CK_NUM, 4000000000ULL + i,
						   NULL };
			o.sel[i] = (int)i;
		}
		o.nsel = 12;
		o.width = 40;
		f = open_memstream(&buf, &len);
		if (!f)
			return 1;
		put_table_to(f, gcols, 12, gcells, 1, &o, 0);
		fclose(f);
		for (p = buf; *p; p = strchr(p, '\n') + 1) {
			size_t n = strcspn(p, "\n");

			if (line_cells(p, n) > 40)
				fail("a group line past 40 cells", buf);
			if (!p[n])
				break;
		}
		if (!strstr(buf, " pages ") || !strstr(buf, " rows ") ||
		    !strstr(buf, "4000000011"))
			fail("no group heading, or a figure lost", buf);
		if (!failed)
			printf("PASS table_test: groups over a fold at 40 cells\n");
		free(buf);
	}
	return failed;
}
