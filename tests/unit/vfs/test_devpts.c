/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devpts: pair allocation and locking, the line discipline between master and slave, termios
 * and window-size ioctls, hang-ups. No task is current, so nothing blocks: an empty read gives
 * -EAGAIN where a task would sleep.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include "common/err.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/kernel/current.h"
#include "sentry/vfs/vfs.h"
#include "tests/unit/vfs/fake_mm.h"
#include "tests/unit/vfs/tree.h"

#define A(x) ((uint64_t)(uintptr_t)(x))

/* The kernel's struct termios (TCGETS), as devpts.c copies it. */
struct kterm {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[19];
};

static struct tree tr;
static struct harness h;
static struct file *m, *s;

static void setup(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, 0);
	h.t.mm = (struct mm *)&h; /* fake_mm ignores it; the ioctls need one */
	task_set_current(NULL);
}

static void teardown(void)
{
	if (s)
		file_put(s);
	if (m)
		file_put(m);
	s = m = NULL;
	harness_fini(&h);
}

TestSuite(devpts, .init = setup, .fini = teardown);

static ssize_t rd(struct file *f, char *buf, size_t len)
{
	struct iovec iov = { buf, len };
	ssize_t n = f->ops->read(f, &iov, 1, NULL);

	if (n >= 0 && (size_t)n < len)
		buf[n] = '\0';
	return n;
}

static ssize_t wr(struct file *f, const char *buf)
{
	struct iovec iov = { (void *)buf, strlen(buf) };

	return f->ops->write(f, &iov, 1, NULL);
}

static long ioc(struct file *f, unsigned int cmd, void *arg)
{
	return f->ops->ioctl(f, &h.t, cmd, A(arg));
}

/* A pair with its slave opened. */
static void open_pair(void)
{
	int n = -1, zero = 0;

	m = devpts_open_master(O_RDWR | O_NONBLOCK);
	cr_assert(!IS_ERR(m));
	cr_assert_eq(ioc(m, TIOCGPTN, &n), 0);
	cr_assert_eq(ioc(m, TIOCSPTLCK, &zero), 0);
	s = devpts_open_slave((uint32_t)n, O_RDWR | O_NONBLOCK | O_NOCTTY);
	cr_assert(!IS_ERR(s));
}

Test(devpts, new_pair_is_locked_until_unlockpt)
{
	int n = -1, lock = 0, zero = 0;
	struct file *f;

	m = devpts_open_master(O_RDWR);
	cr_assert(!IS_ERR(m));
	cr_assert_eq(ioc(m, TIOCGPTN, &n), 0);
	cr_assert_geq(n, 0);
	cr_assert_eq(ioc(m, TIOCGPTLCK, &lock), 0);
	cr_assert_eq(lock, 1);
	f = devpts_open_slave((uint32_t)n, O_RDWR);
	cr_assert_eq(PTR_ERR(f), -EIO);
	cr_assert_eq(ioc(m, TIOCSPTLCK, &zero), 0);
	s = devpts_open_slave((uint32_t)n, O_RDWR | O_NOCTTY);
	cr_assert(!IS_ERR(s));
	cr_assert_eq(ioc(s, TIOCGPTN, &n), -ENOTTY, "TIOCGPTN is the master's");
	cr_assert_eq(PTR_ERR(devpts_open_slave(DEVPTS_MAX - 1, O_RDWR)), -ENXIO);
}

Test(devpts, canonical_input_is_a_line_with_crnl_and_echo)
{
	char buf[64];

	open_pair();
	cr_assert_eq(wr(m, "ls"), 2);
	cr_assert_eq(rd(s, buf, sizeof(buf)), -EAGAIN, "no line yet");
	cr_assert_eq(wr(m, "x\x7f\r"), 3);
	cr_assert_eq(rd(s, buf, sizeof(buf)), 3);
	cr_assert_str_eq(buf, "ls\n");
	cr_assert_eq(rd(m, buf, sizeof(buf)), 8);
	cr_assert_str_eq(buf, "lsx\b \b\r\n", "echo with ECHOE erase and ONLCR");
}

Test(devpts, kill_erases_the_line_and_veof_reads_zero)
{
	char buf[64];

	open_pair();
	cr_assert_eq(wr(m, "abc\x15"
			   "d\n"),
		     6);
	cr_assert_eq(rd(s, buf, sizeof(buf)), 2);
	cr_assert_str_eq(buf, "d\n");
	cr_assert_eq(wr(m, "\x04"), 1);
	cr_assert_eq(rd(s, buf, sizeof(buf)), 0, "VEOF on an empty line is end of file");
	cr_assert_eq(wr(m, "ab\x04"), 3);
	cr_assert_eq(rd(s, buf, sizeof(buf)), 2, "VEOF ends a line without a newline");
}

Test(devpts, slave_output_gets_onlcr)
{
	char buf[64];

	open_pair();
	cr_assert_eq(wr(s, "a\nb"), 3);
	cr_assert_eq(rd(m, buf, sizeof(buf)), 4);
	cr_assert_str_eq(buf, "a\r\nb");
	cr_assert_eq(rd(m, buf, sizeof(buf)), -EAGAIN);
}

Test(devpts, raw_mode_passes_bytes_without_echo)
{
	struct kterm tm;
	char buf[64];

	open_pair();
	cr_assert_eq(ioc(s, TCGETS, &tm), 0);
	cr_assert_eq(tm.c_lflag & (ICANON | ECHO | ISIG), ICANON | ECHO | ISIG);
	cr_assert_eq(tm.c_cc[VINTR], 3);
	cr_assert_eq(wr(m, "pending"), 7);
	tm.c_lflag &= ~(ICANON | ECHO | ISIG);
	tm.c_iflag &= ~ICRNL;
	tm.c_oflag &= ~OPOST;
	cr_assert_eq(ioc(s, TCSETSF, &tm), 0, "TCSETSF drops pending input");
	rd(m, buf, sizeof(buf));
	cr_assert_eq(wr(m, "q\r\x03"), 3);
	cr_assert_eq(rd(s, buf, sizeof(buf)), 3);
	cr_assert_eq(memcmp(buf, "q\r\x03", 3), 0);
	cr_assert_eq(rd(m, buf, sizeof(buf)), -EAGAIN, "no echo");
	cr_assert_eq(wr(s, "\n"), 1);
	cr_assert_eq(rd(m, buf, sizeof(buf)), 1, "no ONLCR without OPOST");
}

Test(devpts, window_size_is_shared_by_both_ends)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 }, got = { 0 };

	open_pair();
	cr_assert_eq(ioc(m, TIOCSWINSZ, &ws), 0);
	cr_assert_eq(ioc(s, TIOCGWINSZ, &got), 0);
	cr_assert_eq(got.ws_row, 24);
	cr_assert_eq(got.ws_col, 80);
}

Test(devpts, master_close_hangs_up_the_slave)
{
	char buf[8];

	open_pair();
	file_put(m);
	m = NULL;
	cr_assert_eq(rd(s, buf, sizeof(buf)), 0);
	cr_assert_eq(wr(s, "x"), -EIO);
}

Test(devpts, slave_close_makes_master_read_eio)
{
	char buf[8];

	open_pair();
	file_put(s);
	s = NULL;
	cr_assert_eq(rd(m, buf, sizeof(buf)), -EIO);
}

Test(devpts, no_controlling_terminal_without_a_task)
{
	cr_assert_eq(PTR_ERR(devpts_open_ctty(O_RDWR)), -ENXIO);
}

Test(devpts, ctty_ioctls_need_the_controlling_terminal)
{
	int32_t v;

	open_pair();
	cr_assert_eq(ioc(s, TIOCGPGRP, &v), -ENOTTY);
	cr_assert_eq(ioc(s, TIOCGSID, &v), -ENOTTY);
}

/* A host terminal the sentry was given (its console) is an entry of devpts with a number of
 * its own: opening it reaches the host terminal, and the guest's own ptys take the next ones. */
Test(devpts, host_terminal_is_an_entry_of_its_own)
{
	struct winsize ws = { .ws_row = 31, .ws_col = 99 }, got = { 0 };
	int hm, hs, idx, n = -1;
	struct stat st;
	struct file *f;

	hm = posix_openpt(O_RDWR | O_NOCTTY);
	if (hm < 0 || grantpt(hm) < 0 || unlockpt(hm) < 0)
		cr_skip_test("no pseudo-terminal on this machine");
	hs = open(ptsname(hm), O_RDWR | O_NOCTTY);
	cr_assert_geq(hs, 0);
	cr_assert_eq(fstat(hs, &st), 0);
	cr_assert_eq(ioctl(hm, TIOCSWINSZ, &ws), 0);
	idx = devpts_add_host(hs);
	cr_assert_geq(idx, 0);
	cr_assert_eq(devpts_add_host(hs), idx, "registered once");
	cr_assert_eq(devpts_host_index(st.st_rdev), idx);
	cr_assert_eq(devpts_host_index(st.st_rdev + 1), -1);
	close(hs); /* devpts keeps its own */
	f = devpts_open_slave((uint32_t)idx, O_RDWR | O_NOCTTY);
	cr_assert(!IS_ERR(f), "%ld", PTR_ERR(f));
	cr_assert_eq(ioc(f, TIOCGWINSZ, &got), 0);
	cr_assert_eq(got.ws_row, 31);
	cr_assert_eq(got.ws_col, 99);
	cr_assert_eq(wr(f, "hi"), 2);
	file_put(f);
	m = devpts_open_master(O_RDWR);
	cr_assert(!IS_ERR(m));
	cr_assert_eq(ioc(m, TIOCGPTN, &n), 0);
	cr_assert_neq(n, idx, "a new pair does not take the host terminal's number");
	close(hm);
}

/* A terminal a host file wraps (husk exec --tty's pty) is an entry while the file is open: the
 * entry keeps no copy of it after the last close, so the pty's master sees the hang-up. */
Test(devpts, host_file_terminal_is_an_entry_while_open)
{
	int hm, hs, idx;
	struct stat st;
	struct file *f;
	char c;

	hm = posix_openpt(O_RDWR | O_NOCTTY);
	if (hm < 0 || grantpt(hm) < 0 || unlockpt(hm) < 0)
		cr_skip_test("no pseudo-terminal on this machine");
	hs = open(ptsname(hm), O_RDWR | O_NOCTTY);
	cr_assert_geq(hs, 0);
	cr_assert_eq(fstat(hs, &st), 0);
	cr_assert_eq(devpts_host_index(st.st_rdev), -1);
	f = hostfile_create(hs, O_RDWR); /* takes hs */
	cr_assert_not_null(f);
	idx = devpts_host_index(st.st_rdev);
	cr_assert_geq(idx, 0);
	s = devpts_open_slave((uint32_t)idx, O_RDWR | O_NOCTTY);
	cr_assert(!IS_ERR(s), "%ld", PTR_ERR(s));
	file_put(f);
	cr_assert_eq(devpts_host_index(st.st_rdev), idx, "the file opened by its number holds it");
	file_put(s);
	s = NULL;
	cr_assert_eq(devpts_host_index(st.st_rdev), -1, "gone with the last file");
	/* No copy of the slave is left anywhere: the master reads the hang-up (EIO). */
	cr_assert_eq(read(hm, &c, 1), -1);
	cr_assert_eq(errno, EIO);
	close(hm);
}
