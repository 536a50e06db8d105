#!/bin/sh
# Two edges of the lifecycle engines rely on (issue 16):
#   - `kill --all ID SIGNAL` on a stopped container succeeds and prints nothing (containerd
#     sends KILL --all after every exit), while `kill ID SIGNAL` keeps runc's error; compared
#     with runc on the same bundle when it is installed;
#   - a --root of 150 bytes, so that <root>/<id>/control.sock is past the 108 bytes of a unix
#     socket's sun_path: create, start, exec (waiting and --detach), ps, events --stats, kill,
#     kill --all and delete all work.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci-kill-root
# runc names a container's cgroup /ID (no cgroupsPath in the bundle): ids of this run's own, so
# that two runs at once (two make checks) never share one.
run=${work##*.}

oci_bundle sh sleep tail true echo
have_runc=false
command -v runc >/dev/null 2>&1 && have_runc=true
runc() { command runc --root "$work/runc" "$@"; }
husk() { H "$@"; }

# wait_stopped ENGINE ID: polls (up to 60 s) until the container's status is "stopped".
wait_stopped() {
	i=0
	while [ $i -lt 1200 ]; do
		"$1" state "$2" 2>/dev/null | grep -q '"status": "stopped"' && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

set_args true
engines=husk
trap 'L delete -f kr-long >/dev/null 2>&1; $have_runc && runc delete -f kr-runc-$run >/dev/null 2>&1; oci_cleanup' EXIT
if $have_runc; then
	engines="runc husk"
else
	echo "# runc is not installed: husk alone"
fi
for e in $engines; do
	id=kr-$e-$run
	if ! "$e" create --bundle "$bundle" "$id" </dev/null >"$work/$id.out" 2>&1 ||
		! "$e" start "$id" >/dev/null 2>&1 || ! wait_stopped "$e" "$id"; then
		fail "$e: a container that exits at once" "$(cat "$work/$id.out")"
		continue
	fi
	for sig in KILL TERM; do
		out=$("$e" kill --all "$id" $sig 2>&1)
		st=$?
		if [ $st = 0 ] && [ -z "$out" ]; then
			pass "$e: kill --all $sig on a stopped container: status 0, nothing printed"
		else
			fail "$e: kill --all $sig on a stopped container: status 0, nothing printed" \
				"status $st: $out"
		fi
	done
	out=$("$e" kill "$id" KILL 2>&1)
	st=$?
	case "$st:$out" in
	1:*"container not running"*)
		pass "$e: kill without --all on a stopped container: \"container not running\", status 1"
		;;
	*) fail "$e: kill without --all on a stopped container: \"container not running\", status 1" \
		"status $st: $out" ;;
	esac
	"$e" delete "$id" >/dev/null 2>&1 || fail "$e: delete after kill --all" "$("$e" list 2>&1)"
done

# A root of exactly 150 bytes.
long=$work/long
while [ ${#long} -lt 150 ]; do long=${long}x; done
long=$(printf '%.150s' "$long")
L() { "$HUSK" --root "$long" "$@"; }
set_args tail -f /dev/null
id=kr-long
sock=$long/$id/control.sock
echo "# --root is ${#long} bytes, the control socket's path ${#sock}"
expect_status "a 150-byte --root: create" 0 -- L create --bundle "$bundle" "$id"
expect_status "a 150-byte --root: start" 0 -- L start "$id"
[ -S "$sock" ] && pass "the control socket is at <root>/<id>/control.sock (${#sock} bytes)" ||
	fail "the control socket is at <root>/<id>/control.sock" "$(ls -la "$long/$id" 2>&1)"
expect_output "a 150-byte --root: exec" "hello" 0 -- L exec "$id" echo hello
expect_status "a 150-byte --root: exec --detach" 0 -- \
	L exec --detach --pid-file "$work/long.pid" "$id" sleep 1000
out=$(L ps "$id" 2>&1)
case "$out" in
*sleep*) pass "a 150-byte --root: ps lists the exec'd sleep" ;;
*) fail "a 150-byte --root: ps lists the exec'd sleep" "$out" ;;
esac
out=$(L events --stats "$id" 2>&1)
case "$out" in
*'"type":"stats"'*'"pids":{"current":2'*) pass "a 150-byte --root: events --stats (2 processes)" ;;
*) fail "a 150-byte --root: events --stats (2 processes)" "$out" ;;
esac
expect_status "a 150-byte --root: kill --all TERM (the sleep)" 0 -- L kill --all "$id" TERM
i=0
while [ $i -lt 1200 ] && L ps "$id" 2>/dev/null | grep -q sleep; do
	sleep 0.05
	i=$((i + 1))
done
L ps "$id" 2>/dev/null | grep -q sleep && fail "a 150-byte --root: the sleep got TERM" "$(L ps "$id")" ||
	pass "a 150-byte --root: the sleep got TERM"
expect_status "a 150-byte --root: kill KILL" 0 -- L kill "$id" KILL
i=0
while [ $i -lt 1200 ] && ! L state "$id" 2>/dev/null | grep -q '"status": "stopped"'; do
	sleep 0.05
	i=$((i + 1))
done
expect_status "a 150-byte --root: delete" 0 -- L delete "$id"
[ ! -e "$long/$id" ] && pass "a 150-byte --root: nothing left under the root" ||
	fail "a 150-byte --root: nothing left under the root" "$(ls -la "$long/$id" 2>&1)"

finish
