/* SPDX-License-Identifier: Apache-2.0 */
/* Fakes of the VFS and mm entry points used by loader_load(); see fake_env.h. */
#include "fake_env.h"

#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/util.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"

struct fake_node {
	char *path;
	uint8_t *data;
	size_t len;
	uint32_t mode, uid, gid;
};

#define MAX_NODES 64
#define MAX_CALLS 256

static struct fake_node nodes[MAX_NODES];
static int n_nodes;
static int open_files;
static struct fake_mmap_call calls[MAX_CALLS];
static int n_calls;

struct fpage {
	uint64_t addr;
	int prot;
	uint8_t *data; /* NULL while the page is all zeros */
};

static void *pages;

static int page_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct fpage *)a)->addr, y = ((const struct fpage *)b)->addr;

	return x < y ? -1 : x > y;
}

static struct fpage *page_find(uint64_t addr)
{
	struct fpage key = { .addr = PAGE_ALIGN_DOWN(addr) };
	void *r = tfind(&key, &pages, page_cmp);

	return r ? *(struct fpage **)r : NULL;
}

static void page_remove(uint64_t addr)
{
	struct fpage *p = page_find(addr);

	if (!p)
		return;
	tdelete(p, &pages, page_cmp);
	free(p->data);
	free(p);
}

static struct fpage *page_insert(uint64_t addr, int prot)
{
	struct fpage *p = calloc(1, sizeof(*p));

	p->addr = addr;
	p->prot = prot;
	tsearch(p, &pages, page_cmp);
	return p;
}

static void free_page(void *p)
{
	free(((struct fpage *)p)->data);
	free(p);
}

void fake_reset_memory(void)
{
	n_calls = 0;
	tdestroy(pages, free_page);
	pages = NULL;
}

void fake_reset(void)
{
	for (int i = 0; i < n_nodes; i++) {
		free(nodes[i].path);
		free(nodes[i].data);
	}
	n_nodes = 0;
	open_files = 0;
	fake_reset_memory();
}

void fake_add_file(const char *path, const void *data, size_t len, uint32_t mode, uint32_t uid,
		   uint32_t gid)
{
	struct fake_node *n = &nodes[n_nodes++];

	if (n_nodes > MAX_NODES)
		abort();
	n->path = strdup(path);
	n->data = malloc(len ? len : 1);
	memcpy(n->data, data, len);
	n->len = len;
	n->mode = mode;
	n->uid = uid;
	n->gid = gid;
}

void fake_add_host_file(const char *path, const char *host_path)
{
	FILE *f = fopen(host_path, "rb");
	struct stat st;
	uint8_t *buf;

	if (!f || fstat(fileno(f), &st) != 0)
		abort();
	buf = malloc((size_t)st.st_size);
	if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		abort();
	fclose(f);
	fake_add_file(path, buf, (size_t)st.st_size, st.st_mode, 0, 0);
	free(buf);
}

int fake_open_files(void)
{
	return open_files;
}

const struct fake_mmap_call *fake_mmap_calls(int *n)
{
	*n = n_calls;
	return calls;
}

bool fake_peek(uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;

	while (len) {
		struct fpage *p = page_find(addr);
		size_t in = PAGE_SIZE - (addr & (PAGE_SIZE - 1)), n = MIN(in, len);

		if (!p)
			return false;
		if (p->data)
			memcpy(out, p->data + (addr & (PAGE_SIZE - 1)), n);
		else
			memset(out, 0, n);
		out += n;
		addr += n;
		len -= n;
	}
	return true;
}

int fake_prot(uint64_t addr)
{
	struct fpage *p = page_find(addr);

	return p ? p->prot : -1;
}

/* --- the VFS side --- */

static const struct file_ops fake_file_ops;

int vfs_open(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
	     struct file **out)
{
	if (dirfd != AT_FDCWD || flags != O_RDONLY)
		return -EINVAL; /* the loader opens nothing else */
	for (int i = 0; i < n_nodes; i++) {
		if (strcmp(nodes[i].path, path) == 0) {
			struct file *f = calloc(1, sizeof(*f));

			refcount_init(&f->ref, 1);
			f->ops = &fake_file_ops;
			f->flags = flags;
			f->priv = &nodes[i];
			open_files++;
			*out = f;
			return 0;
		}
	}
	return -ENOENT;
}

int file_getattr(struct file *f, struct vfs_attr *attr)
{
	struct fake_node *n = f->priv;

	memset(attr, 0, sizeof(*attr));
	attr->mode = n->mode;
	attr->uid = n->uid;
	attr->gid = n->gid;
	attr->size = (int64_t)n->len;
	attr->nlink = 1;
	return 0;
}

/* The fake files live on an exec mount (noexec is tested by tests/integration/oci-mounts). */
bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap < 64 && (c->cap_effective & (1ULL << cap));
}

bool vfs_file_noexec(const struct file *f)
{
	return false;
}

ssize_t file_pread(struct file *f, void *buf, size_t len, int64_t off)
{
	struct fake_node *n = f->priv;

	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= n->len)
		return 0;
	/* Short reads on purpose: at most 1000 bytes at a time. */
	len = MIN(MIN(len, n->len - (size_t)off), (size_t)1000);
	memcpy(buf, n->data + off, len);
	return (ssize_t)len;
}

void file_put(struct file *f)
{
	if (refcount_dec(&f->ref)) {
		open_files--;
		free(f);
	}
}

/* --- the mm side --- */

static bool range_used(uint64_t addr, uint64_t len)
{
	for (uint64_t a = addr; a < addr + len; a += PAGE_SIZE)
		if (page_find(a))
			return true;
	return false;
}

static long do_mmap(struct mm *mm, uint64_t addr, uint64_t len, int prot, int flags,
		    struct file *file, uint64_t off)
{
	struct fake_node *n = file ? file->priv : NULL;

	if (len == 0 || !IS_PAGE_ALIGNED(addr) || !IS_PAGE_ALIGNED(off))
		return -EINVAL;
	if (!(flags & MAP_PRIVATE) || (!file && !(flags & MAP_ANONYMOUS)))
		return -EINVAL;
	len = PAGE_ALIGN_UP(len);
	if (!(flags & (MAP_FIXED | MAP_FIXED_NOREPLACE))) {
		uint64_t cand;

		if (!mm->mmap_base || mm->mmap_base < len)
			return -ENOMEM;
		cand = PAGE_ALIGN_DOWN(mm->mmap_base) - len;
		while (cand >= PLATFORM_GUEST_MIN && range_used(cand, len))
			cand -= PAGE_SIZE;
		addr = cand;
	}
	if (addr < PLATFORM_GUEST_MIN || addr + len < addr || addr + len > PLATFORM_GUEST_MAX)
		return -ENOMEM;
	if ((flags & MAP_FIXED_NOREPLACE) && range_used(addr, len))
		return -EEXIST;
	for (uint64_t i = 0; i < len; i += PAGE_SIZE) {
		struct fpage *p;

		page_remove(addr + i);
		p = page_insert(addr + i, prot);
		/* A file mapping copies the file; the part of a page past the end reads zero. */
		if (n && off + i < n->len) {
			size_t k = MIN(PAGE_SIZE, n->len - (off + i));

			p->data = calloc(1, PAGE_SIZE);
			memcpy(p->data, n->data + off + i, k);
		}
	}
	return (long)addr;
}

long mm_mmap(struct mm *mm, uint64_t addr, uint64_t len, int prot, int flags, struct file *file,
	     uint64_t off)
{
	long r = do_mmap(mm, addr, len, prot, flags, file, off);

	if (n_calls < MAX_CALLS)
		calls[n_calls++] =
			(struct fake_mmap_call){ addr, len, prot, flags, file != NULL, off, r };
	return r;
}

static ssize_t write_mem(uint64_t addr, const void *src, size_t len, bool check_prot)
{
	const uint8_t *in = src;
	size_t done = 0;

	while (done < len) {
		struct fpage *p = page_find(addr + done);
		size_t pg_off = (addr + done) & (PAGE_SIZE - 1);
		size_t n = MIN(PAGE_SIZE - pg_off, len - done);

		if (!p || (check_prot && !(p->prot & PROT_WRITE)))
			return done ? (ssize_t)done : -EFAULT;
		if (!p->data)
			p->data = calloc(1, PAGE_SIZE);
		memcpy(p->data + pg_off, in + done, n);
		done += n;
	}
	return (ssize_t)done;
}

ssize_t mm_poke(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	return write_mem(addr, src, len, false);
}

ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	return write_mem(addr, src, len, true);
}

static const struct file_ops fake_file_ops = { 0 };

/* No time page or vDSO image in the fakes: the loader maps none. */
bool vtime_vdso_pages(uint64_t *vvar_off, uint64_t *image_off, uint64_t *image_len)
{
	return false;
}

long mm_map_vdso(struct mm *mm, uint64_t vvar_off, uint64_t image_off, uint64_t image_len)
{
	return -ENOSYS;
}
