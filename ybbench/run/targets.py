"""Prometheus file_sd target files for one cluster.

prometheus/prometheus.yml reads targets/{prometheus,yugabytedb,node,postgres}.json
next to itself. Compose mounts prometheus/targets/compose there; for an
external cluster or the native test stack, these files are rendered here;
a kind whose endpoints need HTTPS, a CA or credentials goes to a scrape
config instead (run/scrape_access.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core.errors import UserError
from ybbench.core.files import write_json
from ybbench.run.scrape_access import Access, write as write_scrape

# YugabyteDB's default ports and the export_type its docs and dashboard use.
YB_EXPORTS = {
    "master": ("master_export", 7000),
    "tserver": ("tserver_export", 9000),
    "ycql": ("cql_export", 12000),
    "ysql": ("ysql_export", 13000),
}

_HOST = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(:([0-9]{1,5}))?$")


def parse_hosts(what: str, value: str, default_port: int | None) -> list[str]:
    """`host[:port],...` to `host:port` strings, with a message naming `what`."""
    out = []
    for item in (s.strip() for s in value.split(",")):
        if not item:
            continue
        m = _HOST.match(item)
        if not m:
            raise UserError(f"{what}: {item!r} is not host or host:port")
        port = m.group(3)
        if port is None:
            if default_port is None:
                raise UserError(f"{what}: {item!r} needs a port")
            port = str(default_port)
        if not 1 <= int(port) <= 65535:
            raise UserError(f"{what}: port {port} of {item!r} is out of range")
        out.append(f"{m.group(1)}:{port}")
    return out


@dataclass
class Cluster:
    name: str
    yb: dict[str, list[str]] = field(default_factory=dict)  # kind -> host:port
    node_exporters: list[str] = field(default_factory=list)
    postgres_exporters: list[str] = field(default_factory=list)
    prometheus: list[str] = field(default_factory=list)
    # "yb" (every YugabyteDB web port), "node": how Prometheus reaches them; plain HTTP when absent.
    access: dict[str, Access] = field(default_factory=dict)

    def _secured(self, kind: str) -> bool:
        return kind in self.access and not self.access[kind].plain()

    def files(self) -> dict[str, list[dict]]:
        """The content of each target file; a secured kind's are empty (its scrape config holds them)."""
        plain = self._groups()
        for kind, name in (("yb", "yugabytedb.json"), ("node", "node.json")):
            if self._secured(kind):
                plain[name] = []
        return plain

    def secured(self) -> list[tuple[Access, list[dict]]]:
        groups = self._groups()
        return [(self.access[k], groups[name]) for k, name in (("yb", "yugabytedb.json"), ("node", "node.json"))
                if self._secured(k) and groups[name]]

    def _groups(self) -> dict[str, list[dict]]:
        yb_groups = []
        for kind, (export_type, _) in YB_EXPORTS.items():
            if self.yb.get(kind):
                yb_groups.append(
                    {"targets": self.yb[kind], "labels": {"node_prefix": self.name, "export_type": export_type}}
                )

        def plain(targets: list[str]) -> list[dict]:
            return [{"targets": targets, "labels": {"node_prefix": self.name}}] if targets else []

        return {
            "prometheus.json": plain(self.prometheus),
            "yugabytedb.json": yb_groups,
            "node.json": plain(self.node_exporters),
            "postgres.json": plain(self.postgres_exporters),
        }

    def write(self, out: Path) -> list[Path]:
        for access in self.access.values():
            access.check()
        written = []
        for name, groups in self.files().items():
            write_json(out / name, groups)
            written.append(out / name)
        return written + write_scrape(out, self.secured())
