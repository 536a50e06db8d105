/* SPDX-License-Identifier: Apache-2.0 */
/* What checkpoint.c and restore.c share (not for other subsystems: state.h is theirs). */
#ifndef HUSK_SENTRY_STATE_INTERNAL_H
#define HUSK_SENTRY_STATE_INTERNAL_H

/* Task.restart_kind: which ERESTART_RESTARTBLOCK function a task was given. */
enum {
	STATE_RESTART_NONE = 0,
	STATE_RESTART_SLEEP = 1, /* nanosleep, clock_nanosleep */
	STATE_RESTART_CPU_SLEEP = 2, /* clock_nanosleep on a CPU-time clock */
	STATE_RESTART_FUTEX = 3, /* futex wait with a timeout */
	STATE_RESTART_POLL = 4, /* poll, ppoll */
};

/* How long a checkpoint waits for every task to stop. */
#define STATE_FREEZE_TIMEOUT_MS 30000

#endif
