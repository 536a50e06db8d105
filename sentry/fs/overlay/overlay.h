/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root overlay (overlay.c has the model): a read-only lower filesystem below a tmpfs
 * upper. vfs_mount_root_overlay (vfs.h) builds the sandbox's root from the gofer with it. A
 * guest's mount -t overlay (syscalls/sys_mount.c) uses the same model over directories.
 */
#ifndef HUSK_SENTRY_FS_OVERLAY_H
#define HUSK_SENTRY_FS_OVERLAY_H

#include <stddef.h>

struct vfs_fs;
struct vfs_node;

/*
 * An overlay of lower (any filesystem, never written) and upper (a tmpfs from tmpfs_create:
 * the overlay keeps its marks in tmpfs inodes). Takes its own references on both. Returns the
 * new filesystem (one reference) or NULL when out of memory.
 */
struct vfs_fs *overlay_create(struct vfs_fs *lower, struct vfs_fs *upper);

/*
 * A guest's mount -t overlay: lowers[0] over lowers[1] ... over lowers[n - 1] (n >= 1
 * directories of any filesystems, never written; whiteouts and trusted.overlay.opaque marks in
 * them are honoured), below upper, a directory of a tmpfs whose marks the overlay keeps, or NULL
 * for a read-only overlay (every change -EROFS). Takes its own references. Returns the new
 * filesystem (one reference), ERR_PTR(-EINVAL) when upper is not a tmpfs directory, or
 * ERR_PTR(-ENOMEM). Checkpoint does not know such overlays (overlay_upper gives NULL).
 */
struct vfs_fs *overlay_mount(struct vfs_node *const *lowers, size_t n, struct vfs_node *upper);

/* --- checkpoint and restore (sentry/state/fs.c) --- */

#include <stdint.h>

/*
 * The upper tmpfs of the root overlay fs (not a new reference), or NULL if fs is not the root
 * overlay.
 */
struct vfs_fs *overlay_upper(struct vfs_fs *fs);
/*
 * A new overlay node (one reference) over upper (a node of the upper tmpfs, referenced anew)
 * with no name and no parent, showing inode number ino: the node of a file removed while open.
 * ERR_PTR(-EINVAL) if fs is not an overlay, ERR_PTR(-ENOMEM).
 */
struct vfs_node *overlay_node_detached(struct vfs_fs *fs, struct vfs_node *upper, uint64_t ino);
/*
 * After the upper tmpfs was filled from an image: forgets the overlay's cached lookups (nodes
 * only the cache holds, negative entries) and gives the nodes others hold (mountpoints and
 * their ancestors) the upper node their name has now.
 */
void overlay_restore_refresh(struct vfs_fs *fs);

#endif
