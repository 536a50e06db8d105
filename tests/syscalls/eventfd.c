/* SPDX-License-Identifier: Apache-2.0 */
/* eventfd2: counter, semaphore mode, non-blocking, overflow, size checks, poll readiness. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>

#include "check.h"

int main(void)
{
	uint64_t v;
	struct pollfd p;
	int fd, sfd;

	CHECK_ERR(syscall(SYS_eventfd2, 0, 0x4000000), EINVAL);
	fd = CHECK_OK(syscall(SYS_eventfd2, 3, EFD_NONBLOCK | EFD_CLOEXEC));
	CHECK_RET(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_RET(read(fd, &v, 8), 8);
	CHECK_RET(v, 3);
	CHECK_ERR(read(fd, &v, 8), EAGAIN);
	CHECK_ERR(read(fd, &v, 4), EINVAL);
	v = 5;
	CHECK_RET(write(fd, &v, 8), 8);
	CHECK_RET(write(fd, &v, 8), 8);
	CHECK_RET(read(fd, &v, 8), 8);
	CHECK_RET(v, 10);
	/* The counter tops out at 2^64 - 2: a write that would pass it waits (here EAGAIN). */
	v = UINT64_MAX;
	CHECK_ERR(write(fd, &v, 8), EINVAL);
	v = UINT64_MAX - 1;
	CHECK_RET(write(fd, &v, 8), 8);
	p = (struct pollfd){ .fd = fd, .events = POLLIN | POLLOUT };
	CHECK_RET(poll(&p, 1, 0), 1);
	CHECK_RET(p.revents, POLLIN);
	v = 1;
	CHECK_ERR(write(fd, &v, 8), EAGAIN);
	CHECK_RET(read(fd, &v, 8), 8);
	CHECK_RET(poll(&p, 1, 0), 1);
	CHECK_RET(p.revents, POLLOUT);

	/* Semaphore mode: each read takes 1. */
	sfd = CHECK_OK(syscall(SYS_eventfd2, 2, EFD_SEMAPHORE | EFD_NONBLOCK));
	CHECK_RET(read(sfd, &v, 8), 8);
	CHECK_RET(v, 1);
	CHECK_RET(read(sfd, &v, 8), 8);
	CHECK_RET(v, 1);
	CHECK_ERR(read(sfd, &v, 8), EAGAIN);
	close(fd);
	close(sfd);
	return finish();
}
