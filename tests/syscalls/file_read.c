/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: reading files and managing descriptors: read, pread64, readv, lseek, dup, dup2,
 * dup3, fcntl, ioctl, close, umask, on /etc/passwd and the /dev nodes. Nothing is written to
 * the root filesystem (it is read-only in husk).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <termios.h>

#include "check.h"

static char whole[65536];
static long whole_len;

static int open_ro(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | flags);
}

static void check_read(void)
{
	struct stat st;
	char buf[4096];
	long n, total = 0;
	int fd = open_ro("/etc/passwd", 0);

	CHECK(fd >= 0, "open /etc/passwd");
	CHECK_RET(syscall(SYS_fstat, fd, &st), 0);
	CHECK_RET(syscall(SYS_read, fd, buf, 5), 5);
	CHECK(!memcmp(buf, "root:", 5), "passwd starts with '%.5s'", buf);
	memcpy(whole, buf, 5);
	total = 5;
	/* Read the rest in small pieces: every byte arrives once, then EOF. */
	while ((n = syscall(SYS_read, fd, whole + total, 100)) > 0 && total < (long)sizeof(whole))
		total += n;
	CHECK(n == 0, "last read %ld", n);
	CHECK(total == st.st_size, "read %ld bytes, size %ld", total, (long)st.st_size);
	whole_len = total;
	CHECK_RET(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
	CHECK_RET(syscall(SYS_read, fd, buf, 0), 0);

	/* pread: at an offset, without moving the file position. */
	CHECK_RET(syscall(SYS_lseek, fd, 10, SEEK_SET), 10);
	CHECK_RET(syscall(SYS_pread64, fd, buf, 20, 3), 20);
	CHECK(!memcmp(buf, whole + 3, 20), "pread contents");
	CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_CUR), 10);
	CHECK_RET(syscall(SYS_pread64, fd, buf, 100, whole_len - 10), 10);
	CHECK_RET(syscall(SYS_pread64, fd, buf, 100, whole_len + 100), 0);
	CHECK_ERR(syscall(SYS_pread64, fd, buf, 10, -1L), EINVAL);
	CHECK_RET(syscall(SYS_read, fd, buf, 10), 10);
	CHECK(!memcmp(buf, whole + 10, 10), "read after lseek");

	/* lseek. */
	CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_END), whole_len);
	CHECK_RET(syscall(SYS_lseek, fd, -5L, SEEK_END), whole_len - 5);
	CHECK_RET(syscall(SYS_lseek, fd, 2, SEEK_CUR), whole_len - 3);
	CHECK_RET(syscall(SYS_lseek, fd, whole_len + 1000, SEEK_SET), whole_len + 1000);
	CHECK_RET(syscall(SYS_read, fd, buf, 10), 0);
	CHECK_ERR(syscall(SYS_lseek, fd, -1L, SEEK_SET), EINVAL);
	CHECK_ERR(syscall(SYS_lseek, fd, 0, 99), EINVAL);

	/* readv: scattered over three buffers, in order. */
	{
		char a[7], b[1], c[50];
		struct iovec iov[4] = {
			{ a, sizeof(a) }, { b, 0 }, { b, sizeof(b) }, { c, sizeof(c) }
		};
		struct iovec *many = calloc(1025, sizeof(*many));

		CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_SET), 0);
		CHECK_RET(syscall(SYS_readv, fd, iov, 4), 58);
		CHECK(!memcmp(a, whole, 7) && b[0] == whole[7] && !memcmp(c, whole + 8, 50),
		      "readv contents");
		CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_CUR), 58);
		CHECK_RET(syscall(SYS_readv, fd, iov, 0), 0);
		CHECK_ERR(syscall(SYS_readv, fd, many, 1025), EINVAL);
		CHECK_ERR(syscall(SYS_readv, fd, iov, -1), EINVAL);
		iov[0].iov_len = (size_t)-1; /* more than SSIZE_MAX */
		CHECK_ERR(syscall(SYS_readv, fd, iov, 1), EINVAL);
		free(many);
	}
	syscall(SYS_close, fd);

	/* A read-only descriptor cannot write and a write-only one cannot read. */
	fd = open_ro("/dev/null", 0);
	CHECK_ERR(syscall(SYS_write, fd, "x", 1), EBADF);
	syscall(SYS_close, fd);
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY);
	CHECK(fd >= 0, "open /dev/null O_WRONLY");
	CHECK_ERR(syscall(SYS_read, fd, buf, 1), EBADF);
	CHECK_ERR(syscall(SYS_pread64, fd, buf, 1, 0), EBADF);
	syscall(SYS_close, fd);

	/* O_CREAT of an existing file without O_EXCL just opens it. */
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY | O_CREAT, 0644);
	CHECK(fd >= 0, "O_CREAT|O_RDONLY of an existing file: %s", strerror(errno));
	syscall(SYS_close, fd);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY | O_CREAT | O_EXCL, 0644),
		  EEXIST);
}

static void check_devices(void)
{
	char buf[256];
	int fd;
	int zero = 1;

	fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
	CHECK(fd >= 0, "open /dev/null");
	CHECK_RET(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
	CHECK_RET(syscall(SYS_write, fd, "hello", 5), 5);
	CHECK_RET(syscall(SYS_lseek, fd, 100, SEEK_SET), 0);
	syscall(SYS_close, fd);

	fd = open_ro("/dev/zero", 0);
	memset(buf, 0xff, sizeof(buf));
	CHECK_RET(syscall(SYS_read, fd, buf, sizeof(buf)), (long)sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		zero &= buf[i] == 0;
	CHECK(zero, "/dev/zero gave non-zero bytes");
	syscall(SYS_close, fd);

	fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/full", O_RDWR);
	CHECK_ERR(syscall(SYS_write, fd, "x", 1), ENOSPC);
	memset(buf, 0xff, 16);
	CHECK_RET(syscall(SYS_read, fd, buf, 16), 16);
	CHECK(buf[0] == 0 && buf[15] == 0, "/dev/full reads zeros");
	syscall(SYS_close, fd);

	fd = open_ro("/dev/urandom", 0);
	CHECK_RET(syscall(SYS_read, fd, buf, 64), 64);
	syscall(SYS_close, fd);

	/* Not a terminal. */
	fd = open_ro("/dev/null", 0);
	{
		struct termios tio;

		CHECK_ERR(syscall(SYS_ioctl, fd, TCGETS, &tio), ENOTTY);
	}
	syscall(SYS_close, fd);
}

static void check_descriptors(void)
{
	int fd = open_ro("/etc/passwd", 0), d, d2, low;
	char buf[16];

	CHECK(fd >= 0, "open");
	/* dup returns the lowest free descriptor and shares the file position. */
	low = open_ro("/dev/null", 0);
	syscall(SYS_close, low);
	d = (int)syscall(SYS_dup, fd);
	CHECK(d == low, "dup gave %d, lowest free is %d", d, low);
	CHECK_RET(syscall(SYS_lseek, fd, 7, SEEK_SET), 7);
	CHECK_RET(syscall(SYS_lseek, d, 0, SEEK_CUR), 7);
	CHECK_RET(syscall(SYS_read, d, buf, 3), 3);
	CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_CUR), 10);
	CHECK_RET(syscall(SYS_fcntl, d, F_GETFD), 0);

	/* dup2 and dup3. */
	CHECK_RET(syscall(SYS_dup2, fd, fd), fd);
	CHECK_RET(syscall(SYS_dup2, fd, 100), 100);
	CHECK_RET(syscall(SYS_lseek, 100, 0, SEEK_CUR), 10);
	d2 = open_ro("/dev/zero", 0);
	CHECK_RET(syscall(SYS_dup2, fd, d2), d2); /* replaces the open /dev/zero */
	CHECK_RET(syscall(SYS_read, d2, buf, 4), 4);
	CHECK(!memcmp(buf, whole + 10, 4), "dup2 over an open fd reads the new file");
	CHECK_ERR(syscall(SYS_dup3, fd, fd, 0), EINVAL);
	CHECK_ERR(syscall(SYS_dup3, fd, 101, 1), EINVAL);
	CHECK_RET(syscall(SYS_dup3, fd, 101, O_CLOEXEC), 101);
	CHECK_RET(syscall(SYS_fcntl, 101, F_GETFD), FD_CLOEXEC);
	CHECK_ERR(syscall(SYS_dup2, 555, 102), EBADF);
	CHECK_ERR(syscall(SYS_dup2, fd, -1), EBADF);
	CHECK_ERR(syscall(SYS_dup, 555), EBADF);

	/* fcntl. */
	CHECK_RET(syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_GETFD), FD_CLOEXEC);
	CHECK_RET(syscall(SYS_fcntl, fd, F_SETFD, 0), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_GETFD), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK | O_APPEND), O_RDONLY);
	CHECK_RET(syscall(SYS_fcntl, fd, F_SETFL, O_NONBLOCK | O_WRONLY), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK),
		  O_NONBLOCK | O_RDONLY);
	CHECK_RET(syscall(SYS_fcntl, d, F_GETFL) & O_NONBLOCK, O_NONBLOCK); /* shared */
	CHECK_RET(syscall(SYS_fcntl, fd, F_SETFL, 0), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_DUPFD, 50), 50);
	CHECK_RET(syscall(SYS_fcntl, fd, F_DUPFD, 50), 51);
	CHECK_RET(syscall(SYS_fcntl, 51, F_GETFD), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 50), 52);
	CHECK_RET(syscall(SYS_fcntl, 52, F_GETFD), FD_CLOEXEC);
	CHECK_ERR(syscall(SYS_fcntl, fd, F_DUPFD, -1), EINVAL);
	CHECK_ERR(syscall(SYS_fcntl, fd, 9999), EINVAL);
	CHECK_ERR(syscall(SYS_fcntl, 555, F_GETFD), EBADF);

	/* ioctl FIOCLEX/FIONCLEX work on any descriptor. */
	CHECK_RET(syscall(SYS_ioctl, fd, FIOCLEX), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_GETFD), FD_CLOEXEC);
	CHECK_RET(syscall(SYS_ioctl, fd, FIONCLEX), 0);
	CHECK_RET(syscall(SYS_fcntl, fd, F_GETFD), 0);
	CHECK_ERR(syscall(SYS_ioctl, 555, FIOCLEX), EBADF);

	/* close. */
	CHECK_RET(syscall(SYS_close, 50), 0);
	CHECK_ERR(syscall(SYS_close, 50), EBADF);
	CHECK_ERR(syscall(SYS_read, 50, buf, 1), EBADF);
	CHECK_ERR(syscall(SYS_lseek, 50, 0, SEEK_SET), EBADF);
	CHECK_ERR(syscall(SYS_close, -1), EBADF);
	CHECK_RET(syscall(SYS_fcntl, fd, F_DUPFD, 50), 50); /* the lowest free again */
	for (int i = 50; i <= 52; i++)
		syscall(SYS_close, i);
	syscall(SYS_close, 100);
	syscall(SYS_close, 101);
	syscall(SYS_close, d);
	syscall(SYS_close, d2);
	/* The file stays open while one descriptor refers to it. */
	CHECK_RET(syscall(SYS_pread64, fd, buf, 4, 0), 4);
	CHECK(!memcmp(buf, "root", 4), "fd still reads");
	syscall(SYS_close, fd);
}

static void check_umask(void)
{
	long old = syscall(SYS_umask, 077);

	CHECK(old >= 0 && old <= 0777, "umask %lo", old);
	CHECK_RET(syscall(SYS_umask, 022), 077);
	CHECK_RET(syscall(SYS_umask, 01777), 022);
	CHECK_RET(syscall(SYS_umask, old), 0777); /* only the permission bits are kept */
}

/* preadv/pwritev and their v2 forms: positioned, the file offset untouched; -1 in v2 uses it. */
static void check_preadv(void)
{
	char a[4], b[8], ref[12];
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	int fd = open("/etc/passwd", O_RDONLY);
	int pfd[2];

	CHECK(fd >= 0, "open /etc/passwd: %s", strerror(errno));
	CHECK_RET(pread(fd, ref, sizeof(ref), 2), 12);
	CHECK_RET(syscall(SYS_preadv, fd, iov, 2L, 2L, 0L), 12);
	CHECK(memcmp(a, ref, 4) == 0 && memcmp(b, ref + 4, 8) == 0, "preadv contents differ");
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 0);
	CHECK_RET(syscall(SYS_preadv2, fd, iov, 1L, -1L, 0L, 0L), 4);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 4);
	CHECK_RET(syscall(SYS_preadv2, fd, iov, 1L, 2L, 0L, 0L), 4);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 4);
	CHECK_ERR(syscall(SYS_preadv, fd, iov, 1L, -5L, 0L), EINVAL);
	CHECK_ERR(syscall(SYS_preadv2, fd, iov, 1L, 0L, 0L, 0x8000L), EOPNOTSUPP);
	CHECK_ERR(syscall(SYS_pwritev, fd, iov, 1L, 0L, 0L), EBADF);
	CHECK_ERR(syscall(SYS_preadv, 9999L, iov, 1L, 0L, 0L), EBADF);
	close(fd);
	if (pipe(pfd) == 0) {
		CHECK_ERR(syscall(SYS_preadv, (long)pfd[0], iov, 1L, 0L, 0L), ESPIPE);
		close(pfd[0]);
		close(pfd[1]);
	}
}

int main(void)
{
	check_read();
	check_preadv();
	check_devices();
	check_descriptors();
	check_umask();
	return finish();
}
