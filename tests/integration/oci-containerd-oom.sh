#!/bin/sh
# What containerd's runc shim sees of husk (issue 16), with a private containerd and ctr:
#   - a container with a 64 MiB memory limit whose exec'd sh reads 200 MB: the exec ends with
#     137 and the shim publishes /tasks/oom (it learns of it from the eventfd it registered on
#     the cgroup's memory.oom_control; husk-oomwatch made the sentry's kill an OOM there);
#   - pid 1 over the limit: /tasks/oom and the task's exit 137;
#   - `ctr task kill --exec-id` (what the shim does when an exec times out): the exec'd process
#     is gone and `ctr task exec` returns.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null ||
	! command -v containerd-shim-runc-v2 >/dev/null; then
	echo "ok - SKIP all: containerd, ctr or containerd-shim-runc-v2 not installed (apt-get install containerd)"
	finish
fi
if [ ! -x /bin/busybox ]; then
	echo "ok - SKIP all: no /bin/busybox (apt-get install busybox-static)"
	finish
fi
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.oom_control ] &&
	! grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	echo "ok - SKIP all: needs root and a memory cgroup controller"
	finish
fi

work=$(mktemp -d /tmp/husk-ctr-oom.XXXXXX)
HUSK=$(engine_runtime "$work")
# husk's own logs (sentry, gofer, husk-oomwatch), shown when a check fails.
mkdir -p "$work/logs"
printf '#!/bin/sh\nexec "%s" --debug-log "%s" "$@"\n' "$HUSK" "$work/logs" >"$work/husk-dbg"
chmod 755 "$work/husk-dbg"
HUSK=$work/husk-dbg
logs() { tail -n 15 "$work"/logs/"$1".* 2>&1; }
# containerd's namespace, this run's own: its runc shim names the container's cgroup
# /NAMESPACE/ID, so two runs at once (two make checks) with one namespace shared the cgroups of
# their fixed ids.
ns=husk-${work##*.}
sock=$work/containerd.sock
cat >"$work/config.toml" <<EOT
version = 2
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = "$work/debug.sock"
EOT
mkdir -p "$work/xdg"
XDG_RUNTIME_DIR=$work/xdg containerd --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
cpid=$!
evpid=
cleanup() {
	[ -n "$evpid" ] && kill "$evpid" 2>/dev/null
	for id in m1 m2; do
		ctr --address "$sock" -n "$ns" task kill -s KILL $id >/dev/null 2>&1
		ctr --address "$sock" -n "$ns" task rm -f $id >/dev/null 2>&1
		ctr --address "$sock" -n "$ns" container rm $id >/dev/null 2>&1
	done
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
containerd_wait "$sock" "$cpid" "$work/containerd.log"

rootfs=$work/rootfs
mkdir -p "$rootfs/bin"
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh echo sleep head tr; do ln -s busybox "$rootfs/bin/$a"; done
C() { timeout 120 ctr --address "$sock" -n "$ns" "$@"; }
RUN="run -d --memory-limit 67108864 --runtime io.containerd.runc.v2 --runc-binary $HUSK --rootfs $rootfs"
HOG='x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived'

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
event() { grep -q "/tasks/$1 {\"container_id\":\"$2\"" "$work/events"; }

C events >"$work/events" 2>&1 &
evpid=$!

C $RUN m1 sleep 1000 >/dev/null 2>&1
if ! C task ls | grep -qE "^m1 +[0-9]+ +RUNNING"; then
	fail "ctr run -d --memory-limit 64 MiB: task RUNNING" "$(C task ls 2>&1)" \
		"$(tail -n 5 "$work/containerd.log")" "$(logs m1)"
	finish
fi
out=$(C task exec --exec-id hog m1 sh -c "$HOG" 2>&1)
st=$?
[ "$st" = 137 ] && [ "$out" != survived ] && pass "an exec over the limit is killed (137)" ||
	fail "an exec over the limit is killed (137)" "status $st: $out" "$(logs m1)"
if wait_for event oom m1; then
	pass "the shim publishes /tasks/oom for the exec's OOM"
else
	fail "the shim publishes /tasks/oom for the exec's OOM" "$(cat "$work/events")"
fi

# An exec killed through the shim, as on an exec timeout.
(
	C task exec --exec-id e1 m1 sleep 1001 >/dev/null 2>&1
	echo "$?" >"$work/e1.status"
) &
e1pid=$!
if wait_for grep -q '/tasks/exec-started.*"exec_id":"e1"' "$work/events"; then
	C task kill --exec-id e1 -s KILL m1 >/dev/null 2>&1
	if wait_for test -s "$work/e1.status"; then
		pass "ctr task kill --exec-id: ctr task exec returns ($(cat "$work/e1.status"))"
	else
		fail "ctr task kill --exec-id: ctr task exec returns" "still running"
	fi
	out=$("$HUSK" --root /run/containerd/runc/husk ps m1 2>&1)
	case "$out" in
	*sleep*sleep*) fail "ctr task kill --exec-id: the exec'd sleep is gone" "$out" ;;
	*) pass "ctr task kill --exec-id: the exec'd sleep is gone" ;;
	esac
else
	fail "ctr task exec starts" "$(cat "$work/events")"
fi
wait "$e1pid"
C task kill -s KILL m1 >/dev/null 2>&1

# Pid 1 over the limit.
C $RUN m2 sh -c "$HOG" >/dev/null 2>&1
if wait_for event exit m2; then
	grep "/tasks/exit {\"container_id\":\"m2\"" "$work/events" | grep -q '"exit_status":137' &&
		pass "pid 1 over the limit: exit 137" ||
		fail "pid 1 over the limit: exit 137" "$(grep m2 "$work/events")" "$(logs m2)"
	if wait_for event oom m2; then
		pass "pid 1 over the limit: the shim publishes /tasks/oom"
	else
		fail "pid 1 over the limit: the shim publishes /tasks/oom" "$(grep m2 "$work/events")"
	fi
else
	fail "pid 1 over the limit: the task exits" "$(grep m2 "$work/events")"
fi

finish
