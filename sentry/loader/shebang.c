/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_parse_shebang(): the `#!` line, parsed as Linux's fs/binfmt_script.c parses it.
 *
 * Linux looks only at the first BINPRM_BUF_SIZE (256) bytes, zero-padded when the file is
 * shorter. It refuses a truncated interpreter path: either a newline ends the line within the
 * buffer, or a space, tab or NUL must follow the interpreter name. A truncated argument is fine.
 */
#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "sentry/loader/loader.h"

static bool spacetab(char c)
{
	return c == ' ' || c == '\t';
}

/* First character of [first, last] that is not a space or tab, or NULL. */
static const char *next_non_spacetab(const char *first, const char *last)
{
	for (; first <= last; first++)
		if (!spacetab(*first))
			return first;
	return NULL;
}

/* First character of [first, last] that is a space, tab or NUL, or NULL. */
static const char *next_terminator(const char *first, const char *last)
{
	for (; first <= last; first++)
		if (spacetab(*first) || *first == '\0')
			return first;
	return NULL;
}

/* Like Linux's strnchr: stops at the first NUL as well. */
static const char *strnchr_nul(const char *s, size_t count, char c)
{
	for (; count-- && *s != '\0'; s++)
		if (*s == c)
			return s;
	return NULL;
}

/* Copies the string at [s, e), cut at an embedded NUL, into dst of size dsz. */
static int copy_piece(const char *s, const char *e, char *dst, size_t dsz)
{
	size_t n = strnlen(s, (size_t)(e - s));

	if (n >= dsz)
		return -ENAMETOOLONG;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int loader_parse_shebang(const char *buf, size_t len, char *interp, size_t isz, char *arg,
			 size_t asz, bool *has_arg)
{
	char line[LOADER_SHEBANG_MAX];
	const char *buf_end, *i_end, *i_name, *i_sep, *i_arg = NULL;
	int ret;

	*has_arg = false;
	if (len < 2 || buf[0] != '#' || buf[1] != '!')
		return -ENOEXEC;
	memset(line, 0, sizeof(line));
	memcpy(line, buf, MIN(len, sizeof(line)));

	buf_end = line + sizeof(line) - 1;
	i_end = strnchr_nul(line, sizeof(line), '\n');
	if (!i_end) {
		i_end = next_non_spacetab(line + 2, buf_end);
		if (!i_end)
			return -ENOEXEC; /* the whole buffer is spaces and tabs */
		/* Without a terminator after the name, the name may be cut: refuse. */
		if (!next_terminator(i_end, buf_end))
			return -ENOEXEC;
		i_end = buf_end;
	}
	/* Trailing spaces and tabs do not belong to the argument. */
	while (i_end > line + 2 && spacetab(i_end[-1]))
		i_end--;

	i_name = next_non_spacetab(line + 2, i_end);
	if (!i_name || i_name == i_end)
		return -ENOEXEC; /* no interpreter name */

	i_sep = next_terminator(i_name, i_end);
	if (i_sep && *i_sep != '\0')
		i_arg = next_non_spacetab(i_sep, i_end);
	/* Linux writes a NUL at i_end: the argument never includes it. */
	if (i_arg == i_end)
		i_arg = NULL;

	/* A NUL right after `#!` is a name to Linux (which then fails with ENOENT): refuse it. */
	if (*i_name == '\0')
		return -ENOEXEC;
	ret = copy_piece(i_name, i_sep ? i_sep : i_end, interp, isz);
	if (ret)
		return ret;
	if (i_arg) {
		ret = copy_piece(i_arg, i_end, arg, asz);
		if (ret)
			return ret;
		*has_arg = true;
	}
	return 0;
}
