/* SPDX-License-Identifier: Apache-2.0 */
/* Guest faults the mm may resolve. Nothing is shared copy-on-write yet: every fault is real. */
#include "include/abi/linux/errno.h"
#include "sentry/mm/mm.h"

int mm_handle_fault(struct mm *mm, uint64_t addr, int code)
{
	return -EFAULT;
}
