/* SPDX-License-Identifier: Apache-2.0 */
/* Pipes and FIFOs (sentry/fs/pipe): data, atomicity, packets, readiness, blocking, interruption. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"
#include "tests/unit/kernel/fake_wait.h"

static struct fake_world w;
static struct file *ends[2];

static void setup(void)
{
	fake_world_init(&w);
	task_set_current(&w.t[0]);
	ends[0] = ends[1] = NULL;
}

static void teardown(void)
{
	file_put(ends[0]);
	file_put(ends[1]);
	task_set_current(NULL);
	fake_world_fini(&w);
}

TestSuite(pipe, .init = setup, .fini = teardown);

static ssize_t pwrite_buf(struct file *f, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	return f->ops->write(f, &iov, 1, NULL);
}

static ssize_t pread_buf(struct file *f, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return f->ops->read(f, &iov, 1, NULL);
}

static unsigned int poll_of(struct file *f)
{
	return f->ops->poll(f, NULL);
}

/* Waits (without timing) until some task sleeps on f's wait queue. */
static void wait_for_sleeper(struct file *f)
{
	struct waitq *wq = NULL;

	f->ops->poll(f, &wq);
	cr_assert_not_null(wq);
	while (!waitq_has_waiters(wq))
		sched_yield();
}

Test(pipe, bytes_come_out_in_order_and_in_pieces)
{
	char buf[16] = { 0 };

	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	cr_assert_eq(pwrite_buf(ends[1], "hello ", 6), 6);
	cr_assert_eq(pwrite_buf(ends[1], "world", 5), 5);
	cr_assert_eq(pread_buf(ends[0], buf, 4), 4);
	cr_assert_str_eq(buf, "hell");
	cr_assert_eq(pread_buf(ends[0], buf, sizeof(buf) - 1), 7);
	buf[7] = 0;
	cr_assert_str_eq(buf, "o world");
}

Test(pipe, readiness_follows_data_and_closed_ends)
{
	char c = 'x';

	cr_assert_eq(pipe_create(O_NONBLOCK, 0, 0, ends), 0);
	cr_assert_eq(poll_of(ends[0]), 0);
	cr_assert_eq(poll_of(ends[1]), POLLOUT | POLLWRNORM);
	cr_assert_eq(pwrite_buf(ends[1], &c, 1), 1);
	cr_assert_eq(poll_of(ends[0]), POLLIN | POLLRDNORM);
	file_put(ends[1]);
	ends[1] = NULL;
	cr_assert_eq(poll_of(ends[0]), POLLIN | POLLRDNORM | POLLHUP);
	cr_assert_eq(pread_buf(ends[0], &c, 1), 1);
	cr_assert_eq(pread_buf(ends[0], &c, 1), 0, "no writer and no data: end of file");
}

Test(pipe, empty_nonblocking_read_is_eagain)
{
	char c;

	cr_assert_eq(pipe_create(O_NONBLOCK, 0, 0, ends), 0);
	cr_assert_eq(pread_buf(ends[0], &c, 1), -EAGAIN);
}

Test(pipe, write_without_reader_is_epipe_with_sigpipe)
{
	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	file_put(ends[0]);
	ends[0] = NULL;
	cr_assert_eq(poll_of(ends[1]) & POLLERR, POLLERR);
	cr_assert_eq(pwrite_buf(ends[1], "x", 1), -EPIPE);
	cr_assert_eq(fake_take_sent_signal(&w.t[0]), 13 /* SIGPIPE */);
}

Test(pipe, small_writes_are_all_or_nothing_large_ones_partial)
{
	static char big[PIPE_DEF_SIZE + 100];

	cr_assert_eq(pipe_create(O_NONBLOCK, 0, 0, ends), 0);
	cr_assert_eq(pwrite_buf(ends[1], big, PIPE_DEF_SIZE - 10), PIPE_DEF_SIZE - 10);
	/* 20 bytes (<= PIPE_BUF) do not fit in the 10 left: nothing is written. */
	cr_assert_eq(pwrite_buf(ends[1], big, 20), -EAGAIN);
	cr_assert_eq(poll_of(ends[1]), 0, "less than PIPE_BUF free: not writable");
	cr_assert_eq(pread_buf(ends[0], big, PIPE_DEF_SIZE), PIPE_DEF_SIZE - 10);
	/* A write larger than the pipe writes what fits. */
	cr_assert_eq(pwrite_buf(ends[1], big, sizeof(big)), PIPE_DEF_SIZE);
}

Test(pipe, o_direct_reads_return_one_packet_each)
{
	char buf[64] = { 0 };

	cr_assert_eq(pipe_create(O_DIRECT | O_NONBLOCK, 0, 0, ends), 0);
	cr_assert_eq(pwrite_buf(ends[1], "abc", 3), 3);
	cr_assert_eq(pwrite_buf(ends[1], "defgh", 5), 5);
	cr_assert_eq(pread_buf(ends[0], buf, sizeof(buf)), 3);
	cr_assert_eq(memcmp(buf, "abc", 3), 0);
	/* A read shorter than the packet drops the rest of it. */
	cr_assert_eq(pread_buf(ends[0], buf, 2), 2);
	cr_assert_eq(memcmp(buf, "de", 2), 0);
	cr_assert_eq(pread_buf(ends[0], buf, sizeof(buf)), -EAGAIN);
}

Test(pipe, setpipe_sz_rounds_and_refuses_what_cannot_fit)
{
	static char data[8192];

	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	cr_assert_eq(pipe_fcntl(&w.t[0], ends[0], F_GETPIPE_SZ, 0), PIPE_DEF_SIZE);
	cr_assert_eq(pipe_fcntl(&w.t[0], ends[1], F_SETPIPE_SZ, 5000), 8192);
	cr_assert_eq(pipe_fcntl(&w.t[0], ends[0], F_GETPIPE_SZ, 0), 8192);
	cr_assert_eq(pwrite_buf(ends[1], data, 8192), 8192);
	cr_assert_eq(pipe_fcntl(&w.t[0], ends[1], F_SETPIPE_SZ, 4096), -EBUSY);
	cr_assert_eq(pipe_fcntl(&w.t[0], ends[1], F_SETPIPE_SZ, PIPE_MAX_SIZE * 2), -EPERM,
		     "no CAP_SYS_RESOURCE");
	cr_assert_eq(pipe_fcntl(&w.t[0], ends[1], F_SETPIPE_SZ, 16384), 16384);
	cr_assert_eq(pread_buf(ends[0], data, sizeof(data)), 8192, "data kept across resize");
}

struct reader {
	struct file *f;
	char buf[8];
	ssize_t ret;
};

static void *read_thread(void *arg)
{
	struct reader *r = arg;

	r->ret = pread_buf(r->f, r->buf, sizeof(r->buf));
	return NULL;
}

Test(pipe, blocked_read_wakes_on_write)
{
	struct reader r = { 0 };
	pthread_t th;

	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	r.f = ends[0];
	fake_run_as(&th, &w.t[1], read_thread, &r);
	wait_for_sleeper(ends[0]);
	cr_assert_eq(pwrite_buf(ends[1], "ping", 4), 4);
	pthread_join(th, NULL);
	cr_assert_eq(r.ret, 4);
	cr_assert_eq(memcmp(r.buf, "ping", 4), 0);
}

Test(pipe, blocked_read_sees_eof_when_last_writer_closes)
{
	struct reader r = { 0 };
	pthread_t th;

	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	r.f = ends[0];
	fake_run_as(&th, &w.t[1], read_thread, &r);
	wait_for_sleeper(ends[0]);
	file_put(ends[1]);
	ends[1] = NULL;
	pthread_join(th, NULL);
	cr_assert_eq(r.ret, 0);
}

Test(pipe, blocked_read_is_interrupted_by_a_signal)
{
	struct reader r = { 0 };
	pthread_t th;

	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	r.f = ends[0];
	fake_run_as(&th, &w.t[1], read_thread, &r);
	wait_for_sleeper(ends[0]);
	fake_set_signal_pending(&w.t[1], true);
	pthread_join(th, NULL);
	cr_assert_eq(r.ret, -ERESTARTSYS);
}

struct writer {
	struct file *f;
	const char *buf;
	size_t len;
	ssize_t ret;
};

static void *write_thread(void *arg)
{
	struct writer *wr = arg;

	wr->ret = pwrite_buf(wr->f, wr->buf, wr->len);
	return NULL;
}

Test(pipe, blocked_write_completes_as_the_reader_drains)
{
	static char big[PIPE_DEF_SIZE * 2], out[PIPE_DEF_SIZE * 2];
	struct writer wr = { 0 };
	size_t got = 0;
	pthread_t th;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	wr = (struct writer){ ends[1], big, sizeof(big), 0 };
	fake_run_as(&th, &w.t[1], write_thread, &wr);
	while (got < sizeof(big)) {
		ssize_t n = pread_buf(ends[0], out + got, sizeof(out) - got);

		cr_assert_gt(n, 0);
		got += (size_t)n;
	}
	pthread_join(th, NULL);
	cr_assert_eq(wr.ret, (ssize_t)sizeof(big));
	cr_assert_eq(memcmp(big, out, sizeof(big)), 0);
}

/* --- FIFOs: pipe_fifo_open on a node whose getattr names inode (7, ino) --- */

struct fake_fifo {
	struct vfs_node node;
	uint64_t ino;
};

static int fake_fifo_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	*attr = (struct vfs_attr){ .dev = 7,
				   .ino = container_of(n, struct fake_fifo, node)->ino,
				   .mode = S_IFIFO | 0644 };
	return 0;
}

static void fake_fifo_release(struct vfs_node *n)
{
	(void)n;
}

static const struct vfs_node_ops fake_fifo_ops = {
	.getattr = fake_fifo_getattr,
	.release = fake_fifo_release,
};

static struct fake_fifo fifo_a, fifo_a_link, fifo_b;

static void fifo_setup(void)
{
	setup();
	fifo_a.ino = fifo_a_link.ino = 42;
	fifo_b.ino = 43;
	cr_assert_eq(vfs_anon_node_init(&fifo_a.node, &fake_fifo_ops, S_IFIFO), 0);
	cr_assert_eq(vfs_anon_node_init(&fifo_a_link.node, &fake_fifo_ops, S_IFIFO), 0);
	cr_assert_eq(vfs_anon_node_init(&fifo_b.node, &fake_fifo_ops, S_IFIFO), 0);
}

static void fifo_teardown(void)
{
	vfs_node_put(&fifo_a.node);
	vfs_node_put(&fifo_a_link.node);
	vfs_node_put(&fifo_b.node);
	teardown();
}

TestSuite(fifo, .init = fifo_setup, .fini = fifo_teardown);

static struct file *fifo_open_ok(struct fake_fifo *n, int flags)
{
	struct file *f = pipe_fifo_open(&n->node, flags);

	cr_assert(!IS_ERR(f), "pipe_fifo_open(%#x): %ld", flags, IS_ERR(f) ? PTR_ERR(f) : 0L);
	return f;
}

Test(fifo, opens_of_one_inode_share_a_pipe_and_others_do_not)
{
	struct file *b;
	char buf[8];

	ends[0] = fifo_open_ok(&fifo_a, O_RDONLY | O_NONBLOCK);
	ends[1] = fifo_open_ok(&fifo_a_link, O_WRONLY | O_NONBLOCK);
	cr_assert(file_is_pipe(ends[0]) && file_is_pipe(ends[1]));
	b = fifo_open_ok(&fifo_b, O_RDWR | O_NONBLOCK);
	cr_assert_eq(pwrite_buf(ends[1], "ab", 2), 2);
	cr_assert_eq(pread_buf(b, buf, sizeof(buf)), -EAGAIN);
	cr_assert_eq(pread_buf(ends[0], buf, sizeof(buf)), 2);
	file_put(b);
}

Test(fifo, nonblocking_writer_needs_a_reader_and_mode_3_is_einval)
{
	struct file *f = pipe_fifo_open(&fifo_a.node, O_WRONLY | O_NONBLOCK);

	cr_assert_eq(PTR_ERR(f), -ENXIO);
	f = pipe_fifo_open(&fifo_a.node, O_ACCMODE);
	cr_assert_eq(PTR_ERR(f), -EINVAL);
	ends[0] = fifo_open_ok(&fifo_a, O_RDWR); /* never waits */
	ends[1] = fifo_open_ok(&fifo_a, O_WRONLY | O_NONBLOCK);
}

Test(fifo, nonblocking_reader_sees_no_hangup_until_a_writer_came)
{
	ends[0] = fifo_open_ok(&fifo_a, O_RDONLY | O_NONBLOCK);
	cr_assert_eq(poll_of(ends[0]) & POLLHUP, 0);
	ends[1] = fifo_open_ok(&fifo_a, O_WRONLY | O_NONBLOCK);
	file_put(ends[1]);
	ends[1] = NULL;
	cr_assert(poll_of(ends[0]) & POLLHUP);
}

Test(fifo, data_goes_with_the_last_opener)
{
	char buf[8];

	ends[0] = fifo_open_ok(&fifo_a, O_RDWR | O_NONBLOCK);
	cr_assert_eq(pwrite_buf(ends[0], "left", 4), 4);
	file_put(ends[0]);
	ends[0] = fifo_open_ok(&fifo_a, O_RDWR | O_NONBLOCK);
	cr_assert_eq(pread_buf(ends[0], buf, sizeof(buf)), -EAGAIN);
}

struct opener {
	struct fake_fifo *n;
	int flags;
	struct file *f;
};

static void *open_thread(void *arg)
{
	struct opener *o = arg;

	o->f = pipe_fifo_open(&o->n->node, o->flags);
	return NULL;
}

Test(fifo, blocked_reader_returns_when_a_writer_opens)
{
	struct opener o = { &fifo_a, O_RDONLY, NULL };
	struct file *watch;
	pthread_t th;

	/* A non-blocking reader of the same pipe gives the wait queue to watch. */
	watch = fifo_open_ok(&fifo_a, O_RDONLY | O_NONBLOCK);
	fake_run_as(&th, &w.t[1], open_thread, &o);
	wait_for_sleeper(watch);
	ends[1] = fifo_open_ok(&fifo_a_link, O_WRONLY);
	pthread_join(th, NULL);
	cr_assert(!IS_ERR(o.f));
	ends[0] = o.f;
	cr_assert_eq(pwrite_buf(ends[1], "x", 1), 1);
	file_put(watch);
}

Test(fifo, blocked_writer_returns_when_a_reader_opens)
{
	struct opener o = { &fifo_a, O_WRONLY, NULL };
	pthread_t th;
	char c;

	fake_run_as(&th, &w.t[1], open_thread, &o);
	ends[0] = fifo_open_ok(&fifo_a, O_RDONLY); /* whichever comes first waits for the other */
	pthread_join(th, NULL);
	cr_assert(!IS_ERR(o.f));
	ends[1] = o.f;
	cr_assert_eq(pwrite_buf(ends[1], "y", 1), 1);
	cr_assert_eq(pread_buf(ends[0], &c, 1), 1);
}

Test(fifo, blocked_open_is_interrupted_and_takes_its_end_back)
{
	struct opener o = { &fifo_a, O_RDONLY, NULL };
	struct file *watch;
	pthread_t th;

	watch = fifo_open_ok(&fifo_a, O_RDONLY | O_NONBLOCK);
	fake_run_as(&th, &w.t[1], open_thread, &o);
	wait_for_sleeper(watch);
	fake_set_signal_pending(&w.t[1], true);
	pthread_join(th, NULL);
	cr_assert_eq(PTR_ERR(o.f), -ERESTARTSYS);
	file_put(watch);
	/* No reader is left: the interrupted open did not keep one. */
	cr_assert_eq(PTR_ERR(pipe_fifo_open(&fifo_a.node, O_WRONLY | O_NONBLOCK)), -ENXIO);
}

Test(pipe, setattr_is_kept_by_both_ends_and_by_a_checkpoint)
{
	struct vfs_setattr sa = { .valid = VFS_SETATTR_MODE | VFS_SETATTR_UID | VFS_SETATTR_GID,
				  .mode = 0640,
				  .uid = 1000,
				  .gid = 1001 };
	struct pipe_state st;
	struct vfs_node *n;
	struct vfs_attr a;

	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	cr_assert_eq(vfs_node_getattr(ends[0]->node, &a), 0);
	cr_assert_eq(a.mode, S_IFIFO | 0600);
	cr_assert_eq(ends[1]->node->ops->setattr(ends[1]->node, &sa), 0);
	cr_assert_eq(vfs_node_getattr(ends[0]->node, &a), 0);
	cr_assert_eq(a.mode, S_IFIFO | 0640);
	cr_assert(a.uid == 1000 && a.gid == 1001);
	sa = (struct vfs_setattr){ .valid = VFS_SETATTR_SIZE, .size = 0 };
	cr_assert_eq(ends[0]->node->ops->setattr(ends[0]->node, &sa), -EINVAL);

	cr_assert_eq(pipe_save(ends[0], &st), 0);
	cr_assert_eq(st.mode, 0640);
	n = pipe_restore_new(&st);
	free(st.data);
	free(st.segs);
	cr_assert(!IS_ERR(n));
	cr_assert_eq(vfs_node_getattr(n, &a), 0);
	cr_assert_eq(a.mode, S_IFIFO | 0640);
	cr_assert(a.uid == 1000 && a.gid == 1001);
	vfs_node_put(n);
}
