#!/bin/sh
# The filesystem issue's "done when" for writes: the root is an in-memory overlay (writes,
# removals and renames stay in the sandbox), /dev/shm and --tmpfs are tmpfs mounts with limits,
# --volume serves host directories (writable or :ro), --overlay=none writes to the host.
. "$(dirname "$0")/lib.sh"

probe=/etc/husk-probe-$$
expect_output "a write to /etc reads back inside" "data" 0 -- \
	"$HUSK" do -- /bin/sh -c "echo data > $probe; read x < $probe; echo \$x"
if [ ! -e "$probe" ]; then
	pass "the write did not reach the host"
else
	fail "the write did not reach the host" "$probe exists on the host"
	rm -f "$probe"
fi

if [ -e /etc/hostname ]; then
	before=$(cat /etc/hostname)
	expect_status "rm /etc/hostname succeeds inside" 0 -- "$HUSK" do -- rm /etc/hostname
	if [ "$(cat /etc/hostname 2>/dev/null)" = "$before" ]; then
		pass "the host keeps /etc/hostname"
	else
		fail "the host keeps /etc/hostname" "content now: $(cat /etc/hostname 2>&1)"
	fi
fi

if command -v python3 >/dev/null; then
	expect_output "overlay: whiteouts, copy-up, stable inode, rename, links" \
		"False True 6 True 2 ENOTEMPTY []" 0 -- "$HUSK" do -- python3 -S -c '
import errno, os
os.unlink("/etc/os-release")
gone = os.path.exists("/etc/os-release")
st = os.stat("/etc/passwd")
with open("/etc/passwd", "a") as f:
    f.write("xyzzy\n")
st2 = os.stat("/etc/passwd")
same = (st.st_ino, st.st_dev) == (st2.st_ino, st2.st_dev)
grew = st2.st_size - st.st_size
os.rename("/etc/passwd", "/tmp/pw")
moved = not os.path.exists("/etc/passwd") and open("/tmp/pw").read().endswith("xyzzy\n")
os.link("/tmp/pw", "/tmp/pw2")
nlink = os.stat("/tmp/pw").st_nlink
try:
    os.rmdir("/usr")
    e = "removed"
except OSError as x:
    e = errno.errorcode[x.errno]
os.makedirs("/usr/share/doc/husk-new")
print(gone, same, grew, moved, nlink, e, os.listdir("/usr/share/doc/husk-new"))'
	expect_output "sqlite3 in /tmp" "[(42,)]" 0 -- "$HUSK" do -- python3 -c '
import sqlite3
c = sqlite3.connect("/tmp/t.db")
c.execute("create table t(a)")
c.execute("insert into t values(42)")
c.commit()
print(c.execute("select * from t").fetchall())'
	expect_output "/dev/shm is a 64 MiB tmpfs" "64" 0 -- "$HUSK" do -- python3 -S -c '
import os
s = os.statvfs("/dev/shm")
print(s.f_blocks * s.f_frsize >> 20)'
	expect_output "--tmpfs with a size limit gives a short write, then ENOSPC" "8192 ENOSPC" 0 -- \
		"$HUSK" do --tmpfs /husk-scratch:size=8k -- python3 -S -c '
import errno, os
fd = os.open("/husk-scratch/f", os.O_CREAT | os.O_WRONLY)
n = os.write(fd, b"x" * 20000)
try:
    os.write(fd, b"y")
    e = "none"
except OSError as x:
    e = errno.errorcode[x.errno]
print(n, e)'
	if [ ! -e /husk-scratch ]; then
		pass "--tmpfs made its mountpoint in the overlay only"
	else
		fail "--tmpfs made its mountpoint in the overlay only" "/husk-scratch exists on the host"
	fi
fi

vol=$(mktemp -d /tmp/husk-volume-XXXXXX)
rovol=$(mktemp -d /tmp/husk-rovolume-XXXXXX)
echo kept > "$rovol/f"
expect_output "--volume: writes, links, renames and chmod reach the host; :ro gives EROFS" \
	"hi 2 600 Read-only" 0 -- "$HUSK" do --volume "$vol:/husk-vol" --volume "$rovol:/husk-ro:ro" \
	-- /bin/sh -c 'echo hi > /husk-vol/a && ln /husk-vol/a /husk-vol/b && mkdir /husk-vol/d &&
		mv /husk-vol/b /husk-vol/d/c && chmod 600 /husk-vol/a &&
		r=$(echo x 2>&1 > /husk-ro/g); case "$r" in *Read-only*) ro=Read-only;; *) ro="$r";; esac;
		echo $(cat /husk-vol/d/c) $(stat -c "%h %a" /husk-vol/a) $ro'
if [ "$(cat "$vol/d/c" 2>/dev/null)" = hi ] && [ "$(stat -c %a "$vol/a")" = 600 ] &&
	[ ! -e "$vol/b" ] && [ ! -e "$rovol/g" ] && [ "$(cat "$rovol/f")" = kept ]; then
	pass "the volume's changes are on the host, the read-only volume is untouched"
else
	fail "the volume's changes are on the host, the read-only volume is untouched" \
		"$(ls -lR "$vol" "$rovol" 2>&1)"
fi
if [ ! -e /husk-vol ] && [ ! -e /husk-ro ]; then
	pass "--volume made its mountpoints in the overlay only"
else
	fail "--volume made its mountpoints in the overlay only" "/husk-vol or /husk-ro exists"
fi
rm -rf "$vol" "$rovol"

scratch=$(mktemp -d /tmp/husk-nooverlay-XXXXXX)
expect_output "--overlay=none: create, rename, symlink and remove reach the host" "data" 0 -- \
	"$HUSK" do --overlay=none -- /bin/sh -c "cd $scratch && echo data > f && mv f g &&
		ln -s g s && mkdir d && rmdir d && cat s"
if [ "$(cat "$scratch/g" 2>/dev/null)" = data ] && [ -L "$scratch/s" ] && [ ! -e "$scratch/f" ]; then
	pass "--overlay=none wrote to the host"
else
	fail "--overlay=none wrote to the host" "$(ls -l "$scratch" 2>&1)"
fi
rm -rf "$scratch"

finish
