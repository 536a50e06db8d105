#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the multithreaded stress (tests/payload/stress.c) natively once, then RUNS times in a row
# inside `husk do`, and compares each sandboxed run's last line with the native one:
#
#   stress-repeat.sh [-n RUNS] [-s SECONDS | -r ROUNDS] [-t THREADS] [-p PLATFORM] HUSK STRESS
#
# -r ROUNDS (the default, 100) is the exact mode: the summary line holds counts that follow from
# the arguments alone. -s SECONDS runs each for about that long and compares "... ok" lines.
# -p sets HUSK_PLATFORM for the sandboxed runs; without it the environment's (or husk's default)
# platform is used. Each run gets a generous timeout (a hang is a failure, reported as such).
# Prints one line per run ("ok - ..." or "not ok - ..." with what was seen) and ends with
# "N passed, M failed"; exits 0 only if every run matched.
set -u

runs=1
mode="--rounds"
amount=100
threads=8
platform=
while getopts n:s:r:t:p: opt; do
	case $opt in
	n) runs=$OPTARG ;;
	s)
		mode="--seconds"
		amount=$OPTARG
		;;
	r)
		mode="--rounds"
		amount=$OPTARG
		;;
	t) threads=$OPTARG ;;
	p) platform=$OPTARG ;;
	*)
		echo "usage: $0 [-n RUNS] [-s SECONDS | -r ROUNDS] [-t THREADS] [-p PLATFORM] HUSK STRESS" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
if [ "$#" -ne 2 ]; then
	echo "usage: $0 [-n RUNS] [-s SECONDS | -r ROUNDS] [-t THREADS] [-p PLATFORM] HUSK STRESS" >&2
	exit 2
fi
husk=$1
stress=$2
# The sandbox starts in its own / : it needs the program's absolute host path.
case $stress in
/*) ;;
*) stress=$(pwd)/$stress ;;
esac
if [ -n "$platform" ]; then
	HUSK_PLATFORM=$platform
	export HUSK_PLATFORM
fi
# Time mode: the program stops itself after SECONDS; the rounds mode needs a few seconds. Either
# way a run ten times slower than asked for is a hang.
if [ "$mode" = "--seconds" ]; then
	limit=$((amount * 10 + 120))
else
	limit=$((amount / 2 + 120))
fi

tmp=$(mktemp -d /tmp/husk-stress.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

native=$(timeout -k 10 "$limit" "$stress" --threads "$threads" "$mode" "$amount" 2>"$tmp/err")
st=$?
want=$(printf '%s\n' "$native" | tail -n 1)
if [ "$st" -ne 0 ] || [ -z "$want" ]; then
	echo "not ok - native run: status $st, last line: $want"
	sed 's/^/    /' "$tmp/err" | head -n 20
	echo "0 passed, 1 failed"
	exit 1
fi
echo "# native: $want"
echo "# husk: ${HUSK_PLATFORM:-default} platform, $runs run(s) of $mode $amount, $threads threads"

i=1
while [ "$i" -le "$runs" ]; do
	start=$(date +%s)
	timeout -k 10 "$limit" "$husk" do -- "$stress" --threads "$threads" "$mode" "$amount" \
		>"$tmp/out" 2>"$tmp/err"
	st=$?
	secs=$(($(date +%s) - start))
	got=$(tail -n 1 "$tmp/out")
	if [ "$st" -eq 0 ] && [ "$got" = "$want" ]; then
		passed=$((passed + 1))
		echo "ok - run $i (${secs}s): $(head -n 1 "$tmp/out")"
	else
		failed=$((failed + 1))
		if [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
			echo "not ok - run $i: no end after ${secs}s (a hang; status $st)"
		else
			echo "not ok - run $i (${secs}s): status $st"
		fi
		echo "    want: $want"
		echo "    got:  $got"
		sed 's/^/    stderr: /' "$tmp/err" | head -n 20
	fi
	i=$((i + 1))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
