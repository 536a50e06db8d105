/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Encoding, decoding and validation of gofer messages (gofer/proto.h). Pure functions: no
 * allocation, no system calls. Decoders read through a bounds-checked cursor, so a hostile
 * length or count can make a message invalid but never make them read past the packet.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "gofer/proto.h"

/* A write cursor: overflow is sticky and checked once at the end. */
struct wcur {
	uint8_t *p;
	size_t len, cap;
	bool overflow;
};

/* A read cursor: bad is sticky; reads past the end give zeros and set it. */
struct rcur {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static uint8_t *w_take(struct wcur *w, size_t n)
{
	uint8_t *r;

	if (w->overflow || n > w->cap - w->len) {
		w->overflow = true;
		return NULL;
	}
	r = w->p + w->len;
	w->len += n;
	return r;
}

static void w_u8(struct wcur *w, uint8_t v)
{
	uint8_t *p = w_take(w, 1);

	if (p)
		*p = v;
}

static void w_u16(struct wcur *w, uint16_t v)
{
	uint8_t *p = w_take(w, 2);

	if (p)
		gofer_put_u16(p, v);
}

static void w_u32(struct wcur *w, uint32_t v)
{
	uint8_t *p = w_take(w, 4);

	if (p)
		gofer_put_u32(p, v);
}

static void w_u64(struct wcur *w, uint64_t v)
{
	uint8_t *p = w_take(w, 8);

	if (p)
		gofer_put_u64(p, v);
}

static void w_bytes(struct wcur *w, const void *src, size_t n)
{
	uint8_t *p = w_take(w, n);

	if (p && n)
		memcpy(p, src, n);
}

static const uint8_t *r_take(struct rcur *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static uint8_t r_u8(struct rcur *r)
{
	const uint8_t *p = r_take(r, 1);

	return p ? *p : 0;
}

static uint16_t r_u16(struct rcur *r)
{
	const uint8_t *p = r_take(r, 2);

	return p ? gofer_get_u16(p) : 0;
}

static uint32_t r_u32(struct rcur *r)
{
	const uint8_t *p = r_take(r, 4);

	return p ? gofer_get_u32(p) : 0;
}

static uint64_t r_u64(struct rcur *r)
{
	const uint8_t *p = r_take(r, 8);

	return p ? gofer_get_u64(p) : 0;
}

/* Reads a padding field that must be zero. */
static void r_pad32(struct rcur *r)
{
	if (r_u32(r) != 0)
		r->bad = true;
}

GOFER_PROTO_API int gofer_name_check(const char *name, size_t len)
{
	if (!name || len == 0 || len > GOFER_NAME_MAX)
		return -EINVAL;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return -EINVAL;
	return 0;
}

GOFER_PROTO_API int gofer_xattr_name_check(const char *name, size_t len)
{
	if (!name || len == 0 || len > GOFER_XATTR_NAME_MAX || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

static bool target_valid(const char *target, size_t len)
{
	return target && len >= 1 && len <= GOFER_PATH_MAX && !memchr(target, '\0', len);
}

/* Writes a name (u16 len, bytes) after checking it with check. Returns false if invalid. */
static bool w_name(struct wcur *w, const struct gofer_name *nm,
		   int (*check)(const char *name, size_t len))
{
	if (check(nm->name, nm->len) < 0)
		return false;
	w_u16(w, nm->len);
	w_bytes(w, nm->name, nm->len);
	return true;
}

/* Reads a name and checks it with check; marks r bad if invalid. */
static void r_name(struct rcur *r, struct gofer_name *nm,
		   int (*check)(const char *name, size_t len))
{
	nm->len = r_u16(r);
	nm->name = (const char *)r_take(r, nm->len);
	if (!r->bad && check(nm->name, nm->len) < 0)
		r->bad = true;
}

static bool nsec_valid(uint32_t nsec)
{
	return nsec < 1000000000u || nsec == GOFER_UTIME_NOW || nsec == GOFER_UTIME_OMIT;
}

/* (u32)-1 means "unchanged" to chown(2): never a real owner to give. */
static bool id_valid(uint32_t id)
{
	return id != UINT32_MAX;
}

static bool setstat_valid(const struct gofer_setstat *st)
{
	if (st->mask & ~GOFER_SETSTAT_ALL)
		return false;
	if (st->mode & ~07777u || st->size < 0)
		return false;
	if (!nsec_valid(st->atime_nsec) || !nsec_valid(st->mtime_nsec))
		return false;
	if ((st->mask & GOFER_SETSTAT_UID) && !id_valid(st->uid))
		return false;
	if ((st->mask & GOFER_SETSTAT_GID) && !id_valid(st->gid))
		return false;
	return true;
}

static bool create_flags_valid(uint32_t flags)
{
	return !(flags & ~(uint32_t)GOFER_CREATE_FLAGS) && (flags & 03) != 03;
}

/* The checks on the fields of CREATE, MKDIR, MKNOD and SYMLINK but the names. */
static bool mk_valid(uint16_t type, uint32_t flags, uint32_t mode, uint32_t uid, uint32_t gid)
{
	uint32_t modemask = type == GOFER_MSG_MKNOD ? (uint32_t)(S_IFMT | 07777) : 07777u;

	if (!id_valid(uid) || !id_valid(gid))
		return false;
	if (type == GOFER_MSG_SYMLINK)
		return flags == 0 && mode == 0;
	if (mode & ~modemask)
		return false;
	return type == GOFER_MSG_CREATE ? create_flags_valid(flags) : flags == 0;
}

static bool rename_flags_valid(uint32_t flags)
{
	return flags == 0 || flags == GOFER_RENAME_NOREPLACE || flags == GOFER_RENAME_EXCHANGE;
}

/* An xattr list: NUL-terminated names, none empty. */
static bool xattr_list_valid(const uint8_t *p, size_t len)
{
	size_t start = 0;

	if (len && !p)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] != '\0')
			continue;
		if (i == start)
			return false;
		start = i + 1;
	}
	return start == len;
}

static bool attr_valid(const struct gofer_attr *a)
{
	switch (a->mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		return false;
	}
	if (a->mode & ~(uint32_t)(S_IFMT | 07777))
		return false;
	return a->atime_nsec < 1000000000u && a->mtime_nsec < 1000000000u &&
	       a->ctime_nsec < 1000000000u;
}

static void w_attr(struct wcur *w, const struct gofer_attr *a)
{
	w_u64(w, a->dev);
	w_u64(w, a->ino);
	w_u64(w, a->nlink);
	w_u32(w, a->mode);
	w_u32(w, a->uid);
	w_u32(w, a->gid);
	w_u32(w, 0);
	w_u64(w, a->rdev);
	w_u64(w, (uint64_t)a->size);
	w_u64(w, (uint64_t)a->blksize);
	w_u64(w, (uint64_t)a->blocks);
	w_u64(w, (uint64_t)a->atime_sec);
	w_u64(w, (uint64_t)a->mtime_sec);
	w_u64(w, (uint64_t)a->ctime_sec);
	w_u32(w, a->atime_nsec);
	w_u32(w, a->mtime_nsec);
	w_u32(w, a->ctime_nsec);
	w_u32(w, 0);
}

static void r_attr(struct rcur *r, struct gofer_attr *a)
{
	a->dev = r_u64(r);
	a->ino = r_u64(r);
	a->nlink = r_u64(r);
	a->mode = r_u32(r);
	a->uid = r_u32(r);
	a->gid = r_u32(r);
	r_pad32(r);
	a->rdev = r_u64(r);
	a->size = (int64_t)r_u64(r);
	a->blksize = (int64_t)r_u64(r);
	a->blocks = (int64_t)r_u64(r);
	a->atime_sec = (int64_t)r_u64(r);
	a->mtime_sec = (int64_t)r_u64(r);
	a->ctime_sec = (int64_t)r_u64(r);
	a->atime_nsec = r_u32(r);
	a->mtime_nsec = r_u32(r);
	a->ctime_nsec = r_u32(r);
	r_pad32(r);
	if (!r->bad && !attr_valid(a))
		r->bad = true;
}

static void w_statfs(struct wcur *w, const struct gofer_statfs *s)
{
	w_u64(w, s->type);
	w_u64(w, s->bsize);
	w_u64(w, s->blocks);
	w_u64(w, s->bfree);
	w_u64(w, s->bavail);
	w_u64(w, s->files);
	w_u64(w, s->ffree);
	w_u64(w, s->namelen);
	w_u64(w, s->frsize);
	w_u64(w, s->flags);
}

static void r_statfs(struct rcur *r, struct gofer_statfs *s)
{
	s->type = r_u64(r);
	s->bsize = r_u64(r);
	s->blocks = r_u64(r);
	s->bfree = r_u64(r);
	s->bavail = r_u64(r);
	s->files = r_u64(r);
	s->ffree = r_u64(r);
	s->namelen = r_u64(r);
	s->frsize = r_u64(r);
	s->flags = r_u64(r);
}

GOFER_PROTO_API void gofer_hdr_encode(void *buf, const struct gofer_hdr *h)
{
	uint8_t *p = buf;

	gofer_put_u32(p, h->len);
	gofer_put_u16(p + 4, h->type);
	gofer_put_u16(p + 6, h->flags);
	gofer_put_u32(p + 8, h->tag);
	gofer_put_u32(p + 12, h->error);
}

GOFER_PROTO_API int gofer_hdr_decode(const void *buf, size_t len, struct gofer_hdr *h)
{
	const uint8_t *p = buf;

	if (!buf || len < GOFER_HDR_SIZE || len > GOFER_MSG_MAX)
		return -EINVAL;
	h->len = gofer_get_u32(p);
	h->type = gofer_get_u16(p + 4);
	h->flags = gofer_get_u16(p + 6);
	h->tag = gofer_get_u32(p + 8);
	h->error = gofer_get_u32(p + 12);
	if (h->len != len || h->flags != 0)
		return -EINVAL;
	return 0;
}

static bool open_flags_valid(uint32_t flags)
{
	return !(flags & ~(uint32_t)GOFER_OPEN_FLAGS) && (flags & 03) != 03;
}

/* The request flags of GETDENTS (none) and GETDENTSPLUS. */
static bool getdents_flags_valid(uint16_t type, uint32_t flags)
{
	return !(flags & ~(type == GOFER_MSG_GETDENTSPLUS ? GOFER_GETDENTS_DIR_HANDLES : 0u));
}

GOFER_PROTO_API ssize_t gofer_req_encode(const struct gofer_req *req, void *buf, size_t cap)
{
	struct wcur w = { .p = buf, .len = GOFER_HDR_SIZE, .cap = cap };
	struct gofer_hdr h = { .type = req->type, .tag = req->tag };

	if (!buf || cap < GOFER_HDR_SIZE)
		return -EMSGSIZE;
	switch (req->type) {
	case GOFER_MSG_MOUNT:
		w_u32(&w, req->mount.version);
		w_u32(&w, 0);
		break;
	case GOFER_MSG_WALK:
	case GOFER_MSG_WALKSTAT:
		if (req->walk.n < 1 || req->walk.n > GOFER_WALK_MAX)
			return -EINVAL;
		w_u64(&w, req->walk.dir);
		w_u32(&w, req->walk.n);
		for (uint32_t i = 0; i < req->walk.n; i++) {
			if (!w_name(&w, &req->walk.names[i], gofer_name_check))
				return -EINVAL;
		}
		break;
	case GOFER_MSG_SETSTAT: {
		const struct gofer_setstat *st = &req->setstat.st;

		if (!setstat_valid(st))
			return -EINVAL;
		w_u64(&w, req->setstat.handle);
		w_u32(&w, st->mask);
		w_u32(&w, st->mode);
		w_u32(&w, st->uid);
		w_u32(&w, st->gid);
		w_u64(&w, (uint64_t)st->size);
		w_u64(&w, (uint64_t)st->atime_sec);
		w_u64(&w, (uint64_t)st->mtime_sec);
		w_u32(&w, st->atime_nsec);
		w_u32(&w, st->mtime_nsec);
		break;
	}
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
		if (!mk_valid(req->type, req->mk.flags, req->mk.mode, req->mk.uid, req->mk.gid))
			return -EINVAL;
		w_u64(&w, req->mk.dir);
		if (req->type == GOFER_MSG_CREATE)
			w_u32(&w, req->mk.flags);
		if (req->type != GOFER_MSG_SYMLINK)
			w_u32(&w, req->mk.mode);
		w_u32(&w, req->mk.uid);
		w_u32(&w, req->mk.gid);
		if (req->type == GOFER_MSG_MKDIR || req->type == GOFER_MSG_MKNOD)
			w_u32(&w, 0);
		if (!w_name(&w, &req->mk.name, gofer_name_check))
			return -EINVAL;
		if (req->type == GOFER_MSG_SYMLINK) {
			if (!target_valid(req->mk.target.name, req->mk.target.len))
				return -EINVAL;
			w_u16(&w, req->mk.target.len);
			w_bytes(&w, req->mk.target.name, req->mk.target.len);
		}
		break;
	case GOFER_MSG_LINK:
	case GOFER_MSG_RENAME:
		w_u64(&w, req->link.olddir);
		w_u64(&w, req->link.newdir);
		if (req->type == GOFER_MSG_RENAME) {
			if (!rename_flags_valid(req->link.flags))
				return -EINVAL;
			w_u32(&w, req->link.flags);
			w_u32(&w, 0);
		} else if (req->link.flags) {
			return -EINVAL;
		}
		if (!w_name(&w, &req->link.oldname, gofer_name_check) ||
		    !w_name(&w, &req->link.newname, gofer_name_check))
			return -EINVAL;
		break;
	case GOFER_MSG_UNLINK:
		if (req->unlink.flags & ~GOFER_UNLINK_REMOVEDIR)
			return -EINVAL;
		w_u64(&w, req->unlink.dir);
		w_u32(&w, req->unlink.flags);
		w_u32(&w, 0);
		if (!w_name(&w, &req->unlink.name, gofer_name_check))
			return -EINVAL;
		break;
	case GOFER_MSG_FSYNC:
		if (req->fsync.flags & ~GOFER_FSYNC_DATASYNC)
			return -EINVAL;
		w_u64(&w, req->fsync.handle);
		w_u32(&w, req->fsync.flags);
		w_u32(&w, 0);
		break;
	case GOFER_MSG_GETXATTR:
	case GOFER_MSG_LISTXATTR:
		if (req->xattr.size > GOFER_XATTR_SIZE_MAX || req->xattr.flags)
			return -EINVAL;
		w_u64(&w, req->xattr.handle);
		w_u32(&w, req->xattr.size);
		w_u32(&w, 0);
		if (req->type == GOFER_MSG_GETXATTR &&
		    !w_name(&w, &req->xattr.name, gofer_xattr_name_check))
			return -EINVAL;
		break;
	case GOFER_MSG_SETXATTR:
		if (req->xattr.size > GOFER_XATTR_SIZE_MAX ||
		    (req->xattr.flags & ~(GOFER_XATTR_CREATE | GOFER_XATTR_REPLACE)) ||
		    (req->xattr.size && !req->xattr.value))
			return -EINVAL;
		w_u64(&w, req->xattr.handle);
		w_u32(&w, req->xattr.flags);
		w_u32(&w, req->xattr.size);
		if (!w_name(&w, &req->xattr.name, gofer_xattr_name_check))
			return -EINVAL;
		w_bytes(&w, req->xattr.value, req->xattr.size);
		break;
	case GOFER_MSG_REMOVEXATTR:
		if (req->xattr.flags || req->xattr.size)
			return -EINVAL;
		w_u64(&w, req->xattr.handle);
		if (!w_name(&w, &req->xattr.name, gofer_xattr_name_check))
			return -EINVAL;
		break;
	case GOFER_MSG_STAT:
	case GOFER_MSG_READLINK:
	case GOFER_MSG_STATFS:
		w_u64(&w, req->node.handle);
		break;
	case GOFER_MSG_OPEN:
		if (!open_flags_valid(req->open.flags))
			return -EINVAL;
		w_u64(&w, req->open.handle);
		w_u32(&w, req->open.flags);
		w_u32(&w, 0);
		break;
	case GOFER_MSG_GETDENTS:
	case GOFER_MSG_GETDENTSPLUS:
		if (req->getdents.max < 1 || !getdents_flags_valid(req->type, req->getdents.flags))
			return -EINVAL;
		w_u64(&w, req->getdents.handle);
		w_u64(&w, (uint64_t)req->getdents.cookie);
		w_u32(&w, req->getdents.max);
		w_u32(&w, req->getdents.flags);
		break;
	case GOFER_MSG_CLOSE:
		if (req->close.n < 1 || req->close.n > GOFER_CLOSE_MAX)
			return -EINVAL;
		w_u32(&w, req->close.n);
		w_u32(&w, 0);
		for (uint32_t i = 0; i < req->close.n; i++)
			w_u64(&w, req->close.handles[i]);
		break;
	default:
		if (!gofer_msg_reserved(req->type))
			return -EINVAL;
		break;
	}
	if (w.overflow || w.len > GOFER_MSG_MAX)
		return -EMSGSIZE;
	h.len = (uint32_t)w.len;
	gofer_hdr_encode(buf, &h);
	return (ssize_t)w.len;
}

GOFER_PROTO_API int gofer_req_decode(const void *buf, size_t len, struct gofer_req *req)
{
	struct gofer_hdr h;
	struct rcur r;

	req->type = 0;
	req->tag = 0;
	if (gofer_hdr_decode(buf, len, &h) < 0)
		return -EINVAL;
	req->type = h.type;
	req->tag = h.tag;
	if ((h.type & GOFER_REPLY) || h.error != 0)
		return -EINVAL;
	if (gofer_msg_reserved(h.type))
		return -ENOSYS;
	r = (struct rcur){ .p = (const uint8_t *)buf + GOFER_HDR_SIZE,
			   .left = len - GOFER_HDR_SIZE };
	switch (h.type) {
	case GOFER_MSG_MOUNT:
		req->mount.version = r_u32(&r);
		r_pad32(&r);
		break;
	case GOFER_MSG_WALK:
	case GOFER_MSG_WALKSTAT:
		req->walk.dir = r_u64(&r);
		req->walk.n = r_u32(&r);
		if (req->walk.n < 1 || req->walk.n > GOFER_WALK_MAX)
			return -EINVAL;
		for (uint32_t i = 0; i < req->walk.n; i++) {
			r_name(&r, &req->walk.names[i], gofer_name_check);
			if (r.bad)
				return -EINVAL;
		}
		break;
	case GOFER_MSG_SETSTAT: {
		struct gofer_setstat *st = &req->setstat.st;

		req->setstat.handle = r_u64(&r);
		st->mask = r_u32(&r);
		st->mode = r_u32(&r);
		st->uid = r_u32(&r);
		st->gid = r_u32(&r);
		st->size = (int64_t)r_u64(&r);
		st->atime_sec = (int64_t)r_u64(&r);
		st->mtime_sec = (int64_t)r_u64(&r);
		st->atime_nsec = r_u32(&r);
		st->mtime_nsec = r_u32(&r);
		if (!setstat_valid(st))
			return -EINVAL;
		break;
	}
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
		memset(&req->mk, 0, sizeof(req->mk));
		req->mk.dir = r_u64(&r);
		if (h.type == GOFER_MSG_CREATE)
			req->mk.flags = r_u32(&r);
		if (h.type != GOFER_MSG_SYMLINK)
			req->mk.mode = r_u32(&r);
		req->mk.uid = r_u32(&r);
		req->mk.gid = r_u32(&r);
		if (h.type == GOFER_MSG_MKDIR || h.type == GOFER_MSG_MKNOD)
			r_pad32(&r);
		r_name(&r, &req->mk.name, gofer_name_check);
		if (h.type == GOFER_MSG_SYMLINK) {
			req->mk.target.len = r_u16(&r);
			req->mk.target.name = (const char *)r_take(&r, req->mk.target.len);
			if (!r.bad && !target_valid(req->mk.target.name, req->mk.target.len))
				return -EINVAL;
		}
		if (r.bad ||
		    !mk_valid(h.type, req->mk.flags, req->mk.mode, req->mk.uid, req->mk.gid))
			return -EINVAL;
		break;
	case GOFER_MSG_LINK:
	case GOFER_MSG_RENAME:
		req->link.olddir = r_u64(&r);
		req->link.newdir = r_u64(&r);
		req->link.flags = 0;
		if (h.type == GOFER_MSG_RENAME) {
			req->link.flags = r_u32(&r);
			r_pad32(&r);
			if (!rename_flags_valid(req->link.flags))
				return -EINVAL;
		}
		r_name(&r, &req->link.oldname, gofer_name_check);
		r_name(&r, &req->link.newname, gofer_name_check);
		break;
	case GOFER_MSG_UNLINK:
		req->unlink.dir = r_u64(&r);
		req->unlink.flags = r_u32(&r);
		r_pad32(&r);
		r_name(&r, &req->unlink.name, gofer_name_check);
		if (req->unlink.flags & ~GOFER_UNLINK_REMOVEDIR)
			return -EINVAL;
		break;
	case GOFER_MSG_FSYNC:
		req->fsync.handle = r_u64(&r);
		req->fsync.flags = r_u32(&r);
		r_pad32(&r);
		if (req->fsync.flags & ~GOFER_FSYNC_DATASYNC)
			return -EINVAL;
		break;
	case GOFER_MSG_GETXATTR:
	case GOFER_MSG_LISTXATTR:
		memset(&req->xattr, 0, sizeof(req->xattr));
		req->xattr.handle = r_u64(&r);
		req->xattr.size = r_u32(&r);
		r_pad32(&r);
		if (h.type == GOFER_MSG_GETXATTR)
			r_name(&r, &req->xattr.name, gofer_xattr_name_check);
		if (req->xattr.size > GOFER_XATTR_SIZE_MAX)
			return -EINVAL;
		break;
	case GOFER_MSG_SETXATTR:
		req->xattr.handle = r_u64(&r);
		req->xattr.flags = r_u32(&r);
		req->xattr.size = r_u32(&r);
		r_name(&r, &req->xattr.name, gofer_xattr_name_check);
		if (r.bad || req->xattr.size > GOFER_XATTR_SIZE_MAX ||
		    (req->xattr.flags & ~(GOFER_XATTR_CREATE | GOFER_XATTR_REPLACE)))
			return -EINVAL;
		req->xattr.value = r_take(&r, req->xattr.size);
		break;
	case GOFER_MSG_REMOVEXATTR:
		memset(&req->xattr, 0, sizeof(req->xattr));
		req->xattr.handle = r_u64(&r);
		r_name(&r, &req->xattr.name, gofer_xattr_name_check);
		break;
	case GOFER_MSG_STAT:
	case GOFER_MSG_READLINK:
	case GOFER_MSG_STATFS:
		req->node.handle = r_u64(&r);
		break;
	case GOFER_MSG_OPEN:
		req->open.handle = r_u64(&r);
		req->open.flags = r_u32(&r);
		r_pad32(&r);
		if (!open_flags_valid(req->open.flags))
			return -EINVAL;
		break;
	case GOFER_MSG_GETDENTS:
	case GOFER_MSG_GETDENTSPLUS:
		req->getdents.handle = r_u64(&r);
		req->getdents.cookie = (int64_t)r_u64(&r);
		req->getdents.max = r_u32(&r);
		/* GETDENTS: padding, which must be 0 as flags valid for it are. */
		req->getdents.flags = r_u32(&r);
		if (req->getdents.max < 1 || !getdents_flags_valid(h.type, req->getdents.flags))
			return -EINVAL;
		break;
	case GOFER_MSG_CLOSE:
		req->close.n = r_u32(&r);
		r_pad32(&r);
		if (req->close.n < 1 || req->close.n > GOFER_CLOSE_MAX)
			return -EINVAL;
		/* Check the size before reading n handles. */
		if (r.left != (size_t)req->close.n * 8)
			return -EINVAL;
		for (uint32_t i = 0; i < req->close.n; i++)
			req->close.handles[i] = r_u64(&r);
		break;
	default:
		return -EINVAL;
	}
	if (r.bad || r.left != 0)
		return -EINVAL;
	return 0;
}

static bool dirent_type_valid(uint8_t type)
{
	/* DT_UNKNOWN, DT_FIFO, DT_CHR, DT_DIR, DT_BLK, DT_REG, DT_LNK, DT_SOCK, DT_WHT */
	return type <= 14 && (type == 0 || type == 1 || !(type & 1));
}

GOFER_PROTO_API int gofer_dirent_encode(const struct gofer_dirent *d, uint8_t *p, size_t cap)
{
	struct wcur w = { .p = p, .cap = cap };

	if (gofer_name_check(d->name, d->namelen) < 0 || !dirent_type_valid(d->type))
		return -EINVAL;
	w_u64(&w, d->ino);
	w_u64(&w, (uint64_t)d->next);
	w_u8(&w, d->type);
	w_u8(&w, 0);
	w_u16(&w, d->namelen);
	w_bytes(&w, d->name, d->namelen);
	if (w.overflow)
		return -EMSGSIZE;
	return (int)w.len;
}

GOFER_PROTO_API int gofer_dirent_decode(const uint8_t *p, size_t left, struct gofer_dirent *d)
{
	struct rcur r = { .p = p, .left = left };

	d->ino = r_u64(&r);
	d->next = (int64_t)r_u64(&r);
	d->type = r_u8(&r);
	if (r_u8(&r) != 0)
		return -EINVAL;
	d->namelen = r_u16(&r);
	d->name = (const char *)r_take(&r, d->namelen);
	if (r.bad || gofer_name_check(d->name, d->namelen) < 0 || !dirent_type_valid(d->type))
		return -EINVAL;
	return (int)(left - r.left);
}

/* The file type of a mode as a dirent type (Linux's IFTODT). */
static uint8_t mode_dtype(uint32_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12);
}

GOFER_PROTO_API int gofer_dirent_plus_encode(const struct gofer_dirent_plus *e, uint8_t *p,
					     size_t cap)
{
	static const struct gofer_attr zero;
	struct wcur w = { .p = p, .cap = cap };
	int len;

	if (e->flags & ~GOFER_DIRENT_ATTR)
		return -EINVAL;
	if (e->flags & GOFER_DIRENT_ATTR) {
		if (!attr_valid(&e->attr) || mode_dtype(e->attr.mode) != e->d.type)
			return -EINVAL;
	} else if (memcmp(&e->attr, &zero, sizeof(zero)) != 0) {
		return -EINVAL;
	}
	if (e->handle && (!(e->flags & GOFER_DIRENT_ATTR) || !S_ISDIR(e->attr.mode)))
		return -EINVAL;
	w_u64(&w, e->handle);
	w_u32(&w, e->flags);
	w_u32(&w, 0);
	w_attr(&w, &e->attr);
	if (w.overflow)
		return -EMSGSIZE;
	len = gofer_dirent_encode(&e->d, p + w.len, cap - w.len);
	if (len < 0)
		return len;
	return (int)w.len + len;
}

GOFER_PROTO_API int gofer_dirent_plus_decode(const uint8_t *p, size_t left,
					     struct gofer_dirent_plus *e)
{
	struct rcur r = { .p = p, .left = left };
	const uint8_t *raw_attr;
	int used;

	e->handle = r_u64(&r);
	e->flags = r_u32(&r);
	r_pad32(&r);
	if (r.bad || (e->flags & ~GOFER_DIRENT_ATTR))
		return -EINVAL;
	raw_attr = r.p;
	if (e->flags & GOFER_DIRENT_ATTR) {
		r_attr(&r, &e->attr); /* checks it */
	} else {
		memset(&e->attr, 0, sizeof(e->attr));
		/* No attributes: the block is all zero (nothing hides in it). */
		if (!r_take(&r, GOFER_ATTR_SIZE))
			return -EINVAL;
		for (size_t i = 0; i < GOFER_ATTR_SIZE; i++) {
			if (raw_attr[i])
				return -EINVAL;
		}
	}
	if (r.bad)
		return -EINVAL;
	used = gofer_dirent_decode(r.p, r.left, &e->d);
	if (used < 0)
		return -EINVAL;
	if ((e->flags & GOFER_DIRENT_ATTR) && mode_dtype(e->attr.mode) != e->d.type)
		return -EINVAL;
	if (e->handle && (!(e->flags & GOFER_DIRENT_ATTR) || !S_ISDIR(e->attr.mode)))
		return -EINVAL;
	return (int)(left - r.left) + used;
}

/* Checks that raw[0..size) is exactly n valid dirents (GETDENTSPLUS: entries). */
static bool dirents_valid(uint16_t type, const uint8_t *raw, size_t size, uint32_t n)
{
	struct gofer_dirent_plus e;
	size_t off = 0;

	if (size && !raw)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		int used = type == GOFER_MSG_GETDENTSPLUS ?
				   gofer_dirent_plus_decode(raw + off, size - off, &e) :
				   gofer_dirent_decode(raw + off, size - off, &e.d);

		if (used < 0)
			return false;
		off += (size_t)used;
	}
	return off == size;
}

/*
 * The checks on the attributes of a WALK or WALKSTAT reply that do not depend on the request:
 * n attributes, the i-th at (const char *)first + i * stride.
 */
static bool walk_attrs_valid(uint32_t n, uint32_t flags, const struct gofer_attr *first,
			     size_t stride)
{
	const struct gofer_attr *a = first;

	if (n > GOFER_WALK_MAX || (flags & ~GOFER_WALK_ENOENT))
		return false;
	/* Nothing reached: only a missing first name explains it. */
	if (n == 0)
		return flags & GOFER_WALK_ENOENT;
	for (uint32_t i = 0; i < n; i++) {
		a = (const struct gofer_attr *)((const char *)first + i * stride);
		if (!attr_valid(a))
			return false;
		/* A walk goes on only through directories. */
		if (i + 1 < n && !S_ISDIR(a->mode))
			return false;
	}
	/* A name was missing in the last directory reached. */
	if ((flags & GOFER_WALK_ENOENT) && !S_ISDIR(a->mode))
		return false;
	return true;
}

/* The checks on a WALK reply that do not depend on the request. */
static bool walk_valid(uint32_t n, uint32_t flags, const struct gofer_walk_entry *e)
{
	for (uint32_t i = 0; i < n && i < GOFER_WALK_MAX; i++) {
		if (e[i].handle == 0)
			return false;
	}
	return walk_attrs_valid(n, flags, &e[0].attr, sizeof(*e));
}

/* The node a CREATE, MKDIR, MKNOD, SYMLINK or LINK reply names: its type must be the one made. */
static bool node_valid(uint16_t type, const struct gofer_walk_entry *e)
{
	uint32_t fmt = e->attr.mode & S_IFMT;

	if (e->handle == 0 || !attr_valid(&e->attr))
		return false;
	switch (type) {
	case GOFER_MSG_CREATE:
		return fmt == S_IFREG;
	case GOFER_MSG_MKDIR:
		return fmt == S_IFDIR;
	case GOFER_MSG_MKNOD:
		return fmt == S_IFIFO || fmt == S_IFSOCK;
	case GOFER_MSG_SYMLINK:
		return fmt == S_IFLNK;
	default: /* LINK: never a directory */
		return fmt != S_IFDIR;
	}
}

/*
 * A GETXATTR or LISTXATTR reply: data is NULL (a length only, at most Linux's 64 KiB) or len
 * bytes.
 */
static bool xattr_rep_valid(uint16_t type, uint32_t len, const uint8_t *data)
{
	if (!data)
		return len <= 65536u;
	if (len > GOFER_XATTR_SIZE_MAX)
		return false;
	return type == GOFER_MSG_GETXATTR || xattr_list_valid(data, len);
}

GOFER_PROTO_API ssize_t gofer_rep_encode(const struct gofer_rep *rep, void *buf, size_t cap)
{
	struct wcur w = { .p = buf, .len = GOFER_HDR_SIZE, .cap = cap };
	struct gofer_hdr h = { .type = (uint16_t)(rep->type | GOFER_REPLY),
			       .tag = rep->tag,
			       .error = rep->error };

	if (!buf || cap < GOFER_HDR_SIZE)
		return -EMSGSIZE;
	if (rep->type & GOFER_REPLY)
		return -EINVAL;
	/* An error may answer any type, even one that could not be parsed (type 0). */
	if (rep->error) {
		if (rep->error > 4095)
			return -EINVAL;
		goto out;
	}
	switch (rep->type) {
	case GOFER_MSG_MOUNT:
		if (rep->mount.root == 0 || (rep->mount.flags & ~GOFER_MOUNT_READONLY) ||
		    !attr_valid(&rep->mount.attr))
			return -EINVAL;
		w_u64(&w, rep->mount.root);
		w_u32(&w, rep->mount.flags);
		w_u32(&w, 0);
		w_attr(&w, &rep->mount.attr);
		break;
	case GOFER_MSG_WALK:
		if (!walk_valid(rep->walk.n, rep->walk.flags, rep->walk.entries))
			return -EINVAL;
		w_u32(&w, rep->walk.n);
		w_u32(&w, rep->walk.flags);
		for (uint32_t i = 0; i < rep->walk.n; i++) {
			w_u64(&w, rep->walk.entries[i].handle);
			w_attr(&w, &rep->walk.entries[i].attr);
		}
		break;
	case GOFER_MSG_STAT:
	case GOFER_MSG_SETSTAT:
		if (!attr_valid(&rep->stat))
			return -EINVAL;
		w_attr(&w, &rep->stat);
		break;
	case GOFER_MSG_OPEN:
	case GOFER_MSG_CLOSE:
	case GOFER_MSG_UNLINK:
	case GOFER_MSG_RENAME:
	case GOFER_MSG_FSYNC:
	case GOFER_MSG_SETXATTR:
	case GOFER_MSG_REMOVEXATTR:
		break;
	case GOFER_MSG_WALKSTAT:
		if (!walk_attrs_valid(rep->walkstat.n, rep->walkstat.flags, rep->walkstat.attrs,
				      sizeof(rep->walkstat.attrs[0])))
			return -EINVAL;
		w_u32(&w, rep->walkstat.n);
		w_u32(&w, rep->walkstat.flags);
		for (uint32_t i = 0; i < rep->walkstat.n; i++)
			w_attr(&w, &rep->walkstat.attrs[i]);
		break;
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
	case GOFER_MSG_LINK:
		if (!node_valid(rep->type, &rep->node))
			return -EINVAL;
		w_u64(&w, rep->node.handle);
		w_attr(&w, &rep->node.attr);
		break;
	case GOFER_MSG_GETXATTR:
	case GOFER_MSG_LISTXATTR:
		if (!xattr_rep_valid(rep->type, rep->xattr.len, rep->xattr.data))
			return -EINVAL;
		w_u32(&w, rep->xattr.len);
		w_u32(&w, 0);
		if (rep->xattr.data)
			w_bytes(&w, rep->xattr.data, rep->xattr.len);
		break;
	case GOFER_MSG_READLINK:
		if (!target_valid(rep->readlink.target, rep->readlink.len))
			return -EINVAL;
		w_u16(&w, rep->readlink.len);
		w_bytes(&w, rep->readlink.target, rep->readlink.len);
		break;
	case GOFER_MSG_GETDENTS:
	case GOFER_MSG_GETDENTSPLUS:
		if ((rep->getdents.flags & ~GOFER_GETDENTS_EOF) ||
		    !dirents_valid(rep->type, rep->getdents.raw, rep->getdents.size,
				   rep->getdents.n))
			return -EINVAL;
		w_u32(&w, rep->getdents.n);
		w_u32(&w, rep->getdents.flags);
		w_bytes(&w, rep->getdents.raw, rep->getdents.size);
		break;
	case GOFER_MSG_STATFS:
		w_statfs(&w, &rep->statfs);
		break;
	default:
		return -EINVAL;
	}
out:
	if (w.overflow || w.len > GOFER_MSG_MAX)
		return -EMSGSIZE;
	h.len = (uint32_t)w.len;
	gofer_hdr_encode(buf, &h);
	return (ssize_t)w.len;
}

GOFER_PROTO_API int gofer_rep_decode(const void *buf, size_t len, struct gofer_rep *rep)
{
	struct gofer_hdr h;
	struct rcur r;

	if (gofer_hdr_decode(buf, len, &h) < 0 || !(h.type & GOFER_REPLY))
		return -EINVAL;
	rep->type = (uint16_t)(h.type & ~GOFER_REPLY);
	rep->tag = h.tag;
	rep->error = h.error;
	r = (struct rcur){ .p = (const uint8_t *)buf + GOFER_HDR_SIZE,
			   .left = len - GOFER_HDR_SIZE };
	/* An error may answer any type, even one that could not be parsed (type 0). */
	if (h.error) {
		if (h.error > 4095 || r.left != 0)
			return -EINVAL;
		return 0;
	}
	switch (rep->type) {
	case GOFER_MSG_MOUNT:
		rep->mount.root = r_u64(&r);
		rep->mount.flags = r_u32(&r);
		r_pad32(&r);
		r_attr(&r, &rep->mount.attr);
		if (rep->mount.root == 0 || (rep->mount.flags & ~GOFER_MOUNT_READONLY))
			return -EINVAL;
		break;
	case GOFER_MSG_WALK:
		rep->walk.n = r_u32(&r);
		rep->walk.flags = r_u32(&r);
		if (rep->walk.n > GOFER_WALK_MAX || r.left != rep->walk.n * GOFER_WALK_ENTRY_SIZE)
			return -EINVAL;
		for (uint32_t i = 0; i < rep->walk.n; i++) {
			rep->walk.entries[i].handle = r_u64(&r);
			r_attr(&r, &rep->walk.entries[i].attr);
		}
		if (r.bad || !walk_valid(rep->walk.n, rep->walk.flags, rep->walk.entries))
			return -EINVAL;
		break;
	case GOFER_MSG_STAT:
	case GOFER_MSG_SETSTAT:
		r_attr(&r, &rep->stat);
		break;
	case GOFER_MSG_OPEN:
	case GOFER_MSG_CLOSE:
	case GOFER_MSG_UNLINK:
	case GOFER_MSG_RENAME:
	case GOFER_MSG_FSYNC:
	case GOFER_MSG_SETXATTR:
	case GOFER_MSG_REMOVEXATTR:
		break;
	case GOFER_MSG_WALKSTAT:
		rep->walkstat.n = r_u32(&r);
		rep->walkstat.flags = r_u32(&r);
		if (rep->walkstat.n > GOFER_WALK_MAX || r.left != rep->walkstat.n * GOFER_ATTR_SIZE)
			return -EINVAL;
		for (uint32_t i = 0; i < rep->walkstat.n; i++)
			r_attr(&r, &rep->walkstat.attrs[i]);
		if (r.bad || !walk_attrs_valid(rep->walkstat.n, rep->walkstat.flags,
					       rep->walkstat.attrs, sizeof(rep->walkstat.attrs[0])))
			return -EINVAL;
		break;
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
	case GOFER_MSG_LINK:
		rep->node.handle = r_u64(&r);
		r_attr(&r, &rep->node.attr);
		if (r.bad || !node_valid(rep->type, &rep->node))
			return -EINVAL;
		break;
	case GOFER_MSG_GETXATTR:
	case GOFER_MSG_LISTXATTR:
		rep->xattr.len = r_u32(&r);
		r_pad32(&r);
		rep->xattr.data = NULL;
		if (r.bad)
			return -EINVAL;
		/* The value or list follows in full, or not at all. */
		if (r.left) {
			if (r.left != rep->xattr.len)
				return -EINVAL;
			rep->xattr.data = r_take(&r, r.left);
		}
		if (!xattr_rep_valid(rep->type, rep->xattr.len, rep->xattr.data))
			return -EINVAL;
		break;
	case GOFER_MSG_READLINK:
		rep->readlink.len = r_u16(&r);
		rep->readlink.target = (const char *)r_take(&r, rep->readlink.len);
		if (r.bad || !target_valid(rep->readlink.target, rep->readlink.len))
			return -EINVAL;
		break;
	case GOFER_MSG_GETDENTS:
	case GOFER_MSG_GETDENTSPLUS:
		rep->getdents.n = r_u32(&r);
		rep->getdents.flags = r_u32(&r);
		if (r.bad || (rep->getdents.flags & ~GOFER_GETDENTS_EOF))
			return -EINVAL;
		rep->getdents.raw = r.p;
		rep->getdents.size = r.left;
		if (!dirents_valid(rep->type, r.p, r.left, rep->getdents.n))
			return -EINVAL;
		r_take(&r, r.left);
		break;
	case GOFER_MSG_STATFS:
		r_statfs(&r, &rep->statfs);
		break;
	default:
		/* A reserved type can only have failed. */
		return -EINVAL;
	}
	if (r.bad || r.left != 0)
		return -EINVAL;
	return 0;
}

GOFER_PROTO_API size_t gofer_rep_error(void *buf, uint16_t type, uint32_t tag, int error)
{
	struct gofer_hdr h = { .len = GOFER_HDR_SIZE,
			       .type = (uint16_t)(type | GOFER_REPLY),
			       .tag = tag,
			       .error = (uint32_t)(error < 0 ? -error : error) };

	gofer_hdr_encode(buf, &h);
	return GOFER_HDR_SIZE;
}
