/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loader of egress.bpf.c (through its libbpf skeleton): fills the rule map from the policy
 * of sentry/net/egress.c, freezes it and attaches the four programs to the sandbox's cgroup.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/net/bpf/netbpf.h"
#include "sentry/net/net.h"

void netbpf_free_args(char **args)
{
	for (char **a = args; a && *a; a++)
		free(*a);
	free(args);
}

/* Appends "--egress-KIND=RULE" to out[*n] for every rule of list (checked). */
static int add_rules(const char *list, bool allow, char **out, int *n, int max, char *why,
		     size_t why_len)
{
	char *copy, *save = NULL, *tok;
	int ret = 0;

	if (!list)
		return 0;
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", \t\n", &save); tok && !ret;
	     tok = strtok_r(NULL, ", \t\n", &save)) {
		net_egress_reset();
		if (*n >= max || net_egress_add(tok, allow) < 0) {
			snprintf(why, why_len, "dev.husk.egress-%s: %s: expected CIDR[:PORT]",
				 allow ? "allow" : "deny", tok);
			ret = -EINVAL;
		} else if (asprintf(&out[*n], "--egress-%s=%s", allow ? "allow" : "deny", tok) <
			   0) {
			ret = -ENOMEM;
		} else {
			(*n)++;
		}
	}
	net_egress_reset();
	free(copy);
	return ret;
}

int netbpf_annotation_args(const char *network, const char *allow, const char *deny, char ***out,
			   char *why, size_t why_len)
{
	/* At most one rule per two characters of the lists, plus the mode and the end. */
	size_t max = 2 + (allow ? strlen(allow) : 0) / 2 + (deny ? strlen(deny) : 0) / 2 + 2;
	char **args = calloc(max + 1, sizeof(char *));
	int n = 0, ret;

	*out = NULL;
	if (!args)
		return -ENOMEM;
	if (network && strcmp(network, "none") && strcmp(network, "host")) {
		snprintf(why, why_len, "dev.husk.network: %s: expected none or host", network);
		free(args);
		return -EINVAL;
	}
	if (network && !strcmp(network, "host")) {
		args[n] = strdup("--network=host");
		if (!args[n++]) {
			free(args);
			return -ENOMEM;
		}
	}
	ret = add_rules(allow, true, args, &n, (int)max, why, why_len);
	if (!ret)
		ret = add_rules(deny, false, args, &n, (int)max, why, why_len);
	if (ret < 0) {
		netbpf_free_args(args);
		return ret;
	}
	*out = args;
	return 0;
}

#ifdef HUSK_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress.skel.h"
#include "sentry/net/bpf/netbpf_rule.h"

/* libbpf's messages go nowhere: the caller reports the one reason that matters. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* The map entry for rule r: the network and mask as four network-order words. */
static void to_map(const struct net_egress_rule *r, struct netbpf_rule *m)
{
	uint8_t mask[16];

	memset(m, 0, sizeof(*m));
	for (int bit = 0; bit < 128; bit++) {
		if (bit % 8 == 0)
			mask[bit / 8] = 0;
		if (bit < r->prefix)
			mask[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
	}
	for (int i = 0; i < 16; i++)
		((uint8_t *)m->mask)[i] = mask[i];
	for (int i = 0; i < 16; i++)
		((uint8_t *)m->net)[i] = r->addr[i] & mask[i];
	m->port = r->port;
	m->allow = r->allow;
	m->used = 1;
}

static void destroy_skel(struct egress_bpf **s)
{
	if (*s)
		egress_bpf__destroy(*s);
}

int netbpf_attach_egress(int cgroup_fd, const char *const *net_args, char *why, size_t why_len)
{
	static const struct {
		const char *name;
		enum bpf_attach_type type;
	} hooks[] = {
		{ "connect4", BPF_CGROUP_INET4_CONNECT },
		{ "connect6", BPF_CGROUP_INET6_CONNECT },
		{ "sendmsg4", BPF_CGROUP_UDP4_SENDMSG },
		{ "sendmsg6", BPF_CGROUP_UDP6_SENDMSG },
	};
	struct egress_bpf *skel __attribute__((cleanup(destroy_skel))) = NULL;
	struct net_egress_rule rules[NETBPF_MAX_RULES];
	int progs[4], n, ret, attached = 0;

	snprintf(why, why_len, "%s", "");
	net_egress_reset();
	for (const char *const *a = net_args; a && *a; a++) {
		bool allow = !strncmp(*a, "--egress-allow=", 15);

		if (!allow && strncmp(*a, "--egress-deny=", 14))
			continue;
		ret = net_egress_add(strchr(*a, '=') + 1, allow);
		if (ret < 0) {
			snprintf(why, why_len, "bad rule %s", *a);
			return ret;
		}
	}
	n = net_egress_rules(rules, NETBPF_MAX_RULES);
	net_egress_reset();
	if (n < 0) {
		snprintf(why, why_len, "more than %d egress rules", NETBPF_MAX_RULES);
		return n;
	}

	libbpf_set_print(quiet);
	skel = egress_bpf__open();
	if (!skel) {
		ret = -errno;
		snprintf(why, why_len, "opening the BPF programs: %s", strerror(errno));
		return ret ? ret : -EINVAL;
	}
	/* Read-only after the load (libbpf freezes .rodata): the programs walk n rules. */
	skel->rodata->nrules = (__u32)n;
	ret = egress_bpf__load(skel);
	if (ret < 0) {
		snprintf(why, why_len, "loading the BPF programs: %s", strerror(-ret));
		return ret;
	}
	for (int i = 0; i < n; i++) {
		struct netbpf_rule m;
		__u32 key = (__u32)i;

		to_map(&rules[i], &m);
		ret = bpf_map__update_elem(skel->maps.rules, &key, sizeof(key), &m, sizeof(m), 0);
		if (ret < 0) {
			snprintf(why, why_len, "filling the rule map: %s", strerror(-ret));
			return ret;
		}
	}
	/* Nothing writes the map again, from any side. */
	ret = bpf_map_freeze(bpf_map__fd(skel->maps.rules));
	if (ret < 0) {
		ret = -errno;
		snprintf(why, why_len, "freezing the rule map: %s", strerror(errno));
		return ret;
	}
	progs[0] = bpf_program__fd(skel->progs.husk_connect4);
	progs[1] = bpf_program__fd(skel->progs.husk_connect6);
	progs[2] = bpf_program__fd(skel->progs.husk_sendmsg4);
	progs[3] = bpf_program__fd(skel->progs.husk_sendmsg6);
	for (size_t i = 0; i < 4; i++) {
		/* Not a bpf_link: the attachment must outlive this process's fds, for as long as
		 * the cgroup lives (it goes with the cgroup). */
		ret = bpf_prog_attach(progs[i], cgroup_fd, hooks[i].type, BPF_F_ALLOW_MULTI);
		if (ret < 0) {
			ret = -errno;
			snprintf(why, why_len, "attaching %s to the cgroup: %s", hooks[i].name,
				 strerror(errno));
			break;
		}
		attached++;
	}
	if (attached < 4) {
		/* All or nothing: a half-attached policy would look like a full one. */
		for (int i = 0; i < attached; i++)
			bpf_prog_detach2(progs[i], cgroup_fd, hooks[i].type);
		return ret;
	}
	return 0;
}

#else

int netbpf_attach_egress(int cgroup_fd, const char *const *net_args, char *why, size_t why_len)
{
	snprintf(why, why_len, "husk was built without BPF support (clang, bpftool, libbpf)");
	return -ENOSYS;
}

#endif
