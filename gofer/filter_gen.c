/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Build-time tool: compiles the gofer's seccomp filter (gofer/filter.c), read-only with
 * --readonly, else writable, with libseccomp and writes it as C source to OUTPUT.c, so that
 * husk-gofer loads it without compiling it at every start. The output depends only on the
 * rules and the libseccomp version.
 */
#include <stdio.h>
#include <string.h>

#include "gofer/filter.h"
#include "sentry/filter_gen.h"

int main(int argc, char **argv)
{
	bool readonly = argc == 3 && !strcmp(argv[1], "--readonly");
	scmp_filter_ctx ctx;
	int ret;

	if (argc != 2 && !readonly) {
		fprintf(stderr, "usage: %s [--readonly] OUTPUT.c\n", argv[0]);
		return 2;
	}
	ret = gofer_filter_build(readonly, &ctx);
	if (ret < 0) {
		fprintf(stderr, "gofer-filter-gen: building the filter: %s\n", strerror(-ret));
		return 1;
	}
	ret = filter_gen_write(ctx, argv[argc - 1], "gofer/filter.h",
			       readonly ? "gofer_filter_prebuilt_ro" : "gofer_filter_prebuilt_rw");
	seccomp_release(ctx);
	return ret < 0 ? 1 : 0;
}
