#!/bin/sh
# The OCI runtime's lifecycle with a busybox bundle made by `husk spec`: run, create/start/state/
# list/kill/delete, errors as runc words them, and cleanup after delete, kill -9 of the sentry
# and a failed create (no processes, cgroups or state left).
. "$(dirname "$0")/lib.sh"

BUSYBOX=$(command -v busybox || echo /bin/busybox)
if [ ! -x "$BUSYBOX" ] || ! file -L "$BUSYBOX" 2>/dev/null | grep -q static; then
	[ -x /bin/busybox ] && BUSYBOX=/bin/busybox
fi
if [ ! -x "$BUSYBOX" ]; then
	echo "ok - SKIP all: no static busybox (apt-get install busybox-static)"
	finish
fi

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
work=$(mktemp -d /tmp/husk-oci.XXXXXX)
root=$work/state
bundle=$work/bundle
H() { "$HUSK" --root "$root" "$@"; }
cleanup() {
	for id in $(H list -q 2>/dev/null); do H delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$bundle/rootfs/bin"
cp "$BUSYBOX" "$bundle/rootfs/bin/busybox"
for a in sh echo sleep cat true false; do ln -s busybox "$bundle/rootfs/bin/$a"; done
(cd "$bundle" && "$HUSK" spec) || fail "husk spec"
# The template wants a terminal (as runc's); these tests use plain stdio.
set_args() {
	sed -i -e 's/"terminal": true/"terminal": false/' "$bundle/config.json"
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = sys.argv[2:]
json.dump(c, open(p, "w"), indent=1)
PY
}

expect_status "spec refuses to overwrite config.json" 1 -- sh -c "cd '$bundle' && '$HUSK' spec"

# Live (non-zombie) host processes of the container's sentry/gofer, by the pids husk recorded.
live() {
	for p in "$@"; do
		st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
		[ -n "$st" ] && [ "$st" != Z ] && echo "$p"
	done
}
status_of() { H state "$1" 2>/dev/null | sed -n 's/.*"status": "\(.*\)".*/\1/p'; }
pid_of() { H state "$1" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'; }
gofer_of() { sed -n 's/.*"gofer_pid": \([0-9]*\).*/\1/p' "$root/$1/state.json"; }
cgroups_of() { ls -d /sys/fs/cgroup/*/husk/"$1" /sys/fs/cgroup/husk/"$1" 2>/dev/null; }

set_args echo hi
expect_output "run prints the process's output" "hi" 0 -- H run --bundle "$bundle" r1
expect_status "run leaves no state behind" 1 -- H state r1
set_args sh -c 'exit 3'
expect_status "run exits with the container's status" 3 -- H run --bundle "$bundle" r2

set_args sleep 1000
expect_status "create" 0 -- H create --bundle "$bundle" --pid-file "$work/pid" c1
pid=$(pid_of c1)
gofer=$(gofer_of c1)
if [ "$(status_of c1)" = created ] && [ "$(cat "$work/pid")" = "$pid" ] && [ -n "$(live "$pid")" ]; then
	pass "state after create is created, pid file is the live sentry"
else
	fail "state after create" "$(H state c1 2>&1)" "pid file: $(cat "$work/pid" 2>&1)"
fi
if [ -n "$(cgroups_of c1)" ] && grep -qx "$pid" $(cgroups_of c1 | head -n 1)/cgroup.procs; then
	pass "the sentry is in the container's cgroup"
else
	fail "the sentry is in the container's cgroup" "$(cgroups_of c1)"
fi
expect_status "create with an existing id fails" 1 -- H create --bundle "$bundle" c1
out=$(H create --bundle "$bundle" c1 2>&1)
case "$out" in *"container with id exists: c1"*) pass "duplicate id message as runc" ;;
*) fail "duplicate id message as runc" "$out" ;; esac
expect_status "start" 0 -- H start c1
[ "$(status_of c1)" = running ] && pass "state after start is running" ||
	fail "state after start is running" "$(H state c1 2>&1)"
expect_status "start twice fails" 1 -- H start c1
H list | grep -qE "^c1 +$pid +running +$bundle " && pass "list shows it running" ||
	fail "list shows it running" "$(H list 2>&1)"
[ "$(H list -q)" = c1 ] && pass "list -q" || fail "list -q" "$(H list -q 2>&1)"
H list --format json | grep -q '"id":"c1","pid":'"$pid"',"status":"running"' &&
	pass "list --format json" || fail "list --format json" "$(H list --format json 2>&1)"
expect_status "delete of a running container needs --force" 1 -- H delete c1
expect_status "kill KILL" 0 -- H kill c1 KILL
n=0
while [ "$(status_of c1)" != stopped ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ "$(status_of c1)" = stopped ] && [ "$(pid_of c1)" = 0 ] && pass "state after kill is stopped" ||
	fail "state after kill is stopped" "$(H state c1 2>&1)"
out=$(H kill c1 KILL 2>&1)
[ $? -ne 0 ] && case "$out" in *"container not running"*) true ;; *) false ;; esac &&
	pass "kill of a stopped container: container not running" || fail "kill stopped" "$out"
cg=$(cgroups_of c1)
expect_status "delete" 0 -- H delete c1
out=$(H state c1 2>&1)
[ $? -ne 0 ] && case "$out" in *"container c1 does not exist"*) true ;; *) false ;; esac &&
	pass "state after delete: does not exist" || fail "state after delete" "$out"
if [ -z "$(live $pid $gofer)" ] && [ -z "$(cgroups_of c1)" ] && [ ! -e "$root/c1" ]; then
	pass "delete leaves no process, cgroup or state"
else
	fail "delete leaves nothing" "live: $(live $pid $gofer)" "cgroups: $(cgroups_of c1)" "$(ls $root)"
fi

# kill -9 of the sentry behind husk's back: stopped, and delete cleans up.
H create --bundle "$bundle" c2 >/dev/null 2>&1 && H start c2
pid=$(pid_of c2)
gofer=$(gofer_of c2)
kill -9 "$pid"
n=0
while [ "$(status_of c2)" != stopped ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ "$(status_of c2)" = stopped ] && pass "a killed sentry shows as stopped" ||
	fail "a killed sentry shows as stopped" "$(H state c2 2>&1)"
n=0
while [ -n "$(live $gofer)" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -z "$(live $gofer)" ] && pass "the gofer exits with the sentry" || fail "gofer left" "$gofer"
H delete c2
if [ -z "$(cgroups_of c2)" ] && [ ! -e "$root/c2" ]; then
	pass "delete after kill -9 leaves no cgroup or state"
else
	fail "delete after kill -9" "$(cgroups_of c2)" "$(ls $root)"
fi

# delete --force of a running container; delete of a created one.
H create --bundle "$bundle" c3 >/dev/null 2>&1 && H start c3
pid=$(pid_of c3)
expect_status "delete --force of a running container" 0 -- H delete --force c3
[ -z "$(live $pid)" ] && [ ! -e "$root/c3" ] && pass "delete --force kills and cleans" ||
	fail "delete --force kills and cleans" "$(live $pid)"
H create --bundle "$bundle" c4 >/dev/null 2>&1
pid=$(pid_of c4)
expect_status "delete of a created container" 0 -- H delete c4
[ -z "$(live $pid)" ] && pass "delete of a created container kills its sentry" ||
	fail "delete of created" "$(live $pid)"

# pause/resume through the freezer.
H create --bundle "$bundle" c5 >/dev/null 2>&1 && H start c5
if H pause c5 2>/dev/null; then
	[ "$(status_of c5)" = paused ] && H resume c5 && [ "$(status_of c5)" = running ] &&
		pass "pause and resume" || fail "pause and resume" "$(H state c5 2>&1)"
else
	echo "ok - SKIP pause: no freezer cgroup on this host"
fi
H delete --force c5

# A program that does not exist fails at create, leaving nothing.
set_args /no/such/program
expect_status "create of a missing program fails" 1 -- H create --bundle "$bundle" c6
[ ! -e "$root/c6" ] && [ -z "$(cgroups_of c6)" ] && pass "failed create leaves nothing" ||
	fail "failed create leaves nothing" "$(ls $root)"

# Broken configs: a message naming the field, no state left.
set_args echo hi
sed -i 's/"cwd": "\/"/"cwd": 7/' "$bundle/config.json"
out=$(H create --bundle "$bundle" c7 2>&1)
case "$out" in *"config.json: process.cwd: expected a string, got an integer"*)
	pass "a wrong type names the field" ;;
*) fail "a wrong type names the field" "$out" ;; esac
[ ! -e "$root/c7" ] && pass "a broken config leaves no state" || fail "broken config state"
expect_status "unknown container: state" 1 -- H state nope
expect_status "checkpoint is not supported yet" 1 -- H checkpoint c1
H features | grep -q '"ociVersionMax": "1.0.2"' && pass "features" || fail "features"

finish
