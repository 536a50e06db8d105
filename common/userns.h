/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rootless confinement: a process that lacks CAP_SYS_ADMIN (husk run by an unprivileged user)
 * enters a user namespace of its own first, in which it is root, so that the mount, IPC and
 * UTS namespaces, the pivot_root and the rest of its confinement work as they do under root.
 */
#ifndef HUSK_COMMON_USERNS_H
#define HUSK_COMMON_USERNS_H

#include <stdbool.h>

/*
 * Whether the calling process holds CAP_SYS_ADMIN in its user namespace (it can make mount
 * namespaces itself: root, or root of an engine's user namespace such as rootless podman's).
 */
bool userns_privileged(void);

/* Whether the caller runs in a user namespace other than the host's (its uid_map is not the
 * identity over every id). */
bool userns_nested(void);

/*
 * Unless userns_privileged(), unshares a new user namespace and maps the caller's effective
 * uid and gid to 0 in it (the only mapping an unprivileged process may write for itself; a
 * single id, so no other host id can be reached), with setgroups denied (required for the gid
 * map; supplementary groups then stay as they are and cannot be dropped or added). The caller
 * is then root in the namespace with every capability in it, and none outside.
 * Must be called while single-threaded and before any other namespace is made. Sets *entered to
 * whether a namespace was made. Returns 0 or -errno.
 */
int userns_enter_unless_privileged(bool *entered);

/*
 * What to tell the user when userns_enter_unless_privileged failed with err: for EPERM and
 * ENOSPC (the host forbids unprivileged user namespaces or has used up its quota), where to
 * look; else "".
 */
const char *userns_hint(int err);

#endif
