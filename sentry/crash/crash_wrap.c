/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-sentry links with -Wl,--wrap=pthread_create: every sentry thread, whoever starts it,
 * runs its function between crash_thread_enter and crash_thread_leave (sentry/crash/crash.h),
 * so that a crash report can signal it and it has an alternate stack. Only husk-sentry links
 * this file (the unit tests have no --wrap, and no __real_pthread_create).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "sentry/crash/crash.h"

struct crash_start {
	void *(*fn)(void *);
	void *arg;
};

int __real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);

static void leave(void *token)
{
	crash_thread_leave(token);
}

static void *crash_start_main(void *p)
{
	struct crash_start st = *(struct crash_start *)p;
	void *token, *ret;

	free(p);
	token = crash_thread_enter();
	/* Also when the thread ends with pthread_exit (its cleanup handlers run). */
	pthread_cleanup_push(leave, token);
	ret = st.fn(st.arg);
	pthread_cleanup_pop(1);
	return ret;
}

int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct crash_start *st = malloc(sizeof(*st));
	int ret;

	if (!st)
		return EAGAIN;
	st->fn = fn;
	st->arg = arg;
	ret = __real_pthread_create(th, attr, crash_start_main, st);
	if (ret)
		free(st);
	return ret;
}
