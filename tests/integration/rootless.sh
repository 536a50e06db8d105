#!/bin/sh
# husk as an unprivileged user (issue 15, "rootless"): husk do (id, a volume write owned by the
# user on the host, mounts below a root hidden, --network=host under the sentry's egress check,
# the whole of foundation.sh, confinement.sh and filesystem.sh as that user), the sentry and
# gofer in user namespaces of their own, an OCI lifecycle with the state under
# $XDG_RUNTIME_DIR/husk, no cgroup and the sentry's limits, rootless podman with --runtime husk,
# and nothing left behind. Run as root: it makes the user (HUSK_ROOTLESS_USER, default
# husktest) if missing, and copies husk and its helpers where that user can run them. Exit 77
# (skip) where the host has no unprivileged user namespaces.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
user=${HUSK_ROOTLESS_USER:-husktest}

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: run as root (the test makes and switches to the user $user)"
	exit 77
fi
# Another run at once (two make checks) may be adding the user too: this useradd then fails on
# the locked /etc/passwd or the existing name, and the user is there once that one is done
# (polled, 0.1 s steps, up to 30 s).
user_made() {
	i=0
	until id "$user" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 300 ] && return 1
		sleep 0.1
	done
}
if ! id "$user" >/dev/null 2>&1 && ! useradd -M -s /bin/sh "$user" && ! user_made; then
	echo "SKIP: no user $user, and useradd failed"
	exit 77
fi
uid=$(id -u "$user")
gid=$(id -g "$user")
# as_user CMD...: CMD as the user, with a private HOME and XDG_RUNTIME_DIR, the rest of the
# environment (HUSK_PLATFORM included) kept.
as_user() {
	setpriv --reuid="$uid" --regid="$gid" --clear-groups \
		env HOME="$work/home" XDG_RUNTIME_DIR="$work/xdg" USER="$user" LOGNAME="$user" "$@"
}
if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups unshare --user --map-root-user true \
	2>/dev/null; then
	echo "SKIP: this host has no unprivileged user namespaces (unshare --user as $user fails)"
	exit 77
fi

work=$(mktemp -d /tmp/husk-rootless.XXXXXX)
cleanup() {
	[ -n "${H:-}" ] && as_user "$H" list -q 2>/dev/null | while read -r id; do
		as_user "$H" delete -f "$id" >/dev/null 2>&1
	done
	[ -n "${podman_ok:-}" ] && P rm -f -a >/dev/null 2>&1
	stop_podman_pause
	mountpoint -q "$work/mroot/mnt/inner" && umount "$work/mroot/mnt/inner"
	[ -n "${server:-}" ] && kill "$server" 2>/dev/null
	rm -rf "$work"
}
# Rootless podman keeps a pause process holding its user namespace: ours goes with the test.
stop_podman_pause() {
	pp=$(cat "$work/xdg/libpod/tmp/pause.pid" 2>/dev/null)
	[ -n "$pp" ] && kill "$pp" 2>/dev/null
	rm -f "$work/xdg/libpod/tmp/pause.pid"
}
# husk's processes (its copies under $work/bin) that are still there.
husk_procs() {
	for p in $(pgrep -u "$uid"); do
		case $(readlink "/proc/$p/exe" 2>/dev/null) in
		"$work"/bin/*) echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" ;;
		esac
	done
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work/bin" "$work/home" "$work/xdg" "$work/vol" "$work/tests"
# husk finds husk-sentry and husk-gofer beside itself.
bindir=$(dirname "$HUSK")
for h in husk-sentry husk-gofer; do
	for d in "$bindir" "$bindir/sentry" "$bindir/gofer"; do
		[ -x "$d/$h" ] && cp "$d/$h" "$work/bin/$h" && break
	done
done
cp "$HUSK" "$work/bin/husk"
# filesystem.sh runs two conformance programs from beside husk when they are built.
mkdir -p "$work/bin/tests/syscalls"
for p in syscalls-fifo syscalls-unix_path; do
	[ -x "$bindir/tests/syscalls/$p" ] && cp "$bindir/tests/syscalls/$p" "$work/bin/tests/syscalls/"
done
cp "$here/lib.sh" "$here/foundation.sh" "$here/confinement.sh" "$here/filesystem.sh" \
	"$work/tests/"
H=$work/bin/husk
chown -R "$uid:$gid" "$work/home" "$work/xdg" "$work/vol" "$work/tests"
chmod 700 "$work/xdg"

expect_output "as $user: husk do id; echo ok" "uid=0 gid=0
ok" 0 -- as_user "$H" do -- sh -c 'echo uid=$(id -u) gid=$(id -g); echo ok'

# Root of a user namespace of the user's (as under rootless podman, or `unshare -r`): husk
# has CAP_SYS_ADMIN there, makes no namespace of its own, and binds the root's locked mounts.
expect_output "as $user under unshare --user --map-root-user: husk do" "0 ok" 0 -- \
	as_user unshare --user --map-root-user "$H" do -- sh -c 'echo $(id -u) ok'

# A file the guest (root inside) writes on a volume belongs to the calling user on the host.
out=$(as_user "$H" do --volume "$work/vol:/data" -- sh -c \
	'echo hi >/data/f && mkdir /data/d && stat -c "%u %g" /data/f' 2>&1)
owner=$(stat -c '%u %g' "$work/vol/f" 2>&1)
downer=$(stat -c '%u %g' "$work/vol/d" 2>&1)
if [ "$out" = "0 0" ] && [ "$owner" = "$uid $gid" ] && [ "$downer" = "$uid $gid" ] &&
	[ "$(cat "$work/vol/f")" = hi ]; then
	pass "a volume write by the guest's root belongs to $user ($uid) on the host"
else
	fail "a volume write by the guest's root belongs to $user on the host" \
		"guest: $out" "host: file $owner, dir $downer"
fi
# An id with no mapping in the gofer's namespace is refused (EINVAL), as in a user namespace.
expect_status "chown to an unmapped id fails" 1 -- as_user "$H" do --volume "$work/vol:/data" \
	-- chown 1234 /data/f

# A mount below the served root is hidden from a rootless gofer as from root's (which binds
# the root alone): the kernel makes the rootless gofer bind recursively (the mount is locked),
# and it covers the mount point with an empty tmpfs. The mount holds a file.
mkdir -p "$work/mroot/bin" "$work/mroot/mnt/inner"
cp "$(command -v busybox)" "$work/mroot/bin/busybox"
for a in sh ls wc cat; do ln -s busybox "$work/mroot/bin/$a"; done
if mount -t tmpfs husk-rootless-test "$work/mroot/mnt/inner"; then
	echo secret >"$work/mroot/mnt/inner/file"
	expect_output "root: a mount below the root is an empty directory" "0" 0 -- \
		"$H" do --rootfs "$work/mroot" -- sh -c 'ls -A /mnt/inner | wc -l'
	expect_output "as $user: a mount below the root is an empty directory too" "0" 0 -- \
		as_user "$H" do --rootfs "$work/mroot" -- sh -c 'ls -A /mnt/inner | wc -l'
	expect_output "as $user: the rest of the root is served" "sh" 0 -- \
		as_user "$H" do --rootfs "$work/mroot" -- sh -c 'ls /bin | grep -x sh'
	umount "$work/mroot/mnt/inner"
else
	echo "ok - SKIP mounts below the root: cannot mount a tmpfs here"
fi

# The sentry and the gofer run in user namespaces of their own (not the host's), with the
# rest of their confinement: checked while a sandbox waits on a FIFO.
mkfifo "$work/fifo"
chmod 666 "$work/fifo"
as_user "$H" do -- sh -c 'read x' <"$work/fifo" >/dev/null 2>&1 &
husk_pid=$!
exec 9>"$work/fifo"
sentry= gofer=
i=0
while [ $i -lt 300 ] && { [ -z "$sentry" ] || [ -z "$gofer" ]; }; do
	for p in $(pgrep -P "$husk_pid"; for q in $(pgrep -P "$husk_pid"); do pgrep -P "$q"; done); do
		case $(cat "/proc/$p/comm" 2>/dev/null) in
		husk-sentry) sentry=$p ;;
		husk-gofer) gofer=$p ;;
		esac
	done
	sleep 0.1
	i=$((i + 1))
done
host_userns=$(readlink /proc/self/ns/user)
for p in $sentry $gofer; do
	name=$(cat "/proc/$p/comm")
	ns=$(readlink "/proc/$p/ns/user")
	map=$(tr -s ' ' <"/proc/$p/uid_map" | sed 's/^ //')
	seccomp=$(awk '/^Seccomp:/ {print $2}' "/proc/$p/status")
	if [ "$ns" != "$host_userns" ] && [ "$map" = "0 $uid 1" ] && [ "$seccomp" = 2 ] &&
		[ "$(readlink "/proc/$p/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]; then
		pass "$name: own user namespace (uid map 0 $uid 1), own mount namespace, seccomp"
	else
		fail "$name: own user namespace, own mount namespace, seccomp" "user ns $ns (host" \
			"$host_userns), uid_map: $map, Seccomp: $seccomp"
	fi
done
[ -z "$sentry" ] || [ -z "$gofer" ] && fail "found the sandbox's sentry and gofer" \
	"sentry=$sentry gofer=$gofer"
echo >&9
exec 9>&-
wait "$husk_pid"

# --network=host as the user: the sentry's sockets are the user's; no BPF filter (one warning),
# the sentry's own egress check still denies loopback by default and allows it when asked.
if command -v python3 >/dev/null; then
	python3 - "$work/port" <<'PY' &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    c.sendall(b"hello\n")
    c.close()
PY
	server=$!
	i=0
	while [ $i -lt 300 ] && [ ! -s "$work/port" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	port=$(cat "$work/port")
	client="import socket; s = socket.create_connection(('127.0.0.1', $port))
print(s.recv(16).decode().strip())"
	out=$(as_user "$H" do --network=host -- python3 -c "$client" 2>&1)
	case "$out" in
	*"BPF egress filter unavailable"*"ConnectionRefusedError"* | \
		*"ConnectionRefusedError"*"BPF egress filter unavailable"*)
		pass "--network=host as $user: loopback denied by the sentry's check (BPF unavailable, said)" ;;
	*) fail "--network=host as $user: loopback denied by the sentry's check" "$out" ;;
	esac
	out=$(as_user "$H" do --network=host --egress-allow 127.0.0.1 -- python3 -c "$client" \
		2>/dev/null)
	[ "$out" = hello ] && pass "--network=host as $user with --egress-allow 127.0.0.1: connected" ||
		fail "--network=host as $user with --egress-allow 127.0.0.1: connected" "$out"
	kill "$server"
	server=
fi

# husk do --name as the user: registered under $XDG_RUNTIME_DIR/husk, and husk exec runs as the
# guest's pid 1 does (root), not as the user's host uid.
mkfifo "$work/fifo2"
chmod 666 "$work/fifo2"
as_user "$H" do --name "rl-do-$$" -- sh -c 'read x' <"$work/fifo2" >/dev/null 2>&1 &
do_pid=$!
exec 8>"$work/fifo2"
i=0
while [ $i -lt 300 ] && ! as_user "$H" list -q 2>/dev/null | grep -qx "rl-do-$$"; do
	sleep 0.1
	i=$((i + 1))
done
expect_output "husk do --name as $user, then husk exec: root like pid 1" "0 0" 0 -- \
	as_user "$H" exec "rl-do-$$" sh -c 'echo $(id -u) $(id -g)'
echo >&8
exec 8>&-
wait "$do_pid"

# The root's own integration scripts, as the user.
for t in foundation confinement filesystem; do
	out=$(cd "$work/tests" && as_user env HUSK="$H" sh "$work/tests/$t.sh" 2>&1)
	st=$?
	summary=$(printf '%s\n' "$out" | tail -n 1)
	if [ "$st" = 0 ]; then
		pass "$t.sh as $user: $summary"
	else
		fail "$t.sh as $user" "$(printf '%s\n' "$out" | grep -A3 '^not ok' | head -n 30)" \
			"$summary"
	fi
done

# The OCI runtime as the user: state under $XDG_RUNTIME_DIR/husk, no cgroup (one warning).
bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin"
cp /bin/busybox "$bundle/rootfs/bin/busybox" 2>/dev/null || cp "$(command -v busybox)" \
	"$bundle/rootfs/bin/busybox"
for a in sh sleep echo id cat; do ln -s busybox "$bundle/rootfs/bin/$a"; done
chown -R "$uid:$gid" "$bundle"
(cd "$bundle" && as_user "$H" spec)
sed -i 's/"terminal": true/"terminal": false/; s/"sh"$/"sleep", "1000"/' \
	"$bundle/config.json"
id=rl-$$
# The container keeps create's stdio (its own): into a file, not a pipe that would stay open.
(cd "$bundle" && as_user "$H" create "$id" >"$work/create.log" 2>&1)
st=$?
err=$(cat "$work/create.log")
if [ "$st" = 0 ] && [ -f "$work/xdg/husk/$id/state.json" ]; then
	pass "create as $user: the state is under \$XDG_RUNTIME_DIR/husk"
else
	fail "create as $user: the state is under \$XDG_RUNTIME_DIR/husk" "status $st: $err" \
		"$(ls -la "$work/xdg/husk" 2>&1)"
fi
if grep -q '"cgroup": null' "$work/xdg/husk/$id/state.json" 2>/dev/null; then
	[ "$(printf '%s\n' "$err" | grep -c 'cgroup')" = 1 ] &&
		pass "no cgroup delegated: skipped with one warning line" ||
		fail "no cgroup delegated: skipped with one warning line" "stderr: $err"
else
	pass "a cgroup is delegated to $user: used ($(grep cgroup "$work/xdg/husk/$id/state.json"))"
fi
state() { as_user "$H" state "$id" 2>&1 | sed -n 's/^ *"status": "\(.*\)",$/\1/p'; }
[ "$(state)" = created ] && pass "state: created" || fail "state: created" "$(state)"
expect_status "start" 0 -- as_user "$H" start "$id"
[ "$(state)" = running ] && pass "state: running" || fail "state: running" "$(state)"
expect_output "exec: the guest is root" "0 0" 0 -- \
	as_user "$H" exec "$id" sh -c 'echo $(id -u) $(id -g)'
expect_status "pause (the sentry's own freezer)" 0 -- as_user "$H" pause "$id"
[ "$(state)" = paused ] && pass "state: paused" || fail "state: paused" "$(state)"
expect_status "resume" 0 -- as_user "$H" resume "$id"
[ "$(state)" = running ] && pass "state: running again" || fail "state: running again" "$(state)"
pid=$(as_user "$H" state "$id" | sed -n 's/^ *"pid": \([0-9]*\),$/\1/p')
expect_status "kill KILL" 0 -- as_user "$H" kill "$id" KILL
i=0
while [ $i -lt 300 ] && [ "$(state)" != stopped ]; do
	sleep 0.1
	i=$((i + 1))
done
[ "$(state)" = stopped ] && pass "state: stopped" || fail "state: stopped" "$(state)"
expect_status "delete" 0 -- as_user "$H" delete "$id"
[ ! -e "$work/xdg/husk/$id" ] && pass "delete removed the state directory" ||
	fail "delete removed the state directory" "$(ls -la "$work/xdg/husk/$id" 2>&1)"
# Gone, or a zombie of a reaper (init) that has not waited for it yet.
zombie() { [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
[ -n "$pid" ] && { [ ! -d "/proc/$pid" ] || zombie "$pid"; } && pass "the sentry ($pid) is gone" ||
	fail "the sentry is gone" "pid $pid: $(cat "/proc/$pid/stat" 2>&1)"

# Without a cgroup, linux.resources are the sentry's: the guest sees them and they hold.
python3 - "$bundle/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["args"] = ["sh", "-c", "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max; "
                        "for i in 1 2 3 4 5 6; do sleep 2 & done; wait"]
res = c.setdefault("linux", {}).setdefault("resources", {})
res["memory"] = {"limit": 67108864}
res["pids"] = {"limit": 4}
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
out=$(cd "$bundle" && as_user "$H" run "rl-lim-$$" 2>&1)
st=$?
# (busybox sh leaves the loop whose fork failed with status 2: the status is not checked)
if printf '%s\n' "$out" | grep -qx 67108864 && printf '%s\n' "$out" | grep -qx 4 &&
	printf '%s\n' "$out" | grep -q "can't fork"; then
	pass "run as $user: memory and pids limits are the sentry's (a fifth task cannot fork)"
else
	fail "run as $user: memory and pids limits are the sentry's" "status $st: $out"
fi

# Rootless podman: needs newuidmap and subordinate ids for the user.
if ! command -v podman >/dev/null; then
	echo "ok - SKIP podman: not installed (apt-get install podman)"
elif ! command -v newuidmap >/dev/null; then
	echo "ok - SKIP podman: no newuidmap (apt-get install uidmap)"
else
	# Subordinate ids for the user, past every range the files already give out.
	for f in /etc/subuid /etc/subgid; do
		grep -q "^$user:" "$f" 2>/dev/null && continue
		next=$(awk -F: 'BEGIN { n = 100000 } $2 + $3 > n { n = $2 + $3 } END { print n }' \
			"$f" 2>/dev/null || echo 100000)
		echo "$user:$next:65536" >>"$f"
	done
	podman_ok=1
	P() {
		as_user timeout 120 podman --storage-driver vfs --cgroup-manager cgroupfs \
			--events-backend file --runtime "$H" "$@"
	}
	mkdir -p "$work/pod/rootfs/bin" "$work/pod/rootfs/etc" "$work/pod/rootfs/tmp"
	cp "$bundle/rootfs/bin/busybox" "$work/pod/rootfs/bin/busybox"
	for a in $("$work/pod/rootfs/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -s busybox "$work/pod/rootfs/bin/$a"
	done
	tar -C "$work/pod/rootfs" -cf "$work/pod/bb.tar" .
	chown -R "$uid:$gid" "$work/pod"
	if ! P import "$work/pod/bb.tar" localhost/husk-busybox:rootless >"$work/pod/import.log" 2>&1; then
		fail "podman import as $user" "$(tail -n 3 "$work/pod/import.log")"
	else
		expect_output "podman run --rm as $user" "hi" 0 -- P run --pull never --rm \
			--network none localhost/husk-busybox:rootless echo hi
		expect_status "podman run --rm returns the exit status" 3 -- P run --pull never \
			--rm --network none localhost/husk-busybox:rootless sh -c 'exit 3'
	fi
	P rm -f -a >/dev/null 2>&1
	stop_podman_pause
fi

# Nothing left behind: no process of the user's, no container record.
i=0
while [ $i -lt 100 ] && [ -n "$(husk_procs)" ]; do
	sleep 0.1
	i=$((i + 1))
done
left=$(husk_procs)
[ -z "$left" ] && pass "no husk process of $user is left" ||
	fail "no husk process of $user is left" "$left"
records=$(ls -A "$work/xdg/husk" 2>&1)
[ -z "$records" ] && pass "no container record is left under \$XDG_RUNTIME_DIR/husk" ||
	fail "no container record is left" "$records"

finish
