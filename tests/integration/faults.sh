#!/bin/sh
# Fault injection (issue 18; docs/faults.md says, per fault, what the user sees and who cleans
# up). Each case starts a container of its own (ids of this run; its host cgroup is lib-oci.sh's
# husk_cgroup, /husk/<id>@<the root's cksum>), injects one fault from the host, checks what the
# guest and the engine see, and after `husk delete` checks that nothing of it is left
# (leftovers): no process of the ones recorded from its cgroup (sentry, gofer, stubs), no cgroup
# directory, no state directory, no mount naming its work dir, no host process holding its
# memory file.
#   1. the gofer killed (SIGKILL) while the guest writes through it
#   2. the sentry killed (SIGKILL)
#   3. the host disk full under a volume (a 1 MiB tmpfs in a private mount namespace)
#   4. a runaway guest at its memory limit (oci-limits.sh checks the OOM killer itself; the host
#      cgroup's own OOM is oci-host-oom.sh's)
# Not here yet: a stub killed (docs/faults.md, "Not yet tested").
# Processes are killed only by the pids read from this test's own containers' cgroups. Nothing
# waits by sleeping: every wait polls a condition up to a deadline scaled by
# HUSK_TIMEOUT_MULTIPLIER (tools/check.sh sets it from the load).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup faults
run=$$
n_case=0
# next_id: a container id of this run only, in $id.
next_id() {
	n_case=$((n_case + 1))
	id=f$run-$n_case
}
MEMTOUCH=${MEMTOUCH:-$(dirname "$HUSK")/tests/payload/memtouch}
if [ ! -x "$MEMTOUCH" ]; then
	fail "the memtouch payload is built" "$MEMTOUCH"
	finish
fi
oci_bundle sh echo sleep cat true mv rm ls dd head wc
cp "$MEMTOUCH" "$bundle/rootfs/bin/memtouch"
mkdir -p "$work/vol"

# until_true SECONDS CMD...: polls CMD (0.05 s steps) until it succeeds or SECONDS times
# HUSK_TIMEOUT_MULTIPLIER (default 1) have passed; nothing is timed, the deadline only ends a hang.
until_true() {
	limit=$(($1 * 20 * ${HUSK_TIMEOUT_MULTIPLIER:-1}))
	shift
	i=0
	while [ $i -lt $limit ]; do
		"$@" && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# config ARGS...: the bundle's process runs ARGS; the host dir $work/vol is /v (read-write) and
# /tmp is a tmpfs (needs no gofer).
config() {
	python3 - "$bundle/config.json" "$work/vol" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = sys.argv[3:]
c["process"]["terminal"] = False
c["root"]["readonly"] = False
c["mounts"] = [m for m in c["mounts"] if m["destination"] not in ("/v", "/tmp")]
c["mounts"].append({"destination": "/v", "type": "bind", "source": sys.argv[2],
                    "options": ["rbind", "rw"]})
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []})
c.setdefault("linux", {}).setdefault("resources", {}).pop("memory", None)
json.dump(c, open(p, "w"), indent=1)
PY
}

# cgdirs ID: the container's host cgroup directories (v2, or every v1 hierarchy).
cgdirs() { cgroups_of "$1"; }
# starttime PID: field 22 of /proc/PID/stat (with the pid, names a process across pid reuse).
starttime() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
# cg_pids ID: the pids in the container's cgroups.
cg_pids() { cat $(cgdirs "$1" | sed 's|$|/cgroup.procs|') 2>/dev/null | sort -un; }
# comm PID
comm() { cat "/proc/$1/comm" 2>/dev/null; }

# record ID: notes what container ID has on the host, for leftovers: every process of its cgroup
# with its start time ($work/ID.procs), its cgroup dirs, and the memory file's inode
# (/memfd:husk-memory, held by the sentry).
record() {
	: >"$work/$1.procs"
	for p in $(cg_pids "$1"); do
		st=$(starttime "$p")
		[ -n "$st" ] && echo "$p $st $(comm "$p")" >>"$work/$1.procs"
	done
	cgdirs "$1" >"$work/$1.cgroups"
	s=$(pid_of "$1")
	: >"$work/$1.memfd"
	for f in /proc/"$s"/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		/memfd:husk-memory*) stat -L -c %i "$f" >"$work/$1.memfd" && break ;;
		esac
	done
}
# still_alive ID: the recorded processes of ID still running (same pid and start time).
still_alive() {
	while read -r p st c; do
		[ -n "$p" ] && [ "$(starttime "$p")" = "$st" ] && echo "$p($c)"
	done <"$work/$1.procs"
}
none_alive() { [ -z "$(still_alive "$1")" ]; }
# memfd_holders INODE: host processes with an FD or a mapping of the memory file INODE.
memfd_holders() {
	[ -n "$1" ] || return 0
	for f in /proc/[0-9]*/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		/memfd:husk-memory*)
			[ "$(stat -L -c %i "$f" 2>/dev/null)" = "$1" ] && echo "${f%/fd/*}"
			;;
		esac
	done | sort -u
	grep -l "/memfd:husk-memory.* $1 " /proc/[0-9]*/maps 2>/dev/null | sed 's|/maps$||' | sort -u
}

# leftovers NAME ID: after ID's delete, nothing of it is left (one check per kind).
leftovers() {
	until_true 30 none_alive "$2"
	left=$(still_alive "$2")
	[ -z "$left" ] && pass "$1: no process left ($(wc -l <"$work/$2.procs") recorded)" ||
		fail "$1: no process left" "alive: $left" "recorded: $(cat "$work/$2.procs")"
	cgs=$(cat "$work/$2.cgroups"; cgdirs "$2")
	left=$(for d in $cgs; do [ -e "$d" ] && echo "$d"; done)
	[ -n "$cgs" ] && [ -z "$left" ] && pass "$1: no cgroup dir left" ||
		fail "$1: no cgroup dir left" "recorded: $(cat "$work/$2.cgroups")" "left: $left"
	[ ! -e "$root/$2" ] && pass "$1: no state dir left" ||
		fail "$1: no state dir left" "$(ls -la "$root/$2" 2>&1)"
	left=$(grep -F "$work" /proc/self/mountinfo)
	[ -z "$left" ] && pass "$1: no mount left" || fail "$1: no mount left" "$left"
	ino=$(cat "$work/$2.memfd")
	left=$(memfd_holders "$ino")
	[ -n "$ino" ] && [ -z "$left" ] && pass "$1: no process holds the memory file" ||
		fail "$1: no process holds the memory file" "inode: ${ino:-not recorded}" "held by: $left"
}

# start ID: creates and starts ID with the bundle as configured; its stdio is $work/ID.out.
start() {
	H create --bundle "$bundle" "$1" >"$work/$1.out" 2>&1 </dev/null &&
		H start "$1" && [ "$(status_of "$1")" = running ]
}
is_stopped() { [ "$(status_of "$1")" = stopped ]; }
out_has() { grep -q "$2" "$work/$1.out"; }

# 1. The gofer killed while the guest writes through it. Designed (docs/faults.md): the sandbox
# goes on; every call that needs the gofer (open, create, rename, a walk not cached, exec) then
# fails with EIO; files opened before keep working (their host FDs are the sentry's); the
# engine ends the container (husk kill / delete --force), and delete cleans up.
next_id
rm -f "$work/vol/"*
config sh -c 'sleep 100000 & i=0; while :; do i=$((i + 1)); echo $i >/v/tmp && mv /v/tmp /v/cur || break; done; echo "pid 1 goes on"; wait'
if start "$id"; then
	record "$id"
	# The volume's gofer (the root's is state.json's gofer_pid): one per served directory.
	gofer=$(for p in $(cg_pids "$id"); do
		[ "$(comm "$p")" = husk-gofer ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q " $work/vol " &&
			echo "$p"
	done)
	until_true 60 test -s "$work/vol/cur"
	if [ -n "$gofer" ] && [ "$(comm "$gofer")" = husk-gofer ] && grep -q "^$gofer " "$work/$id.procs"; then
		kill -9 "$gofer"
		until_true 60 out_has "$id" "pid 1 goes on"
		if grep -Eq '^(sh|mv): .*/v/.*: Input/output error' "$work/$id.out"; then
			pass "gofer killed: the guest's next write through it fails with EIO"
		else
			fail "gofer killed: the guest's next write through it fails with EIO" "$(cat "$work/$id.out")"
		fi
		out_has "$id" "pid 1 goes on" && [ "$(status_of "$id")" = running ] &&
			pass "gofer killed: the sandbox goes on (pid 1 runs, state running)" ||
			fail "gofer killed: the sandbox goes on" "$(H state "$id" 2>&1)" "$(cat "$work/$id.out")"
		s=$(pid_of "$id")
		[ -n "$(still_alive "$id" | grep "^$s(")" ] && pass "gofer killed: the sentry lives" ||
			fail "gofer killed: the sentry lives" "$(still_alive "$id")"
		out=$(H exec "$id" cat /v/cur 2>&1)
		st=$?
		[ $st -ne 0 ] && pass "gofer killed: husk exec reading the volume fails ($st), no hang" ||
			fail "gofer killed: husk exec reading the volume fails" "status $st: $out"
	else
		fail "gofer killed: the container's gofer is known" "gofer_pid $gofer ($(comm "$gofer"))"
	fi
	expect_status "gofer killed: delete --force" 0 -- H delete --force "$id"
	leftovers "gofer killed" "$id"
else
	fail "gofer killed: start a container" "$(cat "$work/$id.out")"
fi

# 2. The sentry killed. The engine sees the container stopped; its stubs die with the sentry
# (PTRACE_O_EXITKILL / PR_SET_PDEATHSIG) and the gofer at EOF on its socket, before any delete.
next_id
config sh -c 'sleep 100000 & while :; do sleep 100000; done'
if start "$id"; then
	record "$id"
	s=$(pid_of "$id")
	kill -9 "$s"
	until_true 30 is_stopped "$id"
	expect_output "sentry killed: husk state says stopped" stopped 0 -- status_of "$id"
	until_true 30 none_alive "$id"
	left=$(still_alive "$id")
	[ -z "$left" ] && pass "sentry killed: stubs and gofer end without a delete" ||
		fail "sentry killed: stubs and gofer end without a delete" "alive: $left"
	expect_status "sentry killed: delete" 0 -- H delete "$id"
	leftovers "sentry killed" "$id"
else
	fail "sentry killed: start a container" "$(cat "$work/$id.out")"
fi

# 3. The host disk full under a volume: a 1 MiB tmpfs, mounted in a private mount namespace of
# this case only, is the source of /v. The guest's writes past it fail with ENOSPC, nothing
# crashes, and once space is freed writes work again; the container ends as its process does.
next_id
config sh -c 'dd if=/dev/zero of=/v/fill bs=4096 count=1024 2>&1 | head -n 1; echo x >/v/more || echo "more: $?"; rm /v/fill && echo after >/v/after && cat /v/after'

if unshare -m --propagation private true 2>/dev/null; then
	out=$(unshare -m --propagation private sh -c '
		mount -t tmpfs -o size=1m tmpfs "$1" || exit 99
		"$3" --root "$4" run --bundle "$5" "$2" 2>&1
		echo "status $?"' sh "$work/vol" "$id" "$HUSK" "$root" "$bundle")
	echo "$out" | grep -q "^dd: .*No space left on device" &&
		pass "disk full: the guest's write fails with ENOSPC" ||
		fail "disk full: the guest's write fails with ENOSPC" "$out"
	echo "$out" | grep -q "^more: 1" && pass "disk full: a second writer fails too (no crash)" ||
		fail "disk full: a second writer fails too" "$out"
	echo "$out" | grep -q "^after$" && echo "$out" | grep -q "^status 0$" &&
		pass "disk full: writes work again once space is freed; the container exits 0" ||
		fail "disk full: writes work again once space is freed" "$out"
	[ ! -e "$root/$id" ] && [ -z "$(cgdirs "$id")" ] && [ -z "$(grep -F "$work" /proc/self/mountinfo)" ] &&
		pass "disk full: no state, cgroup or mount left" ||
		fail "disk full: no state, cgroup or mount left" "$(ls "$root")" "$(cgdirs "$id")"
else
	echo "ok - SKIP disk full: no private mount namespace here"
fi

run_done() { H exec "$1" cat /tmp/run 2>/dev/null | grep -q done; }
# 4. A runaway guest at its memory limit (64 MiB): the sentry's OOM killer takes the guest
# process (memtouch's child), never the sentry; the container goes on; delete cleans up.
next_id
config sh -c 'memtouch 1024 child >/tmp/run 2>&1; echo done >>/tmp/run; while :; do sleep 100000; done'
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["resources"]["memory"] = {"limit": 64 << 20}
json.dump(c, open(p, "w"), indent=1)
PY
if start "$id"; then
	record "$id"
	s=$(pid_of "$id")
	until_true 120 run_done "$id"
	out=$(H exec "$id" cat /tmp/run 2>&1)
	case "$out" in
	*"child killed by signal 9"*done*) pass "runaway guest: the OOM kill hits the guest process" ;;
	*) fail "runaway guest: the OOM kill hits the guest process" "$out" ;;
	esac
	[ "$(pid_of "$id")" = "$s" ] && [ -n "$(still_alive "$id" | grep "^$s(")" ] &&
		[ "$(status_of "$id")" = running ] &&
		pass "runaway guest: the sentry lives, the container runs" ||
		fail "runaway guest: the sentry lives" "$(H state "$id" 2>&1)"
	expect_status "runaway guest: delete --force" 0 -- H delete --force "$id"
	leftovers "runaway guest" "$id"
else
	fail "runaway guest: start a container" "$(cat "$work/$id.out")"
fi


# 5. A stub killed from the host (SIGKILL): the guest process behind it dies of SIGKILL, even
# while it waits in a guest call the sentry serves (stubwatch.c watches every stub); its parent
# sees status 137; the sentry and the rest of the container go on; delete cleans up.
# The victim's stub is the one of the container's processes holding memtouch's 40 MiB.
big_stub() {
	for p in $(cg_pids "$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = husk-stub ] || continue
		kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		[ "${kb:-0}" -ge 30000 ] && echo "$p" && return 0
	done
	return 1
}
has_big_stub() { big_stub "$1" >/dev/null; }
next_id
config sh -c 'memtouch 40 hold >/tmp/held 2>&1 & wait $!; echo "status $?" >/tmp/run
	echo done >>/tmp/run; while :; do sleep 100000; done'
if start "$id"; then
	record "$id"
	s=$(pid_of "$id")
	if until_true 60 has_big_stub "$id"; then
		victim=$(big_stub "$id")
		kill -KILL "$victim"
		until_true 60 run_done "$id"
		out=$(H exec "$id" cat /tmp/run 2>&1)
		case "$out" in
		"status 137"*done*) pass "stub killed: the guest process dies of SIGKILL (status 137)" ;;
		*) fail "stub killed: the guest process dies of SIGKILL" "$out" ;;
		esac
	else
		fail "stub killed: a stub holding memtouch's 40 MiB" "$(cg_pids "$id")"
	fi
	if [ "$(pid_of "$id")" = "$s" ] && [ "$(status_of "$id")" = running ]; then
		expect_output "stub killed: the container goes on (exec)" alive 0 -- H exec "$id" echo alive
	else
		fail "stub killed: the sentry lives, the container runs" "$(H state "$id" 2>&1)"
	fi
	expect_status "stub killed: delete --force" 0 -- H delete --force "$id"
	leftovers "stub killed" "$id"
else
	fail "stub killed: start a container" "$(cat "$work/$id.out")"
fi

finish
