/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syscalls/sys_file.c over the test filesystem (read-only root) with /dev mounted, guest
 * memory faked by fake_mm.c (guest addresses are sentry pointers; one range can fault).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/uio.h>
#include <unistd.h>

#include "include/abi/linux/stat.h"
#include "syscalls/handlers.h"
#include "tests/unit/vfs/fake_mm.h"
#include "tests/unit/vfs/tree.h"

static struct tree tr;
static struct harness h;

static void setup(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, MS_RDONLY);
	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	fake_mm_set_bad(NULL, 0);
}

static void teardown(void)
{
	harness_fini(&h);
}

TestSuite(sys_file, .init = setup, .fini = teardown);

#define A(x) ((uint64_t)(uintptr_t)(x))

static long call(long (*fn)(struct task *, const struct syscall_args *), uint64_t a0, uint64_t a1,
		 uint64_t a2, uint64_t a3)
{
	struct syscall_args args = { .a = { a0, a1, a2, a3, 0, 0 } };

	return fn(&h.t, &args);
}

static int open_fd(const char *path, int flags)
{
	long fd = call(sys_openat, (uint64_t)AT_FDCWD, A(path), (uint64_t)flags, 0);

	cr_assert_geq(fd, 0, "open %s: %ld", path, fd);
	return (int)fd;
}

/* A pipe whose write end is installed as a host file; returns the fd, *rd the host read end. */
static int host_pipe_fd(int *rd)
{
	int p[2];
	struct file *f;
	long fd;

	cr_assert_eq(pipe(p), 0);
	f = hostfile_create(p[1], O_WRONLY);
	cr_assert_not_null(f);
	fd = fdtable_install(h.t.fdt, f, 0, false, 1024);
	file_put(f);
	*rd = p[0];
	return (int)fd;
}

Test(sys_file, read_moves_file_data_and_advances_position)
{
	char buf[64] = { 0 };
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_read, fd, A(buf), 4, 0), 4);
	cr_assert_str_eq(buf, "root");
	cr_assert_eq(call(sys_read, fd, A(buf), sizeof(buf), 0), 26);
	cr_assert_eq(call(sys_read, fd, A(buf), sizeof(buf), 0), 0);
	cr_assert_eq(call(sys_lseek, fd, 0, SEEK_CUR, 0), 30);
	cr_assert_eq(call(sys_lseek, fd, (uint64_t)-2, SEEK_END, 0), 28);
	cr_assert_eq(call(sys_lseek, fd, 0, 7, 0), -EINVAL);
	cr_assert_eq(call(sys_lseek, fd, (uint64_t)-100, SEEK_CUR, 0), -EINVAL);
}

Test(sys_file, pread_leaves_position_alone)
{
	char buf[8] = { 0 };
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_pread64, fd, A(buf), 3, 5), 3);
	cr_assert_str_eq(buf, "x:0");
	cr_assert_eq(call(sys_lseek, fd, 0, SEEK_CUR, 0), 0);
	cr_assert_eq(call(sys_pread64, fd, A(buf), 3, (uint64_t)-1), -EINVAL);
	cr_assert_eq(call(sys_pread64, 99, A(buf), 3, (uint64_t)-1), -EINVAL, "offset first");
	cr_assert_eq(call(sys_pread64, 99, A(buf), 3, 0), -EBADF);
}

Test(sys_file, stream_files_have_no_position)
{
	char buf[4];
	int rd, fd = host_pipe_fd(&rd);

	cr_assert_eq(call(sys_lseek, fd, 0, SEEK_SET, 0), -ESPIPE);
	cr_assert_eq(call(sys_lseek, fd, 0, 5, 0), -EINVAL, "whence is checked first");
	cr_assert_eq(call(sys_pwrite64, fd, A("ab"), 2, 0), -ESPIPE);
	cr_assert_eq(call(sys_write, fd, A("abc"), 3, 0), 3);
	cr_assert_eq(read(rd, buf, sizeof(buf)), 3);
	cr_assert_eq(memcmp(buf, "abc", 3), 0);
	cr_assert_eq(call(sys_read, fd, A(buf), 1, 0), -EBADF, "write-only");
	close(rd);
}

Test(sys_file, write_on_read_only_fd_is_ebadf)
{
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_write, fd, A("x"), 1, 0), -EBADF);
	cr_assert_eq(call(sys_read, 42, A("x"), 1, 0), -EBADF);
}

Test(sys_file, each_direction_needs_its_access_mode)
{
	int fd = open_fd("/dev/null", O_RDONLY);

	cr_assert_eq(call(sys_write, fd, A("x"), 1, 0), -EBADF);
	fd = open_fd("/dev/null", O_WRONLY);
	cr_assert_eq(call(sys_write, fd, A("xyz"), 3, 0), 3);
	cr_assert_eq(call(sys_read, fd, A("x"), 1, 0), -EBADF);
}

Test(sys_file, read_of_a_directory_is_eisdir)
{
	char buf[8];
	int fd = open_fd("/etc", O_RDONLY);

	cr_assert_eq(call(sys_read, fd, A(buf), sizeof(buf), 0), -EISDIR);
	cr_assert_eq(call(sys_read, fd, A(buf), 0, 0), -EISDIR);
}

Test(sys_file, read_faulting_at_first_byte_is_efault)
{
	char *buf = aligned_alloc(4096, 3 * 4096);
	int fd = open_fd("/dev/zero", O_RDONLY);

	fake_mm_set_bad(buf, 4096);
	cr_assert_eq(call(sys_read, fd, A(buf), 100, 0), -EFAULT);
	free(buf);
}

Test(sys_file, read_faulting_after_some_bytes_returns_them)
{
	char *buf = aligned_alloc(4096, 3 * 4096);
	int fd = open_fd("/dev/zero", O_RDONLY);

	memset(buf, 'x', 3 * 4096);
	fake_mm_set_bad(buf + 4096 + 100, 10);
	cr_assert_eq(call(sys_read, fd, A(buf), 3 * 4096, 0), 4096 + 100);
	cr_assert_eq(buf[4096 + 99], 0);
	cr_assert_eq(buf[4096 + 110], 'x');
	free(buf);
}

Test(sys_file, big_read_takes_several_rounds_of_iovecs)
{
	size_t len = 5 << 20;
	char *buf = aligned_alloc(4096, len);
	int fd = open_fd("/dev/zero", O_RDONLY);

	memset(buf, 'x', len);
	fake_mm_translate_calls = 0;
	cr_assert_eq(call(sys_read, fd, A(buf), len, 0), (long)len);
	cr_assert_gt(fake_mm_translate_calls, 1);
	cr_assert_eq(buf[len - 1], 0);
	free(buf);
}

Test(sys_file, full_device_write_is_enospc)
{
	int fd = open_fd("/dev/full", O_RDWR);
	char c = 1;

	cr_assert_eq(call(sys_write, fd, A("x"), 1, 0), -ENOSPC);
	cr_assert_eq(call(sys_read, fd, A(&c), 1, 0), 1);
	cr_assert_eq(c, 0);
}

Test(sys_file, readv_checks_the_vector)
{
	char a[4] = { 0 }, b[8] = { 0 };
	struct iovec iov[2] = { { a, 4 }, { b, 8 } };
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_readv, fd, A(iov), 1025, 0), -EINVAL);
	cr_assert_eq(call(sys_readv, fd, A(iov), (uint64_t)-1, 0), -EINVAL);
	cr_assert_eq(call(sys_readv, fd, A(iov), 0, 0), 0);
	cr_assert_eq(call(sys_readv, fd, 16, 2, 0), -EFAULT);
	cr_assert_eq(call(sys_readv, fd, A(iov), 2, 0), 12);
	cr_assert_eq(memcmp(a, "root", 4), 0);
	cr_assert_eq(memcmp(b, ":x:0:0:r", 8), 0);
	iov[1].iov_len = (size_t)-1;
	cr_assert_eq(call(sys_readv, fd, A(iov), 2, 0), -EINVAL);
}

Test(sys_file, writev_gathers_in_order)
{
	char buf[16] = { 0 };
	struct iovec iov[3] = { { "ab", 2 }, { "", 0 }, { "cde", 3 } };
	int rd, fd = host_pipe_fd(&rd);

	cr_assert_eq(call(sys_writev, fd, A(iov), 3, 0), 5);
	cr_assert_eq(read(rd, buf, sizeof(buf)), 5);
	cr_assert_str_eq(buf, "abcde");
	close(rd);
}

/* Walks a getdents64 buffer and returns how many records it has; copies names into names. */
static int parse_dirents(const char *buf, long len, char names[][32])
{
	int n = 0;

	for (long off = 0; off < len; n++) {
		const struct linux_dirent64 *d = (const void *)(buf + off);

		cr_assert_eq(d->d_reclen % 8, 0);
		strcpy(names[n], d->d_name);
		off += d->d_reclen;
	}
	return n;
}

Test(sys_file, getdents64_lists_and_resumes)
{
	char buf[4096] __attribute__((aligned(8)));
	char names[16][32];
	int fd = open_fd("/dev", O_RDONLY | O_DIRECTORY);
	long n;

	n = call(sys_getdents64, fd, A(buf), 60, 0);
	cr_assert_eq(parse_dirents(buf, n, names), 2);
	cr_assert_str_eq(names[0], ".");
	cr_assert_str_eq(names[1], "..");
	n = call(sys_getdents64, fd, A(buf), sizeof(buf), 0);
	cr_assert_eq(parse_dirents(buf, n, names), 14);
	cr_assert_str_eq(names[0], "fd");
	cr_assert_str_eq(names[1], "full");
	cr_assert_str_eq(names[2], "mqueue");
	cr_assert_str_eq(names[7], "shm");
	cr_assert_str_eq(names[13], "zero");
	cr_assert_eq(call(sys_getdents64, fd, A(buf), sizeof(buf), 0), 0);
	cr_assert_eq(call(sys_lseek, fd, 0, SEEK_SET, 0), 0);
	cr_assert_eq(call(sys_getdents64, fd, A(buf), 10, 0), -EINVAL);
	fake_mm_set_bad(buf, sizeof(buf));
	cr_assert_eq(call(sys_getdents64, fd, A(buf), sizeof(buf), 0), -EFAULT);
	fake_mm_set_bad(NULL, 0);
	n = call(sys_getdents64, fd, A(buf), sizeof(buf), 0);
	cr_assert_eq(parse_dirents(buf, n, names), 16, "a fault loses no entries");
}

Test(sys_file, getdents64_of_file_is_enotdir)
{
	char buf[256];
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_getdents64, fd, A(buf), sizeof(buf), 0), -ENOTDIR);
}

Test(sys_file, readlink_copies_truncated_target)
{
	char buf[64] = { 0 };

	cr_assert_eq(call(sys_readlink, A("/link_abs"), A(buf), sizeof(buf), 0), 11);
	cr_assert_str_eq(buf, "/etc/passwd");
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(call(sys_readlinkat, (uint64_t)AT_FDCWD, A("/dir/rel"), A(buf), 5), 5);
	cr_assert_str_eq(buf, "../et");
	cr_assert_eq(call(sys_readlink, A("/etc"), A(buf), sizeof(buf), 0), -EINVAL);
	cr_assert_eq(call(sys_readlink, A("/link_abs"), A(buf), 0, 0), -EINVAL);
	cr_assert_eq(call(sys_readlink, A(""), A(buf), sizeof(buf), 0), -ENOENT);
}

Test(sys_file, access_family_checks_modes)
{
	cr_assert_eq(call(sys_access, A("/etc/passwd"), R_OK, 0, 0), 0);
	cr_assert_eq(call(sys_access, A("/etc/passwd"), W_OK, 0, 0), -EROFS);
	cr_assert_eq(call(sys_faccessat, (uint64_t)AT_FDCWD, A("/etc"), X_OK, 0), 0);
	cr_assert_eq(call(sys_faccessat2, (uint64_t)AT_FDCWD, A("/link_abs"), F_OK,
			  AT_SYMLINK_NOFOLLOW),
		     0);
	cr_assert_eq(call(sys_faccessat2, (uint64_t)AT_FDCWD, A("/etc"), F_OK, 0x4000), -EINVAL);
	cr_assert_eq(call(sys_access, A("/etc"), 8, 0, 0), -EINVAL);
}

Test(sys_file, getcwd_returns_length_with_nul)
{
	char buf[16];

	cr_assert_eq(call(sys_chdir, A("/dir/sub"), 0, 0, 0), 0);
	cr_assert_eq(call(sys_getcwd, A(buf), sizeof(buf), 0, 0), 9);
	cr_assert_str_eq(buf, "/dir/sub");
	cr_assert_eq(call(sys_getcwd, A(buf), 8, 0, 0), -ERANGE);
	cr_assert_eq(call(sys_getcwd, A(buf), 0, 0, 0), -ERANGE);
	cr_assert_eq(call(sys_chdir, A("/etc/passwd"), 0, 0, 0), -ENOTDIR);
}

Test(sys_file, fchdir_accepts_o_path_directories)
{
	char buf[16];
	int fd = open_fd("/etc", O_PATH);
	int file = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_fchdir, fd, 0, 0, 0), 0);
	cr_assert_eq(call(sys_getcwd, A(buf), sizeof(buf), 0, 0), 5);
	cr_assert_str_eq(buf, "/etc");
	cr_assert_eq(call(sys_fchdir, file, 0, 0, 0), -ENOTDIR);
	cr_assert_eq(call(sys_fchdir, 77, 0, 0, 0), -EBADF);
}

Test(sys_file, o_path_files_refuse_io)
{
	char buf[8];
	int fd = open_fd("/etc/passwd", O_PATH);

	cr_assert_eq(call(sys_read, fd, A(buf), 1, 0), -EBADF);
	cr_assert_eq(call(sys_lseek, fd, 0, SEEK_SET, 0), -EBADF);
	cr_assert_eq(call(sys_ioctl, fd, FIOCLEX, 0, 0), -EBADF);
	cr_assert_eq(call(sys_fcntl, fd, F_SETFL, 0, 0), -EBADF);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFL, 0, 0), O_PATH);
}

Test(sys_file, open_copies_path_with_limits)
{
	static char longpath[5000];

	memset(longpath, 'a', sizeof(longpath) - 1);
	cr_assert_eq(call(sys_open, A(longpath), O_RDONLY, 0, 0), -ENAMETOOLONG);
	cr_assert_eq(call(sys_open, 8, O_RDONLY, 0, 0), -EFAULT);
	cr_assert_eq(call(sys_open, A(""), O_RDONLY, 0, 0), -ENOENT);
	cr_assert_eq(call(sys_open, A("/etc/passwd"), O_WRONLY, 0, 0), -EROFS);
}

Test(sys_file, open_installs_lowest_fd_with_cloexec)
{
	int a = open_fd("/etc/passwd", O_RDONLY);
	int b = open_fd("/etc/passwd", O_RDONLY | O_CLOEXEC);

	cr_assert_eq(a, 0);
	cr_assert_eq(b, 1);
	cr_assert_eq(call(sys_fcntl, a, F_GETFD, 0, 0), 0);
	cr_assert_eq(call(sys_fcntl, b, F_GETFD, 0, 0), FD_CLOEXEC);
	cr_assert_eq(call(sys_close, a, 0, 0, 0), 0);
	cr_assert_eq(call(sys_close, a, 0, 0, 0), -EBADF);
	cr_assert_eq(open_fd("/etc", O_RDONLY), 0);
}

Test(sys_file, open_past_rlimit_is_emfile)
{
	h.tg.rlimits[RLIMIT_NOFILE].rlim_cur = 2;
	open_fd("/etc/passwd", O_RDONLY);
	open_fd("/etc/passwd", O_RDONLY);
	cr_assert_eq(call(sys_open, A("/etc/passwd"), O_RDONLY, 0, 0), -EMFILE);
	cr_assert_eq(call(sys_dup, 0, 0, 0, 0), -EMFILE);
}

Test(sys_file, dup_family_follows_linux)
{
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_dup, fd, 0, 0, 0), 1);
	cr_assert_eq(call(sys_dup2, fd, fd, 0, 0), fd);
	cr_assert_eq(call(sys_dup2, 9, 9, 0, 0), -EBADF);
	cr_assert_eq(call(sys_dup3, fd, fd, 0, 0), -EINVAL);
	cr_assert_eq(call(sys_dup3, fd, 5, O_RDONLY | 1, 0), -EINVAL);
	cr_assert_eq(call(sys_dup3, fd, 5, O_CLOEXEC, 0), 5);
	cr_assert_eq(call(sys_fcntl, 5, F_GETFD, 0, 0), FD_CLOEXEC);
	cr_assert_eq(call(sys_dup2, fd, 1, 0, 0), 1, "over an open fd");
	cr_assert_eq(call(sys_dup2, fd, (uint64_t)-1, 0, 0), -EBADF);
	cr_assert_eq(call(sys_dup2, fd, 1024, 0, 0), -EBADF);
	cr_assert_eq(call(sys_dup2, 77, 3, 0, 0), -EBADF);
}

Test(sys_file, fcntl_dupfd_and_flags)
{
	int fd = open_fd("/etc/passwd", O_RDONLY);

	cr_assert_eq(call(sys_fcntl, fd, F_DUPFD, 10, 0), 10);
	cr_assert_eq(call(sys_fcntl, fd, F_DUPFD_CLOEXEC, 10, 0), 11);
	cr_assert_eq(call(sys_fcntl, 11, F_GETFD, 0, 0), FD_CLOEXEC);
	cr_assert_eq(call(sys_fcntl, fd, F_DUPFD, 1024, 0), -EINVAL);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFL, 0, 0), 0100000);
	cr_assert_eq(call(sys_fcntl, fd, F_SETFL, O_NONBLOCK | O_APPEND | O_RDWR | O_TRUNC, 0), 0);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFL, 0, 0), 0100000 | O_NONBLOCK | O_APPEND);
	cr_assert_eq(call(sys_fcntl, fd, F_SETFD, FD_CLOEXEC, 0), 0);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFD, 0, 0), FD_CLOEXEC);
	/* Record locks read a struct flock: a bad address is a fault. */
	cr_assert_eq(call(sys_fcntl, fd, F_GETLK, 0, 0), -EFAULT);
	cr_assert_eq(call(sys_fcntl, 99, F_GETFD, 0, 0), -EBADF);
}

Test(sys_file, ioctl_generic_commands)
{
	int fd = open_fd("/etc/passwd", O_RDONLY);
	int on = 1, n = 0;
	char buf[16];

	cr_assert_eq(call(sys_ioctl, fd, FIOCLEX, 0, 0), 0);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFD, 0, 0), FD_CLOEXEC);
	cr_assert_eq(call(sys_ioctl, fd, FIONCLEX, 0, 0), 0);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFD, 0, 0), 0);
	cr_assert_eq(call(sys_ioctl, fd, FIONBIO, A(&on), 0), 0);
	cr_assert_eq(call(sys_fcntl, fd, F_GETFL, 0, 0) & O_NONBLOCK, O_NONBLOCK);
	cr_assert_eq(call(sys_ioctl, fd, FIONBIO, 8, 0), -EFAULT);
	cr_assert_eq(call(sys_read, fd, A(buf), 10, 0), 10);
	cr_assert_eq(call(sys_ioctl, fd, FIONREAD, A(&n), 0), 0);
	cr_assert_eq(n, 20);
	cr_assert_eq(call(sys_ioctl, fd, TCGETS, A(buf), 0), -ENOTTY);
	cr_assert_eq(call(sys_ioctl, 99, FIOCLEX, 0, 0), -EBADF);
}

Test(sys_file, umask_returns_previous_value)
{
	cr_assert_eq(call(sys_umask, 077, 0, 0, 0), 022);
	cr_assert_eq(call(sys_umask, 01777, 0, 0, 0), 077);
	cr_assert_eq(call(sys_umask, 0, 0, 0, 0), 0777);
}
