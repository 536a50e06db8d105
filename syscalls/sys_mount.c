/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mount(2), umount2(2), chroot(2), pivot_root(2): the sentry's own mount tree
 * (sentry/vfs/mount_user.c). No host mount is ever made: filesystems are the sentry's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/mqueue/mqueue.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/mount_user.h"
#include "syscalls/handlers.h"

#define MOUNT_PAGE 4096

/* A path argument (NUL-terminated, PATH_MAX). Returns a new string or ERR_PTR(-errno). */
static char *copy_path_arg(struct task *t, uint64_t addr)
{
	char *s = malloc(VFS_PATH_MAX);
	long r;

	if (!s)
		return ERR_PTR(-ENOMEM);
	r = mm_copy_in_string(t->mm, s, addr, VFS_PATH_MAX);
	if (r < 0) {
		free(s);
		return ERR_PTR(r);
	}
	return s;
}

/* chroot(2) */
long sys_chroot(struct task *t, const struct syscall_args *args)
{
	char *path = copy_path_arg(t, args->a[0]);
	long r;

	if (IS_ERR(path))
		return PTR_ERR(path);
	r = vfs_chroot(t, path);
	free(path);
	return r;
}

/* A mount string (type, source, data: at most a page). NULL for a NULL address. */
static char *copy_mount_string(struct task *t, uint64_t addr, bool data)
{
	char *s;
	long r;

	if (!addr)
		return NULL;
	s = malloc(MOUNT_PAGE);
	if (!s)
		return ERR_PTR(-ENOMEM);
	r = mm_copy_in_string(t->mm, s, addr, MOUNT_PAGE);
	/* Options are a page of bytes, not a string: a longer one is cut, as Linux's. */
	if (r == -ENAMETOOLONG && data) {
		s[MOUNT_PAGE - 1] = '\0';
		r = 0;
	}
	if (r < 0) {
		free(s);
		return ERR_PTR(r == -ENAMETOOLONG ? -EINVAL : r);
	}
	return s;
}

/* The per-mount flags of mount(2)'s flags (MS_RDONLY... and the atime choice). */
static int mnt_flags_of(unsigned long flags)
{
	return (int)(flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME |
			      MS_STRICTATIME | MS_RELATIME | MS_NODIRATIME));
}

/* Whether w is a superblock flag word every filesystem takes (Linux's vfs_parse_sb_flag). */
static bool generic_option(const char *w)
{
	static const char *const words[] = { "ro",	"rw",	    "sync",	  "async",
					     "dirsync", "lazytime", "nolazytime", "mand",
					     "nomand",	"posixacl", "silent",	  "loud" };

	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (!strcmp(w, words[i]))
			return true;
	return false;
}

static int parse_u32(const char *s, int base, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, base);
	if (!*s || *end || errno || v > 0xffffffffUL)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* tmpfs: size=, mode=, uid=, gid=, nr_inodes= (accepted), inode32/64, huge=. */
static struct vfs_fs *make_tmpfs(struct task *t, char *data, char *opts, size_t optsz)
{
	uint64_t size = 0;
	uint32_t mode = 01777, uid = 0, gid = 0;
	bool has_size = false, has_uid = false, has_gid = false, has_mode = false;
	char *save = NULL, *w;
	struct vfs_fs *fs;
	size_t n = 0;

	for (w = data ? strtok_r(data, ",", &save) : NULL; w; w = strtok_r(NULL, ",", &save)) {
		char *v = strchr(w, '=');
		int err = 0;

		if (v)
			*v++ = '\0';
		if (!strcmp(w, "size") && v) {
			err = tmpfs_parse_size(v, &size);
			has_size = true;
		} else if (!strcmp(w, "mode") && v) {
			err = parse_u32(v, 8, &mode);
			mode &= 07777;
			has_mode = true;
		} else if (!strcmp(w, "uid") && v) {
			err = parse_u32(v, 10, &uid);
			has_uid = true;
		} else if (!strcmp(w, "gid") && v) {
			err = parse_u32(v, 10, &gid);
			has_gid = true;
		} else if ((!strcmp(w, "nr_inodes") || !strcmp(w, "huge") || !strcmp(w, "mpol")) &&
			   v) {
			/* Accepted, not enforced. */
		} else if (!v && (!strcmp(w, "inode32") || !strcmp(w, "inode64") ||
				  !strcmp(w, "noswap") || generic_option(w))) {
		} else {
			err = -EINVAL;
		}
		if (err < 0)
			return ERR_PTR(-EINVAL);
	}
	/* What Linux's shmem_show_options shows: what differs from the defaults. */
	opts[0] = '\0';
	if (has_size && size)
		n += (size_t)snprintf(opts + n, optsz - n, ",size=%" PRIu64 "k", size / 1024);
	if (has_mode && mode != 01777)
		n += (size_t)snprintf(opts + n, optsz - n, ",mode=%03o", mode);
	if (has_uid && uid)
		n += (size_t)snprintf(opts + n, optsz - n, ",uid=%u", uid);
	if (has_gid && gid)
		n += (size_t)snprintf(opts + n, optsz - n, ",gid=%u", gid);
	if (n)
		memmove(opts, opts + 1, n);
	fs = tmpfs_create(&t->k->mf, size, mode, uid, gid);
	return fs ? fs : ERR_PTR(-ENOMEM);
}

/* Checks a pseudo filesystem's options: its own words (mode=, gid=...) and the generic ones. */
static int check_options(char *data, const char *const *own, size_t nown)
{
	char *save = NULL, *w;

	for (w = data ? strtok_r(data, ",", &save) : NULL; w; w = strtok_r(NULL, ",", &save)) {
		char *v = strchr(w, '=');
		bool ok = !v && generic_option(w);

		if (v)
			*v = '\0';
		for (size_t i = 0; i < nown && !ok; i++)
			ok = !strcmp(w, own[i]);
		if (!ok)
			return -EINVAL;
	}
	return 0;
}

/*
 * The filesystem of a new mount of type, or ERR_PTR: -ENODEV for a type the sentry does not
 * have. opts receives the superblock options mountinfo shows.
 */
static struct vfs_fs *make_fs(struct task *t, const char *type, char *data, char *opts,
			      size_t optsz)
{
	static const char *const proc_opts[] = { "hidepid", "gid", "subset" };
	static const char *const devpts_opts[] = { "gid", "mode",	 "ptmxmode",
						   "uid", "newinstance", "max" };
	struct vfs_fs *fs;
	int err = 0;

	opts[0] = '\0';
	if (!strcmp(type, "tmpfs"))
		return make_tmpfs(t, data, opts, optsz);
	if (!strcmp(type, "proc")) {
		err = check_options(data, proc_opts, ARRAY_SIZE(proc_opts));
		fs = err < 0 ? NULL : procfs_create(t->k);
	} else if (!strcmp(type, "sysfs")) {
		err = check_options(data, NULL, 0);
		fs = err < 0 ? NULL : sysfs_create(t->k);
	} else if (!strcmp(type, "devpts")) {
		err = check_options(data, devpts_opts, ARRAY_SIZE(devpts_opts));
		fs = err < 0 ? NULL : devpts_create();
		snprintf(opts, optsz, "mode=600,ptmxmode=000");
	} else if (!strcmp(type, "mqueue")) {
		err = check_options(data, NULL, 0);
		fs = err < 0 ? NULL : mqueuefs_create();
	} else {
		return ERR_PTR(-ENODEV);
	}
	if (err < 0)
		return ERR_PTR(err);
	return fs ? fs : ERR_PTR(-ENOMEM);
}

/* mount(2) with the strings copied in and the target resolved (Linux's path_mount). */
static long do_mount(struct task *t, const char *source, const struct vfs_path *at,
		     const char *type, unsigned long flags, char *data)
{
	int mflags;

	if ((flags & 0xffff0000UL) == 0xC0ED0000UL) /* MS_MGC_VAL */
		flags &= ~0xffff0000UL;
	if (flags & MS_NOUSER)
		return -EINVAL;
	if (!cred_capable(&t->cred, CAP_SYS_ADMIN))
		return -EPERM;
	mflags = mnt_flags_of(flags);
	if ((flags & (MS_REMOUNT | MS_BIND)) == (MS_REMOUNT | MS_BIND))
		return vfs_mount_remount(t, at, mflags, true);
	if (flags & MS_REMOUNT)
		return vfs_mount_remount(t, at, mflags, false);
	if (flags & (MS_BIND | MS_MOVE)) {
		struct vfs_path src;
		long r;

		if (!source || !*source)
			return -EINVAL;
		r = vfs_lookup_at(t, AT_FDCWD, source, 0, &src);
		if (r < 0)
			return r;
		if (flags & MS_BIND)
			r = vfs_mount_bind(t, &src, at, flags & MS_REC);
		else
			r = vfs_mount_move(t, &src, at);
		vfs_path_put(&src);
		return r;
	}
	if (flags & (MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE)) {
		unsigned long type_bits = flags & ~(MS_REC | MS_SILENT);

		/* One propagation type and nothing else (Linux's flags_to_propagation_type). */
		if (type_bits & (type_bits - 1))
			return -EINVAL;
		if (type_bits & ~(unsigned long)(MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE))
			return -EINVAL;
		return vfs_mount_change_type(t, at, (int)type_bits, flags & MS_REC);
	}
	if (!type)
		return -EINVAL;
	{
		char opts[128];
		struct vfs_fs *fs = make_fs(t, type, data, opts, sizeof(opts));
		long r;

		if (IS_ERR(fs))
			return PTR_ERR(fs);
		r = vfs_mount_new(t, at, fs, mflags, source, type, opts);
		vfs_fs_put(fs);
		return r;
	}
}

/* mount(2): the sentry's filesystems only (tmpfs, proc, sysfs, devpts, mqueue; binds). */
long sys_mount(struct task *t, const struct syscall_args *args)
{
	char *type = NULL, *source = NULL, *data = NULL, *target;
	struct vfs_path at;
	long r;

	type = copy_mount_string(t, args->a[2], false);
	if (IS_ERR(type))
		return PTR_ERR(type);
	source = copy_mount_string(t, args->a[0], false);
	if (IS_ERR(source)) {
		r = PTR_ERR(source);
		source = NULL;
		goto out_free;
	}
	data = copy_mount_string(t, args->a[4], true);
	if (IS_ERR(data)) {
		r = PTR_ERR(data);
		data = NULL;
		goto out_free;
	}
	target = copy_path_arg(t, args->a[1]);
	if (IS_ERR(target)) {
		r = PTR_ERR(target);
		goto out_free;
	}
	r = vfs_lookup_at(t, AT_FDCWD, target, 0, &at);
	free(target);
	if (r == 0) {
		r = do_mount(t, source, &at, type, args->a[3], data);
		vfs_path_put(&at);
	}
out_free:
	free(type);
	free(source);
	free(data);
	return r;
}

/* umount2(2); the caller's root without MNT_DETACH is EBUSY (Linux remounts it read-only). */
long sys_umount2(struct task *t, const struct syscall_args *args)
{
	int flags = (int)args->a[1];
	char *target;
	struct vfs_path p;
	long r;

	if (flags & ~(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW))
		return -EINVAL;
	target = copy_path_arg(t, args->a[0]);
	if (IS_ERR(target))
		return PTR_ERR(target);
	r = vfs_lookup_at(t, AT_FDCWD, target, (flags & UMOUNT_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0,
			  &p);
	free(target);
	if (r < 0)
		return r;
	/* Linux's LOOKUP_MOUNTPOINT: the top mount at the last name, "." included. */
	vfs_path_follow_mounts(&p);
	if (!cred_capable(&t->cred, CAP_SYS_ADMIN))
		r = -EPERM;
	else
		r = vfs_umount(t, &p, flags);
	vfs_path_put(&p);
	return r;
}

/* pivot_root(2); the sandbox's own root (its tree's top) is Linux's rootfs: EINVAL. */
long sys_pivot_root(struct task *t, const struct syscall_args *args)
{
	char *nr, *po;
	struct vfs_path np, op;
	long r;

	if (!cred_capable(&t->cred, CAP_SYS_ADMIN))
		return -EPERM;
	nr = copy_path_arg(t, args->a[0]);
	if (IS_ERR(nr))
		return PTR_ERR(nr);
	po = copy_path_arg(t, args->a[1]);
	if (IS_ERR(po)) {
		free(nr);
		return PTR_ERR(po);
	}
	r = vfs_lookup_at(t, AT_FDCWD, nr, 0, &np);
	if (r < 0)
		goto out_free;
	r = vfs_lookup_at(t, AT_FDCWD, po, 0, &op);
	if (r < 0)
		goto out_put_new;
	r = vfs_pivot_root(t, &np, &op);
	vfs_path_put(&op);
out_put_new:
	vfs_path_put(&np);
out_free:
	free(nr);
	free(po);
	return r;
}
