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
	FULL(preadv),
	FULL(pwritev),
	PARTIAL(preadv2, "RWF_* flags are accepted and have no effect"),
	PARTIAL(pwritev2, "RWF_* flags are accepted; RWF_APPEND is not honoured"),
	FULL(open),
	FULL(openat),
	FULL(close),
	FULL(close_range),
	PARTIAL(memfd_create,
		"MFD_HUGETLB: EINVAL; adding F_SEAL_WRITE never fails with EBUSY (writable shared mappings are not counted); files stop at 64 GiB (EFBIG)"),
	FULL(lseek),
	FULL(getdents64),
	FULL(getdents),
	FULL(readlink),
	FULL(readlinkat),
	FULL(access),
	FULL(faccessat),
	FULL(faccessat2),
	FULL(getcwd),
	FULL(chdir),
	FULL(fchdir),
	PARTIAL(fcntl,
		"leases: EINVAL; O_ASYNC signals readiness changes (POLL_IN while readable), not each write; F_NOTIFY sees changes made in the sandbox only"),
	PARTIAL(flock, "checked but never conflicting (one process)"),
	FULL(dup),
	FULL(dup2),
	FULL(dup3),
	PARTIAL(ioctl,
		"FIOCLEX, FIONCLEX, FIONBIO, FIOASYNC, FIONREAD; host ttys: termios, window size, "
		"flow control, flushes, breaks on the host tty, job control (pgrp, ctty, sid) kept "
		"by the sentry, TIOCSTI and the rest ENOTTY; "
		"sockets: SIOCINQ, SIOCOUTQ, SIOCGIF*, SIOCSIFFLAGS (lo up/down)"),
	FULL(umask),

	/* filesystem changes: sys_fs.c */
	PARTIAL(mknod, "device nodes on gofer mounts (volumes, --overlay=none): EPERM"),
	PARTIAL(mknodat, "device nodes on gofer mounts (volumes, --overlay=none): EPERM"),
	FULL(mkdir),
	FULL(mkdirat),
	FULL(unlink),
	FULL(unlinkat),
	FULL(rmdir),
	FULL(symlink),
	FULL(symlinkat),
	FULL(link),
	FULL(linkat),
	PARTIAL(rename, "a directory with a part in the rootfs image cannot move: EXDEV"),
	PARTIAL(renameat, "a directory with a part in the rootfs image cannot move: EXDEV"),
	PARTIAL(renameat2, "as renameat; RENAME_WHITEOUT on tmpfs only"),
	FULL(creat),
	FULL(chmod),
	FULL(fchmod),
	FULL(fchmodat),
	FULL(fchmodat2),
	FULL(chown),
	FULL(fchown),
	FULL(lchown),
	FULL(fchownat),
	FULL(utimensat),
	FULL(utime),
	FULL(utimes),
	FULL(futimesat),
	FULL(truncate),
	FULL(ftruncate),
	PARTIAL(fallocate, "modes 0, KEEP_SIZE, PUNCH_HOLE on tmpfs; others EOPNOTSUPP"),
	FULL(sync),
	FULL(syncfs),
	FULL(fsync),
	FULL(fdatasync),
	PARTIAL(openat2, "RESOLVE_CACHED never fails with EAGAIN for an uncached lookup"),

	/* attributes: sys_stat.c */
	FULL(fstat),
	FULL(stat),
	FULL(lstat),
	FULL(newfstatat),
	PARTIAL(statx, "STATX_BASIC_STATS and STATX_MNT_ID; no birth time"),
	PARTIAL(name_to_handle_at,
		"no filesystem of the sandbox gives file handles: EOPNOTSUPP once the path is found "
		"(Linux's answer for one without export operations, such as proc), AT_HANDLE_FID too"),
	FULL(statfs),
	FULL(fstatfs),

	/* memory: sys_mm.c */
	PARTIAL(mmap,
		"MAP_SHARED of files with a page cache (tmpfs, gofer); no SIGBUS after a truncation while mapped"),
	FULL(munmap),
	FULL(mprotect),
	FULL(brk),
	FULL(mremap),
	PARTIAL(madvise, "DONTNEED and FREE zero the range; other advice is accepted and ignored"),
	FULL(msync),

	/* advice and residency: sys_advise.c */
	PARTIAL(fadvise64, "arguments checked; the advice changes nothing"),
	PARTIAL(readahead, "arguments checked; nothing is read ahead"),
	PARTIAL(sync_file_range, "arguments checked; gofer writes are not cached, tmpfs is memory"),
	PARTIAL(mlock, "the range must be mapped; pages are not pinned (RLIMIT_MEMLOCK per call)"),
	PARTIAL(mlock2, "as mlock; MLOCK_ONFAULT accepted"),
	PARTIAL(munlock, "the range must be mapped"),
	PARTIAL(mlockall, "flags checked; nothing is pinned; MCL_FUTURE not remembered"),
	FULL(munlockall),
	PARTIAL(mincore, "every page of a mapped range reads as resident"),

	/* the calling task: sys_thread.c */
	PARTIAL(arch_prctl, "ARCH_SET_FS, ARCH_GET_FS, ARCH_SET_GS, ARCH_GET_GS, ARCH_GET_CPUID; "
			    "ARCH_SET_CPUID: ENODEV (no CPUID faulting); CET and AMX: EINVAL"),
	FULL(set_tid_address),
	FULL(set_robust_list),
	FULL(get_robust_list),
	PARTIAL(rseq,
		"cpu_id is getcpu's; critical sections abort at every return from the sentry "
		"(system calls, faults, signals), not at host preemption, which it does not see"),
	FULL(exit),
	FULL(exit_group),
	PARTIAL(reboot,
		"as in a child pid namespace (the sandbox is a container): halt and power-off end the "
		"caller's pid namespace, its pid 1 killed by SIGINT, restart by SIGHUP; other "
		"commands (Ctrl-Alt-Del on/off, kexec, suspend): EINVAL"),
	FULL(getpid),
	FULL(getppid),
	FULL(gettid),
	FULL(getpgrp),
	FULL(getpgid),
	FULL(getsid),

	/* futexes: sys_futex.c */
	PARTIAL(futex, "PI futexes hand over in FIFO order, without priority boosting"),
	PARTIAL(futex_waitv, "FUTEX2_NUMA is refused (EINVAL)"),

	/* pipes and readiness: sys_pipe.c, sys_poll.c */
	FULL(pipe),
	PARTIAL(pipe2, "O_NOTIFICATION_PIPE: EINVAL"),
	FULL(poll),
	FULL(ppoll),
	FULL(select),
	FULL(pselect6),
	FULL(epoll_create),
	FULL(epoll_create1),
	PARTIAL(epoll_ctl,
		"EPOLLEXCLUSIVE wakes every waiter; items leave when their fd is closed"),
	FULL(epoll_wait),
	FULL(epoll_pwait),
	FULL(epoll_pwait2),
	FULL(eventfd),
	FULL(eventfd2),
	PARTIAL(timerfd_create, "*_ALARM clocks: EPERM"),
	PARTIAL(timerfd_settime,
		"TFD_TIMER_CANCEL_ON_SET never cancels: the guest cannot set the clock, and a host step reaches it without a cancel"),
	FULL(timerfd_gettime),
	FULL(signalfd),
	FULL(signalfd4),

	/* scheduling and accounting: sys_sched.c */
	PARTIAL(sched_getscheduler, "the policy recorded by sched_setscheduler/sched_setattr"),
	PARTIAL(sched_setscheduler,
		"recorded per task, never applied to the host (Linux's permission "
		"rules); SCHED_DEADLINE: EBUSY"),
	PARTIAL(sched_getparam, "the priority recorded"),
	PARTIAL(sched_setparam, "recorded, as sched_setscheduler"),
	FULL(sched_get_priority_max),
	FULL(sched_get_priority_min),
	PARTIAL(sched_rr_get_interval, "0 for SCHED_OTHER"),
	PARTIAL(sched_setaffinity, "kept per thread and reported, not applied to host threads"),
	PARTIAL(getcpu, "the sentry thread's CPU, or the first its affinity allows; node 0; the "
			"vDSO's from the guest thread's CPU until a thread restricts its affinity"),
	PARTIAL(getpriority, "one nice value for the sandbox"),
	PARTIAL(setpriority, "one nice value for the sandbox, never applied to the host"),
	PARTIAL(getrusage, "times and ru_maxrss only"),
	FULL(times),
	PARTIAL(membarrier,
		"a fence in the sentry: threads running guest code are not forced through a barrier"),

	/* timers: sys_timer.c */
	FULL(setitimer),
	FULL(getitimer),
	FULL(alarm),
	PARTIAL(timer_create, "not on another process's CPU clock"),
	FULL(timer_settime),
	FULL(timer_gettime),
	PARTIAL(timer_getoverrun, "the overrun of the last expiry"),
	FULL(timer_delete),

	/* extended attributes: sys_xattr.c */
	FULL(getxattr),
	FULL(lgetxattr),
	FULL(fgetxattr),
	FULL(listxattr),
	FULL(llistxattr),
	FULL(flistxattr),
	FULL(setxattr),
	FULL(lsetxattr),
	FULL(fsetxattr),
	FULL(removexattr),
	FULL(lremovexattr),
	FULL(fremovexattr),
	FULL(getxattrat),
	FULL(setxattrat),
	FULL(listxattrat),
	FULL(removexattrat),
	/* inotify: sys_inotify.c */
	FULL(inotify_init),
	FULL(inotify_init1),
	PARTIAL(inotify_add_watch,
		"changes made inside the sandbox only (not the host's to volumes)"),
	FULL(inotify_rm_watch),

	/* credentials: sys_id.c */
	FULL(getuid),
	FULL(geteuid),
	FULL(getgid),
	FULL(getegid),
	FULL(getgroups),
	FULL(getresuid),
	FULL(getresgid),
	FULL(setuid),
	FULL(setgid),
	FULL(setreuid),
	FULL(setregid),
	FULL(setresuid),
	FULL(setresgid),
	FULL(setfsuid),
	FULL(setfsgid),
	PARTIAL(setgroups, "at most 32 groups (EINVAL beyond)"),
	FULL(capget),
	FULL(capset),

	/* processes: sys_process.c */
	FULL(fork),
	FULL(vfork),
	PARTIAL(clone,
		"CLONE_NEWNS (a mount namespace of the sentry's, owned by the child's user "
		"namespace: locked mounts as Linux), CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, "
		"CLONE_NEWNET (a loopback of its own, veth pairs IPv4 only), CLONE_NEWPID (nested "
		"numbering, init semantics, /proc per pid namespace), CLONE_NEWCGROUP (rooted at the "
		"caller's cgroup) (in the sentry); CLONE_NEWTIME: EPERM"),
	PARTIAL(clone3,
		"namespace flags as clone; CLONE_INTO_CGROUP with the sentry's cgroup2; set_tid of "
		"one level (the sandbox's numbers)"),
	FULL(execve),
	PARTIAL(execveat, "AT_EMPTY_PATH with an empty path (fexecve) needs /proc mounted"),
	PARTIAL(wait4, "rusage reports user and system time and ru_maxrss only"),
	PARTIAL(waitid, "rusage reports user and system time and ru_maxrss only"),
	FULL(setsid),
	FULL(setpgid),
	/* PR_SET_SECCOMP/PR_GET_SECCOMP in sys_seccomp.c, which passes the rest to sys_prctl. */
	[LINUX_NR_prctl] = { "prctl", sys_prctl_seccomp, SYSCALL_PARTIAL,
			     "NAME, PDEATHSIG, NO_NEW_PRIVS, DUMPABLE, CHILD_SUBREAPER, KEEPCAPS, "
			     "CAPBSET_READ/DROP, CAP_AMBIENT, SECUREBITS, SET/GET_SECCOMP; others "
			     "EINVAL" },
	/* mounts and chroot: sys_mount.c (the sentry's own mount tree; nothing reaches the host) */
	FULL(chroot),
	PARTIAL(mount,
		"tmpfs, proc, sysfs, devpts, mqueue, cgroup2 (the sandbox's own hierarchy: "
		"pids.max enforced, memory/cpu/io limits kept, not enforced; in a cgroup namespace "
		"rooted at its root), binds (MS_REC), remount, MS_MOVE, propagation to peers and "
		"slaves; overlay (the sentry's: lowerdir=A[:B...], upperdir and workdir on a tmpfs, "
		"else EINVAL; whole-file copy-up, no index or redirect_dir); in user namespaces "
		"Linux's rules and locked mounts; other types ENODEV"),
	PARTIAL(umount2, "MNT_EXPIRE always EAGAIN; the caller's root without MNT_DETACH is "
			 "EBUSY (Linux remounts it read-only)"),
	PARTIAL(pivot_root, "the sandbox's own root is its tree's top (EINVAL, as Linux's rootfs); "
			    "roots and cwds at the old root move, as Linux"),
	PARTIAL(open_tree, "OPEN_TREE_CLONE copies are freed with their fd only when not "
			   "recursive; attributes of open_tree_attr not supported"),
	PARTIAL(move_mount, "attaches open_tree/fsmount trees or moves mounts; no "
			    "MOVE_MOUNT_SET_GROUP or BENEATH (EINVAL)"),
	PARTIAL(fsopen,
		"tmpfs, proc, sysfs, devpts, mqueue, cgroup2, overlay; reading messages gives "
		"ENODATA"),
	PARTIAL(fsconfig, "SET_FLAG, SET_STRING and CMD_CREATE (options checked at create); other "
			  "commands EOPNOTSUPP"),
	PARTIAL(fsmount, "MOUNT_ATTR_RDONLY, NOSUID, NODEV, NOEXEC and the atime choice"),
	PARTIAL(mount_setattr,
		"RDONLY, NOSUID, NODEV, NOEXEC, the atime choice and propagation, "
		"AT_RECURSIVE, on attached or open_tree mounts; MOUNT_ATTR_IDMAP and "
		"NOSYMFOLLOW: EINVAL; NODIRATIME accepted, not kept"),
	PARTIAL(unshare,
		"CLONE_FILES, CLONE_FS, CLONE_NEWNS (a copy of the mount tree, owned by the caller's "
		"user namespace), CLONE_NEWUTS, CLONE_NEWIPC (SysV; POSIX mqueues stay shared), "
		"CLONE_NEWUSER, CLONE_NEWNET (a loopback of its own, lo down at first; veth pairs "
		"IPv4 only), CLONE_NEWPID (the caller's pid_for_children), CLONE_NEWCGROUP (rooted "
		"at the caller's cgroup: /proc/PID/cgroup and cgroup2 mounts relative to it), all in "
		"the sentry; time: EPERM"),
	PARTIAL(setns,
		"/proc/PID/ns/{uts,ipc,user,net,pid,cgroup,mnt} and pidfds (CLONE_NEWUTS, "
		"CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWCGROUP, "
		"CLONE_NEWNS: the mount namespace the process is in at the call, not at the open); "
		"other types: EINVAL"),
	PARTIAL(seccomp, "filters run by the sentry's cBPF interpreter; no user notification "
			 "(NEW_LISTENER: EINVAL; RET_USER_NOTIF and RET_TRACE give ENOSYS)"),
	FULL(pidfd_open),

	/* clocks: sys_time.c */
	PARTIAL(clock_gettime, "threads running at once share their stub's CPU time equally; "
			       "other clocks as the vDSO computes them (1 us ahead of the host's)"),
	FULL(clock_getres),
	FULL(gettimeofday),
	FULL(time),
	FULL(nanosleep),
	FULL(clock_nanosleep),

	/* system information and limits: sys_info.c */
	PARTIAL(uname,
		"the sentry's release and version, never the host's; names of the caller's UTS namespace"),
	PARTIAL(sysinfo,
		"uptime is the sandbox's; total memory is the host's, capped at the memory file's size; no load or swap"),
	FULL(getrandom),
	PARTIAL(prlimit64, "the caller or a process of its pid namespace (Linux's permission "
			   "rule); limits are the sentry's, not the host's"),
	FULL(getrlimit),
	FULL(setrlimit),
	FULL(sched_getaffinity),
	FULL(sched_yield),
	FULL(sethostname),
	FULL(setdomainname),
	PARTIAL(personality, "stored, inherited and reported; its flags change nothing"),

	/* sockets: sys_socket.c (sentry/net) */
	PARTIAL(socket, "AF_UNIX, AF_INET, AF_INET6 (TCP, UDP, UDP-Lite on loopback only), "
			"AF_NETLINK NETLINK_ROUTE, NETLINK_KOBJECT_UEVENT (receives nothing); "
			"SOCK_RAW and AF_PACKET: EPERM"),
	PARTIAL(socketpair, "AF_UNIX"),
	PARTIAL(bind, "inet: loopback and wildcard addresses only (the sandbox has lo only)"),
	FULL(listen),
	FULL(accept),
	FULL(accept4),
	PARTIAL(connect,
		"other than loopback: host sockets under the egress policy (--network=host)"),
	FULL(getsockname),
	FULL(getpeername),
	PARTIAL(sendto,
		"no MSG_OOB; MSG_FASTOPEN connects first (a host connect in progress: EINPROGRESS even when blocking)"),
	PARTIAL(recvfrom, "no MSG_OOB"),
	PARTIAL(sendmsg,
		"SCM_RIGHTS, SCM_CREDENTIALS, IP_TTL/TOS, IPV6_HOPLIMIT/TCLASS; no MSG_OOB"),
	PARTIAL(recvmsg, "SCM_RIGHTS, SCM_CREDENTIALS, IP/IPv6 ancillary data, MSG_ERRQUEUE, "
			 "TCP_CM_INQ; no MSG_OOB"),
	FULL(sendmmsg),
	FULL(recvmmsg),
	FULL(shutdown),
	PARTIAL(setsockopt, "common options are accepted; most TCP/IP tuning is not applied"),
	PARTIAL(getsockopt, "TCP_INFO gives the state only"),

	/* data between two files: sys_splice.c */
	FULL(sendfile),
	PARTIAL(splice, "copies through the sentry; SPLICE_F_NONBLOCK has no effect"),
	PARTIAL(tee, "copies instead of sharing pages; O_DIRECT packet boundaries are not kept"),
	PARTIAL(copy_file_range, "a copy through the sentry, never a reflink"),

	/* signals: sys_signal.c */
	FULL(rt_sigaction),
	FULL(rt_sigprocmask),
	PARTIAL(sigaltstack, "the AMX-sized minimum stack size is not enforced"),
	PARTIAL(rt_sigreturn,
		"64-bit frames only: the frame's cs/ss are replaced by the 64-bit ones"),
	FULL(restart_syscall),
	FULL(rt_sigpending),
	FULL(rt_sigsuspend),
	FULL(pause),
	FULL(rt_sigtimedwait),
	FULL(kill),
	FULL(tkill),
	FULL(tgkill),
	FULL(rt_sigqueueinfo),
	FULL(rt_tgsigqueueinfo),
	PARTIAL(pidfd_send_signal, "a pidfd or a /proc/PID directory; flags must be 0 (the "
				   "PIDFD_SIGNAL_* scopes are Linux 6.9)"),

	/* ptrace of guest tasks by guest tasks: sys_ptrace.c */
	PARTIAL(ptrace, "no PTRACE_SYSEMU, no hardware breakpoints (debug registers read as 0)"),
	FULL(process_vm_readv),
	FULL(process_vm_writev),

	/* System V IPC: sys_ipc.c (sentry/kernel/ipc*.c) */
	PARTIAL(shmget, "SHM_HUGETLB: ENOMEM (no huge pages are reserved)"),
	PARTIAL(shmat,
		"shm_nattch counts the VMAs that map the segment (as Linux), but an attach whose pages are not contiguous in the sandbox's memory file counts once per piece"),
	FULL(shmdt),
	PARTIAL(shmctl,
		"SHM_LOCK/SHM_UNLOCK only set the flag; shm_dtime/shm_lpid change at shmdt and when an attach's last mapping goes, not at each process's exit"),
	FULL(semget),
	PARTIAL(semop,
		"sleepers retry on every change of their set: the first to run wins, not Linux's queue order"),
	PARTIAL(semtimedop,
		"sleepers retry on every change of their set: the first to run wins, not Linux's queue order"),
	FULL(semctl),
	FULL(msgget),
	PARTIAL(msgsnd,
		"sleepers retry on every change of the queue: the first to run wins, not Linux's queue order"),
	PARTIAL(msgrcv,
		"sleepers retry on every change of the queue: the first to run wins, not Linux's queue order"),
	FULL(msgctl),

	/* issue 11: calls real programs use that were missing */
	PARTIAL(sched_setattr, "policies and priorities recorded per task, never applied to the "
			       "host; the nice value is the sandbox's one; SCHED_DEADLINE: EBUSY"),
	PARTIAL(sched_getattr, "utilization clamps read as 0..1024"),
	PARTIAL(bpf,
		"BPF_PROG_TYPE_CGROUP_DEVICE only, checked and interpreted by the sentry (never "
		"the host's): PROG_LOAD (forward jumps only, no helpers, no pointer spills; "
		"4096 insns), PROG_ATTACH/DETACH/QUERY on a cgroup2 directory (ALLOW_OVERRIDE, "
		"ALLOW_MULTI, REPLACE; enforced at open and mknod of device nodes), "
		"PROG_GET_NEXT_ID, PROG_GET_FD_BY_ID, OBJ_GET_INFO_BY_FD of a program; other "
		"commands and types EINVAL (CGROUP_SKB programs load, for runc's feature probe, but "
		"attach nowhere: EINVAL); EPERM without CAP_SYS_ADMIN or CAP_BPF"),
	PARTIAL(ioprio_get, "the values ioprio_set recorded; nothing schedules I/O by them"),
	PARTIAL(ioprio_set, "recorded per task and inherited; I/O is not scheduled by it"),
	ERROR(clock_settime, "EPERM for every valid request, even with CAP_SYS_TIME: the sandbox "
			     "never sets the host's clock; EINVAL/EFAULT as Linux"),
	ERROR(settimeofday, "EPERM for every valid request, as clock_settime; EINVAL/EFAULT as "
			    "Linux"),
	PARTIAL(process_madvise, "own process: as madvise; another process: COLD, PAGEOUT, "
				 "WILLNEED, COLLAPSE checked against its mappings, then nothing"),
	FULL(pidfd_getfd),
	PARTIAL(mq_open, "one namespace per sandbox; RLIMIT_MSGQUEUE charged per owner uid with "
			 "a fixed overhead per message"),
	FULL(mq_unlink),
	FULL(mq_timedsend),
	FULL(mq_timedreceive),
	FULL(mq_notify),
	FULL(mq_getsetattr),
	PARTIAL(io_setup, "the ring is Linux's struct aio_ring in a private anonymous mapping"),
	FULL(io_destroy),
	PARTIAL(io_submit, "PREAD, PWRITE, PREADV, PWRITEV, FSYNC, FDSYNC complete inside the "
			   "call; POLL completes when ready, with the asked events ready then and "
			   "their normal band (not the waker's own set)"),
	FULL(io_getevents),
	FULL(io_pgetevents),
	PARTIAL(io_cancel, "a pending POLL: EINPROGRESS and its event (res 0); other requests have "
			   "finished: EINVAL, as Linux"),
	PARTIAL(vmsplice, "copies (never maps pages into the pipe); SPLICE_F_GIFT has no effect"),
};

#define NAME_ROW(n, nm) [n] = #nm,
static const char *const syscall_names[LINUX_SYSCALL_MAX] = { LINUX_SYSCALLS(NAME_ROW) };

const char *syscall_name(long nr)
{
	if (nr < 0 || nr >= LINUX_SYSCALL_MAX)
		return NULL;
	return syscall_names[nr];
}
