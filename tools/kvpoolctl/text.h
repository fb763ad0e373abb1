/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kvpoolctl's text writers: JSON strings and OpenMetrics label values
 * from bytes the kernel or the system handed over (tenant labels, cgroup
 * paths), which need not be UTF-8.
 *
 * Copyright (C) 2026 The kvpool authors
 *
 * Both write a well-formed UTF-8 sequence (RFC 3629: no overlong form, no
 * surrogate, nothing past U+10FFFF) as it is, and every byte that does
 * not start one as U+FFFD, one a byte. tools/kvpoolctl/text_test.c checks
 * both against Python's json module and prometheus_client's parser.
 */
#ifndef KVPOOLCTL_TEXT_H
#define KVPOOLCTL_TEXT_H

#include <stdio.h>

/*
 * The length of the well-formed UTF-8 sequence at @p (1..4), or 0 if the
 * byte at @p starts none. @p is NUL-terminated; a NUL is no part of one.
 */
int utf8_seq_len(const unsigned char *p);

/* @s as a JSON string, quoted; a control character as \u00XX. */
void json_put_string(FILE *f, const char *s);

/*
 * @s as an OpenMetrics label value, quoted, with backslash, double quote
 * and newline escaped as the format asks.
 */
void om_put_label_value(FILE *f, const char *s);

/*
 * A malloc()ed copy of @s, well-formed UTF-8 as the writers above make
 * it (for CSV and text); NULL if out of memory.
 */
char *utf8_sanitized(const char *s);

#endif
