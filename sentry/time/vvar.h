/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time page ([vvar]): one page of the memory file that the sentry writes and every guest
 * address space maps read-only next to the vDSO image. It holds the parameters from which the
 * vDSO (sentry/time/vdso/vdso.c) and the sentry's own clock system calls (sentry/time/vtime.c)
 * compute the guest's clocks from the TSC, with the same inline code below, so that a program
 * mixing vDSO reads and trapped calls sees one clock.
 *
 * Freestanding: included by the vDSO image (no libc) and by the sentry.
 *
 * Writers (the sentry's calibration, vtime.c) hold the page's sequence count odd while they
 * change it; readers retry until they read an even count that did not change around their read.
 */
#ifndef HUSK_SENTRY_TIME_VVAR_H
#define HUSK_SENTRY_TIME_VVAR_H

#include <stdint.h>

/* vvar.mode: how the clocks are read. */
#define VVAR_MODE_SYSCALL 0 /* not from the TSC: the vDSO makes the system call */
#define VVAR_MODE_TSC 1 /* from the TSC and the lines below */

/* vvar.cpu_mode: how the vDSO's getcpu finds the CPU. */
#define VVAR_CPU_SYSCALL 0 /* getcpu(2) through the sentry */
#define VVAR_CPU_RDTSCP 1 /* TSC_AUX (the host CPU number in its low 12 bits) with rdtscp */

/* Clock ids (include/uapi/linux/time.h) that the page serves; others go to the sentry. */
#define VVAR_CLOCK_REALTIME 0
#define VVAR_CLOCK_MONOTONIC 1
#define VVAR_CLOCK_MONOTONIC_RAW 4
#define VVAR_CLOCK_REALTIME_COARSE 5
#define VVAR_CLOCK_MONOTONIC_COARSE 6
#define VVAR_CLOCK_BOOTTIME 7
#define VVAR_CLOCK_TAI 11

/* Bits of the fixed-point rates: a line's mult is nanoseconds per TSC tick times 2^32. */
#define VVAR_SHIFT 32

/* A clock as a straight line of the TSC: ns(tsc) = base_ns + ((tsc - tsc_base) * mult >> 32). */
struct vvar_line {
	uint64_t mult;
	int64_t base_ns;
};

struct vvar {
	uint32_t seq; /* odd while the sentry writes the page */
	uint32_t mode; /* VVAR_MODE_* */
	uint64_t tsc_base; /* the TSC value the lines start at */
	struct vvar_line mono; /* CLOCK_MONOTONIC (and _COARSE) */
	struct vvar_line raw; /* CLOCK_MONOTONIC_RAW */
	int64_t real_off; /* CLOCK_REALTIME (and _COARSE) minus CLOCK_MONOTONIC */
	int64_t boot_off; /* CLOCK_BOOTTIME minus CLOCK_MONOTONIC */
	int64_t tai_off; /* CLOCK_TAI minus CLOCK_REALTIME */
	int64_t res_ns; /* clock_getres of the fine clocks */
	int64_t coarse_res_ns; /* clock_getres of the _COARSE clocks (the host's tick) */
	uint32_t ncpu; /* guest CPUs: getcpu reports the host CPU modulo ncpu */
	uint32_t cpu_mode; /* VVAR_CPU_* */
};

_Static_assert(sizeof(struct vvar) <= 4096, "the time page is one page");

/* The TSC, not read before earlier loads complete (as Linux's rdtsc_ordered). */
static inline uint64_t vvar_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* The value of line l at tsc (tsc before tsc_base counts as tsc_base: never earlier). */
static inline int64_t vvar_line_at(const struct vvar_line *l, uint64_t tsc_base, uint64_t tsc)
{
	uint64_t delta = tsc > tsc_base ? tsc - tsc_base : 0;

	return l->base_ns + (int64_t)(((unsigned __int128)delta * l->mult) >> VVAR_SHIFT);
}

/*
 * Reads clock (a Linux clock id) from the page at vv: 0 and *ns, or -1 when the page does not
 * serve it (another clock, or the TSC is not used: the caller asks the sentry or the host).
 */
static inline int vvar_clock_ns(const struct vvar *vv, int clock, int64_t *ns)
{
	for (;;) {
		uint32_t seq = __atomic_load_n(&vv->seq, __ATOMIC_ACQUIRE);
		struct vvar_line line;
		uint64_t base, tsc;
		int64_t v;

		if (seq & 1) {
			__builtin_ia32_pause();
			continue;
		}
		if (__atomic_load_n(&vv->mode, __ATOMIC_RELAXED) != VVAR_MODE_TSC)
			return -1;
		base = __atomic_load_n(&vv->tsc_base, __ATOMIC_RELAXED);
		if (clock == VVAR_CLOCK_MONOTONIC_RAW) {
			line.mult = __atomic_load_n(&vv->raw.mult, __ATOMIC_RELAXED);
			line.base_ns = __atomic_load_n(&vv->raw.base_ns, __ATOMIC_RELAXED);
		} else {
			line.mult = __atomic_load_n(&vv->mono.mult, __ATOMIC_RELAXED);
			line.base_ns = __atomic_load_n(&vv->mono.base_ns, __ATOMIC_RELAXED);
		}
		switch (clock) {
		case VVAR_CLOCK_MONOTONIC:
		case VVAR_CLOCK_MONOTONIC_COARSE:
		case VVAR_CLOCK_MONOTONIC_RAW:
			break;
		case VVAR_CLOCK_REALTIME:
		case VVAR_CLOCK_REALTIME_COARSE:
			line.base_ns += __atomic_load_n(&vv->real_off, __ATOMIC_RELAXED);
			break;
		case VVAR_CLOCK_BOOTTIME:
			line.base_ns += __atomic_load_n(&vv->boot_off, __ATOMIC_RELAXED);
			break;
		case VVAR_CLOCK_TAI:
			line.base_ns += __atomic_load_n(&vv->real_off, __ATOMIC_RELAXED) +
					__atomic_load_n(&vv->tai_off, __ATOMIC_RELAXED);
			break;
		default:
			return -1;
		}
		tsc = vvar_rdtsc();
		v = vvar_line_at(&line, base, tsc);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&vv->seq, __ATOMIC_RELAXED) == seq) {
			*ns = v;
			return 0;
		}
	}
}

#endif
