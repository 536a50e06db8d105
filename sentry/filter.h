/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the sentry's seccomp allow-list (sentry/filter.c) is built. What it allows is listed in
 * filter.c; sentry_install_filter() (confine.h) installs it.
 *
 * The usual variant (no control socket, no host network) is compiled by libseccomp at build
 * time (filter_gen.c writes it into husk-sentry as sentry_filter_prebuilt): at run time it is
 * only loaded. The other variants depend on run-time values and are compiled at run time.
 */
#ifndef HUSK_SENTRY_FILTER_H
#define HUSK_SENTRY_FILTER_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The usual variant as libseccomp compiled it at build time (only in husk-sentry itself). */
extern const struct sock_filter sentry_filter_prebuilt[];
extern const unsigned short sentry_filter_prebuilt_len;

/*
 * The sentry runs guests on the KVM platform (issue 19): the filter allows the KVM ioctls
 * that platform makes after confinement, by request number. Call before installing it.
 */
void sentry_filter_allow_kvm(void);

/* True if the filter to install is the usual variant: no control socket, no host network. */
bool sentry_filter_is_default(void);

/* Builds the allow-list for the current options into *out (seccomp_release it). 0 or -errno. */
int sentry_filter_build(scmp_filter_ctx *out);

/*
 * Installs a compiled program as seccomp_load() would (no_new_privs, then
 * seccomp(SECCOMP_SET_MODE_FILTER) without flags). Returns 0 or -errno.
 */
static inline int filter_load_prebuilt(const struct sock_filter *insns, unsigned short len)
{
	struct sock_fprog prog = { .len = len, .filter = (struct sock_filter *)insns };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

#endif
