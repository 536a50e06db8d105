#!/bin/sh
# podman drives husk as its OCI runtime (podman --runtime husk): a busybox image imported from a
# rootfs tarball into a private store (own --root/--runroot under a temporary directory, vfs
# storage, cgroupfs, file events), then run --rm, run -d + exec + stop (TERM, then KILL) + logs,
# and run -it under a pseudo-terminal driven by python's pty module.
. "$(dirname "$0")/lib.sh"

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
if ! command -v podman >/dev/null; then
	echo "ok - SKIP all: podman not installed (apt-get install podman)"
	finish
fi
if [ ! -x /bin/busybox ]; then
	echo "ok - SKIP all: no /bin/busybox (apt-get install busybox-static)"
	finish
fi

work=$(mktemp -d /tmp/husk-podman.XXXXXX)
HUSK=$(engine_runtime "$work")
P() {
	timeout 120 podman --root "$work/storage" --runroot "$work/run" --storage-driver vfs \
		--cgroup-manager cgroupfs --events-backend file --runtime "$HUSK" "$@"
}
cleanup() {
	P rm -f -a >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/rootfs/bin" "$work/rootfs/etc" "$work/rootfs/tmp"
cp /bin/busybox "$work/rootfs/bin/busybox"
for a in $(/bin/busybox --list); do
	[ "$a" = busybox ] || ln -s busybox "$work/rootfs/bin/$a"
done
tar -C "$work/rootfs" -cf "$work/bb.tar" .
if ! P import "$work/bb.tar" localhost/husk-busybox:test >"$work/import.log" 2>&1; then
	echo "ok - SKIP all: podman cannot import an image here: $(tail -n 1 "$work/import.log")"
	finish
fi

expect_output "podman run --rm prints the output" "hi" 0 \
	-- P run --pull never --rm --network none localhost/husk-busybox:test /bin/echo hi
expect_status "podman run --rm returns the exit status" 3 \
	-- P run --pull never --rm --network none localhost/husk-busybox:test sh -c 'exit 3'
# podman binds its own /etc/hosts and /etc/hostname files (single-file binds) into the container.
out=$(P run --pull never --rm --network none --hostname husk-box localhost/husk-busybox:test \
	sh -c 'echo $(cat /etc/hostname); grep -c husk-box /etc/hosts' 2>&1)
[ "$out" = "husk-box
1" ] && pass "podman's /etc/hostname and /etc/hosts file binds" ||
	fail "podman's /etc/hostname and /etc/hosts file binds" "$out"
expect_output "podman's default rlimits apply in the guest" "1048576" 0 \
	-- P run --pull never --rm --network none localhost/husk-busybox:test sh -c 'ulimit -n'

id=$(P run --pull never -d --network none localhost/husk-busybox:test sh -c \
	'echo started; trap "echo got TERM; exit 0" TERM; while true; do sleep 0.1; done')
[ -n "$id" ] && pass "podman run -d" || fail "podman run -d"
expect_sentry_platform "podman run -d" "$(P inspect --format '{{.State.Pid}}' "$id" 2>&1)"
expect_output "podman exec" "from exec" 0 -- P exec "$id" echo from exec
expect_status "podman exec returns the exit status" 5 -- P exec "$id" sh -c 'exit 5'
expect_status "podman exec of a missing program is 127" 127 -- P exec "$id" nosuch
expect_output "podman exec -i takes stdin" "piped" 0 -- sh -c "echo piped | timeout 60 podman \
--root '$work/storage' --runroot '$work/run' --storage-driver vfs --cgroup-manager cgroupfs \
--events-backend file --runtime '$HUSK' exec -i '$id' cat"
expect_status "podman stop (SIGTERM)" 0 -- P stop -t 20 "$id"
out=$(P logs "$id" 2>&1)
if [ "$out" = "started
got TERM" ]; then
	pass "podman logs: the output, and the handled SIGTERM"
else
	fail "podman logs" "$out"
fi
P rm "$id" >/dev/null 2>&1

# A container that ignores SIGTERM: stop falls back to SIGKILL after the timeout.
id=$(P run --pull never -d --network none localhost/husk-busybox:test sh -c 'trap "" TERM; echo up; while true; do sleep 0.1; done')
expect_status "podman stop of a TERM-ignoring container (then SIGKILL)" 0 -- P stop -t 1 "$id"
st=$(P inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$id" 2>&1)
case "$st" in "exited 137") pass "killed by SIGKILL (exit code 137)" ;;
*) fail "killed by SIGKILL (exit code 137)" "$st" ;; esac
P rm "$id" >/dev/null 2>&1

# podman container checkpoint / restore (also --export / --import): husk saves the sandbox
# itself; podman only insists on finding criu (its own check) before it asks the runtime.
if command -v criu >/dev/null; then
	# The loop rewrites the file: a read may find it empty; nonempty() reads again.
	count() { P exec "$1" cat /tmp/count 2>/dev/null; }
	nonempty() {
		n=0
		v=$(count "$1")
		while [ -z "$v" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); v=$(count "$1"); done
		echo "$v"
	}
	id=$(P run --pull never -d --network none localhost/husk-busybox:test sh -c \
		'i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done')
	i=0
	while [ "$(count "$id")" = "" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	expect_status "podman container checkpoint" 0 -- P container checkpoint "$id"
	st=$(P inspect --format '{{.State.Status}}' "$id" 2>&1)
	[ "$st" = exited ] && pass "checkpointed container is stopped" ||
		fail "checkpointed container is stopped" "$st"
	expect_status "podman container restore" 0 -- P container restore "$id"
	a=$(nonempty "$id")
	i=0
	while { b=$(nonempty "$id"); [ "$b" = "$a" ]; } && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	[ -n "$a" ] && [ "$a" -gt 1 ] && [ "$b" -gt "$a" ] &&
		pass "restored container goes on counting ($a -> $b)" || fail "restored count" "$a $b"
	expect_status "podman container checkpoint --export" 0 -- \
		P container checkpoint --export "$work/ckpt.tar.gz" "$id"
	P rm -f "$id" >/dev/null 2>&1
	expect_status "podman container restore --import" 0 -- \
		P container restore --import "$work/ckpt.tar.gz"
	a=$(nonempty "$id")
	i=0
	while { b=$(nonempty "$id"); [ "$b" = "$a" ]; } && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	[ -n "$a" ] && [ "$b" -gt "$a" ] && pass "imported container goes on counting ($a -> $b)" ||
		fail "imported count" "$a $b"
	P rm -f "$id" >/dev/null 2>&1
else
	echo "ok - SKIP checkpoint: podman wants criu installed (apt-get install criu)"
fi

# run -it: podman makes the pty and passes its master over --console-socket.
if command -v python3 >/dev/null; then
	out=$(python3 - "$work" "$HUSK" <<'PY'
import os, pty, sys, select, time
work, husk = sys.argv[1], sys.argv[2]
argv = ["timeout", "60", "podman", "--root", work + "/storage", "--runroot", work + "/run",
        "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "file",
        "--runtime", husk, "run", "--pull", "never", "-it", "--rm", "--network", "none",
        "localhost/husk-busybox:test", "sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo is-a-tty; read x; echo got-$x"]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
out = b""
sent = False
deadline = time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.5)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if b"is-a-tty" in out and not sent:
        os.write(fd, b"line\r")
        sent = True
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
sys.stdout.write("status=%d\n" % os.waitstatus_to_exitcode(st))
PY
)
	case "$out" in *is-a-tty*got-line*status=0*) pass "podman run -it: a terminal in and out" ;;
	*) fail "podman run -it" "$out" ;; esac
fi
finish
