#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Waiting and I/O inside husk: pipelines, sleeps and timers interrupted by signals, Python
# threads on futexes, select/poll users, and interruptible reads of the caller's stdin.
set -u
. "$(dirname "$0")/lib.sh"

expect_output "shell pipeline through pipes" "3 2 1 " 0 -- \
	"$HUSK" do -- /bin/sh -c 'for i in 1 2 3; do echo $i; done | sort -r | tr "\n" " "'

expect_output "a large pipeline keeps every byte" "200000" 0 -- \
	"$HUSK" do -- /bin/sh -c 'head -c 200000 /dev/zero | cat | cat | wc -c'

expect_output "timeout 1 sleep 10 gives 124" "124" 0 -- \
	"$HUSK" do -- /bin/sh -c 'timeout 1 sleep 10; echo $?'

expect_output "a killed sleep gives 143" "143" 0 -- \
	"$HUSK" do -- /bin/sh -c 'sleep 10 & kill $!; wait $!; echo $?'

expect_output "python threading: 8 x 400000 locked increments" "3200000" 0 -- \
	"$HUSK" do -- python3 -c '
import threading
n = 0
lock = threading.Lock()
def work():
    global n
    for _ in range(400000):
        with lock:
            n += 1
ts = [threading.Thread(target=work) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(n)'

expect_output "python select, poll and epoll on a pipe" "1 1 1" 0 -- \
	"$HUSK" do -- python3 -c '
import os, select
r, w = os.pipe()
os.write(w, b"x")
a = len(select.select([r], [], [], 1)[0])
p = select.poll(); p.register(r, select.POLLIN); b = len(p.poll(1000))
e = select.epoll(); e.register(r, select.EPOLLIN); c = len(e.poll(1))
print(a, b, c)'

expect_output "python signal.alarm interrupts time.sleep" "alarm" 0 -- \
	"$HUSK" do -- python3 -c '
import signal, time
def h(s, f):
    print("alarm")
    raise SystemExit(0)
signal.signal(signal.SIGALRM, h)
signal.alarm(1)
time.sleep(10)'

# A read of the caller's stdin (a pipe that stays open and empty for 20 s) is a wait a signal
# ends: the inner shell dies of SIGALRM after 1 s (pid 1, the outer shell, would ignore it, as
# any namespace init does). A read that blocked its host thread would run into the timeout.
expect_output "a read of an empty stdin pipe is ended by a signal" "142" 0 -- \
	sh -c '{ sleep 20 & } | timeout -s KILL 10 "$HUSK" do -- /bin/sh -c "sh -c '"'"'(sleep 1; kill -ALRM \$\$) & read x; echo read \$?'"'"'; echo \$?"'

expect_output "stdin from a pipe is read through" "hello" 0 -- \
	sh -c 'echo hello | "$HUSK" do -- /bin/cat'

finish
