/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk run [--bundle DIR] [--console-socket PATH] [--pid-file PATH] [--preserve-fds N]
 *          [--detach] [--keep] ID
 *
 * create + start. In the foreground the sentry is husk's child: husk forwards the usual
 * signals to it, waits, deletes the container (unless --keep) and exits with the container's
 * status (128+N after signal N), as runc run does.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/oci.h"

static volatile pid_t forward_to;

static void forward(int sig)
{
	if (forward_to > 0)
		kill(forward_to, sig);
}

int cmd_run(int argc, char **argv)
{
	return oci_run(argc, argv, false);
}

int oci_run(int argc, char **argv, bool restore)
{
	static const struct option longopts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "detach", no_argument, NULL, 'd' },
		{ "keep", no_argument, NULL, 'k' },
		{ "no-pivot", no_argument, NULL, 'N' },
		{ "no-new-keyring", no_argument, NULL, 'K' },
		/* husk restore, and husk run --restore (a template image) */
		{ "restore", required_argument, NULL, 'R' },
		{ "image-path", required_argument, NULL, 'i' },
		{ "work-path", required_argument, NULL, 'x' },
		{ "tcp-established", no_argument, NULL, 'X' },
		{ "ext-unix-sk", no_argument, NULL, 'X' },
		{ "shell-job", no_argument, NULL, 'X' },
		{ "file-locks", no_argument, NULL, 'X' },
		{ "auto-dedup", no_argument, NULL, 'X' },
		{ "lazy-pages", no_argument, NULL, 'X' },
		{ "no-subreaper", no_argument, NULL, 'X' },
		{ "manage-cgroups-mode", required_argument, NULL, 'x' },
		{ "empty-ns", required_argument, NULL, 'x' },
		{ "lsm-profile", required_argument, NULL, 'x' },
		{ "lsm-mount-context", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char image[PATH_MAX];
	const char *image_arg = NULL;
	static const int fwd[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
	struct create_args a = { .foreground = true };
	struct container c;
	bool keep = false;
	int opt, ret, st;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+b:d", longopts, NULL)) != -1) {
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
		case 'd':
			a.foreground = false;
			break;
		case 'k':
			keep = true;
			break;
		case 'N':
		case 'K':
			break;
		case 'h':
			puts(restore ?
				     "usage: husk restore [--image-path DIR] [--bundle DIR] [--detach] "
				     "[--pid-file F] [--console-socket S] ID" :
				     "usage: husk run [--bundle DIR] [--console-socket PATH] "
				     "[--pid-file PATH] [--preserve-fds N] [--detach] [--keep] "
				     "[--restore IMAGE-DIR] ID");
			return 0;
		case 'R':
			restore = true;
			image_arg = optarg;
			break;
		case 'i':
		case 'x':
		case 'X':
			if (!restore)
				return oci_fail("run: unknown option %s", argv[optind - 1]);
			if (opt == 'i')
				image_arg = optarg;
			break;
		default:
			return 1;
		}
	}
	if (optind != argc - 1)
		return oci_fail("%s: expected exactly one container id",
				restore ? "restore" : "run");
	a.id = argv[optind];
	if (restore) {
		/* runc's default: ./checkpoint */
		if (!realpath(image_arg ? image_arg : "checkpoint", image))
			return oci_fail("restore: image path %s: %s",
					image_arg ? image_arg : "checkpoint", strerror(errno));
		a.restore_dir = image;
		/* A container husk checkpoint stopped (or any stopped one) is replaced by its
		 * restore under the same id, as engines do after runc checkpoint. */
		struct container old;

		/* Released either way: a failed load leaves what it had filled in. */
		if (container_load(a.id, &old) == 0 && container_status(&old) == CONTAINER_STOPPED)
			container_destroy(&old);
		container_release(&old);
	}
	ret = oci_create_container(&a, &c);
	if (ret) {
		container_release(&c);
		return ret;
	}
	if (a.foreground) {
		struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };

		forward_to = c.pid;
		for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
			sigaction(fwd[i], &sa, NULL);
	}
	if (hooks_run(&c, OCI_HOOK_START_CONTAINER, CONTAINER_CREATED) < 0 ||
	    sandbox_release_gate(&c) < 0) {
		ret = oci_fail("cannot start the container");
		container_destroy(&c);
		container_release(&c);
		return ret;
	}
	if (hooks_run(&c, OCI_HOOK_POSTSTART, CONTAINER_RUNNING) < 0)
		oci_warn("poststart hook failed");
	if (!a.foreground) {
		container_release(&c);
		return 0;
	}
	/* Other commands (state, kill) may lock the container while it runs. */
	close(c.lock_fd);
	c.lock_fd = -1;
	while (waitpid(c.pid, &st, 0) < 0) {
		if (errno != EINTR) {
			st = 125 << 8;
			break;
		}
	}
	forward_to = 0;
	ret = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	/* The container's status is the sentry's: say when the sentry itself crashed (a guest
	 * killed by a signal also ends in 128 + N, by the sentry's exit). */
	if (WIFSIGNALED(st) &&
	    (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGBUS || WTERMSIG(st) == SIGILL ||
	     WTERMSIG(st) == SIGFPE || WTERMSIG(st) == SIGABRT || WTERMSIG(st) == SIGSYS ||
	     WTERMSIG(st) == SIGTRAP))
		fprintf(stderr, "husk: the sentry died of signal %d (%s)\n", WTERMSIG(st),
			strsignal(WTERMSIG(st)));
	if (!keep) {
		struct container d;

		if (container_load(a.id, &d) == 0)
			container_destroy(&d);
		container_release(&d);
	}
	container_release(&c);
	return ret;
}
