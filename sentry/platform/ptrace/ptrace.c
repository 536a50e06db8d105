/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ptrace platform: guest code runs in a stub process (stub.c) under PTRACE_SYSEMU; every
 * guest system call, fault and signal stops the stub and returns control to its tracer, the
 * sentry thread that created the address space.
 *
 * Mapping changes (as_map/as_unmap/as_protect) are applied at once, by running the call inside
 * the stub, when the caller is the tracer thread (the normal case: a syscall handler or the
 * loader). From any other thread they are queued and the tracer applies them, in order, at the
 * start of its next ctx_switch.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/platform/cpusplit.h"
#include "sentry/platform/ptrace/ptrace.h"
#include "sentry/platform/ptrace/stub.h"

/* The default 64-bit user selectors (__USER_CS, __USER_DS) used when a caller passes zero. */
#define USER64_CS 0x33
#define USER64_SS 0x2b

/* The kernel-internal restart errnos: the host would act on them if orig_rax were >= 0. */
#define KERNEL_ERESTARTSYS 512
#define KERNEL_ERESTART_RESTARTBLOCK 516

struct ptrace_as;

/*
 * The stub factory (README.md, "The template stub"): a host thread that forks the template
 * stub, traces it, and keeps one new stub forked from it ready for the next as_create.
 */
struct stub_factory {
	pthread_mutex_t lock; /* protects everything below but thread */
	pthread_cond_t cond; /* ready, err, stop and started changed */
	pthread_t thread;
	bool started; /* the thread was created (joined by ptrace_destroy) */
	bool first_taken; /* the first as_create made its stub itself (see factory_take) */
	bool stop; /* ptrace_destroy asks the thread to end */
	pid_t ready; /* a stub parked for as_create to take, or 0 */
	int err; /* the factory failed (-errno): as_create forks stubs from the sentry */
};

struct ptrace_platform {
	struct platform base;
	const struct stub_code *code;
	struct stub_factory factory;
	struct ptrace_platform *next_factory; /* in the factories list (factories_lock) */
	bool registered; /* in the factories list (factories_lock) */
};

/*
 * Platforms whose factory may run: the process's exit stops them (factories_stop_all, atexit),
 * which kills and reaps the template and the ready stub. The sentry exits without
 * platform_destroy; left to die with it, they would be zombies for pid 1 to reap.
 */
static pthread_mutex_t factories_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ptrace_platform *factories;
static pthread_once_t factories_once = PTHREAD_ONCE_INIT;

/* A mapping change queued by a thread that traces no thread of the space. */
struct ptrace_op {
	long nr; /* __NR_mmap, __NR_munmap or __NR_mprotect */
	uint64_t addr, len, off;
	int prot;
	bool image; /* __NR_mmap: of the image file (private), not the memory file */
};

/*
 * One stub thread, and the guest thread (ctx) it runs. The initial thread exists from
 * as_create; ctx_create hands it out. Threads made by ctx_clone are parked (in futex_wait on
 * the code page, traced by nobody) until ctx_adopt.
 */
struct ptrace_ctx {
	struct platform_ctx base;
	struct ptrace_as *as;
	struct ptrace_ctx *next; /* in as->threads (as->lock) */
	pid_t tid;
	pid_t tracer; /* host tid tracing it, 0 while parked; only it issues requests */
	bool claimed; /* handed out as a ctx (the owner's alone) */
	int dead; /* atomic: the thread has exited or was reaped: never signal tid again */
	/* The stub thread's registers as last set or read; the tracer's alone. */
	arch_regs_t regs;
	int cpu; /* the one CPU the thread is bound to, or -1 (see bind_to_tracer_cpu) */
	int interrupt; /* atomic: ctx_interrupt() was called and not yet reported */
	bool switched; /* ctx_switch ran once (the first one's duration is logged) */
	bool step; /* ctx_singlestep: resume with PTRACE_SYSEMU_SINGLESTEP; the owner's alone */
	struct cpu_split_thread cput; /* CPU time accounting (as->cpu) */
	struct rusage *rusage; /* set: thread_wait fills it (the tracer's alone) */
};

struct ptrace_as {
	struct platform_as base;
	const struct stub_code *code;
	pid_t pid; /* the stub process (its initial thread's tid) */
	int dead; /* atomic: the process was killed or is gone: switches report DIED */
	int reaped; /* atomic: the initial thread was reaped, pid may be reused */
	bool leader_exited; /* the initial thread ran exit(2): a zombie until the last one goes */
	bool destroying; /* as_destroy killed it: deaths are expected, not worth a warning */
	/* Segment selectors and flags the stub started with (defaults for zero selectors). */
	arch_regs_t init_regs;

	pthread_mutex_t lock; /* protects threads and the queue */
	struct ptrace_ctx *threads; /* every stub thread not yet gone */
	struct ptrace_op *queue;
	size_t nqueue, queue_cap;
	int queued; /* atomic: nqueue != 0, read without the lock */

	struct cpu_split cpu; /* CPU time accounting (sentry/platform/cpusplit.h) */
};

static const struct platform_ops ptrace_ops;

/*
 * The calling thread's host tid, cached: ctx_switch checks it on every guest system call, and
 * gettid() would be one more host system call each time. A forked child (its one thread has a
 * new tid) forgets it.
 */
static __thread pid_t self_tid;
static pthread_once_t self_tid_once = PTHREAD_ONCE_INIT;

static void self_tid_forget(void)
{
	self_tid = 0;
}

static void self_tid_init(void)
{
	pthread_atfork(NULL, NULL, self_tid_forget);
}

static pid_t my_tid(void)
{
	if (unlikely(!self_tid)) {
		pthread_once(&self_tid_once, self_tid_init);
		self_tid = gettid();
	}
	return self_tid;
}

/* CLOCK_MONOTONIC in nanoseconds, for the timings logged at debug level. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct ptrace_as *to_as(struct platform_as *as)
{
	return container_of(as, struct ptrace_as, base);
}

static struct ptrace_ctx *to_ctx(struct platform_ctx *ctx)
{
	return container_of(ctx, struct ptrace_ctx, base);
}

static bool as_is_dead(struct ptrace_as *as)
{
	return __atomic_load_n(&as->dead, __ATOMIC_ACQUIRE);
}

static bool thread_is_dead(struct ptrace_ctx *t)
{
	return __atomic_load_n(&t->dead, __ATOMIC_ACQUIRE);
}

/* Thread t is about to run guest code / stopped running it. Its tracer only. */
static void cpu_enter(struct ptrace_ctx *t)
{
	cpu_split_enter(&t->as->cpu, &t->cput);
}

static void cpu_leave(struct ptrace_ctx *t)
{
	cpu_split_leave(&t->as->cpu, &t->cput);
}

/* Records that thread t is gone and reaped; a death by signal took the whole process. */
static void thread_mark_dead(struct ptrace_ctx *t, int status)
{
	struct ptrace_as *as = t->as;

	if (WIFSIGNALED(status)) {
		if (!as->destroying)
			log_warn("ptrace: stub %d (thread %d) killed by signal %d", as->pid, t->tid,
				 WTERMSIG(status));
		__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
	} else if (t->tid == as->pid) {
		if (!as->destroying)
			log_warn("ptrace: stub %d exited with status %d", as->pid,
				 WEXITSTATUS(status));
		__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
	}
	if (t->tid == as->pid) {
		__atomic_store_n(&as->reaped, 1, __ATOMIC_RELEASE);
		cpu_split_reaped(&as->cpu);
	}
	__atomic_store_n(&t->dead, 1, __ATOMIC_RELEASE);
}

/* Waits for thread t's next stop. Returns 0 with *status, -ESRCH if it died (reaped). */
static int thread_wait(struct ptrace_ctx *t, int *status)
{
	int ret;

	if (unlikely(t->rusage)) {
		/* A stop reported by wait4 comes with the stopped process's rusage. */
		while ((ret = (int)wait4(t->tid, status, __WALL, t->rusage)) < 0 && errno == EINTR)
			;
		ret = ret < 0 ? -errno : 0;
	} else {
		ret = stub_wait(t->tid, status);
	}

	if (ret < 0) {
		/* ECHILD: somebody else reaped it (a waitpid(-1) elsewhere in the sentry). */
		__atomic_store_n(&t->dead, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&t->as->dead, 1, __ATOMIC_RELEASE);
		return ret == -ECHILD ? -ESRCH : ret;
	}
	if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
		thread_mark_dead(t, *status);
		return -ESRCH;
	}
	return 0;
}

/*
 * A ptrace request on thread t failed with errno. ESRCH means it is no longer in a stop, which
 * for a stopped tracee means it was killed: make sure of that and reap it.
 * Returns -errno (-ESRCH once the thread is gone).
 */
static int request_failed(struct ptrace_ctx *t)
{
	int err = errno, status;

	if (err != ESRCH)
		return -err;
	if (!__atomic_load_n(&t->as->reaped, __ATOMIC_ACQUIRE))
		kill(t->as->pid, SIGKILL); /* unreaped, so the pid is still ours */
	while (thread_wait(t, &status) == 0)
		;
	return -ESRCH;
}

/*
 * Runs system call nr inside stub thread t: its registers are replaced by a copy pointing at
 * the `syscall` of gadget, the thread runs to the int3 after it (rip == done), and t->regs then
 * holds what it has. The guest registers are not restored here: the next ctx_switch sets them
 * all (it compares against t->regs). Returns the call's result or -errno (-ESRCH if the thread
 * is gone).
 */
static long stub_call_at(struct ptrace_ctx *t, uint64_t gadget, uint64_t done, long nr, uint64_t a1,
			 uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6)
{
	arch_regs_t r = t->regs;
	siginfo_t si;
	int status, ret;

	if (as_is_dead(t->as) || thread_is_dead(t))
		return -ESRCH;
	r.rip = gadget;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1;
	r.rdi = a1;
	r.rsi = a2;
	r.rdx = a3;
	r.r10 = a4;
	r.r8 = a5;
	r.r9 = a6;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0)
		return request_failed(t);
	t->regs = r;
	if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
		return request_failed(t);
	for (;;) {
		ret = thread_wait(t, &status);
		if (ret < 0)
			return ret;
		if (WSTOPSIG(status) == SIGTRAP && (status >> 16) == 0) {
			if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) < 0)
				return request_failed(t);
			if (t->regs.rip == done)
				return (long)t->regs.rax;
		} else if ((status >> 16) == 0 && ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) == 0 &&
			   si.si_code > 0 &&
			   (WSTOPSIG(status) == SIGSEGV || WSTOPSIG(status) == SIGBUS ||
			    WSTOPSIG(status) == SIGILL || WSTOPSIG(status) == SIGFPE)) {
			/* The gadget itself faulted: the stub is beyond use. */
			log_error("ptrace: stub %d faulted (signal %d) running call %ld",
				  t->as->pid, WSTOPSIG(status), nr);
			return -EIO;
		}
		/*
		 * Any other stop (a signal someone sent, ctx_interrupt's signal whose request
		 * stays in ctx->interrupt): suppress it and let the call finish.
		 */
		if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
			return request_failed(t);
	}
}

static long stub_call(struct ptrace_ctx *t, long nr, uint64_t a1, uint64_t a2, uint64_t a3,
		      uint64_t a4, uint64_t a5, uint64_t a6)
{
	return stub_call_at(t, t->as->code->gadget, t->as->code->gadget_done, nr, a1, a2, a3, a4,
			    a5, a6);
}

static bool range_ok(uint64_t addr, uint64_t len)
{
	uint64_t end;

	if (!IS_PAGE_ALIGNED(addr) || !IS_PAGE_ALIGNED(len) || len == 0)
		return false;
	if (add_overflow(addr, len, &end))
		return false;
	return addr >= PLATFORM_GUEST_MIN && end <= PLATFORM_GUEST_MAX;
}

static bool prot_ok(int prot)
{
	return (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) == 0;
}

static bool is_tracer(const struct ptrace_ctx *t)
{
	return my_tid() == t->tracer;
}

/* Runs one mapping change inside the stub, through thread t. t's tracer only. */
static int apply_op(struct ptrace_ctx *t, const struct ptrace_op *op)
{
	long ret;

	switch (op->nr) {
	case __NR_mmap:
		ret = stub_call(t, __NR_mmap, op->addr, op->len, (uint64_t)op->prot,
				op->image ? MAP_PRIVATE | MAP_FIXED : MAP_SHARED | MAP_FIXED,
				op->image ? PTRACE_STUB_IMAGEFD : PTRACE_STUB_MEMFD, op->off);
		if (ret >= 0 && (uint64_t)ret != op->addr)
			ret = -EIO; /* cannot happen with MAP_FIXED */
		break;
	case __NR_munmap:
		ret = stub_call(t, __NR_munmap, op->addr, op->len, 0, 0, 0, 0);
		break;
	default:
		ret = stub_call(t, __NR_mprotect, op->addr, op->len, (uint64_t)op->prot, 0, 0, 0);
		break;
	}
	return ret < 0 ? (int)ret : 0;
}

/* A live thread of as that the calling host thread traces, or NULL. */
static struct ptrace_ctx *my_thread(struct ptrace_as *as)
{
	pid_t me = my_tid();
	struct ptrace_ctx *t;

	pthread_mutex_lock(&as->lock);
	for (t = as->threads; t; t = t->next) {
		if (t->tracer == me && !thread_is_dead(t))
			break;
	}
	pthread_mutex_unlock(&as->lock);
	return t;
}

/*
 * Applies the change now, through a stub thread the caller traces (the threads share one host
 * mm: the change holds for all of them when this returns), or queues it for the next switch of
 * any thread and kicks the threads running guest code so that they apply it.
 */
static int submit_op(struct ptrace_as *as, const struct ptrace_op *op)
{
	struct ptrace_ctx *t;

	if (as_is_dead(as))
		return -ESRCH;
	t = my_thread(as);
	if (t)
		return apply_op(t, op);

	pthread_mutex_lock(&as->lock);
	if (as->nqueue == as->queue_cap) {
		size_t cap = as->queue_cap ? 2 * as->queue_cap : 16;
		struct ptrace_op *q = realloc(as->queue, cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&as->lock);
			return -ENOMEM;
		}
		as->queue = q;
		as->queue_cap = cap;
	}
	as->queue[as->nqueue++] = *op;
	__atomic_store_n(&as->queued, 1, __ATOMIC_RELEASE);
	/* Threads in a ptrace stop get the signal when resumed, and drop it after applying. */
	for (t = as->threads; t; t = t->next) {
		if (t->tracer && !thread_is_dead(t) &&
		    !__atomic_load_n(&as->reaped, __ATOMIC_ACQUIRE))
			tgkill(as->pid, t->tid, PTRACE_INTERRUPT_SIGNAL);
	}
	pthread_mutex_unlock(&as->lock);
	return 0;
}

/* Applies every queued change through thread t. t's tracer only. Returns 0 or the first error. */
static int apply_queue(struct ptrace_ctx *t)
{
	struct ptrace_as *as = t->as;
	struct ptrace_op *q;
	size_t n;
	int ret = 0;

	pthread_mutex_lock(&as->lock);
	q = as->queue;
	n = as->nqueue;
	as->queue = NULL;
	as->nqueue = as->queue_cap = 0;
	__atomic_store_n(&as->queued, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&as->lock);

	for (size_t i = 0; i < n; i++) {
		int err = apply_op(t, &q[i]);

		if (err < 0 && ret == 0) {
			log_error("ptrace: queued mapping change at %#llx failed: %s",
				  (unsigned long long)q[i].addr, strerror(-err));
			ret = err;
		}
	}
	free(q);
	return ret;
}

static struct ptrace_ctx *thread_new(struct ptrace_as *as, pid_t tid)
{
	struct ptrace_ctx *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->base.as = &as->base;
	t->as = as;
	t->tid = tid;
	t->cpu = -1;
	return t;
}

/* Adds t to as->threads. */
static void thread_link(struct ptrace_ctx *t)
{
	pthread_mutex_lock(&t->as->lock);
	t->next = t->as->threads;
	t->as->threads = t;
	pthread_mutex_unlock(&t->as->lock);
}

/* Removes t from as->threads and frees it. */
static void thread_unlink_free(struct ptrace_ctx *t)
{
	struct ptrace_as *as = t->as;

	pthread_mutex_lock(&as->lock);
	for (struct ptrace_ctx **pp = &as->threads; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	pthread_mutex_unlock(&as->lock);
	free(t);
}

static void ptrace_as_destroy(struct platform_as *pas);
static int thread_seize(struct ptrace_ctx *t);
static pid_t factory_take(struct ptrace_platform *pp);

/*
 * Makes as's stub: one forked from the template stub if the factory can (it is then seized by
 * the calling thread), else one forked from the calling thread (stub_spawn). Returns 0 with the
 * initial thread linked and traced by the caller, or -errno (as is then to be freed alone, or
 * destroyed if as->pid is set).
 */
static int as_make_stub(struct ptrace_platform *pp, struct ptrace_as *as)
{
	struct ptrace_ctx *leader;
	arch_regs_t regs;
	pid_t pid = factory_take(pp);
	int ret;

	if (pid > 0) {
		leader = thread_new(as, pid);
		if (!leader) {
			stub_kill_and_reap(pid);
			return -ENOMEM;
		}
		as->pid = pid;
		as->cpu.pid = pid;
		thread_link(leader);
		ret = thread_seize(leader);
		if (ret < 0)
			return ret;
		as->init_regs = leader->regs;
		return 0;
	}
	ret = stub_spawn(pp->code, pp->base.memfd, pp->base.imagefd, &pid, &regs);
	if (ret < 0)
		return ret;
	leader = thread_new(as, pid);
	if (!leader) {
		stub_kill_and_reap(pid);
		return -ENOMEM;
	}
	as->pid = pid;
	as->cpu.pid = pid;
	as->init_regs = regs;
	leader->tracer = my_tid();
	leader->regs = regs;
	thread_link(leader);
	/*
	 * PR_SET_PDEATHSIG guarded the stub until PTRACE_O_EXITKILL was set. It acts when the
	 * *thread* that forked the stub exits, which with guest threads is no reason to kill the
	 * process: one guest thread (this host thread's task) may exit while others run on.
	 * (A stub forked from the template keeps it: its parent is the factory thread.)
	 */
	ret = (int)stub_call(leader, __NR_prctl, PR_SET_PDEATHSIG, 0, 0, 0, 0, 0);
	return ret < 0 ? ret : 0;
}

static int ptrace_as_create(struct platform *p, struct platform_as **out)
{
	struct ptrace_platform *pp = container_of(p, struct ptrace_platform, base);
	struct ptrace_as *as;
	uint64_t t0 = mono_ns();
	int ret;

	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->base.p = p;
	as->code = pp->code;
	pthread_mutex_init(&as->lock, NULL);
	cpu_split_init(&as->cpu, 0);
	ret = as_make_stub(pp, as);
	if (ret < 0) {
		if (as->pid) {
			ptrace_as_destroy(&as->base);
		} else {
			cpu_split_destroy(&as->cpu);
			pthread_mutex_destroy(&as->lock);
			free(as);
		}
		return ret;
	}
	*out = &as->base;
	log_debug("timing: ptrace as_create %llu us (stub %d)",
		  (unsigned long long)(mono_ns() - t0) / 1000, as->pid);
	return 0;
}

/* Reaps thread t of a killed stub (any sentry thread may, the tracer being in this process). */
static void thread_reap(struct ptrace_ctx *t)
{
	int status;

	if (thread_is_dead(t))
		return;
	while (thread_wait(t, &status) == 0)
		;
}

static void ptrace_as_destroy(struct platform_as *pas)
{
	struct ptrace_as *as;
	struct ptrace_ctx *t, *next;
	uint64_t t0 = mono_ns();
	int status;

	if (!pas)
		return;
	as = to_as(pas);
	as->destroying = true;
	/* Not yet reaped, so the pid cannot have been reused: safe to kill by pid. */
	if (!__atomic_load_n(&as->reaped, __ATOMIC_ACQUIRE))
		kill(as->pid, SIGKILL);
	/* The other threads first: the initial one is reported only once they are reaped. */
	for (t = as->threads; t; t = next) {
		next = t->next;
		if (t->tid != as->pid)
			thread_reap(t);
	}
	for (t = as->threads; t; t = next) {
		next = t->next;
		if (t->tid == as->pid)
			thread_reap(t);
		free(t);
	}
	/* An initial thread that exit(2)ed while others ran is a zombie of its own. */
	if (as->leader_exited && !__atomic_load_n(&as->reaped, __ATOMIC_ACQUIRE)) {
		while (stub_wait(as->pid, &status) == 0 && !WIFEXITED(status) &&
		       !WIFSIGNALED(status))
			;
	}
	cpu_split_destroy(&as->cpu);
	pthread_mutex_destroy(&as->lock);
	free(as->queue);
	free(as);
	log_debug("timing: ptrace as_destroy %llu us", (unsigned long long)(mono_ns() - t0) / 1000);
}

static int ptrace_as_map(struct platform_as *pas, uint64_t addr, uint64_t len, int prot,
			 uint64_t off)
{
	struct ptrace_op op = {
		.nr = __NR_mmap, .addr = addr, .len = len, .prot = prot, .off = off
	};

	if (!range_ok(addr, len) || !prot_ok(prot) || !IS_PAGE_ALIGNED(off) ||
	    off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	return submit_op(to_as(pas), &op);
}

static int ptrace_as_map_image(struct platform_as *pas, uint64_t addr, uint64_t len, int prot,
			       uint64_t off)
{
	struct ptrace_op op = {
		.nr = __NR_mmap, .addr = addr, .len = len, .prot = prot, .off = off, .image = true
	};

	if (!range_ok(addr, len) || !prot_ok(prot) || (prot & PROT_WRITE) ||
	    !IS_PAGE_ALIGNED(off) || off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	if (pas->p->imagefd < 0)
		return -ENOSYS;
	return submit_op(to_as(pas), &op);
}

static int ptrace_as_unmap(struct platform_as *pas, uint64_t addr, uint64_t len)
{
	struct ptrace_op op = { .nr = __NR_munmap, .addr = addr, .len = len };

	if (!range_ok(addr, len))
		return -EINVAL;
	return submit_op(to_as(pas), &op);
}

static int ptrace_as_protect(struct platform_as *pas, uint64_t addr, uint64_t len, int prot)
{
	struct ptrace_op op = { .nr = __NR_mprotect, .addr = addr, .len = len, .prot = prot };

	if (!range_ok(addr, len) || !prot_ok(prot))
		return -EINVAL;
	return submit_op(to_as(pas), &op);
}

/*
 * Takes a parked thread (made by ctx_clone) as the calling thread's tracee: PTRACE_SEIZE, then
 * PTRACE_INTERRUPT, and waits for the interrupt stop.
 */
static int thread_seize(struct ptrace_ctx *t)
{
	int status, ret;

	if (ptrace(PTRACE_SEIZE, t->tid, 0, PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD) < 0)
		return -errno;
	t->tracer = my_tid();
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0)
		return request_failed(t);
	for (;;) {
		ret = thread_wait(t, &status);
		if (ret < 0)
			return ret;
		if ((status >> 16) == PTRACE_EVENT_STOP)
			break;
		/* A signal reached it first (an interrupt kick): suppress it. */
		if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
			return request_failed(t);
	}
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) < 0)
		return request_failed(t);
	return 0;
}

/*
 * Forks a new stub from the template (on the factory thread, the template's tracer). The child
 * is traced by this thread from birth (CLONE_PTRACE; it inherits the template's
 * PTRACE_O_EXITKILL) and stops with SIGSTOP; resumed, it sets its parent-death signal (its parent
 * is this thread, by CLONE_PARENT) and stacks the child filter, then traps. It is detached only
 * then, so that at every moment either its tracer or its parent's death ends it; it parks until
 * as_create seizes it. Returns its pid, or -errno with nothing left behind.
 */
static pid_t template_fork(struct ptrace_ctx *tmpl)
{
	const struct stub_code *code = tmpl->as->code;
	arch_regs_t r;
	int status, ret, sig;
	long pid = stub_call_at(tmpl, code->fork, code->fork_done, __NR_clone, STUB_FORK_FLAGS, 0,
				0, 0, 0, 0);

	if (pid <= 0)
		return pid < 0 ? (pid_t)pid : -EIO;
	for (;;) {
		ret = stub_wait((pid_t)pid, &status);
		if (ret < 0)
			goto out_kill;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			log_error(
				"ptrace: a stub forked from the template died during set-up (%#x)",
				status);
			return -EIO;
		}
		sig = WSTOPSIG(status);
		if (sig == SIGTRAP)
			break;
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
			ret = -EIO;
			goto out_kill;
		}
		/* The SIGSTOP every CLONE_PTRACE child starts with, or a signal someone sent. */
		if (ptrace(PTRACE_CONT, (pid_t)pid, 0, 0) < 0) {
			ret = -errno;
			goto out_kill;
		}
	}
	if (ptrace(PTRACE_GETREGS, (pid_t)pid, 0, &r) < 0) {
		ret = -errno;
		goto out_kill;
	}
	if (r.rip != code->forked_done || r.r12 != 0) {
		ret = r.rip == code->forked_done && (long)r.rax < 0 && (long)r.rax >= -4095 ?
			      (int)r.rax :
			      -EIO;
		log_error("ptrace: a stub forked from the template failed to set itself up "
			  "(step %llu at %#llx): %s",
			  r.r12, r.rip, strerror(-ret));
		goto out_kill;
	}
	if (ptrace(PTRACE_DETACH, (pid_t)pid, 0, 0) < 0) {
		ret = -errno;
		goto out_kill;
	}
	return (pid_t)pid;

out_kill:
	stub_kill_and_reap((pid_t)pid);
	return ret;
}

/*
 * The factory thread: forks the template stub (stub_spawn: it is the template's tracer and
 * parent), then keeps one stub forked from it ready. It runs until ptrace_destroy, even after
 * a failure: the stubs it made have it as their parent, and its end would kill them
 * (PR_SET_PDEATHSIG).
 */
static void *factory_main(void *arg)
{
	struct ptrace_platform *pp = arg;
	struct stub_factory *f = &pp->factory;
	struct ptrace_as *tas = calloc(1, sizeof(*tas));
	struct ptrace_ctx *tmpl = NULL;
	arch_regs_t regs;
	pid_t pid = 0;
	int ret = tas ? stub_spawn(pp->code, pp->base.memfd, pp->base.imagefd, &pid, &regs) :
			-ENOMEM;

	if (ret == 0) {
		tmpl = thread_new(tas, pid);
		if (!tmpl) {
			stub_kill_and_reap(pid);
			ret = -ENOMEM;
		}
	}
	if (ret == 0) {
		tas->base.p = &pp->base;
		tas->code = pp->code;
		tas->pid = pid;
		tas->init_regs = regs;
		pthread_mutex_init(&tas->lock, NULL);
		tmpl->tracer = my_tid();
		tmpl->regs = regs;
		thread_link(tmpl);
		log_debug("ptrace: template stub %d", pid);
	}

	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		if (ret < 0 || f->ready) {
			pthread_cond_wait(&f->cond, &f->lock);
			continue;
		}
		pthread_mutex_unlock(&f->lock);
		pid = template_fork(tmpl);
		pthread_mutex_lock(&f->lock);
		if (pid < 0) {
			ret = pid;
			log_warn(
				"ptrace: cannot fork stubs from the template stub (%s); forking them "
				"from the sentry instead",
				strerror(-ret));
			f->err = ret;
		} else {
			f->ready = pid;
		}
		pthread_cond_broadcast(&f->cond);
	}
	if (f->ready) {
		stub_kill_and_reap(f->ready);
		f->ready = 0;
	}
	pthread_mutex_unlock(&f->lock);
	if (tmpl)
		ptrace_as_destroy(&tas->base); /* kills and reaps the template, frees tas */
	else
		free(tas);
	return NULL;
}

/* Ends pp's factory thread (it kills and reaps its stubs) and waits for it. */
static void factory_stop(struct ptrace_platform *pp)
{
	struct stub_factory *f = &pp->factory;
	bool started;

	pthread_mutex_lock(&f->lock);
	f->stop = true;
	started = f->started;
	f->started = false;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (started)
		pthread_join(f->thread, NULL);
}

static void factories_stop_all(void)
{
	pthread_mutex_lock(&factories_lock);
	for (struct ptrace_platform *pp = factories; pp; pp = pp->next_factory)
		factory_stop(pp);
	pthread_mutex_unlock(&factories_lock);
}

static void factories_init(void)
{
	if (atexit(factories_stop_all) != 0)
		log_warn("ptrace: cannot register the stub factories' end at exit");
}

/* Puts pp in the factories list (once). */
static void factory_register(struct ptrace_platform *pp)
{
	pthread_once(&factories_once, factories_init);
	pthread_mutex_lock(&factories_lock);
	if (!pp->registered) {
		pp->next_factory = factories;
		factories = pp;
		pp->registered = true;
	}
	pthread_mutex_unlock(&factories_lock);
}

/* Takes pp out of the factories list. */
static void factory_unregister(struct ptrace_platform *pp)
{
	pthread_mutex_lock(&factories_lock);
	for (struct ptrace_platform **pp_ = &factories; *pp_; pp_ = &(*pp_)->next_factory) {
		if (*pp_ == pp) {
			*pp_ = pp->next_factory;
			break;
		}
	}
	pp->registered = false;
	pthread_mutex_unlock(&factories_lock);
}

/*
 * Takes the stub the factory has ready (starting the factory the first time), waiting for it if
 * need be. Returns its pid (a parked stub, traced by nobody), or -errno if the factory cannot
 * make stubs or was stopped (the caller then forks one from the sentry).
 */
static pid_t factory_take(struct ptrace_platform *pp)
{
	struct stub_factory *f = &pp->factory;
	pid_t pid;

	factory_register(pp);
	pthread_mutex_lock(&f->lock);
	if (f->stop) {
		pthread_mutex_unlock(&f->lock);
		return -ESHUTDOWN;
	}
	/*
	 * The first space (pid 1's) is made by the caller: one fork of a sentry that is still
	 * small costs less than the factory thread, the template and a fork of it, and a sandbox
	 * whose pid 1 never forks or execs never pays for the factory at all. It starts on the
	 * second as_create.
	 */
	if (!f->first_taken) {
		f->first_taken = true;
		pthread_mutex_unlock(&f->lock);
		return -EAGAIN;
	}
	if (!f->started && !f->err) {
		int r = pthread_create(&f->thread, NULL, factory_main, pp);

		if (r == 0)
			f->started = true;
		else
			f->err = -r;
	}
	while (!f->ready && !f->err && !f->stop)
		pthread_cond_wait(&f->cond, &f->lock);
	pid = f->ready ? f->ready : f->err ? f->err : -ESHUTDOWN;
	f->ready = 0;
	pthread_cond_broadcast(&f->cond); /* make the next one */
	pthread_mutex_unlock(&f->lock);
	return pid;
}

static int ptrace_ctx_clone(struct platform_ctx *pfrom, struct platform_ctx **out)
{
	struct ptrace_ctx *from = to_ctx(pfrom), *t;
	struct ptrace_as *as = from->as;
	long tid;

	if (!is_tracer(from))
		return -EPERM;
	t = thread_new(as, 0);
	if (!t)
		return -ENOMEM;
	tid = stub_call_at(from, as->code->clone, as->code->clone_done, __NR_clone,
			   STUB_CLONE_FLAGS, 0, 0, 0, 0, 0);
	if (tid <= 0) {
		free(t);
		return tid < 0 ? (int)tid : -EIO;
	}
	t->tid = (pid_t)tid;
	t->claimed = true;
	thread_link(t);
	*out = &t->base;
	return 0;
}

static int ptrace_ctx_adopt(struct platform_ctx *pctx)
{
	struct ptrace_ctx *t = to_ctx(pctx);

	if (t->tracer)
		return t->tracer == my_tid() ? 0 : -EBUSY;
	if (as_is_dead(t->as))
		return -ESRCH;
	return thread_seize(t);
}

static void ptrace_ctx_destroy(struct platform_ctx *pctx);

static int ptrace_ctx_create(struct platform_as *pas, struct platform_ctx **out)
{
	struct ptrace_as *as = to_as(pas);
	pid_t me = my_tid();
	struct ptrace_ctx *t, *mine = NULL, *free_thread = NULL;
	int ret;

	pthread_mutex_lock(&as->lock);
	for (t = as->threads; t; t = t->next) {
		if (t->tracer != me || thread_is_dead(t))
			continue;
		mine = t;
		if (!t->claimed)
			free_thread = t;
	}
	if (free_thread)
		free_thread->claimed = true;
	pthread_mutex_unlock(&as->lock);
	if (free_thread) {
		cpu_split_thread_reset(&as->cpu, &free_thread->cput, false);
		*out = &free_thread->base;
		return 0;
	}
	if (!mine)
		return as_is_dead(as) ? -ESRCH : -EPERM;
	/* Another guest thread driven by this same host thread: clone, and take it at once. */
	ret = ptrace_ctx_clone(&mine->base, out);
	if (ret < 0)
		return ret;
	ret = thread_seize(to_ctx(*out));
	if (ret < 0) {
		ptrace_ctx_destroy(*out);
		return ret;
	}
	return 0;
}

/* True if as has a live thread other than t. */
static bool has_other_threads(struct ptrace_ctx *t)
{
	struct ptrace_as *as = t->as;
	bool others = false;

	pthread_mutex_lock(&as->lock);
	for (struct ptrace_ctx *o = as->threads; o && !others; o = o->next)
		others = o != t && !thread_is_dead(o);
	pthread_mutex_unlock(&as->lock);
	return others;
}

/*
 * Ends stub thread t alone (its tracer only): exit(2) through the gadget. PTRACE_O_EXITKILL is
 * dropped first, so that nothing happens to the process when the tracer exits later. A thread
 * other than the initial one is reaped here; the initial one stays a zombie until the process
 * ends (as_destroy reaps it).
 */
static void thread_exit(struct ptrace_ctx *t)
{
	struct ptrace_as *as = t->as;
	arch_regs_t r = t->regs;
	int status;

	if (ptrace(PTRACE_SETOPTIONS, t->tid, 0, PTRACE_O_TRACESYSGOOD) < 0)
		goto failed;
	r.rip = as->code->gadget;
	r.rax = __NR_exit;
	r.orig_rax = (uint64_t)-1;
	r.rdi = 0;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0 || ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
		goto failed;
	if (t->tid == as->pid) {
		as->leader_exited = true;
		__atomic_store_n(&t->dead, 1, __ATOMIC_RELEASE);
		return;
	}
	while (thread_wait(t, &status) == 0) {
		/* A signal stop before the exit: suppress it. */
		if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0 && errno != ESRCH)
			break;
	}
	return;
failed:
	request_failed(t);
}

static void ptrace_ctx_destroy(struct platform_ctx *pctx)
{
	struct ptrace_ctx *t;

	if (!pctx)
		return;
	t = to_ctx(pctx);
	cpu_split_thread_forget(&t->as->cpu, &t->cput);
	/* Made by ctx_clone and never adopted: take it, to end it. */
	if (!t->tracer && !thread_is_dead(t) && !as_is_dead(t->as) && thread_seize(t) < 0)
		log_warn("ptrace: cannot take stub thread %d to end it", t->tid);
	if (thread_is_dead(t) || as_is_dead(t->as)) {
		if (t->tid == t->as->pid || t->as->pid == 0) {
			t->claimed = false; /* as_destroy reaps the process through it */
		} else {
			thread_reap(t);
			thread_unlink_free(t);
		}
		return;
	}
	if (!is_tracer(t)) {
		/* Only the tracer can end a single thread; the process ends with as_destroy. */
		log_error(
			"ptrace: ctx of stub thread %d destroyed by a thread that does not own it",
			t->tid);
		t->claimed = false;
		return;
	}
	if (!has_other_threads(t)) {
		/* The last thread stays, stopped, until as_destroy; a later ctx_create reuses it. */
		t->claimed = false;
		return;
	}
	thread_exit(t);
	thread_unlink_free(t);
}

/* Hardware trap number implied by a fault signal, or -1 when it cannot be told. */
static int fault_trapno(int signo, int code)
{
	switch (signo) {
	case SIGSEGV:
		if (code == SEGV_MAPERR || code == SEGV_ACCERR || code == SEGV_PKUERR)
			return 14; /* #PF */
		return code == SI_KERNEL ? 13 : -1; /* #GP, by far the usual source */
	case SIGBUS:
		if (code == BUS_ADRERR)
			return 14; /* #PF beyond the end of the file */
		return code == BUS_ADRALN ? 17 : -1; /* #AC */
	case SIGILL:
		return 6; /* #UD */
	case SIGFPE:
		return code == FPE_INTDIV ? 0 : -1; /* #DE; x87 (#MF) and SIMD (#XM) share codes */
	case SIGTRAP:
		if (code == SI_KERNEL)
			return 3; /* #BP: int3 */
		return code == TRAP_TRACE || code == TRAP_HWBKPT ? 1 : -1; /* #DB */
	default:
		return -1;
	}
}

/*
 * True if a and b differ at most in rax and orig_rax, and a's rax is no restart code: only then
 * may orig_rax keep the stub's system-call number (see load_regs).
 */
static bool only_rax_differs(const arch_regs_t *a, const arch_regs_t *b)
{
	arch_regs_t t = *a;
	long rax = (long)a->rax;

	if (rax >= -KERNEL_ERESTART_RESTARTBLOCK && rax <= -KERNEL_ERESTARTSYS)
		return false;
	t.rax = b->rax;
	t.orig_rax = b->orig_rax;
	return memcmp(&t, b, sizeof(t)) == 0;
}

/*
 * Keeps the stub thread on the CPU its tracer runs on: each round trip is two wake-ups, and a
 * wake-up on the same CPU costs a fraction of one on another (measured here: 42-52 us per
 * guest system call unbound, 15-19 us bound). Costs a system call only when the tracer moved.
 * Used only if the sentry's seccomp filter allows sched_setaffinity (stub_cpu_binding()).
 */
static void bind_to_tracer_cpu(struct ptrace_ctx *t)
{
	int cpu = sched_getcpu();

	if (cpu == t->cpu || cpu < 0 || !stub_cpu_binding())
		return;
	/* Failure (e.g. a cpuset without that CPU) only costs speed; not retried on this CPU. */
	husk_cpu_pin(t->tid, cpu);
	t->cpu = cpu;
}

/*
 * Sets the stub thread's registers to *regs with as few requests as possible. orig_rax is
 * always written as -1 so that the host never applies its own system-call restart logic to a
 * guest rax that happens to hold a kernel-internal -ERESTART* value.
 */
static int load_regs(struct ptrace_ctx *t, const arch_regs_t *regs)
{
	const arch_regs_t *init = &t->as->init_regs;
	arch_regs_t r = *regs;

	if (r.cs == 0)
		r.cs = init->cs ? init->cs : USER64_CS;
	if (r.ss == 0)
		r.ss = init->ss ? init->ss : USER64_SS;
	r.orig_rax = (uint64_t)-1;

	if (memcmp(&r, &t->regs, sizeof(r)) == 0)
		return 0;
	if (only_rax_differs(&r, &t->regs)) {
		/* The usual return from a system call. POKEUSER costs 0.6 us here, SETREGS 1.6. */
		if (ptrace(PTRACE_POKEUSER, t->tid, (void *)offsetof(arch_regs_t, rax),
			   (void *)r.rax) < 0)
			return request_failed(t);
		t->regs.rax = r.rax;
		return 0;
	}
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0)
		return request_failed(t);
	t->regs = r;
	return 0;
}

/* Fills ev for a signal stop with status. Returns true if it is an event to report. */
static bool classify_signal(struct ptrace_ctx *ctx, int status, struct platform_event *ev)
{
	int sig = WSTOPSIG(status);
	siginfo_t si;

	/* Event stops (PTRACE_EVENT_STOP of a seized thread) are no signal of the guest's. */
	if ((status >> 16) == 0) {
		if (ptrace(PTRACE_GETSIGINFO, ctx->tid, 0, &si) < 0)
			return false; /* a group-stop, not a signal: resume */
		/* si_code > 0: raised by the CPU/kernel for this thread, i.e. by the guest. */
		if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
		     sig == SIGTRAP) &&
		    si.si_code > 0) {
			ev->kind = PLATFORM_EV_FAULT;
			ev->signo = sig;
			ev->code = si.si_code;
			ev->addr = (uint64_t)si.si_addr;
			ev->trapno = fault_trapno(sig, si.si_code);
			return true;
		}
	}
	if (__atomic_exchange_n(&ctx->interrupt, 0, __ATOMIC_ACQ_REL)) {
		ev->kind = PLATFORM_EV_INTERRUPT;
		return true;
	}
	return false;
}

static int ptrace_ctx_switch_once(struct platform_ctx *pctx, arch_regs_t *regs,
				  struct platform_event *ev);

/* ctx_switch; the first switch of a ctx (the new program's start) is timed. */
static int ptrace_ctx_switch(struct platform_ctx *pctx, arch_regs_t *regs,
			     struct platform_event *ev)
{
	struct ptrace_ctx *ctx = to_ctx(pctx);
	uint64_t t0;
	int ret;

	if (ctx->switched || log_get_level() < LOG_DEBUG) {
		cpu_enter(ctx);
		ret = ptrace_ctx_switch_once(pctx, regs, ev);
		cpu_leave(ctx);
		return ret;
	}
	ctx->switched = true;
	t0 = mono_ns();
	cpu_enter(ctx);
	ret = ptrace_ctx_switch_once(pctx, regs, ev);
	cpu_leave(ctx);
	log_debug("timing: ptrace first switch of %d: %llu us", ctx->tid,
		  (unsigned long long)(mono_ns() - t0) / 1000);
	return ret;
}

static int ptrace_ctx_switch_once(struct platform_ctx *pctx, arch_regs_t *regs,
				  struct platform_event *ev)
{
	struct ptrace_ctx *ctx = to_ctx(pctx);
	struct ptrace_as *as = ctx->as;
	int status, ret;

	if (!is_tracer(ctx))
		return -EPERM;
	memset(ev, 0, sizeof(*ev));
	ev->trapno = -1;
	if (as_is_dead(as) || thread_is_dead(ctx))
		goto died;

	for (;;) {
		/* Changes queued by a thread tracing no thread of this space. */
		if (__atomic_load_n(&as->queued, __ATOMIC_ACQUIRE)) {
			ret = apply_queue(ctx);
			if (ret < 0)
				goto fail;
		}
		/* An interrupt whose signal was swallowed while the stub ran an injected call. */
		if (__atomic_exchange_n(&ctx->interrupt, 0, __ATOMIC_ACQ_REL)) {
			ev->kind = PLATFORM_EV_INTERRUPT;
			return 0;
		}
		ret = load_regs(ctx, regs);
		if (ret < 0)
			goto fail;
		bind_to_tracer_cpu(ctx);

		if (ptrace(ctx->step ? PTRACE_SYSEMU_SINGLESTEP : PTRACE_SYSEMU, ctx->tid, 0, 0) <
		    0) {
			ret = request_failed(ctx);
			goto fail;
		}
		ret = thread_wait(ctx, &status);
		if (ret < 0)
			goto fail;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GETREGS, ctx->tid, 0, regs) < 0) {
				ret = request_failed(ctx);
				goto fail;
			}
			ctx->regs = *regs;
			/*
			 * `syscall` leaves rcx == rip. Anything else came through int $0x80 (the
			 * 32-bit ABI, which husk does not offer): report what a kernel without
			 * IA-32 emulation does, a #GP at the instruction.
			 */
			if (regs->rcx != regs->rip) {
				regs->rip -= 2;
				regs->rax = regs->orig_rax;
				regs->orig_rax = (uint64_t)-1;
				ev->kind = PLATFORM_EV_FAULT;
				ev->signo = SIGSEGV;
				ev->code = SI_KERNEL;
				ev->addr = 0;
				ev->trapno = 13;
				return 0;
			}
			ev->kind = PLATFORM_EV_SYSCALL;
			return 0;
		}
		if (classify_signal(ctx, status, ev)) {
			if (ptrace(PTRACE_GETREGS, ctx->tid, 0, regs) < 0) {
				ret = request_failed(ctx);
				goto fail;
			}
			ctx->regs = *regs;
			return 0;
		}
		/*
		 * Not ours to report: the signal is dropped by resuming with signal 0. If changes
		 * were queued meanwhile (that signal may have been the kick), the guest's registers
		 * are saved before the stub runs them, and loaded again after.
		 */
		if (__atomic_load_n(&as->queued, __ATOMIC_ACQUIRE)) {
			if (ptrace(PTRACE_GETREGS, ctx->tid, 0, regs) < 0) {
				ret = request_failed(ctx);
				goto fail;
			}
			ctx->regs = *regs;
		}
	}

fail:
	if (ret != -ESRCH)
		return ret;
died:
	ev->kind = PLATFORM_EV_DIED;
	return 0;
}

/* Guest ptrace's single step: the host's PTRACE_SYSEMU_SINGLESTEP for one switch. */
static int ptrace_ctx_singlestep(struct platform_ctx *pctx, arch_regs_t *regs,
				 struct platform_event *ev)
{
	struct ptrace_ctx *ctx = to_ctx(pctx);
	int ret;

	if (!is_tracer(ctx))
		return -EPERM;
	ctx->step = true;
	ret = ptrace_ctx_switch(pctx, regs, ev);
	ctx->step = false;
	return ret;
}

static void ptrace_ctx_interrupt(struct platform_ctx *pctx)
{
	struct ptrace_ctx *ctx = to_ctx(pctx);
	struct ptrace_as *as = ctx->as;

	__atomic_store_n(&ctx->interrupt, 1, __ATOMIC_RELEASE);
	/*
	 * A thread is reaped only by its tracer (or as_destroy) after it died, and then dead is
	 * set first; the signal is one nobody would act on should the tid have been reused.
	 */
	if (!thread_is_dead(ctx) && !__atomic_load_n(&as->reaped, __ATOMIC_ACQUIRE))
		tgkill(as->pid, ctx->tid, PTRACE_INTERRUPT_SIGNAL);
}

static int ptrace_ctx_get_fpstate(struct platform_ctx *pctx, void *buf, size_t len)
{
	struct ptrace_ctx *t = to_ctx(pctx);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	if (len < platform_fpstate_size())
		return -ENOSPC;
	if (!is_tracer(t))
		return -EPERM;
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) < 0)
		return -errno;
	return (int)iov.iov_len;
}

static int ptrace_ctx_set_fpstate(struct platform_ctx *pctx, const void *buf, size_t len)
{
	struct ptrace_ctx *t = to_ctx(pctx);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (len != platform_fpstate_size())
		return -EINVAL;
	if (!is_tracer(t))
		return -EPERM;
	if (ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) < 0)
		return errno == EFAULT ? -EINVAL : -errno;
	return 0;
}

static void ptrace_destroy(struct platform *p)
{
	struct ptrace_platform *pp = container_of(p, struct ptrace_platform, base);
	struct stub_factory *f = &pp->factory;

	factory_unregister(pp);
	factory_stop(pp);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(pp);
}

/*
 * The host keeps the stub's peak RSS (its mm's hiwater mark), and wait4 reports it with any
 * stop: one injected mprotect(0, 0, 0), which does nothing, makes a stop.
 */
static long ptrace_ctx_peak_rss_kb(struct platform_ctx *pctx)
{
	struct ptrace_ctx *t = to_ctx(pctx);
	struct rusage ru = { 0 };
	long ret;

	if (!is_tracer(t))
		return -EPERM;
	t->rusage = &ru;
	ret = stub_call(t, __NR_mprotect, 0, 0, 0, 0, 0, 0);
	t->rusage = NULL;
	if (ret < 0)
		return ret;
	return ru.ru_maxrss;
}

static uint64_t ptrace_ctx_cpu_ns(struct platform_ctx *pctx)
{
	struct ptrace_ctx *t = to_ctx(pctx);
	struct ptrace_as *as = t->as;
	uint64_t ns;

	ns = cpu_split_read(&as->cpu, &t->cput);
	return ns;
}

pid_t ptrace_as_stub_pid(struct platform_as *pas)
{
	struct ptrace_as *as = to_as(pas);

	return __atomic_load_n(&as->reaped, __ATOMIC_ACQUIRE) ? -1 : as->pid;
}

int ptrace_platform_create(int memfd, struct platform **out)
{
	const struct stub_code *code;
	struct ptrace_platform *pp;
	int err = 0;

	if (memfd < 0 || fcntl(memfd, F_GETFD) < 0)
		return -EBADF;
	code = stub_code_get(&err);
	if (!code)
		return err;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	pp->base.ops = &ptrace_ops;
	pp->base.memfd = memfd;
	pp->base.imagefd = -1;
	pp->code = code;
	pthread_mutex_init(&pp->factory.lock, NULL);
	pthread_cond_init(&pp->factory.cond, NULL);
	*out = &pp->base;
	return 0;
}

static const struct platform_ops ptrace_ops = {
	.name = "ptrace",
	.as_create = ptrace_as_create,
	.as_destroy = ptrace_as_destroy,
	.as_map = ptrace_as_map,
	.as_map_image = ptrace_as_map_image,
	.as_unmap = ptrace_as_unmap,
	.as_protect = ptrace_as_protect,
	.ctx_create = ptrace_ctx_create,
	.ctx_destroy = ptrace_ctx_destroy,
	.ctx_clone = ptrace_ctx_clone,
	.ctx_adopt = ptrace_ctx_adopt,
	.ctx_switch = ptrace_ctx_switch,
	.ctx_interrupt = ptrace_ctx_interrupt,
	.destroy = ptrace_destroy,
	.ctx_get_fpstate = ptrace_ctx_get_fpstate,
	.ctx_set_fpstate = ptrace_ctx_set_fpstate,
	.ctx_singlestep = ptrace_ctx_singlestep,
	.ctx_cpu_ns = ptrace_ctx_cpu_ns,
	.ctx_peak_rss_kb = ptrace_ctx_peak_rss_kb,
	.as_host_pid = ptrace_as_stub_pid,
};
