/* SPDX-License-Identifier: Apache-2.0 */
/* A test-only, in-process gofer client over a host directory (see fake_gofer.c). */
#ifndef HUSK_TESTS_UNIT_VFS_FAKE_GOFER_H
#define HUSK_TESTS_UNIT_VFS_FAKE_GOFER_H

struct gofer_client;

/* A client serving dir. */
struct gofer_client *fake_gofer_create(const char *dir);

extern int fake_gofer_walks; /* gofer_walk calls */
extern int fake_gofer_handles; /* handles handed out and not closed yet */
extern int fake_gofer_getdents_calls;
extern int fake_gofer_stats; /* gofer_stat calls */

#endif
