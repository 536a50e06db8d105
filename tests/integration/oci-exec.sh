#!/bin/sh
# husk exec as engines drive it, with a busybox bundle: signals sent to the exec proxy reach the
# exec'd process (non-detached and --detach), and --preserve-fds / $LISTEN_FDS hand host fds
# (a file, a pipe, a socket) to pid 1 (run) and to exec'd processes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci-exec

oci_bundle sh echo sleep cat true touch ls stty
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

# Waits (up to 20 s) until /dev/shm/$2 exists in container $1 (a process says it is ready).
wait_marker() {
	i=0
	while [ $i -lt 200 ]; do
		H exec "$1" ls "/dev/shm/$2" >/dev/null 2>&1 && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# Waits (up to 20 s) for host process $1 to end; returns 1 if it is still there.
wait_gone() {
	i=0
	while [ $i -lt 200 ]; do
		st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
		[ -z "$st" ] || [ "$st" = Z ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# --- signals through husk exec ---
set_args sleep 1000
expect_status "run -d a long-running container" 0 -- H run -d --bundle "$bundle" e1

# SIGTERM to a non-detached husk exec reaches the shell's trap; husk exec exits with its status.
# (The marker says the trap is set and the background sleep started.)
"$HUSK" --root "$root" exec e1 \
	sh -c 'trap "echo got TERM; exit 3" TERM; sleep 100 & touch /dev/shm/r1; wait' \
	>"$work/term.out" 2>&1 &
epid=$!
if wait_marker e1 r1; then
	kill -TERM "$epid"
	wait "$epid"
	st=$?
	out=$(cat "$work/term.out")
	if [ "$st" = 3 ] && [ "$out" = "got TERM" ]; then
		pass "SIGTERM to husk exec reaches the process's trap (status 3)"
	else
		fail "SIGTERM to husk exec reaches the process's trap" "status $st, output: $out"
	fi
else
	kill -KILL "$epid" 2>/dev/null
	fail "SIGTERM to husk exec: the exec'd shell never got ready" "$(H ps e1 2>&1)"
fi

# SIGINT (ignored in this background job by the shell: husk exec takes it anyway) kills an
# exec'd sleep, which has no handler: husk exec exits 128 + 2.
sleeps() { H ps e1 | awk '$NF == "sleep"' | wc -l; }
before=$(sleeps)
"$HUSK" --root "$root" exec e1 sleep 100 >"$work/int.out" 2>&1 &
epid=$!
i=0
while [ "$(sleeps)" -le "$before" ] && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ "$(sleeps)" -gt "$before" ]; then
	kill -INT "$epid"
	wait "$epid"
	st=$?
	if [ "$st" = 130 ] && [ "$(sleeps)" = "$before" ]; then
		pass "SIGINT to husk exec kills the exec'd sleep (status 130), pid 1 lives on"
	else
		fail "SIGINT to husk exec kills the exec'd sleep" "status $st" "$(H ps e1 2>&1)"
	fi
else
	kill -KILL "$epid" 2>/dev/null
	fail "SIGINT to husk exec: the exec'd sleep never showed in ps" "$(H ps e1 2>&1)"
fi

# The detached exec proxy (what conmon and the containerd shim signal) forwards too.
H exec -d --pid-file "$work/proxy.pid" e1 \
	sh -c 'trap "touch /dev/shm/usr1; exit 4" USR1; touch /dev/shm/r2; while :; do sleep 1; done'
proxy=$(cat "$work/proxy.pid" 2>/dev/null)
if [ -n "$proxy" ] && wait_marker e1 r2; then
	kill -USR1 "$proxy"
	if wait_gone "$proxy" && H exec e1 ls /dev/shm/usr1 >/dev/null 2>&1; then
		pass "SIGUSR1 to the detached exec proxy reaches the process's trap"
	else
		fail "SIGUSR1 to the detached exec proxy reaches the process" "$(H ps e1 2>&1)"
	fi
else
	fail "detached exec: no proxy pid or no shell" "proxy: $proxy" "$(H ps e1 2>&1)"
fi

# husk kill signals pid 1 only: a TERM with no handler in pid 1 is dropped (it is the
# container's init), and the exec'd process is untouched.
H exec -d --pid-file "$work/proxy2.pid" e1 \
	sh -c 'trap "touch /dev/shm/term2" TERM; touch /dev/shm/r3; while :; do sleep 1000 & wait; done'
proxy2=$(cat "$work/proxy2.pid" 2>/dev/null)
wait_marker e1 r3
H kill e1 TERM
sleep 0.5
if [ "$(H state e1 | sed -n 's/.*"status": "\(.*\)".*/\1/p')" = running ] &&
	! H exec e1 ls /dev/shm/term2 >/dev/null 2>&1 && [ -d "/proc/$proxy2" ]; then
	pass "husk kill TERM goes to pid 1 only"
else
	fail "husk kill TERM goes to pid 1 only" "$(H state e1 2>&1)" "$(H ps e1 2>&1)"
fi
# husk kill --all TERM reaches every guest process (here the exec'd shell's trap), and the
# sandbox keeps serving exec afterwards (it used to signal the gofer and the stubs instead).
H kill --all e1 TERM
i=0
while ! H exec e1 ls /dev/shm/term2 >/dev/null 2>&1 && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
if H exec e1 ls /dev/shm/term2 >/dev/null 2>&1 &&
	[ "$(H state e1 | sed -n 's/.*"status": "\(.*\)".*/\1/p')" = running ]; then
	pass "husk kill --all TERM reaches the exec'd process; the sandbox lives on"
else
	fail "husk kill --all TERM reaches the exec'd process" "$(H state e1 2>&1)" \
		"$(H exec e1 ls /dev/shm 2>&1)"
fi
# --tty without --console-socket: husk exec holds the pty master; a resize of its own terminal
# (SIGWINCH) resizes the guest's pty and reaches the process.
out=$(python3 - "$HUSK" "$root" <<'PY'
import fcntl, os, pty, select, struct, sys, termios, time
husk, root = sys.argv[1:3]
pid, fd = pty.fork()
if pid == 0:
    os.execv(husk, [husk, "--root", root, "exec", "-t", "e1", "sh", "-c",
                    'trap "stty size; exit 0" WINCH; stty size; while :; do sleep 1 & wait; done'])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
out = b""
def read_until(want, sec):
    global out
    end = time.time() + sec
    while want not in out and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                out += os.read(fd, 1000)
            except OSError:
                return
read_until(b"30 100", 20)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
read_until(b"40 120", 20)
if b"40 120" not in out:
    os.kill(pid, 9)
_, st = os.waitpid(pid, 0)
print(out.decode(errors="replace").replace("\r", "").strip().replace("\n", ","), st)
PY
)
if [ "$out" = "30 100,40 120 0" ]; then
	pass "exec --tty: a resize of husk's terminal resizes the guest's and sends it SIGWINCH"
else
	fail "exec --tty: SIGWINCH resizes the guest's terminal" "$out"
fi
H delete --force e1 >/dev/null 2>&1

# --- --preserve-fds and $LISTEN_FDS ---
printf 'line from the host\n' >"$work/in.txt"
set_args sh -c 'cat <&3'
expect_output "run --preserve-fds 1: pid 1 reads the host file at fd 3" "line from the host" 0 \
	-- sh -c "'$HUSK' --root '$root' run --preserve-fds 1 --bundle '$bundle' p1 3<'$work/in.txt'"

set_args sh -c 'echo hi >&3; echo there >&4'
rm -f "$work/out3" "$work/out4"
sh -c "'$HUSK' --root '$root' run --preserve-fds 2 --bundle '$bundle' p2 3>'$work/out3' 4>'$work/out4'"
st=$?
if [ "$st" = 0 ] && [ "$(cat "$work/out3")" = hi ] && [ "$(cat "$work/out4")" = there ]; then
	pass "run --preserve-fds 2: pid 1 writes host files at fds 3 and 4"
else
	fail "run --preserve-fds 2: pid 1 writes host files" "status $st" \
		"out3: $(cat "$work/out3" 2>&1)" "out4: $(cat "$work/out4" 2>&1)"
fi

set_args sh -c 'echo hi 2>/dev/null >&3 || exit 9'
expect_status "without --preserve-fds fd 3 is not the container's" 9 \
	-- sh -c "'$HUSK' --root '$root' run --bundle '$bundle' p3 3>'$work/out3'"
out=$(H run --preserve-fds 1 --bundle "$bundle" p4 2>&1 3>&-)
case "$out" in *"unable to stat preserved-fd 0 (of 1)"*) pass "a missing preserved fd is refused as runc" ;;
*) fail "a missing preserved fd is refused as runc" "$out" ;; esac

set_args sh -c 'echo "$LISTEN_FDS $LISTEN_PID"; cat <&3'
expect_output "LISTEN_FDS=1 with LISTEN_PID=husk: fd 3 and the variables reach pid 1" \
	"1 1
line from the host" 0 \
	-- sh -c "LISTEN_PID=\$\$ LISTEN_FDS=1 exec '$HUSK' --root '$root' run --bundle '$bundle' p5 3<'$work/in.txt'"
set_args sh -c 'echo "[$LISTEN_FDS]"; cat 2>/dev/null <&3 || echo "no fd 3"'
expect_output "LISTEN_FDS for another pid is not husk's" "[]
no fd 3" 0 \
	-- sh -c "LISTEN_PID=1 LISTEN_FDS=1 exec '$HUSK' --root '$root' run --bundle '$bundle' p6 3<'$work/in.txt' 2>/dev/null"

# A pipe, read and written by the sentry for the guest.
set_args sh -c 'read l <&3; echo "got $l"'
expect_output "run --preserve-fds 1 with a pipe at fd 3" "got piped" 0 \
	-- sh -c "echo piped | '$HUSK' --root '$root' run --preserve-fds 1 --bundle '$bundle' p7 3<&0 </dev/null"

# A socket: the guest answers on it; the sentry does the socket's reads and writes.
set_args sh -c 'read l <&3; echo "pong $l" >&3'
out=$(python3 - "$HUSK" "$root" "$bundle" <<'PY'
import os, socket, subprocess, sys
husk, root, bundle = sys.argv[1:4]
placeholder = os.open("/dev/null", os.O_RDONLY)  # keeps the pair off fd 3
a, b = socket.socketpair()
os.dup2(b.fileno(), 3, inheritable=True)
p = subprocess.Popen([husk, "--root", root, "run", "--preserve-fds", "1", "--bundle", bundle,
                      "p8"], pass_fds=(3,), stdin=subprocess.DEVNULL)
os.close(3)
b.close()
a.sendall(b"ping\n")
data = b""
a.settimeout(30)
try:
    while not data.endswith(b"\n"):
        chunk = a.recv(100)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
print(data.decode().strip(), p.wait())
PY
)
if [ "$out" = "pong ping 0" ]; then
	pass "run --preserve-fds 1 with a socket at fd 3: read and written through the sentry"
else
	fail "run --preserve-fds 1 with a socket at fd 3" "$out"
fi

# husk exec --preserve-fds.
set_args sleep 1000
expect_status "run -d for exec --preserve-fds" 0 -- H run -d --bundle "$bundle" e2
expect_output "exec --preserve-fds 1: the exec'd process reads fd 3" "line from the host" 0 \
	-- sh -c "'$HUSK' --root '$root' exec --preserve-fds 1 e2 sh -c 'cat <&3' 3<'$work/in.txt'"
rm -f "$work/eout"
sh -c "'$HUSK' --root '$root' exec --preserve-fds 1 e2 sh -c 'echo exec-wrote >&3' 3>'$work/eout'"
if [ "$(cat "$work/eout" 2>/dev/null)" = exec-wrote ]; then
	pass "exec --preserve-fds 1: the exec'd process writes the host file"
else
	fail "exec --preserve-fds 1: the exec'd process writes the host file" "$(cat "$work/eout" 2>&1)"
fi
expect_status "exec without --preserve-fds has no fd 3" 9 \
	-- sh -c "'$HUSK' --root '$root' exec e2 sh -c 'echo x 2>/dev/null >&3 || exit 9' 3>/dev/null"
H delete --force e2 >/dev/null 2>&1

finish
