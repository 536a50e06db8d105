/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A guest address space: its VMAs, brk, and the platform address space that mirrors them.
 *
 * Every VMA is backed by memory-file pages (private anonymous memory and private file mappings
 * alike: file contents are copied in when the mapping is made). The platform space is told
 * about every change, so guest accesses to mapped memory never fault into the sentry.
 *
 * copy_in/copy_out go through the sentry's mapping of the memory file after checking the
 * VMAs and their protections (DESIGN.md rule 6), and fail with -EFAULT on bad guest pointers.
 *
 * Locking: mm->lock (a mutex) protects the VMA set, brk and the layout fields.
 */
#ifndef HUSK_SENTRY_MM_H
#define HUSK_SENTRY_MM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "common/refcount.h"

struct kernel;
struct file;
struct platform_as;
struct mm_patch;

struct mm {
	struct refcount ref;
	struct kernel *k;
	struct platform_as *as; /* owned */
	pthread_mutex_t lock;
	void *vmas; /* VMA set, private to sentry/mm; protected by lock */

	/* Layout, set by the loader; protected by lock. */
	uint64_t start_brk, brk;
	uint64_t start_data, end_data; /* the last PT_LOAD's file bytes (brk's RLIMIT_DATA check) */
	uint64_t mmap_base; /* top of the area for mappings without a hint (grows down) */
	uint64_t stack_top;
	uint64_t arg_start, arg_end, env_start, env_end;
	uint64_t auxv[64]; /* copy of the auxv pairs, for /proc/self/auxv later */
	int auxv_len;

	/*
	 * The calling process's RLIMIT_AS, RLIMIT_DATA and RLIMIT_DATA hard limit in bytes
	 * (UINT64_MAX: unlimited), set by mm_set_limits before each mapping call; atomic.
	 */
	uint64_t limit_as, limit_data, limit_data_max;

	/* Copy-on-write statistics (lock): pages copied, and pages taken over without a copy. */
	uint64_t cow_copied, cow_reused;

	/*
	 * Bumped by every change to the platform's mappings of this mm (lock). It starts at a
	 * value no other mm had, so (this count, page) names one state of one page: a fault that
	 * mm_handle_fault re-ran once is a real one only if the count has not moved since.
	 */
	uint64_t plat_changes;

	/*
	 * Pinned translations (mm_translate_pin) not yet unpinned, counted in iovecs (lock);
	 * io_idle is signalled when it drops to 0 (fork waits for it, briefly).
	 */
	unsigned int io_pins;
	pthread_cond_t io_idle;

	/* Pages made accessible lazily without plain write access (lock): a fault on such a
	 * page may be another thread's stale view of it (fault.c). */
	bool lazy_ro;

	/* Syscall patching (patch.c): its state, NULL until first used; taken before lock. */
	pthread_mutex_t patch_lock;
	struct mm_patch *patch;
};

/*
 * Creates an empty address space and its platform space. The calling thread becomes the owner
 * of the platform space (see platform.h). Returns the mm or ERR_PTR(-errno).
 */
struct mm *mm_create(struct kernel *k);
/* An mm with no VMAs and no platform space yet (mm_activate makes it): for a restore. */
struct mm *mm_create_empty(struct kernel *k);
/* A restored VMA maps shared anonymous object obj: new objects get higher numbers. */
void mm_shm_obj_seen(uint64_t obj);
void mm_get(struct mm *mm);
/* Drops a reference; the last one unmaps everything, frees memory-file pages, destroys as. */
void mm_put(struct mm *mm);
/*
 * Called by the last mm_put before the mm goes, when set (once, before any guest runs or under
 * the setter's own lock): the AIO contexts of syscalls/sys_aio.c belong to an address space.
 */
extern void (*mm_release_hook)(struct mm *mm);
/*
 * Called when an mm gets its platform address space (mm_create, mm_activate; under mm->lock in
 * the latter) and, when the mm goes, before that space is destroyed: sentry/kernel/stubwatch.c
 * watches the host process behind it. Set once, before any guest runs.
 */
extern void (*mm_as_hook)(struct mm *mm);
extern void (*mm_as_release_hook)(struct mm *mm);

/*
 * fork(2): a new mm with the same VMAs whose private pages are shared copy-on-write with parent
 * (no page is copied now; both sides see their writable private pages write-protected until
 * the first write, which mm_handle_fault resolves). Must be called on the host thread that owns
 * parent's platform space (it write-protects the parent's pages there). The new mm has no
 * platform space yet: mm_activate creates it on the child's own thread. Returns the mm or
 * ERR_PTR(-errno).
 */
struct mm *mm_fork(struct mm *parent);
/*
 * Creates mm's platform space on the calling thread (which becomes its owner) if it has none,
 * and maps every VMA into it. No-op if it exists. Returns 0 or -errno (the mm then still has no
 * platform space). Until it is called, the mapping calls change only the VMAs.
 */
int mm_activate(struct mm *mm);
/*
 * A guest fault at addr (platform event FAULT SIGSEGV with code SEGV_MAPERR or SEGV_ACCERR) in
 * the space owned by the calling thread: resolves a copy-on-write write (copies the page, or
 * takes it over when no one else shares it, and maps it writable) and returns 0 so that the
 * guest re-runs the instruction; returns -EFAULT when the access is invalid (the caller sends
 * SIGSEGV), -EIO for a touch of a file mapping's page past the end of the file (the caller
 * sends SIGBUS with BUS_ADRERR).
 */
int mm_handle_fault(struct mm *mm, uint64_t addr, int code);
/*
 * Resolves copy-on-write for every page of [addr, addr+len) that is still shared with another mm
 * (the sentry is about to write there through its own mapping, e.g. for read(2) into a
 * buffer): afterwards the range is backed by pages this mm owns alone. mm_copy_out, mm_poke and
 * mm_translate(write) do it themselves. Unmapped parts are skipped. Returns 0 or -errno.
 */
int mm_unshare(struct mm *mm, uint64_t addr, uint64_t len);

/*
 * Sets the limits the next mapping calls check (the caller's RLIMIT_AS, and RLIMIT_DATA's soft
 * and hard values, in bytes; RLIM_INFINITY for none), as Linux's may_expand_vm: mmap, mremap,
 * brk and mprotect fail with -ENOMEM (brk: leave the break) when the mappings' total size
 * (total_vm) would pass as, or the private writable non-stack mappings (data_vm) data. brk also
 * fails when the heap plus the data segment would pass data. The mm starts unlimited; mms
 * shared by processes with different limits see the last caller's.
 */
void mm_set_limits(struct mm *mm, uint64_t as, uint64_t data, uint64_t data_max);

/*
 * mmap(2) semantics: prot PROT_*, flags MAP_* (MAP_PRIVATE|MAP_ANONYMOUS, MAP_PRIVATE with file,
 * MAP_SHARED with file or anonymous, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_GROWSDOWN,
 * MAP_NORESERVE, MAP_POPULATE accepted). file may be NULL for anonymous memory. A private file
 * mapping copies the file's bytes in now; a shared one maps the file's own pages (file op
 * get_pages; -ENODEV when the file has none), so that writes through it are the file's, and
 * keeps a reference on file. Returns the address or -errno.
 */
long mm_mmap(struct mm *mm, uint64_t addr, uint64_t len, int prot, int flags, struct file *file,
	     uint64_t off);
int mm_munmap(struct mm *mm, uint64_t addr, uint64_t len);
int mm_mprotect(struct mm *mm, uint64_t addr, uint64_t len, int prot);
/* brk(2): returns the new (or unchanged, on failure) break, never -errno. */
uint64_t mm_brk(struct mm *mm, uint64_t addr);
/*
 * mremap(2) semantics. old_len 0 on a shared mapping (and MREMAP_DONTUNMAP on one) maps the
 * same pages a second time; the part of the new mapping past the end of the old one gets pages
 * of its own (Linux: SIGBUS past the shared object's end).
 */
long mm_mremap(struct mm *mm, uint64_t old_addr, uint64_t old_len, uint64_t new_len, int flags,
	       uint64_t new_addr);
int mm_madvise(struct mm *mm, uint64_t addr, uint64_t len, int advice);
/*
 * Maps the time page (the memory-file page at vvar_off) and, right above it, the vDSO image
 * (image_len bytes at image_off) where a mapping without a hint would go (top-down below
 * mmap_base), as Linux's [vvar] and [vdso]: the image private and copy-on-write (read-execute;
 * mprotect may make it writable), the time page shared with every mm and never writable
 * (mprotect PROT_WRITE: -EACCES; MADV_REMOVE: -EINVAL; MADV_DONTNEED keeps the pages). Each
 * page takes a reference; the caller keeps its own. mremap may move or shrink either but not
 * grow it (-EFAULT) nor keep the old range (MREMAP_DONTUNMAP: -EINVAL), as Linux.
 * Returns the image's address or -errno.
 */
long mm_map_vdso(struct mm *mm, uint64_t vvar_off, uint64_t image_off, uint64_t image_len);
/*
 * mlock(2)/munlock(2) bookkeeping: marks (lock) or unmarks the VMAs of [start, end) (page
 * aligned) MM_VMA_LOCKED. Pages are not pinned: the mark only changes what madvise allows, as
 * Linux's VM_LOCKED. Returns 0, or -ENOMEM when part of the range is unmapped (the mapped part
 * is marked).
 */
int mm_mlock(struct mm *mm, uint64_t start, uint64_t end, bool lock);
/* mlockall(MCL_CURRENT) (lock) and munlockall: mm_mlock of every mapping. */
void mm_mlock_all(struct mm *mm, bool lock);
/*
 * msync(2): flags MS_ASYNC, MS_SYNC, MS_INVALIDATE. Shared file mappings in the range whose
 * file has a backing store (file op sync_pages) are written back, with MS_ASYNC too; the others
 * need nothing (their pages are the file). Returns 0, -EINVAL, -ENOMEM when part of the range is
 * unmapped (after syncing the rest, as Linux), or the write-back's -errno.
 */
int mm_msync(struct mm *mm, uint64_t addr, uint64_t len, int flags);

/*
 * Copies len bytes between guest memory at addr and sentry memory. The guest range must be
 * mapped readable (copy_in) or writable (copy_out). Returns the number of bytes copied if at
 * least one was, else -EFAULT (partial progress beats an error).
 */
ssize_t mm_copy_in(struct mm *mm, void *dst, uint64_t addr, size_t len);
ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len);
/*
 * Like mm_copy_out but ignores the protection of private mappings (the loader writing read-only
 * pages, a debugger's breakpoints), as Linux's FOLL_FORCE; a shared mapping must be writable
 * (not a file opened read-only, nor the time page [vvar]).
 */
ssize_t mm_poke(struct mm *mm, uint64_t addr, const void *src, size_t len);
/* Copies a NUL-terminated string of at most max bytes (NUL included). Returns its length
 * without the NUL, -EFAULT, or -ENAMETOOLONG if no NUL within max bytes. */
ssize_t mm_copy_in_string(struct mm *mm, char *dst, uint64_t addr, size_t max);

/*
 * Translates the guest range [addr, addr+len) into sentry pointers (one iovec per contiguous
 * piece of the memory file), checking that it is readable (write == false) or writable
 * (write == true). Stops at the first bad page. Returns the number of iovecs filled (0 if the
 * first byte is bad), at most maxiov; *covered gets the number of bytes they cover.
 * Lets read(2)/write(2) move data between a file and guest memory without a bounce buffer.
 *
 * The pointers say where the guest's pages are now; another thread's fork, munmap, mprotect,
 * madvise or mremap changes that at any time. mm_translate's are for an immediate use (a futex
 * word); mm_translate_pin's stay valid memory until mm_translate_unpin (each page gets a
 * reference, so none is freed and given to someone else meanwhile, and fork waits for pinned
 * copies to end). Neither may be held across a point where the caller can sleep (README.md,
 * "Sleeping with guest memory"): translate again after waking.
 */
int mm_translate(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		 int maxiov, size_t *covered);
int mm_translate_pin(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		     int maxiov, size_t *covered);
/* Ends the use of the n iovecs a mm_translate_pin call (or several, in one array) filled. */
void mm_translate_unpin(struct mm *mm, const struct iovec *iov, int n);

/*
 * How many bytes of [addr, addr+len) from addr on are mapped readable (write == false) or
 * writable (write == true) now: what a copy in or out could move. Changes nothing (no
 * copy-on-write is resolved). For sizing a sentry buffer before a call that may sleep.
 */
size_t mm_access_len(struct mm *mm, uint64_t addr, size_t len, bool write);

/* --- inspection (for /proc/PID/maps, core dumps, tests) --- */

/*
 * Resident pages of mm: the pages of its VMAs that the host holds (touched and not freed),
 * shared ones included, as Linux's RSS. Takes mm->lock, waiting for it at most about 200 ms
 * (then returns 0); not for the fault path (one or two lseek(2) per VMA). The OOM killer's
 * measure (sentry/kernel/oom.c).
 */
uint64_t mm_rss_pages(struct mm *mm);

/*
 * Syscall patching (x86-64, platforms with a syscall_trampoline; patch.c explains the scheme).
 *
 * mm_patch_site: a system call nr trapped at the `syscall` instruction ending at rip; if the
 * 7 bytes before rip are `mov $nr, %eax; syscall` in a private, executable, read-only file
 * mapping (or the vDSO), they become a jump to a new trap-table entry that goes to trampoline.
 * Best effort: nothing is reported (a site that cannot be patched keeps trapping).
 *
 * mm_patch_sigill: a guest SIGILL at rip. MM_PATCH_NONE: not patching's (deliver it);
 * MM_PATCH_SYSCALL: the thread meant a system call with the number in rax, returning to
 * *new_rip; MM_PATCH_RESTART: run the guest again from *new_rip.
 *
 * mm_patch_revert: puts every patched site back and never patches mm again (why goes to the
 * debug log). mm_patch_enabled: false once that happened. mm_patch_guard: the guest is about
 * to change [addr, addr+len): reverts if that touches the trap table. Call them without
 * mm->lock.
 */
enum { MM_PATCH_NONE, MM_PATCH_SYSCALL, MM_PATCH_RESTART };
void mm_patch_site(struct mm *mm, uint64_t rip, uint64_t nr, uint64_t trampoline);
int mm_patch_sigill(struct mm *mm, uint64_t rip, uint64_t rax, uint64_t *new_rip);
void mm_patch_revert(struct mm *mm, const char *why);
bool mm_patch_enabled(struct mm *mm);
/* Whether [start, end) is mm's trap table (a checkpoint leaves it out: it holds host addresses). */
bool mm_patch_is_table(struct mm *mm, uint64_t start, uint64_t end);
void mm_patch_guard(struct mm *mm, uint64_t addr, uint64_t len);

/* Kinds of VMA, in struct mm_vma_info.flags. */
#define MM_VMA_PRIVATE 0x01u /* MAP_PRIVATE */
#define MM_VMA_SHARED 0x02u /* MAP_SHARED: the same pages in every forked mm (and the file's) */
#define MM_VMA_ANON 0x04u /* no file behind it */
#define MM_VMA_FILE 0x08u /* a file at file_off: pages copied from it, or its own (shared) */
#define MM_VMA_GROWSDOWN 0x10u /* MAP_GROWSDOWN */
#define MM_VMA_HEAP 0x20u /* made by brk(2): [heap] */
#define MM_VMA_DONTFORK 0x40u /* MADV_DONTFORK: not in a forked child */
#define MM_VMA_WIPEONFORK 0x80u /* MADV_WIPEONFORK: zero pages in a forked child */
#define MM_VMA_LOCKED 0x100u /* mlock(2): MADV_DONTNEED and MADV_REMOVE refuse it */
#define MM_VMA_VDSO 0x200u /* the vDSO image: [vdso] (private, copy-on-write) */
#define MM_VMA_VVAR 0x400u /* the time page: [vvar] (the sentry's page, never writable) */

/* A snapshot of one VMA. file is not referenced: valid only during the callback. */
struct mm_vma_info {
	uint64_t start, end;
	int prot; /* PROT_READ|PROT_WRITE|PROT_EXEC */
	unsigned int flags; /* MM_VMA_* */
	struct file *file; /* file mappings, else NULL */
	uint64_t file_off; /* offset in file of start */
	uint64_t mf_off; /* memory-file offset of start */
	bool cow; /* pages perhaps shared copy-on-write: the platform maps them without write */
	/* Shared anonymous memory: its object's number (offset in it: file_off), else 0. */
	uint64_t obj;
	/*
	 * mm_for_each_mapping with resident only: pages present in the memory file, and those of
	 * them in pieces that are copy-on-write (a private file mapping's pages still the file's).
	 */
	uint64_t resident, resident_cow;
};

/*
 * Calls fn for every VMA in address order, under mm->lock (fn must not call back into mm).
 * Adjacent VMAs are merged when they are compatible and their memory-file pages are
 * contiguous, so there may be more VMAs than Linux would show. Stops early and returns fn's
 * value when it is non-zero; returns 0 otherwise.
 */
int mm_for_each_vma(struct mm *mm, int (*fn)(const struct mm_vma_info *vma, void *arg), void *arg);

/*
 * Like mm_for_each_vma, but for the mappings Linux would show (/proc/PID/maps): adjacent VMAs
 * with the same protection, kind and flags, of the same file (or shared anonymous object) at
 * contiguous offsets, are one (copy-on-write and page placement split them here). mf_off is
 * the first piece's; cow is set if any piece's is. With resident, counts the resident pages
 * (an lseek or two per piece).
 */
int mm_for_each_mapping(struct mm *mm, bool resident,
			int (*fn)(const struct mm_vma_info *vma, void *arg), void *arg);

#endif
