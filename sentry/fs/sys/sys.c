/* SPDX-License-Identifier: Apache-2.0 */
/* sysfs (sys.h) on the pseudo-filesystem machinery of sentry/fs/proc/pseudo.h. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/proc/pseudo.h"
#include "sentry/fs/sys/sys.h"

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

static const struct pseudo_ent empty_ents[] = {
	{ 0 },
};

static const struct pseudo_ent fs_ents[] = {
	DIR("cgroup", 20, empty_ents),
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

int vfs_mount_sys(struct kernel *k)
{
	struct vfs_fs *fs = sysfs_create(k);
	int err;

	if (!fs)
		return -ENOMEM;
	err = pseudo_fs_mount(k, (struct pseudo_fs *)fs, "sys",
			      MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
	return err == -ENOENT || err == -ENOTDIR || err == -EROFS ? 0 : err;
}
