#!/bin/sh
# The foundation issue's "done when": host programs run in husk do with the expected output and
# status, and every husk process is confined while a sandbox runs.
. "$(dirname "$0")/lib.sh"

expect_output "echo hello" "hello" 0 -- "$HUSK" do -- /bin/echo hello
expect_output "sh arithmetic" "42" 0 -- "$HUSK" do -- /bin/sh -c 'echo $((6*7))'
expect_output "head of os-release matches the host" "$(head -n 1 /etc/os-release)" 0 -- \
	"$HUSK" do -- head -n 1 /etc/os-release
expect_output "sh sees itself as pid 1" "1" 0 -- "$HUSK" do -- sh -c 'echo $$'
expect_status "exit status passes through" 7 -- "$HUSK" do -- sh -c 'exit 7'
expect_output "true" "" 0 -- "$HUSK" do -- /bin/true
expect_status "false" 1 -- "$HUSK" do -- /bin/false
expect_output "cat a host file" "$(cat /etc/hostname 2>/dev/null || true)" 0 -- \
	"$HUSK" do -- cat /etc/hostname
expect_output "ls /usr" "$(ls /usr)" 0 -- "$HUSK" do -- ls /usr
expect_output "PATH lookup" "hi" 0 -- "$HUSK" do -- echo hi
expect_output "cwd option" "/usr/share" 0 -- "$HUSK" do --cwd /usr/share -- /bin/sh -c pwd
expect_output "env option" "bar" 0 -- "$HUSK" do --env FOO=bar -- /bin/sh -c 'echo $FOO'
expect_status "missing command is 127" 127 -- "$HUSK" do -- no-such-command-husk
expect_status "missing path is 127" 127 -- "$HUSK" do -- /no/such/file
expect_status "non-executable file is 126" 126 -- "$HUSK" do -- /etc/os-release

# --strace shows each call with decoded arguments and its result.
trace=$("$HUSK" do --strace -- /bin/echo hi 2>&1 >/dev/null)
if printf "%s\n" "$trace" | grep -qF 'write(1, "hi\n", 3) = 3' &&
	printf "%s\n" "$trace" | grep -qF 'openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC, 0) = 3' &&
	printf "%s\n" "$trace" | grep -qE 'access\("/etc/ld.so.preload", 04\) = -1 ENOENT'; then
	pass "--strace decodes calls and results"
else
	fail "--strace decodes calls and results" "$(printf "%s\n" "$trace" | head -n 12)"
fi

host_release=$(uname -r)
guest_release=$("$HUSK" do -- uname -r 2>&1)
if [ -n "$guest_release" ] && [ "$guest_release" != "$host_release" ]; then
	pass "uname -r is the sentry's ($guest_release), not the host's"
else
	fail "uname -r is the sentry's" "host $host_release, guest $guest_release"
fi
expect_output "uname -s" "Linux" 0 -- "$HUSK" do -- uname -s
expect_output "hostname is the sandbox's" "husk" 0 -- "$HUSK" do -- uname -n

# Writes land in the sandbox's in-memory overlay: they succeed inside and reach nothing.
marker=/tmp/husk-it-marker-$$
out=$("$HUSK" do -- /bin/sh -c "echo x > $marker && read y < $marker && echo \$y" 2>&1)
st=$?
if [ "$st" -eq 0 ] && [ "$out" = x ] && [ ! -e "$marker" ]; then
	pass "writes stay in the sandbox's overlay"
else
	fail "writes stay in the sandbox's overlay" "status $st, output: $out" \
		"marker on the host: $([ -e $marker ] && echo yes || echo no)"
	rm -f "$marker"
fi

if command -v python3 >/dev/null; then
	expect_output "python3 -S" "3" 0 -- "$HUSK" do -- python3 -S -c 'print(1+2)'
	expect_output "python3 with site and json" '1 {"a": 1}' 0 -- "$HUSK" do -- \
		python3 -c 'import json, os, sys; print(os.getpid(), json.dumps({"a": 1}))'
	# An unimplemented call gets ENOSYS and is logged once per sandbox (at level info).
	out=$(HUSK_LOG=info "$HUSK" do -- python3 -S -c \
		'import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(335), l.syscall(335), ctypes.get_errno())' \
		2>/tmp/husk-it-log.$$)
	nlog=$(grep -c 'unimplemented system call .*(335)' /tmp/husk-it-log.$$)
	if [ "$out" = "-1 -1 38" ] && [ "$nlog" = 1 ]; then
		pass "unimplemented calls get ENOSYS and are logged once"
	else
		fail "unimplemented calls get ENOSYS and are logged once" "stdout: $out" \
			"log lines: $nlog" "$(cat /tmp/husk-it-log.$$)"
	fi
	rm -f /tmp/husk-it-log.$$
fi

# stdio that is a regular file shares its offset with the caller, as an inherited FD does:
# output written after husk's lands after the guest's, and a guest's reads and lseeks move the
# caller's offset (head -c rewinds to what it consumed, so cat goes on from there).
io=$(mktemp /tmp/husk-it-io.XXXXXX)
{
	echo first
	"$HUSK" do -- /bin/sh -c 'echo guest; cat /etc/hostname >/dev/null'
	echo last
} >"$io" 2>&1
got=$(tr '\n' ' ' <"$io")
[ "$got" = "first guest last " ] && pass "stdout to a file shares the caller's offset" ||
	fail "stdout to a file shares the caller's offset" "file: $got"
printf '0123456789\n' >"$io"
expect_output "stdin from a file: head's lseek back moves the shared offset" "3456789" 0 -- \
	sh -c "'$HUSK' do -- /bin/sh -c 'head -c 3 >/dev/null; cat' <'$io'"
printf 'line1\nline2\n' >"$io"
expect_output "stdin from a file: the shell's read and cat's copy_file_range continue" \
	"got line1
line2" 0 -- sh -c "'$HUSK' do -- /bin/sh -c 'read -r x; echo \"got \$x\"; cat' <'$io'"
rm -f "$io"

finish
