/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loopback TCP over IPv4 and IPv6: bind (explicit and ephemeral ports, EADDRINUSE,
 * SO_REUSEADDR), listen, connect (blocking and non-blocking with EINPROGRESS and SO_ERROR),
 * ECONNREFUSED, accept4, getsockname/getpeername, data both ways, half-close, EOF, EPIPE, a
 * dual-stack listener taking an IPv4 client, options, and a transfer larger than the socket
 * buffers driven by poll. Single process; traffic only to 127.0.0.1 and ::1.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A listener on 127.0.0.1 with an ephemeral port; *port gets it. */
static int listener4(uint16_t *port)
{
	struct sockaddr_in a = lo4(0);
	socklen_t len = sizeof(a);
	int l = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));

	CHECK_RET(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(listen(l, 16), 0);
	CHECK_RET(getsockname(l, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	CHECK(*port != 0, "no ephemeral port");
	return l;
}

static void test_basic(void)
{
	uint16_t port;
	int l = listener4(&port), c, a;
	struct sockaddr_in sa = lo4(port), got, peer;
	socklen_t len;
	char buf[64];

	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_RET(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	len = sizeof(peer);
	a = CHECK_OK(accept4(l, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC));
	CHECK(len == sizeof(peer) && peer.sin_family == AF_INET, "accept address len %u", len);
	len = sizeof(got);
	CHECK_RET(getsockname(c, (struct sockaddr *)&got, &len), 0);
	CHECK(got.sin_port == peer.sin_port && got.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "client name %x:%u vs peer %u", ntohl(got.sin_addr.s_addr), ntohs(got.sin_port),
	      ntohs(peer.sin_port));
	len = sizeof(got);
	CHECK_RET(getpeername(c, (struct sockaddr *)&got, &len), 0);
	CHECK(got.sin_port == htons(port), "peer port %u", ntohs(got.sin_port));
	len = sizeof(got);
	CHECK_RET(getsockname(a, (struct sockaddr *)&got, &len), 0);
	CHECK(got.sin_port == htons(port), "accepted socket's port %u", ntohs(got.sin_port));

	CHECK_RET(send(c, "GET / HTTP/1.0\r\n\r\n", 18, 0), 18);
	CHECK_RET(recv(a, buf, sizeof(buf), 0), 18);
	CHECK_RET(send(a, "HTTP/1.0 200 OK\r\n", 17, MSG_NOSIGNAL), 17);
	CHECK_RET(recv(c, buf, 4, MSG_WAITALL), 4);
	CHECK(!memcmp(buf, "HTTP", 4), "got %.4s", buf);
	CHECK_RET(recv(c, buf, sizeof(buf), MSG_DONTWAIT), 13);
	CHECK_ERR(recv(c, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

	/* Half-close: EOF for the reader, the other direction still works. */
	CHECK_RET(shutdown(c, SHUT_WR), 0);
	CHECK_RET(recv(a, buf, sizeof(buf), 0), 0);
	{
		struct pollfd p = { a, POLLIN | POLLRDHUP, 0 };

		CHECK_RET(poll(&p, 1, 0), 1);
		CHECK(p.revents & POLLRDHUP, "revents %#x", p.revents);
	}
	CHECK_RET(send(a, "bye", 3, 0), 3);
	CHECK_RET(recv(c, buf, sizeof(buf), 0), 3);
	CHECK_RET(close(a), 0);
	CHECK_RET(recv(c, buf, sizeof(buf), 0), 0);
	close(c);

	/* Errors. */
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	len = sizeof(got);
	CHECK_ERR(getpeername(c, (struct sockaddr *)&got, &len), ENOTCONN);
	CHECK_ERR(send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
	{
		struct sockaddr_in b = lo4(port);

		CHECK_ERR(bind(c, (struct sockaddr *)&b, sizeof(b)), EADDRINUSE);
		b.sin_addr.s_addr = inet_addr("203.0.113.7");
		CHECK_ERR(bind(c, (struct sockaddr *)&b, sizeof(b)), EADDRNOTAVAIL);
		CHECK_ERR(bind(c, (struct sockaddr *)&b, 4), EINVAL);
	}
	close(c);
	close(l);
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&sa, sizeof(sa)), ECONNREFUSED);
	close(c);
}

static void test_nonblocking(void)
{
	uint16_t port;
	int l = listener4(&port), c, a, err;
	struct sockaddr_in sa = lo4(port);
	socklen_t len = sizeof(err);
	struct pollfd p;

	c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	errno = 0;
	{
		int r = connect(c, (struct sockaddr *)&sa, sizeof(sa));

		CHECK(r == 0 || errno == EINPROGRESS, "connect: %d %s", r, strerror(errno));
	}
	p = (struct pollfd){ c, POLLOUT, 0 };
	CHECK_RET(poll(&p, 1, 5000), 1);
	CHECK_RET(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	CHECK(err == 0, "SO_ERROR %d", err);
	/* The first connect after completion reports it; the next one EISCONN. */
	CHECK_RET(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_ERR(connect(c, (struct sockaddr *)&sa, sizeof(sa)), EISCONN);
	a = CHECK_OK(accept(l, NULL, NULL));
	close(a);
	close(c);
	close(l);

	/* Refused: EINPROGRESS or ECONNREFUSED at once, then the error in SO_ERROR. */
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	errno = 0;
	{
		int r = connect(c, (struct sockaddr *)&sa, sizeof(sa));

		CHECK(r == -1 && (errno == EINPROGRESS || errno == ECONNREFUSED), "connect: %d %s",
		      r, strerror(errno));
		if (errno == EINPROGRESS) {
			p = (struct pollfd){ c, POLLOUT, 0 };
			CHECK_RET(poll(&p, 1, 5000), 1);
			len = sizeof(err);
			CHECK_RET(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
			CHECK(err == ECONNREFUSED, "SO_ERROR %d", err);
		}
	}
	close(c);
}

static void test_reuse_and_v6(void)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in6 got;
	socklen_t len = sizeof(got);
	int one = 1, l, l2, c, a, v;
	uint16_t port;
	char buf[8];

	/* A dual-stack listener on [::] takes an IPv4 client; its peer is IPv4-mapped. */
	l = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	CHECK_OK(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	CHECK_RET(bind(l, (struct sockaddr *)&a6, sizeof(a6)), 0);
	CHECK_RET(listen(l, 4), 0);
	CHECK_RET(getsockname(l, (struct sockaddr *)&got, &len), 0);
	port = ntohs(got.sin6_port);
	{
		struct sockaddr_in sa = lo4(port);

		c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
		CHECK_RET(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	len = sizeof(got);
	a = CHECK_OK(accept(l, (struct sockaddr *)&got, &len));
	CHECK(len == sizeof(got) && IN6_IS_ADDR_V4MAPPED(&got.sin6_addr), "peer not v4-mapped");
	CHECK_RET(write(c, "v4", 2), 2);
	CHECK_RET(read(a, buf, sizeof(buf)), 2);
	close(a);
	close(c);

	/* ::1 itself. */
	c = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	got = (struct sockaddr_in6){ .sin6_family = AF_INET6,
				     .sin6_port = htons(port),
				     .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	CHECK_RET(connect(c, (struct sockaddr *)&got, sizeof(got)), 0);
	a = CHECK_OK(accept(l, NULL, NULL));
	CHECK_RET(write(a, "v6", 2), 2);
	CHECK_RET(read(c, buf, sizeof(buf)), 2);
	close(a);
	close(c);

	/* Without SO_REUSEADDR on both, a second listener on the port is refused. */
	l2 = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	a6.sin6_port = htons(port);
	CHECK_ERR(bind(l2, (struct sockaddr *)&a6, sizeof(a6)), EADDRINUSE);
	close(l2);
	close(l);

	/* Options programs set and read back. */
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_OK(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	len = sizeof(v);
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len));
	CHECK(v == 1, "TCP_NODELAY %d", v);
	len = sizeof(v);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_TYPE, &v, &len));
	CHECK(v == SOCK_STREAM, "SO_TYPE %d", v);
	CHECK_OK(setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
	CHECK_ERR(setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, 1), EINVAL);
	close(c);
}

static void test_bulk(void)
{
	uint16_t port;
	int l = listener4(&port), c, a;
	struct sockaddr_in sa = lo4(port);
	static char out[1 << 16], in[1 << 16];
	size_t total = 8 << 20, sent = 0, recvd = 0;
	unsigned long sum_out = 0, sum_in = 0;

	c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	errno = 0;
	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
		CHECK(0, "connect: %s", strerror(errno));
	a = CHECK_OK(accept4(l, NULL, NULL, SOCK_NONBLOCK));
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7 + 3);
	while (recvd < total) {
		struct pollfd p[2] = { { c, sent < total ? POLLOUT : 0, 0 }, { a, POLLIN, 0 } };

		if (poll(p, 2, 5000) <= 0) {
			CHECK(0, "poll timed out at %zu/%zu", recvd, total);
			break;
		}
		if (p[0].revents & POLLOUT) {
			ssize_t n = write(c, out, MIN(sizeof(out), total - sent));

			if (n > 0) {
				for (ssize_t i = 0; i < n; i++)
					sum_out += (unsigned char)out[i];
				sent += (size_t)n;
			}
		}
		if (p[1].revents & POLLIN) {
			ssize_t n = read(a, in, sizeof(in));

			if (n <= 0) {
				CHECK(0, "read gave %zd at %zu", n, recvd);
				break;
			}
			for (ssize_t i = 0; i < n; i++)
				sum_in += (unsigned char)in[i];
			recvd += (size_t)n;
		}
	}
	CHECK(recvd == total && sum_in == sum_out, "received %zu of %zu, sums %lu/%lu", recvd,
	      total, sum_in, sum_out);
	close(a);
	close(c);
	close(l);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_basic();
	test_nonblocking();
	test_reuse_and_v6();
	test_bulk();
	return finish();
}
