/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Objects a checkpoint must carry, made, then checked (tests/integration/checkpoint-net.sh):
 * an eventfd, two timerfds, a signalfd with a pending signal, an epoll, unix stream and
 * datagram socketpairs with queued data and a file in flight, unix listeners (abstract and
 * path) with an unaccepted connection, a loopback TCP listener with an accepted connection
 * carrying data both ways and an unaccepted one, and a bound UDP socket with a datagram queued.
 *
 *   ckpt_helper once          make everything, check it at once (runs natively: checks itself)
 *   ckpt_helper wait DIR      make everything, create DIR/ready, wait for DIR/go (the
 *                             checkpoint and restore happen meanwhile), check, write the
 *                             results to DIR/result (its last line: "N passed, M failed"),
 *                             and stay until killed
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "checks.h"

struct objs {
	int efd, tfd_fast, tfd_slow, sfd, ep;
	int us[2], ud[2], uf[2], uq[2], pipe_w;
	int ep1, e1; /* an epoll whose EPOLLONESHOT item fired, over an eventfd */
	int tl, tc, ts, tc2, tport;
	int uu, uv, uport, uvport;
	int al, ac;
	int pl, pc;
	int64_t slow_left; /* the slow timerfd's time left when made (ns) */
};

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static const char *path_sock = "/tmp/ckpt_helper.sock";
static const char abstract_name[] = "\0husk-ckpt-helper";

static socklen_t abstract_addr(struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, abstract_name, sizeof(abstract_name) - 1);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof(abstract_name) - 1);
}

static socklen_t path_addr(struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	strcpy(a->sun_path, path_sock);
	return sizeof(*a);
}

static struct sockaddr_in lo(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t n = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &n) < 0)
		die("getsockname");
	return ntohs(a.sin_port);
}

static void wr(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		die("write");
}

static void make(struct objs *o)
{
	struct itimerspec fast = { { 0, 100000000 }, { 0, 100000000 } };
	struct itimerspec slow = { { 0, 0 }, { 1000, 0 } };
	struct epoll_event ev;
	struct sockaddr_un ua;
	struct sockaddr_in ia;
	socklen_t ualen;
	sigset_t ss;
	int one = 1, p[2];

	o->efd = eventfd(5, EFD_SEMAPHORE | EFD_NONBLOCK);
	o->tfd_fast = timerfd_create(CLOCK_MONOTONIC, 0);
	o->tfd_slow = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (o->efd < 0 || o->tfd_fast < 0 || o->tfd_slow < 0)
		die("eventfd/timerfd");
	if (timerfd_settime(o->tfd_fast, 0, &fast, NULL) < 0 ||
	    timerfd_settime(o->tfd_slow, 0, &slow, NULL) < 0)
		die("timerfd_settime");
	{
		struct itimerspec cur;

		timerfd_gettime(o->tfd_slow, &cur);
		o->slow_left = ts_ns(&cur.it_value);
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR2);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	o->sfd = signalfd(-1, &ss, SFD_NONBLOCK);
	if (o->sfd < 0)
		die("signalfd");
	raise(SIGUSR2);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, o->us) < 0 ||
	    socketpair(AF_UNIX, SOCK_DGRAM, 0, o->ud) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, o->uf) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, o->uq) < 0)
		die("socketpair");
	wr(o->uq[1], "seq1");
	wr(o->uq[1], "seq-22");
	wr(o->us[0], "hello-unix");
	wr(o->ud[0], "d1");
	wr(o->ud[0], "d22");
	/* A pipe's read end in flight, the pipe holding data. */
	if (pipe(p) < 0)
		die("pipe");
	wr(p[1], "inflight");
	{
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
		struct iovec iov = { "x", 1 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &p[0], sizeof(int));
		if (sendmsg(o->uf[0], &mh, 0) != 1)
			die("sendmsg SCM_RIGHTS");
	}
	close(p[0]);
	o->pipe_w = p[1];

	o->ep = epoll_create1(0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 0x1234 };
	if (o->ep < 0 || epoll_ctl(o->ep, EPOLL_CTL_ADD, o->efd, &ev) < 0)
		die("epoll");
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 7 };
	if (epoll_ctl(o->ep, EPOLL_CTL_ADD, o->us[1], &ev) < 0)
		die("epoll_ctl");

	o->ep1 = epoll_create1(0);
	o->e1 = eventfd(1, 0);
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 9 };
	if (o->ep1 < 0 || o->e1 < 0 || epoll_ctl(o->ep1, EPOLL_CTL_ADD, o->e1, &ev) < 0 ||
	    epoll_wait(o->ep1, &ev, 1, 0) != 1)
		die("epoll oneshot");

	/* Loopback TCP: a listener, an accepted connection with data both ways, one unaccepted. */
	o->tl = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(o->tl, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ia = lo(0);
	if (bind(o->tl, (struct sockaddr *)&ia, sizeof(ia)) < 0 || listen(o->tl, 8) < 0)
		die("tcp listen");
	o->tport = port_of(o->tl);
	o->tc = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(o->tc, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ia = lo(o->tport);
	if (connect(o->tc, (struct sockaddr *)&ia, sizeof(ia)) < 0)
		die("tcp connect");
	o->ts = accept(o->tl, NULL, NULL);
	if (o->ts < 0)
		die("accept");
	wr(o->tc, "ping");
	wr(o->ts, "pong");
	fcntl(o->tc, F_SETFL, fcntl(o->tc, F_GETFL) | O_NONBLOCK);
	o->tc2 = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(o->tc2, (struct sockaddr *)&ia, sizeof(ia)) < 0)
		die("tcp connect 2");
	wr(o->tc2, "early");

	/* UDP: a bound socket with a datagram queued. */
	o->uu = socket(AF_INET, SOCK_DGRAM, 0);
	ia = lo(0);
	if (bind(o->uu, (struct sockaddr *)&ia, sizeof(ia)) < 0)
		die("udp bind");
	o->uport = port_of(o->uu);
	o->uv = socket(AF_INET, SOCK_DGRAM, 0);
	ia = lo(o->uport);
	if (sendto(o->uv, "dgram", 5, 0, (struct sockaddr *)&ia, sizeof(ia)) != 5)
		die("udp sendto");
	o->uvport = port_of(o->uv);

	/* Unix listeners: abstract (an unaccepted connection that wrote) and by path. */
	o->al = socket(AF_UNIX, SOCK_STREAM, 0);
	ualen = abstract_addr(&ua);
	if (bind(o->al, (struct sockaddr *)&ua, ualen) < 0 || listen(o->al, 4) < 0)
		die("abstract listen");
	o->ac = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(o->ac, (struct sockaddr *)&ua, ualen) < 0)
		die("abstract connect");
	wr(o->ac, "abs");
	unlink(path_sock);
	o->pl = socket(AF_UNIX, SOCK_STREAM, 0);
	ualen = path_addr(&ua);
	if (bind(o->pl, (struct sockaddr *)&ua, ualen) < 0 || listen(o->pl, 4) < 0)
		die("path listen");
}

/* Reads exactly what is expected from fd (waiting up to 5 s). */
static int read_is(int fd, const char *want)
{
	char buf[64] = { 0 };
	size_t n = strlen(want), got = 0;

	while (got < n) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, 5000) != 1)
			return 0;
		r = read(fd, buf + got, n - got);
		if (r <= 0)
			return 0;
		got += (size_t)r;
	}
	return !memcmp(buf, want, n);
}

static void verify(struct objs *o)
{
	struct epoll_event evs[4];
	struct itimerspec cur;
	struct signalfd_siginfo si;
	struct sockaddr_un ua;
	struct sockaddr_in ia;
	socklen_t n;
	uint64_t v = 0;
	char buf[64];
	int k, one = 0, c;

	/* epoll first: the eventfd and the stream socket are ready. */
	k = epoll_wait(o->ep, evs, 4, 0);
	check(k == 2 && ((evs[0].data.u64 == 0x1234 && evs[1].data.u64 == 7) ||
			 (evs[0].data.u64 == 7 && evs[1].data.u64 == 0x1234)),
	      "epoll interest list", "epoll_wait gave %d", k);

	k = epoll_wait(o->ep1, evs, 4, 0);
	check(k == 0, "a fired EPOLLONESHOT item stays disabled", "epoll_wait gave %d", k);
	evs[0] = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 10 };
	epoll_ctl(o->ep1, EPOLL_CTL_MOD, o->e1, &evs[0]);
	k = epoll_wait(o->ep1, evs, 4, 0);
	check(k == 1 && evs[0].data.u64 == 10, "and EPOLL_CTL_MOD enables it again",
	      "epoll_wait gave %d", k);

	/* eventfd: semaphore mode, count 5, non-blocking. */
	k = 0;
	while (read(o->efd, &v, 8) == 8 && v == 1)
		k++;
	check(k == 5 && errno == EAGAIN, "eventfd count and semaphore mode", "%d reads", k);

	/* timerfd: the periodic one still fires; the slow one kept its time left. */
	check(read(o->tfd_fast, &v, 8) == 8 && v >= 1, "periodic timerfd fires", "read");
	/*
	 * The time left went down by the time the guest ran, not by the time the image waited
	 * between checkpoint and restore: checkpoint-net.sh waits 2 s there, and the guest runs
	 * well under 1.5 s in all.
	 */
	{
		int64_t lost;

		timerfd_gettime(o->tfd_slow, &cur);
		lost = o->slow_left - ts_ns(&cur.it_value);
		check(lost >= 0 && lost < 1500000000, "armed timerfd keeps its time left",
		      "it lost %lld ms", (long long)(lost / 1000000));
	}
	check(read(o->tfd_slow, &v, 8) < 0 && errno == EAGAIN, "timerfd O_NONBLOCK", "read");

	/* signalfd: the pending SIGUSR2 through its mask. */
	check(read(o->sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGUSR2,
	      "signalfd reads the pending signal", "read");

	/* unix stream, datagrams, a file in flight. */
	check(read_is(o->us[1], "hello-unix"), "unix socketpair queued bytes", "read");
	wr(o->us[1], "back");
	check(read_is(o->us[0], "back"), "unix socketpair talks both ways", "read");
	check(recv(o->uq[0], buf, sizeof(buf), MSG_DONTWAIT) == 4 &&
		      recv(o->uq[0], buf, sizeof(buf), MSG_DONTWAIT) == 6 &&
		      !memcmp(buf, "seq-22", 6),
	      "unix seqpacket messages keep their boundaries", "recv");
	check(recv(o->ud[1], buf, sizeof(buf), MSG_DONTWAIT) == 2 &&
		      recv(o->ud[1], buf, sizeof(buf), MSG_DONTWAIT) == 3 && !memcmp(buf, "d22", 3),
	      "unix datagrams keep their boundaries", "recv");
	{
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { buf, 1 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm;
		int fd = -1;

		if (recvmsg(o->uf[1], &mh, MSG_DONTWAIT) == 1 && (cm = CMSG_FIRSTHDR(&mh)) &&
		    cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		check(fd >= 0 && read_is(fd, "inflight"), "a pipe in flight (SCM_RIGHTS)", "fd %d",
		      fd);
		if (fd >= 0)
			close(fd);
	}

	/* Loopback TCP. */
	check(read_is(o->ts, "ping"), "TCP client -> server bytes queued", "read");
	check(read_is(o->tc, "pong"), "TCP server -> client bytes queued", "read");
	wr(o->tc, "more");
	wr(o->ts, "again");
	check(read_is(o->ts, "more") && read_is(o->tc, "again"), "TCP pair still talking", "read");
	n = sizeof(one);
	getsockopt(o->tc, IPPROTO_TCP, TCP_NODELAY, &one, &n);
	check(one == 1, "TCP_NODELAY kept", "%d", one);
	n = sizeof(one);
	one = 0;
	getsockopt(o->tl, SOL_SOCKET, SO_REUSEADDR, &one, &n);
	check(one == 1, "SO_REUSEADDR kept", "%d", one);
	check(fcntl(o->tc, F_GETFL) & O_NONBLOCK, "O_NONBLOCK kept", "flags");
	n = sizeof(ia);
	check(getpeername(o->tc, (struct sockaddr *)&ia, &n) == 0 && ntohs(ia.sin_port) == o->tport,
	      "TCP peer name", "port %d", ntohs(ia.sin_port));
	c = accept(o->tl, NULL, NULL);
	check(c >= 0 && read_is(c, "early"), "TCP connection in the backlog accepted", "accept");
	if (c >= 0)
		close(c);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ia = lo(o->tport);
	k = connect(c, (struct sockaddr *)&ia, sizeof(ia));
	check(k == 0, "a new TCP connection to the restored listener", "connect");
	close(c);
	c = accept(o->tl, NULL, NULL);
	check(c >= 0, "and its accept", "accept");
	close(c);

	/* UDP. */
	n = sizeof(ia);
	k = (int)recvfrom(o->uu, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ia, &n);
	check(k == 5 && !memcmp(buf, "dgram", 5) && ntohs(ia.sin_port) == o->uvport,
	      "UDP datagram queued, with its source", "recvfrom %d", k);
	ia = lo(o->uport);
	sendto(o->uv, "new", 3, 0, (struct sockaddr *)&ia, sizeof(ia));
	check(recv(o->uu, buf, sizeof(buf), MSG_DONTWAIT) == 3, "UDP port still bound", "recv");

	/* Unix listeners. */
	c = accept(o->al, NULL, NULL);
	check(c >= 0 && read_is(c, "abs"), "unix abstract listener's backlog", "accept");
	if (c >= 0)
		close(c);
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	n = abstract_addr(&ua);
	check(connect(c, (struct sockaddr *)&ua, n) == 0, "unix abstract name still bound",
	      "connect");
	close(c);
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	n = path_addr(&ua);
	check(connect(c, (struct sockaddr *)&ua, n) == 0, "unix path listener still bound",
	      "connect");
	wr(c, "path");
	close(c);
	c = accept(o->pl, NULL, NULL);
	check(c >= 0 && read_is(c, "path"), "unix path listener accepts", "accept");
}

int main(int argc, char **argv)
{
	struct objs o;
	char path[512];

	out = stdout;
	if (argc == 2 && !strcmp(argv[1], "once")) {
		make(&o);
		verify(&o);
	} else if (argc == 3 && !strcmp(argv[1], "wait")) {
		int fd;

		make(&o);
		snprintf(path, sizeof(path), "%s/ready", argv[2]);
		fd = open(path, O_WRONLY | O_CREAT, 0644);
		if (fd < 0)
			die("ready");
		close(fd);
		snprintf(path, sizeof(path), "%s/go", argv[2]);
		while (access(path, F_OK) != 0)
			usleep(20000);
		snprintf(path, sizeof(path), "%s/result.tmp", argv[2]);
		out = fopen(path, "w");
		if (!out)
			die("result");
		verify(&o);
	} else {
		fprintf(stderr, "usage: ckpt_helper once | wait DIR\n");
		return 2;
	}
	fprintf(out, "%d passed, %d failed\n", passed, failed);
	if (out != stdout) {
		char to[512];

		fclose(out);
		snprintf(to, sizeof(to), "%s/result", argv[2]);
		rename(path, to);
		/* Stays, so that the result can be read inside the sandbox. */
		for (;;)
			pause();
	}
	return failed ? 1 : 0;
}
