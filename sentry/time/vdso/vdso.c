/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vDSO image every guest process gets at AT_SYSINFO_EHDR: clock_gettime, gettimeofday,
 * time, clock_getres and getcpu computed from the time page ([vvar], sentry/time/vvar.h) that
 * the loader maps one page below the image. What the page does not serve (CPU-time clocks,
 * unknown ids, a host whose TSC is not used, getcpu once a thread restricted its affinity) is
 * the ordinary system call, trapped and answered by the sentry.
 *
 * Built -nostdlib -fPIC -shared with vdso.lds and vdso.map: position-independent code with no
 * relocations (the time page is reached PC-relative), so no dynamic linker touches it.
 */
#include <stdint.h>

#include "sentry/time/vvar.h"

/* Defined by vdso.lds: the time page, one page below the image. */
extern const struct vvar husk_vvar __attribute__((visibility("hidden")));

#define NSEC_PER_SEC 1000000000LL
#define NR_gettimeofday 96
#define NR_time 201
#define NR_clock_gettime 228
#define NR_clock_getres 229
#define NR_getcpu 309

struct vdso_timespec {
	int64_t tv_sec;
	int64_t tv_nsec;
};

struct vdso_timeval {
	int64_t tv_sec;
	int64_t tv_usec;
};

struct vdso_timezone {
	int32_t tz_minuteswest;
	int32_t tz_dsttime;
};

static inline long syscall2(long nr, long a, long b)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

static inline long syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Seconds and nanoseconds of ns (floor division: times before 1970 stay valid). */
static inline void split_ns(int64_t ns, int64_t *sec, int64_t *nsec)
{
	int64_t s = ns / NSEC_PER_SEC, r = ns % NSEC_PER_SEC;

	if (r < 0) {
		r += NSEC_PER_SEC;
		s--;
	}
	*sec = s;
	*nsec = r;
}

int __vdso_clock_gettime(int clock, struct vdso_timespec *ts);
int __vdso_clock_gettime(int clock, struct vdso_timespec *ts)
{
	int64_t ns;

	if (vvar_clock_ns(&husk_vvar, clock, &ns) < 0)
		return (int)syscall2(NR_clock_gettime, clock, (long)ts);
	split_ns(ns, &ts->tv_sec, &ts->tv_nsec);
	return 0;
}

int __vdso_gettimeofday(struct vdso_timeval *tv, struct vdso_timezone *tz);
int __vdso_gettimeofday(struct vdso_timeval *tv, struct vdso_timezone *tz)
{
	int64_t ns, nsec;

	if (tv) {
		if (vvar_clock_ns(&husk_vvar, VVAR_CLOCK_REALTIME, &ns) < 0)
			return (int)syscall2(NR_gettimeofday, (long)tv, (long)tz);
		split_ns(ns, &tv->tv_sec, &nsec);
		tv->tv_usec = nsec / 1000;
	}
	/* The sentry's timezone is UTC (sys_gettimeofday). */
	if (tz) {
		tz->tz_minuteswest = 0;
		tz->tz_dsttime = 0;
	}
	return 0;
}

int64_t __vdso_time(int64_t *t);
int64_t __vdso_time(int64_t *t)
{
	int64_t ns, sec, nsec;

	if (vvar_clock_ns(&husk_vvar, VVAR_CLOCK_REALTIME, &ns) < 0)
		return syscall2(NR_time, (long)t, 0);
	split_ns(ns, &sec, &nsec);
	if (t)
		*t = sec;
	return sec;
}

int __vdso_clock_getres(int clock, struct vdso_timespec *res);
int __vdso_clock_getres(int clock, struct vdso_timespec *res)
{
	int64_t r;

	if (__atomic_load_n(&husk_vvar.mode, __ATOMIC_RELAXED) != VVAR_MODE_TSC)
		return (int)syscall2(NR_clock_getres, clock, (long)res);
	switch (clock) {
	case VVAR_CLOCK_REALTIME:
	case VVAR_CLOCK_MONOTONIC:
	case VVAR_CLOCK_MONOTONIC_RAW:
	case VVAR_CLOCK_BOOTTIME:
	case VVAR_CLOCK_TAI:
		r = __atomic_load_n(&husk_vvar.res_ns, __ATOMIC_RELAXED);
		break;
	case VVAR_CLOCK_REALTIME_COARSE:
	case VVAR_CLOCK_MONOTONIC_COARSE:
		r = __atomic_load_n(&husk_vvar.coarse_res_ns, __ATOMIC_RELAXED);
		break;
	default:
		return (int)syscall2(NR_clock_getres, clock, (long)res);
	}
	if (res) {
		res->tv_sec = r / NSEC_PER_SEC;
		res->tv_nsec = r % NSEC_PER_SEC;
	}
	return 0;
}

/* getcpu(2)'s answer: the host CPU modulo the guest's CPUs, on node 0 (sys_getcpu). */
int __vdso_getcpu(unsigned int *cpu, unsigned int *node, void *unused);
int __vdso_getcpu(unsigned int *cpu, unsigned int *node, void *unused)
{
	uint32_t n = __atomic_load_n(&husk_vvar.ncpu, __ATOMIC_RELAXED);
	uint32_t lo, hi, aux;

	if (__atomic_load_n(&husk_vvar.cpu_mode, __ATOMIC_RELAXED) != VVAR_CPU_RDTSCP || n == 0)
		return (int)syscall3(NR_getcpu, (long)cpu, (long)node, (long)unused);
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	if (cpu)
		*cpu = (aux & 0xfff) % n;
	if (node)
		*node = 0;
	return 0;
}

/* The names without the prefix, as Linux's vDSO has them (weak aliases). */
int clock_gettime(int clock, struct vdso_timespec *ts)
	__attribute__((weak, alias("__vdso_clock_gettime")));
int gettimeofday(struct vdso_timeval *tv, struct vdso_timezone *tz)
	__attribute__((weak, alias("__vdso_gettimeofday")));
int64_t time(int64_t *t) __attribute__((weak, alias("__vdso_time")));
int clock_getres(int clock, struct vdso_timespec *res)
	__attribute__((weak, alias("__vdso_clock_getres")));
int getcpu(unsigned int *cpu, unsigned int *node, void *unused)
	__attribute__((weak, alias("__vdso_getcpu")));
