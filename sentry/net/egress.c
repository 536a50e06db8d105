/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy: which destinations outside the sandbox a host socket may reach. Deny by
 * default the networks an agent's sandbox must never reach on its own (the host's loopback,
 * private and link-local networks with the cloud metadata address, multicast, reserved), in
 * IPv4, IPv6 and IPv4-mapped forms; everything else is allowed. Rules given on the command
 * line (--egress-allow/--egress-deny CIDR[:PORT]) are checked first, the last matching one
 * deciding. Addresses are handled in IPv6 form, IPv4 as ::ffff:a.b.c.d, so that a mapped
 * address meets the same rule as its IPv4 form. NAT64 addresses (64:ff9b::/96) are checked as
 * the IPv4 address they embed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "sentry/net/internal.h"

struct egress_rule {
	uint8_t addr[16];
	int prefix; /* bits, over the 128-bit form */
	uint16_t port; /* 0: every port */
	bool allow;
	char text[56];
};

#define MAX_RULES 64

static struct egress_rule user_rules[MAX_RULES];
static int nuser;
static enum net_mode mode = NET_MODE_NONE;
static bool check_disabled;

static const char *const default_deny[] = {
	"0.0.0.0/8",	 "10.0.0.0/8",	   "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4",   "240.0.0.0/4", "::/128",
	"::1/128",	 "fc00::/7",	   "fe80::/10",	    "ff00::/8",
};

int net_set_mode(const char *name)
{
	if (!strcmp(name, "none"))
		mode = NET_MODE_NONE;
	else if (!strcmp(name, "host"))
		mode = NET_MODE_HOST;
	else
		return -EINVAL;
	return 0;
}

enum net_mode net_get_mode(void)
{
	return mode;
}

static bool inbound;

void net_set_inbound(bool on)
{
	inbound = on;
}

bool net_inbound(void)
{
	return inbound && mode == NET_MODE_HOST;
}

void net_egress_disable_check(void)
{
	check_disabled = true;
}

void net_egress_reset(void)
{
	nuser = 0;
}

/* Parses "a.b.c.d[/n]" or "x::y[/n]" into r (IPv4 prefixes count from bit 96). */
static int parse_cidr(const char *s, struct egress_rule *r)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	long n = -1;
	struct in_addr a4;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		char *end;

		*slash = '\0';
		n = strtol(slash + 1, &end, 10);
		if (*end || end == slash + 1 || n < 0)
			return -EINVAL;
	}
	memset(r->addr, 0, 16);
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		if (n > 32)
			return -EINVAL;
		r->addr[10] = r->addr[11] = 0xff;
		memcpy(r->addr + 12, &a4, 4);
		r->prefix = 96 + (int)(n < 0 ? 32 : n);
	} else if (inet_pton(AF_INET6, buf, r->addr) == 1) {
		if (n > 128)
			return -EINVAL;
		r->prefix = (int)(n < 0 ? 128 : n);
	} else {
		return -EINVAL;
	}
	/* Clear the host bits so that matching compares the network only. */
	for (int bit = r->prefix; bit < 128; bit++)
		r->addr[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
	return 0;
}

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	long p = strtol(s, &end, 10);

	if (*end || end == s || p < 1 || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

/* Parses "CIDR[:PORT]" (IPv6 with a port in brackets: "[::1]/128:53" or "[::1/128]:53"). */
static int parse_rule(const char *spec, struct egress_rule *r)
{
	char buf[128];
	char *colon;
	int ret;

	r->port = 0;
	if (strlen(spec) >= sizeof(buf) || !*spec)
		return -EINVAL;
	strcpy(buf, spec);
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');
		char cidr[128];

		if (!close)
			return -EINVAL;
		*close = '\0';
		/* "[addr]/n:port" or "[addr/n]:port" */
		memcpy(cidr, buf + 1, strlen(buf + 1) + 1);
		colon = close + 1;
		if (*colon == '/') {
			char *pc = strchr(colon, ':');

			if (pc)
				*pc = '\0';
			if (strlen(cidr) + strlen(colon) >= sizeof(cidr))
				return -EINVAL;
			strcat(cidr, colon);
			colon = pc ? pc : NULL;
			if (colon)
				colon++;
		} else if (*colon == ':') {
			colon++;
		} else if (*colon) {
			return -EINVAL;
		} else {
			colon = NULL;
		}
		ret = parse_cidr(cidr, r);
		if (ret == 0 && colon)
			ret = parse_port(colon, &r->port);
		return ret;
	}
	colon = strchr(buf, ':');
	if (colon && !strchr(colon + 1, ':') && strchr(buf, '.')) {
		/* IPv4 with a port. */
		*colon = '\0';
		ret = parse_cidr(buf, r);
		return ret ? ret : parse_port(colon + 1, &r->port);
	}
	return parse_cidr(buf, r);
}

int net_egress_add(const char *spec, bool allow)
{
	struct egress_rule r;
	int ret;

	if (nuser >= MAX_RULES)
		return -ENOSPC;
	memset(&r, 0, sizeof(r));
	ret = parse_rule(spec, &r);
	if (ret < 0)
		return ret;
	r.allow = allow;
	snprintf(r.text, sizeof(r.text), "%s", spec);
	user_rules[nuser++] = r;
	return 0;
}

static bool rule_matches(const struct egress_rule *r, const uint8_t a[16], uint16_t port)
{
	int full = r->prefix / 8, rest = r->prefix % 8;

	if (r->port && r->port != port)
		return false;
	if (memcmp(r->addr, a, (size_t)full))
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));

		if ((a[full] & mask) != (r->addr[full] & mask))
			return false;
	}
	return true;
}

bool net_egress_allowed(const uint8_t addr[16], uint16_t port, struct net_egress_verdict *v)
{
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	struct net_egress_verdict tmp;
	uint8_t a[16];

	if (!v)
		v = &tmp;
	memcpy(a, addr, 16);
	if (!memcmp(a, nat64, 12)) {
		memset(a, 0, 10);
		a[10] = a[11] = 0xff;
	}
	for (int i = nuser - 1; i >= 0; i--) {
		if (rule_matches(&user_rules[i], a, port)) {
			v->allow = user_rules[i].allow;
			v->user_rule = true;
			snprintf(v->rule, sizeof(v->rule), "--egress-%s %s",
				 v->allow ? "allow" : "deny", user_rules[i].text);
			return v->allow;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(default_deny); i++) {
		struct egress_rule r = { .port = 0 }; /* every port */

		if (parse_cidr(default_deny[i], &r) == 0 && rule_matches(&r, a, 0)) {
			v->allow = false;
			v->user_rule = false;
			snprintf(v->rule, sizeof(v->rule), "default deny %s", default_deny[i]);
			return false;
		}
	}
	v->allow = true;
	v->user_rule = false;
	snprintf(v->rule, sizeof(v->rule), "default allow");
	return true;
}

int net_egress_rules(struct net_egress_rule *out, int max)
{
	int n = 0;

	if (nuser + (int)ARRAY_SIZE(default_deny) > max)
		return -ENOSPC;
	for (int i = nuser - 1; i >= 0; i--, n++) {
		memcpy(out[n].addr, user_rules[i].addr, 16);
		out[n].prefix = user_rules[i].prefix;
		out[n].port = user_rules[i].port;
		out[n].allow = user_rules[i].allow;
	}
	for (size_t i = 0; i < ARRAY_SIZE(default_deny); i++) {
		struct egress_rule r;

		if (parse_cidr(default_deny[i], &r) < 0)
			continue;
		memcpy(out[n].addr, r.addr, 16);
		out[n].prefix = r.prefix;
		out[n].port = 0;
		out[n].allow = false;
		n++;
	}
	return n;
}

/* Verdicts of egress_check, for husk serve's metrics (net_egress_counts). */
static uint64_t n_allowed, n_denied;

void net_egress_counts(uint64_t *allowed, uint64_t *denied)
{
	*allowed = __atomic_load_n(&n_allowed, __ATOMIC_RELAXED);
	*denied = __atomic_load_n(&n_denied, __ATOMIC_RELAXED);
}

int egress_check(const struct inet_ep *ep, const char *what)
{
	struct net_egress_verdict v;
	char text[INET6_ADDRSTRLEN];

	if (mode == NET_MODE_NONE) {
		__atomic_add_fetch(&n_denied, 1, __ATOMIC_RELAXED);
		return -ENETUNREACH;
	}
	if (check_disabled || net_egress_allowed(ep->addr, ep->port, &v)) {
		__atomic_add_fetch(&n_allowed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_add_fetch(&n_denied, 1, __ATOMIC_RELAXED);
	if (ep->addr[10] == 0xff && ep->addr[11] == 0xff &&
	    !memcmp(ep->addr, "\0\0\0\0\0\0\0\0\0\0", 10))
		inet_ntop(AF_INET, ep->addr + 12, text, sizeof(text));
	else
		inet_ntop(AF_INET6, ep->addr, text, sizeof(text));
	log_warn("egress: %s to %s port %u refused by %s", what, text, ep->port, v.rule);
	return -EPERM;
}
