/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's seccomp allow-list (DESIGN.md rule 3). Everything not listed kills the sentry.
 * Each entry says why the sentry needs it. Notably absent: open/openat and every other call
 * that names a host path, socket/connect, execve, mount, and module or BPF loading.
 *
 * Stubs are forked from the sentry and inherit this filter (stacked under their own), so the
 * stub's own calls must be allowed here too: they are marked "stub".
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/socket.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "common/util.h"
#include "sentry/confine.h"
#include "sentry/control/control.h"
#include "sentry/filter.h"
#include "sentry/net/net.h"

/* Weak: the filter's unit test links this file without sentry/net (no host sockets then). */
#pragma weak net_get_mode
#pragma weak net_inbound
/* Weak: likewise without sentry/control (no control socket then). */
#pragma weak control_listen_fd
/* Weak: likewise without sentry/net's gateway.c (no gateway then). */
#pragma weak net_gateway_fd
/* Weak: the program built into husk-sentry at build time (filter_gen.c); absent elsewhere. */
#pragma weak sentry_filter_prebuilt
#pragma weak sentry_filter_prebuilt_len

struct filter_rule {
	int nr;
	const char *why;
};

#define ALLOW(name, reason)            \
	{                              \
		SCMP_SYS(name), reason \
	}

static const struct filter_rule rules[] = {
	/* Data to and from files the sentry holds: donated gofer FDs, the caller's stdio and the
	 * FDs it passed with --preserve-fds or husk exec (host files, sentry/fs/host). */
	ALLOW(read, "read(2) of host stdio and donated files"),
	ALLOW(write, "write(2) to host stdio, logs"),
	ALLOW(readv, "read(2)/readv(2) into guest memory through iovecs"),
	ALLOW(writev, "write(2)/writev(2) from guest memory through iovecs"),
	ALLOW(pread64, "file_pread of donated files (loader)"),
	ALLOW(pwrite64, "pwrite of donated files"),
	ALLOW(preadv, "positioned reads of donated files into guest memory"),
	ALLOW(pwritev, "positioned writes of donated files from guest memory"),
	ALLOW(lseek, "host file offsets of donated files"),
	ALLOW(close, "closing donated FDs"),
	ALLOW(fstat, "attributes of host stdio"),
	ALLOW(newfstatat, "glibc's fstat() is newfstatat(fd, \"\", AT_EMPTY_PATH)"),
	ALLOW(fcntl, "FD flags of donated FDs"),
	ALLOW(dup, "stdio FDs for the guest's FD table"),
	ALLOW(getdents64, "reading donated directory FDs"),
	/* The gofer connection. */
	ALLOW(sendmsg, "gofer requests"),
	ALLOW(recvmsg, "gofer replies with donated FDs (SCM_RIGHTS)"),
	/* Memory: the sentry's heap and the memory file. */
	ALLOW(mmap, "sentry heap, thread stacks; stub: mapping memory-file ranges"),
	ALLOW(munmap, "sentry heap; stub: unmapping guest ranges and its inherited memory"),
	ALLOW(mprotect, "thread stack guards; stub: guest protections"),
	ALLOW(mremap, "realloc of large blocks"),
	ALLOW(madvise, "malloc trimming"),
	ALLOW(brk, "malloc"),
	ALLOW(fallocate,
	      "punching freed guest memory out of the memory file; fallocate(2) of donated files"),
	ALLOW(ftruncate, "truncate(2)/ftruncate(2) of donated files (--overlay=none, volumes)"),
	ALLOW(fsync, "fsync(2) of donated files (gofer_fs.c): the host's flush of the host file"),
	ALLOW(fdatasync, "fdatasync(2) of donated files (gofer_fs.c)"),
	/* Threads, stubs and tracing. */
	ALLOW(clone, "sentry threads; forking stubs"),
	ALLOW(clone3, "glibc's pthread_create uses clone3"),
	ALLOW(ptrace, "the ptrace platform drives stubs"),
	ALLOW(wait4, "waiting for stub stops and exits"),
	ALLOW(waitid, "waiting for stub stops and exits"),
	ALLOW(kill, "killing stubs (as_destroy)"),
	ALLOW(tgkill, "interrupting a stub thread; raise()"),
	ALLOW(getpid, "raise(), glibc"),
	ALLOW(gettid, "raise(), logging; the host thread that runs a task (its system time)"),
	ALLOW(futex, "mutexes and condition variables"),
	ALLOW(set_robust_list, "glibc thread start"),
	ALLOW(rseq, "glibc thread start"),
	ALLOW(sched_yield, "sched_yield(2) for the guest; spinning"),
	ALLOW(sched_getaffinity, "sched_getaffinity(2) for the guest; the CPU count by which "
				 "CPU-time timers are polled"),
	ALLOW(sched_setaffinity, "pinning a stub to its tracer's CPU: ptrace stops are cheaper"),
	ALLOW(poll, "waiting on host stdio for a guest's non-blocking read"),
	ALLOW(ppoll, "glibc's poll() may use ppoll"),
	ALLOW(epoll_create1, "hostpoll: one epoll over the host stdio FDs"),
	ALLOW(epoll_ctl, "hostpoll: watching host stdio FDs"),
	ALLOW(epoll_wait, "hostpoll: waiting for host stdio readiness"),
	ALLOW(epoll_pwait, "glibc's epoll_wait() may use epoll_pwait"),
	ALLOW(pidfd_open, "stubwatch: a pidfd of each stub, readable at its death (only watched)"),
	ALLOW(fstatfs, "statfs(2) of donated files"),
	ALLOW(prctl, "stub: PR_SET_NAME, PR_SET_PDEATHSIG in a new stub"),
	ALLOW(close_range, "stub: closing every FD but the memory file"),
	ALLOW(dup2, "stub: moving the memory file to its fixed FD"),
	ALLOW(dup3, "stub: moving the memory file to its fixed FD"),
	ALLOW(seccomp, "stub: installing the stub's own filter on top of this one"),
	ALLOW(rt_sigaction, "signal handling"),
	ALLOW(rt_sigprocmask, "signal masks of sentry threads"),
	ALLOW(rt_sigreturn, "return from sentry signal handlers"),
	ALLOW(rt_sigtimedwait, "hostsig.c: sigwaitinfo for host signals forwarded to pid 1"),
	ALLOW(sigaltstack, "glibc"),
	ALLOW(exit, "sentry threads ending"),
	ALLOW(exit_group, "the sentry ending"),
	/* Time, randomness, information answered for the guest from the host's. */
	ALLOW(clock_gettime, "clocks for the guest; guest CPU time: the CPU clocks of the stub "
			     "processes and of the sentry threads that run tasks (cputime.c)"),
	ALLOW(clock_getres, "clock_getres(2) for the guest"),
	ALLOW(gettimeofday, "gettimeofday(2) for the guest"),
	ALLOW(clock_nanosleep, "sleeping for the guest"),
	ALLOW(nanosleep, "sleeping for the guest"),
	ALLOW(mincore, "the crash report: libunwind checks each address is mapped before reading "
		       "it (the sentry's own memory only)"),
	ALLOW(restart_syscall, "the kernel's resumption of an interrupted timed sleep, futex or "
			       "poll (after a cgroup v2 freeze and thaw, or a stop and continue)"),
	ALLOW(getrandom, "AT_RANDOM, getrandom(2), /dev/urandom for the guest"),
	ALLOW(sysinfo, "sysinfo(2) for the guest: host memory figures"),
	ALLOW(prlimit64, "getrlimit"),
	ALLOW(getrusage, "CPU clocks for the guest"),
};

static bool allow_kvm; /* set before the filter is built, read-only afterwards */

void sentry_filter_allow_kvm(void)
{
	allow_kvm = true;
}

bool sentry_filter_is_default(void)
{
	return !allow_kvm && !(control_listen_fd && control_listen_fd() >= 0) &&
	       !(net_get_mode && net_get_mode() == NET_MODE_HOST) &&
	       !(net_gateway_fd && net_gateway_fd() >= 0);
}

int sentry_filter_build(scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx;
	int ret;

	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(rules); i++) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, rules[i].nr, 0);
		if (ret < 0)
			goto out;
	}
	/*
	 * ioctl only for the terminal calls the guest may make of the caller's stdio
	 * (sentry/fs/host/hosttty.c): termios (TCGETS2 and friends are struct termios2's),
	 * window size, flow control, flushes, breaks and queue sizes. Job control (the
	 * foreground group, the controlling terminal) is the sentry's own and never reaches the
	 * host; TIOCSTI, TIOCLINUX, TIOCCONS, TIOCSETD and the rest are not here.
	 */
	static const unsigned long ioctls[] = {
		TCGETS,
		TCSETS,
		TCSETSW,
		TCSETSF,
		0x802c542aUL /* TCGETS2 */,
		0x402c542bUL /* TCSETS2 */,
		0x402c542cUL /* TCSETSW2 */,
		0x402c542dUL /* TCSETSF2 */,
		TIOCGWINSZ,
		TIOCSWINSZ,
		TIOCGPGRP,
		FIONREAD,
		TIOCOUTQ,
		TCFLSH,
		TCXONC,
		TCSBRK,
		TCSBRKP,
	};
	for (size_t i = 0; i < ARRAY_SIZE(ioctls); i++) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, ioctls[i]));
		if (ret < 0)
			goto out;
	}
	/*
	 * The KVM platform (sentry/platform/kvm): after /dev/kvm was opened and probed (before the
	 * filter), a space makes a VM and its memory slot, a guest thread a vCPU and its set-up;
	 * switches run it and move registers and FP state. By request number (the fd cannot be
	 * named: VMs and vCPUs come and go); KVM_CREATE_VM's type must be 0. Nothing else of
	 * KVM (no devices, no irqchip, no other memory) is allowed.
	 */
	if (allow_kvm) {
		static const unsigned long kvm_ioctls[] = {
			KVM_SET_USER_MEMORY_REGION,
			KVM_CREATE_VCPU,
			KVM_SET_CPUID2,
			KVM_GET_SREGS,
			KVM_SET_SREGS,
			KVM_SET_MSRS,
			KVM_SET_XCRS,
			KVM_RUN,
			KVM_GET_XSAVE,
			KVM_SET_XSAVE,
		};

		for (size_t i = 0; i < ARRAY_SIZE(kvm_ioctls); i++) {
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
					       SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL,
						       kvm_ioctls[i]));
			if (ret < 0)
				goto out;
		}
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 2,
				       SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, KVM_CREATE_VM),
				       SCMP_A2(SCMP_CMP_EQ, 0));
		if (ret < 0)
			goto out;
	}
	/*
	 * setpgid(0, 0) only: a ptrace stub forked from the sentry leaves the terminal's
	 * foreground group before it runs guest code, so that the terminal's signals (^C, ^Z)
	 * reach the sentry alone (sentry/fs/host/hosttty.c), never a stub. Another process or
	 * group cannot be named.
	 */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setpgid), 2, SCMP_A0(SCMP_CMP_EQ, 0),
			       SCMP_A1(SCMP_CMP_EQ, 0));
	if (ret < 0)
		goto out;
	/*
	 * --control-fd (husk create): accept4 on the listening control socket only, so that husk
	 * exec and husk ps reach a control thread; the connections it accepts are read and
	 * written with recvmsg/sendmsg (the gofer's entries above). No other socket is accepted.
	 */
	if (net_inbound && net_inbound()) {
		/*
		 * --inbound (a pod's network namespace): the guest's TCP listeners listen on host
		 * sockets too (sentry/net/host.c host_listen) and the sentry accepts their
		 * connections: bind and listen of those sockets, accept4 of any (the control
		 * socket's among them).
		 */
		static const int nrs[] = { SCMP_SYS(bind), SCMP_SYS(listen), SCMP_SYS(accept4) };

		for (size_t i = 0; i < ARRAY_SIZE(nrs); i++) {
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0);
			if (ret < 0)
				goto out;
		}
	} else if (control_listen_fd && control_listen_fd() >= 0) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(accept4), 1,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)control_listen_fd()));
		if (ret < 0)
			goto out;
	}
	/*
	 * --network=host: the sentry's own host sockets (sentry/net/host.c) for guest traffic the
	 * egress policy allowed. socket() only for TCP and UDP over IPv4/IPv6, so that no host
	 * AF_UNIX, netlink, packet or raw socket can ever be made; the rest act on those sockets.
	 */
	if (net_get_mode && net_get_mode() == NET_MODE_HOST) {
		static const int fams[] = { AF_INET, AF_INET6 };
		static const int types[] = { SOCK_STREAM, SOCK_DGRAM };
		static const struct filter_rule sock_rules[] = {
			ALLOW(connect,
			      "host sockets: connecting to a destination the policy allowed"),
			ALLOW(getsockopt, "host sockets: SO_ERROR of a non-blocking connect"),
			ALLOW(setsockopt,
			      "host sockets: IPV6_V6ONLY, TCP_NODELAY as the guest asked"),
			ALLOW(getsockname, "host sockets: getsockname(2) for the guest"),
			ALLOW(getpeername, "host sockets: getpeername(2) for the guest"),
			ALLOW(shutdown, "host sockets: shutdown(2) for the guest"),
		};

		for (size_t i = 0; i < ARRAY_SIZE(fams); i++) {
			for (size_t j = 0; j < ARRAY_SIZE(types); j++) {
				ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
						       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fams[i]),
						       SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf,
							       (scmp_datum_t)types[j]));
				if (ret < 0)
					goto out;
			}
		}
		for (size_t i = 0; i < ARRAY_SIZE(sock_rules); i++) {
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sock_rules[i].nr, 0);
			if (ret < 0)
				goto out;
		}
	}
	/*
	 * --gateway-fd (sentry/net/gateway.c): each guest connection to the gateway address is
	 * a unix stream socketpair, one end sent to the gateway over the fd the runtime gave
	 * (sendmsg, above), the other read and written for the guest. socketpair() only for
	 * AF_UNIX streams: no socket that reaches anything but the gateway's own end. shutdown
	 * for the guest's shutdown(2) of such a connection (host mode allows it already).
	 */
	if (net_gateway_fd && net_gateway_fd() >= 0) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 2,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)AF_UNIX),
				       SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, (scmp_datum_t)SOCK_STREAM));
		if (ret < 0)
			goto out;
		if (!(net_get_mode && net_get_mode() == NET_MODE_HOST)) {
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(shutdown), 0);
			if (ret < 0)
				goto out;
		}
	}
	*out = ctx;
	return 0;
out:
	seccomp_release(ctx);
	return ret;
}

int sentry_install_filter(void)
{
	scmp_filter_ctx ctx;
	int ret;

	/*
	 * The usual case (no control socket, no host network): the program libseccomp made of
	 * these same rules at build time. Compiling it here costs ~0.2 ms of every start.
	 */
	if (sentry_filter_prebuilt && sentry_filter_is_default())
		return filter_load_prebuilt(sentry_filter_prebuilt, sentry_filter_prebuilt_len);
	ret = sentry_filter_build(&ctx);
	if (ret < 0)
		return ret;
	ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}
