"""A throwaway Prometheus and node_exporter on 127.0.0.1 for `ybbench
demo`, so its report has the time-series charts: Prometheus runs the
project's prometheus.yml and rules (in a temporary folder, target files
rendered by run/targets.py), takes k6's remote write and scrapes node_exporter
and itself; stop() ends both and removes the folder. The config is the
project's, unchanged but for the global scrape and evaluation interval
when one is given: a short demo run needs scrapes faster than the
stack's 5 s for its host rates to have a shape inside the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from ybbench.core.catalog import REPO
from ybbench.local.pglocal import free_port
from ybbench.run.targets import Cluster

CACHE_BIN = Path(os.environ.get("YBBENCH_CACHE", Path.home() / ".cache" / "ybbench")) / "bin"


def find(name: str) -> str | None:
    return shutil.which(name) or (str(CACHE_BIN / name) if (CACHE_BIN / name).exists() else None)


class LocalPrometheus:
    def __init__(self, prometheus: str, node_exporter: str, scrape_interval: str | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="ybbench-prom-"))
        self.procs: list[subprocess.Popen] = []
        try:
            node = f"127.0.0.1:{free_port()}"
            self._start("node_exporter", [node_exporter, f"--web.listen-address={node}"])
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            config = REPO / "prometheus" / "prometheus.yml"
            if scrape_interval:
                doc = yaml.safe_load(config.read_text())
                doc["global"].update(scrape_interval=scrape_interval, evaluation_interval=scrape_interval)
                (self.root / "prometheus.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
            else:
                (self.root / "prometheus.yml").symlink_to(config)
            (self.root / "rules").symlink_to(REPO / "prometheus" / "rules")
            Cluster("demo", node_exporters=[node], prometheus=[f"127.0.0.1:{port}"]).write(self.root / "targets")
            self._start("prometheus", [prometheus, f"--config.file={self.root / 'prometheus.yml'}",
                                       f"--storage.tsdb.path={self.root / 'data'}",
                                       f"--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver"])
            self._wait_scraped(2)
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, cmd: list[str]) -> None:
        with open(self.root / f"{name}.log", "w") as log:
            self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))

    def _wait_scraped(self, targets: int, timeout: float = 60) -> None:
        """Until every target has been scraped twice: a rate needs two
        samples, so the first run's window has host rates from its start."""
        q = urllib.parse.urlencode({"query": "count_over_time(up[1m]) >= 2"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"Prometheus or node_exporter exited; logs in {self.root}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=2) as r:
                    if len(json.load(r)["data"]["result"]) == targets:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"Prometheus did not scrape its {targets} targets within {timeout:g} s")

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.root, ignore_errors=True)
