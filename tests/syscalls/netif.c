/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's interfaces as programs see them: the SIOCGIF* ioctls of netdevice(7) and the
 * NETLINK_ROUTE dumps (RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE) that ip(8) reads. Both views must
 * agree on lo: index 1, up, loopback, 127.0.0.1/8, the local route 127.0.0.0/8. Natively the
 * machine may have more interfaces; only lo is checked. Then lo is taken down and up again with
 * SIOCSIFFLAGS and RTM_NEWLINK (as `ip link set lo up`): natively in a network namespace of the
 * test's own (the host's lo is never touched), in husk on the sandbox's lo.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/socket.h>

#include "check.h"
#include "child.h"

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif

static void ifreq_named(struct ifreq *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	strncpy(r->ifr_name, name, IFNAMSIZ - 1);
}

static uint32_t inet_of(const struct sockaddr *sa)
{
	struct sockaddr_in sin;

	memcpy(&sin, sa, sizeof(sin));
	return sin.sin_family == AF_INET ? ntohl(sin.sin_addr.s_addr) : 0xffffffff;
}

static void test_ioctls_lo(void)
{
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct ifreq r;

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFINDEX, &r), 0);
	CHECK(r.ifr_ifindex == 1, "lo has index %d", r.ifr_ifindex);

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFFLAGS, &r), 0);
	CHECK((r.ifr_flags & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING)) ==
		      (IFF_UP | IFF_LOOPBACK | IFF_RUNNING),
	      "lo flags %#x", (unsigned int)r.ifr_flags);
	CHECK(!(r.ifr_flags & IFF_BROADCAST), "lo flags %#x", (unsigned int)r.ifr_flags);

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFMTU, &r), 0);
	CHECK(r.ifr_mtu == 65536, "lo mtu %d", r.ifr_mtu);

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFADDR, &r), 0);
	CHECK(inet_of(&r.ifr_addr) == INADDR_LOOPBACK, "lo address %#x", inet_of(&r.ifr_addr));

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFNETMASK, &r), 0);
	CHECK(inet_of(&r.ifr_netmask) == 0xff000000, "lo netmask %#x", inet_of(&r.ifr_netmask));

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFHWADDR, &r), 0);
	CHECK(r.ifr_hwaddr.sa_family == ARPHRD_LOOPBACK, "lo hw type %d", r.ifr_hwaddr.sa_family);
	{
		static const char zero[6];

		CHECK(!memcmp(r.ifr_hwaddr.sa_data, zero, 6), "lo has a hardware address");
	}

	memset(&r, 0x55, sizeof(r));
	r.ifr_ifindex = 1;
	CHECK_RET(ioctl(s, SIOCGIFNAME, &r), 0);
	CHECK(!strcmp(r.ifr_name, "lo"), "index 1 is named '%.16s'", r.ifr_name);

	/* Unknown names and indexes; a bad pointer. */
	ifreq_named(&r, "nosuch0");
	CHECK_ERR(ioctl(s, SIOCGIFFLAGS, &r), ENODEV);
	ifreq_named(&r, "nosuch0");
	CHECK_ERR(ioctl(s, SIOCGIFADDR, &r), ENODEV);
	memset(&r, 0, sizeof(r));
	r.ifr_ifindex = 99999;
	CHECK_ERR(ioctl(s, SIOCGIFNAME, &r), ENODEV);
	CHECK_ERR(ioctl(s, SIOCGIFFLAGS, (void *)8), EFAULT);
	close(s);
}

/* Other families answer the device queries but not the IPv4 address ones. */
static void test_ioctls_other_families(void)
{
	int fams[] = { AF_INET6, AF_UNIX };

	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		int s = CHECK_OK(socket(fams[i], SOCK_DGRAM, 0));
		struct ifreq r;

		ifreq_named(&r, "lo");
		CHECK_RET(ioctl(s, SIOCGIFINDEX, &r), 0);
		CHECK(r.ifr_ifindex == 1, "family %d: lo has index %d", fams[i], r.ifr_ifindex);
		ifreq_named(&r, "lo");
		CHECK_ERR(ioctl(s, SIOCGIFADDR, &r), ENOTTY);
		close(s);
	}
}

static void test_ifconf(void)
{
	int s = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct ifconf ifc = { 0 };
	struct ifreq *reqs;
	bool found = false;
	int n;

	/* No buffer: the length needed. */
	CHECK_RET(ioctl(s, SIOCGIFCONF, &ifc), 0);
	CHECK(ifc.ifc_len > 0 && ifc.ifc_len % (int)sizeof(struct ifreq) == 0, "ifc_len %d",
	      ifc.ifc_len);
	n = ifc.ifc_len / (int)sizeof(struct ifreq);
	reqs = calloc((size_t)n + 1, sizeof(*reqs));
	ifc.ifc_len = (n + 1) * (int)sizeof(*reqs);
	ifc.ifc_req = reqs;
	CHECK_RET(ioctl(s, SIOCGIFCONF, &ifc), 0);
	CHECK(ifc.ifc_len == n * (int)sizeof(struct ifreq), "ifc_len %d for %d entries",
	      ifc.ifc_len, n);
	for (int i = 0; i < ifc.ifc_len / (int)sizeof(struct ifreq); i++)
		if (!strcmp(reqs[i].ifr_name, "lo") &&
		    inet_of(&reqs[i].ifr_addr) == INADDR_LOOPBACK)
			found = true;
	CHECK(found, "SIOCGIFCONF has no lo 127.0.0.1");

	/* A buffer too small for one entry gets none. */
	ifc.ifc_len = (int)sizeof(struct ifreq) - 1;
	ifc.ifc_req = reqs;
	CHECK_RET(ioctl(s, SIOCGIFCONF, &ifc), 0);
	CHECK(ifc.ifc_len == 0, "ifc_len %d", ifc.ifc_len);
	free(reqs);
	close(s);
}

/* --- netlink --- */

struct dump_seen {
	bool lo_link, lo_v4, lo_v6, local_route;
	int msgs;
	bool done, error;
};

static void parse_link(struct nlmsghdr *h, struct dump_seen *seen)
{
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = (int)IFLA_PAYLOAD(h);
	char name[IFNAMSIZ] = "";
	uint32_t mtu = 0;

	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_IFNAME)
			snprintf(name, sizeof(name), "%s", (char *)RTA_DATA(a));
		if (a->rta_type == IFLA_MTU)
			memcpy(&mtu, RTA_DATA(a), sizeof(mtu));
	}
	if (!strcmp(name, "lo")) {
		CHECK(ifi->ifi_index == 1, "netlink: lo has index %d", ifi->ifi_index);
		CHECK(ifi->ifi_type == ARPHRD_LOOPBACK, "netlink: lo type %d", ifi->ifi_type);
		CHECK((ifi->ifi_flags & (IFF_UP | IFF_LOOPBACK)) == (IFF_UP | IFF_LOOPBACK),
		      "netlink: lo flags %#x", ifi->ifi_flags);
		CHECK(mtu == 65536, "netlink: lo mtu %u", mtu);
		seen->lo_link = true;
	}
}

static void parse_addr(struct nlmsghdr *h, struct dump_seen *seen)
{
	struct ifaddrmsg *ifa = NLMSG_DATA(h);
	int len = (int)IFA_PAYLOAD(h);

	for (struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type != IFA_ADDRESS || ifa->ifa_index != 1)
			continue;
		if (ifa->ifa_family == AF_INET && RTA_PAYLOAD(a) == 4) {
			uint32_t v;

			memcpy(&v, RTA_DATA(a), 4);
			if (ntohl(v) == INADDR_LOOPBACK && ifa->ifa_prefixlen == 8 &&
			    ifa->ifa_scope == RT_SCOPE_HOST)
				seen->lo_v4 = true;
		}
		if (ifa->ifa_family == AF_INET6 && RTA_PAYLOAD(a) == 16 &&
		    !memcmp(RTA_DATA(a), &in6addr_loopback, 16) && ifa->ifa_prefixlen == 128)
			seen->lo_v6 = true;
	}
}

static void parse_route(struct nlmsghdr *h, struct dump_seen *seen)
{
	struct rtmsg *rt = NLMSG_DATA(h);
	int len = (int)RTM_PAYLOAD(h);
	uint32_t dst = 0, oif = 0;

	if (rt->rtm_family != AF_INET)
		return;
	for (struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_DST && RTA_PAYLOAD(a) == 4)
			memcpy(&dst, RTA_DATA(a), 4);
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == 4)
			memcpy(&oif, RTA_DATA(a), 4);
	}
	if (rt->rtm_type == RTN_LOCAL && rt->rtm_table == RT_TABLE_LOCAL && rt->rtm_dst_len == 8 &&
	    ntohl(dst) == 0x7f000000 && oif == 1)
		seen->local_route = true;
}

/* Sends one dump request of type for family and parses the answers until NLMSG_DONE. */
static void dump(int s, int type, int family, uint32_t seq, struct dump_seen *seen)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
	} req = { .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtgenmsg)),
			 .nlmsg_type = (uint16_t)type,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			 .nlmsg_seq = seq },
		  .g = { .rtgen_family = (unsigned char)family } };
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	static char buf[65536];

	struct sockaddr_nl me = { 0 };
	socklen_t melen = sizeof(me);

	memset(seen, 0, sizeof(*seen));
	CHECK_RET(sendto(s, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)),
		  req.h.nlmsg_len);
	/* Bound by the send (Linux autobinds there): the port id the replies must carry. */
	CHECK_RET(getsockname(s, (struct sockaddr *)&me, &melen), 0);
	CHECK(me.nl_pid != 0, "netlink port id 0 after a send");
	while (!seen->done && !seen->error) {
		ssize_t n = recv(s, buf, sizeof(buf), 0);
		int len = (int)n;

		if (n <= 0) {
			CHECK(n > 0, "recv: %s", n < 0 ? strerror(errno) : "EOF");
			return;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			CHECK(h->nlmsg_seq == seq, "seq %u, sent %u", h->nlmsg_seq, seq);
			/* Replies carry the requester's port id (ip(8) drops others). */
			CHECK(h->nlmsg_pid == me.nl_pid, "nlmsg_pid %u, port id %u", h->nlmsg_pid,
			      me.nl_pid);
			if (h->nlmsg_type == NLMSG_DONE) {
				seen->done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				seen->error = true;
				break;
			}
			seen->msgs++;
			if (h->nlmsg_type == RTM_NEWLINK)
				parse_link(h, seen);
			else if (h->nlmsg_type == RTM_NEWADDR)
				parse_addr(h, seen);
			else if (h->nlmsg_type == RTM_NEWROUTE)
				parse_route(h, seen);
		}
	}
}

static void test_netlink_dumps(void)
{
	int s = CHECK_OK(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
	struct dump_seen seen;

	dump(s, RTM_GETLINK, AF_UNSPEC, 1, &seen);
	CHECK(seen.done && !seen.error && seen.msgs >= 1, "GETLINK: done %d error %d msgs %d",
	      seen.done, seen.error, seen.msgs);
	CHECK(seen.lo_link, "GETLINK: no lo");

	dump(s, RTM_GETADDR, AF_UNSPEC, 2, &seen);
	CHECK(seen.done && !seen.error, "GETADDR: done %d error %d", seen.done, seen.error);
	CHECK(seen.lo_v4, "GETADDR: no 127.0.0.1/8 on lo");
	CHECK(seen.lo_v6, "GETADDR: no ::1/128 on lo");

	dump(s, RTM_GETADDR, AF_INET, 3, &seen);
	CHECK(seen.lo_v4 && !seen.lo_v6, "GETADDR AF_INET: v4 %d v6 %d", seen.lo_v4, seen.lo_v6);

	dump(s, RTM_GETROUTE, AF_INET, 4, &seen);
	CHECK(seen.done && !seen.error, "GETROUTE: done %d error %d", seen.done, seen.error);
	CHECK(seen.local_route, "GETROUTE: no local 127.0.0.0/8 dev lo");
	close(s);
}

/* The two views agree: the index SIOCGIFINDEX gives is the one netlink names lo. */
static void test_views_agree(void)
{
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct ifreq r;

	ifreq_named(&r, "lo");
	CHECK_RET(ioctl(s, SIOCGIFINDEX, &r), 0);
	CHECK_RET(if_nametoindex("lo"), r.ifr_ifindex);
	close(s);
}

/* --- changing lo --- */

static short lo_flags(int s)
{
	struct ifreq r;

	ifreq_named(&r, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &r) != 0) {
		CHECK(0, "SIOCGIFFLAGS: %s", strerror(errno));
		return 0;
	}
	return r.ifr_flags;
}

static int set_lo_flags(int s, short flags)
{
	struct ifreq r;

	ifreq_named(&r, "lo");
	r.ifr_flags = flags;
	return ioctl(s, SIOCSIFFLAGS, &r);
}

/* lo's ifi_flags in an RTM_GETLINK dump, or -1. */
static long netlink_lo_flags(void)
{
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = { .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
			 .nlmsg_type = RTM_GETLINK,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			 .nlmsg_seq = 9 } };
	static char buf[65536];
	long flags = -1;
	bool done = false;

	if (s < 0 || send(s, &req, req.h.nlmsg_len, 0) != (ssize_t)req.h.nlmsg_len) {
		CHECK(0, "netlink: %s", strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	while (!done) {
		ssize_t n = recv(s, buf, sizeof(buf), 0);
		int len = (int)n;

		if (n <= 0)
			break;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			struct ifinfomsg *ifi = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (h->nlmsg_type == RTM_NEWLINK && ifi->ifi_index == 1)
				flags = ifi->ifi_flags;
		}
	}
	close(s);
	return flags;
}

/*
 * Sends RTM_NEWLINK for lo (by index, or by IFLA_IFNAME with index 0) setting IFF_UP to up, as
 * `ip link set lo up|down` does, and returns the error of the acknowledgement (0 or -errno).
 */
static int netlink_set_lo(bool up, bool by_name)
{
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
		char attrs[64];
	} req;
	char buf[4096];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	int err = 1;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	req.h.nlmsg_type = RTM_NEWLINK;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.h.nlmsg_seq = 77;
	req.i.ifi_family = AF_UNSPEC;
	req.i.ifi_index = by_name ? 0 : 1;
	req.i.ifi_flags = up ? IFF_UP : 0;
	req.i.ifi_change = IFF_UP;
	if (by_name) {
		struct rtattr *a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.h.nlmsg_len));

		a->rta_type = IFLA_IFNAME;
		a->rta_len = RTA_LENGTH(3);
		memcpy(RTA_DATA(a), "lo", 3);
		req.h.nlmsg_len = NLMSG_ALIGN(req.h.nlmsg_len) + RTA_ALIGN(a->rta_len);
	}
	if (s < 0 || send(s, &req, req.h.nlmsg_len, 0) != (ssize_t)req.h.nlmsg_len) {
		CHECK(0, "netlink: %s", strerror(errno));
		if (s >= 0)
			close(s);
		return 1;
	}
	n = recv(s, buf, sizeof(buf), 0);
	if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) && h->nlmsg_type == NLMSG_ERROR &&
	    h->nlmsg_seq == 77)
		err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	else
		CHECK(0, "RTM_NEWLINK: no acknowledgement (%zd bytes, type %u)", n,
		      n > 0 ? h->nlmsg_type : 0);
	close(s);
	return err;
}

static void drop_net_admin(void *arg)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));

	(void)arg;
	if (syscall(SYS_capget, &h, d) != 0) {
		CHECK(0, "capget: %s", strerror(errno));
		return;
	}
	d[0].effective &= ~(1U << CAP_NET_ADMIN);
	d[0].permitted &= ~(1U << CAP_NET_ADMIN);
	if (syscall(SYS_capset, &h, d) != 0) {
		CHECK(0, "capset: %s", strerror(errno));
		return;
	}
	CHECK_ERR(set_lo_flags(s, IFF_UP), EPERM);
	CHECK_RET(netlink_set_lo(true, false), -EPERM);
	close(s);
}

static void change_lo(void *arg)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_port = htons(9) };
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr_in rcv_addr = lo;
	socklen_t rl = sizeof(rcv_addr);
	int s, u, t, rcv;
	short f;

	(void)arg;
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rcv_addr = lo;
	rcv_addr.sin_port = 0;
	lo6.sin6_addr = in6addr_loopback;
	if (syscall(SYS_unshare, CLONE_NEWNET) != 0) {
		/* husk's sandbox is one network namespace: its lo is the sandbox's own. */
		if (!in_husk()) {
			printf("skip: changing lo: no network namespace of our own (%s)\n",
			       strerror(errno));
			return;
		}
	}
	s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	rcv = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));

	CHECK_RET(set_lo_flags(s, (short)(lo_flags(s) | IFF_UP)), 0);
	f = lo_flags(s);
	CHECK((f & (IFF_UP | IFF_RUNNING | IFF_LOOPBACK)) == (IFF_UP | IFF_RUNNING | IFF_LOOPBACK),
	      "up: flags %#x", f);
	CHECK((netlink_lo_flags() & (IFF_UP | IFF_LOWER_UP)) == (IFF_UP | IFF_LOWER_UP),
	      "netlink up: flags %#lx", netlink_lo_flags());
	CHECK_RET(bind(rcv, (struct sockaddr *)&rcv_addr, sizeof(rcv_addr)), 0);
	CHECK_RET(getsockname(rcv, (struct sockaddr *)&rcv_addr, &rl), 0);
	CHECK_RET(sendto(u, "x", 1, 0, (struct sockaddr *)&rcv_addr, sizeof(rcv_addr)), 1);
	CHECK_RET(recv(rcv, &f, 1, 0), 1);

	/* Down: IFF_UP and IFF_RUNNING go, IPv4 loopback is unreachable. */
	CHECK_RET(set_lo_flags(s, (short)(lo_flags(s) & ~IFF_UP)), 0);
	f = lo_flags(s);
	CHECK(!(f & (IFF_UP | IFF_RUNNING)) && (f & IFF_LOOPBACK), "down: flags %#x", f);
	CHECK(!(netlink_lo_flags() & (IFF_UP | IFF_LOWER_UP)), "netlink down: flags %#lx",
	      netlink_lo_flags());
	/* IPv4 datagrams are sent and lost; ::1 is gone. (A TCP connect may be unreachable or
	 * wait for its SYN's retries, depending on cached routes: not checked.) */
	CHECK_RET(sendto(u, "x", 1, 0, (struct sockaddr *)&rcv_addr, sizeof(rcv_addr)), 1);
	CHECK_ERR(recv(rcv, &f, 1, MSG_DONTWAIT), EAGAIN);
	t = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	CHECK_ERR(sendto(t, "x", 1, 0, (struct sockaddr *)&lo6, sizeof(lo6)), EADDRNOTAVAIL);
	close(t);

	/* RTM_NEWLINK, by index and by name. */
	CHECK_RET(netlink_set_lo(true, false), 0);
	CHECK(lo_flags(s) & IFF_UP, "RTM_NEWLINK up: flags %#x", lo_flags(s));
	CHECK_RET(sendto(u, "x", 1, 0, (struct sockaddr *)&rcv_addr, sizeof(rcv_addr)), 1);
	CHECK_RET(recv(rcv, &f, 1, 0), 1);
	CHECK_RET(netlink_set_lo(false, true), 0);
	CHECK(!(lo_flags(s) & IFF_UP), "RTM_NEWLINK down: flags %#x", lo_flags(s));
	CHECK_RET(netlink_set_lo(true, true), 0);
	CHECK(lo_flags(s) & IFF_UP, "RTM_NEWLINK up by name: flags %#x", lo_flags(s));

	{
		struct ifreq r;

		ifreq_named(&r, "nosuchif0");
		r.ifr_flags = IFF_UP;
		CHECK_ERR(ioctl(s, SIOCSIFFLAGS, &r), ENODEV);
	}
	in_child(drop_net_admin, NULL);
	CHECK(lo_flags(s) & IFF_UP, "lo stays up: flags %#x", lo_flags(s));
	close(s);
	close(u);
	close(rcv);
}

int main(void)
{
	test_ioctls_lo();
	test_ioctls_other_families();
	test_ifconf();
	test_netlink_dumps();
	test_views_agree();
	in_child(change_lo, NULL);
	return finish();
}
