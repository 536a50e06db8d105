/* SPDX-License-Identifier: Apache-2.0 */
/* husk features: the runtime-spec features document. */
#include <stdio.h>
#include <stdlib.h>

#include "oci-spec/state.h"
#include "runtime/oci.h"

int cmd_features(int argc, char **argv)
{
	char *json = oci_features_json();

	if (!json)
		return oci_fail("out of memory");
	printf("%s\n", json);
	free(json);
	return 0;
}
