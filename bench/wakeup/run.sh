#!/bin/sh
# Builds wakeup.c and runs every scheme: on the machine as it is, then beside two CPU hogs, then
# once per scheme under `perf stat` for the per-call counts. Run as root (ptrace, perf).
# usage: bench/wakeup/run.sh [RUNS [ITERS]]   (defaults 7 and 100000)
set -eu

dir=$(cd "$(dirname "$0")" && pwd)
runs=${1:-7}
iters=${2:-100000}
tmp=$(mktemp -d)
hogs=""
cleanup() {
	for pid in $hogs; do
		kill "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cc -O2 -Wall -Wextra -o "$tmp/wakeup" "$dir/wakeup.c"

echo "# $(uname -sr), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(date -u '+%F %H:%M UTC')"
echo
echo "## The machine as it is (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$tmp/wakeup" -r "$runs" -n "$iters"

echo
echo "## Beside two CPU hogs (yes > /dev/null, twice)"
for _ in 1 2; do
	yes >/dev/null &
	hogs="$hogs $!"
done
"$tmp/wakeup" -r "$runs" -n "$iters"
for pid in $hogs; do
	kill "$pid"
done
hogs=""

if ! command -v perf >/dev/null 2>&1; then
	echo
	echo "(no perf: the per-call counts are left out; apt-get install linux-perf)"
	exit 0
fi
echo
echo "## Per call, one run of each scheme under perf stat (load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "Host system calls that ran (trapped or emulated guest calls are not counted), context"
echo "switches and CPU migrations of both processes, divided by the calls served (warm-up included)."
echo
echo "| scheme | host syscalls | context switches | CPU migrations |"
echo "|---|---:|---:|---:|"
for s in $("$tmp/wakeup" -h | sed -n 's/^schemes: //p'); do
	perf stat -x, -o "$tmp/perf" -e raw_syscalls:sys_enter,context-switches,cpu-migrations \
		"$tmp/wakeup" -r 1 -n "$iters" "$s" >/dev/null
	awk -F, -v s="$s" -v n="$((iters + 1000))" '
		/raw_syscalls:sys_enter/ { sc = $1 }
		/context-switches/ { cs = $1 }
		/cpu-migrations/ { mig = $1 }
		END { printf "| %s | %.2f | %.2f | %.3f |\n", s, sc / n, cs / n, mig / n }
	' "$tmp/perf"
done
