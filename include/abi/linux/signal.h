/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signal numbers, siginfo and the x86-64 signal frame (struct rt_sigframe with its ucontext,
 * sigcontext and XSAVE area) as Linux 6.x writes them on a guest's stack.
 */
#ifndef HUSK_ABI_LINUX_SIGNAL_H
#define HUSK_ABI_LINUX_SIGNAL_H

#include <stddef.h>
#include <stdint.h>

#define LINUX_SIGHUP 1
#define LINUX_SIGINT 2
#define LINUX_SIGQUIT 3
#define LINUX_SIGILL 4
#define LINUX_SIGTRAP 5
#define LINUX_SIGABRT 6
#define LINUX_SIGBUS 7
#define LINUX_SIGFPE 8
#define LINUX_SIGKILL 9
#define LINUX_SIGUSR1 10
#define LINUX_SIGSEGV 11
#define LINUX_SIGUSR2 12
#define LINUX_SIGPIPE 13
#define LINUX_SIGALRM 14
#define LINUX_SIGTERM 15
#define LINUX_SIGSTKFLT 16
#define LINUX_SIGCHLD 17
#define LINUX_SIGCONT 18
#define LINUX_SIGSTOP 19
#define LINUX_SIGTSTP 20
#define LINUX_SIGTTIN 21
#define LINUX_SIGTTOU 22
#define LINUX_SIGURG 23
#define LINUX_SIGXCPU 24
#define LINUX_SIGXFSZ 25
#define LINUX_SIGVTALRM 26
#define LINUX_SIGPROF 27
#define LINUX_SIGWINCH 28
#define LINUX_SIGIO 29
#define LINUX_SIGPWR 30
#define LINUX_SIGSYS 31
#define LINUX_SIGRTMIN 32
#define LINUX_SIGRTMAX 64

#define LINUX_SIG_DFL 0ULL
#define LINUX_SIG_IGN 1ULL

/* sa_flags (x86-64). */
#define LINUX_SA_NOCLDSTOP 0x00000001ULL
#define LINUX_SA_NOCLDWAIT 0x00000002ULL
#define LINUX_SA_SIGINFO 0x00000004ULL
#define LINUX_SA_EXPOSE_TAGBITS 0x00000800ULL
#define LINUX_SA_RESTORER 0x04000000ULL
#define LINUX_SA_ONSTACK 0x08000000ULL
#define LINUX_SA_RESTART 0x10000000ULL
#define LINUX_SA_NODEFER 0x40000000ULL
#define LINUX_SA_RESETHAND 0x80000000ULL

/* rt_sigprocmask how. */
#define LINUX_SIG_BLOCK 0
#define LINUX_SIG_UNBLOCK 1
#define LINUX_SIG_SETMASK 2

/* sigaltstack flags. */
#define LINUX_SS_ONSTACK 1
#define LINUX_SS_DISABLE 2
#define LINUX_SS_AUTODISARM (1U << 31)
#define LINUX_MINSIGSTKSZ 2048

/* si_code values. */
#define LINUX_SI_USER 0
#define LINUX_SI_KERNEL 0x80
#define LINUX_SI_QUEUE (-1)
#define LINUX_SI_TIMER (-2)
#define LINUX_SI_MESGQ (-3)
#define LINUX_SI_ASYNCIO (-4)
#define LINUX_SI_SIGIO (-5)
#define LINUX_SI_TKILL (-6)

#define LINUX_SEGV_MAPERR 1
#define LINUX_SEGV_ACCERR 2
#define LINUX_BUS_ADRALN 1
#define LINUX_BUS_ADRERR 2
#define LINUX_FPE_INTDIV 1
#define LINUX_ILL_ILLOPN 2
#define LINUX_TRAP_BRKPT 1

#define LINUX_CLD_EXITED 1
#define LINUX_CLD_KILLED 2
#define LINUX_CLD_DUMPED 3
#define LINUX_CLD_TRAPPED 4
#define LINUX_CLD_STOPPED 5
#define LINUX_CLD_CONTINUED 6

/* siginfo_t of x86-64: 128 bytes; the union starts at offset 16. */
struct linux_siginfo {
	int32_t si_signo;
	int32_t si_errno;
	int32_t si_code;
	int32_t __pad0;
	union {
		uint8_t __bytes[112];
		struct { /* SI_USER, SI_TKILL, SI_QUEUE (rt) */
			int32_t pid;
			uint32_t uid;
			uint64_t value; /* sigval: int or pointer */
		} kill;
		struct { /* SI_TIMER */
			int32_t tid;
			int32_t overrun;
			uint64_t value;
			int32_t sys_private;
		} timer;
		struct { /* SIGCHLD */
			int32_t pid;
			uint32_t uid;
			int32_t status;
			int32_t __pad1;
			int64_t utime;
			int64_t stime;
		} chld;
		struct { /* SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP */
			uint64_t addr;
			int16_t addr_lsb;
		} fault;
		struct { /* SIGPOLL */
			int64_t band;
			int32_t fd;
		} poll;
		struct { /* SIGSYS */
			uint64_t call_addr;
			int32_t syscall;
			uint32_t arch;
		} sys;
	};
};
_Static_assert(sizeof(struct linux_siginfo) == 128, "x86-64 siginfo_t is 128 bytes");
_Static_assert(offsetof(struct linux_siginfo, kill.pid) == 16, "si_pid at 16");
_Static_assert(offsetof(struct linux_siginfo, kill.uid) == 20, "si_uid at 20");
_Static_assert(offsetof(struct linux_siginfo, kill.value) == 24, "si_value at 24");
_Static_assert(offsetof(struct linux_siginfo, chld.status) == 24, "si_status at 24");
_Static_assert(offsetof(struct linux_siginfo, chld.utime) == 32, "si_utime at 32");
_Static_assert(offsetof(struct linux_siginfo, chld.stime) == 40, "si_stime at 40");
_Static_assert(offsetof(struct linux_siginfo, fault.addr) == 16, "si_addr at 16");
_Static_assert(offsetof(struct linux_siginfo, timer.overrun) == 20, "si_overrun at 20");
_Static_assert(offsetof(struct linux_siginfo, poll.fd) == 24, "si_fd at 24");
_Static_assert(offsetof(struct linux_siginfo, sys.arch) == 28, "si_arch at 28");

/* stack_t of x86-64. */
struct linux_stack {
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t __pad;
	uint64_t ss_size;
};
_Static_assert(sizeof(struct linux_stack) == 24, "x86-64 stack_t is 24 bytes");

/* struct sigcontext (64-bit): the registers the handler sees and rt_sigreturn restores. */
struct linux_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp;
	uint64_t rip;
	uint64_t eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err;
	uint64_t trapno;
	uint64_t oldmask;
	uint64_t cr2;
	uint64_t fpstate; /* guest address of the XSAVE area, or 0 */
	uint64_t reserved1[8];
};
_Static_assert(sizeof(struct linux_sigcontext) == 256, "x86-64 sigcontext is 256 bytes");
_Static_assert(offsetof(struct linux_sigcontext, rip) == 128, "sc.rip at 128");
_Static_assert(offsetof(struct linux_sigcontext, cs) == 144, "sc.cs at 144");
_Static_assert(offsetof(struct linux_sigcontext, err) == 152, "sc.err at 152");
_Static_assert(offsetof(struct linux_sigcontext, cr2) == 176, "sc.cr2 at 176");
_Static_assert(offsetof(struct linux_sigcontext, fpstate) == 184, "sc.fpstate at 184");

/* uc_flags. */
#define LINUX_UC_FP_XSTATE 0x1
#define LINUX_UC_SIGCONTEXT_SS 0x2
#define LINUX_UC_STRICT_RESTORE_SS 0x4

/* The kernel's struct ucontext (glibc's ucontext_t is a superset with the same prefix). */
struct linux_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct linux_stack uc_stack;
	struct linux_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};
_Static_assert(sizeof(struct linux_ucontext) == 304, "x86-64 struct ucontext is 304 bytes");
_Static_assert(offsetof(struct linux_ucontext, uc_stack) == 16, "uc_stack at 16");
_Static_assert(offsetof(struct linux_ucontext, uc_mcontext) == 40, "uc_mcontext at 40");
_Static_assert(offsetof(struct linux_ucontext, uc_sigmask) == 296, "uc_sigmask at 296");

/*
 * struct rt_sigframe: what rsp points at when a handler starts. pretcode is the return address
 * (sa_restorer); rt_sigreturn finds the frame at rsp - 8 after the handler's `ret`.
 */
struct linux_rt_sigframe {
	uint64_t pretcode;
	struct linux_ucontext uc;
	struct linux_siginfo info;
};
_Static_assert(sizeof(struct linux_rt_sigframe) == 440, "x86-64 rt_sigframe is 440 bytes");
_Static_assert(offsetof(struct linux_rt_sigframe, uc) == 8, "frame uc at 8");
_Static_assert(offsetof(struct linux_rt_sigframe, info) == 312, "frame info at 312");

/*
 * The XSAVE area as written in a signal frame: the 512-byte FXSAVE legacy area whose last 48
 * bytes (sw_reserved) hold struct linux_fpx_sw_bytes, the 64-byte XSAVE header, the extended
 * components, then FP_XSTATE_MAGIC2 right after xstate_size bytes.
 */
#define LINUX_FP_XSTATE_MAGIC1 0x46505853U
#define LINUX_FP_XSTATE_MAGIC2 0x46505845U
#define LINUX_FP_XSTATE_MAGIC2_SIZE 4
#define LINUX_FXSAVE_SIZE 512
#define LINUX_XSAVE_HDR_OFFSET 512
#define LINUX_XSAVE_HDR_SIZE 64
#define LINUX_FXSAVE_SW_OFFSET 464
#define LINUX_FXSAVE_MXCSR_OFFSET 24
#define LINUX_XFEATURE_MASK_FPSSE 0x3ULL

struct linux_fpx_sw_bytes {
	uint32_t magic1;
	uint32_t extended_size; /* xstate_size + FP_XSTATE_MAGIC2_SIZE */
	uint64_t xfeatures;
	uint32_t xstate_size;
	uint32_t padding[7];
};
_Static_assert(sizeof(struct linux_fpx_sw_bytes) == 48, "fpx_sw_bytes is 48 bytes");
_Static_assert(LINUX_FXSAVE_SW_OFFSET + sizeof(struct linux_fpx_sw_bytes) == LINUX_FXSAVE_SIZE,
	       "sw_reserved ends the FXSAVE area");

/* The XSAVE header that follows the legacy area. */
struct linux_xsave_header {
	uint64_t xfeatures;
	uint64_t xcomp_bv;
	uint64_t reserved[6];
};
_Static_assert(sizeof(struct linux_xsave_header) == LINUX_XSAVE_HDR_SIZE, "xsave header");

#endif
