/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel_spawn (sentry/control/spawn.c) over fake tasks: the process reference it hands out for
 * husk exec's CONTROL_EXITED, also when the new process has exited and its task has been freed
 * before the caller wakes (a short command on a busy host: the caller then read the freed task,
 * got no process, and husk exec lost its control connection).
 *
 * The fakes below stand for the kernel: a task's exit reaps it at once (as for an exec'd
 * process, whose parent is outside the sandbox) and "frees" it by zeroing it, as a reused
 * allocation would be. In the race test, pthread_cond_wait (wrapped: -Wl,--wrap) holds the
 * caller of kernel_spawn until the new task is gone, and the task's exec waits until the caller
 * sleeps, so that the order is the same on every run.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/control/control.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"

static struct kernel kern;
static struct task *init_task;
static int exec_err; /* what the fake task_exec returns */
static bool race; /* the task's exec waits until the caller sleeps */
static bool hold_caller; /* the caller's first wait lasts until the task is gone */
static sem_t caller_waiting, task_gone;
static int32_t next_pid;
static int tasks_freed;
static struct thread_group *last_tg; /* the process the last tg_alloc made */
/* Tokens (never looked into): spawn.c only checks that they are not NULL. */
static char token;
static struct fdtable *fake_fdt = (struct fdtable *)&token;
static struct fs_context *fake_fs = (struct fs_context *)&token;

int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int ret;

	if (!__atomic_exchange_n(&hold_caller, false, __ATOMIC_SEQ_CST))
		return __real_pthread_cond_wait(c, m);
	sem_post(&caller_waiting);
	ret = __real_pthread_cond_wait(c, m);
	/* Woken (by the report of the outcome): stay away until the task is gone. */
	pthread_mutex_unlock(m);
	sem_wait(&task_gone);
	pthread_mutex_lock(m);
	return ret;
}

struct thread_group *tg_alloc(struct kernel *k, struct sighand *sh)
{
	struct thread_group *tg = calloc(1, sizeof(*tg));

	(void)sh;
	cr_assert_not_null(tg);
	refcount_init(&tg->ref, 1);
	pthread_mutex_init(&tg->lock, NULL);
	list_init(&tg->tasks);
	tg->k = k;
	tg->state = TG_RUNNING;
	last_tg = tg;
	return tg;
}

void tg_get(struct thread_group *tg)
{
	refcount_inc(&tg->ref);
}

/* Never freed here: the tests read the counts afterwards. */
void tg_put(struct thread_group *tg)
{
	if (tg)
		refcount_dec(&tg->ref);
}

struct task *task_alloc(struct kernel *k)
{
	struct task *t = calloc(1, sizeof(*t));

	cr_assert_not_null(t);
	refcount_init(&t->ref, 1);
	t->k = k;
	return t;
}

/* The last reference: the process's reference goes, and the task's memory is reused. */
void task_put(struct task *t)
{
	if (!t || !refcount_dec(&t->ref))
		return;
	tg_put(t->tg);
	memset(t, 0, sizeof(*t));
	__atomic_add_fetch(&tasks_freed, 1, __ATOMIC_SEQ_CST);
	sem_post(&task_gone);
}

void task_release(struct task *t)
{
	(void)t;
}

int task_exec(struct task *t, const char *path, char *const argv[], char *const envp[])
{
	(void)t, (void)argv, (void)envp;
	if (__atomic_load_n(&race, __ATOMIC_SEQ_CST))
		sem_wait(&caller_waiting);
	return strchr(path, '/') ? exec_err : -ENOENT;
}

int task_run(struct task *t)
{
	(void)t;
	return 0;
}

/* The process ends and, having no parent in the sandbox, is reaped at once. */
void task_exit_thread(struct task *t)
{
	struct thread_group *tg = t->tg;

	pthread_mutex_lock(&tg->lock);
	tg->state = TG_DEAD;
	tg->exit_status = 3 << 8;
	pthread_mutex_unlock(&tg->lock);
	task_put(t); /* the pid table's */
	task_put(t); /* the host thread's */
}

int fs_context_chdir(struct task *t, const char *path)
{
	(void)t, (void)path;
	return 0;
}

struct fs_context *fs_context_create(struct kernel *k)
{
	(void)k;
	return fake_fs;
}

/* Pod members (never used here: no spawn names one). */
void vfs_setup_root_begin(struct vfs_path *root)
{
	(void)root;
}

void vfs_setup_root_end(void)
{
}

bool pid_container_full(struct kernel *k, int32_t container)
{
	(void)k, (void)container;
	return false;
}

bool task_fatal_signal_pending(struct task *t)
{
	(void)t;
	return false;
}

unsigned int fs_context_set_umask(struct fs_context *fs, unsigned int mask)
{
	(void)fs;
	return mask;
}

struct fdtable *fdtable_create(void)
{
	return fake_fdt;
}

int hostfile_install(struct fdtable *fdt, int hostfd, int n)
{
	(void)fdt, (void)hostfd, (void)n;
	return 0;
}

void hostfile_repath(struct task *t, int n)
{
	(void)t, (void)n;
}

void hostfile_acquire_ctty(struct task *t, int n)
{
	(void)t, (void)n;
}

int32_t pid_alloc(struct kernel *k)
{
	(void)k;
	return ++next_pid;
}

void pid_insert(struct kernel *k, struct task *t)
{
	(void)k;
	refcount_inc(&t->ref);
}

void pid_task_started(struct kernel *k)
{
	(void)k;
}

void pid_task_finished(struct kernel *k)
{
	(void)k;
}

/* Not reached by these tests. */
struct cputime cputime_tg_locked(struct thread_group *tg)
{
	(void)tg;
	cr_assert_fail("cputime_tg_locked");
	return (struct cputime){ 0 };
}

struct thread_group *kernel_find_tg(struct kernel *k, int32_t pid)
{
	(void)k, (void)pid;
	cr_assert_fail("kernel_find_tg");
	return NULL;
}

int pid_for_each_tg(struct kernel *k, int (*fn)(struct thread_group *tg, void *arg), void *arg)
{
	(void)k, (void)fn, (void)arg;
	cr_assert_fail("pid_for_each_tg");
	return 0;
}

/* husk ps's start times (sentry/time is not linked here): no offset. */
uint64_t vtime_host_to_guest_mono(uint64_t host_ns)
{
	return host_ns;
}

struct task *pid_lookup(struct kernel *k, int32_t tid)
{
	(void)k, (void)tid;
	cr_assert_fail("pid_lookup");
	return NULL;
}

int seccomp_attach(struct task *t, struct seccomp_filter *f)
{
	(void)t, (void)f;
	cr_assert_fail("seccomp_attach");
	return 0;
}

void seccomp_filter_get(struct seccomp_filter *f)
{
	(void)f;
	cr_assert_fail("seccomp_filter_get");
}

void signal_info_from(struct linux_siginfo *info, int sig, int code, const struct task *sender)
{
	(void)info, (void)sig, (void)code, (void)sender;
	cr_assert_fail("signal_info_from");
}

int signal_send(struct thread_group *tg, struct task *t, int sig, const void *info,
		unsigned int flags)
{
	(void)tg, (void)t, (void)sig, (void)info, (void)flags;
	cr_assert_fail("signal_send");
	return 0;
}

long task_wait(struct task *t, struct waitq *const *wqs, int nwq, wait_cond_fn cond, void *arg,
	       const struct timespec *deadline, bool interruptible)
{
	(void)t, (void)wqs, (void)nwq, (void)cond, (void)arg, (void)deadline, (void)interruptible;
	cr_assert_fail("task_wait");
	return 0;
}

static void setup(void)
{
	pthread_mutex_init(&kern.lock, NULL);
	pthread_mutex_init(&kern.tree_lock, NULL);
	sem_init(&caller_waiting, 0, 0);
	sem_init(&task_gone, 0, 0);
	init_task = task_alloc(&kern);
	init_task->tg = tg_alloc(&kern, NULL);
	kern.init = init_task;
	exec_err = 0;
}

static const char *const argv_true[] = { "/bin/true", NULL };
static const char *const envp[] = { "PATH=/bin", NULL };

static struct spawn_spec spec(int32_t *pid, struct thread_group **tg)
{
	return (struct spawn_spec){ .argv = argv_true,
				    .envp = envp,
				    .cwd = "/",
				    .umask = -1,
				    .stdio = { 0, 1, 2 },
				    .pid_out = pid,
				    .tg_out = tg };
}

/* Waits for the spawned task to be freed (its thread is detached). */
static void wait_task_gone(void)
{
	sem_wait(&task_gone);
	cr_assert_eq(__atomic_load_n(&tasks_freed, __ATOMIC_SEQ_CST), 1);
}

Test(spawn, the_caller_gets_a_reference_on_the_new_process, .init = setup, .timeout = 60)
{
	struct thread_group *tg = NULL;
	int32_t pid = 0;
	struct spawn_spec s = spec(&pid, &tg);

	cr_assert_eq(kernel_spawn(&kern, &s), 0);
	cr_assert_eq(pid, 1);
	wait_task_gone();
	cr_assert_eq(tg, last_tg);
	cr_assert_eq(refcount_read(&tg->ref), 1, "only the caller's reference is left");
	cr_assert_eq(tg->state, TG_DEAD);
}

Test(spawn, a_process_that_ends_before_the_caller_wakes_is_still_handed_out, .init = setup,
     .timeout = 60)
{
	struct thread_group *tg = NULL;
	int32_t pid = 0;
	struct spawn_spec s = spec(&pid, &tg);

	race = hold_caller = true;
	cr_assert_eq(kernel_spawn(&kern, &s), 0);
	cr_assert_not(hold_caller, "the caller slept until the report");
	cr_assert_eq(__atomic_load_n(&tasks_freed, __ATOMIC_SEQ_CST), 1,
		     "the task was freed before kernel_spawn returned");
	cr_assert_eq(pid, 1);
	cr_assert_eq(tg, last_tg, "the process, not what the freed task holds now");
	cr_assert_eq(refcount_read(&tg->ref), 1, "only the caller's reference is left");
	cr_assert_eq(tg->exit_status, 3 << 8);
}

Test(spawn, a_failed_exec_hands_out_nothing_and_drops_the_reference, .init = setup, .timeout = 60)
{
	struct thread_group *tg = NULL;
	int32_t pid = 0;
	struct spawn_spec s = spec(&pid, &tg);

	exec_err = -ENOEXEC;
	cr_assert_eq(kernel_spawn(&kern, &s), -ENOEXEC);
	cr_assert_null(tg);
	cr_assert_eq(pid, 0);
	/* The spawn thread puts its references after reporting: wait for the task's last one. */
	wait_task_gone();
	cr_assert_eq(refcount_read(&last_tg->ref), 0, "no reference is left on the process");
}
