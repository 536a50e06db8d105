#!/bin/sh
# Templates with husk do: a shell that sets state (a variable, a counter, a file in the overlay),
# says "ready" and waits on its stdin, saved with `husk checkpoint` through `husk do --name`;
# then `husk do --restore`, twice: each continues from the saved state with its own stdin and
# stdout, exits with the status the restored shell chooses, and the two diverge. Bad image
# folders and a command after --restore are refused and leave nothing behind.
. "$(dirname "$0")/lib.sh"

case "$HUSK" in /*) ;; *) HUSK=$(pwd)/$HUSK ;; esac
work=$(mktemp -d /tmp/husk-checkpoint-do.XXXXXX)
root=$work/state
H() { "$HUSK" --root "$root" "$@"; }
cleanup() {
	exec 3>&- 4>&-
	for id in $(H list -q 2>/dev/null); do H delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

# The guest: the host's sh over the host's root (husk do's default), writes in the overlay.
# shellcheck disable=SC2016
GUEST='x=41
n=0
while [ $n -lt 7 ]; do n=$((n + 1)); done
echo template > /tmp/husk-tpl-file
echo ready
read line
n=$((n + 1))
echo "$line" >> /tmp/husk-tpl-file
echo "x=$x n=$n line=$line file=$(tr "\n" , < /tmp/husk-tpl-file)"
case $line in one) exit 11 ;; two) exit 12 ;; *) exit 13 ;; esac'

# Polls (0.05 s steps, up to 60 s; no timing is asserted) until file $1 holds a line $2.
wait_line() {
	i=0
	while [ $i -lt 1200 ]; do
		grep -qx "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# Starts `husk do --name $1 ... -- sh -c GUEST` in the background, its stdin the FIFO $work/$1.in
# held open on fd $2 (so its read waits), its stdout $work/$1.out; sets $bgpid.
start_template() {
	rm -f "$work/$1.in"
	mkfifo "$work/$1.in"
	H do --name "$1" -- sh -c "$GUEST" <"$work/$1.in" >"$work/$1.out" 2>"$work/$1.err" &
	bgpid=$!
	eval "exec $2>\"$work/$1.in\""
}

# --- the template ---
start_template tpl 3
if wait_line "$work/tpl.out" ready; then
	pass "husk do --name: the guest runs and says it is ready"
else
	fail "husk do --name: the guest runs" "$(cat "$work/tpl.out" "$work/tpl.err")"
fi
st=$(H state tpl 2>&1)
case "$st" in
*'"status": "running"'*) pass "husk state knows the husk do sandbox (running)" ;;
*) fail "husk state knows the husk do sandbox" "$st" ;;
esac
expect_output "husk exec into the husk do sandbox sees its overlay" template 0 -- \
	H exec tpl cat /tmp/husk-tpl-file
expect_status "a second husk do --name with the same id is refused" 125 -- \
	H do --name tpl -- true
if H checkpoint --image-path "$work/img" tpl 2>"$work/err"; then
	pass "husk checkpoint of the husk do sandbox"
else
	fail "husk checkpoint of the husk do sandbox" "$(cat "$work/err")"
fi
wait $bgpid
st=$?
exec 3>&-
[ "$st" = 0 ] && pass "the template's husk do exits 0 once checkpointed" ||
	fail "the template's husk do exits 0 once checkpointed" "status $st" \
		"$(cat "$work/tpl.out" "$work/tpl.err")"
[ -s "$work/img/husk-image.pb" ] && [ -s "$work/img/husk-pages.img" ] &&
	pass "the image folder holds the image and its pages" ||
	fail "the image folder holds the image and its pages" "$(ls -l "$work/img" 2>&1)"
[ -z "$(H list -q 2>&1)" ] && [ ! -e "$root/tpl" ] && pass "husk do removed its record" ||
	fail "husk do removed its record" "$(H list 2>&1)" "$(ls -la "$root" 2>&1)"

# --- two restores: each continues from the saved state, with its own stdio ---
expect_output "restore 1 continues with its own stdin and stdout, exit status 11" \
	"x=41 n=8 line=one file=template,one," 11 -- \
	sh -c 'printf "one\n" | "$@"' sh "$HUSK" --root "$root" do --restore "$work/img"
expect_output "restore 2 continues from the image, not from restore 1 (diverged), status 12" \
	"x=41 n=8 line=two file=template,two," 12 -- \
	sh -c 'printf "two\n" | "$@"' sh "$HUSK" --root "$root" do --restore "$work/img"
expect_output "the template's file stayed in the sandboxes (host /tmp untouched)" "" 0 -- \
	sh -c 'cat /tmp/husk-tpl-file 2>/dev/null; exit 0'

# Two restored at once, both waiting (their own FIFOs), named: each is its own sandbox.
mkfifo "$work/r1.in" "$work/r2.in"
H do --name r1 --restore "$work/img" <"$work/r1.in" >"$work/r1.out" 2>&1 &
p1=$!
exec 3>"$work/r1.in"
H do --name r2 --restore "$work/img" <"$work/r2.in" >"$work/r2.out" 2>&1 &
p2=$!
exec 4>"$work/r2.in"
i=0
while [ $i -lt 1200 ] && ! { H exec r1 true && H exec r2 true; } >/dev/null 2>&1; do
	sleep 0.05
	i=$((i + 1))
done
H exec r1 sh -c 'echo r1 >> /tmp/husk-tpl-file' && H exec r2 sh -c 'echo r2 >> /tmp/husk-tpl-file'
a=$(H exec r1 cat /tmp/husk-tpl-file 2>&1 | tr '\n' ,)
b=$(H exec r2 cat /tmp/husk-tpl-file 2>&1 | tr '\n' ,)
[ "$a" = "template,r1," ] && [ "$b" = "template,r2," ] &&
	pass "two restored sandboxes running at once diverge ($a / $b)" ||
	fail "two restored sandboxes running at once diverge" "r1: $a" "r2: $b"
printf 'one\n' >&3
printf 'x\n' >&4
exec 3>&- 4>&-
wait $p1
s1=$?
wait $p2
s2=$?
[ "$s1" = 11 ] && [ "$(cat "$work/r1.out")" = "x=41 n=8 line=one file=template,r1,one," ] &&
	[ "$s2" = 13 ] && [ "$(cat "$work/r2.out")" = "x=41 n=8 line=x file=template,r2,x," ] &&
	pass "each exits with its own status and output (11, 13)" ||
	fail "each exits with its own status and output" "r1: $s1 $(cat "$work/r1.out")" \
		"r2: $s2 $(cat "$work/r2.out")"

# --- --leave-running: the template goes on ---
start_template live 3
wait_line "$work/live.out" ready || fail "the second template runs" "$(cat "$work/live.err")"
if H checkpoint --leave-running --image-path "$work/img2" live 2>"$work/err"; then
	pass "husk checkpoint --leave-running of a husk do sandbox"
else
	fail "husk checkpoint --leave-running of a husk do sandbox" "$(cat "$work/err")"
fi
printf 'two\n' >&3
exec 3>&-
wait $bgpid
st=$?
[ "$st" = 12 ] && [ "$(tail -n 1 "$work/live.out")" = "x=41 n=8 line=two file=template,two," ] &&
	pass "the template left running goes on and exits with its own status" ||
	fail "the template left running goes on" "status $st" "$(cat "$work/live.out")"
expect_output "its image restores too" "x=41 n=8 line=one file=template,one," 11 -- \
	sh -c 'printf "one\n" | "$@"' sh "$HUSK" --root "$root" do --restore "$work/img2"

# --- refused, leaving nothing ---
# expect_refused NAME STDERR-PATTERN -- COMMAND...: exit 125 and a message matching the pattern.
expect_refused() {
	name=$1 pat=$2
	shift 3
	"$@" </dev/null >"$work/out" 2>"$work/err"
	st=$?
	if [ "$st" = 125 ] && grep -q -- "$pat" "$work/err"; then
		pass "$name: $(head -n 1 "$work/err")"
	else
		fail "$name" "status $st (expected 125)" "stderr: $(head -c 600 "$work/err")"
	fi
}
mkdir -p "$work/empty" "$work/garbage" "$work/cut"
head -c 4096 /dev/urandom >"$work/garbage/husk-image.pb"
: >"$work/garbage/husk-pages.img"
size=$(wc -c <"$work/img/husk-image.pb")
head -c $((size / 2)) "$work/img/husk-image.pb" >"$work/cut/husk-image.pb"
cp "$work/img/husk-pages.img" "$work/cut/husk-pages.img"
expect_refused "a missing image folder is refused" "no-such-dir: No such file" -- \
	H do --restore "$work/no-such-dir"
expect_refused "an empty folder is refused" "not a checkpoint image" -- \
	H do --restore "$work/empty"
expect_refused "a garbage image is refused" "restore from $work/garbage" -- \
	H do --name bad1 --restore "$work/garbage"
expect_refused "a truncated image is refused" "restore from $work/cut" -- \
	H do --name bad2 --restore "$work/cut"
expect_refused "a command after --restore is refused" "takes no command" -- \
	H do --restore "$work/img" -- sh -c 'echo ran'
[ ! -s "$work/out" ] && pass "the refused command did not run" ||
	fail "the refused command did not run" "$(cat "$work/out")"
left=$(pgrep -f "$work/(garbage|cut)" 2>/dev/null)
[ -z "$left" ] && [ -z "$(H list -q 2>&1)" ] && [ -z "$(ls "$root" 2>&1)" ] &&
	pass "refused restores leave no process and no record behind" ||
	fail "refused restores leave nothing behind" "processes: $left" "$(ls -la "$root" 2>&1)"

finish
