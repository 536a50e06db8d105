/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V shared memory (Linux's ipc/shm.c).
 *
 * A segment is an anonymous tmpfs file of the sandbox's memory file (tmpfs_memfd_create), so
 * its pages are memory-file pages that every mapping shares; fork and copy-on-write need
 * nothing more (shared VMAs are never copy-on-write).
 *
 * Each shmat makes one "attach" file (shm_attach_ops) over the segment and maps it MAP_SHARED.
 * The VMAs hold the references on that file (one per VMA: fork and splits take more, munmap,
 * exit and exec drop them), so:
 *   - shm_nattch is the sum of the attach files' reference counts: the number of VMAs that map
 *     the segment, which is what Linux counts (its shm_open/shm_close run per VMA). It differs
 *     when one attach is several VMAs because its pages are not contiguous in the memory file,
 *     and for an instant while msync holds a reference;
 *   - the attach file's release (the last VMA of that shmat gone, in any process) is the
 *     detach that can end a segment removed with IPC_RMID (SHM_DEST).
 *
 * References: the id table holds one on each segment it lists; each attach holds one on its
 * segment; the segment holds its memfd. Lock order: mm->lock (file_put of an attach file runs
 * under it) -> shm_ids.lock -> tmpfs locks. No mm call is made with shm_ids.lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/list.h"
#include "common/util.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/ipc_priv.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"

#define SHMLBA PAGE_SIZE
#define SHMSEG 4096 /* Linux's SHMSEG (= SHMMNI's default), reported by IPC_INFO */

struct shm_seg {
	struct ipc_kperm perm; /* first: the id table's entry */
	struct refcount ref;
	struct file *memfd; /* the segment's pages */
	uint64_t size;
	/* shm_ids.lock */
	int64_t atime, dtime, ctime;
	int32_t cpid, lpid;
	struct list_head attaches; /* of struct shm_attach */
};

struct shm_attach {
	struct list_head link; /* in seg->attaches (shm_ids.lock) */
	struct shm_seg *seg; /* referenced */
	struct file *file;
	bool held; /* shmat still holds its own reference on file (shm_ids.lock) */
	bool mapped; /* the mmap succeeded (shm_ids.lock) */
};

static struct ipc_ids shm_ids = IPC_IDS_INIT;
static uint64_t shm_tot; /* pages of every listed segment (shm_ids.lock) */

static const struct file_ops shm_attach_ops;
static struct file *attach_new(struct shm_seg *s, int oflags, bool held);

static uint64_t seg_pages(const struct shm_seg *s)
{
	return (s->size + PAGE_SIZE - 1) / PAGE_SIZE;
}

static void seg_put(struct shm_seg *s)
{
	if (!refcount_dec(&s->ref))
		return;
	file_put(s->memfd);
	free(s);
}

static uint64_t seg_nattch(struct shm_seg *s)
{
	struct shm_attach *a;
	uint64_t n = 0;

	list_for_each_entry(a, &s->attaches, link) {
		int c = refcount_read(&a->file->ref) - (a->held ? 1 : 0);

		if (c > 0)
			n += (uint64_t)c;
	}
	return n;
}

/* Takes s out of the table (shm_ids.lock held); the caller then drops the table's reference. */
static void seg_unlist(struct shm_seg *s)
{
	ipc_remove(&shm_ids, &s->perm);
	shm_tot -= seg_pages(s);
}

/* --- the attach file --- */

static int attach_get_pages(struct file *f, uint64_t pgoff, size_t npages, uint64_t *offs,
			    bool write)
{
	struct shm_attach *a = f->priv;
	struct file *m = a->seg->memfd;

	return m->ops->get_pages(m, pgoff, npages, offs, write);
}

static int attach_getattr(struct file *f, struct vfs_attr *attr)
{
	struct shm_attach *a = f->priv;

	return file_getattr(a->seg->memfd, attr);
}

/* The last VMA of one shmat is gone (shmdt, munmap, exit or exec of every mm that had it). */
static void attach_release(struct file *f)
{
	struct shm_attach *a = f->priv;
	struct shm_seg *s = a->seg;
	struct task *cur = task_current();
	bool destroy = false;

	pthread_mutex_lock(&shm_ids.lock);
	list_del(&a->link);
	if (a->mapped) {
		s->dtime = ipc_now();
		if (cur)
			s->lpid = task_pid(cur);
	}
	if ((s->perm.mode & LINUX_SHM_DEST) && list_empty(&s->attaches) && !s->perm.deleted) {
		seg_unlist(s);
		destroy = true;
	}
	pthread_mutex_unlock(&shm_ids.lock);
	if (destroy)
		seg_put(s);
	seg_put(s);
	free(a);
}

/*
 * A new attach file (one reference) on s, in s's list (shm_ids.lock held): held while shmat has
 * yet to map it, else mapped (a restore). NULL: no memory.
 */
static struct file *attach_new(struct shm_seg *s, int oflags, bool held)
{
	struct shm_attach *a = calloc(1, sizeof(*a));
	struct file *f;

	if (!a)
		return NULL;
	f = file_alloc(&shm_attach_ops, oflags, a);
	if (!f) {
		free(a);
		return NULL;
	}
	/* The attach file names the segment's node, so /proc/PID/maps shows it. */
	if (s->memfd->node) {
		vfs_node_get(s->memfd->node);
		f->node = s->memfd->node;
	}
	if (s->memfd->mnt) {
		vfs_mount_get(s->memfd->mnt);
		f->mnt = s->memfd->mnt;
	}
	refcount_inc(&s->ref);
	a->seg = s;
	a->file = f;
	a->held = held;
	a->mapped = !held;
	list_add_tail(&a->link, &s->attaches);
	return f;
}

/* --- shmget --- */

struct shm_get_args {
	int32_t key;
	uint64_t size;
	int flags;
};

static int shm_create(struct task *t, struct ipc_ids *ids, void *arg)
{
	struct shm_get_args *g = arg;
	uint64_t shmmax = ipc_sysctl_u64(SYSCTL_KERNEL_SHMMAX);
	uint64_t shmall = ipc_sysctl_u64(SYSCTL_KERNEL_SHMALL);
	int shmmni = (int)sysctl_get(SYSCTL_KERNEL_SHMMNI, 0);
	uint64_t pages, tot;
	char name[32];
	struct shm_seg *s;
	int r;

	if (g->size < 1 || g->size > shmmax)
		return -EINVAL;
	pages = (g->size + PAGE_SIZE - 1) / PAGE_SIZE;
	if (add_overflow(shm_tot, pages, &tot) || tot > shmall)
		return -ENOSPC;
	/* No huge pages are reserved (as mmap's MAP_HUGETLB). */
	if (g->flags & LINUX_SHM_HUGETLB)
		return -ENOMEM;
	if (ids->in_use >= shmmni)
		return -ENOSPC;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	snprintf(name, sizeof(name), "SYSV%08x", (uint32_t)g->key);
	r = tmpfs_memfd_create(&t->k->mf, name, 0, &s->memfd);
	if (r < 0)
		goto out_free;
	r = vfs_file_truncate(t, s->memfd, (int64_t)g->size);
	if (r < 0)
		goto out_put_memfd;
	refcount_init(&s->ref, 1);
	list_init(&s->attaches);
	ipc_init_perm(&s->perm, &t->cred, g->key, g->flags);
	s->size = g->size;
	s->ctime = ipc_now();
	s->cpid = task_pid(t);
	r = ipc_add(ids, &s->perm, shmmni);
	if (r < 0)
		goto out_put_memfd;
	shm_tot = tot;
	return r;

out_put_memfd:
	file_put(s->memfd);
out_free:
	free(s);
	return r;
}

static int shm_more_checks(struct ipc_kperm *p, void *arg)
{
	struct shm_get_args *g = arg;
	struct shm_seg *s = (struct shm_seg *)p;

	return s->size < g->size ? -EINVAL : 0;
}

static const struct ipc_get_ops shm_get_ops = {
	.create = shm_create,
	.more_checks = shm_more_checks,
};

long ipc_shmget(struct task *t, int32_t key, uint64_t size, int flags)
{
	struct shm_get_args g = { .key = key, .size = size, .flags = flags };

	return ipc_get(t, &shm_ids, key, flags, &shm_get_ops, &g);
}

/* --- shmat, shmdt --- */

long ipc_shmat(struct task *t, int id, uint64_t addr, int flags)
{
	int mflags = MAP_SHARED, prot, acc, oflags;
	struct shm_attach *a;
	struct shm_seg *s;
	struct file *f = NULL;
	uint64_t size;
	long r;

	if (id < 0)
		return -EINVAL;
	if (addr) {
		if (addr & (SHMLBA - 1)) {
			if (!(flags & LINUX_SHM_RND))
				return -EINVAL;
			addr &= ~(uint64_t)(SHMLBA - 1);
			if (!addr && (flags & LINUX_SHM_REMAP))
				return -EINVAL;
		}
		/* As Linux: without SHM_REMAP an attach over an existing mapping is EINVAL. */
		mflags |= (flags & LINUX_SHM_REMAP) ? MAP_FIXED : MAP_FIXED_NOREPLACE;
	} else if (flags & LINUX_SHM_REMAP) {
		return -EINVAL;
	}
	if (flags & LINUX_SHM_RDONLY) {
		prot = PROT_READ;
		acc = 0444;
		oflags = O_RDONLY;
	} else {
		prot = PROT_READ | PROT_WRITE;
		acc = 0666;
		oflags = O_RDWR;
	}
	if (flags & LINUX_SHM_EXEC) {
		prot |= PROT_EXEC;
		acc |= 0111;
	}

	pthread_mutex_lock(&shm_ids.lock);
	s = (struct shm_seg *)ipc_lookup(&shm_ids, id);
	r = s ? ipc_perms(&t->cred, &s->perm, acc) : -EINVAL;
	if (r == 0) {
		f = attach_new(s, oflags, true);
		if (!f)
			r = -ENOMEM;
	}
	if (r < 0) {
		pthread_mutex_unlock(&shm_ids.lock);
		return r;
	}
	a = f->priv;
	size = s->size;
	pthread_mutex_unlock(&shm_ids.lock);

	r = mm_mmap(t->mm, addr, size, prot, mflags, f, 0);
	if (r == -EEXIST)
		r = -EINVAL;
	pthread_mutex_lock(&shm_ids.lock);
	a->held = false;
	if (r >= 0) {
		a->mapped = true;
		s->atime = ipc_now();
		s->lpid = task_pid(t);
	}
	pthread_mutex_unlock(&shm_ids.lock);
	/* On failure this is the last reference: attach_release undoes the attach. */
	file_put(f);
	return r;
}

struct shmdt_ctx {
	uint64_t addr, end;
	struct file *file; /* the attach found at addr (not referenced) */
	struct shm_seg *seg; /* referenced once found */
	uint64_t (*ranges)[2];
	size_t n, cap;
	int err;
};

static int shmdt_vma(const struct mm_vma_info *v, void *arg)
{
	struct shmdt_ctx *c = arg;

	if (!c->file) {
		if (v->start < c->addr)
			return 0;
		if (v->start > c->addr || !v->file || v->file->ops != &shm_attach_ops ||
		    v->file_off != 0)
			return 1;
		c->file = v->file;
		c->seg = ((struct shm_attach *)v->file->priv)->seg;
		refcount_inc(&c->seg->ref);
		c->end = c->addr + PAGE_ALIGN_UP(c->seg->size);
	} else if (v->start >= c->end) {
		return 1;
	} else if (v->file != c->file || v->file_off != v->start - c->addr) {
		return 0;
	}
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 4;
		void *nr = realloc(c->ranges, ncap * sizeof(c->ranges[0]));

		if (!nr) {
			c->err = -ENOMEM;
			return 1;
		}
		c->ranges = nr;
		c->cap = ncap;
	}
	c->ranges[c->n][0] = v->start;
	c->ranges[c->n][1] = MIN(v->end, c->end);
	c->n++;
	return 0;
}

long ipc_shmdt(struct task *t, uint64_t addr)
{
	struct shmdt_ctx c = { .addr = addr };
	int r = 0;

	if (!IS_PAGE_ALIGNED(addr))
		return -EINVAL;
	mm_for_each_vma(t->mm, shmdt_vma, &c);
	if (!c.file) {
		free(c.ranges);
		return -EINVAL;
	}
	if (c.err == 0) {
		for (size_t i = 0; i < c.n; i++) {
			int e = mm_munmap(t->mm, c.ranges[i][0], c.ranges[i][1] - c.ranges[i][0]);

			if (e < 0 && r == 0)
				r = e;
		}
	} else {
		r = c.err;
	}
	free(c.ranges);
	pthread_mutex_lock(&shm_ids.lock);
	c.seg->dtime = ipc_now();
	c.seg->lpid = task_pid(t);
	pthread_mutex_unlock(&shm_ids.lock);
	seg_put(c.seg);
	return r;
}

/* --- shmctl --- */

static void fill_ds(struct linux_shmid64_ds *ds, struct shm_seg *s)
{
	memset(ds, 0, sizeof(*ds));
	ipc_fill_perm64(&ds->shm_perm, &s->perm);
	ds->shm_segsz = s->size;
	ds->shm_atime = s->atime;
	ds->shm_dtime = s->dtime;
	ds->shm_ctime = s->ctime;
	ds->shm_cpid = s->cpid;
	ds->shm_lpid = s->lpid;
	ds->shm_nattch = seg_nattch(s);
}

static long copy_out(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

static long shm_info(struct task *t, int cmd, uint64_t buf)
{
	long r;

	if (cmd == LINUX_IPC_INFO) {
		struct linux_shminfo64 info = {
			.shmmax = ipc_sysctl_u64(SYSCTL_KERNEL_SHMMAX),
			.shmmin = 1,
			.shmmni = (uint64_t)sysctl_get(SYSCTL_KERNEL_SHMMNI, 0),
			.shmseg = SHMSEG,
			.shmall = ipc_sysctl_u64(SYSCTL_KERNEL_SHMALL),
		};

		pthread_mutex_lock(&shm_ids.lock);
		r = ipc_info_ret(&shm_ids);
		pthread_mutex_unlock(&shm_ids.lock);
		return copy_out(t, buf, &info, sizeof(info)) ?: r;
	}

	struct linux_shm_info info = { 0 };

	pthread_mutex_lock(&shm_ids.lock);
	info.used_ids = shm_ids.in_use;
	info.shm_tot = shm_tot;
	for (int i = 0; i <= shm_ids.max_idx; i++) {
		struct shm_seg *s = (struct shm_seg *)shm_ids.slots[i];
		struct vfs_attr attr;

		if (s && file_getattr(s->memfd, &attr) == 0)
			info.shm_rss += (uint64_t)attr.blocks * 512 / PAGE_SIZE;
	}
	r = ipc_info_ret(&shm_ids);
	pthread_mutex_unlock(&shm_ids.lock);
	return copy_out(t, buf, &info, sizeof(info)) ?: r;
}

long ipc_shmctl(struct task *t, int id, int cmd, uint64_t buf)
{
	struct linux_shmid64_ds ds;
	struct shm_seg *s;
	bool destroy = false;
	long r = 0;

	if (cmd < 0 || id < 0)
		return -EINVAL;
	switch (cmd) {
	case LINUX_IPC_INFO:
	case LINUX_SHM_INFO:
		return shm_info(t, cmd, buf);
	case LINUX_IPC_SET:
		if (mm_copy_in(t->mm, &ds, buf, sizeof(ds)) != sizeof(ds))
			return -EFAULT;
		break;
	case LINUX_IPC_STAT:
	case LINUX_SHM_STAT:
	case LINUX_SHM_STAT_ANY:
	case LINUX_IPC_RMID:
	case LINUX_SHM_LOCK:
	case LINUX_SHM_UNLOCK:
		break;
	default:
		return -EINVAL;
	}

	pthread_mutex_lock(&shm_ids.lock);
	s = (struct shm_seg *)ipc_ctl_lookup(&shm_ids, id,
					     cmd == LINUX_SHM_STAT || cmd == LINUX_SHM_STAT_ANY);
	if (!s) {
		r = -EINVAL;
		goto out_unlock;
	}
	switch (cmd) {
	case LINUX_IPC_STAT:
	case LINUX_SHM_STAT:
	case LINUX_SHM_STAT_ANY:
		r = ipc_stat_perms(&t->cred, &s->perm, cmd == LINUX_SHM_STAT_ANY);
		if (r < 0)
			break;
		fill_ds(&ds, s);
		r = cmd == LINUX_IPC_STAT ? 0 : s->perm.id;
		break;
	case LINUX_IPC_SET:
		r = ipc_check_owner(&t->cred, &s->perm);
		if (r < 0)
			break;
		ipc_set_perm(&s->perm, &ds.shm_perm);
		s->ctime = ipc_now();
		break;
	case LINUX_IPC_RMID:
		r = ipc_check_owner(&t->cred, &s->perm);
		if (r < 0)
			break;
		if (list_empty(&s->attaches)) {
			seg_unlist(s);
			destroy = true;
		} else {
			/* As Linux: the key goes now, the segment with its last detach. */
			s->perm.mode |= LINUX_SHM_DEST;
			s->perm.key = LINUX_IPC_PRIVATE;
		}
		break;
	case LINUX_SHM_LOCK:
	case LINUX_SHM_UNLOCK:
		if (!cred_capable(&t->cred, CAP_IPC_LOCK)) {
			if (t->cred.euid != s->perm.uid && t->cred.euid != s->perm.cuid) {
				r = -EPERM;
				break;
			}
			if (cmd == LINUX_SHM_LOCK) {
				pthread_mutex_lock(&t->tg->lock);
				rlim_t lim = t->tg->rlimits[RLIMIT_MEMLOCK].rlim_cur;
				pthread_mutex_unlock(&t->tg->lock);
				if (!lim) {
					r = -EPERM;
					break;
				}
			}
		}
		/* Accepted; the sandbox's memory is never swapped out anyway. */
		if (cmd == LINUX_SHM_LOCK)
			s->perm.mode |= LINUX_SHM_LOCKED;
		else
			s->perm.mode &= ~(uint32_t)LINUX_SHM_LOCKED;
		break;
	}
out_unlock:
	pthread_mutex_unlock(&shm_ids.lock);
	if (destroy)
		seg_put(s);
	if (r >= 0 &&
	    (cmd == LINUX_IPC_STAT || cmd == LINUX_SHM_STAT || cmd == LINUX_SHM_STAT_ANY)) {
		long e = copy_out(t, buf, &ds, sizeof(ds));

		if (e < 0)
			return e;
	}
	return r;
}

/* --- /proc/sysvipc/shm --- */

int ipc_proc_shm(FILE *out)
{
	fprintf(out,
		"       key      shmid perms                  size  cpid  lpid nattch   uid   gid "
		" cuid  cgid      atime      dtime      ctime                   rss                  "
		"swap\n");
	pthread_mutex_lock(&shm_ids.lock);
	for (int i = 0; i <= shm_ids.max_idx; i++) {
		struct shm_seg *s = (struct shm_seg *)shm_ids.slots[i];
		struct vfs_attr attr;
		uint64_t rss = 0;

		if (!ipc_visible(s ? &s->perm : NULL))
			continue;
		if (file_getattr(s->memfd, &attr) == 0)
			rss = (uint64_t)attr.blocks * 512;
		fprintf(out,
			"%10d %10d  %4o %21lu %5d %5d  %5lu %5u %5u %5u %5u %10lld %10lld %10lld %21lu "
			"%21lu\n",
			s->perm.key, s->perm.id, s->perm.mode, (unsigned long)s->size, s->cpid,
			s->lpid, (unsigned long)seg_nattch(s), s->perm.uid, s->perm.gid,
			s->perm.cuid, s->perm.cgid, (long long)s->atime, (long long)s->dtime,
			(long long)s->ctime, (unsigned long)rss, 0UL);
	}
	pthread_mutex_unlock(&shm_ids.lock);
	return 0;
}

static const struct file_ops shm_attach_ops = {
	.getattr = attach_getattr,
	.release = attach_release,
	.get_pages = attach_get_pages,
};

int ipc_shm_count(void)
{
	int n;

	pthread_mutex_lock(&shm_ids.lock);
	n = shm_ids.in_use;
	pthread_mutex_unlock(&shm_ids.lock);
	return n;
}

/* --- checkpoint and restore --- */

struct ipc_ids *ipc_shm_ids(void)
{
	return &shm_ids;
}

int ipc_shm_save(int (*fn)(const struct ipc_shm_state *st, void *arg), void *arg)
{
	int r = 0;

	pthread_mutex_lock(&shm_ids.lock);
	for (int i = 0; i <= shm_ids.max_idx && r == 0; i++) {
		struct shm_seg *s = (struct shm_seg *)shm_ids.slots[i];
		struct ipc_shm_state st = { 0 };

		/* Objects of IPC namespaces the guest made are not saved (nsproxy.h). */
		if (!s || s->perm.ns)
			continue;
		ipc_perm_to_state(&st.perm, &s->perm);
		st.size = s->size;
		st.atime = s->atime;
		st.dtime = s->dtime;
		st.ctime = s->ctime;
		st.cpid = s->cpid;
		st.lpid = s->lpid;
		st.memfd = s->memfd;
		r = fn(&st, arg);
	}
	pthread_mutex_unlock(&shm_ids.lock);
	return r;
}

int ipc_shm_restore(const struct ipc_shm_state *st)
{
	struct shm_seg *s;
	int r;

	if (!st->size || !st->memfd)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	refcount_init(&s->ref, 1);
	list_init(&s->attaches);
	ipc_perm_from_state(&s->perm, &st->perm);
	s->size = st->size;
	s->atime = st->atime;
	s->dtime = st->dtime;
	s->ctime = st->ctime;
	s->cpid = st->cpid;
	s->lpid = st->lpid;
	pthread_mutex_lock(&shm_ids.lock);
	r = ipc_insert_at(&shm_ids, &s->perm, st->perm.id);
	if (r == 0) {
		file_get(st->memfd);
		s->memfd = st->memfd;
		shm_tot += seg_pages(s);
	}
	pthread_mutex_unlock(&shm_ids.lock);
	if (r < 0)
		free(s);
	return r;
}

bool ipc_shm_is_attach(struct file *f)
{
	return f->ops == &shm_attach_ops;
}

int32_t ipc_shm_attach_id(struct file *f)
{
	struct shm_attach *a = f->priv;

	return a->seg->perm.id;
}

struct file *ipc_shm_attach_restore(int32_t id, int oflags)
{
	struct shm_seg *s;
	struct file *f;

	pthread_mutex_lock(&shm_ids.lock);
	s = (struct shm_seg *)ipc_lookup(&shm_ids, id);
	f = s ? attach_new(s, oflags, false) : ERR_PTR(-EINVAL);
	pthread_mutex_unlock(&shm_ids.lock);
	return f ? f : ERR_PTR(-ENOMEM);
}

void ipc_shm_restore_end(void)
{
	pthread_mutex_lock(&shm_ids.lock);
	for (int i = 0; i <= shm_ids.max_idx; i++) {
		struct shm_seg *s = (struct shm_seg *)shm_ids.slots[i];

		if (s && (s->perm.mode & LINUX_SHM_DEST) && list_empty(&s->attaches)) {
			seg_unlist(s);
			/* No attach holds it: the table's reference is the last. */
			pthread_mutex_unlock(&shm_ids.lock);
			seg_put(s);
			pthread_mutex_lock(&shm_ids.lock);
		}
	}
	pthread_mutex_unlock(&shm_ids.lock);
}

void ipc_shm_ns_exit(uint32_t ns)
{
	pthread_mutex_lock(&shm_ids.lock);
	for (int i = 0; i <= shm_ids.max_idx; i++) {
		struct shm_seg *s = (struct shm_seg *)shm_ids.slots[i];

		if (!s || s->perm.ns != ns)
			continue;
		if (list_empty(&s->attaches)) {
			seg_unlist(s);
			pthread_mutex_unlock(&shm_ids.lock);
			seg_put(s); /* the table's reference */
			pthread_mutex_lock(&shm_ids.lock);
		} else {
			/* As Linux's shm_exit_ns: the segment ends with its last detach. */
			s->perm.mode |= LINUX_SHM_DEST;
			s->perm.key = LINUX_IPC_PRIVATE;
		}
	}
	pthread_mutex_unlock(&shm_ids.lock);
}
