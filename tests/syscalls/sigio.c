/* SPDX-License-Identifier: Apache-2.0 */
/*
 * F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX, F_SETSIG, F_GETSIG and O_ASYNC: their values and
 * errors, and the signal that data arriving on a pipe, a Unix socket, loopback TCP and UDP
 * sockets and a pseudo-terminal sends to the owner: plain SIGIO, or the F_SETSIG signal with
 * si_code POLL_IN, si_band POLLIN|POLLRDNORM and si_fd; the owner a process, a thread
 * (F_OWNER_TID) or a process group (a negative F_SETOWN).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "child.h"

#define RTSIG (SIGRTMIN + 2)

static void on_signal(int sig)
{
}

/* Waits (generously) for sig, which is blocked; returns it with *si, or -1. */
static int wait_sig(int sig, siginfo_t *si)
{
	struct timespec ts = { 20, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	return sigtimedwait(&set, si, &ts);
}

/* Discards pending instances of sig (blocked). */
static void flush_sig(int sig)
{
	struct timespec ts = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	while (sigtimedwait(&set, NULL, &ts) > 0)
		;
}

static void check_values(void)
{
	struct f_owner_ex ex = { 0 };
	int p[2];

	CHECK_OK(pipe(p));
	CHECK_RET(fcntl(p[0], F_GETOWN), 0);
	CHECK_RET(fcntl(p[0], F_GETOWN_EX, &ex), 0);
	/* Linux's initial owner type is PIDTYPE_PID: F_OWNER_TID. */
	CHECK(ex.type == F_OWNER_TID && ex.pid == 0, "initial owner %d %d", ex.type, ex.pid);
	CHECK_RET(fcntl(p[0], F_GETSIG), 0);
	CHECK_RET(fcntl(p[0], F_SETOWN, getpid()), 0);
	CHECK_RET(fcntl(p[0], F_GETOWN), getpid());
	CHECK_RET(fcntl(p[0], F_GETOWN_EX, &ex), 0);
	CHECK(ex.type == F_OWNER_PID && ex.pid == getpid(), "owner %d %d", ex.type, ex.pid);
	CHECK_RET(fcntl(p[0], F_SETOWN, -getpgrp()), 0);
	CHECK_RET(fcntl(p[0], F_GETOWN), -getpgrp());
	CHECK_RET(fcntl(p[0], F_GETOWN_EX, &ex), 0);
	CHECK(ex.type == F_OWNER_PGRP && ex.pid == getpgrp(), "pgrp owner %d %d", ex.type, ex.pid);
	ex = (struct f_owner_ex){ F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	CHECK_RET(fcntl(p[0], F_SETOWN_EX, &ex), 0);
	CHECK_RET(fcntl(p[0], F_GETOWN), syscall(SYS_gettid));
	memset(&ex, 0, sizeof(ex));
	CHECK_RET(fcntl(p[0], F_GETOWN_EX, &ex), 0);
	CHECK(ex.type == F_OWNER_TID && ex.pid == syscall(SYS_gettid), "tid owner %d %d", ex.type,
	      ex.pid);
	/* Errors. */
	ex = (struct f_owner_ex){ 7, getpid() };
	CHECK_ERR(fcntl(p[0], F_SETOWN_EX, &ex), EINVAL);
	ex = (struct f_owner_ex){ F_OWNER_PID, 4000000 };
	CHECK_ERR(fcntl(p[0], F_SETOWN_EX, &ex), ESRCH);
	CHECK_ERR(fcntl(p[0], F_SETOWN, 4000000), ESRCH);
	CHECK_ERR(fcntl(p[0], F_SETOWN_EX, (void *)16), EFAULT);
	CHECK_ERR(fcntl(p[0], F_SETSIG, 65), EINVAL);
	CHECK_ERR(fcntl(p[0], F_SETSIG, -1), EINVAL);
	CHECK_RET(fcntl(p[0], F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(p[0], F_GETSIG), RTSIG);
	/* Owner 0: nobody. */
	CHECK_RET(fcntl(p[0], F_SETOWN, 0), 0);
	CHECK_RET(fcntl(p[0], F_GETOWN), 0);
	/* O_ASYNC shows in F_GETFL, and FIOASYNC sets it too. */
	CHECK_RET(fcntl(p[0], F_SETFL, O_ASYNC), 0);
	CHECK(fcntl(p[0], F_GETFL) & O_ASYNC, "O_ASYNC not set");
	{
		int off = 0;

		CHECK_RET(ioctl(p[0], FIOASYNC, &off), 0);
		CHECK(!(fcntl(p[0], F_GETFL) & O_ASYNC), "O_ASYNC still set");
	}
	/* dup'ed descriptors share the owner (it belongs to the open file). */
	CHECK_RET(fcntl(p[0], F_SETOWN, getpid()), 0);
	{
		int d = CHECK_OK(dup(p[0]));

		CHECK_RET(fcntl(d, F_GETOWN), getpid());
		close(d);
	}
	close(p[0]);
	close(p[1]);
}

/*
 * Makes rfd async with this process as owner: plain SIGIO (setsig false) or RTSIG with its
 * information; then wfd's write must signal.
 */
static void check_signal(const char *what, int rfd, int wfd, bool setsig, bool via_ioctl)
{
	siginfo_t si;
	int sig = setsig ? RTSIG : SIGIO, on = 1;

	flush_sig(SIGIO);
	flush_sig(RTSIG);
	CHECK_RET(fcntl(rfd, F_SETOWN, getpid()), 0);
	CHECK_RET(fcntl(rfd, F_SETSIG, setsig ? RTSIG : 0), 0);
	if (via_ioctl)
		CHECK_RET(ioctl(rfd, FIOASYNC, &on), 0);
	else
		CHECK_RET(fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_ASYNC), 0);
	CHECK_RET(write(wfd, "ping", 4), 4);
	memset(&si, 0, sizeof(si));
	CHECK(wait_sig(sig, &si) == sig, "%s: no signal %d: %s", what, sig, strerror(errno));
	if (setsig) {
		CHECK(si.si_code == POLL_IN, "%s: si_code %d", what, si.si_code);
		CHECK(si.si_band == (POLLIN | POLLRDNORM), "%s: si_band %#lx", what,
		      (long)si.si_band);
		CHECK(si.si_fd == rfd, "%s: si_fd %d, want %d", what, si.si_fd, rfd);
	} else {
		CHECK(si.si_code == SI_KERNEL, "%s: si_code %d", what, si.si_code);
	}
	/* Off: no more signals. */
	{
		char buf[64];
		struct timespec ts = { 0, 0 };
		sigset_t set;

		while (read(rfd, buf, sizeof(buf)) == sizeof(buf))
			;
		CHECK_RET(fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) & ~O_ASYNC), 0);
		flush_sig(sig);
		CHECK_RET(write(wfd, "more", 4), 4);
		sigemptyset(&set);
		sigaddset(&set, sig);
		/* A signal that is sent is sent at once here: poll first, so one would be queued. */
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		CHECK_RET(poll(&pfd, 1, 20000), 1);
		CHECK_ERR(sigtimedwait(&set, NULL, &ts), EAGAIN);
		while (read(rfd, buf, sizeof(buf)) == sizeof(buf))
			;
	}
}

static void check_files(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int p[2], s[2], l, c, acc, u1, u2, m, sl;

	CHECK_OK(pipe(p));
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	check_signal("pipe", p[0], p[1], false, false);
	check_signal("pipe F_SETSIG", p[0], p[1], true, true);
	close(p[0]);
	close(p[1]);

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s));
	check_signal("unix stream", s[0], s[1], true, false);
	close(s[0]);
	close(s[1]);
	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
	check_signal("unix dgram", s[0], s[1], true, false);
	close(s[0]);
	close(s[1]);

	l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_RET(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(listen(l, 1), 0);
	CHECK_RET(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_RET(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	acc = CHECK_OK(accept4(l, NULL, NULL, SOCK_NONBLOCK));
	check_signal("tcp", acc, c, true, false);
	close(acc);
	close(c);
	close(l);

	a.sin_port = 0;
	alen = sizeof(a);
	u1 = CHECK_OK(socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0));
	CHECK_RET(bind(u1, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(getsockname(u1, (struct sockaddr *)&a, &alen), 0);
	u2 = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	CHECK_RET(connect(u2, (struct sockaddr *)&a, sizeof(a)), 0);
	check_signal("udp", u1, u2, true, false);
	close(u1);
	close(u2);

	m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK));
	CHECK_RET(grantpt(m), 0);
	CHECK_RET(unlockpt(m), 0);
	sl = CHECK_OK(open(ptsname(m), O_RDWR | O_NOCTTY));
	check_signal("pty", m, sl, true, false);
	close(sl);
	close(m);
}

/* A full pipe's write end hears POLL_OUT when a read makes room. */
static void check_pipe_room(void)
{
	static char buf[8192];
	struct timespec none = { 0, 0 };
	siginfo_t si;
	sigset_t set;
	int p[2];

	flush_sig(RTSIG);
	CHECK_OK(pipe2(p, O_NONBLOCK));
	while (write(p[1], buf, sizeof(buf)) > 0)
		;
	CHECK_RET(fcntl(p[1], F_SETOWN, getpid()), 0);
	CHECK_RET(fcntl(p[1], F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(p[1], F_SETFL, O_ASYNC | O_NONBLOCK), 0);
	sigemptyset(&set);
	sigaddset(&set, RTSIG);
	/* Nothing yet: O_ASYNC does not report the present state. */
	CHECK_ERR(sigtimedwait(&set, NULL, &none), EAGAIN);
	CHECK_RET(read(p[0], buf, sizeof(buf)), sizeof(buf));
	memset(&si, 0, sizeof(si));
	CHECK(wait_sig(RTSIG, &si) == RTSIG, "pipe room: no signal");
	CHECK(si.si_code == POLL_OUT && si.si_band == (POLLOUT | POLLWRNORM | POLLWRBAND) &&
		      si.si_fd == p[1],
	      "pipe room: code %d band %#lx fd %d", si.si_code, (long)si.si_band, si.si_fd);
	close(p[0]);
	close(p[1]);
}

struct thread_arg {
	int rfd;
	pid_t tid;
	int ready[2], go[2];
	int got, code, fd;
};

static void *owner_thread(void *p)
{
	struct thread_arg *ta = p;
	siginfo_t si;
	char c = 0;

	ta->tid = (pid_t)syscall(SYS_gettid);
	if (write(ta->ready[1], &c, 1) != 1 || read(ta->go[0], &c, 1) != 1)
		return NULL;
	memset(&si, 0, sizeof(si));
	ta->got = wait_sig(RTSIG, &si);
	ta->code = si.si_code;
	ta->fd = si.si_fd;
	return NULL;
}

/* F_OWNER_TID: the signal goes to that thread, not to the process. */
static void check_thread_owner(void)
{
	struct thread_arg ta = { 0 };
	struct f_owner_ex ex;
	pthread_t th;
	sigset_t pending;
	int p[2];
	char c = 0;

	flush_sig(RTSIG);
	CHECK_OK(pipe(p));
	CHECK_OK(pipe(ta.ready));
	CHECK_OK(pipe(ta.go));
	ta.rfd = p[0];
	CHECK_RET(pthread_create(&th, NULL, owner_thread, &ta), 0);
	CHECK_RET(read(ta.ready[0], &c, 1), 1);
	ex = (struct f_owner_ex){ F_OWNER_TID, ta.tid };
	CHECK_RET(fcntl(p[0], F_SETOWN_EX, &ex), 0);
	CHECK_RET(fcntl(p[0], F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK), 0);
	CHECK_RET(write(p[1], "x", 1), 1);
	/* Wait until the data is there (the signal is sent as it arrives). */
	{
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };

		CHECK_RET(poll(&pfd, 1, 20000), 1);
	}
	CHECK_RET(write(ta.go[1], &c, 1), 1);
	pthread_join(th, NULL);
	CHECK(ta.got == RTSIG, "thread owner: signal %d", ta.got);
	CHECK(ta.code == POLL_IN && ta.fd == p[0], "thread owner: code %d fd %d", ta.code, ta.fd);
	/* Not the process's: this thread has nothing pending. */
	sigpending(&pending);
	CHECK(!sigismember(&pending, RTSIG), "RTSIG pending for the main thread");
	close(p[0]);
	close(p[1]);
	close(ta.ready[0]);
	close(ta.ready[1]);
	close(ta.go[0]);
	close(ta.go[1]);
}

/* A negative owner: every process of the group (here a group of its own: this and a child). */
static void group_owner(void *arg)
{
	int p[2], sync[2], st = 0;
	siginfo_t si;
	pid_t kid;
	char c = 0;

	CHECK_RET(setpgid(0, 0), 0);
	CHECK_OK(pipe(p));
	CHECK_OK(pipe(sync));
	kid = fork();
	if (kid == 0) {
		siginfo_t ksi;

		/* RTSIG is blocked (inherited): wait for it. */
		if (write(sync[1], &c, 1) != 1)
			_exit(3);
		_exit(wait_sig(RTSIG, &ksi) == RTSIG && ksi.si_code == POLL_IN ? 0 : 1);
	}
	CHECK_RET(read(sync[0], &c, 1), 1);
	CHECK_RET(fcntl(p[0], F_SETOWN, -getpid()), 0);
	CHECK_RET(fcntl(p[0], F_GETOWN), -getpid());
	CHECK_RET(fcntl(p[0], F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK), 0);
	CHECK_RET(write(p[1], "g", 1), 1);
	memset(&si, 0, sizeof(si));
	CHECK(wait_sig(RTSIG, &si) == RTSIG, "group owner: no signal");
	CHECK(si.si_code == POLL_IN && si.si_fd == p[0], "group owner: code %d fd %d", si.si_code,
	      si.si_fd);
	CHECK_RET(waitpid(kid, &st, 0), kid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the group's other process: status %#x", st);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t set;

	/* Handlers (the default action of SIGIO kills), and the signals blocked for sigtimedwait. */
	sigaction(SIGIO, &sa, NULL);
	sigaction(RTSIG, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigaddset(&set, RTSIG);
	sigprocmask(SIG_BLOCK, &set, NULL);
	check_values();
	check_files();
	check_pipe_room();
	check_thread_owner();
	in_child(group_owner, NULL);
	return finish();
}
