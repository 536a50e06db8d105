/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tasks (guest threads) and thread groups (guest processes).
 *
 * Each task is run by one sentry host thread executing task_run(): switch to the guest through
 * the platform, handle the system call or fault that brought control back, repeat.
 */
#ifndef HUSK_SENTRY_TASK_H
#define HUSK_SENTRY_TASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "common/list.h"
#include "common/refcount.h"
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/waitq.h"
#include "sentry/platform/platform.h"

struct cgroup;
struct kernel;
struct mm;
struct fdtable;
struct fs_context;
struct seccomp_filter;
struct ptrace_task;

#define LINUX_NSIG 64
#define LINUX_RLIM_NLIMITS 16
/* The end of user addresses (x86-64, 4-level paging): Linux's TASK_SIZE_MAX. */
#define TASK_SIZE_MAX 0x7ffffffff000ULL

/* struct sigaction as the kernel sees it on x86-64 (rt_sigaction). */
struct linux_sigaction {
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

/*
 * Credentials of a task (copied on clone; shared semantics come from copying at the right
 * time, as Linux's COW creds). Capabilities are bit sets of CAP_* (linux/capability.h).
 */
struct cred {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	int ngroups;
	uint32_t groups[32];
	uint64_t cap_effective, cap_permitted, cap_inheritable, cap_bounding, cap_ambient;
	uint32_t securebits;
	bool keep_caps; /* PR_SET_KEEPCAPS */
	/* The depth of the task's user namespace (nsproxy.h): its capabilities count for the
	 * sandbox only at 0. */
	uint8_t userns_level;
	/* The sandbox uid that is root in that namespace (-1: none mapped): the set*id and
	 * execve capability rules' "root". 0 in the initial one; nsproxy.h's
	 * task_cred_sync_root refreshes it. */
	uint32_t root_uid;
};

/* A queued signal: its siginfo (128 bytes, x86-64 layout) for SA_SIGINFO handlers. */
struct sigqueue {
	struct list_head link;
	uint8_t info[128];
};

/* Pending signals: a set plus the queue of their siginfos (rt signals may be queued twice). */
struct sigpending {
	uint64_t set; /* bit signo - 1 */
	struct list_head queue; /* of struct sigqueue */
};

/* Signal actions, shared by the threads of a process (CLONE_SIGHAND). */
struct sighand {
	struct refcount ref;
	pthread_mutex_t lock; /* protects actions, and every sigpending of the tasks using it */
	struct linux_sigaction actions[LINUX_NSIG]; /* index signo - 1 */
	/* Added by the signals engineer: woken whenever a signal is queued for a task using this
	 * sighand (signalfd). Reach it through signal_waitq(), which initialises it. */
	struct waitq signal_wq;
	bool signal_wq_ready; /* lock */
};

enum tg_state {
	TG_RUNNING,
	TG_ZOMBIE, /* every thread has exited; the parent has not reaped it */
	TG_DEAD, /* reaped (or auto-reaped) */
};

/*
 * A guest process: its threads, its place in the process tree, signal state shared by its
 * threads, limits and exit status.
 *
 * Locks: tree fields (parent, children, sibling, pgid, sid, and the kernel's pid table) are
 * protected by k->tree_lock; the rest by tg->lock unless noted. Lock order: k->tree_lock, then
 * tg->lock, then sighand->lock, then a task's wait_lock.
 */
struct thread_group {
	struct refcount ref;
	pthread_mutex_t lock;
	struct kernel *k;
	int32_t pid; /* the leader's tid */
	int32_t ppid; /* kept in sync with parent->pid for cheap getppid */
	struct task *leader;
	struct list_head tasks; /* of task.tg_link */
	int nr_threads; /* live threads */

	/* Process tree (k->tree_lock). */
	struct thread_group *parent;
	struct list_head children; /* of thread_group.sibling */
	struct list_head sibling;
	int32_t pgid, sid;
	bool subreaper; /* PR_SET_CHILD_SUBREAPER */
	/* The pod member container it belongs to (sentry/control/container.c): 0 for the
	 * sandbox's own container, else the member's number. Set before it is linked, inherited
	 * by fork, never changed. */
	int32_t container;
	/* Its cgroup (sentry/fs/cgroup/; k->tree_lock): referenced, NULL for the root. Inherited
	 * by fork (or clone3's CLONE_INTO_CGROUP), changed by cgroup.procs writes. */
	struct cgroup *cgroup;

	struct sighand *sighand; /* referenced */
	struct sigpending shared_pending; /* sighand->lock */
	int exit_signal; /* sent to the parent when this process ends (clone's low byte) */

	struct rlimit rlimits[LINUX_RLIM_NLIMITS];
	uint32_t umask_unused; /* umask lives in fs_context */

	/* Exit and job control (tg->lock). */
	enum tg_state state;
	bool exiting; /* exit_group or a fatal signal started; threads are leaving */
	int exit_status; /* wait status: (code << 8) | termsig | core flag */
	bool stopped; /* group stop in effect */
	int stop_signal;
	bool report_stop; /* a stop not yet reported to wait(WUNTRACED) */
	bool report_continue; /* a continue not yet reported to wait(WCONTINUED) */

	/* Accounting for getrusage/times/wait4 (tg->lock), in nanoseconds: utime_ns/stime_ns
	 * hold the threads that exited (cputime.h adds the live ones). */
	uint64_t utime_ns, stime_ns, cutime_ns, cstime_ns;
	uint64_t start_ns; /* CLOCK_MONOTONIC at creation */

	void *timers; /* interval and POSIX timers, owned by sentry/kernel/timer.c */
	bool dumpable;

	/* Added by the processes engineer (task_clone.c, task_exit.c, task_exec.c). */
	struct waitq child_wq; /* woken when a child changes state (wait4/waitid sleep here) */
	struct waitq exit_wq; /* woken when this process becomes a zombie and when reaped (pidfd) */
	pthread_cond_t threads_cond; /* tg->lock: signalled each time a thread leaves tg->tasks */
	struct task *exec_task; /* tg->lock: the thread de-threading for execve, or NULL */
	bool group_exit; /* tg->lock: exit_group/fatal signal (not only an exec's de-threading) */
	bool leader_exited; /* tg->lock: the old leader left for exec_task (de-threading) */
	bool did_exec; /* tree_lock: setpgid on it by its parent gives EACCES */
	bool reaped; /* tree_lock: removed from the tree by wait or auto-reap */
	bool is_init; /* pid 1: its end ends the sandbox */

	/* Added by the signals engineer (signals.c; sighand->lock). */
	bool sig_killable_init; /* a forced fault lifted pid 1's protection (SIGNAL_UNKILLABLE) */
	int sig_notify; /* CLD_STOPPED/CLD_CONTINUED the parent is still to be told of, or 0 */

	/* Added by the ptrace engineer (tree_lock): a zombie whose leader's tracer (not its real
	 * parent) has not yet waited for it; its real parent is told once the tracer has. */
	bool ptrace_held;

	/* Added for CPU time accounting (cputime.c; tg->lock): peak RSS in KiB of this process
	 * (across its execs) and the largest of its waited-for children's (RUSAGE_CHILDREN). */
	uint64_t maxrss_kb, cmaxrss_kb;

	/*
	 * /proc/PID/oom_score_adj (-1000..1000; -1000: never OOM-killed) and the lowest value a
	 * writer without CAP_SYS_RESOURCE may set (Linux's oom_score_adj_min: the last value a
	 * privileged writer set). Copied by fork, kept by exec. Atomics (oom.c writes them).
	 */
	int oom_score_adj, oom_score_adj_min;

	/* Its pid namespace (nsproxy.h, pidns.c): referenced, NULL for the sandbox's initial
	 * one. Set before it is linked, never changed. */
	struct pid_ns *pidns;
};

/* See sentry/kernel/waitq.h. */
struct waitq;
struct completion;

struct task {
	struct refcount ref;
	struct kernel *k;
	int32_t tid;
	struct thread_group *tg; /* referenced */
	struct list_head tg_link; /* in tg->tasks (tg->lock) */
	pthread_t thread; /* the host thread running task_run() */

	/*
	 * Referenced. The task itself uses them freely. Another task (procfs, ptrace, pidfd_getfd,
	 * the OOM killer) takes a reference with task_get_mm/fdt/fs, and the task replaces them
	 * (exec, unshare, exit) with task_set_mm/fdt/fs: both under res_lock, so that the one
	 * being replaced cannot be freed between the other task's read and its reference.
	 */
	struct mm *mm;
	struct fdtable *fdt;
	struct fs_context *fs;
	pthread_mutex_t res_lock;
	/* UTS, IPC and user namespaces (nsproxy.h): referenced, NULL for the sandbox's initial
	 * ones; replaced by the task itself under res_lock. */
	struct nsproxy *ns;
	struct cred cred; /* written only by the task itself */
	struct platform_ctx *ctx;
	arch_regs_t regs; /* guest registers while in the sentry */

	/* Signals (sighand->lock for pending). */
	struct sigpending pending;
	uint64_t sigmask; /* blocked signals, bit signo - 1; written by the task itself */
	uint64_t saved_sigmask; /* restored after a handler runs (sigsuspend, pselect, ppoll) */
	uint64_t real_blocked; /* atomic: the mask rt_sigtimedwait lifted while it waits */
	bool restore_sigmask;
	uint64_t altstack_sp, altstack_size;
	int altstack_flags;
	int pdeath_signal; /* PR_SET_PDEATHSIG */

	/* Blocking (see waitq.h): wait_lock protects the two flags. */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	bool wake_pending; /* a wakeup arrived since the task last checked */
	bool in_guest; /* between ctx_switch calls: interrupt with ctx_interrupt */
	long call_nr1; /* atomic: the guest call being served plus 1, 0 between calls (proc's syscall) */

	/* Thread life. */
	uint64_t set_child_tid, clear_child_tid;
	uint64_t robust_list, robust_len;
	bool futex_exited; /* atomic: past futex_exit_cleanup (PI futex owners) */
	/* sched_setaffinity: guest CPUs this thread may run on, when affinity_set (else all);
	 * inherited by clone; written by any task with the right (words atomic). */
	bool affinity_set;
	uint64_t affinity[16];
	uint64_t rseq, rseq_len;
	uint32_t rseq_sig;
	struct completion *vfork_done; /* signalled at exec or exit of a vfork child */
	bool no_new_privs;
	uint32_t personality; /* personality(2): kept across fork and execve */
	char comm[16];

	/* ERESTART_RESTARTBLOCK: how to restart (nanosleep's remaining time, ...). */
	long (*restart_fn)(struct task *t);
	uint64_t restart_data[4];
	/*
	 * The restart code (ERESTART*) of a system call that a freeze alone interrupted and that
	 * was set to restart (no handler ran) just before the task parked; 0 otherwise. If a
	 * signal arrives while it is parked (husk kill of a paused sandbox), the call is made to
	 * return as Linux would have with that signal there (EINTR when a handler runs), not
	 * restarted (task.c). Owner thread only.
	 */
	int freeze_restart;

	bool exiting; /* set by exit/exit_group or a fatal signal: the run loop ends */
	int exit_code; /* this thread's exit code (exit(2)) */

	/* Added by the signals engineer: the last fault, for the frame's trapno/err/cr2. */
	uint64_t fault_addr;
	int fault_trapno;
	int fault_err;

	/* Added by the processes engineer. */
	struct list_head pid_link; /* in the pid table's bucket (k->tree_lock) */
	void *clone_fpstate; /* the creator's FP/vector state, applied by the new thread, freed */
	size_t clone_fpstate_len;
	uint64_t start_ns; /* CLOCK_MONOTONIC at creation */

	/* Added by the OCI engineer (seccomp.c): SECCOMP_MODE_* and the newest filter of the
	 * task's chain (referenced). Written by the task itself, or under tg->lock by a thread
	 * of its process (SECCOMP_FILTER_FLAG_TSYNC); read with atomic loads. */
	int seccomp_mode;
	struct seccomp_filter *seccomp_filter;

	/* Added by the ptrace engineer (sentry/kernel/ptrace.c): PT_* bits of ptrace.h, non-zero
	 * only while traced (atomic loads: the run loop tests it), and the state of both ptrace
	 * roles, allocated on first use (k->tree_lock). */
	uint32_t ptrace;
	struct ptrace_task *pt;

	/* Added for issue 11 (syscalls/sys_sched.c, sys_ioprio.c): recorded, never applied to the
	 * host; inherited at clone. Written by the task itself or, under tg->lock, by a task
	 * allowed to change it; read with atomic loads. */
	uint32_t ioprio; /* ioprio_set(2)'s value; 0 (IOPRIO_CLASS_NONE) when never set */
	uint32_t sched_policy; /* SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR */
	uint32_t sched_priority; /* 1..99 for FIFO and RR, else 0 */
	bool sched_reset_on_fork;
	uint32_t rseq_cpu; /* the cpu_id last written to the rseq area (sentry/kernel/rseq.c) */
	/* Added for CPU time accounting: user and system time (cputime.h). */
	struct task_cputime cpu;

	/* Freezing (freeze.c; k->freeze_lock): 0, or where the task is parked (TASK_PARKED_*). */
	int parked;
	/* Its FP/vector state, stored when it parked for a checkpoint (platform_fpstate_size()). */
	void *park_fp;
	size_t park_fp_len;
	/* The clean freeze (k->freeze_fp_gen) park_fp was stored for while parked, else 0. */
	uint64_t park_fp_gen;
	/* Restore (sentry/state): the other threads of its process, started by this one's host
	 * thread once its context exists (ctx_clone needs the owner of a context of the space). */
	struct task **restore_threads;
	int nr_restore_threads;
	/* Set by the task around a wait that parks cleanly when frozen (a group stop). */
	bool wait_parks_clean;
	/* Its number in each nested pid namespace of its process (pidns.c): ns_nr[L] in the one
	 * of level L (1..tg->pidns->level); level 0 is tid. Set when linked (k->tree_lock). */
	int32_t ns_nr[33];
};

#define TASK_PARKED_CLEAN 1 /* before guest code, or in a group stop: saveable */
#define TASK_PARKED_WAIT 2 /* inside an uninterruptible wait (vfork parent): not saveable */

/*
 * Parks t (its own host thread) while the kernel is freezing (kernel_freeze): returns when the
 * freeze ends or t is being killed. where: TASK_PARKED_*.
 */
void task_park(struct task *t, int where);

void task_get(struct task *t);
void task_put(struct task *t);

void mm_get(struct mm *mm);
void fdtable_get(struct fdtable *t);
void fs_context_get(struct fs_context *fs);

/*
 * task_get_mm, task_get_fdt, task_get_fs: t's mm, fd table or fs context with a new reference,
 * for another task; NULL when t has none (it has exited).
 * task_set_mm, task_set_fdt, task_set_fs: replace t's own (by t's own thread, or before t
 * runs); return the old one, whose reference the caller drops.
 */
#define TASK_RES_ACCESSORS(type, field, get)                                        \
	static inline struct type *task_get_##field(struct task *t)                 \
	{                                                                           \
		struct type *v;                                                     \
                                                                                    \
		pthread_mutex_lock(&t->res_lock);                                   \
		v = t->field;                                                       \
		if (v)                                                              \
			get(v);                                                     \
		pthread_mutex_unlock(&t->res_lock);                                 \
		return v;                                                           \
	}                                                                           \
	static inline struct type *task_set_##field(struct task *t, struct type *v) \
	{                                                                           \
		struct type *old;                                                   \
                                                                                    \
		pthread_mutex_lock(&t->res_lock);                                   \
		old = t->field;                                                     \
		t->field = v;                                                       \
		pthread_mutex_unlock(&t->res_lock);                                 \
		return old;                                                         \
	}
TASK_RES_ACCESSORS(mm, mm, mm_get)
TASK_RES_ACCESSORS(fdtable, fdt, fdtable_get)
TASK_RES_ACCESSORS(fs_context, fs, fs_context_get)
#undef TASK_RES_ACCESSORS

/* Number of the thread group's pid as the guest sees it. */
static inline int32_t task_pid(const struct task *t)
{
	return t->tg->pid;
}

/*
 * Creates pid 1 for kernel k with the given fd table and fs context (references taken),
 * credentials from the host caller (uid/gid given), default rlimits. Returns ERR_PTR(-errno).
 */
struct task *task_create_init(struct kernel *k, struct fdtable *fdt, struct fs_context *fs,
			      uint32_t uid, uint32_t gid);

/*
 * Replaces t's program with the one at path (execve without the guest-memory copy-in):
 * loads it into a new mm and platform space, then switches t over. On failure t is unchanged.
 * Returns 0 or -errno (-ENOENT, -EACCES, -ENOEXEC, -E2BIG, -ENOMEM).
 */
int task_exec(struct task *t, const char *path, char *const argv[], char *const envp[]);

/* Runs t until it exits; returns its wait status (exit code << 8, or the killing signal). */
int task_run(struct task *t);

/*
 * Releases what a task that has finished running holds: its platform context, mm (and with
 * it the stub, killed and reaped), fd table and fs context.
 */
void task_release(struct task *t);

/*
 * Ends the task's thread group with the given wait status (exit_group semantics): the first
 * call records the status, marks the group exiting and wakes (interrupts) every other thread
 * so that it leaves its run loop. Any thread of the group.
 */
void task_exit_group(struct task *t, int status);

/* --- processes (sentry/kernel/task_*.c, pid.c, cred.c) --- */

void tg_get(struct thread_group *tg);
void tg_put(struct thread_group *tg);
/* A zeroed task with one reference, its locks and lists initialised; NULL when out of memory. */
struct task *task_alloc(struct kernel *k);
/* A process with one reference, using sh (reference taken over) or a new sighand if NULL. */
struct thread_group *tg_alloc(struct kernel *k, struct sighand *sh);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t task_monotonic_ns(void);

/*
 * Called by the signals code when child (a whole process) stopped (tg->stopped set,
 * report_stop set) or continued (report_continue set): wakes the parent's wait4/waitid and
 * sends it SIGCHLD with CLD_STOPPED/CLD_CONTINUED unless its SIGCHLD action has SA_NOCLDSTOP.
 * Takes k->tree_lock: call it with no tg or sighand lock held. Any thread.
 */
void tg_child_state_changed(struct thread_group *child);

/* What clone(2)/clone3(2)/fork(2)/vfork(2) asked for, decoded (the clone3 struct's fields). */
struct task_clone_args {
	uint64_t flags; /* CLONE_*, without the exit signal */
	uint64_t pidfd; /* guest address for CLONE_PIDFD */
	uint64_t child_tid; /* guest address for CLONE_CHILD_SETTID / CLONE_CHILD_CLEARTID */
	uint64_t parent_tid; /* guest address for CLONE_PARENT_SETTID */
	int exit_signal;
	uint64_t stack; /* new rsp, or 0 to keep the parent's */
	uint64_t tls; /* CLONE_SETTLS: new fs_base */
	int32_t set_tid; /* clone3 set_tid[0], or 0 */
	struct cgroup *cgroup; /* clone3 CLONE_INTO_CGROUP: the child's cgroup (not taken), or NULL */
};

/*
 * Creates a task (thread or process) as a copy of t per a (whose flags the caller validated
 * with task_clone_check), starts its host thread, and for CLONE_VFORK waits until the child
 * execs or exits. Must run on t's own host thread. Returns the child's tid or -errno.
 */
long task_clone(struct task *t, const struct task_clone_args *a);
/*
 * Call once before the sentry confines itself. glibc's malloc opens files the first time a
 * thread arena's heap shrinks (/proc/sys/vm/overcommit_memory, then cached) and when a ninth
 * arena is wanted (get_nprocs(): /sys/devices/system/cpu/online, never cached); in the
 * confined sentry an open is fatal (sentry/filter.c), and task host threads get thread
 * arenas. This makes glibc read the first now and fixes the arena limit so it never needs
 * the second.
 */
void task_host_prepare(void);

/*
 * Restore (sentry/state): starts the host thread of restored task t (counted as running by the
 * caller), which activates its mm, creates its context (t->ctx NULL: a leader) or adopts the
 * one its leader cloned, loads t->clone_fpstate, starts t->restore_threads, and runs it.
 * task_activate_restored does the same set-up on the calling thread (pid 1 on the main
 * thread) without running it. task_start_restored_threads: on t's own thread once t->ctx
 * exists. Return 0 or -errno.
 */
int task_start_restored(struct task *t);
int task_activate_restored(struct task *t);
int task_start_restored_threads(struct task *t);

/* At exec or exit of a vfork child: lets its parent resume (no-op for other tasks). */
void task_vfork_release(struct task *t);
/* Linux's copy_process flag rules: returns 0 or -EINVAL (or -EPERM for namespaces). */
int task_clone_check(const struct task *t, const struct task_clone_args *a);

/*
 * What a task's host thread does after task_run() returns: thread exit (CLEARTID, robust
 * list, vfork completion), release of its context, mm, files and fs; the last thread of a
 * process makes it a zombie, re-parents its children and notifies its parent. For a
 * non-leader, drops the pid table's reference. Must run on t's own host thread.
 */
void task_exit_thread(struct task *t);

/*
 * Runs pid 1 (on the calling thread) until it exits, then kills every other task of the
 * sandbox, waits until all have released their host resources, and returns pid 1's wait
 * status. main() calls it instead of task_run().
 */
int task_run_init(struct task *init);

/* execve/execveat with guest pointers (sys_process.c): copies path, argv and envp in. */
long task_execve_guest(struct task *t, int dirfd, uint64_t path, uint64_t argv, uint64_t envp,
		       int flags);

/*
 * wait4/waitid core. which: P_ALL, P_PID, P_PGID (id the pid or pgid; P_PGID with id 0 is the
 * caller's group) or P_PIDFD resolved by the caller into P_PID. options: WNOHANG, WUNTRACED,
 * WSTOPPED, WEXITED, WCONTINUED, WNOWAIT, __WALL, __WCLONE, __WNOTHREAD. On success fills *res
 * and returns the child's pid, 0 under WNOHANG when nothing is ready, -ECHILD, -ERESTARTSYS.
 */
struct task_wait_result {
	int32_t pid;
	uint32_t uid;
	int status; /* wait4's status word */
	int cld_code; /* CLD_EXITED, CLD_KILLED, CLD_DUMPED, CLD_STOPPED, CLD_CONTINUED */
	int cld_status; /* exit code or signal */
	uint64_t utime_ns, stime_ns; /* the child's and its waited-for children's times */
	uint64_t maxrss_kb; /* the child's peak RSS (and its children's), KiB */
};
long task_wait_child(struct task *t, int which, int32_t id, int options,
		     struct task_wait_result *res);

/* pidfd_open(2): a pidfd for the process whose leader is tid pid. Returns the fd or -errno. */
long pidfd_create_fd(struct task *t, struct thread_group *tg, int flags);
/* The process a pidfd refers to (a new reference), or ERR_PTR(-EBADF) for another file. */
struct thread_group *pidfd_get_tg(struct task *t, int fd);

/* --- the pid table (pid.c; k->tree_lock held unless noted) --- */

/* Sets up k->pids and tree_lock. 0 or -ENOMEM. Called once, by task_create_init. */
int pid_table_init(struct kernel *k);
/* Allocates a free tid (not a live task's, nor a group's or session's id); -EAGAIN if none. */
int32_t pid_alloc(struct kernel *k);
/* Reserves exactly tid (clone3 set_tid): 0, -EEXIST when taken, -EINVAL when out of range. */
int pid_alloc_exact(struct kernel *k, int32_t tid);
void pid_insert(struct kernel *k, struct task *t);
void pid_remove(struct kernel *k, struct task *t);
/* The task with that tid, no reference taken (tree_lock held). */
struct task *pid_lookup(struct kernel *k, int32_t tid);
/* Calls fn for each process (leader entries), stopping at a non-zero return. */
int pid_for_each_tg(struct kernel *k, int (*fn)(struct thread_group *tg, void *arg), void *arg);
/* Calls fn on every task of the table (threads too) until it returns non-zero; returns that. */
int pid_for_each_task(struct kernel *k, int (*fn)(struct task *t, void *arg), void *arg);

/*
 * Pod members with a pid namespace of their own (sentry/control/container.c): their processes
 * and the others' do not see each other (/proc, kill and the signals' permission check). Pids
 * are not renumbered: it is visibility only. Any thread; atomics.
 */
void pid_container_set_private(int32_t container, bool private_pids);
/* The pid namespace container's processes are in: its number when private, else 0. */
int32_t pid_container_ns(int32_t container);
/* Whether viewer (NULL: from outside the sandbox) may see target by pid. */
bool pid_visible(const struct thread_group *viewer, const struct thread_group *target);
/*
 * A pod member's own pids limit (linux.resources.pids.limit of its config, husk update), as a
 * pids cgroup's: its tasks (threads included, zombies until reaped) are counted, and a clone
 * or exec'd process past the limit is -EAGAIN. pid_container_full: k->tree_lock held.
 */
bool pid_container_full(struct kernel *k, int32_t container);
void pid_container_set_pids_limit(struct kernel *k, int32_t container, int limit);
void pid_container_pids(struct kernel *k, int32_t container, int *current, int *limit);
/* Counts live host threads of tasks (for the end of the sandbox). Any thread, takes no lock. */
void pid_task_started(struct kernel *k);
void pid_task_finished(struct kernel *k);
/* How many task host threads run now (started and not finished). */
int pid_tasks_running(struct kernel *k);
/* Waits until every started task's host thread has finished (end of the sandbox). */
void pid_wait_all_finished(struct kernel *k);

/* --- credentials (cred.c) --- */

/*
 * True if cred has capability cap (CAP_*) in its effective set and is in the sandbox's initial
 * user namespace (a nested one's capabilities count in it only: nsproxy_ns_capable).
 */
bool cred_capable(const struct cred *c, int cap);
/*
 * True if cred has cap in its effective set, in its own user namespace (Linux's
 * ns_capable(cred->user_ns)): the set*id, execve and capability rules, which act on the ids and
 * capabilities of that namespace only.
 */
bool cred_own_capable(const struct cred *c, int cap);

/* RLIMIT_NOFILE's soft limit of t's process, as an fd bound for fdtable_install. */
static inline int task_nofile_limit(struct task *t)
{
	rlim_t cur;

	pthread_mutex_lock(&t->tg->lock);
	cur = t->tg->rlimits[RLIMIT_NOFILE].rlim_cur;
	pthread_mutex_unlock(&t->tg->lock);
	return cur > INT32_MAX ? INT32_MAX : (int)cur;
}
/* The set*id rules of Linux. Each returns 0 or -EPERM/-EINVAL and updates t->cred. */
int cred_setresuid(struct task *t, uint32_t r, uint32_t e, uint32_t s);
int cred_setresgid(struct task *t, uint32_t r, uint32_t e, uint32_t s);
int cred_setreuid(struct task *t, uint32_t r, uint32_t e);
int cred_setregid(struct task *t, uint32_t r, uint32_t e);
int cred_setuid(struct task *t, uint32_t uid);
int cred_setgid(struct task *t, uint32_t gid);
/* setfsuid/setfsgid return the previous fsuid/fsgid whether or not they changed it. */
uint32_t cred_setfsuid(struct task *t, uint32_t uid);
uint32_t cred_setfsgid(struct task *t, uint32_t gid);

#endif
