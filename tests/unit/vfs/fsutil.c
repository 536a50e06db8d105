/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the tmpfs and overlay tests (see fsutil.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "tests/unit/vfs/fsutil.h"

void fsu_harness_init(struct harness *h, struct vfs_fs *fs)
{
	memset(h, 0, sizeof(*h));
	h->k.root_mnt = vfs_mount_create(fs, fs->root, 0);
	if (!h->k.root_mnt)
		abort();
	vfs_fs_put(fs);
	h->k.root_node = fs->root;
	vfs_node_get(h->k.root_node);
	harness_init_task(h);
}

ssize_t fsu_fwrite(struct file *f, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return f->ops->write(f, &iov, 1, &f->pos);
}

static ssize_t write_flags(struct harness *h, const char *path, int flags, unsigned int mode,
			   const char *data)
{
	struct file *f;
	ssize_t n;
	int err = vfs_open(&h->t, AT_FDCWD, path, flags, mode, &f);

	if (err < 0)
		return err;
	n = fsu_fwrite(f, data, strlen(data));
	file_put(f);
	return n;
}

ssize_t fsu_write_file(struct harness *h, const char *path, unsigned int mode, const char *data)
{
	return write_flags(h, path, O_CREAT | O_WRONLY | O_TRUNC, mode, data);
}

ssize_t fsu_append(struct harness *h, const char *path, const char *data)
{
	return write_flags(h, path, O_WRONLY | O_APPEND, 0, data);
}

ssize_t fsu_read_file(struct harness *h, const char *path, char *buf, size_t size)
{
	struct file *f;
	ssize_t n;
	int err = vfs_open(&h->t, AT_FDCWD, path, O_RDONLY, 0, &f);

	if (err < 0)
		return err;
	n = file_pread(f, buf, size - 1, 0);
	buf[n < 0 ? 0 : n] = '\0';
	file_put(f);
	return n;
}

int fsu_stat(struct harness *h, const char *path, bool nofollow, struct vfs_attr *a)
{
	struct vfs_path p;
	int err = vfs_lookup_at(&h->t, AT_FDCWD, path, nofollow ? AT_SYMLINK_NOFOLLOW : 0, &p);

	if (err < 0)
		return err;
	err = vfs_path_getattr(&p, a);
	vfs_path_put(&p);
	return err;
}

struct collect {
	struct dir_emitter e;
	struct fsu_entry *out;
	int n, max;
};

static bool collect_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
			 unsigned int dtype, int64_t next_off)
{
	struct collect *c = container_of(e, struct collect, e);
	struct fsu_entry *o;

	if (c->n == c->max || namelen >= sizeof(o->name))
		return false;
	o = &c->out[c->n++];
	memcpy(o->name, name, namelen);
	o->name[namelen] = '\0';
	o->ino = ino;
	o->type = dtype;
	o->next = next_off;
	return true;
}

int fsu_readdir(struct file *f, struct fsu_entry *out, int max)
{
	struct collect c = { .e.emit = collect_emit, .out = out, .max = max };
	int err = f->ops->iterate(f, &c.e);

	return err < 0 ? err : c.n;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct fsu_entry *)a)->name, ((const struct fsu_entry *)b)->name);
}

int fsu_list(struct harness *h, const char *path, char *buf, size_t size)
{
	struct fsu_entry *v = calloc(256, sizeof(*v));
	struct file *f;
	int n = 0, err;
	size_t len = 0;

	if (!v)
		return -ENOMEM;
	err = vfs_open(&h->t, AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0, &f);
	if (err < 0) {
		free(v);
		return err;
	}
	for (;;) {
		int got = fsu_readdir(f, v + n, 256 - n);

		if (got <= 0) {
			err = got;
			break;
		}
		n += got;
	}
	file_put(f);
	qsort(v, (size_t)n, sizeof(*v), cmp_name);
	buf[0] = '\0';
	for (int i = 0; i < n && err == 0; i++) {
		if (!strcmp(v[i].name, ".") || !strcmp(v[i].name, ".."))
			continue;
		if (len + strlen(v[i].name) + 2 > size) {
			err = -ERANGE;
			break;
		}
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", v[i].name);
	}
	free(v);
	return err;
}
