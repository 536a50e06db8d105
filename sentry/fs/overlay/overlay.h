/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root overlay (overlay.c has the model): a read-only lower filesystem below a tmpfs
 * upper. vfs_mount_root_overlay (vfs.h) builds the sandbox's root from the gofer with it.
 */
#ifndef HUSK_SENTRY_FS_OVERLAY_H
#define HUSK_SENTRY_FS_OVERLAY_H

struct vfs_fs;

/*
 * An overlay of lower (any filesystem, never written) and upper (a tmpfs from tmpfs_create:
 * the overlay keeps its marks in tmpfs inodes). Takes its own references on both. Returns the
 * new filesystem (one reference) or NULL when out of memory.
 */
struct vfs_fs *overlay_create(struct vfs_fs *lower, struct vfs_fs *upper);

#endif
