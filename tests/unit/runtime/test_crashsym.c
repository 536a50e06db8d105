/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime/crashsym.c: the sentry's raw crash report symbolized. The reports here name this test
 * binary as their module, with its real build-id or a wrong one, or a path that is not a
 * regular file.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

__attribute__((noinline)) int crashsym_target(int x);
__attribute__((noinline)) int crashsym_target(int x)
{
	return x * 3 + 1;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

/* This executable's path, load bias and build-id (hex). */
static void self_module(char *path, size_t path_len, uintptr_t *bias, char *hex)
{
	static const Dwfl_Callbacks cb = { .find_debuginfo = dwfl_standard_find_debuginfo };
	ssize_t n = readlink("/proc/self/exe", path, path_len - 1);
	Dwfl *d = dwfl_begin(&cb);
	Dwfl_Module *m;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len;

	cr_assert_gt(n, 0);
	path[n] = 0;
	dl_iterate_phdr(first_object, bias);
	cr_assert_not_null(d);
	dwfl_report_begin(d);
	m = dwfl_report_elf(d, "self", path, -1, *bias, false);
	dwfl_report_end(d, NULL, NULL);
	cr_assert_not_null(m);
	len = dwfl_module_build_id(m, &bits, &vaddr);
	cr_assert_gt(len, 0, "the test binary has no build-id");
	for (int i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", bits[i]);
	dwfl_end(d);
}

/* A raw report as sentry/crash writes it: one module, one thread, frame #0 in crashsym_target. */
static char *raw_report(const char *path, uintptr_t bias, const char *build_id)
{
	uintptr_t pc = (uintptr_t)crashsym_target + 2;
	char *r = NULL;

	cr_assert_gt(asprintf(&r,
			      "husk-sentry: CRASH: SIGSEGV (signal 11) at address 0x0 in thread 7; "
			      "1 threads, 0 answered\n"
			      "module %s bias 0x%lx range 0x%lx-0x%lx build-id %s\n"
			      "thread 7 (husk-sentry) [crashed]:\n"
			      "  guest call: none\n"
			      "  #0  0x%016lx %s+0x%lx\n"
			      "husk-sentry: end of crash report\n",
			      path, (unsigned long)bias, (unsigned long)bias,
			      (unsigned long)bias + 0x40000000, build_id, (unsigned long)pc, path,
			      (unsigned long)(pc - bias)),
		     0);
	return r;
}

static char *symbolize(const char *raw)
{
	size_t len = 0;
	char *out = crash_symbolize(raw, strlen(raw), &len);

	cr_assert_not_null(out);
	out = realloc(out, len + 1);
	out[len] = 0;
	return out;
}

/* The symbolized report of a frame in this binary, said to have build_id (NULL: its own). */
static char *symbolize_self(const char *build_id)
{
	char path[4096], hex[256];
	uintptr_t bias = 0;
	char *raw, *out;

	self_module(path, sizeof(path), &bias, hex);
	raw = raw_report(path, bias, build_id ? build_id : hex);
	out = symbolize(raw);
	free(raw);
	return out;
}

Test(runtime_crashsym, names_the_function_and_line_of_a_frame)
{
	char *out = symbolize_self(NULL);

	cr_assert(strstr(out, "crashsym_target+0x2 at tests/unit/runtime/test_crashsym.c:"), "%s",
		  out);
	cr_assert(strstr(out, "husk-sentry: CRASH: SIGSEGV (signal 11) at address 0x0"), "%s", out);
	cr_assert(strstr(out, "husk-sentry: end of crash report"), "%s", out);
	cr_assert_null(strstr(out, "\nmodule "), "%s", out);
	free(out);
}

Test(runtime_crashsym, a_file_with_another_build_id_keeps_its_raw_frames)
{
	char *out = symbolize_self("0123456789abcdef0123456789abcdef01234567");

	cr_assert(strstr(out, "is not the file the sentry ran"), "%s", out);
	cr_assert_null(strstr(out, "crashsym_target"), "%s", out);
	cr_assert(strstr(out, "  #0  0x"), "%s", out);
	free(out);
}

Test(runtime_crashsym, a_module_that_is_not_a_regular_file_is_not_read)
{
	char dir[] = "/tmp/husk-crashsym.XXXXXX", fifo[64];
	char *raw, *out;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	/* Opening a FIFO for reading would block without O_NONBLOCK: this returns. */
	raw = raw_report(fifo, 0x1000, "none");
	out = symbolize(raw);
	cr_assert(strstr(out, "cannot be read"), "%s", out);
	cr_assert(strstr(out, "  #0  0x"), "%s", out);
	unlink(fifo);
	rmdir(dir);
	free(raw);
	free(out);
}

Test(runtime_crashsym, a_report_without_modules_is_returned_as_it_is)
{
	static const char raw[] =
		"husk-sentry: symbolizing nothing\n  #0  0x0000000000001234 ?+0x1234\n";
	size_t len = 0;
	char *out = crash_symbolize(raw, sizeof(raw) - 1, &len);

	cr_assert_not_null(out);
	cr_assert_eq(len, sizeof(raw) - 1);
	cr_assert(!memcmp(out, raw, len));
	free(out);
}
