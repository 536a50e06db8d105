/* SPDX-License-Identifier: Apache-2.0 */
/* husk serve: the sandbox registry (skeleton: sandboxes come in the next step). */
#include <string.h>

#include <microhttpd.h>

#include "runtime/serve/serve.h"

int sandbox_registry_load(void)
{
	return 0;
}

int route_sandboxes(struct MHD_Connection *conn, const char *method, char **seg, int nseg,
		    const char *body, size_t len)
{
	return serve_reply_error(conn, 404, "sandboxes are not implemented yet");
}

int route_templates(struct MHD_Connection *conn, const char *method, char **seg, int nseg,
		    const char *body, size_t len)
{
	return serve_reply_error(conn, 404, "templates are not implemented yet");
}

struct upload *upload_begin(struct MHD_Connection *conn, const char *id, const char *what,
			    struct serve_err *e)
{
	serve_err_set(e, 404, "no such sandbox: %s", id);
	return NULL;
}

int upload_feed(struct upload *u, const char *data, size_t len)
{
	return -1;
}

int upload_finish(struct MHD_Connection *conn, struct upload *u)
{
	return MHD_NO;
}

void upload_abort(struct upload *u)
{
}

void policy_start(void)
{
}

int route_metrics(struct MHD_Connection *conn)
{
	return serve_reply_bytes(conn, 200, "text/plain; version=0.0.4", "", 0);
}
