/* SPDX-License-Identifier: Apache-2.0 */
/* husk do --strace: one line per guest system call with decoded arguments and result. */
#ifndef HUSK_SYSCALLS_STRACE_H
#define HUSK_SYSCALLS_STRACE_H

#include "syscalls/syscalls.h"

/* Remembers the arguments of the call about to run (strings are read before the call). */
void strace_enter(struct task *t, long nr, const struct syscall_args *args);
/* Prints the call and its result to the kernel's strace fd. */
void strace_exit(struct task *t, long nr, const struct syscall_args *args, long ret);

#endif
