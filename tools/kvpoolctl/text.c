// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvpoolctl's text writers; see text.h.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#include <stdlib.h>
#include <string.h>

#include "text.h"

static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Unicode's table 3-7 of well-formed byte sequences, row by row. */
int utf8_seq_len(const unsigned char *p)
{
	unsigned char c = p[0];

	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf)
		return is_cont(p[1]) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		/* E0: no overlong form; ED: no surrogate. */
		if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))
			return 0;
		return is_cont(p[1]) && is_cont(p[2]) ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		/* F0: no overlong form; F4: nothing past U+10FFFF. */
		if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
			return 0;
		return is_cont(p[1]) && is_cont(p[2]) && is_cont(p[3]) ?
		       4 : 0;
	}
	/* 80..C1 (a continuation byte, an overlong lead), F5..FF. */
	return 0;
}

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
static const char replacement[] = "\xef\xbf\xbd";

/*
 * Write @s in double quotes, its ASCII bytes through @ascii (which writes
 * what escaping the format asks), the rest as well-formed UTF-8.
 */
static void put_quoted(FILE *f, const char *s,
		       void (*ascii)(FILE *f, unsigned char c))
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	fputc('"', f);
	while (*p) {
		n = utf8_seq_len(p);
		if (n == 1)
			ascii(f, *p);
		else if (n)
			fwrite(p, 1, (size_t)n, f);
		else
			fputs(replacement, f);
		p += n ? n : 1;
	}
	fputc('"', f);
}

/* JSON escapes the quote, the backslash and the control characters. */
static void json_ascii(FILE *f, unsigned char c)
{
	if (c == '"' || c == '\\')
		fprintf(f, "\\%c", c);
	else if (c < 0x20 || c == 0x7f)
		fprintf(f, "\\u%04x", c);
	else
		fputc(c, f);
}

void json_put_string(FILE *f, const char *s)
{
	put_quoted(f, s, json_ascii);
}

/* OpenMetrics escapes exactly these three; other bytes go as they are. */
static void om_ascii(FILE *f, unsigned char c)
{
	if (c == '"' || c == '\\')
		fprintf(f, "\\%c", c);
	else if (c == '\n')
		fputs("\\n", f);
	else
		fputc(c, f);
}

void om_put_label_value(FILE *f, const char *s)
{
	put_quoted(f, s, om_ascii);
}

char *utf8_sanitized(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out, *o;
	int n;

	/* U+FFFD is 3 bytes: the most a byte can grow to. */
	out = malloc(3 * strlen(s) + 1);
	if (!out)
		return NULL;
	for (o = out; *p; p += n ? n : 1) {
		n = utf8_seq_len(p);
		if (n) {
			memcpy(o, p, (size_t)n);
			o += n;
		} else {
			memcpy(o, replacement, 3);
			o += 3;
		}
	}
	*o = '\0';
	return out;
}
