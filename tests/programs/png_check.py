#!/usr/bin/env python3
"""png_check.py FILE: decodes an 8-bit RGB or RGBA PNG (non-interlaced, as Chromium writes) with
the standard library and prints "WIDTHxHEIGHT blue=N red=N white=N": the pixels close to the
test page's blue box (#0000aa), to its red heading (#cc0000) and white. Exit 1 on a PNG it
cannot read."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unsupported PNG: depth %d type %d interlace %d" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    try:
        w, h, bpp, rows = pixels(sys.argv[1])
    except (OSError, ValueError, zlib.error, struct.error, TypeError) as e:
        print("unreadable: %s" % e)
        return 1
    blue = red = white = 0
    for line in rows:
        for x in range(0, w * bpp, bpp):
            r, g, b = line[x], line[x + 1], line[x + 2]
            if r < 30 and g < 30 and 150 < b < 190:
                blue += 1
            elif 180 < r < 225 and g < 30 and b < 30:
                red += 1
            elif r > 245 and g > 245 and b > 245:
                white += 1
    print("%dx%d blue=%d red=%d white=%d" % (w, h, blue, red, white))
    return 0


sys.exit(main())
