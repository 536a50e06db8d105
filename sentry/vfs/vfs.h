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
struct linux_statfs;
struct vfs_fs;
struct waitq;

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
	/*
	 * Readiness for poll/select/epoll and blocking I/O: returns the POLL* events ready now
	 * (POLLIN, POLLOUT, POLLHUP, POLLERR, POLLRDHUP, ...), and when wq is not NULL stores there
	 * the wait queue that is woken whenever readiness may have changed (or NULL if it never
	 * changes). NULL means always ready for reading and writing (regular files).
	 */
	unsigned int (*poll)(struct file *f, struct waitq **wq);
	/* Called once when the last reference goes. */
	void (*release)(struct file *f);
	/* fsync(2)/fdatasync(2); NULL: nothing to flush (in-memory files): success. */
	int (*fsync)(struct file *f, bool datasync);
	/*
	 * fallocate(2) with Linux's mode bits (the VFS checked offsets and the file mode).
	 * NULL: -EOPNOTSUPP.
	 */
	int (*fallocate)(struct file *f, int mode, int64_t off, int64_t len);

	/* --- the page cache, for MAP_SHARED file mappings (sentry/mm/README.md) --- */

	/*
	 * Stores in offs[i], for i < npages, the offset in the kernel's memory file (k->mf) of the
	 * page that holds the file's bytes [(pgoff + i) * 4096, +4096), allocating pages as needed
	 * (zero-filled, or read from the backing store), also past the end of the file. Each page
	 * comes with a new reference (memfile_ref) that the caller drops with memfile_free. The
	 * pages are the file's own: what is written to them is what read(2) of the file and every
	 * other mapping see, and write(2) of the file changes them. write is true when the caller
	 * may write the pages (a MAP_SHARED mapping of a file opened for writing): a filesystem with
	 * a backing store then writes them back on sync_pages and when the file is released.
	 * Returns 0, or -errno (-ENOSPC, -ENOMEM, -EIO, ...) with no reference taken.
	 * NULL: the file cannot be mapped shared (mmap gives -ENODEV).
	 */
	int (*get_pages)(struct file *f, uint64_t pgoff, size_t npages, uint64_t *offs, bool write);
	/*
	 * msync(2): writes the cached pages [pgoff, pgoff + npages) back to the backing store;
	 * wait is true for MS_SYNC. Returns 0 or -errno (-EIO). NULL: the pages are the file
	 * (memory filesystems): nothing to do.
	 */
	int (*sync_pages)(struct file *f, uint64_t pgoff, uint64_t npages, bool wait);
	/*
	 * A file with no page cache that MAP_PRIVATE may still map, its contents copied in with
	 * read (host regular files, /dev/zero). Files with neither this nor get_pages cannot be
	 * mapped at all (-ENODEV, as Linux's files without f_op->mmap: pipes, sockets,
	 * directories, most character devices, procfs and sysfs files).
	 */
	bool map_private_by_read;
};

struct file {
	struct refcount ref;
	const struct file_ops *ops;
	struct vfs_mount *mnt; /* referenced; NULL for files with no path */
	struct vfs_node *node; /* referenced; NULL for files with no path */
	int flags; /* O_ACCMODE and status flags (O_APPEND, O_NONBLOCK, ...); not O_CLOEXEC */
	pthread_mutex_t pos_lock; /* protects pos */
	int64_t pos;
	/*
	 * The position is a host FD's own offset, shared with the sentry's caller (host files:
	 * stdio, --preserve-fds): read(2)/write(2) pass the file no position, pread/pwrite theirs.
	 */
	bool host_offset;
	void *priv; /* owned by ops */
	/* F_SETOWN, F_SETSIG and O_ASYNC's state (fasync.c); NULL until first used. Atomic. */
	struct file_async *async;
	/* The lock table's (lock.c): f may own OFD or flock locks on the inode (dev, ino). */
	bool lock_used; /* atomic; the two keys are set before it */
	uint64_t lock_dev, lock_ino;
	/* Pipe read ends (sentry/fs/pipe): no POLLHUP while this is the pipe's w_counter + 1. */
	unsigned int pipe_wseen;
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
 * of hostfd on success (on failure the caller still owns it). Reads and writes are host
 * read/write on that FD; ioctl answers TCGETS/TIOCGWINSZ from the host FD only when it is a
 * terminal (TIOCGPGRP then gives the guest's own process group), FIONREAD from the host.
 * A terminal's path is its /dev/pts/N (sentry/fs/devpts/devpts.h). Returns NULL when out of
 * memory.
 */
struct file *hostfile_create(int hostfd, int flags);

/* --- F_SETOWN, F_SETSIG and O_ASYNC (fasync.c) --- */

/* Owner types (Linux's F_OWNER_*). */
#define VFS_OWNER_TID 0
#define VFS_OWNER_PID 1
#define VFS_OWNER_PGRP 2

/*
 * F_SETOWN_EX's core: f's owner becomes the thread, process or process group id of type (id 0:
 * none), with t's uid and euid for the permission to signal it (Linux's sigio_perm). Returns
 * 0, -EINVAL (type), -ESRCH (no such id) or -ENOMEM.
 */
int vfs_fasync_setown(struct task *t, struct file *f, int type, int32_t id);
/* f's owner: *type and *id (VFS_OWNER_TID and 0 when none was ever set, as Linux). */
void vfs_fasync_getown(struct file *f, int *type, int32_t *id);
/* F_SETSIG (0: SIGIO without information; else 1..64) and F_GETSIG. setsig: 0 or -EINVAL. */
int vfs_fasync_setsig(struct file *f, int sig);
int vfs_fasync_getsig(struct file *f);
/*
 * O_ASYNC turned on or off for f (F_SETFL, FIOASYNC; the caller keeps the flag in f->flags):
 * while on, each change of f's readiness signals its owner (POLL_IN when it is readable, POLL_OUT
 * and POLL_HUP on becoming writable or hung up), with si_fd fd. Returns 0 or -ENOMEM.
 */
int vfs_fasync_enable(struct task *t, struct file *f, int fd, bool on);
/* file_put's: detaches f's async state (f->async set). */
void vfs_fasync_release(struct file *f);
/*
 * fcntl(fd, F_NOTIFY, arg) by t on f (vfs_dnotify_set, notify.h, with f's async state and t's
 * fd table; F_NOTIFY makes t's process f's owner unless one was set). 0 or -errno.
 */
long vfs_fasync_dirnotify(struct task *t, struct file *f, int fd, unsigned long arg);
/* vfs_fasync_release, set once a file has async state (links without fasync.c stay lean). */
extern void (*vfs_fasync_release_fn)(struct file *f);

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
/* A new table with the same files at the same fds (new references), for fork. NULL: ENOMEM. */
struct fdtable *fdtable_dup(struct fdtable *t);
/* Closes every fd marked close-on-exec (execve). */
void fdtable_close_on_exec(struct fdtable *t);
/*
 * The lowest open fd >= fd: returns it and *out (a new reference), or -ENOENT when there is
 * none. For listings (/proc/PID/fd). Added by the procfs engineer.
 */
int fdtable_next(struct fdtable *t, int fd, struct file **out);

/* --- filesystem contexts and resolution --- */

struct fs_context;

/*
 * Mounts the gofer's root as the sandbox root filesystem (read-only when readonly is true:
 * writes give -EROFS). Sets the kernel's root. Returns 0 or -errno.
 */
int vfs_mount_root(struct kernel *k, struct gofer_client *gc, bool readonly);
/*
 * Mounts the root as an overlay (sentry/fs/overlay): the gofer's root read-only below, a new
 * tmpfs above (upper_size bytes at most; 0: tmpfs's default), so that writes stay in the sentry.
 * Sets the kernel's root. Returns 0 or -errno.
 */
int vfs_mount_root_overlay(struct kernel *k, struct gofer_client *gc, uint64_t upper_size);
/* Makes a mount of fs (the caller's reference is taken over) with flags the kernel's root. */
int vfs_set_root_fs(struct kernel *k, struct vfs_fs *fs, int flags);
/*
 * Pod members' mount trees (sentry/control/container.c): between vfs_setup_root_begin(root) and
 * vfs_setup_root_end(), on the calling thread only, "the kernel's root" of the set-up functions
 * (vfs_mount_root*, vfs_mount_at, vfs_mount_dev, proc, sys, devpts, labels, devices...) is *root
 * instead of k's: vfs_set_root_fs stores the new root mount there (one reference each on mnt
 * and node, the caller's to put). Other threads still see k's root.
 */
struct vfs_path;
void vfs_setup_root_begin(struct vfs_path *root);
void vfs_setup_root_end(void);
/* The root the calling thread sets up: the override above, else k's (no reference taken). */
void vfs_kernel_root(struct kernel *k, struct vfs_path *out);
struct vfs_mount *vfs_kernel_root_mnt(struct kernel *k);
/* Makes m (its reference taken over) that root, putting the previous one. */
void vfs_kernel_set_root(struct kernel *k, struct vfs_mount *m);
/* A context whose root and cwd are the kernel's root, umask 022. NULL when out of memory. */
struct fs_context *fs_context_create(struct kernel *k);
void fs_context_get(struct fs_context *fs);
void fs_context_put(struct fs_context *fs);
/* How many tasks hold fs (its references: only tasks take them), for exec's LSM_UNSAFE_SHARE. */
int fs_context_users(struct fs_context *fs);
/* chdir(2) with a sentry string, for the initial task's --cwd. Returns 0 or -errno. */
int fs_context_chdir(struct task *t, const char *path);
/* A new context with the same root, cwd and umask (fork without CLONE_FS). NULL: ENOMEM. */
struct fs_context *fs_context_copy(struct fs_context *fs);
/* Sets the umask to mask & 0777 and returns the previous one (umask(2)). */
unsigned int fs_context_set_umask(struct fs_context *fs, unsigned int mask);
unsigned int fs_context_umask(struct fs_context *fs);
/* fchdir(2): makes the directory f was opened on t's cwd. Returns 0, -ENOTDIR or -EACCES. */
int fs_context_fchdir(struct task *t, struct file *f);
/*
 * getcwd(2) into a sentry buffer: writes t's cwd as seen from its root, NUL-terminated.
 * Returns the length with the NUL, -ERANGE when size is too small, -ENAMETOOLONG.
 */
int vfs_getcwd(struct task *t, char *buf, size_t size);
/*
 * faccessat2(2) with a sentry string: mode is F_OK or R_OK|W_OK|X_OK; flags AT_EACCESS,
 * AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH. Checks with the real uid/gid unless AT_EACCESS.
 * Returns 0 or -errno (-EINVAL for bad mode or flags, -EACCES, -EROFS, lookup errors).
 */
int vfs_access(struct task *t, int dirfd, const char *path, int mode, int flags);

/*
 * Mounts the minimal /dev (null, zero, full, random, urandom, shm) on the root's /dev directory,
 * if the root has one (else does nothing), and a 64 MiB tmpfs on /dev/shm. Call after
 * vfs_mount_root. Returns 0 or -errno.
 */
int vfs_mount_dev(struct kernel *k);

/*
 * openat(2) with a sentry string: resolves path relative to dirfd (AT_FDCWD or an fd of t),
 * checks permissions, and opens it. Returns 0 and *out (one reference) or -errno.
 */
int vfs_open(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
	     struct file **out);

/* A position in the mount tree: a mount and a node of its filesystem (both referenced). */
struct vfs_path {
	struct vfs_mount *mnt;
	struct vfs_node *node;
};

/* Drops the references a vfs_path holds and clears it. */
void vfs_path_put(struct vfs_path *p);

/*
 * Resolves path for the *at(2) family: relative to dirfd (AT_FDCWD or an fd of t), following a
 * final symlink unless at_flags has AT_SYMLINK_NOFOLLOW; an empty path means dirfd itself when
 * at_flags has AT_EMPTY_PATH, else -ENOENT. Returns 0 and *out (referenced) or -errno
 * (-ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG, -EACCES for a directory without search
 * permission, -EBADF).
 */
int vfs_lookup_at(struct task *t, int dirfd, const char *path, int at_flags, struct vfs_path *out);
/* Attributes of the node at p. */
int vfs_path_getattr(const struct vfs_path *p, struct vfs_attr *attr);
/* statfs(2) of the filesystem holding p. */
int vfs_path_statfs(const struct vfs_path *p, struct linux_statfs *st);
/* The mount id of p's mount, for statx's stx_mnt_id. */
uint64_t vfs_path_mnt_id(const struct vfs_path *p);
/*
 * access(2)-style check of p for t's filesystem credentials: may is R_OK|W_OK|X_OK. Gives
 * -EROFS for W_OK on a read-only mount (regular files, directories, symlinks), -EACCES when the
 * mode bits refuse. For execve, the loader also needs a regular file on a mount without
 * MS_NOEXEC: vfs_path_may_exec checks all of that. Returns 0 or -errno.
 */
int vfs_path_permission(struct task *t, const struct vfs_path *p, int may);
int vfs_path_may_exec(struct task *t, const struct vfs_path *p);
/*
 * Whether f was opened on a mount with MS_NOEXEC (config.json's noexec): execve of it is
 * -EACCES (vfs_path_may_exec) and, as Linux, mmap with PROT_EXEC of it -EPERM and mprotect
 * adding PROT_EXEC to such a mapping -EACCES. False for files with no path.
 */
bool vfs_file_noexec(const struct file *f);
/*
 * Whether f was opened on a mount with MS_NOSUID (config.json's nosuid): as Linux's
 * mnt_may_suid, execve of it then ignores its set-user-ID and set-group-ID bits and its file
 * capabilities. False for files with no path.
 */
bool vfs_file_nosuid(const struct file *f);
/*
 * Copies the target of the symlink at p into buf (no NUL, truncated to len). Returns the
 * number of bytes copied or -EINVAL when p is not a symlink.
 */
ssize_t vfs_path_readlink(const struct vfs_path *p, char *buf, size_t len);
/* The path of an open file (new references): f->mnt/f->node. -EBADF for a file with none. */
int vfs_file_path(struct file *f, struct vfs_path *out);

/* --- changes (write.c), with sentry strings; each returns 0 or -errno as Linux's call --- */

/*
 * mknodat(2): mode's type S_IFREG (or 0), S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK (the last two
 * need euid 0); dev in vfs_mkdev encoding. The umask applies.
 */
int vfs_mknodat(struct task *t, int dirfd, const char *path, unsigned int mode, uint64_t dev);
int vfs_mkdirat(struct task *t, int dirfd, const char *path, unsigned int mode);
int vfs_symlinkat(struct task *t, const char *target, int dirfd, const char *path);
/* linkat(2): flags AT_SYMLINK_FOLLOW, AT_EMPTY_PATH; fs.protected_hardlinks rules. */
int vfs_linkat(struct task *t, int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
	       int flags);
/* unlinkat(2): flags AT_REMOVEDIR (rmdir). */
int vfs_unlinkat(struct task *t, int dirfd, const char *path, int flags);
/* renameat2(2): flags VFS_RENAME_* (RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT). */
int vfs_renameat2(struct task *t, int olddirfd, const char *oldpath, int newdirfd,
		  const char *newpath, unsigned int flags);
/* chmod of the node at p (owner or root; S_ISGID dropped for non-members). */
int vfs_path_chmod(struct task *t, const struct vfs_path *p, unsigned int mode);
/* chown of the node at p; (uint32_t)-1 leaves an id unchanged. */
int vfs_path_chown(struct task *t, const struct vfs_path *p, uint32_t uid, uint32_t gid);
/*
 * utimensat(2) on p: times[0] atime, times[1] mtime, each a time or UTIME_NOW/UTIME_OMIT in
 * tv_nsec; times NULL means both now.
 */
int vfs_path_utimens(struct task *t, const struct vfs_path *p, const struct timespec *times);
/* truncate(2) of p (write permission) and ftruncate(2) of f (opened for writing). */
int vfs_path_truncate(struct task *t, const struct vfs_path *p, int64_t size);
int vfs_file_truncate(struct task *t, struct file *f, int64_t size);

/* openat2(2)'s how->resolve bits (Linux's RESOLVE_*), given to vfs_open_resolve. */
#define VFS_RESOLVE_NO_XDEV 0x01
#define VFS_RESOLVE_NO_MAGICLINKS 0x02
#define VFS_RESOLVE_NO_SYMLINKS 0x04
#define VFS_RESOLVE_BENEATH 0x08
#define VFS_RESOLVE_IN_ROOT 0x10
#define VFS_RESOLVE_CACHED 0x20
/* vfs_open with openat2's resolve flags (-EINVAL for unknown bits). */
int vfs_open_resolve(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
		     unsigned int resolve, struct file **out);

#endif
