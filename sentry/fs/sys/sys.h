/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal sysfs: what glibc (get_nprocs, get_nprocs_conf) and language runtimes read.
 * /sys/devices/system/cpu/{online, possible, present, offline, kernel_max, cpuN/},
 * /sys/kernel/mm/transparent_hugepage/enabled, and an empty /sys/fs/cgroup.
 */
#ifndef HUSK_SENTRY_FS_SYS_H
#define HUSK_SENTRY_FS_SYS_H

struct kernel;
struct vfs_fs;

#define SYSFS_MAGIC 0x62656572

/* A new sysfs instance (one reference), or NULL when out of memory. */
struct vfs_fs *sysfs_create(struct kernel *k);

/*
 * Mounts sysfs read-only on /sys (MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC, as Docker does),
 * creating the directory when the root can have it; nothing when it cannot. Returns 0 or
 * -errno.
 */
int vfs_mount_sys(struct kernel *k);

#endif
