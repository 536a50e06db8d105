/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rename/renameat/renameat2: files and directories, replacement rules, RENAME_NOREPLACE and
 * RENAME_EXCHANGE, hard links of one file, open files across a rename, and the errors.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "check.h"
#include "scratch.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif

static long renameat2_(int od, const char *o, int nd, const char *n, unsigned int flags)
{
	return syscall(SYS_renameat2, od, o, nd, n, flags);
}

static void put(const char *path, const char *data)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd >= 0) {
		CHECK_RET(write(fd, data, strlen(data)), (long)strlen(data));
		close(fd);
	}
}

static void expect(const char *path, const char *want)
{
	char buf[64] = { 0 };
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	CHECK_RET(read(fd, buf, sizeof(buf) - 1), (long)strlen(want));
	CHECK(strcmp(buf, want) == 0, "%s holds %s, want %s", path, buf, want);
	close(fd);
}

static ino_t ino_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 ? 0 : st.st_ino;
}

static nlink_t nlink_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 ? 0 : st.st_nlink;
}

static void test_files(void)
{
	ino_t ino;
	int fd;

	put("a", "A");
	put("b", "B");
	ino = ino_of("a");
	CHECK_RET(rename("a", "c"), 0);
	CHECK_ERR(access("a", F_OK), ENOENT);
	CHECK(ino_of("c") == ino, "the inode moves with the name");
	expect("c", "A");
	fd = CHECK_OK(open("c", O_RDONLY));
	CHECK_RET(rename("c", "b"), 0); /* replaces b */
	expect("b", "A");
	{
		char buf[4] = { 0 };

		CHECK_RET(read(fd, buf, 3), 1);
		CHECK(buf[0] == 'A', "an open file reads on after its rename");
	}
	close(fd);
	CHECK_RET(rename("b", "b"), 0);
	expect("b", "A");
	CHECK_ERR(rename("missing", "x"), ENOENT);
	CHECK_ERR(rename("b", "nodir/x"), ENOENT);
	CHECK_ERR(rename("b/", "x"), ENOTDIR);
	CHECK_ERR(rename("b", "x/"), ENOTDIR);
	CHECK_ERR(rename("", "x"), ENOENT);
	CHECK_RET(unlink("b"), 0);
}

static void test_directories(void)
{
	CHECK_RET(mkdir("d", 0755), 0);
	CHECK_RET(mkdir("d/sub", 0755), 0);
	put("d/sub/f", "F");
	CHECK_RET(mkdir("empty", 0755), 0);
	CHECK_RET(mkdir("full", 0755), 0);
	put("full/x", "X");
	put("file", "file");
	CHECK_ERR(rename("d", "full"), ENOTEMPTY);
	CHECK_ERR(rename("d", "file"), ENOTDIR);
	CHECK_ERR(rename("file", "empty"), EISDIR);
	CHECK_ERR(rename("d", "d/sub/inside"), EINVAL);
	CHECK_ERR(rename("d", "d/sub"), EINVAL);
	CHECK_ERR(rename("d/sub", "d/sub/x"), EINVAL);
	CHECK_ERR(rename("d/.", "x"), EBUSY);
	CHECK_ERR(rename("d/..", "x"), EBUSY);
	CHECK_ERR(rename("x", "d/."), EBUSY); /* before the lookup of x */
	CHECK_ERR(rename("full", "d/sub/.."), EBUSY);
	CHECK_RET(nlink_of("."), 5); /* d, empty, full */
	CHECK_RET(rename("d/sub", "sub"), 0); /* ".." changes parent */
	CHECK_RET(nlink_of("d"), 2);
	CHECK_RET(nlink_of("."), 6);
	expect("sub/f", "F");
	CHECK_RET(rename("d", "empty"), 0); /* replaces an empty directory */
	CHECK_RET(nlink_of("."), 5);
	CHECK_ERR(access("d", F_OK), ENOENT);
	CHECK_RET(rename("empty/", "d/"), 0);
	CHECK_RET(rmdir("d"), 0);
	CHECK_RET(rename("sub", "full/sub"), 0);
	expect("full/sub/f", "F");
}

static void test_renameat2(void)
{
	int dfd;

	put("p", "P");
	put("q", "Q");
	CHECK_RET(mkdir("dir", 0755), 0);
	CHECK_ERR(renameat2_(AT_FDCWD, "p", AT_FDCWD, "q", RENAME_NOREPLACE), EEXIST);
	CHECK_ERR(renameat2_(AT_FDCWD, "p", AT_FDCWD, "dir", RENAME_NOREPLACE), EEXIST);
	CHECK_ERR(renameat2_(AT_FDCWD, "p", AT_FDCWD, "none", RENAME_EXCHANGE), ENOENT);
	CHECK_ERR(renameat2_(AT_FDCWD, "p", AT_FDCWD, "q", RENAME_EXCHANGE | RENAME_NOREPLACE),
		  EINVAL);
	CHECK_ERR(renameat2_(AT_FDCWD, "p", AT_FDCWD, "q", 0x80), EINVAL);
	CHECK_RET(renameat2_(AT_FDCWD, "p", AT_FDCWD, "q", RENAME_EXCHANGE), 0);
	expect("p", "Q");
	expect("q", "P");
	/* A file and a directory trade places. */
	put("dir/inner", "I");
	CHECK_RET(renameat2_(AT_FDCWD, "p", AT_FDCWD, "dir", RENAME_EXCHANGE), 0);
	expect("dir", "Q");
	expect("p/inner", "I");
	CHECK_ERR(renameat2_(AT_FDCWD, "p", AT_FDCWD, "p/inner", RENAME_EXCHANGE), EINVAL);
	CHECK_RET(renameat2_(AT_FDCWD, "q", AT_FDCWD, "new", RENAME_NOREPLACE), 0);
	expect("new", "P");
	/* Relative to directory fds. */
	dfd = CHECK_OK(open("p", O_RDONLY | O_DIRECTORY));
	CHECK_RET(renameat(dfd, "inner", AT_FDCWD, "out"), 0);
	expect("out", "I");
	CHECK_RET(renameat(AT_FDCWD, "out", dfd, "back"), 0);
	expect("p/back", "I");
	CHECK_ERR(renameat(-1, "back", dfd, "x"), EBADF);
	close(dfd);
}

static void test_hard_links(void)
{
	put("l1", "L");
	CHECK_RET(link("l1", "l2"), 0);
	/* Two names of one file: nothing happens, both stay. */
	CHECK_RET(rename("l1", "l2"), 0);
	CHECK_RET(nlink_of("l1"), 2);
	CHECK_RET(nlink_of("l2"), 2);
	put("other", "O");
	CHECK_RET(rename("other", "l2"), 0);
	CHECK_RET(nlink_of("l1"), 1);
	expect("l2", "O");
}

int main(void)
{
	umask(022);
	scratch_make("rename");
	test_files();
	test_directories();
	test_renameat2();
	test_hard_links();
	return finish();
}
