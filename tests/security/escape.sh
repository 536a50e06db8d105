#!/bin/sh
# The escape suite (issue 18): tests/security/escape.c's probes run inside husk as the sandbox's
# pid 1, over a root filesystem of their own (busybox and the probe), with a host volume at /vol
# in which the host planted symlinks to a secret that lies outside both. Each probe must fail to
# get out; this script adds what only the host can see: the host process the guest tried to
# kill lives on, and the secret's directory is unchanged. The --network=host probes run in a host
# network namespace of the test's own (nothing can leave the machine even if a probe got out).
. "$(dirname "$0")/../integration/lib.sh"
: "${ESCAPE_PROBE:?set ESCAPE_PROBE to the static escape probe}"

work=$(mktemp -d /tmp/husk-escape.XXXXXX)
hostpid=''
cleanup() {
	[ -n "$hostpid" ] && kill "$hostpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
token="husk-escape-token-$$-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
mkdir -p "$work/hostsecret" "$work/rootfs/bin" "$work/rootfs/tmp" "$work/rootfs/etc" "$work/vol"
printf '%s\n' "$token" >"$work/hostsecret/secret"
cp /bin/busybox "$work/rootfs/bin/busybox"
ln -s busybox "$work/rootfs/bin/sh"
# The DNS probe's nameserver (dns-metadata.py, on the loopback of the test's network namespace).
dns_addr=192.0.2.53
echo "nameserver $dns_addr" >"$work/rootfs/etc/resolv.conf"
cp "$ESCAPE_PROBE" "$work/rootfs/escape"
echo plain >"$work/vol/plain"
ln -s "$work/hostsecret/secret" "$work/vol/abs"
ln -s ../hostsecret/secret "$work/vol/rel"
ln -s "$work/hostsecret" "$work/vol/dirlink"
# The directory itself, its entries and the secret, not `..` ($work, which this script writes
# to: its mtime moved at a minute's turn and failed the check once).
secret_view() {
	stat -c '%n %A %U %G %s %Y' "$work/hostsecret"
	ls -lA --time-style=full-iso "$work/hostsecret"
	cat "$work/hostsecret/secret"
}
before=$(secret_view)
sleep 600 &
hostpid=$!

# probe_run NAME -- COMMAND...: the probe's lines count as this script's checks.
probe_run() {
	name=$1
	shift 2
	out=$("$@" 2>"$work/err")
	st=$?
	echo "$out" | tr -d '\r' | grep -E '^(ok|not ok) - ' >"$work/lines"
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "$name: ${line#ok - }" ;;
		*) fail "$name: ${line#not ok - }" ;;
		esac
	done <"$work/lines"
	if echo "$out" | tr -d '\r' | grep -qE '^[0-9]+ passed, 0 failed$'; then
		pass "$name: the probe ran to its end (status $st)"
	else
		fail "$name: the probe ran to its end" "status $st" "$(echo "$out" | tail -n 5)" \
			"stderr: $(tail -n 10 "$work/err")"
	fi
}

# Files, processes, host system calls and the terminal: on a pseudo-terminal (script), so that
# TIOCSTI has a terminal to push into.
cmd="$HUSK do --rootfs $work/rootfs --volume $work/vol:/vol -- /escape files $token $work/hostsecret $hostpid"
probe_run files -- script -qec "$cmd" /dev/null
if kill -0 "$hostpid" 2>/dev/null; then
	pass "the host process the guest tried to reach lives on"
else
	fail "the host process the guest tried to reach lives on"
fi
after=$(secret_view)
if [ "$before" = "$after" ]; then
	pass "the secret's directory is as it was"
else
	fail "the secret's directory is as it was" "before: $before" "after: $after"
fi

probe_run net-none -- "$HUSK" do --rootfs "$work/rootfs" -- /escape net-none "$token" \
	"$work/hostsecret" "$hostpid"
if unshare -n true 2>/dev/null; then
	probe_run net-host -- unshare -n "$HUSK" do --network=host --rootfs "$work/rootfs" -- \
		/escape net-host "$token" "$work/hostsecret" "$hostpid"
	# A DNS answer that points at the metadata address: the test's own DNS server, in the same
	# kind of namespace, answers every name with 169.254.169.254; the guest may reach it (an
	# --egress-allow rule for its port 53), resolves a name and connects to the answer: EPERM.
	cat >"$work/dns-net.sh" <<-EOF
		ip link set lo up && ip addr add $dns_addr/32 dev lo || exit 1
		python3 "$(dirname "$0")/dns-metadata.py" $dns_addr >"$work/dns.ready" &
		dns=\$!
		read -r line <"$work/dns.ready"
		[ "\$line" = ready ] || { echo "the DNS server did not start"; exit 1; }
		"$HUSK" do --network=host --egress-allow $dns_addr/32:53 --rootfs "$work/rootfs" -- \\
			/escape net-dns "$token" "$work/hostsecret" "$hostpid"
		st=\$?
		kill \$dns
		exit \$st
	EOF
	mkfifo "$work/dns.ready"
	probe_run net-dns -- unshare -n sh "$work/dns-net.sh"
else
	fail "a host network namespace for the --network=host probes" "unshare -n failed"
fi
finish
