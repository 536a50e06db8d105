/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Nested pid numbering (man 7 pid_namespaces): the numbers a task has in each pid namespace it
 * is visible in, lookups of a number in a namespace, and the translations the system calls make
 * into the caller's namespace. The object (struct pid_ns) and its references are nsproxy.h's.
 *
 * The sandbox's initial namespace (level 0) numbers every task by its tid, exactly as before
 * pid namespaces: a caller there sees global numbers untranslated. A task of a process whose
 * namespace has level L also has ns_nr[1..L], its number in the namespaces of levels 1..L on
 * the way down to its own. A number is visible to a viewer whose namespace is an ancestor of (or
 * the same as) the task's; elsewhere it is 0 (a parent outside: getppid 0).
 *
 * Functions named pid_ns_* expect k->tree_lock held; the task_v* ones take it.
 */
#ifndef HUSK_SENTRY_KERNEL_PIDNS_H
#define HUSK_SENTRY_KERNEL_PIDNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/task.h"

/*
 * t's tid and pid in its own pid namespace (Linux's task_pid_vnr and task_tgid_vnr for t
 * itself): what it is told and what it writes in futex words. Inline: no lock (set at link,
 * never changed but by exec's de-threading, on t's own thread).
 */
static inline int32_t task_own_tid(const struct task *t)
{
	return t->tg && t->tg->pidns ? t->ns_nr[t->tg->pidns->level] : t->tid;
}

static inline int32_t task_own_pid(const struct task *t)
{
	return t->tg->pidns && t->tg->leader ? t->tg->leader->ns_nr[t->tg->pidns->level] :
					       t->tg->pid;
}

/* Whether outer is inner or one of its ancestors (NULL: the initial namespace). */
bool pid_ns_is_ancestor(const struct pid_ns *outer, const struct pid_ns *inner);
/* t's tid as namespace ns sees it (NULL: the initial one), 0 when t is not visible there. */
int32_t pid_ns_task_nr(const struct task *t, const struct pid_ns *ns);
/* tg's pid (its leader's tid) as ns sees it, 0 when not visible. */
int32_t pid_ns_tg_nr(const struct thread_group *tg, const struct pid_ns *ns);
/* A global number (a tid, pgid or sid) as ns sees it: 0 when no task has it or not visible. */
int32_t pid_ns_nr_of(struct kernel *k, int32_t global, const struct pid_ns *ns);
/* The task whose number in ns is nr (no reference), or NULL. */
struct task *pid_ns_lookup(struct kernel *k, const struct pid_ns *ns, int32_t nr);
/*
 * Gives task c (linked as a thread, or as the leader of the new process tg) its numbers in the
 * nested namespaces of ns, its process's namespace, down from ns to level 1: the first of a
 * fresh namespace is 1 and becomes its reaper. -ENOMEM when one of them lost its pid 1
 * (Linux's answer), -EAGAIN when one is full.
 */
int pid_ns_alloc(struct kernel *k, struct task *c, struct thread_group *tg, struct pid_ns *ns);

/* Called by pid_remove for a task of a nested namespace: wakes pid_ns_wait_empty. */
void pid_ns_task_gone(void);
/* Whether ns or one of its ancestors lost its pid 1 (its processes are being killed). */
bool pid_ns_dying(const struct pid_ns *ns);
/*
 * Linux's zap_pid_ns_processes, the waiting half: init (the ending pid 1 of ns) waits until no
 * other live process of ns or of a namespace below it is left (zombies and traced tasks are not
 * waited for) (k->tree_lock held; it is
 * released while waiting).
 */
void pid_ns_wait_empty(struct kernel *k, struct pid_ns *ns, struct thread_group *init);

/* The caller's view (each takes k->tree_lock; viewer is the calling task). */
int32_t task_vtid(struct task *viewer, struct task *t);
int32_t task_vpid(struct task *viewer, struct thread_group *tg);
/* A global number (pgid, sid, ppid) as the viewer sees it. */
int32_t task_vnr(struct task *viewer, int32_t global);
/*
 * A number the viewer gave (a pid, tid, pgid), as the global number, or 0 when no task of the
 * viewer's namespace has it. nr <= 0 is returned as is.
 */
int32_t task_global_nr(struct task *viewer, int32_t nr);
/* The task with tid nr in the viewer's namespace, a new reference, or NULL. */
struct task *task_find_vtask(struct task *viewer, int32_t nr);
/* The (not reaped) process with pid nr in the viewer's namespace, a new reference, or NULL. */
struct thread_group *task_find_vtg(struct task *viewer, int32_t nr);
/* Whether the viewer's namespace sees tg (always, from the initial one). */
bool task_sees_tg(struct task *viewer, const struct thread_group *tg);

#endif
