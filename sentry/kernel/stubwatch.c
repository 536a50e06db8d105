/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stub killed from the host (issue 18's fault injection): the host process behind an address
 * space (the seccomp and ptrace platforms' stub) may die of a SIGKILL the sentry did not send,
 * or of the host's OOM killer. The platform notices at its next switch into that stub, but a
 * task blocked in a guest call (wait4, pause, a read) may never switch again: its process would
 * hang forever. So each address space's stub is watched (a pidfd in one epoll, one thread), and
 * its death sends SIGKILL (SI_KERNEL) to every process that uses the space, as Linux kills a
 * process whose memory is gone: their calls end, and their exit meets the dead stub, which the
 * platforms already handle (as_is_dead). The space is watched from mm_activate or mm_create
 * (mm_as_hook) until its release (mm_as_release_hook).
 *
 * Locks: watch_lock covers the list and the epoll set; it is taken under mm->lock (from
 * mm_activate) and never held while taking tree_lock or sending signals.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/refcount.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/stubwatch.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"

struct watched {
	struct mm *mm; /* not a reference: the entry goes at its release */
	int pidfd;
	struct watched *next;
};

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watched *watch_list; /* watch_lock */
static int watch_epoll = -1; /* watch_lock (set once) */

struct victims {
	struct mm *mm;
	struct thread_group **tg;
	size_t n, cap;
};

/* tree_lock held: the processes with a task on v->mm (pointer comparison only). */
static int collect(struct task *t, void *arg)
{
	struct victims *v = arg;

	if (__atomic_load_n(&t->mm, __ATOMIC_RELAXED) != v->mm)
		return 0;
	for (size_t i = 0; i < v->n; i++)
		if (v->tg[i] == t->tg)
			return 0;
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 8;
		struct thread_group **g = realloc(v->tg, cap * sizeof(*g));

		if (!g)
			return 0;
		v->tg = g;
		v->cap = cap;
	}
	tg_get(t->tg);
	v->tg[v->n++] = t->tg;
	return 0;
}

/* The stub of mm died: SIGKILL to every process using mm (a reference is held). */
static void kill_users(struct mm *mm)
{
	struct kernel *k = mm->k;
	struct victims v = { .mm = mm };

	pthread_mutex_lock(&k->tree_lock);
	pid_for_each_task(k, collect, &v);
	pthread_mutex_unlock(&k->tree_lock);
	for (size_t i = 0; i < v.n; i++) {
		log_warn("pid %d: the host process behind its memory (its stub) died: killed",
			 v.tg[i]->pid);
		signal_send(v.tg[i], NULL, SIGKILL, NULL, 0);
		tg_put(v.tg[i]);
	}
	free(v.tg);
}

static void *watch_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(watch_epoll, ev, 8, -1);

		if (n < 0 && errno != EINTR) {
			log_warn(
				"stubwatch: epoll_wait: %m; stubs killed from outside go unnoticed");
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			struct mm *mm = NULL;

			pthread_mutex_lock(&watch_lock);
			for (struct watched *w = watch_list; w; w = w->next) {
				if (w->pidfd != ev[i].data.fd)
					continue;
				/* Once: a dead stub stays readable. */
				epoll_ctl(watch_epoll, EPOLL_CTL_DEL, w->pidfd, NULL);
				if (refcount_inc_not_zero(&w->mm->ref))
					mm = w->mm;
				break;
			}
			pthread_mutex_unlock(&watch_lock);
			if (mm) {
				kill_users(mm);
				mm_put(mm);
			}
		}
	}
}

static void release(struct mm *mm)
{
	pthread_mutex_lock(&watch_lock);
	for (struct watched **p = &watch_list; *p; p = &(*p)->next) {
		struct watched *w = *p;

		if (w->mm != mm)
			continue;
		epoll_ctl(watch_epoll, EPOLL_CTL_DEL, w->pidfd, NULL);
		close(w->pidfd);
		*p = w->next;
		free(w);
		break;
	}
	pthread_mutex_unlock(&watch_lock);
}

static void watch(struct mm *mm)
{
	const struct platform_ops *ops = mm->k->platform->ops;
	struct epoll_event ev = { .events = EPOLLIN };
	struct watched *w;
	pid_t pid;
	int fd;

	if (!ops->as_host_pid || !mm->as)
		return;
	pid = ops->as_host_pid(mm->as);
	if (pid <= 0)
		return;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	w = malloc(sizeof(*w));
	if (!w) {
		close(fd);
		return;
	}
	w->mm = mm;
	w->pidfd = fd;
	ev.data.fd = fd;
	pthread_mutex_lock(&watch_lock);
	if (epoll_ctl(watch_epoll, EPOLL_CTL_ADD, fd, &ev) < 0) {
		pthread_mutex_unlock(&watch_lock);
		close(fd);
		free(w);
		return;
	}
	w->next = watch_list;
	watch_list = w;
	pthread_mutex_unlock(&watch_lock);
}

int stubwatch_start(void)
{
	pthread_t th;
	int r;

	watch_epoll = epoll_create1(EPOLL_CLOEXEC);
	if (watch_epoll < 0)
		return -errno;
	r = pthread_create(&th, NULL, watch_main, NULL);
	if (r) {
		close(watch_epoll);
		watch_epoll = -1;
		return -r;
	}
	pthread_detach(th);
	__atomic_store_n(&mm_as_release_hook, release, __ATOMIC_RELEASE);
	__atomic_store_n(&mm_as_hook, watch, __ATOMIC_RELEASE);
	return 0;
}
