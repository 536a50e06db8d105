# The set-up the OCI tests share (sourced after lib.sh).
#   oci_setup NAME      a static busybox in $BUSYBOX (else the whole test is skipped), $HUSK made
#                       absolute, a work dir $work (/tmp/husk-NAME.XXXXXX) with the state root
#                       $root and the bundle dir $bundle, H (husk --root $root), and a cleanup
#                       at exit that deletes every container and the work dir
#   oci_bundle APPLET...  $bundle/rootfs/bin with busybox and links for the applets, and
#                       $bundle/config.json from `husk spec`
#   wait_above ID FILE N  polls until FILE in container ID holds a number above N (through the
#                       caller's `cat_in ID FILE`)
#   husk_cgroup ID      the cgroup path (below each hierarchy's root) husk gives container ID
#                       under $root when config.json names none: /husk/ID@CRC, CRC the cksum of
#                       $root's canonical path (runtime/cgroup_name.c), so two runs at once with
#                       the same ids never share a cgroup
#   cgroups_of ID       the directories of that cgroup that exist, one a line

oci_setup() {
	BUSYBOX=$(command -v busybox || echo /bin/busybox)
	if [ ! -x "$BUSYBOX" ] || ! file -L "$BUSYBOX" 2>/dev/null | grep -q static; then
		[ -x /bin/busybox ] && BUSYBOX=/bin/busybox
	fi
	if [ ! -x "$BUSYBOX" ]; then
		echo "ok - SKIP all: no static busybox (apt-get install busybox-static)"
		finish
	fi
	case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
	work=$(mktemp -d "/tmp/husk-$1.XXXXXX")
	root=$work/state
	bundle=$work/bundle
	trap oci_cleanup EXIT
}

H() { "$HUSK" --root "$root" "$@"; }

husk_cgroup() { husk_cgroup_in "$root" "$1"; }
cgroups_of() {
	set -- "$(husk_cgroup "$1")"
	ls -d /sys/fs/cgroup/*"$1" /sys/fs/cgroup"$1" 2>/dev/null
}

oci_cleanup() {
	for id in $(H list -q 2>/dev/null); do H delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}

oci_bundle() {
	mkdir -p "$bundle/rootfs/bin"
	cp "$BUSYBOX" "$bundle/rootfs/bin/busybox"
	for a in "$@"; do ln -s busybox "$bundle/rootfs/bin/$a"; done
	(cd "$bundle" && "$HUSK" spec) || fail "husk spec"
}

# set_args ARG...: the bundle's process runs ARG..., with plain stdio and a writable root (its
# changes live in the overlay's upper layer).
set_args() {
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = sys.argv[2:]
c["process"]["terminal"] = False
c["root"]["readonly"] = False
json.dump(c, open(p, "w"), indent=1)
PY
}
# host_root_args ARG...: the bundle's process runs ARG... over the host's / (as root), with plain
# stdio; its writes stay in the sandbox's in-memory overlay.
host_root_args() {
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["root"] = {"path": "/", "readonly": False}
c["process"]["terminal"] = False
c["process"]["args"] = sys.argv[2:]
json.dump(c, open(p, "w"))
PY
}
status_of() { H state "$1" 2>/dev/null | sed -n 's/.*"status": "\(.*\)".*/\1/p'; }
pid_of() { H state "$1" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'; }
# cat_in ID FILE: FILE in container ID (tests of another engine define their own after this).
cat_in() { H exec "$1" cat "$2" 2>/dev/null; }

# wait_exists ID FILE: polls (0.05 s steps, up to 60 s) until FILE exists in container ID.
wait_exists() {
	i=0
	while [ $i -lt 1200 ]; do
		H exec "$1" test -e "$2" 2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# wait_file ID FILE: polls (0.05 s steps, up to 120 s: nothing is timed) until FILE in container
# ID holds something; prints it (or "none") and returns 0 (else 1).
wait_file() {
	i=0
	while [ $i -lt 2400 ]; do
		v=$(cat_in "$1" "$2") && [ -n "$v" ] && {
			echo "$v"
			return 0
		}
		sleep 0.05
		i=$((i + 1))
	done
	echo "none"
	return 1
}

# wait_above ID FILE N: polls (0.05 s steps, up to 60 s: no timing is asserted) until FILE in
# container ID holds a number above N, read with the caller's cat_in ID FILE (husk exec, ctr task
# exec). Prints the number (or what it last read, "none" for nothing) and returns 0 (else 1).
wait_above() {
	i=0
	while [ $i -lt 1200 ]; do
		v=$(cat_in "$1" "$2")
		[ -n "$v" ] && [ "$v" -gt "$3" ] 2>/dev/null && { echo "$v"; return 0; }
		sleep 0.05
		i=$((i + 1))
	done
	echo "${v:-none}"
	return 1
}
