/* SPDX-License-Identifier: Apache-2.0 */
/* husk: the command-line runtime. Dispatches to one file per verb. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "runtime/runtime.h"

#ifndef HUSK_VERSION
#define HUSK_VERSION "0.0.0"
#endif

static void usage(FILE *out)
{
	fputs("usage: husk <command> [options]\n"
	      "\n"
	      "husk runs programs in a sandbox whose system calls are implemented by husk's own\n"
	      "userspace kernel (the sentry), with files served by a separate gofer process.\n"
	      "\n"
	      "commands:\n"
	      "  do [options] -- CMD [ARGS...]   run CMD in a new sandbox over a root filesystem\n"
	      "  syscalls                       print the system call table and its support levels\n"
	      "  --version                      print the version\n"
	      "\n"
	      "`husk do --help` describes the options of do.\n",
	      out);
}

int main(int argc, char **argv)
{
	log_set_name("husk");
	log_init_from_env();

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("husk version %s\nspec: 1.0.2\n", HUSK_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "do"))
		return cmd_do(argc - 1, argv + 1);
	if (!strcmp(argv[1], "syscalls"))
		return cmd_syscalls(argc - 1, argv + 1);
	fprintf(stderr, "husk: unknown command '%s'; see `husk --help`\n", argv[1]);
	return 2;
}
