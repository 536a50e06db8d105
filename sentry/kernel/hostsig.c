/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host signals sent to the sentry (by `husk do`, which relays what it receives, or by anyone
 * who can signal the sentry) are forwarded to the guest's pid 1.
 *
 * The forwarded signals are blocked in every sentry thread (hostsig_start blocks them in the
 * thread that calls it, before any other thread exists, and threads inherit the mask); one
 * thread takes them with sigwaitinfo. Each is sent to pid 1 as SI_USER from pid 0, "from
 * outside the sandbox": as for a container's init signalled from the host, pid 1 gets it if it
 * has a handler or blocks it, and a SIG_DFL one is dropped (Linux delivers SIGKILL/SIGSTOP
 * only, which are not forwarded). So `husk do -- sleep 100` ignores SIGTERM, as
 * `docker run IMAGE sleep 100` does; a shell or program that installs a handler sees it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "common/log.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(set, forwarded[i]);
}

static void forward(struct kernel *k, int sig)
{
	struct linux_siginfo info;
	struct thread_group *tg;

	tg = kernel_find_tg(k, 1);
	if (!tg) {
		log_info("host signal %d: no pid 1 to forward it to", sig);
		return;
	}
	signal_info_from(&info, sig, LINUX_SI_USER, NULL);
	/* Host and guest signal numbers are the same on x86-64. */
	signal_send(tg, NULL, sig, &info, SIGSEND_FROM_OUTSIDE);
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

		if (sig > 0)
			forward(k, sig);
	}
	return NULL;
}

int hostsig_start(struct kernel *k)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t set;
	int ret;

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
