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

/* Reads the set now (once; later calls do nothing). main() calls it before any thread pins. */
void husk_cpus_init(void);

/* Copies the start-time set into *set. Returns 0, or -1 if it could not be read. */
int husk_cpus_get(cpu_set_t *set);

#endif
