/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs, per process: /proc/PID/ and /proc/PID/task/TID/ (stat, statm, status, cmdline,
 * environ, comm, maps, smaps_rollup, auxv, fd/, fdinfo/, exe, cwd, root, mounts, mountinfo,
 * limits, cgroup, mem, task/). Values come from the thread group, the task, its mm, fd table and fs
 * context; a process that is gone gives -ESRCH to open and -ENOENT to lookups.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/auxv.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/proc/proc_ids.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/internal.h"

/* The task of n (its thread), or -ESRCH. */
#define NODE_TASK(t, n)                    \
	do {                               \
		(t) = pseudo_node_task(n); \
		if (!(t))                  \
			return -ESRCH;     \
	} while (0)

/* A referenced mm of t, or NULL (a zombie has none). */
static struct mm *task_mm(struct task *t)
{
	return task_get_mm(t);
}

/* --- memory figures --- */

struct mm_stats {
	uint64_t size, data, stack, exec, lib, file, anon, shared, locked;
	/* Resident bytes: Linux's RssAnon, RssFile, RssShmem; VmRSS is their sum. */
	uint64_t rss_anon, rss_file, rss_shmem;
	uint64_t start_code, end_code, start_data, end_data;
	uint64_t stack_top;
	bool have_code;
	struct file *exe; /* referenced: the file mapped at AT_PHDR */
	uint64_t phdr, entry;
};

static int stats_vma(const struct mm_vma_info *v, void *arg)
{
	struct mm_stats *s = arg;
	uint64_t len = v->end - v->start;

	s->size += len;
	/*
	 * Shared anonymous memory is shmem; a private file mapping's pages are the file's until
	 * written (copy-on-write pieces), then anonymous.
	 */
	uint64_t res = v->resident * PAGE_SIZE, cow = v->resident_cow * PAGE_SIZE;
	if (v->obj) {
		s->rss_shmem += res;
	} else if (!(v->flags & MM_VMA_FILE)) {
		s->rss_anon += res;
	} else if (v->flags & MM_VMA_SHARED) {
		s->rss_file += res;
	} else {
		s->rss_file += cow;
		s->rss_anon += res - cow;
	}
	if (v->flags & MM_VMA_FILE) {
		s->file += len;
		if (!s->exe && ((s->phdr >= v->start && s->phdr < v->end) ||
				(!s->phdr && s->entry >= v->start && s->entry < v->end))) {
			s->exe = v->file;
			file_get(s->exe);
		}
	} else {
		s->anon += len;
	}
	if (v->flags & MM_VMA_SHARED)
		s->shared += len;
	if (v->start <= s->stack_top - 1 && s->stack_top - 1 < v->end)
		s->stack += len;
	else if ((v->prot & PROT_WRITE) && !(v->flags & MM_VMA_SHARED))
		s->data += len;
	if ((v->prot & PROT_EXEC) && (v->flags & MM_VMA_FILE)) {
		if (s->exe && v->file == s->exe) {
			s->exec += len;
			if (!s->have_code) {
				s->start_code = v->start;
				s->have_code = true;
			}
			s->end_code = v->end;
		} else {
			s->lib += len;
		}
	}
	return 0;
}

/* Gathers the figures of mm; the caller puts s->exe. */
static void mm_stats(struct mm *mm, struct mm_stats *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&mm->lock);
	for (int i = 0; i + 1 < mm->auxv_len; i += 2) {
		if (mm->auxv[i] == LINUX_AT_PHDR)
			s->phdr = mm->auxv[i + 1];
		else if (mm->auxv[i] == LINUX_AT_ENTRY)
			s->entry = mm->auxv[i + 1];
	}
	s->stack_top = mm->stack_top;
	/* The data segment the loader recorded (Linux's start_data, end_data). */
	s->start_data = mm->start_data;
	s->end_data = mm->end_data;
	pthread_mutex_unlock(&mm->lock);
	mm_for_each_mapping(mm, true, stats_vma, s);
}

/* --- stat, statm, status --- */

/* Linux's task state letter for t seen by the caller. */
static char task_state(struct task *t, const char **name)
{
	struct thread_group *tg = t->tg;
	char c = 'S';

	*name = "sleeping";
	pthread_mutex_lock(&tg->lock);
	if (tg->state == TG_ZOMBIE || t->exiting)
		c = 'Z', *name = "zombie";
	else if (tg->stopped)
		c = 'T', *name = "stopped";
	pthread_mutex_unlock(&tg->lock);
	if (c == 'S' && (t == task_current() || __atomic_load_n(&t->in_guest, __ATOMIC_RELAXED)))
		c = 'R', *name = "running";
	return c;
}

struct tree_ids {
	int32_t pid, tid, ppid, pgid, sid; /* in the proc instance's pid namespace */
	/* NStgid, NSpid, NSpgid, NSsid: from that namespace's level down to the task's own */
	int nlevels;
	int32_t ns_tgid[PID_NS_MAX_LEVEL + 1], ns_pid[PID_NS_MAX_LEVEL + 1];
	int32_t ns_pgid[PID_NS_MAX_LEVEL + 1], ns_sid[PID_NS_MAX_LEVEL + 1];
};

/* t's ids as the pid namespace of n's proc instance sees them. */
static void tree_ids(struct pseudo_node *n, struct task *t, struct tree_ids *ids)
{
	struct pid_ns *ns = pseudo_fs_of(n)->pidns, *own;
	struct kernel *k = t->k;
	int from, to;

	pthread_mutex_lock(&k->tree_lock);
	if (!ns) {
		ids->pid = t->tg->pid;
		ids->tid = t->tid;
		ids->ppid = t->tg->ppid;
		ids->pgid = t->tg->pgid;
		ids->sid = t->tg->sid;
	} else {
		ids->pid = pid_ns_tg_nr(t->tg, ns);
		ids->tid = pid_ns_task_nr(t, ns);
		ids->ppid = t->tg->parent ? pid_ns_tg_nr(t->tg->parent, ns) : 0;
		ids->pgid = pid_ns_nr_of(k, t->tg->pgid, ns);
		ids->sid = pid_ns_nr_of(k, t->tg->sid, ns);
	}
	/* One column per level, from the proc's down to the task's (Linux's NSpid). */
	from = ns ? ns->level : 0;
	to = t->tg->pidns ? t->tg->pidns->level : 0;
	ids->nlevels = 0;
	for (int l = from; l <= to && ids->pid; l++) {
		own = t->tg->pidns;
		while (own && own->level > l)
			own = own->parent;
		ids->ns_tgid[ids->nlevels] = pid_ns_tg_nr(t->tg, own);
		ids->ns_pid[ids->nlevels] = pid_ns_task_nr(t, own);
		ids->ns_pgid[ids->nlevels] = pid_ns_nr_of(k, t->tg->pgid, own);
		ids->ns_sid[ids->nlevels] = pid_ns_nr_of(k, t->tg->sid, own);
		ids->nlevels++;
	}
	pthread_mutex_unlock(&k->tree_lock);
}

static void print_ns_ids(FILE *out, const char *name, const int32_t *v, int n)
{
	fprintf(out, "%s:", name);
	for (int i = 0; i < n; i++)
		fprintf(out, "\t%d", (int)v[i]);
	fputc('\n', out);
}

static int gen_stat(struct pseudo_node *n, FILE *out)
{
	struct thread_group *tg;
	struct tree_ids ids;
	struct mm_stats s;
	struct task *t;
	struct mm *mm;
	const char *sname;
	uint64_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0, brk = 0, utime, stime;
	uint64_t cutime, cstime, start, boot, sigpend, sigign = 0, sigcgt = 0;
	struct cputime times;
	int32_t tty_nr = 0, tpgid = -1;
	int nthreads, exit_code;
	char state;

	NODE_TASK(t, n);
	tg = t->tg;
	tree_ids(n, t, &ids);
	state = task_state(t, &sname);
	mm = task_mm(t);
	if (mm) {
		mm_stats(mm, &s);
		pthread_mutex_lock(&mm->lock);
		arg_start = mm->arg_start, arg_end = mm->arg_end;
		env_start = mm->env_start, env_end = mm->env_end;
		brk = mm->brk;
		pthread_mutex_unlock(&mm->lock);
		mm_put(mm);
		if (s.exe)
			file_put(s.exe);
	} else {
		memset(&s, 0, sizeof(s));
	}
	devpts_ctty_of(t, &tty_nr, &tpgid);
	pthread_mutex_lock(&tg->lock);
	nthreads = tg->nr_threads;
	/* /proc/PID/stat has the process's times, /proc/PID/task/TID/stat the thread's. */
	times = n->ent->id < 200 ? cputime_tg_locked(tg) : cputime_task(t);
	utime = times.utime, stime = times.stime;
	cutime = tg->cutime_ns, cstime = tg->cstime_ns;
	start = tg->start_ns;
	exit_code = tg->state == TG_ZOMBIE ? tg->exit_status : 0;
	pthread_mutex_unlock(&tg->lock);
	pthread_mutex_lock(&tg->sighand->lock);
	sigpend = t->pending.set | tg->shared_pending.set;
	for (int i = 0; i < LINUX_NSIG; i++) {
		if (tg->sighand->actions[i].handler == 1)
			sigign |= 1ULL << i;
		else if (tg->sighand->actions[i].handler > 1)
			sigcgt |= 1ULL << i;
	}
	pthread_mutex_unlock(&tg->sighand->lock);
	/* Host time stamps, on the guest's clock (without the pauses before them). */
	start = vtime_host_to_guest_mono(start);
	boot = vtime_host_to_guest_mono(t->k->boot_ns);
	start = start > boot ? start - boot : 0;

	/* Fields 1-22: ids, state, terminal, faults, times, scheduling, start time. */
	fprintf(out, "%d (%s) %c %d %d %d %d %d %u 0 0 0 0 %llu %llu %llu %llu 20 0 %d 0 %llu ",
		(int)ids.tid, t->comm, state, (int)ids.ppid, (int)ids.pgid, (int)ids.sid,
		(int)tty_nr, (int)tpgid, 0x400000u /* PF_RANDOMIZE */, proc_ticks(utime),
		proc_ticks(stime), proc_ticks(cutime), proc_ticks(cstime), nthreads,
		proc_ticks(start));
	/* 23-37: memory, code and stack, signals (the obsolete 31-34 as Linux: low 31 bits). */
	fprintf(out,
		"%" PRIu64 " %" PRIu64 " %llu %" PRIu64 " %" PRIu64 " %" PRIu64 " 0 0 %" PRIu64
		" %" PRIu64 " %" PRIu64 " %" PRIu64 " 0 0 0 ",
		s.size, (s.rss_anon + s.rss_file + s.rss_shmem) / 4096,
		(unsigned long long)RLIM_INFINITY, s.start_code, s.end_code, s.stack_top,
		sigpend & (uint64_t)0x7fffffff, t->sigmask & (uint64_t)0x7fffffff,
		sigign & (uint64_t)0x7fffffff, sigcgt & (uint64_t)0x7fffffff);
	/* 38-52: exit signal, cpu, policy, data and brk, argument and environment areas. */
	fprintf(out,
		"%d 0 0 0 0 0 0 %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		" %" PRIu64 " %" PRIu64 " %d\n",
		tg->exit_signal, s.start_data, s.end_data, brk, arg_start, arg_end, env_start,
		env_end, exit_code);
	task_put(t);
	return 0;
}

static int gen_statm(struct pseudo_node *n, FILE *out)
{
	struct mm_stats s;
	struct task *t;
	struct mm *mm;

	NODE_TASK(t, n);
	mm = task_mm(t);
	task_put(t);
	if (!mm) {
		fputs("0 0 0 0 0 0 0\n", out);
		return 0;
	}
	mm_stats(mm, &s);
	mm_put(mm);
	if (s.exe)
		file_put(s.exe);
	fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " 0 %" PRIu64 " 0\n",
		s.size / 4096, (s.rss_anon + s.rss_file + s.rss_shmem) / 4096,
		(s.rss_file + s.rss_shmem) / 4096, s.exec / 4096, (s.data + s.stack) / 4096);
	return 0;
}

static void print_kb(FILE *out, const char *name, uint64_t bytes)
{
	fprintf(out, "%s:\t%8" PRIu64 " kB\n", name, bytes >> 10);
}

static int gen_status(struct pseudo_node *n, FILE *out)
{
	struct thread_group *tg;
	struct tree_ids ids;
	struct mm_stats s;
	struct cred c;
	struct task *t;
	struct fs_context *fs;
	struct mm *mm;
	const char *sname;
	uint64_t sigpnd, shdpnd, sigign = 0, sigcgt = 0, rss = 0, hwm_kb = 0;
	int32_t tracer;
	int nthreads;
	unsigned int umask = 022, ncpu = proc_ncpus();
	char state;

	NODE_TASK(t, n);
	tg = t->tg;
	tree_ids(n, t, &ids);
	state = task_state(t, &sname);
	c = t->cred;
	fs = task_get_fs(t);
	if (fs) {
		umask = fs_context_umask(fs);
		fs_context_put(fs);
	}
	mm = task_mm(t);
	if (mm) {
		mm_stats(mm, &s);
		mm_put(mm);
		if (s.exe)
			file_put(s.exe);
		rss = s.rss_anon + s.rss_file + s.rss_shmem;
		/*
		 * The peak: the process's highest resident size sampled (ru_maxrss), sampled
		 * now if it is the caller (another task's mm may go away meanwhile).
		 */
		if (t == task_current())
			cputime_rss_sample(t);
	}
	pthread_mutex_lock(&tg->lock);
	hwm_kb = tg->maxrss_kb;
	nthreads = tg->nr_threads;
	pthread_mutex_unlock(&tg->lock);
	pthread_mutex_lock(&tg->sighand->lock);
	sigpnd = t->pending.set;
	shdpnd = tg->shared_pending.set;
	for (int i = 0; i < LINUX_NSIG; i++) {
		if (tg->sighand->actions[i].handler == 1)
			sigign |= 1ULL << i;
		else if (tg->sighand->actions[i].handler > 1)
			sigcgt |= 1ULL << i;
	}
	pthread_mutex_unlock(&tg->sighand->lock);

	/* As the proc's pid namespace sees the tracer (0 outside it). */
	tracer = ptrace_tracer_pid(t);
	if (pseudo_fs_of(n)->pidns) {
		pthread_mutex_lock(&t->k->tree_lock);
		tracer = pid_ns_nr_of(t->k, tracer, pseudo_fs_of(n)->pidns);
		pthread_mutex_unlock(&t->k->tree_lock);
	}
	fprintf(out,
		"Name:\t%s\nUmask:\t%04o\nState:\t%c (%s)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n"
		"PPid:\t%d\nTracerPid:\t%d\nUid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n"
		"FDSize:\t%d\nGroups:\t",
		t->comm, umask, state, sname, (int)ids.pid, (int)ids.tid, (int)ids.ppid,
		(int)tracer, c.uid, c.euid, c.suid, c.fsuid, c.gid, c.egid, c.sgid, c.fsgid, 64);
	for (int i = 0; i < c.ngroups && i < 32; i++)
		fprintf(out, "%u ", c.groups[i]);
	fputc('\n', out);
	print_ns_ids(out, "NStgid", ids.ns_tgid, ids.nlevels);
	print_ns_ids(out, "NSpid", ids.ns_pid, ids.nlevels);
	print_ns_ids(out, "NSpgid", ids.ns_pgid, ids.nlevels);
	print_ns_ids(out, "NSsid", ids.ns_sid, ids.nlevels);
	fprintf(out, "Kthread:\t0\n");
	if (mm) {
		print_kb(out, "VmPeak", s.size);
		print_kb(out, "VmSize", s.size);
		print_kb(out, "VmLck", 0);
		print_kb(out, "VmPin", 0);
		print_kb(out, "VmHWM", MAX(hwm_kb * 1024, rss));
		print_kb(out, "VmRSS", rss);
		print_kb(out, "RssAnon", s.rss_anon);
		print_kb(out, "RssFile", s.rss_file);
		print_kb(out, "RssShmem", s.rss_shmem);
		print_kb(out, "VmData", s.data);
		print_kb(out, "VmStk", s.stack);
		print_kb(out, "VmExe", s.exec);
		print_kb(out, "VmLib", s.lib);
		print_kb(out, "VmPTE", 0);
		print_kb(out, "VmSwap", 0);
		fprintf(out, "HugetlbPages:\t%8d kB\n", 0);
	}
	fprintf(out,
		"CoreDumping:\t0\nTHP_enabled:\t0\nuntag_mask:\t0xffffffffffffffff\nThreads:\t%d\n"
		"SigQ:\t0/%" PRIu64 "\nSigPnd:\t%016" PRIx64 "\nShdPnd:\t%016" PRIx64
		"\nSigBlk:\t%016" PRIx64 "\nSigIgn:\t%016" PRIx64 "\nSigCgt:\t%016" PRIx64
		"\nCapInh:\t%016" PRIx64 "\nCapPrm:\t%016" PRIx64 "\nCapEff:\t%016" PRIx64
		"\nCapBnd:\t%016" PRIx64 "\nCapAmb:\t%016" PRIx64 "\nNoNewPrivs:\t%d\n"
		"Seccomp:\t0\nSeccomp_filters:\t0\nSpeculation_Store_Bypass:\tthread vulnerable\n"
		"SpeculationIndirectBranch:\tconditional enabled\n",
		nthreads, (uint64_t)tg->rlimits[RLIMIT_SIGPENDING].rlim_cur, sigpnd, shdpnd,
		t->sigmask, sigign, sigcgt, c.cap_inheritable, c.cap_permitted, c.cap_effective,
		c.cap_bounding, c.cap_ambient, t->no_new_privs ? 1 : 0);
	fprintf(out, "Cpus_allowed:\t%x\nCpus_allowed_list:\t0",
		ncpu >= 32 ? ~0u : (1u << ncpu) - 1);
	if (ncpu > 1)
		fprintf(out, "-%u", ncpu - 1);
	fputs("\nMems_allowed:\t1\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t0\n"
	      "nonvoluntary_ctxt_switches:\t0\n",
	      out);
	task_put(t);
	return 0;
}

/* --- cmdline, environ, comm, auxv --- */

static int copy_area(struct pseudo_node *n, FILE *out, bool env)
{
	struct task *t;
	struct mm *mm;
	uint64_t start, end;
	char *buf;
	ssize_t got;

	NODE_TASK(t, n);
	mm = task_mm(t);
	task_put(t);
	if (!mm)
		return 0;
	pthread_mutex_lock(&mm->lock);
	start = env ? mm->env_start : mm->arg_start;
	end = env ? mm->env_end : mm->arg_end;
	pthread_mutex_unlock(&mm->lock);
	if (end <= start || end - start > (1u << 21)) {
		mm_put(mm);
		return 0;
	}
	buf = malloc(end - start);
	if (!buf) {
		mm_put(mm);
		return -ENOMEM;
	}
	got = mm_copy_in(mm, buf, start, end - start);
	mm_put(mm);
	if (got > 0)
		fwrite(buf, 1, (size_t)got, out);
	free(buf);
	return 0;
}

static int gen_cmdline(struct pseudo_node *n, FILE *out)
{
	return copy_area(n, out, false);
}

/*
 * syscall: as Linux's proc_pid_syscall, the call a task is in ("NR ARGS... SP PC", in hex but
 * the number), "running" for one running guest code, "-1 SP PC" for one stopped or between the
 * two. Another task's registers are read while it is in a call (its arguments stay in them until
 * it returns) or not running guest code, so they are stable but for a call that just ended.
 */
static int gen_syscall(struct pseudo_node *n, FILE *out)
{
	struct task *t;
	long nr1;

	NODE_TASK(t, n);
	nr1 = __atomic_load_n(&t->call_nr1, __ATOMIC_ACQUIRE);
	if (nr1 > 0)
		fprintf(out, "%ld 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx\n",
			nr1 - 1, (unsigned long long)t->regs.rdi, (unsigned long long)t->regs.rsi,
			(unsigned long long)t->regs.rdx, (unsigned long long)t->regs.r10,
			(unsigned long long)t->regs.r8, (unsigned long long)t->regs.r9,
			(unsigned long long)t->regs.rsp, (unsigned long long)t->regs.rip);
	else if (t == task_current() || __atomic_load_n(&t->in_guest, __ATOMIC_RELAXED))
		fputs("running\n", out);
	else
		fprintf(out, "-1 0x%llx 0x%llx\n", (unsigned long long)t->regs.rsp,
			(unsigned long long)t->regs.rip);
	task_put(t);
	return 0;
}

static int gen_environ(struct pseudo_node *n, FILE *out)
{
	return copy_area(n, out, true);
}

static int gen_comm(struct pseudo_node *n, FILE *out)
{
	struct task *t;

	NODE_TASK(t, n);
	fprintf(out, "%.15s\n", t->comm);
	task_put(t);
	return 0;
}

/* Writing comm renames the thread (prctl(PR_SET_NAME)); only threads of the same process. */
static ssize_t write_comm(struct pseudo_node *n, const char *buf, size_t len)
{
	struct task *cur = task_current();
	struct task *t = pseudo_node_task(n);
	size_t l = MIN(len, sizeof(t->comm) - 1);

	if (!t)
		return -ESRCH;
	if (cur && cur->tg != t->tg) {
		task_put(t);
		return -EINVAL;
	}
	if (l && buf[l - 1] == '\n')
		l--;
	memcpy(t->comm, buf, l);
	t->comm[l] = '\0';
	task_put(t);
	return (ssize_t)len;
}

static int gen_auxv(struct pseudo_node *n, FILE *out)
{
	struct task *t;
	struct mm *mm;

	NODE_TASK(t, n);
	mm = task_mm(t);
	task_put(t);
	if (!mm)
		return 0;
	pthread_mutex_lock(&mm->lock);
	fwrite(mm->auxv, sizeof(mm->auxv[0]), (size_t)mm->auxv_len, out);
	pthread_mutex_unlock(&mm->lock);
	mm_put(mm);
	return 0;
}

/* --- maps, smaps_rollup --- */

struct maps_ctx {
	FILE *out;
	struct task *viewer;
	uint64_t stack_top;
	uint64_t rss, anon, file;
	uint64_t lo, hi;
};

static int maps_vma(const struct mm_vma_info *v, void *arg)
{
	struct maps_ctx *c = arg;
	char name[VFS_PATH_MAX];
	struct vfs_attr attr = { 0 };
	const char *label = NULL;
	int len;

	if (v->flags & MM_VMA_VVAR) {
		label = "[vvar]";
	} else if (v->flags & MM_VMA_VDSO) {
		label = "[vdso]";
	} else if (v->file) {
		file_getattr(v->file, &attr);
		if (proc_file_name(c->viewer, v->file, name, sizeof(name)) >= 0)
			label = name;
	} else if (v->obj) {
		/* Shared anonymous memory: Linux's shmem file, 00:01, named after /dev/zero. */
		label = "/dev/zero (deleted)";
		attr.dev = 1;
		attr.ino = v->obj;
	} else if (v->flags & MM_VMA_HEAP) {
		label = "[heap]";
	} else if (v->start <= c->stack_top - 1 && c->stack_top - 1 < v->end) {
		label = "[stack]";
	}
	len = fprintf(c->out,
		      "%08" PRIx64 "-%08" PRIx64 " %c%c%c%c %08" PRIx64 " %02x:%02x %" PRIu64 " ",
		      v->start, v->end, (v->prot & PROT_READ) ? 'r' : '-',
		      (v->prot & PROT_WRITE) ? 'w' : '-', (v->prot & PROT_EXEC) ? 'x' : '-',
		      (v->flags & (MM_VMA_SHARED | MM_VMA_VVAR)) == MM_VMA_SHARED ? 's' : 'p',
		      (v->file || v->obj) ? v->file_off : 0,
		      (unsigned int)((attr.dev >> 8) & 0xfff),
		      (unsigned int)((attr.dev & 0xff) | ((attr.dev >> 12) & ~0xffULL)), attr.ino);
	if (label) {
		/* Linux pads the header to 73 columns before the name (seq_pad). */
		if (len < 73)
			fprintf(c->out, "%*s", 73 - len, "");
		fputs(label, c->out);
	}
	fputc('\n', c->out);
	return 0;
}

static int gen_maps(struct pseudo_node *n, FILE *out)
{
	struct maps_ctx c = { .out = out, .viewer = task_current() };
	struct task *t;
	struct mm *mm;

	NODE_TASK(t, n);
	mm = task_mm(t);
	task_put(t);
	if (!mm)
		return 0;
	pthread_mutex_lock(&mm->lock);
	c.stack_top = mm->stack_top;
	pthread_mutex_unlock(&mm->lock);
	mm_for_each_mapping(mm, false, maps_vma, &c);
	mm_put(mm);
	return 0;
}

static int rollup_vma(const struct mm_vma_info *v, void *arg)
{
	struct maps_ctx *c = arg;

	if (!c->lo)
		c->lo = v->start;
	c->hi = v->end;
	c->rss += v->resident * PAGE_SIZE;
	if (v->file)
		c->file += v->resident * PAGE_SIZE;
	else
		c->anon += v->resident * PAGE_SIZE;
	return 0;
}

static int gen_smaps_rollup(struct pseudo_node *n, FILE *out)
{
	struct maps_ctx c = { .out = out };
	struct task *t;
	struct mm *mm;
	int len;

	NODE_TASK(t, n);
	mm = task_mm(t);
	task_put(t);
	if (!mm)
		return 0;
	mm_for_each_mapping(mm, true, rollup_vma, &c);
	mm_put(mm);
	len = fprintf(out, "%08" PRIx64 "-%08" PRIx64 " ---p 00000000 00:00 0 ", c.lo, c.hi);
	fprintf(out, "%*s[rollup]\n", len < 73 ? 73 - len : 0, "");
	print_kb(out, "Rss:           ", c.rss);
	fprintf(out,
		"Pss:            %8" PRIu64 " kB\nPss_Dirty:      %8" PRIu64 " kB\n"
		"Pss_Anon:       %8" PRIu64 " kB\nPss_File:       %8" PRIu64 " kB\n"
		"Pss_Shmem:      %8d kB\nShared_Clean:   %8d kB\nShared_Dirty:   %8d kB\n"
		"Private_Clean:  %8" PRIu64 " kB\nPrivate_Dirty:  %8" PRIu64 " kB\n"
		"Referenced:     %8" PRIu64 " kB\nAnonymous:      %8" PRIu64 " kB\n",
		c.rss >> 10, c.anon >> 10, c.anon >> 10, c.file >> 10, 0, 0, 0, c.file >> 10,
		c.anon >> 10, c.rss >> 10, c.anon >> 10);
	fputs("KSM:                   0 kB\nLazyFree:              0 kB\n"
	      "AnonHugePages:         0 kB\nShmemPmdMapped:        0 kB\n"
	      "FilePmdMapped:         0 kB\nShared_Hugetlb:        0 kB\n"
	      "Private_Hugetlb:       0 kB\nSwap:                  0 kB\n"
	      "SwapPss:               0 kB\nLocked:                0 kB\n",
	      out);
	return 0;
}

/* --- limits, cgroup, mounts --- */

static const struct {
	const char *name, *unit;
	int res;
} limit_names[] = {
	{ "Max cpu time", "seconds", RLIMIT_CPU },
	{ "Max file size", "bytes", RLIMIT_FSIZE },
	{ "Max data size", "bytes", RLIMIT_DATA },
	{ "Max stack size", "bytes", RLIMIT_STACK },
	{ "Max core file size", "bytes", RLIMIT_CORE },
	{ "Max resident set", "bytes", RLIMIT_RSS },
	{ "Max processes", "processes", RLIMIT_NPROC },
	{ "Max open files", "files", RLIMIT_NOFILE },
	{ "Max locked memory", "bytes", RLIMIT_MEMLOCK },
	{ "Max address space", "bytes", RLIMIT_AS },
	{ "Max file locks", "locks", RLIMIT_LOCKS },
	{ "Max pending signals", "signals", RLIMIT_SIGPENDING },
	{ "Max msgqueue size", "bytes", RLIMIT_MSGQUEUE },
	{ "Max nice priority", "", RLIMIT_NICE },
	{ "Max realtime priority", "", RLIMIT_RTPRIO },
	{ "Max realtime timeout", "us", RLIMIT_RTTIME },
};

static void print_limit(FILE *out, rlim_t v)
{
	if (v == RLIM_INFINITY)
		fprintf(out, "%-21s", "unlimited");
	else
		fprintf(out, "%-21llu", (unsigned long long)v);
}

static int gen_limits(struct pseudo_node *n, FILE *out)
{
	struct rlimit lim[LINUX_RLIM_NLIMITS];
	struct task *t;

	NODE_TASK(t, n);
	pthread_mutex_lock(&t->tg->lock);
	memcpy(lim, t->tg->rlimits, sizeof(lim));
	pthread_mutex_unlock(&t->tg->lock);
	task_put(t);
	fprintf(out, "%-25s %-20s %-20s %-10s\n", "Limit", "Soft Limit", "Hard Limit", "Units");
	for (size_t i = 0; i < ARRAY_SIZE(limit_names); i++) {
		fprintf(out, "%-25s ", limit_names[i].name);
		print_limit(out, lim[limit_names[i].res].rlim_cur);
		print_limit(out, lim[limit_names[i].res].rlim_max);
		fprintf(out, "%-10s\n", limit_names[i].unit);
	}
	return 0;
}

/*
 * The process's cgroup v2 path (sentry/fs/cgroup/) relative to the reader's cgroup namespace
 * root (man 7 cgroup_namespaces); no v1 hierarchies. Weak: proc is also linked without the
 * kernel's cgroups (unit tests), which shows the root.
 */
#pragma weak cgroup_tg_path

static int gen_cgroup(struct pseudo_node *n, FILE *out)
{
	char path[VFS_PATH_MAX] = "/";
	struct task *t;
	int r = 0;

	NODE_TASK(t, n);
	if (cgroup_tg_path) {
		struct task *cur = task_current();
		struct nsproxy *ns = cur ? task_get_nsproxy(cur) : NULL;

		r = cgroup_tg_path(t->k, t->tg, ns ? ns->cgroup->root : NULL, path, sizeof(path));
		nsproxy_put(ns);
	}
	task_put(t);
	if (r < 0)
		return r;
	fprintf(out, "0::%s\n", path);
	return 0;
}

static int gen_mounts_any(struct pseudo_node *n, FILE *out, bool info)
{
	struct task *t;
	int err;

	NODE_TASK(t, n);
	err = proc_gen_mounts(t->k, t, out, info);
	task_put(t);
	return err;
}

static int gen_mounts(struct pseudo_node *n, FILE *out)
{
	return gen_mounts_any(n, out, false);
}

static int gen_mountinfo(struct pseudo_node *n, FILE *out)
{
	return gen_mounts_any(n, out, true);
}

/* --- exe, cwd, root --- */

/* The path behind a magic link of n: which 0 exe, 1 cwd, 2 root. */
static int pid_link_path(struct pseudo_node *n, int which, struct vfs_path *out)
{
	struct task *t = pseudo_node_task(n);
	struct fs_context *fs;
	struct mm_stats s;
	struct mm *mm;
	int err = -ENOENT;

	if (!t)
		return -ENOENT;
	if (which == 0) {
		mm = task_mm(t);
		if (mm) {
			mm_stats(mm, &s);
			mm_put(mm);
			if (s.exe) {
				err = vfs_file_path(s.exe, out);
				file_put(s.exe);
			}
		}
	} else if ((fs = task_get_fs(t))) {
		if (which == 1)
			fs_context_get_cwd(fs, out);
		else
			fs_context_get_root(fs, out);
		fs_context_put(fs);
		err = out->node ? 0 : -ENOENT;
	}
	task_put(t);
	return err;
}

static ssize_t pid_link_readlink(struct pseudo_node *n, int which, char *buf, size_t len)
{
	struct task *viewer = task_current();
	struct vfs_path p, root;
	char *s;
	int err = pid_link_path(n, which, &p);

	if (err < 0)
		return err;
	s = malloc(VFS_PATH_MAX);
	if (!s) {
		vfs_path_put(&p);
		return -ENOMEM;
	}
	if (viewer)
		vfs_task_root(viewer, &root);
	else
		vfs_path_copy(&root, &p);
	err = vfs_path_to_string(viewer ? &root : &p, &p, s, VFS_PATH_MAX);
	vfs_path_put(&root);
	vfs_path_put(&p);
	if (err >= 0)
		err = (int)pseudo_copy_link(s, buf, len);
	free(s);
	return err;
}

static ssize_t exe_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	return pid_link_readlink(n, 0, buf, len);
}

static ssize_t cwd_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	return pid_link_readlink(n, 1, buf, len);
}

static ssize_t root_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	return pid_link_readlink(n, 2, buf, len);
}

static int exe_get_link(struct pseudo_node *n, struct vfs_path *out)
{
	return pid_link_path(n, 0, out);
}

static int cwd_get_link(struct pseudo_node *n, struct vfs_path *out)
{
	return pid_link_path(n, 1, out);
}

static int root_get_link(struct pseudo_node *n, struct vfs_path *out)
{
	return pid_link_path(n, 2, out);
}

/* --- fd/ and fdinfo/ --- */

/* The file at n->fd in n's task's table (a new reference), or NULL. */
static struct file *node_file(struct pseudo_node *n, bool *cloexec)
{
	struct task *t = pseudo_node_task(n);
	struct fdtable *fdt;
	struct file *f = NULL;

	if (!t)
		return NULL;
	fdt = task_get_fdt(t);
	if (fdt) {
		f = fdtable_lookup(fdt, n->fd);
		if (f && cloexec)
			*cloexec = fdtable_get_cloexec(fdt, n->fd) == 1;
		fdtable_put(fdt);
	}
	task_put(t);
	return f;
}

static ssize_t fd_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	struct file *f = node_file(n, NULL);
	char *s;
	int err;

	if (!f)
		return -ENOENT;
	s = malloc(VFS_PATH_MAX);
	if (!s) {
		file_put(f);
		return -ENOMEM;
	}
	err = proc_file_name(task_current(), f, s, VFS_PATH_MAX);
	file_put(f);
	if (err >= 0)
		err = (int)pseudo_copy_link(s, buf, len);
	free(s);
	return err;
}

/*
 * Reopening a file that has no name and whose node cannot be opened (pipes, host stdio): the
 * open of /proc/PID/fd/N gives a new open file that forwards to the one at fd N (Linux reopens
 * a pipe as a FIFO: the same pipe; its description's flags are the new open's).
 */
static ssize_t reopen_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct file *o = f->priv;

	return o->ops->read ? o->ops->read(o, iov, iovcnt, NULL) : -EINVAL;
}

static ssize_t reopen_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct file *o = f->priv;

	return o->ops->write ? o->ops->write(o, iov, iovcnt, NULL) : -EINVAL;
}

static long reopen_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	struct file *o = f->priv;

	return o->ops->ioctl ? o->ops->ioctl(o, t, cmd, arg) : -ENOTTY;
}

static unsigned int reopen_poll(struct file *f, struct waitq **wq)
{
	struct file *o = f->priv;

	if (o->ops->poll)
		return o->ops->poll(o, wq);
	if (wq)
		*wq = NULL;
	return POLLIN | POLLOUT;
}

static int reopen_getattr(struct file *f, struct vfs_attr *attr)
{
	return file_getattr(f->priv, attr);
}

static void reopen_release(struct file *f)
{
	file_put(f->priv);
}

static const struct file_ops reopen_fops = {
	.read = reopen_read,
	.write = reopen_write,
	.ioctl = reopen_ioctl,
	.poll = reopen_poll,
	.getattr = reopen_getattr,
	.release = reopen_release,
};

static struct file *reopen_open(struct pseudo_node *n, int flags)
{
	struct file *o = node_file(n, NULL), *f;

	if (!o)
		return ERR_PTR(-ENOENT);
	f = file_alloc(&reopen_fops, flags, o);
	if (!f) {
		file_put(o);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

/* The reopenable node shows the attributes of the file it forwards to. */
static int reopen_node_getattr(struct pseudo_node *n, struct vfs_attr *attr)
{
	struct file *o = node_file(n, NULL);
	uint64_t dev = attr->dev;
	int err;

	if (!o)
		return -ENOENT;
	err = file_getattr(o, attr);
	file_put(o);
	attr->dev = dev;
	attr->mode = S_IFIFO | (attr->mode & 07777);
	return err;
}

/*
 * chown/chmod of the link reach the file it forwards to (a pipe keeps them, as Linux's pipefs
 * inode; a host file has no setattr: -EROFS). The VFS checked the caller against the attributes
 * reopen_node_getattr showed, which are that file's.
 */
static int reopen_node_setattr(struct pseudo_node *n, const struct vfs_setattr *sa)
{
	struct file *o = node_file(n, NULL);
	int err;

	if (!o)
		return -ENOENT;
	err = o->node && o->node->ops->setattr ? o->node->ops->setattr(o->node, sa) : -EROFS;
	file_put(o);
	return err;
}

static const struct pseudo_ent reopen_ent = {
	.name = "fd",
	.mode = S_IFIFO | 0600,
	.open = reopen_open,
	.getattr = reopen_node_getattr,
	.setattr = reopen_node_setattr,
	.id = 302,
};

/*
 * Files with no name whose node cannot be opened (pipes, host stdio of any type) reopen; epoll
 * files do not (Linux: -ENXIO). eventfds cannot be told from host files here and reopen too.
 */
static bool file_is_reopenable(struct file *f)
{
	if (!f->node || f->mnt != vfs_anon_mount() || f->node->ops->open)
		return false;
	return !file_is_epoll(f);
}

static int fd_get_link(struct pseudo_node *n, struct vfs_path *out)
{
	struct pseudo_fs *fs = pseudo_fs_of(n);
	struct file *f = node_file(n, NULL);
	struct vfs_node *parent, *r;
	int err;

	if (!f)
		return -ENOENT;
	if (file_is_reopenable(f) && fs->mnt) {
		/* A node of ours, beside the link, that opens as the same pipe or host file. */
		file_put(f);
		parent = vfs_node_get_parent(&n->base);
		if (!parent)
			return -ENOENT;
		r = pseudo_node_new_at(pseudo_node_of(parent), &reopen_ent, n->base.name, n->pid,
				       n->tid, n->fd);
		vfs_node_put(parent);
		if (IS_ERR(r))
			return (int)PTR_ERR(r);
		out->node = r;
		out->mnt = fs->mnt;
		vfs_mount_get(out->mnt);
		return 0;
	}
	err = vfs_file_path(f, out);
	file_put(f);
	return err == -EBADF ? -ENOENT : err;
}

/* fd/N shows the open mode in its permission bits, as Linux (lr-x, l-wx, lrwx). */
static int fd_link_getattr(struct pseudo_node *n, struct vfs_attr *attr)
{
	struct file *f = node_file(n, NULL);
	int acc;

	if (!f)
		return -ENOENT;
	acc = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_ACCMODE;
	file_put(f);
	attr->mode = S_IFLNK;
	if (acc == O_RDONLY || acc == O_RDWR)
		attr->mode |= S_IRUSR | S_IXUSR;
	if (acc == O_WRONLY || acc == O_RDWR)
		attr->mode |= S_IWUSR | S_IXUSR;
	return 0;
}

static int gen_fdinfo(struct pseudo_node *n, FILE *out)
{
	bool cloexec = false;
	struct file *f = node_file(n, &cloexec);
	struct vfs_attr attr = { 0 };
	int64_t pos;

	if (!f)
		return -ENOENT;
	file_getattr(f, &attr);
	pos = __atomic_load_n(&f->pos, __ATOMIC_RELAXED);
	fprintf(out, "pos:\t%lld\nflags:\t0%o\nmnt_id:\t%" PRIu64 "\nino:\t%" PRIu64 "\n",
		(long long)pos,
		(unsigned int)__atomic_load_n(&f->flags, __ATOMIC_RELAXED) |
			0100000 /* O_LARGEFILE */ | (cloexec ? O_CLOEXEC : 0),
		f->mnt ? f->mnt->id : 0, attr.ino);
	file_put(f);
	return 0;
}

static const struct pseudo_ent fd_link_ent = {
	.name = "fd",
	.mode = S_IFLNK | 0700,
	.readlink = fd_readlink,
	.get_link = fd_get_link,
	.getattr = fd_link_getattr,
	.id = 300,
};

static const struct pseudo_ent fdinfo_file_ent = {
	.name = "fdinfo",
	.mode = S_IFREG | 0444,
	.gen = gen_fdinfo,
	.id = 301,
};

static struct vfs_node *fd_dyn_lookup_any(struct pseudo_node *dir, const char *name,
					  const struct pseudo_ent *ent)
{
	long fd = proc_parse_num(name);
	struct pseudo_node *n;
	struct file *f;

	if (fd < 0)
		return ERR_PTR(-ENOENT);
	n = pseudo_node_of(pseudo_node_new_at(dir, ent, name, dir->pid, dir->tid, (int)fd));
	if (IS_ERR(n))
		return (struct vfs_node *)n;
	f = node_file(n, NULL);
	if (!f) {
		vfs_node_put(&n->base);
		return ERR_PTR(-ENOENT);
	}
	file_put(f);
	return &n->base;
}

static struct vfs_node *fd_dyn_lookup(struct pseudo_node *dir, const char *name)
{
	return fd_dyn_lookup_any(dir, name, &fd_link_ent);
}

static struct vfs_node *fdinfo_dyn_lookup(struct pseudo_node *dir, const char *name)
{
	return fd_dyn_lookup_any(dir, name, &fdinfo_file_ent);
}

static int fd_dyn_iterate_any(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e,
			      int64_t base, const struct pseudo_ent *ent)
{
	struct task *t = pseudo_node_task(dir);
	struct fdtable *fdt;

	if (!t)
		return 0;
	fdt = task_get_fdt(t);
	task_put(t);
	if (!fdt)
		return 0;
	for (;;) {
		struct file *f;
		char name[16];
		int fd = fdtable_next(fdt, *idx > INT32_MAX ? INT32_MAX : (int)*idx, &f);
		int len;

		if (fd < 0)
			break;
		file_put(f);
		len = snprintf(name, sizeof(name), "%d", fd);
		if (!e->emit(e, name, (size_t)len, pseudo_ino(ent, dir->pid, dir->tid, fd),
			     pseudo_dtype(ent->mode), base + fd + 1))
			break;
		*idx = fd + 1;
	}
	fdtable_put(fdt);
	return 0;
}

static int fd_dyn_iterate(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e,
			  int64_t base)
{
	return fd_dyn_iterate_any(dir, idx, e, base, &fd_link_ent);
}

static int fdinfo_dyn_iterate(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e,
			      int64_t base)
{
	return fd_dyn_iterate_any(dir, idx, e, base, &fdinfo_file_ent);
}

static const struct pseudo_dyn fd_dyn = { .lookup = fd_dyn_lookup, .iterate = fd_dyn_iterate };
static const struct pseudo_dyn fdinfo_dyn = {
	.lookup = fdinfo_dyn_lookup,
	.iterate = fdinfo_dyn_iterate,
};

/* --- task/ --- */

static const struct pseudo_ent tid_dir_ent;

static struct vfs_node *task_dyn_lookup(struct pseudo_node *dir, const char *name)
{
	long tid = proc_parse_num(name);
	struct task *t;
	bool same;

	if (tid <= 0)
		return ERR_PTR(-ENOENT);
	if (pseudo_fs_of(dir)->pidns) {
		/* The name is the proc's pid namespace's number: the node keeps the tid. */
		struct kernel *k = pseudo_fs_of(dir)->k;

		pthread_mutex_lock(&k->tree_lock);
		t = pid_ns_lookup(k, pseudo_fs_of(dir)->pidns, (int32_t)tid);
		tid = t ? t->tid : 0;
		pthread_mutex_unlock(&k->tree_lock);
		if (!tid)
			return ERR_PTR(-ENOENT);
	}
	t = kernel_find_task(pseudo_fs_of(dir)->k, (int32_t)tid);
	if (!t)
		return ERR_PTR(-ENOENT);
	same = task_pid(t) == dir->pid;
	task_put(t);
	if (!same)
		return ERR_PTR(-ENOENT);
	return pseudo_node_new_at(dir, &tid_dir_ent, name, dir->pid, (int32_t)tid, -1);
}

static int task_dyn_iterate(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e,
			    int64_t base)
{
	struct task *t = pseudo_node_task(dir), *it;
	struct thread_group *tg;
	struct pid_ns *ns;
	int32_t tids[256];
	size_t n = 0;

	if (!t)
		return 0;
	tg = t->tg;
	ns = pseudo_fs_of(dir)->pidns;
	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(it, &tg->tasks, tg_link) {
		/* Named by the proc's pid namespace's numbers (set when linked, then fixed). */
		int32_t nr = ns ? it->ns_nr[ns->level] : it->tid;

		if (n < ARRAY_SIZE(tids) && nr >= *idx)
			tids[n++] = nr;
	}
	pthread_mutex_unlock(&tg->lock);
	task_put(t);
	/* Insertion sort: few threads. */
	for (size_t i = 1; i < n; i++) {
		int32_t v = tids[i];
		size_t j = i;

		for (; j > 0 && tids[j - 1] > v; j--)
			tids[j] = tids[j - 1];
		tids[j] = v;
	}
	for (size_t i = 0; i < n; i++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "%d", (int)tids[i]);

		if (!e->emit(e, name, (size_t)len, pseudo_ino(&tid_dir_ent, dir->pid, tids[i], -1),
			     DT_DIR, base + tids[i] + 1))
			break;
		*idx = tids[i] + 1;
	}
	return 0;
}

static const struct pseudo_dyn task_dyn = {
	.lookup = task_dyn_lookup,
	.iterate = task_dyn_iterate,
};

/*
 * /proc/PID/task's link count is Linux's: 2 plus one per thread (a subdirectory each).
 * Chromium's zygote takes 3 for "single-threaded" before it forks (and aborts otherwise).
 */
static int task_dir_getattr(struct pseudo_node *n, struct vfs_attr *attr)
{
	struct task *t = pseudo_node_task(n);

	if (!t)
		return -ENOENT;
	pthread_mutex_lock(&t->tg->lock);
	attr->nlink = 2 + (uint32_t)t->tg->nr_threads;
	pthread_mutex_unlock(&t->tg->lock);
	task_put(t);
	return 0;
}

/* --- the tables --- */

/* --- mem --- */

/*
 * /proc/PID/mem: the process's memory at the file offset, bound to its address space when the
 * file is opened (an exec after that leaves the file on the old one, as Linux). Opening needs
 * ptrace access to the process (PTRACE_MODE_ATTACH). Reads follow the pages' protections;
 * writes go through them (the private copy of read-only pages: a debugger's breakpoints).
 * An address that is not mapped gives EIO, past what was already moved.
 */
static ssize_t mem_rw(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos, bool write)
{
	struct mm *mm = f->priv;
	size_t done = 0;

	if (!pos)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++) {
		uint64_t addr = (uint64_t)*pos + done;
		ssize_t n = write ? mm_poke(mm, addr, iov[i].iov_base, iov[i].iov_len) :
				    mm_copy_in(mm, iov[i].iov_base, addr, iov[i].iov_len);

		if (n < 0)
			n = 0;
		done += (size_t)n;
		if ((size_t)n < iov[i].iov_len)
			break;
	}
	if (!done && iovcnt > 0 && iov[0].iov_len)
		return -EIO;
	*pos += (int64_t)done;
	return (ssize_t)done;
}

static ssize_t mem_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return mem_rw(f, iov, iovcnt, pos, false);
}

static ssize_t mem_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return mem_rw(f, iov, iovcnt, pos, true);
}

/* Linux's mem_lseek: SEEK_SET and SEEK_CUR, any offset (addresses are unsigned). */
static int64_t mem_llseek(struct file *f, int64_t off, int whence)
{
	if (whence == SEEK_SET)
		return off;
	if (whence == SEEK_CUR)
		return (int64_t)((uint64_t)f->pos + (uint64_t)off);
	return -EINVAL;
}

static void mem_release(struct file *f)
{
	mm_put(f->priv);
}

static const struct file_ops mem_fops = {
	.read = mem_read,
	.write = mem_write,
	.llseek = mem_llseek,
	.release = mem_release,
};

static struct file *mem_open(struct pseudo_node *n, int flags)
{
	struct task *t = pseudo_node_task(n), *cur = task_current();
	struct mm *mm;
	struct file *f;
	int err;

	if (!t)
		return ERR_PTR(-ESRCH);
	err = cur ? ptrace_may_access(cur, t) : 0;
	mm = err ? NULL : task_mm(t);
	task_put(t);
	if (err)
		return ERR_PTR(err == -EPERM ? -EACCES : err);
	if (!mm)
		return ERR_PTR(-ESRCH);
	f = file_alloc(&mem_fops, flags, mm);
	if (!f) {
		mm_put(mm);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

#define REG(nm, id_, fn) PSEUDO_REG(nm, id_, fn)
/* Not a seq_file in Linux: lseek as on a file of size 0. */
#define PLAIN_REG(nm, id_, fn)                                                               \
	{                                                                                    \
		.name = nm, .mode = S_IFREG | 0444, .gen = fn, .id = id_, .plain_seek = true \
	}
/* /proc/PID/mounts and mountinfo: poll reports changes of the mounts (pseudo_ent). */
#define MOUNTS_REG(nm, id_, fn)                                                                \
	{                                                                                      \
		.name = nm, .mode = S_IFREG | 0444, .gen = fn, .id = id_, .mount_events = true \
	}
#define LNK(nm, id_, rl, gl)                                                                  \
	{                                                                                     \
		.name = nm, .mode = S_IFLNK | 0777, .readlink = rl, .get_link = gl, .id = id_ \
	}

#define PID_COMMON_ENTS(o)                                                                         \
	PLAIN_REG("auxv", (o) + 1, gen_auxv), REG("cgroup", (o) + 2, gen_cgroup),                  \
		PLAIN_REG("cmdline", (o) + 3, gen_cmdline),                                        \
		{ .name = "comm",                                                                  \
		  .mode = S_IFREG | 0644,                                                          \
		  .gen = gen_comm,                                                                 \
		  .write = write_comm,                                                             \
		  .id = (o) + 4 },                                                                 \
		LNK("cwd", (o) + 5, cwd_readlink, cwd_get_link),                                   \
		{ .name = "environ",                                                               \
		  .mode = S_IFREG | 0400,                                                          \
		  .gen = gen_environ,                                                              \
		  .id = (o) + 6,                                                                   \
		  .plain_seek = true },                                                            \
		LNK("exe", (o) + 7, exe_readlink, exe_get_link),                                   \
		{ .name = "fd", .mode = S_IFDIR | 0500, .dyn = &fd_dyn, .id = (o) + 8 },           \
		{ .name = "fdinfo", .mode = S_IFDIR | 0500, .dyn = &fdinfo_dyn, .id = (o) + 9 },   \
		REG("limits", (o) + 10, gen_limits), REG("maps", (o) + 11, gen_maps),              \
		MOUNTS_REG("mountinfo", (o) + 12, gen_mountinfo),                                  \
		MOUNTS_REG("mounts", (o) + 13, gen_mounts),                                        \
		LNK("root", (o) + 14, root_readlink, root_get_link),                               \
		REG("smaps_rollup", (o) + 15, gen_smaps_rollup), REG("stat", (o) + 16, gen_stat),  \
		REG("statm", (o) + 17, gen_statm), REG("status", (o) + 18, gen_status),            \
		{ .name = "syscall", .mode = S_IFREG | 0400, .gen = gen_syscall, .id = (o) + 20 }, \
	{                                                                                          \
		.name = "mem", .mode = S_IFREG | 0600, .open = mem_open, .id = (o) + 19            \
	}

const struct pseudo_ent proc_pid_ents[] = {
	PID_COMMON_ENTS(100),
	PROC_PID_IDS_ENTS(PROC_IDS_ENT_ID),
	{ .name = "task",
	  .mode = S_IFDIR | 0555,
	  .dyn = &task_dyn,
	  .getattr = task_dir_getattr,
	  .id = 130 },
	{ 0 },
};

const struct pseudo_ent proc_tid_ents[] = {
	PID_COMMON_ENTS(200),
	PROC_PID_IDS_ENTS(PROC_IDS_ENT_ID + 10),
	{ 0 },
};

const struct pseudo_ent proc_pid_dir_ent = {
	.name = "pid",
	.mode = S_IFDIR | 0555,
	.children = proc_pid_ents,
	.id = 99,
};

static const struct pseudo_ent tid_dir_ent = {
	.name = "tid",
	.mode = S_IFDIR | 0555,
	.children = proc_tid_ents,
	.id = 199,
};

int32_t proc_file_pid(struct file *f)
{
	struct pseudo_node *n;

	if (!f->node || f->node->ops != &pseudo_node_ops)
		return -EBADF;
	n = pseudo_node_of(f->node);
	if (n->ent != &proc_pid_dir_ent || n->pid <= 0)
		return -EBADF;
	return n->pid;
}
