/* SPDX-License-Identifier: Apache-2.0 */
/* config.json's mounts and devices as the guest sees them: see guestview.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/mqueue/mqueue.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/guestview.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/fs.h"

#define GV_MAX_FIELDS 8
#define GV_MAX_RULES 256

/* arg split at ':' into at most max %-decoded fields (owned by *f). Returns the count or -errno. */
struct gv_fields {
	char *v[GV_MAX_FIELDS];
	int n;
};

static void fields_free(struct gv_fields *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->v[i]);
	f->n = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int fields_split(const char *arg, struct gv_fields *f)
{
	f->n = 0;
	for (;;) {
		const char *end = strchrnul(arg, ':');
		size_t len = (size_t)(end - arg), j = 0;
		char *s;

		if (f->n == GV_MAX_FIELDS) {
			fields_free(f);
			return -EINVAL;
		}
		s = malloc(len + 1);
		if (!s) {
			fields_free(f);
			return -ENOMEM;
		}
		for (size_t i = 0; i < len; i++) {
			if (arg[i] == '%') {
				int hi = i + 2 < len ? hexval(arg[i + 1]) : -1;
				int lo = i + 2 < len ? hexval(arg[i + 2]) : -1;

				if (hi < 0 || lo < 0) {
					free(s);
					fields_free(f);
					return -EINVAL;
				}
				s[j++] = (char)(hi * 16 + lo);
				i += 2;
			} else {
				s[j++] = arg[i];
			}
		}
		s[j] = '\0';
		f->v[f->n++] = s;
		if (!*end)
			return f->n;
		arg = end + 1;
	}
}

/* --- special mounts --- */

static int parse_size_mode(struct gv_fields *f, int from, uint64_t *size, uint32_t *mode)
{
	for (int i = from; i < f->n; i++) {
		char *end;

		if (!strncmp(f->v[i], "size=", 5)) {
			if (tmpfs_parse_size(f->v[i] + 5, size) < 0)
				return -EINVAL;
		} else if (!strncmp(f->v[i], "mode=", 5)) {
			unsigned long m = strtoul(f->v[i] + 5, &end, 8);

			if (end == f->v[i] + 5 || *end || m > 07777)
				return -EINVAL;
			*mode = (uint32_t)m;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

bool guestview_special_is(const char *arg, const char *type)
{
	size_t l = strlen(type);

	return !strncmp(arg, type, l) && arg[l] == ':';
}

int guestview_mount_special(struct kernel *k, const char *arg, char **path)
{
	struct gv_fields f;
	struct vfs_fs *fs = NULL;
	uint64_t size = 64ULL << 20;
	uint32_t mode = 0755;
	const char *type, *dest;
	int err = fields_split(arg, &f);

	if (err < 0)
		return err;
	if (f.n < 2 || f.v[1][0] != '/') {
		err = -EINVAL;
		goto out;
	}
	type = f.v[0];
	dest = f.v[1];
	*path = strdup(dest);
	if (!*path) {
		err = -ENOMEM;
		goto out;
	}
	if (!strcmp(type, "dev")) {
		err = parse_size_mode(&f, 2, &size, &mode);
		if (err == 0)
			fs = devfs_create(k, size, mode);
	} else if (f.n != 2) {
		err = -EINVAL;
	} else if (!strcmp(type, "proc")) {
		fs = procfs_create(k);
	} else if (!strcmp(type, "sysfs")) {
		fs = sysfs_create(k);
	} else if (!strcmp(type, "devpts")) {
		fs = devpts_create();
	} else if (!strcmp(type, "mqueue")) {
		fs = mqueuefs_create();
	} else if (!strcmp(type, "cgroup")) {
		/* The sandbox's own cgroup that the sysfs shows (sentry/fs/sys), bound there. */
		fs = sysfs_create(k);
	} else {
		err = -EINVAL;
	}
	if (err < 0)
		goto out;
	if (!fs) {
		err = -ENOMEM;
		goto out;
	}
	if (!strcmp(type, "cgroup"))
		/* The sandbox's own cgroup that the sysfs shows at fs/cgroup (sentry/fs/sys). */
		err = vfs_mount_subtree_at(k, dest, fs, "fs/cgroup",
					   MS_NOSUID | MS_NODEV | MS_NOEXEC);
	else
		err = vfs_mount_at(k, dest, fs, MS_NOSUID | MS_NODEV | MS_NOEXEC);
	vfs_fs_put(fs);
out:
	fields_free(&f);
	return err;
}

/* The default /dev's mounts as mountinfo shows them (husk do). */
static const struct default_label {
	const char *path, *source, *fstype, *super_opts;
} default_labels[] = {
	{ "/dev", "tmpfs", "tmpfs", "size=65536k,mode=755" },
	{ "/dev/shm", "shm", "tmpfs", "size=65536k" },
	{ "/dev/pts", "devpts", "devpts", "gid=5,mode=620,ptmxmode=666" },
	{ "/dev/mqueue", "mqueue", "mqueue", "" },
};

int guestview_default_mounts(struct kernel *k)
{
	struct vfs_path root, dev;
	struct vfs_fs *fs;
	bool have_dev;
	int err;

	vfs_kernel_root(k, &root);
	/* Only when /dev is the sentry's (the root has a /dev directory). */
	if (!root.mnt || vfs_lookup_one(&root, "dev", &dev) < 0)
		return 0;
	have_dev = vfs_node_is_dir(dev.node) && dev.mnt != root.mnt;
	vfs_path_put(&dev);
	if (!have_dev)
		return 0;
	fs = mqueuefs_create();
	if (!fs)
		return -ENOMEM;
	err = vfs_mount_at(k, "/dev/mqueue", fs, MS_NOSUID | MS_NODEV | MS_NOEXEC);
	vfs_fs_put(fs);
	if (err < 0)
		return err;
	/* What mountinfo shows of them: the sources and options a runc container's have. */
	for (size_t i = 0; i < ARRAY_SIZE(default_labels); i++) {
		const struct default_label *d = &default_labels[i];
		struct vfs_mount_label *l = calloc(1, sizeof(*l));

		if (!l)
			return -ENOMEM;
		l->source = strdup(d->source);
		l->fstype = strdup(d->fstype);
		l->atime = strdup("relatime");
		l->super_opts = strdup(d->super_opts);
		l->root = strdup("/");
		if (!l->source || !l->fstype || !l->atime || !l->super_opts || !l->root) {
			vfs_mount_label_free(l);
			return -ENOMEM;
		}
		err = vfs_mount_set_label(k, d->path, l, -1);
		if (err < 0 && err != -ENOENT && err != -EINVAL)
			return err;
	}
	return 0;
}

int guestview_console(struct kernel *k)
{
	struct vfs_create_args a = { .mode = S_IFCHR | 0620,
				     .gid = 5,
				     .rdev = vfs_mkdev(TTYAUX_MAJOR, 1) };
	int err = devfs_set_console(0);

	if (err < 0)
		return err;
	err = vfs_make_node(k, "/dev/console", &a);
	/* No /dev, or one that has it: nothing to make. */
	return err == -EEXIST || err == -EROFS || err == -ENOENT ? 0 : err;
}

/* --- labels --- */

/* The MS_* flags and the atime word of a per-mount options string. */
static int parse_opts(const char *opts, int *flags, const char **atime)
{
	static const struct {
		const char *name;
		int flag;
	} words[] = { { "ro", MS_RDONLY },
		      { "nosuid", MS_NOSUID },
		      { "nodev", MS_NODEV },
		      { "noexec", MS_NOEXEC },
		      { "rw", 0 } };
	const char *p = opts;

	*flags = 0;
	*atime = "";
	while (*p) {
		const char *end = strchrnul(p, ',');
		size_t len = (size_t)(end - p);
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
			if (len == strlen(words[i].name) && !strncmp(p, words[i].name, len)) {
				*flags |= words[i].flag;
				known = true;
			}
		}
		if (!known) {
			if (len == 8 && !strncmp(p, "relatime", 8))
				*atime = "relatime";
			else if (len == 7 && !strncmp(p, "noatime", 7))
				*atime = "noatime";
			else
				return -EINVAL;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int label_parse(const char *arg, struct gv_fields *f, int *flags, const char **atime)
{
	int err = fields_split(arg, f);

	if (err < 0)
		return err;
	if (f->n != 6 || f->v[0][0] != '/' || parse_opts(f->v[1], flags, atime) < 0 ||
	    (strncmp(f->v[4], "rw", 2) && strncmp(f->v[4], "ro", 2)) ||
	    (f->v[4][2] && f->v[4][2] != ',') || f->v[5][0] != '/') {
		fields_free(f);
		return -EINVAL;
	}
	return 0;
}

int guestview_check_label(const char *arg)
{
	struct gv_fields f;
	const char *atime;
	int flags, err = label_parse(arg, &f, &flags, &atime);

	if (err == 0)
		fields_free(&f);
	return err;
}

int guestview_label(struct kernel *k, const char *arg)
{
	struct vfs_mount_label *l;
	struct gv_fields f;
	const char *atime;
	int flags, err = label_parse(arg, &f, &flags, &atime);

	if (err < 0)
		return err;
	l = calloc(1, sizeof(*l));
	if (!l) {
		fields_free(&f);
		return -ENOMEM;
	}
	l->fstype = steal_pointer(&f.v[2]);
	l->source = steal_pointer(&f.v[3]);
	l->super_ro = f.v[4][1] == 'o';
	l->super_opts = strdup(f.v[4][2] ? f.v[4] + 3 : "");
	l->root = steal_pointer(&f.v[5]);
	l->atime = strdup(atime);
	err = l->super_opts && l->atime ? vfs_mount_set_label(k, f.v[0], l, flags) :
					  (vfs_mount_label_free(l), -ENOMEM);
	fields_free(&f);
	return err;
}

/* --- devices and rules --- */

struct gv_device {
	char *path;
	uint32_t mode;
	uint64_t rdev;
	uint32_t uid, gid;
};

static int device_parse(const char *arg, struct gv_device *d)
{
	struct gv_fields f;
	unsigned long v[5];
	int err = fields_split(arg, &f);

	if (err < 0)
		return err;
	err = -EINVAL;
	if (f.n != 7 || f.v[0][0] != '/' || strlen(f.v[1]) != 1)
		goto out;
	for (int i = 0; i < 5; i++) {
		char *end;

		v[i] = strtoul(f.v[2 + i], &end, i == 2 ? 8 : 10);
		if (end == f.v[2 + i] || *end)
			goto out;
	}
	if (v[0] > 0xfff || v[1] > 0xfffff || v[2] > 07777 || v[3] > UINT32_MAX ||
	    v[4] > UINT32_MAX)
		goto out;
	switch (f.v[1][0]) {
	case 'c':
	case 'u':
		d->mode = S_IFCHR;
		break;
	case 'b':
		d->mode = S_IFBLK;
		break;
	case 'p':
		d->mode = S_IFIFO;
		break;
	default:
		goto out;
	}
	d->mode |= (uint32_t)v[2];
	d->rdev = S_ISFIFO(d->mode) ? 0 : vfs_mkdev((uint32_t)v[0], (uint32_t)v[1]);
	d->uid = (uint32_t)v[3];
	d->gid = (uint32_t)v[4];
	d->path = steal_pointer(&f.v[0]);
	err = 0;
out:
	fields_free(&f);
	return err;
}

int guestview_check_device(const char *arg)
{
	struct gv_device d;
	int err = device_parse(arg, &d);

	if (err == 0)
		free(d.path);
	return err;
}

int guestview_make_device(struct kernel *k, const char *arg)
{
	struct gv_device d;
	struct vfs_create_args a = { 0 };
	int err = device_parse(arg, &d);

	if (err < 0)
		return err;
	a.mode = d.mode;
	a.rdev = d.rdev;
	a.uid = d.uid;
	a.gid = d.gid;
	err = vfs_make_node(k, d.path, &a);
	free(d.path);
	return err;
}

static struct devfs_rule gv_rules[GV_MAX_RULES];
static size_t gv_nrules;

static int parse_num(const char *s, int64_t *out)
{
	char *end;
	unsigned long v;

	if (!strcmp(s, "*")) {
		*out = -1;
		return 0;
	}
	v = strtoul(s, &end, 10);
	if (end == s || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

int guestview_add_rule(const char *arg)
{
	struct devfs_rule r = { 0 };
	struct gv_fields f;
	int err = fields_split(arg, &f);

	if (err < 0)
		return err;
	err = -EINVAL;
	if (f.n != 5 || gv_nrules == GV_MAX_RULES)
		goto out;
	if (!strcmp(f.v[0], "allow"))
		r.allow = true;
	else if (strcmp(f.v[0], "deny"))
		goto out;
	if (strlen(f.v[1]) != 1 || !strchr("acb", f.v[1][0]))
		goto out;
	r.type = f.v[1][0];
	if (parse_num(f.v[2], &r.major) < 0 || parse_num(f.v[3], &r.minor) < 0)
		goto out;
	for (const char *p = f.v[4]; *p; p++) {
		if (*p == 'r')
			r.access |= DEVFS_ACC_READ;
		else if (*p == 'w')
			r.access |= DEVFS_ACC_WRITE;
		else if (*p == 'm')
			r.access |= DEVFS_ACC_MKNOD;
		else
			goto out;
	}
	gv_rules[gv_nrules++] = r;
	err = 0;
out:
	fields_free(&f);
	return err;
}

int guestview_apply_rules(void)
{
	return gv_nrules ? devfs_set_rules(gv_rules, gv_nrules) : 0;
}
