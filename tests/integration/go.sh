#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A Go program inside husk (go/main.go, built here with Debian's golang): goroutines on
# several threads, timers, a spinning goroutine only async preemption can stop, and big copies
# in memmove's AVX loops while sysmon preempts them. Go's preemption signal (SIGURG) lands in
# the middle of vector code and the goroutine resumes from the signal frame: every register,
# the YMM upper halves included, must come back exactly. Compared with a native run, then
# run 30 times in a row in husk ($HUSK_GO_RUNS to change; make check runs it once per platform,
# so 60 runs in all).
set -u
. "$(dirname "$0")/lib.sh"

runs=${HUSK_GO_RUNS:-30}
src=$(cd "$(dirname "$0")/go" && pwd)
if ! command -v go >/dev/null 2>&1; then
	echo "SKIP: no go compiler (tools/install-deps.sh installs Debian's golang-go)"
	exit 77
fi
tmp=$(mktemp -d /tmp/husk-go.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Static (no cgo), offline, with a cache of its own.
if (cd "$src" && GOCACHE="$tmp/cache" GOPATH="$tmp/gopath" GOPROXY=off GOFLAGS=-mod=mod \
	CGO_ENABLED=0 go build -o "$tmp/gostress" .) >"$tmp/build.log" 2>&1; then
	pass "go build of the stress program"
else
	fail "go build of the stress program" "$(tail -n 20 "$tmp/build.log")"
	finish
fi

expect_output "native run" "ok" 0 -- "$tmp/gostress" 800

clean=0
first=""
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	out=$("$HUSK" do -- "$tmp/gostress" 800 2>&1)
	st=$?
	if [ "$st" = 0 ] && [ "$out" = "ok" ]; then
		clean=$((clean + 1))
	elif [ -z "$first" ]; then
		first="run $i: status $st: $(printf '%s\n' "$out" | head -n 12)"
	fi
done
if [ "$clean" = "$runs" ]; then
	pass "$runs runs in husk, all clean"
else
	fail "$runs runs in husk, all clean" "$clean of $runs clean" "$first"
fi

finish
