/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System information and resource limits.
 *
 * Nothing here reveals or changes host state beyond what the notes say: uname reports the
 * sandbox's names (never the host's), rlimits are the sentry's own bookkeeping in the thread
 * group (never applied to the host), CPUs are renumbered 0..n-1.
 */
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "common/util.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/mm/mm.h"
#include "sentry/time/vtime.h"
#include "syscalls/handlers.h"

#define LINUX_GRND_NONBLOCK 0x0001
#define LINUX_GRND_RANDOM 0x0002
#define LINUX_GRND_INSECURE 0x0004

/* Largest read/write count (MAX_RW_COUNT) and top of the user address space on x86-64. */
#define LINUX_MAX_RW_COUNT (INT_MAX & PAGE_MASK)
#define LINUX_TASK_SIZE_MAX 0x7ffffffff000ULL

/* fs/file.c sysctl_nr_open default: the largest RLIMIT_NOFILE hard limit. */
#define LINUX_NR_OPEN (1024 * 1024)

/* struct new_utsname */
struct linux_utsname {
	char sysname[65];
	char nodename[65];
	char release[65];
	char version[65];
	char machine[65];
	char domainname[65];
};
_Static_assert(sizeof(struct linux_utsname) == 390, "struct new_utsname is 390 bytes");

/* struct sysinfo on x86-64 */
struct linux_sysinfo {
	int64_t uptime;
	uint64_t loads[3];
	uint64_t totalram;
	uint64_t freeram;
	uint64_t sharedram;
	uint64_t bufferram;
	uint64_t totalswap;
	uint64_t freeswap;
	uint16_t procs;
	uint16_t pad;
	uint64_t totalhigh;
	uint64_t freehigh;
	uint32_t mem_unit;
	char _f[4];
};
_Static_assert(sizeof(struct linux_sysinfo) == 112, "x86-64 struct sysinfo is 112 bytes");

/* struct rlimit64 */
struct linux_rlimit64 {
	uint64_t rlim_cur;
	uint64_t rlim_max;
};

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	ssize_t n = mm_copy_out(t->mm, addr, src, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

static int copy_in_all(struct task *t, void *dst, uint64_t addr, size_t len)
{
	ssize_t n = mm_copy_in(t->mm, dst, addr, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* True when pid names the calling process (0, its pid, or its own tid). */
static bool pid_is_self(struct task *t, int32_t pid)
{
	if (t->tg->pidns) /* the caller's numbers, in its pid namespace */
		return pid == 0 || pid == task_own_pid(t) || pid == task_own_tid(t);
	return pid == 0 || pid == task_pid(t) || pid == t->tid;
}

/* uname(2): nodename and domainname are the caller's UTS namespace's. */
long sys_uname(struct task *t, const struct syscall_args *args)
{
	struct uts_ns *uts = task_nsproxy(t)->uts;
	struct linux_utsname u;

	memset(&u, 0, sizeof(u));
	strcpy(u.sysname, "Linux");
	strcpy(u.release, HUSK_UTS_RELEASE);
	strcpy(u.version, HUSK_UTS_VERSION);
	strcpy(u.machine, "x86_64");
	pthread_mutex_lock(uts->lock);
	memcpy(u.nodename, uts->hostname, sizeof(u.nodename) - 1);
	memcpy(u.domainname, uts->domainname, sizeof(u.domainname) - 1);
	pthread_mutex_unlock(uts->lock);
	return copy_out_all(t, args->a[0], &u, sizeof(u));
}

/*
 * sysinfo(2): uptime counts from the sandbox's start (not its pauses); memory totals are the
 * host's (totalram capped by the memory file's size), no swap, no load averages, one process.
 */
long sys_sysinfo(struct task *t, const struct syscall_args *args)
{
	struct linux_sysinfo si;
	struct sysinfo host;
	struct timespec now;
	uint64_t up_ns, boot_ns, unit;

	if (clock_gettime(CLOCK_MONOTONIC, &now))
		return -errno;
	if (sysinfo(&host))
		return -errno;
	memset(&si, 0, sizeof(si));
	/* On the guest's clock: a pause does not count (sentry/time/vtime.h). */
	up_ns = vtime_host_to_guest_mono((uint64_t)now.tv_sec * 1000000000ULL +
					 (uint64_t)now.tv_nsec);
	boot_ns = vtime_host_to_guest_mono(t->k->boot_ns);
	up_ns = up_ns > boot_ns ? up_ns - boot_ns : 0;
	/* Linux rounds a partial second up. */
	si.uptime = (int64_t)((up_ns + 999999999ULL) / 1000000000ULL);
	unit = host.mem_unit ? host.mem_unit : 1;
	si.totalram = (uint64_t)host.totalram * unit;
	si.freeram = (uint64_t)host.freeram * unit;
	if (t->k->mf.size && si.totalram > t->k->mf.size)
		si.totalram = t->k->mf.size;
	if (si.freeram > si.totalram)
		si.freeram = si.totalram;
	si.procs = 1;
	si.mem_unit = 1;
	return copy_out_all(t, args->a[0], &si, sizeof(si));
}

/*
 * getrandom(2): bytes come from the host's getrandom into a sentry buffer, then out to the
 * guest; a fault after some bytes returns the count copied.
 */
long sys_getrandom(struct task *t, const struct syscall_args *args)
{
	uint64_t addr = args->a[0];
	uint64_t len = args->a[1];
	unsigned int flags = (unsigned int)args->a[2];
	unsigned int host_flags = flags & (LINUX_GRND_NONBLOCK | LINUX_GRND_INSECURE);
	uint8_t buf[4096];
	uint64_t done = 0;

	if (flags & ~(LINUX_GRND_NONBLOCK | LINUX_GRND_RANDOM | LINUX_GRND_INSECURE))
		return -EINVAL;
	if ((flags & (LINUX_GRND_INSECURE | LINUX_GRND_RANDOM)) ==
	    (LINUX_GRND_INSECURE | LINUX_GRND_RANDOM))
		return -EINVAL;
	if (len > LINUX_MAX_RW_COUNT)
		len = LINUX_MAX_RW_COUNT;
	/* access_ok(): the whole range must lie in the user address space. */
	if (addr + len < addr || addr + len > LINUX_TASK_SIZE_MAX)
		return -EFAULT;

	while (done < len) {
		size_t chunk = MIN(len - done, sizeof(buf));
		ssize_t got = getrandom(buf, chunk, host_flags);
		ssize_t copied;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (done)
				break;
			return -errno;
		}
		copied = mm_copy_out(t->mm, addr + done, buf, (size_t)got);
		if (copied < 0) {
			if (done)
				break;
			return -EFAULT;
		}
		done += (uint64_t)copied;
		if (copied < got)
			break;
	}
	explicit_bzero(buf, sizeof(buf));
	return (long)done;
}

/*
 * Linux's do_prlimit() on the thread group's own table: resource range, cur <= max, the
 * RLIMIT_NOFILE ceiling, and raising a hard limit needs uid 0 (CAP_SYS_RESOURCE).
 */
static int do_prlimit(struct task *t, struct thread_group *tg, unsigned int resource,
		      const struct rlimit *new_rlim, struct rlimit *old_rlim)
{
	struct rlimit *rlim;
	int err = 0;

	if (resource >= LINUX_RLIM_NLIMITS)
		return -EINVAL;
	if (new_rlim) {
		if (new_rlim->rlim_cur > new_rlim->rlim_max)
			return -EINVAL;
		if (resource == RLIMIT_NOFILE && new_rlim->rlim_max > LINUX_NR_OPEN)
			return -EPERM;
	}
	rlim = &tg->rlimits[resource];
	pthread_mutex_lock(&tg->lock);
	if (new_rlim && new_rlim->rlim_max > rlim->rlim_max && t->cred.euid != 0)
		err = -EPERM;
	if (!err) {
		if (old_rlim)
			*old_rlim = *rlim;
		if (new_rlim)
			*rlim = *new_rlim;
	}
	pthread_mutex_unlock(&tg->lock);
	if (!err && new_rlim && resource == RLIMIT_CPU)
		err = timer_rlimit_cpu(tg);
	return err;
}

/*
 * Linux's check_prlimit_permission for another process: the caller's uid and gid are each of
 * the target's real, effective and saved ids, or it has CAP_SYS_RESOURCE.
 */
static int prlimit_permission(struct task *t, struct task *p)
{
	const struct cred *c = &t->cred, *tc = &p->cred;

	if (c->uid == tc->uid && c->uid == tc->euid && c->uid == tc->suid && c->gid == tc->gid &&
	    c->gid == tc->egid && c->gid == tc->sgid)
		return 0;
	return cred_capable(c, CAP_SYS_RESOURCE) ? 0 : -EPERM;
}

/* prlimit64(2): the calling process or another one of its pid namespace (runc sets its
 * container's init's limits so). */
long sys_prlimit64(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	unsigned int resource = (unsigned int)args->a[1];
	uint64_t new_addr = args->a[2], old_addr = args->a[3];
	struct linux_rlimit64 lim;
	struct rlimit new_rlim, old_rlim;
	int err;

	if (new_addr) {
		err = copy_in_all(t, &lim, new_addr, sizeof(lim));
		if (err)
			return err;
		new_rlim.rlim_cur = lim.rlim_cur;
		new_rlim.rlim_max = lim.rlim_max;
	}
	if (!pid_is_self(t, pid)) {
		struct task *p = task_find_vtask(t, pid);

		if (!p)
			return -ESRCH;
		err = p->tg ? prlimit_permission(t, p) : -ESRCH;
		if (!err)
			err = do_prlimit(t, p->tg, resource, new_addr ? &new_rlim : NULL,
					 old_addr ? &old_rlim : NULL);
		task_put(p);
	} else {
		err = do_prlimit(t, t->tg, resource, new_addr ? &new_rlim : NULL,
				 old_addr ? &old_rlim : NULL);
	}
	if (err)
		return err;
	if (old_addr) {
		lim = (struct linux_rlimit64){ old_rlim.rlim_cur, old_rlim.rlim_max };
		return copy_out_all(t, old_addr, &lim, sizeof(lim));
	}
	return 0;
}

/* getrlimit(2) */
long sys_getrlimit(struct task *t, const struct syscall_args *args)
{
	struct rlimit value;
	struct linux_rlimit64 lim;
	int err = do_prlimit(t, t->tg, (unsigned int)args->a[0], NULL, &value);

	if (err)
		return err;
	lim = (struct linux_rlimit64){ value.rlim_cur, value.rlim_max };
	return copy_out_all(t, args->a[1], &lim, sizeof(lim));
}

/* setrlimit(2) */
long sys_setrlimit(struct task *t, const struct syscall_args *args)
{
	struct linux_rlimit64 lim;
	struct rlimit new_rlim;
	int err = copy_in_all(t, &lim, args->a[1], sizeof(lim));

	if (err)
		return err;
	new_rlim.rlim_cur = lim.rlim_cur;
	new_rlim.rlim_max = lim.rlim_max;
	return do_prlimit(t, t->tg, (unsigned int)args->a[0], &new_rlim, NULL);
}

/* sched_getaffinity(2) is in sys_sched.c, beside sched_setaffinity. */

/* sched_yield(2): yields the sentry thread that runs the task. */
long sys_sched_yield(struct task *t, const struct syscall_args *args)
{
	sched_yield();
	return 0;
}

/*
 * personality(2): 0xffffffff queries; any other value is stored and the old one returned. The
 * value is kept (fork, execve) and reported; its flags change nothing in the sentry.
 */
long sys_personality(struct task *t, const struct syscall_args *args)
{
	uint32_t persona = (uint32_t)args->a[0];
	uint32_t old = t->personality;

	if (persona != 0xffffffffu)
		t->personality = persona;
	return old;
}

/*
 * sethostname(2)/setdomainname(2) of the caller's UTS namespace: CAP_SYS_ADMIN in the user
 * namespace that owns it (EPERM), at most 64 bytes (EINVAL).
 */
static long set_uts_name(struct task *t, bool host, uint64_t addr, int64_t len)
{
	struct uts_ns *uts = task_nsproxy(t)->uts;
	char buf[65];

	if (!task_ns_capable(t, uts->owner, 21 /* CAP_SYS_ADMIN */))
		return -EPERM;
	if ((int32_t)len < 0 || (int32_t)len > 64)
		return -EINVAL;
	if (len && mm_copy_in(t->mm, buf, addr, (size_t)len) != (ssize_t)len)
		return -EFAULT;
	buf[len] = '\0';
	pthread_mutex_lock(uts->lock);
	memcpy(host ? uts->hostname : uts->domainname, buf, (size_t)len + 1);
	pthread_mutex_unlock(uts->lock);
	return 0;
}

long sys_sethostname(struct task *t, const struct syscall_args *args)
{
	return set_uts_name(t, true, args->a[0], (int32_t)args->a[1]);
}

long sys_setdomainname(struct task *t, const struct syscall_args *args)
{
	return set_uts_name(t, false, args->a[0], (int32_t)args->a[1]);
}
