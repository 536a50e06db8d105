/* SPDX-License-Identifier: Apache-2.0 */
#include "sentry/kernel/kernel.h"

#include "common/log.h"
#include "syscalls/syscalls.h"

void kernel_log_unimplemented(struct kernel *k, long nr)
{
	const char *name = syscall_name(nr);
	bool first;

	if (nr < 0 || nr >= (long)(sizeof(k->unimpl_logged) * 8)) {
		log_warn("unknown system call %ld", nr);
		return;
	}
	pthread_mutex_lock(&k->lock);
	first = !(k->unimpl_logged[nr / 64] & (1ULL << (nr % 64)));
	k->unimpl_logged[nr / 64] |= 1ULL << (nr % 64);
	pthread_mutex_unlock(&k->lock);
	if (first)
		log_info("unimplemented system call %s (%ld): returning ENOSYS", name ? name : "?",
			 nr);
}
