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

#include "sentry/time/calibrate.h"
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
