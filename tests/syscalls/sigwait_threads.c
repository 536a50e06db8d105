/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigwait_threads: a signal sent to the process (kill(getpid())) while it is blocked in every
 * thread goes to the thread waiting for it in sigwait/rt_sigtimedwait, never to another thread
 * blocked in a system call (read of a pipe, FUTEX_WAIT), whose call goes on undisturbed; the
 * default action (termination for SIGUSR1/SIGUSR2/SIGTERM) never happens. Checked in the program
 * itself (pid 1 under `husk do`) and in a forked child (not pid 1).
 *
 * The other thread is known to be in its blocking call by its state in /proc/self/task/TID/stat
 * ('S'), never by sleeping.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "child.h"

struct blocker {
	pthread_t th;
	int fd; /* read end of a pipe, or -1 for a FUTEX_WAIT on word */
	uint32_t word;
	int32_t tid; /* atomic */
	long ret;
	int err;
};

static void *block_fn(void *arg)
{
	struct blocker *b = arg;
	char c;

	__atomic_store_n(&b->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (b->fd >= 0)
		b->ret = read(b->fd, &c, 1);
	else
		b->ret = syscall(SYS_futex, &b->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	b->err = errno;
	return NULL;
}

/* Waits (60 s at most) until the thread sleeps in its call. */
static bool await_sleeping(struct blocker *b)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 60000; i++) {
		int32_t tid = __atomic_load_n(&b->tid, __ATOMIC_ACQUIRE);

		if (tid && thread_state(tid) == 'S')
			return true;
		nanosleep(&ms, NULL);
	}
	CHECK(0, "the other thread never slept in its call");
	return false;
}

/* One round: the other thread blocks (pipe read or futex), the process gets sig, we wait. */
static void round_trip(int sig, bool use_futex, bool timed)
{
	struct blocker b = { .fd = -1 };
	int p[2] = { -1, -1 };
	sigset_t set;
	siginfo_t si;
	int got = -1;

	if (!use_futex) {
		if (pipe(p) < 0) {
			CHECK(0, "pipe: %s", strerror(errno));
			return;
		}
		b.fd = p[0];
	}
	pthread_create(&b.th, NULL, block_fn, &b);
	if (!await_sleeping(&b))
		return;
	sigemptyset(&set);
	sigaddset(&set, sig);
	CHECK_RET(kill(getpid(), sig), 0);
	if (timed) {
		struct timespec ts = { 60, 0 };

		memset(&si, 0, sizeof(si));
		got = (int)syscall(SYS_rt_sigtimedwait, &set, &si, &ts, 8);
		CHECK(got == sig && si.si_signo == sig && si.si_code == SI_USER &&
			      si.si_pid == getpid(),
		      "rt_sigtimedwait: %d (signo %d code %d pid %d)", got, si.si_signo, si.si_code,
		      si.si_pid);
	} else {
		CHECK(sigwait(&set, &got) == 0 && got == sig, "sigwait: got %d, wanted %d", got,
		      sig);
	}
	/* The other thread is still in its call: it was neither interrupted nor killed. */
	CHECK(thread_state(b.tid) == 'S', "the other thread left its call (state %c)",
	      thread_state(b.tid));
	if (use_futex) {
		__atomic_store_n(&b.word, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &b.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	} else {
		CHECK_RET(write(p[1], "x", 1), 1);
	}
	pthread_join(b.th, NULL);
	if (use_futex)
		CHECK(b.ret == 0 || (b.ret == -1 && b.err == EAGAIN), "FUTEX_WAIT: %ld (%s)", b.ret,
		      strerror(b.err));
	else
		CHECK(b.ret == 1, "read: %ld (%s)", b.ret, b.ret < 0 ? strerror(b.err) : "-");
	/* Nothing left pending. */
	sigset_t pending;
	sigpending(&pending);
	CHECK(!sigismember(&pending, sig), "signal %d still pending", sig);
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
}

static void all_rounds(void *arg)
{
	int sigs[] = { SIGUSR1, SIGUSR2, SIGTERM, SIGRTMIN };
	sigset_t set;

	(void)arg;
	/* Blocked before the thread exists: blocked in every thread. */
	sigemptyset(&set);
	for (int i = 0; i < 4; i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < 4; i++) {
		round_trip(sigs[i], false, false);
		round_trip(sigs[i], false, true);
		round_trip(sigs[i], true, false);
		round_trip(sigs[i], true, true);
	}
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int main(void)
{
	int fd, st;
	pid_t pid;

	/* In this process (pid 1 under husk do)... */
	all_rounds(NULL);
	/* ...and in a child that is not pid 1, which a misdelivered signal would kill. */
	pid = child_spawn(all_rounds, NULL, &fd);
	if (pid > 0) {
		st = child_reap(pid, fd);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's status %#x", st);
	}
	return finish();
}
