#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Pods (issue 16): bundles whose configs look like containerd's CRI ones (the pause container
# with io.kubernetes.cri.container-type=sandbox, two app containers with container-type=container
# and sandbox-id=<pause>, their linux.namespaces naming the pause container's network, IPC, UTS
# and pid namespaces by /proc/PID/ns path: a pod with shareProcessNamespace). With husk both app
# containers run in the pause container's sentry; the same bundles run under runc (installed)
# share the namespaces by path, and each check is made against both:
#   - one member serves on 127.0.0.1:PORT, the other reaches it (the pod's loopback);
#   - each member has its own root (a file written in one is not in the other);
#   - the pid namespace is shared (one sees the other's processes), ps lists one container's;
#   - state, kill, exec, delete act on one member and leave the other running;
#   - deleting the pause container ends the pod (husk: the members read as stopped);
#   - nothing is left behind (processes, state directories, cgroups).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

PY=/usr/bin/python3
PORT=18080
oci_setup pod
NETNS=husk-pod-$$
RUNC=$(command -v runc || true)
RUNC_ROOT=$work/runc-state

pod_cleanup() {
	if [ -n "$RUNC" ]; then
		for id in $("$RUNC" --root "$RUNC_ROOT" list -q 2>/dev/null); do
			"$RUNC" --root "$RUNC_ROOT" delete --force "$id" >/dev/null 2>&1
		done
	fi
	ip netns del "$NETNS" 2>/dev/null
	oci_cleanup
}
trap pod_cleanup EXIT INT TERM

# The pod's network namespace for runc (runc leaves lo down in one it makes; CNI brings it up).
if ip netns add "$NETNS" 2>/dev/null; then
	ip netns exec "$NETNS" ip link set lo up
else
	NETNS=""
fi

# make_bundle NAME: $work/NAME with a busybox rootfs of its own and husk spec's config.
make_bundle() {
	mkdir -p "$work/$1/rootfs/bin"
	cp "$BUSYBOX" "$work/$1/rootfs/bin/busybox"
	for a in sh sleep nc cat echo test ps; do ln -s busybox "$work/$1/rootfs/bin/$a"; done
	(cd "$work/$1" && "$HUSK" spec) || fail "husk spec"
}

# pod_config NAME TYPE SANDBOX-ID PAUSE-PID ARGS-JSON [private]: a CRI-like config. TYPE sandbox:
# new pid, ipc, uts, mount namespaces and the pod's network namespace; container: the pause
# container's (its PAUSE-PID) network, ipc, uts and pid namespaces by path (with "private": a
# pid namespace of its own, Kubernetes without shareProcessNamespace).
pod_config() {
	$PY - "$work/$1/config.json" "$2" "$3" "$4" "$5" "$NETNS" "${6:-}" <<'EOF'
import json, os, sys
p, typ, sb, pid, args, netns, private = sys.argv[1:8]
c = json.load(open(p))
c["process"]["args"] = json.loads(args)
c["process"]["terminal"] = False
c["root"]["readonly"] = False
c.pop("hostname", None)
c["annotations"] = {"io.kubernetes.cri.container-type": typ,
                    "io.kubernetes.cri.sandbox-id": sb,
                    "io.kubernetes.cri.sandbox-name": "pod"}
if typ == "sandbox":
    ns = [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]
    ns.append({"type": "network", "path": "/var/run/netns/" + netns} if netns else
              {"type": "network"})
else:
    ns = [{"type": t, "path": "/proc/%s/ns/%s" % (pid, f)} for t, f in
          (("network", "net"), ("ipc", "ipc"), ("uts", "uts"), ("pid", "pid"))]
    ns.append({"type": "mount"})
    if private:
        ns = [n for n in ns if n["type"] != "pid"] + [{"type": "pid"}]
c["linux"]["namespaces"] = ns
c["linux"].pop("cgroupsPath", None)
# runc names a cgroup /ID without a cgroupsPath: one of this run's own (two runs at once).
if os.environ.get("RUNC_CGROUP_PREFIX"):
    c["linux"]["cgroupsPath"] = "%s-%s" % (os.environ["RUNC_CGROUP_PREFIX"],
                                           os.path.basename(os.path.dirname(p)))
json.dump(c, open(p, "w"), indent=1)
EOF
}

# R ARGS...: the runtime under test ($RT: husk or runc), with its own state root.
R() {
	if [ "$RT" = husk ]; then H "$@"; else "$RUNC" --root "$RUNC_ROOT" "$@"; fi
}
rstatus() { R state "$1" 2>/dev/null | sed -n 's/.*"status": "\(.*\)".*/\1/p'; }
rpid() { R state "$1" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'; }

# until_ok CMD...: polls (50 ms steps, up to 60 s) until CMD succeeds.
until_ok() {
	i=0
	while [ $i -lt 1200 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
fetch() { R exec "$1" nc 127.0.0.1 "$PORT" </dev/null 2>/dev/null; }
fetch_hello() { [ "$(fetch "$1")" = hello ]; }
gone() { [ "$(rstatus "$1")" = stopped ] || ! R state "$1" >/dev/null 2>&1; }

run_pod() {
	rm -rf "$work/pause" "$work/a" "$work/b"
	for n in pause a b; do make_bundle $n; done
	pod_config pause sandbox pause 0 '["sleep", "1000"]'
	(cd "$work/pause" && R create pause) || {
		fail "$RT: the pause container starts"
		return
	}
	R start pause
	PP=$(rpid pause)
	pod_config a container pause "$PP" \
		"[\"sh\", \"-c\", \"while true; do echo hello | nc -l -p $PORT; done\"]"
	pod_config b container pause "$PP" '["sleep", "1000"]'
	for n in a b; do
		(cd "$work/$n" && R create $n) || fail "$RT: member $n is created"
		R start $n || fail "$RT: member $n starts"
	done
	if [ "$(rstatus a)" = running ] && [ "$(rstatus b)" = running ] &&
		[ "$(rstatus pause)" = running ]; then
		pass "$RT: the pause container and both members run"
	else
		fail "$RT: the pause container and both members run" \
			"pause $(rstatus pause), a $(rstatus a), b $(rstatus b)"
	fi
	if [ "$RT" = husk ]; then
		# One sentry: the members' pids are their container proxies (husk), not sentries.
		ca=$(cat /proc/"$(rpid a)"/comm 2>/dev/null)
		cb=$(cat /proc/"$(rpid b)"/comm 2>/dev/null)
		cp=$(cat /proc/"$PP"/comm 2>/dev/null)
		if [ "$ca $cb $cp" = "husk husk husk-sentry" ]; then
			pass "$RT: one sentry for the pod, a proxy per member"
		else
			fail "$RT: one sentry for the pod, a proxy per member" "$ca $cb $cp"
		fi
	fi
	if until_ok fetch_hello b; then
		pass "$RT: a member reaches the other on 127.0.0.1:$PORT"
	else
		fail "$RT: a member reaches the other on 127.0.0.1:$PORT" "got: $(fetch b)"
	fi
	R exec a sh -c 'echo mine > /only-a'
	expect_output "$RT: a member sees its own file" "mine" 0 -- R exec a cat /only-a
	expect_status "$RT: the other member's root does not have it" 1 -- R exec b test -e /only-a
	expect_status "$RT: nor the pause container's" 1 -- R exec pause test -e /only-a
	out=$(R exec b ps -o args 2>&1)
	case $out in
	*"nc -l -p $PORT"*) pass "$RT: the pid namespace is shared (b sees a's nc)" ;;
	*) fail "$RT: the pid namespace is shared (b sees a's nc)" "$out" ;;
	esac
	out=$(R ps a 2>&1)
	case $out in
	*sleep*) fail "$RT: ps of one member lists its processes only" "$out" ;;
	*nc*) pass "$RT: ps of one member lists its processes only" ;;
	*) fail "$RT: ps of one member lists its processes only" "$out" ;;
	esac
	if [ "$RT" = husk ]; then
		# update: a member's own limits, as its /sys/fs/cgroup shows them.
		R update --memory 50331648 --pids-limit 7 b
		expect_output "$RT: update reaches one member's memory and pids limits" \
			"50331648 7" 0 -- R exec b sh -c \
			'echo $(cat /sys/fs/cgroup/memory.max) $(cat /sys/fs/cgroup/pids.max)'
		expect_output "$RT: ... not the other's" "max max" 0 -- R exec a sh -c \
			'echo $(cat /sys/fs/cgroup/memory.max) $(cat /sys/fs/cgroup/pids.max)'
	fi
	R kill b TERM
	if until_ok gone b; then
		pass "$RT: kill TERM stops one member"
	else
		fail "$RT: kill TERM stops one member" "b: $(rstatus b)"
	fi
	if fetch_hello a && [ "$(rstatus a)" = running ]; then
		pass "$RT: the other member runs and serves after the kill"
	else
		fail "$RT: the other member runs and serves after the kill" "a: $(rstatus a)"
	fi
	expect_status "$RT: delete of the stopped member" 0 -- R delete b
	expect_status "$RT: the deleted member is gone" 1 -- R state b
	expect_output "$RT: exec in the other member after the delete" "mine" 0 -- \
		R exec a cat /only-a
	# A member with a pid namespace of its own (no shareProcessNamespace).
	rm -rf "$work/d"
	make_bundle d
	pod_config d container pause "$PP" '["sh", "-c", "(sleep 101 &); exec sleep 1002"]' private
	(cd "$work/d" && R create d) && R start d
	# Its orphan (sleep 101, whose parent subshell ended) is adopted by its init (sleep 1002).
	adopted() {
		R exec d ps -o pid,ppid,args 2>/dev/null | awk '
			/sleep 1002/ { init = $1 } /sleep 101$/ { parent = $2 }
			END { exit !(init != "" && parent == init) }'
	}
	if until_ok adopted; then
		pass "$RT: a member with its own pid namespace adopts its orphans"
	else
		fail "$RT: a member with its own pid namespace adopts its orphans" \
			"$(R exec d ps -o pid,ppid,args 2>&1)"
	fi
	out=$(R exec d ps -o args 2>&1)
	case $out in
	*"sleep 1002"*"nc -l"* | *"nc -l"*"sleep 1002"*)
		fail "$RT: a member with its own pid namespace sees only its processes" "$out" ;;
	*"sleep 1002"*) pass "$RT: a member with its own pid namespace sees only its processes" ;;
	*) fail "$RT: a member with its own pid namespace sees only its processes" "$out" ;;
	esac
	out=$(R exec a ps -o args 2>&1)
	case $out in
	*"sleep 1002"*) fail "$RT: the pod's shared pid namespace does not show it" "$out" ;;
	*"nc -l"*) pass "$RT: the pod's shared pid namespace does not show it" ;;
	*) fail "$RT: the pod's shared pid namespace does not show it" "$out" ;;
	esac
	# Its /proc/self/ns links: a pid and mount namespace of its own, the pod's network one.
	nsd=$(R exec d sh -c 'for n in pid mnt net; do readlink /proc/self/ns/$n; done' 2>&1)
	nsa=$(R exec a sh -c 'for n in pid mnt net; do readlink /proc/self/ns/$n; done' 2>&1)
	pd=$(echo "$nsd" | sed -n 1p) md=$(echo "$nsd" | sed -n 2p) netd=$(echo "$nsd" | sed -n 3p)
	pa=$(echo "$nsa" | sed -n 1p) ma=$(echo "$nsa" | sed -n 2p) neta=$(echo "$nsa" | sed -n 3p)
	if [ -n "$pd" ] && [ "$pd" != "$pa" ] && [ "$md" != "$ma" ] && [ "$netd" = "$neta" ]; then
		pass "$RT: /proc/self/ns: its own pid and mnt namespaces, the pod's net"
	else
		fail "$RT: /proc/self/ns: its own pid and mnt namespaces, the pod's net" "d: $nsd" "a: $nsa"
	fi
	R delete --force d >/dev/null 2>&1
	# podman's pods: no pod annotation, only the infra container's namespaces by path.
	rm -rf "$work/f"
	make_bundle f
	pod_config f container pause "$PP" '["sleep", "1003"]'
	$PY - "$work/f/config.json" <<'EOF2'
import json, sys
c = json.load(open(sys.argv[1]))
c["annotations"] = {"io.podman.annotations.autoremove": "FALSE"}
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF2
	(cd "$work/f" && R create f) && R start f
	if fetch_hello f; then
		pass "$RT: a container naming the pause container's namespaces reaches the pod"
	else
		fail "$RT: a container naming the pause container's namespaces reaches the pod" \
			"got: $(fetch f)"
	fi
	if [ "$RT" = husk ]; then
		expect_output "$RT: ... as a member of the pod's sandbox (its pid is a proxy)" husk 0 -- \
			cat "/proc/$(rpid f)/comm"
	fi
	R delete --force f >/dev/null 2>&1
	# A member's own pids limit: its fifth task cannot be made.
	rm -rf "$work/e"
	make_bundle e
	pod_config e container pause "$PP" \
		'["sh", "-c", "for i in 1 2 3 4 5 6; do sleep 100 & done; echo all-started"]'
	$PY - "$work/e/config.json" <<'EOF2'
import json, sys
c = json.load(open(sys.argv[1]))
c["linux"]["resources"] = {"pids": {"limit": 4}}
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF2
	(cd "$work/e" && R create e >"$work/e.out" 2>&1) && R start e
	until_ok gone e
	case $(cat "$work/e.out") in
	*all-started*) fail "$RT: a member's pids limit stops its fork" "$(cat "$work/e.out")" ;;
	*"can't fork"*) pass "$RT: a member's pids limit stops its fork" ;;
	*) fail "$RT: a member's pids limit stops its fork" "$(cat "$work/e.out")" ;;
	esac
	R delete --force e >/dev/null 2>&1
	# A member over its own memory limit loses its process; the pod goes on.
	rm -rf "$work/c"
	make_bundle c
	ln -s busybox "$work/c/rootfs/bin/dd"
	pod_config c container pause "$PP" \
		'["sh", "-c", "cat /sys/fs/cgroup/memory.max; dd if=/dev/zero of=/dev/null bs=64M count=1; echo dd=$?"]'
	$PY - "$work/c/config.json" <<'EOF2'
import json, sys
c = json.load(open(sys.argv[1]))
c["linux"]["resources"] = {"memory": {"limit": 32 << 20, "swap": 32 << 20}}
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF2
	(cd "$work/c" && R create c >"$work/c.out" 2>&1) && R start c
	until_ok gone c
	case $(cat "$work/c.out") in
	*dd=137*) pass "$RT: a member's process over the member's memory limit is killed" ;;
	*) fail "$RT: a member's process over the member's memory limit is killed" \
		"$(cat "$work/c.out")" ;;
	esac
	if [ "$RT" = husk ]; then
		case $(cat "$work/c.out") in
		33554432*) pass "$RT: the member reads its limit in /sys/fs/cgroup/memory.max" ;;
		*) fail "$RT: the member reads its limit in /sys/fs/cgroup/memory.max" \
			"$(cat "$work/c.out")" ;;
		esac
	fi
	R delete --force c >/dev/null 2>&1
	if fetch_hello a && [ "$(rstatus pause)" = running ]; then
		pass "$RT: the pod runs on after a member's OOM kill"
	else
		fail "$RT: the pod runs on after a member's OOM kill" "pause: $(rstatus pause)"
	fi
	R kill --all a KILL
	if until_ok gone a; then
		pass "$RT: kill --all KILL stops a member"
	else
		fail "$RT: kill --all KILL stops a member" "a: $(rstatus a)"
	fi
	expect_output "$RT: the pause container runs on" "running" 0 -- rstatus pause
	R delete a
	# A third member, then the pod ends with its pause container.
	rm -rf "$work/b"
	make_bundle b
	pod_config b container pause "$PP" '["sleep", "1000"]'
	(cd "$work/b" && R create b) && R start b
	R delete --force pause
	if [ "$RT" = husk ]; then
		if until_ok sh -c "! grep -q husk-sentry /proc/$PP/comm"; then
			pass "$RT: the pod's sentry is gone with the pause container"
		else
			fail "$RT: the pod's sentry is gone with the pause container"
		fi
		if until_ok gone b; then
			pass "$RT: deleting the pause container ends the pod's members"
		else
			fail "$RT: deleting the pause container ends the pod's members" "b: $(rstatus b)"
		fi
	fi
	R delete --force b >/dev/null 2>&1
}

RT=husk
run_pod
# Nothing of the pod left: processes, state, cgroups.
left=$(pgrep -a -f "husk-(sentry|gofer).*$work" 2>/dev/null)
if [ -z "$left" ] || until_ok sh -c "! pgrep -f 'husk-(sentry|gofer).*$work'"; then
	pass "husk: no sentry or gofer of the pod is left"
else
	fail "husk: no sentry or gofer of the pod is left" "$(pgrep -a -f "husk-(sentry|gofer).*$work")"
fi
expect_output "husk: no state is left" "" 0 -- sh -c "ls '$root' 2>/dev/null"
left=""
for id in pause a b c d e f; do
	cg=$(husk_cgroup "$id")
	for d in /sys/fs/cgroup$cg /sys/fs/cgroup/memory$cg /sys/fs/cgroup/unified$cg; do
		[ -e "$d" ] && left="$left $d"
	done
done
expect_output "husk: no cgroup is left" "" 0 -- echo "$left"

if [ -n "$RUNC" ] && [ "$(id -u)" = 0 ]; then
	RT=runc
	RUNC_CGROUP_PREFIX=/husk-pod-runc-${work##*.}
	export RUNC_CGROUP_PREFIX
	run_pod
else
	echo "ok - SKIP runc: not installed, or not root"
fi
finish
