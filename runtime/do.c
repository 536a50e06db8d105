/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk do: run one command in a new sandbox and exit with its status.
 *
 *   husk do [--rootfs DIR] [--cwd DIR] [--env K=V|K]... [--platform seccomp|ptrace|auto]
 *           [--strace] [--hostname NAME] [--overlay=none] [--tmpfs GUEST[:size=N]]...
 *           [--volume HOST:GUEST[:ro]]... [--network=none|host]
 *           [--egress-allow CIDR[:PORT]]... [--egress-deny CIDR[:PORT]]... [--sysctl K=V]...
 *           -- CMD [ARGS...]
 *
 * The root defaults to the host's /, served read-only by the gofer below an in-memory overlay:
 * the sandbox writes anywhere and nothing reaches the host (--overlay=none: writes go through
 * the gofer to the host). Each --volume serves a host directory at GUEST through a gofer of
 * its own: writes reach the host unless :ro. The guest environment is
 * clean: PATH, HOME and TERM (from the caller), plus each --env (K=V, or K to copy the caller's).
 *
 * Network (sentry/net/README.md): the sandbox always has its own loopback; --network=host adds
 * host sockets held by the sentry, under the egress policy. The host's resolvers (nameserver
 * lines of /etc/resolv.conf) are allowed on port 53 before the caller's rules.
 *
 * The platform: --platform, else $HUSK_PLATFORM, else auto (runtime/platform.c); an unknown
 * name fails before anything is started.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "sentry/kernel/sysctl.h"

#define MAX_RESOLVERS 3 /* MAXNS */

/*
 * Adds "--egress-allow=NS:53" for each nameserver of the host's /etc/resolv.conf (at most max)
 * to out. Returns the number added.
 */
static int host_resolver_rules(const char **out, int max)
{
	FILE *f = fopen("/etc/resolv.conf", "re");
	char line[256];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		char ns[128], *a;

		if (sscanf(line, " nameserver %127s", ns) != 1 || strchr(ns, '%'))
			continue; /* link-local with a zone: not expressible as a rule */
		a = malloc(strlen(ns) + 32);
		if (!a)
			break;
		if (strchr(ns, ':'))
			sprintf(a, "--egress-allow=[%s]:53", ns);
		else
			sprintf(a, "--egress-allow=%s:53", ns);
		out[n++] = a;
	}
	fclose(f);
	return n;
}

/* Checks the platform name (from --platform when flag, else from $HUSK_PLATFORM or the default). */
static int check_platform(const char *name, bool flag)
{
	char why[160];
	int ret = runtime_platform_check(name, why, sizeof(why));

	if (ret < 0)
		fprintf(stderr, "husk do: %s%s: %s\n",
			flag ? "--platform " : "HUSK_PLATFORM=", name, why);
	return ret;
}

static void do_usage(FILE *out)
{
	fputs("usage: husk do [options] [--] CMD [ARGS...]\n"
	      "\n"
	      "Runs CMD as pid 1 of a new sandbox and exits with its status (128+N if it was\n"
	      "killed by signal N; 125 if the sandbox could not be set up, 126 if CMD is not\n"
	      "executable, 127 if it is not found).\n"
	      "\n"
	      "options:\n"
	      "  --rootfs DIR      root filesystem to serve (default: /), read-only below an\n"
	      "                    in-memory overlay: writes stay in the sandbox\n"
	      "  --overlay=none    no overlay: writes to the root reach DIR on the host\n"
	      "  --tmpfs GUEST[:size=N]  mount a tmpfs at GUEST (N in bytes, or with k/m/g)\n"
	      "  --volume HOST:GUEST[:ro]  serve the host directory HOST at GUEST; writes\n"
	      "                    reach HOST unless :ro (then EROFS); repeatable\n"
	      "  --cwd DIR         working directory inside the sandbox (default: /)\n"
	      "  --env K=V         set a variable in the guest environment (repeatable);\n"
	      "                    --env K copies K from the caller's environment\n"
	      "  --platform NAME   how guest code runs: seccomp, ptrace or auto (the default:\n"
	      "                    seccomp where the kernel allows it, else ptrace; `husk\n"
	      "                    features` says which); the default is $HUSK_PLATFORM if set\n"
	      "  --strace          print every guest system call and its result on stderr\n"
	      "  --hostname NAME   the sandbox's host name (default: husk)\n"
	      "  --network=MODE    none (default): loopback only; host: other destinations\n"
	      "                    through the host, under the egress policy\n"
	      "  --egress-allow CIDR[:PORT]  allow a destination the default policy denies\n"
	      "                    (private, loopback, link-local/metadata, multicast)\n"
	      "  --egress-deny CIDR[:PORT]   deny a destination; the last matching rule wins\n"
	      "  --sysctl KEY=VALUE  a namespaced sysctl of the sandbox (repeatable)\n",
	      out);
}

int cmd_do(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rootfs", required_argument, NULL, 'r' },
		{ "cwd", required_argument, NULL, 'c' },
		{ "env", required_argument, NULL, 'e' },
		{ "platform", required_argument, NULL, 'p' },
		{ "strace", no_argument, NULL, 's' },
		{ "hostname", required_argument, NULL, 'H' },
		{ "overlay", required_argument, NULL, 'o' },
		{ "tmpfs", required_argument, NULL, 'T' },
		{ "volume", required_argument, NULL, 'v' },
		{ "network", required_argument, NULL, 'N' },
		{ "egress-allow", required_argument, NULL, 'A' },
		{ "egress-deny", required_argument, NULL, 'D' },
		{ "sysctl", required_argument, NULL, 1000 },
		/* Test-only: the sentry skips its own egress check (the BPF program must refuse). */
		{ "test-no-sentry-egress-check", no_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct launch_spec spec = {
		.rootfs = "/",
		.cwd = "/",
		.platform = runtime_platform_default(),
		.hostname = "husk",
	};
	struct launch_volume *volumes;
	char **env;
	const char **tmpfs;
	const char **net_args;
	int nenv = 0, ntmpfs = 0, nvolumes = 0, nnet = 0, c;
	bool host_net = false, platform_flag = false;
	const char *term = getenv("TERM");

	env = calloc((size_t)argc + 4, sizeof(char *));
	tmpfs = calloc((size_t)argc + 1, sizeof(char *));
	volumes = calloc((size_t)argc + 1, sizeof(*volumes));
	net_args = calloc((size_t)argc + 2 + MAX_RESOLVERS, sizeof(char *));
	if (!env || !tmpfs || !volumes || !net_args)
		return 125;
	env[nenv++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	env[nenv++] = getuid() == 0 ? "HOME=/root" : "HOME=/";
	if (term) {
		char *t = malloc(strlen(term) + 6);
		if (t) {
			sprintf(t, "TERM=%s", term);
			env[nenv++] = t;
		}
	}

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			spec.rootfs = optarg;
			break;
		case 'c':
			spec.cwd = optarg;
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');
			size_t klen = eq ? (size_t)(eq - optarg) : strlen(optarg);
			char *v = optarg;

			if (klen == 0) {
				fprintf(stderr, "husk do: --env %s: empty variable name\n", optarg);
				return 125;
			}
			if (!eq) {
				const char *val = getenv(optarg);
				if (!val)
					break;
				v = malloc(klen + strlen(val) + 2);
				if (!v)
					return 125;
				sprintf(v, "%s=%s", optarg, val);
			}
			/* A later value of the same variable replaces an earlier one. */
			for (int i = 0; i < nenv; i++) {
				if (!strncmp(env[i], v, klen + 1)) {
					env[i] = v;
					v = NULL;
					break;
				}
			}
			if (v)
				env[nenv++] = v;
			break;
		}
		case 'p':
			spec.platform = optarg;
			platform_flag = true;
			break;
		case 's':
			spec.strace = true;
			break;
		case 'H':
			spec.hostname = optarg;
			break;
		case 'o':
			if (!strcmp(optarg, "none")) {
				spec.rootfs_writable = true;
			} else if (!strcmp(optarg, "memory")) {
				spec.rootfs_writable = false;
			} else {
				fprintf(stderr, "husk do: --overlay %s: expected none or memory\n",
					optarg);
				return 125;
			}
			break;
		case 'T':
			if (optarg[0] != '/') {
				fprintf(stderr, "husk do: --tmpfs %s: the path must be absolute\n",
					optarg);
				return 125;
			}
			tmpfs[ntmpfs++] = optarg;
			break;
		case 'v':
			if (runtime_parse_volume(optarg, &volumes[nvolumes]) < 0) {
				fprintf(stderr,
					"husk do: --volume %s: expected HOST:GUEST[:ro], both "
					"absolute\n",
					optarg);
				return 125;
			}
			nvolumes++;
			break;
		case 'N':
			if (strcmp(optarg, "none") && strcmp(optarg, "host")) {
				fprintf(stderr, "husk do: --network %s: expected none or host\n",
					optarg);
				return 125;
			}
			host_net = !strcmp(optarg, "host");
			break;
		case 'A':
		case 'D':
		case 'Z': {
			char *a = malloc(strlen(optarg ? optarg : "") + 32);

			if (!a)
				return 125;
			if (c == 'Z')
				strcpy(a, "--test-no-egress-check");
			else
				sprintf(a, "--egress-%s=%s", c == 'A' ? "allow" : "deny", optarg);
			net_args[nnet++] = a;
			break;
		}
		case 1000: {
			/* Checked here with the sentry's table, passed on with the sentry's args. */
			char why[256], *a;

			if (sysctl_apply(optarg, why, sizeof(why)) < 0) {
				fprintf(stderr, "husk do: %s\n", why);
				return 125;
			}
			a = malloc(strlen(optarg) + 16);
			if (!a)
				return 125;
			sprintf(a, "--sysctl=%s", optarg);
			net_args[nnet++] = a;
			break;
		}
		case 'h':
			do_usage(stdout);
			return 0;
		default:
			do_usage(stderr);
			return 125;
		}
	}
	if (optind >= argc) {
		fputs("husk do: no command given\n", stderr);
		do_usage(stderr);
		return 125;
	}
	if (check_platform(spec.platform, platform_flag) < 0)
		return 125;
	if (host_net) {
		/* The mode and the resolvers first: the caller's rules come later and win. */
		const char **all = calloc((size_t)nnet + 2 + MAX_RESOLVERS, sizeof(char *));
		int k = 0;

		if (!all)
			return 125;
		all[k++] = "--network=host";
		k += host_resolver_rules(all + k, MAX_RESOLVERS);
		for (int i = 0; i < nnet; i++)
			all[k++] = net_args[i];
		net_args = all;
	}
	spec.net_args = net_args;
	env[nenv] = NULL;
	spec.env = env;
	spec.tmpfs = tmpfs;
	spec.volumes = volumes;
	spec.nvolumes = nvolumes;
	spec.argv = argv + optind;
	return launch_and_wait(&spec);
}
