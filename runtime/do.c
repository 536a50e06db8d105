/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk do: run one command in a new sandbox and exit with its status.
 *
 *   husk do [--rootfs DIR] [--cwd DIR] [--env K=V|K]... [-E|--env-inherit]
 *           [--platform seccomp|ptrace|kvm|auto]
 *           [--strace] [--console] [--hostname NAME] [--overlay=none]
 *           [--tmpfs GUEST[:size=N]]...
 *           [--volume HOST:GUEST[:ro]]... [--network=none|host]
 *           [--egress-allow CIDR[:PORT]]... [--egress-deny CIDR[:PORT]]... [--sysctl K=V]...
 *           [--gateway SOCKET --gateway-id ID] [--name ID] -- CMD [ARGS...]
 *   husk do --restore DIR [the same options] [--name ID]
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
 * The platform: --platform (do's own, or husk's before the verb), else $HUSK_PLATFORM, else
 * auto (runtime/platform.c); an unknown name fails before anything is started.
 *
 * Templates (sentry/state/README.md). --name ID registers the sandbox under the runtime root
 * (--root, as a container: <root>/ID/{state.json,config.json,control.sock}) while husk do runs,
 * so that the OCI verbs that talk to a running sentry work on it: husk checkpoint, exec, ps,
 * kill, pause, resume, state, list. The guest decides when it is ready (it says so, on its
 * stdout or in a file, and waits, typically reading its stdin); the caller then runs
 * `husk checkpoint --image-path DIR ID`. Without --leave-running that ends the sandbox and
 * husk do exits 0 (the image is the result); with it the sandbox goes on. The record is removed
 * when husk do exits (`husk delete ID` removes one left by a husk do that was SIGKILLed); an
 * existing ID is refused. config.json there holds what husk do was given (for husk exec's
 * defaults); the record's folder is its own bundle.
 *
 * --restore DIR starts the new sandbox from the image in DIR instead of a command: the image's
 * processes continue where they were saved, and husk do exits with the status of its pid 1.
 * Their stdio (files over the sentry's fds 0-2) is husk do's own stdio, the caller's terminal or
 * pipes, not what the template had. The mounts and the egress policy are not in the image: give
 * the same --rootfs, --overlay, --tmpfs, --volume and --network options as when it was made (as
 * `husk restore --bundle` takes the same bundle). --env and --cwd do not change the restored
 * processes (only what husk exec starts). A command after --restore is refused. A missing,
 * truncated or corrupt image is refused with a message and exit status 125, and leaves nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/userns.h"
#include "oci-spec/state.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/state/names.h"

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

/* husk do --name: the sandbox's record under the runtime root (runtime/container.c). */
struct do_record {
	struct container c; /* locked (lock_fd) until the sentry's pid is in state.json */
	int control_fd; /* the listening control socket, until the sentry has it */
};

/* The guest's id for the caller's: the same, but 0 for a rootless caller (husk-sentry's default:
 * root of its own user namespace), so that husk exec runs as pid 1 does. */
static unsigned int guest_id(unsigned int id)
{
	return userns_privileged() ? id : 0;
}

/* config.json of the record: what husk do was given, as an OCI process and root. */
static int do_record_config(const struct do_record *r, const struct launch_spec *spec)
{
	_cleanup_free_ char *path = container_path(&r->c, "config.json");
	json_t *args = json_array(), *env = json_array(), *o;
	int ret;

	for (char **a = spec->argv; args && *a; a++)
		json_array_append_new(args, json_string(*a));
	for (char **e = spec->env; env && *e; e++)
		json_array_append_new(env, json_string(*e));
	o = json_pack("{s:s,s:{s:o,s:o,s:s,s:{s:I,s:I},s:b},s:{s:s,s:b},s:s,s:{s:s}}", "ociVersion",
		      "1.0.2", "process", "args", args, "env", env, "cwd", spec->cwd, "user", "uid",
		      (json_int_t)guest_id(getuid()), "gid", (json_int_t)guest_id(getgid()),
		      "terminal", 0, "root", "path", r->c.rootfs, "readonly", 0, "hostname",
		      spec->hostname, "annotations", "dev.husk.do",
		      spec->restore_dir ? "restore" : "run");
	if (!o || !path)
		return -ENOMEM;
	ret = json_dump_file(o, path, JSON_PRESERVE_ORDER | JSON_INDENT(1));
	json_decref(o);
	return ret < 0 ? -EIO : 0;
}

/*
 * Makes the record of sandbox id (locked, with config.json and a listening control.sock).
 * Returns 0, or an exit status after a message (nothing is left behind).
 */
static int do_record_create(struct do_record *r, const char *id, const struct launch_spec *spec)
{
	char ts[64];
	int ret;

	r->control_fd = -1;
	if (container_id_valid(id) < 0) {
		memset(&r->c, 0, sizeof(r->c));
		r->c.lock_fd = -1;
		fprintf(stderr, "husk do: --name %s: expected letters, digits and _+.-\n", id);
		return 125;
	}
	ret = container_create_dir(id, &r->c);
	if (ret == -EEXIST) {
		container_release(&r->c);
		fprintf(stderr,
			"husk do: --name %s: a container of that name exists in %s (husk delete "
			"it first)\n",
			id, oci_g.root);
		return 125;
	}
	if (ret == 0) {
		oci_timestamp_now(ts, sizeof(ts));
		r->c.created = strdup(ts);
		r->c.bundle = strdup(r->c.dir);
		/* A rootfs that is not there is launch's to report. */
		r->c.rootfs = realpath(spec->rootfs, NULL);
		if (!r->c.rootfs)
			r->c.rootfs = strdup(spec->rootfs);
		ret = !r->c.created || !r->c.bundle || !r->c.rootfs ? -ENOMEM : 0;
	}
	if (ret == 0)
		ret = do_record_config(r, spec);
	if (ret == 0) {
		r->control_fd = sandbox_control_listen(&r->c);
		ret = r->control_fd < 0 ? r->control_fd : 0;
	}
	if (ret == 0)
		ret = container_save(&r->c); /* pid 0 (creating) until the sentry runs */
	if (ret < 0) {
		fprintf(stderr, "husk do: --name %s: %s/%s: %s\n", id, oci_g.root, id,
			strerror(-ret));
		if (r->control_fd >= 0)
			close(r->control_fd);
		r->control_fd = -1;
		if (r->c.dir)
			container_destroy(&r->c);
		container_release(&r->c);
		return 125;
	}
	return 0;
}

/* launch_spec.started: the pids go into state.json, and the record is unlocked for others. */
static void do_record_started(void *arg, pid_t sentry, pid_t gofer)
{
	struct do_record *r = arg;
	int ret;

	r->c.pid = sentry;
	r->c.pid_start = process_start_time(sentry);
	r->c.gofer_pid = gofer;
	r->c.gofer_start = process_start_time(gofer);
	ret = container_save(&r->c);
	if (ret < 0)
		fprintf(stderr, "husk do: warning: %s/state.json: %s\n", r->c.dir, strerror(-ret));
	close(r->control_fd);
	r->control_fd = -1;
	close(r->c.lock_fd);
	r->c.lock_fd = -1;
}

/*
 * The sentry is gone: removes the record, after any husk checkpoint that holds it has finished.
 * Returns whether a checkpoint (without --leave-running) ended the sandbox.
 */
static bool do_record_finish(struct do_record *r)
{
	struct container c;
	bool checkpointed = false;

	if (r->control_fd >= 0)
		close(r->control_fd);
	if (r->c.lock_fd >= 0) {
		/* The sentry never started: the record is still ours. */
		container_destroy(&r->c);
		container_release(&r->c);
		return false;
	}
	/* container_load waits for the lock: a husk checkpoint holds it until it is done. */
	if (container_load(r->c.id, &c) == 0 && c.pid == r->c.pid &&
	    c.pid_start == r->c.pid_start) {
		_cleanup_free_ char *mark = container_path(&c, "checkpointed");

		checkpointed = mark && access(mark, F_OK) == 0;
		container_destroy(&c);
	}
	container_release(&c);
	container_release(&r->c);
	return checkpointed;
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
	      "       husk do --restore DIR [options]\n"
	      "\n"
	      "Runs CMD as pid 1 of a new sandbox and exits with its status (128+N if it was\n"
	      "killed by signal N; 125 if the sandbox could not be set up, 126 if CMD is not\n"
	      "executable, 127 if it is not found). A signal husk do is sent (timeout's\n"
	      "TERM, ^C) that CMD has no handler for ends it, and husk do then dies of it.\n"
	      "\n"
	      "Templates: with --name ID, `husk checkpoint --image-path DIR ID` saves the\n"
	      "sandbox (when the guest says it is ready); husk do then exits 0. `husk do\n"
	      "--restore DIR` starts a new sandbox from that image: its processes continue\n"
	      "with this command's stdin, stdout and stderr, and husk do exits with the status\n"
	      "of its pid 1. Give it the same --rootfs, --overlay, --tmpfs, --volume and\n"
	      "--network options as the template had; it takes no CMD.\n"
	      "\n"
	      "options:\n"
	      "  --rootfs DIR      root filesystem to serve (default: /), read-only below an\n"
	      "                    in-memory overlay: writes stay in the sandbox\n"
	      "  --overlay=none    no overlay: writes to the root reach DIR on the host\n"
	      "  --tmpfs GUEST[:size=N]  mount a tmpfs at GUEST (N in bytes, or with k/m/g)\n"
	      "  --volume HOST:GUEST[:ro]  serve the host directory HOST at GUEST; writes\n"
	      "                    reach HOST unless :ro (then EROFS); repeatable\n"
	      "  --cwd DIR         working directory inside the sandbox (default: the\n"
	      "                    caller's when the sandbox has it, else /)\n"
	      "  --env K=V         set a variable in the guest environment (repeatable);\n"
	      "                    --env K copies K from the caller's environment\n"
	      "  -E, --env-inherit pass the caller's whole environment (default: PATH, HOME\n"
	      "                    and TERM only); --env still sets or replaces variables\n"
	      "  --platform NAME   how guest code runs: seccomp, ptrace, kvm or auto (the default:\n"
	      "                    kvm where hardware KVM works, else seccomp where the kernel\n"
	      "                    allows it, else ptrace; `husk features` says which); the\n"
	      "                    default is $HUSK_PLATFORM if set\n"
	      "  --strace          print every guest system call and its result on stderr\n"
	      "  --hostname NAME   the sandbox's host name (default: husk)\n"
	      "  --console         the guest's /dev/console is husk's stdin (open it read-write\n"
	      "                    to get the console's output there: systemd as pid 1 logs\n"
	      "                    to /dev/console)\n"
	      "  --network=MODE    none (default): loopback only; host: other destinations\n"
	      "                    through the host, under the egress policy\n"
	      "  --egress-allow CIDR[:PORT]  allow a destination the default policy denies\n"
	      "                    (private, loopback, link-local/metadata, multicast)\n"
	      "  --egress-deny CIDR[:PORT]   deny a destination; the last matching rule wins\n"
	      "  --sysctl KEY=VALUE  a namespaced sysctl of the sandbox (repeatable)\n"
	      "  --gateway SOCKET  a credential gateway (husk serve) for the gateway address\n"
	      "                    (HUSK_GATEWAY in the guest), with --gateway-id ID: the\n"
	      "                    sandbox's id there (runtime/serve/GATEWAY.md)\n"
	      "  --name ID         register the sandbox as container ID under the runtime\n"
	      "                    root while it runs (husk checkpoint, exec, ps, kill ID)\n"
	      "  --restore DIR     start from the checkpoint image in DIR instead of CMD\n",
	      out);
}

int cmd_do(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rootfs", required_argument, NULL, 'r' },
		{ "cwd", required_argument, NULL, 'c' },
		{ "env", required_argument, NULL, 'e' },
		{ "env-inherit", no_argument, NULL, 'E' },
		{ "platform", required_argument, NULL, 'p' },
		{ "strace", no_argument, NULL, 's' },
		{ "console", no_argument, NULL, 1005 },
		{ "hostname", required_argument, NULL, 'H' },
		{ "overlay", required_argument, NULL, 'o' },
		{ "tmpfs", required_argument, NULL, 'T' },
		{ "volume", required_argument, NULL, 'v' },
		{ "network", required_argument, NULL, 'N' },
		{ "egress-allow", required_argument, NULL, 'A' },
		{ "egress-deny", required_argument, NULL, 'D' },
		{ "sysctl", required_argument, NULL, 1000 },
		{ "name", required_argument, NULL, 1001 },
		{ "restore", required_argument, NULL, 1002 },
		{ "gateway", required_argument, NULL, 1003 },
		{ "gateway-id", required_argument, NULL, 1004 },
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
		.control_fd = -1,
	};
	static char *restore_argv[] = { "(restored)", NULL };
	char image[PATH_MAX];
	const char *name = NULL, *restore = NULL;
	struct do_record record;
	struct launch_volume *volumes;
	char **env;
	const char **tmpfs;
	const char **net_args;
	int nenv = 0, ntmpfs = 0, nvolumes = 0, nnet = 0, c;
	bool host_net = false, platform_flag = false, env_inherit = false, cwd_flag = false;
	char **env_args; /* the --env values, in order, applied after the base environment */
	int nenv_args = 0;
	char here[PATH_MAX];
	const char *term = getenv("TERM");

	/* husk's global --platform (before the verb) counts as do's own flag. */
	if (oci_g.platform) {
		spec.platform = oci_g.platform;
		platform_flag = true;
	}
	env_args = calloc((size_t)argc + 1, sizeof(char *));
	tmpfs = calloc((size_t)argc + 1, sizeof(char *));
	volumes = calloc((size_t)argc + 1, sizeof(*volumes));
	net_args = calloc((size_t)argc + 2 + MAX_RESOLVERS, sizeof(char *));
	if (!env_args || !tmpfs || !volumes || !net_args)
		return 125;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+hE", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			spec.rootfs = optarg;
			break;
		case 'c':
			spec.cwd = optarg;
			cwd_flag = true;
			break;
		case 'E':
			env_inherit = true;
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
			env_args[nenv_args++] = v;
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
		case 1005:
			spec.console = true;
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
		case 1001:
			name = optarg;
			break;
		case 1002:
			restore = optarg;
			break;
		case 1003:
			spec.gateway = optarg;
			break;
		case 1004:
			spec.gateway_id = optarg;
			break;
		case 'h':
			do_usage(stdout);
			return 0;
		default:
			do_usage(stderr);
			return 125;
		}
	}
	if (restore && optind < argc) {
		fprintf(stderr,
			"husk do: --restore %s takes no command (%s...): the image's processes "
			"continue\n",
			restore, argv[optind]);
		return 125;
	}
	if (restore) {
		/* The sentry's own checks say what is wrong inside an image; this says which
		 * folder is not one, before anything is started. */
		char path[PATH_MAX + 32];

		if (!realpath(restore, image)) {
			fprintf(stderr, "husk do: --restore %s: %s\n", restore, strerror(errno));
			return 125;
		}
		for (int i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/%s", image,
				 i ? STATE_PAGES_FILE : STATE_IMAGE_FILE);
			if (access(path, R_OK) < 0) {
				fprintf(stderr,
					"husk do: --restore %s: not a checkpoint image (%s: %s)\n",
					restore, i ? STATE_PAGES_FILE : STATE_IMAGE_FILE,
					strerror(errno));
				return 125;
			}
		}
		spec.restore_dir = image;
	} else if (optind >= argc) {
		fputs("husk do: no command given\n", stderr);
		do_usage(stderr);
		return 125;
	}
	if (check_platform(spec.platform, platform_flag) < 0)
		return 125;
	if (!spec.gateway != !spec.gateway_id) {
		fputs("husk do: --gateway and --gateway-id go together\n", stderr);
		return 125;
	}
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
	/*
	 * The base environment: by default only what a program needs to run and to use the
	 * terminal (the caller's PATH names host folders, the rest may hold the caller's secrets);
	 * with -E all of the caller's. Then each --env, a later value replacing an earlier one.
	 */
	{
		extern char **environ;
		size_t nbase = 3;

		for (char **e = environ; env_inherit && e && *e; e++)
			nbase++;
		env = calloc(nbase + (size_t)nenv_args + 1, sizeof(char *));
		if (!env)
			return 125;
		if (env_inherit) {
			for (char **e = environ; e && *e; e++) {
				if (strchr(*e, '='))
					env[nenv++] = *e;
			}
		} else {
			env[nenv++] =
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:"
				"/bin";
			env[nenv++] = getuid() == 0 ? "HOME=/root" : "HOME=/";
			if (term) {
				char *t = malloc(strlen(term) + 6);

				if (!t)
					return 125;
				sprintf(t, "TERM=%s", term);
				env[nenv++] = t;
			}
		}
		for (int a = 0; a < nenv_args; a++) {
			char *v = env_args[a];
			size_t klen = strcspn(v, "=");
			int i;

			for (i = 0; i < nenv; i++) {
				if (!strncmp(env[i], v, klen) && env[i][klen] == '=')
					break;
			}
			env[i == nenv ? nenv++ : i] = v;
		}
		env[nenv] = NULL;
	}
	spec.env = env;
	/* The caller's directory, when the guest has it (the sentry checks); --cwd wins. */
	if (!cwd_flag && !restore && getcwd(here, sizeof(here)))
		spec.default_cwd = here;
	spec.tmpfs = tmpfs;
	spec.volumes = volumes;
	spec.nvolumes = nvolumes;
	spec.argv = restore ? restore_argv : argv + optind;
	if (name) {
		int ret = do_record_create(&record, name, &spec);

		if (ret)
			return ret;
		spec.control_fd = record.control_fd;
		spec.started = do_record_started;
		spec.started_arg = &record;
	}
	{
		int ret = launch_and_wait(&spec);

		/* A checkpoint that ended the sandbox is the template's success. */
		if (name && do_record_finish(&record))
			ret = 0;
		/* Ended by a signal husk do was sent: die of it, as the command would have. */
		launch_die_of_caller_signal(ret);
		return ret;
	}
}
