/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp platform, internal interface. The sentry reaches it only through
 * platform_create("seccomp", ...); the declarations here are for platform.c, the sentry's
 * start-up and the unit tests. See README.md in this folder for the model.
 *
 * Guest threads run in stub processes whose seccomp filter turns every guest system call into a
 * SIGSYS (SECCOMP_RET_TRAP). The stub's signal handler, on a per-thread alternate stack in a
 * page range shared with the sentry (the thread's *area*), publishes the event and waits on a
 * futex until the sentry has written the guest's new registers into the signal frame; its
 * rt_sigreturn then resumes the guest. Faults take the same road. Mapping changes and new threads
 * are made by the stub's *controller* thread on the sentry's request (a socket). No ptrace.
 */
#ifndef HUSK_SENTRY_PLATFORM_SECCOMP_H
#define HUSK_SENTRY_PLATFORM_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sentry/platform/platform.h"

/* FDs inside every stub: the memory file and the socket to the sentry (nothing else). */
#define SC_STUB_MEMFD 3
#define SC_STUB_SOCK 4
#define SC_STUB_IMAGEFD 5 /* a restore's pages file (struct platform's imagefd), if any */

/*
 * Stub address layout (everything above PLATFORM_GUEST_MAX). The code page and the scratch page
 * after it exist at the same address in the sentry (they are reserved there, see stub.c) and in
 * every stub; the rest exists only in stubs.
 *   code        the stub's code and filters (read+execute in stubs, read-only in the sentry)
 *   code + 4K   scratch: the zygote's and controller's buffers (private, read+write)
 *   code + 64K  the command page (memory file, read-only in the stub; the sentry writes it)
 *   code + 1M   thread areas, SC_AREA_SIZE each, aligned to their size
 */
#define SC_CODE_ADDR (PLATFORM_GUEST_MAX + 0x40000000ULL)
#define SC_CODE_ADDR_STEP 0x10000000ULL
#define SC_CODE_ADDR_LIMIT 0x7fff00000000ULL
#define SC_SCRATCH_OFF 0x1000
#define SC_CMD_OFF 0x10000
#define SC_AREAS_OFF 0x100000
#define SC_AREA_SIZE 0x8000
#define SC_MAX_THREADS 4096

/* Numbers used in the stub's assembly are written without suffixes. */

/* Thread area header (the first page of an area; the rest is the alternate signal stack). */
#define SC_A_STATE 0 /* u32 futex: SC_ST_* */
#define SC_A_SENTRY_SLEEPS 4 /* u32: the sentry waits in futex_wait on state */
#define SC_A_STUB_SLEEPS 8 /* u32: the stub thread waits in futex_wait on state */
#define SC_A_CTID 12 /* u32: CLONE_CHILD_CLEARTID word (the thread's tid until it exits) */
#define SC_A_FSBASE 16 /* u64: guest fs_base (rdfsbase at a stop, wrfsbase at a resume) */
#define SC_A_GSBASE 24 /* u64: guest gs_base */
#define SC_A_SIGNO 32 /* u64: the handler's arguments at the last stop */
#define SC_A_INFO 40 /* u64: siginfo_t * (stub address, on the alternate stack) */
#define SC_A_UC 48 /* u64: ucontext_t * (stub address, on the alternate stack) */
#define SC_A_SPIN 56 /* u32: iterations the stub spins before sleeping */
#define SC_A_STACK 64 /* stack_t for sigaltstack (24 bytes) */
#define SC_A_KIND 88 /* u32: how the thread stopped: SC_KIND_* */
#define SC_A_FPDIRTY 92 /* u32: sentry -> stub: xrstor the trampoline frame's FP state */
#define SC_A_TRSP 96 /* u64: the trampoline's stack top, swapped with the guest's rsp on entry */
#define SC_A_TSTACK 104 /* u64: the trampoline's stack top (SC_AREA_SIZE - 64 into the area) */
#define SC_A_INTR 112 /* u32: the interrupt signal came while the thread was in the trampoline */
#define SC_A_END 116

#define SC_KIND_SIGNAL 0 /* a signal: SC_A_SIGNO/INFO/UC describe the frame */
#define SC_KIND_TRAMP 1 /* a patched system call: the trampoline frame below */
#define SC_KIND_TRAMP_INTR 2 /* an interrupt that came in the trampoline: its frame, to resume */

/*
 * The trampoline frame (a patched system call, see README.md "Syscall patching"): the guest's
 * registers in a ucontext_t's gregs at SC_TF_UC (only gregs are used) and its XSAVE area at
 * SC_TF_FP (64-byte aligned, standard format), both at fixed offsets in the area.
 */
#define SC_TF_UC 0x100
#define SC_UC_GREGS 40 /* offsetof(ucontext_t, uc_mcontext.gregs) */
#define SC_UC_R8 (SC_UC_GREGS + 8 * 0)
#define SC_UC_RSP (SC_UC_GREGS + 8 * 15)
#define SC_UC_RIP (SC_UC_GREGS + 8 * 16)
#define SC_TF_GREGS (SC_TF_UC + SC_UC_GREGS)
#define SC_TF_FP 0x1000
/* x86-64 user selectors, for the trampoline's iretq. */
#define SC_USER_CS 0x33
#define SC_USER_SS 0x2b
/* The rflags bits a return to the guest may set (Linux's FIX_EFLAGS), and those always set. */
#define SC_EFLAGS_USER 0x50dd5
#define SC_EFLAGS_FIXED 0x202

#define SC_ST_RUN 1 /* sentry -> stub: the frame holds the registers to resume with */
#define SC_ST_STOPPED 2 /* stub -> sentry: an event; its frame is on the alternate stack */
#define SC_ST_EXIT 3 /* sentry -> stub: end the thread (exit(0)) */

/*
 * The command page: one controller request at a time (the sentry serialises them), a batch of
 * up to SC_MAX_OPS system calls run in order until one fails.
 */
#define SC_C_COUNT 0 /* u64: number of calls */
#define SC_C_OPS 64 /* the calls, SC_OP_SIZE bytes each: */
#define SC_OP_NR 0 /* u64: system call number */
#define SC_OP_ARGS 8 /* u64[6] */
#define SC_OP_AREA 56 /* u64: clone: the new thread's area (stub address) */
#define SC_OP_SIZE 64
#define SC_MAX_OPS 63

/* Scratch page offsets (stub addresses code + SC_SCRATCH_OFF + x). */
#define SC_S_BYTE 0 /* a command byte read from the socket */
#define SC_S_CMDOFF 8 /* zygote: the new stub's command page offset in the memory file */
#define SC_S_FDS 16 /* zygote: int[2] of socketpair */
/* controller: u64 last result, u64 calls not run, then the rusage of a getrusage request */
#define SC_S_REPLY 32
#define SC_S_RUSAGE (SC_S_REPLY + 16)
#define SC_S_REPLY_LEN (16 + 144)
#define SC_S_MSG 256 /* zygote: struct msghdr for the reply (pid + SCM_RIGHTS socket) */
#define SC_S_IOV 320 /* struct iovec */
#define SC_S_PID 336 /* u64: the reply's data (pid or -errno) */
#define SC_S_CMSG 352 /* cmsghdr + int (24 bytes, aligned) */
#define SC_S_SIGACT 512 /* struct kernel sigaction for every handled signal */

/* clone(2) flags of a guest thread (made by the controller) and of a new stub (by the zygote). */
/* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|CHILD_CLEARTID|CHILD_SETTID */
#define SC_THREAD_CLONE_FLAGS 0x1250f00
#define SC_FORK_CLONE_FLAGS 0x8000 /* PARENT, exit signal 0 */

/* prctl(2) values for Syscall User Dispatch (not in every libc's headers). */
#define SC_PR_SET_SYSCALL_USER_DISPATCH 59
#define SC_PR_SYS_DISPATCH_ON 1
/* si_code of SIGSYS: from a seccomp SECCOMP_RET_TRAP, from Syscall User Dispatch. */
#define SC_SYS_SECCOMP 1
#define SC_SYS_USER_DISPATCH 2

/* Host signal ctx_interrupt sends to a stub thread. */
#define SC_INTERRUPT_SIGNAL SIGUSR2
#define SC_INTERRUPT_SIGNAL_NR 12 /* the same, for the assembly */

#define SC_FILTER_MAX 64

/* Where the code page lives in this process (same address in the sentry and the stubs). */
struct sc_code {
	uint64_t page;
	uint64_t zygote_entry; /* the zygote's first instruction after its C prelude */
	uint64_t handler; /* signal handler */
	uint64_t restorer; /* rt_sigreturn */
	uint64_t park; /* ud2 a new thread traps on */
	uint64_t tramp; /* the patched system calls' common entry */
	uint64_t fprog_zygote; /* struct sock_fprog of the stub filter */
	uint64_t fprog_guest; /* struct sock_fprog of the guest-thread filter */
};

/*
 * True if this host can run the seccomp platform: FSGSBASE enabled for user space
 * (AT_HWCAP2), seccomp filters with SECCOMP_RET_TRAP. Cheap; cached.
 */
bool seccomp_platform_available(void);

/*
 * Creates the seccomp platform over memfd (not owned). Returns 0 and *out, or -errno
 * (-ENOTSUP when seccomp_platform_available() is false).
 */
int seccomp_platform_create(int memfd, struct platform **out);

/*
 * Starts the platform's zygote stub now (otherwise the first as_create does). The sentry calls
 * it after dropping its privileges and before installing its own seccomp filter, so that stubs
 * carry only their own filter. Returns 0 or -errno. No-op for other platforms.
 */
int seccomp_platform_prepare(struct platform *p);

/* Builds the filters (out: room for SC_FILTER_MAX). Returns the number of instructions. */
size_t seccomp_stub_filter(uint64_t code_page, struct sock_filter *out);
size_t seccomp_guest_filter(uint64_t code_page, struct sock_filter *out);

/* Reserves and fills the code page (once). Returns it, or NULL with *err. */
const struct sc_code *sc_code_get(int *err);

/*
 * Forks the zygote from the calling (single-threaded or not) process: it keeps memfd as
 * SC_STUB_MEMFD, sock as SC_STUB_SOCK and imagefd (if not -1) as SC_STUB_IMAGEFD, unmaps everything but the code and scratch pages and
 * installs the stub filter. Returns its pid or -errno. The caller then waits for its ready byte.
 */
pid_t sc_zygote_spawn(const struct sc_code *code, int memfd, int imagefd, int sock);

/* Host pid of the stub process behind as (tests, diagnostics), or -1. */
pid_t seccomp_as_stub_pid(struct platform_as *as);

#endif
