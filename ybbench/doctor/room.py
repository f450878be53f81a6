"""Room to run, from node_exporter through Prometheus: free space on each
host's filesystems and memory available, against what the compose stack's
YugabyteDB asks for (its mem_limits in compose/.env)."""

from __future__ import annotations

import re
from pathlib import Path

from ybbench.core.catalog import REPO
from ybbench.core import visibility
from ybbench.doctor.check import WARN, Check, Unreachable, fail, ok, skipped
from ybbench.doctor.prometheus import Prom

ENV = REPO / "compose" / ".env"
GIB = 2**30
MIN_FREE = 2 * GIB  # below this a run's data and Prometheus' TSDB run out within minutes
WARN_FREE = 10 * GIB
# Real filesystems only (node_exporter lists tmpfs, overlay's own mounts, ...).
FS = 'fstype!~"tmpfs|devtmpfs|overlay|squashfs|nsfs|ramfs|autofs|proc|sysfs|fuse.*"'
UNITS = {"k": 2**10, "m": 2**20, "g": 2**30}


def compose_memory(env_file: Path = ENV) -> int:
    """The compose YugabyteDB's container limits: 3 masters and 3 tservers (compose/docker-compose.yml)."""
    env = dict(re.findall(r"^(YB_(?:MASTER|TSERVER)_MEM_LIMIT)=(\d+[kmg])$", env_file.read_text(), re.M))
    total = 0
    for var in ("YB_MASTER_MEM_LIMIT", "YB_TSERVER_MEM_LIMIT"):
        if var in env:
            total += 3 * int(env[var][:-1]) * UNITS[env[var][-1]]
    return total


def _by_filesystem(disks: list[dict]) -> list[tuple[str, list[str], float]]:
    """One filesystem is one check: node_exporter lists it once per mount
    (a host's / and a bind mount of it at /var/lib/docker; in a container,
    the files Docker binds at /etc/hosts, /etc/hostname, /etc/resolv.conf).
    Each as (instance, its mount points shortest first, bytes free)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for d in disks:
        m = d["metric"]
        groups.setdefault((m.get("instance", ""), m.get("device") or m.get("mountpoint", "")), []).append(d)
    out = []
    for (instance, _), mounts in groups.items():
        where = sorted((d["metric"].get("mountpoint", "") for d in mounts), key=lambda m: (len(m), m))
        out.append((instance, where, min(float(d["value"][1]) for d in mounts)))
    return sorted(out, key=lambda f: (f[0], f[1][0]))


def checks(prom: Prom | None, env_file: Path = ENV) -> list[Check]:
    if prom is None:
        return [skipped("room disk", "Prometheus not reachable or not given"),
                skipped("room memory", "Prometheus not reachable or not given")]
    hidden = visibility.hidden().get("node")
    if hidden:
        return [skipped("room disk", hidden), skipped("room memory", hidden)]
    try:
        disks = prom.query(f"min by (instance, device, mountpoint) (node_filesystem_avail_bytes{{{FS}}})")
        memory = prom.query("min by (instance) (node_memory_MemAvailable_bytes)")
    except Unreachable as e:
        return [fail("room", "Prometheus answers", str(e), "check the Prometheus URL")]
    out = []
    if not disks:
        out.append(fail("room disk", "node_exporter's filesystems", "no node_filesystem_avail_bytes",
                        "scrape node_exporter on every host (job node)"))
    for instance, where, free in _by_filesystem(disks):
        name = f"room disk {instance} {where[0]}"
        expected = f"at least {WARN_FREE // GIB} GiB free"
        found = f"{free / GIB:.1f} GiB free" + (f" (also mounted at {', '.join(where[1:])})" if where[1:] else "")
        if free < MIN_FREE:
            out.append(fail(name, expected, found, "free space: tables, WAL and Prometheus' TSDB grow with a run"))
        elif free < WARN_FREE:
            out.append(Check(name, WARN, expected, found, "a long or large run may fill it"))
        else:
            out.append(ok(name, expected, found))
    if not env_file.is_file():
        return out + [skipped("room memory", f"no {env_file}: the compose stack's memory limits are unknown")]
    limits = compose_memory(env_file)
    for m in memory:
        avail = float(m["value"][1])
        name = f"room memory {m['metric'].get('instance')}"
        expected = f"{limits / GIB:.1f} GiB available for the compose stack's YugabyteDB ({env_file.name} mem_limits)"
        found = f"{avail / GIB:.1f} GiB available"
        if avail < limits:
            out.append(Check(name, WARN, expected, found, "lower YB_*_MEM_LIMIT in compose/.env, or expect the "
                             "kernel to kill a server near 400 VUs; an external cluster's own hosts decide"))
        else:
            out.append(ok(name, expected, found))
    return out
