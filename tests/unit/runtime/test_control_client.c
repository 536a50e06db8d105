/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime/control_client.c: a signal that interrupts the client's connect, send or recv does
 * not fail the call (issue 18: husk handles signals, an engine sends them). The test links
 * with -Wl,--wrap for connect, send, sendmsg and recv: each wrapper fails its first call with
 * EINTR, as an interrupted call returns, then calls the real one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/control.h"

int __real_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len);
ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __real_sendmsg(int fd, const struct msghdr *mh, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *mh, int flags);
ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);

/* How many EINTRs each wrapper has left to give, and how many it gave. */
static int eintr_left[4], eintr_given[4];
enum { W_CONNECT, W_SEND, W_SENDMSG, W_RECV };

static bool interrupted(int w)
{
	if (eintr_left[w] <= 0)
		return false;
	eintr_left[w]--;
	eintr_given[w]++;
	errno = EINTR;
	return true;
}

int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	return interrupted(W_CONNECT) ? -1 : __real_connect(fd, sa, len);
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	return interrupted(W_SEND) ? -1 : __real_send(fd, buf, len, flags);
}

ssize_t __wrap_sendmsg(int fd, const struct msghdr *mh, int flags)
{
	return interrupted(W_SENDMSG) ? -1 : __real_sendmsg(fd, mh, flags);
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	return interrupted(W_RECV) ? -1 : __real_recv(fd, buf, len, flags);
}

/* A sentry's control socket that answers one request with CONTROL_REPLY err = -ESRCH, and
 * keeps the request's op. */
struct server {
	char dir[64], path[128];
	int listen_fd;
	uint16_t got_op;
	int got_fds;
	pthread_t thread;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	char buf[512], cbuf[CMSG_SPACE(sizeof(int) * CONTROL_MAX_FDS)];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_REPLY,
				 .len = sizeof(struct control_reply) };
	struct control_reply r = { .err = -ESRCH };
	char msg[sizeof(h) + sizeof(r)];
	int fd = accept(s->listen_fd, NULL, NULL);
	struct cmsghdr *c;

	if (fd < 0)
		return NULL;
	/* Connected: the socket's name is no longer needed (a failed check that ends the test's
	 * process before server_stop leaves nothing behind). */
	unlink(s->path);
	rmdir(s->dir);
	if (recvmsg(fd, &mh, 0) >= (ssize_t)sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		s->got_op = h.op;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_type != SCM_RIGHTS)
				continue;
			s->got_fds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < s->got_fds; i++) {
				int f;

				memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(f);
			}
		}
	}
	h.op = CONTROL_REPLY;
	h.len = sizeof(r);
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &r, sizeof(r));
	__real_send(fd, msg, sizeof(msg), MSG_NOSIGNAL);
	close(fd);
	return NULL;
}

static void server_start(struct server *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(s, 0, sizeof(*s));
	strcpy(s->dir, "/tmp/husk-control-test.XXXXXX");
	cr_assert_not_null(mkdtemp(s->dir));
	snprintf(s->path, sizeof(s->path), "%s/control.sock", s->dir);
	strcpy(sa.sun_path, s->path);
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	cr_assert_geq(s->listen_fd, 0);
	cr_assert_eq(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(s->listen_fd, 4), 0);
	cr_assert_eq(pthread_create(&s->thread, NULL, serve_one, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->listen_fd);
	unlink(s->path);
	rmdir(s->dir);
}

static void interrupt_first(int w)
{
	memset(eintr_left, 0, sizeof(eintr_left));
	memset(eintr_given, 0, sizeof(eintr_given));
	eintr_left[w] = 1;
}

static void call_pause(struct server *s)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_PAUSE };

	cr_assert_eq(control_call(s->path, &h, sizeof(h)), -ESRCH);
	cr_assert_eq(s->got_op, CONTROL_PAUSE);
}

Test(control_client, call_retries_an_interrupted_send)
{
	struct server s;

	server_start(&s);
	interrupt_first(W_SEND);
	call_pause(&s);
	server_stop(&s);
	cr_assert_eq(eintr_given[W_SEND], 1);
}

Test(control_client, call_retries_an_interrupted_recv)
{
	struct server s;

	server_start(&s);
	interrupt_first(W_RECV);
	call_pause(&s);
	server_stop(&s);
	cr_assert_eq(eintr_given[W_RECV], 1);
}

Test(control_client, dial_retries_an_interrupted_connect)
{
	struct server s;

	server_start(&s);
	interrupt_first(W_CONNECT);
	call_pause(&s);
	server_stop(&s);
	cr_assert_eq(eintr_given[W_CONNECT], 1);
}

Test(control_client, send_fds_retries_an_interrupted_sendmsg)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_EXEC };
	struct server s;
	int sock, fds[1] = { 0 };

	server_start(&s);
	sock = control_dial(s.path);
	cr_assert_geq(sock, 0);
	interrupt_first(W_SENDMSG);
	cr_assert_eq(control_send_fds(sock, &h, sizeof(h), fds, 1), 0);
	server_stop(&s);
	close(sock);
	cr_assert_eq(eintr_given[W_SENDMSG], 1);
	cr_assert_eq(s.got_op, CONTROL_EXEC);
	cr_assert_eq(s.got_fds, 1);
}

Test(control_client, send_reports_a_closed_peer)
{
	int sp[2];
	struct control_hdr h = { .magic = CONTROL_MAGIC };

	interrupt_first(W_SEND);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0);
	close(sp[1]);
	cr_assert_eq(control_send(sp[0], &h, sizeof(h)), -EPIPE);
	cr_assert_eq(eintr_given[W_SEND], 1);
	close(sp[0]);
}
