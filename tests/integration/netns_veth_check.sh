#!/bin/sh
# namespaces-guest.sh's veth check, run natively and in husk alike: a veth pair made in a new
# network namespace, one end moved into a second one (ip link set netns PID), IPv4 addresses and
# connected routes on each, then TCP and UDP between the two namespaces over it, a connect to
# an address of the subnet nobody holds (ECONNREFUSED: the peer answers for its own only) and
# to another subnet (ENETUNREACH), and the pair gone once the second namespace is. Prints what
# a comparison needs (no MAC addresses, no IPv6: the sandbox's links are IPv4 only).
unshare -n sh -c '
ip link add va type veth peer name vb
# mktemp, not $$: under unshare -pf $$ is 1 in every run (two runs at once shared /tmp/veth.1).
d=$(mktemp -d /tmp/veth.XXXXXX)
t=$d/v
mkfifo $t.go
unshare -n sh -c "echo \$\$ > $t.pid; read x < $t.go; exec python3 > $t.out -c \"
import socket
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.bind((\\\"0.0.0.0\\\",7001))
s=socket.socket(); s.bind((\\\"10.9.0.2\\\",7000)); s.listen(1)
open(\\\"$t.ready\\\",\\\"w\\\").close()
c,a=s.accept(); print(\\\"tcp:\\\",c.recv(100).decode(),a[0])
d,a=u.recvfrom(100); print(\\\"udp:\\\",d.decode(),a[0]); u.sendto(b\\\"pong\\\",a)
\"" &
while [ ! -s $t.pid ]; do :; done
p=$(cat $t.pid)
ip link set vb netns $p
ip addr add 10.9.0.1/24 dev va
ip link set va up
ip -o -4 addr show dev va
ip route
nsenter -t $p -n sh -c "ip addr add 10.9.0.2/24 dev vb; ip -o link show vb | cut -d\" \" -f2-3; ip link set vb up"
ip -o link show va | cut -d" " -f2-3,9
echo go > $t.go
while [ ! -e $t.ready ]; do :; done
python3 -c "
import socket,errno
c=socket.create_connection((\"10.9.0.2\",7000)); print(\"client from\", c.getsockname()[0]); c.send(b\"hello\")
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.sendto(b\"ping\",(\"10.9.0.2\",7001)); print(\"reply:\",u.recvfrom(100)[0].decode())
for a in (\"10.9.0.2\",\"10.8.0.1\"):
    try: socket.create_connection((a,7002))
    except OSError as e: print(a,errno.errorcode[e.errno])
"
wait
cat $t.out
while ip link show va >/dev/null 2>&1; do :; done
echo "va gone with the other namespace"
rm -rf $d
'
