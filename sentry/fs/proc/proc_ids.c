/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs, per process: ids and namespaces. /proc/PID/{uid_map,gid_map,setgroups} show the
 * process's user namespace's mappings: the sandbox's (kernel.uid_map, linux.uidMappings; none:
 * the identity of an initial user namespace), or those written for a namespace the guest made
 * (sentry/kernel/nsproxy.h has the rules); oom_score_adj, oom_adj and oom_score the OOM
 * killer's view (sentry/kernel/oom.h); ns/ one link per namespace type, "net:[4026531840]" as
 * Linux's nsfs, whose target stat(2) shows with the namespace's inode number on a device of its
 * own: the process's own UTS, IPC and user namespaces (nsproxy.h), the sandbox's (or a pod
 * member's) for the other types. An opened namespace file holds its namespaces (setns, the
 * NS_GET_* ioctls).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/proc/proc_ids.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/mount_user.h"

/* --- uid_map, gid_map, setgroups --- */

static void print_map(FILE *out, const struct idmap *m)
{
	/* Linux's format: three right-aligned columns of width 10. */
	if (!m->n)
		fprintf(out, "%10u %10u %10u\n", 0u, 0u, 4294967295u);
	for (uint32_t i = 0; i < m->n; i++)
		fprintf(out, "%10" PRIu32 " %10" PRIu32 " %10" PRIu32 "\n", m->e[i].inside,
			m->e[i].outside, m->e[i].count);
}

/* The user namespace of n's task (a new reference), or NULL when it is gone. */
static struct user_ns *node_user_ns(struct pseudo_node *n)
{
	struct task *t = pseudo_node_task(n);
	struct nsproxy *ns;
	struct user_ns *u;

	if (!t)
		return NULL;
	ns = task_get_nsproxy(t);
	task_put(t);
	u = ns->user;
	user_ns_get(u);
	nsproxy_put(ns);
	return u;
}

/*
 * The sandbox's mapping for its initial user namespace; a nested one's as written, with the
 * outside ids as its parent sees them (nothing before it is written).
 */
static int gen_map(struct pseudo_node *n, FILE *out, bool gid)
{
	struct user_ns *u = node_user_ns(n);
	struct idmap m;
	bool set;

	if (!u)
		return -ESRCH;
	if (!u->level) {
		print_map(out, gid ? &pseudo_fs_of(n)->k->gid_map : &pseudo_fs_of(n)->k->uid_map);
		user_ns_put(u);
		return 0;
	}
	pthread_mutex_lock(&u->lock);
	set = gid ? u->gid_map_set : u->uid_map_set;
	m = gid ? u->gid_map : u->uid_map;
	pthread_mutex_unlock(&u->lock);
	for (uint32_t i = 0; set && i < m.n; i++) {
		uint32_t o = gid ? user_ns_gid_to(u->parent, m.e[i].outside) :
				   user_ns_uid_to(u->parent, m.e[i].outside);

		fprintf(out, "%10" PRIu32 " %10" PRIu32 " %10" PRIu32 "\n", m.e[i].inside, o,
			m.e[i].count);
	}
	user_ns_put(u);
	return 0;
}

int proc_gen_uid_map(struct pseudo_node *n, FILE *out)
{
	return gen_map(n, out, false);
}

int proc_gen_gid_map(struct pseudo_node *n, FILE *out)
{
	return gen_map(n, out, true);
}

int proc_gen_setgroups(struct pseudo_node *n, FILE *out)
{
	struct user_ns *u = node_user_ns(n);
	bool deny;

	if (!u)
		return -ESRCH;
	/* The sandbox's mappings are set by the runtime with CAP_SETGID, as runc's: "allow". */
	pthread_mutex_lock(&u->lock);
	deny = u->setgroups_deny;
	pthread_mutex_unlock(&u->lock);
	user_ns_put(u);
	fputs(deny ? "deny\n" : "allow\n", out);
	return 0;
}

/* A map is written once, by nsproxy.c's rules; the sandbox's are already written. */
ssize_t proc_write_id_map(struct pseudo_node *n, const char *buf, size_t len)
{
	struct user_ns *u = node_user_ns(n);
	struct task *cur = task_current();
	ssize_t r;

	if (!u)
		return -ESRCH;
	if (!cur)
		r = -EPERM;
	else if (!strcmp(n->ent->name, "setgroups"))
		r = user_ns_write_setgroups(cur, u, buf, len);
	else
		r = user_ns_write_map(cur, u, !strcmp(n->ent->name, "gid_map"), buf, len);
	user_ns_put(u);
	return r;
}

/* --- oom_score_adj, oom_adj, oom_score --- */

/* Linux's OOM_DISABLE and OOM_ADJUST_MAX: the legacy oom_adj range. */
#define OOM_DISABLE (-17)
#define OOM_ADJUST_MAX 15

/* The process of n's task, referenced, or NULL when it is gone. */
static struct thread_group *node_tg(struct pseudo_node *n)
{
	struct task *t = pseudo_node_task(n);
	struct thread_group *tg;

	if (!t)
		return NULL;
	tg = t->tg;
	tg_get(tg);
	task_put(t);
	return tg;
}

int proc_gen_oom_score_adj(struct pseudo_node *n, FILE *out)
{
	struct thread_group *tg = node_tg(n);

	if (!tg)
		return -ESRCH;
	fprintf(out, "%d\n", __atomic_load_n(&tg->oom_score_adj, __ATOMIC_RELAXED));
	tg_put(tg);
	return 0;
}

int proc_gen_oom_adj(struct pseudo_node *n, FILE *out)
{
	struct thread_group *tg = node_tg(n);
	int adj, v;

	if (!tg)
		return -ESRCH;
	adj = __atomic_load_n(&tg->oom_score_adj, __ATOMIC_RELAXED);
	tg_put(tg);
	/* Linux's oom_adj_read. */
	v = adj == OOM_SCORE_ADJ_MAX ? OOM_ADJUST_MAX : adj * -OOM_DISABLE / OOM_SCORE_ADJ_MAX;
	fprintf(out, "%d\n", v);
	return 0;
}

int proc_gen_oom_score(struct pseudo_node *n, FILE *out)
{
	struct task *t = pseudo_node_task(n);
	uint64_t rss = 0;
	struct mm *mm;
	int adj;

	if (!t)
		return -ESRCH;
	adj = __atomic_load_n(&t->tg->oom_score_adj, __ATOMIC_RELAXED);
	mm = task_get_mm(t);
	if (mm) {
		rss = mm_rss_pages(mm);
		mm_put(mm);
	}
	fprintf(out, "%lu\n", oom_score(rss, adj, oom_total_pages(t->k)));
	task_put(t);
	return 0;
}

/*
 * Parses a write to oom_score_adj or oom_adj as Linux's kstrtoint(strstrip(buf), 0): at most 12
 * bytes are looked at (PROC_NUMBUF - 1). Returns 0 with *v, or -EINVAL.
 */
static int parse_adj(const char *buf, size_t len, int *v)
{
	char tmp[13], *s, *end;
	size_t l = MIN(len, sizeof(tmp) - 1);
	long x;

	memcpy(tmp, buf, l);
	tmp[l] = '\0';
	s = tmp;
	while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || (end[-1] >= '\t' && end[-1] <= '\r')))
		*--end = '\0';
	if (!*s)
		return -EINVAL;
	errno = 0;
	x = strtol(s, &end, 0);
	if (errno || *end || x < INT32_MIN || x > INT32_MAX)
		return -EINVAL;
	*v = (int)x;
	return 0;
}

static ssize_t write_adj(struct pseudo_node *n, const char *buf, size_t len, bool legacy)
{
	struct thread_group *tg;
	int v, err;

	err = parse_adj(buf, len, &v);
	if (err < 0)
		return err;
	if (legacy) {
		if (v < OOM_DISABLE || v > OOM_ADJUST_MAX)
			return -EINVAL;
		/* Linux's oom_adj_write: the legacy scale mapped onto oom_score_adj's. */
		v = v == OOM_ADJUST_MAX ? OOM_SCORE_ADJ_MAX : v * OOM_SCORE_ADJ_MAX / -OOM_DISABLE;
	} else if (v < OOM_SCORE_ADJ_MIN || v > OOM_SCORE_ADJ_MAX) {
		return -EINVAL;
	}
	tg = node_tg(n);
	if (!tg)
		return -ESRCH;
	err = oom_set_score_adj(task_current(), tg, v, legacy);
	tg_put(tg);
	return err < 0 ? err : (ssize_t)len;
}

ssize_t proc_write_oom_score_adj(struct pseudo_node *n, const char *buf, size_t len)
{
	return write_adj(n, buf, len, false);
}

ssize_t proc_write_oom_adj(struct pseudo_node *n, const char *buf, size_t len)
{
	return write_adj(n, buf, len, true);
}

/* --- ns/ --- */

/* The namespace types, in the order of their inode numbers (ns_ino_base + index). */
static const char *const ns_types[PROC_NS_NTYPES] = {
	"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts",
};

uint32_t proc_ns_ino(struct kernel *k, int type)
{
	uint32_t base = __atomic_load_n(&k->ns_ino_base, __ATOMIC_ACQUIRE);

	if (!base) {
		uint32_t r = 0, want;

		/*
		 * Random per sandbox, in Linux's range of namespace inode numbers (from
		 * 0xF0000000, PROC_DYNAMIC_FIRST), 16 apart so that the types never meet.
		 */
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint32_t)(uintptr_t)k ^ (uint32_t)k->boot_ns;
		want = 0xF0000000u + (r & 0xFFFFFu) * 16u;
		/* On failure another thread set it first, and base holds its value. */
		if (__atomic_compare_exchange_n(&k->ns_ino_base, &base, want, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			base = want;
	}
	return base + (uint32_t)type;
}

#define NS_TYPE_CGROUP 0
#define NS_TYPE_IPC 1
#define NS_TYPE_NET 3
#define NS_TYPE_PID 4
#define NS_TYPE_USER 6
#define NS_TYPE_UTS 7

/* The identity (nsproxy.h) of ns's namespace of type (uts, ipc, net, cgroup or user). */
static uint32_t nsproxy_type_id(struct nsproxy *ns, int type)
{
	return type == NS_TYPE_UTS    ? ns->uts->id :
	       type == NS_TYPE_IPC    ? ns->ipc->id :
	       type == NS_TYPE_NET    ? ns->net->id :
	       type == NS_TYPE_CGROUP ? ns->cgroup->id :
					ns->user->id;
}

/* Whether namespaces of type are nsproxy.c's (numbered by their id). */
static bool nsproxy_type(int type)
{
	return type == NS_TYPE_UTS || type == NS_TYPE_IPC || type == NS_TYPE_USER ||
	       type == NS_TYPE_NET || type == NS_TYPE_CGROUP;
}

/*
 * The inode number of a namespace the guest made (id, nsproxy.h; 0: the sandbox's, ino), past
 * the sandbox's base and the pod members' numbers, in the range.
 */
static uint32_t ns_ino_of(uint32_t ino, uint32_t id)
{
	if (!id)
		return ino;
	return 0xF0000000u + ((((ino - 0xF0000000u) >> 4) + 0x10000u + id) & 0xFFFFFu) * 16u +
	       ((ino - 0xF0000000u) & 15u);
}

/* The ids of pid_for_children's link and target (its type is pid's). */
#define NS_PIDC_TARGET_ID (PROC_IDS_ENT_ID + 38)
#define NS_PIDC_LINK_ID (PROC_IDS_ENT_ID + 44)

static bool ns_is_for_children(const struct pseudo_node *n)
{
	return n->ent->id == NS_PIDC_TARGET_ID || n->ent->id == NS_PIDC_LINK_ID;
}

/*
 * The namespace of type that n's process is in: a pod member (sentry/control/container.c) has a
 * mount namespace of its own, and a pid namespace of its own with --private-pids; every other
 * type is the sandbox's. Numbered past the sandbox's base by the member's number, in the range.
 */
#pragma weak pid_container_ns
#pragma weak vfs_mnt_ns_ino
static uint32_t node_ns_ino(struct pseudo_node *n, int type)
{
	struct kernel *k = pseudo_fs_of(n)->k;
	uint32_t ino = proc_ns_ino(k, type), c = 0;
	struct task *t;

	if (nsproxy_type(type)) {
		struct nsproxy *ns;

		t = pseudo_node_task(n);
		if (!t)
			return ino;
		ns = task_get_nsproxy(t);
		task_put(t);
		c = nsproxy_type_id(ns, type);
		nsproxy_put(ns);
		return ns_ino_of(ino, c);
	}
	if (strcmp(ns_types[type], "mnt") && strcmp(ns_types[type], "pid"))
		return ino;
	t = pseudo_node_task(n);
	/* A pid namespace the guest made: the process's (pid), or its pid_for_children. */
	if (t && type == NS_TYPE_PID) {
		struct nsproxy *ns = task_get_nsproxy(t);
		uint32_t id = ns_is_for_children(n) ? ns->pid->id : task_active_pid_ns(t)->id;

		nsproxy_put(ns);
		if (id) {
			task_put(t);
			return ns_ino_of(ino, id);
		}
	}
	/* A mount namespace the guest made (unshare/clone CLONE_NEWNS): its own number. */
	if (t && !strcmp(ns_types[type], "mnt") && vfs_mnt_ns_ino) {
		uint64_t m = vfs_mnt_ns_ino(t);

		if (m) {
			task_put(t);
			return (uint32_t)m;
		}
	}
	if (t && t->tg && t->tg->container > 0)
		c = !strcmp(ns_types[type], "mnt") ? (uint32_t)t->tg->container :
		    pid_container_ns		   ? (uint32_t)pid_container_ns(t->tg->container) :
						     0;
	if (t)
		task_put(t);
	if (!c)
		return ino;
	return 0xF0000000u + ((((ino - 0xF0000000u) >> 4) + c) & 0xFFFFFu) * 16u + (uint32_t)type;
}

/* Linux's proc_ns_get_link and readlink: only for a caller that may ptrace-read the process. */
static int ns_may_see(struct pseudo_node *n)
{
	struct task *t = pseudo_node_task(n), *cur = task_current();
	int err;

	if (!t)
		return -ENOENT;
	err = cur ? ptrace_may_access(cur, t) : 0;
	task_put(t);
	return err == -EPERM ? -EACCES : err;
}

static ssize_t ns_readlink(struct pseudo_node *n, int type, char *buf, size_t len)
{
	char s[64];
	int err = ns_may_see(n);

	if (err < 0)
		return err;
	snprintf(s, sizeof(s), "%s:[%" PRIu32 "]", ns_types[type], node_ns_ino(n, type));
	return pseudo_copy_link(s, buf, len);
}

/* A namespace node of NS_GET_USERNS/NS_GET_PARENT: user namespace id, in the node's fd field. */
#define NS_NODE_FD(id) (-2 - (int)(id))
#define NS_NODE_ID(fd) ((uint32_t)(-2 - (fd)))

/* The device of every namespace node (Linux's nsfs is one superblock). */
static uint64_t nsfs_dev_value;
static void nsfs_dev_init(void)
{
	nsfs_dev_value = vfs_alloc_anon_dev();
}

static int ns_target_getattr(struct pseudo_node *n, int type, struct vfs_attr *attr)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, nsfs_dev_init);
	/* As stat -L of a Linux ns link: an empty read-only regular file of root's. */
	attr->dev = nsfs_dev_value;
	attr->ino = n->fd <= NS_NODE_FD(0) ?
			    ns_ino_of(proc_ns_ino(pseudo_fs_of(n)->k, type), NS_NODE_ID(n->fd)) :
			    node_ns_ino(n, type);
	attr->mode = S_IFREG | 0444;
	attr->nlink = 1;
	attr->uid = attr->gid = 0;
	attr->size = 0;
	attr->blocks = 0;
	attr->blksize = 4096;
	return 0;
}

/* An opened namespace: setns(2) is not supported (issue 17), and it cannot be read. */
static ssize_t ns_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	(void)f, (void)iov, (void)iovcnt, (void)pos;
	return -EINVAL;
}

/* nsfs's ioctls (linux/nsfs.h). */
#define NS_GET_USERNS 0xb701
#define NS_GET_PARENT 0xb702
#define NS_GET_NSTYPE 0xb703
#define NS_GET_OWNER_UID 0xb704

/* CLONE_NEW* of each type, in ns_types' order. */
static const long ns_clone_flags[PROC_NS_NTYPES] = {
	0x02000000, /* CLONE_NEWCGROUP */
	0x08000000, /* CLONE_NEWIPC */
	0x00020000, /* CLONE_NEWNS */
	0x40000000, /* CLONE_NEWNET */
	0x20000000, /* CLONE_NEWPID */
	0x00000080, /* CLONE_NEWTIME */
	0x10000000, /* CLONE_NEWUSER */
	0x04000000, /* CLONE_NEWUTS */
};

static const struct pseudo_ent ns_user_target;
static int ns_target_type(struct file *f);
static struct file *ns_open_node(struct pseudo_node *dir, const struct pseudo_ent *ent,
				 const char *name, int32_t pid, int32_t tid, int fd, int flags);

/*
 * nsfs's ioctls, as lsns and nsenter use them: the type, the owner's uid, and the owning user
 * namespace (the sandbox's: every namespace the guest sees is owned by it). The sandbox's user
 * and pid namespaces are the first the guest can see: their parent and the user namespace's
 * owner are EPERM, as for a namespace outside the caller's.
 */
/*
 * A new file for user namespace u (a user-type node beside f's), for NS_GET_USERNS and
 * NS_GET_PARENT, installed in t's table: the fd, or -EPERM unless u is t's user namespace or
 * a descendant of it (Linux's ns_get_owner).
 */
static long ns_install_user(struct file *f, struct task *t, struct user_ns *u)
{
	struct nsproxy *cur = task_get_nsproxy(t), *base = f->priv, *ns;
	struct pseudo_node *n = pseudo_node_of(f->node);
	struct user_ns *p = u;
	struct file *uf;
	int fd;

	while (p && p != cur->user)
		p = p->parent;
	nsproxy_put(cur);
	if (!p)
		return -EPERM;
	if (!n->base.parent)
		return -ENOENT;
	ns = nsproxy_with_user(base, u);
	if (!ns)
		return -ENOMEM;
	uf = ns_open_node(pseudo_node_of(n->base.parent), &ns_user_target, "user", n->pid, n->tid,
			  NS_NODE_FD(u->id), O_RDONLY);
	if (IS_ERR(uf)) {
		nsproxy_put(ns);
		return PTR_ERR(uf);
	}
	/* The file is the namespace asked for, not the task's. */
	nsproxy_put(uf->priv);
	uf->priv = ns;
	fd = fdtable_install(t->fdt, uf, 0, true, task_nofile_limit(t));
	file_put(uf);
	return fd;
}

/*
 * nsfs's ioctls, as lsns and nsenter use them: the type; a user namespace's owner uid (its
 * creator's euid as the caller sees it); the owning user namespace of a namespace (a UTS or IPC
 * namespace's creator's, the sandbox's for the other types) and a user namespace's parent, -EPERM
 * when outside the caller's user namespace (the sandbox's are the first the guest can see). The
 * pid namespace has no parent the guest can see (EPERM).
 */
static long ns_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	int type = ns_target_type(f);
	struct nsproxy *ns = f->priv;
	uint32_t uid = 0;
	struct mm *mm;
	ssize_t w;

	if (type < 0 || !ns)
		return -ENOTTY;
	switch (cmd) {
	case NS_GET_NSTYPE:
		return ns_clone_flags[type];
	case NS_GET_OWNER_UID:
		if (type != NS_TYPE_USER)
			return -EINVAL;
		if (ns->user->level)
			uid = task_uid_to(t, ns->user->owner);
		mm = task_get_mm(t);
		if (!mm)
			return -EFAULT;
		w = mm_copy_out(mm, arg, &uid, sizeof(uid));
		mm_put(mm);
		return w == (ssize_t)sizeof(uid) ? 0 : -EFAULT;
	case NS_GET_PARENT:
		if (type != NS_TYPE_PID && type != NS_TYPE_USER)
			return -EINVAL;
		if (type == NS_TYPE_PID || !ns->user->parent)
			return -EPERM;
		return ns_install_user(f, t, ns->user->parent);
	case NS_GET_USERNS:
		if (type == NS_TYPE_USER)
			return ns->user->parent ? ns_install_user(f, t, ns->user->parent) : -EPERM;
		return ns_install_user(f, t,
				       type == NS_TYPE_UTS    ? ns->uts->owner :
				       type == NS_TYPE_IPC    ? ns->ipc->owner :
				       type == NS_TYPE_NET    ? ns->net->owner :
				       type == NS_TYPE_PID    ? ns->pid->owner :
				       type == NS_TYPE_CGROUP ? ns->cgroup->owner :
								nsproxy_initial(t->k)->user);
	default:
		return -ENOTTY;
	}
}

/* The namespaces of the task at open time (setns takes them even once it is gone). */
static void ns_release(struct file *f)
{
	nsproxy_put(f->priv);
}

/* The inode number of the namespace of type that opened file f is (its own, for uts/ipc/user). */
static uint32_t ns_file_ino(struct file *f, int type)
{
	struct pseudo_node *n = pseudo_node_of(f->node);

	if (f->priv && nsproxy_type(type))
		return ns_ino_of(proc_ns_ino(pseudo_fs_of(n)->k, type),
				 nsproxy_type_id(f->priv, type));
	return node_ns_ino(n, type);
}

static int ns_file_getattr(struct file *f, struct vfs_attr *attr)
{
	int type = ns_target_type(f), err = vfs_node_getattr(f->node, attr);

	if (!err && type >= 0)
		attr->ino = ns_file_ino(f, type);
	return err;
}

static const struct file_ops ns_fops = {
	.read = ns_read,
	.ioctl = ns_ioctl,
	.release = ns_release,
	.getattr = ns_file_getattr,
};

static struct file *ns_target_open(struct pseudo_node *n, int flags)
{
	struct task *t = pseudo_node_task(n);
	struct nsproxy *ns;
	struct file *f;

	if ((flags & O_ACCMODE) != O_RDONLY) {
		task_put(t);
		return ERR_PTR(-EACCES);
	}
	if (!t)
		return ERR_PTR(-ENOENT);
	/* /proc/PID/ns/pid is the process's own pid namespace, not its pid_for_children. */
	ns = ns_is_for_children(n) ? task_get_nsproxy(t) : task_get_nsproxy_active(t);
	if (!ns) {
		task_put(t);
		return ERR_PTR(-ENOMEM);
	}
	task_put(t);
	f = file_alloc(&ns_fops, flags, ns);
	if (!f)
		nsproxy_put(ns);
	return f ? f : ERR_PTR(-ENOMEM);
}

/*
 * An open file of a new node of ent under dir, on procfs's mount (as vfs_open makes them). fd
 * is -1, or NS_NODE_FD(id) for a node that is user namespace id rather than pid's.
 */
static struct file *ns_open_node(struct pseudo_node *dir, const struct pseudo_ent *ent,
				 const char *name, int32_t pid, int32_t tid, int fd, int flags)
{
	struct pseudo_fs *fs = pseudo_fs_of(dir);
	struct vfs_node *node;
	struct file *f;

	if (!fs->mnt)
		return ERR_PTR(-ENOENT);
	node = pseudo_node_new_at(dir, ent, name, pid, tid, fd);
	if (IS_ERR(node))
		return ERR_PTR(PTR_ERR(node));
	f = ns_target_open(pseudo_node_of(node), flags);
	if (IS_ERR(f)) {
		vfs_node_put(node);
		return f;
	}
	f->mnt = fs->mnt;
	vfs_mount_get(f->mnt);
	f->node = node; /* takes the node's reference */
	return f;
}

static int ns_get_link(struct pseudo_node *n, const struct pseudo_ent *target, struct vfs_path *out)
{
	struct pseudo_fs *fs = pseudo_fs_of(n);
	struct vfs_node *parent, *r;
	int err = ns_may_see(n);

	if (err < 0)
		return err;
	if (!fs->mnt)
		return -ENOENT;
	/* A node of ours beside the link, which getattr shows as the namespace. */
	parent = vfs_node_get_parent(&n->base);
	if (!parent)
		return -ENOENT;
	r = pseudo_node_new_at(pseudo_node_of(parent), target, n->base.name, n->pid, n->tid, n->fd);
	vfs_node_put(parent);
	if (IS_ERR(r))
		return (int)PTR_ERR(r);
	out->node = r;
	out->mnt = fs->mnt;
	vfs_mount_get(out->mnt);
	return 0;
}

/*
 * One link and one hidden target entry per type (pid_for_children and time_for_children show
 * the pid and time namespaces: the guest cannot make new ones).
 */
#define NS_FUNCS(nm, type)                                                                \
	static int ns_##nm##_target_getattr(struct pseudo_node *n, struct vfs_attr *attr) \
	{                                                                                 \
		return ns_target_getattr(n, type, attr);                                  \
	}                                                                                 \
	static const struct pseudo_ent ns_##nm##_target = {                               \
		.name = #nm,                                                              \
		.mode = S_IFREG | 0444,                                                   \
		.open = ns_target_open,                                                   \
		.getattr = ns_##nm##_target_getattr,                                      \
		.id = PROC_IDS_ENT_ID + 30 + type,                                        \
	};                                                                                \
	static ssize_t ns_##nm##_readlink(struct pseudo_node *n, char *buf, size_t len)   \
	{                                                                                 \
		return ns_readlink(n, type, buf, len);                                    \
	}                                                                                 \
	static int ns_##nm##_get_link(struct pseudo_node *n, struct vfs_path *out)        \
	{                                                                                 \
		return ns_get_link(n, &ns_##nm##_target, out);                            \
	}

NS_FUNCS(cgroup, 0)
NS_FUNCS(ipc, 1)
NS_FUNCS(mnt, 2)
NS_FUNCS(net, 3)
NS_FUNCS(pid, 4)

/* pid_for_children: pid's type, with ids of its own (ns_is_for_children). */
static const struct pseudo_ent ns_pidc_target = {
	.name = "pid_for_children",
	.mode = S_IFREG | 0444,
	.open = ns_target_open,
	.getattr = ns_pid_target_getattr,
	.id = NS_PIDC_TARGET_ID,
};

static ssize_t ns_pidc_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	return ns_readlink(n, NS_TYPE_PID, buf, len);
}

static int ns_pidc_get_link(struct pseudo_node *n, struct vfs_path *out)
{
	return ns_get_link(n, &ns_pidc_target, out);
}
NS_FUNCS(time, 5)
NS_FUNCS(user, 6)
NS_FUNCS(uts, 7)

#define NS_LNK(nm, fn, id_)                                                         \
	{                                                                           \
		.name = nm, .mode = S_IFLNK | 0777, .readlink = ns_##fn##_readlink, \
		.get_link = ns_##fn##_get_link, .id = PROC_IDS_ENT_ID + 40 + (id_)  \
	}

/* Linux's order of /proc/PID/ns. */
const struct pseudo_ent proc_ns_ents[] = {
	NS_LNK("net", net, 0),
	NS_LNK("uts", uts, 1),
	NS_LNK("ipc", ipc, 2),
	NS_LNK("pid", pid, 3),
	NS_LNK("pid_for_children", pidc, 4),
	NS_LNK("user", user, 5),
	NS_LNK("mnt", mnt, 6),
	NS_LNK("cgroup", cgroup, 7),
	NS_LNK("time", time, 8),
	NS_LNK("time_for_children", time, 9),
	{ 0 },
};

static const struct pseudo_ent *const ns_targets[PROC_NS_NTYPES] = {
	&ns_cgroup_target, &ns_ipc_target,  &ns_mnt_target,  &ns_net_target,
	&ns_pid_target,	   &ns_time_target, &ns_user_target, &ns_uts_target,
};

/* The type of the namespace f is open on, or -1 for another file. */
static int ns_target_type(struct file *f)
{
	struct pseudo_node *n;

	if (!f->node || f->node->ops != &pseudo_node_ops)
		return -1;
	n = pseudo_node_of(f->node);
	for (int i = 0; i < PROC_NS_NTYPES; i++)
		if (n->ent == ns_targets[i])
			return i;
	if (n->ent == &ns_pidc_target)
		return NS_TYPE_PID;
	return -1;
}

int proc_ns_file_name(struct file *f, char *buf, size_t len)
{
	int type = ns_target_type(f), n;

	if (type < 0)
		return -ENOENT;
	n = snprintf(buf, len, "%s:[%" PRIu32 "]", ns_types[type], ns_file_ino(f, type));
	return n < (int)len ? n : -ERANGE;
}

int proc_ns_file_get(struct file *f, struct nsproxy **ns)
{
	int type = f->ops == &ns_fops ? ns_target_type(f) : -1;

	if (type < 0 || !f->priv)
		return -EINVAL;
	nsproxy_get(f->priv);
	*ns = f->priv;
	return (int)ns_clone_flags[type];
}

struct task *proc_ns_file_task(struct file *f)
{
	if (f->ops != &ns_fops || !f->node)
		return NULL;
	return pseudo_node_task(pseudo_node_of(f->node));
}
