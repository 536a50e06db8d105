/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process creation for husk exec, waiting for such a process from a non-task thread, and the
 * process list for husk ps.
 *
 * kernel_spawn builds a task and its process (unlinked: pid 0) on the calling thread, then
 * starts the host thread that will own it: that thread changes directory, loads the program
 * (task_exec makes the mm and the platform context, so the context belongs to it, as the
 * ptrace platform wants), and only then links the process into the tree and the pid table,
 * checking under k->tree_lock that pid 1 is not exiting (so that no process escapes the end of
 * the sandbox). The caller waits for that outcome on a struct spawn_result.
 *
 * References: the new task starts with one reference (the host thread's); pid_insert takes
 * the pid table's. The process's reference for control_wait_exit is taken before it can run.
 * Once the host thread has started, the task is its own: it may run, exit, be reaped and be
 * freed before the caller wakes, so the caller never looks at it again (only at the process
 * it holds a reference on).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "runtime/control.h"
#include "sentry/control/control.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/kernel/kernel.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define SPAWN_THREAD_STACK (1u << 20)
#define CAP_ALL ((1ULL << (CAP_LAST_CAP + 1)) - 1)

/* The outcome of a spawn, handed from the new host thread to the caller. */
struct spawn_result {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
	int32_t pid;
};

/* What the new host thread needs; freed by it. */
struct spawn_job {
	struct task *t;
	char **argv, **envp;
	char *cwd;
	struct thread_group *waiter_ref; /* a reference for the caller, or NULL */
	int gate_fd; /* spawn_spec's gate_fd, or -1 */
	struct spawn_result *res; /* the caller's; NULL once reported */
};

static char **strv_dup(const char *const *v)
{
	size_t n = 0;
	char **out;

	while (v[n])
		n++;
	out = calloc(n + 1, sizeof(char *));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[i] = strdup(v[i]);
		if (!out[i]) {
			for (size_t j = 0; j < i; j++)
				free(out[j]);
			free(out);
			return NULL;
		}
	}
	return out;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void job_free(struct spawn_job *j)
{
	strv_free(j->argv);
	strv_free(j->envp);
	free(j->cwd);
	free(j);
}

static void report(struct spawn_job *j, int err, int32_t pid)
{
	struct spawn_result *r = j->res;

	j->res = NULL;
	pthread_mutex_lock(&r->lock);
	r->err = err;
	r->pid = pid;
	r->done = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static const char *env_lookup(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++) {
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	}
	return NULL;
}

/* execvp's search: a name with a slash is a path, else each PATH entry in turn. */
static int exec_search(struct task *t, char **argv, char **envp)
{
	const char *name = argv[0], *path;
	bool saw_eacces = false;
	int ret = -ENOENT;

	if (!*name)
		return -ENOENT;
	if (strchr(name, '/'))
		return task_exec(t, name, argv, envp);
	path = env_lookup(envp, "PATH");
	if (!path)
		path = DEFAULT_PATH;
	while (*path) {
		const char *end = strchrnul(path, ':');
		char full[4096];
		int n;

		if (end == path)
			n = snprintf(full, sizeof(full), "%s", name);
		else
			n = snprintf(full, sizeof(full), "%.*s/%s", (int)(end - path), path, name);
		path = *end ? end + 1 : end;
		if (n < 0 || (size_t)n >= sizeof(full))
			continue;
		ret = task_exec(t, full, argv, envp);
		if (ret == 0)
			return 0;
		if (ret == -EACCES)
			saw_eacces = true;
		if (ret != -ENOENT && ret != -ENOTDIR && ret != -EACCES && ret != -ENAMETOOLONG &&
		    ret != -ELOOP)
			return ret;
	}
	return saw_eacces ? -EACCES : ret;
}

/*
 * Links the loaded process into the tree as a session leader with no parent. Returns its pid,
 * or -ESRCH when pid 1 is gone or exiting, -EAGAIN when no pid is free.
 */
static int32_t link_process(struct task *t)
{
	struct kernel *k = t->k;
	struct thread_group *tg = t->tg, *itg;
	int32_t pid;
	bool ending;

	pthread_mutex_lock(&k->tree_lock);
	itg = k->init ? k->init->tg : NULL;
	if (!itg) {
		pthread_mutex_unlock(&k->tree_lock);
		return -ESRCH;
	}
	pthread_mutex_lock(&itg->lock);
	ending = itg->exiting || itg->state != TG_RUNNING;
	pthread_mutex_unlock(&itg->lock);
	pid = ending ? -ESRCH : pid_container_full(k, tg->container) ? -EAGAIN : pid_alloc(k);
	if (pid < 0) {
		pthread_mutex_unlock(&k->tree_lock);
		return pid;
	}
	t->tid = pid;
	tg->pid = pid;
	tg->ppid = 0;
	tg->parent = NULL;
	tg->pgid = pid;
	tg->sid = pid;
	pid_insert(k, t);
	pthread_mutex_unlock(&k->tree_lock);
	return pid;
}

/*
 * A pod member's init waits for husk start (one byte on its exec.fifo) before it runs, or until
 * it is killed (a delete before start, the end of the sandbox): then task_run ends it at once.
 */
static void wait_gate(struct task *t, int fd)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char byte;

		/* The fifo is the member's, opened O_RDWR: it never reads EOF, so poll a while. */
		if (poll(&p, 1, 100) > 0 && read(fd, &byte, 1) == 1)
			return;
		if (task_fatal_signal_pending(t))
			return;
	}
}

static void *spawn_thread_main(void *arg)
{
	struct spawn_job *j = arg;
	struct task *t = j->t;
	int32_t pid;
	int gate;
	int ret;

	t->thread = pthread_self();
	ret = fs_context_chdir(t, j->cwd);
	if (ret == 0)
		ret = exec_search(t, j->argv, j->envp);
	if (ret < 0) {
		log_info("exec %s in %s: %s", j->argv[0], j->cwd, strerror(-ret));
		report(j, ret, 0);
		goto out_fail;
	}
	/* Counted before it can be seen, so that the end of the sandbox waits for it. */
	pid_task_started(t->k);
	pid = link_process(t);
	if (pid < 0) {
		pid_task_finished(t->k);
		report(j, pid, 0);
		goto out_fail;
	}
	/* With a terminal on stdin (runc's terminal: true, exec -t), the new session leader has
	 * it as its controlling terminal, as runc's process gets its console (TIOCSCTTY). */
	hostfile_acquire_ctty(t, 0);
	gate = j->gate_fd;
	report(j, 0, pid);
	job_free(j);
	if (gate >= 0)
		wait_gate(t, gate);
	task_run(t);
	task_exit_thread(t);
	return NULL;

out_fail:
	if (j->waiter_ref)
		tg_put(j->waiter_ref);
	task_release(t);
	task_put(t);
	job_free(j);
	return NULL;
}

static struct control_guest_defaults guest_defaults;

/* Gives t the container's capability sets, no_new_privs and seccomp filter (d: a member's). */
static int guest_defaults_apply(struct task *t, const struct control_guest_defaults *d)
{
	if (!d)
		d = &guest_defaults;

	if (d->has_caps) {
		t->cred.cap_bounding = d->cap_bounding;
		t->cred.cap_effective = d->cap_effective;
		t->cred.cap_inheritable = d->cap_inheritable;
		t->cred.cap_permitted = d->cap_permitted;
		t->cred.cap_ambient = d->cap_ambient;
	}
	if (d->no_new_privs)
		t->no_new_privs = true;
	return d->seccomp ? seccomp_attach(t, d->seccomp) : 0;
}

int control_set_guest_defaults(const struct control_guest_defaults *d, struct task *t)
{
	guest_defaults = *d;
	if (d->seccomp)
		seccomp_filter_get(d->seccomp);
	return t ? guest_defaults_apply(t, NULL) : 0;
}

/* A task and its (unlinked) process with s's credentials, files and pid 1's limits. */
static struct task *spawn_task(struct kernel *k, const struct spawn_spec *s)
{
	struct control_member *m = s->member;
	struct thread_group *tg, *itg;
	struct task *t;
	int ret;

	tg = tg_alloc(k, NULL);
	t = task_alloc(k);
	if (!tg || !t) {
		if (tg)
			tg_put(tg);
		if (t)
			task_put(t);
		return ERR_PTR(-ENOMEM);
	}
	t->tg = tg; /* takes tg's first reference */
	tg->leader = t;
	list_add_tail(&t->tg_link, &tg->tasks);
	tg->nr_threads = 1;

	pthread_mutex_lock(&k->lock);
	itg = k->init ? k->init->tg : NULL;
	if (itg)
		tg_get(itg);
	pthread_mutex_unlock(&k->lock);
	if (!itg) {
		ret = -ESRCH;
		goto out_put;
	}
	if (m) {
		/* A pod member's process: its limits, its number (inherited by its children). */
		memcpy(tg->rlimits, m->s.rlimits, sizeof(tg->rlimits));
		tg->container = m->num;
		/* With a pid namespace of its own, its init adopts its orphans, as that namespace's
		 * pid 1 would (the init spawn is the member's first process: gate set). */
		if (s->gate && m->s.private_pids)
			tg->subreaper = true;
	} else {
		pthread_mutex_lock(&itg->lock);
		memcpy(tg->rlimits, itg->rlimits, sizeof(tg->rlimits));
		pthread_mutex_unlock(&itg->lock);
	}
	/* As runc exec: the exec's process.oomScoreAdj, else the container's; set as root. */
	tg->oom_score_adj = tg->oom_score_adj_min = s->has_oom_score_adj ? s->oom_score_adj :
						    m			 ? m->s.oom_score_adj :
									   k->oom_score_adj;
	tg_put(itg);

	t->cred.uid = t->cred.euid = t->cred.suid = t->cred.fsuid = s->uid;
	t->cred.gid = t->cred.egid = t->cred.sgid = t->cred.fsgid = s->gid;
	t->cred.ngroups = s->ngroups < 0 ? 0 : s->ngroups > 32 ? 32 : s->ngroups;
	if (t->cred.ngroups)
		memcpy(t->cred.groups, s->groups, sizeof(uint32_t) * (size_t)t->cred.ngroups);
	/* As pid 1 gets them (task_create_init): root has every capability. */
	if (s->uid == 0)
		t->cred.cap_effective = t->cred.cap_permitted = CAP_ALL;
	t->cred.cap_bounding = CAP_ALL;
	strcpy(t->comm, "exec");
	/* config.json's capabilities, noNewPrivileges and seccomp profile, as pid 1 got them. */
	if (guest_defaults_apply(t, m ? &m->s.guest : NULL) < 0) {
		ret = -EINVAL;
		goto out_put;
	}

	t->fdt = fdtable_create();
	/* A member's process starts at its root (vfs_kernel_root on this thread). */
	if (m)
		vfs_setup_root_begin(&m->s.root);
	t->fs = fs_context_create(k);
	if (m)
		vfs_setup_root_end();
	if (!t->fdt || !t->fs) {
		ret = -ENOMEM;
		goto out_put;
	}
	fs_context_set_umask(t->fs, s->umask >= 0 ? (unsigned int)s->umask & 0777 : 022);
	for (int n = 0; n < 3; n++) {
		ret = hostfile_install(t->fdt, s->stdio[n], n);
		if (ret < 0 && ret != -EBADF)
			goto out_put;
		/* A member's terminal is /dev/pts/N of its own tree. */
		if (m && ret == 0)
			hostfile_repath(t, n);
	}
	/* --preserve-fds: given by the caller like stdio, read and written by the sentry. */
	for (int n = 0; n < s->npreserve; n++) {
		ret = hostfile_install(t->fdt, s->preserve[n], 3 + n);
		if (ret < 0 && ret != -EBADF)
			goto out_put;
	}
	return t;

out_put:
	task_release(t);
	task_put(t);
	return ERR_PTR(ret);
}

int kernel_spawn(struct kernel *k, const struct spawn_spec *s)
{
	struct spawn_result r = { .done = false };
	struct thread_group *waiter = NULL;
	struct spawn_job *j;
	pthread_attr_t attr;
	pthread_t th;
	struct task *t;
	int ret;

	if (!s->argv || !s->argv[0] || !s->envp || !s->cwd || s->cwd[0] != '/')
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->argv = strv_dup(s->argv);
	j->envp = strv_dup(s->envp);
	j->cwd = strdup(s->cwd);
	j->gate_fd = s->gate ? s->gate_fd : -1;
	if (!j->argv || !j->envp || !j->cwd) {
		job_free(j);
		return -ENOMEM;
	}
	t = spawn_task(k, s);
	if (IS_ERR(t)) {
		job_free(j);
		return (int)PTR_ERR(t);
	}
	j->t = t;
	if (s->tg_out) {
		waiter = t->tg;
		tg_get(waiter);
		j->waiter_ref = waiter;
	}
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	j->res = &r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, SPAWN_THREAD_STACK);
	ret = -pthread_create(&th, &attr, spawn_thread_main, j);
	pthread_attr_destroy(&attr);
	if (ret < 0) {
		if (j->waiter_ref)
			tg_put(j->waiter_ref);
		task_release(t);
		task_put(t);
		job_free(j);
		goto out;
	}
	pthread_mutex_lock(&r.lock);
	while (!r.done)
		pthread_cond_wait(&r.cond, &r.lock);
	pthread_mutex_unlock(&r.lock);
	ret = r.err;
	if (ret == 0) {
		if (s->pid_out)
			*s->pid_out = r.pid;
		/* The reference taken above; not t->tg: t may be freed by now. */
		if (s->tg_out)
			*s->tg_out = waiter;
	}
out:
	pthread_cond_destroy(&r.cond);
	pthread_mutex_destroy(&r.lock);
	return ret;
}

struct signal_all {
	int sig;
	int count;
	int32_t container; /* only its processes, or -1: every one */
};

static int signal_one(struct thread_group *tg, void *arg)
{
	struct signal_all *a = arg;
	struct linux_siginfo info;

	if (tg->reaped || (a->container >= 0 && tg->container != a->container))
		return 0;
	signal_info_from(&info, a->sig, LINUX_SI_USER, NULL);
	signal_send(tg, NULL, a->sig, &info, SIGSEND_FROM_OUTSIDE);
	a->count++;
	return 0;
}

int control_send_signal(struct kernel *k, int32_t pid, int sig)
{
	/* The sandbox's own container: with no pod members, every process. */
	return control_send_signal_container(k, 0, pid, sig);
}

int control_send_signal_container(struct kernel *k, int32_t num, int32_t pid, int sig)
{
	struct linux_siginfo info;
	struct thread_group *tg;
	int ret;

	if (sig < 1 || sig > LINUX_NSIG)
		return -EINVAL;
	if (pid == -1) {
		struct signal_all a = { .sig = sig, .container = num };

		/* As kill(-1) from outside the sandbox's pid namespace: pid 1 included. */
		pthread_mutex_lock(&k->tree_lock);
		pid_for_each_tg(k, signal_one, &a);
		pthread_mutex_unlock(&k->tree_lock);
		return a.count ? 0 : -ESRCH;
	}
	if (pid <= 0)
		return -ESRCH;
	tg = kernel_find_tg(k, pid);
	if (!tg)
		return -ESRCH;
	/* A member's request reaches its own processes only. */
	if (num > 0 && tg->container != num) {
		tg_put(tg);
		return -ESRCH;
	}
	/* Host and guest signal numbers are the same on x86-64. */
	signal_info_from(&info, sig, LINUX_SI_USER, NULL);
	ret = signal_send(tg, NULL, sig, &info, SIGSEND_FROM_OUTSIDE);
	tg_put(tg);
	return ret;
}

void control_kill_process(struct thread_group *tg)
{
	struct linux_siginfo info;

	/* As kill -KILL from outside the sandbox: the process only, not its children. */
	signal_info_from(&info, LINUX_SIGKILL, LINUX_SI_USER, NULL);
	signal_send(tg, NULL, LINUX_SIGKILL, &info, SIGSEND_FROM_OUTSIDE);
}

static bool tg_ended(void *arg)
{
	struct thread_group *tg = arg;
	bool ended;

	pthread_mutex_lock(&tg->lock);
	ended = tg->state != TG_RUNNING;
	pthread_mutex_unlock(&tg->lock);
	return ended;
}

int control_wait_exit(struct kernel *k, struct thread_group *tg)
{
	struct waitq *wq = &tg->exit_wq;
	struct task *w;
	int status;

	/* task_wait sleeps a task: a bare one (never run, in no tree) stands for this thread. */
	w = task_alloc(k);
	if (w)
		w->tg = tg_alloc(k, NULL);
	if (!w || !w->tg) {
		task_put(w);
		return -ENOMEM;
	}
	while (task_wait(w, &wq, 1, tg_ended, tg, NULL, false) != 0)
		;
	task_put(w);
	pthread_mutex_lock(&tg->lock);
	status = tg->exit_status;
	pthread_mutex_unlock(&tg->lock);
	return status;
}

struct ps_walk {
	struct control_ps_entry *out;
	int n, max;
	int32_t container; /* only its processes */
	uint64_t boot_ns; /* the guest's MONOTONIC at the sentry's start */
};

static int ps_fn(struct thread_group *tg, void *arg)
{
	struct ps_walk *w = arg;
	struct control_ps_entry *e;
	struct cputime times;
	struct task *t;
	uint64_t start;

	if (tg->container != w->container)
		return 0;
	if (w->n >= w->max)
		return 1;
	e = &w->out[w->n++];
	memset(e, 0, sizeof(*e));
	e->pid = tg->pid;
	e->ppid = tg->ppid;
	t = pid_lookup(tg->k, tg->pid);
	if (t) {
		e->uid = t->cred.uid;
		memcpy(e->comm, t->comm, sizeof(e->comm) - 1);
	}
	pthread_mutex_lock(&tg->lock);
	e->state = tg->state == TG_ZOMBIE ? 'Z' : tg->stopped ? 'T' : 'S';
	/* As /proc/PID/stat: on the guest's clock, without the pauses (sentry/time/vtime.h). */
	start = vtime_host_to_guest_mono(tg->start_ns);
	e->start_ns = start > w->boot_ns ? start - w->boot_ns : 0;
	times = cputime_tg_locked(tg);
	e->cpu_ns = times.utime + times.stime;
	pthread_mutex_unlock(&tg->lock);
	return 0;
}

int control_list_processes(struct kernel *k, struct control_ps_entry *out, int max)
{
	/* The sandbox's own container: with no pod members, every process. */
	return control_list_container_processes(k, 0, out, max);
}

int control_list_container_processes(struct kernel *k, int32_t num, struct control_ps_entry *out,
				     int max)
{
	struct ps_walk w = { .out = out,
			     .container = num,
			     .max = max,
			     .boot_ns = vtime_host_to_guest_mono(k->boot_ns) };

	pthread_mutex_lock(&k->tree_lock);
	pid_for_each_tg(k, ps_fn, &w);
	pthread_mutex_unlock(&k->tree_lock);
	return w.n;
}
