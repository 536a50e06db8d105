/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk: the command-line runtime. Global options as runc has them, then one file per verb.
 *
 *   husk [--root DIR] [--log FILE] [--log-format text|json] [--debug] [--systemd-cgroup]
 *        [--platform NAME] [--strace] [--network none|host] [--overlay memory|none]
 *        [--debug-log DIR] VERB [ARGS...]
 *
 * husk's own flags (--platform, --strace, --network, --overlay, --debug-log) can also be set per
 * container with the annotations dev.husk.platform, dev.husk.strace, dev.husk.network,
 * dev.husk.overlay and dev.husk.debug-log, which win over the flags. The platform is seccomp,
 * ptrace or auto; without the flag or the annotation it is $HUSK_PLATFORM, else auto.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/userns.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"

#ifndef HUSK_VERSION
#define HUSK_VERSION "0.0.0"
#endif

static void usage(FILE *out)
{
	fputs("usage: husk [global options] <command> [options]\n"
	      "\n"
	      "husk runs programs in a sandbox whose system calls are implemented by husk's own\n"
	      "userspace kernel (the sentry), with files served by a separate gofer process.\n"
	      "It is an OCI runtime: container engines drive it with runc's commands.\n"
	      "\n"
	      "commands:\n"
	      "  do [options] -- CMD [ARGS...]   run CMD in a new sandbox over a root filesystem\n"
	      "  spec, create, start, run, state, list, kill, delete, exec, ps, pause, resume,\n"
	      "  events, update, features, checkpoint, restore   the OCI runtime commands (as runc)\n"
	      "  fork [--image-path DIR] ID NEWID...   clone a running container into new ones\n"
	      "  serve [options]                the agent API server (`husk serve --help`)\n"
	      "  syscalls                       print the system call table and its support levels\n"
	      "  --version                      print the version\n"
	      "\n"
	      "global options:\n"
	      "  --root DIR            state directory (default " HUSK_DEFAULT_ROOT
	      "; not root: $XDG_RUNTIME_DIR/husk)\n"
	      "  --log FILE            also write errors to FILE\n"
	      "  --log-format FORMAT   text or json\n"
	      "  --debug               log more\n"
	      "  --systemd-cgroup      accepted; cgroupsPath slice:prefix:name is used as a path\n"
	      "  --platform NAME       how guest code runs: seccomp, ptrace, kvm or auto (the default:\n"
	      "                        kvm where hardware KVM works, else seccomp where the\n"
	      "                        kernel allows it, else ptrace; `husk features` says\n"
	      "                        which); default $HUSK_PLATFORM if set;\n"
	      "                        the annotation dev.husk.platform wins over both\n"
	      "  --strace              print every guest system call on stderr\n"
	      "  --network MODE        none (loopback only, default) or host\n"
	      "  --overlay MODE        memory (writes stay in the sandbox, default) or none\n"
	      "                        (writes reach the bundle's rootfs)\n"
	      "  --debug-log DIR       per-sandbox logs: DIR/<id>.sentry.log, DIR/<id>.gofer.log\n"
	      "\n"
	      "`husk do --help` describes the options of do.\n",
	      out);
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} verbs[] = {
	{ "do", cmd_do },	    { "syscalls", cmd_syscalls },
	{ "spec", cmd_spec },	    { "create", cmd_create },
	{ "start", cmd_start },	    { "run", cmd_run },
	{ "state", cmd_state },	    { "list", cmd_list },
	{ "kill", cmd_kill },	    { "delete", cmd_delete },
	{ "exec", cmd_exec },	    { "ps", cmd_ps },
	{ "pause", cmd_pause },	    { "resume", cmd_resume },
	{ "events", cmd_events },   { "features", cmd_features },
	{ "update", cmd_update },   { "checkpoint", cmd_checkpoint },
	{ "restore", cmd_restore }, { "fork", cmd_fork },
	{ "serve", cmd_serve },
};

/*
 * The state directory when --root is not given, as runc chooses its own: HUSK_DEFAULT_ROOT for
 * root; rootless $XDG_RUNTIME_DIR/husk, which only that user can write (/run/user/UID/husk
 * without XDG_RUNTIME_DIR). Rootless is a user other than root, or root of a user namespace
 * with $XDG_RUNTIME_DIR set and $USER unset or not root (rootless podman's). Returns a static
 * or allocated string.
 */
static const char *default_root(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR"), *user = getenv("USER");
	char *dir = NULL;

	if (geteuid() == 0 &&
	    !(xdg && xdg[0] == '/' && (!user || strcmp(user, "root")) && userns_nested()))
		return HUSK_DEFAULT_ROOT;
	if (xdg && xdg[0] == '/' ? asprintf(&dir, "%s/husk", xdg) < 0 :
				   asprintf(&dir, "/run/user/%u/husk", (unsigned int)geteuid()) < 0)
		return HUSK_DEFAULT_ROOT;
	return dir;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "log", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "systemd-cgroup", no_argument, NULL, 'S' },
		{ "platform", required_argument, NULL, 'p' },
		{ "strace", no_argument, NULL, 's' },
		{ "rootless", required_argument, NULL, 'R' },
		{ "criu", required_argument, NULL, 'C' },
		{ "network", required_argument, NULL, 'n' },
		{ "overlay", required_argument, NULL, 'o' },
		{ "debug-log", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	log_set_name("husk");
	log_init_from_env();
	oci_g.root = default_root();

	optind = 1;
	opterr = 1;
	while ((c = getopt_long_only(argc, argv, "+hv", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			oci_g.root = optarg;
			break;
		case 'l':
			oci_g.log = optarg;
			break;
		case 'f':
			oci_g.log_json = !strcmp(optarg, "json");
			break;
		case 'd':
			oci_g.debug = true;
			log_set_level(LOG_DEBUG);
			break;
		case 'S':
			oci_g.systemd_cgroup = true;
			break;
		case 'p':
			oci_g.platform = optarg;
			break;
		case 's':
			oci_g.strace = true;
			break;
		case 'n':
			oci_g.network = optarg;
			break;
		case 'o':
			oci_g.overlay = optarg;
			break;
		case 'D':
			oci_g.debug_log = optarg;
			break;
		case 'R':
		case 'C':
			break; /* accepted (runc's --rootless, --criu) */
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			printf("husk version %s\nspec: %s\n", HUSK_VERSION, OCI_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[optind], "version")) {
		printf("husk version %s\nspec: %s\n", HUSK_VERSION, OCI_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (!strcmp(argv[optind], verbs[i].name))
			return verbs[i].fn(argc - optind, argv + optind);
	}
	fprintf(stderr, "husk: unknown command '%s'; see `husk --help`\n", argv[optind]);
	return 2;
}
