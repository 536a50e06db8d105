/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk do: run one command in a new sandbox and exit with its status.
 *
 *   husk do [--rootfs DIR] [--cwd DIR] [--env K=V|K]... [--platform ptrace] [--strace]
 *           [--hostname NAME] -- CMD [ARGS...]
 *
 * The root defaults to the host's /, served read-only by the gofer. The guest environment is
 * clean: PATH, HOME and TERM (from the caller), plus each --env (K=V, or K to copy the caller's).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime.h"

static void do_usage(FILE *out)
{
	fputs("usage: husk do [options] [--] CMD [ARGS...]\n"
	      "\n"
	      "Runs CMD as pid 1 of a new sandbox and exits with its status (128+N if it was\n"
	      "killed by signal N; 125 if the sandbox could not be set up, 126 if CMD is not\n"
	      "executable, 127 if it is not found).\n"
	      "\n"
	      "options:\n"
	      "  --rootfs DIR      root filesystem to serve (default: /), read-only\n"
	      "  --cwd DIR         working directory inside the sandbox (default: /)\n"
	      "  --env K=V         set a variable in the guest environment (repeatable);\n"
	      "                    --env K copies K from the caller's environment\n"
	      "  --platform NAME   how guest code runs: ptrace (default)\n"
	      "  --strace          print every guest system call and its result on stderr\n"
	      "  --hostname NAME   the sandbox's host name (default: husk)\n",
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct launch_spec spec = {
		.rootfs = "/",
		.cwd = "/",
		.platform = "ptrace",
		.hostname = "husk",
	};
	char **env;
	int nenv = 0, c;
	const char *term = getenv("TERM");

	env = calloc((size_t)argc + 4, sizeof(char *));
	if (!env)
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
			break;
		case 's':
			spec.strace = true;
			break;
		case 'H':
			spec.hostname = optarg;
			break;
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
	env[nenv] = NULL;
	spec.env = env;
	spec.argv = argv + optind;
	return launch_and_wait(&spec);
}
