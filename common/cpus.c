/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU set the process started with; see cpus.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpus.h"

static cpu_set_t start_set;
static int start_err = -1; /* -1: not read yet */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

void husk_cpus_init(void)
{
	pthread_mutex_lock(&start_lock);
	if (start_err < 0)
		start_err = sched_getaffinity(0, sizeof(start_set), &start_set) == 0 ? 0 : 1;
	pthread_mutex_unlock(&start_lock);
}

int husk_cpus_get(cpu_set_t *set)
{
	husk_cpus_init();
	if (start_err)
		return -1;
	memcpy(set, &start_set, sizeof(*set));
	return 0;
}

int husk_cpu_pinning(void)
{
	const char *pin = getenv("HUSK_CPU_PIN");

	return !(pin && !strcmp(pin, "0"));
}

void husk_start_cpu_publish(void)
{
	int cpu = sched_getcpu();
	char buf[16];

	/* An explicit value (-1: none) stays. */
	if (!husk_cpu_pinning() || cpu < 0 || getenv("HUSK_START_CPU"))
		return;
	snprintf(buf, sizeof(buf), "%d", cpu);
	setenv("HUSK_START_CPU", buf, 1);
}

int husk_start_cpu(void)
{
	const char *s = getenv("HUSK_START_CPU");
	cpu_set_t set;
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v >= CPU_SETSIZE || husk_cpus_get(&set) < 0 || !CPU_ISSET(v, &set) ||
	    CPU_COUNT(&set) < 2)
		return -1;
	return (int)v;
}

int husk_cpu_pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set) == 0 ? 0 : -1;
}

int husk_start_cpu_pin(void)
{
	int cpu = husk_start_cpu();

	return cpu < 0 ? -1 : husk_cpu_pin(0, cpu);
}
