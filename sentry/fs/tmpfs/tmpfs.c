/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmpfs (see tmpfs.h). One lock per filesystem (tmpfs->lock) protects everything in it: the
 * tree, every inode's attributes and data, the page accounting. Operations are short memory
 * copies, so one lock is simple and enough while guest threads are few.
 *
 * References: a directory's inode holds each child node in its name table (`names`); a node
 * holds its parent (vfs_node) and its inode. Removing a name drops the directory's reference;
 * the node and its inode live on while open files or cwds hold them. fs release breaks the
 * directory <-> child cycles top-down.
 *
 * File data: each inode has a table of page slots (0: a hole, reads as zeros). With a memory
 * file (the sandbox's), a slot holds a memory-file offset + 1 and the file holds one reference
 * on that page (memfile_ref/memfile_free): MAP_SHARED mappings take their own references on
 * the same pages (tmpfs_get_pages), so read(2), write(2) and every mapping share the bytes.
 * Without a memory file (unit tests of other folders), slots are heap pointers and the files
 * cannot be mapped shared. Pages of one file are allocated next to each other when the
 * allocator allows, so that a mapping of the file is few VMAs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/fs/tmpfs/internal.h"
#include "sentry/mm/memfile.h"
#include "sentry/vfs/fs.h"

/* An open regular file: its node (priv), referenced, so the data outlives the name. */
static const struct vfs_node_ops tmpfs_node_ops;
static const struct file_ops tmpfs_file_ops;

static struct timespec now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

bool tmpfs_is_node(const struct vfs_node *n)
{
	return n->ops == &tmpfs_node_ops;
}

/* --- inodes and nodes --- */

struct tmpfs_inode *tmpfs_inode_new(struct tmpfs *fs, const struct vfs_create_args *a)
{
	struct tmpfs_inode *in = calloc(1, sizeof(*in));
	struct timespec t = now();

	if (!in)
		return NULL;
	if (S_ISLNK(a->mode)) {
		in->target = strdup(a->target ? a->target : "");
		if (!in->target) {
			free(in);
			return NULL;
		}
		in->size = (int64_t)strlen(in->target);
	}
	refcount_init(&in->ref, 0);
	in->ino = fs->next_ino++;
	in->mode = a->mode;
	in->uid = a->uid;
	in->gid = a->gid;
	in->rdev = a->rdev;
	in->nlink = S_ISDIR(a->mode) ? 2 : 1;
	in->seals = LINUX_F_SEAL_SEAL;
	in->atime = in->mtime = in->ctime = t;
	vfs_dcache_init(&in->names);
	list_init(&in->entries);
	in->next_cookie = TMPFS_POS_FIRST;
	return in;
}

/* The sentry address of the page in slot (non-zero). */
static uint8_t *slot_ptr(struct tmpfs *fs, uint64_t slot)
{
	return fs->mf ? memfile_ptr(fs->mf, slot - 1) : (uint8_t *)(uintptr_t)slot;
}

/*
 * Drops the file's page at index idx (fs lock held). A page that a MAP_SHARED mapping still
 * holds is zeroed first: the mapping reads zeros, not stale data, after the file lost the page
 * (truncation, hole punching), which is as close to Linux's SIGBUS as this model gets.
 */
static void slot_release(struct tmpfs *fs, struct tmpfs_inode *in, size_t idx)
{
	uint64_t slot = in->pages[idx];

	if (!slot)
		return;
	if (fs->mf) {
		uint64_t off = slot - 1;

		if (memfile_page_refs(fs->mf, off) > 1)
			memfile_zero(fs->mf, off, TMPFS_PAGE);
		memfile_free(fs->mf, off, TMPFS_PAGE);
	} else {
		free((void *)(uintptr_t)slot);
	}
	in->pages[idx] = 0;
	in->nalloc--;
	fs->pages_used--;
}

static void inode_free_pages(struct tmpfs *fs, struct tmpfs_inode *in, size_t from)
{
	for (size_t i = from; i < in->npages; i++)
		slot_release(fs, in, i);
}

/* Drops a node's reference on its inode (fs lock held). */
void tmpfs_inode_put(struct tmpfs *fs, struct tmpfs_inode *in)
{
	if (!refcount_dec(&in->ref))
		return;
	inode_free_pages(fs, in, 0);
	free(in->pages);
	free(in->target);
	free(in->memfd_name);
	for (struct tmpfs_xattr *x = in->xattrs, *next; x; x = next) {
		next = x->next;
		free(x->name);
		free(x->value);
		free(x);
	}
	/* A directory reaches here only empty: its names held its children. */
	vfs_dcache_clear(&in->names, NULL, NULL);
	free(in);
}

/* A node for inode in (takes a new reference on it) named name under parent. */
struct tmpfs_node *tmpfs_node_new(struct tmpfs *fs, struct vfs_node *parent, const char *name,
				  struct tmpfs_inode *in)
{
	struct tmpfs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &tmpfs_node_ops, &fs->base, parent, name, in->mode) < 0) {
		free(n);
		return NULL;
	}
	/* A new inode starts with no node (count 0): its first node makes it live. */
	if (refcount_read(&in->ref) == 0)
		refcount_init(&in->ref, 1);
	else
		refcount_inc(&in->ref);
	n->inode = in;
	list_init(&n->entry);
	return n;
}

/* Enters child under name in dir (fs lock held). The directory takes a reference. */
int tmpfs_dir_link(struct tmpfs_inode *dir, const char *name, struct tmpfs_node *child)
{
	int err = vfs_dcache_insert(&dir->names, name, &child->base);

	if (err < 0)
		return err;
	child->cookie = dir->next_cookie++;
	list_add_tail(&child->entry, &dir->entries);
	child->linked = true;
	return 0;
}

/* Removes child's entry name from dir (fs lock held); drops the directory's reference. */
static void dir_unlink(struct tmpfs_inode *dir, const char *name, struct tmpfs_node *child)
{
	list_del(&child->entry);
	list_init(&child->entry);
	child->linked = false;
	vfs_dcache_remove(&dir->names, name);
}

/* --- lookups and attributes --- */

static struct vfs_node *tmpfs_lookup(struct vfs_node *dir, const char *name)
{
	struct tmpfs *fs = tmpfs_of(dir);
	struct vfs_node *n = NULL;
	bool found;

	pthread_mutex_lock(&fs->lock);
	found = vfs_dcache_lookup(&tinode(dir)->names, name, &n);
	pthread_mutex_unlock(&fs->lock);
	return found && n ? n : ERR_PTR(-ENOENT);
}

static void attr_of(struct tmpfs *fs, const struct tmpfs_inode *in, struct vfs_attr *a)
{
	*a = (struct vfs_attr){
		.dev = fs->base.dev,
		.ino = in->ino,
		.nlink = in->nlink,
		.mode = in->mode,
		.uid = in->uid,
		.gid = in->gid,
		.rdev = in->rdev,
		.size = S_ISDIR(in->mode) ? 40 + 20 * (int64_t)in->names.count : in->size,
		.blksize = TMPFS_PAGE,
		.blocks = (int64_t)in->nalloc * (TMPFS_PAGE / 512),
		.atime = in->atime,
		.mtime = in->mtime,
		.ctime = in->ctime,
	};
}

static int tmpfs_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct tmpfs *fs = tmpfs_of(n);

	pthread_mutex_lock(&fs->lock);
	attr_of(fs, tinode(n), attr);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

static ssize_t tmpfs_readlink(struct vfs_node *n, char *buf, size_t len)
{
	struct tmpfs *fs = tmpfs_of(n);
	struct tmpfs_inode *in = tinode(n);
	size_t tl;

	if (!S_ISLNK(in->mode))
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	tl = strlen(in->target);
	memcpy(buf, in->target, MIN(len, tl));
	pthread_mutex_unlock(&fs->lock);
	return (ssize_t)tl;
}

static int tmpfs_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	struct tmpfs *fs = tmpfs_of(n);

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&fs->lock);
	st->f_type = TMPFS_MAGIC;
	st->f_bsize = TMPFS_PAGE;
	st->f_frsize = TMPFS_PAGE;
	st->f_blocks = fs->size_limit / TMPFS_PAGE;
	st->f_bfree = st->f_blocks > fs->pages_used ? st->f_blocks - fs->pages_used : 0;
	st->f_bavail = st->f_bfree;
	st->f_files = st->f_blocks; /* Linux's default nr_inodes is of the same order */
	st->f_ffree = st->f_files > fs->next_ino ? st->f_files - fs->next_ino : 0;
	st->f_namelen = VFS_NAME_MAX;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* --- regular file data --- */

/* Grows the page table to hold page index idx (fs lock held). */
static int pages_reserve(struct tmpfs_inode *in, size_t idx)
{
	size_t n = in->npages ? in->npages : 4;
	uint64_t *p;

	if (idx < in->npages)
		return 0;
	if (idx >= TMPFS_MAX_PAGES)
		return -EFBIG;
	while (n <= idx)
		n *= 2;
	p = realloc(in->pages, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + in->npages, 0, (n - in->npages) * sizeof(*p));
	in->pages = p;
	in->npages = n;
	return 0;
}

/*
 * A new zeroed page for index idx of in (fs lock held, slot table reserved): in the memory file
 * right after the page before it when that is free, so that the file's pages stay contiguous.
 * Returns its slot, or 0 when out of memory.
 */
static uint64_t slot_alloc(struct tmpfs *fs, struct tmpfs_inode *in, size_t idx)
{
	if (!fs->mf) {
		void *p = calloc(1, TMPFS_PAGE);

		return (uint64_t)(uintptr_t)p;
	}
	if (idx > 0 && in->pages[idx - 1]) {
		uint64_t want = in->pages[idx - 1] - 1 + TMPFS_PAGE;

		if (want + TMPFS_PAGE <= fs->mf->size &&
		    memfile_alloc_at(fs->mf, want, TMPFS_PAGE) == 0)
			return want + 1;
	}
	int64_t off = memfile_alloc(fs->mf, TMPFS_PAGE);

	return off < 0 ? 0 : (uint64_t)off + 1;
}

/* Fills the hole at idx with a zeroed page charged to the limit (fs lock held). 0 or -errno. */
static int slot_fill(struct tmpfs *fs, struct tmpfs_inode *in, size_t idx)
{
	int err = pages_reserve(in, idx);

	if (err < 0)
		return err;
	if (in->pages[idx])
		return 0;
	if ((fs->pages_used + 1) * TMPFS_PAGE > fs->size_limit)
		return -ENOSPC;
	in->pages[idx] = slot_alloc(fs, in, idx);
	if (!in->pages[idx])
		return -ENOMEM;
	in->nalloc++;
	fs->pages_used++;
	return 0;
}

/* The page at idx, allocated (zeroed) if missing, charged to the limit. NULL: -ENOSPC/-ENOMEM. */
static uint8_t *page_get(struct tmpfs *fs, struct tmpfs_inode *in, size_t idx, int *err)
{
	*err = slot_fill(fs, in, idx);
	if (*err < 0)
		return NULL;
	return slot_ptr(fs, in->pages[idx]);
}

/* Sets the size of a regular file (fs lock held): frees pages past it, zeroes the tail. */
static void inode_truncate(struct tmpfs *fs, struct tmpfs_inode *in, int64_t size)
{
	if (size < in->size) {
		size_t keep = (size_t)((size + TMPFS_PAGE - 1) / TMPFS_PAGE);

		if (keep < in->npages)
			inode_free_pages(fs, in, keep);
		if (size % TMPFS_PAGE && (size_t)(size / TMPFS_PAGE) < in->npages &&
		    in->pages[size / TMPFS_PAGE])
			memset(slot_ptr(fs, in->pages[size / TMPFS_PAGE]) + size % TMPFS_PAGE, 0,
			       TMPFS_PAGE - (size_t)(size % TMPFS_PAGE));
	}
	in->size = size;
}

static struct tmpfs_node *file_node(struct file *f)
{
	return f->priv;
}

struct tmpfs_node *tmpfs_file_node(struct file *f)
{
	return f->ops == &tmpfs_file_ops ? file_node(f) : NULL;
}

static ssize_t tmpfs_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct tmpfs_node *n = file_node(f);
	struct tmpfs *fs = tmpfs_of(&n->base);
	struct tmpfs_inode *in = n->inode;
	int64_t off = *pos;
	size_t done = 0;

	pthread_mutex_lock(&fs->lock);
	for (int i = 0; i < iovcnt && off < in->size; i++) {
		size_t ioff = 0;

		while (ioff < iov[i].iov_len && off < in->size) {
			size_t idx = (size_t)(off / TMPFS_PAGE), poff = (size_t)(off % TMPFS_PAGE);
			size_t chunk = MIN(TMPFS_PAGE - poff, iov[i].iov_len - ioff);
			uint8_t *dst = (uint8_t *)iov[i].iov_base + ioff;

			chunk = MIN(chunk, (size_t)(in->size - off));
			if (idx < in->npages && in->pages[idx])
				memcpy(dst, slot_ptr(fs, in->pages[idx]) + poff, chunk);
			else
				memset(dst, 0, chunk);
			ioff += chunk;
			off += (int64_t)chunk;
			done += chunk;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	*pos = off;
	return (ssize_t)done;
}

static ssize_t tmpfs_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct tmpfs_node *n = file_node(f);
	struct tmpfs *fs = tmpfs_of(&n->base);
	struct tmpfs_inode *in = n->inode;
	size_t done = 0, total = 0;
	int64_t off;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	off = (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_APPEND) ? in->size : *pos;
	if (in->seals & (LINUX_F_SEAL_WRITE | LINUX_F_SEAL_FUTURE_WRITE))
		err = -EPERM;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	/* RLIMIT_FSIZE: a write that reaches it stops there (short); one past it fails. */
	if (!err && S_ISREG(in->mode))
		err = vfs_write_check_limit(off, &total);
	for (int i = 0; i < iovcnt && !err; i++) {
		size_t ioff = 0;

		while (ioff < iov[i].iov_len) {
			size_t idx = (size_t)(off / TMPFS_PAGE), poff = (size_t)(off % TMPFS_PAGE);
			size_t chunk = MIN(TMPFS_PAGE - poff, iov[i].iov_len - ioff);
			uint8_t *page;

			if (done == total)
				goto out;
			chunk = MIN(chunk, total - done);
			if (off > TMPFS_MAX_SIZE - (int64_t)chunk) {
				err = -EFBIG;
				break;
			}
			/* F_SEAL_GROW: a write may fill the file up to its size, not past it. */
			if ((in->seals & LINUX_F_SEAL_GROW) && off + (int64_t)chunk > in->size) {
				if (off >= in->size) {
					err = -EPERM;
					break;
				}
				chunk = (size_t)(in->size - off);
			}
			page = page_get(fs, in, idx, &err);
			if (!page)
				break;
			memcpy(page + poff, (const uint8_t *)iov[i].iov_base + ioff, chunk);
			ioff += chunk;
			off += (int64_t)chunk;
			done += chunk;
			if (off > in->size)
				in->size = off;
		}
	}
out:
	if (done) {
		in->mtime = in->ctime = now();
		/* Without CAP_FSETID a write clears set-user-ID (and executable set-group-ID). */
		in->mode = vfs_write_kill_priv(in->mode);
	}
	pthread_mutex_unlock(&fs->lock);
	*pos = off;
	return done ? (ssize_t)done : err;
}

static int64_t tmpfs_llseek(struct file *f, int64_t off, int whence)
{
	struct tmpfs_node *n = file_node(f);
	struct tmpfs *fs = tmpfs_of(&n->base);
	int64_t size;

	pthread_mutex_lock(&fs->lock);
	size = n->inode->size;
	pthread_mutex_unlock(&fs->lock);
	return vfs_generic_llseek(f, off, whence, size);
}

/*
 * -ENOSPC when the holes of [off, end) do not fit under the limit (fs lock held): Linux's
 * shmem_fallocate fails without keeping any page, not after filling part of the range.
 */
static int fallocate_fits(struct tmpfs *fs, struct tmpfs_inode *in, int64_t off, int64_t end)
{
	uint64_t limit = fs->size_limit / TMPFS_PAGE;
	uint64_t avail = limit - MIN(fs->pages_used, limit), holes = 0;

	for (int64_t p = off & ~(int64_t)(TMPFS_PAGE - 1); p < end; p += TMPFS_PAGE) {
		size_t idx = (size_t)(p / TMPFS_PAGE);

		if ((idx >= in->npages || !in->pages[idx]) && ++holes > avail)
			return -ENOSPC;
	}
	return 0;
}

static int tmpfs_fallocate(struct file *f, int mode, int64_t off, int64_t len)
{
	struct tmpfs_node *n = file_node(f);
	struct tmpfs *fs = tmpfs_of(&n->base);
	struct tmpfs_inode *in = n->inode;
	int64_t end = off + len;
	int err = 0;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	pthread_mutex_lock(&fs->lock);
	if ((mode & FALLOC_FL_PUNCH_HOLE) &&
	    (in->seals & (LINUX_F_SEAL_WRITE | LINUX_F_SEAL_FUTURE_WRITE)))
		err = -EPERM;
	else if (!(mode & FALLOC_FL_PUNCH_HOLE) && (in->seals & LINUX_F_SEAL_GROW) &&
		 end > in->size)
		err = -EPERM;
	if (err) {
		pthread_mutex_unlock(&fs->lock);
		return err;
	}
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		/* Whole pages in the range go; partial ones are zeroed. */
		for (int64_t p = off; p < end && p < in->size;) {
			size_t idx = (size_t)(p / TMPFS_PAGE), poff = (size_t)(p % TMPFS_PAGE);
			size_t chunk = (size_t)MIN((int64_t)(TMPFS_PAGE - poff), end - p);

			if (idx < in->npages && in->pages[idx]) {
				if (chunk == TMPFS_PAGE)
					slot_release(fs, in, idx);
				else
					memset(slot_ptr(fs, in->pages[idx]) + poff, 0, chunk);
			}
			p += (int64_t)chunk;
		}
	} else {
		err = fallocate_fits(fs, in, off, end);
		for (int64_t p = off & ~(int64_t)(TMPFS_PAGE - 1); !err && p < end; p += TMPFS_PAGE)
			if (!page_get(fs, in, (size_t)(p / TMPFS_PAGE), &err))
				break;
		if (!err && !(mode & FALLOC_FL_KEEP_SIZE) && end > in->size)
			in->size = end;
	}
	if (!err)
		in->mtime = in->ctime = now();
	pthread_mutex_unlock(&fs->lock);
	return err;
}

/*
 * MAP_SHARED: the file's own pages, holes filled (and charged to the limit) first. Pages past
 * the end of the file are allocated too and belong to the file (truncation frees them), so a
 * mapping made before the file grows sees the grown file's bytes; Linux would give SIGBUS on
 * an access past the end instead.
 */
static int tmpfs_get_pages(struct file *f, uint64_t pgoff, size_t npages, uint64_t *offs,
			   bool write)
{
	struct tmpfs_node *n = file_node(f);
	struct tmpfs *fs = tmpfs_of(&n->base);
	struct tmpfs_inode *in = n->inode;
	int err = 0;

	if (!fs->mf)
		return -ENODEV;
	if (npages == 0)
		return 0;
	if (pgoff > (uint64_t)TMPFS_MAX_SIZE / TMPFS_PAGE ||
	    npages > (uint64_t)TMPFS_MAX_SIZE / TMPFS_PAGE - pgoff)
		return -EFBIG;
	pthread_mutex_lock(&fs->lock);
	err = pages_reserve(in, (size_t)(pgoff + npages - 1));
	for (size_t i = 0; i < npages && err == 0; i++)
		err = slot_fill(fs, in, (size_t)pgoff + i);
	if (err == 0) {
		for (size_t i = 0; i < npages; i++) {
			offs[i] = in->pages[pgoff + i] - 1;
			memfile_ref(fs->mf, offs[i], TMPFS_PAGE);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static void tmpfs_file_release(struct file *f)
{
	vfs_node_put(&file_node(f)->base);
}

static const struct file_ops tmpfs_file_ops = {
	.read = tmpfs_read,
	.write = tmpfs_write,
	.llseek = tmpfs_llseek,
	.release = tmpfs_file_release,
	.fallocate = tmpfs_fallocate,
	.get_pages = tmpfs_get_pages,
};

static struct file *tmpfs_open(struct vfs_node *n, int flags)
{
	struct tmpfs *fs = tmpfs_of(n);
	struct tmpfs_inode *in = tinode(n);
	struct file *f;

	switch (in->mode & S_IFMT) {
	case S_IFREG:
		break;
	case S_IFCHR:
		return devfs_open_chrdev(
			(uint32_t)((in->rdev >> 8) & 0xfff),
			(uint32_t)((in->rdev & 0xff) | ((in->rdev >> 12) & ~0xffu)), flags);
	case S_IFBLK: /* the device rules' EPERM, else ENXIO: no block device in the sentry */
		return devfs_open_blkdev(
			(uint32_t)((in->rdev >> 8) & 0xfff),
			(uint32_t)((in->rdev & 0xff) | ((in->rdev >> 12) & ~0xffu)), flags);
	case S_IFIFO:
		return pipe_fifo_open(n, flags);
	default:
		return ERR_PTR(-ENXIO); /* sockets, as Linux */
	}
	/* Linux truncates on O_TRUNC whatever the access mode (O_RDONLY too). */
	if (flags & O_TRUNC) {
		bool sealed;

		pthread_mutex_lock(&fs->lock);
		sealed = in->size && (in->seals & LINUX_F_SEAL_SHRINK);
		pthread_mutex_unlock(&fs->lock);
		if (sealed)
			return ERR_PTR(-EPERM);
	}
	f = file_alloc(&tmpfs_file_ops, flags, n);
	if (!f)
		return ERR_PTR(-ENOMEM);
	vfs_node_get(n);
	if (flags & O_TRUNC) {
		pthread_mutex_lock(&fs->lock);
		if (in->size) {
			inode_truncate(fs, in, 0);
		}
		/* Linux updates the times of an O_TRUNC open even of an empty file. */
		in->mtime = in->ctime = now();
		pthread_mutex_unlock(&fs->lock);
	}
	return f;
}

/* --- directories --- */

static int tmpfs_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct tmpfs *fs = tmpfs_of(dir);
	struct tmpfs_inode *in = tinode(dir);
	struct tmpfs_node *c;

	pthread_mutex_lock(&fs->lock);
	if (*pos == 0) {
		if (!e->emit(e, ".", 1, in->ino, DT_DIR, 1))
			goto out;
		*pos = 1;
	}
	if (*pos == 1) {
		/* The filesystem's own renames hold fs->lock: the parent is stable here. */
		struct vfs_node *up = dir->parent ? dir->parent : dir;

		if (!e->emit(e, "..", 2, tinode(up)->ino, DT_DIR, TMPFS_POS_FIRST))
			goto out;
		*pos = TMPFS_POS_FIRST;
	}
	list_for_each_entry(c, &in->entries, entry) {
		if ((int64_t)c->cookie < *pos)
			continue;
		if (!e->emit(e, c->base.name, strlen(c->base.name), c->inode->ino,
			     (c->inode->mode & S_IFMT) >> 12, (int64_t)c->cookie + 1))
			break;
		*pos = (int64_t)c->cookie + 1;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* A removed directory (nlink 0) takes no new entries. fs lock held. */
static int dir_check_alive(struct tmpfs_inode *dir)
{
	return dir->nlink == 0 ? -ENOENT : 0;
}

static int tmpfs_create_op(struct vfs_node *dir, const char *name, const struct vfs_create_args *a,
			   struct vfs_node **out)
{
	struct tmpfs *fs = tmpfs_of(dir);
	struct tmpfs_inode *din = tinode(dir), *in;
	struct tmpfs_node *n;
	struct vfs_node *existing = NULL;
	int err;

	pthread_mutex_lock(&fs->lock);
	err = dir_check_alive(din);
	if (err < 0)
		goto out;
	if (vfs_dcache_lookup(&din->names, name, &existing) && existing) {
		vfs_node_put(existing);
		err = -EEXIST;
		goto out;
	}
	in = tmpfs_inode_new(fs, a);
	if (!in) {
		err = -ENOMEM;
		goto out;
	}
	n = tmpfs_node_new(fs, dir, name, in);
	if (!n) {
		free(in->target);
		free(in);
		err = -ENOMEM;
		goto out;
	}
	err = tmpfs_dir_link(din, name, n);
	if (err < 0) {
		pthread_mutex_unlock(&fs->lock);
		vfs_node_put(&n->base);
		return err;
	}
	if (S_ISDIR(a->mode))
		din->nlink++;
	din->mtime = din->ctime = in->ctime;
	*out = &n->base;
out:
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static int tmpfs_tmpfile(struct vfs_node *dir, const struct vfs_create_args *a,
			 struct vfs_node **out)
{
	struct tmpfs *fs = tmpfs_of(dir);
	struct tmpfs_inode *in;
	struct tmpfs_node *n;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	err = dir_check_alive(tinode(dir));
	if (err < 0)
		goto out;
	in = tmpfs_inode_new(fs, a);
	if (!in) {
		err = -ENOMEM;
		goto out;
	}
	in->nlink = 0;
	in->tmpfile = !a->no_link;
	/* Named after its inode, as Linux's "#ino" of an O_TMPFILE dentry; linked nowhere. */
	{
		char name[32];

		snprintf(name, sizeof(name), "#%llu", (unsigned long long)in->ino);
		n = tmpfs_node_new(fs, dir, name, in);
	}
	if (!n) {
		free(in);
		err = -ENOMEM;
		goto out;
	}
	*out = &n->base;
out:
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static int tmpfs_link(struct vfs_node *dir, const char *name, struct vfs_node *old,
		      struct vfs_node **out)
{
	struct tmpfs *fs = tmpfs_of(dir);
	struct tmpfs_inode *din = tinode(dir), *in = tinode(old);
	struct vfs_node *existing = NULL;
	struct tmpfs_node *n;
	int err;

	if (old->fs != dir->fs)
		return -EXDEV;
	pthread_mutex_lock(&fs->lock);
	err = dir_check_alive(din);
	if (err < 0)
		goto out;
	if (vfs_dcache_lookup(&din->names, name, &existing) && existing) {
		vfs_node_put(existing);
		err = -EEXIST;
		goto out;
	}
	/* A file with no name left may get one back only if it was made by O_TMPFILE. */
	if (in->nlink == 0 && !in->tmpfile) {
		err = -ENOENT;
		goto out;
	}
	if (in->nlink >= TMPFS_LINK_MAX) {
		err = -EMLINK;
		goto out;
	}
	n = tmpfs_node_new(fs, dir, name, in);
	if (!n) {
		err = -ENOMEM;
		goto out;
	}
	err = tmpfs_dir_link(din, name, n);
	if (err < 0) {
		pthread_mutex_unlock(&fs->lock);
		vfs_node_put(&n->base);
		return err;
	}
	in->nlink++;
	in->tmpfile = false;
	in->ctime = din->mtime = din->ctime = now();
	*out = &n->base;
out:
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static bool dir_empty(struct tmpfs_inode *in)
{
	return list_empty(&in->entries);
}

/* Removes child (named name in dir) from the tree; fs lock held. */
static void remove_entry(struct vfs_node *dir, const char *name, struct vfs_node *child,
			 struct timespec t)
{
	struct tmpfs_inode *din = tinode(dir), *in = tinode(child);

	if (S_ISDIR(in->mode)) {
		in->nlink = 0;
		din->nlink--;
	} else {
		in->nlink--;
	}
	in->ctime = din->mtime = din->ctime = t;
	dir_unlink(din, name, tnode(child));
}

static int tmpfs_unlink(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	struct tmpfs *fs = tmpfs_of(dir);
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	if (!tnode(child)->linked || child->parent != dir)
		err = -ENOENT;
	else if (S_ISDIR(tinode(child)->mode))
		err = -EISDIR;
	else
		remove_entry(dir, name, child, now());
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static int tmpfs_rmdir(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	struct tmpfs *fs = tmpfs_of(dir);
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	if (!tnode(child)->linked || child->parent != dir)
		err = -ENOENT;
	else if (!S_ISDIR(tinode(child)->mode))
		err = -ENOTDIR;
	else if (!dir_empty(tinode(child)))
		err = -ENOTEMPTY;
	else
		remove_entry(dir, name, child, now());
	pthread_mutex_unlock(&fs->lock);
	return err;
}

/* Enters node at name in dir after a move (fs lock held); undoes nothing on -ENOMEM. */
static int relink(struct vfs_node *dir, const char *name, struct vfs_node *node)
{
	return tmpfs_dir_link(tinode(dir), name, tnode(node));
}

static int tmpfs_rename(struct vfs_node *olddir, const char *oldname, struct vfs_node *node,
			struct vfs_node *newdir, const char *newname, struct vfs_node *target,
			unsigned int flags)
{
	struct tmpfs *fs = tmpfs_of(olddir);
	struct tmpfs_inode *odin = tinode(olddir), *ndin = tinode(newdir), *in = tinode(node);
	bool is_dir = S_ISDIR(in->mode);
	struct timespec t = now();
	int err = 0;

	if (newdir->fs != olddir->fs)
		return -EXDEV;
	pthread_mutex_lock(&fs->lock);
	if (!tnode(node)->linked || node->parent != olddir ||
	    (target && (!tnode(target)->linked || target->parent != newdir))) {
		err = -ENOENT;
		goto out;
	}
	err = dir_check_alive(ndin);
	if (err < 0)
		goto out;
	if (!target) {
		struct vfs_node *existing = NULL;

		/* The VFS looked before taking no lock of ours: look again. */
		if (vfs_dcache_lookup(&ndin->names, newname, &existing) && existing) {
			vfs_node_put(existing);
			err = -EEXIST;
			goto out;
		}
		if (flags & VFS_RENAME_EXCHANGE) {
			err = -ENOENT;
			goto out;
		}
	}

	vfs_node_get(node);
	if (target)
		vfs_node_get(target);
	if (flags & VFS_RENAME_EXCHANGE) {
		bool tdir = S_ISDIR(tinode(target)->mode);

		dir_unlink(odin, oldname, tnode(node));
		dir_unlink(ndin, newname, tnode(target));
		err = vfs_node_move(node, newdir, newname);
		if (err == 0) {
			err = vfs_node_move(target, olddir, oldname);
			if (err < 0)
				vfs_node_move(node, olddir, oldname); /* best effort */
		}
		if (err < 0) {
			relink(olddir, oldname, node);
			relink(newdir, newname, target);
			goto out_put;
		}
		relink(newdir, newname, node);
		relink(olddir, oldname, target);
		if (is_dir != tdir && olddir != newdir) {
			if (is_dir) {
				odin->nlink--;
				ndin->nlink++;
			} else {
				odin->nlink++;
				ndin->nlink--;
			}
		}
		in->ctime = tinode(target)->ctime = t;
	} else {
		if (target) {
			struct tmpfs_inode *tin = tinode(target);

			if (S_ISDIR(tin->mode) && !dir_empty(tin)) {
				err = -ENOTEMPTY;
				goto out_put;
			}
		}
		err = vfs_node_move(node, newdir, newname);
		if (err < 0)
			goto out_put;
		if (target)
			remove_entry(newdir, newname, target, t);
		dir_unlink(odin, oldname, tnode(node));
		relink(newdir, newname, node);
		if (is_dir && olddir != newdir) {
			odin->nlink--;
			ndin->nlink++;
		}
		in->ctime = t;
		if (flags & VFS_RENAME_WHITEOUT) {
			struct vfs_create_args wa = { .mode = S_IFCHR, .rdev = 0 };
			struct tmpfs_inode *win = tmpfs_inode_new(fs, &wa);
			struct tmpfs_node *wn = win ? tmpfs_node_new(fs, olddir, oldname, win) :
						      NULL;

			if (!wn) {
				free(win);
			} else {
				if (relink(olddir, oldname, &wn->base) < 0)
					err = -ENOMEM;
				vfs_node_put(&wn->base);
			}
		}
	}
	odin->mtime = odin->ctime = ndin->mtime = ndin->ctime = t;
out_put:
	vfs_node_put(node);
	if (target)
		vfs_node_put(target);
out:
	pthread_mutex_unlock(&fs->lock);
	return err;
}

static int tmpfs_setattr(struct vfs_node *n, const struct vfs_setattr *sa)
{
	struct tmpfs *fs = tmpfs_of(n);
	struct tmpfs_inode *in = tinode(n);

	pthread_mutex_lock(&fs->lock);
	if (sa->valid & VFS_SETATTR_SIZE) {
		if (!S_ISREG(in->mode)) {
			pthread_mutex_unlock(&fs->lock);
			return -EINVAL;
		}
		if ((sa->size < in->size && (in->seals & LINUX_F_SEAL_SHRINK)) ||
		    (sa->size > in->size && (in->seals & LINUX_F_SEAL_GROW))) {
			pthread_mutex_unlock(&fs->lock);
			return -EPERM;
		}
		if (sa->size != in->size) {
			inode_truncate(fs, in, sa->size);
			in->mtime = now();
		}
	}
	if (sa->valid & VFS_SETATTR_MODE)
		in->mode = (in->mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & VFS_SETATTR_UID)
		in->uid = sa->uid;
	if (sa->valid & VFS_SETATTR_GID)
		in->gid = sa->gid;
	if (sa->valid & VFS_SETATTR_ATIME)
		in->atime = sa->atime;
	if (sa->valid & VFS_SETATTR_MTIME)
		in->mtime = sa->mtime;
	in->ctime = (sa->valid & VFS_SETATTR_CTIME) ? sa->ctime : now();
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

static void tmpfs_node_release(struct vfs_node *n)
{
	struct tmpfs *fs = tmpfs_of(n);

	pthread_mutex_lock(&fs->lock);
	tmpfs_inode_put(fs, tinode(n));
	pthread_mutex_unlock(&fs->lock);
	free(tnode(n));
}

/* Breaks the directory -> child references below n (fs release: nothing else runs). */
static void drop_tree(struct vfs_node *n, void *arg)
{
	struct tmpfs_inode *in = tinode(n);

	if (S_ISDIR(in->mode)) {
		struct tmpfs_node *c;

		list_for_each_entry(c, &in->entries, entry)
			c->linked = false;
		list_init(&in->entries);
		vfs_dcache_clear(&in->names, drop_tree, NULL);
	}
	if (arg != n)
		vfs_node_put(n);
}

static void tmpfs_fs_release(struct vfs_fs *vfs)
{
	struct tmpfs *fs = container_of(vfs, struct tmpfs, base);

	drop_tree(fs->base.root, fs->base.root);
	vfs_node_put(fs->base.root);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}

/* --- extended attributes (the VFS checked names, sizes, flags and permissions) --- */

/* The namespaces tmpfs keeps: user.*, trusted.*, security.* (no ACLs: system.* unsupported). */
static int xattr_supported(const char *name)
{
	if (!strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	    !strncmp(name, "security.", 9))
		return 0;
	return -EOPNOTSUPP;
}

static struct tmpfs_xattr **xattr_find(struct tmpfs_inode *in, const char *name)
{
	struct tmpfs_xattr **pp;

	for (pp = &in->xattrs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, name))
			return pp;
	return pp;
}

static ssize_t tmpfs_getxattr(struct vfs_node *n, const char *name, void *buf, size_t size)
{
	struct tmpfs *fs = tmpfs_of(n);
	struct tmpfs_xattr *x;
	ssize_t ret;

	ret = xattr_supported(name);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&fs->lock);
	x = *xattr_find(tinode(n), name);
	if (!x)
		ret = -ENODATA;
	else if (size && x->size > size)
		ret = -ERANGE;
	else {
		if (size && x->size)
			memcpy(buf, x->value, x->size);
		ret = (ssize_t)x->size;
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

static int tmpfs_setxattr(struct vfs_node *n, const char *name, const void *value, size_t size,
			  int flags)
{
	struct tmpfs *fs = tmpfs_of(n);
	struct tmpfs_inode *in = tinode(n);
	struct tmpfs_xattr **pp, *x;
	void *copy = NULL;
	size_t old, need;
	int err;

	err = xattr_supported(name);
	if (err < 0)
		return err;
	if (size) {
		copy = malloc(size);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, value, size);
	}
	pthread_mutex_lock(&fs->lock);
	pp = xattr_find(in, name);
	x = *pp;
	if (x && (flags & VFS_XATTR_CREATE)) {
		err = -EEXIST;
		goto out_unlock;
	}
	if (!x && (flags & VFS_XATTR_REPLACE)) {
		err = -ENODATA;
		goto out_unlock;
	}
	old = x ? strlen(x->name) + 1 + x->size : 0;
	need = strlen(name) + 1 + size;
	if (in->xattr_bytes - old + need > TMPFS_XATTR_INODE_MAX) {
		err = -ENOSPC;
		goto out_unlock;
	}
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (x)
			x->name = strdup(name);
		if (!x || !x->name) {
			free(x);
			err = -ENOMEM;
			goto out_unlock;
		}
		*pp = x; /* appended: pp was the list's end */
	}
	free(x->value);
	x->value = steal_pointer(&copy);
	x->size = size;
	in->xattr_bytes = in->xattr_bytes - old + need;
	in->ctime = now();
out_unlock:
	pthread_mutex_unlock(&fs->lock);
	free(copy);
	return err;
}

static ssize_t tmpfs_listxattr(struct vfs_node *n, char *buf, size_t size, bool list_trusted)
{
	struct tmpfs *fs = tmpfs_of(n);
	size_t len = 0;
	ssize_t ret;

	pthread_mutex_lock(&fs->lock);
	for (struct tmpfs_xattr *x = tinode(n)->xattrs; x; x = x->next) {
		size_t l = strlen(x->name) + 1;

		if (!list_trusted && !strncmp(x->name, "trusted.", 8))
			continue;
		if (size && len + l > size) {
			pthread_mutex_unlock(&fs->lock);
			return -ERANGE;
		}
		if (size)
			memcpy(buf + len, x->name, l);
		len += l;
	}
	ret = (ssize_t)len;
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

static int tmpfs_removexattr(struct vfs_node *n, const char *name)
{
	struct tmpfs *fs = tmpfs_of(n);
	struct tmpfs_inode *in = tinode(n);
	struct tmpfs_xattr **pp, *x;
	int err;

	err = xattr_supported(name);
	if (err < 0)
		return err;
	pthread_mutex_lock(&fs->lock);
	pp = xattr_find(in, name);
	x = *pp;
	if (!x) {
		pthread_mutex_unlock(&fs->lock);
		return -ENODATA;
	}
	*pp = x->next;
	in->xattr_bytes -= strlen(x->name) + 1 + x->size;
	in->ctime = now();
	pthread_mutex_unlock(&fs->lock);
	free(x->name);
	free(x->value);
	free(x);
	return 0;
}

static const struct vfs_node_ops tmpfs_node_ops = {
	.lookup = tmpfs_lookup,
	.getattr = tmpfs_getattr,
	.readlink = tmpfs_readlink,
	.open = tmpfs_open,
	.iterate = tmpfs_iterate,
	.statfs = tmpfs_statfs,
	.release = tmpfs_node_release,
	.create = tmpfs_create_op,
	.tmpfile = tmpfs_tmpfile,
	.link = tmpfs_link,
	.unlink = tmpfs_unlink,
	.rmdir = tmpfs_rmdir,
	.rename = tmpfs_rename,
	.setattr = tmpfs_setattr,
	.getxattr = tmpfs_getxattr,
	.setxattr = tmpfs_setxattr,
	.listxattr = tmpfs_listxattr,
	.removexattr = tmpfs_removexattr,
};

static const struct vfs_fs_ops tmpfs_fs_ops = {
	.release = tmpfs_fs_release,
};

/* --- the overlay's marks --- */

bool tmpfs_opaque(struct vfs_node *dir)
{
	struct tmpfs *fs = tmpfs_of(dir);
	bool v;

	pthread_mutex_lock(&fs->lock);
	v = tinode(dir)->opaque;
	pthread_mutex_unlock(&fs->lock);
	return v;
}

void tmpfs_set_opaque(struct vfs_node *dir, bool opaque)
{
	struct tmpfs *fs = tmpfs_of(dir);

	pthread_mutex_lock(&fs->lock);
	tinode(dir)->opaque = opaque;
	pthread_mutex_unlock(&fs->lock);
}

uint64_t tmpfs_origin_ino(struct vfs_node *n)
{
	struct tmpfs *fs = tmpfs_of(n);
	uint64_t v;

	pthread_mutex_lock(&fs->lock);
	v = tinode(n)->origin_ino;
	pthread_mutex_unlock(&fs->lock);
	return v;
}

void tmpfs_set_origin_ino(struct vfs_node *n, uint64_t ino)
{
	struct tmpfs *fs = tmpfs_of(n);

	pthread_mutex_lock(&fs->lock);
	tinode(n)->origin_ino = ino;
	pthread_mutex_unlock(&fs->lock);
}

/* --- creation --- */

static uint64_t default_size_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || psz <= 0)
		return 1ULL << 30;
	return (uint64_t)pages * (uint64_t)psz / 2;
}

struct vfs_fs *tmpfs_create(struct memfile *mf, uint64_t size_limit, uint32_t mode, uint32_t uid,
			    uint32_t gid)
{
	struct vfs_create_args ra = { .mode = S_IFDIR | (mode & 07777), .uid = uid, .gid = gid };
	struct tmpfs *fs = calloc(1, sizeof(*fs));
	struct tmpfs_inode *in;
	struct tmpfs_node *root;

	if (!fs)
		return NULL;
	vfs_fs_init(&fs->base, &tmpfs_fs_ops, "tmpfs");
	{
		pthread_mutexattr_t ma;

		/* Recursive: putting a node under the lock may release it (and take the lock). */
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&fs->lock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	fs->mf = mf;
	fs->size_limit = size_limit ? size_limit : default_size_limit();
	fs->next_ino = 1;
	in = tmpfs_inode_new(fs, &ra);
	root = in ? tmpfs_node_new(fs, NULL, "", in) : NULL;
	if (!root) {
		free(in);
		pthread_mutex_destroy(&fs->lock);
		free(fs);
		return NULL;
	}
	fs->base.root = &root->base;
	return &fs->base;
}

int tmpfs_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	}
	if (*end || (shift && v > (~0ULL >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* --- seals and memfd_create --- */

int tmpfs_file_seals(struct file *f)
{
	struct tmpfs_node *n;
	int seals;

	if (f->ops != &tmpfs_file_ops)
		return -EINVAL;
	n = file_node(f);
	pthread_mutex_lock(&tmpfs_of(&n->base)->lock);
	seals = (int)n->inode->seals;
	pthread_mutex_unlock(&tmpfs_of(&n->base)->lock);
	return seals;
}

int tmpfs_file_add_seals(struct file *f, unsigned int seals)
{
	struct tmpfs_node *n;
	struct tmpfs *fs;
	int err = 0;

	if (f->ops != &tmpfs_file_ops)
		return -EINVAL;
	if (seals & ~(unsigned int)LINUX_F_SEAL_ALL)
		return -EINVAL;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EPERM;
	n = file_node(f);
	fs = tmpfs_of(&n->base);
	pthread_mutex_lock(&fs->lock);
	if (n->inode->seals & LINUX_F_SEAL_SEAL)
		err = -EPERM;
	else
		n->inode->seals |= seals;
	pthread_mutex_unlock(&fs->lock);
	return err;
}

const char *tmpfs_memfd_name(const struct vfs_node *n)
{
	return tmpfs_is_node(n) ? tinode(n)->memfd_name : NULL;
}

/* The hidden tmpfs and mount memfds live in, one per memory file (one per sandbox). */
static pthread_mutex_t memfd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct memfile *memfd_mf;
static struct vfs_fs *memfd_fs;
static struct vfs_mount *memfd_mnt;

struct vfs_fs *tmpfs_memfd_fs(struct memfile *mf, struct vfs_mount **mnt)
{
	struct vfs_fs *ret = NULL;

	pthread_mutex_lock(&memfd_lock);
	if (!memfd_fs || memfd_mf != mf) {
		struct vfs_fs *fs = tmpfs_create(mf, 0, 01777, 0, 0);
		struct vfs_mount *m = fs ? vfs_mount_create(fs, fs->root, MS_NOSUID | MS_NODEV) :
					   NULL;

		if (!m) {
			if (fs)
				vfs_fs_put(fs);
			goto out;
		}
		/* An earlier sandbox's (unit tests) stays: its files may still be open. */
		memfd_fs = fs;
		memfd_mnt = m;
		memfd_mf = mf;
	}
	ret = memfd_fs;
	*mnt = memfd_mnt;
out:
	pthread_mutex_unlock(&memfd_lock);
	return ret;
}

int tmpfs_memfd_create(struct memfile *mf, const char *name, unsigned int flags, struct file **out)
{
	struct vfs_create_args a = { .mode = S_IFREG | 0777 };
	struct vfs_mount *mnt;
	struct vfs_node *node;
	struct tmpfs_inode *in;
	struct vfs_fs *mfs;
	struct file *f;
	int err;

	if (strlen(name) > TMPFS_MEMFD_NAME_MAX)
		return -EINVAL;
	if (flags & TMPFS_MEMFD_NOEXEC)
		a.mode = S_IFREG | 0666;
	mfs = tmpfs_memfd_fs(mf, &mnt);
	if (!mfs)
		return -ENOMEM;
	pthread_mutex_lock(&memfd_lock);
	err = tmpfs_tmpfile(mfs->root, &a, &node);
	if (err < 0) {
		pthread_mutex_unlock(&memfd_lock);
		return err;
	}
	in = tinode(node);
	in->tmpfile = false; /* linkat cannot give a memfd a name */
	in->memfd_name = strdup(name);
	if (flags & TMPFS_MEMFD_NOEXEC)
		in->seals = LINUX_F_SEAL_EXEC;
	else if (flags & TMPFS_MEMFD_ALLOW_SEALING)
		in->seals = 0;
	f = in->memfd_name ? tmpfs_open(node, O_RDWR | 0100000 /* O_LARGEFILE */) :
			     ERR_PTR(-ENOMEM);
	if (IS_ERR(f)) {
		vfs_node_put(node);
		pthread_mutex_unlock(&memfd_lock);
		return (int)PTR_ERR(f);
	}
	f->flags = O_RDWR | 0100000; /* Linux's O_LARGEFILE (glibc's is 0 on x86-64) */
	f->mnt = mnt;
	f->node = node; /* the reference tmpfs_tmpfile gave */
	vfs_mount_get(f->mnt);
	pthread_mutex_unlock(&memfd_lock);
	*out = f;
	return 0;
}
