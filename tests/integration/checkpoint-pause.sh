#!/bin/sh
# husk pause/resume stops the guest's timers and timeouts with its clocks: a wait with a 1.5 s
# timeout that is in progress when the sandbox is paused for longer than that must not return
# before 1.5 s of the guest's own time have passed (Linux never returns a timeout early). One
# python3 thread per kind of wait: poll(2) (a restart block with a host deadline), a lock with a
# timeout (futex), setitimer (a kernel timer), sleep (nanosleep on the guest's clock), and a
# SIGALRM from an itimer; each writes the guest time it waited. Then a signal sent to the paused
# sandbox while its main thread sleeps: the sleep must end for the handler (EINTR) at resume.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

command -v python3 >/dev/null || {
	echo "ok - SKIP all: no python3"
	finish
}
oci_setup checkpoint-pause
mkdir -p "$bundle"
(cd "$bundle" && "$HUSK" spec) || fail "husk spec"
cat >"$work/guest.py" <<'PY'
import os, select, signal, threading, time
T = 1.5
def report(name, t0):
    open("/tmp/%s.tmp" % name, "w").write("%.3f" % (time.monotonic() - t0))
    os.rename("/tmp/%s.tmp" % name, "/tmp/%s" % name)
def started(name):
    open("/tmp/started-" + name, "w").write("1")
def w_poll():
    r, w = os.pipe()
    p = select.poll()
    p.register(r, select.POLLIN)
    started("poll"); t0 = time.monotonic()
    p.poll(T * 1000)
    report("poll", t0)
def w_futex():
    l = threading.Lock(); l.acquire()
    started("futex"); t0 = time.monotonic()
    l.acquire(timeout=T)
    report("futex", t0)
def w_sleep():
    started("sleep"); t0 = time.monotonic()
    time.sleep(T)
    report("sleep", t0)
fired = threading.Event()
signal.signal(signal.SIGALRM, lambda s, f: fired.set())
signal.signal(signal.SIGUSR1, lambda s, f: open("/tmp/usr1", "w").write("handled"))
for f in (w_poll, w_futex, w_sleep):
    threading.Thread(target=f, daemon=True).start()
started("timer"); t0 = time.monotonic()
signal.setitimer(signal.ITIMER_REAL, T)
while not fired.is_set():
    signal.pause()
report("timer", t0)
time.sleep(3600)
PY
host_root_args python3 "$work/guest.py"

H run -d --bundle "$bundle" p </dev/null >/dev/null 2>&1 || fail "run the guest"
for w in poll futex sleep timer; do wait_file p /tmp/started-$w >/dev/null; done
H pause p 2>"$work/err" && pass "pause while four waits are in progress" ||
	fail "pause" "$(cat "$work/err")"
# The pause lasts longer than the waits' timeouts (this is its length, not a synchronisation).
sleep 3
H resume p 2>"$work/err" || fail "resume" "$(cat "$work/err")"
for w in poll futex sleep timer; do
	v=$(wait_file p /tmp/$w)
	awk -v v="$v" 'BEGIN { exit !(v + 0 >= 1.5) }' &&
		pass "$w: the timeout ran on the guest's clock across the pause ($v s of 1.5)" ||
		fail "$w: returned early by the guest's clock" "$v s of 1.5"
done

# A signal that comes while the sandbox is paused, to a thread in a sleep the pause interrupted.
H pause p 2>"$work/err" || fail "pause again" "$(cat "$work/err")"
H kill p USR1 2>"$work/err" || fail "kill a paused sandbox" "$(cat "$work/err")"
H resume p 2>"$work/err" || fail "resume again" "$(cat "$work/err")"
v=$(wait_file p /tmp/usr1)
[ "$v" = handled ] && pass "a signal sent while paused is handled at resume" ||
	fail "a signal sent while paused" "$v"
H delete --force p
finish
