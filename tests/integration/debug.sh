#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Debugging inside `husk do`: strace and gdb run on the sentry's own ptrace (guest tasks
# tracing guest tasks). A tool missing on the host is skipped, with the reason printed.
. "$(dirname "$0")/lib.sh"

work=/tmp/husk-debug.$$
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

if command -v strace >/dev/null 2>&1; then
	# -f follows the forked /bin/echo; the trace goes to stderr, the program's output to stdout.
	"$HUSK" do -- strace -f -e trace=write sh -c 'echo hi; /bin/echo ho' \
		>"$work/out" 2>"$work/err"
	st=$?
	if [ "$st" = 0 ] && grep -Eq '^write\(1, "hi\\n", 3\) += 3$' "$work/err" &&
		grep -Eq '^\[pid +[0-9]+\] write\(1, "ho\\n", 3\) += 3$' "$work/err" &&
		[ "$(cat "$work/out")" = "hi
ho" ]; then
		pass "strace -f -e trace=write shows both writes, the child's with its pid"
	else
		fail "strace -f -e trace=write shows both writes, the child's with its pid" \
			"status $st" "stdout: $(head -c 300 "$work/out")" \
			"stderr: $(head -c 1500 "$work/err")"
	fi

	"$HUSK" do -- strace -c true >"$work/out" 2>"$work/err"
	st=$?
	if [ "$st" = 0 ] && grep -q '^% time' "$work/err" && grep -Eq ' execve$' "$work/err" &&
		grep -Eq '^100\.00 .* total$' "$work/err"; then
		pass "strace -c true prints a summary counting execve"
	else
		fail "strace -c true prints a summary counting execve" "status $st" \
			"stderr: $(head -c 1500 "$work/err")"
	fi

	expect_status "strace passes on the traced program's exit status" 3 -- \
		"$HUSK" do -- strace -f -o /dev/null sh -c 'sh -c "exit 3"; exit $?'
else
	echo "skip - strace checks: strace is not installed on the host"
fi

if command -v gdb >/dev/null 2>&1 && command -v gcc >/dev/null 2>&1; then
	cat >"$work/prog.c" <<'EOF'
#include <stdio.h>

static int add(int a, int b)
{
	return a + b;
}

int main(void)
{
	int x = add(2, 3);

	printf("x=%d\n", x);
	return 0;
}
EOF
	if gcc -g -O0 -o "$work/prog" "$work/prog.c"; then
		"$HUSK" do -- gdb -nx -batch -ex 'break main' -ex run -ex bt -ex continue \
			--args "$work/prog" >"$work/out" 2>"$work/err"
		st=$?
		if [ "$st" = 0 ] && grep -q '^Breakpoint 1, main ()' "$work/out" &&
			grep -q '^#0  main ()' "$work/out" && grep -q '^x=5$' "$work/out" &&
			grep -Eq '^\[Inferior 1 \(process [0-9]+\) exited normally\]$' "$work/out"; then
			pass "gdb: break main, run, bt, continue to a normal exit"
		else
			fail "gdb: break main, run, bt, continue to a normal exit" "status $st" \
				"stdout: $(head -c 1500 "$work/out")" \
				"stderr: $(head -c 600 "$work/err")"
		fi

		# A second breakpoint with its arguments, finish (a return breakpoint), next
		# (single steps over the breakpoint at the call site) and a value read back.
		"$HUSK" do -- gdb -nx -batch -ex 'break main' -ex 'break add' -ex run -ex continue \
			-ex 'print a + b' -ex finish -ex next -ex 'print x' -ex continue \
			--args "$work/prog" >"$work/out" 2>"$work/err"
		st=$?
		if [ "$st" = 0 ] && grep -q '^Breakpoint 2, add (a=2, b=3)' "$work/out" &&
			grep -q '^\$1 = 5$' "$work/out" &&
			grep -q '^Value returned is \$2 = 5$' "$work/out" &&
			grep -q '^\$3 = 5$' "$work/out" &&
			grep -Eq '^\[Inferior 1 \(process [0-9]+\) exited normally\]$' "$work/out"; then
			pass "gdb: a breakpoint's arguments, finish, next, print"
		else
			fail "gdb: a breakpoint's arguments, finish, next, print" \
				"status $st" "stdout: $(head -c 1500 "$work/out")" \
				"stderr: $(head -c 600 "$work/err")"
		fi
	else
		fail "gdb: the test program compiles" "gcc failed"
	fi
else
	echo "skip - gdb checks: gdb or gcc is not installed on the host"
fi

finish
