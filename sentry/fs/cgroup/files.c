/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The interface files of cgroupfs (internal.h's struct cg_file): what each generates when
 * opened and does when written, in Linux's formats, and the table of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/cgroup/internal.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"

static void print_max_u64(FILE *out, uint64_t v)
{
	if (v == UINT64_MAX)
		fputs("max\n", out);
	else
		fprintf(out, "%" PRIu64 "\n", v);
}

static void print_max_i64(FILE *out, int64_t v)
{
	if (v < 0)
		fputs("max\n", out);
	else
		fprintf(out, "%" PRId64 "\n", v);
}

/* Strips surrounding blanks and newlines in place. */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* "max" or a decimal number (with a K/M/G/T suffix when suffix): Linux's memparse. */
static int parse_max(char *buf, bool suffix, uint64_t *v)
{
	char *s = trim(buf), *end;
	unsigned long long n;

	if (!strcmp(s, "max")) {
		*v = UINT64_MAX;
		return 0;
	}
	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (suffix && *end) {
		int shift = 0;

		switch (*end) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		case 't':
		case 'T':
			shift = 40;
			break;
		default:
			return -EINVAL;
		}
		n <<= shift;
		end++;
	}
	if (*end)
		return -EINVAL;
	*v = n;
	return 0;
}

static int gen_controllers(struct kernel *k, struct cgroup *cg, FILE *out)
{
	unsigned int mask;
	bool first = true;

	pthread_mutex_lock(&cgroup_lock);
	mask = cg->parent ? cg->parent->subtree_control : CG_ALL;
	pthread_mutex_unlock(&cgroup_lock);
	for (int i = 0; i < CG_NR; i++) {
		if (!(mask & (1u << i)))
			continue;
		fprintf(out, "%s%s", first ? "" : " ", cgroup_ctrl_names[i]);
		first = false;
	}
	if (!first)
		fputc('\n', out); /* an empty list is an empty file, as Linux's */
	return 0;
}

static int gen_subtree_control(struct kernel *k, struct cgroup *cg, FILE *out)
{
	unsigned int mask;
	bool first = true;

	pthread_mutex_lock(&cgroup_lock);
	mask = cg->subtree_control;
	pthread_mutex_unlock(&cgroup_lock);
	for (int i = 0; i < CG_NR; i++) {
		if (!(mask & (1u << i)))
			continue;
		fprintf(out, "%s%s", first ? "" : " ", cgroup_ctrl_names[i]);
		first = false;
	}
	if (!first)
		fputc('\n', out); /* an empty list is an empty file, as Linux's */
	return 0;
}

/* "+memory -pids": Linux's cgroup_subtree_control_write. */
static int write_subtree_control(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
				 size_t len)
{
	unsigned int enable = 0, disable = 0, avail;
	char *save = NULL, *w;
	struct cgroup *c;
	int procs, ret = 0;

	for (w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		int i;

		for (i = 0; i < CG_NR; i++)
			if (!strcmp(w + 1, cgroup_ctrl_names[i]))
				break;
		if (i == CG_NR || (w[0] != '+' && w[0] != '-'))
			return -EINVAL;
		if (w[0] == '+') {
			enable |= 1u << i;
			disable &= ~(1u << i);
		} else {
			disable |= 1u << i;
			enable &= ~(1u << i);
		}
	}
	pthread_mutex_lock(&k->tree_lock);
	cgroup_count_locked(k, cg, &procs, NULL);
	pthread_mutex_lock(&cgroup_lock);
	avail = cg->parent ? cg->parent->subtree_control : CG_ALL;
	if (cg->removed) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (enable & ~avail) {
		ret = -ENOENT;
		goto out_unlock;
	}
	enable &= ~cg->subtree_control;
	disable &= cg->subtree_control;
	if (disable) {
		list_for_each_entry(c, &cg->children, sibling) {
			if (c->subtree_control & disable) {
				ret = -EBUSY;
				goto out_unlock;
			}
		}
	}
	if (enable && cg->parent) {
		/* No internal processes: only processes in the subtree's leaves (own ones here). */
		int child_procs = 0, p;

		/* cgroup_count_locked takes no cgroup_lock: parents are fixed. */
		list_for_each_entry(c, &cg->children, sibling) {
			cgroup_count_locked(k, c, &p, NULL);
			child_procs += p;
		}
		if (procs > child_procs) {
			ret = -EBUSY;
			goto out_unlock;
		}
	}
	cg->subtree_control = (cg->subtree_control | enable) & ~disable;
out_unlock:
	pthread_mutex_unlock(&cgroup_lock);
	pthread_mutex_unlock(&k->tree_lock);
	return ret;
}

struct pid_list {
	int32_t *v;
	size_t n, cap;
	struct cgroup *cg;
	bool threads;
};

static int collect_fn(struct thread_group *tg, void *arg)
{
	struct pid_list *l = arg;
	struct task *t;

	if (__atomic_load_n(&tg->state, __ATOMIC_RELAXED) != TG_RUNNING ||
	    (l->cg && cgroup_of_tg(tg) != l->cg))
		return 0;
	if (!l->threads) {
		if (l->n < l->cap)
			l->v[l->n++] = tg->pid;
		return 0;
	}
	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(t, &tg->tasks, tg_link) {
		if (l->n < l->cap)
			l->v[l->n++] = t->tid;
	}
	pthread_mutex_unlock(&tg->lock);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int cgroup_print_ids(struct kernel *k, struct cgroup *cg, FILE *out, bool threads)
{
	struct pid_list l = { .cg = cg, .threads = threads };

	pthread_mutex_lock(&k->tree_lock);
	l.cap = (size_t)k->nr_tasks + 1;
	l.v = calloc(l.cap, sizeof(*l.v));
	if (l.v)
		pid_for_each_tg(k, collect_fn, &l);
	pthread_mutex_unlock(&k->tree_lock);
	if (!l.v)
		return -ENOMEM;
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), cmp_pid);
	for (size_t i = 0; i < l.n; i++)
		fprintf(out, "%d\n", l.v[i]);
	free(l.v);
	return 0;
}

static int gen_procs(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return cgroup_print_ids(k, cg, out, false);
}

static int gen_threads(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return cgroup_print_ids(k, cg, out, true);
}

/*
 * Whether t may write the cgroup.procs of cg: Linux checks write access to it (the file is
 * its cgroup's creator's, 0644); root in the sandbox can.
 */
static bool may_write_procs(struct task *t, struct cgroup *cg)
{
	struct vfs_attr a;

	cgroup_file_owner(cg, cgroup_procs_file(), &a);
	return cred_capable(&t->cred, CAP_SYS_ADMIN) ||
	       vfs_permission(&t->cred, &a, VFS_MAY_WRITE) == 0;
}

/* Whether t may move tg into dst: write access to both cgroup.procs (dst's, the common
 * ancestor's). 0 or -EACCES. */
int cgroup_may_move(struct task *t, struct thread_group *tg, struct cgroup *dst)
{
	struct kernel *k = t->k;
	struct cgroup *src, *common;
	int ret = 0;

	pthread_mutex_lock(&k->tree_lock);
	src = cgroup_of_tg(tg);
	cgroup_get(src);
	pthread_mutex_unlock(&k->tree_lock);
	for (common = src; common && !cgroup_is_descendant(dst, common); common = common->parent)
		;
	if (!may_write_procs(t, dst) || (common && !may_write_procs(t, common)))
		ret = -EACCES;
	cgroup_put(src);
	return ret;
}

/* Moves the process of pid (0: t's) into cg: cgroup.procs and cgroup.threads writes. */
static int write_procs(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	char *s = trim(buf), *end;
	struct thread_group *tg;
	struct task *p;
	long pid;
	int ret;

	errno = 0;
	pid = strtol(s, &end, 10);
	if (!*s || *end || errno || pid < 0 || pid > INT32_MAX)
		return -EINVAL;
	p = pid ? kernel_find_task(k, (int32_t)pid) : (task_get(t), t);
	if (!p)
		return -ESRCH;
	tg = p->tg;
	tg_get(tg);
	task_put(p);
	ret = cgroup_may_move(t, tg, cg);
	if (ret == 0)
		ret = cgroup_move(k, tg, cg);
	tg_put(tg);
	return ret;
}

static int write_threads(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	/* Domain cgroups only: a thread moves with its process, as cgroup.procs. */
	return write_procs(k, cg, t, buf, len);
}

static int gen_type(struct kernel *k, struct cgroup *cg, FILE *out)
{
	fputs("domain\n", out);
	return 0;
}

static int write_type(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	/* Threaded cgroups are not kept: only "domain" is accepted. */
	return strcmp(trim(buf), "domain") ? -EOPNOTSUPP : 0;
}

static int gen_events(struct kernel *k, struct cgroup *cg, FILE *out)
{
	int procs;

	pthread_mutex_lock(&k->tree_lock);
	cgroup_count_locked(k, cg, &procs, NULL);
	pthread_mutex_unlock(&k->tree_lock);
	fprintf(out, "populated %d\nfrozen 0\n", procs > 0);
	return 0;
}

static int gen_freeze(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "%d\n", cg->freeze);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int write_freeze(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	char *s = trim(buf);

	if (strcmp(s, "0") && strcmp(s, "1"))
		return -EINVAL;
	pthread_mutex_lock(&cgroup_lock);
	cg->freeze = s[0] == '1';
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int64_t *limit_field(struct cgroup *cg, bool depth)
{
	return depth ? &cg->max_depth : &cg->max_descendants;
}

static int gen_limit(struct cgroup *cg, FILE *out, bool depth)
{
	pthread_mutex_lock(&cgroup_lock);
	print_max_i64(out, *limit_field(cg, depth));
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int write_limit(struct cgroup *cg, char *buf, bool depth)
{
	uint64_t v;
	int r = parse_max(buf, false, &v);

	if (r < 0)
		return r;
	if (v != UINT64_MAX && v > INT32_MAX)
		return -ERANGE;
	pthread_mutex_lock(&cgroup_lock);
	*limit_field(cg, depth) = v == UINT64_MAX ? -1 : (int64_t)v;
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_max_depth(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return gen_limit(cg, out, true);
}

static int write_max_depth(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			   size_t len)
{
	return write_limit(cg, buf, true);
}

static int gen_max_desc(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return gen_limit(cg, out, false);
}

static int write_max_desc(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			  size_t len)
{
	return write_limit(cg, buf, false);
}

int cgroup_count_descendants(struct cgroup *cg)
{
	struct cgroup *c;
	int n = 0;

	list_for_each_entry(c, &cg->children, sibling)
		n += 1 + cgroup_count_descendants(c);
	return n;
}

static int gen_stat(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "nr_descendants %d\nnr_dying_descendants 0\n", cgroup_count_descendants(cg));
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

struct tg_list {
	struct thread_group **v;
	size_t n, cap;
	struct cgroup *cg;
};

static int collect_tg_fn(struct thread_group *tg, void *arg)
{
	struct tg_list *l = arg;

	if (__atomic_load_n(&tg->state, __ATOMIC_RELAXED) != TG_RUNNING ||
	    !cgroup_is_descendant(cgroup_of_tg(tg), l->cg) || l->n >= l->cap)
		return 0;
	tg_get(tg);
	l->v[l->n++] = tg;
	return 0;
}

/* The live processes of cg's subtree, referenced (tg_list_free puts them). -ENOMEM. */
static int tg_list_collect(struct kernel *k, struct cgroup *cg, struct tg_list *l)
{
	*l = (struct tg_list){ .cg = cg };
	pthread_mutex_lock(&k->tree_lock);
	l->cap = (size_t)k->nr_tasks + 1;
	l->v = calloc(l->cap, sizeof(*l->v));
	if (l->v)
		pid_for_each_tg(k, collect_tg_fn, l);
	pthread_mutex_unlock(&k->tree_lock);
	return l->v ? 0 : -ENOMEM;
}

static void tg_list_free(struct tg_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		tg_put(l->v[i]);
	free(l->v);
}

static int write_kill(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	struct tg_list l;
	int ret;

	if (strcmp(trim(buf), "1"))
		return -ERANGE;
	ret = tg_list_collect(k, cg, &l);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < l.n; i++)
		signal_send_tg(l.v[i], 9 /* SIGKILL */, NULL);
	tg_list_free(&l);
	return 0;
}

static int gen_cpu_stat(struct kernel *k, struct cgroup *cg, FILE *out)
{
	uint64_t user = 0, sys = 0;

	if (!cg->parent) {
		struct cputime c = cputime_kernel(k);

		user = c.utime;
		sys = c.stime;
	} else {
		struct tg_list l;
		int ret = tg_list_collect(k, cg, &l);

		if (ret < 0)
			return ret;
		for (size_t i = 0; i < l.n; i++) {
			struct cputime c = cputime_tg(l.v[i]);

			user += c.utime;
			sys += c.stime;
		}
		tg_list_free(&l);
	}
	fprintf(out, "usage_usec %" PRIu64 "\nuser_usec %" PRIu64 "\nsystem_usec %" PRIu64 "\n",
		(user + sys) / 1000, user / 1000, sys / 1000);
	fputs("nr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n", out);
	return 0;
}

/* Resident bytes of the subtree's processes (each address space once). */
static int memory_current(struct kernel *k, struct cgroup *cg, uint64_t *bytes)
{
	struct tg_list l;
	struct mm **mms;
	size_t n = 0;
	int ret = tg_list_collect(k, cg, &l);

	*bytes = 0;
	if (ret < 0)
		return ret;
	mms = calloc(l.n + 1, sizeof(*mms));
	if (!mms) {
		tg_list_free(&l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct task *leader;
		struct mm *mm = NULL;
		bool seen = false;

		pthread_mutex_lock(&k->tree_lock);
		leader = l.v[i]->leader;
		if (leader)
			task_get(leader);
		pthread_mutex_unlock(&k->tree_lock);
		if (leader) {
			mm = task_get_mm(leader);
			task_put(leader);
		}
		if (!mm)
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = mms[j] == mm;
		if (seen) {
			mm_put(mm);
			continue;
		}
		mms[n++] = mm;
		*bytes += mm_rss_pages(mm) * 4096;
	}
	for (size_t j = 0; j < n; j++)
		mm_put(mms[j]);
	free(mms);
	tg_list_free(&l);
	return 0;
}

static int gen_memory_current(struct kernel *k, struct cgroup *cg, FILE *out)
{
	uint64_t b;
	int ret;

	if (!cg->parent) {
		fprintf(out, "%" PRIu64 "\n", memfile_usage(&k->mf));
		return 0;
	}
	ret = memory_current(k, cg, &b);

	if (ret == 0)
		fprintf(out, "%" PRIu64 "\n", b);
	return ret;
}

static int gen_memory_stat(struct kernel *k, struct cgroup *cg, FILE *out)
{
	uint64_t b;
	int ret = memory_current(k, cg, &b);

	if (ret == 0)
		fprintf(out,
			"anon %" PRIu64 "\nfile 0\nkernel 0\nkernel_stack 0\npagetables 0\n"
			"sock 0\nshmem 0\nfile_mapped 0\nfile_dirty 0\nfile_writeback 0\n",
			b);
	return ret;
}

static int gen_memory_events(struct kernel *k, struct cgroup *cg, FILE *out)
{
	struct memfile *mf = &k->mf;

	if (!cg->parent) {
		/* The sandbox's: its memory limit's events (sentry/kernel/oom.c). */
		fprintf(out,
			"low 0\nhigh 0\nmax %" PRIu64 "\noom %" PRIu64 "\noom_kill %" PRIu64
			"\noom_group_kill 0\n",
			__atomic_load_n(&mf->events_max, __ATOMIC_RELAXED),
			__atomic_load_n(&mf->events_oom, __ATOMIC_RELAXED),
			__atomic_load_n(&mf->events_oom_kill, __ATOMIC_RELAXED));
		return 0;
	}
	fputs("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", out);
	return 0;
}

static int gen_memory_peak(struct kernel *k, struct cgroup *cg, FILE *out)
{
	struct memfile *mf = &k->mf;

	memfile_usage(mf); /* updates the peak */
	fprintf(out, "%" PRIu64 "\n", __atomic_load_n(&mf->peak, __ATOMIC_RELAXED));
	return 0;
}

/* The root's memory.max: the sandbox's limit; its swap.max 0 (the sentry has no swap). */
static bool root_mem_value(struct kernel *k, struct cgroup *cg, const char *name, FILE *out)
{
	uint64_t lim;

	if (cg->parent)
		return false;
	if (!strcmp(name, "memory.max")) {
		lim = __atomic_load_n(&k->mf.limit, __ATOMIC_RELAXED);
		print_max_u64(out, lim ? lim : UINT64_MAX);
	} else {
		fputs("0\n", out);
	}
	return true;
}

/* memory.max and friends: bytes, rounded down to pages as Linux's page_counter, or "max". */
static uint64_t *mem_field(struct cgroup *cg, const char *name)
{
	if (!strcmp(name, "memory.max"))
		return &cg->mem_max;
	if (!strcmp(name, "memory.high"))
		return &cg->mem_high;
	if (!strcmp(name, "memory.low"))
		return &cg->mem_low;
	if (!strcmp(name, "memory.min"))
		return &cg->mem_min;
	return &cg->swap_max;
}

#define MEM_FILE(fname, suffix)                                                                   \
	static int gen_##suffix(struct kernel *k, struct cgroup *cg, FILE *out)                   \
	{                                                                                         \
		if (root_mem_value(k, cg, fname, out))                                            \
			return 0;                                                                 \
		pthread_mutex_lock(&cgroup_lock);                                                 \
		print_max_u64(out, *mem_field(cg, fname));                                        \
		pthread_mutex_unlock(&cgroup_lock);                                               \
		return 0;                                                                         \
	}                                                                                         \
	static int write_##suffix(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, \
				  size_t len)                                                     \
	{                                                                                         \
		uint64_t v;                                                                       \
		int r = parse_max(buf, true, &v);                                                 \
                                                                                                  \
		if (r < 0)                                                                        \
			return r;                                                                 \
		if (v != UINT64_MAX)                                                              \
			v &= ~(uint64_t)4095;                                                     \
		pthread_mutex_lock(&cgroup_lock);                                                 \
		*mem_field(cg, fname) = v;                                                        \
		pthread_mutex_unlock(&cgroup_lock);                                               \
		return 0;                                                                         \
	}

MEM_FILE("memory.max", mem_max)
MEM_FILE("memory.high", mem_high)
MEM_FILE("memory.low", mem_low)
MEM_FILE("memory.min", mem_min)
MEM_FILE("memory.swap.max", swap_max)

/* cgroup.pressure (PSI on: 1) and memory.oom.group (kept, not enforced): 0 or 1. */
static int gen_one(struct kernel *k, struct cgroup *cg, FILE *out)
{
	fputs("1\n", out);
	return 0;
}

static int write_one(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	char *s = trim(buf);

	return strcmp(s, "0") && strcmp(s, "1") ? -ERANGE : 0;
}

static int gen_oom_group(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "%d\n", cg->oom_group);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int write_oom_group(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			   size_t len)
{
	char *s = trim(buf);

	if (strcmp(s, "0") && strcmp(s, "1"))
		return -EINVAL;
	pthread_mutex_lock(&cgroup_lock);
	cg->oom_group = s[0] == '1';
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_zero(struct kernel *k, struct cgroup *cg, FILE *out)
{
	fputs("0\n", out);
	return 0;
}

static int gen_pids_current(struct kernel *k, struct cgroup *cg, FILE *out)
{
	int tasks;

	pthread_mutex_lock(&k->tree_lock);
	cgroup_count_locked(k, cg, NULL, &tasks);
	pthread_mutex_unlock(&k->tree_lock);
	fprintf(out, "%d\n", tasks);
	return 0;
}

static int gen_pids_max(struct kernel *k, struct cgroup *cg, FILE *out)
{
	if (!cg->parent) {
		/* The sandbox's pids limit (OCI linux.resources.pids.limit, task_clone.c). */
		int max;

		pthread_mutex_lock(&k->tree_lock);
		max = k->pids_limit;
		pthread_mutex_unlock(&k->tree_lock);
		print_max_i64(out, max > 0 ? max : -1);
		return 0;
	}
	pthread_mutex_lock(&cgroup_lock);
	print_max_i64(out, cg->pids_max);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int write_pids_max(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			  size_t len)
{
	uint64_t v;
	int r = parse_max(buf, false, &v);

	if (r < 0)
		return r;
	if (v != UINT64_MAX && v > INT32_MAX)
		return -EINVAL;
	pthread_mutex_lock(&cgroup_lock);
	cg->pids_max = v == UINT64_MAX ? -1 : (int64_t)v;
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_pids_events(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "max %" PRIu64 "\n", cg->pids_events_max);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_cpu_max(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "%s\n", cg->cpu_max);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

/* "$MAX [$PERIOD]": MAX "max" or a quota of 1000 us or more, PERIOD 1000..1000000 us. */
static int write_cpu_max(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	char quota[24], *save = NULL, *q, *p;
	unsigned long long period, v;
	char *end;

	q = strtok_r(buf, " \t\n", &save);
	p = strtok_r(NULL, " \t\n", &save);
	if (!q || strtok_r(NULL, " \t\n", &save))
		return -EINVAL;
	pthread_mutex_lock(&cgroup_lock);
	period = strtoull(strchr(cg->cpu_max, ' ') + 1, NULL, 10);
	pthread_mutex_unlock(&cgroup_lock);
	if (p) {
		period = strtoull(p, &end, 10);
		if (*end || !*p)
			return -EINVAL;
	}
	if (period < 1000 || period > 1000000)
		return -EINVAL;
	if (strcmp(q, "max")) {
		v = strtoull(q, &end, 10);
		if (*end || !*q || *q == '-')
			return -EINVAL;
		if (v < 1000)
			return -EINVAL;
		snprintf(quota, sizeof(quota), "%llu", v);
	} else {
		snprintf(quota, sizeof(quota), "max");
	}
	pthread_mutex_lock(&cgroup_lock);
	snprintf(cg->cpu_max, sizeof(cg->cpu_max), "%s %llu", quota, period);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_cpu_weight(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "%u\n", cg->cpu_weight);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int parse_weight(char *s, unsigned int *w)
{
	char *end;
	unsigned long v;

	s = trim(s);
	if (!*s || *s == '-')
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (v < 1 || v > 10000)
		return -ERANGE;
	*w = (unsigned int)v;
	return 0;
}

static int write_cpu_weight(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			    size_t len)
{
	unsigned int w;
	int r = parse_weight(buf, &w);

	if (r < 0)
		return r;
	pthread_mutex_lock(&cgroup_lock);
	cg->cpu_weight = w;
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_io_weight(struct kernel *k, struct cgroup *cg, FILE *out)
{
	pthread_mutex_lock(&cgroup_lock);
	fprintf(out, "default %u\n", cg->io_weight);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int write_io_weight(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			   size_t len)
{
	char *s = trim(buf);
	unsigned int w;
	int r;

	if (!strncmp(s, "default", 7))
		s += 7;
	r = parse_weight(s, &w);
	if (r < 0)
		return r;
	pthread_mutex_lock(&cgroup_lock);
	cg->io_weight = w;
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

/* io.max, cpuset.cpus, cpuset.mems: the last value written, kept as it was written. */
static char *str_field(struct cgroup *cg, int which, size_t *size)
{
	switch (which) {
	case 0:
		*size = sizeof(cg->io_max);
		return cg->io_max;
	case 1:
		*size = sizeof(cg->cpuset_cpus);
		return cg->cpuset_cpus;
	default:
		*size = sizeof(cg->cpuset_mems);
		return cg->cpuset_mems;
	}
}

static int gen_str(struct cgroup *cg, int which, FILE *out)
{
	size_t size;
	char *s;

	pthread_mutex_lock(&cgroup_lock);
	s = str_field(cg, which, &size);
	if (*s || which != 0)
		fprintf(out, "%s\n", s);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int write_str(struct cgroup *cg, int which, char *buf)
{
	char *s = trim(buf);
	size_t size;
	char *f;

	if (which != 0) {
		/* A cpu or node list: digits, commas and ranges. */
		for (char *c = s; *c; c++)
			if (!strchr("0123456789,-", *c))
				return -EINVAL;
	}
	pthread_mutex_lock(&cgroup_lock);
	f = str_field(cg, which, &size);
	if (strlen(s) >= size) {
		pthread_mutex_unlock(&cgroup_lock);
		return -E2BIG;
	}
	snprintf(f, size, "%s", s);
	pthread_mutex_unlock(&cgroup_lock);
	return 0;
}

static int gen_io_max(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return gen_str(cg, 0, out);
}

static int write_io_max(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	/* "MAJ:MIN key=value...": a device first. */
	unsigned int maj, min;

	if (sscanf(trim(buf), "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	return write_str(cg, 0, buf);
}

static int gen_cpus(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return gen_str(cg, 1, out);
}

static int write_cpus(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	return write_str(cg, 1, buf);
}

static int gen_mems(struct kernel *k, struct cgroup *cg, FILE *out)
{
	return gen_str(cg, 2, out);
}

static int write_mems(struct kernel *k, struct cgroup *cg, struct task *t, char *buf, size_t len)
{
	return write_str(cg, 2, buf);
}

static int gen_cpus_effective(struct kernel *k, struct cgroup *cg, FILE *out)
{
	unsigned int n = proc_ncpus();

	if (n > 1)
		fprintf(out, "0-%u\n", n - 1);
	else
		fputs("0\n", out);
	return 0;
}

static int gen_mems_effective(struct kernel *k, struct cgroup *cg, FILE *out)
{
	fputs("0\n", out);
	return 0;
}

/* Pressure stall information: nothing stalls on the sentry's accounting (no PSI). */
static int gen_pressure(struct kernel *k, struct cgroup *cg, FILE *out)
{
	fputs("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
	      out);
	return 0;
}

/* Linux's files, sorted by name as a listing shows them. */
const struct cg_file cgroup_files[] = {
	{ "cgroup.controllers", -1, 0444, CGF_BOTH, gen_controllers, NULL },
	{ "cgroup.events", -1, 0444, CGF_CHILD, gen_events, NULL },
	{ "cgroup.freeze", -1, 0644, CGF_CHILD, gen_freeze, write_freeze },
	{ "cgroup.kill", -1, 0200, CGF_CHILD, NULL, write_kill },
	{ "cgroup.max.depth", -1, 0644, CGF_BOTH, gen_max_depth, write_max_depth },
	{ "cgroup.max.descendants", -1, 0644, CGF_BOTH, gen_max_desc, write_max_desc },
	{ "cgroup.pressure", -1, 0644, CGF_BOTH, gen_one, write_one },
	{ "cgroup.procs", -1, 0644, CGF_BOTH, gen_procs, write_procs },
	{ "cgroup.stat", -1, 0444, CGF_BOTH, gen_stat, NULL },
	{ "cgroup.subtree_control", -1, 0644, CGF_BOTH, gen_subtree_control,
	  write_subtree_control },
	{ "cgroup.threads", -1, 0644, CGF_BOTH, gen_threads, write_threads },
	{ "cgroup.type", -1, 0644, CGF_CHILD, gen_type, write_type },
	{ "cpu.max", CG_CPU, 0644, CGF_SANDBOX, gen_cpu_max, write_cpu_max },
	{ "cpu.pressure", -1, 0444, CGF_BOTH, gen_pressure, NULL },
	{ "cpu.stat", -1, 0444, CGF_BOTH, gen_cpu_stat, NULL },
	{ "cpu.weight", CG_CPU, 0644, CGF_CHILD, gen_cpu_weight, write_cpu_weight },
	{ "cpuset.cpus", CG_CPUSET, 0644, CGF_CHILD, gen_cpus, write_cpus },
	{ "cpuset.cpus.effective", CG_CPUSET, 0444, CGF_BOTH, gen_cpus_effective, NULL },
	{ "cpuset.mems", CG_CPUSET, 0644, CGF_CHILD, gen_mems, write_mems },
	{ "cpuset.mems.effective", CG_CPUSET, 0444, CGF_BOTH, gen_mems_effective, NULL },
	{ "io.max", CG_IO, 0644, CGF_CHILD, gen_io_max, write_io_max },
	{ "io.pressure", -1, 0444, CGF_BOTH, gen_pressure, NULL },
	{ "io.weight", CG_IO, 0644, CGF_CHILD, gen_io_weight, write_io_weight },
	{ "memory.current", CG_MEMORY, 0444, CGF_SANDBOX, gen_memory_current, NULL },
	{ "memory.events", CG_MEMORY, 0444, CGF_SANDBOX, gen_memory_events, NULL },
	{ "memory.high", CG_MEMORY, 0644, CGF_CHILD, gen_mem_high, write_mem_high },
	{ "memory.low", CG_MEMORY, 0644, CGF_CHILD, gen_mem_low, write_mem_low },
	{ "memory.max", CG_MEMORY, 0644, CGF_SANDBOX, gen_mem_max, write_mem_max },
	{ "memory.oom.group", CG_MEMORY, 0644, CGF_CHILD, gen_oom_group, write_oom_group },
	{ "memory.peak", CG_MEMORY, 0444, CGF_ROOT, gen_memory_peak, NULL },
	{ "memory.pressure", -1, 0444, CGF_BOTH, gen_pressure, NULL },
	{ "memory.min", CG_MEMORY, 0644, CGF_CHILD, gen_mem_min, write_mem_min },
	{ "memory.stat", CG_MEMORY, 0444, CGF_BOTH, gen_memory_stat, NULL },
	{ "memory.swap.current", CG_MEMORY, 0444, CGF_SANDBOX, gen_zero, NULL },
	{ "memory.swap.max", CG_MEMORY, 0644, CGF_SANDBOX, gen_swap_max, write_swap_max },
	{ "pids.current", CG_PIDS, 0444, CGF_SANDBOX, gen_pids_current, NULL },
	{ "pids.events", CG_PIDS, 0444, CGF_CHILD, gen_pids_events, NULL },
	{ "pids.max", CG_PIDS, 0644, CGF_SANDBOX, gen_pids_max, write_pids_max },
};

bool cgroup_removed(struct cgroup *cg)
{
	bool removed;

	pthread_mutex_lock(&cgroup_lock);
	removed = cg->removed;
	pthread_mutex_unlock(&cgroup_lock);
	return removed;
}

const size_t cgroup_nfiles = ARRAY_SIZE(cgroup_files);
_Static_assert(ARRAY_SIZE(cgroup_files) <= CG_FILES_MAX, "struct cgroup's owner[] is too small");

const struct cg_file *cgroup_procs_file(void)
{
	for (size_t i = 0; i < cgroup_nfiles; i++)
		if (!strcmp(cgroup_files[i].name, "cgroup.procs"))
			return &cgroup_files[i];
	return NULL;
}

/* f's write method in cg: none for the sandbox's figures in the root. */
cgroup_write_fn cgroup_file_writer(struct cgroup *cg, const struct cg_file *f)
{
	return !cg->parent && (f->where & CGF_SANDBOX_ONLY) ? NULL : f->write;
}

/* Whether cg shows file f: the root its CGF_ROOT files, the others theirs when enabled. */
bool cgroup_file_shown(struct cgroup *cg, const struct cg_file *f)
{
	bool shown;

	if (!cg->parent)
		return f->where & CGF_ROOT;
	if (!(f->where & CGF_CHILD))
		return false;
	if (f->ctrl < 0)
		return true;
	pthread_mutex_lock(&cgroup_lock);
	shown = cg->parent->subtree_control & (1u << f->ctrl);
	pthread_mutex_unlock(&cgroup_lock);
	return shown;
}
