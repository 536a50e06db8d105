/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "oci-spec/config.h"
#include "runtime/oci.h"

/* runtime/namespaces.c prints through these (container.c); the last message is kept. */
static char last_msg[1024];

int oci_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	return 1;
}

void oci_warn(const char *fmt, ...)
{
	(void)fmt;
}

#define HEAD "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},"
#define ROOT "\"root\":{\"path\":\"rootfs\"}"

static struct oci_config *cfg(const char *linux_and_more)
{
	char json[2048];
	struct oci_config *c = NULL;
	struct oci_error err = { 0 };

	snprintf(json, sizeof(json), HEAD ROOT "%s}", linux_and_more);
	cr_assert_eq(oci_config_parse(json, strlen(json), &c, &err), 0, "%s", err.msg);
	return c;
}

Test(runtime_namespaces, network_mode_follows_the_namespace_entry_and_the_annotation_wins)
{
	struct oci_config *none = cfg(",\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}");
	struct oci_config *unlisted = cfg(",\"linux\":{\"namespaces\":[{\"type\":\"pid\"}]}");
	struct oci_config *path = cfg(
		",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/run/netns/x\"}]}");
	struct oci_config *annotated = cfg(
		",\"annotations\":{\"dev.husk.network\":\"none\"},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/run/netns/x\"}]}");

	cr_expect_str_eq(oci_network_mode(none), "none");
	cr_expect_str_eq(oci_network_mode(unlisted), "host");
	cr_expect_str_eq(oci_network_mode(path), "host");
	cr_expect_str_eq(oci_network_mode(annotated), "none");
	oci_config_free(none);
	oci_config_free(unlisted);
	oci_config_free(path);
	oci_config_free(annotated);
}

Test(runtime_namespaces, a_network_path_allows_the_pods_private_ranges_before_the_configs_rules)
{
	struct oci_config *path = cfg(
		",\"annotations\":{\"dev.husk.egress-allow\":\"203.0.113.5:443\"},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/run/netns/x\"}]}");
	struct oci_config *unlisted =
		cfg(",\"annotations\":{\"dev.husk.egress-allow\":\"203.0.113.5:443\"}");
	char buf[512];

	cr_expect_str_eq(oci_network_egress_allow(path, buf, sizeof(buf)),
			 "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7,"
			 "203.0.113.5:443");
	/* Shared with the host: the default denials stay. */
	cr_expect_str_eq(oci_network_egress_allow(unlisted, buf, sizeof(buf)), "203.0.113.5:443");
	oci_config_free(path);
	oci_config_free(unlisted);
}

Test(runtime_namespaces, paths_are_checked_for_their_type_with_runcs_words)
{
	struct oci_config *ok = cfg(
		",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/proc/self/ns/net\"},"
		"{\"type\":\"uts\",\"path\":\"/proc/self/ns/uts\"}]}");
	struct oci_config *wrong = cfg(
		",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/proc/self/ns/uts\"}]}");
	struct oci_config *missing = cfg(
		",\"linux\":{\"namespaces\":[{\"type\":\"ipc\",\"path\":\"/nonexistent/ns\"}]}");
	struct oci_config *file = cfg(
		",\"linux\":{\"namespaces\":[{\"type\":\"mount\",\"path\":\"/proc/self/stat\"}]}");

	cr_expect_eq(oci_namespaces_check(ok), 0, "%s", last_msg);
	cr_expect_eq(oci_namespaces_check(wrong), -EINVAL);
	cr_expect(strstr(last_msg, "failed to setns into net namespace: Invalid argument"), "%s",
		  last_msg);
	cr_expect(strstr(last_msg, "/proc/self/ns/uts is a uts namespace"), "%s", last_msg);
	cr_expect_eq(oci_namespaces_check(missing), -ENOENT);
	cr_expect(strstr(last_msg,
			 "namespace path: lstat /nonexistent/ns: no such file or directory"),
		  "%s", last_msg);
	cr_expect_eq(oci_namespaces_check(file), -EINVAL);
	cr_expect(strstr(last_msg, "failed to setns into mnt namespace"), "%s", last_msg);
	cr_expect_eq(oci_namespace_open(wrong, "uts"), -ENOENT); /* no such entry */
	oci_config_free(ok);
	oci_config_free(wrong);
	oci_config_free(missing);
	oci_config_free(file);
}

Test(runtime_namespaces, without_a_hostname_the_guest_gets_its_uts_namespaces)
{
	struct oci_config *unlisted = cfg("");
	struct oci_config *path = cfg(
		",\"linux\":{\"namespaces\":[{\"type\":\"uts\",\"path\":\"/proc/self/ns/uts\"}]}");
	struct utsname u;
	char buf[256];

	cr_assert_eq(uname(&u), 0);
	cr_expect_eq(oci_uts_hostname(unlisted, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, u.nodename);
	/* The path is this process's own UTS namespace: the same name, read by a child in it. */
	cr_expect_eq(oci_uts_hostname(path, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, u.nodename);
	oci_config_free(unlisted);
	oci_config_free(path);
}
