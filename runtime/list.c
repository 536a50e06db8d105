/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk list [-q] [--format table|json]: the containers under --root, as runc lists them
 * (a Go tabwriter table: columns padded to the widest cell plus 3 spaces, at least 12 wide).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci-spec/state.h"
#include "runtime/oci.h"

#define NCOLS 6

static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	bool quiet = false, json = false;
	struct container *cs = NULL;
	struct oci_state *st = NULL;
	char **ids = NULL;
	size_t n = 0, nids = 0;
	DIR *d;
	struct dirent *de;
	int opt;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+qf:", longopts, NULL)) != -1) {
		if (opt == 'q')
			quiet = true;
		else if (opt == 'f' && (!strcmp(optarg, "json") || !strcmp(optarg, "table")))
			json = !strcmp(optarg, "json");
		else
			return oci_fail("list: usage: husk list [-q] [--format table|json]");
	}
	d = opendir(oci_g.root);
	if (d) {
		while ((de = readdir(d))) {
			char **grown;

			if (de->d_name[0] == '.' || container_id_valid(de->d_name) < 0)
				continue;
			grown = realloc(ids, (nids + 1) * sizeof(char *));
			if (!grown)
				break;
			ids = grown;
			ids[nids] = strdup(de->d_name);
			if (ids[nids])
				nids++;
		}
		closedir(d);
	} else if (errno != ENOENT) {
		return oci_fail("%s: %s", oci_g.root, strerror(errno));
	}
	if (nids)
		qsort(ids, nids, sizeof(char *), id_cmp);
	cs = calloc(nids + 1, sizeof(*cs));
	st = calloc(nids + 1, sizeof(*st));
	if (!cs || !st)
		return oci_fail("out of memory");
	for (size_t i = 0; i < nids; i++) {
		/* A container being created or deleted right now may be half there: skip it. */
		if (container_load(ids[i], &cs[n]) < 0) {
			container_release(&cs[n]);
			continue;
		}
		container_oci_state(&cs[n], container_status(&cs[n]), &st[n]);
		/* Do not hold every container's lock while printing. */
		close(cs[n].lock_fd);
		cs[n].lock_fd = -1;
		n++;
	}
	if (quiet) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", st[i].id);
	} else if (json) {
		char *out = oci_state_list_json(st, n);

		/* runc prints null for no containers. */
		printf("%s\n", n ? (out ? out : "[]") : "null");
		free(out);
	} else {
		const char *hdr[NCOLS] = { "ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER" };
		char pid[16];
		size_t w[NCOLS];

		for (int col = 0; col < NCOLS; col++)
			w[col] = strlen(hdr[col]);
		for (size_t i = 0; i < n; i++) {
			const char *cell[NCOLS] = { st[i].id,	  pid,		 st[i].status,
						    st[i].bundle, st[i].created, st[i].owner };

			snprintf(pid, sizeof(pid), "%d", (int)st[i].pid);
			for (int col = 0; col < NCOLS; col++)
				if (strlen(cell[col]) > w[col])
					w[col] = strlen(cell[col]);
		}
		for (int col = 0; col < NCOLS; col++) {
			w[col] += 3;
			if (w[col] < 12)
				w[col] = 12;
		}
		for (size_t i = 0; i <= n; i++) {
			const char *row[NCOLS];

			if (i == 0) {
				memcpy(row, hdr, sizeof(row));
			} else {
				snprintf(pid, sizeof(pid), "%d", (int)st[i - 1].pid);
				row[0] = st[i - 1].id;
				row[1] = pid;
				row[2] = st[i - 1].status;
				row[3] = st[i - 1].bundle;
				row[4] = st[i - 1].created;
				row[5] = st[i - 1].owner;
			}
			/* The last column is not padded (tabwriter has no cell after it). */
			for (int col = 0; col < NCOLS - 1; col++)
				printf("%-*s", (int)w[col], row[col]);
			printf("%s\n", row[NCOLS - 1]);
		}
	}
	for (size_t i = 0; i < n; i++)
		container_release(&cs[i]);
	for (size_t i = 0; i < nids; i++)
		free(ids[i]);
	free(ids);
	free(cs);
	free(st);
	return 0;
}
