#!/bin/sh
# A sentry crash is never silent (issue 18, sentry/crash/README.md): crashed on purpose with the
# debug-only trigger (HUSK_DEBUG_CRASH, which the test binary husk-sentry-crashtest honours), the
# sentry prints a symbolized backtrace naming the crashing function with file:line, every thread
# with the guest call it was serving, to stderr (husk do) and to `husk events` (the OCI
# lifecycle), and leaves no process behind: each case runs in a pid namespace of its own, whose
# processes are counted after it.
. "$(dirname "$0")/lib.sh"

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
work=$(mktemp -d "/tmp/husk-crash.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The sentry that honours the trigger: the test binary beside husk (meson builds it), else
# husk-sentry itself if it was built with -Ddebug_crash=true.
crashtest=${HUSK_SENTRY_CRASHTEST:-$(dirname "$HUSK")/husk-sentry-crashtest}
if [ -x "$crashtest" ]; then
	HUSK_SENTRY=$crashtest
	export HUSK_SENTRY
fi
probe=$(HUSK_DEBUG_CRASH=uname "$HUSK" do -- /bin/true 2>&1)
case "$probe" in
*"HUSK_DEBUG_CRASH: the first guest uname"*) ;;
*)
	echo "ok - SKIP all: this build has no crash trigger (meson setup -Ddebug_crash=true)"
	finish
	;;
esac
if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
	echo "ok - SKIP all: cannot make a pid namespace to count what is left (unshare -pf)"
	finish
fi

# in_pidns SCRIPT: runs SCRIPT (sh) as pid 1 of a new pid namespace, then waits (up to 60 s) for
# every other process in it to end and prints "left: N" and what is left (none: "left: 0").
in_pidns() {
	unshare --pid --fork --mount-proc sh -c "$1"'
		i=0
		while [ $i -lt 600 ]; do
			others=$(ps -e -o pid=,comm= | grep -v "^ *1 \|ps$\|grep$\|sh$")
			[ -z "$others" ] && break
			i=$((i + 1))
			sleep 0.1
		done
		echo "left: $(printf "%s" "$others" | grep -c .)"
		[ -n "$others" ] && echo "$others"
		true'
}

# check_report NAME FILE CALL: FILE holds a whole report, crashed in guest call CALL.
check_report() {
	r=$2
	if grep -q "husk-sentry: CRASH: SIGSEGV (signal 11) at address 0x0" "$r" &&
		grep -q "husk-sentry: end of crash report" "$r"; then
		pass "$1: a crash report, from the signal to its end"
	else
		fail "$1: a crash report, from the signal to its end" "$(head -c 1500 "$r")"
	fi
	if grep -Eq "#0 +0x[0-9a-f]+ crash_debug_segv\+0x[0-9a-f]+ at sentry/crash/crash\.c:[0-9]+" "$r"; then
		pass "$1: the first frame names the crashing function with file:line"
	else
		fail "$1: the first frame names the crashing function with file:line" "$(head -c 1500 "$r")"
	fi
	if grep -Eq "task_syscall\+0x[0-9a-f]+ at sentry/kernel/task\.c:[0-9]+" "$r" &&
		grep -Eq "task_run\+0x[0-9a-f]+ at sentry/kernel/task\.c:[0-9]+" "$r"; then
		pass "$1: its callers, with file:line"
	else
		fail "$1: its callers, with file:line" "$(head -c 1500 "$r")"
	fi
	if sed -n '/\[crashed\]/,/#0/p' "$r" | grep -q "guest call: $3 (nr [0-9]*) by guest tid [0-9]*, args"; then
		pass "$1: the crashed thread's guest call ($3, its tid and arguments)"
	else
		fail "$1: the crashed thread's guest call ($3)" "$(head -c 1500 "$r")"
	fi
	# Every thread: the header's count, one "thread N" section each, all answered.
	n=$(sed -n 's/.*in thread [0-9]*; \([0-9]*\) threads, \([0-9]*\) answered.*/\1 \2/p' "$r")
	sections=$(grep -c "^thread [0-9]* (" "$r")
	if [ -n "$n" ] && [ "${n% *}" = "$sections" ] && [ "${n#* }" = $((sections - 1)) ] &&
		[ "$sections" -ge 4 ] && grep -q "hostsig_main" "$r"; then
		pass "$1: every sentry thread ($sections), each with its stack"
	else
		fail "$1: every sentry thread" "header: $n, sections: $sections" "$(head -c 1500 "$r")"
	fi
}

# 1. husk do: the report goes to husk's stderr. pid 1 (sh) waits for a subshell that runs uname,
# which crashes the sentry, once /proc/1/syscall shows pid 1 in wait4 (61), so that the report
# has that call in flight; a sleeping child is a third guest process (a third stub).
in_pidns "HUSK_DEBUG_CRASH=uname '$HUSK' do -- sh -c 'sleep 1000 & \
	(while ! grep -q \"^61 \" /proc/1/syscall; do :; done; exec uname); echo not reached' \
	>'$work/do.out' 2>'$work/do.err'; echo \"status \$?\"" >"$work/do.ns"
if grep -qx "status 125" "$work/do.ns" && ! grep -q "not reached" "$work/do.out" &&
	grep -q "husk: the sentry died of signal 11" "$work/do.err"; then
	pass "husk do: exits 125, saying the sentry died of SIGSEGV"
else
	fail "husk do: exits 125, saying the sentry died of SIGSEGV" "$(cat "$work/do.ns")" \
		"$(head -c 600 "$work/do.err")"
fi
check_report "husk do" "$work/do.err" uname
if grep -q "guest call: wait4 (nr 61)" "$work/do.err"; then
	pass "husk do: another thread's guest call in flight (pid 1's wait4)"
else
	fail "husk do: another thread's guest call in flight (wait4)" "$(head -c 1500 "$work/do.err")"
fi
if grep -qx "left: 0" "$work/do.ns"; then
	pass "husk do: no process left (stubs, gofer, sentry)"
else
	fail "husk do: no process left" "$(cat "$work/do.ns")"
fi

# 2. The OCI lifecycle: husk events reports the crash, state says stopped, delete cleans up.
BUSYBOX=$(command -v busybox || echo /bin/busybox)
if [ ! -x "$BUSYBOX" ] || ! file -L "$BUSYBOX" 2>/dev/null | grep -q static; then
	echo "ok - SKIP OCI: no static busybox (apt-get install busybox-static)"
	finish
fi
bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin"
cp "$BUSYBOX" "$bundle/rootfs/bin/busybox"
for a in sh sleep uname; do ln -s busybox "$bundle/rootfs/bin/$a"; done
(cd "$bundle" && "$HUSK" spec) || fail "husk spec"
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = ["sh", "-c", "read x; uname; sleep 1000"]
c["process"]["terminal"] = False
json.dump(c, open(p, "w"), indent=1)
PY
mkfifo "$work/in"
cg1=$(husk_cgroup_in "$work/state" c1)
in_pidns "
	H() { '$HUSK' --root '$work/state' \"\$@\"; }
	exec 3<>'$work/in'
	HUSK_DEBUG_CRASH=uname H create --bundle '$bundle' c1 <&3 >/dev/null 2>'$work/create.err'
	echo \"create \$?\"
	H start c1; echo \"start \$?\"
	echo go >&3
	i=0
	while [ \$i -lt 600 ] && ! H state c1 2>/dev/null | grep -q '\"status\": \"stopped\"'; do
		i=\$((i + 1)); sleep 0.1
	done
	H state c1 | sed -n 's/.*\"status\": \"\\(.*\\)\".*/state \\1/p'
	H events c1 >'$work/events' 2>&1; echo \"events \$?\"
	H delete c1; echo \"delete \$?\"
	ls '$work/state' | sed 's/^/state dir: /'
	ls -d /sys/fs/cgroup$cg1 /sys/fs/cgroup/*$cg1 2>/dev/null | sed 's/^/cgroup: /'
	exec 3>&-
" >"$work/oci.ns" 2>&1
if grep -qx "create 0" "$work/oci.ns" && grep -qx "start 0" "$work/oci.ns" &&
	grep -qx "state stopped" "$work/oci.ns"; then
	pass "OCI: the crashed container's state is stopped"
else
	fail "OCI: the crashed container's state is stopped" "$(cat "$work/oci.ns")" \
		"$(head -c 600 "$work/create.err")"
fi
if grep -qx "events 0" "$work/oci.ns" && python3 - "$work/events" "$work/oci.report" <<'PY'; then
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
crash = [e for e in ev if e.get("type") == "crash" and e.get("id") == "c1"]
assert crash, ev
open(sys.argv[2], "w").write(crash[0]["data"]["report"])
PY
	pass "OCI: husk events prints a crash event with the report"
else
	fail "OCI: husk events prints a crash event" "$(cat "$work/oci.ns")" "$(head -c 800 "$work/events")"
	: >"$work/oci.report"
fi
check_report "OCI" "$work/oci.report" uname
if grep -qx "delete 0" "$work/oci.ns" && ! grep -q "^state dir: \|^cgroup: " "$work/oci.ns" &&
	grep -qx "left: 0" "$work/oci.ns"; then
	pass "OCI: delete cleans up; no process, state dir or cgroup left"
else
	fail "OCI: delete cleans up; nothing left" "$(cat "$work/oci.ns")"
fi
finish
