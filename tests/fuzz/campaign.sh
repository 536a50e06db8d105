#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A fuzzing campaign measured in CPU time, for a shared machine: runs tests/fuzz/NAME/run.sh
# under `nice -n 19` until the fuzzer process has used CPU_SECONDS of CPU (user + system, from
# /proc), then interrupts it (SIGINT: libFuzzer prints its final stats and exits 72). A niced
# fuzzer on a busy machine gets only part of a CPU, so wall-clock time (-max_total_time) would
# undercount. Prints the fuzzer's output and, last, "campaign NAME: N CPU s, M s wall, status S".
#   tests/fuzz/campaign.sh NAME CPU_SECONDS
# Status: the fuzzer's (72 after the interrupt; 0 when run.sh's own limit of 4 h came first;
# anything else, 1 or 77 for instance, is a crash, leak or timeout: see its output).
set -u
name=$1
cpu_limit=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
start=$(date +%s)
tck=$(getconf CLK_TCK)

nice -n 19 "$src/tests/fuzz/$name/run.sh" 14400 &
runner=$!
used=0
# The fuzzer is run.sh's process once it has exec'ed (after building); count its time then.
while kill -0 "$runner" 2>/dev/null; do
	sleep 5
	case $(readlink "/proc/$runner/exe" 2>/dev/null) in
	*/fuzz-*) ;;
	*) continue ;;
	esac
	# utime and stime: fields 14 and 15 of /proc/PID/stat (the name, field 2, has no spaces).
	used=$(awk -v t="$tck" '{ print int(($14 + $15) / t) }' "/proc/$runner/stat" 2>/dev/null) ||
		continue
	if [ "${used:-0}" -ge "$cpu_limit" ]; then
		kill -INT "$runner"
		break
	fi
done
wait "$runner"
status=$?
echo "campaign $name: $used CPU s, $(($(date +%s) - start)) s wall, status $status"
exit $status
