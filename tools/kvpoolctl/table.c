// SPDX-License-Identifier: GPL-2.0-only
/*
 * Text tables, laid out by libsmartcols, fitted to the terminal: what
 * output.c's put_table() writes when neither CSV nor JSON is asked for.
 *
 * Copyright (C) 2026 The kvpool authors
 */
#define _GNU_SOURCE		/* asprintf() */
#include <ctype.h>
#include <errno.h>
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>
#include <sys/ioctl.h>

#include <libsmartcols/libsmartcols.h>

#include "kvpoolctl.h"

/*
 * ---- text tables: libsmartcols ----
 *
 * Text goes through libsmartcols, util-linux's table library (lsblk's,
 * findmnt's): it writes a control character, a byte that is no
 * character of the locale, and a literal "\x" as \xNN, so nothing a
 * label, a cgroup name or a command name holds reaches the terminal as
 * a control sequence or splits a row; and it measures widths in display
 * cells, so wide characters keep the columns aligned. The widths are
 * decided here first, on the text as libsmartcols will write it: on a
 * terminal, name-like columns are cut with an ellipsis, and a table
 * wider than the terminal even so is folded into several, each
 * repeating the first column, so no figure is cut off.
 */

/* The text of one character as libsmartcols writes it: its bytes, cells. */
struct tchar {
	size_t off, len, cells;
};

/*
 * Split @s into characters as mbs_safe_encode() (util-linux's
 * lib/mbsalign.c, which libsmartcols writes cells with) does: a control
 * character, a backslash before an x, a byte that starts no character
 * of the locale and a character that is not printable are \xNN, four
 * cells a byte. Returns how many, their array in *@out (malloc()ed), or
 * -1 if out of memory.
 */
static ssize_t text_chars(const char *s, struct tchar **out)
{
	size_t len = strlen(s), i = 0, nr = 0;
	struct tchar *v;
	mbstate_t st;

	v = calloc(len + 1, sizeof(*v));
	if (!v)
		return -1;
	memset(&st, 0, sizeof(st));
	while (i < len) {
		struct tchar *c = &v[nr++];
		wchar_t wc;
		size_t n;

		c->off = i;
		c->len = 1;
		c->cells = 4;
		if ((s[i] == '\\' && s[i + 1] == 'x') ||
		    iscntrl((unsigned char)s[i])) {
			i++;
			continue;
		}
		n = mbrtowc(&wc, s + i, len - i, &st);
		if (n == (size_t)-1 || n == (size_t)-2 || !n) {
			memset(&st, 0, sizeof(st));
			if (isprint((unsigned char)s[i]))
				c->cells = 1;
			i++;
			continue;
		}
		c->len = n;
		if (iswprint(wc))
			c->cells = wcwidth(wc) > 0 ? (size_t)wcwidth(wc) : 0;
		else
			c->cells = 4 * n;
		i += n;
	}
	*out = v;
	return (ssize_t)nr;
}

/* The cells @s takes as libsmartcols writes it. */
size_t text_cells(const char *s)
{
	struct tchar *v;
	ssize_t nr, i;
	size_t w = 0;

	nr = text_chars(s, &v);
	if (nr < 0)
		return strlen(s) * 4;
	for (i = 0; i < nr; i++)
		w += v[i].cells;
	free(v);
	return w;
}

/*
 * How many bytes of @s, at most @len, fit in @cells cells, as a
 * terminal shows text that libsmartcols wrote (no control character
 * left in it): whole characters only.
 */
size_t text_fit(const char *s, size_t len, size_t cells)
{
	mbstate_t st;
	size_t i = 0, w = 0;

	memset(&st, 0, sizeof(st));
	while (i < len) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s + i, len - i, &st);
		int cw = 1;

		if (n == (size_t)-1 || n == (size_t)-2 || !n) {
			memset(&st, 0, sizeof(st));
			n = 1;
		} else if (wcwidth(wc) >= 0) {
			cw = wcwidth(wc);
		}
		if (w + (size_t)cw > cells)
			break;
		w += (size_t)cw;
		i += n;
	}
	return i;
}

/* The ellipsis: U+2026 where the locale has it, else three dots. */
static const char *ellipsis(size_t *cells)
{
	static const char *e;

	if (!e)
		e = !strcmp(nl_langinfo(CODESET), "UTF-8") ? "\u2026" : "...";
	*cells = text_cells(e);
	return e;
}

/*
 * @s cut to at most @width cells with an ellipsis (text_cells()'s
 * cells): @percent of the room before it, the rest after it. A
 * malloc()ed string, or NULL if out of memory.
 */
static char *ellipsized(const char *s, size_t width, int percent)
{
	size_t ecells, room, head = 0, tail = 0, hw = 0, tw = 0;
	const char *e = ellipsis(&ecells);
	struct tchar *v;
	ssize_t nr;
	char *out;

	nr = text_chars(s, &v);
	if (nr < 0)
		return NULL;
	room = width > ecells ? width - ecells : 0;
	/* The head first, then what is left of the room after it. */
	while (head < (size_t)nr && hw + v[head].cells <= room * percent / 100)
		hw += v[head++].cells;
	while (tail < (size_t)nr - head &&
	       tw + v[nr - 1 - tail].cells <= room - hw)
		tw += v[nr - 1 - tail++].cells;
	if (asprintf(&out, "%.*s%s%s", (int)(head ? v[head - 1].off +
					      v[head - 1].len : 0), s,
		     width >= ecells ? e : "",
		     tail ? s + v[nr - tail].off : "") < 0)
		out = NULL;
	free(v);
	return out;
}

/* The cells a table on @f may take: the terminal's, or 0 (no limit). */
static size_t table_width(FILE *f, const struct outfmt *o)
{
	struct winsize ws;
	const char *env;

	if (o->width > 0)
		return (size_t)o->width;
	if (o->raw || !isatty(fileno(f)))
		return 0;
	if (!ioctl(fileno(f), TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	env = getenv("COLUMNS");
	if (env && atoi(env) > 0)
		return (size_t)atoi(env);
	return 80;
}

#define TABLE_GAP	2	/* blanks between two columns */
#define TABLE_NAME_MIN	8	/* the least a name is cut to */
#define TABLE_NAME_FOLD	16	/* a table folds before a name gets less */

/*
 * The heading line over the groups of @cols' columns @sel (@nsel of
 * them, @width cells each): "---- pages ----" over each run of one
 * group, blanks elsewhere, none at the end. Nothing if no column has a
 * group.
 */
static void put_groups(FILE *f, const struct colspec *cols, const int *sel,
		       const size_t *width, size_t nsel, int indent)
{
	size_t i, j, k, pad = (size_t)indent;

	for (i = 0; i < nsel; i++)
		if (cols[sel[i]].group)
			break;
	if (i == nsel)
		return;
	for (i = 0; i < nsel; i = j) {
		const char *g = cols[sel[i]].group;
		size_t span = width[i], label, left;

		for (j = i + 1; j < nsel && g && cols[sel[j]].group &&
		     !strcmp(g, cols[sel[j]].group); j++)
			span += TABLE_GAP + width[j];
		if (i)
			pad += TABLE_GAP;
		if (!g) {
			pad += span;
			continue;
		}
		label = strlen(g) + 2;
		if (label > span) {
			/* A group cut to one narrow column: its name, cut. */
			fprintf(f, "%*s%.*s", (int)pad, "", (int)span, g);
			pad = 0;
			continue;
		}
		left = (span - label) / 2;
		fprintf(f, "%*s", (int)pad, "");
		for (k = 0; k < left; k++)
			fputc('-', f);
		fprintf(f, " %s ", g);
		for (k = left + label; k < span; k++)
			fputc('-', f);
		pad = 0;
	}
	fputc('\n', f);
}

/*
 * One table of @cols' columns @sel (@nsel), @text of each row's cells
 * (@nrows rows of @stride, names already cut to fit), through
 * libsmartcols into @f, @indent blanks in, the group line over it.
 */
static int put_block(FILE *f, const struct colspec *cols, const int *sel,
		     size_t nsel, char **text, size_t nrows, size_t stride,
		     const struct outfmt *o, int indent)
{
	struct libscols_table *tb;
	size_t i, j, width[64];
	char *out = NULL, *l, *nl;
	int ret = -ENOMEM;

	/*
	 * No rows: libsmartcols writes nothing, but the headings say what
	 * the table would have shown.
	 */
	if (!nrows) {
		if (o->noheadings)
			return 0;
		fprintf(f, "%*s", o->raw ? 0 : indent, "");
		for (j = 0; j < nsel; j++)
			fprintf(f, "%s%s", !j ? "" : o->raw ? " " : "  ",
				cols[sel[j]].head);
		fputc('\n', f);
		return 0;
	}
	tb = scols_new_table();
	if (!tb)
		return -ENOMEM;
	scols_table_enable_raw(tb, o->raw);
	scols_table_enable_noheadings(tb, o->noheadings);
	/* The widths are decided already: libsmartcols cuts nothing. */
	scols_table_set_termforce(tb, SCOLS_TERMFORCE_NEVER);
	if (!o->raw && scols_table_set_column_separator(tb, "  "))
		goto out;
	for (j = 0; j < nsel; j++)
		if (!scols_table_new_column(tb, cols[sel[j]].head, 0,
					    cols[sel[j]].left ? 0 :
					    SCOLS_FL_RIGHT))
			goto out;
	for (i = 0; i < nrows; i++) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);

		if (!ln)
			goto out;
		for (j = 0; j < nsel; j++)
			if (scols_line_set_data(ln, j, text[i * stride + j]))
				goto out;
	}
	if (scols_print_table_to_string(tb, &out) || !out)
		goto out;
	if (!o->raw && !o->noheadings) {
		for (j = 0; j < nsel; j++)
			width[j] = scols_column_get_width(
					scols_table_get_column(tb, j));
		put_groups(f, cols, sel, width, nsel, indent);
	}
	/* Each line @indent in, and no blanks at its end. */
	for (l = out; *l; l = nl + 1) {
		size_t len;

		nl = strchr(l, '\n');
		if (!nl)
			nl = l + strlen(l);
		for (len = (size_t)(nl - l); len && l[len - 1] == ' '; len--)
			;
		fprintf(f, "%*s%.*s\n", indent, "", (int)len, l);
		if (!*nl)
			break;
	}
	ret = 0;
out:
	free(out);
	scols_unref_table(tb);
	return ret;
}

/* Cell @c as text into @buf; "-" for nothing or no limit. */
const char *cell_text(const struct cell *c, char *buf, size_t len)
{
	switch (c->kind) {
	case CK_STR:
		return *c->str ? c->str : "-";
	case CK_LIMIT:
		if (!c->num)
			return "-";
		/* fall through */
	case CK_NUM:
		snprintf(buf, len, "%llu", c->num);
		return buf;
	case CK_BOOL:
		return c->num ? "yes" : "no";
	}
	return "-";
}

/*
 * @o's columns of @nrows rows of @ncols cells as text: aligned, name-like
 * columns cut to what the terminal leaves them, and folded into tables
 * of the key columns (@o->keys, else the first) and as many more as fit
 * where even that is too wide. Returns 0 or -ENOMEM.
 */
int put_text(FILE *f, const struct colspec *cols, size_t ncols,
	     const struct cell *cells, size_t nrows,
	     const struct outfmt *o, int indent)
{
	size_t n = o->nsel, i, j, k, room, used, members, key_cells;
	size_t nat[64], min[64], want[64], w[64], idx[64];
	size_t term = table_width(f, o);
	size_t keys = o->keys > 0 ? (size_t)o->keys : 1;
	int block[64], csel[64], nb = 0, b;
	char **text, **bt = NULL, buf[32];
	int ret = -ENOMEM;

	text = calloc(nrows * n + 1, sizeof(*text));
	bt = calloc(nrows * n + 1, sizeof(*bt));
	if (!text || !bt)
		goto out;
	for (i = 0; i < nrows; i++)
		for (j = 0; j < n; j++) {
			const struct cell *c = &cells[i * ncols + o->sel[j]];

			text[i * n + j] = strdup(cell_text(c, buf, sizeof(buf)));
			if (!text[i * n + j])
				goto out;
		}
	if (o->raw) {
		ret = put_block(f, cols, o->sel, n, text, nrows, n, o, 0);
		goto out;
	}
	/* Each column's natural width, and the least a name may be cut to. */
	for (j = 0; j < n; j++) {
		const struct colspec *c = &cols[o->sel[j]];

		nat[j] = text_cells(c->head);
		for (i = 0; i < nrows; i++) {
			size_t cw = text_cells(text[i * n + j]);

			if (cw > nat[j])
				nat[j] = cw;
		}
		/*
		 * A name is cut to no less than 8 cells (or its heading),
		 * and a table is folded before its names get less than 16.
		 */
		min[j] = want[j] = nat[j];
		if (c->ellipsize && term) {
			size_t head = strlen(c->head);

			min[j] = head > TABLE_NAME_MIN ? head : TABLE_NAME_MIN;
			want[j] = head > TABLE_NAME_FOLD ? head : TABLE_NAME_FOLD;
			if (min[j] > nat[j])
				min[j] = nat[j];
			if (want[j] > nat[j])
				want[j] = nat[j];
		}
	}
	/*
	 * Fold: the next column that does not fit starts a new table (of
	 * the key columns, @keys of them, and it), unless it would be that
	 * table's only other one.
	 */
	if (keys > n)
		keys = n;
	room = term > (size_t)indent ? term - (size_t)indent : 1;
	for (j = 0, used = 0; j < keys; j++)
		used += want[j] + (j ? TABLE_GAP : 0);
	key_cells = used;
	members = 0;
	for (j = keys; j < n; j++) {
		if (term && members && used + TABLE_GAP + want[j] > room) {
			nb++;
			used = key_cells;
			members = 0;
		}
		block[j] = nb;
		used += TABLE_GAP + want[j];
		members++;
	}
	for (b = 0; b <= nb; b++) {
		size_t nsel = 0, fixed = 0, extra;

		for (j = 0; j < n; j++)
			if (j < keys || block[j] == b)
				idx[nsel++] = j;
		for (k = 0; k < nsel; k++) {
			w[k] = want[idx[k]];
			fixed += w[k] + (k ? TABLE_GAP : 0);
		}
		/* Too wide even so: the names down to their least. */
		for (k = 0; k < nsel && fixed > room; k++) {
			size_t less = w[k] - min[idx[k]];

			if (less > fixed - room)
				less = fixed - room;
			w[k] -= less;
			fixed -= less;
		}
		/* What is left of the room widens the cut names again. */
		extra = room > fixed ? room - fixed : 0;
		for (k = 0; k < nsel; k++) {
			size_t more = nat[idx[k]] - w[k];

			if (more > extra)
				more = extra;
			w[k] += more;
			extra -= more;
		}
		for (k = 0; k < nsel; k++)
			csel[k] = o->sel[idx[k]];
		for (i = 0; i < nrows; i++) {
			for (k = 0; k < nsel; k++) {
				const char *t = text[i * n + idx[k]];
				int e = cols[csel[k]].ellipsize;
				char **d = &bt[i * nsel + k];

				*d = e && text_cells(t) > w[k] ?
				     ellipsized(t, w[k], e) : strdup(t);
				if (!*d)
					goto out;
			}
		}
		if (b)
			fputc('\n', f);
		ret = put_block(f, cols, csel, nsel, bt, nrows, nsel, o,
				indent);
		for (i = 0; i < nrows * nsel; i++) {
			free(bt[i]);
			bt[i] = NULL;
		}
		if (ret)
			goto out;
	}
	ret = 0;
out:
	for (i = 0; text && i < nrows * n; i++)
		free(text[i]);
	for (i = 0; bt && i < nrows * n; i++)
		free(bt[i]);
	free(text);
	free(bt);
	return ret;
}
