/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: signal state that is visible without delivering a signal: actions, the blocked
 * mask, the alternate stack. No signal is ever raised.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "check.h"

/* The kernel's struct sigaction on x86-64 (rt_sigaction). */
struct ksigaction {
	uint64_t handler, flags, restorer, mask;
};

struct kstack {
	uint64_t sp;
	int32_t flags, pad;
	uint64_t size;
};

#define BIT(sig) (1ULL << ((sig)-1))
#define KSS_AUTODISARM (1U << 31)

/* Makes a system call with rsp set to stack (nothing is pushed on it): lets a test be "on"
 * an alternate stack without running a handler. Returns the raw result (-errno). */
static long syscall_with_sp(void *stack, long nr, long a1, long a2)
{
	long ret;

	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov %[stk], %%rsp\n\t"
			 "syscall\n\t"
			 "mov %%r12, %%rsp\n\t"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), [stk] "r"(stack)
			 : "rcx", "r11", "r12", "memory");
	return ret;
}

static void check_sigaction(void)
{
	struct ksigaction act = { (uint64_t)SIG_IGN, 0x04000000 /* SA_RESTORER */ | SA_RESTART,
				  0x1234, BIT(SIGUSR2) },
			  old, saved;

	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &saved, 8), 0);
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR1, &act, NULL, 8), 0);
	memset(&old, 0xff, sizeof(old));
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &old, 8), 0);
	CHECK(old.handler == act.handler && old.flags == act.flags &&
		      old.restorer == act.restorer && old.mask == act.mask,
	      "read back %lx %lx %lx %lx", (unsigned long)old.handler, (unsigned long)old.flags,
	      (unsigned long)old.restorer, (unsigned long)old.mask);
	/* Setting returns the previous action. */
	act.handler = (uint64_t)SIG_DFL;
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR1, &act, &old, 8), 0);
	CHECK(old.handler == (uint64_t)SIG_IGN, "old handler %lx", (unsigned long)old.handler);

	/* Unknown flags (SA_UNSUPPORTED among them) are dropped; SIGKILL/SIGSTOP leave the mask. */
	act = (struct ksigaction){ (uint64_t)SIG_IGN, ~0ULL, 0, ~0ULL };
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR2, &act, NULL, 8), 0);
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR2, NULL, &old, 8), 0);
	CHECK(old.flags == 0xdc000807ULL, "flags %lx", (unsigned long)old.flags);
	CHECK(old.mask == ~(BIT(SIGKILL) | BIT(SIGSTOP)), "mask %lx", (unsigned long)old.mask);

	/* Signal numbers and sizes. */
	act = (struct ksigaction){ (uint64_t)SIG_IGN, 0, 0, 0 };
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGKILL, &act, NULL, 8), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGSTOP, &act, NULL, 8), EINVAL);
	CHECK_RET(syscall(SYS_rt_sigaction, SIGKILL, NULL, &old, 8), 0);
	CHECK(old.handler == (uint64_t)SIG_DFL, "SIGKILL handler %lx", (unsigned long)old.handler);
	CHECK_ERR(syscall(SYS_rt_sigaction, 0, NULL, &old, 8), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, 65, NULL, &old, 8), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, -1, NULL, &old, 8), EINVAL);
	CHECK_RET(syscall(SYS_rt_sigaction, 64, &act, &old, 8), 0);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &old, 4), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &old, 16), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, (void *)1, NULL, 8), EFAULT);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, (void *)1, 8), EFAULT);
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR1, NULL, NULL, 8), 0);
	CHECK_RET(syscall(SYS_rt_sigaction, SIGUSR1, &saved, NULL, 8), 0);
}

static void check_sigprocmask(void)
{
	uint64_t set, old, saved, now;

	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &saved, 8), 0);
	set = BIT(SIGUSR1) | BIT(SIGUSR2);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &set, &old, 8), 0);
	CHECK(old == saved, "old mask %lx, was %lx", (unsigned long)old, (unsigned long)saved);
	set = BIT(SIGTERM);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 8), 0);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, 8), 0);
	CHECK(now == (BIT(SIGUSR1) | BIT(SIGUSR2) | BIT(SIGTERM)), "after BLOCK %lx",
	      (unsigned long)now);
	set = BIT(SIGUSR1);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, NULL, 8), 0);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, 8), 0);
	CHECK(now == (BIT(SIGUSR2) | BIT(SIGTERM)), "after UNBLOCK %lx", (unsigned long)now);

	/* SIGKILL and SIGSTOP cannot be blocked. */
	set = ~0ULL;
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &set, NULL, 8), 0);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, 8), 0);
	CHECK(now == ~(BIT(SIGKILL) | BIT(SIGSTOP)), "all blocked: %lx", (unsigned long)now);

	/* `how` is checked only when a set is given. */
	CHECK_RET(syscall(SYS_rt_sigprocmask, 99, NULL, &now, 8), 0);
	CHECK_ERR(syscall(SYS_rt_sigprocmask, 99, &set, NULL, 8), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 4), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, (void *)1, NULL, 8), EFAULT);
	CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, (void *)1, 8), EFAULT);
	CHECK_RET(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, 8), 0);
}

static void check_sigaltstack(void)
{
	size_t size = 65536;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kstack ss, old, saved;

	CHECK(stack != MAP_FAILED, "mmap");
	if (stack == MAP_FAILED)
		return;
	/* Whatever the runtime set up (sanitizers install one) is put back at the end. */
	CHECK_RET(syscall(SYS_sigaltstack, NULL, &saved), 0);
	ss = (struct kstack){ 0, SS_DISABLE, 0, 0 };
	CHECK_RET(syscall(SYS_sigaltstack, &ss, NULL), 0);
	memset(&old, 0xff, sizeof(old));
	CHECK_RET(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK(old.flags == SS_DISABLE && old.size == 0 && old.sp == 0, "disabled %lx %d %lu",
	      (unsigned long)old.sp, old.flags, (unsigned long)old.size);

	ss = (struct kstack){ (uint64_t)stack, 0, 0, size };
	CHECK_RET(syscall(SYS_sigaltstack, &ss, NULL), 0);
	memset(&old, 0xff, sizeof(old));
	CHECK_RET(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK(old.sp == (uint64_t)stack && old.size == size && old.flags == 0,
	      "read back %lx %d %lu", (unsigned long)old.sp, old.flags, (unsigned long)old.size);

	/* Running on it: reported as SS_ONSTACK, and it cannot be changed. */
	CHECK_RET(syscall_with_sp(stack + size / 2, SYS_sigaltstack, 0, (long)&old), 0);
	CHECK(old.flags == SS_ONSTACK, "on-stack flags %d", old.flags);
	ss = (struct kstack){ 0, SS_DISABLE, 0, 0 };
	CHECK_RET(syscall_with_sp(stack + size / 2, SYS_sigaltstack, (long)&ss, 0), -EPERM);

	/* SS_AUTODISARM is kept and reported. */
	ss = (struct kstack){ (uint64_t)stack, (int32_t)KSS_AUTODISARM, 0, size };
	CHECK_RET(syscall(SYS_sigaltstack, &ss, NULL), 0);
	CHECK_RET(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK((uint32_t)old.flags == KSS_AUTODISARM, "flags %x", (unsigned)old.flags);

	/* Checks: size, mode. */
	ss = (struct kstack){ (uint64_t)stack, 0, 0, 2047 /* < MINSIGSTKSZ */ };
	CHECK_ERR(syscall(SYS_sigaltstack, &ss, NULL), ENOMEM);
	ss = (struct kstack){ (uint64_t)stack, 4, 0, size };
	CHECK_ERR(syscall(SYS_sigaltstack, &ss, NULL), EINVAL);
	ss = (struct kstack){ (uint64_t)stack, SS_ONSTACK | SS_DISABLE, 0, size };
	CHECK_ERR(syscall(SYS_sigaltstack, &ss, NULL), EINVAL);
	ss = (struct kstack){ (uint64_t)stack, SS_ONSTACK, 0, 2048 };
	CHECK_RET(syscall(SYS_sigaltstack, &ss, NULL), 0);
	CHECK_ERR(syscall(SYS_sigaltstack, (void *)1, NULL), EFAULT);
	CHECK_ERR(syscall(SYS_sigaltstack, NULL, (void *)1), EFAULT);

	/* Disabling clears it (the size given is ignored). */
	ss = (struct kstack){ (uint64_t)stack, SS_DISABLE, 0, 1 };
	CHECK_RET(syscall(SYS_sigaltstack, &ss, &old), 0);
	CHECK(old.sp == (uint64_t)stack && old.size == 2048, "old %lx %lu", (unsigned long)old.sp,
	      (unsigned long)old.size);
	CHECK_RET(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK(old.flags == SS_DISABLE && old.size == 0 && old.sp == 0, "disabled %lx %d %lu",
	      (unsigned long)old.sp, old.flags, (unsigned long)old.size);
	if (!(saved.flags & SS_DISABLE))
		CHECK_RET(syscall(SYS_sigaltstack, &saved, NULL), 0);
	munmap(stack, size);
}

int main(void)
{
	check_sigaction();
	check_sigprocmask();
	check_sigaltstack();
	return finish();
}
