/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --strace output. Each argument is printed by kind: numbers, fds, hex flags, guest strings
 * (read with the guest's protections, like any copy_in), and buffers (the bytes written, or read
 * once the call returned). The line is built in a buffer and written once.
 */
#include <ctype.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/strace.h"

/*
 * Argument kinds, one letter per argument: d signed decimal, u unsigned, x hex, o octal, f fd
 * (AT_FDCWD shown by name), s guest string, w buffer written by the guest (length is the next
 * argument), r buffer read into (printed after the call, length is the result), p pointer,
 * O open(2) flags, P PROT_* bits, M MAP_* flags, A AT_* flags.
 */
struct strace_spec {
	const char *args;
};

#define SPEC(nm, a) [LINUX_NR_##nm] = { a }
static const struct strace_spec specs[LINUX_SYSCALL_MAX] = {
	SPEC(read, "fru"),
	SPEC(write, "fwu"),
	SPEC(open, "sOo"),
	SPEC(close, "f"),
	SPEC(stat, "sp"),
	SPEC(fstat, "fp"),
	SPEC(lstat, "sp"),
	SPEC(lseek, "fdd"),
	SPEC(mmap, "xuPMfx"),
	SPEC(mprotect, "xuP"),
	SPEC(munmap, "xu"),
	SPEC(brk, "x"),
	SPEC(rt_sigaction, "dppu"),
	SPEC(rt_sigprocmask, "dppu"),
	SPEC(ioctl, "fxx"),
	SPEC(pread64, "frud"),
	SPEC(pwrite64, "fwud"),
	SPEC(readv, "fpd"),
	SPEC(writev, "fpd"),
	SPEC(access, "so"),
	SPEC(dup, "f"),
	SPEC(dup2, "ff"),
	SPEC(getpid, ""),
	SPEC(getppid, ""),
	SPEC(gettid, ""),
	SPEC(exit, "d"),
	SPEC(exit_group, "d"),
	SPEC(uname, "p"),
	SPEC(fcntl, "fdx"),
	SPEC(getdents64, "fpu"),
	SPEC(getdents, "fpu"),
	SPEC(getcwd, "pu"),
	SPEC(chdir, "s"),
	SPEC(fchdir, "f"),
	SPEC(readlink, "spu"),
	SPEC(umask, "o"),
	SPEC(arch_prctl, "xx"),
	SPEC(set_tid_address, "p"),
	SPEC(openat, "fsOo"),
	SPEC(newfstatat, "fspA"),
	SPEC(readlinkat, "fspu"),
	SPEC(faccessat, "fso"),
	SPEC(faccessat2, "fsoA"),
	SPEC(dup3, "ffO"),
	SPEC(statx, "fsAxp"),
	SPEC(getrandom, "pux"),
	SPEC(prlimit64, "ddpp"),
	SPEC(clock_gettime, "dp"),
	SPEC(nanosleep, "pp"),
	SPEC(mremap, "xuuxx"),
	SPEC(madvise, "xud"),
	SPEC(statfs, "sp"),
	SPEC(fstatfs, "fp"),
};

struct flag_name {
	uint64_t bit;
	const char *name;
};

#define FLAG(f)       \
	{             \
		f, #f \
	}
static const struct flag_name open_flags[] = {
	/* Multi-bit flags first, so that they are named whole. */
	FLAG(O_WRONLY),	  FLAG(O_RDWR),	   FLAG(O_TMPFILE), FLAG(O_SYNC),      FLAG(O_CREAT),
	FLAG(O_EXCL),	  FLAG(O_NOCTTY),  FLAG(O_TRUNC),   FLAG(O_APPEND),    FLAG(O_NONBLOCK),
	FLAG(O_DSYNC),	  FLAG(O_ASYNC),   FLAG(O_DIRECT),  FLAG(O_LARGEFILE), FLAG(O_DIRECTORY),
	FLAG(O_NOFOLLOW), FLAG(O_NOATIME), FLAG(O_CLOEXEC), FLAG(O_PATH),      { 0, NULL },
};
static const struct flag_name prot_flags[] = {
	FLAG(PROT_READ), FLAG(PROT_WRITE), FLAG(PROT_EXEC), FLAG(PROT_GROWSDOWN), { 0, NULL },
};
static const struct flag_name map_flags[] = {
	FLAG(MAP_SHARED), FLAG(MAP_PRIVATE),   FLAG(MAP_FIXED),		  FLAG(MAP_ANONYMOUS),
	FLAG(MAP_32BIT),  FLAG(MAP_GROWSDOWN), FLAG(MAP_DENYWRITE),	  FLAG(MAP_EXECUTABLE),
	FLAG(MAP_LOCKED), FLAG(MAP_NORESERVE), FLAG(MAP_POPULATE),	  FLAG(MAP_NONBLOCK),
	FLAG(MAP_STACK),  FLAG(MAP_HUGETLB),   FLAG(MAP_FIXED_NOREPLACE), { 0, NULL },
};
static const struct flag_name at_flags[] = {
	FLAG(AT_SYMLINK_NOFOLLOW),
	FLAG(AT_REMOVEDIR),
	FLAG(AT_SYMLINK_FOLLOW),
	FLAG(AT_NO_AUTOMOUNT),
	FLAG(AT_EMPTY_PATH),
	FLAG(AT_EACCESS),
	{ 0, NULL },
};

struct sbuf {
	char b[1024];
	size_t n;
};

static void sb_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int m;

	if (sb->n >= sizeof(sb->b) - 1)
		return;
	va_start(ap, fmt);
	m = vsnprintf(sb->b + sb->n, sizeof(sb->b) - sb->n, fmt, ap);
	va_end(ap);
	if (m > 0)
		sb->n = MIN(sb->n + (size_t)m, sizeof(sb->b) - 1);
}

/* Prints v as NAME|NAME|0x..., with the bits named in names; zero prints as zero_name. */
static void sb_flags(struct sbuf *sb, uint64_t v, const struct flag_name *names,
		     const char *zero_name)
{
	bool any = false;

	if (zero_name) {
		sb_printf(sb, "%s", zero_name);
		any = true;
	}
	for (; names->name; names++) {
		if ((v & names->bit) == names->bit && names->bit) {
			sb_printf(sb, "%s%s", any ? "|" : "", names->name);
			v &= ~names->bit;
			any = true;
		}
	}
	if (v || !any)
		sb_printf(sb, "%s%#lx", any ? "|" : "", (unsigned long)v);
}

/* Prints len bytes of guest memory at addr as a quoted, escaped string (at most 32 shown). */
static void sb_guest_bytes(struct sbuf *sb, struct task *t, uint64_t addr, long len)
{
	unsigned char tmp[32];
	ssize_t n;

	if (len < 0) {
		sb_printf(sb, "%#lx", (unsigned long)addr);
		return;
	}
	n = mm_copy_in(t->mm, tmp, addr, (size_t)MIN(len, (long)sizeof(tmp)));
	if (n < 0) {
		sb_printf(sb, "%#lx", (unsigned long)addr);
		return;
	}
	sb_printf(sb, "\"");
	for (ssize_t i = 0; i < n; i++) {
		unsigned char c = tmp[i];
		if (c == '\n')
			sb_printf(sb, "\\n");
		else if (c == '\t')
			sb_printf(sb, "\\t");
		else if (c == '"' || c == '\\')
			sb_printf(sb, "\\%c", c);
		else if (isprint(c))
			sb_printf(sb, "%c", c);
		else
			sb_printf(sb, "\\x%02x", c);
	}
	sb_printf(sb, "\"%s", len > n ? "..." : "");
}

static void sb_guest_string(struct sbuf *sb, struct task *t, uint64_t addr)
{
	char tmp[256];
	ssize_t n = mm_copy_in_string(t->mm, tmp, addr, sizeof(tmp));

	if (n == -ENAMETOOLONG) {
		tmp[sizeof(tmp) - 1] = 0;
		sb_printf(sb, "\"%s\"...", tmp);
	} else if (n < 0) {
		sb_printf(sb, "%#lx", (unsigned long)addr);
	} else {
		sb_printf(sb, "\"%s\"", tmp);
	}
}

/* The strace line under construction; one task runs one call at a time on its own thread. */
static __thread struct sbuf line;

void strace_enter(struct task *t, long nr, const struct syscall_args *args)
{
	const char *name = syscall_name(nr);
	const char *spec = (nr >= 0 && nr < LINUX_SYSCALL_MAX) ? specs[nr].args : NULL;

	line.n = 0;
	sb_printf(&line, "[pid %d] ", t->tid);
	if (name)
		sb_printf(&line, "%s(", name);
	else
		sb_printf(&line, "syscall_%ld(", nr);
	if (!spec) {
		sb_printf(&line, "%#lx, %#lx, %#lx, %#lx, %#lx, %#lx", (unsigned long)args->a[0],
			  (unsigned long)args->a[1], (unsigned long)args->a[2],
			  (unsigned long)args->a[3], (unsigned long)args->a[4],
			  (unsigned long)args->a[5]);
		return;
	}
	for (int i = 0; spec[i] && i < 6; i++) {
		uint64_t v = args->a[i];

		if (i)
			sb_printf(&line, ", ");
		switch (spec[i]) {
		case 'd':
			sb_printf(&line, "%ld", (long)v);
			break;
		case 'u':
			sb_printf(&line, "%lu", (unsigned long)v);
			break;
		case 'o':
			sb_printf(&line, "%#lo", (unsigned long)v);
			break;
		case 'f':
			if ((int)v == AT_FDCWD)
				sb_printf(&line, "AT_FDCWD");
			else
				sb_printf(&line, "%d", (int)v);
			break;
		case 's':
			sb_guest_string(&line, t, v);
			break;
		case 'w':
			sb_guest_bytes(&line, t, v, (long)args->a[i + 1]);
			break;
		case 'O':
			sb_flags(&line, v & ~(uint64_t)O_ACCMODE, open_flags + 2,
				 (v & O_ACCMODE) == O_WRONLY ? "O_WRONLY" :
				 (v & O_ACCMODE) == O_RDWR   ? "O_RDWR" :
							       "O_RDONLY");
			break;
		case 'P':
			if (v == 0)
				sb_printf(&line, "PROT_NONE");
			else
				sb_flags(&line, v, prot_flags, NULL);
			break;
		case 'M':
			sb_flags(&line, v, map_flags, NULL);
			break;
		case 'A':
			if (v == 0)
				sb_printf(&line, "0");
			else
				sb_flags(&line, v, at_flags, NULL);
			break;
		case 'r':
			/* Shown after the call, when the bytes are there. */
			sb_printf(&line, "\x01");
			break;
		default:
			sb_printf(&line, "%#lx", (unsigned long)v);
			break;
		}
	}
}

void strace_exit(struct task *t, long nr, const struct syscall_args *args, long ret)
{
	char *mark = memchr(line.b, '\x01', line.n);
	struct sbuf out;

	out.n = 0;
	if (mark) {
		/* Splice the read buffer's contents in where the marker is. */
		const char *spec = specs[nr].args;
		int i = 0;

		while (spec[i] != 'r')
			i++;
		sb_printf(&out, "%.*s", (int)(mark - line.b), line.b);
		sb_guest_bytes(&out, t, args->a[i], ret);
		sb_printf(&out, "%.*s", (int)(line.n - (size_t)(mark + 1 - line.b)), mark + 1);
	} else {
		sb_printf(&out, "%.*s", (int)line.n, line.b);
	}
	if (ret < 0 && ret >= -4095)
		sb_printf(&out, ") = -1 %s (%s)\n", strerrorname_np((int)-ret) ?: "?",
			  strerror((int)-ret));
	else if (ret >= 0x10000 || ret < -4095)
		sb_printf(&out, ") = %#lx\n", (unsigned long)ret);
	else
		sb_printf(&out, ") = %ld\n", ret);
	(void)!write(t->k->strace_fd, out.b, out.n);
}
