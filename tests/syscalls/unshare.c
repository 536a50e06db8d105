/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unshare(2) of the tables a thread shares: CLONE_FS (cwd and umask become the thread's own),
 * CLONE_FILES (the fd table), CLONE_SYSVSEM; CLONE_VM/THREAD/SIGHAND only when single-threaded;
 * unknown flags. New namespaces are not checked here: Linux makes them for root, husk refuses
 * them with EPERM (documented in `husk syscalls`).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"

static int pipefd[2];
static volatile int thread_ok;
static pthread_barrier_t barrier;

/* A thread that takes its own fs and files, then changes them; main checks its own stayed. */
static void *worker(void *arg)
{
	int r = 1;

	if (syscall(SYS_unshare, CLONE_FS | CLONE_FILES) == 0 && chdir("/") == 0 &&
	    umask(077) == 022 && close(pipefd[0]) == 0)
		r = 0;
	thread_ok = r == 0;
	pthread_barrier_wait(&barrier);
	/* main checks now; wait until it has */
	pthread_barrier_wait(&barrier);
	return NULL;
}

static void test_thread_tables(void)
{
	char cwd[256];
	pthread_t th;
	mode_t old;

	CHECK_RET(chdir("/tmp"), 0);
	old = umask(022);
	CHECK_RET(pipe(pipefd), 0);
	pthread_barrier_init(&barrier, NULL, 2);
	CHECK_RET(pthread_create(&th, NULL, worker, NULL), 0);
	pthread_barrier_wait(&barrier);
	CHECK(thread_ok, "the thread's unshare/chdir/umask/close failed");
	/* While the thread lives, the process is multi-threaded: CLONE_VM is refused. */
	CHECK_ERR(syscall(SYS_unshare, CLONE_VM), EINVAL);
	CHECK_ERR(syscall(SYS_unshare, CLONE_THREAD), EINVAL);
	pthread_barrier_wait(&barrier);
	pthread_join(th, NULL);
	CHECK(getcwd(cwd, sizeof(cwd)) && !strcmp(cwd, "/tmp"), "main's cwd: %s", cwd);
	CHECK_RET(umask(old), 022);
	CHECK(fcntl(pipefd[0], F_GETFD) >= 0, "main's fd was closed by the thread");
	close(pipefd[0]);
	close(pipefd[1]);
}

static void test_flags(void)
{
	int st;
	pid_t pid;

	CHECK_RET(syscall(SYS_unshare, 0), 0);
	CHECK_RET(syscall(SYS_unshare, CLONE_SYSVSEM), 0);
	CHECK_RET(syscall(SYS_unshare, CLONE_FILES | CLONE_FS), 0);
	CHECK_ERR(syscall(SYS_unshare, 0x1), EINVAL); /* CSIGNAL bits */
	CHECK_ERR(syscall(SYS_unshare, CLONE_PTRACE), EINVAL);
	CHECK_ERR(syscall(SYS_unshare, CLONE_SETTLS), EINVAL);
	/* A single-threaded child may ask for CLONE_VM, CLONE_THREAD and CLONE_SIGHAND. */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(syscall(SYS_unshare, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND) == 0 ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "single-threaded CLONE_VM|THREAD|SIGHAND: status %#x", st);
	/* The files unshared by a forked child are its own already: closing one leaves ours. */
	CHECK_RET(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0)
		_exit(syscall(SYS_unshare, CLONE_FILES) == 0 && close(pipefd[0]) == 0 ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child CLONE_FILES: status %#x", st);
	CHECK(fcntl(pipefd[0], F_GETFD) >= 0, "the parent's fd was closed");
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	test_thread_tables();
	test_flags();
	return finish();
}
