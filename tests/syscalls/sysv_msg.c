/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V message queues: msgget's rules, msgsnd/msgrcv by type (0, > 0, < 0, MSG_EXCEPT),
 * E2BIG and MSG_NOERROR truncation, MSG_COPY, IPC_NOWAIT (EAGAIN on a full queue, ENOMSG on an
 * empty one), size and type errors, blocking senders and receivers woken by a child, EINTR
 * under SA_RESTART, EIDRM for a sleeper, IPC_STAT/IPC_SET (msg_qbytes above msgmnb needs
 * CAP_SYS_RESOURCE)/IPC_INFO/MSG_INFO/MSG_STAT, permissions for a non-root user, the msgmni and
 * msgmax limits (in a new IPC namespace natively, in the sandbox's own sysctls in husk) and
 * /proc/sysvipc/msg. Every id made is removed at exit.
 */
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif
#ifndef MSG_STAT_ANY
#define MSG_STAT_ANY 13
#endif

#define USER 1000

struct msg {
	long mtype;
	char text[8200];
};

static int ids[64];
static int nids;
static pid_t main_pid;

static void cleanup(void)
{
	if (getpid() != main_pid)
		return;
	for (int i = 0; i < nids; i++)
		msgctl(ids[i], IPC_RMID, NULL);
}

static int track(int id)
{
	if (id >= 0 && nids < (int)(sizeof(ids) / sizeof(ids[0])))
		ids[nids++] = id;
	return id;
}

static long snd(int id, long type, const char *text, size_t len, int flags)
{
	struct msg m = { .mtype = type };

	memcpy(m.text, text, len);
	return syscall(SYS_msgsnd, id, &m, len, flags);
}

/* Receives into *m (text NUL-terminated); returns msgrcv's result. */
static long rcv(int id, struct msg *m, size_t len, long type, int flags)
{
	long r;

	memset(m, 0, sizeof(*m));
	r = syscall(SYS_msgrcv, id, m, len, type, flags);
	return r;
}

/*
 * Waits until process pid sleeps (state S in /proc/PID/stat for 20 polls in a row): it is then
 * blocked in its msgsnd/msgrcv. A bound on the polls, not a timing assert.
 */
static bool wait_sleeping(pid_t pid)
{
	char path[64], buf[256], *p;
	int in_row = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 20000; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		p = strrchr(buf, ')');
		in_row = p && p[1] == ' ' && p[2] == 'S' ? in_row + 1 : 0;
		if (in_row >= 20)
			return true;
		usleep(500);
	}
	return false;
}

static key_t test_key(int n)
{
	return (key_t)(0x48570000 | ((main_pid & 0xff) << 8) | n);
}

static struct msqid_ds stat_of(int id)
{
	struct msqid_ds ds;

	memset(&ds, 0xa5, sizeof(ds));
	CHECK_RET(msgctl(id, IPC_STAT, &ds), 0);
	return ds;
}

static void test_get(void)
{
	key_t key = test_key(1);
	struct msqid_ds ds;
	int id, id2;

	msgctl(msgget(key, 0), IPC_RMID, NULL);
	CHECK_ERR(msgget(key, 0600), ENOENT);
	id = track(CHECK_OK(msgget(key, IPC_CREAT | IPC_EXCL | 0620)));
	CHECK_ERR(msgget(key, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	CHECK_RET(msgget(key, IPC_CREAT | 0600), id);
	CHECK_RET(msgget(key, 0), id);
	id2 = track(CHECK_OK(msgget(IPC_PRIVATE, 0600)));
	CHECK(id2 != id, "IPC_PRIVATE gave the keyed id");
	ds = stat_of(id);
	CHECK(ds.msg_perm.__key == key && (ds.msg_perm.mode & 0777) == 0620 &&
		      ds.msg_qbytes == 16384 && ds.msg_qnum == 0 && ds.msg_cbytes == 0 &&
		      ds.msg_stime == 0 && ds.msg_rtime == 0 && ds.msg_ctime > 0 &&
		      ds.msg_lspid == 0 && ds.msg_lrpid == 0 && ds.msg_perm.uid == geteuid(),
	      "IPC_STAT: key %x mode %o qbytes %lu qnum %lu ctime %ld", ds.msg_perm.__key,
	      ds.msg_perm.mode, (unsigned long)ds.msg_qbytes, (unsigned long)ds.msg_qnum,
	      (long)ds.msg_ctime);
	CHECK_RET(msgctl(id, IPC_RMID, NULL), 0);
	CHECK_ERR(msgget(key, 0), ENOENT);
	CHECK_ERR(msgctl(id, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(msgctl(-1, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(msgctl(id2, 999, &ds), EINVAL);
	CHECK_ERR(msgctl(id2, IPC_STAT, (void *)8), EFAULT);
	CHECK_RET(msgctl(id2, IPC_RMID, NULL), 0);
}

static void test_send_receive(void)
{
	int id = track(CHECK_OK(msgget(IPC_PRIVATE, 0600)));
	struct msqid_ds ds;
	struct msg m;

	CHECK_RET(snd(id, 3, "three", 5, 0), 0);
	CHECK_RET(snd(id, 1, "one", 3, 0), 0);
	CHECK_RET(snd(id, 2, "two", 3, 0), 0);
	CHECK_RET(snd(id, 1, "uno", 3, 0), 0);
	CHECK_RET(snd(id, 5, "", 0, 0), 0);
	ds = stat_of(id);
	CHECK(ds.msg_qnum == 5 && ds.msg_cbytes == 14 && ds.msg_lspid == getpid() &&
		      ds.msg_stime > 0,
	      "after sends: qnum %lu cbytes %lu lspid %d", (unsigned long)ds.msg_qnum,
	      (unsigned long)ds.msg_cbytes, ds.msg_lspid);

	/* E2BIG leaves the message; MSG_NOERROR truncates it. */
	CHECK_ERR(rcv(id, &m, 2, 0, 0), E2BIG);
	CHECK_RET(stat_of(id).msg_qnum, 5);
	/* MSG_COPY: by position, the queue unchanged. */
	CHECK_RET(rcv(id, &m, 100, 1, MSG_COPY | IPC_NOWAIT), 3);
	CHECK(m.mtype == 1 && !strcmp(m.text, "one"), "MSG_COPY 1: %ld %s", m.mtype, m.text);
	CHECK_ERR(rcv(id, &m, 100, 9, MSG_COPY | IPC_NOWAIT), ENOMSG);
	CHECK_ERR(rcv(id, &m, 100, 1, MSG_COPY), EINVAL);
	CHECK_ERR(rcv(id, &m, 100, 1, MSG_COPY | MSG_EXCEPT | IPC_NOWAIT), EINVAL);
	CHECK_RET(stat_of(id).msg_qnum, 5);

	CHECK_RET(rcv(id, &m, 2, 0, MSG_NOERROR), 2);
	CHECK(m.mtype == 3 && !strcmp(m.text, "th"), "truncated: %ld %s", m.mtype, m.text);
	/* msgtyp > 0: the first of that type. */
	CHECK_RET(rcv(id, &m, 100, 2, 0), 3);
	CHECK(m.mtype == 2 && !strcmp(m.text, "two"), "type 2: %ld %s", m.mtype, m.text);
	/* MSG_EXCEPT: the first of another type. */
	CHECK_RET(rcv(id, &m, 100, 1, MSG_EXCEPT), 0);
	CHECK(m.mtype == 5, "except 1: %ld", m.mtype);
	/* msgtyp < 0: the first of the lowest type <= |msgtyp|. */
	CHECK_RET(snd(id, 4, "four", 4, 0), 0);
	CHECK_RET(rcv(id, &m, 100, -4, 0), 3);
	CHECK(m.mtype == 1 && !strcmp(m.text, "one"), "type <= 4: %ld %s", m.mtype, m.text);
	CHECK_ERR(rcv(id, &m, 100, 2, IPC_NOWAIT), ENOMSG);
	CHECK_RET(rcv(id, &m, 100, 0, 0), 3);
	CHECK(!strcmp(m.text, "uno"), "next: %s", m.text);
	CHECK_RET(rcv(id, &m, 100, -9, 0), 4);
	CHECK_ERR(rcv(id, &m, 100, 0, IPC_NOWAIT), ENOMSG);
	ds = stat_of(id);
	CHECK(ds.msg_qnum == 0 && ds.msg_cbytes == 0 && ds.msg_lrpid == getpid() &&
		      ds.msg_rtime > 0,
	      "after receives: qnum %lu cbytes %lu lrpid %d", (unsigned long)ds.msg_qnum,
	      (unsigned long)ds.msg_cbytes, ds.msg_lrpid);

	/* Errors. */
	CHECK_ERR(snd(id, 0, "x", 1, 0), EINVAL);
	CHECK_ERR(snd(id, -1, "x", 1, 0), EINVAL);
	CHECK_ERR(snd(id, 1, "x", 8193, 0), EINVAL);
	CHECK_RET(snd(id, 1, "x", 8192, 0), 0);
	CHECK_ERR(syscall(SYS_msgsnd, id, (void *)8, 1, 0), EFAULT);
	CHECK_ERR(syscall(SYS_msgsnd, id, &m, (size_t)-1, 0), EINVAL);
	CHECK_ERR(syscall(SYS_msgrcv, id, &m, (size_t)-1, 0, 0), EINVAL);
	CHECK_ERR(snd(-1, 1, "x", 1, 0), EINVAL);
	CHECK_ERR(rcv(-1, &m, 1, 0, 0), EINVAL);
	CHECK_RET(msgctl(id, IPC_RMID, NULL), 0);
	CHECK_ERR(snd(id, 1, "x", 1, 0), EINVAL);
}

static void child_receives(void *arg)
{
	int id = *(int *)arg;
	struct msg m;

	CHECK(wait_sleeping(getppid()), "the parent never slept");
	CHECK_RET(rcv(id, &m, 100, 0, 0), 60);
}

static void child_sends(void *arg)
{
	int id = *(int *)arg;

	CHECK(wait_sleeping(getppid()), "the parent never slept");
	CHECK_RET(snd(id, 7, "wake", 4, 0), 0);
}

static void child_signals(void *arg)
{
	CHECK(wait_sleeping(getppid()), "the parent never slept");
	kill(getppid(), SIGUSR1);
}

static void child_removes(void *arg)
{
	int id = *(int *)arg;

	CHECK(wait_sleeping(getppid()), "the parent never slept");
	CHECK_RET(msgctl(id, IPC_RMID, NULL), 0);
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	got_usr1 = 1;
}

static void test_blocking(void)
{
	int id = track(CHECK_OK(msgget(IPC_PRIVATE, 0600))), fd, st;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	char text[60] = "sixty";
	struct msqid_ds ds;
	struct msg m;
	pid_t pid;

	/* A queue of 100 bytes holds one message of 60. */
	ds = stat_of(id);
	ds.msg_qbytes = 100;
	CHECK_RET(msgctl(id, IPC_SET, &ds), 0);
	CHECK_RET(stat_of(id).msg_qbytes, 100);
	CHECK_RET(snd(id, 1, text, sizeof(text), 0), 0);
	CHECK_ERR(snd(id, 1, text, sizeof(text), IPC_NOWAIT), EAGAIN);
	pid = child_spawn(child_receives, &id, &fd);
	CHECK_RET(snd(id, 1, text, sizeof(text), 0), 0);
	st = child_reap(pid, fd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	CHECK_RET(rcv(id, &m, 100, 0, 0), 60);

	/* A receiver sleeps until a message of its type comes. */
	pid = child_spawn(child_sends, &id, &fd);
	CHECK_RET(rcv(id, &m, 100, 7, 0), 4);
	CHECK(!strcmp(m.text, "wake"), "received %s", m.text);
	st = child_reap(pid, fd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);

	/* A handled signal: EINTR even under SA_RESTART. */
	sigaction(SIGUSR1, &sa, NULL);
	got_usr1 = 0;
	pid = child_spawn(child_signals, &id, &fd);
	CHECK_ERR(rcv(id, &m, 100, 0, 0), EINTR);
	st = child_reap(pid, fd);
	CHECK(got_usr1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "handler %d, child status %x",
	      got_usr1, st);

	/* Removal wakes the sleeper with EIDRM. */
	pid = child_spawn(child_removes, &id, &fd);
	CHECK_ERR(rcv(id, &m, 100, 0, 0), EIDRM);
	st = child_reap(pid, fd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
}

static void as_user(void *arg)
{
	int id = *(int *)arg;
	struct msqid_ds ds;
	struct msg m;

	if (setgroups(0, NULL) || setresgid(USER, USER, USER) || setresuid(USER, USER, USER)) {
		CHECK(0, "dropping to uid %d: %s", USER, strerror(errno));
		return;
	}
	/* Owner now, but without CAP_SYS_RESOURCE: no msg_qbytes above msgmnb. */
	CHECK_RET(msgctl(id, IPC_STAT, &ds), 0);
	ds.msg_qbytes = 16385;
	CHECK_ERR(msgctl(id, IPC_SET, &ds), EPERM);
	ds.msg_qbytes = 1000;
	ds.msg_perm.mode = 0200;
	CHECK_RET(msgctl(id, IPC_SET, &ds), 0);
	/* mode 0200 for the owner: write only. */
	CHECK_RET(snd(id, 1, "u", 1, 0), 0);
	CHECK_ERR(rcv(id, &m, 10, 0, IPC_NOWAIT), EACCES);
	CHECK_ERR(msgctl(id, IPC_STAT, &ds), EACCES);
}

static void test_perms(void)
{
	int id = track(CHECK_OK(msgget(IPC_PRIVATE, 0600))), st;
	struct msqid_ds ds;

	ds = stat_of(id);
	ds.msg_perm.uid = USER;
	CHECK_RET(msgctl(id, IPC_SET, &ds), 0);
	st = in_child(as_user, &id);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %x", st);
	ds = stat_of(id);
	CHECK(ds.msg_qbytes == 1000 && ds.msg_perm.mode == 0200 && ds.msg_qnum == 1,
	      "after the user's IPC_SET: qbytes %lu mode %o qnum %lu", (unsigned long)ds.msg_qbytes,
	      ds.msg_perm.mode, (unsigned long)ds.msg_qnum);
	CHECK_RET(msgctl(id, IPC_RMID, NULL), 0);
}

static void test_info(void)
{
	int id = track(CHECK_OK(msgget(IPC_PRIVATE, 0600)));
	struct msginfo mi;
	struct msqid_ds ds;
	char line[512], want[64];
	bool found = false;
	FILE *f;
	long r;

	CHECK_RET(snd(id, 1, "abc", 3, 0), 0);
	memset(&mi, 0, sizeof(mi));
	r = msgctl(0, IPC_INFO, (struct msqid_ds *)&mi);
	CHECK(r >= id % 32768 && mi.msgmax == 8192 && mi.msgmnb == 16384 && mi.msgmni == 32000 &&
		      mi.msgssz == 16,
	      "IPC_INFO %ld: max %d mnb %d mni %d ssz %d", r, mi.msgmax, mi.msgmnb, mi.msgmni,
	      mi.msgssz);
	memset(&mi, 0, sizeof(mi));
	r = msgctl(0, MSG_INFO, (struct msqid_ds *)&mi);
	CHECK(r >= id % 32768 && mi.msgpool >= 1 && mi.msgmap >= 1 && mi.msgtql >= 3,
	      "MSG_INFO %ld: queues %d messages %d bytes %d", r, mi.msgpool, mi.msgmap, mi.msgtql);
	CHECK_RET(msgctl(id % 32768, MSG_STAT, &ds), id);
	CHECK(ds.msg_qnum == 1 && ds.msg_cbytes == 3, "MSG_STAT qnum %lu",
	      (unsigned long)ds.msg_qnum);
	CHECK_RET(msgctl(id % 32768, MSG_STAT_ANY, &ds), id);
	CHECK_ERR(msgctl(32767, MSG_STAT, &ds), EINVAL);

	f = fopen("/proc/sysvipc/msg", "r");
	CHECK(f != NULL, "/proc/sysvipc/msg: %s", strerror(errno));
	if (f) {
		snprintf(want, sizeof(want), " %d ", id);
		if (fgets(line, sizeof(line), f))
			CHECK(strstr(line, "msqid") != NULL, "header: %s", line);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, want) && strstr(line, "  600           3          1 "))
				found = true;
		fclose(f);
		CHECK(found, "id %d not in /proc/sysvipc/msg", id);
	}
	CHECK_RET(msgctl(id, IPC_RMID, NULL), 0);
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
	struct msginfo mi;
	char buf[32];
	int mine = -1;

	if (unshare(CLONE_NEWIPC) < 0 && !in_husk()) {
		printf("skip: limits: unshare(CLONE_NEWIPC): %s\n", strerror(errno));
		return;
	}
	msgctl(0, MSG_INFO, (struct msqid_ds *)&mi);
	snprintf(buf, sizeof(buf), "%d", mi.msgpool + 1);
	CHECK_RET(write_sysctl("msgmni", buf), 0);
	mine = CHECK_OK(msgget(IPC_PRIVATE, 0600));
	CHECK_ERR(msgget(IPC_PRIVATE, 0600), ENOSPC);
	CHECK_RET(write_sysctl("msgmni", "32000"), 0);
	CHECK_RET(write_sysctl("msgmax", "10"), 0);
	CHECK_ERR(snd(mine, 1, "01234567890", 11, 0), EINVAL);
	CHECK_RET(snd(mine, 1, "0123456789", 10, 0), 0);
	CHECK_RET(write_sysctl("msgmax", "8192"), 0);
	msgctl(mine, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	int st;

	main_pid = getpid();
	atexit(cleanup);
	setvbuf(stdout, NULL, _IOLBF, 0);

	test_get();
	test_send_receive();
	test_blocking();
	test_perms();
	test_info();
	st = in_child(limits, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limits child status %x", st);
	return finish();
}
