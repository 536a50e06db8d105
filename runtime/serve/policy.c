/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: the policy thread and /metrics. Once a second the thread looks at every sandbox:
 * a sentry that died makes it "failed"; timeout_s after creation it is deleted; idle (no exec
 * or files call in flight, none for pause_after_idle_s) it is paused; idle for
 * delete_after_s it is deleted. Every 5 s expired logs are removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/serve/serve.h"

const double serve_hist_bounds[11] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };

void metrics_exec_done(double d)
{
	size_t i;

	pthread_mutex_lock(&serve.lock);
	serve.execs++;
	serve.exec_sum += d;
	for (i = 0; i < 11 && d > serve_hist_bounds[i]; i++)
		;
	serve.exec_hist[i]++;
	pthread_mutex_unlock(&serve.lock);
}

/* A number from the record's idle policy, or 0. */
static double idle_num(json_t *rec, const char *key)
{
	return json_number_value(json_object_get(json_object_get(rec, "idle"), key));
}

static void policy_tick(void)
{
	size_t n;
	struct sandbox **v = sandbox_all(&n);
	double now = serve_now();

	for (size_t i = 0; i < n; i++) {
		struct sandbox *sb = v[i];
		double timeout, pause_after, delete_after, idle_for;
		enum sandbox_state st;
		bool hibernate;
		int busy;

		pthread_mutex_lock(&sb->lock);
		sandbox_refresh_state(sb);
		st = sb->state;
		busy = sb->busy;
		timeout = json_number_value(json_object_get(sb->rec, "timeout_s"));
		pause_after = idle_num(sb->rec, "pause_after_idle_s");
		delete_after = idle_num(sb->rec, "delete_after_s");
		hibernate = json_is_true(
			json_object_get(json_object_get(sb->rec, "idle"), "hibernate"));
		idle_for = now - sb->last_active;
		pthread_mutex_unlock(&sb->lock);
		if (st == SB_CREATING || st == SB_DELETED)
			continue;
		if ((timeout > 0 && now - sb->created >= timeout) ||
		    (delete_after > 0 && !busy && idle_for >= delete_after)) {
			sandbox_delete(sb);
			continue;
		}
		if (st == SB_RUNNING && pause_after > 0 && !busy && idle_for >= pause_after) {
			struct serve_err e;

			if (hibernate)
				sandbox_hibernate(sb, &e);
			else
				sandbox_set_paused(sb, true, &e);
		}
	}
	sandbox_put_all(v, n);
}

static void *policy_thread(void *arg)
{
	unsigned ticks = 0;

	while (!serve.stopping) {
		policy_tick();
		if (ticks++ % 5 == 0)
			logs_expire();
		sleep(1);
	}
	return NULL;
}

void policy_start(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, policy_thread, NULL) == 0)
		pthread_detach(t);
}

int route_metrics(struct MHD_Connection *conn)
{
	char *buf = NULL;
	size_t len = 0, n;
	FILE *f = open_memstream(&buf, &len);
	struct sandbox **v;
	unsigned counts[6] = { 0 };
	uint64_t hist[12], creations, execs, cum = 0;
	double sum;
	int ret;

	if (!f)
		return MHD_NO;
	v = sandbox_all(&n);
	pthread_mutex_lock(&serve.lock);
	memcpy(hist, serve.exec_hist, sizeof(hist));
	creations = serve.creations;
	execs = serve.execs;
	sum = serve.exec_sum;
	pthread_mutex_unlock(&serve.lock);

	fputs("# HELP husk_sandbox_cpu_seconds_total Guest CPU time of a sandbox.\n"
	      "# TYPE husk_sandbox_cpu_seconds_total counter\n",
	      f);
	{
		/* Per-sandbox series; the states are counted on the way. */
		char *mem = NULL, *sys = NULL, *flt = NULL, *gop = NULL, *gby = NULL, *egr = NULL;
		size_t ml = 0, sl = 0, fl = 0, gl = 0, bl = 0, el = 0;
		FILE *fm = open_memstream(&mem, &ml), *fs = open_memstream(&sys, &sl),
		     *ff = open_memstream(&flt, &fl), *fg = open_memstream(&gop, &gl),
		     *fb = open_memstream(&gby, &bl), *fe = open_memstream(&egr, &el);

		for (size_t i = 0; i < n; i++) {
			json_t *o = sandbox_json(v[i]);
			json_t *u = json_object_get(o, "usage");
			const char *state = json_string_value(json_object_get(o, "state"));

			for (int s = 0; s < 6; s++)
				if (!strcmp(state, sandbox_state_name((enum sandbox_state)s)))
					counts[s]++;
			fprintf(f,
				"husk_sandbox_cpu_seconds_total{sandbox=\"%s\",mode=\"user\"} %.6f\n",
				v[i]->id, json_number_value(json_object_get(u, "cpu_user_s")));
			fprintf(f,
				"husk_sandbox_cpu_seconds_total{sandbox=\"%s\",mode=\"system\"} %.6f\n",
				v[i]->id, json_number_value(json_object_get(u, "cpu_system_s")));
			fprintf(fm, "husk_sandbox_memory_bytes{sandbox=\"%s\"} %lld\n", v[i]->id,
				(long long)json_integer_value(json_object_get(u, "memory_bytes")));
			fprintf(fs, "husk_sandbox_syscalls_total{sandbox=\"%s\"} %lld\n", v[i]->id,
				(long long)json_integer_value(json_object_get(u, "syscalls")));
			fprintf(ff, "husk_sandbox_faults_total{sandbox=\"%s\"} %lld\n", v[i]->id,
				(long long)json_integer_value(json_object_get(u, "faults")));
			fprintf(fg, "husk_sandbox_gofer_ops_total{sandbox=\"%s\"} %lld\n", v[i]->id,
				(long long)json_integer_value(json_object_get(u, "gofer_ops")));
			fprintf(fb, "husk_sandbox_gofer_bytes_total{sandbox=\"%s\"} %lld\n",
				v[i]->id,
				(long long)json_integer_value(json_object_get(u, "gofer_bytes")));
			for (const char *const *w =
				     (const char *const[]){ "allowed", "denied", NULL };
			     *w; w++) {
				char key[32];

				snprintf(key, sizeof(key), "egress_%s", *w);
				fprintf(fe,
					"husk_sandbox_egress_connections_total{sandbox=\"%s\","
					"verdict=\"%s\"} %lld\n",
					v[i]->id, *w,
					(long long)json_integer_value(json_object_get(u, key)));
			}
			json_decref(o);
		}
		fclose(fm);
		fclose(fs);
		fclose(ff);
		fclose(fg);
		fclose(fe);
		fclose(fb);
		fprintf(f,
			"# HELP husk_sandbox_memory_bytes Guest memory the sentry holds.\n"
			"# TYPE husk_sandbox_memory_bytes gauge\n%s"
			"# HELP husk_sandbox_syscalls_total System calls the guest made.\n"
			"# TYPE husk_sandbox_syscalls_total counter\n%s"
			"# HELP husk_sandbox_faults_total Page faults the sentry handled.\n"
			"# TYPE husk_sandbox_faults_total counter\n%s"
			"# HELP husk_sandbox_gofer_ops_total Messages the sentry sent its gofers.\n"
			"# TYPE husk_sandbox_gofer_ops_total counter\n%s"
			"# HELP husk_sandbox_gofer_bytes_total Bytes of gofer messages and replies.\n"
			"# TYPE husk_sandbox_gofer_bytes_total counter\n%s"
			"# HELP husk_sandbox_egress_connections_total Guest connections off the "
			"sandbox's loopback, by the egress policy's verdict.\n"
			"# TYPE husk_sandbox_egress_connections_total counter\n%s",
			mem ? mem : "", sys ? sys : "", flt ? flt : "", gop ? gop : "",
			gby ? gby : "", egr ? egr : "");
		free(egr);
		free(gop);
		free(gby);
		free(mem);
		free(sys);
		free(flt);
	}
	sandbox_put_all(v, n);
	fputs("# HELP husk_sandboxes Sandboxes by state.\n# TYPE husk_sandboxes gauge\n", f);
	for (int s = SB_RUNNING; s <= SB_FAILED; s++)
		fprintf(f, "husk_sandboxes{state=\"%s\"} %u\n",
			sandbox_state_name((enum sandbox_state)s), counts[s]);
	fprintf(f,
		"# HELP husk_sandbox_creations_total Sandboxes created.\n"
		"# TYPE husk_sandbox_creations_total counter\n"
		"husk_sandbox_creations_total %llu\n"
		"# HELP husk_exec_total Execs run.\n"
		"# TYPE husk_exec_total counter\n"
		"husk_exec_total %llu\n"
		"# HELP husk_exec_duration_seconds Exec durations.\n"
		"# TYPE husk_exec_duration_seconds histogram\n",
		(unsigned long long)creations, (unsigned long long)execs);
	for (int i = 0; i < 11; i++) {
		cum += hist[i];
		fprintf(f, "husk_exec_duration_seconds_bucket{le=\"%g\"} %llu\n",
			serve_hist_bounds[i], (unsigned long long)cum);
	}
	cum += hist[11];
	fprintf(f,
		"husk_exec_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		"husk_exec_duration_seconds_sum %.6f\n"
		"husk_exec_duration_seconds_count %llu\n",
		(unsigned long long)cum, sum, (unsigned long long)cum);
	fclose(f);
	ret = serve_reply_bytes(conn, 200, "text/plain; version=0.0.4; charset=utf-8", buf, len);
	free(buf);
	return ret;
}
