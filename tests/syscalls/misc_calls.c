/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Calls real programs make that need little machinery: ioprio_get/ioprio_set, sched_setattr/
 * sched_getattr, arch_prctl's CPUID requests, clock_settime's errors, process_madvise,
 * pidfd_getfd, vmsplice, pidfd_send_signal on a /proc/PID directory, /dev/zero MAP_SHARED
 * across fork, statfs of memory filesystems after writes, and the kernel version as uname,
 * /proc/version and /proc/sys/kernel tell it.
 */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "child.h"

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_WHO_PGRP 2
#define IOPRIO_WHO_USER 3
#define IOPRIO_CLASS_NONE 0
#define IOPRIO_CLASS_RT 1
#define IOPRIO_CLASS_BE 2
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO(c, d) (((c) << 13) | (d))

#define ARCH_GET_CPUID 0x1011
#define ARCH_SET_CPUID 0x1012

struct sched_attr_v1 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

static void drop_to_user(void)
{
	if (setgroups(0, NULL) < 0 || setgid(1000) < 0 || setuid(1000) < 0) {
		CHECK(0, "dropping to uid 1000: %s", strerror(errno));
		_exit(0);
	}
}

static void ioprio_child(void *arg)
{
	/* Inherited across fork, per process. */
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0), IOPRIO(IOPRIO_CLASS_BE, 3));
	CHECK_RET(syscall(SYS_setpgid, 0, 0), 0);
	CHECK_RET(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO(IOPRIO_CLASS_IDLE, 0)), 0);
	/* The group's best (lowest class, then level) over its one member. */
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PGRP, 0), IOPRIO(IOPRIO_CLASS_IDLE, 0));
	CHECK_RET(syscall(SYS_ioprio_set, IOPRIO_WHO_PGRP, 0, IOPRIO(IOPRIO_CLASS_BE, 6)), 0);
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0), IOPRIO(IOPRIO_CLASS_BE, 6));
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PGRP, getpid()), IOPRIO(IOPRIO_CLASS_BE, 6));
	/* Unset (class NONE): the group's answer follows the nice value (BE, (nice + 20) / 5). */
	CHECK_RET(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, 0), 0);
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0), 0);
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PGRP, 0),
		  IOPRIO(IOPRIO_CLASS_BE, (getpriority(PRIO_PROCESS, 0) + 20) / 5));
	drop_to_user();
	CHECK_ERR(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO(IOPRIO_CLASS_RT, 0)),
		  EPERM);
	CHECK_RET(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO(IOPRIO_CLASS_BE, 7)), 0);
	/* Another user's process. */
	CHECK_ERR(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, getppid(),
			  IOPRIO(IOPRIO_CLASS_BE, 7)),
		  EPERM);
	CHECK_OK(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, getppid()));
}

static void test_ioprio(void)
{
	CHECK_RET(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO(IOPRIO_CLASS_BE, 3)), 0);
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0), IOPRIO(IOPRIO_CLASS_BE, 3));
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, getpid()),
		  IOPRIO(IOPRIO_CLASS_BE, 3));
	CHECK_ERR(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO(4, 0)), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO(IOPRIO_CLASS_NONE, 1)),
		  EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_set, 4, 0, IOPRIO(IOPRIO_CLASS_BE, 3)), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_get, 0, 0), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 999999), ESRCH);
	CHECK_ERR(syscall(SYS_ioprio_get, IOPRIO_WHO_PGRP, 999999), ESRCH);
	CHECK_ERR(syscall(SYS_ioprio_get, IOPRIO_WHO_USER, 54321), ESRCH);
	CHECK_ERR(syscall(SYS_ioprio_set, IOPRIO_WHO_USER, 54321, IOPRIO(IOPRIO_CLASS_BE, 3)),
		  ESRCH);
	in_child(ioprio_child, NULL);
	CHECK_RET(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0), IOPRIO(IOPRIO_CLASS_BE, 3));
	CHECK_RET(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, 0), 0);
}

static void sched_child(void *arg)
{
	struct sched_attr_v1 a = { .size = sizeof(a) };
	char big[128];

	a.sched_policy = SCHED_BATCH;
	a.sched_nice = 5;
	CHECK_RET(syscall(SYS_sched_setattr, 0, &a, 0), 0);
	memset(&a, 0xff, sizeof(a));
	CHECK_RET(syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0), 0);
	CHECK(a.size == sizeof(a) && a.sched_policy == SCHED_BATCH && a.sched_nice == 5 &&
		      a.sched_priority == 0 && a.sched_flags == 0,
	      "getattr after BATCH nice 5: size %u policy %u nice %d prio %u flags %llx", a.size,
	      a.sched_policy, a.sched_nice, a.sched_priority, (unsigned long long)a.sched_flags);
	CHECK_RET(sched_getscheduler(0), SCHED_BATCH);
	CHECK_RET(syscall(SYS_getpriority, PRIO_PROCESS, 0), 20 - 5);
	/* The first version of the struct (48 bytes) is enough; the size says what was written. */
	memset(big, 0x5a, sizeof(big));
	CHECK_RET(syscall(SYS_sched_getattr, 0, big, 48, 0), 0);
	CHECK(((struct sched_attr_v1 *)big)->size == 48 && big[48] == 0x5a,
	      "getattr with 48 bytes: size %u", ((struct sched_attr_v1 *)big)->size);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, big, 47, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, big, 4097, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, big, 48, 1), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getattr, 999999, big, 48, 0), ESRCH);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, NULL, 48, 0), EINVAL);

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_IDLE;
	CHECK_RET(syscall(SYS_sched_setattr, 0, &a, 0), 0);
	CHECK_RET(sched_getscheduler(0), SCHED_IDLE);
	a.sched_policy = SCHED_OTHER;
	a.sched_priority = 1;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EINVAL);
	a.sched_priority = 0;
	a.sched_policy = SCHED_FIFO;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EINVAL);
	a.sched_policy = 42;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EINVAL);
	a.sched_policy = SCHED_OTHER;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 1), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setattr, 0, NULL, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setattr, 999999, &a, 0), ESRCH);
	/* Size rules: below the first version E2BIG with the kernel's size written back. */
	a.size = 40;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), E2BIG);
	CHECK(a.size >= 48 && a.size <= 128, "size written back %u", a.size);
	/* Larger than the kernel's struct: the tail must be zero. */
	memset(big, 0, sizeof(big));
	memcpy(big, &a, sizeof(a));
	((struct sched_attr_v1 *)big)->size = sizeof(big);
	((struct sched_attr_v1 *)big)->sched_policy = SCHED_OTHER;
	CHECK_RET(syscall(SYS_sched_setattr, 0, big, 0), 0);
	big[sizeof(big) - 1] = 1;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, big, 0), E2BIG);
	CHECK_RET(sched_getscheduler(0), SCHED_OTHER);

	drop_to_user();
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_FIFO;
	a.sched_priority = 10;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EPERM);
	a.sched_policy = SCHED_OTHER;
	a.sched_priority = 0;
	a.sched_nice = -5;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EPERM);
	a.sched_nice = 10;
	CHECK_RET(syscall(SYS_sched_setattr, 0, &a, 0), 0);
	CHECK_RET(syscall(SYS_getpriority, PRIO_PROCESS, 0), 20 - 10);
}

static void test_sched_attr(void)
{
	struct sched_attr_v1 a;

	memset(&a, 0xff, sizeof(a));
	CHECK_RET(syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0), 0);
	CHECK(a.size == sizeof(a) && a.sched_policy == SCHED_OTHER && a.sched_priority == 0,
	      "getattr: size %u policy %u prio %u", a.size, a.sched_policy, a.sched_priority);
	in_child(sched_child, NULL);
}

static void test_cpuid(void)
{
	long r;

	CHECK_RET(syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0), 1);
	/* ENODEV where the CPU has no CPUID faulting (virtual machines, the sandbox). */
	errno = 0;
	r = syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
	CHECK(r == 0 || errno == ENODEV, "ARCH_SET_CPUID 1: %ld %s", r, strerror(errno));
	if (r < 0)
		CHECK_ERR(syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0), ENODEV);
}

static void settime_child(void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	drop_to_user();
	CHECK_ERR(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EPERM);
	{
		struct timeval tv;

		gettimeofday(&tv, NULL);
		CHECK_ERR(syscall(SYS_settimeofday, &tv, NULL), EPERM);
		CHECK_ERR(syscall(SYS_settimeofday, NULL, NULL), EPERM);
	}
}

static void test_clock_settime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	CHECK_ERR(syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts), EINVAL);
	CHECK_ERR(syscall(SYS_clock_settime, 99, &ts), EINVAL);
	ts.tv_nsec = 1000000000;
	CHECK_ERR(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EINVAL);
	{
		struct timeval tv = { .tv_sec = 1, .tv_usec = 1000000 };
		struct timezone tz = { .tz_minuteswest = 16 * 60 };

		CHECK_ERR(syscall(SYS_settimeofday, &tv, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_settimeofday, (void *)8, NULL), EFAULT);
		CHECK_ERR(syscall(SYS_settimeofday, NULL, &tz), EINVAL);
	}
	in_child(settime_child, NULL);
	/* Root in the sandbox may not change the host's time; natively this would. */
	if (in_husk()) {
		clock_gettime(CLOCK_REALTIME, &ts);
		CHECK_ERR(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EPERM);
		CHECK_ERR(syscall(SYS_settimeofday, NULL, NULL), EPERM);
	}
}

static void test_process_madvise(void)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov[2] = { { m, 4096 }, { m + 4096, 4096 } };
	pid_t pid;

	CHECK(pidfd >= 0 && m != MAP_FAILED, "pidfd_open/mmap");
	memset(m, 7, 8192);
	CHECK_RET(syscall(SYS_process_madvise, pidfd, iov, 2, MADV_COLD, 0), 8192);
	CHECK_RET(syscall(SYS_process_madvise, pidfd, iov, 1, MADV_PAGEOUT, 0), 4096);
	CHECK(m[0] == 7 && m[8191] == 7, "contents after MADV_COLD/PAGEOUT");
	/* On itself a process may give any advice (Linux 6.13): DONTNEED zeroes. */
	CHECK_RET(syscall(SYS_process_madvise, pidfd, iov, 1, MADV_DONTNEED, 0), 4096);
	CHECK(m[0] == 0 && m[4096] == 7, "after DONTNEED of the first page: %d %d", m[0], m[4096]);
	CHECK_ERR(syscall(SYS_process_madvise, pidfd, iov, 1, 999, 0), EINVAL);
	CHECK_ERR(syscall(SYS_process_madvise, pidfd, iov, 1, MADV_COLD, 1), EINVAL);
	CHECK_ERR(syscall(SYS_process_madvise, 0, iov, 1, MADV_COLD, 0), EBADF);
	CHECK_ERR(syscall(SYS_process_madvise, 999, iov, 1, MADV_COLD, 0), EBADF);
	close(pidfd);
	/* Another process: the reclaim hints only. */
	pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	CHECK_RET(syscall(SYS_process_madvise, pidfd, iov, 2, MADV_COLD, 0), 8192);
	CHECK_RET(syscall(SYS_process_madvise, pidfd, iov, 2, MADV_PAGEOUT, 0), 8192);
	CHECK_ERR(syscall(SYS_process_madvise, pidfd, iov, 1, MADV_DONTNEED, 0), EINVAL);
	CHECK_ERR(syscall(SYS_process_madvise, pidfd, iov, 1, MADV_FREE, 0), EINVAL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);
	munmap(m, 8192);
}

static void getfd_child(void *arg)
{
	int pidfd = *(int *)arg;
	int fd;

	drop_to_user();
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, 1, 0);
	CHECK(fd < 0 && errno == EPERM, "pidfd_getfd on root's process as uid 1000: %d %s", fd,
	      strerror(errno));
}

static void test_pidfd_getfd(void)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0), p[2], fd, st;
	char buf[8] = "";
	pid_t pid;

	CHECK_OK(pipe2(p, O_NONBLOCK));
	fd = (int)CHECK_OK(syscall(SYS_pidfd_getfd, pidfd, p[1], 0));
	CHECK(fd != p[1] && fcntl(fd, F_GETFD) == FD_CLOEXEC, "new fd %d, flags %d", fd,
	      fcntl(fd, F_GETFD));
	CHECK_RET(write(fd, "dup", 3), 3);
	CHECK(read(p[0], buf, sizeof(buf)) == 3 && memcmp(buf, "dup", 3) == 0,
	      "data through the fd taken");
	close(fd);
	CHECK_ERR(syscall(SYS_pidfd_getfd, pidfd, 999, 0), EBADF);
	CHECK_ERR(syscall(SYS_pidfd_getfd, pidfd, p[1], 1), EINVAL);
	CHECK_ERR(syscall(SYS_pidfd_getfd, p[0], p[1], 0), EBADF);
	CHECK_ERR(syscall(SYS_pidfd_getfd, 999, p[1], 0), EBADF);
	in_child(getfd_child, &pidfd);
	/* A process that has exited (a zombie) has no files. */
	pid = fork();
	if (pid == 0)
		_exit(0);
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	waitid(P_PID, pid, NULL, WEXITED | WNOWAIT);
	CHECK_ERR(syscall(SYS_pidfd_getfd, fd, 0, 0), ESRCH);
	waitpid(pid, &st, 0);
	close(fd);
	close(p[0]);
	close(p[1]);
	close(pidfd);
}

static void test_vmsplice(void)
{
	char in[] = "hello, ", in2[] = "pipe", out[32] = "";
	struct iovec iov[2] = { { in, 7 }, { in2, 4 } }, o = { out, sizeof(out) };
	int p[2], fd;

	CHECK_OK(pipe(p));
	CHECK_RET(syscall(SYS_vmsplice, p[1], iov, 2, 0), 11);
	CHECK(read(p[0], out, sizeof(out)) == 11 && memcmp(out, "hello, pipe", 11) == 0,
	      "read after vmsplice: %.11s", out);
	CHECK_RET(write(p[1], "backwards", 9), 9);
	memset(out, 0, sizeof(out));
	CHECK_RET(syscall(SYS_vmsplice, p[0], &o, 1, 0), 9);
	CHECK(memcmp(out, "backwards", 9) == 0, "vmsplice from the pipe: %.9s", out);
	CHECK_ERR(syscall(SYS_vmsplice, p[1], iov, 1, 0x100), EINVAL);
	fd = open("/dev/null", O_WRONLY);
	CHECK_ERR(syscall(SYS_vmsplice, fd, iov, 1, 0), EBADF);
	close(fd);
	CHECK_ERR(syscall(SYS_vmsplice, 999, iov, 1, 0), EBADF);
	/* An empty pipe with SPLICE_F_NONBLOCK. */
	CHECK_ERR(syscall(SYS_vmsplice, p[0], &o, 1, 2 /* SPLICE_F_NONBLOCK */), EAGAIN);
	close(p[0]);
	close(p[1]);
}

static void test_proc_pidfd(void)
{
	char path[64];
	pid_t pid = fork();
	int fd, st = 0;

	if (pid == 0) {
		for (;;)
			pause();
	}
	snprintf(path, sizeof(path), "/proc/%d", pid);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK_RET(syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0), 0);
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
	close(fd);
	/* A /proc file that is not a process directory. */
	fd = open("/proc/self/status", O_RDONLY);
	CHECK_ERR(syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0), EBADF);
	close(fd);
}

static void test_dev_zero_shared(void)
{
	int fd = open("/dev/zero", O_RDWR), st;
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	pid_t pid;

	CHECK(m != MAP_FAILED, "mmap /dev/zero shared: %s", strerror(errno));
	if (m == MAP_FAILED)
		return;
	CHECK(m[0] == 0 && m[8191] == 0, "zero filled");
	close(fd);
	m[1] = 'p';
	pid = fork();
	if (pid == 0) {
		m[0] = m[1] == 'p' ? 'c' : '?';
		m[8000] = 'x';
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(m[0] == 'c' && m[8000] == 'x', "child's writes seen by the parent: %c %c", m[0],
	      m[8000]);
	munmap(m, 8192);
}

/* Writing 1 MiB takes 256 more 4 KiB blocks of a memory filesystem; removing it gives them back. */
static void statfs_used(const char *dir)
{
	char path[128];
	struct statfs a, b, c;
	char *buf = malloc(1 << 20);
	int fd;

	snprintf(path, sizeof(path), "%s/husk-misc-statfs-%d", dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && buf, "create %s: %s", path, strerror(errno));
	if (fd < 0 || !buf) {
		free(buf);
		return;
	}
	memset(buf, 1, 1 << 20);
	CHECK_OK(fstatfs(fd, &a));
	CHECK_RET(write(fd, buf, 1 << 20), 1 << 20);
	CHECK_OK(fstatfs(fd, &b));
	CHECK(a.f_blocks == b.f_blocks && a.f_bsize == 4096 && a.f_bfree - b.f_bfree >= 256 &&
		      a.f_bfree - b.f_bfree < 512,
	      "%s: blocks %llu -> %llu, free %llu -> %llu", dir, (unsigned long long)a.f_blocks,
	      (unsigned long long)b.f_blocks, (unsigned long long)a.f_bfree,
	      (unsigned long long)b.f_bfree);
	close(fd);
	unlink(path);
	CHECK_OK(statfs(dir, &c));
	CHECK(c.f_bfree > b.f_bfree, "%s: free %llu after unlink", dir,
	      (unsigned long long)c.f_bfree);
	free(buf);
}

static void test_statfs(void)
{
	statfs_used("/dev/shm");
	/* The root overlay reports its upper layer, as overlayfs does (natively /tmp is a disk). */
	if (in_husk())
		statfs_used("/tmp");
}

static char *read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return buf;
}

static void test_version(void)
{
	char a[512], b[512];
	struct utsname u;
	struct stat st;

	CHECK_OK(uname(&u));
	CHECK(strcmp(read_file("/proc/sys/kernel/osrelease", a, sizeof(a)), u.release) == 0,
	      "osrelease %s, uname %s", a, u.release);
	CHECK(strcmp(read_file("/proc/sys/kernel/ostype", a, sizeof(a)), u.sysname) == 0,
	      "ostype %s, uname %s", a, u.sysname);
	CHECK(strcmp(read_file("/proc/sys/kernel/version", a, sizeof(a)), u.version) == 0,
	      "kernel/version %s, uname %s", a, u.version);
	CHECK(strcmp(read_file("/proc/sys/kernel/hostname", a, sizeof(a)), u.nodename) == 0,
	      "hostname %s, uname %s", a, u.nodename);
	snprintf(b, sizeof(b), "%s version %s ", u.sysname, u.release);
	CHECK(strncmp(read_file("/proc/version", a, sizeof(a)), b, strlen(b)) == 0,
	      "/proc/version %s", a);
	CHECK(strstr(a, u.version) != NULL, "/proc/version %s lacks %s", a, u.version);
	if (in_husk())
		CHECK(stat("/proc/config.gz", &st) < 0 && errno == ENOENT, "/proc/config.gz");
}

int main(void)
{
	test_ioprio();
	test_sched_attr();
	test_cpuid();
	test_clock_settime();
	test_process_madvise();
	test_pidfd_getfd();
	test_vmsplice();
	test_proc_pidfd();
	test_dev_zero_shared();
	test_statfs();
	test_version();
	return finish();
}
