/* SPDX-License-Identifier: Apache-2.0 */
/* The gofer's confinement (DESIGN.md rule 4): mount namespace and pivot_root, capabilities,
 * seccomp. gofer/README.md lists the steps in order. */
#ifndef HUSK_GOFER_CONFINE_H
#define HUSK_GOFER_CONFINE_H

#include <stdbool.h>

/* Closes every FD but those in keep[0..nkeep) (at most 16). Returns 0 or -errno. */
int gofer_close_fds_except(const int *keep, int nkeep);

/* The one name in the root of a gofer serving a single file (gofer_pivot_into). */
#define GOFER_FILE_ROOT_NAME "file"

/*
 * Puts the calling process in a new mount namespace whose root is a non-recursive bind mount of
 * root (read-only when readonly; nosuid and nodev always), with the old root detached.
 * When root names a regular file (a file bind mount), the new root is instead a read-only
 * directory holding only GOFER_FILE_ROOT_NAME, a bind of that file (read-only when readonly):
 * nothing else of the file's directory is in the namespace. Anything but a directory or a
 * regular file is -ENOTDIR.
 * Returns 0 with *root_fd, an O_PATH FD of the served root (the directory, or the file), and
 * *proc_fd, an FD of /proc/self/fd opened before the pivot (the only way out of the new root,
 * used to reopen handles); or -errno, after logging which step failed.
 */
int gofer_pivot_into(const char *root, bool readonly, int *root_fd, int *proc_fd);

/*
 * Drops every capability but the few the gofer uses, from the bounding set too: DAC_OVERRIDE
 * and DAC_READ_SEARCH (serving files whatever their owner and mode), plus FOWNER, CHOWN and
 * FSETID when not readonly (owners, modes and times the sentry asks for). Never MKNOD: the
 * gofer makes FIFOs and sockets only, which need no capability. Returns 0 or -errno.
 */
int gofer_drop_capabilities(bool readonly);

/*
 * Installs the gofer's seccomp allow-list (gofer/filter.c); anything else kills the process.
 * With readonly, openat is allowed only without write access, O_CREAT, O_TRUNC or O_TMPFILE,
 * and no call that changes the tree is allowed at all. Returns 0 or -errno.
 */
int gofer_install_filter(bool readonly);

/*
 * All of the above after the pivot, in order: capabilities, no_new_privs, not dumpable,
 * seccomp. Returns 0 or -errno, after logging which step failed.
 */
int gofer_lock_down(bool readonly);

#endif
