/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Linux errno values the sentry returns to guests. The ordinary ones are identical to the host's
 * <errno.h> on x86-64 Linux (checked at build time below); the kernel-internal restart codes are
 * never seen by user space and are defined here.
 */
#ifndef HUSK_ABI_LINUX_ERRNO_H
#define HUSK_ABI_LINUX_ERRNO_H

#include <errno.h>

/* Kernel-internal: the syscall exit path turns these into a restart or -EINTR. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514 /* restart only if no handler ran */
#define ENOIOCTLCMD 515
#define ERESTART_RESTARTBLOCK 516

_Static_assert(EPERM == 1 && ENOENT == 2 && EINTR == 4 && EFAULT == 14 && ENOSYS == 38 &&
		       ENOTSUP == 95 && EOWNERDEAD == 130,
	       "host errno values must be Linux x86-64's");

/* True for the restart codes that must not escape to the guest. */
static inline int linux_errno_is_restart(long ret)
{
	return ret == -ERESTARTSYS || ret == -ERESTARTNOINTR || ret == -ERESTARTNOHAND ||
	       ret == -ERESTART_RESTARTBLOCK;
}

#endif
