/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy in the host kernel (defence in depth, DESIGN.md section 4): cgroup v2
 * programs on connect and sendmsg for IPv4 and IPv6, attached to the sandbox's cgroup by the
 * runtime (netbpf.c). They apply the same ordered rule list as the sentry's own check
 * (sentry/net/egress.c, net_egress_rules()): the first rule that matches the destination
 * decides; no match allows. A refused connect or sendmsg fails with EPERM in the host kernel,
 * so that a subverted sentry still cannot reach the metadata address or the host's networks.
 *
 * Addresses are compared in IPv6 form (IPv4 as ::ffff:a.b.c.d); NAT64 (64:ff9b::/96) is
 * checked as the IPv4 address it embeds, as egress.c does.
 */
#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sentry/net/bpf/netbpf_rule.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * The rules in order; the first nrules entries are in use. Read-only to programs. nrules is
 * in .rodata, set by the loader before the load and frozen by it, so the walk is bounded by the
 * real count rather than the map's size.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NETBPF_MAX_RULES);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u32);
	__type(value, struct netbpf_rule);
} rules SEC(".maps");

const volatile __u32 nrules = 0;

#define VERDICT_ALLOW 1
#define VERDICT_DENY 0 /* the syscall fails with EPERM */

/* One walk of the rules: the destination and what the first matching rule decided. */
struct walk {
	__u32 a[4]; /* IPv6 form, network byte order words */
	__u16 port; /* host order */
	int verdict;
};

/*
 * bpf_loop's body for rule i: returns 1 (stop) when the rule matches, 0 to go on. The walk is
 * a bpf_loop rather than a bounded for loop because the verifier checks a callback once,
 * whereas it walks every iteration of an unrolled or bounded loop: about 9 ms per program
 * at 96 rules, at every sandbox start.
 */
static long match_rule(__u32 i, void *data)
{
	struct walk *w = data;
	__u32 key = i;
	struct netbpf_rule *r = bpf_map_lookup_elem(&rules, &key);

	if (!r || !r->used)
		return 1;
	if (r->port && r->port != w->port)
		return 0;
	if ((w->a[0] & r->mask[0]) != r->net[0] || (w->a[1] & r->mask[1]) != r->net[1] ||
	    (w->a[2] & r->mask[2]) != r->net[2] || (w->a[3] & r->mask[3]) != r->net[3])
		return 0;
	w->verdict = r->allow ? VERDICT_ALLOW : VERDICT_DENY;
	return 1;
}

/* a: the destination in IPv6 form, network byte order words; port in host order. */
static __always_inline int verdict(__u32 a[4], __u16 port)
{
	struct walk w = { .port = port, .verdict = VERDICT_ALLOW };
	__u32 n = nrules;

	w.a[0] = a[0];
	w.a[1] = a[1];
	w.a[2] = a[2];
	w.a[3] = a[3];
	/* 64:ff9b::/96 */
	if (w.a[0] == bpf_htonl(0x0064ff9b) && w.a[1] == 0 && w.a[2] == 0)
		w.a[2] = bpf_htonl(0x0000ffff);
	if (n > NETBPF_MAX_RULES)
		n = NETBPF_MAX_RULES;
	bpf_loop(n, match_rule, &w, 0);
	/* The verifier needs a return value it can prove is 0 or 1; anything else refuses. */
	return w.verdict == VERDICT_ALLOW ? VERDICT_ALLOW : VERDICT_DENY;
}

static __always_inline int check4(struct bpf_sock_addr *ctx)
{
	__u32 a[4] = { 0, 0, bpf_htonl(0x0000ffff), ctx->user_ip4 };

	return verdict(a, bpf_ntohs((__u16)ctx->user_port));
}

static __always_inline int check6(struct bpf_sock_addr *ctx)
{
	__u32 a[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };

	return verdict(a, bpf_ntohs((__u16)ctx->user_port));
}

SEC("cgroup/connect4")
int husk_connect4(struct bpf_sock_addr *ctx)
{
	return check4(ctx);
}

SEC("cgroup/connect6")
int husk_connect6(struct bpf_sock_addr *ctx)
{
	return check6(ctx);
}

SEC("cgroup/sendmsg4")
int husk_sendmsg4(struct bpf_sock_addr *ctx)
{
	return check4(ctx);
}

SEC("cgroup/sendmsg6")
int husk_sendmsg6(struct bpf_sock_addr *ctx)
{
	return check6(ctx);
}
