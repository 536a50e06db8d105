/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU time and peak memory of guest threads and processes (getrusage, times, wait4, CPU clocks,
 * /proc/PID/stat).
 *
 * A task's user time is the time its guest code ran: its platform context's CPU time
 * (platform_ops.ctx_cpu_ns; for ptrace, its share of the stub's CPU clock). Its system time is
 * the CPU time of the sentry host thread that runs it (task_run): each task has its own host
 * thread, which does nothing but the task's calls and faults. Both are read when asked for,
 * never per system call. A process's times are those of its live threads plus those of the
 * threads that exited (folded into tg->utime_ns/stime_ns as each leaves); at reap they are
 * added, with the child's own cutime/cstime, to its parent's (task_exit.c's tg_reap).
 *
 * The peak RSS (ru_maxrss) is the host's hiwater mark of the process behind the task's address
 * space (platform_ops.ctx_peak_rss_kb: for ptrace, the stub's, one round trip), read by the
 * task's own thread when getrusage asks and before an mm is let go (exec, process exit), so a
 * peak already freed still counts; the sentry's count of resident pages (mm_rss_pages) where
 * the platform cannot tell.
 *
 * Locks: task_cputime.lock after tg->lock; it protects the struct.
 */
#ifndef HUSK_SENTRY_CPUTIME_H
#define HUSK_SENTRY_CPUTIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct kernel;
struct task;
struct thread_group;
struct platform_ctx;

/* Per task (task.cpu). */
struct task_cputime {
	pthread_mutex_t lock;
	struct platform_ctx *ctx; /* the context whose time counts, or NULL */
	uint64_t user_done; /* user time of contexts already given up (exec) */
	pid_t host_tid; /* the host thread running the task, 0 before it starts or once folded */
	uint64_t host_base; /* its CPU clock when it started running the task */
	uint64_t sys_done; /* system time once the host thread is no longer read */
	bool exited; /* folded into the process's totals */
};

/* Times in nanoseconds. */
struct cputime {
	uint64_t utime, stime;
};

/* Initialises t->cpu (task_alloc). */
void cputime_task_init(struct task *t);

/* On t's own host thread, before it first runs guest code: its host thread and context count. */
void cputime_task_start(struct task *t);

/*
 * Before t->ctx is destroyed or replaced (exec, task_release): credits the old context's time
 * to t and makes ctx (NULL allowed) the one that counts from now on. t's own host thread.
 */
void cputime_set_ctx(struct task *t, struct platform_ctx *ctx);

/*
 * A live thread's times (t may be another task; the caller holds a reference or tg->lock).
 * A thread that has exited reads as its final times.
 */
struct cputime cputime_task(struct task *t);

/*
 * Folds thread t's times into its process's totals and stops counting it; call with
 * tg->lock held, right before t leaves tg->tasks. t's own host thread.
 */
void cputime_task_exit(struct task *t);

/* A process's times: exited threads plus live ones. Takes tg->lock. */
struct cputime cputime_tg(struct thread_group *tg);

/* Same, tg->lock held. */
struct cputime cputime_tg_locked(struct thread_group *tg);

/* The whole sandbox's guest time: every thread that ever ran (husk events --stats). */
struct cputime cputime_kernel(struct kernel *k);

/*
 * Samples the resident size of t's mm into its process's peak (ru_maxrss). t's own host
 * thread or one holding a reference on t->mm; takes the mm's lock then tg->lock (not held).
 */
void cputime_rss_sample(struct task *t);

/* The peak RSS of t's process in KiB, after a sample. */
uint64_t cputime_maxrss_kb(struct task *t);

#endif
