"""Published against observed: one row per figure of an experiment file.

Each published figure is put at cluster, per node and, for throughput, per
server core (the seed's vCPUs; here the cores of a node) or, for tpmC, per
warehouse; the observed value likewise, from the phase's own summary.json
or, for host figures (CPU, disk reads), from node_exporter in Prometheus
over the phase's window. The ratio is observed / published of the
normalised value: per server core for ops/s, per warehouse for tpmC, per
node (or per disk) for other counts, and the value itself for a latency, a
CPU %, an efficiency or an IO size. A figure that
cannot be observed here keeps its row and says why. `ybbench reproduce`
builds the rows; `ybbench report` shows them (html()).
"""

from __future__ import annotations

import html as html_mod
import math
import os
import socket
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import latency, per_second, run_folder
from ybbench.core.catalog import TESTID
from ybbench.core.errors import UserError
from ybbench.experiments.reproduce.file import MEASURES, Experiment, Figure, Phase

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Host figures from node_exporter; `W` is the phase's window. Block devices
# only: loop, RAM, device-mapper and md devices would count reads twice.
DEVICES = 'job="node", device!~"(loop|ram|dm-|md|sr).*"'
PROM_QUERIES = {
    ("cpu_percent", "node"):
        '100 * avg(1 - avg by (instance) (rate(node_cpu_seconds_total{job="node", mode="idle"}[W])))',
    ("disk_reads_per_s", "node"): f"avg(sum by (instance) (rate(node_disk_reads_completed_total{{{DEVICES}}}[W])))",
    ("disk_reads_per_s", "disk"): f"avg(rate(node_disk_reads_completed_total{{{DEVICES}}}[W]))",
    ("disk_read_mb_per_s", "disk"): f"avg(rate(node_disk_read_bytes_total{{{DEVICES}}}[W])) / 1048576",
    ("io_size_kb", "disk"): f"sum(rate(node_disk_read_bytes_total{{{DEVICES}}}[W])) / "
                            f"sum(rate(node_disk_reads_completed_total{{{DEVICES}}}[W])) / 1024",
}


@dataclass
class Local:
    """This side: the nodes YSQL_NODES names and the cores behind them."""
    ysql_nodes: str
    nodes: int
    cores_per_node: float | None  # None: the nodes are elsewhere and --cores-per-node was not given
    client_cores: int
    on_this_machine: bool
    ram_gb: float

    @classmethod
    def from_knobs(cls, ysql_nodes: str, cores_per_node: int | None) -> "Local":
        entries = [a.strip() for a in ysql_nodes.split(",") if a.strip()]
        hosts = {a.rsplit(":", 1)[0] for a in entries}
        here = hosts <= LOCAL_HOSTS | {socket.gethostname()}
        cores = os.cpu_count() or 1
        per_node = cores_per_node if cores_per_node else (cores / len(entries) if here else None)
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
        return cls(ysql_nodes, len(entries), per_node, cores, here, ram)

    def describe(self) -> str:
        cores = "cores unknown (--cores-per-node)" if self.cores_per_node is None else \
            f"{_n(self.cores_per_node)} core(s) each"
        where = f"on this machine ({self.client_cores} cores, shared with k6)" if self.on_this_machine else "elsewhere"
        return f"{self.nodes} node(s) ({self.ysql_nodes}), {cores}, {where}"


def scaled_vus(exp: Experiment, phase: Phase, local: Local) -> tuple[int, str]:
    """The phase's VUs and the rule that gave them: the published threads
    per server vCPU, times the cores of the nodes here."""
    if phase.concurrency is None:
        vus = phase.knobs["VUS"]
        return int(vus), f"VUS {vus} from the experiment file (the source gives no concurrency to scale)"
    setup = exp.setup_of(phase)
    nodes, vcpus = setup["nodes"].value, setup["vcpus_per_node"].value
    threads = int(phase.concurrency.value)
    per_vcpu = threads / (nodes * vcpus)
    if local.cores_per_node is None:
        raise UserError(f"phase {phase.name}: the nodes in YSQL_NODES are not on this machine, so their cores are "
                        "unknown: give --cores-per-node (or --set VUS=N)")
    vus = max(1, round(per_vcpu * local.nodes * local.cores_per_node))
    return vus, (f"{threads} threads / ({nodes} nodes x {vcpus} vCPU) = {_n(per_vcpu)} per server vCPU, "
                 f"x {local.nodes} node(s) x {_n(local.cores_per_node)} core(s) = {vus} VUs")


def _n(x: float | None) -> str:
    """A number as printed: whole numbers whole, others to 6 significant digits."""
    if x is None:
        return "-"
    if float(x).is_integer() and abs(x) < 1e16:
        return str(int(x))
    return f"{x:.6g}"


def _levels(fig: Figure, value: float, scope: str, nodes: int, cores: float | None,
            warehouses: int | None = None) -> dict:
    """A value at `scope` put at cluster, per node, per core (or per disk,
    or per warehouse)."""
    if not MEASURES[fig.measure].extensive:
        return {"value": value}
    if scope == "disk":
        return {"value": value, "per_disk": value}
    node = value / nodes if scope == "cluster" else value
    out = {"value": value, "cluster": node * nodes, "per_node": node}
    if fig.measure == "ops_per_s" and cores:
        out["per_core"] = node / cores
    if fig.measure == "tpmc" and warehouses:
        out["per_warehouse"] = node * nodes / warehouses
    return out


def normaliser(fig: Figure) -> str:
    if not MEASURES[fig.measure].extensive:
        return "the value itself"
    if fig.scope == "disk":
        return "per disk"
    return {"ops_per_s": "per server core", "tpmc": "per warehouse"}.get(fig.measure, "per node")


def _norm_key(fig: Figure, obs: dict, pub: dict) -> str:
    if not MEASURES[fig.measure].extensive:
        return "value"
    if fig.scope == "disk":
        return "per_disk"
    for key in ("per_core", "per_warehouse"):
        if key in obs and key in pub:
            return key
    return "per_node"


def observe(fig: Figure, testid: str, summary: dict, window: tuple[float, float],
            prometheus: str | None, warmup_s: float = 0,
            folder: Path | None = None) -> tuple[float | None, str, str, str]:
    """(value, its scope, its source, why not observed): a run's summary
    counts the whole cluster; a query answers at the figure's scope.
    warmup_s: the run's first seconds, left out: tpmC and efficiency from
    the summary's tpcc.measured, ops/s and average latency from the run's
    per-second.json (in `folder`) after them."""
    m = MEASURES[fig.measure]
    if m.source == "none":
        return None, "", "", m.why_not
    if m.source == "summary":
        src = f"results/.../{testid}/summary.json"
        if fig.measure == "rows":
            return float(summary["rows_written"]), "cluster", src + " rows_written", ""
        if fig.measure in ("tpmc", "efficiency_percent"):
            return _tpcc(fig, summary.get("tpcc"), src, warmup_s)
        if warmup_s and fig.measure in ("ops_per_s", "latency_avg_ms"):
            return _after_warmup(fig, testid, window, warmup_s, folder)
        ops = summary.get("ops", {})
        if fig.op and fig.op not in ops:
            return None, "", src, f"the run has no op {fig.op!r} (ops: {', '.join(sorted(ops)) or 'none'})"
        if fig.measure == "ops_per_s":
            names = [fig.op] if fig.op else sorted(ops)
            return (float(sum(ops[o]["per_second"] for o in names)), "cluster",
                    f"{src} ops.{'+'.join(names)}.per_second", "")
        lat = (ops.get(fig.op) or {}).get("latency_ms")
        if not lat:
            return None, "", src, (f"the summary has no latency for {fig.op} in this mixed workload "
                               "(--set OP_LATENCY_SUMMARY=on, or --prometheus to fill it)")
        return float(lat["avg"]), "cluster", f"{src} ops.{fig.op}.latency_ms.avg ({lat.get('source', 'k6')})", ""
    promql = PROM_QUERIES.get((fig.measure, fig.scope))
    if promql is None:
        return None, "", "", f"ybbench has no query for {fig.measure} per {fig.scope}"
    if not prometheus:
        return None, "", "", "a host figure: needs node_exporter's series in Prometheus (give --prometheus)"
    start, end = window
    # At least 3 scrapes (5 s apart) in the window, even for a short phase.
    w = f"{max(15, math.ceil(end - start))}s"
    promql = promql.replace("[W]", f"[{w}]")
    try:
        wait_for_node_scrape(prometheus, end)
        v = latency._scalar(prometheus, promql, end)
    except (urllib.error.URLError, OSError, KeyError, ValueError) as e:
        return None, "", f"Prometheus: {promql}", f"Prometheus at {prometheus} did not answer: {e}"
    if v is None:
        why = ("no disk reads in the window (the data is read from memory here)" if fig.measure == "io_size_kb"
               else "Prometheus has no node_exporter series (job node) over the phase")
        return None, "", f"Prometheus: {promql}", why
    return v, fig.scope, f"Prometheus {prometheus}, at the phase's end over {w}: {promql}", ""


def _after_warmup(fig: Figure, testid: str, window: tuple[float, float], warmup_s: float,
                  folder: Path | None) -> tuple[float | None, str, str, str]:
    """ops/s or the average latency over the whole seconds after the
    warm-up, from the run's own per-second.json."""
    doc = per_second.load(folder) if folder else None
    src = f"results/.../{testid}/{per_second.FILE}"
    if doc is None:
        return None, "", src, (f"the run has no {per_second.FILE} (a k6 without our Go module), so its figures "
                               f"after the {warmup_s:g} s warm-up are not known")
    cut = math.ceil(window[0] + warmup_s)
    names = [fig.op] if fig.op else sorted(doc["ops"])
    rows = [r for op in names for r in doc["ops"].get(op, []) if r[0] >= cut]
    if fig.measure == "latency_avg_ms":
        n = sum(r[1] for r in rows)
        if not n:
            return None, "", src, f"no {fig.op or 'op'} ended after the {warmup_s:g} s warm-up"
        return (sum(r[2] for r in rows) / n, "cluster",
                f"{src}: ops.{fig.op}, the seconds from {cut} (after the {warmup_s:g} s warm-up), sum_ms / count", "")
    last = max((r[0] for op in names for r in doc["ops"].get(op, [])), default=cut)
    span = last - cut  # whole seconds from the cut to the last one (partial, left out)
    if span <= 0:
        return None, "", src, f"the run ended within a second of its {warmup_s:g} s warm-up"
    count = sum(r[1] for r in rows if r[0] < last)
    return (count / span, "cluster",
            f"{src}: ops.{'+'.join(names)}, seconds {cut} to {last} (after the {warmup_s:g} s warm-up)", "")


def _tpcc(fig: Figure, tpcc: dict | None, src: str, warmup_s: float = 0) -> tuple[float | None, str, str, str]:
    if not tpcc:
        return None, "", src, "the run is not a tpcc run (its summary has no tpcc section)"
    if warmup_s:
        measured = tpcc.get("measured")
        if not measured:
            return None, "", src, (f"the summary has no tpcc.measured: the figures after the {warmup_s:g} s warm-up "
                                   "are not known (a tpcc.js older than --warmup's)")
        tpcc, src = {**tpcc, **measured}, f"{src} tpcc.measured (after the {warmup_s:g} s warm-up)"
        if fig.measure == "tpmc":
            return (None, "", src, "the run ended with its warm-up") if tpcc["tpmc"] is None else \
                (float(tpcc["tpmc"]), "cluster", f"{src}: tpmc", "")
    if fig.measure == "tpmc":
        return float(tpcc["tpmc"]), "cluster", f"{src} tpcc.tpmc", ""
    if tpcc.get("efficiency") is None:
        return None, "", src, (f"efficiency is a spec-mode figure; the run was in {tpcc.get('mode')} mode "
                               "(--set TPCC_MODE=spec)")
    field = "efficiency" if warmup_s else "tpcc.efficiency"  # src names tpcc.measured already
    return 100 * float(tpcc["efficiency"]), "cluster", f"{src}{':' if warmup_s else ''} {field} x 100", ""


def wait_for_node_scrape(prometheus: str, end: float, timeout: float = 20.0) -> None:
    """Until Prometheus holds a node_exporter scrape from the phase's end or
    later, at most `timeout` s: a rate at the end needs every scrape up to
    it, and on a busy host a scrape lands seconds late (seen: none in 15 s,
    while Go builds held both cores). No node series at all: no wait."""
    deadline = time.monotonic() + timeout
    while True:
        last = latency._scalar(prometheus, "max(timestamp(node_cpu_seconds_total))", time.time())
        if last is None or last >= end or time.monotonic() >= deadline:
            return
        time.sleep(0.5)


def compare(exp: Experiment, phase: Phase, fig: Figure, observed: tuple[float | None, str, str, str],
            local: Local, warehouses: int | None = None) -> dict:
    """One row: published and observed at every level, the normaliser, the
    ratio. `warehouses`: the run's (a tpcc run's summary)."""
    setup = {k: e.value for k, e in exp.setup_of(phase).items()}
    pub = _levels(fig, fig.value, fig.scope, setup["nodes"], setup["vcpus_per_node"], setup.get("warehouses"))
    value, scope, source, why = observed
    obs = _levels(fig, value, scope, local.nodes, local.cores_per_node, warehouses) if value is not None else None
    row = {"phase": phase.name, "figure": fig.name, "measure": fig.measure, "op": fig.op, "unit": fig.unit,
           "scope": fig.scope, "qualifier": fig.qualifier, "where": fig.where, "quote": fig.quote, "note": fig.note,
           "published": pub, "observed": obs, "source": source, "not_observed": why or None,
           "normaliser": normaliser(fig), "ratio": None}
    if obs is not None:
        key = _norm_key(fig, obs, pub)
        row["normaliser"] = {"per_core": "per server core", "per_node": "per node", "per_disk": "per disk",
                             "per_warehouse": "per warehouse", "value": "the value itself"}[key]
        row["ratio"] = obs[key] / pub[key] if pub[key] else None
    return row


def _levels_text(levels: dict, unit: str, per_core_word: str) -> str:
    parts = []
    for key, word in (("cluster", "cluster"), ("per_node", "per node"), ("per_core", per_core_word),
                      ("per_warehouse", "per warehouse"), ("per_disk", "per disk")):
        if key in levels:
            parts.append(f"{_n(levels[key])} {unit} {word}")
    return ", ".join(parts) or f"{_n(levels['value'])} {unit}"


def row_lines(row: dict, exp_setup: dict, local: dict) -> list[str]:
    """A figure's block in the printed table."""
    op = f", op {row['op']}" if row["op"] else ""
    lines = [f"  {row['figure']} ({row['measure']}{op}), {row['where']}: \"{row['quote']}\""]
    q = f"{row['qualifier']} " if row["qualifier"] else ""
    wh = f", {exp_setup['warehouses']} warehouses" if "warehouses" in exp_setup else ""
    lines.append(f"    published: {q}{_levels_text(row['published'], row['unit'], 'per vCPU')}"
                 f" ({exp_setup['nodes']} nodes x {exp_setup['vcpus_per_node']} vCPU{wh})")
    if row["observed"] is None:
        lines.append(f"    observed:  not observed: {row['not_observed']}")
    else:
        cores = "cores unknown" if local["cores_per_node"] is None else f"{_n(local['cores_per_node'])} core(s)"
        lines.append(f"    observed:  {_levels_text(row['observed'], row['unit'], 'per core')}"
                     f" ({local['nodes']} node(s) x {cores})")
        lines.append(f"    ratio observed/published: {_n(row['ratio'])} ({row['normaliser']})")
    if row["note"]:
        lines.append(f"    note: {row['note']}")
    return lines


def table_lines(doc: dict) -> list[str]:
    """reproduce.json's comparison as printed: per phase, per figure."""
    out = []
    for ph in doc["phases"]:
        out.append(f"phase {ph['name']} ({ph['workload']}, {ph['vus']} VUs, {ph['duration']}): run {ph['testid']}")
        out.append(f"  limited by: {ph['limited_by']['text'] if ph.get('limited_by') else 'not analysed (no limits.json)'}")
        if not ph["rows"]:
            out.append("  (the source publishes no figure for this phase)")
        for row in ph["rows"]:
            out += row_lines(row, ph.get("published_setup") or doc["published_setup"], doc["local"])
    return out


def differences(exp: Experiment, local: Local, phases: list[dict], duration: str) -> list[str]:
    """Where the published setup and this one differ, in plain words."""
    s = {k: e.value for k, e in exp.setup.items()}
    out = [f"nodes: published {s['nodes']} x {s['vcpus_per_node']} vCPU"
           + (f" ({s['instance_type']}" + (f", {s['cloud']})" if "cloud" in s else ")") if "instance_type" in s else "")
           + f"; here {local.describe()}"]
    rf = f", replication factor {s['replication_factor']}" if "replication_factor" in s else ""
    out.append(f"database: published {s.get('database', 'not named')}{rf}; here whatever answers at {local.ysql_nodes} "
               "(ybbench does not identify it; a PostgreSQL stand-in has no replication)")
    out.append(f"clients: published {s.get('clients', 'not named')}; here k6 with {local.client_cores} cores"
               + (", on the same machine as the database" if local.on_this_machine else ""))
    by_name = {p.name: p for p in exp.phases}
    for ph in phases:
        out.append(f"phase {ph['name']}: {ph['vus_rule']}")
        pub = by_name[ph["name"]].warmup if ph["name"] in by_name else None
        if pub is not None or ph.get("warmup_s"):
            here = (f"its first {ph['warmup_s']:g} s left out of every figure compared" if ph.get("warmup_s")
                    else "none left out (--warmup 0)")
            out.append(f"phase {ph['name']}'s warm-up: published {pub.value if pub else 'none'}; here {here}")
        own = ph.get("published_setup") or {}
        if own and ph["rows"] and (own != s or ph.get("warehouses")):
            wh = f", {own['warehouses']} warehouses" if "warehouses" in own else ""
            out.append(f"phase {ph['name']}'s figures: published on {own['nodes']} x {own['vcpus_per_node']} vCPU{wh}"
                       + (f"; this run has {ph['warehouses']} warehouses" if ph.get("warehouses") else ""))
    published_d = sorted({f"{e.duration.value}" for e in exp.phases if e.duration})
    out.append(f"duration: published {', '.join(published_d) or 'not given'}; here {duration} per phase")
    rows = sum(ph.get("rows_written") or 0 for ph in phases if ph.get("loads"))
    mb = sum((ph.get("rows_written") or 0) * ph.get("row_bytes", 0) for ph in phases if ph.get("loads")) / 2**20
    if rows:
        per_node = f"{_n(s['data_per_node_gb'])} GB per node" if "data_per_node_gb" in s else ""
        memory = " and ".join(f"{_n(s[k])} GB {what}" for k, what in (("ram_per_node_gb", "RAM"),
                                                                      ("block_cache_gb", "block cache")) if k in s)
        sizes = ", against ".join(x for x in (per_node, memory) if x)
        line = (f"data: published {s.get('data', 'not given')}{f' ({sizes})' if sizes else ''}; here {rows} rows, "
                f"~{mb:.1f} MB of keys and values ({mb / local.nodes:.1f} MB per node) and {local.ram_gb:.1f} GB "
                "of RAM on this machine")
        if mb / 1024 < local.ram_gb:
            line += ": the data fits in memory here, so reads are served from memory"
            if "data_per_node_gb" in s and "ram_per_node_gb" in s and s["data_per_node_gb"] > s["ram_per_node_gb"]:
                line += ", where the seed's data did not fit and its reads went to disk"
        out.append(line)
    if local.on_this_machine:
        out.append("host figures (CPU, disks) here are this machine's, k6 included: "
                   "the client and the database share it")
    out += exp.differences
    out.append("so the ratios measure this machine and database against the published cluster; "
               "they do not measure YugabyteDB")
    return out


def html(doc: dict) -> str:
    """The comparison as an HTML section, for `ybbench report`."""
    e = html_mod.escape
    what = f"seed {doc['seed']}" if doc.get("seed") else doc["source"]["title"]
    out = [f"<section id=\"expected\"><h2>Expected against observed: {e(what)} "
           f"({e(doc['experiment'])})</h2><p>From {e(doc['file'])}; reproduce {e(doc['reproduce_id'])}. "
           "Ratio = observed / published of the normalised value.</p>",
           "<table><tr><th>phase</th><th>figure</th><th>published</th><th>observed</th><th>limited by</th>"
           "<th>normaliser</th><th>ratio</th><th>where in the source</th></tr>"]
    for ph in doc["phases"]:
        for r in ph["rows"]:
            pub = e(_levels_text(r["published"], r["unit"], "per vCPU"))
            obs = (e(_levels_text(r["observed"], r["unit"], "per core")) if r["observed"]
                   else "not observed: " + e(r["not_observed"] or ""))
            out.append(f"<tr><td>{e(ph['name'])}</td><td>{e(r['figure'])}</td><td>{e(r['qualifier'])} {pub}</td>"
                       f"<td>{obs}</td><td>{e((ph.get('limited_by') or {}).get('text', 'not analysed'))}</td>"
                       f"<td>{e(r['normaliser'])}</td><td>{e(_n(r['ratio']))}</td>"
                       f"<td>{e(r['where'])}: “{e(r['quote'])}”</td></tr>")
    out.append("</table><h3>Differences</h3><ul>" + "".join(f"<li>{e(d)}</li>" for d in doc["differences"])
               + "</ul></section>")
    return "\n".join(out)


def for_report(results: Path, testids: list[str], load_run) -> tuple[list[dict], str, dict | None]:
    """The runs a report covers and its expected-vs-observed section: a
    reproduce id stands for its phase runs; runs inside a reproduce's
    folder (--results results/<id>) bring its table too."""
    runs, docs = [], []
    for t in testids:
        doc_path = results / t / "reproduce.json"
        if TESTID.match(t) and doc_path.is_file():
            doc = _read(doc_path)
            docs.append(doc)
            runs += [load_run(results / t, ph["testid"]) for ph in doc["phases"]]
        else:
            runs.append(load_run(results, t))
    if not docs and (results / "reproduce.json").is_file():
        docs.append(_read(results / "reproduce.json"))
    return runs, "\n".join(html(d) for d in docs), (docs[0] if docs else None)


def _read(path: Path) -> dict:
    return run_folder.read_json(path, f"reproduce {path.parent.name}")
