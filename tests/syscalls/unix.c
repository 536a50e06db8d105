/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AF_UNIX sockets: socketpair of each type, stream bytes and EOF, seqpacket and datagram
 * boundaries with MSG_TRUNC, MSG_PEEK, MSG_DONTWAIT, shutdown, SCM_RIGHTS, SCM_CREDENTIALS and
 * SO_PASSCRED, SO_PEERCRED, binding to abstract names and to paths (in /dev/shm), listen,
 * connect, accept4, getsockname/getpeername, poll readiness and the errors along the way.
 * Single process: every exchange is between sockets the program holds itself.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "check.h"

static void test_pairs(void)
{
	int sv[2];
	char buf[64];

	/* Stream: bytes without boundaries, EOF after the peer closes. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_RET(write(sv[0], "hello", 5), 5);
	CHECK_RET(write(sv[0], "world", 5), 5);
	CHECK_RET(read(sv[1], buf, sizeof(buf)), 10);
	CHECK(!memcmp(buf, "helloworld", 10), "got %.10s", buf);
	CHECK_ERR(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	CHECK_RET(send(sv[1], "abc", 3, 0), 3);
	CHECK_RET(recv(sv[0], buf, 2, MSG_PEEK), 2);
	CHECK_RET(recv(sv[0], buf, sizeof(buf), 0), 3);
	CHECK(!memcmp(buf, "abc", 3), "peeked data was consumed");
	CHECK_RET(close(sv[0]), 0);
	CHECK_RET(read(sv[1], buf, sizeof(buf)), 0);
	signal(SIGPIPE, SIG_IGN);
	CHECK_ERR(write(sv[1], "x", 1), EPIPE);
	close(sv[1]);

	/* Seqpacket: boundaries kept; a short read drops the rest and reports MSG_TRUNC. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	CHECK_RET(send(sv[0], "first", 5, 0), 5);
	CHECK_RET(send(sv[0], "second", 6, 0), 6);
	{
		struct iovec iov = { buf, 3 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

		CHECK_RET(recvmsg(sv[1], &mh, 0), 3);
		CHECK(mh.msg_flags & MSG_TRUNC, "msg_flags %#x", mh.msg_flags);
	}
	CHECK_RET(recv(sv[1], buf, 2, MSG_TRUNC), 6);
	CHECK_RET(shutdown(sv[0], SHUT_WR), 0);
	CHECK_RET(recv(sv[1], buf, sizeof(buf), 0), 0);
	close(sv[0]);
	close(sv[1]);

	/* Datagram pair. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	CHECK_RET(send(sv[0], "a", 1, 0), 1);
	CHECK_RET(send(sv[0], "bc", 2, 0), 2);
	CHECK_RET(recv(sv[1], buf, sizeof(buf), 0), 1);
	CHECK_RET(recv(sv[1], buf, sizeof(buf), 0), 2);
	close(sv[0]);
	close(sv[1]);

	CHECK_ERR(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
	CHECK_ERR(socketpair(AF_UNIX, SOCK_RDM, 0, sv), ESOCKTNOSUPPORT);
	CHECK_ERR(socket(AF_UNIX, SOCK_STREAM, 5), EPROTONOSUPPORT);
}

static void test_rights_and_creds(void)
{
	int sv[2], p[2];
	char buf[16];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { "x", 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	struct ucred uc;
	socklen_t len = sizeof(uc);
	int one = 1, got = -1;

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_OK(pipe(p));
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_control = ctl.b;
	mh.msg_controllen = CMSG_SPACE(sizeof(int));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &p[1], sizeof(int));
	CHECK_RET(sendmsg(sv[0], &mh, 0), 1);
	close(p[1]);

	CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
	memset(&ctl, 0, sizeof(ctl));
	iov.iov_base = buf;
	mh.msg_control = ctl.b;
	mh.msg_controllen = sizeof(ctl.b);
	CHECK_RET(recvmsg(sv[1], &mh, MSG_CMSG_CLOEXEC), 1);
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&got, CMSG_DATA(c), sizeof(int));
	}
	CHECK(got >= 0, "no SCM_RIGHTS in the reply");
	if (got >= 0) {
		/* The received descriptor is the pipe's write end: data reaches p[0]. */
		CHECK_RET(write(got, "z", 1), 1);
		CHECK_RET(read(p[0], buf, 1), 1);
		CHECK(buf[0] == 'z', "got %c", buf[0]);
		CHECK_RET(fcntl(got, F_GETFD), FD_CLOEXEC);
		close(got);
	}

	/* SCM_CREDENTIALS with SO_PASSCRED: our own pid, uid and gid. */
	CHECK_RET(send(sv[0], "y", 1, 0), 1);
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_control = ctl.b;
	mh.msg_controllen = sizeof(ctl.b);
	CHECK_RET(recvmsg(sv[1], &mh, 0), 1);
	c = CMSG_FIRSTHDR(&mh);
	CHECK(c && c->cmsg_type == SCM_CREDENTIALS, "no SCM_CREDENTIALS");
	if (c && c->cmsg_type == SCM_CREDENTIALS) {
		memcpy(&uc, CMSG_DATA(c), sizeof(uc));
		CHECK(uc.pid == getpid() && uc.uid == geteuid() && uc.gid == getegid(),
		      "creds %d %u %u", uc.pid, uc.uid, uc.gid);
	}

	/* SO_PEERCRED of a socketpair: the creator. */
	CHECK_OK(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &uc, &len));
	CHECK(uc.pid == getpid() && uc.uid == geteuid(), "peercred %d %u", uc.pid, uc.uid);

	/* A bad descriptor in SCM_RIGHTS. */
	{
		int bad = 999;

		memset(&ctl, 0, sizeof(ctl));
		iov.iov_base = "x";
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &bad, sizeof(int));
		CHECK_ERR(sendmsg(sv[0], &mh, 0), EBADF);
	}
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

static socklen_t abstract_addr(struct sockaddr_un *sun, const char *name)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, strlen(name));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

static void test_listen_connect(void)
{
	struct sockaddr_un sun, got;
	socklen_t len, alen;
	int l, c, a, c2;
	char buf[16];
	struct pollfd pfd;
	char name[64];

	snprintf(name, sizeof(name), "husk-test-%d", getpid());
	alen = abstract_addr(&sun, name);
	l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	CHECK_ERR(listen(l, 4), EINVAL); /* unbound */
	CHECK_RET(bind(l, (struct sockaddr *)&sun, alen), 0);
	CHECK_ERR(bind(l, (struct sockaddr *)&sun, alen), EINVAL);
	CHECK_RET(listen(l, 4), 0);
	len = sizeof(got);
	CHECK_RET(getsockname(l, (struct sockaddr *)&got, &len), 0);
	CHECK(len == alen && !memcmp(&got, &sun, alen), "getsockname len %u", len);
	pfd = (struct pollfd){ l, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 0), 0);
	CHECK_OK(fcntl(l, F_SETFL, O_NONBLOCK));
	CHECK_ERR(accept4(l, NULL, NULL, 0), EAGAIN);
	CHECK_OK(fcntl(l, F_SETFL, 0));
	{
		int l2 = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));

		CHECK_ERR(bind(l2, (struct sockaddr *)&sun, alen), EADDRINUSE);
		close(l2);
	}

	c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(getpeername(c, (struct sockaddr *)&got, &len), ENOTCONN);
	CHECK_RET(connect(c, (struct sockaddr *)&sun, alen), 0);
	CHECK_ERR(connect(c, (struct sockaddr *)&sun, alen), EISCONN);
	pfd = (struct pollfd){ l, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 0), 1);
	len = sizeof(got);
	a = CHECK_OK(accept4(l, (struct sockaddr *)&got, &len, SOCK_CLOEXEC));
	CHECK(len == sizeof(sa_family_t), "unbound peer address length %u", len);
	CHECK_RET(write(c, "ping", 4), 4);
	pfd = (struct pollfd){ a, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 0), 1);
	CHECK_RET(read(a, buf, sizeof(buf)), 4);
	len = sizeof(got);
	CHECK_RET(getpeername(c, (struct sockaddr *)&got, &len), 0);
	CHECK(len == alen && !memcmp(got.sun_path, sun.sun_path, alen - 2), "peer name len %u",
	      len);
	{
		struct ucred uc;
		socklen_t ul = sizeof(uc);

		CHECK_OK(getsockopt(a, SOL_SOCKET, SO_PEERCRED, &uc, &ul));
		CHECK(uc.pid == getpid(), "accepted peercred pid %d", uc.pid);
	}
	/* Half-close: the peer reads EOF, and can still write back. */
	CHECK_RET(shutdown(c, SHUT_WR), 0);
	CHECK_RET(read(a, buf, sizeof(buf)), 0);
	CHECK_RET(write(a, "back", 4), 4);
	CHECK_RET(read(c, buf, sizeof(buf)), 4);
	close(a);
	close(c);

	/* Abstract names are per type; then a name nobody holds. */
	c2 = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_ERR(connect(c2, (struct sockaddr *)&sun, alen), ECONNREFUSED);
	close(l);
	c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&sun, alen), ECONNREFUSED);
	close(c);
	close(c2);
}

static void test_path_and_dgram(void)
{
	struct sockaddr_un a1, a2, from;
	socklen_t fl;
	int s1, s2, c;
	char buf[16];
	struct stat st;

	memset(&a1, 0, sizeof(a1));
	a1.sun_family = AF_UNIX;
	snprintf(a1.sun_path, sizeof(a1.sun_path), "/dev/shm/husk-unix-%d-a", getpid());
	a2 = a1;
	snprintf(a2.sun_path, sizeof(a2.sun_path), "/dev/shm/husk-unix-%d-b", getpid());
	unlink(a1.sun_path);
	unlink(a2.sun_path);

	s1 = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	s2 = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_RET(bind(s1, (struct sockaddr *)&a1, sizeof(a1)), 0);
	CHECK_RET(stat(a1.sun_path, &st), 0);
	CHECK(S_ISSOCK(st.st_mode), "mode %o", st.st_mode);
	CHECK_ERR(bind(s2, (struct sockaddr *)&a1, sizeof(a1)), EADDRINUSE);
	CHECK_RET(bind(s2, (struct sockaddr *)&a2, sizeof(a2)), 0);
	CHECK_RET(sendto(s2, "dg", 2, 0, (struct sockaddr *)&a1, sizeof(a1)), 2);
	fl = sizeof(from);
	CHECK_RET(recvfrom(s1, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl), 2);
	CHECK(!strcmp(from.sun_path, a2.sun_path), "from %s", from.sun_path);
	CHECK_RET(connect(s1, (struct sockaddr *)&a2, sizeof(a2)), 0);
	CHECK_RET(send(s1, "back", 4, 0), 4);
	CHECK_RET(recv(s2, buf, sizeof(buf), 0), 4);
	CHECK_ERR(send(s2, "x", 1, 0), ENOTCONN);
	CHECK_ERR(recv(s2, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

	/* A stream connect to a datagram socket's path, and to a file that is not a socket. */
	c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&a1, sizeof(a1)), EPROTOTYPE);
	close(s1);
	close(s2);
	/* The path outlives the socket: connecting to it is refused. */
	CHECK_ERR(connect(c, (struct sockaddr *)&a1, sizeof(a1)), ECONNREFUSED);
	{
		struct sockaddr_un dn = { .sun_family = AF_UNIX };

		strcpy(dn.sun_path, "/dev/null");
		CHECK_ERR(connect(c, (struct sockaddr *)&dn, sizeof(dn)), ECONNREFUSED);
		strcpy(dn.sun_path, "/dev/shm/husk-no-such-socket");
		CHECK_ERR(connect(c, (struct sockaddr *)&dn, sizeof(dn)), ENOENT);
	}
	close(c);
	CHECK_RET(unlink(a1.sun_path), 0);
	CHECK_RET(unlink(a2.sun_path), 0);
}

static void test_flow_control(void)
{
	int sv[2], n = 0, total = 0;
	char chunk[4096];
	struct pollfd pfd;

	memset(chunk, 'q', sizeof(chunk));
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
	while ((n = (int)write(sv[0], chunk, sizeof(chunk))) > 0 && total < (64 << 20))
		total += n;
	CHECK(n == -1 && errno == EAGAIN, "writes stopped with %d after %d bytes", n, total);
	pfd = (struct pollfd){ sv[0], POLLOUT, 0 };
	CHECK_RET(poll(&pfd, 1, 0), 0);
	while ((n = (int)read(sv[1], chunk, sizeof(chunk))) > 0)
		total -= n;
	CHECK(total == 0, "%d bytes lost", total);
	CHECK_RET(poll(&pfd, 1, 0), 1);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	test_pairs();
	test_rights_and_creds();
	test_listen_connect();
	test_path_and_dgram();
	test_flow_control();
	return finish();
}
