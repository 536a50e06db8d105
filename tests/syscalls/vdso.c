/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vDSO: AT_SYSINFO_EHDR names a valid ELF image exporting Linux's functions under
 * LINUX_2.6; its clock_gettime (called directly, not through libc) read interleaved with the
 * clock_gettime system call never goes backwards and agrees with it for every clock it serves,
 * also between threads; gettimeofday, time and clock_getres agree with the calls; getcpu gives
 * a CPU the thread may run on (also after the thread pins itself); /proc/self/maps shows [vdso] and [vvar]; the time
 * page cannot be made writable; a forked child has a working vDSO, and its copy-on-write
 * changes to the image stay its own; munmap and mremap of [vdso] behave as on Linux.
 */
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

/* A generous bound for a trapped call on a busy machine: the clocks must agree within it. */
#define AGREE_NS (5LL * 1000000000LL)
#define ROUNDS 2000

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);
typedef int (*getcpu_fn)(unsigned int *, unsigned int *, void *);

/* The vDSO as this program found it. */
struct vdso {
	uintptr_t base; /* AT_SYSINFO_EHDR */
	uintptr_t load; /* added to the image's addresses */
	const Elf64_Sym *symtab;
	const char *strtab;
	const Elf64_Versym *versym;
	const Elf64_Verdef *verdef;
	uint32_t nsyms;
};

static struct vdso vd;

/* Reads the dynamic section of the image at vd.base. Returns false when it is not usable. */
static bool vdso_parse(void)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)vd.base;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL;
	const uint32_t *hash = NULL;
	bool have_load = false;

	CHECK(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0, "no ELF magic at AT_SYSINFO_EHDR");
	CHECK(eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_ident[EI_DATA] == ELFDATA2LSB,
	      "class %d data %d", eh->e_ident[EI_CLASS], eh->e_ident[EI_DATA]);
	CHECK(eh->e_type == ET_DYN && eh->e_machine == EM_X86_64, "type %d machine %d", eh->e_type,
	      eh->e_machine);
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_phentsize != sizeof(Elf64_Phdr))
		return false;
	ph = (const Elf64_Phdr *)(vd.base + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_load) {
			vd.load = vd.base + ph[i].p_offset - ph[i].p_vaddr;
			have_load = true;
		}
	}
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC && have_load)
			dyn = (const Elf64_Dyn *)(vd.load + ph[i].p_vaddr);
	CHECK(have_load && dyn, "PT_LOAD %d, PT_DYNAMIC %p", have_load, (const void *)dyn);
	if (!dyn)
		return false;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = vd.load + dyn->d_un.d_ptr;

		switch (dyn->d_tag) {
		case DT_SYMTAB:
			vd.symtab = (const Elf64_Sym *)p;
			break;
		case DT_STRTAB:
			vd.strtab = (const char *)p;
			break;
		case DT_HASH:
			hash = (const uint32_t *)p;
			break;
		case DT_VERSYM:
			vd.versym = (const Elf64_Versym *)p;
			break;
		case DT_VERDEF:
			vd.verdef = (const Elf64_Verdef *)p;
			break;
		case DT_REL:
		case DT_RELA:
		case DT_TEXTREL:
		case DT_JMPREL:
			CHECK(0, "the image asks for relocations (tag %ld)", (long)dyn->d_tag);
			break;
		}
	}
	CHECK(vd.symtab && vd.strtab && hash && vd.versym && vd.verdef,
	      "symtab %p strtab %p hash %p versym %p verdef %p", (const void *)vd.symtab,
	      (const void *)vd.strtab, (const void *)hash, (const void *)vd.versym,
	      (const void *)vd.verdef);
	if (!vd.symtab || !vd.strtab || !hash || !vd.versym || !vd.verdef)
		return false;
	vd.nsyms = hash[1]; /* nchain: one per symbol */
	return true;
}

/* The name of version index idx in the image's version definitions, or NULL. */
static const char *version_name(uint16_t idx)
{
	const Elf64_Verdef *d = vd.verdef;

	for (;;) {
		if ((d->vd_ndx & 0x7fff) == (idx & 0x7fff) && !(d->vd_flags & VER_FLG_BASE)) {
			const Elf64_Verdaux *a =
				(const Elf64_Verdaux *)((const char *)d + d->vd_aux);

			return vd.strtab + a->vda_name;
		}
		if (!d->vd_next)
			return NULL;
		d = (const Elf64_Verdef *)((const char *)d + d->vd_next);
	}
}

/* The address of the defined function name@LINUX_2.6, or NULL (with a failed check). */
static void *vdso_sym(const char *name)
{
	for (uint32_t i = 1; i < vd.nsyms; i++) {
		const Elf64_Sym *s = &vd.symtab[i];
		const char *ver;

		if (strcmp(vd.strtab + s->st_name, name))
			continue;
		ver = version_name(vd.versym[i]);
		CHECK(ELF64_ST_TYPE(s->st_info) == STT_FUNC && s->st_shndx != SHN_UNDEF,
		      "%s: type %d section %d", name, ELF64_ST_TYPE(s->st_info), s->st_shndx);
		CHECK(ver && !strcmp(ver, "LINUX_2.6"), "%s: version %s", name,
		      ver ? ver : "(none)");
		return (void *)(vd.load + s->st_value);
	}
	CHECK(0, "%s: not in the vDSO", name);
	return NULL;
}

static clock_gettime_fn v_clock_gettime, v_clock_getres;
static gettimeofday_fn v_gettimeofday;
static time_fn v_time;
static getcpu_fn v_getcpu;

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static void find_symbols(void)
{
	static const char *const aliases[] = { "clock_gettime", "gettimeofday", "time",
					       "clock_getres", "getcpu" };

	v_clock_gettime = (clock_gettime_fn)vdso_sym("__vdso_clock_gettime");
	v_gettimeofday = (gettimeofday_fn)vdso_sym("__vdso_gettimeofday");
	v_time = (time_fn)vdso_sym("__vdso_time");
	v_clock_getres = (clock_gettime_fn)vdso_sym("__vdso_clock_getres");
	v_getcpu = (getcpu_fn)vdso_sym("__vdso_getcpu");
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		vdso_sym(aliases[i]);
}

static const struct {
	clockid_t id;
	const char *name;
} clocks[] = {
	{ CLOCK_REALTIME, "REALTIME" },
	{ CLOCK_MONOTONIC, "MONOTONIC" },
	{ CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW" },
	{ CLOCK_REALTIME_COARSE, "REALTIME_COARSE" },
	{ CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE" },
	{ CLOCK_BOOTTIME, "BOOTTIME" },
	{ CLOCK_TAI, "TAI" },
};

/* vDSO, system call, vDSO, ... on one clock: never backwards, and close to each other. */
static void interleaved(clockid_t id, const char *name)
{
	struct timespec ts;
	int64_t prev = INT64_MIN, worst_back = 0, worst_gap = 0;
	int errors = 0;

	for (int i = 0; i < ROUNDS; i++) {
		int64_t v, s;

		errors += v_clock_gettime(id, &ts) != 0;
		v = ts_ns(&ts);
		errors += syscall(SYS_clock_gettime, id, &ts) != 0;
		s = ts_ns(&ts);
		if (prev != INT64_MIN && v < prev && prev - v > worst_back)
			worst_back = prev - v;
		if (s < v && v - s > worst_back)
			worst_back = v - s;
		if (s - v > worst_gap)
			worst_gap = s - v;
		prev = s;
	}
	CHECK(errors == 0, "%s: %d reads failed", name, errors);
	CHECK(worst_back == 0, "%s: went back by %lld ns between vDSO and system call reads", name,
	      (long long)worst_back);
	CHECK(worst_gap < AGREE_NS, "%s: a system call read %lld ns after the vDSO's", name,
	      (long long)worst_gap);
}

static void clocks_agree(void)
{
	struct timespec a, b, r1, r2;

	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		interleaved(clocks[i].id, clocks[i].name);
		/* clock_getres: the same as the call's. */
		CHECK_RET(v_clock_getres(clocks[i].id, &a), 0);
		CHECK_RET(syscall(SYS_clock_getres, clocks[i].id, &b), 0);
		CHECK(a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec,
		      "%s: vDSO resolution %ld.%09ld, system call %ld.%09ld", clocks[i].name,
		      (long)a.tv_sec, a.tv_nsec, (long)b.tv_sec, b.tv_nsec);
	}
	/* Clocks the vDSO does not serve go to the kernel: CPU time, and errors as -errno. */
	CHECK_RET(v_clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a), 0);
	CHECK(ts_ns(&a) > 0, "process CPU time %lld", (long long)ts_ns(&a));
	CHECK_RET(v_clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a), 0);
	CHECK_RET(v_clock_gettime(12345, &a), -EINVAL);
	CHECK_RET(v_clock_getres(12345, &a), -EINVAL);
	CHECK_RET(v_clock_getres(CLOCK_MONOTONIC, NULL), 0);

	/* libc's clock_gettime is the vDSO's or the call: it agrees too. */
	CHECK_RET(v_clock_gettime(CLOCK_MONOTONIC, &r1), 0);
	CHECK_RET(clock_gettime(CLOCK_MONOTONIC, &a), 0);
	CHECK_RET(v_clock_gettime(CLOCK_MONOTONIC, &r2), 0);
	CHECK(ts_ns(&r1) <= ts_ns(&a) && ts_ns(&a) <= ts_ns(&r2), "libc's read is out of order");
}

/*
 * Threads on different CPUs: a read that starts after another thread's read ended is not
 * earlier (the TSCs of the CPUs agree, and each thread also mixes in system calls).
 */
static int64_t shared_last;
static int shared_back;

static void *reader(void *arg)
{
	struct timespec ts;

	for (int i = 0; i < 20 * ROUNDS; i++) {
		int64_t seen = __atomic_load_n(&shared_last, __ATOMIC_ACQUIRE), v, cur;

		if (i % 16 == 0)
			syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
		else
			v_clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ts_ns(&ts);
		if (v < seen)
			__atomic_fetch_add(&shared_back, 1, __ATOMIC_RELAXED);
		cur = __atomic_load_n(&shared_last, __ATOMIC_RELAXED);
		while (cur < v && !__atomic_compare_exchange_n(&shared_last, &cur, v, false,
							       __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			;
	}
	return NULL;
}

static void threads(void)
{
	pthread_t th[3];
	int n = 0;

	for (int i = 0; i < 3; i++)
		n += pthread_create(&th[i], NULL, reader, NULL) == 0;
	CHECK(n == 3, "pthread_create");
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	CHECK(shared_back == 0, "%d reads earlier than one another thread had finished",
	      shared_back);
}

static void wall_clock(void)
{
	struct timespec r1, r2;
	struct timeval tv, stv;
	struct timezone tz = { -1, -1 };
	time_t t = 0, t2;
	int bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		int64_t us;

		v_clock_gettime(CLOCK_REALTIME, &r1);
		v_gettimeofday(&tv, NULL);
		syscall(SYS_gettimeofday, &stv, NULL);
		v_clock_gettime(CLOCK_REALTIME, &r2);
		us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
		bad += us < ts_ns(&r1) / 1000 || us > ts_ns(&r2) / 1000;
		bad += tv.tv_usec < 0 || tv.tv_usec >= 1000000;
		us = (int64_t)stv.tv_sec * 1000000 + stv.tv_usec;
		bad += us < ts_ns(&r1) / 1000 || us > ts_ns(&r2) / 1000;
	}
	CHECK(bad == 0, "%d gettimeofday reads outside the clock_gettime(REALTIME) around them",
	      bad);
	CHECK_RET(v_gettimeofday(&tv, &tz), 0);
	CHECK(tz.tz_minuteswest != -1 && tz.tz_dsttime != -1, "timezone not written");
	CHECK_RET(v_gettimeofday(NULL, NULL), 0);

	bad = 0;
	for (int i = 0; i < ROUNDS; i++) {
		v_clock_gettime(CLOCK_REALTIME, &r1);
		t = v_time(&t2);
		v_clock_gettime(CLOCK_REALTIME, &r2);
		/* Linux's time() is the tick's second: it may trail the fine clock by a tick. */
		bad += t != t2 || t < r1.tv_sec - 1 || t > r2.tv_sec;
	}
	CHECK(bad == 0, "%d time() reads outside the clock_gettime(REALTIME) around them", bad);
	CHECK(v_time(NULL) > 0, "time(NULL)");
}

static void cpus(void)
{
	cpu_set_t set;
	unsigned int cpu = 0xdeadbeef, node = 0xdeadbeef, first = 0;

	CHECK_RET(sched_getaffinity(0, sizeof(set), &set), 0);
	CHECK_RET(v_getcpu(&cpu, &node, NULL), 0);
	CHECK(cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set), "vDSO getcpu: cpu %u not allowed", cpu);
	CHECK(node != 0xdeadbeef, "vDSO getcpu: node not written");
	CHECK_RET(v_getcpu(NULL, NULL, NULL), 0);
	/* Pinned to one CPU, the thread is there (and the vDSO says so). */
	while (first < CPU_SETSIZE && !CPU_ISSET(first, &set))
		first++;
	CPU_ZERO(&set);
	CPU_SET(first, &set);
	CHECK_RET(sched_setaffinity(0, sizeof(set), &set), 0);
	for (int i = 0; i < 100; i++) {
		cpu = 0xdeadbeef;
		v_getcpu(&cpu, NULL, NULL);
		if (cpu != first)
			break;
	}
	CHECK(cpu == first, "pinned to cpu %u, the vDSO says %u", first, cpu);
}

/* The lines of /proc/self/maps named name: how many, and the first one's range and mode. */
static int maps_find(const char *name, uintptr_t *start, uintptr_t *end, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char p[5], *nl = strchr(line, '\n'), *label;

		if (nl)
			*nl = 0;
		label = strrchr(line, ' ');
		if (!label || strcmp(label + 1, name))
			continue;
		if (n++ == 0 && sscanf(line, "%lx-%lx %4s", &s, &e, p) == 3) {
			*start = s;
			*end = e;
			memcpy(perms, p, 5);
		}
	}
	fclose(f);
	return n;
}

static void maps(void)
{
	uintptr_t s = 0, e = 0, vs = 0, ve = 0;
	char p[5] = "", vp[5] = "";

	CHECK_RET(maps_find("[vdso]", &s, &e, p), 1);
	CHECK(s == vd.base, "[vdso] at %#lx, AT_SYSINFO_EHDR %#lx", (unsigned long)s,
	      (unsigned long)vd.base);
	CHECK(!strcmp(p, "r-xp"), "[vdso] is %s", p);
	CHECK_RET(maps_find("[vvar]", &vs, &ve, vp), 1);
	CHECK(!strncmp(vp, "r--", 3), "[vvar] is %s", vp);
	/* Linux cannot make the time page writable (no VM_MAYWRITE). */
	CHECK_ERR(mprotect((void *)vs, ve - vs, PROT_READ | PROT_WRITE), EACCES);
	CHECK_ERR(madvise((void *)vs, ve - vs, MADV_REMOVE), EINVAL);
	/* Nor can a debugger's forced write (/proc/PID/mem, PTRACE_POKEDATA): Linux says EIO. */
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	uint64_t word = 0x5a5a5a5a5a5a5a5aULL;

	CHECK(fd >= 0, "/proc/self/mem: %s", strerror(errno));
	if (fd >= 0) {
		CHECK_ERR(pwrite(fd, &word, sizeof(word), (off_t)vs), EIO);
		close(fd);
	}
	CHECK(*(volatile uint64_t *)vs != word, "the time page was written");
}

static void forked_reads(void *arg)
{
	struct timespec a, b;
	uintptr_t s = 0, e = 0;
	char p[5];

	CHECK(getauxval(AT_SYSINFO_EHDR) == vd.base, "the child's AT_SYSINFO_EHDR moved");
	CHECK_RET(maps_find("[vdso]", &s, &e, p), 1);
	CHECK_RET(v_clock_gettime(CLOCK_MONOTONIC, &a), 0);
	CHECK_RET(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b), 0);
	CHECK(ts_ns(&a) <= ts_ns(&b), "the child's vDSO is ahead of the call");
	/* A debugger's write to the image is the child's own (copy-on-write). */
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	char c = 'Y';

	CHECK(fd >= 0, "/proc/self/mem: %s", strerror(errno));
	if (fd >= 0) {
		CHECK_RET(pwrite(fd, &c, 1, (off_t)(vd.base + EI_PAD + 2)), 1);
		close(fd);
	}
	CHECK(((volatile char *)vd.base)[EI_PAD + 2] == 'Y', "the forced write did not land");
	/* A write to the image after mprotect is the child's own (copy-on-write). */
	CHECK_RET(mprotect((void *)vd.base, e - s, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
	((volatile char *)vd.base)[EI_PAD + 1] = 'X';
	CHECK(((volatile char *)vd.base)[EI_PAD + 1] == 'X', "the write did not land");
	CHECK_RET(v_clock_gettime(CLOCK_MONOTONIC, &a), 0);
}

static void unmapped(void *arg)
{
	uintptr_t s = 0, e = 0;
	char p[5];
	struct timespec ts;

	CHECK_RET(maps_find("[vdso]", &s, &e, p), 1);
	CHECK_RET(munmap((void *)s, e - s), 0);
	CHECK_RET(maps_find("[vdso]", &s, &e, p), 0);
	CHECK_RET(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts), 0);
}

static void moved(void *arg)
{
	uintptr_t s = 0, e = 0, vs = 0, ve = 0, ns = 0, ne = 0;
	char p[5];
	void *to, *r;

	CHECK_RET(maps_find("[vdso]", &s, &e, p), 1);
	CHECK_RET(maps_find("[vvar]", &vs, &ve, p), 1);
	/* Growing is refused (VM_DONTEXPAND); moving is allowed (CRIU moves it). */
	CHECK_ERR(mremap((void *)s, e - s, e - s + 4096, MREMAP_MAYMOVE), EFAULT);
	to = mmap(NULL, e - s, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(to != MAP_FAILED, "mmap: %s", strerror(errno));
	if (to == MAP_FAILED)
		return;
	r = mremap((void *)s, e - s, e - s, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	CHECK(r == to, "mremap of [vdso]: %p (%s)", r, r == MAP_FAILED ? strerror(errno) : "");
	CHECK_RET(maps_find("[vdso]", &ns, &ne, p), 1);
	CHECK(ns == (uintptr_t)to && ne - ns == e - s, "[vdso] at %#lx after the move",
	      (unsigned long)ns);
}

int main(void)
{
	struct timespec a;
	int st;

	vd.base = getauxval(AT_SYSINFO_EHDR);
	CHECK(vd.base != 0 && vd.base % 4096 == 0, "AT_SYSINFO_EHDR %#lx", (unsigned long)vd.base);
	if (!vd.base || !vdso_parse())
		return finish();
	find_symbols();
	if (!v_clock_gettime || !v_gettimeofday || !v_time || !v_clock_getres || !v_getcpu)
		return finish();

	clocks_agree();
	threads();
	wall_clock();
	maps();
	st = in_child(forked_reads, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "forked child: status %#x", st);
	/* The child's write stayed in the child. */
	CHECK(((volatile char *)vd.base)[EI_PAD + 1] != 'X' &&
		      ((volatile char *)vd.base)[EI_PAD + 2] != 'Y',
	      "the child's write reached the parent");
	CHECK_RET(v_clock_gettime(CLOCK_MONOTONIC, &a), 0);
	st = in_child(unmapped, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unmapping child: status %#x", st);
	st = in_child(moved, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "moving child: status %#x", st);
	/* Last: pinning makes husk's vDSO getcpu ask the sentry from then on. */
	cpus();
	return finish();
}
