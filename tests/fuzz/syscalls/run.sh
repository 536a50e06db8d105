#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the system-call fuzzer (sysfuzz.c, a static guest) in `husk do` over seed after seed for
# SECONDS (default 60), and fails when the sentry does not survive a run:
#   - husk reports "the sentry died of signal N" (runtime/launch.c) or exits 125 (setup failed,
#     or the sentry stopped with a message);
#   - a sanitizer report (AddressSanitizer, UBSan "runtime error:") from an ASan+UBSan build
#     (by default a huge malloc returns NULL there, as it fails in the normal build, instead of
#     ending the sentry: set ASAN_OPTIONS=detect_leaks=0 to catch guest-sized allocations too);
#   - a hang: a run that outlasts its timeout (the guest kills each batch after 2 s itself);
# and tells those apart from a guest failure (sysfuzz itself, pid 1, did not finish: also a
# failure, reported as such). It prints the seed that broke it; rerun that one with --seed S.
#   tests/fuzz/syscalls/run.sh [SECONDS]
#   tests/fuzz/syscalls/run.sh --seed S
# Environment: HUSK (default BUILD/husk), BUILD (default build), SYSFUZZ_BATCHES (20),
# SYSFUZZ_CALLS (200 per batch), SYSFUZZ_TIMEOUT (seconds per run, 120), SYSFUZZ_SEED0 (first
# seed, default: from the clock), SYSFUZZ_TRACE=1 (the guest prints each call before making it,
# to BUILD/sysfuzz/run-PID.err: the last lines of a batch name the call that broke the sentry),
# SYSFUZZ_THREADS=N (each batch is N threads calling at once on shared descriptors and memory,
# unmapping, mprotecting and closing them under each other: sysfuzz.c's threads=N),
# SYSFUZZ_CPU=S (also stop, between runs, once the runs used S CPU seconds; counted as
# children_cpu below says: put run.sh in a cpuacct cgroup of its own for a true figure; it is
# printed at the end either way).
set -u
src=$(cd "$(dirname "$0")/../../.." && pwd)
build=${BUILD:-$src/build}
# The sandbox starts in its own /: every path given to it is absolute.
case $build in
/*) ;;
*) build=$(pwd)/$build ;;
esac
husk=${HUSK:-$build/husk}
batches=${SYSFUZZ_BATCHES:-20}
calls=${SYSFUZZ_CALLS:-200}
per_run=${SYSFUZZ_TIMEOUT:-120}
secs=60
only=
case ${1:-} in
--seed) only=$2 ;;
'') ;;
*) secs=$1 ;;
esac

out=$build/sysfuzz
mkdir -p "$out"
# Built aside and renamed: another run.sh over the same BUILD may be running the last one.
${CC:-cc} -std=gnu11 -O1 -g -static -Wall -Wextra -Werror \
	"$src/tests/fuzz/syscalls/sysfuzz.c" -o "$out/sysfuzz.$$" || exit 2
mv -f "$out/sysfuzz.$$" "$out/sysfuzz"
# The implemented numbers (the table's rows that are not "none").
nrs=$("$husk" syscalls | awk 'NR > 1 && $3 != "none" { printf "%s%s", sep, $1; sep = "," }')
[ -n "$nrs" ] || { echo "sysfuzz: no system call list from $husk syscalls" >&2; exit 2; }

# Each run's output, kept after a failure (BUILD/sysfuzz/run-PID.{out,err}).
log=$out/run-$$
trap 'rm -f "$log.out" "$log.err" "$log.times"' EXIT
# run SEED: 0 when the sentry survived, 1 when it did not, 3 on a guest failure.
run() {
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
		timeout -k 5 "$per_run" "$husk" do -- "$out/sysfuzz" "$1" "$batches" "$calls" "$nrs" \
		${SYSFUZZ_TRACE:+trace} ${SYSFUZZ_THREADS:+threads=$SYSFUZZ_THREADS} \
		</dev/null >"$log.out" 2>"$log.err"
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "sysfuzz: seed $1: HANG: no end after $per_run s (status $rc)"
		return 1
	fi
	if grep -Eq 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|SUMMARY: UndefinedBehaviorSanitizer' "$log.err"; then
		echo "sysfuzz: seed $1: sanitizer report (status $rc):"
		grep -E -A 30 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$log.err" | head -n 60
		return 1
	fi
	if grep -q 'the sentry died of signal' "$log.err"; then
		echo "sysfuzz: seed $1: SENTRY CRASH: $(grep 'the sentry died' "$log.err")"
		return 1
	fi
	if [ $rc -eq 125 ]; then
		echo "sysfuzz: seed $1: sentry or setup failure (status 125):"
		tail -n 20 "$log.err"
		return 1
	fi
	if [ $rc -ne 0 ] || ! tail -n 1 "$log.out" | grep -q "^sysfuzz: seed $1: .* done$"; then
		echo "sysfuzz: seed $1: GUEST FAILURE: sysfuzz (pid 1) exited $rc without finishing:"
		tail -n 5 "$log.out" "$log.err"
		return 3
	fi
	return 0
}

if [ -n "$only" ]; then
	run "$only"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "sysfuzz: seed $only: the sentry survived"
	else
		echo "sysfuzz: output in $log.*"
		trap - EXIT
	fi
	exit $rc
fi

# The CPU seconds the runs used: when run.sh is in a cgroup v1 cpuacct group of its own (not
# the root), that group's usage, which counts every process of every sandbox (husk, sentries,
# gofers, guests); otherwise only what this shell waited for (`times`, second line), which misses
# the processes husk does not wait for itself and so undercounts.
children_cpu() {
	cg=$(sed -n 's/^[0-9]*:[^:]*cpuacct[^:]*://p' /proc/self/cgroup)
	if [ -n "$cg" ] && [ "$cg" != / ] && [ -r "/sys/fs/cgroup/cpuacct$cg/cpuacct.usage" ]; then
		echo $(($(cat "/sys/fs/cgroup/cpuacct$cg/cpuacct.usage") / 1000000000))
		return
	fi
	times >"$log.times"
	awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$log.times"
}
cpu_limit=${SYSFUZZ_CPU:-0}

seed=${SYSFUZZ_SEED0:-$(date +%s)}
end=$(($(date +%s) + secs))
n=0
while [ "$(date +%s)" -lt $end ]; do
	if [ "$cpu_limit" -gt 0 ] && [ "$(children_cpu)" -ge "$cpu_limit" ]; then
		break
	fi
	run $seed
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "sysfuzz: reproduce with: $0 --seed $seed (after $n good runs); output in $log.*"
		trap - EXIT
		exit $rc
	fi
	n=$((n + 1))
	seed=$((seed + 1))
done
# The CPU figure only where it was asked for (SYSFUZZ_CPU): without a cgroup of its own it counts
# little more than husk's own time.
cpu=
[ "$cpu_limit" -gt 0 ] && cpu=", $(children_cpu) CPU s"
echo "sysfuzz: $n runs of $batches x $calls calls${SYSFUZZ_THREADS:+ x $SYSFUZZ_THREADS threads}, seeds $((seed - n))..$((seed - 1))$cpu: the sentry survived"
rm -f "$log.times"
exit 0
