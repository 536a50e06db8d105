/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Restoring a sandbox in a new sentry (state.h). The image is hostile input: every id, offset,
 * length and enum is checked before use, and a bad one fails the restore with its name.
 * A failed restore leaves the sentry to exit (nothing has run yet): objects built so far are
 * not torn down one by one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/mm/internal.h"
#include "sentry/mm/mm.h"
#include "sentry/mm/vma.h"
#include "sentry/platform/platform.h"
#include "sentry/state/state.h"
#include "sentry/state/state_internal.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define PAGE 4096ULL
#define ALIGNED(x) (((x) & (PAGE - 1)) == 0)

/* What restore.c keeps beside struct state_restore. */
struct restore_priv {
	Husk__State__Image *img; /* unpacked, owned */
	struct state_range *claims; /* state_restore_range calls */
	size_t nclaims, capclaims;
	const Husk__State__File **files_by_id;
	struct mm **mms; /* by Mm index */
	struct fdtable **fdts;
	struct fs_context **fss;
	struct sighand **shs;
	struct seccomp_filter **filters; /* by SeccompFilter index */
	uint64_t old_boot_ns;
	int64_t delta; /* this host's CLOCK_MONOTONIC minus the saving host's, at the save */
	bool built; /* state_restore_build succeeded: the tables' own references are dropped */
	bool lazy; /* the pages are loaded on first use (the pages file stays open) */
	bool fs_phase; /* state_fs_restore runs: its pages are loaded at once */
};

static struct restore_priv *P(struct state_restore *r)
{
	return (struct restore_priv *)r->objs;
}

/* --- pages --- */

/* The image range holding [off, off + len), or NULL. Ranges are sorted and disjoint. */
static const Husk__State__MemRange *find_range(struct state_restore *r, uint64_t off, uint64_t len)
{
	const Husk__State__Image *img = r->img;
	size_t lo = 0, hi = img->n_pages;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const Husk__State__MemRange *m = img->pages[mid];

		if (m->mem_off + m->len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Adjacent ranges (a data piece next to a hole) count as one. */
	uint64_t pos = off;

	for (size_t i = lo; i < img->n_pages && pos < off + len; i++) {
		const Husk__State__MemRange *m = img->pages[i];

		if (m->mem_off > pos)
			return NULL;
		pos = m->mem_off + m->len;
	}
	return pos >= off + len && lo < img->n_pages ? img->pages[lo] : NULL;
}

int state_restore_range(struct state_restore *r, uint64_t off, uint64_t len)
{
	struct restore_priv *p = P(r);

	if (!len)
		return 0;
	if (!ALIGNED(off) || !ALIGNED(len) || off + len < off || !find_range(r, off, len))
		return state_restore_fail(r, -EINVAL,
					  "memory range %#llx+%#llx is not in the image's pages",
					  (unsigned long long)off, (unsigned long long)len);
	if (p->nclaims == p->capclaims) {
		size_t cap = p->capclaims ? p->capclaims * 2 : 1024;
		struct state_range *v = realloc(p->claims, cap * sizeof(*v));

		if (!v)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		p->claims = v;
		p->capclaims = cap;
	}
	p->claims[p->nclaims++] = (struct state_range){ off, len };
	/* Filesystems reach their pages through the memory file directly: loaded now. */
	if (p->fs_phase && memfile_image_load(&r->k->mf, off, len) < 0)
		return state_restore_fail(r, -EIO, "reading the pages file");
	return 0;
}

struct event {
	uint64_t at;
	int delta;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * Every page of the image was reserved with one reference. Now that the objects said which
 * pages they hold, each page gets as many references as holders: none (freed), one (as is),
 * or more (memfile_ref).
 */
static int finish_pages(struct state_restore *r)
{
	struct restore_priv *p = P(r);
	struct memfile *mf = &r->k->mf;
	size_t ne = p->nclaims * 2, ei = 0;
	struct event *ev = malloc((ne ? ne : 1) * sizeof(*ev));
	int count = 0;

	if (!ev)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nclaims; i++) {
		ev[2 * i] = (struct event){ p->claims[i].off, 1 };
		ev[2 * i + 1] = (struct event){ p->claims[i].off + p->claims[i].len, -1 };
	}
	qsort(ev, ne, sizeof(*ev), cmp_event);
	for (size_t i = 0; i < r->img->n_pages; i++) {
		uint64_t pos = r->img->pages[i]->mem_off, end = pos + r->img->pages[i]->len;

		while (pos < end) {
			while (ei < ne && ev[ei].at <= pos)
				count += ev[ei++].delta;
			uint64_t next = ei < ne && ev[ei].at < end ? ev[ei].at : end;

			if (count == 0)
				memfile_free(mf, pos, next - pos);
			for (int c = 1; c < count; c++)
				memfile_ref(mf, pos, next - pos);
			pos = next;
		}
	}
	free(ev);
	return 0;
}

static int read_all(int fd, void *buf, size_t len, off_t off)
{
	char *b = buf;

	while (len) {
		ssize_t n = pread(fd, b, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		b += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Checks the image's ranges and puts them, with their bytes, at their offsets. */
static int load_pages(struct state_restore *r, int pages_fd)
{
	const Husk__State__Image *img = r->img;
	struct memfile *mf = &r->k->mf;
	struct stat st;
	uint64_t prev_end = 0;

	if (fstat(pages_fd, &st) < 0)
		return state_restore_fail(r, -errno, "the pages file: %s", strerror(errno));
	for (size_t i = 0; i < img->n_pages; i++) {
		const Husk__State__MemRange *m = img->pages[i];

		if (!ALIGNED(m->mem_off) || !ALIGNED(m->len) || !m->len || m->mem_off < prev_end ||
		    m->mem_off + m->len < m->mem_off || m->mem_off + m->len > mf->size)
			return state_restore_fail(r, -EINVAL,
						  "page range %zu (%#llx+%#llx) is invalid", i,
						  (unsigned long long)m->mem_off,
						  (unsigned long long)m->len);
		if (m->has_file_off && (m->file_off + m->len < m->file_off ||
					m->file_off + m->len > (uint64_t)st.st_size))
			return state_restore_fail(
				r, -EINVAL,
				"page range %zu lies past the end of the pages file "
				"(truncated?)",
				i);
		prev_end = m->mem_off + m->len;
	}
	uint64_t *v = malloc((img->n_pages * 3 + 1) * sizeof(uint64_t));

	if (!v)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < img->n_pages; i++) {
		const Husk__State__MemRange *m = img->pages[i];
		int ret = memfile_alloc_at_nocharge(mf, m->mem_off, m->len);

		if (ret < 0) {
			free(v);
			return state_restore_fail(r, ret, "reserving memory at %#llx: %s",
						  (unsigned long long)m->mem_off, strerror(-ret));
		}
		v[i] = m->mem_off;
		v[img->n_pages + i] = m->len;
		v[2 * img->n_pages + i] = m->has_file_off ? m->file_off : UINT64_MAX;
	}
	/* Nothing is read now: each page is loaded when first needed (mm/image.c). */
	int ret = memfile_image_attach(mf, pages_fd, v, v + img->n_pages, v + 2 * img->n_pages,
				       img->n_pages);

	free(v);
	if (ret < 0)
		return state_restore_fail(r, ret, "out of memory");
	P(r)->lazy = true;
	return 0;
}

struct state_restore *state_restore_load(struct kernel *k, int image_fd, int pages_fd, char *err,
					 size_t errlen)
{
	struct state_restore *r = calloc(1, sizeof(*r));
	struct restore_priv *p = calloc(1, sizeof(*p));
	struct stat st;
	uint8_t *buf = NULL;
	int ret = 0;

	if (!r || !p) {
		free(r);
		free(p);
		snprintf(err, errlen, "out of memory");
		return ERR_PTR(-ENOMEM);
	}
	r->k = k;
	r->objs = (void **)p;
	r->pages_fd = pages_fd;
	if (fstat(image_fd, &st) < 0) {
		ret = state_restore_fail(r, -errno, "the image: %s", strerror(errno));
		goto out;
	}
	if (st.st_size <= 0 || (uint64_t)st.st_size > STATE_IMAGE_MAX) {
		ret = state_restore_fail(r, -EINVAL, "the image has %lld bytes",
					 (long long)st.st_size);
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		ret = state_restore_fail(r, -ENOMEM, "out of memory");
		goto out;
	}
	ret = read_all(image_fd, buf, (size_t)st.st_size, 0);
	if (ret < 0) {
		state_restore_fail(r, ret, "reading the image: %s", strerror(-ret));
		goto out;
	}
	ret = state_image_check(buf, (size_t)st.st_size, &p->img, r->err, sizeof(r->err));
	if (ret < 0)
		goto out;
	r->img = p->img;
	ret = state_image_validate(r->img, r->err, sizeof(r->err));
	if (ret < 0)
		goto out;
	/* The guest's clocks go on from where they were saved (applied when vtime starts). */
	vtime_set_guest_monotonic(p->img->kernel->guest_mono_ns);
	ret = load_pages(r, pages_fd);
out:
	free(buf);
	if (ret < 0) {
		snprintf(err, errlen, "%s", r->err[0] ? r->err : strerror(-ret));
		state_restore_done(r);
		return ERR_PTR(ret);
	}
	return r;
}

/* --- objects --- */

/* The index of the message with that id in a repeated field, or -1. */
#define FIND_ID(arr, n, want)                          \
	({                                             \
		long idx_ = -1;                        \
		for (size_t i_ = 0; i_ < (n); i_++)    \
			if ((arr)[i_]->id == (want)) { \
				idx_ = (long)i_;       \
				break;                 \
			}                              \
		idx_;                                  \
	})

int64_t state_restore_mono_delta(struct state_restore *r)
{
	return P(r)->delta;
}

struct file *state_restore_file_id(struct state_restore *r, uint32_t id)
{
	struct restore_priv *p = P(r);
	struct file *f;

	if (id == 0 || id > r->img->n_files || !p->files_by_id[id - 1]) {
		state_restore_fail(r, -EINVAL, "file %u is not in the image", id);
		return NULL;
	}
	if (r->files[id - 1])
		return r->files[id - 1];
	/* A file restored for another (an epoll's item, a file in flight) nests: a bad image
	 * could make that a cycle. */
	if (r->depth >= 16) {
		state_restore_fail(r, -EINVAL, "file %u: files refer to each other too deeply", id);
		return NULL;
	}
	r->depth++;
	f = state_file_restore(r, p->files_by_id[id - 1]);
	r->depth--;
	if (!f) {
		state_restore_fail(r, -EINVAL, "file %u cannot be restored", id);
		return NULL;
	}
	r->files[id - 1] = f;
	return f;
}

static struct mm *restore_mm(struct state_restore *r, uint32_t id)
{
	struct restore_priv *p = P(r);
	const Husk__State__Image *img = r->img;
	long i = FIND_ID(img->mms, img->n_mms, id);
	const Husk__State__Mm *m;
	struct mm *mm;
	struct vma_set *vs;
	uint64_t vvar = 0, vdso = 0, vdso_len = 0, prev_end = 0;
	bool have_vdso = vtime_vdso_pages(&vvar, &vdso, &vdso_len);

	if (i < 0) {
		state_restore_fail(r, -EINVAL, "memory map %u is not in the image", id);
		return NULL;
	}
	if (p->mms[i])
		return p->mms[i];
	m = img->mms[i];
	mm = mm_create_empty(r->k);
	if (IS_ERR(mm)) {
		state_restore_fail(r, (int)PTR_ERR(mm), "out of memory");
		return NULL;
	}
	vs = vset(mm);
	if (vma_set_reserve(vs, m->n_vmas) < 0) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t j = 0; j < m->n_vmas; j++) {
		const Husk__State__Vma *v = m->vmas[j];
		const uint32_t kinds = MM_VMA_PRIVATE | MM_VMA_SHARED | MM_VMA_ANON | MM_VMA_FILE |
				       MM_VMA_GROWSDOWN | MM_VMA_HEAP | MM_VMA_DONTFORK |
				       MM_VMA_WIPEONFORK | MM_VMA_LOCKED | MM_VMA_VDSO |
				       MM_VMA_VVAR;
		const uint32_t flags = VMA_COW | VMA_NOWRITE | VMA_LAZY | VMA_EOF;
		struct vma nv = { 0 };
		uint64_t len = v->end - v->start;

		if (!ALIGNED(v->start) || !ALIGNED(v->end) || v->end <= v->start ||
		    v->start < prev_end || v->end > TASK_SIZE_MAX || (v->kind & ~kinds) ||
		    (v->flags & ~flags) || (v->prot & ~7u) || !ALIGNED(v->mem_off) ||
		    !!(v->kind & MM_VMA_PRIVATE) == !!(v->kind & MM_VMA_SHARED) ||
		    (v->has_file && !(v->kind & MM_VMA_FILE)) ||
		    ((v->kind & MM_VMA_FILE) && !v->has_file) ||
		    (v->has_file_off && !ALIGNED(v->file_off))) {
			state_restore_fail(r, -EINVAL, "memory map %u: mapping %zu is invalid", id,
					   j);
			return NULL;
		}
		prev_end = v->end;
		nv.start = v->start;
		nv.end = v->end;
		nv.prot = (int)v->prot;
		nv.flags = v->kind | v->flags;
		nv.off = v->mem_off;
		if ((v->kind & MM_VMA_VVAR) && have_vdso && v->mem_off >= img->kernel->vvar_off &&
		    v->mem_off - img->kernel->vvar_off < PAGE && len <= PAGE) {
			/* This sentry's time page, not the saved one. */
			nv.off = vvar;
			memfile_ref(&r->k->mf, nv.off, len);
		} else if ((v->kind & MM_VMA_VDSO) && have_vdso &&
			   v->mem_off >= img->kernel->vdso_off &&
			   v->mem_off + len <= img->kernel->vdso_off + img->kernel->vdso_len &&
			   img->kernel->vdso_len == vdso_len) {
			/* The image's pages not written since: this sentry's image. */
			nv.off = vdso + (v->mem_off - img->kernel->vdso_off);
			memfile_ref(&r->k->mf, nv.off, len);
		} else if (v->kind & (MM_VMA_VVAR)) {
			state_restore_fail(r, -EINVAL, "memory map %u: a time page without a vDSO",
					   id);
			return NULL;
		} else if (state_restore_range(r, v->mem_off, len) < 0) {
			return NULL;
		} else if (memfile_image_pending(&r->k->mf, v->mem_off, len) &&
			   (v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC))) {
			/* Inaccessible in the platform until first touched: loaded then. */
			nv.flags |= VMA_LAZY;
		}
		if (v->has_file) {
			nv.file = state_restore_file_id(r, v->file);
			if (!nv.file)
				return NULL;
			file_get(nv.file);
		}
		if (v->has_file_off)
			nv.file_off = v->file_off;
		if (v->has_obj) {
			nv.obj = v->obj;
			nv.obj_size = v->has_obj_size ? v->obj_size : 0;
			mm_shm_obj_seen(v->obj);
		}
		vma_insert_at(vs, vs->n, &nv);
	}
	if (m->n_auxv > 64 || m->n_auxv % 2) {
		state_restore_fail(r, -EINVAL, "memory map %u: bad auxv", id);
		return NULL;
	}
	mm->start_brk = m->start_brk;
	mm->brk = m->brk;
	mm->start_data = m->start_data;
	mm->end_data = m->end_data;
	mm->mmap_base = m->mmap_base;
	mm->stack_top = m->stack_top;
	mm->arg_start = m->arg_start;
	mm->arg_end = m->arg_end;
	mm->env_start = m->env_start;
	mm->env_end = m->env_end;
	memcpy(mm->auxv, m->auxv, m->n_auxv * sizeof(uint64_t));
	mm->auxv_len = (int)m->n_auxv;
	p->mms[i] = mm;
	return mm;
}

static struct fdtable *restore_fdtable(struct state_restore *r, uint32_t id)
{
	struct restore_priv *p = P(r);
	long i = FIND_ID(r->img->fdtables, r->img->n_fdtables, id);
	struct fdtable *fdt;

	if (i < 0) {
		state_restore_fail(r, -EINVAL, "fd table %u is not in the image", id);
		return NULL;
	}
	if (p->fdts[i])
		return p->fdts[i];
	fdt = fdtable_create();
	if (!fdt) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t j = 0; j < r->img->fdtables[i]->n_fds; j++) {
		const Husk__State__Fd *e = r->img->fdtables[i]->fds[j];
		struct file *f;
		int ret;

		if (e->fd < 0 || e->fd >= (1 << 20)) {
			state_restore_fail(r, -EINVAL, "fd table %u: fd %d", id, e->fd);
			return NULL;
		}
		f = state_restore_file_id(r, e->file);
		if (!f)
			return NULL;
		ret = fdtable_install_at(fdt, f, e->fd, e->cloexec, INT_MAX);
		if (ret < 0) {
			state_restore_fail(r, ret, "fd table %u: fd %d: %s", id, e->fd,
					   strerror(-ret));
			return NULL;
		}
	}
	p->fdts[i] = fdt;
	return fdt;
}

static int restore_fs(struct state_restore *r, struct task *t, uint32_t id)
{
	struct restore_priv *p = P(r);
	long i = FIND_ID(r->img->fscontexts, r->img->n_fscontexts, id);
	const Husk__State__FsContext *m;
	int ret;

	if (i < 0)
		return state_restore_fail(r, -EINVAL, "fs context %u is not in the image", id);
	if (p->fss[i]) {
		fs_context_get(p->fss[i]);
		t->fs = p->fss[i];
		return 0;
	}
	m = r->img->fscontexts[i];
	t->fs = fs_context_create(r->k);
	if (!t->fs)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	fs_context_set_umask(t->fs, m->umask & 0777);
	if (m->cwd[0] != '/')
		return state_restore_fail(r, -EINVAL, "fs context %u: cwd %s", id, m->cwd);
	ret = fs_context_chdir(t, m->cwd);
	if (ret < 0)
		return state_restore_fail(r, ret, "working directory %s: %s", m->cwd,
					  strerror(-ret));
	fs_context_get(t->fs);
	p->fss[i] = t->fs;
	return 0;
}

static int restore_queue(struct state_restore *r, struct sigpending *sp, uint64_t set,
			 Husk__State__SigQueued **q, size_t n)
{
	sp->set = set;
	for (size_t i = 0; i < n; i++) {
		struct sigqueue *e;

		if (q[i]->info.len != sizeof(e->info))
			return state_restore_fail(r, -EINVAL, "a queued signal's siginfo");
		e = calloc(1, sizeof(*e));
		if (!e)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		memcpy(e->info, q[i]->info.data, sizeof(e->info));
		list_add_tail(&e->link, &sp->queue);
	}
	return 0;
}

static struct thread_group *restore_tg(struct state_restore *r, const Husk__State__ThreadGroup *m)
{
	struct restore_priv *p = P(r);
	long si = FIND_ID(r->img->sighands, r->img->n_sighands, m->sighand);
	struct thread_group *tg;
	struct sighand *sh = NULL;
	int64_t delta = p->delta;

	if (si < 0) {
		state_restore_fail(r, -EINVAL, "pid %d: signal actions %u not in the image", m->pid,
				   m->sighand);
		return NULL;
	}
	if (m->n_rlimits != LINUX_RLIM_NLIMITS ||
	    (m->state != TG_RUNNING && m->state != TG_ZOMBIE) ||
	    (m->state == TG_ZOMBIE && m->is_init) ||
	    r->img->sighands[si]->n_actions != LINUX_NSIG || m->pid <= 0 || m->ppid < 0 ||
	    m->pgid <= 0 || m->sid <= 0 || m->exit_signal < 0 || m->exit_signal > LINUX_NSIG) {
		state_restore_fail(r, -EINVAL, "process %d is invalid", m->pid);
		return NULL;
	}
	if (p->shs[si]) {
		sh = p->shs[si];
		refcount_inc(&sh->ref);
	}
	tg = tg_alloc(r->k, sh);
	if (!tg) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	if (!p->shs[si]) {
		sh = tg->sighand;
		for (int s = 0; s < LINUX_NSIG; s++) {
			const Husk__State__SigAction *a = r->img->sighands[si]->actions[s];

			sh->actions[s] = (struct linux_sigaction){ a->handler, a->flags,
								   a->restorer, a->mask };
		}
		p->shs[si] = sh;
	}
	tg->pid = m->pid;
	tg->ppid = m->ppid;
	tg->pgid = m->pgid;
	tg->sid = m->sid;
	tg->exit_signal = m->exit_signal;
	for (int i = 0; i < LINUX_RLIM_NLIMITS; i++) {
		tg->rlimits[i].rlim_cur = m->rlimits[i]->cur;
		tg->rlimits[i].rlim_max = m->rlimits[i]->max;
	}
	tg->stopped = m->stopped;
	tg->stop_signal = m->stop_signal;
	tg->subreaper = m->subreaper;
	tg->dumpable = m->dumpable;
	tg->oom_score_adj = m->has_oom_score_adj ? m->oom_score_adj : 0;
	tg->oom_score_adj_min = m->has_oom_score_adj_min ? m->oom_score_adj_min : 0;
	tg->did_exec = m->did_exec;
	tg->is_init = m->is_init;
	tg->utime_ns = m->utime_ns;
	tg->stime_ns = m->stime_ns;
	tg->cutime_ns = m->cutime_ns;
	tg->cstime_ns = m->cstime_ns;
	tg->start_ns = (uint64_t)((int64_t)m->start_ns + delta);
	tg->maxrss_kb = m->maxrss_kb;
	tg->cmaxrss_kb = m->cmaxrss_kb;
	tg->report_stop = m->report_stop;
	tg->report_continue = m->report_continue;
	tg->sig_notify = m->sig_notify;
	if (m->state == TG_ZOMBIE) {
		/* A zombie: its leader is a task that has left (no memory, files or thread), kept
		 * in the pid table until its parent reaps it, as task_exit leaves it. */
		struct task *t = task_alloc(r->k);

		if (!t) {
			state_restore_fail(r, -ENOMEM, "out of memory");
			return NULL;
		}
		tg->state = TG_ZOMBIE;
		tg->exit_status = m->exit_status;
		t->tid = m->pid;
		t->tg = tg;
		tg_get(tg);
		t->exiting = true;
		if (m->zombie_comm)
			snprintf(t->comm, sizeof(t->comm), "%s", m->zombie_comm);
		tg->leader = t;
	}
	if (restore_queue(r, &tg->shared_pending, m->shared_pending, m->shared_queue,
			  m->n_shared_queue) < 0)
		return NULL;
	return tg;
}

static struct task *restore_task(struct state_restore *r, const Husk__State__Task *m,
				 struct thread_group *tg)
{
	struct restore_priv *p = P(r);
	const Husk__State__Cred *c = m->cred;
	struct task *t = task_alloc(r->k);
	size_t fplen = platform_fpstate_size();

	if (!t) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	if (m->tid <= 0 || m->regs.len != sizeof(t->regs) || m->fpstate.len != fplen ||
	    c->n_groups > 32 || m->n_affinity != 16 || m->n_restart_data != 4 ||
	    m->restart_kind > STATE_RESTART_POLL || m->pdeath_signal < 0 ||
	    m->pdeath_signal > LINUX_NSIG) {
		state_restore_fail(r, -EINVAL, "task %d is invalid", m->tid);
		return NULL;
	}
	t->tid = m->tid;
	t->tg = tg;
	tg_get(tg);
	t->mm = restore_mm(r, m->mm);
	if (!t->mm)
		return NULL;
	refcount_inc(&t->mm->ref);
	t->fdt = restore_fdtable(r, m->fdtable);
	if (!t->fdt)
		return NULL;
	fdtable_get(t->fdt);
	if (restore_fs(r, t, m->fs) < 0)
		return NULL;
	t->cred.uid = c->uid;
	t->cred.euid = c->euid;
	t->cred.suid = c->suid;
	t->cred.fsuid = c->fsuid;
	t->cred.gid = c->gid;
	t->cred.egid = c->egid;
	t->cred.sgid = c->sgid;
	t->cred.fsgid = c->fsgid;
	t->cred.ngroups = (int)c->n_groups;
	memcpy(t->cred.groups, c->groups, c->n_groups * sizeof(uint32_t));
	t->cred.cap_effective = c->cap_effective;
	t->cred.cap_permitted = c->cap_permitted;
	t->cred.cap_inheritable = c->cap_inheritable;
	t->cred.cap_bounding = c->cap_bounding;
	t->cred.cap_ambient = c->cap_ambient;
	t->cred.securebits = c->securebits;
	t->cred.keep_caps = c->keep_caps;
	memcpy(&t->regs, m->regs.data, sizeof(t->regs));
	/* The platform's selectors, not the image's. */
	t->regs.cs = t->regs.ss = 0;
	t->clone_fpstate = malloc(fplen);
	if (!t->clone_fpstate) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	memcpy(t->clone_fpstate, m->fpstate.data, fplen);
	t->clone_fpstate_len = fplen;
	if (restore_queue(r, &t->pending, m->pending, m->queue, m->n_queue) < 0)
		return NULL;
	t->sigmask = m->sigmask & ~(SIGBIT(LINUX_SIGKILL) | SIGBIT(LINUX_SIGSTOP));
	t->saved_sigmask = m->saved_sigmask;
	t->restore_sigmask = m->restore_sigmask;
	t->altstack_sp = m->altstack_sp;
	t->altstack_size = m->altstack_size;
	t->altstack_flags = m->altstack_flags;
	t->pdeath_signal = m->pdeath_signal;
	t->clear_child_tid = m->clear_child_tid;
	t->robust_list = m->robust_list;
	t->robust_len = m->robust_len;
	t->affinity_set = m->affinity_set;
	memcpy(t->affinity, m->affinity, sizeof(t->affinity));
	t->rseq = m->rseq;
	t->rseq_len = m->rseq_len;
	t->rseq_sig = m->rseq_sig;
	t->rseq_cpu = (uint32_t)-1;
	t->no_new_privs = m->no_new_privs;
	t->personality = m->personality;
	snprintf(t->comm, sizeof(t->comm), "%s", m->comm);
	switch (m->restart_kind) {
	case STATE_RESTART_SLEEP:
		t->restart_fn = sleep_restart;
		break;
	case STATE_RESTART_CPU_SLEEP:
		t->restart_fn = cpu_sleep;
		break;
	case STATE_RESTART_FUTEX:
		t->restart_fn = futex_wait_restart;
		break;
	case STATE_RESTART_POLL:
		t->restart_fn = poll_restart;
		break;
	default:
		t->restart_fn = NULL;
	}
	memcpy(t->restart_data, m->restart_data, sizeof(t->restart_data));
	t->start_ns = (uint64_t)((int64_t)m->start_ns + p->delta);
	/* Deadlines on the host's CLOCK_MONOTONIC (futex_wait_restart, poll_restart). */
	restart_deadline_shift(t, p->delta);
	t->ioprio = m->ioprio;
	t->sched_policy = m->sched_policy;
	t->sched_priority = m->sched_priority;
	t->sched_reset_on_fork = m->sched_reset_on_fork;
	if (m->seccomp_mode == SECCOMP_MODE_STRICT && !m->has_seccomp_filter) {
		t->seccomp_mode = SECCOMP_MODE_STRICT;
	} else if (m->seccomp_mode == SECCOMP_MODE_FILTER && m->has_seccomp_filter) {
		long fi = FIND_ID(r->img->seccomp_filters, r->img->n_seccomp_filters,
				  m->seccomp_filter);

		if (fi < 0 || !p->filters[fi]) {
			state_restore_fail(r, -EINVAL, "task %d: seccomp filter %u", m->tid,
					   m->seccomp_filter);
			return NULL;
		}
		seccomp_filter_get(p->filters[fi]);
		t->seccomp_filter = p->filters[fi];
		t->seccomp_mode = SECCOMP_MODE_FILTER;
	} else if (m->seccomp_mode != SECCOMP_MODE_DISABLED || m->has_seccomp_filter) {
		state_restore_fail(r, -EINVAL, "task %d: seccomp mode %u", m->tid, m->seccomp_mode);
		return NULL;
	}
	return t;
}

/* tg's timers, once every task exists (a timer may signal one thread of it). */
static int restore_timers(struct state_restore *r, struct thread_group *tg,
			  const Husk__State__ThreadGroup *m)
{
	struct kernel *k = r->k;

	for (size_t i = 0; i < m->n_timers; i++) {
		const Husk__State__Timer *tm = m->timers[i];
		struct timer_posix_desc d = { .cur = { tm->value_ns, tm->interval_ns } };
		struct task *target = NULL, *cpu = NULL;
		int ret;

		if (tm->kind < 3) {
			ret = timer_itimer(tg->leader, (int)tm->kind, &d.cur, NULL);
		} else if (tm->kind == 3 && tm->has_id && tm->has_host_clock && tm->has_notify &&
			   tm->has_signo && tm->signo >= 0 && tm->signo <= LINUX_NSIG &&
			   (tm->host_clock >= 0 && tm->host_clock <= TIMER_CLOCK_THREAD_CPU)) {
			d.host_clock = tm->host_clock;
			d.notify = tm->notify;
			d.signo = tm->signo;
			d.value = tm->sigval;
			d.overrun = tm->overrun;
			pthread_mutex_lock(&k->tree_lock);
			if (tm->target_tid)
				target = pid_lookup(k, tm->target_tid);
			if (tm->cpu_tid)
				cpu = pid_lookup(k, tm->cpu_tid);
			pthread_mutex_unlock(&k->tree_lock);
			if ((tm->target_tid && (!target || target->tg != tg)) ||
			    (tm->host_clock == TIMER_CLOCK_THREAD_CPU && !cpu))
				return state_restore_fail(r, -EINVAL, "pid %d: timer %d's thread",
							  tg->pid, tm->id);
			ret = timer_posix_restore(tg->leader, tm->id, &d, target, cpu);
		} else {
			ret = -EINVAL;
		}
		if (ret < 0)
			return state_restore_fail(r, ret, "pid %d: a timer cannot be restored",
						  tg->pid);
	}
	return timer_rlimit_cpu(tg) < 0 ? state_restore_fail(r, -ENOMEM, "out of memory") : 0;
}

struct task *state_restore_build(struct state_restore *r, char *err, size_t errlen)
{
	struct restore_priv *p = P(r);
	const Husk__State__Image *img = r->img;
	struct kernel *k = r->k;
	struct thread_group **tgs = NULL;
	struct task **tasks = NULL, *init = NULL;
	int ret = 0;

	p->old_boot_ns = img->kernel->boot_ns;
	/* Host stamps (start times, deadlines) move by the time between the save and now. */
	p->delta = (int64_t)(task_monotonic_ns() - (img->kernel->boot_ns + img->kernel->uptime_ns));
	k->boot_ns = (uint64_t)((int64_t)img->kernel->boot_ns + p->delta);
	r->files = calloc(img->n_files + 1, sizeof(*r->files));
	p->files_by_id = calloc(img->n_files + 1, sizeof(*p->files_by_id));
	p->mms = calloc(img->n_mms + 1, sizeof(*p->mms));
	p->fdts = calloc(img->n_fdtables + 1, sizeof(*p->fdts));
	p->fss = calloc(img->n_fscontexts + 1, sizeof(*p->fss));
	p->shs = calloc(img->n_sighands + 1, sizeof(*p->shs));
	p->filters = calloc(img->n_seccomp_filters + 1, sizeof(*p->filters));
	tgs = calloc(img->n_tgs + 1, sizeof(*tgs));
	tasks = calloc(img->n_tasks + 1, sizeof(*tasks));
	if (!r->files || !p->files_by_id || !p->mms || !p->fdts || !p->fss || !p->shs ||
	    !p->filters || !tgs || !tasks) {
		ret = state_restore_fail(r, -ENOMEM, "out of memory");
		goto out;
	}
	r->nfiles = img->n_files;
	for (size_t i = 0; i < img->n_files; i++) {
		uint32_t id = img->files[i]->id;

		if (id == 0 || id > img->n_files || p->files_by_id[id - 1]) {
			ret = state_restore_fail(r, -EINVAL, "file id %u is invalid or repeated",
						 id);
			goto out;
		}
		p->files_by_id[id - 1] = img->files[i];
	}
	pthread_mutex_lock(&k->lock);
	snprintf(k->hostname, sizeof(k->hostname), "%s", img->kernel->hostname);
	snprintf(k->domainname, sizeof(k->domainname), "%s", img->kernel->domainname);
	k->next_tid = img->kernel->next_tid > 1 ? img->kernel->next_tid : 2;
	pthread_mutex_unlock(&k->lock);
	k->pids_limit = img->kernel->pids_limit;
	/* The sysctl table as the guest left it (after the command line's --sysctl). */
	for (size_t i = 0; i < img->n_sysctls; i++) {
		const char *eq = strchr(img->sysctls[i], '=');
		char name[128];
		int id;

		if (!eq || (size_t)(eq - img->sysctls[i]) >= sizeof(name)) {
			ret = state_restore_fail(r, -EINVAL, "sysctl entry %zu is invalid", i);
			goto out;
		}
		memcpy(name, img->sysctls[i], (size_t)(eq - img->sysctls[i]));
		name[eq - img->sysctls[i]] = 0;
		id = sysctl_lookup(name);
		if (id < 0 || (sysctl_def(id)->flags & SYSCTL_F_RO) ||
		    sysctl_write(id, eq + 1, strlen(eq + 1)) != (ssize_t)strlen(eq + 1)) {
			ret = state_restore_fail(r, -EINVAL, "sysctl %s cannot be restored", name);
			goto out;
		}
	}
	ret = pid_table_init(k);
	if (ret < 0)
		goto out;
	p->fs_phase = true;
	ret = state_fs_restore(r, img->fs);
	p->fs_phase = false;
	if (ret < 0)
		goto out;
	/* IPC objects before the memory maps: an attach's VMA file is made from its segment. */
	ret = state_ipc_restore(r);
	if (ret < 0)
		goto out;
	/* Seccomp filters: each after its prev, checked as seccomp(2) checks a guest's. */
	for (size_t i = 0; i < img->n_seccomp_filters; i++) {
		const Husk__State__SeccompFilter *f = img->seccomp_filters[i];
		long prev = f->prev ? FIND_ID(img->seccomp_filters, i, f->prev) : -1;
		size_t n = f->insns.len / sizeof(struct sock_filter);

		if ((f->prev && prev < 0) || f->insns.len % sizeof(struct sock_filter) ||
		    FIND_ID(img->seccomp_filters, i, f->id) >= 0 ||
		    seccomp_check((const struct sock_filter *)f->insns.data, n) < 0 ||
		    seccomp_filter_create((const struct sock_filter *)f->insns.data, n,
					  prev >= 0 ? p->filters[prev] : NULL, f->log,
					  &p->filters[i]) < 0) {
			ret = state_restore_fail(r, -EINVAL, "seccomp filter %u is invalid", f->id);
			goto out;
		}
	}

	/* Processes, then their threads (each process's leader is its first). */
	for (size_t i = 0; i < img->n_tgs; i++) {
		for (size_t j = 0; j < i; j++) {
			if (img->tgs[j]->pid == img->tgs[i]->pid) {
				ret = state_restore_fail(r, -EINVAL, "pid %d is repeated",
							 img->tgs[i]->pid);
				goto out;
			}
		}
		tgs[i] = restore_tg(r, img->tgs[i]);
		if (!tgs[i]) {
			ret = -EINVAL;
			goto out;
		}
	}
	for (size_t i = 0; i < img->n_tasks; i++) {
		const Husk__State__Task *m = img->tasks[i];
		struct thread_group *tg = NULL;

		for (size_t j = 0; j < img->n_tgs; j++)
			if (tgs[j]->pid == m->pid)
				tg = tgs[j];
		for (size_t j = 0; j < i; j++) {
			if (tasks[j]->tid == m->tid) {
				ret = state_restore_fail(r, -EINVAL, "tid %d is repeated", m->tid);
				goto out;
			}
		}
		if (!tg || tg->state != TG_RUNNING || (m->tid == m->pid) != !tg->leader ||
		    (tg->leader && tg->leader->mm == NULL)) {
			ret = state_restore_fail(r, -EINVAL, "task %d: its process %d", m->tid,
						 m->pid);
			goto out;
		}
		tasks[i] = restore_task(r, m, tg);
		if (!tasks[i]) {
			ret = -EINVAL;
			goto out;
		}
		if (!tg->leader) {
			tg->leader = tasks[i];
		} else if (tasks[i]->mm != tg->leader->mm) {
			ret = state_restore_fail(r, -EINVAL, "task %d: not its process's memory",
						 m->tid);
			goto out;
		}
		list_add_tail(&tasks[i]->tg_link, &tg->tasks);
		tg->nr_threads++;
	}
	/* The tree. */
	pthread_mutex_lock(&k->tree_lock);
	for (size_t i = 0; i < img->n_tgs && ret == 0; i++) {
		struct thread_group *tg = tgs[i];

		if (!tg->leader) {
			ret = state_restore_fail(r, -EINVAL, "process %d has no threads", tg->pid);
			break;
		}
		if (tg->ppid) {
			for (size_t j = 0; j < img->n_tgs; j++)
				if (tgs[j]->pid == tg->ppid && j != i)
					tg->parent = tgs[j];
			if (!tg->parent) {
				ret = state_restore_fail(r, -EINVAL, "process %d: no parent %d",
							 tg->pid, tg->ppid);
				break;
			}
			list_add_tail(&tg->sibling, &tg->parent->children);
		}
	}
	for (size_t i = 0; i < img->n_tasks && ret == 0; i++) {
		pid_insert(k, tasks[i]);
		k->nr_tasks++;
		if (tasks[i]->tid == img->kernel->init_pid)
			init = tasks[i];
	}
	for (size_t i = 0; i < img->n_tgs && ret == 0; i++) {
		if (tgs[i]->state == TG_ZOMBIE) {
			for (size_t j = 0; j < img->n_tasks; j++) {
				if (tasks[j]->tid == tgs[i]->pid) {
					ret = state_restore_fail(r, -EINVAL, "tid %d is repeated",
								 tgs[i]->pid);
					break;
				}
			}
			if (ret == 0)
				pid_insert(k, tgs[i]->leader);
		}
	}
	pthread_mutex_unlock(&k->tree_lock);
	if (ret < 0)
		goto out;
	/* SEM_UNDO lists belong to processes, which exist now. */
	ret = state_ipc_restore_undo(r);
	if (ret < 0)
		goto out;
	if (!init || init->tg->leader != init || init->tg->parent) {
		ret = state_restore_fail(r, -EINVAL, "no pid %d to be the sandbox's first process",
					 img->kernel->init_pid);
		goto out;
	}
	pthread_mutex_lock(&k->lock);
	k->init = init;
	pthread_mutex_unlock(&k->lock);
	ret = finish_pages(r);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < img->n_tgs && ret == 0; i++)
		if (tgs[i]->state == TG_RUNNING)
			ret = restore_timers(r, tgs[i], img->tgs[i]);
	if (ret < 0)
		goto out;
	/* Each leader starts its process's other threads from its own host thread. */
	for (size_t i = 0; i < img->n_tgs; i++) {
		struct thread_group *tg = tgs[i];
		struct task *t;
		int n = 0;

		if (tg->state == TG_ZOMBIE)
			continue;
		tg->leader->restore_threads = calloc((size_t)tg->nr_threads, sizeof(struct task *));
		if (!tg->leader->restore_threads) {
			ret = state_restore_fail(r, -ENOMEM, "out of memory");
			goto out;
		}
		list_for_each_entry(t, &tg->tasks, tg_link) {
			if (t != tg->leader) {
				task_get(t);
				tg->leader->restore_threads[n++] = t;
			}
		}
		tg->leader->nr_restore_threads = n;
	}
	for (size_t i = 0; i < img->n_tasks; i++)
		pid_task_started(k);
	for (size_t i = 0; i < img->n_tgs; i++) {
		if (tgs[i]->leader == init || tgs[i]->state == TG_ZOMBIE)
			continue;
		ret = task_start_restored(tgs[i]->leader);
		if (ret < 0) {
			state_restore_fail(r, ret, "starting pid %d: %s", tgs[i]->pid,
					   strerror(-ret));
			goto out;
		}
	}
	p->built = true;
	log_info("restore: %zu processes, %zu tasks, %zu files", img->n_tgs, img->n_tasks,
		 img->n_files);
out:
	free(tgs);
	free(tasks);
	if (ret < 0) {
		snprintf(err, errlen, "%s", r->err[0] ? r->err : strerror(-ret));
		return ERR_PTR(ret);
	}
	return init;
}

void state_restore_done(struct state_restore *r)
{
	struct restore_priv *p;

	if (!r)
		return;
	p = P(r);
	if (p && r->img)
		state_fs_restore_end(r);
	state_net_restore_end(r);
	if (p && p->built) {
		/* The objects hold their own references now (a failed restore ends the sentry: its
		 * half-built objects are left as they are). */
		for (size_t i = 0; i < r->nfiles; i++)
			if (r->files[i])
				file_put(r->files[i]);
		for (size_t i = 0; i < r->img->n_mms; i++)
			if (p->mms[i])
				mm_put(p->mms[i]);
		for (size_t i = 0; i < r->img->n_fdtables; i++)
			if (p->fdts[i])
				fdtable_put(p->fdts[i]);
		for (size_t i = 0; i < r->img->n_fscontexts; i++)
			if (p->fss[i])
				fs_context_put(p->fss[i]);
	}
	/* After the files: a removed segment that no restored attach holds goes now. */
	state_ipc_restore_end(r);
	if (p) {
		/* Before the image goes: its count of filters is read. */
		for (size_t i = 0; p->filters && r->img && i < r->img->n_seccomp_filters; i++)
			seccomp_filter_put(p->filters[i]);
		free(p->filters);
		if (p->img)
			husk__state__image__free_unpacked(p->img, NULL);
		free(p->claims);
		free(p->files_by_id);
		free(p->mms);
		free(p->fdts);
		free(p->fss);
		free(p->shs);
		free(p);
	}
	free(r->files);
	free(r);
}
