/* SPDX-License-Identifier: Apache-2.0 */
/* husk spec [--bundle DIR] [--rootless]: writes a config.json template, as runc spec does. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/oci.h"

int cmd_spec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "rootless", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *bundle = ".";
	bool rootless = false;
	_cleanup_free_ char *json = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	int opt;
	size_t len;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+b:", longopts, NULL)) != -1) {
		if (opt == 'b')
			bundle = optarg;
		else if (opt == 'r')
			rootless = true;
		else
			return 1;
	}
	if (asprintf(&path, "%s/config.json", bundle) < 0)
		return oci_fail("out of memory");
	json = oci_config_default_json(rootless);
	if (!json)
		return oci_fail("out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST)
		return oci_fail("File %s exists. Remove it first", path);
	if (fd < 0)
		return oci_fail("%s: %s", path, strerror(errno));
	len = strlen(json);
	if (write(fd, json, len) != (ssize_t)len)
		return oci_fail("%s: %s", path, strerror(errno));
	return 0;
}
