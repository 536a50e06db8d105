/* SPDX-License-Identifier: Apache-2.0 */
/*
 * execve(2) and execveat(2): copying argv/envp in from guest memory with Linux's limits,
 * loading the new program into a new mm (the old one stays usable until the point of no
 * return), de-threading, close-on-exec, the reset of signal handlers, and the new credentials
 * (set-id bits and capabilities: cred.h's cred_exec_file, which the loader calls through
 * loader_exec_creds once it knows the program).
 */
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/cred.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/vfs/vfs.h"
#include "sentry/vfs/xattr.h"

/*
 * The fs context of the exec this host thread is running, when task_execve_guest lent the task
 * a private copy for a relative path (the sharing that counts is the task's own context's).
 */
static __thread struct fs_context *exec_real_fs;

/* Linux's check_unsafe_exec: why t's exec may not raise privileges (CRED_UNSAFE_*). */
static unsigned int exec_unsafe(struct task *t)
{
	struct fs_context *fs = exec_real_fs ? exec_real_fs : t->fs;
	unsigned int unsafe = t->no_new_privs ? CRED_UNSAFE_NNP : 0;
	struct task *o;
	int n_fs = 0;

	/* Sharing with the process's own threads is fine: exec ends them. */
	pthread_mutex_lock(&t->tg->lock);
	list_for_each_entry(o, &t->tg->tasks, tg_link) {
		if (o->fs == fs || o == t)
			n_fs++;
	}
	/* A leader that has exited keeps its references until the process is reaped. */
	o = t->tg->leader;
	if (o && o != t && list_empty(&o->tg_link) && o->fs == fs)
		n_fs++;
	pthread_mutex_unlock(&t->tg->lock);
	if (fs_context_users(fs) > n_fs)
		unsafe |= CRED_UNSAFE_SHARE;
	/* The tracer's capability now (Linux: its credentials when it attached). */
	if (__atomic_load_n(&t->ptrace, __ATOMIC_ACQUIRE) & PT_TRACED) {
		pthread_mutex_lock(&t->k->tree_lock);
		if (t->pt && t->pt->tracer && !cred_capable(&t->pt->tracer->cred, CAP_SYS_PTRACE))
			unsafe |= CRED_UNSAFE_PTRACE;
		pthread_mutex_unlock(&t->k->tree_lock);
	}
	return unsafe;
}

int cred_exec_file(struct task *t, struct file *prog, struct cred *out, bool *secure)
{
	struct cred_exec_file f = { 0 };
	struct vfs_attr attr;
	struct vfs_path p;
	uint8_t buf[XATTR_CAPS_SZ_3 + 1];
	ssize_t n;
	int ret;

	ret = file_getattr(prog, &attr);
	if (ret < 0)
		return ret;
	f.mode = attr.mode;
	f.uid = attr.uid;
	f.gid = attr.gid;
	/*
	 * Linux's bprm_fill_uid: the set-id bits count only when the file's owner and group have
	 * ids in the caller's user namespace (else a nested namespace's user would become the
	 * sandbox's root by a set-user-ID-root program).
	 */
	if (!user_ns_kid_mapped(task_user_ns(t), false, f.uid) ||
	    !user_ns_kid_mapped(task_user_ns(t), true, f.gid))
		f.mode &= ~(uint32_t)(S_ISUID | S_ISGID);
	/* On a nosuid mount set-id bits and file capabilities give nothing (mnt_may_suid). */
	if (vfs_file_nosuid(prog))
		f.mode &= ~(uint32_t)(S_ISUID | S_ISGID);
	else if (vfs_file_path(prog, &p) == 0) {
		/* -ENODATA (none), -EOPNOTSUPP (no xattrs here): a file without capabilities. */
		n = vfs_getxattr(t, &p, "security.capability", buf, sizeof(buf));
		vfs_path_put(&p);
		if (n == -ERANGE || n == -E2BIG || n > (ssize_t)XATTR_CAPS_SZ_3)
			return -EINVAL;
		if (n >= 0) {
			ret = cred_parse_file_caps(buf, (size_t)n, &f.caps);
			if (ret == -EINVAL)
				return ret;
		}
	}
	task_cred_sync_root(t);
	return cred_exec_transform(&t->cred, exec_unsafe(t), &f, out, secure);
}

/* The loader asks the kernel for the credentials a program runs with (loader.h). */
__attribute__((constructor)) static void register_exec_creds(void)
{
	loader_exec_creds = cred_exec_file;
}

/* x86-64 user segment selectors, as Linux sets them for a 64-bit process. */
#define USER_CS 0x33
#define USER_SS 0x2b
#define EFLAGS_IF 0x200

#define EXEC_PATH_MAX 4096
/* Linux's MAX_ARG_STRINGS. */
#define MAX_ARG_STRINGS 0x7fffffff

/*
 * Kills every other thread of t's process and waits until they are gone; t then takes over
 * the leader's tid if it was not the leader (Linux's de_thread). Returns 0, or -EAGAIN when the
 * process is exiting or another thread is already exec'ing (t is then being killed).
 */
static int task_dethread(struct task *t)
{
	struct thread_group *tg = t->tg;
	struct kernel *k = t->k;
	struct task *o;
	bool killed;

	pthread_mutex_lock(&tg->lock);
	if (tg->group_exit || (tg->exec_task && tg->exec_task != t)) {
		pthread_mutex_unlock(&tg->lock);
		return -EAGAIN;
	}
	if (tg->nr_threads == 1) {
		pthread_mutex_unlock(&tg->lock);
		return 0;
	}
	tg->exec_task = t;
	tg->exiting = true; /* interrupts their waits, refuses new threads */
	list_for_each_entry(o, &tg->tasks, tg_link) {
		if (o == t)
			continue;
		__atomic_store_n(&o->exiting, true, __ATOMIC_RELEASE);
		task_wake(o);
	}
	/* A leader that already exited waits for the others: it must leave now. */
	pthread_cond_broadcast(&tg->threads_cond);
	while (tg->nr_threads > 1 || (tg->leader != t && !tg->leader_exited))
		pthread_cond_wait(&tg->threads_cond, &tg->lock);
	tg->exec_task = NULL;
	tg->leader_exited = false;
	killed = tg->group_exit;
	if (!killed)
		tg->exiting = false;
	pthread_mutex_unlock(&tg->lock);

	/* Even when killed meanwhile: the last thread must be the leader, which ends the
	 * process (task_exit_thread). */
	if (tg->leader != t) {
		/* The old leader left the pid table on its way out; its tid is now t's. */
		pthread_mutex_lock(&k->tree_lock);
		task_get(t);
		pid_remove(k, t);
		pthread_mutex_lock(&tg->lock);
		t->tid = tg->pid;
		memcpy(t->ns_nr, tg->leader->ns_nr, sizeof(t->ns_nr));
		tg->leader = t;
		pthread_mutex_unlock(&tg->lock);
		pid_insert(k, t);
		pthread_mutex_unlock(&k->tree_lock);
		task_put(t);
	}
	return killed ? -EAGAIN : 0;
}

/* Gives t a sighand of its own if it shares one with another process (CLONE_SIGHAND). */
static int unshare_sighand(struct task *t)
{
	struct sighand *old = t->tg->sighand, *sh;

	if (refcount_read(&old->ref) == 1)
		return 0;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	refcount_init(&sh->ref, 1);
	pthread_mutex_init(&sh->lock, NULL);
	pthread_mutex_lock(&old->lock);
	memcpy(sh->actions, old->actions, sizeof(sh->actions));
	pthread_mutex_unlock(&old->lock);
	pthread_mutex_lock(&t->tg->lock);
	t->tg->sighand = sh;
	pthread_mutex_unlock(&t->tg->lock);
	if (refcount_dec(&old->ref)) {
		pthread_mutex_destroy(&old->lock);
		free(old);
	}
	return 0;
}

/*
 * task_exec of the program at path, named name (loader_load_named: execveat's /dev/fd/N), a
 * script refused when inaccessible.
 */
static int exec_named(struct task *t, const char *path, const char *name, const char *comm,
		      bool inaccessible, char *const argv[], char *const envp[]);

int task_exec(struct task *t, const char *path, char *const argv[], char *const envp[])
{
	return exec_named(t, path, path, NULL, false, argv, envp);
}

static int exec_named(struct task *t, const char *path, const char *name, const char *comm,
		      bool inaccessible, char *const argv[], char *const envp[])
{
	const struct platform_ops *ops = t->k->platform->ops;
	struct sighand *sh;
	struct loader_result res;
	struct platform_ctx *ctx;
	struct mm *old_mm;
	struct fdtable *fdt = NULL;
	struct mm *mm;
	const char *base;
	uint64_t t0 = task_monotonic_ns(), t1, t2, t3;
	int ret;

	mm = mm_create(t->k);
	if (IS_ERR(mm))
		return (int)PTR_ERR(mm);
	t1 = task_monotonic_ns();
	ret = loader_load_named(t, mm, path, name, inaccessible, argv, envp, &res);
	if (ret < 0)
		goto out_put_mm;
	t2 = task_monotonic_ns();
	/* The files table is unshared (Linux's unshare_files) before close-on-exec applies. */
	if (t->fdt) {
		fdt = fdtable_dup(t->fdt);
		if (!fdt) {
			ret = -ENOMEM;
			goto out_put_mm;
		}
	}
	ret = ops->ctx_create(mm->as, &ctx);
	if (ret < 0)
		goto out_put_fdt;
	t3 = task_monotonic_ns();
	ret = task_dethread(t);
	if (ret < 0)
		goto out_destroy_ctx;

	/* Past the point of no return: switch the task over to the new image. The robust
	 * futexes this thread holds are released in the old mm first (Linux's exec_mm_release). */
	if (t->mm)
		futex_exec_cleanup(t);
	cputime_rss_sample(t); /* ru_maxrss covers the image being left */
	cputime_set_ctx(t, ctx);
	if (t->ctx)
		ops->ctx_destroy(t->ctx);
	t->ctx = ctx;
	old_mm = task_set_mm(t, mm);
	if (old_mm)
		mm_put(old_mm);
	if (fdt) {
		fdtable_put(task_set_fdt(t, fdt));
		fdtable_close_on_exec(fdt);
	}
	memset(&t->regs, 0, sizeof(t->regs));
	t->regs.rip = res.entry;
	t->regs.rsp = res.sp;
	t->regs.cs = USER_CS;
	t->regs.ss = USER_SS;
	t->regs.eflags = EFLAGS_IF;
	t->clear_child_tid = 0;
	t->robust_list = t->robust_len = 0;
	t->rseq = t->rseq_len = 0;
	t->altstack_sp = t->altstack_size = 0;
	t->altstack_flags = SS_DISABLE;
	/* The new credentials (cred_exec_file). A process that changed identity or gained
	 * capabilities is not dumpable and forgets its parent-death signal, as in Linux. */
	if (res.cred.euid != res.cred.uid || res.cred.egid != res.cred.gid ||
	    (res.cred.cap_permitted & ~t->cred.cap_permitted))
		t->tg->dumpable = false;
	else
		t->tg->dumpable = true;
	if (res.secure || res.cred.euid != t->cred.euid || res.cred.egid != t->cred.egid)
		t->pdeath_signal = 0;
	t->cred = res.cred;
	if (unshare_sighand(t) < 0)
		log_warn("pid %d: exec: cannot unshare signal handlers", t->tid);
	/* Handled signals revert to the default action across exec; ignored ones stay ignored. */
	sh = t->tg->sighand;
	pthread_mutex_lock(&sh->lock);
	for (int i = 0; i < LINUX_NSIG; i++) {
		if (sh->actions[i].handler > 1)
			memset(&sh->actions[i], 0, sizeof(sh->actions[i]));
	}
	pthread_mutex_unlock(&sh->lock);
	if (!comm)
		comm = path;
	base = strrchr(comm, '/');
	base = base ? base + 1 : comm;
	snprintf(t->comm, sizeof(t->comm), "%s", base);
	pthread_mutex_lock(&t->k->tree_lock);
	t->tg->did_exec = true;
	pthread_mutex_unlock(&t->k->tree_lock);
	/* A vfork parent resumes now. */
	task_vfork_release(t);
	/* Per-step cost of exec (the old mm's put includes destroying its address space). */
	log_debug("timing: exec pid %d: mm_create %llu us, load %llu us, ctx %llu us, "
		  "switch-over %llu us",
		  t->tid, (unsigned long long)(t1 - t0) / 1000,
		  (unsigned long long)(t2 - t1) / 1000, (unsigned long long)(t3 - t2) / 1000,
		  (unsigned long long)(task_monotonic_ns() - t3) / 1000);
	return 0;

out_destroy_ctx:
	ops->ctx_destroy(ctx);
out_put_fdt:
	if (fdt)
		fdtable_put(fdt);
out_put_mm:
	mm_put(mm);
	return ret;
}

/* A NULL-terminated array of strings copied in from the guest. */
struct strv {
	char **v;
	size_t n, cap;
};

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/*
 * Copies the guest array of string pointers at addr (NULL: empty) into s, charging each string
 * and pointer to *budget as Linux does (E2BIG past it, or for a string longer than
 * MAX_ARG_STRLEN). buf is a scratch buffer of LOADER_MAX_ARG_STRLEN bytes.
 */
static int strv_copy_in(struct task *t, uint64_t addr, struct strv *s, uint64_t *budget, char *buf)
{
	s->cap = 8;
	s->v = calloc(s->cap, sizeof(char *));
	if (!s->v)
		return -ENOMEM;
	for (uint64_t i = 0; addr; i++) {
		uint64_t p;
		ssize_t len;

		if (mm_copy_in(t->mm, &p, addr + i * 8, sizeof(p)) != sizeof(p))
			return -EFAULT;
		if (!p)
			break;
		if (i >= MAX_ARG_STRINGS)
			return -E2BIG;
		len = mm_copy_in_string(t->mm, buf, p, LOADER_MAX_ARG_STRLEN);
		if (len == -ENAMETOOLONG)
			return -E2BIG;
		if (len < 0)
			return (int)len;
		if ((uint64_t)len + 1 + sizeof(void *) > *budget)
			return -E2BIG;
		*budget -= (uint64_t)len + 1 + sizeof(void *);
		if (s->n + 1 >= s->cap) {
			char **nv = realloc(s->v, s->cap * 2 * sizeof(char *));

			if (!nv)
				return -ENOMEM;
			s->v = nv;
			s->cap *= 2;
		}
		s->v[s->n] = strndup(buf, (size_t)len);
		if (!s->v[s->n])
			return -ENOMEM;
		s->n++;
		s->v[s->n] = NULL;
		if (task_fatal_signal_pending(t))
			return -ERESTARTNOINTR;
	}
	return 0;
}

/* The target of the magic link at path (/proc/self/fd/N), malloc'd, or NULL. */
static char *fd_target(struct task *t, const char *path)
{
	struct vfs_path p;
	char *buf = malloc(EXEC_PATH_MAX);
	ssize_t n;

	if (!buf)
		return NULL;
	if (vfs_lookup_at(t, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &p) < 0) {
		free(buf);
		return NULL;
	}
	n = vfs_path_readlink(&p, buf, EXEC_PATH_MAX - 1);
	vfs_path_put(&p);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

long task_execve_guest(struct task *t, int dirfd, uint64_t upath, uint64_t uargv, uint64_t uenvp,
		       int flags)
{
	struct strv argv = { 0 }, envp = { 0 };
	struct fs_context *saved_fs = NULL;
	int32_t old_tid = t->tid;
	char *path, *buf = NULL, *name = NULL, *comm = NULL;
	bool inaccessible = false;
	uint64_t budget;
	ssize_t len;
	long ret;

	if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -EINVAL;
	path = malloc(EXEC_PATH_MAX);
	if (!path)
		return -ENOMEM;
	len = mm_copy_in_string(t->mm, path, upath, EXEC_PATH_MAX);
	if (len < 0) {
		ret = len;
		goto out_free;
	}
	/* Linux's bprm->filename: a path relative to a descriptor is named through /dev/fd. */
	if (dirfd != AT_FDCWD && path[0] != '/') {
		int cloexec = fdtable_get_cloexec(t->fdt, dirfd);

		name = malloc(EXEC_PATH_MAX + 32);
		if (!name) {
			ret = -ENOMEM;
			goto out_free;
		}
		if (len == 0)
			snprintf(name, EXEC_PATH_MAX + 32, "/dev/fd/%d", dirfd);
		else
			snprintf(name, EXEC_PATH_MAX + 32, "/dev/fd/%d/%s", dirfd, path);
		inaccessible = cloexec > 0;
	}
	if (len == 0) {
		struct file *f;

		if (!(flags & AT_EMPTY_PATH)) {
			ret = -ENOENT;
			goto out_free;
		}
		/* fexecve(3): the file behind dirfd, reached as Linux names it (/dev/fd/N)
		 * through procfs's magic link; AT_FDCWD is the cwd (a directory: EACCES). */
		if (dirfd == AT_FDCWD) {
			snprintf(path, EXEC_PATH_MAX, "/proc/self/cwd");
		} else {
			f = fdtable_lookup(t->fdt, dirfd);
			if (!f) {
				ret = -EBADF;
				goto out_free;
			}
			file_put(f);
			snprintf(path, EXEC_PATH_MAX, "/proc/self/fd/%d", dirfd);
			/* As Linux, the process is named after the file, not the descriptor. */
			comm = fd_target(t, path);
		}
		dirfd = AT_FDCWD;
	}
	buf = malloc(LOADER_MAX_ARG_STRLEN);
	if (!buf) {
		ret = -ENOMEM;
		goto out_free;
	}
	budget = loader_arg_limit(t->tg->rlimits[RLIMIT_STACK].rlim_cur);
	ret = strv_copy_in(t, uargv, &argv, &budget, buf);
	if (ret == 0)
		ret = strv_copy_in(t, uenvp, &envp, &budget, buf);
	if (ret < 0)
		goto out_free;

	if (flags & AT_SYMLINK_NOFOLLOW) {
		struct vfs_path p;
		struct vfs_attr attr;

		ret = vfs_lookup_at(t, dirfd, path, AT_SYMLINK_NOFOLLOW, &p);
		if (ret < 0)
			goto out_free;
		ret = vfs_path_getattr(&p, &attr);
		vfs_path_put(&p);
		if (ret < 0)
			goto out_free;
		if (S_ISLNK(attr.mode)) {
			ret = -ELOOP;
			goto out_free;
		}
	}
	if (path[0] != '/' && dirfd != AT_FDCWD) {
		/* The loader resolves against the cwd: lend it a private context whose cwd is
		 * dirfd's directory for the duration of the load. */
		struct fs_context *fs = fs_context_copy(t->fs);
		struct file *f = fdtable_lookup(t->fdt, dirfd);

		if (!fs || !f) {
			ret = fs ? -EBADF : -ENOMEM;
			if (fs)
				fs_context_put(fs);
			if (f)
				file_put(f);
			goto out_free;
		}
		saved_fs = task_set_fs(t, fs);
		exec_real_fs = saved_fs;
		ret = fs_context_fchdir(t, f);
		file_put(f);
		if (ret < 0)
			goto out_restore_fs;
	}
	ret = exec_named(t, path, name ? name : path, comm, inaccessible, argv.v, envp.v);
out_restore_fs:
	exec_real_fs = NULL;
	if (saved_fs)
		fs_context_put(task_set_fs(t, saved_fs));
out_free:
	strv_free(&argv);
	strv_free(&envp);
	free(buf);
	free(path);
	free(name);
	free(comm);
	/* PTRACE_EVENT_EXEC or the legacy SIGTRAP of a traced task (ptrace.c). */
	if (ret == 0 && unlikely(__atomic_load_n(&t->ptrace, __ATOMIC_ACQUIRE)))
		ptrace_exec(t, old_tid);
	return ret;
}
