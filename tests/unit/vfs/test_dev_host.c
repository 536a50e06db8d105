/* SPDX-License-Identifier: Apache-2.0 */
/* The minimal /dev and host files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/err.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/dev/dev.h"
#include "tests/unit/vfs/fake_mm.h"
#include "tests/unit/vfs/tree.h"

static struct tree tr;
static struct harness h;

static void setup(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, MS_RDONLY);
}

static void teardown(void)
{
	harness_fini(&h);
}

TestSuite(devfs, .init = setup, .fini = teardown);
TestSuite(hostfile, .init = setup, .fini = teardown);

static void expect_dev(const char *path, uint64_t rdev)
{
	struct vfs_path p;
	struct vfs_attr a;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, path, 0, &p), 0, "%s", path);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	cr_assert_eq(a.mode, S_IFCHR | 0666, "%s: mode %o", path, a.mode);
	cr_assert_eq(a.rdev, rdev, "%s: rdev %#lx", path, (unsigned long)a.rdev);
	cr_assert_eq(a.uid, 0);
	vfs_path_put(&p);
}

Test(devfs, mounts_on_dev_with_linux_device_numbers)
{
	struct linux_statfs st;
	struct vfs_path p;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	expect_dev("/dev/null", 0x103);
	expect_dev("/dev/zero", 0x105);
	expect_dev("/dev/full", 0x107);
	expect_dev("/dev/random", 0x108);
	expect_dev("/dev/urandom", 0x109);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev/../etc", 0, &p), 0);
	cr_assert_eq(p.node, &tr.etc->base);
	vfs_path_put(&p);
	expect_dev("/dev/tty", 0x500);
	expect_dev("/dev/ptmx", 0x502);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev/nosuch", 0, &p), -ENOENT);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev", 0, &p), 0);
	cr_assert_neq(p.mnt, h.k.root_mnt);
	cr_assert_eq(vfs_path_statfs(&p, &st), 0);
	cr_assert_eq(st.f_flags, 0x20 | 0x2 | 0x8, "ST_VALID|ST_NOSUID|ST_NOEXEC, not read-only");
	vfs_path_put(&p);
}

Test(devfs, root_without_dev_gets_nothing)
{
	struct testfs *fs = testfs_create();
	struct harness h2;
	struct vfs_path p;

	harness_init(&h2, fs, 0);
	cr_assert_eq(vfs_mount_dev(&h2.k), 0);
	cr_assert_eq(vfs_lookup_at(&h2.t, AT_FDCWD, "/dev/null", 0, &p), -ENOENT);
	harness_fini(&h2);
}

static struct file *open_dev(const char *path, int flags)
{
	struct file *f;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, path, flags, 0, &f), 0, "%s", path);
	return f;
}

Test(devfs, null_zero_full_behave_as_linux)
{
	char buf[8];
	struct iovec iov = { buf, sizeof(buf) };
	int64_t pos = 0;
	struct file *f;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	f = open_dev("/dev/null", O_RDWR);
	cr_assert_eq(f->ops->read(f, &iov, 1, &pos), 0);
	cr_assert_eq(f->ops->write(f, &iov, 1, &pos), 8);
	cr_assert_eq(f->ops->llseek(f, 100, SEEK_SET), 0);
	file_put(f);
	f = open_dev("/dev/zero", O_RDWR);
	memset(buf, 'x', sizeof(buf));
	cr_assert_eq(f->ops->read(f, &iov, 1, &pos), 8);
	cr_assert_eq(memcmp(buf, "\0\0\0\0\0\0\0\0", 8), 0);
	cr_assert_eq(f->ops->write(f, &iov, 1, &pos), 8);
	file_put(f);
	f = open_dev("/dev/full", O_RDWR);
	cr_assert_eq(f->ops->write(f, &iov, 1, &pos), -ENOSPC);
	file_put(f);
}

Test(devfs, urandom_gives_random_bytes)
{
	uint8_t a[64] = { 0 }, b[64] = { 0 };
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	int64_t pos = 0;
	struct file *f;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	f = open_dev("/dev/urandom", O_RDONLY);
	cr_assert_eq(f->ops->read(f, iov, 2, &pos), 128);
	cr_assert_neq(memcmp(a, b, sizeof(a)), 0);
	file_put(f);
}

Test(devfs, unknown_device_numbers_are_enxio)
{
	struct file *f = devfs_open_chrdev(1, 42, O_RDONLY);

	cr_assert(IS_ERR(f));
	cr_assert_eq(PTR_ERR(f), -ENXIO);
	f = devfs_open_chrdev(1, 3, O_RDONLY);
	cr_assert(!IS_ERR(f));
	file_put(f);
}

Test(devfs, listing_has_dots_and_devices)
{
	struct vfs_path p;
	struct file *f;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	f = open_dev("/dev", O_RDONLY | O_DIRECTORY);
	cr_assert_not_null(f->ops->iterate);
	file_put(f);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev/null/", 0, &p), -ENOTDIR);
}

Test(hostfile, pipe_is_a_stream_file)
{
	int p[2];
	char buf[8] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct vfs_attr a;
	struct file *w, *r;

	cr_assert_eq(pipe(p), 0);
	w = hostfile_create(p[1], O_WRONLY);
	r = hostfile_create(p[0], O_RDONLY);
	cr_assert_eq(w->flags, O_WRONLY | 0100000);
	cr_assert_null(w->ops->llseek);
	cr_assert_eq(file_getattr(w, &a), 0);
	cr_assert(S_ISFIFO(a.mode));
	iov.iov_base = "hey";
	iov.iov_len = 3;
	cr_assert_eq(w->ops->write(w, &iov, 1, NULL), 3);
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	cr_assert_eq(r->ops->read(r, &iov, 1, NULL), 3);
	cr_assert_str_eq(buf, "hey");
	file_put(w);
	cr_assert_eq(r->ops->read(r, &iov, 1, NULL), 0, "the write end was closed by the put");
	file_put(r);
	cr_assert_eq(fcntl(p[0], F_GETFD), -1);
	cr_assert_eq(errno, EBADF);
}

Test(hostfile, nonblocking_read_of_empty_pipe_is_eagain)
{
	int p[2];
	char buf[4];
	struct iovec iov = { buf, sizeof(buf) };
	struct file *r;

	cr_assert_eq(pipe(p), 0);
	r = hostfile_create(p[0], O_RDONLY | O_NONBLOCK);
	cr_assert_eq(r->ops->read(r, &iov, 1, NULL), -EAGAIN);
	cr_assert_eq(write(p[1], "z", 1), 1);
	cr_assert_eq(r->ops->read(r, &iov, 1, NULL), 1);
	file_put(r);
	close(p[1]);
}

Test(hostfile, terminal_ioctls_on_pipe_are_enotty_and_fionread_works)
{
	int p[2], n = -1;
	uint8_t buf[64];
	struct file *r;

	cr_assert_eq(pipe(p), 0);
	r = hostfile_create(p[0], O_RDONLY);
	cr_assert_eq(r->ops->ioctl(r, &h.t, TCGETS, (uint64_t)(uintptr_t)buf), -ENOTTY);
	cr_assert_eq(r->ops->ioctl(r, &h.t, TIOCGWINSZ, (uint64_t)(uintptr_t)buf), -ENOTTY);
	cr_assert_eq(r->ops->ioctl(r, &h.t, TIOCGPGRP, (uint64_t)(uintptr_t)buf), -ENOTTY);
	cr_assert_eq(r->ops->ioctl(r, &h.t, 0x5409 /* TCSBRK */, 0), -ENOTTY);
	cr_assert_eq(write(p[1], "abc", 3), 3);
	cr_assert_eq(r->ops->ioctl(r, &h.t, FIONREAD, (uint64_t)(uintptr_t)&n), 0);
	cr_assert_eq(n, 3);
	file_put(r);
	close(p[1]);
}

Test(hostfile, terminal_ioctls_answer_from_the_host_terminal)
{
	struct winsize ws = { .ws_row = 33, .ws_col = 77 }, got = { 0 };
	struct termios host;
	uint8_t buf[64];
	int master, slave, pgrp = 0;
	struct file *f;

	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		cr_skip_test("no pseudo-terminal on this machine");
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	cr_assert_geq(slave, 0);
	cr_assert_eq(ioctl(master, TIOCSWINSZ, &ws), 0);
	cr_assert_eq(tcgetattr(slave, &host), 0);
	f = hostfile_create(slave, O_RDWR);
	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(f->ops->ioctl(f, &h.t, TCGETS, (uint64_t)(uintptr_t)buf), 0);
	cr_assert_eq(memcmp(buf, &host.c_iflag, 4), 0);
	cr_assert_eq(memcmp(buf + 12, &host.c_lflag, 4), 0);
	cr_assert_eq(buf[36], 0xee, "Linux's termios is 36 bytes");
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCGWINSZ, (uint64_t)(uintptr_t)&got), 0);
	cr_assert_eq(got.ws_row, 33);
	cr_assert_eq(got.ws_col, 77);
	h.tg.pgid = 42;
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCGPGRP, (uint64_t)(uintptr_t)&pgrp), 0);
	cr_assert_eq(pgrp, 42, "the guest's own group, not a host one");
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCGWINSZ, 8), -EFAULT);
	file_put(f);
	close(master);
}

Test(hostfile, termios_changes_reach_the_host_terminal_within_the_allow_list)
{
	struct termios host, guest;
	int master, slave, pgrp = 7;
	char c = 'x';
	struct file *f;

	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		cr_skip_test("no pseudo-terminal on this machine");
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	cr_assert_geq(slave, 0);
	f = hostfile_create(slave, O_RDWR);
	cr_assert_eq(f->ops->ioctl(f, &h.t, TCGETS, (uint64_t)(uintptr_t)&guest), 0);
	cr_assert(guest.c_lflag & ECHO);
	guest.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
	cr_assert_eq(f->ops->ioctl(f, &h.t, TCSETSW, (uint64_t)(uintptr_t)&guest), 0);
	cr_assert_eq(tcgetattr(slave, &host), 0);
	cr_assert_eq(host.c_lflag & (ECHO | ICANON), 0, "the host terminal took the change");
	cr_assert_eq(f->ops->ioctl(f, &h.t, TCFLSH, 7), -EINVAL);
	cr_assert_eq(f->ops->ioctl(f, &h.t, TCFLSH, TCIOFLUSH), 0);
	/* Never passed to the host: typing into the terminal, consoles, line disciplines. */
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCSTI, (uint64_t)(uintptr_t)&c), -ENOTTY);
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCCONS, 0), -ENOTTY);
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCSETD, (uint64_t)(uintptr_t)&pgrp), -ENOTTY);
	/* Job control is the sentry's: not the caller's controlling terminal, no foreground. */
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCSPGRP, (uint64_t)(uintptr_t)&pgrp), -ENOTTY);
	cr_assert_eq(f->ops->ioctl(f, &h.t, TIOCGSID, (uint64_t)(uintptr_t)&pgrp), -ENOTTY);
	file_put(f);
	close(master);
}

Test(hostfile, empty_path_lookup_reaches_its_node)
{
	struct vfs_path p, q;
	struct vfs_attr a;
	struct file *f;
	int fds[2], fd;

	cr_assert_eq(pipe(fds), 0);
	f = hostfile_create(fds[1], O_WRONLY);
	fd = fdtable_install(h.t.fdt, f, 0, false, 1024);
	cr_assert_eq(vfs_lookup_at(&h.t, fd, "", AT_EMPTY_PATH, &p), 0);
	cr_assert_eq(p.node, f->node);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	cr_assert(S_ISFIFO(a.mode));
	cr_assert_eq(vfs_lookup_at(&h.t, fd, "x", 0, &q), -ENOTDIR);
	vfs_path_put(&p);
	file_put(f);
	close(fds[0]);
}
