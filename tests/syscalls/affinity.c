/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU affinity and clone's TLS: sched_setaffinity remembered per thread and reported by
 * sched_getaffinity (of the caller, another thread by tid, another process), Linux's rules (EINVAL
 * for a mask without an online CPU or a bad length, ESRCH, EPERM across users, the returned
 * size), inherited by fork and pthread_create; clone and arch_prctl refusing a non-canonical
 * FS base (EPERM).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <asm/prctl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"

#define MASK_BYTES 128 /* CPU_SETSIZE bits */

static long getaff(pid_t pid, cpu_set_t *set)
{
	CPU_ZERO(set);
	return syscall(SYS_sched_getaffinity, pid, sizeof(*set), set);
}

static long setaff(pid_t pid, const cpu_set_t *set)
{
	return syscall(SYS_sched_setaffinity, pid, sizeof(*set), set);
}

static cpu_set_t all, one;
static int first_cpu = -1;

/* In a child: the mask fork gave it. */
static void child_mask(void *arg)
{
	cpu_set_t set;

	(void)arg;
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &one), "fork: mask not inherited (%d CPUs)",
	      CPU_COUNT(&set));
}

static void *thread_mask(void *arg)
{
	cpu_set_t set;

	(void)arg;
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &one),
	      "pthread_create: mask not inherited (%d CPUs)", CPU_COUNT(&set));
	return NULL;
}

static atomic_int thread_tid, thread_stop;

/* Sets its own mask to one CPU and stays until told to stop. */
static void *narrowing_thread(void *arg)
{
	(void)arg;
	CHECK_RET(setaff(0, &one), 0);
	atomic_store(&thread_tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&thread_stop))
		sched_yield();
	return NULL;
}

/* In a child that drops to uid 1000: the root parent's mask may be read, not set. */
static void child_unprivileged(void *arg)
{
	pid_t parent = *(pid_t *)arg;
	cpu_set_t set;

	if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000)) {
		CHECK(0, "setresuid: %s", strerror(errno));
		return;
	}
	CHECK(getaff(parent, &set) > 0, "getaffinity of another user's process: %s",
	      strerror(errno));
	CHECK_ERR(setaff(parent, &one), EPERM);
	CHECK_RET(setaff(0, &one), 0);
}

static void check_affinity(void)
{
	unsigned char big[MASK_BYTES * 2];
	cpu_set_t set, offline;
	pthread_t th;
	long size;
	pid_t self = getpid();

	size = CHECK_OK(getaff(0, &all));
	CHECK(size > 0 && size % 8 == 0 && size <= (long)sizeof(all), "returned size %ld", size);
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (CPU_ISSET(i, &all)) {
			first_cpu = i;
			break;
		}
	}
	if (first_cpu < 0) {
		CHECK(0, "no CPU in the mask");
		return;
	}
	CPU_ZERO(&one);
	CPU_SET(first_cpu, &one);
	/* A larger buffer gets the same size back; a short or unaligned one EINVAL. */
	CHECK_RET(syscall(SYS_sched_getaffinity, 0, sizeof(big), big), size);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 4, big), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, size + 1, big), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, sizeof(set), (void *)8), EFAULT);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0x3ffffffe, sizeof(set), &set), ESRCH);
	CHECK_ERR(syscall(SYS_sched_setaffinity, 0x3ffffffe, sizeof(set), &one), ESRCH);

	/* Set to one CPU: reported back exactly, and getcpu says that CPU. */
	CHECK_RET(setaff(0, &one), 0);
	{
		unsigned int cpu = ~0u;

		CHECK_RET(syscall(SYS_getcpu, &cpu, NULL, NULL), 0);
		CHECK(cpu == (unsigned int)first_cpu, "getcpu %u, pinned to %d", cpu, first_cpu);
	}
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &one), "mask after set: %d CPUs",
	      CPU_COUNT(&set));
	CHECK(getaff(self, &set) > 0 && CPU_EQUAL(&set, &one), "mask by pid: %d CPUs",
	      CPU_COUNT(&set));
	/* A mask with no online CPU: EINVAL, the old mask kept; an empty one too. */
	CPU_ZERO(&offline);
	CPU_SET(CPU_SETSIZE - 1, &offline);
	CHECK_ERR(setaff(0, &offline), EINVAL);
	CPU_ZERO(&set);
	CHECK_ERR(setaff(0, &set), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setaffinity, 0, 0, &one), EINVAL);
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &one), "mask after EINVAL: %d CPUs",
	      CPU_COUNT(&set));
	/* Offline CPUs in a mask are dropped; a short mask counts as zero-extended. */
	CPU_SET(first_cpu, &offline);
	CHECK_RET(setaff(0, &offline), 0);
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &one), "offline CPUs kept: %d CPUs",
	      CPU_COUNT(&set));
	CHECK_ERR(syscall(SYS_sched_setaffinity, 0, sizeof(one), (void *)8), EFAULT);

	/* Inherited by fork and by new threads. */
	in_child(child_mask, NULL);
	pthread_create(&th, NULL, thread_mask, NULL);
	pthread_join(th, NULL);

	/* Per thread: a thread's own mask is not the process's; read and set it by tid. */
	CHECK_RET(setaff(0, &all), 0);
	atomic_store(&thread_tid, 0);
	atomic_store(&thread_stop, 0);
	pthread_create(&th, NULL, narrowing_thread, NULL);
	while (atomic_load(&thread_tid) == 0)
		sched_yield();
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &all), "caller's mask changed: %d CPUs",
	      CPU_COUNT(&set));
	CHECK(getaff(atomic_load(&thread_tid), &set) > 0 && CPU_EQUAL(&set, &one),
	      "thread's mask by tid: %d CPUs", CPU_COUNT(&set));
	CHECK_RET(setaff(atomic_load(&thread_tid), &all), 0);
	CHECK(getaff(atomic_load(&thread_tid), &set) > 0 && CPU_EQUAL(&set, &all),
	      "thread's mask set by tid: %d CPUs", CPU_COUNT(&set));
	atomic_store(&thread_stop, 1);
	pthread_join(th, NULL);

	/* Across users: reading is allowed, setting needs the same uid (or CAP_SYS_NICE). */
	in_child(child_unprivileged, &self);
	CHECK(getaff(0, &set) > 0 && CPU_EQUAL(&set, &all), "mask changed by another user");
	setaff(0, &all);
}

/* --- clone and arch_prctl with a non-canonical FS base --- */
static void check_tls(void)
{
	static const uint64_t bad[] = { 1ULL << 47, 0x7ffffffff000ULL, ~0ULL };
	unsigned long fs = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long r = syscall(SYS_clone, CLONE_SETTLS | SIGCHLD, 0, NULL, NULL, bad[i]);

		if (r == 0)
			syscall(SYS_exit_group, 7); /* no TLS here: leave at once */
		CHECK(r == -1 && errno == EPERM, "clone with TLS %#llx: %ld (%s)",
		      (unsigned long long)bad[i], r, r == -1 ? strerror(errno) : "created");
		if (r > 0)
			waitpid((pid_t)r, NULL, 0);
	}
	/* The highest canonical page is the limit: below it, a child is made. */
	{
		long r = syscall(SYS_clone, CLONE_SETTLS | SIGCHLD, 0, NULL, NULL,
				 0x7fffffffe000ULL);
		int st = 0;

		if (r == 0)
			syscall(SYS_exit_group, 7);
		CHECK(r > 0, "clone with TLS below the limit: %s", strerror(errno));
		if (r > 0) {
			CHECK_RET(waitpid((pid_t)r, &st, 0), r);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#x", st);
		}
	}
	CHECK_RET(syscall(SYS_arch_prctl, ARCH_GET_FS, &fs), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long r = syscall(SYS_arch_prctl, ARCH_SET_FS, bad[i]);

		if (r == 0)
			syscall(SYS_arch_prctl, ARCH_SET_FS, fs); /* restore before any TLS use */
		CHECK(r == -1, "arch_prctl(ARCH_SET_FS, %#llx) accepted",
		      (unsigned long long)bad[i]);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	check_affinity();
	check_tls();
	return finish();
}
