#!/usr/bin/env python3
"""What containerd's runc shim does on cgroup v1 to learn of an OOM: an eventfd registered on the
container's memory cgroup's memory.oom_control through cgroup.event_control.

    oom_eventfd.py CGROUP_DIR READY_FILE OUT_FILE

Registers, then creates READY_FILE, then waits (up to 600 s) for the eventfd to fire and writes
"fired N" (the eventfd's count) to OUT_FILE; "timeout" if it never did. Exit 0 when it fired."""
import os
import select
import sys

d, ready, out = sys.argv[1:4]
oc = os.open(os.path.join(d, "memory.oom_control"), os.O_RDONLY)
efd = os.eventfd(0, os.EFD_CLOEXEC)
with open(os.path.join(d, "cgroup.event_control"), "w") as f:
    f.write("%d %d" % (efd, oc))
open(ready, "w").close()
r, _, _ = select.select([efd], [], [], 600)
with open(out + ".tmp", "w") as f:
    f.write("fired %d\n" % os.eventfd_read(efd) if r else "timeout\n")
os.rename(out + ".tmp", out)
sys.exit(0 if r else 1)
