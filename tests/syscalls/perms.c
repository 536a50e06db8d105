/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Permission checks for an unprivileged user: a forked child drops to uid/gid 1000 with
 * setresgid/setgroups/setresuid and checks open, create, remove, rename, chmod, chown,
 * utimensat, truncate, link (fs.protected_hardlinks), sticky and setgid directories against
 * what root set up. The child sends its counts back through a pipe.
 */
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "scratch.h"

#define USER 1000
#define OTHER 1001

static void mkfile(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);

	CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	CHECK_RET(write(fd, "x", 1), 1);
	close(fd);
	CHECK_RET(chmod(path, mode), 0);
	CHECK_RET(chown(path, uid, gid), 0);
}

static void setup_as_root(void)
{
	CHECK_RET(mkdir("ro", 0755), 0);
	mkfile("ro/secret", 0600, 0, 0);
	mkfile("ro/pub", 0644, 0, 0);
	mkfile("ro/world", 0666, 0, 0);
	CHECK_RET(mkdir("closed", 0700), 0);
	mkfile("closed/f", 0666, 0, 0);
	CHECK_RET(mkdir("sticky", 0777), 0);
	CHECK_RET(chmod("sticky", 01777), 0);
	mkfile("sticky/roots", 0666, 0, 0);
	mkfile("sticky/others", 0666, OTHER, OTHER);
	CHECK_RET(mkdir("sgid", 0777), 0);
	CHECK_RET(chown("sgid", 0, 50), 0);
	CHECK_RET(chmod("sgid", 02777), 0);
	CHECK_RET(mkdir("home", 0755), 0);
	CHECK_RET(chown("home", USER, USER), 0);
}

static void as_user(void)
{
	struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };
	struct stat st;
	int fd;

	/* Reading and writing by mode. */
	CHECK_ERR(open("ro/secret", O_RDONLY), EACCES);
	fd = CHECK_OK(open("ro/pub", O_RDONLY));
	close(fd);
	CHECK_ERR(open("ro/pub", O_WRONLY), EACCES);
	CHECK_ERR(open("ro/pub", O_RDONLY | O_TRUNC), EACCES);
	CHECK_ERR(truncate("ro/pub", 0), EACCES);
	fd = CHECK_OK(open("ro/world", O_RDWR));
	CHECK_RET(write(fd, "y", 1), 1);
	close(fd);
	CHECK_ERR(access("ro/pub", W_OK), EACCES);
	CHECK_RET(access("ro/pub", R_OK), 0);
	CHECK_ERR(access("ro/pub", X_OK), EACCES);
	/* Search permission on the way. */
	CHECK_ERR(open("closed/f", O_RDONLY), EACCES);
	CHECK_ERR(stat("closed/f", &st), EACCES);
	CHECK_ERR(open("closed", O_RDONLY | O_DIRECTORY), EACCES);
	/* Creating and removing need write permission on the directory. */
	CHECK_ERR(open("ro/new", O_CREAT | O_WRONLY, 0644), EACCES);
	CHECK_ERR(mkdir("ro/d", 0755), EACCES);
	CHECK_ERR(symlink("x", "ro/l"), EACCES);
	CHECK_ERR(mknod("ro/p", S_IFIFO | 0644, 0), EACCES);
	CHECK_ERR(unlink("ro/world"), EACCES);
	CHECK_ERR(rename("ro/world", "ro/w2"), EACCES);
	CHECK_ERR(rename("ro/world", "home/w2"), EACCES);
	/* Ownership: chmod, chown, explicit times are the owner's. */
	CHECK_ERR(chmod("ro/world", 0777), EPERM);
	CHECK_ERR(chown("ro/world", USER, USER), EPERM);
	CHECK_ERR(utimensat(AT_FDCWD, "ro/world", ts, 0), EPERM);
	CHECK_RET(utimensat(AT_FDCWD, "ro/world", NULL, 0), 0); /* may write: "now" is allowed */
	CHECK_ERR(utimensat(AT_FDCWD, "ro/pub", NULL, 0), EACCES);
	/* fs.protected_hardlinks: no links to files the user cannot read and write. */
	CHECK_ERR(link("ro/pub", "home/pub"), EPERM);
	CHECK_RET(link("ro/world", "home/world"), 0);
	/* In their own directory, the user may do anything to their files. */
	fd = CHECK_OK(open("home/mine", O_CREAT | O_WRONLY, 0600));
	close(fd);
	CHECK_RET(chmod("home/mine", 0640), 0);
	CHECK_RET(utimensat(AT_FDCWD, "home/mine", ts, 0), 0);
	CHECK_ERR(chown("home/mine", OTHER, -1), EPERM);
	CHECK_ERR(chown("home/mine", -1, 50), EPERM); /* not a member of 50 */
	CHECK_RET(chown("home/mine", USER, USER), 0);
	CHECK_RET(stat("home/mine", &st), 0);
	CHECK(st.st_uid == USER && st.st_gid == USER && (st.st_mode & 07777) == 0640,
	      "owner %u:%u mode %o", st.st_uid, st.st_gid, st.st_mode);
	/* Sticky: only the owner of a file (or of the directory) removes or renames it. */
	CHECK_ERR(unlink("sticky/roots"), EPERM);
	CHECK_ERR(unlink("sticky/others"), EPERM);
	CHECK_ERR(rename("sticky/others", "sticky/mine"), EPERM);
	fd = CHECK_OK(open("sticky/mine", O_CREAT | O_WRONLY, 0666));
	close(fd);
	CHECK_ERR(rename("sticky/mine", "sticky/roots"), EPERM);
	CHECK_RET(rename("sticky/mine", "sticky/mine2"), 0);
	CHECK_RET(unlink("sticky/mine2"), 0);
	/* Setgid directory: new files take its group, new directories its group and bit. */
	fd = CHECK_OK(open("sgid/f", O_CREAT | O_WRONLY, 0644));
	close(fd);
	CHECK_RET(stat("sgid/f", &st), 0);
	CHECK(st.st_gid == 50 && st.st_uid == USER, "owner %u:%u", st.st_uid, st.st_gid);
	CHECK_RET(mkdir("sgid/d", 0755), 0);
	CHECK_RET(stat("sgid/d", &st), 0);
	CHECK(st.st_gid == 50 && (st.st_mode & 07777) == 02755, "gid %u mode %o", st.st_gid,
	      st.st_mode);
	/* chmod by a non-member of the file's group drops S_ISGID. */
	CHECK_RET(chmod("sgid/f", 02755), 0);
	CHECK_RET(stat("sgid/f", &st), 0);
	CHECK((st.st_mode & 07777) == 0755, "mode %o", st.st_mode);
}

int main(void)
{
	int counts[2] = { 0, 0 }, fds[2], status;
	pid_t pid;

	umask(0);
	scratch_make("perms");
	setup_as_root();
	CHECK_RET(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		if (setgroups(0, NULL) < 0 || setresgid(USER, USER, USER) < 0 ||
		    setresuid(USER, USER, USER) < 0) {
			printf("FAIL: dropping to %d: %s\n", USER, strerror(errno));
			checks_failed++;
		} else {
			as_user();
		}
		fflush(stdout);
		counts[0] = checks_passed;
		counts[1] = checks_failed;
		_exit(write(fds[1], counts, sizeof(counts)) == sizeof(counts) ? 0 : 1);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	close(fds[1]);
	if (pid > 0) {
		CHECK_RET(read(fds[0], counts, sizeof(counts)), (long)sizeof(counts));
		CHECK_RET(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
		checks_passed += counts[0];
		checks_failed += counts[1];
	}
	close(fds[0]);
	return finish();
}
