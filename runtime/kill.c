/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk kill [--all] ID [SIGNAL]: sends SIGNAL (default TERM; a name or a number) to the sentry,
 * the container's process. The sentry forwards TERM, INT, HUP, QUIT, USR1 and USR2 to guest pid
 * 1; KILL kills the sentry and with it the whole sandbox. --all sends SIGNAL to every guest
 * process instead, through the control socket (CONTROL_SIGNAL to pid -1); KILL --all also kills
 * the sandbox's other host processes (the gofer, the stubs) through the cgroup. On a stopped
 * container --all succeeds with nothing to do, as runc's; without --all it fails.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

int cmd_kill(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct container c;
	bool all = false;
	int opt, sig = SIGTERM, pfd, ret = 0;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+a", longopts, NULL)) != -1) {
		if (opt != 'a')
			return 1;
		all = true;
	}
	if (optind != argc - 1 && optind != argc - 2)
		return oci_fail("kill: usage: husk kill [--all] ID [SIGNAL]");
	if (optind == argc - 2) {
		sig = parse_signal(argv[optind + 1]);
		if (sig < 0)
			return oci_fail("invalid signal: %s", argv[optind + 1]);
	}
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	if (container_status(&c) == CONTAINER_STOPPED) {
		container_release(&c);
		/* As runc's: --all has no process left to signal, and that is no error (containerd
		 * sends KILL --all after every exit). Without --all: runc's error. */
		return all ? 0 : oci_fail("container not running");
	}
	if (all && sig != SIGKILL) {
		/* Every guest process: the sentry signals them as kill(-1) from outside would. */
		_cleanup_free_ char *path = container_path(&c, "control.sock");
		char msg[CONTROL_SIGNAL_MSG_LEN];
		size_t len = control_encode_signal(-1, sig, msg);
		int r = path ? control_call(path, msg, len) : -ENOMEM;

		if (r < 0)
			ret = oci_fail("kill --all: %s", r == -ECONNREFUSED || r == -ENOENT ?
								 "container not running" :
								 strerror(-r));
		container_release(&c);
		return ret;
	}
	/* A pidfd, opened after checking the start time, cannot hit a reused pid. */
	pfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
	if (pfd < 0 || process_start_time(c.pid) != c.pid_start ||
	    syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) < 0)
		ret = oci_fail("container not running");
	if (pfd >= 0)
		close(pfd);
	/* KILL --all: the sandbox dies with its sentry; its other host processes go at once. */
	if (all && c.cgroup) {
		pid_t *pids = NULL;
		int n = cgroup_pids(c.cgroup, &pids);

		for (int i = 0; i < n; i++) {
			if (pids[i] != c.pid)
				kill(pids[i], sig);
		}
		free(pids);
	}
	container_release(&c);
	return ret;
}
