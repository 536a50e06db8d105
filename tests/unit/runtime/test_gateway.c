/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's --secret parsing, secrets given twice, allowances and per-sandbox counters. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/serve/gateway.h"

static char dir[] = "/tmp/husk-gw-unit.XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Writes text to dir/name; returns the path (static buffer of the caller's). */
static const char *file_with(const char *name, const char *text, char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Parses tmpl with its "%s" replaced by path. */
static int parse(const char *tmpl, const char *path, struct gateway_secret *s, char *why)
{
	const char *at = strstr(tmpl, "%s");
	char spec[512];

	cr_assert_not_null(at);
	snprintf(spec, sizeof(spec), "%.*s%s%s", (int)(at - tmpl), tmpl, path, at + 2);
	return gateway_parse_secret(spec, s, why, 256);
}

TestSuite(gateway, .init = setup, .fini = teardown);

Test(gateway, secret_spec_is_parsed_and_the_value_read_without_its_newline)
{
	struct gateway_secret s;
	char path[128], why[256] = "";

	file_with("k", "tok-123\n", path, sizeof(path));
	cr_assert_eq(
		parse("GH=@%s,host=API.GitHub.com.,host=uploads.github.com,header=Authorization,"
		      "prefix=Bearer ",
		      path, &s, why),
		0, "%s", why);
	cr_assert_str_eq(s.name, "GH");
	cr_assert_str_eq(s.value, "tok-123");
	cr_assert_eq(s.nhosts, 2);
	cr_assert_str_eq(s.hosts[0], "api.github.com");
	cr_assert_str_eq(s.hosts[1], "uploads.github.com");
	cr_assert_str_eq(s.header, "Authorization");
	cr_assert_str_eq(s.prefix, "Bearer ");
	gateway_secret_clear(&s);
	cr_assert_null(s.value);
}

Test(gateway, no_prefix_is_empty)
{
	struct gateway_secret s;
	char path[128], why[256] = "";

	file_with("k", "v", path, sizeof(path));
	cr_assert_eq(parse("K=@%s,host=a.test,header=X-Key", path, &s, why), 0, "%s", why);
	cr_assert_str_eq(s.prefix, "");
	gateway_secret_clear(&s);
}

Test(gateway, bad_specs_are_refused_with_a_reason_that_never_holds_the_value)
{
	static const char *const bad[] = {
		"K=@%s,header=X-Key", /* no host */
		"K=@%s,host=a.test", /* no header */
		"K=@%s,host=a.test,header=Host", /* a header the gateway sets */
		"K=@%s,host=a.test,header=Content-Length",
		"K=@%s,host=a.test,header=X Key", /* not a token */
		"K=@%s,host=a_b.test,header=X-Key", /* not a DNS name */
		"K=@%s,host=a.test:8443,header=X-Key",
		"K=@%s,host=a.test,header=X-Key,header=Y", /* two headers */
		"K=@%s,host=a.test,header=X-Key,port=1", /* unknown option */
		"K/1=@%s,host=a.test,header=X-Key", /* a bad name */
		"=@%s,host=a.test,header=X-Key",
		"K=%s,host=a.test,header=X-Key", /* no @ */
	};
	char path[128];

	file_with("k", "s3cr3t-value\n", path, sizeof(path));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gateway_secret s;
		char why[256] = "";

		cr_assert_eq(parse(bad[i], path, &s, why), -EINVAL, "%s", bad[i]);
		cr_assert_neq(why[0], 0, "%s: no reason", bad[i]);
		cr_assert_null(strstr(why, "s3cr3t"), "%s: %s", bad[i], why);
		cr_assert_null(s.name);
	}
}

Test(gateway, values_that_would_break_the_header_are_refused)
{
	static const char *const bad[] = { "", "\n", "two\nlines\n", "cr\rhere", "nul\x01" };
	char path[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gateway_secret s;
		char why[256] = "";

		file_with("k", bad[i], path, sizeof(path));
		cr_assert_eq(parse("K=@%s,host=a.test,header=X-Key", path, &s, why), -EINVAL,
			     "value %zu", i);
	}
}

Test(gateway, a_missing_file_is_its_errno)
{
	struct gateway_secret s;
	char why[256] = "";

	cr_assert_eq(parse("K=@%s/none,host=a.test,header=X-Key", dir, &s, why), -ENOENT);
	cr_assert_neq(strstr(why, "/none"), NULL, "%s", why);
}

static struct gateway *two_secrets(struct gateway_secret s[2], bool same_name)
{
	struct gateway_config cfg = { .secrets = s, .nsecrets = 2 };
	char path[128], why[256] = "";
	struct gateway *g;

	file_with("k", "v", path, sizeof(path));
	cr_assert_eq(parse("A=@%s,host=a.test,header=X-Key", path, &s[0], why), 0, "%s", why);
	cr_assert_eq(parse(same_name ? "A=@%s,host=b.test,header=X-Key" :
				       "B=@%s,host=b.test,header=X-Key",
			   path, &s[1], why),
		     0, "%s", why);
	g = gateway_new(&cfg, why, sizeof(why));
	if (same_name) {
		cr_assert_null(g);
		cr_assert_str_eq(why, "--secret A: given twice");
	}
	gateway_secret_clear(&s[0]);
	gateway_secret_clear(&s[1]);
	return g;
}

Test(gateway, a_secret_given_twice_is_refused)
{
	struct gateway_secret s[2];

	two_secrets(s, true);
}

Test(gateway, allowances_name_known_secrets_and_counters_start_at_zero)
{
	struct gateway_secret s[2];
	struct gateway *g = two_secrets(s, false);
	const char *names[] = { "A", "B" }, *unknown[] = { "A", "C" };
	struct gateway_stats st = { 1, 1, 1 };

	cr_assert_not_null(g);
	cr_assert(gateway_has_secret(g, "B"));
	cr_assert_not(gateway_has_secret(g, "C"));
	cr_assert_eq(gateway_get_stats(g, "sb-1", &st), -ENOENT);
	cr_assert_eq(gateway_allow(g, "sb-1", unknown, 2), -ENOENT);
	cr_assert_eq(gateway_get_stats(g, "sb-1", &st), -ENOENT, "nothing changed");
	cr_assert_eq(gateway_allow(g, "sb-1", names, 2), 0);
	cr_assert_eq(gateway_allow(g, "sb-1", names, 1), 0, "replaced");
	cr_assert_eq(gateway_get_stats(g, "sb-1", &st), 0);
	cr_assert_eq(st.forwarded + st.refused + st.failed, 0);
	gateway_forget(g, "sb-1");
	cr_assert_eq(gateway_get_stats(g, "sb-1", &st), -ENOENT);
	gateway_free(g);
}

Test(gateway, a_bad_pin_or_ca_is_refused)
{
	const char *pins[] = { "a.test:not-an-ip" };
	struct gateway_config cfg = { .resolve = pins, .nresolve = 1 };
	char why[256] = "";

	cr_assert_null(gateway_new(&cfg, why, sizeof(why)));
	cr_assert_str_eq(why, "--gateway-resolve a.test:not-an-ip: not-an-ip is not an IP address");
	cfg.nresolve = 0;
	cfg.ca_file = "/nonexistent/ca.pem";
	cr_assert_null(gateway_new(&cfg, why, sizeof(why)));
	pins[0] = "a.test:[::1]";
	cfg.nresolve = 1;
	cfg.ca_file = NULL;
	struct gateway *g = gateway_new(&cfg, why, sizeof(why));
	cr_assert_not_null(g, "%s", why);
	gateway_free(g);
}
