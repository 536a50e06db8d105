/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A test-only in-memory filesystem over the VFS's filesystem interface (sentry/vfs/fs.h):
 * directories, regular files with fixed contents and symlinks, built by the test, plus a
 * harness that makes a kernel, a thread group and a task around it (no mm, no platform).
 */
#ifndef HUSK_TESTS_UNIT_VFS_TESTFS_H
#define HUSK_TESTS_UNIT_VFS_TESTFS_H

#include <stdint.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/fs.h"

struct testfs_node {
	struct vfs_node base;
	uint32_t mode, uid, gid;
	uint64_t ino;
	const char *data; /* file contents or symlink target (static strings) */
	struct testfs_node **children; /* referenced */
	int nchildren;
};

struct testfs {
	struct vfs_fs base;
	uint64_t next_ino;
};

/* Counts of release calls of testfs nodes and of files opened from them, and fs releases. */
extern int testfs_nodes_released;
extern int testfs_files_released;
extern int testfs_fs_released;

/* A filesystem with an empty root directory (0755, root:root); one reference. */
struct testfs *testfs_create(void);
struct testfs_node *testfs_root(struct testfs *fs);
/* Adds an entry to dir; returns it (dir holds the reference). */
struct testfs_node *testfs_mkdir(struct testfs_node *dir, const char *name, uint32_t perm,
				 uint32_t uid, uint32_t gid);
struct testfs_node *testfs_mkfile(struct testfs_node *dir, const char *name, uint32_t perm,
				  const char *data);
struct testfs_node *testfs_symlink(struct testfs_node *dir, const char *name, const char *target);

/* A kernel whose root mount shows fs, and a task in it (root credentials unless changed). */
struct harness {
	struct kernel k;
	struct thread_group tg;
	struct task t;
};

void harness_init(struct harness *h, struct testfs *fs, int mount_flags);
/* The task part alone, for a kernel whose root the test mounted itself. */
void harness_init_task(struct harness *h);
void harness_fini(struct harness *h);
/* Sets the task's credentials to uid/gid with no supplementary groups. */
void harness_set_cred(struct harness *h, uint32_t uid, uint32_t gid);

#endif
