/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's VFS: open files, file descriptor tables, filesystem contexts (root, cwd, umask)
 * and path resolution. This header is the part other subsystems (loader, mm, kernel, syscalls)
 * rely on; sentry/vfs/README.md describes the model and the lock order.
 *
 * Files are reference counted: file_get/file_put. A struct file is an open file description;
 * FD_CLOEXEC lives in the fd table, not here.
 */
#ifndef HUSK_SENTRY_VFS_H
#define HUSK_SENTRY_VFS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "common/refcount.h"

struct task;
struct kernel;
struct file;
struct vfs_node;
struct vfs_mount;
struct gofer_client;

/* Attributes of a file, filesystem-neutral; turned into struct stat / statx by the syscalls. */
struct vfs_attr {
	uint64_t dev;
	uint64_t ino;
	uint64_t nlink;
	uint32_t mode; /* S_IFMT | permission bits */
	uint32_t uid, gid;
	uint64_t rdev;
	int64_t size;
	int64_t blksize;
	int64_t blocks; /* 512-byte units */
	struct timespec atime, mtime, ctime;
};

/* Sink for directory entries; emit returns false when the caller's buffer is full. */
struct dir_emitter {
	bool (*emit)(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
		     unsigned int dtype, int64_t next_off);
};

struct file_ops {
	/*
	 * Reads into iov. pos is the offset to use and advance, or NULL for stream files that have
	 * no position. Returns bytes read, 0 at end, or -errno (-EAGAIN, -ERESTARTSYS, ...).
	 */
	ssize_t (*read)(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos);
	/* Writes from iov; as read. */
	ssize_t (*write)(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos);
	/* Computes the new position for lseek(2) from f->pos; NULL means -ESPIPE. */
	int64_t (*llseek)(struct file *f, int64_t off, int whence);
	/* Emits entries starting at f->pos, updating f->pos; NULL means -ENOTDIR. */
	int (*iterate)(struct file *f, struct dir_emitter *e);
	int (*getattr)(struct file *f, struct vfs_attr *attr);
	/* ioctl(2); NULL or -ENOIOCTLCMD means -ENOTTY. arg is a guest address or value. */
	long (*ioctl)(struct file *f, struct task *t, unsigned int cmd, uint64_t arg);
	/* Called once when the last reference goes. */
	void (*release)(struct file *f);
};

struct file {
	struct refcount ref;
	const struct file_ops *ops;
	struct vfs_mount *mnt; /* referenced; NULL for files with no path */
	struct vfs_node *node; /* referenced; NULL for files with no path */
	int flags; /* O_ACCMODE and status flags (O_APPEND, O_NONBLOCK, ...); not O_CLOEXEC */
	pthread_mutex_t pos_lock; /* protects pos */
	int64_t pos;
	void *priv; /* owned by ops */
};

/* Allocates a file with one reference. Returns it or NULL when out of memory. */
struct file *file_alloc(const struct file_ops *ops, int flags, void *priv);
void file_get(struct file *f);
void file_put(struct file *f);

/* Reads len bytes at off into a sentry buffer (loader, mm). Returns bytes read or -errno. */
ssize_t file_pread(struct file *f, void *buf, size_t len, int64_t off);
int file_getattr(struct file *f, struct vfs_attr *attr);

/*
 * A file over a host FD the sentry holds (the caller's stdin/stdout/stderr). Takes ownership
 * of hostfd. Reads and writes are host read/write on that FD; ioctl answers TCGETS/TIOCGWINSZ
 * from the host FD only when it is a terminal. Returns NULL when out of memory.
 */
struct file *hostfile_create(int hostfd, int flags);

/* --- file descriptor tables --- */

struct fdtable;

/* Creates an empty table (one reference). NULL when out of memory. */
struct fdtable *fdtable_create(void);
void fdtable_get(struct fdtable *t);
void fdtable_put(struct fdtable *t);
/*
 * Installs f at the lowest free fd >= min_fd (takes a new reference on f). Returns the fd,
 * -EMFILE past the RLIMIT_NOFILE value limit, or -ENOMEM.
 */
int fdtable_install(struct fdtable *t, struct file *f, int min_fd, bool cloexec, int limit);
/* Installs f at exactly fd, closing what was there (dup2 semantics). Returns fd or -errno. */
int fdtable_install_at(struct fdtable *t, struct file *f, int fd, bool cloexec, int limit);
/* Returns a new reference to the file at fd, or NULL (caller returns -EBADF). */
struct file *fdtable_lookup(struct fdtable *t, int fd);
int fdtable_close(struct fdtable *t, int fd);
int fdtable_get_cloexec(struct fdtable *t, int fd); /* 0/1 or -EBADF */
int fdtable_set_cloexec(struct fdtable *t, int fd, bool cloexec);

/* --- filesystem contexts and resolution --- */

struct fs_context;

/*
 * Mounts the gofer's root as the sandbox root filesystem (read-only when readonly is true:
 * writes give -EROFS). Sets the kernel's root. Returns 0 or -errno.
 */
int vfs_mount_root(struct kernel *k, struct gofer_client *gc, bool readonly);
/* A context whose root and cwd are the kernel's root, umask 022. NULL when out of memory. */
struct fs_context *fs_context_create(struct kernel *k);
void fs_context_get(struct fs_context *fs);
void fs_context_put(struct fs_context *fs);
/* chdir(2) with a sentry string, for the initial task's --cwd. Returns 0 or -errno. */
int fs_context_chdir(struct task *t, const char *path);

/*
 * openat(2) with a sentry string: resolves path relative to dirfd (AT_FDCWD or an fd of t),
 * checks permissions, and opens it. Returns 0 and *out (one reference) or -errno.
 */
int vfs_open(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
	     struct file **out);

#endif
