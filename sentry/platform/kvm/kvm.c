/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The KVM platform: one VM per address space, one vCPU per guest thread (README.md).
 *
 * Guest physical memory is the memory file, at guest physical 0 in memory slots that grow
 * with the offsets the space uses (ensure_slots), backed by the sentry's own mapping of it
 * (struct platform's mem_base), so a guest physical address is a memory-file offset. The
 * sentry keeps each space's 4-level page tables in pages of the memory file it takes for itself
 * (mem_alloc): guest mappings in the lower half with the user bit, the ring-0 area (stub code,
 * IDT, per-vCPU GDT, TSS and stack) in the last PML4 slot without it.
 *
 * Locks: kvm_as.lock protects the page tables and the list of their pages; kvm_as.slot_lock the
 * slots (taken under kvm_as.lock when a page-table page or a PTE needs a new slot, never the
 * other way round; `covered` is read without it). Everything in a kvm_ctx belongs to its owner
 * thread except `interrupt` and `run->immediate_exit` (atomics, set by ctx_interrupt and the
 * kick signal's handler).
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "sentry/platform/kvm/kvm.h"

#define PAGE 4096ULL
#define PTE_P 0x1ULL
#define PTE_W 0x2ULL
#define PTE_U 0x4ULL
#define PTE_MAPPED 0x200ULL /* software bit: a PROT_NONE page keeps its address (P clear) */
#define PTE_NX (1ULL << 63)
#define PTE_ADDR 0x000ffffffffff000ULL

/* Selectors, as Linux's (a guest may look at cs and ss). */
#define SEL_KCODE 0x10
#define SEL_KDATA 0x18
#define SEL_UCODE32 0x23
#define SEL_UDATA 0x2b
#define SEL_UCODE 0x33
#define SEL_TSS 0x40

/* The ring-0 area (virtual): the stub's code, the IDT, then per vCPU a sys page and a stack. */
#define KVA_CODE (KVM_KERNEL_BASE)
#define KVA_IDT (KVM_KERNEL_BASE + 0x1000)
#define KVA_VCPU(i) (KVM_KERNEL_BASE + 0x100000 + (uint64_t)(i)*0x4000)
#define KVA_STACK(i) (KVA_VCPU(i) + 0x2000) /* a hole below it catches an overflow */
#define TSS_OFF 0x800
#define MAX_VCPUS 4096

/*
 * Memory slots: slot 0 covers the memory file's first 2^SLOT_SHIFT bytes, slot k >= 1 covers
 * [2^(SLOT_SHIFT+k-1), 2^(SLOT_SHIFT+k)): each doubles what the VM can reach. KVM's metadata
 * for a slot (per 2 MiB and 1 GiB frame, zeroed at creation) grows with its size: one slot over
 * the whole file (1 TiB under QEMU/TCG) took 8-18 s to create there, so a space gets only the
 * slots its pages need, added as it maps further (the file's allocator is first fit: offsets
 * stay low).
 */
#define SLOT_SHIFT 26
#define MAX_SLOTS 32

/* The stub's code page (offsets). */
#define CODE_SYSCALL 0x000 /* LSTAR: out %al, $KVM_PORT_SYSCALL; ud2 */
#define CODE_IRET_FLUSH 0x010 /* mov %cr3, %rax; mov %rax, %cr3; then CODE_IRET */
#define CODE_IRET 0x016 /* pop %rax; iretq */
#define CODE_TRAP(v) (0x100 + (v)*16) /* [push $0;] push $v; out %al, $KVM_PORT_TRAP; ud2 */

#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_CSTAR 0xc0000083
#define MSR_SFMASK 0xc0000084

/* The user flags a guest may set (Linux's FIX_EFLAGS), and what the stub's entry clears. */
#define USER_FLAGS 0x254dd5ULL
#define FLAGS_IF 0x200ULL
#define SFMASK_BITS 0x47700ULL /* TF, IF, DF, NT, AC */

struct kvm_platform {
	struct platform base;
	int kvm;
	int run_size;
	uint64_t memsize;
	struct kvm_cpuid2 *cpuid;
	uint64_t xcr0;
};

struct kvm_as {
	struct platform_as base;
	int vm;
	pthread_mutex_t lock; /* the page tables, tables[], ctxs[] */
	pthread_mutex_t slot_lock; /* adding slots */
	uint64_t covered; /* atomic: memory-file bytes [0, covered) are in the VM's slots */
	unsigned nslots; /* under slot_lock */
	uint64_t pml4, code, idt; /* memory-file offsets */
	uint64_t *tables; /* every page-table page but the PML4 */
	size_t ntables, cap;
	uint64_t tlb_gen; /* atomic: bumped when a translation was removed or narrowed */
	uint32_t vcpu_ids; /* atomic: next vCPU id */
	struct kvm_ctx *ctxs[MAX_VCPUS]; /* under lock: kicked on a TLB change */
	/* Tracing (HUSK_LOG=debug, logged when the space goes), under lock. */
	struct {
		uint64_t maps, unmaps, protects, pages, ns, kicks;
	} st;
};

struct kvm_ctx {
	struct platform_ctx base;
	struct kvm_as *as;
	int fd;
	int id;
	struct kvm_run *run;
	uint64_t sys, stack; /* memory-file offsets of the GDT+TSS page and the ring-0 stack */
	pthread_t owner; /* valid when owned */
	pid_t owner_tid; /* 0: not adopted yet */
	bool interrupt; /* atomic */
	bool running; /* atomic: inside KVM_RUN (kicked on a TLB change) */
	bool dead;
	bool kernel_segs; /* the vCPU is in ring 0 (at the stub), as ctx_switch enters it */
	uint64_t tlb_seen;
	struct kvm_sregs sregs; /* as last set */
	/* Tracing (HUSK_LOG=debug, logged when the vCPU goes): exits by kind, time in KVM_RUN. */
	struct {
		uint64_t runs, syscalls, faults, kicks, tlb_kicks, flushes, sregs_sets;
		uint64_t run_ns, created_ns;
	} st;
};

/* CLOCK_MONOTONIC in nanoseconds, for the debug-level tracing. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool tracing(void)
{
	return log_get_level() >= LOG_DEBUG;
}

static __thread struct kvm_run *kick_run; /* the run area of this thread's KVM_RUN */

static void kick_handler(int sig)
{
	(void)sig;
	struct kvm_run *run = __atomic_load_n(&kick_run, __ATOMIC_RELAXED);

	if (run)
		__atomic_store_n(&run->immediate_exit, 1, __ATOMIC_RELAXED);
}

static inline struct kvm_platform *kp_of(struct platform *p)
{
	return (struct kvm_platform *)p;
}

static inline uint8_t *gpa(struct kvm_as *as, uint64_t off)
{
	return as->base.p->mem_base + off;
}

/* Makes memory-file bytes [0, end) reachable by the VM, adding slots as needed. */
static int ensure_slots(struct kvm_as *as, uint64_t end)
{
	struct kvm_platform *kp = kp_of(as->base.p);
	int ret = 0;

	if (end <= __atomic_load_n(&as->covered, __ATOMIC_ACQUIRE))
		return 0;
	if (end > kp->memsize)
		return -EINVAL;
	pthread_mutex_lock(&as->slot_lock);
	while (as->covered < end && ret == 0) {
		unsigned k = as->nslots;
		uint64_t start = k ? 1ULL << (SLOT_SHIFT + k - 1) : 0;
		uint64_t size = k ? start : 1ULL << SLOT_SHIFT;

		if (k >= MAX_SLOTS || start >= kp->memsize) {
			ret = -EINVAL;
			break;
		}
		if (size > kp->memsize - start)
			size = kp->memsize - start;
		struct kvm_userspace_memory_region region = {
			.slot = k,
			.guest_phys_addr = start,
			.memory_size = size,
			.userspace_addr = (uintptr_t)as->base.p->mem_base + start,
		};
		if (ioctl(as->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
			ret = -errno;
			break;
		}
		as->nslots = k + 1;
		__atomic_store_n(&as->covered, start + size, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&as->slot_lock);
	return ret;
}

static void page_free(struct kvm_as *as, uint64_t off);

/* A zeroed page of the memory file for the platform's own use, reachable by the VM. */
static int64_t page_alloc(struct kvm_as *as)
{
	struct platform *p = as->base.p;
	int64_t off = p->mem_alloc(p->mem_arg, PAGE);

	if (off < 0)
		return off;
	int ret = ensure_slots(as, (uint64_t)off + PAGE);
	if (ret < 0) {
		page_free(as, (uint64_t)off);
		return ret;
	}
	memset(p->mem_base + off, 0, PAGE);
	return off;
}

static void page_free(struct kvm_as *as, uint64_t off)
{
	as->base.p->mem_free(as->base.p->mem_arg, off, PAGE);
}

/* Records a page freed with the space (lock held). */
static int tables_push(struct kvm_as *as, uint64_t off)
{
	if (as->ntables == as->cap) {
		size_t cap = as->cap ? as->cap * 2 : 64;
		uint64_t *v = realloc(as->tables, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		as->tables = v;
		as->cap = cap;
	}
	as->tables[as->ntables++] = off;
	return 0;
}

/* The leaf entry for va (lock held); allocates tables when alloc. NULL: none (or -ENOMEM). */
static uint64_t *pt_leaf(struct kvm_as *as, uint64_t va, bool alloc, bool user)
{
	uint64_t table = as->pml4;

	for (int level = 3; level > 0; level--) {
		uint64_t *t = (uint64_t *)gpa(as, table);
		unsigned idx = (va >> (12 + 9 * level)) & 511;

		if (!(t[idx] & PTE_P)) {
			if (!alloc)
				return NULL;
			int64_t n = page_alloc(as);

			if (n < 0)
				return NULL;
			if (tables_push(as, (uint64_t)n) < 0) {
				page_free(as, (uint64_t)n);
				return NULL;
			}
			t[idx] = (uint64_t)n | PTE_P | PTE_W | (user ? PTE_U : 0);
		}
		table = t[idx] & PTE_ADDR;
	}
	return (uint64_t *)gpa(as, table) + ((va >> 12) & 511);
}

static uint64_t prot_bits(int prot)
{
	if (!(prot & (PROT_READ | PROT_WRITE | PROT_EXEC)))
		return PTE_MAPPED;
	return PTE_MAPPED | PTE_P | PTE_U | ((prot & PROT_WRITE) ? PTE_W : 0) |
	       ((prot & PROT_EXEC) ? 0 : PTE_NX);
}

static bool range_ok(uint64_t addr, uint64_t len)
{
	return len && !(addr & (PAGE - 1)) && !(len & (PAGE - 1)) && addr >= PLATFORM_GUEST_MIN &&
	       addr < PLATFORM_GUEST_MAX && len <= PLATFORM_GUEST_MAX - addr;
}

/* After translations were removed or narrowed: every vCPU flushes before it runs again. */
static void tlb_changed(struct kvm_as *as)
{
	__atomic_add_fetch(&as->tlb_gen, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < MAX_VCPUS; i++) {
		struct kvm_ctx *c = as->ctxs[i];

		if (c && c->owner_tid && __atomic_load_n(&c->running, __ATOMIC_SEQ_CST)) {
			pthread_kill(c->owner, KVM_KICK_SIGNAL);
			as->st.kicks++;
		}
	}
}

/* Counts one page-table edit of len bytes that started at t0 (0: not tracing; lock held). */
static void trace_edit(struct kvm_as *as, uint64_t *count, uint64_t len, uint64_t t0)
{
	if (!t0)
		return;
	(*count)++;
	as->st.pages += len / PAGE;
	as->st.ns += mono_ns() - t0;
}

/*
 * Page-table edits over a range. A PROT_NONE mapping needs no translation, only its memory-file
 * offset for a later as_protect: where it covers a whole 2 MiB or 1 GiB frame whose entry is
 * not present, it is kept in that entry (P clear, PTE_MAPPED, the frame's first offset in the
 * address bits: a "chunk") instead of 512 or 262144 PTEs. A chunk is expanded into a table of
 * PROT_NONE entries when part of it changes. Guests reserve address space that way (V8's 32 GiB
 * PROT_NONE cages; the sentry maps lazily allocated memory PROT_NONE until its first touch).
 */
enum pt_kind { PT_MAP, PT_UNMAP, PT_PROTECT };

struct pt_op {
	enum pt_kind kind;
	uint64_t bits; /* PT_MAP, PT_PROTECT: prot_bits() of the new protection */
	uint64_t va0, off0; /* PT_MAP: va0 maps to memory-file offset off0 */
	bool flush; /* a present translation was changed or removed */
};

/* Gives entry e (not present) of a level-`level` table a table of its own (lock held). */
static int pt_expand(struct kvm_as *as, uint64_t *e, int level)
{
	int64_t n = page_alloc(as);

	if (n < 0)
		return (int)n;
	if (tables_push(as, (uint64_t)n) < 0) {
		page_free(as, (uint64_t)n);
		return -ENOMEM;
	}
	if (*e & PTE_MAPPED) { /* a chunk: the same PROT_NONE mapping, one level down */
		uint64_t *t = (uint64_t *)gpa(as, (uint64_t)n);
		uint64_t off = *e & PTE_ADDR, step = 1ULL << (12 + 9 * (level - 1));

		for (int i = 0; i < 512; i++)
			t[i] = (off + (uint64_t)i * step) | PTE_MAPPED;
	}
	*e = (uint64_t)n | PTE_P | PTE_W | PTE_U;
	return 0;
}

static int pt_leaf_op(struct kvm_as *as, uint64_t *e, uint64_t va, struct pt_op *op)
{
	uint64_t old = *e, new = 0;

	switch (op->kind) {
	case PT_MAP:
		new = (op->off0 + (va - op->va0)) | op->bits;
		break;
	case PT_UNMAP:
		break;
	case PT_PROTECT:
		if (!(old & PTE_MAPPED))
			return 0;
		new = (old & PTE_ADDR) | op->bits;
		if (new &PTE_P) {
			int r = ensure_slots(as, (new &PTE_ADDR) + PAGE);

			if (r < 0)
				return r;
		}
		break;
	}
	if ((old & PTE_P) && old != new)
		op->flush = true;
	*e = new;
	return 0;
}

/* Applies op to [va, end), inside the region of the level-`level` table `table` (lock held). */
static int pt_range(struct kvm_as *as, uint64_t table, int level, uint64_t va, uint64_t end,
		    struct pt_op *op)
{
	uint64_t *t = (uint64_t *)gpa(as, table);
	unsigned shift = 12 + 9 * (unsigned)level;
	int r;

	while (va < end) {
		uint64_t *e = &t[(va >> shift) & 511];
		uint64_t lo = va & ~((1ULL << shift) - 1), hi = lo + (1ULL << shift);
		uint64_t stop = end < hi ? end : hi;

		if (level == 0) {
			r = pt_leaf_op(as, e, va, op);
			if (r < 0)
				return r;
			va = stop;
			continue;
		}
		if (!(*e & PTE_P)) {
			bool chunk = *e & PTE_MAPPED, whole = va == lo && stop == hi && level <= 2;

			if (op->kind != PT_MAP && !chunk) { /* nothing mapped there */
				va = stop;
				continue;
			}
			if (whole && !(op->bits & PTE_P)) {
				if (op->kind == PT_UNMAP)
					*e = 0;
				else if (op->kind == PT_MAP)
					*e = (op->off0 + (lo - op->va0)) | PTE_MAPPED;
				/* PT_PROTECT to PROT_NONE: a chunk is PROT_NONE already */
				va = stop;
				continue;
			}
			r = pt_expand(as, e, level);
			if (r < 0)
				return r;
		}
		r = pt_range(as, *e & PTE_ADDR, level - 1, va, stop, op);
		if (r < 0)
			return r;
		va = stop;
	}
	return 0;
}

/* Runs op over [addr, addr+len) of the user half, then flushes if it must. */
static int pt_edit(struct kvm_as *as, uint64_t addr, uint64_t len, struct pt_op *op,
		   uint64_t *count)
{
	uint64_t t0 = tracing() ? mono_ns() : 0;
	int ret;

	pthread_mutex_lock(&as->lock);
	ret = pt_range(as, as->pml4, 3, addr, addr + len, op);
	if (op->flush)
		tlb_changed(as);
	trace_edit(as, count, len, t0);
	pthread_mutex_unlock(&as->lock);
	return ret;
}

static int kvm_as_map(struct platform_as *pas, uint64_t addr, uint64_t len, int prot, uint64_t off)
{
	struct kvm_as *as = (struct kvm_as *)pas;
	uint64_t memsize = kp_of(pas->p)->memsize;
	struct pt_op op = { .kind = PT_MAP, .bits = prot_bits(prot), .va0 = addr, .off0 = off };

	if (!range_ok(addr, len) || (off & (PAGE - 1)) || off >= memsize || len > memsize - off ||
	    (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)))
		return -EINVAL;
	if (op.bits & PTE_P) {
		int ret = ensure_slots(as, off + len);

		if (ret < 0)
			return ret;
	}
	return pt_edit(as, addr, len, &op, &as->st.maps);
}

static int kvm_as_unmap(struct platform_as *pas, uint64_t addr, uint64_t len)
{
	struct kvm_as *as = (struct kvm_as *)pas;
	struct pt_op op = { .kind = PT_UNMAP };

	if (!range_ok(addr, len))
		return -EINVAL;
	return pt_edit(as, addr, len, &op, &as->st.unmaps);
}

static int kvm_as_protect(struct platform_as *pas, uint64_t addr, uint64_t len, int prot)
{
	struct kvm_as *as = (struct kvm_as *)pas;
	struct pt_op op = { .kind = PT_PROTECT, .bits = prot_bits(prot) };

	if (!range_ok(addr, len) || (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)))
		return -EINVAL;
	return pt_edit(as, addr, len, &op, &as->st.protects);
}

/* Maps one page of the ring-0 area (lock held). */
static int kmap(struct kvm_as *as, uint64_t va, uint64_t off, bool write, bool exec)
{
	uint64_t *e = pt_leaf(as, va, true, false);

	if (!e)
		return -ENOMEM;
	*e = off | PTE_P | (write ? PTE_W : 0) | (exec ? 0 : PTE_NX);
	return 0;
}

static void put_bytes(uint8_t *code, unsigned at, const uint8_t *b, size_t n)
{
	memcpy(code + at, b, n);
}

static void build_code(uint8_t *code)
{
	static const uint8_t sys[] = { 0xe6, KVM_PORT_SYSCALL, 0x0f, 0x0b };
	static const uint8_t iret[] = { 0x0f, 0x20, 0xd8, 0x0f, 0x22, 0xd8, 0x58, 0x48, 0xcf };

	memset(code, 0xcc, PAGE);
	put_bytes(code, CODE_SYSCALL, sys, sizeof(sys));
	put_bytes(code, CODE_IRET_FLUSH, iret, sizeof(iret));
	for (int v = 0; v < 32; v++) {
		unsigned at = CODE_TRAP(v);
		bool has_err = v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 ||
			       v == 30;

		if (!has_err) {
			code[at++] = 0x6a; /* push $0 */
			code[at++] = 0;
		}
		const uint8_t t[] = { 0x6a, (uint8_t)v, 0xe6, KVM_PORT_TRAP, 0x0f, 0x0b };
		put_bytes(code, at, t, sizeof(t));
	}
}

static void build_idt(uint8_t *idt)
{
	memset(idt, 0, PAGE);
	for (int v = 0; v < 32; v++) {
		uint64_t h = KVA_CODE + CODE_TRAP(v);
		uint8_t *g = idt + v * 16;
		/* Interrupt gate, IST 1; int3 (and into) may be used from ring 3. */
		uint8_t attr = (v == 3 || v == 4) ? 0xee : 0x8e;

		g[0] = h & 0xff;
		g[1] = (h >> 8) & 0xff;
		g[2] = SEL_KCODE;
		g[3] = 0;
		g[4] = 1;
		g[5] = attr;
		g[6] = (h >> 16) & 0xff;
		g[7] = (h >> 24) & 0xff;
		memcpy(g + 8, (uint32_t[]){ (uint32_t)(h >> 32) }, 4);
	}
}

static int platform_open(int memfd, struct platform **out);

static int kvm_as_create(struct platform *p, struct platform_as **out)
{
	struct kvm_platform *kp = kp_of(p);
	struct kvm_as *as;
	uint64_t t0 = tracing() ? mono_ns() : 0;
	int ret;

	if (!p->mem_base || !p->mem_alloc)
		return -ENOSYS;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->base.p = p;
	pthread_mutex_init(&as->lock, NULL);
	pthread_mutex_init(&as->slot_lock, NULL);
	as->vm = ioctl(kp->kvm, KVM_CREATE_VM, 0);
	if (as->vm < 0) {
		ret = -errno;
		free(as);
		return ret;
	}
	fcntl(as->vm, F_SETFD, FD_CLOEXEC);
	int64_t pml4 = page_alloc(as), code = page_alloc(as), idt = page_alloc(as);

	as->pml4 = pml4 < 0 ? 0 : (uint64_t)pml4;
	as->code = code < 0 ? 0 : (uint64_t)code;
	as->idt = idt < 0 ? 0 : (uint64_t)idt;
	if (pml4 < 0 || code < 0 || idt < 0) {
		ret = -ENOMEM;
		goto fail;
	}
	build_code(gpa(as, as->code));
	build_idt(gpa(as, as->idt));
	pthread_mutex_lock(&as->lock);
	ret = kmap(as, KVA_CODE, as->code, false, true);
	if (ret == 0)
		ret = kmap(as, KVA_IDT, as->idt, false, false);
	pthread_mutex_unlock(&as->lock);
	if (ret < 0)
		goto fail;
	if (t0)
		log_debug("timing: kvm as_create (vm %d) %llu us", as->vm,
			  (unsigned long long)(mono_ns() - t0) / 1000);
	*out = &as->base;
	return 0;
fail:
	close(as->vm);
	for (size_t i = 0; i < as->ntables; i++)
		page_free(as, as->tables[i]);
	if (pml4 >= 0)
		page_free(as, (uint64_t)pml4);
	if (code >= 0)
		page_free(as, (uint64_t)code);
	if (idt >= 0)
		page_free(as, (uint64_t)idt);
	free(as->tables);
	free(as);
	return ret;
}

static void ctx_free(struct kvm_ctx *c)
{
	struct kvm_as *as = c->as;

	if (tracing() && c->st.created_ns)
		log_debug(
			"kvm: vCPU %d of vm %d: %llu runs (%llu calls, %llu faults, %llu kicks, "
			"%llu TLB kicks, %llu flushes, %llu SET_SREGS), %llu ms in KVM_RUN of %llu "
			"ms alive",
			c->id, as->vm, (unsigned long long)c->st.runs,
			(unsigned long long)c->st.syscalls, (unsigned long long)c->st.faults,
			(unsigned long long)c->st.kicks, (unsigned long long)c->st.tlb_kicks,
			(unsigned long long)c->st.flushes, (unsigned long long)c->st.sregs_sets,
			(unsigned long long)c->st.run_ns / 1000000,
			(unsigned long long)(mono_ns() - c->st.created_ns) / 1000000);

	pthread_mutex_lock(&as->lock);
	as->ctxs[c->id] = NULL;
	/* Its pages stay mapped in this VM's ring-0 area (ids are not reused): freed with it. */
	if (tables_push(as, c->sys) < 0 || tables_push(as, c->stack) < 0)
		log_warn("kvm: vCPU %d: its pages leak until the sandbox ends", c->id);
	pthread_mutex_unlock(&as->lock);
	if (c->run)
		munmap(c->run, kp_of(as->base.p)->run_size);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void kvm_as_destroy(struct platform_as *pas)
{
	struct kvm_as *as = (struct kvm_as *)pas;

	if (tracing())
		log_debug(
			"kvm: vm %d: %llu maps, %llu unmaps, %llu protects over %llu pages in %llu "
			"ms, %llu TLB kicks; %zu page-table pages, %u slots, %u vCPUs",
			as->vm, (unsigned long long)as->st.maps, (unsigned long long)as->st.unmaps,
			(unsigned long long)as->st.protects, (unsigned long long)as->st.pages,
			(unsigned long long)as->st.ns / 1000000, (unsigned long long)as->st.kicks,
			as->ntables, as->nslots, as->vcpu_ids);

	for (int i = 0; i < MAX_VCPUS; i++)
		if (as->ctxs[i])
			ctx_free(as->ctxs[i]);
	close(as->vm);
	for (size_t i = 0; i < as->ntables; i++)
		page_free(as, as->tables[i]);
	page_free(as, as->pml4);
	page_free(as, as->code);
	page_free(as, as->idt);
	free(as->tables);
	free(as);
}

static void seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code64)
{
	*s = (struct kvm_segment){ .base = 0,
				   .limit = 0xffffffff,
				   .selector = sel,
				   .type = type,
				   .present = 1,
				   .dpl = sel & 3,
				   .db = !code64,
				   .s = 1,
				   .l = code64,
				   .g = 1 };
}

static int vcpu_setup(struct kvm_ctx *c)
{
	struct kvm_platform *kp = kp_of(c->as->base.p);
	struct kvm_as *as = c->as;
	uint8_t *sys = gpa(as, c->sys);
	uint64_t tss_va = KVA_VCPU(c->id) + TSS_OFF;
	uint64_t stack_top = KVA_STACK(c->id) + PAGE;

	/* GDT: Linux's selectors; the TSS descriptor at 0x40. */
	uint64_t *gdt = (uint64_t *)sys;
	gdt[SEL_KCODE >> 3] = 0x00af9b000000ffffULL;
	gdt[SEL_KDATA >> 3] = 0x00cf93000000ffffULL;
	gdt[SEL_UCODE32 >> 3] = 0x00cffb000000ffffULL;
	gdt[SEL_UDATA >> 3] = 0x00cff3000000ffffULL;
	gdt[SEL_UCODE >> 3] = 0x00affb000000ffffULL;
	gdt[SEL_TSS >> 3] = 0x67 | ((tss_va & 0xffffff) << 16) | (0x89ULL << 40) |
			    (((tss_va >> 24) & 0xff) << 56);
	gdt[(SEL_TSS >> 3) + 1] = tss_va >> 32;
	/* TSS: rsp0 and IST1 are the ring-0 stack; no I/O bitmap (iomap base past the limit). */
	uint8_t *tss = sys + TSS_OFF;
	memcpy(tss + 4, &stack_top, 8);
	memcpy(tss + 0x24, &stack_top, 8);
	uint16_t iomap = 0x68;
	memcpy(tss + 0x66, &iomap, 2);

	if (ioctl(c->fd, KVM_SET_CPUID2, kp->cpuid) < 0)
		return -errno;
	struct kvm_sregs *s = &c->sregs;
	if (ioctl(c->fd, KVM_GET_SREGS, s) < 0)
		return -errno;
	seg(&s->cs, SEL_KCODE, 11, true);
	seg(&s->ss, SEL_KDATA, 3, false);
	s->ds = s->es = s->ss;
	seg(&s->fs, 0, 3, false);
	s->gs = s->fs;
	s->fs.base = s->gs.base = 0;
	s->tr = (struct kvm_segment){
		.base = tss_va, .limit = 0x67, .selector = SEL_TSS, .type = 11, .present = 1
	};
	s->ldt = (struct kvm_segment){ .unusable = 1 };
	s->gdt.base = KVA_VCPU(c->id);
	s->gdt.limit = 0x4f;
	s->idt.base = KVA_IDT;
	s->idt.limit = 32 * 16 - 1;
	s->cr0 = 0x80050033; /* PG AM WP NE ET MP PE */
	s->cr3 = as->pml4;
	s->cr4 = 0x20 | 0x200 | 0x400 |
		 (kp->xcr0 ? 0x40000 : 0); /* PAE OSFXSR OSXMMEXCPT OSXSAVE */
	s->efer = 0x1 | 0x100 | 0x400 | 0x800; /* SCE LME LMA NXE */
	if (ioctl(c->fd, KVM_SET_SREGS, s) < 0)
		return -errno;
	c->kernel_segs = true;
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e[4];
	} msrs = { .h.nmsrs = 4,
		   .e = { { .index = MSR_STAR,
			    .data = ((uint64_t)SEL_UCODE32 << 48) | ((uint64_t)SEL_KCODE << 32) },
			  { .index = MSR_LSTAR, .data = KVA_CODE + CODE_SYSCALL },
			  { .index = MSR_CSTAR, .data = KVA_CODE + CODE_SYSCALL },
			  { .index = MSR_SFMASK, .data = SFMASK_BITS } } };
	if (ioctl(c->fd, KVM_SET_MSRS, &msrs) != 4)
		return -EIO;
	if (kp->xcr0) {
		struct kvm_xcrs x = { .nr_xcrs = 1, .xcrs = { { .xcr = 0, .value = kp->xcr0 } } };

		if (ioctl(c->fd, KVM_SET_XCRS, &x) < 0)
			return -errno;
	}
	c->run->kvm_valid_regs = KVM_SYNC_X86_REGS;
	return 0;
}

static int vcpu_create(struct kvm_as *as, struct kvm_ctx **out)
{
	struct kvm_platform *kp = kp_of(as->base.p);
	struct kvm_ctx *c = calloc(1, sizeof(*c));
	uint64_t t0 = tracing() ? mono_ns() : 0;
	int ret;

	if (!c)
		return -ENOMEM;
	c->as = as;
	c->base.as = &as->base;
	c->fd = -1;
	c->id = (int)__atomic_fetch_add(&as->vcpu_ids, 1, __ATOMIC_RELAXED);
	if (c->id >= MAX_VCPUS) {
		free(c);
		return -EAGAIN;
	}
	int64_t sys = page_alloc(as), stack = page_alloc(as);
	if (sys < 0 || stack < 0) {
		if (sys >= 0)
			page_free(as, (uint64_t)sys);
		if (stack >= 0)
			page_free(as, (uint64_t)stack);
		free(c);
		return -ENOMEM;
	}
	c->sys = (uint64_t)sys;
	c->stack = (uint64_t)stack;
	pthread_mutex_lock(&as->lock);
	ret = kmap(as, KVA_VCPU(c->id), c->sys, true, false);
	if (ret == 0)
		ret = kmap(as, KVA_STACK(c->id), c->stack, true, false);
	as->ctxs[c->id] = c;
	pthread_mutex_unlock(&as->lock);
	if (ret < 0)
		goto fail;
	c->fd = ioctl(as->vm, KVM_CREATE_VCPU, c->id);
	if (c->fd < 0) {
		ret = -errno;
		goto fail;
	}
	fcntl(c->fd, F_SETFD, FD_CLOEXEC);
	c->run = mmap(NULL, kp->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (c->run == MAP_FAILED) {
		c->run = NULL;
		ret = -errno;
		goto fail;
	}
	ret = vcpu_setup(c);
	if (ret < 0)
		goto fail;
	if (t0) {
		c->st.created_ns = mono_ns();
		log_debug("timing: kvm vCPU %d of vm %d created in %llu us", c->id, as->vm,
			  (unsigned long long)(c->st.created_ns - t0) / 1000);
	}
	*out = c;
	return 0;
fail:
	ctx_free(c);
	return ret;
}

static int kvm_ctx_create(struct platform_as *pas, struct platform_ctx **out)
{
	struct kvm_ctx *c;
	int ret = vcpu_create((struct kvm_as *)pas, &c);

	if (ret < 0)
		return ret;
	c->owner = pthread_self();
	c->owner_tid = (pid_t)syscall(SYS_gettid);
	*out = &c->base;
	return 0;
}

static int kvm_ctx_clone(struct platform_ctx *from, struct platform_ctx **out)
{
	struct kvm_ctx *c;
	int ret = vcpu_create(((struct kvm_ctx *)from)->as, &c);

	if (ret < 0)
		return ret;
	*out = &c->base;
	return 0;
}

static int kvm_ctx_adopt(struct platform_ctx *pc)
{
	struct kvm_ctx *c = (struct kvm_ctx *)pc;

	c->owner = pthread_self();
	__atomic_store_n(&c->owner_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return 0;
}

static void kvm_ctx_destroy(struct platform_ctx *pc)
{
	ctx_free((struct kvm_ctx *)pc);
}

static bool is_owner(struct kvm_ctx *c)
{
	return c->owner_tid && pthread_equal(c->owner, pthread_self());
}

/* The signal, si_code and address Linux gives for an exception taken in user mode. */
static void fault_event(int vec, uint64_t err, uint64_t cr2, struct platform_event *ev)
{
	ev->kind = PLATFORM_EV_FAULT;
	ev->trapno = vec;
	ev->addr = 0;
	switch (vec) {
	case 0:
		ev->signo = SIGFPE, ev->code = FPE_INTDIV;
		break;
	case 1:
		ev->signo = SIGTRAP, ev->code = TRAP_TRACE;
		break;
	case 3:
		ev->signo = SIGTRAP, ev->code = SI_KERNEL;
		break;
	case 6:
		ev->signo = SIGILL, ev->code = ILL_ILLOPN;
		break;
	case 14:
		ev->signo = SIGSEGV, ev->code = (err & 1) ? SEGV_ACCERR : SEGV_MAPERR;
		ev->addr = cr2;
		break;
	case 16:
	case 19:
		ev->signo = SIGFPE, ev->code = FPE_FLTINV;
		break;
	case 17:
		ev->signo = SIGBUS, ev->code = BUS_ADRALN;
		break;
	default: /* #GP, #SS, #NP, #BR, into, ...: what Linux's do_general_protection sends */
		ev->signo = SIGSEGV, ev->code = SI_KERNEL;
		break;
	}
}

static void to_user_regs(const struct kvm_regs *r, arch_regs_t *u)
{
	u->rax = r->rax, u->rbx = r->rbx, u->rcx = r->rcx, u->rdx = r->rdx;
	u->rsi = r->rsi, u->rdi = r->rdi, u->rbp = r->rbp, u->rsp = r->rsp;
	u->r8 = r->r8, u->r9 = r->r9, u->r10 = r->r10, u->r11 = r->r11;
	u->r12 = r->r12, u->r13 = r->r13, u->r14 = r->r14, u->r15 = r->r15;
	u->rip = r->rip, u->eflags = r->rflags;
	u->cs = SEL_UCODE, u->ss = SEL_UDATA;
}

static int die(struct kvm_ctx *c, struct platform_event *ev, const char *why, unsigned reason)
{
	log_warn("kvm: vCPU %d: %s (exit reason %u, rip %#llx, port %#x): the space is killed",
		 c->id, why, reason, (unsigned long long)c->run->s.regs.regs.rip,
		 reason == KVM_EXIT_IO ? c->run->io.port : 0);
	c->dead = true;
	memset(ev, 0, sizeof(*ev));
	ev->kind = PLATFORM_EV_DIED;
	return 0;
}

/* Puts the vCPU (in ring 0 at the stub) on the way to user mode with *u. */
static int enter(struct kvm_ctx *c, const arch_regs_t *u)
{
	struct kvm_as *as = c->as;
	uint64_t stack_va = KVA_STACK(c->id);
	uint64_t *frame = (uint64_t *)(gpa(as, c->stack) + PAGE - 6 * 8);
	uint64_t gen = __atomic_load_n(&as->tlb_gen, __ATOMIC_SEQ_CST);
	bool flush = gen != c->tlb_seen;

	c->tlb_seen = gen;
	if (!c->kernel_segs || c->sregs.fs.base != u->fs_base || c->sregs.gs.base != u->gs_base) {
		if (!c->kernel_segs && ioctl(c->fd, KVM_GET_SREGS, &c->sregs) < 0)
			return -errno;
		seg(&c->sregs.cs, SEL_KCODE, 11, true);
		seg(&c->sregs.ss, SEL_KDATA, 3, false);
		c->sregs.fs.base = u->fs_base;
		c->sregs.gs.base = u->gs_base;
		if (ioctl(c->fd, KVM_SET_SREGS, &c->sregs) < 0)
			return -errno;
		c->kernel_segs = true;
		c->st.sregs_sets++;
		flush = true; /* a CR3 reload costs little next to SET_SREGS */
	}
	c->st.flushes += flush;
	frame[0] = u->rax;
	frame[1] = u->rip;
	frame[2] = SEL_UCODE;
	frame[3] = (u->eflags & USER_FLAGS) | FLAGS_IF | 0x2;
	frame[4] = u->rsp;
	frame[5] = SEL_UDATA;
	struct kvm_regs *r = &c->run->s.regs.regs;
	*r = (struct kvm_regs){ .rbx = u->rbx,
				.rcx = u->rcx,
				.rdx = u->rdx,
				.rsi = u->rsi,
				.rdi = u->rdi,
				.rbp = u->rbp,
				.r8 = u->r8,
				.r9 = u->r9,
				.r10 = u->r10,
				.r11 = u->r11,
				.r12 = u->r12,
				.r13 = u->r13,
				.r14 = u->r14,
				.r15 = u->r15,
				.rsp = stack_va + PAGE - 6 * 8,
				.rip = KVA_CODE + (flush ? CODE_IRET_FLUSH : CODE_IRET),
				.rflags = 0x2 };
	c->run->kvm_dirty_regs = KVM_SYNC_X86_REGS;
	return 0;
}

static int kvm_ctx_switch(struct platform_ctx *pc, arch_regs_t *regs, struct platform_event *ev)
{
	struct kvm_ctx *c = (struct kvm_ctx *)pc;
	struct kvm_as *as = c->as;
	arch_regs_t u = *regs;
	int ret;

	if (!is_owner(c))
		return -EPERM;
	memset(ev, 0, sizeof(*ev));
	ev->trapno = -1;
	if (c->dead) {
		ev->kind = PLATFORM_EV_DIED;
		return 0;
	}
	__atomic_store_n(&kick_run, c->run, __ATOMIC_RELAXED);
	bool resume = false; /* run on from where the vCPU is (in a trap stub), u is stale */
	for (;;) {
		if (!resume && __atomic_exchange_n(&c->interrupt, false, __ATOMIC_SEQ_CST)) {
			ev->kind = PLATFORM_EV_INTERRUPT;
			*regs = u;
			break;
		}
		if (!resume) {
			ret = enter(c, &u);
			if (ret < 0)
				goto out;
		}
		resume = false;
		__atomic_store_n(&c->running, true, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&c->interrupt, __ATOMIC_SEQ_CST))
			__atomic_store_n(&c->run->immediate_exit, 1, __ATOMIC_RELAXED);
		uint64_t t0 = c->st.created_ns ? mono_ns() : 0;
		int r = ioctl(c->fd, KVM_RUN, 0);
		int err = errno;
		__atomic_store_n(&c->running, false, __ATOMIC_SEQ_CST);
		c->st.runs++;
		if (t0)
			c->st.run_ns += mono_ns() - t0;
		__atomic_store_n(&c->run->immediate_exit, 0, __ATOMIC_RELAXED);
		c->run->kvm_dirty_regs = 0;
		struct kvm_regs *kr = &c->run->s.regs.regs;

		if (r < 0 && err != EINTR && err != EAGAIN) {
			ret = -err;
			goto out;
		}
		if (r < 0 || c->run->exit_reason == KVM_EXIT_INTR) {
			/* A kick: where was the vCPU? */
			if (__atomic_load_n(&c->interrupt, __ATOMIC_RELAXED))
				c->st.kicks++;
			else
				c->st.tlb_kicks++;
			if (ioctl(c->fd, KVM_GET_SREGS, &c->sregs) < 0) {
				ret = -errno;
				goto out;
			}
			if ((c->sregs.cs.selector & 3) == 3) {
				/* In user mode: its registers are the guest's. */
				c->kernel_segs = false;
				to_user_regs(kr, &u);
				u.cs = c->sregs.cs.selector;
				u.ss = c->sregs.ss.selector;
				continue; /* an interrupt is reported at the top; a TLB kick re-enters */
			}
			if (kr->rip == KVA_CODE + CODE_SYSCALL) {
				/* Between `syscall` and the stub's exit: report the call. */
				to_user_regs(kr, regs);
				regs->rip = kr->rcx, regs->eflags = kr->r11;
				regs->orig_rax = kr->rax;
				regs->fs_base = u.fs_base, regs->gs_base = u.gs_base;
				ev->kind = PLATFORM_EV_SYSCALL;
				break;
			}
			/* At the iret stub: nothing ran, enter again (or report the interrupt). */
			if (kr->rip >= KVA_CODE + CODE_IRET_FLUSH &&
			    kr->rip < KVA_CODE + CODE_TRAP(0))
				continue;
			/* In a trap stub: the guest ran and faulted; run on to the stub's exit. */
			resume = true;
			continue;
		}
		switch (c->run->exit_reason) {
		case KVM_EXIT_IO:
			if (c->run->io.direction != KVM_EXIT_IO_OUT || c->run->io.size != 1)
				break;
			/* rip is at the `out` (KVM completes it only on the next KVM_RUN, and not
			 * once rip was changed) or, on some hosts, after it. */
			if (c->run->io.port == KVM_PORT_SYSCALL &&
			    (kr->rip == KVA_CODE + CODE_SYSCALL ||
			     kr->rip == KVA_CODE + CODE_SYSCALL + 2)) {
				to_user_regs(kr, regs);
				regs->rip = kr->rcx, regs->eflags = kr->r11;
				regs->orig_rax = kr->rax;
				regs->fs_base = u.fs_base, regs->gs_base = u.gs_base;
				ev->kind = PLATFORM_EV_SYSCALL;
				c->st.syscalls++;
				goto out_ok;
			}
			if (c->run->io.port == KVM_PORT_TRAP) {
				uint64_t sva = KVA_STACK(c->id);
				if (kr->rsp != sva + PAGE - 7 * 8)
					return die(c, ev, "trap frame not where it belongs", 0);
				const uint64_t *f =
					(const uint64_t *)(gpa(as, c->stack) + PAGE - 7 * 8);
				uint64_t vec = f[0], errc = f[1];
				if ((f[3] & 3) != 3 || vec >= 32)
					return die(c, ev, "exception in ring 0", (unsigned)vec);
				to_user_regs(kr, regs);
				regs->rip = f[2], regs->cs = f[3], regs->eflags = f[4];
				regs->rsp = f[5], regs->ss = f[6];
				regs->orig_rax = (uint64_t)-1;
				regs->fs_base = u.fs_base, regs->gs_base = u.gs_base;
				uint64_t cr2 = 0;
				if (vec == 14) {
					struct kvm_sregs s;
					if (ioctl(c->fd, KVM_GET_SREGS, &s) < 0) {
						ret = -errno;
						goto out;
					}
					cr2 = s.cr2;
				}
				fault_event((int)vec, errc, cr2, ev);
				c->st.faults++;
				goto out_ok;
			}
			break;
		default:
			break;
		}
		return die(c, ev, "unexpected exit", c->run->exit_reason);
	}
out_ok:
	ret = 0;
out:
	__atomic_store_n(&kick_run, NULL, __ATOMIC_RELAXED);
	return ret;
}

static void kvm_ctx_interrupt(struct platform_ctx *pc)
{
	struct kvm_ctx *c = (struct kvm_ctx *)pc;

	__atomic_store_n(&c->interrupt, true, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->owner_tid, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&c->running, __ATOMIC_SEQ_CST))
		pthread_kill(c->owner, KVM_KICK_SIGNAL);
}

static int kvm_ctx_get_fpstate(struct platform_ctx *pc, void *buf, size_t len)
{
	struct kvm_ctx *c = (struct kvm_ctx *)pc;
	struct kvm_xsave x;
	size_t size = platform_fpstate_size();

	if (!is_owner(c))
		return -EPERM;
	if (len < size)
		return -ENOSPC;
	if (size > sizeof(x))
		return -EOPNOTSUPP;
	if (ioctl(c->fd, KVM_GET_XSAVE, &x) < 0)
		return -errno;
	memcpy(buf, x.region, size);
	return (int)size;
}

static int kvm_ctx_set_fpstate(struct platform_ctx *pc, const void *buf, size_t len)
{
	struct kvm_ctx *c = (struct kvm_ctx *)pc;
	struct kvm_xsave x;
	size_t size = platform_fpstate_size();

	if (!is_owner(c))
		return -EPERM;
	if (len != size || size > sizeof(x))
		return -EINVAL;
	memset(&x, 0, sizeof(x));
	memcpy(x.region, buf, size);
	if (ioctl(c->fd, KVM_SET_XSAVE, &x) < 0)
		return -EINVAL;
	return 0;
}

static void kvm_destroy(struct platform *p)
{
	struct kvm_platform *kp = kp_of(p);

	close(kp->kvm);
	free(kp->cpuid);
	free(kp);
}

static const struct platform_ops kvm_ops = {
	.name = "kvm",
	.as_create = kvm_as_create,
	.as_destroy = kvm_as_destroy,
	.as_map = kvm_as_map,
	.as_map_image = NULL,
	.as_unmap = kvm_as_unmap,
	.as_protect = kvm_as_protect,
	.ctx_create = kvm_ctx_create,
	.ctx_destroy = kvm_ctx_destroy,
	.ctx_clone = kvm_ctx_clone,
	.ctx_adopt = kvm_ctx_adopt,
	.ctx_switch = kvm_ctx_switch,
	.ctx_interrupt = kvm_ctx_interrupt,
	.destroy = kvm_destroy,
	.ctx_get_fpstate = kvm_ctx_get_fpstate,
	.ctx_set_fpstate = kvm_ctx_set_fpstate,
};

bool kvm_platform_available(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	bool ok = fd >= 0 && ioctl(fd, KVM_GET_API_VERSION, 0) == KVM_API_VERSION;

	if (fd >= 0)
		close(fd);
	return ok;
}

static struct kvm_cpuid_entry2 *cpuid_entry(struct kvm_cpuid2 *c, uint32_t fn, uint32_t index)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == index)
			return &c->entries[i];
	return NULL;
}

/* XSAVE components (bits of XCR0) the guest may not have. */
#define XFEATURE_PKRU (1ULL << 9)
#define XFEATURE_XTILE (3ULL << 17) /* XTILECFG and XTILEDATA: both or neither */

/*
 * The guest's XCR0: the user state the host kernel enabled (what the sentry's signal frames
 * hold), as far as KVM supports it, without what the platform cannot keep: components that end
 * past KVM_GET_XSAVE's 4096 bytes (AMX tile data), AMX altogether, and PKRU (CR4.PKE is off).
 * 0 without XSAVE.
 */
static uint64_t guest_xcr0(struct kvm_cpuid2 *c)
{
	struct kvm_cpuid_entry2 *d = cpuid_entry(c, 0xd, 0);

	if (!d)
		return 0;
	uint64_t x = platform_user_xfeatures() & (d->eax | ((uint64_t)d->edx << 32));

	x &= ~(XFEATURE_PKRU | XFEATURE_XTILE);
	for (unsigned i = 2; i < 63; i++) {
		struct kvm_cpuid_entry2 *e = cpuid_entry(c, 0xd, i);

		if ((x & (1ULL << i)) &&
		    (!e || (uint64_t)e->ebx + e->eax > sizeof(struct kvm_xsave)))
			x &= ~(1ULL << i);
	}
	/* AVX-512's three components go together (XSETBV refuses a part of them). */
	if ((x & 0xe0) != 0xe0)
		x &= ~0xe0ULL;
	return x ? x | 0x3 : 0;
}

/* CPUID bits (leaf/register: bit). */
#define CPUID1_ECX_MONITOR (1U << 3)
#define CPUID1_ECX_VMX (1U << 5)
#define CPUID1_ECX_HYPERVISOR (1U << 31)
#define CPUID7_EBX_FSGSBASE (1U << 0)
#define CPUID7_ECX_UMIP (1U << 2)
#define CPUID7_ECX_PKU (1U << 3)
#define CPUID7_ECX_OSPKE (1U << 4)
#define CPUID7_ECX_WAITPKG (1U << 5)
#define CPUID7_ECX_CET_SS (1U << 7)
#define CPUID7_ECX_LA57 (1U << 16)
#define CPUID7_EDX_CET_IBT (1U << 20)
#define CPUID7_EDX_AMX (1U << 22 | 1U << 24 | 1U << 25) /* AMX-BF16, AMX-TILE, AMX-INT8 */
#define CPUIDD1_EAX_XFD (1U << 4)
#define CPUID81_ECX_SVM (1U << 2)

/*
 * What the guest's `cpuid` says: KVM's supported CPUID without what this VM does not give. No
 * feature whose CR4 bit stays off (FSGSBASE: wrfsbase would be #UD; PKU; UMIP, LA57, CET),
 * no virtualisation (VMX, SVM) nor MONITOR (ring 0 here), no KVM paravirtual leaves
 * (0x40000000-0x400000ff: no kvmclock or other KVM interface is set up), and the XSAVE leaf
 * and AMX leaves cut to the guest's XCR0. The hypervisor bit is the host's own: a guest sees
 * what it sees on the other platforms, where `cpuid` runs on the host.
 */
static void cpuid_filter(struct kvm_cpuid2 *c, uint64_t xcr0)
{
	unsigned eax, ebx, ecx = 0, edx, n = 0;
	uint32_t maxend = 576; /* the legacy area and the XSAVE header */

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		ecx = 0;
	uint32_t host_hv = ecx & CPUID1_ECX_HYPERVISOR;

	for (unsigned i = 2; i < 63; i++) {
		struct kvm_cpuid_entry2 *e = cpuid_entry(c, 0xd, i);

		if ((xcr0 & (1ULL << i)) && e && e->ebx + e->eax > maxend)
			maxend = e->ebx + e->eax;
	}
	for (unsigned i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 e = c->entries[i];

		if (e.function >= 0x40000000 && e.function <= 0x400000ff)
			continue;
		switch (e.function) {
		case 1:
			e.ecx &= ~(CPUID1_ECX_MONITOR | CPUID1_ECX_VMX | CPUID1_ECX_HYPERVISOR);
			e.ecx |= host_hv;
			if (!xcr0)
				e.ecx &= ~(1U << 26 | 1U << 28); /* XSAVE, AVX */
			break;
		case 7:
			if (e.index != 0)
				break;
			e.ebx &= ~CPUID7_EBX_FSGSBASE;
			e.ecx &= ~(CPUID7_ECX_UMIP | CPUID7_ECX_PKU | CPUID7_ECX_OSPKE |
				   CPUID7_ECX_WAITPKG | CPUID7_ECX_CET_SS | CPUID7_ECX_LA57);
			e.edx &= ~(CPUID7_EDX_CET_IBT | CPUID7_EDX_AMX);
			break;
		case 0xd:
			if (e.index == 0) {
				e.eax = (uint32_t)xcr0;
				e.edx = (uint32_t)(xcr0 >> 32);
				e.ecx = maxend;
			} else if (e.index == 1) {
				e.eax &= ~CPUIDD1_EAX_XFD;
			} else if (e.index < 63 && !(xcr0 & (1ULL << e.index))) {
				e.eax = e.ebx = e.ecx = e.edx = 0;
			}
			break;
		case 0x1d:
		case 0x1e: /* AMX tile information */
			e.eax = e.ebx = e.ecx = e.edx = 0;
			break;
		case 0x80000001:
			e.ecx &= ~CPUID81_ECX_SVM;
			break;
		default:
			break;
		}
		c->entries[n++] = e;
	}
	c->nent = n;
}

static int platform_open(int memfd, struct platform **out)
{
	struct kvm_platform *kp = calloc(1, sizeof(*kp));
	struct stat st;
	int ret;

	if (!kp)
		return -ENOMEM;
	kp->base.ops = &kvm_ops;
	kp->base.memfd = memfd;
	kp->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kp->kvm < 0) {
		ret = errno == ENOENT ? -ENODEV : -errno; /* -ENOENT means "no such platform" */
		free(kp);
		return ret;
	}
	ret = -ENOSYS;
	if (ioctl(kp->kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION ||
	    !(ioctl(kp->kvm, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS) & KVM_SYNC_X86_REGS) ||
	    !ioctl(kp->kvm, KVM_CHECK_EXTENSION, KVM_CAP_IMMEDIATE_EXIT))
		goto fail;
	kp->run_size = ioctl(kp->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (kp->run_size < (int)sizeof(struct kvm_run))
		goto fail;
	if (fstat(memfd, &st) < 0) {
		ret = -errno;
		goto fail;
	}
	kp->memsize = (uint64_t)st.st_size & ~(PAGE - 1);
	int nent = 256;
	kp->cpuid = calloc(1, sizeof(*kp->cpuid) + nent * sizeof(struct kvm_cpuid_entry2));
	if (!kp->cpuid) {
		ret = -ENOMEM;
		goto fail;
	}
	kp->cpuid->nent = nent;
	if (ioctl(kp->kvm, KVM_GET_SUPPORTED_CPUID, kp->cpuid) < 0) {
		ret = -errno;
		goto fail;
	}
	unsigned phys_bits = 36;
	for (unsigned i = 0; i < kp->cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &kp->cpuid->entries[i];

		if (e->function == 0x80000008 && (e->eax & 0xff) >= 36)
			phys_bits = e->eax & 0xff;
	}
	/* Guest physical addresses must fit the guest's MAXPHYADDR (40 bits under QEMU/TCG):
	 * the slots cover no more of the memory file (4 TiB in the sentry); as_map beyond fails. */
	if (phys_bits < 63 && kp->memsize > (1ULL << phys_bits))
		kp->memsize = 1ULL << phys_bits;
	kp->xcr0 = guest_xcr0(kp->cpuid);
	cpuid_filter(kp->cpuid, kp->xcr0);
	/* SA_RESTART: a kick that lands after KVM_RUN returned must not fail the sentry's next
	 * host call with EINTR (KVM_RUN itself is never restarted). */
	struct sigaction sa = { .sa_handler = kick_handler, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(KVM_KICK_SIGNAL, &sa, NULL) < 0) {
		ret = -errno;
		goto fail;
	}
	*out = &kp->base;
	return 0;
fail:
	close(kp->kvm);
	free(kp->cpuid);
	free(kp);
	return ret;
}

static int64_t selftest_alloc(void *arg, uint64_t len)
{
	uint64_t *next = arg;
	int64_t off = (int64_t)*next;

	if (*next + len > 64 * PAGE)
		return -ENOMEM;
	*next += len;
	return off;
}

static void selftest_free(void *arg, uint64_t off, uint64_t len)
{
	(void)arg, (void)off, (void)len;
}

int kvm_platform_selftest(void)
{
	static const uint8_t code[] = { 0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7 };
	uint64_t next = 0, size = 64 * PAGE;
	struct platform *p = NULL;
	struct platform_as *as = NULL;
	struct platform_ctx *ctx = NULL;
	uint8_t *base = MAP_FAILED;
	int memfd = memfd_create("husk-kvm-selftest", MFD_CLOEXEC);
	int ret;

	if (memfd < 0)
		return -errno;
	if (ftruncate(memfd, (off_t)size) < 0) {
		ret = -errno;
		goto out;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (base == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	ret = platform_open(memfd, &p);
	if (ret < 0)
		goto out;
	p->mem_base = base;
	p->mem_alloc = selftest_alloc;
	p->mem_free = selftest_free;
	p->mem_arg = &next;
	ret = kvm_as_create(p, &as);
	if (ret < 0)
		goto out;
	int64_t page = selftest_alloc(&next, PAGE);
	if (page < 0) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(base + page, code, sizeof(code));
	ret = kvm_as_map(as, 0x10000, PAGE, PROT_READ | PROT_EXEC, (uint64_t)page);
	if (ret == 0)
		ret = kvm_ctx_create(as, &ctx);
	if (ret < 0)
		goto out;
	arch_regs_t r = { .rip = 0x10000, .eflags = 0x202 };
	struct platform_event ev;
	for (int i = 0; i < 2 && ret == 0; i++) {
		ret = kvm_ctx_switch(ctx, &r, &ev);
		if (ret == 0 &&
		    (ev.kind != PLATFORM_EV_SYSCALL || r.orig_rax != 39 || r.rip != 0x10007))
			ret = -ENOTSUP;
	}
out:
	if (as)
		kvm_as_destroy(as);
	if (p)
		kvm_destroy(p);
	if (base != MAP_FAILED)
		munmap(base, size);
	close(memfd);
	return ret;
}

/* The self-test's result, run once per process. */
static int selftest_once(void)
{
	static int selftest = 1; /* 1: not run yet; else its result (atomic) */
	int st = __atomic_load_n(&selftest, __ATOMIC_ACQUIRE);

	if (st == 1) {
		st = kvm_platform_selftest();
		if (st < 0)
			log_info("kvm: the self-test fails on this host's KVM: %s", strerror(-st));
		__atomic_store_n(&selftest, st, __ATOMIC_RELEASE);
	}
	return st;
}

bool kvm_platform_usable(void)
{
	unsigned eax, ebx, ecx, edx;
	bool vmx = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & CPUID1_ECX_VMX);
	bool svm = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & CPUID81_ECX_SVM);

	return (vmx || svm) && kvm_platform_available() && selftest_once() == 0;
}

int kvm_platform_create(int memfd, struct platform **out)
{
	int st = selftest_once();

	if (st < 0)
		return st == -ENOENT ? -ENODEV : st;
	return platform_open(memfd, out);
}
