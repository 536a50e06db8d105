#!/bin/sh
# containerd drives husk through its runc shim (ctr run --runc-binary husk): a private containerd
# (own socket, root and state under a temporary directory) runs a busybox rootfs.
. "$(dirname "$0")/lib.sh"

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

work=$(mktemp -d /tmp/husk-ctr.XXXXXX)
HUSK=$(engine_runtime "$work")
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
containerd --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
cpid=$!
cleanup() {
	ctr --address "$sock" -n husk task kill -s KILL d1 >/dev/null 2>&1
	ctr --address "$sock" -n husk task rm -f d1 >/dev/null 2>&1
	ctr --address "$sock" -n husk container rm d1 >/dev/null 2>&1
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
n=0
until ctr --address "$sock" version >/dev/null 2>&1; do
	n=$((n + 1))
	if [ $n -gt 100 ] || ! kill -0 "$cpid" 2>/dev/null; then
		echo "ok - SKIP all: containerd cannot start here: $(tail -n 3 "$work/containerd.log")"
		finish
	fi
	sleep 0.1
done

rootfs=$work/rootfs
mkdir -p "$rootfs/bin"
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh echo sleep; do ln -s busybox "$rootfs/bin/$a"; done
C() { timeout 60 ctr --address "$sock" -n husk "$@"; }

expect_output "ctr run --runc-binary husk prints hi" "hi" 0 -- \
	C run --rm --runtime io.containerd.runc.v2 --runc-binary "$HUSK" --rootfs "$rootfs" r1 \
	/bin/echo hi
expect_status "ctr run passes the exit status" 5 -- \
	C run --rm --runtime io.containerd.runc.v2 --runc-binary "$HUSK" --rootfs "$rootfs" r2 \
	/bin/sh -c 'exit 5'

# Detached: the task is running, kill SIGKILL stops it, delete cleans up.
C run -d --runtime io.containerd.runc.v2 --runc-binary "$HUSK" --rootfs "$rootfs" d1 \
	/bin/sleep 1000 >/dev/null 2>&1
C task ls | grep -qE "^d1 +[0-9]+ +RUNNING" && pass "ctr run -d: task RUNNING" ||
	fail "ctr run -d: task RUNNING" "$(C task ls 2>&1)"
pid=$(C task ls | awk '$1 == "d1" {print $2}')
expect_sentry_platform "ctr run -d" "$pid"
C task kill -s KILL d1 >/dev/null 2>&1
n=0
until C task ls | grep -qE "^d1 +[0-9]+ +STOPPED" || [ $n -gt 100 ]; do sleep 0.1; n=$((n + 1)); done
C task ls | grep -qE "^d1 +[0-9]+ +STOPPED" && pass "task kill KILL: STOPPED" ||
	fail "task kill KILL: STOPPED" "$(C task ls 2>&1)"
C task rm d1 >/dev/null 2>&1
C container rm d1 >/dev/null 2>&1
st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
if [ -z "$st" ] || [ "$st" = Z ]; then
	pass "no sentry left after task rm"
else
	fail "no sentry left after task rm" "pid $pid state $st"
fi

finish
