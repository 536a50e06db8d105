#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Python forking from a thread while the main thread is blocked reading a pipe (and a socket)
# into a buffer: the data must reach the parent's buffer, and the child's copy of the buffer
# must keep what it held at fork. Run natively once, then 30 times in husk (once per platform in
# make check: 60 in all; $PYTHON_FORK_RUNS to change): every run must
# print what the native run printed. (A sentry that translated the buffer before the read
# slept wrote the data into the page the child got: the parent read garbage.)
set -u
. "$(dirname "$0")/lib.sh"

RUNS=${PYTHON_FORK_RUNS:-30}
code=$(cat <<'EOF'
import os, socket, sys, threading, warnings
warnings.simplefilter("ignore")  # fork() of a multi-threaded process (3.12+)

ITERS = 10
N = 4096

def sleeping(tid):
    # The thread sleeps in the kernel (state S): the read is blocked.
    for _ in range(200000):
        try:
            with open("/proc/self/task/%d/stat" % tid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "S":
                    return True
        except OSError:
            return False
        os.sched_yield()
    return False

def one(kind):
    if kind == "pipe":
        src, dst = os.pipe()
        send = lambda b: os.write(dst, b)
        recv = lambda buf: os.readv(src, [buf])
        close = lambda: (os.close(src), os.close(dst))
    else:
        a, b = socket.socketpair()
        send = b.sendall
        recv = lambda buf: a.recv_into(buf, N)
        close = lambda: (a.close(), b.close())
    go_r, go_w = os.pipe()
    res_r, res_w = os.pipe()
    buf = bytearray(b"." * (2 * N))
    main_tid = threading.get_native_id()
    child = {}

    def forker():
        sleeping(main_tid)
        pid = os.fork()
        if pid == 0:
            os.read(go_r, 1)
            os.write(res_w, b"1" if bytes(buf) == b"." * (2 * N) else b"0")
            os._exit(0)
        child["pid"] = pid
        send(b"D" * N)

    t = threading.Thread(target=forker)
    t.start()
    n = recv(buf)
    t.join()
    parent_ok = n == N and bytes(buf) == b"D" * N + b"." * N
    os.write(go_w, b"g")
    child_ok = os.read(res_r, 1) == b"1"
    os.waitpid(child["pid"], 0)
    for fd in (go_r, go_w, res_r, res_w):
        os.close(fd)
    close()
    return parent_ok, child_ok

for kind in ("pipe", "socket"):
    p = c = 0
    for _ in range(ITERS):
        po, co = one(kind)
        p += po
        c += co
    print("%s: parent %d/%d, child %d/%d" % (kind, p, ITERS, c, ITERS))
EOF
)

native=$(python3 -c "$code" 2>&1)
want=$(printf 'pipe: parent 10/10, child 10/10\nsocket: parent 10/10, child 10/10')
if [ "$native" = "$want" ]; then
	pass "natively: the parent's buffer gets the data, the child's copy keeps its bytes"
else
	fail "natively: the parent's buffer gets the data, the child's copy keeps its bytes" \
		"got: $native"
fi

bad=0
first_bad=
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	out=$(timeout 120 "$HUSK" do -- python3 -c "$code" 2>&1)
	if [ "$out" != "$native" ]; then
		bad=$((bad + 1))
		[ -n "$first_bad" ] || first_bad="run $i: $out"
	fi
done
if [ "$bad" -eq 0 ]; then
	pass "in husk: $RUNS runs print what the native run printed"
else
	fail "in husk: $RUNS runs print what the native run printed" "$bad runs differed" \
		"first: $first_bad"
fi

finish
