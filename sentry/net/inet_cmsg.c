/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control messages of a loopback datagram's receive: what the IP header would have told
 * (IP_PKTINFO, IP_TTL, IP_TOS; IPV6_PKTINFO, IPV6_HOPLIMIT, IPV6_TCLASS) in Linux's order, and
 * the IP_RECVERR / IPV6_RECVERR message of an error queue entry (an ICMP port unreachable).
 */
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/util.h"
#include "sentry/net/internal.h"

#define LO_IFINDEX 1

void net_msg_put_cmsg(struct net_msg *m, int level, int type, const void *data, size_t len)
{
	struct cmsghdr *c;

	if (m->ctl_len + CMSG_SPACE(len) > sizeof(m->ctl)) {
		m->out_flags |= MSG_CTRUNC;
		return;
	}
	c = (struct cmsghdr *)(m->ctl + m->ctl_len);
	memset(c, 0, CMSG_SPACE(len));
	c->cmsg_len = CMSG_LEN(len);
	c->cmsg_level = level;
	c->cmsg_type = type;
	memcpy(CMSG_DATA(c), data, len);
	m->ctl_len += CMSG_SPACE(len);
}

static bool addr_is_v4(const uint8_t a[16])
{
	static const uint8_t pre[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a, pre, 12);
}

/* ip_cmsg_recv_offset's messages, in its order: IP_PKTINFO, IP_TTL, IP_TOS. */
static void put_ip_cmsgs(const struct sock *s, const struct skb *b, struct net_msg *m)
{
	if (s->pktinfo) {
		struct in_pktinfo pi = { .ipi_ifindex = LO_IFINDEX };

		memcpy(&pi.ipi_spec_dst, b->meta.dst + 12, 4);
		memcpy(&pi.ipi_addr, b->meta.dst + 12, 4);
		net_msg_put_cmsg(m, SOL_IP, IP_PKTINFO, &pi, sizeof(pi));
	}
	if (s->recvttl) {
		int ttl = b->meta.ttl;

		net_msg_put_cmsg(m, SOL_IP, IP_TTL, &ttl, sizeof(ttl));
	}
	if (s->recvtos) {
		uint8_t tos = (uint8_t)b->meta.tos; /* one byte, as Linux */

		net_msg_put_cmsg(m, SOL_IP, IP_TOS, &tos, sizeof(tos));
	}
}

void inet_recv_cmsgs(const struct sock *s, const struct skb *b, struct net_msg *m)
{
	bool v4 = addr_is_v4(b->meta.dst);

	if (s->family == AF_INET) {
		put_ip_cmsgs(s, b, m);
		return;
	}
	/* ip6_datagram_recv_common_ctl: IPV6_PKTINFO for either kind of packet. */
	if (s->recvpktinfo6) {
		struct in6_pktinfo pi = { .ipi6_ifindex = LO_IFINDEX };

		memcpy(&pi.ipi6_addr, b->meta.dst, 16);
		net_msg_put_cmsg(m, SOL_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
	}
	if (v4) {
		/* An IPv4 packet on an IPv6 socket: its IPv4 options, if asked for. */
		put_ip_cmsgs(s, b, m);
		return;
	}
	if (s->recvhoplimit) {
		int h = b->meta.ttl;

		net_msg_put_cmsg(m, SOL_IPV6, IPV6_HOPLIMIT, &h, sizeof(h));
	}
	if (s->recvtclass) {
		int tc = b->meta.tos;

		net_msg_put_cmsg(m, SOL_IPV6, IPV6_TCLASS, &tc, sizeof(tc));
	}
}

void inet_errq_cmsg(const struct sock *s, const struct skb *b, struct net_msg *m)
{
	bool v4 = addr_is_v4(b->meta.dst);
	struct {
		struct sock_extended_err ee;
		struct sockaddr_in6 off; /* the offender: the loopback address that answered */
	} e;
	size_t len;

	memset(&e, 0, sizeof(e));
	e.ee.ee_errno = (uint32_t)b->ee_errno;
	e.ee.ee_origin = v4 ? SO_EE_ORIGIN_ICMP : SO_EE_ORIGIN_ICMP6;
	e.ee.ee_type = v4 ? 3 : 1; /* ICMP_DEST_UNREACH, ICMPV6_DEST_UNREACH */
	e.ee.ee_code = v4 ? 3 : 4; /* ICMP_PORT_UNREACH, ICMPV6_PORT_UNREACH */
	if (s->family == AF_INET) {
		struct sockaddr_in sin = { .sin_family = AF_INET };

		memcpy(&sin.sin_addr, b->meta.dst + 12, 4);
		memcpy(&e.off, &sin, sizeof(sin));
		len = sizeof(e.ee) + sizeof(sin);
		net_msg_put_cmsg(m, SOL_IP, IP_RECVERR, &e, len);
		return;
	}
	e.off.sin6_family = AF_INET6;
	memcpy(&e.off.sin6_addr, b->meta.dst, 16);
	len = sizeof(e.ee) + sizeof(e.off);
	net_msg_put_cmsg(m, SOL_IPV6, IPV6_RECVERR, &e, len);
}
