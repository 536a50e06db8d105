/* SPDX-License-Identifier: Apache-2.0 */
/* OCI hooks: each hook runs with the state JSON on stdin, its own args and env, and a timeout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "oci-spec/state.h"
#include "runtime/oci.h"

/* Waits for child pid with a timeout in seconds (0: none). Returns its status or -ETIMEDOUT. */
static int wait_timeout(pid_t pid, int timeout)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int st;

	if (pfd >= 0 && timeout > 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		int n;

		while ((n = poll(&p, 1, timeout * 1000)) < 0 && errno == EINTR)
			;
		if (n == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			close(pfd);
			return -ETIMEDOUT;
		}
	}
	if (pfd >= 0)
		close(pfd);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return st;
}

static int run_one(const struct oci_hook *h, const char *state)
{
	static const char *const no_env[] = { NULL };
	int in[2];
	pid_t pid;
	int st;
	size_t len = strlen(state);

	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(in[0]);
		close(in[1]);
		return e;
	}
	if (pid == 0) {
		const char *argv0[] = { h->path, NULL };
		int devnull = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		/* A hook's output must not corrupt what the engine reads from husk's stdout. */
		if (devnull >= 0)
			dup2(devnull, 1);
		execve(h->path, (char *const *)(h->args ? h->args : argv0),
		       (char *const *)(h->env ? h->env : no_env));
		fprintf(stderr, "husk: hook %s: %s\n", h->path, strerror(errno));
		_exit(127);
	}
	close(in[0]);
	signal(SIGPIPE, SIG_IGN);
	if (write(in[1], state, len) < 0) {
		/* The hook does not read its stdin: that is its business. */
	}
	close(in[1]);
	st = wait_timeout(pid, h->timeout);
	if (st == -ETIMEDOUT)
		return -ETIMEDOUT;
	if (st < 0)
		return st;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -ECHILD;
	return 0;
}

int hooks_run(const struct container *c, enum oci_hook_kind kind, enum container_status s)
{
	const struct oci_hook_list *l = &c->config->hooks[kind];
	struct oci_state os;
	_cleanup_free_ char *state = NULL;
	int ret;

	if (!l->n)
		return 0;
	container_oci_state(c, s, &os);
	state = oci_state_json(&os, OCI_STATE_HOOK);
	if (!state)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		ret = run_one(&l->hooks[i], state);
		if (ret < 0) {
			oci_fail("%s hook #%zu (%s): %s", oci_hook_kind_name(kind), i,
				 l->hooks[i].path,
				 ret == -ETIMEDOUT ? "timed out" :
				 ret == -ECHILD	   ? "failed" :
						     strerror(-ret));
			return ret;
		}
	}
	return 0;
}
