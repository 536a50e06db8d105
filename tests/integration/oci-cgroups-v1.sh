#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# cgroups on a v1/hybrid host (issue 15): the container is placed in every v1 hierarchy the host
# has, as runc places its container (compared with runc's /proc/PID/cgroup when runc is
# installed), linux.resources reach each controller's files at create, `husk update` (runc's
# flags and -r) changes them, and delete leaves no cgroup behind.
#
# The test runs in a private mount namespace that re-mounts the host's own v1 hierarchies and its
# unified v2 one, and adds the controllers no hierarchy holds (net_cls, net_prio, perf_event...:
# a v1 hierarchy of their own lives as long as this namespace's mount of it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null ||
	[ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" != tmpfs ]; then
	echo "ok - SKIP all: needs root, unshare and a v1 or hybrid cgroup layout (tmpfs at /sys/fs/cgroup)"
	finish
fi

if [ -z "${HUSK_CGV1_INNER:-}" ]; then
	out=$(HUSK_CGV1_INNER=1 unshare -m --propagation private "$0" 2>&1)
	echo "$out" | grep -v '^[0-9]* passed, [0-9]* failed$'
	p=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
	f=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
	if [ -z "$p" ]; then
		fail "the test did not finish" "$(echo "$out" | tail -5)"
	else
		passed=$((passed + p))
		failed=$((failed + f))
	fi
	finish
fi

# --- the layout: the host's hierarchies, re-mounted, plus the unbound controllers ---
C=/sys/fs/cgroup
mounts=$(awk '$5 ~ "^/sys/fs/cgroup/" && ($9 == "cgroup" || $9 == "cgroup2") {
	n = split($0, f, " - "); split(f[2], g, " "); print $5, $9, g[3] }' /proc/self/mountinfo)
links=$(find $C -maxdepth 1 -type l -printf '%f %l\n')
mount -t tmpfs cgroup-root $C || fail "tmpfs at $C"
echo "$mounts" | while read -r dir type opts; do
	[ -n "$dir" ] || continue
	mkdir -p "$dir"
	if [ "$type" = cgroup2 ]; then
		mount -t cgroup2 cgroup2 "$dir"
	else
		# the super options name the controllers (and name=systemd)
		o=$(echo "$opts" | tr , '\n' | grep -v -E '^(rw|ro|relatime|noatime|nosuid|nodev|noexec)$' |
			paste -sd, -)
		mount -t cgroup -o "$o" cgroup "$dir"
	fi
done
echo "$links" | while read -r name target; do [ -n "$name" ] && ln -s "$target" "$C/$name"; done
extra=
for ctl in net_cls net_prio perf_event rdma misc hugetlb; do
	# An enabled controller with no hierarchy here (hugetlb only where the unified hierarchy
	# does not hold it: a hybrid host's hugetlb limits go there).
	awk -v c=$ctl '$1 == c && $4 == 1 { f = 1 } END { exit !f }' /proc/cgroups || continue
	[ -e $C/$ctl ] && continue
	[ $ctl = hugetlb ] && [ -e $C/unified/cgroup.controllers ] &&
		grep -qw hugetlb $C/unified/cgroup.controllers && continue
	mkdir -p $C/$ctl
	if mount -t cgroup -o $ctl cgroup $C/$ctl 2>/dev/null; then
		extra="$extra $ctl"
	else
		rmdir $C/$ctl
	fi
done
echo "# hierarchies: $(ls $C | tr '\n' ' ')(added here:$extra)"

oci_setup cgv1
# hugetlb limits on a hybrid host enable hugetlb in the unified root's subtree_control; the
# test gives it back as it found it.
huge_before=$(cat $C/unified/cgroup.subtree_control 2>/dev/null)
oci_bundle sh sleep cat
P=/husk-cgv1-$$
# A real block device for the throttles (the first of /sys/block).
blk=$(cat "$(ls -d /sys/block/* | head -1)/dev" 2>/dev/null)
MAJ=${blk%%:*}
MIN=${blk##*:}
[ -d /sys/kernel/mm/hugepages/hugepages-2048kB ] && huge=1 || huge=
python3 - "$bundle/config.json" "$P" "$MAJ" "$MIN" "$huge" <<'PY'
import json, sys
p, path, maj, mi, huge = sys.argv[1:6]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["sleep", "100"]
c["linux"]["cgroupsPath"] = path
r = {"memory": {"limit": 268435456, "reservation": 134217728},
     "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0", "mems": "0"},
     "blockIO": {"weight": 300},
     "network": {"classID": 1048577, "priorities": [{"name": "lo", "priority": 5}]}}
if maj:
    r["blockIO"]["throttleReadBpsDevice"] = [{"major": int(maj), "minor": int(mi), "rate": 1048576}]
if huge:
    r["hugepageLimits"] = [{"pageSize": "2MB", "limit": 4194304}]
c["linux"]["resources"] = r
json.dump(c, open(p, "w"), indent=1)
PY

# check NAME FILE WANT: FILE (in the container's cgroup) has a line that is WANT (a regular
# expression, whole line).
check() {
	if [ ! -e "$2" ]; then
		echo "# skip $1: no $2 on this host"
		return
	fi
	if grep -qxE "$3" "$2" 2>/dev/null; then
		pass "$1"
	else
		fail "$1" "$2: $(head -c 300 "$2" 2>&1), want $3"
	fi
}
# The blkio weight file: BFQ kernels name it blkio.bfq.weight (some print "default N").
weight_file() {
	[ -e "$C/blkio$P/blkio.bfq.weight" ] && echo "$C/blkio$P/blkio.bfq.weight" ||
		echo "$C/blkio$P/blkio.weight"
}
weight_want() { echo "(default )?$1"; }
# The hugetlb file: a v1 hugetlb hierarchy's, else the unified one's (hybrid hosts).
huge_file() {
	[ -d "$C/hugetlb" ] && echo "$C/hugetlb$P/hugetlb.2MB.limit_in_bytes" ||
		echo "$C/unified$P/hugetlb.2MB.max"
}

id=cgv1
expect_status "create" 0 -- H create --bundle "$bundle" "$id"
pid=$(pid_of "$id")
[ -n "$pid" ] || fail "state has a pid" "$(H state "$id" 2>&1)"

# Every hierarchy of the namespace (co-mounted ones once) holds the sentry under $P.
want=$(awk -F: '{print $2}' /proc/self/cgroup | sort | tr '\n' ' ')
got=$(awk -F: -v p="$P" '$3 == p {print $2}' "/proc/$pid/cgroup" 2>/dev/null | sort | tr '\n' ' ')
[ -n "$pid" ] && [ "$got" = "$want" ] && pass "the sentry is in $P of every hierarchy ($got)" ||
	fail "the sentry is in $P of every hierarchy" "want: $want" "got:  $got" \
		"$(cat "/proc/$pid/cgroup" 2>&1)"
for ctl in $extra; do
	grep -q ":$ctl:$P\$" "/proc/$pid/cgroup" 2>/dev/null && pass "placed in $ctl" ||
		fail "placed in $ctl" "$(cat "/proc/$pid/cgroup" 2>&1)"
done
if command -v runc >/dev/null 2>&1; then
	# runc's container, same bundle, another path: the same hierarchies.
	python3 - "$bundle/config.json" "$P-runc" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["linux"]["cgroupsPath"] = sys.argv[2]
# runc 1.1 sets hugetlb limits in a v1 hugetlb hierarchy only, and fails without one.
c["linux"]["resources"].pop("hugepageLimits", None)
json.dump(c, open(sys.argv[1] + ".runc", "w"))
PY
	mkdir -p "$work/runc-bundle"
	cp "$bundle/config.json.runc" "$work/runc-bundle/config.json"
	mkdir "$work/runc-bundle/rootfs" && cp -a "$bundle/rootfs/." "$work/runc-bundle/rootfs/"
	# Output to a file: runc's init holds what it is given until the container starts.
	trap 'runc --root "$work/runc" delete -f cgv1-runc >/dev/null 2>&1; oci_cleanup' EXIT
	if runc --root "$work/runc" create --bundle "$work/runc-bundle" cgv1-runc \
		>"$work/runc.out" 2>&1 </dev/null; then
		rpid=$(runc --root "$work/runc" state cgv1-runc | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
		rgot=$(awk -F: -v p="$P-runc" '$3 == p {print $2}' "/proc/$rpid/cgroup" | sort |
			tr '\n' ' ')
		[ "$rgot" = "$got" ] && pass "the same hierarchies as runc's container" ||
			fail "the same hierarchies as runc's container" "runc: $rgot" "husk: $got"
		runc --root "$work/runc" delete -f cgv1-runc >/dev/null 2>&1
	else
		echo "# skip: runc create failed here: $(tail -1 "$work/runc.out")"
	fi
fi

check "cpuset.cpus" "$C/cpuset$P/cpuset.cpus" 0
check "cpuset.mems" "$C/cpuset$P/cpuset.mems" 0
check "cpu.shares" "$C/cpu$P/cpu.shares" 512
check "cpu.cfs_quota_us" "$C/cpu$P/cpu.cfs_quota_us" 50000
check "cpu.cfs_period_us" "$C/cpu$P/cpu.cfs_period_us" 100000
check "memory limit (+ the sentry's margin)" "$C/memory$P/memory.limit_in_bytes" 335544320
check "memory reservation" "$C/memory$P/memory.soft_limit_in_bytes" 134217728
check "blkio weight" "$(weight_file)" "$(weight_want 300)"
[ -n "$MAJ" ] && check "blkio read bps throttle" "$C/blkio$P/blkio.throttle.read_bps_device" \
	"$MAJ:$MIN 1048576"
check "net_cls.classid" "$C/net_cls$P/net_cls.classid" 1048577
check "net_prio.ifpriomap" "$C/net_prio$P/net_prio.ifpriomap" "lo 5"
[ -n "$huge" ] && check "hugetlb 2MB limit" "$(huge_file)" 4194304

expect_status "start" 0 -- H start "$id"
cpus=0
[ "$(nproc)" -ge 2 ] && cpus=0-1
expect_status "update with runc's flags" 0 -- H update --cpuset-cpus $cpus --cpu-share 256 \
	--cpu-quota 20000 --blkio-weight 500 --memory 128M --memory-reservation 64M "$id"
check "update: cpuset.cpus" "$C/cpuset$P/cpuset.cpus" $cpus
check "update: cpu.shares" "$C/cpu$P/cpu.shares" 256
check "update: cpu.cfs_quota_us" "$C/cpu$P/cpu.cfs_quota_us" 20000
check "update: blkio weight" "$(weight_file)" "$(weight_want 500)"
check "update: memory limit" "$C/memory$P/memory.limit_in_bytes" 201326592
check "update: memory reservation" "$C/memory$P/memory.soft_limit_in_bytes" 67108864

python3 - "$work/r.json" "$MAJ" "$MIN" <<'PY'
import json, sys
r = {"network": {"classID": 2, "priorities": [{"name": "lo", "priority": 7}]},
     "cpu": {"period": 50000},
     "hugepageLimits": [{"pageSize": "2MB", "limit": 2097152}]}
if sys.argv[2]:
    r["blockIO"] = {"throttleWriteIOPSDevice": [{"major": int(sys.argv[2]),
                                                 "minor": int(sys.argv[3]), "rate": 100}]}
json.dump(r, open(sys.argv[1], "w"))
PY
expect_status "update -r resources.json" 0 -- H update -r "$work/r.json" "$id"
check "update -r: net_cls.classid" "$C/net_cls$P/net_cls.classid" 2
check "update -r: net_prio.ifpriomap" "$C/net_prio$P/net_prio.ifpriomap" "lo 7"
check "update -r: cpu.cfs_period_us" "$C/cpu$P/cpu.cfs_period_us" 50000
[ -n "$huge" ] && check "update -r: hugetlb 2MB limit" "$(huge_file)" 2097152
[ -n "$MAJ" ] && check "update -r: blkio write iops throttle" \
	"$C/blkio$P/blkio.throttle.write_iops_device" "$MAJ:$MIN 100"
out=$(H update --cpuset-cpus 4095 "$id" 2>&1)
st=$?
case "$st:$out" in
0:*) fail "an impossible cpuset is refused" "status 0: $out" ;;
*cpuset.cpus*4095*) pass "an impossible cpuset is refused, naming the file and the value" ;;
*) fail "an impossible cpuset is refused, naming the file and the value" "$out" ;;
esac

expect_status "kill" 0 -- H kill "$id" KILL
i=0
while [ $i -lt 600 ] && [ "$(status_of "$id")" != stopped ]; do
	sleep 0.05
	i=$((i + 1))
done
expect_status "delete" 0 -- H delete "$id"
left=$(ls -d $C/*$P 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] && pass "delete removed the cgroup from every hierarchy" ||
	fail "delete removed the cgroup from every hierarchy" "left: $left"
# A v1 hierarchy this namespace made goes away with its mount only if no cgroup of it is still
# being freed then: wait (up to 15 s) until each holds its root alone, so the host's
# controllers return to where they were.
case " $huge_before " in
*" hugetlb "*) ;;
*) echo -hugetlb >$C/unified/cgroup.subtree_control 2>/dev/null ;;
esac
for ctl in $extra; do
	i=0
	while [ $i -lt 300 ] && [ "$(awk -v c=$ctl '$1 == c {print $3}' /proc/cgroups)" != 1 ]; do
		sleep 0.05
		i=$((i + 1))
	done
done
finish
