/* SPDX-License-Identifier: Apache-2.0 */
/* husk state ID: the container's state as runc prints it. */
#include <stdio.h>
#include <stdlib.h>

#include "oci-spec/state.h"
#include "runtime/oci.h"

int cmd_state(int argc, char **argv)
{
	struct container c;
	struct oci_state s;
	char *json;

	if (argc != 2)
		return oci_fail("state: expected exactly one container id");
	if (oci_load_or_fail(argv[1], &c))
		return 1;
	container_oci_state(&c, container_status(&c), &s);
	json = oci_state_json(&s, OCI_STATE_RUNC);
	container_release(&c);
	if (!json)
		return oci_fail("out of memory");
	printf("%s\n", json);
	free(json);
	return 0;
}
