/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket options the sentry keeps without applying them: tuning of IP, IPv6 and TCP that has no
 * meaning for in-memory loopback traffic (multicast, path MTU, keepalive timers, corking...).
 * getsockopt gives Linux's default until setsockopt stores a value, which it then gives back,
 * after the range checks Linux makes; a program that sets and reads them sees what Linux shows.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/util.h"
#include "sentry/net/internal.h"

struct kept_opt {
	int level, name;
	int dflt, dflt_v6; /* the default on AF_INET and AF_INET6 sockets */
	int min, max; /* the values setsockopt takes (EINVAL outside); min > max: read only */
	bool boolean; /* stored as 0 or 1 */
};

#define BOOL_OPT(l, n, d)                          \
	{                                          \
		l, n, d, d, INT_MIN, INT_MAX, true \
	}
#define INT_OPT(l, n, d, lo, hi)          \
	{                                 \
		l, n, d, d, lo, hi, false \
	}
#define RO_OPT(l, n, d)                 \
	{                               \
		l, n, d, d, 1, 0, false \
	}

static const struct kept_opt kept[] = {
	RO_OPT(IPPROTO_IP, IP_HDRINCL, 0), /* raw sockets only: setting it is ENOPROTOOPT */
	RO_OPT(IPPROTO_IP, IP_MULTICAST_IF, 0),
	BOOL_OPT(IPPROTO_IP, IP_RECVOPTS, 0),
	BOOL_OPT(IPPROTO_IP, IP_FREEBIND, 0),
	BOOL_OPT(IPPROTO_IP, IP_TRANSPARENT, 0),
	BOOL_OPT(IPPROTO_IP, IP_MULTICAST_LOOP, 1),
	BOOL_OPT(IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 0),
	BOOL_OPT(IPPROTO_IP, IP_RECVORIGDSTADDR, 0),
	{ IPPROTO_IP, IP_MULTICAST_ALL, 1, 0, INT_MIN, INT_MAX, true },
	INT_OPT(IPPROTO_IPV6, IPV6_MULTICAST_HOPS, 1, -1, 255),
	INT_OPT(IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1, 0, 1),
	INT_OPT(IPPROTO_IPV6, IPV6_MTU_DISCOVER, 1, 0, 5),
	INT_OPT(IPPROTO_IPV6, IPV6_MULTICAST_IF, 0, INT_MIN, INT_MAX),
	BOOL_OPT(IPPROTO_IPV6, IPV6_DONTFRAG, 0),
	BOOL_OPT(IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, 0),
	BOOL_OPT(IPPROTO_IPV6, IPV6_FREEBIND, 0),
	INT_OPT(IPPROTO_TCP, TCP_SYNCNT, 6, 1, 127),
	INT_OPT(IPPROTO_TCP, TCP_LINGER2, 60, INT_MIN, INT_MAX),
	INT_OPT(IPPROTO_TCP, TCP_WINDOW_CLAMP, 0, 0, INT_MAX),
	BOOL_OPT(IPPROTO_TCP, TCP_QUICKACK, 1),
	INT_OPT(IPPROTO_TCP, TCP_NOTSENT_LOWAT, 0, INT_MIN, INT_MAX),
	INT_OPT(IPPROTO_TCP, 37 /* TCP_TX_DELAY */, 0, 0, INT_MAX),
	BOOL_OPT(IPPROTO_TCP, TCP_CORK, 0),
	INT_OPT(IPPROTO_TCP, TCP_USER_TIMEOUT, 0, 0, INT_MAX),
	INT_OPT(IPPROTO_TCP, TCP_FASTOPEN, 0, 0, INT_MAX),
	INT_OPT(IPPROTO_TCP, TCP_KEEPIDLE, 7200, 1, 32767),
	INT_OPT(IPPROTO_TCP, TCP_KEEPINTVL, 75, 1, 32767),
	INT_OPT(IPPROTO_TCP, TCP_KEEPCNT, 9, 1, 127),
};

_Static_assert(ARRAY_SIZE(kept) <= SOCK_KEPT_MAX, "struct sock's kept_val is too small");

static int kept_index(int level, int name)
{
	for (size_t i = 0; i < ARRAY_SIZE(kept); i++)
		if (kept[i].level == level && kept[i].name == name)
			return (int)i;
	return -1;
}

int sock_kept_setopt_locked(struct sock *s, int level, int name, int v)
{
	int i = kept_index(level, name);
	const struct kept_opt *k;

	if (i < 0)
		return -ENOENT;
	k = &kept[i];
	if (k->min > k->max)
		return -ENOPROTOOPT;
	if (v < k->min || v > k->max)
		return -EINVAL;
	if (level == IPPROTO_IPV6 && name == IPV6_MULTICAST_HOPS && v == -1)
		v = 1;
	s->kept_val[i] = k->boolean ? v != 0 : v;
	s->kept_mask |= 1ULL << i;
	return 0;
}

int sock_kept_getopt_locked(const struct sock *s, int level, int name, int *v)
{
	int i = kept_index(level, name);

	if (i < 0)
		return -ENOENT;
	if (s->kept_mask & (1ULL << i))
		*v = s->kept_val[i];
	else
		*v = s->family == AF_INET6 ? kept[i].dflt_v6 : kept[i].dflt;
	return 0;
}
