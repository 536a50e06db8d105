/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer protocol (DESIGN.md section 6), shared by the gofer (gofer/server.c) and the
 * sentry's client (sentry/fs/gofer/client.c). gofer/README.md has the message table.
 *
 * One message per SOCK_SEQPACKET packet, at most GOFER_MSG_MAX bytes, little-endian fixed-width
 * fields, no pointers. Every message starts with a 16-byte header:
 *
 *	u32 len		total length of the message, header included; equals the packet size
 *	u16 type	enum gofer_msg_type; a reply has GOFER_REPLY or'ed in
 *	u16 flags	0
 *	u32 tag		chosen by the client, echoed in the reply
 *	u32 error	requests: 0; replies: 0 or a positive errno (then the body is empty)
 *
 * Names are (u16 len, bytes) with no NUL: single path components (gofer_name_check).
 * Handles are u64 numbers the gofer gives out for nodes; 0 is never a handle.
 * The only FD ever carried (SCM_RIGHTS) is the one a successful OPEN or CREATE reply donates.
 *
 * The functions here are pure: they encode and decode buffers and validate what they decode.
 * A decoder never trusts its input: every length and count is checked against the packet.
 */
#ifndef HUSK_GOFER_PROTO_H
#define HUSK_GOFER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/*
 * Linkage of the functions of proto.c. The sentry's client is compiled alone into the sentry's
 * VFS library, so client.c includes proto.c with this defined as static (see client.c).
 */
#ifndef GOFER_PROTO_API
#define GOFER_PROTO_API
#endif

#define GOFER_PROTO_VERSION 1u

#define GOFER_MSG_MAX 65536u /* largest message, header included */
#define GOFER_HDR_SIZE 16u
#define GOFER_REPLY 0x8000u /* or'ed into the type of a reply */

#define GOFER_NAME_MAX 255u /* longest name (one path component) */
#define GOFER_PATH_MAX 4095u /* longest symlink target */
#define GOFER_WALK_MAX 64u /* most names in one WALK */
#define GOFER_CLOSE_MAX 1024u /* most handles in one CLOSE */

#define GOFER_ATTR_SIZE 112u /* encoded struct gofer_attr */
#define GOFER_STATFS_SIZE 80u /* encoded struct gofer_statfs */
#define GOFER_WALK_ENTRY_SIZE (8u + GOFER_ATTR_SIZE)
#define GOFER_DIRENT_HDR_SIZE 20u /* encoded dirent without its name */
/* Encoded GETDENTSPLUS entry without its name: u64 handle, u32 flags, u32 0, attr, dirent. */
#define GOFER_DIRENT_PLUS_HDR_SIZE (16u + GOFER_ATTR_SIZE + GOFER_DIRENT_HDR_SIZE)
/* Most dirent bytes one GETDENTS reply can hold (the max a request may usefully ask). */
#define GOFER_GETDENTS_MAX (GOFER_MSG_MAX - GOFER_HDR_SIZE - 8u)

/* Longest xattr name (Linux's XATTR_NAME_MAX) and value or list one message carries. */
#define GOFER_XATTR_NAME_MAX 255u
#define GOFER_XATTR_SIZE_MAX 61440u /* 60 KiB; Linux allows 64 KiB: E2BIG past this */

/* MOUNT reply flags. */
#define GOFER_MOUNT_READONLY 0x1u
/* WALK reply flags: the walk stopped because the next name does not exist. */
#define GOFER_WALK_ENOENT 0x1u
/*
 * GETDENTS and GETDENTSPLUS reply flags: the gofer read the directory to its end (its host
 * getdents64 returned 0) after the last entry of this reply; never set after an error or when
 * the reply was full.
 */
#define GOFER_GETDENTS_EOF 0x1u
/* GETDENTSPLUS request flags: make a handle for each subdirectory listed (when it can). */
#define GOFER_GETDENTS_DIR_HANDLES 0x1u
/* GETDENTSPLUS entry flags: the entry carries attributes (the host's lstat of the name). */
#define GOFER_DIRENT_ATTR 0x1u

/* Linux's O_LARGEFILE (glibc's O_LARGEFILE is 0 on x86-64). */
#define GOFER_O_LARGEFILE 0100000
/*
 * Flags an OPEN request may carry (Linux x86-64 values); anything else is -EINVAL. O_CLOEXEC,
 * O_NOCTTY, O_LARGEFILE, O_NOFOLLOW and O_NOATIME are accepted and have no effect: the donated
 * FD is always close-on-exec, a handle is never opened when it is a symlink, and atime is not
 * the sentry's to control. Never O_CREAT, O_EXCL, O_PATH or O_TMPFILE.
 */
#define GOFER_OPEN_FLAGS                                                                   \
	(03 | 01000 /* O_TRUNC */ | 02000 /* O_APPEND */ | 04000 /* O_NONBLOCK */ |        \
	 010000 /* O_DSYNC */ | 04010000 /* O_SYNC */ | 040000 /* O_DIRECT */ |            \
	 0200000 /* O_DIRECTORY */ | 0400000 /* O_NOFOLLOW */ | 01000000 /* O_NOATIME */ | \
	 02000000 /* O_CLOEXEC */ | 0400 /* O_NOCTTY */ | GOFER_O_LARGEFILE)

/* SETSTAT mask: which fields of struct gofer_setstat to apply. */
#define GOFER_SETSTAT_MODE 0x01u
#define GOFER_SETSTAT_UID 0x02u
#define GOFER_SETSTAT_GID 0x04u
#define GOFER_SETSTAT_SIZE 0x08u
#define GOFER_SETSTAT_ATIME 0x10u
#define GOFER_SETSTAT_MTIME 0x20u
#define GOFER_SETSTAT_ALL 0x3fu
/* Linux's UTIME_NOW and UTIME_OMIT, allowed as atime_nsec / mtime_nsec of a SETSTAT. */
#define GOFER_UTIME_NOW ((1u << 30) - 1u)
#define GOFER_UTIME_OMIT ((1u << 30) - 2u)

/* UNLINK flags: Linux's AT_REMOVEDIR. */
#define GOFER_UNLINK_REMOVEDIR 0x200u
/* RENAME flags: Linux's RENAME_NOREPLACE and RENAME_EXCHANGE (never RENAME_WHITEOUT). */
#define GOFER_RENAME_NOREPLACE 0x1u
#define GOFER_RENAME_EXCHANGE 0x2u
/* FSYNC flags: fdatasync instead of fsync. */
#define GOFER_FSYNC_DATASYNC 0x1u
/* SETXATTR flags: Linux's XATTR_CREATE and XATTR_REPLACE. */
#define GOFER_XATTR_CREATE 0x1u
#define GOFER_XATTR_REPLACE 0x2u
/* Flags a CREATE request may carry: those of OPEN but O_DIRECTORY. */
#define GOFER_CREATE_FLAGS (GOFER_OPEN_FLAGS & ~0200000)

enum gofer_msg_type {
	GOFER_MSG_MOUNT = 1,
	GOFER_MSG_WALK = 2,
	GOFER_MSG_STAT = 3,
	GOFER_MSG_OPEN = 4,
	GOFER_MSG_READLINK = 5,
	GOFER_MSG_GETDENTS = 6,
	GOFER_MSG_STATFS = 7,
	GOFER_MSG_CLOSE = 8,
	GOFER_MSG_WALKSTAT = 9,
	GOFER_MSG_SETSTAT = 10,
	GOFER_MSG_CREATE = 11,
	GOFER_MSG_MKDIR = 12,
	GOFER_MSG_MKNOD = 13,
	GOFER_MSG_SYMLINK = 14,
	GOFER_MSG_LINK = 15,
	GOFER_MSG_UNLINK = 16,
	GOFER_MSG_RENAME = 17,
	GOFER_MSG_FSYNC = 18,
	GOFER_MSG_GETXATTR = 19,
	GOFER_MSG_SETXATTR = 20,
	GOFER_MSG_LISTXATTR = 21,
	GOFER_MSG_REMOVEXATTR = 22,
	GOFER_MSG_GETDENTSPLUS = 23,
	GOFER_MSG_TYPE_END, /* first unassigned number */
};
/*
 * Types numbered but not implemented yet are answered ENOSYS: those from
 * GOFER_MSG_FIRST_RESERVED to GOFER_MSG_TYPE_END. None at present.
 */
#define GOFER_MSG_FIRST_RESERVED GOFER_MSG_TYPE_END

/* Attributes of a node: struct stat's fields as the gofer's host reported them. */
struct gofer_attr {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	int64_t atime_sec, mtime_sec, ctime_sec;
	uint32_t atime_nsec, mtime_nsec, ctime_nsec;
};

struct gofer_statfs {
	uint64_t type, bsize, blocks, bfree, bavail, files, ffree, namelen, frsize, flags;
};

/*
 * A SETSTAT request: the fields named in mask are applied, in this order: size, owner (uid and
 * gid in one call), mode, times; the first failure stops it (earlier changes stay). mode holds
 * permission bits only (07777), exactly as they are to be: the gofer clears no set-id bit of
 * its own accord. uid and gid are never (u32)-1 ("unchanged" is a clear mask bit). A time whose
 * nsec is GOFER_UTIME_NOW is the gofer's current time; GOFER_UTIME_OMIT leaves it, as a clear
 * mask bit does; otherwise nsec is below 10^9.
 */
struct gofer_setstat {
	uint32_t mask; /* GOFER_SETSTAT_* */
	uint32_t mode;
	uint32_t uid, gid;
	int64_t size; /* >= 0 */
	int64_t atime_sec, mtime_sec;
	uint32_t atime_nsec, mtime_nsec;
};

/* One directory entry. */
struct gofer_dirent {
	uint64_t ino;
	int64_t next; /* cookie of the following entry */
	uint8_t type; /* DT_* */
	uint16_t namelen;
	/* Not NUL-terminated; points into a message (from gofer_getdents: valid until the next
	 * call on c). */
	const char *name;
};

/*
 * One GETDENTSPLUS entry: a dirent with the attributes of its name (when flags has
 * GOFER_DIRENT_ATTR; else attr is zero: the name vanished or could not be stat'ed) and, for a
 * directory when the request asked for it, a new handle of it (else 0). The type of an entry
 * with attributes is its mode's (DT_DIR for S_IFDIR, ...).
 */
struct gofer_dirent_plus {
	struct gofer_dirent d;
	uint64_t handle; /* 0, or a handle of the directory the entry names (the receiver owns it) */
	uint32_t flags; /* GOFER_DIRENT_ATTR */
	struct gofer_attr attr;
};

struct gofer_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
	uint32_t tag;
	uint32_t error;
};

/* A name inside a message: not NUL-terminated. */
struct gofer_name {
	const char *name;
	uint16_t len;
};

/*
 * A request, decoded. Names point into the decoded buffer. The union member used is the one of
 * type; STAT, READLINK and STATFS use node.
 */
struct gofer_req {
	uint16_t type;
	uint32_t tag;
	union {
		struct {
			uint32_t version; /* GOFER_PROTO_VERSION */
		} mount;
		struct {
			uint64_t dir;
			uint32_t n; /* 1..GOFER_WALK_MAX */
			struct gofer_name names[GOFER_WALK_MAX];
		} walk;
		struct {
			uint64_t handle;
		} node;
		struct {
			uint64_t handle;
			uint32_t flags; /* GOFER_OPEN_FLAGS */
		} open;
		struct {
			uint64_t handle;
			int64_t cookie; /* 0: the start; else a dirent's next */
			uint32_t max; /* most dirent bytes in the reply, >= 1 */
			uint32_t flags; /* GETDENTSPLUS: GOFER_GETDENTS_DIR_HANDLES; GETDENTS: 0 */
		} getdents; /* GETDENTS and GETDENTSPLUS */
		struct {
			uint32_t n; /* 1..GOFER_CLOSE_MAX */
			uint64_t handles[GOFER_CLOSE_MAX];
		} close;
		/* WALKSTAT uses walk. */
		struct {
			uint64_t handle;
			struct gofer_setstat st;
		} setstat;
		/* CREATE, MKDIR, MKNOD, SYMLINK: a new node name in dir. */
		struct {
			uint64_t dir;
			uint32_t flags; /* CREATE: GOFER_CREATE_FLAGS */
			uint32_t mode; /* 07777; MKNOD: with S_IFMT bits */
			uint32_t uid, gid; /* never (u32)-1 */
			struct gofer_name name;
			struct gofer_name target; /* SYMLINK: 1..GOFER_PATH_MAX bytes, no NUL */
		} mk;
		/* LINK and RENAME: oldname in olddir, newname in newdir. */
		struct {
			uint64_t olddir, newdir;
			uint32_t flags; /* RENAME: 0 or one GOFER_RENAME_* */
			struct gofer_name oldname, newname;
		} link;
		struct {
			uint64_t dir;
			uint32_t flags; /* 0 or GOFER_UNLINK_REMOVEDIR */
			struct gofer_name name;
		} unlink;
		struct {
			uint64_t handle;
			uint32_t flags; /* GOFER_FSYNC_* */
		} fsync;
		/* GETXATTR, SETXATTR, LISTXATTR (no name), REMOVEXATTR. */
		struct {
			uint64_t handle;
			uint32_t flags; /* SETXATTR: GOFER_XATTR_CREATE, GOFER_XATTR_REPLACE */
			uint32_t size; /* GET, LIST: most bytes wanted (0: the length only);
					* SET: bytes at value. <= GOFER_XATTR_SIZE_MAX */
			struct gofer_name name; /* 1..GOFER_XATTR_NAME_MAX bytes, no NUL */
			const uint8_t *value;
		} xattr;
	};
};

struct gofer_walk_entry {
	uint64_t handle;
	struct gofer_attr attr;
};

/*
 * A reply, decoded. When error is not 0 the body is empty and the union unused. Strings and raw
 * dirents point into the decoded buffer.
 */
struct gofer_rep {
	uint16_t type; /* the request's type, without GOFER_REPLY */
	uint32_t tag;
	uint32_t error; /* 0 or a positive errno */
	union {
		struct {
			uint64_t root;
			uint32_t flags; /* GOFER_MOUNT_* */
			struct gofer_attr attr;
		} mount;
		struct {
			uint32_t n; /* components reached, <= GOFER_WALK_MAX */
			uint32_t flags; /* GOFER_WALK_* */
			struct gofer_walk_entry entries[GOFER_WALK_MAX];
		} walk;
		struct gofer_attr stat;
		struct {
			const char *target; /* not NUL-terminated */
			uint16_t len; /* 1..GOFER_PATH_MAX */
		} readlink;
		struct {
			uint32_t n; /* number of entries */
			uint32_t flags; /* GOFER_GETDENTS_EOF */
			/* n encoded dirents (gofer_dirent_encode), or GETDENTSPLUS entries
			 * (gofer_dirent_plus_encode) */
			const uint8_t *raw;
			size_t size; /* bytes at raw */
		} getdents; /* GETDENTS and GETDENTSPLUS */
		struct gofer_statfs statfs;
		struct {
			uint32_t n; /* components reached, <= GOFER_WALK_MAX */
			uint32_t flags; /* GOFER_WALK_* */
			struct gofer_attr attrs[GOFER_WALK_MAX];
		} walkstat;
		/* SETSTAT uses stat. CREATE (with one FD), MKDIR, MKNOD, SYMLINK, LINK: */
		struct gofer_walk_entry node;
		/* GETXATTR, LISTXATTR */
		struct {
			uint32_t len; /* the value's or list's length */
			const uint8_t
				*data; /* NULL, or len bytes when the request's size was not 0 */
		} xattr;
	};
};

/* Little-endian accessors for unaligned buffers. */
static inline void gofer_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void gofer_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void gofer_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t gofer_get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t gofer_get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t gofer_get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* True for a type this protocol version numbers but does not implement. */
static inline bool gofer_msg_reserved(uint16_t type)
{
	return type >= GOFER_MSG_FIRST_RESERVED && type < GOFER_MSG_TYPE_END;
}

/*
 * Checks that name[0..len) is a single path component: 1..GOFER_NAME_MAX bytes, no '/', no NUL,
 * not "." or "..". Returns 0 or -EINVAL.
 */
GOFER_PROTO_API int gofer_name_check(const char *name, size_t len);
/* Checks that an xattr name has 1..GOFER_XATTR_NAME_MAX bytes and no NUL. Returns 0 or -EINVAL. */
GOFER_PROTO_API int gofer_xattr_name_check(const char *name, size_t len);

/* Writes h into buf[0..GOFER_HDR_SIZE). */
GOFER_PROTO_API void gofer_hdr_encode(void *buf, const struct gofer_hdr *h);
/*
 * Decodes the header of a packet of len bytes. Returns 0, or -EINVAL when len is shorter than a
 * header or longer than GOFER_MSG_MAX, when h->len disagrees with len, or flags is not 0. It
 * does not look at type or error (gofer_req_decode and gofer_rep_decode do).
 */
GOFER_PROTO_API int gofer_hdr_decode(const void *buf, size_t len, struct gofer_hdr *h);

/*
 * Encodes req (type, tag and the fields of its type) into buf of cap bytes. A reserved type is
 * encoded with an empty body. Returns the message length, -EINVAL for an invalid field (unknown
 * type, bad name, count out of range, unknown OPEN flag), or -EMSGSIZE when cap is too small.
 */
GOFER_PROTO_API ssize_t gofer_req_encode(const struct gofer_req *req, void *buf, size_t cap);
/*
 * Decodes and validates the request in buf[0..len). Returns 0; -ENOSYS for a reserved type (the
 * body is not examined); -EINVAL for anything malformed: header (see gofer_hdr_decode), a reply
 * type, a non-zero error, an unknown type, a body of the wrong size, a count out of range, an
 * invalid name, unknown OPEN flags, non-zero padding. req->type and req->tag are set whenever
 * the header parsed, so that an error reply can echo them.
 */
GOFER_PROTO_API int gofer_req_decode(const void *buf, size_t len, struct gofer_req *req);

/*
 * Encodes rep into buf of cap bytes; the type gets GOFER_REPLY. With rep->error set, only the
 * header is written. Returns the message length, -EINVAL for an invalid field (same rules as
 * gofer_rep_decode), or -EMSGSIZE.
 */
GOFER_PROTO_API ssize_t gofer_rep_encode(const struct gofer_rep *rep, void *buf, size_t cap);
/*
 * Decodes and validates the reply in buf[0..len). An error reply may carry any type (type 0
 * answers a message whose header could not be parsed). Returns 0 or -EINVAL: bad header, not a
 * reply, an error past 4095 or with a body, a success reply of an unknown or reserved type, a
 * body of the wrong size, counts out of range,
 * a zero handle, an attribute with an unknown file type or nanoseconds past a second, invalid
 * dirent names or types, a symlink target that is empty, too long or holds a NUL.
 */
GOFER_PROTO_API int gofer_rep_decode(const void *buf, size_t len, struct gofer_rep *rep);
/* Writes an error reply (header only) to buf; returns its length, GOFER_HDR_SIZE. */
GOFER_PROTO_API size_t gofer_rep_error(void *buf, uint16_t type, uint32_t tag, int error);

/* Encoded size of a dirent with a name of namelen bytes. */
static inline size_t gofer_dirent_size(size_t namelen)
{
	return GOFER_DIRENT_HDR_SIZE + namelen;
}
/*
 * Encodes d at p (cap bytes): u64 ino, i64 next, u8 type, u8 0, u16 namelen, name. Returns the
 * bytes written, -EINVAL for an invalid name or type, -EMSGSIZE when it does not fit.
 */
GOFER_PROTO_API int gofer_dirent_encode(const struct gofer_dirent *d, uint8_t *p, size_t cap);
/*
 * Decodes one dirent from p (left bytes); d->name points into p. Returns the bytes used, or
 * -EINVAL when it is truncated or invalid.
 */
GOFER_PROTO_API int gofer_dirent_decode(const uint8_t *p, size_t left, struct gofer_dirent *d);

/* Encoded size of a GETDENTSPLUS entry with a name of namelen bytes. */
static inline size_t gofer_dirent_plus_size(size_t namelen)
{
	return GOFER_DIRENT_PLUS_HDR_SIZE + namelen;
}
/*
 * Encodes e at p (cap bytes): u64 handle, u32 flags, u32 0, attr, then the dirent as
 * gofer_dirent_encode. Returns the bytes written, -EINVAL for an invalid entry (as
 * gofer_dirent_plus_decode rejects), -EMSGSIZE when it does not fit.
 */
GOFER_PROTO_API int gofer_dirent_plus_encode(const struct gofer_dirent_plus *e, uint8_t *p,
					     size_t cap);
/*
 * Decodes one GETDENTSPLUS entry from p (left bytes); e->d.name points into p. Returns the bytes
 * used, or -EINVAL when it is truncated or invalid: unknown flags, non-zero padding, an invalid
 * dirent, attributes that are invalid or whose file type is not the entry's type, an entry
 * without attributes whose attribute bytes are not all zero, a handle on an entry that is not
 * a directory with attributes.
 */
GOFER_PROTO_API int gofer_dirent_plus_decode(const uint8_t *p, size_t left,
					     struct gofer_dirent_plus *e);

#endif
