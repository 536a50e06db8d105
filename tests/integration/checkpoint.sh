#!/bin/sh
# husk checkpoint / restore / pause / resume with a busybox bundle: each check looks at the state
# a restored sandbox carries on with (a shell's counter, a pipeline mid-stream, a file deleted
# while open, signal handlers and a pending signal), two restores of one image diverging, a
# paused sandbox running no guest code, and images that must be refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup checkpoint
oci_bundle sh echo sleep cat true kill ls head ps
mkdir -p "$bundle/rootfs/tmp"
# The guest writes sysctls below: /proc/sys is not in readonlyPaths (runc's default has it).
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["readonlyPaths"] = [r for r in c["linux"].get("readonlyPaths", []) if r != "/proc/sys"]
json.dump(c, open(p, "w"), indent=1)
PY

# --- a shell loop with a counter ---
set_args sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.02; done'
H run -d --bundle "$bundle" loop </dev/null >/dev/null 2>&1 || fail "run the loop"
before=$(wait_above loop /tmp/count 5)
H exec loop sh -c 'echo 4321 > /proc/sys/net/core/somaxconn &&
	echo "40000 50000" > /proc/sys/net/ipv4/ip_local_port_range' ||
	fail "guest writes to /proc/sys"
gu0=$(H exec loop cat /proc/uptime | cut -d' ' -f1)
hu0=$(cut -d' ' -f1 /proc/uptime)
if H checkpoint --image-path "$work/img1" loop 2>"$work/err"; then
	pass "checkpoint of a running shell loop"
else
	fail "checkpoint of a running shell loop" "$(cat "$work/err")"
fi
[ "$(status_of loop)" = checkpointed ] && pass "state says checkpointed" ||
	fail "state says checkpointed" "$(H state loop 2>&1)"
[ -s "$work/img1/husk-image.pb" ] && [ -s "$work/img1/husk-pages.img" ] &&
	pass "the image folder holds the image and its pages" ||
	fail "image files" "$(ls -l "$work/img1" 2>&1)"
# What the loop had reached when it was saved: it goes on from there, not from 0.
saved=$before
sleep 1 # the image waits at least this long: the guest's clock must not count it
if H restore -d --image-path "$work/img1" --bundle "$bundle" loop </dev/null 2>"$work/err" >/dev/null; then
	pass "restore under the same id"
else
	fail "restore under the same id" "$(cat "$work/err")"
fi
[ "$(status_of loop)" = running ] && pass "restored container is running" ||
	fail "restored container is running" "$(H state loop 2>&1)"
first=$(wait_above loop /tmp/count 0)
later=$(wait_above loop /tmp/count "${first:-0}")
gu1=$(H exec loop cat /proc/uptime | cut -d' ' -f1)
hu1=$(cut -d' ' -f1 /proc/uptime)
awk -v g0="$gu0" -v g1="$gu1" -v h0="$hu0" -v h1="$hu1" \
	'BEGIN { exit !(g1 > g0 && (h1 - h0) - (g1 - g0) >= 0.95) }' &&
	pass "the guest's clock goes on from the checkpoint (guest $gu0 -> $gu1, host $hu0 -> $hu1)" ||
	fail "the guest's clock after restore" "guest $gu0 -> $gu1, host $hu0 -> $hu1"
s1=$(H exec loop cat /proc/sys/net/core/somaxconn)
s2=$(H exec loop cat /proc/sys/net/ipv4/ip_local_port_range | tr '\t' ' ')
[ "$s1" = 4321 ] && [ "$s2" = "40000 50000" ] && pass "sysctls the guest set survive" ||
	fail "sysctls after restore" "$s1 / $s2"
[ -n "$first" ] && [ "$first" -ge "$saved" ] && [ "$later" -gt "$first" ] &&
	pass "the counter goes on from where it was saved ($saved -> $first -> $later)" ||
	fail "the counter goes on" "saved $saved, after restore $first then $later"

# --- leave running; two restores of one image diverge ---
H checkpoint --leave-running --image-path "$work/img2" loop 2>"$work/err" ||
	fail "checkpoint --leave-running" "$(cat "$work/err")"
[ "$(status_of loop)" = running ] && pass "--leave-running leaves it running" ||
	fail "--leave-running leaves it running" "$(H state loop 2>&1)"
H restore -d --image-path "$work/img2" --bundle "$bundle" twin1 </dev/null >/dev/null 2>&1 &&
	H restore -d --image-path "$work/img2" --bundle "$bundle" twin2 </dev/null >/dev/null 2>&1 &&
	pass "two restores of one image" || fail "two restores of one image"
H exec twin1 sh -c 'echo one > /tmp/who' && H exec twin2 sh -c 'echo two > /tmp/who'
[ "$(cat_in twin1 /tmp/who)" = one ] && [ "$(cat_in twin2 /tmp/who)" = two ] &&
	[ -z "$(cat_in loop /tmp/who)" ] &&
	pass "restored sandboxes diverge (files)" ||
	fail "restored sandboxes diverge" "$(cat_in twin1 /tmp/who) $(cat_in twin2 /tmp/who)"
c1=$(wait_above twin1 /tmp/count 0) && c2=$(wait_above twin2 /tmp/count 0) &&
	pass "both restored loops run" || fail "both restored loops run" "$c1 $c2"
for id in twin1 twin2; do H delete --force $id; done

# --- husk fork: running copies, the original going on too, nothing left in the state root ---
expect_status "husk fork into two copies" 0 -- H fork loop copy1 copy2
c1=$(wait_above copy1 /tmp/count 0) && c2=$(wait_above copy2 /tmp/count 0) &&
	o=$(wait_above loop /tmp/count 0) &&
	pass "the copies and the original all run ($c1 $c2 $o)" || fail "fork copies run" "$c1 $c2 $o"
[ -z "$(ls -d "$root"/fork-* 2>/dev/null)" ] && pass "fork leaves no image behind" ||
	fail "fork leaves no image behind" "$(ls "$root")"

# --- a checkpoint of a paused sandbox (containerd pauses before it checkpoints) ---
# copy1's tasks were restored and never saved since: each must give its FP state while parked
# by the pause already. The sandbox stays paused; the image runs on from the pause.
vp=$(cat_in copy1 /tmp/count)
H pause copy1 || fail "pause copy1"
if H checkpoint --leave-running --image-path "$work/img7" copy1 2>"$work/err"; then
	pass "checkpoint of a paused sandbox"
else
	fail "checkpoint of a paused sandbox" "$(cat "$work/err")"
fi
[ "$(status_of copy1)" = paused ] && pass "it is still paused after the checkpoint" ||
	fail "still paused after the checkpoint" "$(H state copy1 2>&1)"
H resume copy1 || fail "resume copy1"
if H restore -d --image-path "$work/img7" --bundle "$bundle" frozen </dev/null >/dev/null 2>"$work/err"; then
	first=$(wait_above frozen /tmp/count 0)
	later=$(wait_above frozen /tmp/count "${first:-0}")
	[ -n "$vp" ] && [ "$first" -ge "$vp" ] && [ "$later" -gt "$first" ] &&
		pass "the paused sandbox's image runs on from the pause ($vp -> $first -> $later)" ||
		fail "restore of the paused sandbox's image" "paused at $vp, then $first, $later"
else
	fail "restore of the paused sandbox's image" "$(cat "$work/err")"
fi
for id in copy1 copy2 frozen; do H delete --force $id; done

# --- pause and resume: no guest code runs in between ---
cpu() { H events --stats "$1" 2>/dev/null | sed -n 's/.*"usage":{[^}]*"total":\([0-9]*\).*/\1/p'; }
up() { H exec "$1" cat /proc/uptime 2>/dev/null | cut -d' ' -f1; }
hnow() { cut -d' ' -f1 /proc/uptime; }
g0=$(up loop)
h0=$(hnow)
if H pause loop 2>"$work/err"; then
	pass "pause"
else
	fail "pause" "$(cat "$work/err")"
fi
[ "$(status_of loop)" = paused ] && pass "state says paused" || fail "state says paused" "$(H state loop)"
expect_status "exec into a paused container is refused" 1 -- H exec loop true
u1=$(cpu loop)
sleep 0.3
u2=$(cpu loop)
[ -n "$u1" ] && [ "$u1" = "$u2" ] && pass "a paused sandbox runs no guest code (cpu $u1 = $u2)" ||
	fail "a paused sandbox runs no guest code" "cpu $u1 then $u2"
expect_status "exec --ignore-paused is taken (it runs after resume)" 0 -- \
	H exec --ignore-paused -d loop true
sleep 0.5 # the pause lasts at least this long: the guest's clock must not count it
H resume loop 2>"$work/err" && [ "$(status_of loop)" = running ] && pass "resume" ||
	fail "resume" "$(cat "$work/err") $(H state loop)"
g1=$(up loop)
h1=$(hnow)
awk -v g0="$g0" -v g1="$g1" -v h0="$h0" -v h1="$h1" \
	'BEGIN { exit !(g1 > g0 && (h1 - h0) - (g1 - g0) >= 0.75) }' &&
	pass "the guest's clock stood still while paused (guest +$g0..$g1, host $h0..$h1)" ||
	fail "the guest's clock stood still while paused" "guest $g0 -> $g1, host $h0 -> $h1"
v=$(cat_in loop /tmp/count)
w=$(wait_above loop /tmp/count "${v:-0}") && pass "the loop runs again after resume" ||
	fail "the loop runs again after resume" "$v $w"
H delete --force loop

# --- a pipeline mid-stream, a file deleted while open, signal handlers, a pending signal ---
set_args sh -c '
trap "echo usr1 >> /tmp/sig" USR1
echo kept > /tmp/del; exec 3< /tmp/del; rm /tmp/del
(i=0; while :; do i=$((i+1)); echo $i; sleep 0.02; done | while read l; do echo $l > /tmp/last; done) &
while :; do sleep 0.05; done'
H run -d --bundle "$bundle" pipe </dev/null >/dev/null 2>&1 || fail "run the pipeline"
p=$(wait_above pipe /tmp/last 3)
H checkpoint --image-path "$work/img3" pipe 2>"$work/err" || fail "checkpoint a pipeline" "$(cat "$work/err")"
H restore -d --image-path "$work/img3" --bundle "$bundle" pipe </dev/null >/dev/null 2>"$work/err" ||
	fail "restore a pipeline" "$(cat "$work/err")"
# (the file is rewritten each line: a read may find it empty, wait_above reads again)
q=$(wait_above pipe /tmp/last 0)
r=$(wait_above pipe /tmp/last "${q:-0}")
[ -n "$q" ] && [ "$q" -ge "$p" ] && [ "$r" -gt "$q" ] &&
	pass "a pipeline goes on through its pipe after restore ($p -> $q -> $r)" ||
	fail "pipeline after restore" "$p $q $r"
[ "$(H exec pipe cat /proc/1/fd/3 2>&1)" = kept ] &&
	pass "a file deleted while open is still readable after restore" ||
	fail "deleted open file after restore" "$(H exec pipe cat /proc/1/fd/3 2>&1)"
H kill pipe USR1
i=0
while [ "$(cat_in pipe /tmp/sig)" != usr1 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat_in pipe /tmp/sig)" = usr1 ] && pass "the shell's signal handler survives restore" ||
	fail "signal handler after restore" "$(cat_in pipe /tmp/sig)"
sentry=$(pid_of pipe)
grep -q '^Seccomp:[[:space:]]*2' "/proc/$sentry/status" &&
	pass "the restored sentry is confined (seccomp filter)" ||
	fail "the restored sentry is confined" "$(grep Seccomp "/proc/$sentry/status")"
[ "$(H exec pipe ls /)" = "$(H exec pipe ls / 2>/dev/null)" ] &&
	H exec pipe ls / | grep -q '^bin$' && ! H exec pipe ls / | grep -q '^home$' &&
	pass "the restored guest sees its bundle's root, not the host's" ||
	fail "the restored guest's root" "$(H exec pipe ls / 2>&1)"
H delete --force pipe

# --- a zombie (a child its parent never waits for) stays one ---
set_args sh -c 'sh -c "exit 7" & exec sleep 1000'
H run -d --bundle "$bundle" zomb </dev/null >/dev/null 2>&1
i=0
while ! H exec zomb ps -o pid,stat,comm 2>/dev/null | grep -q ' Z ' && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
# Its pid: 2, or 3 if an exec of the loop above came first.
z=$(H exec zomb ps -o pid,stat,comm 2>/dev/null | awk '$2 == "Z" && $3 == "sh" { print $1 }')
H checkpoint --image-path "$work/img5" zomb 2>"$work/err" &&
	H restore -d --image-path "$work/img5" --bundle "$bundle" zomb </dev/null >/dev/null 2>&1 &&
	[ -n "$z" ] && H exec zomb ps -o pid,stat,comm | grep -q "^ *$z Z *sh\$" &&
	pass "a zombie is saved and restored as one" ||
	fail "a zombie after restore" "$(cat "$work/err")" "$(H exec zomb ps -o pid,stat,comm 2>&1)"
H delete --force zomb

# --- Python: 4 threads, a pending timer, a blocked pending signal (the host's / as root) ---
if command -v python3 >/dev/null; then
	pyb=$work/pybundle
	mkdir -p "$pyb"
	(cd "$pyb" && "$HUSK" spec)
	python3 - "$pyb/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["root"] = {"path": "/", "readonly": False}
c["process"]["terminal"] = False
c["process"]["args"] = ["python3", "-c", '''
import os, signal, threading, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])  # the threads inherit it
counts = [0, 0, 0, 0]
def work(i):
    while True:
        counts[i] += 1
        time.sleep(0.01)
for i in range(4):
    threading.Thread(target=work, args=(i,), daemon=True).start()
fired = []
signal.signal(signal.SIGALRM, lambda s, f: fired.append(1))
signal.signal(signal.SIGUSR1, lambda s, f: open("/tmp/usr1", "w").write("handled"))
os.kill(os.getpid(), signal.SIGUSR1)  # pending while blocked
signal.setitimer(signal.ITIMER_REAL, 1.5)
open("/tmp/ready", "w").write("1")
while True:
    if os.path.exists("/tmp/go"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
    open("/tmp/py.tmp", "w").write("%s %d" % (" ".join(map(str, counts)), len(fired)))
    os.rename("/tmp/py.tmp", "/tmp/py")
    time.sleep(0.02)
''']
json.dump(c, open(p, "w"))
PY
	H run -d --bundle "$pyb" py </dev/null >/dev/null 2>&1
	i=0
	while [ "$(cat_in py /tmp/ready)" != 1 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	H checkpoint --image-path "$work/img6" py 2>"$work/err" ||
		fail "checkpoint of python" "$(cat "$work/err")"
	H restore -d --image-path "$work/img6" --bundle "$pyb" py </dev/null >/dev/null 2>"$work/err" ||
		fail "restore of python" "$(cat "$work/err")"
	a=$(cat_in py /tmp/py)
	i=0
	while [ "$(cat_in py /tmp/py | cut -d' ' -f5)" != 1 ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	b=$(cat_in py /tmp/py)
	set -- $a
	a1=$1 a2=$2 a3=$3 a4=$4
	set -- $b
	[ -n "$a" ] && [ "$1" -gt "$a1" ] && [ "$2" -gt "$a2" ] && [ "$3" -gt "$a3" ] &&
		[ "$4" -gt "$a4" ] && pass "python's 4 threads all run after restore ($a -> $b)" ||
		fail "python's threads after restore" "$a -> $b"
	[ "$5" = 1 ] && pass "python's pending timer fires after restore" ||
		fail "python's timer after restore" "$b"
	[ -z "$(cat_in py /tmp/usr1)" ] && pass "the blocked signal stays pending" ||
		fail "the blocked signal stays pending" "$(cat_in py /tmp/usr1)"
	H exec py sh -c 'echo > /tmp/go'
	i=0
	while [ "$(cat_in py /tmp/usr1)" != handled ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ "$(cat_in py /tmp/usr1)" = handled ] &&
		pass "the pending signal is delivered once unblocked" ||
		fail "the pending signal after restore" "$(cat_in py /tmp/usr1)"
	H delete --force py
else
	echo "ok - SKIP python: no python3"
fi

# --- what an image cannot hold yet is refused with its name; the sandbox goes on ---
set_args sh -c 'sleep 1000'
H run -d --bundle "$bundle" keep </dev/null >/dev/null 2>&1
H exec -d keep sh -c 'exec 4<>/dev/null; cat /proc/self/stat > /dev/null; sleep 1000 < /proc/self/stat'
expect_status "checkpoint of a sandbox with a procfs file open fails" 1 -- \
	H checkpoint --leave-running --image-path "$work/img4" --work-path "$work/w4" keep
# Where runc's CRIU logs, and the file containerd's shim names in its error.
grep -q '^husk: checkpoint failed: .*cannot save' "$work/w4/dump.log" 2>/dev/null &&
	pass "the reason is in the work path's dump.log ($(cut -c1-80 "$work/w4/dump.log"))" ||
	fail "the reason is in the work path's dump.log" "$(cat "$work/w4/dump.log" 2>&1)"
[ "$(status_of keep)" = running ] && [ ! -e "$work/img4/husk-image.pb" ] &&
	pass "a failed checkpoint leaves the sandbox running and no image" ||
	fail "failed checkpoint" "$(status_of keep) $(ls "$work/img4" 2>&1)"
H delete --force keep

# --- images that must be refused: nothing is left behind ---
refused() {
	name=$1 dir=$2
	out=$(H restore -d --image-path "$dir" --bundle "$bundle" bad </dev/null 2>&1)
	st=$?
	if [ $st -ne 0 ] && ! H state bad >/dev/null 2>&1 && ! pgrep -f "restore=$dir" >/dev/null; then
		pass "$name is refused, nothing left ($(echo "$out" | tail -1 | cut -c1-90))"
	else
		fail "$name is refused" "status $st: $out" "$(H list 2>&1)"
		H delete --force bad >/dev/null 2>&1
	fi
}
mkdir -p "$work/bad1" "$work/bad2" "$work/bad3" "$work/bad4"
head -c 5000 /dev/urandom > "$work/bad1/husk-image.pb"
cp "$work/img1/husk-pages.img" "$work/bad1/"
refused "a garbage image" "$work/bad1"
head -c 100 "$work/img1/husk-image.pb" > "$work/bad2/husk-image.pb"
cp "$work/img1/husk-pages.img" "$work/bad2/"
refused "a truncated image" "$work/bad2"
cp "$work/img1/husk-image.pb" "$work/bad3/"
head -c 4096 "$work/img1/husk-pages.img" > "$work/bad3/husk-pages.img"
refused "a truncated pages file" "$work/bad3"
refused "a folder with no image" "$work/bad4"
# Another version: the first field (version, varint) made 99.
python3 - "$work/img1/husk-image.pb" "$work/bad4/husk-image.pb" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
assert b[0] == 0x08
b[1] = 99
open(sys.argv[2], "wb").write(b)
PY
cp "$work/img1/husk-pages.img" "$work/bad4/"
out=$(H restore -d --image-path "$work/bad4" --bundle "$bundle" bad </dev/null 2>&1)
echo "$out" | grep -q "version 99" && pass "an image of another version is refused by name" ||
	fail "another version" "$out"

finish
