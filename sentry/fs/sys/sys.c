/* SPDX-License-Identifier: Apache-2.0 */
/* sysfs (sys.h) on the pseudo-filesystem machinery of sentry/fs/proc/pseudo.h. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/proc/pseudo.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/control/control.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memfile.h"

static int gen_cpu_range(struct pseudo_node *n, FILE *out)
{
	unsigned int ncpu = proc_ncpus();

	if (ncpu > 1)
		fprintf(out, "0-%u\n", ncpu - 1);
	else
		fputs("0\n", out);
	return 0;
}

static int gen_empty_line(struct pseudo_node *n, FILE *out)
{
	fputc('\n', out);
	return 0;
}

static int gen_kernel_max(struct pseudo_node *n, FILE *out)
{
	fputs("8191\n", out);
	return 0;
}

static int gen_thp(struct pseudo_node *n, FILE *out)
{
	fputs("always [madvise] never\n", out);
	return 0;
}

/* --- /sys/fs/cgroup: the sandbox's own cgroup, as a container on a cgroup v2 host sees it --- */

static struct kernel *node_kernel(struct pseudo_node *n)
{
	return pseudo_fs_of(n)->k;
}

static void print_max(FILE *out, uint64_t v)
{
	if (v)
		fprintf(out, "%llu\n", (unsigned long long)v);
	else
		fputs("max\n", out);
}

static int gen_cg_controllers(struct pseudo_node *n, FILE *out)
{
	fputs("memory pids\n", out);
	return 0;
}

/*
 * A pod member's processes read their own container's memory (sentry/control/container.c);
 * weak: sys is also linked without the control server (unit tests).
 */
#pragma weak control_member_memory
#pragma weak pid_container_pids

static bool member_memory(struct pseudo_node *n, uint64_t *usage, uint64_t *limit, uint64_t *kills)
{
	struct task *t = task_current();

	return control_member_memory && t && t->tg && t->tg->container > 0 &&
	       control_member_memory(node_kernel(n), t->tg->container, usage, limit, kills) == 0;
}

/* Whether t's container is a member the control server knows (linked: the sentry). */
static bool member_memory_known(struct task *t)
{
	uint64_t usage, limit, kills;

	return control_member_memory &&
	       control_member_memory(t->k, t->tg->container, &usage, &limit, &kills) == 0;
}

static int gen_cg_memory_max(struct pseudo_node *n, FILE *out)
{
	uint64_t usage, limit, kills;

	if (member_memory(n, &usage, &limit, &kills)) {
		print_max(out, limit);
		return 0;
	}
	print_max(out, __atomic_load_n(&node_kernel(n)->mf.limit, __ATOMIC_RELAXED));
	return 0;
}

static int gen_cg_memory_current(struct pseudo_node *n, FILE *out)
{
	uint64_t usage, limit, kills;

	if (member_memory(n, &usage, &limit, &kills)) {
		fprintf(out, "%llu\n", (unsigned long long)usage);
		return 0;
	}
	fprintf(out, "%llu\n", (unsigned long long)memfile_usage(&node_kernel(n)->mf));
	return 0;
}

static int gen_cg_memory_peak(struct pseudo_node *n, FILE *out)
{
	struct memfile *mf = &node_kernel(n)->mf;

	memfile_usage(mf); /* updates the peak */
	fprintf(out, "%llu\n", (unsigned long long)__atomic_load_n(&mf->peak, __ATOMIC_RELAXED));
	return 0;
}

static int gen_cg_memory_events(struct pseudo_node *n, FILE *out)
{
	struct memfile *mf = &node_kernel(n)->mf;
	uint64_t usage, limit, kills;

	if (member_memory(n, &usage, &limit, &kills)) {
		fprintf(out, "low 0\nhigh 0\nmax %llu\noom %llu\noom_kill %llu\noom_group_kill 0\n",
			(unsigned long long)kills, (unsigned long long)kills,
			(unsigned long long)kills);
		return 0;
	}
	fprintf(out, "low 0\nhigh 0\nmax %llu\noom %llu\noom_kill %llu\noom_group_kill 0\n",
		(unsigned long long)__atomic_load_n(&mf->events_max, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&mf->events_oom, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&mf->events_oom_kill, __ATOMIC_RELAXED));
	return 0;
}

static int gen_zero(struct pseudo_node *n, FILE *out)
{
	fputs("0\n", out);
	return 0;
}

/* A pod member's processes read their own container's pids (sentry/kernel/pid.c). */
static bool member_pids(int *current, int *limit)
{
	struct task *t = task_current();

	if (!pid_container_pids || !t || !t->tg || t->tg->container <= 0 || !member_memory_known(t))
		return false;
	pid_container_pids(t->k, t->tg->container, current, limit);
	return true;
}

static int gen_cg_pids_max(struct pseudo_node *n, FILE *out)
{
	struct kernel *k = node_kernel(n);
	int cur, lim;

	if (member_pids(&cur, &lim)) {
		print_max(out, lim > 0 ? (uint64_t)lim : 0);
		return 0;
	}

	pthread_mutex_lock(&k->tree_lock);
	int max = k->pids_limit;
	pthread_mutex_unlock(&k->tree_lock);
	print_max(out, max > 0 ? (uint64_t)max : 0);
	return 0;
}

static int gen_cg_pids_current(struct pseudo_node *n, FILE *out)
{
	struct kernel *k = node_kernel(n);
	int mcur, mlim;

	if (member_pids(&mcur, &mlim)) {
		fprintf(out, "%d\n", mcur);
		return 0;
	}

	pthread_mutex_lock(&k->tree_lock);
	int cur = k->nr_tasks;
	pthread_mutex_unlock(&k->tree_lock);
	fprintf(out, "%d\n", cur);
	return 0;
}

static int gen_cg_cpu_max(struct pseudo_node *n, FILE *out)
{
	fputs("max 100000\n", out);
	return 0;
}

/* sentry/fs/cgroup's listing (weak, as cgroupfs_create below: unit tests link sys without it). */
#pragma weak cgroup_print_ids

/* The sandbox's own cgroup lists every live process of the sandbox. */
static int gen_cg_procs(struct pseudo_node *n, FILE *out)
{
	return cgroup_print_ids ? cgroup_print_ids(node_kernel(n), NULL, out, false) : 0;
}

#define REG(nm, id_, fn) PSEUDO_REG(nm, id_, fn)
#define DIR(nm, id_, ch) PSEUDO_DIR(nm, id_, ch, 0755)

static const struct pseudo_ent cpu_n_ent = { .name = "cpu", .mode = S_IFDIR | 0755, .id = 30 };

/* cpuN directories (empty): N is the node's fd field, for distinct inode numbers. */
static struct vfs_node *cpu_dyn_lookup(struct pseudo_node *dir, const char *name)
{
	long i;

	if (strncmp(name, "cpu", 3) != 0)
		return ERR_PTR(-ENOENT);
	i = proc_parse_num(name + 3);
	if (i < 0 || i >= (long)proc_ncpus())
		return ERR_PTR(-ENOENT);
	return pseudo_node_new_at(dir, &cpu_n_ent, name, 0, 0, (int)i);
}

static int cpu_dyn_iterate(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e,
			   int64_t base)
{
	unsigned int ncpu = proc_ncpus();

	for (int64_t i = *idx; i >= 0 && i < ncpu; i++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "cpu%d", (int)i);

		if (!e->emit(e, name, (size_t)len, pseudo_ino(&cpu_n_ent, 0, 0, (int)i), DT_DIR,
			     base + i + 1))
			return 0;
		*idx = i + 1;
	}
	return 0;
}

static const struct pseudo_dyn cpu_dyn = { .lookup = cpu_dyn_lookup, .iterate = cpu_dyn_iterate };

static const struct pseudo_ent cpu_ents[] = {
	REG("kernel_max", 10, gen_kernel_max), REG("offline", 11, gen_empty_line),
	REG("online", 12, gen_cpu_range),      REG("possible", 13, gen_cpu_range),
	REG("present", 14, gen_cpu_range),     { 0 },
};

static const struct pseudo_ent system_ents[] = {
	{ .name = "cpu", .mode = S_IFDIR | 0755, .children = cpu_ents, .dyn = &cpu_dyn, .id = 15 },
	{ 0 },
};

static const struct pseudo_ent devices_ents[] = {
	DIR("system", 16, system_ents),
	{ 0 },
};

static const struct pseudo_ent thp_ents[] = {
	REG("enabled", 17, gen_thp),
	{ 0 },
};

static const struct pseudo_ent mm_ents[] = {
	DIR("transparent_hugepage", 18, thp_ents),
	{ 0 },
};

static const struct pseudo_ent kernel_ents[] = {
	DIR("mm", 19, mm_ents),
	{ 0 },
};

static const struct pseudo_ent cgroup_ents[] = {
	REG("cgroup.controllers", 40, gen_cg_controllers),
	REG("cgroup.procs", 41, gen_cg_procs),
	REG("cpu.max", 42, gen_cg_cpu_max),
	REG("memory.current", 43, gen_cg_memory_current),
	REG("memory.events", 44, gen_cg_memory_events),
	REG("memory.max", 45, gen_cg_memory_max),
	REG("memory.peak", 46, gen_cg_memory_peak),
	REG("memory.swap.current", 47, gen_zero),
	REG("memory.swap.max", 48, gen_zero),
	REG("pids.current", 49, gen_cg_pids_current),
	REG("pids.max", 50, gen_cg_pids_max),
	{ 0 },
};

static const struct pseudo_ent fs_ents[] = {
	DIR("cgroup", 20, cgroup_ents),
	{ 0 },
};

static const struct pseudo_ent root_ents[] = {
	DIR("devices", 21, devices_ents),
	DIR("fs", 22, fs_ents),
	DIR("kernel", 23, kernel_ents),
	{ 0 },
};

static const struct pseudo_ent root_ent = {
	.name = "",
	.mode = S_IFDIR | 0555,
	.children = root_ents,
	.id = 1,
};

struct vfs_fs *sysfs_create(struct kernel *k)
{
	struct pseudo_fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	if (pseudo_fs_init(fs, k, "sysfs", SYSFS_MAGIC, &root_ent) < 0) {
		free(fs);
		return NULL;
	}
	return &fs->base;
}

/* The sandbox's cgroup2 filesystem (sentry/fs/cgroup); weak: unit tests link sys without it. */
#pragma weak cgroupfs_create

/*
 * /sys/fs/cgroup as a cgroup2 mount of the sandbox's hierarchy, as mountinfo shows it in a
 * container on a cgroup v2 host; its root cgroup has the sandbox's own figures.
 */
static int mount_cgroup2(struct kernel *k)
{
	struct vfs_mount_label *l;
	struct vfs_fs *fs;
	int err;

	if (!cgroupfs_create)
		return 0;
	fs = cgroupfs_create(k);
	if (!fs)
		return -ENOMEM;
	err = vfs_mount_at(k, "/sys/fs/cgroup", fs, MS_NOSUID | MS_NODEV | MS_NOEXEC);
	vfs_fs_put(fs);
	if (err < 0)
		return err;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->source = strdup("cgroup2");
	l->fstype = strdup("cgroup2");
	l->atime = strdup("relatime");
	l->super_opts = strdup("nsdelegate,memory_recursiveprot");
	l->root = strdup("/");
	if (!l->source || !l->fstype || !l->atime || !l->super_opts || !l->root) {
		vfs_mount_label_free(l);
		return -ENOMEM;
	}
	return vfs_mount_set_label(k, "/sys/fs/cgroup", l, -1);
}

int vfs_mount_sys(struct kernel *k)
{
	struct vfs_fs *fs = sysfs_create(k);
	int err;

	if (!fs)
		return -ENOMEM;
	err = pseudo_fs_mount(k, (struct pseudo_fs *)fs, "sys",
			      MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
	if (err == 0)
		err = mount_cgroup2(k);
	return err == -ENOENT || err == -ENOTDIR || err == -EROFS ? 0 : err;
}
