#!/bin/sh
# husk-agent (runtime/serve/agent), the in-guest helper of husk serve: every check runs twice,
# natively in a temp dir and inside husk (`husk do --volume DIR:/w -- husk-agent ...`), and
# agent_check.py compares what the agent says and writes with what the host sees.
. "$(dirname "$0")/lib.sh"
: "${HUSK_AGENT:?set HUSK_AGENT to the husk-agent binary}"
here=$(cd "$(dirname "$0")" && pwd)
check="python3 $here/agent_check.py"
# Absolute: husk do runs the agent with / as its working directory.
HUSK_AGENT=$(realpath "$HUSK_AGENT")

command -v python3 >/dev/null || {
	echo "ok - SKIP all: no python3"
	finish
}

work=$(mktemp -d /tmp/husk-agent-test.XXXXXX)
trap 'chmod -R u+rwx "$work" 2>/dev/null; rm -rf "$work"' EXIT
src=$work/src
mkdir "$work/native" "$work/husk"
$check setup "$work" "$work/native" /w || fail "make the trees and archives"
python3 -S -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 257)' >"$work/bytes"

# ag ARGS...: the agent, natively or inside husk with $host served at /w. $root is what the agent
# calls $host.
ag() {
	if [ "$mode" = native ]; then
		"$HUSK_AGENT" "$@"
	else
		"$HUSK" do --volume "$host:/w" -- "$HUSK_AGENT" "$@"
	fi
}

# run NAME WANT-STATUS ARGS... <stdin: the agent's status must be WANT; its stdout is in $out.
runs=0
run() {
	name=$1 want=$2
	shift 2
	runs=$((runs + 1))
	out=$work/out.$runs
	ag "$@" >"$out" 2>"$work/err"
	st=$?
	if [ "$st" != "$want" ]; then
		fail "$mode: $name" "expected status $want, got $st" "stderr: $(head -c 600 "$work/err")"
		return 1
	fi
	return 0
}

# verify NAME CHECK ARGS...: queues a check of agent_check.py; run_checks runs the queue.
verify() {
	name=$1
	shift
	(
		IFS='	'
		printf '%s\t%s\n' "$mode: $name" "$*"
	) >>"$work/checks"
}

run_checks() {
	[ -s "$work/checks" ] || return 0
	$check batch "$work/checks" >"$work/results" 2>&1
	want=$(wc -l <"$work/checks") got=0
	while IFS= read -r line; do
		case $line in
		"ok - "*)
			pass "${line#ok - }"
			got=$((got + 1))
			;;
		"not ok - "*)
			fail "${line#not ok - }"
			got=$((got + 1))
			;;
		*) echo "$line" ;;
		esac
	done <"$work/results"
	[ "$got" = "$want" ] || fail "every check ran" "$got of $want"
	rm -f "$work/checks"
}

no_tmp_left() {
	left=$(find "$1" -name '*.husk-tmp.*' -o -name '.husk-tmp.*')
	[ -z "$left" ] || fail "$mode: $2: a temporary file is left" "$left"
}

for mode in native husk; do
	host=$work/$mode
	if [ "$mode" = native ]; then root=$host; else root=/w; fi

	# put/get: every byte value, parents created, the mode as given whatever the umask.
	if run "put" 0 put "$root/up/sub/bytes.bin" 0604 <"$work/bytes"; then
		verify "put: reply" put "$out" "$root/up/sub/bytes.bin" 65792
		if cmp -s "$work/bytes" "$host/up/sub/bytes.bin" &&
			[ "$(stat -c %a "$host/up/sub/bytes.bin")" = 604 ] &&
			[ "$(stat -c %a "$host/up/sub")" = 755 ]; then
			pass "$mode: put: every byte, mode 0604, parents 0755"
		else
			fail "$mode: put: every byte, mode 0604, parents 0755" \
				"$(ls -la "$host/up/sub" 2>&1)"
		fi
	fi
	if run "get" 0 get "$root/up/sub/bytes.bin"; then
		if cmp -s "$work/bytes" "$out"; then
			pass "$mode: get: the same 65792 bytes"
		else
			fail "$mode: get: the same 65792 bytes" "$(cmp "$work/bytes" "$out" 2>&1)"
		fi
	fi
	printf 'new' >"$work/new"
	run "put replaces" 0 put "$root/up/sub/bytes.bin" <"$work/new" &&
		verify "put replaces: reply" put "$out" "$root/up/sub/bytes.bin" 3
	if [ "$(cat "$host/up/sub/bytes.bin")" = new ] &&
		[ "$(stat -c %a "$host/up/sub/bytes.bin")" = 644 ]; then
		pass "$mode: put replaces, mode 0644 by default"
	else
		fail "$mode: put replaces, mode 0644 by default" "$(ls -la "$host/up/sub")"
	fi
	no_tmp_left "$host/up" "put"

	# Bad paths, and the errno codes.
	run "relative path: 2" 2 stat up && pass "$mode: a relative path: 2"
	run "empty path: 2" 2 stat "" && pass "$mode: an empty path: 2"
	run "a .. component: 2" 2 get "$root/up/../up/sub/bytes.bin" && pass "$mode: a .. component: 2"
	run "bad mode: 2" 2 put "$root/m" 9999 </dev/null && pass "$mode: a bad mode: 2"
	run "missing: 3" 3 get "$root/missing" && pass "$mode: get of a missing file: 3"
	run "directory: 4" 4 get "$root/up" && pass "$mode: get of a directory: 4"
	run "put onto a directory: 4" 4 put "$root/up" </dev/null && pass "$mode: put onto a directory: 4"
	run "put below a file: 4" 4 put "$root/up/sub/bytes.bin/x" </dev/null &&
		pass "$mode: put below a file: 4"
	run "ls of a file: 4" 4 ls "$root/up/sub/bytes.bin" && pass "$mode: ls of a file: 4"
	no_tmp_left "$host/up" "failed puts"

	# stat and ls against lstat on the host (names that need escaping included).
	cp -a "$src/tree" "$host/tree"
	printf 'x' >"$host/tree/$(printf 'ctl\001 quote" back\\ tab\t nl\n bad\377 end')"
	ln -s "$(printf 'target\001\377')" "$host/tree/odd-target"
	# Overlong, surrogate, truncated and past U+10FFFF, between valid 4- and 2-byte characters.
	printf 'y' >"$host/tree/$(printf 'ovl\300\257 sur\355\240\200 cut\342\202 4b\360\237\230\200 big\364\220\200\200 e\303\251')"
	for p in bytes script rel-link sub; do
		run "stat $p" 0 stat "$root/tree/$p" &&
			verify "stat $p" stat "$out" "$host/tree/$p" "$root/tree/$p"
	done
	run "ls" 0 ls "$root/tree" && verify "ls (sorted, escaped)" ls "$out" "$host/tree" "$root/tree"
	run "ls of an empty directory" 0 ls "$root/tree/sub/private" &&
		verify "ls of a small directory" ls "$out" "$host/tree/sub/private" "$root/tree/sub/private"

	# tar-c: read back by GNU tar and python's tarfile.
	if run "tar-c" 0 tar-c "$root/tree/sub"; then
		cp "$out" "$work/sub.tar"
		list=$(tar -tvf "$work/sub.tar" 2>&1 | awk '{print $1, $6}')
		want=$(printf '%s\n' "drwxr-xr-x sub/" "drwx------ sub/private/" "-rw------- sub/private/key")
		if [ "$list" = "$want" ]; then
			pass "$mode: tar-c: tar -tv lists it"
		else
			fail "$mode: tar-c: tar -tv lists it" "got: $list" "want: $want"
		fi
	fi
	run "tar-c of a tree" 0 tar-c "$root/tree" && cp "$out" "$work/tree-$mode.tar" &&
		verify "tar-c: python's tarfile reads it back" tarfile "$work/tree-$mode.tar" "$host/tree"
	mkdir "$work/gnu-x-$mode"
	if tar -C "$work/gnu-x-$mode" -xf "$work/tree-$mode.tar" 2>"$work/err"; then
		verify "tar-c: GNU tar extracts it" tree "$host/tree" "$work/gnu-x-$mode/tree"
	else
		fail "$mode: tar-c: GNU tar extracts it" "$(head -c 600 "$work/err")"
	fi

	# tar-x of archives by GNU tar and tarfile (long names, symlinks, modes).
	for a in gnu posix py-pax py-gnu; do
		run "tar-x $a" 0 tar-x "$root/x/$a" <"$work/archives/$a.tar" &&
			verify "tar-x $a: reply" tar-x "$out" "$root/x/$a" 16 &&
			verify "tar-x $a: the same tree" tree "$src/tree" "$host/x/$a/tree"
	done
	# And our own tar-c output, fed back in.
	run "tar-x of tar-c" 0 tar-x "$root/x/own" <"$work/tree-$mode.tar" &&
		verify "tar-x of tar-c: the same tree" tree "$host/tree" "$host/x/own/tree"
	if run "tar-x of a truncated archive: 2" 2 tar-x "$root/x/cut" <"$work/archives/truncated.tar"; then
		if [ "$(ls -A "$host/x/cut")" = first ]; then
			pass "$mode: tar-x of a truncated archive: 2, the cut member not left"
		else
			fail "$mode: tar-x of a truncated archive: 2, the cut member not left" \
				"$(ls -A "$host/x/cut")"
		fi
	fi
	no_tmp_left "$host/x" "tar-x"

	# Hostile archives: refused (2), nothing past the bad member, nothing outside.
	mkdir -p "$host/outside"
	echo secret >"$host/outside/secret"
	for t in "$work/hostile-$mode/"*.tar; do
		n=$(basename "$t" .tar)
		rm -rf "$host/h"
		if run "hostile $n" 2 tar-x "$root/h/d" <"$t"; then
			if [ -f "$host/h/d/good1" ] && [ ! -e "$host/h/d/good2" ] &&
				[ ! -e "$host/h/escaped" ] &&
				[ "$(ls -A "$host/outside")" = secret ] &&
				[ "$(cat "$host/outside/secret")" = secret ] &&
				[ "$(stat -c %h "$host/outside/secret")" = 1 ]; then
				pass "$mode: hostile $n: refused, nothing written outside"
			else
				fail "$mode: hostile $n: refused, nothing written outside" \
					"$(cd "$host" && find h outside -ls 2>&1)"
			fi
		fi
	done
	run_checks
done

# put onto a full tmpfs: 5, and no temporary file left.
out=$("$HUSK" do --tmpfs /t:size=1m -- /bin/sh -c \
	"head -c 3000000 /dev/zero | '$HUSK_AGENT' put /t/big; echo status=\$?; ls -A /t" 2>"$work/err")
if [ "$out" = "status=5" ]; then
	pass "husk: put onto a full tmpfs: 5, nothing left"
else
	fail "husk: put onto a full tmpfs: 5, nothing left" "got: $out" "stderr: $(cat "$work/err")"
fi
if unshare -m true 2>/dev/null; then
	out=$(unshare -m /bin/sh -c "mount -t tmpfs -o size=1m none '$work/native' &&
		head -c 3000000 /dev/zero | '$HUSK_AGENT' put '$work/native/big'; echo status=\$?;
		ls -A '$work/native'" 2>"$work/err")
	if [ "$out" = "status=5" ]; then
		pass "native: put onto a full tmpfs: 5, nothing left"
	else
		fail "native: put onto a full tmpfs: 5, nothing left" "got: $out" "stderr: $(cat "$work/err")"
	fi
else
	echo "ok - SKIP native: put onto a full tmpfs (no mount namespace for a tmpfs)"
fi

# init: reaps the zombie it inherits and an orphan that exits, and exits 0 on SIGTERM.
for mode in native husk; do
	if [ "$mode" = native ]; then
		out=$(timeout 60 $check init "$HUSK_AGENT" 2>&1)
	else
		out=$(timeout 60 "$HUSK" do -- python3 "$here/agent_check.py" init "$HUSK_AGENT" 2>&1)
	fi
	st=$?
	if [ "$st" = 0 ] && [ "$out" = "ok - init reaps" ]; then
		pass "$mode: init reaps and exits 0 on SIGTERM"
	else
		fail "$mode: init reaps and exits 0 on SIGTERM" "status $st" "$out"
	fi
done

finish
