/* SPDX-License-Identifier: Apache-2.0 */
/* husk-sentry: placeholder until the kernel lands. */
#include <stdio.h>

int main(void)
{
	fputs("husk-sentry: not built yet\n", stderr);
	return 1;
}
