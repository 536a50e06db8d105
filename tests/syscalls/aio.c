/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Linux AIO (the io_* system calls libaio wraps): io_setup and the ring it maps at the context
 * address, io_submit of PREAD/PWRITE/PREADV/PWRITEV/FSYNC/FDSYNC, io_getevents/io_pgetevents
 * (min_nr, relative timeouts), io_cancel of a finished request, IOCB_FLAG_RESFD with an eventfd,
 * io_destroy, and the errors of each; IOCB_CMD_POLL ready at once, completed later by another
 * thread's write (io_getevents waiting, or an eventfd under epoll), hung up, cancelled, destroyed.
 */
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "scratch.h"

#define AIO_RING_MAGIC 0xa10a10a1

struct aio_ring {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
	struct io_event io_events[];
};

static long setup(unsigned nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long submit(aio_context_t ctx, long nr, struct iocb **cbs)
{
	return syscall(SYS_io_submit, ctx, nr, cbs);
}

static long getevents(aio_context_t ctx, long min, long nr, struct io_event *ev,
		      struct timespec *ts)
{
	return syscall(SYS_io_getevents, ctx, min, nr, ev, ts);
}

static void prep(struct iocb *cb, int op, int fd, void *buf, size_t n, off_t off, uint64_t data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = (uint16_t)op;
	cb->aio_fildes = (uint32_t)fd;
	cb->aio_buf = (uint64_t)(uintptr_t)buf;
	cb->aio_nbytes = n;
	cb->aio_offset = off;
	cb->aio_data = data;
}

/*
 * The event of the request with data in ev[0..n) (Linux completes requests in no fixed order:
 * fsync runs on a workqueue), or NULL.
 */
static const struct io_event *find_ev(const struct io_event *ev, long n, uint64_t data)
{
	for (long i = 0; i < n; i++)
		if (ev[i].data == data)
			return &ev[i];
	return NULL;
}

/* The ring Linux maps at the context address (libaio reads it for a zero-timeout poll). */
static void check_ring(aio_context_t ctx, unsigned nr, unsigned pending)
{
	struct aio_ring *r = (struct aio_ring *)ctx;

	CHECK(r->magic == AIO_RING_MAGIC && r->nr >= nr && r->header_length == sizeof(*r) &&
		      r->head < r->nr && r->tail < r->nr &&
		      (r->tail + r->nr - r->head) % r->nr == pending,
	      "ring: magic %#x nr %u head %u tail %u header %u, %u pending", r->magic, r->nr,
	      r->head, r->tail, r->header_length, pending);
}

static void *write_later(void *arg)
{
	int fd = *(int *)arg;

	if (write(fd, "w", 1) != 1)
		perror("write_later");
	return NULL;
}

/* Starts a thread that writes one byte to fd. */
static pthread_t writer(int *fd)
{
	pthread_t th;

	if (pthread_create(&th, NULL, write_later, fd) != 0)
		CHECK(0, "pthread_create");
	return th;
}

/*
 * The result of a poll completed by a wake: Linux reports the waker's events (a pipe's writer:
 * POLLIN | POLLRDNORM), or those asked for that are ready when it could not complete it at once.
 */
static int later_in(int64_t res)
{
	return res == POLLIN || res == (POLLIN | POLLRDNORM);
}

static void test_poll(void)
{
	struct iocb cb, cb2, *cbp[1] = { &cb };
	struct timespec zero = { 0, 0 };
	struct epoll_event eev;
	struct io_event ev[4];
	aio_context_t ctx = 0;
	int p[2], efd, ep;
	uint64_t count;
	pthread_t th;
	char c;

	CHECK_RET(setup(8, &ctx), 0);
	CHECK_OK(pipe(p));

	/* Malformed: fields poll does not use, events past 16 bits. */
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 1, 1);
	cb.aio_buf = POLLIN;
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 1);
	cb.aio_buf = 0x10000 | POLLIN;
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 1, 0, 1);
	cb.aio_buf = POLLIN;
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);
	prep(&cb, IOCB_CMD_POLL, 999, NULL, 0, 0, 1);
	cb.aio_buf = POLLIN;
	CHECK_ERR(submit(ctx, 1, cbp), EBADF);

	/* Ready already: completed at once, with the ready events asked for. */
	CHECK_RET(write(p[1], "x", 1), 1);
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 50);
	cb.aio_buf = POLLIN;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(getevents(ctx, 1, 4, ev, NULL), 1);
	CHECK(ev[0].data == 50 && ev[0].obj == (uint64_t)(uintptr_t)&cb && ev[0].res == POLLIN,
	      "ready poll: data %llu res %#llx", (unsigned long long)ev[0].data,
	      (unsigned long long)ev[0].res);
	CHECK_RET(read(p[0], &c, 1), 1);
	prep(&cb, IOCB_CMD_POLL, p[1], NULL, 0, 0, 51);
	cb.aio_buf = POLLOUT | POLLIN;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(getevents(ctx, 1, 4, ev, NULL), 1);
	CHECK(ev[0].data == 51 && ev[0].res == POLLOUT, "writable: %#llx",
	      (unsigned long long)ev[0].res);

	/* Not ready: pending until another thread writes; io_getevents waits for it. */
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 52);
	cb.aio_buf = POLLIN;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(getevents(ctx, 0, 4, ev, &zero), 0);
	th = writer(&p[1]);
	CHECK_RET(getevents(ctx, 1, 4, ev, NULL), 1);
	pthread_join(th, NULL);
	CHECK(ev[0].data == 52 && later_in(ev[0].res), "later: data %llu res %#llx",
	      (unsigned long long)ev[0].data, (unsigned long long)ev[0].res);
	CHECK_RET(read(p[0], &c, 1), 1);
	/* One-shot: a later write adds no event. */
	CHECK_RET(write(p[1], "x", 1), 1);
	CHECK_RET(getevents(ctx, 0, 4, ev, &zero), 0);
	CHECK_RET(read(p[0], &c, 1), 1);

	/* IOCB_FLAG_RESFD: the completion signals the eventfd, which epoll sees. */
	efd = eventfd(0, EFD_NONBLOCK);
	ep = epoll_create1(0);
	eev.events = EPOLLIN;
	eev.data.u64 = 7;
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &eev));
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 53);
	cb.aio_buf = POLLIN;
	cb.aio_flags = IOCB_FLAG_RESFD;
	cb.aio_resfd = (uint32_t)efd;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(epoll_wait(ep, &eev, 1, 0), 0);
	th = writer(&p[1]);
	CHECK_RET(epoll_wait(ep, &eev, 1, 10000), 1);
	pthread_join(th, NULL);
	count = 0;
	CHECK(read(efd, &count, 8) == 8 && count == 1, "eventfd count %llu",
	      (unsigned long long)count);
	CHECK_RET(getevents(ctx, 1, 4, ev, &zero), 1);
	CHECK(ev[0].data == 53 && later_in(ev[0].res), "resfd poll: data %llu res %#llx",
	      (unsigned long long)ev[0].data, (unsigned long long)ev[0].res);
	CHECK_RET(read(p[0], &c, 1), 1);
	close(ep);
	close(efd);

	/* io_cancel of a pending poll: in progress, then an event with no events ready. */
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 54);
	cb.aio_buf = POLLIN;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	prep(&cb2, IOCB_CMD_POLL, p[0], NULL, 0, 0, 55);
	CHECK_ERR(syscall(SYS_io_cancel, ctx, &cb2, &ev[0]), EINVAL);
	CHECK_ERR(syscall(SYS_io_cancel, ctx, &cb, &ev[0]), EINPROGRESS);
	CHECK_RET(getevents(ctx, 1, 4, ev, NULL), 1);
	CHECK(ev[0].data == 54 && ev[0].res == 0, "cancelled: data %llu res %#llx",
	      (unsigned long long)ev[0].data, (unsigned long long)ev[0].res);
	CHECK_ERR(syscall(SYS_io_cancel, ctx, &cb, &ev[0]), EINVAL);

	/* The writer hangs up: POLLHUP, always reported. */
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 56);
	cb.aio_buf = POLLIN;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	close(p[1]);
	CHECK_RET(getevents(ctx, 1, 4, ev, NULL), 1);
	CHECK(ev[0].data == 56 && ev[0].res == POLLHUP, "hang-up: %#llx",
	      (unsigned long long)ev[0].res);

	/* A process exits with a poll pending: its file goes with it (the reader's last close). */
	CHECK_OK(pipe(p));
	pid_t pid = fork();
	if (pid == 0) {
		aio_context_t cc = 0;

		prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 58);
		cb.aio_buf = POLLIN;
		_exit(setup(4, &cc) == 0 && submit(cc, 1, cbp) == 1 ? 0 : 1);
	}
	int st = -1;
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	CHECK_ERR(write(p[1], "x", 1), EPIPE);
	signal(SIGPIPE, SIG_DFL);
	close(p[1]);

	/* io_destroy with a poll pending. */
	CHECK_OK(pipe(p));
	prep(&cb, IOCB_CMD_POLL, p[0], NULL, 0, 0, 57);
	cb.aio_buf = POLLIN;
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(syscall(SYS_io_destroy, ctx), 0);
	CHECK_RET(write(p[1], "x", 1), 1);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	aio_context_t ctx = 0, bad = 1;
	struct iocb cb[4], *cbp[4] = { &cb[0], &cb[1], &cb[2], &cb[3] };
	struct io_event ev[8];
	struct timespec ts = { 0, 0 };
	char out[64] = "", out2[64] = "";
	struct iovec iov[2];
	const struct io_event *e1, *e2;
	uint64_t count;
	int fd, efd, p[2];

	scratch_make("aio");
	fd = open("data", O_RDWR | O_CREAT, 0644);
	CHECK(fd >= 0, "open: %s", strerror(errno));

	CHECK_ERR(setup(0, &ctx), EINVAL);
	CHECK_ERR(setup(8, &bad), EINVAL);
	CHECK_ERR(setup(8, (aio_context_t *)8), EFAULT);
	CHECK_RET(setup(8, &ctx), 0);
	CHECK(ctx != 0, "context id");
	check_ring(ctx, 8, 0);

	/* Writes, then reads back, each completed by io_getevents. */
	prep(&cb[0], IOCB_CMD_PWRITE, fd, "hello aio world!", 16, 0, 1);
	iov[0] = (struct iovec){ "vec-", 4 };
	iov[1] = (struct iovec){ "tor", 3 };
	prep(&cb[1], IOCB_CMD_PWRITEV, fd, iov, 2, 16, 2);
	CHECK_RET(submit(ctx, 2, cbp), 2);
	/* The ring holds finished requests (buffered writes finish in io_submit) until reaped. */
	check_ring(ctx, 8, 2);
	CHECK_RET(getevents(ctx, 2, 8, ev, NULL), 2);
	e1 = find_ev(ev, 2, 1);
	e2 = find_ev(ev, 2, 2);
	CHECK(e1 && e2 && e1->res == 16 && e1->obj == (uint64_t)(uintptr_t)&cb[0] && e2->res == 7 &&
		      e2->res2 == 0 && e2->obj == (uint64_t)(uintptr_t)&cb[1],
	      "write events: %llu %lld, %llu %lld", (unsigned long long)ev[0].data,
	      (long long)ev[0].res, (unsigned long long)ev[1].data, (long long)ev[1].res);
	check_ring(ctx, 8, 0);
	prep(&cb[0], IOCB_CMD_PREAD, fd, out, sizeof(out), 6, 3);
	iov[0] = (struct iovec){ out2, 10 };
	iov[1] = (struct iovec){ out2 + 10, 20 };
	prep(&cb[1], IOCB_CMD_PREADV, fd, iov, 2, 0, 4);
	prep(&cb[2], IOCB_CMD_FSYNC, fd, NULL, 0, 0, 5);
	prep(&cb[3], IOCB_CMD_FDSYNC, fd, NULL, 0, 0, 6);
	CHECK_RET(submit(ctx, 4, cbp), 4);
	/*
	 * nr bounds what io_getevents returns: the first completion (any: the reads finish in
	 * io_submit, the syncs maybe later), then the other three, matched by their data.
	 */
	CHECK_RET(getevents(ctx, 1, 1, ev, NULL), 1);
	CHECK_RET(getevents(ctx, 3, 8, ev + 1, NULL), 3);
	e1 = find_ev(ev, 4, 3);
	CHECK(e1 && e1->res == 17 && memcmp(out, "aio world!vec-tor", 17) == 0, "pread: %lld %.17s",
	      e1 ? (long long)e1->res : -1LL, out);
	e1 = find_ev(ev, 4, 4);
	CHECK(e1 && e1->res == 23 && memcmp(out2, "hello aio world!vec-tor", 23) == 0,
	      "preadv: %lld %.23s", e1 ? (long long)e1->res : -1LL, out2);
	e1 = find_ev(ev, 4, 5);
	e2 = find_ev(ev, 4, 6);
	CHECK(e1 && e2 && e1->res == 0 && e2->res == 0 && e1->obj == (uint64_t)(uintptr_t)&cb[2] &&
		      e2->obj == (uint64_t)(uintptr_t)&cb[3],
	      "fsync events %lld %lld", e1 ? (long long)e1->res : -1LL,
	      e2 ? (long long)e2->res : -1LL);
	/* A zero timeout returns what is there: nothing now. */
	CHECK_RET(getevents(ctx, 0, 8, ev, &ts), 0);
	/* Nothing left: a relative timeout passes. */
	ts.tv_nsec = 10000000;
	CHECK_RET(getevents(ctx, 1, 8, ev, &ts), 0);
	CHECK_RET(syscall(SYS_io_pgetevents, ctx, 1, 8, ev, &ts, NULL), 0);
	CHECK_ERR(getevents(ctx, 2, 1, ev, NULL), EINVAL);
	CHECK_ERR(getevents(ctx, -1, 1, ev, NULL), EINVAL);
	CHECK_ERR(getevents(bad, 0, 1, ev, NULL), EINVAL);

	/* A pipe has no position: the offset is ignored. */
	CHECK_OK(pipe(p));
	CHECK_RET(write(p[1], "piped", 5), 5);
	memset(out, 0, sizeof(out));
	prep(&cb[0], IOCB_CMD_PREAD, p[0], out, sizeof(out), 1234, 11);
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(getevents(ctx, 1, 1, ev, NULL), 1);
	CHECK(ev[0].res == 5 && memcmp(out, "piped", 5) == 0, "pipe read: %lld %.5s",
	      (long long)ev[0].res, out);
	/* An error of the operation is its event's result. */
	prep(&cb[0], IOCB_CMD_PREAD, fd, (void *)8, 16, 0, 7);
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_RET(getevents(ctx, 1, 1, ev, NULL), 1);
	CHECK(ev[0].data == 7 && ev[0].res == -EFAULT, "bad buffer: %lld", (long long)ev[0].res);

	/* Submission errors: the first bad iocb fails the call, later ones end it. */
	prep(&cb[0], IOCB_CMD_PREAD, 999, out, 1, 0, 8);
	CHECK_ERR(submit(ctx, 1, cbp), EBADF);
	prep(&cb[0], IOCB_CMD_PWRITE, p[0], "x", 1, 0, 8);
	CHECK_ERR(submit(ctx, 1, cbp), EBADF);
	prep(&cb[0], 42, fd, out, 1, 0, 8);
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);
	prep(&cb[0], IOCB_CMD_PREAD, fd, out, 1, 0, 8);
	cb[0].aio_reserved2 = 1;
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);
	prep(&cb[0], IOCB_CMD_PREAD, fd, out, 1, 0, 8);
	prep(&cb[1], 42, fd, out, 1, 0, 9);
	CHECK_RET(submit(ctx, 2, cbp), 1);
	CHECK_RET(getevents(ctx, 1, 8, ev, NULL), 1);
	CHECK_ERR(submit(ctx, -1, cbp), EINVAL);
	CHECK_ERR(submit(bad, 1, cbp), EINVAL);
	CHECK_RET(submit(ctx, 0, cbp), 0);
	CHECK_ERR(submit(ctx, 1, (struct iocb **)8), EFAULT);
	/* A finished request cannot be cancelled. */
	prep(&cb[0], IOCB_CMD_PREAD, fd, out, 1, 0, 10);
	CHECK_RET(submit(ctx, 1, cbp), 1);
	CHECK_ERR(syscall(SYS_io_cancel, ctx, &cb[0], &ev[0]), EINVAL);
	CHECK_ERR(syscall(SYS_io_cancel, bad, &cb[0], &ev[0]), EINVAL);
	CHECK_RET(getevents(ctx, 1, 8, ev, NULL), 1);

	/* IOCB_FLAG_RESFD: each completion adds 1 to the eventfd. */
	efd = eventfd(0, EFD_NONBLOCK);
	for (int i = 0; i < 3; i++) {
		prep(&cb[i], IOCB_CMD_PREAD, fd, out, 4, 0, 20 + (uint64_t)i);
		cb[i].aio_flags = IOCB_FLAG_RESFD;
		cb[i].aio_resfd = (uint32_t)efd;
	}
	CHECK_RET(submit(ctx, 3, cbp), 3);
	/* The eventfd is signalled as each completes: read it once io_getevents saw all three. */
	CHECK_RET(getevents(ctx, 3, 8, ev, NULL), 3);
	count = 0;
	CHECK(read(efd, &count, 8) == 8 && count == 3, "eventfd count %llu",
	      (unsigned long long)count);
	CHECK(find_ev(ev, 3, 20) && find_ev(ev, 3, 21) && find_ev(ev, 3, 22), "resfd events");
	prep(&cb[0], IOCB_CMD_PREAD, fd, out, 4, 0, 30);
	cb[0].aio_flags = IOCB_FLAG_RESFD;
	cb[0].aio_resfd = (uint32_t)p[0];
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);

	/* The ring has room for what io_setup asked: more finished requests give EAGAIN. */
	for (int i = 0; i < 4; i++)
		prep(&cb[i], IOCB_CMD_PREAD, fd, out, 1, 0, 40 + (uint64_t)i);
	{
		struct io_event *all;
		long total = 0, r;

		while ((r = submit(ctx, 4, cbp)) > 0 && total < 100000)
			total += r;
		CHECK(r == -1 && errno == EAGAIN && total >= 8,
		      "filled the ring with %ld, then %ld %s", total, r, strerror(errno));
		all = calloc((size_t)total + 1, sizeof(*all));
		CHECK_RET(getevents(ctx, total, total, all, NULL), total);
		free(all);
	}

	/* Contexts of processes that exit without io_destroy go with them (aio-nr is 65536). */
	for (int i = 0; i < 100; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			aio_context_t c = 0;

			_exit(setup(1000, &c) == 0 ? 0 : 1);
		}
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			CHECK(0, "io_setup(1000) in child %d: status %#x", i, st);
			break;
		}
	}
	CHECK_RET(syscall(SYS_io_destroy, ctx), 0);
	CHECK_ERR(syscall(SYS_io_destroy, ctx), EINVAL);
	CHECK_ERR(submit(ctx, 1, cbp), EINVAL);
	close(efd);
	close(p[0]);
	close(p[1]);
	close(fd);
	test_poll();
	return finish();
}
