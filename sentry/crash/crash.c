/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's crash report (issue 18). Two phases (README.md):
 *
 * 1. The walk, async-signal-safe. The first thread to take a fatal signal owns the crash: it
 *    walks its own stack from the signal's context with libunwind (local unwinding, no cache,
 *    into preallocated slots), then sends CRASH_SIGNAL to every other registered thread with
 *    tgkill. Each of those walks its own stack from its own signal context, records the guest
 *    call it was serving (its thread-local crash_current) and its name, says it is done and
 *    parks in ppoll for ever. The owner waits (bounded) for their answers.
 * 2. The raw report, async-signal-safe too: the owner formats (vsnprintf, integers and strings
 *    only) the module list crash_init recorded (path, load bias, build-id) and each thread's
 *    frames as absolute address and module+offset, writes it, and dies of the signal it took.
 *    The sentry symbolizes nothing: the runtime does, after the crash, from this raw report
 *    (runtime/crashsym.c), so that start-up opens no ELF file and reads no DWARF.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "common/log.h"
#include "sentry/crash/crash.h"

#define CRASH_MAX_THREADS 4096
#define CRASH_MAX_FRAMES 48
#define CRASH_MAX_MODULES 32
#define CRASH_BUILD_ID_MAX 64
#define CRASH_ALTSTACK_SIZE (256 * 1024)
#define CRASH_WAIT_MS 3000 /* for the other threads' walks */
#define CRASH_OUT_SIZE (512 * 1024)

enum { SLOT_FREE, SLOT_LIVE, SLOT_ASKED, SLOT_DONE };

struct crash_slot {
	int tid; /* 0: free (atomic) */
	int state; /* SLOT_* (atomic) */
	char name[16];
	int nframes;
	uintptr_t frames[CRASH_MAX_FRAMES];
	struct crash_syscall sys;
};

/* A loaded ELF object, recorded at start (no file is opened: everything is in memory). */
struct crash_module {
	char path[256];
	uintptr_t bias; /* dl_iterate_phdr's dlpi_addr: what the ELF's addresses are moved by */
	uintptr_t start, end; /* its PT_LOAD segments, [start, end) */
	char build_id[2 * CRASH_BUILD_ID_MAX + 1]; /* hex; "" when it has none */
};

__thread struct crash_syscall crash_current = { .nr = -1 };
static __thread struct crash_slot *my_slot;

static struct crash_slot slots[CRASH_MAX_THREADS];
static struct crash_slot spare; /* an unregistered thread that crashes (or answers) */
static struct crash_module modules[CRASH_MAX_MODULES];
static int nmodules;
static const char *(*syscall_name_of)(long nr);
static int crash_fd = -1;
static bool crash_fd_only; /* the report goes to crash_fd only (crash_init) */
static pid_t sentry_pid;
static int crash_owner; /* tid of the thread that owns the crash, 0 before (atomic) */
static int crash_signo;
static uintptr_t crash_addr;
static char out[CRASH_OUT_SIZE];
static size_t out_len;

long crash_debug_nr = -1;
static char crash_debug_kind[16];

static int gettid_raw(void)
{
	return (int)syscall(SYS_gettid);
}

/* Writes all of buf to the crash file and, unless fd_only, the log (async-signal-safe). */
static void emit(const char *buf, size_t len, bool fd_only)
{
	int fds[2] = { fd_only ? -1 : log_get_fd(), crash_fd };

	for (int i = 0; i < 2; i++) {
		size_t off = 0;

		if (fds[i] < 0 || (i == 1 && fds[1] == fds[0]))
			continue;
		while (off < len) {
			ssize_t n = write(fds[i], buf + off, len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
}

/* Appends to the report buffer (vsnprintf with integer and string formats only). */
__attribute__((format(printf, 1, 2))) static void outf(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (out_len >= sizeof(out) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out + out_len, sizeof(out) - out_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		out_len += (size_t)n < sizeof(out) - out_len ? (size_t)n :
							       sizeof(out) - out_len - 1;
}

static const char *signame(int sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGILL:
		return "SIGILL";
	case SIGFPE:
		return "SIGFPE";
	case SIGABRT:
		return "SIGABRT";
	default:
		return "signal";
	}
}

/* Walks the calling thread's stack into s, starting at the context a signal interrupted. */
static void walk(struct crash_slot *s, ucontext_t *uc)
{
	unw_cursor_t cur;
	int n = 0;

	if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
		do {
			unw_word_t ip = 0;

			if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
				break;
			s->frames[n++] = (uintptr_t)ip;
		} while (n < CRASH_MAX_FRAMES && unw_step(&cur) > 0);
	} else if (uc) {
		s->frames[n++] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	}
	s->nframes = n;
	s->sys = crash_current;
	s->sys.nr = __atomic_load_n(&crash_current.nr, __ATOMIC_RELAXED);
	prctl(PR_GET_NAME, s->name, 0, 0, 0);
}

static struct crash_slot *self_slot(void)
{
	if (my_slot)
		return my_slot;
	spare.tid = gettid_raw();
	return &spare;
}

static void park(void)
{
	for (;;)
		ppoll(NULL, 0, NULL, NULL);
}

/* CRASH_SIGNAL: another thread crashed; record where this one is, then wait to die with it. */
static void on_crash_signal(int sig, siginfo_t *si, void *uc)
{
	struct crash_slot *s = self_slot();

	if (si->si_code != SI_TKILL || si->si_pid != sentry_pid)
		return;
	walk(s, uc);
	__atomic_store_n(&s->state, SLOT_DONE, __ATOMIC_RELEASE);
	park();
}

/* The module holding pc, and pc's offset in it (from its load bias), or NULL. */
static const struct crash_module *module_of(uintptr_t pc, uintptr_t *off)
{
	for (int i = 0; i < nmodules; i++) {
		if (modules[i].start <= pc && pc < modules[i].end) {
			*off = pc - modules[i].bias;
			return &modules[i];
		}
	}
	*off = pc;
	return NULL;
}

static void print_syscall(const struct crash_slot *s)
{
	const char *name = NULL;

	if (s->sys.nr < 0) {
		outf("  guest call: none\n");
		return;
	}
	if (syscall_name_of)
		name = syscall_name_of(s->sys.nr);
	outf("  guest call: %s (nr %ld) by guest tid %d, args 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx "
	     "0x%llx\n",
	     name ? name : "?", s->sys.nr, (int)s->sys.tid, (unsigned long long)s->sys.args[0],
	     (unsigned long long)s->sys.args[1], (unsigned long long)s->sys.args[2],
	     (unsigned long long)s->sys.args[3], (unsigned long long)s->sys.args[4],
	     (unsigned long long)s->sys.args[5]);
}

static void print_thread_head(const struct crash_slot *s, bool crashed)
{
	outf("thread %d (%s)%s:\n", s->tid, s->name[0] ? s->name : "?",
	     crashed ? " [crashed]" : "");
	print_syscall(s);
}

/*
 * One thread's frames: absolute address and module+offset. runtime/crashsym.c parses these
 * lines ("  #N  0xADDR ..."): keep the two in step.
 */
static void print_raw(const struct crash_slot *s, bool crashed)
{
	print_thread_head(s, crashed);
	for (int i = 0; i < s->nframes; i++) {
		uintptr_t off;
		const struct crash_module *m = module_of(s->frames[i], &off);

		outf("  #%-2d 0x%016lx %s+0x%lx\n", i, (unsigned long)s->frames[i],
		     m ? m->path : "?", (unsigned long)off);
	}
}

static bool slot_reported(const struct crash_slot *s)
{
	int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

	return s->tid && (st == SLOT_DONE || st == SLOT_ASKED);
}

/*
 * Writes the whole raw report. runtime/crashsym.c parses its "module" and frame lines: keep
 * the two in step.
 */
static void report(struct crash_slot *own, int nthreads, int nanswered)
{
	out_len = 0;
	outf("husk-sentry: CRASH: %s (signal %d)", signame(crash_signo), crash_signo);
	if (crash_signo != SIGABRT)
		outf(" at address 0x%lx", (unsigned long)crash_addr);
	outf(" in thread %d; %d threads, %d answered\n", own->tid, nthreads, nanswered);
	for (int i = 0; i < nmodules; i++)
		outf("module %s bias 0x%lx range 0x%lx-0x%lx build-id %s\n", modules[i].path,
		     (unsigned long)modules[i].bias, (unsigned long)modules[i].start,
		     (unsigned long)modules[i].end,
		     modules[i].build_id[0] ? modules[i].build_id : "none");
	print_raw(own, true);
	for (int i = 0; i < CRASH_MAX_THREADS; i++) {
		struct crash_slot *s = &slots[i];

		if (s == own || !slot_reported(s))
			continue;
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_DONE) {
			outf("thread %d: did not answer (its signals blocked?)\n", s->tid);
			continue;
		}
		print_raw(s, false);
	}
	if (&spare != own && spare.tid && spare.nframes)
		print_raw(&spare, false);
	outf("husk-sentry: end of crash report\n");
	emit(out, out_len, crash_fd_only);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Dies of sig: the default action, re-raised (a fault returns to the faulting instruction). */
static void die_of(int sig)
{
	sigset_t set;

	signal(sig, SIG_DFL);
	syscall(SYS_tgkill, sentry_pid, gettid_raw(), sig);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	_exit(128 + sig);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	int self = gettid_raw(), expected = 0;
	struct crash_slot *own;
	struct timespec t0;
	int nthreads = 0, nanswered = 0;

	/* A process forked from the sentry (a stub before its own handlers): no report. */
	if ((pid_t)syscall(SYS_getpid) != sentry_pid) {
		signal(sig, SIG_DFL);
		return;
	}
	if (!__atomic_compare_exchange_n(&crash_owner, &expected, self, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		static const char msg[] = "husk-sentry: crashed again inside the crash report\n";

		if (expected == self) {
			emit(msg, sizeof(msg) - 1, false);
			die_of(sig);
		}
		/* Another thread owns the crash: be one of the threads it reports. */
		own = self_slot();
		walk(own, uc);
		__atomic_store_n(&own->state, SLOT_DONE, __ATOMIC_RELEASE);
		park();
	}
	crash_signo = sig;
	crash_addr = (uintptr_t)si->si_addr;
	own = self_slot();
	walk(own, uc);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < CRASH_MAX_THREADS; i++) {
		struct crash_slot *s = &slots[i];
		int tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);

		if (!tid || s == own)
			continue;
		int live = SLOT_LIVE;

		nthreads++;
		/* A thread that crashed too has recorded itself (SLOT_DONE) and parked. */
		if (!__atomic_compare_exchange_n(&s->state, &live, SLOT_ASKED, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		if (syscall(SYS_tgkill, sentry_pid, tid, CRASH_SIGNAL) < 0)
			s->tid = 0; /* it has just exited */
	}
	/* Bounded: a thread with CRASH_SIGNAL blocked never answers. */
	for (;;) {
		struct timespec ms = { 0, 1000000 };
		int pending = 0;

		nanswered = 0;
		for (int i = 0; i < CRASH_MAX_THREADS; i++) {
			int st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);

			if (&slots[i] == own || !slots[i].tid)
				continue;
			if (st == SLOT_ASKED)
				pending++;
			else if (st == SLOT_DONE)
				nanswered++;
		}
		if (!pending || ms_since(&t0) > CRASH_WAIT_MS)
			break;
		nanosleep(&ms, NULL);
	}
	nthreads++; /* this one */
	report(own, nthreads, nanswered);
	die_of(sig);
}

void *crash_thread_enter(void)
{
	stack_t ss = { .ss_size = CRASH_ALTSTACK_SIZE };
	int tid = gettid_raw();
	sigset_t set;

	/* Threads made with every signal blocked (timer, hostpoll) still answer the crash. */
	sigemptyset(&set);
	sigaddset(&set, CRASH_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	ss.ss_sp = mmap(NULL, CRASH_ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ss.ss_sp == MAP_FAILED)
		ss.ss_sp = NULL;
	else if (sigaltstack(&ss, NULL) < 0) {
		munmap(ss.ss_sp, CRASH_ALTSTACK_SIZE);
		ss.ss_sp = NULL;
	}
	for (int i = 0; i < CRASH_MAX_THREADS; i++) {
		int expected = 0;

		if (__atomic_load_n(&slots[i].tid, __ATOMIC_RELAXED))
			continue;
		/* Claimed with a CAS: threads start concurrently. */
		if (__atomic_compare_exchange_n(&slots[i].tid, &expected, tid, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			slots[i].state = SLOT_LIVE;
			my_slot = &slots[i];
			break;
		}
	}
	return ss.ss_sp;
}

void crash_thread_leave(void *token)
{
	if (my_slot) {
		/* A crash in progress reports this thread: stay registered (it dies anyway). */
		if (__atomic_load_n(&crash_owner, __ATOMIC_ACQUIRE))
			park();
		my_slot->state = SLOT_FREE;
		__atomic_store_n(&my_slot->tid, 0, __ATOMIC_RELEASE);
		my_slot = NULL;
	}
	if (token) {
		stack_t ss = { .ss_flags = SS_DISABLE };

		sigaltstack(&ss, NULL);
		munmap(token, CRASH_ALTSTACK_SIZE);
	}
}

/* The hex build-id of a loaded object, from its PT_NOTE segments in memory, into m. */
static void module_build_id(struct crash_module *m, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr),
			   *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const unsigned char *desc;
			size_t namesz = (nh->n_namesz + 3) & ~3u, descsz = (nh->n_descsz + 3) & ~3u;

			desc = (const unsigned char *)p + sizeof(*nh) + namesz;
			if ((const char *)desc + descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4) &&
			    nh->n_descsz <= CRASH_BUILD_ID_MAX) {
				for (size_t j = 0; j < nh->n_descsz; j++)
					snprintf(m->build_id + 2 * j, 3, "%02x", desc[j]);
				return;
			}
			p = (const char *)desc + descsz;
		}
	}
}

/* dl_iterate_phdr's callback: records one loaded object (path, bias, range, build-id). */
static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct crash_module *m;
	const char *path = info->dlpi_name;

	if (nmodules >= CRASH_MAX_MODULES)
		return 1;
	if (!path || !path[0]) {
		/* The executable itself: the first object, named "". */
		if (nmodules > 0)
			return 0;
		path = NULL;
	} else if (strstr(path, "linux-vdso")) {
		return 0;
	}
	m = &modules[nmodules];
	if (!path) {
		/* Before confinement: /proc/self/exe still names the host's file. */
		ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);

		if (n <= 0)
			return 0;
		m->path[n] = 0;
	} else {
		snprintf(m->path, sizeof(m->path), "%s", path);
	}
	m->bias = (uintptr_t)info->dlpi_addr;
	m->start = UINTPTR_MAX;
	m->end = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = m->bias + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (a < m->start)
			m->start = a;
		if (a + ph->p_memsz > m->end)
			m->end = a + ph->p_memsz;
	}
	if (m->start >= m->end)
		return 0;
	module_build_id(m, info);
	nmodules++;
	return 0;
}

void crash_debug_init(void)
{
	const char *v = getenv("HUSK_DEBUG_CRASH");
	char name[64];
	const char *colon;
	size_t n;

	if (!v || !*v || !syscall_name_of)
		return;
	colon = strchr(v, ':');
	n = colon ? (size_t)(colon - v) : strlen(v);
	if (n >= sizeof(name))
		return;
	memcpy(name, v, n);
	name[n] = 0;
	snprintf(crash_debug_kind, sizeof(crash_debug_kind), "%s", colon ? colon + 1 : "segv");
	for (long nr = 0; nr < 1024; nr++) {
		const char *s = syscall_name_of(nr);

		if (s && !strcmp(s, name)) {
			crash_debug_nr = nr;
			log_warn("HUSK_DEBUG_CRASH: the first guest %s crashes the sentry (%s)",
				 name, crash_debug_kind);
			return;
		}
	}
	log_warn("HUSK_DEBUG_CRASH: no system call named %s", name);
}

/* Kept out of line and named, so that the report's first frame names it. */
__attribute__((noinline)) static void crash_debug_segv(void)
{
	static int *volatile null; /* NULL, which the compiler cannot see */

	*null = 42;
}

void crash_debug_fire(long nr)
{
	crash_debug_nr = -2; /* once */
	if (!strcmp(crash_debug_kind, "abort"))
		abort();
	if (!strcmp(crash_debug_kind, "assert")) {
		extern void __assert_fail(const char *, const char *, unsigned int, const char *);

		__assert_fail("HUSK_DEBUG_CRASH", __FILE__, __LINE__, __func__);
	}
	crash_debug_segv();
}

int crash_init(const char *(*name_of)(long nr), int report_fd, bool report_fd_only)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct sigaction sa = { .sa_sigaction = on_fatal, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	stack_t ss = { .ss_size = CRASH_ALTSTACK_SIZE };

	sentry_pid = getpid();
	syscall_name_of = name_of;
	crash_fd = report_fd;
	crash_fd_only = report_fd >= 0 && report_fd_only;
	/* Nothing cached, nothing locked: libunwind's local walk is then async-signal-safe. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_NONE);
	/* The module list, from memory (dl_iterate_phdr takes the loader's lock: not at a crash). */
	dl_iterate_phdr(add_module, NULL);
	ss.ss_sp = mmap(NULL, CRASH_ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ss.ss_sp == MAP_FAILED)
		return -errno;
	if (sigaltstack(&ss, NULL) < 0)
		return -errno;
	my_slot = &slots[0];
	slots[0].tid = gettid_raw();
	slots[0].state = SLOT_LIVE;
	/* Every other signal is held while the report is written; a second fault nests. */
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigdelset(&sa.sa_mask, fatal[i]);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
		if (sigaction(fatal[i], &sa, NULL) < 0)
			return -errno;
	}
	sa.sa_sigaction = on_crash_signal;
	sigfillset(&sa.sa_mask);
	if (sigaction(CRASH_SIGNAL, &sa, NULL) < 0)
		return -errno;
	return 0;
}
