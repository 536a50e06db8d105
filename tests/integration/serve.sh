#!/bin/sh
# husk serve end to end over its unix socket: create a sandbox, exec in it (exit codes, stdin,
# the output guard and the whole output inside the sandbox), bad requests, delete, and nothing
# left behind (the sentry and gofer gone, no STATE/oci entry) while the logs stay.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || { echo "1..0 # SKIP curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 77; }

dir=$(mktemp -d /tmp/husk-serve.XXXXXX)
sock=$dir/s
state=$dir/state
"$HUSK" serve --socket "$sock" --state-dir "$state" 2>"$dir/serve.log" &
server=$!
cleanup() {
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	[ -n "${sb:-}" ] && "$HUSK" --root "$state/oci" delete --force "$sb" >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT

# req METHOD PATH [BODY]: prints the body, then the status on a line of its own.
req() {
	if [ $# -ge 3 ]; then
		curl -s --unix-socket "$sock" -X "$1" -H 'Content-Type: application/json' \
			--data-binary "$3" -w '\n%{http_code}\n' "http://husk$2"
	else
		curl -s --unix-socket "$sock" -X "$1" -w '\n%{http_code}\n' "http://husk$2"
	fi
}
# field JSON EXPR: a Python expression over the parsed JSON `j`.
field() {
	printf '%s' "$1" | python3 -c "import json,sys; j=json.load(sys.stdin); print($2)"
}
body() { printf '%s\n' "$1" | sed '$d'; }
code() { printf '%s\n' "$1" | tail -n 1; }

i=0
until [ -S "$sock" ] && curl -s --unix-socket "$sock" http://husk/v1/health >/dev/null; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$server" 2>/dev/null; then
		fail "the server starts" "$(cat "$dir/serve.log")"
		finish
	fi
	sleep 0.05
done
pass "the server starts"

r=$(req POST /v1/sandboxes '{"labels": {"t": "serve"}, "env": {"FOO": "bar"}}')
if [ "$(code "$r")" = 201 ]; then
	sb=$(field "$(body "$r")" 'j["id"]')
	pass "create: 201 $sb"
else
	fail "create: 201" "$r" "$(cat "$dir/serve.log")"
	finish
fi
st=$(field "$(body "$r")" 'j["state"]')
[ "$st" = running ] && pass "create: running" || fail "create: running" "$r"
pid=$(python3 -c "import json; print(json.load(open('$state/sandboxes/$sb/sandbox.json'))['sentry_pid'])")
[ -d "/proc/$pid" ] && pass "the sentry runs (pid $pid)" || fail "the sentry runs" "pid $pid"

r=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "echo hello $FOO; echo oops >&2; exit 3"}')
out=$(field "$(body "$r")" 'repr((j["stdout"], j["stderr"], j["exit_code"], j["signal"], j["truncated"]))')
want="('hello bar\\n', 'oops\\n', 3, None, False)"
[ "$out" = "$want" ] && pass "exec: output, env and exit code" ||
	fail "exec: output, env and exit code" "want $want" "got $r"

r=$(req POST "/v1/sandboxes/$sb/exec" "{\"cmd\": \"ls -A $state | wc -l\"}")
out=$(field "$(body "$r")" 'j["stdout"].strip()')
[ "$out" = 0 ] && pass "the server's state is hidden from the sandbox" ||
	fail "the server's state is hidden from the sandbox" "$r"

r=$(req POST "/v1/sandboxes/$sb/exec" '{"argv": ["cat"], "stdin": "from stdin"}')
out=$(field "$(body "$r")" 'j["stdout"]')
[ "$out" = "from stdin" ] && pass "exec: stdin" || fail "exec: stdin" "$r"

r=$(req POST "/v1/sandboxes/$sb/exec" '{"argv": ["/no/such/program"]}')
out=$(field "$(body "$r")" 'j["exit_code"]')
[ "$out" = 127 ] && pass "exec: a missing program is 127" || fail "exec: a missing program is 127" "$r"

# The guard: 5000 numbered lines (23893 bytes) with a limit of 1000 bytes.
r=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "seq 1 5000", "max_output_bytes": 1000}')
b=$(body "$r")
out=$(field "$b" 'repr((j["truncated"], j["output"]["stdout_bytes"], j["output"]["stdout_lines"], j["output"]["cut_bytes"]))')
[ "$out" = "(True, 23893, 5000, 22893)" ] && pass "guard: counts" || fail "guard: counts" "$out" "$r"
path=$(field "$b" 'j["output"]["full_output_path"]')
out=$(field "$b" 'j["stdout"].startswith("1\n2\n3\n") and j["stdout"].endswith("4999\n5000\n") and "[husk: 22893 bytes cut; the whole output is in " + j["output"]["full_output_path"] + "]" in j["stdout"] and len(j["stdout"].encode()) < 1200')
[ "$out" = True ] && pass "guard: head, marker and tail" || fail "guard: head, marker and tail" "$r"
r=$(req POST "/v1/sandboxes/$sb/exec" "{\"cmd\": \"grep -c . $path; grep -x 5000 $path\"}")
out=$(field "$(body "$r")" 'j["stdout"]')
# 5000 lines and the two headers.
[ "$out" = "$(printf '5002\n5000')" ] && pass "guard: the whole output is in the sandbox" ||
	fail "guard: the whole output is in the sandbox" "$r"

r=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "printf a; sleep 0.2; printf b", "stream": true}')
out=$(body "$r" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
print("".join(e["data"] for e in ev if e["type"] == "stdout"), ev[-1]["type"], ev[-1]["exit_code"])')
[ "$out" = "ab exit 0" ] && pass "exec: streamed" || fail "exec: streamed" "$r"

r=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "sleep 30", "timeout_s": 0.5}')
out=$(field "$(body "$r")" 'repr((j["timed_out"], j["signal"]))')
[ "$out" = "(True, 9)" ] && pass "exec: timeout kills" || fail "exec: timeout kills" "$r"

# A shell that forked: its child goes too (it held the pipes: the exec would not end).
r=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "sleep 31; true", "timeout_s": 0.5}')
out=$(field "$(body "$r")" 'repr((j["timed_out"], j["signal"]))')
r2=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "ps -e -o args | grep -c \"^sleep 31\""}')
left=$(field "$(body "$r2")" 'j["stdout"].strip()')
[ "$out" = "(True, 9)" ] && [ "$left" = 0 ] && pass "exec: timeout kills the process's children" ||
	fail "exec: timeout kills the process's children" "$r" "$r2"
# A background process that keeps stdout open does not hold the reply.
r=$(req POST "/v1/sandboxes/$sb/exec" '{"cmd": "sleep 32 & echo started"}')
out=$(field "$(body "$r")" 'repr((j["stdout"], j["exit_code"]))')
[ "$out" = "('started\\n', 0)" ] && pass "exec: a background child does not hold the reply" ||
	fail "exec: a background child does not hold the reply" "$r"

r=$(req POST /v1/sandboxes '{"bogus": 1}')
out=$(field "$(body "$r")" 'j["error"]["code"]')
[ "$(code "$r")" = 400 ] && [ "$out" = bad_request ] && pass "unknown field: 400" ||
	fail "unknown field: 400" "$r"
r=$(req POST "/v1/sandboxes/$sb/exec" '{"argv": "ls"')
[ "$(code "$r")" = 400 ] && pass "malformed JSON: 400" || fail "malformed JSON: 400" "$r"
r=$(req POST "/v1/sandboxes/$sb/exec" '{"argv": 7}')
[ "$(code "$r")" = 400 ] && pass "wrong type: 400" || fail "wrong type: 400" "$r"

r=$(req GET "/v1/sandboxes/$sb")
out=$(field "$(body "$r")" 'j["usage"]["syscalls"] > 0 and j["usage"]["pids"] >= 1')
[ "$out" = True ] && pass "usage: syscalls and pids" || fail "usage: syscalls and pids" "$r"

gofer=$(python3 -c "import json; print(json.load(open('$state/oci/$sb/state.json'))['gofer_pid'])")
r=$(req DELETE "/v1/sandboxes/$sb")
[ "$(code "$r")" = 204 ] && pass "delete: 204" || fail "delete: 204" "$r"
gone=1
for p in $pid $gofer; do
	s=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
	[ -z "$s" ] || [ "$s" = Z ] || gone=0
done
[ $gone = 1 ] && pass "delete: the sentry and gofer are gone" ||
	fail "delete: the sentry and gofer are gone" "$(ps -o pid,stat,args -p "$pid,$gofer")"
[ ! -e "$state/oci/$sb" ] && [ ! -e "$state/sandboxes/$sb" ] && pass "delete: no state left" ||
	fail "delete: no state left" "$(ls "$state/oci" "$state/sandboxes")"
r=$(req GET "/v1/sandboxes/$sb")
[ "$(code "$r")" = 404 ] && pass "delete: then 404" || fail "delete: then 404" "$r"
r=$(req GET "/v1/sandboxes/$sb/logs")
out=$(field "$(body "$r")" 'repr((j["deleted"], len(j["execs"])))')
[ "$out" = "(True, 11)" ] && pass "logs: kept after delete" || fail "logs: kept after delete" "$r"
sb=

finish
