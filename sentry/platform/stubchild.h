/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The first steps of a stub process, shared by the backends whose stubs are forked from the
 * sentry (ptrace's stub_child, seccomp's sc_zygote_child). They run in the child of a fork of a
 * multi-threaded process, on a copy of the sentry's memory: raw system calls only, no locks, no
 * malloc. Each returns -1 with errno set on failure, or does not return.
 */
#ifndef HUSK_SENTRY_PLATFORM_STUBCHILD_H
#define HUSK_SENTRY_PLATFORM_STUBCHILD_H

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"

/*
 * Forbids core files (a stub killed by its filter must not write
 * guest memory into one) and sets no_new_privs (needed to install a filter without
 * CAP_SYS_ADMIN; a stub never execs anyway).
 */
static inline int stub_child_prelude(void)
{
	struct rlimit nocore = { 0, 0 };

	if (syscall(SYS_prlimit64, 0, RLIMIT_CORE, &nocore, NULL) < 0 ||
	    syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return 0;
}

/*
 * Names the process husk-stub: last, once it holds only its own fds, so that whatever finds a
 * husk-stub (ps, the tests) never sees one still closing the sentry's.
 */
static inline int stub_child_name(void)
{
	static const char name[16] = "husk-stub";

	return syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0) < 0 ? -1 : 0;
}

/*
 * fork keeps glibc's rseq registration, whose area (in the sentry's TLS) is about to go: the
 * kernel would then fail to update it and kill the stub with SIGSEGV. Drops it.
 */
static inline int stub_child_forget_rseq(void)
{
	if (__rseq_size > 0) {
		void *area = (char *)__builtin_thread_pointer() + __rseq_offset;

		if (syscall(SYS_rseq, area, __rseq_size, 1 /* RSEQ_FLAG_UNREGISTER */, RSEQ_SIG) <
			    0 &&
		    syscall(SYS_rseq, area, 32, 1, RSEQ_SIG) < 0)
			return -1;
	}
	return 0;
}

/* Ends the child with the errno of the step that failed as its status. */
static inline __attribute__((noreturn)) void stub_child_fail(void)
{
	syscall(SYS_exit_group, errno > 0 && errno < 256 ? errno : EIO);
	__builtin_unreachable();
}

/* Makes the code page executable and jumps to entry in it, for good. */
static inline __attribute__((noreturn)) void stub_child_enter(uint64_t page, uint64_t entry)
{
	if (syscall(SYS_mprotect, page, PAGE_SIZE, PROT_READ | PROT_EXEC) < 0)
		stub_child_fail();
	__asm__ volatile("xor %%ebp, %%ebp\n\t"
			 "jmp *%0"
			 :
			 : "r"(entry)
			 : "memory");
	__builtin_unreachable();
}

#endif
