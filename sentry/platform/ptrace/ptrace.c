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
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "sentry/platform/ptrace/ptrace.h"
#include "sentry/platform/ptrace/stub.h"

/* The default 64-bit user selectors (__USER_CS, __USER_DS) used when a caller passes zero. */
#define USER64_CS 0x33
#define USER64_SS 0x2b

/* The kernel-internal restart errnos: the host would act on them if orig_rax were >= 0. */
#define KERNEL_ERESTARTSYS 512
#define KERNEL_ERESTART_RESTARTBLOCK 516

struct ptrace_platform {
	struct platform base;
	const struct stub_code *code;
};

/* A mapping change queued by a thread other than the tracer. */
struct ptrace_op {
	long nr; /* __NR_mmap, __NR_munmap or __NR_mprotect */
	uint64_t addr, len, off;
	int prot;
};

struct ptrace_ctx;

struct ptrace_as {
	struct platform_as base;
	const struct stub_code *code;
	pid_t pid; /* the stub; its only thread has tid == pid */
	pid_t tracer; /* tid of the tracer thread, the only one that may issue ptrace requests */
	int dead; /* atomic: set once the stub is reaped */
	/* The stub thread's registers as last set or read; the tracer's alone. */
	arch_regs_t regs;
	/* Segment selectors and flags the stub started with (defaults for zero selectors). */
	arch_regs_t init_regs;
	struct ptrace_ctx *ctx; /* the initial thread's ctx, or NULL */
	int cpu; /* the one CPU the stub is bound to, or -1 (see bind_to_tracer_cpu) */

	pthread_mutex_t lock; /* protects the queue */
	struct ptrace_op *queue;
	size_t nqueue, queue_cap;
	int queued; /* atomic: nqueue != 0, read without the lock */
};

struct ptrace_ctx {
	struct platform_ctx base;
	struct ptrace_as *as;
	int interrupt; /* atomic: ctx_interrupt() was called and not yet reported */
};

static const struct platform_ops ptrace_ops;

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

/* Records that the stub is gone and reaped. */
static void as_mark_dead(struct ptrace_as *as, int status)
{
	if (WIFSIGNALED(status))
		log_warn("ptrace: stub %d killed by signal %d", as->pid, WTERMSIG(status));
	else
		log_warn("ptrace: stub %d exited with status %d", as->pid, WEXITSTATUS(status));
	__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
}

/* Waits for the stub's next stop. Returns 0 with *status, -ESRCH if it died (reaped). */
static int as_wait(struct ptrace_as *as, int *status)
{
	int ret = stub_wait(as->pid, status);

	if (ret < 0) {
		/* ECHILD: somebody else reaped it (a waitpid(-1) elsewhere in the sentry). */
		__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
		return ret == -ECHILD ? -ESRCH : ret;
	}
	if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
		as_mark_dead(as, *status);
		return -ESRCH;
	}
	return 0;
}

/*
 * A ptrace request on the stub failed with errno. ESRCH means it is no longer in a stop, which
 * for a stopped tracee means it was killed: make sure of that and reap it.
 * Returns -errno (-ESRCH once the stub is gone).
 */
static int request_failed(struct ptrace_as *as)
{
	int err = errno, status;

	if (err != ESRCH)
		return -err;
	kill(as->pid, SIGKILL); /* unreaped, so the pid is still ours */
	while (as_wait(as, &status) == 0)
		;
	return -ESRCH;
}

/*
 * Runs system call nr inside the stub: the stub's registers are replaced by a copy pointing at
 * the `syscall; int3` gadget, the stub runs to the int3, and as->regs then holds what it has.
 * The guest registers are not restored here: the next ctx_switch sets them all (it compares
 * against as->regs). Returns the call's result or -errno (-ESRCH if the stub is gone).
 */
static long stub_call(struct ptrace_as *as, long nr, uint64_t a1, uint64_t a2, uint64_t a3,
		      uint64_t a4, uint64_t a5, uint64_t a6)
{
	arch_regs_t r = as->regs;
	siginfo_t si;
	int status, ret;

	if (as_is_dead(as))
		return -ESRCH;
	r.rip = as->code->gadget;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1;
	r.rdi = a1;
	r.rsi = a2;
	r.rdx = a3;
	r.r10 = a4;
	r.r8 = a5;
	r.r9 = a6;
	if (ptrace(PTRACE_SETREGS, as->pid, 0, &r) < 0)
		return request_failed(as);
	as->regs = r;
	if (ptrace(PTRACE_CONT, as->pid, 0, 0) < 0)
		return request_failed(as);
	for (;;) {
		ret = as_wait(as, &status);
		if (ret < 0)
			return ret;
		if (WSTOPSIG(status) == SIGTRAP) {
			if (ptrace(PTRACE_GETREGS, as->pid, 0, &as->regs) < 0)
				return request_failed(as);
			if (as->regs.rip == as->code->gadget_done)
				return (long)as->regs.rax;
		} else if (ptrace(PTRACE_GETSIGINFO, as->pid, 0, &si) == 0 && si.si_code > 0 &&
			   (WSTOPSIG(status) == SIGSEGV || WSTOPSIG(status) == SIGBUS ||
			    WSTOPSIG(status) == SIGILL || WSTOPSIG(status) == SIGFPE)) {
			/* The gadget itself faulted: the stub is beyond use. */
			log_error("ptrace: stub %d faulted (signal %d) running call %ld", as->pid,
				  WSTOPSIG(status), nr);
			return -EIO;
		}
		/*
		 * Any other stop (a signal someone sent, ctx_interrupt's signal whose request
		 * stays in ctx->interrupt): suppress it and let the call finish.
		 */
		if (ptrace(PTRACE_CONT, as->pid, 0, 0) < 0)
			return request_failed(as);
	}
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

static bool is_tracer(const struct ptrace_as *as)
{
	return gettid() == as->tracer;
}

/* Runs one mapping change inside the stub. Tracer only. */
static int apply_op(struct ptrace_as *as, const struct ptrace_op *op)
{
	long ret;

	switch (op->nr) {
	case __NR_mmap:
		ret = stub_call(as, __NR_mmap, op->addr, op->len, (uint64_t)op->prot,
				MAP_SHARED | MAP_FIXED, PTRACE_STUB_MEMFD, op->off);
		if (ret >= 0 && (uint64_t)ret != op->addr)
			ret = -EIO; /* cannot happen with MAP_FIXED */
		break;
	case __NR_munmap:
		ret = stub_call(as, __NR_munmap, op->addr, op->len, 0, 0, 0, 0);
		break;
	default:
		ret = stub_call(as, __NR_mprotect, op->addr, op->len, (uint64_t)op->prot, 0, 0, 0);
		break;
	}
	return ret < 0 ? (int)ret : 0;
}

/* Applies the change now (tracer) or queues it for the tracer's next ctx_switch. */
static int submit_op(struct ptrace_as *as, const struct ptrace_op *op)
{
	if (as_is_dead(as))
		return -ESRCH;
	if (is_tracer(as))
		return apply_op(as, op);

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
	pthread_mutex_unlock(&as->lock);
	return 0;
}

/* Applies every queued change. Tracer only. Returns 0 or the first error. */
static int apply_queue(struct ptrace_as *as)
{
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
		int err = apply_op(as, &q[i]);

		if (err < 0 && ret == 0) {
			log_error("ptrace: queued mapping change at %#llx failed: %s",
				  (unsigned long long)q[i].addr, strerror(-err));
			ret = err;
		}
	}
	free(q);
	return ret;
}

static int ptrace_as_create(struct platform *p, struct platform_as **out)
{
	struct ptrace_platform *pp = container_of(p, struct ptrace_platform, base);
	struct ptrace_as *as;
	int ret;

	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	ret = stub_spawn(pp->code, p->memfd, &as->pid, &as->regs);
	if (ret < 0) {
		free(as);
		return ret;
	}
	as->base.p = p;
	as->code = pp->code;
	as->tracer = gettid();
	as->init_regs = as->regs;
	as->cpu = -1;
	pthread_mutex_init(&as->lock, NULL);
	*out = &as->base;
	return 0;
}

static void ptrace_ctx_destroy(struct platform_ctx *ctx);

static void ptrace_as_destroy(struct platform_as *pas)
{
	struct ptrace_as *as;

	if (!pas)
		return;
	as = to_as(pas);
	if (as->ctx)
		ptrace_ctx_destroy(&as->ctx->base);
	/* Not yet reaped, so the pid cannot have been reused: safe to kill by pid. */
	if (!as_is_dead(as))
		stub_kill_and_reap(as->pid);
	pthread_mutex_destroy(&as->lock);
	free(as->queue);
	free(as);
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

static int ptrace_ctx_create(struct platform_as *pas, struct platform_ctx **out)
{
	struct ptrace_as *as = to_as(pas);
	struct ptrace_ctx *ctx;

	/* One stub thread for now: a second guest thread needs a cloned stub thread. */
	if (as->ctx)
		return -ENOSYS;
	if (!is_tracer(as))
		return -EPERM;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->base.as = pas;
	ctx->as = as;
	as->ctx = ctx;
	*out = &ctx->base;
	return 0;
}

static void ptrace_ctx_destroy(struct platform_ctx *pctx)
{
	struct ptrace_ctx *ctx;

	if (!pctx)
		return;
	ctx = to_ctx(pctx);
	/* The stub thread stays (stopped) until as_destroy; a later ctx_create reuses it. */
	ctx->as->ctx = NULL;
	free(ctx);
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
 * Keeps the stub on the CPU its tracer runs on: each round trip is two wake-ups, and a
 * wake-up on the same CPU costs a fraction of one on another (measured here: 42-52 us per
 * guest system call unbound, 15-19 us bound). Costs a system call only when the tracer moved.
 * Used only if the sentry's seccomp filter allows sched_setaffinity (stub_cpu_binding()).
 */
static void bind_to_tracer_cpu(struct ptrace_as *as)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu == as->cpu || cpu < 0 || cpu >= CPU_SETSIZE || !stub_cpu_binding())
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Failure (e.g. a cpuset without that CPU) only costs speed; not retried on this CPU. */
	sched_setaffinity(as->pid, sizeof(set), &set);
	as->cpu = cpu;
}

/*
 * Sets the stub thread's registers to *regs with as few requests as possible. orig_rax is
 * always written as -1 so that the host never applies its own system-call restart logic to a
 * guest rax that happens to hold a kernel-internal -ERESTART* value.
 */
static int load_regs(struct ptrace_as *as, const arch_regs_t *regs)
{
	arch_regs_t r = *regs;

	if (r.cs == 0)
		r.cs = as->init_regs.cs ? as->init_regs.cs : USER64_CS;
	if (r.ss == 0)
		r.ss = as->init_regs.ss ? as->init_regs.ss : USER64_SS;
	r.orig_rax = (uint64_t)-1;

	if (memcmp(&r, &as->regs, sizeof(r)) == 0)
		return 0;
	if (only_rax_differs(&r, &as->regs)) {
		/* The usual return from a system call. POKEUSER costs 0.6 us here, SETREGS 1.6. */
		if (ptrace(PTRACE_POKEUSER, as->pid, (void *)offsetof(arch_regs_t, rax),
			   (void *)r.rax) < 0)
			return request_failed(as);
		as->regs.rax = r.rax;
		return 0;
	}
	if (ptrace(PTRACE_SETREGS, as->pid, 0, &r) < 0)
		return request_failed(as);
	as->regs = r;
	return 0;
}

/* Fills ev for a signal stop with signal sig. Returns true if it is an event to report. */
static bool classify_signal(struct ptrace_ctx *ctx, int sig, struct platform_event *ev)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, ctx->as->pid, 0, &si) < 0)
		return false; /* a group-stop, not a signal: resume */
	/* si_code > 0: raised by the CPU/kernel for this thread, i.e. by the guest. */
	if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP) &&
	    si.si_code > 0) {
		ev->kind = PLATFORM_EV_FAULT;
		ev->signo = sig;
		ev->code = si.si_code;
		ev->addr = (uint64_t)si.si_addr;
		ev->trapno = fault_trapno(sig, si.si_code);
		return true;
	}
	if (__atomic_exchange_n(&ctx->interrupt, 0, __ATOMIC_ACQ_REL)) {
		ev->kind = PLATFORM_EV_INTERRUPT;
		return true;
	}
	return false;
}

static int ptrace_ctx_switch(struct platform_ctx *pctx, arch_regs_t *regs,
			     struct platform_event *ev)
{
	struct ptrace_ctx *ctx = to_ctx(pctx);
	struct ptrace_as *as = ctx->as;
	int status, ret, sig;

	if (!is_tracer(as))
		return -EPERM;
	memset(ev, 0, sizeof(*ev));
	ev->trapno = -1;
	if (as_is_dead(as))
		goto died;
	if (__atomic_load_n(&as->queued, __ATOMIC_ACQUIRE)) {
		ret = apply_queue(as);
		if (ret == -ESRCH)
			goto died;
		if (ret < 0)
			return ret;
	}
	/* An interrupt whose signal was swallowed while the stub ran an injected call. */
	if (__atomic_exchange_n(&ctx->interrupt, 0, __ATOMIC_ACQ_REL)) {
		ev->kind = PLATFORM_EV_INTERRUPT;
		return 0;
	}
	ret = load_regs(as, regs);
	if (ret < 0)
		goto fail;
	bind_to_tracer_cpu(as);

	for (;;) {
		if (ptrace(PTRACE_SYSEMU, as->pid, 0, 0) < 0) {
			ret = request_failed(as);
			goto fail;
		}
		ret = as_wait(as, &status);
		if (ret < 0)
			goto fail;
		sig = WSTOPSIG(status);
		if (sig == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GETREGS, as->pid, 0, regs) < 0) {
				ret = request_failed(as);
				goto fail;
			}
			as->regs = *regs;
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
		if (classify_signal(ctx, sig, ev)) {
			if (ptrace(PTRACE_GETREGS, as->pid, 0, regs) < 0) {
				ret = request_failed(as);
				goto fail;
			}
			as->regs = *regs;
			return 0;
		}
		/* Not ours to report: the signal is dropped by resuming with signal 0. */
	}

fail:
	if (ret != -ESRCH)
		return ret;
died:
	ev->kind = PLATFORM_EV_DIED;
	return 0;
}

static void ptrace_ctx_interrupt(struct platform_ctx *pctx)
{
	struct ptrace_ctx *ctx = to_ctx(pctx);
	struct ptrace_as *as = ctx->as;

	__atomic_store_n(&ctx->interrupt, 1, __ATOMIC_RELEASE);
	/*
	 * The stub is reaped only by its tracer after it died, and then dead is set first; the
	 * signal is one nobody would act on should the pid have been reused in between.
	 */
	if (!as_is_dead(as))
		tgkill(as->pid, as->pid, PTRACE_INTERRUPT_SIGNAL);
}

static int ptrace_ctx_get_fpstate(struct platform_ctx *pctx, void *buf, size_t len)
{
	struct ptrace_as *as = to_ctx(pctx)->as;
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	if (len < platform_fpstate_size())
		return -ENOSPC;
	if (!is_tracer(as))
		return -EPERM;
	if (ptrace(PTRACE_GETREGSET, as->pid, (void *)NT_X86_XSTATE, &iov) < 0)
		return -errno;
	return (int)iov.iov_len;
}

static int ptrace_ctx_set_fpstate(struct platform_ctx *pctx, const void *buf, size_t len)
{
	struct ptrace_as *as = to_ctx(pctx)->as;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (len != platform_fpstate_size())
		return -EINVAL;
	if (!is_tracer(as))
		return -EPERM;
	if (ptrace(PTRACE_SETREGSET, as->pid, (void *)NT_X86_XSTATE, &iov) < 0)
		return errno == EFAULT ? -EINVAL : -errno;
	return 0;
}

static void ptrace_destroy(struct platform *p)
{
	free(container_of(p, struct ptrace_platform, base));
}

pid_t ptrace_as_stub_pid(struct platform_as *pas)
{
	struct ptrace_as *as = to_as(pas);

	return as_is_dead(as) ? -1 : as->pid;
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
	pp->code = code;
	*out = &pp->base;
	return 0;
}

static const struct platform_ops ptrace_ops = {
	.name = "ptrace",
	.as_create = ptrace_as_create,
	.as_destroy = ptrace_as_destroy,
	.as_map = ptrace_as_map,
	.as_unmap = ptrace_as_unmap,
	.as_protect = ptrace_as_protect,
	.ctx_create = ptrace_ctx_create,
	.ctx_destroy = ptrace_ctx_destroy,
	.ctx_switch = ptrace_ctx_switch,
	.ctx_interrupt = ptrace_ctx_interrupt,
	.destroy = ptrace_destroy,
	.ctx_get_fpstate = ptrace_ctx_get_fpstate,
	.ctx_set_fpstate = ptrace_ctx_set_fpstate,
};
