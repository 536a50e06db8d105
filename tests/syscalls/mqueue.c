/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSIX message queues: mq_open (creation, attributes and their limits, O_EXCL, permissions,
 * names), mq_unlink, mq_timedsend/mq_timedreceive (priority order, EMSGSIZE, O_NONBLOCK EAGAIN,
 * absolute CLOCK_REALTIME timeouts, a blocked receiver woken by a sender in another process),
 * mq_notify (SIGEV_SIGNAL with its siginfo, EBUSY, one-shot, removal at close; SIGEV_THREAD
 * through glibc's netlink socket), mq_getsetattr,
 * and the queue descriptor as a file (read, poll, epoll, fork inheritance, close).
 */
#include <fcntl.h>
#include <grp.h>
#include <mqueue.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "child.h"

/* The raw calls: the kernel's names have no leading slash (glibc strips it). */
static long r_open(const char *name, int flags, int mode, struct mq_attr *a)
{
	return syscall(SYS_mq_open, name, flags, mode, a);
}

static long r_send(int fd, const char *msg, size_t len, unsigned int prio,
		   const struct timespec *ts)
{
	return syscall(SYS_mq_timedsend, fd, msg, len, prio, ts);
}

static long r_recv(int fd, char *msg, size_t len, unsigned int *prio, const struct timespec *ts)
{
	return syscall(SYS_mq_timedreceive, fd, msg, len, prio, ts);
}

static long r_getsetattr(int fd, const struct mq_attr *n, struct mq_attr *o)
{
	return syscall(SYS_mq_getsetattr, fd, n, o);
}

static char qname[64];

static void test_open(void)
{
	struct mq_attr a = { .mq_maxmsg = 5, .mq_msgsize = 64 }, g;
	char longname[300];
	int fd, fd2;

	CHECK_ERR(r_open(qname, O_RDWR, 0, NULL), ENOENT);
	fd = (int)CHECK_OK(r_open(qname, O_RDWR | O_CREAT | O_EXCL, 0640, &a));
	CHECK_ERR(r_open(qname, O_RDWR | O_CREAT | O_EXCL, 0640, &a), EEXIST);
	fd2 = (int)CHECK_OK(r_open(qname, O_RDONLY, 0, NULL));
	CHECK_RET(r_getsetattr(fd, NULL, &g), 0);
	CHECK(g.mq_maxmsg == 5 && g.mq_msgsize == 64 && g.mq_curmsgs == 0 && g.mq_flags == 0,
	      "attr %ld %ld %ld %ld", g.mq_flags, g.mq_maxmsg, g.mq_msgsize, g.mq_curmsgs);
	/* Linux makes every queue descriptor close-on-exec. */
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "close-on-exec");
	/* O_ACCMODE 3 is refused when opening an existing queue (creating one takes it). */
	CHECK_ERR(r_open(qname, 3, 0, NULL), EINVAL);
	close(fd2);
	close(fd);
	/* Defaults: fs.mqueue.msg_default and msgsize_default (10, 8192). */
	fd = (int)CHECK_OK(r_open("husk-mq-defaults", O_RDWR | O_CREAT | O_CLOEXEC, 0600, NULL));
	CHECK_RET(r_getsetattr(fd, NULL, &g), 0);
	CHECK(g.mq_maxmsg == 10 && g.mq_msgsize == 8192, "defaults %ld %ld", g.mq_maxmsg,
	      g.mq_msgsize);
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "O_CLOEXEC");
	close(fd);
	CHECK_RET(syscall(SYS_mq_unlink, "husk-mq-defaults"), 0);
	/* Attribute limits. */
	a.mq_maxmsg = 0;
	CHECK_ERR(r_open("husk-mq-bad", O_RDWR | O_CREAT, 0600, &a), EINVAL);
	a.mq_maxmsg = 1;
	a.mq_msgsize = -1;
	CHECK_ERR(r_open("husk-mq-bad", O_RDWR | O_CREAT, 0600, &a), EINVAL);
	a.mq_msgsize = 64;
	CHECK_ERR(r_open("husk/mq", O_RDWR | O_CREAT, 0600, &a), EACCES);
	CHECK_ERR(r_open("", O_RDWR | O_CREAT, 0600, &a), ENOENT);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK_ERR(r_open(longname, O_RDWR | O_CREAT, 0600, &a), ENAMETOOLONG);
	CHECK_ERR(syscall(SYS_mq_unlink, "husk-mq-bad"), ENOENT);
	/* Not a queue. */
	CHECK_ERR(r_getsetattr(0, NULL, &g), EBADF);
	CHECK_ERR(r_send(999, "x", 1, 0, NULL), EBADF);
}

static void test_send_receive(void)
{
	struct mq_attr a = { .mq_maxmsg = 4, .mq_msgsize = 16 }, g, n;
	unsigned int prio = 99;
	struct timespec ts;
	char buf[64];
	int fd = (int)r_open(qname, O_RDWR, 0, NULL), ro = (int)r_open(qname, O_RDONLY, 0, NULL);

	CHECK(fd >= 0 && ro >= 0, "reopen %s", strerror(errno));
	(void)a;
	CHECK_RET(r_send(fd, "low", 3, 1, NULL), 0);
	CHECK_RET(r_send(fd, "high", 4, 10, NULL), 0);
	CHECK_RET(r_send(fd, "low2", 4, 1, NULL), 0);
	CHECK_RET(r_send(fd, "", 0, 5, NULL), 0);
	CHECK_ERR(r_send(fd, buf, 65, 1, NULL), EMSGSIZE);
	CHECK_ERR(r_send(fd, "x", 1, 32768, NULL), EINVAL);
	CHECK_ERR(r_send(ro, "x", 1, 0, NULL), EBADF);
	CHECK_RET(r_getsetattr(fd, NULL, &g), 0);
	CHECK(g.mq_curmsgs == 4, "curmsgs %ld", g.mq_curmsgs);
	/* A buffer smaller than mq_msgsize. */
	CHECK_ERR(r_recv(fd, buf, 63, NULL, NULL), EMSGSIZE);
	CHECK_RET(r_recv(ro, buf, sizeof(buf), &prio, NULL), 4);
	CHECK(memcmp(buf, "high", 4) == 0 && prio == 10, "first: %.4s prio %u", buf, prio);
	CHECK_RET(r_recv(fd, buf, sizeof(buf), &prio, NULL), 0);
	CHECK(prio == 5, "empty message prio %u", prio);
	CHECK_RET(r_recv(fd, buf, sizeof(buf), &prio, NULL), 3);
	CHECK(memcmp(buf, "low", 3) == 0 && prio == 1, "FIFO within a priority: %.3s", buf);
	CHECK_RET(r_recv(fd, buf, sizeof(buf), NULL, NULL), 4);
	CHECK(memcmp(buf, "low2", 4) == 0, "last: %.4s", buf);

	/* Empty: O_NONBLOCK set by mq_getsetattr gives EAGAIN; a past timeout ETIMEDOUT. */
	n = (struct mq_attr){ .mq_flags = O_NONBLOCK };
	CHECK_RET(r_getsetattr(fd, &n, &g), 0);
	CHECK(g.mq_flags == 0, "old flags %ld", g.mq_flags);
	CHECK_ERR(r_recv(fd, buf, sizeof(buf), NULL, NULL), EAGAIN);
	CHECK_RET(r_getsetattr(fd, NULL, &g), 0);
	CHECK(g.mq_flags == O_NONBLOCK, "flags %ld", g.mq_flags);
	CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK, "O_NONBLOCK in the file's flags");
	n.mq_flags = O_NONBLOCK | O_APPEND;
	CHECK_ERR(r_getsetattr(fd, &n, NULL), EINVAL);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec -= 1;
	CHECK_ERR(r_recv(ro, buf, sizeof(buf), NULL, &ts), ETIMEDOUT);
	ts.tv_nsec = 1000000000;
	CHECK_ERR(r_recv(ro, buf, sizeof(buf), NULL, &ts), EINVAL);
	/* A near timeout (absolute, CLOCK_REALTIME) that passes. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 20000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	CHECK_ERR(r_recv(ro, buf, sizeof(buf), NULL, &ts), ETIMEDOUT);
	/* Full. */
	for (int i = 0; i < 5; i++)
		CHECK_RET(r_send(fd, "f", 1, 0, NULL), 0);
	CHECK_ERR(r_send(fd, "f", 1, 0, NULL), EAGAIN);
	clock_gettime(CLOCK_REALTIME, &ts);
	CHECK_ERR(r_send(ro == fd ? fd : (int)r_open(qname, O_WRONLY, 0, NULL), "f", 1, 0, &ts),
		  ETIMEDOUT);
	for (int i = 0; i < 5; i++)
		CHECK_RET(r_recv(fd, buf, sizeof(buf), NULL, NULL), 1);
	close(ro);
	close(fd);
}

static void test_blocking(void)
{
	int fd = (int)r_open(qname, O_RDWR, 0, NULL), st;
	char buf[64] = "";
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		/* The inherited descriptor; the parent is blocked in receive (or will be). */
		_exit(r_send(fd, "wake", 4, 3, NULL) == 0 ? 0 : 1);
	}
	CHECK_RET(r_recv(fd, buf, sizeof(buf), NULL, NULL), 4);
	CHECK(memcmp(buf, "wake", 4) == 0, "received %.4s", buf);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender status %#x", st);
	close(fd);
}

static volatile sig_atomic_t got_sig, got_code, got_pid, got_value;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	got_sig = sig;
	got_code = si->si_code;
	got_pid = si->si_pid;
	got_value = si->si_value.sival_int;
}

static void test_notify(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	int fd = (int)r_open(qname, O_RDWR, 0, NULL), st;
	char buf[64], info[128];
	sigset_t block, old;
	pid_t pid;

	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	ev.sigev_value.sival_int = 77;
	CHECK_RET(syscall(SYS_mq_notify, fd, &ev), 0);
	/* Another process may not register while this one is. */
	pid = fork();
	if (pid == 0)
		_exit(syscall(SYS_mq_notify, fd, &ev) < 0 && errno == EBUSY ? 0 : 1);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "second registration: EBUSY (%#x)", st);
	/* read(2) of the descriptor describes the queue. */
	memset(info, 0, sizeof(info));
	CHECK(read(fd, info, sizeof(info) - 1) > 0 && strstr(info, "QSIZE:") &&
		      strstr(info, "SIGNO:10"),
	      "read: %s", info);
	/* A message from another process into the empty queue. */
	pid = fork();
	if (pid == 0)
		_exit(r_send(fd, "n", 1, 0, NULL) == 0 ? 0 : 1);
	waitpid(pid, &st, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	CHECK(got_sig == SIGUSR1 && got_code == SI_MESGQ && got_pid == pid && got_value == 77,
	      "notification: sig %d code %d pid %d (want %d) value %d", got_sig, got_code, got_pid,
	      pid, got_value);
	/* One shot: the next message into an empty queue signals nobody. */
	got_sig = 0;
	CHECK_RET(r_recv(fd, buf, sizeof(buf), NULL, NULL), 1);
	CHECK_RET(r_send(fd, "m", 1, 0, NULL), 0);
	CHECK(got_sig == 0, "second message signalled %d", got_sig);
	CHECK_RET(r_recv(fd, buf, sizeof(buf), NULL, NULL), 1);
	/* Registration, removal with NULL, and removal when the registering process closes. */
	CHECK_RET(syscall(SYS_mq_notify, fd, &ev), 0);
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EBUSY);
	CHECK_RET(syscall(SYS_mq_notify, fd, NULL), 0);
	CHECK_RET(syscall(SYS_mq_notify, fd, &ev), 0);
	close(fd);
	fd = (int)r_open(qname, O_RDWR, 0, NULL);
	CHECK_RET(syscall(SYS_mq_notify, fd, &ev), 0);
	ev.sigev_signo = 65;
	ev.sigev_notify = SIGEV_SIGNAL;
	CHECK_RET(syscall(SYS_mq_notify, fd, NULL), 0);
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EINVAL);
	ev.sigev_notify = 42;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EINVAL);
	ev.sigev_notify = SIGEV_NONE;
	CHECK_RET(syscall(SYS_mq_notify, fd, &ev), 0);
	CHECK_RET(syscall(SYS_mq_notify, fd, NULL), 0);
	close(fd);
}

static int thread_pipe[2];

static void on_thread_notify(union sigval v)
{
	char c = (char)v.sival_int;

	if (write(thread_pipe[1], &c, 1) != 1)
		abort();
}

/* SIGEV_THREAD through glibc: its helper thread gets the kernel's cookie on a netlink socket. */
static void test_notify_thread(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD };
	int fd = (int)r_open(qname, O_RDWR, 0, NULL), p[2], sock;
	struct pollfd pf;
	char c = 0, buf[64];

	CHECK_OK(pipe(thread_pipe));
	ev.sigev_notify_function = on_thread_notify;
	ev.sigev_value.sival_int = 'T';
	CHECK_RET(mq_notify(fd, &ev), 0);
	CHECK_RET(r_send(fd, "t", 1, 0, NULL), 0);
	pf = (struct pollfd){ .fd = thread_pipe[0], .events = POLLIN };
	CHECK_RET(poll(&pf, 1, 30000), 1);
	CHECK(read(thread_pipe[0], &c, 1) == 1 && c == 'T', "thread notification %c", c);
	CHECK_RET(r_recv(fd, buf, sizeof(buf), NULL, NULL), 1);
	/* The raw call wants a netlink socket in sigev_signo and 32 readable cookie bytes. */
	CHECK_OK(pipe(p));
	ev.sigev_signo = p[0];
	ev.sigev_value.sival_ptr = buf;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), ENOTSOCK);
	sock = socket(AF_UNIX, SOCK_DGRAM, 0);
	ev.sigev_signo = sock;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EINVAL);
	ev.sigev_signo = 999;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EBADF);
	close(sock);
	close(p[0]);
	close(p[1]);
	close(thread_pipe[0]);
	close(thread_pipe[1]);
	close(fd);
}

static void test_poll(void)
{
	int fd = (int)r_open(qname, O_RDWR | O_NONBLOCK, 0, NULL), ep;
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct epoll_event e = { .events = EPOLLIN }, out;
	char buf[64];

	CHECK_RET(poll(&p, 1, 0), 1);
	CHECK(p.revents == POLLOUT, "empty queue revents %#x", p.revents);
	ep = epoll_create1(0);
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e), 0);
	CHECK_RET(epoll_wait(ep, &out, 1, 0), 0);
	CHECK_RET(r_send(fd, "p", 1, 0, NULL), 0);
	CHECK_RET(epoll_wait(ep, &out, 1, 10000), 1);
	CHECK_RET(poll(&p, 1, 0), 1);
	CHECK(p.revents == (POLLIN | POLLOUT), "one message revents %#x", p.revents);
	for (int i = 0; i < 4; i++)
		r_send(fd, "p", 1, 0, NULL);
	CHECK_RET(poll(&p, 1, 0), 1);
	CHECK(p.revents == POLLIN, "full queue revents %#x", p.revents);
	while (r_recv(fd, buf, sizeof(buf), NULL, NULL) >= 0)
		;
	close(ep);
	close(fd);
}

static void unpriv(void *arg)
{
	struct mq_attr a = { .mq_maxmsg = 11, .mq_msgsize = 64 };

	if (setgroups(0, NULL) < 0 || setgid(1000) < 0 || setuid(1000) < 0) {
		CHECK(0, "setuid: %s", strerror(errno));
		return;
	}
	/* The queue is 0640 root:root. */
	CHECK_ERR(r_open(qname, O_RDONLY, 0, NULL), EACCES);
	CHECK_ERR(syscall(SYS_mq_unlink, qname), EPERM);
	/* Over fs.mqueue.msg_max (10) and msgsize_max (8192) without CAP_SYS_RESOURCE. */
	CHECK_ERR(r_open("husk-mq-unpriv", O_RDWR | O_CREAT, 0600, &a), EINVAL);
	a.mq_maxmsg = 10;
	a.mq_msgsize = 8193;
	CHECK_ERR(r_open("husk-mq-unpriv", O_RDWR | O_CREAT, 0600, &a), EINVAL);
	a.mq_msgsize = 8192;
	CHECK_OK(r_open("husk-mq-unpriv", O_RDWR | O_CREAT, 0600, &a));
	CHECK_RET(syscall(SYS_mq_unlink, "husk-mq-unpriv"), 0);
}

int main(void)
{
	struct stat st;
	int fd;

	snprintf(qname, sizeof(qname), "husk-mq-%d", getpid());
	test_open();
	test_send_receive();
	test_blocking();
	test_notify();
	test_notify_thread();
	test_poll();
	in_child(unpriv, NULL);
	/* A queue outlives its name while a descriptor is open. */
	fd = (int)r_open(qname, O_RDWR, 0, NULL);
	CHECK_RET(syscall(SYS_mq_unlink, qname), 0);
	CHECK_ERR(syscall(SYS_mq_unlink, qname), ENOENT);
	CHECK_RET(r_send(fd, "z", 1, 0, NULL), 0);
	CHECK(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640,
	      "fstat mode %o", st.st_mode);
	close(fd);
	CHECK_ERR(r_open(qname, O_RDWR, 0, NULL), ENOENT);
	/* glibc's wrappers take the leading slash off. */
	fd = (int)CHECK_OK(mq_open("/husk-mq-glibc", O_RDWR | O_CREAT, 0600, NULL));
	CHECK_RET(mq_send(fd, "g", 1, 0), 0);
	CHECK_RET(mq_close(fd), 0);
	CHECK_RET(mq_unlink("/husk-mq-glibc"), 0);
	return finish();
}
