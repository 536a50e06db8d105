/* SPDX-License-Identifier: Apache-2.0 */
/* The husk CLI: one file per verb, plus the sandbox launcher. */
#ifndef HUSK_RUNTIME_H
#define HUSK_RUNTIME_H

#include <stdbool.h>
#include <sys/types.h>

/* Each verb gets its arguments from the verb name on (argv[0] is the verb). */
int cmd_do(int argc, char **argv);
int cmd_syscalls(int argc, char **argv);
/* husk serve: the agent API server (runtime/serve/). */
int cmd_serve(int argc, char **argv);

/* A host directory served to the sandbox by a gofer of its own (husk do --volume). */
struct launch_volume {
	const char *host; /* the host directory */
	const char *guest; /* absolute guest path of the mountpoint */
	bool readonly; /* :ro: writes give EROFS */
};

/* What one sandbox runs, as given on the command line. */
struct launch_spec {
	const char *rootfs; /* served by the gofer */
	bool rootfs_writable; /* writes reach rootfs (--overlay=none); else an in-memory overlay */
	const char **tmpfs; /* --tmpfs GUEST[:size=N] mounts, NULL-terminated; may be NULL */
	const struct launch_volume *volumes; /* --volume mounts, in order (mounted after tmpfs) */
	int nvolumes;
	const char *cwd;
	/* husk do: the caller's directory, where pid 1 starts when the guest has it (else cwd);
	 * NULL: cwd. */
	const char *default_cwd;
	const char *platform;
	const char *hostname;
	bool strace;
	/* husk do --console: the sentry's stdin is the guest's /dev/console (5:1), as an OCI
	 * terminal's console is (systemd as pid 1 logs there). */
	bool console;
	/* Network arguments for the sentry ("--network=host", "--egress-allow=CIDR[:PORT]", ...),
	 * NULL-terminated; may be NULL (loopback only). */
	const char **net_args;
	char **env; /* K=V, NULL-terminated */
	char **argv; /* the program and its arguments, NULL-terminated */
	/* A checkpoint image folder: the sentry starts from it (--restore) and argv is not run;
	 * NULL: a fresh sandbox running argv. */
	const char *restore_dir;
	/* A listening unix socket the sentry serves as its control socket (--control-fd: husk
	 * checkpoint, exec, ps...), or -1 for none. husk keeps its own fd: the caller closes it. */
	int control_fd;
	/* A credential gateway's unix socket (husk serve; runtime/serve/GATEWAY.md) and the
	 * sandbox's id there: the sentry gets a connection introduced with the id, and the guest
	 * HUSK_GATEWAY. NULL: no gateway (connects to the gateway address are refused). */
	const char *gateway;
	const char *gateway_id;
	/* If not NULL, called once the sentry and the root's gofer are started, with their pids
	 * (husk do --name records them). */
	void (*started)(void *arg, pid_t sentry, pid_t gofer);
	void *started_arg;
};

/*
 * Path of a husk helper binary (husk-sentry, husk-gofer): $HUSK_SENTRY / $HUSK_GOFER if set,
 * else next to the running husk binary (or in a sibling build folder). Returns a malloc'd path
 * or NULL if it cannot be found.
 */
char *runtime_find_helper(const char *name);

/*
 * The platform a sandbox runs on when no flag or annotation names one: $HUSK_PLATFORM when it
 * is set and not empty, else "auto". Not checked: see runtime_platform_known().
 */
const char *runtime_platform_default(void);

/*
 * Checks that name is a platform husk knows: "seccomp", "ptrace" or "auto". Returns 0, or
 * -EINVAL with why set to "unknown platform (expected seccomp, ptrace or auto)".
 * Whether this build has the backend is the sentry's to say: it fails setup with "no such
 * platform".
 */
int runtime_platform_check(const char *name, char *why, size_t size);

/*
 * Asks husk-sentry (--print-platforms) which backends it has and which one auto picks on this
 * host: names gets "ptrace,seccomp" (comma-separated), auto_name e.g. "seccomp". Costs one
 * fork and exec of the sentry. Returns 0, -ENOENT if the sentry cannot be found, or -errno
 * (-EIO when it printed something else).
 */
int runtime_platforms_query(char *names, size_t names_size, char *auto_name, size_t auto_size);

/*
 * Parses a --volume argument HOST:GUEST[:ro] (HOST and GUEST absolute; a HOST or GUEST holding
 * ':' cannot be given). Returns 0 and *out pointing into a copy of arg (never freed), or -EINVAL.
 */
int runtime_parse_volume(const char *arg, struct launch_volume *out);

/*
 * Connects to the credential gateway listening at path and introduces sandbox id (the hello
 * of sentry/net/gateway.h), waiting for its answer. Returns the connected SOCK_SEQPACKET fd
 * (close-on-exec) for the sentry's --gateway-fd, or -errno with the reason in why.
 */
int runtime_gateway_connect(const char *path, const char *id, char *why, size_t why_len);

/*
 * Starts a gofer serving spec->rootfs, one more per volume, and a sentry running spec->argv
 * (or restoring spec->restore_dir) with the caller's stdio; waits for the sentry, and returns husk's exit status: the guest's exit code, 128+N if it was
 * killed by signal N, or 125 if the sandbox could not be set up. Leaves no process behind.
 */
int launch_and_wait(const struct launch_spec *spec);

/*
 * The sentry's raw crash report (sentry/crash: a module list, then each thread's frames as
 * addresses) with each frame named: function+offset, file:line, inlined calls (libdw, loaded
 * at the first call). Returns a malloc'ed text and its length in *out_len: the raw report
 * unchanged when libdw cannot be loaded or the report has no module list; NULL when out of
 * memory. runtime/crashsym.c.
 */
char *crash_symbolize(const char *raw, size_t len, size_t *out_len);

/*
 * After launch_and_wait returned status and husk cleaned up: when pid 1 died of a signal husk
 * was sent (by its caller or its terminal; the sentry then died of it too, status 128+N), husk
 * dies of the same signal, so that the caller sees "terminated by signal N" as for the command
 * outside a sandbox. A pid 1 that exited 128+N is not that. Returns otherwise.
 */
void launch_die_of_caller_signal(int status);

#endif
