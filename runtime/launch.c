/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting a sandbox: one gofer for the root, one more per volume, and one sentry, each gofer
 * connected to the sentry by a SOCK_SEQPACKET socketpair of its own.
 *
 *   husk ──fork/exec──> husk-gofer --fd 3 [--readonly] ROOTFS
 *        ──fork/exec──> husk-gofer --fd 3 [--readonly] HOSTDIR      (per --volume)
 *        ──fork/exec──> husk-sentry --gofer-fd 3 [--volume-fd 4:GUEST[:ro]]...
 *                                   [--control-fd N] [--restore=DIR] -- CMD ARGS
 *
 * husk keeps no end of the socket, so the gofer sees EOF and exits when the sentry is gone.
 * Both children die with husk (PR_SET_PDEATHSIG), so nothing outlives an interrupted husk.
 *
 * With --network=host the sentry holds host sockets: it starts in a cgroup v2 of its own
 * (husk-do-PID below husk's own cgroup) to which the BPF egress programs are attached first
 * (sentry/net/bpf/netbpf.h), so that the host kernel enforces the egress policy too. husk
 * removes that cgroup when the sentry is gone, killing whatever is left in it; a keeper process
 * does it when husk itself was killed (cgroup_keeper).
 *
 * With a credential gateway (husk serve's --gateway socket; runtime/serve/GATEWAY.md) husk
 * connects to it, introduces the sandbox by its id, and passes the connection to the sentry
 * (--gateway-fd) after the gofers' sockets and the control socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/cleanup.h"
#include "runtime/runtime.h"
#include "sentry/net/bpf/netbpf.h"
#include "sentry/net/gateway.h"

#define EXIT_SETUP 125
#define CHILD_SOCK_FD 3
#define MAX_VOLUMES 16

#define CGROUP2_SUPER_MAGIC 0x63677270

/* cgroup.procs of the sandbox's cgroup, which the sentry's child writes itself into (or -1). */
static int join_procs_fd = -1;

static bool is_executable(const char *path)
{
	return access(path, X_OK) == 0;
}

char *runtime_find_helper(const char *name)
{
	/* Where husk lives, where meson puts helpers in a build tree, and where it installs. */
	static const char *const subdirs[] = { "",
					       "/sentry",
					       "/gofer",
					       "/runtime/serve/agent",
					       "/../sentry",
					       "/../gofer",
					       "/../runtime/serve/agent",
					       "/.." };
	const char *env = !strcmp(name, "husk-sentry") ? getenv("HUSK_SENTRY") :
			  !strcmp(name, "husk-gofer")  ? getenv("HUSK_GOFER") :
			  !strcmp(name, "husk-agent")  ? getenv("HUSK_AGENT") :
							 NULL;
	char self[PATH_MAX];
	char path[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	if (env && *env)
		return strdup(env);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return NULL;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s/%s", self, subdirs[i], name);
		if (is_executable(path))
			return realpath(path, NULL);
	}
	return NULL;
}

int runtime_gateway_connect(const char *path, const char *id, char *why, size_t why_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char hello[sizeof(NET_GATEWAY_HELLO) + NET_GATEWAY_ID_MAX + 1], reply[256];
	struct pollfd pfd;
	size_t idlen = strlen(id);
	ssize_t n;
	int fd, ret;

	if (!idlen || idlen > NET_GATEWAY_ID_MAX) {
		snprintf(why, why_len, "gateway id: 1 to %d characters", NET_GATEWAY_ID_MAX);
		return -EINVAL;
	}
	for (const char *c = id; *c; c++) {
		if (*c <= ' ' || *c >= 0x7f) {
			snprintf(why, why_len, "gateway id %s: printable characters, no blanks",
				 id);
			return -EINVAL;
		}
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, why_len, "gateway %s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "gateway: socket: %s", strerror(errno));
		return ret;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		snprintf(why, why_len, "gateway %s: %s", path, strerror(errno));
		goto out_close;
	}
	n = snprintf(hello, sizeof(hello), "%s%s\n", NET_GATEWAY_HELLO, id);
	if (send(fd, hello, (size_t)n, MSG_NOSIGNAL) != n) {
		ret = -errno;
		snprintf(why, why_len, "gateway %s: %s", path, strerror(errno));
		goto out_close;
	}
	/* The gateway answers at once from its own thread; a server that does not is broken. */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	ret = poll(&pfd, 1, 10000);
	if (ret <= 0) {
		ret = ret < 0 ? -errno : -ETIMEDOUT;
		snprintf(why, why_len, "gateway %s: no answer to the hello", path);
		goto out_close;
	}
	n = recv(fd, reply, sizeof(reply) - 1, 0);
	if (n <= 0) {
		ret = n < 0 ? -errno : -ECONNRESET;
		snprintf(why, why_len, "gateway %s: %s", path,
			 n < 0 ? strerror(errno) : "closed without an answer");
		goto out_close;
	}
	reply[n] = 0;
	if (strcmp(reply, "OK\n") != 0) {
		reply[strcspn(reply, "\n")] = 0;
		snprintf(why, why_len, "gateway %s refused sandbox %s: %s", path, id, reply);
		ret = -ECONNREFUSED;
		goto out_close;
	}
	return fd;
out_close:
	close(fd);
	return ret;
}

/*
 * In a child: moves socks[0..n) to CHILD_SOCK_FD, CHILD_SOCK_FD + 1, ..., arranges to die with
 * husk, and execs argv.
 */
static void __attribute__((noreturn))
child_exec(const int *socks, int n, char **argv, int devnull_stdio)
{
	int high[4 + MAX_VOLUMES];

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() == 1)
		_exit(EXIT_SETUP); /* husk is already gone */
	/* Into the sandbox's cgroup before exec: no host socket is ever made outside it. */
	if (join_procs_fd >= 0 && write(join_procs_fd, "0", 1) != 1) {
		fprintf(stderr, "husk: cannot join the sandbox's cgroup: %s\n", strerror(errno));
		_exit(EXIT_SETUP);
	}
	/* First out of the way of the targets, then onto them: no dup2 overwrites a source. */
	for (int i = 0; i < n; i++) {
		high[i] = fcntl(socks[i], F_DUPFD_CLOEXEC, CHILD_SOCK_FD + 4 + MAX_VOLUMES);
		if (high[i] < 0)
			_exit(EXIT_SETUP);
	}
	for (int i = 0; i < n; i++) {
		/* dup2 clears close-on-exec on the target. */
		if (dup2(high[i], CHILD_SOCK_FD + i) < 0)
			_exit(EXIT_SETUP);
	}
	if (devnull_stdio) {
		int fd = open("/dev/null", O_RDWR);

		/* The gofer leaves the terminal's foreground group: ^C and ^\ are for the guest
		 * (they reach the sentry, which forwards them), not for the file server. */
		setpgid(0, 0);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			if (fd > 2)
				close(fd);
		}
	}
	execv(argv[0], argv);
	fprintf(stderr, "husk: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(EXIT_SETUP);
}

static pid_t spawn(const int *socks, int n, char **argv, int devnull_stdio)
{
	pid_t pid = fork();

	if (pid == 0)
		child_exec(socks, n, argv, devnull_stdio);
	return pid;
}

/* Starts a gofer serving dir over sock (its end). Returns its pid or -1 (errno set). */
static pid_t spawn_gofer(const char *gofer, const char *dir, bool readonly, int sock)
{
	char fdarg[16];
	char *gargv[8];
	int n = 0;

	snprintf(fdarg, sizeof(fdarg), "%d", CHILD_SOCK_FD);
	gargv[n++] = (char *)gofer;
	gargv[n++] = "--fd";
	gargv[n++] = fdarg;
	if (readonly)
		gargv[n++] = "--readonly";
	gargv[n++] = (char *)dir;
	gargv[n] = NULL;
	return spawn(&sock, 1, gargv, 1);
}

/* The sentry, to which husk relays the signals it is sent (0 before it exists). */
static volatile pid_t relay_pid;
/* The last signal from the caller or the terminal that ends a process by default (0: none). */
static volatile sig_atomic_t caller_sig;
/* The sentry died of caller_sig: pid 1 did (sentry/kernel/hostsig.c); husk is to die of it. */
static bool died_of_caller_sig;

/*
 * Relays a signal sent to husk to the sentry, which forwards it to the guest's pid 1 (with
 * --caller-signals pid 1 dies of one it has no handler for). Signals from the terminal
 * (SI_KERNEL: ^C, ^\, ^Z, hangup, window size) are not relayed: the sentry is in the same
 * foreground process group, got its own and sends it to the guest's foreground group. husk
 * itself is never stopped by ^Z: the guest's job is.
 */
static void relay_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	/* Real-time signals end no guest pid 1 by default (hostsig.c): husk never dies of one. */
	if (sig != SIGWINCH && sig != SIGTSTP && sig < SIGRTMIN)
		caller_sig = sig;
	if (si->si_code != SI_KERNEL && relay_pid > 0)
		kill(relay_pid, sig);
	errno = saved;
}

static void relay_signals_to(pid_t pid)
{
	static const int sigs[] = { SIGINT,  SIGTERM, SIGHUP,	SIGQUIT,
				    SIGUSR1, SIGUSR2, SIGWINCH, SIGTSTP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = relay_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	relay_pid = pid;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	/* The real-time ones too (SIGRTMIN+3: a systemd guest shuts down). */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaction(sig, &sa, NULL);
}

void launch_die_of_caller_signal(int status)
{
	int sig = caller_sig;
	struct rlimit no_core = { 0, 0 };
	struct sigaction sa;
	sigset_t set;

	/* The sandbox ended as the command did, of the signal the caller sent. */
	if (!died_of_caller_sig || !sig || status != 128 + sig)
		return;
	fflush(stdout);
	fflush(stderr);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	setrlimit(RLIMIT_CORE, &no_core); /* SIGQUIT: no core of husk itself */
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

/* The caller's terminal settings, saved before the sandbox starts and restored after it. */
struct saved_tty {
	int fd; /* the first of 0-2 that is a terminal, or -1 */
	struct termios tm;
};

/*
 * Only a husk in the terminal's foreground group saves (and later restores) its settings: from
 * the background the sandbox cannot change them (the sentry would stop on SIGTTOU), and a
 * restore would undo what the foreground program (an editor) set meanwhile.
 */
static void tty_save(struct saved_tty *st)
{
	st->fd = -1;
	for (int fd = 0; fd < 3; fd++) {
		if (isatty(fd)) {
			if (tcgetpgrp(fd) == getpgrp() && tcgetattr(fd, &st->tm) == 0)
				st->fd = fd;
			return;
		}
	}
}

/*
 * However the sandbox ended (pid 1 exited, was killed, the sentry crashed), the terminal gets
 * the caller's settings back, if husk is still in its foreground group. SIGTTOU is blocked
 * meanwhile (as a shell does when it takes the terminal back).
 */
static void tty_restore(const struct saved_tty *st)
{
	sigset_t set, old;

	if (st->fd < 0 || tcgetpgrp(st->fd) != getpgrp())
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGTTOU);
	sigprocmask(SIG_BLOCK, &set, &old);
	while (tcsetattr(st->fd, TCSADRAIN, &st->tm) < 0 && errno == EINTR)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Waits for pid, retrying on EINTR. Returns its wait status, or -1. */
static int wait_for(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return st;
}

/*
 * Waits for the sentry to end. When it stops (its pid 1 was stopped by ^Z or a stop signal
 * from the caller, and the sentry stopped itself; or the sentry read the terminal from the
 * background), husk stops too, with the same kind of stop, so that the caller's shell sees the
 * job stopped; its fg/bg continues husk's process group, the sentry with it.
 */
static int wait_for_sentry(pid_t pid)
{
	int st;

	for (;;) {
		if (waitpid(pid, &st, WUNTRACED) < 0) {
			if (errno != EINTR)
				return -1;
			continue;
		}
		if (!WIFSTOPPED(st))
			return st;
		int sig = WSTOPSIG(st) == SIGSTOP ? SIGTSTP : WSTOPSIG(st);
		struct sigaction dfl = { .sa_handler = SIG_DFL }, old;

		sigaction(sig, &dfl, &old);
		raise(sig);
		sigaction(sig, &old, NULL); /* continued */
	}
}

int runtime_parse_volume(const char *arg, struct launch_volume *out)
{
	char *copy = strdup(arg), *guest, *opt;

	if (!copy)
		return -EINVAL;
	guest = strchr(copy, ':');
	if (!guest || copy[0] != '/') {
		free(copy);
		return -EINVAL;
	}
	*guest++ = 0;
	opt = strchr(guest, ':');
	if (opt)
		*opt++ = 0;
	if (guest[0] != '/' || (opt && strcmp(opt, "ro") != 0 && strcmp(opt, "rw") != 0)) {
		free(copy);
		return -EINVAL;
	}
	out->host = copy;
	out->guest = guest;
	out->readonly = opt && !strcmp(opt, "ro");
	return 0;
}

/* Closes the n sockets of pairs[0..n) (both ends); -1 entries are skipped. */
static void close_pairs(int (*pairs)[2], int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < 2; j++) {
			if (pairs[i][j] >= 0)
				close(pairs[i][j]);
			pairs[i][j] = -1;
		}
	}
}

/* Kills and reaps the gofers started so far. */
static void kill_gofers(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
			;
	}
}

/*
 * The sandbox's cgroup v2 (--network=host): its directory, cgroup.procs open for writing, and
 * the write end of the keeper's pipe (cgroup_keeper).
 */
struct sandbox_cgroup {
	char dir[PATH_MAX];
	int procs_fd;
	int keeper_fd;
};

static void sandbox_cgroup_remove(struct sandbox_cgroup *cg);

/*
 * A husk killed by SIGKILL cannot remove the sandbox's cgroup (its sentry dies with it, by
 * PR_SET_PDEATHSIG, but the empty directory would stay, one per sandbox). A keeper process,
 * forked before the directory is made and never in it, holds the read end of a pipe whose
 * write end only husk has (O_CLOEXEC): at EOF, whenever and however husk ends, it removes the
 * cgroup as husk would (sandbox_cgroup_remove: kills what is left, waits for it to empty), which
 * finds nothing when husk already did. It leads a session of its own, so that the terminal's
 * signals to husk's group do not reach it, and keeps no other FD of husk's. Returns 0 or -errno.
 */
static int cgroup_keeper(struct sandbox_cgroup *cg)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		char c;

		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		if (dup2(p[0], 3) < 0)
			_exit(1);
		syscall(SYS_close_range, 4, ~0U, 0);
		prctl(PR_SET_NAME, "husk-cg-keeper", 0, 0, 0);
		while (read(3, &c, 1) < 0 && errno == EINTR)
			;
		cg->procs_fd = -1;
		cg->keeper_fd = -1;
		sandbox_cgroup_remove(cg);
		_exit(0);
	}
	close(p[0]);
	cg->keeper_fd = p[1];
	return 0;
}

/* Mount point of the cgroup v2 hierarchy (pure v2, or hybrid's unified), or NULL. */
static const char *cgroup2_mount(void)
{
	static const char *const cands[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	struct statfs sfs;

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (statfs(cands[i], &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
			return cands[i];
	}
	return NULL;
}

/* husk's own cgroup v2 path ("0::PATH" of /proc/self/cgroup) into buf. Returns 0 or -errno. */
static int own_cgroup2(char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 16];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		if ((size_t)snprintf(buf, len, "%s", strcmp(line + 3, "/") ? line + 3 : "") >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	return -ENOENT;
}

/*
 * Makes the sandbox's cgroup and attaches the egress programs to it (before any process is in
 * it). Returns 0, or -errno with the reason in why.
 */
static int sandbox_cgroup_create(struct sandbox_cgroup *cg, const char *const *net_args, char *why,
				 size_t why_len)
{
	const char *mnt = cgroup2_mount();
	char own[PATH_MAX / 2], procs[PATH_MAX + 16];
	_cleanup_close_ int dfd = -1;
	int ret;

	cg->procs_fd = -1;
	cg->keeper_fd = -1;
	cg->dir[0] = 0;
	if (!mnt) {
		snprintf(why, why_len, "no cgroup v2 hierarchy at /sys/fs/cgroup{,/unified}");
		return -ENOENT;
	}
	ret = own_cgroup2(own, sizeof(own));
	if (ret < 0) {
		snprintf(why, why_len, "no cgroup v2 line in /proc/self/cgroup");
		return ret;
	}
	if ((size_t)snprintf(cg->dir, sizeof(cg->dir), "%s%s/husk-do-%d", mnt, own,
			     (int)getpid()) >= sizeof(cg->dir)) {
		snprintf(why, why_len, "cgroup path too long");
		cg->dir[0] = 0;
		return -ENAMETOOLONG;
	}
	ret = cgroup_keeper(cg);
	if (ret < 0) {
		snprintf(why, why_len, "cannot start the cgroup's keeper: %s", strerror(-ret));
		cg->dir[0] = 0;
		return ret;
	}
	if (mkdir(cg->dir, 0700) < 0) {
		ret = -errno;
		snprintf(why, why_len, "mkdir %s: %s", cg->dir, strerror(errno));
		cg->dir[0] = 0;
		return ret;
	}
	dfd = open(cg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg->dir);
	cg->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (dfd < 0 || cg->procs_fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "%s: %s", cg->dir, strerror(errno));
		return ret;
	}
	return netbpf_attach_egress(dfd, net_args, why, why_len);
}

/*
 * Removes the sandbox's cgroup (and with it the programs' attachment): kills what is left in
 * it (cgroup.kill, or each pid on kernels without it), waits for it to empty, and rmdirs it.
 */
static void sandbox_cgroup_remove(struct sandbox_cgroup *cg)
{
	char path[PATH_MAX + 16], buf[4096];

	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	if (!cg->dir[0])
		goto keeper;
	for (int tries = 0; tries < 1000; tries++) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		_cleanup_close_ int fd = -1;

		if (rmdir(cg->dir) == 0 || errno == ENOENT)
			break;
		if (errno != EBUSY) {
			fprintf(stderr, "husk: rmdir %s: %s\n", cg->dir, strerror(errno));
			break;
		}
		snprintf(path, sizeof(path), "%s/cgroup.kill", cg->dir);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "1", 1) != 1) {
			snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dir);
			_cleanup_fclose_ FILE *f = fopen(path, "re");

			while (f && fgets(buf, sizeof(buf), f))
				kill((pid_t)strtol(buf, NULL, 10), SIGKILL);
		}
		nanosleep(&ts, NULL);
	}
	cg->dir[0] = 0;
keeper:
	/* The keeper finds nothing left and ends. */
	if (cg->keeper_fd >= 0)
		close(cg->keeper_fd);
	cg->keeper_fd = -1;
}

/* Whether args has the exact argument a. */
static bool has_arg(const char *const *args, const char *a)
{
	for (; args && *args; args++) {
		if (!strcmp(*args, a))
			return true;
	}
	return false;
}

/* The sentry's crash report in memfd fd (empty: it did not crash), symbolized to stderr. */
static void print_crash(int fd)
{
	_cleanup_free_ char *raw = NULL, *text = NULL;
	struct stat st;
	size_t len;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > 16 << 20)
		return;
	raw = malloc((size_t)st.st_size);
	if (!raw)
		return;
	n = pread(fd, raw, (size_t)st.st_size, 0);
	if (n <= 0)
		return;
	text = crash_symbolize(raw, (size_t)n, &len);
	if (!text) {
		fwrite(raw, 1, (size_t)n, stderr);
		return;
	}
	fwrite(text, 1, len, stderr);
	fflush(stderr);
}

int launch_and_wait(const struct launch_spec *spec)
{
	struct sandbox_cgroup cg = { .procs_fd = -1, .keeper_fd = -1 };
	_cleanup_free_ char *sentry = runtime_find_helper("husk-sentry");
	_cleanup_free_ char *gofer = runtime_find_helper("husk-gofer");
	int pairs[1 + MAX_VOLUMES][2], ssocks[4 + MAX_VOLUMES], nsocks;
	char volarg[MAX_VOLUMES][PATH_MAX + 32];
	pid_t gpids[1 + MAX_VOLUMES];
	int nargs = 0, n, ngofers = 0, npairs = 1 + spec->nvolumes;
	char **sargv;
	char fdarg[16], ctlarg[16], gwarg[16], crasharg[16], restorearg[PATH_MAX + 16];
	_cleanup_close_ int gateway = -1;
	_cleanup_close_ int crash = -1;
	pid_t spid;
	int st, ret;
	struct stat rst;
	struct saved_tty tty;

	if (!sentry || !gofer) {
		fprintf(stderr, "husk: cannot find %s next to husk (set HUSK_SENTRY/HUSK_GOFER)\n",
			!sentry ? "husk-sentry" : "husk-gofer");
		return EXIT_SETUP;
	}
	/* The sentry's first task and the gofers start on this CPU (common/cpus.h). */
	husk_start_cpu_publish();
	if (stat(spec->rootfs, &rst) < 0 || !S_ISDIR(rst.st_mode)) {
		fprintf(stderr, "husk: rootfs %s: %s\n", spec->rootfs,
			errno ? strerror(errno) : "not a directory");
		return EXIT_SETUP;
	}
	if (spec->nvolumes > MAX_VOLUMES) {
		fprintf(stderr, "husk: at most %d volumes\n", MAX_VOLUMES);
		return EXIT_SETUP;
	}
	for (int i = 0; i < spec->nvolumes; i++) {
		const struct launch_volume *v = &spec->volumes[i];

		errno = 0;
		if (stat(v->host, &rst) < 0 || !S_ISDIR(rst.st_mode)) {
			fprintf(stderr, "husk: volume %s: %s\n", v->host,
				errno ? strerror(errno) : "not a directory");
			return EXIT_SETUP;
		}
		if ((size_t)snprintf(volarg[i], sizeof(volarg[i]), "%d:%s%s", CHILD_SOCK_FD + 1 + i,
				     v->guest, v->readonly ? ":ro" : "") >= sizeof(volarg[i])) {
			fprintf(stderr, "husk: volume %s: path too long\n", v->guest);
			return EXIT_SETUP;
		}
	}
	if (spec->gateway) {
		char why[PATH_MAX + 128];

		gateway =
			runtime_gateway_connect(spec->gateway, spec->gateway_id, why, sizeof(why));
		if (gateway < 0) {
			fprintf(stderr, "husk: %s\n", why);
			return EXIT_SETUP;
		}
	}
	for (char **a = spec->argv; *a; a++)
		nargs++;
	for (char **e = spec->env; *e; e++)
		nargs += 2;
	for (const char **tm = spec->tmpfs; tm && *tm; tm++)
		nargs += 2;
	nargs += 2 * spec->nvolumes;
	for (const char **na = spec->net_args; na && *na; na++)
		nargs++;

	for (int i = 0; i < npairs; i++)
		pairs[i][0] = pairs[i][1] = -1;
	for (int i = 0; i < npairs; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pairs[i]) < 0) {
			fprintf(stderr, "husk: socketpair: %s\n", strerror(errno));
			close_pairs(pairs, npairs);
			return EXIT_SETUP;
		}
	}
	snprintf(fdarg, sizeof(fdarg), "%d", CHILD_SOCK_FD);

	sargv = calloc((size_t)nargs + 32, sizeof(char *));
	if (!sargv) {
		close_pairs(pairs, npairs);
		return EXIT_SETUP;
	}
	n = 0;
	sargv[n++] = sentry;
	sargv[n++] = "--gofer-fd";
	sargv[n++] = fdarg;
	sargv[n++] = "--platform";
	sargv[n++] = (char *)spec->platform;
	sargv[n++] = "--cwd";
	sargv[n++] = (char *)spec->cwd;
	if (spec->default_cwd) {
		sargv[n++] = "--default-cwd";
		sargv[n++] = (char *)spec->default_cwd;
	}
	/* husk do's command is the caller's, not a container's init (sentry/kernel/hostsig.c). */
	sargv[n++] = "--caller-signals";
	sargv[n++] = "--hostname";
	sargv[n++] = (char *)spec->hostname;
	if (spec->strace)
		sargv[n++] = "--strace";
	if (spec->console)
		sargv[n++] = "--console";
	if (spec->control_fd >= 0) {
		/* Passed after the gofers' sockets (child_exec moves them in order). */
		snprintf(ctlarg, sizeof(ctlarg), "%d", CHILD_SOCK_FD + npairs);
		sargv[n++] = "--control-fd";
		sargv[n++] = ctlarg;
	}
	if (gateway >= 0) {
		/* After the control socket (or the gofers' sockets when there is none). */
		snprintf(gwarg, sizeof(gwarg), "%d",
			 CHILD_SOCK_FD + npairs + (spec->control_fd >= 0 ? 1 : 0));
		sargv[n++] = "--gateway-fd";
		sargv[n++] = gwarg;
		sargv[n++] = "--env";
		sargv[n++] = "HUSK_GATEWAY=" NET_GATEWAY_URL;
	}
	/* The sentry's crash report, raw, comes here; husk prints it symbolized (print_crash). */
	crash = memfd_create("husk-crash-report", MFD_CLOEXEC);
	if (crash >= 0) {
		/* After the gateway's socket (the last of those before it that exist). */
		snprintf(crasharg, sizeof(crasharg), "%d",
			 CHILD_SOCK_FD + npairs + (spec->control_fd >= 0 ? 1 : 0) +
				 (gateway >= 0 ? 1 : 0));
		sargv[n++] = "--crash-fd";
		sargv[n++] = crasharg;
		sargv[n++] = "--crash-fd-only";
	}
	if (spec->restore_dir) {
		if ((size_t)snprintf(restorearg, sizeof(restorearg), "--restore=%s",
				     spec->restore_dir) >= sizeof(restorearg)) {
			fprintf(stderr, "husk: --restore %s: path too long\n", spec->restore_dir);
			close_pairs(pairs, npairs);
			free(sargv);
			return EXIT_SETUP;
		}
		sargv[n++] = restorearg;
	}
	if (spec->rootfs_writable)
		sargv[n++] = "--writable-root";
	for (const char **tm = spec->tmpfs; tm && *tm; tm++) {
		sargv[n++] = "--tmpfs";
		sargv[n++] = (char *)*tm;
	}
	for (int i = 0; i < spec->nvolumes; i++) {
		sargv[n++] = "--volume-fd";
		sargv[n++] = volarg[i];
	}
	for (char **e = spec->env; *e; e++) {
		sargv[n++] = "--env";
		sargv[n++] = *e;
	}
	for (const char **na = spec->net_args; na && *na; na++)
		sargv[n++] = (char *)*na;
	sargv[n++] = "--";
	for (char **a = spec->argv; *a; a++)
		sargv[n++] = *a;
	sargv[n] = NULL;

	if (has_arg(spec->net_args, "--network=host")) {
		char why[256];

		ret = sandbox_cgroup_create(&cg, spec->net_args, why, sizeof(why));
		if (ret < 0 && has_arg(spec->net_args, "--test-no-egress-check")) {
			/* Without its own check the sentry would then be unguarded: refuse. */
			fprintf(stderr, "husk: BPF egress filter unavailable: %s\n", why);
			sandbox_cgroup_remove(&cg);
			close_pairs(pairs, npairs);
			free(sargv);
			return EXIT_SETUP;
		}
		if (ret < 0) {
			fprintf(stderr,
				"husk: warning: BPF egress filter unavailable (%s); the sentry's "
				"own check applies alone\n",
				why);
			sandbox_cgroup_remove(&cg);
		}
	}

	/* The gofers: the root's, then each volume's; husk keeps no end of any socket. */
	for (int i = 0; i < npairs; i++) {
		const char *dir = i == 0 ? spec->rootfs : spec->volumes[i - 1].host;
		bool ro = i == 0 ? !spec->rootfs_writable : spec->volumes[i - 1].readonly;

		gpids[i] = spawn_gofer(gofer, dir, ro, pairs[i][0]);
		if (gpids[i] < 0) {
			ret = errno;
			close_pairs(pairs, npairs);
			kill_gofers(gpids, ngofers);
			free(sargv);
			sandbox_cgroup_remove(&cg);
			fprintf(stderr, "husk: fork: %s\n", strerror(ret));
			return EXIT_SETUP;
		}
		ngofers++;
		close(pairs[i][0]);
		pairs[i][0] = -1;
		ssocks[i] = pairs[i][1];
	}
	nsocks = npairs;
	if (spec->control_fd >= 0)
		ssocks[nsocks++] = spec->control_fd;
	if (gateway >= 0)
		ssocks[nsocks++] = gateway;
	if (crash >= 0)
		ssocks[nsocks++] = crash;
	join_procs_fd = cg.procs_fd;
	tty_save(&tty);
	spid = spawn(ssocks, nsocks, sargv, 0);
	ret = errno;
	join_procs_fd = -1;
	close_pairs(pairs, npairs);
	free(sargv);
	if (spid < 0) {
		fprintf(stderr, "husk: fork: %s\n", strerror(ret));
		kill_gofers(gpids, ngofers);
		sandbox_cgroup_remove(&cg);
		return EXIT_SETUP;
	}

	if (spec->started)
		spec->started(spec->started_arg, spid, gpids[0]);
	relay_signals_to(spid);
	st = wait_for_sentry(spid);
	tty_restore(&tty);
	/* The sentry is gone: its socket ends are closed, and the gofers exit on EOF. If one does
	 * not within its own time (it is stuck), it would die with us anyway; wait for it here. */
	for (int i = 0; i < ngofers; i++)
		wait_for(gpids[i]);
	sandbox_cgroup_remove(&cg);

	if (st < 0)
		return EXIT_SETUP;
	print_crash(crash);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	/* The sentry dies of a signal it was sent only after pid 1 died of it (--caller-signals). */
	if (caller_sig && WTERMSIG(st) == caller_sig) {
		died_of_caller_sig = true;
		return 128 + WTERMSIG(st);
	}
	fprintf(stderr, "husk: the sentry died of signal %d (%s)\n", WTERMSIG(st),
		strsignal(WTERMSIG(st)));
	return EXIT_SETUP;
}
