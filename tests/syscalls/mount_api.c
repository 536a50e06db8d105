/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The new mount API: fsopen/fsconfig/fsmount of a tmpfs attached with move_mount, open_tree
 * (OPEN_TREE_CLONE copies, plain O_PATH fds that move_mount moves), their errors (ENODEV,
 * EINVAL, EBADF, EBUSY, EFAULT) and EPERM for uid 1000; mount_setattr (flags, the atime choice,
 * propagation, AT_RECURSIVE, an open_tree clone before move_mount, the size and flag errors).
 * In a private mount namespace under a
 * tmpfs in the scratch directory, as mounts.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mountns.h"
#include "scratch.h"

/* linux/mount.h's values (the header clashes with glibc's sys/mount.h). */
#define OPEN_TREE_CLONE_ 1
#define AT_RECURSIVE_ 0x8000
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x04
#define FSCONFIG_SET_FLAG_ 0
#define FSCONFIG_SET_STRING_ 1
#define FSCONFIG_CMD_CREATE_ 6
#define MOUNT_ATTR_NOEXEC_ 0x08
#define MOUNT_ATTR_RDONLY_ 0x01
#define MOUNT_ATTR_NOSUID_ 0x02
#define MOUNT_ATTR_NODEV_ 0x04
#define MOUNT_ATTR__ATIME_ 0x70
#define MOUNT_ATTR_NOATIME_ 0x10
#define MOUNT_ATTR_IDMAP_ 0x00100000

struct mount_attr_ {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
	uint64_t extra; /* a newer caller's larger struct */
};

static long setattr(const char *path, unsigned int flags, uint64_t set, uint64_t clr, uint64_t prop)
{
	struct mount_attr_ a = { .attr_set = set, .attr_clr = clr, .propagation = prop };

	return syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a, 32);
}

/* Whether path's mountinfo line has word (" ro," ...) in its mount options or optional fields. */
static bool info_has(const char *path, const char *word)
{
	char line[1024];

	return mountinfo_line(path, line, sizeof(line)) && strstr(line, word);
}

static void fs_context(void)
{
	char line[1024];
	struct stat st;
	int fd, mfd;

	CHECK_ERR(syscall(SYS_fsopen, "nosuchfs", 0), ENODEV);
	CHECK_ERR(syscall(SYS_fsopen, "tmpfs", 0x10), EINVAL);
	CHECK_ERR(syscall(SYS_fsopen, (char *)1, 0), EFAULT);
	CHECK_ERR(syscall(SYS_fsconfig, 0, FSCONFIG_CMD_CREATE_, NULL, NULL, 0), EINVAL);
	CHECK_ERR(syscall(SYS_fsconfig, 999, FSCONFIG_CMD_CREATE_, NULL, NULL, 0), EBADF);
	fd = CHECK_OK(syscall(SYS_fsopen, "tmpfs", 0));
	CHECK_ERR(syscall(SYS_fsmount, fd, 0, 0), EINVAL); /* not created yet */
	CHECK_RET(syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING_, "source", "api", 0), 0);
	CHECK_RET(syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING_, "size", "1m", 0), 0);
	CHECK_RET(syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING_, "mode", "700", 0), 0);
	CHECK_RET(syscall(SYS_fsconfig, fd, FSCONFIG_CMD_CREATE_, NULL, NULL, 0), 0);
	CHECK_ERR(syscall(SYS_fsconfig, fd, FSCONFIG_CMD_CREATE_, NULL, NULL, 0), EBUSY);
	CHECK_ERR(syscall(SYS_fsmount, fd, 0x10, 0), EINVAL);
	mfd = CHECK_OK(syscall(SYS_fsmount, fd, 0, MOUNT_ATTR_NOEXEC_));
	CHECK_ERR(syscall(SYS_fsmount, fd, 0, 0), EBUSY);
	/* Detached: not in the tree until move_mount. */
	CHECK(!mountinfo_line(at("x"), line, sizeof(line)), "mounted before move_mount");
	CHECK_RET(mkdir(at("x"), 0755), 0);
	CHECK_ERR(syscall(SYS_move_mount, mfd, "", AT_FDCWD, at("x"), 0x1000), EINVAL);
	CHECK_RET(syscall(SYS_move_mount, mfd, "", AT_FDCWD, at("x"), MOVE_MOUNT_F_EMPTY_PATH_), 0);
	CHECK_RET(stat(at("x"), &st), 0);
	CHECK(st.st_mode == (S_IFDIR | 0700), "mode %o", st.st_mode);
	CHECK(mountinfo_line(at("x"), line, sizeof(line)) && strstr(line, " rw,noexec,relatime ") &&
		      strstr(line, " - tmpfs api rw,size=1024k,mode=700\n"),
	      "line %s", line);
	/* The fd still names the mount's root. */
	CHECK_RET(close(openat(mfd, "via-fd", O_CREAT | O_WRONLY, 0644)), 0);
	CHECK_RET(access(at("x/via-fd"), F_OK), 0);
	close(mfd);
	close(fd);
}

static void trees(void)
{
	char line[1024];
	int fd;

	CHECK_ERR(syscall(SYS_open_tree, AT_FDCWD, at("x"), 0x4000000), EINVAL);
	CHECK_ERR(syscall(SYS_open_tree, AT_FDCWD, at("x"), AT_RECURSIVE_), EINVAL);
	CHECK_ERR(syscall(SYS_open_tree, AT_FDCWD, at("missing"), OPEN_TREE_CLONE_), ENOENT);
	/* A clone: a bind made detached, attached by move_mount. */
	fd = CHECK_OK(syscall(SYS_open_tree, AT_FDCWD, at("x"), OPEN_TREE_CLONE_ | O_CLOEXEC));
	CHECK_RET(mkdir(at("y"), 0755), 0);
	CHECK_RET(syscall(SYS_move_mount, fd, "", AT_FDCWD, at("y"), MOVE_MOUNT_F_EMPTY_PATH_), 0);
	CHECK_RET(access(at("y/via-fd"), F_OK), 0);
	CHECK(mountinfo_line(at("y"), line, sizeof(line)) && strstr(line, " - tmpfs api "),
	      "line %s", line);
	close(fd);
	/* Without OPEN_TREE_CLONE: a path; move_mount moves the mount there. */
	fd = CHECK_OK(syscall(SYS_open_tree, AT_FDCWD, at("y"), 0));
	CHECK_RET(mkdir(at("z"), 0755), 0);
	CHECK_RET(syscall(SYS_move_mount, fd, "", AT_FDCWD, at("z"), MOVE_MOUNT_F_EMPTY_PATH_), 0);
	CHECK(!mountinfo_line(at("y"), line, sizeof(line)), "y still mounted");
	CHECK_RET(access(at("z/via-fd"), F_OK), 0);
	close(fd);
	/* A path move_mount: not a mount's root. */
	CHECK_ERR(syscall(SYS_move_mount, AT_FDCWD, at("x/via-fd"), AT_FDCWD, at("y"), 0), EINVAL);
	CHECK_RET(umount2(at("z"), 0), 0);
	CHECK_RET(umount2(at("x"), 0), 0);
}

static void setattrs(void)
{
	struct mount_attr_ a = { .attr_set = MOUNT_ATTR_RDONLY_ };
	int fd;

	CHECK_RET(mkdir(at("ms"), 0755), 0);
	CHECK_RET(mount("ms", at("ms"), "tmpfs", 0, NULL), 0);
	CHECK_RET(mkdir(at("ms/sub"), 0755), 0);
	CHECK_RET(mount("sub", at("ms/sub"), "tmpfs", 0, NULL), 0);
	/* Errors: flags, sizes, attributes, atime without MOUNT_ATTR__ATIME in attr_clr. */
	CHECK_ERR(syscall(SYS_mount_setattr, AT_FDCWD, at("ms"), 1, &a, 32), EINVAL);
	CHECK_ERR(syscall(SYS_mount_setattr, AT_FDCWD, at("ms"), 0, &a, 16), EINVAL);
	a.extra = 1;
	CHECK_ERR(syscall(SYS_mount_setattr, AT_FDCWD, at("ms"), 0, &a, 40), E2BIG);
	CHECK_ERR(syscall(SYS_mount_setattr, AT_FDCWD, at("ms"), 0, (void *)8, 32), EFAULT);
	CHECK_ERR(setattr(at("ms"), 0, 0x40000000, 0, 0), EINVAL);
	CHECK_ERR(setattr(at("ms"), 0, MOUNT_ATTR_NOATIME_, 0, 0), EINVAL);
	CHECK_ERR(setattr(at("ms"), 0, 0, 0, MS_SHARED | MS_SLAVE), EINVAL);
	CHECK_RET(mkdir(at("ms/plain"), 0755), 0); /* not a mount's root */
	CHECK_ERR(setattr(at("ms/plain"), 0, MOUNT_ATTR_RDONLY_, 0, 0), EINVAL);
	CHECK_ERR(setattr(at("missing"), 0, MOUNT_ATTR_RDONLY_, 0, 0), ENOENT);
	/* Nothing to do: 0 without a lookup. */
	CHECK_RET(setattr(at("missing"), 0, 0, 0, 0), 0);

	/* Read-only and back; the submount is untouched without AT_RECURSIVE. */
	a.extra = 0;
	CHECK_RET(syscall(SYS_mount_setattr, AT_FDCWD, at("ms"), 0, &a, 40), 0);
	CHECK(info_has(at("ms"), " ro"), "ms not read-only");
	CHECK(info_has(at("ms/sub"), " rw"), "sub read-only without AT_RECURSIVE");
	CHECK_ERR(mkdir(at("ms/d"), 0755), EROFS);
	CHECK_RET(setattr(at("ms"), 0, 0, MOUNT_ATTR_RDONLY_, 0), 0);
	CHECK_RET(mkdir(at("ms/d"), 0755), 0);
	/* AT_RECURSIVE: the submount too; propagation with it. */
	CHECK_RET(setattr(at("ms"), AT_RECURSIVE_, MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_, 0,
			  MS_SHARED),
		  0);
	CHECK(info_has(at("ms"), ",nosuid,nodev") && info_has(at("ms"), " shared:"), "ms flags");
	CHECK(info_has(at("ms/sub"), ",nosuid,nodev") && info_has(at("ms/sub"), " shared:"),
	      "sub flags");
	CHECK_RET(setattr(at("ms"), AT_RECURSIVE_, 0, 0, MS_PRIVATE), 0);
	CHECK(!info_has(at("ms/sub"), " shared:"), "sub still shared");
	/* The atime choice: noatime, then back to relatime. */
	CHECK_RET(setattr(at("ms"), 0, MOUNT_ATTR_NOATIME_, MOUNT_ATTR__ATIME_, 0), 0);
	CHECK(info_has(at("ms"), ",noatime"), "no noatime");
	CHECK_RET(setattr(at("ms"), 0, 0, MOUNT_ATTR__ATIME_, 0), 0);
	CHECK(info_has(at("ms"), ",relatime"), "no relatime");
	/* MOUNT_ATTR_IDMAP with a file that is no user namespace: EINVAL. */
	fd = open(at("ms/d"), O_RDONLY | O_DIRECTORY);
	a = (struct mount_attr_){ .attr_set = MOUNT_ATTR_IDMAP_, .userns_fd = (uint64_t)fd };
	CHECK_ERR(syscall(SYS_mount_setattr, AT_FDCWD, at("ms"), 0, &a, 32), EINVAL);
	close(fd);

	/* An open_tree clone made read-only before it is attached (runc's way). */
	fd = CHECK_OK(syscall(SYS_open_tree, AT_FDCWD, at("ms/sub"), OPEN_TREE_CLONE_));
	a = (struct mount_attr_){ .attr_set = MOUNT_ATTR_RDONLY_ };
	CHECK_RET(syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &a, 32), 0);
	CHECK_RET(mkdir(at("ms/ro"), 0755), 0);
	CHECK_RET(syscall(SYS_move_mount, fd, "", AT_FDCWD, at("ms/ro"), MOVE_MOUNT_F_EMPTY_PATH_),
		  0);
	CHECK(info_has(at("ms/ro"), " ro"), "the attached clone is not read-only");
	CHECK(info_has(at("ms/sub"), " rw"), "the clone's source became read-only");
	close(fd);
	CHECK_RET(umount2(at("ms"), MNT_DETACH), 0);
}

static void as_user(void)
{
	if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0) {
		CHECK(0, "setresuid: %s", strerror(errno));
		return;
	}
	CHECK_ERR(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	CHECK_ERR(syscall(SYS_open_tree, AT_FDCWD, T, OPEN_TREE_CLONE_), EPERM);
	CHECK_ERR(syscall(SYS_move_mount, AT_FDCWD, T, AT_FDCWD, T, 0), EPERM);
	CHECK_ERR(syscall(SYS_fsmount, 0, 0, 0), EPERM);
	CHECK_ERR(setattr(T, 0, MOUNT_ATTR_RDONLY_, 0, 0), EPERM);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	fs_context();
	trees();
	setattrs();
	mountns_child(as_user, "unprivileged checks");
	CHECK_RET(umount2(T, 0), 0);
}

int main(void)
{
	return mountns_main("mount_api", body);
}
