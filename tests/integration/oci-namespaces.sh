#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# linux.namespaces paths (issue 15): a config that names a network namespace has its egress
# there, a path of the wrong type or a missing one is refused at create with runc's wording
# (compared with runc's own output when runc is installed), a valid path of another type is
# accepted, and without a config hostname the guest has its UTS namespace's.
#
# Traffic stays in a network namespace this script makes (husk-nsp-$$: a veth pair whose two ends
# are both inside it, 10.250.0.1 serving HTTP, 169.254.169.254 standing for the cloud metadata
# address) and on this host's own address (a server in the host's namespace, local traffic).
# The root namespace's interfaces and routes are never touched.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

PY=/usr/bin/python3
POD=husk-nsp-$$
oci_setup nsp
# runc names a container's cgroup /ID (no cgroupsPath in the bundle): ids of this run's own, so
# that two runs at once (two make checks) never share one.
run=${work##*.}
oci_bundle sh wget hostname cat nc
pids=""
utsfile=""

ns_cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	[ -n "$utsfile" ] && umount "$utsfile" 2>/dev/null
	ip netns del "$POD" 2>/dev/null
	oci_cleanup
}
trap ns_cleanup EXIT INT TERM

# config_with ARGS-JSON NETNS-PATH [UTS-PATH]: the bundle's config runs ARGS with the network
# namespace NETNS-PATH ("" : listed, no path; "-": not listed) and no hostname.
config_with() {
	$PY - "$bundle/config.json" "$1" "$2" "${3:-}" <<'EOF'
import json, sys
p, args, net, uts = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
c = json.load(open(p))
c["process"]["args"] = args
c["process"]["terminal"] = False
c.pop("hostname", None)
c["linux"].pop("resources", None)
ns = [n for n in c["linux"]["namespaces"] if n["type"] not in ("network", "uts")]
if net != "-":
    ns.append({"type": "network", "path": net} if net else {"type": "network"})
ns.append({"type": "uts", "path": uts} if uts else {"type": "uts"})
c["linux"]["namespaces"] = ns
json.dump(c, open(p, "w"), indent=1)
EOF
}

# --- refusals (need no network namespace) ---

wrong=/proc/$$/ns/uts
missing=$work/no-such-netns
config_with '["true"]' "$wrong"
out=$(H create --bundle "$bundle" nsp-wrong 2>&1)
st=$?
want="failed to setns into net namespace: Invalid argument"
if command -v runc >/dev/null 2>&1; then
	# runc's own words for the same bundle (its nsexec line: "nsexec-1[PID]: MESSAGE").
	r=$(runc --root "$work/runc" create --bundle "$bundle" "nsp-runc-$run" 2>&1)
	runc --root "$work/runc" delete -f "nsp-runc-$run" >/dev/null 2>&1
	got=$(echo "$r" | sed -n 's/.*nsexec-1\[[0-9]*\]: \(failed to setns[^"]*\)".*/\1/p' | head -1)
	[ -n "$got" ] && want=$got
	echo "# runc says: $want"
fi
if [ "$st" != 0 ] && echo "$out" | grep -qF "$want" && echo "$out" | grep -qF "$wrong"; then
	pass "a network path of the wrong type is refused with runc's wording and the path"
else
	fail "a network path of the wrong type is refused with runc's wording and the path" \
		"status $st, want \"$want\" and $wrong in: $out"
fi
[ -z "$(H list -q 2>/dev/null)" ] && pass "the refused create left no container" ||
	fail "the refused create left no container" "$(H list 2>&1)"
cg=$(husk_cgroup nsp-wrong)
[ ! -e /sys/fs/cgroup/memory$cg ] && [ ! -e /sys/fs/cgroup/unified$cg ] &&
	[ ! -e /sys/fs/cgroup$cg ] && pass "the refused create left no cgroup" ||
	fail "the refused create left no cgroup"

config_with '["true"]' "$missing"
out=$(H create --bundle "$bundle" nsp-missing 2>&1)
st=$?
want="namespace path: lstat $missing: no such file or directory"
if command -v runc >/dev/null 2>&1; then
	r=$(runc --root "$work/runc" create --bundle "$bundle" "nsp-runc-$run" 2>&1)
	runc --root "$work/runc" delete -f "nsp-runc-$run" >/dev/null 2>&1
	got=$(echo "$r" | sed -n 's/.*\(namespace path: [^"]*\)".*/\1/p' | head -1)
	[ -n "$got" ] && want=$got
	echo "# runc says: $want"
fi
if [ "$st" != 0 ] && echo "$out" | grep -qF "$want"; then
	pass "a missing namespace path is refused with runc's wording"
else
	fail "a missing namespace path is refused with runc's wording" "status $st, want \"$want\" in: $out"
fi

# A valid path of another type is accepted (the guest's IPC namespace stays the sentry's).
$PY - "$bundle/config.json" "/proc/$$/ns/ipc" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "ipc"] + \
    [{"type": "ipc", "path": sys.argv[2]}]
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"] + \
    [{"type": "network"}]
c["process"]["args"] = ["sh", "-c", "echo ran"]
json.dump(c, open(p, "w"), indent=1)
EOF
expect_output "a valid ipc path is accepted" "ran" 0 -- H run --bundle "$bundle" nsp-ipc
H delete -f nsp-ipc >/dev/null 2>&1

# --- hostname: the UTS namespace's when the config has none ---

config_with '["hostname"]' ""
expect_output "no config hostname: the guest sees the host's" "$(hostname)" 0 -- H run --bundle "$bundle" nsp-uts1
H delete -f nsp-uts1 >/dev/null 2>&1
utsfile=$work/uts
touch "$utsfile"
if unshare --uts="$utsfile" hostname husk-nsp-pod 2>/dev/null; then
	config_with '["hostname"]' "" "$utsfile"
	expect_output "a uts path: the guest sees that namespace's hostname" "husk-nsp-pod" 0 -- \
		H run --bundle "$bundle" nsp-uts2
	H delete -f nsp-uts2 >/dev/null 2>&1
else
	echo "# skip: unshare --uts=FILE is not available"
	utsfile=""
fi

# --- the network namespace: egress goes there ---

if [ ! -x /usr/sbin/ip ] && ! command -v ip >/dev/null; then
	echo "ok - SKIP network checks: iproute2 is not installed"
	finish
fi
if ! ip netns add "$POD" 2>/dev/null; then
	echo "ok - SKIP network checks: cannot create a network namespace (needs root)"
	finish
fi
ip -n "$POD" link set lo up
ip -n "$POD" link add nspa$$ type veth peer name nspb$$
ip -n "$POD" addr add 10.250.0.1/24 dev nspa$$
ip -n "$POD" addr add 10.250.0.2/24 dev nspb$$
ip -n "$POD" addr add 169.254.169.254/32 dev nspb$$
ip -n "$POD" link set nspa$$ up
ip -n "$POD" link set nspb$$ up

cat >"$work/serve.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        b = (sys.argv[3] + "\n").encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b)))
        self.end_headers(); self.wfile.write(b)
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
EOF
PORT=$((20000 + $$ % 20000))
ip netns exec "$POD" $PY "$work/serve.py" 10.250.0.1 "$PORT" from-pod &
pids="$pids $!"
ip netns exec "$POD" $PY "$work/serve.py" 169.254.169.254 "$PORT" from-metadata &
pids="$pids $!"
# The host's own address (local traffic only), with a server in the host's namespace.
HOSTIP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
if [ -n "$HOSTIP" ]; then
	$PY "$work/serve.py" 0.0.0.0 "$PORT" from-host &
	pids="$pids $!"
fi
# Poll (scaling timeout) until the servers answer.
FETCH='import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode().strip())'
i=0
while [ $i -lt 200 ]; do
	a=$(ip netns exec "$POD" $PY -c "$FETCH" "http://10.250.0.1:$PORT/" 2>/dev/null)
	b=$([ -z "$HOSTIP" ] && echo from-host || $PY -c "$FETCH" "http://$HOSTIP:$PORT/" 2>/dev/null)
	[ "$a" = from-pod ] && [ "$b" = from-host ] && break
	sleep 0.05
	i=$((i + 1))
done

netns=/run/netns/$POD
config_with "[\"wget\", \"-qO-\", \"http://10.250.0.1:$PORT/\"]" "$netns"
expect_output "the guest reaches a server in the config's network namespace" "from-pod" 0 -- \
	H run --bundle "$bundle" nsp-net1
H delete -f nsp-net1 >/dev/null 2>&1

# wget_cfg URL NETNS: the guest fetches URL (no -T: it crashes this busybox's wget, natively too) and then says how wget ended ("wget=STATUS"), so a refusal
# is told from a container that did not run.
wget_cfg() {
	config_with "[\"sh\", \"-c\", \"wget -qO- $1; echo wget=\$?\"]" "$2"
}
wget_cfg "http://169.254.169.254:$PORT/" "$netns"
out=$(H run --bundle "$bundle" nsp-net2 2>&1)
H delete -f nsp-net2 >/dev/null 2>&1
case $out in
*from-metadata*) fail "the metadata address stays denied in the pod's namespace" "$out" ;;
*wget=[1-9]*) pass "the metadata address stays denied in the pod's namespace" ;;
*) fail "the metadata address stays denied in the pod's namespace" "$out" ;;
esac

if [ -n "$HOSTIP" ]; then
	# The same request from the pod's namespace, and (the control) with the network not
	# listed, i.e. shared with the host, and the host's address allowed.
	wget_cfg "http://$HOSTIP:$PORT/" "$netns"
	out=$(H run --bundle "$bundle" nsp-net3 2>&1)
	H delete -f nsp-net3 >/dev/null 2>&1
	case $out in
	*from-host*) fail "the guest does not reach the host namespace's server" "$out" ;;
	*wget=[1-9]*) pass "the guest does not reach the host namespace's server" ;;
	*) fail "the guest does not reach the host namespace's server" "$out" ;;
	esac
	config_with "[\"wget\", \"-qO-\", \"http://$HOSTIP:$PORT/\"]" "-"
	$PY - "$bundle/config.json" "$HOSTIP" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c.setdefault("annotations", {})["dev.husk.egress-allow"] = sys.argv[2]
json.dump(c, open(p, "w"), indent=1)
EOF
	expect_output "control: no network namespace listed reaches the host's server" "from-host" 0 -- \
		H run --bundle "$bundle" nsp-net4
	H delete -f nsp-net4 >/dev/null 2>&1
else
	echo "# skip: the host has no global IPv4 address for the host-namespace check"
fi
# --- inbound: a guest listener takes connections on the pod's address (--inbound) ---
# fetch_tcp NETNS ADDR PORT: the first line a TCP server there sends, polled (scaling timeout)
# until it answers; NETNS "-" is the host's namespace.
fetch_tcp() {
	$PY - "$@" <<'EOF'
import os, subprocess, sys, time
ns, addr, port = sys.argv[1:4]
end = time.monotonic() + 30 * float(os.environ.get("HUSK_TEST_TIMEOUT_SCALE", "1"))
code = ("import socket,sys\ns=socket.create_connection((sys.argv[1],int(sys.argv[2])),5)\n"
        "print(s.recv(100).decode().strip())")
pre = [] if ns == "-" else ["ip", "netns", "exec", ns]
out = ""
while time.monotonic() < end:
    r = subprocess.run(pre + [sys.executable, "-c", code, addr, port],
                       capture_output=True, text=True)
    out = r.stdout.strip() or " ".join(r.stderr.strip().splitlines()[-1:])
    if r.returncode == 0:
        break
    time.sleep(0.2)
print(out)
EOF
}
IPORT=$((PORT + 1))
config_with "[\"sh\", \"-c\", \"echo inbound-ok | nc -l -p $IPORT\"]" "$netns"
if H create --bundle "$bundle" nsp-in1 >/dev/null 2>&1 && H start nsp-in1; then
	expect_output "a guest listener takes a connection on the pod's address" "inbound-ok" 0 -- \
		fetch_tcp "$POD" 10.250.0.1 "$IPORT"
else
	fail "a guest listener takes a connection on the pod's address" "create/start failed"
fi
H delete -f nsp-in1 >/dev/null 2>&1
# Without a network namespace of the engine's (no --inbound) the host's network never reaches a
# guest listener: once the guest listens (seen from inside), the host's loopback port refuses.
config_with "[\"sh\", \"-c\", \"echo inbound-ok | nc -l -p $IPORT\"]" "-"
if H create --bundle "$bundle" nsp-in2 >/dev/null 2>&1 && H start nsp-in2; then
	H exec nsp-in2 sh -c "i=0; until nc -z 127.0.0.1 $IPORT || [ \$i -gt 300 ]; do sleep 0.1; i=\$((i+1)); done" >/dev/null 2>&1
	out=$($PY -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5)" "$IPORT" 2>&1)
	case "$out" in
	*"Connection refused"*) pass "without a pod network namespace the host reaches no guest listener" ;;
	*) fail "without a pod network namespace the host reaches no guest listener" "$out" ;;
	esac
else
	fail "without a pod network namespace the host reaches no guest listener" "create/start failed"
fi
H delete -f nsp-in2 >/dev/null 2>&1
finish
