/* SPDX-License-Identifier: Apache-2.0 */
/* Prototypes of the syscall handlers, grouped by the sys_<family>.c file that defines them. */
#ifndef HUSK_SYSCALLS_HANDLERS_H
#define HUSK_SYSCALLS_HANDLERS_H

#include "syscalls/syscalls.h"

#define SYSCALL_DECL(name) long sys_##name(struct task *t, const struct syscall_args *args)

/* sys_file.c: file I/O, descriptors, directories, cwd */
SYSCALL_DECL(read);
SYSCALL_DECL(write);
SYSCALL_DECL(pread64);
SYSCALL_DECL(pwrite64);
SYSCALL_DECL(readv);
SYSCALL_DECL(writev);
SYSCALL_DECL(open);
SYSCALL_DECL(openat);
SYSCALL_DECL(close);
SYSCALL_DECL(lseek);
SYSCALL_DECL(getdents64);
SYSCALL_DECL(readlink);
SYSCALL_DECL(readlinkat);
SYSCALL_DECL(access);
SYSCALL_DECL(faccessat);
SYSCALL_DECL(faccessat2);
SYSCALL_DECL(getcwd);
SYSCALL_DECL(chdir);
SYSCALL_DECL(fchdir);
SYSCALL_DECL(fcntl);
SYSCALL_DECL(dup);
SYSCALL_DECL(dup2);
SYSCALL_DECL(dup3);
SYSCALL_DECL(ioctl);
SYSCALL_DECL(umask);

/* sys_stat.c: attributes */
SYSCALL_DECL(fstat);
SYSCALL_DECL(stat);
SYSCALL_DECL(lstat);
SYSCALL_DECL(newfstatat);
SYSCALL_DECL(statx);
SYSCALL_DECL(statfs);
SYSCALL_DECL(fstatfs);

/* sys_mm.c: memory */
SYSCALL_DECL(mmap);
SYSCALL_DECL(munmap);
SYSCALL_DECL(mprotect);
SYSCALL_DECL(brk);
SYSCALL_DECL(mremap);
SYSCALL_DECL(madvise);

/* sys_thread.c: the calling task itself */
SYSCALL_DECL(arch_prctl);
SYSCALL_DECL(set_tid_address);
SYSCALL_DECL(set_robust_list);
SYSCALL_DECL(get_robust_list);
SYSCALL_DECL(rseq);
SYSCALL_DECL(exit);
SYSCALL_DECL(exit_group);
SYSCALL_DECL(getpid);
SYSCALL_DECL(getppid);
SYSCALL_DECL(gettid);
SYSCALL_DECL(getpgrp);
SYSCALL_DECL(getpgid);
SYSCALL_DECL(getsid);

/* sys_futex.c: futexes (single-threaded for now) */
SYSCALL_DECL(futex);

/* sys_xattr.c: extended attributes (none stored yet) */
SYSCALL_DECL(getxattr);
SYSCALL_DECL(lgetxattr);
SYSCALL_DECL(fgetxattr);
SYSCALL_DECL(listxattr);
SYSCALL_DECL(llistxattr);
SYSCALL_DECL(flistxattr);

/* sys_id.c: credentials */
SYSCALL_DECL(getuid);
SYSCALL_DECL(geteuid);
SYSCALL_DECL(getgid);
SYSCALL_DECL(getegid);
SYSCALL_DECL(getgroups);
SYSCALL_DECL(getresuid);
SYSCALL_DECL(getresgid);

/* sys_time.c: clocks and sleeping */
SYSCALL_DECL(clock_gettime);
SYSCALL_DECL(clock_getres);
SYSCALL_DECL(gettimeofday);
SYSCALL_DECL(time);
SYSCALL_DECL(nanosleep);
SYSCALL_DECL(clock_nanosleep);

/* sys_info.c: system information and limits */
SYSCALL_DECL(uname);
SYSCALL_DECL(sysinfo);
SYSCALL_DECL(getrandom);
SYSCALL_DECL(prlimit64);
SYSCALL_DECL(getrlimit);
SYSCALL_DECL(setrlimit);
SYSCALL_DECL(sched_getaffinity);
SYSCALL_DECL(sched_yield);

/* sys_signal.c: signal state (recorded; delivery comes with the processes issue) */
SYSCALL_DECL(rt_sigaction);
SYSCALL_DECL(rt_sigprocmask);
SYSCALL_DECL(sigaltstack);

#endif
