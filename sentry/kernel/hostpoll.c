/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host-FD watcher; see hostpoll.h. Also home of the thread-local current task
 * (current.h), which the blocking file operations use.
 */
#include "sentry/kernel/hostpoll.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "sentry/kernel/current.h"

__thread struct task *husk_current_task;

#define MAX_WATCHES 64

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hostpoll_watch *watches[MAX_WATCHES]; /* watch_lock; index id - 1 */
static int epfd = -1; /* set once under watch_lock */

static void *hostpoll_thread(void *arg)
{
	struct epoll_event evs[16];

	(void)arg;
	for (;;) {
		int n = epoll_wait(epfd, evs, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("hostpoll: epoll_wait: %s", strerror(errno));
			return NULL;
		}
		pthread_mutex_lock(&watch_lock);
		for (int i = 0; i < n; i++) {
			unsigned int id = (unsigned int)evs[i].data.u64;

			if (id >= 1 && id <= MAX_WATCHES && watches[id - 1])
				waitq_wake_all(&watches[id - 1]->wq);
		}
		pthread_mutex_unlock(&watch_lock);
	}
}

/* Creates the epoll FD and its thread (watch_lock held). */
static int hostpoll_start(void)
{
	sigset_t all, old;
	pthread_t th;
	int err;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	/* Host signals are for the sentry's signal thread only: the watcher blocks them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&th, NULL, hostpoll_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(epfd);
		epfd = -1;
		return -err;
	}
	pthread_detach(th);
	return 0;
}

struct hostpoll_watch *hostpoll_watch(int fd)
{
	struct hostpoll_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
	int slot = -1;

	if (!w)
		return NULL;
	w->fd = fd;
	waitq_init(&w->wq);
	pthread_mutex_lock(&watch_lock);
	if (epfd < 0 && hostpoll_start() < 0)
		goto out_free;
	for (int i = 0; i < MAX_WATCHES; i++) {
		if (!watches[i]) {
			slot = i;
			break;
		}
	}
	if (slot < 0)
		goto out_free;
	w->id = (unsigned int)slot + 1;
	ev.data.u64 = w->id;
	/* EPERM: a regular file or another FD that is always ready; no watch needed. */
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		goto out_free;
	watches[slot] = w;
	pthread_mutex_unlock(&watch_lock);
	return w;

out_free:
	pthread_mutex_unlock(&watch_lock);
	free(w);
	return NULL;
}

void hostpoll_unwatch(struct hostpoll_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&watch_lock);
	epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
	watches[w->id - 1] = NULL;
	pthread_mutex_unlock(&watch_lock);
	free(w);
}

unsigned int hostpoll_ready(int fd, unsigned int events)
{
	struct pollfd p = { .fd = fd, .events = (short)events };

	if (poll(&p, 1, 0) <= 0)
		return 0;
	return (unsigned short)p.revents;
}

struct ready_arg {
	int fd;
	unsigned int events;
};

static bool ready_cond(void *arg)
{
	struct ready_arg *a = arg;

	return hostpoll_ready(a->fd, a->events) != 0;
}

long hostpoll_wait(struct task *t, struct hostpoll_watch *w, unsigned int events)
{
	struct ready_arg a = { w->fd, events | POLLERR | POLLHUP };
	struct waitq *wq = &w->wq;

	return task_wait(t, &wq, 1, ready_cond, &a, NULL, true);
}
