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

/* rt_sigreturn(2) restores registers, mask and FP state from the frame; see sys_signal.c. */

#endif
