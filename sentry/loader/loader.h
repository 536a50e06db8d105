/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The program loader: ELF64 x86-64 executables (static, dynamic with PT_INTERP, PIE and
 * non-PIE) and `#!` scripts, and the initial stack (argv, envp, auxv).
 */
#ifndef HUSK_SENTRY_LOADER_H
#define HUSK_SENTRY_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <elf.h>

#include "sentry/kernel/task.h"
#include "sentry/platform/platform.h"

struct task;
struct mm;
struct file;

/* What elf_parse() learned from an ELF header and its program headers. */
struct elf_info {
	uint16_t type; /* ET_EXEC or ET_DYN */
	uint64_t entry;
	uint64_t phoff;
	uint16_t phnum;
	uint64_t min_vaddr, max_vaddr; /* page-aligned span of the PT_LOAD segments */
	int interp_index; /* index of PT_INTERP in phdrs, or -1 */
	uint64_t stack_prot; /* PROT_* from PT_GNU_STACK */
	Elf64_Phdr phdrs[64];
};

/*
 * Validates and decodes an ELF64 x86-64 image from its first len bytes (header and program
 * headers must lie within them) and the file's total size. Rejects truncated headers, wrong
 * class/machine/type, absurd phnum, overlapping, misaligned or huge segments, segments beyond the
 * file, more than one PT_INTERP. Returns 0 or -ENOEXEC. Pure function: no I/O.
 */
int elf_parse(const void *buf, size_t len, uint64_t file_size, struct elf_info *out);

struct loader_result {
	uint64_t entry; /* where the guest starts (the interpreter's entry if there is one) */
	uint64_t sp; /* initial stack pointer: argc */
	/* The credentials the program runs with (execve's transformation of t->cred, which the
	 * caller installs past its point of no return) and whether the exec is secure. */
	struct cred cred;
	bool secure;
};

/*
 * execve's credential transformation, provided by the kernel (sentry/kernel/cred.c's
 * cred_exec_file, registered by task_exec.c): fills *out with the credentials t runs the
 * program file prog (after `#!`) with, and *secure (AT_SECURE). Returns 0 or -errno (the exec
 * fails). NULL (the loader's unit tests): t's credentials are kept and AT_SECURE is 0.
 */
extern int (*loader_exec_creds)(struct task *t, struct file *prog, struct cred *out, bool *secure);

/*
 * Loads the program at path for t into mm (a fresh, empty mm): resolves path in t's fs
 * context, follows `#!` (up to 4 levels; the script path becomes an argument), maps the
 * segments and interpreter, sets mm's brk and layout, builds the stack with argv, envp and
 * auxv. The credentials of loader_exec_creds (else t->cred) supply AT_UID etc. and AT_SECURE,
 * and go to res->cred; argv/envp are sentry strings. Returns 0 or -errno
 * (-ENOENT, -EACCES, -ENOEXEC, -E2BIG, -ENOMEM, -ELOOP).
 * Also, as Linux: -ELIBBAD when the PT_INTERP file is not a valid ELF interpreter, -EINVAL
 * when the entry point lies outside guest memory, and whatever vfs_open() or mm_mmap() return
 * (-EEXIST when a fixed-address segment collides with the stack or another segment).
 * An empty argv gets argv[0] = "" (Linux 5.18+). On failure mm may hold some of the mappings:
 * the caller drops it. path, argv and envp are not kept after the call.
 */
int loader_load(struct task *t, struct mm *mm, const char *path, char *const argv[],
		char *const envp[], struct loader_result *res);
/*
 * loader_load for execveat(2): the program is opened at path, but named name (Linux's
 * bprm->filename: /dev/fd/N or /dev/fd/N/rel for a descriptor), which a `#!` interpreter gets
 * as the script's path and AT_EXECFN points to. With inaccessible (the descriptor is
 * close-on-exec: the interpreter could not open the name), a script is -ENOENT.
 */
int loader_load_named(struct task *t, struct mm *mm, const char *path, const char *name,
		      bool inaccessible, char *const argv[], char *const envp[],
		      struct loader_result *res);

/* --- layout constants (see README.md) --- */

/* Where a PIE main program (ET_DYN with PT_INTERP) starts: Linux's ELF_ET_DYN_BASE, no ASLR. */
#define LOADER_PIE_BASE 0x555555554000ULL
/*
 * End (exclusive) of the stack mapping: one unmapped page below PLATFORM_GUEST_MAX (where the
 * stub's code page may sit), as Linux leaves the last page below 2^47 unmapped.
 */
#define LOADER_STACK_TOP (PLATFORM_GUEST_MAX - 4096)
/*
 * Stack size: RLIMIT_STACK's soft value clamped to [MIN, MAX] (infinite gives MAX); DEFAULT
 * when the task has no thread group. Stacks do not grow on faults (sentry/mm), so this is all.
 */
#define LOADER_STACK_MIN (1ULL << 20)
#define LOADER_STACK_DEFAULT (8ULL << 20)
#define LOADER_STACK_MAX (64ULL << 20)
/* mmap_base = LOADER_STACK_TOP - LOADER_MMAP_GAP (Linux's MIN_GAP, larger than any stack). */
#define LOADER_MMAP_GAP (128ULL << 20)
/* Bytes of a file that Linux looks at for `#!` (BINPRM_BUF_SIZE). */
#define LOADER_SHEBANG_MAX 256
/* `#!` files followed before -ELOOP. */
#define LOADER_MAX_SCRIPT_DEPTH 4
/* Largest single argv/envp string, NUL included (MAX_ARG_STRLEN). */
#define LOADER_MAX_ARG_STRLEN 131072
/* Most words (not pairs) of auxv the loader writes, AT_NULL included; fits mm->auxv. */
#define LOADER_AUXV_WORDS 42

/*
 * Parses the `#!` line at the start of buf (len bytes of the file, of which only the first
 * LOADER_SHEBANG_MAX count) as Linux does: leading and trailing spaces/tabs are dropped, the
 * interpreter ends at the first space, tab or NUL, and the rest of the line is ONE argument.
 * Writes the interpreter into interp (isz bytes) and, if there is an argument, it into arg
 * (asz bytes) and sets *has_arg. Returns 0, -ENOEXEC when buf does not start with `#!`, names
 * no interpreter, or has a possibly truncated interpreter (no newline and nothing after the
 * name within the buffer), or -ENAMETOOLONG when interp or arg does not fit its buffer
 * (never with buffers of LOADER_SHEBANG_MAX bytes). Pure function.
 */
int loader_parse_shebang(const char *buf, size_t len, char *interp, size_t isz, char *arg,
			 size_t asz, bool *has_arg);

/*
 * Bytes the argv and envp strings and pointers may take for a stack limit of rlim_cur bytes,
 * as Linux computes it: a quarter of the limit, at most 6 MiB, at least 128 KiB.
 */
uint64_t loader_arg_limit(uint64_t rlim_cur);

/*
 * Checks that argv and envp (NULL-terminated; argv may be empty) and execfn fit in limit
 * (from loader_arg_limit()) and that no string is longer than LOADER_MAX_ARG_STRLEN with its
 * NUL. Returns 0 or -E2BIG.
 */
int loader_check_args(char *const argv[], char *const envp[], const char *execfn, uint64_t limit);

/* What the initial stack holds; the auxv values come from the loaded program. */
struct loader_stack_args {
	uint64_t top; /* end (exclusive) of the stack mapping; 16-byte aligned */
	uint64_t size; /* size of the stack mapping: the image must fit in it */
	uint64_t limit; /* from loader_arg_limit() */
	char *const *argv; /* NULL-terminated */
	char *const *envp; /* NULL-terminated */
	const char *execfn; /* AT_EXECFN: the path given to execve */
	const char *platform; /* AT_PLATFORM */
	uint8_t random[16]; /* AT_RANDOM bytes */
	uint64_t hwcap, hwcap2, minsigstksz;
	uint64_t phdr, phnum; /* AT_PHDR, AT_PHNUM of the main program */
	uint64_t base; /* AT_BASE: the interpreter's load bias, or 0 */
	uint64_t entry; /* AT_ENTRY: the main program's entry, bias included */
	uint64_t sysinfo_ehdr; /* AT_SYSINFO_EHDR: the vDSO image, 0 for none (then left out) */
	uint32_t uid, euid, gid, egid;
	bool secure; /* AT_SECURE */
};

/* The stack image: the bytes of [sp, top) in guest order, and where things are. */
struct loader_stack {
	uint8_t *image; /* malloc()ed, len bytes; image[0] is the word at sp (argc) */
	size_t len;
	uint64_t sp; /* 16-byte aligned, top - len */
	uint64_t arg_start, arg_end, env_start, env_end;
	uint64_t auxv[LOADER_AUXV_WORDS]; /* the pairs as written, AT_NULL included */
	int auxv_len; /* words used in auxv */
};

/*
 * Builds the initial stack as Linux's create_elf_tables() lays it out (no randomisation):
 * from the top, 8 zero bytes, the execfn string, the envp strings, the argv strings, alignment
 * to 16, the platform string, the 16 random bytes, then (16-byte aligned) argc, argv pointers,
 * NULL, envp pointers, NULL and the auxv pairs. Nothing is written to guest memory: the caller
 * copies out->image to out->sp. Returns 0 (release with loader_stack_free()), -E2BIG when the
 * strings exceed the limits or the image the stack, -EINVAL when top is not 16-byte aligned or
 * size exceeds it, or -ENOMEM. Pure function.
 */
int loader_build_stack(const struct loader_stack_args *a, struct loader_stack *out);
/* Frees the image of a stack built by loader_build_stack(). */
void loader_stack_free(struct loader_stack *s);

#endif
