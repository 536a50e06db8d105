/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods: one sandbox per pod. A container whose annotations name an existing husk sandbox
 * (pod_sandbox_id) is started inside that sandbox's sentry instead of a sentry of its own:
 *
 *   husk create MEMBER ──fork──> intermediate ──fork/exec──> husk-gofer --fd 3 ROOTFS
 *                                             ──fork/exec──> husk-gofer --fd 3 SOURCE (binds)
 *                      ──CONTROL_CONTAINER_CREATE──> the sandbox's sentry (control.sock):
 *                            the member's husk-sentry argv, the gofers' sockets, its stdio,
 *                            its exec.fifo, its seccomp program (runtime/control_pod.h)
 *                      ──fork──> container proxy (holds the connection)
 *
 * The member's pid (state, --pid-file) is the container proxy's, a host process that lives
 * exactly as long as the member's init: it exits with the init's status (or dies of its
 * signal) when CONTROL_EXITED arrives, so the engine's subreaper (containerd-shim, conmon) reaps
 * it as it would runc's container process. It forwards the catchable signals it gets to the
 * member's init (husk kill ID SIGNAL signals it, as for any container); when it dies (husk kill
 * ID KILL, husk delete) the sentry kills every process of the member. The member's
 * <state>/control.sock is a symlink to the sandbox's: husk exec, ps, kill --all, update and
 * events name the member first on each connection (control_client.c), so they act on it only.
 * husk start releases its exec.fifo as for a sandbox (the sentry holds it open and the member's
 * init waits on it). Deleting the sandbox's container kills the sentry: the members' proxies
 * then die of SIGKILL and the members read as stopped.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/control_pod.h"
#include "runtime/oci.h"

const char *pod_sandbox_id(const struct oci_config *cfg)
{
	static const struct {
		const char *type, *id;
	} keys[] = {
		{ "io.kubernetes.cri.container-type", "io.kubernetes.cri.sandbox-id" },
		{ "io.kubernetes.cri-o.ContainerType", "io.kubernetes.cri-o.SandboxID" },
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *type = oci_config_annotation(cfg, keys[i].type);
		const char *id = oci_config_annotation(cfg, keys[i].id);

		if (type && id && !strcmp(type, "container"))
			return id;
	}
	return NULL;
}

/* N of a "/proc/N/ns/NAME" path, or 0. */
static pid_t ns_path_pid(const char *path, const char *name)
{
	char tail[32];
	long n;
	int end = 0;

	if (!path || sscanf(path, "/proc/%ld/ns/%31s%n", &n, tail, &end) != 2 || path[end] ||
	    strcmp(tail, name) || n <= 0)
		return 0;
	return (pid_t)n;
}

char *pod_sandbox_by_namespaces(const struct oci_config *cfg, const char *self)
{
	static const struct {
		const char *type, *name;
	} shared[] = { { "ipc", "ipc" }, { "uts", "uts" }, { "network", "net" } };
	pid_t pid = 0;
	DIR *d;
	struct dirent *de;
	char *found = NULL;

	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		pid_t p = 0;

		for (size_t j = 0; j < cfg->nnamespaces; j++) {
			if (!strcmp(cfg->namespaces[j].type, shared[i].type))
				p = ns_path_pid(cfg->namespaces[j].path, shared[i].name);
		}
		if (p == 0 || (pid && p != pid))
			return NULL;
		pid = p;
	}
	d = opendir(oci_g.root);
	if (!d)
		return NULL;
	while (!found && (de = readdir(d))) {
		_cleanup_free_ char *state = NULL;
		json_t *o;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, self) ||
		    asprintf(&state, "%s/%s/state.json", oci_g.root, de->d_name) < 0)
			continue;
		/* Read without the container's lock: only a running sandbox's pid is taken. */
		o = json_load_file(state, 0, NULL);
		if (o && !json_object_get(o, "sandbox") &&
		    json_integer_value(json_object_get(o, "pid")) == pid &&
		    process_alive(pid,
				  (uint64_t)json_integer_value(json_object_get(o, "pid_start"))))
			found = strdup(de->d_name);
		json_decref(o);
	}
	closedir(d);
	return found;
}

/* A child's fds: targets[i] gets fds[i]; every other fd above 2 is closed. */
static int child_fds(const int *fds, const int *targets, int n)
{
	int moved[8];

	for (int i = 0; i < n; i++) {
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64);
		if (moved[i] < 0)
			return -errno;
	}
	for (int i = 0; i < n; i++) {
		if (dup2(moved[i], targets[i]) < 0)
			return -errno;
	}
	/* The container's lock and every other fd of husk create stay behind. */
	syscall(SYS_close_range, (unsigned int)n, ~0U, 0);
	return 0;
}

/* Starts the gofers in a process that forks them and exits (they are re-parented to the
 * engine's subreaper or init); pairs[i][0] is gofer i's end. Returns 0 with the root gofer's
 * pid, or -errno. */
static int start_gofers(const struct container *c, const struct sandbox_member_plan *p,
			int pairs[][2], pid_t *gpid)
{
	int info[2];
	pid_t mid;

	if (pipe2(info, O_CLOEXEC) < 0)
		return -errno;
	mid = fork();
	if (mid < 0) {
		close(info[0]);
		close(info[1]);
		return -errno;
	}
	if (mid == 0) {
		pid_t first = -1;

		setsid();
		for (int i = 0; i < p->ngofers; i++) {
			pid_t pid = fork();

			if (pid < 0)
				_exit(1);
			if (pid == 0) {
				int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
				int fds[] = { devnull, devnull, devnull, pairs[i][0] };
				const int targets[] = { 0, 1, 2, p->gofer_slot };

				if (c->cgroup && cgroup_enter(c->cgroup, 0) < 0)
					_exit(125);
				if (devnull < 0 || child_fds(fds, targets, 4) < 0)
					_exit(125);
				execv(p->gofer_argv[i][0], p->gofer_argv[i]);
				_exit(125);
			}
			if (i == 0)
				first = pid;
		}
		if (write(info[1], &first, sizeof(first)) != sizeof(first))
			_exit(1);
		_exit(0);
	}
	close(info[1]);
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	if (read(info[0], gpid, sizeof(*gpid)) != sizeof(*gpid) || *gpid <= 0) {
		close(info[0]);
		return -ECHILD;
	}
	close(info[0]);
	return 0;
}

/* The container proxy's signals: as husk exec's proxy, every catchable one is forwarded. */
static int proxy_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGSEGV ||
		    sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
		    sig == SIGSYS || (sig >= 32 && sig < SIGRTMIN))
			continue;
		sigaddset(&set, sig);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Dies as status says (the member's init's wait status), so the engine sees the same. */
static void __attribute__((noreturn)) proxy_exit(int status)
{
	int sig = status & 0x7f;

	if (sig) {
		sigset_t one;

		sigemptyset(&one);
		sigaddset(&one, sig);
		signal(sig, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		kill(getpid(), sig);
		raise(SIGKILL);
	}
	_exit((status >> 8) & 0xff);
}

/*
 * The container proxy (a child of husk create, its own session, stdio on /dev/null): waits for
 * CONTROL_EXITED on sock (fd 3) while forwarding the signals read on sigfd (fd 4) to the
 * member's init through ctl (the member's control.sock). A lost connection (the sentry is gone:
 * the sandbox was deleted or killed) ends it as SIGKILL would the container.
 */
static void __attribute__((noreturn)) proxy_main(const char *ctl, int32_t init_pid)
{
	struct control_exited ex;

	for (;;) {
		struct pollfd p[2] = { { .fd = 3, .events = POLLIN },
				       { .fd = 4, .events = POLLIN } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			proxy_exit(SIGKILL);
		}
		while ((p[1].revents & POLLIN) && read(4, &si, sizeof(si)) == sizeof(si)) {
			char msg[CONTROL_SIGNAL_MSG_LEN];
			size_t len;

			if (si.ssi_signo == SIGURG || si.ssi_signo == SIGWINCH)
				continue;
			len = control_encode_signal(init_pid, (int)si.ssi_signo, msg);
			control_call(ctl, msg, len);
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (control_recv(3, CONTROL_EXITED, &ex, sizeof(ex)) < 0)
				proxy_exit(SIGKILL);
			proxy_exit(ex.status);
		}
	}
}

/*
 * Kubernetes without shareProcessNamespace: the config lists a pid namespace with no path. The
 * member then gets --private-pids (before "--"): its processes and the pod's others do not see
 * each other (sentry/kernel/pid.c). Returns 0 or -ENOMEM.
 */
static int private_pids_arg(const struct container *c, struct sandbox_member_plan *p)
{
	char **v;
	int dash;

	for (size_t i = 0; i < c->config->nnamespaces; i++) {
		const struct oci_namespace *ns = &c->config->namespaces[i];

		if (strcmp(ns->type, "pid") || (ns->path && *ns->path))
			continue;
		for (dash = 0; dash < p->nargs && strcmp(p->sentry_argv[dash], "--"); dash++)
			;
		v = realloc(p->sentry_argv, (size_t)(p->nargs + 2) * sizeof(char *));
		if (!v)
			return -ENOMEM;
		p->sentry_argv = v;
		memmove(v + dash + 1, v + dash, (size_t)(p->nargs - dash + 1) * sizeof(char *));
		v[dash] = strdup("--private-pids");
		if (!v[dash])
			return -ENOMEM;
		p->nargs++;
		return 0;
	}
	return 0;
}

/* Sends the CONTROL_CONTAINER_CREATE request on sock. Returns 0 or -errno. */
static int send_create(int sock, const struct container *c, const struct sandbox_member_plan *p,
		       const int *fds, const int32_t *slots, int nfds)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_CONTAINER_CREATE };
	struct control_container cc;
	_cleanup_free_ char *msg = NULL;
	size_t len = sizeof(h) + sizeof(cc), off;

	memset(&cc, 0, sizeof(cc));
	if (strlen(c->id) >= sizeof(cc.id))
		return -ENAMETOOLONG;
	strcpy(cc.id, c->id);
	cc.nargs = (uint32_t)p->nargs;
	cc.nfds = (uint32_t)nfds;
	memcpy(cc.slots, slots, sizeof(int32_t) * (size_t)nfds);
	for (int i = 0; i < p->nargs; i++)
		len += strlen(p->sentry_argv[i]) + 1;
	if (len > CONTROL_MAX_MSG)
		return -E2BIG;
	msg = malloc(len);
	if (!msg)
		return -ENOMEM;
	h.len = (uint32_t)(len - sizeof(h));
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &cc, sizeof(cc));
	off = sizeof(h) + sizeof(cc);
	for (int i = 0; i < p->nargs; i++) {
		size_t l = strlen(p->sentry_argv[i]) + 1;

		memcpy(msg + off, p->sentry_argv[i], l);
		off += l;
	}
	return control_send_fds(sock, msg, len, fds, nfds);
}

int pod_member_start(struct container *c, const struct sandbox_opts *o)
{
	_cleanup_free_ char *fifo_path = container_path(c, "exec.fifo");
	_cleanup_free_ char *ctl = container_path(c, "control.sock");
	_cleanup_free_ char *sb_ctl = NULL;
	struct sandbox_member_plan p;
	struct container sb;
	int pairs[17][2];
	int fds[CONTROL_CONTAINER_MAX_FDS];
	int32_t slots[CONTROL_CONTAINER_MAX_FDS];
	int nfds = 0, fifo = -1, sock = -1, sigfd = -1, ret;
	enum container_status st;
	struct control_reply r;
	pid_t gpid = -1, proxy;

	if (!fifo_path || !ctl)
		return oci_fail("out of memory"), -ENOMEM;
	if (container_load(c->sandbox, &sb) < 0) {
		container_release(&sb);
		return oci_fail("pod sandbox %s: no such container under %s", c->sandbox,
				oci_g.root),
		       -ENOENT;
	}
	st = container_status(&sb);
	if (sb.sandbox || (st != CONTAINER_RUNNING && st != CONTAINER_PAUSED)) {
		ret = oci_fail("pod sandbox %s: %s", c->sandbox,
			       sb.sandbox ? "a member of another pod, not a sandbox" :
					    "not running");
		container_release(&sb);
		return -ESRCH;
	}
	sb_ctl = container_path(&sb, "control.sock");
	container_release(&sb);
	if (!sb_ctl)
		return oci_fail("out of memory"), -ENOMEM;
	ret = sandbox_member_plan(c, o->preserve_fds, &p);
	if (ret < 0)
		return ret;
	ret = private_pids_arg(c, &p);
	if (ret < 0) {
		oci_fail("out of memory");
		sandbox_member_plan_free(&p);
		return ret;
	}
	for (int i = 0; i < p.ngofers; i++)
		pairs[i][0] = pairs[i][1] = -1;
	for (int i = 0; i < p.ngofers; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pairs[i]) < 0) {
			ret = -errno;
			oci_fail("creating the gofers' sockets: %s", strerror(-ret));
			goto out;
		}
	}
	if (mkfifo(fifo_path, 0600) < 0 || (fifo = open(fifo_path, O_RDWR | O_CLOEXEC)) < 0) {
		ret = -errno;
		oci_fail("exec.fifo %s: %s", fifo_path, strerror(-ret));
		goto out;
	}
	/* The member's control socket is its sandbox's, the member named on each connection. */
	if (symlink(sb_ctl, ctl) < 0) {
		ret = -errno;
		oci_fail("control socket %s: %s", ctl, strerror(-ret));
		goto out;
	}
	sock = control_dial(sb_ctl);
	if (sock < 0) {
		ret = sock;
		oci_fail("pod sandbox %s: its control socket: %s", c->sandbox, strerror(-ret));
		goto out;
	}
	ret = start_gofers(c, &p, pairs, &gpid);
	if (ret < 0) {
		oci_fail("starting the gofers: %s", strerror(-ret));
		goto out;
	}
	c->gofer_pid = gpid;
	c->gofer_start = process_start_time(gpid);
	for (int i = 0; i < p.ngofers; i++) {
		close(pairs[i][0]);
		pairs[i][0] = -1;
		fds[nfds] = pairs[i][1];
		slots[nfds++] = i == 0 ? p.gofer_slot : p.volume_slot + i - 1;
	}
	for (int i = 0; i < 3; i++) {
		fds[nfds] = o->stdio_fd >= 0 ? o->stdio_fd : i;
		slots[nfds++] = i;
	}
	fds[nfds] = fifo;
	slots[nfds++] = p.start_slot;
	if (p.seccomp_fd >= 0) {
		fds[nfds] = p.seccomp_fd;
		slots[nfds++] = p.seccomp_slot;
	}
	if (p.preserve_fd >= 0) {
		fds[nfds] = p.preserve_fd;
		slots[nfds++] = p.preserve_slot;
	}
	ret = send_create(sock, c, &p, fds, slots, nfds);
	if (ret < 0) {
		oci_fail("pod sandbox %s: sending the container: %s", c->sandbox, strerror(-ret));
		goto out;
	}
	/* The sentry has its copies: the gofers see EOF once it drops the member. */
	for (int i = 0; i < p.ngofers; i++) {
		close(pairs[i][1]);
		pairs[i][1] = -1;
	}
	ret = control_recv(sock, CONTROL_REPLY, &r, sizeof(r));
	if (ret == 0 && r.err < 0)
		ret = r.err;
	if (ret < 0) {
		oci_fail("pod sandbox %s: the container could not start in it: %s%s", c->sandbox,
			 strerror(-ret),
			 ret == -ENOENT ? " (its program, cwd or a mount source is missing)" : "");
		goto out;
	}
	/* Blocked before the fork: no signal meant for the member is lost. */
	sigfd = proxy_signals();
	if (sigfd < 0) {
		ret = -errno;
		oci_fail("signalfd: %s", strerror(-ret));
		goto out;
	}
	proxy = fork();
	if (proxy < 0) {
		ret = -errno;
		oci_fail("fork: %s", strerror(-ret));
		goto out;
	}
	if (proxy == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		int cfds[] = { devnull, devnull, devnull, sock, sigfd };
		const int targets[] = { 0, 1, 2, 3, 4 };

		setsid();
		if (c->cgroup)
			cgroup_enter(c->cgroup, 0);
		if (devnull < 0 || child_fds(cfds, targets, 5) < 0)
			_exit(125);
		proxy_main(ctl, r.pid);
	}
	/*
	 * In the container's cgroup before create returns, not only when the child gets to its own
	 * cgroup_enter: the engine reads the cgroup of the pid create reports at once (containerd's
	 * shim loads it from /proc/PID/cgroup and registers its OOM eventfd there), and under load
	 * it read the caller's (CRI's OOMKilled was lost: the report went to the container's).
	 */
	if (c->cgroup && cgroup_enter(c->cgroup, proxy) < 0)
		oci_warn("the container proxy %d: cannot enter cgroup %s", (int)proxy, c->cgroup);
	c->pid = proxy;
	c->pid_start = process_start_time(proxy);
	ret = 0;
out:
	if (sigfd >= 0) {
		sigset_t all;

		close(sigfd);
		sigfillset(&all);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
	}
	if (sock >= 0)
		close(sock);
	if (fifo >= 0)
		close(fifo);
	for (int i = 0; i < p.ngofers; i++) {
		for (int j = 0; j < 2; j++) {
			if (pairs[i][j] >= 0)
				close(pairs[i][j]);
		}
	}
	sandbox_member_plan_free(&p);
	return ret;
}
