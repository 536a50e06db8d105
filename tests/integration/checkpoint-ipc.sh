#!/bin/sh
# husk checkpoint / restore of System V IPC and POSIX message queues: tests/payload/ipc_helper
# makes a keyed shm segment with a pattern (attached) and one removed while attached, a semaphore
# set with a SEM_UNDO child and a child blocked in semop, a message queue with three messages and
# a child blocked in msgrcv, a POSIX queue with prioritised messages, and removed probes; after
# the restore it checks each (the attachment still aliases its segment, the blocked calls go on,
# new ids do not reuse old ones) and its own "N passed, M failed" is read back here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup checkpoint-ipc
HELPER=${IPC_HELPER:-$(dirname "$HUSK")/tests/payload/ipc_helper}
oci_bundle sh cat test touch
mkdir -p "$bundle/rootfs/tmp"
if [ ! -x "$HELPER" ]; then
	fail "the ipc_helper payload is built" "$HELPER"
	finish
fi
cp "$HELPER" "$bundle/rootfs/bin/ipc_helper"



set_args ipc_helper wait /tmp
H run -d --bundle "$bundle" ipc </dev/null >/dev/null 2>&1 || fail "run ipc_helper"
wait_exists ipc /tmp/ready && pass "ipc_helper made its objects" ||
	fail "ipc_helper made its objects" "no /tmp/ready"
if H checkpoint --image-path "$work/img" ipc 2>"$work/err"; then
	pass "checkpoint of shm, semaphores, message queues and POSIX queues"
else
	fail "checkpoint of IPC objects" "$(cat "$work/err")"
fi
if H restore -d --image-path "$work/img" --bundle "$bundle" ipc </dev/null >/dev/null 2>"$work/err"; then
	pass "restore of IPC objects"
else
	fail "restore of IPC objects" "$(cat "$work/err")"
fi
H exec ipc touch /tmp/go
wait_exists ipc /tmp/result
res=$(H exec ipc cat /tmp/result 2>/dev/null)
echo "$res" | sed 's/^/    /'
echo "$res" | grep -q '^[1-9][0-9]* passed, 0 failed$' &&
	pass "every IPC object checked after restore ($(echo "$res" | tail -1))" ||
	fail "IPC objects after restore" "$(echo "$res" | grep FAIL)" "$(echo "$res" | tail -1)"
H delete --force ipc

# A queue with an mq_notify registration is refused, naming it, and the sandbox goes on.
set_args ipc_helper notify /tmp
H run -d --bundle "$bundle" notify </dev/null >/dev/null 2>&1 || fail "run ipc_helper notify"
wait_exists notify /tmp/ready || fail "ipc_helper registered mq_notify" "no /tmp/ready"
if H checkpoint --image-path "$work/img-notify" notify 2>"$work/err"; then
	fail "a checkpoint with an mq_notify registration is refused" "it succeeded"
else
	grep -q "mq_notify" "$work/err" &&
		pass "a checkpoint with an mq_notify registration is refused, naming it" ||
		fail "the refusal names mq_notify" "$(cat "$work/err")"
fi
H exec notify test -e /tmp/ready 2>/dev/null &&
	pass "the sandbox runs on after the refused checkpoint" ||
	fail "the sandbox runs on after the refused checkpoint"
H delete --force notify

finish
