/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket corners that programs meet: the errno order of socket()/socketpair() (family, then
 * protocol, then type), raw and packet sockets without CAP_NET_RAW, UDP-Lite, getsockopt of an
 * unknown level and with short buffers, SO_NO_CHECK, MSG_ERRQUEUE and IP_RECVERR, the address
 * lengths of recvfrom/recvmsg, SCM_RIGHTS on TCP, UDP connect to the any-address and AF_UNSPEC
 * disconnect, TCP sends after the peer closed, TCP_INQ and SIOCINQ, shutdown of closed and
 * listening sockets, and calls that must return rather than block (recv after SHUT_RD, accept
 * after the listener is shut down). Traffic only to 127.0.0.1 and ::1.
 */
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "check.h"
#include "child.h"

#ifndef SO_NO_CHECK
#define SO_NO_CHECK 11
#endif
#ifndef TCP_INQ
#define TCP_INQ 36
#define TCP_CM_INQ TCP_INQ
#endif
#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif
#ifndef AF_PACKET
#define AF_PACKET 17
#endif

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static uint16_t port_of(int s)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	getsockname(s, (struct sockaddr *)&a, &len);
	return ntohs(a.sin_port);
}

static int udp_bound(void)
{
	struct sockaddr_in a = lo4(0);
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));

	CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

static int tcp_listener(int backlog)
{
	struct sockaddr_in a = lo4(0);
	int s = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));

	CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(listen(s, backlog), 0);
	return s;
}

/* A connected TCP pair over 127.0.0.1: *c the client, *a the accepted side. */
static void tcp_pair(int *c, int *a)
{
	int l = tcp_listener(4);
	struct sockaddr_in d = lo4(port_of(l));

	*c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_RET(connect(*c, (struct sockaddr *)&d, sizeof(d)), 0);
	*a = CHECK_OK(accept(l, NULL, NULL));
	close(l);
}

static void test_socket_errnos(void)
{
	int sv[2];

	/* The family first, then the protocol, then the type. */
	CHECK_ERR(socket(4242, SOCK_STREAM, 0), EAFNOSUPPORT);
	CHECK_ERR(socket(AF_INET, 42, 0), EINVAL);
	CHECK_ERR(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_INET6, SOCK_STREAM, IPPROTO_ICMPV6), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_INET, SOCK_DGRAM, -1), EINVAL);
	CHECK_ERR(socket(AF_INET, SOCK_DGRAM, 1000), EINVAL);
	CHECK_ERR(socket(AF_INET, 7, 0), ESOCKTNOSUPPORT);
	CHECK_ERR(socket(AF_INET6, 7, IPPROTO_TCP), ESOCKTNOSUPPORT);
	CHECK_ERR(socket(AF_UNIX, SOCK_STREAM, 7), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_UNIX, 7, 7), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_UNIX, 7, 0), ESOCKTNOSUPPORT);
	CHECK_ERR(socketpair(AF_UNIX, SOCK_STREAM, 7, sv), EPROTONOSUPPORT);
	CHECK_ERR(socketpair(AF_UNIX, 7, 7, sv), EPROTONOSUPPORT);
	CHECK_ERR(socketpair(AF_UNIX, 7, 0, sv), ESOCKTNOSUPPORT);
	/* socketpair makes the first socket before asking the family for a pair. */
	CHECK_ERR(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
	CHECK_ERR(socketpair(AF_INET, SOCK_STREAM, IPPROTO_UDP, sv), EPROTONOSUPPORT);
	CHECK_ERR(socketpair(AF_INET, 7, 0, sv), ESOCKTNOSUPPORT);
	CHECK_ERR(socketpair(4242, SOCK_STREAM, 0, sv), EAFNOSUPPORT);
}

/* Drops CAP_NET_RAW (and CAP_NET_ADMIN), then tries raw and packet sockets. */
static void no_net_raw(void *arg)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	(void)arg;
	if (syscall(SYS_capget, &h, d) != 0) {
		CHECK(0, "capget: %s", strerror(errno));
		return;
	}
	/* CAP_NET_ADMIN (12) and CAP_NET_RAW (13) are in the first word. */
	d[0].effective &= ~(1U << CAP_NET_RAW | 1U << CAP_NET_ADMIN);
	d[0].permitted &= ~(1U << CAP_NET_RAW | 1U << CAP_NET_ADMIN);
	if (syscall(SYS_capset, &h, d) != 0) {
		CHECK(0, "capset: %s", strerror(errno));
		return;
	}
	CHECK_ERR(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
	CHECK_ERR(socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6), EPERM);
	CHECK_ERR(socket(AF_INET, SOCK_RAW, IPPROTO_RAW), EPERM);
	CHECK_ERR(socket(AF_PACKET, SOCK_RAW, htons(3 /* ETH_P_ALL */)), EPERM);
	CHECK_ERR(socket(AF_PACKET, SOCK_DGRAM, 0), EPERM);
	/* The capability is checked before the type. */
	CHECK_ERR(socket(AF_PACKET, SOCK_STREAM, 0), EPERM);
	/* (AF_INET, SOCK_PACKET) is the obsolete spelling of a packet socket. */
	CHECK_ERR(socket(AF_INET, SOCK_PACKET, htons(3)), EPERM);
}

static void test_raw_packet(void)
{
	in_child(no_net_raw, NULL);
	/* husk has no raw or packet sockets to give: EPERM even with CAP_NET_RAW (its choice,
	 * sentry/net/README.md); natively root gets them. */
	if (in_husk()) {
		CHECK_ERR(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
		CHECK_ERR(socket(AF_PACKET, SOCK_DGRAM, 0), EPERM);
	}
	/* A wrong protocol is refused before any capability is asked for. */
	CHECK_ERR(socket(AF_INET, SOCK_RAW, -1), EINVAL);
}

/* ICMP datagram ("ping") sockets: EACCES for a group outside net.ipv4.ping_group_range. */
static void test_ping_socket(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ping_group_range", "r");
	long lo = 1, hi = 0;

	if (!f || fscanf(f, "%ld %ld", &lo, &hi) != 2) {
		printf("skip: ping sockets: no /proc/sys/net/ipv4/ping_group_range\n");
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	if ((long)getegid() >= lo && (long)getegid() <= hi) {
		printf("skip: ping sockets: this group may make them (ping_group_range %ld %ld)\n",
		       lo, hi);
		return;
	}
	CHECK_ERR(socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP), EACCES);
	CHECK_ERR(socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6), EACCES);
}

static void test_udplite(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE);

	/* Kernels without UDP-Lite refuse the protocol; the others (and husk) give a datagram
	 * socket (udplite.c tests it). */
	if (s < 0) {
		CHECK(errno == EPROTONOSUPPORT && !in_husk(), "udplite: %s", strerror(errno));
	} else {
		int v = 0;
		socklen_t l = sizeof(v);

		CHECK_RET(getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &v, &l), 0);
		CHECK(v == IPPROTO_UDPLITE, "SO_PROTOCOL %d", v);
		l = sizeof(v);
		CHECK_RET(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &l), 0);
		CHECK(v == SOCK_DGRAM, "SO_TYPE %d", v);
		close(s);
	}
	CHECK_ERR(socket(AF_INET, SOCK_STREAM, IPPROTO_UDPLITE), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_INET6, SOCK_STREAM, IPPROTO_UDPLITE), EPROTONOSUPPORT);
}

static void test_getsockopt(void)
{
	int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	int t = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	int u6 = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	int t6 = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	int x = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	int v = 0;
	socklen_t l = sizeof(v);
	unsigned char b[8];

	/* An unknown level: IPv4 protocols say EOPNOTSUPP, IPv6 ones ENOPROTOOPT. */
	CHECK_ERR(getsockopt(u, 999, 1, &v, &l), EOPNOTSUPP);
	CHECK_ERR(getsockopt(t, 999, 1, &v, &l), EOPNOTSUPP);
	CHECK_ERR(getsockopt(u6, 999, 1, &v, &l), ENOPROTOOPT);
	CHECK_ERR(getsockopt(t6, 999, 1, &v, &l), ENOPROTOOPT);
	CHECK_ERR(getsockopt(x, 999, 1, &v, &l), EOPNOTSUPP);
	CHECK_ERR(setsockopt(u, 999, 1, &v, sizeof(v)), ENOPROTOOPT);
	CHECK_ERR(setsockopt(t, 999, 1, &v, sizeof(v)), ENOPROTOOPT);
	CHECK_ERR(setsockopt(u6, 999, 1, &v, sizeof(v)), ENOPROTOOPT);
	CHECK_ERR(setsockopt(x, 999, 1, &v, sizeof(v)), EOPNOTSUPP);
	CHECK_ERR(getsockopt(u, IPPROTO_TCP, TCP_NODELAY, &v, &l), EOPNOTSUPP);
	CHECK_ERR(getsockopt(u, SOL_SOCKET, 9999, &v, &l), ENOPROTOOPT);

	/* Short buffers: SOL_SOCKET and TCP ints are truncated. */
	memset(b, 0xaa, sizeof(b));
	l = 1;
	CHECK_RET(getsockopt(u, SOL_SOCKET, SO_TYPE, b, &l), 0);
	CHECK(l == 1 && b[0] == SOCK_DGRAM && b[1] == 0xaa, "SO_TYPE len 1: l %u b %x %x", l, b[0],
	      b[1]);
	l = 0;
	CHECK_RET(getsockopt(u, SOL_SOCKET, SO_TYPE, b, &l), 0);
	CHECK(l == 0, "SO_TYPE len 0: l %u", l);
	l = 2;
	CHECK_RET(getsockopt(t, IPPROTO_TCP, TCP_MAXSEG, b, &l), 0);
	CHECK(l == 2, "TCP_MAXSEG len 2: l %u", l);
	/* IP ints that fit a byte come back as one byte. */
	memset(b, 0xaa, sizeof(b));
	l = 3;
	CHECK_RET(getsockopt(u, IPPROTO_IP, IP_TTL, b, &l), 0);
	CHECK(l == 1 && b[0] == 64 && b[1] == 0xaa, "IP_TTL len 3: l %u b %u", l, b[0]);
	l = 2;
	CHECK_RET(getsockopt(u6, IPPROTO_IPV6, IPV6_V6ONLY, b, &l), 0);
	CHECK(l == 2, "IPV6_V6ONLY len 2: l %u", l);
	/* Options that need their whole structure. */
	{
		char name[4];

		l = 4;
		CHECK_ERR(getsockopt(t, SOL_SOCKET, SO_PEERNAME, name, &l), ENOTCONN);
	}
	l = (socklen_t)-1;
	CHECK_ERR(getsockopt(u, SOL_SOCKET, SO_TYPE, &v, &l), EINVAL);

	/* Defaults and ranges of a few options. */
	v = 0;
	l = sizeof(v);
	CHECK_RET(getsockopt(u, IPPROTO_IP, IP_MTU_DISCOVER, &v, &l), 0);
	CHECK(v == IP_PMTUDISC_WANT, "IP_MTU_DISCOVER %d", v);
	l = sizeof(v);
	CHECK_RET(getsockopt(t, IPPROTO_IP, IP_MULTICAST_TTL, &v, &l), 0);
	CHECK(v == 1, "IP_MULTICAST_TTL %d", v);
	CHECK_ERR(setsockopt(t, IPPROTO_IP, IP_MULTICAST_TTL, &v, sizeof(v)), EINVAL);
	v = 0;
	CHECK_ERR(setsockopt(u, IPPROTO_IP, IP_TTL, &v, sizeof(v)), EINVAL);
	v = 1;
	CHECK_RET(setsockopt(u, IPPROTO_UDP, UDP_CORK, &v, sizeof(v)), 0);
	v = 0;
	l = sizeof(v);
	CHECK_RET(getsockopt(u, IPPROTO_UDP, UDP_CORK, &v, &l), 0);
	CHECK(v == 1, "UDP_CORK %d", v);
	l = sizeof(v);
	CHECK_RET(getsockopt(t, IPPROTO_TCP, TCP_MAXSEG, &v, &l), 0);
	CHECK(v == 536, "TCP_MAXSEG before connect %d", v);
	/* Options kept without effect on loopback: set, checked, read back. */
	v = 30;
	CHECK_RET(setsockopt(t, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)), 0);
	v = 0;
	l = sizeof(v);
	CHECK_RET(getsockopt(t, IPPROTO_TCP, TCP_KEEPIDLE, &v, &l), 0);
	CHECK(v == 30, "TCP_KEEPIDLE %d", v);
	CHECK_ERR(setsockopt(t, IPPROTO_TCP, TCP_KEEPCNT, &(int){ 0 }, sizeof(int)), EINVAL);
	CHECK_ERR(setsockopt(t, IPPROTO_TCP, TCP_SYNCNT, &(int){ 200 }, sizeof(int)), EINVAL);
	l = sizeof(v);
	CHECK_RET(getsockopt(t, IPPROTO_TCP, TCP_SYNCNT, &v, &l), 0);
	CHECK(v == 6, "TCP_SYNCNT %d", v);
	CHECK_RET(setsockopt(u, IPPROTO_IP, IP_MULTICAST_LOOP, &(int){ 5 }, sizeof(int)), 0);
	l = sizeof(v);
	CHECK_RET(getsockopt(u, IPPROTO_IP, IP_MULTICAST_LOOP, &v, &l), 0);
	CHECK(v == 1, "IP_MULTICAST_LOOP %d", v);
	CHECK_RET(setsockopt(u, IPPROTO_IP, IP_MULTICAST_LOOP, &(int){ 0 }, sizeof(int)), 0);
	l = sizeof(v);
	CHECK_RET(getsockopt(u, IPPROTO_IP, IP_MULTICAST_LOOP, &v, &l), 0);
	CHECK(v == 0, "IP_MULTICAST_LOOP cleared %d", v);
	CHECK_RET(setsockopt(u6, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &(int){ -1 }, sizeof(int)), 0);
	l = sizeof(v);
	CHECK_RET(getsockopt(u6, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &v, &l), 0);
	CHECK(v == 1, "IPV6_MULTICAST_HOPS %d", v);
	CHECK_ERR(setsockopt(u, IPPROTO_IP, IP_HDRINCL, &(int){ 1 }, sizeof(int)), ENOPROTOOPT);
	l = sizeof(v);
	CHECK_ERR(getsockopt(u, IPPROTO_IP, IP_MTU, &v, &l), ENOTCONN);

	/* Credentials are for unix sockets: SO_PASSCRED is refused, SO_PEERCRED has none. */
	l = sizeof(v);
	CHECK_ERR(getsockopt(t, SOL_SOCKET, SO_PASSCRED, &v, &l), EOPNOTSUPP);
	CHECK_ERR(setsockopt(u, SOL_SOCKET, SO_PASSCRED, &v, sizeof(v)), EOPNOTSUPP);
	{
		struct ucred uc;

		l = sizeof(uc);
		CHECK_RET(getsockopt(t, SOL_SOCKET, SO_PEERCRED, &uc, &l), 0);
		CHECK(l == sizeof(uc) && uc.pid == 0 && uc.uid == (uid_t)-1 && uc.gid == (gid_t)-1,
		      "SO_PEERCRED l %u pid %d uid %u gid %u", l, uc.pid, uc.uid, uc.gid);
	}

	/* SO_NO_CHECK: a flag on any socket. */
	v = 1;
	CHECK_RET(setsockopt(u, SOL_SOCKET, SO_NO_CHECK, &v, sizeof(v)), 0);
	v = 0;
	l = sizeof(v);
	CHECK_RET(getsockopt(u, SOL_SOCKET, SO_NO_CHECK, &v, &l), 0);
	CHECK(v == 1 && l == sizeof(v), "SO_NO_CHECK %d", v);
	l = sizeof(v);
	CHECK_RET(getsockopt(t, SOL_SOCKET, SO_NO_CHECK, &v, &l), 0);
	CHECK(v == 0, "SO_NO_CHECK on a new socket %d", v);
	v = 0;
	CHECK_RET(setsockopt(u, SOL_SOCKET, SO_NO_CHECK, &v, sizeof(v)), 0);
	l = sizeof(v);
	CHECK_RET(getsockopt(u, SOL_SOCKET, SO_NO_CHECK, &v, &l), 0);
	CHECK(v == 0, "SO_NO_CHECK cleared %d", v);
	close(u);
	close(t);
	close(u6);
	close(t6);
	close(x);
}

/* MSG_ERRQUEUE, IP_RECVERR and the ICMP port unreachable of a send to a closed port. */
static void test_errqueue(void)
{
	int u = udp_bound(), c, a, v = 1, closed = udp_bound();
	struct sockaddr_in d = lo4(port_of(closed)), from;
	char buf[64], ctl[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { 0 };
	struct pollfd pfd;

	close(closed); /* a port nothing listens on (for a while) */
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_ERRQUEUE), EAGAIN);
	tcp_pair(&c, &a);
	CHECK_ERR(recv(c, buf, sizeof(buf), MSG_ERRQUEUE), EAGAIN);
	close(c);
	close(a);

	/* Without IP_RECVERR an unconnected socket hears nothing. */
	CHECK_RET(sendto(u, "x", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);

	CHECK_RET(setsockopt(u, IPPROTO_IP, IP_RECVERR, &v, sizeof(v)), 0);
	v = 0;
	socklen_t vl = sizeof(v);
	CHECK_RET(getsockopt(u, IPPROTO_IP, IP_RECVERR, &v, &vl), 0);
	CHECK(v == 1, "IP_RECVERR %d", v);
	CHECK_RET(sendto(u, "abc", 3, 0, (struct sockaddr *)&d, sizeof(d)), 3);
	pfd = (struct pollfd){ u, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	CHECK(pfd.revents & POLLERR, "revents %#x", pfd.revents);
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_DONTWAIT), ECONNREFUSED);
	mh.msg_name = &from;
	mh.msg_namelen = sizeof(from);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	CHECK_RET(recvmsg(u, &mh, MSG_ERRQUEUE), 3);
	CHECK(mh.msg_flags & MSG_ERRQUEUE, "msg_flags %#x", mh.msg_flags);
	CHECK(from.sin_port == d.sin_port, "name port %u", ntohs(from.sin_port));
	CHECK(!memcmp(buf, "abc", 3), "payload");
	{
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		struct sock_extended_err *ee;

		CHECK(cm && cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR, "cmsg %d/%d",
		      cm ? cm->cmsg_level : -1, cm ? cm->cmsg_type : -1);
		if (cm && cm->cmsg_type == IP_RECVERR) {
			struct sockaddr_in *off;

			ee = (struct sock_extended_err *)CMSG_DATA(cm);
			CHECK(ee->ee_errno == ECONNREFUSED && ee->ee_origin == SO_EE_ORIGIN_ICMP &&
				      ee->ee_type == 3 && ee->ee_code == 3,
			      "ee errno %u origin %u type %u code %u", ee->ee_errno, ee->ee_origin,
			      ee->ee_type, ee->ee_code);
			off = (struct sockaddr_in *)SO_EE_OFFENDER(ee);
			CHECK(off->sin_family == AF_INET &&
				      off->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
			      "offender family %u", off->sin_family);
		}
	}
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_ERRQUEUE), EAGAIN);
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	close(u);
}

/* IPV6_RECVERR: the ICMPv6 port unreachable of a send to a closed port of ::1. */
static void test_errqueue6(void)
{
	int u = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0)), closed, v = 1;
	struct sockaddr_in6 d = { .sin6_family = AF_INET6 }, from;
	socklen_t dl = sizeof(d);
	char buf[64], ctl[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_name = &from,
			     .msg_namelen = sizeof(from),
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct pollfd pfd = { u, POLLIN, 0 };
	struct cmsghdr *cm;

	d.sin6_addr = in6addr_loopback;
	closed = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	CHECK_RET(bind(closed, (struct sockaddr *)&d, sizeof(d)), 0);
	CHECK_RET(getsockname(closed, (struct sockaddr *)&d, &dl), 0);
	close(closed);
	CHECK_RET(setsockopt(u, IPPROTO_IPV6, IPV6_RECVERR, &v, sizeof(v)), 0);
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_ERRQUEUE), EAGAIN);
	CHECK_RET(sendto(u, "abcd", 4, 0, (struct sockaddr *)&d, sizeof(d)), 4);
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	CHECK(pfd.revents & POLLERR, "revents %#x", pfd.revents);
	/* MSG_ERRQUEUE first: then SO_ERROR is cleared with the queue. */
	CHECK_RET(recvmsg(u, &mh, MSG_ERRQUEUE), 4);
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR, "cmsg %d/%d",
	      cm ? cm->cmsg_level : -1, cm ? cm->cmsg_type : -1);
	if (cm && cm->cmsg_type == IPV6_RECVERR) {
		struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(cm);
		struct sockaddr_in6 *off = (struct sockaddr_in6 *)SO_EE_OFFENDER(ee);

		CHECK(ee->ee_errno == ECONNREFUSED && ee->ee_origin == SO_EE_ORIGIN_ICMP6 &&
			      ee->ee_type == 1 && ee->ee_code == 4,
		      "ee errno %u origin %u type %u code %u", ee->ee_errno, ee->ee_origin,
		      ee->ee_type, ee->ee_code);
		CHECK(off->sin6_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&off->sin6_addr),
		      "offender family %u", off->sin6_family);
	}
	CHECK(from.sin6_port == d.sin6_port, "name port %u", ntohs(from.sin6_port));
	CHECK_ERR(recv(u, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	close(u);
}

static void test_addrlen(void)
{
	int u = udp_bound(), s = udp_bound();
	struct sockaddr_in d = lo4(port_of(u)), from;
	socklen_t fl;
	char buf[16];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { 0 };

	/* recvfrom: a negative length is EINVAL after the datagram is taken. */
	CHECK_RET(sendto(s, "a", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	CHECK_RET(sendto(s, "b", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	fl = (socklen_t)-1;
	CHECK_ERR(recvfrom(u, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl), EINVAL);
	/* A short length: truncated, the full length reported. */
	memset(&from, 0xee, sizeof(from));
	fl = 4;
	CHECK_RET(recvfrom(u, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl), 1);
	CHECK(buf[0] == 'b', "the first datagram was consumed: got %c", buf[0]);
	CHECK(fl == sizeof(from) && from.sin_port == htons(port_of(s)) &&
		      ((unsigned char *)&from)[4] == 0xee,
	      "fl %u", fl);

	/* recvmsg: a negative msg_namelen is EINVAL before anything is taken... */
	CHECK_RET(sendto(s, "c", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	mh.msg_name = &from;
	mh.msg_namelen = (socklen_t)-1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	CHECK_ERR(recvmsg(u, &mh, 0), EINVAL);
	/* ...unless there is no name buffer. */
	mh.msg_name = NULL;
	CHECK_RET(recvmsg(u, &mh, 0), 1);
	CHECK(buf[0] == 'c', "got %c", buf[0]);
	CHECK_RET(sendto(s, "d", 1, 0, (struct sockaddr *)&d, sizeof(d)), 1);
	memset(&from, 0xee, sizeof(from));
	mh.msg_name = &from;
	mh.msg_namelen = 2;
	CHECK_RET(recvmsg(u, &mh, 0), 1);
	CHECK(mh.msg_namelen == sizeof(from) && from.sin_family == AF_INET &&
		      ((unsigned char *)&from)[2] == 0xee,
	      "namelen %u", mh.msg_namelen);

	/* sendmsg cuts a name longer than a sockaddr_storage; sendto refuses it. */
	{
		char big[300] = { 0 };
		struct iovec siov = { "e", 1 };
		struct msghdr smh = {
			.msg_name = big, .msg_namelen = 200, .msg_iov = &siov, .msg_iovlen = 1
		};

		memcpy(big, &d, sizeof(d));
		CHECK_RET(sendmsg(s, &smh, 0), 1);
		CHECK_RET(recv(u, buf, sizeof(buf), 0), 1);
		smh.msg_namelen = (socklen_t)-1;
		CHECK_ERR(sendmsg(s, &smh, 0), EINVAL);
		CHECK_ERR(sendto(s, "e", 1, 0, (struct sockaddr *)big, 200), EINVAL);
	}
	close(u);
	close(s);
}

static void test_scm_rights_tcp(void)
{
	int c, a, fd = CHECK_OK(dup(1));
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 }, buf[8];
	struct iovec iov = { "hi", 2 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl };
	struct cmsghdr *cm;
	int bad = 9999;

	tcp_pair(&c, &a);
	mh.msg_controllen = sizeof(ctl);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	CHECK_RET(sendmsg(c, &mh, 0), 2);
	/* The descriptors are not even looked at. */
	memcpy(CMSG_DATA(cm), &bad, sizeof(int));
	CHECK_RET(sendmsg(c, &mh, 0), 2);
	iov = (struct iovec){ buf, 4 };
	memset(ctl, 0, sizeof(ctl));
	mh.msg_controllen = sizeof(ctl);
	CHECK_RET(recvmsg(a, &mh, MSG_WAITALL), 4);
	CHECK(mh.msg_controllen == 0, "controllen %zu", (size_t)mh.msg_controllen);
	CHECK(!memcmp(buf, "hihi", 4), "data");
	close(c);
	close(a);
	close(fd);

	/* UDP: SCM_RIGHTS ignored too; unknown SOL_SOCKET or SOL_IP types are EINVAL. */
	{
		int u = udp_bound(), r = udp_bound();
		struct sockaddr_in d = lo4(port_of(r));

		iov = (struct iovec){ "u", 1 };
		mh.msg_name = &d;
		mh.msg_namelen = sizeof(d);
		mh.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &bad, sizeof(int));
		CHECK_RET(sendmsg(u, &mh, 0), 1);
		CHECK_RET(recv(r, buf, sizeof(buf), 0), 1);
		cm->cmsg_type = 77;
		CHECK_ERR(sendmsg(u, &mh, 0), EINVAL);
		cm->cmsg_level = SOL_IP;
		CHECK_ERR(sendmsg(u, &mh, 0), EINVAL);
		/* TCP reads no IP-level messages. */
		tcp_pair(&c, &a);
		mh.msg_name = NULL;
		mh.msg_namelen = 0;
		CHECK_RET(sendmsg(c, &mh, 0), 1);
		close(c);
		close(a);
		close(u);
		close(r);
	}
}

static void test_udp_connect(void)
{
	int u = udp_bound(), s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct sockaddr_in any = lo4(port_of(u)), peer;
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	socklen_t pl = sizeof(peer);
	char buf[8];

	/* 0.0.0.0 is the local host: the peer becomes 127.0.0.1. */
	any.sin_addr.s_addr = htonl(INADDR_ANY);
	CHECK_RET(connect(s, (struct sockaddr *)&any, sizeof(any)), 0);
	CHECK_RET(getpeername(s, (struct sockaddr *)&peer, &pl), 0);
	CHECK(peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && peer.sin_port == any.sin_port,
	      "peer %#x", ntohl(peer.sin_addr.s_addr));
	CHECK_RET(send(s, "x", 1, 0), 1);
	CHECK_RET(recv(u, buf, sizeof(buf), 0), 1);
	/* AF_UNSPEC disconnects: no default destination, no peer. */
	CHECK_RET(connect(s, &un, sizeof(un)), 0);
	CHECK_ERR(send(s, "x", 1, 0), EDESTADDRREQ);
	pl = sizeof(peer);
	CHECK_ERR(getpeername(s, (struct sockaddr *)&peer, &pl), ENOTCONN);
	/* A short AF_UNSPEC address also disconnects. */
	CHECK_RET(connect(s, (struct sockaddr *)&any, sizeof(any)), 0);
	CHECK_RET(connect(s, &un, sizeof(sa_family_t)), 0);
	CHECK_ERR(send(s, "x", 1, 0), EDESTADDRREQ);
	/* The address the connect chose is forgotten; the port stays. */
	pl = sizeof(peer);
	CHECK_RET(getsockname(s, (struct sockaddr *)&peer, &pl), 0);
	CHECK(peer.sin_addr.s_addr == htonl(INADDR_ANY) && peer.sin_port != 0, "name %#x port %u",
	      ntohl(peer.sin_addr.s_addr), ntohs(peer.sin_port));
	close(u);
	close(s);

	/* TCP: AF_UNSPEC resets the connection; the socket may connect again. */
	{
		int c, a, l = tcp_listener(1);
		struct sockaddr_in d = lo4(port_of(l));

		tcp_pair(&c, &a);
		CHECK_RET(connect(c, &un, sizeof(un)), 0);
		CHECK_ERR(send(c, "x", 1, MSG_NOSIGNAL), ECONNRESET);
		pl = sizeof(peer);
		CHECK_ERR(getpeername(c, (struct sockaddr *)&peer, &pl), ENOTCONN);
		CHECK_ERR(recv(a, buf, sizeof(buf), 0), ECONNRESET);
		CHECK_RET(connect(c, (struct sockaddr *)&d, sizeof(d)), 0);
		close(a);
		a = CHECK_OK(accept(l, NULL, NULL));
		CHECK_RET(send(c, "y", 1, 0), 1);
		CHECK_RET(recv(a, buf, sizeof(buf), 0), 1);
		/* A listener stops listening. */
		CHECK_RET(connect(l, &un, sizeof(un)), 0);
		CHECK_ERR(accept(l, NULL, NULL), EINVAL);
		close(a);
		close(c);
		close(l);
	}
}

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void test_tcp_after_close(void)
{
	int c, a;
	char buf[8];
	struct pollfd pfd;

	signal(SIGPIPE, on_sigpipe);
	tcp_pair(&c, &a);
	close(a);
	pfd = (struct pollfd){ c, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	/* The peer's FIN: an empty send is 0, the first data is taken (and answered by a RST). */
	CHECK_RET(send(c, "", 0, 0), 0);
	CHECK_RET(send(c, "x", 1, 0), 1);
	/* No events asked: poll returns with the RST's POLLHUP (POLLIN is there since the FIN). */
	pfd = (struct pollfd){ c, 0, 0 };
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	CHECK(pfd.revents & POLLHUP, "revents %#x", pfd.revents);
	CHECK_ERR(send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
	CHECK(sigpipes == 0, "SIGPIPE under MSG_NOSIGNAL");
	CHECK_ERR(send(c, "x", 1, 0), EPIPE);
	CHECK(sigpipes == 1, "sigpipes %d", (int)sigpipes);
	CHECK_RET(recv(c, buf, sizeof(buf), MSG_DONTWAIT), 0);
	close(c);

	/* Datagram sockets say EPIPE without SIGPIPE. */
	{
		int sv[2], u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		struct sockaddr_in d = lo4(9);

		CHECK_RET(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
		CHECK_RET(shutdown(sv[1], SHUT_RD), 0);
		CHECK_ERR(send(sv[0], "x", 1, 0), EPIPE);
		CHECK_RET(shutdown(sv[0], SHUT_WR), 0);
		CHECK_ERR(send(sv[0], "x", 1, 0), EPIPE);
		CHECK_ERR(shutdown(u, SHUT_WR), ENOTCONN);
		CHECK_ERR(sendto(u, "x", 1, 0, (struct sockaddr *)&d, sizeof(d)), EPIPE);
		CHECK(sigpipes == 1, "sigpipes %d", (int)sigpipes);
		close(sv[0]);
		close(sv[1]);
		close(u);
	}
	signal(SIGPIPE, SIG_DFL);
}

static void test_tcp_inq(void)
{
	int c, a, v = 1, inq = -1;
	socklen_t l = sizeof(v);
	char buf[8], ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, 3 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	int lst = tcp_listener(1);

	CHECK_ERR(ioctl(lst, SIOCINQ, &inq), EINVAL);
	close(lst);
	tcp_pair(&c, &a);
	CHECK_RET(setsockopt(a, IPPROTO_TCP, TCP_INQ, &v, sizeof(v)), 0);
	v = 0;
	CHECK_RET(getsockopt(a, IPPROTO_TCP, TCP_INQ, &v, &l), 0);
	CHECK(v == 1, "TCP_INQ %d", v);
	CHECK_RET(send(c, "abcdefg", 7, 0), 7);
	{
		struct pollfd pfd = { a, POLLIN, 0 };

		CHECK_RET(poll(&pfd, 1, 10000), 1);
	}
	CHECK_RET(ioctl(a, SIOCINQ, &inq), 0);
	CHECK(inq == 7, "SIOCINQ %d", inq);
	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	CHECK_RET(recvmsg(a, &mh, 0), 3);
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_level == SOL_TCP && cm->cmsg_type == TCP_CM_INQ &&
		      cm->cmsg_len == CMSG_LEN(sizeof(int)),
	      "cmsg %d/%d", cm ? cm->cmsg_level : -1, cm ? cm->cmsg_type : -1);
	if (cm) {
		memcpy(&inq, CMSG_DATA(cm), sizeof(int));
		CHECK(inq == 4, "TCP_CM_INQ %d", inq);
	}
	/* Off again: no control message. */
	v = 0;
	CHECK_RET(setsockopt(a, IPPROTO_TCP, TCP_INQ, &v, sizeof(v)), 0);
	mh.msg_controllen = sizeof(ctl);
	CHECK_RET(recvmsg(a, &mh, 0), 3);
	CHECK(mh.msg_controllen == 0, "controllen %zu", (size_t)mh.msg_controllen);
	/* The peer's FIN counts one, as its sequence number does. */
	v = 1;
	CHECK_RET(setsockopt(a, IPPROTO_TCP, TCP_INQ, &v, sizeof(v)), 0);
	CHECK_RET(shutdown(c, SHUT_WR), 0);
	{
		struct pollfd pfd = { a, POLLRDHUP, 0 };

		CHECK_RET(poll(&pfd, 1, 10000), 1);
	}
	mh.msg_controllen = sizeof(ctl);
	CHECK_RET(recvmsg(a, &mh, 0), 1);
	cm = CMSG_FIRSTHDR(&mh);
	if (cm) {
		memcpy(&inq, CMSG_DATA(cm), sizeof(int));
		CHECK(inq == 1, "TCP_CM_INQ at the FIN %d", inq);
	} else {
		CHECK(0, "no TCP_CM_INQ at the FIN");
	}
	/* No urgent data: MSG_OOB is EINVAL on a stream. */
	CHECK_ERR(recv(a, buf, sizeof(buf), MSG_OOB), EINVAL);
	close(c);
	close(a);
}

static void test_shutdown(void)
{
	int c, a, u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	int t = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	int x = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	char buf[8];
	struct pollfd pfd;

	CHECK_ERR(shutdown(t, SHUT_RDWR), ENOTCONN);
	CHECK_ERR(shutdown(u, SHUT_RD), ENOTCONN);
	CHECK_RET(shutdown(x, SHUT_RD), 0); /* unix checks no state */
	/* Even refused, the shutdown of the UDP socket took: a blocking recv returns 0. */
	CHECK_RET(recv(u, buf, sizeof(buf), 0), 0);

	/* Both FINs exchanged: the socket is closed (TIME_WAIT is not its own), ENOTCONN. */
	tcp_pair(&c, &a);
	CHECK_RET(shutdown(c, SHUT_WR), 0);
	CHECK_RET(recv(a, buf, sizeof(buf), 0), 0);
	close(a);
	pfd = (struct pollfd){ c, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	CHECK_RET(recv(c, buf, sizeof(buf), 0), 0);
	CHECK_ERR(shutdown(c, SHUT_RDWR), ENOTCONN);
	close(c);

	/* A close-wait socket may shut down. */
	tcp_pair(&c, &a);
	close(a);
	pfd = (struct pollfd){ c, POLLIN, 0 };
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	{
		struct tcp_info ti;
		socklen_t tl = sizeof(ti);

		CHECK_RET(getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &tl), 0);
		CHECK(ti.tcpi_state == TCP_CLOSE_WAIT, "tcpi_state %u", ti.tcpi_state);
	}
	/* (Its LAST_ACK ends when the peer's ACK is in: not checked, that is not synchronous.) */
	CHECK_RET(shutdown(c, SHUT_WR), 0);
	close(c);

	/* A blocking recv after SHUT_RD returns at once. */
	tcp_pair(&c, &a);
	CHECK_RET(shutdown(a, SHUT_RD), 0);
	CHECK_RET(recv(a, buf, sizeof(buf), 0), 0);
	close(c);
	close(a);
	close(u);
	close(t);
	close(x);
}

static void *accept_thread(void *arg)
{
	int l = *(int *)arg;

	errno = 0;
	*(int *)arg = accept(l, NULL, NULL) < 0 ? errno : 0;
	return NULL;
}

static void test_listener_shutdown(void)
{
	int l = tcp_listener(4), arg, c;
	struct sockaddr_in d = lo4(port_of(l));
	pthread_t th;

	/* SHUT_WR on a listener does nothing; SHUT_RD stops it, and accept says EINVAL. */
	CHECK_RET(shutdown(l, SHUT_WR), 0);
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_RET(connect(c, (struct sockaddr *)&d, sizeof(d)), 0);
	close(c);
	CHECK_RET(shutdown(l, SHUT_RD), 0);
	CHECK_ERR(accept(l, NULL, NULL), EINVAL);
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&d, sizeof(d)), ECONNREFUSED);
	close(c);
	/* It may listen again (on a new port: its port was chosen by the kernel). */
	CHECK_RET(listen(l, 4), 0);
	d = lo4(port_of(l));
	/* A blocked accept wakes with EINVAL when the listener is shut down. */
	arg = l;
	pthread_create(&th, NULL, accept_thread, &arg);
	{
		/* Wait until the thread is in accept: a connection made and taken proves it. */
		c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
		CHECK_RET(connect(c, (struct sockaddr *)&d, sizeof(d)), 0);
		pthread_join(th, NULL);
		CHECK(arg == 0, "accept: %s", strerror(arg));
		close(c);
	}
	arg = l;
	pthread_create(&th, NULL, accept_thread, &arg);
	{
		/* The thread may not have blocked yet: either way accept must end in EINVAL. */
		CHECK_RET(shutdown(l, SHUT_RDWR), 0);
		pthread_join(th, NULL);
		CHECK(arg == EINVAL, "blocked accept: %s", strerror(arg));
	}
	close(l);

	/* Unix: shutdown of a listener is allowed, and accept then says EINVAL. */
	{
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int ul = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));

		snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "husk-sock-misc-l-%d", getpid());
		CHECK_RET(bind(ul, (struct sockaddr *)&a, sizeof(a)), 0);
		CHECK_RET(listen(ul, 1), 0);
		/* A listener's SO_PEERCRED is its own credentials (from listen). */
		{
			struct ucred uc;
			socklen_t ucl = sizeof(uc);

			CHECK_RET(getsockopt(ul, SOL_SOCKET, SO_PEERCRED, &uc, &ucl), 0);
			CHECK(uc.pid == getpid() && uc.uid == geteuid() && uc.gid == getegid(),
			      "listener SO_PEERCRED pid %d uid %u", uc.pid, uc.uid);
		}
		CHECK_RET(shutdown(ul, SHUT_RDWR), 0);
		CHECK_ERR(accept(ul, NULL, NULL), EINVAL);
		/* ...and it refuses connections. */
		c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
		CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), ECONNREFUSED);
		close(c);
		close(ul);
	}
}

static void test_backlog_full(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int ul = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0)), c[4];

	snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "husk-sock-misc-b-%d", getpid());
	CHECK_RET(bind(ul, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(listen(ul, 0), 0);
	/* A unix backlog of 0 takes one connection; then a non-blocking connect is EAGAIN. */
	c[0] = CHECK_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
	CHECK_RET(connect(c[0], (struct sockaddr *)&a, sizeof(a)), 0);
	c[1] = CHECK_OK(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
	CHECK_ERR(connect(c[1], (struct sockaddr *)&a, sizeof(a)), EAGAIN);
	close(c[0]);
	close(c[1]);
	close(ul);
}

/*
 * fchmod and fchown of a socket (sockfs keeps them on its inode): conmon makes its attach
 * socket 0700 before it binds it, and podman's container start stops if that fails.
 */
static void test_socket_attrs(void)
{
	int s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	struct stat st;

	CHECK_RET(fstat(s, &st), 0);
	CHECK(st.st_mode == (S_IFSOCK | 0777), "a new socket's mode %o", st.st_mode);
	CHECK(st.st_uid == geteuid(), "a new socket's owner %u", st.st_uid);
	CHECK_RET(fchmod(s, 0700), 0);
	CHECK_RET(fstat(s, &st), 0);
	CHECK(st.st_mode == (S_IFSOCK | 0700), "mode %o after fchmod 0700", st.st_mode);
	CHECK_RET(fchown(s, 123, 456), 0);
	CHECK_RET(fstat(s, &st), 0);
	CHECK(st.st_uid == 123 && st.st_gid == 456, "owner %u:%u after fchown 123:456", st.st_uid,
	      st.st_gid);
	CHECK_ERR(ftruncate(s, 0), EINVAL);
	close(s);
}

/*
 * TCP Fast Open from the client's side: sendto(MSG_FASTOPEN) with an address on a socket not
 * connected connects and sends (Linux without a cookie: the connect, then the data); a second
 * one on the connected socket is a plain send.
 */
static void test_fastopen(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	char buf[16] = "";
	int s;

	CHECK_RET(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(listen(l, 1), 0);
	CHECK_RET(getsockname(l, (struct sockaddr *)&a, &al), 0);
	CHECK_RET(sendto(c, "hello", 5, MSG_FASTOPEN, (struct sockaddr *)&a, sizeof(a)), 5);
	s = CHECK_OK(accept(l, NULL, NULL));
	CHECK_RET(recv(s, buf, 5, MSG_WAITALL), 5);
	CHECK(!memcmp(buf, "hello", 5), "received %.5s", buf);
	close(s);
	close(c);
	close(l);
}

int main(void)
{
	test_socket_errnos();
	test_raw_packet();
	test_udplite();
	test_ping_socket();
	test_getsockopt();
	test_errqueue();
	test_errqueue6();
	test_addrlen();
	test_scm_rights_tcp();
	test_udp_connect();
	test_tcp_after_close();
	test_tcp_inq();
	test_shutdown();
	test_listener_shutdown();
	test_backlog_full();
	test_socket_attrs();
	test_fastopen();
	return finish();
}
