/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the build-time filter generators (sentry/filter_gen.c, gofer/filter_gen.c): writes the
 * program libseccomp compiles from a filter context as C source defining
 *   const struct sock_filter NAME[]; const unsigned short NAME_len;
 */
#ifndef HUSK_SENTRY_FILTER_GEN_H
#define HUSK_SENTRY_FILTER_GEN_H

#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Compiles ctx and writes it to path as C source that includes header and defines name and
 * name_len. Returns 0 or -errno (a message on stderr).
 */
static inline int filter_gen_write(scmp_filter_ctx ctx, const char *path, const char *header,
				   const char *name)
{
	struct sock_filter insns[4096];
	int fd = memfd_create("filter-gen", MFD_CLOEXEC);
	ssize_t n;
	size_t len;
	FILE *out;
	int ret;

	if (fd < 0)
		return -errno;
	ret = seccomp_export_bpf(ctx, fd);
	if (ret < 0) {
		fprintf(stderr, "filter-gen: seccomp_export_bpf: %s\n", strerror(-ret));
		close(fd);
		return ret;
	}
	n = pread(fd, insns, sizeof(insns), 0);
	close(fd);
	if (n <= 0 || n % sizeof(insns[0]) || (size_t)n == sizeof(insns)) {
		fprintf(stderr, "filter-gen: unexpected program size %zd\n", n);
		return -EINVAL;
	}
	len = (size_t)n / sizeof(insns[0]);
	out = fopen(path, "w");
	if (!out) {
		ret = -errno;
		fprintf(stderr, "filter-gen: %s: %s\n", path, strerror(errno));
		return ret;
	}
	fprintf(out, "/* Generated at build time from the rules by libseccomp %u.%u.%u. */\n",
		seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro);
	fprintf(out, "#include \"%s\"\n\nconst struct sock_filter %s[] = {\n", header, name);
	for (size_t i = 0; i < len; i++)
		fprintf(out, "\t{ %#x, %u, %u, %#x },\n", insns[i].code, insns[i].jt, insns[i].jf,
			insns[i].k);
	fprintf(out, "};\n\nconst unsigned short %s_len = %zu;\n", name, len);
	if (fclose(out) != 0) {
		fprintf(stderr, "filter-gen: %s: write error\n", path);
		return -EIO;
	}
	return 0;
}

#endif
