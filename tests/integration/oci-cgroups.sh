#!/bin/sh
# Host cgroups on pure v1 and pure v2 layouts. This host is "hybrid" (v1 controllers plus a v2
# hierarchy at /sys/fs/cgroup/unified); the test re-creates the other two layouts in a private
# mount namespace, over the same kernel hierarchies:
#   v1: a tmpfs at /sys/fs/cgroup with the memory, pids, cpu and freezer hierarchies mounted in
#       it, and no unified hierarchy;
#   v2: the cgroup2 hierarchy mounted at /sys/fs/cgroup itself.
# In each, a busybox container with memory and cpu limits is created, its sentry must be in the
# container's cgroup of every usable hierarchy with the limits written, and delete must remove
# the cgroups.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
BUSYBOX=/bin/busybox
if [ ! -x "$BUSYBOX" ] || ! command -v unshare >/dev/null; then
	echo "ok - SKIP all: needs /bin/busybox (busybox-static) and unshare"
	finish
fi

if [ -z "$HUSK_CGROUP_LAYOUT" ]; then
	# Parent: run each layout in a mount namespace of its own.
	for layout in v1 v2; do
		out=$(HUSK_CGROUP_LAYOUT=$layout unshare -m --propagation private "$0" 2>&1)
		echo "$out" | grep -v '^[0-9]* passed, [0-9]* failed$'
		p=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
		f=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
		if [ -z "$p" ]; then
			fail "$layout layout: the test did not finish" "$(echo "$out" | tail -5)"
		else
			passed=$((passed + p))
			failed=$((failed + f))
		fi
	done
	finish
fi

layout=$HUSK_CGROUP_LAYOUT
case $layout in
v1)
	mount -t tmpfs cgroup-root /sys/fs/cgroup || fail "v1: tmpfs at /sys/fs/cgroup"
	for c in memory pids cpu freezer; do
		mkdir -p /sys/fs/cgroup/$c
		mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c || fail "v1: mount $c"
	done
	;;
v2)
	mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "v2: mount cgroup2"
	;;
esac

oci_setup cg
oci_bundle sh sleep
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["sleep", "100"]
c["linux"]["resources"] = {"memory": {"limit": 268435456},
                           "cpu": {"quota": 50000, "period": 100000}}
json.dump(c, open(p, "w"), indent=1)
PY

id=cg-$layout
cg=$(husk_cgroup "$id")
expect_status "$layout: create" 0 -- H create --bundle "$bundle" "$id"
pid=$(H state "$id" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
[ -n "$pid" ] || fail "$layout: state has a pid" "$(H state "$id" 2>&1)"

# The cgroup directories the container must have, and its limits there.
case $layout in
v1)
	dirs="/sys/fs/cgroup/memory$cg /sys/fs/cgroup/pids$cg
		/sys/fs/cgroup/cpu$cg /sys/fs/cgroup/freezer$cg"
	limit_file=/sys/fs/cgroup/memory$cg/memory.limit_in_bytes
	quota_file=/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us
	quota_want=50000
	;;
v2)
	dirs="/sys/fs/cgroup$cg"
	# Only controllers that are not bound to a v1 hierarchy exist in v2 here (hugetlb):
	# memory and cpu limits cannot be applied, which create must survive with a warning.
	limit_file=
	quota_file=
	;;
esac
for d in $dirs; do
	if [ -n "$pid" ] && grep -qx "$pid" "$d/cgroup.procs" 2>/dev/null; then
		pass "$layout: the sentry is in $d"
	else
		fail "$layout: the sentry is in $d" "cgroup.procs: $(cat "$d/cgroup.procs" 2>&1)"
	fi
done
if [ -n "$limit_file" ]; then
	got=$(cat "$limit_file" 2>&1)
	# 256 MiB and the host's margin for the sentry's own memory (64 MiB; runtime/cgroup.c).
	[ "$got" = 335544320 ] && pass "$layout: memory limit written" ||
		fail "$layout: memory limit written" "$limit_file: $got"
	got=$(cat "$quota_file" 2>&1)
	[ "$got" = "$quota_want" ] && pass "$layout: cpu quota written" ||
		fail "$layout: cpu quota written" "$quota_file: $got"
fi

expect_status "$layout: start" 0 -- H start "$id"
expect_status "$layout: update --memory" 0 -- H update --memory 134217728 "$id"
if [ -n "$limit_file" ]; then
	got=$(cat "$limit_file" 2>&1)
	[ "$got" = 201326592 ] && pass "$layout: update reached the cgroup" ||
		fail "$layout: update reached the cgroup" "$limit_file: $got"
fi
expect_status "$layout: pause" 0 -- H pause "$id"
st=$(H state "$id" | sed -n 's/.*"status": "\(.*\)".*/\1/p')
[ "$st" = paused ] && pass "$layout: paused" || fail "$layout: paused" "status $st"
expect_status "$layout: resume" 0 -- H resume "$id"
expect_status "$layout: kill" 0 -- H kill "$id" KILL
for _ in $(seq 50); do
	st=$(H state "$id" | sed -n 's/.*"status": "\(.*\)".*/\1/p')
	[ "$st" = stopped ] && break
	sleep 0.1
done
expect_status "$layout: delete" 0 -- H delete "$id"
left=
for d in $dirs; do [ -d "$d" ] && left="$left $d"; done
[ -z "$left" ] && pass "$layout: delete removed the cgroups" ||
	fail "$layout: delete removed the cgroups" "left:$left"
finish
