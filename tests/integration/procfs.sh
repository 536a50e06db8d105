#!/bin/sh
# /proc, /sys, /dev and pseudo-terminals with real programs: readlink, ls, ps-style reads,
# shell redirections to /dev/stderr, Python's os.cpu_count and pty.spawn.
. "$(dirname "$0")/lib.sh"

expect_output "readlink /proc/self/exe is readlink" "/usr/bin/readlink" 0 -- \
	"$HUSK" do -- readlink /proc/self/exe
expect_output "/proc/self is the caller's pid" "ok" 0 -- \
	"$HUSK" do -- /bin/sh -c 'test "$(readlink /proc/self)" != "" && test -d /proc/$$ && echo ok'
expect_output "/proc/1/cmdline of the shell" "/bin/sh -c" 0 -- \
	"$HUSK" do -- /bin/sh -c 'tr "\000" " " < /proc/1/cmdline | cut -d" " -f1-2'
expect_output "echo to /dev/stderr reaches stderr" "to-stderr" 0 -- \
	"$HUSK" do -- /bin/sh -c 'exec 2>&1; echo to-stderr > /dev/stderr'
expect_output "ls /proc/self/fd lists stdio" "0 1 2 3" 0 -- \
	"$HUSK" do -- /bin/sh -c 'echo $(ls /proc/self/fd)'
expect_output "16 bytes from /dev/urandom" "16" 0 -- \
	"$HUSK" do -- /bin/sh -c 'head -c 16 /dev/urandom | wc -c'
expect_output "/dev/tty without a controlling terminal" "ENXIO" 0 -- \
	"$HUSK" do -- /bin/sh -c '(: < /dev/tty) 2>/dev/null && echo opened || echo ENXIO'
expect_output "/proc/mounts has proc, sysfs and devpts" "3" 0 -- \
	"$HUSK" do -- /bin/sh -c 'grep -cE " (proc|sysfs|devpts) " /proc/mounts'
# /sys/fs/cgroup is the sandbox's cgroup2 hierarchy (sentry/fs/cgroup), as in a container on a
# cgroup v2 host: in mountinfo (runc looks for it there), its root with the sandbox's figures,
# and a cgroup made there holds the shell that moves itself in.
expect_output "/sys/fs/cgroup is a cgroup2 mount in mountinfo" \
	"/sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot" 0 -- \
	"$HUSK" do -- /bin/sh -c 'grep " /sys/fs/cgroup " /proc/self/mountinfo | cut -d" " -f5-'
expect_output "/sys/fs/cgroup: the root's figures, a child cgroup, /proc/self/cgroup" \
	"max max cpuset cpu io memory pids 0::/t 0::/" 0 -- \
	"$HUSK" do -- /bin/sh -c 'c=/sys/fs/cgroup; mkdir $c/t && echo $$ > $c/t/cgroup.procs &&
		a=$(cat /proc/self/cgroup) && echo $$ > $c/cgroup.procs && rmdir $c/t &&
		echo $(cat $c/memory.max $c/pids.max $c/cgroup.controllers) $a $(cat /proc/self/cgroup)'
if command -v python3 >/dev/null; then
	expect_output "Python's cpu_count reads /sys" "$(python3 -c 'import os; print(os.cpu_count())')" 0 -- \
		"$HUSK" do -- python3 -S -c 'import os; print(os.cpu_count())'
	expect_output "pty.spawn runs a shell on a pseudo-terminal" "inside-3" 0 -- \
		/bin/sh -c "printf 'echo inside-\$((1+2))\\nexit\\n' | \"$HUSK\" do -- python3 -S -c 'import pty; pty.spawn([\"/bin/sh\"])' | tr -d '\\r' | grep -o '^# inside-3' | cut -c3-"
fi
finish
