/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk create [--bundle DIR] [--console-socket PATH] [--pid-file PATH] [--preserve-fds N]
 *             [--no-pivot] [--no-new-keyring] ID
 *
 * Validates the bundle's config.json, records the container under --root, creates its cgroups,
 * starts the sandbox and returns once the sentry waits at the start gate. The pid it reports
 * (state, --pid-file) is the sentry's: it lives exactly as long as the container.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "oci-spec/state.h"
#include "sentry/kernel/sysctl.h"
#include "runtime/control.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"

/* Copies the bundle's config.json into the state directory (later commands read that copy). */
static int copy_config(const char *from, const struct container *c)
{
	_cleanup_free_ char *to = container_path(c, "config.json");
	_cleanup_close_ int in = -1, out = -1;
	char buf[65536];
	ssize_t n;

	if (!to)
		return -ENOMEM;
	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (in < 0 || out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n)
			return -EIO;
	}
	return n < 0 ? -errno : 0;
}

/* The cgroup path: linux.cgroupsPath (a systemd "slice:prefix:name" becomes a path), or
 * the default of the state root (cgroup_default_path: /husk/<id>, or /husk/<id>@<crc of root>
 * under any root but the default one). */
static char *cgroup_path_for(const struct container *c)
{
	const char *p = c->config->cgroups_path;
	char *out = NULL;

	if (!p || !*p)
		return cgroup_default_path(oci_g.root, c->id);
	if (p[0] != '/' && strchr(p, ':')) {
		char slice[256], prefix[256], name[256];

		if (sscanf(p, "%255[^:]:%255[^:]:%255s", slice, prefix, name) == 3) {
			if (asprintf(&out, "/%s/%s-%s.scope", slice, prefix, name) < 0)
				return NULL;
			return out;
		}
	}
	if (asprintf(&out, "%s%s", p[0] == '/' ? "" : "/", p) < 0)
		return NULL;
	return out;
}

int oci_create_container(const struct create_args *a, struct container *c)
{
	_cleanup_free_ char *bundle = NULL;
	_cleanup_free_ char *config_path = NULL;
	struct sandbox_opts so = { .stdio_fd = -1,
				   .foreground = a->foreground,
				   .preserve_fds = a->preserve_fds,
				   .restore_dir = a->restore_dir };
	struct oci_config *cfg = NULL;
	struct oci_error err;
	const char *platform, *source;
	char created[64], why[256];
	int ret;

	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
	/* Before husk opens anything that could take a missing one's number. */
	if (a->preserve_fds < 0 || a->preserve_fds + control_listen_fds() > CONTROL_MAX_PRESERVE)
		return oci_fail("--preserve-fds %d: expected 0 to %d", a->preserve_fds,
				CONTROL_MAX_PRESERVE - control_listen_fds());
	if (control_check_preserved(a->preserve_fds + control_listen_fds(), &ret) < 0)
		return oci_fail("unable to stat preserved-fd %d (of %d): %s", ret,
				a->preserve_fds + control_listen_fds(), strerror(EBADF));
	if (container_id_valid(a->id) < 0)
		return oci_fail("invalid container id '%s'", a->id);
	bundle = realpath(a->bundle ? a->bundle : ".", NULL);
	if (!bundle)
		return oci_fail("bundle %s: %s", a->bundle ? a->bundle : ".", strerror(errno));
	if (asprintf(&config_path, "%s/config.json", bundle) < 0)
		return oci_fail("out of memory");
	ret = oci_config_load(config_path, &cfg, &err);
	if (ret < 0)
		return oci_fail("%s", err.msg);
	/* linux.sysctl: known to the sentry, namespaced, a value it takes (in this process's copy
	 * of the table, in order, as the sentry will apply them); before anything is made. */
	for (size_t i = 0; i < cfg->nsysctl; i++) {
		if (sysctl_set(cfg->sysctl[i].key, cfg->sysctl[i].value, why, sizeof(why)) < 0) {
			oci_config_free(cfg);
			return oci_fail("%s", why);
		}
	}
	/* The platform's name (dev.husk.platform, --platform, $HUSK_PLATFORM), before anything is
	 * made; whether this build has that backend, the sentry says when it starts. */
	platform = sandbox_platform(cfg, &source);
	if (runtime_platform_check(platform, why, sizeof(why)) < 0) {
		ret = oci_fail("%s%s: %s", source, platform, why);
		oci_config_free(cfg);
		return ret;
	}
	/* linux.namespaces paths: present and of their type, before anything is made. */
	if (oci_namespaces_check(cfg) < 0) {
		oci_config_free(cfg);
		return 1;
	}
	if (cfg->terminal && !a->console_socket && !a->foreground) {
		oci_config_free(cfg);
		return oci_fail("cannot allocate tty if runc will detach without setting console "
				"socket");
	}
	ret = container_create_dir(a->id, c);
	if (ret == -EEXIST) {
		oci_config_free(cfg);
		container_release(c);
		return oci_fail("container with id exists: %s", a->id);
	}
	if (ret < 0) {
		oci_config_free(cfg);
		container_release(c);
		return oci_fail(
			"creating the state directory under %s: %s%s", oci_g.root, strerror(-ret),
			ret == -EACCES && geteuid() != 0 ?
				" (not root: set XDG_RUNTIME_DIR to a directory of yours, or "
				"--root)" :
				"");
	}
	c->config = cfg;
	c->bundle = steal_pointer(&bundle);
	/* A pod member: its processes go to its sandbox's sentry (pod.c), when there is one. */
	if (pod_sandbox_id(cfg) && strcmp(pod_sandbox_id(cfg), a->id) != 0 && !a->foreground &&
	    !a->restore_dir) {
		_cleanup_free_ char *sbdir = NULL;

		if (asprintf(&sbdir, "%s/%s", oci_g.root, pod_sandbox_id(cfg)) > 0 &&
		    access(sbdir, F_OK) == 0)
			c->sandbox = strdup(pod_sandbox_id(cfg));
		else
			oci_warn("pod sandbox %s is not a husk container under %s: %s gets a "
				 "sandbox of its own",
				 pod_sandbox_id(cfg), oci_g.root, a->id);
	} else if (!pod_sandbox_id(cfg) && !a->foreground && !a->restore_dir) {
		/* podman's pods: the infra container's IPC, UTS and network namespaces. */
		c->sandbox = pod_sandbox_by_namespaces(cfg, a->id);
	}
	if (cfg->root_path[0] == '/')
		c->rootfs = realpath(cfg->root_path, NULL);
	else if (asprintf(&c->rootfs, "%s/%s", c->bundle, cfg->root_path) < 0)
		c->rootfs = NULL;
	oci_timestamp_now(created, sizeof(created));
	c->created = strdup(created);
	c->cgroup = cgroup_path_for(c);
	if (!c->rootfs || !c->created || !c->cgroup) {
		ret = oci_fail("rootfs %s: %s", cfg->root_path, strerror(errno ? errno : ENOMEM));
		goto out_destroy;
	}
	ret = copy_config(config_path, c);
	if (ret >= 0)
		ret = container_save(c);
	if (ret < 0) {
		ret = oci_fail("writing the container's state: %s", strerror(-ret));
		goto out_destroy;
	}
	for (size_t i = 0; i < cfg->nmounts; i++) {
		const struct oci_mount *m = &cfg->mounts[i];
		/* Accepted and recorded: bind mounts need a gofer each (issue 4). */
		if (m->kind == OCI_MOUNT_BIND && oci_g.debug)
			oci_warn("bind mount %s -> %s recorded, not served yet", m->source,
				 m->destination);
	}
	ret = cgroup_create(c->cgroup, cfg);
	if (ret < 0) {
		ret = oci_fail("cgroup %s: %s", c->cgroup, strerror(-ret));
		free(c->cgroup);
		c->cgroup = NULL;
		goto out_destroy;
	}
	if (ret > 0) {
		/* Rootless, no cgroup delegated: the container has none (the record says so). */
		free(c->cgroup);
		c->cgroup = NULL;
		ret = container_save(c);
		if (ret < 0) {
			ret = oci_fail("writing the container's state: %s", strerror(-ret));
			goto out_destroy;
		}
	}
	if (a->console_socket) {
		so.stdio_fd = console_send_master(a->console_socket, cfg);
		if (so.stdio_fd < 0) {
			ret = oci_fail("console socket %s: %s", a->console_socket,
				       strerror(-so.stdio_fd));
			goto out_destroy;
		}
	}
	ret = c->sandbox ? pod_member_start(c, &so) : sandbox_start(c, &so);
	if (so.stdio_fd >= 0)
		close(so.stdio_fd);
	if (ret < 0) {
		ret = 1;
		goto out_destroy;
	}
	ret = container_save(c);
	if (ret < 0) {
		ret = oci_fail("writing the container's state: %s", strerror(-ret));
		goto out_destroy;
	}
	/* The sentry's OOM kills made visible in the host cgroup (oomreport.c). */
	oom_report_start(c);
	/* runc runs prestart and createRuntime in create, createContainer in the container's
	 * namespaces (here: also from the runtime: the guest has no host namespaces). */
	if (hooks_run(c, OCI_HOOK_PRESTART, CONTAINER_CREATED) < 0 ||
	    hooks_run(c, OCI_HOOK_CREATE_RUNTIME, CONTAINER_CREATED) < 0 ||
	    hooks_run(c, OCI_HOOK_CREATE_CONTAINER, CONTAINER_CREATED) < 0) {
		ret = 1;
		goto out_destroy;
	}
	if (a->pid_file) {
		ret = write_pid_file(a->pid_file, c->pid);
		if (ret < 0) {
			ret = oci_fail("pid file %s: %s", a->pid_file, strerror(-ret));
			goto out_destroy;
		}
	}
	return 0;

out_destroy:
	container_destroy(c);
	return ret ? ret : 1;
}

int cmd_create(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "no-pivot", no_argument, NULL, 'N' },
		{ "no-new-keyring", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		/* husk's: start from a checkpoint image (a template) instead of the process */
		{ "restore", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	char image[PATH_MAX];
	struct create_args a = { 0 };
	struct container c;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+b:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			a.bundle = optarg;
			break;
		case 'c':
			a.console_socket = optarg;
			break;
		case 'p':
			a.pid_file = optarg;
			break;
		case 'f':
			a.preserve_fds = atoi(optarg);
			break;
		case 'N':
		case 'K':
			break;
		case 'R':
			if (!realpath(optarg, image))
				return oci_fail("create: --restore %s: %s", optarg,
						strerror(errno));
			a.restore_dir = image;
			break;
		case 'h':
			puts("usage: husk create [--bundle DIR] [--console-socket PATH] "
			     "[--pid-file PATH] [--preserve-fds N] [--restore IMAGE-DIR] ID");
			return 0;
		default:
			return 1;
		}
	}
	if (optind != argc - 1)
		return oci_fail("create: expected exactly one container id");
	a.id = argv[optind];
	ret = oci_create_container(&a, &c);
	container_release(&c);
	return ret;
}
