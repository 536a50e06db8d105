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

# FIFOs and unix sockets bound to paths (issue 11): a shell's mkfifo, make's job server, and the
# conformance programs in a writable volume and on a FIFO of the read-only lower layer.
fifo_sh='cd "$1" && mkfifo p && (echo hi > p &) ; cat p; echo $(stat -c %F p)'
fifo_dir=$(mktemp -d /tmp/husk-fifo-sh-XXXXXX)
want=$(/bin/sh -c "$fifo_sh" sh "$fifo_dir" 2>&1)
rm -f "$fifo_dir/p"
expect_output "mkfifo p; (echo hi > p &); cat p, as natively" "$want" 0 -- \
	"$HUSK" do -- /bin/sh -c "$fifo_sh" sh /var/tmp
expect_output "the same in a volume" "$want" 0 -- \
	"$HUSK" do --volume "$fifo_dir:/husk-fifo" -- /bin/sh -c "$fifo_sh" sh /husk-fifo
rm -rf "$fifo_dir"

if command -v make >/dev/null; then
	mk=$(mktemp -d /tmp/husk-make-XXXXXX)
	# Four sub-makes of two jobs each share the top make's job server (a FIFO from make 4.4,
	# a pipe before); each reports whether it got the job server.
	printf 'all: a b c d\n\t@echo done\na b c d:\n\t@$(MAKE) -s -f sub.mk T=$@\n' > "$mk/Makefile"
	printf 'all: x y\nx y:\n\t@echo $(T)-$@ $(if $(findstring jobserver,$(MAKEFLAGS)),js,nojs)\n' \
		> "$mk/sub.mk"
	want=$(cd "$mk" && make -s -j4 2>&1 | sort)
	expect_output "make -j4 with recursive makes, as natively ($(make --version | head -n 1))" \
		"$want" 0 -- "$HUSK" do --cwd "$mk" -- /bin/sh -c 'make -s -j4 2>&1 | sort'
	case $want in
	*a-x\ js*) pass "the sub-makes used the job server natively" ;;
	*) fail "the sub-makes used the job server natively" "$want" ;;
	esac
	if make --help 2>/dev/null | grep -q jobserver-style; then
		want=$(cd "$mk" && make -s -j4 --jobserver-style=fifo 2>&1 | sort)
		expect_output "make -j4 --jobserver-style=fifo, as natively" "$want" 0 -- \
			"$HUSK" do --cwd "$mk" -- /bin/sh -c \
			'make -s -j4 --jobserver-style=fifo 2>&1 | sort'
	fi
	rm -rf "$mk"
fi
# make 4.4's FIFO job server, by hand (this machine's make may be older): tokens in a FIFO that
# every job opens again by its path, O_RDWR, takes one byte from and gives it back.
js_sh='cd "$1" && mkfifo js && (exec 3<>js && printf xx >&3 &&
	for i in 1 2 3 4 5 6; do
		(exec 4<>js && dd bs=1 count=1 <&4 >/dev/null 2>&1 && echo job$i && printf x >&4) &
	done; wait; dd bs=1 count=2 <&3 2>/dev/null; echo) | sort; rm js'
js_dir=$(mktemp -d /tmp/husk-js-XXXXXX)
want=$(/bin/sh -c "$js_sh" sh "$js_dir" 2>&1)
rmdir "$js_dir"
expect_output "a FIFO job server shared by six jobs, as natively" "$want" 0 -- \
	"$HUSK" do -- /bin/sh -c "$js_sh" sh /tmp

fifo_prog=$(dirname "$HUSK")/tests/syscalls/syscalls-fifo
unix_prog=$(dirname "$HUSK")/tests/syscalls/syscalls-unix_path
if [ -x "$fifo_prog" ] && [ -x "$unix_prog" ]; then
	vol=$(mktemp -d /tmp/husk-fifo-vol-XXXXXX)
	low=$(mktemp -d /tmp/husk-fifo-low-XXXXXX)
	mkfifo "$low/made-on-the-host"
	for args in "--volume $vol:/vol -- $fifo_prog /vol -e $low/made-on-the-host" \
		"--volume $vol:/vol -- $unix_prog /vol" \
		"--overlay=none -- $fifo_prog -e $low/made-on-the-host" \
		"--overlay=none -- $unix_prog"; do
		# shellcheck disable=SC2086 # the words of args are meant
		out=$("$HUSK" do $args 2>&1)
		last=$(printf '%s\n' "$out" | tail -n 1)
		case $last in
		*" passed, 0 failed") pass "husk do $args: $last" ;;
		*) fail "husk do $args" "$(printf '%s\n' "$out" | tail -n 20)" ;;
		esac
	done
	if [ -p "$low/made-on-the-host" ] && [ -z "$(ls -A "$vol")" ]; then
		pass "the host's FIFO is still there; the volume's scratch directories are gone"
	else
		fail "the host's FIFO is still there; the volume's scratch directories are gone" \
			"$(ls -lA "$low" "$vol" 2>&1)"
	fi
	rm -rf "$vol" "$low"
else
	echo "skip: $fifo_prog or $unix_prog is not built"
fi

finish
