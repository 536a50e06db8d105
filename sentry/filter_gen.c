/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Build-time tool: compiles the sentry's usual seccomp filter (sentry/filter.c, without control
 * socket or host network) with libseccomp and writes it as C source to argv[1], so that
 * husk-sentry loads it without compiling it at every start. The output depends only on the
 * rules and the libseccomp version: the same build gives the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/filter.h"
#include "sentry/filter_gen.h"

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT.c\n", argv[0]);
		return 2;
	}
	ret = sentry_filter_build(&ctx);
	if (ret < 0) {
		fprintf(stderr, "sentry-filter-gen: building the filter: %s\n", strerror(-ret));
		return 1;
	}
	ret = filter_gen_write(ctx, argv[1], "sentry/filter.h", "sentry_filter_prebuilt");
	seccomp_release(ctx);
	return ret < 0 ? 1 : 0;
}
