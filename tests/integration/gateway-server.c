/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-gateway-test: runtime/serve/gateway.c alone, for tests/integration/gateway.sh, without
 * the rest of husk serve.
 *
 *   husk-gateway-test --socket PATH [--secret SPEC]... [--gateway-ca FILE]
 *                     [--gateway-resolve HOST:IP]... [--allow ID=NAME[,NAME]...]...
 *
 * Listens, prints "ready" on stdout, and serves until SIGTERM or SIGINT. On SIGUSR1, and
 * before it exits, prints "stats ID forwarded=N refused=N failed=N" for each --allow ID.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/serve/gateway.h"

#define MAX_OPTS 32

static void print_stats(struct gateway *g, char **ids, int nids)
{
	for (int i = 0; i < nids; i++) {
		struct gateway_stats st;

		if (gateway_get_stats(g, ids[i], &st) == 0)
			printf("stats %s forwarded=%llu refused=%llu failed=%llu\n", ids[i],
			       (unsigned long long)st.forwarded, (unsigned long long)st.refused,
			       (unsigned long long)st.failed);
		else
			printf("stats %s unknown\n", ids[i]);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "secret", required_argument, NULL, 'S' },
		{ "gateway-ca", required_argument, NULL, 'c' },
		{ "gateway-resolve", required_argument, NULL, 'r' },
		{ "allow", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct gateway_secret secrets[MAX_OPTS];
	const char *resolve[MAX_OPTS];
	char *allow[MAX_OPTS], *ids[MAX_OPTS];
	struct gateway_config cfg = { .secrets = secrets, .resolve = resolve };
	const char *sock = NULL;
	int nallow = 0, c, sig;
	struct gateway *g;
	char why[512];
	sigset_t set;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if ((c == 'S' && cfg.nsecrets == MAX_OPTS) ||
		    (c == 'r' && cfg.nresolve == MAX_OPTS) || (c == 'a' && nallow == MAX_OPTS)) {
			fprintf(stderr, "husk-gateway-test: too many options\n");
			return 2;
		}
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'S':
			if (gateway_parse_secret(optarg, &secrets[cfg.nsecrets], why, sizeof(why)) <
			    0) {
				fprintf(stderr, "husk-gateway-test: %s\n", why);
				return 2;
			}
			cfg.nsecrets++;
			break;
		case 'c':
			cfg.ca_file = optarg;
			break;
		case 'r':
			resolve[cfg.nresolve++] = optarg;
			break;
		case 'a':
			allow[nallow++] = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!sock) {
		fprintf(stderr, "husk-gateway-test: --socket PATH is needed\n");
		return 2;
	}
	g = gateway_new(&cfg, why, sizeof(why));
	for (int i = 0; i < cfg.nsecrets; i++)
		gateway_secret_clear(&secrets[i]);
	if (!g) {
		fprintf(stderr, "husk-gateway-test: %s\n", why);
		return 2;
	}
	for (int i = 0; i < nallow; i++) {
		char *eq = strchr(allow[i], '='), *names[MAX_OPTS], *save = NULL;
		int n = 0;

		if (!eq) {
			fprintf(stderr, "husk-gateway-test: --allow %s: expected ID=NAME,...\n",
				allow[i]);
			return 2;
		}
		*eq = 0;
		ids[i] = allow[i];
		for (char *t = strtok_r(eq + 1, ",", &save); t && n < MAX_OPTS;
		     t = strtok_r(NULL, ",", &save))
			names[n++] = t;
		if (gateway_allow(g, ids[i], (const char *const *)names, n) < 0) {
			fprintf(stderr, "husk-gateway-test: --allow %s: no such secret\n", ids[i]);
			return 2;
		}
	}
	/* Blocked before the gateway's threads start, so that they inherit the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (gateway_listen(g, sock, why, sizeof(why)) < 0) {
		fprintf(stderr, "husk-gateway-test: %s\n", why);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	while (sigwait(&set, &sig) == 0 && sig == SIGUSR1)
		print_stats(g, ids, nallow);
	print_stats(g, ids, nallow);
	gateway_free(g);
	return 0;
}
