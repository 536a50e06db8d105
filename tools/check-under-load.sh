#!/bin/sh
# `make check` N times in a row beside a CPU hog (issue 18: the tests must hold on a busy
# machine). Usage: tools/check-under-load.sh [N]   (default 3)
#   HOG     the hog's command line (default: stress-ng --cpu 4, four busy workers on this 2-core
#           machine; `make check` itself runs two tests at a time beside it)
#   LOGDIR  where each run's full output goes (default: a new mktemp -d directory)
# Prints, per run, its summary line (the last line of `make check`), its time and the load
# average at its end; exits 1 if any run failed. Stops the hog on exit, however it ends.
set -u

n=${1:-3}
hog=${HOG:-stress-ng --cpu 4}
logdir=${LOGDIR:-$(mktemp -d /tmp/husk-check-under-load.XXXXXX)}
mkdir -p "$logdir"

command -v stress-ng >/dev/null 2>&1 || ./tools/install-deps.sh

# The hog in a process group of its own, so that it and its workers go together.
setsid $hog >"$logdir/hog.log" 2>&1 &
hogpid=$!
trap 'kill -TERM -- -$hogpid 2>/dev/null; wait $hogpid 2>/dev/null' EXIT INT TERM
echo "hog: $hog (pid $hogpid); logs in $logdir"

failed=0
i=1
while [ "$i" -le "$n" ]; do
	t0=$(date +%s)
	make check >"$logdir/check-$i.log" 2>&1
	rc=$?
	t1=$(date +%s)
	summary=$(tail -n 1 "$logdir/check-$i.log")
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	echo "run $i: rc=$rc, $((t1 - t0)) s, load $load: $summary"
	if [ "$rc" -ne 0 ]; then
		failed=1
		grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$logdir/check-$i.log" | sed 's/^/    /'
	fi
	i=$((i + 1))
done
exit $failed
