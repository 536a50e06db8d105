/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's interfaces as programs see them: the SIOCGIF* ioctls of netdevice(7) and the
 * NETLINK_ROUTE dumps (RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE) that ip(8) reads. Both views must
 * agree on lo: index 1, up, loopback, 127.0.0.1/8, the local route 127.0.0.0/8. Natively the
 * machine may have more interfaces; only lo is checked.
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
#include <sys/socket.h>

#include "check.h"

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

int main(void)
{
	test_ioctls_lo();
	test_ioctls_other_families();
	test_ifconf();
	test_netlink_dumps();
	test_views_agree();
	return finish();
}
