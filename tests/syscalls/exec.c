/* SPDX-License-Identifier: Apache-2.0 */
/*
 * execve and execveat: success and errors (ENOENT, EACCES, E2BIG, ELOOP, EINVAL, EFAULT),
 * close-on-exec, signal dispositions across exec, exec from a vfork child and from a
 * non-leader thread (de-threading: the process keeps its pid), `#!` scripts.
 *
 * The program re-executes itself (argv[0] must be a path, as meson and run-in-husk give it)
 * with a mode argument to look at its state after exec.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char *self;

/* Modes run after exec; each exits 0 when what it checks holds. */
static int child_mode(int argc, char **argv)
{
	struct sigaction sa;

	if (!strcmp(argv[1], "--fds")) {
		/* fd 10 was close-on-exec, fd 11 not. */
		return fcntl(10, F_GETFD) == -1 && errno == EBADF && fcntl(11, F_GETFD) == 0 ? 0 :
											       1;
	}
	if (!strcmp(argv[1], "--signals")) {
		/* SIGUSR1 had a handler (now default), SIGUSR2 was ignored (still ignored),
		 * SIGINT was blocked (still blocked). */
		sigset_t m;

		sigaction(SIGUSR1, NULL, &sa);
		if (sa.sa_handler != SIG_DFL)
			return 1;
		sigaction(SIGUSR2, NULL, &sa);
		if (sa.sa_handler != SIG_IGN)
			return 2;
		sigprocmask(SIG_BLOCK, NULL, &m);
		return sigismember(&m, SIGINT) ? 0 : 3;
	}
	if (!strcmp(argv[1], "--pid") && argc == 3) {
		/* After a thread's exec: the pid is kept, the tid is the pid, one thread left. */
		pid_t want = (pid_t)atoi(argv[2]);

		return getpid() == want && syscall(SYS_gettid) == want ? 0 : 1;
	}
	if (!strcmp(argv[1], "--exit") && argc == 3)
		return atoi(argv[2]);
	return 100;
}

/* Forks, runs fn in the child, returns the child's exit code (or 1000 + signal). */
static int in_child(void (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(99);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static void exec_fds(void)
{
	char *argv[] = { self, "--fds", NULL };
	int a = open("/dev/null", O_RDONLY | O_CLOEXEC), b = open("/dev/null", O_RDONLY);

	if (dup3(a, 10, O_CLOEXEC) < 0 || dup2(b, 11) < 0)
		_exit(98);
	execv(self, argv);
	_exit(97);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void exec_signals(void)
{
	char *argv[] = { self, "--signals", NULL };
	struct sigaction sa;
	sigset_t m;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&m);
	sigaddset(&m, SIGINT);
	sigprocmask(SIG_BLOCK, &m, NULL);
	execv(self, argv);
	_exit(97);
}

static void *exec_thread_fn(void *arg)
{
	char pid[16];
	char *argv[] = { self, "--pid", pid, NULL };

	snprintf(pid, sizeof(pid), "%d", getpid());
	execv(self, argv);
	_exit(97);
}

static void *spin_fn(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

static void exec_from_thread(void)
{
	pthread_t a, b;

	/* A bystander thread that must be killed, and the exec'ing (non-leader) thread. */
	pthread_create(&a, NULL, spin_fn, NULL);
	pthread_create(&b, NULL, exec_thread_fn, NULL);
	for (;;)
		pause();
}

static void exec_script(void)
{
	char *argv[] = { "which", "sh", NULL };
	int fd = open("/dev/null", O_WRONLY);

	dup2(fd, 1);
	/* Debian's which is a `#!/bin/sh` script. */
	execv("/usr/bin/which", argv);
	_exit(97);
}

static void exec_at(void)
{
	char *argv[] = { "true", NULL };
	char *envp[] = { NULL };
	int dirfd = open("/usr/bin", O_RDONLY | O_DIRECTORY);

	syscall(SYS_execveat, dirfd, "true", argv, envp, 0);
	_exit(97);
}

static void exec_fd(void)
{
	char *argv[] = { "true", NULL };
	char *envp[] = { NULL };
	int fd = open("/usr/bin/true", O_RDONLY);

	/* fexecve(3) is execveat(fd, "", AT_EMPTY_PATH). */
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	_exit(97);
}

static void test_errors(void)
{
	char *argv[] = { "x", NULL };
	char *envp[] = { NULL };
	char *big;
	size_t n = 200 * 1024;

	CHECK_ERR(execve("/no/such/file", argv, envp), ENOENT);
	CHECK_ERR(execve("/usr", argv, envp), EACCES);
	CHECK_ERR(execve("/etc/os-release", argv, envp), EACCES);
	CHECK_ERR(syscall(SYS_execve, (char *)8, argv, envp), EFAULT);
	CHECK_ERR(syscall(SYS_execve, "/bin/true", (char **)8, envp), EFAULT);
	/* One string past MAX_ARG_STRLEN (128 KiB). */
	big = malloc(n + 1);
	memset(big, 'a', n);
	big[n] = 0;
	char *bigv[] = { "true", big, NULL };
	CHECK_ERR(execve("/bin/true", bigv, envp), E2BIG);
	/* Many strings past the total limit (a quarter of the 8 MiB stack limit). */
	size_t count = 3 * 1024 * 1024 / 1024;
	char **many = calloc(count + 2, sizeof(char *));
	big[1023] = 0;
	many[0] = "true";
	for (size_t i = 1; i <= count; i++)
		many[i] = big;
	CHECK_ERR(execve("/bin/true", many, envp), E2BIG);
	free(many);
	free(big);
	CHECK_ERR(syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0x8000), EINVAL);
	/* /bin/sh is a symlink (to dash) on Debian. */
	CHECK_ERR(syscall(SYS_execveat, AT_FDCWD, "/bin/sh", argv, envp, AT_SYMLINK_NOFOLLOW),
		  ELOOP);
	CHECK_ERR(syscall(SYS_execveat, 12345, "true", argv, envp, 0), EBADF);
	CHECK_ERR(syscall(SYS_execveat, 12345, "", argv, envp, AT_EMPTY_PATH), EBADF);
	CHECK_ERR(syscall(SYS_execveat, AT_FDCWD, "", argv, envp, 0), ENOENT);
}

static void test_vfork_exec(void)
{
	char *argv[] = { self, "--exit", "23", NULL };
	int st;
	pid_t pid = vfork();

	if (pid == 0) {
		execv(self, argv);
		_exit(97);
	}
	CHECK(pid > 0, "vfork");
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 23, "status %#x", st);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child_mode(argc, argv);
	setvbuf(stdout, NULL, _IONBF, 0);
	self = argv[0];
	if (self[0] != '/') {
		printf("argv[0] must be an absolute path\n");
		return 1;
	}
	test_errors();
	CHECK_RET(in_child(exec_fds), 0);
	CHECK_RET(in_child(exec_signals), 0);
	CHECK_RET(in_child(exec_from_thread), 0);
	CHECK_RET(in_child(exec_script), 0);
	CHECK_RET(in_child(exec_at), 0);
	CHECK_RET(in_child(exec_fd), 0);
	test_vfork_exec();
	return finish();
}
