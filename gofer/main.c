/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-gofer: serves one directory tree (or one regular file: a file bind mount) to one sentry.
 *
 *   husk-gofer --fd N [--readonly] [--uid-map M] [--gid-map M] ROOT
 *
 * --uid-map/--gid-map (INSIDE:OUTSIDE:COUNT[,...], linux.uidMappings): the owners the sentry
 * names are guest ids, given to host files mapped; host owners are shown mapped back.
 *
 * N is an inherited SOCK_SEQPACKET socket; the sentry holds the other end. The gofer confines
 * itself (gofer/confine.c) before reading the first message, then serves until the sentry
 * closes the socket, and exits 0. Exit status 1: the gofer could not set up or its socket
 * failed; 2: bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "common/cpus.h"
#include "common/idmap.h"
#include "common/log.h"
#include "gofer/confine.h"
#include "gofer/server.h"

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer checks at exit by ptrace-ing the process, which the seccomp filter forbids. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static void usage(void)
{
	fputs("usage: husk-gofer --fd N [--readonly] [--uid-map M] [--gid-map M] ROOT\n"
	      "husk-gofer is started by husk; it serves ROOT (a directory or a regular file)\n"
	      "over the socket at fd N.\n",
	      stderr);
}

/* Room for every handle's O_PATH FD and directory FD: the default soft limit (1024) is not. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	rlim_t want = 2 * (rlim_t)GOFER_MAX_HANDLES + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise the FD limit: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "fd", required_argument, NULL, 'f' },
		{ "readonly", no_argument, NULL, 'r' },
		{ "uid-map", required_argument, NULL, 'u' },
		{ "gid-map", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	struct gofer_server_config cfg = { 0 };
	struct idmap uid_map = { 0 }, gid_map = { 0 };
	struct gofer_server *s;
	int sock = -1, type = 0, root_fd, proc_fd, c, ret;
	socklen_t tlen = sizeof(type);
	const char *root;
	char *end;
	long v;

	log_set_name("husk-gofer");
	log_init_from_env();
	/* On the sandbox's start CPU, with the sentry's first task (common/cpus.h). */
	husk_cpus_init();
	husk_start_cpu_pin();
	prctl(PR_SET_NAME, "husk-gofer", 0, 0, 0);

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0 || v > 1 << 20) {
				usage();
				return 2;
			}
			sock = (int)v;
			break;
		case 'r':
			cfg.readonly = true;
			break;
		case 'u':
		case 'g':
			/* Owners: guest ids in requests, host ids on disk (linux.uidMappings). */
			if (idmap_parse(optarg, c == 'u' ? &uid_map : &gid_map) < 0) {
				log_error("--%s %s: expected INSIDE:OUTSIDE:COUNT[,...]",
					  c == 'u' ? "uid-map" : "gid-map", optarg);
				return 2;
			}
			if (c == 'u')
				cfg.uid_map = &uid_map;
			else
				cfg.gid_map = &gid_map;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (sock < 0 || optind != argc - 1) {
		usage();
		return 2;
	}
	root = argv[optind];
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0 || type != SOCK_SEQPACKET) {
		log_error("--fd %d is not a SOCK_SEQPACKET socket", sock);
		return 1;
	}

	/* Nothing the runtime did not mean to give: stdio (stderr for the log) and the socket. */
	ret = gofer_close_fds_except((int[]){ 0, 1, 2, sock }, 4);
	if (ret < 0) {
		log_error("closing inherited FDs: %s", strerror(-ret));
		return 1;
	}
	raise_fd_limit();
	/* New nodes get the mode the sentry asks for (it applies the guest's umask itself). */
	umask(0);
	if (gofer_pivot_into(root, cfg.readonly, &root_fd, &proc_fd) < 0)
		return 1;
	if (gofer_lock_down(cfg.readonly) < 0)
		return 1;

	ret = gofer_server_create(root_fd, proc_fd, &cfg, &s);
	if (ret < 0) {
		log_error("starting the server: %s", strerror(-ret));
		return 1;
	}
	ret = gofer_server_serve(s, sock);
	/* The process ends now: its exit closes every handle's FD at once, where freeing the
	 * table was one close(2) per handle (120 of them, 0.3 ms, after the sentry listed /etc)
	 * between the sentry's exit and husk's. */
	if (ret < 0) {
		log_error("socket: %s", strerror(-ret));
		return 1;
	}
	return 0;
}
