/* SPDX-License-Identifier: Apache-2.0 */
/*
 * veth pairs between the sandbox's network namespaces (issue 17): `ip link add A type veth peer
 * name B`, `ip link set B netns PID`, IPv4 addresses (`ip addr add 10.0.0.1/24 dev A`) and the
 * connected route of each. No packets: a TCP connect or UDP send to an address of the connected
 * subnet of an up link whose peer is up and holds that address is delivered in the peer's
 * namespace, as loopback traffic is in one namespace (inet_loopback.c asks link_route_locked).
 *
 * Links are tagged with the id of their namespace (nsproxy.h), not a pointer: a namespace does
 * not know its links. When a namespace goes, nsproxy.c's net_ns_put tells net_ns_exit its id
 * (under dead_lock only: it may run under net_lock), and the next link operation deletes its
 * links with their peers, as Linux deletes a veth pair whose one end's namespace is gone.
 *
 * Lock: net_lock protects the list and every link; dead_lock (a leaf, taken under net_lock or
 * alone) the list of dead namespace ids.
 */
#include <errno.h>
#include <linux/capability.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/net/internal.h"

static NET_LIST(links); /* net_lock */
static int next_index = 2; /* net_lock: lo is 1 in every namespace */

static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *dead_ids; /* dead_lock */
static size_t ndead, dead_cap;

void net_ns_exit(uint32_t id)
{
	pthread_mutex_lock(&dead_lock);
	if (ndead == dead_cap) {
		size_t cap = dead_cap ? dead_cap * 2 : 16;
		uint32_t *n = realloc(dead_ids, cap * sizeof(*n));

		if (n) {
			dead_ids = n;
			dead_cap = cap;
		}
	}
	if (ndead < dead_cap)
		dead_ids[ndead++] = id;
	pthread_mutex_unlock(&dead_lock);
}

static void link_free_locked(struct net_link *l)
{
	list_del(&l->link);
	free(l);
}

/* Deletes l and its peer (net_lock held). */
static void pair_delete_locked(struct net_link *l)
{
	struct net_link *p = l->peer;

	link_free_locked(l);
	if (p)
		link_free_locked(p);
}

/* Deletes the links of namespaces that are gone (net_lock held). */
static void reap_locked(void)
{
	uint32_t ids[64];
	size_t n;

	for (;;) {
		pthread_mutex_lock(&dead_lock);
		n = MIN(ndead, ARRAY_SIZE(ids));
		memcpy(ids, dead_ids + (ndead - n), n * sizeof(ids[0]));
		ndead -= n;
		pthread_mutex_unlock(&dead_lock);
		if (!n)
			return;
		for (size_t i = 0; i < n; i++) {
			struct net_link *l, *tmp;

again:
			list_for_each_entry_safe(l, tmp, &links, link) {
				if (l->ns_id == ids[i]) {
					pair_delete_locked(l);
					goto again; /* tmp may have been the peer */
				}
			}
		}
	}
}

struct net_link *link_find_locked(uint32_t ns, const char *name, int index)
{
	struct net_link *l;

	reap_locked();
	list_for_each_entry(l, &links, link) {
		if (l->ns_id != ns)
			continue;
		if (name ? !strcmp(l->name, name) : l->index == index)
			return l;
	}
	return NULL;
}

void link_for_each_locked(uint32_t ns, void (*fn)(struct net_link *l, void *arg), void *arg)
{
	struct net_link *l;

	reap_locked();
	list_for_each_entry(l, &links, link) {
		if (l->ns_id == ns)
			fn(l, arg);
	}
}

static struct net_link *link_new_locked(uint32_t ns, const char *name)
{
	struct net_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->ns_id = ns;
	l->index = next_index++;
	snprintf(l->name, sizeof(l->name), "%s", name);
	/* A locally administered unicast address, unique in the sandbox. */
	l->mac[0] = 0x02;
	l->mac[1] = 0x48;
	l->mac[2] = (uint8_t)(l->index >> 24);
	l->mac[3] = (uint8_t)(l->index >> 16);
	l->mac[4] = (uint8_t)(l->index >> 8);
	l->mac[5] = (uint8_t)l->index;
	list_add_tail(&l->link, &links);
	return l;
}

int link_veth_create_locked(uint32_t ns, const char *name, const char *peer_name)
{
	struct net_link *a, *b;

	if (!*name || !*peer_name)
		return -EINVAL; /* netlink.c names them */
	if (!strcmp(name, peer_name) || !strcmp(name, "lo") || !strcmp(peer_name, "lo") ||
	    link_find_locked(ns, name, 0) || link_find_locked(ns, peer_name, 0))
		return -EEXIST;
	/* The peer first, as Linux's veth_newlink (it gets the lower index). */
	b = link_new_locked(ns, peer_name);
	a = b ? link_new_locked(ns, name) : NULL;
	if (!a) {
		if (b)
			link_free_locked(b);
		return -ENOMEM;
	}
	a->peer = b;
	b->peer = a;
	return 0;
}

void link_delete_locked(struct net_link *l)
{
	pair_delete_locked(l);
}

int link_move_locked(struct net_link *l, uint32_t ns)
{
	struct net_link *o;

	if (l->ns_id == ns)
		return 0;
	list_for_each_entry(o, &links, link) {
		if (o->ns_id == ns && !strcmp(o->name, l->name))
			return -EEXIST;
	}
	/* Linux's dev_change_net_namespace: the link goes down and loses its addresses. */
	l->ns_id = ns;
	l->up = false;
	l->was_up = false;
	l->naddr = 0;
	return 0;
}

bool link_carrier(const struct net_link *l)
{
	return l->up && l->peer && l->peer->up;
}

static bool in_prefix(const uint8_t a[4], const uint8_t net[4], int prefix)
{
	uint32_t x = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
	uint32_t y = (uint32_t)net[0] << 24 | (uint32_t)net[1] << 16 | (uint32_t)net[2] << 8 |
		     net[3];
	uint32_t mask = prefix ? ~0u << (32 - prefix) : 0;

	return (x & mask) == (y & mask);
}

int link_addr_add_locked(struct net_link *l, const uint8_t a[4], int prefix)
{
	if (prefix < 0 || prefix > 32)
		return -EINVAL;
	for (int i = 0; i < l->naddr; i++) {
		if (!memcmp(l->addr[i].a, a, 4))
			return -EEXIST;
	}
	if (l->naddr >= LINK_MAX_ADDRS)
		return -ENOSPC;
	memcpy(l->addr[l->naddr].a, a, 4);
	l->addr[l->naddr].prefix = (uint8_t)prefix;
	l->naddr++;
	return 0;
}

int link_addr_del_locked(struct net_link *l, const uint8_t a[4])
{
	for (int i = 0; i < l->naddr; i++) {
		if (!memcmp(l->addr[i].a, a, 4)) {
			l->addr[i] = l->addr[--l->naddr];
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

/* The link of ns holding IPv4 address a (up ones only when up), or NULL (net_lock held). */
static struct net_link *holder_locked(uint32_t ns, const uint8_t a[4], bool up)
{
	struct net_link *l;

	list_for_each_entry(l, &links, link) {
		if (l->ns_id != ns || (up && !l->up))
			continue;
		for (int i = 0; i < l->naddr; i++) {
			if (!memcmp(l->addr[i].a, a, 4))
				return l;
		}
	}
	return NULL;
}

static bool mapped4(const uint8_t a[16])
{
	static const uint8_t pre[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a, pre, 12);
}

bool link_addr_assigned_locked(uint32_t ns, const uint8_t a[16], bool up)
{
	if (!mapped4(a) || list_empty(&links))
		return false;
	reap_locked();
	return holder_locked(ns, a + 12, up) != NULL;
}

int link_route_locked(uint32_t ns, const uint8_t d[16], uint32_t *dst_ns, uint8_t src[16])
{
	struct net_link *l;

	if (!mapped4(d) || list_empty(&links))
		return 0;
	reap_locked();
	list_for_each_entry(l, &links, link) {
		if (l->ns_id != ns || !l->up)
			continue;
		for (int i = 0; i < l->naddr; i++) {
			if (!in_prefix(d + 12, l->addr[i].a, l->addr[i].prefix))
				continue;
			*dst_ns = l->peer ? l->peer->ns_id : ns;
			memset(src, 0, 16);
			src[10] = src[11] = 0xff;
			memcpy(src + 12, l->addr[i].a, 4);
			/* The connected subnet of l: the peer answers for its own addresses. */
			if (!link_carrier(l) ||
			    holder_locked(l->peer->ns_id, d + 12, true) != l->peer)
				return -EHOSTUNREACH;
			return 1;
		}
	}
	return 0;
}
