/* SPDX-License-Identifier: Apache-2.0 */
/* File descriptor tables and file reference counting. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>

#include "sentry/vfs/vfs.h"

static int released;

static void count_release(struct file *f)
{
	released++;
}

static const struct file_ops counting_ops = {
	.release = count_release,
};

static struct file *new_file(void)
{
	struct file *f = file_alloc(&counting_ops, O_RDONLY, NULL);

	cr_assert_not_null(f);
	return f;
}

static void reset(void)
{
	released = 0;
}

TestSuite(vfs_fdtable, .init = reset);
TestSuite(vfs_file, .init = reset);

Test(vfs_file, release_runs_once_on_last_put)
{
	struct file *f = new_file();

	file_get(f);
	file_get(f);
	file_put(f);
	file_put(f);
	cr_assert_eq(released, 0);
	file_put(f);
	cr_assert_eq(released, 1);
}

Test(vfs_fdtable, install_uses_lowest_free_fd)
{
	struct fdtable *t = fdtable_create();
	struct file *f = new_file();

	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 0);
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 1);
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 2);
	cr_assert_eq(fdtable_close(t, 1), 0);
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 1);
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 3);
	cr_assert_eq(fdtable_close(t, 0), 0);
	cr_assert_eq(fdtable_install(t, f, 2, false, 1024), 4, "min_fd skips fd 0");
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 0);
	cr_assert_eq(fdtable_install(t, f, 100, false, 1024), 100, "grows the table");
	file_put(f);
	fdtable_put(t);
	cr_assert_eq(released, 1);
}

Test(vfs_fdtable, lookup_returns_a_reference_or_null)
{
	struct fdtable *t = fdtable_create();
	struct file *f = new_file();

	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 0);
	file_put(f);
	f = fdtable_lookup(t, 0);
	cr_assert_not_null(f);
	cr_assert_eq(fdtable_close(t, 0), 0);
	cr_assert_eq(released, 0, "the lookup's reference keeps it open");
	file_put(f);
	cr_assert_eq(released, 1);
	cr_assert_null(fdtable_lookup(t, 0));
	cr_assert_null(fdtable_lookup(t, -1));
	cr_assert_null(fdtable_lookup(t, 5000));
	fdtable_put(t);
}

Test(vfs_fdtable, close_of_free_fd_is_ebadf)
{
	struct fdtable *t = fdtable_create();

	cr_assert_eq(fdtable_close(t, 0), -EBADF);
	cr_assert_eq(fdtable_close(t, -1), -EBADF);
	cr_assert_eq(fdtable_get_cloexec(t, 3), -EBADF);
	cr_assert_eq(fdtable_set_cloexec(t, 3, true), -EBADF);
	fdtable_put(t);
}

Test(vfs_fdtable, cloexec_is_per_fd)
{
	struct fdtable *t = fdtable_create();
	struct file *f = new_file();

	cr_assert_eq(fdtable_install(t, f, 0, true, 1024), 0);
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 1);
	cr_assert_eq(fdtable_get_cloexec(t, 0), 1);
	cr_assert_eq(fdtable_get_cloexec(t, 1), 0);
	cr_assert_eq(fdtable_set_cloexec(t, 1, true), 0);
	cr_assert_eq(fdtable_set_cloexec(t, 0, false), 0);
	cr_assert_eq(fdtable_get_cloexec(t, 0), 0);
	cr_assert_eq(fdtable_get_cloexec(t, 1), 1);
	/* A closed fd forgets its flag. */
	cr_assert_eq(fdtable_close(t, 1), 0);
	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 1);
	cr_assert_eq(fdtable_get_cloexec(t, 1), 0);
	file_put(f);
	fdtable_put(t);
}

Test(vfs_fdtable, install_at_replaces_an_open_fd)
{
	struct fdtable *t = fdtable_create();
	struct file *a = new_file(), *b = new_file(), *got;

	cr_assert_eq(fdtable_install(t, a, 0, false, 1024), 0);
	file_put(a);
	cr_assert_eq(fdtable_install_at(t, b, 0, true, 1024), 0);
	cr_assert_eq(released, 1, "the file that was at fd 0 is closed");
	got = fdtable_lookup(t, 0);
	cr_assert_eq(got, b);
	file_put(got);
	cr_assert_eq(fdtable_get_cloexec(t, 0), 1);
	cr_assert_eq(fdtable_install_at(t, b, 7, false, 1024), 7);
	cr_assert_eq(fdtable_install(t, b, 0, false, 1024), 1);
	file_put(b);
	fdtable_put(t);
	cr_assert_eq(released, 2);
}

Test(vfs_fdtable, install_past_limit_is_emfile)
{
	struct fdtable *t = fdtable_create();
	struct file *f = new_file();

	for (int i = 0; i < 3; i++)
		cr_assert_eq(fdtable_install(t, f, 0, false, 3), i);
	cr_assert_eq(fdtable_install(t, f, 0, false, 3), -EMFILE);
	cr_assert_eq(fdtable_install(t, f, 5, false, 3), -EMFILE);
	cr_assert_eq(fdtable_install_at(t, f, 3, false, 3), -EBADF);
	cr_assert_eq(fdtable_install_at(t, f, -1, false, 3), -EBADF);
	cr_assert_eq(fdtable_close(t, 2), 0);
	cr_assert_eq(fdtable_install(t, f, 0, false, 3), 2);
	file_put(f);
	fdtable_put(t);
	cr_assert_eq(released, 1);
}

Test(vfs_fdtable, dup_shares_files_and_flags)
{
	struct fdtable *t = fdtable_create(), *d;
	struct file *f = new_file(), *got;

	cr_assert_eq(fdtable_install(t, f, 0, false, 1024), 0);
	cr_assert_eq(fdtable_install(t, f, 4, true, 1024), 4);
	file_put(f);
	d = fdtable_dup(t);
	cr_assert_not_null(d);
	got = fdtable_lookup(d, 4);
	cr_assert_eq(got, f);
	file_put(got);
	cr_assert_eq(fdtable_get_cloexec(d, 4), 1);
	cr_assert_eq(fdtable_install(d, f, 0, false, 1024), 1);
	cr_assert_eq(fdtable_close(t, 0), 0);
	cr_assert_eq(fdtable_get_cloexec(d, 0), 0, "closing in one table leaves the other");
	fdtable_put(t);
	cr_assert_eq(released, 0);
	fdtable_put(d);
	cr_assert_eq(released, 1);
}

Test(vfs_fdtable, close_on_exec_closes_only_marked_fds)
{
	struct fdtable *t = fdtable_create();
	struct file *keep = new_file(), *drop = new_file(), *got;

	cr_assert_eq(fdtable_install(t, keep, 0, false, 1024), 0);
	cr_assert_eq(fdtable_install(t, drop, 0, true, 1024), 1);
	cr_assert_eq(fdtable_install(t, drop, 9, true, 1024), 9);
	file_put(keep);
	file_put(drop);
	fdtable_close_on_exec(t);
	cr_assert_eq(released, 1);
	got = fdtable_lookup(t, 0);
	cr_assert_eq(got, keep);
	file_put(got);
	cr_assert_null(fdtable_lookup(t, 1));
	cr_assert_null(fdtable_lookup(t, 9));
	cr_assert_eq(fdtable_install(t, keep, 0, false, 1024), 1);
	fdtable_put(t);
	cr_assert_eq(released, 2);
}
