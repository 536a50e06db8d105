/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the sentry's program loader (sentry/loader/) on hostile files. Each input is
 * a file that loader_load() runs as /prog, through its whole path: `#!` (shebang.c), elf_parse
 * with the re-read of far program headers (load.c's exe_parse), PT_INTERP, the mapping of every
 * segment (load_elf, map_segments), AT_PHDR, the initial stack (stack.c) and brk. The VFS and mm
 * calls the loader makes are stand-ins defined here (it links no other sentry code):
 *   - files: /prog is the input; any other path (the PT_INTERP, a `#!` interpreter) is the
 *     part of the input after the marker "\0HUSK-INTERP\0" when there is one, else the input
 *     again (then an interpreter with its own PT_INTERP: -ELIBBAD). Reads come short (at most
 *     1000 bytes each), as a gofer's may;
 *   - memory: an interval map of the address space that applies mm_mmap()'s own checks (range,
 *     alignment, MAP_FIXED_NOREPLACE collisions, top-down placement below mmap_base) without
 *     backing pages, so that a segment of terabytes costs nothing; mm_poke and mm_copy_out
 *     check that their range is mapped (writable, for mm_copy_out) and read every source byte.
 * Oracles besides the sanitizers: no file reference is left after the call; a successful load
 * has its entry point, stack pointer and brk inside guest memory, the stack pointer 16-byte
 * aligned inside the stack mapping, and the auxv's AT_NULL last; a failure is one of the errors
 * loader.h lists.
 *
 * With ELF_FUZZ_SEEDS=DIR set, a few hand-made ELF images are written to DIR first (the
 * tree's seeds also hold real binaries); with ELF_FUZZ_VERBOSE set, each load's result is
 * printed. Build and run: tests/fuzz/elf/run.sh SECONDS.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/util.h"
#include "sentry/kernel/task.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool verbose; /* ELF_FUZZ_VERBOSE set: each load's result on stderr */
static const char interp_marker[] = "\0HUSK-INTERP\0";
#define MARKER_LEN (sizeof(interp_marker) - 1)

/* --- the files --- */

struct fake_node {
	const uint8_t *data;
	size_t len;
};

static struct fake_node prog_node, interp_node;
static int open_files;
static const struct file_ops fake_file_ops;

int vfs_open(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
	     struct file **out)
{
	struct file *f;

	if (dirfd != AT_FDCWD || flags != O_RDONLY)
		abort(); /* the loader opens nothing else */
	if (strlen(path) >= PATH_MAX)
		abort(); /* a path the loader made must fit PATH_MAX */
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	refcount_init(&f->ref, 1);
	f->ops = &fake_file_ops;
	f->flags = flags;
	f->priv = strcmp(path, "/prog") == 0 ? &prog_node : &interp_node;
	open_files++;
	*out = f;
	return 0;
}

int file_getattr(struct file *f, struct vfs_attr *attr)
{
	struct fake_node *n = f->priv;

	memset(attr, 0, sizeof(*attr));
	attr->mode = S_IFREG | 0755;
	attr->size = (int64_t)n->len;
	attr->nlink = 1;
	return 0;
}

bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap < 64 && (c->cap_effective & (1ULL << cap));
}

bool vfs_file_noexec(const struct file *f)
{
	return false;
}

ssize_t file_pread(struct file *f, void *buf, size_t len, int64_t off)
{
	struct fake_node *n = f->priv;

	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= n->len)
		return 0;
	len = MIN(MIN(len, n->len - (size_t)off), (size_t)1000);
	memcpy(buf, n->data + off, len);
	return (ssize_t)len;
}

void file_put(struct file *f)
{
	if (refcount_dec(&f->ref)) {
		open_files--;
		free(f);
	}
}

/* --- the address space: sorted, disjoint [start, end) intervals --- */

#define MAX_VMAS 512

struct fvma {
	uint64_t start, end;
	int prot;
};

static struct fvma vmas[MAX_VMAS];
static int n_vmas;
static uint64_t stack_lo, stack_hi; /* the MAP_GROWSDOWN mapping */

/* Removes [start, end) from the map, splitting what straddles it. */
static int unmap_range(uint64_t start, uint64_t end)
{
	for (int i = 0; i < n_vmas; i++) {
		struct fvma *v = &vmas[i];

		if (v->end <= start || v->start >= end)
			continue;
		if (v->start < start && v->end > end) {
			if (n_vmas == MAX_VMAS)
				return -ENOMEM;
			memmove(&vmas[i + 2], &vmas[i + 1], (size_t)(n_vmas - i - 1) * sizeof(*v));
			vmas[i + 1] = (struct fvma){ end, v->end, v->prot };
			v->end = start;
			n_vmas++;
			return 0;
		}
		if (v->start < start) {
			v->end = start;
		} else if (v->end > end) {
			v->start = end;
		} else {
			memmove(v, v + 1, (size_t)(n_vmas - i - 1) * sizeof(*v));
			n_vmas--;
			i--;
		}
	}
	return 0;
}

static bool range_used(uint64_t start, uint64_t end)
{
	for (int i = 0; i < n_vmas; i++)
		if (vmas[i].start < end && vmas[i].end > start)
			return true;
	return false;
}

static int insert_range(uint64_t start, uint64_t end, int prot)
{
	int i = 0;

	if (n_vmas == MAX_VMAS)
		return -ENOMEM;
	while (i < n_vmas && vmas[i].start < start)
		i++;
	memmove(&vmas[i + 1], &vmas[i], (size_t)(n_vmas - i) * sizeof(vmas[0]));
	vmas[i] = (struct fvma){ start, end, prot };
	n_vmas++;
	return 0;
}

/* Top-down below mmap_base: the highest gap of len bytes, or 0. */
static uint64_t find_gap(uint64_t base, uint64_t len)
{
	uint64_t top = PAGE_ALIGN_DOWN(base);

	for (int i = n_vmas - 1; i >= 0; i--) {
		if (vmas[i].start >= top)
			continue;
		if (vmas[i].end <= top && top - vmas[i].end >= len)
			return top - len;
		top = vmas[i].start;
	}
	return top >= PLATFORM_GUEST_MIN && top - PLATFORM_GUEST_MIN >= len ? top - len : 0;
}

/* mm_mmap's argument checks (sentry/mm/mm.c), then the interval map. */
long mm_mmap(struct mm *mm, uint64_t addr, uint64_t len, int prot, int flags, struct file *file,
	     uint64_t off)
{
	bool anon = flags & MAP_ANONYMOUS, fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	uint64_t end;
	int ret;

	if (!IS_PAGE_ALIGNED(off) || len == 0)
		return -EINVAL;
	if ((flags & MAP_TYPE) != MAP_PRIVATE)
		abort(); /* the loader maps privately only */
	if (!anon && !file)
		return -EBADF;
	if (len > PLATFORM_GUEST_MAX - PLATFORM_GUEST_MIN)
		return -ENOMEM;
	len = PAGE_ALIGN_UP(len);
	if (!anon && (add_overflow(off, len, &end) || end > INT64_MAX))
		return -EOVERFLOW;
	if (fixed) {
		if (!IS_PAGE_ALIGNED(addr))
			return -EINVAL;
		if (add_overflow(addr, len, &end) || end > PLATFORM_GUEST_MAX)
			return -ENOMEM;
		if (addr < PLATFORM_GUEST_MIN)
			return -EPERM;
		if ((flags & MAP_FIXED_NOREPLACE) && !(flags & MAP_FIXED) && range_used(addr, end))
			return -EEXIST;
	} else {
		pthread_mutex_lock(&mm->lock);
		addr = find_gap(mm->mmap_base, len);
		pthread_mutex_unlock(&mm->lock);
		if (!addr)
			return -ENOMEM;
		end = addr + len;
	}
	ret = unmap_range(addr, end);
	if (!ret)
		ret = insert_range(addr, end, prot);
	if (ret)
		return ret;
	if (flags & MAP_GROWSDOWN) {
		stack_lo = addr;
		stack_hi = end;
	}
	return (long)addr;
}

/* Whether [addr, addr+len) is all mapped (and writable, when write). */
static bool mapped(uint64_t addr, size_t len, bool write)
{
	uint64_t end;

	if (add_overflow(addr, (uint64_t)len, &end))
		return false;
	while (addr < end) {
		int i;

		for (i = 0; i < n_vmas; i++)
			if (vmas[i].start <= addr && addr < vmas[i].end)
				break;
		if (i == n_vmas || (write && !(vmas[i].prot & PROT_WRITE)))
			return false;
		addr = vmas[i].end;
	}
	return true;
}

static volatile uint8_t sink;

/* Reads every source byte, so that ASan sees a source buffer shorter than len. */
static ssize_t touch(const void *src, size_t len)
{
	const volatile uint8_t *p = src;
	uint8_t x = 0;

	for (size_t i = 0; i < len; i++)
		x ^= p[i];
	sink = x;
	return (ssize_t)len;
}

ssize_t mm_poke(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	if (!mapped(addr, len, false))
		return -EFAULT;
	return touch(src, len);
}

ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	if (!mapped(addr, len, true))
		return -EFAULT;
	return touch(src, len);
}

static const struct file_ops fake_file_ops = { 0 };

bool vtime_vdso_pages(uint64_t *vvar_off, uint64_t *image_off, uint64_t *image_len)
{
	return false;
}

long mm_map_vdso(struct mm *mm, uint64_t vvar_off, uint64_t image_off, uint64_t image_len)
{
	return -ENOSYS;
}

/* --- seeds --- */

static void write_seed(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len)
		abort();
	fclose(f);
}

/* A minimal ELF: the header, nph program headers at 64, then the bytes of tail. */
static size_t make_elf(uint8_t *out, uint16_t type, const Elf64_Phdr *ph, int nph)
{
	Elf64_Ehdr eh = { 0 };
	size_t len = sizeof(eh) + (size_t)nph * sizeof(*ph);

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = type;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = 0x401000;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(*ph);
	eh.e_phnum = (uint16_t)nph;
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + sizeof(eh), ph, (size_t)nph * sizeof(*ph));
	return len;
}

static void write_seeds(const char *dir)
{
	static uint8_t buf[16384];
	Elf64_Phdr st[2] = {
		{ .p_type = PT_LOAD,
		  .p_flags = PF_R | PF_X,
		  .p_offset = 0,
		  .p_vaddr = 0x400000,
		  .p_filesz = 4096,
		  .p_memsz = 4096,
		  .p_align = 4096 },
		{ .p_type = PT_LOAD,
		  .p_flags = PF_R | PF_W,
		  .p_offset = 4096,
		  .p_vaddr = 0x402000,
		  .p_filesz = 100,
		  .p_memsz = 0x3000,
		  .p_align = 4096 },
	};
	Elf64_Phdr dyn[4] = {
		{ .p_type = PT_PHDR,
		  .p_flags = PF_R,
		  .p_offset = 64,
		  .p_vaddr = 64,
		  .p_filesz = 4 * 56,
		  .p_memsz = 4 * 56,
		  .p_align = 8 },
		{ .p_type = PT_INTERP,
		  .p_flags = PF_R,
		  .p_offset = 512,
		  .p_vaddr = 512,
		  .p_filesz = 12,
		  .p_memsz = 12,
		  .p_align = 1 },
		{ .p_type = PT_LOAD,
		  .p_flags = PF_R | PF_X,
		  .p_offset = 0,
		  .p_vaddr = 0,
		  .p_filesz = 4096,
		  .p_memsz = 4096,
		  .p_align = 0x200000 },
		{ .p_type = PT_GNU_PROPERTY,
		  .p_flags = PF_R,
		  .p_offset = 600,
		  .p_vaddr = 600,
		  .p_filesz = 32,
		  .p_memsz = 32,
		  .p_align = 8 },
	};
	Elf64_Phdr ld[2] = {
		{ .p_type = PT_LOAD,
		  .p_flags = PF_R | PF_X,
		  .p_offset = 0,
		  .p_vaddr = 0,
		  .p_filesz = 4096,
		  .p_memsz = 4096,
		  .p_align = 4096 },
		{ .p_type = PT_GNU_STACK, .p_flags = PF_R | PF_W | PF_X },
	};
	/* A GNU property note: x86 feature_1 AND (IBT, SHSTK). */
	static const uint32_t note[8] = { 4,	    16,		5 /* NT_GNU_PROPERTY_TYPE_0 */,
					  0x554e47, 0xc0000002, 4,
					  3,	    0 };
	size_t n;

	memset(buf, 0, sizeof(buf));
	make_elf(buf, ET_EXEC, st, 2);
	write_seed(dir, "static-exec", buf, 4096 + 100);

	memset(buf, 0, sizeof(buf));
	make_elf(buf, ET_DYN, dyn, 4);
	memcpy(buf + 512, "/lib/ld.so\0", 12);
	memcpy(buf + 600, note, sizeof(note));
	n = 4096;
	memcpy(buf + n, interp_marker, MARKER_LEN);
	n += MARKER_LEN;
	make_elf(buf + n, ET_DYN, ld, 2);
	n += 4096;
	write_seed(dir, "pie-with-interp", buf, n);

	write_seed(dir, "script", "#!/bin/interp -x\n", 17);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("ELF_FUZZ_SEEDS");

	verbose = getenv("ELF_FUZZ_VERBOSE") != NULL;
	if (seeds)
		write_seeds(seeds);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *argv[] = { "prog", "arg", NULL };
	static char *envp[] = { "HOME=/", NULL };
	static struct thread_group tg;
	static struct task task;
	static struct mm mm;
	struct loader_result res;
	const uint8_t *m = size >= MARKER_LEN ? memmem(data, size, interp_marker, MARKER_LEN) :
						NULL;
	uint8_t *prog, *interp;
	size_t plen = m ? (size_t)(m - data) : size;
	int ret;

	/* Copies of exactly their size, so that ASan sees any read past a file's end. */
	prog = malloc(plen ? plen : 1);
	memcpy(prog, data, plen);
	prog_node = (struct fake_node){ prog, plen };
	if (m) {
		size_t ilen = size - plen - MARKER_LEN;

		interp = malloc(ilen ? ilen : 1);
		memcpy(interp, m + MARKER_LEN, ilen);
		interp_node = (struct fake_node){ interp, ilen };
	} else {
		interp = NULL;
		interp_node = prog_node;
	}

	memset(&tg, 0, sizeof(tg));
	memset(&task, 0, sizeof(task));
	memset(&mm, 0, sizeof(mm));
	pthread_mutex_init(&mm.lock, NULL);
	tg.rlimits[RLIMIT_STACK].rlim_cur = 8 << 20;
	tg.rlimits[RLIMIT_STACK].rlim_max = RLIM_INFINITY;
	task.tg = &tg;
	task.cred.cap_effective = ~0ULL;
	n_vmas = 0;
	stack_lo = stack_hi = 0;

	ret = loader_load(&task, &mm, "/prog", argv, envp, &res);
	if (verbose)
		fprintf(stderr, "fuzz_elf: loader_load: %d (%s), %d mappings\n", ret,
			strerror(-ret), n_vmas);
	if (open_files != 0) {
		fprintf(stderr, "fuzz_elf: loader_load (%d) left %d file(s) open\n", ret,
			open_files);
		abort();
	}
	if (ret == 0) {
		if (res.entry >= PLATFORM_GUEST_MAX || res.sp < stack_lo || res.sp >= stack_hi ||
		    (res.sp & 15) || mm.brk > PLATFORM_GUEST_MAX || mm.auxv_len < 2 ||
		    mm.auxv_len > LOADER_AUXV_WORDS || mm.auxv[mm.auxv_len - 2] != AT_NULL) {
			fprintf(stderr,
				"fuzz_elf: bad load: entry %#lx sp %#lx stack [%#lx, %#lx) brk %#lx "
				"auxv %d\n",
				(unsigned long)res.entry, (unsigned long)res.sp,
				(unsigned long)stack_lo, (unsigned long)stack_hi,
				(unsigned long)mm.brk, mm.auxv_len);
			abort();
		}
	} else if (ret != -ENOEXEC && ret != -ELIBBAD && ret != -EINVAL && ret != -ENOMEM &&
		   ret != -EEXIST && ret != -ELOOP && ret != -E2BIG && ret != -EIO &&
		   ret != -EFAULT && ret != -ENAMETOOLONG && ret != -EPERM && ret != -EACCES) {
		fprintf(stderr, "fuzz_elf: loader_load returned %d\n", ret);
		abort();
	}
	pthread_mutex_destroy(&mm.lock);
	free(prog);
	free(interp);
	return 0;
}
