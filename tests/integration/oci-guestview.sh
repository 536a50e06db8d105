#!/bin/sh
# What the guest sees matches the config (issue 15): one busybox bundle with mounts in a given
# order (a tmpfs, a bind of a host directory's subdirectory, /dev/shm, /dev/mqueue between the
# usual ones), linux.devices (a char device 1:3 at /dev/mynull mode 0620 uid 1 gid 2, 1:11, a
# block device, a fifo) and device rules, run under runc (when the host has it) and under husk:
# /proc/self/mountinfo and /proc/mounts (mount ids and device numbers normalised; the root, whose
# source differs by design, and /sys/fs/cgroup, which follows the host's cgroup version under runc,
# left out), `ls -ln /dev`, and which opens the rules allow or deny must be the same. Without runc,
# the husk side is checked against what runc shows (the expected lines below).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci-guestview
host=$work/host
mkdir -p "$host/data/sub/dir"
echo "bound" >"$host/data/sub/f"
echo "not for the guest" >"$host/data/sibling"
oci_bundle sh cat ls echo test
# The guest's script: each section after a marker line.
cat >"$bundle/rootfs/bin/look" <<'EOF'
#!/bin/sh
echo @@mountinfo
cat /proc/self/mountinfo
echo @@mounts
cat /proc/mounts
echo @@dev
ls -ln /dev /dev/pts
echo @@open
# open DEVICE r|w: "ok", or the error (EPERM from the rules, EACCES from the mode...).
try() {
	if [ "$2" = r ]; then (exec 3<"$1") 2>/dev/shm/err; else (exec 3>"$1") 2>/dev/shm/err; fi
	st=$?
	[ $st = 0 ] && echo "$1 $2 ok" || echo "$1 $2 $(sed 's/.*: //' /dev/shm/err)"
}
for d in /dev/null /dev/zero /dev/full /dev/urandom /dev/tty /dev/mynull /dev/mykmsg \
	/dev/myloop /dev/ptmx; do
	try $d r
done
try /dev/mykmsg w
try /dev/zero w
echo @@data
ls /data
cat /data/f
echo @@end
EOF
chmod 755 "$bundle/rootfs/bin/look"

python3 - "$bundle/config.json" "$host/data/sub" <<'PY'
import json, sys
p, sub = sys.argv[1:3]
c = json.load(open(p))
c["process"]["args"] = ["/bin/look"]
c["process"]["terminal"] = False
by = {m["destination"]: m for m in c["mounts"]}
tmpfs = {"destination": "/scratch", "type": "tmpfs", "source": "scratchfs",
         "options": ["nosuid", "nodev", "size=1m", "mode=700", "noatime"]}
bind = {"destination": "/data", "type": "bind", "source": sub,
        "options": ["rbind", "ro", "nosuid"]}
# The config's order: proc, /dev, devpts, the tmpfs, the bind, /dev/shm, /dev/mqueue, the rest.
order = ["/proc", "/dev", "/dev/pts"]
c["mounts"] = ([by[d] for d in order] + [tmpfs, bind, by["/dev/shm"], by["/dev/mqueue"]] +
               [m for m in c["mounts"] if m["destination"] not in order + ["/dev/shm", "/dev/mqueue"]])
c["linux"]["maskedPaths"] = []
c["linux"]["readonlyPaths"] = []
c["linux"]["devices"] = [
    {"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3, "fileMode": 0o620, "uid": 1, "gid": 2},
    {"path": "/dev/mykmsg", "type": "c", "major": 1, "minor": 11, "fileMode": 0o666},
    {"path": "/dev/myloop", "type": "b", "major": 7, "minor": 0, "fileMode": 0o660},
    {"path": "/dev/myfifo", "type": "p", "fileMode": 0o640, "uid": 3},
]
# Deny all, allow writes to 1:11, deny /dev/zero (runc's defaults, appended, allow it again).
c["linux"]["resources"] = {"devices": [
    {"allow": False, "access": "rwm"},
    {"allow": True, "type": "c", "major": 1, "minor": 11, "access": "w"},
    {"allow": False, "type": "c", "major": 1, "minor": 5, "access": "rwm"},
]}
json.dump(c, open(p, "w"), indent=1)
PY
cp "$bundle/config.json" "$work/main.json"

# normalise: one section of the guest's output, as compared.
normalise() {
	python3 - "$1" "$2" <<'PY'
import re, sys
section, path = sys.argv[1:3]
text = open(path).read()
m = re.search("@@" + section + "\n(.*?)\n@@", text, re.S)
lines = m.group(1).split("\n") if m else []
skip = lambda mp: mp == "/" or mp.startswith("/sys/fs/cgroup")
if section == "mountinfo":
    at = {}
    rows = []
    for l in lines:
        f = l.split(" ")
        at[f[0]] = f[4]
        rows.append(f)
    for f in rows:
        if skip(f[4]):
            continue
        sep = f.index("-")
        print(f[4], "parent=" + at.get(f[1], "?"), "root=" + f[3], f[5], "-", *f[sep + 1:])
elif section == "mounts":
    for l in lines:
        f = l.split(" ")
        if not skip(f[1]):
            print(l)
elif section == "dev":
    for l in lines:
        f = l.split()
        if len(f) < 3 or l.startswith("total"):
            print(l.strip())
            continue
        name = " ".join(f[8:]) if f[0][0] not in "cb" else " ".join(f[9:])
        dev = f[4] + f[5] if f[0][0] in "cb" else ""
        # Directories' sizes and link counts are the filesystems' own.
        print(f[0], f[2], f[3], dev, name)
else:
    print("\n".join(lines))
PY
}

H run --bundle "$bundle" gv1 >"$work/husk.out" 2>"$work/husk.err"
st=$?
[ $st = 0 ] && pass "husk runs the bundle" ||
	fail "husk runs the bundle" "status $st" "$(head -c 800 "$work/husk.err")"

# What runc shows for this bundle on a cgroup v1 or v2 host (the lines compared).
cat >"$work/want.mountinfo" <<EOF
/proc parent=/ root=/ rw,relatime - proc proc rw
/dev parent=/ root=/ rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
/dev/pts parent=/dev root=/ rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620,ptmxmode=666
/scratch parent=/ root=/ rw,nosuid,nodev,noatime - tmpfs scratchfs rw,size=1024k,mode=700
/data parent=/ root=$host/data/sub ro,nosuid,relatime - BIND
/dev/shm parent=/dev root=/ rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k
/dev/mqueue parent=/dev root=/ rw,nosuid,nodev,noexec,relatime - mqueue mqueue rw
/sys parent=/ root=/ ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
EOF
normalise mountinfo "$work/husk.out" >"$work/husk.mountinfo"
# The bind's filesystem, source and options are the host's: take them from the host.
hostfs=$(df -P "$host/data/sub" | awk 'NR==2 {print $6}')
bindtail=$(awk -v mp="$hostfs" '$5 == mp {for (i = 7; i <= NF; i++) if ($i == "-") {print $(i+1), $(i+2), $(i+3); exit}}' /proc/self/mountinfo)
sed -i "s|- BIND\$|- $bindtail|" "$work/want.mountinfo"
if diff "$work/want.mountinfo" "$work/husk.mountinfo" >"$work/diff" 2>&1; then
	pass "husk's mountinfo: the config's mounts in its order, with their own sources and options"
else
	fail "husk's mountinfo: the config's mounts in its order, with their own sources and options" \
		"$(cat "$work/diff")"
fi
normalise mounts "$work/husk.out" >"$work/husk.mounts"
grep -qx "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0" "$work/husk.mounts" &&
	grep -qx "mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0" "$work/husk.mounts" &&
	grep -qx "devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666 0 0" \
		"$work/husk.mounts" &&
	pass "/proc/mounts: /dev/shm, /dev/mqueue and /dev/pts as runc shows them" ||
	fail "/proc/mounts: /dev/shm, /dev/mqueue and /dev/pts as runc shows them" \
		"$(cat "$work/husk.mounts")"
grep -q "^cgroup /sys/fs/cgroup " "$work/husk.out" &&
	pass "the cgroup mount is at /sys/fs/cgroup with its source" ||
	fail "the cgroup mount is at /sys/fs/cgroup with its source" "$(cat "$work/husk.out")"
[ "$(normalise data "$work/husk.out")" = "dir
f
bound" ] && pass "the bind shows the subdirectory only" ||
	fail "the bind shows the subdirectory only" "$(normalise data "$work/husk.out")"

normalise dev "$work/husk.out" >"$work/husk.dev"
for want in "crw--w---- 1 2 1,3 mynull" "crw-rw-rw- 0 0 1,11 mykmsg" "brw-rw---- 0 0 7,0 myloop" \
	"prw-r----- 3 0  myfifo" "lrwxrwxrwx 0 0  ptmx -> pts/ptmx" "lrwxrwxrwx 0 0  fd -> /proc/self/fd" \
	"lrwxrwxrwx 0 0  stdin -> /proc/self/fd/0" "drwxrwxrwt 0 0  mqueue" "crw-rw-rw- 0 0 5,2 ptmx"; do
	grep -qxF "$want" "$work/husk.dev" && pass "/dev: $want" ||
		fail "/dev: $want" "$(cat "$work/husk.dev")"
done

normalise open "$work/husk.out" >"$work/husk.open"
# husk has no kmsg (1:11) and no block devices: allowed, they answer ENXIO; runc opens them.
cat >"$work/want.open" <<'EOF'
/dev/null r ok
/dev/zero r ok
/dev/full r ok
/dev/urandom r ok
/dev/tty r No such device or address
/dev/mynull r Permission denied
/dev/mykmsg r Operation not permitted
/dev/myloop r Operation not permitted
/dev/ptmx r ok
/dev/mykmsg w No such device or address
/dev/zero w ok
EOF
diff "$work/want.open" "$work/husk.open" >"$work/diff" 2>&1 &&
	pass "opens: the rules' EPERM, the mode's EACCES, ENXIO for what the sentry lacks" ||
	fail "opens: the rules' EPERM, the mode's EACCES, ENXIO for what the sentry lacks" \
		"$(cat "$work/diff")"

# The same bundle under runc: the same view (an allowed device runc has opens there).
if command -v runc >/dev/null 2>&1; then
	runc --root "$work/runc" run -b "$bundle" "gv-$$" >"$work/runc.out" 2>"$work/runc.err"
	st=$?
	runc --root "$work/runc" delete -f "gv-$$" >/dev/null 2>&1
	if [ $st != 0 ]; then
		fail "runc runs the bundle" "status $st" "$(head -c 800 "$work/runc.err")"
	else
		for s in mountinfo mounts dev; do
			normalise $s "$work/runc.out" >"$work/runc.$s"
		done
		diff "$work/runc.mountinfo" "$work/husk.mountinfo" >"$work/diff" 2>&1 &&
			pass "mountinfo as runc's" || fail "mountinfo as runc's" "$(cat "$work/diff")"
		diff "$work/runc.mounts" "$work/husk.mounts" >"$work/diff" 2>&1 &&
			pass "/proc/mounts as runc's" ||
			fail "/proc/mounts as runc's" "$(cat "$work/diff")"
		# Directory entries: the same names, types, modes, owners and device numbers.
		grep -v '^d' "$work/runc.dev" >"$work/runc.devf"
		grep -v '^d' "$work/husk.dev" >"$work/husk.devf"
		diff "$work/runc.devf" "$work/husk.devf" >"$work/diff" 2>&1 &&
			pass "ls -ln /dev as runc's" || fail "ls -ln /dev as runc's" "$(cat "$work/diff")"
		normalise open "$work/runc.out" | sed -e 's|^\(/dev/mykmsg w\) ok$|\1 No such device or address|' \
			-e 's|^\(/dev/tty r\) .*|\1 No such device or address|' >"$work/runc.open"
		diff "$work/runc.open" "$work/husk.open" >"$work/diff" 2>&1 &&
			pass "opens allowed and denied as under runc" ||
			fail "opens allowed and denied as under runc" "$(cat "$work/diff")"
	fi
else
	echo "ok - SKIP the comparison with runc: no runc on this host"
fi
# process.terminal: /dev/console is the console (the pty whose master the console socket gets).
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = True
c["process"]["args"] = ["sh", "-c", "echo via-console >/dev/console; test -c /dev/console && echo is-chr"]
json.dump(c, open(p, "w"), indent=1)
PY
# console_run RUNTIME ROOT ID: creates and starts ID with a console socket; prints its output.
console_run() {
	python3 - "$1" "$2" "$bundle" "$work/console-$3.sock" "$3" <<'PY'
import os, socket, subprocess, sys, time
rt, root, bundle, path, cid = sys.argv[1:6]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
p = subprocess.Popen([rt, "--root", root, "create", "--bundle", bundle, "--console-socket", path, cid])
conn, _ = srv.accept()
msg, fds, _, _ = socket.recv_fds(conn, 4096, 1)
if p.wait() != 0 or len(fds) != 1:
    print("create failed or no fd"); sys.exit(1)
subprocess.run([rt, "--root", root, "start", cid], check=True)
out = b""
deadline = time.time() + 60
while time.time() < deadline and b"is-chr" not in out:
    try:
        d = os.read(fds[0], 4096)
    except OSError:
        break
    if not d:
        break
    out += d
print(out.decode(errors="replace").replace("\r", "").strip())
PY
}
out=$(console_run "$HUSK" "$root" gvc)
H delete --force gvc >/dev/null 2>&1
[ "$out" = "via-console
is-chr" ] && pass "with a terminal, /dev/console is the console" ||
	fail "with a terminal, /dev/console is the console" "$out"
if command -v runc >/dev/null 2>&1; then
	rout=$(console_run runc "$work/runc" "gvc-$$")
	runc --root "$work/runc" delete -f "gvc-$$" >/dev/null 2>&1
	[ "$rout" = "$out" ] && pass "/dev/console as under runc" ||
		fail "/dev/console as under runc" "runc: $rout" "husk: $out"
fi
# maskedPaths and readonlyPaths on /proc nodes take effect (as runc's): /proc/sys read-only,
# /proc/uptime masked by an empty file.
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["sh", "-c", "echo 1 2>&1 >/proc/sys/net/core/somaxconn | sed 's/.*: //'; echo \"[$(cat /proc/uptime)]\""]
c["linux"]["readonlyPaths"] = ["/proc/sys"]
c["linux"]["maskedPaths"] = ["/proc/uptime"]
json.dump(c, open(p, "w"), indent=1)
PY
expect_output "readonlyPaths and maskedPaths on /proc nodes" "Read-only file system
[]" 0 -- H run --bundle "$bundle" gvp
if command -v runc >/dev/null 2>&1; then
	expect_output "readonlyPaths and maskedPaths on /proc nodes under runc" "Read-only file system
[]" 0 -- runc --root "$work/runc" run -b "$bundle" "gvp-$$"
	runc --root "$work/runc" delete -f "gvp-$$" >/dev/null 2>&1
fi
# A checkpoint and restore keep the view: the same mount table, /dev and device rules.
cp "$work/main.json" "$bundle/config.json"
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = ["sh", "-c", "while :; do sleep 1; done"]
json.dump(c, open(p, "w"), indent=1)
PY
view() { H exec gvr sh -c 'cat /proc/self/mountinfo; ls -ln /dev; (exec 3</dev/mykmsg) 2>&1 | sed "s/.*: //"'; }
if H run -d --bundle "$bundle" gvr </dev/null >/dev/null 2>&1 && view >"$work/before" &&
	H checkpoint --image-path "$work/img" gvr 2>"$work/err" &&
	H restore -d --image-path "$work/img" --bundle "$bundle" gvr </dev/null >/dev/null 2>>"$work/err"; then
	view >"$work/after"
	# ls -l's times are the restored /dev's own.
	sed -i 's/ [A-Z][a-z][a-z] [ 0-9][0-9] [0-9:]* / /' "$work/before" "$work/after"
	grep -q "Operation not permitted" "$work/after" && diff "$work/before" "$work/after" >"$work/diff" 2>&1 &&
		pass "a restored container sees the same mounts, /dev and rules" ||
		fail "a restored container sees the same mounts, /dev and rules" "$(cat "$work/diff")"
else
	fail "checkpoint and restore of the bundle" "$(cat "$work/err")"
fi
H delete --force gvr >/dev/null 2>&1
finish
