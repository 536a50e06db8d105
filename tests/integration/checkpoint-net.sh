#!/bin/sh
# husk checkpoint / restore of sockets and anon files: a busybox nc loopback TCP echo server and
# its client checkpointed mid-conversation and still talking after restore; and
# tests/payload/ckpt_helper, which makes an eventfd, timerfds, a signalfd, an epoll, unix
# socketpairs with queued bytes and a file in flight, unix listeners, loopback TCP and UDP, and
# checks each after restore (its own "N passed, M failed" is read back here).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup checkpoint-net
HELPER=${CKPT_HELPER:-$(dirname "$HUSK")/tests/payload/ckpt_helper}
oci_bundle sh echo sleep cat true nc test touch tail
mkdir -p "$bundle/rootfs/tmp"
if [ -x "$HELPER" ]; then
	cp "$HELPER" "$bundle/rootfs/bin/ckpt_helper"
fi



# --- busybox nc: a loopback TCP echo server and its client, mid-conversation ---
set_args sh -c '
nc -l -p 7777 -e cat &
sleep 0.3
(i=0; while :; do i=$((i+1)); echo $i; sleep 0.03; done) | nc 127.0.0.1 7777 |
	while read l; do echo $l > /tmp/echo; done &
while :; do sleep 1; done'
H run -d --bundle "$bundle" nc </dev/null >/dev/null 2>&1 || fail "run the nc pair"
before=$(wait_above nc /tmp/echo 5)
if H checkpoint --image-path "$work/img-nc" nc 2>"$work/err"; then
	pass "checkpoint of an nc server and client talking over loopback TCP"
else
	fail "checkpoint of an nc server and client" "$(cat "$work/err")"
fi
if H restore -d --image-path "$work/img-nc" --bundle "$bundle" nc </dev/null >/dev/null 2>"$work/err"; then
	pass "restore of the nc pair"
else
	fail "restore of the nc pair" "$(cat "$work/err")"
fi
# The reader truncates /tmp/echo before each write: it may be empty when saved.
first=$(wait_above nc /tmp/echo 0)
later=$(wait_above nc /tmp/echo "${first:-0}")
[ -n "$first" ] && [ "$first" -ge "$before" ] && [ "$later" -gt "$first" ] &&
	pass "client -> server -> client still flows after restore ($before -> $first -> $later)" ||
	fail "the nc conversation goes on" "saved $before, after restore $first then $later"
H delete --force nc

# --- the helper: every object checked after restore ---
if [ ! -x "$HELPER" ]; then
	fail "the ckpt_helper payload is built" "$HELPER"
	finish
fi
set_args ckpt_helper wait /tmp
H run -d --bundle "$bundle" objs </dev/null >/dev/null 2>&1 || fail "run ckpt_helper"
wait_exists objs /tmp/ready && pass "ckpt_helper made its objects" ||
	fail "ckpt_helper made its objects" "no /tmp/ready"
if H checkpoint --image-path "$work/img-objs" objs 2>"$work/err"; then
	pass "checkpoint of sockets, eventfd, timerfd, signalfd and epoll"
else
	fail "checkpoint of sockets and anon files" "$(cat "$work/err")"
fi
sleep 2 # an armed timerfd does not count the time the image waits (ckpt_helper checks)
if H restore -d --image-path "$work/img-objs" --bundle "$bundle" objs </dev/null >/dev/null 2>"$work/err"; then
	pass "restore of sockets and anon files"
else
	fail "restore of sockets and anon files" "$(cat "$work/err")"
fi
H exec objs touch /tmp/go
wait_exists objs /tmp/result
res=$(cat_in objs /tmp/result)
echo "$res" | sed 's/^/    /'
echo "$res" | grep -q '^[1-9][0-9]* passed, 0 failed$' &&
	pass "every object checked after restore ($(echo "$res" | tail -1))" ||
	fail "objects after restore" "$(echo "$res" | grep FAIL)" "$(echo "$res" | tail -1)"
H delete --force objs

finish
