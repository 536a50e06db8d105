#!/bin/sh
# Mounts, mount namespaces and chroot with real programs (util-linux's unshare, mount, umount,
# chroot, busybox, python3), each compared with the same command run natively, and the escapes
# that must fail. Natively everything runs under `unshare -m` (private propagation, util-linux's
# default), so the host's mount table is never changed.
. "$(dirname "$0")/lib.sh"

# same NAME -- COMMAND...: the command's stdout and status in husk equal its native ones.
same() {
	name=$1
	shift 2
	want=$("$@" 2>/dev/null)
	want_st=$?
	expect_output "$name" "$want" "$want_st" -- "$HUSK" do -- "$@"
}

same "unshare -m: a tmpfs on /mnt, a file in it, one mountinfo line" -- \
	unshare -m sh -c 'mount -t tmpfs x /mnt && echo hi > /mnt/f && cat /mnt/f && grep -c " /mnt " /proc/self/mountinfo'
same "after unshare -m, /mnt outside is unchanged" -- \
	sh -c 'unshare -m sh -c "mount -t tmpfs x /mnt && echo hi > /mnt/f" && grep -c " /mnt " /proc/self/mountinfo; test -e /mnt/f || echo no-file'

# mount --bind, remount,ro,bind (a write fails with EROFS, the source stays writable), umount -l.
same "mount --bind, remount ro, umount -l" -- \
	unshare -m sh -c 'd=$(mktemp -d) && mkdir $d/a $d/b && echo x > $d/a/f &&
		mount --bind $d/a $d/b && cat $d/b/f && mount -o remount,ro,bind $d/b &&
		{ (echo y > $d/b/g) 2>&1 | grep -o "Read-only file system"; } &&
		echo z > $d/a/g && echo source-writable && grep " $d/b " /proc/self/mountinfo | cut -d" " -f4,6 | sed "s|$d|DIR|" &&
		umount -l $d/b && { test -e $d/b/f || echo unmounted; }; rm -rf $d'
same "mount --rbind takes submounts, mount --bind does not" -- \
	unshare -m sh -c 'd=$(mktemp -d) && mkdir -p $d/a/in $d/b $d/c && mount -t tmpfs t $d/a/in &&
		touch $d/a/in/f && mount --bind $d/a $d/b && mount --rbind $d/a $d/c &&
		ls $d/b/in; ls $d/c/in; umount -l $d/c; umount $d/b; umount $d/a/in; rm -rf $d'
same "mount -t proc on a new directory" -- \
	unshare -m sh -c 'd=$(mktemp -d) && mount -t proc proc $d && test -r $d/self/status && echo proc-ok; umount $d; rmdir $d'

# mount -t overlay (an upper tmpfs directory over a lower one, as a nested engine's image layers):
# copy-up, a whiteout in the upper directory, a new file; unshare -Urm: in a user namespace too.
for u in -m -Urm; do
	same "unshare $u mount -t overlay: copy-up, whiteout, new file" -- \
		unshare $u sh -c 'd=$(mktemp -d) && mount -t tmpfs t $d && cd $d && mkdir l u w m &&
			echo low > l/f && echo gone > l/g &&
			mount -t overlay overlay -o lowerdir=l,upperdir=u,workdir=w m &&
			echo up >> m/f && rm m/g && echo new > m/n && cat m/f && ls m &&
			ls -l u | tail -n +2 | cut -c1 && grep -c "lowerdir=" /proc/self/mountinfo &&
			umount m && cat l/f && cd / && umount $d && rmdir $d'
done

# nsenter -m (setns(CLONE_NEWNS) through /proc/PID/ns/mnt) into a namespace with a tmpfs on /mnt
# that only it has; the holder waits on a FIFO, so nothing sleeps.
same "nsenter -t PID -m sees the namespace's mounts" -- \
	sh -c 'd=$(mktemp -d); mkfifo $d/up $d/go
		unshare -m sh -c "mount -t tmpfs x /mnt && touch /mnt/inside && echo \$\$ > $d/up && read x < $d/go" &
		read pid < $d/up; ls /mnt | grep -c inside; nsenter -t $pid -m ls /mnt
		nsenter -t $pid -m sh -c "pwd; grep -c \" /mnt \" /proc/self/mountinfo"
		echo > $d/go; wait; rm -rf $d'

# chroot into a directory holding busybox-static: ls / shows the directory, cd .. stays there.
same "chroot DIR busybox sh: ls /; cd ..; ls" -- \
	sh -c 'd=$(mktemp -d) && mkdir $d/bin && cp /bin/busybox $d/bin/ && touch $d/marker &&
		chroot $d /bin/busybox sh -c "ls /; cd ..; cd ..; ls; pwd"; rm -rf $d'

# Escapes that must fail.
# A chroot escape with an fd opened before and `..` (as root, Linux lets it out to the real
# root): in husk it must end at the root the guest saw before, the sandbox's, never the host's
# beyond it. A marker the guest made in /tmp (the sandbox's overlay: natively the host's /tmp)
# is there, and / is the same directory as before.
same "chroot escape with .. and an open fd ends at the guest's own root" -- \
	python3 -S -c '
import os, tempfile
m = tempfile.mkstemp(prefix="husk-escape-")[1]
d = tempfile.mkdtemp()
before = os.stat("/")
fd = os.open("/", os.O_RDONLY)
os.chroot(d)
print(os.path.exists(m))
os.fchdir(fd)
for _ in range(64):
    os.chdir("..")
os.chroot(".")
after = os.stat("/")
print(os.path.exists(m), (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino))
os.unlink(m)
os.rmdir(d)
'
# A bind mount over /proc/self/exe mounts over the file the link names (mount's own binary) in
# the guest's tree only: after the namespace is gone the binary is intact.
same "a bind over /proc/self/exe stays in the namespace" -- \
	sh -c 'unshare -m sh -c "mount --bind /bin/true /proc/self/exe; mount --version | head -c 0; echo done";
		mount --version | head -1 | cut -d" " -f1'
# The sentry knows no such filesystem: ENODEV (the call itself: util-linux's mount tries the
# types of /proc/filesystems instead).
same "mount of an unknown filesystem type" -- \
	unshare -m python3 -S -c 'import ctypes, os
l = ctypes.CDLL(None, use_errno=True)
print(l.mount(b"x", b"/mnt", b"nosuchfs", 0, None), os.strerror(ctypes.get_errno()))'
# A bind of a path outside the sandbox is impossible: there is no such path. Climbing with ..
# from / binds the guest's own root.
same "a bind of /../../.. is a bind of the guest's /" -- \
	unshare -m sh -c 'mount --bind /../../.. /mnt && test "$(stat -c %d:%i /mnt)" = "$(stat -c %d:%i /)" && echo same-root'
# Mounts in user namespaces (issue 17): unshare -Urm as root and as an unprivileged user, the
# mounts copied in locked (umount EINVAL: "not mounted"; nosuid not cleared: EPERM), ext4 EPERM,
# and propagation between peers made inside.
same "unshare -Urm: a tmpfs on /mnt, a file in it" -- \
	unshare -Urm sh -c 'mount -t tmpfs x /mnt && touch /mnt/f && ls /mnt'
same "unshare -Urm as uid 65534: tmpfs owned by root inside, ext4 refused" -- \
	setpriv --reuid=65534 --regid=65534 --clear-groups unshare -Urm sh -c 'mount -t tmpfs x /mnt &&
		touch /mnt/f && ls -ln /mnt | tail -1 | cut -d" " -f3,4;
		mount -t ext4 none /mnt 2>&1 | grep -o "permission denied"'
same "unshare -Urm: the copied mounts are locked" -- \
	unshare -m sh -c 'mount -t tmpfs -o nosuid x /mnt && touch /mnt/under && mkdir /mnt/d &&
		mount -t tmpfs y /mnt/d && unshare -Urm sh -c "umount /mnt/d 2>/dev/null; echo \$?;
		umount -l /mnt/d 2>/dev/null; echo \$?; mount -o remount,bind,suid /mnt 2>&1 |
		grep -o \"permission denied\"; mount -o remount,bind,nosuid,noexec /mnt && echo noexec-added"'
same "unshare -Urm: mount --make-rshared, a mount propagates to a bind" -- \
	unshare -Urm sh -c 'mount --make-rshared / && d=$(mktemp -d) && mount -t tmpfs p $d &&
		mkdir $d/a $d/b && mount --bind $d/a $d/b && mount -t tmpfs in $d/a && touch $d/a/f &&
		ls $d/b && grep -c " $d/" /proc/self/mountinfo && umount $d/b/ && ls $d/a; umount -l $d; rmdir $d'
# umount of /: Linux would remount the caller's root read-only (the host's root natively:
# never run here); husk answers EBUSY. Husk only.
expect_output "umount / is refused" "busy
32" 0 -- \
	"$HUSK" do -- unshare -m sh -c 'umount / 2>&1 | grep -o busy; umount / 2>/dev/null; echo $?'
finish
