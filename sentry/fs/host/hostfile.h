/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host files: host FDs the caller gave the sentry explicitly (stdio, --preserve-fds, the fds a
 * husk exec request carries), wrapped as guest files whose reads and writes the sentry does
 * (hostfile.c; hostfile_create is declared in sentry/vfs/vfs.h). The guest never holds a host FD.
 */
#ifndef HUSK_SENTRY_FS_HOST_HOSTFILE_H
#define HUSK_SENTRY_FS_HOST_HOSTFILE_H

#include <stdbool.h>

struct fdtable;
struct file;

/* Most fds --preserve-fds hands the sentry (SCM_RIGHTS carries at most 253 per message). */
#define HOSTFILE_MAX_PRESERVE 250

/*
 * Wraps a duplicate of hostfd (the caller keeps hostfd) as guest fd n of fdt, with hostfd's
 * status flags (O_APPEND, O_NONBLOCK, access mode). Returns 0, -EBADF when hostfd is not open,
 * or -errno.
 */
int hostfile_install(struct fdtable *fdt, int hostfd, int n);

/*
 * A pod member's process (sentry/control/spawn.c): when t's fd n is a host terminal shown as
 * /dev/pts/N, its path becomes that entry as t's root resolves it (the member's own devpts
 * mount), so that ttyname(3) finds it in the member's tree. Anything else stays as it is.
 */
struct task;
void hostfile_repath(struct task *t, int n);

/*
 * When t's fd n is a host terminal, t (a session leader without one) gets it as its
 * controlling terminal, unless another session has it (hosttty_open_acquire).
 */
void hostfile_acquire_ctty(struct task *t, int n);

/*
 * As hostfile_create (sentry/vfs/vfs.h), for a filesystem's open: a file without a path, which
 * the VFS gives the opened node's (devfs's /dev/console, devpts's host terminals). Takes
 * hostfd on success. Returns NULL when out of memory.
 */
struct file *hostfile_open(int hostfd, int flags);

/*
 * Receives the fds of one message on the unix socket sock (SCM_RIGHTS, at least one byte of
 * data) into fds[0..max), in the order sent, close-on-exec. Extra fds are closed. Returns how
 * many, -ENODATA at end of file, -EMSGSIZE when the control data was truncated, or -errno.
 */
int hostfile_recv_fds(int sock, int *fds, int max);

/*
 * Checkpoints: hostfile_set_origin records that host file f (from hostfile_create) wraps a
 * duplicate of the sentry's own fd n (0, 1 or 2: its stdio), so that a restore can wrap the new
 * sentry's fd n instead. hostfile_origin returns it, -1 when none was set, -EINVAL when f is
 * not a host file.
 */
void hostfile_set_origin(struct file *f, int n);
int hostfile_origin(struct file *f);

#endif
