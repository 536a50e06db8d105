/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_badiov: readv/writev with an unmapped iovec segment. On regular files (tmpfs, the overlay in
 * /tmp) a bad segment after a good one moves the good one (a short count, the offset advanced by
 * it); a bad first segment fails with EFAULT and moves nothing. On pipes and Unix stream sockets
 * a bad first segment fails with EFAULT and leaves the data where it was.
 *
 * Not checked yet (husk differs): on pipes and sockets Linux copies whole pipe buffers or skbs,
 * so a small writev or readv with a bad segment after a good one fails with EFAULT and moves
 * nothing (a read leaves the data in the pipe); husk moves the good segment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "check.h"

static void *bad;

static void check_file(const char *path)
{
	char a[4] = "abcd", b[4] = { 0 }, got[16] = { 0 };
	struct iovec good_bad[2] = { { a, 4 }, { bad, 4 } };
	struct iovec rd_good_bad[2] = { { b, 4 }, { bad, 4 } };
	struct iovec rd_bad_good[2] = { { bad, 4 }, { b, 4 } };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (!CHECK_OK(fd))
		return;
	unlink(path);
	CHECK_RET(writev(fd, good_bad, 2), 4);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 4);
	CHECK_RET(pread(fd, got, sizeof(got), 0), 4);
	CHECK(memcmp(got, "abcd", 4) == 0, "%s: the file holds '%.4s'", path, got);
	CHECK_ERR(writev(fd, rd_bad_good, 2), EFAULT);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 4);
	CHECK_RET(pwrite(fd, "ABCDEFGH", 8, 0), 8);
	CHECK_RET(lseek(fd, 0, SEEK_SET), 0);
	CHECK_RET(readv(fd, rd_good_bad, 2), 4);
	CHECK(memcmp(b, "ABCD", 4) == 0, "%s: readv's good segment got '%.4s'", path, b);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 4);
	CHECK_ERR(readv(fd, rd_bad_good, 2), EFAULT);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 4);
	close(fd);
}

/* A pipe or stream socket: a bad first segment moves nothing either way. */
static void check_stream(const char *what, int rfd, int wfd)
{
	char b[4], got[16] = { 0 };
	struct iovec bad_good[2] = { { bad, 4 }, { b, 4 } };

	memcpy(b, "wxyz", 4);
	CHECK_ERR(writev(wfd, bad_good, 2), EFAULT);
	CHECK_ERR(read(rfd, got, sizeof(got)), EAGAIN);
	CHECK_RET(write(wfd, "ABCDEFGH", 8), 8);
	CHECK_ERR(readv(rfd, bad_good, 2), EFAULT);
	CHECK(memcmp(b, "wxyz", 4) == 0, "%s: the good segment changed", what);
	CHECK_RET(read(rfd, got, sizeof(got)), 8);
	CHECK(memcmp(got, "ABCDEFGH", 8) == 0, "%s: the data left is '%.8s'", what, got);
	close(rfd);
	close(wfd);
}

int main(void)
{
	int p[2], s[2];

	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(bad, 4096);
	check_file("/dev/shm/rw_badiov");
	check_file("/tmp/rw_badiov");
	if (CHECK_OK(pipe2(p, O_NONBLOCK)))
		check_stream("pipe", p[0], p[1]);
	if (CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s)))
		check_stream("unix stream", s[0], s[1]);
	return finish();
}
