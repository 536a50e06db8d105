#!/bin/sh
# podman (with conmon and runc) as guests inside a husk sandbox (issue 17): a busybox image
# imported from a rootfs tarball into a private vfs store, then `podman run --rm` of it with
# podman's default private cgroup namespace (the container sees its cgroup as /) and with
# --cgroupns host, then `podman build --isolation oci` of a two-line Containerfile (FROM that
# image, RUN echo built > /f) and `podman run --rm` of the new image printing /f, and the same
# with `buildah bud --isolation oci` into the same store. The outputs are
# checked, and compared with the same commands on the host where they work there. runc's
# containers (the build's RUN step too) are made with the sentry's namespaces, cgroup2 (cgroupfs
# manager) and bpf(2) device program, all inside the sentry, without host privileges. The build
# uses --isolation oci (runc, as `podman run`), not chroot: chroot isolation refuses
# --network none, and `buildah bud --isolation chroot` does not finish in husk yet. On this
# host the native run fails at runc's prlimit of the container's init ("error setting rlimit
# type 7" (RLIMIT_NOFILE): EPERM), so the expected output below is the reference there.
. "$(dirname "$0")/../integration/lib.sh"

if ! command -v podman >/dev/null || ! command -v runc >/dev/null ||
	! command -v buildah >/dev/null || [ ! -x /bin/busybox ]; then
	fail "podman, buildah, runc and busybox are installed" \
		"tools/install-deps.sh installs them (apt-get install podman buildah runc busybox-static)"
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
mkdir "$work/ctx"
printf 'FROM localhost/husk-bb:test\nRUN echo built > /f\n' >"$work/ctx/Containerfile"

# The commands, with their store under DIR: import, then run the image.
script() {
	cat <<EOF
P="podman --root $1/root --runroot $1/run --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc"
\$P import $work/bb.tar localhost/husk-bb:test >$1/import.log 2>&1 || { tail -n 5 $1/import.log; exit 1; }
\$P run --rm --network none --ulimit host localhost/husk-bb:test sh -c 'echo hi from \$(hostname | wc -c) ; cat /proc/self/cgroup; ls /dev/null; exit 3'
echo "rc=\$?"
\$P run --rm --network none --cgroupns host --ulimit host localhost/husk-bb:test sh -c 'sed "s/-[0-9a-f]*\$/-ID/" /proc/self/cgroup'
echo "rc=\$?"
\$P build --isolation oci --network none -t localhost/husk-built:test $work/ctx >$1/build.log 2>&1 || { tail -n 5 $1/build.log; exit 1; }
\$P run --rm --pull never --network none --ulimit host localhost/husk-built:test cat /f
echo "rc=\$?"
buildah --root $1/root --runroot $1/run --storage-driver vfs bud --isolation oci --runtime runc --network none -t localhost/husk-bud:test $work/ctx >$1/bud.log 2>&1 || { tail -n 5 $1/bud.log; exit 1; }
\$P run --rm --pull never --network none --ulimit host localhost/husk-bud:test cat /f
echo "rc=\$?"
EOF
}

mkdir "$work/native" "$work/husk"
script "$work/native" >"$work/native.sh"
script "$work/husk" >"$work/husk.sh"
# What the containers print: the host name is the container id's first 12 characters; the
# cgroup is / in the container's own cgroup namespace, podman's cgroupfs path with the host's.
printf 'hi from 13\n0::/\n/dev/null\nrc=3\n0::/libpod_parent/libpod-ID\nrc=0\nbuilt\nrc=0\nbuilt\nrc=0\n' \
	>"$work/want"
# The host's run is the reference where it works (some hosts refuse runc's prlimit of the
# container's init); else the expected output above is.
if timeout 300 sh "$work/native.sh" >"$work/native/out" 2>"$work/native/err" &&
	cmp -s "$work/native/out" "$work/want"; then
	pass "host: podman run --rm, podman build and buildah bud print the expected output"
else
	echo "# the host's own podman run fails here: $(tail -n 1 "$work/native/err")"
fi
# In husk: the store is in the sandbox's own /tmp (the overlay's upper layer).
timeout 600 "$HUSK" do -E -- sh "$work/husk.sh" >"$work/husk/out" 2>"$work/husk/err"
if cmp -s "$work/want" "$work/husk/out"; then
	pass "husk: podman run --rm (both cgroup namespaces), podman build and buildah bud print the containers' output ($(tr '\n' ' ' <"$work/husk/out"))"
else
	fail "husk: podman run --rm (both cgroup namespaces), podman build and buildah bud print the containers' output" \
		"want: $(cat "$work/want")" "husk: $(cat "$work/husk/out")" \
		"$(tail -n 10 "$work/husk/err")"
fi
finish
