#!/bin/sh
# linux.resources enforced by the sentry: a memory limit whose OOM killer kills the process with
# the most memory (a child rather than pid 1), the cgroup v2 files the guest reads its limits
# from (/sys/fs/cgroup), and `husk update` reaching the running sentry (memory and pids).
# The toucher is tests/payload/memtouch (static), copied into a busybox bundle.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup limits
# Container ids of this run only (the host cgroup, /husk/<id>@<crc of --root>, is this run's
# too): two runs at once (two `make check`s on one machine, issue 18) never share a container.
run=${work##*.}
u1=u1-$run m1=m1-$run m2=m2-$run m3=m3-$run m3c=m3c-$run
MEMTOUCH=${MEMTOUCH:-$(dirname "$HUSK")/tests/payload/memtouch}
if [ ! -x "$MEMTOUCH" ]; then
	fail "the memtouch payload is built" "$MEMTOUCH"
	finish
fi
oci_bundle sh echo sleep cat true grep dd rm
cp "$MEMTOUCH" "$bundle/rootfs/bin/memtouch"
# set_config MEMORY-LIMIT ARGS...: the process's args and linux.resources.memory.limit (0: none).
set_config() {
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["root"]["readonly"] = False
c["process"]["args"] = sys.argv[3:]
res = c.setdefault("linux", {}).setdefault("resources", {})
if int(sys.argv[2]):
    res["memory"] = {"limit": int(sys.argv[2])}
else:
    res.pop("memory", None)
json.dump(c, open(p, "w"), indent=1)
PY
}
MIB=1048576
status_of() { H state "$1" 2>/dev/null | sed -n 's/.*"status": "\(.*\)".*/\1/p'; }
# The host cgroup gets the container's memory limit plus a margin for the sentry's and gofer's
# own memory (runtime/cgroup.c). The checks of the sentry's OOM killer give the host cgroup more
# room still (root may), so that they never depend on the size of that margin.
host_room() {
	for d in $(cgroups_of "$1"); do
		[ -f "$d/memory.limit_in_bytes" ] && echo $((1024 * MIB)) >"$d/memory.limit_in_bytes"
		[ -f "$d/memory.max" ] && echo $((1024 * MIB)) >"$d/memory.max"
	done
	return 0
}
wait_running() {
	i=0
	while [ "$(status_of "$1")" != running ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
# cg ID FILE: a file of the container's /sys/fs/cgroup, read by a shell builtin (no fork).
cg() { H exec "$1" sh -c "read -r v < /sys/fs/cgroup/$2; echo \$v"; }

set_config $((64 * MIB)) memtouch 32
expect_output "64 MiB limit: a process touching 32 MiB lives" "touched 32 MiB" 0 \
	-- H run --bundle "$bundle" "$m1"

# husk run of a process touching 128 MiB: pid 1 waits for /go, made once the host has room.
set_config $((64 * MIB)) sh -c 'until [ -e /go ]; do sleep 0.1; done; exec memtouch 128'
H run --bundle "$bundle" "$m2" </dev/null >"$work/m2.out" 2>"$work/m2.err" &
runpid=$!
wait_running "$m2"
host_room "$m2"
H exec "$m2" sh -c ': > /go'
wait $runpid
st=$?
if [ "$st" = 137 ] && [ ! -s "$work/m2.out" ] &&
	grep -q "memory limit 67108864 reached: killed pid 1 (memtouch)" "$work/m2.err"; then
	pass "64 MiB limit: the sentry kills a process touching 128 MiB (husk run: 137)"
else
	fail "64 MiB limit: the sentry kills a process touching 128 MiB (husk run: 137)" \
		"status $st, stdout: $(cat "$work/m2.out")" "stderr: $(tail -c 600 "$work/m2.err")"
fi

set_config 0 memtouch 128
expect_output "without a limit the same process lives" "touched 128 MiB" 0 \
	-- H run --bundle "$bundle" "$m3"
set_config 0 cat /sys/fs/cgroup/memory.max
expect_output "without a limit memory.max is max" "max" 0 -- H run --bundle "$bundle" "$m3c"

# A running container with a 64 MiB limit: the cgroup files, the OOM killer, husk update.
set_config $((64 * MIB)) sleep 1000
expect_status "create a container with a 64 MiB limit" 0 -- H create --bundle "$bundle" "$u1"
host_room "$u1"
expect_status "start it" 0 -- H start "$u1"
expect_output "/sys/fs/cgroup/memory.max shows 67108864" "67108864" 0 \
	-- H exec "$u1" cat /sys/fs/cgroup/memory.max
expect_output "cgroup.controllers" "memory pids" 0 -- H exec "$u1" cat /sys/fs/cgroup/cgroup.controllers
procs=$(H exec "$u1" cat /sys/fs/cgroup/cgroup.procs | tr '\n' ' ')
case "$procs" in
"1 "[0-9]*" ") pass "cgroup.procs lists pid 1 and the reader ($procs)" ;;
*) fail "cgroup.procs lists pid 1 and the reader" "$procs" ;;
esac
cur=$(cg "$u1" memory.current)
case "$cur" in
'' | *[!0-9]*) fail "memory.current is a number of bytes under the limit" "$cur" ;;
*) if [ "$cur" -gt 0 ] && [ "$cur" -lt $((64 * MIB)) ]; then
	pass "memory.current is a number of bytes under the limit ($cur)"
else
	fail "memory.current is a number of bytes under the limit" "$cur"
fi ;;
esac
expect_output "pids.max is max without a pids limit" "max" 0 -- cg "$u1" pids.max
# husk events --stats reports the sandbox's own memory limit and usage (the sentry's), not the
# host cgroup's (which has a margin and counts the sentry too).
ev=$(H events --stats "$u1" 2>&1)
case "$ev" in
*'"memory":{"usage":{"usage":'[1-9]*',"limit":67108864}}'*) pass "events --stats: the sandbox's memory limit" ;;
*) fail "events --stats: the sandbox's memory limit" "$ev" ;;
esac
# ... and the guest's CPU time (the processes above ran), split into kernel and user as runc does.
case "$ev" in
*'"cpu":{"usage":{"total":'[1-9]*',"kernel":'[1-9]*',"user":'[1-9]*'}}'*) pass "events --stats: the guest's CPU time" ;;
*) fail "events --stats: the guest's CPU time" "$ev" ;;
esac
expect_output "cpu.max" "max 100000" 0 -- cg "$u1" cpu.max
expect_status "the cgroup files are read-only" 1 \
	-- H exec "$u1" sh -c 'echo 1 > /sys/fs/cgroup/memory.max'
expect_output "/proc/self/cgroup is the root of the cgroup namespace" "0::/" 0 \
	-- H exec "$u1" cat /proc/self/cgroup

expect_output "exec: a process touching 32 MiB lives" "touched 32 MiB" 0 -- H exec "$u1" memtouch 32
expect_status "exec: a process touching 128 MiB is killed (137)" 137 -- H exec "$u1" memtouch 128
expect_output "memory.events counts the kill" "oom_kill 1" 0 \
	-- H exec "$u1" grep -E '^oom_kill ' /sys/fs/cgroup/memory.events
expect_output "the victim is the child that touches 128 MiB, not its parent" \
	"child killed by signal 9" 0 -- H exec "$u1" memtouch 128 child
expect_output "pid 1 (sleep) survived the kills" "sleep" 0 -- H exec "$u1" cat /proc/1/comm
expect_output "memory.events counts both kills" "oom_kill 2" 0 \
	-- H exec "$u1" grep -E '^oom_kill ' /sys/fs/cgroup/memory.events
peak=$(cg "$u1" memory.peak)
if [ -n "$peak" ] && [ "$peak" -ge $((60 * MIB)) ] 2>/dev/null && [ "$peak" -le $((64 * MIB)) ]; then
	pass "memory.peak reached the limit and no more ($peak)"
else
	fail "memory.peak reached the limit and no more" "$peak"
fi

expect_status "husk update --memory 32M" 0 -- H update --memory 32M "$u1"
host_room "$u1"
expect_output "memory.max shows the new limit (33554432)" "33554432" 0 -- cg "$u1" memory.max
expect_output "under 32 MiB a process touching 24 MiB lives" "touched 24 MiB" 0 \
	-- H exec "$u1" memtouch 24
expect_status "under 32 MiB a process touching 48 MiB is killed (137)" 137 \
	-- H exec "$u1" memtouch 48

# A lower limit than the usage kills down to it, as a write to memory.max.
expect_status "a process holding 24 MiB" 0 -- H exec -d "$u1" memtouch 24 hold
i=0
while [ "$(cg "$u1" memory.current)" -lt $((24 * MIB)) ] 2>/dev/null && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
# The sentry is updated first and kills down to the limit; the host cgroup comes second and may
# still refuse (EBUSY: v1 cannot reclaim shmem pages the kill is only just freeing). That is the
# host's word, not the sentry's: the checks below look at the sentry.
out=$(H update --memory 16M "$u1" 2>&1)
st=$?
case "$st:$out" in
0:* | *"update: Device or resource busy"*) pass "husk update --memory 16M below the usage" ;;
*) fail "husk update --memory 16M below the usage" "status $st: $out" ;;
esac
host_room "$u1"
cur=$(cg "$u1" memory.current)
if [ -n "$cur" ] && [ "$cur" -le $((16 * MIB)) ] 2>/dev/null &&
	[ "$(H exec "$u1" grep -E '^oom_kill ' /sys/fs/cgroup/memory.events)" = "oom_kill 4" ]; then
	pass "the holder was killed down to the new limit (memory.current $cur)"
else
	fail "the holder was killed down to the new limit" "memory.current $cur" \
		"$(H exec "$u1" cat /sys/fs/cgroup/memory.events)"
fi

expect_status "husk update --pids-limit 5" 0 -- H update --pids-limit 5 "$u1"
expect_output "pids.max shows 5" "5" 0 -- cg "$u1" pids.max
# sleep (pid 1) and the exec'd shell are 2 tasks: 3 more sleeps start, the fourth cannot (and
# the shell gives up). Then pid 1, the 3 sleeps and the reader make 5.
H exec "$u1" sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 30 >/dev/null 2>&1 & done' \
	>/dev/null 2>"$work/storm.err"
out=$(cg "$u1" pids.current)
if [ "$out" = 5 ] && grep -q "can't fork" "$work/storm.err"; then
	pass "a fork storm stops at the pids limit (pids.current 5)"
else
	fail "a fork storm stops at the pids limit" "pids.current: $out" \
		"stderr: $(head -c 300 "$work/storm.err")"
fi
echo '{"memory": {"limit": 50331648}, "pids": {"limit": 100}}' >"$work/res.json"
expect_status "husk update -r FILE (linux.resources JSON, as runc)" 0 \
	-- H update -r "$work/res.json" "$u1"
expect_output "after update -r: memory.max and pids.max" "50331648 100" 0 \
	-- H exec "$u1" sh -c 'read -r m < /sys/fs/cgroup/memory.max; read -r p < /sys/fs/cgroup/pids.max; echo $m $p'
host_room "$u1"
expect_output "a tmpfs write past the limit: the writer is killed" "dd 137" 0 \
	-- H exec "$u1" sh -c 'dd if=/dev/zero of=/dev/shm/x bs=1M count=64 2>/dev/null; echo dd $?'
expect_output "the tmpfs file keeps what was written, under the limit" "yes" 0 \
	-- H exec "$u1" sh -c 'read -r m < /sys/fs/cgroup/memory.current
		[ -s /dev/shm/x ] && [ "$m" -le 50331648 ] && echo yes; rm -f /dev/shm/x'
expect_output "a read(2) into a fresh 64 MiB buffer kills the reader, not its shell" "dd 137" 0 \
	-- H exec "$u1" sh -c 'dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null; echo dd $?'
expect_status "update of a missing container fails" 1 -- H update --memory 32M nosuch
H delete --force "$u1" >/dev/null 2>&1

finish
