/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Seccomp filters applied by the sentry to guest system calls, as Linux applies them.
 *
 * A filter is a classic BPF program over struct seccomp_data (nr, arch, instruction_pointer,
 * args), checked at load with Linux's rules (seccomp_check_filter + bpf_check_classic: only the
 * opcodes seccomp allows, aligned in-bounds loads of seccomp_data, forward in-range jumps, no
 * division by a constant 0, scratch memory written before it is read, a return at the end) and
 * then run by a small interpreter. Filters are immutable and reference counted; each holds its
 * predecessor (filters stack: every one runs, the action of highest precedence wins). A task
 * holds one reference on the newest filter of its chain (task->seccomp_filter); clone copies
 * it, exec keeps it.
 *
 * The container's profile (config.json linux.seccomp) is compiled by the runtime with
 * libseccomp and reaches the sentry as a file descriptor (husk-sentry --seccomp-fd), then is
 * attached to pid 1 and to every process husk exec starts.
 */
#ifndef HUSK_SENTRY_KERNEL_SECCOMP_H
#define HUSK_SENTRY_KERNEL_SECCOMP_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/refcount.h"

struct task;
struct syscall_args;

/* Linux's limits: BPF_MAXINSNS per program, MAX_INSNS_PER_PATH for a whole chain. */
#define SECCOMP_MAX_INSNS 4096
#define SECCOMP_MAX_INSNS_PER_PATH ((1 << 18) / sizeof(struct sock_filter))

/* AUDIT_ARCH_X86_64: the only architecture guest calls come from. */
#define SECCOMP_ARCH_X86_64 0xc000003eu

struct seccomp_filter {
	struct refcount ref;
	struct seccomp_filter *prev; /* referenced; NULL for the first filter */
	bool log; /* SECCOMP_FILTER_FLAG_LOG: log every action but ALLOW */
	uint32_t len;
	struct sock_filter insns[];
};

/*
 * Checks a classic BPF program against seccomp's rules (see above). Returns 0, or -EINVAL for
 * an empty or too long program or any rule broken.
 */
int seccomp_check(const struct sock_filter *prog, size_t len);

/*
 * Runs a program that seccomp_check accepted over d and returns its 32-bit result (action and
 * data). A division by a zero X register returns 0 (SECCOMP_RET_KILL_THREAD), as in Linux.
 */
uint32_t seccomp_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d);

/*
 * Makes a filter of prog (copied) stacked on prev (a reference is taken on prev, which may be
 * NULL). Returns 0 and *out (one reference), -EINVAL (seccomp_check refused it), -ENOMEM
 * (out of memory, or the chain would exceed SECCOMP_MAX_INSNS_PER_PATH).
 */
int seccomp_filter_create(const struct sock_filter *prog, size_t len, struct seccomp_filter *prev,
			  bool log, struct seccomp_filter **out);
void seccomp_filter_get(struct seccomp_filter *f);
/* Drops a reference; the last one frees the filter and drops its predecessor. NULL is fine. */
void seccomp_filter_put(struct seccomp_filter *f);

/*
 * Runs every filter of the chain ending at f over d and returns the result of highest
 * precedence (KILL_PROCESS, KILL_THREAD, TRAP, ERRNO, USER_NOTIF, TRACE, LOG, ALLOW: the
 * lowest action value as a signed number, as Linux); the newest filter wins ties. When
 * log_out is non-NULL it is set when the winning filter has the LOG flag.
 */
uint32_t seccomp_filter_run(const struct seccomp_filter *f, const struct seccomp_data *d,
			    bool *log_out);

/* Fills d for system call nr with args from t (arch x86-64, t's rip). */
void seccomp_data_fill(struct seccomp_data *d, const struct task *t, long nr,
		       const struct syscall_args *args);

/*
 * Called by syscall_dispatch before the handler when t->seccomp_mode is not
 * SECCOMP_MODE_DISABLED. Returns true when the call is to run; false when it must not, with
 * *ret the value for rax: -errno for SECCOMP_RET_ERRNO, -ENOSYS for TRACE and USER_NOTIF
 * (not supported: logged), and for the kill actions and TRAP whatever rax must hold while
 * the signal is acted on (the task or its process is made to exit with SIGSYS, or SIGSYS
 * with si_code SYS_SECCOMP is sent to the task). In strict mode, any call but read, write,
 * exit and rt_sigreturn kills the thread with SIGKILL.
 */
bool seccomp_syscall_enter(struct task *t, long nr, const struct syscall_args *args, long *ret);

/*
 * Stacks a filter on t's chain and sets t's mode to SECCOMP_MODE_FILTER. t's own host thread
 * (or before t runs). Takes a reference on f. Returns 0, -EINVAL when t is in strict mode.
 */
int seccomp_attach(struct task *t, struct seccomp_filter *f);

/*
 * seccomp(2)'s core for SECCOMP_SET_MODE_FILTER with a sentry copy of the program: checks
 * no_new_privs or CAP_SYS_ADMIN (-EACCES), flags (TSYNC, LOG, SPEC_ALLOW; NEW_LISTENER and
 * the others give -EINVAL), creates and attaches the filter; with TSYNC to every thread of t's
 * process (whose chains must be ancestors of t's: else returns the tid of the first that is
 * not). Returns 0, a tid, or -errno.
 */
long seccomp_set_filter(struct task *t, unsigned int flags, const struct sock_filter *prog,
			size_t len);

/* SECCOMP_SET_MODE_STRICT: 0, or -EINVAL when t already has filters. */
long seccomp_set_strict(struct task *t);

/* Inheritance: gives child a reference on parent's chain and parent's mode (clone/fork). */
void seccomp_task_inherit(struct task *child, const struct task *parent);

/* Drops t's chain (when the task is released). */
void seccomp_task_release(struct task *t);

#endif
