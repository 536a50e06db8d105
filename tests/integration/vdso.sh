#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The vDSO (sentry/time): python3, node and a Go program read the clock many times inside husk,
# and `husk do --strace` shows that none of those reads became a system call (glibc, V8 and Go's
# own ELF parser all found clock_gettime/gettimeofday in the image at AT_SYSINFO_EHDR). As a
# control, with HUSK_TIME_NO_TSC=1 (the sentry does not use the TSC, as on a host whose TSC is
# unusable) the same python run does make the calls, and still prints the right result.
set -u
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d /tmp/husk-vdso.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# clock_calls NAME -- COMMAND...: runs COMMAND in husk under --strace; stdout must be "ok";
# sets $calls to the number of clock_gettime/gettimeofday lines of the trace.
clock_calls() {
	name=$1
	shift 2
	out=$("$HUSK" do --strace -- "$@" 2>"$tmp/trace")
	st=$?
	calls=$(grep -cE '\] (clock_gettime|gettimeofday)\(' "$tmp/trace")
	if [ "$st" = 0 ] && [ "$out" = "ok" ]; then
		pass "$name runs"
	else
		fail "$name runs" "status $st, stdout: $out" "trace: $(tail -n 5 "$tmp/trace")"
	fi
}

py='import time, json, os, sys
t = [time.time() for _ in range(1000)] + [time.monotonic() for _ in range(1000)]
assert all(a <= b for a, b in zip(t[1000:], t[1001:]))
print("ok")'

clock_calls "python3" -- python3 -c "$py"
if [ "$calls" = 0 ]; then
	pass "python3: no clock system call in 2000 reads"
else
	fail "python3: no clock system call in 2000 reads" "$calls calls:" \
		"$(grep -E '(clock_gettime|gettimeofday)\(' "$tmp/trace" | head -n 3)"
fi

# The control: without the TSC the vDSO makes the calls, so the check above can fail.
out=$(HUSK_TIME_NO_TSC=1 "$HUSK" do --strace -- python3 -c "$py" 2>"$tmp/trace")
calls=$(grep -cE '\] (clock_gettime|gettimeofday)\(' "$tmp/trace")
if [ "$out" = "ok" ] && [ "$calls" -ge 2000 ]; then
	pass "python3 without the TSC: the reads are system calls ($calls)"
else
	fail "python3 without the TSC: the reads are system calls" "stdout: $out, $calls calls"
fi

if command -v node >/dev/null 2>&1; then
	clock_calls "node" -- node -e \
		'let t = 0; for (let i = 0; i < 1000; i++) t += Date.now() > 0; process.hrtime(); performance.now(); console.log(t === 1000 ? "ok" : "bad")'
	if [ "$calls" = 0 ]; then
		pass "node: no clock system call"
	else
		fail "node: no clock system call" "$calls calls:" \
			"$(grep -E '(clock_gettime|gettimeofday)\(' "$tmp/trace" | head -n 3)"
	fi
else
	echo "skip - node: not installed (tools/install-deps.sh installs nodejs)"
fi

if command -v go >/dev/null 2>&1; then
	mkdir -p "$tmp/go"
	cat >"$tmp/go/main.go" <<'GO'
package main

import (
	"fmt"
	"time"
)

func main() {
	start := time.Now()
	last := start
	for i := 0; i < 10000; i++ {
		now := time.Now()
		if now.Before(last) {
			fmt.Println("backwards")
			return
		}
		last = now
	}
	fmt.Println("ok")
}
GO
	printf 'module vdsocheck\n\ngo 1.19\n' >"$tmp/go/go.mod"
	if (cd "$tmp/go" && GOCACHE="$tmp/cache" GOPATH="$tmp/gopath" GOPROXY=off \
		GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$tmp/gotime" .) >"$tmp/build.log" 2>&1; then
		clock_calls "go" -- "$tmp/gotime"
		if [ "$calls" = 0 ]; then
			pass "go: no clock system call (the runtime parsed the vDSO itself)"
		else
			fail "go: no clock system call" "$calls calls:" \
				"$(grep -E '(clock_gettime|gettimeofday)\(' "$tmp/trace" | head -n 3)"
		fi
	else
		fail "go build" "$(tail -n 10 "$tmp/build.log")"
	fi
else
	echo "skip - go: no go compiler (tools/install-deps.sh installs golang-go)"
fi

finish
