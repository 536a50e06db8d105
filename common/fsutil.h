/* SPDX-License-Identifier: Apache-2.0 */
/* File-system helpers shared by the runtime's commands. */
#ifndef HUSK_COMMON_FSUTIL_H
#define HUSK_COMMON_FSUTIL_H

#include <sys/types.h>

/* mkdir -p: makes PATH and its missing parents with MODE. Returns 0 or -errno. */
int husk_mkdir_p(const char *path, mode_t mode);

#endif
