#!/bin/sh
# Issue 3's "done when" lines that depend on processes and signals, and the churn test: 500
# fork/exec/wait cycles and 200 threads created and joined leave no host process, host thread,
# FD or memory-file pages behind in the sentry (observed from the host through /proc).
. "$(dirname "$0")/lib.sh"

expect_output "pipeline of three" "3 2 1 " 0 -- \
	"$HUSK" do -- /bin/sh -c 'for i in 1 2 3; do echo $i; done | sort -r | tr "\n" " "'
expect_output "kill a background job" "143" 0 -- \
	"$HUSK" do -- /bin/sh -c 'sleep 10 & kill $!; wait $!; echo $?'
expect_output "timeout" "124" 0 -- "$HUSK" do -- /bin/sh -c 'timeout 1 sleep 10; echo $?'
expect_output "subshells and command substitution" "a b 3" 0 -- \
	"$HUSK" do -- /bin/sh -c 'x=$(echo a; (echo b)); echo $x $( (exit 3); echo $?)'
expect_output "background jobs and wait" "1 2 0" 0 -- \
	"$HUSK" do -- /bin/sh -c '(exit 1) & a=$!; (exit 2) & b=$!; wait $a; x=$?; wait $b; y=$?; wait; echo $x $y $?'
# pid 1 ignores signals it has no handler for (as init in a pid namespace), but not faults.
expect_output "pid 1 survives kill -TERM \$\$" "alive" 0 -- \
	"$HUSK" do -- /bin/sh -c 'kill -TERM $$; echo alive'
expect_status "pid 1 killed by a fault: 128+N" 139 -- \
	"$HUSK" do -- python3 -c 'import ctypes; ctypes.string_at(0)'
expect_output "a child killed by a signal" "143" 0 -- \
	"$HUSK" do -- /bin/sh -c '/bin/sh -c "kill -TERM \$\$"; echo $?'
expect_output "python subprocess" "hi" 0 -- "$HUSK" do -- python3 -c \
	'import subprocess; print(subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip())'
expect_output "python threads: 8 x 400000 locked increments" "3200000" 0 -- "$HUSK" do -- python3 -c '
import threading
n = 0
lock = threading.Lock()
def work():
    global n
    for _ in range(400000):
        with lock:
            n += 1
ts = [threading.Thread(target=work) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(n)'
# Subprocesses started from several threads at once (many sentry threads and malloc arenas).
expect_output "python subprocess from 4 threads" "20" 0 -- "$HUSK" do -- python3 -c '
import subprocess, threading
out = []
def work():
    for _ in range(5):
        out.append(subprocess.run(["echo", "x"], capture_output=True).stdout)
ts = [threading.Thread(target=work) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(len(out))'
# When pid 1 exits, the sandbox ends: a background child does not keep it alive (the
# timeout is only a watchdog: husk waiting for the child would never return).
expect_output "the sandbox ends with pid 1, killing the rest" "" 0 -- \
	timeout 120 "$HUSK" do -- /bin/sh -c 'sleep 100000 & exit 0'
expect_output "a stopped child does not hold the sandbox" "" 0 -- \
	timeout 120 "$HUSK" do -- /bin/sh -c 'sleep 100000 & kill -STOP $!; exit 0'

# --- churn ---
dir=$(mktemp -d)
mkfifo "$dir/in"
"$HUSK" do -- python3 -c '
import os, sys, threading
def cycle(forks, threads):
    for _ in range(forks):
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/true", ["true"])
        os.waitpid(pid, 0)
    for _ in range(threads):
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
cycle(5, 5)  # warm up allocator caches and the thread stack cache
print("base", flush=True)
sys.stdin.readline()
cycle(500, 200)
print("after", flush=True)
sys.stdin.readline()
' <"$dir/in" >"$dir/out" 2>"$dir/err" &
husk_pid=$!
exec 3>"$dir/in"

# wait_for WORD: until the guest printed WORD (60 s at most).
wait_for() {
	i=0
	while ! grep -qx "$1" "$dir/out" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -qx "$1" "$dir/out"
}

# measure: children, threads, fds of the sentry and allocated blocks of its memory file.
measure() {
	kids=$(ps -o pid= --ppid "$sentry" | wc -l)
	threads=$(awk '/^Threads:/ { print $2 }' "/proc/$sentry/status")
	fds=$(ls "/proc/$sentry/fd" | wc -l)
	blocks=0
	for f in /proc/"$sentry"/fd/*; do
		case "$(readlink "$f")" in
		/memfd:husk-memory*) blocks=$(stat -L -c %b "$f") ;;
		esac
	done
	echo "$kids $threads $fds $blocks"
}

if wait_for base; then
	sentry=$(pgrep -P "$husk_pid" -x husk-sentry)
	before=$(measure)
	echo >&3
	if wait_for after; then
		after=$(measure)
		set -- $before
		b_kids=$1 b_threads=$2 b_fds=$3 b_blocks=$4
		set -- $after
		# 4 MiB of slack (512-byte blocks) for the guest's own heap growth.
		if [ "$1" = "$b_kids" ] && [ "$2" = "$b_threads" ] && [ "$3" = "$b_fds" ] &&
			[ "$4" -le $((b_blocks + 8192)) ]; then
			pass "churn leaves nothing behind (children threads fds blocks: $before -> $after)"
		else
			fail "churn leaves nothing behind" \
				"children threads fds memfile-blocks before: $before" "after: $after"
		fi
	else
		fail "churn: 500 fork/exec/wait and 200 threads" "$(tail -n 5 "$dir/err")"
	fi
else
	fail "churn: the guest started" "$(tail -n 5 "$dir/err")"
fi
echo >&3
exec 3>&-
wait "$husk_pid"
st=$?
if [ "$st" = 0 ] && [ -n "${sentry:-}" ] && [ -z "$(ps -o pid= --ppid "$sentry")" ]; then
	pass "churn sandbox exited 0 and left no stub"
else
	fail "churn sandbox exited 0 and left no stub" "status $st" "$(tail -n 5 "$dir/err")"
fi
rm -rf "$dir"

finish
