#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Signals inside `husk do`: shells killing jobs, default actions seen by a parent, stop and
# continue, Python handlers, and host signals forwarded to the guest's pid 1.
. "$(dirname "$0")/lib.sh"

expect_output "kill of a background job: wait reports 143" "143" 0 -- \
	"$HUSK" do -- sh -c 'sleep 10 & kill $!; wait $!; echo $?'
expect_output "core-dumping default action: the parent sees 128+11" "139" 0 -- \
	"$HUSK" do -- sh -c 'sh -c "kill -SEGV \$\$" 2>/dev/null; echo $?'
expect_output "SIGKILL: 137" "137" 0 -- \
	"$HUSK" do -- sh -c 'sh -c "kill -KILL \$\$"; echo $?'
expect_output "stop and continue a child, seen by waitpid" "stopped 19
continued
exited 7" 0 -- \
	"$HUSK" do -- python3 -c '
import os, signal
# The child exits only when told (a pipe): had it exited right after SIGCONT, waitpid would
# report the exit, not the continue (Linux too), and which comes first is up to the scheduler.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.kill(os.getpid(), signal.SIGSTOP)
    os.read(r, 1)
    os._exit(7)
os.close(r)
_, st = os.waitpid(pid, os.WUNTRACED)
print("stopped", os.WSTOPSIG(st) if os.WIFSTOPPED(st) else st, flush=True)
os.kill(pid, signal.SIGCONT)
_, st = os.waitpid(pid, os.WCONTINUED)
print("continued" if os.WIFCONTINUED(st) else st, flush=True)
os.write(w, b"x")
_, st = os.waitpid(pid, 0)
print("exited", os.WEXITSTATUS(st))'
expect_output "trap runs the shell's handler" "trapped" 0 -- \
	"$HUSK" do -- sh -c 'trap "echo trapped" USR1; kill -USR1 $$'
expect_output "timeout kills with SIGTERM: 124" "124" 0 -- \
	"$HUSK" do -- sh -c 'timeout 1 sleep 10; echo $?'
# pid 1 with the default action ignores signals from inside the sandbox, as a container's init.
expect_output "pid 1 ignores a default-action SIGTERM from inside" "alive" 0 -- \
	"$HUSK" do -- sh -c 'kill -TERM $$; echo alive'
expect_output "Python signal.signal + os.kill" "got 10
after" 0 -- \
	"$HUSK" do -- python3 -c '
import os, signal
signal.signal(signal.SIGUSR1, lambda s, f: print("got", s, flush=True))
os.kill(os.getpid(), signal.SIGUSR1)
print("after")'

# Forwarding: SIGTERM sent to husk reaches pid 1's handler.
out=/tmp/husk-sig-fwd.$$
"$HUSK" do -- python3 -c '
import signal, sys, time
def h(s, f):
    print("handled", s, flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, h)
print("ready", flush=True)
time.sleep(60)' >"$out" 2>&1 &
hpid=$!
i=0
while [ $i -lt 100 ] && ! grep -q ready "$out" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
kill -TERM "$hpid"
wait "$hpid"
st=$?
if [ "$st" = 3 ] && grep -q "handled 15" "$out"; then
	pass "SIGTERM to husk do reaches the guest's handler (status 3)"
else
	fail "SIGTERM to husk do reaches the guest's handler (status 3)" "status $st" \
		"output: $(head -c 600 "$out")"
fi
rm -f "$out"

# Forwarding SIGINT to a shell that traps it.
out=/tmp/husk-sig-int.$$
"$HUSK" do -- sh -c 'trap "echo int; exit 5" INT; echo ready; while :; do sleep 0.1; done' \
	>"$out" 2>&1 &
hpid=$!
i=0
while [ $i -lt 100 ] && ! grep -q ready "$out" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
kill -INT "$hpid"
wait "$hpid"
st=$?
if [ "$st" = 5 ] && grep -q "^int$" "$out"; then
	pass "SIGINT to husk do runs the guest shell's trap"
else
	fail "SIGINT to husk do runs the guest shell's trap" "status $st" \
		"output: $(head -c 600 "$out")"
fi
rm -f "$out"

finish
