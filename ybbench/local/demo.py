"""`ybbench demo`: a first look without Docker or YugabyteDB.

Starts a throwaway local PostgreSQL 15 (ybbench/local/pglocal.py) and, where
their binaries are found, a throwaway Prometheus and node_exporter
(ybbench/local/promlocal.py), runs a short sql-inserts then sql-selects over the
keys it wrote, writes the report of both runs (ybbench/report/page.py), and stops
them all.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from ybbench.core import run_folder
from ybbench.core.errors import UserError
from ybbench.local import pglocal, promlocal
from ybbench.report import page as report
from ybbench.run import k6run

# The demo's own Prometheus scrapes every second (the stack's is 5 s), so
# that a 10 s run holds ten scrapes and every host rate chart has a shape
# inside the run (issue 26: at 5 s, a 5 s run's CPU chart read idle time).
SCRAPE_INTERVAL = "1s"
CACHED_K6 = Path(os.environ.get("YBBENCH_CACHE", Path.home() / ".cache" / "ybbench")) / "bin" / "k6"


def find_k6() -> str:
    k6 = os.environ.get("K6") or shutil.which("k6") or (str(CACHED_K6) if CACHED_K6.exists() else None)
    if not k6:
        raise UserError(f"k6 not found (K6, PATH, {CACHED_K6}): build it with `make build` (native/build.sh)")
    return k6


def start_prometheus() -> promlocal.LocalPrometheus | None:
    """Prometheus for the time-series charts, if it can run here; without
    it the report charts the k6 summary and says what is missing."""
    binaries = {name: promlocal.find(name) for name in ("prometheus", "node_exporter")}
    if not all(binaries.values()):
        absent = ", ".join(n for n, b in binaries.items() if not b)
        print(f"no {absent} (PATH, {promlocal.CACHE_BIN}; `make build`): the report charts the k6 summary only")
        return None
    try:
        return promlocal.LocalPrometheus(binaries["prometheus"], binaries["node_exporter"],
                                         scrape_interval=SCRAPE_INTERVAL)
    except RuntimeError as e:
        print(f"Prometheus did not start ({e}): the report charts the k6 summary only")
        return None


def command(results: str, vus: int, duration: str, png: str | None = None) -> int:
    k6 = find_k6()
    if not (pglocal.PG_BIN / "initdb").exists() or not shutil.which("psql"):
        raise UserError(f"PostgreSQL 15 not found ({pglocal.PG_BIN}/initdb, psql): install postgresql-15 "
                        "(`make deps`), or set PG_BIN to its bin folder")
    if not shutil.which("runuser"):
        raise UserError("runuser not found: the demo starts PostgreSQL as the `postgres` user (util-linux)")
    os.environ["K6"] = k6
    try:
        pg = pglocal.Postgres.start()
    except RuntimeError as e:
        raise UserError(f"could not start a local PostgreSQL 15: {e}") from None
    old_pw = os.environ.get("PGPASSWORD")
    os.environ["PGPASSWORD"] = pg.password  # k6 reads it; never written to results
    prom = None
    # k6 pushes every 5 s by default: too few points for a 5 s run's rates.
    push_default = "K6_PROMETHEUS_RW_PUSH_INTERVAL" not in os.environ
    os.environ.setdefault("K6_PROMETHEUS_RW_PUSH_INTERVAL", "1s")
    try:
        prom = start_prometheus()
        url = prom.url if prom else None
        rid = f"demo-{time.strftime('%Y%m%dT%H%M%S')}"
        common = [f"YSQL_NODES=127.0.0.1:{pg.port}", f"DB_USER={pg.user}", f"DB_NAME={pg.database}",
                  f"VUS={vus}", f"DURATION={duration}", f"KEY_PREFIX={rid}"]
        ins = k6run.run("sql-inserts", testid=f"{rid}-inserts", results=Path(results), settings=common, quiet=True,
                          prometheus=url)
        written = run_folder.summary(ins.folder)["rows_written"]
        sel = k6run.run("sql-selects", testid=f"{rid}-selects", results=Path(results),
                          settings=[*common, f"MAX_WRITTEN_KEY={written}"], quiet=True, prometheus=url)
        for r in (ins, sel):
            print(f"results: {r.folder}")
        path = report.report([ins.testid, sel.testid], Path(results), url, None, Path(png) if png else None)
        print(path)
    finally:
        if old_pw is None:
            os.environ.pop("PGPASSWORD", None)
        else:
            os.environ["PGPASSWORD"] = old_pw
        if push_default:
            os.environ.pop("K6_PROMETHEUS_RW_PUSH_INTERVAL", None)
        if prom:
            prom.stop()
        pg.stop()
    return 0
