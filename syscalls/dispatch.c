/* SPDX-License-Identifier: Apache-2.0 */
/* Running a system call: table lookup, the unimplemented path, and --strace. */
#include <stdio.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/task.h"
#include "syscalls/strace.h"
#include "syscalls/syscalls.h"

long syscall_dispatch(struct task *t, long nr, const struct syscall_args *args)
{
	const struct syscall_entry *e = NULL;
	long ret;

	if (nr >= 0 && nr < LINUX_SYSCALL_MAX)
		e = &syscall_table[nr];
	__atomic_fetch_add(&t->k->nr_syscalls, 1, __ATOMIC_RELAXED);

	if (unlikely(t->k->strace))
		strace_enter(t, nr, args);
	task_set_current(t);

	/* The guest's seccomp filters run before the call, as in Linux (sentry/kernel/seccomp.c). */
	if (unlikely(__atomic_load_n(&t->seccomp_mode, __ATOMIC_RELAXED)) &&
	    !seccomp_syscall_enter(t, nr, args, &ret)) {
		/* The call does not run: ret is its result (or rax while SIGSYS is acted on). */
	} else if (e && e->fn) {
		ret = e->fn(t, args);
	} else {
		kernel_log_unimplemented(t->k, nr);
		ret = -ENOSYS;
	}

	if (unlikely(t->k->strace))
		strace_exit(t, nr, args, ret);
	return ret;
}

void syscall_table_print(void)
{
	static const char *const levels[] = {
		[SYSCALL_NONE] = "none",
		[SYSCALL_FULL] = "full",
		[SYSCALL_PARTIAL] = "partial",
		[SYSCALL_ERROR] = "error",
	};
	int counts[4] = { 0 };

	printf("%-4s %-24s %-8s %s\n", "nr", "name", "support", "note");
	for (long nr = 0; nr < LINUX_SYSCALL_MAX; nr++) {
		const struct syscall_entry *e = &syscall_table[nr];
		const char *name = syscall_name(nr);
		enum syscall_support s = e->fn ? e->support : SYSCALL_NONE;

		if (!name)
			continue;
		counts[s]++;
		printf("%-4ld %-24s %-8s %s\n", nr, name, levels[s],
		       e->note ? e->note : (s == SYSCALL_NONE ? "ENOSYS" : ""));
	}
	printf("# %d full, %d partial, %d error, %d not implemented\n", counts[SYSCALL_FULL],
	       counts[SYSCALL_PARTIAL], counts[SYSCALL_ERROR], counts[SYSCALL_NONE]);
}
