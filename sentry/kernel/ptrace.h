/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptrace(2) of guest tasks by guest tasks: the sentry's own implementation, acting on the
 * sentry's tasks (DESIGN.md section 2: never host ptrace on the guest's behalf).
 *
 * Model (as Linux's kernel/ptrace.c): a tracee has one tracer task; the tracer's process waits
 * for its tracees with wait4/waitid as for children. A tracee stops (a "ptrace-stop") on its
 * own host thread, in the sentry, with its registers in t->regs: at signal delivery, at system
 * call entry and exit, at events (fork, exec, exit, ...), at group stops and traps. While it is
 * stopped the tracer reads and writes its registers, memory and siginfo directly, then resumes
 * it. The FP/vector state is copied when the stop begins (only the owner thread may ask the
 * platform for it) and written back at resume if the tracer changed it.
 *
 * Locks: every field of struct ptrace_task is protected by k->tree_lock, except where noted.
 * References: a tracer holds one reference on each of its tracees (task_get at attach).
 */
#ifndef HUSK_SENTRY_KERNEL_PTRACE_H
#define HUSK_SENTRY_KERNEL_PTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/list.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

struct task;
struct thread_group;
struct linux_siginfo;
struct task_wait_result;

/* Bits of task.ptrace (read with atomic loads by the run loop, signals and dispatch). */
#define PT_TRACED 0x1u /* traced: every ptrace hook runs */
#define PT_SYSCALL 0x2u /* resumed with PTRACE_SYSCALL: syscall-entry and -exit stops */
#define PT_SINGLESTEP 0x4u /* resumed with PTRACE_SINGLESTEP */
#define PT_TRAP 0x8u /* PTRACE_INTERRUPT or a seized new task: a PTRACE_EVENT_STOP is due */

/* PTRACE_EVENT_* (include/uapi/linux/ptrace.h). */
#define PT_EVENT_FORK 1
#define PT_EVENT_VFORK 2
#define PT_EVENT_CLONE 3
#define PT_EVENT_EXEC 4
#define PT_EVENT_VFORK_DONE 5
#define PT_EVENT_EXIT 6
#define PT_EVENT_STOP 128

/* PTRACE_SYSCALL_INFO_* of the current stop (PTRACE_GET_SYSCALL_INFO). */
enum ptrace_stop_kind {
	PTRACE_STOP_OTHER, /* signal-delivery, group, event stops */
	PTRACE_STOP_SYSCALL_ENTRY,
	PTRACE_STOP_SYSCALL_EXIT,
};

/* How the tracer last resumed a stopped tracee (ptrace_task.resume). */
enum ptrace_resume {
	PTRACE_RESUME_NONE, /* still stopped */
	PTRACE_RESUME_RUN, /* CONT, SYSCALL, SINGLESTEP, DETACH */
	PTRACE_RESUME_LISTEN, /* PTRACE_LISTEN: stopped, re-traps on a signal or SIGCONT */
};

/* The ptrace state of a task, both roles; allocated on first use, freed with the task. */
struct ptrace_task {
	struct task *task; /* the task this state belongs to */

	/* Tracee role. */
	struct task *tracer; /* NULL when not traced */
	struct list_head tracee_link; /* in tracer->pt->tracees */
	uint32_t options; /* PTRACE_O_* */
	bool seized; /* attached with PTRACE_SEIZE (or inherited from such a tracer) */
	bool stopped; /* in a ptrace-stop: the tracer may act on it */
	bool notify; /* the stop is not yet reported to the tracer's wait */
	int exit_code; /* the stop's status bits 8..23: sig | event << 8 (| 0x80 for TRACESYSGOOD) */
	enum ptrace_stop_kind kind;
	bool has_siginfo; /* GETSIGINFO gives siginfo (a group stop of a non-seized tracee: no) */
	uint8_t siginfo[128] __attribute__((aligned(8))); /* a struct linux_siginfo */
	uint64_t eventmsg; /* PTRACE_GETEVENTMSG */
	enum ptrace_resume resume;
	int resume_sig; /* the signal the tracer injects (the stop's own by default) */
	bool group_stop_done; /* this task took part in the current group stop (tg->stopped) */
	bool exited; /* a zombie for the tracer: exit_status not yet waited for */
	bool quiet_exit; /* the old leader replaced by an exec: unlinked, not reported (own) */
	int exit_status; /* wait status of the exited tracee */

	/* The FP/vector state copied at the stop (platform_fpstate_size() bytes; tracee's own
	 * thread writes it before the stop is published, the tracer while it is stopped). */
	void *fpstate;
	size_t fpstate_len;
	bool fp_valid, fp_dirty;

	/* Tracer role. */
	struct list_head tracees; /* of ptrace_task.tracee_link */
	int nr_tracees;
};

/* Frees a task's ptrace state (task_put). */
void ptrace_task_free(struct task *t);

/* --- hooks of the tracee (its own host thread) --- */

/*
 * A system call of a traced task (task.c, instead of the plain dispatch): syscall-entry stop
 * (the tracer may change orig_rax and the arguments; orig_rax -1 skips the call, rax then is
 * the result), the call itself, syscall-exit stop (the tracer may change rax), and the trap of
 * a single step over the call. Leaves the result in t->regs.rax.
 */
void ptrace_syscall(struct task *t);

/*
 * Signal-delivery-stop for sig (never SIGKILL) dequeued with *info (signals.c). Returns the
 * signal the tracer chose (0: suppressed) with *info updated; a chosen signal that t blocks
 * is queued again and 0 returned.
 */
int ptrace_signal(struct task *t, int sig, struct linux_siginfo *info);

/*
 * At each turn of signal_deliver for a traced task: a pending PTRACE_EVENT_STOP trap, or the
 * ptrace-stop of a group stop this task has not yet reported. Returns true if the task
 * stopped (the caller rechecks everything).
 */
bool ptrace_trap(struct task *t);

/* True if traced t was resumed by its tracer during the current group stop: it runs. */
bool ptrace_runs_in_group_stop(struct task *t);

/*
 * clone hook: attaches the new task c to p's tracer when p is traced and the event (or
 * CLONE_PTRACE) asks for it, before c runs. Returns the PTRACE_EVENT_* p must report once c
 * has started (ptrace_event), or 0. tree_lock not held.
 */
int ptrace_clone(struct task *p, struct task *c, uint64_t flags, int exit_signal);

/* A PTRACE_EVENT_x stop with GETEVENTMSG msg, if the tracer asked for the event. */
void ptrace_event(struct task *t, int event, uint64_t msg);

/* After a successful execve: PTRACE_EVENT_EXEC (msg: the former tid) or the legacy SIGTRAP. */
void ptrace_exec(struct task *t, int32_t old_tid);

/* At the start of a thread's exit (task_exit_thread): PTRACE_EVENT_EXIT if asked for. */
void ptrace_exit_event(struct task *t);

/*
 * At the end of a thread's exit: a tracer's tracees are detached (or killed with
 * PTRACE_O_EXITKILL); a tracee becomes a zombie for its tracer (reported by its wait) or is
 * unlinked when its tracer's process is its real parent. Call with no lock held.
 */
void ptrace_exit_thread(struct task *t);

/* --- hooks of the process code (task_exit.c; k->tree_lock held) --- */

/*
 * True if the zombie process tg must wait for its leader's tracer (a process other than its
 * real parent) before its real parent is told (Linux's "real parent" rules).
 */
bool ptrace_holds_zombie(struct thread_group *tg);

/*
 * The tracer side of wait4/waitid for t's process (every thread's tracees, or t's own with
 * __WNOTHREAD): reports a ptrace-stop or a tracee's exit. Returns the tracee's tid with *res
 * filled, or 0 if none is ready; sets *any when some tracee matches which/id.
 */
long ptrace_wait_scan(struct task *t, int which, int32_t id, int options,
		      struct task_wait_result *res, bool *any);

/*
 * Implemented in task_exit.c: lets the real parent of zombie tg, held for the tracer, see it
 * (notification, or immediate reaping when the parent ignores SIGCHLD). tree_lock held.
 */
void tg_release_traced_zombie(struct thread_group *tg);

/*
 * The tid of t's tracer, or 0 (/proc/PID/status TracerPid). Takes tree_lock. Inline so that
 * procfs (and its unit tests) need nothing else of ptrace.c.
 */
static inline int32_t ptrace_tracer_pid(struct task *t)
{
	struct ptrace_task *pt = __atomic_load_n(&t->pt, __ATOMIC_ACQUIRE);
	int32_t pid = 0;

	if (!pt)
		return 0;
	pthread_mutex_lock(&t->k->tree_lock);
	if (pt->tracer && !pt->exited)
		pid = pt->tracer->tid;
	pthread_mutex_unlock(&t->k->tree_lock);
	return pid;
}

/*
 * PTRACE_MODE_ATTACH_REALCREDS check of caller on target (same process, same uids and gids
 * and a dumpable target, or CAP_SYS_PTRACE). Returns 0 or -EPERM.
 */
int ptrace_may_access(struct task *caller, struct task *target);

/* The ptrace(2) system call: request, pid, addr, data as the guest passed them. */
long ptrace_request(struct task *t, long request, int32_t pid, uint64_t addr, uint64_t data);

#endif
