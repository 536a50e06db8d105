/* SPDX-License-Identifier: Apache-2.0 */
/*
 * futex(2): the operations over sentry/kernel/futex.c. Timeouts: FUTEX_WAIT's is relative
 * (CLOCK_MONOTONIC); WAIT_BITSET's, WAIT_REQUEUE_PI's and LOCK_PI2's absolute on CLOCK_MONOTONIC,
 * or CLOCK_REALTIME with FUTEX_CLOCK_REALTIME; LOCK_PI's absolute on CLOCK_REALTIME;
 * futex_waitv's absolute on the clock it names.
 */
#include <linux/futex.h>
#include <stdint.h>
#include <time.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/time/vtime.h"
#include "syscalls/handlers.h"

#define NSEC_PER_SEC 1000000000L

/* FUTEX_WAIT's restart_fn data: uaddr, val | private << 32, bitset, deadline in ns. */
long futex_wait_restart(struct task *t)
{
	struct timespec deadline = {
		.tv_sec = (time_t)(t->restart_data[3] / NSEC_PER_SEC),
		.tv_nsec = (long)(t->restart_data[3] % NSEC_PER_SEC),
	};
	long ret;

	t->restart_fn = NULL;
	ret = futex_wait(t, t->restart_data[0], (t->restart_data[1] >> 32) & 1,
			 (uint32_t)t->restart_data[1], (uint32_t)t->restart_data[2], &deadline);
	if (ret == -ERESTARTSYS) {
		t->restart_fn = futex_wait_restart;
		ret = -ERESTART_RESTARTBLOCK;
	}
	return ret;
}

/*
 * Reads the timeout at addr and turns it into an absolute (host) CLOCK_MONOTONIC deadline:
 * relative timeouts count from now; absolute ones on the guest's CLOCK_REALTIME are converted
 * at this instant, on its CLOCK_MONOTONIC moved by its offset (sentry/time/vtime.h).
 */
static long read_deadline(struct task *t, uint64_t addr, bool absolute, bool realtime,
			  struct timespec *out)
{
	struct timespec ts;

	if (mm_copy_in(t->mm, &ts, addr, sizeof(ts)) != sizeof(ts))
		return -EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= NSEC_PER_SEC)
		return -EINVAL;
	if (!absolute) {
		/* now + ts on the host's MONOTONIC (tv_sec < 2^62: no overflow). */
		struct timespec mono;

		clock_gettime(CLOCK_MONOTONIC, &mono);
		if (ts.tv_sec > (int64_t)1 << 62)
			ts.tv_sec = (int64_t)1 << 62;
		out->tv_sec = mono.tv_sec + ts.tv_sec;
		out->tv_nsec = mono.tv_nsec + ts.tv_nsec;
		if (out->tv_nsec >= NSEC_PER_SEC) {
			out->tv_sec++;
			out->tv_nsec -= NSEC_PER_SEC;
		}
	} else if (realtime) /* the guest's REALTIME, which may trail the host's after a step */
		*out = vtime_guest_abs_to_host_mono(CLOCK_REALTIME, ts);
	else /* the guest's MONOTONIC is the host's minus its offset (sentry/time/vtime.h) */
		*out = vtime_guest_to_host_ts(CLOCK_MONOTONIC, ts);
	return 0;
}

static long do_futex_wait(struct task *t, const struct syscall_args *args, bool private,
			  bool absolute, bool realtime, uint32_t bitset)
{
	struct timespec deadline;
	uint64_t uaddr = args->a[0];
	uint32_t val = (uint32_t)args->a[2];
	long ret;

	if (!bitset)
		return -EINVAL;
	if (args->a[3]) {
		ret = read_deadline(t, args->a[3], absolute, realtime, &deadline);
		if (ret < 0)
			return ret;
	}
	ret = futex_wait(t, uaddr, private, val, bitset, args->a[3] ? &deadline : NULL);
	if (ret == -ERESTARTSYS && args->a[3]) {
		/* A timed wait restarts with the time that is left, as Linux's futex_wait. */
		t->restart_data[0] = uaddr;
		t->restart_data[1] = val | ((uint64_t) private << 32);
		t->restart_data[2] = bitset;
		t->restart_data[3] =
			(uint64_t)deadline.tv_sec * NSEC_PER_SEC + (uint64_t)deadline.tv_nsec;
		t->restart_fn = futex_wait_restart;
		ret = -ERESTART_RESTARTBLOCK;
	}
	return ret;
}

/* Reads the timeout (if any) as an absolute time and converts it to a CLOCK_MONOTONIC deadline. */
static long abs_deadline(struct task *t, uint64_t addr, bool realtime, struct timespec *out,
			 const struct timespec **deadline)
{
	long ret;

	*deadline = NULL;
	if (!addr)
		return 0;
	ret = read_deadline(t, addr, true, realtime, out);
	if (ret == 0)
		*deadline = out;
	return ret;
}

#define FUTEX_WAITV_MAX 128
#define FUTEX2_SIZE_U32 0x02
#define FUTEX2_SIZE_MASK 0x03
#define FUTEX2_PRIVATE 128

/* futex_waitv(2): 32-bit words only; FUTEX2_NUMA is refused (EINVAL). */
long sys_futex_waitv(struct task *t, const struct syscall_args *args)
{
	uint64_t uwaiters = args->a[0], uts = args->a[3];
	unsigned int nr = (unsigned int)args->a[1];
	int clockid = (int)args->a[4];
	struct futex_waitv_req reqs[FUTEX_WAITV_MAX];
	struct timespec ts;
	long ret;

	if (args->a[2])
		return -EINVAL;
	if (!uwaiters || !nr || nr > FUTEX_WAITV_MAX)
		return -EINVAL;
	if (uts) {
		if (clockid != CLOCK_REALTIME && clockid != CLOCK_MONOTONIC)
			return -EINVAL;
		ret = read_deadline(t, uts, true, clockid == CLOCK_REALTIME, &ts);
		if (ret < 0)
			return ret;
	}
	for (unsigned int i = 0; i < nr; i++) {
		struct {
			uint64_t val, uaddr;
			uint32_t flags, reserved;
		} v;

		if (mm_copy_in(t->mm, &v, uwaiters + i * sizeof(v), sizeof(v)) != sizeof(v))
			return -EFAULT;
		if ((v.flags & ~(FUTEX2_SIZE_MASK | FUTEX2_PRIVATE)) || v.reserved ||
		    (v.flags & FUTEX2_SIZE_MASK) != FUTEX2_SIZE_U32 || v.val > UINT32_MAX)
			return -EINVAL;
		reqs[i] = (struct futex_waitv_req){ .uaddr = v.uaddr,
						    .val = (uint32_t)v.val,
						    .private = (v.flags & FUTEX2_PRIVATE) != 0 };
	}
	return futex_waitv(t, reqs, (int)nr, uts ? &ts : NULL);
}

/* futex(2): PI futexes do not boost priorities (guest threads share one host priority). */
long sys_futex(struct task *t, const struct syscall_args *args)
{
	uint64_t uaddr = args->a[0], uaddr2 = args->a[4];
	int op = (int)args->a[1];
	int cmd = op & FUTEX_CMD_MASK;
	bool private = op & FUTEX_PRIVATE_FLAG;
	bool realtime = op & FUTEX_CLOCK_REALTIME;
	int val = (int)args->a[2];
	/* For requeue and wake_op the timeout slot is a count. */
	int val2 = (int)args->a[3];
	uint32_t val3 = (uint32_t)args->a[5];
	const struct timespec *deadline;
	struct timespec ts;
	long ret;

	/* Linux refuses FUTEX_CLOCK_REALTIME on FUTEX_WAIT too (its timeout is relative). */
	if (realtime && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_WAIT_REQUEUE_PI &&
	    cmd != FUTEX_LOCK_PI2)
		return -ENOSYS;
	switch (cmd) {
	case FUTEX_WAIT:
		return do_futex_wait(t, args, private, false, realtime, FUTEX_BITSET_ANY);
	case FUTEX_WAIT_BITSET:
		return do_futex_wait(t, args, private, true, realtime, val3);
	case FUTEX_WAKE:
		return futex_wake_bitset(t, uaddr, private, val, FUTEX_BITSET_ANY);
	case FUTEX_WAKE_BITSET:
		return futex_wake_bitset(t, uaddr, private, val, val3);
	case FUTEX_REQUEUE:
		return futex_requeue(t, uaddr, uaddr2, private, val, val2, false, 0);
	case FUTEX_CMP_REQUEUE:
		return futex_requeue(t, uaddr, uaddr2, private, val, val2, true, val3);
	case FUTEX_WAKE_OP:
		return futex_wake_op(t, uaddr, uaddr2, private, val, val2, val3);
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
		/* LOCK_PI counts on CLOCK_REALTIME always; LOCK_PI2 as WAIT_BITSET does. */
		ret = abs_deadline(t, args->a[3], cmd == FUTEX_LOCK_PI || realtime, &ts, &deadline);
		return ret < 0 ? ret : futex_lock_pi(t, uaddr, private, deadline, false);
	case FUTEX_TRYLOCK_PI:
		return futex_lock_pi(t, uaddr, private, NULL, true);
	case FUTEX_UNLOCK_PI:
		return futex_unlock_pi(t, uaddr, private);
	case FUTEX_WAIT_REQUEUE_PI:
		ret = abs_deadline(t, args->a[3], realtime, &ts, &deadline);
		return ret < 0 ? ret :
				 futex_wait_requeue_pi(t, uaddr, uaddr2, private, (uint32_t)val,
						       deadline);
	case FUTEX_CMP_REQUEUE_PI:
		return futex_cmp_requeue_pi(t, uaddr, uaddr2, private, val, val2, val3);
	default:
		return -ENOSYS;
	}
}
