/* SPDX-License-Identifier: Apache-2.0 */
/* Id mappings (common/idmap.c): parsing with Linux's uid_map rules, and both directions. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/idmap.h"

Test(idmap, parses_extents_and_formats_them_back)
{
	struct idmap m;
	char buf[128];

	cr_assert_eq(idmap_parse("0:100000:65536,65536:1000:1", &m), 0);
	cr_assert_eq(m.n, 2);
	cr_assert_eq(m.e[0].inside, 0);
	cr_assert_eq(m.e[0].outside, 100000);
	cr_assert_eq(m.e[0].count, 65536);
	cr_assert_eq(idmap_format(&m, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "0:100000:65536,65536:1000:1");
	cr_assert_eq(idmap_format(&m, buf, 10), -ENOSPC);
}

Test(idmap, refuses_what_a_uid_map_write_refuses)
{
	static const char *const bad[] = {
		"",
		"0:0",
		"0:0:0",
		"a:0:1",
		"0:0:1,",
		"0:0:1;1:1:1",
		"-1:0:1",
		"0:0:4294967297",
		"1:0:4294967295",
		"0:1:4294967295",
		"0:0:10,5:100:10", /* inside overlap */
		"0:0:10,20:5:10", /* outside overlap */
		"0:0:1 ",
	};
	struct idmap m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(idmap_parse(bad[i], &m), -EINVAL, "\"%s\"", bad[i]);
		cr_expect_eq(m.n, 0, "\"%s\" left extents", bad[i]);
	}
	cr_assert_eq(idmap_parse("0:0:4294967295", &m), 0);
}

Test(idmap, maps_both_ways_and_unmapped_ids_overflow)
{
	struct idmap m;
	uint32_t v;

	cr_assert_eq(idmap_parse("0:100000:1000,1000:5000:1", &m), 0);
	cr_assert(idmap_to_outside(&m, 0, &v));
	cr_assert_eq(v, 100000);
	cr_assert(idmap_to_outside(&m, 999, &v));
	cr_assert_eq(v, 100999);
	cr_assert(idmap_to_outside(&m, 1000, &v));
	cr_assert_eq(v, 5000);
	cr_assert_not(idmap_to_outside(&m, 1001, &v));
	cr_assert(idmap_to_inside(&m, 100007, &v));
	cr_assert_eq(v, 7);
	cr_assert(idmap_to_inside(&m, 5000, &v));
	cr_assert_eq(v, 1000);
	cr_assert_not(idmap_to_inside(&m, 0, &v));
	cr_assert_eq(idmap_to_inside_or_overflow(&m, 0), IDMAP_OVERFLOW_ID);
	cr_assert_eq(idmap_to_inside_or_overflow(&m, 100000), 0);
}

Test(idmap, an_empty_map_is_the_identity)
{
	struct idmap m = { 0 };
	uint32_t v;

	cr_assert(idmap_to_outside(&m, 1234, &v));
	cr_assert_eq(v, 1234);
	cr_assert(idmap_to_inside(&m, 0, &v));
	cr_assert_eq(v, 0);
}
