/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signals: sending, pending sets, delivery to guest handlers (signal frames), default actions,
 * and the syscall-restart rules. Implemented in sentry/kernel/signals*.c.
 *
 * siginfo buffers are 128 bytes in the x86-64 layout (struct linux_siginfo in
 * include/abi/linux/signal.h); a NULL info means "SI_USER from the kernel" (si_code SI_KERNEL).
 */
#ifndef HUSK_SENTRY_SIGNALS_H
#define HUSK_SENTRY_SIGNALS_H

#include <stdbool.h>
#include <stdint.h>

struct task;
struct thread_group;
struct platform_event;

#define SIGBIT(sig) (1ULL << ((sig)-1))

/* True if a signal not blocked by t is pending for t (its own or its process's). Any thread. */
bool task_signal_pending(struct task *t);
/* True if SIGKILL is pending for t or its process is exiting. Any thread. */
bool task_fatal_signal_pending(struct task *t);

/*
 * Sends sig to a process (kill(2) semantics: any thread that does not block it takes it).
 * sig 0 only checks. Ignored signals are dropped at once; SIGCONT resumes a stopped group and
 * SIGSTOP-like signals discard pending SIGCONT (and vice versa). Wakes a thread to take it.
 * Returns 0 or -errno (-EAGAIN when the rt queue is full). Permission checks are the caller's.
 */
int signal_send_tg(struct thread_group *tg, int sig, const void *info);
/* Sends sig to one thread (tgkill/tkill, synchronous faults). */
int signal_send_task(struct task *t, int sig, const void *info);

/*
 * Called by the run loop each time t is about to return to the guest (after a system call,
 * after a fault, after an interruption, and before the first instruction). If the last event was
 * a system call (t->regs.orig_rax >= 0 and the result in t->regs.rax), applies Linux's restart
 * rules (ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK) against the
 * handler that runs, if any. Then dequeues and handles pending signals: default actions
 * (terminate, core, stop, continue, ignore) or a signal frame on the guest stack (or the
 * alternate stack) with the handler's mask applied. Group stops block here until SIGCONT or a
 * kill. On a fatal action it calls task_exit_group() and returns.
 */
void signal_deliver(struct task *t, bool after_syscall);

/*
 * A synchronous fault the guest did not have a mapping for (after mm_handle_fault declined it):
 * forces the matching signal on t (SIGSEGV with SEGV_MAPERR/SEGV_ACCERR and si_addr, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP), unblocking it and resetting it to default if it is blocked or
 * ignored, as Linux's force_sig_fault does.
 */
void signal_force_fault(struct task *t, const struct platform_event *ev);

/* --- added by the signals engineer --- */

struct kernel;
struct waitq;
struct linux_sigaction;
struct linux_siginfo;
struct linux_stack;

/* signal_send() flags. */
#define SIGSEND_FROM_OUTSIDE \
	0x1 /* from outside the sandbox (the host): Linux's "ancestor pid
				  * namespace", which may kill or stop pid 1 */

/*
 * The general send: to thread t when it is non-NULL (tg must be t's), else to the process tg.
 * info is a struct linux_siginfo (copied; its si_signo is set to sig) or NULL for SI_KERNEL.
 * Signals to pid 1 whose action is SIG_DFL are dropped, as Linux does for a pid namespace's
 * init, except SIGKILL/SIGSTOP sent from outside (SIGSEND_FROM_OUTSIDE) or by the kernel
 * (si_code SI_KERNEL). Returns 0 (also when the signal was dropped) or -EAGAIN.
 */
int signal_send(struct thread_group *tg, struct task *t, int sig, const void *info,
		unsigned int flags);

/*
 * Dequeues the lowest pending signal of t (its own set first, then its process's;
 * synchronous fault signals first, as Linux) among those in mask (bit signo - 1), copying its
 * siginfo (128 bytes) to info when non-NULL. Returns the signal number or 0. Any thread of t's
 * process; used by rt_sigtimedwait and signalfd.
 */
int signal_dequeue(struct task *t, uint64_t mask, void *info);

/* Signals pending for t (its own and its process's), whether blocked or not. */
uint64_t signal_pending_set(struct task *t);
/*
 * The group's leader t is exiting (its other threads live on): another thread takes the
 * process-directed signals pending, which were the leader's to take while it lived.
 */
void signal_leader_exiting(struct task *t);

/*
 * The wait queue woken each time a signal is queued for any thread of t's process (signalfd
 * waits and polls on it). Initialised on first use. Any thread.
 */
struct waitq *signal_waitq(struct task *t);

/*
 * Sets t's blocked mask (SIGKILL and SIGSTOP are never blocked), as Linux's
 * set_current_blocked: a process-directed signal that t now blocks is handed to another
 * thread. t's own host thread only.
 */
void signal_set_blocked(struct task *t, uint64_t mask);

/* Forces SIGSEGV with SI_KERNEL on t (a bad sigreturn frame, a frame that cannot be built). */
void signal_force_sigsegv(struct task *t);
/*
 * Linux's force_sig_info: sends sig with info to t even if t blocks or ignores it (then the
 * action becomes SIG_DFL and sig is unblocked), as for SECCOMP_RET_TRAP's SIGSYS.
 */
void signal_force_info(struct task *t, int sig, struct linux_siginfo *info);

/* Fills a siginfo for kill(2)/tkill(2)-style sends by sender: si_code code, its pid and uid. */
void signal_info_from(struct linux_siginfo *info, int sig, int code, const struct task *sender);

/*
 * sigaltstack(2)'s core, also used by rt_sigreturn: installs *ss (when non-NULL) and reports the
 * previous stack in *oss (when non-NULL), as seen from stack pointer sp. Returns 0, -EPERM (on
 * the stack), -EINVAL (flags), -ENOMEM (too small).
 */
int signal_altstack(struct task *t, const struct linux_stack *ss, struct linux_stack *oss,
		    uint64_t sp);

/* --- signal_frame.c --- */

/*
 * Builds the rt_sigframe for a handler of sig on t's stack (or alternate stack) with the
 * registers in t->regs, the mask to restore (oldmask) and the FP/vector state, then points
 * t->regs at the handler (rdi, rsi, rdx, rsp, rip, rax 0) with the FP state reset. Returns 0 or
 * -EFAULT (the stack cannot take the frame: the caller forces SIGSEGV).
 */
int signal_frame_setup(struct task *t, int sig, const struct linux_siginfo *info,
		       const struct linux_sigaction *ka, uint64_t oldmask);

/*
 * rt_sigreturn(2): restores registers, mask, FP state and alternate stack from the frame at
 * rsp - 8, validating them (64-bit selectors only, the user-changeable EFLAGS bits only, an
 * XSAVE area the CPU accepts). Returns the restored rax; on a bad frame forces SIGSEGV.
 */
long signal_frame_return(struct task *t);

/* --- hostsig.c --- */

/*
 * Forwards host signals sent to the sentry (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
 * SIGUSR2, SIGWINCH) to the guest's pid 1 as SI_USER from pid 0, sent from outside the
 * sandbox. Blocks them in the calling thread (so in every thread it creates later) and starts a
 * thread that waits for them. Call it before any other sentry thread exists and after the
 * seccomp filter is loaded. Returns 0 or -errno.
 */
int hostsig_start(struct kernel *k);

/*
 * husk do (the sentry's --caller-signals): a signal from the caller (relayed by husk do, or sent
 * by the terminal) that pid 1 takes with SIG_DFL and whose default action ends a process is
 * not dropped as for a container's init: pid 1 dies of it, and the sandbox with it, as the
 * command would outside a sandbox. SIG_IGN stays ignored, a handler runs (and once pid 1 took
 * such a signal it is no longer protected as an init: a handler that re-raises the signal with
 * SIG_DFL dies of it). Off by default (the OCI runtime keeps init's protection). Call before
 * hostsig_start.
 */
void hostsig_set_caller_signals(bool on);

/*
 * signal_send to process tg (flags as signal_send's) with the rule above for the sandbox's
 * pid 1 when it is on. For the host's signals (hostsig.c, sentry/fs/host/hosttty.c).
 */
int hostsig_send(struct thread_group *tg, int sig, const struct linux_siginfo *info,
		 unsigned int flags);

/*
 * At the sentry's exit, with --caller-signals, when pid 1 died of signal sig and the sentry was
 * sent sig from the host (husk do relayed it, or the terminal sent it): the sentry dies of sig
 * too (no core). Returns otherwise (the caller then exits 128 + sig).
 */
void hostsig_exit_like_pid1(int sig);

#endif
