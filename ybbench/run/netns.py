"""A partition (`--event AT:partition:SERVICE`, `heal:SERVICE`): blackhole
routes to the other YugabyteDB servers in one container's own network
namespace, so it runs on, reachable by everyone else (clients, Prometheus,
the host), while every packet it sends to a peer, its replies to a peer's
connection included, is dropped by its own kernel. Nothing leaves the
machine, and the engine's networks are left as they are: compose's file
puts every service on one network, so `docker network disconnect` could
only cut a server off from everything, its clients too.

The routes are made through rtnetlink by a short-lived helper container
that joins the target's network namespace (`docker run --network
container:ID --cap-add NET_ADMIN`), from the target's own image and its
python3 (yugabytedb/yugabyte has one: yugabyted's language), so nothing
runs inside the server's container and no other image is needed. Our
routes carry their own protocol number (ROUTE_PROTO): heal removes those
and no other.
"""

from __future__ import annotations

import json
import subprocess

# rtm_protocol of our routes: above the kernel's and routing daemons' own
# (include/uapi/linux/rtnetlink.h RTPROT_*; iproute2's rt_protos).
ROUTE_PROTO = 0xB9

# Run in the target's network namespace: `add IP...` adds a blackhole route
# to each, `del` removes ours; either way prints ours as a JSON list.
HELPER = r"""
import json, socket, struct, sys
PROTO, BLACKHOLE, MAIN = %d, 6, 254
NEW, DEL, GET, ERROR, DONE = 24, 25, 26, 2, 3
REQ, ACK, DUMP, CREATE_EXCL = 1, 4, 0x300, 0x600
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s.bind((0, 0))
seq = 0
def send(kind, flags, body):
    global seq
    seq += 1
    s.send(struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body)
def messages():
    while True:
        data = s.recv(1 << 16)
        i = 0
        while i + 16 <= len(data):
            size, kind = struct.unpack_from("=IH", data, i)
            yield kind, data[i + 16:i + size]
            i += (size + 3) & ~3
def acked():
    for kind, body in messages():
        if kind == ERROR:
            err = struct.unpack_from("=i", body)[0]
            if err:
                raise SystemExit("rtnetlink: " + __import__("os").strerror(-err))
            return
def route(kind, flags, ip):
    rt = struct.pack("=BBBBBBBBI", socket.AF_INET, 32, 0, 0, MAIN, PROTO, 0, BLACKHOLE, 0)
    send(kind, REQ | ACK | flags, rt + struct.pack("=HH", 8, 1) + socket.inet_aton(ip))
    acked()
def ours():
    send(GET, REQ | DUMP, struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0))
    found = []
    for kind, body in messages():
        if kind == DONE:
            return sorted(found)
        if kind == ERROR:
            raise SystemExit("rtnetlink: dump failed")
        fam, dst_len, _, _, table, proto, _, rtype, _ = struct.unpack_from("=BBBBBBBBI", body)
        if proto != PROTO or rtype != BLACKHOLE:
            continue
        i = 12
        while i + 4 <= len(body):
            alen, atype = struct.unpack_from("=HH", body, i)
            if atype == 1 and alen == 8:
                found.append(socket.inet_ntoa(body[i + 4:i + 8]))
            i += (alen + 3) & ~3
if sys.argv[1] == "add":
    for ip in sys.argv[2:]:
        route(NEW, CREATE_EXCL, ip)
elif sys.argv[1] == "del":
    for ip in ours():
        route(DEL, 0, ip)
print(json.dumps(ours()))
""" % ROUTE_PROTO


def routes(container: dict, add: list[str] | None = None, delete: bool = False) -> list[str]:
    """Our blackhole routes in CONTAINER's (`docker inspect`) network
    namespace, after adding ADD or deleting ours."""
    op = ["add", *add] if add else ["del"] if delete else ["list"]
    cmd = ["docker", "run", "--rm", "--pull", "never", "--network", f"container:{container['Id']}",
           "--cap-drop", "ALL", "--cap-add", "NET_ADMIN", "--entrypoint", "python3", "--label", "ybbench.helper=netns",
           container["Image"], "-c", HELPER, *op]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"routes in {container['Name'].lstrip('/')}'s network namespace: "
                           f"{(p.stderr or p.stdout).strip()[-500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])
