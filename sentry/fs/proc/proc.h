/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs: /proc built from the sentry's own model (tasks, thread groups, mm, fd tables, mounts).
 * Pids are the sandbox's. See README.md in this folder for the files and their sources.
 */
#ifndef HUSK_SENTRY_FS_PROC_H
#define HUSK_SENTRY_FS_PROC_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "sentry/fs/proc/pseudo.h"

struct file;
struct kernel;
struct task;
struct vfs_fs;

#define PROC_SUPER_MAGIC 0x9fa0

/* A new procfs instance for kernel k (one reference), or NULL when out of memory. */
struct vfs_fs *procfs_create(struct kernel *k);

/*
 * Mounts procfs on /proc (MS_NOSUID|MS_NODEV|MS_NOEXEC), creating the directory when the root
 * can have it; does nothing when the root has no /proc and cannot get one. Call after the root
 * is mounted. Returns 0 or -errno.
 */
int vfs_mount_proc(struct kernel *k);

/*
 * What readlink of /proc/PID/fd/N shows for f, as seen by viewer (NULL: from the kernel's
 * root): its path, or "pipe:[ino]", "socket:[ino]", "anon_inode:[eventfd]", ... Writes at most
 * len bytes and a NUL into buf. Returns the length without the NUL or -errno.
 */
int proc_file_name(struct task *viewer, struct file *f, char *buf, size_t len);

/*
 * The pid of the process whose /proc/PID directory f is open on (pidfd_send_signal(2) takes
 * one as a pidfd), or -EBADF for any other file (/proc/PID/task/TID included).
 */
int32_t proc_file_pid(struct file *f);

/* --- shared by the files of this folder --- */

/* The directory table of /proc/PID (with_task: includes task/) and /proc/PID/task/TID. */
extern const struct pseudo_ent proc_pid_ents[];
extern const struct pseudo_ent proc_tid_ents[];
/* The entry of /proc/PID itself (a directory of proc_pid_ents). */
extern const struct pseudo_ent proc_pid_dir_ent;

/* Parses a decimal pid or fd (no sign, no leading zero); -1 when name is not one. */
long proc_parse_num(const char *name);
/* Guest CPUs (sched_getaffinity of the sentry), at least 1. */
unsigned int proc_ncpus(void);
/* Ticks (USER_HZ, 100/s) of a nanosecond count. */
static inline unsigned long long proc_ticks(uint64_t ns)
{
	return (unsigned long long)(ns / 10000000ULL);
}
/* Writes /proc/PID/mounts (mountinfo: true for mountinfo's format) for the viewer task t. */
int proc_gen_mounts(struct kernel *k, struct task *t, FILE *out, bool mountinfo);

#endif
