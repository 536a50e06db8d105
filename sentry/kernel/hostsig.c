/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host signals sent to the sentry (by `husk do`, which relays what it receives, by `husk kill`,
 * or by anyone who can signal the sentry) are forwarded to the guest's pid 1: SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGTSTP and the real-time signals.
 *
 * The forwarded signals are blocked in every sentry thread (hostsig_start blocks them in the
 * thread that calls it, before any other thread exists, and threads inherit the mask); one
 * thread takes them with sigwaitinfo. Each is sent to pid 1 as SI_USER from pid 0, "from
 * outside the sandbox": as for a container's init signalled from the host, pid 1 gets it if it
 * has a handler or blocks it, and a SIG_DFL one is dropped (Linux delivers SIGKILL/SIGSTOP
 * only, which are not forwarded). So `husk run` of `sleep 100` ignores SIGTERM, as
 * `docker run IMAGE sleep 100` does; a shell or program that installs a handler sees it.
 *
 * husk do passes --caller-signals (hostsig_set_caller_signals): there pid 1 is the caller's
 * command, not a container's init, and a signal it has no handler for (SIG_DFL with a default
 * action that ends a process) ends it and the sandbox, so that `timeout 10 husk do -- sleep
 * 100` stops after 10 s; the sentry then dies of the same signal (hostsig_exit_like_pid1), so
 * that husk do can tell "pid 1 died of the caller's SIGINT" from "pid 1 exited 130" (an
 * interactive shell whose last command was interrupted), and dies of it in turn.
 *
 * Signals the sentry's own terminal sends it (si_code SI_KERNEL: ^C, ^\, ^Z, hangup, window
 * size change) go to the guest's foreground process group of that terminal
 * (sentry/fs/host/hosttty.c), as Linux's tty layer sends them, not to pid 1 only. SIGTSTP is
 * among the blocked ones so that ^Z stops the guest's foreground job, never the sentry.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "common/log.h"
#include "sentry/fs/host/hosttty.h"
#include "include/abi/linux/signal.h"
#include "sentry/crash/crash.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/platform/kvm/kvm.h"

static const int forwarded[] = { SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
				 SIGUSR1, SIGUSR2, SIGWINCH, SIGTSTP };

static bool caller_signals; /* set before hostsig_start, read-only afterwards */
static uint64_t received; /* the host signals the sentry was sent (bit signo - 1), atomic */
static bool stop_sandbox; /* pid 1 was sent a stop signal it takes with SIG_DFL (atomic) */

/*
 * The real-time signals the sentry uses itself, which stay unblocked and are not forwarded:
 * the crash report's (sentry/crash) and the KVM platform's vCPU kick. `husk kill` of one of
 * them does not reach the guest (the crash handler ignores senders other than the sentry; a
 * stray kick only makes a vCPU exit once).
 */
static bool sentry_reserved(int sig)
{
	return sig == CRASH_SIGNAL || sig == KVM_KICK_SIGNAL;
}

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(set, forwarded[i]);
	/*
	 * And the real-time ones (glibc's SIGRTMIN is past its own two, which the sentry never
	 * gets; its SIGRTMIN+n is Linux's 34+n, the guest's): container managers stop a systemd
	 * container with SIGRTMIN+3 (`husk kill ID RTMIN+3`, docker's StopSignal), which would
	 * otherwise kill the sentry with its default action.
	 */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (!sentry_reserved(sig))
			sigaddset(set, sig);
}

void hostsig_set_caller_signals(bool on)
{
	caller_signals = on;
}

/* Signals whose default action ends the process (not ignored, not a stop). */
static bool default_terminates(int sig)
{
	switch (sig) {
	case LINUX_SIGCHLD:
	case LINUX_SIGCONT:
	case LINUX_SIGURG:
	case LINUX_SIGWINCH:
	case LINUX_SIGSTOP:
	case LINUX_SIGTSTP:
	case LINUX_SIGTTIN:
	case LINUX_SIGTTOU:
		return false;
	default:
		return sig >= 1 && sig < LINUX_SIGRTMIN;
	}
}

/* Stop signals: their default action stops the process. */
static bool default_stops(int sig)
{
	return sig == LINUX_SIGTSTP || sig == LINUX_SIGTTIN || sig == LINUX_SIGTTOU;
}

int hostsig_send(struct thread_group *tg, int sig, const struct linux_siginfo *info,
		 unsigned int flags)
{
	if (caller_signals && tg->pid == 1 && default_stops(sig)) {
		struct sighand *sh = tg->sighand;

		/* ^Z on husk do's command itself: it stops (and the sandbox with it, below). */
		pthread_mutex_lock(&sh->lock);
		if (sh->actions[sig - 1].handler == LINUX_SIG_DFL) {
			tg->sig_killable_init = true;
			__atomic_store_n(&stop_sandbox, true, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&sh->lock);
	}
	if (caller_signals && tg->pid == 1 && default_terminates(sig)) {
		struct sighand *sh = tg->sighand;

		/*
		 * Lifts init's protection (as a forced fault does) unless it ignores the signal:
		 * with SIG_DFL it dies of it; a handler runs, and a handler that then dies of the
		 * signal (SIG_DFL and raise: shells, Python's KeyboardInterrupt) does die of it,
		 * as the command would outside a sandbox.
		 */
		pthread_mutex_lock(&sh->lock);
		if (sh->actions[sig - 1].handler != LINUX_SIG_IGN)
			tg->sig_killable_init = true;
		pthread_mutex_unlock(&sh->lock);
	}
	return signal_send(tg, NULL, sig, info, flags);
}

static void forward(struct kernel *k, int sig, int code)
{
	struct linux_siginfo info;
	struct thread_group *tg;

	/* The terminal's own: to its foreground group in the guest. */
	if (code == SI_KERNEL && hosttty_terminal_signal(k, sig))
		return;
	tg = kernel_find_tg(k, 1);
	if (!tg) {
		log_info("host signal %d: no pid 1 to forward it to", sig);
		return;
	}
	signal_info_from(&info, sig, LINUX_SI_USER, NULL);
	/* Host and guest signal numbers are the same on x86-64. */
	hostsig_send(tg, sig, &info, SIGSEND_FROM_OUTSIDE);
	tg_put(tg);
}

/* After the sentry was continued: pid 1's group (or the terminal's foreground) continues. */
static void forward_continue(struct kernel *k)
{
	struct thread_group *tg;

	if (hosttty_terminal_signal(k, LINUX_SIGCONT))
		return;
	tg = kernel_find_tg(k, 1);
	if (!tg)
		return;
	signal_send(tg, NULL, LINUX_SIGCONT, NULL, SIGSEND_FROM_OUTSIDE);
	tg_put(tg);
}

static void *hostsig_main(void *arg)
{
	struct kernel *k = arg;
	sigset_t set;

	forwarded_set(&set);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);

		if (sig > 0) {
			__atomic_fetch_or(&received, 1ULL << (sig - 1), __ATOMIC_RELAXED);
			forward(k, sig, si.si_code);
		}
		/*
		 * pid 1 stops (^Z on `husk do -- vim`): the whole sentry stops too, so that husk
		 * do sees it (waitpid WUNTRACED) and stops in turn: the caller's shell gets the
		 * terminal back. Its fg or bg continues husk do's process group, the sentry
		 * among it, and then the guest's stopped group.
		 */
		if (__atomic_exchange_n(&stop_sandbox, false, __ATOMIC_RELAXED)) {
			raise(SIGSTOP);
			forward_continue(k);
		}
	}
	return NULL;
}

void hostsig_exit_like_pid1(int sig)
{
	struct rlimit no_core = { 0, 0 };
	struct sigaction sa;
	sigset_t set;

	if (!caller_signals || sig < 1 || sig > 64 ||
	    !(__atomic_load_n(&received, __ATOMIC_RELAXED) & (1ULL << (sig - 1))))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	setrlimit(RLIMIT_CORE, &no_core); /* SIGQUIT: no core of the sentry */
	sigemptyset(&set);
	sigaddset(&set, sig);
	/* Only this thread unblocks it: no other thread takes it (they all block it). */
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

int hostsig_start(struct kernel *k)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t set;
	int ret;

	hosttty_set_sender(hostsig_send);
	forwarded_set(&set);
	ret = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (ret)
		return -ret;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&thread, &attr, hostsig_main, k);
	pthread_attr_destroy(&attr);
	return -ret;
}
