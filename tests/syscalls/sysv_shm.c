/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V shared memory: shmget's key and size rules, ids (not reused at once), shmat with
 * SHM_RND, SHM_RDONLY, SHM_REMAP, shmdt (also of a mapping inherited by fork), shm_nattch
 * across fork, exit and exec, IPC_RMID with attaches left (SHM_DEST, key gone), permissions for
 * a non-root user (EACCES, EPERM), IPC_STAT/IPC_SET/IPC_INFO/SHM_INFO/SHM_STAT/SHM_STAT_ANY,
 * SHM_LOCK, the shmmni/shmmax limits (in a new IPC namespace natively, in the sandbox's own
 * sysctls in husk) and /proc/sysvipc/shm. Every id made is removed at exit.
 */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif
#ifndef SHM_EXEC
#define SHM_EXEC 0100000
#endif

#define PAGE 4096
#define USER 1000

static int ids[64];
static int nids;
static pid_t main_pid;

static void cleanup(void)
{
	if (getpid() != main_pid)
		return;
	for (int i = 0; i < nids; i++)
		shmctl(ids[i], IPC_RMID, NULL);
}

static int track(int id)
{
	if (id >= 0 && nids < (int)(sizeof(ids) / sizeof(ids[0])))
		ids[nids++] = id;
	return id;
}

static struct shmid_ds stat_of(int id)
{
	struct shmid_ds ds;

	memset(&ds, 0xa5, sizeof(ds));
	CHECK_RET(shmctl(id, IPC_STAT, &ds), 0);
	return ds;
}

static long nattch(int id)
{
	struct shmid_ds ds;

	if (shmctl(id, IPC_STAT, &ds) < 0)
		return -1;
	return (long)ds.shm_nattch;
}

static key_t test_key(int n)
{
	return (key_t)(0x48550000 | ((main_pid & 0xff) << 8) | n);
}

static void test_get(void)
{
	key_t key = test_key(1);
	int id, id2, id3;
	struct shmid_ds ds;

	CHECK_ERR(shmget(IPC_PRIVATE, 0, IPC_CREAT | 0600), EINVAL);
	CHECK_ERR(shmget(IPC_PRIVATE, (size_t)-1, IPC_CREAT | 0600), EINVAL);
	shmctl(shmget(key, 0, 0), IPC_RMID, NULL); /* a leftover of an earlier run */
	CHECK_ERR(shmget(key, PAGE, 0600), ENOENT);
	id = track(CHECK_OK(shmget(key, 10000, IPC_CREAT | IPC_EXCL | 0640)));
	CHECK_ERR(shmget(key, PAGE, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	CHECK_RET(shmget(key, PAGE, IPC_CREAT | 0600), id);
	CHECK_RET(shmget(key, 0, 0), id);
	CHECK_RET(shmget(key, 10000, 0), id);
	CHECK_ERR(shmget(key, 10001, 0), EINVAL);

	ds = stat_of(id);
	CHECK(ds.shm_perm.__key == key, "key %x", ds.shm_perm.__key);
	CHECK(ds.shm_segsz == 10000, "segsz %zu", ds.shm_segsz);
	CHECK(ds.shm_cpid == getpid(), "cpid %d", ds.shm_cpid);
	CHECK(ds.shm_lpid == 0 && ds.shm_nattch == 0 && ds.shm_atime == 0 && ds.shm_dtime == 0,
	      "lpid %d nattch %lu atime %ld dtime %ld", ds.shm_lpid, (unsigned long)ds.shm_nattch,
	      (long)ds.shm_atime, (long)ds.shm_dtime);
	CHECK(ds.shm_ctime > 0, "ctime %ld", (long)ds.shm_ctime);
	CHECK((ds.shm_perm.mode & 0777) == 0640, "mode %o", ds.shm_perm.mode);
	CHECK(ds.shm_perm.uid == geteuid() && ds.shm_perm.cuid == geteuid() &&
		      ds.shm_perm.gid == getegid() && ds.shm_perm.cgid == getegid(),
	      "owner %u:%u creator %u:%u", ds.shm_perm.uid, ds.shm_perm.gid, ds.shm_perm.cuid,
	      ds.shm_perm.cgid);

	/* IPC_PRIVATE always makes a new segment; a removed id is not given again at once. */
	id2 = track(CHECK_OK(shmget(IPC_PRIVATE, PAGE, 0600)));
	CHECK(id2 != id, "IPC_PRIVATE gave the keyed id %d", id2);
	CHECK_RET(shmctl(id2, IPC_RMID, NULL), 0);
	CHECK_ERR(shmctl(id2, IPC_STAT, &ds), EINVAL);
	id3 = track(CHECK_OK(shmget(IPC_PRIVATE, PAGE, 0600)));
	CHECK(id3 != id2, "the removed id %d came back at once", id2);
	CHECK_RET(shmctl(id3, IPC_RMID, NULL), 0);

	CHECK_ERR(shmctl(-1, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(shmctl(id, 999, &ds), EINVAL);
	CHECK_ERR(shmctl(id, IPC_STAT, (void *)1), EFAULT);
	CHECK_ERR(shmat(-1, NULL, 0), EINVAL);
	CHECK_RET(shmctl(id, IPC_RMID, NULL), 0);
	CHECK_ERR(shmget(key, 0, 0), ENOENT);
}

static void child_sees(void *arg)
{
	char *m = arg;
	int id = *(int *)(m + 100);

	CHECK(!memcmp(m, "parent", 6), "child reads %.6s", m);
	memcpy(m + 10, "child", 5);
	CHECK_RET(nattch(id), 2);
}

static void child_detaches(void *arg)
{
	char *m = arg;
	int id = *(int *)(m + 100);

	CHECK_RET(shmdt(m), 0);
	CHECK_RET(nattch(id), 1);
	CHECK_ERR(shmdt(m), EINVAL);
}

static void test_attach(char *self)
{
	int id = track(CHECK_OK(shmget(IPC_PRIVATE, 3 * PAGE, 0600))), st;
	struct shmid_ds ds;
	char *m, *m2, arg[32];
	pid_t pid;

	m = shmat(id, NULL, 0);
	CHECK(m != (void *)-1, "shmat: %s", strerror(errno));
	if (m == (void *)-1)
		return;
	CHECK(((uintptr_t)m & (PAGE - 1)) == 0, "address %p", m);
	CHECK(m[0] == 0 && m[3 * PAGE - 1] == 0, "fresh segment is zero");
	memcpy(m, "parent", 6);
	*(int *)(m + 100) = id;
	ds = stat_of(id);
	CHECK(ds.shm_nattch == 1, "nattch %lu", (unsigned long)ds.shm_nattch);
	CHECK(ds.shm_lpid == getpid() && ds.shm_atime > 0, "lpid %d atime %ld", ds.shm_lpid,
	      (long)ds.shm_atime);

	/* A second attach sees the same bytes. */
	m2 = shmat(id, NULL, SHM_RDONLY);
	CHECK(m2 != (void *)-1 && m2 != m, "second shmat: %s", strerror(errno));
	if (m2 != (void *)-1) {
		CHECK(!memcmp(m2, "parent", 6), "second attach reads %.6s", m2);
		CHECK_RET(nattch(id), 2);
		CHECK_ERR(mprotect(m2, PAGE, PROT_READ | PROT_WRITE), EACCES);
		CHECK_RET(shmdt(m2), 0);
		CHECK_RET(nattch(id), 1);
	}

	/* fork: the child's copy counts; its exit drops it. */
	st = in_child(child_sees, m);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK(!memcmp(m + 10, "child", 5), "parent reads the child's write: %.5s", m + 10);
	CHECK_RET(nattch(id), 1);

	/* A child detaches the mapping it inherited. */
	st = in_child(child_detaches, m);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(nattch(id), 1);

	/* exec drops the child's attach: the new program sees nattch 1 (the parent's). */
	snprintf(arg, sizeof(arg), "%d", id);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl(self, self, "nattch", arg, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "nattch after exec: status %x", st);
	CHECK_RET(nattch(id), 1);

	/* shmdt wants the start of an attach. */
	CHECK_ERR(shmdt(m + 1), EINVAL);
	CHECK_ERR(shmdt(m + PAGE), EINVAL);
	CHECK_ERR(shmdt(self), EINVAL);
	CHECK_RET(shmdt(m), 0);
	ds = stat_of(id);
	CHECK(ds.shm_nattch == 0 && ds.shm_dtime > 0, "nattch %lu dtime %ld",
	      (unsigned long)ds.shm_nattch, (long)ds.shm_dtime);
	CHECK_ERR(shmdt(m), EINVAL);
	CHECK_RET(shmctl(id, IPC_RMID, NULL), 0);
}

static void child_writes_rdonly(void *arg)
{
	signal(SIGSEGV, SIG_DFL);
	*(volatile char *)arg = 1;
	_exit(0);
}

static void test_flags(void)
{
	int id = track(CHECK_OK(shmget(IPC_PRIVATE, 2 * PAGE, 0600))), st;
	char *area, *m;

	/* SHM_RDONLY: a write faults. */
	m = shmat(id, NULL, SHM_RDONLY);
	CHECK(m != (void *)-1, "shmat RDONLY: %s", strerror(errno));
	if (m != (void *)-1) {
		st = in_child(child_writes_rdonly, m);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "write to RDONLY: status %x", st);
		CHECK_RET(shmdt(m), 0);
	}

	/* Placement: SHM_RND rounds down, an unaligned address without it is refused. */
	area = mmap(NULL, 8 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(area != MAP_FAILED, "mmap: %s", strerror(errno));
	if (area == MAP_FAILED)
		return;
	CHECK_RET(munmap(area, 8 * PAGE), 0);
	CHECK_ERR(shmat(id, area + 123, 0), EINVAL);
	CHECK_RET(shmat(id, area + 123, SHM_RND), area);
	/* Over an existing mapping: EINVAL without SHM_REMAP, replaced with it. */
	CHECK_ERR(shmat(id, area, 0), EINVAL);
	CHECK_ERR(shmat(id, area + PAGE, 0), EINVAL);
	CHECK_RET(shmat(id, area + PAGE, SHM_REMAP), area + PAGE);
	CHECK_ERR(shmat(id, NULL, SHM_REMAP), EINVAL);
	CHECK_RET(nattch(id), 2);
	CHECK_RET(shmdt(area), 0);
	/* Each attach keeps what is left of it: the first its first page. */
	CHECK_RET(shmdt(area + PAGE), 0);
	CHECK_RET(nattch(id), 0);
	munmap(area, 8 * PAGE);

	/* SHM_EXEC maps executable. */
	m = shmat(id, NULL, SHM_EXEC);
	CHECK(m != (void *)-1, "shmat EXEC: %s", strerror(errno));
	if (m != (void *)-1)
		CHECK_RET(shmdt(m), 0);
	CHECK_RET(shmctl(id, IPC_RMID, NULL), 0);
}

static void test_rmid(void)
{
	key_t key = test_key(2);
	struct shmid_ds ds;
	int id, id2;
	char *m, *m2;

	shmctl(shmget(key, 0, 0), IPC_RMID, NULL);
	id = track(CHECK_OK(shmget(key, PAGE, IPC_CREAT | 0600)));
	m = shmat(id, NULL, 0);
	CHECK(m != (void *)-1, "shmat: %s", strerror(errno));
	if (m == (void *)-1)
		return;
	strcpy(m, "kept");
	CHECK_RET(shmctl(id, IPC_RMID, NULL), 0);
	/* The key is gone at once; the segment lives until its last detach. */
	CHECK_ERR(shmget(key, PAGE, 0), ENOENT);
	ds = stat_of(id);
	CHECK((ds.shm_perm.mode & SHM_DEST) && ds.shm_perm.__key == IPC_PRIVATE &&
		      ds.shm_nattch == 1,
	      "mode %o key %x nattch %lu", ds.shm_perm.mode, ds.shm_perm.__key,
	      (unsigned long)ds.shm_nattch);
	id2 = track(CHECK_OK(shmget(key, PAGE, IPC_CREAT | IPC_EXCL | 0600)));
	CHECK(id2 != id, "new segment with the key reuses id %d", id);
	/* Linux lets a segment marked for removal be attached again. */
	m2 = shmat(id, NULL, 0);
	CHECK(m2 != (void *)-1 && !strcmp(m2, "kept"), "shmat after IPC_RMID: %s",
	      m2 == (void *)-1 ? strerror(errno) : m2);
	if (m2 != (void *)-1)
		CHECK_RET(shmdt(m2), 0);
	CHECK(!strcmp(m, "kept"), "contents after IPC_RMID: %s", m);
	CHECK_RET(shmdt(m), 0);
	CHECK_ERR(shmctl(id, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(shmat(id, NULL, 0), EINVAL);
	CHECK_RET(shmctl(id2, IPC_RMID, NULL), 0);
}

static void as_user(void *arg)
{
	int id = *(int *)arg;
	struct shmid_ds ds;
	char *m;

	if (setgroups(0, NULL) || setresgid(USER, USER, USER) || setresuid(USER, USER, USER)) {
		CHECK(0, "dropping to uid %d: %s", USER, strerror(errno));
		return;
	}
	/* mode 0604: others may read only. */
	CHECK_ERR(shmat(id, NULL, 0), EACCES);
	m = shmat(id, NULL, SHM_RDONLY);
	CHECK(m != (void *)-1, "shmat RDONLY as user: %s", strerror(errno));
	if (m != (void *)-1)
		CHECK_RET(shmdt(m), 0);
	CHECK_RET(shmctl(id, IPC_STAT, &ds), 0);
	CHECK_ERR(shmget(test_key(3), PAGE, 0600), EACCES);
	CHECK_RET(shmget(test_key(3), PAGE, 0400), id);
	CHECK_ERR(shmctl(id, IPC_RMID, NULL), EPERM);
	CHECK_ERR(shmctl(id, IPC_SET, &ds), EPERM);
	CHECK_ERR(shmctl(id, SHM_LOCK, NULL), EPERM);
}

static void test_perms(void)
{
	key_t key = test_key(3);
	struct shmid_ds ds;
	int id, st;

	shmctl(shmget(key, 0, 0), IPC_RMID, NULL);
	id = track(CHECK_OK(shmget(key, PAGE, IPC_CREAT | 0604)));
	st = in_child(as_user, &id);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);

	/* IPC_SET changes owner, group and permission bits only. */
	ds = stat_of(id);
	ds.shm_perm.mode = 0777 | SHM_LOCKED;
	ds.shm_perm.uid = USER;
	ds.shm_perm.gid = USER;
	CHECK_RET(shmctl(id, IPC_SET, &ds), 0);
	ds = stat_of(id);
	CHECK(ds.shm_perm.mode == 0777 && ds.shm_perm.uid == USER && ds.shm_perm.gid == USER &&
		      ds.shm_perm.cuid == geteuid(),
	      "after IPC_SET: mode %o owner %u:%u creator %u", ds.shm_perm.mode, ds.shm_perm.uid,
	      ds.shm_perm.gid, ds.shm_perm.cuid);
	CHECK_RET(shmctl(id, SHM_LOCK, NULL), 0);
	CHECK((stat_of(id).shm_perm.mode & SHM_LOCKED) != 0, "SHM_LOCKED not set");
	CHECK_RET(shmctl(id, SHM_UNLOCK, NULL), 0);
	CHECK((stat_of(id).shm_perm.mode & SHM_LOCKED) == 0, "SHM_LOCKED still set");
	CHECK_RET(shmctl(id, IPC_RMID, NULL), 0);
}

static void test_info(void)
{
	int id = track(CHECK_OK(shmget(IPC_PRIVATE, 5 * PAGE, 0600)));
	struct shminfo info;
	struct shm_info si;
	struct shmid_ds ds;
	char line[512], want[64];
	unsigned long long shmmax = 0;
	bool found = false;
	FILE *f;
	long r;

	memset(&info, 0, sizeof(info));
	r = shmctl(0, IPC_INFO, (struct shmid_ds *)&info);
	CHECK(r >= id % 32768, "IPC_INFO returned %ld for index %d", r, id % 32768);
	f = fopen("/proc/sys/kernel/shmmax", "r");
	if (f) {
		if (fscanf(f, "%llu", &shmmax) != 1)
			shmmax = 0;
		fclose(f);
	}
	CHECK(info.shmmin == 1 && info.shmmax == shmmax && info.shmmni > 0 && info.shmall > 0,
	      "shminfo: min %lu max %lu (sysctl %llu) mni %lu all %lu", info.shmmin, info.shmmax,
	      shmmax, info.shmmni, info.shmall);
	memset(&si, 0, sizeof(si));
	r = shmctl(0, SHM_INFO, (struct shmid_ds *)&si);
	CHECK(r >= id % 32768 && si.used_ids >= 1 && si.shm_tot >= 5,
	      "SHM_INFO: %ld, used %d, tot %lu", r, si.used_ids, si.shm_tot);

	/* SHM_STAT takes an index and gives the id. */
	CHECK_RET(shmctl(id % 32768, SHM_STAT, &ds), id);
	CHECK(ds.shm_segsz == 5 * PAGE, "SHM_STAT segsz %zu", ds.shm_segsz);
	CHECK_RET(shmctl(id % 32768, SHM_STAT_ANY, &ds), id);
	CHECK_ERR(shmctl(32767, SHM_STAT, &ds), EINVAL);

	f = fopen("/proc/sysvipc/shm", "r");
	CHECK(f != NULL, "/proc/sysvipc/shm: %s", strerror(errno));
	if (f) {
		snprintf(want, sizeof(want), " %d ", id);
		if (fgets(line, sizeof(line), f))
			CHECK(strstr(line, "shmid") != NULL, "header: %s", line);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, want) && strstr(line, " 20480 "))
				found = true;
		fclose(f);
		CHECK(found, "id %d not in /proc/sysvipc/shm", id);
	}
	CHECK_RET(shmctl(id, IPC_RMID, NULL), 0);
}

static int write_sysctl(const char *name, const char *val)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

static void limits(void *arg)
{
	struct shm_info si;
	char buf[32];
	int id, used, mine[2] = { -1, -1 };

	if (unshare(CLONE_NEWIPC) < 0 && !in_husk()) {
		printf("skip: limits: unshare(CLONE_NEWIPC): %s\n", strerror(errno));
		return;
	}
	shmctl(0, SHM_INFO, (struct shmid_ds *)&si);
	used = si.used_ids;
	snprintf(buf, sizeof(buf), "%d", used + 1);
	CHECK_RET(write_sysctl("shmmni", buf), 0);
	mine[0] = CHECK_OK(shmget(IPC_PRIVATE, PAGE, 0600));
	CHECK_ERR(shmget(IPC_PRIVATE, PAGE, 0600), ENOSPC);
	CHECK_RET(write_sysctl("shmmni", "4096"), 0);
	mine[1] = CHECK_OK(shmget(IPC_PRIVATE, PAGE, 0600));
	CHECK_RET(write_sysctl("shmmax", "8192"), 0);
	CHECK_ERR(shmget(IPC_PRIVATE, 8193, 0600), EINVAL);
	id = CHECK_OK(shmget(IPC_PRIVATE, 8192, 0600));
	shmctl(id, IPC_RMID, NULL);
	CHECK_RET(write_sysctl("shmmax", "18446744073692774399"), 0);
	for (int i = 0; i < 2; i++)
		shmctl(mine[i], IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	int st;

	if (argc == 3 && !strcmp(argv[1], "nattch"))
		return (int)nattch(atoi(argv[2]));
	main_pid = getpid();
	atexit(cleanup);
	setvbuf(stdout, NULL, _IOLBF, 0);

	test_get();
	test_attach(argv[0]);
	test_flags();
	test_rmid();
	test_perms();
	test_info();
	st = in_child(limits, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limits child status %x", st);
	return finish();
}
