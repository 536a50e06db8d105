/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The minimal /dev: null, zero, full, random and urandom as in-sentry character devices.
 * vfs_mount_dev() (vfs.h) mounts it; other filesystems open the same devices for their own
 * character-device nodes (the rootfs's /dev/null when nothing is mounted on /dev).
 */
#ifndef HUSK_SENTRY_FS_DEV_H
#define HUSK_SENTRY_FS_DEV_H

#include <stdbool.h>
#include <stdint.h>

struct file;
struct vfs_fs;

/*
 * Opens character device major:minor with open(2) flags. Returns a file without a path (the
 * caller fills f->mnt/f->node) or ERR_PTR(-ENXIO) for a device the sentry does not have.
 */
struct file *devfs_open_chrdev(uint32_t major, uint32_t minor, int flags);

/* True if f is open on /dev/zero, whose MAP_SHARED mappings are shared anonymous memory. */
bool devfs_file_is_zero(const struct file *f);

/* A new instance of the filesystem (one reference), or NULL when out of memory. */
struct vfs_fs *devfs_create(void);

#endif
