/* SPDX-License-Identifier: Apache-2.0 */
/* husk serve's request validation: unknown fields, types, ranges, guest paths. */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/serve/serve.h"

/* json.c's helpers do not use the server; the symbol is still declared extern. */
struct serve serve;

static json_t *parse(const char *text)
{
	struct serve_err e = { 0 };
	json_t *v = serve_parse_body(text, strlen(text), &e);

	cr_assert_not_null(v, "%s: %s", text, e.msg);
	return v;
}

Test(serve_json, empty_body_is_an_empty_object)
{
	struct serve_err e = { 0 };
	json_t *v = serve_parse_body(NULL, 0, &e);

	cr_assert(json_is_object(v) && json_object_size(v) == 0);
	json_decref(v);
}

Test(serve_json, malformed_and_non_object_bodies_are_400)
{
	static const char *const bad[] = { "{", "[1]", "7", "\"x\"", "{\"a\":1,\"a\":2}", "\xff" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct serve_err e = { 0 };

		cr_assert_null(serve_parse_body(bad[i], strlen(bad[i]), &e), "%s", bad[i]);
		cr_assert_eq(e.status, 400);
	}
}

Test(serve_json, unknown_field_is_named_with_its_path)
{
	static const char *const allowed[] = { "memory_bytes", "pids", NULL };
	json_t *v = parse("{\"pids\": 1, \"cpu\": 2}");
	struct serve_err e = { 0 };

	cr_assert_eq(serve_check_fields(v, "limits", allowed, &e), -1);
	cr_assert_eq(e.status, 400);
	cr_assert_str_eq(e.msg, "unknown field \"limits.cpu\"");
	json_decref(v);
}

Test(serve_json, known_fields_pass)
{
	static const char *const allowed[] = { "memory_bytes", "pids", NULL };
	json_t *v = parse("{\"pids\": 1, \"memory_bytes\": 2}");
	struct serve_err e = { 0 };

	cr_assert_eq(serve_check_fields(v, "", allowed, &e), 0);
	json_decref(v);
}

Test(serve_json, integers_are_typed_and_ranged)
{
	json_t *v = parse("{\"a\": 5, \"b\": \"5\", \"c\": 5.5, \"d\": 5.0, \"e\": 99}");
	struct serve_err e = { 0 };
	int64_t out = -1;

	cr_assert_eq(serve_get_int(v, "", "a", 0, 10, &out, &e), 0);
	cr_assert_eq(out, 5);
	cr_assert_eq(serve_get_int(v, "", "b", 0, 10, &out, &e), -1);
	cr_assert_str_eq(e.msg, "field \"b\": expected an integer, got a string");
	cr_assert_eq(serve_get_int(v, "", "c", 0, 10, &out, &e), -1);
	cr_assert_eq(serve_get_int(v, "", "d", 0, 10, &out, &e), 0);
	cr_assert_eq(out, 5);
	cr_assert_eq(serve_get_int(v, "x", "e", 0, 10, &out, &e), -1);
	cr_assert_str_eq(e.msg, "field \"x.e\": 99 is out of range (0 to 10)");
	out = 42;
	cr_assert_eq(serve_get_int(v, "", "absent", 0, 10, &out, &e), 0);
	cr_assert_eq(out, 42, "an absent field leaves the default");
	json_decref(v);
}

Test(serve_json, string_maps_want_strings)
{
	json_t *v = parse("{\"env\": {\"A\": \"1\", \"B\": 2}, \"l\": {\"=x\": \"1\"}}");
	struct serve_err e = { 0 };
	json_t *out = NULL;

	cr_assert_eq(serve_get_strmap(v, "", "env", &out, &e), -1);
	cr_assert_str_eq(e.msg, "field \"env.B\": expected a string, got an integer");
	cr_assert_eq(serve_get_strmap(v, "", "l", &out, &e), -1);
	json_decref(v);
}

Test(serve_json, strings_with_nul_are_refused)
{
	static const char text[] = "{\"s\": \"a\\u0000b\"}";
	json_t *v = json_loads(text, JSON_ALLOW_NUL, NULL);
	struct serve_err e = { 0 };
	const char *out = NULL;

	/* The parser refuses them, and a getter would too. */
	cr_assert_null(serve_parse_body(text, strlen(text), &e));
	cr_assert_eq(e.status, 400);
	e.status = 0;
	cr_assert_not_null(v);
	cr_assert_eq(serve_get_string(v, "", "s", &out, &e), -1);
	cr_assert_eq(e.status, 400);
	json_decref(v);
}

Test(serve_json, guest_paths)
{
	static const char *const good[] = { "/", "/a", "/a/b..c", "/a/.../b", "/..a", "//x/" };
	static const char *const bad[] = { "", "a", "./a", "/..", "/a/../b", "/a/..", NULL };
	struct serve_err e = { 0 };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert_eq(serve_check_guest_path(good[i], &e), 0, "%s: %s", good[i], e.msg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.status = 0;
		cr_assert_eq(serve_check_guest_path(bad[i], &e), -1, "%s",
			     bad[i] ? bad[i] : "NULL");
		cr_assert_eq(e.status, 400);
	}
}

Test(serve_json, ids_have_their_shape)
{
	char id[16];

	serve_new_id("sb-", id, sizeof(id));
	cr_assert_eq(strlen(id), 15);
	cr_assert_eq(strncmp(id, "sb-", 3), 0);
	cr_assert_eq(strspn(id + 3, "0123456789abcdef"), 12);
}

Test(serve_json, times_are_rfc3339_utc)
{
	char buf[40];

	cr_assert_str_eq(serve_time(0.25, buf, sizeof(buf)), "1970-01-01T00:00:00.250Z");
	cr_assert_str_eq(serve_time(1700000000, buf, sizeof(buf)), "2023-11-14T22:13:20.000Z");
}
