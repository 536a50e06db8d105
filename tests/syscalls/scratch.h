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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

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

/* Further scratch directories under other bases (scratch_extra), removed at exit. */
static char scratch_extras[4][64];
static int scratch_nextra;

static inline void scratch_extra_remove(void)
{
	for (int i = 0; i < scratch_nextra; i++)
		nftw(scratch_extras[i], scratch_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A scratch directory for prog under base (another filesystem than /tmp's: /var/tmp, /dev/shm,
 * a volume), removed at exit. NULL when base is not writable, or after four.
 */
static inline const char *scratch_extra(const char *base, const char *prog)
{
	char *d;

	if (scratch_nextra == 4)
		return NULL;
	d = scratch_extras[scratch_nextra];
	snprintf(d, sizeof(scratch_extras[0]), "%s/husk-%s-XXXXXX", base, prog);
	if (!mkdtemp(d))
		return NULL;
	if (scratch_nextra++ == 0)
		atexit(scratch_extra_remove);
	return d;
}

/*
 * Runs suite in a scratch directory for prog under base; a base that cannot be used is a
 * failure when required (in husk, where /var/tmp and /dev/shm always are), else a skip.
 */
static inline void scratch_suite_under(const char *base, const char *prog,
				       void (*suite)(const char *), bool required)
{
	const char *d = scratch_extra(base, prog);

	if (d)
		suite(d);
	else if (required)
		CHECK(0, "no directory can be made in %s", base);
	else
		printf("skip: no directory can be made in %s\n", base);
}

#endif
