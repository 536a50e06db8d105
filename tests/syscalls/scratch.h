/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A scratch directory for the filesystem conformance programs: made under /tmp (on the
 * overlay's upper layer in husk, on the host's /tmp natively) and removed with everything in it.
 */
#ifndef HUSK_TESTS_SYSCALLS_SCRATCH_H
#define HUSK_TESTS_SYSCALLS_SCRATCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char scratch[64];

static int scratch_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path); /* best effort: go on with the rest of the tree */
	return 0;
}

/* Removes the scratch directory and everything below it. */
static void scratch_remove(void)
{
	if (scratch[0])
		nftw(scratch, scratch_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes the scratch directory (mode 0755), chdir()s into it; exits with status 2 on failure. */
static void scratch_make(const char *prog)
{
	snprintf(scratch, sizeof(scratch), "/tmp/husk-%s-XXXXXX", prog);
	if (!mkdtemp(scratch) || chmod(scratch, 0755) < 0 || chdir(scratch) < 0) {
		perror("scratch directory");
		exit(2);
	}
	atexit(scratch_remove);
}

#endif
