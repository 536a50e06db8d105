#!/bin/sh
# podman (with conmon and runc) as guests inside a husk sandbox (issue 17): a busybox image
# imported from a rootfs tarball into a private vfs store, then `podman run --rm` of it, whose
# output is checked, and compared with the same commands on the host where they work there. runc's container is made with the
# sentry's namespaces, cgroup2 (cgroupfs manager) and bpf(2) device program, all inside the
# sentry. The container shares the cgroup namespace of podman (--cgroupns host); a private one
# and `podman build` / `buildah bud` are not covered yet.
. "$(dirname "$0")/../integration/lib.sh"

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || [ ! -x /bin/busybox ]; then
	fail "podman, runc and busybox are installed" \
		"tools/install-deps.sh installs them (apt-get install podman runc busybox-static)"
	finish
	exit 1
fi
work=$(mktemp -d /tmp/husk-podman.XXXXXX)
trap 'rm -rf "$work" 2>/dev/null || rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/rootfs/bin"
cp /bin/busybox "$work/rootfs/bin/busybox"
for a in $(/bin/busybox --list); do
	[ "$a" = busybox ] || ln -s busybox "$work/rootfs/bin/$a"
done
tar -C "$work/rootfs" -cf "$work/bb.tar" .

# The commands, with their store under DIR: import, then run the image.
script() {
	cat <<EOF
P="podman --root $1/root --runroot $1/run --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc"
\$P import $work/bb.tar localhost/husk-bb:test >$1/import.log 2>&1 || { tail -n 5 $1/import.log; exit 1; }
\$P run --rm --network none --cgroupns host --ulimit host localhost/husk-bb:test sh -c 'echo hi from \$(hostname | wc -c) ; ls /dev/null; exit 3'
echo "rc=\$?"
EOF
}

mkdir "$work/native" "$work/husk"
script "$work/native" >"$work/native.sh"
script "$work/husk" >"$work/husk.sh"
# What the container prints: its host name is the container id's first 12 characters.
printf 'hi from 13\n/dev/null\nrc=3\n' >"$work/want"
# The host's run is the reference where it works (some hosts refuse runc's prlimit of the
# container's init); else the expected output above is.
if timeout 300 sh "$work/native.sh" >"$work/native/out" 2>"$work/native/err" &&
	cmp -s "$work/native/out" "$work/want"; then
	pass "host: podman run --rm prints the expected output"
else
	echo "# the host's own podman run fails here: $(tail -n 1 "$work/native/err")"
fi
# In husk: the store is in the sandbox's own /tmp (the overlay's upper layer).
timeout 600 "$HUSK" do -E -- sh "$work/husk.sh" >"$work/husk/out" 2>"$work/husk/err"
if cmp -s "$work/want" "$work/husk/out"; then
	pass "husk: podman run --rm prints the container's output ($(tr '\n' ' ' <"$work/husk/out"))"
else
	fail "husk: podman run --rm prints the container's output" \
		"want: $(cat "$work/want")" "husk: $(cat "$work/husk/out")" \
		"$(tail -n 10 "$work/husk/err")"
fi
finish
