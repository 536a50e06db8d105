/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rseq(2): glibc's registration at thread start (and what sched_getcpu reads from it), the
 * checks of a second registration and of unregistration, a program's own area, the cpu_id of a
 * new thread, and a critical section aborted by a signal (int3 inside it: the handler returns
 * to the abort handler).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/rseq.h>
#include <sys/wait.h>

#include "child.h"

#define SIG 0x53053053

/* rseq_cs_test(&area->rseq_cs, &rseq_test_cs): 0 if the section ran to its end, 1 if aborted. */
int rseq_cs_test(void *rseq_cs, const void *cs);
extern const char rseq_test_cs[];
__asm__(".pushsection .text\n"
	".globl rseq_cs_test\n"
	".type rseq_cs_test,@function\n"
	"rseq_cs_test:\n"
	"	movq %rsi, (%rdi)\n"
	"1:	int3\n"
	"	movl $0, %eax\n"
	"2:	movq $0, (%rdi)\n"
	"	ret\n"
	"	.long 0x53053053\n"
	"3:	movl $1, %eax\n"
	"	movq $0, (%rdi)\n"
	"	ret\n"
	".popsection\n"
	".pushsection .data\n"
	".balign 32\n"
	".globl rseq_test_cs\n"
	"rseq_test_cs:\n"
	"	.long 0, 0\n"
	"	.quad 1b, 2b - 1b, 3b\n"
	".popsection\n");

static struct rseq *glibc_area(void)
{
	return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

static long cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

static void *thread_fn(void *arg)
{
	struct rseq *r = glibc_area();

	*(int *)arg = r->cpu_id < cpus() && (void *)r != arg;
	return NULL;
}

static void on_trap(int sig)
{
}

static void own_area(void *arg)
{
	static struct rseq mine __attribute__((aligned(32)));
	struct rseq *g = glibc_area();
	char *raw = malloc(128);

	/* A forked child keeps its parent's registration. */
	CHECK(g->cpu_id < cpus(), "cpu_id in a forked child: %u", g->cpu_id);
	CHECK_ERR(syscall(SYS_rseq, g, 32, 1, SIG + 1), EPERM);
	CHECK_ERR(syscall(SYS_rseq, g, 64, 1, SIG), EINVAL);
	CHECK_ERR(syscall(SYS_rseq, &mine, 32, 1, SIG), EINVAL);
	CHECK_ERR(syscall(SYS_rseq, g, 32, 3, SIG), EINVAL);
	CHECK_RET(syscall(SYS_rseq, g, 32, 1, SIG), 0);
	CHECK((int)g->cpu_id == RSEQ_CPU_ID_UNINITIALIZED, "cpu_id after unregistering: %d",
	      (int)g->cpu_id);
	CHECK_ERR(syscall(SYS_rseq, g, 32, 1, SIG), EINVAL);
	/* Its own area: the length and alignment rules. */
	CHECK_ERR(syscall(SYS_rseq, &mine, 16, 0, SIG), EINVAL);
	CHECK_ERR(syscall(SYS_rseq, (char *)&mine + 8, 32, 0, SIG), EINVAL);
	CHECK_ERR(syscall(SYS_rseq, raw ? (char *)(((uintptr_t)raw + 31) & ~31UL) + 4 : NULL, 32, 0,
			  SIG),
		  EINVAL);
	mine.cpu_id = RSEQ_CPU_ID_REGISTRATION_FAILED;
	CHECK_RET(syscall(SYS_rseq, &mine, 32, 0, SIG), 0);
	CHECK(mine.cpu_id < cpus() && mine.cpu_id_start < cpus(), "cpu_id %d, start %u",
	      (int)mine.cpu_id, mine.cpu_id_start);
	CHECK_ERR(syscall(SYS_rseq, &mine, 32, 0, SIG), EBUSY);
	CHECK_ERR(syscall(SYS_rseq, &mine, 32, 0, SIG + 1), EPERM);
	CHECK_ERR(syscall(SYS_rseq, g, 32, 0, SIG), EINVAL);
	/* A critical section interrupted by a signal goes to its abort handler. */
	signal(SIGTRAP, on_trap);
	CHECK_RET(rseq_cs_test(&mine.rseq_cs, rseq_test_cs), 1);
	CHECK(mine.rseq_cs == 0, "rseq_cs left at %#llx", (unsigned long long)mine.rseq_cs);
	CHECK_RET(syscall(SYS_rseq, &mine, 32, 1, SIG), 0);
	/* Without a registration the same section runs to its end. */
	CHECK_RET(rseq_cs_test(&mine.rseq_cs, rseq_test_cs), 0);
	free(raw);
}

int main(void)
{
	struct rseq *g = glibc_area();
	pthread_t th;
	int ok = 0;

	/* glibc registered this thread's area at start (Linux 4.18+, glibc 2.35+). */
	CHECK(__rseq_size > 0, "glibc did not register rseq");
	if (__rseq_size == 0)
		return finish();
	CHECK(g->cpu_id < cpus() && g->cpu_id_start < cpus(), "cpu_id %d cpu_id_start %u",
	      (int)g->cpu_id, g->cpu_id_start);
	CHECK(sched_getcpu() >= 0 && sched_getcpu() < cpus(), "sched_getcpu %d", sched_getcpu());
	/* A second registration of the same thread. */
	CHECK_ERR(syscall(SYS_rseq, g, 32, 0, SIG), EBUSY);
	CHECK_ERR(syscall(SYS_rseq, g, 32, 0, SIG + 1), EPERM);
	CHECK_ERR(syscall(SYS_rseq, g, 64, 0, SIG), EINVAL);
	CHECK_ERR(syscall(SYS_rseq, (char *)g + 32, 32, 0, SIG), EINVAL);
	CHECK_ERR(syscall(SYS_rseq, g, 32, 2, SIG), EINVAL);
	/* Each thread has its own. */
	CHECK_RET(pthread_create(&th, NULL, thread_fn, &ok), 0);
	pthread_join(th, NULL);
	CHECK(ok == 1, "a new thread's rseq area");
	in_child(own_area, NULL);
	return finish();
}
