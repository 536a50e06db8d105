/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry side of the control socket (runtime/control.h has the wire format): requests from
 * husk to a running sandbox. Today: exec, which needs the kernel to start a second process.
 */
#ifndef HUSK_SENTRY_CONTROL_H
#define HUSK_SENTRY_CONTROL_H

#include <stdint.h>

struct kernel;

/* A process to start in a running sandbox (husk exec). */
struct spawn_spec {
	const char *const *argv; /* NULL-terminated; argv[0] is resolved against PATH in env */
	const char *const *envp; /* NULL-terminated */
	const char *cwd; /* absolute, in the sandbox */
	uint32_t uid, gid;
	int ngroups;
	const uint32_t *groups;
	int32_t umask; /* -1: the default (022) */
	int stdio[3]; /* host fds for guest fds 0-2 (ownership passes to the kernel on success) */
	int32_t *pid_out; /* set to the new process's pid */
};

/*
 * Starts a new process in kernel k as a child of the sandbox's init, as Linux would with fork +
 * execve from pid 1 (but with s's credentials and stdio). Returns 0 or -errno. Not implemented
 * yet: needs process creation (issue 3); returns -ENOSYS.
 */
int kernel_spawn(struct kernel *k, const struct spawn_spec *s);

/*
 * Serves one control request of len bytes with its nfds received fds: decodes it, calls
 * kernel_spawn, and writes the reply (struct control_hdr + struct control_reply) into reply
 * (at least 64 bytes). Returns the reply's length. Takes ownership of fds.
 */
int control_serve(struct kernel *k, const void *msg, size_t len, int *fds, int nfds, void *reply);

#endif
