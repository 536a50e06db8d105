/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_load(): opens a program through the VFS, follows `#!`, maps the ELF program and its
 * interpreter into a fresh mm, maps the stack and writes the initial stack image.
 *
 * Files are opened with vfs_open() and read with file_pread(); mm_mmap() copies the bytes it
 * needs, so every file is put before loader_load() returns.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/util.h"
#include "include/abi/linux/auxv.h"
#include "sentry/kernel/task.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/mm.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"

/* Bytes read first: the ELF header and, for every usual binary, the program headers. */
#define HEAD_SIZE 4096
/* A program header table ending further into the file than this is refused (-ENOEXEC). */
#define PHDR_END_MAX (1U << 20)
/* Largest p_align honoured when placing a PIE; larger ones are treated as a page. */
#define ALIGN_MAX (1ULL << 30)
/* AT_MINSIGSTKSZ when the host does not say (Linux's MINSIGSTKSZ). */
#define DEFAULT_MINSIGSTKSZ 2048

static const uint8_t zero_page[PAGE_SIZE];

int (*loader_exec_creds)(struct task *t, struct file *prog, struct cred *out, bool *secure);

_Static_assert(LOADER_AUXV_WORDS <= ARRAY_SIZE(((struct mm *)0)->auxv), "mm->auxv too small");

/* An executable file opened for loading. */
struct exe {
	struct file *f; /* referenced until exe_release() */
	uint64_t size;
	uint8_t *head; /* the first head_len bytes of the file */
	size_t head_len;
	struct elf_info info;
};

static void exe_release(struct exe *e)
{
	if (e->f)
		file_put(e->f);
	free(e->head);
	e->f = NULL;
	e->head = NULL;
	e->head_len = 0;
}

/* Reads up to len bytes at off, looping over short reads. Returns the count or -errno. */
static ssize_t read_full(struct file *f, void *buf, size_t len, int64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = file_pread(f, (uint8_t *)buf + done, len - done, off + (int64_t)done);

		if (n < 0)
			return done ? (ssize_t)done : n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static bool in_groups(const struct cred *c, uint32_t gid)
{
	if (c->fsgid == gid)
		return true;
	for (int i = 0; i < MIN(c->ngroups, (int)ARRAY_SIZE(c->groups)); i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/*
 * Linux's MAY_EXEC check on a regular file: CAP_DAC_OVERRIDE needs any x bit (root, not uid 0:
 * a root that dropped it is held to its class's bit), others their class's.
 */
static bool may_exec(const struct cred *c, const struct vfs_attr *a)
{
	if (!(a->mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
		return false;
	if (cred_capable(c, 1 /* CAP_DAC_OVERRIDE */))
		return true;
	if (c->fsuid == a->uid)
		return a->mode & S_IXUSR;
	if (in_groups(c, a->gid))
		return a->mode & S_IXGRP;
	return a->mode & S_IXOTH;
}

/* Opens path for execution and reads its first bytes. On error the caller releases e. */
static int exe_open(struct task *t, const char *path, struct exe *e)
{
	struct vfs_attr attr;
	ssize_t n;
	size_t want;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = vfs_open(t, AT_FDCWD, path, O_RDONLY, 0, &e->f);
	if (ret)
		return ret;
	ret = file_getattr(e->f, &attr);
	if (ret)
		return ret;
	if (!S_ISREG(attr.mode) || !may_exec(&t->cred, &attr))
		return -EACCES;
	/* A program (or interpreter) on a noexec mount cannot be run (Linux: EACCES). */
	if (vfs_file_noexec(e->f))
		return -EACCES;
	e->size = attr.size > 0 ? (uint64_t)attr.size : 0;

	want = (size_t)MIN(e->size, (uint64_t)HEAD_SIZE);
	e->head = malloc(want ? want : 1);
	if (!e->head)
		return -ENOMEM;
	n = read_full(e->f, e->head, want, 0);
	if (n < 0)
		return (int)n;
	e->head_len = (size_t)n;
	return 0;
}

/*
 * Parses e as ELF. When the program headers lie beyond the first bytes read (allowed up to
 * PHDR_END_MAX into the file), reads up to their end and parses again.
 */
static int exe_parse(struct exe *e)
{
	Elf64_Ehdr eh;
	uint64_t end;
	uint8_t *bigger;
	ssize_t n;
	int ret;

	ret = elf_parse(e->head, e->head_len, e->size, &e->info);
	if (ret != -ENOEXEC || e->head_len < sizeof(eh))
		return ret;
	memcpy(&eh, e->head, sizeof(eh));
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > ARRAY_SIZE(e->info.phdrs))
		return ret;
	if (add_overflow(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), &end))
		return ret;
	if (end <= e->head_len || end > e->size || end > PHDR_END_MAX)
		return ret;

	bigger = realloc(e->head, (size_t)end);
	if (!bigger)
		return -ENOMEM;
	e->head = bigger;
	n = read_full(e->f, e->head + e->head_len, (size_t)end - e->head_len, (int64_t)e->head_len);
	if (n < 0)
		return (int)n;
	e->head_len += (size_t)n;
	return elf_parse(e->head, e->head_len, e->size, &e->info);
}

/* Reads the PT_INTERP path of e (validated by elf_parse) into path (PATH_MAX bytes). */
static int read_interp_path(struct exe *e, char *path)
{
	const Elf64_Phdr *ph = &e->info.phdrs[e->info.interp_index];
	ssize_t n;

	n = read_full(e->f, path, (size_t)ph->p_filesz, (int64_t)ph->p_offset);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n != ph->p_filesz)
		return -EIO; /* the file shrank under us */
	if (path[n - 1] != '\0')
		return -ENOEXEC;
	return 0;
}

static int elf_prot(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

/*
 * Maps the PT_LOAD segments of e at bias: the file part page by page from the file, the
 * partial page after p_filesz zeroed, the rest of p_memsz anonymous. fixed is MAP_FIXED (over
 * a reservation) or MAP_FIXED_NOREPLACE.
 */
static int map_segments(struct mm *mm, struct exe *e, uint64_t bias, int fixed)
{
	for (int i = 0; i < e->info.phnum; i++) {
		const Elf64_Phdr *ph = &e->info.phdrs[i];
		int prot = elf_prot(ph->p_flags);
		uint64_t start, file_end, anon_start, anon_end;
		long r;

		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		start = bias + ph->p_vaddr;
		file_end = start + ph->p_filesz;
		anon_start = PAGE_ALIGN_DOWN(start);
		anon_end = PAGE_ALIGN_UP(start + ph->p_memsz);

		if (ph->p_filesz) {
			r = mm_mmap(mm, PAGE_ALIGN_DOWN(start),
				    PAGE_ALIGN_UP(file_end) - PAGE_ALIGN_DOWN(start), prot,
				    MAP_PRIVATE | fixed, e->f, PAGE_ALIGN_DOWN(ph->p_offset));
			if (r < 0)
				return (int)r;
			/* The file's next bytes share the last page: they are bss here. */
			if (ph->p_memsz > ph->p_filesz && !IS_PAGE_ALIGNED(file_end)) {
				size_t n = PAGE_ALIGN_UP(file_end) - file_end;

				if (mm_poke(mm, file_end, zero_page, n) != (ssize_t)n)
					return -EFAULT;
			}
			anon_start = PAGE_ALIGN_UP(file_end);
		}
		if (anon_end > anon_start) {
			r = mm_mmap(mm, anon_start, anon_end - anon_start, prot,
				    MAP_PRIVATE | MAP_ANONYMOUS | fixed, NULL, 0);
			if (r < 0)
				return (int)r;
		}
	}
	return 0;
}

/* Largest power-of-two p_align of the PT_LOADs, between a page and ALIGN_MAX. */
static uint64_t max_align(const struct elf_info *info)
{
	uint64_t align = PAGE_SIZE;

	for (int i = 0; i < info->phnum; i++) {
		uint64_t a = info->phdrs[i].p_align;

		if (info->phdrs[i].p_type == PT_LOAD && a > align && a <= ALIGN_MAX &&
		    (a & (a - 1)) == 0)
			align = a;
	}
	return align;
}

/*
 * Maps e and returns its load bias in *bias. ET_EXEC: at its addresses. A PIE with an
 * interpreter: at LOADER_PIE_BASE, aligned as its segments ask. Anything else ET_DYN (the
 * interpreter, a static PIE, ld.so run directly): where mm_mmap() finds room below mmap_base,
 * reserved first as one PROT_NONE mapping that the segments then replace.
 */
static int load_elf(struct mm *mm, struct exe *e, bool pie_main, uint64_t *bias)
{
	uint64_t span = e->info.max_vaddr - e->info.min_vaddr;
	long addr;

	if (e->info.type == ET_EXEC) {
		*bias = 0;
		return map_segments(mm, e, 0, MAP_FIXED_NOREPLACE);
	}
	if (pie_main) {
		uint64_t base = LOADER_PIE_BASE & ~(max_align(&e->info) - 1);

		if (span > PLATFORM_GUEST_MAX - base)
			return -ENOMEM;
		*bias = base - e->info.min_vaddr;
		return map_segments(mm, e, *bias, MAP_FIXED_NOREPLACE);
	}
	addr = mm_mmap(mm, 0, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, NULL, 0);
	if (addr < 0)
		return (int)addr;
	*bias = (uint64_t)addr - e->info.min_vaddr;
	return map_segments(mm, e, *bias, MAP_FIXED);
}

/* AT_PHDR: PT_PHDR if there is one, else where the PT_LOAD holding e_phoff puts it. */
static uint64_t phdr_addr(const struct elf_info *info, uint64_t bias)
{
	const Elf64_Phdr *first = NULL;

	for (int i = 0; i < info->phnum; i++)
		if (info->phdrs[i].p_type == PT_PHDR)
			return bias + info->phdrs[i].p_vaddr;
	for (int i = 0; i < info->phnum; i++) {
		const Elf64_Phdr *ph = &info->phdrs[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (!first)
			first = ph;
		if (ph->p_offset <= info->phoff && info->phoff - ph->p_offset < ph->p_filesz)
			return bias + ph->p_vaddr + (info->phoff - ph->p_offset);
	}
	/* elf_parse() guarantees a PT_LOAD. */
	return bias + first->p_vaddr - first->p_offset + info->phoff;
}

/* The mapping size of the stack for t's RLIMIT_STACK. */
static uint64_t stack_size(const struct task *t, uint64_t *rlim_cur)
{
	uint64_t cur = t->tg ? t->tg->rlimits[RLIMIT_STACK].rlim_cur : LOADER_STACK_DEFAULT;

	*rlim_cur = cur;
	if (cur == RLIM_INFINITY)
		return LOADER_STACK_MAX;
	return PAGE_ALIGN_UP(MIN(MAX(cur, LOADER_STACK_MIN), LOADER_STACK_MAX));
}

static int get_random(uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom(buf + done, len - done, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

/* The argument vector of the program finally run; `#!` splices strings into it. */
struct argvec {
	const char **v; /* NULL-terminated */
	size_t n;
	char *owned[2 * LOADER_MAX_SCRIPT_DEPTH]; /* interpreter names and arguments */
	int n_owned;
};

static int argvec_init(struct argvec *av, char *const argv[])
{
	size_t n = 0;

	memset(av, 0, sizeof(*av));
	while (argv && argv[n])
		n++;
	av->v = calloc(MAX(n, 1) + 1, sizeof(*av->v));
	if (!av->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		av->v[i] = argv[i];
	/* Linux 5.18+: an empty argv runs with argv[0] = "". */
	if (n == 0)
		av->v[n++] = "";
	av->n = n;
	return 0;
}

static void argvec_free(struct argvec *av)
{
	for (int i = 0; i < av->n_owned; i++)
		free(av->owned[i]);
	free(av->v);
	av->v = NULL;
}

static const char *argvec_own(struct argvec *av, const char *s)
{
	char *copy = strdup(s);

	if (copy)
		av->owned[av->n_owned++] = copy;
	return copy;
}

/*
 * argv becomes [interp, (arg), script, argv[1..]] as binfmt_script makes it. Returns 0 and the
 * interpreter (owned by av) in *next, or -ENOMEM.
 */
static int argvec_splice(struct argvec *av, const char *interp, const char *arg, const char *script,
			 const char **next)
{
	size_t extra = arg ? 2 : 1, n = av->n + extra;
	const char **v = calloc(n + 1, sizeof(*v));
	const char *i_copy, *a_copy = NULL;
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	i_copy = argvec_own(av, interp);
	if (arg)
		a_copy = argvec_own(av, arg);
	if (!i_copy || (arg && !a_copy)) {
		free(v);
		return -ENOMEM;
	}
	v[k++] = i_copy;
	if (a_copy)
		v[k++] = a_copy;
	v[k++] = script;
	for (size_t i = 1; i < av->n; i++)
		v[k++] = av->v[i];
	free(av->v);
	av->v = v;
	av->n = k;
	*next = i_copy;
	return 0;
}

/*
 * Opens the program at path (named name), following `#!` into av, and leaves the ELF file
 * opened in e. A script is -ENOENT when inaccessible (see loader_load_named).
 */
static int open_program(struct task *t, const char *path, const char *name, bool inaccessible,
			struct argvec *av, struct exe *e)
{
	char interp[LOADER_SHEBANG_MAX], arg[LOADER_SHEBANG_MAX];
	const char *cur = path;
	bool has_arg;
	int ret;

	for (int depth = 0;; depth++) {
		ret = exe_open(t, cur, e);
		if (ret)
			return ret;
		if (e->head_len < 2 || e->head[0] != '#' || e->head[1] != '!')
			return 0;
		if (depth == LOADER_MAX_SCRIPT_DEPTH)
			return -ELOOP;
		/* As binfmt_script: the interpreter could not open a closed descriptor's name. */
		if (inaccessible)
			return -ENOENT;
		ret = loader_parse_shebang((const char *)e->head, e->head_len, interp,
					   sizeof(interp), arg, sizeof(arg), &has_arg);
		if (ret)
			return ret;
		exe_release(e);
		ret = argvec_splice(av, interp, has_arg ? arg : NULL, depth ? cur : name, &cur);
		if (ret)
			return ret;
	}
}

/* Opens and parses the PT_INTERP of prog into e. A bad interpreter is -ELIBBAD, as in Linux. */
static int open_interp(struct task *t, struct exe *prog, struct exe *e)
{
	char *path = malloc(PATH_MAX);
	int ret;

	if (!path)
		return -ENOMEM;
	ret = read_interp_path(prog, path);
	if (!ret)
		ret = exe_open(t, path, e);
	free(path);
	if (ret)
		return ret;
	ret = exe_parse(e);
	if (ret == -ENOEXEC || (!ret && e->info.interp_index >= 0))
		return -ELIBBAD;
	return ret;
}

int loader_load(struct task *t, struct mm *mm, const char *path, char *const argv[],
		char *const envp[], struct loader_result *res)
{
	return loader_load_named(t, mm, path, path, false, argv, envp, res);
}

int loader_load_named(struct task *t, struct mm *mm, const char *path, const char *name,
		      bool inaccessible, char *const argv[], char *const envp[],
		      struct loader_result *res)
{
	struct loader_stack_args sa = { 0 };
	struct loader_stack st;
	struct argvec av;
	struct exe prog = { 0 }, interp = { 0 };
	uint64_t size, rlim_cur, bias, ibias = 0, entry, start;
	uint64_t vvar_off, image_off, image_len;
	unsigned int eax, ebx, ecx, edx;
	bool has_interp;
	long r;
	int ret;

	ret = argvec_init(&av, argv);
	if (ret)
		return ret;
	ret = open_program(t, path, name, inaccessible, &av, &prog);
	if (ret)
		goto out_release;
	ret = exe_parse(&prog);
	if (ret)
		goto out_release;
	has_interp = prog.info.interp_index >= 0;
	if (has_interp) {
		ret = open_interp(t, &prog, &interp);
		if (ret)
			goto out_release;
	}

	/* The credentials come from the program that runs (after `#!`), before its stack. */
	res->cred = t->cred;
	res->secure = false;
	if (loader_exec_creds) {
		ret = loader_exec_creds(t, prog.f, &res->cred, &res->secure);
		if (ret)
			goto out_release;
	}

	size = stack_size(t, &rlim_cur);
	sa.limit = loader_arg_limit(rlim_cur);
	ret = loader_check_args((char *const *)av.v, envp, name, sa.limit);
	if (ret)
		goto out_release;

	pthread_mutex_lock(&mm->lock);
	mm->stack_top = LOADER_STACK_TOP;
	mm->mmap_base = LOADER_STACK_TOP - LOADER_MMAP_GAP;
	pthread_mutex_unlock(&mm->lock);

	/* Stack first, as Linux does, so that a fixed-address program cannot land on it. */
	r = mm_mmap(mm, LOADER_STACK_TOP - size, size, (int)prog.info.stack_prot,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_GROWSDOWN, NULL, 0);
	if (r < 0) {
		ret = (int)r;
		goto out_release;
	}

	ret = load_elf(mm, &prog, has_interp, &bias);
	if (ret)
		goto out_release;
	entry = prog.info.entry + bias;
	if (has_interp) {
		ret = load_elf(mm, &interp, false, &ibias);
		if (ret)
			goto out_release;
	}
	/* The vDSO after the interpreter, top-down below it, as Linux places it. */
	if (vtime_vdso_pages(&vvar_off, &image_off, &image_len)) {
		r = mm_map_vdso(mm, vvar_off, image_off, image_len);
		if (r < 0) {
			ret = (int)r;
			goto out_release;
		}
		sa.sysinfo_ehdr = (uint64_t)r;
	}
	start = has_interp ? interp.info.entry + ibias : entry;
	if (start >= PLATFORM_GUEST_MAX) {
		ret = -EINVAL;
		goto out_release;
	}

	sa.top = LOADER_STACK_TOP;
	sa.size = size;
	sa.argv = (char *const *)av.v;
	sa.envp = envp;
	sa.execfn = name;
	sa.platform = "x86_64";
	ret = get_random(sa.random, sizeof(sa.random));
	if (ret)
		goto out_release;
	if (__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		sa.hwcap = edx;
	sa.hwcap2 = 0;
	sa.minsigstksz = getauxval(LINUX_AT_MINSIGSTKSZ);
	if (!sa.minsigstksz)
		sa.minsigstksz = DEFAULT_MINSIGSTKSZ;
	sa.phdr = phdr_addr(&prog.info, bias);
	sa.phnum = prog.info.phnum;
	sa.base = has_interp ? ibias : 0;
	sa.entry = entry;
	sa.uid = res->cred.uid;
	sa.euid = res->cred.euid;
	sa.gid = res->cred.gid;
	sa.egid = res->cred.egid;
	sa.secure = res->secure;
	ret = loader_build_stack(&sa, &st);
	if (ret)
		goto out_release;
	r = mm_copy_out(mm, st.sp, st.image, st.len);
	if (r != (long)st.len) {
		ret = r < 0 ? (int)r : -EFAULT;
		goto out_free_stack;
	}

	pthread_mutex_lock(&mm->lock);
	mm->start_brk = mm->brk = bias + prog.info.max_vaddr;
	/* As Linux: the data segment runs from the highest PT_LOAD to its file bytes' end. */
	mm->start_data = mm->end_data = 0;
	for (int i = 0; i < prog.info.phnum; i++) {
		const Elf64_Phdr *ph = &prog.info.phdrs[i];

		if (ph->p_type != PT_LOAD)
			continue;
		mm->start_data = MAX(mm->start_data, bias + ph->p_vaddr);
		mm->end_data = MAX(mm->end_data, bias + ph->p_vaddr + ph->p_filesz);
	}
	mm->arg_start = st.arg_start;
	mm->arg_end = st.arg_end;
	mm->env_start = st.env_start;
	mm->env_end = st.env_end;
	memcpy(mm->auxv, st.auxv, (size_t)st.auxv_len * sizeof(st.auxv[0]));
	mm->auxv_len = st.auxv_len;
	pthread_mutex_unlock(&mm->lock);
	res->entry = start;
	res->sp = st.sp;
	ret = 0;

out_free_stack:
	loader_stack_free(&st);
out_release:
	exe_release(&interp);
	exe_release(&prog);
	argvec_free(&av);
	return ret;
}
