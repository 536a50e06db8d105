#!/bin/sh
# Hostile checkpoint images restored for real: one image of a busybox shell loop, then N copies
# of it, each corrupted one way (random bytes of the image flipped, the image truncated, bytes of
# the pages file flipped, one varint of the image changed to another value, 8 bytes of a task's
# registers or FP state changed), restored in the foreground. Each attempt either fails with
# a message and leaves nothing behind (no container, no husk-sentry / husk-gofer process with
# that --restore= argument), or starts a sandbox that husk delete removes; the sentry never dies
# of a signal (husk says "the sentry died of signal N", during setup or after: a guest that dies
# of its corrupted memory ends in 128 + N too, by the sentry's exit, which is no failure).
# Seeded: HUSK_MUTATE_SEED replays a run (printed first), HUSK_MUTATE_N sets N (60),
# HUSK_MUTATE_KINDS the corruptions in turn (digits: 0 bits of the image, 1 a cut image, 2 the
# pages file, 3 a varint, 4 registers or FP state; 01234).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

oci_setup checkpoint-mutate
oci_bundle sh echo sleep
mkdir -p "$bundle/rootfs/tmp"
seed=${HUSK_MUTATE_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
n=${HUSK_MUTATE_N:-60}
kinds=${HUSK_MUTATE_KINDS:-01234}
echo "# seed $seed (HUSK_MUTATE_SEED=$seed replays this run), $n images, kinds $kinds"

python3 - "$bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = ["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.02; done"]
c["process"]["terminal"] = False
c["root"]["readonly"] = False
json.dump(c, open(p, "w"), indent=1)
PY

H run -d --bundle "$bundle" src </dev/null >/dev/null 2>&1 || fail "run the loop"
sleep 0.5
# A save refuses an unreaped child (the loop's last sleep, for a moment): try again.
try=0
while ! H checkpoint --image-path "$work/img" src 2>"$work/err" && [ $try -lt 20 ] &&
	grep -q zombie "$work/err"; do
	rm -rf "$work/img"
	sleep 0.05
	try=$((try + 1))
done
if [ -s "$work/img/husk-image.pb" ]; then
	pass "checkpoint of a running shell loop"
else
	fail "checkpoint of a running shell loop" "$(cat "$work/err")"
	finish
fi

# The corrupted copies: $work/m$i/{husk-image.pb,husk-pages.img}, and $work/m$i/what.
python3 - "$work" "$seed" "$n" "$kinds" <<'PY'
import os, random, sys
work, seed, n, kinds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rnd = random.Random(seed)
img = open(f"{work}/img/husk-image.pb", "rb").read()
pages = open(f"{work}/img/husk-pages.img", "rb").read()

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if not c & 0x80:
            return v, i

def enc(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        c = v & 0x7f; v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)

# A message as a list of [field, wire type, value]; length-delimited values that parse as
# messages are parsed too (strings that happen to parse come back the same when packed).
def parse(b):
    out, i = [], 0
    try:
        while i < len(b):
            key, i = varint(b, i)
            f, wt = key >> 3, key & 7
            if f == 0:
                return None
            if wt == 0:
                v, i = varint(b, i)
            elif wt == 1:
                v, i = b[i:i + 8], i + 8
            elif wt == 5:
                v, i = b[i:i + 4], i + 4
            elif wt == 2:
                l, i = varint(b, i)
                if i + l > len(b):
                    return None
                raw = b[i:i + l]; i += l
                sub = parse(raw) if l else None
                v = sub if sub else raw
            else:
                return None
            out.append([f, wt, v])
    except IndexError:
        return None
    return out if i == len(b) else None

def pack(m):
    out = bytearray()
    for f, wt, v in m:
        out += enc(f << 3 | wt)
        if wt == 0:
            out += enc(v)
        elif wt == 2:
            raw = pack(v) if isinstance(v, list) else v
            out += enc(len(raw)) + raw
        else:
            out += v
    return bytes(out)

def varints(m, acc):
    for e in m:
        if e[1] == 0:
            acc.append(e)
        elif e[1] == 2 and isinstance(e[2], list):
            varints(e[2], acc)
    return acc

tree = parse(img)
assert tree and pack(tree) == img, "the image does not re-pack to itself"
interesting = [0, 1, 2, 3, 63, 64, 65, 4095, 4096, 4097, 0x7fffffff, 0x80000000, 0xffffffff,
               1 << 32, 0x7ffffffff000, 1 << 47, 1 << 62, (1 << 63) - 1, 1 << 63,
               (1 << 64) - 4096, (1 << 64) - 1]
for k in range(n):
    d = f"{work}/m{k}"
    os.makedirs(d)
    b, p = bytearray(img), bytearray(pages)
    kind = int(kinds[k % len(kinds)])
    if kind == 0:
        cnt = rnd.randint(1, 8)
        for _ in range(cnt):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        what = f"{cnt} bits of the image flipped"
    elif kind == 1:
        cut = rnd.randrange(len(b))
        b = b[:cut]
        what = f"the image cut to {cut} bytes"
    elif kind == 2:
        cnt = rnd.randint(1, 64)
        for _ in range(cnt):
            p[rnd.randrange(len(p))] = rnd.randrange(256)
        if rnd.random() < 0.25:
            p = p[:rnd.randrange(len(p))]
        what = f"{cnt} bytes of the pages file changed, {len(p)} bytes"
    elif kind == 4:
        # Registers or FP state of a task: 8 random bytes at a random 8-byte slot (a stack
        # pointer, rip, fs_base, eflags, a segment, MXCSR, an xsave header).
        t = parse(img)
        tasks = [e[2] for e in t if e[0] == 6 and isinstance(e[2], list)]
        task = rnd.choice(tasks)
        e = rnd.choice([x for x in task if x[0] in (7, 8)])
        raw = bytearray(pack(e[2]) if isinstance(e[2], list) else e[2])
        at = rnd.randrange(len(raw) // 8) * 8
        raw[at:at + 8] = rnd.choice([bytes(8), b"\xff" * 8, rnd.randbytes(8),
                                     (1 << 47).to_bytes(8, "little")])
        e[2] = bytes(raw)
        b = bytearray(pack(t))
        what = f"bytes {at}..{at + 7} of {'registers' if e[0] == 7 else 'FP state'} changed"
    else:
        t = parse(img)
        vs = varints(t, [])
        e = rnd.choice(vs)
        old = e[2]
        r = rnd.random()
        if r < 0.5:
            e[2] = rnd.choice(interesting)
        elif r < 0.8:
            e[2] = old ^ (1 << rnd.randrange(64))
        else:
            e[2] = (old + rnd.choice([-4096, -1, 1, 4096])) % (1 << 64)
        b = bytearray(pack(t))
        what = f"a varint of field {e[0]} changed from {old:#x} to {e[2]:#x}"
    open(f"{d}/husk-image.pb", "wb").write(b)
    open(f"{d}/husk-pages.img", "wb").write(p)
    open(f"{d}/what", "w").write(what)
PY
[ -d "$work/m0" ] || { fail "corrupted copies made"; finish; }

leftover() { pgrep -f -- "--restore=$1" >/dev/null || pgrep -f -- "restore=$1" >/dev/null; }

refused=0 started=0
i=0
while [ $i -lt "$n" ]; do
	d=$work/m$i
	id=mut$i
	what=$(cat "$d/what")
	H restore --image-path "$d" --bundle "$bundle" "$id" </dev/null >"$d/out" 2>"$d/err" &
	hp=$!
	# Until husk ends (a refusal) or the sandbox runs (up to 20 s).
	up=0 t=0
	while kill -0 $hp 2>/dev/null && [ $t -lt 400 ]; do
		if [ "$(status_of "$id")" = running ]; then
			up=1
			break
		fi
		sleep 0.05
		t=$((t + 1))
	done
	if [ $up = 1 ]; then
		# Running: give a late crash (the first guest instructions) a moment to show.
		sleep 0.3
		H delete --force "$id" >/dev/null 2>&1
		wait $hp 2>/dev/null
		# The guest may die of its corrupted memory (128 + N by the sentry's exit); the
		# sentry may not (husk says so).
		if grep -q "sentry died of signal" "$d/err"; then
			fail "image $i ($what): the sentry crashed after starting" "$(cat "$d/err")"
		elif H state "$id" >/dev/null 2>&1 || leftover "$d"; then
			fail "image $i ($what): started, but delete leaves it behind" "$(H list 2>&1)"
		else
			started=$((started + 1))
		fi
	elif kill -0 $hp 2>/dev/null; then
		fail "image $i ($what): neither refused nor running after 20 s" "$(tail -3 "$d/err")"
		H delete --force "$id" >/dev/null 2>&1
		kill $hp 2>/dev/null
		wait $hp 2>/dev/null
	else
		wait $hp
		st=$?
		err=$(cat "$d/err")
		if grep -q "sentry died of signal" "$d/err"; then
			fail "image $i ($what): the sentry crashed (status $st)" "$err"
		elif [ $st -gt 128 ] && ! grep -q "husk: restore from" "$d/err"; then
			# The restored guest ran and died of a signal (its memory was corrupted).
			started=$((started + 1))
		elif [ $st -eq 0 ] || [ -z "$err" ]; then
			fail "image $i ($what): ended with status $st and no message" "$err"
		elif H state "$id" >/dev/null 2>&1 || leftover "$d"; then
			fail "image $i ($what): refused but left something behind" "$err" \
				"$(H list 2>&1)" "$(pgrep -af -- "restore=$d")"
			H delete --force "$id" >/dev/null 2>&1
		else
			refused=$((refused + 1))
		fi
	fi
	i=$((i + 1))
done
echo "# $refused refused, $started started and deleted"
[ $((refused + started)) -eq "$n" ] &&
	pass "$n corrupted images: each refused with a message and nothing left, or started and deleted" ||
	fail "corrupted images" "$refused refused and $started started of $n"
# The refusals say why (one line each, for the log).
for f in "$work"/m*/err; do
	[ -s "$f" ] && printf '#   %s: %s\n' "$(cat "${f%/err}/what")" "$(head -1 "$f" | cut -c1-110)"
done | head -n 20
H delete --force src >/dev/null 2>&1
finish
