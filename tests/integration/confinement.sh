#!/bin/sh
# While a sandbox runs: every husk-sentry, husk-gofer and husk-stub process is under seccomp
# (Seccomp: 2), the sentry's root is empty, and a guest holding /etc/passwd open leaves no host
# FD to it in the stub (DESIGN.md rules 2, 3, 5).
. "$(dirname "$0")/lib.sh"

dir=$(mktemp -d /tmp/husk-conf.XXXXXX)
fifo=$dir/fifo
mkfifo "$fifo"
# The guest opens /etc/passwd on fd 3, then blocks reading the fifo (its stdin).
"$HUSK" do -- /bin/sh -c 'exec 3</etc/passwd; read x; echo done' <"$fifo" >"$dir/out" 2>&1 &
husk_pid=$!
exec 9>"$fifo"

children() { ps -o pid= --ppid "$1" 2>/dev/null; }
comm() { cat "/proc/$1/comm" 2>/dev/null; }

sentry= gofer= stub=
i=0
while [ $i -lt 100 ]; do
	for p in $(children $husk_pid); do
		case $(comm $p) in
		husk-sentry) sentry=$p ;;
		husk-gofer) gofer=$p ;;
		esac
	done
	if [ -n "$sentry" ]; then
		for p in $(children $sentry); do
			[ "$(comm $p)" = husk-stub ] && stub=$p
		done
	fi
	# Ready when the guest holds fd 3 (the sentry has a donated FD for /etc/passwd).
	if [ -n "$stub" ] && ls -l /proc/$sentry/fd 2>/dev/null | grep -q '/etc/passwd'; then
		break
	fi
	sleep 0.1
	i=$((i + 1))
done

if [ -z "$sentry" ] || [ -z "$gofer" ] || [ -z "$stub" ]; then
	fail "found the sandbox's processes" "sentry=$sentry gofer=$gofer stub=$stub" \
		"output: $(cat $dir/out)"
else
	pass "found the sandbox's processes (sentry $sentry, gofer $gofer, stub $stub)"
	for p in $sentry $gofer $stub; do
		s=$(awk '/^Seccomp:/ {print $2}' /proc/$p/status)
		if [ "$s" = 2 ]; then
			pass "$(comm $p) is in seccomp filter mode"
		else
			fail "$(comm $p) is in seccomp filter mode" "Seccomp: $s"
		fi
	done
	root_list=$(ls -A /proc/$sentry/root/ 2>&1)
	if [ -z "$root_list" ]; then
		pass "the sentry's root directory is empty"
	else
		fail "the sentry's root directory is empty" "it lists: $root_list"
	fi
	stub_fds=$(for f in /proc/$stub/fd/*; do readlink "$f"; done)
	if echo "$stub_fds" | grep -q passwd; then
		fail "the stub holds no FD to the guest's files" "stub FDs: $stub_fds"
	else
		pass "the stub holds no FD to the guest's files"
	fi
	nfds=$(echo "$stub_fds" | grep -c .)
	nsock=$(echo "$stub_fds" | grep -c '^socket:')
	# seccomp's stubs also hold their socket to the sentry (sentry/platform/seccomp/README.md).
	if [ "${HUSK_PLATFORM:-}" = seccomp ]; then
		want=2 what="the memory file and its socket to the sentry"
	else
		want=1 what="the memory file"
	fi
	if [ "$nfds" = "$want" ] && [ "$nsock" = $((want - 1)) ] &&
		echo "$stub_fds" | grep -q memfd; then
		pass "the stub's only FDs are $what"
	else
		fail "the stub's only FDs are $what" "stub FDs: $stub_fds"
	fi
	if ls -l /proc/$sentry/fd | grep -q '/etc/passwd'; then
		pass "the sentry holds the donated FD"
	else
		fail "the sentry holds the donated FD" "$(ls -l /proc/$sentry/fd)"
	fi
	maps=$(grep -v -e memfd -e vsyscall /proc/$stub/maps | wc -l)
	if [ "$maps" -le 2 ]; then
		pass "the stub maps nothing of the sentry but its code"
	else
		fail "the stub maps nothing of the sentry but its code" "$(cat /proc/$stub/maps)"
	fi
fi

exec 9>&-
wait $husk_pid
st=$?
if [ "$st" = 0 ] && grep -q done "$dir/out"; then
	pass "the guest finishes when its stdin closes"
else
	fail "the guest finishes when its stdin closes" "status $st, output: $(cat $dir/out)"
fi
sleep 0.2
left=""
for p in $sentry $gofer $stub; do
	[ -d /proc/$p ] && left="$left $p"
done
if [ -z "$left" ]; then
	pass "no husk process is left behind"
else
	fail "no husk process is left behind" "still there:$left"
fi
rm -rf "$dir"
finish
