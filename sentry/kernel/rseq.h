/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Restartable sequences (rseq(2)): the registered area's cpu_id and cpu_id_start are kept
 * current, and a critical section the task is in when the sentry returns it to its code is
 * aborted (its IP moved to abort_ip) before a signal frame is built, as Linux does on
 * preemption and signal delivery.
 */
#ifndef HUSK_SENTRY_RSEQ_H
#define HUSK_SENTRY_RSEQ_H

#include <stdint.h>

struct task;

/*
 * rseq(2) for t itself: registers (flags 0) or unregisters (RSEQ_FLAG_UNREGISTER) the area at
 * addr, with Linux's checks. Returns 0, -EINVAL, -EPERM (wrong signature), -EBUSY (already
 * registered), -EFAULT.
 */
long rseq_syscall(struct task *t, uint64_t addr, uint32_t len, int flags, uint32_t sig);

/*
 * Called by t's run loop each time before t goes back to its code (before signal delivery):
 * updates cpu_id when it changed and aborts a critical section t is in. A malformed rseq_cs or
 * a wrong abort signature forces SIGSEGV, as in Linux. No-op without a registration.
 */
void rseq_return_to_guest(struct task *t);

#endif
