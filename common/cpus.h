/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPUs the process was given when it started. The sentry pins each of its task threads to
 * one CPU (sentry/kernel/task.c), so sched_getaffinity(2) of a thread says little about the
 * sandbox: everything that counts or numbers the sandbox's CPUs (the guest's sched_getaffinity,
 * /proc/cpuinfo, /sys, getcpu) asks here instead.
 */
#ifndef HUSK_COMMON_CPUS_H
#define HUSK_COMMON_CPUS_H

#include <sched.h>
#include <sys/types.h>

/* Reads the set now (once; later calls do nothing). main() calls it before any thread pins. */
void husk_cpus_init(void);

/* Copies the start-time set into *set. Returns 0, or -1 if it could not be read. */
int husk_cpus_get(cpu_set_t *set);

/* False when HUSK_CPU_PIN=0 in the environment: husk then pins nothing (task.c, the gofer). */
int husk_cpu_pinning(void);

/*
 * Binds host thread tid (0: the caller) to the one CPU cpu. Returns 0, or -1 (cpu out of range,
 * or sched_setaffinity failed: a cpuset without that CPU, a filter without the call). Everything
 * husk pins goes through here; a failed pin only costs speed.
 */
int husk_cpu_pin(pid_t tid, int cpu);

/*
 * The CPU a sandbox's processes start on: husk picks one (its own, at launch) and passes it to
 * the sentry and the gofers as HUSK_START_CPU, so that the sentry's first task thread and the
 * gofers begin on one CPU (their hand-overs are cheapest there; sentry/kernel/task.c).
 * husk_start_cpu_publish sets it (unless HUSK_CPU_PIN=0); husk_start_cpu returns it, or -1
 * when unset, malformed or not in the process's CPU set. husk_start_cpu_pin pins the calling
 * thread there (the gofer) and returns 0, or -1 if there is nothing to do or it failed.
 */
void husk_start_cpu_publish(void);
int husk_start_cpu(void);
int husk_start_cpu_pin(void);

#endif
