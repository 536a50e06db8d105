/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: the minimal reproducers of what tests/fuzz/syscalls (the system-call fuzzer)
 * found, one block each. In husk, a broken sentry dies under these (husk exits 125 with "the
 * sentry died of signal N"), so the in-husk run fails; natively they pin the right answers.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void on_alarm(int sig)
{
	(void)sig;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART: EINTR */
	struct itimerval it = { .it_value = { 0, 100000 } };
	struct timespec req = { 0x10102464c457fL, 0 }, rem = { 0, 0 };
	struct msghdr mh = { 0 };
	int fd, sv[2];
	char c = 'x';

	/* fsync(2) and fdatasync(2) of a file of the root (a gofer file: the sentry's own host
	 * call on the donated FD, which its seccomp filter must allow). */
	fd = open("/etc/passwd", O_RDONLY);
	CHECK(fd >= 0, "open /etc/passwd: %s", strerror(errno));
	CHECK_RET(syscall(SYS_fsync, fd), 0);
	CHECK_RET(syscall(SYS_fdatasync, fd), 0);
	close(fd);

	/* nanosleep(2) for ~9e12 years: a signal interrupts it, the time left is still centuries
	 * (the sentry's deadline in nanoseconds overflowed and the sleep ended at once). */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	CHECK_ERR(syscall(SYS_nanosleep, &req, &rem), EINTR);
	CHECK(rem.tv_sec > 1000000000L, "rem.tv_sec %lld", (long long)rem.tv_sec);

	/* An empty send(2) or sendmsg(2) on a connected stream socket returns 0 (the sentry spun
	 * in conn_send, unkillable, waiting to be able to send nothing). */
	CHECK_RET(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_RET(syscall(SYS_sendto, sv[0], &c, 0, 0, NULL, 0), 0);
	CHECK_RET(syscall(SYS_sendmsg, sv[0], &mh, 0), 0);
	CHECK_RET(syscall(SYS_write, sv[0], &c, 1), 1);
	CHECK_RET(syscall(SYS_read, sv[1], &c, 1), 1);
	close(sv[0]);
	close(sv[1]);

	/* One byte written at a wild offset (128 TiB) of a memfd: written (Linux's sparse tmpfs)
	 * or -EFBIG, never -ENOMEM after the sentry tried to allocate a 256 GiB page table. */
	fd = (int)syscall(SYS_memfd_create, "fuzz", 0);
	CHECK(fd >= 0, "memfd_create: %s", strerror(errno));
	{
		long r = syscall(SYS_pwrite64, fd, &c, 1, 0x7ffdf7ffa524L);

		CHECK(r == 1 || (r == -1 && errno == EFBIG), "pwrite at 128 TiB: %ld (%s)", r,
		      r < 0 ? strerror(errno) : "no error");
	}
	close(fd);

	return finish();
}
