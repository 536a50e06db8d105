/* SPDX-License-Identifier: Apache-2.0 */
/* husk resume ID: thaws a paused container. */
#include "runtime/oci.h"

int cmd_resume(int argc, char **argv)
{
	if (argc != 2)
		return oci_fail("resume: expected exactly one container id");
	return oci_set_frozen(argv[1], false);
}
