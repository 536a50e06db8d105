/* SPDX-License-Identifier: Apache-2.0 */
/* loader_parse_shebang(): the `#!` line as Linux's binfmt_script parses it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "sentry/loader/loader.h"

struct parsed {
	int ret;
	bool has_arg;
	char interp[LOADER_SHEBANG_MAX];
	char arg[LOADER_SHEBANG_MAX];
};

static struct parsed parse_n(const char *buf, size_t len)
{
	struct parsed p;

	memset(&p, 0x55, sizeof(p));
	p.ret = loader_parse_shebang(buf, len, p.interp, sizeof(p.interp), p.arg, sizeof(p.arg),
				     &p.has_arg);
	return p;
}

static struct parsed parse(const char *s)
{
	return parse_n(s, strlen(s));
}

Test(shebang, interpreter_alone)
{
	struct parsed p = parse("#!/bin/sh\necho hi\n");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_not(p.has_arg);
}

Test(shebang, interpreter_and_argument)
{
	struct parsed p = parse("#!/usr/bin/python3 -u\nprint(1)\n");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/usr/bin/python3");
	cr_assert(p.has_arg);
	cr_assert_str_eq(p.arg, "-u");
}

Test(shebang, leading_and_trailing_spaces_and_tabs_are_dropped)
{
	struct parsed p = parse("#! \t /bin/sh \t -e \t \nrest");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert(p.has_arg);
	cr_assert_str_eq(p.arg, "-e");
}

Test(shebang, trailing_spaces_after_the_name_give_no_argument)
{
	struct parsed p = parse("#!/bin/sh   \t\n");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_not(p.has_arg);
}

Test(shebang, tab_separates_the_argument)
{
	struct parsed p = parse("#!/bin/sh\t-x\n");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_str_eq(p.arg, "-x");
}

Test(shebang, the_rest_of_the_line_is_one_argument)
{
	struct parsed p = parse("#!/usr/bin/env -S python3  -u\tx\n");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/usr/bin/env");
	cr_assert(p.has_arg);
	cr_assert_str_eq(p.arg, "-S python3  -u\tx");
}

Test(shebang, carriage_return_stays_in_the_name)
{
	/* Linux does not strip \r: a DOS script names "/bin/sh\r", which then does not exist. */
	struct parsed p = parse("#!/bin/sh\r\n");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh\r");
}

Test(shebang, no_newline_in_a_short_file)
{
	struct parsed p = parse("#!/bin/sh -x");

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_str_eq(p.arg, "-x");
}

Test(shebang, only_the_given_length_is_read)
{
	/* The buffer goes on, but the file is 9 bytes long. */
	struct parsed p = parse_n("#!/bin/shXXXX\n", 9);

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_not(p.has_arg);
}

Test(shebang, nul_ends_the_interpreter)
{
	struct parsed p = parse_n("#!/bin/sh\0 -x\n", 14);

	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_not(p.has_arg);
}

Test(shebang, empty_interpreter)
{
	cr_assert_eq(parse("#!\n/bin/sh\n").ret, -ENOEXEC);
	cr_assert_eq(parse("#!   \t \n").ret, -ENOEXEC);
	cr_assert_eq(parse("#!").ret, -ENOEXEC);
	cr_assert_eq(parse_n("#!\0/bin/sh\n", 11).ret, -ENOEXEC);
	cr_assert_eq(parse_n("#! \0/bin/sh\n", 12).ret, -ENOEXEC);
}

Test(shebang, not_a_script)
{
	cr_assert_eq(parse("\x7f"
			   "ELF")
			     .ret,
		     -ENOEXEC);
	cr_assert_eq(parse("# !/bin/sh\n").ret, -ENOEXEC);
	cr_assert_eq(parse("#").ret, -ENOEXEC);
	cr_assert_eq(parse_n("#!/bin/sh\n", 1).ret, -ENOEXEC);
}

Test(shebang, interpreter_longer_than_the_buffer_is_refused)
{
	char buf[400];

	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "#!/", 3);
	buf[sizeof(buf) - 1] = '\n';
	cr_assert_eq(parse_n(buf, sizeof(buf)).ret, -ENOEXEC);
}

Test(shebang, interpreter_filling_the_buffer_exactly_is_refused)
{
	/* 256 bytes, no newline and no terminator: the name may be cut. */
	char buf[LOADER_SHEBANG_MAX];

	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "#!/", 3);
	cr_assert_eq(parse_n(buf, sizeof(buf)).ret, -ENOEXEC);
}

Test(shebang, all_spaces_without_newline_is_refused)
{
	char buf[300];

	memset(buf, ' ', sizeof(buf));
	memcpy(buf, "#!", 2);
	cr_assert_eq(parse_n(buf, sizeof(buf)).ret, -ENOEXEC);
}

Test(shebang, long_argument_is_truncated_not_refused)
{
	char buf[400];
	struct parsed p;

	memset(buf, 'b', sizeof(buf));
	memcpy(buf, "#!/bin/sh ", 10);
	buf[sizeof(buf) - 1] = '\n';
	p = parse_n(buf, sizeof(buf));
	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert(p.has_arg);
	/* Linux keeps bytes 10..254: the last byte of the buffer becomes the NUL. */
	cr_assert_eq(strlen(p.arg), LOADER_SHEBANG_MAX - 1 - 10);
}

Test(shebang, newline_beyond_256_bytes_is_not_seen)
{
	char buf[300];
	struct parsed p;

	memset(buf, ' ', sizeof(buf));
	memcpy(buf, "#!/bin/sh", 9);
	buf[280] = '\n';
	p = parse_n(buf, sizeof(buf));
	cr_assert_eq(p.ret, 0);
	cr_assert_str_eq(p.interp, "/bin/sh");
	cr_assert_not(p.has_arg);
}

Test(shebang, line_of_exactly_256_bytes_with_newline)
{
	char buf[LOADER_SHEBANG_MAX + 10];
	struct parsed p;

	memset(buf, 'c', sizeof(buf));
	memcpy(buf, "#!/bin/sh ", 10);
	buf[LOADER_SHEBANG_MAX - 1] = '\n';
	p = parse_n(buf, sizeof(buf));
	cr_assert_eq(p.ret, 0);
	cr_assert_eq(strlen(p.arg), LOADER_SHEBANG_MAX - 1 - 10);
}

Test(shebang, small_output_buffers_give_enametoolong)
{
	char interp[4], arg[LOADER_SHEBANG_MAX];
	bool has_arg;

	cr_assert_eq(loader_parse_shebang("#!/bin/sh\n", 10, interp, sizeof(interp), arg,
					  sizeof(arg), &has_arg),
		     -ENAMETOOLONG);
	cr_assert_eq(loader_parse_shebang("#!/bin\n", 7, interp, sizeof(interp), arg, sizeof(arg),
					  &has_arg),
		     -ENAMETOOLONG);
	cr_assert_eq(loader_parse_shebang("#!/bi\n", 6, interp, sizeof(interp), arg, sizeof(arg),
					  &has_arg),
		     0);
	cr_assert_str_eq(interp, "/bi");
}
