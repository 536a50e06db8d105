/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loopback UDP over IPv4 and IPv6: bind, sendto/recvfrom with source addresses, datagram
 * boundaries and MSG_TRUNC, MSG_PEEK, connect as a default destination and a filter on
 * sources, EDESTADDRREQ, SO_REUSEADDR sharing, ECONNREFUSED reported to a connected socket,
 * sendmmsg/recvmmsg. Single process; traffic only to 127.0.0.1 and ::1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "check.h"

static int bound4(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(getsockname(s, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return s;
}

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

int main(void)
{
	uint16_t p1, p2;
	int s1 = bound4(&p1), s2 = bound4(&p2), s3;
	struct sockaddr_in d1 = lo4(p1), d2 = lo4(p2), from;
	socklen_t fl = sizeof(from);
	char buf[64];
	struct pollfd pfd;

	CHECK_RET(sendto(s2, "hello", 5, 0, (struct sockaddr *)&d1, sizeof(d1)), 5);
	CHECK_RET(sendto(s2, "world!", 6, 0, (struct sockaddr *)&d1, sizeof(d1)), 6);
	pfd = (struct pollfd){ s1, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 1000), 1);
	CHECK_RET(recv(s1, buf, sizeof(buf), MSG_PEEK), 5);
	CHECK_RET(recvfrom(s1, buf, 2, 0, (struct sockaddr *)&from, &fl), 2);
	CHECK(fl == sizeof(from) && from.sin_port == htons(p2), "from port %u len %u",
	      ntohs(from.sin_port), fl);
	CHECK_RET(recv(s1, buf, 1, MSG_TRUNC), 6);
	CHECK_ERR(recv(s1, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	CHECK_ERR(send(s1, "x", 1, 0), EDESTADDRREQ);

	/* connect: a default destination, and only that peer's datagrams are received. */
	CHECK_RET(connect(s1, (struct sockaddr *)&d2, sizeof(d2)), 0);
	CHECK_RET(send(s1, "to2", 3, 0), 3);
	CHECK_RET(recv(s2, buf, sizeof(buf), 0), 3);
	s3 = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	CHECK_RET(sendto(s3, "stranger", 8, 0, (struct sockaddr *)&d1, sizeof(d1)), 8);
	CHECK_RET(sendto(s2, "friend", 6, 0, (struct sockaddr *)&d1, sizeof(d1)), 6);
	CHECK_RET(poll(&pfd, 1, 1000), 1);
	CHECK_RET(recv(s1, buf, sizeof(buf), 0), 6);
	CHECK(!memcmp(buf, "friend", 6), "got %.6s", buf);
	CHECK_ERR(recv(s1, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

	/* A connected socket whose peer is gone learns it (ECONNREFUSED). */
	close(s2);
	CHECK_RET(send(s1, "gone", 4, 0), 4);
	pfd = (struct pollfd){ s1, POLLIN, 0 };
	poll(&pfd, 1, 1000);
	CHECK_ERR(recv(s1, buf, sizeof(buf), MSG_DONTWAIT), ECONNREFUSED);
	close(s1);
	close(s3);

	/* IPv6 and sendmmsg/recvmmsg. */
	{
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
					   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		socklen_t len = sizeof(a6);
		struct mmsghdr mm[2];
		struct iovec iov[2] = { { "one", 3 }, { "three", 5 } };
		char b0[8], b1[8];
		struct iovec riov[2] = { { b0, sizeof(b0) }, { b1, sizeof(b1) } };
		int r = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0)), w;

		CHECK_RET(bind(r, (struct sockaddr *)&a6, sizeof(a6)), 0);
		CHECK_RET(getsockname(r, (struct sockaddr *)&a6, &len), 0);
		w = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
		CHECK_RET(connect(w, (struct sockaddr *)&a6, sizeof(a6)), 0);
		memset(mm, 0, sizeof(mm));
		mm[0].msg_hdr.msg_iov = &iov[0];
		mm[0].msg_hdr.msg_iovlen = 1;
		mm[1].msg_hdr.msg_iov = &iov[1];
		mm[1].msg_hdr.msg_iovlen = 1;
		CHECK_RET(sendmmsg(w, mm, 2, 0), 2);
		CHECK(mm[0].msg_len == 3 && mm[1].msg_len == 5, "msg_len %u %u", mm[0].msg_len,
		      mm[1].msg_len);
		memset(mm, 0, sizeof(mm));
		mm[0].msg_hdr.msg_iov = &riov[0];
		mm[0].msg_hdr.msg_iovlen = 1;
		mm[1].msg_hdr.msg_iov = &riov[1];
		mm[1].msg_hdr.msg_iovlen = 1;
		pfd = (struct pollfd){ r, POLLIN, 0 };
		CHECK_RET(poll(&pfd, 1, 1000), 1);
		CHECK_RET(recvmmsg(r, mm, 2, MSG_DONTWAIT, NULL), 2);
		CHECK(mm[1].msg_len == 5 && !memcmp(b1, "three", 5), "second message %u",
		      mm[1].msg_len);
		close(r);
		close(w);
	}

	/* SO_REUSEADDR on both lets two sockets share a port. */
	{
		int one = 1, a = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		int b = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		struct sockaddr_in x = lo4(0);
		socklen_t len = sizeof(x);

		CHECK_OK(setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
		CHECK_OK(setsockopt(b, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
		CHECK_RET(bind(a, (struct sockaddr *)&x, sizeof(x)), 0);
		CHECK_RET(getsockname(a, (struct sockaddr *)&x, &len), 0);
		CHECK_RET(bind(b, (struct sockaddr *)&x, sizeof(x)), 0);
		close(a);
		close(b);
		a = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		b = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		CHECK_RET(bind(a, (struct sockaddr *)&x, sizeof(x)), 0);
		CHECK_ERR(bind(b, (struct sockaddr *)&x, sizeof(x)), EADDRINUSE);
		close(a);
		close(b);
	}
	return finish();
}
