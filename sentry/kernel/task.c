/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Task creation, exec and the run loop.
 *
 * The run loop is the heart of the sentry: switch to the guest through the platform; when
 * control comes back on a system call, run the handler and store its result in rax; on a fault,
 * apply the signal's default action (guest handlers come with the processes issue).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/syscalls.h"

/* x86-64 user segment selectors, as Linux sets them for a 64-bit process. */
#define USER_CS 0x33
#define USER_SS 0x2b
#define EFLAGS_IF 0x200

/* Wait-status bit for "dumped core". */
#define WCORE_FLAG 0x80

struct task *task_create_init(struct kernel *k, struct fdtable *fdt, struct fs_context *fs,
			      uint32_t uid, uint32_t gid)
{
	struct thread_group *tg;
	struct task *t;

	tg = calloc(1, sizeof(*tg));
	t = calloc(1, sizeof(*t));
	if (!tg || !t) {
		free(tg);
		free(t);
		return ERR_PTR(-ENOMEM);
	}
	tg->sighand = calloc(1, sizeof(*tg->sighand));
	if (!tg->sighand) {
		free(tg);
		free(t);
		return ERR_PTR(-ENOMEM);
	}
	refcount_init(&tg->sighand->ref, 1);
	pthread_mutex_init(&tg->sighand->lock, NULL);
	refcount_init(&tg->ref, 1);
	pthread_mutex_init(&tg->lock, NULL);
	tg->k = k;
	tg->pid = 1;
	tg->ppid = 0;
	tg->pgid = 1;
	tg->sid = 1;
	tg->leader = t;
	list_init(&tg->tasks);
	list_add_tail(&t->tg_link, &tg->tasks);
	tg->nr_threads = 1;
	list_init(&tg->children);
	list_init(&tg->sibling);
	list_init(&tg->shared_pending.queue);
	tg->exit_signal = SIGCHLD;
	tg->state = TG_RUNNING;
	tg->dumpable = true;
	/* The guest starts with the limits husk itself was started with; they are the sentry's
	 * values from now on and are never applied to the host. */
	for (int r = 0; r < LINUX_RLIM_NLIMITS; r++) {
		if (getrlimit(r, &tg->rlimits[r]) < 0)
			tg->rlimits[r].rlim_cur = tg->rlimits[r].rlim_max = RLIM_INFINITY;
	}

	refcount_init(&t->ref, 1);
	t->k = k;
	t->tid = 1;
	t->tg = tg;
	t->thread = pthread_self();
	list_init(&t->pending.queue);
	pthread_mutex_init(&t->wait_lock, NULL);
	{
		pthread_condattr_t ca;

		/* task_wait deadlines are CLOCK_MONOTONIC. */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&t->wait_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	fdtable_get(fdt);
	t->fdt = fdt;
	fs_context_get(fs);
	t->fs = fs;
	t->cred.uid = t->cred.euid = t->cred.suid = t->cred.fsuid = uid;
	t->cred.gid = t->cred.egid = t->cred.sgid = t->cred.fsgid = gid;
	t->cred.ngroups = 0;
	/* Root in the sandbox has every capability, like root in a container's user namespace. */
	if (uid == 0) {
		t->cred.cap_effective = t->cred.cap_permitted = (1ULL << (CAP_LAST_CAP + 1)) - 1;
	}
	t->cred.cap_bounding = (1ULL << (CAP_LAST_CAP + 1)) - 1;
	t->altstack_flags = SS_DISABLE;
	strcpy(t->comm, "init");

	pthread_mutex_lock(&k->lock);
	k->next_tid = 2;
	k->init = t;
	pthread_mutex_unlock(&k->lock);
	return t;
}

int task_exec(struct task *t, const char *path, char *const argv[], char *const envp[])
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct loader_result res;
	struct platform_ctx *ctx;
	struct mm *mm;
	const char *base;
	int ret;

	mm = mm_create(t->k);
	if (IS_ERR(mm))
		return (int)PTR_ERR(mm);
	ret = loader_load(t, mm, path, argv, envp, &res);
	if (ret < 0)
		goto out_put_mm;
	ret = ops->ctx_create(mm->as, &ctx);
	if (ret < 0)
		goto out_put_mm;

	/* Past the point of no return: switch the task over to the new image. */
	if (t->ctx)
		ops->ctx_destroy(t->ctx);
	if (t->mm)
		mm_put(t->mm);
	t->ctx = ctx;
	t->mm = mm;
	memset(&t->regs, 0, sizeof(t->regs));
	t->regs.rip = res.entry;
	t->regs.rsp = res.sp;
	t->regs.cs = USER_CS;
	t->regs.ss = USER_SS;
	t->regs.eflags = EFLAGS_IF;
	t->clear_child_tid = 0;
	t->robust_list = t->robust_len = 0;
	t->rseq = t->rseq_len = 0;
	t->altstack_sp = t->altstack_size = 0;
	t->altstack_flags = SS_DISABLE;
	/* Handled signals revert to the default action across exec; ignored ones stay ignored. */
	for (int i = 0; i < LINUX_NSIG; i++) {
		if (t->tg->sighand->actions[i].handler > 1)
			memset(&t->tg->sighand->actions[i], 0, sizeof(t->tg->sighand->actions[i]));
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	snprintf(t->comm, sizeof(t->comm), "%s", base);
	return 0;

out_put_mm:
	mm_put(mm);
	return ret;
}

void task_release(struct task *t)
{
	if (t->ctx) {
		t->k->platform->ops->ctx_destroy(t->ctx);
		t->ctx = NULL;
	}
	if (t->mm) {
		mm_put(t->mm);
		t->mm = NULL;
	}
	if (t->fdt) {
		fdtable_put(t->fdt);
		t->fdt = NULL;
	}
	if (t->fs) {
		fs_context_put(t->fs);
		t->fs = NULL;
	}
}

void task_exit_group(struct task *t, int status)
{
	pthread_mutex_lock(&t->tg->lock);
	if (!t->tg->exiting) {
		t->tg->exiting = true;
		t->tg->exit_status = status;
	}
	pthread_mutex_unlock(&t->tg->lock);
	t->exiting = true;
}

static void task_syscall(struct task *t)
{
	struct syscall_args args = { {
		t->regs.rdi,
		t->regs.rsi,
		t->regs.rdx,
		t->regs.r10,
		t->regs.r8,
		t->regs.r9,
	} };
	long nr = (long)t->regs.orig_rax;

	/* Restart codes stay in rax: signal_deliver() applies the restart rules. */
	t->regs.rax = (uint64_t)syscall_dispatch(t, nr, &args);
}

static void task_set_in_guest(struct task *t, bool in_guest)
{
	pthread_mutex_lock(&t->wait_lock);
	t->in_guest = in_guest;
	pthread_mutex_unlock(&t->wait_lock);
}

int task_run(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct platform_event ev;
	bool after_syscall;
	int ret;

	/* Signals may already be pending for a new task. */
	t->regs.orig_rax = (uint64_t)-1;
	signal_deliver(t, false);
	while (!t->exiting) {
		task_set_in_guest(t, true);
		ret = ops->ctx_switch(t->ctx, &t->regs, &ev);
		task_set_in_guest(t, false);
		if (ret < 0) {
			log_error("pid %d: cannot run the guest: %s", t->tid, strerror(-ret));
			task_exit_group(t, SIGKILL);
			break;
		}
		after_syscall = false;
		switch (ev.kind) {
		case PLATFORM_EV_SYSCALL:
			task_syscall(t);
			after_syscall = true;
			break;
		case PLATFORM_EV_FAULT:
			t->regs.orig_rax = (uint64_t)-1;
			/* A copy-on-write page or another fault the mm resolves: re-run. */
			if (ev.signo == SIGSEGV && mm_handle_fault(t->mm, ev.addr, ev.code) == 0)
				break;
			signal_force_fault(t, &ev);
			break;
		case PLATFORM_EV_INTERRUPT:
			t->regs.orig_rax = (uint64_t)-1;
			break;
		case PLATFORM_EV_DIED:
			log_warn("pid %d: the guest's host process died", t->tid);
			task_exit_group(t, SIGKILL);
			break;
		}
		if (!t->exiting)
			signal_deliver(t, after_syscall);
	}
	return t->tg->exit_status;
}
