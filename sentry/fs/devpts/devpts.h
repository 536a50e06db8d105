/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devpts: pseudo-terminals in the sentry. Opening /dev/ptmx (5:2) allocates a pair and returns
 * its master; the slave is /dev/pts/N (136:N) once unlocked (TIOCSPTLCK 0, unlockpt(3)). The
 * line discipline (canonical mode, echo, ISIG characters, ICRNL/ONLCR, ...) runs in the sentry;
 * a tty is the controlling terminal of at most one session (sessions are the thread groups'
 * sids), and job control (foreground process group, SIGTTIN/SIGTTOU) follows Linux's n_tty.
 */
#ifndef HUSK_SENTRY_FS_DEVPTS_H
#define HUSK_SENTRY_FS_DEVPTS_H

#include <stdint.h>
#include <sys/types.h>

struct file;
struct kernel;
struct task;
struct vfs_fs;

#define DEVPTS_SUPER_MAGIC 0x1cd1
#define PTMX_MAJOR 5
#define PTMX_MINOR 2
#define TTYAUX_MAJOR 5 /* /dev/tty is 5:0 */
#define PTS_MAJOR 136
#define DEVPTS_MAX 4096

/* A new devpts instance (one reference), or NULL when out of memory. */
struct vfs_fs *devpts_create(void);

/*
 * Mounts devpts on /dev/pts (a directory of devfs). Call after vfs_mount_dev. Returns 0 or
 * -errno.
 */
int vfs_mount_devpts(struct kernel *k);

/*
 * Opens /dev/ptmx: a new pair, locked, whose master is returned (a file without a path: the
 * caller fills f->mnt/f->node). flags are open(2)'s. Returns the file or ERR_PTR(-errno)
 * (-ENOSPC when DEVPTS_MAX pairs are open).
 */
struct file *devpts_open_master(int flags);

/*
 * Opens the slave of pair index with open(2) flags, for the calling task (task_current(): a
 * session leader without a controlling terminal acquires it unless O_NOCTTY). Returns the file
 * (no path) or ERR_PTR(-EIO) for a locked or closed pair, -ENXIO for no such pair.
 */
struct file *devpts_open_slave(uint32_t index, int flags);

/*
 * Opens /dev/tty: the controlling terminal of the calling task's session, or ERR_PTR(-ENXIO)
 * when it has none.
 */
struct file *devpts_open_ctty(int flags);

/*
 * Host terminals the sentry was given (its stdio on a terminal: the OCI console, husk do on a
 * terminal; a husk exec --tty's pty) are entries of devpts too, so that the guest's path, stat
 * and ttyname(3) of them agree as under Linux: /dev/pts/N (136:N) lists them, opening it wraps
 * a duplicate of the entry's fd as a host file (hostfile.c: the termios calls and job control
 * of hosttty.c). An entry has the lowest free number when it is made.
 *
 * devpts_add_host registers the terminal of hostfd for the sentry's life (a duplicate is
 * kept). Call before the guest runs, so that the first one is 0. devpts_host_hold registers it
 * (or finds it) for one host file over it, until devpts_host_release(its rdev): the entry and
 * its duplicate go with the last hold, unless it was added, so that a pty's master sees the
 * hang-up once the guest closed its slave. Both return the number or -errno.
 */
int devpts_add_host(int hostfd);
int devpts_host_hold(int hostfd);
void devpts_host_release(dev_t rdev);

/* The number of the host terminal of device rdev (the host's st_rdev), or -1. */
int devpts_host_index(dev_t rdev);

/*
 * The path of that entry in the first devpts mounted (/dev/pts/N): *m and *n referenced.
 * Returns 0, or -ENOENT when rdev is not registered or no devpts is mounted.
 */
struct vfs_mount;
struct vfs_node;
int devpts_host_path(dev_t rdev, struct vfs_mount **m, struct vfs_node **n);

/*
 * The controlling terminal of t's session for /proc/PID/stat: *tty_nr (its device number in
 * Linux's encoding, 0 for none) and *tpgid (its foreground process group, -1 for none).
 */
void devpts_ctty_of(struct task *t, int32_t *tty_nr, int32_t *tpgid);

#endif
