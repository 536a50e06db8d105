/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: config.json parsing (oci-spec/), from bytes to the validated spec the
 * runtime uses, then freed. Each input is a config.json document; it goes through what husk
 * create does with one (runtime/create.c, runtime/sandbox.c) up to the first host effect:
 * oci_config_parse (JSON, types, values, every section), the lookups the runtime makes on the
 * result (annotations, namespaces), the seccomp profile compiled to BPF by libseccomp
 * (oci_seccomp_compile, written to /dev/null), then oci_config_free. The same bytes also go to
 * oci_resources_parse (husk update -r FILE) and oci_resources_free. LeakSanitizer is on: a
 * path that forgets a string or a document is a finding.
 *
 * Oracles besides the sanitizers: a refused document has an error message; a parsed one has a
 * process with at least one argument.
 *
 * With CONFIG_FUZZ_VERBOSE set, why each refused document was refused is printed. With
 * CONFIG_FUZZ_SEEDS=DIR set, `husk spec`'s two documents (default and --rootless) are
 * written to DIR first; make-seeds.py adds the variants the integration tests make of them.
 * Build and run: tests/fuzz/config/run.sh SECONDS.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci-spec/config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int null_fd = -1;
static bool verbose; /* CONFIG_FUZZ_VERBOSE set: why each document was refused */

static void write_seed(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0)
		abort();
	fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("CONFIG_FUZZ_SEEDS");

	verbose = getenv("CONFIG_FUZZ_VERBOSE") != NULL;
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd < 0)
		abort();
	if (seeds) {
		char *def = oci_config_default_json(false),
		     *rootless = oci_config_default_json(true);

		if (!def || !rootless)
			abort();
		write_seed(seeds, "default.json", def);
		write_seed(seeds, "rootless.json", rootless);
		free(def);
		free(rootless);
	}
	return 0;
}

static const char *const ns_types[] = { "pid", "network", "mount",  "ipc",
					"uts", "user",	  "cgroup", "time" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_config *cfg = NULL;
	struct oci_resources res;
	struct oci_error err;
	volatile size_t sink = 0;

	memset(&err, 0, sizeof(err));
	int ret = oci_config_parse((const char *)data, size, &cfg, &err);

	if (ret == 0) {
		if (!cfg || !cfg->args || !cfg->args[0]) {
			fprintf(stderr, "fuzz_config: a parsed config without process.args\n");
			abort();
		}
		for (size_t i = 0; i < sizeof(ns_types) / sizeof(ns_types[0]); i++)
			sink += oci_config_namespace(cfg, ns_types[i]) != NULL;
		sink += oci_config_annotation(cfg, "dev.husk.platform") != NULL;
		sink += oci_config_annotation(cfg, "dev.husk.network") != NULL;
		for (size_t i = 0; i < cfg->nannotations; i++)
			sink += strlen(cfg->annotations[i].key) + strlen(cfg->annotations[i].value);
		for (size_t i = 0; i < cfg->nsysctl; i++)
			sink += strlen(cfg->sysctl[i].key) + strlen(cfg->sysctl[i].value);
		if (cfg->seccomp) {
			memset(&err, 0, sizeof(err));
			if (oci_seccomp_compile(cfg->seccomp, null_fd, &err) < 0 && !err.msg[0]) {
				fprintf(stderr, "fuzz_config: seccomp refused without a message\n");
				abort();
			}
		}
		oci_config_free(cfg);
	} else if (verbose) {
		fprintf(stderr, "fuzz_config: refused: %s\n", err.msg);
	}
	if (ret < 0 && !err.msg[0]) {
		fprintf(stderr, "fuzz_config: config refused without a message\n");
		abort();
	}

	memset(&res, 0, sizeof(res));
	memset(&err, 0, sizeof(err));
	if (oci_resources_parse((const char *)data, size, "fuzz", &res, &err) == 0)
		oci_resources_free(&res);
	(void)sink;
	return 0;
}
