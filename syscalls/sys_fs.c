/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Filesystem changes: creation, links, removal, rename, attributes, truncation, sync, and
 * openat2. The rules live in sentry/vfs/write.c; these handlers copy arguments in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "common/util.h"

#include "include/abi/linux/errno.h"
#include "sentry/kernel/cred.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/lock.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* A path copied in from the guest (PATH_MAX with its NUL), freed by path_free. */
static long path_in(struct task *t, uint64_t addr, char **out)
{
	char *p = malloc(VFS_PATH_MAX);
	long r;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	r = mm_copy_in_string(t->mm, p, addr, VFS_PATH_MAX);
	if (r < 0) {
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

static long do_mknodat(struct task *t, int dirfd, uint64_t path, unsigned int mode, uint64_t dev)
{
	char *p;
	long r = path_in(t, path, &p);

	if (r == 0)
		r = vfs_mknodat(t, dirfd, p, mode,
				vfs_mkdev((uint32_t)((dev >> 8) & 0xfff),
					  (uint32_t)((dev & 0xff) | ((dev >> 12) & ~0xffu))));
	free(p);
	return r;
}

/* mknod(2) */
long sys_mknod(struct task *t, const struct syscall_args *args)
{
	return do_mknodat(t, AT_FDCWD, args->a[0], (unsigned int)args->a[1], args->a[2]);
}

/* mknodat(2) */
/* FIFOs and sockets are nodes only until pipes and unix sockets exist (opening: ENXIO). */
long sys_mknodat(struct task *t, const struct syscall_args *args)
{
	return do_mknodat(t, (int)args->a[0], args->a[1], (unsigned int)args->a[2], args->a[3]);
}

static long do_mkdirat(struct task *t, int dirfd, uint64_t path, unsigned int mode)
{
	char *p;
	long r = path_in(t, path, &p);

	if (r == 0)
		r = vfs_mkdirat(t, dirfd, p, mode);
	free(p);
	return r;
}

/* mkdir(2) */
long sys_mkdir(struct task *t, const struct syscall_args *args)
{
	return do_mkdirat(t, AT_FDCWD, args->a[0], (unsigned int)args->a[1]);
}

/* mkdirat(2) */
long sys_mkdirat(struct task *t, const struct syscall_args *args)
{
	return do_mkdirat(t, (int)args->a[0], args->a[1], (unsigned int)args->a[2]);
}

static long do_unlinkat(struct task *t, int dirfd, uint64_t path, int flags)
{
	char *p;
	long r = path_in(t, path, &p);

	if (r == 0)
		r = vfs_unlinkat(t, dirfd, p, flags);
	free(p);
	return r;
}

/* unlink(2) */
long sys_unlink(struct task *t, const struct syscall_args *args)
{
	return do_unlinkat(t, AT_FDCWD, args->a[0], 0);
}

/* rmdir(2) */
long sys_rmdir(struct task *t, const struct syscall_args *args)
{
	return do_unlinkat(t, AT_FDCWD, args->a[0], AT_REMOVEDIR);
}

/* unlinkat(2) */
long sys_unlinkat(struct task *t, const struct syscall_args *args)
{
	if ((int)args->a[2] & ~AT_REMOVEDIR)
		return -EINVAL;
	return do_unlinkat(t, (int)args->a[0], args->a[1], (int)args->a[2]);
}

static long do_symlinkat(struct task *t, uint64_t target, int dirfd, uint64_t path)
{
	char *tg, *p;
	long r = path_in(t, target, &tg);

	if (r < 0)
		return r;
	r = path_in(t, path, &p);
	if (r == 0)
		r = vfs_symlinkat(t, tg, dirfd, p);
	free(tg);
	free(p);
	return r;
}

/* symlink(2) */
long sys_symlink(struct task *t, const struct syscall_args *args)
{
	return do_symlinkat(t, args->a[0], AT_FDCWD, args->a[1]);
}

/* symlinkat(2) */
long sys_symlinkat(struct task *t, const struct syscall_args *args)
{
	return do_symlinkat(t, args->a[0], (int)args->a[1], args->a[2]);
}

static long do_linkat(struct task *t, int olddirfd, uint64_t oldpath, int newdirfd,
		      uint64_t newpath, int flags)
{
	char *o, *n;
	long r;

	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	r = path_in(t, oldpath, &o);
	if (r < 0)
		return r;
	r = path_in(t, newpath, &n);
	if (r == 0)
		r = vfs_linkat(t, olddirfd, o, newdirfd, n, flags);
	free(o);
	free(n);
	return r;
}

/* link(2) */
long sys_link(struct task *t, const struct syscall_args *args)
{
	return do_linkat(t, AT_FDCWD, args->a[0], AT_FDCWD, args->a[1], 0);
}

/* linkat(2) */
/* AT_EMPTY_PATH is allowed to every caller (Linux 6.10+ without CAP_DAC_READ_SEARCH too). */
long sys_linkat(struct task *t, const struct syscall_args *args)
{
	return do_linkat(t, (int)args->a[0], args->a[1], (int)args->a[2], args->a[3],
			 (int)args->a[4]);
}

static long do_renameat2(struct task *t, int olddirfd, uint64_t oldpath, int newdirfd,
			 uint64_t newpath, unsigned int flags)
{
	char *o, *n;
	long r = path_in(t, oldpath, &o);

	if (r < 0)
		return r;
	r = path_in(t, newpath, &n);
	if (r == 0)
		r = vfs_renameat2(t, olddirfd, o, newdirfd, n, flags);
	free(o);
	free(n);
	return r;
}

/* rename(2) */
long sys_rename(struct task *t, const struct syscall_args *args)
{
	return do_renameat2(t, AT_FDCWD, args->a[0], AT_FDCWD, args->a[1], 0);
}

/* renameat(2) */
long sys_renameat(struct task *t, const struct syscall_args *args)
{
	return do_renameat2(t, (int)args->a[0], args->a[1], (int)args->a[2], args->a[3], 0);
}

/* renameat2(2) */
/* RENAME_WHITEOUT works on tmpfs; the root overlay refuses it (EINVAL), as overlayfs does. */
long sys_renameat2(struct task *t, const struct syscall_args *args)
{
	return do_renameat2(t, (int)args->a[0], args->a[1], (int)args->a[2], args->a[3],
			    (unsigned int)args->a[4]);
}

/* creat(2) */
long sys_creat(struct task *t, const struct syscall_args *args)
{
	struct syscall_args a = { .a = { (uint64_t)AT_FDCWD, args->a[0],
					 O_CREAT | O_WRONLY | O_TRUNC, args->a[1] } };

	return sys_openat(t, &a);
}

/* --- attributes --- */

/* Resolves path for an attribute change (AT_* flags as the *at calls take them). */
static long lookup_attr(struct task *t, int dirfd, uint64_t path, int at_flags,
			struct vfs_path *out)
{
	char *p;
	long r = path_in(t, path, &p);

	if (r == 0)
		r = vfs_lookup_at(t, dirfd, p, at_flags, out);
	free(p);
	return r;
}

/* The path of fd for f*() attribute calls (O_PATH files do not count: -EBADF). */
static long fd_path(struct task *t, int fd, struct vfs_path *out)
{
	struct file *f = fdtable_lookup(t->fdt, fd);
	long r;

	if (!f)
		return -EBADF;
	if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH)
		r = -EBADF;
	else
		r = vfs_file_path(f, out);
	file_put(f);
	return r;
}

static long do_fchmodat(struct task *t, int dirfd, uint64_t path, unsigned int mode, int flags)
{
	struct vfs_path p;
	long r;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	r = lookup_attr(t, dirfd, path, flags, &p);
	if (r < 0)
		return r;
	/* Linux has no mode for symlinks: chmod of one is refused. */
	if (vfs_node_is_symlink(p.node))
		r = -EOPNOTSUPP;
	else
		r = vfs_path_chmod(t, &p, mode);
	vfs_path_put(&p);
	return r;
}

/* chmod(2) */
long sys_chmod(struct task *t, const struct syscall_args *args)
{
	return do_fchmodat(t, AT_FDCWD, args->a[0], (unsigned int)args->a[1], 0);
}

/* fchmodat(2) */
long sys_fchmodat(struct task *t, const struct syscall_args *args)
{
	return do_fchmodat(t, (int)args->a[0], args->a[1], (unsigned int)args->a[2], 0);
}

/* fchmodat2(2) */
long sys_fchmodat2(struct task *t, const struct syscall_args *args)
{
	return do_fchmodat(t, (int)args->a[0], args->a[1], (unsigned int)args->a[2],
			   (int)args->a[3]);
}

/* fchmod(2) */
long sys_fchmod(struct task *t, const struct syscall_args *args)
{
	struct vfs_path p;
	long r = fd_path(t, (int)args->a[0], &p);

	if (r < 0)
		return r;
	r = vfs_path_chmod(t, &p, (unsigned int)args->a[1]);
	vfs_path_put(&p);
	return r;
}

/*
 * chown's ids, taken in the caller's user namespace and made the sandbox's (nsproxy.h): -1 keeps
 * one; another unmapped there or outside the sandbox's mappings is EINVAL (Linux's).
 */
static long chown_ids_valid(struct task *t, uint32_t *uid, uint32_t *gid)
{
	if ((*uid != (uint32_t)-1 &&
	     (!task_uid_from(t, *uid, uid) || !cred_id_valid(t, false, *uid))) ||
	    (*gid != (uint32_t)-1 &&
	     (!task_gid_from(t, *gid, gid) || !cred_id_valid(t, true, *gid))))
		return -EINVAL;
	return 0;
}

static long do_fchownat(struct task *t, int dirfd, uint64_t path, uint32_t uid, uint32_t gid,
			int flags)
{
	struct vfs_path p;
	long r;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	r = lookup_attr(t, dirfd, path, flags, &p);
	if (r < 0)
		return r;
	r = chown_ids_valid(t, &uid, &gid);
	if (r == 0)
		r = vfs_path_chown(t, &p, uid, gid);
	vfs_path_put(&p);
	return r;
}

/* chown(2) */
long sys_chown(struct task *t, const struct syscall_args *args)
{
	return do_fchownat(t, AT_FDCWD, args->a[0], (uint32_t)args->a[1], (uint32_t)args->a[2], 0);
}

/* lchown(2) */
long sys_lchown(struct task *t, const struct syscall_args *args)
{
	return do_fchownat(t, AT_FDCWD, args->a[0], (uint32_t)args->a[1], (uint32_t)args->a[2],
			   AT_SYMLINK_NOFOLLOW);
}

/* fchownat(2) */
long sys_fchownat(struct task *t, const struct syscall_args *args)
{
	return do_fchownat(t, (int)args->a[0], args->a[1], (uint32_t)args->a[2],
			   (uint32_t)args->a[3], (int)args->a[4]);
}

/* fchown(2) */
long sys_fchown(struct task *t, const struct syscall_args *args)
{
	uint32_t uid = (uint32_t)args->a[1], gid = (uint32_t)args->a[2];
	struct vfs_path p;
	long r = fd_path(t, (int)args->a[0], &p);

	if (r < 0)
		return r;
	r = chown_ids_valid(t, &uid, &gid);
	if (r == 0)
		r = vfs_path_chown(t, &p, uid, gid);
	vfs_path_put(&p);
	return r;
}

/* Applies times (NULL: now) to path, or to dirfd itself when path is 0 (futimens). */
static long do_utimes(struct task *t, int dirfd, uint64_t path, const struct timespec *times,
		      int flags)
{
	struct vfs_path p;
	long r;

	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	if (path == 0) {
		/* utimensat(fd, NULL, ...): the file fd itself (futimens). */
		if (flags & AT_SYMLINK_NOFOLLOW)
			return -EINVAL;
		if (dirfd == AT_FDCWD)
			return -EFAULT;
		r = fd_path(t, dirfd, &p);
	} else {
		r = lookup_attr(t, dirfd, path, flags, &p);
	}
	if (r < 0)
		return r;
	r = vfs_path_utimens(t, &p, times);
	vfs_path_put(&p);
	return r;
}

/* utimensat(2) */
long sys_utimensat(struct task *t, const struct syscall_args *args)
{
	struct timespec ts[2];

	if (args->a[2]) {
		if (mm_copy_in(t->mm, ts, args->a[2], sizeof(ts)) != sizeof(ts))
			return -EFAULT;
	}
	return do_utimes(t, (int)args->a[0], args->a[1], args->a[2] ? ts : NULL, (int)args->a[3]);
}

/* utimes(2)/futimesat(2) arguments: struct timeval[2], or NULL for now. */
static long timevals_in(struct task *t, uint64_t addr, struct timespec ts[2])
{
	struct {
		int64_t sec, usec;
	} tv[2];

	if (mm_copy_in(t->mm, tv, addr, sizeof(tv)) != sizeof(tv))
		return -EFAULT;
	for (int i = 0; i < 2; i++) {
		if (tv[i].usec < 0 || tv[i].usec >= 1000000)
			return -EINVAL;
		ts[i].tv_sec = tv[i].sec;
		ts[i].tv_nsec = tv[i].usec * 1000;
	}
	return 0;
}

/* futimesat(2) */
long sys_futimesat(struct task *t, const struct syscall_args *args)
{
	struct timespec ts[2];
	long r;

	if (args->a[2]) {
		r = timevals_in(t, args->a[2], ts);
		if (r < 0)
			return r;
	}
	if (!args->a[1])
		return -EFAULT;
	return do_utimes(t, (int)args->a[0], args->a[1], args->a[2] ? ts : NULL, 0);
}

/* utimes(2) */
long sys_utimes(struct task *t, const struct syscall_args *args)
{
	struct syscall_args a = { .a = { (uint64_t)AT_FDCWD, args->a[0], args->a[1] } };

	return sys_futimesat(t, &a);
}

/* utime(2) */
long sys_utime(struct task *t, const struct syscall_args *args)
{
	struct timespec ts[2];
	struct {
		int64_t actime, modtime;
	} ub;

	if (args->a[1]) {
		if (mm_copy_in(t->mm, &ub, args->a[1], sizeof(ub)) != sizeof(ub))
			return -EFAULT;
		ts[0] = (struct timespec){ .tv_sec = ub.actime };
		ts[1] = (struct timespec){ .tv_sec = ub.modtime };
	}
	if (!args->a[0])
		return -EFAULT;
	return do_utimes(t, AT_FDCWD, args->a[0], args->a[1] ? ts : NULL, 0);
}

/* truncate(2) */
long sys_truncate(struct task *t, const struct syscall_args *args)
{
	struct vfs_path p;
	long r;

	if ((int64_t)args->a[1] < 0)
		return -EINVAL;
	r = lookup_attr(t, AT_FDCWD, args->a[0], 0, &p);
	if (r < 0)
		return r;
	r = vfs_path_truncate(t, &p, (int64_t)args->a[1]);
	vfs_path_put(&p);
	return r;
}

/* ftruncate(2) */
long sys_ftruncate(struct task *t, const struct syscall_args *args)
{
	struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	long r;

	if (!f || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH)) {
		file_put(f);
		return -EBADF;
	}
	r = vfs_file_truncate(t, f, (int64_t)args->a[1]);
	file_put(f);
	return r;
}

/* fallocate(2) */
/* Modes 0, FALLOC_FL_KEEP_SIZE and PUNCH_HOLE|KEEP_SIZE on tmpfs; others: EOPNOTSUPP. */
long sys_fallocate(struct task *t, const struct syscall_args *args)
{
	int mode = (int)args->a[1];
	int64_t off = (int64_t)args->a[2], len = (int64_t)args->a[3];
	struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	int acc;
	long r;

	if (!f || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH)) {
		file_put(f);
		return -EBADF;
	}
	acc = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_ACCMODE;
	if (off < 0 || len <= 0)
		r = -EINVAL;
	else if ((mode & 0x2) && !(mode & 0x1)) /* PUNCH_HOLE needs KEEP_SIZE */
		r = -EOPNOTSUPP;
	else if (acc != O_WRONLY && acc != O_RDWR)
		r = -EBADF;
	else if (f->node && S_ISDIR(f->node->type))
		r = -EISDIR;
	else if (!f->node || !S_ISREG(f->node->type))
		r = -ENODEV;
	else if (off > INT64_MAX - len)
		r = -EFBIG;
	else if (!f->ops->fallocate)
		r = -EOPNOTSUPP;
	else
		r = f->ops->fallocate(f, mode, off, len);
	file_put(f);
	return r;
}

/* sync(2) */
/* Nothing to flush: the sandbox's writes live in sentry memory or went to host FDs. */
long sys_sync(struct task *t, const struct syscall_args *args)
{
	return 0;
}

static long do_fsync(struct task *t, int fd, bool datasync)
{
	struct file *f = fdtable_lookup(t->fdt, fd);
	long r = 0;

	if (!f || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH)) {
		file_put(f);
		return -EBADF;
	}
	if (f->ops && f->ops->fsync)
		r = f->ops->fsync(f, datasync);
	file_put(f);
	return r;
}

/* syncfs(2) */
long sys_syncfs(struct task *t, const struct syscall_args *args)
{
	return do_fsync(t, (int)args->a[0], false) == -EBADF ? -EBADF : 0;
}

/* fsync(2) */
long sys_fsync(struct task *t, const struct syscall_args *args)
{
	return do_fsync(t, (int)args->a[0], false);
}

/* fdatasync(2) */
long sys_fdatasync(struct task *t, const struct syscall_args *args)
{
	return do_fsync(t, (int)args->a[0], true);
}

/* openat2(2) */
long sys_openat2(struct task *t, const struct syscall_args *args)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = { 0 };
	uint64_t size = args->a[3];
	struct file *f;
	char *p;
	long r;

	if (size < sizeof(how))
		return -EINVAL;
	if (size > 4096)
		return -E2BIG;
	if (mm_copy_in(t->mm, &how, args->a[2], sizeof(how)) != sizeof(how))
		return -EFAULT;
	/* A larger struct from a newer program: its extra bytes must be zero. */
	for (uint64_t off = sizeof(how); off < size; off += 8) {
		uint64_t v = 0;
		size_t n = MIN(8, size - off);

		if (mm_copy_in(t->mm, &v, args->a[2] + off, n) != (ssize_t)n)
			return -EFAULT;
		if (v)
			return -E2BIG;
	}
	if (how.flags >> 32 || how.mode >> 32)
		return -EINVAL;
	if (how.mode & ~07777ULL)
		return -EINVAL;
	/* Without O_CREAT or O_TMPFILE, mode must be 0. */
	if (how.mode && !(how.flags & (O_CREAT | 020000000)))
		return -EINVAL;
	r = path_in(t, args->a[1], &p);
	if (r < 0)
		return r;
	r = vfs_open_resolve(t, (int)args->a[0], p, (int)how.flags, (unsigned int)how.mode,
			     (unsigned int)how.resolve, &f);
	free(p);
	if (r < 0)
		return r;
	r = fdtable_install(t->fdt, f, 0, how.flags & O_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return r;
}

/* Record locks: F_GETLK/F_SETLK/F_SETLKW and the OFD forms, in the lock table (vfs/lock.h). */
long fcntl_lock(struct task *t, struct file *f, int cmd, uint64_t arg)
{
	struct vfs_flock fl;
	int err;

	if (mm_copy_in(t->mm, &fl, arg, sizeof(fl)) != sizeof(fl))
		return -EFAULT;
	err = vfs_fcntl_lock(t, f, cmd, &fl);
	if (err < 0)
		return err;
	if ((cmd == VFS_F_GETLK || cmd == VFS_F_OFD_GETLK) &&
	    mm_copy_out(t->mm, arg, &fl, sizeof(fl)) != sizeof(fl))
		return -EFAULT;
	return 0;
}

/* flock(2) */
long sys_flock(struct task *t, const struct syscall_args *args)
{
	struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	long r;

	if (!f || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH)) {
		file_put(f);
		return -EBADF;
	}
	r = vfs_flock(t, f, (int)args->a[1]);
	file_put(f);
	return r;
}
