/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NETLINK_ROUTE, read-only: dumps of the sandbox's interfaces (RTM_GETLINK: lo), addresses
 * (RTM_GETADDR: 127.0.0.1/8 and ::1/128) and routes (RTM_GETROUTE: the local routes of lo).
 * Each request queues its answer on the socket as datagrams, ending with NLMSG_DONE. RTM_NEWLINK
 * takes lo up or down (IFF_UP, as `ip link set lo up`; CAP_NET_ADMIN); other requests that
 * change anything get an NLMSG_ERROR of EPERM, others EOPNOTSUPP.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/util.h"
#include "sentry/kernel/current.h"
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

static void dump_links(struct net_ns *n, struct nlbuf *b, const struct nlmsghdr *req, int flags)
{
	struct nlmsghdr *h = nl_msg(b, req, RTM_NEWLINK, flags, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifi;
	uint32_t mtu = 65536, txq = 1000, group = 0;
	uint8_t mac[6] = { 0 };
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
	nl_attr(b, h, IFLA_ADDRESS, mac, sizeof(mac));
	nl_attr(b, h, IFLA_BROADCAST, mac, sizeof(mac));
}

/* Permanent addresses' lifetimes ("valid_lft forever preferred_lft forever"). */
static void nl_cacheinfo(struct nlbuf *b, struct nlmsghdr *h)
{
	struct ifa_cacheinfo ci = { .ifa_prefered = 0xFFFFFFFFu, .ifa_valid = 0xFFFFFFFFu };

	nl_attr(b, h, IFA_CACHEINFO, &ci, sizeof(ci));
}

static void dump_addrs(struct net_ns *n, struct nlbuf *b, const struct nlmsghdr *req, int family)
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

static void dump_routes(struct net_ns *n, struct nlbuf *b, const struct nlmsghdr *req, int family)
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
static int nl_link_of(const struct nlmsghdr *h, bool only_name)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	char name[16] = "";
	bool by_name = false;
	int len;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return -EINVAL;
	len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_IFNAME) {
			size_t n = MIN(RTA_PAYLOAD(a), sizeof(name) - 1);

			memcpy(name, RTA_DATA(a), n);
			name[n] = '\0';
			by_name = true;
		} else if (only_name) {
			return -EOPNOTSUPP;
		}
	}
	if (ifi->ifi_index)
		return ifi->ifi_index == 1 ? 0 : -ENODEV;
	return by_name && !strcmp(name, "lo") ? 0 : -ENODEV;
}

static int nl_newlink(struct net_ns *n, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct task *ct = task_current();
	bool up = net_lo_up(n);
	int ret;

	if (ct && !task_ns_capable(ct, n->owner, CAP_NET_ADMIN))
		return -EPERM;
	ret = nl_link_of(h, true);
	if (ret < 0)
		return ret;
	if (ifi->ifi_change ? (ifi->ifi_change & IFF_UP) : ifi->ifi_flags != 0)
		up = ifi->ifi_flags & IFF_UP;
	return net_lo_set_up(NULL, n, NULL, 1, up);
}

ssize_t netlink_sendmsg(struct sock *s, struct net_msg *m)
{
	static struct nlbuf b; /* net_lock */
	uint8_t req[1024];
	size_t len = 0;

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
			int err = nl_link_of(h, false);

			if (err == 0)
				dump_links(s->net, &b, h, 0);
			if (err || (h->nlmsg_flags & NLM_F_ACK))
				nl_error(&b, h, err);
			nl_queue_locked(s, &b);
			continue;
		}
		if (h->nlmsg_type == RTM_NEWLINK) {
			int err = nl_newlink(s->net, h);

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
			dump_links(s->net, &b, h, NLM_F_MULTI);
		else if (h->nlmsg_type == RTM_GETADDR)
			dump_addrs(s->net, &b, h, family);
		else
			dump_routes(s->net, &b, h, family);
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
