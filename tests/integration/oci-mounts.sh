#!/bin/sh
# config.json mounts with a busybox bundle made by `husk spec` (root.readonly true, as runc's):
# binds of single files (rw and ro, over an image file and at a destination the rootfs lacks),
# a directory bind at a mountpoint missing from a read-only root, and noexec tmpfs mounts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup oci-mounts
host=$work/host

mkdir -p "$bundle/rootfs/etc" "$host/secret" "$host/data"
echo "image hosts" >"$bundle/rootfs/etc/hosts"
oci_bundle sh echo cat ls touch stat cp
sed -i -e 's/"terminal": true/"terminal": false/' "$bundle/config.json"
cp "$bundle/config.json" "$work/template.json"

echo "10.1.2.3 db" >"$host/hosts"
echo "s3cret" >"$host/secret/token"
echo "not for the guest" >"$host/secret/sibling"
echo "data file" >"$host/data/f"

# config ROOT_READONLY MOUNTS_JSON ARGS...: config.json from the template with these mounts
# added and these args.
config() {
	python3 - "$work/template.json" "$bundle/config.json" "$@" <<'PY'
import json, sys
src, dst, ro, mounts = sys.argv[1:5]
c = json.load(open(src))
c["root"]["readonly"] = ro == "true"
c["mounts"] += json.loads(mounts)
c["process"]["args"] = sys.argv[5:]
json.dump(c, open(dst, "w"), indent=1)
PY
}
n=0
run() { n=$((n + 1)); H run --bundle "$bundle" "m$n" 2>&1; }

files='[{"destination": "/etc/hosts", "type": "bind", "source": "'$host/hosts'",
	 "options": ["rbind", "rw"]},
	{"destination": "/run/secret/token", "type": "bind", "source": "'$host/secret/token'",
	 "options": ["rbind", "ro", "nosuid", "nodev"]}]'

# --- file binds ---
config true "$files" cat /etc/hosts
expect_output "a file bind shows the host file over the image's" "10.1.2.3 db" 0 -- run
config true "$files" stat -c %F /etc/hosts
expect_output "a bound file is a regular file" "regular file" 0 -- run
config true "$files" sh -c 'echo "10.9.9.9 cache" >>/etc/hosts'
expect_status "a write to a rw file bind succeeds" 0 -- run
[ "$(cat "$host/hosts")" = "10.1.2.3 db
10.9.9.9 cache" ] && pass "the write reached the host file" ||
	fail "the write reached the host file" "$(cat "$host/hosts")"
config false "$files" sh -c 'echo "10.8.8.8 web" >>/etc/hosts; cat /etc/hosts'
expect_output "a file bind over a writable (overlay) root" "10.1.2.3 db
10.9.9.9 cache
10.8.8.8 web" 0 -- run
config true "$files" cat /run/secret/token
expect_output "a file bind at a destination missing from the rootfs" "s3cret" 0 -- run
config true "$files" ls /run/secret
expect_output "nothing of the bound file's directory shows" "token" 0 -- run
config true "$files" sh -c 'echo x >/run/secret/token'
out=$(run)
case "$out" in *"Read-only file system"*) pass "a write to a ro file bind: Read-only file system" ;;
*) fail "a write to a ro file bind: Read-only file system" "$out" ;; esac
[ "$(cat "$host/secret/token")" = s3cret ] && pass "the ro bound file is unchanged" ||
	fail "the ro bound file is unchanged" "$(cat "$host/secret/token")"
if [ ! -e "$bundle/rootfs/run" ] && [ "$(cat "$bundle/rootfs/etc/hosts")" = "image hosts" ]; then
	pass "the rootfs on the host is not written (mountpoints are made in the overlay)"
else
	fail "the rootfs on the host is not written" "$(ls -la "$bundle/rootfs")"
fi

# --- a read-only root with a directory bind at a missing mountpoint ---
data='[{"destination": "/data", "type": "bind", "source": "'$host/data'",
	"options": ["rbind", "rw"]}]'
config true "$data" sh -c 'cat /data/f && touch /data/new'
expect_output "a dir bind at a mountpoint missing from a read-only root" "data file" 0 -- run
[ -e "$host/data/new" ] && pass "the bind keeps its own writability" ||
	fail "the bind keeps its own writability" "$(ls "$host/data")"
config true "$data" touch /x
out=$(run)
case "$out" in *"Read-only file system"*) pass "touch /x on a read-only root: Read-only file system" ;;
*) fail "touch /x on a read-only root: Read-only file system" "$out" ;; esac
[ ! -e "$bundle/rootfs/data" ] && [ ! -e "$bundle/rootfs/x" ] &&
	pass "the read-only rootfs on the host is not written" ||
	fail "the read-only rootfs on the host is not written" "$(ls -la "$bundle/rootfs")"

# --- noexec ---
tmpfs='[{"destination": "/noexec", "type": "tmpfs", "source": "tmpfs",
	 "options": ["nosuid", "nodev", "noexec", "size=8m"]},
	{"destination": "/exec", "type": "tmpfs", "source": "tmpfs",
	 "options": ["nosuid", "nodev", "size=8m"]}]'
config true "$tmpfs" sh -c 'cp /bin/busybox /exec/echo && /exec/echo ran'
expect_output "a binary in a tmpfs without noexec runs" "ran" 0 -- run
config true "$tmpfs" sh -c 'cp /bin/busybox /noexec/echo && /noexec/echo ran'
out=$(run)
case "$out" in *"Permission denied"*) pass "a binary in a noexec tmpfs: Permission denied" ;;
*) fail "a binary in a noexec tmpfs: Permission denied" "$out" ;; esac
bins='[{"destination": "/opt/bin", "type": "bind", "source": "'$host/data'",
	"options": ["rbind", "ro", "noexec"]}]'
cp "$BUSYBOX" "$host/data/echo"
config true "$bins" /opt/bin/echo ran
out=$(run)
case "$out" in *"ermission denied"*) pass "a binary in a noexec bind: Permission denied" ;;
*) fail "a binary in a noexec bind: Permission denied" "$out" ;; esac

finish
