/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The system call table (DESIGN.md section 4). One declarative table in table_x86_64.c maps
 * each x86-64 number to its handler, its support level and a note. `husk syscalls` prints it.
 *
 * Handlers have one signature: they get the calling task and the six raw argument registers,
 * and return a value (>= 0) or -errno. Restart codes (-ERESTARTSYS, ...) are turned into a
 * restart or -EINTR by the syscall exit path, never by handlers.
 */
#ifndef HUSK_SYSCALLS_H
#define HUSK_SYSCALLS_H

#include <stdint.h>

#include "include/abi/linux/syscall_nr.h"

struct task;

struct syscall_args {
	uint64_t a[6];
};

typedef long (*syscall_fn)(struct task *t, const struct syscall_args *args);

enum syscall_support {
	SYSCALL_NONE, /* not implemented: -ENOSYS, logged once per sandbox */
	SYSCALL_FULL, /* as Linux */
	SYSCALL_PARTIAL, /* works, with the limits in the note */
	SYSCALL_ERROR, /* deliberately returns an error (the note says which and why) */
};

struct syscall_entry {
	const char *name;
	syscall_fn fn; /* NULL for SYSCALL_NONE */
	enum syscall_support support;
	const char *note;
};

/* Indexed by number; entries beyond the known numbers have name NULL. */
extern const struct syscall_entry syscall_table[LINUX_SYSCALL_MAX];

/* Name of syscall nr, or NULL. */
const char *syscall_name(long nr);

/*
 * Runs the handler for nr with args on behalf of t (logs and returns -ENOSYS for unknown or
 * unimplemented numbers). Prints the call when the kernel's strace flag is on.
 */
long syscall_dispatch(struct task *t, long nr, const struct syscall_args *args);

/* Prints the table (number, name, support, note) to stdout, one row per line. */
void syscall_table_print(void);

#endif
