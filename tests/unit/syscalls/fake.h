/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test-only stand-ins for what the handlers of sys_id/time/info/signal/stat.c call outside
 * syscalls/: guest memory (guest addresses are sentry pointers, except one range that faults)
 * and the few VFS entry points of the stat family (a fixed table of paths and fds).
 * Nothing of sentry/mm or sentry/vfs is linked.
 */
#ifndef HUSK_TESTS_UNIT_SYSCALLS_FAKE_H
#define HUSK_TESTS_UNIT_SYSCALLS_FAKE_H

#include <stdint.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* Makes [addr, addr + len) fault from now on (len 0: nothing faults but the first page). */
void fake_mm_set_bad(const void *addr, size_t len);

/* A kernel, thread group and task as task_create_init would make them (pid 1, uid/gid). */
struct harness {
	struct kernel k;
	struct thread_group tg;
	struct sighand sighand;
	struct task t;
};

void harness_init(struct harness *h, uint32_t uid, uint32_t gid);

/* --- the fake VFS --- */

/* A node of the fake tree: a path (as given to vfs_lookup_at) and its attributes. */
struct vfs_node {
	const char *path;
	struct vfs_attr attr;
	int statfs_err; /* returned by vfs_path_statfs when non-zero */
};

struct vfs_mount {
	uint64_t id;
};

/* Adds a node found by vfs_lookup_at(path) on the fake mount (id FAKE_MNT_ID). */
struct vfs_node *fake_vfs_add(const char *path, const struct vfs_attr *attr);
#define FAKE_MNT_ID 42
#define FAKE_STATFS_TYPE 0xEF53

/*
 * Installs a file at fd: with a path when node is non-NULL (its getattr is then NULL, as an
 * O_PATH file's), else a file with no path whose getattr gives *attr.
 */
void fake_fd_install(int fd, struct vfs_node *node, const struct vfs_attr *attr);
/* Empties the fake tree and fd table and clears the counters below. */
void fake_vfs_reset(void);

/* Arguments of the last vfs_lookup_at call. */
extern int fake_lookup_calls, fake_lookup_dirfd, fake_lookup_flags;
extern char fake_lookup_path[4096];
/* References handed out (lookups, fdtable_lookup) minus those given back. */
extern int fake_refs;
/* Calls of file_getattr (files with no path). */
extern int fake_file_getattr_calls;

#define A(x) ((uint64_t)(uintptr_t)(x))

/* Calls handler fn for task t with up to six arguments. */
#define CALL(t, fn, ...) call_handler((t), sys_##fn, (uint64_t[6]){ __VA_ARGS__ })

static inline long call_handler(struct task *t, syscall_fn fn, const uint64_t a[6])
{
	struct syscall_args args;

	for (int i = 0; i < 6; i++)
		args.a[i] = a[i];
	return fn(t, &args);
}

#endif
