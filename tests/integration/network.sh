#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Network (issue 6): sockets inside the sandbox and the egress policy.
#
# Traffic goes only to loopback and to network namespaces this script makes:
#   husk-nt-cli-$$  where husk itself runs; its lo has a "host service" on 127.0.0.1:18080;
#                   veth 203.0.113.1/24, and a route to 169.254.169.254 through the veth
#   husk-nt-srv-$$  a test host 203.0.113.10 (HTTP on :8080) that also answers as the cloud
#                   metadata address 169.254.169.254 (HTTP on :80)
# The root namespace's interfaces and routes are never touched.
set -u
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
CLI=husk-nt-cli-$$
SRV=husk-nt-srv-$$
work=$(mktemp -d)
pids=""

cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	ip netns del "$CLI" 2>/dev/null
	ip netns del "$SRV" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# --- inside one sandbox, no namespaces needed ---

cat >"$work/http_loop.py" <<'EOF'
import http.server, threading, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        b = b"inside\n"
        self.send_response(200); self.send_header("Content-Length", str(len(b)))
        self.end_headers(); self.wfile.write(b)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print(urllib.request.urlopen("http://127.0.0.1:%d/" % srv.server_address[1], timeout=10).read().decode().strip())
srv.shutdown()
EOF
expect_output "http.server and urllib over 127.0.0.1 in one sandbox" "inside" 0 -- \
	"$HUSK" do -- $PY "$work/http_loop.py"

expect_output "socketpair exchange" "pair ok" 0 -- \
	"$HUSK" do -- $PY -c 'import socket; a,b=socket.socketpair(); a.send(b"pair ok"); print(b.recv(16).decode())'

# iproute2 reads the sandbox's interfaces over netlink: lo alone, 127.0.0.1/8, the local route.
IP=/usr/sbin/ip
if [ -x "$IP" ]; then
	# With its lifetimes (IFA_CACHEINFO), as Linux prints a permanent address.
	expect_output "ip -4 -o addr in husk: lo 127.0.0.1/8" \
		"1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever" \
		0 -- "$HUSK" do -- "$IP" -4 -o addr
	expect_output "ip -o link in husk: lo alone, up" "1: lo: <LOOPBACK,UP,LOWER_UP>" 0 -- \
		sh -c '"$1" do -- "$2" -o link | cut -d" " -f1-3' sh "$HUSK" "$IP"
	expect_output "ip route show table all in husk: the local route of lo" \
		"local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1" 0 -- \
		sh -c '"$1" do -- "$2" route show table all | sed "s/ *$//"' sh "$HUSK" "$IP"
else
	echo "# skip: iproute2 (/usr/sbin/ip) is not installed"
fi

# --- namespaces ---

if ! netns_pair "$CLI" "$SRV" "hn$$" 203.0.113.1/24 203.0.113.10/24; then
	echo "# skip: cannot create network namespaces (needs root and CONFIG_NET_NS)"
	finish
fi
ip -n "$SRV" addr add 169.254.169.254/32 dev "hn$$s"
ip -n "$CLI" route add 169.254.169.254/32 dev "hn$$c"

mkdir -p "$work/srv" "$work/meta" "$work/local"
echo "test host" >"$work/srv/index.html"
echo "metadata secret" >"$work/meta/index.html"
echo "host loopback service" >"$work/local/index.html"
ip netns exec "$SRV" $PY -m http.server 8080 --bind 203.0.113.10 --directory "$work/srv" \
	>/dev/null 2>&1 &
pids="$pids $!"
ip netns exec "$SRV" $PY -m http.server 80 --bind 169.254.169.254 --directory "$work/meta" \
	>/dev/null 2>&1 &
pids="$pids $!"
ip netns exec "$CLI" $PY -m http.server 18080 --bind 127.0.0.1 --directory "$work/local" \
	>/dev/null 2>&1 &
pids="$pids $!"

# Wait for the three servers (from the client namespace itself, natively).
for i in $(seq 1 50); do
	if ip netns exec "$CLI" curl -s -m 1 http://203.0.113.10:8080/ >/dev/null 2>&1 &&
		ip netns exec "$CLI" curl -s -m 1 http://169.254.169.254/ >/dev/null 2>&1 &&
		ip netns exec "$CLI" curl -s -m 1 http://127.0.0.1:18080/ >/dev/null 2>&1; then
		break
	fi
	sleep 0.2
done

cat >"$work/fetch.py" <<'EOF'
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())
except OSError as e:
    r = getattr(e, "reason", e)
    print("error", getattr(r, "errno", None), getattr(r, "strerror", r))
EOF

husk_in_cli() {
	ip netns exec "$CLI" "$HUSK" do "$@"
}

expect_output "--network=none: the test host is unreachable" "error 101 Network is unreachable" 0 -- \
	husk_in_cli -- $PY "$work/fetch.py" http://203.0.113.10:8080/
expect_output "--network=host: HTTP fetch from 203.0.113.10" "test host" 0 -- \
	husk_in_cli --network=host -- $PY "$work/fetch.py" http://203.0.113.10:8080/
expect_output "--network=host: 169.254.169.254 refused by default" \
	"error 1 Operation not permitted" 0 -- \
	husk_in_cli --network=host -- $PY "$work/fetch.py" http://169.254.169.254/
ip netns exec "$CLI" "$HUSK" do --network=host -- $PY "$work/fetch.py" http://169.254.169.254/ \
	2>"$work/err" >/dev/null
if grep -q "egress: connect to 169.254.169.254 port 80 refused by default deny 169.254.0.0/16" \
	"$work/err"; then
	pass "the refusal is logged with the address and the rule"
else
	fail "the refusal is logged with the address and the rule" "stderr: $(cat "$work/err")"
fi
expect_output "--network=host: IPv4-mapped 169.254.169.254 refused too" \
	"error 1 Operation not permitted" 0 -- \
	husk_in_cli --network=host -- $PY "$work/fetch.py" "http://[::ffff:169.254.169.254]/"
expect_output "--egress-allow 169.254.169.254/32 lets it through" "metadata secret" 0 -- \
	husk_in_cli --network=host --egress-allow 169.254.169.254/32 -- \
	$PY "$work/fetch.py" http://169.254.169.254/
expect_output "a host service on 127.0.0.1 is refused by default" \
	"error 111 Connection refused" 0 -- \
	husk_in_cli --network=host -- $PY "$work/fetch.py" http://127.0.0.1:18080/
expect_output "--egress-allow 127.0.0.1/32:18080 reaches the host service" \
	"host loopback service" 0 -- \
	husk_in_cli --network=host --egress-allow 127.0.0.1/32:18080 -- \
	$PY "$work/fetch.py" http://127.0.0.1:18080/
expect_output "--egress-deny 203.0.113.0/24 refuses the test host" \
	"error 1 Operation not permitted" 0 -- \
	husk_in_cli --network=host --egress-deny 203.0.113.0/24 -- \
	$PY "$work/fetch.py" http://203.0.113.10:8080/
expect_output "a later allow wins over an earlier deny" "test host" 0 -- \
	husk_in_cli --network=host --egress-deny 203.0.113.0/24 --egress-allow 203.0.113.10/32:8080 -- \
	$PY "$work/fetch.py" http://203.0.113.10:8080/
expect_status "a malformed rule is a setup error" 125 -- \
	husk_in_cli --network=host --egress-allow 300.1.2.3/8 -- /bin/true

# Defence in depth: with the sentry's check off, only the BPF cgroup program can refuse.
# nsenter, not "ip netns exec": that one mounts a sysfs of the namespace, without cgroups.
cg2=/sys/fs/cgroup
[ -f "$cg2/cgroup.controllers" ] || cg2=/sys/fs/cgroup/unified
husk_in_cli_ns() {
	nsenter --net="/run/netns/$CLI" "$HUSK" do "$@"
}
nsenter --net="/run/netns/$CLI" "$HUSK" do --network=host --test-no-sentry-egress-check -- \
	$PY "$work/fetch.py" http://169.254.169.254/ >"$work/out" 2>"$work/err"
st=$?
if grep -q "BPF egress filter unavailable" "$work/err"; then
	echo "# skip: the host kernel cannot take the BPF cgroup program: $(cat "$work/err")"
else
	if [ "$st" = 0 ] && [ "$(cat "$work/out")" = "error 1 Operation not permitted" ] &&
		! grep -q "egress:" "$work/err"; then
		pass "sentry check off: the BPF cgroup program refuses 169.254.169.254 with EPERM"
	else
		fail "sentry check off: the BPF cgroup program refuses 169.254.169.254 with EPERM" \
			"status $st, stdout: $(cat "$work/out")" "stderr: $(cat "$work/err")"
	fi
	expect_output "sentry check off: the BPF program refuses the IPv4-mapped form too" \
		"error 1 Operation not permitted" 0 -- \
		husk_in_cli_ns --network=host --test-no-sentry-egress-check -- \
		$PY "$work/fetch.py" "http://[::ffff:169.254.169.254]/"
	cat >"$work/udp.py" <<'EOF2'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", ("169.254.169.254", 53)); print("sent")
except OSError as e:
    print("error", e.errno)
EOF2
	expect_output "sentry check off: the BPF program refuses a UDP sendto (sendmsg4)" \
		"error 1" 0 -- \
		husk_in_cli_ns --network=host --test-no-sentry-egress-check -- $PY "$work/udp.py"
	expect_output "sentry check off: the BPF program lets --egress-allow rules through" \
		"metadata secret" 0 -- \
		husk_in_cli_ns --network=host --test-no-sentry-egress-check \
		--egress-allow 169.254.169.254/32:80 -- $PY "$work/fetch.py" http://169.254.169.254/
	expect_output "sentry check off: the BPF program allows the test host" "test host" 0 -- \
		husk_in_cli_ns --network=host --test-no-sentry-egress-check -- \
		$PY "$work/fetch.py" http://203.0.113.10:8080/
	# Left behind: a husk-do-PID whose husk is gone (another run's live husk do has one too).
	left=$(for d in "$cg2"/husk-do-*; do
		[ -d "$d" ] && [ ! -d "/proc/${d##*/husk-do-}" ] && echo "$d"
	done)
	if [ -n "$left" ]; then
		fail "no sandbox cgroup is left behind" "$left"
	else
		pass "no sandbox cgroup is left behind"
	fi
	# kill -9 of the sentry: husk removes the cgroup anyway.
	nsenter --net="/run/netns/$CLI" "$HUSK" do --network=host -- /bin/sleep 60 >/dev/null 2>&1 &
	hpid=$!
	spid=""
	for i in $(seq 1 100); do
		spid=$(pgrep -P "$hpid" -f husk-sentry | head -n 1)
		[ -n "$spid" ] && [ -d "$cg2/husk-do-$hpid" ] && break
		sleep 0.1
	done
	if [ -n "$spid" ] && grep -qx "$spid" "$cg2/husk-do-$hpid/cgroup.procs"; then
		pass "the sentry runs in the sandbox's cgroup"
	else
		fail "the sentry runs in the sandbox's cgroup" "sentry pid '$spid'"
	fi
	[ -n "$spid" ] && kill -9 "$spid"
	wait "$hpid"
	if [ -e "$cg2/husk-do-$hpid" ]; then
		fail "kill -9 of the sentry: the cgroup is removed" "$(cat "$cg2/husk-do-$hpid/cgroup.procs")"
	else
		pass "kill -9 of the sentry: the cgroup is removed"
	fi
fi

# The OCI runtime: dev.husk.network / dev.husk.egress-allow / dev.husk.egress-deny.
BUSYBOX=/bin/busybox
if [ -x "$BUSYBOX" ] && file -L "$BUSYBOX" 2>/dev/null | grep -q static; then
	bundle=$work/bundle
	mkdir -p "$bundle/rootfs/bin"
	cp "$BUSYBOX" "$bundle/rootfs/bin/busybox"
	for a in sh sleep wget cat; do ln -s busybox "$bundle/rootfs/bin/$a"; done
	(cd "$bundle" && "$HUSK" spec)
	# oci_config NETWORK ALLOW DENY ARGS...: the annotations ("" leaves one out) and args.
	oci_config() {
		$PY - "$bundle/config.json" "$@" <<'EOF2'
import json, sys
p, net, allow, deny = sys.argv[1:5]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = sys.argv[5:]
a = {}
for k, v in (("network", net), ("egress-allow", allow), ("egress-deny", deny)):
    if v:
        a["dev.husk." + k] = v
c["annotations"] = a
json.dump(c, open(p, "w"))
EOF2
	}
	H() { "$HUSK" --root "$work/state" "$@"; }
	Hn() { nsenter --net="/run/netns/$CLI" "$HUSK" --root "$work/state" "$@"; }
	oci_config host "" "" wget -q -O - http://203.0.113.10:8080/
	expect_output "OCI dev.husk.network=host: fetch from the test host" "test host" 0 -- \
		Hn run --bundle "$bundle" n1
	oci_config host "" "" wget -q -O - http://169.254.169.254/
	expect_output "OCI dev.husk.network=host: 169.254.169.254 refused" "" 1 -- \
		Hn run --bundle "$bundle" n2
	oci_config host "169.254.169.254/32:80" "" wget -q -O - http://169.254.169.254/
	expect_output "OCI dev.husk.egress-allow lets 169.254.169.254 through" "metadata secret" 0 -- \
		Hn run --bundle "$bundle" n3
	oci_config host "" "203.0.113.0/24" wget -q -O - http://203.0.113.10:8080/
	expect_output "OCI dev.husk.egress-deny refuses the test host" "" 1 -- \
		Hn run --bundle "$bundle" n4
	oci_config "" "" "" wget -q -O - http://203.0.113.10:8080/
	expect_output "OCI without dev.husk.network: loopback only" "" 1 -- \
		Hn run --bundle "$bundle" n5
	oci_config host "" "300.1.2.3/8" sleep 1
	expect_status "OCI: a malformed dev.husk.egress-deny fails create" 1 -- \
		H create --bundle "$bundle" n6
	oci_config bridge "" "" sleep 1
	expect_status "OCI: an unknown dev.husk.network fails create" 1 -- \
		H create --bundle "$bundle" n7
	if command -v bpftool >/dev/null &&
		{ [ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ]; }; then
		oci_config host "" "" sleep 30
		H create --bundle "$bundle" n8 >/dev/null 2>&1
		cg=$(husk_cgroup_in "$work/state" n8)
		cgdir=$(ls -d /sys/fs/cgroup/unified$cg /sys/fs/cgroup$cg 2>/dev/null | head -n 1)
		progs=$(bpftool cgroup show "$cgdir" 2>/dev/null | grep -c husk_)
		if [ "$progs" = 4 ]; then
			pass "OCI dev.husk.network=host: the four BPF egress programs are on the cgroup"
		else
			fail "OCI dev.husk.network=host: the four BPF egress programs are on the cgroup" \
				"cgroup '$cgdir': $(bpftool cgroup show "$cgdir" 2>&1)"
		fi
		H delete --force n8 >/dev/null 2>&1
		if [ -n "$cgdir" ] && [ -e "$cgdir" ]; then
			fail "OCI delete removes the cgroup and its programs" "$cgdir remains"
		else
			pass "OCI delete removes the cgroup and its programs"
		fi
	else
		echo "# skip: OCI BPF attachment check: no bpftool or no cgroup v2"
	fi
	for id in $(H list -q 2>/dev/null); do H delete --force "$id" >/dev/null 2>&1; done
else
	echo "# skip: OCI annotations: no static busybox (apt-get install busybox-static)"
fi

finish
