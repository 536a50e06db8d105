/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unit-state-fs tests fs.c alone: anon files, sockets and IPC files (sentry/state/anon.c, net.c,
 * ipc.c) need the whole kernel. These stand in for them, so the archive's anon.o, net.o and ipc.o
 * are not linked.
 */
#include <errno.h>
#include <stddef.h>

#include "sentry/net/net.h"
#include "sentry/state/state.h"

bool file_is_socket(struct file *f)
{
	(void)f;
	return false;
}

bool state_anon_file(struct file *f)
{
	(void)f;
	return false;
}

int state_anon_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	(void)f;
	(void)out;
	return state_save_fail(s, -EOPNOTSUPP, "no anon files in this test");
}

struct file *state_anon_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	(void)in;
	state_restore_fail(r, -EINVAL, "no anon files in this test");
	return NULL;
}

int state_sock_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	(void)f;
	(void)out;
	return state_save_fail(s, -EOPNOTSUPP, "no sockets in this test");
}

struct file *state_sock_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	(void)in;
	state_restore_fail(r, -EINVAL, "no sockets in this test");
	return NULL;
}

/* System V IPC and POSIX message queues (sentry/state/ipc.c) need the kernel too. */
bool state_ipc_file(struct file *f)
{
	(void)f;
	return false;
}

int state_ipc_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	(void)f;
	(void)out;
	return state_save_fail(s, -EOPNOTSUPP, "no IPC files in this test");
}

struct file *state_ipc_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	(void)in;
	state_restore_fail(r, -EINVAL, "no IPC files in this test");
	return NULL;
}
