/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A system-call fuzzer run as a guest (static, pid 1 of a sandbox): sysfuzz SEED BATCHES CALLS
 * NR,NR,... makes BATCHES batches of CALLS random system calls, each batch in a forked child,
 * drawn from the numbers given (the sentry's implemented table, see run.sh) with arguments drawn
 * from interesting values: small and huge numbers, negative numbers, random flags, descriptors
 * the child opened (files, pipes, sockets, eventfd, epoll, memfd, timerfd, /proc files), valid
 * and wild pointers (NULL, kernel addresses, unmapped, read-only and PROT_NONE pages, buffers
 * that straddle into a PROT_NONE page, the stack) and partly valid nested structures (iovecs,
 * msghdr, sigaction, epoll_event, timespec, clone3 args).
 *
 * Calls that would end the run usefully are not made (exit, execve, reboot-like) or are tamed:
 * fork-like calls go through a stub whose child exits at once (at most a few per batch); calls
 * that name a process only name the child itself, its children or pids that do not exist;
 * mount-like calls only name the batch's scratch directory. The parent (pid 1) only forks,
 * watches each batch for a few seconds (then kills its process group) and reaps; a batch that
 * crashes is fine. The last line is "sysfuzz: seed S: B batches done" and the status 0.
 *
 * With threads=N (sysfuzz SEED BATCHES CALLS NRS [trace] [threads=N]), each batch runs N threads
 * (one process, at most 16) that share its CALLS calls (at least 16 each) and make them at once
 * on the same descriptors and memory, and
 * now and then pull them from under each other: munmap and mmap again, or mprotect to
 * PROT_NONE or read-only and back, a page of the area the others pass as buffers, iovecs and
 * structures; close, or dup2 over, a descriptor another thread may be blocked on; MADV_DONTNEED
 * the area. A thread that faults on the area while it is gone waits (its SIGSEGV handler
 * returns) until it is back. The batch's first thread signals the others until they are done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_NRS 512
#define MAX_FDS 32
#define MAX_KIDS 4
#define BATCH_SECONDS 2

static __thread uint64_t rng; /* each thread draws its own */
static long nrs[MAX_NRS];
static int nnrs;
static int fds[MAX_FDS];
static int nfds;
static pid_t kids[MAX_KIDS];
static int nkids;
static long page;
static char scratch[48];
static int trace_fd = -1; /* with the argument "trace": each call, before it is made */
static int nthreads = 1; /* threads=N: threads per batch */

/* The areas pointers are drawn from, made by each batch child. */
static char *rw_area; /* 4 read-write pages with structured content */
static char *ro_page;
static char *none_page;
static char *straddle; /* a read-write page followed by a PROT_NONE page */
static char *unmapped;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static const char *const paths[] = {
	"a",
	"b",
	"a/b",
	"d",
	"d/e",
	"link",
	".",
	"..",
	"",
	"/proc/self/status",
	"/proc/self/maps",
	"/proc/self/fd",
	"/proc/self/mem",
	"/proc/self/stat",
	"/etc/passwd",
	"/etc",
	"/tmp",
	"/proc/sys/kernel/hostname",
	"/proc/self/fd/0",
	"/sys/kernel",
};

static const char *const scratch_paths[] = { "a", "b", "d", "d/e", ".", "" };

/* A path in the read-write area (so that the call may also write over it). */
static long pick_path(int scratch_only)
{
	char *p = rw_area + 3 * page + below(16) * 64;
	const char *s = scratch_only ? scratch_paths[below(6)] : paths[below(20)];

	if (scratch_only && s[0] == '\0') {
		snprintf(p, 64, "%s/m", scratch);
		return (long)p;
	}
	snprintf(p, 64, "%s", s);
	return (long)p;
}

static long pick_pointer(void)
{
	switch (below(14)) {
	case 0:
		return 0;
	case 1:
		return (long)0xffffffff81000000ULL;
	case 2:
		return (long)0xffff800000000000ULL;
	case 3:
		return (long)unmapped + (long)below(page);
	case 4:
		return (long)ro_page + (long)below(page);
	case 5:
		return (long)none_page;
	case 6:
		return (long)straddle + page - 1 - (long)below(64);
	case 7:
		return (long)__builtin_frame_address(0) - (long)below(256); /* the stack */
	case 8:
		return (long)(rw_area + below(4 * page));
	case 9:
		return (long)pick_path(0);
	case 10:
		return (long)0x0000800000000000ULL - (long)below(16);
	case 11:
		return 1 + (long)below(4096);
	default:
		return (long)(rw_area + below(3 * page / 64) * 64);
	}
}

static long pick_fd(void)
{
	if (below(8) == 0)
		return (long)below(8) - 2;
	if (below(16) == 0)
		return 1L << (below(31) + 1);
	return nfds ? fds[below(nfds)] : 0;
}

static long pick_number(void)
{
	static const long special[] = {
		0,
		1,
		2,
		3,
		4,
		7,
		8,
		16,
		64,
		255,
		256,
		4095,
		4096,
		4097,
		65535,
		65536,
		0x7fffffff,
		0x80000000L,
		0xffffffffL,
		-1,
		-2,
		-4095,
		-4096,
		0x7fffffffffffffffL,
		(long)0x8000000000000000ULL,
		1L << 40,
		1L << 48,
		1024 * 1024,
	};

	switch (below(5)) {
	case 0:
		return special[below(sizeof(special) / sizeof(special[0]))];
	case 1:
		return (long)below(32);
	case 2:
		return 1L << below(64); /* a single flag */
	case 3:
		return (long)(rnd() & rnd()); /* a few flags */
	default:
		return (long)rnd();
	}
}

static long pick_arg(void)
{
	switch (below(8)) {
	case 0:
	case 1:
		return pick_fd();
	case 2:
	case 3:
	case 4:
		return pick_pointer();
	default:
		return pick_number();
	}
}

/* A pid the child may name: itself, its children, or none that exists (never its parent). */
static long pick_pid(void)
{
	switch (below(6)) {
	case 0:
		return 0;
	case 1:
		return getpid();
	case 2:
		return nkids ? kids[below(nkids)] : getpid();
	case 3:
		return -getpid();
	case 4:
		return 99999 + (long)below(1000);
	default:
		return -99999;
	}
}

static long pick_sig(void)
{
	long s = (long)below(70);

	return s == SIGKILL || s == SIGSTOP ? 0 : s;
}

/* Fills the read-write area with nested structures, partly valid. */
static void fill_structures(void)
{
	struct iovec *iov = (struct iovec *)rw_area;
	struct msghdr *mh = (struct msghdr *)(rw_area + 512);
	struct sigaction *sa = (struct sigaction *)(rw_area + 1024);
	struct epoll_event *ev = (struct epoll_event *)(rw_area + 1536);
	struct timespec *ts = (struct timespec *)(rw_area + 2048);
	struct clone_args *ca = (struct clone_args *)(rw_area + 2560);
	long *words = (long *)(rw_area + page);

	for (int i = 0; i < 16; i++) {
		iov[i].iov_base = below(3) ? (void *)(rw_area + 2 * page) : (void *)pick_pointer();
		iov[i].iov_len = below(3) ? below(page) : (size_t)pick_number();
	}
	mh->msg_name = below(2) ? (void *)(rw_area + 2 * page) : (void *)pick_pointer();
	mh->msg_namelen = (socklen_t)(below(2) ? below(128) : (uint64_t)pick_number());
	mh->msg_iov = below(2) ? iov : (void *)pick_pointer();
	mh->msg_iovlen = below(2) ? below(17) : (size_t)pick_number();
	mh->msg_control = below(2) ? (void *)(rw_area + 2 * page + 1024) : (void *)pick_pointer();
	mh->msg_controllen = below(2) ? below(256) : (size_t)pick_number();
	mh->msg_flags = (int)pick_number();
	memset(sa, 0, sizeof(*sa));
	sa->sa_handler = below(2) ? SIG_IGN : (void (*)(int))pick_pointer();
	sa->sa_flags = (int)pick_number();
	for (int i = 0; i < 8; i++) {
		ev[i].events = (uint32_t)pick_number();
		ev[i].data.u64 = rnd();
	}
	for (int i = 0; i < 4; i++) {
		ts[i].tv_sec = below(2) ? (time_t)below(2) : (time_t)pick_number();
		ts[i].tv_nsec = below(2) ? (long)below(1000000) : pick_number();
	}
	memset(ca, 0, sizeof(*ca));
	ca->flags = (uint64_t)pick_number() & ~(uint64_t)(CLONE_VM | CLONE_VFORK);
	ca->pidfd = (uint64_t)pick_pointer();
	ca->child_tid = (uint64_t)pick_pointer();
	ca->parent_tid = (uint64_t)pick_pointer();
	ca->exit_signal = below(2) ? SIGCHLD : (uint64_t)pick_number();
	ca->set_tid = (uint64_t)pick_pointer();
	ca->set_tid_size = below(4);
	for (int i = 0; i < 64; i++)
		words[i] = below(2) ? pick_arg() : (long)below(64);
	for (long i = 0; i < 1024; i++)
		rw_area[2 * page + i] = (char)rnd();
}

/*
 * A fork-like call whose child exits at once, on whatever stack it got: the child runs
 * only the exit system call that follows the call.
 */
static long fork_stub(long nr, long a0, long a1, long a2, long a3, long a4)
{
	long ret;
	register long r10 __asm__("r10") = a3;
	register long r8 __asm__("r8") = a4;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov $60, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n\t"
			 "1:"
			 : "=a"(ret)
			 : "0"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}

static void on_signal(int sig)
{
	(void)sig;
}

/* SIGALRM unblocked and handled without SA_RESTART, the 50 ms interval timer running. */
static void keep_timer(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct itimerval it = { { 0, 50000 }, { 0, 50000 } };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void add_fd(int fd);

static void one_call(void)
{
	long nr = nrs[below(nnrs)];
	long a[6];
	long ret;

	for (int i = 0; i < 6; i++)
		a[i] = pick_arg();
	switch (nr) {
	case SYS_exit:
	case SYS_exit_group:
	case SYS_execve:
	case SYS_execveat:
	case SYS_reboot:
	case SYS_kexec_load:
	case SYS_kexec_file_load:
	case SYS_pidfd_getfd:
	case SYS_pidfd_send_signal: /* pidfds come only from pidfd_open, tamed below */
		return;
	case SYS_rt_sigreturn: /* a garbage frame mostly ends the batch: keep it rare */
	case SYS_arch_prctl:
	case SYS_seccomp:
		if (below(10))
			return;
		break;
	case SYS_clone:
	case SYS_fork:
	case SYS_vfork:
	case SYS_clone3:
		if (nkids >= MAX_KIDS)
			return;
		if (nr == SYS_clone) {
			a[0] &= ~(long)(CLONE_VM | CLONE_VFORK);
			a[1] = 0;
		} else if (nr == SYS_clone3) {
			a[0] = (long)(rw_area + 2560);
			a[1] = below(2) ? (long)sizeof(struct clone_args) : pick_number();
		}
		ret = fork_stub(nr, a[0], a[1], a[2], a[3], a[4]);
		if (ret > 0) {
			int k = __atomic_fetch_add(&nkids, 1, __ATOMIC_RELAXED);

			if (k < MAX_KIDS)
				kids[k] = (pid_t)ret;
			else
				__atomic_store_n(&nkids, MAX_KIDS, __ATOMIC_RELAXED);
		}
		return;
	case SYS_kill:
	case SYS_tkill:
	case SYS_tgkill:
	case SYS_rt_sigqueueinfo:
	case SYS_rt_tgsigqueueinfo:
		a[0] = pick_pid();
		if (nr == SYS_tgkill || nr == SYS_rt_tgsigqueueinfo) {
			a[1] = below(2) ? getpid() : pick_pid();
			a[2] = pick_sig();
		} else {
			a[1] = pick_sig();
		}
		break;
	case SYS_ptrace:
		a[1] = pick_pid();
		break;
	case SYS_process_vm_readv:
	case SYS_process_vm_writev:
	case SYS_prlimit64:
	case SYS_sched_setaffinity:
	case SYS_sched_setparam:
	case SYS_sched_setscheduler:
	case SYS_sched_setattr:
	case SYS_pidfd_open:
	case SYS_setpgid:
	case SYS_migrate_pages:
	case SYS_move_pages:
		a[0] = pick_pid();
		if (nr == SYS_setpgid)
			a[1] = below(2) ? 0 : getpid();
		break;
	case SYS_kcmp:
		a[0] = pick_pid();
		a[1] = pick_pid();
		break;
	case SYS_setpriority:
	case SYS_ioprio_set:
		a[1] = pick_pid() & 0x7fffffff;
		break;
	case SYS_mount:
	case SYS_umount2:
	case SYS_pivot_root:
	case SYS_chroot:
		a[0] = pick_path(1);
		a[1] = pick_path(1);
		break;
	case SYS_open:
	case SYS_creat:
	case SYS_stat:
	case SYS_lstat:
	case SYS_unlink:
	case SYS_mkdir:
	case SYS_rmdir:
	case SYS_chdir:
	case SYS_readlink:
	case SYS_rename:
	case SYS_symlink:
	case SYS_link:
		if (below(4))
			a[0] = pick_path(0);
		if (below(2))
			a[1] = pick_path(0);
		break;
	case SYS_openat:
	case SYS_newfstatat:
	case SYS_unlinkat:
	case SYS_mkdirat:
	case SYS_readlinkat:
	case SYS_faccessat:
	case SYS_faccessat2:
	case SYS_statx:
	case SYS_openat2:
	case SYS_renameat2:
	case SYS_linkat:
	case SYS_fchmodat:
		if (below(2))
			a[0] = AT_FDCWD;
		if (below(4))
			a[1] = pick_path(0);
		break;
	case SYS_rt_sigaction:
		a[0] = pick_sig();
		if (below(2))
			a[1] = (long)(rw_area + 1024);
		if (below(2))
			a[3] = 8;
		break;
	case SYS_rt_sigprocmask:
		if (below(2))
			a[3] = 8;
		break;
	case SYS_readv:
	case SYS_writev:
	case SYS_preadv:
	case SYS_pwritev:
	case SYS_preadv2:
	case SYS_pwritev2:
	case SYS_vmsplice:
		if (below(2)) {
			a[1] = (long)rw_area;
			a[2] = (long)below(17);
		}
		break;
	case SYS_sendmsg:
	case SYS_recvmsg:
		if (below(2))
			a[1] = (long)(rw_area + 512);
		break;
	case SYS_epoll_ctl:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
		if (below(2))
			a[nr == SYS_epoll_ctl ? 3 : 1] = (long)(rw_area + 1536);
		break;
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_futex:
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_timerfd_settime:
	case SYS_timer_settime:
		if (below(2))
			a[below(4)] = (long)(rw_area + 2048);
		break;
	default:
		break;
	}
	if (trace_fd >= 0)
		dprintf(trace_fd, "sysfuzz: %d: %ld(%#lx, %#lx, %#lx, %#lx, %#lx, %#lx)\n",
			(int)syscall(SYS_gettid), nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	ret = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	/* Keep the timer that ends blocked calls going (else the batch idles until it is killed). */
	if (nr == SYS_rt_sigprocmask || nr == SYS_rt_sigaction || nr == SYS_setitimer ||
	    nr == SYS_alarm || nr == SYS_rt_sigsuspend)
		keep_timer();
	/* Keep what the call made that looks like a descriptor (no guarantee it is one). */
	if (ret > 2 && ret < 1024 && nfds < MAX_FDS &&
	    (nr == SYS_open || nr == SYS_openat || nr == SYS_socket || nr == SYS_dup ||
	     nr == SYS_eventfd2 || nr == SYS_epoll_create1 || nr == SYS_memfd_create ||
	     nr == SYS_accept || nr == SYS_accept4 || nr == SYS_signalfd4 ||
	     nr == SYS_inotify_init1 || nr == SYS_timerfd_create || nr == SYS_pidfd_open))
		add_fd((int)ret);
}

static void add_fd(int fd)
{
	int i;

	if (fd < 0)
		return;
	i = __atomic_fetch_add(&nfds, 1, __ATOMIC_RELAXED);
	if (i < MAX_FDS)
		fds[i] = fd;
	else
		__atomic_store_n(&nfds, MAX_FDS, __ATOMIC_RELAXED);
}

static void *map(int prot)
{
	void *p = mmap(NULL, (size_t)page, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Pulls memory or a descriptor from under the other threads (threads=N), briefly. */
static void chaos(void)
{
	char *p = rw_area + below(4) * page;
	int n = __atomic_load_n(&nfds, __ATOMIC_RELAXED);

	switch (below(6)) {
	case 0: /* a buffer page gone, then back (zeroed) */
		munmap(p, (size_t)page);
		sched_yield();
		mmap(p, (size_t)page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		break;
	case 1: /* a buffer page unreadable or read-only, then back */
		mprotect(p, (size_t)page, below(2) ? PROT_NONE : PROT_READ);
		sched_yield();
		mprotect(p, (size_t)page, PROT_READ | PROT_WRITE);
		break;
	case 2: /* the straddling pair gone, then back as it was */
		munmap(straddle, 2 * (size_t)page);
		sched_yield();
		if (mmap(straddle, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
			mprotect(straddle + page, (size_t)page, PROT_NONE);
		break;
	case 3: /* a descriptor in use closed; its number soon names something else */
		if (n > 2) {
			int fd = fds[2 + below((uint64_t)n - 2)];

			if (fd > 2) {
				close(fd);
				sched_yield();
				dup2(fds[below((uint64_t)n)], fd);
			}
		}
		break;
	case 4: /* a descriptor in use replaced by another */
		if (n > 2) {
			int fd = fds[2 + below((uint64_t)n - 2)];

			if (fd > 2)
				dup2(fds[below((uint64_t)n)], fd);
		}
		break;
	default: /* the area's pages dropped (zeroed) under the others */
		madvise(rw_area, 4 * (size_t)page, MADV_DONTNEED);
		break;
	}
}

struct worker {
	pthread_t t;
	uint64_t seed;
	int calls;
	int done; /* atomic: its calls are made */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	rng = w->seed;
	for (int i = 0; i < w->calls; i++) {
		if (i % 16 == 0)
			fill_structures();
		if (below(8) == 0)
			chaos();
		else
			one_call();
	}
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A fault on the area while another thread has it unmapped: wait until it is back. Not for
 * ever: a fuzzed munmap takes memory away for good (then the batch ends with the signal).
 */
static __thread int faults;

static void on_fault(int sig)
{
	if (++faults > 100)
		signal(sig, SIG_DFL);
	sched_yield();
}

static void run_threads(int calls)
{
	struct sigaction fault = { .sa_handler = on_fault, .sa_flags = SA_NODEFER };
	struct worker w[16];
	int n = nthreads < 16 ? nthreads : 16;

	/* The batch's calls, shared out: as many as one thread makes, within the batch's time. */
	calls = calls / n > 16 ? calls / n : 16;
	sigaction(SIGSEGV, &fault, NULL);
	sigaction(SIGBUS, &fault, NULL);
	for (int i = 1; i < n; i++) {
		w[i].seed = rnd() | 1;
		w[i].calls = calls;
		w[i].done = 0;
		if (pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0)
			w[i].calls = -1;
	}
	w[0].seed = rnd() | 1;
	w[0].calls = calls;
	worker_main(&w[0]);
	/*
	 * The others may be blocked in a call: SIGALRM (no SA_RESTART) until each is done. No
	 * pthread_join: a fuzzed set_tid_address or set_robust_list may have taken the exit's wake
	 * away; the batch's exit_group ends whatever is left.
	 */
	for (int i = 1; i < n; i++) {
		if (w[i].calls < 0)
			continue;
		while (!__atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE)) {
			pthread_kill(w[i].t, SIGALRM);
			usleep(1000);
		}
	}
}

static void batch(int calls)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int p[2], sv[2];
	char *two;

	setpgid(0, 0);
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGSEGV && s != SIGBUS)
			sigaction(s, &sa, NULL);
	/* Blocking calls end with EINTR: the timer's handler has no SA_RESTART. */
	keep_timer();
	if (mkdir(scratch, 0777) < 0 || chdir(scratch) < 0)
		_exit(3);

	rw_area = mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	ro_page = map(PROT_READ);
	none_page = map(PROT_NONE);
	unmapped = map(PROT_NONE);
	two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	if (rw_area == MAP_FAILED || two == MAP_FAILED || !ro_page || !none_page || !unmapped)
		_exit(3);
	munmap(unmapped, (size_t)page);
	mprotect(two + page, (size_t)page, PROT_NONE);
	straddle = two;

	add_fd(open("a", O_RDWR | O_CREAT, 0644));
	mkdir("d", 0755);
	add_fd(open("d", O_RDONLY | O_DIRECTORY));
	symlink("a", "link");
	if (pipe2(p, O_NONBLOCK) == 0) {
		add_fd(p[0]);
		add_fd(p[1]);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
		add_fd(sv[0]);
		add_fd(sv[1]);
	}
	add_fd(socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0));
	add_fd(socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0));
	add_fd(eventfd(0, EFD_NONBLOCK));
	add_fd(epoll_create1(0));
	add_fd((int)syscall(SYS_memfd_create, "fz", 0));
	add_fd(timerfd_create(CLOCK_MONOTONIC, 0));
	add_fd(open("/proc/self/status", O_RDONLY));
	add_fd(open("/proc/self/maps", O_RDONLY));
	add_fd(open("/etc/passwd", O_RDONLY));
	add_fd(0);
	add_fd(1);

	if (nthreads > 1) {
		run_threads(calls);
		_exit(0);
	}
	for (int i = 0; i < calls; i++) {
		if (i % 16 == 0)
			fill_structures();
		one_call();
	}
	_exit(0);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(path);
	return 0;
}

static void parse_nrs(char *list)
{
	for (char *tok = strtok(list, ","); tok && nnrs < MAX_NRS; tok = strtok(NULL, ","))
		nrs[nnrs++] = strtol(tok, NULL, 10);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long seed;
	int batches, calls, null, killed = 0, crashed = 0;

	if (argc < 5 || argc > 7) {
		fprintf(stderr,
			"usage: sysfuzz SEED BATCHES CALLS NR,NR,... [trace] [threads=N]\n");
		return 2;
	}
	for (int i = 5; i < argc; i++) {
		if (strcmp(argv[i], "trace") == 0) {
			trace_fd = fcntl(2, F_DUPFD, 900);
		} else if (strncmp(argv[i], "threads=", 8) == 0) {
			nthreads = atoi(argv[i] + 8);
		} else {
			fprintf(stderr, "sysfuzz: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	seed = strtoul(argv[1], NULL, 0);
	batches = atoi(argv[2]);
	calls = atoi(argv[3]);
	parse_nrs(argv[4]);
	if (nnrs == 0)
		return 2;
	page = sysconf(_SC_PAGESIZE);
	/* The parent ignores what a batch might send it (it should never be able to). */
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD && s != SIGSEGV)
			sigaction(s, &sa, NULL);
	mkdir("/tmp/sysfuzz", 0777);
	null = open("/dev/null", O_RDWR);

	for (int b = 0; b < batches; b++) {
		struct timespec start, now;
		pid_t pid;
		int st, done = 0, sent = 0;

		snprintf(scratch, sizeof(scratch), "/tmp/sysfuzz/%d", b);
		rng = (seed * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)b * 0xD1B54A32D192ED03ULL) ^ 1;
		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("sysfuzz: fork");
			return 1;
		}
		if (pid == 0) {
			if (null >= 0) {
				dup2(null, 0);
				dup2(null, 1);
				dup2(null, 2);
			}
			batch(calls);
		}
		clock_gettime(CLOCK_MONOTONIC, &start);
		while (!done) {
			pid_t w = waitpid(-1, &st, WNOHANG);

			if (w == pid) {
				done = 1;
				crashed += WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL;
			}
			if (w > 0)
				continue;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec > BATCH_SECONDS) {
				killed += !sent;
				sent = 1;
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
			}
			usleep(2000);
		}
		/* Reap what the batch left (children whose parent it was). */
		while (waitpid(-1, &st, WNOHANG) > 0)
			;
		nftw(scratch, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	printf("sysfuzz: seed %lu: %d batches (%d crashed, %d stuck and killed) done\n", seed,
	       batches, crashed, killed);
	return 0;
}
