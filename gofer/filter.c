/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's seccomp allow-list (DESIGN.md rule 4). Everything not listed kills the gofer.
 * Each entry says why the gofer needs it, once it is confined and serving. Notably absent:
 * execve, socket/connect, mount, ptrace, open/creat, and every call that writes to a file
 * (write is for the log on stderr; the gofer has no other FD open for writing).
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/mman.h>

#include "common/util.h"
#include "gofer/confine.h"

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
	ALLOW(newfstatat, "attributes: fstatat(fd, \"\", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)"),
	ALLOW(fstat, "glibc may implement fstatat(AT_EMPTY_PATH) with it"),
	ALLOW(readlinkat, "READLINK: readlinkat(fd, \"\") of a symlink's O_PATH FD"),
	ALLOW(getdents64, "GETDENTS"),
	ALLOW(lseek, "GETDENTS: seeking a directory to the sentry's cookie"),
	ALLOW(fstatfs, "STATFS"),
	ALLOW(write, "log lines on stderr"),
	ALLOW(brk, "malloc"),
	ALLOW(munmap, "free of large blocks"),
	ALLOW(mremap, "realloc of the handle table"),
	ALLOW(madvise, "malloc trimming"),
	ALLOW(exit_group, "the gofer ending when the sentry closes the socket"),
	ALLOW(exit, "the gofer ending"),
};

int gofer_install_filter(bool readonly)
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
	ret = seccomp_load(ctx);
out:
	seccomp_release(ctx);
	return ret;
}
