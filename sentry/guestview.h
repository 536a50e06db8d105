/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the guest sees of config.json's mounts and devices (husk-sentry options the runtime
 * gives, runtime/guestview.c makes them):
 *
 *   --special-mount TYPE:DEST[:size=N][:mode=OCT]   TYPE proc, sysfs, dev, devpts, mqueue or
 *                      cgroup mounted at DEST (in the order of the mount options); dev is the
 *                      sentry's /dev (a tmpfs of OCI's default devices, size and mode given)
 *   --mount-label DEST:OPTS:FSTYPE:SOURCE:SUPER:ROOT  what /proc/PID/mountinfo shows of the mount
 *                      the option before made: OPTS the per-mount options (rw/ro, nosuid, nodev,
 *                      noexec decide its flags; relatime, noatime or none for the atime word),
 *                      SUPER the filesystem's options (rw/ro first), ROOT the 4th field
 *   --device PATH:TYPE:MAJOR:MINOR:MODE:UID:GID     a linux.devices entry (TYPE c, u, b or p;
 *                      MODE octal permission bits)
 *   --console          the sentry's stdin is the console (process.terminal): /dev/console
 *   --device-rule allow|deny:TYPE:MAJOR:MINOR:ACCESS  a linux.resources.devices rule (TYPE a, c
 *                      or b; MAJOR/MINOR a number or *; ACCESS of r, w, m), in order
 *
 * Each field of a DEST, PATH or label is %-escaped: "%3a" for ':' and "%25" for '%'.
 */
#ifndef HUSK_SENTRY_GUESTVIEW_H
#define HUSK_SENTRY_GUESTVIEW_H

#include <stdbool.h>

struct kernel;

/*
 * Mounts a --special-mount argument. *path gets its destination (owned by the caller).
 * Returns 0 or -errno (-EINVAL: a malformed argument).
 */
int guestview_mount_special(struct kernel *k, const char *arg, char **path);
/*
 * The default /dev's other mounts (husk do, or a config without a /dev mount): the POSIX
 * message queues on /dev/mqueue, when the sentry's /dev is mounted. Returns 0 or -errno.
 */
int guestview_default_mounts(struct kernel *k);
/*
 * --console (config.json process.terminal): the sentry's stdin is the container's console;
 * /dev/console (5:1, mode 0620, group tty) opens it. Returns 0 or -errno.
 */
int guestview_console(struct kernel *k);
/* Whether a --special-mount argument mounts TYPE ("dev", "proc", "sysfs"). */
bool guestview_special_is(const char *arg, const char *type);
/* Applies a --mount-label argument to the mount at its destination. Returns 0 or -errno. */
int guestview_label(struct kernel *k, const char *arg);
/* Checks a --mount-label, --device or --device-rule argument. Returns 0 or -EINVAL. */
int guestview_check_label(const char *arg);
int guestview_check_device(const char *arg);
int guestview_add_rule(const char *arg);
/* Makes a --device node. Returns 0 or -errno. */
int guestview_make_device(struct kernel *k, const char *arg);
/* Makes the device rules given so far the sentry's (devfs_set_rules). Returns 0 or -ENOMEM. */
int guestview_apply_rules(void);

#endif
