"""A YugabyteDB cluster of N nodes replayed from the real 2.23.1 captures,
for Prometheus to scrape as it would the real one.

Each node is a loopback address of its own, 127.<block>.0.<i>, with
YugabyteDB's and node_exporter's default ports: tserver :9000, YSQL :13000,
YCQL :12000, node_exporter :9100, and :7000 on the first three nodes (the
masters, colocated as in a real cluster). prometheus.yml derives no label
from the address; Prometheus sets `instance` to it, so `instance` differs
per node as it does per host. The captures' own `exported_instance` (the
server's host:port, which the dashboards and recording rules group by) is
rewritten to the node's address for the same reason.

node_exporter: one real node_exporter on this machine is scraped once and
that capture is replayed for every node (a live scrape per node would put
100 node_exporters' CPU on the same 2 cores as Prometheus). The replayed
values never change; a real host's do.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from tests.support.stack import BIN, CAPTURES, CaptureServer, Process, free_port, wait_until

# Endpoint kind -> (capture file, default port), as `ybbench targets` has them.
YB_ENDPOINTS = {"master": ("master.txt", 7000), "tserver": ("tserver.txt", 9000),
                "ysql": ("ysql.txt", 13000), "ycql": ("ycql.txt", 12000)}
NODE_EXPORTER_PORT = 9100
_EXPORTED_HOST = re.compile(rb'exported_instance="[^":]*:')


def capture_node_exporter(root: Path) -> Path:
    """One scrape of a real node_exporter (default collectors, as the native
    stack runs it), in the text format, saved as root/node_exporter.txt."""
    port = free_port()
    proc = Process("node_exporter", [str(BIN / "node_exporter"), f"--web.listen-address=127.0.0.1:{port}"], root)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_until(lambda: proc.serves(url), "node_exporter to serve /metrics", timeout=30)
        request = urllib.request.Request(url, headers={"Accept": "text/plain; version=0.0.4"})
        with urllib.request.urlopen(request, timeout=30) as r:
            body = r.read()
    finally:
        proc.stop()
    out = root / "node_exporter.txt"
    out.write_bytes(body)
    return out


class ReplayedCluster:
    """Capture servers for `nodes` nodes, `masters` of them with a yb-master."""

    def __init__(self, nodes: int, masters: int, block: int, root: Path, node_exporter_capture: Path,
                 planted: dict[str, dict[str, float]] | None = None):
        """planted: {host: {series regex: growth a second}}, a test's faults on
        that node's tserver and node_exporter pages (yb_standin.metrics_server)."""
        if not 1 <= nodes <= 254 or not 1 <= masters <= nodes or not 1 <= block <= 254:
            raise ValueError(f"nodes 1-254, masters 1-nodes, block 1-254 (got {nodes}, {masters}, {block})")
        self.hosts = [f"127.{block}.0.{i}" for i in range(1, nodes + 1)]
        self.masters = self.hosts[:masters]
        self.servers: list[CaptureServer] = []
        try:
            for host in self.hosts:
                kinds = (["master"] if host in self.masters else []) + ["tserver", "ysql", "ycql"]
                for kind in kinds:
                    name, port = YB_ENDPOINTS[kind]
                    capture = self._capture_for(root / "captures" / host, name, host)
                    self.servers.append(CaptureServer(capture, host, port, planted=(planted or {}).get(host)))
                self.servers.append(CaptureServer(node_exporter_capture, host, NODE_EXPORTER_PORT, "/metrics",
                                                  planted=(planted or {}).get(host)))
        except OSError as e:
            self.stop()
            raise RuntimeError(f"cannot listen on 127.{block}.0.x (another process holds a port there or on "
                               f"every address; pick another --block): {e}") from e

    @staticmethod
    def _capture_for(folder: Path, name: str, host: str) -> Path:
        """The capture with the node's own host in exported_instance."""
        folder.mkdir(parents=True, exist_ok=True)
        out = folder / name
        out.write_bytes(_EXPORTED_HOST.sub(b'exported_instance="' + host.encode() + b":",
                                           (CAPTURES / name).read_bytes()))
        return out

    def targets_args(self) -> list[str]:
        """`ybbench targets` options for this cluster, hosts only, as a user
        would give them (YSQL, YCQL and ports are its defaults)."""
        hosts = ",".join(self.hosts)
        return ["--masters", ",".join(self.masters), "--tservers", hosts, "--node-exporters", hosts]

    @property
    def target_count(self) -> int:
        return len(self.servers)

    def stop(self) -> None:
        for s in self.servers:
            s.stop()
