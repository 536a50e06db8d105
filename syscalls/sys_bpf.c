/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf(2) for cgroup device programs, as runc and crun use them: BPF_PROG_LOAD of
 * BPF_PROG_TYPE_CGROUP_DEVICE (checked by the sentry's verifier, sentry/kernel/bpf.c), attach,
 * detach and query on a cgroup2 directory (sentry/fs/cgroup/bpf.c, which runs the programs at
 * each open and mknod of a device node), BPF_PROG_GET_NEXT_ID, BPF_PROG_GET_FD_BY_ID and
 * BPF_OBJ_GET_INFO_BY_FD of a program. Nothing is loaded into the host kernel. BPF_PROG_TYPE_CGROUP_SKB
 * programs load (no context readable) but attach nowhere: cilium/ebpf (runc) loads one to learn
 * whether BPF_PROG_ATTACH exists. Every other command and program type is EINVAL, as a kernel
 * without them answers.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/kernel/bpf.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define CMD_PROG_LOAD 5
#define CMD_PROG_ATTACH 8
#define CMD_PROG_DETACH 9
#define CMD_PROG_GET_NEXT_ID 11
#define CMD_PROG_GET_FD_BY_ID 13
#define CMD_OBJ_GET_INFO_BY_FD 15
#define CMD_PROG_QUERY 16
#define ATTACH_CGROUP_DEVICE 6
#define F_QUERY_EFFECTIVE 1u
#define F_RDONLY (1u << 3)
#define F_WRONLY (1u << 4)
#define CAP_SYS_ADMIN_ 21
#define CAP_BPF_ 39
#define ATTR_MAX 256 /* the part of union bpf_attr the sentry reads */
#define INFO_SIZE 232 /* struct bpf_prog_info as far as Linux 6.x has it */

/* --- program files --- */

struct bpf_node {
	struct vfs_node node;
	struct bpf_prog *prog; /* referenced */
};

static int bpfn_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = (uint64_t)(uintptr_t)n >> 4,
		.nlink = 1,
		.mode = S_IFREG | 0600,
		.blksize = 4096,
	};
	return 0;
}

static void bpfn_release(struct vfs_node *n)
{
	struct bpf_node *b = container_of(n, struct bpf_node, node);

	bpf_prog_put(b->prog);
	free(b);
}

static const struct vfs_node_ops bpf_node_ops = {
	.getattr = bpfn_getattr,
	.release = bpfn_release,
};

static const struct file_ops bpf_prog_fops = { 0 };

/* A new fd for p (takes a reference of its own) in t's table: the fd or -errno. */
static long prog_fd(struct task *t, struct bpf_prog *p)
{
	struct bpf_node *b = calloc(1, sizeof(*b));
	struct file *f;
	int fd;

	if (!b)
		return -ENOMEM;
	if (vfs_anon_node_init(&b->node, &bpf_node_ops, S_IFREG) < 0) {
		free(b);
		return -ENOMEM;
	}
	bpf_prog_get(p);
	b->prog = p;
	f = anon_file_create(&b->node, &bpf_prog_fops, O_RDWR, b);
	if (!f)
		return -ENOMEM;
	fd = fdtable_install(t->fdt, f, 0, true, task_nofile_limit(t));
	file_put(f);
	return fd;
}

/* The program of fd, a new reference: ERR_PTR(-EBADF) for no file, -EINVAL for another file. */
static struct bpf_prog *prog_of_fd(struct task *t, int fd)
{
	struct file *f = fdtable_lookup(t->fdt, fd);
	struct bpf_prog *p;

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->ops != &bpf_prog_fops) {
		file_put(f);
		return ERR_PTR(-EINVAL);
	}
	p = container_of(f->node, struct bpf_node, node)->prog;
	bpf_prog_get(p);
	file_put(f);
	return p;
}

/* The cgroup of directory fd, a new reference, or ERR_PTR(-EBADF). */
static struct cgroup *cgroup_of_fd(struct task *t, int fd)
{
	struct file *f = fdtable_lookup(t->fdt, fd);
	struct cgroup *cg;

	if (!f)
		return ERR_PTR(-EBADF);
	cg = cgroup_of_file(f);
	file_put(f);
	return cg;
}

static uint32_t u32_at(const uint8_t *a, size_t off)
{
	uint32_t v;

	memcpy(&v, a + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *a, size_t off)
{
	uint64_t v;

	memcpy(&v, a + off, sizeof(v));
	return v;
}

static int copy_out(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

/* --- commands --- */

static long prog_load(struct task *t, const uint8_t *a)
{
	uint32_t type = u32_at(a, 0), n = u32_at(a, 4), log_level = u32_at(a, 24);
	uint32_t log_size = u32_at(a, 28), flags = u32_at(a, 44);
	uint64_t insns = u64_at(a, 8), log_buf = u64_at(a, 32);
	struct bpf_dev_insn *code;
	struct bpf_prog *p;
	char log[256];
	long ret;

	if ((type != BPF_PROG_CGROUP_DEVICE && type != BPF_PROG_CGROUP_SKB) || flags)
		return -EINVAL;
	/* Linux's bpf_vlog_init: a log wants a buffer of at least 128 bytes, and a size wants a level. */
	if (log_level && (log_size < 128 || !log_buf))
		return -EINVAL;
	if (!log_level && (log_size || log_buf))
		return -EINVAL;
	if (n == 0 || n > BPF_DEV_MAX_INSNS)
		return -E2BIG; /* Linux's bpf_prog_load, for both */
	code = malloc(n * sizeof(*code));
	if (!code)
		return -ENOMEM;
	if (mm_copy_in(t->mm, code, insns, n * sizeof(*code)) != (ssize_t)(n * sizeof(*code))) {
		free(code);
		return -EFAULT;
	}
	p = bpf_prog_new(type, code, n, log, sizeof(log));
	free(code);
	if (IS_ERR(p)) {
		if (log_level) {
			size_t l = strlen(log) + 1;

			if (copy_out(t, log_buf, log, l < log_size ? l : log_size) < 0)
				return -EFAULT;
		}
		return PTR_ERR(p);
	}
	memcpy(p->name, a + 48, sizeof(p->name) - 1);
	p->load_time = task_monotonic_ns();
	p->uid = t->cred.uid;
	ret = prog_fd(t, p);
	bpf_prog_put(p);
	return ret;
}

static long prog_attach(struct task *t, const uint8_t *a, bool attach)
{
	uint32_t flags = u32_at(a, 12);
	struct bpf_prog *p, *replace = NULL;
	struct cgroup *cg;
	long ret;

	if (u32_at(a, 8) != ATTACH_CGROUP_DEVICE)
		return -EINVAL;
	cg = cgroup_of_fd(t, (int)u32_at(a, 0));
	if (IS_ERR(cg))
		return PTR_ERR(cg);
	p = prog_of_fd(t, (int)u32_at(a, 4));
	if (!attach) {
		/* Linux's cgroup_bpf_prog_detach: a bad program fd means "the one attached". */
		ret = cgroup_bpf_detach(cg, IS_ERR(p) ? NULL : p);
		goto out;
	}
	if (IS_ERR(p)) {
		ret = PTR_ERR(p);
		p = NULL;
		goto out;
	}
	if (p->type != BPF_PROG_CGROUP_DEVICE) {
		ret = -EINVAL; /* Linux's bpf_prog_attach_check_attach_type */
		goto out;
	}
	if (flags & 4u /* BPF_F_REPLACE */) {
		replace = prog_of_fd(t, (int)u32_at(a, 16));
		if (IS_ERR(replace)) {
			ret = PTR_ERR(replace);
			replace = NULL;
			goto out;
		}
	}
	ret = cgroup_bpf_attach(cg, p, flags, replace);
out:
	if (!IS_ERR(p))
		bpf_prog_put(p);
	bpf_prog_put(replace);
	cgroup_put(cg);
	return ret;
}

static long prog_query(struct task *t, uint8_t *a, uint64_t uattr, uint32_t size)
{
	uint32_t qflags = u32_at(a, 8), max = u32_at(a, 24), flags, count, *ids = NULL;
	uint64_t uids = u64_at(a, 16), uflags = u64_at(a, 32);
	struct cgroup *cg;
	long ret;

	if (u32_at(a, 4) != ATTACH_CGROUP_DEVICE || (qflags & ~F_QUERY_EFFECTIVE))
		return -EINVAL;
	cg = cgroup_of_fd(t, (int)u32_at(a, 0));
	if (IS_ERR(cg))
		return PTR_ERR(cg);
	if (uids && max) {
		ids = calloc(max < 4096 ? max : 4096, sizeof(*ids));
		if (!ids) {
			cgroup_put(cg);
			return -ENOMEM;
		}
		if (max > 4096)
			max = 4096;
	}
	ret = cgroup_bpf_query(cg, qflags & F_QUERY_EFFECTIVE, &flags, ids, ids ? max : 0, &count);
	cgroup_put(cg);
	if (ret == 0 || ret == -ENOSPC) {
		uint32_t n = count < max ? count : max;
		int err = copy_out(t, uattr + 12, &flags, sizeof(flags));

		if (!err)
			err = copy_out(t, uattr + 24, &count, sizeof(count));
		if (!err && ids && n)
			err = copy_out(t, uids, ids, n * sizeof(*ids));
		/* Each program's attach flags, when asked for (not for the effective ones). */
		for (uint32_t i = 0;
		     !err && uflags && ids && !(qflags & F_QUERY_EFFECTIVE) && i < n; i++)
			err = copy_out(t, uflags + i * sizeof(uint32_t), &flags, sizeof(flags));
		if (!err && size >= 64) {
			uint64_t rev = 1;

			err = copy_out(t, uattr + 56, &rev, sizeof(rev));
		}
		if (err)
			ret = err;
	}
	free(ids);
	return ret;
}

static long prog_info(struct task *t, const uint8_t *a, uint64_t uattr)
{
	uint32_t len = u32_at(a, 4), want, ulen;
	uint64_t uinfo = u64_at(a, 8), xlated;
	uint8_t info[INFO_SIZE] = { 0 };
	struct bpf_prog *p;
	uint32_t v;
	int err;

	p = prog_of_fd(t, (int)u32_at(a, 0));
	if (IS_ERR(p))
		return PTR_ERR(p);
	ulen = len < INFO_SIZE ? len : INFO_SIZE;
	if (mm_copy_in(t->mm, info, uinfo, ulen) != (ssize_t)ulen) {
		bpf_prog_put(p);
		return -EFAULT;
	}
	want = u32_at(info, 20);
	xlated = u64_at(info, 32);
	memset(info, 0, sizeof(info));
	memcpy(info + 0, &p->type, 4);
	memcpy(info + 4, &p->id, 4);
	memcpy(info + 8, p->tag, 8);
	v = p->n * (uint32_t)sizeof(*p->insns);
	memcpy(info + 20, &v, 4); /* xlated_prog_len */
	memcpy(info + 40, &p->load_time, 8);
	memcpy(info + 48, &p->uid, 4);
	memcpy(info + 64, p->name, 16);
	v = p->n;
	memcpy(info + 216, &v, 4); /* verified_insns */
	err = 0;
	if (xlated && want) {
		uint32_t n = want < p->n * sizeof(*p->insns) ? want : p->n * sizeof(*p->insns);

		memcpy(info + 32, &xlated, 8);
		err = copy_out(t, xlated, p->insns, n);
	}
	if (!err)
		err = copy_out(t, uinfo, info, ulen);
	if (!err) /* info_len: what was written */
		err = copy_out(t, uattr + 4, &ulen, sizeof(ulen));
	bpf_prog_put(p);
	return err;
}

/* bpf(2): cgroup device programs only (see above); the caller needs CAP_SYS_ADMIN or CAP_BPF. */
long sys_bpf(struct task *t, const struct syscall_args *args)
{
	int cmd = (int)args->a[0];
	uint64_t uattr = args->a[1];
	uint32_t size = (uint32_t)args->a[2];
	uint8_t a[ATTR_MAX] = { 0 };
	struct bpf_prog *p;
	long ret;

	/* Linux's kernel.unprivileged_bpf_disabled (Debian's default): every command. */
	if (!cred_capable(&t->cred, CAP_SYS_ADMIN_) && !cred_capable(&t->cred, CAP_BPF_))
		return -EPERM;
	if (size > 4096)
		return -E2BIG;
	if (mm_copy_in(t->mm, a, uattr, size < ATTR_MAX ? size : ATTR_MAX) !=
	    (ssize_t)(size < ATTR_MAX ? size : ATTR_MAX))
		return -EFAULT;
	switch (cmd) {
	case CMD_PROG_LOAD:
		return prog_load(t, a);
	case CMD_PROG_ATTACH:
		return prog_attach(t, a, true);
	case CMD_PROG_DETACH:
		return prog_attach(t, a, false);
	case CMD_PROG_QUERY:
		return prog_query(t, a, uattr, size);
	case CMD_PROG_GET_NEXT_ID:
		p = bpf_prog_by_id(u32_at(a, 0), true);
		if (!p)
			return -ENOENT;
		ret = copy_out(t, uattr + 4, &p->id, sizeof(p->id));
		bpf_prog_put(p);
		return ret;
	case CMD_PROG_GET_FD_BY_ID:
		if (u32_at(a, 8) & ~(F_RDONLY | F_WRONLY))
			return -EINVAL;
		p = bpf_prog_by_id(u32_at(a, 0), false);
		if (!p)
			return -ENOENT;
		ret = prog_fd(t, p);
		bpf_prog_put(p);
		return ret;
	case CMD_OBJ_GET_INFO_BY_FD:
		return prog_info(t, a, uattr);
	default:
		return -EINVAL;
	}
}
