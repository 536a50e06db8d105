/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The calibration of the time page (sentry/time/vtime.c) against a made-up host: clocks that
 * are exact functions of a made-up TSC, whose rate changes, whose REALTIME steps, whose TSC
 * goes back. The lines must follow the host's clocks (VTIME_LEAD_NS ahead), never step back
 * at a recalibration, take REALTIME steps within one calibration and ignore noise.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "sentry/time/calibrate.h"
#include "sentry/time/vtime.h"
#include "sentry/time/vvar.h"

#define SEC 1000000000LL

/* The made-up host: mono(tsc) = mono0 + (tsc - tsc0) * num / den, the others offsets of it. */
struct host {
	uint64_t tsc0;
	int64_t mono0;
	int64_t num, den; /* ns per tick */
	int64_t real_off, boot_off, tai_off;
	int64_t raw_ppm; /* MONOTONIC_RAW runs this much faster than MONOTONIC */
};

static int64_t host_mono(const struct host *h, uint64_t tsc)
{
	return h->mono0 + (int64_t)((__int128)(tsc - h->tsc0) * h->num / h->den);
}

/* Changes the rate from tsc on, keeping mono continuous. */
static void host_set_rate(struct host *h, uint64_t tsc, int64_t num, int64_t den)
{
	h->mono0 = host_mono(h, tsc);
	h->tsc0 = tsc;
	h->num = num;
	h->den = den;
}

static struct vtime_sample sample_at(const struct host *h, uint64_t tsc)
{
	int64_t mono = host_mono(h, tsc);
	struct vtime_sample s = {
		.mono = { tsc, mono },
		.raw = { tsc, mono + (mono / 1000000) * h->raw_ppm },
		.real = { tsc, mono + h->real_off },
		.boot = { tsc, mono + h->boot_off },
		.tai = { tsc, mono + h->real_off + h->tai_off },
	};
	return s;
}

static int64_t line(const struct vvar_line *l, uint64_t tsc)
{
	return vvar_line_at(l, vtime_page()->tsc_base, tsc);
}

static struct host h = {
	.tsc0 = 1000000,
	.mono0 = 5000 * SEC,
	.num = 1,
	.den = 2, /* a 2 GHz TSC */
	.real_off = 1700000000 * SEC,
	.boot_off = 3 * SEC,
	.tai_off = 37 * SEC,
	.raw_ppm = 20,
};

/* Calibrates at tsc and checks that no line stepped back there (nor a little later). */
static void calibrate_at(struct vtime_calib *c, uint64_t tsc)
{
	struct vtime_sample s = sample_at(&h, tsc - 3000);
	struct vvar_line mono = vtime_page()->mono, raw = vtime_page()->raw;
	uint64_t base = vtime_page()->tsc_base;
	bool was_tsc = vtime_page()->mode == VVAR_MODE_TSC;

	vtime_calibrate(c, &s, tsc);
	c->step++;
	if (!was_tsc || vtime_page()->mode != VVAR_MODE_TSC)
		return;
	for (uint64_t d = 0; d < 4000000; d += 100000) {
		cr_assert_geq(line(&vtime_page()->mono, tsc + d), vvar_line_at(&mono, base, tsc),
			      "MONOTONIC stepped back");
		cr_assert_geq(line(&vtime_page()->raw, tsc + d), vvar_line_at(&raw, base, tsc),
			      "MONOTONIC_RAW stepped back");
	}
}

Test(calibrate, lines_follow_the_host_and_never_step_back)
{
	struct vtime_calib c = { .prev = sample_at(&h, 2000000) };
	uint64_t tsc = 2000000 + 2 * 1000000; /* 1 ms later */
	int64_t gap;

	calibrate_at(&c, tsc);
	cr_assert_eq(vtime_page()->mode, VVAR_MODE_TSC);
	gap = line(&vtime_page()->mono, tsc) - host_mono(&h, tsc);
	cr_assert(llabs(gap - VTIME_LEAD_NS) < 10, "first line %lld ns from the host",
		  (long long)gap);

	/* A second apart, the host's rate drifting by 200 ppm half-way. */
	for (int i = 0; i < 40; i++) {
		tsc += 2 * (uint64_t)SEC;
		if (i == 20)
			host_set_rate(&h, tsc - SEC, 10002, 20000);
		calibrate_at(&c, tsc);
		gap = line(&vtime_page()->mono, tsc) - host_mono(&h, tsc);
		if (i >= 5 && i != 20 && i != 21)
			cr_assert(llabs(gap - VTIME_LEAD_NS) < 100,
				  "calibration %d: %lld ns from the host", i, (long long)gap);
		/* Ahead of the host, but where the host's rate just changed (README.md). */
		cr_assert(gap > 0 || i == 20 || i == 21,
			  "calibration %d: the guest is behind by %lld ns", i, (long long)-gap);
	}
	/* REALTIME is MONOTONIC plus the host's offset; TAI 37 s more; BOOTTIME 3 s more. */
	cr_assert(llabs(line(&vtime_page()->mono, tsc) + vtime_page()->real_off -
			(host_mono(&h, tsc) + h.real_off) - VTIME_LEAD_NS) < 100);
	cr_assert_eq(vtime_page()->tai_off, 37 * SEC);
	cr_assert_eq(vtime_page()->boot_off, 3 * SEC);

	/* A host settimeofday 10 s back: taken at the next calibration; noise is not. */
	h.real_off -= 10 * SEC;
	tsc += 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert(llabs(vtime_page()->real_off - h.real_off) < 100, "REALTIME did not step");
	h.real_off += VTIME_STEP_NS / 2;
	tsc += 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert(llabs(vtime_page()->real_off - (h.real_off - VTIME_STEP_NS / 2)) < 100,
		  "REALTIME followed noise");
	/* BOOTTIME goes forward (a resume), never back. */
	h.boot_off += 60 * SEC;
	tsc += 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert(llabs(vtime_page()->boot_off - h.boot_off) < 100, "BOOTTIME did not move on");
	h.boot_off -= 30 * SEC;
	tsc += 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert(llabs(vtime_page()->boot_off - (h.boot_off + 30 * SEC)) < 100,
		  "BOOTTIME went back");

	/*
	 * The calibration thread frozen for an hour (husk pause) while the host's rate moved by
	 * 20 ppm: 72 ms behind, the lines jump forward instead of slewing for minutes.
	 */
	host_set_rate(&h, tsc, 500110002, 1000000000); /* 0.5001 ns/tick + 20 ppm */
	tsc += 3600 * 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert(llabs(line(&vtime_page()->mono, tsc) - host_mono(&h, tsc) - VTIME_LEAD_NS) < 100,
		  "MONOTONIC did not catch up");
	/* An hour with the host 20 ppm slower: 72 ms ahead, the lines slow down, never step. */
	host_set_rate(&h, tsc, 5001, 10000);
	tsc += 3600 * 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert_gt(line(&vtime_page()->mono, tsc) - host_mono(&h, tsc), 70000000);
	tsc += 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert_gt(line(&vtime_page()->mono, tsc) - host_mono(&h, tsc), 69000000);

	/* A rate that jumps by 5 %: the TSC is not to be trusted. */
	host_set_rate(&h, tsc, 21, 40);
	tsc += 2 * (uint64_t)SEC;
	calibrate_at(&c, tsc);
	cr_assert_eq(vtime_page()->mode, VVAR_MODE_SYSCALL);
}

/* The guest's MONOTONIC at tsc, as the vDSO reads it. */
static int64_t guest_mono(uint64_t tsc)
{
	return line(&vtime_page()->mono, tsc);
}

static int64_t guest_real(uint64_t tsc)
{
	return guest_mono(tsc) + vtime_page()->real_off;
}

/* Calibrates every second from tsc to tsc + n s, the lines within 100 ns of host - offset. */
static uint64_t calibrate_for(struct vtime_calib *c, uint64_t tsc, int n, const char *when)
{
	for (int i = 0; i < n; i++) {
		int64_t gap;

		tsc += 2 * (uint64_t)SEC;
		calibrate_at(c, tsc);
		gap = guest_mono(tsc) - (host_mono(&h, tsc) - vtime_offset_ns());
		if (i >= 2)
			cr_assert(llabs(gap - VTIME_LEAD_NS) < 100,
				  "%s, calibration %d: %lld ns from host - offset", when, i,
				  (long long)gap);
	}
	return tsc;
}

Test(calibrate, offset_add_after_a_pause_keeps_monotonic)
{
	struct vtime_calib c = { .prev = sample_at(&h, 2000000) };
	uint64_t tsc = 2000000 + 2 * 1000000, paused, resumed;
	int64_t before, real, pause = 3600 * SEC;

	calibrate_at(&c, tsc);
	tsc = calibrate_for(&c, tsc, 8, "before the pause");
	cr_assert_eq(vtime_offset_ns(), 0);

	/*
	 * husk pause at `paused` (the guest's last read), an hour during which the calibration
	 * thread goes on (its lines follow the host), then husk resume: offset += the hour.
	 */
	paused = tsc + 1000;
	before = guest_mono(paused);
	tsc = calibrate_for(&c, tsc, 4, "paused");
	resumed = paused + (uint64_t)pause * 2;
	tsc = resumed - 4000;
	calibrate_at(&c, tsc);
	real = guest_real(resumed);
	vtime_offset_add_at(pause, resumed);
	cr_assert_eq(vtime_offset_ns(), pause);
	/* From where the guest left it: not back, and not on by the pause (1 ms of slack). */
	cr_assert_geq(guest_mono(resumed), before, "MONOTONIC went back at the resume");
	cr_assert_lt(guest_mono(resumed) - before, 1000000,
		     "MONOTONIC moved on by %lld ns across the pause",
		     (long long)(guest_mono(resumed) - before));
	/* REALTIME is the host's: it does not move at the resume. */
	cr_assert(llabs(guest_real(resumed) - real) < 10, "REALTIME moved by %lld ns",
		  (long long)(guest_real(resumed) - real));
	/* BOOTTIME follows MONOTONIC (its offset to it is the host's). */
	cr_assert_eq(vtime_page()->boot_off, 3 * SEC);

	/* The calibrations after it keep the offset (no jump back to the host's clock). */
	tsc = calibrate_for(&c, resumed, 20, "after the resume");
	cr_assert_lt(guest_mono(tsc), host_mono(&h, tsc) - pause + 2 * VTIME_LEAD_NS);

	/* A second pause with the calibration thread frozen (host's rate moved 20 ppm). */
	paused = tsc + 1000;
	before = guest_mono(paused);
	host_set_rate(&h, paused, 500010000, 1000000000);
	resumed = paused + (uint64_t)pause * 2;
	vtime_offset_add_at(pause, resumed);
	cr_assert_geq(guest_mono(resumed), before, "MONOTONIC went back at the second resume");
	cr_assert_lt(guest_mono(resumed) - before, 100000000,
		     "MONOTONIC moved on by %lld ns across the second pause",
		     (long long)(guest_mono(resumed) - before));
	tsc = calibrate_for(&c, resumed, 20, "after the second resume");
	cr_assert_eq(vtime_page()->mode, VVAR_MODE_TSC);
	cr_assert_eq(vtime_offset_ns(), 2 * pause);
}

Test(calibrate, negative_offset_moves_the_guest_ahead)
{
	struct vtime_calib c = { .prev = sample_at(&h, 2000000) };
	uint64_t tsc = 2000000 + 2 * 1000000;
	int64_t before, real;

	calibrate_at(&c, tsc);
	tsc = calibrate_for(&c, tsc, 5, "before");
	before = guest_mono(tsc);
	real = guest_real(tsc);
	vtime_offset_add_at(-3600 * SEC, tsc);
	cr_assert(llabs(guest_mono(tsc) - before - 3600 * SEC) < 10, "MONOTONIC moved %lld ns",
		  (long long)(guest_mono(tsc) - before));
	cr_assert(llabs(guest_real(tsc) - real) < 10, "REALTIME moved");
	tsc = calibrate_for(&c, tsc, 10, "ahead");
	cr_assert_gt(guest_mono(tsc), host_mono(&h, tsc) + 3600 * SEC - 1000);
}

Test(calibrate, host_stamps_convert_with_the_offset_of_their_time)
{
	struct timespec ts;
	uint64_t early, late;

	/* Before any change: the identity, as the offset is 0. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	early = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
	cr_assert_eq(vtime_host_to_guest_mono(early), early);
	vtime_offset_add(5 * SEC);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	late = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec + 1;
	/* A stamp taken before the change keeps its value; one after has the offset. */
	cr_assert_eq(vtime_host_to_guest_mono(early), early);
	cr_assert_eq(vtime_host_to_guest_mono(late), late - 5 * SEC);
	cr_assert_eq(vtime_guest_to_host_mono(late - 5 * SEC), late);
	cr_assert_eq(vtime_clock_offset_ns(CLOCK_BOOTTIME), 5 * SEC);
	cr_assert_eq(vtime_clock_offset_ns(CLOCK_REALTIME), 0);
	/* The fallback (no TSC in use): host minus offset, from the host's clock. */
	{
		int64_t host, guest;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		host = (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
		guest = vtime_now_ns(CLOCK_MONOTONIC);
		cr_assert(guest >= host - 5 * SEC && guest < host - 5 * SEC + SEC / 10,
			  "host %lld, guest %lld", (long long)host, (long long)guest);
	}
}
