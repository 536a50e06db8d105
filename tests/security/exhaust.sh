#!/bin/sh
# Exhaustion beside a second sandbox (issue 18). Sandbox A (OCI: pids limit 64, memory limit
# 96 MiB, RLIMIT_NOFILE 1024, a volume at /vol over a 16 MiB tmpfs of the test's own) runs
# tests/security/exhaust.c's probes one after another, each driving one resource to its limit:
# a fork bomb, threads, memory, FDs, inotify instances and watches, disk through the overlay and
# through the volume. Meanwhile sandbox B (no limits) is asked a trivial command (husk exec B
# true) once a second. For each attack: it hit its limit with the sandbox's error (the probe's
# lines), B answered at least once after it began (answers are counted, nothing is timed), A's
# sentry lives on, and the host is unharmed (its own fork and open work). At the end both are
# deleted and nothing of them is left (processes, cgroups, state, files on the volume).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/lib-oci.sh"
: "${EXHAUST_PROBE:?set EXHAUST_PROBE to the static exhaust probe}"

oci_setup exhaust
vol=$work/vol
loop=''
exhaust_cleanup() {
	: >"$work/stop"
	[ -n "$loop" ] && wait "$loop" 2>/dev/null
	for id in $(H list -q 2>/dev/null); do H delete --force "$id" >/dev/null 2>&1; done
	mountpoint -q "$vol" && umount "$vol"
	rm -rf "$work"
}
trap exhaust_cleanup EXIT
oci_bundle sh sleep true cat
cp "$EXHAUST_PROBE" "$bundle/rootfs/exhaust"
mkdir -p "$vol" "$bundle/rootfs/vol" "$bundle/rootfs/tmp"
if ! mount -t tmpfs -o size=16m husk-exhaust "$vol"; then
	fail "a 16 MiB tmpfs for A's volume" "mount failed"
	finish
fi
MIB=1048576
# config LIMITS: the bundle's config.json for A (LIMITS=1: the limits and the volume) or B.
config() {
	python3 - "$bundle/config.json" "$1" "$vol" <<'PY'
import json, sys
p, limits, vol = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
c = json.load(open(p))
c["process"]["args"] = ["sleep", "1000000"]
c["process"]["terminal"] = False
c["root"]["readonly"] = False
c["mounts"] = [m for m in c["mounts"] if m["destination"] != "/vol"]
res = c.setdefault("linux", {}).setdefault("resources", {})
if limits:
    res["pids"] = {"limit": 64}
    res["memory"] = {"limit": 96 * 1048576}
    c["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 1024}]
    c["mounts"].append({"destination": "/vol", "type": "bind", "source": vol,
                        "options": ["rbind", "rw"]})
else:
    res.pop("pids", None)
    res.pop("memory", None)
json.dump(c, open(p, "w"), indent=1)
PY
}
config 1
H run -d --bundle "$bundle" exhaust-a-$$ </dev/null >"$work/a.out" 2>"$work/a.err" ||
	fail "sandbox A starts" "$(cat "$work/a.err")"
config 0
H run -d --bundle "$bundle" exhaust-b-$$ </dev/null >"$work/b.out" 2>"$work/b.err" ||
	fail "sandbox B starts" "$(cat "$work/b.err")"
apid=$(pid_of exhaust-a-$$)
bpid=$(pid_of exhaust-b-$$)
if [ -z "$apid" ] || [ -z "$bpid" ]; then
	fail "both sandboxes run" "A: $(status_of exhaust-a-$$), B: $(status_of exhaust-b-$$)"
	finish
fi

# B's answers: once a second (the pace of the questions, not a synchronisation), counted.
echo 0 >"$work/answers"
(
	n=0
	while [ ! -e "$work/stop" ]; do
		if H exec exhaust-b-$$ true </dev/null >/dev/null 2>&1; then
			n=$((n + 1))
			echo $n >"$work/answers.new" && mv "$work/answers.new" "$work/answers"
		fi
		sleep 1
	done
) &
loop=$!

# answered_after N: polls (up to 600 s: only a hang fails) until B has answered more than N
# times; prints the count.
answered_after() {
	i=0
	while [ $i -lt 6000 ]; do
		v=$(cat "$work/answers")
		[ "$v" -gt "$1" ] && { echo "$v"; return 0; }
		sleep 0.1
		i=$((i + 1))
	done
	echo "$v"
	return 1
}

# attack NAME ARGS...: the probe in A (husk exec), then what only the host sees.
attack() {
	name=$1
	shift
	before=$(cat "$work/answers")
	out=$(H exec exhaust-a-$$ /exhaust "$@" 2>"$work/err" </dev/null)
	st=$?
	echo "$out" | grep -E '^(ok|not ok) - ' >"$work/lines"
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "A: ${line#ok - }" ;;
		*) fail "A: ${line#not ok - }" ;;
		esac
	done <"$work/lines"
	if echo "$out" | grep -qE '^[0-9]+ passed, 0 failed$'; then
		pass "$name: the probe ran to its end"
	else
		fail "$name: the probe ran to its end" "status $st" "$(echo "$out" | tail -n 5)" \
			"stderr: $(tail -n 10 "$work/err")"
	fi
	if now=$(answered_after "$before"); then
		pass "$name: B answered after the attack began ($before, then $now answers)"
	else
		fail "$name: B answered after the attack began" "$before, then $now answers"
	fi
	if [ "$(status_of exhaust-a-$$)" = running ] && [ "$(pid_of exhaust-a-$$)" = "$apid" ]; then
		pass "$name: A's sentry lives on"
	else
		fail "$name: A's sentry lives on" "status $(status_of exhaust-a-$$)" \
			"$(tail -n 5 "$work/a.err")"
	fi
	if sh -c 'exec 3</etc/hostname && true' && [ "$(echo host)" = host ]; then
		pass "$name: the host forks and opens files"
	else
		fail "$name: the host forks and opens files"
	fi
}

attack "fork bomb" fork
attack "threads" threads
attack "memory" memory
attack "file descriptors" fds
attack "inotify" inotify
attack "disk through a volume" disk /vol

# Disk through the overlay, last: the overlay's upper layer is in the sandbox's memory, so its
# limit is the memory limit, and filling it is what filling a tmpfs is in a memory cgroup
# without swap: the sandbox's OOM killer kills processes (the data stays) until the write fits
# or nothing is left, pid 1 last (or the write fails first: ENOSPC/ENOMEM). A may end here.
before=$(cat "$work/answers")
out=$(H exec "exhaust-a-$$" /exhaust disk /tmp 2>"$work/err" </dev/null)
st=$?
if echo "$out" | grep -qE '^ok - disk|^[0-9]+ passed, 0 failed$'; then
	pass "disk through the overlay: $(echo "$out" | grep -E '^ok - ' | sed 's/^ok - //')"
elif [ "$st" = 137 ] && grep -q "memory limit $((96 * MIB)) reached: killed" "$work/a.err"; then
	pass "disk through the overlay: the writer's sandbox hit its memory limit (its OOM killer: $(grep -c 'memory limit' "$work/a.err") kills)"
else
	fail "disk through the overlay: the write fails or the sandbox's OOM killer ends it" \
		"status $st" "$out" "$(tail -n 5 "$work/a.err")"
fi
if now=$(answered_after "$before"); then
	pass "disk through the overlay: B answered after the attack began ($before, then $now answers)"
else
	fail "disk through the overlay: B answered after the attack began" "$before, then $now answers"
fi
if sh -c 'exec 3</etc/hostname && true'; then
	pass "disk through the overlay: the host forks and opens files"
else
	fail "disk through the overlay: the host forks and opens files"
fi

: >"$work/stop"
wait "$loop"
loop=''
used=$(df -k "$vol" | awk 'NR == 2 { print $3 }')
if [ "$(ls -A "$vol")" = "" ] && [ "$used" -lt 1024 ]; then
	pass "the volume's tmpfs is empty again (${used} KiB used)"
else
	fail "the volume's tmpfs is empty again" "$(ls -la "$vol")" "$used KiB used"
fi
H delete --force exhaust-a-$$ >/dev/null 2>&1
H delete --force exhaust-b-$$ >/dev/null 2>&1
# gone PID: polls (up to 60 s: only a hang fails) until PID is gone (re-parented sentries are
# reaped by init, after delete returns).
gone() {
	i=0
	while [ -d "/proc/$1" ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ ! -d "/proc/$1" ]
}
left=''
for p in $apid $bpid; do
	gone "$p" || left="$left $p ($(cat "/proc/$p/comm" 2>/dev/null))"
done
cgs=$(cgroups_of "exhaust-a-$$"; cgroups_of "exhaust-b-$$")
if [ -z "$left" ] && [ -z "$cgs" ] && [ -z "$(ls -A "$root")" ]; then
	pass "nothing of A and B is left (processes, cgroups, state)"
else
	fail "nothing of A and B is left" "sentries:$left" "cgroups: $cgs" "state: $(ls -A "$root")"
fi
finish
