/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openat2: struct open_how checks (size, unknown bits, mode without O_CREAT), and the RESOLVE_*
 * flags: BENEATH, IN_ROOT, NO_SYMLINKS, NO_XDEV, NO_MAGICLINKS, CACHED with O_CREAT.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check.h"
#include "scratch.h"

struct how {
	uint64_t flags, mode, resolve;
};

#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#define RESOLVE_CACHED 0x20

static long openat2_(int dfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct how how = { flags, mode, resolve };

	return syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

static void closing(long fd)
{
	if (fd >= 0)
		close((int)fd);
}

int main(void)
{
	struct {
		struct how h;
		uint64_t extra;
	} big = { { O_RDONLY, 0, 0 }, 1 };
	struct stat st;
	int root, dfd;

	umask(022);
	scratch_make("openat2");
	CHECK_RET(mkdir("in", 0755), 0);
	CHECK_RET(mkdir("in/sub", 0755), 0);
	closing(CHECK_OK(open("in/sub/f", O_CREAT | O_WRONLY, 0644)));
	closing(CHECK_OK(open("outside", O_CREAT | O_WRONLY, 0644)));
	CHECK_RET(symlink("sub/f", "in/rel"), 0);
	CHECK_RET(symlink("/sub/f", "in/abs"), 0);
	CHECK_RET(symlink("../outside", "in/up"), 0);
	dfd = CHECK_OK(open("in", O_RDONLY | O_DIRECTORY));
	root = CHECK_OK(open("/", O_RDONLY | O_DIRECTORY));

	/* The struct. */
	CHECK_ERR(syscall(SYS_openat2, dfd, "sub/f", &big.h, 8), EINVAL);
	CHECK_ERR(syscall(SYS_openat2, dfd, "sub/f", &big, sizeof(big)), E2BIG);
	big.extra = 0;
	closing(CHECK_OK(syscall(SYS_openat2, dfd, "sub/f", &big, sizeof(big))));
	CHECK_ERR(openat2_(dfd, "sub/f", O_RDONLY, 0644, 0), EINVAL);
	CHECK_ERR(openat2_(dfd, "sub/f", O_RDONLY, 0, 0x40), EINVAL);
	CHECK_ERR(openat2_(dfd, "sub/f", 1ULL << 40, 0, 0), EINVAL);
	CHECK_ERR(openat2_(dfd, "new", O_CREAT | O_WRONLY, 010000, 0), EINVAL);
	closing(CHECK_OK(openat2_(dfd, "new", O_CREAT | O_WRONLY, 0600, 0)));
	CHECK_RET(fstatat(dfd, "new", &st, 0), 0);
	CHECK((st.st_mode & 07777) == 0600, "mode %o", st.st_mode);

	/* RESOLVE_BENEATH: no escape by "..", absolute paths or symlinks. */
	closing(CHECK_OK(openat2_(dfd, "sub/../sub/f", O_RDONLY, 0, RESOLVE_BENEATH)));
	closing(CHECK_OK(openat2_(dfd, "rel", O_RDONLY, 0, RESOLVE_BENEATH)));
	CHECK_ERR(openat2_(dfd, "../outside", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	CHECK_ERR(openat2_(dfd, "/etc/passwd", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	CHECK_ERR(openat2_(dfd, "up", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	CHECK_ERR(openat2_(dfd, "abs", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);
	CHECK_ERR(openat2_(dfd, "..", O_RDONLY, 0, RESOLVE_BENEATH), EXDEV);

	/* RESOLVE_IN_ROOT: dfd is the root for "..", absolute paths and symlinks. */
	closing(CHECK_OK(openat2_(dfd, "abs", O_RDONLY, 0, RESOLVE_IN_ROOT)));
	closing(CHECK_OK(openat2_(dfd, "/sub/f", O_RDONLY, 0, RESOLVE_IN_ROOT)));
	closing(CHECK_OK(openat2_(dfd, "../../sub/f", O_RDONLY, 0, RESOLVE_IN_ROOT)));
	CHECK_ERR(openat2_(dfd, "up", O_RDONLY, 0, RESOLVE_IN_ROOT), ENOENT);
	CHECK_ERR(openat2_(dfd, "abs", O_RDONLY, 0, RESOLVE_IN_ROOT | RESOLVE_BENEATH), EINVAL);

	/* RESOLVE_NO_SYMLINKS: every symlink on the way, even with O_PATH|O_NOFOLLOW at the end. */
	CHECK_ERR(openat2_(dfd, "rel", O_RDONLY, 0, RESOLVE_NO_SYMLINKS), ELOOP);
	closing(CHECK_OK(openat2_(dfd, "sub/f", O_RDONLY, 0, RESOLVE_NO_SYMLINKS)));
	closing(CHECK_OK(openat2_(dfd, "rel", O_PATH | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS)));

	/* RESOLVE_NO_XDEV: /dev is another mount than / (natively and in husk). */
	CHECK_ERR(openat2_(root, "dev/null", O_RDONLY, 0, RESOLVE_NO_XDEV), EXDEV);
	closing(CHECK_OK(openat2_(dfd, "sub/f", O_RDONLY, 0, RESOLVE_NO_XDEV)));

	/* RESOLVE_CACHED cannot create or truncate. */
	CHECK_ERR(openat2_(dfd, "new", O_CREAT | O_WRONLY, 0600, RESOLVE_CACHED), EAGAIN);
	CHECK_ERR(openat2_(dfd, "new", O_TRUNC | O_WRONLY, 0, RESOLVE_CACHED), EAGAIN);
	close(root);
	close(dfd);
	return finish();
}
