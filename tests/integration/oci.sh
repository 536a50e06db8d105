#!/bin/sh
# The OCI runtime's lifecycle with a busybox bundle made by `husk spec`: run, create/start/state/
# list/kill/delete, errors as runc words them, and cleanup after delete, kill -9 of the sentry
# and a failed create (no processes, cgroups or state left).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci

oci_bundle sh echo sleep cat true false
# The template wants a terminal (as runc's); these tests use plain stdio.
set_args() {
	sed -i -e 's/"terminal": true/"terminal": false/' "$bundle/config.json"
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = sys.argv[2:]
json.dump(c, open(p, "w"), indent=1)
PY
}

expect_status "spec refuses to overwrite config.json" 1 -- sh -c "cd '$bundle' && '$HUSK' spec"

# Live (non-zombie) host processes of the container's sentry/gofer, by the pids husk recorded.
live() {
	for p in "$@"; do
		st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
		[ -n "$st" ] && [ "$st" != Z ] && echo "$p"
	done
}
status_of() { H state "$1" 2>/dev/null | sed -n 's/.*"status": "\(.*\)".*/\1/p'; }
pid_of() { H state "$1" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'; }
gofer_of() { sed -n 's/.*"gofer_pid": \([0-9]*\).*/\1/p' "$root/$1/state.json"; }

set_args echo hi
expect_output "run prints the process's output" "hi" 0 -- H run --bundle "$bundle" r1
expect_status "run leaves no state behind" 1 -- H state r1
set_args sh -c 'exit 3'
expect_status "run exits with the container's status" 3 -- H run --bundle "$bundle" r2

set_args sleep 1000
expect_status "create" 0 -- H create --bundle "$bundle" --pid-file "$work/pid" c1
pid=$(pid_of c1)
gofer=$(gofer_of c1)
if [ "$(status_of c1)" = created ] && [ "$(cat "$work/pid")" = "$pid" ] && [ -n "$(live "$pid")" ]; then
	pass "state after create is created, pid file is the live sentry"
else
	fail "state after create" "$(H state c1 2>&1)" "pid file: $(cat "$work/pid" 2>&1)"
fi
if [ -n "$(cgroups_of c1)" ] && grep -qx "$pid" $(cgroups_of c1 | head -n 1)/cgroup.procs; then
	pass "the sentry is in the container's cgroup"
else
	fail "the sentry is in the container's cgroup" "$(cgroups_of c1)"
fi
expect_status "create with an existing id fails" 1 -- H create --bundle "$bundle" c1
out=$(H create --bundle "$bundle" c1 2>&1)
case "$out" in *"container with id exists: c1"*) pass "duplicate id message as runc" ;;
*) fail "duplicate id message as runc" "$out" ;; esac
expect_status "start" 0 -- H start c1
[ "$(status_of c1)" = running ] && pass "state after start is running" ||
	fail "state after start is running" "$(H state c1 2>&1)"
expect_status "start twice fails" 1 -- H start c1
H list | grep -qE "^c1 +$pid +running +$bundle " && pass "list shows it running" ||
	fail "list shows it running" "$(H list 2>&1)"
[ "$(H list -q)" = c1 ] && pass "list -q" || fail "list -q" "$(H list -q 2>&1)"
H list --format json | grep -q '"id":"c1","pid":'"$pid"',"status":"running"' &&
	pass "list --format json" || fail "list --format json" "$(H list --format json 2>&1)"
expect_status "delete of a running container needs --force" 1 -- H delete c1
expect_status "kill KILL" 0 -- H kill c1 KILL
n=0
while [ "$(status_of c1)" != stopped ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ "$(status_of c1)" = stopped ] && [ "$(pid_of c1)" = 0 ] && pass "state after kill is stopped" ||
	fail "state after kill is stopped" "$(H state c1 2>&1)"
out=$(H kill c1 KILL 2>&1)
[ $? -ne 0 ] && case "$out" in *"container not running"*) true ;; *) false ;; esac &&
	pass "kill of a stopped container: container not running" || fail "kill stopped" "$out"
cg=$(cgroups_of c1)
expect_status "delete" 0 -- H delete c1
out=$(H state c1 2>&1)
[ $? -ne 0 ] && case "$out" in *"container c1 does not exist"*) true ;; *) false ;; esac &&
	pass "state after delete: does not exist" || fail "state after delete" "$out"
if [ -z "$(live $pid $gofer)" ] && [ -z "$(cgroups_of c1)" ] && [ ! -e "$root/c1" ]; then
	pass "delete leaves no process, cgroup or state"
else
	fail "delete leaves nothing" "live: $(live $pid $gofer)" "cgroups: $(cgroups_of c1)" "$(ls $root)"
fi

# kill -9 of the sentry behind husk's back: stopped, and delete cleans up.
H create --bundle "$bundle" c2 >/dev/null 2>&1 && H start c2
pid=$(pid_of c2)
gofer=$(gofer_of c2)
kill -9 "$pid"
n=0
while [ "$(status_of c2)" != stopped ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ "$(status_of c2)" = stopped ] && pass "a killed sentry shows as stopped" ||
	fail "a killed sentry shows as stopped" "$(H state c2 2>&1)"
n=0
while [ -n "$(live $gofer)" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -z "$(live $gofer)" ] && pass "the gofer exits with the sentry" || fail "gofer left" "$gofer"
H delete c2
if [ -z "$(cgroups_of c2)" ] && [ ! -e "$root/c2" ]; then
	pass "delete after kill -9 leaves no cgroup or state"
else
	fail "delete after kill -9" "$(cgroups_of c2)" "$(ls $root)"
fi

# delete --force of a running container; delete of a created one.
H create --bundle "$bundle" c3 >/dev/null 2>&1 && H start c3
pid=$(pid_of c3)
expect_status "delete --force of a running container" 0 -- H delete --force c3
[ -z "$(live $pid)" ] && [ ! -e "$root/c3" ] && pass "delete --force kills and cleans" ||
	fail "delete --force kills and cleans" "$(live $pid)"
H create --bundle "$bundle" c4 >/dev/null 2>&1
pid=$(pid_of c4)
expect_status "delete of a created container" 0 -- H delete c4
[ -z "$(live $pid)" ] && pass "delete of a created container kills its sentry" ||
	fail "delete of created" "$(live $pid)"

# pause/resume through the freezer.
H create --bundle "$bundle" c5 >/dev/null 2>&1 && H start c5
if H pause c5 2>/dev/null; then
	[ "$(status_of c5)" = paused ] && H resume c5 && [ "$(status_of c5)" = running ] &&
		pass "pause and resume" || fail "pause and resume" "$(H state c5 2>&1)"
else
	echo "ok - SKIP pause: no freezer cgroup on this host"
fi
H delete --force c5

# A program that does not exist fails at create, leaving nothing.
set_args /no/such/program
expect_status "create of a missing program fails" 1 -- H create --bundle "$bundle" c6
[ ! -e "$root/c6" ] && [ -z "$(cgroups_of c6)" ] && pass "failed create leaves nothing" ||
	fail "failed create leaves nothing" "$(ls $root)"

# Broken configs: a message naming the field, no state left.
set_args echo hi
sed -i 's/"cwd": "\/"/"cwd": 7/' "$bundle/config.json"
out=$(H create --bundle "$bundle" c7 2>&1)
case "$out" in *"config.json: process.cwd: expected a string, got an integer"*)
	pass "a wrong type names the field" ;;
*) fail "a wrong type names the field" "$out" ;; esac
[ ! -e "$root/c7" ] && pass "a broken config leaves no state" || fail "broken config state"
expect_status "unknown container: state" 1 -- H state nope
expect_status "checkpoint is not supported yet" 1 -- H checkpoint c1
H features | grep -q '"ociVersionMax": "1.0.2"' && pass "features" || fail "features"


sed -i 's/"cwd": 7/"cwd": "\/"/' "$bundle/config.json"

# config.json mounts: a directory bind (ro), a tmpfs with size and mode; the writable overlay.
mkdir -p "$work/vol" && echo volfile >"$work/vol/f"
python3 - "$bundle/config.json" "$work/vol" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["root"]["readonly"] = False
c["mounts"] += [{"destination": "/data", "type": "bind", "source": sys.argv[2],
                 "options": ["rbind", "ro"]},
                {"destination": "/scratch", "type": "tmpfs", "source": "tmpfs",
                 "options": ["size=1m", "mode=700"]}]
json.dump(c, open(p, "w"), indent=1)
PY
set_args sh -c 'cat /data/f; echo x >/data/y || echo ro; stat -c %a /scratch; echo w >/w && cat /w'
expect_output "bind and tmpfs mounts, writable overlay root" "volfile
ro
700
w" 0 -- H run --bundle "$bundle" m1
if [ ! -e "$work/vol/y" ] && [ ! -e "$bundle/rootfs/w" ]; then
	pass "writes stay in the sandbox"
else
	fail "writes stay in the sandbox" "$(ls "$work/vol" "$bundle/rootfs")"
fi

# exec and ps over the control socket.
set_args sleep 1000
H run -d --bundle "$bundle" e1 >/dev/null 2>&1
expect_output "exec prints the process's output" "hi from exec" 0 -- H exec e1 echo hi from exec
expect_status "exec returns the process's status" 7 -- H exec e1 sh -c 'exit 7'
expect_output "exec gets the container's env and --env" "/bin:/usr/bin x" 0 \
	-- H exec --env PATH=/bin:/usr/bin --env X=x e1 sh -c 'echo $PATH $X'
expect_output "exec --cwd" "/data" 0 -- H exec --cwd /data e1 sh -c pwd
expect_status "exec of a missing program is 127" 127 -- H exec e1 /no/such
out=$(H exec e1 nosuch 2>&1)
case "$out" in *'executable file not found in $PATH'*) pass "exec failure worded as runc" ;;
*) fail "exec failure worded as runc" "$out" ;; esac
expect_output "exec sees the stdin it is given" "piped" 0 -- sh -c "echo piped | '$HUSK' --root '$root' exec e1 cat"
expect_status "exec --detach returns at once" 0 -- H exec -d --pid-file "$work/epid" e1 sleep 1000
epid=$(cat "$work/epid" 2>/dev/null)
if [ -n "$epid" ] && kill -0 "$epid" 2>/dev/null; then
	pass "exec --pid-file names a live host process (the exec proxy)"
else
	fail "exec --pid-file names a live host process" "$epid"
fi
out=$(H ps e1)
if echo "$out" | grep -q '^UID' && echo "$out" | awk '$2 == 1 && $NF == "sleep"' | grep -q . &&
	[ "$(echo "$out" | grep -c ' sleep$')" -ge 2 ]; then
	pass "ps lists the guest's processes (pid 1 and the exec'd one)"
else
	fail "ps lists the guest's processes" "$out"
fi
out=$(H ps --format json e1)
case "$out" in "[1,"*"]") pass "ps --format json lists guest pids" ;;
*) fail "ps --format json lists guest pids" "$out" ;; esac
H kill e1 KILL >/dev/null 2>&1
for i in $(seq 50); do [ "$(status_of e1)" = stopped ] && break; sleep 0.1; done
for i in $(seq 50); do kill -0 "$epid" 2>/dev/null || break; sleep 0.1; done
if ! kill -0 "$epid" 2>/dev/null; then
	pass "the exec proxy ends with the sandbox"
else
	fail "the exec proxy ends with the sandbox"
fi
H delete --force e1 >/dev/null 2>&1
expect_status "exec in a deleted container fails" 1 -- H exec e1 true

# root.readonly: the root is read-only inside.
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["root"]["readonly"] = True
json.dump(c, open(p, "w"), indent=1)
PY
set_args sh -c 'echo x >/w 2>/dev/null || echo readonly'
expect_output "root.readonly makes the root read-only" "readonly" 0 -- H run --bundle "$bundle" ro1


# --console-socket: a receiver gets the pty master by SCM_RIGHTS and reads the container's output.
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["root"]["readonly"] = False
c["process"]["terminal"] = True
c["process"]["args"] = ["sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo on-a-tty"]
json.dump(c, open(p, "w"), indent=1)
PY
out=$(python3 - "$HUSK" "$root" "$bundle" "$work/console.sock" <<'PY'
import os, socket, subprocess, sys, time
husk, root, bundle, path = sys.argv[1:5]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
p = subprocess.Popen([husk, "--root", root, "create", "--bundle", bundle,
                      "--console-socket", path, "t1"])
conn, _ = srv.accept()
msg, fds, _, _ = socket.recv_fds(conn, 4096, 1)
if p.wait() != 0 or len(fds) != 1:
    print("create failed or no fd"); sys.exit(1)
print("name=" + ("pts" if msg.startswith(b"/dev/pts/") else repr(msg)))
subprocess.run([husk, "--root", root, "start", "t1"], check=True)
out = b""
deadline = time.time() + 30
while time.time() < deadline and b"on-a-tty" not in out:
    try:
        d = os.read(fds[0], 4096)
    except OSError:
        break
    if not d:
        break
    out += d
print(out.decode(errors="replace").strip())
PY
)
H delete --force t1 >/dev/null 2>&1
if [ "$out" = "name=pts
on-a-tty" ]; then
	pass "console socket: the pty master arrives and carries the container's output"
else
	fail "console socket" "$out"
fi

# Hooks end to end: each gets the state JSON on stdin, in order, with the right status.
cat >"$work/hook.sh" <<EOT
#!/bin/sh
echo "\$1 \$(sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p')" >>"$work/hooks.log"
EOT
chmod +x "$work/hook.sh"
python3 - "$bundle/config.json" "$work/hook.sh" <<'PY'
import json, sys
p, hook = sys.argv[1:3]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["sleep", "1"]
c["hooks"] = {k: [{"path": hook, "args": ["hook.sh", k], "timeout": 10}]
              for k in ["prestart", "createRuntime", "createContainer", "startContainer",
                        "poststart", "poststop"]}
json.dump(c, open(p, "w"), indent=1)
PY
rm -f "$work/hooks.log"
H run --bundle "$bundle" h1 >/dev/null 2>&1
want="prestart created
createRuntime created
createContainer created
startContainer created
poststart running
poststop stopped"
got=$(cat "$work/hooks.log" 2>/dev/null)
if [ "$got" = "$want" ]; then
	pass "hooks run in order with the state on stdin"
else
	fail "hooks run in order with the state on stdin" "$got"
fi

# linux.seccomp, applied by the sentry: a profile that denies mkdir/mkdirat with EPERM.
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c.pop("hooks", None)
c["process"]["terminal"] = False
c["linux"]["seccomp"] = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "syscalls": [
        {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
        {"names": ["personality"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22,
         "args": [{"index": 0, "value": 255, "op": "SCMP_CMP_EQ"}]},
        {"names": ["no_such_call_here"], "action": "SCMP_ACT_KILL"},
    ],
}
json.dump(c, open(p, "w"), indent=1)
PY
set_args sh -c 'busybox mkdir /x 2>&1; [ -d /x ] && echo made; busybox touch /y && echo touched'
expect_output "seccomp profile denies mkdir with EPERM" \
	"mkdir: can't create directory '/x': Operation not permitted
touched" 0 -- H run --bundle "$bundle" sc1
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [{"names": ["sync"], "action": "SCMP_ACT_KILL_PROCESS"}]}
json.dump(c, open(p, "w"), indent=1)
PY
set_args sh -c 'busybox sh -c "busybox sync"; echo "status $?"'
expect_output "SCMP_ACT_KILL_PROCESS kills the caller with SIGSYS" "status 159" 0 -- \
	H run --bundle "$bundle" sc2
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
del c["linux"]["seccomp"]
c["process"]["capabilities"] = {"bounding": ["CAP_CHOWN", "CAP_KILL"],
    "effective": ["CAP_CHOWN"], "permitted": ["CAP_CHOWN"]}
c["process"]["noNewPrivileges"] = True
json.dump(c, open(p, "w"), indent=1)
PY
set_args sh -c 'busybox grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status'
expect_output "process.capabilities and noNewPrivileges reach the guest" "CapEff:	0000000000000001
CapBnd:	0000000000000021
NoNewPrivs:	1" 0 -- H run --bundle "$bundle" cap1

# maskedPaths and readonlyPaths, applied by the sentry: an empty read-only directory, an empty
# read-only file, a read-only bind (EROFS); the rest of the root stays writable.
mkdir -p "$bundle/rootfs/secret" "$bundle/rootfs/etc" "$bundle/rootfs/ro"
echo s >"$bundle/rootfs/secret/f"
echo hidden >"$bundle/rootfs/etc/secretfile"
echo r >"$bundle/rootfs/ro/f"
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"].pop("capabilities", None)
c["process"]["noNewPrivileges"] = False
c["root"]["readonly"] = False
c["linux"]["maskedPaths"] = c["linux"].get("maskedPaths", []) + ["/secret", "/etc/secretfile"]
c["linux"]["readonlyPaths"] = c["linux"].get("readonlyPaths", []) + ["/ro"]
json.dump(c, open(p, "w"), indent=1)
PY
set_args sh -c 'echo "[$(busybox ls -A /secret)]"; echo "[$(cat /etc/secretfile)]"
echo x 2>&1 >/secret/n | busybox grep -o "Read-only file system"
echo x 2>&1 >/ro/f | busybox grep -o "Read-only file system"; cat /ro/f; echo w >/w && cat /w'
expect_output "maskedPaths read empty, readonlyPaths give EROFS" "[]
[]
Read-only file system
Read-only file system
r
w" 0 -- H run --bundle "$bundle" mp1
[ "$(cat "$bundle/rootfs/secret/f" "$bundle/rootfs/ro/f")" = "s
r" ] && pass "masked and read-only paths keep their host contents" ||
	fail "masked and read-only paths keep their host contents"

# linux.resources.pids.limit, enforced by the sentry: 5 guest processes, the 6th fork is EAGAIN.
pids_script='sleep 1 | sleep 1 | sleep 1 | sleep 1; echo four=$?
sh -c "sleep 1 | sleep 1 | sleep 1 | sleep 1" 2>&1; echo five=$?'
set_args sh -c "$pids_script"
expect_output "without a pids limit six processes run" "four=0
five=0" 0 -- H run --bundle "$bundle" pl0
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"].setdefault("resources", {})["pids"] = {"limit": 5}
json.dump(c, open(p, "w"), indent=1)
PY
expect_output "pids limit 5: the 6th process's fork fails with EAGAIN" "four=0
sh: can't fork: Resource temporarily unavailable
five=2" 0 -- H run --bundle "$bundle" pl1

finish
