/* SPDX-License-Identifier: Apache-2.0 */
/*
 * name_to_handle_at(2) where Linux gives no handle: files of proc, a filesystem without export
 * operations, answer EOPNOTSUPP once the flags are checked and the path is found (systemd and
 * libmount take that answer and use statx's mount id instead). The errors before it: EINVAL for
 * unknown flags and for AT_HANDLE_CONNECTABLE with AT_HANDLE_FID or AT_EMPTY_PATH, then the
 * path's own (ENOENT, ENOTDIR, EBADF, EFAULT); a final symlink is followed only with
 * AT_SYMLINK_FOLLOW.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

#ifndef AT_HANDLE_FID
#define AT_HANDLE_FID 0x200
#endif
#define HANDLE_MNT_ID_UNIQUE 0x001
#define HANDLE_CONNECTABLE 0x002

struct handle {
	unsigned int handle_bytes;
	int handle_type;
	unsigned char f_handle[128];
};

static long n2h(int dirfd, const char *path, int flags)
{
	struct handle h = { .handle_bytes = sizeof(h.f_handle) };
	int mnt_id = -1;

	return syscall(SYS_name_to_handle_at, dirfd, path, &h, &mnt_id, flags);
}

int main(void)
{
	int proc = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char link[64];

	CHECK(proc >= 0, "open /proc/self: %s", strerror(errno));
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/status", 0), EOPNOTSUPP);
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/status", AT_SYMLINK_FOLLOW), EOPNOTSUPP);
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/status", HANDLE_MNT_ID_UNIQUE), EOPNOTSUPP);
	CHECK_ERR(n2h(proc, "status", 0), EOPNOTSUPP);
	CHECK_ERR(n2h(proc, "", AT_EMPTY_PATH), EOPNOTSUPP);
	/* /proc/self is a symlink of proc: itself, or followed, it is proc's. */
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self", 0), EOPNOTSUPP);
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self", AT_SYMLINK_FOLLOW), EOPNOTSUPP);
	/* fd/N, a magic link of proc, as itself and followed (to /proc/PID). */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", proc);
	CHECK_ERR(n2h(AT_FDCWD, link, 0), EOPNOTSUPP);
	CHECK_ERR(n2h(AT_FDCWD, link, AT_SYMLINK_FOLLOW), EOPNOTSUPP);

	/* Flags first. */
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/status", 0x8000), EINVAL);
	CHECK_ERR(n2h(AT_FDCWD, "/nonexistent", 0x8000), EINVAL);
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/status", HANDLE_CONNECTABLE | AT_HANDLE_FID), EINVAL);
	CHECK_ERR(n2h(proc, "", HANDLE_CONNECTABLE | AT_EMPTY_PATH), EINVAL);
	/* Then the path. */
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/no-such-file", 0), ENOENT);
	CHECK_ERR(n2h(AT_FDCWD, "/proc/self/status/x", 0), ENOTDIR);
	CHECK_ERR(n2h(AT_FDCWD, "", 0), ENOENT);
	CHECK_ERR(n2h(-1, "status", 0), EBADF);
	CHECK_ERR(n2h(AT_FDCWD, (const char *)8, 0), EFAULT);
	close(proc);
	return finish();
}
