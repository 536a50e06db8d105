/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's seccomp allow-list (DESIGN.md rule 4). Everything not listed kills the gofer.
 * Each entry says why the gofer needs it, once it is confined and serving. Notably absent:
 * execve, socket/connect, mount, ptrace, open/creat, every path-based call (only the *at forms
 * the handlers use, relative to handle FDs), and every call that writes file data (write is for
 * the log on stderr; ftruncate is SETSTAT's). A read-only gofer gets none of the calls that
 * change the tree: its handlers answer EROFS before making one, and this makes sure of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"
#include "gofer/confine.h"
#include "gofer/filter.h"

/* Weak: the programs built into husk-gofer at build time (filter_gen.c); absent elsewhere. */
#pragma weak gofer_filter_prebuilt_ro
#pragma weak gofer_filter_prebuilt_ro_len
#pragma weak gofer_filter_prebuilt_rw
#pragma weak gofer_filter_prebuilt_rw_len

/* O_TMPFILE's own bit (glibc's __O_TMPFILE and O_TMPFILE also have O_DIRECTORY in them). */
#define O_TMPFILE_BIT 020000000

struct filter_rule {
	int nr;
	const char *why;
};

#define ALLOW(name, reason)            \
	{                              \
		SCMP_SYS(name), reason \
	}

static const struct filter_rule rules[] = {
	ALLOW(recvmsg, "requests from the sentry"),
	ALLOW(sendmsg, "replies, with donated FDs (SCM_RIGHTS)"),
	ALLOW(close, "CLOSE of handles; donated FDs once sent; FDs a request wrongly carried"),
	ALLOW(newfstatat,
	      "attributes: fstatat(fd, \"\", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW); GETDENTSPLUS: fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW) of a listed name"),
	ALLOW(fstat, "glibc may implement fstatat(AT_EMPTY_PATH) with it"),
	ALLOW(readlinkat, "READLINK: readlinkat(fd, \"\") of a symlink's O_PATH FD"),
	ALLOW(getdents64, "GETDENTS, GETDENTSPLUS"),
	ALLOW(lseek, "GETDENTS: seeking a directory to the sentry's cookie"),
	ALLOW(fstatfs, "STATFS"),
	ALLOW(write, "log lines on stderr"),
	ALLOW(brk, "malloc"),
	ALLOW(munmap, "free of large blocks"),
	ALLOW(mremap, "realloc of the handle table"),
	ALLOW(madvise, "malloc trimming"),
	ALLOW(exit_group, "the gofer ending when the sentry closes the socket"),
	ALLOW(exit, "the gofer ending"),
	ALLOW(fsync, "FSYNC, on an FD reopened from a handle"),
	ALLOW(fdatasync, "FSYNC with GOFER_FSYNC_DATASYNC"),
	ALLOW(fgetxattr, "GETXATTR, on an FD reopened from a handle (names checked in server.c)"),
	ALLOW(flistxattr, "LISTXATTR, likewise"),
};

/* Calls that change the tree: allowed only on a writable gofer (more below, with arguments). */
static const struct filter_rule write_rules[] = {
	ALLOW(ftruncate, "SETSTAT size, on an FD reopened for writing from a handle"),
	ALLOW(fchmodat, "SETSTAT mode and new nodes' modes, via /proc/self/fd/N of a handle"),
	ALLOW(mkdirat, "MKDIR: one name in a handle's directory"),
	ALLOW(symlinkat,
	      "SYMLINK: one name in a handle's directory (the target is never followed)"),
	ALLOW(unlinkat,
	      "UNLINK; and undoing a CREATE, MKDIR, MKNOD or SYMLINK that failed half-way"),
	ALLOW(fsetxattr, "SETXATTR of user.* names (server.c), on an FD reopened from a handle"),
	ALLOW(fremovexattr, "REMOVEXATTR, likewise"),
};

static int add_write_rules(scmp_filter_ctx ctx)
{
	const uint64_t empty_nofollow = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW;
	const uint64_t create = O_CREAT | O_EXCL | O_NOFOLLOW;
	int ret;

	for (size_t i = 0; i < ARRAY_SIZE(write_rules); i++) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, write_rules[i].nr, 0);
		if (ret < 0)
			return ret;
	}
	/* CREATE: openat with O_CREAT only when exclusive and not following a symlink. */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, create | O_TMPFILE_BIT, create));
	if (ret < 0)
		return ret;
	/* SETSTAT owner and times, new nodes' owners: always on the handle's own FD ("", empty
	 * path), never following a symlink. */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fchownat), 1,
			       SCMP_A4(SCMP_CMP_EQ, empty_nofollow));
	if (ret < 0)
		return ret;
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(utimensat), 1,
			       SCMP_A3(SCMP_CMP_EQ, empty_nofollow));
	if (ret < 0)
		return ret;
	/* MKNOD: FIFOs and sockets, never a device (the gofer has no CAP_MKNOD either). */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mknodat), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT, S_IFIFO));
	if (ret < 0)
		return ret;
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mknodat), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT, S_IFSOCK));
	if (ret < 0)
		return ret;
	/* LINK: linkat(olddir, name, newdir, name, 0); never AT_EMPTY_PATH (linking an FD). */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(linkat), 1, SCMP_A4(SCMP_CMP_EQ, 0));
	if (ret < 0)
		return ret;
	/* RENAME: renameat2 with no flag but RENAME_NOREPLACE or RENAME_EXCHANGE. */
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(renameat2), 1,
				SCMP_A4(SCMP_CMP_MASKED_EQ,
					~(uint64_t)(RENAME_NOREPLACE | RENAME_EXCHANGE), 0));
}

int gofer_filter_build(bool readonly, scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx;
	uint64_t deny;
	int ret;

	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return -ENOMEM;
	/* Another architecture's numbering (i386 from a 64-bit process) is not allowed. */
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(rules); i++) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, rules[i].nr, 0);
		if (ret < 0)
			goto out;
	}
	/* malloc's memory, never executable: the gofer runs no code it did not start with. */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (ret < 0)
		goto out;
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (ret < 0)
		goto out;
	/*
	 * openat: WALK (O_PATH|O_NOFOLLOW of one name), OPEN and GETDENTS (reopening a handle
	 * through /proc/self/fd). Never creating a file; on a read-only mount never asking for
	 * write access or truncation either, so a bug in the checks of server.c cannot write.
	 */
	deny = O_CREAT | O_TMPFILE_BIT;
	if (readonly)
		deny |= O_ACCMODE | O_TRUNC;
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, deny, 0));
	if (ret < 0)
		goto out;
	if (!readonly) {
		ret = add_write_rules(ctx);
		if (ret < 0)
			goto out;
	}
	*out = ctx;
	return 0;
out:
	seccomp_release(ctx);
	return ret;
}

int gofer_install_filter(bool readonly)
{
	const struct sock_filter *prebuilt = readonly ? gofer_filter_prebuilt_ro :
							gofer_filter_prebuilt_rw;
	struct sock_fprog prog;
	scmp_filter_ctx ctx;
	int ret;

	/* Compiled by libseccomp from these same rules at build time: only loaded here. */
	if (prebuilt) {
		prog.len = readonly ? gofer_filter_prebuilt_ro_len : gofer_filter_prebuilt_rw_len;
		prog.filter = (struct sock_filter *)prebuilt;
		/* As seccomp_load() does: no_new_privs, then the filter without flags. */
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			return -errno;
		return 0;
	}
	ret = gofer_filter_build(readonly, &ctx);
	if (ret < 0)
		return ret;
	ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}
