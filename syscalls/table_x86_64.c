/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The x86-64 system call table: number -> handler, support level, note. This file is data;
 * `husk syscalls` prints it. A number without an entry here is SYSCALL_NONE: -ENOSYS, logged
 * once per sandbox.
 */
#include <stddef.h>

#include "syscalls/handlers.h"

#define FULL(nm) [LINUX_NR_##nm] = { #nm, sys_##nm, SYSCALL_FULL, NULL }
#define PARTIAL(nm, note) [LINUX_NR_##nm] = { #nm, sys_##nm, SYSCALL_PARTIAL, note }
#define ERROR(nm, note) [LINUX_NR_##nm] = { #nm, sys_##nm, SYSCALL_ERROR, note }

const struct syscall_entry syscall_table[LINUX_SYSCALL_MAX] = {
	/* file I/O and descriptors: sys_file.c */
	FULL(read),
	FULL(write),
	FULL(pread64),
	FULL(pwrite64),
	FULL(readv),
	FULL(writev),
	PARTIAL(open, "the root is read-only: O_CREAT of a new file and writes give EROFS"),
	PARTIAL(openat, "the root is read-only: O_CREAT of a new file and writes give EROFS"),
	FULL(close),
	FULL(lseek),
	FULL(getdents64),
	FULL(readlink),
	FULL(readlinkat),
	FULL(access),
	FULL(faccessat),
	FULL(faccessat2),
	FULL(getcwd),
	FULL(chdir),
	FULL(fchdir),
	PARTIAL(fcntl, "descriptor and status-flag commands; locks and leases: EINVAL"),
	FULL(dup),
	FULL(dup2),
	FULL(dup3),
	PARTIAL(ioctl,
		"FIOCLEX, FIONCLEX, FIONBIO, FIOASYNC, FIONREAD; terminal ioctls on host ttys"),
	FULL(umask),

	/* attributes: sys_stat.c */
	FULL(fstat),
	FULL(stat),
	FULL(lstat),
	FULL(newfstatat),
	PARTIAL(statx, "STATX_BASIC_STATS and STATX_MNT_ID; no birth time"),
	FULL(statfs),
	FULL(fstatfs),

	/* memory: sys_mm.c */
	PARTIAL(mmap, "private mappings; MAP_SHARED of a file: ENODEV"),
	FULL(munmap),
	FULL(mprotect),
	FULL(brk),
	FULL(mremap),
	PARTIAL(madvise, "DONTNEED and FREE zero the range; other advice is accepted and ignored"),

	/* the calling task: sys_thread.c */
	PARTIAL(arch_prctl,
		"ARCH_SET_FS, ARCH_GET_FS, ARCH_SET_GS, ARCH_GET_GS; CET and AMX: EINVAL"),
	FULL(set_tid_address),
	PARTIAL(set_robust_list, "recorded; cleaned up at thread exit with the processes issue"),
	FULL(get_robust_list),
	ERROR(rseq, "ENOSYS, which glibc takes as 'no rseq' and works without"),
	PARTIAL(exit, "single-threaded: ends the process"),
	FULL(exit_group),
	FULL(getpid),
	FULL(getppid),
	FULL(gettid),
	PARTIAL(getpgrp, "one process: its own group"),
	PARTIAL(getpgid, "one process: its own group, ESRCH for other pids"),
	PARTIAL(getsid, "one process: its own session, ESRCH for other pids"),

	/* futexes: sys_futex.c */
	PARTIAL(futex,
		"WAIT, WAKE and their BITSET forms, for one thread: no other waiter exists yet"),

	/* extended attributes: sys_xattr.c */
	ERROR(getxattr, "ENOTSUP: no filesystem stores extended attributes yet"),
	ERROR(lgetxattr, "ENOTSUP: no filesystem stores extended attributes yet"),
	ERROR(fgetxattr, "ENOTSUP: no filesystem stores extended attributes yet"),
	PARTIAL(listxattr, "always an empty list"),
	PARTIAL(llistxattr, "always an empty list"),
	PARTIAL(flistxattr, "always an empty list"),

	/* credentials: sys_id.c */
	FULL(getuid),
	FULL(geteuid),
	FULL(getgid),
	FULL(getegid),
	FULL(getgroups),
	FULL(getresuid),
	FULL(getresgid),

	/* clocks: sys_time.c */
	PARTIAL(clock_gettime, "CPU-time clocks measure the sentry thread, not the guest"),
	PARTIAL(clock_getres, "CPU-time clocks measure the sentry thread, not the guest"),
	FULL(gettimeofday),
	FULL(time),
	PARTIAL(nanosleep, "not interrupted by signals yet"),
	PARTIAL(clock_nanosleep, "not interrupted by signals yet"),

	/* system information and limits: sys_info.c */
	PARTIAL(uname, "the sentry's release and version, never the host's"),
	PARTIAL(sysinfo,
		"uptime is the sandbox's; total memory is the host's, capped at the memory file's size; no load or swap"),
	FULL(getrandom),
	PARTIAL(prlimit64, "the calling process only; limits are the sentry's, not the host's"),
	FULL(getrlimit),
	FULL(setrlimit),
	FULL(sched_getaffinity),
	FULL(sched_yield),

	/* signal state: sys_signal.c */
	PARTIAL(rt_sigaction, "recorded; delivery comes with the processes issue"),
	PARTIAL(rt_sigprocmask, "recorded; delivery comes with the processes issue"),
	PARTIAL(sigaltstack, "recorded; delivery comes with the processes issue"),
};

#define NAME_ROW(n, nm) [n] = #nm,
static const char *const syscall_names[LINUX_SYSCALL_MAX] = { LINUX_SYSCALLS(NAME_ROW) };

const char *syscall_name(long nr)
{
	if (nr < 0 || nr >= LINUX_SYSCALL_MAX)
		return NULL;
	return syscall_names[nr];
}
