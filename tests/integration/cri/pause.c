/*
 * The pod sandbox ("pause") image's only program, for tests/integration/cri.sh: it holds the
 * pod's namespaces open and does nothing else. It sleeps (sigsuspend(2), pause(2) without the
 * race of a signal arriving just before it); SIGINT and SIGTERM end it
 * with status 0; as pid 1 of a pod that shares its pid namespace it reaps every child the other
 * containers leave to it (SIGCHLD). Built by the test with `cc -static`.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_child(int sig)
{
	int saved = errno;

	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

int main(void)
{
	struct sigaction sa;
	sigset_t block, wait_mask;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &block, &wait_mask) < 0) {
		perror("pause: sigprocmask");
		return 1;
	}
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
		perror("pause: sigaction");
		return 1;
	}
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	if (sigaction(SIGCHLD, &sa, NULL) < 0) {
		perror("pause: sigaction");
		return 1;
	}
	while (!stop)
		sigsuspend(&wait_mask);
	return 0;
}
