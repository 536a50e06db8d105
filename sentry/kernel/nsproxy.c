/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A task's UTS, IPC, network and user namespaces (nsproxy.h has the model). References: a task holds one
 * on its nsproxy (t->ns, NULL for the initial set); an nsproxy one on each namespace; a UTS,
 * IPC or network namespace one on its owning user namespace; a user namespace one on its parent. The
 * initial set and its namespaces are never freed (the kernel's).
 *
 * Locks: t->res_lock guards t->ns against another task's read (task_get_nsproxy); a user
 * namespace's lock its maps; a UTS namespace's lock its names. None is held while taking
 * another, except that sysctl.c takes the UTS lock inside its table lock.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/ipc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"

#define CLONE_NEWUTS_ 0x04000000
#define CLONE_NEWIPC_ 0x08000000
#define CLONE_NEWUSER_ 0x10000000
#define CLONE_NEWNET_ 0x40000000
#define CLONE_NEWPID_ 0x20000000
#define CLONE_NEWCGROUP_ 0x02000000
#define CAP_ALL ((1ULL << (CAP_LAST_CAP + 1)) - 1)

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_id = 1; /* atomic: identities of the namespaces the guest makes */

struct net_ns net_ns_initial = {
	.ref = { 1 },
	.lo_up = true,
	.lo_v4 = true,
};

static uint32_t new_id(void)
{
	return __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
}

struct nsproxy *nsproxy_initial(struct kernel *k)
{
	struct nsproxy *ns = __atomic_load_n(&k->init_ns, __ATOMIC_ACQUIRE);
	struct user_ns *user;
	struct uts_ns *uts;
	struct ipc_ns *ipc;
	struct pid_ns *pid;
	struct cgroup_ns *cg;

	if (ns)
		return ns;
	pthread_mutex_lock(&init_lock);
	ns = k->init_ns;
	if (ns)
		goto out;
	ns = calloc(1, sizeof(*ns));
	user = calloc(1, sizeof(*user));
	uts = calloc(1, sizeof(*uts));
	ipc = calloc(1, sizeof(*ipc));
	pid = calloc(1, sizeof(*pid));
	cg = calloc(1, sizeof(*cg));
	if (!ns || !user || !uts || !ipc || !pid || !cg)
		abort(); /* start-up: the sandbox cannot run without it */
	pthread_mutex_init(&user->lock, NULL);
	user->uid_map_set = user->gid_map_set = true; /* the identity */
	refcount_init(&uts->ref, 1);
	pthread_mutex_init(&uts->own_lock, NULL);
	uts->owner = user;
	uts->hostname = k->hostname;
	uts->domainname = k->domainname;
	uts->lock = &k->lock;
	refcount_init(&ipc->ref, 1);
	ipc->owner = user;
	refcount_init(&pid->ref, 1);
	pid->owner = user;
	refcount_init(&ns->ref, 1);
	ns->user = user;
	ns->uts = uts;
	ns->ipc = ipc;
	net_ns_initial.owner = user;
	ns->net = &net_ns_initial;
	net_ns_get(ns->net);
	ns->pid = pid;
	refcount_init(&cg->ref, 1);
	cg->owner = user; /* root NULL: the hierarchy's */
	ns->cgroup = cg;
	/* The set, the UTS, IPC, network, pid and cgroup namespaces each hold their owner, and
	 * one more keeps it for good (the initial set is never freed). */
	refcount_init(&user->ref, 7);
	__atomic_store_n(&k->init_ns, ns, __ATOMIC_RELEASE);
	nsproxy_install_sysctl();
out:
	pthread_mutex_unlock(&init_lock);
	return ns;
}

struct nsproxy *task_nsproxy(struct task *t)
{
	return t->ns ? t->ns : nsproxy_initial(t->k);
}

struct nsproxy *task_get_nsproxy(struct task *t)
{
	struct nsproxy *ns;

	pthread_mutex_lock(&t->res_lock);
	ns = t->ns ? t->ns : nsproxy_initial(t->k);
	nsproxy_get(ns);
	pthread_mutex_unlock(&t->res_lock);
	return ns;
}

/* Replaces t's set by ns (taking its reference); the old one is put. */
static void task_set_nsproxy(struct task *t, struct nsproxy *ns)
{
	struct nsproxy *old;

	pthread_mutex_lock(&t->res_lock);
	old = t->ns;
	t->ns = ns;
	pthread_mutex_unlock(&t->res_lock);
	if (old)
		nsproxy_put(old);
}

void user_ns_get(struct user_ns *u)
{
	refcount_inc(&u->ref);
}

void user_ns_put(struct user_ns *u)
{
	while (u && refcount_dec(&u->ref)) {
		struct user_ns *parent = u->parent;

		pthread_mutex_destroy(&u->lock);
		free(u);
		u = parent;
	}
}

void uts_ns_get(struct uts_ns *u)
{
	refcount_inc(&u->ref);
}

void uts_ns_put(struct uts_ns *u)
{
	if (refcount_dec(&u->ref)) {
		user_ns_put(u->owner);
		pthread_mutex_destroy(&u->own_lock);
		free(u);
	}
}

void ipc_ns_get(struct ipc_ns *i)
{
	refcount_inc(&i->ref);
}

/* ipc_*.c (weak: procfs's unit tests link this file without them). */
#pragma weak ipc_msg_ns_exit
#pragma weak ipc_sem_ns_exit
#pragma weak ipc_shm_ns_exit

void ipc_ns_put(struct ipc_ns *i)
{
	if (refcount_dec(&i->ref)) {
		/* Its SysV objects go with it (a namespace the guest made: id != 0). */
		if (i->id && ipc_msg_ns_exit) {
			ipc_msg_ns_exit(i->id);
			ipc_sem_ns_exit(i->id);
			ipc_shm_ns_exit(i->id);
		}
		user_ns_put(i->owner);
		free(i);
	}
}

void net_ns_get(struct net_ns *n)
{
	refcount_inc(&n->ref);
}

/* sentry/net/link.c (weak: procfs's unit tests link this file without it). */
#pragma weak net_ns_exit

void net_ns_put(struct net_ns *n)
{
	/* The initial one keeps its first reference: never freed. */
	if (n && refcount_dec(&n->ref)) {
		if (net_ns_exit)
			net_ns_exit(n->id);
		user_ns_put(n->owner);
		free(n);
	}
}

void pid_ns_get(struct pid_ns *p)
{
	refcount_inc(&p->ref);
}

void pid_ns_put(struct pid_ns *p)
{
	while (p && refcount_dec(&p->ref)) {
		struct pid_ns *parent = p->parent;

		user_ns_put(p->owner);
		free(p);
		p = parent;
	}
}

/* sentry/fs/cgroup (weak: procfs's unit tests link this file without it; roots stay NULL). */
#pragma weak cgroup_get
#pragma weak cgroup_put
#pragma weak cgroup_tg_get

void cgroup_ns_get(struct cgroup_ns *c)
{
	refcount_inc(&c->ref);
}

void cgroup_ns_put(struct cgroup_ns *c)
{
	if (c && refcount_dec(&c->ref)) {
		if (c->root && cgroup_put)
			cgroup_put(c->root);
		user_ns_put(c->owner);
		free(c);
	}
}

struct pid_ns *task_active_pid_ns(struct task *t)
{
	return t->tg && t->tg->pidns ? t->tg->pidns : nsproxy_initial(t->k)->pid;
}

struct nsproxy *task_get_nsproxy_active(struct task *t)
{
	struct nsproxy *ns = task_get_nsproxy(t), *own;

	if (ns->pid == task_active_pid_ns(t))
		return ns;
	own = nsproxy_with_user(ns, ns->user);
	if (own) {
		pid_ns_put(own->pid);
		own->pid = task_active_pid_ns(t);
		pid_ns_get(own->pid);
	}
	nsproxy_put(ns);
	return own;
}

void nsproxy_get(struct nsproxy *ns)
{
	refcount_inc(&ns->ref);
}

void nsproxy_put(struct nsproxy *ns)
{
	if (ns && refcount_dec(&ns->ref)) {
		uts_ns_put(ns->uts);
		ipc_ns_put(ns->ipc);
		net_ns_put(ns->net);
		pid_ns_put(ns->pid);
		cgroup_ns_put(ns->cgroup);
		user_ns_put(ns->user);
		free(ns);
	}
}

struct nsproxy *nsproxy_with_user(struct nsproxy *base, struct user_ns *u)
{
	struct nsproxy *ns = calloc(1, sizeof(*ns));

	if (!ns)
		return NULL;
	refcount_init(&ns->ref, 1);
	ns->user = u;
	ns->uts = base->uts;
	ns->ipc = base->ipc;
	ns->net = base->net;
	ns->pid = base->pid;
	ns->cgroup = base->cgroup;
	cgroup_ns_get(ns->cgroup);
	user_ns_get(u);
	uts_ns_get(ns->uts);
	ipc_ns_get(ns->ipc);
	net_ns_get(ns->net);
	pid_ns_get(ns->pid);
	return ns;
}

/* --- capabilities --- */

bool nsproxy_ns_capable(const struct cred *c, struct user_ns *cur, struct user_ns *ns, int cap)
{
	/* Linux's cap_capable: walk up from the target namespace to the caller's. */
	for (;;) {
		if (ns == cur)
			return cap >= 0 && cap <= CAP_LAST_CAP &&
			       (c->cap_effective & (1ULL << cap));
		if (ns->level <= cur->level)
			return false;
		/* The owner of a child of the caller's namespace has every capability in it. */
		if (ns->parent == cur && ns->owner == c->euid)
			return true;
		ns = ns->parent;
	}
}

bool task_ns_capable(struct task *t, struct user_ns *ns, int cap)
{
	return nsproxy_ns_capable(&t->cred, task_nsproxy(t)->user, ns, cap);
}

/* --- ids --- */

static bool id_from(struct user_ns *u, bool gid, uint32_t id, uint32_t *kid)
{
	return user_ns_id_from(u, gid, id, kid);
}

/* --- making namespaces --- */

static struct user_ns *user_ns_new(struct user_ns *parent, const struct cred *c)
{
	struct user_ns *u;

	/* Linux 6.x's create_user_ns: a parent past level 32 is ENOSPC (older kernels: EUSERS). */
	if (parent->level > USER_NS_MAX_LEVEL)
		return ERR_PTR(-ENOSPC);
	/* Linux's create_user_ns: the creator's euid and egid must be mapped where it is. */
	if (!user_ns_kid_mapped(parent, false, c->euid) ||
	    !user_ns_kid_mapped(parent, true, c->egid))
		return ERR_PTR(-EPERM);
	u = calloc(1, sizeof(*u));
	if (!u)
		return ERR_PTR(-ENOMEM);
	refcount_init(&u->ref, 1);
	pthread_mutex_init(&u->lock, NULL);
	u->id = new_id();
	user_ns_get(parent);
	u->parent = parent;
	u->level = parent->level + 1;
	u->owner = c->euid;
	u->owner_gid = c->egid;
	pthread_mutex_lock(&parent->lock);
	u->setgroups_deny = parent->setgroups_deny;
	pthread_mutex_unlock(&parent->lock);
	return u;
}

static struct uts_ns *uts_ns_new(struct uts_ns *from, struct user_ns *owner)
{
	struct uts_ns *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	refcount_init(&u->ref, 1);
	pthread_mutex_init(&u->own_lock, NULL);
	u->id = new_id();
	user_ns_get(owner);
	u->owner = owner;
	u->hostname = u->own_host;
	u->domainname = u->own_dom;
	u->lock = &u->own_lock;
	/* A new UTS namespace starts with a copy of the names of the one it came from. */
	pthread_mutex_lock(from->lock);
	snprintf(u->own_host, sizeof(u->own_host), "%s", from->hostname);
	snprintf(u->own_dom, sizeof(u->own_dom), "%s", from->domainname);
	pthread_mutex_unlock(from->lock);
	return u;
}

static struct ipc_ns *ipc_ns_new(struct user_ns *owner)
{
	struct ipc_ns *i = calloc(1, sizeof(*i));

	if (!i)
		return NULL;
	refcount_init(&i->ref, 1);
	i->id = new_id();
	user_ns_get(owner);
	i->owner = owner;
	return i;
}

/* A new network namespace: lo down, no address (Linux's loopback_net_init). */
static struct net_ns *net_ns_new(struct user_ns *owner)
{
	struct net_ns *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	refcount_init(&n->ref, 1);
	n->id = new_id();
	user_ns_get(owner);
	n->owner = owner;
	return n;
}

static struct pid_ns *pid_ns_new(struct pid_ns *parent, struct user_ns *owner)
{
	struct pid_ns *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	refcount_init(&n->ref, 1);
	n->id = new_id();
	pid_ns_get(parent);
	n->parent = parent;
	n->level = parent->level + 1;
	user_ns_get(owner);
	n->owner = owner;
	return n;
}

/* A new cgroup namespace rooted at the cgroup of p's process (Linux's copy_cgroup_ns). */
static struct cgroup_ns *cgroup_ns_new(struct task *p, struct user_ns *owner)
{
	struct cgroup_ns *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	refcount_init(&c->ref, 1);
	c->id = new_id();
	user_ns_get(owner);
	c->owner = owner;
	if (cgroup_tg_get && p->tg)
		c->root = cgroup_tg_get(p->k, p->tg);
	return c;
}

struct nsproxy *nsproxy_copy(struct task *p, uint64_t flags, struct cred *cred)
{
	struct nsproxy *old = task_nsproxy(p), *ns;
	struct user_ns *user = old->user;

	flags &= NSPROXY_CLONE_FLAGS;
	if (!flags)
		return NULL;
	/* Linux's copy_pid_ns: from the active namespace only, at most 32 deep. */
	if (flags & CLONE_NEWPID_) {
		if (old->pid != task_active_pid_ns(p))
			return ERR_PTR(-EINVAL);
		if (old->pid->level >= PID_NS_MAX_LEVEL)
			return ERR_PTR(-ENOSPC);
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return ERR_PTR(-ENOMEM);
	refcount_init(&ns->ref, 1);
	if (flags & CLONE_NEWUSER_) {
		user = user_ns_new(old->user, cred);
		if (IS_ERR(user)) {
			free(ns);
			return ERR_PTR(PTR_ERR(user));
		}
		ns->user = user;
	} else {
		user_ns_get(user);
		ns->user = user;
	}
	/* The other namespaces are made by, and owned by, the (possibly new) user namespace. */
	if ((flags &
	     (CLONE_NEWUTS_ | CLONE_NEWIPC_ | CLONE_NEWNET_ | CLONE_NEWPID_ | CLONE_NEWCGROUP_)) &&
	    !nsproxy_ns_capable(
		    (flags & CLONE_NEWUSER_) ? &(struct cred){ .cap_effective = CAP_ALL } : cred,
		    user, user, CAP_SYS_ADMIN)) {
		user_ns_put(ns->user);
		free(ns);
		return ERR_PTR(-EPERM);
	}
	if (flags & CLONE_NEWUTS_) {
		ns->uts = uts_ns_new(old->uts, user);
	} else {
		uts_ns_get(old->uts);
		ns->uts = old->uts;
	}
	if (flags & CLONE_NEWIPC_) {
		ns->ipc = ipc_ns_new(user);
	} else {
		ipc_ns_get(old->ipc);
		ns->ipc = old->ipc;
	}
	if (flags & CLONE_NEWNET_) {
		ns->net = net_ns_new(user);
	} else {
		net_ns_get(old->net);
		ns->net = old->net;
	}
	if (flags & CLONE_NEWPID_) {
		ns->pid = pid_ns_new(old->pid, user);
	} else {
		pid_ns_get(old->pid);
		ns->pid = old->pid;
	}
	if (flags & CLONE_NEWCGROUP_) {
		ns->cgroup = cgroup_ns_new(p, user);
	} else {
		cgroup_ns_get(old->cgroup);
		ns->cgroup = old->cgroup;
	}
	if (!ns->uts || !ns->ipc || !ns->net || !ns->pid || !ns->cgroup) {
		if (ns->cgroup)
			cgroup_ns_put(ns->cgroup);
		if (ns->uts)
			uts_ns_put(ns->uts);
		if (ns->ipc)
			ipc_ns_put(ns->ipc);
		if (ns->net)
			net_ns_put(ns->net);
		if (ns->pid)
			pid_ns_put(ns->pid);
		user_ns_put(ns->user);
		free(ns);
		return ERR_PTR(-ENOMEM);
	}
	if (flags & CLONE_NEWUSER_) {
		/* Linux's set_cred_user_ns: every capability in the new namespace, and no more
		 * securebits or keep_caps than a fresh root. */
		cred->cap_effective = cred->cap_permitted = CAP_ALL;
		cred->cap_bounding = CAP_ALL;
		cred->cap_inheritable = 0;
		cred->cap_ambient = 0;
		cred->securebits = 0;
		cred->keep_caps = false;
		cred->userns_level = (uint8_t)user->level;
	}
	return ns;
}

/* ipc_sem.c (weak: procfs's unit tests link this file without it). */
#pragma weak ipc_sem_exit
int nsproxy_unshare(struct task *t, uint64_t flags)
{
	struct cred c = t->cred;
	struct nsproxy *ns;
	int nthreads;

	flags &= NSPROXY_CLONE_FLAGS;
	if (!flags)
		return 0;
	if (flags & CLONE_NEWUSER_) {
		pthread_mutex_lock(&t->tg->lock);
		nthreads = t->tg->nr_threads;
		pthread_mutex_unlock(&t->tg->lock);
		if (nthreads > 1)
			return -EINVAL;
	}
	ns = nsproxy_copy(t, flags, &c);
	if (IS_ERR(ns))
		return (int)PTR_ERR(ns);
	/* As Linux (CLONE_NEWIPC implies CLONE_SYSVSEM): the semaphore adjustments are applied
	 * now, while their sets can still be found. */
	if ((flags & CLONE_NEWIPC_) && ipc_sem_exit)
		ipc_sem_exit(t->tg, t->tg->pid);
	task_set_nsproxy(t, ns);
	t->cred = c;
	return 0;
}

int nsproxy_setns(struct task *t, struct nsproxy *target, uint64_t flags)
{
	struct nsproxy *old = task_nsproxy(t), *ns;
	struct cred c = t->cred;
	struct user_ns *user = old->user;
	int nthreads;

	if (!(flags & NSPROXY_CLONE_FLAGS) || (flags & ~(uint64_t)NSPROXY_CLONE_FLAGS))
		return -EINVAL;
	if (flags & CLONE_NEWPID_) {
		/* Linux's pidns_install: a descendant of the active namespace (or it), with
		 * CAP_SYS_ADMIN in its owner and in the caller's user namespace. */
		struct pid_ns *a = task_active_pid_ns(t), *d = target->pid;

		while (d && d->level > a->level)
			d = d->parent;
		if (d != a)
			return -EINVAL;
		if (!task_ns_capable(t, target->pid->owner, CAP_SYS_ADMIN) ||
		    !task_ns_capable(t, old->user, CAP_SYS_ADMIN))
			return -EPERM;
	}
	if (flags & CLONE_NEWUSER_) {
		struct user_ns *u = target->user;

		/* Linux's userns_install: not the same one, single-threaded, CAP_SYS_ADMIN in it. */
		if (u == old->user)
			return -EINVAL;
		pthread_mutex_lock(&t->tg->lock);
		nthreads = t->tg->nr_threads;
		pthread_mutex_unlock(&t->tg->lock);
		if (nthreads > 1)
			return -EINVAL;
		if (!task_ns_capable(t, u, CAP_SYS_ADMIN))
			return -EPERM;
		user = u;
		c.cap_effective = c.cap_permitted = CAP_ALL;
		c.cap_inheritable = c.cap_ambient = 0;
		c.userns_level = (uint8_t)u->level;
	}
	/* The others: CAP_SYS_ADMIN in the namespace's owner and in the caller's user ns. */
	if ((flags & CLONE_NEWUTS_) &&
	    (!nsproxy_ns_capable(&c, user, target->uts->owner, CAP_SYS_ADMIN) ||
	     !nsproxy_ns_capable(&c, user, user, CAP_SYS_ADMIN)))
		return -EPERM;
	if ((flags & CLONE_NEWIPC_) &&
	    (!nsproxy_ns_capable(&c, user, target->ipc->owner, CAP_SYS_ADMIN) ||
	     !nsproxy_ns_capable(&c, user, user, CAP_SYS_ADMIN)))
		return -EPERM;
	/* Linux's netns_install: the same rule. */
	if ((flags & CLONE_NEWNET_) &&
	    (!nsproxy_ns_capable(&c, user, target->net->owner, CAP_SYS_ADMIN) ||
	     !nsproxy_ns_capable(&c, user, user, CAP_SYS_ADMIN)))
		return -EPERM;
	/* Linux's cgroupns_install: the same rule. */
	if ((flags & CLONE_NEWCGROUP_) &&
	    (!nsproxy_ns_capable(&c, user, target->cgroup->owner, CAP_SYS_ADMIN) ||
	     !nsproxy_ns_capable(&c, user, user, CAP_SYS_ADMIN)))
		return -EPERM;
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	refcount_init(&ns->ref, 1);
	ns->user = user;
	ns->cgroup = (flags & CLONE_NEWCGROUP_) ? target->cgroup : old->cgroup;
	cgroup_ns_get(ns->cgroup);
	ns->uts = (flags & CLONE_NEWUTS_) ? target->uts : old->uts;
	ns->ipc = (flags & CLONE_NEWIPC_) ? target->ipc : old->ipc;
	ns->net = (flags & CLONE_NEWNET_) ? target->net : old->net;
	ns->pid = (flags & CLONE_NEWPID_) ? target->pid : old->pid;
	user_ns_get(ns->user);
	uts_ns_get(ns->uts);
	ipc_ns_get(ns->ipc);
	net_ns_get(ns->net);
	pid_ns_get(ns->pid);
	task_set_nsproxy(t, ns);
	t->cred = c;
	return 0;
}

/* --- uid_map, gid_map, setgroups --- */

/* Parses one "a b c" line; returns the chars consumed, 0 at the end, -EINVAL. */
static int parse_line(const char *s, size_t len, struct idmap_extent *e)
{
	char tmp[128], *p, *end;
	unsigned long long v[3];
	size_t n = 0;

	while (n < len && s[n] != '\n')
		n++;
	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	p = tmp;
	for (int i = 0; i < 3; i++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v[i] = strtoull(p, &end, 10);
		if (v[i] > 0xFFFFFFFFull)
			return -EINVAL;
		p = end;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p)
		return -EINVAL;
	e->inside = (uint32_t)v[0];
	e->outside = (uint32_t)v[1];
	e->count = (uint32_t)v[2];
	return (int)(n < len ? n + 1 : n);
}

ssize_t user_ns_write_map(struct task *writer, struct user_ns *u, bool gid, const char *buf,
			  size_t len)
{
	struct user_ns *wns = task_nsproxy(writer)->user, *parent = u->parent;
	struct idmap m = { 0 };
	size_t off = 0;
	ssize_t ret = (ssize_t)len;

	if (!parent)
		return -EPERM; /* the sandbox's maps are written */
	/* The writer is in the namespace or its parent (Linux's new_idmap_permitted). */
	if (wns != u && wns != parent)
		return -EPERM;
	if (!nsproxy_ns_capable(&writer->cred, wns, u, gid ? CAP_SETGID : CAP_SETUID))
		return -EPERM;
	while (off < len) {
		struct idmap_extent e;
		int n;

		if (buf[off] == '\0')
			break;
		n = parse_line(buf + off, len - off, &e);
		if (n < 0)
			return n;
		if (e.count == 0 || (uint64_t)e.inside + e.count > 0x100000000ull ||
		    (uint64_t)e.outside + e.count > 0x100000000ull)
			return -EINVAL;
		if (m.n >= IDMAP_MAX_EXTENTS)
			return -EINVAL;
		for (uint32_t i = 0; i < m.n; i++) {
			const struct idmap_extent *o = &m.e[i];

			if ((e.inside < o->inside + o->count && o->inside < e.inside + e.count) ||
			    (e.outside < o->outside + o->count && o->outside < e.outside + e.count))
				return -EINVAL;
		}
		m.e[m.n++] = e;
		off += (size_t)n;
	}
	if (!m.n)
		return -EINVAL;
	/*
	 * Linux's new_idmap_permitted: one line mapping the writer's own euid (egid, once
	 * setgroups is "deny") when it owns the namespace, or anything with CAP_SET[UG]ID over
	 * the parent (which a writer inside the namespace never has).
	 */
	{
		uint32_t mine;
		bool deny, ok = false;

		pthread_mutex_lock(&u->lock);
		deny = u->setgroups_deny;
		pthread_mutex_unlock(&u->lock);
		if (m.n == 1 && m.e[0].count == 1 && u->owner == writer->cred.euid &&
		    id_from(parent, gid, m.e[0].outside, &mine))
			ok = gid ? deny && mine == writer->cred.egid : mine == writer->cred.euid;
		if (!ok &&
		    !nsproxy_ns_capable(&writer->cred, wns, parent, gid ? CAP_SETGID : CAP_SETUID))
			return -EPERM;
	}
	/*
	 * Compose the outside ids down to the sandbox's: each extent must lie in one extent of the
	 * parent's map (Linux's map_id_range_down), not merely have its ends mapped as far apart.
	 */
	for (uint32_t i = 0; i < m.n; i++) {
		uint32_t k0;

		if (!user_ns_range_from(parent, gid, m.e[i].outside, m.e[i].count, &k0))
			return -EPERM;
		m.e[i].outside = k0;
	}
	pthread_mutex_lock(&u->lock);
	if (gid ? u->gid_map_set : u->uid_map_set) {
		ret = -EPERM;
	} else if (gid) {
		u->gid_map = m;
		u->gid_map_set = true;
	} else {
		u->uid_map = m;
		u->uid_map_set = true;
	}
	pthread_mutex_unlock(&u->lock);
	return ret;
}

ssize_t user_ns_write_setgroups(struct task *writer, struct user_ns *u, const char *buf, size_t len)
{
	struct user_ns *wns = task_nsproxy(writer)->user;
	char s[8] = { 0 };
	ssize_t ret = (ssize_t)len;
	bool deny;

	memcpy(s, buf, len < sizeof(s) - 1 ? len : sizeof(s) - 1);
	if (len && s[strlen(s) - 1] == '\n')
		s[strlen(s) - 1] = '\0';
	if (!strcmp(s, "deny"))
		deny = true;
	else if (!strcmp(s, "allow"))
		deny = false;
	else
		return -EINVAL;
	if (!u->parent)
		return deny ? -EPERM : ret;
	if (!nsproxy_ns_capable(&writer->cred, wns, u, CAP_SYS_ADMIN))
		return -EPERM;
	pthread_mutex_lock(&u->lock);
	/* Once gid_map is written, setgroups is fixed; "allow" after a parent's "deny": EPERM. */
	if (u->gid_map_set || (!deny && u->setgroups_deny))
		ret = -EPERM;
	else
		u->setgroups_deny = deny;
	pthread_mutex_unlock(&u->lock);
	return ret;
}

/* --- sysctl kernel.hostname, kernel.domainname --- */

static bool uts_sysctl_resolve(enum sysctl_id id, char **buf, size_t *size, pthread_mutex_t **lock)
{
	struct task *t = task_current();
	struct uts_ns *u;

	if (!t)
		return false;
	u = task_nsproxy(t)->uts;
	if (!u->id)
		return false; /* the initial one: the kernel's fields, bound already */
	*buf = id == SYSCTL_KERNEL_HOSTNAME ? u->hostname : u->domainname;
	*size = 65;
	*lock = u->lock;
	return true;
}

void nsproxy_install_sysctl(void)
{
	sysctl_set_string_resolver(SYSCTL_KERNEL_HOSTNAME, uts_sysctl_resolve);
	sysctl_set_string_resolver(SYSCTL_KERNEL_DOMAINNAME, uts_sysctl_resolve);
}
