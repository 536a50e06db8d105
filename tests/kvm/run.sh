#!/bin/sh
# Boots a QEMU/TCG virtual machine with nested SVM and runs tests inside it, where /dev/kvm
# exists (issue 19). Prints TAP on stdout (meson's protocol: 'tap'); see README.md.
#   tests/kvm/run.sh [-f FILE]... [-t 'NAME:COMMAND']...
#     -f FILE   ship FILE (a static binary) in the initramfs as /t/BASENAME
#     -b FILE   ship FILE at its own absolute path, with the shared libraries ldd names (husk)
#     -t N:CMD  a test: CMD runs in the guest's /bin/sh from /t; exit 0 passes, 77 skips
# Environment: KVM_KERNEL (default: the newest /boot/vmlinuz-*), KVM_TIMEOUT (seconds, 280),
# KVM_TEST_TIMEOUT (seconds per test in the guest, 120: then SIGKILL, status 137),
# KVM_KEEP=1 keeps the work directory (printed) for debugging.
# Skips (TAP "1..0 # SKIP") without qemu-system-x86_64, a kernel image, its kvm modules or
# busybox-static.
set -u

files=""
bins=""
tests=""
ntests=0
nl='
'
while [ $# -gt 0 ]; do
	case "$1" in
	-f) files="$files$2$nl"; shift 2 ;;
	-b) bins="$bins$(realpath "$2")$nl"; shift 2 ;;
	-t) tests="$tests$2$nl"; ntests=$((ntests + 1)); shift 2 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

skip() {
	echo "1..0 # SKIP $*"
	exit 0
}

qemu=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
kernel=${KVM_KERNEL:-$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)}
[ -n "$kernel" ] && [ -r "$kernel" ] || skip "no readable kernel image /boot/vmlinuz-* (apt-get install linux-image-amd64)"
kver=${kernel##*/vmlinuz-}
moddir=/lib/modules/$kver
busybox=/bin/busybox
[ -x "$busybox" ] || skip "no /bin/busybox (apt-get install busybox-static)"
command -v cpio >/dev/null || skip "cpio is not installed"

# The modules in the order they depend on each other (modules.dep: kvm-amd needs the others).
mods=""
for m in virt/lib/irqbypass.ko drivers/crypto/ccp/ccp.ko arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko; do
	f=$(ls "$moddir/kernel/$m" "$moddir/kernel/$m".xz "$moddir/kernel/$m".zst 2>/dev/null | head -n 1)
	[ -n "$f" ] || skip "module $m of kernel $kver not found under $moddir"
	mods="$mods $f"
done

work=$(mktemp -d)
if [ "${KVM_KEEP:-0}" = 1 ]; then
	echo "# work directory $work"
else
	trap 'rm -rf "$work"' EXIT
fi
root=$work/root
mkdir -p "$root/bin" "$root/t" "$root/mod" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
for f in $mods; do
	b=${f##*/}
	case "$f" in
	*.xz) xz -dc "$f" >"$root/mod/${b%.xz}" ;;
	*.zst) zstd -qdc "$f" >"$root/mod/${b%.zst}" ;;
	*) cp "$f" "$root/mod/$b" ;;
	esac
done
printf '%s' "$files" | while IFS= read -r f; do
	[ -n "$f" ] && cp "$f" "$root/t/"
done
printf '%s' "$bins" | while IFS= read -r f; do
	[ -n "$f" ] || continue
	libs=$(ldd "$f" 2>/dev/null | grep -o '/[^ ]*')
	# glibc loads libgcc_s at run time (pthread_exit, pthread_cancel): ldd does not name it.
	for l in $libs; do
		case "$l" in */libc.so.6) [ -e "${l%/*}/libgcc_s.so.1" ] && libs="$libs ${l%/*}/libgcc_s.so.1" ;; esac
	done
	for x in "$f" $libs; do
		mkdir -p "$root$(dirname "$x")"
		cp -L "$x" "$root$x"
	done
done
# What conformance programs expect of a root (they run natively on Debian): the host's user,
# group and os-release files; /usr/bin/true and a `#!/bin/sh` script at /usr/bin/which.
mkdir -p "$root/etc" "$root/usr/bin"
for f in passwd group os-release; do
	cp -L "/etc/$f" "$root/etc/$f" 2>/dev/null
done
[ -s "$root/etc/passwd" ] || echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
[ -s "$root/etc/group" ] || echo 'root:x:0:' >"$root/etc/group"
ln -s /bin/busybox "$root/usr/bin/true"
printf '#!/bin/sh\nexec /bin/busybox which "$@"\n' >"$root/usr/bin/which"
chmod 755 "$root/usr/bin/which"
printf '%s' "$tests" >"$root/tests.list"

# /init: everything it says that the host reads starts with "@@kvm ".
cat >"$root/init" <<'INIT'
#!/bin/sh
# The initramfs is rootfs, which pivot_root(2) refuses (husk's sandboxes pivot): first move
# everything to a tmpfs and make that the root.
if [ ! -e /.stage2 ]; then
	/bin/busybox mkdir /r
	/bin/busybox mount -t tmpfs -o size=90% tmpfs /r
	for f in /*; do
		[ "$f" = /r ] || /bin/busybox cp -a "$f" /r/
	done
	/bin/busybox touch /r/.stage2
	exec /bin/busybox switch_root /r /init
fi
/bin/busybox --install -s /bin
export PATH=/bin:/t
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# /tmp is the root's tmpfs already: no tmpfs over it, which would hide the binaries -b shipped at
# their own paths when the build is under /tmp (a CI clone).
chmod 1777 /tmp
read up _ </proc/uptime
echo "@@kvm init $up"
for m in irqbypass ccp kvm kvm-amd; do
	insmod /mod/$m.ko || echo "@@kvm out insmod $m failed"
done
read up _ </proc/uptime
echo "@@kvm modules $up"
i=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	i=$((i + 1))
	echo "@@kvm begin $i ${line%%:*}"
	rm -f /tmp/rc
	{ cd /t && timeout -s KILL @TEST_TIMEOUT@ /bin/sh -c "${line#*:}" </dev/null 2>&1; echo $? >/tmp/rc; } |
		sed 's/^/@@kvm out /'
	echo "@@kvm end $i $(cat /tmp/rc 2>/dev/null)"
done </tests.list
echo "@@kvm done"
reboot -f
INIT
sed -i "s/@TEST_TIMEOUT@/${KVM_TEST_TIMEOUT:-120}/" "$root/init"
chmod +x "$root/init"
# Under TCG the kernel's own xz decompressor takes ~19 s: boot the uncompressed ELF vmlinux
# through its PVH entry point instead (Debian's kernel has CONFIG_PVH), 9 s to /init.
boot=$kernel
off=$(grep -abo -m 1 "$(printf '\3757zXZ')" "$kernel" 2>/dev/null | head -n 1 | cut -d: -f1)
if [ -n "$off" ] && tail -c +$((off + 1)) "$kernel" | xz -dc --single-stream >"$work/vmlinux" 2>/dev/null &&
	[ "$(head -c 4 "$work/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
	boot=$work/vmlinux
fi
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz" ||
	{ echo "Bail out! cannot build the initramfs"; exit 1; }

echo "1..$ntests"
log=$work/console.log
start=$(date +%s%N)
# No devices but the serial console; -no-reboot turns the guest's reboot into QEMU's exit.
timeout "${KVM_TIMEOUT:-280}" "$qemu" -accel tcg -cpu max -m 2G -smp 1 -nographic -no-reboot \
	-nodefaults -serial stdio -display none -net none \
	-kernel "$boot" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 rdinit=/init quiet panic=-1 oops=panic" </dev/null 2>&1 |
	tee "$log" | {
	cr=$(printf '\r')
	ms() { echo $((($(date +%s%N) - start) / 1000000)); }
	last=0
	name=""
	while IFS= read -r line; do
		line=${line%"$cr"}
		# The firmware's terminal resets can precede a line on the serial port.
		case "$line" in *"@@kvm "*) line="@@kvm ${line#*@@kvm }" ;; esac
		case "$line" in
		"@@kvm init "*) echo "# QEMU start to /init: $(ms) ms (guest uptime ${line#@@kvm init } s)" ;;
		"@@kvm modules "*) echo "# kvm modules loaded: $(ms) ms (guest uptime ${line#@@kvm modules } s)" ;;
		"@@kvm begin "*)
			set -- ${line#@@kvm begin }
			name=$2
			tstart=$(date +%s%N)
			;;
		"@@kvm out "*) echo "# $name: ${line#@@kvm out }" ;;
		"@@kvm end "*)
			set -- ${line#@@kvm end }
			last=$1
			rc=${2:-none}
			t=$((($(date +%s%N) - tstart) / 1000000))
			if [ "$rc" = 0 ]; then
				echo "ok $1 - $name (${t} ms)"
			elif [ "$rc" = 77 ]; then
				echo "ok $1 - $name # SKIP"
			else
				echo "not ok $1 - $name (exit $rc, ${t} ms)"
			fi
			;;
		"@@kvm done") echo "# QEMU start to last test done: $(ms) ms" ;;
		esac
	done
	# Tests the guest never finished (a panic, a hang and the timeout): failures.
	i=$((last + 1))
	while [ "$i" -le "$ntests" ]; do
		echo "not ok $i - test $i did not finish (the guest stopped; its console follows)"
		i=$((i + 1))
	done
	if [ "$last" -lt "$ntests" ]; then
		tail -n 40 "$log" | sed 's/^/# console: /'
	fi
}
