/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's devices: null, zero, full, random and urandom as in-sentry character devices,
 * the terminals of devpts, and the device rules every open and mknod of a device node passes.
 * vfs_mount_dev() (vfs.h) mounts /dev (a tmpfs holding OCI's default devices); every
 * filesystem opens the same devices for its own device nodes (the rootfs's /dev/null when
 * nothing is mounted on /dev, a guest's mknod).
 */
#ifndef HUSK_SENTRY_FS_DEV_H
#define HUSK_SENTRY_FS_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

struct file;
struct kernel;
struct vfs_fs;

/* Access bits of a device rule, as the device cgroup's "rwm". */
#define DEVFS_ACC_READ 0x1u
#define DEVFS_ACC_WRITE 0x2u
#define DEVFS_ACC_MKNOD 0x4u

/* One linux.resources.devices entry. */
struct devfs_rule {
	bool allow;
	char type; /* 'a' (all), 'c' or 'b' */
	int64_t major, minor; /* -1: any */
	unsigned int access; /* DEVFS_ACC_* */
};

/*
 * Sets the device rules (copied), replacing any: an access bit asked of a device is decided by
 * the last rule matching the device that names the bit; none: allowed (no rules: everything
 * is). Call before the guest runs. Returns 0 or -ENOMEM.
 */
int devfs_set_rules(const struct devfs_rule *rules, size_t n);
/*
 * Whether the rules allow access (DEVFS_ACC_*) to device type ('c', 'b') major:minor. Returns 0
 * or -EPERM (the device cgroup's answer).
 */
int devfs_check(char type, uint32_t major, uint32_t minor, unsigned int access);

/*
 * Opens character device major:minor with open(2) flags. Returns a file without a path (the
 * caller fills f->mnt/f->node), ERR_PTR(-EPERM) when the device rules refuse the access, or
 * ERR_PTR(-ENXIO) for a device the sentry does not have.
 */
struct file *devfs_open_chrdev(uint32_t major, uint32_t minor, int flags);
/* A block device node: ERR_PTR(-EPERM) when the rules refuse it, else -ENXIO (the sentry has none). */
struct file *devfs_open_blkdev(uint32_t major, uint32_t minor, int flags);

/*
 * Makes host fd hostfd (a duplicate is kept) the console that /dev/console (5:1) opens: the
 * terminal config.json's process.terminal gave the guest's stdio. Returns 0 or -errno.
 */
int devfs_set_console(int hostfd);

/* True if f is open on /dev/zero, whose MAP_SHARED mappings are shared anonymous memory. */
bool devfs_file_is_zero(const struct file *f);

/*
 * A new /dev (one reference): a tmpfs of size bytes whose root has mode (07777), holding OCI's
 * default devices, symlinks and the pts, shm and mqueue directories. NULL when out of memory.
 */
struct vfs_fs *devfs_create(struct kernel *k, uint64_t size, uint32_t mode);
/*
 * Makes name in fs's root (a devfs_create one): mode is S_IF* | permissions, rdev in vfs_mkdev
 * encoding, owned by uid:gid (config.json linux.devices). Returns 0 or -errno (-EEXIST).
 */
int devfs_add_node(struct vfs_fs *fs, const char *name, uint32_t mode, uint64_t rdev, uint32_t uid,
		   uint32_t gid);

#endif
