/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's dispatcher: a table of handles (O_PATH FDs) and one function per message.
 *
 * The sentry is hostile (DESIGN.md rule 4). Requests are validated by gofer_req_decode (sizes,
 * counts, names that are single components); here every handle is checked against the table,
 * every lookup is openat(parent, name, O_PATH|O_NOFOLLOW) of one component, so no request can
 * name anything outside the served tree: there is no "..", no path, and symlinks are never
 * followed (a walk stops on them and hands back the symlink itself). Files are opened by
 * reopening the handle's O_PATH FD through /proc/self/fd, which opens exactly that inode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/idmap.h"
#include "common/log.h"
#include "common/util.h"
#include "gofer/server.h"
#include "include/abi/linux/stat.h"

/* One handle. A free slot has fd -1 and sits on the free list. */
struct gofer_node {
	int fd; /* O_PATH|O_NOFOLLOW FD of the node */
	int dirfd; /* directories: an O_RDONLY FD for GETDENTS, opened on first use, or -1 */
	uint32_t gen; /* generation, the high half of the handle; changes when the slot is freed */
	uint32_t type; /* S_IFMT bits (an inode's type never changes) */
	uint32_t next_free; /* free slots: index + 1 of the next free slot, or 0 */
};

struct gofer_server {
	int root_fd;
	bool root_is_file; /* serving one regular file (a file bind mount) */
	int proc_fd; /* /proc/self/fd, to reopen O_PATH FDs */
	bool readonly;
	uint32_t max_handles;
	struct idmap uid_map, gid_map; /* guest (inside) to host (outside) owners */
	uint32_t live; /* handles in use */
	struct gofer_node *nodes;
	uint32_t nslots; /* slots ever used */
	uint32_t cap; /* slots allocated */
	uint32_t free_head; /* index + 1 of the first free slot, or 0 */
	/* Decoded request and reply, too big for the stack of a fuzzer. */
	struct gofer_req req;
	struct gofer_rep rep;
	uint8_t scratch[GOFER_MSG_MAX]; /* encoded dirents, symlink targets */
	uint8_t dents[32768] __attribute__((aligned(8))); /* host getdents64 records */
	char xlist[65536]; /* the host's xattr list, before it is filtered */
	uint8_t in[GOFER_MSG_MAX]; /* gofer_server_serve's request */
	uint8_t out[GOFER_MSG_MAX]; /* gofer_server_serve's reply */
};

static uint64_t node_handle(const struct gofer_server *s, uint32_t idx)
{
	return ((uint64_t)s->nodes[idx].gen << 32) | (idx + 1);
}

/* The node of handle h, or NULL when h is not a live handle. */
static struct gofer_node *node_get(struct gofer_server *s, uint64_t h)
{
	uint32_t low = (uint32_t)h;
	struct gofer_node *n;

	if (low == 0 || low > s->nslots)
		return NULL;
	n = &s->nodes[low - 1];
	if (n->fd < 0 || n->gen != (uint32_t)(h >> 32))
		return NULL;
	return n;
}

/* Adds a node for fd (taken over, closed on failure). Returns its handle or -errno. */
static int64_t node_add(struct gofer_server *s, int fd, uint32_t type)
{
	uint32_t idx;

	if (s->live >= s->max_handles) {
		close(fd);
		return -ENFILE;
	}
	if (s->free_head) {
		idx = s->free_head - 1;
		s->free_head = s->nodes[idx].next_free;
	} else {
		if (s->nslots == s->cap) {
			uint32_t ncap = s->cap ? s->cap * 2 : 64;
			struct gofer_node *n = realloc(s->nodes, ncap * sizeof(*n));

			if (!n) {
				close(fd);
				return -ENOMEM;
			}
			s->nodes = n;
			s->cap = ncap;
		}
		idx = s->nslots++;
		s->nodes[idx].gen = 1;
	}
	s->nodes[idx].fd = fd;
	s->nodes[idx].dirfd = -1;
	s->nodes[idx].type = type & S_IFMT;
	s->nodes[idx].next_free = 0;
	s->live++;
	return (int64_t)node_handle(s, idx);
}

static void node_release(struct gofer_server *s, struct gofer_node *n)
{
	uint32_t idx = (uint32_t)(n - s->nodes);

	close(n->fd);
	if (n->dirfd >= 0)
		close(n->dirfd);
	n->fd = -1;
	n->dirfd = -1;
	/* A stale handle to this slot must not name the next node put in it. */
	if (++n->gen == 0)
		n->gen = 1;
	n->next_free = s->free_head;
	s->free_head = idx + 1;
	s->live--;
}

/* Opens the inode of fd with flags (never a path lookup: the /proc link is to its inode). */
static int fd_reopen(struct gofer_server *s, int fd, int flags)
{
	char name[16];
	int ret;

	snprintf(name, sizeof(name), "%d", fd);
	ret = openat(s->proc_fd, name, flags | O_CLOEXEC);
	return ret < 0 ? -errno : ret;
}

static int node_reopen(struct gofer_server *s, const struct gofer_node *n, int flags)
{
	return fd_reopen(s, n->fd, flags);
}

/*
 * chmod of the inode of fd, an O_PATH FD of anything but a symlink: fchmod(2) refuses O_PATH
 * FDs, so this goes through the /proc link, which names that inode and nothing else.
 */
static int fd_chmod(struct gofer_server *s, int fd, uint32_t mode)
{
	char name[16];

	snprintf(name, sizeof(name), "%d", fd);
	return fchmodat(s->proc_fd, name, (mode_t)mode, 0) < 0 ? -errno : 0;
}

/* The node of a directory handle, or NULL with *err set (EBADF, ENOTDIR). */
static struct gofer_node *dir_get(struct gofer_server *s, uint64_t h, int *err)
{
	struct gofer_node *n = node_get(s, h);

	if (!n)
		*err = -EBADF;
	else if (!S_ISDIR(n->type))
		*err = -ENOTDIR;
	return *err ? NULL : n;
}

/* Copies a name of a request into buf (GOFER_NAME_MAX + 1 bytes), NUL-terminated. */
static const char *name_cstr(char *buf, const struct gofer_name *nm)
{
	memcpy(buf, nm->name, nm->len);
	buf[nm->len] = '\0';
	return buf;
}

/*
 * The attributes of st as the sentry sees them: owners through the id mappings (an owner the
 * mapping does not cover shows as the overflow id, as stat(2) in a user namespace).
 */
static void attr_from_stat(const struct gofer_server *s, struct gofer_attr *a,
			   const struct stat *st)
{
	a->dev = st->st_dev;
	a->ino = st->st_ino;
	a->nlink = st->st_nlink;
	a->mode = st->st_mode;
	a->uid = idmap_to_inside_or_overflow(&s->uid_map, st->st_uid);
	a->gid = idmap_to_inside_or_overflow(&s->gid_map, st->st_gid);
	a->rdev = st->st_rdev;
	a->size = st->st_size;
	a->blksize = st->st_blksize;
	a->blocks = st->st_blocks;
	a->atime_sec = st->st_atim.tv_sec;
	a->atime_nsec = (uint32_t)st->st_atim.tv_nsec;
	a->mtime_sec = st->st_mtim.tv_sec;
	a->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	a->ctime_sec = st->st_ctim.tv_sec;
	a->ctime_nsec = (uint32_t)st->st_ctim.tv_nsec;
}

static int fd_attr(const struct gofer_server *s, int fd, struct gofer_attr *a)
{
	struct stat st;

	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	attr_from_stat(s, a, &st);
	return 0;
}

/* Access bits of ns_may (Linux's MAY_EXEC, MAY_WRITE, MAY_READ). */
#define NS_X 1
#define NS_W 2
#define NS_R 4

/*
 * With owner mappings, the gofer does at most what the container's root could do in its user
 * namespace (runc's containers): its capabilities count only on a node whose owner and group
 * are both mapped (Linux's capable_wrt_inode_uidgid); on any other node only the permission
 * bits some guest id could use apply (owner bits if the owner is mapped, group bits if the
 * group is, other bits always). The sentry checks the guest's own credentials before asking;
 * this bounds what a subverted sentry gets. Returns 0, -EACCES, or -errno of fstat. Without
 * mappings, 0.
 */
static int ns_may(const struct gofer_server *s, int fd, int mask)
{
	struct stat st;
	uint32_t id, allowed;
	bool umapped, gmapped;

	if (!s->uid_map.n && !s->gid_map.n)
		return 0;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	umapped = idmap_to_inside(&s->uid_map, st.st_uid, &id);
	gmapped = idmap_to_inside(&s->gid_map, st.st_gid, &id);
	if (umapped && gmapped)
		return 0;
	allowed = st.st_mode & 7;
	if (umapped)
		allowed |= (st.st_mode >> 6) & 7;
	if (gmapped)
		allowed |= (st.st_mode >> 3) & 7;
	return ((allowed & (uint32_t)mask) == (uint32_t)mask) ? 0 : -EACCES;
}

/*
 * With owner mappings: whether name may leave the directory dirfd (unlink, rename) as far as
 * the sticky bit goes: in a sticky directory whose owner is not mapped, only a name whose
 * owner is (a guest id owns it, or CAP_FOWNER counts on it). Returns 0, -EPERM, or 0 when name
 * cannot be stat'ed (the call itself then fails as the host says). Without mappings, 0.
 */
static int ns_may_delete(const struct gofer_server *s, int dirfd, const char *name)
{
	struct stat d, st;
	uint32_t id;

	if (!s->uid_map.n && !s->gid_map.n)
		return 0;
	if (fstatat(dirfd, "", &d, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!(d.st_mode & S_ISVTX) || idmap_to_inside(&s->uid_map, d.st_uid, &id))
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return idmap_to_inside(&s->uid_map, st.st_uid, &id) ? 0 : -EPERM;
}

/*
 * With owner mappings: whether a guest process could own the node at fd (chown, chmod, times,
 * xattrs need the owner, or CAP_FOWNER/CAP_CHOWN, which count only on a mapped node). Returns
 * 0, -EPERM, or -errno of fstat. Without mappings, 0.
 */
static int ns_may_own(const struct gofer_server *s, int fd)
{
	struct stat st;
	uint32_t id;

	if (!s->uid_map.n && !s->gid_map.n)
		return 0;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return idmap_to_inside(&s->uid_map, st.st_uid, &id) ? 0 : -EPERM;
}

static int do_mount(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	int64_t h;
	int fd, ret;

	if (req->mount.version != GOFER_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	/* A file root (a file bind mount) is reopened through its /proc link: that inode only. */
	if (s->root_is_file) {
		fd = fd_reopen(s, s->root_fd, O_PATH);
		if (fd < 0)
			return fd;
	} else {
		fd = openat(s->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	ret = fd_attr(s, fd, &rep->mount.attr);
	if (ret == 0 && (rep->mount.attr.mode & S_IFMT) != (s->root_is_file ? S_IFREG : S_IFDIR))
		ret = -EIO;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	h = node_add(s, fd, rep->mount.attr.mode);
	if (h < 0)
		return (int)h;
	rep->mount.root = (uint64_t)h;
	rep->mount.flags = s->readonly ? GOFER_MOUNT_READONLY : 0;
	return 0;
}

static int do_walk(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *dir = node_get(s, req->walk.dir);
	uint32_t n = 0;
	int cur, ret = 0;

	if (!dir)
		return -EBADF;
	if (!S_ISDIR(dir->type))
		return -ENOTDIR;
	/* The table may move as nodes are added: keep the FD, not the node. */
	cur = dir->fd;
	rep->walk.flags = 0;
	for (uint32_t i = 0; i < req->walk.n; i++) {
		struct gofer_walk_entry *e = &rep->walk.entries[n];
		char name[GOFER_NAME_MAX + 1];
		int64_t h;
		int fd;

		memcpy(name, req->walk.names[i].name, req->walk.names[i].len);
		name[req->walk.names[i].len] = '\0';
		ret = ns_may(s, cur, NS_X);
		if (ret < 0)
			goto fail;
		/* One component, relative to the directory reached, never following a symlink. */
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT) {
				rep->walk.flags = GOFER_WALK_ENOENT;
				break;
			}
			ret = -errno;
			goto fail;
		}
		ret = fd_attr(s, fd, &e->attr);
		if (ret < 0) {
			close(fd);
			goto fail;
		}
		h = node_add(s, fd, e->attr.mode);
		if (h < 0) {
			ret = (int)h;
			goto fail;
		}
		e->handle = (uint64_t)h;
		n++;
		if (S_ISLNK(e->attr.mode))
			break; /* the sentry resolves symlinks itself */
		if (!S_ISDIR(e->attr.mode) && i + 1 < req->walk.n) {
			ret = -ENOTDIR;
			goto fail;
		}
		cur = fd;
	}
	rep->walk.n = n;
	return 0;

fail:
	/* All or nothing: the sentry learns of no handle from a failed walk. */
	for (uint32_t i = 0; i < n; i++)
		node_release(s, node_get(s, rep->walk.entries[i].handle));
	return ret;
}

/* WALK without handles: one O_PATH FD at a time, closed as soon as the next is open. */
static int do_walkstat(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	int err = 0;
	const struct gofer_node *dir = dir_get(s, req->walk.dir, &err);
	int cur = -1, ret = 0;
	uint32_t n = 0;

	if (!dir)
		return err;
	rep->walkstat.flags = 0;
	for (uint32_t i = 0; i < req->walk.n; i++) {
		struct gofer_attr *a = &rep->walkstat.attrs[n];
		char name[GOFER_NAME_MAX + 1];
		int fd;

		ret = ns_may(s, cur >= 0 ? cur : dir->fd, NS_X);
		if (ret < 0)
			break;
		fd = openat(cur >= 0 ? cur : dir->fd, name_cstr(name, &req->walk.names[i]),
			    O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT) {
				rep->walkstat.flags = GOFER_WALK_ENOENT;
				break;
			}
			ret = -errno;
			break;
		}
		if (cur >= 0)
			close(cur);
		cur = fd;
		ret = fd_attr(s, fd, a);
		if (ret < 0)
			break;
		n++;
		if (S_ISLNK(a->mode))
			break;
		if (!S_ISDIR(a->mode) && i + 1 < req->walk.n) {
			ret = -ENOTDIR;
			break;
		}
	}
	if (cur >= 0)
		close(cur);
	rep->walkstat.n = n;
	return ret;
}

static int do_stat(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *node = node_get(s, req->node.handle);

	if (!node)
		return -EBADF;
	return fd_attr(s, node->fd, &rep->stat);
}

static int do_open(struct gofer_server *s, const struct gofer_req *req, int *out_fd)
{
	const struct gofer_node *node = node_get(s, req->open.handle);
	uint32_t flags = req->open.flags;
	int acc = (int)(flags & O_ACCMODE);
	int host, fd;

	if (!node)
		return -EBADF;
	if (S_ISLNK(node->type))
		return -ELOOP;
	/* Devices, FIFOs and sockets are not served: opening them could block the gofer or reach
	 * host devices. The sentry provides its own. */
	if (!S_ISREG(node->type) && !S_ISDIR(node->type))
		return -EPERM;
	if ((flags & O_DIRECTORY) && !S_ISDIR(node->type))
		return -ENOTDIR;
	/* As Linux: O_TRUNC asks for write access, and a directory is never writable. */
	if (S_ISDIR(node->type) && (acc != O_RDONLY || (flags & O_TRUNC)))
		return -EISDIR;
	if (s->readonly && (acc != O_RDONLY || (flags & O_TRUNC)))
		return -EROFS;
	fd = ns_may(s, node->fd,
		    (acc != O_WRONLY ? NS_R : 0) |
			    (acc != O_RDONLY || (flags & O_TRUNC) ? NS_W : 0));
	if (fd < 0)
		return fd;
	host = (int)(flags & (O_ACCMODE | O_TRUNC | O_APPEND | O_NONBLOCK | O_DSYNC | O_SYNC |
			      O_DIRECT | O_DIRECTORY));
	fd = node_reopen(s, node, host | O_NOCTTY);
	if (fd < 0)
		return fd;
	*out_fd = fd;
	return 0;
}

static int do_readlink(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *node = node_get(s, req->node.handle);
	char *buf = (char *)s->scratch;
	ssize_t n;

	if (!node)
		return -EBADF;
	if (!S_ISLNK(node->type))
		return -EINVAL;
	n = readlinkat(node->fd, "", buf, GOFER_PATH_MAX + 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EIO;
	if ((size_t)n > GOFER_PATH_MAX)
		return -ENAMETOOLONG;
	rep->readlink.target = buf;
	rep->readlink.len = (uint16_t)n;
	return 0;
}

/*
 * The attributes (and, when asked, a handle of a directory) of the entry name in dirfd, for
 * GETDENTSPLUS: e->flags says whether there are attributes (a name removed since it was listed,
 * or one that cannot be stat'ed, has none; it is still listed). Only lstat-like calls relative
 * to dirfd, of a single component (the host's own dirent name), never following a symlink.
 */
static void plus_fill(struct gofer_server *s, int dirfd, const char *name, bool handles, bool attrs,
		      struct gofer_dirent_plus *e)
{
	struct stat st;
	int64_t h;
	int fd;

	e->handle = 0;
	e->flags = 0;
	memset(&e->attr, 0, sizeof(e->attr));
	if (!attrs)
		return; /* names only (ns_may: no search permission) */
	if (handles && e->d.type == DT_DIR) {
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			if (fd_attr(s, fd, &e->attr) == 0 && S_ISDIR(e->attr.mode)) {
				e->flags = GOFER_DIRENT_ATTR;
				h = node_add(s, fd, S_IFDIR); /* closes fd on failure */
				if (h > 0)
					e->handle = (uint64_t)h;
				return;
			}
			close(fd);
			memset(&e->attr, 0, sizeof(e->attr));
		}
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	attr_from_stat(s, &e->attr, &st);
	e->flags = GOFER_DIRENT_ATTR;
}

/* Releases the handles of the n GETDENTSPLUS entries encoded at raw (a reply not sent). */
static void plus_release(struct gofer_server *s, const uint8_t *raw, size_t size, uint32_t n)
{
	struct gofer_dirent_plus e;
	size_t off = 0;

	for (uint32_t i = 0; i < n; i++) {
		int used = gofer_dirent_plus_decode(raw + off, size - off, &e);

		if (used < 0)
			return;
		off += (size_t)used;
		if (e.handle && node_get(s, e.handle))
			node_release(s, node_get(s, e.handle));
	}
}

/* GETDENTS, and GETDENTSPLUS (plus: each entry with its attributes, and maybe a handle). */
static int do_getdents(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep,
		       bool plus)
{
	struct gofer_node *node = node_get(s, req->getdents.handle);
	size_t budget = MIN((size_t)req->getdents.max, (size_t)GOFER_GETDENTS_MAX);
	bool handles = plus && (req->getdents.flags & GOFER_GETDENTS_DIR_HANDLES);
	size_t used = 0;
	uint32_t count = 0;
	bool full = false, eof = false, nosearch = false;
	int dirfd;

	if (!node)
		return -EBADF;
	if (!S_ISDIR(node->type))
		return -ENOTDIR;
	if (node->dirfd < 0) {
		/* One open directory per handle; its offset is set from the cookie each time. */
		int fd = ns_may(s, node->fd, NS_R);

		if (fd < 0)
			return fd;
		fd = node_reopen(s, node, O_RDONLY | O_DIRECTORY);

		if (fd < 0)
			return fd;
		node->dirfd = fd;
	}
	/*
	 * With owner mappings, the children's attributes and handles need search permission on
	 * the directory (ns_may): without it GETDENTSPLUS gives names only, as getdents would.
	 */
	if (plus && ns_may(s, node->fd, NS_X) < 0)
		nosearch = true;
	/* GETDENTSPLUS adds nodes, which may move the table: keep the FD, not the node. */
	dirfd = node->dirfd;
	node = NULL;
	if (lseek(dirfd, req->getdents.cookie, SEEK_SET) < 0)
		return -errno;
	while (!full) {
		ssize_t nread = getdents64(dirfd, s->dents, sizeof(s->dents));
		size_t off = 0;

		if (nread < 0) {
			if (count)
				break; /* what was read is progress (and no end is claimed) */
			return -errno;
		}
		if (nread == 0) {
			eof = true; /* the host said so: nothing follows the last entry */
			break;
		}
		while (off + offsetof(struct linux_dirent64, d_name) < (size_t)nread) {
			const struct linux_dirent64 *d = (const void *)(s->dents + off);
			size_t maxlen =
				(size_t)nread - off - offsetof(struct linux_dirent64, d_name);
			struct gofer_dirent_plus ge;
			size_t need;
			int len;

			if (d->d_reclen == 0 || d->d_reclen > (size_t)nread - off) {
				if (plus)
					plus_release(s, s->scratch, used, count);
				return -EIO;
			}
			off += d->d_reclen;
			ge.d.name = d->d_name;
			ge.d.namelen =
				(uint16_t)strnlen(d->d_name, MIN(maxlen, GOFER_NAME_MAX + 1));
			/* "." and ".." are the sentry's to make up; skip anything unnamable. */
			if (gofer_name_check(ge.d.name, ge.d.namelen) < 0 || ge.d.namelen >= maxlen)
				continue;
			ge.d.ino = d->d_ino;
			ge.d.next = d->d_off;
			ge.d.type = d->d_type;
			need = plus ? gofer_dirent_plus_size(ge.d.namelen) :
				      gofer_dirent_size(ge.d.namelen);
			if (used + need > budget) {
				full = true;
				break;
			}
			if (!plus) {
				len = gofer_dirent_encode(&ge.d, s->scratch + used, budget - used);
			} else {
				plus_fill(s, dirfd, d->d_name, handles, !nosearch, &ge);
				/* The type of what was stat'ed (a name replaced since, DT_UNKNOWN). */
				if (ge.flags & GOFER_DIRENT_ATTR)
					ge.d.type = (uint8_t)((ge.attr.mode & S_IFMT) >> 12);
				len = gofer_dirent_plus_encode(&ge, s->scratch + used,
							       budget - used);
				if (len < 0 && ge.handle)
					node_release(s, node_get(s, ge.handle));
			}
			if (len < 0)
				continue; /* a d_type or attribute this protocol does not know */
			used += (size_t)len;
			count++;
		}
	}
	/* As getdents64(2): a buffer too small for the next entry is EINVAL. */
	if (count == 0 && full)
		return -EINVAL;
	rep->getdents.n = count;
	rep->getdents.flags = eof ? GOFER_GETDENTS_EOF : 0;
	rep->getdents.raw = s->scratch;
	rep->getdents.size = used;
	return 0;
}

static int do_statfs(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *node = node_get(s, req->node.handle);
	struct statfs st;

	if (!node)
		return -EBADF;
	if (fstatfs(node->fd, &st) < 0)
		return -errno;
	rep->statfs = (struct gofer_statfs){
		.type = (uint64_t)st.f_type,
		.bsize = (uint64_t)st.f_bsize,
		.blocks = st.f_blocks,
		.bfree = st.f_bfree,
		.bavail = st.f_bavail,
		.files = st.f_files,
		.ffree = st.f_ffree,
		.namelen = (uint64_t)st.f_namelen,
		.frsize = (uint64_t)st.f_frsize,
		.flags = (uint64_t)st.f_flags,
	};
	return 0;
}

static int do_setstat(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *node = node_get(s, req->setstat.handle);
	const struct gofer_setstat *st = &req->setstat.st;

	if (!node)
		return -EBADF;
	/* Validate everything before changing anything. */
	if (st->mask & GOFER_SETSTAT_SIZE) {
		if (S_ISDIR(node->type))
			return -EISDIR;
		/* Opening a FIFO or a device to truncate it could block or reach the host. */
		if (!S_ISREG(node->type))
			return -EINVAL;
	}
	if ((st->mask & GOFER_SETSTAT_MODE) && S_ISLNK(node->type))
		return -EOPNOTSUPP;
	/* Owner, mode and times need the owner; the size write access (ns_may). */
	if (st->mask & (GOFER_SETSTAT_UID | GOFER_SETSTAT_GID | GOFER_SETSTAT_MODE |
			GOFER_SETSTAT_ATIME | GOFER_SETSTAT_MTIME)) {
		int ret = ns_may_own(s, node->fd);

		if (ret < 0)
			return ret;
	}
	if (st->mask & GOFER_SETSTAT_SIZE) {
		int ret = ns_may(s, node->fd, NS_W);

		if (ret < 0)
			return ret;
	}

	if (st->mask & GOFER_SETSTAT_SIZE) {
		int fd = node_reopen(s, node, O_WRONLY | O_NONBLOCK | O_NOCTTY);
		int ret = 0;

		if (fd < 0)
			return fd;
		if (ftruncate(fd, st->size) < 0)
			ret = -errno;
		close(fd);
		if (ret < 0)
			return ret;
	}
	/* Owner before mode: chown clears set-id bits, which a mode given with it sets again. */
	if (st->mask & (GOFER_SETSTAT_UID | GOFER_SETSTAT_GID)) {
		uint32_t huid = (uint32_t)-1, hgid = (uint32_t)-1;

		/* The sentry names guest owners; only mapped ones reach the host (chown's EINVAL). */
		if ((st->mask & GOFER_SETSTAT_UID) &&
		    !idmap_to_outside(&s->uid_map, st->uid, &huid))
			return -EINVAL;
		if ((st->mask & GOFER_SETSTAT_GID) &&
		    !idmap_to_outside(&s->gid_map, st->gid, &hgid))
			return -EINVAL;
		uid_t uid = (uid_t)huid;
		gid_t gid = (gid_t)hgid;

		if (fchownat(node->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	if (st->mask & GOFER_SETSTAT_MODE) {
		int ret = fd_chmod(s, node->fd, st->mode);

		if (ret < 0)
			return ret;
	}
	/* Times last: truncation and the others change mtime or ctime. */
	if (st->mask & (GOFER_SETSTAT_ATIME | GOFER_SETSTAT_MTIME)) {
		struct timespec ts[2] = {
			{ .tv_sec = st->atime_sec, .tv_nsec = st->atime_nsec },
			{ .tv_sec = st->mtime_sec, .tv_nsec = st->mtime_nsec },
		};

		if (!(st->mask & GOFER_SETSTAT_ATIME))
			ts[0] = (struct timespec){ .tv_nsec = UTIME_OMIT };
		if (!(st->mask & GOFER_SETSTAT_MTIME))
			ts[1] = (struct timespec){ .tv_nsec = UTIME_OMIT };
		if (utimensat(node->fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	return fd_attr(s, node->fd, &rep->stat);
}

/*
 * Gives the new node at pathfd (its O_PATH FD) the owner and mode asked for, then a handle.
 * Takes pathfd. The mode is set again only when the host's differs (umask, a setgid parent).
 */
static int new_node_finish(struct gofer_server *s, int pathfd, uint32_t uid, uint32_t gid,
			   uint32_t mode, uint32_t want_type, struct gofer_rep *rep)
{
	struct gofer_attr *a = &rep->node.attr;
	int64_t h;
	int ret;

	/*
	 * The owner the sentry asks for is a guest id: the host gets its mapped id, and an id the
	 * mapping does not cover makes nothing (Linux's EOVERFLOW for an unmapped fsuid).
	 */
	if (!idmap_to_outside(&s->uid_map, uid, &uid) ||
	    !idmap_to_outside(&s->gid_map, gid, &gid)) {
		ret = -EOVERFLOW;
		goto out_close;
	}
	if (fchownat(pathfd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		ret = -errno;
		goto out_close;
	}
	ret = fd_attr(s, pathfd, a);
	if (ret < 0)
		goto out_close;
	/* Something else than what was made is there now (the host raced us): touch nothing. */
	if ((a->mode & S_IFMT) != want_type) {
		ret = -EIO;
		goto out_close;
	}
	if (!S_ISLNK(a->mode) && (a->mode & 07777) != (mode & 07777)) {
		ret = fd_chmod(s, pathfd, mode & 07777);
		if (ret == 0)
			ret = fd_attr(s, pathfd, a);
		if (ret < 0)
			goto out_close;
	}
	h = node_add(s, pathfd, a->mode);
	if (h < 0)
		return (int)h;
	rep->node.handle = (uint64_t)h;
	return 0;

out_close:
	close(pathfd);
	return ret;
}

/* CREATE, MKDIR, MKNOD, SYMLINK. */
static int do_mk(struct gofer_server *s, uint16_t type, const struct gofer_req *req,
		 struct gofer_rep *rep, int *out_fd)
{
	int err = 0;
	const struct gofer_node *dir = dir_get(s, req->mk.dir, &err);
	char name[GOFER_NAME_MAX + 1], target[GOFER_PATH_MAX + 1];
	uint32_t want = S_IFREG;
	int dirfd, fd = -1, pathfd, ret;

	if (!dir)
		return err;
	/* The table may move as the node is added: keep the FD, not the node. */
	dirfd = dir->fd;
	ret = ns_may(s, dirfd, NS_W | NS_X);
	if (ret < 0)
		return ret;
	name_cstr(name, &req->mk.name);
	switch (type) {
	case GOFER_MSG_CREATE: {
		int flags = (int)(req->mk.flags & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC |
						   O_SYNC | O_DIRECT));

		/* Exclusive and not following: a symlink (even dangling) at name is EEXIST. */
		fd = openat(dirfd, name,
			    flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			    (mode_t)(req->mk.mode & 07777));
		if (fd < 0)
			return -errno;
		pathfd = fd_reopen(s, fd, O_PATH);
		break;
	}
	case GOFER_MSG_MKDIR:
		want = S_IFDIR;
		if (mkdirat(dirfd, name, (mode_t)(req->mk.mode & 07777)) < 0)
			return -errno;
		pathfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		break;
	case GOFER_MSG_MKNOD:
		want = req->mk.mode & S_IFMT;
		/* FIFOs and sockets only: a device node would open host devices to the guest. */
		if (want != S_IFIFO && want != S_IFSOCK)
			return -EPERM;
		if (mknodat(dirfd, name, (mode_t)req->mk.mode, 0) < 0)
			return -errno;
		pathfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		break;
	default: /* GOFER_MSG_SYMLINK */
		want = S_IFLNK;
		memcpy(target, req->mk.target.name, req->mk.target.len);
		target[req->mk.target.len] = '\0';
		if (symlinkat(target, dirfd, name) < 0)
			return -errno;
		pathfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		break;
	}
	if (pathfd < 0)
		ret = pathfd == -1 ? -errno : pathfd;
	else
		ret = new_node_finish(s, pathfd, req->mk.uid, req->mk.gid, req->mk.mode, want, rep);
	if (ret < 0) {
		/* Nothing half-made stays: no node the sentry has no handle of, with root's ids. */
		if (fd >= 0)
			close(fd);
		if (ret != -EIO)
			unlinkat(dirfd, name, want == S_IFDIR ? AT_REMOVEDIR : 0);
		return ret;
	}
	if (out_fd)
		*out_fd = fd;
	else if (fd >= 0)
		close(fd);
	return 0;
}

static int do_link(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	int err = 0;
	const struct gofer_node *olddir = dir_get(s, req->link.olddir, &err);
	const struct gofer_node *newdir = olddir ? dir_get(s, req->link.newdir, &err) : NULL;
	char oldname[GOFER_NAME_MAX + 1], newname[GOFER_NAME_MAX + 1];
	struct gofer_attr *a = &rep->node.attr;
	int newfd, pathfd, ret;
	int64_t h;

	if (!newdir)
		return err;
	newfd = newdir->fd;
	ret = ns_may(s, newfd, NS_W | NS_X);
	if (ret < 0)
		return ret;
	/* Flags 0: a symlink oldname is linked itself, never followed. */
	if (linkat(olddir->fd, name_cstr(oldname, &req->link.oldname), newfd,
		   name_cstr(newname, &req->link.newname), 0) < 0)
		return -errno;
	pathfd = openat(newfd, newname, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pathfd < 0)
		return -errno;
	ret = fd_attr(s, pathfd, a);
	if (ret == 0 && S_ISDIR(a->mode))
		ret = -EIO; /* the host raced us */
	if (ret < 0) {
		close(pathfd);
		return ret;
	}
	h = node_add(s, pathfd, a->mode);
	if (h < 0)
		return (int)h;
	rep->node.handle = (uint64_t)h;
	return 0;
}

static int do_unlink(struct gofer_server *s, const struct gofer_req *req)
{
	int err = 0;
	const struct gofer_node *dir = dir_get(s, req->unlink.dir, &err);
	char name[GOFER_NAME_MAX + 1];

	if (!dir)
		return err;
	err = ns_may(s, dir->fd, NS_W | NS_X);
	if (err == 0)
		err = ns_may_delete(s, dir->fd, name_cstr(name, &req->unlink.name));
	if (err < 0)
		return err;
	if (unlinkat(dir->fd, name, (int)req->unlink.flags) < 0)
		return -errno;
	return 0;
}

static int do_rename(struct gofer_server *s, const struct gofer_req *req)
{
	int err = 0;
	const struct gofer_node *olddir = dir_get(s, req->link.olddir, &err);
	const struct gofer_node *newdir = olddir ? dir_get(s, req->link.newdir, &err) : NULL;
	char oldname[GOFER_NAME_MAX + 1], newname[GOFER_NAME_MAX + 1];

	if (!newdir)
		return err;
	err = ns_may(s, olddir->fd, NS_W | NS_X);
	if (err == 0)
		err = ns_may(s, newdir->fd, NS_W | NS_X);
	if (err == 0)
		err = ns_may_delete(s, olddir->fd, name_cstr(oldname, &req->link.oldname));
	if (err == 0)
		err = ns_may_delete(s, newdir->fd, name_cstr(newname, &req->link.newname));
	if (err < 0)
		return err;
	/*
	 * Both ends are names in directories of the tree: nothing can be moved out of it. The
	 * system call itself: glibc's renameat2() makes renameat for flags 0, which the seccomp
	 * filter does not allow.
	 */
	if (syscall(SYS_renameat2, olddir->fd, name_cstr(oldname, &req->link.oldname), newdir->fd,
		    name_cstr(newname, &req->link.newname), req->link.flags) < 0)
		return -errno;
	return 0;
}

/* An FD of a regular file or directory node to read it (fsync, xattrs), or -errno. */
static int node_open_rdonly(struct gofer_server *s, const struct gofer_node *node)
{
	if (S_ISDIR(node->type))
		return node_reopen(s, node, O_RDONLY | O_DIRECTORY);
	if (S_ISREG(node->type))
		return node_reopen(s, node, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	return -EINVAL;
}

static int do_fsync(struct gofer_server *s, const struct gofer_req *req)
{
	const struct gofer_node *node = node_get(s, req->fsync.handle);
	int fd, ret = 0;

	if (!node)
		return -EBADF;
	fd = node_open_rdonly(s, node);
	if (fd < 0)
		return fd;
	if ((req->fsync.flags & GOFER_FSYNC_DATASYNC) ? fdatasync(fd) : fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* What the gofer serves of an xattr name (README.md, "Extended attributes"). */
enum xattr_rule {
	XATTR_SERVED, /* user.*: read and written */
	XATTR_READONLY, /* security.capability: read, never written */
	XATTR_HIDDEN, /* other names of known namespaces: absent */
};

/* Returns the rule for name (NUL-terminated), -EOPNOTSUPP or -EINVAL (empty suffix). */
static int xattr_classify(const char *name)
{
	static const char *const known[] = { "user.", "trusted.", "security.", "system." };

	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		size_t len = strlen(known[i]);

		if (strncmp(name, known[i], len) != 0)
			continue;
		if (name[len] == '\0')
			return -EINVAL;
		if (i == 0)
			return XATTR_SERVED;
		if (strcmp(name, "security.capability") == 0)
			return XATTR_READONLY;
		return XATTR_HIDDEN;
	}
	return -EOPNOTSUPP;
}

static int do_getxattr(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *node = node_get(s, req->xattr.handle);
	char name[GOFER_XATTR_NAME_MAX + 1];
	uint32_t size = req->xattr.size;
	ssize_t n;
	int fd, rule;

	if (!node)
		return -EBADF;
	rule = xattr_classify(name_cstr(name, &req->xattr.name));
	if (rule < 0)
		return rule;
	/* Linux keeps user.* to regular files and directories; so does the gofer for all. */
	if (rule == XATTR_HIDDEN || (!S_ISREG(node->type) && !S_ISDIR(node->type)))
		return -ENODATA;
	fd = node_open_rdonly(s, node);
	if (fd < 0)
		return fd;
	n = fgetxattr(fd, name, size ? s->scratch : NULL, size);
	if (n < 0 && errno == ERANGE && size == GOFER_XATTR_SIZE_MAX) {
		/* Too long for any message, rather than for the caller's buffer. */
		n = fgetxattr(fd, name, NULL, 0);
		if (n > (ssize_t)GOFER_XATTR_SIZE_MAX)
			errno = E2BIG;
		else
			errno = ERANGE;
		n = -1;
	}
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	rep->xattr.len = (uint32_t)n;
	rep->xattr.data = size ? s->scratch : NULL;
	return 0;
}

static int do_listxattr(struct gofer_server *s, const struct gofer_req *req, struct gofer_rep *rep)
{
	const struct gofer_node *node = node_get(s, req->xattr.handle);
	uint32_t size = req->xattr.size;
	size_t used = 0;
	ssize_t n;
	int fd;

	if (!node)
		return -EBADF;
	rep->xattr.len = 0;
	rep->xattr.data = NULL;
	if (!S_ISREG(node->type) && !S_ISDIR(node->type))
		return 0;
	fd = node_open_rdonly(s, node);
	if (fd < 0)
		return fd;
	n = flistxattr(fd, s->xlist, sizeof(s->xlist));
	if (n < 0)
		n = errno == ERANGE ? -E2BIG : -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	/* Keep the served names; the list is NUL-terminated names, the last one included. */
	for (size_t off = 0; off < (size_t)n;) {
		const char *nm = s->xlist + off;
		size_t len = strnlen(nm, (size_t)n - off);

		off += len + 1;
		if (len == 0 || len > GOFER_XATTR_NAME_MAX || off > (size_t)n)
			continue;
		if (xattr_classify(nm) < XATTR_SERVED || xattr_classify(nm) == XATTR_HIDDEN)
			continue;
		if (used + len + 1 > GOFER_XATTR_SIZE_MAX)
			return -E2BIG;
		memcpy(s->scratch + used, nm, len + 1);
		used += len + 1;
	}
	if (size && used > size)
		return -ERANGE;
	rep->xattr.len = (uint32_t)used;
	rep->xattr.data = size ? s->scratch : NULL;
	return 0;
}

/* SETXATTR, REMOVEXATTR. */
static int do_xattr_write(struct gofer_server *s, uint16_t type, const struct gofer_req *req)
{
	const struct gofer_node *node = node_get(s, req->xattr.handle);
	char name[GOFER_XATTR_NAME_MAX + 1];
	int fd, rule, ret = 0;

	if (!node)
		return -EBADF;
	rule = xattr_classify(name_cstr(name, &req->xattr.name));
	if (rule < 0)
		return rule;
	if (rule != XATTR_SERVED)
		return -EPERM;
	if (!S_ISREG(node->type) && !S_ISDIR(node->type))
		return type == GOFER_MSG_SETXATTR ? -EPERM : -ENODATA;
	/* The owner, or write access (user.*), as a guest process could have (ns_may). */
	if (ns_may_own(s, node->fd) < 0) {
		ret = ns_may(s, node->fd, NS_W);
		if (ret < 0)
			return -EPERM;
	}
	fd = node_open_rdonly(s, node);
	if (fd < 0)
		return fd;
	if (type == GOFER_MSG_SETXATTR)
		ret = fsetxattr(fd, name, req->xattr.value, req->xattr.size, (int)req->xattr.flags);
	else
		ret = fremovexattr(fd, name);
	if (ret < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* The messages that change the tree: EROFS on a read-only gofer, before anything is looked at. */
static bool msg_writes(uint16_t type)
{
	switch (type) {
	case GOFER_MSG_SETSTAT:
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
	case GOFER_MSG_LINK:
	case GOFER_MSG_UNLINK:
	case GOFER_MSG_RENAME:
	case GOFER_MSG_SETXATTR:
	case GOFER_MSG_REMOVEXATTR:
		return true;
	default:
		return false;
	}
}

static int do_close(struct gofer_server *s, const struct gofer_req *req)
{
	int ret = 0;

	/* Close every valid handle; report EBADF if any was not. */
	for (uint32_t i = 0; i < req->close.n; i++) {
		struct gofer_node *node = node_get(s, req->close.handles[i]);

		if (node)
			node_release(s, node);
		else
			ret = -EBADF;
	}
	return ret;
}

size_t gofer_server_handle(struct gofer_server *s, const void *req, size_t len, void *rep, int *fd)
{
	struct gofer_hdr h;
	ssize_t n;
	int ret;

	*fd = -1;
	if (gofer_hdr_decode(req, len, &h) < 0)
		return gofer_rep_error(rep, 0, 0, EINVAL);
	ret = gofer_req_decode(req, len, &s->req);
	if (ret < 0)
		return gofer_rep_error(rep, h.type, h.tag, -ret);
	if (s->readonly && msg_writes(h.type))
		return gofer_rep_error(rep, h.type, h.tag, EROFS);
	memset(&s->rep, 0, sizeof(s->rep));
	s->rep.type = h.type;
	s->rep.tag = h.tag;
	switch (h.type) {
	case GOFER_MSG_MOUNT:
		ret = do_mount(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_WALK:
		ret = do_walk(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_STAT:
		ret = do_stat(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_OPEN:
		ret = do_open(s, &s->req, fd);
		break;
	case GOFER_MSG_READLINK:
		ret = do_readlink(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_GETDENTS:
		ret = do_getdents(s, &s->req, &s->rep, false);
		break;
	case GOFER_MSG_GETDENTSPLUS:
		ret = do_getdents(s, &s->req, &s->rep, true);
		break;
	case GOFER_MSG_STATFS:
		ret = do_statfs(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_CLOSE:
		ret = do_close(s, &s->req);
		break;
	case GOFER_MSG_WALKSTAT:
		ret = do_walkstat(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_SETSTAT:
		ret = do_setstat(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_CREATE:
		ret = do_mk(s, h.type, &s->req, &s->rep, fd);
		break;
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
		ret = do_mk(s, h.type, &s->req, &s->rep, NULL);
		break;
	case GOFER_MSG_LINK:
		ret = do_link(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_UNLINK:
		ret = do_unlink(s, &s->req);
		break;
	case GOFER_MSG_RENAME:
		ret = do_rename(s, &s->req);
		break;
	case GOFER_MSG_FSYNC:
		ret = do_fsync(s, &s->req);
		break;
	case GOFER_MSG_GETXATTR:
		ret = do_getxattr(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_LISTXATTR:
		ret = do_listxattr(s, &s->req, &s->rep);
		break;
	case GOFER_MSG_SETXATTR:
	case GOFER_MSG_REMOVEXATTR:
		ret = do_xattr_write(s, h.type, &s->req);
		break;
	default:
		ret = -ENOSYS; /* gofer_req_decode let only known types through */
		break;
	}
	if (ret < 0)
		return gofer_rep_error(rep, h.type, h.tag, -ret);
	n = gofer_rep_encode(&s->rep, rep, GOFER_MSG_MAX);
	if (n < 0) {
		/* Only an attribute this protocol cannot carry gets here. */
		log_warn("cannot encode the reply to message type %u: %s", h.type,
			 strerror((int)-n));
		if (*fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		return gofer_rep_error(rep, h.type, h.tag, EIO);
	}
	return (size_t)n;
}

/* Closes the FDs of the SCM_RIGHTS messages in msg; returns how many there were. */
static int close_passed_fds(struct msghdr *msg)
{
	int count = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		size_t nfds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			close(fd);
			count++;
		}
	}
	return count;
}

static int send_reply(int sock, const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int gofer_server_serve(struct gofer_server *s, int sock)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(16 * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = s->in, .iov_len = sizeof(s->in) };
		struct msghdr msg = { .msg_iov = &iov,
				      .msg_iovlen = 1,
				      .msg_control = ctl.buf,
				      .msg_controllen = sizeof(ctl.buf) };
		struct gofer_hdr h;
		size_t replen;
		ssize_t n;
		int fd = -1, ret;

		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET)
				return 0;
			return -errno;
		}
		if (n == 0)
			return 0;
		if (msg.msg_flags & MSG_TRUNC) {
			/* Longer than any message: its length cannot match its header. */
			close_passed_fds(&msg);
			replen = gofer_rep_error(s->out, 0, 0, EINVAL);
		} else if (close_passed_fds(&msg) > 0 || (msg.msg_flags & MSG_CTRUNC)) {
			/* No request carries FDs. */
			if (gofer_hdr_decode(s->in, (size_t)n, &h) < 0)
				h = (struct gofer_hdr){ 0 };
			replen = gofer_rep_error(s->out, h.type, h.tag, EINVAL);
		} else {
			replen = gofer_server_handle(s, s->in, (size_t)n, s->out, &fd);
		}
		ret = send_reply(sock, s->out, replen, fd);
		if (fd >= 0)
			close(fd);
		if (ret == -EPIPE || ret == -ECONNRESET)
			return 0;
		if (ret < 0)
			return ret;
	}
}

int gofer_server_create(int root_fd, int proc_fd, const struct gofer_server_config *cfg,
			struct gofer_server **out)
{
	struct gofer_server *s;
	struct stat st = { 0 };

	if (root_fd < 0 || proc_fd < 0) {
		if (root_fd >= 0)
			close(root_fd);
		if (proc_fd >= 0)
			close(proc_fd);
		return -EBADF;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(root_fd);
		close(proc_fd);
		return -ENOMEM;
	}
	/* The root is a directory, or a regular file served alone (a file bind mount). */
	if (fstat(root_fd, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
		int ret = st.st_mode ? -ENOTDIR : -errno;

		close(root_fd);
		close(proc_fd);
		free(s);
		return ret;
	}
	s->root_fd = root_fd;
	s->root_is_file = S_ISREG(st.st_mode);
	s->proc_fd = proc_fd;
	s->readonly = cfg && cfg->readonly;
	s->max_handles = cfg && cfg->max_handles ? cfg->max_handles : GOFER_MAX_HANDLES;
	if (cfg && cfg->uid_map)
		s->uid_map = *cfg->uid_map;
	if (cfg && cfg->gid_map)
		s->gid_map = *cfg->gid_map;
	*out = s;
	return 0;
}

void gofer_server_destroy(struct gofer_server *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nslots; i++) {
		if (s->nodes[i].fd >= 0)
			node_release(s, &s->nodes[i]);
	}
	free(s->nodes);
	close(s->root_fd);
	close(s->proc_fd);
	free(s);
}

uint32_t gofer_server_live_handles(const struct gofer_server *s)
{
	return s->live;
}
