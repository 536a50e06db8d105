/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_badiov: readv/writev with an unmapped iovec segment. On regular files (tmpfs, the overlay in
 * /tmp) a bad segment after a good one moves the good one (a short count, the offset advanced by
 * it); a bad first segment fails with EFAULT and moves nothing. On pipes and Unix stream sockets
 * a bad first segment fails with EFAULT and leaves the data where it was. A pipe moves whole
 * buffers (pages): a bad segment after a good one fails a small call whole.
 *
 * Not checked yet (husk differs): Unix sockets copy whole skbs, so a small writev or readv with a
 * bad segment after a good one fails with EFAULT and moves nothing; husk moves the good segment.
 * Nor what a failed pipe readv leaves in the good segment (Linux has copied into it).
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

	if (CHECK_OK(fd) < 0)
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

/*
 * A pipe moves whole buffers (pages): a small vector with a bad segment after a good one fails
 * with EFAULT and moves nothing, unless all the pipe holds fits before the bad segment; whole
 * pages before it move.
 */
static void check_pipe_good_bad(void)
{
	static char page[2 * 4096];
	char a[4] = "abcd", b[4] = { 0 }, got[16] = { 0 };
	struct iovec good_bad[2] = { { a, 4 }, { bad, 4 } };
	struct iovec rd_good_bad[2] = { { b, 4 }, { bad, 4 } };
	struct iovec page_bad[2] = { { page, 4096 }, { bad, 4 } };
	int p[2];

	if (CHECK_OK(pipe2(p, O_NONBLOCK)) != 0)
		return;
	CHECK_ERR(writev(p[1], good_bad, 2), EFAULT);
	CHECK_ERR(read(p[0], got, sizeof(got)), EAGAIN);
	CHECK_RET(write(p[1], "ABCDEFGH", 8), 8);
	CHECK_ERR(readv(p[0], rd_good_bad, 2), EFAULT);
	CHECK_RET(read(p[0], got, sizeof(got)), 8);
	CHECK(memcmp(got, "ABCDEFGH", 8) == 0, "pipe: the data left is '%.8s'", got);
	/* All the pipe holds fits in the good segment: it moves. */
	CHECK_RET(write(p[1], "XYZ", 3), 3);
	CHECK_RET(readv(p[0], rd_good_bad, 2), 3);
	CHECK(memcmp(b, "XYZ", 3) == 0, "pipe: readv got '%.3s'", b);
	/* Whole pages before the bad segment move. */
	memset(page, 'p', sizeof(page));
	CHECK_RET(writev(p[1], page_bad, 2), 4096);
	CHECK_RET(write(p[1], page, 4096), 4096);
	memset(page, 0, sizeof(page));
	CHECK_RET(readv(p[0], page_bad, 2), 4096);
	CHECK(page[0] == 'p' && page[4095] == 'p', "pipe: readv of a page got %c..%c", page[0],
	      page[4095]);
	CHECK_RET(read(p[0], page, sizeof(page)), 4096);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	int p[2], s[2];

	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(bad, 4096);
	check_file("/dev/shm/rw_badiov");
	check_file("/tmp/rw_badiov");
	if (CHECK_OK(pipe2(p, O_NONBLOCK)) == 0)
		check_stream("pipe", p[0], p[1]);
	check_pipe_good_bad();
	if (CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s)) == 0)
		check_stream("unix stream", s[0], s[1]);
	return finish();
}
