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

/*
 * The guest's offset (sentry/time/README.md, "The guest's offset"): the guest's CLOCK_MONOTONIC
 * (and _RAW, _COARSE) and CLOCK_BOOTTIME (and _ALARM) are the host's minus this many
 * nanoseconds; REALTIME and TAI are the host's. It grows by the length of each pause (the
 * guest's clocks stand still while it is paused) and is set at restore so that they go on from
 * the checkpoint's values. Negative: the guest is ahead of the host (a restore on a host that
 * booted more recently). The sentry's own deadlines stay on the host's clocks; the places
 * where a guest's time becomes a host deadline, or a host time a guest's, convert with the
 * helpers below.
 */

/* The current offset, host minus guest MONOTONIC in nanoseconds (an atomic read). */
int64_t vtime_offset_ns(void);

/*
 * Grows the offset by ns (the guest's clocks go ns back from where the host's took them: a
 * resume after a pause of ns). The time page's lines move under its sequence count, so no
 * reader sees a torn or stepping value while the write is under way; the caller guarantees
 * that no guest thread ran during the last ns nanoseconds (husk resume: every guest thread was
 * stopped for at least that long), so that no guest ever read a value the lines go back past.
 * A negative ns moves the guest's clocks forward. Callable before vtime_start.
 */
void vtime_offset_add(int64_t ns);

/*
 * Makes the guest's MONOTONIC read guest_ns now (restore: the value at checkpoint); BOOTTIME
 * moves with it. Before vtime_start the value is kept and applied when vtime_start runs.
 */
void vtime_set_guest_monotonic(uint64_t guest_ns);

/* The host's MONOTONIC when the guest's reads guest_ns, with the current offset (deadlines). */
uint64_t vtime_guest_to_host_mono(uint64_t guest_ns);

/*
 * The guest's MONOTONIC when the host's read host_ns: with the offset in force then (a time
 * stamp the sentry took earlier, tg->start_ns, kernel.boot_ns) or, for now and later, the
 * current one. 0 if it would be negative.
 */
uint64_t vtime_host_to_guest_mono(uint64_t host_ns);

/*
 * The offset of a Linux clock id: vtime_offset_ns() for MONOTONIC, MONOTONIC_RAW,
 * MONOTONIC_COARSE, BOOTTIME and BOOTTIME_ALARM, else 0 (REALTIME, TAI, the CPU-time clocks).
 * A guest's absolute time on clock is the host's plus this.
 */
int64_t vtime_clock_offset_ns(int clock);

/* A host's time on clock (now or later) as the guest's: minus the clock's current offset. */
struct timespec vtime_host_to_guest_ts(int clock, struct timespec ts);
/* A guest's absolute time on clock as the host's (plus the clock's offset), saturating. */
struct timespec vtime_guest_to_host_ts(int clock, struct timespec ts);
/*
 * The host's CLOCK_MONOTONIC at which the guest's clock (a REALTIME deadline: futex, mqueue)
 * reaches ts, counted from the guest's own clock now, not the host's: after a host clock
 * step, the guest's REALTIME follows only at the next calibration (up to a second later), and
 * a wait counted on the host's REALTIME would end early by the guest's. Now if ts is past.
 */
struct timespec vtime_guest_abs_to_host_mono(int clock, struct timespec ts);

#endif
