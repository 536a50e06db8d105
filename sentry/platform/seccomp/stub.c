/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp platform's stub code: the zygote (forks stubs), the controller (a stub's first
 * thread: runs the sentry's mapping changes and makes guest threads), the set-up of a guest
 * thread, and the signal handler through which every guest system call and fault reaches the
 * sentry. See README.md in this folder.
 *
 * The code page holds position-independent code (it finds its page with a rip-relative lea, keeps
 * the page in %rbx, and uses no stack of its own: only the alternate signal stack of a thread
 * area, set up by the kernel for the handler), followed by the two seccomp programs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "sentry/platform/seccomp/seccomp.h"
#include "sentry/platform/stubchild.h"

#define SC_FPROG_ZYGOTE_OFF 0x800
#define SC_FILTER_ZYGOTE_OFF 0x810
#define SC_FPROG_GUEST_OFF 0xc00
#define SC_FILTER_GUEST_OFF 0xc10
#define STR_(x) #x
#define STR(x) STR_(x)

/* clang-format off */
__asm__(".pushsection .rodata.husk_sc_stub, \"a\"\n"
	".balign 64\n"
	"husk_sc_code_start:\n"
	/*
	 * The zygote, after its C prelude (sc_zygote_child): unmap all but the code and scratch
	 * pages, install the stub filter, say "ready" (8 zero bytes), then serve fork requests.
	 * Registers: rbx = code page.
	 */
	"husk_sc_zygote_entry:\n"
	"	lea husk_sc_code_start(%rip), %rbx\n"
	"	mov $" STR(__NR_munmap) ", %eax\n"
	"	xor %edi, %edi\n"
	"	mov %rbx, %rsi\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	"	lea 8192(%rbx), %rdi\n"
	"	movabs $0x00fffffffffff000, %rsi\n"
	"	sub %rdi, %rsi\n"
	"	mov $" STR(__NR_munmap) ", %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	lea 8192(%rbx), %rdi\n"
	"	movabs $0x00007ffffffff000, %rsi\n"
	"	sub %rdi, %rsi\n"
	"	mov $" STR(__NR_munmap) ", %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	"1:	mov $" STR(__NR_seccomp) ", %eax\n"
	"	mov $" STR(SECCOMP_SET_MODE_FILTER) ", %edi\n"
	"	xor %esi, %esi\n"
	"	lea " STR(SC_FPROG_ZYGOTE_OFF) "(%rbx), %rdx\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	"	movq $0, " STR(SC_SCRATCH_OFF + SC_S_PID) "(%rbx)\n"
	"	mov $" STR(__NR_write) ", %eax\n"
	"	mov $" STR(SC_STUB_SOCK) ", %edi\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_PID) "(%rbx), %rsi\n"
	"	mov $8, %edx\n"
	"	syscall\n"
	/* The fork loop: a request is the new stub's command page offset (8 bytes). */
	"2:	mov $" STR(__NR_read) ", %eax\n"
	"	mov $" STR(SC_STUB_SOCK) ", %edi\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_CMDOFF) "(%rbx), %rsi\n"
	"	mov $8, %edx\n"
	"	syscall\n"
	"	cmp $8, %rax\n"
	"	jne 91f\n"
	"	mov $" STR(__NR_socketpair) ", %eax\n"
	"	mov $" STR(AF_UNIX) ", %edi\n"
	"	mov $5, %esi\n" /* SOCK_SEQPACKET */
	"	xor %edx, %edx\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_FDS) "(%rbx), %r10\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 4f\n"
	"	mov $" STR(__NR_clone) ", %eax\n"
	"	mov $" STR(SC_FORK_CLONE_FLAGS) ", %edi\n"
	"	xor %esi, %esi\n"
	"	xor %edx, %edx\n"
	"	xor %r10d, %r10d\n"
	"	xor %r8d, %r8d\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 10f\n"
	/* Parent: reply with the pid (or -errno) and the sentry's end of the socket pair. */
	"	mov %rax, " STR(SC_SCRATCH_OFF + SC_S_PID) "(%rbx)\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_FDS) "(%rbx), %eax\n"
	"	mov %eax, " STR(SC_SCRATCH_OFF + SC_S_CMSG + 16) "(%rbx)\n"
	"	mov $" STR(__NR_sendmsg) ", %eax\n"
	"	mov $" STR(SC_STUB_SOCK) ", %edi\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_MSG) "(%rbx), %rsi\n"
	"	xor %edx, %edx\n"
	"	syscall\n"
	"	mov $" STR(__NR_close) ", %eax\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_FDS) "(%rbx), %edi\n"
	"	syscall\n"
	"	mov $" STR(__NR_close) ", %eax\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_FDS + 4) "(%rbx), %edi\n"
	"	syscall\n"
	"	jmp 2b\n"
	/* socketpair failed: reply with the error alone. */
	"4:	mov %rax, " STR(SC_SCRATCH_OFF + SC_S_PID) "(%rbx)\n"
	"	mov $" STR(__NR_write) ", %eax\n"
	"	mov $" STR(SC_STUB_SOCK) ", %edi\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_PID) "(%rbx), %rsi\n"
	"	mov $8, %edx\n"
	"	syscall\n"
	"	jmp 2b\n"
	/* The new stub: its end of the pair becomes SC_STUB_SOCK; map the command page. */
	"10:	mov $" STR(__NR_dup2) ", %eax\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_FDS + 4) "(%rbx), %edi\n"
	"	mov $" STR(SC_STUB_SOCK) ", %esi\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	js 90f\n"
	"	mov $" STR(__NR_close) ", %eax\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_FDS) "(%rbx), %edi\n"
	"	syscall\n"
	"	mov $" STR(__NR_close) ", %eax\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_FDS + 4) "(%rbx), %edi\n"
	"	syscall\n"
	"	mov $" STR(__NR_mmap) ", %eax\n"
	"	lea " STR(SC_CMD_OFF) "(%rbx), %rdi\n"
	"	mov $4096, %esi\n"
	"	mov $" STR(PROT_READ) ", %edx\n"
	"	mov $" STR(MAP_SHARED | MAP_FIXED) ", %r10d\n"
	"	mov $" STR(SC_STUB_MEMFD) ", %r8d\n"
	"	mov " STR(SC_SCRATCH_OFF + SC_S_CMDOFF) "(%rbx), %r9\n"
	"	syscall\n"
	"	cmp %rax, %rdi\n"
	"	jne 90f\n"
	/*
	 * The controller loop: a request is one byte on the socket; what to do is in the command
	 * page (read-only here: no guest thread can change it): a batch of system calls, run in
	 * order until one fails; the reply is the last result, the number of calls not run and,
	 * for getrusage, the rusage.
	 */
	"20:	mov $" STR(__NR_read) ", %eax\n"
	"	mov $" STR(SC_STUB_SOCK) ", %edi\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_BYTE) "(%rbx), %rsi\n"
	"	mov $1, %edx\n"
	"	syscall\n"
	"	cmp $1, %rax\n"
	"	jne 91f\n"
	"	lea " STR(SC_CMD_OFF) "(%rbx), %r15\n"
	"	mov " STR(SC_C_COUNT) "(%r15), %r13\n"
	"	lea " STR(SC_C_OPS) "(%r15), %rbp\n"
	"	test %r13, %r13\n"
	"	jz 21f\n"
	"22:	mov " STR(SC_OP_NR) "(%rbp), %rax\n"
	"	mov " STR(SC_OP_ARGS) "(%rbp), %rdi\n"
	"	mov " STR(SC_OP_ARGS + 8) "(%rbp), %rsi\n"
	"	mov " STR(SC_OP_ARGS + 16) "(%rbp), %rdx\n"
	"	mov " STR(SC_OP_ARGS + 24) "(%rbp), %r10\n"
	"	mov " STR(SC_OP_ARGS + 32) "(%rbp), %r8\n"
	"	mov " STR(SC_OP_ARGS + 40) "(%rbp), %r9\n"
	"	mov " STR(SC_OP_AREA) "(%rbp), %r12\n"
	"	mov %rax, %r14\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 23f\n"
	/*
	 * rax 0 from clone: the new thread. The number is checked in r14, not in the command
	 * page, which the sentry may already have rewritten for its next request.
	 */
	"	cmp $" STR(__NR_clone) ", %r14\n"
	"	je 30f\n"
	/* An error (-4095..-1) ends the batch; else the next request, if any. */
	"23:	cmp $-4095, %rax\n"
	"	jae 21f\n"
	"	add $" STR(SC_OP_SIZE) ", %rbp\n"
	"	dec %r13\n"
	"	jnz 22b\n"
	/* The reply: the last result and how many requests were not run. */
	"21:	mov %rax, " STR(SC_SCRATCH_OFF + SC_S_REPLY) "(%rbx)\n"
	"	mov %r13, " STR(SC_SCRATCH_OFF + SC_S_REPLY + 8) "(%rbx)\n"
	"	mov $" STR(__NR_write) ", %eax\n"
	"	mov $" STR(SC_STUB_SOCK) ", %edi\n"
	"	lea " STR(SC_SCRATCH_OFF + SC_S_REPLY) "(%rbx), %rsi\n"
	"	mov $" STR(SC_S_REPLY_LEN) ", %edx\n"
	"	syscall\n"
	"	jmp 20b\n"
	/*
	 * A new guest thread; r12 = its area. Alternate stack = the area past its first page,
	 * signals unblocked, the guest filter stacked, then park on ud2: the handler reports
	 * that first stop, and the sentry's first switch replaces every register.
	 */
	"30:	lea " STR(SC_AREA_SIZE - 64) "(%r12), %rax\n"
	"	mov %rax, " STR(SC_A_TSTACK) "(%r12)\n"
	"	mov %rax, " STR(SC_A_TRSP) "(%r12)\n"
	"	lea 4096(%r12), %rax\n"
	"	mov %rax, " STR(SC_A_STACK) "(%r12)\n"
	"	movq $0, " STR(SC_A_STACK + 8) "(%r12)\n"
	"	movq $" STR(SC_AREA_SIZE - 4096) ", " STR(SC_A_STACK + 16) "(%r12)\n"
	"	mov $" STR(__NR_sigaltstack) ", %eax\n"
	"	lea " STR(SC_A_STACK) "(%r12), %rdi\n"
	"	xor %esi, %esi\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	"	mov $" STR(__NR_rt_sigprocmask) ", %eax\n"
	"	mov $" STR(SIG_SETMASK) ", %edi\n"
	"	lea husk_sc_zero(%rip), %rsi\n"
	"	xor %edx, %edx\n"
	"	mov $8, %r10d\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	/*
	 * Syscall User Dispatch: every call from outside the code page raises SIGSYS before
	 * seccomp runs, even the ones the kernel lets through seccomp filters unfiltered
	 * (uretprobe, uprobe). The selector byte is in the code page: it stays BLOCK.
	 */
	"	mov $" STR(__NR_prctl) ", %eax\n"
	"	mov $" STR(SC_PR_SET_SYSCALL_USER_DISPATCH) ", %edi\n"
	"	mov $" STR(SC_PR_SYS_DISPATCH_ON) ", %esi\n"
	"	mov %rbx, %rdx\n"
	"	mov $4096, %r10d\n"
	"	lea husk_sc_block(%rip), %r8\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	"	mov $" STR(__NR_seccomp) ", %eax\n"
	"	mov $" STR(SECCOMP_SET_MODE_FILTER) ", %edi\n"
	"	xor %esi, %esi\n"
	"	lea " STR(SC_FPROG_GUEST_OFF) "(%rbx), %rdx\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 90f\n"
	"husk_sc_park:\n"
	"	ud2\n"
	/* Set-up failed: the whole stub ends (its socket closes, the sentry sees it). */
	"90:	mov $" STR(__NR_exit_group) ", %eax\n"
	"	mov $1, %edi\n"
	"	syscall\n"
	"	ud2\n"
	/* The sentry is gone (end of file on the socket). */
	"91:	mov $" STR(__NR_exit_group) ", %eax\n"
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	ud2\n"
	/*
	 * The signal handler (every signal, SA_SIGINFO|SA_ONSTACK, all signals blocked while it
	 * runs): rdi = signo, rsi = siginfo, rdx = ucontext, rsp on the thread's alternate stack,
	 * so the area is rsp rounded down to SC_AREA_SIZE.
	 */
	"husk_sc_handler:\n"
	"	mov %rsp, %r8\n"
	"	and $" STR(~(SC_AREA_SIZE - 1)) ", %r8\n"
	/*
	 * A signal that interrupted the trampoline (its rsp was in the area already). Anything
	 * but the interrupt signal is a fault of the stub's own code: the stub ends (exit_group is
	 * not in the guest filter's list: the kernel kills the process). The interrupt must not
	 * be lost: it is noted in the area, and the trampoline's way back, which checks the note
	 * first, reports it as a stop instead of returning to the guest; a signal that came on
	 * that way back (after the check, or before the iretq) sends the thread to its start.
	 */
	"	mov " STR(SC_UC_RSP) "(%rdx), %rax\n"
	"	sub %r8, %rax\n"
	"	cmp $" STR(SC_AREA_SIZE) ", %rax\n"
	"	jae 40f\n"
	"	cmp $" STR(SC_INTERRUPT_SIGNAL_NR) ", %edi\n"
	"	jne 48f\n"
	"	movl $1, " STR(SC_A_INTR) "(%r8)\n"
	"	mov " STR(SC_UC_RIP) "(%rdx), %rax\n"
	"	lea husk_sc_tramp_ret(%rip), %rcx\n"
	"	cmp %rcx, %rax\n"
	"	jb 39f\n"
	"	lea husk_sc_tramp_iret(%rip), %rcx\n"
	"	cmp %rcx, %rax\n"
	"	ja 39f\n"
	"	lea husk_sc_tramp_ret(%rip), %rax\n"
	"	mov %rax, " STR(SC_UC_RIP) "(%rdx)\n"
	"	mov %r8, " STR(SC_UC_R8) "(%rdx)\n"
	"	mov " STR(SC_A_TSTACK) "(%r8), %rax\n"
	"	mov %rax, " STR(SC_UC_RSP) "(%rdx)\n"
	"39:	ret\n"
	"40:	mov %rdi, " STR(SC_A_SIGNO) "(%r8)\n"
	"	mov %rsi, " STR(SC_A_INFO) "(%r8)\n"
	"	mov %rdx, " STR(SC_A_UC) "(%r8)\n"
	"	movl $" STR(SC_KIND_SIGNAL) ", " STR(SC_A_KIND) "(%r8)\n"
	"	rdfsbase %rax\n"
	"	mov %rax, " STR(SC_A_FSBASE) "(%r8)\n"
	/*
	 * The guest runs with gs base = its area (the trampoline's way to it) unless it has one
	 * of its own: a base other than the area is the guest's (set by the sentry, or by the
	 * guest's own wrgsbase), the area means the sentry's value (0) still holds.
	 */
	"	rdgsbase %rax\n"
	"	cmp %rax, %r8\n"
	"	je 49f\n"
	"	mov %rax, " STR(SC_A_GSBASE) "(%r8)\n"
	"49:	mov $" STR(SC_ST_STOPPED) ", %eax\n"
	"	xchg %eax, " STR(SC_A_STATE) "(%r8)\n"
	"	cmpl $0, " STR(SC_A_SENTRY_SLEEPS) "(%r8)\n"
	"	je 41f\n"
	"	mov $" STR(__NR_futex) ", %eax\n"
	"	lea " STR(SC_A_STATE) "(%r8), %rdi\n"
	"	mov $" STR(FUTEX_WAKE) ", %esi\n"
	"	mov $1, %edx\n"
	"	syscall\n"
	"41:	mov " STR(SC_A_SPIN) "(%r8), %r9d\n"
	"42:	cmpl $" STR(SC_ST_STOPPED) ", " STR(SC_A_STATE) "(%r8)\n"
	"	jne 45f\n"
	"	test %r9d, %r9d\n"
	"	jz 43f\n"
	"	pause\n"
	"	dec %r9d\n"
	"	jmp 42b\n"
	"43:	mov $1, %eax\n"
	"	xchg %eax, " STR(SC_A_STUB_SLEEPS) "(%r8)\n"
	"44:	cmpl $" STR(SC_ST_STOPPED) ", " STR(SC_A_STATE) "(%r8)\n"
	"	jne 46f\n"
	"	mov $" STR(__NR_futex) ", %eax\n"
	"	lea " STR(SC_A_STATE) "(%r8), %rdi\n"
	"	mov $" STR(FUTEX_WAIT) ", %esi\n"
	"	mov $" STR(SC_ST_STOPPED) ", %edx\n"
	"	xor %r10d, %r10d\n"
	"	syscall\n"
	"	jmp 44b\n"
	"46:	movl $0, " STR(SC_A_STUB_SLEEPS) "(%r8)\n"
	"45:	cmpl $" STR(SC_ST_EXIT) ", " STR(SC_A_STATE) "(%r8)\n"
	"	je 47f\n"
	"	cmpl $" STR(SC_KIND_SIGNAL) ", " STR(SC_A_KIND) "(%r8)\n"
	"	jne husk_sc_tramp_ret\n"
	"	mov " STR(SC_A_FSBASE) "(%r8), %rax\n"
	"	wrfsbase %rax\n"
	"	mov " STR(SC_A_GSBASE) "(%r8), %rax\n"
	"	test %rax, %rax\n"
	"	cmovz %r8, %rax\n"
	"	wrgsbase %rax\n"
	"	ret\n"
	"47:	mov $" STR(__NR_exit) ", %eax\n"
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	ud2\n"
	/* A fault in the stub's own code (see the handler's start): the stub ends. */
	"48:	mov $" STR(__NR_exit_group) ", %eax\n"
	"	syscall\n"
	"	ud2\n"
	/*
	 * Patched system calls (README.md, "Syscall patching"). A trap-table entry in guest
	 * memory jumps here with eax = the call's number, rcx = the address after the patched
	 * instruction, r11 clobbered (the syscall instruction clobbers rcx and r11 too), the
	 * guest's rflags and rsp untouched; gs base = the thread's area. The guest's stack is
	 * never touched (its red zone stays intact): the first instruction swaps rsp with the
	 * trampoline stack top kept in the area, after which a signal nests (see the handler).
	 * The registers go into the trampoline frame, the state is published like a signal's,
	 * and the way back is an iretq that sets rip, rsp and rflags at once (a single step's
	 * trap flag takes effect at the guest's first instruction).
	 */
	"husk_sc_tramp:\n"
	"	xchg %rsp, %gs:" STR(SC_A_TRSP) "\n"
	"	pushfq\n"
	"	rdgsbase %r11\n"
	"	mov %r8, " STR(SC_TF_GREGS + 8 * 0) "(%r11)\n"
	"	mov %r9, " STR(SC_TF_GREGS + 8 * 1) "(%r11)\n"
	"	mov %r10, " STR(SC_TF_GREGS + 8 * 2) "(%r11)\n"
	"	mov %r12, " STR(SC_TF_GREGS + 8 * 4) "(%r11)\n"
	"	mov %r13, " STR(SC_TF_GREGS + 8 * 5) "(%r11)\n"
	"	mov %r14, " STR(SC_TF_GREGS + 8 * 6) "(%r11)\n"
	"	mov %r15, " STR(SC_TF_GREGS + 8 * 7) "(%r11)\n"
	"	mov %rdi, " STR(SC_TF_GREGS + 8 * 8) "(%r11)\n"
	"	mov %rsi, " STR(SC_TF_GREGS + 8 * 9) "(%r11)\n"
	"	mov %rbp, " STR(SC_TF_GREGS + 8 * 10) "(%r11)\n"
	"	mov %rbx, " STR(SC_TF_GREGS + 8 * 11) "(%r11)\n"
	"	mov %rdx, " STR(SC_TF_GREGS + 8 * 12) "(%r11)\n"
	"	mov %rax, " STR(SC_TF_GREGS + 8 * 13) "(%r11)\n"
	"	mov %rcx, " STR(SC_TF_GREGS + 8 * 14) "(%r11)\n"
	"	mov %rcx, " STR(SC_TF_GREGS + 8 * 16) "(%r11)\n"
	"	pop %rax\n"
	"	mov %rax, " STR(SC_TF_GREGS + 8 * 17) "(%r11)\n"
	"	mov %rax, " STR(SC_TF_GREGS + 8 * 3) "(%r11)\n"
	"	mov " STR(SC_A_TRSP) "(%r11), %rax\n"
	"	mov %rax, " STR(SC_TF_GREGS + 8 * 15) "(%r11)\n"
	"	mov %r11, %r8\n"
	"	mov $-1, %eax\n"
	"	mov $-1, %edx\n"
	"	xsave " STR(SC_TF_FP) "(%r8)\n"
	"	rdfsbase %rax\n"
	"	mov %rax, " STR(SC_A_FSBASE) "(%r8)\n"
	"	movl $" STR(SC_KIND_TRAMP) ", " STR(SC_A_KIND) "(%r8)\n"
	"	jmp 49b\n"
	/*
	 * The way back from a trampoline stop: r8 = the area, on the trampoline stack. An
	 * interrupt noted meanwhile is reported first (a stop of kind TRAMP_INTR: the frame holds
	 * the registers to resume with); the sentry resumes it like any stop.
	 */
	"husk_sc_tramp_ret:\n"
	"	cmpl $0, " STR(SC_A_INTR) "(%r8)\n"
	"	je 60f\n"
	"	movl $0, " STR(SC_A_INTR) "(%r8)\n"
	"	movl $" STR(SC_KIND_TRAMP_INTR) ", " STR(SC_A_KIND) "(%r8)\n"
	"	jmp 49b\n"
	"60:	cmpl $0, " STR(SC_A_FPDIRTY) "(%r8)\n"
	"	je 61f\n"
	"	movl $0, " STR(SC_A_FPDIRTY) "(%r8)\n"
	"	mov $-1, %eax\n"
	"	mov $-1, %edx\n"
	"	xrstor " STR(SC_TF_FP) "(%r8)\n"
	"61:	mov " STR(SC_A_FSBASE) "(%r8), %rax\n"
	"	wrfsbase %rax\n"
	"	mov " STR(SC_A_GSBASE) "(%r8), %rax\n"
	"	test %rax, %rax\n"
	"	cmovz %r8, %rax\n"
	"	wrgsbase %rax\n"
	"	mov " STR(SC_A_TSTACK) "(%r8), %rsp\n"
	"	pushq $" STR(SC_USER_SS) "\n"
	"	pushq " STR(SC_TF_GREGS + 8 * 15) "(%r8)\n"
	"	mov " STR(SC_TF_GREGS + 8 * 17) "(%r8), %rax\n"
	"	and $" STR(SC_EFLAGS_USER) ", %eax\n"
	"	or $" STR(SC_EFLAGS_FIXED) ", %eax\n"
	"	push %rax\n"
	"	pushq $" STR(SC_USER_CS) "\n"
	"	pushq " STR(SC_TF_GREGS + 8 * 16) "(%r8)\n"
	"	mov " STR(SC_A_TSTACK) "(%r8), %rax\n"
	"	mov %rax, " STR(SC_A_TRSP) "(%r8)\n"
	"	mov " STR(SC_TF_GREGS + 8 * 1) "(%r8), %r9\n"
	"	mov " STR(SC_TF_GREGS + 8 * 2) "(%r8), %r10\n"
	"	mov " STR(SC_TF_GREGS + 8 * 4) "(%r8), %r12\n"
	"	mov " STR(SC_TF_GREGS + 8 * 5) "(%r8), %r13\n"
	"	mov " STR(SC_TF_GREGS + 8 * 6) "(%r8), %r14\n"
	"	mov " STR(SC_TF_GREGS + 8 * 7) "(%r8), %r15\n"
	"	mov " STR(SC_TF_GREGS + 8 * 8) "(%r8), %rdi\n"
	"	mov " STR(SC_TF_GREGS + 8 * 9) "(%r8), %rsi\n"
	"	mov " STR(SC_TF_GREGS + 8 * 10) "(%r8), %rbp\n"
	"	mov " STR(SC_TF_GREGS + 8 * 11) "(%r8), %rbx\n"
	"	mov " STR(SC_TF_GREGS + 8 * 12) "(%r8), %rdx\n"
	"	mov " STR(SC_TF_GREGS + 8 * 13) "(%r8), %rax\n"
	"	mov " STR(SC_TF_GREGS + 8 * 14) "(%r8), %rcx\n"
	"	mov " STR(SC_TF_GREGS + 8 * 3) "(%r8), %r11\n"
	"	mov " STR(SC_TF_GREGS + 8 * 0) "(%r8), %r8\n"
	"husk_sc_tramp_iret:\n"
	"	iretq\n"
	"husk_sc_restorer:\n"
	"	mov $" STR(__NR_rt_sigreturn) ", %eax\n"
	"	syscall\n"
	"	ud2\n"
	".balign 8\n"
	"husk_sc_zero:\n"
	"	.quad 0\n"
	"husk_sc_block:\n"
	"	.byte 1\n" /* SYSCALL_DISPATCH_FILTER_BLOCK */
	"husk_sc_code_end:\n"
	".popsection\n");
/* clang-format on */

extern const char husk_sc_code_start[], husk_sc_zygote_entry[], husk_sc_park[], husk_sc_handler[],
	husk_sc_restorer[], husk_sc_tramp[], husk_sc_code_end[];

#define JUMP(k, jt, jf) ((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (jt), (jf)))
#define LOAD(off) ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off)))
#define RET(v) ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (v)))
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (ARG_LO(i) + 4)

/* Appends "unless the call comes from the code page (after an x86-64 `syscall`), return v". */
static size_t from_code_page(struct sock_filter *out, size_t n, uint64_t code_page, uint32_t v)
{
	out[n++] = LOAD(offsetof(struct seccomp_data, arch));
	out[n++] = JUMP(AUDIT_ARCH_X86_64, 1, 0);
	out[n++] = RET(v);
	out[n++] = LOAD(offsetof(struct seccomp_data, instruction_pointer) + 4);
	out[n++] = JUMP((uint32_t)(code_page >> 32), 1, 0);
	out[n++] = RET(v);
	out[n++] = LOAD(offsetof(struct seccomp_data, instruction_pointer));
	out[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (uint32_t)PAGE_MASK);
	out[n++] = JUMP((uint32_t)code_page, 1, 0);
	out[n++] = RET(v);
	return n;
}

size_t seccomp_stub_filter(uint64_t code_page, struct sock_filter *out)
{
	static const uint32_t allowed[] = {
		__NR_read,	   __NR_write,		__NR_mmap,	  __NR_munmap,
		__NR_mprotect,	   __NR_close,		__NR_dup2,	  __NR_socketpair,
		__NR_sendmsg,	   __NR_exit,		__NR_exit_group,  __NR_futex,
		__NR_rt_sigreturn, __NR_rt_sigprocmask, __NR_sigaltstack, __NR_getrusage,
	};
	const uint8_t nallowed = ARRAY_SIZE(allowed);
	size_t n = from_code_page(out, 0, code_page, SECCOMP_RET_TRAP);

	out[n++] = LOAD(offsetof(struct seccomp_data, nr));
	/* Layout: the list (to ALLOW), clone, seccomp and prctl checks, KILL, ALLOW, the checks. */
	for (uint8_t i = 0; i < nallowed; i++)
		out[n++] = JUMP(allowed[i], (uint8_t)(nallowed - i + 3), 0);
	out[n++] = JUMP(__NR_clone, 4, 0);
	out[n++] = JUMP(__NR_seccomp, 10, 0);
	out[n++] = JUMP(__NR_prctl, 15, 0);
	out[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	out[n++] = RET(SECCOMP_RET_ALLOW);
	/* clone: a guest thread (controller) or a new stub (zygote), nothing else. */
	out[n++] = LOAD(ARG_HI(0));
	out[n++] = JUMP(0, 0, 3);
	out[n++] = LOAD(ARG_LO(0));
	out[n++] = JUMP(SC_THREAD_CLONE_FLAGS, 2, 0);
	out[n++] = JUMP(SC_FORK_CLONE_FLAGS, 1, 0);
	out[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	out[n++] = RET(SECCOMP_RET_ALLOW);
	/* seccomp: SECCOMP_SET_MODE_FILTER without flags (a new thread stacks the guest filter). */
	out[n++] = LOAD(ARG_LO(0));
	out[n++] = JUMP(SECCOMP_SET_MODE_FILTER, 0, 2);
	out[n++] = LOAD(ARG_LO(1));
	out[n++] = JUMP(0, 1, 0);
	out[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	out[n++] = RET(SECCOMP_RET_ALLOW);
	/* prctl: only PR_SET_SYSCALL_USER_DISPATCH (a new guest thread turns it on). */
	out[n++] = LOAD(ARG_HI(0));
	out[n++] = JUMP(0, 0, 2);
	out[n++] = LOAD(ARG_LO(0));
	out[n++] = JUMP(SC_PR_SET_SYSCALL_USER_DISPATCH, 1, 0);
	out[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	out[n++] = RET(SECCOMP_RET_ALLOW);
	return n;
}

size_t seccomp_guest_filter(uint64_t code_page, struct sock_filter *out)
{
	/* Guest code's calls fall through to the stub filter below, which traps them. */
	size_t n = from_code_page(out, 0, code_page, SECCOMP_RET_ALLOW);

	/* From the code page a guest thread only runs the handler: futex, rt_sigreturn, exit. */
	out[n++] = LOAD(offsetof(struct seccomp_data, nr));
	out[n++] = JUMP(__NR_rt_sigreturn, 3, 0);
	out[n++] = JUMP(__NR_exit, 2, 0);
	out[n++] = JUMP(__NR_futex, 2, 0);
	out[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	out[n++] = RET(SECCOMP_RET_ALLOW);
	/* futex: FUTEX_WAIT or FUTEX_WAKE (shared: the sentry waits on the same word). */
	out[n++] = LOAD(ARG_LO(1));
	out[n++] = JUMP(FUTEX_WAIT, 2, 0);
	out[n++] = JUMP(FUTEX_WAKE, 1, 0);
	out[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	out[n++] = RET(SECCOMP_RET_ALLOW);
	return n;
}

static struct sc_code sc_code;
static int sc_code_err;
static pthread_once_t sc_code_once = PTHREAD_ONCE_INIT;

/* struct sigaction as rt_sigaction(2) takes it. */
struct sc_kernel_sigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	uint64_t mask;
};

#define SC_SA_RESTORER 0x04000000UL

static void sc_code_init(void)
{
	size_t code_len = (size_t)(husk_sc_code_end - husk_sc_code_start);
	struct sock_filter filter[SC_FILTER_MAX];
	struct sock_fprog fprog;
	char *page, *scratch;
	size_t n;

	_Static_assert(SC_INTERRUPT_SIGNAL == SC_INTERRUPT_SIGNAL_NR, "interrupt signal");
	_Static_assert(SC_UC_GREGS == offsetof(ucontext_t, uc_mcontext.gregs), "gregs offset");
	_Static_assert(SC_TF_UC + sizeof(ucontext_t) <= SC_TF_FP && SC_A_END <= SC_TF_UC,
		       "the trampoline frame overlaps");
	_Static_assert(SC_FILTER_ZYGOTE_OFF + SC_FILTER_MAX * sizeof(struct sock_filter) <=
			       SC_FPROG_GUEST_OFF,
		       "the filters overlap");
	_Static_assert(SC_FILTER_GUEST_OFF + SC_FILTER_MAX * sizeof(struct sock_filter) <=
			       PAGE_SIZE,
		       "the guest filter does not fit");
	if (code_len > SC_FPROG_ZYGOTE_OFF) {
		sc_code_err = -E2BIG;
		return;
	}
	page = platform_reserve_fixed(SC_CODE_ADDR, SC_CODE_ADDR_STEP, SC_CODE_ADDR_LIMIT,
				      2 * PAGE_SIZE);
	if (page == MAP_FAILED) {
		sc_code_err = -errno;
		log_error("seccomp: cannot reserve the stub code page above %#llx: %s",
			  (unsigned long long)SC_CODE_ADDR, strerror(errno));
		return;
	}
	memcpy(page, husk_sc_code_start, code_len);
	n = seccomp_stub_filter((uint64_t)page, filter);
	fprog.len = (unsigned short)n;
	fprog.filter = (struct sock_filter *)(page + SC_FILTER_ZYGOTE_OFF);
	memcpy(page + SC_FPROG_ZYGOTE_OFF, &fprog, sizeof(fprog));
	memcpy(page + SC_FILTER_ZYGOTE_OFF, filter, n * sizeof(filter[0]));
	n = seccomp_guest_filter((uint64_t)page, filter);
	fprog.len = (unsigned short)n;
	fprog.filter = (struct sock_filter *)(page + SC_FILTER_GUEST_OFF);
	memcpy(page + SC_FPROG_GUEST_OFF, &fprog, sizeof(fprog));
	memcpy(page + SC_FILTER_GUEST_OFF, filter, n * sizeof(filter[0]));

	sc_code.page = (uint64_t)page;
	sc_code.zygote_entry = sc_code.page + (uint64_t)(husk_sc_zygote_entry - husk_sc_code_start);
	sc_code.handler = sc_code.page + (uint64_t)(husk_sc_handler - husk_sc_code_start);
	sc_code.restorer = sc_code.page + (uint64_t)(husk_sc_restorer - husk_sc_code_start);
	sc_code.park = sc_code.page + (uint64_t)(husk_sc_park - husk_sc_code_start);
	sc_code.tramp = sc_code.page + (uint64_t)(husk_sc_tramp - husk_sc_code_start);
	sc_code.fprog_zygote = sc_code.page + SC_FPROG_ZYGOTE_OFF;
	sc_code.fprog_guest = sc_code.page + SC_FPROG_GUEST_OFF;

	/* The scratch page as the zygote starts with it: the fork reply's msghdr, the sigaction. */
	scratch = page + SC_SCRATCH_OFF;
	{
		struct msghdr *msg = (struct msghdr *)(scratch + SC_S_MSG);
		struct iovec *iov = (struct iovec *)(scratch + SC_S_IOV);
		struct cmsghdr *cm = (struct cmsghdr *)(scratch + SC_S_CMSG);
		struct sc_kernel_sigaction *sa =
			(struct sc_kernel_sigaction *)(scratch + SC_S_SIGACT);

		_Static_assert(SC_S_IOV >= SC_S_MSG + sizeof(struct msghdr), "msghdr overlaps");
		_Static_assert(SC_S_CMSG + CMSG_SPACE(sizeof(int)) <= SC_S_SIGACT, "cmsg overlaps");
		iov->iov_base = scratch + SC_S_PID;
		iov->iov_len = 8;
		msg->msg_iov = iov;
		msg->msg_iovlen = 1;
		msg->msg_control = cm;
		msg->msg_controllen = CMSG_SPACE(sizeof(int));
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		sa->handler = sc_code.handler;
		sa->flags = SA_SIGINFO | SA_ONSTACK | SC_SA_RESTORER;
		sa->restorer = sc_code.restorer;
		sa->mask = ~0ULL;
	}
	/* The sentry never runs this code: read-only here (the zygote makes it executable). */
	if (mprotect(page, PAGE_SIZE, PROT_READ) < 0) {
		sc_code_err = -errno;
		munmap(page, 2 * PAGE_SIZE);
		return;
	}
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, page, 2 * PAGE_SIZE, "husk-sc-stub");
}

const struct sc_code *sc_code_get(int *err)
{
	pthread_once(&sc_code_once, sc_code_init);
	if (sc_code_err) {
		*err = sc_code_err;
		return NULL;
	}
	return &sc_code;
}

/*
 * The zygote's C prelude, on a copy of the caller's memory right after a fork: raw system calls
 * only (no locks, no malloc). On failure it exits with the errno as its status.
 */
static __attribute__((noreturn, noinline)) void sc_zygote_child(const struct sc_code *code,
								int memfd, int imagefd, int sock)
{
	const struct sc_kernel_sigaction *sa =
		(const struct sc_kernel_sigaction *)(code->page + SC_SCRATCH_OFF + SC_S_SIGACT);
	uint64_t all = ~0ULL;

	if (stub_child_prelude() < 0)
		goto fail;
	/*
	 * A process group of its own, which the stubs it forks inherit: out of the terminal's
	 * foreground group (husk do on a terminal), so that ^C, ^Z and window size changes reach
	 * the sentry alone, which passes them to the guest's foreground group, and never stop or
	 * interrupt a stub's host process.
	 */
	if (syscall(SYS_setpgid, 0, 0) < 0)
		goto fail;
	/* The zygote and controllers block every signal; a guest thread unblocks them all. */
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all)) < 0)
		goto fail;
	for (int sig = 1; sig <= 64; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP &&
		    syscall(SYS_rt_sigaction, sig, sa, NULL, sizeof(sa->mask)) < 0)
			goto fail;
	}
	if (stub_child_forget_rseq() < 0)
		goto fail;
	/*
	 * memfd, sock and imagefd to their fixed numbers, whatever they were: copies above them
	 * first, so that no dup2 closes one still to be moved.
	 */
	bool image = imagefd >= 0;

	memfd = (int)syscall(SYS_fcntl, memfd, F_DUPFD, 10);
	sock = (int)syscall(SYS_fcntl, sock, F_DUPFD, 10);
	if (image)
		imagefd = (int)syscall(SYS_fcntl, imagefd, F_DUPFD, 10);
	if (memfd < 0 || sock < 0 || (image && imagefd < 0))
		goto fail;
	if (syscall(SYS_dup2, sock, SC_STUB_SOCK) < 0 ||
	    syscall(SYS_dup2, memfd, SC_STUB_MEMFD) < 0 ||
	    (image && syscall(SYS_dup2, imagefd, SC_STUB_IMAGEFD) < 0))
		goto fail;
	if (syscall(SYS_close_range, 0, SC_STUB_MEMFD - 1, 0) < 0 ||
	    syscall(SYS_close_range, image ? SC_STUB_IMAGEFD + 1 : SC_STUB_SOCK + 1, ~0U, 0) < 0 ||
	    stub_child_name() < 0)
		goto fail;
	stub_child_enter(code->page, code->zygote_entry);
fail:
	stub_child_fail();
}

pid_t sc_zygote_spawn(const struct sc_code *code, int memfd, int imagefd, int sock)
{
	/* A plain fork without exit signal: only the platform waits for it (with __WALL). */
	long pid = syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);

	if (pid < 0)
		return -errno;
	if (pid == 0)
		sc_zygote_child(code, memfd, imagefd, sock);
	return (pid_t)pid;
}

bool seccomp_platform_available(void)
{
	static int avail = -1;
	int a = __atomic_load_n(&avail, __ATOMIC_RELAXED);

	if (a < 0) {
		/* HWCAP2_FSGSBASE: the handler saves and restores fs/gs bases without calls. */
		a = (getauxval(AT_HWCAP2) & 2) != 0;
		/* The kernel must have seccomp filters (PR_GET_SECCOMP answers). */
		if (a && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
			a = 0;
		__atomic_store_n(&avail, a, __ATOMIC_RELAXED);
	}
	return a;
}
