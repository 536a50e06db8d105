/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ancillary data of UDP over loopback: IPV6_RECVHOPLIMIT, IPV6_RECVTCLASS, IPV6_RECVPKTINFO on
 * ::1 and IP_RECVTTL, IP_RECVTOS, IP_PKTINFO on 127.0.0.1, with values from the sender's
 * options (IPV6_UNICAST_HOPS, IPV6_TCLASS, IP_TTL, IP_TOS) or from its control messages, in
 * Linux's order, MSG_CTRUNC; and IPv4 on IPv6 sockets: v4-mapped addresses and IPV6_V6ONLY.
 * Traffic only to 127.0.0.1 and ::1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#include "check.h"

static struct sockaddr_in6 lo6(uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	a.sin6_addr = in6addr_loopback;
	return a;
}

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static uint16_t port_of(int s)
{
	struct sockaddr_in6 a;
	socklen_t len = sizeof(a);

	getsockname(s, (struct sockaddr *)&a, &len);
	return ntohs(a.sin6_port); /* sin_port is at the same place */
}

static int bound(int fam)
{
	int s = CHECK_OK(socket(fam, SOCK_DGRAM, 0));

	if (fam == AF_INET6) {
		struct sockaddr_in6 a = lo6(0);

		CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	} else {
		struct sockaddr_in a = lo4(0);

		CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	}
	return s;
}

static int on(int s, int level, int name)
{
	int v = 1;

	return setsockopt(s, level, name, &v, sizeof(v));
}

/* What one receive gave: the control messages by type, and their order. */
struct got {
	int n;
	int level[8], type[8];
	int hoplimit, tclass, ttl, tos;
	struct in6_pktinfo pi6;
	struct in_pktinfo pi4;
	int flags;
	ssize_t len;
	struct sockaddr_in6 from;
	socklen_t fromlen;
};

static void recv_one(int s, struct got *g, size_t ctlsize)
{
	char buf[64], ctl[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_name = &g->from,
			     .msg_namelen = sizeof(g->from),
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl,
			     .msg_controllen = ctlsize };
	struct pollfd pfd = { s, POLLIN, 0 };

	memset(g, 0, sizeof(*g));
	g->hoplimit = g->tclass = g->ttl = g->tos = -1;
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	g->len = recvmsg(s, &mh, MSG_DONTWAIT);
	g->flags = mh.msg_flags;
	g->fromlen = mh.msg_namelen;
	if (g->len < 0)
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (g->n < 8) {
			g->level[g->n] = c->cmsg_level;
			g->type[g->n] = c->cmsg_type;
			g->n++;
		}
		if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)
			memcpy(&g->hoplimit, CMSG_DATA(c), sizeof(int));
		if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_TCLASS)
			memcpy(&g->tclass, CMSG_DATA(c), sizeof(int));
		if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_PKTINFO)
			memcpy(&g->pi6, CMSG_DATA(c), sizeof(g->pi6));
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_TTL)
			memcpy(&g->ttl, CMSG_DATA(c), sizeof(int));
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_TOS) {
			CHECK(c->cmsg_len == CMSG_LEN(1), "IP_TOS cmsg_len %zu",
			      (size_t)c->cmsg_len);
			g->tos = *(unsigned char *)CMSG_DATA(c);
		}
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_PKTINFO)
			memcpy(&g->pi4, CMSG_DATA(c), sizeof(g->pi4));
	}
}

/* sendmsg with one int control message (level/type) unless level < 0. */
static ssize_t send_cmsg(int s, const void *to, socklen_t tolen, int level, int type, int val)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { "ping", 4 };
	struct msghdr mh = {
		.msg_name = (void *)to, .msg_namelen = tolen, .msg_iov = &iov, .msg_iovlen = 1
	};

	if (level >= 0) {
		struct cmsghdr *c;

		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = level;
		c->cmsg_type = type;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &val, sizeof(int));
	}
	return sendmsg(s, &mh, 0);
}

static void test_ipv6(void)
{
	int r = bound(AF_INET6), s = bound(AF_INET6), v;
	struct sockaddr_in6 d = lo6(port_of(r));
	socklen_t l = sizeof(v);
	struct got g;

	/* Defaults and ranges of the sender's options. */
	CHECK_RET(getsockopt(s, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, &l), 0);
	CHECK(v == 64, "IPV6_UNICAST_HOPS %d", v);
	v = 256;
	CHECK_ERR(setsockopt(s, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v)), EINVAL);
	CHECK_ERR(setsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v)), EINVAL);
	v = 0;
	l = sizeof(v);
	CHECK_RET(getsockopt(r, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &v, &l), 0);
	CHECK(v == 0, "IPV6_RECVHOPLIMIT %d", v);

	CHECK_RET(on(r, IPPROTO_IPV6, IPV6_RECVHOPLIMIT), 0);
	CHECK_RET(on(r, IPPROTO_IPV6, IPV6_RECVTCLASS), 0);
	CHECK_RET(on(r, IPPROTO_IPV6, IPV6_RECVPKTINFO), 0);
	l = sizeof(v);
	CHECK_RET(getsockopt(r, IPPROTO_IPV6, IPV6_RECVTCLASS, &v, &l), 0);
	CHECK(v == 1, "IPV6_RECVTCLASS %d", v);

	/* The defaults: hop limit 64, traffic class 0; Linux's order. */
	CHECK_RET(send_cmsg(s, &d, sizeof(d), -1, 0, 0), 4);
	recv_one(r, &g, 512);
	CHECK(g.len == 4 && g.n == 3, "len %zd n %d", g.len, g.n);
	CHECK(g.type[0] == IPV6_PKTINFO && g.type[1] == IPV6_HOPLIMIT && g.type[2] == IPV6_TCLASS,
	      "order %d %d %d", g.type[0], g.type[1], g.type[2]);
	CHECK(g.hoplimit == 64 && g.tclass == 0, "hoplimit %d tclass %d", g.hoplimit, g.tclass);
	CHECK(g.pi6.ipi6_ifindex == 1 && IN6_IS_ADDR_LOOPBACK(&g.pi6.ipi6_addr),
	      "pktinfo ifindex %u", g.pi6.ipi6_ifindex);

	/* The sender's options. */
	v = 7;
	CHECK_RET(setsockopt(s, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v)), 0);
	v = 0x20;
	CHECK_RET(setsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v)), 0);
	l = sizeof(v);
	CHECK_RET(getsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &v, &l), 0);
	CHECK(v == 0x20, "IPV6_TCLASS %d", v);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), -1, 0, 0), 4);
	recv_one(r, &g, 512);
	CHECK(g.hoplimit == 7 && g.tclass == 0x20, "hoplimit %d tclass %#x", g.hoplimit, g.tclass);

	/* A control message wins for its datagram. */
	CHECK_RET(send_cmsg(s, &d, sizeof(d), SOL_IPV6, IPV6_HOPLIMIT, 9), 4);
	recv_one(r, &g, 512);
	CHECK(g.hoplimit == 9 && g.tclass == 0x20, "hoplimit %d tclass %#x", g.hoplimit, g.tclass);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), SOL_IPV6, IPV6_TCLASS, 0x40), 4);
	recv_one(r, &g, 512);
	CHECK(g.hoplimit == 7 && g.tclass == 0x40, "hoplimit %d tclass %#x", g.hoplimit, g.tclass);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), SOL_IPV6, IPV6_HOPLIMIT, -1), 4);
	recv_one(r, &g, 512);
	CHECK(g.hoplimit == 7, "hoplimit -1: %d", g.hoplimit);
	CHECK_ERR(send_cmsg(s, &d, sizeof(d), SOL_IPV6, IPV6_HOPLIMIT, 300), EINVAL);

	/* Room for the first message only: MSG_CTRUNC. */
	CHECK_RET(send_cmsg(s, &d, sizeof(d), -1, 0, 0), 4);
	recv_one(r, &g, CMSG_SPACE(sizeof(struct in6_pktinfo)));
	CHECK(g.len == 4 && g.n == 1 && (g.flags & MSG_CTRUNC), "n %d flags %#x", g.n, g.flags);

	/* Off: nothing. */
	v = 0;
	CHECK_RET(setsockopt(r, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &v, sizeof(v)), 0);
	CHECK_RET(setsockopt(r, IPPROTO_IPV6, IPV6_RECVTCLASS, &v, sizeof(v)), 0);
	CHECK_RET(setsockopt(r, IPPROTO_IPV6, IPV6_RECVPKTINFO, &v, sizeof(v)), 0);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), -1, 0, 0), 4);
	recv_one(r, &g, 512);
	CHECK(g.len == 4 && g.n == 0, "n %d", g.n);
	close(r);
	close(s);
}

static void test_ipv4(void)
{
	int r = bound(AF_INET), s = bound(AF_INET), v;
	struct sockaddr_in d = lo4(port_of(r));
	struct got g;

	CHECK_RET(on(r, IPPROTO_IP, IP_RECVTTL), 0);
	CHECK_RET(on(r, IPPROTO_IP, IP_RECVTOS), 0);
	CHECK_RET(on(r, IPPROTO_IP, IP_PKTINFO), 0);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), -1, 0, 0), 4);
	recv_one(r, &g, 512);
	CHECK(g.len == 4 && g.n == 3, "len %zd n %d", g.len, g.n);
	CHECK(g.type[0] == IP_PKTINFO && g.type[1] == IP_TTL && g.type[2] == IP_TOS,
	      "order %d %d %d", g.type[0], g.type[1], g.type[2]);
	CHECK(g.ttl == 64 && g.tos == 0, "ttl %d tos %d", g.ttl, g.tos);
	CHECK(g.pi4.ipi_ifindex == 1 && g.pi4.ipi_addr.s_addr == htonl(INADDR_LOOPBACK) &&
		      g.pi4.ipi_spec_dst.s_addr == htonl(INADDR_LOOPBACK),
	      "pktinfo ifindex %d", g.pi4.ipi_ifindex);
	v = 5;
	CHECK_RET(setsockopt(s, IPPROTO_IP, IP_TTL, &v, sizeof(v)), 0);
	v = 0x10;
	CHECK_RET(setsockopt(s, IPPROTO_IP, IP_TOS, &v, sizeof(v)), 0);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), -1, 0, 0), 4);
	recv_one(r, &g, 512);
	CHECK(g.ttl == 5 && g.tos == 0x10, "ttl %d tos %#x", g.ttl, g.tos);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), SOL_IP, IP_TTL, 3), 4);
	recv_one(r, &g, 512);
	CHECK(g.ttl == 3 && g.tos == 0x10, "ttl %d tos %#x", g.ttl, g.tos);
	CHECK_RET(send_cmsg(s, &d, sizeof(d), SOL_IP, IP_TOS, 0x08), 4);
	recv_one(r, &g, 512);
	CHECK(g.ttl == 5 && g.tos == 0x08, "ttl %d tos %#x", g.ttl, g.tos);
	CHECK_ERR(send_cmsg(s, &d, sizeof(d), SOL_IP, IP_TTL, 0), EINVAL);
	close(r);
	close(s);
}

static void test_mapped(void)
{
	int r6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0)), s4 = bound(AF_INET), only, s4b;
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 }, m;
	struct sockaddr_in d4, from4;
	socklen_t fl = sizeof(from4);
	char buf[8];
	struct got g;

	/* An IPv6 socket on :: hears IPv4 as ::ffff:127.0.0.1. */
	CHECK_RET(bind(r6, (struct sockaddr *)&any6, sizeof(any6)), 0);
	CHECK_RET(on(r6, IPPROTO_IPV6, IPV6_RECVPKTINFO), 0);
	d4 = lo4(port_of(r6));
	CHECK_RET(send_cmsg(s4, &d4, sizeof(d4), -1, 0, 0), 4);
	recv_one(r6, &g, 512);
	CHECK(g.len == 4 && g.fromlen == sizeof(struct sockaddr_in6) &&
		      g.from.sin6_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&g.from.sin6_addr) &&
		      g.from.sin6_addr.s6_addr[12] == 127 && g.from.sin6_port == htons(port_of(s4)),
	      "from family %d len %u", g.from.sin6_family, g.fromlen);
	CHECK(g.n == 1 && IN6_IS_ADDR_V4MAPPED(&g.pi6.ipi6_addr) && g.pi6.ipi6_ifindex == 1,
	      "mapped pktinfo n %d", g.n);
	/* IPv4 packets take the IPv4 options of the IPv6 socket, after IPV6_PKTINFO. */
	CHECK_RET(on(r6, IPPROTO_IP, IP_RECVTTL), 0);
	CHECK_RET(on(r6, IPPROTO_IPV6, IPV6_RECVHOPLIMIT), 0);
	CHECK_RET(send_cmsg(s4, &d4, sizeof(d4), SOL_IP, IP_TTL, 33), 4);
	recv_one(r6, &g, 512);
	CHECK(g.n == 2 && g.type[0] == IPV6_PKTINFO && g.level[1] == SOL_IP &&
		      g.type[1] == IP_TTL && g.ttl == 33 && g.hoplimit == -1,
	      "mapped IP_TTL: n %d ttl %d hoplimit %d", g.n, g.ttl, g.hoplimit);

	/* And sends to ::ffff:127.0.0.1 arrive as IPv4. */
	m = lo6(port_of(s4));
	memset(&m.sin6_addr, 0, sizeof(m.sin6_addr));
	m.sin6_addr.s6_addr[10] = m.sin6_addr.s6_addr[11] = 0xff;
	m.sin6_addr.s6_addr[12] = 127;
	m.sin6_addr.s6_addr[15] = 1;
	CHECK_RET(sendto(r6, "back", 4, 0, (struct sockaddr *)&m, sizeof(m)), 4);
	CHECK_RET(recvfrom(s4, buf, sizeof(buf), 0, (struct sockaddr *)&from4, &fl), 4);
	CHECK(from4.sin_family == AF_INET && from4.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
		      from4.sin_port == htons(port_of(r6)),
	      "from %#x", ntohl(from4.sin_addr.s_addr));

	/* IPV6_V6ONLY: no IPv4 at all. */
	only = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	CHECK_RET(on(only, IPPROTO_IPV6, IPV6_V6ONLY), 0);
	CHECK_ERR(bind(only, (struct sockaddr *)&m, sizeof(m)), EINVAL);
	CHECK_RET(bind(only, (struct sockaddr *)&any6, sizeof(any6)), 0);
	CHECK_ERR(sendto(only, "x", 1, 0, (struct sockaddr *)&m, sizeof(m)), ENETUNREACH);
	/* Its port stays free for IPv4. */
	s4b = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	d4 = lo4(port_of(only));
	CHECK_RET(bind(s4b, (struct sockaddr *)&d4, sizeof(d4)), 0);
	CHECK_RET(sendto(s4, "y", 1, 0, (struct sockaddr *)&d4, sizeof(d4)), 1);
	CHECK_RET(recv(s4b, buf, sizeof(buf), 0), 1);
	CHECK_ERR(recv(only, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	close(only);
	close(s4b);
	close(r6);
	close(s4);
}

int main(void)
{
	test_ipv6();
	test_ipv4();
	test_mapped();
	return finish();
}
