#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A DNS server for escape.sh's DNS probe (issue 18): answers every A query with 169.254.169.254.
#   dns-metadata.py ADDRESS    (UDP port 53; prints "ready" once bound, then serves until killed)
import socket
import sys

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(512)
    if len(q) < 12:
        continue
    end = 12
    while end < len(q) and q[end]:
        end += 1 + q[end]
    question = q[12:end + 5]
    # The id, a response with recursion available, one question, one answer.
    head = q[:2] + b"\x81\x80" + b"\x00\x01\x00\x01\x00\x00\x00\x00"
    answer = b"\xc0\x0c" + b"\x00\x01\x00\x01" + b"\x00\x00\x00\x3c" + b"\x00\x04" + bytes(
        [169, 254, 169, 254])
    s.sendto(head + question + answer, peer)
