/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk exec [--process FILE] [--tty] [--console-socket PATH] [--detach] [--pid-file PATH]
 *           [--cwd DIR] [--env K=V]... [--user UID[:GID]] [--additional-gids G]... ID
 *           [CMD ARGS...]
 *
 * Sends a CONTROL_EXEC request (runtime/control.h) to the sentry's control socket with the
 * process's stdio (husk's own 0-2, or the slave of a pty whose master goes to --console-socket),
 * and waits for CONTROL_EXITED: husk exec exits with the process's status (128+N after signal
 * N). Defaults come from the container's config.json process (env, cwd, user), as runc's.
 *
 * --detach: husk exec returns once the process started; a small host process (the "exec
 * proxy") stays, holding the connection, and exits with the guest process's status when it
 * ends. --pid-file gets that proxy's pid: husk has no host process per guest process, and the
 * proxy is the host process that lives exactly as long as the exec'd one, which engines
 * (conmon, containerd-shim) wait on as they would on runc's. Without --detach, the pid file
 * gets husk exec's own pid, for the same reason.
 *
 * --tty without --console-socket: husk makes the pty itself and copies between it and its own
 * stdio until the process ends.
 *
 * Signals: as runc's exec, husk exec (and the detached exec proxy) forwards every signal it can
 * catch to the guest process, except SIGCHLD, SIGURG (ignored), the synchronous fault signals,
 * and SIGWINCH, which resizes the pty husk holds (--tty without --console-socket; the guest
 * process then gets SIGWINCH too) and is otherwise ignored. Each forwarded signal is a
 * CONTROL_SIGNAL request on a connection of its own (the exec connection stays the sentry's
 * for the exit status); the sentry sends it as kill(2) from outside the sandbox would.
 *
 * --preserve-fds N: husk's fds 3..3+N-1 become the process's fds 3..3+N-1 (after the
 * $LISTEN_FDS ones when LISTEN_FDS is set and LISTEN_PID is husk's pid, as runc; the process
 * then gets LISTEN_FDS and LISTEN_PID=1). They travel with the request (SCM_RIGHTS) and are
 * read and written by the sentry.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "runtime/control.h"
#include "runtime/oci.h"

#define EXIT_EXEC_FAILED 255

/* What to run: the command line's, or --process FILE's, over the container's defaults. */
struct exec_proc {
	char **args;
	char **env;
	const char *cwd;
	struct control_exec e;
	bool tty;
	json_t *doc; /* --process document, owned */
};

/* A NULL-terminated copy of a JSON array of strings, or NULL (err says why). */
static char **json_strv(json_t *a, const char *what, char *err, size_t len)
{
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(char *));

	if (!v) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(a, i);

		if (!json_is_string(s)) {
			snprintf(err, len, "%s[%zu]: expected a string", what, i);
			free(v);
			return NULL;
		}
		v[i] = (char *)json_string_value(s);
	}
	return v;
}

/* Reads --process FILE (a config.json process object) into p. Returns 0 or 1 after a message. */
static int load_process(const char *file, struct exec_proc *p)
{
	json_error_t jerr;
	json_t *user, *v;
	char err[256];

	p->doc = json_load_file(file, 0, &jerr);
	if (!p->doc || !json_is_object(p->doc))
		return oci_fail("exec: --process %s: %s", file,
				p->doc ? "expected a JSON object" : jerr.text);
	v = json_object_get(p->doc, "args");
	if (!json_is_array(v) || !json_array_size(v))
		return oci_fail("exec: --process %s: args: expected a non-empty array", file);
	free(p->args);
	p->args = json_strv(v, "args", err, sizeof(err));
	if (!p->args)
		return oci_fail("exec: --process %s: %s", file, err);
	v = json_object_get(p->doc, "env");
	if (json_is_array(v)) {
		free(p->env);
		p->env = json_strv(v, "env", err, sizeof(err));
		if (!p->env)
			return oci_fail("exec: --process %s: %s", file, err);
	}
	v = json_object_get(p->doc, "cwd");
	if (json_is_string(v))
		p->cwd = json_string_value(v);
	p->tty = json_is_true(json_object_get(p->doc, "terminal"));
	v = json_object_get(p->doc, "oomScoreAdj");
	if (v) {
		/* As runc exec: the process's own score, else the container's (pid 1's default). */
		if (!json_is_integer(v) || json_integer_value(v) < -1000 ||
		    json_integer_value(v) > 1000)
			return oci_fail("exec: --process %s: oomScoreAdj: expected an integer "
					"in -1000..1000",
					file);
		p->e.flags |= CONTROL_EXEC_OOM_SCORE_ADJ;
		p->e.oom_score_adj = (int32_t)json_integer_value(v);
	}
	user = json_object_get(p->doc, "user");
	if (json_is_object(user)) {
		json_t *gids = json_object_get(user, "additionalGids");

		p->e.uid = (uint32_t)json_integer_value(json_object_get(user, "uid"));
		p->e.gid = (uint32_t)json_integer_value(json_object_get(user, "gid"));
		if (json_is_integer(json_object_get(user, "umask")))
			p->e.umask = (uint32_t)json_integer_value(json_object_get(user, "umask"));
		p->e.ngroups = 0;
		for (size_t i = 0; json_is_array(gids) && i < json_array_size(gids) && i < 32; i++)
			p->e.groups[p->e.ngroups++] =
				(uint32_t)json_integer_value(json_array_get(gids, i));
	}
	return 0;
}

/* husk's exit status for a wait status: the code, or 128+N after signal N. */
static int exit_code(int status)
{
	if (status & 0x7f)
		return 128 + (status & 0x7f);
	return (status >> 8) & 0xff;
}

static struct termios saved_tio;
static bool tio_saved;

static void restore_tty(void)
{
	if (tio_saved)
		tcsetattr(0, TCSANOW, &saved_tio);
}

/* Signals husk exec does not forward: its own child reaping, faults, and the unblockable. */
static bool not_forwarded(int sig)
{
	switch (sig) {
	case SIGKILL:
	case SIGSTOP:
	case SIGCHLD:
	case SIGSEGV:
	case SIGBUS:
	case SIGFPE:
	case SIGILL:
	case SIGTRAP:
	case SIGSYS:
		return true;
	default:
		/* glibc's own (SIGCANCEL, SIGSETXID): below SIGRTMIN, never sent to us. */
		return sig >= 32 && sig < SIGRTMIN;
	}
}

/*
 * Blocks every signal husk exec forwards and returns a signalfd that reads them, or -errno.
 * Each gets the default action first: one the caller's shell ignores (SIGINT and SIGQUIT for a
 * background command) would be discarded when sent, never read. Call before the process
 * starts, so that no signal meant for it is lost (runc does the same).
 */
static int forward_signals_fd(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	for (int sig = 1; sig < NSIG; sig++) {
		if (!not_forwarded(sig))
			sigaddset(&set, sig);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sigismember(&set, sig))
			signal(sig, SIG_DFL);
	}
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* Where signals for the guest process go: its control socket and pid. */
static const char *ctl_path;
static int32_t guest_pid;

/* Asks the sentry to send sig to the guest process (CONTROL_SIGNAL). Returns its err. */
static int send_signal(int sig)
{
	char msg[CONTROL_SIGNAL_MSG_LEN];
	size_t len = control_encode_signal(guest_pid, sig, msg);

	return control_call(ctl_path, msg, len);
}

/*
 * With --tty, the pty's slave is the controlling terminal of a host session of husk's (the
 * detached proxy's, or a relay child's: tty_relay_start), so that what the pty's line
 * discipline signals (^C, ^\, ^Z, a resize by the master's holder, its hang-up) reaches
 * husk and is forwarded to the guest process, as runc's exec'd process, whose controlling
 * terminal the pty is, gets it. tty_winch: a resize of a master husk does not hold is the
 * guest's (forwarded).
 */
static bool tty_winch;

/* Handles the signals waiting on sigfd: forwarded, or a resize of the pty master (or -1). */
static void handle_signals(int sigfd, int master)
{
	struct signalfd_siginfo si;

	while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGURG)
			continue;
		if (sig == SIGWINCH) {
			struct winsize ws;

			/* A pty husk holds takes its terminal's size; else only the guest's pty's
			 * own resize is forwarded: the caller's terminal is not the guest's. */
			if (master < 0 && !tty_winch)
				continue;
			if (master >= 0) {
				if (ioctl(0, TIOCGWINSZ, &ws) < 0)
					continue;
				ioctl(master, TIOCSWINSZ, &ws);
			}
		}
		send_signal(sig);
	}
}

static void relay_signal(int sig)
{
	kill(getppid(), sig);
	if (sig == SIGHUP)
		_exit(0);
}

/*
 * husk exec without --detach cannot lead a session (it is its caller's process group leader):
 * a child does, with the slave as its controlling terminal, and passes what the terminal
 * signals it to husk exec (forwarded from there). It dies with husk exec. winch: pass SIGWINCH
 * too (the master is not husk's). Returns 0, or -errno.
 */
static int tty_relay_start(int slave, bool winch)
{
	static const int sigs[] = { SIGINT, SIGQUIT, SIGTSTP, SIGHUP, SIGWINCH };
	pid_t parent = getpid(), pid;
	int ready[2];
	char c;

	if (pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(ready[0]);
		close(ready[1]);
		return -e;
	}
	if (pid > 0) {
		/*
		 * Until the child leads its session with the slave as its terminal and passes its
		 * signals on (or gave up: EOF): a ^C typed before would signal no one. The caller
		 * starts the process only then (oci-tty.sh lost ^C under load).
		 */
		close(ready[1]);
		while (read(ready[0], &c, 1) < 0 && errno == EINTR)
			;
		close(ready[0]);
		return 0;
	}
	close(ready[0]);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
		_exit(0);
	{
		struct sigaction sa = { .sa_handler = relay_signal };
		sigset_t set;

		sigemptyset(&sa.sa_mask);
		sigemptyset(&set);
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			if (sigs[i] == SIGWINCH && !winch)
				continue;
			sigaction(sigs[i], &sa, NULL);
			sigaddset(&set, sigs[i]);
		}
		sigprocmask(SIG_UNBLOCK, &set, NULL);
	}
	c = 1;
	if (write(ready[1], &c, 1) < 0) {
		/* The parent reads EOF at the exit below, or at this close: it goes on either way. */
	}
	for (int fd = 0; fd < 1024; fd++)
		close(fd);
	for (;;)
		pause();
}

/*
 * The exec proxy's loop: until the exited message arrives on sock, forwards the signals read
 * from sigfd and, with a pty master (>= 0), copies between it and husk's stdio. Returns the
 * guest process's wait status, or -1 (the message printed) when the connection was lost.
 */
static int proxy_loop(int sock, int sigfd, int master)
{
	struct control_exited ex;
	char buf[4096];
	bool in_open = master >= 0, master_open = master >= 0;

	if (master >= 0 && isatty(0) && tcgetattr(0, &saved_tio) == 0) {
		struct termios raw = saved_tio;

		tio_saved = true;
		atexit(restore_tty);
		cfmakeraw(&raw);
		tcsetattr(0, TCSANOW, &raw);
	}
	for (;;) {
		struct pollfd p[4] = { { .fd = sock, .events = POLLIN },
				       { .fd = sigfd, .events = POLLIN },
				       { .fd = master_open ? master : -1, .events = POLLIN },
				       { .fd = in_open ? 0 : -1, .events = POLLIN } };

		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			restore_tty();
			oci_fail("exec: poll: %s", strerror(errno));
			return -1;
		}
		if (p[1].revents & POLLIN)
			handle_signals(sigfd, master);
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(master, buf, sizeof(buf));

			/* EIO once the guest's side is closed: wait for the exit status alone. */
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				master_open = false;
			if (n > 0 && write(1, buf, (size_t)n) < 0) {
				restore_tty();
				return 1 << 8;
			}
		}
		if (p[3].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(0, buf, sizeof(buf));

			if (n <= 0)
				in_open = false;
			else if (write(master, buf, (size_t)n) < 0)
				in_open = false;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			int ret = control_recv(sock, CONTROL_EXITED, &ex, sizeof(ex));
			ssize_t n;

			/* What the process wrote last is still in the pty. */
			if (master >= 0) {
				int fl = fcntl(master, F_GETFL);

				fcntl(master, F_SETFL, fl | O_NONBLOCK);
				while ((n = read(master, buf, sizeof(buf))) > 0)
					if (write(1, buf, (size_t)n) < 0)
						break;
			}
			restore_tty();
			if (ret < 0) {
				oci_fail("exec: lost the sandbox's control connection (%s)",
					 strerror(-ret));
				return -1;
			}
			return ex.status;
		}
	}
}

/* The runc-worded failure for an exec that did not start. */
static int exec_failed(const char *arg0, int err)
{
	if (err == -ENOENT) {
		oci_fail("exec failed: unable to start container process: exec: \"%s\": "
			 "executable file not found in $PATH",
			 arg0);
		return 127;
	}
	if (err == -EACCES || err == -ENOEXEC || err == -EISDIR) {
		oci_fail("exec failed: unable to start container process: exec: \"%s\": "
			 "permission denied",
			 arg0);
		return 126;
	}
	oci_fail("exec failed: unable to start container process: %s", strerror(-err));
	return EXIT_EXEC_FAILED;
}

int cmd_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "process", required_argument, NULL, 'p' },
		{ "tty", no_argument, NULL, 't' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "detach", no_argument, NULL, 'd' },
		{ "pid-file", required_argument, NULL, 'P' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "user", required_argument, NULL, 'u' },
		{ "additional-gids", required_argument, NULL, 'G' },
		{ "no-new-privs", no_argument, NULL, 'n' },
		{ "cap", required_argument, NULL, 'C' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "process-label", required_argument, NULL, 'l' },
		{ "apparmor", required_argument, NULL, 'a' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ "ignore-paused", no_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct exec_proc p = { .e = { .umask = 0xffffffffu } };
	const char *process = NULL, *cwd = NULL, *console = NULL, *pid_file = NULL, *user = NULL;
	char **extra_env = calloc((size_t)argc + 1, sizeof(char *));
	uint32_t gids[32];
	int ngids = 0;
	_cleanup_free_ char *sock_path = NULL;
	_cleanup_free_ void *msg = NULL;
	_cleanup_close_ int sock = -1;
	int master = -1, slave = -1;
	struct control_reply r;
	struct container c;
	bool detach = false, tty = false, ignore_paused = false;
	size_t nextra = 0, len;
	int opt, ret, fds[CONTROL_MAX_FDS], nfds, npreserve = 0, nlisten;
	_cleanup_close_ int sigfd = -1;
	char listen_env[32];

	if (!extra_env)
		return oci_fail("out of memory");
	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+e:u:dt", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			process = optarg;
			break;
		case 't':
			tty = true;
			break;
		case 'd':
			detach = true;
			break;
		case 'c':
			console = optarg;
			break;
		case 'P':
			pid_file = optarg;
			break;
		case 'w':
			cwd = optarg;
			break;
		case 'e':
			extra_env[nextra++] = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'G':
			if (ngids < 32)
				gids[ngids++] = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'f': {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (end == optarg || *end || n < 0 || n > CONTROL_MAX_PRESERVE)
				return oci_fail("exec: --preserve-fds %s: expected 0 to %d", optarg,
						CONTROL_MAX_PRESERVE);
			npreserve = (int)n;
			break;
		}
		case 'n':
		case 'C':
		case 'l':
		case 'a':
		case 'g':
			break;
		case 'i':
			ignore_paused = true;
			break;
		default:
			return 1;
		}
	}
	if (optind >= argc)
		return oci_fail("exec: expected a container id");
	if (!process && optind + 1 >= argc)
		return oci_fail("exec: expected a command, or --process FILE");
	/* Checked before husk opens anything that could take a missing one's number. */
	nlisten = control_listen_fds();
	if (nlisten + npreserve > CONTROL_MAX_PRESERVE)
		return oci_fail("exec: at most %d preserved fds", CONTROL_MAX_PRESERVE);
	if (control_check_preserved(nlisten + npreserve, &ret) < 0)
		return oci_fail("unable to stat preserved-fd %d (of %d): %s", ret,
				nlisten + npreserve, strerror(EBADF));
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	{
		enum container_status s = container_status(&c);

		/* As runc: a paused container takes an exec only with --ignore-paused (the new
		 * process then waits for husk resume with the others). */
		if (s != CONTAINER_RUNNING && !(s == CONTAINER_PAUSED && ignore_paused)) {
			container_release(&c);
			return oci_fail(
				s == CONTAINER_PAUSED ?
					"cannot exec in a paused container (use --ignore-paused)" :
					"cannot exec in a stopped container");
		}
	}
	/* runc's defaults: the container's process, then what the command line says. */
	p.cwd = c.config->cwd;
	p.e.uid = c.config->uid;
	p.e.gid = c.config->gid;
	p.e.ngroups = 0;
	for (size_t i = 0; i < c.config->nadditional_gids && i < 32; i++)
		p.e.groups[p.e.ngroups++] = c.config->additional_gids[i];
	if (c.config->has_umask)
		p.e.umask = c.config->umask;
	{
		size_t n = 0;

		while (c.config->env[n])
			n++;
		p.env = calloc(n + 1, sizeof(char *));
		if (!p.env)
			return oci_fail("out of memory");
		memcpy(p.env, c.config->env, n * sizeof(char *));
	}
	if (process) {
		ret = load_process(process, &p);
		if (ret) {
			container_release(&c);
			return ret;
		}
		tty = tty || p.tty;
	} else {
		p.args = argv + optind + 1;
	}
	if (cwd)
		p.cwd = cwd;
	if (user) {
		char *end;

		p.e.uid = (uint32_t)strtoul(user, &end, 10);
		if (*end == ':')
			p.e.gid = (uint32_t)strtoul(end + 1, &end, 10);
		if (*end || end == user) {
			container_release(&c);
			return oci_fail("exec: --user %s: expected UID[:GID]", user);
		}
	}
	if (ngids) {
		p.e.ngroups = (uint32_t)ngids;
		memcpy(p.e.groups, gids, sizeof(uint32_t) * (size_t)ngids);
	}
	if (nextra) {
		/* --env entries are added to (or replace) the defaults. */
		size_t n = 0;
		char **env;

		while (p.env[n])
			n++;
		env = realloc(p.env, (n + nextra + 1) * sizeof(char *));
		if (!env)
			return oci_fail("out of memory");
		p.env = env;
		for (size_t i = 0; i < nextra; i++) {
			size_t klen = strcspn(extra_env[i], "=");
			size_t j;

			for (j = 0; j < n; j++) {
				if (!strncmp(p.env[j], extra_env[i], klen) && p.env[j][klen] == '=')
					break;
			}
			p.env[j] = extra_env[i];
			if (j == n)
				n++;
		}
		p.env[n] = NULL;
	}
	if (nlisten) {
		/* As runc: the process learns of the socket-activation fds. */
		size_t n = 0;
		char **env;

		while (p.env[n])
			n++;
		env = realloc(p.env, (n + 3) * sizeof(char *));
		if (!env)
			return oci_fail("out of memory");
		p.env = env;
		snprintf(listen_env, sizeof(listen_env), "LISTEN_FDS=%d", nlisten);
		p.env[n++] = listen_env;
		p.env[n++] = "LISTEN_PID=1";
		p.env[n] = NULL;
	}
	p.e.npreserve = (uint32_t)(nlisten + npreserve);
	if (tty && detach && !console) {
		container_release(&c);
		return oci_fail("cannot allocate tty if runc will detach without setting console "
				"socket");
	}
	if (tty) {
		p.e.flags |= CONTROL_EXEC_TTY;
		if (console) {
			slave = console_send_master(console, c.config);
			if (slave < 0) {
				container_release(&c);
				return oci_fail("console socket %s: %s", console, strerror(-slave));
			}
		} else {
			struct winsize ws = { 0 };

			ioctl(0, TIOCGWINSZ, &ws);
			if (openpty(&master, &slave, NULL, NULL, ws.ws_row ? &ws : NULL) < 0) {
				container_release(&c);
				return oci_fail("exec: openpty: %s", strerror(errno));
			}
		}
	}
	sock_path = container_path(&c, "control.sock");
	/* Before the release: the defaults point into the container's config. */
	msg = control_encode_exec(&p.e, p.cwd, p.args, p.env, &len);
	container_release(&c);
	if (!msg)
		return oci_fail("exec: %s", strerror(errno));
	if (!sock_path)
		return oci_fail("exec: %s", strerror(ENOMEM));
	ctl_path = sock_path;
	/* Before the process starts: no signal for it is lost meanwhile. */
	sigfd = forward_signals_fd();
	if (sigfd < 0)
		return oci_fail("exec: signalfd: %s", strerror(-sigfd));
	sock = control_dial(sock_path);
	if (sock < 0)
		return oci_fail("exec: the sandbox's control socket: %s", strerror(-sock));
	if (tty) {
		fds[0] = slave;
		nfds = 1;
	} else {
		fds[0] = 0;
		fds[1] = 1;
		fds[2] = 2;
		nfds = 3;
	}
	for (uint32_t i = 0; i < p.e.npreserve; i++)
		fds[nfds++] = 3 + (int)i;
	/*
	 * The pty's signals: see tty_winch. The detached proxy leads a session of its own. The
	 * relay first, so that the slave has its session before the process can write to it.
	 */
	if (tty) {
		int rr;

		tty_winch = master < 0;
		if (!detach && (rr = tty_relay_start(slave, tty_winch)) < 0)
			log_warn("exec: the pty's signals will not reach the process: %s",
				 strerror(-rr));
	}
	ret = control_send_fds(sock, msg, len, fds, nfds);
	if (slave >= 0 && !detach)
		close(slave);
	if (ret < 0)
		return oci_fail("exec: sending the request: %s", strerror(-ret));
	ret = control_recv(sock, CONTROL_REPLY, &r, sizeof(r));
	if (ret < 0)
		return oci_fail("exec: no answer from the sandbox (%s)", strerror(-ret));
	if (r.err < 0)
		return exec_failed(p.args[0], r.err);
	guest_pid = r.pid;
	if (detach) {
		/* The exec proxy: the host process that lives as long as the guest process. */
		pid_t pid = fork();

		if (pid < 0)
			return oci_fail("exec: fork: %s", strerror(errno));
		if (pid == 0) {
			int status;
			int devnull = open("/dev/null", O_RDWR);

			setsid();
			if (slave >= 0) {
				ioctl(slave, TIOCSCTTY, 0);
				close(slave);
			}
			if (devnull >= 0) {
				dup2(devnull, 0);
				dup2(devnull, 1);
				dup2(devnull, 2);
				if (devnull > 2)
					close(devnull);
			}
			status = proxy_loop(sock, sigfd, -1);
			if (status < 0)
				_exit(EXIT_EXEC_FAILED);
			if (status & 0x7f) {
				/* Die of the same signal, so that a waiting engine sees it. */
				sigset_t one;

				sigemptyset(&one);
				sigaddset(&one, status & 0x7f);
				signal(status & 0x7f, SIG_DFL);
				sigprocmask(SIG_UNBLOCK, &one, NULL);
				kill(getpid(), status & 0x7f);
			}
			_exit(exit_code(status));
		}
		if (slave >= 0)
			close(slave);
		if (pid_file && (ret = write_pid_file(pid_file, pid)) < 0)
			return oci_fail("pid file %s: %s", pid_file, strerror(-ret));
		return 0;
	}
	if (pid_file && (ret = write_pid_file(pid_file, getpid())) < 0)
		return oci_fail("pid file %s: %s", pid_file, strerror(-ret));
	ret = proxy_loop(sock, sigfd, master);
	return ret < 0 ? 1 : exit_code(ret);
}
