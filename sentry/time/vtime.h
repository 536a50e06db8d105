/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's clocks (sentry/time/README.md): one place for the sentry's notion of time.
 *
 * The time page ([vvar], vvar.h) holds straight lines of the TSC that a calibration thread keeps
 * close to the host's clocks; the vDSO image (vdso/) and the sentry's clock system calls both
 * compute from it. When the host's TSC cannot be used the page says so and every reader asks
 * the host's clocks instead.
 */
#ifndef HUSK_SENTRY_TIME_VTIME_H
#define HUSK_SENTRY_TIME_VTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct memfile;

/*
 * Decides whether the host's TSC can give the guest's clocks (an invariant TSC, and a host
 * clocksource of tsc or kvm-clock when sysfs says which) and how getcpu can find the CPU.
 * Reads sysfs: call once at start-up, before the sentry confines itself. Without it the vDSO
 * makes system calls for everything.
 */
void vtime_probe(void);

/*
 * Puts the time page and the vDSO image in mf (pages the sentry keeps for its lifetime) and,
 * when vtime_probe found a usable TSC, starts the calibration thread (its signals blocked as
 * the caller's). Call once, before any guest runs. Returns 0 or -errno (no vDSO then).
 */
int vtime_start(struct memfile *mf);

/*
 * Where the loader finds the pages: the time page at *vvar_off (one page) and the image at
 * *image_off (*image_len bytes, page multiple) in the memory file given to vtime_start. False
 * when vtime_start did not run (unit tests): no vDSO is mapped.
 */
bool vtime_vdso_pages(uint64_t *vvar_off, uint64_t *image_off, uint64_t *image_len);

/*
 * The guest's value of clock (a Linux clock id other than the CPU-time clocks: REALTIME,
 * MONOTONIC, MONOTONIC_RAW, the _COARSE ones, BOOTTIME, TAI, the _ALARM ones), as the vDSO
 * computes it; the host's clock of the same id when the page does not serve it. Returns 0 or
 * -errno.
 */
int vtime_gettime(int clock, struct timespec *ts);
/* vtime_gettime in nanoseconds (0 on error: the clock ids the sentry passes are valid). */
int64_t vtime_now_ns(int clock);

/*
 * From now on the vDSO's getcpu asks the sentry (sys_getcpu), which knows each thread's
 * affinity: called when a guest thread gets an affinity mask without some CPU.
 */
void vtime_getcpu_exact(void);

#endif
