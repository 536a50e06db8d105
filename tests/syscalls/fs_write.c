/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing files: write/pwrite64/writev, O_APPEND, O_TRUNC, O_EXCL, holes, ftruncate and
 * truncate, fallocate, fsync/fdatasync, the times and sizes stat reports, and the errors.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "check.h"
#include "scratch.h"

static long file_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) < 0 ? -1 : (long)st.st_size;
}

static void check_contents(int fd, const char *want, size_t len)
{
	char buf[256] = { 0 };

	CHECK_RET(pread(fd, buf, sizeof(buf), 0), (long)len);
	CHECK(memcmp(buf, want, len) == 0, "contents %.*s, want %.*s", (int)len, buf, (int)len,
	      want);
}

static void test_basic_writes(void)
{
	struct iovec iov[2] = { { "ab", 2 }, { "cde", 3 } };
	int fd = CHECK_OK(open("f", O_CREAT | O_EXCL | O_RDWR, 0640));
	struct stat st;

	CHECK_RET(write(fd, "hello", 5), 5);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 5);
	CHECK_RET(writev(fd, iov, 2), 5);
	CHECK_RET(pwrite(fd, "HE", 2, 0), 2);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 10);
	/* pwritev(2) would do here, but husk has no preadv/pwritev yet (-ENOSYS). */
	CHECK_RET(pwrite(fd, "abcde", 5, 8), 5);
	CHECK_RET(file_size(fd), 13);
	{
		char buf[16] = { 0 };

		CHECK_RET(pread(fd, buf, sizeof(buf), 0), 13);
		CHECK(memcmp(buf, "HElloabcabcde", 13) == 0, "contents %s", buf);
	}
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640, "mode %o", st.st_mode);
	CHECK(st.st_nlink == 1, "nlink %lu", (unsigned long)st.st_nlink);
	CHECK_RET(write(fd, "", 0), 0);
	CHECK_ERR(open("f", O_CREAT | O_EXCL | O_RDWR, 0640), EEXIST);
	CHECK_RET(fsync(fd), 0);
	CHECK_RET(fdatasync(fd), 0);
	close(fd);
}

static void test_append_and_trunc(void)
{
	int fd = CHECK_OK(open("a", O_CREAT | O_WRONLY | O_TRUNC, 0644));
	int ap;

	CHECK_RET(write(fd, "0123456789", 10), 10);
	close(fd);
	ap = CHECK_OK(open("a", O_RDWR | O_APPEND));
	CHECK_RET(lseek(ap, 2, SEEK_SET), 2);
	CHECK_RET(write(ap, "xy", 2), 2);
	CHECK_RET(lseek(ap, 0, SEEK_CUR), 12);
	/* pwrite on an O_APPEND file appends too (a Linux bug kept for compatibility). */
	CHECK_RET(pwrite(ap, "z", 1, 0), 1);
	check_contents(ap, "0123456789xyz", 13);
	close(ap);
	fd = CHECK_OK(open("a", O_RDWR | O_TRUNC));
	CHECK_RET(file_size(fd), 0);
	close(fd);
}

static void test_holes_and_truncate(void)
{
	int fd = CHECK_OK(open("h", O_CREAT | O_RDWR | O_TRUNC, 0644));
	char buf[8192];
	int zero = 1;

	CHECK_RET(lseek(fd, 10000, SEEK_SET), 10000);
	CHECK_RET(write(fd, "end", 3), 3);
	CHECK_RET(file_size(fd), 10003);
	CHECK_RET(pread(fd, buf, sizeof(buf), 100), (long)sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		zero &= buf[i] == 0;
	CHECK(zero, "a hole reads as zeros");
	CHECK_RET(ftruncate(fd, 5), 0);
	CHECK_RET(file_size(fd), 5);
	CHECK_RET(read(fd, buf, 10), 0); /* the position (10003) is past the end now */
	CHECK_RET(ftruncate(fd, 20000), 0);
	CHECK_RET(pread(fd, buf, 16, 10000), 16);
	CHECK(buf[0] == 0 && buf[2] == 0, "bytes past an old end read as zeros after growing");
	CHECK_RET(truncate("h", 7), 0);
	CHECK_RET(file_size(fd), 7);
	CHECK_ERR(ftruncate(fd, -1), EINVAL);
	CHECK_ERR(truncate("h", -1), EINVAL);
	CHECK_ERR(truncate(".", 0), EISDIR);
	CHECK_ERR(truncate("missing", 0), ENOENT);
	close(fd);
	fd = CHECK_OK(open("h", O_RDONLY));
	CHECK_ERR(ftruncate(fd, 0), EINVAL);
	CHECK_ERR(write(fd, "x", 1), EBADF);
	close(fd);
}

static void test_fallocate(void)
{
	int fd = CHECK_OK(open("fa", O_CREAT | O_RDWR | O_TRUNC, 0644));
	struct stat st;

	CHECK_RET(fallocate(fd, 0, 0, 8192), 0);
	CHECK_RET(file_size(fd), 8192);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_blocks >= 16, "blocks %ld", (long)st.st_blocks);
	CHECK_RET(fallocate(fd, FALLOC_FL_KEEP_SIZE, 8192, 4096), 0);
	CHECK_RET(file_size(fd), 8192);
	CHECK_RET(pwrite(fd, "data", 4, 4096), 4);
	CHECK_RET(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096), 0);
	{
		char buf[4] = { 1, 1, 1, 1 };

		CHECK_RET(pread(fd, buf, 4, 4096), 4);
		CHECK(buf[0] == 0 && buf[3] == 0, "a punched hole reads as zeros");
	}
	CHECK_ERR(fallocate(fd, 0, -1, 10), EINVAL);
	CHECK_ERR(fallocate(fd, 0, 0, 0), EINVAL);
	close(fd);
	fd = CHECK_OK(open("fa", O_RDONLY));
	CHECK_ERR(fallocate(fd, 0, 0, 10), EBADF);
	close(fd);
}

static void test_times(void)
{
	struct timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
	struct stat st;
	int fd = CHECK_OK(open("t", O_CREAT | O_RDWR | O_TRUNC, 0644));

	CHECK_RET(futimens(fd, ts), 0);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_atime == 1000 && st.st_mtime == 2000, "times %ld %ld", (long)st.st_atime,
	      (long)st.st_mtime);
	CHECK_RET(write(fd, "x", 1), 1);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_mtime > 2000 && st.st_ctime >= st.st_mtime, "a write updates mtime and ctime");
	CHECK_RET(utimensat(AT_FDCWD, "t", ts, 0), 0);
	CHECK_RET(ftruncate(fd, 1), 0); /* same size: Linux still updates the times */
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_mtime > 2000, "ftruncate updates mtime");
	CHECK_RET(utimensat(AT_FDCWD, "t", ts, 0), 0);
	close(fd);
	fd = CHECK_OK(open("t", O_WRONLY | O_TRUNC));
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_mtime > 2000, "O_TRUNC updates mtime");
	close(fd);
}

static void test_errors(void)
{
	int dfd = CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));

	CHECK_ERR(write(dfd, "x", 1), EBADF);
	CHECK_ERR(open(".", O_WRONLY), EISDIR);
	CHECK_ERR(open("nodir/f", O_CREAT | O_WRONLY, 0644), ENOENT);
	CHECK_ERR(open("f/x", O_CREAT | O_WRONLY, 0644), ENOTDIR);
	CHECK_ERR(open("newfile/", O_CREAT | O_WRONLY, 0644), EISDIR);
	CHECK_ERR(write(-1, "x", 1), EBADF);
	close(dfd);
}

int main(void)
{
	umask(022);
	scratch_make("fs_write");
	test_basic_writes();
	test_append_and_trunc();
	test_holes_and_truncate();
	test_fallocate();
	test_times();
	test_errors();
	return finish();
}
