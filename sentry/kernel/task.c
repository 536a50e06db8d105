/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Task and thread-group objects (allocation, references), pid 1, exit_group and the run loop.
 *
 * The run loop is the heart of the sentry: switch to the guest through the platform; when
 * control comes back on a system call, run the handler and store its result in rax; on a fault,
 * let the mm resolve it or force the signal; before each return to the guest, deliver signals.
 * clone, exec and exit live in task_clone.c, task_exec.c and task_exit.c.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include <time.h>

#include "common/cpus.h"
#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/crash/crash.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/rseq.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/seccomp.h"
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

/* Frees a queue of struct sigqueue. */
static void sigpending_free(struct sigpending *p)
{
	struct sigqueue *q, *n;

	list_for_each_entry_safe(q, n, &p->queue, link)
		free(q);
	list_init(&p->queue);
}

void tg_get(struct thread_group *tg)
{
	refcount_inc(&tg->ref);
}

void tg_put(struct thread_group *tg)
{
	if (!tg || !refcount_dec(&tg->ref))
		return;
	if (tg->sighand && refcount_dec(&tg->sighand->ref)) {
		pthread_mutex_destroy(&tg->sighand->lock);
		free(tg->sighand);
	}
	sigpending_free(&tg->shared_pending);
	pid_ns_put(tg->pidns);
	cgroup_put(tg->cgroup);
	pthread_mutex_destroy(&tg->lock);
	pthread_cond_destroy(&tg->threads_cond);
	free(tg);
}

void task_get(struct task *t)
{
	refcount_inc(&t->ref);
}

void task_put(struct task *t)
{
	if (!t || !refcount_dec(&t->ref))
		return;
	sigpending_free(&t->pending);
	free(t->clone_fpstate);
	free(t->park_fp);
	free(t->restore_threads);
	seccomp_task_release(t);
	ptrace_task_free(t);
	nsproxy_put(t->ns); /* a task that never ran (task_release puts it otherwise) */
	pthread_mutex_destroy(&t->wait_lock);
	pthread_mutex_destroy(&t->res_lock);
	pthread_cond_destroy(&t->wait_cond);
	tg_put(t->tg);
	free(t);
}

uint64_t task_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

struct task *task_alloc(struct kernel *k)
{
	pthread_condattr_t ca;
	struct task *t;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	refcount_init(&t->ref, 1);
	t->k = k;
	list_init(&t->pending.queue);
	list_init(&t->pid_link);
	list_init(&t->tg_link);
	pthread_mutex_init(&t->wait_lock, NULL);
	pthread_mutex_init(&t->res_lock, NULL);
	cputime_task_init(t);
	/* task_wait deadlines are CLOCK_MONOTONIC. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wait_cond, &ca);
	pthread_condattr_destroy(&ca);
	t->altstack_flags = SS_DISABLE;
	t->start_ns = task_monotonic_ns();
	return t;
}

struct thread_group *tg_alloc(struct kernel *k, struct sighand *sh)
{
	struct thread_group *tg;

	tg = calloc(1, sizeof(*tg));
	if (!tg)
		return NULL;
	if (!sh) {
		sh = calloc(1, sizeof(*sh));
		if (!sh) {
			free(tg);
			return NULL;
		}
		refcount_init(&sh->ref, 1);
		pthread_mutex_init(&sh->lock, NULL);
	}
	tg->sighand = sh;
	refcount_init(&tg->ref, 1);
	pthread_mutex_init(&tg->lock, NULL);
	pthread_cond_init(&tg->threads_cond, NULL);
	tg->k = k;
	list_init(&tg->tasks);
	list_init(&tg->children);
	list_init(&tg->sibling);
	list_init(&tg->shared_pending.queue);
	waitq_init(&tg->child_wq);
	waitq_init(&tg->exit_wq);
	tg->exit_signal = SIGCHLD;
	tg->state = TG_RUNNING;
	tg->dumpable = true;
	tg->start_ns = task_monotonic_ns();
	return tg;
}

struct task *task_create_init(struct kernel *k, struct fdtable *fdt, struct fs_context *fs,
			      uint32_t uid, uint32_t gid)
{
	struct thread_group *tg;
	struct task *t;

	if (pid_table_init(k) < 0)
		return ERR_PTR(-ENOMEM);
	tg = tg_alloc(k, NULL);
	t = task_alloc(k);
	if (!tg || !t) {
		if (tg)
			tg_put(tg);
		free(t);
		return ERR_PTR(-ENOMEM);
	}
	tg->pid = 1;
	tg->ppid = 0;
	tg->pgid = 1;
	tg->sid = 1;
	tg->is_init = true;
	tg->leader = t;
	list_add_tail(&t->tg_link, &tg->tasks);
	tg->nr_threads = 1;
	/* The guest starts with the limits husk itself was started with; they are the sentry's
	 * values from now on and are never applied to the host. */
	for (int r = 0; r < LINUX_RLIM_NLIMITS; r++) {
		if (getrlimit(r, &tg->rlimits[r]) < 0)
			tg->rlimits[r].rlim_cur = tg->rlimits[r].rlim_max = RLIM_INFINITY;
	}

	t->tid = 1;
	t->tg = tg; /* the task takes tg's first reference */
	t->thread = pthread_self();
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
	strcpy(t->comm, "init");

	pthread_mutex_lock(&k->tree_lock);
	pid_insert(k, t);
	pthread_mutex_unlock(&k->tree_lock);
	pid_task_started(k);
	pthread_mutex_lock(&k->lock);
	k->next_tid = 2;
	k->init = t;
	pthread_mutex_unlock(&k->lock);
	return t;
}

void task_release(struct task *t)
{
	if (t->ctx) {
		cputime_set_ctx(t, NULL);
		t->k->platform->ops->ctx_destroy(t->ctx);
		t->ctx = NULL;
	}
	struct mm *mm = task_set_mm(t, NULL);
	struct fdtable *fdt = task_set_fdt(t, NULL);
	struct fs_context *fs = task_set_fs(t, NULL);
	struct nsproxy *ns;

	if (mm)
		mm_put(mm);
	if (fdt)
		fdtable_put(fdt);
	if (fs)
		fs_context_put(fs);
	pthread_mutex_lock(&t->res_lock);
	ns = t->ns;
	t->ns = NULL;
	pthread_mutex_unlock(&t->res_lock);
	if (ns)
		nsproxy_put(ns);
}

void task_exit_group(struct task *t, int status)
{
	struct thread_group *tg = t->tg;
	struct task *o;

	pthread_mutex_lock(&tg->lock);
	if (!tg->group_exit) {
		tg->group_exit = true;
		tg->exiting = true;
		tg->exit_status = status;
	}
	/* Every other thread leaves its run loop at its next return to the sentry. */
	list_for_each_entry(o, &tg->tasks, tg_link) {
		if (o == t)
			continue;
		__atomic_store_n(&o->exiting, true, __ATOMIC_RELEASE);
		task_wake(o);
	}
	pthread_mutex_unlock(&tg->lock);
	__atomic_store_n(&t->exiting, true, __ATOMIC_RELEASE);
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

	/* A crash report names the call each thread serves (sentry/crash). */
	crash_syscall_begin(t->tid, nr, args.a);
	crash_debug_check(nr);
	/* /proc/PID/syscall shows the call while it is served (args from regs, kept meanwhile). */
	__atomic_store_n(&t->call_nr1, nr + 1, __ATOMIC_RELEASE);
	/* A traced task has syscall-entry and -exit stops around the call (ptrace.c). */
	if (unlikely(__atomic_load_n(&t->ptrace, __ATOMIC_RELAXED))) {
		ptrace_syscall(t);
		__atomic_store_n(&t->call_nr1, 0, __ATOMIC_RELEASE);
		crash_syscall_end();
		return;
	}
	/* Restart codes stay in rax: signal_deliver() applies the restart rules. */
	t->regs.rax = (uint64_t)syscall_dispatch(t, nr, &args);
	__atomic_store_n(&t->call_nr1, 0, __ATOMIC_RELEASE);
	crash_syscall_end();
}

static void task_set_in_guest(struct task *t, bool in_guest)
{
	pthread_mutex_lock(&t->wait_lock);
	t->in_guest = in_guest;
	pthread_mutex_unlock(&t->wait_lock);
	/*
	 * A signal sent after signal_deliver() looked and before in_guest was set found the task
	 * out of the guest and kicked nobody (task_wake): the guest would run on until its next
	 * system call, forever in a loop that makes none. The sender's pending bit is stored
	 * before it takes wait_lock, so it is seen here; the interrupt makes the switch return
	 * at once.
	 */
	if (in_guest && t->ctx && task_signal_pending(t))
		t->k->platform->ops->ctx_interrupt(t->ctx);
}

/*
 * CPU placement of task threads. Every guest system call is a hand-over between a task's host
 * thread and the host thread the guest runs in (and the stub's controller, the gofer), each
 * side waking the other and going to sleep. A wake-up on another CPU costs several times one on
 * the same CPU, and the host scheduler sends a wakee to an idle CPU whenever there is one: on
 * the development VM 1,000 fork+exec took 2.0 s with nothing pinned and 0.64 s with the task
 * threads pinned (the platforms keep the guest's threads and the controller on their task
 * thread's CPU). So a task thread stays on one CPU: a new one starts on its creator's, which
 * keeps a sandbox that runs one thing at a time (a shell and its commands) on one CPU with its
 * gofer. Guests that compute in parallel are spread instead: the sandbox counts, per CPU, the
 * task threads whose guest is running (between its switch and its stop); a task whose CPU has
 * another running guest moves to a CPU that has none (at most every PIN_MOVE_NS). HUSK_CPU_PIN=0
 * turns all of it off.
 */
#define PIN_MOVE_NS 10000000ULL
static cpu_set_t sandbox_cpus;
static bool pinning;
static pthread_once_t pin_once = PTHREAD_ONCE_INIT;
static int in_guest_on[CPU_SETSIZE]; /* atomic: guests running per CPU */
static __thread int my_cpu = -1; /* the CPU this task thread is pinned to */
static __thread uint64_t my_move_ns; /* when it was last moved (task_monotonic_ns) */

static void pin_init(void)
{
	pinning = husk_cpu_pinning() && husk_cpus_get(&sandbox_cpus) == 0 &&
		  CPU_COUNT(&sandbox_cpus) > 1;
}

static void pin_to(int cpu)
{
	if (husk_cpu_pin(0, cpu) == 0)
		my_cpu = cpu;
}

static void pin_start(void)
{
	static int first = 1;
	int cpu = -1;

	pthread_once(&pin_once, pin_init);
	/* The first task starts where husk started the gofers (common/cpus.h). */
	if (__atomic_exchange_n(&first, 0, __ATOMIC_RELAXED))
		cpu = husk_start_cpu();
	if (cpu < 0)
		cpu = sched_getcpu();
	if (pinning && cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &sandbox_cpus))
		pin_to(cpu);
}

/* Before a switch: count this guest as running on its CPU, moving first if that one is busy. */
static void pin_enter_guest(void)
{
	if (my_cpu < 0)
		return;
	if (__atomic_load_n(&in_guest_on[my_cpu], __ATOMIC_RELAXED) > 0) {
		uint64_t now = task_monotonic_ns();

		if (now - my_move_ns >= PIN_MOVE_NS) {
			for (int c = 0; c < CPU_SETSIZE; c++) {
				if (c != my_cpu && CPU_ISSET(c, &sandbox_cpus) &&
				    __atomic_load_n(&in_guest_on[c], __ATOMIC_RELAXED) == 0) {
					pin_to(c);
					break;
				}
			}
			my_move_ns = now;
		}
	}
	__atomic_add_fetch(&in_guest_on[my_cpu], 1, __ATOMIC_RELAXED);
}

static void pin_leave_guest(int cpu)
{
	if (cpu >= 0)
		__atomic_sub_fetch(&in_guest_on[cpu], 1, __ATOMIC_RELAXED);
}

int task_run(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct platform_event ev;
	const uint64_t patch_tramp = t->k->platform->syscall_trampoline;
	bool after_syscall;
	int pinned;
	int ret;

	cputime_task_start(t);
	pin_start();
	/* Signals may already be pending for a new task. */
	t->regs.orig_rax = (uint64_t)-1;
	rseq_return_to_guest(t);
	signal_deliver(t, false);
	while (!__atomic_load_n(&t->exiting, __ATOMIC_ACQUIRE)) {
		unsigned int pt = __atomic_load_n(&t->ptrace, __ATOMIC_RELAXED);

		/*
		 * Syscall patching's trampoline finds its thread through gs and cannot be single
		 * stepped: a gs base of the guest's own or a single step ends it (mm/patch.c).
		 */
		if (unlikely((t->regs.gs_base || (pt & PT_SINGLESTEP)) && patch_tramp) &&
		    mm_patch_enabled(t->mm))
			mm_patch_revert(t->mm, t->regs.gs_base ? "a thread has a gs base" :
								 "a thread is single-stepped");
		/* husk pause, checkpoint (freeze.c): stop here, where the registers are all. */
		if (unlikely(kernel_freezing(t->k))) {
			int code = t->freeze_restart;

			task_park(t, TASK_PARKED_CLEAN);
			t->freeze_restart = 0;
			if (code && (signal_pending_set(t) & ~t->sigmask)) {
				/* A signal came while parked: the call returns as if it came first. */
				t->regs.rip += 2;
				t->regs.rax = (uint64_t)(long)-code;
				signal_deliver(t, true);
			} else {
				signal_deliver(t, false);
			}
			continue;
		}
		t->freeze_restart = 0;
		task_set_in_guest(t, true);
		pin_enter_guest();
		pinned = my_cpu;
		/* PTRACE_SINGLESTEP: one instruction (ptrace.c checked that the platform can). */
		if (unlikely(pt & PT_SINGLESTEP))
			ret = ops->ctx_singlestep(t->ctx, &t->regs, &ev);
		else
			ret = ops->ctx_switch(t->ctx, &t->regs, &ev);
		pin_leave_guest(pinned);
		task_set_in_guest(t, false);
		if (ret < 0) {
			log_error("pid %d: cannot run the guest: %s", t->tid, strerror(-ret));
			task_exit_group(t, SIGKILL);
			break;
		}
		after_syscall = false;
		switch (ev.kind) {
		case PLATFORM_EV_SYSCALL:
			/* Not under a tracer: it would see the patched code (gVisor does the same). */
			if (ev.patchable &&
			    !(__atomic_load_n(&t->ptrace, __ATOMIC_RELAXED) & PT_TRACED))
				mm_patch_site(t->mm, t->regs.rip, t->regs.orig_rax, patch_tramp);
			task_syscall(t);
			after_syscall = true;
			break;
		case PLATFORM_EV_FAULT:
			t->regs.orig_rax = (uint64_t)-1;
			/* A patched site's invalid byte: a system call, or a site to run again. */
			if (ev.signo == SIGILL && patch_tramp) {
				uint64_t rip;
				int pr = mm_patch_sigill(t->mm, t->regs.rip, t->regs.rax, &rip);

				if (pr != MM_PATCH_NONE)
					t->regs.rip = rip;
				if (pr == MM_PATCH_RESTART)
					break;
				if (pr == MM_PATCH_SYSCALL) {
					t->regs.orig_rax = t->regs.rax;
					t->regs.rax = (uint64_t)-ENOSYS;
					task_syscall(t);
					after_syscall = true;
					break;
				}
			}
			/* A copy-on-write page or another fault the mm resolves: re-run. */
			if (ev.signo == SIGSEGV) {
				int fr;

				__atomic_fetch_add(&t->k->nr_faults, 1, __ATOMIC_RELAXED);
				fr = mm_handle_fault(t->mm, ev.addr, ev.code);

				if (fr == 0)
					break;
				/* Past the end of a mapped file. */
				if (fr == -EIO) {
					ev.signo = SIGBUS;
					ev.code = BUS_ADRERR;
				}
			}
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
		if (!__atomic_load_n(&t->exiting, __ATOMIC_ACQUIRE)) {
			rseq_return_to_guest(t);
			signal_deliver(t, after_syscall);
		}
	}
	return t->tg->exit_status;
}
