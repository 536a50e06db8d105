/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loopback TCP, UDP and UDP-Lite (127.0.0.0/8, ::1 and their IPv4-mapped forms) inside the
 * sentry: a bind table of ports (one per protocol, as Linux's tcp, udp and udplite tables), TCP
 * connections as pairs of sock.c streams made at connect time (no packets, no handshake), UDP
 * and UDP-Lite as datagrams queued on the receiving socket. Destinations that are not loopback
 * go to host.c through the egress policy; UDP-Lite never leaves the sandbox (ENETUNREACH).
 */
#include <errno.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/hostpoll.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/net/gateway.h"
#include "sentry/net/internal.h"

#define UDP_MAX_PAYLOAD 65507

static struct list_head inet_bound = LIST_HEAD_INIT(inet_bound); /* net_lock */

static const uint8_t v4_any[16] = { [10] = 0xff, [11] = 0xff };
static const uint8_t v6_any[16];

static bool is_mapped(const uint8_t a[16])
{
	static const uint8_t pre[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a, pre, 12);
}

bool inet_is_loopback(const uint8_t a[16])
{
	static const uint8_t lo6[16] = { [15] = 1 };

	return !memcmp(a, lo6, 16) || (is_mapped(a) && a[12] == 127);
}

bool inet_is_any(const uint8_t a[16])
{
	return !memcmp(a, v6_any, 16) || !memcmp(a, v4_any, 16);
}

int inet_parse(int fam, const void *addr, size_t len, struct inet_ep *ep)
{
	const struct sockaddr *sa = addr;

	memset(ep, 0, sizeof(*ep));
	if (len < sizeof(sa_family_t))
		return -EINVAL;
	if (fam == AF_INET) {
		const struct sockaddr_in *sin = addr;

		if (len < sizeof(*sin))
			return -EINVAL;
		if (sa->sa_family != AF_INET)
			return -EAFNOSUPPORT;
		ep->addr[10] = ep->addr[11] = 0xff;
		memcpy(ep->addr + 12, &sin->sin_addr, 4);
		ep->port = ntohs(sin->sin_port);
		ep->v4 = true;
		return 0;
	}
	if (len < sizeof(struct sockaddr_in6))
		return -EINVAL;
	if (sa->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	{
		const struct sockaddr_in6 *sin6 = addr;

		memcpy(ep->addr, &sin6->sin6_addr, 16);
		ep->port = ntohs(sin6->sin6_port);
	}
	return 0;
}

socklen_t inet_format(int fam, const struct inet_ep *ep, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (fam == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(ep->port);
		memcpy(&sin->sin_addr, ep->addr + 12, 4);
		return sizeof(*sin);
	}
	{
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ep->port);
		memcpy(&sin6->sin6_addr, ep->addr, 16);
		return sizeof(*sin6);
	}
}

void inet_sock_ep(const struct sock *s, bool peer, struct inet_ep *ep)
{
	if (peer) {
		*ep = s->pep;
		return;
	}
	*ep = s->lep;
	if (!s->bound)
		memcpy(ep->addr, s->family == AF_INET ? v4_any : v6_any, 16);
}

/* True if socket s, bound to its lep, takes traffic addressed to a. */
static bool covers(const struct sock *s, const uint8_t a[16])
{
	if (!memcmp(s->lep.addr, v6_any, 16) && s->family == AF_INET6)
		return !is_mapped(a) || !s->v6only;
	if (!memcmp(s->lep.addr, v4_any, 16))
		return is_mapped(a);
	return !memcmp(s->lep.addr, a, 16);
}

/* Would binding s to (a, port) conflict with a socket already bound? (net_lock held) */
static bool conflicts(const struct sock *s, const uint8_t a[16], uint16_t port)
{
	struct sock *o;
	struct sock probe = *s;

	memcpy(probe.lep.addr, a, 16);
	list_for_each_entry(o, &inet_bound, bind_link) {
		if (o == s || o->net != s->net || o->protocol != s->protocol || o->lep.port != port)
			continue;
		if (!covers(o, a) && !covers(&probe, o->lep.addr))
			continue;
		if (s->reuseport && o->reuseport)
			continue;
		if (s->reuseaddr && o->reuseaddr &&
		    (s->type == SOCK_DGRAM || o->state != SOCK_LISTENING))
			continue;
		return true;
	}
	return false;
}

static int bind_locked(struct sock *s, const uint8_t a[16], uint16_t port)
{
	if (s->bound)
		return -EINVAL;
	if (port == 0) {
		/* The ephemeral ports are net.ipv4.ip_local_port_range (low <= high). */
		uint32_t lo = (uint32_t)sysctl_get(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, 0);
		uint32_t range =
			(uint32_t)sysctl_get(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, 1) - lo + 1;
		uint32_t r = 0;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)(uintptr_t)s;
		for (uint32_t i = 0; i < range; i++) {
			uint16_t p = (uint16_t)(lo + (r + i) % range);

			if (!conflicts(s, a, p)) {
				port = p;
				break;
			}
		}
		if (port == 0)
			return -EADDRINUSE;
	} else if (conflicts(s, a, port)) {
		return -EADDRINUSE;
	}
	memcpy(s->lep.addr, a, 16);
	s->lep.port = port;
	s->bound = true;
	list_add_tail(&s->bind_link, &inet_bound);
	return 0;
}

int inet_autobind_locked(struct sock *s, const uint8_t local[16])
{
	uint8_t a[16];

	if (s->bound)
		return 0;
	memcpy(a, local, 16);
	if (inet_is_any(a))
		memcpy(a, s->family == AF_INET ? v4_any : v6_any, 16);
	return bind_locked(s, a, 0);
}

int inet_bind(struct sock *s, const void *addr, size_t len)
{
	struct inet_ep ep;
	struct task *t;
	int ret;

	ret = inet_parse(s->family, addr, len, &ep);
	if (ret < 0)
		return ret == -EAFNOSUPPORT && s->family == AF_INET6 ? -EINVAL : ret;
	if (s->family == AF_INET6 && is_mapped(ep.addr) && s->v6only)
		return -EINVAL;
	if (!inet_is_any(ep.addr) && !inet_is_loopback(ep.addr)) {
		/* lo's, or an address of a link of the namespace (link.c). */
		bool mine;

		pthread_mutex_lock(&net_lock);
		mine = link_addr_assigned_locked(s->net->id, ep.addr, false);
		pthread_mutex_unlock(&net_lock);
		if (!mine)
			return -EADDRNOTAVAIL;
	}
	/* ::1 is lo's only while lo is up (127/8 binds whatever lo's state, as Linux). */
	if (!is_mapped(ep.addr) && !inet_is_any(ep.addr) && !net_lo_up(s->net))
		return -EADDRNOTAVAIL;
	/* Ports below net.ipv4.ip_unprivileged_port_start need CAP_NET_BIND_SERVICE (IPv6 too) in
	 * the socket's network namespace's owner. */
	t = task_current();
	if (ep.port && ep.port < sysctl_get(SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START, 0) && t &&
	    !task_ns_capable(t, s->net->owner, CAP_NET_BIND_SERVICE))
		return -EACCES;
	if (s->family == AF_INET6 && !memcmp(ep.addr, v4_any, 16))
		memcpy(ep.addr, v4_any, 16);
	pthread_mutex_lock(&net_lock);
	ret = bind_locked(s, ep.addr, ep.port);
	if (ret == 0) {
		s->userport = ep.port != 0;
		s->useraddr = !inet_is_any(ep.addr);
	}
	pthread_mutex_unlock(&net_lock);
	return ret;
}

void inet_bind_restore_locked(struct sock *s)
{
	list_add_tail(&s->bind_link, &inet_bound);
}

void inet_unbind_locked(struct sock *s)
{
	if (s->bound && !list_empty(&s->bind_link)) {
		list_del(&s->bind_link);
		list_init(&s->bind_link);
	}
}

struct sock *inet_lookup_proto_locked(uint32_t ns, int protocol, const struct inet_ep *ep)
{
	struct sock *o, *wild = NULL;

	list_for_each_entry(o, &inet_bound, bind_link) {
		if (o->net->id != ns || o->protocol != protocol || o->lep.port != ep->port ||
		    o->closed)
			continue;
		if (protocol == IPPROTO_TCP && o->state != SOCK_LISTENING)
			continue;
		if (!covers(o, ep->addr))
			continue;
		if (!inet_is_any(o->lep.addr))
			return o;
		if (!wild)
			wild = o;
	}
	return wild;
}

void inet_for_each_proto_locked(struct net_ns *n, int protocol,
				void (*fn)(struct sock *s, void *arg), void *arg)
{
	struct sock *o;

	list_for_each_entry(o, &inet_bound, bind_link) {
		if (o->net == n && o->protocol == protocol)
			fn(o, arg);
	}
}

/*
 * What lo's state of s's namespace makes of traffic to loopback destination d: 1 when it goes
 * on, 0 when an IPv4 datagram is sent and lost (lo down), else -errno: ::1 is gone while lo is
 * down (EADDRNOTAVAIL); IPv4 loopback TCP (connect true: any connect) is unreachable while lo
 * is down, and everything IPv4 while lo never was up (no local route yet).
 */
static int lo_down_verdict(const struct sock *s, const struct inet_ep *d, bool connect)
{
	if (!inet_is_loopback(d->addr) || net_lo_up(s->net))
		return 1;
	if (!is_mapped(d->addr))
		return -EADDRNOTAVAIL;
	if (!net_lo_v4(s->net))
		return -ENETUNREACH;
	if (connect && s->type == SOCK_STREAM)
		return -ENETUNREACH;
	return connect ? 1 : 0;
}

/* The source address the sandbox uses towards loopback destination d. */
static void loopback_source(const uint8_t d[16], uint8_t src[16])
{
	static const uint8_t lo4[16] = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 };

	if (is_mapped(d)) {
		memcpy(src, lo4, 16);
	} else {
		memset(src, 0, 16);
		src[15] = 1;
	}
}

/* Local endpoint for a connection from source address src: binds s if needed, fixes its address. */
static int local_for(struct sock *s, const uint8_t src[16])
{
	int ret;

	if (!s->bound) {
		ret = inet_autobind_locked(s, src);
		if (ret < 0)
			return ret;
	}
	if (inet_is_any(s->lep.addr))
		memcpy(s->lep.addr, src, 16);
	return 0;
}

/* An endpoint as a socket of family fam sees it (IPv4 peers of IPv6 sockets are mapped). */
static struct inet_ep ep_for(int fam, const struct inet_ep *ep)
{
	struct inet_ep r = *ep;

	r.v4 = fam == AF_INET;
	return r;
}

/* Connects TCP socket s to the listener at d, from address src (net_lock held). */
static int tcp_connect_locked(struct sock *s, struct sock *l, const struct inet_ep *d,
			      const uint8_t src[16])
{
	struct sock *c;
	int ret;

	ret = local_for(s, src);
	if (ret < 0)
		return ret;
	c = sock_new(l->family, SOCK_STREAM, IPPROTO_TCP);
	if (!c)
		return -ENOMEM;
	sock_set_net(c, l->net);
	c->lep = ep_for(l->family, d);
	c->pep = ep_for(l->family, &s->lep);
	c->has_pep = true;
	c->bound = true; /* shares the listener's port; not in the bind table */
	c->nodelay = l->nodelay;
	c->keepalive = l->keepalive;
	c->rcvbuf = l->rcvbuf;
	c->sndbuf = l->sndbuf;
	/* What else an accepted socket inherits from its listener. */
	c->ttl = l->ttl;
	c->tos = l->tos;
	c->tcp_inq = l->tcp_inq;
	c->kept_mask = l->kept_mask;
	memcpy(c->kept_val, l->kept_val, sizeof(c->kept_val));
	s->pep = ep_for(s->family, d);
	s->has_pep = true;
	sock_pair_locked(s, c);
	list_add_tail(&c->acc_link, &l->acceptq); /* takes c's reference */
	l->nacceptq++;
	waitq_wake_all(&l->wq);
	waitq_wake_all(&s->wq);
	return 0;
}

/*
 * A TCP connect to the gateway's address (gateway.c): its port is served by the gateway when
 * the sandbox has one; anything else there is refused (a non-blocking connect says so through
 * SO_ERROR, as a refused loopback connect). Never a host connect.
 */
static int gateway_connect(struct sock *s, const struct inet_ep *d, bool nonblock)
{
	struct hostpoll_watch *w, *old_w = NULL;
	int fd, old_fd = -1;

	fd = d->port == NET_GATEWAY_PORT ? gateway_open() : -ECONNREFUSED;
	if (fd == -ECONNREFUSED && nonblock) {
		pthread_mutex_lock(&net_lock);
		s->so_error = ECONNREFUSED;
		s->nonblock_connect_pending = true;
		pthread_mutex_unlock(&net_lock);
		waitq_wake_all(&s->wq);
		return -EINPROGRESS;
	}
	if (fd < 0)
		return fd;
	w = hostpoll_watch(fd);
	pthread_mutex_lock(&net_lock);
	if (s->host_connected || s->state != SOCK_UNCONNECTED) {
		/* Another thread connected it meanwhile. */
		pthread_mutex_unlock(&net_lock);
		if (w)
			hostpoll_unwatch(w);
		close(fd);
		return -EISCONN;
	}
	/* A host socket left by a failed connect under --network=host is replaced. */
	old_fd = s->hostfd;
	old_w = s->watch;
	s->hostfd = fd;
	s->watch = w;
	s->host_connected = true;
	s->gateway = true;
	s->pep = ep_for(s->family, d);
	s->has_pep = true;
	pthread_mutex_unlock(&net_lock);
	if (old_w)
		hostpoll_unwatch(old_w);
	if (old_fd >= 0)
		close(old_fd);
	waitq_wake_all(&s->wq);
	return 0;
}

/*
 * Whether traffic from s to d stays in the sandbox: 1 with *ns (the id of the namespace whose
 * sockets receive it) and src (its source address); 0 when it leaves (the host, under the
 * policy, or unreachable); -EHOSTUNREACH (a link's subnet, nobody there). Takes net_lock.
 */
static int inside_route(const struct sock *s, const struct inet_ep *d, uint32_t *ns,
			uint8_t src[16])
{
	int ret = 1;

	*ns = s->net->id;
	if (inet_is_loopback(d->addr)) {
		loopback_source(d->addr, src);
		return 1;
	}
	pthread_mutex_lock(&net_lock);
	if (link_addr_assigned_locked(s->net->id, d->addr, true))
		memcpy(src, d->addr, 16); /* an address of its own: delivered in its namespace */
	else
		ret = link_route_locked(s->net->id, d->addr, ns, src);
	pthread_mutex_unlock(&net_lock);
	return ret;
}

int inet_connect(struct task *t, struct sock *s, const void *addr, size_t len, bool nonblock)
{
	const struct sockaddr *sa = addr;
	struct inet_ep d;
	struct sock *l;
	uint8_t src[16];
	uint32_t dns;
	int ret, inside;

	if (len >= sizeof(sa_family_t) && sa->sa_family == AF_UNSPEC) {
		if (s->type != SOCK_DGRAM)
			return s->hostfd >= 0 ? -EOPNOTSUPP : sock_tcp_disconnect(s);
		/* __udp_disconnect: no peer; an address the kernel chose is forgotten. */
		pthread_mutex_lock(&net_lock);
		s->has_pep = false;
		s->state = SOCK_UNCONNECTED;
		if (s->bound && !s->useraddr)
			memcpy(s->lep.addr, s->family == AF_INET ? v4_any : v6_any, 16);
		pthread_mutex_unlock(&net_lock);
		return 0;
	}
	ret = inet_parse(s->family, addr, len, &d);
	if (ret < 0)
		return ret;
	if (s->family == AF_INET6 && is_mapped(d.addr) && s->v6only)
		return -ENETUNREACH;
	if (inet_is_any(d.addr)) {
		/* Linux sends to 0.0.0.0 / :: on the local host: loopback. */
		loopback_source(d.addr, d.addr);
	}

	/* lo down: ::1 is gone (EADDRNOTAVAIL), IPv4 loopback has no route for TCP, nor for
	 * anything while lo never was up (a new namespace's). */
	ret = lo_down_verdict(s, &d, true);
	if (ret <= 0)
		return ret;
	inside = inside_route(s, &d, &dns, src);
	if (inside == -EHOSTUNREACH && s->type == SOCK_DGRAM)
		inside = 1; /* a route there: UDP connects (its datagrams are lost) */
	if (inside < 0)
		return inside;
	/* A new network namespace has its loopback and links only. */
	if (s->net->id && !inside)
		return net_lo_up(s->net) || is_mapped(d.addr) ? -ENETUNREACH : -EADDRNOTAVAIL;
	if (s->type == SOCK_DGRAM) {
		if (!inside && s->protocol == IPPROTO_UDPLITE)
			return -ENETUNREACH; /* no host sockets for UDP-Lite */
		if (!inside) {
			ret = egress_check(&d, "connect");
			if (ret < 0)
				return ret;
			ret = host_connect(t, s, &d, nonblock);
			if (ret < 0)
				return ret;
		}
		pthread_mutex_lock(&net_lock);
		ret = inside ? local_for(s, src) : 0;
		if (ret == 0) {
			s->pep = ep_for(s->family, &d);
			s->has_pep = true;
			s->state = SOCK_CONNECTED;
		}
		pthread_mutex_unlock(&net_lock);
		return ret;
	}

	pthread_mutex_lock(&net_lock);
	if (s->state == SOCK_CONNECTED || s->host_connected) {
		/* The first connect after a non-blocking one completed reports success. */
		ret = s->nonblock_connect_pending ? 0 : -EISCONN;
		s->nonblock_connect_pending = false;
		pthread_mutex_unlock(&net_lock);
		return ret;
	}
	if (s->state == SOCK_LISTENING || s->state == SOCK_DISCONNECTED) {
		pthread_mutex_unlock(&net_lock);
		return -EISCONN;
	}
	if (s->nonblock_connect_pending) {
		/* A refused non-blocking attempt: its error is in SO_ERROR; this one starts anew. */
		s->nonblock_connect_pending = false;
	}
	l = inside ? inet_lookup_proto_locked(dns, IPPROTO_TCP, &d) : NULL;
	if (l) {
		ret = tcp_connect_locked(s, l, &d, src);
		if (ret == 0 && nonblock) {
			s->nonblock_connect_pending = true;
			ret = -EINPROGRESS;
		}
		pthread_mutex_unlock(&net_lock);
		return ret;
	}
	pthread_mutex_unlock(&net_lock);

	/* A new network namespace's loopback, or a link's address, has nothing there: refused. */
	if (s->net->id || (inside && !inet_is_loopback(d.addr))) {
		if (nonblock) {
			pthread_mutex_lock(&net_lock);
			s->so_error = ECONNREFUSED;
			s->nonblock_connect_pending = true;
			pthread_mutex_unlock(&net_lock);
			waitq_wake_all(&s->wq);
			return -EINPROGRESS;
		}
		return -ECONNREFUSED;
	}
	/* The gateway's address is the sentry's in every network mode, before any policy. */
	if (gateway_addr(&d) && s->protocol == IPPROTO_TCP)
		return gateway_connect(s, &d, nonblock);
	if (inet_is_loopback(d.addr)) {
		/* The host's loopback only through an explicit --egress-allow rule. */
		struct net_egress_verdict v;

		if (net_get_mode() != NET_MODE_HOST || !net_egress_allowed(d.addr, d.port, &v) ||
		    !v.user_rule) {
			if (nonblock) {
				pthread_mutex_lock(&net_lock);
				s->so_error = ECONNREFUSED;
				s->nonblock_connect_pending = true;
				pthread_mutex_unlock(&net_lock);
				waitq_wake_all(&s->wq);
				return -EINPROGRESS;
			}
			return -ECONNREFUSED;
		}
	} else {
		ret = egress_check(&d, "connect");
		if (ret < 0)
			return ret;
	}
	return host_connect(t, s, &d, nonblock);
}

/*
 * The checksum coverage a UDP-Lite datagram of ulen bytes (header included) from s has, as its
 * header's length field (udplite_csum): what UDPLITE_SEND_CSCOV asked when it is less than the
 * datagram (0: full coverage), the whole datagram otherwise.
 */
static unsigned int udplite_cscov(const struct sock *s, size_t ulen)
{
	if (s->send_cc && s->pcslen < ulen)
		return s->pcslen;
	return (unsigned int)ulen;
}

/*
 * Whether UDP-Lite receiver r takes a datagram of ulen bytes covered by cscov, as Linux's
 * udp_queue_rcv_one_skb: with UDPLITE_RECV_CSCOV set, a partially covered datagram is dropped
 * when the coverage is less than asked, or when full coverage (0) was asked.
 */
static bool udplite_accepts(const struct sock *r, unsigned int cscov, size_t ulen)
{
	bool partial = cscov != 0 && cscov < ulen;

	if (!r->recv_cc || !partial)
		return true;
	return r->pcrlen != 0 && cscov >= r->pcrlen;
}

/* UDP (UDP-Lite) send of m to d, in the sentry: to namespace dns's sockets, from src0. */
static ssize_t udp_send_local(struct sock *s, struct net_msg *m, size_t len,
			      const struct inet_ep *d, uint32_t dns, const uint8_t src0[16])
{
	struct inet_ep src;
	struct sock *r;
	ssize_t ret;

	pthread_mutex_lock(&net_lock);
	/* An unbound sender gets a port on the wildcard (inet_autobind); a sender on the wildcard
	 * stays there and sends from the loopback address towards d. */
	ret = inet_autobind_locked(s, v6_any);
	if (ret < 0)
		goto out;
	src = s->lep;
	if (inet_is_any(src.addr))
		memcpy(src.addr, src0, 16);
	ret = (ssize_t)len;
	r = inet_lookup_proto_locked(dns, s->protocol, d);
	if (r && r->has_pep && (memcmp(r->pep.addr, src.addr, 16) || r->pep.port != src.port))
		r = NULL; /* a connected receiver takes only its peer's datagrams */
	if (!r) {
		/* ICMP port unreachable: SO_ERROR on a connected socket, or with IP_RECVERR an
		 * error queue entry too. */
		sock_port_unreachable_locked(s, m, len, d);
		goto out;
	}
	if (s->protocol == IPPROTO_UDPLITE &&
	    !udplite_accepts(r, udplite_cscov(s, len + 8), len + 8)) {
		r->drops++; /* silently, as a checksum error: the sender sees success */
		goto out;
	}
	{
		struct sockaddr_storage from;
		struct inet_ep fep = ep_for(r->family, &src);
		socklen_t fl = inet_format(r->family, &fep, &from);
		struct skb_meta meta;
		ssize_t q;

		/* The IP header's values: IPv4 takes IP_TTL/IP_TOS, IPv6 its hop limit and
		 * traffic class; a control message of the send wins. */
		memcpy(meta.dst, d->addr, 16);
		if (is_mapped(d->addr)) {
			meta.ttl = s->ttl;
			meta.tos = s->tos;
		} else {
			meta.ttl = s->hops6 < 0 ? 64 : s->hops6;
			meta.tos = s->tclass;
		}
		if (m->has_ttl)
			meta.ttl = m->ttl;
		if (m->has_tos)
			meta.tos = m->tos;
		/* A full queue drops the datagram, as UDP does. */
		q = sock_queue_inet_dgram_locked(r, m, len, &from, fl, &meta);
		if (q == -ENOMEM)
			ret = -ENOMEM;
		else if (q < 0)
			r->drops++;
	}
out:
	pthread_mutex_unlock(&net_lock);
	return ret;
}

ssize_t inet_sendto(struct task *t, struct sock *s, struct net_msg *m, int flags)
{
	size_t len = 0;
	struct inet_ep d;
	uint8_t src[16];
	uint32_t dns;
	int ret;

	for (int i = 0; i < m->iovcnt; i++)
		len += m->iov[i].iov_len;
	if (m->nfiles)
		return -EINVAL;
	if (s->type == SOCK_STREAM) {
		/*
		 * TCP Fast Open (sendto with MSG_FASTOPEN and an address on a socket not yet
		 * connected): a connect first, through the same checks as connect(2) (the egress
		 * policy, ENETUNREACH without a network), then the send. sys_sendto's first try
		 * is always MSG_DONTWAIT: a loopback connect is made at once all the same (then
		 * its EINPROGRESS is dropped); a host connect still in progress is EINPROGRESS,
		 * as Linux's without a cookie, even for a blocking socket (Linux waits there).
		 */
		if ((flags & MSG_FASTOPEN) && m->name && m->namelen &&
		    !(s->hostfd >= 0 && s->host_connected) && s->state != SOCK_CONNECTED) {
			ret = inet_connect(t, s, m->name, m->namelen, flags & MSG_DONTWAIT);
			if (ret == -EINPROGRESS) {
				pthread_mutex_lock(&net_lock);
				if (s->state == SOCK_CONNECTED && !s->so_error) {
					s->nonblock_connect_pending = false;
					ret = 0;
				}
				pthread_mutex_unlock(&net_lock);
			}
			if (ret < 0)
				return ret;
		}
		if (s->hostfd >= 0 && s->host_connected)
			return host_sendmsg(t, s, m, flags & ~MSG_FASTOPEN, NULL);
		if (s->nonblock_connect_pending) {
			pthread_mutex_lock(&net_lock);
			s->nonblock_connect_pending = false;
			pthread_mutex_unlock(&net_lock);
		}
		return sock_conn_send(t, s, m, flags & ~MSG_FASTOPEN);
	}
	if (len > UDP_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (m->name && m->namelen) {
		ret = inet_parse(s->family, m->name, m->namelen, &d);
		if (ret < 0)
			return ret;
		if (inet_is_any(d.addr))
			loopback_source(d.addr, d.addr);
	} else {
		pthread_mutex_lock(&net_lock);
		d = s->pep;
		ret = s->has_pep ? 0 : -EDESTADDRREQ;
		if (ret == 0 && s->so_error) {
			ret = -s->so_error;
			s->so_error = 0;
		}
		pthread_mutex_unlock(&net_lock);
		if (ret < 0)
			return ret;
		if (s->host_connected)
			return host_sendmsg(t, s, m, flags, NULL);
	}
	if (s->family == AF_INET6 && is_mapped(d.addr) && s->v6only)
		return -ENETUNREACH;
	if (__atomic_load_n(&s->snd_shut, __ATOMIC_RELAXED))
		return -EPIPE; /* shut down for writing; no SIGPIPE for datagrams */
	ret = lo_down_verdict(s, &d, false);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return (ssize_t)len; /* lost on a down lo */
	ret = inside_route(s, &d, &dns, src);
	if (ret == -EHOSTUNREACH)
		return (ssize_t)len; /* nobody answers on the link: lost */
	if (ret > 0)
		return udp_send_local(s, m, len, &d, dns, src);
	/* A new network namespace has its loopback and links only. */
	if (s->net->id)
		return net_lo_up(s->net) || is_mapped(d.addr) ? -ENETUNREACH : -EADDRNOTAVAIL;
	if (s->protocol == IPPROTO_UDPLITE)
		return -ENETUNREACH; /* no host sockets for UDP-Lite */
	ret = egress_check(&d, "sendto");
	if (ret < 0)
		return ret;
	return host_sendmsg(t, s, m, flags, &d);
}
