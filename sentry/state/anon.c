/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eventfd, timerfd, signalfd and epoll files in a checkpoint image (sentry/state/README.md,
 * "Anonymous files"). Each is one File message: an eventfd's count and mode, a timerfd's clocks,
 * deadline (moved by the time between save and restore), interval and untaken expirations, a
 * signalfd's mask, an epoll's interest list (items name their files by File id, restored on
 * demand; readiness is asked again at the next wait).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

#include "sentry/fs/anon/anon.h"
#include "sentry/state/state.h"
#include "sentry/vfs/fs.h"

#define LINUX_SIGKILL_BIT (1ULL << 8)
#define LINUX_SIGSTOP_BIT (1ULL << 18)

/* The status flags an anon file keeps from the image (the access mode is the file's own). */
static void set_flags(struct file *f, int flags)
{
	f->flags = (f->flags & O_ACCMODE) | (flags & (O_NONBLOCK | O_ASYNC));
}

bool state_anon_file(struct file *f)
{
	return file_is_eventfd(f) || file_is_timerfd(f) || file_is_signalfd(f) || file_is_epoll(f);
}

static int save_epoll(struct state_save *s, struct file *f, Husk__State__File *out)
{
	struct epoll_item_state *v = NULL;
	int n = 0, err;

	err = epoll_items_save(f, &v, &n);
	if (err < 0)
		return state_save_fail(s, err, "out of memory");
	out->kind = STATE_FILE_EPOLL;
	out->epoll_items = n ? state_alloc(s, (size_t)n * sizeof(*out->epoll_items)) : NULL;
	if (n && !out->epoll_items)
		err = state_save_fail(s, -ENOMEM, "out of memory");
	for (int i = 0; i < n && err == 0; i++) {
		Husk__State__EpollItem *m = state_alloc(s, sizeof(*m));
		uint32_t id;

		if (!m) {
			err = state_save_fail(s, -ENOMEM, "out of memory");
			break;
		}
		husk__state__epoll_item__init(m);
		/* The item's file (saved first if no fd names it any more). */
		id = state_save_file_id(s, v[i].f);
		if (!id) {
			err = -EINVAL;
			break;
		}
		m->fd = v[i].fd;
		m->file = id;
		m->events = v[i].events;
		m->data = v[i].data;
		m->disabled = v[i].disabled;
		out->epoll_items[out->n_epoll_items++] = m;
	}
	for (int i = 0; i < n; i++)
		file_put(v[i].f);
	free(v);
	return err;
}

int state_anon_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	if (file_is_eventfd(f)) {
		bool sem;

		eventfd_save(f, &out->efd_count, &sem);
		out->kind = STATE_FILE_EVENTFD;
		out->has_efd_count = out->has_efd_semaphore = true;
		out->efd_semaphore = sem;
		return 0;
	}
	if (file_is_timerfd(f)) {
		Husk__State__Timerfd *m = state_alloc(s, sizeof(*m));
		int clockid, host_clock;

		if (!m)
			return state_save_fail(s, -ENOMEM, "out of memory");
		husk__state__timerfd__init(m);
		timerfd_save(f, &clockid, &host_clock, &m->expiry_ns, &m->interval_ns, &m->ticks);
		m->clockid = clockid;
		m->host_clock = host_clock;
		out->kind = STATE_FILE_TIMERFD;
		out->timerfd = m;
		return 0;
	}
	if (file_is_signalfd(f)) {
		out->kind = STATE_FILE_SIGNALFD;
		out->has_sigmask = true;
		out->sigmask = signalfd_mask(f);
		return 0;
	}
	if (file_is_epoll(f))
		return save_epoll(s, f, out);
	return state_save_fail(s, -EOPNOTSUPP, "not an anon file");
}

static struct file *restore_timerfd(struct state_restore *r, const Husk__State__File *in)
{
	const Husk__State__Timerfd *m = in->timerfd;
	uint64_t expiry = 0;
	struct file *f;
	int err;

	if (!m) {
		state_restore_fail(r, -EINVAL, "file %u: a timerfd without its timer", in->id);
		return NULL;
	}
	if (m->host_clock != CLOCK_REALTIME && m->host_clock != CLOCK_MONOTONIC &&
	    m->host_clock != CLOCK_BOOTTIME) {
		state_restore_fail(r, -EINVAL, "file %u: bad timerfd clock %d", in->id,
				   m->host_clock);
		return NULL;
	}
	if (m->clockid < 0 || m->clockid > 11) {
		state_restore_fail(r, -EINVAL, "file %u: bad timerfd clock id %d", in->id,
				   m->clockid);
		return NULL;
	}
	if (m->expiry_ns) {
		/* The deadline moves with this host's clock: the time left stays as it was. */
		int64_t e = (int64_t)m->expiry_ns + state_restore_mono_delta(r);

		expiry = e > 0 ? (uint64_t)e : 1;
	}
	f = timerfd_create_file(m->clockid, m->host_clock, in->flags);
	if (!f) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	err = timerfd_restore(f, expiry, m->interval_ns, m->ticks);
	if (err < 0) {
		file_put(f);
		state_restore_fail(r, err, "file %u: cannot arm the timerfd", in->id);
		return NULL;
	}
	set_flags(f, in->flags);
	return f;
}

static struct file *restore_epoll(struct state_restore *r, const Husk__State__File *in)
{
	struct file *f = epoll_create_file();

	if (!f) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < in->n_epoll_items; i++) {
		const Husk__State__EpollItem *m = in->epoll_items[i];
		struct epoll_item_state st = { m->fd, NULL, m->events, m->data, m->disabled };
		int err;

		if (m->fd < 0 || m->file == in->id) {
			state_restore_fail(r, -EINVAL, "file %u: bad epoll item %zu", in->id, i);
			goto fail;
		}
		st.f = state_restore_file_id(r, m->file);
		if (!st.f)
			goto fail;
		err = epoll_item_restore(f, &st);
		if (err < 0) {
			state_restore_fail(r, err, "file %u: epoll item %zu (fd %d): error %d",
					   in->id, i, m->fd, err);
			goto fail;
		}
	}
	return f;
fail:
	file_put(f);
	return NULL;
}

struct file *state_anon_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	struct file *f = NULL;

	switch (in->kind) {
	case STATE_FILE_EVENTFD:
		if (!in->has_efd_count || in->efd_count == UINT64_MAX) {
			state_restore_fail(r, -EINVAL, "file %u: bad eventfd count", in->id);
			return NULL;
		}
		f = eventfd_create(in->efd_count, (in->flags & O_NONBLOCK) |
							  (in->efd_semaphore ? EFD_SEMAPHORE : 0));
		break;
	case STATE_FILE_TIMERFD:
		return restore_timerfd(r, in);
	case STATE_FILE_SIGNALFD:
		if (!in->has_sigmask) {
			state_restore_fail(r, -EINVAL, "file %u: a signalfd without its mask",
					   in->id);
			return NULL;
		}
		f = signalfd_create_file(in->sigmask & ~(LINUX_SIGKILL_BIT | LINUX_SIGSTOP_BIT),
					 in->flags);
		break;
	case STATE_FILE_EPOLL:
		f = restore_epoll(r, in);
		if (f)
			set_flags(f, in->flags);
		return f;
	default:
		state_restore_fail(r, -EINVAL, "file %u: bad kind %u", in->id, in->kind);
		return NULL;
	}
	if (!f) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	set_flags(f, in->flags);
	return f;
}
