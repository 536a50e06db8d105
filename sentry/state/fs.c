/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files and filesystems in a checkpoint image (state.h, fs.proto, README.md "Files and
 * filesystems").
 *
 * Saving: state_fs_save numbers the mounts of the tree (vfs_mount_for_each from the root
 * mount), and saves every tmpfs shown by one of them (tmpfs mounts, the overlay's upper layer)
 * as a list of inodes (TmpfsNode, ids global to the image) with directory entries naming them.
 * state_file_save then saves each open file by what finds it again: a host fd number, a mount
 * and a path inside it, a tmpfs inode id (files with no name: deleted while open, memfds; their
 * inode joins its tmpfs's list then), a pipe id.
 *
 * Restoring: state_fs_restore finds each saved tmpfs in the new sentry (same mounts: same
 * numbering, checked by mountpoint path), fills it top-down from its root, merging with the
 * directories the new sentry made at start-up (mountpoints in the overlay's upper layer), and
 * rebuilds nameless inodes without a node. state_file_restore makes files on demand.
 *
 * Image input is hostile: every id, name, mode, offset and length is checked, and a directory
 * named twice (a cycle) or a node of another tmpfs is refused with state_restore_fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/tmpfs/internal.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memfile.h"
#include "sentry/net/net.h"
#include "sentry/state/state.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/vfs.h"

/* The largest pipe capacity an image may ask for (Linux's pipe-max-size ceiling is 2 GiB). */
#define STATE_PIPE_CAP_MAX ((uint64_t)1 << 31)

/* A new message of type T from the save's arena, initialised by init, or NULL. */
#define MSG_NEW(s, T, init)                          \
	({                                           \
		T *m_ = state_alloc((s), sizeof(T)); \
		if (m_)                              \
			init(m_);                    \
		m_;                                  \
	})

/* Appends item to an arena array of pointers *v holding *n of *cap. 0 or -ENOMEM. */
static int push_(struct state_save *s, void ***v, size_t *n, size_t *cap, void *item)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		void **nv = state_alloc(s, nc * sizeof(void *));

		if (!nv)
			return -ENOMEM;
		if (*n)
			memcpy(nv, *v, *n * sizeof(void *));
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = item;
	return 0;
}
#define PUSH(s, arr, n, cap, item) push_((s), (void ***)&(arr), &(n), &(cap), (item))

/* The mounts of k's tree, numbered as vfs_mount_for_each visits them. */
struct mount_list {
	struct mount_ent {
		struct vfs_mount *m; /* referenced */
		char *path; /* malloc'd: its mountpoint's path from the root */
	} * v;
	size_t n, cap;
	struct vfs_path root;
};

static int mount_collect(struct vfs_mount *m, void *arg)
{
	struct mount_list *l = arg;
	struct vfs_path mp = { m->parent, m->mountpoint };
	char *path = malloc(VFS_PATH_MAX);
	int len;

	if (!path)
		return -ENOMEM;
	if (!m->parent) {
		strcpy(path, "/");
	} else {
		len = vfs_path_to_string(&l->root, &mp, path, VFS_PATH_MAX);
		if (len < 0) {
			free(path);
			return len;
		}
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct mount_ent *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			free(path);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	vfs_mount_get(m);
	l->v[l->n++] = (struct mount_ent){ m, path };
	return 0;
}

static void mounts_free(struct mount_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		vfs_mount_put(l->v[i].m);
		free(l->v[i].path);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int mounts_get(struct kernel *k, struct mount_list *l)
{
	int err;

	if (!k->root_mnt)
		return 0;
	l->root = (struct vfs_path){ k->root_mnt, k->root_node ? k->root_node : k->root_mnt->root };
	err = vfs_mount_for_each(k->root_mnt, mount_collect, l);
	if (err) {
		mounts_free(l);
		return err < 0 ? err : -ENOMEM;
	}
	return 0;
}

/* The index of m in l, or -1. */
static long mount_index(const struct mount_list *l, const struct vfs_mount *m)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].m == m)
			return (long)i;
	return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Saving                                                                                     */
/* ------------------------------------------------------------------------------------------ */

struct save_tmpfs {
	struct tmpfs *fs;
	Husk__State__Tmpfs *msg;
	size_t cap; /* of msg->nodes */
	struct tmpfs_inode **inos; /* malloc'd, beside msg->nodes */
	size_t inos_cap;
};

struct state_fs_save {
	Husk__State__FsState *out;
	struct mount_list mounts;
	struct save_tmpfs *tmpfs; /* malloc'd */
	size_t ntmpfs, tmpfs_cap, out_tmpfs_cap, out_pipes_cap;
	struct state_ptrmap inodes; /* struct tmpfs_inode * -> TmpfsNode.id */
	struct state_ptrmap pipes; /* pipe identity -> Pipe.id */
};

static Husk__State__Timespec *ts_msg(struct state_save *s, struct timespec t)
{
	Husk__State__Timespec *m = MSG_NEW(s, Husk__State__Timespec, husk__state__timespec__init);

	if (m) {
		m->sec = t.tv_sec;
		m->nsec = t.tv_nsec;
	}
	return m;
}

/* The page runs of a regular file's slots (fs lock held). */
static int save_pages(struct state_save *s, struct tmpfs_inode *in, Husk__State__TmpfsNode *m)
{
	size_t runs = 0, i, j;

	for (i = 0; i < in->npages; i++)
		if (in->pages[i] &&
		    (i == 0 || !in->pages[i - 1] || in->pages[i] != in->pages[i - 1] + TMPFS_PAGE))
			runs++;
	if (!runs)
		return 0;
	m->pages = state_alloc(s, runs * sizeof(*m->pages));
	if (!m->pages)
		return -ENOMEM;
	for (i = 0; i < in->npages;) {
		Husk__State__PageRun *r;

		if (!in->pages[i]) {
			i++;
			continue;
		}
		for (j = i + 1; j < in->npages && in->pages[j] &&
				in->pages[j] == in->pages[j - 1] + TMPFS_PAGE;
		     j++)
			;
		r = MSG_NEW(s, Husk__State__PageRun, husk__state__page_run__init);
		if (!r)
			return -ENOMEM;
		r->index = i;
		r->mem_off = in->pages[i] - 1;
		r->npages = j - i;
		state_save_range(s, r->mem_off, r->npages * TMPFS_PAGE);
		m->pages[m->n_pages++] = r;
		i = j;
	}
	return 0;
}

/* Fills a TmpfsNode from in (fs lock held); directory entries come later. */
static int save_inode_attrs(struct state_save *s, struct tmpfs_inode *in, Husk__State__TmpfsNode *m)
{
	size_t nx = 0;

	m->ino = in->ino;
	m->mode = in->mode;
	m->uid = in->uid;
	m->gid = in->gid;
	m->rdev = in->rdev;
	m->nlink = in->nlink;
	m->atime = ts_msg(s, in->atime);
	m->mtime = ts_msg(s, in->mtime);
	m->ctime = ts_msg(s, in->ctime);
	if (!m->atime || !m->mtime || !m->ctime)
		return -ENOMEM;
	m->has_opaque = in->opaque;
	m->opaque = in->opaque;
	m->has_origin_ino = in->origin_ino != 0;
	m->origin_ino = in->origin_ino;
	switch (in->mode & S_IFMT) {
	case S_IFREG:
		m->has_size = true;
		m->size = in->size;
		m->has_seals = true;
		m->seals = in->seals;
		m->has_tmpfile = in->tmpfile;
		m->tmpfile = in->tmpfile;
		if (in->memfd_name && !(m->memfd_name = state_strdup(s, in->memfd_name)))
			return -ENOMEM;
		if (save_pages(s, in, m) < 0)
			return -ENOMEM;
		break;
	case S_IFLNK:
		m->has_target = true;
		m->target.len = strlen(in->target);
		m->target.data = (uint8_t *)state_strdup(s, in->target);
		if (!m->target.data)
			return -ENOMEM;
		break;
	case S_IFDIR:
		m->has_next_cookie = true;
		m->next_cookie = in->next_cookie;
		break;
	}
	for (struct tmpfs_xattr *x = in->xattrs; x; x = x->next)
		nx++;
	if (nx) {
		m->xattrs = state_alloc(s, nx * sizeof(*m->xattrs));
		if (!m->xattrs)
			return -ENOMEM;
	}
	for (struct tmpfs_xattr *x = in->xattrs; x; x = x->next) {
		Husk__State__Xattr *xm = MSG_NEW(s, Husk__State__Xattr, husk__state__xattr__init);

		if (!xm || !(xm->name = state_strdup(s, x->name)))
			return -ENOMEM;
		xm->value.len = x->size;
		if (x->size) {
			xm->value.data = state_alloc(s, x->size);
			if (!xm->value.data)
				return -ENOMEM;
			memcpy(xm->value.data, x->value, x->size);
		}
		m->xattrs[m->n_xattrs++] = xm;
	}
	return 0;
}

/*
 * The id of inode in of st (fs lock held), adding its TmpfsNode (attributes only) to st's list
 * the first time. name: the name of a node with no entry. Returns the id or 0 (s->err).
 */
static uint32_t save_inode_id(struct state_save *s, struct save_tmpfs *st, struct tmpfs_inode *in,
			      const char *name)
{
	struct state_fs_save *fss = s->fs;
	Husk__State__TmpfsNode *m;
	uint32_t id = state_ptrmap_find(&fss->inodes, in);

	if (id)
		return id;
	m = MSG_NEW(s, Husk__State__TmpfsNode, husk__state__tmpfs_node__init);
	if (!m || save_inode_attrs(s, in, m) < 0)
		goto nomem;
	if (name && !(m->name = state_strdup(s, name)))
		goto nomem;
	if (st->msg->n_nodes == st->inos_cap) {
		size_t cap = st->inos_cap ? st->inos_cap * 2 : 64;
		struct tmpfs_inode **v = realloc(st->inos, cap * sizeof(*v));

		if (!v)
			goto nomem;
		st->inos = v;
		st->inos_cap = cap;
	}
	id = state_ptrmap_add(&fss->inodes, in);
	if (!id)
		goto nomem;
	m->id = id;
	st->inos[st->msg->n_nodes] = in;
	if (PUSH(s, st->msg->nodes, st->msg->n_nodes, st->cap, m) < 0)
		goto nomem;
	return id;
nomem:
	state_save_fail(s, -ENOMEM, "out of memory saving a tmpfs");
	return 0;
}

/* Saves the entries of the directories of st from node index from on (fs lock held). */
static int save_dirs(struct state_save *s, struct save_tmpfs *st, size_t from)
{
	for (size_t i = from; i < st->msg->n_nodes; i++) {
		struct tmpfs_inode *in = st->inos[i];
		Husk__State__TmpfsNode *m = st->msg->nodes[i];
		struct tmpfs_node *c;
		size_t n = 0;

		if (!S_ISDIR(in->mode))
			continue;
		list_for_each_entry(c, &in->entries, entry)
			n++;
		if (!n)
			continue;
		m->entries = state_alloc(s, n * sizeof(*m->entries));
		if (!m->entries)
			return state_save_fail(s, -ENOMEM, "out of memory saving a tmpfs");
		list_for_each_entry(c, &in->entries, entry) {
			Husk__State__Dirent *d =
				MSG_NEW(s, Husk__State__Dirent, husk__state__dirent__init);
			uint32_t id;

			if (!d || !(d->name = state_strdup(s, c->base.name)))
				return state_save_fail(s, -ENOMEM, "out of memory saving a tmpfs");
			/* Adding the child may grow st->msg->nodes: m stays valid (a pointer). */
			id = save_inode_id(s, st, c->inode, NULL);
			if (!id)
				return -ENOMEM;
			d->node = id;
			d->cookie = c->cookie;
			m->entries[m->n_entries++] = d;
		}
	}
	return 0;
}

/* The save_tmpfs of fs, or NULL. */
static struct save_tmpfs *save_tmpfs_find(struct state_fs_save *fss, struct tmpfs *fs)
{
	for (size_t i = 0; i < fss->ntmpfs; i++)
		if (fss->tmpfs[i].fs == fs)
			return &fss->tmpfs[i];
	return NULL;
}

/* Saves tmpfs fs in its role (mount: its index in the mount list, or -1). NULL: s->err. */
static struct save_tmpfs *save_tmpfs(struct state_save *s, struct tmpfs *fs, int role, long mount)
{
	struct state_fs_save *fss = s->fs;
	struct save_tmpfs *st;
	Husk__State__Tmpfs *m;
	int err;

	if (!fs->mf) {
		state_save_fail(s, -EOPNOTSUPP, "cannot save a tmpfs without a memory file");
		return NULL;
	}
	if (fss->ntmpfs == fss->tmpfs_cap) {
		size_t cap = fss->tmpfs_cap ? fss->tmpfs_cap * 2 : 8;
		struct save_tmpfs *v = realloc(fss->tmpfs, cap * sizeof(*v));

		if (!v)
			goto nomem;
		fss->tmpfs = v;
		fss->tmpfs_cap = cap;
	}
	m = MSG_NEW(s, Husk__State__Tmpfs, husk__state__tmpfs__init);
	if (!m)
		goto nomem;
	m->id = (uint32_t)fss->ntmpfs + 1;
	m->role = role;
	if (mount >= 0) {
		m->has_mount = true;
		m->mount = (uint32_t)mount;
		m->mountpoint = state_strdup(s, fss->mounts.v[mount].path);
		if (!m->mountpoint)
			goto nomem;
	}
	if (PUSH(s, fss->out->tmpfs, fss->out->n_tmpfs, fss->out_tmpfs_cap, m) < 0)
		goto nomem;
	st = &fss->tmpfs[fss->ntmpfs++];
	*st = (struct save_tmpfs){ .fs = fs, .msg = m };
	pthread_mutex_lock(&fs->lock);
	m->size_limit = fs->size_limit;
	m->next_ino = fs->next_ino;
	m->root = save_inode_id(s, st, tinode(fs->base.root), NULL);
	err = m->root ? save_dirs(s, st, 0) : -ENOMEM;
	pthread_mutex_unlock(&fs->lock);
	return err < 0 ? NULL : st;
nomem:
	state_save_fail(s, -ENOMEM, "out of memory saving a tmpfs");
	return NULL;
}

int state_fs_save(struct state_save *s, Husk__State__FsState *out)
{
	struct state_fs_save *fss;
	int err;

	if (s->fs)
		return state_save_fail(s, -EINVAL, "filesystems saved twice");
	fss = calloc(1, sizeof(*fss));
	if (!fss)
		return state_save_fail(s, -ENOMEM, "out of memory");
	s->fs = fss;
	fss->out = out;
	err = mounts_get(s->k, &fss->mounts);
	if (err < 0)
		return state_save_fail(s, err, "cannot list the mounts");
	for (size_t i = 0; i < fss->mounts.n; i++) {
		struct vfs_fs *vfs = fss->mounts.v[i].m->fs;
		struct vfs_fs *upper = overlay_upper(vfs);
		int role = HUSK__STATE__TMPFS_ROLE__TMPFS_MOUNT;
		struct tmpfs *fs;

		if (upper) {
			role = HUSK__STATE__TMPFS_ROLE__TMPFS_OVERLAY_UPPER;
			vfs = upper;
		} else if (!tmpfs_is_node(vfs->root)) {
			continue;
		}
		fs = container_of(vfs, struct tmpfs, base);
		if (save_tmpfs_find(fss, fs))
			continue; /* mounted twice: the first mount names it */
		if (!save_tmpfs(s, fs, role, (long)i))
			return -EINVAL;
	}
	return 0;
}

void state_fs_save_end(struct state_save *s)
{
	struct state_fs_save *fss = s->fs;

	if (!fss)
		return;
	mounts_free(&fss->mounts);
	for (size_t i = 0; i < fss->ntmpfs; i++)
		free(fss->tmpfs[i].inos);
	free(fss->tmpfs);
	state_ptrmap_free(&fss->inodes);
	state_ptrmap_free(&fss->pipes);
	free(fss);
	s->fs = NULL;
}

/* --- files --- */

/*
 * The path of node from root (a node above it, its mount's root) into *out (malloc'd, "" for
 * root itself), under the rename lock. -ENOENT when root is not above it (a node with no name).
 */
static int node_path(struct vfs_node *root, struct vfs_node *node, char **out)
{
	size_t cap = 256, len = 0;
	char *buf = malloc(cap);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	buf[0] = 0;
	vfs_rename_read_lock();
	for (struct vfs_node *n = node; n != root; n = n->parent) {
		size_t nl;

		if (!n || !n->parent) {
			err = -ENOENT;
			break;
		}
		nl = strlen(n->name);
		if (len + nl + 2 > cap) {
			char *nb;

			cap = (len + nl + 2) * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		/* Prepend "name/" (the last slash is dropped below). */
		memmove(buf + nl + 1, buf, len + 1);
		memcpy(buf, n->name, nl);
		buf[nl] = '/';
		len += nl + 1;
	}
	vfs_rename_read_unlock();
	if (err < 0) {
		free(buf);
		return err;
	}
	if (len)
		buf[len - 1] = 0;
	*out = buf;
	return 0;
}

/* Walks path (components split by '/') from dir inside one filesystem. ERR_PTR or a node. */
static struct vfs_node *walk_in_fs(struct vfs_node *dir, const char *path)
{
	struct vfs_node *n = dir;
	const char *p = path;

	vfs_node_get(n);
	while (*p) {
		char name[VFS_NAME_MAX + 1];
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		struct vfs_node *next;

		if (len == 0 || len > VFS_NAME_MAX || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.')) {
			vfs_node_put(n);
			return ERR_PTR(-EINVAL);
		}
		memcpy(name, p, len);
		name[len] = 0;
		if (!vfs_node_is_dir(n) || !n->ops->lookup) {
			vfs_node_put(n);
			return ERR_PTR(-ENOTDIR);
		}
		next = n->ops->lookup(n, name);
		vfs_node_put(n);
		if (IS_ERR(next))
			return next;
		n = next;
		p += len;
		if (*p == '/')
			p++;
	}
	return n;
}

/* Filesystems whose files are found again by path. */
static bool fs_reopenable(const struct vfs_fs *fs)
{
	static const char *const types[] = { "tmpfs", "overlay", "gofer", "devfs" };

	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(fs->type, types[i]))
			return true;
	return false;
}

static int save_mount_ref(struct state_save *s, struct vfs_mount *m, Husk__State__File *out)
{
	struct state_fs_save *fss = s->fs;
	long i = mount_index(&fss->mounts, m);

	if (i < 0)
		return state_save_fail(s, -EOPNOTSUPP,
				       "cannot save a file of a %s mount outside the mount tree",
				       m->fs->type);
	out->has_mount = true;
	out->mount = (uint32_t)i;
	out->mountpoint = state_strdup(s, fss->mounts.v[i].path);
	return out->mountpoint ? 0 : state_save_fail(s, -ENOMEM, "out of memory");
}

/* The Pipe of st (added the first time). Returns its id or 0 (s->err). */
static uint32_t save_pipe(struct state_save *s, const struct pipe_state *st)
{
	struct state_fs_save *fss = s->fs;
	uint32_t id = state_ptrmap_find(&fss->pipes, st->id);
	Husk__State__Pipe *m;

	if (id)
		return id;
	m = MSG_NEW(s, Husk__State__Pipe, husk__state__pipe__init);
	if (!m)
		goto nomem;
	m->fifo = st->fifo;
	m->cap = st->cap;
	m->uid = st->uid;
	m->gid = st->gid;
	m->has_mode = true;
	m->mode = st->mode;
	m->r_counter = st->r_counter;
	m->w_counter = st->w_counter;
	m->data.len = st->len;
	if (st->len) {
		m->data.data = state_alloc(s, st->len);
		if (!m->data.data)
			goto nomem;
		memcpy(m->data.data, st->data, st->len);
	}
	if (st->nsegs) {
		m->segs = state_alloc(s, st->nsegs * sizeof(*m->segs));
		if (!m->segs)
			goto nomem;
		for (size_t i = 0; i < st->nsegs; i++) {
			Husk__State__PipeSeg *sg =
				MSG_NEW(s, Husk__State__PipeSeg, husk__state__pipe_seg__init);

			if (!sg)
				goto nomem;
			sg->len = st->segs[i].len;
			sg->packet = st->segs[i].packet;
			m->segs[m->n_segs++] = sg;
		}
	}
	id = state_ptrmap_add(&fss->pipes, st->id);
	if (!id)
		goto nomem;
	m->id = id;
	if (PUSH(s, fss->out->pipes, fss->out->n_pipes, fss->out_pipes_cap, m) < 0)
		goto nomem;
	return id;
nomem:
	state_save_fail(s, -ENOMEM, "out of memory saving a pipe");
	return 0;
}

static int save_pipe_file(struct state_save *s, struct file *f, Husk__State__File *out)
{
	struct pipe_state st;
	uint32_t id;
	int err = pipe_save(f, &st);

	if (err < 0)
		return state_save_fail(s, err, "cannot save a pipe");
	id = save_pipe(s, &st);
	free(st.data);
	free(st.segs);
	if (!id)
		return -ENOMEM;
	out->kind = st.fifo ? STATE_FILE_FIFO : STATE_FILE_PIPE;
	out->has_pipe = out->has_pipe_rd = out->has_pipe_wr = out->has_pipe_wseen = true;
	out->pipe = id;
	out->pipe_rd = st.rd;
	out->pipe_wr = st.wr;
	out->pipe_wseen = st.wseen;
	return 0;
}

/* A tmpfs regular file with no name (deleted while open, memfd): by inode id. */
static int save_nameless(struct state_save *s, struct file *f, struct tmpfs_node *tn,
			 Husk__State__File *out)
{
	struct state_fs_save *fss = s->fs;
	struct tmpfs *fs = tmpfs_of(&tn->base);
	struct save_tmpfs *st = save_tmpfs_find(fss, fs);
	struct vfs_mount *mmnt = NULL;
	size_t from;
	uint32_t id;
	int err;

	/* The memfd filesystem's mount, for every memfd (not only the first saved). */
	if (tmpfs_memfd_fs(fs->mf, &mmnt) != &fs->base)
		mmnt = NULL;
	if (!st && mmnt)
		st = save_tmpfs(s, fs, HUSK__STATE__TMPFS_ROLE__TMPFS_MEMFD, -1);
	if (!st)
		return state_save_fail(s, -EOPNOTSUPP,
				       "cannot save a deleted file of a tmpfs that is not mounted");
	if (f->mnt != mmnt) {
		err = save_mount_ref(s, f->mnt, out);
		if (err < 0)
			return err;
	}
	if (f->node != &tn->base) {
		struct vfs_attr a;

		/* An overlay's node over tn: keep the inode number it shows. */
		if (!overlay_upper(f->node->fs))
			return state_save_fail(s, -EOPNOTSUPP, "cannot save a %s file over tmpfs",
					       f->node->fs->type);
		err = vfs_node_getattr(f->node, &a);
		if (err < 0)
			return state_save_fail(s, err, "cannot stat an overlay file");
		out->has_ovl_ino = true;
		out->ovl_ino = a.ino;
	}
	pthread_mutex_lock(&fs->lock);
	from = st->msg->n_nodes;
	id = save_inode_id(s, st, tn->inode, tn->base.name);
	err = id ? save_dirs(s, st, from) : -ENOMEM;
	pthread_mutex_unlock(&fs->lock);
	if (err < 0)
		return err;
	out->kind = STATE_FILE_MEMFD;
	out->has_node = true;
	out->node = id;
	return 0;
}

int state_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	struct state_fs_save *fss = s->fs;
	struct tmpfs_node *tn;
	struct vfs_mount *m;
	struct vfs_node *again;
	char *path = NULL;
	int err, origin;

	if (!fss)
		return state_save_fail(s, -EINVAL, "files saved before the filesystems");
	origin = hostfile_origin(f);
	if (origin != -EINVAL) {
		if (origin < 0 || origin > 2)
			return state_save_fail(s, -EOPNOTSUPP,
					       "cannot save host files other than stdio yet");
		out->kind = STATE_FILE_HOST;
		out->has_host_fd = true;
		out->host_fd = origin;
		return 0;
	}
	if (state_anon_file(f))
		return state_anon_file_save(s, f, out);
	if (state_ipc_file(f))
		return state_ipc_file_save(s, f, out);
	if (file_is_socket(f))
		return state_sock_file_save(s, f, out);
	if (file_is_pipe(f)) {
		err = save_pipe_file(s, f, out);
		if (err < 0 || out->kind == STATE_FILE_PIPE)
			return err;
		/* A FIFO: found again by its path below. */
	}
	if (!f->mnt || !f->node || !fs_reopenable(f->node->fs))
		return state_save_fail(s, -EOPNOTSUPP, "cannot save %s files yet",
				       f->node ? f->node->fs->type : "pathless");
	if (S_ISSOCK(f->node->type) && !(f->flags & O_PATH))
		return state_save_fail(s, -EOPNOTSUPP, "cannot save socket files yet");
	if (S_ISFIFO(f->node->type) && out->kind != STATE_FILE_FIFO && !(f->flags & O_PATH))
		return state_save_fail(s, -EOPNOTSUPP, "cannot save this FIFO file");
	m = f->mnt;
	tn = tmpfs_file_node(f);
	err = node_path(m->root, f->node, &path);
	if (err == 0) {
		/* Still the file's name? (A removed name may leave the node's parent in place.) */
		again = walk_in_fs(m->root, path);
		if (IS_ERR(again) || again != f->node)
			err = -ENOENT;
		if (!IS_ERR(again))
			vfs_node_put(again);
	}
	if (err == -ENOENT && tn && out->kind != STATE_FILE_FIFO) {
		free(path);
		return save_nameless(s, f, tn, out);
	}
	if (err < 0) {
		free(path);
		return state_save_fail(s, err == -ENOENT ? -EOPNOTSUPP : err,
				       "cannot save a %s file %s", f->node->fs->type,
				       err == -ENOENT ? "deleted while open" : "(no path)");
	}
	err = save_mount_ref(s, m, out);
	if (err == 0) {
		out->path = state_strdup(s, path);
		if (!out->path)
			err = state_save_fail(s, -ENOMEM, "out of memory");
	}
	free(path);
	if (err < 0)
		return err;
	if (out->kind != STATE_FILE_FIFO)
		out->kind = STATE_FILE_PATH;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Restoring                                                                                  */
/* ------------------------------------------------------------------------------------------ */

struct restore_node {
	const Husk__State__TmpfsNode *msg;
	uint32_t tmpfs; /* index in state_fs_restore.tmpfs */
	struct tmpfs_inode *in; /* NULL until made */
	struct tmpfs_node *dir; /* directories: the node their entries go under (not referenced) */
	bool named; /* a Dirent names it, or it is a root */
	bool existed; /* the new sentry's own (a root, a start-up directory): not freed */
	struct tmpfs_node *nameless; /* referenced: the node of files with no name */
	struct vfs_node *ovl; /* referenced: an overlay node over nameless */
};

struct state_fs_restore {
	struct mount_list mounts;
	struct restore_node *nodes; /* by TmpfsNode.id - 1 */
	size_t nnodes;
	struct restore_tmpfs {
		struct tmpfs *fs;
		const Husk__State__Tmpfs *msg;
		long mount; /* index in mounts, -1 for the memfd filesystem */
	} * tmpfs;
	size_t ntmpfs;
	const Husk__State__FsState *in;
	struct vfs_node **pipes; /* by Pipe.id - 1: anonymous pipes (referenced) */
	bool *fifo_filled; /* by Pipe.id - 1 */
};

static bool name_ok(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= VFS_NAME_MAX && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..");
}

static bool ts_ok(const Husk__State__Timespec *t)
{
	return t && t->nsec >= 0 && t->nsec < 1000000000;
}

static struct timespec ts_of(const Husk__State__Timespec *t)
{
	return (struct timespec){ .tv_sec = t->sec, .tv_nsec = t->nsec };
}

static bool xattr_name_ok(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= VFS_XATTR_NAME_MAX &&
	       (!strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
		!strncmp(name, "security.", 9));
}

/* Checks the type-independent fields of node m and its type against the type's fields. */
static int check_node(struct state_restore *r, const Husk__State__TmpfsNode *m)
{
	uint32_t type = m->mode & S_IFMT;

	if (m->mode & ~(uint32_t)(S_IFMT | 07777))
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad mode %#o", m->id,
					  m->mode);
	switch (type) {
	case S_IFREG:
		if (!m->has_size || m->size < 0)
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad size", m->id);
		if (m->memfd_name && strlen(m->memfd_name) > TMPFS_MEMFD_NAME_MAX)
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad memfd name",
						  m->id);
		if (m->has_seals && (m->seals & ~(uint32_t)LINUX_F_SEAL_ALL))
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad seals", m->id);
		break;
	case S_IFLNK:
		if (!m->has_target || m->target.len == 0 || m->target.len >= VFS_PATH_MAX ||
		    memchr(m->target.data, 0, m->target.len))
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad symlink target",
						  m->id);
		break;
	case S_IFDIR:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	default:
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad mode %#o", m->id,
					  m->mode);
	}
	if (type != S_IFREG && (m->n_pages || m->has_size || m->memfd_name))
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: data on a non-regular file",
					  m->id);
	if (type != S_IFDIR && m->n_entries)
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: entries in a non-directory",
					  m->id);
	if (!ts_ok(m->atime) || !ts_ok(m->mtime) || !ts_ok(m->ctime))
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad times", m->id);
	if (m->name && (strlen(m->name) > VFS_NAME_MAX || strchr(m->name, '/')))
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad name", m->id);
	return 0;
}

/* Gives in (a regular file with no pages yet) the pages of m (fs lock held). */
static int restore_pages(struct state_restore *r, struct tmpfs *fs, struct tmpfs_inode *in,
			 const Husk__State__TmpfsNode *m)
{
	uint64_t max = 0;
	size_t n = 4;

	if (!m->n_pages)
		return 0;
	for (size_t i = 0; i < m->n_pages; i++) {
		const Husk__State__PageRun *p = m->pages[i];
		uint64_t end, bytes;

		if (p->npages == 0 || p->index >= TMPFS_MAX_PAGES ||
		    p->npages > TMPFS_MAX_PAGES - p->index || p->mem_off % TMPFS_PAGE ||
		    __builtin_mul_overflow(p->npages, (uint64_t)TMPFS_PAGE, &bytes) ||
		    __builtin_add_overflow(p->mem_off, bytes, &end))
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad page run %zu",
						  m->id, i);
		if (p->index + p->npages > max)
			max = p->index + p->npages;
	}
	while (n < max)
		n *= 2;
	in->pages = calloc(n, sizeof(*in->pages));
	if (!in->pages)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	in->npages = n;
	for (size_t i = 0; i < m->n_pages; i++) {
		const Husk__State__PageRun *p = m->pages[i];
		int err;

		for (uint64_t j = 0; j < p->npages; j++)
			if (in->pages[p->index + j])
				return state_restore_fail(r, -EINVAL,
							  "tmpfs node %u: page %llu given twice",
							  m->id,
							  (unsigned long long)(p->index + j));
		if ((fs->pages_used + p->npages) * TMPFS_PAGE > fs->size_limit)
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: over the size limit",
						  m->id);
		err = state_restore_range(r, p->mem_off, p->npages * TMPFS_PAGE);
		if (err < 0)
			return err;
		for (uint64_t j = 0; j < p->npages; j++)
			in->pages[p->index + j] = p->mem_off + j * TMPFS_PAGE + 1;
		in->nalloc += p->npages;
		fs->pages_used += p->npages;
	}
	return 0;
}

static int restore_xattrs(struct state_restore *r, struct tmpfs_inode *in,
			  const Husk__State__TmpfsNode *m)
{
	struct tmpfs_xattr **tail = &in->xattrs;

	/* A start-up directory reused has none worth keeping: the image says what it has. */
	for (struct tmpfs_xattr *x = in->xattrs, *next; x; x = next) {
		next = x->next;
		free(x->name);
		free(x->value);
		free(x);
	}
	in->xattrs = NULL;
	in->xattr_bytes = 0;
	for (size_t i = 0; i < m->n_xattrs; i++) {
		const Husk__State__Xattr *xm = m->xattrs[i];
		struct tmpfs_xattr *x;

		if (!xattr_name_ok(xm->name) || xm->value.len > VFS_XATTR_SIZE_MAX)
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad xattr", m->id);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->xattrs[j]->name, xm->name))
				return state_restore_fail(r, -EINVAL,
							  "tmpfs node %u: xattr %s twice", m->id,
							  xm->name);
		in->xattr_bytes += strlen(xm->name) + xm->value.len;
		if (in->xattr_bytes > TMPFS_XATTR_INODE_MAX)
			return state_restore_fail(r, -EINVAL, "tmpfs node %u: xattrs too large",
						  m->id);
		x = calloc(1, sizeof(*x));
		if (!x)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		*tail = x;
		tail = &x->next;
		x->name = strdup(xm->name);
		x->size = xm->value.len;
		x->value = x->size ? malloc(x->size) : NULL;
		if (!x->name || (x->size && !x->value))
			return state_restore_fail(r, -ENOMEM, "out of memory");
		if (x->size)
			memcpy(x->value, xm->value.data, x->size);
	}
	return 0;
}

/* Sets in's attributes and contents from m (fs lock held; m checked). */
static int restore_attrs(struct state_restore *r, struct tmpfs *fs, struct tmpfs_inode *in,
			 const Husk__State__TmpfsNode *m)
{
	int err;

	in->ino = m->ino;
	if (m->ino >= fs->next_ino)
		fs->next_ino = m->ino + 1;
	in->mode = m->mode;
	in->uid = m->uid;
	in->gid = m->gid;
	in->rdev = m->rdev;
	in->nlink = m->nlink;
	in->atime = ts_of(m->atime);
	in->mtime = ts_of(m->mtime);
	in->ctime = ts_of(m->ctime);
	in->opaque = m->has_opaque && m->opaque;
	in->origin_ino = m->has_origin_ino ? m->origin_ino : 0;
	if (S_ISREG(m->mode)) {
		in->size = m->size;
		in->seals = m->has_seals ? m->seals : LINUX_F_SEAL_SEAL;
		in->tmpfile = m->has_tmpfile && m->tmpfile;
		if (m->memfd_name && !(in->memfd_name = strdup(m->memfd_name)))
			return state_restore_fail(r, -ENOMEM, "out of memory");
		err = restore_pages(r, fs, in, m);
		if (err < 0)
			return err;
	}
	return restore_xattrs(r, in, m);
}

/* A new inode for n (fs lock held). */
static int make_inode(struct state_restore *r, struct tmpfs *fs, struct restore_node *n)
{
	const Husk__State__TmpfsNode *m = n->msg;
	struct vfs_create_args a = {
		.mode = m->mode, .uid = m->uid, .gid = m->gid, .rdev = m->rdev
	};
	char *target = NULL;
	int err;

	if (S_ISLNK(m->mode)) {
		target = strndup((const char *)m->target.data, m->target.len);
		if (!target)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		a.target = target;
	}
	n->in = tmpfs_inode_new(fs, &a);
	free(target);
	if (!n->in)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	err = restore_attrs(r, fs, n->in, m);
	return err;
}

/* The node of id (1-based) if it is one of tmpfs t's, else NULL after state_restore_fail. */
static struct restore_node *node_of(struct state_restore *r, uint32_t id, uint32_t t)
{
	struct state_fs_restore *frs = r->fs;

	if (id == 0 || id > frs->nnodes || !frs->nodes[id - 1].msg ||
	    frs->nodes[id - 1].tmpfs != t) {
		state_restore_fail(r, -EINVAL, "bad tmpfs node id %u", id);
		return NULL;
	}
	return &frs->nodes[id - 1];
}

/* Restores directory d's entries (fs lock held). New subdirectories go on the stack. */
static int restore_dir(struct state_restore *r, struct restore_tmpfs *rt, uint32_t t,
		       struct restore_node *d, struct restore_node ***stack, size_t *sn,
		       size_t *scap)
{
	const Husk__State__TmpfsNode *m = d->msg;
	struct tmpfs_inode *din = d->in;
	struct tmpfs_node **old = NULL, *c;
	size_t nold = 0, i;
	uint64_t prev = TMPFS_POS_FIRST - 1;
	int err = 0;

	if (!m->has_next_cookie || m->next_cookie < TMPFS_POS_FIRST)
		return state_restore_fail(r, -EINVAL, "tmpfs node %u: bad next cookie", m->id);
	/* The entries the new sentry made (mountpoints) are taken off the list, then put back. */
	list_for_each_entry(c, &din->entries, entry)
		nold++;
	if (nold) {
		old = calloc(nold, sizeof(*old));
		if (!old)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		i = 0;
		list_for_each_entry(c, &din->entries, entry)
			old[i++] = c;
		for (i = 0; i < nold; i++)
			list_init(&old[i]->entry);
		list_init(&din->entries);
	}
	for (size_t e = 0; e < m->n_entries && err == 0; e++) {
		const Husk__State__Dirent *de = m->entries[e];
		struct restore_node *cn;
		struct vfs_node *existing = NULL;
		struct tmpfs_node *tn;

		if (!name_ok(de->name) || de->cookie <= prev || de->cookie >= m->next_cookie) {
			err = state_restore_fail(r, -EINVAL, "tmpfs node %u: bad entry %zu", m->id,
						 e);
			break;
		}
		prev = de->cookie;
		cn = node_of(r, de->node, t);
		if (!cn) {
			err = -EINVAL;
			break;
		}
		if (S_ISDIR(cn->msg->mode) && cn->named) {
			err = state_restore_fail(
				r, -EINVAL, "tmpfs node %u: directory %u named twice (a cycle?)",
				m->id, de->node);
			break;
		}
		if (vfs_dcache_lookup(&din->names, de->name, &existing) && existing) {
			struct tmpfs_node *en = tnode(existing);

			for (i = 0; i < nold && old[i] != en; i++)
				;
			/* Only a start-up directory where the image has a directory is merged, and an
			 * empty start-up file where it has a file (the mountpoint of a file bind
			 * mount, such as podman's /run/.containerenv: the mount covers it), and a
			 * start-up device node, FIFO or symlink where the image has the same one (the
			 * sentry's /dev: its devices, linux.devices, ptmx -> pts/ptmx). */
			bool same_dir = S_ISDIR(en->inode->mode) && S_ISDIR(cn->msg->mode);
			bool mountpoint_file = S_ISREG(en->inode->mode) && S_ISREG(cn->msg->mode) &&
					       en->inode->size == 0;
			uint32_t et = en->inode->mode & S_IFMT;
			bool same_node =
				et == (cn->msg->mode & S_IFMT) &&
				((et == S_IFCHR || et == S_IFBLK || et == S_IFIFO) ?
					 en->inode->rdev == cn->msg->rdev :
				 et == S_IFLNK ?
					 en->inode->target &&
						 strlen(en->inode->target) == cn->msg->target.len &&
						 !memcmp(en->inode->target, cn->msg->target.data,
							 cn->msg->target.len) :
					 false);

			if (i == nold || !(same_dir || mountpoint_file || same_node) || cn->in) {
				vfs_node_put(existing);
				err = state_restore_fail(r, -EINVAL, "tmpfs node %u: %s exists",
							 m->id, de->name);
				break;
			}
			old[i] = NULL;
			cn->in = en->inode;
			cn->existed = true;
			err = restore_attrs(r, rt->fs, cn->in, cn->msg);
			tn = en;
			list_add_tail(&tn->entry, &din->entries);
			vfs_node_put(existing);
		} else {
			if (!cn->in)
				err = make_inode(r, rt->fs, cn);
			if (err < 0)
				break;
			tn = tmpfs_node_new(rt->fs, &d->dir->base, de->name, cn->in);
			if (!tn || tmpfs_dir_link(din, de->name, tn) < 0) {
				if (tn)
					vfs_node_put(&tn->base);
				err = state_restore_fail(r, -ENOMEM, "out of memory");
				break;
			}
			vfs_node_put(&tn->base); /* the directory holds it */
		}
		tn->cookie = de->cookie;
		tn->linked = true;
		cn->named = true;
		if (err == 0 && S_ISDIR(cn->msg->mode)) {
			cn->dir = tn;
			if (*sn == *scap) {
				size_t cap = *scap ? *scap * 2 : 64;
				struct restore_node **v = realloc(*stack, cap * sizeof(*v));

				if (!v) {
					err = state_restore_fail(r, -ENOMEM, "out of memory");
					break;
				}
				*stack = v;
				*scap = cap;
			}
			(*stack)[(*sn)++] = cn;
		}
	}
	din->next_cookie = m->next_cookie;
	for (i = 0; i < nold; i++) {
		if (!old[i])
			continue;
		old[i]->cookie = din->next_cookie++;
		list_add_tail(&old[i]->entry, &din->entries);
	}
	free(old);
	return err;
}

static int restore_tmpfs_tree(struct state_restore *r, uint32_t t)
{
	struct state_fs_restore *frs = r->fs;
	struct restore_tmpfs *rt = &frs->tmpfs[t];
	struct tmpfs *fs = rt->fs;
	struct restore_node *root = node_of(r, rt->msg->root, t), **stack = NULL;
	size_t sn = 0, scap = 0;
	int err;

	if (!root)
		return -EINVAL;
	if (!S_ISDIR(root->msg->mode))
		return state_restore_fail(r, -EINVAL, "tmpfs %u: the root is not a directory",
					  rt->msg->id);
	if (rt->msg->size_limit == 0)
		return state_restore_fail(r, -EINVAL, "tmpfs %u: no size limit", rt->msg->id);
	fs->size_limit = rt->msg->size_limit;
	if (rt->msg->next_ino > fs->next_ino)
		fs->next_ino = rt->msg->next_ino;
	root->in = tinode(fs->base.root);
	root->dir = tnode(fs->base.root);
	root->named = root->existed = true;
	err = restore_attrs(r, fs, root->in, root->msg);
	if (err == 0) {
		stack = malloc(sizeof(*stack));
		if (!stack)
			err = state_restore_fail(r, -ENOMEM, "out of memory");
		else
			stack[sn++] = root;
		scap = 1;
	}
	while (err == 0 && sn) {
		struct restore_node *d = stack[--sn];

		err = restore_dir(r, rt, t, d, &stack, &sn, &scap);
	}
	free(stack);
	/* Inodes no entry names: files deleted while open, memfds. */
	for (size_t i = 0; err == 0 && i < rt->msg->n_nodes; i++) {
		struct restore_node *n = &frs->nodes[rt->msg->nodes[i]->id - 1];

		if (n->named)
			continue;
		if (n->msg->n_entries)
			err = state_restore_fail(
				r, -EINVAL, "tmpfs node %u: a directory with no name has entries",
				n->msg->id);
		else
			err = make_inode(r, fs, n);
	}
	return err;
}

/* Finds the filesystem tmpfs message m stands for in the new sentry. */
static int restore_find_tmpfs(struct state_restore *r, const Husk__State__Tmpfs *m,
			      struct restore_tmpfs *rt)
{
	struct state_fs_restore *frs = r->fs;
	struct vfs_fs *vfs = NULL;
	struct vfs_mount *mnt;

	rt->msg = m;
	rt->mount = -1;
	switch (m->role) {
	case HUSK__STATE__TMPFS_ROLE__TMPFS_MEMFD:
		vfs = tmpfs_memfd_fs(&r->k->mf, &mnt);
		if (!vfs)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		break;
	case HUSK__STATE__TMPFS_ROLE__TMPFS_MOUNT:
	case HUSK__STATE__TMPFS_ROLE__TMPFS_OVERLAY_UPPER:
		if (!m->has_mount || m->mount >= frs->mounts.n || !m->mountpoint ||
		    strcmp(m->mountpoint, frs->mounts.v[m->mount].path))
			return state_restore_fail(r, -EINVAL,
						  "tmpfs %u: no such mount in this sandbox (%s)",
						  m->id, m->mountpoint ? m->mountpoint : "?");
		rt->mount = m->mount;
		vfs = frs->mounts.v[m->mount].m->fs;
		if (m->role == HUSK__STATE__TMPFS_ROLE__TMPFS_OVERLAY_UPPER)
			vfs = overlay_upper(vfs);
		else if (!tmpfs_is_node(vfs->root))
			vfs = NULL;
		if (!vfs)
			return state_restore_fail(r, -EINVAL, "tmpfs %u: %s is not a %s", m->id,
						  m->mountpoint,
						  m->role == HUSK__STATE__TMPFS_ROLE__TMPFS_MOUNT ?
							  "tmpfs" :
							  "overlay");
		break;
	default:
		return state_restore_fail(r, -EINVAL, "tmpfs %u: bad role %d", m->id, m->role);
	}
	rt->fs = container_of(vfs, struct tmpfs, base);
	for (size_t i = 0; i < frs->ntmpfs; i++)
		if (frs->tmpfs[i].fs == rt->fs)
			return state_restore_fail(r, -EINVAL, "tmpfs %u: restored twice", m->id);
	return 0;
}

int state_fs_restore(struct state_restore *r, const Husk__State__FsState *in)
{
	struct state_fs_restore *frs;
	size_t total = 0;
	int err;

	if (r->fs)
		return state_restore_fail(r, -EINVAL, "filesystems restored twice");
	frs = calloc(1, sizeof(*frs));
	if (!frs)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	r->fs = frs;
	frs->in = in;
	err = mounts_get(r->k, &frs->mounts);
	if (err < 0)
		return state_restore_fail(r, err, "cannot list the mounts");
	for (size_t t = 0; t < in->n_tmpfs; t++) {
		if (in->tmpfs[t]->n_nodes > UINT32_MAX - total)
			return state_restore_fail(r, -EINVAL, "too many tmpfs nodes");
		total += in->tmpfs[t]->n_nodes;
	}
	frs->nodes = calloc(total ? total : 1, sizeof(*frs->nodes));
	frs->tmpfs = calloc(in->n_tmpfs ? in->n_tmpfs : 1, sizeof(*frs->tmpfs));
	frs->pipes = calloc(in->n_pipes ? in->n_pipes : 1, sizeof(*frs->pipes));
	frs->fifo_filled = calloc(in->n_pipes ? in->n_pipes : 1, sizeof(*frs->fifo_filled));
	if (!frs->nodes || !frs->tmpfs || !frs->pipes || !frs->fifo_filled)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	frs->nnodes = total;
	for (size_t i = 0; i < in->n_pipes; i++)
		if (in->pipes[i]->id != i + 1)
			return state_restore_fail(r, -EINVAL, "bad pipe id %u", in->pipes[i]->id);
	for (size_t t = 0; t < in->n_tmpfs; t++) {
		const Husk__State__Tmpfs *m = in->tmpfs[t];

		for (size_t i = 0; i < m->n_nodes; i++) {
			const Husk__State__TmpfsNode *nm = m->nodes[i];

			if (nm->id == 0 || nm->id > total || frs->nodes[nm->id - 1].msg)
				return state_restore_fail(r, -EINVAL, "bad tmpfs node id %u",
							  nm->id);
			err = check_node(r, nm);
			if (err < 0)
				return err;
			frs->nodes[nm->id - 1].msg = nm;
			frs->nodes[nm->id - 1].tmpfs = (uint32_t)t;
		}
		err = restore_find_tmpfs(r, m, &frs->tmpfs[t]);
		if (err < 0)
			return err;
		frs->ntmpfs++;
	}
	for (size_t t = 0; t < frs->ntmpfs; t++) {
		struct tmpfs *fs = frs->tmpfs[t].fs;

		pthread_mutex_lock(&fs->lock);
		err = restore_tmpfs_tree(r, (uint32_t)t);
		pthread_mutex_unlock(&fs->lock);
		if (err < 0)
			return err;
	}
	for (size_t t = 0; t < frs->ntmpfs; t++)
		if (frs->tmpfs[t].mount >= 0)
			overlay_restore_refresh(frs->mounts.v[frs->tmpfs[t].mount].m->fs);
	return 0;
}

void state_fs_restore_end(struct state_restore *r)
{
	struct state_fs_restore *frs = r->fs;

	if (!frs)
		return;
	for (size_t i = 0; i < frs->nnodes; i++) {
		struct restore_node *n = &frs->nodes[i];
		struct tmpfs *fs;

		if (n->ovl)
			vfs_node_put(n->ovl);
		if (n->nameless)
			vfs_node_put(&n->nameless->base);
		if (!n->in || n->existed)
			continue;
		fs = frs->tmpfs[n->tmpfs].fs;
		pthread_mutex_lock(&fs->lock);
		/* Made, but no node took it (no name, and no file restored it): free it. */
		if (refcount_read(&n->in->ref) == 0) {
			refcount_init(&n->in->ref, 1);
			tmpfs_inode_put(fs, n->in);
		}
		pthread_mutex_unlock(&fs->lock);
	}
	for (size_t i = 0; frs->in && i < frs->in->n_pipes; i++)
		if (frs->pipes[i])
			vfs_node_put(frs->pipes[i]);
	mounts_free(&frs->mounts);
	free(frs->nodes);
	free(frs->tmpfs);
	free(frs->pipes);
	free(frs->fifo_filled);
	free(frs);
	r->fs = NULL;
}

/* --- files --- */

/* The mount file m names in the new sentry, or NULL (state_restore_fail). */
static struct vfs_mount *restore_mount(struct state_restore *r, const Husk__State__File *m)
{
	struct state_fs_restore *frs = r->fs;

	if (!m->has_mount || m->mount >= frs->mounts.n || !m->mountpoint ||
	    strcmp(m->mountpoint, frs->mounts.v[m->mount].path)) {
		state_restore_fail(r, -EINVAL, "file %u: no such mount in this sandbox (%s)", m->id,
				   m->mountpoint ? m->mountpoint : "?");
		return NULL;
	}
	return frs->mounts.v[m->mount].m;
}

/* Opens node n of mount m as open(2) would with flags, without permission checks. */
static struct file *open_node(struct vfs_mount *m, struct vfs_node *n, int flags)
{
	struct file *f;

	if (flags & O_PATH) {
		f = vfs_path_file_create(flags);
		if (!f)
			return ERR_PTR(-ENOMEM);
	} else if (vfs_node_is_dir(n)) {
		if ((flags & O_ACCMODE) != O_RDONLY)
			return ERR_PTR(-EISDIR);
		f = n->ops->open_dir ? n->ops->open_dir(n, flags) : vfs_dir_file_create(flags);
		if (!f)
			return ERR_PTR(-ENOMEM);
	} else {
		if (vfs_node_is_symlink(n))
			return ERR_PTR(-ELOOP);
		if (!n->ops->open)
			return ERR_PTR(-ENXIO);
		f = n->ops->open(n, flags & ~(O_CREAT | O_EXCL | O_TRUNC));
	}
	if (IS_ERR(f))
		return f;
	f->flags = flags;
	f->mnt = m;
	f->node = n;
	vfs_mount_get(m);
	vfs_node_get(n);
	return f;
}

/* A pipe_state from a Pipe message (segs malloc'd in st, freed by the caller). */
static int pipe_state_of(struct state_restore *r, const Husk__State__File *in,
			 struct pipe_state *st)
{
	const Husk__State__FsState *fsin = r->fs->in;
	const Husk__State__Pipe *p;

	memset(st, 0, sizeof(*st));
	if (!in->has_pipe || in->pipe == 0 || in->pipe > fsin->n_pipes)
		return state_restore_fail(r, -EINVAL, "file %u: bad pipe id", in->id);
	p = fsin->pipes[in->pipe - 1];
	if (p->fifo != (in->kind == STATE_FILE_FIFO) || p->cap > STATE_PIPE_CAP_MAX ||
	    p->data.len > p->cap)
		return state_restore_fail(r, -EINVAL, "pipe %u: bad kind, capacity or data", p->id);
	st->fifo = p->fifo;
	st->rd = in->has_pipe_rd && in->pipe_rd;
	st->wr = in->has_pipe_wr && in->pipe_wr;
	st->wseen = in->has_pipe_wseen ? in->pipe_wseen : 0;
	st->cap = p->cap;
	st->data = p->data.data;
	st->len = p->data.len;
	st->uid = p->uid;
	st->gid = p->gid;
	st->mode = p->has_mode ? p->mode & 07777 : 0600;
	st->r_counter = p->r_counter;
	st->w_counter = p->w_counter;
	if (p->n_segs > p->cap / LINUX_PIPE_BUF)
		return state_restore_fail(r, -EINVAL, "pipe %u: too many packets", p->id);
	if (p->n_segs) {
		st->segs = calloc(p->n_segs, sizeof(*st->segs));
		if (!st->segs)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		for (size_t i = 0; i < p->n_segs; i++)
			st->segs[i] =
				(struct pipe_state_seg){ p->segs[i]->len, p->segs[i]->packet };
		st->nsegs = p->n_segs;
	}
	if (!st->rd && !st->wr)
		return state_restore_fail(r, -EINVAL, "file %u: a pipe file with no direction",
					  in->id);
	if (!st->fifo && st->rd && st->wr)
		return state_restore_fail(r, -EINVAL, "file %u: a pipe end both ways", in->id);
	return 0;
}

static struct file *restore_pipe(struct state_restore *r, const Husk__State__File *in)
{
	struct state_fs_restore *frs = r->fs;
	struct pipe_state st;
	struct file *f;
	int err = pipe_state_of(r, in, &st);

	if (err < 0) {
		free(st.segs);
		return NULL;
	}
	if (!frs->pipes[in->pipe - 1]) {
		struct vfs_node *p = pipe_restore_new(&st);

		if (IS_ERR(p)) {
			free(st.segs);
			state_restore_fail(r, (int)PTR_ERR(p), "pipe %u: cannot be restored",
					   in->pipe);
			return NULL;
		}
		frs->pipes[in->pipe - 1] = p;
	}
	free(st.segs);
	f = pipe_restore_end(frs->pipes[in->pipe - 1], st.rd, in->flags);
	if (IS_ERR(f)) {
		state_restore_fail(r, (int)PTR_ERR(f), "file %u: cannot be restored", in->id);
		return NULL;
	}
	return f;
}

static struct file *restore_path(struct state_restore *r, const Husk__State__File *in)
{
	struct state_fs_restore *frs = r->fs;
	struct vfs_mount *m = restore_mount(r, in);
	struct vfs_node *n;
	struct file *f;

	if (!m)
		return NULL;
	if (!in->path) {
		state_restore_fail(r, -EINVAL, "file %u: no path", in->id);
		return NULL;
	}
	n = walk_in_fs(m->root, in->path);
	if (IS_ERR(n)) {
		state_restore_fail(r, (int)PTR_ERR(n), "file %u: %s%s%s: %s", in->id,
				   frs->mounts.v[in->mount].path, "/", in->path,
				   strerror((int)-PTR_ERR(n)));
		return NULL;
	}
	if (in->kind == STATE_FILE_FIFO) {
		struct pipe_state st;
		int err;

		if (!S_ISFIFO(n->type)) {
			vfs_node_put(n);
			state_restore_fail(r, -EINVAL, "file %u: %s is not a FIFO", in->id,
					   in->path);
			return NULL;
		}
		err = pipe_state_of(r, in, &st);
		f = err < 0 ? ERR_PTR(err) :
			      pipe_restore_fifo(n, &st, !frs->fifo_filled[in->pipe - 1], in->flags);
		free(st.segs);
		if (IS_ERR(f)) {
			vfs_node_put(n);
			if (err == 0)
				state_restore_fail(r, (int)PTR_ERR(f), "file %u: FIFO %s", in->id,
						   in->path);
			return NULL;
		}
		frs->fifo_filled[in->pipe - 1] = true;
		f->mnt = m;
		f->node = n; /* the walk's reference */
		vfs_mount_get(m);
		return f;
	}
	if (S_ISFIFO(n->type) && !(in->flags & O_PATH)) {
		vfs_node_put(n);
		state_restore_fail(r, -EINVAL, "file %u: %s is a FIFO", in->id, in->path);
		return NULL;
	}
	f = open_node(m, n, in->flags);
	vfs_node_put(n);
	if (IS_ERR(f)) {
		state_restore_fail(r, (int)PTR_ERR(f), "file %u: cannot open %s", in->id, in->path);
		return NULL;
	}
	return f;
}

static struct file *restore_nameless(struct state_restore *r, const Husk__State__File *in)
{
	struct state_fs_restore *frs = r->fs;
	struct vfs_mount *m = NULL, *mmnt = NULL;
	struct restore_node *n;
	struct tmpfs *fs;
	struct vfs_node *node;
	struct file *f;

	if (!in->has_node || in->node == 0 || in->node > frs->nnodes ||
	    !frs->nodes[in->node - 1].msg || !frs->nodes[in->node - 1].in) {
		state_restore_fail(r, -EINVAL, "file %u: bad tmpfs node id", in->id);
		return NULL;
	}
	n = &frs->nodes[in->node - 1];
	fs = frs->tmpfs[n->tmpfs].fs;
	if (!S_ISREG(n->in->mode)) {
		state_restore_fail(r, -EINVAL, "file %u: node %u is not a regular file", in->id,
				   in->node);
		return NULL;
	}
	if (in->has_mount) {
		m = restore_mount(r, in);
		if (!m)
			return NULL;
		if (m->fs != &fs->base && overlay_upper(m->fs) != &fs->base) {
			state_restore_fail(r, -EINVAL, "file %u: node %u is not of mount %u",
					   in->id, in->node, in->mount);
			return NULL;
		}
	} else if (tmpfs_memfd_fs(&r->k->mf, &mmnt) == &fs->base) {
		m = mmnt;
	} else {
		state_restore_fail(r, -EINVAL, "file %u: no mount", in->id);
		return NULL;
	}
	if (!n->nameless) {
		pthread_mutex_lock(&fs->lock);
		n->nameless =
			tmpfs_node_new(fs, fs->base.root, n->msg->name ? n->msg->name : "", n->in);
		pthread_mutex_unlock(&fs->lock);
		if (!n->nameless) {
			state_restore_fail(r, -ENOMEM, "out of memory");
			return NULL;
		}
	}
	node = &n->nameless->base;
	if (m->fs != &fs->base) {
		if (!n->ovl) {
			n->ovl = overlay_node_detached(m->fs, node,
						       in->has_ovl_ino ? in->ovl_ino : 0);
			if (IS_ERR(n->ovl)) {
				state_restore_fail(r, (int)PTR_ERR(n->ovl), "out of memory");
				n->ovl = NULL;
				return NULL;
			}
		}
		node = n->ovl;
	}
	f = n->nameless->base.ops->open(&n->nameless->base,
					in->flags & ~(O_CREAT | O_EXCL | O_TRUNC));
	if (IS_ERR(f)) {
		state_restore_fail(r, (int)PTR_ERR(f), "file %u: cannot open node %u", in->id,
				   in->node);
		return NULL;
	}
	f->flags = in->flags;
	f->mnt = m;
	f->node = node;
	vfs_mount_get(m);
	vfs_node_get(node);
	return f;
}

static struct file *restore_host(struct state_restore *r, const Husk__State__File *in)
{
	struct file *f;
	int fd;

	if (!in->has_host_fd || in->host_fd < 0 || in->host_fd > 2) {
		state_restore_fail(r, -EINVAL, "file %u: bad host fd", in->id);
		return NULL;
	}
	fd = fcntl(in->host_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		state_restore_fail(r, -errno, "file %u: the sentry has no fd %d", in->id,
				   in->host_fd);
		return NULL;
	}
	f = hostfile_create(fd, in->flags);
	if (!f) {
		close(fd);
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	f->flags = in->flags;
	hostfile_set_origin(f, in->host_fd);
	return f;
}

struct file *state_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	struct file *f;

	if (!r->fs) {
		state_restore_fail(r, -EINVAL, "files restored before the filesystems");
		return NULL;
	}
	if ((in->flags & O_ACCMODE) == O_ACCMODE && !(in->flags & O_PATH)) {
		state_restore_fail(r, -EINVAL, "file %u: bad flags %#x", in->id, in->flags);
		return NULL;
	}
	if (in->pos < 0) {
		state_restore_fail(r, -EINVAL, "file %u: bad position", in->id);
		return NULL;
	}
	switch (in->kind) {
	case STATE_FILE_HOST:
		f = restore_host(r, in);
		break;
	case STATE_FILE_PATH:
	case STATE_FILE_FIFO:
		f = restore_path(r, in);
		break;
	case STATE_FILE_MEMFD:
		f = restore_nameless(r, in);
		break;
	case STATE_FILE_PIPE:
		f = restore_pipe(r, in);
		break;
	case STATE_FILE_EVENTFD:
	case STATE_FILE_TIMERFD:
	case STATE_FILE_SIGNALFD:
	case STATE_FILE_EPOLL:
		f = state_anon_file_restore(r, in);
		break;
	case STATE_FILE_SOCKET:
		f = state_sock_file_restore(r, in);
		break;
	case STATE_FILE_SHM:
	case STATE_FILE_MQUEUE:
		f = state_ipc_file_restore(r, in);
		break;
	default:
		state_restore_fail(r, -EINVAL, "file %u: bad kind %u", in->id, in->kind);
		return NULL;
	}
	if (f && !f->host_offset)
		f->pos = in->pos;
	return f;
}
