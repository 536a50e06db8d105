/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk exec [--process FILE] [--tty] [--console-socket PATH] [--detach] [--pid-file PATH]
 *           [--cwd DIR] [--env K=V]... [--user UID[:GID]] ID [CMD ARGS...]
 *
 * Sends a CONTROL_EXEC request (runtime/control.h) to the sentry's control socket. The sentry
 * cannot start a second process yet (kernel_spawn needs issue 3), and does not listen on the
 * socket yet, so today this validates its arguments and the container, then says so.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

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
		{ "no-new-privs", no_argument, NULL, 'n' },
		{ "cap", required_argument, NULL, 'C' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "process-label", required_argument, NULL, 'l' },
		{ "apparmor", required_argument, NULL, 'a' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	struct control_exec e = { .umask = 0xffffffffu };
	const char *process = NULL, *cwd = NULL;
	char **env = calloc((size_t)argc + 1, sizeof(char *));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *sock_path = NULL;
	_cleanup_free_ void *msg = NULL;
	_cleanup_close_ int sock = -1;
	struct container c;
	size_t nenv = 0, len;
	int opt, ret;

	if (!env)
		return oci_fail("out of memory");
	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+e:u:dt", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			process = optarg;
			break;
		case 't':
			e.flags |= CONTROL_EXEC_TTY;
			break;
		case 'd':
			e.flags |= CONTROL_EXEC_DETACH;
			break;
		case 'w':
			cwd = optarg;
			break;
		case 'e':
			env[nenv++] = optarg;
			break;
		case 'u': {
			char *end;
			e.uid = (uint32_t)strtoul(optarg, &end, 10);
			if (*end == ':')
				e.gid = (uint32_t)strtoul(end + 1, &end, 10);
			if (*end)
				return oci_fail("exec: --user %s: expected UID[:GID]", optarg);
			break;
		}
		case 'c':
		case 'P':
		case 'n':
		case 'C':
		case 'f':
		case 'l':
		case 'a':
		case 'g':
			break;
		default:
			return 1;
		}
	}
	if (optind >= argc)
		return oci_fail("exec: expected a container id");
	if (!process && optind + 1 >= argc)
		return oci_fail("exec: expected a command, or --process FILE");
	if (process) {
		/* The process object of config.json, as runc exec --process takes it. */
		json_error_t jerr;
		json_t *p = json_load_file(process, 0, &jerr);

		if (!p || !json_is_object(p) || !json_is_array(json_object_get(p, "args")))
			return oci_fail("exec: --process %s: %s", process,
					p ? "expected an object with args" : jerr.text);
		json_decref(p);
	}
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	if (container_status(&c) != CONTAINER_RUNNING) {
		container_release(&c);
		return oci_fail("cannot exec in a stopped container");
	}
	sock_path = container_path(&c, "control.sock");
	container_release(&c);
	if (!cwd)
		cwd = "/";
	env[nenv] = NULL;
	msg = control_encode_exec(&e, cwd, argv + optind + 1, env, &len);
	free(env);
	if (!msg)
		return oci_fail("exec: %s", strerror(errno));
	if (!sock_path || strlen(sock_path) >= sizeof(sa.sun_path))
		return oci_fail("exec: control socket path too long");
	strcpy(sa.sun_path, sock_path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = errno;
		if (ret == ENOENT || ret == ECONNREFUSED)
			return oci_fail(
				"exec is not supported yet: the sentry cannot start a second "
				"process (it needs process creation, issue 3)");
		return oci_fail("exec: control socket: %s", strerror(ret));
	}
	return oci_fail("exec: the sentry's control server is not implemented yet");
}
