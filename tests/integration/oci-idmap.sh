#!/bin/sh
# linux.uidMappings/gidMappings and process.oomScoreAdj against runc on the same bundle (a user
# namespace with mappings 0 -> 100000 and 0 -> 200000): what the guest sees in
# /proc/self/uid_map, gid_map and oom_score_adj, the owners it sees of host files in a bind mount
# (mapped back, or the overflow id 65534), the host owner of a file it creates there (the
# mapped one), and that its capabilities count only on files whose owners are mapped (a host
# root's file stays unwritable with CAP_DAC_OVERRIDE). Then what runc has no say in: husk
# exec's process.oomScoreAdj, the floor an unprivileged process cannot go below, /proc/self/ns, checkpoint and restore, the sentry's OOM
# killer weighing oom_score_adj (memtouch holders under a 64 MiB limit), and ids refused at
# create.
# Needs root (the mappings name other users); runc is optional (skipped when absent).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

if [ "$(id -u)" != 0 ]; then
	echo "ok - SKIP all: needs root (files owned by mapped users)"
	finish
fi
oci_setup oci-idmap
# runc names a container's cgroup /ID (no cgroupsPath in the bundle): ids of this run's own, so
# that two runs at once (two make checks) never share one.
run=${work##*.}
vol=$work/vol
# The mapped root (host 100000) must reach the bundle and the volume under runc.
chmod 755 "$work"
mkdir -p "$bundle/rootfs/proc" "$bundle/rootfs/dev" "$bundle/rootfs/sys" "$bundle/rootfs/vol" "$vol"
chmod 777 "$vol"
oci_bundle sh cat echo ls stat readlink id sleep test chmod chown kill tr
chmod 755 "$bundle"
touch "$vol/hostroot" "$vol/mapped"
chown 100005:200006 "$vol/mapped"

# config ARGS...: a user namespace with the mappings, oomScoreAdj 123, /vol bound read-write.
config() {
	python3 - "$bundle/config.json" "$vol" "$@" <<'PY'
import json, sys
p, vol = sys.argv[1:3]
c = json.load(open(p))
c["process"]["terminal"] = False
c["root"]["readonly"] = False
c["process"]["args"] = sys.argv[3:]
c["process"]["oomScoreAdj"] = 123
# Capabilities that would override permissions, to show they count only on mapped owners.
caps = c["process"].setdefault("capabilities", {})
for k in ("bounding", "effective", "permitted"):
    caps[k] = sorted(set(caps.get(k, [])) | {"CAP_DAC_OVERRIDE", "CAP_CHOWN", "CAP_FOWNER"})
l = c["linux"]
if not any(n["type"] == "user" for n in l["namespaces"]):
    l["namespaces"].append({"type": "user"})
l["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
l["gidMappings"] = [{"containerID": 0, "hostID": 200000, "size": 65536}]
c["mounts"] = [m for m in c["mounts"] if m["destination"] != "/vol"]
c["mounts"].append({"destination": "/vol", "type": "bind", "source": vol,
                    "options": ["rbind", "rw"]})
json.dump(c, open(p, "w"), indent=1)
PY
}

view='cat /proc/self/uid_map /proc/self/gid_map /proc/self/oom_score_adj;
stat -c "%n %u:%g" /vol/hostroot /vol/mapped; echo made >/vol/made; stat -c "%n %u:%g" /vol/made; id -u;
{ echo x >>/vol/hostroot; } 2>/dev/null || echo "write refused"; chmod 666 /vol/hostroot 2>/dev/null || echo "chmod refused";
echo y >>/vol/mapped && echo "mapped written";
echo z >/dev/shm/f; chown 70000 /dev/shm/f 2>/dev/null || echo "chown to an unmapped uid refused"; chown 65535:65535 /dev/shm/f && stat -c %u:%g /dev/shm/f'
config sh -c "$view"
want="         0     100000      65536
         0     200000      65536
123
/vol/hostroot 65534:65534
/vol/mapped 5:6
/vol/made 0:0
0
write refused
chmod refused
mapped written
chown to an unmapped uid refused
65535:65535"
n=0
husk_run() { n=$((n + 1)); (cd "$bundle" && H run "h$n"); }
rm -f "$vol/made"
expect_output "husk: the guest sees the mappings, oomScoreAdj and owners mapped back" "$want" 0 \
	-- husk_run
owner=$(stat -c %u:%g "$vol/made" 2>&1)
[ "$owner" = 100000:200000 ] && pass "husk: a file the guest's root creates is the mapped root's" ||
	fail "husk: a file the guest's root creates is the mapped root's" "host owner $owner"

if command -v runc >/dev/null 2>&1; then
	rm -f "$vol/made"
	runc_out=$(cd "$bundle" && runc --root "$work/runc" run "r1-$run" 2>&1)
	runc_owner=$(stat -c %u:%g "$vol/made" 2>&1)
	rm -f "$vol/made"
	husk_out=$(husk_run 2>&1)
	husk_owner=$(stat -c %u:%g "$vol/made" 2>&1)
	if [ "$runc_out" = "$want" ]; then
		[ "$husk_out" = "$runc_out" ] && pass "the guest's view is runc's on the same bundle" ||
			fail "the guest's view is runc's on the same bundle" "runc: $runc_out" \
				"husk: $husk_out"
		[ "$husk_owner" = "$runc_owner" ] &&
			pass "the host owner of a created file is runc's ($runc_owner)" ||
			fail "the host owner of a created file is runc's" "runc: $runc_owner" \
				"husk: $husk_owner"
	else
		echo "ok - SKIP runc comparison: runc could not run the bundle here: $runc_out"
	fi
	runc --root "$work/runc" delete -f "r1-$run" >/dev/null 2>&1
else
	echo "ok - SKIP runc comparison: no runc"
fi

# --- husk exec: the exec's own process.oomScoreAdj, else the container's ---
config sh -c 'echo ready >/vol/ready; while :; do sleep 1; done'
(cd "$bundle" && H run -d long >/dev/null 2>&1) || fail "husk run -d long"
wait_exists long /vol/ready || fail "the long container started"
expect_output "husk exec without oomScoreAdj gets the container's" "123" 0 \
	-- H exec long cat /proc/self/oom_score_adj
cat >"$work/proc.json" <<'EOF'
{"args": ["cat", "/proc/self/oom_score_adj"], "cwd": "/", "oomScoreAdj": -7,
 "user": {"uid": 0, "gid": 0}, "env": ["PATH=/bin"]}
EOF
expect_output "husk exec --process with oomScoreAdj -7 gets it" "-7" 0 \
	-- H exec --process "$work/proc.json" long
cat >"$work/bad.json" <<'EOF'
{"args": ["true"], "cwd": "/", "oomScoreAdj": 1001}
EOF
out=$(H exec --process "$work/bad.json" long 2>&1)
case "$out" in *oomScoreAdj*) pass "an oomScoreAdj out of range is refused by husk exec" ;;
*) fail "an oomScoreAdj out of range is refused by husk exec" "$out" ;; esac
cat >"$work/unmapped.json" <<'EOF'
{"args": ["sh", "-c", "echo ran"], "cwd": "/", "user": {"uid": 70000, "gid": 0}, "env": ["PATH=/bin"]}
EOF
out=$(H exec --process "$work/unmapped.json" long 2>&1)
st=$?
case "$st:$out" in 0:* | *ran*) fail "husk exec as a uid outside the mapping is refused" "$st: $out" ;;
*) pass "husk exec as a uid outside the mapping is refused ($(echo "$out" | head -1))" ;; esac
# A user without CAP_SYS_RESOURCE may raise its score, not go below the container's 123.
cat >"$work/user.json" <<'EOF'
{"args": ["sh", "-c", "echo 500 >/proc/self/oom_score_adj && cat /proc/self/oom_score_adj; echo 122 >/proc/self/oom_score_adj || echo refused; echo 123 >/proc/self/oom_score_adj && cat /proc/self/oom_score_adj"],
 "cwd": "/", "user": {"uid": 1000, "gid": 1000}, "env": ["PATH=/bin"]}
EOF
expect_output "an unprivileged process: up freely, not below the floor" "500
refused
123" 0 -- H exec --process "$work/user.json" long
# Namespaces: every process of the sandbox is in the same ones, "type:[inode]" as Linux.
a=$(H exec long readlink /proc/1/ns/net 2>&1)
b=$(H exec long readlink /proc/self/ns/net 2>&1)
case "$a" in "net:["*"]") [ "$a" = "$b" ] && pass "pid 1 and an exec share net ($a)" ||
	fail "pid 1 and an exec share net" "$a" "$b" ;;
*) fail "readlink /proc/1/ns/net" "$a" ;; esac
ino=$(H exec long stat -L -c %i /proc/self/ns/net 2>&1)
[ "net:[$ino]" = "$a" ] && pass "stat -L of ns/net gives its inode" ||
	fail "stat -L of ns/net gives its inode" "$ino, $a"
# Checkpoint and restore keep each process's score and the mappings.
H exec long sh -c 'echo 456 >/proc/1/oom_score_adj' >/dev/null 2>&1
if H checkpoint --leave-running --image-path "$work/img" long 2>"$work/err" &&
	H restore -d --image-path "$work/img" --bundle "$bundle" long2 </dev/null >/dev/null 2>"$work/err"; then
	expect_output "a restored sandbox keeps pid 1's oom_score_adj and the mappings" "456
         0     100000      65536" 0 -- H exec long2 cat /proc/1/oom_score_adj /proc/1/uid_map
else
	fail "checkpoint and restore of the long container" "$(cat "$work/err")"
fi
H delete -f long2 >/dev/null 2>&1
H delete -f long >/dev/null 2>&1

# --- the OOM killer follows oom_score_adj (a 64 MiB limit; holders keep their memory) ---
MIB=1048576
MEMTOUCH=${MEMTOUCH:-$(dirname "$HUSK")/tests/payload/memtouch}
# The host cgroup gets more room than the sandbox's limit (root may), so that only the sentry's
# OOM killer acts (as oci-limits.sh).
host_room() {
	for d in $(cgroups_of "$1"); do
		[ -f "$d/memory.limit_in_bytes" ] && echo $((1024 * MIB)) >"$d/memory.limit_in_bytes"
		[ -f "$d/memory.max" ] && echo $((1024 * MIB)) >"$d/memory.max"
	done
	return 0
}
# holder ID NAME MIB ADJ: husk exec -d of memtouch MIB hold with oomScoreAdj ADJ, its output in
# /vol/NAME; returns once it has touched its memory.
holder() {
	printf '{"args": ["sh", "-c", "exec memtouch %s hold >/vol/%s"], "cwd": "/", "oomScoreAdj": %s, "user": {"uid": 0, "gid": 0}, "env": ["PATH=/bin"]}\n' \
		"$3" "$2" "$4" >"$work/$2.json"
	rm -f "$vol/$2"
	H exec -d --process "$work/$2.json" "$1" >/dev/null 2>&1 || return 1
	wait_file "$1" "/vol/$2" >/dev/null
}
# holders ID: the command lines of the container's memtouch processes, one a line.
holders() {
	H exec "$1" sh -c 'for d in /proc/[0-9]*; do
		[ "$(cat $d/comm 2>/dev/null)" = memtouch ] && tr "\0" " " <$d/cmdline && echo
	done' 2>/dev/null
}
if [ -x "$MEMTOUCH" ]; then
	cp "$MEMTOUCH" "$bundle/rootfs/bin/memtouch"
	config sh -c 'while :; do sleep 1; done'
	python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["oomScoreAdj"] = 0
c["linux"].setdefault("resources", {})["memory"] = {"limit": 64 * 1048576}
json.dump(c, open(p, "w"), indent=1)
PY
	H create --bundle "$bundle" oom >/dev/null 2>&1 && host_room oom && H start oom ||
		fail "start a container with a 64 MiB limit"
	# A protected holder of 40 MiB: a toucher of 40 more is the one killed, not the holder
	# (without oom_score_adj the holder, the biggest, would go).
	if holder oom prot 40 -1000; then
		expect_status "oom_score_adj -1000 protects the biggest: the toucher is killed (137)" 137 \
			-- H exec oom memtouch 40
		expect_output "the protected holder lives" "touched 40 MiB" 0 -- cat_in oom /vol/prot
		left=$(holders oom)
		[ "$left" = "memtouch 40 hold " ] && pass "the protected holder's process is still there" ||
			fail "the protected holder's process is still there" "left: $left"
	else
		fail "a holder of 40 MiB with oomScoreAdj -1000 starts"
	fi
	H exec oom sh -c 'for d in /proc/[0-9]*; do
		[ "$(cat $d/comm 2>/dev/null)" = memtouch ] && kill -9 ${d#/proc/}
	done' >/dev/null 2>&1
	# A small holder with 1000 goes before a bigger one with 0.
	if holder oom small 8 1000 && holder oom mid 24 0; then
		H exec oom memtouch 40 >/dev/null 2>&1
		n=$(holders oom | tr '\n' ';')
		case "$n" in *"memtouch 8 hold"*) fail "oom_score_adj 1000 is killed first" "left: $n" ;;
		*"memtouch 24 hold"*) pass "oom_score_adj 1000 is killed first (the 24 MiB holder lives)" ;;
		*) fail "oom_score_adj 1000 is killed first (the 24 MiB holder lives)" "left: $n" ;; esac
	else
		fail "holders of 8 and 24 MiB start"
	fi
	H delete -f oom >/dev/null 2>&1
else
	fail "the memtouch payload is built" "$MEMTOUCH"
fi

# --- mappings Linux would refuse are refused at create ---
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["user"] = {"uid": 70000, "gid": 0}
json.dump(c, open(p, "w"), indent=1)
PY
out=$(cd "$bundle" && H run unmapped 2>&1)
st=$?
case "$st:$out" in 0:*) fail "a process uid outside the mapping is refused, as runc" "$out" ;;
*"cannot set uid to unmapped user in user namespace"*)
	pass "a process uid outside the mapping is refused, as runc" ;;
*) fail "a process uid outside the mapping is refused, as runc (its words)" "$out" ;; esac
H delete -f unmapped >/dev/null 2>&1
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["user"] = {"uid": 0, "gid": 0}
c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 10},
                             {"containerID": 5, "hostID": 300000, "size": 10}]
json.dump(c, open(p, "w"), indent=1)
PY
out=$(cd "$bundle" && H create overlap 2>&1)
st=$?
case "$st:$out" in 0:*) fail "overlapping uidMappings are refused at create" "$out" ;;
*uidMappings*) pass "overlapping uidMappings are refused at create" ;;
*) fail "overlapping uidMappings are refused at create (naming the field)" "$out" ;; esac
[ -z "$(H list -q 2>/dev/null | grep overlap)" ] && pass "nothing is left of the refused container" ||
	fail "nothing is left of the refused container" "$(H list 2>&1)"

finish
