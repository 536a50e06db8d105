/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU time of guest threads, for backends whose guest threads are threads of a stub process
 * (ptrace, seccomp). The host gives the sentry the CPU clock of a stub *process* (clock_gettime
 * of the clock id made from its pid: any process may read it), not of a thread of another
 * process. Each guest thread's time is the stub's, split among the threads that were running
 * guest code as it advanced: a sample reads the stub's clock and adds the time since the previous
 * sample to `share` divided by the number of running threads; a thread leaving guest code is
 * credited `share` minus its value when it entered. Time that passes while no thread runs (the
 * stub's own work: mapping changes, the tail of a stop) belongs to `owner`, the thread that ran
 * last.
 *
 * Samples are taken only where the split needs one: when a thread enters or leaves guest code
 * while another one runs, when a thread other than the owner enters, and when the time is read.
 * A thread that runs alone, however many threads the space has, costs no sample per switch. One
 * sample costs one host clock_gettime (about 0.4 us on the development VM).
 */
#ifndef HUSK_SENTRY_PLATFORM_CPUSPLIT_H
#define HUSK_SENTRY_PLATFORM_CPUSPLIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cpu_split_thread {
	uint64_t ns; /* guest CPU time credited so far */
	uint64_t enter_share; /* the split's share when it last entered guest code */
	bool running; /* between cpu_split_enter and cpu_split_leave */
};

struct cpu_split {
	pthread_mutex_t lock; /* protects everything here and every thread's fields */
	pid_t pid; /* the stub process whose clock is split */
	int reaped; /* atomic: the stub was reaped, its pid may name another process */
	uint64_t last; /* the stub's process CPU clock (ns) at the last sample */
	uint64_t share; /* sum over samples of each running thread's share (ns) */
	int running; /* threads between enter and leave */
	struct cpu_split_thread *owner; /* owner of the time not yet sampled while none runs */
};

void cpu_split_init(struct cpu_split *s, pid_t pid);
void cpu_split_destroy(struct cpu_split *s);
/* The stub was reaped: later samples keep the last value instead of reading its clock. */
void cpu_split_reaped(struct cpu_split *s);

void cpu_split_thread_init(struct cpu_split_thread *t);
/* Thread t is about to run guest code / stopped running it. Its driving thread only. */
void cpu_split_enter(struct cpu_split *s, struct cpu_split_thread *t);
void cpu_split_leave(struct cpu_split *s, struct cpu_split_thread *t);
/* Samples and restarts t's count at 0; with forget, stops crediting t (it goes away). */
void cpu_split_thread_reset(struct cpu_split *s, struct cpu_split_thread *t, bool forget);
static inline void cpu_split_thread_forget(struct cpu_split *s, struct cpu_split_thread *t)
{
	cpu_split_thread_reset(s, t, true);
}
/* t's guest CPU time in ns, never decreasing. Any thread. */
uint64_t cpu_split_read(struct cpu_split *s, struct cpu_split_thread *t);

#endif
