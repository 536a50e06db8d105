/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the gofer's seccomp allow-list (gofer/filter.c) is built. gofer_install_filter()
 * (confine.h) installs it. Both variants (read-only, writable) are compiled by libseccomp at
 * build time (filter_gen.c writes them into husk-gofer): at run time they are only loaded.
 */
#ifndef HUSK_GOFER_FILTER_H
#define HUSK_GOFER_FILTER_H

#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>

/* The two variants as libseccomp compiled them at build time (only in husk-gofer itself). */
extern const struct sock_filter gofer_filter_prebuilt_ro[];
extern const unsigned short gofer_filter_prebuilt_ro_len;
extern const struct sock_filter gofer_filter_prebuilt_rw[];
extern const unsigned short gofer_filter_prebuilt_rw_len;

/* Builds the allow-list of a read-only or writable gofer into *out (seccomp_release it). */
int gofer_filter_build(bool readonly, scmp_filter_ctx *out);

#endif
