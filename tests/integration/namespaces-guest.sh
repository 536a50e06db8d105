#!/bin/sh
# UTS, IPC, network, user and pid namespaces with real programs (issue 17): util-linux's
# unshare, nsenter, ipcmk and ipcs, su, iproute2's ip. Each command's expected output is the same
# command's run on the host (as root, in namespaces of its own where it would change the host),
# so husk is compared with Linux.
. "$(dirname "$0")/lib.sh"

# native CMD: CMD's stdout on the host, in new UTS and IPC namespaces (it changes nothing).
native() {
	unshare -ui sh -c "$1" 2>/dev/null
}

# compare NAME CMD: CMD in husk prints what it prints on the host.
compare() {
	want=$(native "$2")
	expect_output "$1" "$want" 0 -- "$HUSK" do -- sh -c "$2"
}

if ! command -v unshare >/dev/null || [ "$(id -u)" != 0 ] || ! native true; then
	echo "skip: namespaces-guest: needs root and util-linux's unshare on the host"
	finish
	exit 0
fi

compare "unshare -Ur id" 'unshare -Ur id'
compare "unshare -Ur cat /proc/self/uid_map" 'unshare -Ur cat /proc/self/uid_map'
compare "unshare -Ur: gid_map, setgroups deny" \
	'unshare -Ur sh -c "cat /proc/self/gid_map /proc/self/setgroups"'
compare "unshare -u: hostname inside, the sandbox's unchanged after" \
	'h=$(hostname); unshare -u sh -c "hostname inner; hostname"; [ "$(hostname)" = "$h" ] && echo same'
compare "unshare -u: /proc/sys/kernel/hostname follows the namespace" \
	'unshare -u sh -c "hostname viaproc; cat /proc/sys/kernel/hostname"'
compare "unshare -i: ipcmk -Q, ipcs sees one queue; the outer namespace none" \
	'unshare -i sh -c "ipcmk -Q >/dev/null; ipcs -q | grep -c 0x"; ipcs -q | grep -c 0x; true'
compare "unshare -i: a new IPC namespace is empty" \
	'ipcmk -Q >/dev/null; ipcmk -M 4096 >/dev/null; ipcmk -S 1 >/dev/null; ipcs | grep -c 0x; unshare -i sh -c "ipcs | grep -c 0x"; ipcrm -a; true'
compare "nobody: unshare -Uru, hostname in its own UTS namespace" \
	"su nobody -s /bin/sh -c 'unshare -Uru sh -c \"hostname x; hostname; id -u\"'"
compare "nobody: unshare -u without a user namespace is refused" \
	"su nobody -s /bin/sh -c 'unshare -u true 2>/dev/null || echo refused'"
compare "nsenter -t PID -u: the other process's hostname" \
	'unshare -u sh -c "hostname other; exec sleep 60" & p=$!; while [ "$(cat /proc/$p/comm 2>/dev/null)" != sleep ]; do :; done; nsenter -t $p -u hostname; kill $p'
compare "unshare -n ip addr: lo down, no address" 'unshare -n ip addr'
compare "unshare -n: ip link set lo up; ip addr" "unshare -n sh -c 'ip link set lo up; ip addr'"
compare "unshare -n: lo up then down again keeps 127.0.0.1" \
	"unshare -n sh -c 'ip link set lo up; ip link set lo down; ip addr; ip -6 addr'"
compare "nobody: unshare -Urun, lo up in its own network namespace" \
	"su nobody -s /bin/sh -c 'unshare -Urun sh -c \"ip link set lo up && ip -o -4 addr; id -u\"'"
compare "nobody: unshare -n without a user namespace is refused" \
	"su nobody -s /bin/sh -c 'unshare -n true 2>/dev/null || echo refused'"
compare "stat -L of ns/net: different after unshare -n, equal for a child" \
	'a=$(stat -L -c %i /proc/self/ns/net); b=$(sh -c "stat -L -c %i /proc/\$\$/ns/net"); c=$(unshare -n sh -c "stat -L -c %i /proc/\$\$/ns/net"); [ "$a" = "$b" ] && [ "$a" != "$c" ] && echo ok'
compare "unshare -n: /proc/net/tcp and /proc/self/net/unix of the new namespace are empty" \
	'unshare -n sh -c "wc -l < /proc/net/tcp; wc -l < /proc/self/net/unix"'
compare "veth pair between two network namespaces: addresses, routes, TCP and UDP over it" \
	"sh $(cd "$(dirname "$0")" && pwd)/netns_veth_check.sh"
# The same in a pid namespace of its own: ip link set netns PID names the pid as the caller's
# namespace numbers it.
compare "veth pair, from inside unshare -pf: ip link set netns PID in the caller's numbering" \
	"unshare -pf --mount-proc sh $(cd "$(dirname "$0")" && pwd)/netns_veth_check.sh"
compare "unshare -fp --mount-proc ps -o pid,comm: pid 1 and its own processes only" \
	'unshare -fp --mount-proc ps -o pid,comm'
compare "unshare -mpf --mount-proc: a tmpfs on /mnt, then ps" \
	"unshare -mpf --mount-proc sh -c 'mount -t tmpfs x /mnt && ps'"
compare "unshare -fp: \$\$ is 1, the parent outside is 0" \
	'unshare -fp sh -c "echo \$\$ \$PPID; sh -c \"echo \\\$\\\$ \\\$PPID\""'
compare "nobody: unshare -Urpf, pid 1 in a pid namespace of its user namespace" \
	"su nobody -s /bin/sh -c 'unshare -Urpf sh -c \"echo \\\$\\\$ \\\$PPID; id -u\"'"
compare "stat -L of ns files: equal when shared, different after unshare" \
	'a=$(stat -L -c %i /proc/self/ns/uts); b=$(sh -c "stat -L -c %i /proc/\$\$/ns/uts"); c=$(unshare -u sh -c "stat -L -c %i /proc/\$\$/ns/uts"); [ "$a" = "$b" ] && [ "$a" != "$c" ] && echo ok'
finish
