/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One entry of the BPF egress program's rule map, shared by the program (egress.bpf.c) and its
 * loader (netbpf.c). Addresses are 128-bit (IPv4 as ::ffff:a.b.c.d) in four 32-bit words of
 * network byte order; a destination matches when (addr & mask) == net and the port is 0 or
 * equal.
 */
#ifndef HUSK_SENTRY_NET_BPF_NETBPF_RULE_H
#define HUSK_SENTRY_NET_BPF_NETBPF_RULE_H

#include <linux/types.h>

#define NETBPF_MAX_RULES 96 /* the sentry's 64 user rules, its defaults, and room to spare */

struct netbpf_rule {
	__u32 net[4];
	__u32 mask[4];
	__u16 port; /* host order; 0: every port */
	__u8 allow;
	__u8 used; /* 0 ends the list */
};

#endif
