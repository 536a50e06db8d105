#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Python's multiprocessing inside husk: semaphores and shared memory over /dev/shm (shm_open +
# MAP_SHARED of a tmpfs file), a Pool of worker processes, and a shared mapping of a volume file
# written back to the host.
. "$(dirname "$0")/lib.sh"

expect_output "multiprocessing.Pool(2).map" "[1]" 0 -- \
	"$HUSK" do -- python3 -c 'import multiprocessing as m; print(m.Pool(2).map(abs,[-1]))'

expect_output "multiprocessing.Value shared across processes" "4000" 0 -- \
	"$HUSK" do -- python3 -c '
import multiprocessing as m
def work(v):
    for _ in range(1000):
        with v.get_lock():
            v.value += 1
if __name__ == "__main__":
    v = m.Value("i", 0)
    ps = [m.Process(target=work, args=(v,)) for _ in range(4)]
    [p.start() for p in ps]
    [p.join() for p in ps]
    print(v.value)'

vol=$(mktemp -d)
printf 'hello world\n' >"$vol/f"
expect_output "MAP_SHARED write of a volume file reaches the host on close" "HELLO" 0 -- \
	"$HUSK" do --volume "$vol:/vol" -- python3 -c '
import mmap, os
fd = os.open("/vol/f", os.O_RDWR)
m = mmap.mmap(fd, 0)
m[0:5] = b"HELLO"
print(os.pread(fd, 5, 0).decode())
m.close(); os.close(fd)'
if [ "$(cat "$vol/f")" = "HELLO world" ]; then
	pass "the host file has the mapping's bytes"
else
	fail "the host file has the mapping's bytes" "got: $(cat "$vol/f")"
fi
rm -rf "$vol"

finish
