/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's gofer client against a hostile gofer: a thread answering each request with a
 * reply the test makes up. Malformed replies must give -EIO, and FDs must be accepted only
 * where expected (unexpected ones closed).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gofer/proto.h"
#include "sentry/fs/gofer/client.h"

/* Makes the reply to req into out; returns its length (0: close the connection; EMPTY_REPLY:
 * send a packet of zero bytes, then close it). The FDs in fds[0..*nfds) are sent with it,
 * then closed by the fake gofer. */
#define EMPTY_REPLY ((size_t)-1)
typedef size_t (*responder_fn)(const struct gofer_req *req, uint8_t *out, int *fds, int *nfds);

static responder_fn responder;
static int fake_sock = -1;
static pthread_t fake_thread;
static struct gofer_client *c;
static int requests_seen;

static void send_with_fds(int sock, const uint8_t *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	sendmsg(sock, &m, MSG_NOSIGNAL);
}

static void *fake_gofer(void *arg)
{
	static uint8_t in[GOFER_MSG_MAX], out[GOFER_MSG_MAX];
	static struct gofer_req req;

	(void)arg;
	for (;;) {
		ssize_t n = recv(fake_sock, in, sizeof(in), 0);
		int fds[4], nfds = 0;
		size_t len;

		if (n <= 0)
			break;
		if (gofer_req_decode(in, (size_t)n, &req) < 0)
			break;
		__atomic_add_fetch(&requests_seen, 1, __ATOMIC_SEQ_CST);
		len = responder(&req, out, fds, &nfds);
		if (len == 0)
			break;
		if (len == EMPTY_REPLY) {
			send_with_fds(fake_sock, out, 0, fds, nfds);
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
			break;
		}
		send_with_fds(fake_sock, out, len, fds, nfds);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}
	close(fake_sock);
	return NULL;
}

static void start_fake(responder_fn fn)
{
	int sv[2];

	signal(SIGPIPE, SIG_IGN);
	responder = fn;
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	fake_sock = sv[1];
	cr_assert_eq(gofer_client_create(sv[0], &c), 0);
	cr_assert_eq(pthread_create(&fake_thread, NULL, fake_gofer, NULL), 0);
}

/* Closes the client and waits for the fake gofer to be done (with its copies of FDs closed). */
static void stop_fake(void)
{
	if (!c)
		return;
	gofer_client_destroy(c);
	c = NULL;
	pthread_join(fake_thread, NULL);
}

static struct gofer_attr attr_of(uint32_t mode)
{
	return (struct gofer_attr){ .ino = 7, .nlink = 1, .mode = mode };
}

static size_t encode(const struct gofer_rep *rep, uint8_t *out)
{
	ssize_t n = gofer_rep_encode(rep, out, GOFER_MSG_MAX);

	cr_assert_gt(n, 0);
	return (size_t)n;
}

/* A well-formed answer to each request. */
static size_t good_reply(const struct gofer_req *req, uint8_t *out)
{
	static struct gofer_rep rep;
	static uint8_t raw[64];
	struct gofer_dirent d = { .ino = 3, .next = 1, .type = 8, .namelen = 1, .name = "x" };

	memset(&rep, 0, sizeof(rep));
	rep.type = req->type;
	rep.tag = req->tag;
	switch (req->type) {
	case GOFER_MSG_MOUNT:
		rep.mount.root = 1;
		rep.mount.attr = attr_of(S_IFDIR | 0755);
		break;
	case GOFER_MSG_WALK:
		rep.walk.n = req->walk.n;
		for (uint32_t i = 0; i < req->walk.n; i++)
			rep.walk.entries[i] =
				(struct gofer_walk_entry){ 10 + i, attr_of(S_IFDIR | 0755) };
		break;
	case GOFER_MSG_STAT:
		rep.stat = attr_of(S_IFREG | 0644);
		break;
	case GOFER_MSG_READLINK:
		rep.readlink.target = "target";
		rep.readlink.len = 6;
		break;
	case GOFER_MSG_GETDENTS:
		rep.getdents.n = 1;
		rep.getdents.raw = raw;
		rep.getdents.size = (size_t)gofer_dirent_encode(&d, raw, sizeof(raw));
		break;
	case GOFER_MSG_WALKSTAT:
		rep.walkstat.n = req->walk.n;
		for (uint32_t i = 0; i < req->walk.n; i++)
			rep.walkstat.attrs[i] = attr_of(S_IFDIR | 0755);
		break;
	case GOFER_MSG_SETSTAT:
		rep.stat = attr_of(S_IFREG | 0600);
		break;
	case GOFER_MSG_CREATE:
	case GOFER_MSG_MKDIR:
	case GOFER_MSG_MKNOD:
	case GOFER_MSG_SYMLINK:
	case GOFER_MSG_LINK:
		rep.node.handle = 20;
		rep.node.attr = attr_of(req->type == GOFER_MSG_MKDIR   ? S_IFDIR | 0755 :
					req->type == GOFER_MSG_MKNOD   ? S_IFIFO | 0644 :
					req->type == GOFER_MSG_SYMLINK ? S_IFLNK | 0777 :
									 S_IFREG | 0644);
		break;
	case GOFER_MSG_GETXATTR:
	case GOFER_MSG_LISTXATTR:
		rep.xattr.len = 7;
		if (req->xattr.size)
			rep.xattr.data = (const uint8_t *)"user.v";
		break;
	default:
		break;
	}
	return encode(&rep, out);
}

#define RESPONDER(name) \
	static size_t name(const struct gofer_req *req, uint8_t *out, int *fds, int *nfds)

RESPONDER(good)
{
	return good_reply(req, out);
}

Test(gofer_client, well_formed_replies_are_accepted, .fini = stop_fake)
{
	static const char *const names[] = { "a", "b" };
	struct gofer_attr attr, attrs[2];
	uint64_t root, h[2];
	char buf[16];

	start_fake(good);
	cr_assert_eq(gofer_mount(c, &root, &attr), 0);
	cr_assert_eq(root, 1);
	cr_assert_eq(gofer_walk(c, root, names, 2, h, attrs), 2);
	cr_assert_eq(h[1], 11);
	cr_assert(S_ISDIR(attrs[1].mode));
	cr_assert_eq(gofer_stat(c, h[1], &attr), 0);
	cr_assert(S_ISREG(attr.mode));
	cr_assert_eq(gofer_readlink(c, h[1], buf, sizeof(buf)), 6);
	cr_assert_eq(memcmp(buf, "target", 6), 0);
}

RESPONDER(wrong_tag)
{
	size_t n = good_reply(req, out);

	gofer_put_u32(out + 8, req->tag + 1);
	return n;
}

Test(gofer_client, reply_with_another_tag_is_eio_and_breaks_the_client, .fini = stop_fake)
{
	struct gofer_attr attr;

	start_fake(wrong_tag);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
	cr_assert_eq(requests_seen, 1);
	/* Replies can no longer be matched to requests: nothing more is sent. */
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
	cr_assert_eq(requests_seen, 1);
}

RESPONDER(wrong_type)
{
	struct gofer_rep rep = { .type = GOFER_MSG_OPEN, .tag = req->tag };

	return encode(&rep, out);
}

Test(gofer_client, reply_of_another_type_is_eio, .fini = stop_fake)
{
	struct gofer_attr attr;

	start_fake(wrong_type);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
}

RESPONDER(truncated)
{
	size_t n = good_reply(req, out) - 10;

	gofer_put_u32(out, (uint32_t)n);
	return n;
}

Test(gofer_client, truncated_reply_is_eio, .fini = stop_fake)
{
	struct gofer_attr attr;
	uint64_t root;

	start_fake(truncated);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
	cr_assert_eq(gofer_mount(c, &root, &attr), -EIO);
}

RESPONDER(walk_too_many)
{
	struct gofer_rep rep = { .type = GOFER_MSG_WALK, .tag = req->tag };

	rep.walk.n = req->walk.n + 1;
	for (uint32_t i = 0; i < rep.walk.n; i++)
		rep.walk.entries[i] = (struct gofer_walk_entry){ 10 + i, attr_of(S_IFDIR | 0755) };
	return encode(&rep, out);
}

Test(gofer_client, walk_reply_with_more_components_than_asked_is_eio, .fini = stop_fake)
{
	static const char *const names[] = { "a" };
	uint64_t h[4] = { 0 };

	start_fake(walk_too_many);
	cr_assert_eq(gofer_walk(c, 1, names, 1, h, NULL), -EIO);
}

RESPONDER(walk_short_without_reason)
{
	struct gofer_rep rep = { .type = GOFER_MSG_WALK, .tag = req->tag };

	/* One directory reached of two asked, no ENOENT flag, not a symlink. */
	rep.walk.n = 1;
	rep.walk.entries[0] = (struct gofer_walk_entry){ 10, attr_of(S_IFDIR | 0755) };
	return encode(&rep, out);
}

Test(gofer_client, walk_reply_short_without_a_reason_is_eio, .fini = stop_fake)
{
	static const char *const names[] = { "a", "b" };
	uint64_t h[2];

	start_fake(walk_short_without_reason);
	cr_assert_eq(gofer_walk(c, 1, names, 2, h, NULL), -EIO);
}

RESPONDER(dirent_with_slash)
{
	uint8_t raw[64];
	struct gofer_dirent d = { .ino = 3, .next = 1, .type = 8, .namelen = 3, .name = "a_b" };
	struct gofer_rep rep = { .type = GOFER_MSG_GETDENTS, .tag = req->tag };
	size_t n;

	rep.getdents.n = 1;
	rep.getdents.raw = raw;
	rep.getdents.size = (size_t)gofer_dirent_encode(&d, raw, sizeof(raw));
	n = encode(&rep, out);
	/* The encoder refuses bad names: patch the '_' into a '/'. */
	out[GOFER_HDR_SIZE + 8 + GOFER_DIRENT_HDR_SIZE + 1] = '/';
	return n;
}

static int count_calls(void *arg, const struct gofer_dirent *d)
{
	(*(int *)arg)++;
	return 0;
}

Test(gofer_client, dirent_name_with_a_slash_is_eio_and_never_seen, .fini = stop_fake)
{
	int calls = 0;

	start_fake(dirent_with_slash);
	cr_assert_eq(gofer_getdents(c, 1, 0, count_calls, &calls), -EIO);
	cr_assert_eq(calls, 0);
}

Test(gofer_client, getdents_reply_larger_than_asked_is_eio, .fini = stop_fake)
{
	int calls = 0;

	/* good_reply sends one entry of 21 bytes whatever the max. */
	start_fake(good);
	cr_assert_eq(gofer_getdents_max(c, 1, 0, 20, count_calls, &calls), -EIO);
	cr_assert_eq(calls, 0);
	cr_assert_eq(gofer_getdents_max(c, 1, 0, 21, count_calls, &calls), 1);
	cr_assert_eq(calls, 1);
}

static int pipe_write_end = -1;

/* A STAT reply carrying the read end of a pipe that the client did not ask for. */
RESPONDER(stat_with_fd)
{
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pipe_write_end = p[1];
	fds[0] = p[0];
	*nfds = 1;
	return good_reply(req, out);
}

/* True once no read end of the pipe is left open anywhere. */
static bool pipe_reader_gone(void)
{
	return write(pipe_write_end, "x", 1) < 0 && errno == EPIPE;
}

Test(gofer_client, unexpected_fd_is_closed_and_the_reply_is_eio, .fini = stop_fake)
{
	struct gofer_attr attr;

	start_fake(stat_with_fd);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
	stop_fake();
	cr_assert(pipe_reader_gone(), "the client kept the FD");
	close(pipe_write_end);
}

/* A packet of zero bytes (read as the end of the connection) carrying a pipe's read end. */
RESPONDER(empty_with_fd)
{
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pipe_write_end = p[1];
	fds[0] = p[0];
	*nfds = 1;
	return EMPTY_REPLY;
}

Test(gofer_client, fd_of_an_empty_reply_is_closed_and_the_call_is_eio, .fini = stop_fake)
{
	struct gofer_attr attr;

	start_fake(empty_with_fd);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
	stop_fake();
	cr_assert(pipe_reader_gone(), "the client kept the FD of an empty reply");
	close(pipe_write_end);
}

RESPONDER(open_without_fd)
{
	return good_reply(req, out);
}

Test(gofer_client, open_reply_without_an_fd_is_eio, .fini = stop_fake)
{
	start_fake(open_without_fd);
	cr_assert_eq(gofer_open(c, 1, O_RDONLY), -EIO);
}

static int write_ends[2] = { -1, -1 };

RESPONDER(open_with_two_fds)
{
	for (int i = 0; i < 2; i++) {
		int p[2];

		cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
		write_ends[i] = p[1];
		fds[i] = p[0];
	}
	*nfds = 2;
	return good_reply(req, out);
}

Test(gofer_client, open_reply_with_two_fds_is_eio_and_closes_both, .fini = stop_fake)
{
	start_fake(open_with_two_fds);
	cr_assert_eq(gofer_open(c, 1, O_RDONLY), -EIO);
	stop_fake();
	for (int i = 0; i < 2; i++) {
		pipe_write_end = write_ends[i];
		cr_assert(pipe_reader_gone(), "FD %d was kept", i);
		close(write_ends[i]);
	}
}

RESPONDER(open_with_one_fd)
{
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pipe_write_end = p[1];
	fds[0] = p[0];
	*nfds = 1;
	return good_reply(req, out);
}

Test(gofer_client, open_reply_with_one_fd_donates_it, .fini = stop_fake)
{
	char ch = 0;
	int fd;

	start_fake(open_with_one_fd);
	fd = gofer_open(c, 1, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	cr_assert_eq(write(pipe_write_end, "y", 1), 1);
	cr_assert_eq(read(fd, &ch, 1), 1);
	cr_assert_eq(ch, 'y');
	close(fd);
	close(pipe_write_end);
}

static uint32_t error_to_send;

RESPONDER(error_reply)
{
	return gofer_rep_error(out, req->type, req->tag, (int)error_to_send);
}

Test(gofer_client, gofer_errno_is_passed_through, .fini = stop_fake)
{
	struct gofer_attr attr;

	error_to_send = EACCES;
	start_fake(error_reply);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EACCES);
	error_to_send = ENOENT;
	cr_assert_eq(gofer_open(c, 1, O_RDONLY), -ENOENT);
}

Test(gofer_client, kernel_internal_errno_from_the_gofer_is_eio, .fini = stop_fake)
{
	struct gofer_attr attr;

	/* ERESTARTSYS must never reach a guest. */
	error_to_send = 512;
	start_fake(error_reply);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
}

RESPONDER(hang_up)
{
	return 0;
}

Test(gofer_client, gofer_gone_is_eio, .fini = stop_fake)
{
	struct gofer_attr attr;

	start_fake(hang_up);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
	cr_assert_eq(gofer_stat(c, 1, &attr), -EIO);
}

RESPONDER(mount_of_a_file)
{
	struct gofer_rep rep = { .type = GOFER_MSG_MOUNT, .tag = req->tag };

	rep.mount.root = 1;
	rep.mount.attr = attr_of(S_IFREG | 0644);
	return encode(&rep, out);
}

RESPONDER(mount_of_a_fifo)
{
	struct gofer_rep rep = { .type = GOFER_MSG_MOUNT, .tag = req->tag };

	rep.mount.root = 1;
	rep.mount.attr = attr_of(S_IFIFO | 0644);
	return encode(&rep, out);
}

/* A file bind mount's gofer serves a regular file as its root. */
Test(gofer_client, mount_of_a_regular_file_is_accepted, .fini = stop_fake)
{
	struct gofer_attr attr;
	uint64_t root;

	start_fake(mount_of_a_file);
	cr_assert_eq(gofer_mount(c, &root, &attr), 0);
	cr_assert_eq(root, 1);
	cr_assert(S_ISREG(attr.mode));
}

Test(gofer_client, mount_of_neither_a_directory_nor_a_file_is_eio, .fini = stop_fake)
{
	uint64_t root;

	start_fake(mount_of_a_fifo);
	cr_assert_eq(gofer_mount(c, &root, NULL), -EIO);
}

Test(gofer_client, bad_arguments_are_rejected_before_sending, .fini = stop_fake)
{
	static const char *const dotdot[] = { ".." };
	static const char *const slash[] = { "a/b" };
	uint64_t h;
	char buf[4];
	int calls = 0;

	start_fake(good);
	cr_assert_eq(gofer_walk(c, 1, dotdot, 1, &h, NULL), -EINVAL);
	cr_assert_eq(gofer_walk(c, 1, slash, 1, &h, NULL), -EINVAL);
	cr_assert_eq(gofer_walk(c, 1, slash, -1, &h, NULL), -EINVAL);
	cr_assert_eq(gofer_open(c, 1, O_RDONLY | O_CREAT), -EINVAL);
	cr_assert_eq(gofer_readlink(c, 1, buf, 0), -EINVAL);
	cr_assert_eq(gofer_getdents_max(c, 1, 0, 0, count_calls, &calls), -EINVAL);
	cr_assert_eq(gofer_walk(c, 1, dotdot, 0, &h, NULL), 0);
	cr_assert_eq(requests_seen, 0);
}

/* Write messages. */

static uint64_t closed_handle;

RESPONDER(good_with_create_fd)
{
	if (req->type == GOFER_MSG_CLOSE)
		closed_handle = req->close.handles[0];
	if (req->type == GOFER_MSG_CREATE) {
		int p[2];

		cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
		pipe_write_end = p[1];
		fds[0] = p[0];
		*nfds = 1;
	}
	return good_reply(req, out);
}

Test(gofer_client, well_formed_write_replies_are_accepted, .fini = stop_fake)
{
	static const char *const names[] = { "a", "b" };
	const struct gofer_setstat st = { .mask = GOFER_SETSTAT_MODE, .mode = 0600 };
	struct gofer_attr attr, attrs[2];
	char buf[16];
	uint64_t h = 0;
	int fd;

	start_fake(good_with_create_fd);
	cr_assert_eq(gofer_walk_stat(c, 1, names, 2, attrs), 2);
	cr_assert_eq(gofer_setstat(c, 1, &st, &attr), 0);
	cr_assert_eq(attr.mode, S_IFREG | 0600);
	fd = gofer_create(c, 1, "f", O_RDWR | O_CREAT, 0644, 1, 2, &h, &attr);
	cr_assert_geq(fd, 0);
	cr_assert_eq(h, 20);
	close(fd);
	close(pipe_write_end);
	cr_assert_eq(gofer_mkdir(c, 1, "d", 0755, 1, 2, &h, &attr), 0);
	cr_assert(S_ISDIR(attr.mode));
	cr_assert_eq(gofer_mknod(c, 1, "p", S_IFIFO | 0644, 1, 2, &h, NULL), 0);
	cr_assert_eq(gofer_symlink(c, 1, "l", "t", 1, 2, &h, NULL), 0);
	cr_assert_eq(gofer_link(c, 1, "f", 1, "g", &h, NULL), 0);
	cr_assert_eq(gofer_unlink(c, 1, "g", 0), 0);
	cr_assert_eq(gofer_rename(c, 1, "f", 1, "g", GOFER_RENAME_NOREPLACE), 0);
	cr_assert_eq(gofer_fsync(c, 1, true), 0);
	cr_assert_eq(gofer_getxattr(c, 1, "user.v", NULL, 0), 7);
	cr_assert_eq(gofer_getxattr(c, 1, "user.v", buf, sizeof(buf)), 7);
	cr_assert_eq(gofer_listxattr(c, 1, buf, sizeof(buf)), 7);
	cr_assert_str_eq(buf, "user.v");
	cr_assert_eq(gofer_setxattr(c, 1, "user.v", "x", 1, 0), 0);
	cr_assert_eq(gofer_removexattr(c, 1, "user.v"), 0);
}

Test(gofer_client, a_new_handle_not_wanted_is_closed, .fini = stop_fake)
{
	int seen;

	start_fake(good_with_create_fd);
	cr_assert_eq(gofer_mkdir(c, 1, "d", 0755, 0, 0, NULL, NULL), 0);
	seen = __atomic_load_n(&requests_seen, __ATOMIC_SEQ_CST);
	cr_assert_eq(seen, 2, "MKDIR then CLOSE");
	cr_assert_eq(closed_handle, 20);
}

RESPONDER(create_without_fd)
{
	return good_reply(req, out);
}

Test(gofer_client, create_reply_without_an_fd_is_eio, .fini = stop_fake)
{
	start_fake(create_without_fd);
	cr_assert_eq(gofer_create(c, 1, "f", O_RDWR, 0644, 0, 0, NULL, NULL), -EIO);
}

RESPONDER(mkdir_with_fd)
{
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pipe_write_end = p[1];
	fds[0] = p[0];
	*nfds = 1;
	return good_reply(req, out);
}

Test(gofer_client, mkdir_reply_with_an_fd_is_eio_and_the_fd_closed, .fini = stop_fake)
{
	uint64_t h = 0;

	start_fake(mkdir_with_fd);
	cr_assert_eq(gofer_mkdir(c, 1, "d", 0755, 0, 0, &h, NULL), -EIO);
	cr_assert_eq(h, 0);
	stop_fake();
	cr_assert(pipe_reader_gone(), "the client kept the FD");
	close(pipe_write_end);
}

RESPONDER(create_of_a_directory)
{
	size_t n = good_reply(req, out);

	/* The mode of the node's attributes: header, handle, dev, ino, nlink. */
	if (req->type == GOFER_MSG_CREATE || req->type == GOFER_MSG_MKDIR)
		gofer_put_u32(out + GOFER_HDR_SIZE + 8 + 24,
			      req->type == GOFER_MSG_CREATE ? S_IFDIR | 0755 : S_IFREG | 0644);
	return n;
}

Test(gofer_client, node_reply_of_another_type_than_made_is_eio, .fini = stop_fake)
{
	start_fake(create_of_a_directory);
	cr_assert_eq(gofer_create(c, 1, "f", O_RDWR, 0644, 0, 0, NULL, NULL), -EIO);
	cr_assert_eq(gofer_mkdir(c, 1, "d", 0755, 0, 0, NULL, NULL), -EIO);
}

RESPONDER(xattr_too_long)
{
	static struct gofer_rep rep;

	memset(&rep, 0, sizeof(rep));
	rep.type = req->type;
	rep.tag = req->tag;
	rep.xattr.len = 10;
	rep.xattr.data = (const uint8_t *)"0123456789";
	return encode(&rep, out);
}

Test(gofer_client, xattr_reply_longer_than_asked_is_eio, .fini = stop_fake)
{
	char buf[16];

	start_fake(xattr_too_long);
	cr_assert_eq(gofer_getxattr(c, 1, "user.v", buf, 4), -EIO);
	/* Bytes sent where only the length was asked for. */
	cr_assert_eq(gofer_getxattr(c, 1, "user.v", NULL, 0), -EIO);
	cr_assert_eq(gofer_getxattr(c, 1, "user.v", buf, sizeof(buf)), 10);
}

RESPONDER(walkstat_too_long)
{
	static struct gofer_rep rep;

	memset(&rep, 0, sizeof(rep));
	rep.type = req->type;
	rep.tag = req->tag;
	rep.walkstat.n = req->walk.n + 1;
	for (uint32_t i = 0; i <= req->walk.n; i++)
		rep.walkstat.attrs[i] = attr_of(S_IFDIR | 0755);
	return encode(&rep, out);
}

Test(gofer_client, walkstat_reply_with_more_than_asked_is_eio, .fini = stop_fake)
{
	static const char *const names[] = { "a" };
	struct gofer_attr attrs[2];

	start_fake(walkstat_too_long);
	cr_assert_eq(gofer_walk_stat(c, 1, names, 1, attrs), -EIO);
}

Test(gofer_client, bad_write_arguments_are_rejected_before_sending, .fini = stop_fake)
{
	const struct gofer_setstat st = { .mask = 0x80 };
	char longname[300];
	uint64_t h;

	start_fake(good);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert_eq(gofer_mknod(c, 1, "null", S_IFCHR | 0666, 0, 0, NULL, NULL), -EPERM);
	cr_assert_eq(gofer_mkdir(c, 1, "..", 0755, 0, 0, NULL, NULL), -EINVAL);
	cr_assert_eq(gofer_unlink(c, 1, "a/b", 0), -EINVAL);
	cr_assert_eq(gofer_rename(c, 1, longname, 1, "x", 0), -ENAMETOOLONG);
	cr_assert_eq(gofer_setstat(c, 1, &st, NULL), -EINVAL);
	cr_assert_eq(gofer_setxattr(c, 1, "", "x", 1, 0), -ERANGE);
	cr_assert_eq(gofer_getxattr(c, 1, longname, NULL, 0), -ERANGE);
	cr_assert_eq(gofer_setxattr(c, 1, "user.x", NULL, 1, 0), -EINVAL);
	/* A long target is fine (up to GOFER_PATH_MAX): this one is sent. */
	cr_assert_eq(gofer_symlink(c, 1, "l", longname, 0, 0, &h, NULL), 0);
	cr_assert_eq(requests_seen, 1, "only the valid SYMLINK was sent");
}
