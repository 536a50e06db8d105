/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime/guestview.c: the husk-sentry arguments made from config.json's mounts and devices
 * (--special-mount, --mount-label with the options as the kernel prints them, --device,
 * --device-rule with runc's defaults after the config's).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci-spec/config.h"
#include "runtime/guestview.h"

static int warnings;

/* runtime/container.c's, counted. */
void oci_warn(const char *fmt, ...);
void oci_warn(const char *fmt, ...)
{
	warnings++;
}

static struct oci_config *parse(const char *json)
{
	struct oci_error err = { "" };
	struct oci_config *c = NULL;

	cr_assert_eq(oci_config_parse(json, strlen(json), &c, &err), 0, "%s", err.msg);
	return c;
}

#define CONFIG(MOUNTS, LINUX)                                                           \
	"{\"ociVersion\": \"1.0.2\", \"process\": {\"args\": [\"sh\"], \"cwd\": \"/\"," \
	"\"user\": {\"uid\": 0, \"gid\": 0}}, \"root\": {\"path\": \"rootfs\"}, "       \
	"\"mounts\": " MOUNTS ", \"linux\": " LINUX "}"

Test(guestview, labels_say_what_the_kernel_prints)
{
	struct oci_config *c = parse(CONFIG(
		"[{\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
		" \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", \"size=65536k\"]},"
		" {\"destination\": \"/dev/pts\", \"type\": \"devpts\", \"source\": \"devpts\","
		" \"options\": [\"nosuid\", \"noexec\", \"newinstance\", \"ptmxmode=0666\","
		" \"mode=0620\", \"gid=5\"]},"
		" {\"destination\": \"/dev/shm\", \"type\": \"tmpfs\", \"source\": \"shm\","
		" \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"mode=1777\", \"size=1000\"]},"
		" {\"destination\": \"/a:b\", \"type\": \"tmpfs\", \"options\": [\"ro\", \"noatime\"]},"
		" {\"destination\": \"/sys\", \"type\": \"sysfs\", \"source\": \"sysfs\","
		" \"options\": [\"ro\", \"nosuid\"]}]",
		"{}"));
	const char *want[] = {
		"/dev:rw,nosuid:tmpfs:tmpfs:rw,size=65536k,mode=755:/",
		"/dev/pts:rw,nosuid,noexec,relatime:devpts:devpts:rw,gid=5,mode=620,ptmxmode=666:/",
		"/dev/shm:rw,nosuid,nodev,noexec,relatime:tmpfs:shm:rw,size=4k:/",
		"/a%3ab:ro,noatime:tmpfs:none:ro:/",
		"/sys:ro,nosuid,relatime:sysfs:sysfs:ro:/",
	};

	for (size_t i = 0; i < c->nmounts; i++) {
		char *l = guestview_label_arg(c, i);

		cr_assert_str_eq(l, want[i]);
		free(l);
	}
	oci_config_free(c);
}

Test(guestview, special_mounts_go_where_the_config_says)
{
	struct oci_config *c = parse(CONFIG(
		"[{\"destination\": \"/dev\", \"type\": \"tmpfs\", \"options\": [\"size=1m\","
		" \"mode=711\"]}, {\"destination\": \"/elsewhere/proc\", \"type\": \"proc\"},"
		" {\"destination\": \"/run\", \"type\": \"tmpfs\"},"
		" {\"destination\": \"/mq\", \"type\": \"mqueue\"}]",
		"{}"));
	char *s[4];

	for (int i = 0; i < 4; i++)
		s[i] = guestview_special_arg(c, (size_t)i);
	cr_assert_str_eq(s[0], "dev:/dev:size=1048576:mode=711");
	cr_assert_str_eq(s[1], "proc:/elsewhere/proc");
	cr_assert_null(s[2], "a tmpfs elsewhere is a --tmpfs");
	cr_assert_str_eq(s[3], "mqueue:/mq");
	for (int i = 0; i < 4; i++)
		free(s[i]);
	oci_config_free(c);
}

Test(guestview, a_bind_shows_its_host_filesystem_and_root)
{
	char dir[] = "/tmp/husk-guestview.XXXXXX", json[1024], want[256];
	struct oci_config *c;
	char *l, *root;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(json, sizeof(json),
		 CONFIG("[{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"%s\","
			" \"options\": [\"rbind\", \"ro\"]}]",
			"{}"),
		 dir);
	c = parse(json);
	l = guestview_label_arg(c, 0);
	rmdir(dir);
	/* DEST:OPTS:FSTYPE:SOURCE:SUPER:ROOT, the root being where the host mount has dir. */
	root = strrchr(l, ':');
	cr_assert_not_null(root);
	snprintf(want, sizeof(want), ":%s", dir);
	cr_assert(!strcmp(root, want) || strstr(root, strrchr(dir, '/')), "%s", l);
	cr_assert_eq(strncmp(l, "/data:ro,relatime:", 18), 0, "%s", l);
	free(l);
	oci_config_free(c);
}

struct argv_collect {
	char *v[64];
	int n;
};

static void collect(void *ctx, const char *arg)
{
	struct argv_collect *a = ctx;

	cr_assert_lt(a->n, 64);
	a->v[a->n++] = strdup(arg);
}

Test(guestview, devices_and_rules_then_runc_s_defaults)
{
	struct oci_config *c = parse(CONFIG(
		"[]", "{\"devices\": [{\"path\": \"/dev/mynull\", \"type\": \"c\", \"major\": 1,"
		      " \"minor\": 3, \"fileMode\": 400, \"uid\": 1, \"gid\": 2},"
		      " {\"path\": \"/dev/fifo\", \"type\": \"p\"},"
		      " {\"path\": \"relative\", \"type\": \"c\"}],"
		      " \"resources\": {\"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
		      " {\"allow\": true, \"type\": \"c\", \"major\": 10, \"access\": \"r\"}]}}"));
	struct argv_collect a = { .n = 0 };

	warnings = 0;
	guestview_device_args(c, collect, &a);
	cr_assert_eq(warnings, 1, "the relative path is skipped with a warning");
	cr_assert_str_eq(a.v[0], "--device=/dev/mynull:c:1:3:620:1:2");
	cr_assert_str_eq(a.v[1], "--device=/dev/fifo:p:0:0:666:0:0");
	cr_assert_str_eq(a.v[2], "--device-rule=deny:a:*:*:rwm");
	cr_assert_str_eq(a.v[3], "--device-rule=allow:c:10:*:r");
	cr_assert_str_eq(a.v[4], "--device-rule=allow:c:*:*:m", "runc's defaults come after");
	cr_assert_str_eq(a.v[a.n - 1], "--device-rule=allow:c:5:1:rwm");
	for (int i = 0; i < a.n; i++)
		free(a.v[i]);
	oci_config_free(c);
}

Test(guestview, no_rules_is_deny_all_and_the_defaults)
{
	struct oci_config *c = parse(CONFIG("[]", "{}"));
	struct argv_collect a = { .n = 0 };

	guestview_device_args(c, collect, &a);
	cr_assert_str_eq(a.v[0], "--device-rule=deny:a:*:*:rwm");
	cr_assert_str_eq(a.v[1], "--device-rule=allow:c:*:*:m");
	for (int i = 0; i < a.n; i++)
		free(a.v[i]);
	oci_config_free(c);
}
