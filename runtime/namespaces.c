/* SPDX-License-Identifier: Apache-2.0 */
/*
 * linux.namespaces on the host side. husk's host processes (sentry, gofers, stubs) keep the host
 * namespaces they have whatever the config says; the guest's namespaces are the sentry's own
 * (README.md, "Namespaces"). What a config's entries still decide here:
 *   - an entry with a path must name a namespace of its type: create opens it and asks the
 *     kernel its type (NS_GET_NSTYPE) before anything is made, and refuses a missing path or a
 *     wrong type with runc's wording;
 *   - network: a path is where the sentry's host sockets live (the sentry process joins it
 *     before it runs, sandbox.c); the mode (dev.husk.network) follows from the entry;
 *   - uts: without a config hostname the guest gets the hostname of the UTS namespace it would
 *     have had under runc (the host's, or that of the path's namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/oci.h"

static const struct {
	const char *type; /* the runtime-spec's name */
	int flag; /* CLONE_NEW* */
	const char *kernel; /* /proc/PID/ns/ name */
} ns_types[] = {
	{ "pid", CLONE_NEWPID, "pid" },		 { "network", CLONE_NEWNET, "net" },
	{ "mount", CLONE_NEWNS, "mnt" },	 { "ipc", CLONE_NEWIPC, "ipc" },
	{ "uts", CLONE_NEWUTS, "uts" },		 { "user", CLONE_NEWUSER, "user" },
	{ "cgroup", CLONE_NEWCGROUP, "cgroup" }, { "time", 0x80 /* CLONE_NEWTIME */, "time" },
};

static int ns_flag(const char *type)
{
	for (size_t i = 0; i < sizeof(ns_types) / sizeof(ns_types[0]); i++) {
		if (!strcmp(ns_types[i].type, type))
			return ns_types[i].flag;
	}
	return 0;
}

static const char *ns_kernel_name(int flag)
{
	for (size_t i = 0; i < sizeof(ns_types) / sizeof(ns_types[0]); i++) {
		if (ns_types[i].flag == flag)
			return ns_types[i].kernel;
	}
	return "unknown";
}

/* strerror as Go prints errors (runc's messages): its first letter in lower case. */
static const char *go_strerror(int err, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strerror(err));
	if (buf[0] >= 'A' && buf[0] <= 'Z')
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

/*
 * Opens ns->path and checks that it is a namespace of ns->type. Returns the fd (close-on-exec),
 * or -errno after printing runc's message: "namespace path: lstat PATH: no such file or
 * directory" for a missing path, "failed to setns into TYPE namespace: Invalid argument" (TYPE
 * the kernel's name, "net" for network, as runc's nsexec prints it; then the path and what it
 * is) for a wrong type.
 */
static int ns_open_checked(const struct oci_namespace *ns)
{
	char e[128];
	int fd, type;

	fd = open(ns->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		if (err == ENOENT || err == ENOTDIR)
			oci_fail(
				"unable to create new parent process: namespace path: lstat %s: %s",
				ns->path, go_strerror(err, e, sizeof(e)));
		else
			oci_fail("unable to start container process: failed to open %s: %s",
				 ns->path, strerror(err));
		return -err;
	}
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type != ns_flag(ns->type)) {
		/* runc learns it from setns(2), which fails with EINVAL; husk asks first, and
		 * says what the path is. */
		oci_fail("unable to start container process: failed to setns into %s namespace: "
			 "Invalid argument (%s is %s%s namespace)",
			 ns_kernel_name(ns_flag(ns->type)), ns->path, type < 0 ? "not a" : "a ",
			 type < 0 ? "" : ns_kernel_name(type));
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int oci_namespaces_check(const struct oci_config *cfg)
{
	for (size_t i = 0; i < cfg->nnamespaces; i++) {
		int fd;

		if (!cfg->namespaces[i].path)
			continue;
		fd = ns_open_checked(&cfg->namespaces[i]);
		if (fd < 0)
			return fd;
		close(fd);
	}
	return 0;
}

int oci_namespace_open(const struct oci_config *cfg, const char *type)
{
	const struct oci_namespace *ns = oci_config_namespace(cfg, type);

	if (!ns || !ns->path)
		return -ENOENT;
	return ns_open_checked(ns);
}

const char *oci_network_mode(const struct oci_config *cfg)
{
	const char *a = oci_config_annotation(cfg, "dev.husk.network");
	const struct oci_namespace *ns = oci_config_namespace(cfg, "network");

	if (a)
		return a;
	/* Not listed: shared with the host (the spec); a path: the engine's namespace. Both
	 * reach it through the sentry's host sockets, under the egress policy. */
	if (!ns || ns->path)
		return "host";
	return "none";
}

bool oci_network_inbound(const struct oci_config *cfg)
{
	const struct oci_namespace *ns = oci_config_namespace(cfg, "network");

	return ns && ns->path && !strcmp(oci_network_mode(cfg), "host");
}

const char *oci_network_egress_allow(const struct oci_config *cfg, char *buf, size_t len)
{
	const char *a = oci_config_annotation(cfg, "dev.husk.egress-allow");
	const struct oci_namespace *ns = oci_config_namespace(cfg, "network");

	if (!ns || !ns->path)
		return a;
	/*
	 * In the engine's network namespace the engine owns the network (a pod's, a CNI bridge's):
	 * its private ranges are the pod's own, so the default denials of RFC 1918, CGNAT and
	 * unique-local addresses give way. Loopback, link-local (the cloud metadata address),
	 * multicast and reserved ranges stay denied; the config's own rules come after these and
	 * its deny list still wins.
	 */
	snprintf(buf, len, "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7%s%s",
		 a && *a ? "," : "", a ? a : "");
	return buf;
}

int oci_uts_hostname(const struct oci_config *cfg, char *buf, size_t len)
{
	const struct oci_namespace *ns = oci_config_namespace(cfg, "uts");
	struct utsname u;
	int p[2], fd, status;
	pid_t pid;
	ssize_t n;

	if (!ns || !ns->path) {
		if (uname(&u) < 0)
			return -errno;
		snprintf(buf, len, "%s", u.nodename);
		return 0;
	}
	/* Another UTS namespace: a child joins it and reports its nodename. */
	fd = oci_namespace_open(cfg, "uts");
	if (fd < 0)
		return fd;
	if (pipe2(p, O_CLOEXEC) < 0) {
		close(fd);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		close(fd);
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		if (setns(fd, CLONE_NEWUTS) < 0 || uname(&u) < 0)
			_exit(1);
		n = write(p[1], u.nodename, strlen(u.nodename));
		_exit(n < 0);
	}
	close(fd);
	close(p[1]);
	n = read(p[0], buf, len - 1);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -EIO;
	buf[n] = 0;
	return 0;
}
