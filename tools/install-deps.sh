#!/bin/sh
# Install what husk needs to build, test and benchmark, from Debian's archive.
# python3-pytest, python3-yaml: the Python client's tests (clients/python).
# uidmap: newuidmap/newgidmap, which rootless podman needs (tests/integration/rootless.sh).
# python3-grpcio, python3-protobuf, protobuf-compiler(-grpc), containernetworking-plugins, runc:
# tests/integration/cri.sh (a CRI client made at test time, the pods' CNI bridge, the reference).
# chromium, fonts-liberation (a Recommends of it, for the page's text): tests/programs/chromium.sh.
# qemu-system-x86, linux-image-amd64: tests/kvm/run.sh boots that kernel under QEMU/TCG with nested
# SVM to test the KVM platform (issue 19); the image only goes to /boot for the harness to read;
# cpio and xz-utils build its initramfs and unpack the kernel.
# systemd: tests/programs/systemd.sh boots it as a sandbox's pid 1 (a slim image may lack it).
# stress-ng: the CPU hog of `make check-loaded` (tools/check-under-load.sh).
# criu: podman checks for it before it asks its runtime (husk) to checkpoint; husk does not use it.
# buildah: issue 17's podman build test (tests/programs/podman.sh builds a Containerfile in husk).
# Does nothing (and needs no network) when everything is already there.
set -eu

PKGS="meson ninja-build pkg-config gcc clang make python3 strace
libseccomp-dev libcap-dev libelf-dev libdw-dev libunwind-dev
libprotobuf-c-dev protobuf-c-compiler libcriterion-dev libbpf-dev bpftool libjansson-dev
libmicrohttpd-dev
libssl-dev openssl iproute2
libclang-rt-14-dev clang-format
busybox-static containerd podman golang-go
criu buildah
python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc
containernetworking-plugins runc
uidmap
nodejs
chromium fonts-liberation
systemd
python3-pytest python3-yaml
qemu-system-x86 linux-image-amd64 cpio xz-utils
stress-ng"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
