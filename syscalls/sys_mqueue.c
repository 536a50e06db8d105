/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSIX message queues: mq_open(2), mq_unlink(2), mq_timedsend(2), mq_timedreceive(2),
 * mq_notify(2), mq_getsetattr(2). This file copies the arguments in; the queues are in
 * sentry/kernel/mqueue.c.
 */
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/mqueue.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

/* Copies in a queue name: -ENAMETOOLONG past NAME_MAX, -EFAULT. */
static long copy_name(struct task *t, uint64_t addr, char name[MQ_NAME_MAX + 1])
{
	ssize_t n = mm_copy_in_string(t->mm, name, addr, MQ_NAME_MAX + 1);

	return n < 0 ? n : 0;
}

/* An absolute timeout: *out, or NULL when addr is 0. -EFAULT, -EINVAL for a bad timespec. */
static long copy_timeout(struct task *t, uint64_t addr, struct timespec *ts,
			 const struct timespec **out)
{
	int64_t v[2];

	*out = NULL;
	if (!addr)
		return 0;
	if (mm_copy_in(t->mm, v, addr, sizeof(v)) != sizeof(v))
		return -EFAULT;
	if (v[0] < 0 || v[1] < 0 || v[1] >= 1000000000)
		return -EINVAL;
	ts->tv_sec = v[0];
	ts->tv_nsec = v[1];
	*out = ts;
	return 0;
}

/* mq_open(2): descriptors are close-on-exec, as in Linux. */
long sys_mq_open(struct task *t, const struct syscall_args *args)
{
	char name[MQ_NAME_MAX + 1];
	struct linux_mq_attr attr;
	int oflag = (int)args->a[1];
	long ret = copy_name(t, args->a[0], name);

	if (ret)
		return ret;
	if ((oflag & O_CREAT) && args->a[3]) {
		if (mm_copy_in(t->mm, &attr, args->a[3], sizeof(attr)) != sizeof(attr))
			return -EFAULT;
	}
	return mqueue_open(t, name, oflag, (uint32_t)args->a[2],
			   (oflag & O_CREAT) && args->a[3] ? &attr : NULL);
}

/* mq_unlink(2) */
long sys_mq_unlink(struct task *t, const struct syscall_args *args)
{
	char name[MQ_NAME_MAX + 1];
	long ret = copy_name(t, args->a[0], name);

	return ret ? ret : mqueue_unlink(t, name);
}

/* mq_timedsend(2) */
long sys_mq_timedsend(struct task *t, const struct syscall_args *args)
{
	const struct timespec *abs;
	struct timespec ts;
	long ret = copy_timeout(t, args->a[4], &ts, &abs);

	if (ret)
		return ret;
	return mqueue_send(t, (int)args->a[0], args->a[1], args->a[2], (uint32_t)args->a[3], abs);
}

/* mq_timedreceive(2) */
long sys_mq_timedreceive(struct task *t, const struct syscall_args *args)
{
	const struct timespec *abs;
	struct timespec ts;
	long ret = copy_timeout(t, args->a[4], &ts, &abs);

	if (ret)
		return ret;
	return mqueue_receive(t, (int)args->a[0], args->a[1], args->a[2], args->a[3], abs);
}

/* mq_notify(2) */
long sys_mq_notify(struct task *t, const struct syscall_args *args)
{
	uint8_t cookie[MQ_COOKIE_LEN] = { 0 };
	struct linux_sigevent ev;

	if (!args->a[1])
		return mqueue_notify(t, (int)args->a[0], NULL, NULL);
	if (mm_copy_in(t->mm, &ev, args->a[1], sizeof(ev)) != sizeof(ev))
		return -EFAULT;
	if (ev.sigev_notify == 2 /* SIGEV_THREAD */ &&
	    mm_copy_in(t->mm, cookie, ev.sigev_value, sizeof(cookie)) != sizeof(cookie))
		return -EFAULT;
	return mqueue_notify(t, (int)args->a[0], &ev, cookie);
}

/* mq_getsetattr(2) */
long sys_mq_getsetattr(struct task *t, const struct syscall_args *args)
{
	struct linux_mq_attr n, o;
	long ret;

	if (args->a[1] && mm_copy_in(t->mm, &n, args->a[1], sizeof(n)) != sizeof(n))
		return -EFAULT;
	ret = mqueue_getsetattr(t, (int)args->a[0], args->a[1] ? &n : NULL, args->a[2] ? &o : NULL);
	if (ret == 0 && args->a[2] && mm_copy_out(t->mm, args->a[2], &o, sizeof(o)) != sizeof(o))
		return -EFAULT;
	return ret;
}
