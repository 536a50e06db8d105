/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V IPC and POSIX message queues a checkpoint must carry, made, then checked
 * (tests/integration/checkpoint-ipc.sh): a keyed shm segment with a pattern, attached; a second
 * one removed while attached (SHM_DEST); a semaphore set with values, a SEM_UNDO adjustment of a
 * child, a child blocked in semop; a message queue with three messages of three types and a
 * child blocked in msgrcv; a POSIX queue with prioritised messages; and objects made and
 * removed, so that the ids after a restore show the allocation state went on.
 *
 *   ipc_helper once          make everything, check it at once, remove it (runs natively)
 *   ipc_helper wait DIR      make everything, create DIR/ready, wait for DIR/go (the checkpoint
 *                            and restore happen meanwhile), check, write the results to
 *                            DIR/result (its last line: "N passed, M failed"), stay until killed
 *   ipc_helper notify DIR    a POSIX queue with an mq_notify registration (which a checkpoint
 *                            refuses), then DIR/ready, and stay until killed
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checks.h"

#define SEG_SIZE (3 * 4096 + 100)
#define RM_SIZE 8192

static int in_husk; /* wait mode: exact id allocation is checked (a fresh namespace) */

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

struct msgbuf64 {
	long mtype;
	char text[64];
};

struct objs {
	key_t key;
	int shm, shm_rm, sem, msg;
	unsigned char *p, *p_rm;
	struct shmid_ds shm_ds;
	struct semid_ds sem_ds;
	struct msqid_ds msg_ds;
	int shm_probe, sem_probe, msg_probe; /* made and removed: their ids must not come back */
	mqd_t mq;
	char mq_name[64];
	pid_t sem_waiter, msg_waiter, undoer;
	int undo_pipe; /* write end: closing it lets the undoer exit */
	pid_t self;
};

static unsigned char pattern(size_t i, int salt)
{
	return (unsigned char)(i * 7 + 1 + salt);
}

/* Waits (polling, up to ~20 s with growing steps) until semaphore num has want waiters. */
static int wait_ncnt(int sem, int num, int want)
{
	useconds_t step = 1000;

	for (int waited = 0; waited < 20000000; waited += (int)step) {
		if (semctl(sem, num, GETNCNT) == want)
			return 1;
		usleep(step);
		if (step < 100000)
			step *= 2;
	}
	return 0;
}

static void make(struct objs *o)
{
	unsigned short vals[3] = { 5, 0, 32000 };
	struct sembuf up = { .sem_num = 1, .sem_op = 2, .sem_flg = 0 };
	struct mq_attr attr = { .mq_maxmsg = 8, .mq_msgsize = 64 };
	struct msgbuf64 m;
	int pfd[2];

	memset(o, 0, sizeof(*o));
	o->self = getpid();
	o->key = (key_t)(0x48000000 | (getpid() & 0xffffff));

	/* Semaphores: values, an operation of ours (sempid), a SEM_UNDO of a child. */
	o->sem = semget(o->key + 1, 3, IPC_CREAT | IPC_EXCL | 0600);
	if (o->sem < 0)
		die("semget");
	if (semctl(o->sem, 0, SETALL, (union semun){ .array = vals }) < 0)
		die("SETALL");
	if (semop(o->sem, &up, 1) < 0)
		die("semop");
	o->sem_probe = semget(IPC_PRIVATE, 1, 0600);
	if (o->sem_probe < 0 || semctl(o->sem_probe, 0, IPC_RMID) < 0)
		die("sem probe");
	if (pipe(pfd) < 0)
		die("pipe");
	o->undoer = fork();
	if (o->undoer < 0)
		die("fork");
	if (o->undoer == 0) {
		struct sembuf u = { .sem_num = 2, .sem_op = 3, .sem_flg = SEM_UNDO };
		char c;

		close(pfd[1]);
		if (semop(o->sem, &u, 1) < 0)
			_exit(3);
		/* Waits for the parent to close its end; exiting undoes the +3. */
		while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pfd[0]);
	o->undo_pipe = pfd[1];
	while (semctl(o->sem, 2, GETVAL) != 32003)
		usleep(1000);
	/* A child blocked in semop: it must go on waiting after a restore (not see EINTR). */
	o->sem_waiter = fork();
	if (o->sem_waiter < 0)
		die("fork");
	if (o->sem_waiter == 0) {
		close(o->undo_pipe);
		struct sembuf d = { .sem_num = 0, .sem_op = -10, .sem_flg = 0 };

		_exit(semop(o->sem, &d, 1) == 0 ? 0 : 3);
	}
	if (!wait_ncnt(o->sem, 0, 1))
		die("the semop waiter does not wait");

	/* A message queue: three messages of three types, qbytes lowered. */
	o->msg = msgget(o->key + 2, IPC_CREAT | IPC_EXCL | 0620);
	if (o->msg < 0)
		die("msgget");
	const struct {
		long type;
		const char *text;
	} msgs[3] = { { 3, "three" }, { 1, "one" }, { 2, "two" } };
	for (int i = 0; i < 3; i++) {
		m.mtype = msgs[i].type;
		strcpy(m.text, msgs[i].text);
		if (msgsnd(o->msg, &m, strlen(m.text), 0) < 0)
			die("msgsnd");
	}
	if (msgctl(o->msg, IPC_STAT, &o->msg_ds) < 0)
		die("IPC_STAT msg");
	o->msg_ds.msg_qbytes = 4096;
	if (msgctl(o->msg, IPC_SET, &o->msg_ds) < 0)
		die("IPC_SET msg");
	o->msg_probe = msgget(IPC_PRIVATE, 0600);
	if (o->msg_probe < 0 || msgctl(o->msg_probe, IPC_RMID, NULL) < 0)
		die("msg probe");
	/* A child blocked in msgrcv for type 99. */
	o->msg_waiter = fork();
	if (o->msg_waiter < 0)
		die("fork");
	if (o->msg_waiter == 0) {
		struct msgbuf64 r;

		close(o->undo_pipe);
		ssize_t n = msgrcv(o->msg, &r, sizeof(r.text), 99, 0);

		_exit(n == 4 && !memcmp(r.text, "late", 4) ? 0 : 3);
	}

	/* POSIX: four messages, two of one priority (FIFO among them). */
	snprintf(o->mq_name, sizeof(o->mq_name), "/husk-ipc-%d", (int)getpid());
	o->mq = mq_open(o->mq_name, O_RDWR | O_CREAT | O_EXCL, 0640, &attr);
	if (o->mq == (mqd_t)-1)
		die("mq_open");
	if (mq_send(o->mq, "low", 3, 1) < 0 || mq_send(o->mq, "mid", 3, 5) < 0 ||
	    mq_send(o->mq, "high", 4, 9) < 0 || mq_send(o->mq, "mid2", 4, 5) < 0)
		die("mq_send");

	/* shm (after the forks: children would hold attachments): a keyed segment with a pattern;
	 * one removed while attached. */
	o->shm = shmget(o->key, SEG_SIZE, IPC_CREAT | IPC_EXCL | 0640);
	if (o->shm < 0)
		die("shmget");
	o->p = shmat(o->shm, NULL, 0);
	if (o->p == (void *)-1)
		die("shmat");
	for (size_t i = 0; i < SEG_SIZE; i++)
		o->p[i] = pattern(i, 0);
	o->shm_rm = shmget(IPC_PRIVATE, RM_SIZE, 0600);
	if (o->shm_rm < 0)
		die("shmget private");
	o->p_rm = shmat(o->shm_rm, NULL, 0);
	if (o->p_rm == (void *)-1)
		die("shmat private");
	for (size_t i = 0; i < RM_SIZE; i++)
		o->p_rm[i] = pattern(i, 3);
	if (shmctl(o->shm_rm, IPC_RMID, NULL) < 0)
		die("IPC_RMID shm");
	o->shm_probe = shmget(IPC_PRIVATE, 4096, 0600);
	if (o->shm_probe < 0 || shmctl(o->shm_probe, IPC_RMID, NULL) < 0)
		die("shm probe");

	/* What IPC_STAT says now, compared after the restore. */
	if (shmctl(o->shm, IPC_STAT, &o->shm_ds) < 0 ||
	    semctl(o->sem, 0, IPC_STAT, (union semun){ .buf = &o->sem_ds }) < 0 ||
	    msgctl(o->msg, IPC_STAT, &o->msg_ds) < 0)
		die("IPC_STAT");
	/* The msgrcv waiter is asleep before the checkpoint (poll: nothing counts it). */
	usleep(200000);
}

static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * The mappings of the segment of key in /proc/self/maps. Linux's shm_nattch counts VMAs, and so
 * does husk's; husk maps an attachment whose pages are not contiguous in its memory file as
 * several VMAs (sentry/kernel/ipc_shm.c), so nattch is checked against this count.
 */
static unsigned long maps_of(key_t key)
{
	char name[32], line[512];
	unsigned long n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	snprintf(name, sizeof(name), "SYSV%08x", (unsigned)key);
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name))
			n++;
	fclose(f);
	return n;
}

static void verify_shm(struct objs *o)
{
	struct shmid_ds ds;
	unsigned char *q;
	size_t bad = SEG_SIZE;
	int r;

	r = shmctl(o->shm, IPC_STAT, &ds);
	check(r == 0 && ds.shm_perm.__key == o->key && ds.shm_segsz == SEG_SIZE &&
		      (ds.shm_perm.mode & 0777) == 0640 && ds.shm_cpid == o->shm_ds.shm_cpid &&
		      ds.shm_lpid == o->shm_ds.shm_lpid && ds.shm_ctime == o->shm_ds.shm_ctime &&
		      ds.shm_atime == o->shm_ds.shm_atime &&
		      ds.shm_perm.uid == o->shm_ds.shm_perm.uid,
	      "shm: key, size, mode, pids, times", "r %d key %#x size %zu mode %o cpid %d/%d", r,
	      ds.shm_perm.__key, (size_t)ds.shm_segsz, ds.shm_perm.mode, ds.shm_cpid,
	      o->shm_ds.shm_cpid);
	check(r == 0 && ds.shm_nattch >= 1 && ds.shm_nattch == maps_of(o->key),
	      "shm: nattch counts our attachment's mappings", "nattch %lu, mappings %lu",
	      (unsigned long)ds.shm_nattch, maps_of(o->key));
	check(shmget(o->key, 0, 0) == o->shm, "shm: found by its key", "shmget %d",
	      shmget(o->key, 0, 0));
	for (size_t i = 0; i < SEG_SIZE && bad == SEG_SIZE; i++)
		if (o->p[i] != pattern(i, 0))
			bad = i;
	check(bad == SEG_SIZE, "shm: the pattern through the attachment", "byte %zu", bad);
	/* The attachment is the segment: a write through it shows in a new shmat, and back. */
	q = shmat(o->shm, NULL, 0);
	check(q != (void *)-1 && q != o->p, "shm: a second shmat", "%p", (void *)q);
	if (q == (void *)-1)
		return;
	bad = SEG_SIZE;
	for (size_t i = 0; i < SEG_SIZE && bad == SEG_SIZE; i++)
		if (q[i] != pattern(i, 0))
			bad = i;
	check(bad == SEG_SIZE, "shm: the pattern through a new attachment", "byte %zu", bad);
	o->p[5000] = 0xa5;
	q[SEG_SIZE - 1] = 0x5a;
	check(q[5000] == 0xa5 && o->p[SEG_SIZE - 1] == 0x5a,
	      "shm: the old attachment and a new one are the same memory", "%#x %#x", q[5000],
	      o->p[SEG_SIZE - 1]);
	shmctl(o->shm, IPC_STAT, &ds);
	check(ds.shm_nattch >= 2 && ds.shm_nattch == maps_of(o->key),
	      "shm: nattch counts the new attachment's mappings too", "nattch %lu, mappings %lu",
	      (unsigned long)ds.shm_nattch, maps_of(o->key));
	shmdt(q);

	/* The segment removed while attached: still there for its attachment, without a key. */
	r = shmctl(o->shm_rm, IPC_STAT, &ds);
	check(r == 0 && (ds.shm_perm.mode & SHM_DEST) && ds.shm_perm.__key == IPC_PRIVATE &&
		      ds.shm_nattch == 1 && ds.shm_segsz == RM_SIZE,
	      "shm: a removed segment stays while attached (SHM_DEST)", "r %d mode %o nattch %lu",
	      r, ds.shm_perm.mode, (unsigned long)ds.shm_nattch);
	bad = RM_SIZE;
	for (size_t i = 0; i < RM_SIZE && bad == RM_SIZE; i++)
		if (o->p_rm[i] != pattern(i, 3))
			bad = i;
	check(bad == RM_SIZE, "shm: the removed segment's pattern", "byte %zu", bad);
	shmdt(o->p_rm);
	errno = 0;
	check(shmctl(o->shm_rm, IPC_STAT, &ds) < 0 && errno == EINVAL,
	      "shm: the removed segment goes with its last detach", "still there");
}

static void verify_sem(struct objs *o)
{
	unsigned short vals[3] = { 0 };
	struct semid_ds ds;
	struct sembuf up = { .sem_num = 0, .sem_op = 10, .sem_flg = 0 };
	int r;

	r = semctl(o->sem, 0, GETALL, (union semun){ .array = vals });
	check(r == 0 && vals[0] == 5 && vals[1] == 2 && vals[2] == 32003, "sem: values",
	      "r %d %u %u %u", r, vals[0], vals[1], vals[2]);
	r = semctl(o->sem, 0, IPC_STAT, (union semun){ .buf = &ds });
	check(r == 0 && ds.sem_nsems == 3 && ds.sem_otime == o->sem_ds.sem_otime &&
		      ds.sem_ctime == o->sem_ds.sem_ctime && (ds.sem_perm.mode & 0777) == 0600 &&
		      ds.sem_perm.__key == o->key + 1,
	      "sem: nsems, times, mode, key", "r %d nsems %lu", r, (unsigned long)ds.sem_nsems);
	r = semctl(o->sem, 1, GETPID);
	check(r == o->self, "sem: sempid of our operation", "%d, want %d", r, (int)o->self);
	r = semctl(o->sem, 2, GETPID);
	check(r == o->undoer, "sem: sempid of the child's operation", "%d, want %d", r,
	      (int)o->undoer);
	check(wait_ncnt(o->sem, 0, 1), "sem: the blocked semop waits again (GETNCNT 1)", "%d",
	      semctl(o->sem, 0, GETNCNT));
	r = semop(o->sem, &up, 1);
	r = r == 0 ? child_status(o->sem_waiter) : -2;
	check(r == 0, "sem: the blocked semop completes, without EINTR", "status %d", r);
	r = semctl(o->sem, 0, GETVAL);
	check(r == 5, "sem: 5 + 10 - 10", "%d", r);
	/* The SEM_UNDO child exits: its +3 is undone. */
	close(o->undo_pipe);
	r = child_status(o->undoer);
	check(r == 0 && semctl(o->sem, 2, GETVAL) == 32000, "sem: SEM_UNDO applied at exit",
	      "status %d value %d", r, semctl(o->sem, 2, GETVAL));
}

static void verify_msg(struct objs *o)
{
	struct msqid_ds ds;
	struct msgbuf64 m;
	ssize_t n;
	int r;

	r = msgctl(o->msg, IPC_STAT, &ds);
	check(r == 0 && ds.msg_qnum == 3 && ds.msg_cbytes == 11 && ds.msg_qbytes == 4096 &&
		      ds.msg_lspid == o->self && ds.msg_stime == o->msg_ds.msg_stime &&
		      ds.msg_ctime == o->msg_ds.msg_ctime && (ds.msg_perm.mode & 0777) == 0620 &&
		      ds.msg_perm.__key == o->key + 2,
	      "msg: qnum, cbytes, qbytes, lspid, times, mode, key",
	      "r %d qnum %lu cbytes %lu qbytes %lu lspid %d", r, (unsigned long)ds.msg_qnum,
	      (unsigned long)ds.__msg_cbytes, (unsigned long)ds.msg_qbytes, ds.msg_lspid);
	n = msgrcv(o->msg, &m, sizeof(m.text), 2, IPC_NOWAIT);
	check(n == 3 && m.mtype == 2 && !memcmp(m.text, "two", 3), "msg: by type (2)", "n %zd", n);
	n = msgrcv(o->msg, &m, sizeof(m.text), 0, IPC_NOWAIT);
	check(n == 5 && m.mtype == 3 && !memcmp(m.text, "three", 5), "msg: in order (3 first)",
	      "n %zd type %ld", n, m.mtype);
	n = msgrcv(o->msg, &m, sizeof(m.text), 0, IPC_NOWAIT);
	check(n == 3 && m.mtype == 1 && !memcmp(m.text, "one", 3), "msg: in order (1 next)",
	      "n %zd type %ld", n, m.mtype);
	m.mtype = 99;
	memcpy(m.text, "late", 4);
	r = msgsnd(o->msg, &m, 4, 0);
	r = r == 0 ? child_status(o->msg_waiter) : -2;
	check(r == 0, "msg: the blocked msgrcv gets a message sent after the restore", "status %d",
	      r);
}

static void verify_mq(struct objs *o)
{
	static const char *want[4] = { "high", "mid", "mid2", "low" };
	static const unsigned int prios[4] = { 9, 5, 5, 1 };
	struct mq_attr a;
	char buf[64];
	unsigned int prio;
	int r = mq_getattr(o->mq, &a);

	check(r == 0 && a.mq_curmsgs == 4 && a.mq_maxmsg == 8 && a.mq_msgsize == 64,
	      "mq: attributes and 4 messages", "r %d cur %ld max %ld size %ld", r, a.mq_curmsgs,
	      a.mq_maxmsg, a.mq_msgsize);
	for (int i = 0; i < 4; i++) {
		ssize_t n = mq_receive(o->mq, buf, sizeof(buf), &prio);

		check(n == (ssize_t)strlen(want[i]) && !memcmp(buf, want[i], (size_t)n) &&
			      prio == prios[i],
		      want[i], "n %zd prio %u", n, prio);
	}
	/* Found again by its name. */
	mqd_t q2 = mq_open(o->mq_name, O_WRONLY);
	check(q2 != (mqd_t)-1 && mq_send(q2, "x", 1, 0) == 0 && mq_getattr(o->mq, &a) == 0 &&
		      a.mq_curmsgs == 1,
	      "mq: opened by name, the same queue", "curmsgs %ld", a.mq_curmsgs);
	if (q2 != (mqd_t)-1)
		mq_close(q2);
}

/* New objects get ids that neither collide nor reuse the removed probes' ids. */
static void verify_ids(struct objs *o)
{
	int s = shmget(IPC_PRIVATE, 4096, 0600), m = semget(IPC_PRIVATE, 1, 0600),
	    q = msgget(IPC_PRIVATE, 0600);

	check(s >= 0 && s != o->shm && s != o->shm_rm && s != o->shm_probe,
	      "ids: a new shm id is new", "%d (probe %d)", s, o->shm_probe);
	check(m >= 0 && m != o->sem && m != o->sem_probe, "ids: a new semaphore id is new",
	      "%d (probe %d)", m, o->sem_probe);
	check(q >= 0 && q != o->msg && q != o->msg_probe, "ids: a new message queue id is new",
	      "%d (probe %d)", q, o->msg_probe);
	if (in_husk) {
		/* A fresh namespace allocates cyclically: the index after the probe's. */
		check(s % 32768 == o->shm_probe % 32768 + 1 &&
			      m % 32768 == o->sem_probe % 32768 + 1 &&
			      q % 32768 == o->msg_probe % 32768 + 1,
		      "ids: allocation goes on after the saved last index", "%d %d %d", s, m, q);
	}
	shmctl(s, IPC_RMID, NULL);
	semctl(m, 0, IPC_RMID);
	msgctl(q, IPC_RMID, NULL);
}

static void verify(struct objs *o)
{
	verify_shm(o);
	verify_sem(o);
	verify_msg(o);
	verify_mq(o);
	verify_ids(o);
}

static void cleanup(struct objs *o)
{
	shmdt(o->p);
	shmctl(o->shm, IPC_RMID, NULL);
	semctl(o->sem, 0, IPC_RMID);
	msgctl(o->msg, IPC_RMID, NULL);
	mq_close(o->mq);
	mq_unlink(o->mq_name);
}

int main(int argc, char **argv)
{
	struct objs o;
	char path[512];

	out = stdout;
	if (argc == 2 && !strcmp(argv[1], "once")) {
		make(&o);
		verify(&o);
		cleanup(&o);
	} else if (argc == 3 && !strcmp(argv[1], "wait")) {
		int fd;

		in_husk = 1;
		make(&o);
		snprintf(path, sizeof(path), "%s/ready", argv[2]);
		fd = open(path, O_WRONLY | O_CREAT, 0644);
		if (fd < 0)
			die("ready");
		close(fd);
		snprintf(path, sizeof(path), "%s/go", argv[2]);
		while (access(path, F_OK) != 0)
			usleep(20000);
		snprintf(path, sizeof(path), "%s/result.tmp", argv[2]);
		out = fopen(path, "w");
		if (!out)
			die("result");
		verify(&o);
	} else if (argc == 3 && !strcmp(argv[1], "notify")) {
		struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
		mqd_t q = mq_open("/husk-notify", O_RDWR | O_CREAT, 0600, NULL);

		if (q == (mqd_t)-1 || mq_notify(q, &ev) < 0)
			die("mq_notify");
		snprintf(path, sizeof(path), "%s/ready", argv[2]);
		if (close(open(path, O_WRONLY | O_CREAT, 0644)) < 0)
			die("ready");
		for (;;)
			pause();
	} else {
		fprintf(stderr, "usage: ipc_helper once | wait DIR | notify DIR\n");
		return 2;
	}
	fprintf(out, "%d passed, %d failed\n", passed, failed);
	if (out != stdout) {
		char to[512];

		fclose(out);
		snprintf(to, sizeof(to), "%s/result", argv[2]);
		rename(path, to);
		for (;;)
			pause();
	}
	return failed ? 1 : 0;
}
