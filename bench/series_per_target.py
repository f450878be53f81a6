"""Series per scrape target and per job, and what metric relabeling drops:
the numbers to plan a 100-node Prometheus with. A benchmark, not a test.

    python3 -m bench.series_per_target [--prometheus URL] [--nodes 100]

With --prometheus, reads any running Prometheus that uses
prometheus/prometheus.yml. Without it, starts the native stack (real
YugabyteDB 2.23.1 captures, node_exporter, PostgreSQL + postgres_exporter)
and measures that. The captures come from one idle node with few tablets:
per-tablet series grow with the tablets a tserver hosts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path


def query(url: str, promql: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}", timeout=60) as r:
        return json.load(r)["data"]["result"]


def by_target(url: str, metric: str) -> dict[tuple, float]:
    return {(s["metric"].get("job", ""), s["metric"].get("export_type", ""), s["metric"].get("instance", "")):
            float(s["value"][1]) for s in query(url, metric)}


def report(url: str, nodes: int) -> None:
    scraped = by_target(url, "scrape_samples_scraped")
    kept = by_target(url, "scrape_samples_post_metric_relabeling")
    print(f"{'job':<12}{'export_type':<16}{'instance':<24}{'scraped':>10}{'kept':>10}{'dropped':>10}")
    for key in sorted(scraped):
        s, k = scraped[key], kept.get(key, 0)
        print(f"{key[0]:<12}{key[1]:<16}{key[2]:<24}{s:>10.0f}{k:>10.0f}{s - k:>10.0f}")
    print(f"{'total':<52}{sum(scraped.values()):>10.0f}{sum(kept.values()):>10.0f}"
          f"{sum(scraped.values()) - sum(kept.values()):>10.0f}")

    print("\nseries in the head block per job (no job: k6 remote write and recording rules)")
    for s in sorted(query(url, 'count by (job) ({__name__=~".+"})'), key=lambda s: s["metric"].get("job", "")):
        print(f"  {s['metric'].get('job', '(no job)'):<20}{float(s['value'][1]):>8.0f}")

    print("\nlargest metric families kept per YugabyteDB server")
    for exp in ("master_export", "tserver_export"):
        top = query(url, f'topk(5, count by (__name__) ({{job="yugabytedb", export_type="{exp}"}}))')
        print(f"  {exp}: " + ", ".join(f"{s['metric']['__name__']} {s['value'][1]}" for s in top))

    per = {}
    for (job, exp, _), k in kept.items():
        per.setdefault(exp or job, []).append(k)
    avg = {kind: sum(v) / len(v) for kind, v in per.items()}
    node = sum(avg.get(k, 0) for k in ("tserver_export", "ysql_export", "cql_export", "node"))
    masters = 3 * avg.get("master_export", 0)
    print(f"\nprojection: {nodes} nodes (tserver + YSQL + YCQL + node_exporter each) and 3 masters at these "
          f"per-target counts: {nodes * node + masters:,.0f} series "
          f"({node:,.0f} per node); samples/s at a 5s interval: {(nodes * node + masters) / 5:,.0f}")


@contextlib.contextmanager
def native_stack():
    from tests.support.exporters import start_postgres_exporter
    from tests.support.stack import BIN, CAPTURES, CaptureServer, Postgres, Process, Prometheus, free_port, wait_until

    root = Path(tempfile.mkdtemp(prefix="ybbench-series-"))
    caps = {k: CaptureServer(CAPTURES / f"{k}.txt") for k in ("master", "tserver", "ysql", "ycql")}
    port = free_port()
    node = Process("node_exporter", [str(BIN / "node_exporter"), f"--web.listen-address=127.0.0.1:{port}"], root)
    pg = Postgres.start()
    pg_exp, pg_addr = start_postgres_exporter(pg, root)
    prom = None
    try:
        prom = Prometheus(root / "prometheus", [
            "--masters", caps["master"].address, "--tservers", caps["tserver"].address, "--ysql",
            caps["ysql"].address, "--ycql", caps["ycql"].address, "--node-exporters", f"127.0.0.1:{port}",
            "--postgres-exporters", pg_addr])
        wait_until(lambda: prom.all_targets_up(7), "every target to be up", timeout=60)
        time.sleep(6)  # one more scrape, so every scrape_* series is there
        yield prom.url
    finally:
        for p in (prom, pg_exp, node):
            if p:
                p.stop()
        pg.stop()
        for c in caps.values():
            c.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prometheus", help="URL of a running Prometheus (default: start the native stack)")
    ap.add_argument("--nodes", type=int, default=100, help="nodes to project the series count to")
    a = ap.parse_args()
    if a.prometheus:
        report(a.prometheus.rstrip("/"), a.nodes)
    else:
        with native_stack() as url:
            report(url, a.nodes)


if __name__ == "__main__":
    main()
