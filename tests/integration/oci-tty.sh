#!/bin/sh
# process.terminal with --console-socket, as containerd's shim drives it (tty: true), under husk
# and under runc on the same bundle:
# - create's stdout and stderr (one pipe) read end of file once create has returned: no helper
#   process of the runtime (gofer, sentry) keeps them open, or the shim would wait forever;
#   a create that fails says why there, not on the container's terminal;
# - the container sees its terminal as /dev/pts/0: tty, readlink /proc/self/fd/0, the device
#   number of /dev/pts/0, fstat(0) the same file as stat(/dev/pts/0), /dev/pts's entries,
#   /dev/console a terminal of its own name;
# - a window size change on the pty master (the shim's ResizePty) reaches it: SIGWINCH in its
#   foreground group, the new size from TIOCGWINSZ (stty size);
# - husk exec -t's pty is /dev/pts/N while the exec'd process runs, and no longer after.
# Without runc the husk side is checked against the lines runc prints (below).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup tty
# runc names a container's cgroup /ID (no cgroupsPath in the bundle): ids of this run's own, so
# that two runs at once (two make checks) never share one.
run=${work##*.}
oci_bundle sh sleep stat readlink tty stty echo
check="$(cd "$(dirname "$0")" && pwd)/oci_tty_check.py"

# terminal_args ARG...: the process runs ARG... on a terminal (the console socket's pty).
terminal_args() {
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = sys.argv[2:]
c["process"]["terminal"] = True
c["root"]["readonly"] = False
json.dump(c, open(p, "w"), indent=1)
PY
}

have_runc=false
command -v runc >/dev/null 2>&1 && have_runc=true
RUNC_ROOT=$work/runc

# 1. create's output pipe reaches EOF once create returned.
terminal_args sleep 1000
out=$(python3 "$check" eof "$HUSK" "$root" "$bundle" "tty-eof-$run" "$work/c.sock" 2>&1)
[ "$out" = eof ] && pass "husk create with a console: its stdout/stderr pipe reads EOF after create" ||
	fail "husk create with a console: its stdout/stderr pipe reads EOF after create" "$out"
if $have_runc; then
	out=$(python3 "$check" eof runc "$RUNC_ROOT" "$bundle" "tty-eof-$run" "$work/c.sock" 2>&1)
	[ "$out" = eof ] && pass "runc create with a console: the pipe reads EOF too" ||
		fail "runc create with a console: the pipe reads EOF too" "$out"
fi
# The same without a console: the pipe is the container's stdio and stays open (both runtimes).
python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
json.dump(c, open(p, "w"), indent=1)
PY
out=$(python3 - "$HUSK" "$root" "$bundle" <<'PY'
import os, select, subprocess, sys
husk, root, bundle = sys.argv[1:4]
r, w = os.pipe()
p = subprocess.Popen([husk, "--root", root, "create", "--bundle", bundle, "tty-plain"],
                     stdout=w, stderr=w, stdin=subprocess.DEVNULL)
os.close(w)
p.wait()
# The guest (sleep) holds it: nothing to read, no EOF.
ready, _, _ = select.select([r], [], [], 0)
print("open" if not ready else "readable")
PY
)
H delete --force tty-plain >/dev/null 2>&1
[ "$out" = open ] && pass "without a console the pipe is the guest's stdio (still open)" ||
	fail "without a console the pipe is the guest's stdio (still open)" "$out"

# 1b. A failing create with a console: the sentry's reason is on create's stderr (it kept husk's
# stderr until it was ready), not on the container's terminal, as runc's create prints it.
terminal_args /nope
printf 'create failed\nstderr names it\nconsole: %s\n' "b''" >"$work/want.fail"
if $have_runc; then
	python3 "$check" fail runc "$RUNC_ROOT" "$bundle" "tty-fail-$run" "$work/c.sock" >"$work/runc.fail" 2>&1
	diff "$work/want.fail" "$work/runc.fail" >"$work/diff" 2>&1 &&
		pass "runc: a failing create with a console says why on its stderr" ||
		fail "runc: a failing create with a console says why on its stderr" "$(cat "$work/diff")"
fi
python3 "$check" fail "$HUSK" "$root" "$bundle" "tty-fail-$run" "$work/c.sock" >"$work/husk.fail" 2>&1
diff "$work/want.fail" "$work/husk.fail" >"$work/diff" 2>&1 &&
	pass "a failing create with a console says why on its stderr, not on the terminal (as runc)" ||
	fail "a failing create with a console says why on its stderr, not on the terminal (as runc)" \
		"$(cat "$work/diff")"

# 2. What the guest sees of its terminal, and a resize: one KEY=VALUE line each.
terminal_args sh -c '
echo "tty=$(tty 2>&1)"
echo "fd0=$(readlink /proc/self/fd/0 2>&1)"
echo "rdev=$(stat -c %t:%T -L /dev/pts/0 2>&1)"
[ "$(stat -L -c %d:%i /proc/self/fd/0)" = "$(stat -c %d:%i /dev/pts/0 2>&1)" ] && echo same=yes || echo same=no
set -- /dev/pts/*; echo "ls=$*"
echo "console=$(tty </dev/console 2>&1)"
echo "reopen=$(tty </dev/pts/0 2>&1)"
echo "size=$(stty size 2>&1)"
read -r _ _ _ _ _ _ nr _ </proc/self/stat; echo "ttynr=$nr"
trap "echo winch=\$(stty size); echo done; exit 0" WINCH
echo ready
while :; do sleep 1; done'
# What runc 1.1 prints for it (checked against runc when the host has it).
cat >"$work/want" <<'EOF'
tty=/dev/pts/0
fd0=/dev/pts/0
rdev=88:0
same=yes
ls=/dev/pts/0 /dev/pts/ptmx
console=/dev/console
reopen=/dev/pts/0
size=24 80
ttynr=34816
ready
winch=33 101
EOF
python3 "$check" probe "$HUSK" "$root" "$bundle" "tty-probe-$run" "$work/c.sock" >"$work/husk.out" 2>&1
if $have_runc; then
	python3 "$check" probe runc "$RUNC_ROOT" "$bundle" "tty-probe-$run" "$work/c.sock" >"$work/runc.out" 2>&1
	diff "$work/want" "$work/runc.out" >"$work/diff" 2>&1 &&
		pass "runc shows the expected terminal" ||
		fail "runc shows the expected terminal" "$(cat "$work/diff")"
fi
# Key by key against runc's lines, so that a failure names what differs.
while IFS= read -r want; do
	key=${want%%=*}
	got=$(grep -m1 "^$key" "$work/husk.out")
	case $key in
	tty) what="tty names /dev/pts/0" ;;
	fd0) what="/proc/self/fd/0 is /dev/pts/0" ;;
	rdev) what="/dev/pts/0 is 136:0" ;;
	same) what="fstat(0) is stat(/dev/pts/0)" ;;
	ls) what="/dev/pts lists 0 and ptmx" ;;
	console) what="/dev/console is a terminal" ;;
	reopen) what="opening /dev/pts/0 gives the terminal" ;;
	size) what="the first window size" ;;
	ttynr) what="/proc/self/stat's tty_nr is 136:0's" ;;
	ready) what="the shell runs" ;;
	winch) what="a resize of the master: SIGWINCH and the new size" ;;
	*) what="$key" ;;
	esac
	[ "$got" = "$want" ] && pass "$what (as runc)" ||
		fail "$what (as runc)" "runc: $want" "husk: $got" "all: $(head -c 800 "$work/husk.out")"
done <"$work/want"

# 3. husk exec -t in a container without a console: its pty is /dev/pts/0 while it runs, and
# the entry goes with it (nothing keeps the pty's slave: husk exec sees the hang-up and returns).
set_args sleep 1000
cat >"$work/pty_run.py" <<'EOF'
import os, pty, select, sys, time
# Runs argv on a new pty (its controlling terminal); prints what it wrote without CRs.
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
buf = b""
# PTY_INTR=WORD: once the output holds WORD, type ^C (once); then print the exit status.
intr = os.environ.get("PTY_INTR", "").encode()
end = time.monotonic() + 60 * float(os.environ.get("HUSK_TEST_TIMEOUT_SCALE", "1"))
while time.monotonic() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        buf += d
        if intr and intr in buf:
            os.write(fd, b"\x03")
            intr = b""
out = buf.decode(errors="replace").replace("\r", "")
if os.environ.get("PTY_INTR"):
    out = out.replace("^C", "")  # the echo of the ^C typed
sys.stdout.write(out)
if os.environ.get("PTY_INTR"):
    print("status=%d" % os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
EOF
exec_view() { # RUNTIME ROOT
	"$1" --root "$2" run -d --bundle "$bundle" "tty-exec-$run" </dev/null >/dev/null 2>&1 || return
	python3 "$work/pty_run.py" "$1" --root "$2" exec -t "tty-exec-$run" sh -c 'tty; echo /dev/pts/*'
	# A session leader that opens it (without O_NOCTTY) has it as controlling terminal.
	python3 "$work/pty_run.py" "$1" --root "$2" exec -t "tty-exec-$run" sh -c \
		'exec 3</dev/pts/0; read -r _ _ _ _ _ _ nr _ </proc/self/stat; echo "ctty=$nr"'
	# Without opening it: the exec'd process's controlling terminal is its pty already.
	python3 "$work/pty_run.py" "$1" --root "$2" exec -t "tty-exec-$run" sh -c \
		'read -r _ _ _ _ _ _ nr _ </proc/self/stat; echo "ctty0=$nr"'
	# ^C typed on the pty interrupts the exec'd process (sleep 30 would end with 0).
	PTY_INTR=ready python3 "$work/pty_run.py" "$1" --root "$2" exec -t "tty-exec-$run" sh -c \
		'echo ready; exec sleep 30'
	"$1" --root "$2" exec "tty-exec-$run" sh -c 'echo after: /dev/pts/*'
	"$1" --root "$2" delete -f "tty-exec-$run" >/dev/null 2>&1
}
cat >"$work/want.exec" <<'EOF'
/dev/pts/0
/dev/pts/0 /dev/pts/ptmx
ctty=34816
ctty0=34816
ready
status=130
after: /dev/pts/ptmx
EOF
if $have_runc; then
	exec_view runc "$RUNC_ROOT" >"$work/runc.exec" 2>&1
	diff "$work/want.exec" "$work/runc.exec" >"$work/diff" 2>&1 &&
		pass "runc exec -t: the expected terminal" ||
		fail "runc exec -t: the expected terminal" "$(cat "$work/diff")"
fi
exec_view "$HUSK" "$root" >"$work/husk.exec" 2>&1
diff "$work/want.exec" "$work/husk.exec" >"$work/diff" 2>&1 &&
	pass "exec -t: its pty is /dev/pts/0 while it runs, gone after (as runc)" ||
	fail "exec -t: its pty is /dev/pts/0 while it runs, gone after (as runc)" "$(cat "$work/diff")"

finish
