/* SPDX-License-Identifier: Apache-2.0 */
/* Watching the host processes behind address spaces (stubwatch.c). */
#ifndef HUSK_SENTRY_KERNEL_STUBWATCH_H
#define HUSK_SENTRY_KERNEL_STUBWATCH_H

/*
 * Starts the watcher: from now on each address space's stub is watched, and its death (a kill
 * from the host) SIGKILLs the processes using the space. Once, before any guest runs. Returns
 * 0 or -errno (then stubs killed from outside are noticed only at their next switch).
 */
int stubwatch_start(void);

#endif
