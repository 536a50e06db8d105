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
SYSCALL_DECL(preadv);
SYSCALL_DECL(pwritev);
SYSCALL_DECL(preadv2);
SYSCALL_DECL(pwritev2);
SYSCALL_DECL(open);
SYSCALL_DECL(openat);
SYSCALL_DECL(close);
SYSCALL_DECL(close_range);
SYSCALL_DECL(memfd_create);
SYSCALL_DECL(lseek);
SYSCALL_DECL(getdents64);
SYSCALL_DECL(getdents);
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

/* sys_pipe.c, sys_poll.c: pipes and readiness */
SYSCALL_DECL(pipe);
SYSCALL_DECL(pipe2);
SYSCALL_DECL(poll);
SYSCALL_DECL(ppoll);
SYSCALL_DECL(select);
SYSCALL_DECL(pselect6);
SYSCALL_DECL(epoll_create);
SYSCALL_DECL(epoll_create1);
SYSCALL_DECL(epoll_ctl);
SYSCALL_DECL(epoll_wait);
SYSCALL_DECL(epoll_pwait);
SYSCALL_DECL(epoll_pwait2);
SYSCALL_DECL(eventfd);
SYSCALL_DECL(eventfd2);
SYSCALL_DECL(timerfd_create);
SYSCALL_DECL(timerfd_settime);
SYSCALL_DECL(timerfd_gettime);
SYSCALL_DECL(signalfd);
SYSCALL_DECL(signalfd4);

/* sys_sched.c: scheduling and accounting */
SYSCALL_DECL(sched_getscheduler);
SYSCALL_DECL(sched_setscheduler);
SYSCALL_DECL(sched_getparam);
SYSCALL_DECL(sched_setparam);
SYSCALL_DECL(sched_get_priority_max);
SYSCALL_DECL(sched_get_priority_min);
SYSCALL_DECL(sched_rr_get_interval);
SYSCALL_DECL(sched_setaffinity);
SYSCALL_DECL(getcpu);
SYSCALL_DECL(getpriority);
SYSCALL_DECL(setpriority);
SYSCALL_DECL(getrusage);
SYSCALL_DECL(times);
SYSCALL_DECL(membarrier);

/* sys_timer.c: interval and POSIX timers */
SYSCALL_DECL(setitimer);
SYSCALL_DECL(getitimer);
SYSCALL_DECL(alarm);
SYSCALL_DECL(timer_create);
SYSCALL_DECL(timer_settime);
SYSCALL_DECL(timer_gettime);
SYSCALL_DECL(timer_getoverrun);
SYSCALL_DECL(timer_delete);

/* sys_fs.c: filesystem changes, attributes, sync, openat2 */
SYSCALL_DECL(mknod);
SYSCALL_DECL(mknodat);
SYSCALL_DECL(mkdir);
SYSCALL_DECL(mkdirat);
SYSCALL_DECL(unlink);
SYSCALL_DECL(unlinkat);
SYSCALL_DECL(rmdir);
SYSCALL_DECL(symlink);
SYSCALL_DECL(symlinkat);
SYSCALL_DECL(link);
SYSCALL_DECL(linkat);
SYSCALL_DECL(rename);
SYSCALL_DECL(renameat);
SYSCALL_DECL(renameat2);
SYSCALL_DECL(creat);
SYSCALL_DECL(chmod);
SYSCALL_DECL(fchmodat);
SYSCALL_DECL(fchmodat2);
SYSCALL_DECL(fchmod);
SYSCALL_DECL(chown);
SYSCALL_DECL(lchown);
SYSCALL_DECL(fchownat);
SYSCALL_DECL(fchown);
SYSCALL_DECL(utimensat);
SYSCALL_DECL(futimesat);
SYSCALL_DECL(utimes);
SYSCALL_DECL(utime);
SYSCALL_DECL(truncate);
SYSCALL_DECL(ftruncate);
SYSCALL_DECL(fallocate);
SYSCALL_DECL(sync);
SYSCALL_DECL(syncfs);
SYSCALL_DECL(fsync);
SYSCALL_DECL(fdatasync);
SYSCALL_DECL(openat2);
SYSCALL_DECL(flock);
/* fcntl(2)'s record-lock commands (F_GETLK, F_SETLK(W), F_OFD_*), for sys_fcntl. */
struct file;
long fcntl_lock(struct task *t, struct file *f, int cmd, uint64_t arg);

/* sys_stat.c: attributes */
SYSCALL_DECL(fstat);
SYSCALL_DECL(stat);
SYSCALL_DECL(lstat);
SYSCALL_DECL(newfstatat);
SYSCALL_DECL(statx);
SYSCALL_DECL(name_to_handle_at);
SYSCALL_DECL(statfs);
SYSCALL_DECL(fstatfs);

/* sys_mm.c: memory */
SYSCALL_DECL(mmap);
SYSCALL_DECL(munmap);
SYSCALL_DECL(mprotect);
SYSCALL_DECL(brk);
SYSCALL_DECL(mremap);
SYSCALL_DECL(madvise);
SYSCALL_DECL(msync);

/* sys_thread.c: the calling task itself */
SYSCALL_DECL(arch_prctl);
SYSCALL_DECL(set_tid_address);
SYSCALL_DECL(set_robust_list);
SYSCALL_DECL(get_robust_list);
SYSCALL_DECL(rseq);
SYSCALL_DECL(exit);
SYSCALL_DECL(exit_group);
SYSCALL_DECL(reboot);
SYSCALL_DECL(getpid);
SYSCALL_DECL(getppid);
SYSCALL_DECL(gettid);
SYSCALL_DECL(getpgrp);
SYSCALL_DECL(getpgid);
SYSCALL_DECL(getsid);

/* sys_futex.c: futexes (single-threaded for now) */
SYSCALL_DECL(futex);
SYSCALL_DECL(futex_waitv);

/* sys_xattr.c: extended attributes */
SYSCALL_DECL(getxattr);
SYSCALL_DECL(lgetxattr);
SYSCALL_DECL(fgetxattr);
SYSCALL_DECL(listxattr);
SYSCALL_DECL(llistxattr);
SYSCALL_DECL(flistxattr);
SYSCALL_DECL(setxattr);
SYSCALL_DECL(lsetxattr);
SYSCALL_DECL(fsetxattr);
SYSCALL_DECL(removexattr);
SYSCALL_DECL(lremovexattr);
SYSCALL_DECL(fremovexattr);
SYSCALL_DECL(getxattrat);
SYSCALL_DECL(setxattrat);
SYSCALL_DECL(listxattrat);
SYSCALL_DECL(removexattrat);

/* sys_inotify.c: inotify */
SYSCALL_DECL(inotify_init);
SYSCALL_DECL(inotify_init1);
SYSCALL_DECL(inotify_add_watch);
SYSCALL_DECL(inotify_rm_watch);

/* sys_id.c: credentials */
SYSCALL_DECL(getuid);
SYSCALL_DECL(geteuid);
SYSCALL_DECL(getgid);
SYSCALL_DECL(getegid);
SYSCALL_DECL(getgroups);
SYSCALL_DECL(getresuid);
SYSCALL_DECL(getresgid);
SYSCALL_DECL(setuid);
SYSCALL_DECL(setgid);
SYSCALL_DECL(setreuid);
SYSCALL_DECL(setregid);
SYSCALL_DECL(setresuid);
SYSCALL_DECL(setresgid);
SYSCALL_DECL(setfsuid);
SYSCALL_DECL(setfsgid);
SYSCALL_DECL(setgroups);
SYSCALL_DECL(capget);
SYSCALL_DECL(capset);

/* sys_process.c: processes, sessions and groups, prctl, pidfd_open (getppid, getpgrp, getpgid
 * and getsid moved here from sys_thread.c) */
SYSCALL_DECL(fork);
SYSCALL_DECL(vfork);
SYSCALL_DECL(clone);
SYSCALL_DECL(clone3);
SYSCALL_DECL(execve);
SYSCALL_DECL(execveat);
SYSCALL_DECL(wait4);
SYSCALL_DECL(waitid);
SYSCALL_DECL(setsid);
SYSCALL_DECL(setpgid);
SYSCALL_DECL(prctl);
SYSCALL_DECL(unshare);
SYSCALL_DECL(setns);
SYSCALL_DECL(pidfd_open);

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

/* sys_signal.c: signals */
SYSCALL_DECL(rt_sigaction);
SYSCALL_DECL(rt_sigprocmask);
SYSCALL_DECL(sigaltstack);
SYSCALL_DECL(rt_sigreturn);
SYSCALL_DECL(restart_syscall);
SYSCALL_DECL(rt_sigpending);
SYSCALL_DECL(rt_sigsuspend);
SYSCALL_DECL(pause);
SYSCALL_DECL(rt_sigtimedwait);
SYSCALL_DECL(kill);
SYSCALL_DECL(tkill);
SYSCALL_DECL(tgkill);
SYSCALL_DECL(rt_sigqueueinfo);
SYSCALL_DECL(rt_tgsigqueueinfo);
SYSCALL_DECL(pidfd_send_signal);

/* sys_socket.c: sockets (sentry/net) */
SYSCALL_DECL(socket);
SYSCALL_DECL(socketpair);
SYSCALL_DECL(bind);
SYSCALL_DECL(listen);
SYSCALL_DECL(accept);
SYSCALL_DECL(accept4);
SYSCALL_DECL(connect);
SYSCALL_DECL(getsockname);
SYSCALL_DECL(getpeername);
SYSCALL_DECL(sendto);
SYSCALL_DECL(recvfrom);
SYSCALL_DECL(sendmsg);
SYSCALL_DECL(recvmsg);
SYSCALL_DECL(sendmmsg);
SYSCALL_DECL(recvmmsg);
SYSCALL_DECL(shutdown);
SYSCALL_DECL(setsockopt);
SYSCALL_DECL(getsockopt);

/* sys_splice.c: data between two files */
SYSCALL_DECL(sendfile);
SYSCALL_DECL(splice);
SYSCALL_DECL(tee);
SYSCALL_DECL(copy_file_range);

/* sys_seccomp.c: seccomp(2), and prctl(2) with PR_SET_SECCOMP/PR_GET_SECCOMP (the rest goes
 * to sys_prctl) */
SYSCALL_DECL(seccomp);
SYSCALL_DECL(prctl_seccomp);

/* sys_advise.c: advice and residency (fadvise64, readahead, sync_file_range, mlock, mincore) */
SYSCALL_DECL(fadvise64);
SYSCALL_DECL(readahead);
SYSCALL_DECL(sync_file_range);
SYSCALL_DECL(mlock);
SYSCALL_DECL(mlock2);
SYSCALL_DECL(munlock);
SYSCALL_DECL(mlockall);
SYSCALL_DECL(munlockall);
SYSCALL_DECL(mincore);
/* sys_info.c */
SYSCALL_DECL(personality);
SYSCALL_DECL(sethostname);
SYSCALL_DECL(setdomainname);

/* sys_ptrace.c: ptrace of guest tasks, process_vm_readv/writev */
SYSCALL_DECL(ptrace);
SYSCALL_DECL(process_vm_readv);
SYSCALL_DECL(process_vm_writev);

/* sys_ipc.c: System V shared memory, semaphores and message queues */
SYSCALL_DECL(shmget);
SYSCALL_DECL(shmat);
SYSCALL_DECL(shmdt);
SYSCALL_DECL(shmctl);
SYSCALL_DECL(semget);
SYSCALL_DECL(semop);
SYSCALL_DECL(semtimedop);
SYSCALL_DECL(semctl);
SYSCALL_DECL(msgget);
SYSCALL_DECL(msgsnd);
SYSCALL_DECL(msgrcv);
SYSCALL_DECL(msgctl);

/* Added for issue 11: calls real programs use that were missing. */
SYSCALL_DECL(sched_setattr); /* sys_sched.c */
SYSCALL_DECL(sched_getattr);
SYSCALL_DECL(bpf); /* sys_bpf.c */
SYSCALL_DECL(ioprio_get); /* sys_ioprio.c */
SYSCALL_DECL(ioprio_set);
SYSCALL_DECL(clock_settime); /* sys_time.c */
SYSCALL_DECL(settimeofday); /* sys_time.c */
SYSCALL_DECL(process_madvise); /* sys_advise.c */
SYSCALL_DECL(pidfd_getfd); /* sys_process.c */
SYSCALL_DECL(vmsplice); /* sys_splice.c */
SYSCALL_DECL(mq_open); /* sys_mqueue.c */
SYSCALL_DECL(mq_unlink);
SYSCALL_DECL(mq_timedsend);
SYSCALL_DECL(mq_timedreceive);
SYSCALL_DECL(mq_notify);
SYSCALL_DECL(mq_getsetattr);
SYSCALL_DECL(io_setup); /* sys_aio.c */
SYSCALL_DECL(io_destroy);
SYSCALL_DECL(io_submit);
SYSCALL_DECL(io_getevents);
SYSCALL_DECL(io_pgetevents);
SYSCALL_DECL(io_cancel);

/*
 * The restart functions of ERESTART_RESTARTBLOCK (task->restart_fn), named so that a checkpoint
 * can save which one a task was given (sentry/state).
 */
long sleep_restart(struct task *t);
long cpu_sleep(struct task *t);
long futex_wait_restart(struct task *t);
long poll_restart(struct task *t);
/*
 * Moves the host deadline of t's restart block (futex_wait_restart, poll_restart) by d ns: a
 * restore (the host's clock is not the saving one's) and a resume (the guest's clocks stood
 * still while it was paused). Other restart blocks hold guest times. t is not running.
 */
void restart_deadline_shift(struct task *t, int64_t d);

/* sys_mount.c: mounts, chroot */
SYSCALL_DECL(chroot);
SYSCALL_DECL(mount);
SYSCALL_DECL(umount2);
SYSCALL_DECL(pivot_root);
SYSCALL_DECL(open_tree);
SYSCALL_DECL(move_mount);
SYSCALL_DECL(fsopen);
SYSCALL_DECL(fsconfig);
SYSCALL_DECL(fsmount);
SYSCALL_DECL(mount_setattr);

#endif
