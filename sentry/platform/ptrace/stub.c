/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stub: one host process per guest address space, forked from the sentry thread that will
 * trace it. Right after the fork the child (still running sentry code on a copy of the sentry's
 * memory) drops what it inherited: signal handlers and mask, rseq, every FD but the memory file;
 * it asks to be traced and jumps to the code page. The code page unmaps everything else,
 * installs the stub's seccomp filter and traps into its first ptrace stop. From then on the
 * stub executes guest code under PTRACE_SYSEMU, or `syscall; int3` at the tracer's request.
 *
 * Code page layout (PAGE_SIZE bytes, read+execute in the stub, read-only in the sentry):
 *   0x000  set-up code (stub_setup below), then the `syscall; int3` gadget
 *   0x800  struct sock_fprog for the seccomp filter
 *   0x810  the filter (struct sock_filter[])
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "sentry/platform/ptrace/ptrace.h"
#include "sentry/platform/ptrace/stub.h"
#include "sentry/platform/stubchild.h"

#define STUB_FPROG_OFF 0x800
#define STUB_FILTER_OFF 0x810
/* The filter a stub forked from the template adds (ptrace_stub_child_filter). */
#define STUB_CHILD_FPROG_OFF 0xc00
#define STUB_CHILD_FILTER_OFF 0xc10
/* A word that stays 0: a new stub thread waits on it (FUTEX_WAIT_PRIVATE) until adopted. */
#define STUB_PARK_WORD_OFF 0xff8
#define STUB_FUTEX_WAIT_PRIVATE 128 /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * The code the stub runs from its code page. Position independent: it finds the page with a
 * rip-relative lea, needs no stack and no data but the page. %r12 holds the set-up step being
 * tried; it is 0 at the final int3 when every step succeeded, else the failed step's number with
 * the error in %rax (the tracer reads both at the stop).
 *   1: munmap [0, page)
 *   2: munmap [page + 4096, top of user space): 2^56 - 4096 with 5-level paging, else 2^47 - 4096
 *   3: seccomp(SECCOMP_SET_MODE_FILTER, 0, &fprog)
 * The vsyscall page lies above user space and cannot be unmapped; it stays (harmless).
 */
/* One instruction per line, as written: */
/* clang-format off */
__asm__(".pushsection .rodata.husk_stub, \"a\"\n"
	".balign 64\n"
	"husk_stub_code_start:\n"
	"	lea husk_stub_code_start(%rip), %rbx\n"
	"	mov $1, %r12d\n"
	"	mov $" STR(__NR_munmap) ", %eax\n"
	"	xor %edi, %edi\n"
	"	mov %rbx, %rsi\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 9f\n"
	"	mov $2, %r12d\n"
	"	lea 4096(%rbx), %rdi\n"
	"	movabs $0x00fffffffffff000, %rsi\n"
	"	sub %rdi, %rsi\n"
	"	mov $" STR(__NR_munmap) ", %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	lea 4096(%rbx), %rdi\n"
	"	movabs $0x00007ffffffff000, %rsi\n"
	"	sub %rdi, %rsi\n"
	"	mov $" STR(__NR_munmap) ", %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 9f\n"
	"1:	mov $3, %r12d\n"
	"	mov $" STR(__NR_seccomp) ", %eax\n"
	"	mov $" STR(SECCOMP_SET_MODE_FILTER) ", %edi\n"
	"	xor %esi, %esi\n"
	"	lea " STR(STUB_FPROG_OFF) "(%rbx), %rdx\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 9f\n"
	"	xor %r12d, %r12d\n"
	"9:	int3\n"
	"husk_stub_setup_done:\n"
	"	ud2\n"
	"husk_stub_gadget:\n"
	"	syscall\n"
	"	int3\n"
	"husk_stub_gadget_done:\n"
	"	ud2\n"
	/* clone of a stub thread: the parent traps back, the child parks in futex_wait */
	"husk_stub_clone:\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 2f\n"
	"	int3\n"
	"husk_stub_clone_done:\n"
	"	ud2\n"
	"2:	lea husk_stub_code_start(%rip), %rdi\n"
	"	add $" STR(STUB_PARK_WORD_OFF) ", %rdi\n"
	"	mov $" STR(STUB_FUTEX_WAIT_PRIVATE) ", %esi\n"
	"	xor %edx, %edx\n"
	"	xor %r10d, %r10d\n"
	"	mov $" STR(__NR_futex) ", %eax\n"
	"	syscall\n"
	"	jmp 2b\n"
	/*
	 * fork of the template (clone STUB_FORK_FLAGS): the template traps back with the pid; the
	 * child, traced by the template's tracer, sets its parent-death signal, stacks the child
	 * filter, traps (r12: 0, or the failed step 1/2 with the error in rax) and, once detached,
	 * parks like a new thread until the thread that will drive it seizes it.
	 */
	"husk_stub_fork:\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 4f\n"
	"	int3\n"
	"husk_stub_fork_done:\n"
	"	ud2\n"
	"4:	mov $1, %r12d\n"
	"	mov $" STR(__NR_prctl) ", %eax\n"
	"	mov $" STR(PR_SET_PDEATHSIG) ", %edi\n"
	"	mov $9, %esi\n" /* SIGKILL */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 5f\n"
	"	mov $2, %r12d\n"
	"	mov $" STR(__NR_seccomp) ", %eax\n"
	"	mov $" STR(SECCOMP_SET_MODE_FILTER) ", %edi\n"
	"	xor %esi, %esi\n"
	"	lea husk_stub_code_start(%rip), %rdx\n"
	"	add $" STR(STUB_CHILD_FPROG_OFF) ", %rdx\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 5f\n"
	"	xor %r12d, %r12d\n"
	"5:	int3\n"
	"husk_stub_forked_done:\n"
	"	jmp 2b\n"
	"husk_stub_code_end:\n"
	".popsection\n");
/* clang-format on */

extern const char husk_stub_code_start[], husk_stub_setup_done[], husk_stub_gadget[],
	husk_stub_gadget_done[], husk_stub_clone[], husk_stub_clone_done[], husk_stub_fork[],
	husk_stub_fork_done[], husk_stub_forked_done[], husk_stub_code_end[];

size_t ptrace_stub_filter(uint64_t code_page, struct sock_filter *out)
{
	static const uint32_t allowed[] = { __NR_mmap, __NR_mprotect, __NR_munmap, __NR_exit,
					    __NR_exit_group };
	const uint8_t nallowed = ARRAY_SIZE(allowed);
	size_t n = 0;

	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, arch));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	/* The instruction pointer (after the `syscall`) must be inside the code page. */
	out[n++] = (struct sock_filter)BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						(uint32_t)(code_page >> 32), 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, instruction_pointer));
	out[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (uint32_t)PAGE_MASK);
	out[n++] =
		(struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)code_page, 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	/* Only the numbers the stub needs; x32 numbers (bit 30 set) match none of them. */
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, nr));
	/*
	 * Layout: jumps to ALLOW; jumps to the futex, clone, prctl and seccomp checks; KILL; ALLOW;
	 * the checks (4, 7, 7 and 6 instructions).
	 */
	for (uint8_t i = 0; i < nallowed; i++)
		out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i],
							(uint8_t)(nallowed - i + 4), 0);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_futex, 5, 0);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 8, 0);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 14, 0);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 20, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	/* futex: only FUTEX_WAIT_PRIVATE (a new thread or stub parked until its tracer takes it). */
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[1]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, STUB_FUTEX_WAIT_PRIVATE,
						0, 1);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	/* clone: exactly the flags of ctx_clone (a thread) or of the template's fork. */
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[0]) + 4);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[0]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, STUB_CLONE_FLAGS, 2, 0);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, STUB_FORK_FLAGS, 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	/* prctl: only PR_SET_PDEATHSIG 0 (a stub forked from the sentry) or SIGKILL (a forked one). */
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[0]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_PDEATHSIG, 0, 3);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[1]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGKILL, 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	/* seccomp: only SECCOMP_SET_MODE_FILTER without flags (a stub stacking the child filter). */
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[0]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER,
						0, 2);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[1]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return n;
}

size_t ptrace_stub_child_filter(struct sock_filter *out)
{
	size_t n = 0;

	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, nr));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 2);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						offsetof(struct seccomp_data, args[0]));
	out[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, STUB_FORK_FLAGS, 1, 0);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	out[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	return n;
}

static struct stub_code stub_code;
static int stub_code_err;
static pthread_once_t stub_code_once = PTHREAD_ONCE_INIT;

static void stub_code_init(void)
{
	size_t code_len = (size_t)(husk_stub_code_end - husk_stub_code_start);
	struct sock_filter filter[PTRACE_STUB_FILTER_MAX];
	struct sock_fprog fprog;
	char *page;
	size_t n;

	_Static_assert(STUB_FILTER_OFF + PTRACE_STUB_FILTER_MAX * sizeof(struct sock_filter) <=
			       STUB_CHILD_FPROG_OFF,
		       "the filters overlap");
	_Static_assert(STUB_CHILD_FILTER_OFF +
				       PTRACE_STUB_CHILD_FILTER_LEN * sizeof(struct sock_filter) <=
			       STUB_PARK_WORD_OFF,
		       "the child filter overlaps the park word");
	if (code_len > STUB_FPROG_OFF) {
		stub_code_err = -E2BIG;
		return;
	}
	page = platform_reserve_fixed(PTRACE_STUB_ADDR, PTRACE_STUB_ADDR_STEP,
				      PTRACE_STUB_ADDR_LIMIT, PAGE_SIZE);
	if (page == MAP_FAILED) {
		stub_code_err = -errno;
		log_error("ptrace: cannot reserve the stub code page above %#llx: %s",
			  (unsigned long long)PTRACE_STUB_ADDR, strerror(errno));
		return;
	}
	n = ptrace_stub_filter((uint64_t)page, filter);
	memcpy(page, husk_stub_code_start, code_len);
	fprog.len = (unsigned short)n;
	fprog.filter = (struct sock_filter *)(page + STUB_FILTER_OFF);
	memcpy(page + STUB_FPROG_OFF, &fprog, sizeof(fprog));
	memcpy(page + STUB_FILTER_OFF, filter, n * sizeof(filter[0]));
	n = ptrace_stub_child_filter(filter);
	fprog.len = (unsigned short)n;
	fprog.filter = (struct sock_filter *)(page + STUB_CHILD_FILTER_OFF);
	memcpy(page + STUB_CHILD_FPROG_OFF, &fprog, sizeof(fprog));
	memcpy(page + STUB_CHILD_FILTER_OFF, filter, n * sizeof(filter[0]));
	/* The sentry never runs this code: read-only here, the child makes it executable. */
	if (mprotect(page, PAGE_SIZE, PROT_READ) < 0) {
		stub_code_err = -errno;
		munmap(page, PAGE_SIZE);
		return;
	}
	/* A name in /proc/PID/maps; only a convenience, so failure (no CONFIG_ANON_VMA_NAME) is fine. */
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, page, PAGE_SIZE, "husk-stub-code");

	stub_code.page = (uint64_t)page;
	stub_code.gadget = stub_code.page + (uint64_t)(husk_stub_gadget - husk_stub_code_start);
	stub_code.gadget_done =
		stub_code.page + (uint64_t)(husk_stub_gadget_done - husk_stub_code_start);
	stub_code.setup_done =
		stub_code.page + (uint64_t)(husk_stub_setup_done - husk_stub_code_start);
	stub_code.clone = stub_code.page + (uint64_t)(husk_stub_clone - husk_stub_code_start);
	stub_code.clone_done =
		stub_code.page + (uint64_t)(husk_stub_clone_done - husk_stub_code_start);
	stub_code.fork = stub_code.page + (uint64_t)(husk_stub_fork - husk_stub_code_start);
	stub_code.fork_done =
		stub_code.page + (uint64_t)(husk_stub_fork_done - husk_stub_code_start);
	stub_code.forked_done =
		stub_code.page + (uint64_t)(husk_stub_forked_done - husk_stub_code_start);
}

const struct stub_code *stub_code_get(int *err)
{
	pthread_once(&stub_code_once, stub_code_init);
	if (stub_code_err) {
		*err = stub_code_err;
		return NULL;
	}
	return &stub_code;
}

uint64_t ptrace_stub_code_page(void)
{
	return __atomic_load_n(&stub_code.page, __ATOMIC_ACQUIRE);
}

/* struct sigaction as rt_sigaction(2) takes it. */
struct stub_kernel_sigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	uint64_t mask;
};

/*
 * The child side of stub_spawn(). It runs on a copy of the sentry's memory right after the
 * fork of a multi-threaded process, so it makes raw system calls only (no locks, no malloc).
 * Every step is checked; on failure the child exits with the errno as its status.
 */
static __attribute__((noreturn, noinline)) void stub_child(const struct stub_code *code, int memfd,
							   int imagefd, bool probe)
{
	struct stub_kernel_sigaction dfl = { .handler = (unsigned long)SIG_DFL };
	uint64_t nomask = 0;

	if (probe) {
		/*
		 * Does the sentry's seccomp filter, which this child inherited, allow
		 * sched_setaffinity? If not, the child dies here with SIGSYS and the parent knows.
		 * Setting the mask it already has changes nothing; errors are not the question.
		 */
		cpu_set_t set;
		long n = syscall(SYS_sched_getaffinity, 0, sizeof(set), &set);

		if (n > 0)
			syscall(SYS_sched_setaffinity, 0, (size_t)n, &set);
	}
	/* Die with the tracer thread, even before PTRACE_O_EXITKILL is set. */
	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		goto fail;
	if (stub_child_prelude() < 0)
		goto fail;
	/* Out of the terminal's foreground group (husk do on a terminal): its signals are the
	 * sentry's to pass on to the guest; stubs forked from this one stay out too. */
	if (syscall(SYS_setpgid, 0, 0) < 0)
		goto fail;
	/* The sentry's handlers point into memory about to be unmapped; the mask could hide
	 * the interrupt signal. */
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &nomask, NULL, sizeof(nomask)) < 0)
		goto fail;
	for (int sig = 1; sig <= 64; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
	}
	if (stub_child_forget_rseq() < 0)
		goto fail;
	if (syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0) < 0)
		goto fail;
	/* memfd and imagefd to their fixed numbers: copies above them first (no dup2 closes
	 * one still to be moved). */
	bool image = imagefd >= 0;

	memfd = (int)syscall(SYS_fcntl, memfd, F_DUPFD, 10);
	if (image)
		imagefd = (int)syscall(SYS_fcntl, imagefd, F_DUPFD, 10);
	if (memfd < 0 || (image && imagefd < 0))
		goto fail;
	if (syscall(SYS_dup2, memfd, PTRACE_STUB_MEMFD) < 0 ||
	    (image && syscall(SYS_dup2, imagefd, PTRACE_STUB_IMAGEFD) < 0))
		goto fail;
	if (syscall(SYS_close_range, 0, PTRACE_STUB_MEMFD - 1, 0) < 0 ||
	    syscall(SYS_close_range, image ? PTRACE_STUB_IMAGEFD + 1 : PTRACE_STUB_MEMFD + 1, ~0U,
		    0) < 0 ||
	    stub_child_name() < 0)
		goto fail;
	stub_child_enter(code->page, code->page);
fail:
	stub_child_fail();
}

int stub_wait(pid_t pid, int *status)
{
	while (waitpid(pid, status, __WALL) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

void stub_kill_and_reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	for (;;) {
		if (stub_wait(pid, &status) < 0)
			return;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return;
	}
}

static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGSYS;
}

/* One attempt of stub_spawn(); *sigsys is set if the child died of SIGSYS during set-up. */
static int stub_spawn_once(const struct stub_code *code, int memfd, int imagefd, bool probe,
			   pid_t *pid_out, arch_regs_t *regs, bool *sigsys)
{
	static const char *const steps[] = { "unmapping below the code page",
					     "unmapping above the code page",
					     "installing the seccomp filter" };
	int status, ret;
	long pid;

	/* A plain fork (no exit signal: only this code waits for it, with __WALL). */
	pid = syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
	if (pid < 0)
		return -errno;
	if (pid == 0)
		stub_child(code, memfd, imagefd, probe);

	for (;;) {
		ret = stub_wait((pid_t)pid, &status);
		if (ret < 0) {
			stub_kill_and_reap((pid_t)pid);
			return ret;
		}
		if (WIFEXITED(status)) {
			ret = WEXITSTATUS(status) ? -WEXITSTATUS(status) : -EIO;
			log_error("ptrace: the stub failed to set itself up: %s", strerror(-ret));
			return ret;
		}
		if (WIFSIGNALED(status)) {
			*sigsys = WTERMSIG(status) == SIGSYS;
			if (!(probe && *sigsys))
				log_error("ptrace: the stub died during set-up (signal %d)",
					  WTERMSIG(status));
			return -EIO;
		}
		if (WSTOPSIG(status) == SIGTRAP)
			break;
		if (is_fault_signal(WSTOPSIG(status))) {
			log_error("ptrace: the stub faulted during set-up (signal %d)",
				  WSTOPSIG(status));
			stub_kill_and_reap((pid_t)pid);
			return -EIO;
		}
		/* Anything else someone sent it: suppress. */
		if (ptrace(PTRACE_CONT, (pid_t)pid, 0, 0) < 0) {
			ret = -errno;
			stub_kill_and_reap((pid_t)pid);
			return ret;
		}
	}

	if (ptrace(PTRACE_SETOPTIONS, (pid_t)pid, 0, PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD) <
		    0 ||
	    ptrace(PTRACE_GETREGS, (pid_t)pid, 0, regs) < 0) {
		ret = -errno;
		stub_kill_and_reap((pid_t)pid);
		return ret;
	}
	if (regs->rip != code->setup_done || regs->r12 != 0) {
		long err = (long)regs->rax;

		ret = err < 0 && err >= -4095 ? (int)err : -EIO;
		if (regs->rip == code->setup_done && regs->r12 >= 1 && regs->r12 <= 3)
			log_error("ptrace: stub set-up failed %s: %s", steps[regs->r12 - 1],
				  strerror(-ret));
		else
			log_error("ptrace: stub stopped at %#llx during set-up", regs->rip);
		stub_kill_and_reap((pid_t)pid);
		return ret;
	}
	*pid_out = (pid_t)pid;
	return 0;
}

/* -1: not known yet; 0: the sentry's filter forbids sched_setaffinity; 1: it allows it. */
static int cpu_binding = -1;

bool stub_cpu_binding(void)
{
	return __atomic_load_n(&cpu_binding, __ATOMIC_RELAXED) == 1;
}

int stub_spawn(const struct stub_code *code, int memfd, int imagefd, pid_t *pid_out,
	       arch_regs_t *regs)
{
	bool probe = __atomic_load_n(&cpu_binding, __ATOMIC_RELAXED) < 0;
	bool sigsys = false;
	int ret;

	ret = stub_spawn_once(code, memfd, imagefd, probe, pid_out, regs, &sigsys);
	if (!probe)
		return ret;
	if (ret < 0 && sigsys) {
		log_info(
			"ptrace: the sentry's seccomp filter forbids sched_setaffinity; stubs will "
			"not follow their tracer's CPU (slower system calls)");
		__atomic_store_n(&cpu_binding, 0, __ATOMIC_RELAXED);
		sigsys = false;
		return stub_spawn_once(code, memfd, imagefd, false, pid_out, regs, &sigsys);
	}
	if (ret == 0)
		__atomic_store_n(&cpu_binding, 1, __ATOMIC_RELAXED);
	return ret;
}
