#!/bin/sh
# containerd drives husk through its runc shim (ctr run --runc-binary husk): a private containerd
# (own socket, root and state under a temporary directory) runs a busybox rootfs, then a busybox
# image imported into it, which it checkpoints and restores through husk (issue 13).
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

work=$(mktemp -d /tmp/husk-ctr.XXXXXX)
HUSK=$(engine_runtime "$work")
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
# Its checkpoint folders (os.MkdirTemp in $XDG_RUNTIME_DIR) go under $work too: containerd 1.6
# never removes the one it unpacks a checkpoint into for a restore, whatever the runtime.
mkdir -p "$work/xdg"
XDG_RUNTIME_DIR=$work/xdg containerd --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
cpid=$!
cleanup() {
	for id in d1 k1 k2 t0 t1; do
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
for a in sh echo sleep; do ln -s busybox "$rootfs/bin/$a"; done
C() { timeout 60 ctr --address "$sock" -n "$ns" "$@"; }

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

# tty: true (ctr run -t, on a terminal of its own 27x91): the shim waits for EOF on create's
# stdout and stderr before it starts the task, so no husk helper may keep them (issue 16); the
# guest's terminal is /dev/pts/0, and the size of ctr's terminal reaches it through the shim's
# ResizePty, as under runc (the same run with containerd's default runtime).
for a in tty stty; do ln -sf busybox "$rootfs/bin/$a"; done
cat >"$work/pty_run.py" <<'EOF'
import fcntl, os, pty, select, struct, sys, termios, time
# Runs argv on a new 27x91 pty (its controlling terminal); prints its output without CRs.
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 27, 91, 0, 0))
    os.execvp(sys.argv[1], sys.argv[1:])
buf = b""
end = time.monotonic() + 90 * float(os.environ.get("HUSK_TEST_TIMEOUT_SCALE", "1"))
while time.monotonic() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        buf += d
sys.stdout.write(buf.decode(errors="replace").replace("\r", ""))
EOF
# ctr resizes the task once it has started: the guest waits for a size (stty size fails on 0x0).
tty_run() { # ID [--runc-binary HUSK]
	id=$1
	shift
	python3 "$work/pty_run.py" ctr --address "$sock" -n "$ns" run -t --rm \
		--runtime io.containerd.runc.v2 "$@" --rootfs "$rootfs" "$id" /bin/sh -c \
		'tty; i=0; until [ -n "$(stty size 2>/dev/null)" ] || [ $i -gt 600 ]; do sleep 0.1; i=$((i+1)); done; stty size'
}
want="/dev/pts/0
27 91"
out=$(tty_run t0 2>&1)
[ "$out" = "$want" ] && pass "ctr run -t under runc: /dev/pts/0, 27 91" ||
	fail "ctr run -t under runc: /dev/pts/0, 27 91" "$out"
out=$(tty_run t1 --runc-binary "$HUSK" 2>&1)
[ "$out" = "$want" ] && pass "ctr run -t (tty: true) starts: /dev/pts/0 and ctr's window size" ||
	fail "ctr run -t (tty: true) starts: /dev/pts/0 and ctr's window size" "$out"

# --- checkpoint and restore (containerd 1.6's runc shim; what it passes to husk) ---
# ctr tasks checkpoint: pause; checkpoint --image-path TMP --work-path W [--leave-running] ID;
# resume; the folder becomes a tar layer (application/vnd.containerd.container.criu.checkpoint.
# criu.tar) of a checkpoint image in the content store. ctr containers checkpoint --task: the
# same with --file-locks, plus the spec and runtime options in the image. ctr containers restore
# --live: the layer is unpacked into a folder and the shim runs restore --image-path DIR
# --work-path W --detach --pid-file F -no-subreaper --bundle B ID with the task's stdio.
# Restores here are of images made by `ctr containers checkpoint`, which needs a container made
# from an image: a one-layer busybox image, built here and imported (no registry).
# Each container gets the husk state root --runc-root $work/runc (not /run/containerd/runc), so
# that what is left of it can be looked for.
python3 - "$rootfs/bin/busybox" "$work/image.tar" <<'PY'
import hashlib, io, json, sys, tarfile
blobs = {}
def blob(data, media_type):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}
def entry(tar, name, kind, mode=0o755, data=None, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    info.size = len(data) if data is not None else 0
    tar.addfile(info, io.BytesIO(data) if data is not None else None)
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
    entry(t, "bin", tarfile.DIRTYPE)
    entry(t, "tmp", tarfile.DIRTYPE, 0o1777)
    entry(t, "bin/busybox", tarfile.REGTYPE, data=open(sys.argv[1], "rb").read())
    for applet in ("sh", "cat", "sleep", "echo"):
        entry(t, "bin/" + applet, tarfile.SYMTYPE, link="busybox")
lay = blob(layer.getvalue(), "application/vnd.oci.image.layer.v1.tar")
cfg = blob(json.dumps({"architecture": "amd64", "os": "linux",
                       "config": {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"]},
                       "rootfs": {"type": "layers", "diff_ids": [lay["digest"]]}}).encode(),
           "application/vnd.oci.image.config.v1+json")
man = blob(json.dumps({"schemaVersion": 2,
                       "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": cfg, "layers": [lay]}).encode(),
           "application/vnd.oci.image.manifest.v1+json")
man["annotations"] = {"io.containerd.image.name": "husk.test/busybox:1",
                      "org.opencontainers.image.ref.name": "1"}
man["platform"] = {"architecture": "amd64", "os": "linux"}
with tarfile.open(sys.argv[2], "w") as t:
    entry(t, "oci-layout", tarfile.REGTYPE, 0o644, b'{"imageLayoutVersion":"1.0.0"}')
    entry(t, "index.json", tarfile.REGTYPE, 0o644,
          json.dumps({"schemaVersion": 2, "manifests": [man]}).encode())
    for digest, data in blobs.items():
        entry(t, "blobs/sha256/" + digest[7:], tarfile.REGTYPE, 0o644, data)
PY
# The native snapshotter: no overlayfs mount needed for the image's layer.
if C images import --snapshotter native "$work/image.tar" >"$work/err" 2>&1; then
	pass "a busybox image is imported"
else
	fail "a busybox image is imported" "$(cat "$work/err")"
fi
RUN="--snapshotter native --runtime io.containerd.runc.v2 --runc-binary $HUSK --runc-root $work/runc"
# The guest: a token made once at start (a restart would make another) and a counter.
loop='echo $RANDOM$RANDOM > /tmp/token; i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.02; done'
cat_in() { C task exec --exec-id "cat$$" "$1" cat "$2" 2>/dev/null; }
running() { C task ls | grep -qE "^$1 +[0-9]+ +RUNNING"; }
task_pid() { C task ls | awk -v id="$1" '$1 == id {print $2}'; }
# gone ID PID: the container's sentry PID has ended, no husk process serves its bundle (the gofer
# names the rootfs) and its husk state folder is removed.
gone() {
	st=$(awk '{print $3}' "/proc/$2/stat" 2>/dev/null)
	left=$(ps -eo pid=,comm=,args= | awk -v b="/$ns/$1/rootfs" '$2 ~ /^husk/ && index($0, b)')
	if { [ -z "$st" ] || [ "$st" = Z ]; } && [ -z "$left" ] && [ ! -e "$work/runc/$ns/$1" ]; then
		return 0
	fi
	echo "sentry $2: ${st:-gone}; husk processes: ${left:-none}; state: $(ls "$work/runc/$ns" 2>&1)"
	return 1
}
# remove ID: kill, delete the task and the container.
remove() {
	C task kill -s KILL "$1" >/dev/null 2>&1
	n=0
	until C task ls | grep -qE "^$1 +[0-9]+ +STOPPED" || [ $n -gt 600 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	C task rm "$1" >/dev/null 2>&1
	C container rm "$1" >/dev/null 2>&1
}

C run -d $RUN husk.test/busybox:1 k1 /bin/sh -c "$loop" >"$work/err" 2>&1
running k1 && pass "ctr run -d of the image: RUNNING" ||
	fail "ctr run -d of the image: RUNNING" "$(cat "$work/err")" "$(C task ls 2>&1)"
pid=$(task_pid k1)
expect_sentry_platform "ctr run -d of the image" "$pid"
token=$(cat_in k1 /tmp/token)
before=$(wait_above k1 /tmp/count 5)

# A task checkpoint into a folder of ours: the task runs on.
if C task checkpoint --image-path "$work/tckpt" k1 >"$work/err" 2>&1; then
	pass "ctr task checkpoint --image-path"
else
	fail "ctr task checkpoint --image-path" "$(cat "$work/err")"
fi
[ -s "$work/tckpt/husk-image.pb" ] && [ -e "$work/tckpt/husk-pages.img" ] &&
	[ -e "$work/tckpt/inventory.img" ] && pass "the folder holds husk's image" ||
	fail "the folder holds husk's image" "$(ls -l "$work/tckpt" 2>&1)"
after=$(wait_above k1 /tmp/count "$before") && running k1 &&
	pass "the task runs on after the checkpoint ($before -> $after)" ||
	fail "the task runs on after the checkpoint" "$before -> $after" "$(C task ls 2>&1)"

# A container checkpoint (task, spec, runtime options) into the content store; then k1 is
# removed and restored from it under the same id.
saved=$(cat_in k1 /tmp/count)
if C container checkpoint --task k1 husk.test/ckpt:k1 >"$work/err" 2>&1; then
	pass "ctr container checkpoint --task"
else
	fail "ctr container checkpoint --task" "$(cat "$work/err")"
fi
C content get "$(C images ls | awk '$1 == "husk.test/ckpt:k1" {print $3}')" >"$work/index.json" 2>&1
grep -q 'application/vnd.containerd.container.criu.checkpoint.criu.tar' "$work/index.json" &&
	pass "the checkpoint image holds the task's checkpoint layer" ||
	fail "the checkpoint image holds the task's checkpoint layer" "$(cat "$work/index.json")"
running k1 && pass "the task is resumed after the container checkpoint" ||
	fail "the task is resumed after the container checkpoint" "$(C task ls 2>&1)"
remove k1
why=$(gone k1 "$pid") && pass "nothing of k1 is left once it is removed" ||
	fail "nothing of k1 is left once it is removed" "$why"
if C container restore --live k1 husk.test/ckpt:k1 >"$work/err" 2>&1 </dev/null; then
	pass "ctr container restore --live"
else
	fail "ctr container restore --live" "$(cat "$work/err")"
fi
running k1 && pass "the restored task is RUNNING" ||
	fail "the restored task is RUNNING" "$(C task ls 2>&1)"
pid=$(task_pid k1)
expect_sentry_platform "the restored task" "$pid"
first=$(wait_above k1 /tmp/count 0)
later=$(wait_above k1 /tmp/count "${first:-0}")
[ -n "$saved" ] && [ "$first" -ge "$saved" ] && [ "$later" -gt "$first" ] &&
	pass "the restored counter goes on from the checkpoint ($saved -> $first -> $later)" ||
	fail "the restored counter goes on from the checkpoint" "saved $saved, then $first, $later"
t2=$(cat_in k1 /tmp/token)
[ -n "$token" ] && [ "$t2" = "$token" ] &&
	pass "the restored shell is the saved one, not a restart (token $token)" ||
	fail "the restored shell is the saved one" "token $token before, $t2 after"
remove k1
why=$(gone k1 "$pid") && pass "nothing of the restored k1 is left once it is removed" ||
	fail "nothing of the restored k1 is left once it is removed" "$why"

# ctr task checkpoint --exit into the content store: the task stops once saved. (A second task
# checkpoint of one container into the content store fails in containerd 1.6 whatever the runtime:
# its spec is already there; hence another container.)
C run -d $RUN husk.test/busybox:1 k2 /bin/sh -c "$loop" >/dev/null 2>&1
pid=$(task_pid k2)
v=$(wait_above k2 /tmp/count 5) && pass "a second container of the image counts ($v)" ||
	fail "a second container of the image counts" "$v" "$(C task ls 2>&1)"
if C task checkpoint --exit k2 >"$work/ref" 2>"$work/err"; then
	pass "ctr task checkpoint --exit"
else
	fail "ctr task checkpoint --exit" "$(cat "$work/err")"
fi
ref=$(tail -n 1 "$work/ref")
n=0
until C task ls | grep -qE "^k2 +[0-9]+ +STOPPED" || [ $n -gt 600 ]; do
	sleep 0.1
	n=$((n + 1))
done
C task ls | grep -qE "^k2 +[0-9]+ +STOPPED" && pass "the task is STOPPED after --exit" ||
	fail "the task is STOPPED after --exit" "$(C task ls 2>&1)"
layer=$(C content get "$(C images ls | awk -v r="$ref" '$1 == r {print $3}')" 2>/dev/null |
	python3 -c 'import json, sys
for m in json.load(sys.stdin)["manifests"]:
    if m["mediaType"].endswith("criu.tar"):
        print(m["digest"])' 2>/dev/null)
files=$(C content get "$layer" 2>/dev/null | tar tf - 2>/dev/null | sort | tr '\n' ' ')
[ "$files" = "husk-image.pb husk-pages.img inventory.img " ] &&
	pass "the checkpoint image $ref holds husk's image" ||
	fail "the checkpoint image holds husk's image" "$ref: layer $layer: $files"
remove k2
why=$(gone k2 "$pid") && pass "nothing of k2 is left once it is removed" ||
	fail "nothing of k2 is left once it is removed" "$why"

finish
