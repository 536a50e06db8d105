#!/bin/sh
# systemd (Debian's, the host's /lib/systemd/systemd) as the pid 1 of a husk sandbox (issue 17),
# started as a container manager starts it (container= set, /tmp a tmpfs): it must reach
# multi-user.target and start the test's unit, whose output the test reads through a volume;
# `systemctl stop` of the unit from a second process in the sandbox (husk exec) must stop it
# (its ExecStopPost runs); and SIGRTMIN+3 to the sandbox (`husk kill ID RTMIN+3`, what podman
# and docker send a systemd container) must shut systemd down: halt.target, then
# systemd-shutdown's reboot(2), which ends a container's pid namespace with its pid 1 killed by
# SIGINT, so husk do exits 130 (128 + SIGINT), as Linux reports a container's halt.
# Startup leaves no unit failed (systemctl is-system-running says running): systemd-logind
# starts, with its namespace (ProtectHome=, ProtectSystem=strict, PrivateTmp=) and udev
# monitor; a unit of the test with PrivateTmp=, ProtectSystem=strict and PrivateDevices= gets
# its own /tmp and /dev and a read-only /etc.
# /etc/systemd/system is the test's own folder (a volume), so that the host's enabled units
# (ssh, cron...) are not started.
. "$(dirname "$0")/../integration/lib.sh"

if [ ! -x /lib/systemd/systemd ] || ! command -v systemctl >/dev/null; then
	fail "systemd is installed" "tools/install-deps.sh installs it (apt-get install systemd)"
	finish
fi
work=$(mktemp -d /tmp/husk-systemd.XXXXXX)
id=husk-systemd-test-$$
bgpid=
cleanup() {
	if [ -n "$bgpid" ] && kill -0 "$bgpid" 2>/dev/null; then
		"$HUSK" kill "$id" KILL 2>/dev/null
		kill -KILL "$bgpid" 2>/dev/null
		wait "$bgpid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/units/multi-user.target.wants" "$work/out"
cat >"$work/units/husk-test.service" <<'UNIT'
[Unit]
Description=husk test unit
[Service]
ExecStart=/bin/sh -c 'echo "started by $(cat /proc/1/comm) as pid $$$$" > /out/started; exec sleep infinity'
ExecStopPost=/bin/sh -c 'echo "stopped: $SERVICE_RESULT" > /out/stopped'
UNIT
ln -s ../husk-test.service "$work/units/multi-user.target.wants/husk-test.service"
# A unit in a mount namespace of its own (systemd's namespace set-up, as systemd-logind's):
# its /tmp is private, / is read-only but for /out, /dev is a tmpfs of its own.
cat >"$work/units/husk-private.service" <<'UNIT'
[Unit]
Description=husk unit with a namespace
[Service]
Type=oneshot
RemainAfterExit=yes
PrivateTmp=yes
ProtectSystem=strict
PrivateDevices=yes
ProtectHome=yes
ReadWritePaths=/out
ExecStart=/bin/sh -c 'echo private > /tmp/private-file; ls /tmp > /out/private-tmp; ls /dev > /out/private-dev; if touch /etc/husk-private 2>/dev/null; then echo rw; else echo ro; fi > /out/private-etc'
UNIT
ln -s ../husk-private.service "$work/units/multi-user.target.wants/husk-private.service"

# Polls (0.1 s steps, up to 120 s; no timing is asserted) until file $1 is not empty, while
# husk do still runs.
wait_file() {
	i=0
	while [ $i -lt 1200 ]; do
		[ -s "$1" ] && return 0
		kill -0 "$bgpid" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

timeout -s KILL 300 "$HUSK" do --name "$id" --tmpfs /tmp \
	--volume "$work/units:/etc/systemd/system" --volume "$work/out:/out" -- \
	sh -c 'exec env container=husk /lib/systemd/systemd --system' \
	</dev/null >"$work/log" 2>&1 &
bgpid=$!

# The unit's shell is not pid 1 (systemd is): "$$" in a unit file is a "$".
if wait_file "$work/out/started" && grep -qx 'started by systemd as pid [0-9]*' "$work/out/started" &&
	! grep -qx 'started by systemd as pid 1' "$work/out/started"; then
	pass "systemd starts the unit: $(cat "$work/out/started")"
else
	fail "systemd starts the unit" "$(tail -n 20 "$work/log")"
	finish
fi
# Startup is over once no job is left (the unit is started before multi-user.target is).
i=0
while [ $i -lt 600 ]; do
	jobs=$("$HUSK" exec "$id" systemctl list-jobs --no-legend 2>&1)
	[ -z "$jobs" ] && break
	sleep 0.1
	i=$((i + 1))
done
state=$("$HUSK" exec "$id" systemctl is-active multi-user.target 2>&1)
if [ "$state" = active ]; then
	pass "systemd reaches multi-user.target"
else
	fail "systemd reaches multi-user.target" "is-active: $state" "jobs: $jobs" \
		"$("$HUSK" exec "$id" systemctl --failed --no-legend 2>&1)"
fi
# No unit failed: systemd-logind's namespace set-up (ProtectHome=, ProtectSystem=strict,
# PrivateTmp=) and its udev monitor start in husk as on Linux, so the system is running, not
# degraded.
state=$("$HUSK" exec "$id" systemctl is-system-running 2>&1)
failed_units=$("$HUSK" exec "$id" systemctl --failed --no-legend --plain 2>&1)
if [ "$state" = running ] && [ -z "$failed_units" ]; then
	pass "systemctl is-system-running: running, no failed unit"
else
	fail "systemctl is-system-running: running, no failed unit" "is-system-running: $state" \
		"failed: $failed_units"
fi
# PrivateTmp=: the unit's file is in its own /tmp (systemd-private-*/tmp outside), not in /tmp.
outside=$("$HUSK" exec "$id" sh -c 'ls /tmp; cat /tmp/systemd-private-*-husk-private.service-*/tmp/private-file' 2>&1)
if grep -qx private-file "$work/out/private-tmp" 2>/dev/null &&
	! printf '%s\n' "$outside" | grep -qx private-file &&
	printf '%s\n' "$outside" | grep -qx private; then
	pass "PrivateTmp=: the unit's /tmp file is not in /tmp outside"
else
	fail "PrivateTmp=: the unit's /tmp file is not in /tmp outside" \
		"inside: $(cat "$work/out/private-tmp" 2>&1)" "outside: $outside"
fi
# ProtectSystem=strict: /etc is read-only; PrivateDevices=: a /dev without the outer one's
# initctl (systemd's fifo), with null.
if [ "$(cat "$work/out/private-etc" 2>&1)" = ro ] &&
	grep -qx null "$work/out/private-dev" && ! grep -qx initctl "$work/out/private-dev" &&
	"$HUSK" exec "$id" test -p /dev/initctl; then
	pass "ProtectSystem=strict: /etc read-only; PrivateDevices=: a /dev of its own"
else
	fail "ProtectSystem=strict, PrivateDevices=" "etc: $(cat "$work/out/private-etc" 2>&1)" \
		"dev: $({ tr '\n' ' ' <"$work/out/private-dev"; } 2>&1)"
fi
state=$("$HUSK" exec "$id" systemctl is-active husk-test.service 2>&1)
if [ "$state" = active ]; then
	pass "systemctl is-active: the unit runs"
else
	fail "systemctl is-active: the unit runs" "$state"
fi

out=$("$HUSK" exec "$id" systemctl stop husk-test.service 2>&1)
st=$?
state=$("$HUSK" exec "$id" systemctl is-active husk-test.service 2>&1)
if [ "$st" = 0 ] && [ "$state" = inactive ] && [ "$(cat "$work/out/stopped" 2>/dev/null)" = "stopped: success" ]; then
	pass "systemctl stop (husk exec): the unit stops, its ExecStopPost runs"
else
	fail "systemctl stop (husk exec): the unit stops" "status $st: $out" "is-active: $state" \
		"stopped: $(cat "$work/out/stopped" 2>&1)"
fi

"$HUSK" kill "$id" RTMIN+3
wait "$bgpid"
st=$?
bgpid=
if [ "$st" = 130 ]; then
	pass "SIGRTMIN+3 (husk kill): systemd halts, husk do exits 130 (pid 1 killed by SIGINT)"
else
	fail "SIGRTMIN+3 (husk kill): systemd halts, husk do exits 130" "status $st" \
		"$(tail -n 20 "$work/log")"
fi
finish
