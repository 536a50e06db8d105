/* SPDX-License-Identifier: Apache-2.0 */
/* A tiny program linked -static and -static-pie for the loader's tests. */
#include <stdio.h>

int main(int argc, char **argv)
{
	printf("%d %s\n", argc, argc > 0 ? argv[0] : "");
	return 0;
}
