/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs and sysfs over the harness's one task (pid 1, no mm): self links, per-process files,
 * fd magic links, the sys/ tree, and the sysfs CPU files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/idmap.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "tests/unit/vfs/fake_mm.h"
#include "tests/unit/vfs/tree.h"

static struct tree tr;
static struct harness h;

/* --- the process model procfs reads: the harness's task only --- */

struct task *kernel_find_task(struct kernel *k, int32_t tid)
{
	return tid == h.t.tid ? &h.t : NULL;
}

void task_put(struct task *t)
{
}

/* CPU time (sentry/kernel/cputime.c): the process's recorded totals, nothing live. */
struct cputime cputime_task(struct task *t)
{
	return (struct cputime){ 0, 0 };
}

struct cputime cputime_tg_locked(struct thread_group *tg)
{
	return (struct cputime){ tg->utime_ns, tg->stime_ns };
}

struct cputime cputime_kernel(struct kernel *k)
{
	return (struct cputime){ 0, 0 };
}

void cputime_rss_sample(struct task *t)
{
}

void mm_get(struct mm *mm)
{
}

void mm_put(struct mm *mm)
{
}

int mm_for_each_mapping(struct mm *mm, bool resident,
			int (*fn)(const struct mm_vma_info *vma, void *arg), void *arg)
{
	return 0;
}

/* The OOM killer's side of oom_score_adj (sentry/kernel/oom.c): fixed figures, no rules. */
void tg_get(struct thread_group *tg)
{
}

uint64_t mm_rss_pages(struct mm *mm)
{
	return 0;
}

uint64_t oom_total_pages(struct kernel *k)
{
	return 1000;
}

unsigned long oom_score(uint64_t rss_pages, int oom_score_adj, uint64_t total_pages)
{
	return (unsigned long)(1000 + oom_score_adj) * 2 / 3;
}

int oom_set_score_adj(struct task *writer, struct thread_group *tg, int value, bool legacy)
{
	tg->oom_score_adj = value;
	return 0;
}

/* Mounts fs on the tree's /dir (a directory) and returns nothing; the tree holds the mount. */
static void mount_on_dir(struct vfs_fs *fs)
{
	struct vfs_path at = { .mnt = h.k.root_mnt, .node = &tr.dir->base };
	struct vfs_mount *mnt = vfs_mount_create(fs, fs->root, MS_NOSUID | MS_NODEV | MS_NOEXEC);

	vfs_fs_put(fs);
	cr_assert_not_null(mnt);
	cr_assert_eq(vfs_mount_attach(mnt, &at), 0);
	vfs_mount_put(mnt);
}

static void setup(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, 0);
	h.k.pids = &h; /* so that listings walk pid_for_each_tg (faked: no process) */
	h.tg.state = TG_RUNNING;
	h.tg.nr_threads = 1;
	list_init(&h.tg.tasks);
	list_add_tail(&h.t.tg_link, &h.tg.tasks);
	h.tg.sighand = calloc(1, sizeof(*h.tg.sighand));
	pthread_mutex_init(&h.tg.sighand->lock, NULL);
	snprintf(h.t.comm, sizeof(h.t.comm), "init");
	snprintf(h.k.hostname, sizeof(h.k.hostname), "box");
	task_set_current(&h.t);
}

static void teardown(void)
{
	task_set_current(NULL);
	free(h.tg.sighand);
	harness_fini(&h);
}

TestSuite(procfs, .init = setup, .fini = teardown);
TestSuite(sysfs, .init = setup, .fini = teardown);

/* Reads the file at path into buf (NUL-terminated). Returns its length or -errno. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	struct file *f;
	int64_t pos = 0;
	ssize_t n, len = 0;
	int err = vfs_open(&h.t, AT_FDCWD, path, O_RDONLY, 0, &f);

	if (err < 0)
		return err;
	do {
		struct iovec iov = { buf + len, size - 1 - (size_t)len };

		n = f->ops->read(f, &iov, 1, &pos);
		if (n > 0)
			len += n;
	} while (n > 0 && (size_t)len < size - 1);
	buf[len] = '\0';
	file_put(f);
	return n < 0 ? n : len;
}

static ssize_t rl(const char *path, char *buf, size_t size)
{
	struct vfs_path p;
	ssize_t n;
	int err = vfs_lookup_at(&h.t, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &p);

	if (err < 0)
		return err;
	n = vfs_path_readlink(&p, buf, size - 1);
	vfs_path_put(&p);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

Test(procfs, self_links_name_the_current_task)
{
	char buf[64];

	mount_on_dir(procfs_create(&h.k));
	cr_assert_eq(rl("/dir/self", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "1");
	cr_assert_eq(rl("/dir/thread-self", buf, sizeof(buf)), 8);
	cr_assert_str_eq(buf, "1/task/1");
	task_set_current(NULL);
	cr_assert_eq(rl("/dir/self", buf, sizeof(buf)), -ENOENT, "no task: no self");
}

Test(procfs, stat_and_status_describe_the_process)
{
	char buf[4096];

	mount_on_dir(procfs_create(&h.k));
	cr_assert_gt(slurp("/dir/self/stat", buf, sizeof(buf)), 0);
	cr_assert_eq(strncmp(buf, "1 (init) R 0 1 1 0 -1 ", 22), 0, "stat: %s", buf);
	cr_assert_gt(slurp("/dir/1/status", buf, sizeof(buf)), 0);
	cr_assert_eq(strncmp(buf, "Name:\tinit\nUmask:\t0022\nState:\tR (running)\nTgid:\t1\n", 49),
		     0, "status: %s", buf);
	cr_assert_gt(slurp("/dir/1/task/1/comm", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "init\n");
	cr_assert_eq(slurp("/dir/2/stat", buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(slurp("/dir/01/stat", buf, sizeof(buf)), -ENOENT, "no leading zeros");
}

Test(procfs, fd_links_name_and_reopen_the_open_file)
{
	struct vfs_path p;
	struct vfs_attr a;
	struct file *f, *g;
	char buf[256];
	int fd;

	mount_on_dir(procfs_create(&h.k));
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/etc/passwd", O_RDONLY, 0, &f), 0);
	fd = fdtable_install(h.t.fdt, f, 3, false, 1024);
	cr_assert_eq(fd, 3);
	f->pos = 5;
	cr_assert_eq(rl("/dir/self/fd/3", buf, sizeof(buf)), 11);
	cr_assert_str_eq(buf, "/etc/passwd");
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir/self/fd/3", AT_SYMLINK_NOFOLLOW, &p), 0);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	cr_assert_eq(a.mode, S_IFLNK | 0500, "a read-only file: lr-x");
	vfs_path_put(&p);
	/* Following the magic link lands on the file's own node. */
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir/self/fd/3", O_RDONLY, 0, &g), 0);
	cr_assert_eq(g->node, &tr.passwd->base);
	file_put(g);
	cr_assert_eq(vfs_open_resolve(&h.t, AT_FDCWD, "/dir/self/fd/3", O_RDONLY, 0,
				      VFS_RESOLVE_NO_MAGICLINKS, &g),
		     -ELOOP);
	cr_assert_gt(slurp("/dir/self/fdinfo/3", buf, sizeof(buf)), 0);
	cr_assert_eq(strncmp(buf, "pos:\t5\nflags:\t0100000\n", 22), 0, "fdinfo: %s", buf);
	cr_assert_eq(fdtable_close(h.t.fdt, 3), 0);
	file_put(f);
	cr_assert_eq(rl("/dir/self/fd/3", buf, sizeof(buf)), -ENOENT);
}

Test(procfs, cwd_and_root_are_magic_links_to_the_fs_context)
{
	struct file *f;
	char buf[64];

	mount_on_dir(procfs_create(&h.k));
	cr_assert_eq(fs_context_chdir(&h.t, "/etc"), 0);
	cr_assert_eq(rl("/dir/self/cwd", buf, sizeof(buf)), 4);
	cr_assert_str_eq(buf, "/etc");
	cr_assert_eq(rl("/dir/self/root", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "/");
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir/self/cwd/passwd", O_RDONLY, 0, &f), 0);
	cr_assert_eq(f->node, &tr.passwd->base);
	file_put(f);
	cr_assert_eq(rl("/dir/self/exe", buf, sizeof(buf)), -ENOENT, "no mm: no exe");
}

Test(procfs, sys_tree_reports_the_sandbox)
{
	char buf[256];
	struct file *f;
	int64_t pos = 0;
	struct iovec iov = { "sandbox\n", 8 };

	mount_on_dir(procfs_create(&h.k));
	cr_assert_gt(slurp("/dir/sys/kernel/ostype", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "Linux\n");
	cr_assert_gt(slurp("/dir/sys/kernel/hostname", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "box\n");
	h.t.cred.cap_effective = ~0ULL;
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir/sys/kernel/hostname", O_WRONLY, 0, &f), 0);
	cr_assert_eq(f->ops->write(f, &iov, 1, &pos), 8);
	file_put(f);
	cr_assert_str_eq(h.k.hostname, "sandbox");
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir/version", O_WRONLY, 0, &f), -EACCES);
	cr_assert_eq(slurp("/dir/sys/kernel/random/boot_id", buf, sizeof(buf)), 37);
	cr_assert_eq(buf[14], '4');
	cr_assert_eq(slurp("/dir/sys/kernel/nosuch", buf, sizeof(buf)), -ENOENT);
}

struct lister {
	struct dir_emitter e;
	char names[48][32];
	int n;
};

static bool list_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
		      unsigned int dtype, int64_t next_off)
{
	struct lister *l = (struct lister *)e;

	if (l->n >= 48)
		return false;
	snprintf(l->names[l->n++], 32, "%.*s", (int)namelen, name);
	return true;
}

/* Lists the directory at path into l. */
static void list_dir(const char *path, struct lister *l)
{
	struct file *f;

	memset(l, 0, sizeof(*l));
	l->e.emit = list_emit;
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0, &f), 0, "%s", path);
	cr_assert_eq(f->ops->iterate(f, &l->e), 0);
	file_put(f);
}

static bool listed(const struct lister *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

Test(procfs, listings_show_entries_and_open_fds)
{
	struct lister l;
	struct file *f;

	mount_on_dir(procfs_create(&h.k));
	list_dir("/dir", &l);
	cr_assert_str_eq(l.names[0], ".");
	cr_assert_str_eq(l.names[1], "..");
	cr_assert(listed(&l, "self") && listed(&l, "cpuinfo") && listed(&l, "sys"));
	list_dir("/dir/1", &l);
	cr_assert(listed(&l, "maps") && listed(&l, "fd") && listed(&l, "task") &&
		  listed(&l, "exe"));
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/etc/passwd", O_RDONLY, 0, &f), 0);
	cr_assert_eq(fdtable_install(h.t.fdt, f, 7, false, 1024), 7);
	file_put(f);
	list_dir("/dir/1/fd", &l);
	cr_assert_eq(l.n, 3, "., .. and 7");
	cr_assert_str_eq(l.names[2], "7");
	list_dir("/dir/1/task", &l);
	cr_assert(listed(&l, "1"));
}

Test(sysfs, cpu_files_give_the_online_range)
{
	char buf[64];

	mount_on_dir(sysfs_create(&h.k));
	cr_assert_gt(slurp("/dir/devices/system/cpu/online", buf, sizeof(buf)), 0);
	cr_assert_eq(buf[0], '0');
	cr_assert_eq(buf[strlen(buf) - 1], '\n');
	cr_assert_gt(slurp("/dir/devices/system/cpu/possible", buf, sizeof(buf)), 0);
	cr_assert_gt(slurp("/dir/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "always [madvise] never\n");
	cr_assert_eq(slurp("/dir/devices/system/cpu/cpu99999/online", buf, sizeof(buf)), -ENOENT);
}

/* --- config.json mounts in /proc/PID/mountinfo (issue 15) --- */

TestSuite(mount_label, .init = setup, .fini = teardown);

/* /proc/mounts or mountinfo of the harness's tree, in buf. */
static void gen_mounts(bool info, char *buf, size_t len)
{
	FILE *out = fmemopen(buf, len, "w");

	cr_assert_not_null(out);
	cr_assert_eq(proc_gen_mounts(&h.k, NULL, out, info), 0);
	fclose(out);
}

static struct vfs_mount_label *label(const char *source, const char *fstype, const char *sopts,
				     const char *root)
{
	struct vfs_mount_label *l = calloc(1, sizeof(*l));

	l->source = strdup(source);
	l->fstype = strdup(fstype);
	l->atime = strdup("relatime");
	l->super_opts = strdup(sopts);
	l->root = strdup(root);
	return l;
}

Test(mount_label, mountinfo_shows_the_label_in_mount_order)
{
	char buf[4096];
	struct vfs_fs *fs;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	/* /tmp is mounted after /dev/shm but sits before /dev in a depth-first walk. */
	fs = tmpfs_create(&h.k.mf, 0, 01777, 0, 0);
	cr_assert_eq(vfs_mount_at(&h.k, "/etc", fs, MS_NOSUID), 0);
	vfs_fs_put(fs);
	cr_assert_eq(vfs_mount_set_label(&h.k, "/dev/shm",
					 label("shm", "tmpfs", "size=65536k", "/"),
					 MS_NOSUID | MS_NODEV | MS_NOEXEC),
		     0);
	cr_assert_eq(vfs_mount_set_label(&h.k, "/etc",
					 label("/dev/vda", "ext4", "", "/home/x/data"),
					 MS_RDONLY | MS_NOSUID),
		     0);
	cr_assert_eq(vfs_mount_set_label(&h.k, "/", label("a", "b", "", "/"), 0), -EINVAL,
		     "the root is no config mount");
	gen_mounts(false, buf, sizeof(buf));
	cr_assert_not_null(strstr(buf, "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,"
				       "size=65536k 0 0\n"),
			   "%s", buf);
	cr_assert(strstr(buf, " /dev/shm ") < strstr(buf, " /etc "), "mount order: %s", buf);
	gen_mounts(true, buf, sizeof(buf));
	cr_assert_not_null(strstr(buf,
				  " /home/x/data /etc ro,nosuid,relatime - ext4 /dev/vda rw\n"),
			   "%s", buf);
	cr_assert_not_null(strstr(buf, " / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm "
				       "rw,size=65536k\n"),
			   "%s", buf);
}

Test(mount_label, a_mount_on_a_proc_node_is_crossed_by_later_walks)
{
	struct vfs_fs *fs;
	struct vfs_path p;

	/* procfs on /dir (the tree has no /proc); the tmpfs over its "sys" directory. */
	mount_on_dir(procfs_create(&h.k));
	fs = tmpfs_create(&h.k.mf, 0, 0555, 0, 0);
	cr_assert_eq(vfs_mount_at(&h.k, "/dir/sys", fs, MS_RDONLY), 0);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir/sys", 0, &p), 0);
	cr_assert_eq(p.node, fs->root, "the walk crossed into the mount");
	vfs_path_put(&p);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir/sys/kernel", 0, &p), -ENOENT);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir/stat", 0, &p), 0, "the rest of proc");
	vfs_path_put(&p);
	vfs_fs_put(fs);
}

Test(procfs, uid_map_and_gid_map_show_the_sandbox_mappings)
{
	char buf[256];

	mount_on_dir(procfs_create(&h.k));
	cr_assert_gt(slurp("/dir/self/uid_map", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "         0          0 4294967295\n", "no mapping: the identity");
	cr_assert_eq(idmap_parse("0:100000:65536,65536:1000:1", &h.k.gid_map), 0);
	cr_assert_gt(slurp("/dir/1/task/1/gid_map", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf,
			 "         0     100000      65536\n     65536       1000          1\n");
	cr_assert_gt(slurp("/dir/self/setgroups", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "allow\n");
}

Test(procfs, oom_files_show_the_process_value_on_both_scales)
{
	char buf[64];

	mount_on_dir(procfs_create(&h.k));
	h.tg.oom_score_adj = -500;
	cr_assert_gt(slurp("/dir/self/oom_score_adj", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "-500\n");
	cr_assert_gt(slurp("/dir/self/oom_adj", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "-8\n", "-500 * 17 / 1000");
	cr_assert_gt(slurp("/dir/self/oom_score", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "333\n");
	h.tg.oom_score_adj = 1000;
	cr_assert_gt(slurp("/dir/self/oom_adj", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "15\n");
}

Test(procfs, ns_links_name_one_namespace_per_type)
{
	char a[64], b[64];
	unsigned int n1 = 0, n2 = 0;

	mount_on_dir(procfs_create(&h.k));
	cr_assert_gt(rl("/dir/self/ns/net", a, sizeof(a)), 0);
	cr_assert_eq(sscanf(a, "net:[%u]", &n1), 1, "net: %s", a);
	cr_assert_gt(rl("/dir/1/task/1/ns/uts", b, sizeof(b)), 0);
	cr_assert_eq(sscanf(b, "uts:[%u]", &n2), 1, "uts: %s", b);
	cr_assert_neq(n1, n2);
	cr_assert_geq(n1, 0xF0000000u, "in Linux's range of namespace inodes");
	cr_assert_gt(rl("/dir/self/ns/pid_for_children", b, sizeof(b)), 0);
	cr_assert_gt(rl("/dir/self/ns/pid", a, sizeof(a)), 0);
	cr_assert_str_eq(a, b);
	cr_assert_eq(strncmp(a, "pid:[", 5), 0);
}
