/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the guest is to see of config.json's mounts and devices: the husk-sentry arguments
 * (--special-mount, --mount-label, --device, --device-rule: sentry/guestview.h) made from the
 * config, with what Linux would show (the options as the kernel prints them, a bind mount's
 * host filesystem and root).
 */
#ifndef HUSK_RUNTIME_GUESTVIEW_H
#define HUSK_RUNTIME_GUESTVIEW_H

#include <stddef.h>

struct oci_config;
struct oci_mount;

/* Adds one argument to the sentry's command line (the caller's argv). */
typedef void (*guestview_add_fn)(void *ctx, const char *arg);

/*
 * The --special-mount=... argument for config mount i (proc, sysfs, devpts, mqueue, cgroup, or
 * a tmpfs on /dev: the sentry's /dev), or NULL when the mount is of another kind. Malloc'd.
 */
char *guestview_special_arg(const struct oci_config *cfg, size_t i);
/* The --mount-label=... argument for config mount i (malloc'd), or NULL when out of memory. */
char *guestview_label_arg(const struct oci_config *cfg, size_t i);
/*
 * Adds the --device and --device-rule arguments: linux.devices, then linux.resources.devices
 * followed by runc's default rules (which come last, as runc appends them). A malformed entry
 * is skipped with a warning.
 */
void guestview_device_args(const struct oci_config *cfg, guestview_add_fn add, void *ctx);

#endif
