#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a conformance program inside husk: run-in-husk.sh HUSK PROG
# Prints the program's output; exits 0 only if husk exits 0 and the last line of the output is
# `N passed, 0 failed`.
set -u

if [ "$#" -ne 2 ]; then
	echo "usage: $0 HUSK PROG" >&2
	exit 2
fi
husk=$1
prog=$2
# The sandbox starts in its own / : give it the program's absolute host path (meson passes
# paths relative to the build directory).
case $prog in
/*) ;;
*) prog=$(pwd)/$prog ;;
esac

out=$("$husk" do -- "$prog")
status=$?
printf '%s\n' "$out"

last=$(printf '%s\n' "$out" | tail -n 1)
if [ "$status" -ne 0 ]; then
	echo "run-in-husk: $prog exited with status $status" >&2
	exit 1
fi
if ! printf '%s\n' "$last" | grep -Eq '^[0-9]+ passed, 0 failed$'; then
	echo "run-in-husk: $prog: last line is not 'N passed, 0 failed': $last" >&2
	exit 1
fi
exit 0
