/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SIOCGIF* ioctls of sockets: the sandbox's interfaces as netdevice(7) describes them. The
 * sandbox has one interface, lo (index 1, 127.0.0.1/8), in every network mode: with
 * --network=host the host's interfaces stay the host's, and netlink.c shows the same single
 * interface. Linux answers these on a socket of any family, except the address queries, which
 * only AF_INET sockets take (devinet_ioctl); the others get ENOTTY there.
 *
 * lo can be taken down and up (SIOCSIFFLAGS here, RTM_NEWLINK in netlink.c), with
 * CAP_NET_ADMIN: while it is down, IPv4 loopback connections are unreachable, IPv4 datagrams
 * are lost and ::1 is gone, as on Linux (inet_loopback.c asks net_lo_up()). Each network
 * namespace has its lo (struct net_ns): a socket's ioctls describe the one of the namespace it
 * was made in, as Linux's sock_net. A new namespace's lo is down and has no address until it is
 * first taken up.
 */
#include <errno.h>
#include <linux/capability.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <string.h>

#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/net/internal.h"

/* Linux's ENOIOCTLCMD (not in the host's errno.h). */
#include "include/abi/linux/errno.h"

struct netif {
	const char *name;
	int index;
	short flags;
	int mtu;
	unsigned short hwtype;
	uint8_t addr[4], netmask[4]; /* IPv4 address of the interface */
};

static const struct netif netifs[] = {
	{
		.name = "lo",
		.index = 1,
		.flags = IFF_LOOPBACK, /* and IFF_UP | IFF_RUNNING while up */
		.mtu = 65536,
		.hwtype = ARPHRD_LOOPBACK,
		.addr = { 127, 0, 0, 1 },
		.netmask = { 255, 0, 0, 0 },
	},
};

#define NR_NETIFS ((int)(sizeof(netifs) / sizeof(netifs[0])))

struct net_ns *task_net(struct task *t)
{
	return task_nsproxy(t)->net;
}

bool net_lo_up(struct net_ns *n)
{
	return __atomic_load_n(&n->lo_up, __ATOMIC_RELAXED);
}

bool net_lo_v4(struct net_ns *n)
{
	return __atomic_load_n(&n->lo_v4, __ATOMIC_RELAXED);
}

int net_lo_set_up(struct task *t, struct net_ns *n, const char *name, int index, bool up)
{
	/* Linux's dev_change_flags callers: CAP_NET_ADMIN in the namespace's owner. */
	if (t && !task_ns_capable(t, n->owner, CAP_NET_ADMIN))
		return -EPERM;
	if (name ? strcmp(name, "lo") != 0 : index != 1)
		return -ENODEV;
	/* lo's first up gives it 127.0.0.1/8, which stays when it goes down again. */
	if (up)
		__atomic_store_n(&n->lo_v4, true, __ATOMIC_RELAXED);
	__atomic_store_n(&n->lo_up, up, __ATOMIC_RELAXED);
	return 0;
}

static const struct netif *netif_by_name(const char *name)
{
	for (int i = 0; i < NR_NETIFS; i++)
		if (!strcmp(netifs[i].name, name))
			return &netifs[i];
	return NULL;
}

static const struct netif *netif_by_index(int index)
{
	for (int i = 0; i < NR_NETIFS; i++)
		if (netifs[i].index == index)
			return &netifs[i];
	return NULL;
}

static void put_inet(struct sockaddr *sa, const uint8_t a[4])
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	memcpy(&sin.sin_addr, a, 4);
	memcpy(sa, &sin, sizeof(sin));
}

/* SIOCGIFCONF: one struct ifreq per IPv4 address, or the length needed when ifc_buf is NULL. */
static long if_conf(struct net_ns *n, struct task *t, uint64_t arg)
{
	struct ifconf ifc;
	uint64_t buf;
	int len, done = 0;

	if (mm_copy_in(t->mm, &ifc, arg, sizeof(ifc)) != sizeof(ifc))
		return -EFAULT;
	buf = (uint64_t)(uintptr_t)ifc.ifc_buf;
	len = ifc.ifc_len;
	if (!net_lo_v4(n)) {
		done = 0; /* lo has no IPv4 address yet */
	} else if (!buf) {
		done = NR_NETIFS * (int)sizeof(struct ifreq);
	} else {
		for (int i = 0; i < NR_NETIFS && len - done >= (int)sizeof(struct ifreq); i++) {
			struct ifreq r;

			memset(&r, 0, sizeof(r));
			strncpy(r.ifr_name, netifs[i].name, IFNAMSIZ - 1);
			put_inet(&r.ifr_addr, netifs[i].addr);
			if (mm_copy_out(t->mm, buf + (uint64_t)done, &r, sizeof(r)) != sizeof(r))
				return -EFAULT;
			done += (int)sizeof(r);
		}
	}
	ifc.ifc_len = done;
	if (mm_copy_out(t->mm, arg, &ifc, sizeof(ifc.ifc_len)) != sizeof(ifc.ifc_len))
		return -EFAULT;
	return 0;
}

long net_if_ioctl(struct sock *s, struct task *t, unsigned int cmd, uint64_t arg)
{
	const struct netif *nif;
	struct ifreq r;

	switch (cmd) {
	case SIOCGIFCONF:
		return if_conf(s->net, t, arg);
	case SIOCSIFFLAGS:
		/* dev_ioctl: the capability before the name. */
		if (!task_ns_capable(t, s->net->owner, CAP_NET_ADMIN))
			return -EPERM;
		if (mm_copy_in(t->mm, &r, arg, sizeof(r)) != sizeof(r))
			return -EFAULT;
		r.ifr_name[IFNAMSIZ - 1] = '\0';
		return net_lo_set_up(t, s->net, r.ifr_name, 0, r.ifr_flags & IFF_UP);
	case SIOCGIFFLAGS:
	case SIOCGIFADDR:
	case SIOCGIFNETMASK:
	case SIOCGIFBRDADDR:
	case SIOCGIFINDEX:
	case SIOCGIFNAME:
	case SIOCGIFMTU:
	case SIOCGIFHWADDR:
		break;
	default:
		return -ENOIOCTLCMD;
	}
	if (mm_copy_in(t->mm, &r, arg, sizeof(r)) != sizeof(r))
		return -EFAULT;
	r.ifr_name[IFNAMSIZ - 1] = '\0';
	if (cmd == SIOCGIFNAME) {
		nif = netif_by_index(r.ifr_ifindex);
		if (!nif)
			return -ENODEV;
		memset(r.ifr_name, 0, sizeof(r.ifr_name));
		strncpy(r.ifr_name, nif->name, IFNAMSIZ - 1);
	} else {
		bool inet_query = cmd == SIOCGIFADDR || cmd == SIOCGIFNETMASK ||
				  cmd == SIOCGIFBRDADDR;

		if (inet_query && s->family != AF_INET)
			return -ENOTTY;
		nif = netif_by_name(r.ifr_name);
		if (!nif)
			return -ENODEV;
		if (inet_query && !net_lo_v4(s->net))
			return -EADDRNOTAVAIL; /* devinet_ioctl: no address on it */
		switch (cmd) {
		case SIOCGIFFLAGS:
			r.ifr_flags = nif->flags;
			if (net_lo_up(s->net))
				r.ifr_flags |= IFF_UP | IFF_RUNNING;
			break;
		case SIOCGIFADDR:
			put_inet(&r.ifr_addr, nif->addr);
			break;
		case SIOCGIFNETMASK:
			put_inet(&r.ifr_netmask, nif->netmask);
			break;
		case SIOCGIFBRDADDR: {
			/* lo has no broadcast address: Linux answers 0.0.0.0. */
			static const uint8_t none[4];

			put_inet(&r.ifr_broadaddr, none);
			break;
		}
		case SIOCGIFINDEX:
			r.ifr_ifindex = nif->index;
			break;
		case SIOCGIFMTU:
			r.ifr_mtu = nif->mtu;
			break;
		case SIOCGIFHWADDR:
			memset(&r.ifr_hwaddr, 0, sizeof(r.ifr_hwaddr));
			r.ifr_hwaddr.sa_family = nif->hwtype;
			break;
		}
	}
	if (mm_copy_out(t->mm, arg, &r, sizeof(r)) != sizeof(r))
		return -EFAULT;
	return 0;
}
