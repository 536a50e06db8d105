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

# --- namespaces ---

if ! ip netns add "$CLI" 2>/dev/null || ! ip netns add "$SRV" 2>/dev/null; then
	echo "# skip: cannot create network namespaces (needs root and CONFIG_NET_NS)"
	finish
fi
ip -n "$CLI" link set lo up
ip -n "$SRV" link set lo up
ip link add "hnc$$" netns "$CLI" type veth peer name "hns$$" netns "$SRV"
ip -n "$CLI" addr add 203.0.113.1/24 dev "hnc$$"
ip -n "$SRV" addr add 203.0.113.10/24 dev "hns$$"
ip -n "$SRV" addr add 169.254.169.254/32 dev "hns$$"
ip -n "$CLI" link set "hnc$$" up
ip -n "$SRV" link set "hns$$" up
ip -n "$CLI" route add 169.254.169.254/32 dev "hnc$$"

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
echo "# skip: BPF cgroup egress program not implemented yet (issue 6)"

finish
