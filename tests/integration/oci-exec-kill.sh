#!/bin/sh
# Killing the pid an engine holds for an exec kills the exec'd process (issue 16): containerd's
# shim SIGKILLs the pid of `exec --pid-file` when an exec times out (kubelet's exec probes,
# crictl exec --timeout). Under runc that pid is the process itself; under husk it is the exec
# proxy (--detach) or husk exec, and the sentry kills the guest process when their control
# connection closes. Each check runs on husk and, when installed, on runc with the same bundle:
#   - exec --detach --pid-file P, kill -KILL $(cat P): the process is gone, its output pipe
#     reaches EOF;
#   - exec --pid-file P (not detached) in the background, the same;
#   - sh -c 'sleep & sleep', detached: only the process the pid stands for dies, its child
#     lives on (the same count of sleeps as under runc).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci-exec-kill
# runc names a container's cgroup /ID (no cgroupsPath in the bundle): ids of this run's own, so
# that two runs at once (two make checks) never share one.
run=${work##*.}

oci_bundle sh sleep tail echo
set_args tail -f /dev/null

have_runc=false
command -v runc >/dev/null 2>&1 && have_runc=true
# The engines by the names the checks print.
runc() { command runc --root "$work/runc" "$@"; }
husk() { H "$@"; }

# count ENGINE ID COMM: how many live processes named COMM container ID has (ps -ef's CMD).
count() {
	"$1" ps "$2" 2>/dev/null |
		awk -v c="$3" 'NR > 1 && $8 == c && !/defunct/ {n++} END {print n + 0}'
}

# wait_count ENGINE ID COMM N: polls (0.05 s steps, up to 60 s: nothing is timed) until
# container ID has N processes named COMM. Returns 1 (and prints the count) if it never does.
wait_count() {
	i=0
	while [ $i -lt 1200 ]; do
		n=$(count "$1" "$2" "$3")
		[ "$n" = "$4" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	echo "$n"
	return 1
}

# wait_nonempty FILE: polls (up to 60 s) until FILE exists and is not empty.
wait_nonempty() {
	i=0
	while [ $i -lt 1200 ]; do
		[ -s "$1" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# start ENGINE ID: a container running tail -f /dev/null.
start() {
	"$1" create --bundle "$bundle" "$2" </dev/null >"$work/$2.create" 2>&1 &&
		"$1" start "$2" >/dev/null 2>&1 && wait_count "$1" "$2" tail 1 >/dev/null
}

# killed_exec ENGINE ID MODE: exec `sh -c 'echo started; exec sleep 1000'` (MODE: detach or
# wait) with its stdout a pipe to a reader, SIGKILL the pid in the pid file, and check that
# the sleep is gone and the reader saw EOF.
killed_exec() {
	e=$1 id=$2 mode=$3
	what="$e exec ($mode): SIGKILL to the pid-file pid"
	out=$work/$id.$mode.out
	rm -f "$out" "$out.eof" "$work/$id.$mode.pid"
	flag=
	[ "$mode" = detach ] && flag=--detach
	(
		"$e" exec $flag --pid-file "$work/$id.$mode.pid" "$id" \
			sh -c 'echo started; exec sleep 1000' | cat >"$out"
		echo eof >"$out.eof"
	) </dev/null 2>/dev/null &
	if ! wait_nonempty "$out" || ! wait_nonempty "$work/$id.$mode.pid" ||
		! wait_count "$e" "$id" sleep 1 >/dev/null; then
		fail "$what" "the exec did not start: $(cat "$out" 2>&1)"
		return
	fi
	kill -KILL "$(cat "$work/$id.$mode.pid")"
	if n=$(wait_count "$e" "$id" sleep 0); then
		pass "$what kills the exec'd process"
		if wait_nonempty "$out.eof"; then
			pass "$what: its output pipe reaches EOF"
		else
			fail "$what: its output pipe reaches EOF" "still open"
		fi
	else
		fail "$what kills the exec'd process" "$n sleep processes left:" "$("$e" ps "$id" 2>&1)"
		# Pid 1 (tail) has no handler for TERM: it stays; the sleep goes.
		"$e" kill --all "$id" TERM >/dev/null 2>&1
	fi
	wait
}

# children ENGINE ID: the detached sh -c 'sleep 1001 & sleep 1002' killed by its pid: prints
# how many sleeps are left once the killed one is gone (busybox sh runs the last command in
# its own process: one of the two sleeps is the pid).
children() {
	e=$1 id=$2
	rm -f "$work/$id.ch.pid"
	"$e" exec --detach --pid-file "$work/$id.ch.pid" "$id" sh -c 'sleep 1001 & sleep 1002' \
		</dev/null >/dev/null 2>&1
	wait_count "$e" "$id" sleep 2 >/dev/null || { echo "not started"; return; }
	kill -KILL "$(cat "$work/$id.ch.pid")"
	wait_count "$e" "$id" sleep 1 >/dev/null || count "$e" "$id" sleep
	count "$e" "$id" sleep
}

engines=husk
if $have_runc; then
	engines="runc husk"
	trap 'runc delete -f ek-runc-$run >/dev/null 2>&1; oci_cleanup' EXIT
else
	echo "# runc is not installed: husk alone"
fi
for e in $engines; do
	id=ek-$e-$run
	if ! start "$e" "$id"; then
		fail "$e: the container starts" "$(cat "$work/$id.create")"
		continue
	fi
	killed_exec "$e" "$id" detach
	killed_exec "$e" "$id" wait
	eval "left_$e=\$(children $e $id | tail -1)"
	# The container itself was not touched.
	if [ "$(count "$e" "$id" tail)" = 1 ]; then
		pass "$e: pid 1 lives on"
	else
		fail "$e: pid 1 lives on" "$("$e" ps "$id" 2>&1)"
	fi
	"$e" delete -f "$id" >/dev/null 2>&1
done
if [ "$left_husk" = 1 ]; then
	pass "husk: the killed exec's own child lives on (1 sleep left)"
else
	fail "husk: the killed exec's own child lives on (1 sleep left)" "left: $left_husk"
fi
if [ -n "${left_runc:-}" ]; then
	[ "$left_runc" = "$left_husk" ] && pass "the same processes are left as under runc ($left_runc)" ||
		fail "the same processes are left as under runc" "runc: $left_runc" "husk: $left_husk"
fi

finish
