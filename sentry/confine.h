/* SPDX-License-Identifier: Apache-2.0 */
/* How the sentry confines itself before the first guest instruction (DESIGN.md rule 3). */
#ifndef HUSK_SENTRY_CONFINE_H
#define HUSK_SENTRY_CONFINE_H

/* Closes every FD but those in keep[0..nkeep) (at most 64). Returns 0 or -errno (-EINVAL). */
int sentry_close_fds_except(const int *keep, int nkeep);

/*
 * Enters new mount, IPC and UTS namespaces, pivots into an empty read-only directory, drops every
 * capability (bounding set included), sets no_new_privs and installs the seccomp allow-list of
 * sentry/filter.c. before_filter (if not NULL) runs just before the filter is installed, with
 * every other step done (the seccomp platform forks its zygote stub there); its error fails the
 * whole. Returns 0 or -errno; on failure the sentry must not run guest code.
 */
int sentry_confine(int (*before_filter)(void *arg), void *arg);

/* Installs the sentry's seccomp allow-list (sentry/filter.c). Returns 0 or -errno. */
int sentry_install_filter(void);

#endif
