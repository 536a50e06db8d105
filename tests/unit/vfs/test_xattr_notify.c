/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes (sentry/vfs/xattr.c over tmpfs) and inotify's core (sentry/vfs/notify.c)
 * through the VFS calls of a tmpfs root.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/xattr.h"
#include "tests/unit/vfs/fsutil.h"

static struct harness h;

static void setup(void)
{
	struct vfs_fs *fs = tmpfs_create(NULL, 1 << 20, 0755, 0, 0);

	cr_assert_not_null(fs);
	fsu_harness_init(&h, fs);
	fs_context_set_umask(h.t.fs, 0);
	h.t.cred.cap_effective = ~0ULL;
}

static void teardown(void)
{
	harness_fini(&h);
}

TestSuite(xattr, .init = setup, .fini = teardown);
TestSuite(notify, .init = setup, .fini = teardown);

static int lookup(const char *path, struct vfs_path *p)
{
	return vfs_lookup_at(&h.t, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, p);
}

Test(xattr, set_get_list_remove_on_tmpfs)
{
	struct vfs_path p;
	char buf[64];

	cr_assert_eq(fsu_write_file(&h, "/f", 0644, "x"), 1);
	cr_assert_eq(lookup("/f", &p), 0);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "user.a", "val", 3, VFS_XATTR_CREATE), 0);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "user.a", "v", 1, VFS_XATTR_CREATE), -EEXIST);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "user.b", "v", 1, VFS_XATTR_REPLACE), -ENODATA);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "user.a", NULL, 0), 3);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "user.a", buf, 2), -ERANGE);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "user.a", buf, sizeof(buf)), 3);
	cr_assert_eq(memcmp(buf, "val", 3), 0);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "trusted.t", "t", 1, 0), 0);
	cr_assert_eq(vfs_listxattr(&h.t, &p, buf, sizeof(buf)), 17);
	cr_assert_eq(memcmp(buf, "user.a\0trusted.t", 17), 0);
	cr_assert_eq(vfs_removexattr(&h.t, &p, "user.a"), 0);
	cr_assert_eq(vfs_removexattr(&h.t, &p, "user.a"), -ENODATA);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "system.posix_acl_access", "x", 1, 0), -EOPNOTSUPP);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "other.x", buf, sizeof(buf)), -EOPNOTSUPP);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "user.", buf, sizeof(buf)), -EINVAL);
	vfs_path_put(&p);
}

Test(xattr, unprivileged_rules)
{
	struct vfs_path p;
	char buf[8];

	cr_assert_eq(fsu_write_file(&h, "/f", 0600, "x"), 1);
	cr_assert_eq(lookup("/f", &p), 0);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "trusted.t", "t", 1, 0), 0);
	harness_set_cred(&h, 1000, 1000); /* no capabilities */
	cr_assert_eq(vfs_getxattr(&h.t, &p, "trusted.t", buf, sizeof(buf)), -ENODATA);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "trusted.t", "t", 1, 0), -EPERM);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "security.x", "t", 1, 0), -EPERM);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "user.a", buf, sizeof(buf)), -EACCES);
	/* trusted.* names are not listed without CAP_SYS_ADMIN. */
	cr_assert_eq(vfs_listxattr(&h.t, &p, buf, sizeof(buf)), 0);
	vfs_path_put(&p);
}

Test(xattr, user_namespace_refused_on_symlinks)
{
	struct vfs_path p;

	cr_assert_eq(vfs_symlinkat(&h.t, "f", AT_FDCWD, "/l"), 0);
	cr_assert_eq(lookup("/l", &p), 0);
	cr_assert_eq(vfs_setxattr(&h.t, &p, "user.a", "v", 1, 0), -EPERM);
	cr_assert_eq(vfs_getxattr(&h.t, &p, "user.a", NULL, 0), -ENODATA);
	vfs_path_put(&p);
}

/* Reads the group's queue into (wd, mask, name) triples. Returns the count. */
struct got {
	int wd;
	uint32_t mask, cookie;
	char name[64];
};

static int drain(struct notify_group *g, struct got *out, int max)
{
	char buf[4096];
	ssize_t n = notify_group_read(g, buf, sizeof(buf));
	int k = 0;

	for (char *q = buf; n > 0 && q < buf + n && k < max; k++) {
		struct inotify_event *e = (struct inotify_event *)q;

		out[k].wd = e->wd;
		out[k].mask = e->mask;
		out[k].cookie = e->cookie;
		snprintf(out[k].name, sizeof(out[k].name), "%s", e->len ? e->name : "");
		q += sizeof(*e) + e->len;
	}
	return k;
}

Test(notify, directory_events_in_linux_order)
{
	struct notify_group *g;
	struct vfs_path d;
	struct got ev[8];
	int wd;

	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d", 0755), 0);
	cr_assert_eq(notify_group_create(&g), 0);
	cr_assert_eq(lookup("/d", &d), 0);
	wd = notify_add_watch(g, d.node, VFS_IN_ALL_EVENTS);
	cr_assert_gt(wd, 0);
	cr_assert(vfs_notify_active());
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/d/a", S_IFREG | 0644, 0), 0);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d/a", AT_FDCWD, "/d/b", 0), 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/d/b", 0), 0);
	cr_assert_eq(drain(g, ev, 8), 4);
	cr_assert(ev[0].wd == wd && ev[0].mask == VFS_IN_CREATE && !strcmp(ev[0].name, "a"));
	cr_assert(ev[1].mask == VFS_IN_MOVED_FROM && !strcmp(ev[1].name, "a"));
	cr_assert(ev[2].mask == VFS_IN_MOVED_TO && !strcmp(ev[2].name, "b"));
	cr_assert(ev[1].cookie && ev[1].cookie == ev[2].cookie);
	cr_assert(ev[3].mask == VFS_IN_DELETE && !strcmp(ev[3].name, "b"));
	cr_assert_eq(notify_group_read(g, ev, sizeof(ev)), -EAGAIN);
	/*
	 * The directory goes while still in use (d holds it, as an open file would): DELETE_SELF
	 * and IGNORED, and the watch with them, at its last put.
	 */
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/d", AT_REMOVEDIR), 0);
	cr_assert_eq(notify_group_read(g, ev, sizeof(ev)), -EAGAIN);
	vfs_path_put(&d);
	cr_assert_eq(drain(g, ev, 8), 2);
	cr_assert(ev[0].mask == VFS_IN_DELETE_SELF && ev[1].mask == VFS_IN_IGNORED);
	cr_assert_not(vfs_notify_active());
	cr_assert_eq(notify_rm_watch(g, wd), -EINVAL);
	/* Not in use: at once. */
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/e", 0755), 0);
	cr_assert_eq(lookup("/e", &d), 0);
	wd = notify_add_watch(g, d.node, VFS_IN_DELETE_SELF);
	vfs_path_put(&d);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/e", AT_REMOVEDIR), 0);
	cr_assert_eq(drain(g, ev, 8), 2);
	cr_assert(ev[0].wd == wd && ev[0].mask == VFS_IN_DELETE_SELF &&
		  ev[1].mask == VFS_IN_IGNORED);
	notify_group_destroy(g);
}

Test(notify, oneshot_and_mask_add)
{
	struct notify_group *g;
	struct vfs_path f;
	struct got ev[8];
	int wd;

	cr_assert_eq(fsu_write_file(&h, "/f", 0644, "x"), 1);
	cr_assert_eq(notify_group_create(&g), 0);
	cr_assert_eq(lookup("/f", &f), 0);
	wd = notify_add_watch(g, f.node, VFS_IN_ATTRIB);
	cr_assert_eq(notify_add_watch(g, f.node, VFS_IN_MODIFY | VFS_IN_MASK_ADD | VFS_IN_ONESHOT),
		     wd);
	cr_assert_eq(notify_add_watch(g, f.node, VFS_IN_MODIFY | VFS_IN_MASK_CREATE), -EEXIST);
	cr_assert_eq(vfs_path_chmod(&h.t, &f, 0600), 0);
	cr_assert_eq(vfs_path_chmod(&h.t, &f, 0644), 0);
	cr_assert_eq(drain(g, ev, 8), 2);
	cr_assert(ev[0].wd == wd && ev[0].mask == VFS_IN_ATTRIB);
	cr_assert(ev[1].wd == wd && ev[1].mask == VFS_IN_IGNORED);
	cr_assert_eq(notify_group_pending(g), 0);
	vfs_path_put(&f);
	notify_group_destroy(g);
}

Test(notify, queue_overflows_once)
{
	struct notify_group *g;
	struct vfs_path f;
	char *buf = malloc(1 << 20);
	ssize_t n;
	int total = 0, overflow = 0;

	cr_assert_eq(fsu_write_file(&h, "/f", 0644, "x"), 1);
	cr_assert_eq(notify_group_create(&g), 0);
	cr_assert_eq(lookup("/f", &f), 0);
	cr_assert_gt(notify_add_watch(g, f.node, VFS_IN_ATTRIB | VFS_IN_ACCESS), 0);
	for (int i = 0; i < NOTIFY_MAX_QUEUED_EVENTS + 10; i++) {
		vfs_notify_node(f.node, VFS_IN_ATTRIB);
		vfs_notify_node(f.node, VFS_IN_ACCESS);
	}
	while ((n = notify_group_read(g, buf, 1 << 20)) > 0) {
		for (char *q = buf; q < buf + n; q += sizeof(struct inotify_event)) {
			struct inotify_event *e = (struct inotify_event *)q;

			total++;
			overflow += e->mask == VFS_IN_Q_OVERFLOW && e->wd == -1;
		}
	}
	cr_assert_eq(total, NOTIFY_MAX_QUEUED_EVENTS + 1);
	cr_assert_eq(overflow, 1);
	free(buf);
	vfs_path_put(&f);
	notify_group_destroy(g);
	cr_assert_not(vfs_notify_active());
}
