/* SPDX-License-Identifier: Apache-2.0 */
/* File descriptor tables: a growable array of files with a close-on-exec flag per fd. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sentry/vfs/lock.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"

struct fdtable {
	struct refcount ref;
	pthread_mutex_t lock; /* protects everything below */
	int cap; /* entries in files and cloexec */
	struct file **files; /* referenced; NULL for a free fd */
	bool *cloexec;
	int next_free; /* no free fd below this one */
};

struct fdtable *fdtable_create(void)
{
	struct fdtable *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	refcount_init(&t->ref, 1);
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void fdtable_get(struct fdtable *t)
{
	refcount_inc(&t->ref);
}

void fdtable_put(struct fdtable *t)
{
	if (!t || !refcount_dec(&t->ref))
		return;
	/* The process's POSIX locks go with its table (its address may be reused). */
	vfs_locks_owner_gone(t);
	for (int i = 0; i < t->cap; i++) {
		if (t->files[i])
			vfs_dnotify_close(t, t->files[i]);
		file_put(t->files[i]);
	}
	free(t->files);
	free(t->cloexec);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Makes room for fd (t->lock held). Returns 0 or -ENOMEM. */
static int fdtable_grow(struct fdtable *t, int fd)
{
	int cap = t->cap ? t->cap : 16;
	struct file **files;
	bool *cloexec;

	if (fd < t->cap)
		return 0;
	while (cap <= fd) {
		if (cap > INT_MAX / 2) {
			cap = fd + 1;
			break;
		}
		cap *= 2;
	}
	files = realloc(t->files, (size_t)cap * sizeof(*files));
	if (!files)
		return -ENOMEM;
	t->files = files;
	cloexec = realloc(t->cloexec, (size_t)cap * sizeof(*cloexec));
	if (!cloexec)
		return -ENOMEM;
	t->cloexec = cloexec;
	memset(t->files + t->cap, 0, (size_t)(cap - t->cap) * sizeof(*files));
	memset(t->cloexec + t->cap, 0, (size_t)(cap - t->cap) * sizeof(*cloexec));
	t->cap = cap;
	return 0;
}

int fdtable_install(struct fdtable *t, struct file *f, int min_fd, bool cloexec, int limit)
{
	int fd, err;

	if (min_fd < 0)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	fd = MAX(min_fd, t->next_free);
	while (fd < t->cap && t->files[fd])
		fd++;
	if (fd >= limit) {
		pthread_mutex_unlock(&t->lock);
		return -EMFILE;
	}
	err = fdtable_grow(t, fd);
	if (err < 0) {
		pthread_mutex_unlock(&t->lock);
		return err;
	}
	file_get(f);
	t->files[fd] = f;
	t->cloexec[fd] = cloexec;
	if (fd == t->next_free)
		t->next_free = fd + 1;
	pthread_mutex_unlock(&t->lock);
	return fd;
}

int fdtable_install_at(struct fdtable *t, struct file *f, int fd, bool cloexec, int limit)
{
	struct file *old;
	int err;

	if (fd < 0 || fd >= limit)
		return -EBADF;
	pthread_mutex_lock(&t->lock);
	err = fdtable_grow(t, fd);
	if (err < 0) {
		pthread_mutex_unlock(&t->lock);
		return err;
	}
	old = t->files[fd];
	file_get(f);
	t->files[fd] = f;
	t->cloexec[fd] = cloexec;
	if (fd == t->next_free)
		t->next_free = fd + 1;
	pthread_mutex_unlock(&t->lock);
	/* Outside the lock: the last put may run a release that blocks. */
	if (old) {
		vfs_locks_close_posix(t, old);
		vfs_dnotify_close(t, old);
	}
	file_put(old);
	return fd;
}

struct file *fdtable_lookup(struct fdtable *t, int fd)
{
	struct file *f = NULL;

	if (fd < 0)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if (fd < t->cap && t->files[fd]) {
		f = t->files[fd];
		file_get(f);
	}
	pthread_mutex_unlock(&t->lock);
	return f;
}

int fdtable_close(struct fdtable *t, int fd)
{
	struct file *f = NULL;

	if (fd < 0)
		return -EBADF;
	pthread_mutex_lock(&t->lock);
	if (fd < t->cap) {
		f = t->files[fd];
		t->files[fd] = NULL;
		t->cloexec[fd] = false;
		if (f && fd < t->next_free)
			t->next_free = fd;
	}
	pthread_mutex_unlock(&t->lock);
	if (!f)
		return -EBADF;
	vfs_locks_close_posix(t, f);
	vfs_dnotify_close(t, f);
	file_put(f);
	return 0;
}

int fdtable_get_cloexec(struct fdtable *t, int fd)
{
	int ret = -EBADF;

	if (fd < 0)
		return -EBADF;
	pthread_mutex_lock(&t->lock);
	if (fd < t->cap && t->files[fd])
		ret = t->cloexec[fd] ? 1 : 0;
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int fdtable_set_cloexec(struct fdtable *t, int fd, bool cloexec)
{
	int ret = -EBADF;

	if (fd < 0)
		return -EBADF;
	pthread_mutex_lock(&t->lock);
	if (fd < t->cap && t->files[fd]) {
		t->cloexec[fd] = cloexec;
		ret = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

struct fdtable *fdtable_dup(struct fdtable *t)
{
	struct fdtable *n = fdtable_create();

	if (!n)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if (t->cap && fdtable_grow(n, t->cap - 1) < 0) {
		pthread_mutex_unlock(&t->lock);
		fdtable_put(n);
		return NULL;
	}
	for (int i = 0; i < t->cap; i++) {
		n->files[i] = t->files[i];
		n->cloexec[i] = t->cloexec[i];
		if (n->files[i])
			file_get(n->files[i]);
	}
	n->next_free = t->next_free;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void fdtable_close_on_exec(struct fdtable *t)
{
	int i = 0;

	for (;;) {
		struct file *f = NULL;

		/* One at a time, so that no release runs under the lock. */
		pthread_mutex_lock(&t->lock);
		for (; i < t->cap; i++) {
			if (t->files[i] && t->cloexec[i]) {
				f = t->files[i];
				t->files[i] = NULL;
				t->cloexec[i] = false;
				if (i < t->next_free)
					t->next_free = i;
				break;
			}
		}
		pthread_mutex_unlock(&t->lock);
		if (!f)
			return;
		vfs_locks_close_posix(t, f);
		vfs_dnotify_close(t, f);
		file_put(f);
	}
}

int fdtable_next(struct fdtable *t, int fd, struct file **out)
{
	int ret = -ENOENT;

	if (fd < 0)
		fd = 0;
	pthread_mutex_lock(&t->lock);
	for (; fd < t->cap; fd++) {
		if (t->files[fd]) {
			*out = t->files[fd];
			file_get(*out);
			ret = fd;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}
