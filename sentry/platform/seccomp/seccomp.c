/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp platform: guest system calls and faults reach the sentry as signals handled inside
 * the stub (stub.c), which hands them over through a thread area shared with the sentry and
 * futex wake-ups. See README.md in this folder.
 *
 * Everything the sentry reads from a thread area or a signal frame is guest-writable memory: it is
 * copied once and checked (pointers must lie inside the thread's own area) before use, like
 * registers. A space whose frames do not check out is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/platform/cpusplit.h"
#include "sentry/platform/seccomp/seccomp.h"

#define USER64_CS 0x33
#define USER64_SS 0x2b

/* Areas of ended threads a space keeps for reuse before ctx_destroy waits (seccomp_ctx_destroy). */
#define SC_EXITED_MAX 8

/* How long a wait for the stub lasts before the sentry checks that the stub still lives. */
#define SC_LIVENESS_NS 50000000LL

struct sc_platform {
	struct platform base;
	const struct sc_code *code;
	pthread_mutex_t zlock; /* the zygote and its socket */
	pid_t zpid; /* 0 before the zygote was started */
	int zsock; /* the sentry's end of the zygote's socket */
	int zerr; /* the zygote failed (-errno): as_create fails with it */
	uint32_t stub_spin; /* spin iterations of a stub before it sleeps */
	uint32_t sentry_spin; /* spin iterations of the sentry before it sleeps */
	bool bind; /* bind stub threads to their sentry thread's CPU */
	int procfd; /* the host's /proc (O_PATH) until prepare, else -1 */
};

struct sc_ctx;
struct sc_op;

struct sc_as {
	struct platform_as base;
	struct sc_platform *sp;
	pid_t pid; /* the stub process (its controller thread) */
	int sock; /* the sentry's end of the controller's socket */
	int64_t cmd_off; /* the command page in the memory file */
	volatile uint64_t *cmd; /* its sentry mapping */
	int dead; /* atomic: killed or gone */
	bool destroying;
	pthread_mutex_t lock; /* controller requests, the slots and the thread list */
	uint64_t slots[SC_MAX_THREADS / 64]; /* thread areas in use (or leaked) */
	bool started; /* a thread was made: mapping changes run at once (ctl_call) */
	struct sc_op *queue; /* mapping changes made before that */
	size_t nqueue, queue_cap;
	struct sc_ctx *threads;
	struct sc_ctx *exited; /* ended by ctx_destroy; their areas wait for reuse */
	int nexited;
	struct cpu_split cpu;
	uint64_t nreq, nops; /* controller requests made and calls they carried (debug log) */
	int ctl_cpu; /* the CPU the controller is bound to, or -1 */
};

struct sc_ctx {
	struct platform_ctx base;
	struct sc_as *as;
	struct sc_ctx *next; /* in as->threads (as->lock) */
	int slot;
	int64_t area_off; /* in the memory file */
	uint8_t *area; /* sentry mapping of the area */
	uint64_t area_stub; /* the area's address in the stub */
	pid_t tid;
	int interrupt; /* atomic: ctx_interrupt() was called and not yet reported */
	int cpu; /* CPU the stub thread is bound to, or -1 */
	bool step; /* singlestep: trap flag set for this switch */
	bool tramp; /* the last stop came through the trampoline (its frame is at fixed offsets) */
	/* The frame of the last stop (sentry pointers, checked), valid between switches. */
	uint8_t *uc;
	uint8_t *fp;
	struct cpu_split_thread cput;
};

static const struct platform_ops seccomp_ops;

static struct sc_as *to_as(struct platform_as *as)
{
	return container_of(as, struct sc_as, base);
}

static struct sc_ctx *to_ctx(struct platform_ctx *ctx)
{
	return container_of(ctx, struct sc_ctx, base);
}

static bool as_is_dead(struct sc_as *as)
{
	return __atomic_load_n(&as->dead, __ATOMIC_ACQUIRE);
}

static uint32_t *area_u32(struct sc_ctx *t, size_t off)
{
	return (uint32_t *)(t->area + off);
}

static uint64_t *area_u64(struct sc_ctx *t, size_t off)
{
	return (uint64_t *)(t->area + off);
}

static long futex_call(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* ---- the stub's process: zygote and controller -------------------------------------------- */

/* Kills the stub and marks the space dead (not reaped: as_destroy does that). */
static void as_kill(struct sc_as *as, const char *why)
{
	if (!__atomic_exchange_n(&as->dead, 1, __ATOMIC_ACQ_REL) && why && !as->destroying)
		log_warn("seccomp: stub %d: %s; killing it", as->pid, why);
	kill(as->pid, SIGKILL);
}

/* True if the stub process is gone (its socket hung up). Never blocks. */
static bool stub_gone(struct sc_as *as)
{
	struct pollfd pfd = { .fd = as->sock, .events = 0 };

	if (as_is_dead(as))
		return true;
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))) {
		__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

/* One system call for the controller to run. */
struct sc_op {
	long nr;
	uint64_t a[6];
	uint64_t area; /* clone: the new thread's area */
};

/*
 * Keeps stub thread tid (a guest thread, or the controller: as->pid) on the CPU the calling
 * sentry thread runs on, when binding is on; *bound remembers the CPU (-1: none), so a call is
 * made only when the sentry thread moved. The tid is checked first: a thread may have ended.
 */
static void bind_here(struct sc_as *as, pid_t tid, int *bound)
{
	int cpu;

	if (!as->sp->bind)
		return;
	cpu = sched_getcpu();
	if (cpu == *bound || cpu < 0 || syscall(SYS_tgkill, as->pid, tid, 0) < 0)
		return;
	husk_cpu_pin(tid, cpu);
	*bound = cpu;
}

/*
 * Runs ops[0..n) (n <= SC_MAX_OPS) in order in the stub's controller thread, until one fails.
 * Returns the last result run (an error, or the last call's result), or -ESRCH if the stub is
 * gone; *notrun (if not NULL) = how many calls did not run (the failed one included). rusage:
 * where to copy the reply's rusage (a getrusage request), or NULL. as->lock held.
 */
static long ctl_batch_locked(struct sc_as *as, const struct sc_op *ops, size_t n, size_t *notrun,
			     void *rusage)
{
	uint64_t reply[SC_S_REPLY_LEN / 8];
	char byte = 'c';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	volatile uint64_t *c = as->cmd;
	ssize_t got;

	if (as_is_dead(as))
		return -ESRCH;
	as->nreq++;
	as->nops += n;
	/* The controller on the requester's CPU, as guest threads. */
	bind_here(as, as->pid, &as->ctl_cpu);
	c[SC_C_COUNT / 8] = n;
	for (size_t i = 0; i < n; i++) {
		volatile uint64_t *op = c + (SC_C_OPS + i * SC_OP_SIZE) / 8;

		op[SC_OP_NR / 8] = (uint64_t)ops[i].nr;
		for (int j = 0; j < 6; j++)
			op[SC_OP_ARGS / 8 + j] = ops[i].a[j];
		op[SC_OP_AREA / 8] = ops[i].area;
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
	while ((got = sendmsg(as->sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (got != 1) {
		__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
		return -ESRCH;
	}
	while ((got = read(as->sock, reply, sizeof(reply))) < 0 && errno == EINTR)
		;
	if (got != (ssize_t)sizeof(reply)) {
		__atomic_store_n(&as->dead, 1, __ATOMIC_RELEASE);
		return -ESRCH;
	}
	if (notrun)
		*notrun = reply[1] > n ? n : (size_t)reply[1];
	if (rusage)
		memcpy(rusage, reply + 2, sizeof(reply) - 16);
	return (long)reply[0];
}

/* One call in the controller (see ctl_batch_locked). as->lock held. */
static long ctl_call_locked(struct sc_as *as, long nr, uint64_t a1, uint64_t a2, uint64_t a3,
			    uint64_t a4, uint64_t a5, uint64_t a6, uint64_t area, void *rusage)
{
	struct sc_op op = { .nr = nr, .a = { a1, a2, a3, a4, a5, a6 }, .area = area };

	return ctl_batch_locked(as, &op, 1, NULL, rusage);
}

/* Appends op to as->queue. Returns 0 or -ENOMEM. as->lock held. */
static int queue_push_locked(struct sc_as *as, const struct sc_op *op)
{
	if (as->nqueue == as->queue_cap) {
		size_t cap = as->queue_cap ? 2 * as->queue_cap : SC_MAX_OPS;
		struct sc_op *q = realloc(as->queue, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		as->queue = q;
		as->queue_cap = cap;
	}
	as->queue[as->nqueue++] = *op;
	return 0;
}

/*
 * Runs as->queue in batches of up to SC_MAX_OPS and empties it. Returns 0 with *last = the last
 * call's result, or the first failure's -errno (the rest of the queue is dropped). as->lock held.
 */
static int run_queue_locked(struct sc_as *as, long *last)
{
	size_t done = 0, notrun;
	long r = 0;
	int ret = 0;

	while (done < as->nqueue) {
		size_t n = as->nqueue - done < SC_MAX_OPS ? as->nqueue - done : SC_MAX_OPS;

		r = ctl_batch_locked(as, as->queue + done, n, &notrun, NULL);
		if (r < 0 && r >= -4095) {
			ret = (int)r;
			break;
		}
		done += n;
	}
	as->nqueue = 0;
	*last = r;
	return ret;
}

/*
 * A mapping change. While the space has no thread (the loader and a fork's replay of its
 * mappings), nothing runs in it: the change is queued and the queue runs in batches, at the
 * latest before the first thread is made (an error then fails that ctx_create). Afterwards it
 * runs at once: when as_map/as_unmap/as_protect returns, it holds for every thread.
 */
static long ctl_call(struct sc_as *as, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		     uint64_t a5, uint64_t a6)
{
	long ret;

	pthread_mutex_lock(&as->lock);
	if (!as->started) {
		struct sc_op op = { .nr = nr, .a = { a1, a2, a3, a4, a5, a6 } };

		ret = queue_push_locked(as, &op);
		pthread_mutex_unlock(&as->lock);
		return ret < 0 ? ret : nr == __NR_mmap ? (long)a1 : 0;
	}
	ret = ctl_call_locked(as, nr, a1, a2, a3, a4, a5, a6, 0, NULL);
	pthread_mutex_unlock(&as->lock);
	return ret;
}

/* Reads one fork reply from the zygote: the pid (or -errno) and the new stub's socket. */
static pid_t zygote_reply(struct sc_platform *sp, int *fd)
{
	int64_t pid = -EIO;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &pid, .iov_len = sizeof(pid) };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	while ((n = recvmsg(sp->zsock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(pid))
		return n < 0 ? -errno : -EIO;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	}
	if (pid <= 0 || *fd < 0) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return pid < 0 && pid >= -4095 ? (pid_t)pid : -EIO;
	}
	return (pid_t)pid;
}

/* Starts the zygote if it is not running. zlock held. */
static int zygote_start_locked(struct sc_platform *sp)
{
	int sv[2];
	pid_t pid;
	int fd, status;

	if (sp->zpid > 0 || sp->zerr)
		return sp->zerr;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sp->zerr = -errno;
	pid = sc_zygote_spawn(sp->code, sp->base.memfd, sp->base.imagefd, sv[1]);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return sp->zerr = pid;
	}
	sp->zpid = pid;
	sp->zsock = sv[0];
	/* Its first message says it set itself up (8 zero bytes, no FD). */
	{
		int64_t ready = -1;
		ssize_t n;

		while ((n = read(sp->zsock, &ready, sizeof(ready))) < 0 && errno == EINTR)
			;
		if (n != (ssize_t)sizeof(ready) || ready != 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
				;
			log_error("seccomp: the zygote stub failed to set itself up (status %#x)",
				  status);
			close(sp->zsock);
			sp->zsock = -1;
			sp->zpid = 0;
			return sp->zerr = -EIO;
		}
	}
	(void)fd;
	log_debug("seccomp: zygote stub %d", pid);
	return 0;
}

/*
 * Should the sandbox's host cgroup reach its limit before the sentry's own OOM killer acts, the
 * host's OOM killer is to take a stub (a guest process, as a kernel would) rather than the sentry
 * or a gofer, whose resident sets hold the memory file's pages too: the zygote's oom_score_adj
 * becomes 1000 and every stub it forks inherits it. Raising it needs no privilege. Only before
 * the sentry's filter (no openat after it) and through the /proc fd opened at create (the root
 * is empty after sentry_confine's pivot). A failure costs that protection only. zlock held.
 */
static void zygote_oom_first(struct sc_platform *sp)
{
	char path[32];
	int fd;

	if (sp->procfd < 0)
		return;
	snprintf(path, sizeof(path), "%d/oom_score_adj", (int)sp->zpid);
	fd = openat(sp->procfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1000", 4) != 4)
		log_warn("seccomp: stubs keep the sentry's oom_score_adj: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

int seccomp_platform_prepare(struct platform *p)
{
	struct sc_platform *sp;
	int ret;

	if (!p || p->ops != &seccomp_ops)
		return 0;
	sp = container_of(p, struct sc_platform, base);
	pthread_mutex_lock(&sp->zlock);
	ret = zygote_start_locked(sp);
	if (ret == 0)
		zygote_oom_first(sp);
	pthread_mutex_unlock(&sp->zlock);
	if (sp->procfd >= 0)
		close(sp->procfd);
	sp->procfd = -1;
	return ret;
}

/* Forks a new stub from the zygote. Returns its pid and *sock, or -errno. */
static pid_t zygote_fork(struct sc_platform *sp, int64_t cmd_off, int *sock)
{
	pid_t pid;
	ssize_t n;
	int ret;

	pthread_mutex_lock(&sp->zlock);
	ret = zygote_start_locked(sp);
	if (ret < 0) {
		pthread_mutex_unlock(&sp->zlock);
		return ret;
	}
	{
		struct iovec iov = { .iov_base = &cmd_off, .iov_len = sizeof(cmd_off) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

		/* MSG_NOSIGNAL: a dead zygote must not SIGPIPE the sentry. */
		while ((n = sendmsg(sp->zsock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
	}
	pid = n == (ssize_t)sizeof(cmd_off) ? zygote_reply(sp, sock) : -EIO;
	pthread_mutex_unlock(&sp->zlock);
	return pid;
}

/* ---- spaces --------------------------------------------------------------------------------- */

static int seccomp_as_create(struct platform *p, struct platform_as **out)
{
	struct sc_platform *sp = container_of(p, struct sc_platform, base);
	struct sc_as *as;
	int sock = -1;
	pid_t pid;

	if (!p->mem_alloc || !p->mem_base)
		return -ENOSYS;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->base.p = p;
	as->sp = sp;
	as->cmd_off = p->mem_alloc(p->mem_arg, PAGE_SIZE);
	if (as->cmd_off < 0) {
		int ret = (int)as->cmd_off;

		free(as);
		return ret;
	}
	as->cmd = (volatile uint64_t *)(p->mem_base + as->cmd_off);
	pid = zygote_fork(sp, as->cmd_off, &sock);
	if (pid < 0) {
		p->mem_free(p->mem_arg, (uint64_t)as->cmd_off, PAGE_SIZE);
		free(as);
		return pid;
	}
	as->pid = pid;
	as->sock = sock;
	as->ctl_cpu = -1;
	pthread_mutex_init(&as->lock, NULL);
	cpu_split_init(&as->cpu, pid);
	*out = &as->base;
	return 0;
}

static void thread_free_area(struct sc_ctx *t, bool reuse);

static void seccomp_as_destroy(struct platform_as *pas)
{
	struct sc_as *as;
	struct platform *p;
	struct sc_ctx *t, *next;
	int status;

	if (!pas)
		return;
	as = to_as(pas);
	p = as->base.p;
	log_debug("seccomp: stub %d: %llu controller requests carried %llu calls", as->pid,
		  (unsigned long long)as->nreq, (unsigned long long)as->nops);
	as->destroying = true;
	as_kill(as, NULL);
	while (waitpid(as->pid, &status, __WALL) < 0 && errno == EINTR)
		;
	cpu_split_reaped(&as->cpu);
	close(as->sock);
	for (t = as->threads; t; t = next) {
		next = t->next;
		thread_free_area(t, false);
		free(t);
	}
	for (t = as->exited; t; t = next) {
		next = t->next;
		thread_free_area(t, false);
		free(t);
	}
	p->mem_free(p->mem_arg, (uint64_t)as->cmd_off, PAGE_SIZE);
	free(as->queue);
	pthread_mutex_destroy(&as->lock);
	cpu_split_destroy(&as->cpu);
	free(as);
}

static bool range_ok(uint64_t addr, uint64_t len)
{
	return len && IS_PAGE_ALIGNED(addr) && IS_PAGE_ALIGNED(len) && addr >= PLATFORM_GUEST_MIN &&
	       addr < PLATFORM_GUEST_MAX && len <= PLATFORM_GUEST_MAX - addr;
}

static bool prot_ok(int prot)
{
	return (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) == 0;
}

static int seccomp_as_map(struct platform_as *pas, uint64_t addr, uint64_t len, int prot,
			  uint64_t off)
{
	long r;

	if (!range_ok(addr, len) || !prot_ok(prot) || !IS_PAGE_ALIGNED(off) ||
	    off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	r = ctl_call(to_as(pas), __NR_mmap, addr, len, (uint64_t)prot, MAP_SHARED | MAP_FIXED,
		     SC_STUB_MEMFD, off);
	if (r < 0 && r >= -4095)
		return (int)r;
	return (uint64_t)r == addr ? 0 : -EIO;
}

static int seccomp_as_map_image(struct platform_as *pas, uint64_t addr, uint64_t len, int prot,
				uint64_t off)
{
	long r;

	if (!range_ok(addr, len) || !prot_ok(prot) || (prot & PROT_WRITE) ||
	    !IS_PAGE_ALIGNED(off) || off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	if (pas->p->imagefd < 0)
		return -ENOSYS;
	r = ctl_call(to_as(pas), __NR_mmap, addr, len, (uint64_t)prot, MAP_PRIVATE | MAP_FIXED,
		     SC_STUB_IMAGEFD, off);
	if (r < 0 && r >= -4095)
		return (int)r;
	return (uint64_t)r == addr ? 0 : -EIO;
}

static int seccomp_as_unmap(struct platform_as *pas, uint64_t addr, uint64_t len)
{
	if (!range_ok(addr, len))
		return -EINVAL;
	return (int)ctl_call(to_as(pas), __NR_munmap, addr, len, 0, 0, 0, 0);
}

static int seccomp_as_protect(struct platform_as *pas, uint64_t addr, uint64_t len, int prot)
{
	if (!range_ok(addr, len) || !prot_ok(prot))
		return -EINVAL;
	return (int)ctl_call(to_as(pas), __NR_mprotect, addr, len, (uint64_t)prot, 0, 0, 0);
}

/* ---- guest threads -------------------------------------------------------------------------- */

/*
 * Waits until thread t stops (its state is no longer RUN). Returns 0, or -ESRCH if the stub is
 * gone. Spins first when told to, then sleeps on the state word; every SC_LIVENESS_NS it makes
 * sure the stub still lives.
 */
static int wait_stop(struct sc_ctx *t)
{
	uint32_t *state = area_u32(t, SC_A_STATE), *sleeps = area_u32(t, SC_A_SENTRY_SLEEPS);
	struct timespec ts = { 0, SC_LIVENESS_NS };
	uint32_t spin = t->as->sp->sentry_spin;

	for (; spin; spin--) {
		if (__atomic_load_n(state, __ATOMIC_ACQUIRE) != SC_ST_RUN)
			return 0;
		__builtin_ia32_pause();
	}
	__atomic_exchange_n(sleeps, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(state, __ATOMIC_SEQ_CST) == SC_ST_RUN) {
		long r = futex_call(state, FUTEX_WAIT, SC_ST_RUN, &ts);

		if (r == 0 || errno != ETIMEDOUT)
			continue;
		if (stub_gone(t->as)) {
			__atomic_store_n(sleeps, 0, __ATOMIC_RELAXED);
			return -ESRCH;
		}
		/*
		 * The thread alone may be gone: a guest can reach the handler's exit(2) (its tid
		 * word, cleared by the kernel at exit, is guest-writable too: a space whose word
		 * reads 0 is killed either way).
		 */
		if (__atomic_load_n(area_u32(t, SC_A_CTID), __ATOMIC_ACQUIRE) == 0 ||
		    (syscall(SYS_tgkill, t->as->pid, t->tid, 0) < 0 && errno == ESRCH)) {
			__atomic_store_n(sleeps, 0, __ATOMIC_RELAXED);
			as_kill(t->as, "a guest thread ended behind the sentry's back");
			return -ESRCH;
		}
		/* A guest may have cleared STUB_SLEEPS to make resume() skip its wake-up. */
		futex_call(state, FUTEX_WAKE, 1, NULL);
	}
	__atomic_store_n(sleeps, 0, __ATOMIC_RELAXED);
	return 0;
}

/* Lets thread t run (state RUN) and wakes it if it sleeps. */
static void resume(struct sc_ctx *t)
{
	__atomic_exchange_n(area_u32(t, SC_A_STATE), SC_ST_RUN, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(area_u32(t, SC_A_STUB_SLEEPS), __ATOMIC_SEQ_CST))
		futex_call(area_u32(t, SC_A_STATE), FUTEX_WAKE, 1, NULL);
}

/* Converts a stub address inside t's area (at least len bytes from it) to the sentry's pointer. */
static uint8_t *area_ptr(struct sc_ctx *t, uint64_t addr, size_t len, size_t align)
{
	uint64_t lo = t->area_stub + PAGE_SIZE, hi = t->area_stub + SC_AREA_SIZE;

	if (addr < lo || addr > hi || len > hi - addr || (addr & (align - 1)))
		return NULL;
	return t->area + (addr - t->area_stub);
}

/*
 * Checks the frame of t's stop and remembers where it is. Returns the siginfo's sentry pointer,
 * or NULL if the area's pointers do not point into the area (a guest wrote them).
 */
static uint8_t *frame_locate(struct sc_ctx *t)
{
	uint64_t uc = __atomic_load_n(area_u64(t, SC_A_UC), __ATOMIC_RELAXED);
	uint64_t info = __atomic_load_n(area_u64(t, SC_A_INFO), __ATOMIC_RELAXED);
	uint8_t *ucp = area_ptr(t, uc, sizeof(ucontext_t), 8);
	uint8_t *infop = area_ptr(t, info, sizeof(siginfo_t), 8);
	uint64_t fp;

	t->uc = t->fp = NULL;
	if (!ucp || !infop)
		return NULL;
	memcpy(&fp, ucp + offsetof(ucontext_t, uc_mcontext.fpregs), sizeof(fp));
	t->fp = area_ptr(t, fp, platform_fpstate_size() + 4, 64);
	if (!t->fp)
		return NULL;
	t->uc = ucp;
	return infop;
}

/* The guest registers of the frame at t->uc. */
static void frame_get_regs(struct sc_ctx *t, arch_regs_t *r)
{
	greg_t g[NGREG];

	memcpy(g, t->uc + offsetof(ucontext_t, uc_mcontext.gregs), sizeof(g));
	memset(r, 0, sizeof(*r));
	r->r8 = (uint64_t)g[REG_R8];
	r->r9 = (uint64_t)g[REG_R9];
	r->r10 = (uint64_t)g[REG_R10];
	r->r11 = (uint64_t)g[REG_R11];
	r->r12 = (uint64_t)g[REG_R12];
	r->r13 = (uint64_t)g[REG_R13];
	r->r14 = (uint64_t)g[REG_R14];
	r->r15 = (uint64_t)g[REG_R15];
	r->rdi = (uint64_t)g[REG_RDI];
	r->rsi = (uint64_t)g[REG_RSI];
	r->rbp = (uint64_t)g[REG_RBP];
	r->rbx = (uint64_t)g[REG_RBX];
	r->rdx = (uint64_t)g[REG_RDX];
	r->rax = (uint64_t)g[REG_RAX];
	r->rcx = (uint64_t)g[REG_RCX];
	r->rsp = (uint64_t)g[REG_RSP];
	r->rip = (uint64_t)g[REG_RIP];
	r->eflags = (uint64_t)g[REG_EFL];
	r->orig_rax = (uint64_t)-1;
	r->cs = USER64_CS;
	r->ss = USER64_SS;
	r->fs_base = __atomic_load_n(area_u64(t, SC_A_FSBASE), __ATOMIC_RELAXED);
	r->gs_base = __atomic_load_n(area_u64(t, SC_A_GSBASE), __ATOMIC_RELAXED);
}

/* Writes *r into the frame at t->uc: rt_sigreturn resumes the guest with them. */
static void frame_set_regs(struct sc_ctx *t, const arch_regs_t *r)
{
	greg_t g[NGREG];
	uint8_t *gp = t->uc + offsetof(ucontext_t, uc_mcontext.gregs);
	uint64_t csgsfs, nomask = 0;

	memcpy(g, gp, sizeof(g));
	g[REG_R8] = (greg_t)r->r8;
	g[REG_R9] = (greg_t)r->r9;
	g[REG_R10] = (greg_t)r->r10;
	g[REG_R11] = (greg_t)r->r11;
	g[REG_R12] = (greg_t)r->r12;
	g[REG_R13] = (greg_t)r->r13;
	g[REG_R14] = (greg_t)r->r14;
	g[REG_R15] = (greg_t)r->r15;
	g[REG_RDI] = (greg_t)r->rdi;
	g[REG_RSI] = (greg_t)r->rsi;
	g[REG_RBP] = (greg_t)r->rbp;
	g[REG_RBX] = (greg_t)r->rbx;
	g[REG_RDX] = (greg_t)r->rdx;
	g[REG_RAX] = (greg_t)r->rax;
	g[REG_RCX] = (greg_t)r->rcx;
	g[REG_RSP] = (greg_t)r->rsp;
	g[REG_RIP] = (greg_t)r->rip;
	g[REG_EFL] = (greg_t)(r->eflags | (t->step ? 0x100 : 0));
	/* cs, gs, fs, ss (16 bits each): only the 64-bit user selectors. */
	csgsfs = USER64_CS | ((uint64_t)USER64_SS << 48);
	g[REG_CSGSFS] = (greg_t)csgsfs;
	memcpy(gp, g, sizeof(g));
	/* The stub's own mask: nothing blocked once the guest runs (the guest's is the sentry's). */
	memcpy(t->uc + offsetof(ucontext_t, uc_sigmask), &nomask, sizeof(nomask));
	__atomic_store_n(area_u64(t, SC_A_FSBASE), r->fs_base, __ATOMIC_RELAXED);
	__atomic_store_n(area_u64(t, SC_A_GSBASE), r->gs_base, __ATOMIC_RELAXED);
}

static void thread_link(struct sc_ctx *t)
{
	t->next = t->as->threads;
	t->as->threads = t;
}

static void thread_unlink(struct sc_ctx *t)
{
	for (struct sc_ctx **pp = &t->as->threads; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			return;
		}
	}
}

/* Gives t's area back (reuse: its slot may be used again; else it stays taken). as->lock held
 * or the space is being destroyed. */
static void thread_free_area(struct sc_ctx *t, bool reuse)
{
	struct platform *p = t->as->base.p;

	if (t->area_off >= 0) {
		p->mem_free(p->mem_arg, (uint64_t)t->area_off, SC_AREA_SIZE);
		t->area_off = -1;
	}
	if (reuse && t->slot >= 0)
		t->as->slots[t->slot / 64] &= ~(1ULL << (t->slot % 64));
	t->slot = -1;
}

/*
 * Gives t the area of a thread ctx_destroy ended that is gone (its tid word cleared by the
 * kernel): slot, memory and the stub's mapping, already in place. Returns true if it did.
 * as->lock held.
 */
static bool reuse_exited_locked(struct sc_as *as, struct sc_ctx *t)
{
	for (struct sc_ctx **pp = &as->exited; *pp; pp = &(*pp)->next) {
		struct sc_ctx *z = *pp;

		if (__atomic_load_n(area_u32(z, SC_A_CTID), __ATOMIC_ACQUIRE) != 0)
			continue;
		*pp = z->next;
		as->nexited--;
		t->slot = z->slot;
		t->area_off = z->area_off;
		t->area = z->area;
		t->area_stub = z->area_stub;
		free(z);
		return true;
	}
	return false;
}

/*
 * Makes a guest thread in as: an area, mapped in the stub; a clone made by the controller, which
 * sets itself up and parks (its first stop, on the park ud2). Returns 0 and *out, or -errno.
 */
static int thread_create(struct sc_as *as, struct sc_ctx **out)
{
	struct platform *p = as->base.p;
	const struct sc_code *code = as->sp->code;
	struct sc_ctx *t = calloc(1, sizeof(*t));
	bool reused;
	uint8_t *info;
	int slot = -1, ret;
	long r = 0;

	if (!t)
		return -ENOMEM;
	t->base.as = &as->base;
	t->as = as;
	t->cpu = -1;
	t->area_off = -1;
	pthread_mutex_lock(&as->lock);
	reused = reuse_exited_locked(as, t);
	if (!reused) {
		for (int i = 0; i < SC_MAX_THREADS; i++) {
			if (!(as->slots[i / 64] & (1ULL << (i % 64)))) {
				slot = i;
				as->slots[i / 64] |= 1ULL << (i % 64);
				break;
			}
		}
		t->slot = slot;
		if (slot < 0) {
			ret = -EAGAIN;
			goto fail;
		}
		t->area_off = p->mem_alloc(p->mem_arg, SC_AREA_SIZE);
		if (t->area_off < 0) {
			ret = (int)t->area_off;
			goto fail;
		}
		t->area = p->mem_base + t->area_off;
		t->area_stub = code->page + SC_AREAS_OFF + (uint64_t)slot * SC_AREA_SIZE;
	}
	memset(t->area, 0, PAGE_SIZE);
	*area_u32(t, SC_A_SPIN) = as->sp->stub_spin;
	/* RUN until the new thread's first stop (its park) says otherwise. */
	*area_u32(t, SC_A_STATE) = SC_ST_RUN;
	/*
	 * One request when it fits: the mapping changes queued before the first thread, the
	 * area's mapping (a new slot), the clone (last: its result is the new thread's tid).
	 */
	{
		struct sc_op map = { .nr = __NR_mmap,
				     .a = { t->area_stub, SC_AREA_SIZE, PROT_READ | PROT_WRITE,
					    MAP_SHARED | MAP_FIXED, SC_STUB_MEMFD,
					    (uint64_t)t->area_off } };
		struct sc_op clone = { .nr = __NR_clone,
				       .a = { SC_THREAD_CLONE_FLAGS, 0, 0, t->area_stub + SC_A_CTID,
					      0, 0 },
				       .area = t->area_stub };

		ret = reused ? 0 : queue_push_locked(as, &map);
		if (ret == 0)
			ret = queue_push_locked(as, &clone);
		if (ret < 0) {
			as->nqueue = 0;
			goto fail;
		}
		ret = run_queue_locked(as, &r);
		as->started = true;
		if (ret < 0)
			goto fail;
		if (r <= 0) {
			ret = -EIO;
			goto fail;
		}
	}
	t->tid = (pid_t)r;
	/*
	 * The reply came through memory guest threads can write: the tid must name a thread of
	 * this stub (tgkill with signal 0 checks it within the thread group), else no host call
	 * that takes a bare tid (sched_setaffinity) may use it.
	 */
	if (syscall(SYS_tgkill, as->pid, t->tid, 0) < 0) {
		ret = -EIO;
		as_kill(as, "the controller's reply named no thread of the stub");
		goto fail;
	}
	/* What CLONE_CHILD_SETTID writes once the thread runs (wait_stop reads it before). */
	__atomic_store_n(area_u32(t, SC_A_CTID), (uint32_t)t->tid, __ATOMIC_RELEASE);
	thread_link(t);
	pthread_mutex_unlock(&as->lock);

	ret = wait_stop(t);
	if (ret < 0)
		goto fail_linked;
	info = frame_locate(t);
	{
		arch_regs_t regs;
		int signo;

		if (!info) {
			ret = -EIO;
			goto fail_linked;
		}
		frame_get_regs(t, &regs);
		memcpy(&signo, info, sizeof(signo));
		if (signo != SIGILL || regs.rip != code->park) {
			log_error("seccomp: a new stub thread stopped with signal %d at %#llx",
				  signo, (unsigned long long)regs.rip);
			ret = -EIO;
			goto fail_linked;
		}
	}
	cpu_split_thread_init(&t->cput);
	*out = t;
	return 0;

fail:
	thread_free_area(t, true);
	pthread_mutex_unlock(&as->lock);
	free(t);
	return ret;
fail_linked:
	/* The thread may be half made: the whole stub is beyond use. */
	as_kill(as, "a new thread did not start");
	pthread_mutex_lock(&as->lock);
	thread_unlink(t);
	thread_free_area(t, false);
	pthread_mutex_unlock(&as->lock);
	free(t);
	return ret;
}

static int seccomp_ctx_create(struct platform_as *pas, struct platform_ctx **out)
{
	struct sc_ctx *t;
	int ret = thread_create(to_as(pas), &t);

	if (ret == 0)
		*out = &t->base;
	return ret;
}

/* No tracer here: any sentry thread may make the thread and any may drive it. */
static int seccomp_ctx_clone(struct platform_ctx *from, struct platform_ctx **out)
{
	return seccomp_ctx_create(from->as, out);
}

static int seccomp_ctx_adopt(struct platform_ctx *ctx)
{
	(void)ctx;
	return 0;
}

/* Waits (up to 2 s) until thread t, told to exit, is gone. Returns true if it is. */
static bool thread_wait_exit(struct sc_ctx *t)
{
	uint32_t *ctid = area_u32(t, SC_A_CTID);
	struct timespec ts = { 0, SC_LIVENESS_NS };

	for (int i = 0; i < 40; i++) {
		uint32_t v = __atomic_load_n(ctid, __ATOMIC_ACQUIRE);

		if (v == 0)
			return true;
		if (futex_call(ctid, FUTEX_WAIT, v, &ts) < 0 && errno == ETIMEDOUT &&
		    stub_gone(t->as))
			return false;
	}
	return false;
}

static void seccomp_ctx_destroy(struct platform_ctx *pctx)
{
	struct sc_ctx *t;
	struct sc_as *as;

	if (!pctx)
		return;
	t = to_ctx(pctx);
	as = t->as;
	cpu_split_thread_forget(&as->cpu, &t->cput);
	/*
	 * It waits in its handler: tell it to exit. Its area (slot, memory and mapping) goes to
	 * the exited list, for a new thread to take once CLONE_CHILD_CLEARTID says this one is
	 * gone (reuse_exited_locked), without waiting here; as_destroy frees what is left. When
	 * SC_EXITED_MAX areas already wait, this one is waited for and given back instead.
	 */
	if (!as_is_dead(as)) {
		__atomic_exchange_n(area_u32(t, SC_A_STATE), SC_ST_EXIT, __ATOMIC_SEQ_CST);
		futex_call(area_u32(t, SC_A_STATE), FUTEX_WAKE, 1, NULL);
	}
	pthread_mutex_lock(&as->lock);
	thread_unlink(t);
	if (as_is_dead(as) || as->nexited < SC_EXITED_MAX) {
		t->next = as->exited;
		as->exited = t;
		as->nexited++;
		pthread_mutex_unlock(&as->lock);
		return;
	}
	pthread_mutex_unlock(&as->lock);
	if (thread_wait_exit(t)) {
		pthread_mutex_lock(&as->lock);
		if (!as_is_dead(as) && ctl_call_locked(as, __NR_munmap, t->area_stub, SC_AREA_SIZE,
						       0, 0, 0, 0, 0, NULL) == 0)
			thread_free_area(t, true);
		else
			thread_free_area(t, false);
		pthread_mutex_unlock(&as->lock);
	} else {
		/* Not gone (a guest may keep it): memory back only once the stub ends. */
		pthread_mutex_lock(&as->lock);
		t->next = as->exited;
		as->exited = t;
		as->nexited++;
		pthread_mutex_unlock(&as->lock);
		return;
	}
	free(t);
}

static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP;
}

/*
 * Decodes t's stop into *regs and *ev. Returns 1 if it is an event for the caller, 0 if it is
 * to be ignored (a stray signal: resume), -ESRCH if the stub had to be killed.
 */
static int decode_stop(struct sc_ctx *t, arch_regs_t *regs, struct platform_event *ev)
{
	const struct sc_code *code = t->as->sp->code;
	uint8_t *info;
	int signo, si_code;
	uint32_t kind;
	greg_t trapno;

	kind = __atomic_load_n(area_u32(t, SC_A_KIND), __ATOMIC_RELAXED);
	if (kind == SC_KIND_TRAMP || kind == SC_KIND_TRAMP_INTR) {
		/* The trampoline's frame, at fixed offsets (README.md, "Syscall patching"). */
		t->tramp = true;
		t->uc = t->area + SC_TF_UC;
		t->fp = t->area + SC_TF_FP;
		frame_get_regs(t, regs);
		memset(ev, 0, sizeof(*ev));
		ev->trapno = -1;
		if (kind == SC_KIND_TRAMP) {
			/* A patched call: eax held its number. */
			ev->kind = PLATFORM_EV_SYSCALL;
			regs->orig_rax = regs->rax;
			regs->rax = (uint64_t)-ENOSYS;
			return 1;
		}
		/* The interrupt signal came while the thread was in the trampoline. */
		if (__atomic_exchange_n(&t->interrupt, 0, __ATOMIC_ACQ_REL)) {
			ev->kind = PLATFORM_EV_INTERRUPT;
			return 1;
		}
		return 0;
	}
	t->tramp = false;
	info = frame_locate(t);
	if (!info) {
		as_kill(t->as, "a guest overwrote its signal frame's pointers");
		return -ESRCH;
	}
	memcpy(&signo, info + offsetof(siginfo_t, si_signo), sizeof(signo));
	memcpy(&si_code, info + offsetof(siginfo_t, si_code), sizeof(si_code));
	frame_get_regs(t, regs);
	if (t->step)
		regs->eflags &= ~0x100ULL;
	memset(ev, 0, sizeof(*ev));
	ev->trapno = -1;

	if (signo == SIGSYS && (si_code == SC_SYS_USER_DISPATCH || si_code == SC_SYS_SECCOMP)) {
		uint32_t arch;

		memcpy(&arch, info + offsetof(siginfo_t, si_arch), sizeof(arch));
		if (arch == AUDIT_ARCH_X86_64) {
			ev->kind = PLATFORM_EV_SYSCALL;
			ev->patchable = t->as->sp->base.syscall_trampoline != 0;
			regs->orig_rax = regs->rax;
			regs->rax = (uint64_t)-ENOSYS;
			return 1;
		}
		/* int $0x80 (IA-32 emulation): what a kernel without it raises. */
		ev->kind = PLATFORM_EV_FAULT;
		ev->signo = SIGSEGV;
		ev->code = SI_KERNEL;
		ev->trapno = 13;
		regs->rip -= 2;
		return 1;
	}
	if (is_fault_signal(signo) && si_code > 0) {
		if ((regs->rip & PAGE_MASK) == code->page) {
			as_kill(t->as, "the stub's own code faulted (a guest jumped into it?)");
			return -ESRCH;
		}
		ev->kind = PLATFORM_EV_FAULT;
		ev->signo = signo;
		ev->code = si_code;
		memcpy(&ev->addr, info + offsetof(siginfo_t, si_addr), sizeof(ev->addr));
		memcpy(&trapno, t->uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_TRAPNO]),
		       sizeof(trapno));
		ev->trapno = (int)trapno;
		return 1;
	}
	if (__atomic_exchange_n(&t->interrupt, 0, __ATOMIC_ACQ_REL)) {
		ev->kind = PLATFORM_EV_INTERRUPT;
		return 1;
	}
	return 0; /* the interrupt signal of a request already reported, or someone's signal */
}

static int switch_once(struct sc_ctx *t, arch_regs_t *regs, struct platform_event *ev)
{
	struct sc_as *as = t->as;
	int ret;

	if (as_is_dead(as) || !t->uc) {
		memset(ev, 0, sizeof(*ev));
		ev->kind = PLATFORM_EV_DIED;
		return 0;
	}
	if (__atomic_exchange_n(&t->interrupt, 0, __ATOMIC_ACQ_REL)) {
		memset(ev, 0, sizeof(*ev));
		ev->kind = PLATFORM_EV_INTERRUPT;
		ev->trapno = -1;
		return 0;
	}
	frame_set_regs(t, regs);
	bind_here(as, t->tid, &t->cpu);
	cpu_split_enter(&as->cpu, &t->cput);
	for (;;) {
		resume(t);
		ret = wait_stop(t);
		if (ret == 0) {
			ret = decode_stop(t, regs, ev);
			if (ret == 0)
				continue;
		}
		break;
	}
	cpu_split_leave(&as->cpu, &t->cput);
	if (ret < 0) {
		memset(ev, 0, sizeof(*ev));
		ev->kind = PLATFORM_EV_DIED;
		t->uc = NULL;
	}
	return 0;
}

static int seccomp_ctx_switch(struct platform_ctx *pctx, arch_regs_t *regs,
			      struct platform_event *ev)
{
	struct sc_ctx *t = to_ctx(pctx);

	t->step = false;
	return switch_once(t, regs, ev);
}

static int seccomp_ctx_singlestep(struct platform_ctx *pctx, arch_regs_t *regs,
				  struct platform_event *ev)
{
	struct sc_ctx *t = to_ctx(pctx);
	int ret;

	t->step = true;
	ret = switch_once(t, regs, ev);
	t->step = false;
	return ret;
}

static void seccomp_ctx_interrupt(struct platform_ctx *pctx)
{
	struct sc_ctx *t = to_ctx(pctx);

	__atomic_store_n(&t->interrupt, 1, __ATOMIC_RELEASE);
	/* The stub is reaped only by as_destroy, after which no ctx remains: the pid is ours. */
	if (!as_is_dead(t->as) && t->tid > 0)
		syscall(SYS_tgkill, t->as->pid, t->tid, SC_INTERRUPT_SIGNAL);
}

/* Offsets in an XSAVE area. */
#define XS_MXCSR 24
#define XS_SW_BYTES 464
#define XS_HEADER 512
#define XS_XCOMP_BV 520
#define XS_HEADER_RESERVED 528
#define XS_HEADER_END 576

static int seccomp_ctx_get_fpstate(struct platform_ctx *pctx, void *buf, size_t len)
{
	struct sc_ctx *t = to_ctx(pctx);
	size_t size = platform_fpstate_size();
	uint64_t xcr0 = platform_user_xfeatures();

	if (len < size)
		return -ENOSPC;
	if (!t->fp)
		return -ESRCH;
	memcpy(buf, t->fp, size);
	/* As ptrace's layout: the software bytes hold XCR0 (for debuggers), not a frame's. */
	memset((uint8_t *)buf + XS_SW_BYTES, 0, XS_HEADER - XS_SW_BYTES);
	memcpy((uint8_t *)buf + XS_SW_BYTES, &xcr0, sizeof(xcr0));
	return (int)size;
}

static int seccomp_ctx_set_fpstate(struct platform_ctx *pctx, const void *buf, size_t len)
{
	struct sc_ctx *t = to_ctx(pctx);
	const uint8_t *b = buf;
	size_t size = platform_fpstate_size();
	uint64_t xstate_bv, xcomp_bv;
	uint32_t mxcsr;

	if (len != size || size < XS_HEADER_END)
		return -EINVAL;
	if (!t->fp)
		return -ESRCH;
	memcpy(&mxcsr, b + XS_MXCSR, sizeof(mxcsr));
	memcpy(&xstate_bv, b + XS_HEADER, sizeof(xstate_bv));
	memcpy(&xcomp_bv, b + XS_XCOMP_BV, sizeof(xcomp_bv));
	/* What rt_sigreturn would refuse (and kill the stub for). */
	if ((mxcsr & 0xffff0000U) || (xstate_bv & ~platform_user_xfeatures()) || xcomp_bv)
		return -EINVAL;
	for (size_t i = XS_HEADER_RESERVED; i < XS_HEADER_END; i++) {
		if (b[i])
			return -EINVAL;
	}
	/* The frame keeps its own software bytes and its trailing magic. */
	memcpy(t->fp, b, XS_SW_BYTES);
	memcpy(t->fp + XS_HEADER, b + XS_HEADER, size - XS_HEADER);
	/* A signal frame's state comes back with rt_sigreturn; the trampoline's on request. */
	if (t->tramp)
		__atomic_store_n(area_u32(t, SC_A_FPDIRTY), 1, __ATOMIC_RELAXED);
	return 0;
}

static uint64_t seccomp_ctx_cpu_ns(struct platform_ctx *pctx)
{
	struct sc_ctx *t = to_ctx(pctx);

	return cpu_split_read(&t->as->cpu, &t->cput);
}

static long seccomp_ctx_peak_rss_kb(struct platform_ctx *pctx)
{
	struct sc_ctx *t = to_ctx(pctx);
	struct sc_as *as = t->as;
	uint8_t ru[SC_S_REPLY_LEN - 16];
	long r, maxrss;

	pthread_mutex_lock(&as->lock);
	r = ctl_call_locked(as, __NR_getrusage, 0 /* RUSAGE_SELF */,
			    as->sp->code->page + SC_SCRATCH_OFF + SC_S_RUSAGE, 0, 0, 0, 0, 0, ru);
	pthread_mutex_unlock(&as->lock);
	if (r < 0)
		return r;
	memcpy(&maxrss, ru + 32, sizeof(maxrss)); /* ru_maxrss, after two struct timeval */
	return maxrss;
}

static void seccomp_destroy(struct platform *p)
{
	struct sc_platform *sp = container_of(p, struct sc_platform, base);
	int status;

	if (sp->zpid > 0) {
		close(sp->zsock);
		kill(sp->zpid, SIGKILL);
		while (waitpid(sp->zpid, &status, __WALL) < 0 && errno == EINTR)
			;
	}
	if (sp->procfd >= 0)
		close(sp->procfd);
	pthread_mutex_destroy(&sp->zlock);
	free(sp);
}

pid_t seccomp_as_stub_pid(struct platform_as *pas)
{
	struct sc_as *as = to_as(pas);

	return as_is_dead(as) ? -1 : as->pid;
}

static uint32_t env_u32(const char *name, uint32_t def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	return *end || v > 100000000UL ? def : (uint32_t)v;
}

int seccomp_platform_create(int memfd, struct platform **out)
{
	struct sc_platform *sp;
	const struct sc_code *code;
	int err = 0;

	if (!seccomp_platform_available())
		return -ENOTSUP;
	if (memfd < 0 || fcntl(memfd, F_GETFD) < 0)
		return -EBADF;
	code = sc_code_get(&err);
	if (!code)
		return err;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->base.ops = &seccomp_ops;
	sp->base.memfd = memfd;
	sp->base.imagefd = -1;
	sp->code = code;
	sp->zsock = -1;
	sp->procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	pthread_mutex_init(&sp->zlock, NULL);
	/* Wake-up tuning (README.md, "Waking up"); the environment is for measurements. */
	sp->bind = env_u32("HUSK_SECCOMP_BIND", 1) != 0;
	sp->stub_spin = env_u32("HUSK_SECCOMP_STUB_SPIN", 0);
	sp->sentry_spin = env_u32("HUSK_SECCOMP_SENTRY_SPIN", 0);
	/*
	 * Syscall patching (README.md): on unless HUSK_SYSCALL_PATCH=0. The trampoline frame's
	 * XSAVE area and a nested signal frame below the trampoline stack must fit in an area.
	 */
	if (env_u32("HUSK_SYSCALL_PATCH", 1) != 0 &&
	    SC_TF_FP + 2 * (platform_fpstate_size() + 64) + 4096 <= SC_AREA_SIZE - 64)
		sp->base.syscall_trampoline = code->tramp;
	*out = &sp->base;
	return 0;
}

static const struct platform_ops seccomp_ops = {
	.name = "seccomp",
	.as_create = seccomp_as_create,
	.as_destroy = seccomp_as_destroy,
	.as_map = seccomp_as_map,
	.as_map_image = seccomp_as_map_image,
	.as_unmap = seccomp_as_unmap,
	.as_protect = seccomp_as_protect,
	.ctx_create = seccomp_ctx_create,
	.ctx_destroy = seccomp_ctx_destroy,
	.ctx_clone = seccomp_ctx_clone,
	.ctx_adopt = seccomp_ctx_adopt,
	.ctx_switch = seccomp_ctx_switch,
	.ctx_interrupt = seccomp_ctx_interrupt,
	.destroy = seccomp_destroy,
	.ctx_get_fpstate = seccomp_ctx_get_fpstate,
	.ctx_set_fpstate = seccomp_ctx_set_fpstate,
	.ctx_singlestep = seccomp_ctx_singlestep,
	.ctx_cpu_ns = seccomp_ctx_cpu_ns,
	.ctx_peak_rss_kb = seccomp_ctx_peak_rss_kb,
	.as_host_pid = seccomp_as_stub_pid,
};
