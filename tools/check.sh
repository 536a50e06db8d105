#!/bin/sh
# Runs every test suite and ends with one summary line: "N passed, M failed", after one line per
# platform of the in-husk tests ("platform ptrace: N passed, M failed").
#   tools/check.sh BUILD_DIR ASAN_BUILD_DIR
set -u
build=${1:-build}
asan=${2:-build-asan}
status=0
# Each phase's header line carries the clock and the seconds since the start (where the time goes).
t0=$(date +%s)
phase() { echo "== [$(date -u +%H:%M:%S) +$(($(date +%s) - t0))s] $*"; }

# Meson's per-test timeouts only catch hangs. On a busy machine (other builds, a CPU hog, CI's
# neighbours) a test that takes 15 s idle can pass a 30 s timeout without hanging, so they scale
# with the load when the check starts: twice the timeout on an idle machine, up to 8 times at a
# load of 4 per CPU or more; the unit tests under the sanitizers (about twice as slow) get twice
# that. HUSK_TIMEOUT_MULTIPLIER overrides it.
mult=${HUSK_TIMEOUT_MULTIPLIER:-$(awk -v n="$(nproc)" '{ m = int($1 / n + 0.999); if (m < 1) m = 1; if (m > 4) m = 4; print 2 * m }' /proc/loadavg)}
phase "tests ($build), timeouts x$mult (load $(cut -d' ' -f1 /proc/loadavg) on $(nproc) CPUs)"
meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier "$mult" || status=1
phase "unit tests under AddressSanitizer + UBSan ($asan), timeouts x$((2 * mult))"
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C "$asan" --no-rebuild --suite unit --print-errorlogs --num-processes 2 \
	--timeout-multiplier "$((2 * mult))" || status=1
phase "format"
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	# One clang-format per CPU, 50 files each (one process took 2 min on a loaded machine).
	if git ls-files '*.c' '*.h' | xargs -P "$(nproc)" -n 50 clang-format --dry-run -Werror \
		>"$build/format.log" 2>&1; then
		fmt_ok=1
	else
		fmt_ok=0
		head -n 40 "$build/format.log"
	fi
else
	fmt_ok=1
fi

# The gofer's and the checkpoint image's fuzzers (libFuzzer) are single-threaded and run for a
# fixed time: when two CPUs are free (the load average at least two below the CPU count) they
# run at once, each on a CPU of its own for its whole time (30 s saved), else one after the
# other, since two at once on a busy machine share what CPU there is and each runs fewer inputs
# (measured at load 15 on 2 CPUs: 18k and 11k inputs at once, 63k and 29k one after the other).
together=$(awk -v n="$(nproc)" '{ print ($1 + 2 <= n) ? 1 : 0 }' /proc/loadavg)
phase "fuzz: the gofer's message dispatcher for ${HUSK_FUZZ_SECONDS:-30} s and the checkpoint" \
	"image reader for ${HUSK_STATEFUZZ_SECONDS:-30} s$([ "$together" = 1 ] && echo ', at once')"
FUZZ_BUILD_DIR="$build/fuzz" ./tests/fuzz/gofer/run.sh "${HUSK_FUZZ_SECONDS:-30}" \
	>"$build/fuzz.log" 2>&1 &
gofer_fuzz=$!
gofer_st=
[ "$together" = 1 ] || { wait $gofer_fuzz; gofer_st=$?; }
FUZZ_BUILD_DIR="$build/fuzz" ./tests/fuzz/state/run.sh "${HUSK_STATEFUZZ_SECONDS:-30}" \
	>"$build/statefuzz.log" 2>&1 &
state_fuzz=$!
[ -n "$gofer_st" ] || { wait $gofer_fuzz; gofer_st=$?; }
if [ "$gofer_st" = 0 ]; then
	fuzz_ok=1
	grep -E '^stat::number_of_executed_units' "$build/fuzz.log" || true
else
	fuzz_ok=0
	tail -n 40 "$build/fuzz.log"
fi
if wait $state_fuzz; then
	statefuzz_ok=1
	grep -E '^stat::number_of_executed_units' "$build/statefuzz.log" || true
else
	statefuzz_ok=0
	tail -n 40 "$build/statefuzz.log"
fi

phase "fuzz: system calls of a guest in husk for ${HUSK_SYSFUZZ_SECONDS:-30} s"
if BUILD="$build" ./tests/fuzz/syscalls/run.sh "${HUSK_SYSFUZZ_SECONDS:-30}" >"$build/sysfuzz.log" 2>&1; then
	sysfuzz_ok=1
	tail -n 1 "$build/sysfuzz.log"
else
	sysfuzz_ok=0
	tail -n 40 "$build/sysfuzz.log"
fi

phase "summary"
python3 - "$build" "$asan" "$fmt_ok" "$fuzz_ok" "$sysfuzz_ok" "$statefuzz_ok" <<'PY'
import json, sys
passed = failed = skipped = 0
# The platform matrix: in-husk tests carry their platform as a suite ("husk:...+ptrace / name").
matrix = {}
for d in sys.argv[1:3]:
    try:
        lines = open(f"{d}/meson-logs/testlog.json").read().splitlines()
    except OSError:
        failed += 1
        print(f"no test log in {d}")
        continue
    for line in lines:
        r = json.loads(line)
        res = r.get("result")
        ok = res in ("OK", "EXPECTEDFAIL")
        if ok:
            passed += 1
        elif res == "SKIP":
            skipped += 1
        else:
            failed += 1
            print(f"FAILED: {d}: {r.get('name')} ({res})")
        suites = r.get("name", "").split(" / ")[0].split(":")[-1].split("+")
        for p in ("ptrace", "seccomp"):
            if p in suites and res != "SKIP":
                matrix.setdefault(p, [0, 0])[0 if ok else 1] += 1
for p, (np, nf) in sorted(matrix.items()):
    print(f"platform {p}: {np} passed, {nf} failed")
for ok, what in ((sys.argv[3], "clang-format check"), (sys.argv[4], "gofer fuzzer"),
                 (sys.argv[5], "system-call fuzzer"), (sys.argv[6], "checkpoint image fuzzer")):
    if ok == "1":
        passed += 1
    else:
        failed += 1
        print(f"FAILED: {what}")
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
PY
rc=$?
[ $status -ne 0 ] && [ $rc -eq 0 ] && exit 1
exit $rc
