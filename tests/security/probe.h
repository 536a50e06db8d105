/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the security probes (escape.c, exhaust.c) share: each check prints "ok - WHAT" or
 * "not ok - WHAT" and is counted in passed or failed; main prints "N passed, M failed".
 */
#ifndef HUSK_TESTS_SECURITY_PROBE_H
#define HUSK_TESTS_SECURITY_PROBE_H

#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

static void __attribute__((format(printf, 2, 3))) result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

#endif
