/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Permission checks that follow capabilities, not uid 0: a child that stays root but drops
 * CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH is refused by mode bits (open, search, exec, access,
 * create); without CAP_FOWNER chmod, utimensat with explicit times, O_NOATIME, user.* xattrs
 * of a sticky directory, unlink in a sticky directory and links to set-user-ID files of others
 * are EPERM; without CAP_CHOWN chown is EPERM; without CAP_FSETID chmod, creation in a setgid
 * directory, write and truncate clear set-id bits as Linux does. Each case runs in its own
 * child (child.h) that drops the capabilities with capset(2) and PR_CAPBSET_DROP.
 */
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "check.h"
#include "child.h"
#include "scratch.h"

#define OTHER 1001
#define GROUP 50

static void mkfile(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);

	CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	CHECK_RET(write(fd, "#!/bin/true\n", 12), 12);
	close(fd);
	CHECK_RET(chown(path, uid, gid), 0);
	CHECK_RET(chmod(path, mode), 0);
}

static void setup(void)
{
	mkfile("secret", 0600, OTHER, OTHER);
	mkfile("pub", 0644, OTHER, OTHER);
	mkfile("nobody", 0000, 0, 0);
	mkfile("prog", 0700, OTHER, OTHER);
	mkfile("prog2", 0744, OTHER, OTHER);
	mkfile("suid", 04755, OTHER, OTHER);
	CHECK_RET(mkdir("closed", 0700), 0);
	mkfile("closed/f", 0666, OTHER, OTHER);
	CHECK_RET(chown("closed", OTHER, OTHER), 0);
	CHECK_RET(mkdir("rodir", 0755), 0);
	CHECK_RET(chown("rodir", OTHER, OTHER), 0);
	CHECK_RET(mkdir("sticky", 01777), 0);
	CHECK_RET(chmod("sticky", 01777), 0);
	CHECK_RET(chown("sticky", OTHER, OTHER), 0);
	mkfile("sticky/f", 0666, OTHER, OTHER);
	CHECK_RET(mkdir("sgid", 0777), 0);
	CHECK_RET(chown("sgid", 0, GROUP), 0);
	CHECK_RET(chmod("sgid", 02777), 0);
}

/* Stays uid 0 with no supplementary groups, and drops caps (a mask of CAP_* bits). */
static bool drop_caps(uint64_t caps)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0) {
		CHECK(0, "setgroups: %s", strerror(errno));
		return false;
	}
	for (int cap = 0; cap < 64; cap++)
		if ((caps >> cap) & 1)
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	if (syscall(SYS_capget, &h, d) < 0) {
		CHECK(0, "capget: %s", strerror(errno));
		return false;
	}
	for (int i = 0; i < 2; i++) {
		d[i].effective &= ~(uint32_t)(caps >> (32 * i));
		d[i].permitted &= ~(uint32_t)(caps >> (32 * i));
		d[i].inheritable &= ~(uint32_t)(caps >> (32 * i));
	}
	if (syscall(SYS_capset, &h, d) < 0) {
		CHECK(0, "capset: %s", strerror(errno));
		return false;
	}
	CHECK(getuid() == 0 && geteuid() == 0, "still root");
	return true;
}

#define BIT(c) (1ULL << (c))

static void no_dac(void *arg)
{
	char *argv[] = { "prog", NULL }, *envp[] = { NULL };
	struct stat st;
	int fd;

	if (!drop_caps(BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH)))
		return;
	CHECK_ERR(open("secret", O_RDONLY), EACCES);
	CHECK_ERR(open("secret", O_WRONLY), EACCES);
	fd = CHECK_OK(open("pub", O_RDONLY));
	close(fd);
	CHECK_ERR(open("pub", O_RDWR), EACCES);
	CHECK_ERR(open("pub", O_RDONLY | O_TRUNC), EACCES);
	/* The owner too is held to the owner's bits. */
	CHECK_ERR(open("nobody", O_RDONLY), EACCES);
	CHECK_ERR(truncate("pub", 0), EACCES);
	/* Directories: no search, no listing, no creation. */
	CHECK_ERR(stat("closed/f", &st), EACCES);
	CHECK_ERR(open("closed", O_RDONLY | O_DIRECTORY), EACCES);
	CHECK_ERR(open("rodir/new", O_CREAT | O_WRONLY, 0644), EACCES);
	CHECK_ERR(mkdir("rodir/d", 0755), EACCES);
	/* access(2) checks the real ids with the same capabilities. */
	CHECK_ERR(access("secret", R_OK), EACCES);
	CHECK_ERR(access("pub", W_OK), EACCES);
	CHECK_RET(access("pub", R_OK), 0);
	CHECK_ERR(access("closed/f", F_OK), EACCES);
	/* Executing a file only its owner may execute. */
	CHECK_ERR(execve("prog", argv, envp), EACCES);
}

static void no_dac_override(void *arg)
{
	struct stat st;
	int fd;

	if (!drop_caps(BIT(CAP_DAC_OVERRIDE)))
		return;
	/* CAP_DAC_READ_SEARCH: reading and searching, not writing. */
	fd = CHECK_OK(open("secret", O_RDONLY));
	close(fd);
	CHECK_ERR(open("secret", O_WRONLY), EACCES);
	CHECK_RET(stat("closed/f", &st), 0);
	fd = CHECK_OK(open("closed", O_RDONLY | O_DIRECTORY));
	close(fd);
	CHECK_ERR(open("closed/new", O_CREAT | O_WRONLY, 0644), EACCES);
	CHECK_ERR(open("nobody", O_RDWR), EACCES);
	/* The file's own bits still let anyone write closed/f. */
	fd = CHECK_OK(open("closed/f", O_WRONLY));
	close(fd);
	CHECK_ERR(access("secret", W_OK), EACCES);
	CHECK_RET(access("secret", R_OK), 0);
	/* Readable, executable by its owner only: reading is not executing. */
	{
		char *argv[] = { "prog2", NULL }, *envp[] = { NULL };

		CHECK_ERR(access("prog2", X_OK), EACCES);
		CHECK_ERR(execve("prog2", argv, envp), EACCES);
	}
}

static void no_fowner(void *arg)
{
	struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };
	struct stat st;
	int fd;

	if (!drop_caps(BIT(CAP_FOWNER)))
		return;
	CHECK_ERR(chmod("pub", 0600), EPERM);
	CHECK_ERR(utimensat(AT_FDCWD, "pub", ts, 0), EPERM);
	/* Now is allowed to whoever may write (CAP_DAC_OVERRIDE). */
	CHECK_RET(utimensat(AT_FDCWD, "pub", NULL, 0), 0);
	CHECK_ERR(open("pub", O_RDONLY | O_NOATIME), EPERM);
	fd = CHECK_OK(open("pub", O_RDONLY));
	CHECK_ERR(fcntl(fd, F_SETFL, O_NOATIME), EPERM);
	close(fd);
	/* Sticky directories: others' files stay. */
	CHECK_ERR(unlink("sticky/f"), EPERM);
	CHECK_ERR(rename("sticky/f", "sticky/g"), EPERM);
	CHECK_ERR(setxattr("sticky", "user.x", "v", 1, 0), EPERM);
	/* fs.protected_hardlinks: a set-user-ID file of another user. */
	CHECK_ERR(link("suid", "suid-link"), EPERM);
	/* A readable and writable file of another user may be linked (CAP_DAC_OVERRIDE). */
	CHECK_RET(link("secret", "secret-link"), 0);
	CHECK_RET(unlink("secret-link"), 0);
	/* Its own files: root is their owner. */
	CHECK_RET(chmod("nobody", 0), 0);
	CHECK_RET(stat("pub", &st), 0);
	CHECK((st.st_mode & 07777) == 0644, "mode %o", st.st_mode & 07777);
}

static void no_chown(void *arg)
{
	struct stat st;

	if (!drop_caps(BIT(CAP_CHOWN)))
		return;
	CHECK_ERR(chown("pub", 0, -1), EPERM);
	CHECK_ERR(chown("pub", -1, 0), EPERM);
	CHECK_ERR(chown("nobody", OTHER, -1), EPERM);
	/* Its own file: to a group it is in, or no change. */
	CHECK_RET(chown("nobody", 0, 0), 0);
	CHECK_RET(chown("nobody", -1, -1), 0);
	CHECK_ERR(chown("nobody", -1, GROUP), EPERM);
	CHECK_RET(stat("nobody", &st), 0);
	CHECK(st.st_uid == 0 && st.st_gid == 0, "owner %u:%u", st.st_uid, st.st_gid);
}

static void no_fsetid(void *arg)
{
	struct stat st;
	int fd;

	if (!drop_caps(BIT(CAP_FSETID)))
		return;
	/* chmod of a file whose group root is not in drops S_ISGID. */
	mkfile("g", 0644, 0, GROUP);
	CHECK_RET(chmod("g", 02755), 0);
	CHECK_RET(stat("g", &st), 0);
	CHECK((st.st_mode & 07777) == 0755, "chmod g: mode %o", st.st_mode & 07777);
	/* S_ISUID stays: root owns it. */
	CHECK_RET(chmod("g", 04755), 0);
	CHECK_RET(stat("g", &st), 0);
	CHECK((st.st_mode & 07777) == 04755, "chmod g u+s: mode %o", st.st_mode & 07777);
	/* A write drops S_ISUID. */
	fd = CHECK_OK(open("g", O_WRONLY));
	CHECK_RET(write(fd, "x", 1), 1);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK((st.st_mode & 07777) == 0755, "after write: mode %o", st.st_mode & 07777);
	close(fd);
	/* truncate too. */
	CHECK_RET(chmod("g", 04755), 0);
	CHECK_RET(truncate("g", 1), 0);
	CHECK_RET(stat("g", &st), 0);
	CHECK((st.st_mode & 07777) == 0755, "after truncate: mode %o", st.st_mode & 07777);
	/* A file made in a setgid directory whose group root is not in: no S_ISGID. */
	umask(0);
	fd = CHECK_OK(open("sgid/f", O_CREAT | O_WRONLY, 02755));
	close(fd);
	CHECK_RET(stat("sgid/f", &st), 0);
	CHECK(st.st_gid == GROUP && (st.st_mode & 07777) == 0755, "sgid/f: %u mode %o", st.st_gid,
	      st.st_mode & 07777);
}

/* With every capability, root is not held to mode bits (the control case). */
static void full_root(void *arg)
{
	struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };
	struct stat st;
	int fd;

	fd = CHECK_OK(open("secret", O_RDWR));
	close(fd);
	CHECK_RET(stat("closed/f", &st), 0);
	CHECK_RET(access("secret", W_OK), 0);
	CHECK_RET(utimensat(AT_FDCWD, "pub", ts, 0), 0);
	CHECK_RET(chown("pub", OTHER, 0), 0);
	CHECK_RET(chown("pub", OTHER, OTHER), 0);
	mkfile("g2", 0644, 0, GROUP);
	CHECK_RET(chmod("g2", 06755), 0);
	fd = CHECK_OK(open("g2", O_WRONLY));
	CHECK_RET(write(fd, "x", 1), 1);
	close(fd);
	CHECK_RET(stat("g2", &st), 0);
	CHECK((st.st_mode & 07777) == 06755, "g2 after write: mode %o", st.st_mode & 07777);
}

int main(void)
{
	umask(0);
	scratch_make("caps_perms");
	setup();
	in_child(full_root, NULL);
	in_child(no_dac, NULL);
	in_child(no_dac_override, NULL);
	in_child(no_fowner, NULL);
	in_child(no_chown, NULL);
	in_child(no_fsetid, NULL);
	return finish();
}
