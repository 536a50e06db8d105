/* SPDX-License-Identifier: Apache-2.0 */
/*
 * getdents(2), the old call: struct linux_dirent (unsigned long d_ino, d_off; unsigned short
 * d_reclen; the name; a NUL; d_type in the record's last byte), compared with getdents64 on the
 * same directory; small buffers, EINVAL, ENOTDIR, EBADF, EFAULT.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "check.h"
#include "scratch.h"

struct old_dirent {
	unsigned long d_ino;
	unsigned long d_off;
	unsigned short d_reclen;
	char d_name[];
};

struct ent {
	char name[256];
	unsigned long ino;
	unsigned char type;
};

/* Reads the whole directory with the old call in bufsz-byte calls. Returns the count. */
static int read_old(const char *path, size_t bufsz, struct ent *out, int max)
{
	char *buf = malloc(bufsz);
	int fd = open(path, O_RDONLY | O_DIRECTORY), n = 0;
	long r;

	if (fd < 0 || !buf) {
		CHECK(0, "open %s: %s", path, strerror(errno));
		free(buf);
		return 0;
	}
	while ((r = syscall(SYS_getdents, fd, buf, bufsz)) > 0) {
		for (long off = 0; off < r;) {
			struct old_dirent *d = (struct old_dirent *)(buf + off);
			size_t namelen = strlen(d->d_name);

			CHECK(d->d_reclen % 8 == 0, "reclen %u not a multiple of 8", d->d_reclen);
			CHECK(offsetof(struct old_dirent, d_name) + namelen + 2 <= d->d_reclen,
			      "name %s does not fit reclen %u", d->d_name, d->d_reclen);
			if (n < max) {
				snprintf(out[n].name, sizeof(out[n].name), "%s", d->d_name);
				out[n].ino = d->d_ino;
				out[n].type = (unsigned char)buf[off + d->d_reclen - 1];
				n++;
			}
			off += d->d_reclen;
		}
	}
	CHECK(r == 0, "getdents ended with %ld (%s)", r, strerror(errno));
	close(fd);
	free(buf);
	return n;
}

static int read_new(const char *path, struct ent *out, int max)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_DIRECTORY), n = 0;
	long r;

	if (fd < 0)
		return 0;
	while ((r = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < r;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			if (n < max) {
				snprintf(out[n].name, sizeof(out[n].name), "%s", d->d_name);
				out[n].ino = d->d_ino;
				out[n].type = d->d_type;
				n++;
			}
			off += d->d_reclen;
		}
	}
	close(fd);
	return n;
}

static const struct ent *find(const struct ent *e, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(e[i].name, name) == 0)
			return &e[i];
	return NULL;
}

/* The old and new calls list the same names, inodes and types. */
static void compare(const char *path, size_t bufsz)
{
	static struct ent a[512], b[512];
	int na = read_old(path, bufsz, a, 512), nb = read_new(path, b, 512);

	CHECK(na == nb && na > 2, "%s (buffer %zu): old call %d entries, getdents64 %d", path,
	      bufsz, na, nb);
	for (int i = 0; i < na; i++) {
		const struct ent *m = find(b, nb, a[i].name);

		CHECK(m && m->ino == a[i].ino && m->type == a[i].type,
		      "%s/%s: old ino %lu type %u, getdents64 %s", path, a[i].name, a[i].ino,
		      a[i].type, m ? "differs" : "lacks it");
	}
}

int main(void)
{
	static struct ent e[16];
	char buf[64];
	int fd, n;

	scratch_make("getdents_old");
	CHECK_OK(mkdir("sub", 0755));
	CHECK_OK(close(open("file", O_CREAT | O_WRONLY, 0644)));
	CHECK_OK(symlink("file", "link"));
	CHECK_OK(mkfifo("fifo", 0644));

	n = read_old(".", 4096, e, 16);
	CHECK(n == 6, "scratch dir: %d entries, want 6", n);
	for (int i = 0; i < n; i++) {
		unsigned char want = 0;
		struct stat st;

		if (lstat(e[i].name, &st) < 0)
			continue;
		want = S_ISDIR(st.st_mode)  ? DT_DIR :
		       S_ISLNK(st.st_mode)  ? DT_LNK :
		       S_ISFIFO(st.st_mode) ? DT_FIFO :
					      DT_REG;
		CHECK(e[i].type == want && e[i].ino == st.st_ino,
		      "%s: type %u ino %lu, want %u %lu", e[i].name, e[i].type, e[i].ino, want,
		      (unsigned long)st.st_ino);
	}
	CHECK(find(e, n, "sub") && find(e, n, "file") && find(e, n, "link") && find(e, n, "fifo") &&
		      find(e, n, ".") && find(e, n, ".."),
	      "names missing from the scratch directory");

	/* Whole directories of the root filesystem, and in small pieces. */
	compare("/", 4096);
	compare("/", 64);
	compare("/etc", 512);
	/* /proc itself changes while other processes come and go; a process's own directory does not. */
	compare("/proc/self", 4096);
	compare("/proc/self", 128);
	compare("/dev", 1024);

	fd = open(".", O_RDONLY | O_DIRECTORY);
	CHECK_ERR(syscall(SYS_getdents, fd, buf, 8), EINVAL);
	CHECK_ERR(syscall(SYS_getdents, fd, (void *)16, 4096), EFAULT);
	/* Nothing was consumed by the failed calls. */
	CHECK(syscall(SYS_getdents, fd, buf, sizeof(buf)) > 0, "first entry after the errors");
	close(fd);
	fd = open("file", O_RDONLY);
	CHECK_ERR(syscall(SYS_getdents, fd, buf, sizeof(buf)), ENOTDIR);
	close(fd);
	CHECK_ERR(syscall(SYS_getdents, 999, buf, sizeof(buf)), EBADF);
	return finish();
}
