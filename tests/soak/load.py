#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The mixed load one soak sandbox runs (tests/soak/soak.py load), for SECONDS of its own clock:

    load.py SECONDS INDEX

three kinds of work side by side, each checking its own results: shell loops (a forked sh that
sums 1..200, compared with 20100), Python threads (4 threads hashing a buffer 200 times, compared
with the main thread's digest of the same) and loopback TCP (a server thread echoing, 2 client
threads sending 64 KiB of random bytes per connection and comparing what comes back). Prints
"load ok shell=N threads=N tcp=N" (rounds of each: every worker does at least one, then goes on until
the time is up) or "load FAIL: what" and exits 1.
"""
import hashlib
import os
import socket
import subprocess
import sys
import threading
import time

seconds = float(sys.argv[1])
index = int(sys.argv[2]) if len(sys.argv) > 2 else 0
deadline = time.monotonic() + seconds
counts = {"shell": 0, "threads": 0, "tcp": 0}
errors = []
lock = threading.Lock()


def fail(what):
    with lock:
        errors.append(what)


def shell():
    script = "i=0; s=0; while [ $i -lt 200 ]; do i=$((i+1)); s=$((s+i)); done; echo $s"
    while not errors:
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
        if out.returncode != 0 or out.stdout != "20100\n":
            fail(f"shell: status {out.returncode} stdout {out.stdout!r} {out.stderr!r}")
            return
        with lock:
            counts["shell"] += 1
        if time.monotonic() >= deadline:
            return


BUF = bytes(range(256)) * 256 + str(index).encode()


def digest():
    h = b""
    for _ in range(200):
        h = hashlib.sha256(h + BUF).digest()
    return h


WANT = digest()


def hasher():
    while not errors:
        if digest() != WANT:
            fail("threads: a digest differs")
            return
        with lock:
            counts["threads"] += 1
        if time.monotonic() >= deadline:
            return


def serve(ls):
    while True:
        try:
            c, _ = ls.accept()
        except OSError:
            return
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def echo(c):
    with c:
        while True:
            d = c.recv(65536)
            if not d:
                return
            c.sendall(d)


def client(port):
    while not errors:
        data = os.urandom(65536)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=300) as s:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                got = bytearray()
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    got += d
        except OSError as e:
            fail(f"tcp: {e}")
            return
        if bytes(got) != data:
            fail(f"tcp: {len(got)} bytes came back, not the 65536 sent")
            return
        with lock:
            counts["tcp"] += 1
        if time.monotonic() >= deadline:
            return


ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
port = ls.getsockname()[1]
threading.Thread(target=serve, args=(ls,), daemon=True).start()
workers = [threading.Thread(target=shell)]
workers += [threading.Thread(target=hasher) for _ in range(4)]
workers += [threading.Thread(target=client, args=(port,)) for _ in range(2)]
for w in workers:
    w.start()
for w in workers:
    w.join()
ls.close()
if errors:
    print(f"load FAIL: {errors[0]}", flush=True)
    sys.exit(1)
print("load ok " + " ".join(f"{k}={v}" for k, v in counts.items()), flush=True)
