/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mount(2), umount2(2), chroot(2), pivot_root(2): the sentry's own mount tree
 * (sentry/vfs/mount_user.c). No host mount is ever made: filesystems are the sentry's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/mqueue/mqueue.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
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
	/* Linux's shmem: the root is the mounter's (fsuid, fsgid) unless uid=/gid= say. */
	uint32_t mode = 01777, uid = t->cred.fsuid, gid = t->cred.fsgid;
	bool has_size = false, has_mode = false;
	char *save = NULL, *w;
	struct vfs_fs *fs;
	size_t n = 0;

	for (w = data ? strtok_r(data, ",", &save) : NULL; w; w = strtok_r(NULL, ",", &save)) {
		char *v = strchr(w, '=');
		int err = 0;

		if (v)
			*v++ = '\0';
		if (!strcmp(w, "size") && v && *v && v[strlen(v) - 1] == '%') {
			/* Linux's shmem: a percentage of the machine's memory, in whole pages. */
			struct sysinfo si;
			uint32_t pct;

			v[strlen(v) - 1] = '\0';
			err = parse_u32(v, 10, &pct);
			if (err == 0 && sysinfo(&si) == 0)
				size = ((uint64_t)si.totalram * si.mem_unit / 4096 * 4096 * pct /
						100 +
					4095) /
				       4096 * 4096;
			has_size = true;
		} else if (!strcmp(w, "size") && v) {
			err = tmpfs_parse_size(v, &size);
			has_size = true;
		} else if (!strcmp(w, "mode") && v) {
			err = parse_u32(v, 8, &mode);
			mode &= 07777;
			has_mode = true;
		} else if (!strcmp(w, "uid") && v) {
			/* An id of the caller's user namespace (EINVAL when unmapped). */
			err = parse_u32(v, 10, &uid);
			if (err == 0 && !task_uid_from(t, uid, &uid))
				err = -EINVAL;
		} else if (!strcmp(w, "gid") && v) {
			err = parse_u32(v, 10, &gid);
			if (err == 0 && !task_gid_from(t, gid, &gid))
				err = -EINVAL;
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
	/* Shown as the sandbox's ids (Linux: the initial namespace's), when not root's. */
	if (uid)
		n += (size_t)snprintf(opts + n, optsz - n, ",uid=%u", uid);
	if (gid)
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

/* The user namespace that owns what a proc mount shows: the owner of the caller's active pid
 * namespace, as Linux (so `unshare -Urm` alone may not mount proc; `unshare -Urpm` may). */
static struct user_ns *proc_owner(struct task *t)
{
	return task_active_pid_ns(t)->owner;
}

/* sysfs's: the owner of the caller's network namespace, as Linux. */
static struct user_ns *sysfs_owner(struct task *t)
{
	return task_nsproxy(t)->net->owner;
}

/* cgroup2's options: Linux's, accepted; the ones it shows go to opts. */
static const char *const cgroup2_opts_ok[] = { "nsdelegate", "memory_recursiveprot",
					       "memory_localevents", "favordynmods",
					       "memory_hugetlb_accounting" };

static void cgroup2_opts(const char *data, char *opts, size_t optsz)
{
	size_t off = 0;

	for (size_t i = 0; data && i < ARRAY_SIZE(cgroup2_opts_ok); i++) {
		const char *o = cgroup2_opts_ok[i], *p = data;
		size_t n = strlen(o);

		for (; (p = strstr(p, o)); p += n) {
			if ((p == data || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) {
				int w = snprintf(opts + off, optsz - off, "%s%s", off ? "," : "",
						 o);

				if (w > 0 && (size_t)w < optsz - off)
					off += (size_t)w;
				break;
			}
		}
	}
}

/*
 * Linux's mount_capable: the user namespace a new filesystem of type belongs to, in which the
 * caller needs CAP_SYS_ADMIN (Linux's FS_USERNS_MOUNT types: tmpfs, devpts, overlay, the caller's own;
 * mqueue, its IPC namespace's; proc and sysfs, above), or ERR_PTR(-EPERM). Other types need
 * CAP_SYS_ADMIN over the sandbox.
 */
static struct user_ns *mount_capable(struct task *t, const char *type)
{
	struct user_ns *u = NULL;

	if (!strcmp(type, "tmpfs") || !strcmp(type, "devpts") || !strcmp(type, "overlay"))
		u = task_nsproxy(t)->user;
	else if (!strcmp(type, "mqueue"))
		u = task_nsproxy(t)->ipc->owner;
	else if (!strcmp(type, "proc"))
		u = proc_owner(t);
	else if (!strcmp(type, "sysfs"))
		u = sysfs_owner(t);
	if (u && task_ns_capable(t, u, CAP_SYS_ADMIN))
		return u;
	if (cred_capable(&t->cred, CAP_SYS_ADMIN))
		return nsproxy_initial(t->k)->user;
	return ERR_PTR(-EPERM);
}

/*
 * Linux filesystems the sentry does not have that a user namespace may not mount: from inside
 * one they are EPERM, as Linux answers (the type exists there), not ENODEV.
 */
static bool linux_privileged_type(const char *type)
{
	static const char *const names[] = {
		"ext2",	      "ext3",	   "ext4",    "xfs",	  "btrfs",    "vfat",	 "msdos",
		"exfat",      "ntfs3",	   "iso9660", "udf",	  "squashfs", "erofs",	 "f2fs",
		"nfs",	      "nfs4",	   "cifs",    "smb3",	  "9p",	      "debugfs", "tracefs",
		"securityfs", "hugetlbfs", "pstore",  "configfs", "efivarfs", "autofs",	 "fuseblk",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(type, names[i]))
			return true;
	return false;
}

/* Sets fs's user namespace (Linux's s_user_ns) to u, unless it is the sandbox's. */
static struct vfs_fs *fs_owned(struct vfs_fs *fs, struct user_ns *u)
{
	if (!IS_ERR(fs) && u && u->level) {
		user_ns_get(u);
		fs->user_ns = u;
	}
	return fs;
}

/* A new proc, sysfs, devpts or mqueue filesystem; ERR_PTR(-ENODEV) for another type. */
static struct vfs_fs *make_pseudo_fs(struct task *t, const char *type, char *data, char *opts,
				     size_t optsz)
{
	static const char *const proc_opts[] = { "hidepid", "gid", "subset" };
	static const char *const devpts_opts[] = { "gid", "mode",	 "ptmxmode",
						   "uid", "newinstance", "max" };
	struct vfs_fs *fs;
	int err = 0;

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
	} else if (!strcmp(type, "cgroup2")) {
		cgroup2_opts(data, opts, optsz);
		err = check_options(data, cgroup2_opts_ok, ARRAY_SIZE(cgroup2_opts_ok));
		fs = err < 0 ? NULL : cgroupfs_create(t->k);
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

/* The next comma-separated option of *p (a backslash escapes a comma), or NULL at the end. */
static char *next_option(char **p)
{
	char *w = *p, *r = *p;

	if (!w || !*w)
		return NULL;
	for (; *r && *r != ','; r++)
		if (*r == '\\' && r[1])
			r++;
	*p = *r ? r + 1 : r;
	*r = '\0';
	return w;
}

#define OVL_MAX_LOWER 16

struct ovl_opts {
	char *lower, *upper, *work;
};

/*
 * overlayfs's options: lowerdir=, upperdir=, workdir= and the feature switches it takes (all
 * kept off: the sentry's overlay copies whole files up, has no index and no redirects).
 * -EINVAL for anything else.
 */
static int overlay_parse(char *data, struct ovl_opts *o)
{
	static const char *const switches[] = { "index",      "redirect_dir", "metacopy", "xino",
						"nfs_export", "uuid",	      "verity" };
	static const char *const words[] = { "userxattr", "volatile", "default_permissions" };
	char *p = data, *w;

	while ((w = next_option(&p))) {
		char *v = strchr(w, '=');
		bool ok = !v && generic_option(w);

		if (v)
			*v++ = '\0';
		if (v && !strcmp(w, "lowerdir"))
			o->lower = v, ok = true;
		else if (v && !strcmp(w, "upperdir"))
			o->upper = v, ok = true;
		else if (v && !strcmp(w, "workdir"))
			o->work = v, ok = true;
		for (size_t i = 0; v && !ok && i < ARRAY_SIZE(switches); i++)
			ok = !strcmp(w, switches[i]);
		for (size_t i = 0; !v && !ok && i < ARRAY_SIZE(words); i++)
			ok = !strcmp(w, words[i]);
		if (!ok || (v && !*v))
			return -EINVAL;
	}
	return o->lower ? 0 : -EINVAL;
}

/* Removes the backslashes of escaped characters in s, in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++)
		*d++ = (*s == '\\' && s[1]) ? *++s : *s;
	*d = '\0';
}

/* Looks up directory path (following symlinks) for an overlay layer into *out. */
static int overlay_dir(struct task *t, char *path, struct vfs_path *out)
{
	int err;

	unescape(path);
	if (!*path)
		return -EINVAL;
	err = vfs_lookup_at(t, AT_FDCWD, path, 0, out);
	if (err < 0)
		return err;
	if (!vfs_node_is_dir(out->node)) { /* overlayfs: "... is not a directory" */
		vfs_path_put(out);
		return -EINVAL;
	}
	return 0;
}

/*
 * A new overlay (mount -t overlay; the sentry's overlay, sentry/fs/overlay): lowerdir=A:B...
 * (a colon in a name escaped as "\:"), upperdir= and workdir= on one mount of a tmpfs (the
 * sentry's overlay keeps its marks there: another upper filesystem is -EINVAL), or no upperdir
 * and two lower directories or more (read-only). overlayfs's "work" directory is made in
 * workdir. opts receives the options as given.
 */
static struct vfs_fs *make_overlay(struct task *t, char *data, char *opts, size_t optsz)
{
	struct vfs_path lower[OVL_MAX_LOWER] = { 0 }, upper = { 0 }, work = { 0 };
	struct vfs_node *lnodes[OVL_MAX_LOWER];
	struct ovl_opts o = { 0 };
	struct vfs_fs *fs = ERR_PTR(-EINVAL);
	size_t n = 0;
	char *p, *c;
	int err;

	if (!data)
		return ERR_PTR(-EINVAL);
	snprintf(opts, optsz, "%s", data);
	err = overlay_parse(data, &o);
	if (err < 0)
		return ERR_PTR(err);
	if (o.upper && !o.work)
		return ERR_PTR(-EINVAL);
	if (!o.upper) {
		o.work = NULL; /* useless without an upper layer: overlayfs ignores it */
		snprintf(opts, optsz, "lowerdir=%s", o.lower);
	}
	for (p = o.lower; p; p = c) {
		for (c = p; *c && *c != ':'; c++)
			if (*c == '\\' && c[1])
				c++;
		if (*c)
			*c++ = '\0';
		else
			c = NULL;
		if (n == OVL_MAX_LOWER) {
			err = -EINVAL;
			goto out;
		}
		err = overlay_dir(t, p, &lower[n]);
		if (err < 0)
			goto out;
		lnodes[n] = lower[n].node;
		n++;
	}
	if (!o.upper && n < 2) {
		err = -EINVAL;
		goto out;
	}
	if (o.upper) {
		struct vfs_create_args a = { .mode = S_IFDIR, .uid = 0, .gid = 0 };
		struct vfs_node *wd;

		err = overlay_dir(t, o.upper, &upper);
		if (err == 0)
			err = overlay_dir(t, o.work, &work);
		if (err < 0)
			goto out;
		/* overlayfs: "workdir and upperdir must reside under the same mount", apart. */
		if (upper.mnt != work.mnt || upper.node == work.node) {
			err = -EINVAL;
			goto out;
		}
		if (work.node->ops->create &&
		    work.node->ops->create(work.node, "work", &a, &wd) == 0)
			vfs_node_put(wd);
	}
	fs = overlay_mount(lnodes, n, o.upper ? upper.node : NULL);
	err = 0;
out:
	for (size_t i = 0; i < n; i++)
		vfs_path_put(&lower[i]);
	if (upper.node)
		vfs_path_put(&upper);
	if (work.node)
		vfs_path_put(&work);
	return err < 0 ? ERR_PTR(err) : fs;
}

/*
 * The filesystem of a new mount of type, or ERR_PTR: -ENODEV for a type the sentry does not
 * have, -EINVAL for bad options, -EPERM when the caller may not mount it (mount_capable;
 * Linux parses the options first). opts receives the superblock options mountinfo shows.
 */
static struct vfs_fs *make_fs(struct task *t, const char *type, char *data, char *opts,
			      size_t optsz)
{
	struct user_ns *u = NULL;

	if (!cred_capable(&t->cred, CAP_SYS_ADMIN) && linux_privileged_type(type))
		return ERR_PTR(-EPERM);
	opts[0] = '\0';
	if (!strcmp(type, "tmpfs") || !strcmp(type, "overlay")) {
		u = mount_capable(t, type);
		if (IS_ERR(u))
			return ERR_PTR(PTR_ERR(u));
		if (type[0] == 'o')
			return fs_owned(make_overlay(t, data, opts, optsz), u);
		return fs_owned(make_tmpfs(t, data, opts, optsz), u);
	}
	if (!strcmp(type, "proc") || !strcmp(type, "sysfs") || !strcmp(type, "devpts") ||
	    !strcmp(type, "mqueue")) {
		u = mount_capable(t, type);
		if (IS_ERR(u))
			return ERR_PTR(PTR_ERR(u));
	}
	return fs_owned(make_pseudo_fs(t, type, data, opts, optsz), u);
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
	if (!vfs_may_mount(t))
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
		char opts[1024];
		struct vfs_fs *fs = make_fs(t, type, data, opts, sizeof(opts));
		long r;

		if (IS_ERR(fs))
			return PTR_ERR(fs);
		if (!strcmp(type, "cgroup2") && task_nsproxy(t)->cgroup->root) {
			/* In a cgroup namespace: the hierarchy from the namespace's root. */
			struct vfs_node *root = cgroupfs_node_of(fs, task_nsproxy(t)->cgroup->root);

			r = IS_ERR(root) ?
				    PTR_ERR(root) :
				    vfs_mount_new_root(t, at, fs, root, mflags, source, type, opts);
			if (!IS_ERR(root))
				vfs_node_put(root);
		} else {
			r = vfs_mount_new(t, at, fs, mflags, source, type, opts);
		}
		vfs_fs_put(fs);
		return r;
	}
}

/*
 * mount(2): the sentry's filesystems only (tmpfs, proc, sysfs, devpts, mqueue, cgroup2, overlay;
 * binds).
 */
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
	if (!vfs_may_mount(t))
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

	if (!vfs_may_mount(t))
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

/* --- the new mount API: open_tree, move_mount, fsopen, fsconfig, fsmount --- */

#define LINUX_OPEN_TREE_CLONE 1
#define LINUX_AT_RECURSIVE 0x8000
#define LINUX_MOVE_MOUNT_F_SYMLINKS 0x01
#define LINUX_MOVE_MOUNT_F_AUTOMOUNTS 0x02
#define LINUX_MOVE_MOUNT_F_EMPTY_PATH 0x04
#define LINUX_MOVE_MOUNT_T_SYMLINKS 0x10
#define LINUX_MOVE_MOUNT_T_AUTOMOUNTS 0x20
#define LINUX_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define LINUX_FSOPEN_CLOEXEC 1
#define LINUX_FSMOUNT_CLOEXEC 1
#define LINUX_FSCONFIG_SET_FLAG 0
#define LINUX_FSCONFIG_SET_STRING 1
#define LINUX_FSCONFIG_CMD_CREATE 6
#define LINUX_FSCONFIG_CMD_CREATE_EXCL 8
#define LINUX_MOUNT_ATTR_RDONLY 0x01
#define LINUX_MOUNT_ATTR_NOSUID 0x02
#define LINUX_MOUNT_ATTR_NODEV 0x04
#define LINUX_MOUNT_ATTR_NOEXEC 0x08
#define LINUX_MOUNT_ATTR__ATIME 0x70
#define LINUX_MOUNT_ATTR_NOATIME 0x10
#define LINUX_MOUNT_ATTR_STRICTATIME 0x20
#define LINUX_MOUNT_ATTR_NODIRATIME 0x80

/* Installs an O_PATH file on (mnt, node) (new references taken). Returns the fd or -errno. */
static long install_path_fd(struct task *t, struct vfs_mount *mnt, struct vfs_node *node,
			    bool cloexec)
{
	struct file *f = vfs_path_file_create(O_PATH);
	long r;

	if (!f)
		return -ENOMEM;
	f->mnt = mnt;
	vfs_mount_get(mnt);
	f->node = node;
	vfs_node_get(node);
	r = fdtable_install(t->fdt, f, 0, cloexec, task_nofile_limit(t));
	file_put(f);
	return r;
}

/* The path of (dfd, path) for the *at calls: empty paths only with empty_ok. */
static long lookup_at_arg(struct task *t, int dfd, uint64_t addr, bool empty_ok, bool follow,
			  struct vfs_path *out)
{
	char *path = copy_path_arg(t, addr);
	long r;

	if (IS_ERR(path))
		return PTR_ERR(path);
	r = vfs_lookup_at(t, dfd, path,
			  (empty_ok ? AT_EMPTY_PATH : 0) | (follow ? 0 : AT_SYMLINK_NOFOLLOW), out);
	free(path);
	return r;
}

/* open_tree(2): an O_PATH fd of the path, or with OPEN_TREE_CLONE of a detached copy of it. */
long sys_open_tree(struct task *t, const struct syscall_args *args)
{
	int dfd = (int)args->a[0];
	unsigned int flags = (unsigned int)args->a[2];
	struct vfs_mount *m;
	struct vfs_path p;
	long r;

	if (flags & ~(unsigned int)(AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_RECURSIVE |
				    AT_SYMLINK_NOFOLLOW | LINUX_OPEN_TREE_CLONE | O_CLOEXEC))
		return -EINVAL;
	if ((flags & (LINUX_AT_RECURSIVE | LINUX_OPEN_TREE_CLONE)) == LINUX_AT_RECURSIVE)
		return -EINVAL;
	if ((flags & LINUX_OPEN_TREE_CLONE) && !vfs_may_mount(t))
		return -EPERM;
	r = lookup_at_arg(t, dfd, args->a[1], flags & AT_EMPTY_PATH, !(flags & AT_SYMLINK_NOFOLLOW),
			  &p);
	if (r < 0)
		return r;
	if (!(flags & LINUX_OPEN_TREE_CLONE)) {
		r = install_path_fd(t, p.mnt, p.node, flags & O_CLOEXEC);
		vfs_path_put(&p);
		return r;
	}
	m = vfs_mount_clone_tree(t, &p, flags & LINUX_AT_RECURSIVE);
	vfs_path_put(&p);
	if (IS_ERR(m))
		return PTR_ERR(m);
	r = install_path_fd(t, m, m->root, flags & O_CLOEXEC);
	vfs_mount_put(m);
	return r;
}

#define LINUX_MOUNT_ATTR_IDMAP 0x00100000
#define LINUX_MOUNT_ATTR_NOSYMFOLLOW 0x00200000
#define LINUX_MOUNT_ATTR_SIZE_VER0 32

/* MOUNT_ATTR_RDONLY, NOSUID, NODEV, NOEXEC as MS_* flags. */
static int ms_flags_of_attr(uint64_t a)
{
	return (a & LINUX_MOUNT_ATTR_RDONLY ? MS_RDONLY : 0) |
	       (a & LINUX_MOUNT_ATTR_NOSUID ? MS_NOSUID : 0) |
	       (a & LINUX_MOUNT_ATTR_NODEV ? MS_NODEV : 0) |
	       (a & LINUX_MOUNT_ATTR_NOEXEC ? MS_NOEXEC : 0);
}

/*
 * mount_setattr(2): the flags, atime choice and propagation of a mount (AT_RECURSIVE: and its
 * submounts). MOUNT_ATTR_IDMAP (idmapped mounts) and NOSYMFOLLOW: EINVAL; NODIRATIME is taken
 * and not kept (the sentry keeps no directory atimes apart).
 */
long sys_mount_setattr(struct task *t, const struct syscall_args *args)
{
	const uint64_t valid = LINUX_MOUNT_ATTR_RDONLY | LINUX_MOUNT_ATTR_NOSUID |
			       LINUX_MOUNT_ATTR_NODEV | LINUX_MOUNT_ATTR_NOEXEC |
			       LINUX_MOUNT_ATTR__ATIME | LINUX_MOUNT_ATTR_NODIRATIME |
			       LINUX_MOUNT_ATTR_IDMAP | LINUX_MOUNT_ATTR_NOSYMFOLLOW;
	unsigned int flags = (unsigned int)args->a[2];
	size_t size = (size_t)args->a[4];
	uint64_t a[4] = { 0 }; /* attr_set, attr_clr, propagation, userns_fd */
	int atime = 0, prop;
	struct vfs_path p;
	long r;

	if (flags &
	    ~(unsigned int)(AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW))
		return -EINVAL;
	if (size < LINUX_MOUNT_ATTR_SIZE_VER0)
		return -EINVAL;
	if (size > 4096)
		return -E2BIG;
	if (mm_copy_in(t->mm, a, args->a[3], sizeof(a)) != sizeof(a))
		return -EFAULT;
	/* A larger struct of a newer caller: its extra bytes must be zero (copy_struct_from_user). */
	for (size_t off = sizeof(a); off < size; off++) {
		uint8_t b;

		if (mm_copy_in(t->mm, &b, args->a[3] + off, 1) != 1)
			return -EFAULT;
		if (b)
			return -E2BIG;
	}
	if ((a[0] | a[1]) & ~valid)
		return -EINVAL;
	prop = (int)a[2];
	if (a[2] & ~(uint64_t)(MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE) ||
	    (prop & (prop - 1)))
		return -EINVAL;
	/* The atime values are an enum: changing it takes MOUNT_ATTR__ATIME in attr_clr. */
	if (a[1] & LINUX_MOUNT_ATTR__ATIME) {
		if ((a[1] & LINUX_MOUNT_ATTR__ATIME) != LINUX_MOUNT_ATTR__ATIME)
			return -EINVAL;
		switch (a[0] & LINUX_MOUNT_ATTR__ATIME) {
		case 0:
			atime = MS_RELATIME;
			break;
		case LINUX_MOUNT_ATTR_NOATIME:
			atime = MS_NOATIME;
			break;
		case LINUX_MOUNT_ATTR_STRICTATIME:
			atime = MS_STRICTATIME;
			break;
		default:
			return -EINVAL;
		}
	} else if (a[0] & LINUX_MOUNT_ATTR__ATIME) {
		return -EINVAL;
	}
	if ((a[0] | a[1]) & (LINUX_MOUNT_ATTR_IDMAP | LINUX_MOUNT_ATTR_NOSYMFOLLOW))
		return -EINVAL;
	if (!a[0] && !a[1] && !a[2])
		return 0; /* nothing to do: Linux does not look the path up */
	if (!vfs_may_mount(t))
		return -EPERM;
	r = lookup_at_arg(t, (int)args->a[0], args->a[1], flags & AT_EMPTY_PATH,
			  !(flags & AT_SYMLINK_NOFOLLOW), &p);
	if (r < 0)
		return r;
	r = vfs_mount_setattr(t, &p, ms_flags_of_attr(a[0]), ms_flags_of_attr(a[1]), atime, prop,
			      flags & LINUX_AT_RECURSIVE);
	vfs_path_put(&p);
	return r;
}

/* move_mount(2): attaches a detached tree (open_tree, fsmount) or moves a mount. */
long sys_move_mount(struct task *t, const struct syscall_args *args)
{
	unsigned int flags = (unsigned int)args->a[4];
	struct vfs_path from, to;
	long r;

	if (flags & ~(unsigned int)(LINUX_MOVE_MOUNT_F_SYMLINKS | LINUX_MOVE_MOUNT_F_AUTOMOUNTS |
				    LINUX_MOVE_MOUNT_F_EMPTY_PATH | LINUX_MOVE_MOUNT_T_SYMLINKS |
				    LINUX_MOVE_MOUNT_T_AUTOMOUNTS | LINUX_MOVE_MOUNT_T_EMPTY_PATH))
		return -EINVAL;
	if (!vfs_may_mount(t))
		return -EPERM;
	r = lookup_at_arg(t, (int)args->a[0], args->a[1], flags & LINUX_MOVE_MOUNT_F_EMPTY_PATH,
			  flags & LINUX_MOVE_MOUNT_F_SYMLINKS, &from);
	if (r < 0)
		return r;
	r = lookup_at_arg(t, (int)args->a[2], args->a[3], flags & LINUX_MOVE_MOUNT_T_EMPTY_PATH,
			  flags & LINUX_MOVE_MOUNT_T_SYMLINKS, &to);
	if (r < 0)
		goto out_put_from;
	if (from.mnt->anon_tree && from.node == from.mnt->root)
		r = vfs_mount_attach_tree(t, from.mnt, &to);
	else
		r = vfs_mount_move(t, &from, &to);
	vfs_path_put(&to);
out_put_from:
	vfs_path_put(&from);
	return r;
}

/* An fsopen(2) file's state: the type, then options and source, then the filesystem. */
struct fs_ctx {
	pthread_mutex_t lock;
	char type[16];
	char *source;
	char data[MOUNT_PAGE];
	size_t len;
	struct vfs_fs *fs; /* referenced once CMD_CREATE made it */
	char opts[1024]; /* what mountinfo shows of it */
	bool mounted; /* fsmount took it */
};

static void fs_ctx_release(struct file *f)
{
	struct fs_ctx *c = f->priv;

	if (c->fs)
		vfs_fs_put(c->fs);
	free(c->source);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static ssize_t fs_ctx_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return -ENODATA; /* no messages are kept */
}

static const struct file_ops fs_ctx_ops = {
	.read = fs_ctx_read,
	.release = fs_ctx_release,
};

/* fsopen(2): the sentry's filesystems (tmpfs, proc, sysfs, devpts, mqueue, cgroup2, overlay). */
long sys_fsopen(struct task *t, const struct syscall_args *args)
{
	static const char *const known[] = { "tmpfs",  "proc",	  "sysfs",  "devpts",
					     "mqueue", "cgroup2", "overlay" };
	unsigned int flags = (unsigned int)args->a[1];
	struct fs_ctx *c;
	struct file *f;
	char *name;
	bool ok = false;
	long r;

	if (!vfs_may_mount(t))
		return -EPERM;
	if (flags & ~LINUX_FSOPEN_CLOEXEC)
		return -EINVAL;
	name = copy_mount_string(t, args->a[0], false);
	if (!name)
		return -EFAULT;
	if (IS_ERR(name))
		return PTR_ERR(name);
	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		ok |= !strcmp(name, known[i]);
	if (!ok) {
		free(name);
		return -ENODEV;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		free(name);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	snprintf(c->type, sizeof(c->type), "%s", name);
	free(name);
	f = file_alloc(&fs_ctx_ops, O_RDWR, c);
	if (!f) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return -ENOMEM;
	}
	r = fdtable_install(t->fdt, f, 0, flags & LINUX_FSOPEN_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return r;
}

/* The fs context behind fd, with a reference on its file in *fp; ERR_PTR(-EBADF/-EINVAL). */
static struct fs_ctx *fs_ctx_get(struct task *t, int fd, struct file **fp)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->ops != &fs_ctx_ops) {
		file_put(f);
		return ERR_PTR(-EINVAL);
	}
	*fp = f;
	return f->priv;
}

/* Appends "key" or "key=value" to the options. */
static int fs_ctx_add(struct fs_ctx *c, const char *key, const char *value)
{
	int n = snprintf(c->data + c->len, sizeof(c->data) - c->len, "%s%s%s%s", c->len ? "," : "",
			 key, value ? "=" : "", value ? value : "");

	if (n < 0 || (size_t)n >= sizeof(c->data) - c->len)
		return -EINVAL;
	c->len += (size_t)n;
	return 0;
}

/* fsconfig(2): SET_FLAG, SET_STRING ("source" and options) and CMD_CREATE only. */
long sys_fsconfig(struct task *t, const struct syscall_args *args)
{
	unsigned int cmd = (unsigned int)args->a[1];
	char *key = NULL, *value = NULL;
	struct file *f;
	struct fs_ctx *c;
	long r = 0;

	if ((int)args->a[4] != 0 && cmd != 5 /* SET_FD */ && cmd != 3 && cmd != 4)
		return -EINVAL;
	c = fs_ctx_get(t, (int)args->a[0], &f);
	if (IS_ERR(c))
		return PTR_ERR(c);
	pthread_mutex_lock(&c->lock);
	switch (cmd) {
	case LINUX_FSCONFIG_SET_FLAG:
	case LINUX_FSCONFIG_SET_STRING:
		key = copy_mount_string(t, args->a[2], false);
		if (!key || IS_ERR(key)) {
			r = key ? PTR_ERR(key) : -EINVAL;
			key = NULL;
			break;
		}
		if (cmd == LINUX_FSCONFIG_SET_FLAG) {
			if (args->a[3]) {
				r = -EINVAL;
				break;
			}
		} else {
			value = copy_mount_string(t, args->a[3], false);
			if (!value || IS_ERR(value)) {
				r = value ? PTR_ERR(value) : -EINVAL;
				value = NULL;
				break;
			}
		}
		if (c->fs) {
			r = -EBUSY;
		} else if (!strcmp(key, "source") && value) {
			free(c->source);
			c->source = value;
			value = NULL;
		} else {
			r = fs_ctx_add(c, key, value);
		}
		break;
	case LINUX_FSCONFIG_CMD_CREATE:
	case LINUX_FSCONFIG_CMD_CREATE_EXCL: {
		char data[MOUNT_PAGE];
		struct vfs_fs *fs;

		if (c->fs) {
			r = -EBUSY;
			break;
		}
		memcpy(data, c->data, c->len + 1);
		fs = make_fs(t, c->type, c->len ? data : NULL, c->opts, sizeof(c->opts));
		if (IS_ERR(fs))
			r = PTR_ERR(fs);
		else
			c->fs = fs;
		break;
	}
	case 2: /* SET_BINARY */
	case 3: /* SET_PATH */
	case 4: /* SET_PATH_EMPTY */
	case 5: /* SET_FD */
	case 7: /* CMD_RECONFIGURE */
		r = -EOPNOTSUPP;
		break;
	default:
		r = -EOPNOTSUPP;
	}
	pthread_mutex_unlock(&c->lock);
	free(key);
	free(value);
	file_put(f);
	return r;
}

/* fsmount(2): a detached mount of the context's filesystem, as an O_PATH fd. */
long sys_fsmount(struct task *t, const struct syscall_args *args)
{
	unsigned int flags = (unsigned int)args->a[1], attr = (unsigned int)args->a[2];
	const unsigned int known = LINUX_MOUNT_ATTR_RDONLY | LINUX_MOUNT_ATTR_NOSUID |
				   LINUX_MOUNT_ATTR_NODEV | LINUX_MOUNT_ATTR_NOEXEC |
				   LINUX_MOUNT_ATTR__ATIME | LINUX_MOUNT_ATTR_NODIRATIME;
	struct vfs_mount *m;
	struct fs_ctx *c;
	struct file *f;
	int mflags = 0;
	long r;

	if (!vfs_may_mount(t))
		return -EPERM;
	if ((flags & ~LINUX_FSMOUNT_CLOEXEC) || (attr & ~known))
		return -EINVAL;
	switch (attr & LINUX_MOUNT_ATTR__ATIME) {
	case 0:
		break;
	case LINUX_MOUNT_ATTR_NOATIME:
		mflags |= MS_NOATIME;
		break;
	case LINUX_MOUNT_ATTR_STRICTATIME:
		mflags |= MS_STRICTATIME;
		break;
	default:
		return -EINVAL;
	}
	mflags |= (attr & LINUX_MOUNT_ATTR_RDONLY ? MS_RDONLY : 0) |
		  (attr & LINUX_MOUNT_ATTR_NOSUID ? MS_NOSUID : 0) |
		  (attr & LINUX_MOUNT_ATTR_NODEV ? MS_NODEV : 0) |
		  (attr & LINUX_MOUNT_ATTR_NOEXEC ? MS_NOEXEC : 0);
	c = fs_ctx_get(t, (int)args->a[0], &f);
	if (IS_ERR(c))
		return PTR_ERR(c);
	pthread_mutex_lock(&c->lock);
	if (!c->fs || c->mounted) {
		r = c->mounted ? -EBUSY : -EINVAL; /* Linux: no root yet; not awaiting a mount */
		pthread_mutex_unlock(&c->lock);
		file_put(f);
		return r;
	}
	m = vfs_mount_detached(c->fs, mflags, c->source, c->type, c->opts);
	if (!IS_ERR(m))
		c->mounted = true;
	pthread_mutex_unlock(&c->lock);
	file_put(f);
	if (IS_ERR(m))
		return PTR_ERR(m);
	r = install_path_fd(t, m, m->root, flags & LINUX_FSMOUNT_CLOEXEC);
	vfs_mount_put(m);
	return r;
}
