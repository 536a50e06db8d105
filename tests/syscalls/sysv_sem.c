/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V semaphores: semget's rules, semctl's GETVAL/SETVAL/GETALL/SETALL/GETPID/GETNCNT/
 * GETZCNT/IPC_STAT/IPC_SET/IPC_RMID/IPC_INFO/SEM_INFO/SEM_STAT (union semun by value through the
 * raw call), semop all-or-nothing with IPC_NOWAIT (EAGAIN), E2BIG, EFBIG, ERANGE, blocking until
 * a child changes the value, semtimedop's timeout, EINTR under SA_RESTART, EIDRM for a sleeper,
 * SEM_UNDO applied at exit (not inherited by fork, cleared by SETVAL), permissions for a
 * non-root user, the kernel.sem limits (in a new IPC namespace natively, in the sandbox's own
 * sysctls in husk) and /proc/sysvipc/sem. Every id made is removed at exit.
 */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "child.h"

#ifndef SEM_STAT_ANY
#define SEM_STAT_ANY 20
#endif

#define USER 1000

static int ids[64];
static int nids;
static pid_t main_pid;

static void cleanup(void)
{
	if (getpid() != main_pid)
		return;
	for (int i = 0; i < nids; i++)
		syscall(SYS_semctl, ids[i], 0, IPC_RMID, 0);
}

static int track(int id)
{
	if (id >= 0 && nids < (int)(sizeof(ids) / sizeof(ids[0])))
		ids[nids++] = id;
	return id;
}

/* semctl with the fourth argument passed by value, as the kernel takes it. */
static long sc(int id, int num, int cmd, unsigned long arg)
{
	return syscall(SYS_semctl, id, num, cmd, arg);
}

static long op1(int id, int num, int op, int flg)
{
	struct sembuf b = { .sem_num = (unsigned short)num,
			    .sem_op = (short)op,
			    .sem_flg = (short)flg };

	return syscall(SYS_semop, id, &b, 1);
}

/* Polls until semctl(id, num, cmd) == want (a bound, not a timing assert). */
static bool wait_count(int id, int num, int cmd, long want)
{
	for (int i = 0; i < 20000; i++) {
		if (sc(id, num, cmd, 0) == want)
			return true;
		usleep(500);
	}
	return false;
}

static key_t test_key(int n)
{
	return (key_t)(0x48560000 | ((main_pid & 0xff) << 8) | n);
}

static void test_get_ctl(void)
{
	key_t key = test_key(1);
	unsigned short vals[3] = { 1, 2, 3 }, got[3] = { 9, 9, 9 }, bad[3] = { 1, 40000, 3 };
	struct semid_ds ds;
	int id;

	CHECK_ERR(semget(IPC_PRIVATE, -1, 0600), EINVAL);
	CHECK_ERR(semget(IPC_PRIVATE, 0, 0600), EINVAL);
	CHECK_ERR(semget(IPC_PRIVATE, 32001, 0600), EINVAL);
	sc(semget(key, 0, 0), 0, IPC_RMID, 0);
	CHECK_ERR(semget(key, 3, 0600), ENOENT);
	id = track(CHECK_OK(semget(key, 3, IPC_CREAT | IPC_EXCL | 0600)));
	CHECK_ERR(semget(key, 3, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	CHECK_RET(semget(key, 0, 0), id);
	CHECK_RET(semget(key, 3, IPC_CREAT | 0600), id);
	CHECK_ERR(semget(key, 4, 0), EINVAL);

	CHECK_RET(sc(id, 0, GETALL, (unsigned long)got), 0);
	CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0, "new values %u %u %u", got[0], got[1],
	      got[2]);
	CHECK_RET(sc(id, 1, SETVAL, 5), 0);
	CHECK_RET(sc(id, 1, GETVAL, 0), 5);
	CHECK_RET(sc(id, 1, GETPID, 0), getpid());
	CHECK_ERR(sc(id, 1, SETVAL, (unsigned long)-1), ERANGE);
	CHECK_ERR(sc(id, 1, SETVAL, 32768), ERANGE);
	CHECK_RET(sc(id, 1, SETVAL, 32767), 0);
	CHECK_ERR(sc(id, 3, GETVAL, 0), EINVAL);
	CHECK_ERR(sc(id, -1, SETVAL, 1), EINVAL);
	CHECK_RET(sc(id, 0, SETALL, (unsigned long)vals), 0);
	CHECK_RET(sc(id, 0, GETALL, (unsigned long)got), 0);
	CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3, "GETALL %u %u %u", got[0], got[1], got[2]);
	CHECK_ERR(sc(id, 0, SETALL, (unsigned long)bad), ERANGE);
	CHECK_RET(sc(id, 1, GETVAL, 0), 2);
	CHECK_ERR(sc(id, 0, SETALL, 8), EFAULT);
	CHECK_ERR(sc(id, 0, GETALL, 8), EFAULT);
	CHECK_RET(sc(id, 0, GETNCNT, 0), 0);
	CHECK_RET(sc(id, 0, GETZCNT, 0), 0);

	memset(&ds, 0, sizeof(ds));
	CHECK_RET(sc(id, 0, IPC_STAT, (unsigned long)&ds), 0);
	CHECK(ds.sem_nsems == 3 && ds.sem_otime == 0 && ds.sem_ctime > 0 &&
		      ds.sem_perm.__key == key && (ds.sem_perm.mode & 0777) == 0600 &&
		      ds.sem_perm.uid == geteuid() && ds.sem_perm.cuid == geteuid(),
	      "IPC_STAT: nsems %lu otime %ld ctime %ld key %x mode %o", (unsigned long)ds.sem_nsems,
	      (long)ds.sem_otime, (long)ds.sem_ctime, ds.sem_perm.__key, ds.sem_perm.mode);
	ds.sem_perm.mode = 0640;
	ds.sem_perm.gid = USER;
	CHECK_RET(sc(id, 0, IPC_SET, (unsigned long)&ds), 0);
	memset(&ds, 0, sizeof(ds));
	CHECK_RET(sc(id, 0, IPC_STAT, (unsigned long)&ds), 0);
	CHECK(ds.sem_perm.mode == 0640 && ds.sem_perm.gid == USER && ds.sem_perm.cgid == getegid(),
	      "after IPC_SET: mode %o gid %u cgid %u", ds.sem_perm.mode, ds.sem_perm.gid,
	      ds.sem_perm.cgid);
	CHECK_ERR(sc(id, 0, 999, 0), EINVAL);
	CHECK_ERR(sc(-1, 0, GETVAL, 0), EINVAL);
	CHECK_RET(sc(id, 0, IPC_RMID, 0), 0);
	CHECK_ERR(sc(id, 0, GETVAL, 0), EINVAL);
	CHECK_ERR(semget(key, 0, 0), ENOENT);
}

static void test_semop(void)
{
	int id = track(CHECK_OK(semget(IPC_PRIVATE, 2, 0600)));
	struct sembuf two[2] = { { 0, -1, IPC_NOWAIT }, { 1, -10, IPC_NOWAIT } };
	struct sembuf many[501];
	struct timespec ts = { 0, 20 * 1000 * 1000 }, bad = { 0, 1000000000L };
	struct semid_ds ds;

	CHECK_RET(sc(id, 0, SETVAL, 3), 0);
	CHECK_RET(sc(id, 1, SETVAL, 4), 0);
	/* All or nothing: the second operation cannot go, so the first is undone. */
	CHECK_ERR(syscall(SYS_semop, id, two, 2), EAGAIN);
	CHECK_RET(sc(id, 0, GETVAL, 0), 3);
	two[1].sem_op = -4;
	CHECK_RET(syscall(SYS_semop, id, two, 2), 0);
	CHECK_RET(sc(id, 0, GETVAL, 0), 2);
	CHECK_RET(sc(id, 1, GETVAL, 0), 0);
	CHECK_RET(sc(id, 1, GETPID, 0), getpid());
	memset(&ds, 0, sizeof(ds));
	CHECK_RET(sc(id, 0, IPC_STAT, (unsigned long)&ds), 0);
	CHECK(ds.sem_otime > 0, "otime %ld", (long)ds.sem_otime);

	/* The same semaphore twice: applied in order. */
	two[0] = (struct sembuf){ 0, -2, 0 };
	two[1] = (struct sembuf){ 0, 5, 0 };
	CHECK_RET(syscall(SYS_semop, id, two, 2), 0);
	CHECK_RET(sc(id, 0, GETVAL, 0), 5);

	CHECK_ERR(op1(id, 0, 0, IPC_NOWAIT), EAGAIN);
	CHECK_RET(op1(id, 1, 0, IPC_NOWAIT), 0);
	CHECK_ERR(op1(id, 2, 1, 0), EFBIG);
	CHECK_ERR(op1(id, 0, 32767, 0), ERANGE);
	CHECK_RET(sc(id, 0, GETVAL, 0), 5);
	CHECK_ERR(syscall(SYS_semop, id, two, 0), EINVAL);
	memset(many, 0, sizeof(many));
	CHECK_ERR(syscall(SYS_semop, id, many, 501), E2BIG);
	CHECK_RET(sc(id, 0, SETVAL, 0), 0);
	CHECK_RET(syscall(SYS_semop, id, many, 500), 0);
	CHECK_ERR(syscall(SYS_semop, id, (void *)8, 1), EFAULT);
	CHECK_ERR(op1(-1, 0, 1, 0), EINVAL);

	/* semtimedop: the timeout passes (EAGAIN); a bad timeout is EINVAL. */
	two[0] = (struct sembuf){ 1, -1, 0 };
	CHECK_ERR(syscall(SYS_semtimedop, id, two, 1, &ts), EAGAIN);
	CHECK_ERR(syscall(SYS_semtimedop, id, two, 1, &bad), EINVAL);
	CHECK_ERR(syscall(SYS_semtimedop, id, two, 1, (void *)8), EFAULT);
	CHECK_RET(sc(id, 0, IPC_RMID, 0), 0);
}

static void child_posts(void *arg)
{
	int id = *(int *)arg;

	/* The parent sleeps in semop(-1) on semaphore 0. */
	CHECK(wait_count(id, 0, GETNCNT, 1), "GETNCNT never reached 1: %ld", sc(id, 0, GETNCNT, 0));
	CHECK_RET(sc(id, 0, GETZCNT, 0), 0);
	CHECK_RET(op1(id, 0, 1, 0), 0);
}

static void child_zeroes(void *arg)
{
	int id = *(int *)arg;

	CHECK(wait_count(id, 1, GETZCNT, 1), "GETZCNT never reached 1: %ld", sc(id, 1, GETZCNT, 0));
	CHECK_RET(sc(id, 1, GETNCNT, 0), 0);
	CHECK_RET(op1(id, 1, -1, 0), 0);
}

static void child_signals(void *arg)
{
	int id = *(int *)arg;

	CHECK(wait_count(id, 0, GETNCNT, 1), "GETNCNT never reached 1");
	kill(getppid(), SIGUSR1);
}

static void child_removes(void *arg)
{
	int id = *(int *)arg;

	CHECK(wait_count(id, 0, GETNCNT, 1), "GETNCNT never reached 1");
	CHECK_RET(sc(id, 0, IPC_RMID, 0), 0);
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	got_usr1 = 1;
}

static void test_blocking(void)
{
	int id = track(CHECK_OK(semget(IPC_PRIVATE, 2, 0600))), fd, st;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	pid_t pid;

	/* A child posts while the parent sleeps. */
	pid = child_spawn(child_posts, &id, &fd);
	CHECK_RET(op1(id, 0, -1, 0), 0);
	st = child_reap(pid, fd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(sc(id, 0, GETVAL, 0), 0);
	CHECK_RET(sc(id, 0, GETPID, 0), getpid());

	/* Wait for zero. */
	CHECK_RET(sc(id, 1, SETVAL, 1), 0);
	pid = child_spawn(child_zeroes, &id, &fd);
	CHECK_RET(op1(id, 1, 0, 0), 0);
	st = child_reap(pid, fd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	/* The sleeper's own operation completed last: its pid is the semaphore's. */
	CHECK_RET(sc(id, 1, GETPID, 0), getpid());

	/* A handled signal: EINTR even under SA_RESTART. */
	sigaction(SIGUSR1, &sa, NULL);
	got_usr1 = 0;
	pid = child_spawn(child_signals, &id, &fd);
	CHECK_ERR(op1(id, 0, -1, 0), EINTR);
	st = child_reap(pid, fd);
	CHECK(got_usr1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "handler %d, child status %x",
	      got_usr1, st);
	CHECK_RET(sc(id, 0, GETNCNT, 0), 0);

	/* Removal wakes the sleeper with EIDRM. */
	pid = child_spawn(child_removes, &id, &fd);
	CHECK_ERR(op1(id, 0, -1, 0), EIDRM);
	st = child_reap(pid, fd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
}

static void undo_plus3(void *arg)
{
	int id = *(int *)arg;

	CHECK_RET(op1(id, 0, 3, SEM_UNDO), 0);
	CHECK_RET(op1(id, 1, -1, SEM_UNDO), 0);
	CHECK_RET(sc(id, 0, GETVAL, 0), 13);
}

static void grandchild_exits(void *arg)
{
}

static void undo_not_inherited(void *arg)
{
	int id = *(int *)arg, st;

	CHECK_RET(op1(id, 0, 2, SEM_UNDO), 0);
	st = in_child(grandchild_exits, arg);
	CHECK(WIFEXITED(st), "grandchild status %x", st);
	/* The grandchild had no adjustments of its own. */
	CHECK_RET(sc(id, 0, GETVAL, 0), 12);
}

static void undo_then_setval(void *arg)
{
	int id = *(int *)arg;

	CHECK_RET(op1(id, 0, 2, SEM_UNDO), 0);
	CHECK_RET(sc(id, 0, SETVAL, 20), 0);
}

static void test_undo(void)
{
	int id = track(CHECK_OK(semget(IPC_PRIVATE, 2, 0600))), st;

	CHECK_RET(sc(id, 0, SETVAL, 10), 0);
	CHECK_RET(sc(id, 1, SETVAL, 1), 0);
	st = in_child(undo_plus3, &id);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(sc(id, 0, GETVAL, 0), 10);
	CHECK_RET(sc(id, 1, GETVAL, 0), 1);
	st = in_child(undo_not_inherited, &id);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(sc(id, 0, GETVAL, 0), 10);
	/* SETVAL clears the adjustments of that semaphore. */
	st = in_child(undo_then_setval, &id);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(sc(id, 0, GETVAL, 0), 20);
	/* An adjustment past the semaphore's range is refused. */
	CHECK_RET(sc(id, 0, SETVAL, 0), 0);
	CHECK_RET(op1(id, 0, 32767, SEM_UNDO), 0);
	CHECK_RET(op1(id, 0, -32767, 0), 0);
	CHECK_ERR(op1(id, 0, 2, SEM_UNDO), ERANGE);
	CHECK_RET(sc(id, 0, GETVAL, 0), 0);
	CHECK_RET(sc(id, 0, IPC_RMID, 0), 0);
}

static void as_user(void *arg)
{
	int id = *(int *)arg;
	struct semid_ds ds;

	if (setgroups(0, NULL) || setresgid(USER, USER, USER) || setresuid(USER, USER, USER)) {
		CHECK(0, "dropping to uid %d: %s", USER, strerror(errno));
		return;
	}
	/* mode 0604: others may read (wait for zero, GETVAL, IPC_STAT), not alter. */
	CHECK_RET(op1(id, 0, 0, IPC_NOWAIT), 0);
	CHECK_ERR(op1(id, 0, 1, 0), EACCES);
	CHECK_RET(sc(id, 0, GETVAL, 0), 0);
	CHECK_ERR(sc(id, 0, SETVAL, 1), EACCES);
	CHECK_RET(sc(id, 0, IPC_STAT, (unsigned long)&ds), 0);
	CHECK_ERR(sc(id, 0, IPC_SET, (unsigned long)&ds), EPERM);
	CHECK_ERR(sc(id, 0, IPC_RMID, 0), EPERM);
}

static void test_perms(void)
{
	int id = track(CHECK_OK(semget(IPC_PRIVATE, 1, 0604))), st;

	st = in_child(as_user, &id);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(sc(id, 0, IPC_RMID, 0), 0);
}

static void test_info(void)
{
	int id = track(CHECK_OK(semget(IPC_PRIVATE, 7, 0600)));
	struct seminfo si;
	struct semid_ds ds;
	char line[512], want[64];
	bool found = false;
	FILE *f;
	long r;

	memset(&si, 0, sizeof(si));
	r = sc(0, 0, IPC_INFO, (unsigned long)&si);
	CHECK(r >= id % 32768 && si.semmsl == 32000 && si.semopm == 500 && si.semvmx == 32767 &&
		      si.semmni == 32000,
	      "IPC_INFO %ld: msl %d opm %d vmx %d mni %d", r, si.semmsl, si.semopm, si.semvmx,
	      si.semmni);
	memset(&si, 0, sizeof(si));
	r = sc(0, 0, SEM_INFO, (unsigned long)&si);
	CHECK(r >= id % 32768 && si.semusz >= 1 && si.semaem >= 7, "SEM_INFO %ld: usz %d aem %d", r,
	      si.semusz, si.semaem);
	CHECK_RET(sc(id % 32768, 0, SEM_STAT, (unsigned long)&ds), id);
	CHECK(ds.sem_nsems == 7, "SEM_STAT nsems %lu", (unsigned long)ds.sem_nsems);
	CHECK_RET(sc(id % 32768, 0, SEM_STAT_ANY, (unsigned long)&ds), id);
	CHECK_ERR(sc(32767, 0, SEM_STAT, (unsigned long)&ds), EINVAL);

	f = fopen("/proc/sysvipc/sem", "r");
	CHECK(f != NULL, "/proc/sysvipc/sem: %s", strerror(errno));
	if (f) {
		snprintf(want, sizeof(want), " %d ", id);
		if (fgets(line, sizeof(line), f))
			CHECK(strstr(line, "semid") != NULL, "header: %s", line);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, want) && strstr(line, "  600          7 "))
				found = true;
		fclose(f);
		CHECK(found, "id %d not in /proc/sysvipc/sem", id);
	}
	CHECK_RET(sc(id, 0, IPC_RMID, 0), 0);
}

static int write_sem_sysctl(const char *val)
{
	int fd = open("/proc/sys/kernel/sem", O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

static void limits(void *arg)
{
	struct sembuf ops[6];
	struct seminfo si;
	char buf[64];
	int mine[2] = { -1, -1 }, used;

	if (unshare(CLONE_NEWIPC) < 0 && !in_husk()) {
		printf("skip: limits: unshare(CLONE_NEWIPC): %s\n", strerror(errno));
		return;
	}
	sc(0, 0, SEM_INFO, (unsigned long)&si);
	used = si.semusz;
	mine[0] = CHECK_OK(semget(IPC_PRIVATE, 1, 0600));
	memset(ops, 0, sizeof(ops));
	snprintf(buf, sizeof(buf), "4 1024000000 5 %d", used + 2);
	CHECK_RET(write_sem_sysctl(buf), 0);
	CHECK_ERR(syscall(SYS_semop, mine[0], ops, 6), E2BIG);
	CHECK_RET(syscall(SYS_semop, mine[0], ops, 5), 0);
	CHECK_ERR(semget(IPC_PRIVATE, 5, 0600), EINVAL);
	mine[1] = CHECK_OK(semget(IPC_PRIVATE, 4, 0600));
	CHECK_ERR(semget(IPC_PRIVATE, 1, 0600), ENOSPC);
	CHECK_RET(write_sem_sysctl("32000 1024000000 500 32000"), 0);
	for (int i = 0; i < 2; i++)
		sc(mine[i], 0, IPC_RMID, 0);
}

int main(int argc, char **argv)
{
	int st;

	main_pid = getpid();
	atexit(cleanup);
	setvbuf(stdout, NULL, _IOLBF, 0);

	test_get_ctl();
	test_semop();
	test_blocking();
	test_undo();
	test_perms();
	test_info();
	st = in_child(limits, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limits child status %x", st);
	return finish();
}
