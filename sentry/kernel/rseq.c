/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Restartable sequences: see rseq.h. The CPU number is the one getcpu(2) gives (the host CPU
 * of the sentry thread, within the guest's numbering); the sentry does not see the host
 * preempting a stub, so critical sections are aborted at every return from the sentry (system
 * calls, faults, interruptions, signals) rather than at preemption.
 */
#include <sched.h>
#include <stddef.h>

#include "common/cpus.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/rseq.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"

#define RSEQ_FLAG_UNREGISTER 1
#define ORIG_RSEQ_SIZE 32
#define RSEQ_CPU_ID_UNINITIALIZED ((uint32_t)-1)
#define USER_ADDR_LIMIT 0x800000000000ULL

/* struct rseq's fields the kernel writes (x86-64 layout). */
#define RSEQ_OFF_CPU_ID_START 0
#define RSEQ_OFF_CPU_ID 4
#define RSEQ_OFF_RSEQ_CS 8
#define RSEQ_OFF_NODE_ID 20
#define RSEQ_OFF_MM_CID 24

struct linux_rseq_cs {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
};

/* The guest's CPU count, as getcpu(2) and sched_getaffinity(2) number them (read once). */
static int guest_ncpus; /* atomic; 0 until read */

static uint32_t guest_cpu(void)
{
	int cpu = sched_getcpu(), n = __atomic_load_n(&guest_ncpus, __ATOMIC_RELAXED);

	if (!n) {
		cpu_set_t set;

		n = 1;
		if (husk_cpus_get(&set) == 0 && CPU_COUNT(&set) > 0)
			n = CPU_COUNT(&set);
		__atomic_store_n(&guest_ncpus, n, __ATOMIC_RELAXED);
	}
	return cpu < 0 ? 0 : (uint32_t)cpu % (uint32_t)n;
}

/* Writes cpu_id_start, cpu_id, node_id and mm_cid. 0 or -EFAULT. */
static int rseq_write_ids(struct task *t, uint32_t cpu, uint32_t cpu_start)
{
	uint32_t ids[2] = { cpu_start, cpu }, zero[2] = { 0, 0 };

	if (mm_copy_out(t->mm, t->rseq + RSEQ_OFF_CPU_ID_START, ids, sizeof(ids)) != sizeof(ids))
		return -EFAULT;
	/* node_id and mm_cid exist when the area is longer than the original 32 bytes' fields. */
	if (mm_copy_out(t->mm, t->rseq + RSEQ_OFF_NODE_ID, zero, sizeof(zero)) != sizeof(zero))
		return -EFAULT;
	return 0;
}

long rseq_syscall(struct task *t, uint64_t addr, uint32_t len, int flags, uint32_t sig)
{
	uint32_t cpu;

	if (flags & RSEQ_FLAG_UNREGISTER) {
		if (flags & ~RSEQ_FLAG_UNREGISTER)
			return -EINVAL;
		if (!t->rseq || t->rseq != addr)
			return -EINVAL;
		if (len != t->rseq_len)
			return -EINVAL;
		if (sig != t->rseq_sig)
			return -EPERM;
		if (rseq_write_ids(t, RSEQ_CPU_ID_UNINITIALIZED, 0) < 0)
			return -EFAULT;
		t->rseq = t->rseq_len = 0;
		t->rseq_sig = 0;
		return 0;
	}
	if (flags)
		return -EINVAL;
	if (t->rseq) {
		if (len != t->rseq_len || addr != t->rseq)
			return -EINVAL;
		if (sig != t->rseq_sig)
			return -EPERM;
		return -EBUSY;
	}
	if (len < ORIG_RSEQ_SIZE || addr % ORIG_RSEQ_SIZE)
		return -EINVAL;
	if (addr >= USER_ADDR_LIMIT || len > USER_ADDR_LIMIT - addr)
		return -EFAULT;
	t->rseq = addr;
	t->rseq_len = len;
	t->rseq_sig = sig;
	cpu = guest_cpu();
	if (rseq_write_ids(t, cpu, cpu) < 0) {
		t->rseq = t->rseq_len = 0;
		t->rseq_sig = 0;
		return -EFAULT;
	}
	t->rseq_cpu = cpu;
	return 0;
}

/* Aborts the critical section t is in, if any. 0, or -EFAULT/-EINVAL: force SIGSEGV. */
static int rseq_fixup_ip(struct task *t)
{
	struct linux_rseq_cs cs;
	uint64_t cs_addr, ip = t->regs.rip, zero = 0, end;
	uint32_t sig;

	if (mm_copy_in(t->mm, &cs_addr, t->rseq + RSEQ_OFF_RSEQ_CS, sizeof(cs_addr)) !=
	    sizeof(cs_addr))
		return -EFAULT;
	if (!cs_addr)
		return 0;
	if (cs_addr >= USER_ADDR_LIMIT || mm_copy_in(t->mm, &cs, cs_addr, sizeof(cs)) != sizeof(cs))
		return -EFAULT;
	end = cs.start_ip + cs.post_commit_offset;
	if (cs.version > 0 || end < cs.start_ip || end > USER_ADDR_LIMIT ||
	    (cs.abort_ip - cs.start_ip) < cs.post_commit_offset)
		return -EINVAL;
	/* Outside the section (it ended): the kernel clears rseq_cs lazily, as here. */
	if (ip - cs.start_ip >= cs.post_commit_offset) {
		if (mm_copy_out(t->mm, t->rseq + RSEQ_OFF_RSEQ_CS, &zero, sizeof(zero)) !=
		    sizeof(zero))
			return -EFAULT;
		return 0;
	}
	if (cs.abort_ip < 4 || mm_copy_in(t->mm, &sig, cs.abort_ip - 4, sizeof(sig)) != sizeof(sig))
		return -EFAULT;
	if (sig != t->rseq_sig)
		return -EINVAL;
	if (mm_copy_out(t->mm, t->rseq + RSEQ_OFF_RSEQ_CS, &zero, sizeof(zero)) != sizeof(zero))
		return -EFAULT;
	t->regs.rip = cs.abort_ip;
	return 0;
}

void rseq_return_to_guest(struct task *t)
{
	uint32_t cpu;

	if (!t->rseq)
		return;
	cpu = guest_cpu();
	if (cpu != t->rseq_cpu) {
		if (rseq_write_ids(t, cpu, cpu) < 0)
			goto fault;
		t->rseq_cpu = cpu;
	}
	if (rseq_fixup_ip(t) < 0)
		goto fault;
	return;
fault:
	signal_force_sigsegv(t);
}
