/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Choosing the platform (how guest code runs) for a sandbox: seccomp, ptrace, kvm (issue 19) or
 * auto.
 *
 * Precedence: `husk do --platform`, the container's dev.husk.platform annotation or the global
 * `husk --platform` flag (the annotation wins over the flag), then $HUSK_PLATFORM, then auto.
 * The runtime only checks that the name is one husk knows; which backends this build has, and
 * which one auto picks on this host, is the sentry's to say (husk-sentry --print-platforms),
 * because it is the sentry that resolves auto when it starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/runtime.h"

static const char *const known_platforms[] = { "seccomp", "ptrace", "kvm", "auto" };

const char *runtime_platform_default(void)
{
	const char *env = getenv("HUSK_PLATFORM");

	return env && *env ? env : "auto";
}

int runtime_platform_check(const char *name, char *why, size_t size)
{
	const size_t n = sizeof(known_platforms) / sizeof(known_platforms[0]);
	size_t len;

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(name, known_platforms[i]))
			return 0;
	}
	len = (size_t)snprintf(why, size, "unknown platform (expected ");
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(why + len, size - len, "%s%s", known_platforms[i],
					i + 2 < n ? ", " :
					i + 1 < n ? " or " :
						    ")");
	return -EINVAL;
}

/* Copies the rest of the line after "key " in out (NUL-terminated): 0, or -ENOENT. */
static int field(const char *text, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	const char *l = text;

	while (*l) {
		const char *nl = strchr(l, '\n');

		if (!strncmp(l, key, klen) && l[klen] == ' ') {
			const char *v = l + klen + 1;
			size_t n = nl ? (size_t)(nl - v) : strlen(v);

			if (n == 0 || n >= size)
				return -ENOENT;
			memcpy(out, v, n);
			out[n] = 0;
			return 0;
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	return -ENOENT;
}

int runtime_platforms_query(char *names, size_t names_size, char *auto_name, size_t auto_size)
{
	_cleanup_free_ char *sentry = runtime_find_helper("husk-sentry");
	char buf[512];
	size_t len = 0;
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (!sentry)
		return -ENOENT;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return -err;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (dup2(fds[1], 1) < 0 || (null >= 0 && (dup2(null, 0) < 0 || dup2(null, 2) < 0)))
			_exit(127);
		execl(sentry, "husk-sentry", "--print-platforms", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1) {
		n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	if (field(buf, "platforms", names, names_size) < 0 ||
	    field(buf, "auto", auto_name, auto_size) < 0)
		return -EIO;
	return 0;
}
