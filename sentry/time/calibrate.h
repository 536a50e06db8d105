/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to sentry/time (and its unit tests): the calibration of the time page from samples of
 * the host's clocks.
 */
#ifndef HUSK_SENTRY_TIME_CALIBRATE_H
#define HUSK_SENTRY_TIME_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "sentry/time/vvar.h"

/* A host clock's value and the TSC at the middle of the narrowest bracket around its read. */
struct vtime_point {
	uint64_t tsc;
	int64_t ns;
};

/* One calibration's reads of the host's clocks. */
struct vtime_sample {
	struct vtime_point mono, raw, real, boot, tai;
};

/* The calibration's state, the calibration thread's own. */
struct vtime_calib {
	struct vtime_sample prev; /* the previous sample */
	uint64_t rate, raw_rate; /* the host's last measured rates (ns per tick << VVAR_SHIFT) */
	size_t step; /* index in the table of intervals */
};

/*
 * The lines aim this far ahead of the host's clocks (vtime.c says why); a change of the
 * host's REALTIME, BOOTTIME or TAI offset smaller than STEP_NS is sampling noise.
 */
#define VTIME_LEAD_NS 1000
#define VTIME_STEP_NS 100000LL

/*
 * One calibration of the page the sentry's readers use: s is a fresh sample (c->prev the one
 * before), tsc the TSC at which the new lines start (0: the TSC when the page's count has
 * turned odd, what the calibration thread passes; the unit tests choose it). The first call (the page not in TSC mode yet) draws the first lines
 * from the host's rate between c->prev and s; later ones go on from where the lines are at tsc
 * with a rate that closes the gap to the host's clocks (plus VTIME_LEAD_NS) by the next
 * calibration. A TSC that stood still or went back, or a rate that moved by more than 1 %,
 * switches the page to VVAR_MODE_SYSCALL for good.
 */
void vtime_calibrate(struct vtime_calib *c, const struct vtime_sample *s, uint64_t tsc);

/*
 * vtime_offset_add with the lines moved at tsc (0: the TSC once the page's count is odd, what
 * vtime_offset_add passes; the unit tests choose it).
 */
void vtime_offset_add_at(int64_t ns, uint64_t tsc);

/* The page the sentry reads (the memory file's after vtime_start, else a private one). */
const struct vvar *vtime_page(void);

#endif
