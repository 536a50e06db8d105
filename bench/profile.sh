#!/bin/bash
# bench/profile.sh: where the time of one command goes in husk (issue 12: "a profile, not a
# guess").
#
#   bench/profile.sh [--platform P] [--husk PATH] [--out DIR] [--only STEPS] [--freq HZ]
#                    [--repeat N] [--husk-opt OPT]... [--] CMD [ARGS...]
#
# Runs CMD natively and under `husk do --platform P` (default: ptrace) and reports, in this
# order (--only takes a comma list of these step names):
#   time    wall time of one run of each (bash's `time`)
#   stat    `perf stat` software counters over the whole process tree, natively and in husk:
#           task-clock, context switches, CPU migrations, page faults (minor, major). In husk
#           the tree is husk, husk-gofer, husk-sentry and the husk-stub processes the guest
#           runs in, so guest page faults show up as the stub's (and the sentry's) faults;
#           then husk's page faults by process and DSO (perf record -e page-faults -c 1).
#   strace  `husk do --strace`: guest system calls by name (count, errors), most frequent
#           first, and the total: what the guest asks of the sentry
#   gofer   HUSK_GOFER_STATS=1: the gofer messages the sentry sent, by type
#   perf    `perf record -e cpu-clock -g` of husk and everything it starts, reported by
#           process and DSO (husk-sentry, husk-stub, husk-gofer; [kernel.kallsyms] is host
#           kernel time: ptrace stops, waits, faults), then by symbol, then the host-kernel
#           symbols of each husk process with their callers. --repeat N: N runs of
#           `husk do CMD` in one recording (from a bash loop), for more samples of a short
#           command (default 1; the sampling rate is --freq, default 4000 Hz)
# Everything is written under --out (default: a new /tmp/husk-profile-XXXXXX, kept, its path
# printed at the end); a short summary goes to stdout.
#
# perf: Debian's linux-perf (installed here by bench/run's install step; `apt-get install
# linux-perf` otherwise). This machine is a VM without hardware counters: `cycles` is "not
# supported", so the sampling event is the cpu-clock software timer (hrtimer), which counts
# on-CPU time only: time a process spends blocked (the sentry waiting in waitpid for the stub,
# the stub stopped for its tracer) is not sampled; the "stat" step's task-clock against wall
# time, and the context-switch counts, show how much of the run is waiting. The guest's own
# code shows up as an unnamed DSO of the husk-stub process (the sentry maps guest memory from
# its memory file, so perf has no ELF file to name it by).
#
# husk's own counters: `husk events --stats ID` reports a container's CPU time, memory and
# pids (for `husk run`/`create` containers, not `husk do`); the per-call and per-message
# counts come from --strace and HUSK_GOFER_STATS, used above.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
HUSK=$REPO/build/husk
PLATFORM=ptrace
OUT=
ONLY=time,stat,strace,gofer,perf
FREQ=4000
REPEAT=1
HUSK_OPTS=()

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--platform) PLATFORM=$2; shift 2 ;;
	--husk) HUSK=$(realpath "$2"); shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--freq) FREQ=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--husk-opt) HUSK_OPTS+=("$2"); shift 2 ;;
	-h | --help) usage 0 ;;
	--) shift; break ;;
	-*) echo "profile.sh: unknown option $1" >&2; usage 2 >&2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "profile.sh: no command (see --help)" >&2; exit 2; }
[ -x "$HUSK" ] || { echo "profile.sh: no husk binary at $HUSK (ninja -C build husk" \
	"husk-sentry gofer/husk-gofer, or --husk PATH)" >&2; exit 2; }
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/husk-profile-XXXXXX)
else
	mkdir -p "$OUT"
fi
OUT=$(realpath "$OUT")

want() { [[ ",$ONLY," == *",$1,"* ]]; }
HUSK_DO=("$HUSK" "do" --platform "$PLATFORM" "${HUSK_OPTS[@]}")
husk_do() { "${HUSK_DO[@]}" "$@"; }
have_perf() {
	command -v perf >/dev/null 2>&1 && perf stat -e task-clock true >/dev/null 2>&1
}
section() { printf '\n== %s\n' "$*"; }

echo "profile of: $*"
echo "husk: $HUSK do --platform $PLATFORM ${HUSK_OPTS[*]}"
echo "output: $OUT"
husk_do -- /bin/true 2>"$OUT/check.err" || {
	echo "profile.sh: husk do --platform $PLATFORM -- /bin/true failed:" >&2
	cat "$OUT/check.err" >&2
	exit 1
}

if want time; then
	section "wall time (one run each; the command's own output is in $OUT/*.out)"
	TIMEFORMAT='%3R s real, %3U s user, %3S s sys'
	{ time "$@" >"$OUT/native.out" 2>&1; } 2>&1 | sed 's/^/native: /'
	{ time husk_do -- "$@" >"$OUT/husk.out" 2>&1; } 2>&1 | sed 's/^/husk:   /'
fi

EVENTS=task-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults
if want stat; then
	section "perf stat (whole process tree): native, then husk"
	if have_perf; then
		perf stat -x, -e "$EVENTS" -o "$OUT/stat-native.csv" -- "$@" >/dev/null 2>&1 || true
		perf stat -x, -e "$EVENTS" -o "$OUT/stat-husk.csv" -- "${HUSK_DO[@]}" -- "$@" \
			>/dev/null 2>&1 || true
		# CSV lines: value,unit,event,...
		join -t, -1 1 -2 1 \
			<(awk -F, '/^[0-9<]/ { print $3 "," $1 }' "$OUT/stat-native.csv" | sort) \
			<(awk -F, '/^[0-9<]/ { print $3 "," $1 }' "$OUT/stat-husk.csv" | sort) |
			awk -F, 'BEGIN { printf "%-18s %16s %16s %8s\n", "event", "native", "husk", "ratio" }
			{ r = ($2 > 0) ? sprintf("%.1fx", $3 / $2) : "-"
			  printf "%-18s %16s %16s %8s\n", $1, $2, $3, r }'
		echo "(task-clock in ms of CPU time summed over every process; page-faults = minor + major)"
		section "page faults in husk by process and DSO (perf record -e page-faults -c 1)"
		perf record -q -e page-faults -c 1 -o "$OUT/faults.data" -- "${HUSK_DO[@]}" -- "$@" \
			>/dev/null 2>&1 || true
		perf report -i "$OUT/faults.data" -g none --percent-limit 1 --sort comm,dso \
			--stdio 2>/dev/null >"$OUT/faults.txt" || true
		grep -v '^#' "$OUT/faults.txt" | grep '%' | head -12
		echo "(the DSO is that of the faulting instruction: memfd:husk-memory is guest code)"
	else
		echo "perf is not usable here (apt-get install linux-perf; run as root or lower" \
			"kernel.perf_event_paranoid)"
	fi
fi

if want strace; then
	section "guest system calls (husk do --strace), most frequent first"
	husk_do --strace -- "$@" >/dev/null 2>"$OUT/strace.txt" || true
	awk '
		match($0, /^\[pid [0-9]+\] [a-z_0-9]+\(/) {
			s = substr($0, RSTART, RLENGTH - 1); sub(/^\[pid [0-9]+\] /, "", s)
			n[s]++; total++
			if ($0 ~ /\) = -1 E[A-Z]+/) err[s]++
		}
		END {
			for (s in n) printf "%8d %6d %5.1f%%  %s\n", n[s], err[s], 100 * n[s] / total, s
			printf "total %d guest system calls\n", total > "/dev/stderr"
		}' "$OUT/strace.txt" 2>"$OUT/strace-total.txt" | sort -rn >"$OUT/strace-counts.txt"
	printf '%8s %6s %6s  %s\n' calls errors share name
	head -20 "$OUT/strace-counts.txt"
	cat "$OUT/strace-total.txt"
	echo "(every line of the trace: $OUT/strace.txt)"
fi

if want gofer; then
	section "gofer messages (HUSK_GOFER_STATS=1)"
	HUSK_GOFER_STATS=1 husk_do -- "$@" >/dev/null 2>"$OUT/gofer.txt" || true
	grep -i gofer "$OUT/gofer.txt" | tail -5 || echo "(no gofer statistics printed)"
fi

if want perf; then
	section "perf record -e cpu-clock -F $FREQ -g ($REPEAT run(s)): on-CPU time by process and DSO"
	if have_perf; then
		# shellcheck disable=SC2016 # expanded by the inner bash
		perf record -q -e cpu-clock -F "$FREQ" -g -o "$OUT/perf.data" -- \
			bash -c 'n=$1; shift; for ((i = 0; i < n; i++)); do "$@"; done' _ "$REPEAT" \
			"${HUSK_DO[@]}" -- "$@" >/dev/null 2>"$OUT/perf-record.err" || true
		perf report -i "$OUT/perf.data" --no-children -g none --percent-limit 1 \
			--sort comm,dso --stdio 2>/dev/null >"$OUT/perf-comm-dso.txt" || true
		perf report -i "$OUT/perf.data" --no-children -g none --percent-limit 0.5 \
			--sort comm,dso,sym --stdio 2>/dev/null >"$OUT/perf-sym.txt" || true
		perf report -i "$OUT/perf.data" --no-children -g caller,0.5,callee,function,percent \
			--percent-limit 2 --sort comm,sym --stdio 2>/dev/null \
			>"$OUT/perf-callers.txt" || true
		grep -v '^#' "$OUT/perf-comm-dso.txt" | grep '%' | head -15
		section "top symbols (comm, DSO, symbol)"
		grep -v '^#' "$OUT/perf-sym.txt" | grep '%' | head -25
		echo "(callers of each hot symbol: $OUT/perf-callers.txt; the data: perf report -i" \
			"$OUT/perf.data)"
	else
		echo "perf is not usable here (apt-get install linux-perf; run as root or lower" \
			"kernel.perf_event_paranoid)"
	fi
fi
echo
echo "profile.sh: everything is in $OUT"
