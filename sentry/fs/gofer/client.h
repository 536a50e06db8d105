/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's side of the gofer protocol (gofer/proto.h): one function per message, each a
 * synchronous request and reply over the SOCK_SEQPACKET socket. Thread-safe (one request in
 * flight at a time). Handles are the gofer's numbers for nodes the sentry walked to; the sentry
 * owns each handle it receives until it closes it with gofer_close().
 *
 * Every reply is validated before it is used: a malformed reply gives -EIO, never a crash.
 */
#ifndef HUSK_SENTRY_FS_GOFER_CLIENT_H
#define HUSK_SENTRY_FS_GOFER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* struct gofer_attr, struct gofer_statfs and struct gofer_dirent are the protocol's. */
#include "gofer/proto.h"

struct gofer_client;

/* Takes ownership of sock. Returns 0 and *out or -errno. */
int gofer_client_create(int sock, struct gofer_client **out);
void gofer_client_destroy(struct gofer_client *c);
/*
 * Closes c's socket (its gofer sees EOF and exits) but keeps c: every later call is -EIO, as
 * once the gofer is gone. For a pod member's gofers when the member ends: nodes of its tree may
 * still reach c. Any thread.
 */
void gofer_client_disconnect(struct gofer_client *c);

/*
 * The number of messages of type (GOFER_MSG_*) sent by every client of this process so far, or
 * of all types when type is negative. For tests and profiling: a cache hit sends nothing. With
 * HUSK_GOFER_STATS set (or HUSK_LOG=debug), the totals are logged on stderr at exit.
 */
uint64_t gofer_client_msgs(int type);
/* Bytes of messages (requests and replies) every client of this process sent and received. File
 * data does not count: it goes through donated FDs. */
uint64_t gofer_client_bytes(void);

/*
 * Attaches to the served root: a directory, or a regular file (the gofer of a file bind mount).
 * Returns 0 with its handle and attributes, or -errno (-EIO for a root of any other type).
 */
int gofer_mount(struct gofer_client *c, uint64_t *root, struct gofer_attr *attr);

/*
 * Walks names[0..n) from dir, one component at a time, stopping after a symlink or at the
 * first missing component. Fills handles[i] and attrs[i] for each component reached. Returns
 * the number of components reached (0..n; fewer than n means the next was missing: the
 * caller knows why from that), or -errno for a failure of the walk itself (-ENOTDIR, -EACCES).
 * A walk that reached a symlink stops after it (attrs[i] says S_IFLNK) even when names remain;
 * otherwise fewer than n means names[return value] does not exist. Names must be single
 * components: -EINVAL for "", ".", "..", or one holding '/' or NUL; -ENAMETOOLONG past 255
 * bytes. n may exceed GOFER_WALK_MAX (several messages are sent). On failure no handle is left
 * to close. attrs may be NULL.
 */
int gofer_walk(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
	       uint64_t *handles, struct gofer_attr *attrs);
int gofer_stat(struct gofer_client *c, uint64_t h, struct gofer_attr *attr);
/* Opens h with flags (O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC, O_APPEND, O_DIRECTORY; never O_CREAT)
 * and receives a host FD for it. Returns the FD or -errno. */
int gofer_open(struct gofer_client *c, uint64_t h, int flags);
/* Reads the target of symlink h into buf (not NUL-terminated). Returns its length or -errno. */
ssize_t gofer_readlink(struct gofer_client *c, uint64_t h, char *buf, size_t len);

/*
 * Reads entries of directory h starting at cookie off (0 for the start), calling fn for each
 * until fn returns non-zero or the reply's entries are used up. Returns the number of entries
 * passed to fn (0 at the end of the directory) or -errno. The entry for which fn returned
 * non-zero counts as passed; fn runs without the client's lock held. "." and ".." are never
 * listed.
 */
int gofer_getdents(struct gofer_client *c, uint64_t h, int64_t off,
		   int (*fn)(void *arg, const struct gofer_dirent *d), void *arg);
/*
 * As gofer_getdents, asking for at most max bytes of encoded entries (gofer_dirent_size() of
 * each; 1..GOFER_GETDENTS_MAX). -EINVAL when the next entry does not fit in max.
 */
int gofer_getdents_max(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
		       int (*fn)(void *arg, const struct gofer_dirent *d), void *arg);
/*
 * As gofer_getdents_max; when eof is not NULL, *eof tells whether the directory was read to its
 * end with this call: the gofer said so (GOFER_GETDENTS_EOF) and every entry of the reply was
 * passed to fn (fn never returned non-zero). A reply with no entry is always the end.
 */
int gofer_getdents_eof(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
		       int (*fn)(void *arg, const struct gofer_dirent *d), void *arg, bool *eof);
/*
 * GETDENTSPLUS: as gofer_getdents_eof, but each entry comes with the attributes of its name
 * (e->flags & GOFER_DIRENT_ATTR; an entry whose name could not be stat'ed has none) and, when
 * flags has GOFER_GETDENTS_DIR_HANDLES, a handle of each subdirectory (e->handle, 0 when the
 * gofer could not make one). fn takes ownership of e->handle; the handles of the entries after
 * the one for which fn returned non-zero are closed here. max counts
 * gofer_dirent_plus_size() of each entry (1..GOFER_GETDENTS_MAX; -EINVAL when the next entry
 * does not fit). Returns the number of entries passed to fn, or -errno.
 */
int gofer_getdents_plus(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
			uint32_t flags, int (*fn)(void *arg, const struct gofer_dirent_plus *e),
			void *arg, bool *eof);
int gofer_statfs(struct gofer_client *c, uint64_t h, struct gofer_statfs *st);
/* Releases handles; batched in one message (GOFER_CLOSE_MAX handles each). Errors are logged,
 * not returned. */
void gofer_close(struct gofer_client *c, const uint64_t *handles, int n);

/*
 * The write messages (gofer/README.md has their wire format). Common rules:
 * - Names are single components, checked as in gofer_walk before anything is sent: -EINVAL for
 *   "", ".", "..", or one holding '/' or NUL; -ENAMETOOLONG past 255 bytes. dir is a handle of
 *   a directory (-ENOTDIR otherwise, -EBADF when unknown).
 * - On a read-only gofer (gofer_mount's GOFER_MOUNT_READONLY) every call that would change the
 *   tree returns -EROFS, whatever its arguments.
 * - The gofer checks no permission of the guest's: the sentry does (mode bits, sticky
 *   directories, ownership), before it calls these.
 * - Calls that make a node (create, mkdir, mknod, symlink, link) give back a new handle of it
 *   in *h (the caller owns it; h may be NULL, the handle is then closed, which costs one more
 *   message) and its attributes in *attr (may be NULL). On failure no node and no handle stay.
 *   The node gets exactly the mode (& 07777), uid and gid asked for: the gofer's umask, the
 *   setgid bit of the parent and its own identity play no part.
 * - Errors are the host's, as the matching system call on the host gives them (-EEXIST,
 *   -ENOENT, -ENOTEMPTY, -EXDEV, -EISDIR, ...), plus -EIO for a malformed reply.
 * - There is no FALLOCATE (nor WRITE, READ, FTRUNCATE) message: data goes through the FDs the
 *   gofer donates (gofer_open, gofer_create), and the sentry calls fallocate(2) or ftruncate(2)
 *   on a donated FD itself; a read-only gofer only ever donates read-only FDs (-EBADF there).
 *   Truncating by path, with no FD open, is gofer_setstat with GOFER_SETSTAT_SIZE.
 */

/*
 * As gofer_walk, but makes no handle: fills attrs[i] (not NULL) for each component reached and
 * returns their number (stopping after a symlink, or before a missing name), or -errno. One
 * round trip, for revalidating cached nodes: n is 0..GOFER_WALK_MAX (-EINVAL past it).
 */
int gofer_walk_stat(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
		    struct gofer_attr *attrs);

/*
 * Changes the attributes of h named in st->mask (struct gofer_setstat in gofer/proto.h: order,
 * UTIME_NOW/UTIME_OMIT). Size: h must be a regular file (-EISDIR for a directory, -EINVAL
 * otherwise). Mode: -EOPNOTSUPP on a symlink (as Linux's fchmodat(AT_SYMLINK_NOFOLLOW)). Owner
 * and times apply to a symlink itself. -EINVAL for an unknown mask bit, mode bits past 07777, a
 * uid or gid of (u32)-1, a negative size or a bad nsec. Returns 0 and, when attr is not NULL,
 * the attributes after the change; or -errno (earlier fields may have been applied).
 */
int gofer_setstat(struct gofer_client *c, uint64_t h, const struct gofer_setstat *st,
		  struct gofer_attr *attr);

/*
 * Creates the regular file name in dir, exclusively (-EEXIST if name exists, even as a dangling
 * symlink: nothing is followed), and opens it with flags (GOFER_CREATE_FLAGS: O_ACCMODE,
 * O_APPEND, O_NONBLOCK, O_DSYNC, O_SYNC, O_DIRECT, and ignored O_TRUNC, O_CLOEXEC, O_NOCTTY,
 * O_LARGEFILE, O_NOFOLLOW, O_NOATIME; O_CREAT and O_EXCL are implied and may be given; anything
 * else -EINVAL). The open FD does not depend on mode: a file created with mode 0 is still
 * opened for writing if asked. Returns the donated host FD (close-on-exec) with *h and *attr,
 * or -errno.
 */
int gofer_create(struct gofer_client *c, uint64_t dir, const char *name, int flags, uint32_t mode,
		 uint32_t uid, uint32_t gid, uint64_t *h, struct gofer_attr *attr);

/* Makes directory name in dir with mode (& 07777), uid and gid. Returns 0 or -errno. */
int gofer_mkdir(struct gofer_client *c, uint64_t dir, const char *name, uint32_t mode, uint32_t uid,
		uint32_t gid, uint64_t *h, struct gofer_attr *attr);

/*
 * Makes a FIFO or a socket node: mode is S_IFIFO or S_IFSOCK with permission bits. Any other
 * type (devices, but also regular files, directories, symlinks) is -EPERM: use gofer_create,
 * gofer_mkdir or gofer_symlink. Returns 0 or -errno.
 */
int gofer_mknod(struct gofer_client *c, uint64_t dir, const char *name, uint32_t mode, uint32_t uid,
		uint32_t gid, uint64_t *h, struct gofer_attr *attr);

/*
 * Makes symlink name in dir pointing to target (NUL-terminated, 1..GOFER_PATH_MAX bytes:
 * -ENOENT if empty, as symlink(2), -ENAMETOOLONG if longer), owned by uid and gid. The target is stored as
 * given; the gofer never follows it. Returns 0 or -errno.
 */
int gofer_symlink(struct gofer_client *c, uint64_t dir, const char *name, const char *target,
		  uint32_t uid, uint32_t gid, uint64_t *h, struct gofer_attr *attr);

/*
 * Makes newname in newdir a hard link to oldname in olddir, as linkat(olddir, oldname, newdir,
 * newname, 0): a symlink oldname is linked itself, not followed; a directory is -EPERM.
 * *attr shows the raised link count. Returns 0 or -errno.
 */
int gofer_link(struct gofer_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
	       const char *newname, uint64_t *h, struct gofer_attr *attr);

/*
 * Removes name from dir, as unlinkat(dir, name, flags): flags is 0 or GOFER_UNLINK_REMOVEDIR
 * (AT_REMOVEDIR: name must be an empty directory). Handles of the removed node stay valid (as
 * open files do on Linux). Returns 0 or -errno.
 */
int gofer_unlink(struct gofer_client *c, uint64_t dir, const char *name, uint32_t flags);

/*
 * Renames oldname in olddir to newname in newdir, as renameat2(): flags is 0,
 * GOFER_RENAME_NOREPLACE or GOFER_RENAME_EXCHANGE (-EINVAL for anything else, RENAME_WHITEOUT
 * included). Handles of the moved nodes stay valid and follow them. Returns 0 or -errno.
 */
int gofer_rename(struct gofer_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
		 const char *newname, uint32_t flags);

/*
 * Flushes h (a regular file or a directory; -EINVAL otherwise) to the host's disk, as fsync, or
 * fdatasync with datasync. Allowed on a read-only gofer. Files the sentry holds a donated FD of
 * can be flushed through that FD instead. Returns 0 or -errno.
 */
int gofer_fsync(struct gofer_client *c, uint64_t h, bool datasync);

/*
 * Extended attributes of h. Only some names are served (gofer/README.md, "Extended
 * attributes"): user.* on regular files and directories, and security.capability read-only.
 * Others are invisible: getxattr -ENODATA, setxattr and removexattr -EPERM, absent from
 * listxattr; a name without a known namespace prefix ("user.", "trusted.", "security.",
 * "system.") is -EOPNOTSUPP, one that is just a prefix -EINVAL. Names are NUL-terminated,
 * 1..GOFER_XATTR_NAME_MAX bytes (-ERANGE if empty or longer, as Linux); values and lists at
 * most GOFER_XATTR_SIZE_MAX bytes (-E2BIG past it, where Linux allows 64 KiB).
 */

/*
 * As fgetxattr(2): with size 0 returns the length of the value (buf unused); otherwise copies
 * the value into buf and returns its length, or -ERANGE if it does not fit in size.
 */
ssize_t gofer_getxattr(struct gofer_client *c, uint64_t h, const char *name, void *buf,
		       size_t size);
/* As fsetxattr(2): flags is 0, GOFER_XATTR_CREATE or GOFER_XATTR_REPLACE. Returns 0 or -errno. */
int gofer_setxattr(struct gofer_client *c, uint64_t h, const char *name, const void *value,
		   size_t size, uint32_t flags);
/*
 * As flistxattr(2): the served names, each NUL-terminated, in buf. With size 0 returns the
 * length of the list; otherwise its length, or -ERANGE if it does not fit in size.
 */
ssize_t gofer_listxattr(struct gofer_client *c, uint64_t h, char *buf, size_t size);
/* As fremovexattr(2). Returns 0 or -errno (-ENODATA when absent). */
int gofer_removexattr(struct gofer_client *c, uint64_t h, const char *name);

#endif
