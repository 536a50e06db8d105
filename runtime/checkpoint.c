/* SPDX-License-Identifier: Apache-2.0 */
/* husk checkpoint / restore: not supported yet (the sentry's state would be saved, as gVisor
 * does, rather than the host processes' as CRIU does). */
#include "runtime/oci.h"

int cmd_checkpoint(int argc, char **argv)
{
	return oci_fail("checkpoint is not supported yet by husk");
}

int cmd_restore(int argc, char **argv)
{
	return oci_fail("restore is not supported yet by husk");
}
