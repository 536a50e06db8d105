/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signal frames on x86-64, as Linux 6.x builds them (arch/x86/kernel/signal*.c and
 * fpu/signal.c): below the red zone (or at the top of the alternate stack), the XSAVE area
 * aligned to 64 bytes with its software bytes and FP_XSTATE_MAGIC2, then struct rt_sigframe
 * with rsp = round_down(.., 16) - 8 so that the handler starts as if called.
 *
 * rt_sigreturn trusts nothing it reads back: segment selectors are the 64-bit user ones, only
 * the EFLAGS bits user space may change are taken, and the XSAVE area goes through the
 * platform, which rejects what the CPU would (reserved MXCSR bits, bad header).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"

#define USER_CS 0x33
#define USER_DS 0x2b
#define REDZONE 128

/* EFLAGS bits rt_sigreturn takes from the frame (Linux's FIX_EFLAGS). */
#define FIX_EFLAGS 0x50dd5ULL /* AC OF DF TF SF ZF AF PF CF RF */
/* Cleared for the handler: DF, RF, TF. */
#define HANDLER_CLEAR_EFLAGS 0x10500ULL

int signal_altstack(struct task *t, const struct linux_stack *ss, struct linux_stack *oss,
		    uint64_t sp)
{
	bool on_stack = !((uint32_t)t->altstack_flags & LINUX_SS_AUTODISARM) &&
			sp > t->altstack_sp && sp - t->altstack_sp <= t->altstack_size;

	if (oss) {
		memset(oss, 0, sizeof(*oss));
		oss->ss_sp = t->altstack_sp;
		oss->ss_size = t->altstack_size;
		oss->ss_flags = (int32_t)((!t->altstack_size ? LINUX_SS_DISABLE :
					   on_stack	     ? LINUX_SS_ONSTACK :
							       0) |
					  ((uint32_t)t->altstack_flags & LINUX_SS_AUTODISARM));
	}
	if (ss) {
		uint32_t flags = (uint32_t)ss->ss_flags;
		uint32_t mode = flags & ~LINUX_SS_AUTODISARM;
		uint64_t nsp = ss->ss_sp, nsize = ss->ss_size;

		if (on_stack)
			return -EPERM;
		if (mode != LINUX_SS_DISABLE && mode != LINUX_SS_ONSTACK && mode != 0)
			return -EINVAL;
		/* Linux returns early, without the size check, when nothing changes. */
		if (t->altstack_sp == nsp && t->altstack_size == nsize &&
		    (uint32_t)t->altstack_flags == flags)
			return 0;
		if (mode == LINUX_SS_DISABLE) {
			nsize = 0;
			nsp = 0;
		} else if (nsize < LINUX_MINSIGSTKSZ) {
			return -ENOMEM;
		}
		t->altstack_sp = nsp;
		t->altstack_size = nsize;
		t->altstack_flags = (int)flags;
	}
	return 0;
}

/* Linux's __on_sig_stack(): sp inside the alternate stack, whatever its flags. */
static bool in_altstack(const struct task *t, uint64_t sp)
{
	return sp > t->altstack_sp && sp - t->altstack_sp <= t->altstack_size;
}

/* Linux's on_sig_stack(). */
static bool on_sig_stack(const struct task *t, uint64_t sp)
{
	if ((uint32_t)t->altstack_flags & LINUX_SS_AUTODISARM)
		return false;
	return in_altstack(t, sp);
}

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

static int copy_in_all(struct task *t, void *dst, uint64_t addr, size_t len)
{
	return mm_copy_in(t->mm, dst, addr, len) == (ssize_t)len ? 0 : -EFAULT;
}

static const struct platform_ops *ops_of(struct task *t)
{
	return t->k->platform->ops;
}

/* The FP state a handler starts with (Linux's fpu__clear_user_states): FCW 0x37f, MXCSR
 * 0x1f80, everything else in its initial state. */
static int reset_fpstate(struct task *t, size_t size)
{
	uint8_t *buf = calloc(1, size);
	struct linux_xsave_header hdr = { .xfeatures = LINUX_XFEATURE_MASK_FPSSE };
	uint16_t fcw = 0x37f;
	uint32_t mxcsr = 0x1f80;
	int ret;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, &fcw, sizeof(fcw));
	memcpy(buf + LINUX_FXSAVE_MXCSR_OFFSET, &mxcsr, sizeof(mxcsr));
	memcpy(buf + LINUX_XSAVE_HDR_OFFSET, &hdr, sizeof(hdr));
	ret = ops_of(t)->ctx_set_fpstate(t->ctx, buf, size);
	free(buf);
	return ret;
}

int signal_frame_setup(struct task *t, int sig, const struct linux_siginfo *info,
		       const struct linux_sigaction *ka, uint64_t oldmask)
{
	size_t fsize = platform_fpstate_size();
	struct linux_rt_sigframe frame;
	struct linux_sigcontext *sc = &frame.uc.uc_mcontext;
	struct linux_fpx_sw_bytes sw;
	struct linux_xsave_header hdr;
	uint64_t sp = t->regs.rsp, buf_fx, frame_addr;
	bool nested = on_sig_stack(t, sp), entering = false;
	uint8_t *fp;
	int n, ret;

	/* x86-64 handlers return through sa_restorer; Linux refuses a frame without one. */
	if (!(ka->flags & LINUX_SA_RESTORER))
		return -EFAULT;

	sp -= REDZONE;
	if ((ka->flags & LINUX_SA_ONSTACK) && t->altstack_size && !on_sig_stack(t, sp)) {
		sp = t->altstack_sp + t->altstack_size;
		entering = true;
	}
	buf_fx = (sp - (fsize + LINUX_FP_XSTATE_MAGIC2_SIZE)) & ~63ULL;
	frame_addr = ((buf_fx - sizeof(frame)) & ~15ULL) - 8;
	/* Overflowing the alternate stack: Linux gives an always-bad address (SIGSEGV). */
	if ((nested || entering) && !in_altstack(t, frame_addr))
		return -EFAULT;

	/* The XSAVE area with the software bytes and both magics, as Linux writes it. */
	fp = calloc(1, fsize + LINUX_FP_XSTATE_MAGIC2_SIZE);
	if (!fp)
		return -EFAULT;
	n = ops_of(t)->ctx_get_fpstate(t->ctx, fp, fsize);
	if (n < 0) {
		free(fp);
		return -EFAULT;
	}
	/*
	 * The platform's area is ptrace's layout, where bytes 464.. hold XCR0 for debuggers,
	 * not the software bytes: those are written here, naming every enabled component so
	 * that rt_sigreturn restores all of them (the YMM upper halves included).
	 */
	memset(&sw, 0, sizeof(sw));
	sw.magic1 = LINUX_FP_XSTATE_MAGIC1;
	sw.extended_size = (uint32_t)(fsize + LINUX_FP_XSTATE_MAGIC2_SIZE);
	sw.xfeatures = platform_user_xfeatures();
	sw.xstate_size = (uint32_t)fsize;
	memcpy(fp + LINUX_FXSAVE_SW_OFFSET, &sw, sizeof(sw));
	memcpy(&hdr, fp + LINUX_XSAVE_HDR_OFFSET, sizeof(hdr));
	/* Legacy FP/SSE always marked present, so that changes by old programs are seen. */
	hdr.xfeatures |= LINUX_XFEATURE_MASK_FPSSE;
	memcpy(fp + LINUX_XSAVE_HDR_OFFSET, &hdr, sizeof(hdr));
	{
		uint32_t magic2 = LINUX_FP_XSTATE_MAGIC2;

		memcpy(fp + fsize, &magic2, sizeof(magic2));
	}
	ret = copy_out_all(t, buf_fx, fp, fsize + LINUX_FP_XSTATE_MAGIC2_SIZE);
	free(fp);
	if (ret < 0)
		return ret;

	memset(&frame, 0, sizeof(frame));
	frame.pretcode = ka->restorer;
	frame.uc.uc_flags = LINUX_UC_FP_XSTATE | LINUX_UC_SIGCONTEXT_SS |
			    LINUX_UC_STRICT_RESTORE_SS;
	frame.uc.uc_link = 0;
	frame.uc.uc_stack.ss_sp = t->altstack_sp;
	frame.uc.uc_stack.ss_size = t->altstack_size;
	frame.uc.uc_stack.ss_flags = t->altstack_flags;
	sc->r8 = t->regs.r8;
	sc->r9 = t->regs.r9;
	sc->r10 = t->regs.r10;
	sc->r11 = t->regs.r11;
	sc->r12 = t->regs.r12;
	sc->r13 = t->regs.r13;
	sc->r14 = t->regs.r14;
	sc->r15 = t->regs.r15;
	sc->rdi = t->regs.rdi;
	sc->rsi = t->regs.rsi;
	sc->rbp = t->regs.rbp;
	sc->rbx = t->regs.rbx;
	sc->rdx = t->regs.rdx;
	sc->rax = t->regs.rax;
	sc->rcx = t->regs.rcx;
	sc->rsp = t->regs.rsp;
	sc->rip = t->regs.rip;
	sc->eflags = t->regs.eflags;
	sc->cs = USER_CS;
	sc->ss = USER_DS;
	sc->err = (uint64_t)t->fault_err;
	sc->trapno = (uint64_t)t->fault_trapno;
	sc->cr2 = t->fault_addr;
	sc->oldmask = oldmask;
	sc->fpstate = buf_fx;
	frame.uc.uc_sigmask = oldmask;
	if (ka->flags & LINUX_SA_SIGINFO)
		memcpy(&frame.info, info, sizeof(frame.info));
	ret = copy_out_all(t, frame_addr, &frame, sizeof(frame));
	if (ret < 0)
		return ret;

	/* The handler runs with the initial FP state, as on Linux. */
	ret = reset_fpstate(t, fsize);
	if (ret < 0)
		return -EFAULT;
	if ((uint32_t)t->altstack_flags & LINUX_SS_AUTODISARM) {
		t->altstack_sp = t->altstack_size = 0;
		t->altstack_flags = LINUX_SS_DISABLE;
	}
	t->fault_addr = 0;
	t->fault_trapno = 0;
	t->fault_err = 0;

	t->regs.rdi = (uint64_t)sig;
	t->regs.rax = 0;
	t->regs.rsi = frame_addr + offsetof(struct linux_rt_sigframe, info);
	t->regs.rdx = frame_addr + offsetof(struct linux_rt_sigframe, uc);
	t->regs.rip = ka->handler;
	t->regs.rsp = frame_addr;
	t->regs.cs = USER_CS;
	t->regs.ss = USER_DS;
	t->regs.eflags &= ~HANDLER_CLEAR_EFLAGS;
	return 0;
}

/*
 * Loads the XSAVE area at guest address addr as Linux's fpu__restore_sig does: a valid
 * software header selects the full area (xfeatures limited to what it names), otherwise only
 * the legacy FXSAVE part is taken. Returns 0, or -EFAULT for memory or content the CPU refuses.
 */
static int restore_fpstate(struct task *t, uint64_t addr)
{
	size_t fsize = platform_fpstate_size();
	struct linux_fpx_sw_bytes sw;
	struct linux_xsave_header hdr;
	uint64_t xrestore;
	uint8_t *buf;
	bool fx_only;
	int ret;

	if (!addr)
		return reset_fpstate(t, fsize) < 0 ? -EFAULT : 0;
	buf = calloc(1, fsize);
	if (!buf)
		return -EFAULT;
	ret = copy_in_all(t, buf, addr, LINUX_FXSAVE_SIZE);
	if (ret < 0)
		goto out;
	memcpy(&sw, buf + LINUX_FXSAVE_SW_OFFSET, sizeof(sw));
	fx_only = sw.magic1 != LINUX_FP_XSTATE_MAGIC1 ||
		  sw.xstate_size < LINUX_FXSAVE_SIZE + LINUX_XSAVE_HDR_SIZE ||
		  sw.xstate_size > fsize || sw.xstate_size > sw.extended_size;
	if (!fx_only) {
		uint32_t magic2;

		ret = copy_in_all(t, &magic2, addr + sw.xstate_size, sizeof(magic2));
		if (ret < 0)
			goto out;
		fx_only = magic2 != LINUX_FP_XSTATE_MAGIC2;
	}
	if (fx_only) {
		memset(&hdr, 0, sizeof(hdr));
		xrestore = LINUX_XFEATURE_MASK_FPSSE;
		hdr.xfeatures = LINUX_XFEATURE_MASK_FPSSE;
	} else {
		ret = copy_in_all(t, buf, addr, sw.xstate_size);
		if (ret < 0)
			goto out;
		memcpy(&hdr, buf + LINUX_XSAVE_HDR_OFFSET, sizeof(hdr));
		xrestore = sw.xfeatures;
		/* Components the area does not name come back in their initial state. */
		hdr.xfeatures &= xrestore;
	}
	memcpy(buf + LINUX_XSAVE_HDR_OFFSET, &hdr, sizeof(hdr));
	/* The software bytes are the kernel's, never restored into the CPU. */
	memset(buf + LINUX_FXSAVE_SW_OFFSET, 0, sizeof(sw));
	ret = ops_of(t)->ctx_set_fpstate(t->ctx, buf, fsize) < 0 ? -EFAULT : 0;
out:
	free(buf);
	return ret;
}

long signal_frame_return(struct task *t)
{
	uint64_t frame_addr = t->regs.rsp - 8;
	struct linux_rt_sigframe frame;
	const struct linux_sigcontext *sc = &frame.uc.uc_mcontext;
	arch_regs_t regs = t->regs;

	if (copy_in_all(t, &frame, frame_addr, sizeof(frame)) < 0)
		goto badframe;
	signal_set_blocked(t, frame.uc.uc_sigmask);

	regs.r8 = sc->r8;
	regs.r9 = sc->r9;
	regs.r10 = sc->r10;
	regs.r11 = sc->r11;
	regs.r12 = sc->r12;
	regs.r13 = sc->r13;
	regs.r14 = sc->r14;
	regs.r15 = sc->r15;
	regs.rdi = sc->rdi;
	regs.rsi = sc->rsi;
	regs.rbp = sc->rbp;
	regs.rbx = sc->rbx;
	regs.rdx = sc->rdx;
	regs.rax = sc->rax;
	regs.rcx = sc->rcx;
	regs.rsp = sc->rsp;
	regs.rip = sc->rip;
	regs.eflags = (regs.eflags & ~FIX_EFLAGS) | (sc->eflags & FIX_EFLAGS);
	/* husk offers only 64-bit code: whatever selectors the frame holds, these are used. */
	regs.cs = USER_CS;
	regs.ss = USER_DS;
	/* No syscall restart may apply to the restored rax. */
	regs.orig_rax = (uint64_t)-1;
	if (restore_fpstate(t, sc->fpstate) < 0)
		goto badframe;
	t->regs = regs;
	/* Errors other than faults are ignored, as Linux's restore_altstack does. */
	signal_altstack(t, &frame.uc.uc_stack, NULL, regs.rsp);
	t->restart_fn = NULL;
	return (long)regs.rax;

badframe:
	signal_force_sigsegv(t);
	t->regs.orig_rax = (uint64_t)-1;
	return 0;
}
