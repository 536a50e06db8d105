/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting a sandbox: one gofer and one sentry, connected by a SOCK_SEQPACKET socketpair.
 *
 *   husk ──fork/exec──> husk-gofer --fd 3 [--readonly] ROOTFS
 *        ──fork/exec──> husk-sentry --gofer-fd 3 ... -- CMD ARGS
 *
 * husk keeps no end of the socket, so the gofer sees EOF and exits when the sentry is gone.
 * Both children die with husk (PR_SET_PDEATHSIG), so nothing outlives an interrupted husk.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/runtime.h"

#define EXIT_SETUP 125
#define CHILD_SOCK_FD 3

static bool is_executable(const char *path)
{
	return access(path, X_OK) == 0;
}

char *runtime_find_helper(const char *name)
{
	/* Where husk lives, where meson puts helpers in a build tree, and where it installs. */
	static const char *const subdirs[] = { "",	     "/sentry",	  "/gofer",
					       "/../sentry", "/../gofer", "/.." };
	const char *env = !strcmp(name, "husk-sentry") ? getenv("HUSK_SENTRY") :
			  !strcmp(name, "husk-gofer")  ? getenv("HUSK_GOFER") :
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

/* In a child: moves sock to CHILD_SOCK_FD, arranges to die with husk, and execs argv. */
static void __attribute__((noreturn)) child_exec(int sock, char **argv, int devnull_stdio)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() == 1)
		_exit(EXIT_SETUP); /* husk is already gone */
	if (sock == CHILD_SOCK_FD) {
		/* dup2 onto itself does not clear close-on-exec. */
		fcntl(sock, F_SETFD, 0);
	} else if (dup2(sock, CHILD_SOCK_FD) < 0) {
		_exit(EXIT_SETUP);
	}
	if (devnull_stdio) {
		int fd = open("/dev/null", O_RDWR);
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

static pid_t spawn(int sock, char **argv, int devnull_stdio)
{
	pid_t pid = fork();

	if (pid == 0)
		child_exec(sock, argv, devnull_stdio);
	return pid;
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

int launch_and_wait(const struct launch_spec *spec)
{
	_cleanup_free_ char *sentry = runtime_find_helper("husk-sentry");
	_cleanup_free_ char *gofer = runtime_find_helper("husk-gofer");
	char *gargv[8], **sargv;
	char fdarg[16];
	int sv[2];
	int nargs = 0, n;
	pid_t gpid, spid;
	int st, ret;
	struct stat rst;

	if (!sentry || !gofer) {
		fprintf(stderr, "husk: cannot find %s next to husk (set HUSK_SENTRY/HUSK_GOFER)\n",
			!sentry ? "husk-sentry" : "husk-gofer");
		return EXIT_SETUP;
	}
	if (stat(spec->rootfs, &rst) < 0 || !S_ISDIR(rst.st_mode)) {
		fprintf(stderr, "husk: rootfs %s: %s\n", spec->rootfs,
			errno ? strerror(errno) : "not a directory");
		return EXIT_SETUP;
	}
	for (char **a = spec->argv; *a; a++)
		nargs++;
	for (char **e = spec->env; *e; e++)
		nargs += 2;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		fprintf(stderr, "husk: socketpair: %s\n", strerror(errno));
		return EXIT_SETUP;
	}
	snprintf(fdarg, sizeof(fdarg), "%d", CHILD_SOCK_FD);

	n = 0;
	gargv[n++] = gofer;
	gargv[n++] = "--fd";
	gargv[n++] = fdarg;
	if (!spec->rootfs_writable)
		gargv[n++] = "--readonly";
	gargv[n++] = (char *)spec->rootfs;
	gargv[n] = NULL;

	sargv = calloc((size_t)nargs + 24, sizeof(char *));
	if (!sargv) {
		close(sv[0]);
		close(sv[1]);
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
	sargv[n++] = "--hostname";
	sargv[n++] = (char *)spec->hostname;
	if (spec->strace)
		sargv[n++] = "--strace";
	if (spec->rootfs_writable)
		sargv[n++] = "--writable-root";
	for (char **e = spec->env; *e; e++) {
		sargv[n++] = "--env";
		sargv[n++] = *e;
	}
	sargv[n++] = "--";
	for (char **a = spec->argv; *a; a++)
		sargv[n++] = *a;
	sargv[n] = NULL;

	gpid = spawn(sv[0], gargv, 1);
	if (gpid < 0) {
		ret = errno;
		close(sv[0]);
		close(sv[1]);
		free(sargv);
		fprintf(stderr, "husk: fork: %s\n", strerror(ret));
		return EXIT_SETUP;
	}
	close(sv[0]);
	spid = spawn(sv[1], sargv, 0);
	ret = errno;
	close(sv[1]);
	free(sargv);
	if (spid < 0) {
		fprintf(stderr, "husk: fork: %s\n", strerror(ret));
		kill(gpid, SIGKILL);
		wait_for(gpid);
		return EXIT_SETUP;
	}

	st = wait_for(spid);
	/* The sentry is gone: its socket end is closed, and the gofer exits on EOF. If it does not
	 * within its own time (it is stuck), it would die with us anyway; wait for it here. */
	wait_for(gpid);

	if (st < 0)
		return EXIT_SETUP;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	fprintf(stderr, "husk: the sentry died of signal %d (%s)\n", WTERMSIG(st),
		strsignal(WTERMSIG(st)));
	return EXIT_SETUP;
}
