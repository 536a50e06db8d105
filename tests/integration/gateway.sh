#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The credential gateway of husk serve (issue 14; runtime/serve/GATEWAY.md), without the rest of
# the server: husk-gateway-test runs runtime/serve/gateway.c, sandboxes are `husk do --gateway`.
#
#   husk-gw-cli-$$  where the gateway runs; veth 10.250.0.1/30
#   husk-gw-srv-$$  a test HTTPS server 10.250.0.2:443 for api.test (a CA made here), which
#                   records every request it gets
# The sandboxes run in the root namespace with --network=none: they reach nothing but the
# gateway. The root namespace's interfaces and routes are never touched.
#
# The secret is a random string that appears only in a 0600 file outside the guest's root and in
# the gateway process. The guest never holds it: the test looks for it in the sandbox's memory
# (the sentry's memory file, which is all guest memory, and the sentry's own), in its files and
# in its /proc/*/environ and cmdline, beside a control string the guest does hold, which every
# one of those searches must find (so that a search that cannot find anything fails the test).
set -u
. "$(dirname "$0")/lib.sh"

: "${HUSK_GATEWAY_TEST:?set HUSK_GATEWAY_TEST to the husk-gateway-test binary}"
PY=/usr/bin/python3
CLI=husk-gw-cli-$$
SRV=husk-gw-srv-$$
work=$(mktemp -d)
pids=""

cleanup() {
	exec 3>&- 2>/dev/null
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	ip netns del "$CLI" 2>/dev/null
	ip netns del "$SRV" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

for tool in openssl ip /bin/busybox $PY; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "# skip: $tool is not installed"
		finish
	fi
done
if ! netns_pair "$CLI" "$SRV" "hg$$" 10.250.0.1/30 10.250.0.2/30; then
	echo "# skip: cannot create network namespaces (needs root and CONFIG_NET_NS)"
	finish
fi

# --- a CA and a certificate for api.test ---
(
	cd "$work" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout ca.key -out ca.pem -subj /CN=husk-gateway-test-ca -days 2 &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout srv.key -out srv.csr -subj /CN=api.test &&
		printf 'subjectAltName=DNS:api.test,DNS:other.test\n' >ext &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-out srv.pem -days 2 -extfile ext
) >"$work/openssl.log" 2>&1 || {
	fail "making the test CA" "$(cat "$work/openssl.log")"
	finish
}

# --- the secret: random, in a 0600 file outside the guest's root ---
mkdir -m 700 "$work/secrets"
SECRET="hgs$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
OTHER_SECRET="hgo$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && printf '%s\n' "$SECRET" >"$work/secrets/api" &&
	printf '%s\n' "$OTHER_SECRET" >"$work/secrets/other")
# grep patterns that match the strings without holding them ("[h]gs..."): a process that
# searches with one does not find itself in its own cmdline.
pat() { printf '[%s]%s' "$(printf %s "$1" | cut -c1)" "$(printf %s "$1" | cut -c2-)"; }

# --- the test HTTPS server: records each request, never echoes a header but on /echo ---
cat >"$work/upstream.py" <<'EOF'
import http.server, json, ssl, sys
log = open(sys.argv[1], "a")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def handle_one(self):
        if self.headers.get("Transfer-Encoding") == "chunked":
            body = ""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""): pass
                    break
                body += self.rfile.read(size).decode(); self.rfile.readline()
        else:
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n).decode() if n else ""
        log.write(json.dumps({"method": self.command, "path": self.path,
            "host": self.headers.get("Host"),
            "authorization": self.headers.get_all("Authorization") or [],
            "x_key": self.headers.get_all("X-Key") or [],
            "connection": self.headers.get("Connection"), "body": body}) + "\n")
        log.flush()
        if self.path == "/echo":
            out = ("echo: %s\n" % self.headers.get("Authorization")).encode()
        else:
            out = ("upstream %s %s %s\n" % (self.command, self.path, body)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = handle_one
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
srv = http.server.ThreadingHTTPServer(("10.250.0.2", 443), H)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("listening", flush=True)
srv.serve_forever()
EOF
: >"$work/requests"
ip netns exec "$SRV" $PY "$work/upstream.py" "$work/requests" "$work/srv.pem" "$work/srv.key" \
	>"$work/upstream.out" 2>&1 &
pids="$pids $!"

# --- the gateway, in the client namespace ---
GW_SOCK="$work/gateway.sock"
ip netns exec "$CLI" "$HUSK_GATEWAY_TEST" --socket "$GW_SOCK" \
	--secret "API=@$work/secrets/api,host=api.test,header=Authorization,prefix=Bearer " \
	--secret "OTHER=@$work/secrets/other,host=other.test,header=X-Key" \
	--gateway-ca "$work/ca.pem" --gateway-resolve api.test:10.250.0.2 \
	--gateway-resolve other.test:10.250.0.2 --allow sb-api=API --allow sb-none= --allow sb-oci=API \
	>"$work/gateway.out" 2>"$work/gateway.err" &
gwpid=$!
pids="$pids $gwpid"

# Poll (scaled timeout) for both servers.
wait_for() {
	i=0
	while [ $i -lt 200 ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		i=$((i + 1))
		sleep 0.05
	done
	return 1
}
if ! wait_for "$work/upstream.out" listening || ! wait_for "$work/gateway.out" ready; then
	fail "the gateway and the test server start" "upstream: $(cat "$work/upstream.out")" \
		"gateway: $(cat "$work/gateway.out" "$work/gateway.err")"
	finish
fi
# Natively first: the test server answers with the CA made here.
if ip netns exec "$CLI" curl -s --cacert "$work/ca.pem" --resolve api.test:443:10.250.0.2 \
	https://api.test/native >/dev/null 2>&1; then
	pass "natively, the test server answers over TLS with the test CA"
else
	fail "natively, the test server answers over TLS with the test CA"
fi

# --- the guest's root: busybox alone ---
root="$work/root"
mkdir -p "$root/bin" "$root/proc" "$root/dev" "$root/sys" "$root/tmp" "$root/etc"
cp /bin/busybox "$root/bin/busybox"
for t in sh wget grep find xargs cat echo sleep env head nc tr sed kill; do ln -s busybox "$root/bin/$t"; done
if grep -rqF "$SECRET" "$root"; then
	fail "the guest's root does not hold the secret" "found under $root"
fi

cat >"$root/guest.sh" <<'EOF'
# $1 $2: halves of the control string; $3 $4: grep patterns of the secret and of the control.
ctl="$1$2"
export CTL_ENV="$ctl"
echo "$ctl" >/tmp/ctl-file
# A process holding the control string in its environment and its command line.
sh -c 'sleep 1000; :' holder "$ctl" &
holder=$!
# (no -T: busybox 1.35's wget crashes with it, natively too)
gw() { wget -q -O - "$@" 2>&1; echo "status=$?"; }
echo "gateway=$HUSK_GATEWAY"
echo "--- get"; gw --header "Host: api.test" --header "Authorization: Bearer forged" "$HUSK_GATEWAY/hello"
echo "--- post"; gw --header "Host: api.test" --post-data "payload123" "$HUSK_GATEWAY/post"
echo "--- absolute"; http_proxy="$HUSK_GATEWAY" gw "http://api.test/abs"
echo "--- echo"; gw --header "Host: api.test" "$HUSK_GATEWAY/echo"
echo "--- other"; gw --header "Host: other.test" "$HUSK_GATEWAY/other"
echo "--- evil"; gw --header "Host: evil.test" "$HUSK_GATEWAY/evil"
echo "--- port"; gw "http://169.254.1.1:8080/"
raw() { printf "$1" | nc 169.254.1.1 80 | tr -d '\r' | sed -n "$2"; }
echo "--- chunked"
raw 'POST /chunk HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n' '1p;$p'
echo "--- malformed"
raw 'GET / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n' '1p;$p'
raw 'CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n' '1p;$p'
echo "--- ready"
echo READY
read go
echo "--- search"
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
	grep -l -e "$3" "$f" 2>/dev/null | sed 's/^/secret-in /'
	grep -l -e "$4" "$f" 2>/dev/null | sed 's/^/ctl-in /'
done
find / /tmp -xdev -type f 2>/dev/null | xargs grep -l -e "$3" 2>/dev/null | sed 's/^/secret-in /'
find / /tmp -xdev -type f 2>/dev/null | xargs grep -l -e "$4" 2>/dev/null | sed 's/^/ctl-in /'
kill $holder
echo "--- end"
EOF

# The sentry's memory: its memory file (every page of guest memory, read by extents) and its
# own readable mappings. Prints "secret N control M bytes B".
cat >"$work/memscan.py" <<'EOF'
import os, re, sys
pid, secret, ctl = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
found = {"secret": 0, "control": 0}; total = 0
def scan(data):
    global total
    total += len(data)
    found["secret"] += data.count(secret); found["control"] += data.count(ctl)
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
    except OSError:
        continue
    if not link.startswith("/memfd:husk-memory"):
        continue
    f = os.open("/proc/%s/fd/%s" % (pid, fd), os.O_RDONLY)
    off = 0
    while True:
        try:
            start = os.lseek(f, off, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(f, start, os.SEEK_HOLE)
        pos = start - (start % 4096)
        while pos < end:
            n = min(1 << 20, end - pos)
            scan(os.pread(f, n + len(secret), pos))
            pos += n
        off = end
    os.close(f)
mem = open("/proc/%s/mem" % pid, "rb", buffering=0)
for line in open("/proc/%s/maps" % pid):
    parts = line.split()
    lo, hi = (int(x, 16) for x in parts[0].split("-"))
    name = parts[5] if len(parts) > 5 else ""
    if "r" not in parts[1] or name.startswith("/memfd:") or name in ("[vvar]", "[vsyscall]"):
        continue
    if hi - lo > (1 << 30):
        continue
    try:
        mem.seek(lo); scan(mem.read(hi - lo))
    except OSError:
        pass
print("secret %d control %d bytes %d" % (found["secret"], found["control"], total))
EOF

# --- a sandbox allowed the API secret ---
CTL_A="hgc$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
CTL_B="$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
mkfifo "$work/guest.in"
"$HUSK" do --rootfs "$root" --gateway "$GW_SOCK" --gateway-id sb-api -- \
	/bin/sh /guest.sh "$CTL_A" "$CTL_B" "$(pat "$SECRET")" "$(pat "$CTL_A$CTL_B")" \
	<"$work/guest.in" >"$work/guest.out" 2>"$work/guest.err" &
husk_pid=$!
pids="$pids $husk_pid"
exec 3>"$work/guest.in"
if ! wait_for "$work/guest.out" READY; then
	fail "the guest runs its requests" "$(cat "$work/guest.out" "$work/guest.err")"
	finish
fi
section() { sed -n "/^--- $1\$/,/^---/p" "$work/guest.out" | sed '1d;$d'; }

expect_section() {
	got=$(section "$1")
	if [ "$got" = "$2" ]; then
		pass "$3"
	else
		fail "$3" "expected: $2" "got: $got"
	fi
}
if grep -qx "gateway=http://169.254.1.1" "$work/guest.out"; then
	pass "the guest gets HUSK_GATEWAY=http://169.254.1.1"
else
	fail "the guest gets HUSK_GATEWAY=http://169.254.1.1" "$(head -1 "$work/guest.out")"
fi
expect_section get "upstream GET /hello 
status=0" "GET through the gateway reaches the upstream"
expect_section post "upstream POST /post payload123
status=0" "POST with a body through the gateway"
expect_section absolute "upstream GET /abs 
status=0" "an absolute-form request (http_proxy) names the upstream"
stars=$(printf '%s' "$SECRET" | sed 's/./*/g')
expect_section echo "echo: Bearer $stars
status=0" "an upstream that echoes the header: the secret is masked in the answer"
expect_section chunked "HTTP/1.1 200 OK
upstream POST /chunk hello world" "a chunked request body goes through whole"
expect_section malformed "HTTP/1.1 400 Bad Request
husk gateway: one Content-Length or Transfer-Encoding: chunked, not both
HTTP/1.1 405 Method Not Allowed
husk gateway: no tunnels (CONNECT)" "two Content-Lengths: 400; CONNECT: 405"
expect_section other "wget: server returned error: HTTP/1.1 403 Forbidden
status=1" "another secret's host (not allowed for this sandbox): 403"
expect_section evil "wget: server returned error: HTTP/1.1 403 Forbidden
status=1" "a host no secret names: 403"
expect_section port "wget: can't connect to remote host (169.254.1.1): Connection refused
status=1" "another port of the gateway address: connection refused"

# What the upstream saw.
check_requests() {
	$PY - "$work/requests" "$SECRET" "$OTHER_SECRET" <<'EOF'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
secret, other = sys.argv[2], sys.argv[3]
by = {r["path"]: r for r in reqs}
ok = True
def check(cond, what):
    global ok
    print(("ok " if cond else "bad ") + what)
    ok &= cond
check(sorted(by) == ["/abs", "/chunk", "/echo", "/hello", "/native", "/post"], "paths %s" % sorted(by))
for p in ("/hello", "/post", "/abs", "/echo", "/chunk"):
    r = by.get(p, {})
    check(r.get("authorization") == ["Bearer " + secret], p + ": one Authorization: Bearer <secret>")
    check(r.get("x_key") == [], p + ": no other secret")
    check(r.get("host") == "api.test", p + ": Host api.test")
    check(r.get("connection") == "close", p + ": Connection: close")
check(by.get("/post", {}).get("body") == "payload123", "/post: the body")
check(by.get("/chunk", {}).get("body") == "hello world", "/chunk: the chunked body")
check(not any(other in json.dumps(r) for r in reqs), "the other secret was never sent")
sys.exit(0 if ok else 1)
EOF
}
if out=$(check_requests 2>&1); then
	pass "the upstream got the secret's header (the guest's own dropped), nothing for refused hosts"
else
	fail "the upstream got the secret's header (the guest's own dropped), nothing for refused hosts" \
		"$out"
fi

# The sandbox's memory, while the guest holds the control string and waits.
spid=""
for p in /proc/[0-9]*; do
	if [ "$(cat "$p/comm" 2>/dev/null)" = husk-sentry ] &&
		[ "$(awk '/^PPid:/ {print $2}' "$p/status" 2>/dev/null)" = "$husk_pid" ]; then
		spid=${p#/proc/}
	fi
done
if [ -z "$spid" ]; then
	fail "the sandbox's sentry is found" "no husk-sentry child of $husk_pid"
else
	scan=$($PY "$work/memscan.py" "$spid" "$SECRET" "$CTL_A$CTL_B" 2>&1)
	case "$scan" in
	"secret 0 control "[1-9]*) pass "the sandbox's memory holds the control string, not the secret ($scan)" ;;
	*) fail "the sandbox's memory holds the control string, not the secret" "$scan" ;;
	esac
	for f in cmdline environ; do
		if tr '\0' '\n' <"/proc/$spid/$f" | grep -qF "$SECRET"; then
			fail "the sentry's $f does not hold the secret"
		else
			pass "the sentry's $f does not hold the secret"
		fi
	done
fi
echo go >&3
exec 3>&-
wait "$husk_pid"
st=$?
if [ "$st" = 0 ] && wait_for "$work/guest.out" "^--- end"; then
	got=$(section search | sort | tr '\n' ' ')
	case "$got" in
	*secret-in*) fail "the guest's files and /proc do not hold the secret" "$got" ;;
	*"ctl-in /proc/"*"/cmdline"*"ctl-in /proc/"*"/environ"*"ctl-in /tmp/ctl-file"*)
		pass "the guest's files and /proc hold the control string, not the secret" ;;
	*) fail "the guest's files and /proc hold the control string, not the secret" "$got" ;;
	esac
else
	fail "the guest ends" "status $st" "$(cat "$work/guest.err")"
fi
if grep -qF "$SECRET" "$work/guest.out" "$work/guest.err"; then
	fail "the guest's output does not hold the secret"
else
	pass "the guest's output does not hold the secret"
fi

# --- a sandbox the server allowed no secret ---
expect_output "a sandbox allowed no secret: 403 for api.test" \
	"wget: server returned error: HTTP/1.1 403 Forbidden" 1 -- \
	sh -c '"$1" do --rootfs "$2" --gateway "$3" --gateway-id sb-none -- /bin/wget -q -O - --header "Host: api.test" http://169.254.1.1/ 2>&1' \
	sh "$HUSK" "$root" "$GW_SOCK"
# --- an OCI container (husk run) with the annotations ---
mkdir -p "$work/bundle" "$work/state"
if (cd "$work/bundle" && "$HUSK" spec) >/dev/null 2>&1; then
	$PY - "$work/bundle/config.json" "$root" "$GW_SOCK" <<'EOF'
import json, sys
p, root, sock = sys.argv[1:4]
c = json.load(open(p))
c["root"] = {"path": root, "readonly": False}
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "-c",
    'wget -q -O - --header "Host: api.test" "$HUSK_GATEWAY/oci"']
c.setdefault("annotations", {}).update({"dev.husk.gateway": sock, "dev.husk.gateway-id": "sb-oci"})
json.dump(c, open(p, "w"))
EOF
	expect_output "husk run with dev.husk.gateway: the container reaches the upstream" \
		"upstream GET /oci " 0 -- \
		"$HUSK" --root "$work/state" run --bundle "$work/bundle" "husk-gw-$$"
else
	fail "husk spec makes a bundle"
fi

# --- no gateway: the address refuses, in both network modes ---
expect_output "without a gateway, the gateway address refuses connections" \
	"wget: can't connect to remote host (169.254.1.1): Connection refused" 1 -- \
	sh -c '"$1" do --rootfs "$2" -- /bin/wget -q -O - http://169.254.1.1/ 2>&1' sh \
	"$HUSK" "$root"
expect_output "without a gateway, --network=host: refused too (never a host connect)" \
	"wget: can't connect to remote host (169.254.1.1): Connection refused" 1 -- \
	sh -c '"$1" do --network=host --egress-allow 169.254.0.0/16 --rootfs "$2" -- /bin/wget -q -O - http://169.254.1.1/ 2>&1' \
	sh "$HUSK" "$root"
expect_status "a gateway socket that is not there: the sandbox is not started" 125 -- \
	"$HUSK" do --rootfs "$root" --gateway "$work/nothing.sock" --gateway-id sb-api -- /bin/true

# --- husk serve end to end: --secret on the server, "secrets" on a sandbox (the Python client) ---
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SERVE_SOCK="$work/serve.sock"
ip netns exec "$CLI" "$HUSK" serve --socket "$SERVE_SOCK" --state-dir "$work/serve-state" \
	--secret "API=@$work/secrets/api,host=api.test,header=Authorization,prefix=Bearer " \
	--gateway-ca "$work/ca.pem" --gateway-resolve api.test:10.250.0.2 \
	>"$work/serve.out" 2>"$work/serve.err" &
pids="$pids $!"
if wait_for "$work/serve.err" "listening on"; then
	PYTHONPATH="$REPO/clients/python" $PY - "$SERVE_SOCK" "$root" "$work/serve-result" <<'EOF2' >"$work/serve-py.out" 2>&1
import json, sys
import husk
c = husk.Client(socket=sys.argv[1])
res = {}
sb = c.create(rootfs=sys.argv[2], secrets=["API"], env={"MARK": "hgcontrol-serve-mark"})
try:
    r = sb.exec(cmd='wget -q -O - --header "Host: api.test" "$HUSK_GATEWAY/serve" 2>&1')
    res["through"] = r.stdout
    r = sb.exec(cmd='wget -q -O - --header "Host: other.test" "$HUSK_GATEWAY/serve-other" 2>&1')
    res["other"] = r.stdout
    # What the guest can see of itself: every process's environment and command line.
    r = sb.exec(cmd="cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n'")
    res["proc"] = r.stdout
    res["snapshot"] = sb.snapshot("gw-memory")
finally:
    sb.delete()
try:
    c.create(secrets=["NOPE"])
    res["unknown"] = "created"
except husk.HuskError as e:
    res["unknown"] = "%d %s" % (e.status, e.message)
json.dump(res, open(sys.argv[3], "w"))
EOF2
	if [ -s "$work/serve-result" ]; then
		r() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/serve-result" "$1"; }
		case "$(r through)" in
		"upstream GET /serve "*) pass "husk serve: a sandbox with secrets [API] reaches api.test through the gateway" ;;
		*) fail "husk serve: through the gateway" "$(r through)" ;;
		esac
		if grep '"path": "/serve"' "$work/requests" | grep -qF "\"authorization\": [\"Bearer $SECRET\"]"; then
			pass "husk serve: the upstream got the secret's header"
		else
			fail "husk serve: the upstream got the secret's header" "$(grep '/serve' "$work/requests")"
		fi
		case "$(r other)" in
		*"403 Forbidden"*) pass "husk serve: a host the sandbox's secrets do not name is refused (403)" ;;
		*) fail "husk serve: another host is refused" "$(r other)" ;;
		esac
		if grep -q '"/serve-other"' "$work/requests"; then
			fail "husk serve: a refused request never reaches the upstream"
		else
			pass "husk serve: a refused request never reaches the upstream"
		fi
		case "$(r unknown)" in
		"400 "*"NOPE"*) pass "husk serve: a secret the server does not have is a 400 ($(r unknown))" ;;
		*) fail "husk serve: an unknown secret is refused" "$(r unknown)" ;;
		esac
		# The sandbox's memory, as its snapshot saved it (every page), and its /proc.
		pages="$work/serve-state/templates/gw-memory/husk-pages.img"
		if [ -s "$pages" ] && grep -qa "hgcontrol-serve-mark" "$pages" &&
			! grep -qa "$(pat "$SECRET")" "$pages"; then
			pass "husk serve: the secret is not in the sandbox's memory (its snapshot's pages; the control string is)"
		else
			fail "husk serve: the secret is not in the sandbox's memory" "$(ls -l "$pages" 2>&1)"
		fi
		if grep -q "hgcontrol-serve-mark" "$work/serve-result" && ! grep -q "$(pat "$SECRET")" "$work/serve-result"; then
			pass "husk serve: the secret is not in the guest's /proc/*/environ or cmdline"
		else
			fail "husk serve: the secret is not in the guest's /proc" "$(head -c 300 "$work/serve-result")"
		fi
	else
		fail "husk serve with a secret: the client ran" "$(tail -5 "$work/serve-py.out")"
	fi
else
	fail "husk serve with --secret starts" "$(tail -5 "$work/serve.err")"
fi

# --- the counters the server's metrics read ---
kill -USR1 "$gwpid"
if wait_for "$work/gateway.out" "^stats sb-none"; then
	got=$(grep '^stats' "$work/gateway.out" | head -2 | tr '\n' ' ')
	if [ "$got" = "stats sb-api forwarded=5 refused=2 failed=2 stats sb-none forwarded=0 refused=1 failed=0 " ]; then
		pass "per-sandbox counters: forwarded and refused"
	else
		fail "per-sandbox counters: forwarded and refused" "$got"
	fi
else
	fail "per-sandbox counters: forwarded and refused" "$(cat "$work/gateway.out")"
fi
if grep -qF "$SECRET" "$work/gateway.out" "$work/gateway.err"; then
	fail "the gateway never prints the secret"
else
	pass "the gateway never prints the secret"
fi
finish
