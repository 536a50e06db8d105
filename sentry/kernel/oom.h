/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's memory and pids limits, and its OOM killer (Linux's memory cgroup at memory.max
 * with no swap): when a page fault or a tmpfs write would take the memory file's usage past the
 * limit (memfile_charge), the process with the largest resident memory is killed with SIGKILL
 * and the allocation is tried again once its memory is gone. See sentry/mm/README.md
 * "Accounting" for what counts.
 *
 * Locks: one OOM kill at a time (a private mutex, taken with no mm->lock held; a tmpfs write may
 * hold its filesystem's lock). Candidates are collected under k->tree_lock and tg->lock; their
 * resident memory is measured after both are dropped (mm_rss_pages).
 */
#ifndef HUSK_SENTRY_KERNEL_OOM_H
#define HUSK_SENTRY_KERNEL_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kernel;

/* The range of /proc/PID/oom_score_adj (Linux's OOM_SCORE_ADJ_MIN, _MAX). */
#define OOM_SCORE_ADJ_MIN (-1000)
#define OOM_SCORE_ADJ_MAX 1000

/* Installs the OOM killer as k->mf's hook (main, after memfile_init, before the first task). */
void oom_init(struct kernel *k);

/*
 * Sets the memory limit to limit bytes (0: none). Past the current usage, as a write to Linux's
 * memory.max, processes are OOM-killed until the usage fits; the limit holds even when nothing
 * is left to kill (then logged). Any thread that holds no mm->lock. Returns 0.
 */
int oom_set_memory_limit(struct kernel *k, uint64_t limit);

/*
 * husk update: memory and pids are each -1 (no limit), -2 (unchanged) or the new limit (bytes,
 * tasks; a pids limit below the current count only stops new forks). Returns 0, or -EINVAL
 * for a value out of range (then nothing changes).
 */
int oom_update_limits(struct kernel *k, int64_t memory, int64_t pids);

/* The sandbox's usage against its limits (husk events --stats, CONTROL_STATS). */
struct oom_stats {
	uint64_t memory_usage, memory_limit, memory_peak; /* bytes; limit 0: none */
	uint64_t oom_kills;
	int64_t pids_current, pids_limit; /* tasks; limit 0: none */
};

/* Fills *out from k's memory file and task count (any thread). */
void oom_stats(struct kernel *k, struct oom_stats *out);

/*
 * Waits (a non-task thread: the control server's) until k's OOM killer has killed more than
 * seen processes in all, or until *cancel is true (set it, then call oom_wake_waiters).
 * Returns the number of OOM kills so far.
 */
uint64_t oom_wait_kills(struct kernel *k, uint64_t seen, const bool *cancel);

/* Wakes every oom_wait_kills caller to look at its cancel flag again. */
void oom_wake_waiters(void);

/* A process the OOM killer may choose. */
struct oom_candidate {
	int32_t pid;
	uint64_t rss_pages; /* resident pages of its address space */
	int oom_score_adj; /* its /proc/PID/oom_score_adj, -1000..1000 */
};

/*
 * A process's badness as Linux's oom_badness: its resident pages plus oom_score_adj thousandths
 * of total_pages (the memory the sandbox may use), so 1000 makes it the first chosen and a
 * negative value protects it. INT64_MIN for oom_score_adj -1000 (never chosen).
 */
int64_t oom_badness(uint64_t rss_pages, int oom_score_adj, uint64_t total_pages);

/*
 * The victim among c[0..n) (total_pages as oom_badness's): the largest badness; among equals
 * the one listed first. Processes without resident memory (killing them frees nothing) or with
 * oom_score_adj -1000 are never chosen. Returns its index, or -1 when there is none.
 */
int oom_choose_victim(const struct oom_candidate *c, size_t n, uint64_t total_pages);

/* The badness score /proc/PID/oom_score shows (Linux's proc_oom_score: 0..2000 scaled by 2/3). */
unsigned long oom_score(uint64_t rss_pages, int oom_score_adj, uint64_t total_pages);

/*
 * The memory the sandbox may use, in pages, as the OOM killer weighs oom_score_adj against it:
 * the memory limit, or the host's RAM when there is none.
 */
uint64_t oom_total_pages(struct kernel *k);

struct task;
struct thread_group;

/*
 * Writes tg's oom_score_adj as /proc/PID/oom_score_adj (legacy: false) or oom_adj (legacy:
 * true, value already converted to the oom_score_adj scale) by writer (NULL: the runtime, with
 * every right). Lowering below tg->oom_score_adj_min needs CAP_SYS_RESOURCE (-EACCES); a
 * non-legacy write by a writer with CAP_SYS_RESOURCE also sets oom_score_adj_min (Linux's
 * __set_oom_adj). Returns 0, -EINVAL (out of -1000..1000) or -EACCES.
 */
int oom_set_score_adj(struct task *writer, struct thread_group *tg, int value, bool legacy);

#endif
