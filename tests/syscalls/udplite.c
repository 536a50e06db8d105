/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UDP-Lite (RFC 3828, man 7 udplite) over loopback: socket(AF_INET/AF_INET6, SOCK_DGRAM,
 * IPPROTO_UDPLITE) and what it refuses, SO_PROTOCOL; UDPLITE_SEND_CSCOV and UDPLITE_RECV_CSCOV
 * (their values' rules, both option levels, UDP sockets' answers); datagrams between UDP-Lite
 * sockets over 127.0.0.1, ::1 and v4-mapped addresses; UDP and UDP-Lite sockets on one port
 * kept apart (separate port tables, port unreachable across them); which partially covered
 * datagrams a receiver with UDPLITE_RECV_CSCOV drops, silently, counted in /proc/net/udplite;
 * the address of a sender on the wildcard (UDP too).
 * Single process; traffic only to 127.0.0.1 and ::1. Skipped on a kernel without UDP-Lite.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "check.h"
#include "child.h"

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif
#define SOL_UDPLITE_ 136 /* the kernel's SOL_UDPLITE (not in libc) */
#define UDPLITE_SEND_CSCOV_ 10
#define UDPLITE_RECV_CSCOV_ 11
#ifndef UDP_CORK
#define UDP_CORK 1
#endif

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static struct sockaddr_in6 lo6(uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	a.sin6_addr = in6addr_loopback;
	return a;
}

/* A socket of protocol bound to 127.0.0.1 (port 0: the kernel's choice); its port in *port. */
static int bound4(int protocol, uint16_t want, uint16_t *port)
{
	struct sockaddr_in a = lo4(want);
	socklen_t len = sizeof(a);
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, protocol));

	CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(getsockname(s, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return s;
}

static int getint(int s, int level, int name)
{
	int v = -12345;
	socklen_t l = sizeof(v);

	if (getsockopt(s, level, name, &v, &l) < 0)
		return -100000 - errno;
	return v;
}

/* Waits (generously) for s to be readable or to have an error; returns poll's revents. */
static short wait_in(int s)
{
	struct pollfd p = { s, POLLIN, 0 };

	if (poll(&p, 1, 10000) != 1)
		return 0;
	return p.revents;
}

static void test_create(void)
{
	int s4 = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE));
	int s6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDPLITE));
	int sv[2];

	CHECK(getint(s4, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_UDPLITE, "SO_PROTOCOL %d",
	      getint(s4, SOL_SOCKET, SO_PROTOCOL));
	CHECK(getint(s6, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_UDPLITE, "SO_PROTOCOL v6 %d",
	      getint(s6, SOL_SOCKET, SO_PROTOCOL));
	CHECK(getint(s4, SOL_SOCKET, SO_TYPE) == SOCK_DGRAM, "SO_TYPE %d",
	      getint(s4, SOL_SOCKET, SO_TYPE));
	CHECK(getint(s6, SOL_SOCKET, SO_DOMAIN) == AF_INET6, "SO_DOMAIN %d",
	      getint(s6, SOL_SOCKET, SO_DOMAIN));
	CHECK_ERR(socket(AF_INET, SOCK_STREAM, IPPROTO_UDPLITE), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_INET6, SOCK_STREAM, IPPROTO_UDPLITE), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_INET6, SOCK_SEQPACKET, IPPROTO_UDPLITE), ESOCKTNOSUPPORT);
	CHECK_ERR(socketpair(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE, sv), EOPNOTSUPP);
	CHECK_ERR(listen(s4, 1), EOPNOTSUPP);
	CHECK_ERR(accept(s4, NULL, NULL), EOPNOTSUPP);
	CHECK_ERR(shutdown(s4, SHUT_RD), ENOTCONN);
	CHECK_ERR(send(s4, "x", 1, 0), EDESTADDRREQ);
	CHECK_ERR(recv(s6, sv, sizeof(sv), 0), EAGAIN);
	close(s4);
	close(s6);
}

static void test_options(void)
{
	static const struct {
		int set, got;
	} vals[] = {
		{ 0, 0 },	  { 1, 8 },	    { 7, 8 },	       { 8, 8 },
		{ 9, 9 },	  { -1, 8 },	    { -100000, 8 },    { 1000, 1000 },
		{ 65535, 65535 }, { 65536, 65535 }, { 100000, 65535 },
	};
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE));
	int s6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE));
	int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	int u6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	int t = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	int v = 1;
	unsigned char c[8];
	socklen_t l;

	/* Full coverage (0) until set. */
	CHECK(getint(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_) == 0, "send cscov %d",
	      getint(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_));
	CHECK(getint(s, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_) == 0, "recv cscov %d",
	      getint(s, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_));
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (int name = UDPLITE_SEND_CSCOV_; name <= UDPLITE_RECV_CSCOV_; name++) {
			v = vals[i].set;
			CHECK_RET(setsockopt(s, SOL_UDPLITE_, name, &v, sizeof(v)), 0);
			CHECK(getint(s, SOL_UDPLITE_, name) == vals[i].got, "option %d: %d gave %d",
			      name, vals[i].set, getint(s, SOL_UDPLITE_, name));
		}
	}
	/* SOL_UDP reaches the same options, on IPv6 sockets too. */
	v = 20;
	CHECK_RET(setsockopt(s6, SOL_UDP, UDPLITE_RECV_CSCOV_, &v, sizeof(v)), 0);
	CHECK(getint(s6, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_) == 20, "v6 recv cscov %d",
	      getint(s6, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_));
	CHECK(getint(s6, SOL_UDP, UDPLITE_SEND_CSCOV_) == 0, "v6 send cscov %d",
	      getint(s6, SOL_UDP, UDPLITE_SEND_CSCOV_));
	/* An int's worth at most; a short buffer gets the low bytes. */
	v = 3;
	CHECK_ERR(setsockopt(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, 2), EINVAL);
	v = 0x1234;
	CHECK_RET(setsockopt(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, sizeof(v)), 0);
	memset(c, 0x55, sizeof(c));
	l = 1;
	CHECK_RET(getsockopt(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, c, &l), 0);
	CHECK(l == 1 && c[0] == 0x34 && c[1] == 0x55, "short get: len %u %02x %02x", l, c[0], c[1]);
	l = sizeof(c);
	CHECK_RET(getsockopt(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, c, &l), 0);
	CHECK(l == 4 && c[0] == 0x34 && c[1] == 0x12 && c[4] == 0x55, "long get: len %u", l);
	CHECK_ERR(setsockopt(s, SOL_UDPLITE_, 12, &v, sizeof(v)), ENOPROTOOPT);
	l = sizeof(v);
	CHECK_ERR(getsockopt(s, SOL_UDPLITE_, 12, &v, &l), ENOPROTOOPT);
	/* UDP-Lite sockets take UDP's options; UDP sockets take the UDP-Lite level. */
	v = 1;
	CHECK_RET(setsockopt(s, SOL_UDP, UDP_CORK, &v, sizeof(v)), 0);
	CHECK(getint(s, SOL_UDPLITE_, UDP_CORK) == 1, "cork %d", getint(s, SOL_UDPLITE_, UDP_CORK));
	CHECK_RET(setsockopt(u, SOL_UDPLITE_, UDP_CORK, &v, sizeof(v)), 0);
	CHECK(getint(u, SOL_UDP, UDP_CORK) == 1, "udp cork %d", getint(u, SOL_UDP, UDP_CORK));
	/* ... but not the coverages, which they read as 0. */
	v = 20;
	CHECK_ERR(setsockopt(u, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, sizeof(v)), ENOPROTOOPT);
	CHECK_ERR(setsockopt(u, SOL_UDP, UDPLITE_RECV_CSCOV_, &v, sizeof(v)), ENOPROTOOPT);
	CHECK_ERR(setsockopt(u6, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_, &v, sizeof(v)), ENOPROTOOPT);
	CHECK(getint(u, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_) == 0, "udp send cscov %d",
	      getint(u, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_));
	CHECK(getint(u6, SOL_UDP, UDPLITE_RECV_CSCOV_) == 0, "udp6 recv cscov %d",
	      getint(u6, SOL_UDP, UDPLITE_RECV_CSCOV_));
	/* TCP has no such level: IPv4's chain ends in ENOPROTOOPT (set), EOPNOTSUPP (get). */
	CHECK_ERR(setsockopt(t, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, sizeof(v)), ENOPROTOOPT);
	l = sizeof(v);
	CHECK_ERR(getsockopt(t, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, &l), EOPNOTSUPP);
	close(s);
	close(s6);
	close(u);
	close(u6);
	close(t);
}

/* Datagrams between UDP-Lite sockets: 127.0.0.1, ::1, v4-mapped; connect; EMSGSIZE. */
static void test_datagrams(void)
{
	uint16_t p1, p2, p6;
	int s1 = bound4(IPPROTO_UDPLITE, 0, &p1), s2 = bound4(IPPROTO_UDPLITE, 0, &p2);
	int s6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE));
	struct sockaddr_in d1 = lo4(p1), d2 = lo4(p2), from;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 }, from6, d6;
	socklen_t fl = sizeof(from);
	char buf[128];
	static char big[65508];

	CHECK_RET(sendto(s2, "hello", 5, 0, (struct sockaddr *)&d1, sizeof(d1)), 5);
	CHECK(wait_in(s1) == POLLIN, "POLLIN");
	CHECK_RET(recvfrom(s1, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl), 5);
	CHECK(fl == sizeof(from) && from.sin_port == htons(p2) &&
		      from.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "from %s:%u", inet_ntoa(from.sin_addr), ntohs(from.sin_port));
	CHECK(!memcmp(buf, "hello", 5), "got %.5s", buf);
	CHECK_RET(sendto(s2, "world!", 6, 0, (struct sockaddr *)&d1, sizeof(d1)), 6);
	CHECK(wait_in(s1) == POLLIN, "POLLIN");
	CHECK_RET(recv(s1, buf, 2, MSG_TRUNC), 6);
	CHECK_ERR(recv(s1, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

	/* connect: the default destination, and only the peer's datagrams come in. */
	CHECK_RET(connect(s1, (struct sockaddr *)&d2, sizeof(d2)), 0);
	CHECK_RET(send(s1, "to2", 3, 0), 3);
	CHECK_RET(recv(s2, buf, sizeof(buf), 0), 3);
	fl = sizeof(from);
	CHECK_RET(getpeername(s1, (struct sockaddr *)&from, &fl), 0);
	CHECK(from.sin_port == htons(p2), "peer port %u", ntohs(from.sin_port));

	/* ::1 and a wildcard IPv6 socket reached from IPv4 (a v4-mapped source). */
	CHECK_RET(bind(s6, (struct sockaddr *)&a6, sizeof(a6)), 0);
	fl = sizeof(a6);
	CHECK_RET(getsockname(s6, (struct sockaddr *)&a6, &fl), 0);
	p6 = ntohs(a6.sin6_port);
	d6 = lo6(p6);
	CHECK_RET(sendto(s6, "self", 4, 0, (struct sockaddr *)&d6, sizeof(d6)), 4);
	fl = sizeof(from6);
	CHECK_RET(recvfrom(s6, buf, sizeof(buf), 0, (struct sockaddr *)&from6, &fl), 4);
	CHECK(fl == sizeof(from6) && IN6_IS_ADDR_LOOPBACK(&from6.sin6_addr) &&
		      from6.sin6_port == htons(p6),
	      "from6 port %u", ntohs(from6.sin6_port));
	d1 = lo4(p6);
	CHECK_RET(sendto(s2, "mapped", 6, 0, (struct sockaddr *)&d1, sizeof(d1)), 6);
	fl = sizeof(from6);
	CHECK(wait_in(s6) == POLLIN, "mapped datagram");
	CHECK_RET(recvfrom(s6, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from6, &fl), 6);
	CHECK(IN6_IS_ADDR_V4MAPPED(&from6.sin6_addr) && from6.sin6_port == htons(p2),
	      "mapped source, port %u", ntohs(from6.sin6_port));

	/* The largest IPv4 datagram, and one byte more. */
	CHECK_RET(sendto(s2, big, 65507, 0, (struct sockaddr *)&d1, sizeof(d1)), 65507);
	CHECK_RET(recv(s6, big, sizeof(big), 0), 65507);
	CHECK_ERR(sendto(s2, big, 65508, 0, (struct sockaddr *)&d1, sizeof(d1)), EMSGSIZE);
	close(s1);
	close(s2);
	close(s6);
}

/* UDP and UDP-Lite sockets on one port: two tables, two sockets, no crossing. */
static void test_tables(void)
{
	uint16_t pl = 0, pu, tmp;
	int l = -1, u = -1;
	int ls = bound4(IPPROTO_UDPLITE, 0, &tmp), us = bound4(IPPROTO_UDP, 0, &tmp);
	int l2, c;
	struct sockaddr_in d;
	char buf[16];

	/* A UDP-Lite port that UDP has free too (natively, other programs hold UDP ports). */
	for (int i = 0; i < 50 && u < 0; i++) {
		l = bound4(IPPROTO_UDPLITE, 0, &pl);
		d = lo4(pl);
		u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		if (bind(u, (struct sockaddr *)&d, sizeof(d)) < 0) {
			close(u);
			close(l);
			u = -1;
		}
	}
	CHECK(u >= 0, "a UDP socket on UDP-Lite's port %u: %s", pl, strerror(errno));
	/* The port is taken in UDP-Lite's table only by l. */
	l2 = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE));
	CHECK_ERR(bind(l2, (struct sockaddr *)&d, sizeof(d)), EADDRINUSE);
	close(l2);

	CHECK_RET(sendto(us, "u", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	CHECK_RET(sendto(ls, "l", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	CHECK_RET(recv(l, buf, sizeof(buf), 0), 1);
	CHECK(buf[0] == 'l', "UDP-Lite socket got '%c'", buf[0]);
	CHECK_RET(recv(u, buf, sizeof(buf), 0), 1);
	CHECK(buf[0] == 'u', "UDP socket got '%c'", buf[0]);
	/* Each had one: the other protocol's datagram was not theirs (sent before the last). */
	CHECK_RET(sendto(ls, "L", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	CHECK_RET(recv(l, buf, sizeof(buf), 0), 1);
	CHECK(buf[0] == 'L', "UDP-Lite socket got '%c'", buf[0]);
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

	/* A port with only a UDP socket is unreachable for UDP-Lite, and the other way round. */
	close(l);
	c = CHECK_OK(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE));
	CHECK_RET(connect(c, (struct sockaddr *)&d, sizeof(d)), 0);
	CHECK_RET(send(c, "x", 1, 0), 1);
	CHECK(wait_in(c) & POLLERR, "POLLERR");
	CHECK_ERR(recv(c, buf, sizeof(buf), MSG_DONTWAIT), ECONNREFUSED);
	close(c);
	l = bound4(IPPROTO_UDPLITE, 0, &pl);
	close(u);
	u = bound4(IPPROTO_UDP, 0, &pu);
	d = lo4(pl);
	c = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	CHECK_RET(connect(c, (struct sockaddr *)&d, sizeof(d)), 0);
	CHECK_RET(send(c, "x", 1, 0), 1);
	CHECK(wait_in(c) & POLLERR, "POLLERR");
	CHECK_ERR(send(c, "x", 1, 0), ECONNREFUSED);
	close(c);
	close(l);
	close(u);
	close(ls);
	close(us);
}

/*
 * A sender's address after unconnected sends (UDP and UDP-Lite alike): an unbound socket gets a
 * port on the wildcard, a socket bound to the wildcard stays there (and keeps receiving on other
 * addresses: here a datagram to ::1, then one to 127.0.0.1).
 */
static void test_sender_address(int protocol)
{
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, protocol));
	int s6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, protocol));
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 }, d6;
	struct sockaddr_in a, d;
	socklen_t l = sizeof(a6);
	char buf[16];

	CHECK_RET(bind(s6, (struct sockaddr *)&a6, sizeof(a6)), 0);
	CHECK_RET(getsockname(s6, (struct sockaddr *)&a6, &l), 0);
	d6 = lo6(ntohs(a6.sin6_port));
	CHECK_RET(sendto(s6, "six", 3, 0, (struct sockaddr *)&d6, sizeof(d6)), 3);
	CHECK_RET(recv(s6, buf, sizeof(buf), 0), 3);
	l = sizeof(a6);
	CHECK_RET(getsockname(s6, (struct sockaddr *)&a6, &l), 0);
	CHECK(IN6_IS_ADDR_UNSPECIFIED(&a6.sin6_addr), "protocol %d: wildcard kept", protocol);
	d = lo4(ntohs(a6.sin6_port));
	CHECK_RET(sendto(s, "four", 4, 0, (struct sockaddr *)&d, sizeof(d)), 4);
	CHECK(wait_in(s6) == POLLIN, "protocol %d: datagram to 127.0.0.1", protocol);
	CHECK_RET(recv(s6, buf, sizeof(buf), MSG_DONTWAIT), 4);
	l = sizeof(a);
	CHECK_RET(getsockname(s, (struct sockaddr *)&a, &l), 0);
	CHECK(a.sin_addr.s_addr == htonl(INADDR_ANY) && a.sin_port != 0,
	      "protocol %d: autobound to %s:%u", protocol, inet_ntoa(a.sin_addr),
	      ntohs(a.sin_port));
	close(s);
	close(s6);
}

/* The drops column of the line of socket inode ino in /proc/net/NAME; -1: no such line. */
static long proc_drops(const char *name, unsigned long ino)
{
	char path[64], line[512], want[32];
	long drops = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/net/%s", name);
	snprintf(want, sizeof(want), " %lu ", ino);
	f = fopen(path, "r");
	if (!f)
		return -2;
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (!strstr(line, want))
			continue;
		p = line + strlen(line);
		while (p > line && (p[-1] == '\n' || p[-1] == ' '))
			p--;
		*p = '\0';
		while (p > line && p[-1] != ' ')
			p--;
		drops = strtol(p, NULL, 10);
	}
	fclose(f);
	return drops;
}

/*
 * Checksum coverage: which datagrams of len payload bytes, sent with UDPLITE_SEND_CSCOV scov
 * (-1: not set), a receiver with UDPLITE_RECV_CSCOV rcov (-1: not set) takes. The coverage
 * counts the 8-byte header; one as large as the datagram is full coverage (0).
 */
static void test_coverage(void)
{
	static const struct {
		int len, scov, rcov;
		bool taken;
	} cases[] = {
		/* Nothing asked: everything is taken. */
		{ 8, -1, -1, true },
		{ 8, 8, -1, true },
		{ 12, 9, -1, true },
		/* Full coverage sent: taken whatever the receiver asks. */
		{ 8, -1, 100, true },
		{ 8, 0, 0, true },
		{ 8, 16, 20, true },
		{ 12, 20, 100, true },
		{ 12, 40, 0, true },
		{ 0, 8, 0, true },
		/* Partial coverage: taken when at least what was asked; 0 asks for full. */
		{ 8, 8, 8, true },
		{ 8, 8, 0, false },
		{ 8, 8, 12, false },
		{ 8, 15, 12, true },
		{ 8, 15, 16, false },
		{ 12, 16, 16, true },
		{ 12, 16, 17, false },
		{ 12, 19, 20, false },
		{ 12, 1, 8, true },
		{ 12, 1, 9, false },
		{ 12, 17, 1, true },
	};
	uint16_t ps, pr;
	int s = bound4(IPPROTO_UDPLITE, 0, &ps);
	int dropped = 0;
	char buf[64];
	struct stat st;
	int r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_in d;
		int v = cases[i].scov, zero = 0;

		r = bound4(IPPROTO_UDPLITE, 0, &pr);
		d = lo4(pr);
		if (cases[i].rcov >= 0)
			CHECK_RET(setsockopt(r, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_, &cases[i].rcov,
					     sizeof(int)),
				  0);
		if (v >= 0)
			CHECK_RET(setsockopt(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, sizeof(v)),
				  0);
		memset(buf, 'a' + (int)i, sizeof(buf));
		CHECK_RET(sendto(s, buf, cases[i].len, 0, (struct sockaddr *)&d, sizeof(d)),
			  cases[i].len);
		/* A fully covered marker after it: the first datagram received says. */
		CHECK_RET(setsockopt(s, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &zero, sizeof(zero)), 0);
		CHECK_RET(sendto(s, "marker!", 7, 0, (struct sockaddr *)&d, sizeof(d)), 7);
		CHECK_RET(recv(r, buf, sizeof(buf), 0), cases[i].taken ? cases[i].len : 7);
		if (cases[i].taken)
			CHECK_RET(recv(r, buf, sizeof(buf), 0), 7);
		CHECK_ERR(recv(r, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
		if (!cases[i].taken && fstat(r, &st) == 0)
			CHECK(proc_drops("udplite", st.st_ino) == 1, "case %zu: drops %ld", i,
			      proc_drops("udplite", st.st_ino));
		dropped += !cases[i].taken;
		close(r);
	}
	CHECK(dropped > 0, "cases");

	/* Over IPv6 as over IPv4; /proc/net/udplite6 counts the drops of IPv6 sockets. */
	{
		int s6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE));
		int r6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE));
		struct sockaddr_in6 a = lo6(0);
		socklen_t l = sizeof(a);
		int v = 10;

		CHECK_RET(bind(r6, (struct sockaddr *)&a, sizeof(a)), 0);
		CHECK_RET(getsockname(r6, (struct sockaddr *)&a, &l), 0);
		CHECK_RET(setsockopt(r6, SOL_UDPLITE_, UDPLITE_RECV_CSCOV_, &v, sizeof(v)), 0);
		v = 9;
		CHECK_RET(setsockopt(s6, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, sizeof(v)), 0);
		CHECK_RET(sendto(s6, "short", 5, 0, (struct sockaddr *)&a, sizeof(a)), 5);
		v = 10;
		CHECK_RET(setsockopt(s6, SOL_UDPLITE_, UDPLITE_SEND_CSCOV_, &v, sizeof(v)), 0);
		CHECK_RET(sendto(s6, "enough", 6, 0, (struct sockaddr *)&a, sizeof(a)), 6);
		CHECK_RET(recv(r6, buf, sizeof(buf), 0), 6);
		CHECK(!memcmp(buf, "enough", 6), "v6 got %.6s", buf);
		CHECK_ERR(recv(r6, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
		if (fstat(r6, &st) == 0) {
			CHECK(proc_drops("udplite6", st.st_ino) == 1, "udplite6 drops %ld",
			      proc_drops("udplite6", st.st_ino));
			CHECK(proc_drops("udp6", st.st_ino) == -1, "udp6 lists a UDP-Lite socket");
		}
		close(s6);
		close(r6);
	}
	if (fstat(s, &st) == 0) {
		CHECK(proc_drops("udplite", st.st_ino) == 0, "sender's drops %ld",
		      proc_drops("udplite", st.st_ino));
		CHECK(proc_drops("udp", st.st_ino) == -1, "udp lists a UDP-Lite socket");
	}
	close(s);
}

int main(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE);

	if (s < 0 && errno == EPROTONOSUPPORT && !in_husk()) {
		printf("skip: this kernel has no UDP-Lite\n");
		return finish();
	}
	CHECK(s >= 0, "socket: %s", strerror(errno));
	close(s);
	test_create();
	test_options();
	test_datagrams();
	test_tables();
	test_sender_address(IPPROTO_UDP);
	test_sender_address(IPPROTO_UDPLITE);
	test_coverage();
	return finish();
}
