/* SPDX-License-Identifier: Apache-2.0 */
/* husk syscalls: prints the sentry's system call table (it lives in the sentry binary). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"

int cmd_syscalls(int argc, char **argv)
{
	char *sentry = runtime_find_helper("husk-sentry");

	if (!sentry) {
		fprintf(stderr, "husk: cannot find husk-sentry next to husk (set HUSK_SENTRY)\n");
		return 1;
	}
	execl(sentry, "husk-sentry", "--print-syscalls", (char *)NULL);
	fprintf(stderr, "husk: %s: %s\n", sentry, strerror(errno));
	free(sentry);
	return 1;
}
