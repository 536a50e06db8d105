/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root filesystem, served by the gofer (sentry/fs/gofer/client.h).
 *
 * Each node holds a gofer handle, its attributes and a cache of its children by name
 * (negative entries too on a read-only mount). The host is assumed not to change the tree
 * behind the sandbox's back: names are never revalidated (see sentry/vfs/README.md). Opening a
 * file asks the gofer once for a host FD; reads and writes then go straight to that FD.
 *
 * Writable mounts (--overlay=none, volumes) change the host through the gofer's write
 * messages. Attributes are then cached per node with the mount's generation number: every
 * change the sandbox makes through the mount (namespace changes, setattr, writes, truncation,
 * fallocate through a donated FD) bumps the generation, so that a cached attribute is used
 * only while nothing was changed since it was read (hard links share an inode: one change
 * invalidates every name). Mounts whose host tree others may change as well (volumes) do not
 * cache attributes at all.
 *
 * Page cache (MAP_SHARED): a node's pages in the memory file, filled from a donated FD on the
 * first get_pages of each page and kept until the node goes (the cache holds one reference per
 * page, each mapping its own). Once a page is cached it is the truth for the sandbox: read(2)
 * copies cached pages over what the host FD gave, write(2) writes the host FD and the cached
 * pages alike, truncation drops (and zeroes) cached pages past the new size. Pages handed to a
 * writable mapping are dirty: msync and the release of a writable file write them back (never
 * past the host file's size). Changes the host makes to a cached page are not seen.
 *
 * Donated FD cache (read-only mounts): the first read-only open of a regular file keeps a
 * duplicate of the FD the gofer donated in the node, and later read-only opens of the node take
 * a dup(2) of it instead of asking the gofer again, so that opening an unchanged file needs no
 * round trip (ld.so opening libc on every exec, compilers re-reading headers). At most
 * fs->fdc_max FDs are kept per mount (GOFER_FD_CACHE_MAX unless gofer_fs_set_fd_cache says
 * otherwise), in LRU order: the least recently opened node gives its FD back first. Coherence:
 * the cached FD and the node's handle name the same host inode (both were opened from the
 * handle), so the cache shows exactly what a new OPEN of the handle would (data changes made on
 * the host are seen by both, a file the host replaces by rename is seen by neither, as names
 * are not revalidated). Opens are dups, so each file has its own FD; they share the host file
 * offset, which no regular-file read or write uses (all are preadv/pwritev), and the status
 * flags, which nothing changes on a read-only FD.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/fs/gofer/gofer_fs.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memfile.h"
#include "sentry/vfs/fs.h"

/*
 * Weak: the VFS unit tests link this file with a fake client (tests/unit/vfs/fake_gofer.c) that
 * predates these calls. Without them, directories are listed with GETDENTS and names walked to
 * one by one, as before. The sentry always has them (client.c is linked for gofer_walk).
 */
#pragma weak gofer_getdents_eof
#pragma weak gofer_getdents_plus

/* Donated FDs of read-only files kept per mount by default (see the top of the file). */
#define GOFER_FD_CACHE_MAX 128

/* The longest security.capability value cached per node (v3 is 24 bytes). */
#define GOFER_CAPS_CACHE_MAX 32
#define GOFER_CAPS_NAME "security.capability"

struct gofer_node;

struct gofer_fs {
	struct vfs_fs base;
	struct gofer_client *gc; /* not owned: the kernel's, outlives the filesystem */
	bool readonly;
	bool cache_attrs; /* writable: cached attributes are valid while gen is unchanged */
	bool file_root; /* serves one regular file (a file bind): its attributes are never cached */
	struct memfile *mf; /* not owned: the kernel's, for the page cache; NULL: no MAP_SHARED */
	uint64_t gen; /* atomic: bumped by every change the sandbox makes (writable mounts) */
	/* The donated FD cache: nodes with a cached FD, most recently used first. */
	pthread_mutex_t fdc_lock; /* protects fdc_* here and every node's ro_fd, fdc_prev/next */
	struct gofer_node *fdc_head, *fdc_tail;
	int fdc_n, fdc_max;
};

/* One entry of a directory's cached listing (read-only mounts). */
struct gofer_lent {
	char *name;
	uint64_t ino;
	int64_t next; /* the gofer's cookie of the following entry */
	uint8_t type; /* DT_* */
};

struct gofer_node {
	struct vfs_node base;
	/*
	 * Owned: closed on release. 0 (read-only mounts) for a node made from a directory listing
	 * and not walked to yet: gofer_node_handle walks to it on first use.
	 */
	uint64_t handle;
	/* protects handle, attr, attr_gen, children, complete, misses, link, link_len, created_fd
	 * and the listing while it is built */
	pthread_mutex_t lock;
	struct gofer_attr attr;
	uint64_t attr_gen; /* writable mounts: fs->gen when attr was read (0: never valid) */
	int created_fd; /* owned: the FD the creating gofer_create donated, for the open after */
	bool unlinked; /* its name was removed (or moved over): it cannot be linked by name */
	struct vfs_dcache children;
	/*
	 * Directories of read-only mounts, once listed with GETDENTSPLUS (gofer_dir_fill): the
	 * listing in the gofer's order (immutable once listed is set, so read without the lock),
	 * and whether children then holds every name of the directory (a name missing from it does
	 * not exist: no WALK is needed to say so). misses counts lookups that had to walk.
	 */
	struct gofer_lent *lents;
	size_t nlents;
	bool listed; /* atomic (release/acquire): lents is complete and immutable */
	bool complete;
	uint32_t misses;
	size_t lent_hint; /* where the last iterate stopped (a hint, unlocked) */
	char *link; /* symlink target, cached on first read (read-only mounts) */
	size_t link_len;
	/* The page cache (see the top of the file), sorted by pgoff; protected by lock. */
	struct gofer_page *pages;
	size_t npages, cap_pages;
	/* The donated FD cache (read-only mounts; under fs->fdc_lock): -1 when none. */
	int ro_fd;
	struct gofer_node *fdc_prev, *fdc_next;
	/*
	 * security.capability, which every exec reads (read-only mounts but file binds, as
	 * attributes; under lock): caps_len is its length, or -ENODATA/-EOPNOTSUPP, valid once
	 * caps_known is set.
	 */
	bool caps_known;
	ssize_t caps_len;
	uint8_t caps[GOFER_CAPS_CACHE_MAX];
};

/* A page of a node's page cache: the file's bytes [pgoff * 4096, +4096). */
struct gofer_page {
	uint64_t pgoff;
	uint64_t mf_off; /* memory-file offset; the cache holds one reference */
	bool dirty; /* handed to a writable mapping: written back by msync and release */
};

/* An open regular file: the host FD the gofer donated. */
struct gofer_file {
	int fd; /* owned */
	struct gofer_fs *fs; /* for the generation bump of writes (the file holds a mount) */
	struct gofer_node *gn; /* referenced: its page cache (f->node may be an overlay's) */
};

static struct gofer_fs *gofer_fs_of(struct vfs_node *n)
{
	return container_of(n->fs, struct gofer_fs, base);
}

static struct gofer_node *gofer_node_of(struct vfs_node *n)
{
	return container_of(n, struct gofer_node, base);
}

static const struct vfs_node_ops gofer_node_ops;

static struct gofer_node *gofer_node_new(struct gofer_fs *fs, struct vfs_node *parent,
					 const char *name, uint64_t handle,
					 const struct gofer_attr *attr)
{
	struct gofer_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &gofer_node_ops, &fs->base, parent, name, attr->mode) < 0) {
		free(n);
		return NULL;
	}
	n->handle = handle;
	n->attr = *attr;
	n->created_fd = -1;
	n->ro_fd = -1;
	pthread_mutex_init(&n->lock, NULL);
	vfs_dcache_init(&n->children);
	return n;
}

/* The mount's generation: read before asking the gofer, stored with what it answered. */
static uint64_t gofer_gen(struct gofer_fs *fs)
{
	return __atomic_load_n(&fs->gen, __ATOMIC_ACQUIRE);
}

/* Records a change made through fs: every cached attribute is stale from now on. */
static void gofer_changed(struct gofer_fs *fs)
{
	if (!fs->readonly)
		__atomic_add_fetch(&fs->gen, 1, __ATOMIC_RELEASE);
}

/* Stores attributes read at generation gen (a later change since then keeps them stale). */
static void gofer_set_attr(struct gofer_node *gn, const struct gofer_attr *ga, uint64_t gen)
{
	pthread_mutex_lock(&gn->lock);
	gn->attr = *ga;
	gn->attr_gen = gen;
	pthread_mutex_unlock(&gn->lock);
}

/*
 * The handle of gn, walking to it from its parent when it has none yet (a node made from a
 * directory listing: read-only mounts, where names never change). Returns the handle (not 0)
 * or -errno: -ESTALE when the host's node is no longer of the node's type, -ENOENT when its
 * name is gone.
 */
static int64_t gofer_node_handle(struct gofer_node *gn)
{
	struct gofer_fs *fs = gofer_fs_of(&gn->base);
	const char *names[1] = { gn->base.name };
	struct gofer_attr attr;
	uint64_t h, extra = 0;
	int64_t ph;
	int n;

	pthread_mutex_lock(&gn->lock);
	h = gn->handle;
	pthread_mutex_unlock(&gn->lock);
	if (h)
		return (int64_t)h;
	if (!gn->base.parent)
		return -EIO; /* a root always has its handle */
	ph = gofer_node_handle(gofer_node_of(gn->base.parent));
	if (ph < 0)
		return ph;
	n = gofer_walk(fs->gc, (uint64_t)ph, names, 1, &h, &attr);
	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	if ((attr.mode & S_IFMT) != (gn->base.type & S_IFMT)) {
		gofer_close(fs->gc, &h, 1);
		return -ESTALE;
	}
	pthread_mutex_lock(&gn->lock);
	if (gn->handle) {
		extra = h; /* another thread walked to it first */
		h = gn->handle;
	} else {
		gn->handle = h;
	}
	pthread_mutex_unlock(&gn->lock);
	if (extra)
		gofer_close(fs->gc, &extra, 1);
	return (int64_t)h;
}

/* Entries taken from one GETDENTSPLUS reply into a directory (gofer_dir_fill). */
struct gofer_fill {
	struct gofer_node *gd;
	struct gofer_lent *v;
	size_t n, cap;
	int64_t cookie; /* the next entry's */
	bool all_attrs; /* every entry came with its attributes */
	int err;
};

static int gofer_fill_one(void *arg, const struct gofer_dirent_plus *e)
{
	struct gofer_fill *fl = arg;
	struct gofer_node *gd = fl->gd;
	struct gofer_fs *fs = gofer_fs_of(&gd->base);
	uint64_t h = e->handle;
	struct vfs_node *cached;
	struct gofer_lent *le;
	char name[GOFER_NAME_MAX + 1];

	memcpy(name, e->d.name, e->d.namelen);
	name[e->d.namelen] = '\0';
	fl->cookie = e->d.next;
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 64;
		struct gofer_lent *v = realloc(fl->v, cap * sizeof(*v));

		if (!v)
			goto nomem;
		fl->v = v;
		fl->cap = cap;
	}
	le = &fl->v[fl->n];
	le->name = strdup(name);
	if (!le->name)
		goto nomem;
	le->ino = e->d.ino;
	le->next = e->d.next;
	le->type = e->d.type;
	fl->n++;
	if (!(e->flags & GOFER_DIRENT_ATTR)) {
		fl->all_attrs = false;
		return 0;
	}
	/* A node known already (walked to, or made by an earlier listing) stays as it is. */
	if (vfs_dcache_lookup(&gd->children, name, &cached) && cached) {
		vfs_node_put(cached);
	} else {
		struct gofer_node *child = gofer_node_new(fs, &gd->base, name, h, &e->attr);

		if (!child) {
			fl->all_attrs = false; /* not cached: a lookup must walk to it */
		} else {
			h = 0; /* the child's now */
			if (vfs_dcache_insert(&gd->children, name, &child->base) < 0) {
				vfs_dcache_remove(&gd->children, name);
				fl->all_attrs = false;
			}
			vfs_node_put(&child->base); /* the cache holds it */
		}
	}
	if (h)
		gofer_close(fs->gc, &h, 1);
	return 0;

nomem:
	if (h)
		gofer_close(fs->gc, &h, 1);
	fl->err = -ENOMEM;
	return 1;
}

/*
 * Lists directory gd (a read-only mount's) with GETDENTSPLUS from its start to its end: every
 * name with its attributes (and each subdirectory's handle) becomes a cached child, the listing
 * is kept for gofer_iterate, and the directory is complete when every entry came with its
 * attributes. gd->lock held, and gd has its handle. Returns 0 or -errno (then nothing is
 * listed; the children made so far stay cached, as walked-to nodes do).
 */
static int gofer_dir_fill(struct gofer_node *gd)
{
	struct gofer_fs *fs = gofer_fs_of(&gd->base);
	struct gofer_fill fl = { .gd = gd, .all_attrs = true };
	uint64_t h = gd->handle;
	bool eof = false;
	int n = 0;

	if (!h)
		return -EIO;
	if (!gofer_getdents_plus)
		return -ENOSYS; /* a test's client without it */
	while (!eof) {
		int64_t before = fl.cookie;

		n = gofer_getdents_plus(fs->gc, h, fl.cookie, GOFER_GETDENTS_MAX,
					GOFER_GETDENTS_DIR_HANDLES, gofer_fill_one, &fl, &eof);
		if (n < 0 || fl.err < 0)
			break;
		/* A reply that does not move the cookie and is not the end would loop. */
		if (!eof && (n == 0 || fl.cookie == before)) {
			n = -EIO;
			break;
		}
	}
	if (n < 0 || fl.err < 0) {
		for (size_t i = 0; i < fl.n; i++)
			free(fl.v[i].name);
		free(fl.v);
		return n < 0 ? n : fl.err;
	}
	gd->lents = fl.v;
	gd->nlents = fl.n;
	gd->complete = fl.all_attrs;
	__atomic_store_n(&gd->listed, true, __ATOMIC_RELEASE);
	return 0;
}

static struct vfs_node *gofer_lookup(struct vfs_node *dir, const char *name)
{
	struct gofer_node *gd = gofer_node_of(dir);
	struct gofer_fs *fs = gofer_fs_of(dir);
	const char *names[1] = { name };
	struct gofer_node *child;
	struct vfs_node *cached;
	struct gofer_attr attr;
	uint64_t handle, gen;
	int64_t dh;
	int n;

	/* A directory made from a listing walks to its own handle first (not under its lock). */
	dh = gofer_node_handle(gd);
	if (dh < 0)
		return ERR_PTR(dh);
	/* The lock is held across the walk so that two lookups of a name make one node. */
	pthread_mutex_lock(&gd->lock);
	if (vfs_dcache_lookup(&gd->children, name, &cached)) {
		pthread_mutex_unlock(&gd->lock);
		return cached ? cached : ERR_PTR(-ENOENT);
	}
	/*
	 * Read-only: a directory that keeps missing is listed whole with its attributes (git
	 * status, a compiler's include path, python's imports look up many names of one
	 * directory), so that the others need no round trip, and names it does not list are known
	 * not to exist. A small one on its second miss; a big one after a miss per 8 KiB of it
	 * (about 250 names), so that two misses in /usr/lib/x86_64-linux-gnu (the loader's) do not
	 * cost a listing of its thousand files with their attributes.
	 */
	if (fs->readonly && !gd->complete && !gd->listed &&
	    ++gd->misses >= MAX(2, gd->attr.size / 8192) && gofer_dir_fill(gd) == 0) {
		if (vfs_dcache_lookup(&gd->children, name, &cached)) {
			pthread_mutex_unlock(&gd->lock);
			return cached ? cached : ERR_PTR(-ENOENT);
		}
	}
	if (fs->readonly && gd->complete) {
		pthread_mutex_unlock(&gd->lock);
		return ERR_PTR(-ENOENT);
	}
	gen = gofer_gen(fs);
	n = gofer_walk(fs->gc, (uint64_t)dh, names, 1, &handle, &attr);
	if (n <= 0) {
		if (n == 0 && fs->readonly)
			vfs_dcache_insert(&gd->children, name, NULL); /* best effort */
		pthread_mutex_unlock(&gd->lock);
		return ERR_PTR(n == 0 ? -ENOENT : n);
	}
	child = gofer_node_new(fs, dir, name, handle, &attr);
	if (!child) {
		pthread_mutex_unlock(&gd->lock);
		gofer_close(fs->gc, &handle, 1);
		return ERR_PTR(-ENOMEM);
	}
	child->attr_gen = gen;
	/* Uncached when out of memory: the node still works, it is just looked up again. */
	vfs_dcache_insert(&gd->children, name, &child->base);
	pthread_mutex_unlock(&gd->lock);
	return &child->base;
}

static void attr_from_gofer(struct vfs_attr *a, const struct gofer_attr *g, uint64_t dev)
{
	*a = (struct vfs_attr){
		.dev = dev,
		.ino = g->ino,
		.nlink = g->nlink,
		.mode = g->mode,
		.uid = g->uid,
		.gid = g->gid,
		.rdev = vfs_mkdev(major(g->rdev), minor(g->rdev)),
		.size = g->size,
		.blksize = g->blksize,
		.blocks = g->blocks,
		.atime = { .tv_sec = g->atime_sec, .tv_nsec = g->atime_nsec },
		.mtime = { .tv_sec = g->mtime_sec, .tv_nsec = g->mtime_nsec },
		.ctime = { .tv_sec = g->ctime_sec, .tv_nsec = g->ctime_nsec },
	};
}

static int gofer_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	uint64_t gen = gofer_gen(fs);
	struct gofer_attr ga;
	bool cached;
	int err;

	pthread_mutex_lock(&gn->lock);
	ga = gn->attr;
	/* A bound file is the host's to change even when read-only here (podman rewrites
	 * /etc/hosts): one STAT per stat, as for a writable volume. */
	cached = (fs->readonly && !fs->file_root) || (fs->cache_attrs && gn->attr_gen == gen);
	pthread_mutex_unlock(&gn->lock);
	if (!cached) {
		/* A writable mount changes under us (our own writes, or the host's): ask again. */
		err = gofer_stat(fs->gc, gn->handle, &ga);
		if (err < 0)
			return err;
		gofer_set_attr(gn, &ga, gen);
	}
	attr_from_gofer(attr, &ga, fs->base.dev);
	return 0;
}

static ssize_t gofer_readlink_op(struct vfs_node *n, char *buf, size_t len)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	ssize_t ret;

	int64_t h;

	if (!vfs_node_is_symlink(n))
		return -EINVAL;
	/* A symlink made from a listing walks to its handle first (not under its lock). */
	h = gofer_node_handle(gn);
	if (h < 0)
		return h;
	pthread_mutex_lock(&gn->lock);
	if (!gn->link) {
		char *target = malloc(VFS_PATH_MAX);
		ssize_t r;

		if (!target) {
			pthread_mutex_unlock(&gn->lock);
			return -ENOMEM;
		}
		r = gofer_readlink(fs->gc, (uint64_t)h, target, VFS_PATH_MAX);
		if (r < 0) {
			pthread_mutex_unlock(&gn->lock);
			free(target);
			return r;
		}
		gn->link = target;
		gn->link_len = (size_t)r;
	}
	memcpy(buf, gn->link, MIN(len, gn->link_len));
	ret = (ssize_t)gn->link_len;
	if (!fs->readonly) {
		free(gn->link);
		gn->link = NULL;
	}
	pthread_mutex_unlock(&gn->lock);
	return ret;
}

/* --- regular files --- */

static int gofer_file_fd(struct file *f)
{
	return ((struct gofer_file *)f->priv)->fd;
}

/* Index of the first cached page of gn at or above pgoff (gn->lock held). */
static size_t pcache_lower(const struct gofer_node *gn, uint64_t pgoff)
{
	size_t lo = 0, hi = gn->npages;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (gn->pages[mid].pgoff < pgoff)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Copies between the cached pages of gn and the file range [off, off + len) that iov (iovcnt
 * segments, len bytes in all) holds: to_cache copies the iov's bytes into the cached pages
 * (write(2)), else the cached pages' bytes into the iov (read(2)). Uncached parts are skipped.
 */
static void pcache_copy(struct gofer_fs *fs, struct gofer_node *gn, const struct iovec *iov,
			int iovcnt, int64_t off, size_t len, bool to_cache)
{
	if (len == 0)
		return;
	pthread_mutex_lock(&gn->lock);
	uint64_t first = (uint64_t)off / PAGE_SIZE, end = (uint64_t)off + len;
	for (size_t i = pcache_lower(gn, first); i < gn->npages; i++) {
		const struct gofer_page *pg = &gn->pages[i];
		uint64_t a = MAX(pg->pgoff * PAGE_SIZE, (uint64_t)off);
		uint64_t b = MIN(pg->pgoff * PAGE_SIZE + PAGE_SIZE, end);
		if (a >= end)
			break;
		uint8_t *page = memfile_ptr(fs->mf, pg->mf_off) + (a - pg->pgoff * PAGE_SIZE);
		/* Walk the iov to byte a - off, then copy b - a bytes. */
		size_t skip = a - (uint64_t)off, left = b - a;
		for (int k = 0; k < iovcnt && left; k++) {
			if (skip >= iov[k].iov_len) {
				skip -= iov[k].iov_len;
				continue;
			}
			size_t c = MIN(iov[k].iov_len - skip, left);
			uint8_t *io = (uint8_t *)iov[k].iov_base + skip;
			if (to_cache)
				memcpy(page, io, c);
			else
				memcpy(io, page, c);
			page += c;
			left -= c;
			skip = 0;
		}
	}
	pthread_mutex_unlock(&gn->lock);
}

/* Whether gn has a page cache (read without the lock: a hint; pcache_copy rechecks). */
static bool pcache_used(struct gofer_node *gn)
{
	return __atomic_load_n(&gn->npages, __ATOMIC_RELAXED) != 0;
}

static ssize_t gofer_file_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct gofer_file *gf = f->priv;
	int fd = gofer_file_fd(f);
	ssize_t n;

	do {
		n = pos ? preadv(fd, iov, iovcnt, *pos) : readv(fd, iov, iovcnt);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* Cached pages are the truth: a shared mapping may have written them. */
	if (pos && n > 0 && pcache_used(gf->gn))
		pcache_copy(gf->fs, gf->gn, iov, iovcnt, *pos, (size_t)n, false);
	if (pos)
		*pos += n;
	return n;
}

/*
 * RLIMIT_FSIZE of the caller for a write of iov at off (the end with O_APPEND): returns 0 with
 * *cnt and *cut NULL, or with *cut the iovecs cut at the limit (the caller frees them), or
 * -EFBIG (-ENOMEM).
 */
static int gofer_write_limit(int fd, const struct iovec *iov, int *cnt, int64_t off, bool append,
			     struct iovec **cut)
{
	size_t total = 0, allowed;
	struct stat st;
	int err;

	*cut = NULL;
	for (int i = 0; i < *cnt; i++)
		total += iov[i].iov_len;
	if (append && fstat(fd, &st) == 0)
		off = st.st_size;
	allowed = total;
	err = vfs_write_check_limit(off, &allowed);
	if (err < 0 || allowed == total)
		return err;
	*cut = malloc((size_t)*cnt * sizeof(**cut));
	if (!*cut)
		return -ENOMEM;
	for (int i = 0; i < *cnt; i++) {
		(*cut)[i] = iov[i];
		if (iov[i].iov_len >= allowed) {
			(*cut)[i].iov_len = allowed;
			*cnt = i + 1;
			break;
		}
		allowed -= iov[i].iov_len;
	}
	return 0;
}

static int gofer_setattr_op(struct vfs_node *n, const struct vfs_setattr *sa);

/*
 * The set-id bits a write must keep on the host (0: none): the host clears them for the sentry,
 * which has no CAP_FSETID; a caller with it keeps them, as on Linux (cached mode).
 */
static uint32_t gofer_write_keep_setid(struct gofer_node *gn)
{
	uint32_t mode;

	pthread_mutex_lock(&gn->lock);
	mode = gn->attr.mode;
	pthread_mutex_unlock(&gn->lock);
	if (!S_ISREG(mode) || !(mode & (S_ISUID | S_ISGID)) || vfs_write_kill_priv(mode) != mode)
		return 0;
	return mode & 07777;
}

static ssize_t gofer_file_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	int fd = gofer_file_fd(f);
	bool append = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_APPEND;
	_cleanup_free_ struct iovec *cut = NULL;
	uint32_t keep = gofer_write_keep_setid(((struct gofer_file *)f->priv)->gn);
	ssize_t n;

	if (pos) {
		int err = gofer_write_limit(fd, iov, &iovcnt, *pos, append, &cut);

		if (err < 0)
			return err;
		if (cut)
			iov = cut;
	}
	do {
		/* The host FD has O_APPEND when the guest asked for it: write at its end. */
		n = (pos && !append) ? pwritev(fd, iov, iovcnt, *pos) : writev(fd, iov, iovcnt);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	struct gofer_file *gf = f->priv;
	if (keep && n > 0) {
		struct vfs_setattr sa = { .valid = VFS_SETATTR_MODE, .mode = keep };

		gofer_setattr_op(&gf->gn->base, &sa);
	}
	gofer_changed(gf->fs);
	int64_t start = pos ? *pos : -1;
	if (pos) {
		if (append) {
			off_t end = lseek(fd, 0, SEEK_CUR);

			if (end >= 0) {
				*pos = end;
				start = end - n;
			} else {
				start = -1;
			}
		} else {
			*pos += n;
		}
	}
	/* Shared mappings see write(2) at once: cached pages get the same bytes. */
	if (start >= 0 && n > 0 && pcache_used(gf->gn))
		pcache_copy(gf->fs, gf->gn, iov, iovcnt, start, (size_t)n, true);
	return n;
}

static int64_t gofer_file_llseek(struct file *f, int64_t off, int whence)
{
	int fd = gofer_file_fd(f);
	struct stat st;

	if (whence == SEEK_DATA || whence == SEEK_HOLE) {
		/* Holes are the host's to know; lseek moves only the host FD's unused offset. */
		off_t r = lseek(fd, off, whence);

		return r < 0 ? -errno : r;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	return vfs_generic_llseek(f, off, whence, st.st_size);
}

/*
 * Writes the dirty cached pages of gn in [pgoff, pgoff + npages) back through fd, never past
 * the host file's size (a mapping past the end does not grow the file). Returns 0 or -errno.
 */
static int pcache_writeback(struct gofer_fs *fs, struct gofer_node *gn, int fd, uint64_t pgoff,
			    uint64_t npages)
{
	struct stat st;
	int err = 0;

	if (!pcache_used(gn))
		return 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	pthread_mutex_lock(&gn->lock);
	for (size_t i = pcache_lower(gn, pgoff); i < gn->npages; i++) {
		const struct gofer_page *pg = &gn->pages[i];
		if (pg->pgoff - pgoff >= npages)
			break;
		uint64_t at = pg->pgoff * PAGE_SIZE;
		if (!pg->dirty || at >= (uint64_t)st.st_size)
			continue;
		size_t len = (size_t)MIN((uint64_t)PAGE_SIZE, (uint64_t)st.st_size - at);
		ssize_t w;
		do {
			w = pwrite(fd, memfile_ptr(fs->mf, pg->mf_off), len, (off_t)at);
		} while (w < 0 && errno == EINTR);
		if (w < 0 && !err)
			err = -errno;
	}
	pthread_mutex_unlock(&gn->lock);
	if (err == 0)
		gofer_changed(fs);
	return err;
}

/* The bounce buffer of pcache_fill (on the stack of the calling task's thread). */
#define PCACHE_BOUNCE (64 * 1024)

/*
 * Copies the host file's bytes [pos, pos + len) (fewer at its end) into the memory file at off,
 * through a bounce buffer and pwrite(2) on the memory file rather than pread(2) into the
 * sentry's mapping of it: the pages are then allocated by the write, neither zeroed first nor
 * faulted into the sentry's page tables one by one (libc's 1.9 MB: 0.7 ms instead of 1.4 here).
 * Returns 0 or -errno.
 */
static int pcache_fill(struct memfile *mf, int fd, uint64_t off, uint64_t pos, size_t len)
{
	uint8_t buf[PCACHE_BOUNCE];
	size_t done = 0;

	while (done < len) {
		size_t want = MIN(len - done, sizeof(buf));
		ssize_t r = pread(fd, buf, want, (off_t)(pos + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		for (size_t w = 0; w < (size_t)r;) {
			ssize_t n = pwrite(mf->fd, buf + w, (size_t)r - w, (off_t)(off + done + w));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			w += (size_t)n;
		}
		done += (size_t)r;
	}
	return 0;
}

/* Pages of the cache read from the host FD at once (a run of missing pages). */
#define PCACHE_RUN_MAX 64

/*
 * MAP_SHARED: the node's cached pages, read from the host FD on first use. Pages given to a
 * writable mapping become dirty (there are no dirty bits to tell which were written).
 */
static int gofer_file_get_pages(struct file *f, uint64_t pgoff, size_t npages, uint64_t *offs,
				bool write)
{
	struct gofer_file *gf = f->priv;
	struct gofer_node *gn = gf->gn;
	struct memfile *mf = gf->fs->mf;
	int err = 0;

	if (!mf)
		return -ENODEV;
	if (npages == 0)
		return 0;
	if (pgoff > INT64_MAX / PAGE_SIZE || npages > INT64_MAX / PAGE_SIZE - pgoff)
		return -EOVERFLOW;
	pthread_mutex_lock(&gn->lock);
	for (size_t i = 0; i < npages;) {
		uint64_t want = pgoff + i;
		size_t at = pcache_lower(gn, want), run = 1;

		if (at < gn->npages && gn->pages[at].pgoff == want) {
			i++;
			continue;
		}
		/* A run of missing pages (up to the next cached one): one allocation, one read. */
		while (i + run < npages && run < PCACHE_RUN_MAX &&
		       (at == gn->npages || gn->pages[at].pgoff > want + run))
			run++;
		if (gn->npages + run > gn->cap_pages) {
			size_t cap = gn->cap_pages ? gn->cap_pages * 2 : 16;

			while (cap < gn->npages + run)
				cap *= 2;
			struct gofer_page *np = realloc(gn->pages, cap * sizeof(*np));
			if (!np) {
				err = -ENOMEM;
				break;
			}
			gn->pages = np;
			gn->cap_pages = cap;
		}
		/* Next to the previous page when free, so that the mapping is few VMAs. */
		int64_t off = -ENOMEM;
		if (at > 0 && gn->pages[at - 1].pgoff == want - 1 &&
		    memfile_alloc_at(mf, gn->pages[at - 1].mf_off + PAGE_SIZE, run * PAGE_SIZE) ==
			    0)
			off = (int64_t)(gn->pages[at - 1].mf_off + PAGE_SIZE);
		if (off < 0)
			off = memfile_alloc(mf, run * PAGE_SIZE);
		if (off < 0) {
			err = (int)off;
			break;
		}
		/* Bytes past the end of the file stay zero (fresh memory-file pages are). */
		err = pcache_fill(mf, gf->fd, (uint64_t)off, want * PAGE_SIZE, run * PAGE_SIZE);
		if (err) {
			memfile_free(mf, (uint64_t)off, run * PAGE_SIZE);
			break;
		}
		memmove(&gn->pages[at + run], &gn->pages[at],
			(gn->npages - at) * sizeof(gn->pages[0]));
		for (size_t k = 0; k < run; k++)
			gn->pages[at + k] =
				(struct gofer_page){ .pgoff = want + k,
						     .mf_off = (uint64_t)off + k * PAGE_SIZE };
		__atomic_store_n(&gn->npages, gn->npages + run, __ATOMIC_RELAXED);
		i += run;
	}
	if (err == 0) {
		size_t at = pcache_lower(gn, pgoff);
		for (size_t i = 0; i < npages; i++) {
			struct gofer_page *pg = &gn->pages[at + i];
			if (write)
				pg->dirty = true;
			offs[i] = pg->mf_off;
			memfile_ref(mf, pg->mf_off, PAGE_SIZE);
		}
	}
	pthread_mutex_unlock(&gn->lock);
	return err;
}

/* msync(2): the dirty cached pages of the range go back to the host file. */
static int gofer_file_sync_pages(struct file *f, uint64_t pgoff, uint64_t npages, bool wait)
{
	struct gofer_file *gf = f->priv;

	if ((f->flags & O_ACCMODE) != O_RDWR)
		return 0;
	return pcache_writeback(gf->fs, gf->gn, gf->fd, pgoff, npages);
}

/* Drops the node's page cache (release): mappings keep their own references on the pages. */
static void pcache_drop(struct gofer_fs *fs, struct gofer_node *gn, uint64_t from_pgoff)
{
	size_t i = pcache_lower(gn, from_pgoff);

	for (size_t k = i; k < gn->npages; k++) {
		uint64_t off = gn->pages[k].mf_off;
		/* A mapping still holds it: it reads zeros now, not stale bytes. */
		if (memfile_page_refs(fs->mf, off) > 1)
			memfile_zero(fs->mf, off, PAGE_SIZE);
		memfile_free(fs->mf, off, PAGE_SIZE);
	}
	__atomic_store_n(&gn->npages, i, __ATOMIC_RELAXED);
}

static void gofer_file_release(struct file *f)
{
	struct gofer_file *gf = f->priv;

	/* The last chance to write what writable mappings left in the cache. */
	if ((f->flags & O_ACCMODE) == O_RDWR) {
		int err = pcache_writeback(gf->fs, gf->gn, gf->fd, 0, UINT64_MAX);
		if (err < 0)
			log_warn("gofer: writing back mapped pages failed: %s", strerror(-err));
	}
	close(gf->fd);
	vfs_node_put(&gf->gn->base);
	free(gf);
}

/* fsync(2) on the donated FD: the host's own flush of the host file. */
static int gofer_file_fsync(struct file *f, bool datasync)
{
	int fd = gofer_file_fd(f);

	if ((datasync ? fdatasync(fd) : fsync(fd)) < 0)
		return errno == EINVAL ? 0 : -errno; /* nothing to flush (e.g. a FIFO) */
	return 0;
}

/* fallocate(2) on the donated FD (a read-only gofer donated a read-only one: -EBADF). */
static int gofer_file_fallocate(struct file *f, int mode, int64_t off, int64_t len)
{
	struct gofer_file *gf = f->priv;
	int r;

	do {
		r = fallocate(gf->fd, mode, off, len);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	gofer_changed(gf->fs);
	return 0;
}

static const struct file_ops gofer_file_ops = {
	.read = gofer_file_read,
	.write = gofer_file_write,
	.llseek = gofer_file_llseek,
	.release = gofer_file_release,
	.fsync = gofer_file_fsync,
	.fallocate = gofer_file_fallocate,
	.get_pages = gofer_file_get_pages,
	.sync_pages = gofer_file_sync_pages,
};

/* Unlinks gn from fs's LRU list (fs->fdc_lock held; gn->ro_fd >= 0). */
static void fdc_unlink(struct gofer_fs *fs, struct gofer_node *gn)
{
	if (gn->fdc_prev)
		gn->fdc_prev->fdc_next = gn->fdc_next;
	else
		fs->fdc_head = gn->fdc_next;
	if (gn->fdc_next)
		gn->fdc_next->fdc_prev = gn->fdc_prev;
	else
		fs->fdc_tail = gn->fdc_prev;
	gn->fdc_prev = gn->fdc_next = NULL;
}

/* Puts gn first in fs's LRU list (fs->fdc_lock held; gn not in it). */
static void fdc_push(struct gofer_fs *fs, struct gofer_node *gn)
{
	gn->fdc_prev = NULL;
	gn->fdc_next = fs->fdc_head;
	if (fs->fdc_head)
		fs->fdc_head->fdc_prev = gn;
	else
		fs->fdc_tail = gn;
	fs->fdc_head = gn;
}

/* A dup of gn's cached read-only FD (gn made most recent), or -1 when it has none. */
static int fdc_get(struct gofer_fs *fs, struct gofer_node *gn)
{
	int fd = -1;

	pthread_mutex_lock(&fs->fdc_lock);
	if (gn->ro_fd >= 0) {
		fd = fcntl(gn->ro_fd, F_DUPFD_CLOEXEC, 0);
		if (gn != fs->fdc_head) {
			fdc_unlink(fs, gn);
			fdc_push(fs, gn);
		}
	}
	pthread_mutex_unlock(&fs->fdc_lock);
	return fd;
}

/*
 * Keeps a dup of fd (just donated for a read-only open of gn) as gn's cached FD, unless gn has
 * one already; past fs->fdc_max cached FDs, the least recently used goes. Best effort.
 */
static void fdc_put(struct gofer_fs *fs, struct gofer_node *gn, int fd)
{
	int keep, evicted = -1;

	if (fs->fdc_max <= 0)
		return;
	keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (keep < 0)
		return;
	pthread_mutex_lock(&fs->fdc_lock);
	if (gn->ro_fd >= 0) {
		pthread_mutex_unlock(&fs->fdc_lock);
		close(keep);
		return;
	}
	gn->ro_fd = keep;
	fdc_push(fs, gn);
	if (++fs->fdc_n > fs->fdc_max) {
		struct gofer_node *old = fs->fdc_tail;

		fdc_unlink(fs, old);
		evicted = old->ro_fd;
		old->ro_fd = -1;
		fs->fdc_n--;
	}
	pthread_mutex_unlock(&fs->fdc_lock);
	if (evicted >= 0)
		close(evicted);
}

/* Drops gn's cached FD, if any (its release). */
static void fdc_drop(struct gofer_fs *fs, struct gofer_node *gn)
{
	int fd;

	pthread_mutex_lock(&fs->fdc_lock);
	fd = gn->ro_fd;
	if (fd >= 0) {
		fdc_unlink(fs, gn);
		gn->ro_fd = -1;
		fs->fdc_n--;
	}
	pthread_mutex_unlock(&fs->fdc_lock);
	if (fd >= 0)
		close(fd);
}

/*
 * The FD gofer_create donated when n was created, if an open follows its creation (O_CREAT):
 * it was opened O_RDWR whatever the file's mode, as Linux opens a file it just created. Taken
 * once; -1 otherwise. O_APPEND is set on it when asked (the host FD appends, as gofer_open's).
 */
static int take_created_fd(struct gofer_node *gn, int flags)
{
	int fd;

	pthread_mutex_lock(&gn->lock);
	fd = gn->created_fd;
	gn->created_fd = -1;
	pthread_mutex_unlock(&gn->lock);
	if (fd >= 0 && (flags & O_APPEND) && fcntl(fd, F_SETFL, O_APPEND) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct file *gofer_open_op(struct vfs_node *n, int flags)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	struct gofer_file *gf;
	int hostflags, fd;
	bool cacheable;
	struct file *f;

	switch (n->type) {
	case S_IFREG:
		break;
	case S_IFCHR: {
		uint64_t rdev;

		/* Device nodes of the image open the sentry's devices, never the host's. */
		pthread_mutex_lock(&gn->lock);
		rdev = gn->attr.rdev;
		pthread_mutex_unlock(&gn->lock);
		return devfs_open_chrdev(major(rdev), minor(rdev), flags);
	}
	case S_IFBLK: {
		uint64_t rdev;

		/* The device rules' EPERM, else ENXIO: the host's block device is never opened. */
		pthread_mutex_lock(&gn->lock);
		rdev = gn->attr.rdev;
		pthread_mutex_unlock(&gn->lock);
		return devfs_open_blkdev(major(rdev), minor(rdev), flags);
	}
	case S_IFIFO:
		/* A pipe of the sentry's per inode; the host's FIFO is never opened. */
		return pipe_fifo_open(n, flags);
	default:
		return ERR_PTR(-ENXIO); /* sockets, as Linux */
	}
	/* Mode 3 (ioctl only) reads and writes nothing: read-only is enough on the host. */
	hostflags = (flags & O_ACCMODE) == 3 ? O_RDONLY : (flags & O_ACCMODE);
	hostflags |= flags & (O_TRUNC | O_APPEND);
	if (fs->readonly && ((hostflags & O_ACCMODE) != O_RDONLY || (hostflags & O_TRUNC)))
		return ERR_PTR(-EROFS); /* the VFS checked already; the gofer would refuse too */
	gf = malloc(sizeof(*gf));
	if (!gf)
		return ERR_PTR(-ENOMEM);
	/* A read-only mount donates only read-only FDs: each can serve every later open. */
	cacheable = fs->readonly && hostflags == O_RDONLY;
	fd = cacheable ? fdc_get(fs, gn) : take_created_fd(gn, flags);
	if (fd < 0) {
		int64_t h = gofer_node_handle(gn);

		fd = h < 0 ? (int)h : gofer_open(fs->gc, (uint64_t)h, hostflags);
		if (fd >= 0 && cacheable)
			fdc_put(fs, gn, fd);
	}
	if (fd < 0) {
		free(gf);
		return ERR_PTR(fd);
	}
	if (hostflags & O_TRUNC)
		gofer_changed(fs);
	gf->fd = fd;
	gf->fs = fs;
	gf->gn = gn;
	f = file_alloc(&gofer_file_ops, flags, gf);
	if (!f) {
		close(fd);
		free(gf);
		return ERR_PTR(-ENOMEM);
	}
	vfs_node_get(n);
	return f;
}

/* --- directories --- */

/*
 * Directory positions: the gofer sends no "." and "..", so the VFS makes them up at positions
 * 0 and 1; position 2 is the gofer's cookie 0 (its first entry) and any other position is a
 * gofer cookie (a host d_off). Host cookies of 1 or 2 would be ambiguous; the usual host
 * filesystems (ext4, xfs, btrfs, tmpfs, overlayfs) never give them to a named entry.
 */
#define GOFER_POS_DOT 0
#define GOFER_POS_DOTDOT 1
#define GOFER_POS_FIRST 2

struct gofer_iter {
	struct dir_emitter *e;
	int64_t *pos;
	bool full;
};

static int gofer_iter_one(void *arg, const struct gofer_dirent *d)
{
	struct gofer_iter *it = arg;

	if (!it->e->emit(it->e, d->name, d->namelen, d->ino, d->type, d->next)) {
		it->full = true;
		return 1;
	}
	*it->pos = d->next;
	return 0;
}

static uint64_t gofer_node_ino(struct vfs_node *n)
{
	struct gofer_node *gn = gofer_node_of(n);
	uint64_t ino;

	pthread_mutex_lock(&gn->lock);
	ino = gn->attr.ino;
	pthread_mutex_unlock(&gn->lock);
	return ino;
}

/*
 * The index in gd's listing (gd->listed) of the entry at position pos: 0 at the first, nlents
 * past the last, SIZE_MAX when no entry is followed by pos.
 */
static size_t gofer_lent_find(struct gofer_node *gd, int64_t pos)
{
	size_t hint = __atomic_load_n(&gd->lent_hint, __ATOMIC_RELAXED);

	if (pos == GOFER_POS_FIRST)
		return 0;
	/* Where the last call stopped: a guest reading a directory in several calls. */
	if (hint > 0 && hint <= gd->nlents && gd->lents[hint - 1].next == pos)
		return hint;
	for (size_t i = 0; i < gd->nlents; i++) {
		if (gd->lents[i].next == pos)
			return i + 1;
	}
	return SIZE_MAX;
}

static int gofer_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct gofer_node *gd = gofer_node_of(dir);
	struct gofer_fs *fs = gofer_fs_of(dir);
	struct gofer_iter it = { .e = e, .pos = pos };
	int64_t h;

	if (*pos == GOFER_POS_DOT) {
		if (!e->emit(e, ".", 1, gofer_node_ino(dir), DT_DIR, GOFER_POS_DOTDOT))
			return 0;
		*pos = GOFER_POS_DOTDOT;
	}
	if (*pos == GOFER_POS_DOTDOT) {
		/* The parent in this filesystem; the mount's parent is not known here. */
		struct vfs_node *up = dir->parent ? dir->parent : dir;

		if (!e->emit(e, "..", 2, gofer_node_ino(up), DT_DIR, GOFER_POS_FIRST))
			return 0;
		*pos = GOFER_POS_FIRST;
	}
	h = gofer_node_handle(gd);
	if (h < 0)
		return (int)h;
	if (fs->readonly) {
		int err = 0;

		/* Listed once, with every child's attributes; then served from the listing. */
		if (!__atomic_load_n(&gd->listed, __ATOMIC_ACQUIRE)) {
			pthread_mutex_lock(&gd->lock);
			if (!gd->listed)
				err = gofer_dir_fill(gd);
			pthread_mutex_unlock(&gd->lock);
		}
		if (err == 0) {
			size_t i = gofer_lent_find(gd, *pos);

			if (i != SIZE_MAX) {
				for (; i < gd->nlents; i++) {
					const struct gofer_lent *le = &gd->lents[i];

					if (!e->emit(e, le->name, strlen(le->name), le->ino,
						     le->type, le->next))
						break;
					*pos = le->next;
				}
				__atomic_store_n(&gd->lent_hint, i, __ATOMIC_RELAXED);
				return 0;
			}
		}
		/* Not listed (out of memory), or a position the listing does not know: ask. */
	}
	for (;;) {
		int64_t before = *pos;
		int64_t cookie = *pos == GOFER_POS_FIRST ? 0 : *pos;
		bool eof = false;
		int n = gofer_getdents_eof ?
				gofer_getdents_eof(fs->gc, (uint64_t)h, cookie, GOFER_GETDENTS_MAX,
						   gofer_iter_one, &it, &eof) :
				gofer_getdents(fs->gc, (uint64_t)h, cookie, gofer_iter_one, &it);

		if (n < 0)
			return n;
		/* The end, or a reply that does not move the cookie (it would loop for ever). */
		if (n == 0 || eof || it.full || *pos == before)
			return 0;
	}
}

static int gofer_statfs_op(struct vfs_node *n, struct linux_statfs *st)
{
	struct gofer_fs *fs = gofer_fs_of(n);
	struct gofer_statfs gs;
	int err;

	int64_t h = gofer_node_handle(gofer_node_of(n));

	err = h < 0 ? (int)h : gofer_statfs(fs->gc, (uint64_t)h, &gs);
	if (err < 0)
		return err;
	memset(st, 0, sizeof(*st));
	st->f_type = (int64_t)gs.type;
	st->f_bsize = (int64_t)gs.bsize;
	st->f_blocks = gs.blocks;
	st->f_bfree = gs.bfree;
	st->f_bavail = gs.bavail;
	st->f_files = gs.files;
	st->f_ffree = gs.ffree;
	st->f_namelen = (int64_t)gs.namelen;
	st->f_frsize = (int64_t)gs.frsize;
	return 0;
}

/* --- writes (writable mounts: --overlay=none and volumes) --- */

/*
 * Makes the node of a name just created in dir (handle h owned by the caller until this
 * succeeds) and caches it under name. dir's lock held. Returns the node or NULL (out of memory:
 * the handle was closed).
 */
static struct gofer_node *gofer_add_child(struct gofer_node *gd, const char *name, uint64_t h,
					  const struct gofer_attr *attr, uint64_t gen)
{
	struct gofer_fs *fs = gofer_fs_of(&gd->base);
	struct gofer_node *child = gofer_node_new(fs, &gd->base, name, h, attr);

	if (!child) {
		gofer_close(fs->gc, &h, 1);
		return NULL;
	}
	child->attr_gen = gen;
	/* Uncached when out of memory: the next lookup walks to it again. */
	if (vfs_dcache_insert(&gd->children, name, &child->base) < 0)
		vfs_dcache_remove(&gd->children, name);
	return child;
}

static int gofer_create_op(struct vfs_node *dir, const char *name, const struct vfs_create_args *a,
			   struct vfs_node **out)
{
	struct gofer_node *gd = gofer_node_of(dir), *child;
	struct gofer_fs *fs = gofer_fs_of(dir);
	uint32_t perm = a->mode & 07777;
	struct gofer_attr attr;
	int fd = -1, err;
	uint64_t h, gen;

	pthread_mutex_lock(&gd->lock);
	switch (a->mode & S_IFMT) {
	case S_IFREG:
		/* Opened read-write whatever the mode: the open that usually follows takes it. */
		fd = gofer_create(fs->gc, gd->handle, name, O_RDWR, perm, a->uid, a->gid, &h,
				  &attr);
		err = fd < 0 ? fd : 0;
		break;
	case S_IFDIR:
		err = gofer_mkdir(fs->gc, gd->handle, name, perm, a->uid, a->gid, &h, &attr);
		break;
	case S_IFLNK:
		err = gofer_symlink(fs->gc, gd->handle, name, a->target, a->uid, a->gid, &h, &attr);
		break;
	case S_IFIFO:
	case S_IFSOCK:
		err = gofer_mknod(fs->gc, gd->handle, name, a->mode, a->uid, a->gid, &h, &attr);
		break;
	default:
		/* Device nodes are never made on the host (as in a user namespace). */
		err = -EPERM;
		break;
	}
	gofer_changed(fs);
	if (err < 0) {
		pthread_mutex_unlock(&gd->lock);
		return err;
	}
	gen = gofer_gen(fs);
	child = gofer_add_child(gd, name, h, &attr, gen);
	if (!child) {
		pthread_mutex_unlock(&gd->lock);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	/* Before dir's lock goes: no lookup can reach the child earlier. */
	child->created_fd = fd;
	pthread_mutex_unlock(&gd->lock);
	*out = &child->base;
	return 0;
}

static int gofer_link_op(struct vfs_node *dir, const char *name, struct vfs_node *old,
			 struct vfs_node **out)
{
	struct gofer_node *gd = gofer_node_of(dir), *gold = gofer_node_of(old), *child;
	struct gofer_fs *fs = gofer_fs_of(dir);
	struct gofer_attr attr;
	bool unlinked;
	uint64_t h;
	int err;

	/* The gofer links by name: the namespace lock keeps old's parent and name as they are. */
	pthread_mutex_lock(&gold->lock);
	unlinked = gold->unlinked;
	pthread_mutex_unlock(&gold->lock);
	if (unlinked || !old->parent)
		return -ENOENT;
	pthread_mutex_lock(&gd->lock);
	err = gofer_link(fs->gc, gofer_node_of(old->parent)->handle, old->name, gd->handle, name,
			 &h, &attr);
	gofer_changed(fs);
	if (err < 0) {
		pthread_mutex_unlock(&gd->lock);
		return err;
	}
	child = gofer_add_child(gd, name, h, &attr, gofer_gen(fs));
	pthread_mutex_unlock(&gd->lock);
	if (!child)
		return -ENOMEM;
	*out = &child->base;
	return 0;
}

/* Forgets name in dir's cache after the host removed it or moved something over it. */
static void gofer_forget(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	struct gofer_node *gd = gofer_node_of(dir);

	pthread_mutex_lock(&gd->lock);
	vfs_dcache_remove(&gd->children, name);
	pthread_mutex_unlock(&gd->lock);
	if (child) {
		struct gofer_node *gc = gofer_node_of(child);

		pthread_mutex_lock(&gc->lock);
		gc->unlinked = true;
		pthread_mutex_unlock(&gc->lock);
	}
}

static int gofer_remove(struct vfs_node *dir, const char *name, struct vfs_node *child,
			uint32_t flags)
{
	struct gofer_fs *fs = gofer_fs_of(dir);
	int err = gofer_unlink(fs->gc, gofer_node_of(dir)->handle, name, flags);

	gofer_changed(fs);
	if (err < 0)
		return err;
	gofer_forget(dir, name, child);
	return 0;
}

static int gofer_unlink_op(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	return gofer_remove(dir, name, child, 0);
}

static int gofer_rmdir_op(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	return gofer_remove(dir, name, child, GOFER_UNLINK_REMOVEDIR);
}

/* Caches node under name in dir (best effort: uncached, it is walked to again). */
static void gofer_cache(struct vfs_node *dir, const char *name, struct vfs_node *node)
{
	struct gofer_node *gd = gofer_node_of(dir);

	pthread_mutex_lock(&gd->lock);
	if (vfs_dcache_insert(&gd->children, name, node) < 0)
		vfs_dcache_remove(&gd->children, name);
	pthread_mutex_unlock(&gd->lock);
}

/*
 * Renames node to newname in newdir after the host did: its name and parent follow (if that
 * fails for memory, it is marked as unlinkable by name and left out of the caches, where a
 * later walk finds the host's node again).
 */
static void gofer_moved(struct vfs_node *node, struct vfs_node *newdir, const char *newname)
{
	if (vfs_node_move(node, newdir, newname) < 0) {
		struct gofer_node *gn = gofer_node_of(node);

		pthread_mutex_lock(&gn->lock);
		gn->unlinked = true;
		pthread_mutex_unlock(&gn->lock);
		return;
	}
	gofer_cache(newdir, newname, node);
}

static int gofer_rename_op(struct vfs_node *olddir, const char *oldname, struct vfs_node *node,
			   struct vfs_node *newdir, const char *newname, struct vfs_node *target,
			   unsigned int flags)
{
	struct gofer_fs *fs = gofer_fs_of(olddir);
	uint32_t gflags = 0;
	int err;

	if (newdir->fs != olddir->fs)
		return -EXDEV;
	if (flags & VFS_RENAME_WHITEOUT)
		return -EINVAL; /* as a host filesystem without whiteouts */
	if (flags & VFS_RENAME_NOREPLACE)
		gflags |= GOFER_RENAME_NOREPLACE;
	if (flags & VFS_RENAME_EXCHANGE)
		gflags |= GOFER_RENAME_EXCHANGE;
	err = gofer_rename(fs->gc, gofer_node_of(olddir)->handle, oldname,
			   gofer_node_of(newdir)->handle, newname, gflags);
	gofer_changed(fs);
	if (err < 0)
		return err;
	/* The caller holds references on every node: the caches' may go. */
	gofer_forget(olddir, oldname, NULL);
	gofer_forget(newdir, newname, (target && !(flags & VFS_RENAME_EXCHANGE)) ? target : NULL);
	gofer_moved(node, newdir, newname);
	if (target && (flags & VFS_RENAME_EXCHANGE))
		gofer_moved(target, olddir, oldname);
	return 0;
}

static int gofer_setattr_op(struct vfs_node *n, const struct vfs_setattr *sa)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	struct gofer_setstat st = { 0 };
	struct gofer_attr attr;
	int err;

	if (sa->valid & VFS_SETATTR_MODE) {
		st.mask |= GOFER_SETSTAT_MODE;
		st.mode = sa->mode & 07777;
	}
	if (sa->valid & VFS_SETATTR_UID) {
		st.mask |= GOFER_SETSTAT_UID;
		st.uid = sa->uid;
	}
	if (sa->valid & VFS_SETATTR_GID) {
		st.mask |= GOFER_SETSTAT_GID;
		st.gid = sa->gid;
	}
	if (sa->valid & VFS_SETATTR_SIZE) {
		st.mask |= GOFER_SETSTAT_SIZE;
		st.size = sa->size;
	}
	if (sa->valid & VFS_SETATTR_ATIME) {
		st.mask |= GOFER_SETSTAT_ATIME;
		st.atime_sec = sa->atime.tv_sec;
		st.atime_nsec = (uint32_t)sa->atime.tv_nsec;
	}
	if (sa->valid & VFS_SETATTR_MTIME) {
		st.mask |= GOFER_SETSTAT_MTIME;
		st.mtime_sec = sa->mtime.tv_sec;
		st.mtime_nsec = (uint32_t)sa->mtime.tv_nsec;
	}
	/* VFS_SETATTR_CTIME (copy-up) cannot be honoured: the host sets ctime itself. */
	if (!st.mask)
		return 0;
	err = gofer_setstat(fs->gc, gn->handle, &st, &attr);
	gofer_changed(fs);
	if (err < 0)
		return err;
	if ((sa->valid & VFS_SETATTR_SIZE) && pcache_used(gn)) {
		/* The cache follows: pages past the size go, the last one's tail reads zero. */
		pthread_mutex_lock(&gn->lock);
		uint64_t keep = ((uint64_t)sa->size + PAGE_SIZE - 1) / PAGE_SIZE;
		pcache_drop(fs, gn, keep);
		if (sa->size % PAGE_SIZE && gn->npages &&
		    gn->pages[gn->npages - 1].pgoff == keep - 1)
			memset(memfile_ptr(fs->mf, gn->pages[gn->npages - 1].mf_off) +
				       sa->size % PAGE_SIZE,
			       0, PAGE_SIZE - sa->size % PAGE_SIZE);
		pthread_mutex_unlock(&gn->lock);
	}
	gofer_set_attr(gn, &attr, gofer_gen(fs));
	return 0;
}

/*
 * --- extended attributes: through the gofer, which serves user.* on regular files and
 * directories and security.capability read-only (gofer/README.md) ---
 */

/*
 * security.capability from the node's cache: false when nothing is cached, else true with *ret
 * its answer to getxattr(name, buf, size) as the gofer would give it. gn->lock held.
 */
static bool caps_cached(const struct gofer_node *gn, void *buf, size_t size, ssize_t *ret)
{
	if (!gn->caps_known)
		return false;
	if (gn->caps_len < 0 || size == 0) {
		*ret = gn->caps_len;
	} else if (size < (size_t)gn->caps_len) {
		*ret = -ERANGE;
	} else {
		memcpy(buf, gn->caps, (size_t)gn->caps_len);
		*ret = gn->caps_len;
	}
	return true;
}

/* Keeps the gofer's definitive answer n for security.capability (value in buf). gn->lock held. */
static void caps_remember(struct gofer_node *gn, ssize_t n, const void *buf, size_t size)
{
	if (n == -ENODATA || n == -EOPNOTSUPP) {
		gn->caps_len = n;
	} else if (n >= 0 && size > 0 && (size_t)n <= size && n <= GOFER_CAPS_CACHE_MAX) {
		memcpy(gn->caps, buf, (size_t)n);
		gn->caps_len = n;
	} else {
		return; /* a size query, -ERANGE, an error: not the value */
	}
	gn->caps_known = true;
}

/* An xattr change made through the node: its cached capabilities (if any) are stale. */
static void caps_forget(struct gofer_node *gn)
{
	pthread_mutex_lock(&gn->lock);
	gn->caps_known = false;
	pthread_mutex_unlock(&gn->lock);
}

static ssize_t gofer_getxattr_op(struct vfs_node *n, const char *name, void *buf, size_t size)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	/* A read-only mount's xattrs do not change (nothing here writes them), as its attributes;
	 * a bound file is the host's to change. Every exec asks for the program's capabilities. */
	bool cache = fs->readonly && !fs->file_root && !strcmp(name, GOFER_CAPS_NAME);
	int64_t h;
	ssize_t ret;

	if (cache) {
		bool hit;

		pthread_mutex_lock(&gn->lock);
		hit = caps_cached(gn, buf, size, &ret);
		pthread_mutex_unlock(&gn->lock);
		if (hit)
			return ret;
	}
	h = gofer_node_handle(gn);
	if (h < 0)
		return h;
	/* A value past the gofer's maximum cannot come back: ask for what it can send. */
	if (size > GOFER_XATTR_SIZE_MAX)
		size = GOFER_XATTR_SIZE_MAX;
	ret = gofer_getxattr(fs->gc, (uint64_t)h, name, buf, size);
	if (cache) {
		pthread_mutex_lock(&gn->lock);
		caps_remember(gn, ret, buf, size);
		pthread_mutex_unlock(&gn->lock);
	}
	return ret;
}

static int gofer_setxattr_op(struct vfs_node *n, const char *name, const void *value, size_t size,
			     int flags)
{
	struct gofer_fs *fs = gofer_fs_of(n);
	int64_t h = gofer_node_handle(gofer_node_of(n));
	uint32_t gflags = 0;
	int err;

	if (h < 0)
		return (int)h;
	if (size > GOFER_XATTR_SIZE_MAX)
		return -E2BIG;
	if (flags & VFS_XATTR_CREATE)
		gflags |= GOFER_XATTR_CREATE;
	if (flags & VFS_XATTR_REPLACE)
		gflags |= GOFER_XATTR_REPLACE;
	err = gofer_setxattr(fs->gc, (uint64_t)h, name, value, size, gflags);
	gofer_changed(fs); /* ctime moved */
	caps_forget(gofer_node_of(n));
	return err;
}

static ssize_t gofer_listxattr_op(struct vfs_node *n, char *buf, size_t size, bool list_trusted)
{
	int64_t h = gofer_node_handle(gofer_node_of(n));

	/* The gofer never lists trusted.* names: list_trusted changes nothing. */
	if (h < 0)
		return h;
	if (size > GOFER_XATTR_SIZE_MAX)
		size = GOFER_XATTR_SIZE_MAX;
	return gofer_listxattr(gofer_fs_of(n)->gc, (uint64_t)h, buf, size);
}

static int gofer_removexattr_op(struct vfs_node *n, const char *name)
{
	struct gofer_fs *fs = gofer_fs_of(n);
	int64_t h = gofer_node_handle(gofer_node_of(n));
	int err;

	if (h < 0)
		return (int)h;
	err = gofer_removexattr(fs->gc, (uint64_t)h, name);
	gofer_changed(fs);
	caps_forget(gofer_node_of(n));
	return err;
}

static void gofer_node_release(struct vfs_node *n)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);

	/* Positive children hold a reference on n: only negative entries can be left. */
	vfs_dcache_clear(&gn->children, NULL, NULL);
	if (gn->npages)
		pcache_drop(fs, gn, 0);
	free(gn->pages);
	fdc_drop(fs, gn);
	if (gn->handle)
		gofer_close(fs->gc, &gn->handle, 1);
	for (size_t i = 0; i < gn->nlents; i++)
		free(gn->lents[i].name);
	free(gn->lents);
	if (gn->created_fd >= 0)
		close(gn->created_fd);
	free(gn->link);
	pthread_mutex_destroy(&gn->lock);
	free(gn);
}

/* Breaks the parent <-> child reference cycles below n, so that unused nodes go. */
static void gofer_drop_tree(struct vfs_node *n, void *arg)
{
	struct gofer_node *gn = gofer_node_of(n);

	pthread_mutex_lock(&gn->lock);
	vfs_dcache_clear(&gn->children, gofer_drop_tree, NULL);
	pthread_mutex_unlock(&gn->lock);
	if (arg != n)
		vfs_node_put(n); /* the cache's reference */
}

static void gofer_fs_release(struct vfs_fs *vfs)
{
	struct gofer_fs *fs = container_of(vfs, struct gofer_fs, base);

	gofer_drop_tree(fs->base.root, fs->base.root);
	vfs_node_put(fs->base.root);
	pthread_mutex_destroy(&fs->fdc_lock);
	free(fs);
}

static const struct vfs_node_ops gofer_node_ops = {
	.getxattr = gofer_getxattr_op,
	.setxattr = gofer_setxattr_op,
	.listxattr = gofer_listxattr_op,
	.removexattr = gofer_removexattr_op,
	.lookup = gofer_lookup,
	.getattr = gofer_getattr,
	.readlink = gofer_readlink_op,
	.open = gofer_open_op,
	.iterate = gofer_iterate,
	.statfs = gofer_statfs_op,
	.release = gofer_node_release,
	.create = gofer_create_op,
	.link = gofer_link_op,
	.unlink = gofer_unlink_op,
	.rmdir = gofer_rmdir_op,
	.rename = gofer_rename_op,
	.setattr = gofer_setattr_op,
};

static const struct vfs_fs_ops gofer_fs_ops = {
	.release = gofer_fs_release,
};

/*
 * gofer_fs_create, with attributes cached (writable mounts) or not (shared host trees); a
 * served regular file (a file bind mount's gofer) is a root only when cache_attrs is false.
 */
static int gofer_fs_new(struct gofer_client *gc, bool readonly, bool cache_attrs,
			struct vfs_fs **out)
{
	struct gofer_node *root;
	struct gofer_attr attr;
	struct gofer_fs *fs;
	uint64_t handle;
	int err;

	err = gofer_mount(gc, &handle, &attr);
	if (err < 0)
		return err;
	if (!S_ISDIR(attr.mode) && (cache_attrs || !S_ISREG(attr.mode))) {
		log_error("gofer: the served root is not a directory (mode %o)", attr.mode);
		gofer_close(gc, &handle, 1);
		return -ENOTDIR;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		gofer_close(gc, &handle, 1);
		return -ENOMEM;
	}
	vfs_fs_init(&fs->base, &gofer_fs_ops, "gofer");
	fs->gc = gc;
	fs->readonly = readonly;
	fs->cache_attrs = !readonly && cache_attrs;
	fs->file_root = S_ISREG(attr.mode);
	fs->gen = 1;
	pthread_mutex_init(&fs->fdc_lock, NULL);
	fs->fdc_max = GOFER_FD_CACHE_MAX;
	root = gofer_node_new(fs, NULL, "", handle, &attr);
	if (!root) {
		gofer_close(gc, &handle, 1);
		pthread_mutex_destroy(&fs->fdc_lock);
		free(fs);
		return -ENOMEM;
	}
	fs->base.root = &root->base;
	*out = &fs->base;
	return 0;
}

/* Makes the mount of fs (taking the caller's reference) the kernel's root. */
int vfs_set_root_fs(struct kernel *k, struct vfs_fs *fs, int flags)
{
	struct vfs_mount *m = vfs_mount_create(fs, fs->root, flags);

	vfs_fs_put(fs); /* the mount holds it now (or it goes) */
	if (!m)
		return -ENOMEM;
	vfs_kernel_set_root(k, m);
	return 0;
}

int gofer_fs_create(struct gofer_client *gc, bool readonly, struct vfs_fs **out)
{
	return gofer_fs_new(gc, readonly, true, out);
}

void gofer_fs_set_memfile(struct vfs_fs *vfs, struct memfile *mf)
{
	container_of(vfs, struct gofer_fs, base)->mf = mf;
}

void gofer_fs_set_fd_cache(struct vfs_fs *vfs, int max)
{
	struct gofer_fs *fs = container_of(vfs, struct gofer_fs, base);

	pthread_mutex_lock(&fs->fdc_lock);
	fs->fdc_max = max < 0 ? 0 : max;
	while (fs->fdc_n > fs->fdc_max) {
		struct gofer_node *old = fs->fdc_tail;

		fdc_unlink(fs, old);
		close(old->ro_fd);
		old->ro_fd = -1;
		fs->fdc_n--;
	}
	pthread_mutex_unlock(&fs->fdc_lock);
}

int gofer_fs_fd_cache_count(struct vfs_fs *vfs)
{
	struct gofer_fs *fs = container_of(vfs, struct gofer_fs, base);
	int n;

	pthread_mutex_lock(&fs->fdc_lock);
	n = fs->fdc_n;
	pthread_mutex_unlock(&fs->fdc_lock);
	return n;
}

int vfs_mount_volume_flags(struct kernel *k, struct gofer_client *gc, const char *path, int flags)
{
	struct vfs_fs *fs;
	int err;

	/* The host may change a volume behind the sandbox: attributes are always asked for. */
	err = gofer_fs_new(gc, (flags & MS_RDONLY) != 0, false, &fs);
	if (err < 0)
		return err;
	gofer_fs_set_memfile(fs, &k->mf);
	/* A served file is mounted over a file (made empty in the root when missing). */
	err = vfs_mount_at(k, path, fs, flags);
	vfs_fs_put(fs);
	return err;
}

int vfs_mount_volume(struct kernel *k, struct gofer_client *gc, const char *path, bool readonly)
{
	return vfs_mount_volume_flags(k, gc, path, readonly ? MS_RDONLY : 0);
}

int vfs_mount_root(struct kernel *k, struct gofer_client *gc, bool readonly)
{
	struct vfs_fs *fs;
	int err = gofer_fs_create(gc, readonly, &fs);

	if (err < 0)
		return err;
	gofer_fs_set_memfile(fs, &k->mf);
	return vfs_set_root_fs(k, fs, readonly ? MS_RDONLY : 0);
}
