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

#include "sentry/kernel/ipc.h"
#include "sentry/kernel/mqueue.h"
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
		case STATE_FILE_SHM:
		case STATE_FILE_MQUEUE:
			/* check_ipc: the object they name. */
			break;
		default:
			return vfail(c, "file %u: bad kind %u", f->id, f->kind);
		}
	}
	return 0;
}

/* The largest System V message text and shm segment an image may hold. */
#define VALIDATE_MSG_MAX (16u << 20)
#define VALIDATE_SHM_MAX (1ULL << 40)

/* A System V object's id and perm; seen marks the indexes of its family (IPC_MNI bytes). */
static int check_perm(struct vctx *c, const Husk__State__IpcPerm *p, uint32_t modes, uint8_t *seen,
		      const char *what)
{
	if (p->id < 0 || (uint32_t)p->id / IPC_ID_MULT >= IPC_SEQ_MAX)
		return vfail(c, "%s id %d is invalid", what, p->id);
	if (seen[p->id % IPC_ID_MULT]++)
		return vfail(c, "%s id %d: its index is repeated", what, p->id);
	if (p->mode & ~modes)
		return vfail(c, "%s %d: bad mode %#o", what, p->id, p->mode);
	return 0;
}

static int check_ids(struct vctx *c, const Husk__State__IpcIds *m, const char *what)
{
	if (m->seq >= IPC_SEQ_MAX || m->last_idx < -1 || m->last_idx >= IPC_MNI)
		return vfail(c, "%s ids: sequence %u, index %d", what, m->seq, m->last_idx);
	return 0;
}

/* The file of that id (check_files made the ids 1..n_files, each once): by its index. */
static const Husk__State__File *file_by_id(const Husk__State__File **byid, size_t n, uint32_t id)
{
	return id >= 1 && id <= n ? byid[id - 1] : NULL;
}

static bool mq_name_ok(const char *n)
{
	size_t len = strlen(n);

	return len >= 1 && len <= MQ_NAME_MAX && !strchr(n, '/') && strcmp(n, ".") != 0 &&
	       strcmp(n, "..") != 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_mqueues(struct vctx *c, const Husk__State__IpcState *in)
{
	const char **names = malloc((in->n_mqueues + 1) * sizeof(*names));
	size_t nn = 0;
	int ret = 0;

	if (!names)
		return vfail(c, "out of memory");
	for (size_t i = 0; i < in->n_mqueues && !ret; i++) {
		const Husk__State__Mqueue *q = in->mqueues[i];

		if (!mq_name_ok(q->name) || (q->mode & ~0777u) || q->maxmsg < 1 ||
		    q->maxmsg > MQ_RESTORE_MAXMSG || q->msgsize < 1 ||
		    q->msgsize > MQ_RESTORE_MSGSIZE || q->n_msgs > (uint64_t)q->maxmsg ||
		    q->ctime_nsec < 0 || q->ctime_nsec >= 1000000000) {
			ret = vfail(c, "POSIX message queue %u is invalid", q->id);
			break;
		}
		for (size_t j = 0; j < q->n_msgs; j++) {
			const Husk__State__MqMsg *m = q->msgs[j];

			/* In receive order: priorities never rise. */
			if (m->prio >= MQ_RESTORE_PRIO_MAX || m->data.len > (uint64_t)q->msgsize ||
			    (j && m->prio > q->msgs[j - 1]->prio)) {
				ret = vfail(c, "POSIX message queue %u: message %zu is invalid",
					    q->id, j);
				break;
			}
		}
		if (q->linked)
			names[nn++] = q->name;
	}
	if (!ret && nn) {
		qsort(names, nn, sizeof(*names), cmp_str);
		for (size_t i = 1; i < nn && !ret; i++)
			if (strcmp(names[i], names[i - 1]) == 0)
				ret = vfail(c, "POSIX message queue /%.64s is repeated", names[i]);
	}
	free(names);
	return ret;
}

/*
 * IpcState: ids in range and each index once per family, modes, sizes and message lengths in
 * Linux's bounds, a segment's memfd a nameless tmpfs file, SEM_UNDO lists naming a set of
 * their length and a process, files naming a segment or queue that exists.
 */
static int check_ipc(struct vctx *c, const Husk__State__Image *img)
{
	const Husk__State__IpcState *in = img->ipc;
	const Husk__State__File **byid;
	struct idset mqs = { 0 };
	uint8_t *seen;
	int ret = 0;

	if (!in) {
		for (size_t i = 0; i < img->n_files; i++)
			if (img->files[i]->kind == STATE_FILE_SHM ||
			    img->files[i]->kind == STATE_FILE_MQUEUE)
				return vfail(c, "file %u: no IPC objects in the image",
					     img->files[i]->id);
		return 0;
	}
	ret = check_ids(c, in->shm_ids, "shm");
	if (!ret)
		ret = check_ids(c, in->sem_ids, "semaphore");
	if (!ret)
		ret = check_ids(c, in->msg_ids, "message queue");
	if (ret)
		return ret;
	seen = calloc(3, IPC_MNI);
	byid = calloc(img->n_files + 1, sizeof(*byid));
	if (!seen || !byid) {
		free(seen);
		free(byid);
		return vfail(c, "out of memory");
	}
	for (size_t i = 0; i < img->n_files; i++)
		byid[img->files[i]->id - 1] = img->files[i];
	for (size_t i = 0; i < in->n_shms && !ret; i++) {
		const Husk__State__ShmSeg *m = in->shms[i];
		const Husk__State__File *f = file_by_id(byid, img->n_files, m->memfd);

		ret = check_perm(c, m->perm, 0777 | LINUX_SHM_DEST | LINUX_SHM_LOCKED, seen, "shm");
		if (!ret && (m->size < 1 || m->size > VALIDATE_SHM_MAX))
			ret = vfail(c, "shm %d: size %llu", m->perm->id,
				    (unsigned long long)m->size);
		if (!ret && (!f || f->kind != STATE_FILE_MEMFD))
			ret = vfail(c, "shm %d: its memfd (file %u) is not a memfd", m->perm->id,
				    m->memfd);
		if (!ret && (m->cpid < 0 || m->cpid >= VALIDATE_PID_MAX || m->lpid < 0 ||
			     m->lpid >= VALIDATE_PID_MAX))
			ret = vfail(c, "shm %d: bad pids", m->perm->id);
	}
	for (size_t i = 0; i < in->n_sems && !ret; i++) {
		const Husk__State__SemSet *m = in->sems[i];

		ret = check_perm(c, m->perm, 0777, seen + IPC_MNI, "semaphore set");
		if (!ret &&
		    (m->n_vals < 1 || m->n_vals > IPC_SEM_RESTORE_MAX || m->n_pids != m->n_vals))
			ret = vfail(c, "semaphore set %d: %zu values, %zu pids", m->perm->id,
				    m->n_vals, m->n_pids);
		for (size_t j = 0; !ret && j < m->n_vals; j++)
			if (m->vals[j] < 0 || m->vals[j] > LINUX_SEMVMX || m->pids[j] < 0 ||
			    m->pids[j] >= VALIDATE_PID_MAX)
				ret = vfail(c, "semaphore set %d: semaphore %zu", m->perm->id, j);
	}
	for (size_t i = 0; i < in->n_sem_undos && !ret; i++) {
		const Husk__State__SemUndo *u = in->sem_undos[i];
		const Husk__State__SemSet *set = NULL;
		bool tg = false;

		for (size_t j = 0; j < in->n_sems; j++)
			if (in->sems[j]->perm->id == u->semid)
				set = in->sems[j];
		for (size_t j = 0; j < img->n_tgs; j++)
			if (img->tgs[j]->pid == u->pid)
				tg = true;
		if (!set || set->n_vals != u->n_adj || !tg) {
			ret = vfail(c, "SEM_UNDO %zu: no set %d of %zu or no process %d", i,
				    u->semid, u->n_adj, u->pid);
			break;
		}
		for (size_t j = 0; j < u->n_adj && !ret; j++)
			if (u->adj[j] < -LINUX_SEMAEM - 1 || u->adj[j] > LINUX_SEMAEM)
				ret = vfail(c, "SEM_UNDO %zu: adjustment %d", i, u->adj[j]);
	}
	for (size_t i = 0; i < in->n_msgs && !ret; i++) {
		const Husk__State__MsgQueue *m = in->msgs[i];

		ret = check_perm(c, m->perm, 0777, seen + 2 * IPC_MNI, "message queue");
		if (!ret && (m->qbytes > INT32_MAX || m->lspid < 0 || m->lrpid < 0 ||
			     m->lspid >= VALIDATE_PID_MAX || m->lrpid >= VALIDATE_PID_MAX))
			ret = vfail(c, "message queue %d is invalid", m->perm->id);
		for (size_t j = 0; !ret && j < m->n_msgs; j++)
			if (m->msgs[j]->mtype < 1 || m->msgs[j]->text.len > VALIDATE_MSG_MAX)
				ret = vfail(c, "message queue %d: message %zu", m->perm->id, j);
	}
	if (!ret)
		ret = IDSET(c, &mqs, in->mqueues, in->n_mqueues, "POSIX message queue");
	if (!ret)
		ret = check_mqueues(c, in);
	for (size_t i = 0; i < img->n_files && !ret; i++) {
		const Husk__State__File *f = img->files[i];
		bool found = false;

		if (f->kind == STATE_FILE_SHM) {
			for (size_t j = 0; f->has_shm && j < in->n_shms; j++)
				found |= in->shms[j]->perm->id == f->shm;
		} else if (f->kind == STATE_FILE_MQUEUE) {
			found = f->has_mqueue && has_id(&mqs, f->mqueue);
		} else {
			continue;
		}
		if (!found)
			ret = vfail(c, "file %u: the IPC object it names is not in the image",
				    f->id);
	}
	free(mqs.v);
	free(seen);
	free(byid);
	return ret;
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
		    (m->state == TG_ZOMBIE && m->is_init) || m->start_ns >= VALIDATE_NS_MAX ||
		    m->oom_score_adj < -1000 || m->oom_score_adj > 1000 ||
		    m->oom_score_adj_min < -1000 || m->oom_score_adj_min > 1000) {
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
	if (!ret)
		ret = check_ipc(&c, img);
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
