/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox of an OCI container: a gofer and a sentry, started so that they outlive husk
 * create. husk forks an intermediate process that forks both and exits, so they are re-parented
 * to init (or to the engine's subreaper: conmon, containerd-shim), which reaps them:
 *
 *   husk create ──fork──> intermediate ──fork/exec──> husk-gofer --fd 3 [--readonly] ROOTFS
 *                                      ──fork/exec──> husk-gofer --fd 3 [--readonly] SOURCE
 *                                                       (one per bind mount: a directory, or
 *                                                       a regular file served alone)
 *                                      ──fork/exec──> husk-sentry --detached --ready-fd 4
 *                                                       --start-fd 5 --control-fd 6
 *                                                       [--log-fd 7] [--volume-fd 8+I:DEST]...
 *                                                       [--tmpfs DEST:size=N:mode=M]... -- ARGS
 *
 * fd 4 is a pipe back to husk create: the sentry writes one byte once pid 1 is loaded and it is
 * about to wait at the gate. fd 5 is <state>/exec.fifo opened O_RDWR (so opening it never
 * blocks); husk start opens it O_WRONLY|O_NONBLOCK (which fails with ENXIO once the sentry is
 * gone) and writes the byte the sentry waits for. The sentry is the container's process: it
 * dies with its stubs, and the gofer exits when the sentry's socket closes.
 *
 * fd 6 is <state>/control.sock, bound and listening: husk exec and husk ps connect to it.
 * fd 7 (--debug-log DIR) is DIR/<id>.sentry.log; the gofers' stderr goes to DIR/<id>.gofer.log,
 * else, detached, to /dev/null: only the guest (the sentry's fds 0-2) keeps create's stdio.
 * With a terminal and no --debug-log, fd 7 is husk's stderr (HUSK_SETUP_STDERR_FD=7): the
 * sentry's messages until it is ready, then closed.
 * With the annotations dev.husk.gateway (husk serve's gateway socket) and dev.husk.gateway-id
 * (the sandbox's id there), husk create connects to the credential gateway, introduces the
 * sandbox and passes the connection as --gateway-fd (runtime/serve/GATEWAY.md); the guest
 * gets HUSK_GATEWAY.
 *
 * config.json mounts: tmpfs (and shm) become the sentry's tmpfs mounts with their size and
 * mode; a bind or rbind of a directory or of a regular file gets a gofer of its own (read-only
 * in the gofer and in the sentry with "ro"; a file's gofer serves that file and nothing else of
 * its directory: podman's /etc/hosts, /etc/resolv.conf, /etc/hostname, /run/.containerenv).
 * noexec, nosuid and nodev become the sentry's per-mount flags (execve of a file on a noexec
 * mount is EACCES; set-id bits are never honoured at execve anyway). proc, sysfs, devpts,
 * mqueue and cgroup are the sentry's own at their usual places; other destinations for them are
 * skipped (logged with --debug), as are binds of other file types (warning). A tmpfs on /dev or
 * /dev/shm is skipped: the sentry has its own devfs and /dev/shm tmpfs there (of the default
 * size). The sentry makes missing mountpoints (directories, or an empty file for a file bind),
 * as runc does. The root is the in-memory overlay over a read-only gofer; with root.readonly
 * the sentry makes the mountpoints in its upper layer and then makes the root read-only;
 * --overlay none (dev.husk.overlay) serves it writable instead.
 *
 * husk run in the foreground skips the intermediate: the sentry is husk's child (and dies with
 * it), so husk gets its exit status.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/guestview.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"
#include "sentry/net/bpf/netbpf.h"
#include "sentry/net/gateway.h"

#define SENTRY_GOFER_FD 3
#define SENTRY_READY_FD 4
#define SENTRY_START_FD 5
#define SENTRY_CONTROL_FD 6
#define SENTRY_LOG_FD 7
#define SENTRY_VOLUME_FD 8
#define MAX_VOLUMES 16
#define SENTRY_SECCOMP_FD (SENTRY_VOLUME_FD + MAX_VOLUMES) /* linux.seccomp's BPF program */
#define SENTRY_PRESERVE_FD (SENTRY_SECCOMP_FD + 1) /* --preserve-fds: a socket holding them */
#define SENTRY_GATEWAY_FD (SENTRY_PRESERVE_FD + 1) /* the credential gateway's connection */
/* crash.log in the state dir: the sentry's crash report, which husk events reads (issue 18) */
#define SENTRY_CRASH_FD (SENTRY_GATEWAY_FD + 1)
#define SENTRY_NFDS (SENTRY_CRASH_FD + 1)
/* Most fds --preserve-fds and $LISTEN_FDS pass (one SCM_RIGHTS message, as the sentry takes). */
#define MAX_PRESERVE 250
#define MAX_TMPFS 16

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

/* A husk option: the container's dev.husk.<name> annotation, else the global flag's value. */
static const char *husk_option(const struct oci_config *cfg, const char *name, const char *global)
{
	char key[64];
	const char *v;

	snprintf(key, sizeof(key), "dev.husk.%s", name);
	v = oci_config_annotation(cfg, key);
	return v ? v : global;
}

const char *sandbox_platform(const struct oci_config *cfg, const char **source)
{
	const char *v = oci_config_annotation(cfg, "dev.husk.platform");
	const char *src = "dev.husk.platform=";

	if (!v && oci_g.platform) {
		v = oci_g.platform;
		src = "--platform ";
	} else if (!v) {
		v = runtime_platform_default();
		src = strcmp(v, "auto") ? "HUSK_PLATFORM=" : "platform ";
	}
	if (source)
		*source = src;
	return v;
}

/* Whether the root is served writable to the sentry (--overlay none) rather than overlaid. */
static bool overlay_none(const struct oci_config *cfg)
{
	const char *ov = husk_option(cfg, "overlay", oci_g.overlay);

	return ov && !strcmp(ov, "none");
}

/* The config's directory bind mounts, served by gofers of their own (in order). */
struct bind_plan {
	const struct oci_mount *m[MAX_VOLUMES];
	int n;
};

/*
 * Whether the sentry can mount at m's destination. It makes missing mountpoints itself, as
 * runc does (in the overlay's upper layer, even with a read-only root, which it makes read-only
 * afterwards; on the host with --overlay none), following symlinks inside the guest's tree; a
 * destination must only be absolute, without "." or ".." (the sentry refuses those). Warns
 * about a mount it skips.
 */
static bool mountpoint_ok(const struct container *c, const struct oci_mount *m)
{
	const char *d = m->destination;

	for (const char *p = d; *p; p++) {
		if (p[0] == '.' && (p == d || p[-1] == '/') &&
		    (p[1] == '/' || !p[1] || (p[1] == '.' && (p[2] == '/' || !p[2])))) {
			oci_warn("mount at %s: a destination with \".\" or \"..\", skipped", d);
			return false;
		}
	}
	if (d[0] != '/') {
		oci_warn("mount at %s: not an absolute destination, skipped", d);
		return false;
	}
	return true;
}

/* The sentry's :noexec, :nosuid, :nodev words for m's options (after a --volume-fd or --tmpfs). */
static const char *mount_words(const struct oci_mount *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", (m->flags & OCI_MNT_NOEXEC) ? ":noexec" : "",
		 (m->flags & OCI_MNT_NOSUID) ? ":nosuid" : "",
		 (m->flags & OCI_MNT_NODEV) ? ":nodev" : "");
	return buf;
}

/* guestview_add_fn over struct args. */
static void add_arg(void *ctx, const char *arg)
{
	add(ctx, arg);
}

/*
 * Adds the sentry's mount arguments in the config's order (--tmpfs, --volume-fd, and
 * --special-mount for proc, sysfs, devpts, mqueue, cgroup and the /dev tmpfs), each followed
 * by its --mount-label (what /proc/self/mountinfo shows: runtime/guestview.c), and fills the
 * bind plan.
 */
static void plan_mounts(struct args *a, const struct container *c, struct bind_plan *binds)
{
	const struct oci_config *cfg = c->config;
	int ntmpfs = 0;
	char words[32];
	struct stat st;

	binds->n = 0;
	for (size_t i = 0; i < cfg->nmounts; i++) {
		const struct oci_mount *m = &cfg->mounts[i];
		_cleanup_free_ char *special = NULL;
		bool mounted = false;

		if (!mountpoint_ok(c, m))
			continue;
		special = guestview_special_arg(cfg, i);
		if (special) {
			addf(a, "--special-mount=%s", special);
			mounted = true;
		}
		switch (special ? -1 : (int)m->kind) {
		case OCI_MOUNT_TMPFS:
		case OCI_MOUNT_SHM: {
			char size[32] = "", mode[32] = "";

			if (ntmpfs >= MAX_TMPFS) {
				oci_warn("tmpfs %s: at most %d tmpfs mounts, skipped",
					 m->destination, MAX_TMPFS);
				break;
			}
			if (m->tmpfs_size)
				snprintf(size, sizeof(size), ":size=%llu",
					 (unsigned long long)m->tmpfs_size);
			if (m->has_tmpfs_mode)
				snprintf(mode, sizeof(mode), ":mode=%o", m->tmpfs_mode);
			addf(a, "--tmpfs=%s%s%s%s", m->destination, size, mode,
			     mount_words(m, words, sizeof(words)));
			ntmpfs++;
			mounted = true;
			break;
		}
		case OCI_MOUNT_BIND:
			/* A directory, or a regular file (served alone by its gofer: podman's
			 * /etc/hosts, /etc/resolv.conf, /etc/hostname, /run/.containerenv). */
			if (stat(m->source, &st) < 0) {
				oci_warn("bind mount %s -> %s: %s, skipped", m->source,
					 m->destination, strerror(errno));
				break;
			}
			if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
				oci_warn("bind mount %s -> %s: only directories and regular files "
					 "can be bound, skipped",
					 m->source, m->destination);
				break;
			}
			if (binds->n >= MAX_VOLUMES) {
				oci_warn("bind mount %s: at most %d bind mounts, skipped",
					 m->destination, MAX_VOLUMES);
				break;
			}
			addf(a, "--volume-fd=%d:%s%s%s", SENTRY_VOLUME_FD + binds->n,
			     m->destination, (m->flags & OCI_MNT_RDONLY) ? ":ro" : "",
			     mount_words(m, words, sizeof(words)));
			binds->m[binds->n++] = m;
			mounted = true;
			break;
		default:
			break;
		}
		if (mounted) {
			_cleanup_free_ char *label = guestview_label_arg(cfg, i);

			if (label)
				addf(a, "--mount-label=%s", label);
			else
				a->oom = true;
		}
	}
	guestview_device_args(cfg, add_arg, a);
}

static void sentry_args(struct args *a, const char *sentry, const struct container *c,
			bool detached, bool log, struct bind_plan *binds, int nlisten, int nextra,
			const char *restore_dir, bool gateway, bool crash)
{
	const struct oci_config *cfg = c->config;
	const char *platform = sandbox_platform(cfg, NULL);
	char **net = NULL;
	char why[160], allow[512], host_name[256];

	/* The mode and rules follow linux.namespaces too (namespaces.c). */
	if (netbpf_annotation_args(
		    oci_network_mode(cfg), oci_network_egress_allow(cfg, allow, sizeof(allow)),
		    oci_config_annotation(cfg, "dev.husk.egress-deny"), &net, why, sizeof(why)) < 0)
		net = NULL;

	add(a, sentry);
	addf(a, "--gofer-fd=%d", SENTRY_GOFER_FD);
	addf(a, "--platform=%s", platform);
	if (cfg->root_readonly)
		add(a, "--readonly-root");
	else if (overlay_none(cfg))
		add(a, "--writable-root");
	plan_mounts(a, c, binds);
	addf(a, "--control-fd=%d", SENTRY_CONTROL_FD);
	if (log)
		addf(a, "--log-fd=%d", SENTRY_LOG_FD);
	addf(a, "--cwd=%s", cfg->cwd);
	if (cfg->hostname)
		addf(a, "--hostname=%s", cfg->hostname);
	else if (oci_uts_hostname(cfg, host_name, sizeof(host_name)) == 0)
		addf(a, "--hostname=%s", host_name); /* as runc: the UTS namespace's own */
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
	/* process.capabilities, in husk-sentry's order: bounding, effective, inheritable,
	 * permitted, ambient (oci_config's caps[] order). */
	if (cfg->has_caps)
		addf(a, "--caps=%llx:%llx:%llx:%llx:%llx", (unsigned long long)cfg->caps[0],
		     (unsigned long long)cfg->caps[1], (unsigned long long)cfg->caps[2],
		     (unsigned long long)cfg->caps[3], (unsigned long long)cfg->caps[4]);
	if (cfg->no_new_privileges)
		add(a, "--no-new-privs");
	for (size_t i = 0; cfg->masked_paths && cfg->masked_paths[i]; i++)
		addf(a, "--masked-path=%s", cfg->masked_paths[i]);
	for (size_t i = 0; cfg->readonly_paths && cfg->readonly_paths[i]; i++)
		addf(a, "--readonly-path=%s", cfg->readonly_paths[i]);
	if (cfg->pids_limit > 0)
		addf(a, "--pids-limit=%lld", (long long)cfg->pids_limit);
	if (cfg->memory_limit > 0)
		addf(a, "--memory-limit=%lld", (long long)cfg->memory_limit);
	/* create leaves a husk-oomwatch (oomreport.c): the sentry waits for its reports. */
	if (oom_report_wanted(c))
		add(a, "--oom-reporter");
	/* linux.sysctl, in the config's order (create checked each with the same table). */
	for (size_t i = 0; i < cfg->nsysctl; i++)
		addf(a, "--sysctl=%s=%s", cfg->sysctl[i].key, cfg->sysctl[i].value);
	if (cfg->seccomp) {
		addf(a, "--seccomp-fd=%d", SENTRY_SECCOMP_FD);
		if (cfg->seccomp->flags & OCI_SECCOMP_FLAG_LOG)
			add(a, "--seccomp-log");
	}
	for (size_t i = 0; i < cfg->nrlimits; i++)
		addf(a, "--rlimit=%d=%llu:%llu", cfg->rlimits[i].resource,
		     (unsigned long long)cfg->rlimits[i].soft,
		     (unsigned long long)cfg->rlimits[i].hard);
	if (annotation_true(cfg, "dev.husk.strace") ||
	    (oci_g.strace && !oci_config_annotation(cfg, "dev.husk.strace")))
		add(a, "--strace");
	if (detached)
		add(a, "--detached");
	if (restore_dir)
		addf(a, "--restore=%s", restore_dir);
	/* What the guest sees in /proc/PID/uid_map, gid_map and oom_score_adj (ids.c). */
	{
		char m[2048];

		if (sandbox_id_map(cfg, false, m, sizeof(m)) > 0)
			addf(a, "--uid-map=%s", m);
		if (sandbox_id_map(cfg, true, m, sizeof(m)) > 0)
			addf(a, "--gid-map=%s", m);
		if (cfg->has_oom_score_adj)
			addf(a, "--oom-score-adj=%d", cfg->oom_score_adj);
	}
	addf(a, "--ready-fd=%d", SENTRY_READY_FD);
	addf(a, "--start-fd=%d", SENTRY_START_FD);
	for (size_t i = 0; cfg->env[i]; i++)
		addf(a, "--env=%s", cfg->env[i]);
	if (nlisten) {
		/* As runc: the socket-activation fds come first, and pid 1 is their listener. */
		addf(a, "--env=LISTEN_FDS=%d", nlisten);
		add(a, "--env=LISTEN_PID=1");
	}
	if (nextra)
		addf(a, "--preserve-fds-fd=%d", SENTRY_PRESERVE_FD);
	if (crash)
		addf(a, "--crash-fd=%d", SENTRY_CRASH_FD);
	if (gateway) {
		addf(a, "--gateway-fd=%d", SENTRY_GATEWAY_FD);
		add(a, "--env=HUSK_GATEWAY=" NET_GATEWAY_URL);
	}
	if (net) {
		/* dev.husk.network/egress-allow/egress-deny, checked by create (cgroup.c). */
		for (char **na = net; *na; na++)
			add(a, *na);
		netbpf_free_args(net);
	}
	if (oci_network_inbound(cfg))
		add(a, "--inbound");
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
	int above = 20;

	for (int i = 0; i < n; i++) {
		if (targets[i] >= above)
			above = targets[i] + 1;
	}
	for (int i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, above);
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

/* Everything the children of a sandbox get. */
struct sandbox_fds {
	int pairs[1 + MAX_VOLUMES][2]; /* [0]: the root's gofer; then one per bind */
	int npairs;
	int ready_w, fifo, control, stdio, sentry_log, gofer_log;
	int seccomp; /* a memfd with linux.seccomp's program, or -1 */
	int preserve; /* a socket holding the --preserve-fds fds in one message, or -1 */
	int gateway; /* the credential gateway's connection, or -1 */
	int crash; /* the state dir's crash.log (the sentry's crash report), or -1 */
	int netns; /* linux.namespaces' network path (the sentry joins it before it runs), or -1 */
	bool detached; /* create: nothing but the guest may keep the caller's stdio */
	bool setup_stderr; /* a terminal: the sentry's messages go to husk's stderr until ready */
	char **gofer_argv[1 + MAX_VOLUMES];
	char **sentry_argv;
};

/* Forks the gofers and the sentry; returns 0 with the root gofer's and the sentry's pids. */
static int fork_all(const struct container *c, struct sandbox_fds *f, pid_t *gpid, pid_t *spid)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int i = 0; i < f->npairs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -errno;
		if (pid == 0) {
			/*
			 * Detached, the gofer's stderr is never the caller's: an engine (containerd's
			 * shim with a terminal) waits for EOF on create's stderr, and the gofer
			 * lives as long as the container. Its messages go to --debug-log's file.
			 */
			int err = f->gofer_log >= 0 ? f->gofer_log : f->detached ? devnull : 2;
			int fds[] = { devnull, devnull, err, f->pairs[i][0] };
			const int targets[] = { 0, 1, 2, SENTRY_GOFER_FD };

			exec_child(c, f->gofer_argv[i], fds, targets, 4);
		}
		if (i == 0)
			*gpid = pid;
	}
	*spid = fork();
	if (*spid < 0)
		return -errno;
	if (*spid == 0) {
		int io = f->stdio;
		int fds[SENTRY_NFDS] = {
			io >= 0 ? io : 0, io >= 0 ? io : 1, io >= 0 ? io : 2, f->pairs[0][1],
			f->ready_w,	  f->fifo,	    f->control,	      f->sentry_log,
		};
		int targets[SENTRY_NFDS];

		for (int i = 0; i < SENTRY_NFDS; i++)
			targets[i] = i;
		for (int i = SENTRY_VOLUME_FD; i < SENTRY_NFDS; i++)
			fds[i] = -1;
		for (int i = 1; i < f->npairs; i++)
			fds[SENTRY_VOLUME_FD + i - 1] = f->pairs[i][1];
		fds[SENTRY_SECCOMP_FD] = f->seccomp;
		fds[SENTRY_PRESERVE_FD] = f->preserve;
		fds[SENTRY_GATEWAY_FD] = f->gateway;
		fds[SENTRY_CRASH_FD] = f->crash;
		if (io >= 0) {
			/* The pty is the guest's terminal: a new session has it as controlling
			 * terminal, as runc's init does. */
			setsid();
			ioctl(io, TIOCSCTTY, 0);
		}
		/*
		 * With a terminal the guest's stderr is the pty: what the sentry says while it sets
		 * up (a missing program, a bad mount) goes to husk's stderr instead, as runc's
		 * create prints it, at fd 7 (no --debug-log there); the sentry closes it once it is
		 * ready (sentry/main.c), so that create's stderr is no process's after create.
		 */
		if (f->setup_stderr && fcntl(2, F_GETFD) >= 0) {
			fds[SENTRY_LOG_FD] = 2;
			setenv("HUSK_SETUP_STDERR_FD", "7", 1);
		}
		if (f->sentry_log >= 0)
			setenv("HUSK_LOG", "info", 0);
		/* The config's network namespace: the sentry's host sockets are made there. Only
		 * the network namespace: its mount, IPC and UTS ones are its own (confine.c). */
		if (f->netns >= 0 && setns(f->netns, CLONE_NEWNET) < 0) {
			fprintf(stderr, "husk: joining the network namespace: %s\n",
				strerror(errno));
			_exit(125);
		}
		exec_child(c, f->sentry_argv, fds, targets,
			   f->seccomp >= 0 || f->preserve >= 0 || f->gateway >= 0 || f->crash >= 0 ?
				   SENTRY_NFDS :
				   SENTRY_VOLUME_FD + f->npairs - 1);
	}
	return 0;
}

/*
 * linux.seccomp compiled to BPF in a memfd (husk-sentry --seccomp-fd reads it from the start).
 * Returns 0 with *fd, or -errno (the message printed).
 */
static int seccomp_program(const struct oci_config *cfg, int *fd)
{
	struct oci_error err = { "" };
	int ret;

	*fd = memfd_create("husk-seccomp", MFD_CLOEXEC);
	if (*fd < 0) {
		ret = -errno;
		oci_fail("linux.seccomp: memfd: %s", strerror(-ret));
		return ret;
	}
	ret = oci_seccomp_compile(cfg->seccomp, *fd, &err);
	if (ret == 0 && lseek(*fd, 0, SEEK_SET) < 0)
		ret = -errno;
	if (ret < 0) {
		oci_fail("%s", err.msg[0] ? err.msg : strerror(-ret));
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/*
 * --preserve-fds: makes husk's fds 3..3+n-1 (checked by create) close-on-exec, so that they
 * reach the sentry only, never the gofers or hooks, and sends them in one message over a new
 * socket pair. Returns the sentry's end, or -errno after printing why.
 */
static int preserve_fds_socket(int n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_PRESERVE)];
		struct cmsghdr align;
	} cbuf;
	char byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	int sp[2], ret;

	if (n > MAX_PRESERVE)
		return oci_fail("--preserve-fds: at most %d fds", MAX_PRESERVE), -EINVAL;
	for (int i = 0; i < n; i++) {
		if (fcntl(3 + i, F_SETFD, FD_CLOEXEC) < 0) {
			ret = -errno;
			oci_fail("unable to stat preserved-fd %d (of %d): %s", i, n,
				 strerror(-ret));
			return ret;
		}
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		ret = -errno;
		oci_fail("--preserve-fds: socketpair: %s", strerror(-ret));
		return ret;
	}
	memset(&cbuf, 0, sizeof(cbuf));
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++) {
		int fd = 3 + i;

		memcpy(CMSG_DATA(cm) + (size_t)i * sizeof(int), &fd, sizeof(int));
	}
	ret = sendmsg(sp[0], &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
	close(sp[0]);
	if (ret < 0) {
		close(sp[1]);
		oci_fail("--preserve-fds: passing the fds: %s", strerror(-ret));
		return ret;
	}
	return sp[1];
}

int sandbox_control_listen(const struct container *c)
{
	_cleanup_free_ char *path = container_path(c, "control.sock");
	struct sockaddr_un sa;
	_cleanup_close_ int dirfd = -1;
	int fd;

	if (!path)
		return -ENOMEM;
	fd = control_sockaddr(path, &sa, &dirfd);
	if (fd < 0)
		return fd;
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 16) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

/* Opens DIR/<id>.<what>.log for appending (--debug-log). Returns the fd or -1. */
static int open_debug_log(const char *dir, const struct container *c, const char *what)
{
	char path[PATH_MAX];
	int fd;

	if (!dir)
		return -1;
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/%s.%s.log", dir, c->id, what);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		oci_warn("--debug-log: %s: %s", path, strerror(errno));
	return fd;
}

int sandbox_start(struct container *c, const struct sandbox_opts *o)
{
	_cleanup_free_ char *sentry = runtime_find_helper("husk-sentry");
	_cleanup_free_ char *gofer = runtime_find_helper("husk-gofer");
	_cleanup_free_ char *fifo_path = container_path(c, "exec.fifo");
	const char *log_dir = husk_option(c->config, "debug-log", oci_g.debug_log);
	struct args ga[1 + MAX_VOLUMES] = { 0 }, sa = { 0 };
	struct sandbox_fds f = {
		.ready_w = -1,
		.fifo = -1,
		.control = -1,
		.stdio = o->stdio_fd,
		.seccomp = -1,
		.preserve = -1,
		.gateway = -1,
		.crash = -1,
		.netns = -1,
		.detached = !o->foreground,
		.setup_stderr = o->stdio_fd >= 0 && !o->restore_dir,
	};
	const char *gw_path = oci_config_annotation(c->config, "dev.husk.gateway");
	const char *gw_id = oci_config_annotation(c->config, "dev.husk.gateway-id");
	int nlisten = control_listen_fds();
	int nextra = nlisten + (o->preserve_fds > 0 ? o->preserve_fds : 0);
	struct bind_plan binds;
	int ready[2] = { -1, -1 }, info[2] = { -1, -1 };
	pid_t mid, gpid = -1, spid = -1;
	struct stat st;
	bool oom = false;
	char byte;
	int ret = 0;
	ssize_t n;

	if (!sentry || !gofer)
		return oci_fail("cannot find %s next to husk (set HUSK_SENTRY/HUSK_GOFER)",
				!sentry ? "husk-sentry" : "husk-gofer"),
		       -ENOENT;
	/* The sentry's first task and the gofers start on this CPU (common/cpus.h). */
	husk_start_cpu_publish();
	if (stat(c->rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
		return oci_fail("rootfs %s: %s", c->rootfs,
				errno ? strerror(errno) : "not a directory"),
		       -ENOENT;
	if (!gw_path != !gw_id)
		return oci_fail("annotations dev.husk.gateway and dev.husk.gateway-id go together"),
		       -EINVAL;
	{
		char m[2048];

		/* Checked before anything starts (ids.c): Linux's rules on a uid_map write. */
		if (sandbox_id_map(c->config, false, m, sizeof(m)) < 0 ||
		    sandbox_id_map(c->config, true, m, sizeof(m)) < 0)
			return oci_fail("config.json: linux.uidMappings, gidMappings: mappings "
					"overlap or go past the last id"),
			       -EINVAL;
		if (sandbox_ids_unmapped(c->config))
			return oci_fail(
				       "unable to start container process: unable to setup user: %s",
				       sandbox_ids_unmapped(c->config)),
			       -EINVAL;
	}
	if (gw_path) {
		char why[PATH_MAX + 128];

		f.gateway = runtime_gateway_connect(gw_path, gw_id, why, sizeof(why));
		if (f.gateway < 0)
			return oci_fail("dev.husk.gateway: %s", why), f.gateway;
	}
	if (nextra) {
		f.preserve = preserve_fds_socket(nextra);
		if (f.preserve < 0) {
			if (f.gateway >= 0)
				close(f.gateway);
			return f.preserve;
		}
	}
	if (c->config->seccomp) {
		ret = seccomp_program(c->config, &f.seccomp);
		if (ret < 0) {
			if (f.preserve >= 0)
				close(f.preserve);
			if (f.gateway >= 0)
				close(f.gateway);
			return ret;
		}
	}
	f.sentry_log = open_debug_log(log_dir, c, "sentry");
	f.gofer_log = open_debug_log(log_dir, c, "gofer");
	{
		_cleanup_free_ char *crash = container_path(c, CONTAINER_CRASH_LOG);

		f.crash = crash ? open(crash, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				       0600) :
				  -1;
	}
	f.setup_stderr = f.setup_stderr && f.sentry_log < 0; /* else its messages go there */
	sentry_args(&sa, sentry, c, !o->foreground, f.sentry_log >= 0, &binds, nlisten, nextra,
		    o->restore_dir, f.gateway >= 0, f.crash >= 0);
	f.npairs = 1 + binds.n;
	for (int i = 0; i < f.npairs; i++) {
		/* The root is read-only in its gofer unless --overlay none makes it writable. */
		bool ro = i == 0 ? c->config->root_readonly || !overlay_none(c->config) :
				   (binds.m[i - 1]->flags & OCI_MNT_RDONLY) != 0;

		f.pairs[i][0] = f.pairs[i][1] = -1;
		add(&ga[i], gofer);
		addf(&ga[i], "--fd=%d", SENTRY_GOFER_FD);
		if (ro)
			add(&ga[i], "--readonly");
		/*
		 * Host owners of what the guest creates, mapped (ids.c). Only when husk runs as
		 * root: unprivileged, the user namespace the gofer runs in maps ids already.
		 */
		{
			char m[2048];

			if (geteuid() == 0 && sandbox_id_map(c->config, false, m, sizeof(m)) > 0)
				addf(&ga[i], "--uid-map=%s", m);
			if (geteuid() == 0 && sandbox_id_map(c->config, true, m, sizeof(m)) > 0)
				addf(&ga[i], "--gid-map=%s", m);
		}
		add(&ga[i], i == 0 ? c->rootfs : binds.m[i - 1]->source);
		oom |= ga[i].oom;
		f.gofer_argv[i] = ga[i].v;
	}
	f.sentry_argv = sa.v;
	if (oom || sa.oom) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < f.npairs; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f.pairs[i]) < 0) {
			ret = -errno;
			break;
		}
	}
	if (ret == 0 && (pipe2(ready, O_CLOEXEC) < 0 || pipe2(info, O_CLOEXEC) < 0))
		ret = -errno;
	if (ret < 0) {
		oci_fail("creating the sandbox's sockets: %s", strerror(-ret));
		goto out;
	}
	f.ready_w = ready[1];
	f.control = sandbox_control_listen(c);
	if (f.control < 0) {
		ret = f.control;
		oci_fail("control socket: %s", strerror(-ret));
		goto out;
	}
	if (mkfifo(fifo_path, 0600) < 0) {
		ret = -errno;
		oci_fail("mkfifo %s: %s", fifo_path, strerror(-ret));
		goto out;
	}
	/* O_RDWR: opening a FIFO for both ends never blocks, and keeps a reader. */
	f.fifo = open(fifo_path, O_RDWR | O_CLOEXEC);
	if (f.fifo < 0) {
		ret = -errno;
		oci_fail("open %s: %s", fifo_path, strerror(-ret));
		goto out;
	}
	/* linux.namespaces' network path, type-checked again (create checked it first). */
	f.netns = oci_namespace_open(c->config, "network");
	if (f.netns < 0 && f.netns != -ENOENT) {
		ret = f.netns;
		goto out;
	}
	if (o->foreground) {
		ret = fork_all(c, &f, &gpid, &spid);
	} else {
		mid = fork();
		if (mid < 0) {
			ret = -errno;
			goto out;
		}
		if (mid == 0) {
			pid_t pids[2];

			setsid();
			ret = fork_all(c, &f, &gpid, &spid);
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
	close(ready[1]);
	ready[1] = -1;
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
	/* husk keeps no end of the gofers' sockets: they see EOF when the sentry is gone. */
	for (int i = 0; i < f.npairs; i++) {
		for (int j = 0; j < 2; j++) {
			if (f.pairs[i][j] >= 0)
				close(f.pairs[i][j]);
			f.pairs[i][j] = -1;
		}
	}
	/* The sentry says it is ready, or closes the pipe by dying. */
	while ((n = read(ready[0], &byte, 1)) < 0 && errno == EINTR)
		;
	if (n != 1) {
		int wst = 0;

		ret = -ECHILD;
		/* In the foreground the sentry is our child: a crash is told apart from a refusal
		 * (whose reason the sentry printed). It has closed the pipe: it is exiting. */
		for (int i = 0; o->foreground && i < 200; i++) {
			pid_t w = waitpid(spid, &wst, WNOHANG);

			if (w == spid || (w < 0 && errno != EINTR))
				break;
			usleep(10000);
		}
		if (o->foreground && WIFSIGNALED(wst))
			oci_fail("the sandbox failed to start (the sentry died of signal %d: %s)",
				 WTERMSIG(wst), strsignal(WTERMSIG(wst)));
		else
			oci_fail("the sandbox failed to start (the sentry exited during setup)");
	}
out:
	if (f.netns >= 0)
		close(f.netns);
	if (f.preserve >= 0)
		close(f.preserve);
	if (f.gateway >= 0)
		close(f.gateway);
	if (f.seccomp >= 0)
		close(f.seccomp);
	if (f.fifo >= 0)
		close(f.fifo);
	if (f.control >= 0)
		close(f.control);
	if (f.sentry_log >= 0)
		close(f.sentry_log);
	if (f.gofer_log >= 0)
		close(f.gofer_log);
	if (f.crash >= 0)
		close(f.crash);
	for (int i = 0; i < f.npairs; i++) {
		for (int j = 0; j < 2; j++) {
			if (f.pairs[i][j] >= 0)
				close(f.pairs[i][j]);
		}
		free_args(&ga[i]);
	}
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (info[i] >= 0)
			close(info[i]);
	}
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

/*
 * Pods (runtime/pod.c): what a new sentry for c would be given, for a member container started
 * in its sandbox's sentry instead: the sentry's argv (the member's options; the sentry ignores
 * what is the sandbox's alone), one gofer argv per served tree (the root, then each bind, their
 * socket at fd SENTRY_GOFER_FD), and the fds the argv names (slots): linux.seccomp's program
 * (SENTRY_SECCOMP_FD) and --preserve-fds' socket (SENTRY_PRESERVE_FD), or -1.
 */
int sandbox_member_plan(const struct container *c, int preserve_fds, struct sandbox_member_plan *p)
{
	_cleanup_free_ char *sentry = runtime_find_helper("husk-sentry");
	_cleanup_free_ char *gofer = runtime_find_helper("husk-gofer");
	int nlisten = control_listen_fds();
	int nextra = nlisten + (preserve_fds > 0 ? preserve_fds : 0);
	struct args sa = { 0 };
	struct bind_plan binds;
	struct stat st;
	bool oom = false;
	int ret;

	memset(p, 0, sizeof(*p));
	p->seccomp_fd = p->preserve_fd = -1;
	p->gofer_slot = SENTRY_GOFER_FD;
	p->volume_slot = SENTRY_VOLUME_FD;
	p->start_slot = SENTRY_START_FD;
	p->seccomp_slot = SENTRY_SECCOMP_FD;
	p->preserve_slot = SENTRY_PRESERVE_FD;
	if (!sentry || !gofer)
		return oci_fail("cannot find %s next to husk (set HUSK_SENTRY/HUSK_GOFER)",
				!sentry ? "husk-sentry" : "husk-gofer"),
		       -ENOENT;
	if (stat(c->rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
		return oci_fail("rootfs %s: %s", c->rootfs,
				errno ? strerror(errno) : "not a directory"),
		       -ENOENT;
	if (nextra) {
		p->preserve_fd = preserve_fds_socket(nextra);
		if (p->preserve_fd < 0)
			return p->preserve_fd;
	}
	if (c->config->seccomp) {
		ret = seccomp_program(c->config, &p->seccomp_fd);
		if (ret < 0) {
			sandbox_member_plan_free(p);
			return ret;
		}
	}
	sentry_args(&sa, sentry, c, true, false, &binds, nlisten, nextra, NULL, false, false);
	p->ngofers = 1 + binds.n;
	for (int i = 0; i < p->ngofers; i++) {
		struct args ga = { 0 };
		bool ro = i == 0 ? c->config->root_readonly || !overlay_none(c->config) :
				   (binds.m[i - 1]->flags & OCI_MNT_RDONLY) != 0;
		char m[2048];

		add(&ga, gofer);
		addf(&ga, "--fd=%d", SENTRY_GOFER_FD);
		if (ro)
			add(&ga, "--readonly");
		if (geteuid() == 0 && sandbox_id_map(c->config, false, m, sizeof(m)) > 0)
			addf(&ga, "--uid-map=%s", m);
		if (geteuid() == 0 && sandbox_id_map(c->config, true, m, sizeof(m)) > 0)
			addf(&ga, "--gid-map=%s", m);
		add(&ga, i == 0 ? c->rootfs : binds.m[i - 1]->source);
		oom |= ga.oom;
		p->gofer_argv[i] = ga.v;
	}
	p->sentry_argv = sa.v;
	p->nargs = (int)sa.n;
	if (oom || sa.oom) {
		sandbox_member_plan_free(p);
		return oci_fail("out of memory"), -ENOMEM;
	}
	return 0;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void sandbox_member_plan_free(struct sandbox_member_plan *p)
{
	free_strv(p->sentry_argv);
	for (int i = 0; i < p->ngofers; i++)
		free_strv(p->gofer_argv[i]);
	if (p->seccomp_fd >= 0)
		close(p->seccomp_fd);
	if (p->preserve_fd >= 0)
		close(p->preserve_fd);
	memset(p, 0, sizeof(*p));
	p->seccomp_fd = p->preserve_fd = -1;
}
