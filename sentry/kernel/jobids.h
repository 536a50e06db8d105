/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A task's job-control identities and whether a session still has its leader: what the
 * terminals (sentry/fs/devpts, sentry/fs/host/hosttty.c) check for job control and controlling
 * terminals. Inline so that whoever links a terminal links nothing more.
 */
#ifndef HUSK_SENTRY_KERNEL_JOBIDS_H
#define HUSK_SENTRY_KERNEL_JOBIDS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

struct job_ids {
	int32_t pid, pgid, sid;
};

/* t's process, process group and session ids (under the kernel's tree lock). */
static inline void task_job_ids(struct task *t, struct job_ids *ids)
{
	pthread_mutex_lock(&t->k->tree_lock);
	ids->pid = t->tg->pid;
	ids->pgid = t->tg->pgid;
	ids->sid = t->tg->sid;
	pthread_mutex_unlock(&t->k->tree_lock);
}

/* Whether session sid still has its leader (Linux drops the tty when the leader exits). */
static inline bool kernel_session_alive(struct kernel *k, int32_t sid)
{
	struct thread_group *tg;
	bool alive;

	if (!k || sid <= 0)
		return false;
	tg = kernel_find_tg(k, sid);
	if (!tg)
		return false;
	pthread_mutex_lock(&tg->lock);
	alive = tg->state == TG_RUNNING;
	pthread_mutex_unlock(&tg->lock);
	tg_put(tg);
	return alive;
}

#endif
