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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gofer_client;

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

/* Takes ownership of sock. Returns 0 and *out or -errno. */
int gofer_client_create(int sock, struct gofer_client **out);
void gofer_client_destroy(struct gofer_client *c);

/* Attaches to the served root. Returns 0 with its handle and attributes, or -errno. */
int gofer_mount(struct gofer_client *c, uint64_t *root, struct gofer_attr *attr);

/*
 * Walks names[0..n) from dir, one component at a time, stopping after a symlink or at the
 * first missing component. Fills handles[i] and attrs[i] for each component reached. Returns
 * the number of components reached (0..n; fewer than n means the next was missing: the
 * caller knows why from that), or -errno for a failure of the walk itself (-ENOTDIR, -EACCES).
 */
int gofer_walk(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
	       uint64_t *handles, struct gofer_attr *attrs);
int gofer_stat(struct gofer_client *c, uint64_t h, struct gofer_attr *attr);
/* Opens h with flags (O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC, O_APPEND, O_DIRECTORY; never O_CREAT)
 * and receives a host FD for it. Returns the FD or -errno. */
int gofer_open(struct gofer_client *c, uint64_t h, int flags);
/* Reads the target of symlink h into buf (not NUL-terminated). Returns its length or -errno. */
ssize_t gofer_readlink(struct gofer_client *c, uint64_t h, char *buf, size_t len);

struct gofer_dirent {
	uint64_t ino;
	int64_t next; /* cookie of the following entry */
	uint8_t type; /* DT_* */
	uint16_t namelen;
	const char *name; /* not NUL-terminated, valid until the next call on c */
};
/*
 * Reads entries of directory h starting at cookie off (0 for the start), calling fn for each
 * until fn returns non-zero or the reply's entries are used up. Returns the number of entries
 * passed to fn (0 at the end of the directory) or -errno.
 */
int gofer_getdents(struct gofer_client *c, uint64_t h, int64_t off,
		   int (*fn)(void *arg, const struct gofer_dirent *d), void *arg);
int gofer_statfs(struct gofer_client *c, uint64_t h, struct gofer_statfs *st);
/* Releases handles; batched in one message. Errors are logged, not returned. */
void gofer_close(struct gofer_client *c, const uint64_t *handles, int n);

#endif
