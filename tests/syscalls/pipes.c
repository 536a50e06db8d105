/* SPDX-License-Identifier: Apache-2.0 */
/* pipe, pipe2: flags, capacity, atomicity, EPIPE, packets, FIONREAD, F_{GET,SET}PIPE_SZ. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "check.h"

static long raw_pipe2(int fds[2], int flags)
{
	return syscall(SYS_pipe2, fds, flags);
}

static short revents(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

int main(void)
{
	int p[2], q[2], n;
	char buf[70000];
	struct stat st;

	/* Flags: O_CLOEXEC on both fds, O_NONBLOCK on both files; junk gives EINVAL. */
	CHECK_RET(raw_pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	CHECK_RET(fcntl(p[0], F_GETFD), FD_CLOEXEC);
	CHECK_RET(fcntl(p[1], F_GETFD), FD_CLOEXEC);
	CHECK((fcntl(p[0], F_GETFL) & (O_NONBLOCK | O_ACCMODE)) == (O_NONBLOCK | O_RDONLY),
	      "read end flags %#x", fcntl(p[0], F_GETFL));
	CHECK((fcntl(p[1], F_GETFL) & (O_NONBLOCK | O_ACCMODE)) == (O_NONBLOCK | O_WRONLY),
	      "write end flags %#x", fcntl(p[1], F_GETFL));
	CHECK_ERR(raw_pipe2(q, 0x1), EINVAL);
	CHECK_ERR(syscall(SYS_pipe, (void *)8), EFAULT);

	/* fstat: a FIFO; wrong-direction I/O: EBADF; empty non-blocking read: EAGAIN. */
	CHECK_RET(fstat(p[0], &st), 0);
	CHECK(S_ISFIFO(st.st_mode), "mode %o", st.st_mode);
	CHECK_ERR(write(p[0], "x", 1), EBADF);
	CHECK_ERR(read(p[1], buf, 1), EBADF);
	CHECK_ERR(read(p[0], buf, 1), EAGAIN);
	CHECK_ERR(lseek(p[0], 0, SEEK_SET), ESPIPE);
	CHECK(revents(p[0], POLLIN) == 0, "empty pipe polls readable");
	CHECK(revents(p[1], POLLOUT) == POLLOUT, "empty pipe not writable");

	/*
	 * Capacity 64 KiB, in page-sized slots on Linux: tests stay on page multiples, where a
	 * byte ring and Linux's slots agree. The last partial write, then EAGAIN; FIONREAD.
	 */
	CHECK_RET(fcntl(p[0], F_GETPIPE_SZ), 65536);
	memset(buf, 'a', sizeof(buf));
	CHECK_RET(write(p[1], buf, 61440), 61440);
	CHECK_RET(write(p[1], buf, 10000), 4096);
	CHECK_ERR(write(p[1], buf, 1), EAGAIN);
	CHECK(revents(p[1], POLLOUT) == 0, "full pipe polls writable");
	CHECK(revents(p[0], POLLIN) == POLLIN, "full pipe not readable");
	CHECK_RET(ioctl(p[0], FIONREAD, &n), 0);
	CHECK_RET(n, 65536);
	/* A write of at most PIPE_BUF is atomic: with 96 bytes free, 200 bytes give EAGAIN. */
	CHECK_RET(read(p[0], buf, 4096), 4096);
	CHECK_RET(write(p[1], buf, 4000), 4000);
	CHECK_ERR(write(p[1], buf, 200), EAGAIN);
	CHECK_RET(write(p[1], buf, 50), 50);
	/* Shrinking below the content: EBUSY; reading it all back in one read. */
	CHECK_ERR(fcntl(p[1], F_SETPIPE_SZ, 4096), EBUSY);
	CHECK_RET(read(p[0], buf, sizeof(buf)), 65490);

	/* F_SETPIPE_SZ rounds up to a power-of-two number of pages. */
	CHECK_RET(fcntl(p[1], F_SETPIPE_SZ, 5000), 8192);
	CHECK_RET(fcntl(p[0], F_GETPIPE_SZ), 8192);
	CHECK_RET(fcntl(p[1], F_SETPIPE_SZ, 0), 4096);
	CHECK_RET(write(p[1], buf, 5000), 4096);
	CHECK_RET(read(p[0], buf, sizeof(buf)), 4096);
	CHECK_ERR(fcntl(0 + open("/", O_RDONLY), F_GETPIPE_SZ), EBADF);

	/* No reader: EPIPE (SIGPIPE ignored); no writer: EOF and POLLHUP. */
	signal(SIGPIPE, SIG_IGN);
	CHECK_RET(raw_pipe2(q, 0), 0);
	CHECK_RET(write(q[1], "hi", 2), 2);
	CHECK_RET(close(q[1]), 0);
	CHECK(revents(q[0], POLLIN) == (POLLIN | POLLHUP), "revents %#x", revents(q[0], POLLIN));
	CHECK_RET(read(q[0], buf, 10), 2);
	CHECK_RET(read(q[0], buf, 10), 0);
	CHECK_RET(close(q[0]), 0);
	CHECK_RET(raw_pipe2(q, 0), 0);
	CHECK_RET(close(q[0]), 0);
	CHECK_ERR(write(q[1], "x", 1), EPIPE);
	CHECK(revents(q[1], POLLOUT) & POLLERR, "no POLLERR without a reader");
	CHECK_RET(close(q[1]), 0);

	/* O_DIRECT: each write is a packet; a short read drops the rest of its packet. */
	CHECK_RET(raw_pipe2(q, O_DIRECT | O_NONBLOCK), 0);
	CHECK_RET(write(q[1], "hello", 5), 5);
	CHECK_RET(write(q[1], "world!", 6), 6);
	CHECK_RET(read(q[0], buf, 100), 5);
	CHECK(memcmp(buf, "hello", 5) == 0, "first packet");
	CHECK_RET(read(q[0], buf, 3), 3);
	CHECK(memcmp(buf, "wor", 3) == 0, "second packet");
	CHECK_ERR(read(q[0], buf, 100), EAGAIN);
	/* Without O_DIRECT a read takes everything there is. */
	CHECK_RET(write(p[1], "abc", 3), 3);
	CHECK_RET(write(p[1], "def", 3), 3);
	CHECK_RET(read(p[0], buf, 100), 6);
	close(q[0]);
	close(q[1]);
	return finish();
}
