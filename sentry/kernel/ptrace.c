/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptrace(2) inside the sandbox: the tracer/tracee relationship, ptrace-stops, the tracer's
 * requests and its side of wait. See ptrace.h for the model.
 *
 * A tracee stops on its own host thread (ptrace_stop): it publishes the stop under
 * k->tree_lock, tells its tracer (SIGCHLD with CLD_TRAPPED, child_wq), and sleeps on its own
 * wait condition until the tracer resumes or detaches it, it is killed, or its process exits.
 * The tracer acts on a stopped tracee's t->regs, memory (through the mm, as any sentry access)
 * and the FP copy taken at the stop.
 *
 * Locks: tree_lock for the relationship and the stop fields; a tracee's own fields
 * (group_stop_done, the FP copy while running) are its thread's.
 */
#include "sentry/kernel/ptrace.h"

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "syscalls/syscalls.h"

/* Requests (include/uapi/linux/ptrace.h, arch/x86/include/uapi/asm/ptrace-abi.h). */
#define PT_REQ_TRACEME 0
#define PT_REQ_PEEKTEXT 1
#define PT_REQ_PEEKDATA 2
#define PT_REQ_PEEKUSR 3
#define PT_REQ_POKETEXT 4
#define PT_REQ_POKEDATA 5
#define PT_REQ_POKEUSR 6
#define PT_REQ_CONT 7
#define PT_REQ_KILL 8
#define PT_REQ_SINGLESTEP 9
#define PT_REQ_GETREGS 12
#define PT_REQ_SETREGS 13
#define PT_REQ_GETFPREGS 14
#define PT_REQ_SETFPREGS 15
#define PT_REQ_ATTACH 16
#define PT_REQ_DETACH 17
#define PT_REQ_SYSCALL 24
#define PT_REQ_ARCH_PRCTL 30
#define PT_REQ_SYSEMU 31
#define PT_REQ_SYSEMU_SINGLESTEP 32
#define PT_REQ_SETOPTIONS 0x4200
#define PT_REQ_GETEVENTMSG 0x4201
#define PT_REQ_GETSIGINFO 0x4202
#define PT_REQ_SETSIGINFO 0x4203
#define PT_REQ_GETREGSET 0x4204
#define PT_REQ_SETREGSET 0x4205
#define PT_REQ_SEIZE 0x4206
#define PT_REQ_INTERRUPT 0x4207
#define PT_REQ_LISTEN 0x4208
#define PT_REQ_GETSIGMASK 0x420a
#define PT_REQ_SETSIGMASK 0x420b
#define PT_REQ_GET_SYSCALL_INFO 0x420e

/* Options. */
#define PT_O_TRACESYSGOOD 0x1
#define PT_O_EXITKILL 0x100000
#define PT_O_SUSPEND_SECCOMP 0x200000
#define PT_O_MASK (0xff | PT_O_EXITKILL | PT_O_SUSPEND_SECCOMP)

#define PT_EVENTMSG_SYSCALL_ENTRY 1
#define PT_EVENTMSG_SYSCALL_EXIT 2

#define PT_SYSCALL_INFO_NONE 0
#define PT_SYSCALL_INFO_ENTRY 1
#define PT_SYSCALL_INFO_EXIT 2
#define AUDIT_ARCH_X86_64 0xc000003eu

#define NT_PRSTATUS 1
#define NT_PRFPREG 2
#define NT_X86_XSTATE 0x202

#define CLONE_VFORK_FLAG 0x4000ULL
#define CLONE_PTRACE_FLAG 0x2000ULL
#define CLONE_UNTRACED_FLAG 0x800000ULL

#define USER_CS 0x33
#define USER_SS 0x2b
/* The EFLAGS bits a tracer may change (Linux's FLAG_MASK). */
#define EFLAGS_USER_MASK 0x50dd5ULL
#define TASK_SIZE_MAX 0x7ffffffff000ULL
/* struct user (sys/user.h): regs, then u_fpvalid..., u_debugreg at 848, size 928. */
#define USER_DEBUGREG_OFF 848
#define USER_STRUCT_SIZE 928
#define FXSAVE_SIZE 512

#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004

struct ptrace_syscall_info {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t stack_pointer;
	union {
		struct {
			uint64_t nr;
			uint64_t args[6];
		} entry;
		struct {
			int64_t rval;
			uint8_t is_error;
		} exit;
	};
};

struct guest_iovec {
	uint64_t base;
	uint64_t len;
};

static uint32_t pt_flags(const struct task *t)
{
	return __atomic_load_n(&t->ptrace, __ATOMIC_ACQUIRE);
}

static void pt_set(struct task *t, uint32_t bits)
{
	__atomic_or_fetch(&t->ptrace, bits, __ATOMIC_ACQ_REL);
}

static void pt_clear(struct task *t, uint32_t bits)
{
	__atomic_and_fetch(&t->ptrace, ~bits, __ATOMIC_ACQ_REL);
}

/* t's ptrace state, allocated on first use (tree_lock held, or t not yet visible). */
static struct ptrace_task *pt_alloc(struct task *t)
{
	struct ptrace_task *pt = t->pt;

	if (pt)
		return pt;
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return NULL;
	list_init(&pt->tracee_link);
	list_init(&pt->tracees);
	__atomic_store_n(&t->pt, pt, __ATOMIC_RELEASE);
	return pt;
}

void ptrace_task_free(struct task *t)
{
	if (!t->pt)
		return;
	free(t->pt->fpstate);
	free(t->pt);
	t->pt = NULL;
}

static bool sigkill_pending(struct task *t)
{
	return (signal_pending_set(t) & SIGBIT(LINUX_SIGKILL)) != 0;
}

/* Links c as a tracee of tracer (tree_lock held; both pts allocated). Takes a reference. */
static void link_tracee(struct task *tracer, struct task *c, uint32_t options, bool seized)
{
	struct ptrace_task *pt = c->pt;

	pt->task = c;
	pt->tracer = tracer;
	pt->options = options;
	pt->seized = seized;
	pt->exited = false;
	pt->group_stop_done = false;
	list_add_tail(&pt->tracee_link, &tracer->pt->tracees);
	tracer->pt->nr_tracees++;
	task_get(c);
	pt_set(c, PT_TRACED);
}

/*
 * Unlinks tracee c from its tracer (tree_lock held); a stopped tracee is resumed with its
 * resume_sig. The caller drops the tracer's reference (task_put) once tree_lock is released.
 */
static void unlink_tracee(struct task *c)
{
	struct ptrace_task *pt = c->pt;

	/* A wait of the tracer that counted c as a possible report must look again. */
	if (pt->tracer)
		waitq_wake_all(&pt->tracer->tg->child_wq);
	if (pt->tracer && pt->tracer->pt)
		pt->tracer->pt->nr_tracees--;
	list_del(&pt->tracee_link);
	list_init(&pt->tracee_link);
	pt->tracer = NULL;
	pt->seized = false;
	pt->options = 0;
	pt->notify = false;
	__atomic_store_n(&c->ptrace, 0, __ATOMIC_RELEASE);
	if (pt->stopped && pt->resume == PTRACE_RESUME_NONE)
		pt->resume = PTRACE_RESUME_RUN;
	if (pt->resume == PTRACE_RESUME_LISTEN)
		pt->resume = PTRACE_RESUME_RUN;
	task_wake(c);
}

/* --- the tracee side --- */

/* Tells the tracer of a stop (tree_lock held): SIGCHLD CLD_TRAPPED and its wait queue. */
static void notify_tracer(struct task *t, struct task *tracer, int code)
{
	struct thread_group *ttg = tracer->tg;
	struct sighand *sh = ttg->sighand;
	struct linux_siginfo info;
	bool send;

	pthread_mutex_lock(&sh->lock);
	send = sh->actions[LINUX_SIGCHLD - 1].handler != LINUX_SIG_IGN &&
	       !(sh->actions[LINUX_SIGCHLD - 1].flags & LINUX_SA_NOCLDSTOP);
	pthread_mutex_unlock(&sh->lock);
	if (send) {
		memset(&info, 0, sizeof(info));
		info.si_signo = LINUX_SIGCHLD;
		info.si_code = LINUX_CLD_TRAPPED;
		info.chld.pid = pid_ns_task_nr(t, ttg->pidns);
		info.chld.uid = t->cred.uid;
		info.chld.status = code & 0x7f;
		signal_send_tg(ttg, LINUX_SIGCHLD, &info);
	}
	waitq_wake_all(&ttg->child_wq);
}

/* Is the stop over? (tree_lock held) */
static bool stop_over_locked(struct task *t, bool exit_stop)
{
	struct ptrace_task *pt = t->pt;

	if (!(pt_flags(t) & PT_TRACED) || !pt->tracer)
		return true;
	if (sigkill_pending(t))
		return true;
	if (!exit_stop && (__atomic_load_n(&t->exiting, __ATOMIC_ACQUIRE) ||
			   __atomic_load_n(&t->tg->exiting, __ATOMIC_ACQUIRE)))
		return true;
	/* The end of the sandbox (pid 1's process exiting) ends exit-event stops too. */
	if (exit_stop && t->k->init && __atomic_load_n(&t->k->init->tg->exiting, __ATOMIC_ACQUIRE))
		return true;
	if (pt->resume == PTRACE_RESUME_RUN)
		return true;
	if (pt->resume == PTRACE_RESUME_LISTEN) {
		/* Re-trap when the group stop ends, a signal arrives or INTERRUPT is asked. */
		if (!__atomic_load_n(&t->tg->stopped, __ATOMIC_ACQUIRE) ||
		    (signal_pending_set(t) & ~__atomic_load_n(&t->sigmask, __ATOMIC_ACQUIRE)) ||
		    (pt_flags(t) & PT_TRAP)) {
			pt_set(t, PT_TRAP);
			return true;
		}
	}
	return false;
}

/* Sleeps on t's own wait condition until the stop is over (task_wake wakes it). */
static void stop_sleep(struct task *t, bool exit_stop)
{
	struct kernel *k = t->k;
	bool over;

	for (;;) {
		pthread_mutex_lock(&t->wait_lock);
		t->wake_pending = false;
		pthread_mutex_unlock(&t->wait_lock);
		pthread_mutex_lock(&k->tree_lock);
		over = stop_over_locked(t, exit_stop);
		pthread_mutex_unlock(&k->tree_lock);
		if (over)
			return;
		pthread_mutex_lock(&t->wait_lock);
		while (!t->wake_pending)
			pthread_cond_wait(&t->wait_cond, &t->wait_lock);
		pthread_mutex_unlock(&t->wait_lock);
	}
}

/* Copies the FP/vector state before the stop is published (owner thread). */
static void fp_snapshot(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct ptrace_task *pt = t->pt;
	size_t len = platform_fpstate_size();

	pt->fp_valid = false;
	pt->fp_dirty = false;
	if (!ops->ctx_get_fpstate || !t->ctx || len == 0)
		return;
	if (!pt->fpstate || pt->fpstate_len != len) {
		free(pt->fpstate);
		pt->fpstate = calloc(1, len);
		pt->fpstate_len = pt->fpstate ? len : 0;
		if (!pt->fpstate)
			return;
	}
	pt->fp_valid = ops->ctx_get_fpstate(t->ctx, pt->fpstate, len) >= 0;
}

/* Fills a siginfo as ptrace_do_notify: SIGTRAP-like stop code, the tracee's pid and uid. */
static void notify_info(struct task *t, struct linux_siginfo *info, int code)
{
	memset(info, 0, sizeof(*info));
	info->si_signo = code & 0x7f;
	info->si_code = code;
	info->kill.pid = task_pid(t);
	info->kill.uid = t->cred.uid;
}

/*
 * The ptrace-stop (Linux's ptrace_stop): code is the status bits 8..23; info (may be NULL)
 * the siginfo GETSIGINFO returns; msg the GETEVENTMSG value (if set_msg). On return *info
 * holds the siginfo as the tracer left it. Returns the signal the tracer resumed with, or -1 if
 * t did not stop (not traced, being killed).
 */
static int ptrace_stop(struct task *t, int code, enum ptrace_stop_kind kind,
		       struct linux_siginfo *info, bool set_msg, uint64_t msg, int dflt_sig,
		       bool exit_stop)
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct ptrace_task *pt = t->pt;
	struct kernel *k = t->k;
	int sig;

	if (!pt || !(pt_flags(t) & PT_TRACED))
		return -1;
	fp_snapshot(t);
	pthread_mutex_lock(&k->tree_lock);
	if (!pt->tracer || sigkill_pending(t) ||
	    (!exit_stop && (t->exiting || __atomic_load_n(&t->tg->exiting, __ATOMIC_ACQUIRE)))) {
		pthread_mutex_unlock(&k->tree_lock);
		return -1;
	}
	pt->stopped = true;
	pt->notify = true;
	pt->exit_code = code;
	pt->kind = kind;
	pt->has_siginfo = info != NULL;
	if (info)
		memcpy(pt->siginfo, info, sizeof(pt->siginfo));
	if (set_msg)
		pt->eventmsg = msg;
	pt->resume = PTRACE_RESUME_NONE;
	pt->resume_sig = dflt_sig;
	notify_tracer(t, pt->tracer, code);
	pthread_mutex_unlock(&k->tree_lock);

	stop_sleep(t, exit_stop);

	pthread_mutex_lock(&k->tree_lock);
	sig = sigkill_pending(t) ? 0 : pt->resume_sig;
	pt->stopped = false;
	pt->notify = false;
	pt->resume = PTRACE_RESUME_NONE;
	if (info)
		memcpy(info, pt->siginfo, sizeof(*info));
	pthread_mutex_unlock(&k->tree_lock);

	if (pt->fp_dirty && pt->fp_valid && ops->ctx_set_fpstate && t->ctx) {
		if (ops->ctx_set_fpstate(t->ctx, pt->fpstate, pt->fpstate_len) < 0)
			log_warn("pid %d: ptrace: the tracer's FP state was refused", t->tid);
	}
	pt->fp_dirty = false;
	return sig;
}

/* A SIGTRAP-family stop (syscall, event, trap) with its ptrace_do_notify siginfo. */
static int notify_stop(struct task *t, int code, enum ptrace_stop_kind kind, bool set_msg,
		       uint64_t msg, bool exit_stop)
{
	struct linux_siginfo info;

	notify_info(t, &info, code);
	return ptrace_stop(t, code, kind, &info, set_msg, msg, 0, exit_stop);
}

/* Forces the SIGTRAP of a single step that ended without a CPU trap (a system call). */
static void step_trap(struct task *t)
{
	struct linux_siginfo info;

	memset(&info, 0, sizeof(info));
	info.si_signo = LINUX_SIGTRAP;
	info.si_code = 1; /* TRAP_BRKPT, as Linux's user_single_step_report */
	signal_force_info(t, LINUX_SIGTRAP, &info);
}

static void report_syscall(struct task *t, enum ptrace_stop_kind kind)
{
	int code = LINUX_SIGTRAP;
	int sig;

	if (t->pt->options & PT_O_TRACESYSGOOD)
		code |= 0x80;
	sig = notify_stop(t, code, kind, true,
			  kind == PTRACE_STOP_SYSCALL_ENTRY ? PT_EVENTMSG_SYSCALL_ENTRY :
							      PT_EVENTMSG_SYSCALL_EXIT,
			  false);
	/* Linux: "not the same as continuing with a signal, but it will do for normal use". */
	if (sig > 0)
		signal_send_task(t, sig, NULL);
}

void ptrace_syscall(struct task *t)
{
	struct syscall_args args;
	uint32_t f = pt_flags(t);
	bool entry_stop = f & PT_SYSCALL;
	long nr;

	if (entry_stop) {
		t->regs.rax = (uint64_t)-ENOSYS;
		report_syscall(t, PTRACE_STOP_SYSCALL_ENTRY);
		if (t->exiting || task_fatal_signal_pending(t))
			return;
	}
	nr = (long)t->regs.orig_rax;
	/* orig_rax -1 from the tracer skips the call: rax (-ENOSYS unless set) is the result. */
	if (!(entry_stop && nr < 0)) {
		args.a[0] = t->regs.rdi;
		args.a[1] = t->regs.rsi;
		args.a[2] = t->regs.rdx;
		args.a[3] = t->regs.r10;
		args.a[4] = t->regs.r8;
		args.a[5] = t->regs.r9;
		t->regs.rax = (uint64_t)syscall_dispatch(t, nr, &args);
	}
	if (__atomic_load_n(&t->exiting, __ATOMIC_ACQUIRE))
		return;
	f = pt_flags(t);
	if (f & PT_SINGLESTEP)
		step_trap(t);
	else if (f & PT_SYSCALL)
		report_syscall(t, PTRACE_STOP_SYSCALL_EXIT);
}

int ptrace_signal(struct task *t, int sig, struct linux_siginfo *info)
{
	int nsig;

	nsig = ptrace_stop(t, sig, PTRACE_STOP_OTHER, info, false, 0, sig, false);
	if (nsig < 0)
		return sig;
	if (nsig == 0 || nsig > LINUX_NSIG)
		return 0;
	if (nsig != info->si_signo) {
		/* The tracer chose another signal: it looks sent by the tracer (Linux). */
		struct task *tracer;

		memset(info, 0, sizeof(*info));
		info->si_signo = nsig;
		info->si_code = LINUX_SI_USER;
		pthread_mutex_lock(&t->k->tree_lock);
		tracer = t->pt->tracer;
		if (tracer) {
			info->kill.pid = task_pid(tracer);
			info->kill.uid = tracer->cred.uid;
		}
		pthread_mutex_unlock(&t->k->tree_lock);
	}
	if (__atomic_load_n(&t->sigmask, __ATOMIC_ACQUIRE) & SIGBIT(nsig)) {
		signal_send_task(t, nsig, info);
		return 0;
	}
	return nsig;
}

bool ptrace_trap(struct task *t)
{
	struct ptrace_task *pt = t->pt;
	struct thread_group *tg = t->tg;
	uint32_t f = pt_flags(t);
	bool stopped = __atomic_load_n(&tg->stopped, __ATOMIC_ACQUIRE);
	struct linux_siginfo info;
	int code;

	if (!(f & PT_TRACED) || !pt)
		return false;
	if (!stopped)
		pt->group_stop_done = false;
	if (f & PT_TRAP) {
		pt_clear(t, PT_TRAP);
		code = (stopped ? tg->stop_signal : LINUX_SIGTRAP) | (PT_EVENT_STOP << 8);
		if (stopped)
			pt->group_stop_done = true;
		notify_info(t, &info, code);
		ptrace_stop(t, code, PTRACE_STOP_OTHER, &info, false, 0, 0, false);
		return true;
	}
	if (stopped && !pt->group_stop_done) {
		pt->group_stop_done = true;
		if (pt->seized) {
			code = tg->stop_signal | (PT_EVENT_STOP << 8);
			notify_info(t, &info, code);
			ptrace_stop(t, code, PTRACE_STOP_OTHER, &info, false, 0, 0, false);
		} else {
			/* A group stop has no siginfo: GETSIGINFO fails with EINVAL. */
			ptrace_stop(t, tg->stop_signal, PTRACE_STOP_OTHER, NULL, false, 0, 0,
				    false);
		}
		return true;
	}
	return false;
}

bool ptrace_runs_in_group_stop(struct task *t)
{
	uint32_t f = pt_flags(t);

	if (!(f & PT_TRACED) || !t->pt)
		return false;
	return t->pt->group_stop_done && !(f & PT_TRAP);
}

int ptrace_clone(struct task *p, struct task *c, uint64_t flags, int exit_signal)
{
	struct ptrace_task *pt = p->pt;
	struct kernel *k = p->k;
	int event = 0;
	bool seized;

	if (!(pt_flags(p) & PT_TRACED) || !pt || (flags & CLONE_UNTRACED_FLAG))
		return 0;
	if (flags & CLONE_VFORK_FLAG)
		event = PT_EVENT_VFORK;
	else if (exit_signal != LINUX_SIGCHLD)
		event = PT_EVENT_CLONE;
	else
		event = PT_EVENT_FORK;
	pthread_mutex_lock(&k->tree_lock);
	if (!pt->tracer || !(pt->options & (1u << event)))
		event = 0;
	if (!pt->tracer || (!event && !(flags & CLONE_PTRACE_FLAG)) || !pt_alloc(c)) {
		pthread_mutex_unlock(&k->tree_lock);
		return 0;
	}
	seized = pt->seized;
	link_tracee(pt->tracer, c, pt->options, seized);
	/* A seized new task starts with PTRACE_EVENT_STOP, another with SIGSTOP. */
	if (seized)
		pt_set(c, PT_TRAP);
	pthread_mutex_unlock(&k->tree_lock);
	if (!seized)
		signal_send_task(c, LINUX_SIGSTOP, NULL);
	return event;
}

void ptrace_event(struct task *t, int event, uint64_t msg)
{
	struct ptrace_task *pt = t->pt;
	uint32_t options;

	if (!(pt_flags(t) & PT_TRACED) || !pt)
		return;
	pthread_mutex_lock(&t->k->tree_lock);
	options = pt->options;
	pthread_mutex_unlock(&t->k->tree_lock);
	if (!(options & (1u << event)))
		return;
	notify_stop(t, LINUX_SIGTRAP | (event << 8), PTRACE_STOP_OTHER, true, msg,
		    event == PT_EVENT_EXIT);
}

void ptrace_exec(struct task *t, int32_t old_tid)
{
	struct ptrace_task *pt = t->pt;
	struct linux_siginfo info;
	uint32_t options;
	bool seized;

	if (!(pt_flags(t) & PT_TRACED) || !pt)
		return;
	pthread_mutex_lock(&t->k->tree_lock);
	options = pt->options;
	seized = pt->seized;
	/* The former tid as the tracer's pid namespace sees it (in a nested one: the thread's
	 * current number there, which is the old one unless a non-leader exec'd). */
	if (pt->tracer && pt->tracer->tg->pidns)
		old_tid = pid_ns_task_nr(t, pt->tracer->tg->pidns);
	pthread_mutex_unlock(&t->k->tree_lock);
	t->regs.rax = 0;
	if (options & (1u << PT_EVENT_EXEC)) {
		ptrace_event(t, PT_EVENT_EXEC, (uint64_t)old_tid);
	} else if (!seized) {
		/* The legacy SIGTRAP after a successful execve. */
		signal_info_from(&info, LINUX_SIGTRAP, LINUX_SI_USER, t);
		signal_send_task(t, LINUX_SIGTRAP, &info);
	}
}

void ptrace_exit_event(struct task *t)
{
	struct thread_group *tg = t->tg;
	int status;

	if (!(pt_flags(t) & PT_TRACED) || !t->pt)
		return;
	pthread_mutex_lock(&tg->lock);
	status = tg->group_exit ? tg->exit_status : t->exit_code;
	pthread_mutex_unlock(&tg->lock);
	ptrace_event(t, PT_EVENT_EXIT, (uint64_t)(uint32_t)status);
}

/* The CLD_* code and si_status of a wait status. */
static void decode_status(int status, int *code, int *st)
{
	if ((status & 0x7f) == 0) {
		*code = LINUX_CLD_EXITED;
		*st = (status >> 8) & 0xff;
	} else {
		*code = (status & 0x80) ? LINUX_CLD_DUMPED : LINUX_CLD_KILLED;
		*st = status & 0x7f;
	}
}

void ptrace_exit_thread(struct task *t)
{
	struct ptrace_task *pt = t->pt, *c, *n;
	struct kernel *k = t->k;
	struct thread_group *tg = t->tg;
	struct task **puts = NULL, **kills = NULL;
	size_t nput = 0, nkill = 0, cap;
	struct task *tracer;
	int status;

	if (!pt)
		return;
	pthread_mutex_lock(&tg->lock);
	status = tg->group_exit || tg->leader == t ? tg->exit_status : t->exit_code;
	pthread_mutex_unlock(&tg->lock);

	pthread_mutex_lock(&k->tree_lock);
	/* Tracer role: every tracee is detached, or killed with PTRACE_O_EXITKILL. */
	cap = (size_t)pt->nr_tracees + 1;
	puts = calloc(cap, sizeof(*puts));
	kills = calloc(cap, sizeof(*kills));
	list_for_each_entry_safe(c, n, &pt->tracees, tracee_link) {
		struct task *ct = c->task;
		bool exitkill = (c->options & PT_O_EXITKILL) != 0;
		bool exited = c->exited;

		unlink_tracee(ct);
		if (ct->tg->leader == ct)
			tg_release_traced_zombie(ct->tg);
		if (exitkill && !exited && kills && nkill < cap) {
			task_get(ct);
			kills[nkill++] = ct;
		}
		if (puts && nput < cap)
			puts[nput++] = ct;
		else
			task_put(ct);
	}

	/* Tracee role. */
	tracer = pt->tracer;
	if (tracer && !pt->exited) {
		bool leader = tg->leader == t;

		if (pt->quiet_exit || (leader && tracer->tg == tg->parent)) {
			/* The real parent is the tracer's process: its wait reports the exit. Or an
			 * exec replaced this leader: its tracer is not told (ptrace(2)). */
			unlink_tracee(t);
			if (puts && nput < cap)
				puts[nput++] = t;
			else
				task_put(t);
		} else {
			struct linux_siginfo info;
			int code, st;

			pt->exited = true;
			pt->exit_status = status;
			pt->stopped = false;
			pt->notify = false;
			pt_clear(t, PT_SYSCALL | PT_SINGLESTEP | PT_TRAP);
			decode_status(status, &code, &st);
			memset(&info, 0, sizeof(info));
			info.si_signo = LINUX_SIGCHLD;
			info.si_code = code;
			info.chld.pid = pid_ns_task_nr(t, tracer->tg->pidns);
			info.chld.uid = t->cred.uid;
			info.chld.status = st;
			signal_send_tg(tracer->tg, LINUX_SIGCHLD, &info);
			waitq_wake_all(&tracer->tg->child_wq);
		}
	}
	pthread_mutex_unlock(&k->tree_lock);

	for (size_t i = 0; i < nkill; i++) {
		signal_send_task(kills[i], LINUX_SIGKILL, NULL);
		task_put(kills[i]);
	}
	for (size_t i = 0; i < nput; i++)
		task_put(puts[i]);
	free(kills);
	free(puts);
}

bool ptrace_holds_zombie(struct thread_group *tg)
{
	struct task *l = tg->leader;
	struct ptrace_task *pt = l ? l->pt : NULL;

	if (!pt || !(pt_flags(l) & PT_TRACED) || !pt->tracer)
		return false;
	return pt->tracer->tg != tg->parent;
}

/* --- the tracer's wait --- */

static bool wait_eligible(struct task *c, int which, int32_t id)
{
	switch (which) {
	case P_PID:
		return c->tid == id;
	case P_PGID:
		return c->tg->pgid == id;
	default:
		return true;
	}
}

/*
 * One tracer thread's tracees (tree_lock held): the first that has something to report, or
 * NULL; sets *any when one matches.
 */
static struct ptrace_task *scan_tracees(struct task *u, int which, int32_t id, int options,
					bool *any)
{
	struct ptrace_task *c;

	if (!u->pt)
		return NULL;
	list_for_each_entry(c, &u->pt->tracees, tracee_link) {
		if (!wait_eligible(c->task, which, id))
			continue;
		*any = true;
		if ((c->exited && (options & WEXITED)) || (c->stopped && c->notify))
			return c;
	}
	return NULL;
}

long ptrace_wait_scan(struct task *t, int which, int32_t id, int options,
		      struct task_wait_result *r, bool *any)
{
	struct thread_group *tg = t->tg;
	struct ptrace_task *c = NULL;
	struct task *u, *ct;

	if (options & __WNOTHREAD) {
		c = scan_tracees(t, which, id, options, any);
	} else {
		pthread_mutex_lock(&tg->lock);
		list_for_each_entry(u, &tg->tasks, tg_link) {
			c = scan_tracees(u, which, id, options, any);
			if (c)
				break;
		}
		pthread_mutex_unlock(&tg->lock);
	}
	if (!c)
		return 0;
	ct = c->task;
	r->pid = pid_ns_task_nr(ct, tg->pidns); /* the tracer's number for it */
	r->uid = ct->cred.uid;
	if (c->exited) {
		r->status = c->exit_status;
		decode_status(c->exit_status, &r->cld_code, &r->cld_status);
		if (!(options & WNOWAIT)) {
			bool leader = ct->tg->leader == ct;

			unlink_tracee(ct);
			/* A process held for its tracer goes to its real parent now. */
			if (leader)
				tg_release_traced_zombie(ct->tg);
			task_put(ct);
		}
		return r->pid;
	}
	r->status = (c->exit_code << 8) | 0x7f;
	r->cld_code = LINUX_CLD_TRAPPED;
	r->cld_status = c->exit_code;
	if (!(options & WNOWAIT))
		c->notify = false;
	return r->pid;
}

/* --- requests --- */

int ptrace_may_access(struct task *caller, struct task *target)
{
	const struct cred *c = &caller->cred, *tc = &target->cred;
	bool ids, capable = cred_capable(c, CAP_SYS_PTRACE);

	if (caller->tg == target->tg)
		return 0;
	ids = c->uid == tc->euid && c->uid == tc->suid && c->uid == tc->uid && c->gid == tc->egid &&
	      c->gid == tc->sgid && c->gid == tc->gid;
	if (!ids && !capable)
		return -EPERM;
	if (!__atomic_load_n(&target->tg->dumpable, __ATOMIC_ACQUIRE) && !capable)
		return -EPERM;
	return 0;
}

static long ptrace_traceme(struct task *t)
{
	struct kernel *k = t->k;
	struct thread_group *parent;
	struct task *tracer;
	long ret = 0;

	pthread_mutex_lock(&k->tree_lock);
	parent = t->tg->parent;
	tracer = parent ? parent->leader : NULL;
	if ((pt_flags(t) & PT_TRACED) || !tracer || parent->state != TG_RUNNING ||
	    parent->exiting) {
		ret = -EPERM;
	} else if (!pt_alloc(t) || !pt_alloc(tracer)) {
		ret = -ENOMEM;
	} else {
		link_tracee(tracer, t, 0, false);
	}
	pthread_mutex_unlock(&k->tree_lock);
	return ret;
}

static long ptrace_attach(struct task *t, struct task *c, long request, uint64_t addr,
			  uint64_t data)
{
	struct kernel *k = t->k;
	bool seize = request == PT_REQ_SEIZE;
	long ret;

	if (seize && (addr != 0 || (data & ~(uint64_t)PT_O_MASK)))
		return -EIO;
	if (c->tg == t->tg)
		return -EPERM;
	ret = ptrace_may_access(t, c);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&k->tree_lock);
	if (c->exiting || c->tg->exiting || c->tg->state != TG_RUNNING ||
	    (pt_flags(c) & PT_TRACED)) {
		ret = -EPERM;
	} else if (!pt_alloc(c) || !pt_alloc(t)) {
		ret = -ENOMEM;
	} else {
		link_tracee(t, c, seize ? (uint32_t)data : 0, seize);
	}
	pthread_mutex_unlock(&k->tree_lock);
	if (ret < 0)
		return ret;
	if (!seize)
		signal_send_task(c, LINUX_SIGSTOP, NULL);
	/* A group-stopped tracee reports its stop to the new tracer. */
	task_wake(c);
	return 0;
}

/* Is c traced by t's process? (tree_lock held) */
static bool traced_by(struct task *c, struct task *t)
{
	struct ptrace_task *pt = c->pt;

	return pt && (pt_flags(c) & PT_TRACED) && pt->tracer && pt->tracer->tg == t->tg &&
	       !pt->exited;
}

/* Linux's ptrace_check_attach: c is t's tracee and in a ptrace-stop. (tree_lock held) */
static bool stopped_for(struct task *c, struct task *t)
{
	return traced_by(c, t) && c->pt->stopped && c->pt->resume == PTRACE_RESUME_NONE;
}

/* The registers as a tracer sees them (64-bit selectors filled in). */
static void regs_get(struct task *c, arch_regs_t *r)
{
	*r = c->regs;
	if (r->cs == 0)
		r->cs = USER_CS;
	if (r->ss == 0)
		r->ss = USER_SS;
}

/* A data segment selector may be kept or cleared (the sandbox has no other segments). */
static bool selector_ok(uint64_t v, uint64_t cur)
{
	return v == cur || v == 0;
}

/* Linux's putreg() checks for a whole register set; writes c->regs if they pass. */
static long regs_set(struct task *c, const arch_regs_t *in)
{
	arch_regs_t cur, r = *in;

	regs_get(c, &cur);
	if (r.cs != USER_CS || r.ss != USER_SS)
		return -EIO;
	if (!selector_ok(r.ds, cur.ds) || !selector_ok(r.es, cur.es) ||
	    !selector_ok(r.fs, cur.fs) || !selector_ok(r.gs, cur.gs))
		return -EIO;
	if (r.fs_base >= TASK_SIZE_MAX || r.gs_base >= TASK_SIZE_MAX)
		return -EIO;
	r.eflags = (r.eflags & EFLAGS_USER_MASK) | (cur.eflags & ~EFLAGS_USER_MASK);
	c->regs = r;
	return 0;
}

static struct mm *tracee_mm(struct task *c)
{
	return task_get_mm(c);
}

static long put_word(struct task *t, uint64_t addr, uint64_t w)
{
	return mm_copy_out(t->mm, addr, &w, sizeof(w)) == sizeof(w) ? 0 : -EFAULT;
}

static long peek_user(struct task *t, struct task *c, uint64_t off, uint64_t data)
{
	arch_regs_t r;
	uint64_t w = 0;

	if ((off & 7) || off >= USER_STRUCT_SIZE)
		return -EIO;
	if (off < sizeof(r)) {
		regs_get(c, &r);
		memcpy(&w, (uint8_t *)&r + off, sizeof(w));
	}
	/* Debug registers (and the rest of struct user) read as 0. */
	return put_word(t, data, w);
}

static long poke_user(struct task *c, uint64_t off, uint64_t data)
{
	arch_regs_t r;

	if ((off & 7) || off >= USER_STRUCT_SIZE)
		return -EIO;
	if (off < sizeof(r)) {
		regs_get(c, &r);
		memcpy((uint8_t *)&r + off, &data, sizeof(data));
		return regs_set(c, &r);
	}
	if (off >= USER_DEBUGREG_OFF && off < USER_DEBUGREG_OFF + 8 * 8) {
		/*
		 * No hardware breakpoints. Writes are accepted and dropped, as gVisor does: a
		 * debugger that gets EIO here (gdb, resuming after `watch`) loses track of its
		 * tracee. Its software watchpoints (single steps) work.
		 */
		return 0;
	}
	return -EIO;
}

static long get_fpregs(struct task *t, struct task *c, uint64_t addr, size_t len)
{
	struct ptrace_task *pt = c->pt;

	if (!pt->fp_valid)
		return -EIO;
	len = MIN(len, pt->fpstate_len);
	return mm_copy_out(t->mm, addr, pt->fpstate, len) == (ssize_t)len ? 0 : -EFAULT;
}

static long set_fpregs(struct task *t, struct task *c, uint64_t addr, size_t len, bool legacy)
{
	struct ptrace_task *pt = c->pt;
	uint8_t *buf;
	uint64_t bv;

	if (!pt->fp_valid)
		return -EIO;
	len = MIN(len, pt->fpstate_len);
	buf = malloc(pt->fpstate_len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, pt->fpstate, pt->fpstate_len);
	if (mm_copy_in(t->mm, buf, addr, len) != (ssize_t)len) {
		free(buf);
		return -EFAULT;
	}
	if (legacy && pt->fpstate_len >= FXSAVE_SIZE + 8) {
		/* The legacy area now holds the x87 and SSE state: mark them present. */
		memcpy(&bv, buf + FXSAVE_SIZE, sizeof(bv));
		bv |= 3;
		memcpy(buf + FXSAVE_SIZE, &bv, sizeof(bv));
	}
	memcpy(pt->fpstate, buf, pt->fpstate_len);
	pt->fp_dirty = true;
	free(buf);
	return 0;
}

static long regset(struct task *t, struct task *c, bool set, uint64_t type, uint64_t uiov)
{
	struct guest_iovec iov;
	arch_regs_t r;
	size_t n;
	long ret;

	if (mm_copy_in(t->mm, &iov, uiov, sizeof(iov)) != sizeof(iov))
		return -EFAULT;
	switch (type) {
	case NT_PRSTATUS:
		n = MIN(iov.len, sizeof(r));
		regs_get(c, &r);
		if (set) {
			if (mm_copy_in(t->mm, &r, iov.base, n) != (ssize_t)n)
				return -EFAULT;
			ret = regs_set(c, &r);
			if (ret < 0)
				return ret;
		} else if (mm_copy_out(t->mm, iov.base, &r, n) != (ssize_t)n) {
			return -EFAULT;
		}
		break;
	case NT_PRFPREG:
	case NT_X86_XSTATE:
		if (!c->pt->fp_valid)
			return -ENODEV;
		n = MIN(iov.len, type == NT_PRFPREG ? FXSAVE_SIZE : c->pt->fpstate_len);
		ret = set ? set_fpregs(t, c, iov.base, n, type == NT_PRFPREG) :
			    get_fpregs(t, c, iov.base, n);
		if (ret < 0)
			return ret;
		break;
	default:
		return -EINVAL;
	}
	iov.len = n;
	if (mm_copy_out(t->mm, uiov, &iov, sizeof(iov)) != sizeof(iov))
		return -EFAULT;
	return 0;
}

static long get_syscall_info(struct task *t, struct task *c, uint64_t size, uint64_t addr)
{
	struct ptrace_task *pt = c->pt;
	struct ptrace_syscall_info info;
	size_t n = offsetof(struct ptrace_syscall_info, entry);
	arch_regs_t r;

	memset(&info, 0, sizeof(info));
	regs_get(c, &r);
	info.arch = AUDIT_ARCH_X86_64;
	info.instruction_pointer = r.rip;
	info.stack_pointer = r.rsp;
	/* As Linux: the syscall fields only for a TRACESYSGOOD syscall stop. */
	if (pt->exit_code == (LINUX_SIGTRAP | 0x80) && pt->kind == PTRACE_STOP_SYSCALL_ENTRY) {
		info.op = PT_SYSCALL_INFO_ENTRY;
		info.entry.nr = r.orig_rax;
		info.entry.args[0] = r.rdi;
		info.entry.args[1] = r.rsi;
		info.entry.args[2] = r.rdx;
		info.entry.args[3] = r.r10;
		info.entry.args[4] = r.r8;
		info.entry.args[5] = r.r9;
		n = offsetof(struct ptrace_syscall_info, entry.args) + sizeof(info.entry.args);
	} else if (pt->exit_code == (LINUX_SIGTRAP | 0x80) &&
		   pt->kind == PTRACE_STOP_SYSCALL_EXIT) {
		info.op = PT_SYSCALL_INFO_EXIT;
		info.exit.rval = (int64_t)r.rax;
		info.exit.is_error = (int64_t)r.rax < 0 && (int64_t)r.rax >= -4095;
		n = offsetof(struct ptrace_syscall_info, exit.is_error) + 1;
	}
	if (addr && mm_copy_out(t->mm, addr, &info, MIN(size, n)) != (ssize_t)MIN(size, n) &&
	    MIN(size, n) > 0)
		return -EFAULT;
	return (long)n;
}

/* CONT, SYSCALL, SINGLESTEP, DETACH's resume (tree_lock held; c stopped for t). */
static void resume_locked(struct task *c, uint32_t mode, int sig)
{
	pt_clear(c, PT_SYSCALL | PT_SINGLESTEP);
	if (mode)
		pt_set(c, mode);
	c->pt->resume_sig = sig;
	c->pt->resume = PTRACE_RESUME_RUN;
	task_wake(c);
}

/* Requests on a stopped tracee c. */
static long stopped_request(struct task *t, struct task *c, long request, uint64_t addr,
			    uint64_t data)
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct kernel *k = t->k;
	struct ptrace_task *pt = c->pt;
	uint8_t info[128];
	arch_regs_t r;
	struct mm *mm;
	uint64_t w;
	long ret = 0;

	switch (request) {
	case PT_REQ_PEEKTEXT:
	case PT_REQ_PEEKDATA:
		mm = tracee_mm(c);
		if (!mm)
			return -ESRCH;
		ret = mm_copy_in(mm, &w, addr, sizeof(w)) == sizeof(w) ? 0 : -EIO;
		mm_put(mm);
		return ret < 0 ? ret : put_word(t, data, w);
	case PT_REQ_POKETEXT:
	case PT_REQ_POKEDATA:
		/* As Linux's FOLL_FORCE: read-only text is written in this mm's private copy. */
		mm = tracee_mm(c);
		if (!mm)
			return -ESRCH;
		ret = mm_poke(mm, addr, &data, sizeof(data)) == sizeof(data) ? 0 : -EIO;
		mm_put(mm);
		return ret;
	case PT_REQ_PEEKUSR:
		return peek_user(t, c, addr, data);
	case PT_REQ_POKEUSR:
		return poke_user(c, addr, data);
	case PT_REQ_GETREGS:
		regs_get(c, &r);
		return mm_copy_out(t->mm, data, &r, sizeof(r)) == sizeof(r) ? 0 : -EFAULT;
	case PT_REQ_SETREGS:
		if (mm_copy_in(t->mm, &r, data, sizeof(r)) != sizeof(r))
			return -EFAULT;
		return regs_set(c, &r);
	case PT_REQ_GETFPREGS:
		return get_fpregs(t, c, data, FXSAVE_SIZE);
	case PT_REQ_SETFPREGS:
		return set_fpregs(t, c, data, FXSAVE_SIZE, true);
	case PT_REQ_GETREGSET:
	case PT_REQ_SETREGSET:
		return regset(t, c, request == PT_REQ_SETREGSET, addr, data);
	case PT_REQ_GETEVENTMSG:
		pthread_mutex_lock(&k->tree_lock);
		w = pt->eventmsg;
		pthread_mutex_unlock(&k->tree_lock);
		return put_word(t, data, w);
	case PT_REQ_GETSIGINFO:
		pthread_mutex_lock(&k->tree_lock);
		ret = pt->has_siginfo ? 0 : -EINVAL;
		memcpy(info, pt->siginfo, sizeof(info));
		pthread_mutex_unlock(&k->tree_lock);
		if (ret < 0)
			return ret;
		return mm_copy_out(t->mm, data, info, sizeof(info)) == sizeof(info) ? 0 : -EFAULT;
	case PT_REQ_SETSIGINFO:
		if (mm_copy_in(t->mm, info, data, sizeof(info)) != sizeof(info))
			return -EFAULT;
		pthread_mutex_lock(&k->tree_lock);
		if (pt->has_siginfo)
			memcpy(pt->siginfo, info, sizeof(info));
		else
			ret = -EINVAL;
		pthread_mutex_unlock(&k->tree_lock);
		return ret;
	case PT_REQ_GETSIGMASK:
		if (addr != sizeof(uint64_t))
			return -EINVAL;
		return put_word(t, data, __atomic_load_n(&c->sigmask, __ATOMIC_ACQUIRE));
	case PT_REQ_SETSIGMASK:
		if (addr != sizeof(uint64_t))
			return -EINVAL;
		if (mm_copy_in(t->mm, &w, data, sizeof(w)) != sizeof(w))
			return -EFAULT;
		w &= ~(SIGBIT(LINUX_SIGKILL) | SIGBIT(LINUX_SIGSTOP));
		__atomic_store_n(&c->sigmask, w, __ATOMIC_RELEASE);
		return 0;
	case PT_REQ_GET_SYSCALL_INFO:
		return get_syscall_info(t, c, addr, data);
	case PT_REQ_ARCH_PRCTL:
		switch (data) {
		case ARCH_GET_FS:
			return put_word(t, addr, c->regs.fs_base);
		case ARCH_GET_GS:
			return put_word(t, addr, c->regs.gs_base);
		case ARCH_SET_FS:
		case ARCH_SET_GS:
			if (addr >= TASK_SIZE_MAX)
				return -EPERM;
			if (data == ARCH_SET_FS)
				c->regs.fs_base = addr;
			else
				c->regs.gs_base = addr;
			return 0;
		default:
			return -EINVAL;
		}
	case PT_REQ_SETOPTIONS:
		if (data & ~(uint64_t)PT_O_MASK)
			return -EINVAL;
		pthread_mutex_lock(&k->tree_lock);
		pt->options = (uint32_t)data;
		pthread_mutex_unlock(&k->tree_lock);
		return 0;
	case PT_REQ_CONT:
	case PT_REQ_SYSCALL:
	case PT_REQ_SINGLESTEP:
	case PT_REQ_DETACH: {
		uint32_t mode = request == PT_REQ_SYSCALL    ? PT_SYSCALL :
				request == PT_REQ_SINGLESTEP ? PT_SINGLESTEP :
							       0;
		struct task *put = NULL;

		if (data > LINUX_NSIG)
			return -EIO;
		if (request == PT_REQ_SINGLESTEP && !ops->ctx_singlestep)
			return -EIO;
		pthread_mutex_lock(&k->tree_lock);
		if (!stopped_for(c, t)) {
			ret = -ESRCH;
		} else if (request == PT_REQ_DETACH) {
			pt->resume_sig = (int)data;
			unlink_tracee(c);
			put = c;
		} else {
			resume_locked(c, mode, (int)data);
		}
		pthread_mutex_unlock(&k->tree_lock);
		if (put)
			task_put(put);
		return ret;
	}
	case PT_REQ_LISTEN:
		pthread_mutex_lock(&k->tree_lock);
		if (!stopped_for(c, t))
			ret = -ESRCH;
		else if (!pt->seized || (pt->exit_code >> 8) != PT_EVENT_STOP)
			ret = -EIO;
		else {
			pt->resume = PTRACE_RESUME_LISTEN;
			/* Listening is not a new stop: it is not reported again until it re-traps. */
			pt->notify = false;
			task_wake(c);
		}
		pthread_mutex_unlock(&k->tree_lock);
		return ret;
	default:
		return -EIO;
	}
}

long ptrace_request(struct task *t, long request, int32_t pid, uint64_t addr, uint64_t data)
{
	struct kernel *k = t->k;
	struct task *c;
	long ret;

	if (request == PT_REQ_TRACEME)
		return ptrace_traceme(t);
	if (pid <= 0)
		return -ESRCH;
	c = task_find_vtask(t, pid); /* the caller's pid namespace's number */
	if (!c)
		return -ESRCH;
	switch (request) {
	case PT_REQ_ATTACH:
	case PT_REQ_SEIZE:
		ret = ptrace_attach(t, c, request, addr, data);
		break;
	case PT_REQ_KILL:
		pthread_mutex_lock(&k->tree_lock);
		ret = traced_by(c, t) ? 0 : -ESRCH;
		pthread_mutex_unlock(&k->tree_lock);
		if (ret == 0)
			signal_send_task(c, LINUX_SIGKILL, NULL);
		break;
	case PT_REQ_INTERRUPT:
		pthread_mutex_lock(&k->tree_lock);
		if (!traced_by(c, t))
			ret = -ESRCH;
		else if (!c->pt->seized)
			ret = -EIO;
		else
			ret = 0;
		if (ret == 0) {
			pt_set(c, PT_TRAP);
			task_wake(c);
		}
		pthread_mutex_unlock(&k->tree_lock);
		break;
	case PT_REQ_SYSEMU:
	case PT_REQ_SYSEMU_SINGLESTEP:
		/* Not offered to the guest: a guest tracer cannot emulate calls in the sentry. */
		ret = -EIO;
		break;
	default:
		pthread_mutex_lock(&k->tree_lock);
		ret = stopped_for(c, t) ? 0 : -ESRCH;
		pthread_mutex_unlock(&k->tree_lock);
		if (ret == 0)
			ret = stopped_request(t, c, request, addr, data);
		break;
	}
	task_put(c);
	return ret;
}
