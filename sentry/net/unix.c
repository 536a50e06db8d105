/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AF_UNIX addressing: binding to paths (an S_IFSOCK node made with vfs_mknodat in whatever
 * sentry filesystem holds the path, found again by its device and inode numbers), to abstract
 * names and by autobind; connecting streams and seqpackets to a listener (a child socket is
 * made at once and queued for accept) and datagram sockets to a default peer. Transfers are
 * sock.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/net/internal.h"
#include "sentry/vfs/vfs.h"

static struct list_head unix_bound = LIST_HEAD_INIT(unix_bound); /* net_lock */
static unsigned int autobind_next; /* net_lock */

#define SUN_OFF offsetof(struct sockaddr_un, sun_path)

/* Validates a sockaddr_un; *path gets a NUL-terminated copy of a path name ("" if abstract). */
static int unix_parse(const void *addr, size_t len,
		      char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1], bool *abstract)
{
	const struct sockaddr_un *sun = addr;
	size_t n;

	if (len < sizeof(sa_family_t) || len > sizeof(struct sockaddr_un))
		return -EINVAL;
	if (sun->sun_family != AF_UNIX)
		return -EINVAL;
	n = len - SUN_OFF;
	if (len > SUN_OFF && sun->sun_path[0] == '\0') {
		*abstract = true;
		path[0] = '\0';
		return 0;
	}
	*abstract = false;
	memcpy(path, sun->sun_path, n);
	path[n] = '\0';
	return 0;
}

/* The identity of the S_IFSOCK node at path. */
static int path_ident(struct task *t, const char *path, bool follow, bool check_write,
		      uint64_t *dev, uint64_t *ino)
{
	struct vfs_path p;
	struct vfs_attr a;
	int ret;

	ret = vfs_lookup_at(t, AT_FDCWD, path, follow ? 0 : AT_SYMLINK_NOFOLLOW, &p);
	if (ret < 0)
		return ret;
	ret = vfs_path_getattr(&p, &a);
	if (ret == 0 && !S_ISSOCK(a.mode))
		ret = -ECONNREFUSED;
	if (ret == 0 && check_write)
		ret = vfs_path_permission(t, &p, W_OK);
	vfs_path_put(&p);
	*dev = a.dev;
	*ino = a.ino;
	return ret;
}

static bool name_equal(const struct sock *s, const void *addr, size_t len)
{
	return s->addrlen == len && !memcmp(&s->addr, addr, len);
}

/*
 * Finds the socket of type bound to an abstract name in network namespace n (net_lock held);
 * names are per type and per network namespace, as Linux's (path names are the filesystem's).
 */
static struct sock *find_abstract_locked(struct net_ns *n, const void *addr, size_t len, int type)
{
	struct sock *s;

	list_for_each_entry(s, &unix_bound, bind_link) {
		if (s->bind_ino == 0 && s->net == n && s->type == type && name_equal(s, addr, len))
			return s;
	}
	return NULL;
}

static struct sock *find_ident_locked(uint64_t dev, uint64_t ino)
{
	struct sock *s;

	list_for_each_entry(s, &unix_bound, bind_link) {
		if (s->bind_ino == ino && s->bind_dev == dev)
			return s;
	}
	return NULL;
}

/*
 * A socket node was just made as (dev, ino): a socket still bound to that identity was bound to
 * a node since removed whose inode number the filesystem gave again (a host directory served by
 * the gofer reuses them). Linux binds to the inode itself, so such a socket is found by no path
 * any more: its identity goes (it stays bound, for getsockname and /proc/net/unix).
 */
static void forget_ident_locked(uint64_t dev, uint64_t ino)
{
	struct sock *s;

	list_for_each_entry(s, &unix_bound, bind_link) {
		if (s->bind_ino == ino && s->bind_dev == dev)
			s->bind_dev = s->bind_ino =
				0; /* never a node's (abstract names need a NUL) */
	}
}

/* Binds s to an unused abstract "\0XXXXX" name (net_lock held). */
static int autobind_locked(struct sock *s)
{
	struct sockaddr_un sun;
	size_t len = SUN_OFF + 6;

	if (s->bound)
		return 0;
	for (unsigned int tries = 0; tries < 0x100000; tries++) {
		char name[8];

		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(name, sizeof(name), "%05x", autobind_next++ & 0xfffff);
		memcpy(sun.sun_path + 1, name, 5);
		if (!find_abstract_locked(s->net, &sun, len, s->type)) {
			memcpy(&s->addr, &sun, len);
			s->addrlen = (socklen_t)len;
			s->bound = true;
			list_add_tail(&s->bind_link, &unix_bound);
			return 0;
		}
	}
	return -ENOSPC;
}

int unix_autobind(struct sock *s)
{
	int ret;

	pthread_mutex_lock(&net_lock);
	ret = autobind_locked(s);
	pthread_mutex_unlock(&net_lock);
	return ret;
}

int unix_bind(struct task *t, struct sock *s, const void *addr, size_t len)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	bool abstract;
	uint64_t dev, ino;
	int ret;

	ret = unix_parse(addr, len, path, &abstract);
	if (ret < 0)
		return ret;
	if (len == sizeof(sa_family_t))
		return unix_autobind(s) ?: (s->bound ? 0 : -EINVAL);
	pthread_mutex_lock(&net_lock);
	ret = s->bound ? -EINVAL : 0;
	if (ret == 0 && abstract) {
		if (find_abstract_locked(s->net, addr, len, s->type)) {
			ret = -EADDRINUSE;
		} else {
			memcpy(&s->addr, addr, len);
			s->addrlen = (socklen_t)len;
			s->bound = true;
			list_add_tail(&s->bind_link, &unix_bound);
		}
	}
	pthread_mutex_unlock(&net_lock);
	if (ret < 0 || abstract)
		return ret;
	if (path[0] == '\0')
		return -ENOENT;

	ret = vfs_mknodat(t, AT_FDCWD, path, S_IFSOCK | 0777, 0);
	if (ret == -EEXIST)
		return -EADDRINUSE;
	if (ret < 0)
		return ret;
	ret = path_ident(t, path, false, false, &dev, &ino);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&net_lock);
	forget_ident_locked(dev, ino);
	if (s->bound) {
		ret = -EINVAL; /* a racing bind won */
	} else {
		struct sockaddr_un *sun = (struct sockaddr_un *)&s->addr;
		size_t n = strlen(path);

		memset(sun, 0, sizeof(*sun));
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, path, n);
		/* Linux reports the path with its NUL. */
		s->addrlen = (socklen_t)(SUN_OFF + n + 1);
		s->bind_dev = dev;
		s->bind_ino = ino;
		s->bound = true;
		list_add_tail(&s->bind_link, &unix_bound);
	}
	pthread_mutex_unlock(&net_lock);
	return ret;
}

void unix_bind_restore_locked(struct sock *s)
{
	list_add_tail(&s->bind_link, &unix_bound);
}

void unix_unbind_locked(struct sock *s)
{
	if (s->bound && !list_empty(&s->bind_link)) {
		list_del(&s->bind_link);
		list_init(&s->bind_link);
	}
}

struct sock *unix_find(struct task *t, struct net_ns *n, const void *addr, size_t len, int type)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	bool abstract;
	uint64_t dev = 0, ino = 0;
	struct sock *s;
	int ret;

	ret = unix_parse(addr, len, path, &abstract);
	if (ret < 0)
		return ERR_PTR(ret);
	if (len <= SUN_OFF)
		return ERR_PTR(-EINVAL);
	if (!abstract) {
		if (path[0] == '\0')
			return ERR_PTR(-ENOENT);
		ret = path_ident(t, path, true, true, &dev, &ino);
		if (ret < 0)
			return ERR_PTR(ret);
	}
	pthread_mutex_lock(&net_lock);
	s = abstract ? find_abstract_locked(n, addr, len, type) : find_ident_locked(dev, ino);
	if (s && s->type != type)
		s = ERR_PTR(-EPROTOTYPE);
	else if (!s || s->closed)
		s = ERR_PTR(-ECONNREFUSED);
	else
		sock_get(s);
	pthread_mutex_unlock(&net_lock);
	return s;
}

struct backlog_wait {
	struct sock *l;
};

static bool backlog_room(void *arg)
{
	struct sock *l = arg;
	bool r;

	pthread_mutex_lock(&net_lock);
	r = l->closed || l->state != SOCK_LISTENING || l->rcv_shut || l->nacceptq <= l->backlog;
	pthread_mutex_unlock(&net_lock);
	return r;
}

/* Connects stream/seqpacket s to listener l (referenced by the caller). */
static int unix_stream_connect(struct task *t, struct sock *s, struct sock *l, bool nonblock)
{
	struct sock *c;
	struct net_cred cred;
	int ret;

	sock_task_cred(t, &cred);
	c = sock_new(AF_UNIX, s->type, 0);
	if (!c)
		return -ENOMEM;
	sock_set_net(c, s->net);
	for (;;) {
		struct waitq *wq = &l->wq;
		long r;

		pthread_mutex_lock(&net_lock);
		if (s->state == SOCK_CONNECTED || s->state == SOCK_DISCONNECTED) {
			ret = -EISCONN;
			break;
		}
		if (s->state == SOCK_LISTENING) {
			ret = -EINVAL;
			break;
		}
		/* A listener shut down for reading refuses (unix_stream_connect). */
		if (l->closed || l->state != SOCK_LISTENING || l->rcv_shut) {
			ret = -ECONNREFUSED;
			break;
		}
		if (l->nacceptq <= l->backlog) {
			memcpy(&c->addr, &l->addr, l->addrlen);
			c->addrlen = l->addrlen;
			c->passcred = l->passcred;
			c->peercred = cred;
			c->has_peercred = true;
			s->peercred = l->peercred;
			s->has_peercred = true;
			sock_pair_locked(s, c);
			list_add_tail(&c->acc_link, &l->acceptq); /* takes c's first reference */
			l->nacceptq++;
			c = NULL;
			waitq_wake_all(&l->wq);
			waitq_wake_all(&s->wq);
			ret = 0;
			break;
		}
		pthread_mutex_unlock(&net_lock);
		if (nonblock) {
			sock_put(c);
			return -EAGAIN;
		}
		r = task_wait(t, &wq, 1, backlog_room, l, NULL, true);
		if (r < 0) {
			sock_put(c);
			return (int)r;
		}
	}
	pthread_mutex_unlock(&net_lock);
	if (c)
		sock_put(c);
	return ret;
}

int unix_connect(struct task *t, struct sock *s, const void *addr, size_t len, bool nonblock)
{
	const struct sockaddr *sa = addr;
	struct sock *l;
	int ret;

	if (len >= sizeof(sa_family_t) && sa->sa_family == AF_UNSPEC && s->type == SOCK_DGRAM) {
		struct sock *old;

		pthread_mutex_lock(&net_lock);
		old = s->peer;
		s->peer = NULL;
		s->state = SOCK_UNCONNECTED;
		pthread_mutex_unlock(&net_lock);
		if (old)
			sock_put(old);
		return 0;
	}
	if (len < sizeof(sa_family_t) || sa->sa_family != AF_UNIX)
		return -EINVAL;
	l = unix_find(t, s->net, addr, len, s->type);
	if (IS_ERR(l))
		return (int)PTR_ERR(l);
	if (s->passcred)
		unix_autobind(s);
	if (s->type == SOCK_DGRAM) {
		struct sock *old;

		pthread_mutex_lock(&net_lock);
		old = s->peer;
		s->peer = l; /* the reference unix_find took */
		s->state = SOCK_CONNECTED;
		pthread_mutex_unlock(&net_lock);
		if (old)
			sock_put(old);
		return 0;
	}
	ret = unix_stream_connect(t, s, l, nonblock);
	sock_put(l);
	return ret;
}

void unix_for_each_locked(struct net_ns *n, void (*fn)(struct sock *s, void *arg), void *arg)
{
	struct sock *s;

	list_for_each_entry(s, &unix_bound, bind_link)
		if (s->net == n)
			fn(s, arg);
}
