#!/bin/sh
# An OOM kill is reported the way engines detect it (issue 16). A container with a 64 MiB memory
# limit runs tail as pid 1; an exec'd sh reads 200 MB into a variable. runc's container is
# OOM-killed by the kernel; husk's sentry kills the sh itself, and husk-oomwatch makes that a
# real OOM in the container's host memory cgroup (runtime/oomreport.c). On both (runc with the
# same bundle, when installed):
#   - the exec ends with SIGKILL (137), without its "survived";
#   - an eventfd registered before on the cgroup's memory.oom_control (cgroup.event_control, as
#     containerd's runc shim does on cgroup v1) fires, and memory.oom_control's oom_kill goes up
#     (pure v2: memory.events' oom_kill);
#   - `events` prints {"type":"oom","id":ID};
#   - pid 1 still answers an exec (husk: the sentry and the gofer were not killed by the host);
#   - husk: nothing of the reporter is left after delete;
#   - pid 1 over the limit: the OOM is counted by the time the container is stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

if [ "$(id -u)" != 0 ]; then
	echo "ok - SKIP all: needs root (the container's cgroup and cgroup.event_control)"
	finish
fi
if [ -f /sys/fs/cgroup/memory/memory.oom_control ]; then
	v1=true
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	v1=false
else
	echo "ok - SKIP all: no memory cgroup controller here (husk makes no OOM report then)"
	finish
fi

oci_setup oci-oom-report
# runc names a container's cgroup /ID (no cgroupsPath in the bundle): ids of this run's own, so
# that two runs at once (two make checks) never share one.
run=${work##*.}

oci_bundle sh tail head tr echo
set_args tail -f /dev/null
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c.setdefault("linux", {}).setdefault("resources", {})["memory"] = {"limit": 64 << 20}
json.dump(c, open(p, "w"), indent=1)
PY

have_runc=false
command -v runc >/dev/null 2>&1 && have_runc=true
runc() { command runc --root "$work/runc" "$@"; }
husk() { H "$@"; }
EVENTFD=$(dirname "$0")/oom_eventfd.py

# memdir PID: the memory cgroup directory of host process PID.
memdir() {
	if $v1; then
		echo "/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' "/proc/$1/cgroup")"
	else
		echo "/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' "/proc/$1/cgroup")"
	fi
}
# oom_kills DIR: the cgroup's oom_kill count.
oom_kills() {
	if $v1; then
		awk '$1 == "oom_kill" {print $2}' "$1/memory.oom_control"
	else
		awk '$1 == "oom_kill" {print $2}' "$1/memory.events"
	fi
}
# wait_for CMD...: polls (0.05 s steps, up to 120 s: nothing is timed) until CMD succeeds.
wait_for() {
	i=0
	while [ $i -lt 2400 ]; do
		"$@" && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
above() { [ "$(oom_kills "$1")" -gt "$2" ] 2>/dev/null; }
has_oom_event() { grep -q "\"type\":\"oom\",\"id\":\"$1\"" "$2"; }
# watchers: the husk-oomwatch processes of this test's containers (fork of `husk create`).
watchers() {
	ps -eo pid=,comm=,args= | awk -v r="$root" '$2 == "husk-oomwatch" && index($0, r) {print $1}'
}
no_watchers() { [ -z "$(watchers)" ]; }

engines=husk
if $have_runc; then
	engines="runc husk"
	trap 'for i in oom-runc-$run oom1-runc-$run; do runc delete -f $i >/dev/null 2>&1; done; oci_cleanup' EXIT
else
	echo "# runc is not installed: husk alone"
fi
for e in $engines; do
	id=oom-$e-$run
	if ! "$e" create --bundle "$bundle" "$id" </dev/null >"$work/$id.create" 2>&1 ||
		! "$e" start "$id" >/dev/null 2>&1; then
		fail "$e: the container starts" "$(cat "$work/$id.create")"
		continue
	fi
	pid=$("$e" state "$id" | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
	dir=$(memdir "$pid")
	before=$(oom_kills "$dir")
	if $v1; then
		rm -f "$work/$id.ready" "$work/$id.fired"
		python3 "$EVENTFD" "$dir" "$work/$id.ready" "$work/$id.fired" &
		efd_pid=$!
		wait_for test -e "$work/$id.ready" || fail "$e: the eventfd is registered"
	fi
	"$e" events --interval 600s "$id" >"$work/$id.events" 2>&1 &
	ev_pid=$!
	out=$("$e" exec "$id" sh -c 'x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived' 2>&1)
	st=$?
	if [ "$st" = 137 ] && [ "$out" != survived ]; then
		pass "$e: the exec over the limit is killed (137)"
	else
		fail "$e: the exec over the limit is killed (137)" "status $st: $out"
	fi
	if $v1; then
		if wait_for test -s "$work/$id.fired"; then
			pass "$e: the eventfd on memory.oom_control fires ($(cat "$work/$id.fired"))"
		else
			fail "$e: the eventfd on memory.oom_control fires" "$(cat "$work/$id.fired" 2>&1)"
			kill "$efd_pid" 2>/dev/null
		fi
		wait "$efd_pid" 2>/dev/null
	fi
	if wait_for above "$dir" "$before"; then
		pass "$e: the cgroup's oom_kill counts it ($before -> $(oom_kills "$dir"))"
	else
		fail "$e: the cgroup's oom_kill counts it" "before $before, now $(oom_kills "$dir")"
	fi
	if wait_for has_oom_event "$id" "$work/$id.events"; then
		pass "$e events: an oom event"
	else
		fail "$e events: an oom event" "$(cat "$work/$id.events")"
	fi
	kill "$ev_pid" 2>/dev/null
	wait "$ev_pid" 2>/dev/null
	out=$("$e" exec "$id" echo alive 2>&1)
	if [ "$out" = alive ]; then
		pass "$e: pid 1 still answers an exec"
	elif [ "$e" = runc ]; then
		# The reference only: the kernel's OOM killer picks by size, and on a busy machine
		# (the first victim's memory not yet reaped) it has taken runc's pid 1 as well.
		pass "$e: pid 1 still answers an exec (reference: not this time, $(oom_kills "$dir") kills: $out)"
	else
		fail "$e: pid 1 still answers an exec" "$out"
	fi
	if [ "$e" = husk ]; then
		gpid=$(sed -n 's/.*"gofer_pid": *\([0-9]*\).*/\1/p' "$root/$id/state.json")
		if kill -0 "$pid" 2>/dev/null && [ -n "$gpid" ] && kill -0 "$gpid" 2>/dev/null; then
			pass "husk: the host OOM killed neither the sentry nor the gofer"
		else
			fail "husk: the host OOM killed neither the sentry nor the gofer" \
				"sentry $pid, gofer ${gpid:-?}: $(ps -o pid=,comm= -p "$pid" -p "${gpid:-1}")"
		fi
		[ -n "$(watchers)" ] && pass "husk: husk-oomwatch watches the container" ||
			fail "husk: husk-oomwatch watches the container" "none"
		# Again while another guest process allocates and frees 8 MB over and over: the
		# host cgroup fills while the report's victim lives, and the kernel kills the
		# victim, never the sentry.
		H exec --detach "$id" sh -c 'while :; do x=$(head -c 8000000 /dev/zero | tr "\0" a); done' \
			</dev/null >/dev/null 2>&1
		before=$(oom_kills "$dir")
		out=$(H exec "$id" sh -c 'x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived' 2>&1)
		st=$?
		if [ "$st" = 137 ] && wait_for above "$dir" "$before"; then
			pass "husk: reported again while another process allocates ($before -> $(oom_kills "$dir"))"
		else
			fail "husk: reported again while another process allocates" "status $st: $out" \
				"oom_kill $before -> $(oom_kills "$dir")"
		fi
		n=$(H ps "$id" 2>/dev/null | awk '$8 == "sh" && !/defunct/ {n++} END {print n + 0}')
		if kill -0 "$pid" 2>/dev/null && kill -0 "$gpid" 2>/dev/null && [ "$n" -ge 1 ]; then
			pass "husk: the sentry, the gofer and the allocating process live on"
		else
			fail "husk: the sentry, the gofer and the allocating process live on" \
				"$(H ps "$id" 2>&1)"
		fi
	fi
	"$e" delete -f "$id" >/dev/null 2>&1
	if [ "$e" = husk ]; then
		wait_for no_watchers && pass "husk: husk-oomwatch ends with the container" ||
			fail "husk: husk-oomwatch ends with the container" "$(watchers)"
	fi
done

# Pid 1 over the limit: the container ends, and by the time it is stopped the cgroup has counted
# the OOM (the sentry waits for husk-oomwatch before it goes: an engine removes the cgroup as
# soon as the container has exited).
set_args sh -c 'x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived'
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c.setdefault("linux", {}).setdefault("resources", {})["memory"] = {"limit": 64 << 20}
json.dump(c, open(p, "w"), indent=1)
PY
stopped() { "$1" state "$2" 2>/dev/null | grep -q '"status": "stopped"'; }
for e in $engines; do
	id=oom1-$e-$run
	if ! "$e" create --bundle "$bundle" "$id" </dev/null >"$work/$id.create" 2>&1; then
		fail "$e: pid 1 over the limit: create" "$(cat "$work/$id.create")"
		continue
	fi
	pid=$("$e" state "$id" | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
	dir=$(memdir "$pid")
	before=$(oom_kills "$dir")
	"$e" start "$id" >/dev/null 2>&1
	if wait_for stopped "$e" "$id"; then
		now=$(oom_kills "$dir")
		if [ "$now" -gt "$before" ] 2>/dev/null; then
			pass "$e: pid 1 over the limit: counted by the time the container is stopped ($before -> $now)"
		else
			fail "$e: pid 1 over the limit: counted by the time the container is stopped" \
				"oom_kill $before -> $now"
		fi
	else
		fail "$e: pid 1 over the limit: the container stops" "$("$e" state "$id" 2>&1)"
	fi
	"$e" delete -f "$id" >/dev/null 2>&1
done

finish
