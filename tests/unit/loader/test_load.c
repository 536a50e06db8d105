/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_load() over the fake VFS and mm of fake_env.c: real binaries of this machine
 * (/bin/true with ld.so, a static and a static-PIE program) and synthetic ELF images built
 * here, then `#!` scripts and the error cases. Every test also checks that no file is left
 * open.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/util.h"
#include "fake_env.h"
#include "include/abi/linux/auxv.h"
#include "sentry/kernel/task.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/mm.h"

#define LDSO "/lib64/ld-linux-x86-64.so.2"
#define HOST_LDSO "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

static struct thread_group tg;
static struct task task;
static struct mm mm;

static void setup(void)
{
	fake_reset();
	memset(&tg, 0, sizeof(tg));
	memset(&task, 0, sizeof(task));
	memset(&mm, 0, sizeof(mm));
	pthread_mutex_init(&mm.lock, NULL);
	tg.rlimits[RLIMIT_STACK].rlim_cur = 8 << 20;
	tg.rlimits[RLIMIT_STACK].rlim_max = RLIM_INFINITY;
	task.tg = &tg;
	task.cred.uid = task.cred.euid = task.cred.suid = task.cred.fsuid = 1000;
	task.cred.gid = task.cred.egid = task.cred.sgid = task.cred.fsgid = 1000;
}

static void teardown(void)
{
	cr_assert_eq(fake_open_files(), 0, "loader_load left %d file(s) open", fake_open_files());
	fake_reset();
}

TestSuite(load, .init = setup, .fini = teardown);

static char *default_argv[] = { "prog", "arg1", NULL };
static char *default_envp[] = { "HOME=/root", "TERM=xterm", NULL };

/* Loads path into a fresh address space (the files stay). */
static int load(const char *path, char *const argv[], struct loader_result *res)
{
	fake_reset_memory();
	memset(&mm, 0, sizeof(mm));
	pthread_mutex_init(&mm.lock, NULL);
	return loader_load(&task, &mm, path, argv, default_envp, res);
}

static uint64_t peek64(uint64_t addr)
{
	uint64_t v;

	cr_assert(fake_peek(addr, &v, 8), "%#lx is not mapped", (unsigned long)addr);
	return v;
}

static const char *peek_str(uint64_t addr)
{
	static char buf[4096];

	for (size_t i = 0; i < sizeof(buf); i++) {
		cr_assert(fake_peek(addr + i, &buf[i], 1));
		if (!buf[i])
			return buf;
	}
	cr_assert_fail("unterminated string at %#lx", (unsigned long)addr);
	return NULL;
}

static uint64_t aux(uint64_t key)
{
	for (int i = 0; i + 1 < mm.auxv_len; i += 2)
		if (mm.auxv[i] == key)
			return mm.auxv[i + 1];
	cr_assert_fail("no auxv key %lu", (unsigned long)key);
	return 0;
}

/* The argv the guest sees, as a list of strings, compared with want. */
static void assert_guest_argv(const struct loader_result *res, const char *const *want)
{
	uint64_t argc = peek64(res->sp);
	size_t n = 0;

	while (want[n])
		n++;
	cr_assert_eq(argc, n, "argc %lu, want %zu", (unsigned long)argc, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(peek_str(peek64(res->sp + 8 + i * 8)), want[i], "argv[%zu]", i);
	cr_assert_eq(peek64(res->sp + 8 + n * 8), 0);
}

/* The auxv in guest memory (after envp's NULL) equals mm->auxv. */
static void assert_auxv_in_memory(const struct loader_result *res)
{
	uint64_t p = res->sp + 8 + (peek64(res->sp) + 1) * 8;

	while (peek64(p))
		p += 8;
	p += 8;
	/* The fakes have no vDSO: AT_SYSINFO_EHDR is left out. */
	cr_assert_eq(mm.auxv_len, LOADER_AUXV_WORDS - 2);
	for (int i = 0; i < mm.auxv_len; i++)
		cr_assert_eq(peek64(p + (uint64_t)i * 8), mm.auxv[i], "auxv word %d", i);
}

struct host_elf {
	uint8_t *buf;
	size_t len;
	Elf64_Ehdr *eh;
};

static struct host_elf read_host(const char *path)
{
	struct host_elf h;
	FILE *f = fopen(path, "rb");

	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	h.len = (size_t)ftell(f);
	rewind(f);
	h.buf = malloc(h.len);
	cr_assert_eq(fread(h.buf, 1, h.len, f), h.len);
	fclose(f);
	h.eh = (Elf64_Ehdr *)h.buf;
	return h;
}

static Elf64_Phdr *host_ph(struct host_elf *h, int i)
{
	return (Elf64_Phdr *)(h->buf + h->eh->e_phoff) + i;
}

static uint64_t host_max_end(struct host_elf *h)
{
	uint64_t hi = 0;

	for (int i = 0; i < h->eh->e_phnum; i++)
		if (host_ph(h, i)->p_type == PT_LOAD)
			hi = MAX(hi,
				 PAGE_ALIGN_UP(host_ph(h, i)->p_vaddr + host_ph(h, i)->p_memsz));
	return hi;
}

static int expected_prot(uint32_t f)
{
	return ((f & PF_R) ? PROT_READ : 0) | ((f & PF_W) ? PROT_WRITE : 0) |
	       ((f & PF_X) ? PROT_EXEC : 0);
}

/* Every PT_LOAD of h is in memory at bias: its file bytes, zeros up to p_memsz, its prot. */
static void assert_segments_loaded(struct host_elf *h, uint64_t bias)
{
	for (int i = 0; i < h->eh->e_phnum; i++) {
		Elf64_Phdr *ph = host_ph(h, i);
		uint8_t *mem;

		if (ph->p_type != PT_LOAD)
			continue;
		mem = malloc(ph->p_memsz);
		cr_assert(fake_peek(bias + ph->p_vaddr, mem, ph->p_memsz), "segment %d", i);
		cr_assert_eq(memcmp(mem, h->buf + ph->p_offset, ph->p_filesz), 0, "segment %d", i);
		for (uint64_t k = ph->p_filesz; k < ph->p_memsz; k++)
			cr_assert_eq(mem[k], 0, "bss byte %lu of segment %d", (unsigned long)k, i);
		for (uint64_t a = PAGE_ALIGN_DOWN(bias + ph->p_vaddr);
		     a < bias + ph->p_vaddr + ph->p_memsz; a += PAGE_SIZE)
			cr_assert_eq(fake_prot(a), expected_prot(ph->p_flags), "segment %d", i);
		free(mem);
	}
}

static void assert_stack(const struct loader_result *res, const char *execfn)
{
	uint64_t bottom = LOADER_STACK_TOP - LOADER_STACK_DEFAULT;

	cr_assert_eq(mm.stack_top, LOADER_STACK_TOP);
	cr_assert_eq(mm.mmap_base, LOADER_STACK_TOP - LOADER_MMAP_GAP);
	cr_assert_eq(res->sp % 16, 0);
	cr_assert(res->sp > bottom && res->sp < LOADER_STACK_TOP);
	cr_assert_eq(fake_prot(bottom), PROT_READ | PROT_WRITE);
	cr_assert_eq(fake_prot(LOADER_STACK_TOP - 1), PROT_READ | PROT_WRITE);
	cr_assert_eq(fake_prot(LOADER_STACK_TOP), -1);
	cr_assert_lt(LOADER_STACK_TOP, PLATFORM_GUEST_MAX);
	cr_assert_eq(fake_prot(bottom - 1), -1);
	cr_assert_str_eq(peek_str(aux(LINUX_AT_EXECFN)), execfn);
	cr_assert_str_eq(peek_str(aux(LINUX_AT_PLATFORM)), "x86_64");
	cr_assert_eq(aux(LINUX_AT_UID), 1000);
	cr_assert_eq(aux(LINUX_AT_EUID), 1000);
	cr_assert_eq(aux(LINUX_AT_PAGESZ), 4096);
	cr_assert_eq(mm.env_end, aux(LINUX_AT_EXECFN));
	cr_assert_str_eq(peek_str(mm.env_start), "HOME=/root");
	cr_assert_eq(mm.arg_start, peek64(res->sp + 8));
	assert_auxv_in_memory(res);
}

Test(load, bin_true_runs_with_its_interpreter)
{
	struct host_elf prog = read_host("/bin/true"), ld = read_host(HOST_LDSO);
	struct loader_result res;
	const char *want[] = { "prog", "arg1", NULL };
	uint64_t base, ibias, phdr_vaddr = 0;
	const struct fake_mmap_call *c;
	int n, reserve = -1;

	fake_add_host_file("/bin/true", "/bin/true");
	fake_add_host_file(LDSO, HOST_LDSO);
	cr_assert_eq(load("/bin/true", default_argv, &res), 0);

	/* The program at the PIE base, as Linux without ASLR puts it. */
	base = LOADER_PIE_BASE;
	assert_segments_loaded(&prog, base);
	for (int i = 0; i < prog.eh->e_phnum; i++)
		if (host_ph(&prog, i)->p_type == PT_PHDR)
			phdr_vaddr = host_ph(&prog, i)->p_vaddr;
	cr_assert_neq(phdr_vaddr, 0);
	cr_assert_eq(aux(LINUX_AT_PHDR), base + phdr_vaddr);
	cr_assert_eq(aux(LINUX_AT_PHNUM), prog.eh->e_phnum);
	cr_assert_eq(aux(LINUX_AT_PHENT), 56);
	cr_assert_eq(aux(LINUX_AT_ENTRY), base + prog.eh->e_entry);
	cr_assert_eq(mm.start_brk, base + host_max_end(&prog));
	cr_assert_eq(mm.brk, mm.start_brk);

	/* The interpreter below mmap_base, reserved first then mapped over. */
	ibias = aux(LINUX_AT_BASE);
	cr_assert(IS_PAGE_ALIGNED(ibias));
	cr_assert_leq(ibias + host_max_end(&ld), mm.mmap_base);
	cr_assert_gt(ibias, mm.mmap_base - (64 << 20));
	assert_segments_loaded(&ld, ibias);
	cr_assert_eq(res.entry, ibias + ld.eh->e_entry);
	c = fake_mmap_calls(&n);
	for (int i = 0; i < n; i++) {
		if (!(c[i].flags & (MAP_FIXED | MAP_FIXED_NOREPLACE))) {
			cr_assert_eq(reserve, -1, "one mapping without an address only");
			reserve = i;
			cr_assert_eq(c[i].prot, PROT_NONE);
			cr_assert_eq((uint64_t)c[i].ret, ibias);
		} else if (reserve >= 0) {
			cr_assert(c[i].flags & MAP_FIXED);
			cr_assert(c[i].addr >= ibias &&
				  c[i].addr + c[i].len <= ibias + c[reserve].len);
		}
		cr_assert_geq(c[i].ret, 0, "mmap call %d failed", i);
	}
	cr_assert_geq(reserve, 0);

	assert_guest_argv(&res, want);
	assert_stack(&res, "/bin/true");
	free(prog.buf);
	free(ld.buf);
}

Test(load, bss_tail_of_bin_true_is_zero_although_the_file_has_bytes_there)
{
	struct host_elf prog = read_host("/bin/true");
	struct loader_result res;
	Elf64_Phdr *last = NULL;
	uint64_t end, off;
	uint8_t page[PAGE_SIZE];
	bool file_nonzero = false;

	for (int i = 0; i < prog.eh->e_phnum; i++)
		if (host_ph(&prog, i)->p_type == PT_LOAD)
			last = host_ph(&prog, i);
	cr_assert(last && last->p_memsz > last->p_filesz);
	end = LOADER_PIE_BASE + last->p_vaddr + last->p_filesz;
	off = last->p_offset + last->p_filesz;
	/* Precondition: the file goes on with non-zero bytes in that page. */
	for (uint64_t k = off; k < MIN(prog.len, PAGE_ALIGN_UP(off)); k++)
		file_nonzero |= prog.buf[k] != 0;
	cr_assert(file_nonzero);

	fake_add_host_file("/bin/true", "/bin/true");
	fake_add_host_file(LDSO, HOST_LDSO);
	cr_assert_eq(load("/bin/true", default_argv, &res), 0);
	cr_assert(fake_peek(end, page, PAGE_ALIGN_UP(end) - end));
	for (uint64_t k = 0; k < PAGE_ALIGN_UP(end) - end; k++)
		cr_assert_eq(page[k], 0, "byte %lu after p_filesz", (unsigned long)k);
	free(prog.buf);
}

Test(load, static_binary_at_its_own_addresses)
{
	const char *path = getenv("HUSK_TEST_STATIC");
	struct loader_result res;
	struct host_elf prog;
	const char *want[] = { "prog", "arg1", NULL };
	const struct fake_mmap_call *c;
	int n;

	if (!path || !*path)
		cr_skip_test("no static binary: libc.a is not installed (libc6-dev)");
	prog = read_host(path);
	cr_assert_eq(prog.eh->e_type, ET_EXEC);
	fake_add_host_file("/static", path);
	cr_assert_eq(load("/static", default_argv, &res), 0);
	assert_segments_loaded(&prog, 0);
	cr_assert_eq(res.entry, prog.eh->e_entry);
	cr_assert_eq(aux(LINUX_AT_ENTRY), prog.eh->e_entry);
	cr_assert_eq(aux(LINUX_AT_BASE), 0);
	cr_assert_eq(mm.start_brk, host_max_end(&prog));
	c = fake_mmap_calls(&n);
	for (int i = 0; i < n; i++)
		cr_assert(c[i].flags & (MAP_FIXED | MAP_FIXED_NOREPLACE), "call %d has no address",
			  i);
	assert_guest_argv(&res, want);
	assert_stack(&res, "/static");
	free(prog.buf);
}

Test(load, static_pie_goes_below_mmap_base)
{
	const char *path = getenv("HUSK_TEST_STATIC_PIE");
	struct loader_result res;
	struct host_elf prog;
	uint64_t bias;

	if (!path || !*path)
		cr_skip_test("no static PIE: libc.a is not installed (libc6-dev)");
	prog = read_host(path);
	cr_assert_eq(prog.eh->e_type, ET_DYN);
	fake_add_host_file("/spie", path);
	cr_assert_eq(load("/spie", default_argv, &res), 0);
	bias = aux(LINUX_AT_ENTRY) - prog.eh->e_entry;
	cr_assert(IS_PAGE_ALIGNED(bias));
	cr_assert_leq(bias + host_max_end(&prog), mm.mmap_base);
	/* Not at the PIE base: a program without PT_INTERP is placed like an interpreter. */
	cr_assert_gt(bias, mm.mmap_base - (64 << 20));
	cr_assert_eq(aux(LINUX_AT_BASE), 0);
	cr_assert_eq(res.entry, aux(LINUX_AT_ENTRY));
	cr_assert_eq(mm.start_brk, bias + host_max_end(&prog));
	assert_segments_loaded(&prog, bias);
	free(prog.buf);
}

/* --- synthetic images --- */

struct seg {
	uint64_t vaddr, off, filesz, memsz;
	uint32_t flags;
	uint64_t align;
};

struct synth {
	uint16_t type;
	uint64_t entry;
	const struct seg *segs;
	int nseg;
	const char *interp; /* PT_INTERP string, NUL included, or NULL */
	uint64_t interp_off; /* 0: right after the program headers */
	bool interp_no_nul;
	uint64_t phoff; /* 0: 64 */
	size_t size; /* file size; 0: 0x3000 */
	bool exec_stack;
};

/* Builds an ELF file whose every byte outside the headers is non-zero. */
static uint8_t *build(const struct synth *s, size_t *len)
{
	size_t size = s->size ? s->size : 0x3000;
	uint64_t phoff = s->phoff ? s->phoff : 64;
	int nph = s->nseg + (s->interp ? 1 : 0) + 1;
	uint8_t *b = malloc(size);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	Elf64_Phdr *ph = (Elf64_Phdr *)(b + phoff);
	int k = 0;

	for (size_t i = 0; i < size; i++)
		b[i] = (uint8_t)(0x11 + i % 0xe0);
	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = s->type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = s->entry;
	eh->e_phoff = phoff;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (uint16_t)nph;
	cr_assert_leq(phoff + nph * sizeof(Elf64_Phdr), size);
	memset(ph, 0, nph * sizeof(*ph));
	if (s->interp) {
		size_t n = strlen(s->interp) + 1;
		uint64_t off = s->interp_off ? s->interp_off : phoff + nph * sizeof(Elf64_Phdr);

		memcpy(b + off, s->interp, n);
		if (s->interp_no_nul)
			b[off + n - 1] = '/';
		ph[k++] = (Elf64_Phdr){ .p_type = PT_INTERP,
					.p_flags = PF_R,
					.p_offset = off,
					.p_filesz = n,
					.p_memsz = n,
					.p_align = 1 };
	}
	for (int i = 0; i < s->nseg; i++)
		ph[k++] = (Elf64_Phdr){ .p_type = PT_LOAD,
					.p_flags = s->segs[i].flags,
					.p_offset = s->segs[i].off,
					.p_vaddr = s->segs[i].vaddr,
					.p_paddr = s->segs[i].vaddr,
					.p_filesz = s->segs[i].filesz,
					.p_memsz = s->segs[i].memsz,
					.p_align = s->segs[i].align ? s->segs[i].align : 0x1000 };
	ph[k++] = (Elf64_Phdr){ .p_type = PT_GNU_STACK,
				.p_flags = PF_R | PF_W | (s->exec_stack ? PF_X : 0),
				.p_align = 16 };
	*len = size;
	return b;
}

static void add_synth(const char *path, const struct synth *s, uint32_t mode)
{
	size_t len;
	uint8_t *b = build(s, &len);

	fake_add_file(path, b, len, S_IFREG | mode, 0, 0);
	free(b);
}

/* An ET_EXEC with text, data whose bss starts mid-page, and a pure-bss segment. */
static const struct seg exec_segs[] = {
	{ .vaddr = 0x400000, .off = 0, .filesz = 0x1234, .memsz = 0x1234, .flags = PF_R | PF_X },
	{ .vaddr = 0x602100, .off = 0x2100, .filesz = 0x345, .memsz = 0x2000, .flags = PF_R | PF_W },
	{ .vaddr = 0x700000, .off = 0, .filesz = 0, .memsz = 0x1800, .flags = PF_R | PF_W },
};

static const struct synth exec_image = {
	.type = ET_EXEC,
	.entry = 0x400100,
	.segs = exec_segs,
	.nseg = 3,
};

Test(load, synthetic_exec_segments_bss_and_brk)
{
	struct loader_result res;
	uint8_t buf[0x3000];
	size_t len;
	uint8_t *file = build(&exec_image, &len);

	add_synth("/x", &exec_image, 0755);
	cr_assert_eq(load("/x", default_argv, &res), 0);
	cr_assert_eq(res.entry, 0x400100);
	/* Text: file bytes, then what the file holds up to the page end (no bss: no zeroing). */
	cr_assert(fake_peek(0x400000, buf, 0x2000 - 0x1000));
	cr_assert_eq(memcmp(buf, file, 0x1000), 0);
	cr_assert_eq(fake_prot(0x400000), PROT_READ | PROT_EXEC);
	cr_assert_eq(fake_prot(0x401000), PROT_READ | PROT_EXEC);
	cr_assert_eq(fake_prot(0x402000), -1);
	/* Data: its page from the file, zeros from p_filesz on, anonymous pages after. */
	cr_assert(fake_peek(0x602000, buf, 0x2100));
	cr_assert_eq(memcmp(buf, file + 0x2000, 0x100 + 0x345), 0);
	for (size_t k = 0x100 + 0x345; k < 0x2100; k++)
		cr_assert_eq(buf[k], 0, "data byte %#zx", k);
	cr_assert_eq(fake_prot(0x603000), PROT_READ | PROT_WRITE);
	cr_assert_eq(fake_prot(0x605000), -1);
	/* Pure bss. */
	cr_assert(fake_peek(0x700000, buf, 0x2000));
	for (size_t k = 0; k < 0x2000; k++)
		cr_assert_eq(buf[k], 0);
	cr_assert_eq(mm.start_brk, 0x702000);
	cr_assert_eq(aux(LINUX_AT_PHDR), 0x400000 + 64);
	free(file);
}

Test(load, phdrs_beyond_the_first_page_are_read)
{
	struct synth s = exec_image;
	struct loader_result res;
	static const struct seg segs[] = {
		{ .vaddr = 0x400000,
		  .off = 0,
		  .filesz = 0x2400,
		  .memsz = 0x2400,
		  .flags = PF_R | PF_X },
	};

	s.segs = segs;
	s.nseg = 1;
	s.phoff = 0x2100;
	s.size = 0x2400;
	add_synth("/x", &s, 0755);
	cr_assert_eq(load("/x", default_argv, &res), 0);
	cr_assert_eq(res.entry, 0x400100);
	/* The phdrs are inside the one segment: AT_PHDR follows them. */
	cr_assert_eq(aux(LINUX_AT_PHDR), 0x402100);
}

Test(load, pie_with_large_alignment_is_aligned)
{
	static const struct seg segs[] = {
		{ .vaddr = 0,
		  .off = 0,
		  .filesz = 0x1000,
		  .memsz = 0x1000,
		  .flags = PF_R | PF_X,
		  .align = 0x200000 },
	};
	struct synth s = {
		.type = ET_DYN, .entry = 0x10, .segs = segs, .nseg = 1, .interp = "/ld.so"
	};
	static const struct seg ld_segs[] = {
		{ .vaddr = 0, .off = 0, .filesz = 0x1000, .memsz = 0x1000, .flags = PF_R | PF_X },
	};
	struct synth ld = { .type = ET_DYN, .entry = 0x20, .segs = ld_segs, .nseg = 1 };
	struct loader_result res;

	add_synth("/pie", &s, 0755);
	add_synth("/ld.so", &ld, 0755);
	cr_assert_eq(load("/pie", default_argv, &res), 0);
	cr_assert_eq(aux(LINUX_AT_ENTRY), (LOADER_PIE_BASE & ~0x1fffffULL) + 0x10);
	cr_assert_eq(res.entry, aux(LINUX_AT_BASE) + 0x20);
}

Test(load, executable_stack_when_pt_gnu_stack_asks)
{
	struct synth s = exec_image;
	struct loader_result res;

	s.exec_stack = true;
	add_synth("/x", &s, 0755);
	cr_assert_eq(load("/x", default_argv, &res), 0);
	cr_assert_eq(fake_prot(res.sp), PROT_READ | PROT_WRITE | PROT_EXEC);
}

Test(load, stack_size_follows_rlimit_stack)
{
	struct {
		uint64_t rlim, want;
	} cases[] = {
		{ 16 << 20, 16 << 20 },
		{ 4096, LOADER_STACK_MIN },
		{ RLIM_INFINITY, LOADER_STACK_MAX },
		{ 1ULL << 40, LOADER_STACK_MAX },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct loader_result res;
		uint64_t bottom = LOADER_STACK_TOP - cases[i].want;

		setup();
		tg.rlimits[RLIMIT_STACK].rlim_cur = cases[i].rlim;
		add_synth("/x", &exec_image, 0755);
		cr_assert_eq(load("/x", default_argv, &res), 0);
		cr_assert_eq(fake_prot(bottom), PROT_READ | PROT_WRITE, "case %zu", i);
		cr_assert_eq(fake_prot(bottom - 1), -1, "case %zu", i);
		cr_assert_eq(fake_open_files(), 0);
	}
}

Test(load, exec_colliding_with_the_stack_is_eexist)
{
	static const struct seg segs[] = {
		{ .vaddr = LOADER_STACK_TOP - 0x10000,
		  .off = 0,
		  .filesz = 0x1000,
		  .memsz = 0x1000,
		  .flags = PF_R | PF_X },
	};
	struct synth s = {
		.type = ET_EXEC, .entry = LOADER_STACK_TOP - 0x10000, .segs = segs, .nseg = 1
	};
	struct loader_result res;

	add_synth("/x", &s, 0755);
	cr_assert_eq(load("/x", default_argv, &res), -EEXIST);
}

Test(load, empty_argv_gets_an_empty_argv0)
{
	char *none[] = { NULL };
	const char *want[] = { "", NULL };
	struct loader_result res;

	add_synth("/x", &exec_image, 0755);
	cr_assert_eq(load("/x", none, &res), 0);
	assert_guest_argv(&res, want);
	cr_assert_eq(load("/x", NULL, &res), 0);
	assert_guest_argv(&res, want);
}

/* --- interpreters --- */

Test(load, missing_interpreter_is_enoent)
{
	struct synth s = exec_image;
	struct loader_result res;

	s.interp = "/nope/ld.so";
	add_synth("/x", &s, 0755);
	cr_assert_eq(load("/x", default_argv, &res), -ENOENT);
}

Test(load, interpreter_that_is_not_elf_is_elibbad)
{
	struct synth s = exec_image;
	struct loader_result res;

	s.interp = "/ld.so";
	add_synth("/x", &s, 0755);
	fake_add_file("/ld.so", "#!/bin/sh\n", 10, S_IFREG | 0755, 0, 0);
	cr_assert_eq(load("/x", default_argv, &res), -ELIBBAD);
}

Test(load, interpreter_with_its_own_interpreter_is_elibbad)
{
	struct synth s = exec_image;
	struct loader_result res;

	s.interp = "/ld.so";
	add_synth("/x", &s, 0755);
	add_synth("/ld.so", &s, 0755);
	cr_assert_eq(load("/x", default_argv, &res), -ELIBBAD);
}

Test(load, interpreter_without_exec_permission_is_eacces)
{
	struct synth s = exec_image,
		     ld = { .type = ET_DYN, .entry = 0, .segs = exec_segs, .nseg = 1 };
	struct loader_result res;

	s.interp = "/ld.so";
	add_synth("/x", &s, 0755);
	add_synth("/ld.so", &ld, 0644);
	cr_assert_eq(load("/x", default_argv, &res), -EACCES);
}

Test(load, interp_path_beyond_the_first_page_is_read_and_checked)
{
	struct synth s = exec_image,
		     ld = { .type = ET_DYN, .entry = 0x40, .segs = exec_segs, .nseg = 1 };
	struct loader_result res;

	s.interp = "/ld.so";
	s.interp_off = 0x2800;
	add_synth("/x", &s, 0755);
	add_synth("/ld.so", &ld, 0755);
	cr_assert_eq(load("/x", default_argv, &res), 0);
	cr_assert_eq(res.entry, aux(LINUX_AT_BASE) + 0x40);

	setup();
	s.interp_no_nul = true;
	add_synth("/x", &s, 0755);
	add_synth("/ld.so", &ld, 0755);
	cr_assert_eq(load("/x", default_argv, &res), -ENOEXEC);
}

/* --- scripts --- */

static void add_script(const char *path, const char *text, uint32_t mode)
{
	fake_add_file(path, text, strlen(text), S_IFREG | mode, 0, 0);
}

Test(load, script_puts_interpreter_argument_and_path_in_front)
{
	const char *want[] = { "/x", "-f  g", "/s", "arg1", NULL };
	struct loader_result res;

	add_synth("/x", &exec_image, 0755);
	add_script("/s", "#! /x -f  g \nbody\n", 0755);
	cr_assert_eq(load("/s", default_argv, &res), 0);
	cr_assert_eq(res.entry, 0x400100);
	assert_guest_argv(&res, want);
	/* AT_EXECFN stays the path given to execve. */
	assert_stack(&res, "/s");
}

Test(load, script_without_argument)
{
	const char *want[] = { "/x", "/s", "arg1", NULL };
	struct loader_result res;

	add_synth("/x", &exec_image, 0755);
	add_script("/s", "#!/x\n", 0755);
	cr_assert_eq(load("/s", default_argv, &res), 0);
	assert_guest_argv(&res, want);
}

Test(load, four_nested_scripts_run)
{
	const char *want[] = { "/x", "/s1", "/s2", "/s3", "/s4", "arg1", NULL };
	struct loader_result res;

	add_synth("/x", &exec_image, 0755);
	add_script("/s1", "#!/x\n", 0755);
	add_script("/s2", "#!/s1\n", 0755);
	add_script("/s3", "#!/s2\n", 0755);
	add_script("/s4", "#!/s3\n", 0755);
	cr_assert_eq(load("/s4", default_argv, &res), 0);
	assert_guest_argv(&res, want);
}

Test(load, five_nested_scripts_are_eloop)
{
	struct loader_result res;

	add_synth("/x", &exec_image, 0755);
	add_script("/s1", "#!/x\n", 0755);
	add_script("/s2", "#!/s1\n", 0755);
	add_script("/s3", "#!/s2\n", 0755);
	add_script("/s4", "#!/s3\n", 0755);
	add_script("/s5", "#!/s4\n", 0755);
	cr_assert_eq(load("/s5", default_argv, &res), -ELOOP);
}

Test(load, script_running_itself_is_eloop)
{
	struct loader_result res;

	add_script("/s", "#!/s\n", 0755);
	cr_assert_eq(load("/s", default_argv, &res), -ELOOP);
}

Test(load, script_errors)
{
	struct loader_result res;

	add_script("/empty", "#!\n", 0755);
	add_script("/blank", "#!  \t\n", 0755);
	add_script("/missing", "#!/nope\n", 0755);
	add_script("/noexec", "#!/x\n", 0644);
	add_synth("/x", &exec_image, 0755);
	cr_assert_eq(load("/empty", default_argv, &res), -ENOEXEC);
	cr_assert_eq(load("/blank", default_argv, &res), -ENOEXEC);
	cr_assert_eq(load("/missing", default_argv, &res), -ENOENT);
	cr_assert_eq(load("/noexec", default_argv, &res), -EACCES);
}

/* --- files that cannot run --- */

Test(load, missing_file_is_enoent)
{
	struct loader_result res;

	cr_assert_eq(load("/nope", default_argv, &res), -ENOENT);
}

Test(load, directory_is_eacces)
{
	struct loader_result res;

	fake_add_file("/dir", "", 0, S_IFDIR | 0755, 0, 0);
	cr_assert_eq(load("/dir", default_argv, &res), -EACCES);
}

Test(load, exec_permission_follows_owner_group_other)
{
	struct loader_result res;
	size_t len;
	uint8_t *b = build(&exec_image, &len);

	fake_add_file("/no_x", b, len, S_IFREG | 0644, 0, 0);
	fake_add_file("/owner_only_other", b, len, S_IFREG | 0700, 0, 0);
	fake_add_file("/owner_only_mine", b, len, S_IFREG | 0700, 1000, 0);
	fake_add_file("/group_mine", b, len, S_IFREG | 0010, 0, 1000);
	fake_add_file("/group_supp", b, len, S_IFREG | 0010, 0, 4242);
	fake_add_file("/other", b, len, S_IFREG | 0001, 0, 0);
	fake_add_file("/owner_denied", b, len, S_IFREG | 0011, 1000, 0);
	free(b);
	cr_assert_eq(load("/no_x", default_argv, &res), -EACCES);
	cr_assert_eq(load("/owner_only_other", default_argv, &res), -EACCES);
	cr_assert_eq(load("/owner_only_mine", default_argv, &res), 0);
	cr_assert_eq(load("/group_mine", default_argv, &res), 0);
	cr_assert_eq(load("/group_supp", default_argv, &res), -EACCES);
	task.cred.groups[0] = 4242;
	task.cred.ngroups = 1;
	cr_assert_eq(load("/group_supp", default_argv, &res), 0);
	cr_assert_eq(load("/other", default_argv, &res), 0);
	/* The owner class decides for the owner, even if others may. */
	cr_assert_eq(load("/owner_denied", default_argv, &res), -EACCES);
	/* Root (CAP_DAC_OVERRIDE) needs one x bit, any. */
	task.cred.fsuid = 0;
	task.cred.cap_effective = ~0ULL;
	cr_assert_eq(load("/owner_only_other", default_argv, &res), 0);
	cr_assert_eq(load("/no_x", default_argv, &res), -EACCES);
	/* Without it, its class's bit: not another owner's. */
	task.cred.cap_effective &= ~(1ULL << 1 /* CAP_DAC_OVERRIDE */);
	cr_assert_eq(load("/owner_only_mine", default_argv, &res), -EACCES);
	cr_assert_eq(load("/owner_only_other", default_argv, &res), 0);
}

Test(load, garbage_is_enoexec)
{
	struct loader_result res;
	struct synth s = exec_image;
	size_t len;
	uint8_t *b;

	fake_add_file("/text", "hello world\n", 12, S_IFREG | 0755, 0, 0);
	fake_add_file("/empty", "", 0, S_IFREG | 0755, 0, 0);
	s.type = ET_REL;
	b = build(&s, &len);
	fake_add_file("/rel", b, len, S_IFREG | 0755, 0, 0);
	free(b);
	cr_assert_eq(load("/text", default_argv, &res), -ENOEXEC);
	cr_assert_eq(load("/empty", default_argv, &res), -ENOEXEC);
	cr_assert_eq(load("/rel", default_argv, &res), -ENOEXEC);
}

Test(load, huge_argument_is_e2big)
{
	struct loader_result res;
	char *big = malloc(LOADER_MAX_ARG_STRLEN + 1);
	char *argv[] = { "prog", big, NULL };

	memset(big, 'a', LOADER_MAX_ARG_STRLEN);
	big[LOADER_MAX_ARG_STRLEN] = '\0';
	add_synth("/x", &exec_image, 0755);
	cr_assert_eq(load("/x", argv, &res), -E2BIG);
	big[LOADER_MAX_ARG_STRLEN - 1] = '\0';
	cr_assert_eq(load("/x", argv, &res), 0);
	free(big);
}

Test(load, arguments_beyond_a_quarter_of_a_small_stack_are_e2big)
{
	struct loader_result res;
	char *s = malloc(100000);
	char *argv[] = { "prog", s, s, s, NULL };

	memset(s, 'a', 99999);
	s[99999] = '\0';
	add_synth("/x", &exec_image, 0755);
	tg.rlimits[RLIMIT_STACK].rlim_cur = 1 << 20; /* 256 KiB for arguments */
	cr_assert_eq(load("/x", argv, &res), -E2BIG);
	tg.rlimits[RLIMIT_STACK].rlim_cur = 2 << 20; /* 512 KiB */
	cr_assert_eq(load("/x", argv, &res), 0);
	free(s);
}
