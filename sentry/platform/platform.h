/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The platform: how guest code runs and how control comes back to the sentry.
 *
 * Three backends fit this interface: ptrace (PTRACE_SYSEMU, the reference), seccomp (user
 * notification, later) and kvm (later). The sentry never calls a backend directly; it goes
 * through struct platform_ops.
 *
 * Objects:
 *  - struct platform: one per sandbox; knows the memory file.
 *  - struct platform_as: one guest address space (for ptrace: one stub process). Guest memory is
 *    only ever ranges of the memory file mapped at guest addresses.
 *  - struct platform_ctx: one guest thread in an address space (for ptrace: one stub thread).
 *
 * Threading: a ctx is driven by exactly one sentry host thread, the one that created it (ptrace
 * requires that the tracer thread issue every request). as_map/as_unmap/as_protect may be called
 * from any thread that owns a ctx of that address space; backends may queue the change and apply
 * it before the next ctx_switch of any ctx of that space (ptrace applies it at once when called by
 * the space's owner thread and queues it otherwise).
 */
#ifndef HUSK_SENTRY_PLATFORM_H
#define HUSK_SENTRY_PLATFORM_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct platform;
struct platform_as;
struct platform_ctx;

/* Guest registers: x86-64 general-purpose registers, fs_base/gs_base included. */
typedef struct user_regs_struct arch_regs_t;

enum platform_event_kind {
	PLATFORM_EV_SYSCALL, /* guest executed `syscall`; regs->orig_rax is the number */
	PLATFORM_EV_FAULT, /* synchronous fault: signo/code/addr describe it */
	PLATFORM_EV_INTERRUPT, /* ctx_interrupt() was called */
	PLATFORM_EV_DIED, /* the backing host thread/process is gone (killed from outside) */
};

struct platform_event {
	enum platform_event_kind kind;
	int signo; /* FAULT: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP */
	int code; /* FAULT: si_code */
	uint64_t addr; /* FAULT: si_addr */
	int trapno; /* FAULT: hardware trap number when known, else -1 */
	/*
	 * SYSCALL: the call trapped at a `syscall` instruction whose site the sentry may patch
	 * (struct platform's syscall_trampoline is set and the call did not come through it).
	 */
	bool patchable;
};

struct platform_ops {
	const char *name;

	/*
	 * Creates an address space with nothing mapped. The calling thread becomes its owner:
	 * for ptrace it is the tracer of the stub. Returns 0 and *out, or -errno.
	 */
	int (*as_create)(struct platform *p, struct platform_as **out);
	/* Destroys the space and every ctx still in it (kills the stub). */
	void (*as_destroy)(struct platform_as *as);

	/*
	 * Maps [addr, addr+len) to memory-file offset off with prot (PROT_* bits), replacing
	 * whatever was there. addr, len and off are page aligned. Returns 0 or -errno.
	 */
	int (*as_map)(struct platform_as *as, uint64_t addr, uint64_t len, int prot, uint64_t off);
	/*
	 * Maps [addr, addr+len) to offset off of the image file (struct platform's imagefd),
	 * private (the host's page cache is shared by every space that maps it) and never
	 * writable: prot without PROT_WRITE. Page aligned. Returns 0 or -errno (-ENOSYS without
	 * an image file). NULL: the backend cannot (sentry/mm then copies the pages in).
	 */
	int (*as_map_image)(struct platform_as *as, uint64_t addr, uint64_t len, int prot,
			    uint64_t off);
	/* Removes any mapping in [addr, addr+len). */
	int (*as_unmap)(struct platform_as *as, uint64_t addr, uint64_t len);
	/* Changes protections of the mappings in [addr, addr+len). */
	int (*as_protect)(struct platform_as *as, uint64_t addr, uint64_t len, int prot);

	/*
	 * Creates a guest thread in as. The first ctx of a new space is the stub's initial thread;
	 * later ones are new stub threads (not needed before the processes issue: may return
	 * -ENOSYS). The calling thread becomes the ctx's owner.
	 */
	int (*ctx_create)(struct platform_as *as, struct platform_ctx **out);
	void (*ctx_destroy)(struct platform_ctx *ctx);

	/*
	 * Threads (CLONE_VM|CLONE_THREAD, and CLONE_VM without a new space): a guest thread that
	 * will be driven by a different host thread than its creator is made in two steps.
	 * ctx_clone runs on the owner thread of `from` (a ctx of the space the new thread joins)
	 * and creates the new guest thread, owned by nobody; ctx_adopt runs on the host thread that
	 * will drive it and makes that thread its owner. Nothing else may be done with the new ctx
	 * in between but ctx_destroy (from the creator). Returns 0 or -errno.
	 */
	int (*ctx_clone)(struct platform_ctx *from, struct platform_ctx **out);
	int (*ctx_adopt)(struct platform_ctx *ctx);

	/*
	 * Runs the guest thread with *regs until the next event, then stores the guest's registers
	 * back in *regs and describes the event in *ev. On PLATFORM_EV_SYSCALL the guest resumes
	 * after the `syscall` instruction with rax as left in *regs at the next switch.
	 * A zero cs or ss in *regs stands for the 64-bit user selector. On FAULT the guest has not
	 * received the signal: resuming re-runs the faulting instruction unless rip was changed.
	 * The 32-bit `int $0x80` is reported as the FAULT SIGSEGV/SI_KERNEL a kernel without
	 * IA-32 emulation raises, with rip at the instruction. Once PLATFORM_EV_DIED was
	 * reported, every later switch reports it again. Owner thread only (-EPERM otherwise).
	 * Returns 0, or -errno if the switch itself failed (or a queued mapping change failed).
	 */
	int (*ctx_switch)(struct platform_ctx *ctx, arch_regs_t *regs, struct platform_event *ev);

	/* Makes a running (or the next) ctx_switch return PLATFORM_EV_INTERRUPT. Any thread. */
	void (*ctx_interrupt)(struct platform_ctx *ctx);

	/* Members below were added after the first interface; callers may test them for NULL. */

	/* Frees the platform (platform_destroy() calls it). Every space must be destroyed first. */
	void (*destroy)(struct platform *p);

	/*
	 * Copies the guest thread's floating-point and vector state into buf, in the layout of
	 * an x86 XSAVE area (the layout of PTRACE_GETREGSET NT_X86_XSTATE: 512-byte legacy FXSAVE
	 * area, 64-byte header, extended components). len must be at least
	 * platform_fpstate_size(). Owner thread only, between switches. Returns the number of
	 * bytes written, -ENOSPC if len is too small, or -errno.
	 */
	int (*ctx_get_fpstate)(struct platform_ctx *ctx, void *buf, size_t len);
	/*
	 * Replaces the guest thread's floating-point and vector state with buf (same layout;
	 * len must be exactly platform_fpstate_size()). Owner thread only, between switches.
	 * Returns 0, -EINVAL for a malformed area or a wrong len, or -errno.
	 */
	int (*ctx_set_fpstate)(struct platform_ctx *ctx, const void *buf, size_t len);

	/*
	 * Like ctx_switch, but the guest runs at most one instruction (guest ptrace's
	 * PTRACE_SINGLESTEP): after it, the switch returns PLATFORM_EV_FAULT SIGTRAP with code
	 * TRAP_TRACE (or the event that instruction caused: a system call, a fault). The trap
	 * flag is not visible in the guest's eflags. NULL: the backend cannot single-step.
	 */
	int (*ctx_singlestep)(struct platform_ctx *ctx, arch_regs_t *regs,
			      struct platform_event *ev);

	/*
	 * CPU time the guest thread has spent running guest code (the host time of its backing
	 * thread, kernel time included: page faults, stops), in nanoseconds since ctx_create,
	 * ctx_clone or ctx_adopt; never decreasing. Any thread, while the ctx exists; it may make
	 * host calls. NULL: the backend does not measure it.
	 */
	uint64_t (*ctx_cpu_ns)(struct platform_ctx *ctx);

	/*
	 * The peak resident size, in KiB, of the host process behind ctx's address space (the
	 * guest memory it touched, as the host counts it). Owner thread only, between switches;
	 * may cost a round trip to the guest thread. Returns it or -errno. NULL: not known.
	 */
	long (*ctx_peak_rss_kb)(struct platform_ctx *ctx);

	/*
	 * The host process behind as (its stub), whose death the kernel watches
	 * (sentry/kernel/stubwatch.c), or -1. NULL: none to watch (KVM: the VM is the sentry's).
	 */
	pid_t (*as_host_pid)(struct platform_as *as);
};

struct platform {
	const struct platform_ops *ops;
	int memfd; /* the memory file; stubs map ranges of it */
	/*
	 * A restore's pages file (sentry/mm/image.c), or -1 (platform_create sets it). Set by the
	 * creator before the first as_create (the stubs get it when they start): as_map_image
	 * maps ranges of it. Read-only; the sentry keeps it open as long as the platform.
	 */
	int imagefd;
	/*
	 * Set by the creator after platform_create() and before the first as_create: pages of the
	 * memory file the backend may take for its own use (the seccomp backend keeps each stub
	 * thread's shared context there), and the creator's mapping of the whole file. A backend
	 * that needs them fails as_create with -ENOSYS while they are NULL. mem_alloc returns an
	 * offset (>= 0, zeroed pages, not charged to the guest) or -errno; mem_free gives it back.
	 */
	uint8_t *mem_base;
	int64_t (*mem_alloc)(void *arg, uint64_t len);
	void (*mem_free)(void *arg, uint64_t off, uint64_t len);
	void *mem_arg;
	/*
	 * Syscall patching (x86-64; sentry/mm/patch.c): where a patched call site's trap-table
	 * entry jumps (an address in the stub's code page, the same in every space), or 0 when the
	 * backend has none or patching is off. The entry arrives with eax = the call's number, rcx
	 * = the address after the patched instruction, r11 free, gs base = the thread's own, and
	 * reports the call as a PLATFORM_EV_SYSCALL stop like a trapped one.
	 */
	uint64_t syscall_trampoline;
};

/* Base of every backend's address space; backends embed it first (container_of). */
struct platform_as {
	struct platform *p;
};

/* Base of every backend's guest thread; backends embed it first (container_of). */
struct platform_ctx {
	struct platform_as *as;
};

/*
 * Creates the platform called name over the memory file memfd (not owned): "ptrace",
 * "seccomp", or "auto" (the one platform_auto_name() gives). Returns 0 and *out, -ENOENT for
 * an unknown name, or -errno.
 */
int platform_create(const char *name, int memfd, struct platform **out);

/*
 * The backend "auto" picks on this host: "kvm" where the CPU has hardware virtualisation,
 * /dev/kvm is usable and the KVM platform's self-test passes (kvm/kvm.h), else "seccomp" when
 * the kernel has what it needs (probed once per process, cheaply), else "ptrace". Never NULL.
 */
const char *platform_auto_name(void);

/* Frees a platform from platform_create() (NULL is accepted). Its spaces must be gone. */
void platform_destroy(struct platform *p);

/*
 * Size in bytes of the XSAVE area ctx_get_fpstate/ctx_set_fpstate move on this machine
 * (CPUID leaf 0xD, sub-leaf 0, EBX: the size for the features the kernel enabled in XCR0).
 */
size_t platform_fpstate_size(void);

/*
 * The user state components (XSAVE feature bits) the host kernel enabled, as Linux names them
 * in a signal frame's software bytes (fpx_sw_bytes.xfeatures): XCR0 without the dynamically
 * enabled AMX tile data. Never 0 (x87 and SSE at least).
 */
uint64_t platform_user_xfeatures(void);
#define PLATFORM_XFEATURE_XTILEDATA (1ULL << 18)

/*
 * Maps len bytes of private read+write memory at the first address from start (by step, below
 * limit) where nothing is mapped yet: where a backend keeps its stub code page, at the same
 * address in the sentry and its stubs. Returns it, or MAP_FAILED with errno (EEXIST: none free).
 */
void *platform_reserve_fixed(uint64_t start, uint64_t step, uint64_t limit, size_t len);

/* Guest address range usable by guest mappings: [PLATFORM_GUEST_MIN, PLATFORM_GUEST_MAX). */
#define PLATFORM_GUEST_MIN 0x10000ULL
/* Above this the stub keeps its code page and nothing of the guest may be mapped. */
#define PLATFORM_GUEST_MAX 0x7ffe00000000ULL

#endif
