/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the poll family shared with epoll (sys_poll.c). */
#ifndef HUSK_SYSCALLS_SYS_POLL_H
#define HUSK_SYSCALLS_SYS_POLL_H

#include <stdint.h>
#include <time.h>

struct file;
struct task;
struct waitq;

/*
 * The POLL* events ready on f now, and in *wq (when wq is not NULL) the queue woken when they
 * may change (NULL: never). Files without a poll op are always readable and writable.
 */
unsigned int file_poll(struct file *f, struct waitq **wq);

/* An absolute CLOCK_MONOTONIC deadline rel from now. */
struct timespec poll_deadline_after(struct timespec rel);

/*
 * ppoll/pselect6/epoll_pwait's temporary signal mask from guest address addr (size must be 8):
 * saves t->sigmask in saved_sigmask and installs it. Returns 1 if installed, 0 if addr is 0, or
 * -EINVAL/-EFAULT. poll_sigmask_pop after the wait: an interrupted call (ret -EINTR or
 * -ERESTARTNOHAND) leaves restore_sigmask set for signal delivery; otherwise restores now.
 */
int poll_sigmask_push(struct task *t, uint64_t addr, uint64_t size);
void poll_sigmask_pop(struct task *t, int pushed, long ret);

#endif
