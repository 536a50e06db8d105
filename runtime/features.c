/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk features: the runtime-spec features document. Its annotations say which platforms the
 * sentry has (dev.husk.platforms) and which one auto picks here (dev.husk.platform.auto), as
 * husk-sentry --print-platforms reports them; without a sentry they are left out.
 */
#include <stdio.h>
#include <stdlib.h>

#include "oci-spec/state.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"

int cmd_features(int argc, char **argv)
{
	char names[128], auto_name[32];
	int ret = runtime_platforms_query(names, sizeof(names), auto_name, sizeof(auto_name));
	char *json = oci_features_json(ret == 0 ? names : NULL, ret == 0 ? auto_name : NULL);

	if (!json)
		return oci_fail("out of memory");
	printf("%s\n", json);
	free(json);
	return 0;
}
