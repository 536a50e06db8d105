/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's clocks: the time page, its calibration against the host's clocks, and the
 * sentry's own reads of it (sentry/time/README.md).
 *
 * The calibration thread samples the host's clocks against the TSC (each clock read between two
 * TSC reads; the narrowest of a few brackets wins), measures the host's rate in nanoseconds per
 * tick, and publishes new lines that start where the old ones are at the moment of publication
 * (so no reader ever sees a step) and whose rate is the host's plus a correction that closes
 * the gap to the host's clock by the next calibration (slewing, at most SLEW_MAX). The offsets of
 * REALTIME, BOOTTIME and TAI change only when the host's did by more than STEP_NS: a
 * settimeofday on the host, a resume from suspend.
 *
 * The lines follow the host's clocks minus the guest's offset (vtime_offset_ns): a pause grows
 * it, a restore sets it; each change moves the lines at once, under the page's count.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/mm/memfile.h"
#include "sentry/time/calibrate.h"
#include "sentry/time/vtime.h"
#include "sentry/time/vvar.h"

/* The image, generated from vdso/vdso.c by vdso/embed.py. */
extern const uint8_t vdso_image[];
extern const size_t vdso_image_len;

#define NSEC_PER_SEC 1000000000LL
/* The largest rate correction while closing the gap to the host's clock: 1000 ppm. */
#define SLEW_MAX_DIV 1000
/* A host rate (ns per tick) that moved by more than 1 % between calibrations: TSC unusable. */
#define RATE_DRIFT_DIV 100
/* Brackets per clock and sample; the narrowest is kept. */
#define BRACKETS 3
/*
 * The lines aim VTIME_LEAD_NS ahead of the host's clocks, so that they are never behind them
 * (the calibration's residual is tens of ns): a guest woken by a timer the sentry set on a host
 * clock (timerfd, futex and poll timeouts, POSIX timers) reads a time at or past the expiry,
 * and the first line is ahead of every host value a guest read before it.
 */
#define LEAD_NS VTIME_LEAD_NS
#define STEP_NS VTIME_STEP_NS
/* A line this far behind the host's clock jumps forward instead of slewing. */
#define CATCH_UP_NS 1000000
/* How long give_up waits at most for the host's clocks to reach the lines. */
#define GIVE_UP_WAIT_NS 2000000
/* The shortest span the first rate is measured over (busy-waited at start-up if need be). */
#define FIRST_SPAN_NS 500000

/* Time between calibrations: short at first while the rate is learnt, then a second. */
static const int64_t intervals_ns[] = { 10000000,  20000000,  50000000,	 100000000,
					200000000, 500000000, 1000000000 };

/* The page every reader uses: the memory file's page after vtime_start, else a private one. */
static struct vvar private_page;
static struct vvar *page = &private_page;
static uint64_t vvar_off, image_off, image_len;
static bool started;

/*
 * The guest's offset: guest MONOTONIC = host MONOTONIC - offset (BOOTTIME, MONOTONIC_RAW
 * likewise). Read atomically anywhere; written with writer_lock held, which also serialises
 * every write of the page (the calibration thread's and vtime_offset_add's).
 */
static int64_t offset;
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
/* vtime_set_guest_monotonic before vtime_start: the value, applied by vtime_start (writer_lock). */
static bool pending_guest;
static uint64_t pending_guest_ns;
/*
 * The offset's changes, for time stamps the sentry took before one (vtime_host_to_guest_mono):
 * from host MONOTONIC history[i].host_ns on, the offset was history[i].offset; entry 0 holds
 * the offset before the first change (host_ns INT64_MIN). When full, the oldest change is
 * dropped (stamps older than the oldest kept change convert with the offset of entry 0).
 * nhistory is read atomically, the entries with writer_lock held.
 */
#define HISTORY_MAX 64
static struct {
	int64_t host_ns;
	int64_t offset;
} history[HISTORY_MAX];
static int nhistory;

/* What vtime_probe found. */
static bool tsc_usable;
static uint32_t cpu_mode = VVAR_CPU_SYSCALL;

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NSEC_PER_SEC + ts->tv_nsec;
}

static int64_t host_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_ns(&ts);
}

static struct vtime_point read_point(clockid_t clock)
{
	struct vtime_point best = { 0, 0 };
	uint64_t width = UINT64_MAX;

	for (int i = 0; i < BRACKETS; i++) {
		struct timespec ts;
		uint64_t t0 = vvar_rdtsc(), t1;

		clock_gettime(clock, &ts);
		t1 = vvar_rdtsc();
		if (t1 >= t0 && t1 - t0 < width) {
			width = t1 - t0;
			best.tsc = t0 + (t1 - t0) / 2;
			best.ns = ts_ns(&ts);
		}
	}
	return best;
}

/* The host's clocks when vtime_probe ran: the first line's rate starts there. */
static struct vtime_sample probe_sample;

static void take_sample(struct vtime_sample *s)
{
	s->mono = read_point(CLOCK_MONOTONIC);
	s->raw = read_point(CLOCK_MONOTONIC_RAW);
	s->real = read_point(CLOCK_REALTIME);
	s->boot = read_point(CLOCK_BOOTTIME);
	s->tai = read_point(CLOCK_TAI);
}

/* p's value moved to tsc at rate (ns per tick << VVAR_SHIFT); tsc may be before p. */
static int64_t point_at(struct vtime_point p, uint64_t rate, uint64_t tsc)
{
	if (tsc >= p.tsc)
		return p.ns + (int64_t)(((unsigned __int128)(tsc - p.tsc) * rate) >> VVAR_SHIFT);
	return p.ns - (int64_t)(((unsigned __int128)(p.tsc - tsc) * rate) >> VVAR_SHIFT);
}

/* The host's rate between two points (ns per tick << VVAR_SHIFT); 0 when the TSC did not move on. */
static uint64_t rate_between(struct vtime_point a, struct vtime_point b)
{
	if (b.tsc <= a.tsc || b.ns <= a.ns)
		return 0;
	return (uint64_t)(((unsigned __int128)(uint64_t)(b.ns - a.ns) << VVAR_SHIFT) /
			  (b.tsc - a.tsc));
}

/* Guest CPUs: the sentry's usable CPUs, as sys_getcpu counts them. */
static uint32_t guest_cpus(void)
{
	cpu_set_t set;
	int n;

	if (husk_cpus_get(&set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (uint32_t)n : 1;
}

static void page_begin(void)
{
	__atomic_store_n(&page->seq, page->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void page_end(void)
{
	__atomic_store_n(&page->seq, page->seq + 1, __ATOMIC_RELEASE);
}

static void store_line(struct vvar_line *l, uint64_t mult, int64_t base_ns)
{
	__atomic_store_n(&l->mult, mult, __ATOMIC_RELAXED);
	__atomic_store_n(&l->base_ns, base_ns, __ATOMIC_RELAXED);
}

/* The guest stops using the TSC; readers ask the host from now on. writer_lock held. */
static void give_up(const char *why)
{
	log_warn("time: the TSC no longer gives the guest's clocks (%s): clock reads are system "
		 "calls from now on",
		 why);
	page_begin();
	/*
	 * The lines are a little ahead of the host: readers wait (the count is odd) until the
	 * host's clocks are where the lines are, so that no clock steps back at the switch.
	 */
	int64_t mono = vvar_line_at(&page->mono, page->tsc_base, vvar_rdtsc());
	int64_t raw = vvar_line_at(&page->raw, page->tsc_base, vvar_rdtsc());
	int64_t off = __atomic_load_n(&offset, __ATOMIC_RELAXED);
	struct timespec start, now, rnow;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		clock_gettime(CLOCK_MONOTONIC, &now);
		clock_gettime(CLOCK_MONOTONIC_RAW, &rnow);
	} while ((ts_ns(&now) - off < mono || ts_ns(&rnow) - off < raw) &&
		 ts_ns(&now) - ts_ns(&start) < GIVE_UP_WAIT_NS);
	__atomic_store_n(&page->mode, VVAR_MODE_SYSCALL, __ATOMIC_RELAXED);
	page_end();
}

/*
 * The rate for a line that is at line_ns now while the host is at host_ns: the host's rate
 * plus the gap spread over the ticks until the next calibration, within 1/SLEW_MAX_DIV of it.
 */
static uint64_t slewed_rate(int64_t line_ns, int64_t host_ns, uint64_t rate, uint64_t ticks)
{
	/* A product, not a shift: the gap may be negative (UBSan: a negative left shift). */
	__int128 corr = (__int128)(host_ns - line_ns) * ((__int128)1 << VVAR_SHIFT) /
			(__int128)(ticks ? ticks : 1);
	__int128 max = rate / SLEW_MAX_DIV;

	if (corr > max)
		corr = max;
	if (corr < -max)
		corr = -max;
	return (uint64_t)((__int128)rate + corr);
}

static void calibrate_locked(struct vtime_calib *c, const struct vtime_sample *s, uint64_t tsc);

void vtime_calibrate(struct vtime_calib *c, const struct vtime_sample *s, uint64_t tsc)
{
	pthread_mutex_lock(&writer_lock);
	calibrate_locked(c, s, tsc);
	pthread_mutex_unlock(&writer_lock);
}

/*
 * The lines aim at the host's clocks minus the offset (plus LEAD_NS): a change of the offset
 * moved them already (set_offset), so the target here is where they are, give or take the
 * residual, and the catch-up rule never undoes an offset.
 */
static void calibrate_locked(struct vtime_calib *c, const struct vtime_sample *s, uint64_t tsc)
{
	int64_t off = __atomic_load_n(&offset, __ATOMIC_RELAXED);
	uint64_t rate = rate_between(c->prev.mono, s->mono);
	uint64_t raw_rate = rate_between(c->prev.raw, s->raw);
	int64_t next_ns = intervals_ns[MIN(c->step + 1, ARRAY_SIZE(intervals_ns) - 1)];
	int64_t real_off, boot_off, tai_off;
	uint64_t ticks;
	int64_t gap = 0;
	bool first;

	if (!rate || !raw_rate) {
		give_up("the TSC stood still or went back");
		return;
	}
	if (c->rate && (rate > c->rate + c->rate / RATE_DRIFT_DIV ||
			rate < c->rate - c->rate / RATE_DRIFT_DIV)) {
		give_up("its rate changed");
		return;
	}
	/* Host offsets at the mono point (the clocks were read a few hundred ns apart). */
	/* REALTIME is the host's: the guest's MONOTONIC is off behind, its real_off off larger. */
	real_off = point_at(s->real, rate, s->mono.tsc) - s->mono.ns + off;
	boot_off = point_at(s->boot, rate, s->mono.tsc) - s->mono.ns;
	tai_off = point_at(s->tai, rate, s->mono.tsc) - point_at(s->real, rate, s->mono.tsc);
	ticks = (uint64_t)(((unsigned __int128)next_ns << VVAR_SHIFT) / rate);
	first = __atomic_load_n(&page->mode, __ATOMIC_RELAXED) != VVAR_MODE_TSC;

	page_begin();
	/* Read once the count is odd: a reader done before saw the old lines at a TSC before it. */
	if (!tsc)
		tsc = vvar_rdtsc();
	if (first) {
		store_line(&page->mono, rate, point_at(s->mono, rate, tsc) - off + LEAD_NS);
		store_line(&page->raw, raw_rate, point_at(s->raw, raw_rate, tsc) - off + LEAD_NS);
		__atomic_store_n(&page->real_off, real_off, __ATOMIC_RELAXED);
		__atomic_store_n(&page->boot_off, boot_off, __ATOMIC_RELAXED);
		__atomic_store_n(&page->tai_off, tai_off, __ATOMIC_RELAXED);
		__atomic_store_n(&page->mode, VVAR_MODE_TSC, __ATOMIC_RELAXED);
	} else {
		/* Both lines go on from where they are now: no reader sees a step. */
		int64_t mono = vvar_line_at(&page->mono, page->tsc_base, tsc);
		int64_t raw = vvar_line_at(&page->raw, page->tsc_base, tsc);

		int64_t raw_gap = point_at(s->raw, raw_rate, tsc) - off + LEAD_NS - raw;

		gap = point_at(s->mono, rate, tsc) - off + LEAD_NS - mono;
		/* Far behind (the sentry was frozen a long time, the host's clock jumped): catch
		 * up at once, forward only. */
		if (gap > CATCH_UP_NS)
			store_line(&page->mono, rate, mono + gap);
		else
			store_line(&page->mono, slewed_rate(mono, mono + gap, rate, ticks), mono);
		if (raw_gap > CATCH_UP_NS)
			store_line(&page->raw, raw_rate, raw + raw_gap);
		else
			store_line(&page->raw, slewed_rate(raw, raw + raw_gap, raw_rate, ticks),
				   raw);
		/* REALTIME may step (a host settimeofday); BOOTTIME only forward. */
		if (llabs(real_off - page->real_off) > STEP_NS)
			__atomic_store_n(&page->real_off, real_off, __ATOMIC_RELAXED);
		if (boot_off - page->boot_off > STEP_NS)
			__atomic_store_n(&page->boot_off, boot_off, __ATOMIC_RELAXED);
		if (llabs(tai_off - page->tai_off) > STEP_NS)
			__atomic_store_n(&page->tai_off, tai_off, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&page->tsc_base, tsc, __ATOMIC_RELAXED);
	page_end();
	/* Outside the window: a system call is where the writer could be preempted. */
	__atomic_store_n(&page->ncpu, guest_cpus(), __ATOMIC_RELAXED);
	if (!first)
		log_debug("time: guest MONOTONIC %+lld ns from the host's minus the offset "
			  "(aiming at %+d), host rate %.6f ns/tick",
			  (long long)(LEAD_NS - gap), LEAD_NS,
			  (double)rate / (double)(1ULL << VVAR_SHIFT));

	c->prev = *s;
	c->rate = rate;
	c->raw_rate = raw_rate;
}

static void *calib_main(void *arg)
{
	struct vtime_calib *c = arg;

	for (;;) {
		int64_t wait = intervals_ns[c->step];
		struct timespec ts = { .tv_sec = wait / NSEC_PER_SEC,
				       .tv_nsec = wait % NSEC_PER_SEC };
		struct vtime_sample s;

		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
		take_sample(&s);
		vtime_calibrate(c, &s, 0);
		if (__atomic_load_n(&page->mode, __ATOMIC_RELAXED) != VVAR_MODE_TSC)
			return NULL;
		if (c->step + 1 < ARRAY_SIZE(intervals_ns))
			c->step++;
	}
}

/* The host's current clocksource (sysfs), or "" when it cannot be read. */
static void read_clocksource(char *buf, size_t len)
{
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

void vtime_probe(void)
{
	unsigned int eax, ebx, ecx, edx;
	char source[64];
	bool invariant = false, rdtscp = false;

	if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx))
		invariant = edx & (1u << 8);
	if (__get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx))
		rdtscp = edx & (1u << 27);
	read_clocksource(source, sizeof(source));
	tsc_usable = invariant &&
		     (!source[0] || !strcmp(source, "tsc") || !strcmp(source, "kvm-clock"));
	/* For tests of the other road: every clock read a system call. */
	if (getenv("HUSK_TIME_NO_TSC"))
		tsc_usable = false;
	if (tsc_usable)
		take_sample(&probe_sample);
	if (rdtscp) {
		/* Linux puts the CPU number in TSC_AUX; a hypervisor might not pass it through. */
		for (int i = 0; i < 3; i++) {
			int before = sched_getcpu(), after;
			uint32_t lo, hi, aux;

			__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
			after = sched_getcpu();
			if (before < 0 || before != after)
				continue;
			cpu_mode = (int)(aux & 0xfff) == before ? VVAR_CPU_RDTSCP :
								  VVAR_CPU_SYSCALL;
			break;
		}
	}
	log_info("time: invariant TSC %s, host clocksource %s: the vDSO reads %s; getcpu %s",
		 invariant ? "yes" : "no", source[0] ? source : "(unknown)",
		 tsc_usable ? "the TSC" : "nothing (system calls)",
		 cpu_mode == VVAR_CPU_RDTSCP ? "with rdtscp" : "is a system call");
}

/* Appends a change of the offset to new_off at host MONOTONIC host_ns. writer_lock held. */
static void record_offset(int64_t host_ns, int64_t new_off)
{
	if (!nhistory) {
		history[0].host_ns = INT64_MIN;
		history[0].offset = __atomic_load_n(&offset, __ATOMIC_RELAXED);
		nhistory = 1;
	}
	if (nhistory == HISTORY_MAX) {
		/* Entry 0 takes the oldest change's offset: old stamps are off by that change. */
		history[0].offset = history[1].offset;
		memmove(&history[1], &history[2], (HISTORY_MAX - 2) * sizeof(history[0]));
		nhistory--;
	}
	history[nhistory].host_ns = host_ns;
	history[nhistory].offset = new_off;
	__atomic_store_n(&nhistory, nhistory + 1, __ATOMIC_RELEASE);
}

/*
 * Sets the offset to new_off and moves the lines with it: each goes back by the change from
 * where it is now, REALTIME (MONOTONIC plus real_off) stays where it is. writer_lock held.
 */
static void set_offset(int64_t new_off, uint64_t tsc)
{
	int64_t old = __atomic_load_n(&offset, __ATOMIC_RELAXED);
	int64_t delta;

	if (__builtin_sub_overflow(new_off, old, &delta))
		return;
	record_offset(host_mono_ns(), new_off);
	if (__atomic_load_n(&page->mode, __ATOMIC_RELAXED) != VVAR_MODE_TSC) {
		/* The readers ask the host and subtract the offset: nothing else to move. */
		__atomic_store_n(&offset, new_off, __ATOMIC_RELAXED);
		return;
	}
	page_begin();
	/* Read once the count is odd, as vtime_calibrate. */
	if (!tsc)
		tsc = vvar_rdtsc();
	{
		int64_t mono = vvar_line_at(&page->mono, page->tsc_base, tsc);
		int64_t raw = vvar_line_at(&page->raw, page->tsc_base, tsc);

		store_line(&page->mono, page->mono.mult, mono - delta);
		store_line(&page->raw, page->raw.mult, raw - delta);
		__atomic_store_n(&page->real_off, page->real_off + delta, __ATOMIC_RELAXED);
		__atomic_store_n(&page->tsc_base, tsc, __ATOMIC_RELAXED);
		__atomic_store_n(&offset, new_off, __ATOMIC_RELAXED);
	}
	page_end();
}

/*
 * The offset at start: HUSK_TEST_CLOCK_OFFSET_NS (tests: as if the sandbox had been paused for
 * that long, or, negative, restored on a host that booted more recently), then a guest
 * MONOTONIC that vtime_set_guest_monotonic asked for. Never a negative guest MONOTONIC: Linux
 * refuses time namespace offsets that would make one, programs take it for an error. The test
 * offset leaves the guest at least TEST_MONO_MIN_NS (or the host's, if less): programs compute
 * "a second ago" as an absolute time (negative: EINVAL), and MONOTONIC_RAW, a little behind
 * MONOTONIC, must not go negative either.
 */
#define TEST_MONO_MIN_NS (60LL * 1000000000LL)

static void start_offset(void)
{
	const char *env = getenv("HUSK_TEST_CLOCK_OFFSET_NS");
	int64_t host = host_mono_ns(), off;

	pthread_mutex_lock(&writer_lock);
	off = __atomic_load_n(&offset, __ATOMIC_RELAXED);
	if (env && *env) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(env, &end, 10);
		if (errno || *end)
			log_warn(
				"time: HUSK_TEST_CLOCK_OFFSET_NS=%s is not a decimal number: ignored",
				env);
		else if (__builtin_add_overflow(off, (int64_t)v, &off))
			off = v < 0 ? INT64_MIN : INT64_MAX;
	}
	bool restored = pending_guest;

	if (pending_guest) {
		off = host - (int64_t)MIN(pending_guest_ns, (uint64_t)INT64_MAX);
		pending_guest = false;
	}
	if (!restored && off > host - MIN(host, TEST_MONO_MIN_NS)) {
		log_warn("time: an offset of %lld ns would leave the guest's MONOTONIC below "
			 "%lld s: %lld ns instead",
			 (long long)off, TEST_MONO_MIN_NS / 1000000000LL,
			 (long long)(host - MIN(host, TEST_MONO_MIN_NS)));
		off = host - MIN(host, TEST_MONO_MIN_NS);
	}
	if (off > host) {
		log_warn("time: an offset of %lld ns would make the guest's MONOTONIC negative: "
			 "%lld ns instead",
			 (long long)off, (long long)host);
		off = host;
	}
	if (off != __atomic_load_n(&offset, __ATOMIC_RELAXED))
		set_offset(off, 0);
	/* A restore's stamps (boot and start times, moved into this host's clock) all convert
	 * with the restored offset: no history before it. */
	if (restored)
		__atomic_store_n(&nhistory, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&writer_lock);
	if (off)
		log_info("time: the guest's MONOTONIC and BOOTTIME are the host's %+lld ns",
			 (long long)-off);
}

int vtime_start(struct memfile *mf)
{
	uint64_t len = PAGE_ALIGN_UP(vdso_image_len);
	struct timespec res;
	pthread_attr_t attr;
	struct vtime_calib *c;
	struct vtime_sample s;
	pthread_t th;
	int64_t off;
	int ret;

	off = memfile_alloc_nocharge(mf, PAGE_SIZE + len);
	if (off < 0)
		return (int)off;
	vvar_off = (uint64_t)off;
	image_off = vvar_off + PAGE_SIZE;
	image_len = len;
	memcpy(memfile_ptr(mf, image_off), vdso_image, vdso_image_len);
	page = memfile_ptr(mf, vvar_off);
	page->mode = VVAR_MODE_SYSCALL;
	page->res_ns = clock_getres(CLOCK_MONOTONIC, &res) ? 1 : ts_ns(&res);
	page->coarse_res_ns = clock_getres(CLOCK_MONOTONIC_COARSE, &res) ? 4000000 : ts_ns(&res);
	page->ncpu = guest_cpus();
	page->cpu_mode = cpu_mode;
	start_offset();
	started = true;
	if (!tsc_usable)
		return 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/*
	 * The first line now, from the sample vtime_probe took (a few ms ago: the confinement
	 * ran since) and one taken at least FIRST_SPAN_NS later, so that the first guest reads
	 * the TSC already; the thread refines the rate soon after.
	 */
	c->prev = probe_sample;
	do
		take_sample(&s);
	while (s.mono.ns - c->prev.mono.ns < FIRST_SPAN_NS);
	vtime_calibrate(c, &s, 0);
	if (__atomic_load_n(&page->mode, __ATOMIC_RELAXED) != VVAR_MODE_TSC) {
		free(c);
		return 0;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &attr, calib_main, c);
	pthread_attr_destroy(&attr);
	if (ret) {
		free(c);
		/* An uncorrected line would drift from the host's clocks: no TSC then. */
		pthread_mutex_lock(&writer_lock);
		give_up(strerror(ret));
		pthread_mutex_unlock(&writer_lock);
	}
	return 0;
}

bool vtime_vdso_pages(uint64_t *vvar, uint64_t *image, uint64_t *len)
{
	if (!started)
		return false;
	*vvar = vvar_off;
	*image = image_off;
	*len = image_len;
	return true;
}

int vtime_gettime(int clock, struct timespec *ts)
{
	int64_t ns;

	if (vvar_clock_ns(page, clock, &ns) < 0) {
		/* Not from the page: the host's clock, minus the offset for the guest's. */
		if (clock_gettime(clock, ts))
			return -errno;
		if (vtime_clock_offset_ns(clock))
			*ts = vtime_host_to_guest_ts(clock, *ts);
		return 0;
	}
	ts->tv_sec = ns / NSEC_PER_SEC;
	ts->tv_nsec = ns % NSEC_PER_SEC;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += NSEC_PER_SEC;
		ts->tv_sec--;
	}
	return 0;
}

int64_t vtime_now_ns(int clock)
{
	struct timespec ts;

	return vtime_gettime(clock, &ts) ? 0 : ts_ns(&ts);
}

void vtime_getcpu_exact(void)
{
	__atomic_store_n(&page->cpu_mode, VVAR_CPU_SYSCALL, __ATOMIC_RELAXED);
}

const struct vvar *vtime_page(void)
{
	return page;
}

int64_t vtime_offset_ns(void)
{
	return __atomic_load_n(&offset, __ATOMIC_RELAXED);
}

void vtime_offset_add_at(int64_t ns, uint64_t tsc)
{
	int64_t new_off;

	pthread_mutex_lock(&writer_lock);
	if (__builtin_add_overflow(__atomic_load_n(&offset, __ATOMIC_RELAXED), ns, &new_off))
		new_off = ns < 0 ? INT64_MIN : INT64_MAX;
	set_offset(new_off, tsc);
	pthread_mutex_unlock(&writer_lock);
}

void vtime_offset_add(int64_t ns)
{
	vtime_offset_add_at(ns, 0);
}

void vtime_set_guest_monotonic(uint64_t guest_ns)
{
	int64_t guest = (int64_t)MIN(guest_ns, (uint64_t)INT64_MAX), new_off;

	pthread_mutex_lock(&writer_lock);
	if (!started) {
		pending_guest = true;
		pending_guest_ns = guest_ns;
	} else if (!__builtin_sub_overflow(host_mono_ns(), guest, &new_off)) {
		set_offset(new_off, 0);
	}
	pthread_mutex_unlock(&writer_lock);
}

int64_t vtime_clock_offset_ns(int clock)
{
	switch (clock) {
	case VVAR_CLOCK_MONOTONIC:
	case VVAR_CLOCK_MONOTONIC_RAW:
	case VVAR_CLOCK_MONOTONIC_COARSE:
	case VVAR_CLOCK_BOOTTIME:
	case 9: /* CLOCK_BOOTTIME_ALARM */
		return __atomic_load_n(&offset, __ATOMIC_RELAXED);
	default:
		return 0;
	}
}

/* ns plus add, within [0, UINT64_MAX]. */
static uint64_t add_sat(uint64_t ns, int64_t add)
{
	if (add >= 0)
		return ns > UINT64_MAX - (uint64_t)add ? UINT64_MAX : ns + (uint64_t)add;
	return ns < -(uint64_t)add ? 0 : ns + (uint64_t)add;
}

uint64_t vtime_guest_to_host_mono(uint64_t guest_ns)
{
	return add_sat(guest_ns, vtime_offset_ns());
}

uint64_t vtime_host_to_guest_mono(uint64_t host_ns)
{
	int64_t off = vtime_offset_ns();

	if (__atomic_load_n(&nhistory, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&writer_lock);
		for (int i = nhistory - 1; i >= 0; i--) {
			if (i == 0 ||
			    history[i].host_ns <= (int64_t)MIN(host_ns, (uint64_t)INT64_MAX)) {
				off = history[i].offset;
				break;
			}
		}
		pthread_mutex_unlock(&writer_lock);
	}
	return off == INT64_MIN ? UINT64_MAX : add_sat(host_ns, -off);
}

/* ts plus add nanoseconds, saturating at the ends of time_t (and at 0 below). */
static struct timespec ts_add(struct timespec ts, int64_t add)
{
	int64_t sec = add / NSEC_PER_SEC, nsec = add % NSEC_PER_SEC;

	ts.tv_nsec += nsec;
	if (ts.tv_nsec < 0) {
		ts.tv_nsec += NSEC_PER_SEC;
		sec--;
	} else if (ts.tv_nsec >= NSEC_PER_SEC) {
		ts.tv_nsec -= NSEC_PER_SEC;
		sec++;
	}
	if (__builtin_add_overflow(ts.tv_sec, sec, &ts.tv_sec))
		return sec < 0 ? (struct timespec){ 0, 0 } :
				 (struct timespec){ INT64_MAX, NSEC_PER_SEC - 1 };
	if (ts.tv_sec < 0)
		return (struct timespec){ 0, 0 };
	return ts;
}

struct timespec vtime_host_to_guest_ts(int clock, struct timespec ts)
{
	int64_t off = vtime_clock_offset_ns(clock);

	return off == INT64_MIN ? (struct timespec){ INT64_MAX, NSEC_PER_SEC - 1 } :
				  ts_add(ts, -off);
}

struct timespec vtime_guest_to_host_ts(int clock, struct timespec ts)
{
	return ts_add(ts, vtime_clock_offset_ns(clock));
}

struct timespec vtime_guest_abs_to_host_mono(int clock, struct timespec ts)
{
	struct timespec g, mono;
	int64_t left_s, left;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	if (vtime_gettime(clock, &g))
		return mono;
	/* left = ts - g, saturating; a time in the past is now. */
	if (__builtin_sub_overflow((int64_t)ts.tv_sec, (int64_t)g.tv_sec, &left_s) ||
	    __builtin_mul_overflow(left_s, (int64_t)NSEC_PER_SEC, &left) ||
	    __builtin_add_overflow(left, (int64_t)(ts.tv_nsec - g.tv_nsec), &left))
		left = ts.tv_sec < g.tv_sec ? 0 : INT64_MAX;
	return ts_add(mono, left < 0 ? 0 : left);
}
