#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a conformance program inside husk: run-in-husk.sh HUSK PROG
# Prints the program's output; exits 0 only if husk exits 0 and the last line of the output is
# `N passed, 0 failed`.
# With HUSK_PLATFORM set (meson sets it: one test per platform), husk runs on that platform, and
# the sentry's log must say so ("platform: NAME" at info), so that a run on the wrong platform
# fails instead of passing for the other one.
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

platform=${HUSK_PLATFORM:-}
[ "$platform" = auto ] && platform=
if [ -n "$platform" ]; then
	case ${HUSK_LOG:-} in
	info | debug) ;;
	*) HUSK_LOG=info && export HUSK_LOG ;;
	esac
fi
tmp=$(mktemp -d /tmp/husk-run-in-husk.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' TERM INT
# stdout and stderr stay pipes, as they were before the log was kept: stderr goes on to ours
# and into $tmp/err, stdout into $tmp/out.
{ {
	"$husk" do -- "$prog"
	echo $? >"$tmp/status"
} | cat >"$tmp/out"; } 2>&1 | tee "$tmp/err" >&2
status=$(cat "$tmp/status" 2>/dev/null || echo "?")
cat "$tmp/out"

last=$(tail -n 1 "$tmp/out")
if [ "$status" != 0 ]; then
	echo "run-in-husk: $prog exited with status $status" >&2
	exit 1
fi
if [ -n "$platform" ] && ! grep -q "^husk-sentry: info: platform: $platform\$" "$tmp/err"; then
	echo "run-in-husk: $prog: the sentry did not log 'platform: $platform'" >&2
	exit 1
fi
if ! printf '%s\n' "$last" | grep -Eq '^[0-9]+ passed, 0 failed$'; then
	echo "run-in-husk: $prog: last line is not 'N passed, 0 failed': $last" >&2
	exit 1
fi
exit 0
