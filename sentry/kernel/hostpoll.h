/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watching host FDs the sentry holds (the caller's stdio) for readiness, so that a task can
 * wait for a host terminal or pipe interruptibly instead of blocking its host thread in read().
 *
 * One sentry thread runs a host epoll (edge-triggered) over every watched FD and wakes the
 * watch's wait queue on each event; waiters recheck readiness with a zero-timeout host poll.
 * FDs that epoll refuses (regular files, /dev/null) get no watch: they are always ready.
 */
#ifndef HUSK_SENTRY_HOSTPOLL_H
#define HUSK_SENTRY_HOSTPOLL_H

#include <stdbool.h>

#include "sentry/kernel/waitq.h"

struct task;

struct hostpoll_watch {
	int fd; /* not owned */
	unsigned int id; /* the epoll cookie */
	struct waitq wq; /* woken when the FD's readiness may have changed */
};

/*
 * Starts watching fd (the caller keeps owning it and must call hostpoll_unwatch before closing
 * it). Returns the watch, or NULL when fd cannot be watched (always ready) or on failure.
 */
struct hostpoll_watch *hostpoll_watch(int fd);
void hostpoll_unwatch(struct hostpoll_watch *w);

/* The POLL* events ready on host fd now (zero-timeout host poll of events). */
unsigned int hostpoll_ready(int fd, unsigned int events);

/*
 * Waits interruptibly until fd has one of events ready (POLLIN, POLLOUT), an error or hangup.
 * Returns 0, or -ERESTARTSYS on a signal.
 */
long hostpoll_wait(struct task *t, struct hostpoll_watch *w, unsigned int events);

#endif
