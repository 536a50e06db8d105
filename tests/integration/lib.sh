# Shared helpers for integration tests (sourced). $HUSK is the husk binary under test.
# Each check prints "ok - NAME" or "not ok - NAME" plus what it saw; finish prints the summary.

: "${HUSK:?set HUSK to the husk binary}"
passed=0
failed=0

pass() {
	passed=$((passed + 1))
	echo "ok - $1"
}

fail() {
	failed=$((failed + 1))
	echo "not ok - $1"
	shift
	for line in "$@"; do
		echo "    $line"
	done
}

# expect_output NAME EXPECTED-STDOUT EXPECTED-STATUS -- COMMAND...
expect_output() {
	name=$1 want_out=$2 want_st=$3
	shift 4
	out=$("$@" 2>/tmp/husk-it-err.$$)
	st=$?
	if [ "$out" = "$want_out" ] && [ "$st" = "$want_st" ]; then
		pass "$name"
	else
		fail "$name" "expected status $want_st, stdout: $want_out" \
			"got status $st, stdout: $out" "stderr: $(head -c 600 /tmp/husk-it-err.$$)"
	fi
	rm -f /tmp/husk-it-err.$$
}

# expect_status NAME EXPECTED-STATUS -- COMMAND...
expect_status() {
	name=$1 want_st=$2
	shift 3
	"$@" >/tmp/husk-it-out.$$ 2>&1
	st=$?
	if [ "$st" = "$want_st" ]; then
		pass "$name"
	else
		fail "$name" "expected status $want_st, got $st" "output: $(head -c 600 /tmp/husk-it-out.$$)"
	fi
	rm -f /tmp/husk-it-out.$$
}

# husk_cgroup_in ROOT ID: the cgroup path (below each hierarchy's root) husk gives container ID
# under the state directory ROOT when config.json names none: /husk/ID@CRC, CRC the cksum of
# ROOT's canonical path in hex (runtime/cgroup_name.c; the default root's /husk/ID is no test's).
husk_cgroup_in() {
	printf '/husk/%s@%08x\n' "$2" "$(printf %s "$(realpath -m "$1")" | cksum | cut -d' ' -f1)"
}

# engine_runtime DIR: the husk an engine (containerd, podman) is given. With HUSK_PLATFORM set
# (meson's platform matrix), a wrapper DIR/husk that sets it, since an engine need not pass its
# environment on to the runtime; else $HUSK.
engine_runtime() {
	if [ -z "${HUSK_PLATFORM:-}" ]; then
		echo "$HUSK"
		return
	fi
	printf '#!/bin/sh\nHUSK_PLATFORM=%s exec "%s" "$@"\n' "$HUSK_PLATFORM" "$HUSK" >"$1/husk"
	chmod 755 "$1/husk"
	echo "$1/husk"
}

# expect_sentry_platform WHAT PID: with HUSK_PLATFORM set, the sentry PID (a container's
# process) was started with --platform=$HUSK_PLATFORM: the engine's husk got the platform.
expect_sentry_platform() {
	[ -n "${HUSK_PLATFORM:-}" ] || return 0
	args=$(tr '\0' ' ' <"/proc/$2/cmdline" 2>&1)
	case "$args" in
	*husk-sentry*" --platform=$HUSK_PLATFORM "*) pass "$1: the sentry runs on $HUSK_PLATFORM" ;;
	*) fail "$1: the sentry runs on $HUSK_PLATFORM" "pid $2: $args" ;;
	esac
}

# netns_pair CLI SRV DEV CLI_ADDR SRV_ADDR: two network namespaces with loopback up, joined by a
# veth pair (DEVc in CLI, DEVs in SRV) with the CIDR addresses CLI_ADDR and SRV_ADDR.
# Returns 1 (nothing made) where namespaces cannot be created. The caller deletes them.
netns_pair() {
	ip netns add "$1" 2>/dev/null || return 1
	if ! ip netns add "$2" 2>/dev/null; then
		ip netns del "$1"
		return 1
	fi
	ip -n "$1" link set lo up
	ip -n "$2" link set lo up
	ip link add "${3}c" netns "$1" type veth peer name "${3}s" netns "$2"
	ip -n "$1" addr add "$4" dev "${3}c"
	ip -n "$2" addr add "$5" dev "${3}s"
	ip -n "$1" link set "${3}c" up
	ip -n "$2" link set "${3}s" up
}

# containerd_wait SOCK PID LOG: polls until the containerd of PID answers on SOCK (20 s at most);
# skips the whole test, with the end of its LOG, when it cannot start here.
containerd_wait() {
	n=0
	until ctr --address "$1" version >/dev/null 2>&1; do
		n=$((n + 1))
		if [ $n -gt 200 ] || ! kill -0 "$2" 2>/dev/null; then
			echo "ok - SKIP all: containerd cannot start here: $(tail -n 3 "$3")"
			finish
		fi
		sleep 0.1
	done
}

finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}

# The platform matrix: meson runs each script once per platform with HUSK_PLATFORM set. husk must
# run on that platform (the sentry says so at info level); else the script stops here, and a
# platform this build lacks fails once, with the sentry's reason, rather than check by check.
# A script that runs itself again (oci-cgroups.sh) checks once.
if [ -n "${HUSK_PLATFORM:-}" ] && [ "$HUSK_PLATFORM" != auto ] &&
	[ "${HUSK_PLATFORM_CHECKED:-}" != "$HUSK_PLATFORM" ]; then
	platform_log=$(HUSK_LOG=info "$HUSK" do -- /bin/true 2>&1)
	if printf '%s\n' "$platform_log" | grep -qx "husk-sentry: info: platform: $HUSK_PLATFORM"; then
		pass "husk runs on the platform $HUSK_PLATFORM (HUSK_PLATFORM)"
		HUSK_PLATFORM_CHECKED=$HUSK_PLATFORM
		export HUSK_PLATFORM_CHECKED
	else
		fail "husk runs on the platform $HUSK_PLATFORM (HUSK_PLATFORM)" "$platform_log"
		finish
	fi
fi
