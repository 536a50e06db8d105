/* SPDX-License-Identifier: Apache-2.0 */
/* gofer/proto.c: encoding round trips and rejection of malformed messages. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "gofer/proto.h"

static uint8_t buf[GOFER_MSG_MAX];
static struct gofer_req req, out;
static struct gofer_rep rep, rout;

static struct gofer_attr sample_attr(uint32_t mode, uint64_t ino)
{
	return (struct gofer_attr){ .dev = 0x801,
				    .ino = ino,
				    .nlink = 2,
				    .mode = mode,
				    .uid = 1000,
				    .gid = 100,
				    .rdev = 0,
				    .size = 4096,
				    .blksize = 4096,
				    .blocks = 8,
				    .atime_sec = 1700000000,
				    .mtime_sec = -5,
				    .ctime_sec = 1700000002,
				    .atime_nsec = 1,
				    .mtime_nsec = 999999999,
				    .ctime_nsec = 3 };
}

static void assert_attr_eq(const struct gofer_attr *a, const struct gofer_attr *b)
{
	/* Field by field: the struct has padding. */
	cr_assert_eq(a->dev, b->dev);
	cr_assert_eq(a->ino, b->ino);
	cr_assert_eq(a->nlink, b->nlink);
	cr_assert_eq(a->mode, b->mode);
	cr_assert_eq(a->uid, b->uid);
	cr_assert_eq(a->gid, b->gid);
	cr_assert_eq(a->rdev, b->rdev);
	cr_assert_eq(a->size, b->size);
	cr_assert_eq(a->blksize, b->blksize);
	cr_assert_eq(a->blocks, b->blocks);
	cr_assert_eq(a->atime_sec, b->atime_sec);
	cr_assert_eq(a->mtime_sec, b->mtime_sec);
	cr_assert_eq(a->ctime_sec, b->ctime_sec);
	cr_assert_eq(a->atime_nsec, b->atime_nsec);
	cr_assert_eq(a->mtime_nsec, b->mtime_nsec);
	cr_assert_eq(a->ctime_nsec, b->ctime_nsec);
}

/* Encodes req, decodes it into out; returns the length. */
static size_t req_round_trip(void)
{
	ssize_t n = gofer_req_encode(&req, buf, sizeof(buf));

	cr_assert_gt(n, 0, "encode: %zd", n);
	cr_assert_eq(gofer_get_u32(buf), (uint32_t)n);
	memset(&out, 0xa5, sizeof(out));
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), 0);
	cr_assert_eq(out.type, req.type);
	cr_assert_eq(out.tag, req.tag);
	return (size_t)n;
}

static size_t rep_round_trip(void)
{
	ssize_t n = gofer_rep_encode(&rep, buf, sizeof(buf));

	cr_assert_gt(n, 0, "encode: %zd", n);
	memset(&rout, 0xa5, sizeof(rout));
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), 0);
	cr_assert_eq(rout.type, rep.type);
	cr_assert_eq(rout.tag, rep.tag);
	cr_assert_eq(rout.error, rep.error);
	return (size_t)n;
}

static void walk_req(const char *const *names, uint32_t n)
{
	memset(&req, 0, sizeof(req));
	req.type = GOFER_MSG_WALK;
	req.tag = 9;
	req.walk.dir = 0x100000001ULL;
	req.walk.n = n;
	for (uint32_t i = 0; i < n; i++) {
		req.walk.names[i].name = names[i];
		req.walk.names[i].len = (uint16_t)strlen(names[i]);
	}
}

Test(gofer_proto, mount_request_round_trips)
{
	req = (struct gofer_req){ .type = GOFER_MSG_MOUNT, .tag = 1 };
	req.mount.version = GOFER_PROTO_VERSION;
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 8);
	cr_assert_eq(out.mount.version, GOFER_PROTO_VERSION);
}

Test(gofer_proto, walk_request_round_trips)
{
	static const char *const names[] = { "a", "bb", "name with spaces", "...", ".hidden" };

	walk_req(names, 5);
	req_round_trip();
	cr_assert_eq(out.walk.dir, 0x100000001ULL);
	cr_assert_eq(out.walk.n, 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(out.walk.names[i].len, strlen(names[i]));
		cr_assert_eq(memcmp(out.walk.names[i].name, names[i], strlen(names[i])), 0);
	}
}

Test(gofer_proto, node_requests_round_trip)
{
	static const uint16_t types[] = { GOFER_MSG_STAT, GOFER_MSG_READLINK, GOFER_MSG_STATFS };

	for (size_t i = 0; i < 3; i++) {
		req = (struct gofer_req){ .type = types[i], .tag = 77 + (uint32_t)i };
		req.node.handle = 0xdeadbeef00000007ULL;
		cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 8);
		cr_assert_eq(out.node.handle, 0xdeadbeef00000007ULL);
	}
}

Test(gofer_proto, open_request_round_trips)
{
	req = (struct gofer_req){ .type = GOFER_MSG_OPEN, .tag = 3 };
	req.open.handle = 5;
	req.open.flags = O_RDWR | O_APPEND | O_CLOEXEC | GOFER_O_LARGEFILE;
	req_round_trip();
	cr_assert_eq(out.open.handle, 5);
	cr_assert_eq(out.open.flags, O_RDWR | O_APPEND | O_CLOEXEC | GOFER_O_LARGEFILE);
}

Test(gofer_proto, getdents_request_round_trips)
{
	req = (struct gofer_req){ .type = GOFER_MSG_GETDENTS, .tag = 4 };
	req.getdents.handle = 6;
	req.getdents.cookie = 0x7fffffffffffff00LL;
	req.getdents.max = 100;
	req_round_trip();
	cr_assert_eq(out.getdents.handle, 6);
	cr_assert_eq(out.getdents.cookie, 0x7fffffffffffff00LL);
	cr_assert_eq(out.getdents.max, 100);
}

Test(gofer_proto, close_request_round_trips)
{
	req = (struct gofer_req){ .type = GOFER_MSG_CLOSE, .tag = 5 };
	req.close.n = GOFER_CLOSE_MAX;
	for (uint32_t i = 0; i < GOFER_CLOSE_MAX; i++)
		req.close.handles[i] = ((uint64_t)i << 32) | (i + 1);
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 8 + 8 * GOFER_CLOSE_MAX);
	cr_assert_eq(out.close.n, GOFER_CLOSE_MAX);
	cr_assert_eq(memcmp(out.close.handles, req.close.handles, 8 * GOFER_CLOSE_MAX), 0);
}

Test(gofer_proto, setstat_request_round_trips)
{
	req = (struct gofer_req){ .type = GOFER_MSG_SETSTAT, .tag = 8 };
	req.setstat.handle = 0x200000003ULL;
	req.setstat.st = (struct gofer_setstat){ .mask = GOFER_SETSTAT_ALL,
						 .mode = 04755,
						 .uid = 1000,
						 .gid = 100,
						 .size = 1LL << 40,
						 .atime_sec = -1,
						 .atime_nsec = GOFER_UTIME_NOW,
						 .mtime_sec = 1700000000,
						 .mtime_nsec = 999999999 };
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 56);
	cr_assert_eq(out.setstat.handle, req.setstat.handle);
	cr_assert_eq(out.setstat.st.mask, GOFER_SETSTAT_ALL);
	cr_assert_eq(out.setstat.st.mode, 04755);
	cr_assert_eq(out.setstat.st.uid, 1000);
	cr_assert_eq(out.setstat.st.gid, 100);
	cr_assert_eq(out.setstat.st.size, 1LL << 40);
	cr_assert_eq(out.setstat.st.atime_sec, -1);
	cr_assert_eq(out.setstat.st.atime_nsec, GOFER_UTIME_NOW);
	cr_assert_eq(out.setstat.st.mtime_sec, 1700000000);
	cr_assert_eq(out.setstat.st.mtime_nsec, 999999999);
}

Test(gofer_proto, node_making_requests_round_trip)
{
	static const uint16_t types[] = { GOFER_MSG_CREATE, GOFER_MSG_MKDIR, GOFER_MSG_MKNOD,
					  GOFER_MSG_SYMLINK };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		req = (struct gofer_req){ .type = types[i], .tag = 30 };
		req.mk.dir = 0x100000001ULL;
		req.mk.name = (struct gofer_name){ "new", 3 };
		req.mk.uid = 5;
		req.mk.gid = 6;
		if (types[i] == GOFER_MSG_CREATE)
			req.mk.flags = O_RDWR | O_APPEND;
		if (types[i] == GOFER_MSG_SYMLINK)
			req.mk.target = (struct gofer_name){ "../t", 4 };
		else
			req.mk.mode = types[i] == GOFER_MSG_MKNOD ? S_IFIFO | 0640 : 0640;
		req_round_trip();
		cr_assert_eq(out.mk.dir, req.mk.dir);
		cr_assert_eq(out.mk.flags, req.mk.flags);
		cr_assert_eq(out.mk.mode, req.mk.mode);
		cr_assert_eq(out.mk.uid, 5);
		cr_assert_eq(out.mk.gid, 6);
		cr_assert_eq(out.mk.name.len, 3);
		cr_assert_eq(memcmp(out.mk.name.name, "new", 3), 0);
		cr_assert_eq(out.mk.target.len, req.mk.target.len);
	}
}

Test(gofer_proto, link_rename_unlink_and_fsync_requests_round_trip)
{
	req = (struct gofer_req){ .type = GOFER_MSG_RENAME, .tag = 31 };
	req.link.olddir = 1;
	req.link.newdir = 2;
	req.link.flags = GOFER_RENAME_EXCHANGE;
	req.link.oldname = (struct gofer_name){ "old", 3 };
	req.link.newname = (struct gofer_name){ "newer", 5 };
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 24 + 5 + 7);
	cr_assert_eq(out.link.flags, GOFER_RENAME_EXCHANGE);
	cr_assert_eq(out.link.newdir, 2);
	cr_assert_eq(memcmp(out.link.newname.name, "newer", 5), 0);
	req.type = GOFER_MSG_LINK;
	req.link.flags = 0;
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 16 + 5 + 7);
	cr_assert_eq(out.link.olddir, 1);

	req = (struct gofer_req){ .type = GOFER_MSG_UNLINK, .tag = 32 };
	req.unlink.dir = 7;
	req.unlink.flags = GOFER_UNLINK_REMOVEDIR;
	req.unlink.name = (struct gofer_name){ "gone", 4 };
	req_round_trip();
	cr_assert_eq(out.unlink.flags, GOFER_UNLINK_REMOVEDIR);

	req = (struct gofer_req){ .type = GOFER_MSG_FSYNC, .tag = 33 };
	req.fsync.handle = 9;
	req.fsync.flags = GOFER_FSYNC_DATASYNC;
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 16);
	cr_assert_eq(out.fsync.flags, GOFER_FSYNC_DATASYNC);
}

Test(gofer_proto, xattr_requests_round_trip)
{
	req = (struct gofer_req){ .type = GOFER_MSG_SETXATTR, .tag = 34 };
	req.xattr.handle = 3;
	req.xattr.flags = GOFER_XATTR_CREATE;
	req.xattr.name = (struct gofer_name){ "user.a/b", 8 }; /* '/' is fine in xattr names */
	req.xattr.value = (const uint8_t *)"v\0x";
	req.xattr.size = 3;
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 16 + 10 + 3);
	cr_assert_eq(out.xattr.size, 3);
	cr_assert_eq(memcmp(out.xattr.value, "v\0x", 3), 0);
	cr_assert_eq(out.xattr.flags, GOFER_XATTR_CREATE);

	req = (struct gofer_req){ .type = GOFER_MSG_GETXATTR, .tag = 35 };
	req.xattr.handle = 3;
	req.xattr.size = GOFER_XATTR_SIZE_MAX;
	req.xattr.name = (struct gofer_name){ "user.a", 6 };
	req_round_trip();
	cr_assert_eq(out.xattr.size, GOFER_XATTR_SIZE_MAX);
	req.type = GOFER_MSG_LISTXATTR;
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 16);
	req = (struct gofer_req){ .type = GOFER_MSG_REMOVEXATTR, .tag = 36 };
	req.xattr.handle = 3;
	req.xattr.name = (struct gofer_name){ "user.a", 6 };
	cr_assert_eq(req_round_trip(), GOFER_HDR_SIZE + 16);
}

Test(gofer_proto, write_requests_with_bad_fields_do_not_encode)
{
	/* Each is one field away from valid. */
	req = (struct gofer_req){ .type = GOFER_MSG_SETSTAT };
	req.setstat.st.mask = 0x40;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.setstat.st = (struct gofer_setstat){ .mtime_nsec = GOFER_UTIME_NOW + 1 };
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);

	req = (struct gofer_req){ .type = GOFER_MSG_CREATE };
	req.mk.name = (struct gofer_name){ "x", 1 };
	req.mk.flags = O_RDWR | O_DIRECTORY;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.mk.flags = O_RDWR;
	req.mk.uid = UINT32_MAX;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.mk.uid = 0;
	req.mk.name = (struct gofer_name){ "..", 2 };
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);

	req = (struct gofer_req){ .type = GOFER_MSG_MKDIR };
	req.mk.name = (struct gofer_name){ "x", 1 };
	req.mk.mode = S_IFDIR | 0755;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.type = GOFER_MSG_MKNOD; /* the S_IFMT bits are MKNOD's */
	cr_assert_gt(gofer_req_encode(&req, buf, sizeof(buf)), 0);

	req = (struct gofer_req){ .type = GOFER_MSG_SYMLINK };
	req.mk.name = (struct gofer_name){ "x", 1 };
	req.mk.target = (struct gofer_name){ "a\0b", 3 };
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);

	req = (struct gofer_req){ .type = GOFER_MSG_RENAME };
	req.link.oldname = (struct gofer_name){ "a", 1 };
	req.link.newname = (struct gofer_name){ "b", 1 };
	req.link.flags = 4; /* RENAME_WHITEOUT */
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.type = GOFER_MSG_LINK;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);

	req = (struct gofer_req){ .type = GOFER_MSG_UNLINK };
	req.unlink.name = (struct gofer_name){ "a", 1 };
	req.unlink.flags = 1;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);

	req = (struct gofer_req){ .type = GOFER_MSG_GETXATTR };
	req.xattr.name = (struct gofer_name){ "user.a", 6 };
	req.xattr.size = GOFER_XATTR_SIZE_MAX + 1;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.xattr.size = 0;
	req.xattr.name = (struct gofer_name){ "user\0a", 6 };
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.type = GOFER_MSG_SETXATTR;
	req.xattr.name = (struct gofer_name){ "user.a", 6 };
	req.xattr.flags = 4;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
}

Test(gofer_proto, write_requests_with_bad_fields_do_not_decode)
{
	ssize_t n;

	/* Encode a valid request, then patch one field in the bytes. */
	req = (struct gofer_req){ .type = GOFER_MSG_MKDIR, .tag = 40 };
	req.mk.name = (struct gofer_name){ "x", 1 };
	req.mk.mode = 0755;
	n = gofer_req_encode(&req, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 20, 1); /* the padding */
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 20, 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, S_IFDIR | 0755);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 0755);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), 0);
	buf[GOFER_HDR_SIZE + 26] = '/';
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);

	/* A SETXATTR whose value length runs past the packet. */
	req = (struct gofer_req){ .type = GOFER_MSG_SETXATTR, .tag = 41 };
	req.xattr.name = (struct gofer_name){ "user.a", 6 };
	req.xattr.value = (const uint8_t *)"abc";
	req.xattr.size = 3;
	n = gofer_req_encode(&req, buf, sizeof(buf));
	gofer_put_u32(buf + GOFER_HDR_SIZE + 12, 4);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 12, 2);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);

	/* A SYMLINK whose target holds a NUL. */
	req = (struct gofer_req){ .type = GOFER_MSG_SYMLINK, .tag = 42 };
	req.mk.name = (struct gofer_name){ "x", 1 };
	req.mk.target = (struct gofer_name){ "abc", 3 };
	n = gofer_req_encode(&req, buf, sizeof(buf));
	buf[n - 2] = '\0';
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
}

Test(gofer_proto, node_replies_round_trip_and_must_be_of_the_type_made)
{
	static const struct {
		uint16_t type;
		uint32_t good, bad;
	} cases[] = {
		{ GOFER_MSG_CREATE, S_IFREG, S_IFDIR },	 { GOFER_MSG_MKDIR, S_IFDIR, S_IFREG },
		{ GOFER_MSG_MKNOD, S_IFIFO, S_IFCHR },	 { GOFER_MSG_MKNOD, S_IFSOCK, S_IFBLK },
		{ GOFER_MSG_SYMLINK, S_IFLNK, S_IFREG }, { GOFER_MSG_LINK, S_IFREG, S_IFDIR },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rep = (struct gofer_rep){ .type = cases[i].type, .tag = 50 };
		rep.node.handle = 0x300000004ULL;
		rep.node.attr = sample_attr(cases[i].good | 0644, 77);
		cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + GOFER_ATTR_SIZE);
		cr_assert_eq(rout.node.handle, rep.node.handle);
		assert_attr_eq(&rout.node.attr, &rep.node.attr);
		/* The wrong type: refused both ways. */
		rep.node.attr.mode = cases[i].bad | 0644;
		cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL, "case %zu", i);
		gofer_put_u32(buf + GOFER_HDR_SIZE + 8 + 24, cases[i].bad | 0644);
		cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE + 8 + GOFER_ATTR_SIZE, &rout),
			     -EINVAL, "case %zu", i);
		/* A zero handle. */
		rep.node.attr.mode = cases[i].good | 0644;
		rep.node.handle = 0;
		cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	}
}

Test(gofer_proto, walkstat_and_setstat_replies_round_trip)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_WALKSTAT, .tag = 51 };
	rep.walkstat.n = 2;
	rep.walkstat.flags = GOFER_WALK_ENOENT;
	rep.walkstat.attrs[0] = sample_attr(S_IFDIR | 0755, 1);
	rep.walkstat.attrs[1] = sample_attr(S_IFDIR | 0700, 2);
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + 2 * GOFER_ATTR_SIZE);
	cr_assert_eq(rout.walkstat.n, 2);
	cr_assert_eq(rout.walkstat.flags, GOFER_WALK_ENOENT);
	assert_attr_eq(&rout.walkstat.attrs[1], &rep.walkstat.attrs[1]);
	/* A walk goes on only through directories. */
	rep.walkstat.attrs[0] = sample_attr(S_IFREG | 0755, 1);
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);

	rep = (struct gofer_rep){ .type = GOFER_MSG_SETSTAT, .tag = 52 };
	rep.stat = sample_attr(S_IFREG | 04755, 9);
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + GOFER_ATTR_SIZE);
	assert_attr_eq(&rout.stat, &rep.stat);
}

Test(gofer_proto, xattr_replies_carry_a_length_and_maybe_the_bytes)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_GETXATTR, .tag = 53 };
	rep.xattr.len = 60000;
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8);
	cr_assert_eq(rout.xattr.len, 60000);
	cr_assert_null(rout.xattr.data);
	rep.xattr.len = 3;
	rep.xattr.data = (const uint8_t *)"a\0b";
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + 3);
	cr_assert_eq(memcmp(rout.xattr.data, "a\0b", 3), 0);
	/* Bytes that are not the length announced. */
	gofer_put_u32(buf + GOFER_HDR_SIZE, 2);
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE + 8 + 3, &rout), -EINVAL);
	/* A length past what Linux can have. */
	rep.xattr.data = NULL;
	rep.xattr.len = 65537;
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);

	rep = (struct gofer_rep){ .type = GOFER_MSG_LISTXATTR, .tag = 54 };
	rep.xattr.len = 14;
	rep.xattr.data = (const uint8_t *)"user.a\0user.b";
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + 14);
	/* A list must be NUL-terminated names, none empty. */
	rep.xattr.len = 13;
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	rep.xattr.len = 8;
	rep.xattr.data = (const uint8_t *)"user.a\0\0";
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
}

Test(gofer_proto, empty_write_replies_round_trip)
{
	static const uint16_t types[] = { GOFER_MSG_UNLINK, GOFER_MSG_RENAME, GOFER_MSG_FSYNC,
					  GOFER_MSG_SETXATTR, GOFER_MSG_REMOVEXATTR };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		rep = (struct gofer_rep){ .type = types[i], .tag = 55 };
		cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE);
		/* A body where none belongs. */
		gofer_put_u32(buf, GOFER_HDR_SIZE + 4);
		cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE + 4, &rout), -EINVAL);
	}
}

Test(gofer_proto, mount_reply_round_trips)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_MOUNT, .tag = 1 };
	rep.mount.root = 0x100000001ULL;
	rep.mount.flags = GOFER_MOUNT_READONLY;
	rep.mount.attr = sample_attr(S_IFDIR | 0755, 2);
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 16 + GOFER_ATTR_SIZE);
	cr_assert_eq(rout.mount.root, 0x100000001ULL);
	cr_assert_eq(rout.mount.flags, GOFER_MOUNT_READONLY);
	assert_attr_eq(&rout.mount.attr, &rep.mount.attr);
}

Test(gofer_proto, walk_reply_round_trips)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_WALK, .tag = 2 };
	rep.walk.n = 3;
	rep.walk.entries[0] = (struct gofer_walk_entry){ 11, sample_attr(S_IFDIR | 0755, 11) };
	rep.walk.entries[1] = (struct gofer_walk_entry){ 12, sample_attr(S_IFDIR | 0700, 12) };
	rep.walk.entries[2] = (struct gofer_walk_entry){ 13, sample_attr(S_IFLNK | 0777, 13) };
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + 3 * GOFER_WALK_ENTRY_SIZE);
	cr_assert_eq(rout.walk.n, 3);
	cr_assert_eq(rout.walk.flags, 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rout.walk.entries[i].handle, rep.walk.entries[i].handle);
		assert_attr_eq(&rout.walk.entries[i].attr, &rep.walk.entries[i].attr);
	}
}

Test(gofer_proto, walk_reply_with_missing_first_name_round_trips)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_WALK, .tag = 2 };
	rep.walk.flags = GOFER_WALK_ENOENT;
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8);
	cr_assert_eq(rout.walk.n, 0);
	cr_assert_eq(rout.walk.flags, GOFER_WALK_ENOENT);
}

Test(gofer_proto, stat_and_statfs_replies_round_trip)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_STAT, .tag = 3 };
	rep.stat = sample_attr(S_IFREG | 04755, 99);
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + GOFER_ATTR_SIZE);
	assert_attr_eq(&rout.stat, &rep.stat);

	rep = (struct gofer_rep){ .type = GOFER_MSG_STATFS, .tag = 4 };
	rep.statfs = (struct gofer_statfs){ 0xef53, 4096, 1, 2, 3, 4, 5, 255, 4096, 0x20 };
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + GOFER_STATFS_SIZE);
	cr_assert_eq(memcmp(&rout.statfs, &rep.statfs, sizeof(rep.statfs)), 0);
}

Test(gofer_proto, readlink_reply_round_trips)
{
	static char target[GOFER_PATH_MAX];

	memset(target, 'x', sizeof(target));
	target[1] = '/';
	rep = (struct gofer_rep){ .type = GOFER_MSG_READLINK, .tag = 5 };
	rep.readlink.target = target;
	rep.readlink.len = GOFER_PATH_MAX;
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 2 + GOFER_PATH_MAX);
	cr_assert_eq(rout.readlink.len, GOFER_PATH_MAX);
	cr_assert_eq(memcmp(rout.readlink.target, target, GOFER_PATH_MAX), 0);
}

Test(gofer_proto, getdents_reply_round_trips)
{
	static const char *const names[] = { "one", "two2", "a-much-longer-name.txt" };
	static uint8_t raw[256];
	struct gofer_dirent d;
	size_t size = 0, pos = 0;

	for (int i = 0; i < 3; i++) {
		d = (struct gofer_dirent){ .ino = 100 + (uint64_t)i,
					   .next = 1000 * (i + 1),
					   .type = 8,
					   .namelen = (uint16_t)strlen(names[i]),
					   .name = names[i] };
		int n = gofer_dirent_encode(&d, raw + size, sizeof(raw) - size);

		cr_assert_eq(n, (int)gofer_dirent_size(strlen(names[i])));
		size += (size_t)n;
	}
	rep = (struct gofer_rep){ .type = GOFER_MSG_GETDENTS, .tag = 6 };
	rep.getdents.n = 3;
	rep.getdents.raw = raw;
	rep.getdents.size = size;
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + size);
	cr_assert_eq(rout.getdents.n, 3);
	cr_assert_eq(rout.getdents.size, size);
	for (int i = 0; i < 3; i++) {
		int n = gofer_dirent_decode(rout.getdents.raw + pos, rout.getdents.size - pos, &d);

		cr_assert_gt(n, 0);
		pos += (size_t)n;
		cr_assert_eq(d.ino, 100 + (uint64_t)i);
		cr_assert_eq(d.next, 1000 * (i + 1));
		cr_assert_eq(d.type, 8);
		cr_assert_eq(d.namelen, strlen(names[i]));
		cr_assert_eq(memcmp(d.name, names[i], d.namelen), 0);
	}
}

Test(gofer_proto, empty_and_error_replies_round_trip)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_OPEN, .tag = 7 };
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE);
	rep = (struct gofer_rep){ .type = GOFER_MSG_CLOSE, .tag = 8 };
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE);
	rep = (struct gofer_rep){ .type = GOFER_MSG_WALK, .tag = 9, .error = ENOTDIR };
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE);
	cr_assert_eq(gofer_rep_error(buf, GOFER_MSG_MKDIR, 10, ENOSYS), GOFER_HDR_SIZE);
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE, &rout), 0);
	cr_assert_eq(rout.type, GOFER_MSG_MKDIR);
	cr_assert_eq(rout.error, ENOSYS);
}

Test(gofer_proto, name_check_accepts_single_components)
{
	char longest[GOFER_NAME_MAX];

	memset(longest, 'n', sizeof(longest));
	cr_assert_eq(gofer_name_check("a", 1), 0);
	cr_assert_eq(gofer_name_check("...", 3), 0);
	cr_assert_eq(gofer_name_check(".a", 2), 0);
	cr_assert_eq(gofer_name_check("..a", 3), 0);
	cr_assert_eq(gofer_name_check(longest, sizeof(longest)), 0);
}

Test(gofer_proto, name_check_rejects_non_components)
{
	char toolong[GOFER_NAME_MAX + 1];

	memset(toolong, 'n', sizeof(toolong));
	cr_assert_eq(gofer_name_check("", 0), -EINVAL);
	cr_assert_eq(gofer_name_check(".", 1), -EINVAL);
	cr_assert_eq(gofer_name_check("..", 2), -EINVAL);
	cr_assert_eq(gofer_name_check("a/b", 3), -EINVAL);
	cr_assert_eq(gofer_name_check("/", 1), -EINVAL);
	cr_assert_eq(gofer_name_check("a\0b", 3), -EINVAL);
	cr_assert_eq(gofer_name_check(toolong, sizeof(toolong)), -EINVAL);
}

/* Builds a WALK request by hand with one raw name, bypassing the encoder's checks. */
static size_t raw_walk(const char *name, size_t len)
{
	size_t n = GOFER_HDR_SIZE + 12 + 2 + len;
	struct gofer_hdr h = { .len = (uint32_t)n, .type = GOFER_MSG_WALK, .tag = 1 };

	gofer_hdr_encode(buf, &h);
	gofer_put_u64(buf + GOFER_HDR_SIZE, 1);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 1);
	gofer_put_u16(buf + GOFER_HDR_SIZE + 12, (uint16_t)len);
	memcpy(buf + GOFER_HDR_SIZE + 14, name, len);
	return n;
}

Test(gofer_proto, walk_decode_rejects_hostile_names)
{
	static const struct {
		const char *name;
		size_t len;
	} bad[] = { { "", 0 }, { ".", 1 }, { "..", 2 }, { "a/b", 3 }, { "a\0b", 3 } };
	char toolong[GOFER_NAME_MAX + 1];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = raw_walk(bad[i].name, bad[i].len);

		cr_assert_eq(gofer_req_decode(buf, n, &out), -EINVAL, "name %zu accepted", i);
	}
	memset(toolong, 'n', sizeof(toolong));
	cr_assert_eq(gofer_req_decode(buf, raw_walk(toolong, sizeof(toolong)), &out), -EINVAL);
	/* The same builder with a good name is accepted: the rejections are the names'. */
	cr_assert_eq(gofer_req_decode(buf, raw_walk("ok", 2), &out), 0);
}

Test(gofer_proto, walk_encode_rejects_hostile_names)
{
	static const char *const dotdot[] = { ".." };
	static const char *const slash[] = { "a/b" };

	walk_req(dotdot, 1);
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	walk_req(slash, 1);
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
}

Test(gofer_proto, short_header_is_einval)
{
	struct gofer_hdr h;

	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 1 };
	cr_assert_gt(gofer_req_encode(&req, buf, sizeof(buf)), 0);
	for (size_t n = 0; n < GOFER_HDR_SIZE; n++) {
		cr_assert_eq(gofer_hdr_decode(buf, n, &h), -EINVAL);
		cr_assert_eq(gofer_req_decode(buf, n, &out), -EINVAL);
		cr_assert_eq(gofer_rep_decode(buf, n, &rout), -EINVAL);
	}
}

Test(gofer_proto, length_disagreeing_with_packet_is_einval)
{
	ssize_t n;

	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 1 };
	n = gofer_req_encode(&req, buf, sizeof(buf));
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), 0);
	/* Packet shorter and longer than the header says. */
	cr_assert_eq(gofer_req_decode(buf, (size_t)n - 1, &out), -EINVAL);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n + 1, &out), -EINVAL);
	/* Header saying shorter or longer than the packet. */
	gofer_put_u32(buf, (uint32_t)n - 1);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf, (uint32_t)n + 8);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* The length is right but the body is not a STAT body. */
	gofer_put_u32(buf, (uint32_t)n + 8);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n + 8, &out), -EINVAL);
}

Test(gofer_proto, oversized_message_is_einval)
{
	struct gofer_hdr h;

	gofer_put_u32(buf, GOFER_MSG_MAX + 1);
	cr_assert_eq(gofer_hdr_decode(buf, GOFER_MSG_MAX + 1, &h), -EINVAL);
}

Test(gofer_proto, counts_past_the_buffer_are_einval)
{
	static const char *const names[] = { "a", "b" };
	ssize_t n;

	/* WALK claiming 3 names with 2 present, then more than the maximum. */
	walk_req(names, 2);
	n = gofer_req_encode(&req, buf, sizeof(buf));
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 3);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 0xffffffff);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 0);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* A name length running past the packet. */
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 2);
	gofer_put_u16(buf + GOFER_HDR_SIZE + 12, 200);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);

	/* CLOSE claiming more handles than it carries. */
	req = (struct gofer_req){ .type = GOFER_MSG_CLOSE, .tag = 2 };
	req.close.n = 2;
	n = gofer_req_encode(&req, buf, sizeof(buf));
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE, 3);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE, GOFER_CLOSE_MAX + 1);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
}

Test(gofer_proto, reply_counts_past_the_buffer_are_einval)
{
	ssize_t n;

	rep = (struct gofer_rep){ .type = GOFER_MSG_WALK, .tag = 2 };
	rep.walk.n = 1;
	rep.walk.entries[0] = (struct gofer_walk_entry){ 11, sample_attr(S_IFDIR | 0755, 11) };
	n = gofer_rep_encode(&rep, buf, sizeof(buf));
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE, 2);
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE, GOFER_WALK_MAX + 1);
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);

	rep = (struct gofer_rep){ .type = GOFER_MSG_READLINK, .tag = 3 };
	rep.readlink.target = "abc";
	rep.readlink.len = 3;
	n = gofer_rep_encode(&rep, buf, sizeof(buf));
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), 0);
	gofer_put_u16(buf + GOFER_HDR_SIZE, 4);
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);
}

Test(gofer_proto, request_fields_out_of_range_are_einval)
{
	ssize_t n;

	/* A request with the reply bit, or with an error. */
	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 1 };
	n = gofer_req_encode(&req, buf, sizeof(buf));
	gofer_put_u16(buf + 4, GOFER_MSG_STAT | GOFER_REPLY);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u16(buf + 4, GOFER_MSG_STAT);
	gofer_put_u32(buf + 12, 5);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* Non-zero header flags. */
	gofer_put_u32(buf + 12, 0);
	gofer_put_u16(buf + 6, 1);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* Unknown types. */
	gofer_put_u16(buf + 6, 0);
	gofer_put_u16(buf + 4, 0);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u16(buf + 4, GOFER_MSG_TYPE_END);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* OPEN with O_CREAT, O_PATH or access mode 3. */
	req = (struct gofer_req){ .type = GOFER_MSG_OPEN, .tag = 1 };
	req.open.flags = O_RDONLY | O_CREAT;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.open.flags = O_RDONLY;
	n = gofer_req_encode(&req, buf, sizeof(buf));
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, O_RDONLY | O_CREAT);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, O_PATH);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, 3);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* Non-zero padding. */
	gofer_put_u32(buf + GOFER_HDR_SIZE + 8, O_RDONLY);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 12, 1);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
	/* GETDENTS asking for nothing. */
	req = (struct gofer_req){ .type = GOFER_MSG_GETDENTS, .tag = 1 };
	req.getdents.max = 1;
	n = gofer_req_encode(&req, buf, sizeof(buf));
	gofer_put_u32(buf + GOFER_HDR_SIZE + 16, 0);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
}

Test(gofer_proto, malformed_replies_are_einval)
{
	static const char *const bad_names[] = { ".", "..", "a/b" };
	uint8_t raw[64];
	struct gofer_dirent d = { .ino = 1, .next = 2, .type = 8, .namelen = 1, .name = "x" };
	ssize_t n;

	/* Not a reply. */
	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 1 };
	n = gofer_req_encode(&req, buf, sizeof(buf));
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);
	/* An error with a body; an error past 4095. */
	gofer_rep_error(buf, GOFER_MSG_STAT, 1, EIO);
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE, &rout), 0);
	gofer_put_u32(buf, GOFER_HDR_SIZE + 8);
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE + 8, &rout), -EINVAL);
	gofer_rep_error(buf, GOFER_MSG_STAT, 1, 4096);
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE, &rout), -EINVAL);
	/* Attributes with an unknown file type, or nanoseconds past a second. */
	rep = (struct gofer_rep){ .type = GOFER_MSG_STAT, .tag = 1 };
	rep.stat = sample_attr(S_IFREG | 0644, 1);
	n = gofer_rep_encode(&rep, buf, sizeof(buf));
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE + 24, 0170000 | 0644);
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);
	rep.stat.mtime_nsec = 1000000000;
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	/* A success reply to a reserved type. */
	gofer_rep_error(buf, GOFER_MSG_MKDIR, 1, 0);
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE, &rout), -EINVAL);
	/* A zero handle; a walk that goes on past a non-directory. */
	rep = (struct gofer_rep){ .type = GOFER_MSG_WALK, .tag = 1 };
	rep.walk.n = 2;
	rep.walk.entries[0] = (struct gofer_walk_entry){ 0, sample_attr(S_IFDIR | 0755, 1) };
	rep.walk.entries[1] = (struct gofer_walk_entry){ 2, sample_attr(S_IFREG | 0644, 2) };
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	rep.walk.entries[0] = (struct gofer_walk_entry){ 1, sample_attr(S_IFREG | 0644, 1) };
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	/* Dirents with bad names, and a count that disagrees with the bytes. */
	for (size_t i = 0; i < 3; i++) {
		d.name = bad_names[i];
		d.namelen = (uint16_t)strlen(bad_names[i]);
		cr_assert_eq(gofer_dirent_encode(&d, raw, sizeof(raw)), -EINVAL);
	}
	d.name = "x";
	d.namelen = 1;
	rep = (struct gofer_rep){ .type = GOFER_MSG_GETDENTS, .tag = 1 };
	rep.getdents.n = 1;
	rep.getdents.raw = raw;
	rep.getdents.size = (size_t)gofer_dirent_encode(&d, raw, sizeof(raw));
	n = gofer_rep_encode(&rep, buf, sizeof(buf));
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), 0);
	gofer_put_u32(buf + GOFER_HDR_SIZE, 2);
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);
	gofer_put_u32(buf + GOFER_HDR_SIZE, 1);
	buf[GOFER_HDR_SIZE + 8 + 20] = '/';
	cr_assert_eq(gofer_rep_decode(buf, (size_t)n, &rout), -EINVAL);
	/* An empty symlink target, and one holding a NUL. */
	rep = (struct gofer_rep){ .type = GOFER_MSG_READLINK, .tag = 1 };
	rep.readlink.target = "";
	rep.readlink.len = 0;
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	rep.readlink.target = "a\0b";
	rep.readlink.len = 3;
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
}

Test(gofer_proto, encode_into_a_small_buffer_is_emsgsize)
{
	static const char *const names[] = { "abc" };

	walk_req(names, 1);
	cr_assert_eq(gofer_req_encode(&req, buf, GOFER_HDR_SIZE + 12), -EMSGSIZE);
	cr_assert_eq(gofer_req_encode(&req, buf, 4), -EMSGSIZE);
}

/* --- GETDENTS end mark and GETDENTSPLUS --- */

Test(gofer_proto, getdents_reply_carries_the_end_mark)
{
	rep = (struct gofer_rep){ .type = GOFER_MSG_GETDENTS, .tag = 7 };
	rep.getdents.flags = GOFER_GETDENTS_EOF;
	rep_round_trip();
	cr_assert_eq(rout.getdents.flags, GOFER_GETDENTS_EOF);
	rep.getdents.flags = 0x2;
	cr_assert_eq(gofer_rep_encode(&rep, buf, sizeof(buf)), -EINVAL);
	rep.getdents.flags = GOFER_GETDENTS_EOF;
	cr_assert_gt(gofer_rep_encode(&rep, buf, sizeof(buf)), 0);
	buf[GOFER_HDR_SIZE + 4] = 0x2; /* an unknown reply flag */
	cr_assert_eq(gofer_rep_decode(buf, GOFER_HDR_SIZE + 8, &rout), -EINVAL);
}

Test(gofer_proto, getdents_request_flags_are_getdentsplus_only)
{
	req = (struct gofer_req){ .type = GOFER_MSG_GETDENTSPLUS, .tag = 8 };
	req.getdents.handle = 5;
	req.getdents.max = 100;
	req.getdents.flags = GOFER_GETDENTS_DIR_HANDLES;
	req_round_trip();
	cr_assert_eq(out.getdents.flags, GOFER_GETDENTS_DIR_HANDLES);
	cr_assert_eq(out.getdents.max, 100);
	req.getdents.flags = 0x2;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	req.type = GOFER_MSG_GETDENTS;
	req.getdents.flags = GOFER_GETDENTS_DIR_HANDLES;
	cr_assert_eq(gofer_req_encode(&req, buf, sizeof(buf)), -EINVAL);
	/* The same bytes as a GETDENTS: its padding must stay 0. */
	req.type = GOFER_MSG_GETDENTSPLUS;
	ssize_t n = gofer_req_encode(&req, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	gofer_put_u16(buf + 4, GOFER_MSG_GETDENTS);
	cr_assert_eq(gofer_req_decode(buf, (size_t)n, &out), -EINVAL);
}

static struct gofer_dirent_plus plus_entry(const char *name, uint32_t mode, uint64_t handle)
{
	struct gofer_dirent_plus e = { .handle = handle, .flags = GOFER_DIRENT_ATTR };

	e.attr = sample_attr(mode, 77);
	e.d = (struct gofer_dirent){ .ino = 77,
				     .next = 4242,
				     .type = (uint8_t)((mode & S_IFMT) >> 12),
				     .namelen = (uint16_t)strlen(name),
				     .name = name };
	return e;
}

Test(gofer_proto, getdentsplus_reply_round_trips)
{
	static uint8_t raw[1024];
	struct gofer_dirent_plus in[3], e;
	size_t size = 0, pos = 0;

	in[0] = plus_entry("dir", S_IFDIR | 0755, 0x100000009ULL);
	in[1] = plus_entry("link", S_IFLNK | 0777, 0);
	in[2] = (struct gofer_dirent_plus){
		.d = { .ino = 9, .next = 5, .type = DT_UNKNOWN, .namelen = 4, .name = "gone" }
	};
	for (int i = 0; i < 3; i++) {
		int n = gofer_dirent_plus_encode(&in[i], raw + size, sizeof(raw) - size);

		cr_assert_eq(n, (int)gofer_dirent_plus_size(in[i].d.namelen));
		size += (size_t)n;
	}
	rep = (struct gofer_rep){ .type = GOFER_MSG_GETDENTSPLUS, .tag = 9 };
	rep.getdents.n = 3;
	rep.getdents.flags = GOFER_GETDENTS_EOF;
	rep.getdents.raw = raw;
	rep.getdents.size = size;
	cr_assert_eq(rep_round_trip(), GOFER_HDR_SIZE + 8 + size);
	cr_assert_eq(rout.getdents.flags, GOFER_GETDENTS_EOF);
	for (int i = 0; i < 3; i++) {
		int n = gofer_dirent_plus_decode(rout.getdents.raw + pos, size - pos, &e);

		cr_assert_gt(n, 0);
		pos += (size_t)n;
		cr_assert_eq(e.handle, in[i].handle);
		cr_assert_eq(e.flags, in[i].flags);
		cr_assert_eq(e.d.type, in[i].d.type);
		cr_assert_eq(e.d.namelen, in[i].d.namelen);
		cr_assert_eq(memcmp(e.d.name, in[i].d.name, e.d.namelen), 0);
		assert_attr_eq(&e.attr, &in[i].attr);
	}
}

Test(gofer_proto, getdentsplus_entries_that_disagree_are_einval)
{
	static uint8_t raw[512];
	struct gofer_dirent_plus e, good = plus_entry("x", S_IFREG | 0644, 0), d;
	int n;

	/* A handle is only for a directory with attributes. */
	e = good;
	e.handle = 3;
	cr_assert_eq(gofer_dirent_plus_encode(&e, raw, sizeof(raw)), -EINVAL);
	/* The type is the attributes'. */
	e = good;
	e.d.type = DT_DIR;
	cr_assert_eq(gofer_dirent_plus_encode(&e, raw, sizeof(raw)), -EINVAL);
	/* No attributes: the block is zero. */
	e = good;
	e.flags = 0;
	cr_assert_eq(gofer_dirent_plus_encode(&e, raw, sizeof(raw)), -EINVAL);
	e.flags = 0x4;
	cr_assert_eq(gofer_dirent_plus_encode(&e, raw, sizeof(raw)), -EINVAL);

	/* The same on the decoding side, from a valid encoding altered byte by byte. */
	n = gofer_dirent_plus_encode(&good, raw, sizeof(raw));
	cr_assert_eq(n, (int)gofer_dirent_plus_size(1));
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n, &d), n);
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n - 1, &d), -EINVAL, "truncated");
	raw[0] = 1; /* a handle on a regular file */
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n, &d), -EINVAL);
	raw[0] = 0;
	raw[8] = 0; /* flags: no attributes, yet a non-zero block */
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n, &d), -EINVAL);
	raw[8] = GOFER_DIRENT_ATTR;
	raw[12] = 1; /* padding */
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n, &d), -EINVAL);
	raw[12] = 0;
	raw[16 + GOFER_ATTR_SIZE + 16] = DT_DIR; /* the dirent's type */
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n, &d), -EINVAL);
	raw[16 + GOFER_ATTR_SIZE + 16] = DT_REG;
	cr_assert_eq(gofer_dirent_plus_decode(raw, (size_t)n, &d), n, "restored");
}
