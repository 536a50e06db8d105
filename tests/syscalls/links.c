/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Links and removals: link/linkat (AT_SYMLINK_FOLLOW, AT_EMPTY_PATH), link counts, unlink of
 * an open file, symlink/readlink, mknod of FIFOs, rmdir/unlink rules, O_TMPFILE + linkat.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "check.h"
#include "scratch.h"

static nlink_t nlink_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 ? 0 : st.st_nlink;
}

static void test_hard_links(void)
{
	struct stat a, b;
	char buf[8] = { 0 };
	int fd = CHECK_OK(open("f", O_CREAT | O_RDWR, 0644));

	CHECK_RET(write(fd, "data", 4), 4);
	CHECK_RET(link("f", "g"), 0);
	CHECK_RET(nlink_of("f"), 2);
	CHECK_RET(stat("f", &a), 0);
	CHECK_RET(stat("g", &b), 0);
	CHECK(a.st_ino == b.st_ino && a.st_dev == b.st_dev, "two names, one inode");
	CHECK_ERR(link("f", "g"), EEXIST);
	CHECK_ERR(link("missing", "h"), ENOENT);
	CHECK_ERR(link(".", "h"), EPERM);
	CHECK_ERR(link("f", "nodir/h"), ENOENT);
	CHECK_ERR(link("f/", "h"), ENOTDIR);
	CHECK_RET(unlink("f"), 0);
	CHECK_RET(nlink_of("g"), 1);
	CHECK_RET(unlink("g"), 0);
	CHECK_RET(fstat(fd, &a), 0);
	CHECK(a.st_nlink == 0, "nlink %lu after the last unlink", (unsigned long)a.st_nlink);
	CHECK_RET(pread(fd, buf, 4, 0), 4);
	CHECK(memcmp(buf, "data", 4) == 0, "an unlinked open file keeps its data");
	/* Without O_TMPFILE, a file with no name left gets none back. */
	CHECK_ERR(linkat(fd, "", AT_FDCWD, "back", AT_EMPTY_PATH), ENOENT);
	close(fd);
}

static void test_symlinks(void)
{
	char buf[64];
	struct stat st;

	CHECK_RET(symlink("target", "s"), 0);
	CHECK_RET(readlink("s", buf, sizeof(buf)), 6);
	CHECK(memcmp(buf, "target", 6) == 0, "readlink");
	CHECK_RET(readlink("s", buf, 3), 3);
	CHECK_ERR(stat("s", &st), ENOENT); /* dangling */
	CHECK_RET(lstat("s", &st), 0);
	CHECK(S_ISLNK(st.st_mode) && st.st_size == 6, "lstat of a symlink");
	CHECK_ERR(symlink("x", "s"), EEXIST);
	CHECK_ERR(symlink("", "empty"), ENOENT);
	close(CHECK_OK(open("target", O_CREAT | O_WRONLY, 0644)));
	CHECK_RET(stat("s", &st), 0);
	CHECK(S_ISREG(st.st_mode), "a symlink to a file stats as the file");
	/* linkat links the symlink itself unless AT_SYMLINK_FOLLOW. */
	CHECK_RET(linkat(AT_FDCWD, "s", AT_FDCWD, "s2", 0), 0);
	CHECK_RET(lstat("s2", &st), 0);
	CHECK(S_ISLNK(st.st_mode), "linkat without AT_SYMLINK_FOLLOW links the symlink");
	CHECK_RET(nlink_of("s"), 2);
	CHECK_RET(linkat(AT_FDCWD, "s", AT_FDCWD, "t2", AT_SYMLINK_FOLLOW), 0);
	CHECK_RET(nlink_of("target"), 2);
	CHECK_ERR(linkat(AT_FDCWD, "s", AT_FDCWD, "t3", 0x8000), EINVAL);
	CHECK_ERR(readlink("target", buf, sizeof(buf)), EINVAL);
	CHECK_ERR(unlink("s/"), ENOTDIR);
	CHECK_RET(unlink("s"), 0);
	CHECK_RET(unlink("s2"), 0);
}

static void test_removal_rules(void)
{
	struct stat st;

	CHECK_RET(mkdir("d", 0755), 0);
	CHECK_RET(nlink_of("d"), 2);
	CHECK_RET(mkdir("d/e", 0755), 0);
	CHECK_RET(nlink_of("d"), 3);
	CHECK_ERR(mkdir("d", 0755), EEXIST);
	CHECK_ERR(unlink("d"), EISDIR);
	CHECK_ERR(rmdir("d"), ENOTEMPTY);
	CHECK_ERR(rmdir("d/e/."), EINVAL);
	CHECK_ERR(rmdir("d/e/.."), ENOTEMPTY);
	CHECK_ERR(rmdir("target"), ENOTDIR);
	CHECK_ERR(rmdir("missing"), ENOENT);
	CHECK_RET(rmdir("d/e/"), 0);
	CHECK_RET(nlink_of("d"), 2);
	CHECK_RET(mknod("fifo", S_IFIFO | 0600, 0), 0);
	CHECK_RET(lstat("fifo", &st), 0);
	CHECK(S_ISFIFO(st.st_mode) && (st.st_mode & 0777) == 0600, "mode %o", st.st_mode);
	CHECK_ERR(mknod("dir2", S_IFDIR | 0755, 0), EPERM);
	CHECK_ERR(mknod("fifo", S_IFIFO | 0600, 0), EEXIST);
	CHECK_RET(unlinkat(AT_FDCWD, "fifo", 0), 0);
	CHECK_ERR(unlinkat(AT_FDCWD, "d", 0x1), EINVAL);
	CHECK_RET(unlinkat(AT_FDCWD, "d", AT_REMOVEDIR), 0);
	CHECK_ERR(unlinkat(AT_FDCWD, "target", AT_REMOVEDIR), ENOTDIR);
}

#define LINUX_O_TMPFILE (020000000 | O_DIRECTORY)

static void test_tmpfile(void)
{
	struct stat st;
	char buf[8] = { 0 };
	int fd, ex;

	CHECK_RET(mkdir("tdir", 0755), 0);
	fd = open("tdir", LINUX_O_TMPFILE | O_RDWR, 0600);
	if (fd < 0 && errno == EOPNOTSUPP) {
		printf("skip O_TMPFILE: not supported by the filesystem of /tmp\n");
		return;
	}
	CHECK(fd >= 0, "O_TMPFILE: %s", strerror(errno));
	CHECK_RET(write(fd, "tmp", 3), 3);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_nlink == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600,
	      "nlink %lu mode %o", (unsigned long)st.st_nlink, st.st_mode);
	CHECK_ERR(open("tdir", LINUX_O_TMPFILE | O_RDONLY, 0600), EINVAL);
	CHECK_ERR(open("tdir", 020000000 | O_RDWR, 0600), EINVAL); /* without O_DIRECTORY */
	CHECK_ERR(open("target", LINUX_O_TMPFILE | O_RDWR, 0600), ENOTDIR);
	CHECK_ERR(linkat(fd, "", AT_FDCWD, "tdir/named", 0), ENOENT);
	CHECK_RET(linkat(fd, "", AT_FDCWD, "tdir/named", AT_EMPTY_PATH), 0);
	CHECK_RET(nlink_of("tdir/named"), 1);
	fd = (close(fd), open("tdir/named", O_RDONLY));
	CHECK_RET(read(fd, buf, sizeof(buf)), 3);
	CHECK(memcmp(buf, "tmp", 3) == 0, "the linked file holds what was written");
	close(fd);
	ex = CHECK_OK(open("tdir", LINUX_O_TMPFILE | O_EXCL | O_WRONLY, 0600));
	CHECK_ERR(linkat(ex, "", AT_FDCWD, "tdir/never", AT_EMPTY_PATH), ENOENT);
	close(ex);
}

int main(void)
{
	umask(022);
	scratch_make("links");
	test_hard_links();
	test_symlinks();
	test_removal_rules();
	test_tmpfile();
	return finish();
}
