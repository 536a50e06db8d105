#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# husk do's command line as people expect it: the caller's working directory, -E, and signals
# from the caller that end the command as they would outside a sandbox (timeout, kill -INT,
# kill -TERM), while a pid 1 that traps the signal runs its trap and one that ignores it goes on.
. "$(dirname "$0")/lib.sh"

# --- the working directory ---
expect_output "runs in the caller's directory" "/usr/share" 0 -- \
	sh -c 'cd /usr/share && "$HUSK" do -- pwd'
expect_output "--cwd wins over the caller's directory" "/etc" 0 -- \
	sh -c 'cd /usr/share && "$HUSK" do --cwd /etc -- pwd'
# A root without the caller's directory: / (busybox as a one-file root's shell).
root=$(mktemp -d /tmp/husk-do-cli.XXXXXX)
here=$(mktemp -d /tmp/husk-do-cli-here.XXXXXX)
if command -v busybox >/dev/null && cp "$(command -v busybox)" "$root/busybox" &&
	"$root/busybox" true 2>/dev/null && ! ldd "$root/busybox" >/dev/null 2>&1; then
	expect_output "a directory the root lacks: /" "/" 0 -- \
		sh -c 'cd "$1" && "$HUSK" do --rootfs "$2" -- /busybox pwd' sh "$here" "$root"
	expect_output "the same directory in a volume: there" "$here" 0 -- \
		sh -c 'cd "$1" && "$HUSK" do --rootfs "$2" --volume "$1:$1" -- /busybox pwd' sh \
		"$here" "$root"
else
	echo "skip: a root without the caller's directory needs a static busybox"
fi
rm -rf "$root" "$here"

# --- the environment ---
expect_output "by default only PATH, HOME and TERM" "HOME PATH TERM" 0 -- \
	env -i PATH=/usr/bin:/bin TERM=dumb SECRET=s3 "$HUSK" do -- sh -c \
	'env | cut -d= -f1 | grep -v "^PWD$" | sort | tr "\n" " " | sed "s/ \$//"'
expect_output "-E passes the caller's environment" "s3 /x:/usr/bin:/bin" 0 -- \
	env -i PATH=/x:/usr/bin:/bin SECRET=s3 "$HUSK" do -E -- sh -c 'echo $SECRET $PATH'
expect_output "--env-inherit, with --env on top" "over" 0 -- \
	env SECRET=s3 "$HUSK" do --env-inherit --env SECRET=over -- sh -c 'echo $SECRET'
expect_output "--env K copies the caller's K alone" "s3 -" 0 -- \
	env SECRET=s3 OTHER=o "$HUSK" do --env SECRET -- sh -c 'echo $SECRET ${OTHER:--}'

# --- signals from the caller ---
# How a process ended, from python3 (a shell folds "killed by N" into 128+N).
how_it_ends() { # SIGNAL DELAY COMMAND...: runs COMMAND, sends SIGNAL after it says "ready"
	python3 - "$@" <<'EOF'
import os, signal, subprocess, sys, time
sig, args = getattr(signal, sys.argv[1]), sys.argv[2:]
p = subprocess.Popen(args, stdout=subprocess.PIPE)
line = p.stdout.readline()  # "ready": the guest runs (and installed its traps)
p.send_signal(sig)
start = time.monotonic()
out = p.stdout.read().decode().strip()
st = p.wait()
took = time.monotonic() - start
what = "signal %d" % -st if st < 0 else "exit %d" % st
words = [line.decode().strip(), out, what, "quick" if took < 30 else "slow (%.0f s)" % took]
print(" ".join(w for w in words if w))
EOF
}
expect_output "SIGTERM ends sleep as pid 1: husk do dies of SIGTERM" \
	"ready signal 15 quick" 0 -- how_it_ends SIGTERM "$HUSK" do -- sh -c 'echo ready; exec sleep 100'
expect_output "kill -INT ends sleep as pid 1: husk do dies of SIGINT" \
	"ready signal 2 quick" 0 -- how_it_ends SIGINT "$HUSK" do -- sh -c 'echo ready; exec sleep 100'
expect_output "a pid 1 that traps TERM runs its trap" "ready trapped exit 7 quick" 0 -- \
	how_it_ends SIGTERM "$HUSK" do -- sh -c 'trap "echo trapped; exit 7" TERM; echo ready
		while :; do sleep 0.1; done'
# Python turns SIGINT into KeyboardInterrupt and, uncaught, dies of SIGINT: as natively.
py='import time; print("ready", flush=True); time.sleep(100)'
native=$(how_it_ends SIGINT python3 -c "$py" 2>/dev/null)
expect_output "python3 as pid 1: KeyboardInterrupt ends it as natively ($native)" "$native" 0 -- \
	how_it_ends SIGINT "$HUSK" do -- python3 -c "$py"
# A pid 1 that handles the signal and exits 128+N exited: husk do exits so too, it is not killed.
expect_output "a pid 1 that traps INT and exits 130: husk do exits 130" "ready exit 130 quick" 0 -- \
	how_it_ends SIGINT "$HUSK" do -- sh -c 'trap "exit 130" INT; echo ready
		while :; do sleep 0.1; done'
expect_output "a pid 1 that ignores TERM goes on" "ready done exit 0 quick" 0 -- \
	how_it_ends SIGTERM "$HUSK" do -- sh -c 'trap "" TERM; echo ready; sleep 1; echo done'
expect_output "timeout 2 husk do -- sleep 100: 124, at once" "124 quick" 0 -- \
	sh -c 's=$(date +%s); timeout -k 20 2 "$HUSK" do -- sleep 100; st=$?; e=$(date +%s)
		[ $((e - s)) -lt 15 ] && q=quick || q=slow; echo $st $q'
# Inside the sandbox pid 1 keeps init's protection: a SIGTERM from a guest process is ignored.
expect_output "pid 1 still ignores a default-action SIGTERM from inside" "alive" 0 -- \
	"$HUSK" do -- sh -c 'kill -TERM $$; echo alive'
finish
