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

#include <stddef.h>
#include <stdint.h>

struct kernel;

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

/* A process the OOM killer may choose. */
struct oom_candidate {
	int32_t pid;
	uint64_t rss_pages; /* resident pages of its address space */
};

/*
 * The victim among c[0..n): the largest rss_pages; among equals the one listed first. Processes
 * without resident memory are never chosen (killing them frees nothing). Returns its index, or
 * -1 when there is none.
 */
int oom_choose_victim(const struct oom_candidate *c, size_t n);

#endif
