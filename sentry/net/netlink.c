/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NETLINK_KOBJECT_UEVENT sockets (sd-device's monitors: systemd-logind, udevadm monitor) are
 * made, bound to their groups and read, but never receive: the sandbox has no devices to
 * announce, and a message sent on one (udevd's broadcast to its group) is dropped.
 *
 * NETLINK_ROUTE of the socket's network namespace: dumps of its interfaces (RTM_GETLINK: lo and
 * its veth links), addresses (RTM_GETADDR: 127.0.0.1/8 and ::1/128 as lo's state has them, the
 * links' IPv4 ones) and routes (RTM_GETROUTE: the local routes of lo, the links' connected and
 * local routes). Each request queues its answer on the socket as datagrams, ending with
 * NLMSG_DONE. RTM_NEWLINK takes lo or a link up or down (IFF_UP, as `ip link set lo up`),
 * makes a veth pair or moves a link to another namespace; RTM_DELLINK deletes a pair,
 * RTM_NEWADDR/DELADDR change a link's IPv4 addresses (link.c); all with CAP_NET_ADMIN in the
 * namespace's owner. Route changes get an NLMSG_ERROR of EPERM, other requests EOPNOTSUPP.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/util.h"
#include "sentry/fs/proc/proc_ids.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/vfs/vfs.h"
#include "sentry/kernel/task.h"
#include "sentry/net/internal.h"

#define NL_BUF 4096

struct nlbuf {
	uint8_t data[NL_BUF];
	size_t len;
};

bool netlink_family(int family)
{
	return family == AF_NETLINK;
}

uint32_t netlink_portid_locked(struct sock *s)
{
	if (!s->nl_portid) {
		struct task *ct = task_current();

		s->nl_portid = ct ? (uint32_t)task_pid(ct) : 0;
	}
	return s->nl_portid;
}

static void *nl_put(struct nlbuf *b, size_t len)
{
	void *p;

	len = NLMSG_ALIGN(len);
	if (b->len + len > sizeof(b->data))
		return NULL;
	p = b->data + b->len;
	memset(p, 0, len);
	b->len += len;
	return p;
}

/* The requester's port id, which Linux puts in every reply (iproute2 skips other ones). */
static uint32_t nl_reply_portid; /* net_lock */

static struct nlmsghdr *nl_msg(struct nlbuf *b, const struct nlmsghdr *req, int type, int flags,
			       size_t payload)
{
	struct nlmsghdr *h = nl_put(b, NLMSG_HDRLEN + payload);

	if (!h)
		return NULL;
	h->nlmsg_len = (uint32_t)(NLMSG_HDRLEN + NLMSG_ALIGN(payload));
	h->nlmsg_type = (uint16_t)type;
	h->nlmsg_flags = (uint16_t)flags;
	h->nlmsg_seq = req->nlmsg_seq;
	h->nlmsg_pid = nl_reply_portid;
	return h;
}

static void nl_attr(struct nlbuf *b, struct nlmsghdr *h, int type, const void *val, size_t len)
{
	struct rtattr *a = nl_put(b, RTA_LENGTH(len));

	if (!a)
		return;
	a->rta_type = (unsigned short)type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), val, len);
	h->nlmsg_len += RTA_ALIGN(a->rta_len);
}

static void dump_lo(struct net_ns *n, struct nlbuf *b, const struct nlmsghdr *req, int flags)
{
	struct nlmsghdr *h = nl_msg(b, req, RTM_NEWLINK, flags, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifi;
	uint32_t mtu = 65536, txq = 1000, group = 0;
	uint8_t mac[6] = { 0 }, mode = 0; /* IF_LINK_MODE_DEFAULT */
	bool up = net_lo_up(n);
	/* lo's queueing discipline: noop until it is first up, then noqueue (as Linux's). */
	const char *qdisc = net_lo_v4(n) ? "noqueue" : "noop";
	uint8_t state = up ? 0 : 2; /* IF_OPER_UNKNOWN as lo when up, IF_OPER_DOWN */

	if (!h)
		return;
	ifi = NLMSG_DATA(h);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_type = ARPHRD_LOOPBACK;
	ifi->ifi_index = 1;
	ifi->ifi_flags = IFF_LOOPBACK | (up ? IFF_UP | IFF_RUNNING | IFF_LOWER_UP : 0);
	ifi->ifi_change = 0;
	nl_attr(b, h, IFLA_IFNAME, "lo", 3);
	nl_attr(b, h, IFLA_MTU, &mtu, sizeof(mtu));
	nl_attr(b, h, IFLA_TXQLEN, &txq, sizeof(txq));
	nl_attr(b, h, IFLA_OPERSTATE, &state, sizeof(state));
	nl_attr(b, h, IFLA_QDISC, qdisc, strlen(qdisc) + 1);
	nl_attr(b, h, IFLA_GROUP, &group, sizeof(group));
	nl_attr(b, h, IFLA_LINKMODE, &mode, sizeof(mode));
	nl_attr(b, h, IFLA_ADDRESS, mac, sizeof(mac));
	nl_attr(b, h, IFLA_BROADCAST, mac, sizeof(mac));
}

/* Permanent addresses' lifetimes ("valid_lft forever preferred_lft forever"). */
static void nl_cacheinfo(struct nlbuf *b, struct nlmsghdr *h)
{
	struct ifa_cacheinfo ci = { .ifa_prefered = 0xFFFFFFFFu, .ifa_valid = 0xFFFFFFFFu };

	nl_attr(b, h, IFA_CACHEINFO, &ci, sizeof(ci));
}

static void dump_lo_addrs(struct net_ns *n, struct nlbuf *b, const struct nlmsghdr *req, int family)
{
	/* 127.0.0.1 comes with lo's first up (a new namespace's lo has no address). */
	if ((family == AF_UNSPEC || family == AF_INET) && net_lo_v4(n)) {
		struct nlmsghdr *h =
			nl_msg(b, req, RTM_NEWADDR, NLM_F_MULTI, sizeof(struct ifaddrmsg));
		struct ifaddrmsg *ifa;
		uint8_t a[4] = { 127, 0, 0, 1 };

		if (h) {
			ifa = NLMSG_DATA(h);
			ifa->ifa_family = AF_INET;
			ifa->ifa_prefixlen = 8;
			ifa->ifa_flags = IFA_F_PERMANENT;
			ifa->ifa_scope = RT_SCOPE_HOST;
			ifa->ifa_index = 1;
			nl_attr(b, h, IFA_ADDRESS, a, 4);
			nl_attr(b, h, IFA_LOCAL, a, 4);
			nl_attr(b, h, IFA_LABEL, "lo", 3);
			nl_cacheinfo(b, h);
		}
	}
	/* ::1 goes with lo down (addrconf_ifdown), 127.0.0.1 stays. */
	if ((family == AF_UNSPEC || family == AF_INET6) && net_lo_up(n)) {
		struct nlmsghdr *h =
			nl_msg(b, req, RTM_NEWADDR, NLM_F_MULTI, sizeof(struct ifaddrmsg));
		struct ifaddrmsg *ifa;
		uint8_t a[16] = { [15] = 1 };

		if (h) {
			ifa = NLMSG_DATA(h);
			ifa->ifa_family = AF_INET6;
			ifa->ifa_prefixlen = 128;
			ifa->ifa_flags = IFA_F_PERMANENT;
			ifa->ifa_scope = RT_SCOPE_HOST;
			ifa->ifa_index = 1;
			nl_attr(b, h, IFA_ADDRESS, a, 16);
			nl_cacheinfo(b, h);
		}
	}
}

static void dump_lo_routes(struct net_ns *n, struct nlbuf *b, const struct nlmsghdr *req,
			   int family)
{
	/* The local route stays while lo is down, as on Linux; it comes with 127.0.0.1. */
	if ((family == AF_UNSPEC || family == AF_INET) && net_lo_v4(n)) {
		struct nlmsghdr *h =
			nl_msg(b, req, RTM_NEWROUTE, NLM_F_MULTI, sizeof(struct rtmsg));
		struct rtmsg *rt;
		uint8_t dst[4] = { 127, 0, 0, 0 }, src[4] = { 127, 0, 0, 1 };
		uint32_t oif = 1, table = RT_TABLE_LOCAL;

		if (h) {
			rt = NLMSG_DATA(h);
			rt->rtm_family = AF_INET;
			rt->rtm_dst_len = 8;
			rt->rtm_table = RT_TABLE_LOCAL;
			rt->rtm_protocol = RTPROT_KERNEL;
			rt->rtm_scope = RT_SCOPE_HOST;
			rt->rtm_type = RTN_LOCAL;
			nl_attr(b, h, RTA_TABLE, &table, sizeof(table));
			nl_attr(b, h, RTA_DST, dst, 4);
			nl_attr(b, h, RTA_PREFSRC, src, 4);
			nl_attr(b, h, RTA_OIF, &oif, sizeof(oif));
		}
	}
}

/* Queues buffer b on s as one datagram (net_lock held). */
static void nl_queue_locked(struct sock *s, struct nlbuf *b)
{
	struct iovec iov = { b->data, b->len };
	struct net_msg m = { .iov = &iov, .iovcnt = 1 };
	struct {
		uint16_t family, pad;
		uint32_t pid, groups;
	} from = { AF_NETLINK, 0, 0, 0 };

	if (b->len)
		sock_queue_dgram_locked(s, &m, b->len, &from, sizeof(from), false, NULL);
	b->len = 0;
}

/* One veth end's RTM_NEWLINK. */
static void dump_link(struct net_link *l, struct nlbuf *b, const struct nlmsghdr *req, int flags)
{
	struct nlmsghdr *h = nl_msg(b, req, RTM_NEWLINK, flags, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifi;
	uint32_t mtu = 1500, txq = 1000, group = 0, peer = l->peer ? (uint32_t)l->peer->index : 0;
	int32_t nsid = 0;
	uint8_t mode = 0; /* IF_LINK_MODE_DEFAULT */
	uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	bool carrier = link_carrier(l);
	/* IF_OPER_UP, IF_OPER_LOWERLAYERDOWN (up, the peer down), IF_OPER_DOWN */
	uint8_t state = carrier ? 6 : l->up ? 5 : 2;
	struct rtattr *info;

	if (!h)
		return;
	ifi = NLMSG_DATA(h);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_type = ARPHRD_ETHER;
	ifi->ifi_index = l->index;
	ifi->ifi_flags = IFF_BROADCAST | IFF_MULTICAST | (l->up ? IFF_UP : 0) |
			 (carrier ? IFF_RUNNING | IFF_LOWER_UP : 0);
	nl_attr(b, h, IFLA_IFNAME, l->name, strlen(l->name) + 1);
	nl_attr(b, h, IFLA_MTU, &mtu, sizeof(mtu));
	nl_attr(b, h, IFLA_TXQLEN, &txq, sizeof(txq));
	nl_attr(b, h, IFLA_OPERSTATE, &state, sizeof(state));
	nl_attr(b, h, IFLA_QDISC, l->was_up ? "noqueue" : "noop", l->was_up ? 8 : 5);
	nl_attr(b, h, IFLA_GROUP, &group, sizeof(group));
	nl_attr(b, h, IFLA_LINKMODE, &mode, sizeof(mode));
	nl_attr(b, h, IFLA_LINK, &peer, sizeof(peer));
	/* A peer in another namespace: Linux's first netnsid there is 0. */
	if (l->peer && l->peer->ns_id != l->ns_id)
		nl_attr(b, h, IFLA_LINK_NETNSID, &nsid, sizeof(nsid));
	nl_attr(b, h, IFLA_ADDRESS, l->mac, sizeof(l->mac));
	nl_attr(b, h, IFLA_BROADCAST, bcast, sizeof(bcast));
	/* IFLA_LINKINFO { IFLA_INFO_KIND "veth" } (`ip -d link`). */
	info = (struct rtattr *)(b->data + b->len);
	nl_attr(b, h, IFLA_LINKINFO, "", 0);
	if (b->len + RTA_LENGTH(5) <= sizeof(b->data)) {
		size_t before = b->len;

		nl_attr(b, h, IFLA_INFO_KIND, "veth", 5);
		info->rta_len = (unsigned short)(info->rta_len + (b->len - before));
	}
}

struct dump_arg {
	struct sock *s;
	struct nlbuf *b;
	const struct nlmsghdr *req;
	int family;
};

static void link_msg(struct net_link *l, void *arg)
{
	struct dump_arg *d = arg;

	dump_link(l, d->b, d->req, NLM_F_MULTI);
	nl_queue_locked(d->s, d->b);
}

/* RTM_GETLINK dump: lo, then the namespace's links, one datagram each. */
static void dump_links(struct sock *s, struct nlbuf *b, const struct nlmsghdr *req)
{
	struct dump_arg d = { s, b, req, AF_UNSPEC };

	dump_lo(s->net, b, req, NLM_F_MULTI);
	nl_queue_locked(s, b);
	link_for_each_locked(s->net->id, link_msg, &d);
}

static void addr_msgs(struct net_link *l, void *arg)
{
	struct dump_arg *d = arg;

	if (d->family != AF_UNSPEC && d->family != AF_INET)
		return;
	for (int i = 0; i < l->naddr; i++) {
		struct nlmsghdr *h =
			nl_msg(d->b, d->req, RTM_NEWADDR, NLM_F_MULTI, sizeof(struct ifaddrmsg));
		struct ifaddrmsg *ifa;

		if (!h)
			break;
		ifa = NLMSG_DATA(h);
		ifa->ifa_family = AF_INET;
		ifa->ifa_prefixlen = l->addr[i].prefix;
		ifa->ifa_flags = IFA_F_PERMANENT;
		ifa->ifa_scope = RT_SCOPE_UNIVERSE;
		ifa->ifa_index = (uint32_t)l->index;
		nl_attr(d->b, h, IFA_ADDRESS, l->addr[i].a, 4);
		nl_attr(d->b, h, IFA_LOCAL, l->addr[i].a, 4);
		nl_attr(d->b, h, IFA_LABEL, l->name, strlen(l->name) + 1);
		nl_cacheinfo(d->b, h);
		nl_queue_locked(d->s, d->b);
	}
}

static void dump_addrs(struct sock *s, struct nlbuf *b, const struct nlmsghdr *req, int family)
{
	struct dump_arg d = { s, b, req, family };

	dump_lo_addrs(s->net, b, req, family);
	nl_queue_locked(s, b);
	link_for_each_locked(s->net->id, addr_msgs, &d);
}

/* The connected route of each address of an up link (main table) and its local route. */
static void route_msgs(struct net_link *l, void *arg)
{
	struct dump_arg *d = arg;

	if (!l->up || (d->family != AF_UNSPEC && d->family != AF_INET))
		return;
	for (int i = 0; i < l->naddr; i++) {
		for (int local = 0; local < 2; local++) {
			struct nlmsghdr *h = nl_msg(d->b, d->req, RTM_NEWROUTE, NLM_F_MULTI,
						    sizeof(struct rtmsg));
			uint8_t dst[4];
			uint32_t oif = (uint32_t)l->index;
			uint32_t table = local ? RT_TABLE_LOCAL : RT_TABLE_MAIN;
			int plen = local ? 32 : l->addr[i].prefix;
			uint32_t a = (uint32_t)l->addr[i].a[0] << 24 |
				     (uint32_t)l->addr[i].a[1] << 16 |
				     (uint32_t)l->addr[i].a[2] << 8 | l->addr[i].a[3];
			uint32_t mask = plen ? ~0u << (32 - plen) : 0;
			struct rtmsg *rt;

			if (!h)
				return;
			a &= mask;
			dst[0] = (uint8_t)(a >> 24);
			dst[1] = (uint8_t)(a >> 16);
			dst[2] = (uint8_t)(a >> 8);
			dst[3] = (uint8_t)a;
			rt = NLMSG_DATA(h);
			rt->rtm_family = AF_INET;
			rt->rtm_dst_len = (unsigned char)plen;
			rt->rtm_table = (unsigned char)table;
			rt->rtm_protocol = RTPROT_KERNEL;
			rt->rtm_scope = local ? RT_SCOPE_HOST : RT_SCOPE_LINK;
			rt->rtm_type = local ? RTN_LOCAL : RTN_UNICAST;
			if (!local && !link_carrier(l))
				rt->rtm_flags = RTNH_F_LINKDOWN;
			nl_attr(d->b, h, RTA_TABLE, &table, sizeof(table));
			nl_attr(d->b, h, RTA_DST, dst, 4);
			nl_attr(d->b, h, RTA_PREFSRC, l->addr[i].a, 4);
			nl_attr(d->b, h, RTA_OIF, &oif, sizeof(oif));
			nl_queue_locked(d->s, d->b);
		}
	}
}

static void dump_routes(struct sock *s, struct nlbuf *b, const struct nlmsghdr *req, int family)
{
	struct dump_arg d = { s, b, req, family };

	dump_lo_routes(s->net, b, req, family);
	nl_queue_locked(s, b);
	link_for_each_locked(s->net->id, route_msgs, &d);
}

static void nl_error(struct nlbuf *b, const struct nlmsghdr *req, int err)
{
	struct nlmsghdr *h = nl_msg(b, req, NLMSG_ERROR, 0, sizeof(struct nlmsgerr));
	struct nlmsgerr *e;

	if (!h)
		return;
	e = NLMSG_DATA(h);
	e->error = err;
	e->msg = *req;
}

/*
 * RTM_NEWLINK: lo by index or by IFLA_IFNAME (index 0), its IFF_UP as ifi_flags and ifi_change
 * say (rtnl_dev_combine_flags: ifi_change 0 means every flag). Attributes other than the name
 * (an MTU, a new name, a master...) are not supported. Returns 0 or -errno for the NLMSG_ERROR.
 */
/*
 * The link a RTM_NEWLINK or RTM_GETLINK request names: by ifi_index, or by IFLA_IFNAME with
 * index 0. Returns 0 for lo, -ENODEV, -EINVAL, or -EOPNOTSUPP for another attribute when
 * only_name (a change the sandbox cannot make: an MTU, a new name, a master...).
 */
static int nl_link_of(struct net_ns *n, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct net_link *l;
	char name[16] = "";
	bool by_name = false;
	int len;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return -EINVAL;
	len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_IFNAME) {
			size_t k = MIN(RTA_PAYLOAD(a), sizeof(name) - 1);

			memcpy(name, RTA_DATA(a), k);
			name[k] = '\0';
			by_name = true;
		}
	}
	if (ifi->ifi_index == 1 || (!ifi->ifi_index && by_name && !strcmp(name, "lo")))
		return 1;
	if (!ifi->ifi_index && !by_name)
		return -ENODEV;
	l = link_find_locked(n->id, ifi->ifi_index ? NULL : name, ifi->ifi_index);
	return l ? l->index : -ENODEV;
}

/* Attributes of a message: tb[type] (NULL when absent); false when one is past max. */
static bool nl_parse(const struct rtattr *a, int len, const struct rtattr **tb, int max)
{
	bool known = true;

	memset(tb, 0, sizeof(*tb) * (size_t)(max + 1));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		int type = a->rta_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
		else
			known = false;
	}
	return known;
}

static void nl_str(const struct rtattr *a, char *buf, size_t size)
{
	size_t k = a ? MIN(RTA_PAYLOAD(a), size - 1) : 0;

	if (k)
		memcpy(buf, RTA_DATA(a), k);
	buf[k] = '\0';
}

#pragma weak proc_ns_file_get
/*
 * The network namespace an IFLA_NET_NS_PID or IFLA_NET_NS_FD attribute names, a new reference
 * in *ns (nsproxy_put), for task ct. Called without net_lock (it looks up tasks and files).
 */
static int nl_target_ns(struct task *ct, const struct rtattr *pid, const struct rtattr *fd,
			struct nsproxy **ns)
{
	if (pid && RTA_PAYLOAD(pid) >= 4) {
		/* The pid as ct's pid namespace numbers it (ip link set X netns PID). */
		struct task *t = task_find_vtask(ct, *(const int32_t *)RTA_DATA(pid));

		if (!t)
			return -ESRCH;
		*ns = task_get_nsproxy(t);
		task_put(t);
		return 0;
	}
	if (fd && RTA_PAYLOAD(fd) >= 4 && proc_ns_file_get) {
		struct file *f = fdtable_lookup(ct->fdt, *(const int32_t *)RTA_DATA(fd));
		int type;

		if (!f)
			return -EBADF;
		type = proc_ns_file_get(f, ns);
		file_put(f);
		if (type < 0)
			return -EINVAL;
		if (type != 0x40000000 /* CLONE_NEWNET */) {
			nsproxy_put(*ns);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

/*
 * Resolves the namespace a link is to move to (attributes pid or fd; none: *id stays) with net_lock
 * dropped meanwhile, and checks ct's CAP_NET_ADMIN over it. 0 or -errno.
 */
static int nl_move_target(struct sock *s, struct task *ct, const struct rtattr *pid,
			  const struct rtattr *fd, uint32_t *id)
{
	struct nsproxy *ns = NULL;
	int ret;

	if (!pid && !fd)
		return 0;
	if (!ct)
		return -EINVAL;
	pthread_mutex_unlock(&net_lock);
	ret = nl_target_ns(ct, pid, fd, &ns);
	if (ret == 0 && !task_ns_capable(ct, ns->net->owner, CAP_NET_ADMIN))
		ret = -EPERM;
	if (ret == 0)
		*id = ns->net->id;
	/* Should that namespace end meanwhile, the links moved there go with it (link.c). */
	if (ns)
		nsproxy_put(ns);
	pthread_mutex_lock(&net_lock);
	nl_reply_portid = netlink_portid_locked(s);
	return ret;
}

/*
 * RTM_NEWLINK (net_lock held): a veth pair (IFLA_LINKINFO kind "veth", the peer's name and
 * namespace in VETH_INFO_PEER; other kinds EOPNOTSUPP), or a change of an existing link: IFF_UP
 * as ifi_flags and ifi_change say (rtnl_dev_combine_flags: ifi_change 0 means every flag), a
 * move to another namespace (IFLA_NET_NS_PID, IFLA_NET_NS_FD; not lo: EINVAL). Other attributes
 * (an MTU, a new name, a master...) are not supported. Returns 0 or -errno.
 */
static int nl_newlink(struct sock *s, const struct nlmsghdr *h)
{
	struct net_ns *n = s->net;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	const struct rtattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
	struct task *ct = task_current();
	struct net_link *l = NULL;
	uint32_t to = n->id;
	int idx, ret;

	if (ct && !task_ns_capable(ct, n->owner, CAP_NET_ADMIN))
		return -EPERM;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return -EINVAL;
	nl_parse(IFLA_RTA(ifi), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi))), tb, IFLA_MAX);
	for (int i = 0; i <= IFLA_MAX; i++) {
		if (tb[i] && i != IFLA_IFNAME && i != IFLA_LINKINFO && i != IFLA_NET_NS_PID &&
		    i != IFLA_NET_NS_FD && i != IFLA_EXT_MASK)
			return -EOPNOTSUPP;
	}
	idx = nl_link_of(n, h);
	if (tb[IFLA_LINKINFO]) {
		const struct rtattr *pi[IFLA_MAX + 1], *vd[VETH_INFO_MAX + 1];
		char kind[16], name[16], pname[16];
		uint32_t pto = n->id;
		struct net_link *p;

		nl_parse(RTA_DATA(tb[IFLA_LINKINFO]), (int)RTA_PAYLOAD(tb[IFLA_LINKINFO]), li,
			 IFLA_INFO_MAX);
		nl_str(li[IFLA_INFO_KIND], kind, sizeof(kind));
		if (idx > 0)
			return (h->nlmsg_flags & NLM_F_EXCL) ? -EEXIST : -EOPNOTSUPP;
		if (!(h->nlmsg_flags & NLM_F_CREATE))
			return -ENODEV;
		if (strcmp(kind, "veth"))
			return -EOPNOTSUPP; /* the sandbox has veth pairs only */
		memset(pi, 0, sizeof(pi));
		if (li[IFLA_INFO_DATA]) {
			nl_parse(RTA_DATA(li[IFLA_INFO_DATA]), (int)RTA_PAYLOAD(li[IFLA_INFO_DATA]),
				 vd, VETH_INFO_MAX);
			if (vd[VETH_INFO_PEER] &&
			    RTA_PAYLOAD(vd[VETH_INFO_PEER]) >= sizeof(struct ifinfomsg)) {
				const struct ifinfomsg *pifi = RTA_DATA(vd[VETH_INFO_PEER]);

				nl_parse(IFLA_RTA(pifi),
					 (int)(RTA_PAYLOAD(vd[VETH_INFO_PEER]) - sizeof(*pifi)), pi,
					 IFLA_MAX);
			}
		}
		nl_str(tb[IFLA_IFNAME], name, sizeof(name));
		nl_str(pi[IFLA_IFNAME], pname, sizeof(pname));
		/* Linux's default names: the first free vethN, the peer's first (it is made first). */
		for (int k = 0; !*name || !*pname; k++) {
			char cand[16];

			snprintf(cand, sizeof(cand), "veth%d", k);
			if (link_find_locked(n->id, cand, 0) || !strcmp(cand, name) ||
			    !strcmp(cand, pname))
				continue;
			snprintf(*pname ? name : pname, sizeof(name), "%s", cand);
		}
		ret = nl_move_target(s, ct, tb[IFLA_NET_NS_PID], tb[IFLA_NET_NS_FD], &to);
		if (ret == 0)
			ret = nl_move_target(s, ct, pi[IFLA_NET_NS_PID], pi[IFLA_NET_NS_FD], &pto);
		if (ret < 0)
			return ret;
		ret = link_veth_create_locked(n->id, name, pname);
		if (ret < 0)
			return ret;
		l = link_find_locked(n->id, name, 0);
		p = link_find_locked(n->id, pname, 0);
		if (l && p && (link_move_locked(p, pto) < 0 || link_move_locked(l, to) < 0)) {
			link_delete_locked(l);
			return -EEXIST;
		}
		return 0;
	}
	if (idx < 0)
		return idx;
	if (idx != 1)
		l = link_find_locked(n->id, NULL, idx);
	/* A name besides the index is a rename: not supported. */
	if (tb[IFLA_IFNAME] && ifi->ifi_index) {
		char name[16];

		nl_str(tb[IFLA_IFNAME], name, sizeof(name));
		if (strcmp(name, l ? l->name : "lo"))
			return -EOPNOTSUPP;
	}
	if (tb[IFLA_NET_NS_PID] || tb[IFLA_NET_NS_FD]) {
		if (!l)
			return -EINVAL; /* lo stays in its namespace (NETIF_F_NETNS_LOCAL) */
		ret = nl_move_target(s, ct, tb[IFLA_NET_NS_PID], tb[IFLA_NET_NS_FD], &to);
		if (ret < 0)
			return ret;
		/* The lock was dropped: find it again. */
		l = link_find_locked(n->id, NULL, idx);
		if (!l)
			return -ENODEV;
		ret = link_move_locked(l, to);
		if (ret < 0)
			return ret;
	}
	if (ifi->ifi_change ? (ifi->ifi_change & IFF_UP) : ifi->ifi_flags != 0) {
		bool up = ifi->ifi_flags & IFF_UP;

		if (l) {
			l->up = up;
			l->was_up |= up;
		} else if (idx == 1)
			return net_lo_set_up(NULL, n, NULL, 1, up);
	}
	return 0;
}

/* RTM_DELLINK: a veth pair goes with either end; lo stays (EOPNOTSUPP). */
static int nl_dellink(struct net_ns *n, const struct nlmsghdr *h)
{
	struct task *ct = task_current();
	struct net_link *l;
	int idx;

	if (ct && !task_ns_capable(ct, n->owner, CAP_NET_ADMIN))
		return -EPERM;
	idx = nl_link_of(n, h);
	if (idx < 0)
		return idx;
	if (idx == 1)
		return -EOPNOTSUPP;
	l = link_find_locked(n->id, NULL, idx);
	if (!l)
		return -ENODEV;
	link_delete_locked(l);
	return 0;
}

/* RTM_NEWADDR and RTM_DELADDR of an IPv4 address on a veth link (lo's are fixed: EOPNOTSUPP). */
static int nl_addr(struct net_ns *n, const struct nlmsghdr *h, bool add)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const struct rtattr *tb[IFA_MAX + 1], *a;
	struct task *ct = task_current();
	struct net_link *l;

	if (ct && !task_ns_capable(ct, n->owner, CAP_NET_ADMIN))
		return -EPERM;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return -EINVAL;
	nl_parse(IFA_RTA(ifa), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifa))), tb, IFA_MAX);
	if (ifa->ifa_index == 1)
		return -EOPNOTSUPP;
	l = link_find_locked(n->id, NULL, (int)ifa->ifa_index);
	if (!l)
		return -ENODEV;
	if (ifa->ifa_family != AF_INET)
		return -EOPNOTSUPP; /* IPv4 only on links */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!a || RTA_PAYLOAD(a) < 4)
		return -EINVAL;
	if (!add)
		return link_addr_del_locked(l, RTA_DATA(a));
	if ((h->nlmsg_flags & NLM_F_CREATE) || (h->nlmsg_flags & NLM_F_EXCL))
		return link_addr_add_locked(l, RTA_DATA(a), ifa->ifa_prefixlen);
	return -ENOENT;
}

int netlink_bind(struct sock *s, const void *addr, size_t len)
{
	struct sockaddr_nl nl;

	if (len < sizeof(nl))
		return -EINVAL;
	memcpy(&nl, addr, sizeof(nl));
	if (nl.nl_family != AF_NETLINK)
		return -EINVAL;
	/* Both families take listeners without privilege (NL_CFG_F_NONROOT_RECV). */
	pthread_mutex_lock(&net_lock);
	s->nl_groups = nl.nl_groups;
	pthread_mutex_unlock(&net_lock);
	return 0;
}

ssize_t netlink_sendmsg(struct sock *s, struct net_msg *m)
{
	static struct nlbuf b; /* net_lock */
	uint8_t req[1024];
	size_t len = 0;

	if (s->protocol == NETLINK_KOBJECT_UEVENT) {
		/*
		 * NETLINK_KOBJECT_UEVENT: the sandbox has no devices, so the kernel group never
		 * sends; what a process sends (udevd's broadcasts) reaches no one.
		 */
		for (int i = 0; i < m->iovcnt; i++)
			len += m->iov[i].iov_len;
		return (ssize_t)len;
	}

	for (int i = 0; i < m->iovcnt && len < sizeof(req); i++) {
		size_t k = MIN(m->iov[i].iov_len, sizeof(req) - len);

		memcpy(req + len, m->iov[i].iov_base, k);
		len += k;
	}
	pthread_mutex_lock(&net_lock);
	nl_reply_portid = netlink_portid_locked(s);
	for (struct nlmsghdr *h = (struct nlmsghdr *)req; NLMSG_OK(h, len);
	     h = NLMSG_NEXT(h, len)) {
		int family = AF_UNSPEC;

		if (h->nlmsg_len >= NLMSG_LENGTH(1))
			family = *(uint8_t *)NLMSG_DATA(h);
		b.len = 0;
		if (h->nlmsg_type == RTM_GETLINK && !(h->nlmsg_flags & NLM_F_DUMP)) {
			/* One link (`ip link show lo`): its RTM_NEWLINK alone, or an error. */
			int idx = nl_link_of(s->net, h), err = idx < 0 ? idx : 0;

			if (idx == 1)
				dump_lo(s->net, &b, h, 0);
			else if (idx > 0)
				dump_link(link_find_locked(s->net->id, NULL, idx), &b, h, 0);
			if (err || (h->nlmsg_flags & NLM_F_ACK))
				nl_error(&b, h, err);
			nl_queue_locked(s, &b);
			continue;
		}
		if (h->nlmsg_type == RTM_NEWLINK) {
			int err = nl_newlink(s, h);

			if (err || (h->nlmsg_flags & NLM_F_ACK)) {
				nl_error(&b, h, err);
				nl_queue_locked(s, &b);
			}
			continue;
		}
		if (h->nlmsg_type == RTM_DELLINK || h->nlmsg_type == RTM_NEWADDR ||
		    h->nlmsg_type == RTM_DELADDR) {
			int err = h->nlmsg_type == RTM_DELLINK ?
					  nl_dellink(s->net, h) :
					  nl_addr(s->net, h, h->nlmsg_type == RTM_NEWADDR);

			if (err || (h->nlmsg_flags & NLM_F_ACK)) {
				nl_error(&b, h, err);
				nl_queue_locked(s, &b);
			}
			continue;
		}
		if (!(h->nlmsg_flags & NLM_F_DUMP) ||
		    (h->nlmsg_type != RTM_GETLINK && h->nlmsg_type != RTM_GETADDR &&
		     h->nlmsg_type != RTM_GETROUTE)) {
			bool change =
				h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_NEWADDR ||
				h->nlmsg_type == RTM_NEWROUTE || h->nlmsg_type == RTM_DELLINK ||
				h->nlmsg_type == RTM_DELADDR || h->nlmsg_type == RTM_DELROUTE;

			nl_error(&b, h, change ? -EPERM : -EOPNOTSUPP);
			nl_queue_locked(s, &b);
			continue;
		}
		if (h->nlmsg_type == RTM_GETLINK)
			dump_links(s, &b, h);
		else if (h->nlmsg_type == RTM_GETADDR)
			dump_addrs(s, &b, h, family);
		else
			dump_routes(s, &b, h, family);
		nl_queue_locked(s, &b);
		{
			struct nlmsghdr *d = nl_msg(&b, h, NLMSG_DONE, NLM_F_MULTI, sizeof(int));

			if (d)
				*(int *)NLMSG_DATA(d) = 0;
		}
		nl_queue_locked(s, &b);
	}
	pthread_mutex_unlock(&net_lock);
	{
		size_t total = 0;

		for (int i = 0; i < m->iovcnt; i++)
			total += m->iov[i].iov_len;
		return (ssize_t)total;
	}
}

int netlink_file_deliver(struct file *f, const void *data, size_t len)
{
	struct sock *s = file_sock(f);
	struct iovec iov = { (void *)data, len };
	struct net_msg m = { .iov = &iov, .iovcnt = 1 };
	struct {
		uint16_t family, pad;
		uint32_t pid, groups;
	} from = { AF_NETLINK, 0, 0, 0 };
	ssize_t r;

	if (!s)
		return -ENOTSOCK;
	if (s->family != AF_NETLINK)
		return -EINVAL;
	if (!len)
		return 0;
	pthread_mutex_lock(&net_lock);
	r = sock_queue_dgram_locked(s, &m, len, &from, sizeof(from), false, NULL);
	pthread_mutex_unlock(&net_lock);
	return r < 0 ? (int)r : 0;
}
