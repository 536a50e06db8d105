/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods: the control messages that put a member container into a running sandbox's sentry
 * (runtime/pod.c, sentry/control/container.c). See runtime/README.md, "Pods".
 *
 * CONTROL_CONTAINER_CREATE payload: struct control_container, then nargs NUL-terminated
 * strings: the member's husk-sentry argv as runtime/sandbox.c builds it for a new sentry
 * (options, "--", PROGRAM, ARGS). fds (SCM_RIGHTS): nfds of them; slots[i] is the number the
 * argv names the i-th one by (--gofer-fd=3, --volume-fd=8:/data, --seccomp-fd=24, ...), and
 * slots 0, 1 and 2 are the member's stdio and slot 5 its start gate (exec.fifo opened O_RDWR).
 * The sentry ignores what is the sandbox's alone (network, egress, platform, sysctls, hostname,
 * device rules, control and log fds). Reply: CONTROL_REPLY with the member's init pid (in the
 * sandbox's pid namespace); then CONTROL_EXITED when that init ends. The connection is the
 * member's life line: once it closes (husk's container proxy died, or was killed), every
 * process of the member is killed.
 *
 * CONTROL_CONTAINER_TARGET payload: struct control_container_target, no fds, no reply. The next
 * message on the same connection (exec, signal, ps, stats, update, pause, resume) then acts on
 * that member only: signal pid -1 reaches its processes, ps lists them, exec starts in its
 * root with its defaults. An unknown member closes the connection.
 */
#ifndef HUSK_RUNTIME_CONTROL_POD_H
#define HUSK_RUNTIME_CONTROL_POD_H

#include <stdint.h>

#include "runtime/control.h"

#define CONTROL_CONTAINER_ID_MAX 256 /* with its NUL */
#define CONTROL_CONTAINER_MAX_FDS 32
#define CONTROL_CONTAINER_MAX_ARGS 4096

struct control_container {
	char id[CONTROL_CONTAINER_ID_MAX]; /* NUL-terminated */
	uint32_t nargs;
	uint32_t nfds;
	int32_t slots[CONTROL_CONTAINER_MAX_FDS];
};

struct control_container_target {
	char id[CONTROL_CONTAINER_ID_MAX]; /* NUL-terminated */
};

#endif
