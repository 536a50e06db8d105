/* SPDX-License-Identifier: Apache-2.0 */
/* The egress policy: default denies in every address form, rules, ports, order, parse errors. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "sentry/net/net.h"

/* The 16-byte form of a textual IPv4 or IPv6 address. */
static void addr16(const char *s, uint8_t a[16])
{
	struct in_addr v4;

	memset(a, 0, 16);
	if (inet_pton(AF_INET, s, &v4) == 1) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &v4, 4);
		return;
	}
	cr_assert_eq(inet_pton(AF_INET6, s, a), 1, "bad test address %s", s);
}

static bool allowed(const char *s, uint16_t port)
{
	uint8_t a[16];

	addr16(s, a);
	return net_egress_allowed(a, port, NULL);
}

static void reset(void)
{
	net_egress_reset();
}

TestSuite(net_egress, .init = reset);

Test(net_egress, default_denies_metadata_private_loopback_and_their_mapped_forms)
{
	static const char *const denied[] = {
		"169.254.169.254",
		"::ffff:169.254.169.254",
		"10.1.2.3",
		"172.16.0.1",
		"172.31.255.255",
		"192.168.1.1",
		"127.0.0.1",
		"127.255.0.9",
		"0.0.0.0",
		"100.64.0.1",
		"224.0.0.1",
		"255.255.255.255",
		"::1",
		"::",
		"fc00::1",
		"fd12:3456::1",
		"fe80::1",
		"ff02::1",
		"::ffff:10.0.0.1",
		"::ffff:127.0.0.1",
		"64:ff9b::a9fe:a9fe", /* NAT64 embedding 169.254.169.254 */
	};

	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		cr_expect_not(allowed(denied[i], 80), "%s should be denied", denied[i]);
}

Test(net_egress, default_allows_public_addresses)
{
	cr_expect(allowed("203.0.113.10", 8080));
	cr_expect(allowed("172.32.0.1", 443)); /* just past 172.16/12 */
	cr_expect(allowed("100.128.0.1", 443)); /* just past 100.64/10 */
	cr_expect(allowed("2001:db8::1", 443));
	cr_expect(allowed("::ffff:203.0.113.10", 80));
}

Test(net_egress, verdict_names_the_rule)
{
	struct net_egress_verdict v;
	uint8_t a[16];

	addr16("169.254.169.254", a);
	cr_assert_not(net_egress_allowed(a, 80, &v));
	cr_expect_str_eq(v.rule, "default deny 169.254.0.0/16");
	cr_expect_not(v.user_rule);
	cr_assert_eq(net_egress_add("169.254.169.254/32", true), 0);
	cr_assert(net_egress_allowed(a, 80, &v));
	cr_expect(v.user_rule);
	cr_expect_str_eq(v.rule, "--egress-allow 169.254.169.254/32");
}

Test(net_egress, allow_with_port_opens_that_port_only)
{
	cr_assert_eq(net_egress_add("127.0.0.1/32:18080", true), 0);
	cr_expect(allowed("127.0.0.1", 18080));
	cr_expect_not(allowed("127.0.0.1", 18081));
	cr_expect_not(allowed("127.0.0.2", 18080));
	cr_expect(allowed("::ffff:127.0.0.1", 18080));
}

Test(net_egress, later_rule_wins)
{
	cr_assert_eq(net_egress_add("203.0.113.0/24", false), 0);
	cr_expect_not(allowed("203.0.113.10", 80));
	cr_assert_eq(net_egress_add("203.0.113.10", true), 0);
	cr_expect(allowed("203.0.113.10", 80));
	cr_expect_not(allowed("203.0.113.11", 80));
}

Test(net_egress, ipv6_rules_with_and_without_ports)
{
	cr_assert_eq(net_egress_add("[fd00::53]:53", true), 0);
	cr_expect(allowed("fd00::53", 53));
	cr_expect_not(allowed("fd00::53", 54));
	cr_assert_eq(net_egress_add("[fe80::]/64:8080", true), 0);
	cr_expect(allowed("fe80::1234", 8080));
	cr_expect_not(allowed("fe80::1234", 80));
	cr_assert_eq(net_egress_add("2001:db8::/32", false), 0);
	cr_expect_not(allowed("2001:db8:1::1", 443));
}

Test(net_egress, malformed_rules_are_rejected)
{
	static const char *const bad[] = {
		"",	     "300.1.2.3/8", "10.0.0.0/33",   "10.0.0.0/-1",
		"10.0.0.0/", "1.2.3.4:0",   "1.2.3.4:65536", "1.2.3.4:x",
		"[::1",	     "::1/129",	    "[::1]:",	     "example.com",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(net_egress_add(bad[i], true), -EINVAL, "%s accepted", bad[i]);
}

Test(net_egress, mode_names)
{
	cr_expect_eq(net_set_mode("host"), 0);
	cr_expect_eq(net_get_mode(), NET_MODE_HOST);
	cr_expect_eq(net_set_mode("none"), 0);
	cr_expect_eq(net_get_mode(), NET_MODE_NONE);
	cr_expect_eq(net_set_mode("bridge"), -EINVAL);
}

/* The first matching rule of the exported list, as the BPF program walks it (no match: allow). */
static bool walk_rules(const struct net_egress_rule *r, int n, const char *s, uint16_t port)
{
	uint8_t a[16];

	addr16(s, a);
	for (int i = 0; i < n; i++) {
		int full = r[i].prefix / 8, rest = r[i].prefix % 8;

		if (r[i].port && r[i].port != port)
			continue;
		if (memcmp(r[i].addr, a, (size_t)full))
			continue;
		if (rest && (a[full] & (uint8_t)(0xff << (8 - rest))) != r[i].addr[full])
			continue;
		return r[i].allow;
	}
	return true;
}

Test(net_egress, exported_rules_list_newest_user_rule_first_then_default_denials)
{
	struct net_egress_rule r[96];
	uint8_t meta[16];
	int n;

	cr_assert_eq(net_egress_add("169.254.169.254/32:80", true), 0);
	cr_assert_eq(net_egress_add("203.0.113.0/24", false), 0);
	n = net_egress_rules(r, 96);
	cr_assert_eq(n, 2 + 14);
	cr_expect_eq(r[0].prefix, 96 + 24);
	cr_expect_not(r[0].allow);
	cr_expect_eq(r[0].port, 0);
	addr16("169.254.169.254", meta);
	cr_expect_arr_eq(r[1].addr, meta, 16);
	cr_expect_eq(r[1].prefix, 128);
	cr_expect_eq(r[1].port, 80);
	cr_expect(r[1].allow);
	for (int i = 2; i < n; i++)
		cr_expect_not(r[i].allow, "default rule %d allows", i);
}

Test(net_egress, walking_the_exported_rules_gives_the_sentry_verdicts)
{
	static const struct {
		const char *addr;
		uint16_t port;
	} cases[] = {
		{ "169.254.169.254", 80 }, { "169.254.169.254", 81 },
		{ "169.254.1.1", 80 },	   { "203.0.113.10", 8080 },
		{ "203.0.113.10", 8081 },  { "8.8.8.8", 53 },
		{ "10.1.2.3", 22 },	   { "::1", 80 },
		{ "fe80::1", 80 },	   { "2001:db8::1", 443 },
		{ "127.0.0.1", 18080 },	   { "192.168.0.1", 80 },
	};
	struct net_egress_rule r[96];
	int n;

	cr_assert_eq(net_egress_add("169.254.169.254/32:80", true), 0);
	cr_assert_eq(net_egress_add("203.0.113.0/24", false), 0);
	cr_assert_eq(net_egress_add("203.0.113.10/32:8080", true), 0);
	cr_assert_eq(net_egress_add("127.0.0.1:18080", true), 0);
	n = net_egress_rules(r, 96);
	cr_assert_gt(n, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(walk_rules(r, n, cases[i].addr, cases[i].port),
			     allowed(cases[i].addr, cases[i].port), "%s port %u", cases[i].addr,
			     cases[i].port);
}

Test(net_egress, exporting_into_too_small_an_array_is_enospc)
{
	struct net_egress_rule r[4];

	cr_expect_eq(net_egress_rules(r, 4), -ENOSPC);
}
