#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `husk do` on a terminal behaves as the same program run natively: driven through a pty
# (terminal_check.py) as a person would type. An interactive bash: a typed line is echoed once
# (as many times as natively), `stty -echo` hides what a read gets, python3's REPL (raw mode),
# ^C interrupts a foreground sleep and the shell goes on, ^Z + fg, a background read stops with
# SIGTTIN, a window size change is seen by `stty size`, and the terminal's settings are the
# caller's again after the sandbox ends: normal exit, sentry SIGKILLed (as a crash), every guest
# process SIGKILLed (husk kill --all), husk do SIGTERMed (it dies of SIGTERM); and a husk do in
# the background does not undo what the foreground changed meanwhile. ^Z on husk do's own command
# (not a shell) stops husk do, so the caller's shell takes the terminal back, and fg continues it.
. "$(dirname "$0")/lib.sh"
check=$(cd "$(dirname "$0")" && pwd)/terminal_check.py

if ! command -v python3 >/dev/null || ! command -v bash >/dev/null ||
	! python3 -c 'import pty, termios' 2>/dev/null; then
	echo "skip: needs python3 (pty, termios) and bash"
	finish
fi

# run_checks PREFIX OUTFILE: each "check NAME ok|FAIL ..." line of OUTFILE becomes a result.
run_checks() {
	prefix=$1 file=$2
	if ! grep -q '^check ' "$file"; then
		fail "$prefix: the driver ran" "$(head -c 800 "$file")"
		return
	fi
	while IFS= read -r line; do
		case $line in
		"check "*" ok") pass "$prefix: $(echo "$line" | cut -d' ' -f2)" ;;
		"check "*) fail "$prefix: $(echo "$line" | cut -d' ' -f2)" "$line" ;;
		esac
	done <"$file"
}

# count NAME FILE: the number on FILE's line "NAME N".
count() {
	sed -n "s/^$1 //p" "$2" | head -n 1
}

native=/tmp/husk-term-native.$$
inside=/tmp/husk-term-inside.$$
# The native run is the reference for what is echoed; its own checks are not ours.
(cd / && python3 "$check" shell -- bash --norc -i) >"$native" 2>&1
(cd / && python3 "$check" shell -- "$HUSK" do -- bash --norc -i) >"$inside" 2>&1
run_checks "interactive bash" "$inside"
for what in echo-count hidden-shown python-echo-count; do
	n=$(count "$what" "$native")
	i=$(count "$what" "$inside")
	if [ -n "$n" ] && [ "$n" = "$i" ]; then
		pass "$what as natively ($n)"
	else
		fail "$what as natively" "native: '$n', in husk: '$i'" "$(head -c 800 "$inside")"
	fi
done

raw='stty raw -echo; echo raw-now; sleep 100'
out=/tmp/husk-term-end.$$
python3 "$check" kill9 -- "$HUSK" do -- sh -c "$raw" >"$out" 2>&1
run_checks "sentry SIGKILLed" "$out"
python3 "$check" term -- "$HUSK" do -- sh -c "$raw" >"$out" 2>&1
run_checks "husk do SIGTERMed" "$out"
root=$(mktemp -d /tmp/husk-term-root.XXXXXX)
KILL_GUEST="'$HUSK' --root '$root' kill --all term$$ KILL" \
	python3 "$check" kill9-guest -- "$HUSK" --root "$root" do --name "term$$" -- sh -c "$raw" \
	>"$out" 2>&1
run_checks "guest SIGKILLed" "$out"
susp='import sys, time
print("up-now", flush=True)
sys.stdin.readline()
print("again", flush=True)
time.sleep(100)'
python3 "$check" suspend -- python3 -c "$susp" >"$out" 2>&1
run_checks "^Z on a native command (reference)" "$out"
python3 "$check" suspend -- "$HUSK" do -- python3 -c "$susp" >"$out" 2>&1
run_checks "^Z on husk do's command" "$out"
python3 "$check" bg -- "$HUSK" do -- sh -c 'echo up-now; sleep 1' >"$out" 2>&1
run_checks "husk do in the background" "$out"
rm -rf "$root"
# The conformance program of the terminal calls (tests/syscalls/host_tty.c), natively and in
# husk, on the pty as its controlling terminal (meson's own runs of it have none and skip).
prog=$(dirname "$HUSK")/tests/syscalls/syscalls-host_tty
if [ -x "$prog" ]; then
	python3 "$check" conformance -- "$prog" >"$out" 2>&1
	run_checks "host_tty natively" "$out"
	python3 "$check" conformance -- "$HUSK" do -- "$prog" >"$out" 2>&1
	run_checks "host_tty in husk" "$out"
else
	echo "skip: $prog is not built"
fi
rm -f "$native" "$inside" "$out"
finish
