/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mount -t overlay: an upper directory over a lower one (reads from below, copy-up on write
 * with the inode number kept, whiteouts on unlink, opaque directories, merged listings, the
 * "work" directory in workdir), a read-only stack of lower directories (lowerdir=A:B: A's
 * entries and whiteouts win, every change EROFS), statfs and mountinfo, and the option errors
 * (a layer that is not a directory: EINVAL, as Linux 6's overlayfs).
 * Every layer lies on one tmpfs under the scratch directory, in a mount namespace of the
 * program's own (mountns.h), natively as in husk.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "mountns.h"

#define OVERLAYFS_SUPER_MAGIC 0x794c7630

/* Expects string got to equal want. */
#define CHECK_STR(got, want)                                                            \
	do {                                                                            \
		const char *_g = (got);                                                 \
		CHECK(!strcmp(_g, (want)), "%s: \"%s\", not \"%s\"", #got, _g, (want)); \
	} while (0)

static int put(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The contents of path (up to 63 bytes), or "" when it cannot be read. */
static const char *get(const char *path)
{
	static char buf[64];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The names in directory path, sorted, joined by spaces, without "." and "..". */
static const char *names(const char *path)
{
	static char out[256];
	struct dirent **v;
	int n = scandir(path, &v, NULL, alphasort);

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, "..")) {
			if (out[0])
				strncat(out, " ", sizeof(out) - strlen(out) - 1);
			strncat(out, v[i]->d_name, sizeof(out) - strlen(out) - 1);
		}
		free(v[i]);
	}
	if (n >= 0)
		free(v);
	return out;
}

static void layers(void)
{
	CHECK_RET(mkdir(at("L"), 0755), 0);
	CHECK_RET(put(at("L/a"), "lower-a"), 0);
	CHECK_RET(put(at("L/del"), "gone"), 0);
	CHECK_RET(mkdir(at("L/sub"), 0755), 0);
	CHECK_RET(put(at("L/sub/s"), "s"), 0);
	CHECK_RET(mkdir(at("L/d"), 0755), 0);
	CHECK_RET(put(at("L/d/x"), "x"), 0);
	CHECK_RET(mkdir(at("L2"), 0755), 0);
	CHECK_RET(put(at("L2/a"), "lower2-a"), 0);
	CHECK_RET(put(at("L2/b"), "lower2-b"), 0);
	CHECK_RET(put(at("L2/hidden"), "h"), 0);
	/* A whiteout in the upper of two lower layers hides the name below it. */
	CHECK_RET(mknod(at("L/hidden"), S_IFCHR | 0600, makedev(0, 0)), 0);
	CHECK_RET(mkdir(at("U"), 0755), 0);
	CHECK_RET(mkdir(at("W"), 0755), 0);
	CHECK_RET(mkdir(at("m"), 0755), 0);
	CHECK_RET(mkdir(at("r"), 0755), 0);
	CHECK_RET(put(at("file"), "f"), 0);
}

static void errors(void)
{
	char o[1024];

	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, NULL), EINVAL);
	snprintf(o, sizeof(o), "upperdir=%s,workdir=%s", at("U"), at("W"));
	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, o), EINVAL);
	snprintf(o, sizeof(o), "lowerdir=%s,upperdir=%s", at("L"), at("U"));
	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, o), EINVAL);
	snprintf(o, sizeof(o), "lowerdir=%s", at("L"));
	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, o), EINVAL);
	snprintf(o, sizeof(o), "lowerdir=%s:%s,nosuchoption", at("L"), at("L2"));
	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, o), EINVAL);
	snprintf(o, sizeof(o), "lowerdir=%s:%s", at("L"), at("missing"));
	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, o), ENOENT);
	/* Linux 6.x: "... is not a directory", EINVAL. */
	snprintf(o, sizeof(o), "lowerdir=%s:%s", at("L"), at("file"));
	CHECK_ERR(mount("overlay", at("m"), "overlay", 0, o), EINVAL);
	CHECK(!mountinfo_line(at("m"), o, sizeof(o)), "a failed overlay is mounted");
}

static void upper_over_lower(void)
{
	struct stat before, after, st;
	struct statfs sf;
	char o[1024], line[1024];
	int fd;

	snprintf(o, sizeof(o), "lowerdir=%s,upperdir=%s,workdir=%s", at("L"), at("U"), at("W"));
	CHECK_RET(mount("overlay", at("m"), "overlay", 0, o), 0);
	CHECK_RET(statfs(at("m"), &sf), 0);
	CHECK(sf.f_type == OVERLAYFS_SUPER_MAGIC, "f_type %#lx", (long)sf.f_type);
	CHECK(mountinfo_line(at("m"), line, sizeof(line)) && strstr(line, " - overlay overlay ") &&
		      strstr(line, "lowerdir="),
	      "mountinfo: %s", line);
	CHECK(stat(at("W/work"), &st) == 0 && S_ISDIR(st.st_mode), "no work directory in workdir");

	CHECK_STR(get(at("m/a")), "lower-a");
	CHECK_STR(names(at("m")), "a d del sub");
	CHECK_STR(names(at("U")), "");

	/* Copy-up on write: the upper layer gets the file, the lower one is untouched. */
	CHECK_RET(stat(at("m/a"), &before), 0);
	fd = open(at("m/a"), O_WRONLY | O_APPEND);
	CHECK(fd >= 0, "open for append: %s", strerror(errno));
	CHECK_RET(write(fd, "+up", 3), 3);
	close(fd);
	CHECK_STR(get(at("m/a")), "lower-a+up");
	CHECK_STR(get(at("U/a")), "lower-a+up");
	CHECK_STR(get(at("L/a")), "lower-a");
	CHECK_RET(stat(at("m/a"), &after), 0);
	CHECK(before.st_ino == after.st_ino, "st_ino %lu then %lu", (unsigned long)before.st_ino,
	      (unsigned long)after.st_ino);

	/* New files go up; a removed lower file leaves a whiteout (a 0:0 character device). */
	CHECK_RET(put(at("m/new"), "n"), 0);
	CHECK_STR(get(at("U/new")), "n");
	CHECK_RET(unlink(at("m/del")), 0);
	CHECK_ERR(stat(at("m/del"), &st), ENOENT);
	CHECK_STR(get(at("L/del")), "gone");
	CHECK(lstat(at("U/del"), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0),
	      "no whiteout in the upper layer");
	CHECK_STR(names(at("m")), "a d new sub");

	/* A directory removed and made again is opaque: the lower one's entries stay hidden. */
	CHECK_STR(names(at("m/sub")), "s");
	CHECK_RET(unlink(at("m/sub/s")), 0);
	CHECK_RET(rmdir(at("m/sub")), 0);
	CHECK_RET(mkdir(at("m/sub"), 0755), 0);
	CHECK_STR(names(at("m/sub")), "");
	CHECK_STR(names(at("L/sub")), "s");

	/* A merged directory: entries from both layers. */
	CHECK_RET(put(at("m/d/y"), "y"), 0);
	CHECK_STR(names(at("m/d")), "x y");
	CHECK_STR(names(at("U/d")), "y");

	CHECK_RET(umount2(at("m"), 0), 0);
	CHECK_STR(get(at("U/a")), "lower-a+up");
}

static void lower_stack(void)
{
	struct stat st;
	char o[512];

	snprintf(o, sizeof(o), "lowerdir=%s:%s", at("L"), at("L2"));
	CHECK_RET(mount("overlay", at("r"), "overlay", 0, o), 0);
	CHECK_STR(get(at("r/a")), "lower-a");
	CHECK_STR(get(at("r/b")), "lower2-b");
	CHECK_ERR(stat(at("r/hidden"), &st), ENOENT);
	CHECK_STR(names(at("r")), "a b d del sub");
	CHECK_ERR(open(at("r/a"), O_WRONLY), EROFS);
	CHECK_ERR(open(at("r/c"), O_CREAT | O_WRONLY, 0644), EROFS);
	CHECK_ERR(unlink(at("r/b")), EROFS);
	CHECK_ERR(mkdir(at("r/e"), 0755), EROFS);
	CHECK_STR(get(at("L2/b")), "lower2-b");
	CHECK_RET(umount2(at("r"), 0), 0);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	layers();
	errors();
	upper_over_lower();
	lower_stack();
	CHECK_RET(umount2(T, 0), 0);
}

int main(void)
{
	if (mountns_main("overlay_mount", body))
		return 1;
	return checks_failed ? 1 : 0;
}
