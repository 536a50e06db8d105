/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox of an OCI container: a gofer and a sentry, started so that they outlive husk
 * create. husk forks an intermediate process that forks both and exits, so they are re-parented
 * to init (or to the engine's subreaper: conmon, containerd-shim), which reaps them:
 *
 *   husk create ──fork──> intermediate ──fork/exec──> husk-gofer --fd 3 --readonly ROOTFS
 *                                      ──fork/exec──> husk-sentry --detached --ready-fd 4
 *                                                       --start-fd 5 ... -- ARGS
 *
 * fd 4 is a pipe back to husk create: the sentry writes one byte once pid 1 is loaded and it is
 * about to wait at the gate. fd 5 is <state>/exec.fifo opened O_RDWR (so opening it never
 * blocks); husk start opens it O_WRONLY|O_NONBLOCK (which fails with ENXIO once the sentry is
 * gone) and writes the byte the sentry waits for. The sentry is the container's process: it
 * dies with its stubs, and the gofer exits when the sentry's socket closes.
 *
 * husk run in the foreground skips the intermediate: the sentry is husk's child (and dies with
 * it), so husk gets its exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"

#define SENTRY_GOFER_FD 3
#define SENTRY_READY_FD 4
#define SENTRY_START_FD 5

/* A growable argv. */
struct args {
	char **v;
	size_t n, cap;
	bool oom;
};

static void add(struct args *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		char **v = realloc(a->v, cap * sizeof(char *));
		if (!v) {
			a->oom = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s ? strdup(s) : NULL;
	if (s && !a->v[a->n - 1])
		a->oom = true;
	a->v[a->n] = NULL;
}

static void __attribute__((format(printf, 2, 3))) addf(struct args *a, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s) {
		a->oom = true;
		return;
	}
	add(a, s);
	free(s);
}

static void free_args(struct args *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

static bool annotation_true(const struct oci_config *cfg, const char *key)
{
	const char *v = oci_config_annotation(cfg, key);

	return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

static void sentry_args(struct args *a, const char *sentry, const struct container *c,
			bool detached)
{
	const struct oci_config *cfg = c->config;
	const char *platform = oci_config_annotation(cfg, "dev.husk.platform");

	add(a, sentry);
	addf(a, "--gofer-fd=%d", SENTRY_GOFER_FD);
	addf(a, "--platform=%s", platform ? platform : oci_g.platform);
	addf(a, "--cwd=%s", cfg->cwd);
	if (cfg->hostname)
		addf(a, "--hostname=%s", cfg->hostname);
	if (cfg->domainname)
		addf(a, "--domainname=%s", cfg->domainname);
	addf(a, "--uid=%u", cfg->uid);
	addf(a, "--gid=%u", cfg->gid);
	if (cfg->nadditional_gids) {
		char buf[32 * 12] = "";
		size_t len = 0;

		for (size_t i = 0; i < cfg->nadditional_gids && i < 32; i++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%u", i ? "," : "",
						cfg->additional_gids[i]);
		addf(a, "--groups=%s", buf);
	}
	if (cfg->has_umask)
		addf(a, "--umask=%o", cfg->umask);
	for (size_t i = 0; i < cfg->nrlimits; i++)
		addf(a, "--rlimit=%d=%llu:%llu", cfg->rlimits[i].resource,
		     (unsigned long long)cfg->rlimits[i].soft,
		     (unsigned long long)cfg->rlimits[i].hard);
	if (oci_g.strace || annotation_true(cfg, "dev.husk.strace"))
		add(a, "--strace");
	if (detached)
		add(a, "--detached");
	addf(a, "--ready-fd=%d", SENTRY_READY_FD);
	addf(a, "--start-fd=%d", SENTRY_START_FD);
	for (size_t i = 0; cfg->env[i]; i++)
		addf(a, "--env=%s", cfg->env[i]);
	add(a, "--");
	for (size_t i = 0; cfg->args[i]; i++)
		add(a, cfg->args[i]);
}

/*
 * In a child: places each fds[i] at target i (fds[i] < 0: leave closed), clearing close-on-exec
 * on them. Sources are first moved above every target so no dup2 overwrites another source.
 */
static int place_fds(int *fds, const int *targets, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 20);
		if (fds[i] < 0)
			return -errno;
	}
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0 && dup2(fds[i], targets[i]) < 0)
			return -errno;
	}
	return 0;
}

/* In a child: joins the cgroup and execs argv with the given fds; never returns. */
static void __attribute__((noreturn))
exec_child(const struct container *c, char **argv, int *fds, const int *targets, int n)
{
	if (c->cgroup && cgroup_enter(c->cgroup, 0) < 0) {
		fprintf(stderr, "husk: cannot join cgroup %s: %s\n", c->cgroup, strerror(errno));
		_exit(125);
	}
	if (place_fds(fds, targets, n) < 0)
		_exit(125);
	execv(argv[0], argv);
	fprintf(stderr, "husk: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(125);
}

/* Forks the gofer and the sentry; returns 0 with their pids, or -errno. */
static int fork_pair(const struct container *c, char **gargv, char **sargv, int sv[2], int ready_w,
		     int fifo, int stdio_fd, pid_t *gpid, pid_t *spid)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	*gpid = fork();
	if (*gpid < 0)
		return -errno;
	if (*gpid == 0) {
		int fds[] = { devnull, devnull, 2, sv[0] };
		const int targets[] = { 0, 1, 2, SENTRY_GOFER_FD };

		exec_child(c, gargv, fds, targets, 4);
	}
	*spid = fork();
	if (*spid < 0)
		return -errno;
	if (*spid == 0) {
		int io = stdio_fd;
		int fds[] = { io >= 0 ? io : 0, io >= 0 ? io : 1,
			      io >= 0 ? io : 2, sv[1],
			      ready_w,		fifo };
		const int targets[] = { 0, 1, 2, SENTRY_GOFER_FD, SENTRY_READY_FD, SENTRY_START_FD };

		if (io >= 0) {
			/* The pty is the guest's terminal: a new session has it as controlling
			 * terminal, as runc's init does. */
			setsid();
			ioctl(io, TIOCSCTTY, 0);
		}
		exec_child(c, sargv, fds, targets, 6);
	}
	if (devnull >= 0)
		close(devnull);
	return 0;
}

int sandbox_start(struct container *c, const struct sandbox_opts *o)
{
	_cleanup_free_ char *sentry = runtime_find_helper("husk-sentry");
	_cleanup_free_ char *gofer = runtime_find_helper("husk-gofer");
	_cleanup_free_ char *fifo_path = container_path(c, "exec.fifo");
	struct args ga = { 0 }, sa = { 0 };
	int sv[2] = { -1, -1 }, ready[2] = { -1, -1 }, info[2] = { -1, -1 };
	int fifo = -1;
	pid_t mid, gpid = -1, spid = -1;
	struct stat st;
	char byte;
	int ret = 0;
	ssize_t n;

	if (!sentry || !gofer)
		return oci_fail("cannot find %s next to husk (set HUSK_SENTRY/HUSK_GOFER)",
				!sentry ? "husk-sentry" : "husk-gofer"),
		       -ENOENT;
	if (stat(c->rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
		return oci_fail("rootfs %s: %s", c->rootfs,
				errno ? strerror(errno) : "not a directory"),
		       -ENOENT;
	add(&ga, gofer);
	addf(&ga, "--fd=%d", SENTRY_GOFER_FD);
	/* The writable overlay comes with issue 4: until then every root is read-only inside. */
	add(&ga, "--readonly");
	add(&ga, c->rootfs);
	sentry_args(&sa, sentry, c, !o->foreground);
	if (ga.oom || sa.oom) {
		ret = -ENOMEM;
		goto out;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(ready, O_CLOEXEC) < 0 || pipe2(info, O_CLOEXEC) < 0) {
		ret = -errno;
		oci_fail("creating the sandbox's sockets: %s", strerror(-ret));
		goto out;
	}
	if (mkfifo(fifo_path, 0600) < 0) {
		ret = -errno;
		oci_fail("mkfifo %s: %s", fifo_path, strerror(-ret));
		goto out;
	}
	/* O_RDWR: opening a FIFO for both ends never blocks, and keeps a reader. */
	fifo = open(fifo_path, O_RDWR | O_CLOEXEC);
	if (fifo < 0) {
		ret = -errno;
		oci_fail("open %s: %s", fifo_path, strerror(-ret));
		goto out;
	}
	if (o->foreground) {
		ret = fork_pair(c, ga.v, sa.v, sv, ready[1], fifo, o->stdio_fd, &gpid, &spid);
	} else {
		mid = fork();
		if (mid < 0) {
			ret = -errno;
			goto out;
		}
		if (mid == 0) {
			pid_t pids[2];

			setsid();
			ret = fork_pair(c, ga.v, sa.v, sv, ready[1], fifo, o->stdio_fd, &gpid,
					&spid);
			pids[0] = gpid;
			pids[1] = spid;
			if (write(info[1], pids, sizeof(pids)) != sizeof(pids))
				_exit(1);
			_exit(ret < 0 ? 1 : 0);
		}
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
		close(info[1]);
		info[1] = -1;
		{
			pid_t pids[2] = { -1, -1 };
			if (read(info[0], pids, sizeof(pids)) == sizeof(pids)) {
				gpid = pids[0];
				spid = pids[1];
			}
		}
	}
	close(sv[0]);
	close(sv[1]);
	close(ready[1]);
	sv[0] = sv[1] = ready[1] = -1;
	if (gpid > 0) {
		c->gofer_pid = gpid;
		c->gofer_start = process_start_time(gpid);
	}
	if (spid > 0) {
		c->pid = spid;
		c->pid_start = process_start_time(spid);
	}
	if (ret < 0 || spid <= 0) {
		ret = ret < 0 ? ret : -ECHILD;
		oci_fail("starting the sandbox: %s", strerror(-ret));
		goto out;
	}
	/* The sentry says it is ready, or closes the pipe by dying. */
	while ((n = read(ready[0], &byte, 1)) < 0 && errno == EINTR)
		;
	if (n != 1) {
		ret = -ECHILD;
		oci_fail("the sandbox failed to start (the sentry exited during setup)");
	}
out:
	if (fifo >= 0)
		close(fifo);
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (ready[i] >= 0)
			close(ready[i]);
		if (info[i] >= 0)
			close(info[i]);
	}
	free_args(&ga);
	free_args(&sa);
	return ret;
}

int sandbox_release_gate(const struct container *c)
{
	_cleanup_free_ char *path = container_path(c, "exec.fifo");
	_cleanup_close_ int fd = -1;
	char byte = 1;

	if (!path)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, &byte, 1) != 1)
		return -errno;
	unlink(path);
	return 0;
}
