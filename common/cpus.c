/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU set the process started with; see cpus.h. */
#include <pthread.h>
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
