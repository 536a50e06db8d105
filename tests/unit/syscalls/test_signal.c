/* SPDX-License-Identifier: Apache-2.0 */
/* syscalls/sys_signal.c: actions, the blocked mask and the alternate stack. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/signals.h"
#include "tests/unit/syscalls/fake.h"

static struct harness h;

static void setup(void)
{
	harness_init(&h, 0, 0);
	h.t.regs.rsp = 0x7ffff000;
	/* What the signal machinery needs of the process: its thread list and pending sets. */
	list_init(&h.tg.tasks);
	list_add_tail(&h.t.tg_link, &h.tg.tasks);
	h.tg.leader = &h.t;
	h.tg.state = TG_RUNNING;
	list_init(&h.tg.shared_pending.queue);
	list_init(&h.t.pending.queue);
}

TestSuite(sys_signal, .init = setup);

#define BIT(sig) (1ULL << ((sig)-1))

struct kstack {
	uint64_t sp;
	int32_t flags, pad;
	uint64_t size;
};

Test(sys_signal, sigaction_round_trip)
{
	struct linux_sigaction act = { 0x401000, 0x04000004, 0x402000, BIT(10) }, old;

	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, A(&act), 0, 8), 0);
	memset(&old, 0xff, sizeof(old));
	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, 0, A(&old), 8), 0);
	cr_assert_eq(old.handler, 0x401000);
	cr_assert_eq(old.flags, 0x04000004);
	cr_assert_eq(old.restorer, 0x402000);
	cr_assert_eq(old.mask, BIT(10));
	cr_assert_eq(h.tg.sighand->actions[9].handler, 0x401000);
}

Test(sys_signal, sigaction_returns_old_action_while_setting)
{
	struct linux_sigaction a = { 1, 0, 0, 0 }, b = { 0x1234, 0, 0, 0 }, old;

	cr_assert_eq(CALL(&h.t, rt_sigaction, 12, A(&a), 0, 8), 0);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 12, A(&b), A(&old), 8), 0);
	cr_assert_eq(old.handler, 1);
	cr_assert_eq(h.tg.sighand->actions[11].handler, 0x1234);
}

Test(sys_signal, sigaction_drops_unknown_flags_and_unblockable_mask_bits)
{
	struct linux_sigaction act = { 1, ~0ULL, 0, ~0ULL }, old;

	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, A(&act), 0, 8), 0);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, 0, A(&old), 8), 0);
	/* What Linux 6.18 returns for the same request on x86-64. */
	cr_assert_eq(old.flags, 0xdc000807ULL);
	cr_assert_eq(old.mask, 0xfffffffffffbfeffULL);
}

Test(sys_signal, sigaction_signal_number_checks)
{
	struct linux_sigaction act = { 1, 0, 0, 0 }, old;

	cr_assert_eq(CALL(&h.t, rt_sigaction, 0, 0, A(&old), 8), -EINVAL);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 65, 0, A(&old), 8), -EINVAL);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 64, A(&act), A(&old), 8), 0);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 9, A(&act), 0, 8), -EINVAL);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 19, A(&act), 0, 8), -EINVAL);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 9, 0, A(&old), 8), 0);
	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, A(&act), 0, 4), -EINVAL);
}

Test(sys_signal, sigaction_faults)
{
	struct linux_sigaction act = { 1, 0, 0, 0 };

	/* The new action is read before the signal number is checked. */
	cr_assert_eq(CALL(&h.t, rt_sigaction, 0, 1, 0, 8), -EFAULT);
	/* A fault writing the old action leaves the new one in place. */
	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, A(&act), 1, 8), -EFAULT);
	cr_assert_eq(h.tg.sighand->actions[9].handler, 1);
}

Test(sys_signal, sigprocmask_block_unblock_setmask)
{
	uint64_t set = BIT(10) | BIT(12), old = 7;

	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, A(&set), A(&old), 8), 0);
	cr_assert_eq(old, 0);
	cr_assert_eq(h.t.sigmask, BIT(10) | BIT(12));
	set = BIT(10);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 1, A(&set), A(&old), 8), 0);
	cr_assert_eq(old, BIT(10) | BIT(12));
	cr_assert_eq(h.t.sigmask, BIT(12));
	set = BIT(2);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 2, A(&set), 0, 8), 0);
	cr_assert_eq(h.t.sigmask, BIT(2));
}

Test(sys_signal, sigkill_and_sigstop_are_never_blocked)
{
	uint64_t set = ~0ULL, old;

	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, A(&set), 0, 8), 0);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, 0, A(&old), 8), 0);
	cr_assert_eq(old, ~(BIT(9) | BIT(19)));
}

Test(sys_signal, sigprocmask_checks_how_only_with_a_set)
{
	uint64_t set = BIT(10), old;

	h.t.sigmask = BIT(3);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 99, 0, A(&old), 8), 0);
	cr_assert_eq(old, BIT(3));
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 99, A(&set), A(&old), 8), -EINVAL);
	cr_assert_eq(h.t.sigmask, BIT(3));
}

Test(sys_signal, sigprocmask_size_and_fault_checks)
{
	uint64_t set = BIT(10);

	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, A(&set), 0, 4), -EINVAL);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, 1, 0, 8), -EFAULT);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, 0, 1, 8), -EFAULT);
	cr_assert_eq(CALL(&h.t, rt_sigprocmask, 0, A(&set), 1, 8), -EFAULT);
	/* The new mask was set before the fault on the old one. */
	cr_assert_eq(h.t.sigmask, BIT(10));
}

Test(sys_signal, sigaltstack_round_trip)
{
	struct kstack ss = { 0x100000, 0, 0, 8192 }, os;

	memset(&os, 0xff, sizeof(os));
	cr_assert_eq(CALL(&h.t, sigaltstack, 0, A(&os)), 0);
	cr_assert_eq(os.sp, 0);
	cr_assert_eq(os.size, 0);
	cr_assert_eq(os.flags, 2);
	cr_assert_eq(os.pad, 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, 0, A(&os)), 0);
	cr_assert_eq(os.sp, 0x100000);
	cr_assert_eq(os.size, 8192);
	cr_assert_eq(os.flags, 0);
}

Test(sys_signal, sigaltstack_old_is_the_state_before_the_change)
{
	struct kstack a = { 0x100000, 0, 0, 8192 }, b = { 0x200000, 0, 0, 4096 }, os;

	cr_assert_eq(CALL(&h.t, sigaltstack, A(&a), 0), 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&b), A(&os)), 0);
	cr_assert_eq(os.sp, 0x100000);
	cr_assert_eq(h.t.altstack_sp, 0x200000);
}

Test(sys_signal, sigaltstack_checks)
{
	struct kstack ss = { 0x100000, 0, 0, 2047 };

	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), -ENOMEM);
	ss = (struct kstack){ 0x100000, 4, 0, 8192 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), -EINVAL);
	ss = (struct kstack){ 0x100000, 3, 0, 8192 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), -EINVAL);
	ss = (struct kstack){ 0x100000, 1, 0, 2048 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, 1, 0), -EFAULT);
	cr_assert_eq(CALL(&h.t, sigaltstack, 0, 1), -EFAULT);
}

Test(sys_signal, sigaltstack_disable_clears_and_reports_disabled)
{
	struct kstack ss = { 0x100000, 0, 0, 8192 }, os;

	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	ss = (struct kstack){ 0x5000, 2, 0, 1 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, 0, A(&os)), 0);
	cr_assert_eq(os.sp, 0);
	cr_assert_eq(os.size, 0);
	cr_assert_eq(os.flags, 2);
}

Test(sys_signal, sigaltstack_autodisarm_is_kept_and_reported)
{
	struct kstack ss = { 0x100000, (int32_t)0x80000000u, 0, 8192 }, os;

	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, 0, A(&os)), 0);
	cr_assert_eq((uint32_t)os.flags, 0x80000000u);
}

Test(sys_signal, sigaltstack_while_on_it_is_eperm)
{
	struct kstack ss = { 0x7fff0000, 0, 0, 0x10000 }, os;

	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	cr_assert_eq(CALL(&h.t, sigaltstack, 0, A(&os)), 0);
	cr_assert_eq(os.flags, 1, "rsp is inside the stack: SS_ONSTACK");
	ss = (struct kstack){ 0, 2, 0, 0 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), -EPERM);
	cr_assert_eq(h.t.altstack_size, 0x10000);
}

Test(sys_signal, sigaltstack_unchanged_skips_the_size_check)
{
	/* Stored sp 0, size 0, flags 0 (the harness's zeroed task): asking for exactly that changes
	 * nothing, so the size is not checked. */
	struct kstack ss = { 0, 0, 0, 0 };

	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	ss = (struct kstack){ 0, 2, 0, 0 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), 0);
	ss = (struct kstack){ 0, 0, 0, 0 };
	cr_assert_eq(CALL(&h.t, sigaltstack, A(&ss), 0), -ENOMEM);
}

/* --- pending sets, sending and delivery (sentry/kernel/signals.c) --- */

Test(sys_signal, rt_signals_queue_and_standard_ones_coalesce)
{
	struct linux_siginfo info;

	h.tg.pid = 5; /* not pid 1, which drops default-action signals */
	cr_assert_eq(signal_send_task(&h.t, 34, NULL), 0);
	cr_assert_eq(signal_send_task(&h.t, 34, NULL), 0);
	cr_assert_eq(signal_send_task(&h.t, 10, NULL), 0);
	cr_assert_eq(signal_send_task(&h.t, 10, NULL), 0);
	cr_assert_eq(signal_dequeue(&h.t, ~0ULL, &info), 10);
	cr_assert_eq(info.si_code, LINUX_SI_KERNEL);
	cr_assert_eq(signal_dequeue(&h.t, ~0ULL, &info), 34);
	cr_assert_eq(signal_dequeue(&h.t, ~0ULL, &info), 34);
	cr_assert_eq(signal_dequeue(&h.t, ~0ULL, &info), 0);
}

Test(sys_signal, fault_signals_are_dequeued_first)
{
	h.tg.pid = 5;
	cr_assert_eq(signal_send_task(&h.t, 2, NULL), 0);
	cr_assert_eq(signal_send_task(&h.t, 11, NULL), 0);
	cr_assert_eq(signal_dequeue(&h.t, ~0ULL, NULL), 11);
	cr_assert_eq(signal_dequeue(&h.t, ~0ULL, NULL), 2);
}

Test(sys_signal, ignored_signal_is_dropped_but_blocked_one_is_kept)
{
	struct linux_sigaction ign = { 1, 0, 0, 0 };
	uint64_t set = 0;

	h.tg.pid = 5; /* not pid 1: no init protection */
	cr_assert_eq(CALL(&h.t, rt_sigaction, 10, A(&ign), 0, 8), 0);
	cr_assert_eq(signal_send_tg(&h.tg, 10, NULL), 0);
	cr_assert_eq(signal_pending_set(&h.t), 0);
	h.t.sigmask = BIT(10);
	cr_assert_eq(signal_send_tg(&h.tg, 10, NULL), 0);
	cr_assert_eq(CALL(&h.t, rt_sigpending, A(&set), 8), 0);
	cr_assert_eq(set, BIT(10));
}

Test(sys_signal, pid1_drops_default_action_signals_unless_forced_kill_from_outside)
{
	struct linux_siginfo info = { .si_code = LINUX_SI_USER };

	cr_assert_eq(signal_send(&h.tg, NULL, 15, &info, 0), 0);
	cr_assert_eq(signal_pending_set(&h.t), 0);
	cr_assert_eq(signal_send(&h.tg, NULL, 9, &info, 0), 0);
	cr_assert_eq(signal_pending_set(&h.t), 0);
	cr_assert_eq(signal_send(&h.tg, NULL, 9, &info, SIGSEND_FROM_OUTSIDE), 0);
	cr_assert_eq(signal_pending_set(&h.t), BIT(9));
}

Test(sys_signal, sigsuspend_and_pause_return_erestartnohand)
{
	uint64_t mask = BIT(12);

	cr_assert_eq(CALL(&h.t, rt_sigsuspend, A(&mask), 8), -ERESTARTNOHAND);
	cr_assert(h.t.restore_sigmask);
	cr_assert_eq(h.t.sigmask, BIT(12));
	cr_assert_eq(CALL(&h.t, rt_sigsuspend, A(&mask), 4), -EINVAL);
	cr_assert_eq(CALL(&h.t, pause), -ERESTARTNOHAND);
}

Test(sys_signal, restart_codes_without_a_handler_restart_the_call)
{
	h.t.regs.orig_rax = 35;
	h.t.regs.rax = (uint64_t)-ERESTARTSYS;
	h.t.regs.rip = 0x1002;
	signal_deliver(&h.t, true);
	cr_assert_eq(h.t.regs.rax, 35);
	cr_assert_eq(h.t.regs.rip, 0x1000);

	h.t.regs.rax = (uint64_t)-ERESTART_RESTARTBLOCK;
	h.t.regs.rip = 0x1002;
	signal_deliver(&h.t, true);
	cr_assert_eq(h.t.regs.rax, 219);
	cr_assert_eq(h.t.regs.rip, 0x1000);
}

Test(sys_signal, default_fatal_signal_ends_the_process_with_core_bit)
{
	h.tg.pid = 5;
	cr_assert_eq(signal_send_tg(&h.tg, 11, NULL), 0);
	signal_deliver(&h.t, false);
	cr_assert(h.t.exiting);
	cr_assert_eq(h.tg.exit_status, 11 | 0x80);
}

Test(sys_signal, sigtimedwait_takes_a_pending_signal_and_times_out)
{
	uint64_t set = BIT(10);
	struct linux_siginfo info;
	struct {
		int64_t sec, nsec;
	} zero = { 0, 0 }, bad = { 0, 1000000000 };

	h.t.sigmask = BIT(10);
	cr_assert_eq(signal_send_task(&h.t, 10, NULL), 0);
	cr_assert_eq(CALL(&h.t, rt_sigtimedwait, A(&set), A(&info), A(&zero), 8), 10);
	cr_assert_eq(info.si_signo, 10);
	cr_assert_eq(CALL(&h.t, rt_sigtimedwait, A(&set), A(&info), A(&zero), 8), -EAGAIN);
	cr_assert_eq(CALL(&h.t, rt_sigtimedwait, A(&set), A(&info), A(&bad), 8), -EINVAL);
}

Test(sys_signal, sigqueueinfo_to_another_process_may_not_claim_a_kernel_code)
{
	struct linux_siginfo info = { .si_code = LINUX_SI_KERNEL };

	cr_assert_eq(CALL(&h.t, rt_sigqueueinfo, 77, 10, A(&info)), -EPERM);
	info.si_code = LINUX_SI_TKILL;
	cr_assert_eq(CALL(&h.t, rt_sigqueueinfo, 77, 10, A(&info)), -EPERM);
	info.si_code = LINUX_SI_QUEUE;
	cr_assert_eq(CALL(&h.t, rt_sigqueueinfo, 77, 10, A(&info)), -ESRCH);
}
