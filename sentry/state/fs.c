/* SPDX-License-Identifier: Apache-2.0 */
/* Files and filesystems in a checkpoint image (state.h, fs.proto). */
#include <errno.h>

#include "sentry/state/state.h"
#include "sentry/vfs/vfs.h"

int state_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	(void)f;
	(void)out;
	return state_save_fail(s, -EOPNOTSUPP, "open files cannot be saved yet");
}

struct file *state_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	(void)in;
	state_restore_fail(r, -EOPNOTSUPP, "open files cannot be restored yet");
	return NULL;
}

int state_fs_save(struct state_save *s, Husk__State__FsState *out)
{
	(void)s;
	(void)out;
	return 0;
}

int state_fs_restore(struct state_restore *r, const Husk__State__FsState *in)
{
	(void)r;
	(void)in;
	return 0;
}
