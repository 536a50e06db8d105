/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lock table: flock(2) locks, POSIX record locks (F_SETLK/F_SETLKW/F_GETLK) and OFD locks
 * (F_OFD_*), by inode (st_dev, st_ino of the file).
 *
 * Owners, as Linux's: a POSIX lock belongs to the fd table of the process that set it (Linux's
 * fl_owner = current->files: the thread group, whose threads share it; a forked child has its
 * own and inherits no lock) and reports the pid of its thread group; an OFD or flock lock
 * belongs to the open file description. POSIX and OFD locks share one byte-range list and
 * conflict with each other; flock locks are whole-file locks of their own list and conflict
 * only with flock locks. Locks of one owner never conflict with each other: setting one
 * replaces, splits and merges the owner's locks over the range, as Linux does.
 *
 * Release: a process's POSIX locks on an inode go when it closes any fd of that inode (and
 * when its fd table goes); OFD and flock locks go on the last close of the description.
 * F_SETLKW and blocking flock wait interruptibly on the inode's wait queue (-ERESTARTSYS); an
 * F_SETLKW that would wait for a chain of POSIX owners leading back to the caller is -EDEADLK.
 */
#ifndef HUSK_SENTRY_VFS_LOCK_H
#define HUSK_SENTRY_VFS_LOCK_H

#include <stdint.h>

struct task;
struct file;
struct fdtable;

/* Linux's struct flock (x86-64), as copied in from the guest. */
struct vfs_flock {
	int16_t type; /* F_RDLCK, F_WRLCK, F_UNLCK */
	int16_t whence; /* SEEK_SET, SEEK_CUR, SEEK_END */
	int64_t start;
	int64_t len; /* 0: to the end of the file (and beyond); < 0: before start */
	int32_t pid;
	int32_t pad;
};

/* fcntl's lock commands (Linux's values; glibc hides the OFD ones without _GNU_SOURCE). */
#define VFS_F_GETLK 5
#define VFS_F_SETLK 6
#define VFS_F_SETLKW 7
#define VFS_F_OFD_GETLK 36
#define VFS_F_OFD_SETLK 37
#define VFS_F_OFD_SETLKW 38

/*
 * fcntl(2) lock command cmd on f for t, fl as the guest gave it. GETLK commands rewrite *fl
 * (the first conflicting lock, whence SEEK_SET, pid -1 for an OFD lock; or type F_UNLCK).
 * Returns 0 or -errno: -EINVAL (bad type, whence, OFD pid not 0), -EBADF (lock type the
 * file's access mode does not allow), -EOVERFLOW, -EAGAIN (F_SETLK conflict), -EDEADLK,
 * -ERESTARTSYS (F_SETLKW interrupted), -ENOLCK (out of memory).
 */
int vfs_fcntl_lock(struct task *t, struct file *f, int cmd, struct vfs_flock *fl);

/*
 * flock(2): op LOCK_SH, LOCK_EX or LOCK_UN, with LOCK_NB. A conversion drops the old lock
 * first (as Linux: not atomic). Returns 0 or -errno (-EINVAL, -EWOULDBLOCK, -ERESTARTSYS).
 */
int vfs_flock(struct task *t, struct file *f, int op);

/*
 * The fd table owner closed one fd of f: its POSIX locks on f's inode go (fdtable.c calls
 * it, after dropping the table's lock and before putting the file). Cheap when owner holds no
 * POSIX lock.
 */
void vfs_locks_close_posix(struct fdtable *owner, struct file *f);

/* The fd table owner goes (last reference): every POSIX lock it holds goes. */
void vfs_locks_owner_gone(struct fdtable *owner);

/* The last reference of f goes: its OFD and flock locks go (file.c). */
void vfs_locks_release_file(struct file *f);

#endif
