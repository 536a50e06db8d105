#!/bin/sh
# A restored sandbox's memory (sentry/state/README.md, "Restores that share pages"): the image's
# pages are mapped from the pages file until written, so every restore of one image shares them.
# A python3 guest (the host's / as root) fills a heap and a mapping it made with mmap(2) with a
# pattern it can check page by page, then obeys commands; after restore each command changes or
# checks its memory: writes (copy from the image), a fork whose child writes its copy, mremap of
# a mapping to another address, MADV_DONTNEED, a checkpoint of a restored sandbox (pages it never
# touched must be in the new image) and two restores of one image that diverge.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

command -v python3 >/dev/null || {
	echo "ok - SKIP all: no python3"
	finish
}
oci_setup checkpoint-memory
mkdir -p "$bundle"
(cd "$bundle" && "$HUSK" spec) || fail "husk spec"

cat >"$work/guest.py" <<'PY'
import ctypes, mmap, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                        ctypes.c_void_p]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PAGE = 4096
HEAP = 12 << 20           # a bytearray: python's heap (malloc's mmap)
REGION = 2 << 20          # a private anonymous mapping made here, moved by mremap later
heap = bytearray(HEAP)
for p in range(HEAP // PAGE):
    heap[p * PAGE:p * PAGE + 8] = p.to_bytes(8, "little")
    heap[p * PAGE + 8:p * PAGE + 16] = b"original"
region = libc.mmap(None, REGION, mmap.PROT_READ | mmap.PROT_WRITE,
                   mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
for p in range(REGION // PAGE):
    ctypes.memmove(region + p * PAGE, (p + 7777).to_bytes(8, "little") + b"regionpg", 16)
marks = {}                # page -> the 8 bytes written there since (heap)
zeroed = set()            # region pages dropped with MADV_DONTNEED

def check():
    """Every page as the history says; the reference is computed, not read back."""
    for p in range(HEAP // PAGE):
        want = p.to_bytes(8, "little") + marks.get(p, b"original")
        if bytes(heap[p * PAGE:p * PAGE + 16]) != want:
            return "heap page %d: %r" % (p, bytes(heap[p * PAGE:p * PAGE + 16]))
    for p in range(REGION // PAGE):
        got = ctypes.string_at(region + p * PAGE, 16)
        want = bytes(16) if p in zeroed else (p + 7777).to_bytes(8, "little") + b"regionpg"
        if got != want:
            return "region page %d: %r" % (p, got)
    return "ok"

def write(mark, pages):
    for p in pages:
        heap[p * PAGE + 8:p * PAGE + 16] = mark
        marks[p] = mark

def run(cmd):
    global region
    if cmd == "check":
        return check()
    if cmd.startswith("write "):  # a mark in every other page of the first half
        write(cmd[6:14].encode().ljust(8, b"_"), range(0, HEAP // PAGE // 2, 2))
        return check()
    if cmd == "fork":  # the child writes every page of its copy; the parent's stay
        pid = os.fork()
        if pid == 0:
            write(b"childpg_", range(HEAP // PAGE))
            os._exit(0 if check() == "ok" else 1)
        _, st = os.waitpid(pid, 0)
        return ("child failed %d; " % st if st else "") + check()
    if cmd == "mremap":  # move the region to another address (MREMAP_MAYMOVE|MREMAP_FIXED)
        dest = libc.mmap(None, REGION, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                         -1, 0)
        new = libc.mremap(region, REGION, REGION, 3, dest)
        if new != dest:
            return "mremap failed: %d" % ctypes.get_errno()
        region = new
        return check()
    if cmd == "dontneed":  # 16 pages in the middle of the region read zero again
        if libc.madvise(region + 64 * PAGE, 16 * PAGE, 4) != 0:
            return "madvise failed: %d" % ctypes.get_errno()
        zeroed.update(range(64, 80))
        return check()
    return "unknown command " + cmd

open("/tmp/ready", "w").write(check())
while True:
    try:
        cmd = open("/tmp/cmd").read().strip()
    except FileNotFoundError:
        time.sleep(0.01)
        continue
    os.unlink("/tmp/cmd")
    open("/tmp/out.tmp", "w").write(run(cmd))
    os.rename("/tmp/out.tmp", "/tmp/out")
PY

host_root_args python3 "$work/guest.py"

# Runs command $2 in guest $1 and prints its answer.
cmd() {
	H exec "$1" sh -c "rm -f /tmp/out; echo '$2' > /tmp/cmd.tmp && mv /tmp/cmd.tmp /tmp/cmd" ||
		{
			echo "exec failed"
			return 1
		}
	wait_file "$1" /tmp/out
}
# Checks that command $2 in guest $1 answers ok.
expect_ok() {
	out=$(cmd "$1" "$2")
	[ "$out" = ok ] && pass "$3" || fail "$3" "$out"
}
# The host processes of container $1's sandbox that map its image's pages file (the stubs).
maps_pages() {
	spid=$(H state "$1" 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
	n=0
	for p in $(ps -o pid= --ppid "$spid" 2>/dev/null); do
		grep -q "husk-pages.img" "/proc/$p/maps" 2>/dev/null && n=$((n + 1))
	done
	echo $n
}

H run -d --bundle "$bundle" orig </dev/null >/dev/null 2>&1 || fail "run the guest"
r=$(wait_file orig /tmp/ready)
[ "$r" = ok ] && pass "the guest filled its memory" || fail "the guest filled its memory" "$r"
H checkpoint --image-path "$work/img" orig 2>"$work/err" ||
	fail "checkpoint" "$(cat "$work/err")"

# --- two restores of one image: the pages file mapped, shared, never written ---
for id in r1 r2; do
	H restore -d --image-path "$work/img" --bundle "$bundle" $id </dev/null >/dev/null \
		2>"$work/err" || fail "restore $id" "$(cat "$work/err")"
done
expect_ok r1 check "a restored guest reads every page as it was saved"
expect_ok r2 check "a second restore of the image reads the same"
n=$(maps_pages r1)
[ "$n" -ge 1 ] && pass "the restored guest's pages are mapped from the pages file ($n stubs)" ||
	fail "the pages file is mapped by the restored sandbox" "$n processes map it"
# The stubs that map it are as confined as a fresh sandbox's: under seccomp, holding only the
# memory file, their socket and the pages file (read-only: never written, checked below).
spid=$(H state r1 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
bad=
for p in $(ps -o pid= --ppid "$spid" 2>/dev/null); do
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$p/status" || bad="$bad $p:no-seccomp"
	for f in /proc/$p/fd/*; do
		t=$(readlink "$f" 2>/dev/null) || continue
		case $t in
		/memfd:* | socket:* | */husk-pages.img) ;;
		*) bad="$bad $p:$t" ;;
		esac
	done
done
[ -n "$spid" ] && [ -z "$bad" ] &&
	pass "the restored sandbox's stubs are under seccomp and hold only their own files" ||
	fail "restored stubs' confinement" "sentry ${spid:-none}:$bad"
expect_ok r1 "write first" "writes to restored pages (copied from the image) land"
expect_ok r2 check "the other restore does not see them (the pages file is not written)"
expect_ok r1 "write second" "a second write to the same pages"
expect_ok r2 fork "a fork in a restored sandbox: the child's writes stay in its copy"
expect_ok r2 mremap "mremap moves restored pages to another address"
expect_ok r2 dontneed "MADV_DONTNEED on restored pages reads zeros there, the rest intact"
expect_ok r2 "write third" "writes after fork, mremap and madvise"

# --- a checkpoint of a restored sandbox holds the pages it never touched ---
H checkpoint --leave-running --image-path "$work/img2" r1 2>"$work/err" ||
	fail "checkpoint of a restored sandbox" "$(cat "$work/err")"
H restore -d --image-path "$work/img2" --bundle "$bundle" r3 </dev/null >/dev/null 2>"$work/err" ||
	fail "restore r3" "$(cat "$work/err")"
expect_ok r3 check "a restore of a restored sandbox's checkpoint has all its pages"
expect_ok r1 check "the sandbox checkpointed with --leave-running goes on"

# --- the same image with the pages copied in (HUSK_RESTORE_COPY=1): same memory, no mapping ---
HUSK_RESTORE_COPY=1 H restore -d --image-path "$work/img" --bundle "$bundle" r4 </dev/null \
	>/dev/null 2>"$work/err" || fail "restore r4" "$(cat "$work/err")"
expect_ok r4 check "a restore that copies the pages reads the same"
[ "$(maps_pages r4)" = 0 ] && pass "... and maps no pages file" ||
	fail "HUSK_RESTORE_COPY=1 still maps the pages file"

# --- a new checkpoint into the image folder restores are running from ---
H checkpoint --leave-running --image-path "$work/img" r4 2>"$work/err" ||
	fail "checkpoint into a folder in use" "$(cat "$work/err")"
expect_ok r2 "write fourth" "restores of the old image go on after it was replaced"
expect_ok r1 check "... all of them"

for id in orig r1 r2 r3 r4; do H delete --force $id >/dev/null 2>&1; done
[ -z "$(H list -q)" ] && pass "every container deleted" || fail "containers left" "$(H list -q)"
finish
