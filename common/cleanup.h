/* SPDX-License-Identifier: Apache-2.0 */
/* Scope-based cleanup (GCC/clang cleanup attribute) and ownership transfer. */
#ifndef HUSK_COMMON_CLEANUP_H
#define HUSK_COMMON_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}

static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void cleanup_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_(fn) __attribute__((cleanup(fn)))
#define _cleanup_free_ _cleanup_(cleanup_freep)
#define _cleanup_close_ _cleanup_(cleanup_closep)
#define _cleanup_fclose_ _cleanup_(cleanup_fclosep)

/* Returns *pp and sets it to NULL, moving ownership out of a cleanup variable. */
#define steal_pointer(pp)                       \
	({                                      \
		__typeof__(*(pp)) _tmp = *(pp); \
		*(pp) = NULL;                   \
		_tmp;                           \
	})

/* Returns *fdp and sets it to -1. */
static inline int steal_fd(int *fdp)
{
	int fd = *fdp;
	*fdp = -1;
	return fd;
}

#endif
