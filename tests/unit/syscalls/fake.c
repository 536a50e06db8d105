/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/mm/mm.h"
#include "sentry/kernel/waitq.h"
#include "sentry/time/vtime.h"
#include "tests/unit/syscalls/fake.h"

/* --- guest memory --- */

static uintptr_t bad_start, bad_end;

void fake_mm_set_bad(const void *addr, size_t len)
{
	bad_start = (uintptr_t)addr;
	bad_end = bad_start + len;
}

/* Bytes of [addr, addr + len) before the first bad byte. */
static size_t good_prefix(uint64_t addr, size_t len)
{
	/* The first page is never mapped, as in a real address space. */
	if (addr < 4096)
		return 0;
	if (bad_end <= addr || bad_start >= addr + len)
		return len;
	return bad_start > addr ? bad_start - addr : 0;
}

ssize_t mm_copy_in(struct mm *mm, void *dst, uint64_t addr, size_t len)
{
	size_t n = good_prefix(addr, len);

	if (len && !n)
		return -EFAULT;
	memcpy(dst, (const void *)(uintptr_t)addr, n);
	return (ssize_t)n;
}

ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	size_t n = good_prefix(addr, len);

	if (len && !n)
		return -EFAULT;
	memcpy((void *)(uintptr_t)addr, src, n);
	return (ssize_t)n;
}

ssize_t mm_copy_in_string(struct mm *mm, char *dst, uint64_t addr, size_t max)
{
	for (size_t i = 0; i < max; i++) {
		if (good_prefix(addr + i, 1) == 0)
			return -EFAULT;
		dst[i] = ((const char *)(uintptr_t)addr)[i];
		if (!dst[i])
			return (ssize_t)i;
	}
	return -ENAMETOOLONG;
}

/* --- kernel and task --- */

void harness_init(struct harness *h, uint32_t uid, uint32_t gid)
{
	struct timespec now;

	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->k.lock, NULL);
	strcpy(h->k.hostname, "sandbox-host");
	strcpy(h->k.domainname, "sandbox.domain");
	clock_gettime(CLOCK_MONOTONIC, &now);
	h->k.boot_ns = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	h->k.next_tid = 2;

	refcount_init(&h->tg.ref, 1);
	pthread_mutex_init(&h->tg.lock, NULL);
	refcount_init(&h->sighand.ref, 1);
	pthread_mutex_init(&h->sighand.lock, NULL);
	h->tg.sighand = &h->sighand;
	h->tg.pid = h->tg.pgid = h->tg.sid = 1;
	for (int i = 0; i < LINUX_RLIM_NLIMITS; i++) {
		h->tg.rlimits[i].rlim_cur = RLIM_INFINITY;
		h->tg.rlimits[i].rlim_max = RLIM_INFINITY;
	}
	h->tg.rlimits[RLIMIT_NOFILE].rlim_cur = 1024;
	h->tg.rlimits[RLIMIT_NOFILE].rlim_max = 4096;

	h->t.k = &h->k;
	h->t.tid = 1;
	h->t.tg = &h->tg;
	h->t.cred = (struct cred){ .uid = uid,
				   .euid = uid,
				   .suid = uid,
				   .fsuid = uid,
				   .gid = gid,
				   .egid = gid,
				   .sgid = gid,
				   .fsgid = gid };
	strcpy(h->t.comm, "test");
	fake_mm_set_bad(NULL, 0);
	fake_vfs_reset();
}

/* --- the fake VFS --- */

#define MAX_NODES 16
#define MAX_FDS 16

struct fake_file {
	struct file f;
	struct vfs_attr attr;
};

static struct vfs_mount the_mount = { .id = FAKE_MNT_ID };
static struct vfs_node nodes[MAX_NODES];
static int nnodes;
static struct fake_file files[MAX_FDS];
static bool fd_used[MAX_FDS];

int fake_lookup_calls, fake_lookup_dirfd, fake_lookup_flags;
char fake_lookup_path[4096];
int fake_refs;
int fake_file_getattr_calls;

static int fake_file_op_getattr(struct file *f, struct vfs_attr *attr)
{
	*attr = container_of(f, struct fake_file, f)->attr;
	return 0;
}

static const struct file_ops nopath_ops = { .getattr = fake_file_op_getattr };
static const struct file_ops opath_ops = { 0 };

void fake_vfs_reset(void)
{
	nnodes = 0;
	memset(fd_used, 0, sizeof(fd_used));
	fake_lookup_calls = fake_lookup_dirfd = fake_lookup_flags = 0;
	fake_lookup_path[0] = '\0';
	fake_refs = 0;
	fake_file_getattr_calls = 0;
}

struct vfs_node *fake_vfs_add(const char *path, const struct vfs_attr *attr)
{
	struct vfs_node *n = &nodes[nnodes++];

	n->path = path;
	n->attr = *attr;
	n->statfs_err = 0;
	return n;
}

void fake_fd_install(int fd, struct vfs_node *node, const struct vfs_attr *attr)
{
	struct fake_file *ff = &files[fd];

	memset(ff, 0, sizeof(*ff));
	refcount_init(&ff->f.ref, 1);
	if (node) {
		ff->f.ops = &opath_ops;
		ff->f.mnt = &the_mount;
		ff->f.node = node;
		ff->f.flags = O_PATH;
	} else {
		ff->f.ops = &nopath_ops;
		ff->attr = *attr;
	}
	fd_used[fd] = true;
}

struct file *fdtable_lookup(struct fdtable *t, int fd)
{
	if (fd < 0 || fd >= MAX_FDS || !fd_used[fd])
		return NULL;
	fake_refs++;
	return &files[fd].f;
}

void file_put(struct file *f)
{
	fake_refs--;
}

int file_getattr(struct file *f, struct vfs_attr *attr)
{
	fake_file_getattr_calls++;
	if (!f->ops->getattr)
		return -EOPNOTSUPP;
	return f->ops->getattr(f, attr);
}

int vfs_lookup_at(struct task *t, int dirfd, const char *path, int at_flags, struct vfs_path *out)
{
	fake_lookup_calls++;
	fake_lookup_dirfd = dirfd;
	fake_lookup_flags = at_flags;
	strcpy(fake_lookup_path, path);
	if (!*path && !(at_flags & AT_EMPTY_PATH))
		return -ENOENT;
	for (int i = 0; i < nnodes; i++) {
		if (!strcmp(nodes[i].path, path)) {
			out->mnt = &the_mount;
			out->node = &nodes[i];
			fake_refs++;
			return 0;
		}
	}
	return -ENOENT;
}

void vfs_path_put(struct vfs_path *p)
{
	fake_refs--;
	p->mnt = NULL;
	p->node = NULL;
}

int vfs_path_getattr(const struct vfs_path *p, struct vfs_attr *attr)
{
	*attr = p->node->attr;
	return 0;
}

int vfs_path_statfs(const struct vfs_path *p, struct linux_statfs *st)
{
	if (p->node->statfs_err)
		return p->node->statfs_err;
	memset(st, 0, sizeof(*st));
	st->f_type = FAKE_STATFS_TYPE;
	st->f_bsize = 4096;
	st->f_namelen = 255;
	return 0;
}

uint64_t vfs_path_mnt_id(const struct vfs_path *p)
{
	return p->mnt->id;
}

/* The guest's clocks without a time page (sentry/time's fallback): the host's. */
int vtime_gettime(int clock, struct timespec *ts)
{
	return clock_gettime(clock, ts) ? -errno : 0;
}

/* No offset (sentry/time/vtime.h): the guest's clocks are the host's. */
struct timespec vtime_guest_to_host_ts(int clock, struct timespec ts)
{
	(void)clock;
	return ts;
}

uint64_t vtime_host_to_guest_mono(uint64_t host_ns)
{
	return host_ns;
}

/* sys_time.c's sleeps: no signal can interrupt a test's task, so a plain host sleep. */
long task_sleep_until(struct task *t, clockid_t clock, const struct timespec *abs)
{
	while (clock_nanosleep(clock, TIMER_ABSTIME, abs, NULL) == EINTR)
		;
	return 0;
}
