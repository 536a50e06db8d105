/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Syscall patching (x86-64): a call site `mov $nr, %eax; syscall` (b8 imm32 0f 05, 7 bytes)
 * that trapped once is rewritten into `jmp *cell` (ff 24 25 disp32, 7 bytes), an indirect jump
 * through an 8-byte cell of this mm's trap table, whose entry sets eax and rcx as the original
 * code and the syscall instruction would and jumps to the platform's trampoline
 * (platform.syscall_trampoline), which reports the call without a trap. See
 * sentry/platform/seccomp/README.md ("Syscall patching") for the platform's half.
 *
 * The trap table is a private read+execute mapping at TABLE_ADDR (below 2 GiB, so that a
 * 32-bit absolute address reaches it): fork copies it with the patched code, exec drops both.
 * Each entry (ENTRY_SIZE bytes):
 *   +0   .quad entry+8              the cell the patched jmp reads
 *   +8   b8 imm32                   mov $nr, %eax
 *   +13  48 b9 imm64                movabs $site+7, %rcx
 *   +23  49 bb imm64                movabs $trampoline, %r11
 *   +33  41 ff e3                   jmp *%r11
 *
 * Other threads may run a site while it changes, and the patch cannot be written at once. Every
 * table cell address has 0x06 as its third byte (TABLE_ADDR), which is the byte the patch puts
 * where the syscall instruction's first byte was: 0x06 is an invalid opcode in 64-bit mode, so a
 * thread that ran the old `mov` and reaches site+5 gets SIGILL, and mm_patch_sigill tells the
 * sentry what the thread meant. The bytes change in an order that keeps every state either the
 * old code, the new code, or `mov $imm, %eax` followed by the invalid byte; in the last case
 * the immediate is either the call's number (the thread ran the old mov: its call is run) or
 * has 0x25 as its second byte, which no system call number has (a torn mov: the site is run
 * again). The same rule serves a jump straight to the syscall instruction (run with the eax it
 * has) and a restarted call (the sentry moves rip back 2 bytes onto the invalid byte).
 *
 * Patching stops for good in an mm (mm_patch_revert puts every site back, in the same careful
 * order) when something would break the scheme: a thread with a gs base of its own (the
 * trampoline finds its thread through gs), a single-stepping tracer, or the guest changing
 * the trap table's range.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "common/util.h"
#include "sentry/mm/internal.h"

#define TABLE_ADDR 0x60000ULL
#define TABLE_SIZE 0x10000ULL
#define ENTRY_SIZE 48
#define MAX_ENTRIES (TABLE_SIZE / ENTRY_SIZE)
#define SITE_LEN 7
#define INVALID_OPCODE 0x06
/* The second byte of `jmp *disp32` (its SIB byte): the torn immediate's mark. */
#define TORN_MARK 0x25

struct mm_patch {
	bool off; /* patching stopped (reverted, or no table): never again in this mm */
	bool mapped; /* the table is mapped */
	uint32_t n, cap; /* sites, in the order they were patched (entry i = site i) */
	struct patch_site {
		uint64_t addr;
		uint32_t nr;
	} * sites;
};

static uint64_t entry_addr(uint32_t i)
{
	return TABLE_ADDR + (uint64_t)i * ENTRY_SIZE;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Writes one byte of guest code (copy-on-write like a debugger's breakpoint). */
static int poke(struct mm *mm, uint64_t addr, uint8_t b)
{
	return mm_poke(mm, addr, &b, 1) == 1 ? 0 : -EFAULT;
}

/*
 * True if the 7 bytes at addr lie in one private, executable, not writable mapping of a file
 * (or the vDSO): code as loaded, not a JIT's (anonymous or writable code may be rewritten by its
 * owner, who would then find our bytes).
 */
static bool site_mapping_ok(struct mm *mm, uint64_t addr)
{
	bool ok = false;

	pthread_mutex_lock(&mm->lock);
	const struct vma *v = vma_find(vset(mm), addr);
	if (v && addr + SITE_LEN <= v->end && (v->flags & MM_VMA_PRIVATE) &&
	    (v->flags & (MM_VMA_FILE | MM_VMA_VDSO)) && (v->prot & PROT_EXEC) &&
	    !(v->prot & PROT_WRITE) && !(v->flags & (VMA_LAZY | VMA_EOF)))
		ok = true;
	pthread_mutex_unlock(&mm->lock);
	return ok;
}

/* Maps the trap table (patch_lock held). Returns 0, or -errno and patching stops. */
static int table_map(struct mm *mm, struct mm_patch *p)
{
	long r = mm_mmap(mm, TABLE_ADDR, TABLE_SIZE, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, NULL, 0);

	if (r < 0 || (uint64_t)r != TABLE_ADDR) {
		if (r >= 0)
			mm_munmap(mm, (uint64_t)r, TABLE_SIZE);
		p->off = true;
		log_debug("syscall patching: no trap table at %#llx (%ld): off for this process",
			  (unsigned long long)TABLE_ADDR, r);
		return r < 0 ? (int)r : -EEXIST;
	}
	p->mapped = true;
	return 0;
}

static struct mm_patch *patch_get(struct mm *mm)
{
	if (!mm->patch)
		mm->patch = calloc(1, sizeof(struct mm_patch));
	return mm->patch;
}

void mm_patch_site(struct mm *mm, uint64_t rip, uint64_t nr, uint64_t trampoline)
{
	uint64_t site = rip - SITE_LEN, cell;
	uint8_t code[SITE_LEN], entry[ENTRY_SIZE];
	struct mm_patch *p;
	uint32_t imm;

	if (!trampoline || rip < PLATFORM_GUEST_MIN + SITE_LEN || rip > PLATFORM_GUEST_MAX ||
	    nr >= 0x2000)
		return;
	pthread_mutex_lock(&mm->patch_lock);
	p = patch_get(mm);
	if (!p || p->off || p->n >= MAX_ENTRIES)
		goto out;
	if (mm_copy_in(mm, code, site, SITE_LEN) != SITE_LEN)
		goto out;
	memcpy(&imm, code + 1, sizeof(imm));
	if (code[0] != 0xb8 || code[5] != 0x0f || code[6] != 0x05 || imm != nr)
		goto out;
	if (!site_mapping_ok(mm, site))
		goto out;
	if (!p->mapped && table_map(mm, p) < 0)
		goto out;
	if (p->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 64;
		struct patch_site *s = realloc(p->sites, cap * sizeof(*s));

		if (!s)
			goto out;
		p->sites = s;
		p->cap = cap;
	}

	cell = entry_addr(p->n);
	memset(entry, 0xcc, sizeof(entry)); /* int3 filler */
	put_u64(entry, cell + 8);
	entry[8] = 0xb8;
	put_u32(entry + 9, (uint32_t)nr);
	entry[13] = 0x48;
	entry[14] = 0xb9;
	put_u64(entry + 15, rip);
	entry[23] = 0x49;
	entry[24] = 0xbb;
	put_u64(entry + 25, trampoline);
	entry[33] = 0x41;
	entry[34] = 0xff;
	entry[35] = 0xe3;
	if (mm_poke(mm, cell, entry, sizeof(entry)) != sizeof(entry))
		goto out;

	/*
	 * The site, one byte at a time in this order (see the top of the file): the invalid
	 * byte, the jmp's last byte, the mark (now any immediate read is the number or marked),
	 * the rest of the address, and last the jmp's opcode.
	 */
	_Static_assert(((TABLE_ADDR >> 16) & 0xff) == INVALID_OPCODE &&
			       (((TABLE_ADDR + TABLE_SIZE - 1) >> 16) & 0xff) == INVALID_OPCODE,
		       "every cell's third byte is the invalid opcode");
	if (poke(mm, site + 5, INVALID_OPCODE) < 0)
		goto out;
	p->sites[p->n].addr = site;
	p->sites[p->n].nr = (uint32_t)nr;
	p->n++;
	if (poke(mm, site + 6, (uint8_t)(cell >> 24)) < 0 || poke(mm, site + 2, TORN_MARK) < 0 ||
	    poke(mm, site + 1, 0x24) < 0 || poke(mm, site + 3, (uint8_t)cell) < 0 ||
	    poke(mm, site + 4, (uint8_t)(cell >> 8)) < 0 || poke(mm, site, 0xff) < 0) {
		/* Only an unmapped page fails here (another thread's munmap): nothing runs it. */
		log_debug("syscall patching: site %#llx changed while patched",
			  (unsigned long long)site);
	}
out:
	pthread_mutex_unlock(&mm->patch_lock);
}

static const struct patch_site *site_find(const struct mm_patch *p, uint64_t addr)
{
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->sites[i].addr == addr)
			return &p->sites[i];
	}
	return NULL;
}

int mm_patch_sigill(struct mm *mm, uint64_t rip, uint64_t rax, uint64_t *new_rip)
{
	int r = MM_PATCH_NONE;
	uint8_t b;

	if (!__atomic_load_n(&mm->patch, __ATOMIC_ACQUIRE) || rip < 5)
		return MM_PATCH_NONE;
	pthread_mutex_lock(&mm->patch_lock);
	if (!site_find(mm->patch, rip - 5))
		goto out;
	/* The invalid byte, or the syscall instruction again after a revert. */
	if (mm_copy_in(mm, &b, rip, 1) != 1 || (b != INVALID_OPCODE && b != 0x0f))
		goto out;
	if ((rax >> 32) == 0 && ((rax >> 8) & 0xff) == TORN_MARK) {
		*new_rip = rip - 5;
		r = MM_PATCH_RESTART;
	} else {
		*new_rip = rip + 2;
		r = MM_PATCH_SYSCALL;
	}
out:
	pthread_mutex_unlock(&mm->patch_lock);
	return r;
}

/* Puts every patched site back (patch_lock held) and stops patching in mm. */
static void revert_locked(struct mm *mm, struct mm_patch *p)
{
	for (uint32_t i = 0; i < p->n; i++) {
		uint64_t site = p->sites[i].addr, cell = entry_addr(i);
		uint32_t nr = p->sites[i].nr;
		uint8_t code[SITE_LEN];

		if (mm_copy_in(mm, code, site, SITE_LEN) != SITE_LEN || code[0] != 0xff ||
		    code[1] != 0x24 || code[2] != TORN_MARK || code[3] != (uint8_t)cell ||
		    code[4] != (uint8_t)(cell >> 8) || code[5] != INVALID_OPCODE)
			continue; /* not our bytes any more (the guest's own code now) */
		/* The opcode first (mov with a marked immediate), the mark last, then the syscall. */
		if (poke(mm, site, 0xb8) < 0 || poke(mm, site + 1, (uint8_t)nr) < 0 ||
		    poke(mm, site + 3, (uint8_t)(nr >> 16)) < 0 ||
		    poke(mm, site + 4, (uint8_t)(nr >> 24)) < 0 ||
		    poke(mm, site + 2, (uint8_t)(nr >> 8)) < 0 || poke(mm, site + 6, 0x05) < 0 ||
		    poke(mm, site + 5, 0x0f) < 0)
			log_debug("syscall patching: cannot revert site %#llx",
				  (unsigned long long)site);
	}
	p->off = true;
}

void mm_patch_revert(struct mm *mm, const char *why)
{
	struct mm_patch *p;

	pthread_mutex_lock(&mm->patch_lock);
	p = patch_get(mm);
	if (p && !p->off) {
		if (p->n)
			log_debug("syscall patching: %u sites reverted: %s", p->n, why);
		revert_locked(mm, p);
	}
	pthread_mutex_unlock(&mm->patch_lock);
}

bool mm_patch_is_table(struct mm *mm, uint64_t start, uint64_t end)
{
	struct mm_patch *p = __atomic_load_n(&mm->patch, __ATOMIC_ACQUIRE);

	return p && p->mapped && start >= TABLE_ADDR && end <= TABLE_ADDR + TABLE_SIZE;
}

bool mm_patch_enabled(struct mm *mm)
{
	struct mm_patch *p = __atomic_load_n(&mm->patch, __ATOMIC_ACQUIRE);

	return !p || !p->off;
}

void mm_patch_guard(struct mm *mm, uint64_t addr, uint64_t len)
{
	struct mm_patch *p = __atomic_load_n(&mm->patch, __ATOMIC_ACQUIRE);

	if (!p || !p->mapped || p->off)
		return;
	if (addr < TABLE_ADDR + TABLE_SIZE && addr + len > TABLE_ADDR)
		mm_patch_revert(mm, "the guest changed the trap table's range");
}

/* Called by mm_fork with parent->patch_lock held (a site is never half-recorded). */
int mm_patch_fork(struct mm *parent, struct mm *child)
{
	struct mm_patch *p = parent->patch, *c;

	if (!p)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = *p;
	c->sites = NULL;
	if (p->n) {
		c->sites = malloc(p->n * sizeof(*c->sites));
		if (!c->sites) {
			free(c);
			return -ENOMEM;
		}
		memcpy(c->sites, p->sites, p->n * sizeof(*c->sites));
	}
	c->cap = p->n;
	child->patch = c;
	return 0;
}

void mm_patch_free(struct mm *mm)
{
	struct mm_patch *p = mm->patch;

	if (p && p->n)
		log_debug("syscall patching: %u sites were patched in this address space%s", p->n,
			  p->off ? " (then reverted)" : "");
	if (p)
		free(p->sites);
	free(p);
	mm->patch = NULL;
}
