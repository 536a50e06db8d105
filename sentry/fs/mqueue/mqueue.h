/* SPDX-License-Identifier: Apache-2.0 */
/* The mqueue filesystem: /dev/mqueue, the sandbox's POSIX message queues as files. */
#ifndef HUSK_SENTRY_FS_MQUEUE_H
#define HUSK_SENTRY_FS_MQUEUE_H

struct vfs_fs;

/* A new instance (one reference) showing the sandbox's queues, or NULL when out of memory. */
struct vfs_fs *mqueuefs_create(void);

#endif
