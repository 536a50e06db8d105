/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The structural checks of an image that need no kernel object (state.h: state_image_validate):
 * ids unique and every id referred to present, page ranges sorted and aligned, VMAs sorted,
 * aligned and with known flags, register and FP state sizes, counts of fixed-size arrays,
 * signal numbers, paths. restore.c runs them before it builds anything; the restore's own
 * checks stay where they are (a second line), and what needs the new sentry (the memory file's
 * size, the mounts, the platform's exact FP state size, a file's path) is checked there.
 * The image fuzzer (tests/fuzz/state) calls this with every image that unpacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/mm/vma.h"
#include "sentry/platform/platform.h"
#include "sentry/state/state.h"
#include "sentry/state/state_internal.h"

#define PAGE 4096ULL
#define ALIGNED(x) (((x) & (PAGE - 1)) == 0)
/* pid.c's PID_MAX: a pid or tid at or above it cannot be inserted. */
#define VALIDATE_PID_MAX 4194304
/* Host stamps (ns) move by a signed delta at restore: keep them far from overflowing (also
 * the bound of shared anonymous object numbers, which the restore counts on from). */
#define VALIDATE_NS_MAX (1ULL << 62)
/* An x86-64 xsave area: the legacy 512 bytes and the header, at most what CPUs have. */
#define VALIDATE_FPSTATE_MIN 576
#define VALIDATE_FPSTATE_MAX (1u << 16)
#define VALIDATE_SIGINFO 128

struct vctx {
	char *err;
	size_t errlen;
};

static int vfail(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int vfail(struct vctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The ids of one kind of message, sorted: ids from 1, each once. */
struct idset {
	uint32_t *v;
	size_t n;
};

/* Makes room for n ids in set (the caller fills set->v[0..n)). */
static int idset_alloc(struct vctx *c, struct idset *set, size_t n)
{
	set->n = n;
	set->v = malloc((n ? n : 1) * sizeof(*set->v));
	return set->v ? 0 : vfail(c, "out of memory");
}

/* Sorts the ids and refuses 0 and repeats. */
static int idset_check(struct vctx *c, struct idset *set, const char *what)
{
	qsort(set->v, set->n, sizeof(*set->v), cmp_u32);
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i] == 0 || (i && set->v[i] == set->v[i - 1]))
			return vfail(c, "%s id %u is invalid or repeated", what, set->v[i]);
	return 0;
}

static bool has_id(const struct idset *set, uint32_t id)
{
	return set->n && bsearch(&id, set->v, set->n, sizeof(id), cmp_u32) != NULL;
}

#define IDSET(c, set, arr, n, what)                            \
	({                                                     \
		int r_ = idset_alloc(c, set, n);               \
		for (size_t i_ = 0; r_ == 0 && i_ < (n); i_++) \
			(set)->v[i_] = (arr)[i_]->id;          \
		r_ == 0 ? idset_check(c, set, what) : r_;      \
	})

/* A pid or tid and the index of its message, sorted by pid. */
struct pidx {
	int32_t pid;
	uint32_t i;
};

static int cmp_pidx(const void *a, const void *b)
{
	const struct pidx *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

static bool sig_ok(int32_t sig)
{
	return sig >= 0 && sig <= LINUX_NSIG;
}

static int check_kernel(struct vctx *c, const Husk__State__Kernel *k)
{
	if (strlen(k->hostname) > 64 || strlen(k->domainname) > 64)
		return vfail(c, "the host or domain name is too long");
	if (k->next_tid < 0 || k->next_tid >= VALIDATE_PID_MAX || k->init_pid <= 0 ||
	    k->init_pid >= VALIDATE_PID_MAX || k->pids_limit < 0)
		return vfail(c, "the kernel's pids are invalid");
	if (k->boot_ns >= VALIDATE_NS_MAX || k->uptime_ns >= VALIDATE_NS_MAX ||
	    k->guest_mono_ns >= VALIDATE_NS_MAX)
		return vfail(c, "the kernel's clocks are invalid");
	if (k->vdso_off + k->vdso_len < k->vdso_off || k->vvar_off + PAGE < k->vvar_off)
		return vfail(c, "the vDSO's offsets are invalid");
	return 0;
}

static int check_pages(struct vctx *c, const Husk__State__Image *img)
{
	uint64_t prev_end = 0;

	for (size_t i = 0; i < img->n_pages; i++) {
		const Husk__State__MemRange *m = img->pages[i];

		if (!ALIGNED(m->mem_off) || !ALIGNED(m->len) || !m->len || m->mem_off < prev_end ||
		    m->mem_off + m->len < m->mem_off ||
		    (m->has_file_off && m->file_off + m->len < m->file_off))
			return vfail(c, "page range %zu (%#llx+%#llx) is invalid", i,
				     (unsigned long long)m->mem_off, (unsigned long long)m->len);
		prev_end = m->mem_off + m->len;
	}
	return 0;
}

static int check_queue(struct vctx *c, Husk__State__SigQueued **q, size_t n, int32_t who)
{
	for (size_t i = 0; i < n; i++)
		if (q[i]->info.len != VALIDATE_SIGINFO)
			return vfail(c, "%d: a queued signal's siginfo", who);
	return 0;
}

static int check_mm(struct vctx *c, const Husk__State__Mm *m, const struct idset *files)
{
	const uint32_t kinds = MM_VMA_PRIVATE | MM_VMA_SHARED | MM_VMA_ANON | MM_VMA_FILE |
			       MM_VMA_GROWSDOWN | MM_VMA_HEAP | MM_VMA_DONTFORK |
			       MM_VMA_WIPEONFORK | MM_VMA_LOCKED | MM_VMA_VDSO | MM_VMA_VVAR;
	const uint32_t flags = VMA_COW | VMA_NOWRITE | VMA_LAZY | VMA_EOF;
	uint64_t prev_end = 0;

	for (size_t j = 0; j < m->n_vmas; j++) {
		const Husk__State__Vma *v = m->vmas[j];
		uint64_t len = v->end - v->start;

		if (!ALIGNED(v->start) || !ALIGNED(v->end) || v->end <= v->start ||
		    v->start < prev_end || v->end > TASK_SIZE_MAX || (v->kind & ~kinds) ||
		    (v->flags & ~flags) || (v->prot & ~7u) || !ALIGNED(v->mem_off) ||
		    v->mem_off + len < v->mem_off ||
		    !!(v->kind & MM_VMA_PRIVATE) == !!(v->kind & MM_VMA_SHARED) ||
		    (v->has_file && !(v->kind & MM_VMA_FILE)) ||
		    ((v->kind & MM_VMA_FILE) && !v->has_file) ||
		    (v->has_file_off && !ALIGNED(v->file_off)) ||
		    (v->has_file_off && v->file_off + len < v->file_off) ||
		    (v->has_obj && v->obj >= VALIDATE_NS_MAX))
			return vfail(c, "memory map %u: mapping %zu is invalid", m->id, j);
		if (v->has_file && !has_id(files, v->file))
			return vfail(c, "memory map %u: mapping %zu: file %u is not in the image",
				     m->id, j, v->file);
		prev_end = v->end;
	}
	if (m->n_auxv > 64 || m->n_auxv % 2)
		return vfail(c, "memory map %u: bad auxv", m->id);
	return 0;
}

static int check_files(struct vctx *c, const Husk__State__Image *img)
{
	const Husk__State__FsState *fs = img->fs;
	struct idset tmpfs = { 0 };
	size_t nodes = 0;
	int ret = IDSET(c, &tmpfs, fs->tmpfs, fs->n_tmpfs, "tmpfs");

	free(tmpfs.v);
	if (ret < 0)
		return ret;

	for (size_t i = 0; i < fs->n_pipes; i++)
		if (fs->pipes[i]->id != i + 1)
			return vfail(c, "bad pipe id %u", fs->pipes[i]->id);
	for (size_t t = 0; t < fs->n_tmpfs; t++) {
		if (fs->tmpfs[t]->n_nodes > UINT32_MAX - nodes)
			return vfail(c, "too many tmpfs nodes");
		nodes += fs->tmpfs[t]->n_nodes;
	}
	/* Node ids: 1..nodes, each once (fs.c's table is indexed by them). */
	for (size_t t = 0; t < fs->n_tmpfs; t++)
		if (fs->tmpfs[t]->root == 0 || fs->tmpfs[t]->root > nodes)
			return vfail(c, "tmpfs %u: bad root node %u", fs->tmpfs[t]->id,
				     fs->tmpfs[t]->root);
	if (nodes) {
		uint8_t *seen = calloc(nodes, 1);

		if (!seen)
			return vfail(c, "out of memory");
		for (size_t t = 0; t < fs->n_tmpfs; t++) {
			const Husk__State__Tmpfs *m = fs->tmpfs[t];

			for (size_t i = 0; i < m->n_nodes; i++) {
				uint32_t id = m->nodes[i]->id;

				if (id == 0 || id > nodes || seen[id - 1]) {
					free(seen);
					return vfail(c, "bad tmpfs node id %u", id);
				}
				seen[id - 1] = 1;
			}
		}
		free(seen);
	}
	for (size_t i = 0; i < img->n_files; i++) {
		const Husk__State__File *f = img->files[i];

		if (f->id == 0 || f->id > img->n_files)
			return vfail(c, "file id %u is invalid or repeated", f->id);
		if ((f->flags & O_ACCMODE) == O_ACCMODE && !(f->flags & O_PATH))
			return vfail(c, "file %u: bad flags %#x", f->id, f->flags);
		if (f->pos < 0)
			return vfail(c, "file %u: bad position", f->id);
		switch (f->kind) {
		case STATE_FILE_HOST:
			if (!f->has_host_fd || f->host_fd < 0 || f->host_fd > 2)
				return vfail(c, "file %u: bad host fd", f->id);
			break;
		case STATE_FILE_PATH:
			if (!f->path || !f->has_mount || !f->mountpoint)
				return vfail(c, "file %u: no path", f->id);
			break;
		case STATE_FILE_FIFO:
			if (!f->path || !f->has_mount || !f->mountpoint)
				return vfail(c, "file %u: no path", f->id);
			/* fall through */
		case STATE_FILE_PIPE:
			if (!f->has_pipe || f->pipe == 0 || f->pipe > fs->n_pipes)
				return vfail(c, "file %u: bad pipe id", f->id);
			break;
		case STATE_FILE_MEMFD:
			if (!f->has_node || f->node == 0 || f->node > nodes)
				return vfail(c, "file %u: bad tmpfs node id", f->id);
			break;
		case STATE_FILE_EVENTFD:
		case STATE_FILE_TIMERFD:
		case STATE_FILE_SIGNALFD:
		case STATE_FILE_EPOLL:
		case STATE_FILE_SOCKET:
			/* anon.c and net.c check their own fields where they use them. */
			break;
		default:
			return vfail(c, "file %u: bad kind %u", f->id, f->kind);
		}
	}
	return 0;
}

/*
 * What the host kernel refuses to load (ptrace's putreg and xstate checks) and so would fail the
 * task after the restore started: fs_base and gs_base past the user address space, an xsave
 * area not in the standard format or with reserved header bytes set, MXCSR's reserved bits.
 */
static bool cpu_state_ok(const Husk__State__Task *m)
{
	arch_regs_t regs;
	uint64_t hdr[8];
	uint32_t mxcsr;

	memcpy(&regs, m->regs.data, sizeof(regs));
	if (regs.fs_base >= TASK_SIZE_MAX || regs.gs_base >= TASK_SIZE_MAX)
		return false;
	memcpy(&mxcsr, m->fpstate.data + 24, sizeof(mxcsr));
	memcpy(hdr, m->fpstate.data + 512, sizeof(hdr)); /* xstate_bv, xcomp_bv, reserved */
	if (mxcsr >> 16)
		return false;
	for (int i = 1; i < 8; i++)
		if (hdr[i])
			return false;
	return true;
}

/* The index in img->tgs of the process pid (tgs: sorted by pid), or -1. */
static long tg_index(const struct pidx *tgs, size_t n, int32_t pid)
{
	struct pidx key = { pid, 0 };
	const struct pidx *e = n ? bsearch(&key, tgs, n, sizeof(key), cmp_pidx) : NULL;

	return e ? (long)e->i : -1;
}

static int check_processes(struct vctx *c, const Husk__State__Image *img,
			   const struct idset *sighands, const struct idset *mms,
			   const struct idset *fdts, const struct idset *fss)
{
	size_t ntg = img->n_tgs, nt = img->n_tasks;
	struct pidx *tgs = calloc(ntg + 1, sizeof(*tgs)), *tids = calloc(nt + 1, sizeof(*tids));
	uint32_t *leader_mm = calloc(ntg + 1, sizeof(*leader_mm));
	bool *has_leader = calloc(ntg + 1, sizeof(*has_leader));
	long init;
	int ret = 0;

	if (!tgs || !tids || !leader_mm || !has_leader) {
		ret = vfail(c, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < ntg; i++)
		tgs[i] = (struct pidx){ img->tgs[i]->pid, (uint32_t)i };
	qsort(tgs, ntg, sizeof(*tgs), cmp_pidx);
	for (size_t i = 1; i < ntg; i++) {
		if (tgs[i].pid == tgs[i - 1].pid) {
			ret = vfail(c, "pid %d is repeated", tgs[i].pid);
			goto out;
		}
	}
	for (size_t i = 0; i < img->n_sighands; i++) {
		if (img->sighands[i]->n_actions != LINUX_NSIG) {
			ret = vfail(c, "signal actions %u: %zu actions", img->sighands[i]->id,
				    img->sighands[i]->n_actions);
			goto out;
		}
	}
	for (size_t i = 0; i < ntg; i++) {
		const Husk__State__ThreadGroup *m = img->tgs[i];

		if (m->pid <= 0 || m->pid >= VALIDATE_PID_MAX || m->ppid < 0 || m->pgid <= 0 ||
		    m->sid <= 0 || !sig_ok(m->exit_signal) || !sig_ok(m->stop_signal) ||
		    !sig_ok(m->sig_notify) || m->n_rlimits != LINUX_RLIM_NLIMITS ||
		    (m->state != TG_RUNNING && m->state != TG_ZOMBIE) ||
		    (m->state == TG_ZOMBIE && m->is_init) || m->start_ns >= VALIDATE_NS_MAX) {
			ret = vfail(c, "process %d is invalid", m->pid);
			goto out;
		}
		if (!has_id(sighands, m->sighand)) {
			ret = vfail(c, "pid %d: signal actions %u not in the image", m->pid,
				    m->sighand);
			goto out;
		}
		if (m->ppid && (m->ppid == m->pid || tg_index(tgs, ntg, m->ppid) < 0)) {
			ret = vfail(c, "process %d: no parent %d", m->pid, m->ppid);
			goto out;
		}
		ret = check_queue(c, m->shared_queue, m->n_shared_queue, m->pid);
		if (ret < 0)
			goto out;
	}
	init = tg_index(tgs, ntg, img->kernel->init_pid);
	if (init < 0 || img->tgs[init]->ppid) {
		ret = vfail(c, "no pid %d to be the sandbox's first process",
			    img->kernel->init_pid);
		goto out;
	}
	for (size_t i = 0; i < nt; i++)
		tids[i] = (struct pidx){ img->tasks[i]->tid, (uint32_t)i };
	qsort(tids, nt, sizeof(*tids), cmp_pidx);
	for (size_t i = 1; i < nt; i++) {
		if (tids[i].pid == tids[i - 1].pid) {
			ret = vfail(c, "tid %d is repeated", tids[i].pid);
			goto out;
		}
	}
	for (size_t i = 0; i < nt; i++) {
		const Husk__State__Task *m = img->tasks[i];
		long g = tg_index(tgs, ntg, m->pid);

		if (m->tid <= 0 || m->tid >= VALIDATE_PID_MAX ||
		    m->regs.len != sizeof(arch_regs_t) || m->fpstate.len < VALIDATE_FPSTATE_MIN ||
		    m->fpstate.len > VALIDATE_FPSTATE_MAX || m->cred->n_groups > 32 ||
		    m->n_affinity != 16 || m->n_restart_data != 4 ||
		    m->restart_kind > STATE_RESTART_POLL || !sig_ok(m->pdeath_signal) ||
		    m->start_ns >= VALIDATE_NS_MAX ||
		    check_queue(c, m->queue, m->n_queue, m->tid)) {
			ret = vfail(c, "task %d is invalid", m->tid);
			goto out;
		}
		if (!cpu_state_ok(m)) {
			ret = vfail(c, "task %d: registers or FP state the CPU refuses", m->tid);
			goto out;
		}
		/* Guest clocks a sleep restarts on; a CPU clock's kind (sys_time.c). */
		if ((m->restart_kind == STATE_RESTART_SLEEP &&
		     (m->restart_data[0] > 11 || m->restart_data[0] == 2 ||
		      m->restart_data[0] == 3)) ||
		    (m->restart_kind == STATE_RESTART_CPU_SLEEP && m->restart_data[3] > 2)) {
			ret = vfail(c, "task %d: bad restart data", m->tid);
			goto out;
		}
		/* A process's first task is its leader (tid = pid); no other task has a pid; a
		 * zombie has none (its leader has left). */
		if (g < 0 || img->tgs[g]->state != TG_RUNNING ||
		    (m->tid == m->pid) == has_leader[g] ||
		    (m->tid != m->pid && tg_index(tgs, ntg, m->tid) >= 0)) {
			ret = vfail(c, "task %d: its process %d", m->tid, m->pid);
			goto out;
		}
		if (!has_id(mms, m->mm) || !has_id(fdts, m->fdtable) || !has_id(fss, m->fs)) {
			ret = vfail(c,
				    "task %d: its memory map, fd table or fs context is not in "
				    "the image",
				    m->tid);
			goto out;
		}
		if (!has_leader[g]) {
			has_leader[g] = true;
			leader_mm[g] = m->mm;
		} else if (leader_mm[g] != m->mm) {
			ret = vfail(c, "task %d: not its process's memory", m->tid);
			goto out;
		}
	}
	for (size_t i = 0; i < ntg; i++) {
		if (!has_leader[i] && img->tgs[i]->state == TG_RUNNING) {
			ret = vfail(c, "process %d has no threads", img->tgs[i]->pid);
			goto out;
		}
	}
out:
	free(tgs);
	free(tids);
	free(leader_mm);
	free(has_leader);
	return ret;
}

static int check_fdtable(struct vctx *c, const Husk__State__FdTable *t, const struct idset *files)
{
	int *fds = malloc((t->n_fds ? t->n_fds : 1) * sizeof(*fds));
	int ret = 0;

	if (!fds)
		return vfail(c, "out of memory");
	for (size_t j = 0; !ret && j < t->n_fds; j++) {
		const Husk__State__Fd *e = t->fds[j];

		if (e->fd < 0 || e->fd >= (1 << 20))
			ret = vfail(c, "fd table %u: fd %d", t->id, e->fd);
		else if (!has_id(files, e->file))
			ret = vfail(c, "fd table %u: fd %d: file %u is not in the image", t->id,
				    e->fd, e->file);
		fds[j] = e->fd;
	}
	if (!ret) {
		qsort(fds, t->n_fds, sizeof(*fds), cmp_int);
		for (size_t j = 1; !ret && j < t->n_fds; j++)
			if (fds[j] == fds[j - 1])
				ret = vfail(c, "fd table %u: fd %d is repeated", t->id, fds[j]);
	}
	free(fds);
	return ret;
}

int state_image_validate(const Husk__State__Image *img, char *err, size_t errlen)
{
	struct vctx c = { err, errlen };
	struct idset sighands = { 0 }, mms = { 0 }, fdts = { 0 }, fss = { 0 }, files = { 0 };
	int ret;

	ret = check_kernel(&c, img->kernel);
	if (!ret)
		ret = check_pages(&c, img);
	if (!ret)
		ret = IDSET(&c, &sighands, img->sighands, img->n_sighands, "signal actions");
	if (!ret)
		ret = IDSET(&c, &mms, img->mms, img->n_mms, "memory map");
	if (!ret)
		ret = IDSET(&c, &fdts, img->fdtables, img->n_fdtables, "fd table");
	if (!ret)
		ret = IDSET(&c, &fss, img->fscontexts, img->n_fscontexts, "fs context");
	if (!ret)
		ret = IDSET(&c, &files, img->files, img->n_files, "file");
	if (!ret)
		ret = check_files(&c, img);
	for (size_t i = 0; !ret && i < img->n_mms; i++)
		ret = check_mm(&c, img->mms[i], &files);
	for (size_t i = 0; !ret && i < img->n_fdtables; i++)
		ret = check_fdtable(&c, img->fdtables[i], &files);
	for (size_t i = 0; !ret && i < img->n_fscontexts; i++) {
		const Husk__State__FsContext *f = img->fscontexts[i];

		if (f->cwd[0] != '/' || strlen(f->cwd) >= 4096)
			ret = vfail(&c, "fs context %u: cwd %.64s", f->id, f->cwd);
	}
	if (!ret)
		ret = check_processes(&c, img, &sighands, &mms, &fdts, &fss);
	free(sighands.v);
	free(mms.v);
	free(fdts.v);
	free(fss.v);
	free(files.v);
	return ret;
}
