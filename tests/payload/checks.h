/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checks of the checkpoint helpers (ckpt_helper.c, ipc_helper.c), header-only: each is one
 * static binary. A helper sets `out` (where results go) and calls check() per property; the lines
 * are "ok NAME" or "FAIL NAME: what was seen (errno N)", and `passed`/`failed` count them.
 */
#ifndef HUSK_TESTS_PAYLOAD_CHECKS_H
#define HUSK_TESTS_PAYLOAD_CHECKS_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *out;
static int passed, failed;

static void __attribute__((format(printf, 3, 4)))
check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		fprintf(out, "ok %s\n", name);
		passed++;
		return;
	}
	fprintf(out, "FAIL %s: ", name);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fprintf(out, " (errno %d)\n", errno);
	failed++;
}

/* A set-up step failed: the helper cannot go on (exit status 2). */
static void die(const char *what)
{
	perror(what);
	exit(2);
}

#endif
