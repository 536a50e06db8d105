#!/bin/sh
# config.json linux.sysctl: the values are the sandbox's own (/proc/sys inside shows them), keys
# with '/' work too, and a key that is not namespaced, unknown to husk or given a value the
# sentry refuses fails `husk create` with a message naming it, leaving no state, cgroup or
# process behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci-sysctl

mkdir -p "$bundle/rootfs/proc"
oci_bundle sh echo cat
sed -i -e 's/"terminal": true/"terminal": false/' "$bundle/config.json"

# set_config JSON-SYSCTL-MAP ARGS...: linux.sysctl and process.args of the bundle's config.
set_config() {
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["sysctl"] = json.loads(sys.argv[2])
c["process"]["args"] = sys.argv[3:]
json.dump(c, open(p, "w"), indent=1)
PY
}
# Host processes started for this test's bundle (the gofer serves $work/...; the sentry's
# arguments name it too).
procs_of_work() {
	for f in /proc/[0-9]*/cmdline; do
		tr '\0' ' ' 2>/dev/null <"$f" | grep -q "$work" && echo "${f%/cmdline}"
	done
}

set_config '{"net.core.somaxconn": "1000", "kernel.shmmax": "123456"}' \
	cat /proc/sys/net/core/somaxconn
expect_output "net.core.somaxconn is the sandbox's value" "1000" 0 -- H run --bundle "$bundle" s1
set_config '{"net.core.somaxconn": "1000", "kernel.shmmax": "123456"}' \
	cat /proc/sys/kernel/shmmax /proc/sys/net/ipv4/ip_local_port_range
expect_output "kernel.shmmax is set, the rest keep Linux's defaults" "$(printf '123456\n32768\t60999')" \
	0 -- H run --bundle "$bundle" s2
set_config '{"net/ipv4/ip_local_port_range": "  1024    2000"}' \
	cat /proc/sys/net/ipv4/ip_local_port_range
expect_output "a key with '/' separators, the value read back normalised" \
	"$(printf '1024\t2000')" 0 -- H run --bundle "$bundle" s3

# refused_create NAME ID SYSCTL-MAP MESSAGE: create fails with MESSAGE and leaves nothing.
refused_create() {
	set_config "$3" true
	out=$(H create --bundle "$bundle" "$2" 2>&1)
	st=$?
	case "$out" in
	*"$4"*) [ $st -ne 0 ] && pass "$1: create fails naming it" ||
		fail "$1: create fails naming it" "status $st" "$out" ;;
	*) fail "$1: create fails naming it" "status $st" "$out" ;;
	esac
	if [ ! -e "$root/$2" ] && [ -z "$(cgroups_of "$2")" ] && [ -z "$(procs_of_work)" ]; then
		pass "$1: no state, cgroup or process left"
	else
		fail "$1: no state, cgroup or process left" "$(ls "$root" 2>&1)" "$(cgroups_of "$2")" \
			"$(procs_of_work)"
	fi
}

refused_create "vm.swappiness" f1 '{"vm.swappiness": "10"}' \
	'sysctl "vm.swappiness" is not in a separate kernel namespace'
refused_create "kernel.panic" f2 '{"net.core.somaxconn": "10", "kernel.panic": "1"}' \
	'sysctl "kernel.panic" is not in a separate kernel namespace'
refused_create "a value the sentry refuses" f3 '{"net.core.somaxconn": "many"}' \
	'sysctl "net.core.somaxconn": invalid value "many"'
refused_create "a namespaced key husk does not know" f4 '{"net.ipv4.tcp_rmem": "1 2 3"}' \
	'sysctl "net.ipv4.tcp_rmem" is not supported by husk'

finish
