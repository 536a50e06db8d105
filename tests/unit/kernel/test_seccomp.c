/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's seccomp filters (sentry/kernel/seccomp.c): the load-time checker on hostile
 * programs, the interpreter on programs libseccomp generates, stacking precedence, and the
 * actions taken for a bare task (task_exit_group, signal_send, signal_force_info and
 * cred_capable are stubbed below and record what they were asked).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "include/abi/linux/signal.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "syscalls/syscalls.h"

/* --- stubs for what seccomp.c calls outside the interpreter --- */

static int exit_group_status = -1;
static int sent_sig;
static struct linux_siginfo sent_info;

void task_exit_group(struct task *t, int status)
{
	exit_group_status = status;
	t->exiting = true;
}

int signal_send(struct thread_group *tg, struct task *t, int sig, const void *info,
		unsigned int flags)
{
	(void)tg;
	(void)t;
	(void)flags;
	sent_sig = sig;
	memcpy(&sent_info, info, sizeof(sent_info));
	return 0;
}

/* seccomp.c forces SIGSYS for RET_TRAP; the forcing itself is tested by tests/syscalls/seccomp. */
void signal_force_info(struct task *t, int sig, struct linux_siginfo *info)
{
	signal_send(t->tg, t, sig, info, 0);
}

bool cred_capable(const struct cred *c, int cap)
{
	return (c->cap_effective >> cap) & 1;
}

const char *syscall_name(long nr)
{
	(void)nr;
	return "test";
}

/* --- helpers --- */

#define STMT(c, k) ((struct sock_filter){ (uint16_t)(c), 0, 0, (uint32_t)(k) })
#define JUMP(c, k, t, f) ((struct sock_filter){ (uint16_t)(c), (uint8_t)(t), (uint8_t)(f), (k) })

static struct seccomp_data data_of(int nr, uint64_t a0, uint64_t a1)
{
	struct seccomp_data d = { .nr = nr, .arch = SECCOMP_ARCH_X86_64 };

	d.args[0] = a0;
	d.args[1] = a1;
	d.instruction_pointer = 0x401000;
	return d;
}

/* Exports ctx's BPF program (what the runtime does) and returns it, *len instructions. */
static struct sock_filter *export_prog(scmp_filter_ctx ctx, size_t *len)
{
	int fd = memfd_create("bpf", 0);
	struct sock_filter *prog;
	off_t size;

	cr_assert_geq(fd, 0);
	cr_assert_eq(seccomp_export_bpf(ctx, fd), 0);
	size = lseek(fd, 0, SEEK_END);
	cr_assert_gt(size, 0);
	cr_assert_eq(size % (off_t)sizeof(struct sock_filter), 0);
	prog = malloc((size_t)size);
	cr_assert_eq(pread(fd, prog, (size_t)size, 0), size);
	close(fd);
	*len = (size_t)size / sizeof(struct sock_filter);
	return prog;
}

static uint32_t run(const struct sock_filter *p, size_t len, int nr, uint64_t a0, uint64_t a1)
{
	struct seccomp_data d = data_of(nr, a0, a1);

	return seccomp_run(p, len, &d);
}

/* --- programs from libseccomp --- */

Test(seccomp_libseccomp, errno_rule_denies_only_its_call)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct sock_filter *p;
	size_t len;

	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mkdir), 0), 0);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(mkdirat), 0), 0);
	p = export_prog(ctx, &len);
	cr_assert_eq(seccomp_check(p, len), 0);
	cr_assert_eq(run(p, len, SYS_mkdir, 0, 0), SECCOMP_RET_ERRNO | EPERM);
	cr_assert_eq(run(p, len, SYS_mkdirat, 0, 0), SECCOMP_RET_ERRNO | EACCES);
	cr_assert_eq(run(p, len, SYS_getpid, 0, 0), SECCOMP_RET_ALLOW);
	free(p);
	seccomp_release(ctx);
}

Test(seccomp_libseccomp, argument_conditions_compare_64_bit_values)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct sock_filter *p;
	size_t len;

	/* personality(0xffffffff) only; socket(AF_INET=2, ...) only; write with fd > 2^32. */
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(personality), 1,
				      SCMP_A0(SCMP_CMP_EQ, 0xffffffffULL)),
		     0);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, 2)),
		     0);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(write), 1,
				      SCMP_A0(SCMP_CMP_GT, 0x100000000ULL)),
		     0);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_LOG, SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, 0x5400)),
		     0);
	p = export_prog(ctx, &len);
	cr_assert_eq(seccomp_check(p, len), 0);
	cr_assert_eq(run(p, len, SYS_personality, 0xffffffff, 0), SECCOMP_RET_ERRNO | EINVAL);
	cr_assert_eq(run(p, len, SYS_personality, 0x1ffffffffULL, 0), SECCOMP_RET_ALLOW);
	cr_assert_eq(run(p, len, SYS_personality, 0, 0), SECCOMP_RET_ALLOW);
	cr_assert_eq(run(p, len, SYS_socket, 2, 0), SECCOMP_RET_KILL_PROCESS);
	cr_assert_eq(run(p, len, SYS_socket, 10, 0), SECCOMP_RET_ALLOW);
	cr_assert_eq(run(p, len, SYS_write, 1, 0), SECCOMP_RET_ALLOW);
	cr_assert_eq(run(p, len, SYS_write, 0x100000001ULL, 0), SECCOMP_RET_TRAP);
	cr_assert_eq(run(p, len, SYS_ioctl, 1, 0x5401), SECCOMP_RET_LOG);
	cr_assert_eq(run(p, len, SYS_ioctl, 1, 0x8901), SECCOMP_RET_ALLOW);
	free(p);
	seccomp_release(ctx);
}

Test(seccomp_libseccomp, default_action_and_foreign_architecture)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	struct seccomp_data d = data_of(SYS_read, 0, 0);
	struct sock_filter *p;
	size_t len;

	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(read), 0), 0);
	p = export_prog(ctx, &len);
	cr_assert_eq(seccomp_check(p, len), 0);
	cr_assert_eq(seccomp_run(p, len, &d), SECCOMP_RET_ALLOW);
	d.nr = SYS_open;
	cr_assert_eq(seccomp_run(p, len, &d), SECCOMP_RET_ERRNO | ENOSYS);
	/* An i386 call is not the filter's architecture: libseccomp's bad-arch action. */
	d.arch = 0x40000003;
	cr_assert_eq(seccomp_run(p, len, &d) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_KILL_THREAD);
	free(p);
	seccomp_release(ctx);
}

/* --- hostile and hand-written programs --- */

Test(seccomp_check, rejects_empty_and_too_long_programs)
{
	struct sock_filter ret = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_filter *big = calloc(SECCOMP_MAX_INSNS + 1, sizeof(*big));

	cr_assert_eq(seccomp_check(&ret, 0), -EINVAL);
	cr_assert_eq(seccomp_check(NULL, 1), -EINVAL);
	for (size_t i = 0; i <= SECCOMP_MAX_INSNS; i++)
		big[i] = ret;
	cr_assert_eq(seccomp_check(big, SECCOMP_MAX_INSNS + 1), -EINVAL);
	cr_assert_eq(seccomp_check(big, SECCOMP_MAX_INSNS), 0);
	free(big);
}

Test(seccomp_check, rejects_jumps_out_of_the_program)
{
	struct sock_filter ja[] = { STMT(BPF_JMP | BPF_JA, 1), STMT(BPF_RET | BPF_K, 0) };
	struct sock_filter ja_back[] = { STMT(BPF_RET | BPF_K, 0),
					 STMT(BPF_JMP | BPF_JA, 0xffffffff),
					 STMT(BPF_RET | BPF_K, 0) };
	struct sock_filter jt[] = { JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
				    STMT(BPF_RET | BPF_K, 0), STMT(BPF_RET | BPF_K, 1) };
	struct sock_filter jf[] = { JUMP(BPF_JMP | BPF_JGT | BPF_K, 0, 0, 255),
				    STMT(BPF_RET | BPF_K, 0) };
	struct sock_filter ok[] = { JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
				    STMT(BPF_RET | BPF_K, 0), STMT(BPF_RET | BPF_K, 1) };

	cr_assert_eq(seccomp_check(ja, 2), -EINVAL);
	cr_assert_eq(seccomp_check(ja_back, 3), -EINVAL);
	cr_assert_eq(seccomp_check(jt, 3), -EINVAL);
	cr_assert_eq(seccomp_check(jf, 2), -EINVAL);
	cr_assert_eq(seccomp_check(ok, 3), 0);
}

Test(seccomp_check, rejects_opcodes_seccomp_does_not_allow)
{
	static const uint16_t bad[] = {
		BPF_LD | BPF_H | BPF_ABS,  BPF_LD | BPF_B | BPF_ABS,
		BPF_LD | BPF_W | BPF_IND,  BPF_LDX | BPF_B | BPF_MSH,
		BPF_ALU | BPF_MOD | BPF_K, BPF_ALU | BPF_NEG | BPF_X,
		BPF_RET | BPF_X,	   0xffff,
		BPF_MISC | 0x10,
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sock_filter p[] = { STMT(bad[i], 0), STMT(BPF_RET | BPF_K, 0) };

		cr_assert_eq(seccomp_check(p, 2), -EINVAL, "opcode %#x was accepted", bad[i]);
	}
}

Test(seccomp_check, rejects_bad_loads_shifts_and_divisions)
{
	struct sock_filter unaligned[] = { STMT(BPF_LD | BPF_W | BPF_ABS, 2),
					   STMT(BPF_RET | BPF_A, 0) };
	struct sock_filter past_end[] = { STMT(BPF_LD | BPF_W | BPF_ABS, 64),
					  STMT(BPF_RET | BPF_A, 0) };
	struct sock_filter last_word[] = { STMT(BPF_LD | BPF_W | BPF_ABS, 60),
					   STMT(BPF_RET | BPF_A, 0) };
	struct sock_filter div0[] = { STMT(BPF_ALU | BPF_DIV | BPF_K, 0),
				      STMT(BPF_RET | BPF_A, 0) };
	struct sock_filter shift[] = { STMT(BPF_ALU | BPF_LSH | BPF_K, 32),
				       STMT(BPF_RET | BPF_A, 0) };
	struct sock_filter mem[] = { STMT(BPF_ST, 16), STMT(BPF_RET | BPF_A, 0) };

	cr_assert_eq(seccomp_check(unaligned, 2), -EINVAL);
	cr_assert_eq(seccomp_check(past_end, 2), -EINVAL);
	cr_assert_eq(seccomp_check(last_word, 2), 0);
	cr_assert_eq(seccomp_check(div0, 2), -EINVAL);
	cr_assert_eq(seccomp_check(shift, 2), -EINVAL);
	cr_assert_eq(seccomp_check(mem, 2), -EINVAL);
}

Test(seccomp_check, rejects_a_program_not_ending_in_return)
{
	struct sock_filter p[] = { STMT(BPF_RET | BPF_K, 0), STMT(BPF_LD | BPF_IMM, 0) };

	cr_assert_eq(seccomp_check(p, 2), -EINVAL);
}

Test(seccomp_check, rejects_scratch_memory_read_before_written_on_some_path)
{
	/* mem[3] is stored on the fall-through path only, then read where both paths meet. */
	struct sock_filter p[] = {
		JUMP(BPF_JMP | BPF_JEQ | BPF_K, 7, 1, 0),
		STMT(BPF_ST, 3),
		STMT(BPF_LD | BPF_MEM, 3),
		STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_filter q[] = { STMT(BPF_ST, 3), STMT(BPF_LD | BPF_MEM, 3),
				   STMT(BPF_RET | BPF_A, 0) };

	cr_assert_eq(seccomp_check(p, 4), -EINVAL);
	cr_assert_eq(seccomp_check(q, 3), 0);
}

Test(seccomp_run, alu_scratch_and_data_words)
{
	/* A = nr; A = A*3 + args[0] high word; mem[0] = A; X = 7; A = X; A = mem[0] - X; ret A */
	struct sock_filter p[] = {
		STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		STMT(BPF_ALU | BPF_MUL | BPF_K, 3),
		STMT(BPF_MISC | BPF_TAX, 0),
		STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]) + 4),
		STMT(BPF_ALU | BPF_ADD | BPF_X, 0),
		STMT(BPF_ST, 0),
		STMT(BPF_LDX | BPF_IMM, 7),
		STMT(BPF_LD | BPF_MEM, 0),
		STMT(BPF_ALU | BPF_SUB | BPF_X, 0),
		STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_filter div[] = { STMT(BPF_LDX | BPF_IMM, 0), STMT(BPF_LD | BPF_IMM, 9),
				     STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
				     STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_filter len[] = { STMT(BPF_LD | BPF_W | BPF_LEN, 0), STMT(BPF_RET | BPF_A, 0) };

	cr_assert_eq(seccomp_check(p, 10), 0);
	cr_assert_eq(run(p, 10, 5, 0x0000000200000000ULL, 0), 5 * 3 + 2 - 7);
	/* Division by a zero X ends the program with 0, SECCOMP_RET_KILL_THREAD. */
	cr_assert_eq(seccomp_check(div, 4), 0);
	cr_assert_eq(run(div, 4, 0, 0, 0), 0);
	cr_assert_eq(run(len, 2, 0, 0, 0), sizeof(struct seccomp_data));
}

/* --- stacking --- */

static struct seccomp_filter *filter_returning(uint32_t ret, struct seccomp_filter *prev)
{
	struct sock_filter p = STMT(BPF_RET | BPF_K, ret);
	struct seccomp_filter *f;

	cr_assert_eq(seccomp_filter_create(&p, 1, prev, false, &f), 0);
	return f;
}

Test(seccomp_stack, strongest_action_wins_whatever_the_order)
{
	struct seccomp_filter *a = filter_returning(SECCOMP_RET_ERRNO | 1, NULL);
	struct seccomp_filter *b = filter_returning(SECCOMP_RET_ALLOW, a);
	struct seccomp_filter *c = filter_returning(SECCOMP_RET_KILL_PROCESS, b);
	struct seccomp_filter *d2 = filter_returning(SECCOMP_RET_ERRNO | 2, b);
	struct seccomp_data d = data_of(0, 0, 0);

	cr_assert_eq(seccomp_filter_run(b, &d, NULL), SECCOMP_RET_ERRNO | 1);
	cr_assert_eq(seccomp_filter_run(c, &d, NULL), SECCOMP_RET_KILL_PROCESS);
	/* Equal actions: the newest filter's data. */
	cr_assert_eq(seccomp_filter_run(d2, &d, NULL), SECCOMP_RET_ERRNO | 2);
	seccomp_filter_put(a);
	seccomp_filter_put(b);
	seccomp_filter_put(c);
	seccomp_filter_put(d2);
}

Test(seccomp_stack, chain_longer_than_linux_allows_is_refused)
{
	struct sock_filter *p = calloc(SECCOMP_MAX_INSNS, sizeof(*p));
	struct seccomp_filter *f = NULL, *n;
	int ret = 0, count = 0;

	for (size_t i = 0; i < SECCOMP_MAX_INSNS; i++)
		p[i] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	while ((ret = seccomp_filter_create(p, SECCOMP_MAX_INSNS, f, false, &n)) == 0) {
		seccomp_filter_put(f);
		f = n;
		count++;
	}
	cr_assert_eq(ret, -ENOMEM);
	/* 32768 instructions per path with 4 of overhead per filter: 7 filters of 4096. */
	cr_assert_eq(count, 7);
	seccomp_filter_put(f);
	free(p);
}

/* --- actions on a bare task --- */

static struct thread_group tg;
static struct task task;

static void bare_task(void)
{
	memset(&tg, 0, sizeof(tg));
	memset(&task, 0, sizeof(task));
	pthread_mutex_init(&tg.lock, NULL);
	list_init(&tg.tasks);
	list_add_tail(&task.tg_link, &tg.tasks);
	tg.nr_threads = 1;
	task.tg = &tg;
	task.tid = 1;
	task.regs.rip = 0x401234;
	exit_group_status = -1;
	sent_sig = 0;
}

static void attach(uint32_t ret)
{
	struct sock_filter p[] = {
		STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdir, 0, 1),
		STMT(BPF_RET | BPF_K, ret),
		STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	task.no_new_privs = true;
	cr_assert_eq(seccomp_set_filter(&task, 0, p, 4), 0);
	cr_assert_eq(task.seccomp_mode, SECCOMP_MODE_FILTER);
}

Test(seccomp_enter, errno_action_returns_the_errno_and_others_run)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	attach(SECCOMP_RET_ERRNO | EPERM);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(ret, -EPERM);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_getpid, &a, &ret), true);
	seccomp_task_release(&task);
}

Test(seccomp_enter, errno_above_max_errno_is_capped)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	attach(SECCOMP_RET_ERRNO | 0xffff);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(ret, -4095);
	seccomp_task_release(&task);
}

Test(seccomp_enter, kill_process_exits_the_group_with_sigsys)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	attach(SECCOMP_RET_KILL_PROCESS);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(exit_group_status, SIGSYS);
	seccomp_task_release(&task);
}

Test(seccomp_enter, kill_thread_of_a_threaded_process_ends_the_thread_only)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	tg.nr_threads = 2;
	attach(SECCOMP_RET_KILL_THREAD);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(exit_group_status, -1);
	cr_assert(task.exiting);
	cr_assert_eq(task.exit_code, SIGSYS);
	seccomp_task_release(&task);
}

Test(seccomp_enter, trap_sends_sigsys_with_the_call_and_rolls_rax_back)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	attach(SECCOMP_RET_TRAP | 42);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(ret, SYS_mkdir);
	cr_assert_eq(sent_sig, SIGSYS);
	cr_assert_eq(sent_info.si_code, 1); /* SYS_SECCOMP */
	cr_assert_eq(sent_info.si_errno, 42);
	cr_assert_eq(sent_info.sys.syscall, SYS_mkdir);
	cr_assert_eq(sent_info.sys.arch, SECCOMP_ARCH_X86_64);
	cr_assert_eq(sent_info.sys.call_addr, 0x401234);
	seccomp_task_release(&task);
}

Test(seccomp_enter, trace_and_user_notif_give_enosys)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	attach(SECCOMP_RET_USER_NOTIF);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(ret, -ENOSYS);
	seccomp_task_release(&task);
	bare_task();
	attach(SECCOMP_RET_TRACE);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_mkdir, &a, &ret), false);
	cr_assert_eq(ret, -ENOSYS);
	seccomp_task_release(&task);
}

Test(seccomp_enter, strict_mode_allows_read_and_kills_on_anything_else)
{
	struct syscall_args a = { { 0 } };
	long ret = 0;

	bare_task();
	cr_assert_eq(seccomp_set_strict(&task), 0);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_read, &a, &ret), true);
	cr_assert_eq(seccomp_syscall_enter(&task, SYS_getpid, &a, &ret), false);
	cr_assert_eq(exit_group_status, SIGKILL);
}

Test(seccomp_set_filter, needs_no_new_privs_or_cap_sys_admin)
{
	struct sock_filter p = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	bare_task();
	cr_assert_eq(seccomp_set_filter(&task, 0, &p, 1), -EACCES);
	task.cred.cap_effective = 1ULL << CAP_SYS_ADMIN;
	cr_assert_eq(seccomp_set_filter(&task, 0, &p, 1), 0);
	cr_assert_eq(seccomp_set_filter(&task, SECCOMP_FILTER_FLAG_NEW_LISTENER, &p, 1), -EINVAL);
	cr_assert_eq(seccomp_set_filter(&task, 0x1000, &p, 1), -EINVAL);
	cr_assert_eq(seccomp_set_strict(&task), -EINVAL);
	seccomp_task_release(&task);
}

Test(seccomp_set_filter, tsync_refuses_a_thread_with_a_foreign_chain)
{
	struct sock_filter p = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	static struct task other;
	struct seccomp_filter *foreign = filter_returning(SECCOMP_RET_ALLOW, NULL);

	bare_task();
	memset(&other, 0, sizeof(other));
	other.tg = &tg;
	other.tid = 2;
	list_add_tail(&other.tg_link, &tg.tasks);
	task.no_new_privs = true;
	cr_assert_eq(seccomp_attach(&other, foreign), 0);
	cr_assert_eq(seccomp_set_filter(&task, SECCOMP_FILTER_FLAG_TSYNC, &p, 1), 2);
	cr_assert_eq(seccomp_set_filter(&task,
					SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH,
					&p, 1),
		     -ESRCH);
	/* Without a filter, the other thread is synchronized. */
	seccomp_task_release(&other);
	other.seccomp_mode = SECCOMP_MODE_DISABLED;
	cr_assert_eq(seccomp_set_filter(&task, SECCOMP_FILTER_FLAG_TSYNC, &p, 1), 0);
	cr_assert_eq(other.seccomp_filter, task.seccomp_filter);
	cr_assert(other.no_new_privs);
	seccomp_task_release(&other);
	seccomp_task_release(&task);
	seccomp_filter_put(foreign);
}
