/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Garbage for the gofer's dispatcher: random bytes, then valid messages truncated, extended or
 * with bytes changed (fixed seed). Every one must get a well-formed reply, random bytes an error
 * one, and the server must stay alive and exit 0 when the socket closes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

#define RANDOM_MESSAGES 1500
#define MUTATED_MESSAGES 3000

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void)
{
	/* xorshift64 */
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint8_t msg[GOFER_MSG_MAX + 64];
static uint8_t reply[GOFER_MSG_MAX];

/* Sends msg[0..len) and checks the reply is well-formed; returns it decoded. */
static struct gofer_rep exchange(int sock, size_t len)
{
	struct gofer_rep rep;
	size_t n;
	int fd;

	n = raw_call(sock, msg, len, reply, &fd);
	if (fd >= 0)
		close(fd);
	cr_assert_eq(gofer_rep_decode(reply, n, &rep), 0, "malformed reply to a %zu-byte message",
		     len);
	return rep;
}

/* A valid request of a random type, using handles that exist (the root and a few walked). */
static size_t valid_request(const uint64_t *handles, int nhandles)
{
	static const char *const names[] = { "a", "b", "c", "file", "many", "up_link", "nope" };
	struct gofer_req req = { .tag = (uint32_t)next_random() };
	uint64_t h = handles[next_random() % (uint64_t)nhandles];
	const char *nm = names[next_random() % 7];
	ssize_t n;

	req.type = (uint16_t)(1 + next_random() % (GOFER_MSG_TYPE_END - 1));
	switch (req.type) {
	case GOFER_MSG_MOUNT:
		req.mount.version = GOFER_PROTO_VERSION;
		break;
	case GOFER_MSG_WALK:
		req.walk.dir = h;
		req.walk.n = 1 + (uint32_t)(next_random() % 3);
		for (uint32_t i = 0; i < req.walk.n; i++) {
			const char *name = names[next_random() % 7];

			req.walk.names[i] = (struct gofer_name){ name, (uint16_t)strlen(name) };
		}
		break;
	case GOFER_MSG_OPEN:
		req.open.handle = h;
		req.open.flags = (uint32_t)(next_random() % 3);
		break;
	case GOFER_MSG_GETDENTS:
	case GOFER_MSG_GETDENTSPLUS:
		req.getdents.handle = h;
		req.getdents.max = 1 + (uint32_t)(next_random() % 512);
		if (req.type == GOFER_MSG_GETDENTSPLUS)
			req.getdents.flags = (uint32_t)(next_random() % 2);
		break;
	case GOFER_MSG_CLOSE:
		/* Closing would leave the rest of the run without handles: ask for a bad one. */
		req.close.n = 1;
		req.close.handles[0] = h + 0x10000;
		break;
	case GOFER_MSG_WALKSTAT:
		req.walk.dir = h;
		req.walk.n = 1;
		req.walk.names[0] = (struct gofer_name){ nm, (uint16_t)strlen(nm) };
		break;
	case GOFER_MSG_SETSTAT:
		req.setstat.handle = h;
		req.setstat.st.mask = (uint32_t)(next_random() % (GOFER_SETSTAT_ALL + 1));
		req.setstat.st.mode = (uint32_t)(next_random() % 01000);
		req.setstat.st.uid = (uint32_t)(next_random() % 2000);
		req.setstat.st.gid = (uint32_t)(next_random() % 2000);
		req.setstat.st.size = (int64_t)(next_random() % 100);
		req.setstat.st.atime_nsec = GOFER_UTIME_NOW;
		req.setstat.st.mtime_nsec = (uint32_t)(next_random() % 1000);
		break;
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
		req.mk.dir = h;
		req.mk.name = (struct gofer_name){ nm, (uint16_t)strlen(nm) };
		req.mk.uid = (uint32_t)(next_random() % 2000);
		req.mk.gid = (uint32_t)(next_random() % 2000);
		if (req.type == GOFER_MSG_SYMLINK)
			req.mk.target = (struct gofer_name){ "../../x", 7 };
		else
			req.mk.mode = (uint32_t)(next_random() % 01000);
		if (req.type == GOFER_MSG_MKNOD)
			req.mk.mode |= (next_random() % 2) ? S_IFIFO : S_IFCHR;
		if (req.type == GOFER_MSG_CREATE)
			req.mk.flags = (uint32_t)(next_random() % 3);
		break;
	case GOFER_MSG_LINK:
	case GOFER_MSG_RENAME:
		req.link.olddir = h;
		req.link.newdir = handles[next_random() % (uint64_t)nhandles];
		req.link.oldname = (struct gofer_name){ nm, (uint16_t)strlen(nm) };
		nm = names[next_random() % 7];
		req.link.newname = (struct gofer_name){ nm, (uint16_t)strlen(nm) };
		if (req.type == GOFER_MSG_RENAME)
			req.link.flags = (uint32_t)(next_random() % 3);
		break;
	case GOFER_MSG_UNLINK:
		req.unlink.dir = h;
		req.unlink.name = (struct gofer_name){ nm, (uint16_t)strlen(nm) };
		req.unlink.flags = (next_random() % 2) ? GOFER_UNLINK_REMOVEDIR : 0;
		break;
	case GOFER_MSG_FSYNC:
		req.fsync.handle = h;
		req.fsync.flags = (uint32_t)(next_random() % 2);
		break;
	case GOFER_MSG_GETXATTR:
	case GOFER_MSG_SETXATTR:
	case GOFER_MSG_LISTXATTR:
	case GOFER_MSG_REMOVEXATTR:
		req.xattr.handle = h;
		if (req.type != GOFER_MSG_LISTXATTR)
			req.xattr.name =
				(next_random() % 2) ?
					(struct gofer_name){ "user.k", 6 } :
					(struct gofer_name){ "trusted.overlay.opaque", 22 };
		if (req.type == GOFER_MSG_SETXATTR) {
			req.xattr.value = (const uint8_t *)"value";
			req.xattr.size = (uint32_t)(next_random() % 6);
		} else if (req.type != GOFER_MSG_REMOVEXATTR) {
			req.xattr.size = (uint32_t)(next_random() % 64);
		}
		break;
	default:
		req.node.handle = h;
		break;
	}
	n = gofer_req_encode(&req, msg, sizeof(msg));
	cr_assert_gt(n, 0);
	return (size_t)n;
}

/* Changes a valid message in one of several ways; returns the new length. */
static size_t mutate(size_t len)
{
	size_t pos;

	switch (next_random() % 5) {
	case 0: /* truncate */
		return 1 + next_random() % len;
	case 1: /* flip a few bytes anywhere */
		for (int i = 0; i < 1 + (int)(next_random() % 4); i++)
			msg[next_random() % len] ^= (uint8_t)(1 + next_random() % 255);
		return len;
	case 2: /* flip body bytes and fix the length so the header still parses */
		if (len > GOFER_HDR_SIZE) {
			pos = GOFER_HDR_SIZE + next_random() % (len - GOFER_HDR_SIZE);
			msg[pos] = (uint8_t)next_random();
		}
		return len;
	case 3: /* extend with random bytes, header length updated */
		pos = len;
		len += 1 + next_random() % 64;
		for (size_t i = pos; i < len; i++)
			msg[i] = (uint8_t)next_random();
		gofer_put_u32(msg, (uint32_t)len);
		return len;
	default: /* random counts and lengths in the body */
		if (len >= GOFER_HDR_SIZE + 12)
			gofer_put_u32(msg + GOFER_HDR_SIZE + 8 * (next_random() % 2),
				      (uint32_t)next_random());
		return len;
	}
}

/*
 * Random bytes, then mutated valid messages, to a server in a child over a fresh tree. A
 * writable server gets write messages that succeed now and then (the tree is scratch).
 */
static void garbage_run(bool readonly)
{
	struct gofer_server_config cfg = { .readonly = readonly };
	struct gofer_req req = { .type = GOFER_MSG_MOUNT, .tag = 1 };
	static const char *const walks[][2] = { { "a", "b" }, { "many", NULL }, { "file", NULL } };
	struct gofer_rep rep;
	uint64_t handles[4];
	char dir[64];
	int sock, errors = 0;
	pid_t pid;

	tree_create(dir);
	pid = server_start(dir, &cfg, &sock);
	req.mount.version = GOFER_PROTO_VERSION;
	cr_assert_eq(raw_req(sock, &req, reply, &rep, NULL), 0);
	handles[0] = rep.mount.root;
	for (int i = 0; i < 3; i++) {
		req = (struct gofer_req){ .type = GOFER_MSG_WALK, .tag = 2 };
		req.walk.dir = handles[0];
		req.walk.n = walks[i][1] ? 2 : 1;
		for (uint32_t k = 0; k < req.walk.n; k++)
			req.walk.names[k] =
				(struct gofer_name){ walks[i][k], (uint16_t)strlen(walks[i][k]) };
		cr_assert_eq(raw_req(sock, &req, reply, &rep, NULL), 0);
		handles[1 + i] = rep.walk.entries[rep.walk.n - 1].handle;
	}

	for (int i = 0; i < RANDOM_MESSAGES; i++) {
		/* 1..200 bytes, and now and then more than any message may be. */
		size_t len = i % 100 == 99 ? GOFER_MSG_MAX + 1 + next_random() % 63 :
					     1 + next_random() % 200;

		for (size_t k = 0; k < len; k++)
			msg[k] = (uint8_t)next_random();
		rep = exchange(sock, len);
		cr_assert_neq(rep.error, 0, "random bytes were accepted (message %d)", i);
	}
	for (int i = 0; i < MUTATED_MESSAGES; i++) {
		size_t len = mutate(valid_request(handles, 4));

		rep = exchange(sock, len);
		errors += rep.error != 0;
	}
	cr_assert_gt(errors, MUTATED_MESSAGES / 4, "mutations were mostly accepted: %d errors",
		     errors);

	/* Still serving, and still knowing its handles. */
	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 3 };
	req.node.handle = handles[0];
	cr_assert_eq(raw_req(sock, &req, reply, &rep, NULL), 0);
	close(sock);
	cr_assert_eq(child_wait(pid), 0);
	tree_remove(dir);
}

Test(gofer_garbage, random_and_mutated_messages_get_replies_and_the_server_survives)
{
	garbage_run(true);
}

Test(gofer_garbage, a_writable_server_survives_them_too)
{
	garbage_run(false);
}

Test(gofer_garbage, dispatcher_answers_every_truncation_of_every_valid_message)
{
	struct gofer_server_config cfg = { .readonly = true };
	struct gofer_server *s;
	struct gofer_rep rep;
	uint64_t handles[1];
	char dir[64];
	int fd;

	tree_create(dir);
	cr_assert_eq(gofer_server_create(open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC),
					 open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
					 &cfg, &s),
		     0);
	/* The first MOUNT gets the first slot; its handle is predictable. */
	handles[0] = (1ULL << 32) | 1;
	for (int i = 0; i < 200; i++) {
		size_t len = valid_request(handles, 1);

		for (size_t cut = 0; cut <= len; cut++) {
			size_t n = gofer_server_handle(s, msg, cut, reply, &fd);

			if (fd >= 0)
				close(fd);
			cr_assert_eq(gofer_rep_decode(reply, n, &rep), 0);
			if (cut < len)
				cr_assert_neq(rep.error, 0, "a truncated message was accepted");
		}
	}
	gofer_server_destroy(s);
	tree_remove(dir);
}
