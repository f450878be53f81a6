"""A soak: a fixed-rate mixed workload for --minutes on the native stack
(a throwaway PostgreSQL 15, Prometheus and node_exporter, as `ybbench demo`
starts them), and what drifts over it. A benchmark, not a test: it prints
tables and asserts nothing about time.

    python3 -m bench.soak [--minutes 60] [--insert-rate 200] [--update-rate 300]
                          [--seed-keys 50000] [--sample-s 60] [--json FILE]

The load is two k6 processes at once, both open model (constant arrival
rate, so a slower database shows as latency and dropped iterations, not as
a lower rate): sql-inserts of new keys at --insert-rate/s (the table and
its index grow all along), and sql-updates over --seed-keys keys a short
closed-model sql-inserts wrote first, half point reads, half updates, at
--update-rate/s. Both are writes `ybbench verify` checks, key by key, at
the end.

Every --sample-s seconds (60) it reads each k6's VmRSS from
/proc/<pid>/status (the k6 child whose command line carries that run's
testid) and Prometheus' own (its process) and head series
(prometheus_tsdb_head_series). Ops/s per interval come from k6's counter
k6_iterations_total in Prometheus at each interval's end, the p99 of each
op from k6's native histograms (histogram_quantile over increase() in the
first and last 10 minutes; the first and last quarter when the run is
shorter than 20 minutes). At the end: k6's own iteration counts next to
Prometheus' and the rows the table holds, and verify's verdict.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ybbench.core import run_folder
from ybbench.local import pglocal, promlocal
from ybbench.local.demo import find_k6
from ybbench.run import k6run

console = Console(width=150)
PUSH_S = 1  # k6's remote-write push interval: the counter at a sample's time is at most 1 s old


# --- reading processes ------------------------------------------------------

def children_with(marker: str, parent: int | None = None) -> list[int]:
    """Pids of our child processes whose command line holds marker (k6run
    starts k6 with `--tag testid=<id>`)."""
    parent = os.getpid() if parent is None else parent
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and marker.encode() in cmd:
            out.append(int(d.name))
    return out


def status_kb(pid: int, field: str = "VmRSS") -> int | None:
    """A /proc/<pid>/status memory field in kB; None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def start_time(pid: int) -> int | None:
    """The process' start in clock ticks since boot (/proc/<pid>/stat field 22):
    with the pid, it names one process."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


# --- Prometheus -------------------------------------------------------------

class Prom:
    def __init__(self, url: str):
        self.url = url

    def query(self, promql: str, at: float) -> list[dict]:
        q = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=30) as r:
            return json.load(r)["data"]["result"]

    def scalar(self, promql: str, at: float) -> float | None:
        res = self.query(promql, at)
        if not res:
            return None
        v = float(res[0]["value"][1])
        return None if math.isnan(v) else v

    def by_op(self, promql: str, at: float) -> dict[str, float]:
        return {r["metric"].get("op", ""): float(r["value"][1]) for r in self.query(promql, at)
                if not math.isnan(float(r["value"][1]))}


def iterations(prom: Prom, testid: str, at: float) -> float:
    """k6's iteration counter for a run at time at (the last push before it;
    0 before the first)."""
    return prom.scalar(f'sum(k6_iterations_total{{testid="{testid}", op!="idle"}})', at) or 0.0


def p99(prom: Prom, testid: str, end: float, window_s: int) -> dict[str, float]:
    """p99 in ms of each op over (end - window_s, end], from k6's native histograms."""
    q = (f'histogram_quantile(0.99, sum by (op) (increase(k6_iteration_duration_seconds'
         f'{{testid="{testid}", op!="idle"}}[{window_s}s])))')
    return {op: v * 1000 for op, v in prom.by_op(q, end).items()}


# --- the run ----------------------------------------------------------------

class Runner(threading.Thread):
    """One k6run.run in a thread; its result or its error."""

    def __init__(self, workload: str, testid: str, results: Path, settings: list[str], prometheus: str):
        super().__init__(daemon=True)
        self.args = (workload, testid, results, settings, prometheus)
        self.testid = testid
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        workload, testid, results, settings, prometheus = self.args
        try:
            self.result = k6run.run(workload, testid=testid, results=results, settings=settings, quiet=True,
                                    prometheus=prometheus)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            self.error = e


def k6_counts(folder: Path) -> dict:
    """k6's own counts from its --summary-export: iterations, dropped, SQL errors."""
    m = json.loads((folder / "k6-summary.json").read_text())["metrics"]
    ops = {k[len("iterations{op:"):-1]: int(v["count"]) for k, v in m.items()
           if k.startswith("iterations{op:") and k != "iterations{op:idle}"}
    return {"iterations": int(m["iterations"]["count"]), "ops": ops,
            "dropped": int(m.get("dropped_iterations", {}).get("count", 0)),
            "errors": int(m.get("ybbench_errors", {}).get("count", 0))}


def verify(testid: str, results: Path, env: dict) -> dict:
    p = subprocess.run([sys.executable, "-m", "ybbench", "verify", testid, "--results", str(results)],
                       capture_output=True, text=True, env=env)
    path = results / testid / "verify.json"
    if p.returncode not in (0, 1) or not path.exists():
        raise RuntimeError(f"ybbench verify {testid} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    r = json.loads(path.read_text())
    r["exit"] = p.returncode
    return r


def soak(seconds: int, insert_rate: int, update_rate: int, seed_keys: int, sample_s: float, vus: int,
         max_vus: int, results: Path) -> dict:
    k6 = find_k6()
    os.environ["K6"] = k6
    prometheus, node_exporter = promlocal.find("prometheus"), promlocal.find("node_exporter")
    if not (prometheus and node_exporter):
        raise SystemExit(f"prometheus and node_exporter not found (PATH, {promlocal.CACHE_BIN}): `make build`")
    rid = f"soak-{time.strftime('%Y%m%dT%H%M%S')}"
    pg = pglocal.Postgres.start(max_connections=300)
    prom_proc = None
    saved = {k: os.environ.get(k) for k in ("PGPASSWORD", "K6_WEB_DASHBOARD", "K6_PROMETHEUS_RW_PUSH_INTERVAL")}
    os.environ["PGPASSWORD"] = pg.password
    # As `ybbench run` has it for any run past DASHBOARD_MAX_S: its memory is
    # not k6's under the load.
    os.environ["K6_WEB_DASHBOARD"] = "false"
    os.environ["K6_PROMETHEUS_RW_PUSH_INTERVAL"] = f"{PUSH_S}s"
    try:
        # The stack's own config, scrape interval included (5 s).
        prom_proc = promlocal.LocalPrometheus(prometheus, node_exporter)
        prom = Prom(prom_proc.url)
        prom_pid = prom_proc.procs[1].pid
        common = [f"YSQL_NODES=127.0.0.1:{pg.port}", f"DB_USER={pg.user}", f"DB_NAME={pg.database}"]
        seed_id = f"{rid}-seed"
        console.print(f"seeding {seed_keys} keys (sql-inserts, closed model) ...")
        k6run.run("sql-inserts", testid=seed_id, results=results, quiet=True, prometheus=prom_proc.url,
                  settings=[*common, "VUS=8", "DURATION=30m", f"NUM_UNIQUE_KEYS={seed_keys}", f"KEY_PREFIX={seed_id}"])
        written = run_folder.summary(results / seed_id)["rows_written"]
        if written != seed_keys:
            raise RuntimeError(f"the seed wrote {written} of {seed_keys} keys")
        pg.query("VACUUM ANALYZE postgresqlkeyvalue")

        open_model = ["LOAD_MODEL=constant-arrival-rate", f"VUS={vus}", f"MAX_VUS={max_vus}", f"DURATION={seconds}s"]
        runs = {
            "inserts": Runner("sql-inserts", f"{rid}-ins", results, [*common, *open_model, f"RATE={insert_rate}",
                                                                    f"KEY_PREFIX={rid}-ins"], prom_proc.url),
            "updates": Runner("sql-updates", f"{rid}-upd", results, [*common, *open_model, f"RATE={update_rate}",
                                                                    f"KEY_PREFIX={seed_id}",
                                                                    f"MAX_WRITTEN_KEY={seed_keys}",
                                                                    "WRITE_PERCENT=50"], prom_proc.url),
        }
        console.print(f"soak: {seconds} s, sql-inserts at {insert_rate}/s and sql-updates (50% updates) at "
                      f"{update_rate}/s, open model, VUs {vus}..{max_vus} each; a sample every {sample_s:g} s")
        t0 = time.time()
        for r in runs.values():
            r.start()
        samples = []
        next_at = t0 + sample_s
        while any(r.is_alive() for r in runs.values()):
            time.sleep(max(0.0, min(1.0, next_at - time.time())))
            if time.time() < next_at:
                continue
            now = time.time()
            s = {"t": now - t0, "k6": {}}
            for name, r in runs.items():
                pids = children_with(f"testid={r.testid}")
                pid = pids[0] if len(pids) == 1 else None
                s["k6"][name] = {"pid": pid, "start": start_time(pid) if pid else None,
                                 "rss_kb": status_kb(pid) if pid else None}
            s["prometheus_rss_kb"] = status_kb(prom_pid)
            s["head_series"] = prom.scalar("prometheus_tsdb_head_series", now)
            s["loadavg_1m"] = os.getloadavg()[0]  # the machine may be shared: what else ran
            samples.append(s)
            console.print(f"  {s['t'] / 60:5.1f} min: k6 RSS " + ", ".join(
                f"{n} {v['rss_kb'] / 1024:.1f} MiB" if v["rss_kb"] else f"{n} -" for n, v in s["k6"].items())
                + f"; Prometheus {s['prometheus_rss_kb'] / 1024:.1f} MiB, {s['head_series']:.0f} series")
            next_at += sample_s
        for r in runs.values():
            r.join()
            if r.error:
                raise r.error
        t_end = max(json.loads((r.result.folder / run_folder.PARAMS).read_text())["finished_unix_s"] for r in runs.values())
        time.sleep(6)  # k6's last push is in, and a scrape (5 s) of Prometheus itself after the end

        # ops/s per interval: the counter at each sample's time, and at the end.
        marks = [t0] + [t0 + s["t"] for s in samples] + [t_end + PUSH_S]
        counts = {n: [iterations(prom, r.testid, m) for m in marks] for n, r in runs.items()}
        totals = {n: c[-1] for n, c in counts.items()}
        k6_own = {n: k6_counts(r.result.folder) for n, r in runs.items()}

        length = t_end - t0
        window = 600 if length >= 1200 else int(length / 4)
        first_end, last_end = t0 + window, t_end + PUSH_S
        drift = {n: {"first": p99(prom, r.testid, first_end, window),
                     "last": p99(prom, r.testid, last_end, window)} for n, r in runs.items()}
        prom_end = {"head_series": prom.scalar("prometheus_tsdb_head_series", time.time()),
                    "rss_kb": status_kb(prom_pid),
                    "process_resident_memory_bytes": prom.scalar(
                        'process_resident_memory_bytes{job="prometheus"}', time.time())}
        ins_prefix = f"{rid}-ins"
        rows = int(pg.query(f"SELECT count(*) FROM postgresqlkeyvalue WHERE left(k, {len(ins_prefix) + 1}) "
                            f"= '{ins_prefix}:'"))
        verdicts = {n: verify(r.testid, results, pg.env()) for n, r in runs.items()}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if prom_proc:
            prom_proc.stop()
        pg.stop()
    return {"rid": rid, "seconds": seconds, "insert_rate": insert_rate, "update_rate": update_rate,
            "seed_keys": seed_keys, "t0": t0, "t_end": t_end, "marks": [m - t0 for m in marks],
            "testids": {n: r.testid for n, r in runs.items()}, "samples": samples, "counts": counts,
            "prometheus_totals": totals, "k6": k6_own, "window_s": window, "p99": drift,
            "prometheus_end": prom_end, "rows_inserted": rows, "verify": verdicts, "results": str(results)}


# --- tables -----------------------------------------------------------------

def mib(kb: int | None) -> str:
    return f"{kb / 1024:.1f}" if kb else "-"


def print_tables(r: dict) -> None:
    names = list(r["testids"])
    t = Table(title="Over time: k6 and Prometheus memory (VmRSS at the sample), ops/s over the interval before it "
                    "(k6_iterations_total in Prometheus)")
    t.add_column("min", justify="right")
    for n in names:
        t.add_column(f"k6 {n} RSS MiB", justify="right")
    for n in names:
        t.add_column(f"{n} ops/s", justify="right")
    t.add_column("Prometheus RSS MiB", justify="right")
    t.add_column("head series", justify="right")
    t.add_column("load avg 1m", justify="right")
    marks = r["marks"]
    for i in range(1, len(marks)):
        s = r["samples"][i - 1] if i - 1 < len(r["samples"]) else None
        span = marks[i] - marks[i - 1]
        rates = [f"{(r['counts'][n][i] - r['counts'][n][i - 1]) / span:.1f}" for n in names]
        if s:
            t.add_row(f"{s['t'] / 60:.1f}", *[mib(s["k6"][n]["rss_kb"]) for n in names], *rates,
                      mib(s["prometheus_rss_kb"]), f"{s['head_series']:.0f}" if s["head_series"] else "-",
                      f"{s['loadavg_1m']:.2f}")
        else:
            pe = r["prometheus_end"]
            t.add_row(f"tail {marks[i] / 60:.1f}", *["-" for _ in names], *rates, mib(pe["rss_kb"]),
                      f"{pe['head_series']:.0f}" if pe["head_series"] else "-", "-")
    console.print(t)

    w = r["window_s"]
    label = "10 minutes" if w == 600 else f"{w} s (a quarter of a run shorter than 20 minutes)"
    t = Table(title=f"p99 drift: first and last {label}, from k6's native histograms in Prometheus")
    for c in ("run", "op", "p99 first ms", "p99 last ms", "drift"):
        t.add_column(c, justify="right" if "p99" in c or c == "drift" else "left")
    for n in names:
        d = r["p99"][n]
        for op in sorted(set(d["first"]) | set(d["last"])):
            a, b = d["first"].get(op), d["last"].get(op)
            t.add_row(n, op, f"{a:.2f}" if a else "-", f"{b:.2f}" if b else "-",
                      f"{(b - a) / a * 100:+.0f}%" if a and b else "-")
    console.print(t)
    console.print(f"  (load average over {os.cpu_count()} cores beside each sample: a shared machine's other work "
                  "moves latency more than an hour of soak does)")

    t = Table(title="Counts: k6's own summary, Prometheus' counter at the end, the table")
    for c in ("run", "k6 iterations", "k6 by op", "Prometheus", "dropped", "SQL errors", "rows in table"):
        t.add_column(c, justify="left" if c in ("run", "k6 by op") else "right")
    for n in names:
        k = r["k6"][n]
        t.add_row(n, str(k["iterations"]), ", ".join(f"{o} {c}" for o, c in sorted(k["ops"].items())),
                  f"{r['prometheus_totals'][n]:.0f}", str(k["dropped"]), str(k["errors"]),
                  str(r["rows_inserted"]) if n == "inserts" else "-")
    console.print(t)
    pe = r["prometheus_end"]
    console.print(f"Prometheus at the end: {pe['head_series']:.0f} head series, RSS {mib(pe['rss_kb'])} MiB "
                  f"(/proc; process_resident_memory_bytes {pe['process_resident_memory_bytes'] / 2**20:.1f} MiB)")

    t = Table(title="ybbench verify")
    for c in ("run", "checked", "lost (at least)", "unknown", "wrong / stale / never written", "verdict"):
        t.add_column(c)
    for n in names:
        v = r["verify"][n]
        if n == "inserts":
            checked = f"{v['acknowledged_keys']} acknowledged of {v['attempted_keys']} keys, {v['present']['count']} present"
            unknown = v["unacknowledged_keys"] + v["interrupted_iterations"]
            bad = v["wrong_value"]["count"] + v["duplicates"]["count"] + v["unexpected"]["count"]
        else:
            checked = f"{v['keys']} keys, {v['iterations']} iterations ({v['writers']} writers)"
            unknown = v["unacknowledged_updates"] + v["interrupted_iterations"]
            bad = v["stale"]["count"] + v["never_written"]["count"] + v["missing"]["count"] + v["lost_update"]["count"]
        t.add_row(n, checked, str(v["lost_at_least"]), str(unknown), str(bad), "OK" if v["ok"] else "FAILED")
    console.print(t)


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--minutes", type=float, default=60, help="soak length (60)")
    a.add_argument("--seconds", type=int, help="soak length in seconds (overrides --minutes; the tests' short form)")
    a.add_argument("--insert-rate", type=int, default=200, help="sql-inserts per second (200)")
    a.add_argument("--update-rate", type=int, default=300, help="sql-updates ops per second, half updates (300)")
    a.add_argument("--seed-keys", type=int, default=50000, help="keys the updates run over (50000)")
    a.add_argument("--sample-s", type=float, help="seconds between samples (60; a sixth of a run under 6 minutes)")
    a.add_argument("--vus", type=int, default=8, help="pre-allocated VUs per k6 (8)")
    a.add_argument("--max-vus", type=int, default=64, help="most VUs per k6 (64)")
    a.add_argument("--results", help="results folder (default: a temporary one, removed after)")
    a.add_argument("--json", help="write every number here too")
    args = a.parse_args(argv)
    seconds = args.seconds or int(args.minutes * 60)
    sample_s = args.sample_s or min(60.0, seconds / 6)
    tmp = None
    if args.results:
        results = Path(args.results)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ybbench-soak-")
        results = Path(tmp.name)
    try:
        r = soak(seconds, args.insert_rate, args.update_rate, args.seed_keys, sample_s, args.vus, args.max_vus,
                 results)
        if args.json:
            Path(args.json).write_text(json.dumps(r, indent=1))
        print_tables(r)
        console.print(f"machine: {os.cpu_count()} cores, load average "
                      f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end (shared with other work)")
        return 0 if all(v["ok"] for v in r["verify"].values()) else 1
    finally:
        if tmp:
            tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
