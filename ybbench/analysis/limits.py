"""What limited a run, with the evidence: for each resource (the client,
CPU per node, disks, YugabyteDB's queues, memory pressure and write stalls,
contention, imbalance) its use against its capacity and whether it was
saturated, over the run's measured window (after --warmup); then one
verdict: the resource that limited the run, or "could not tell", naming
what was not visible. Never a guess: a resource not seen is said to be not
seen. Kept in the run's folder as limits.json (core/schemas/limits.schema.json).
Thresholds: limit_rules.py; the reader's guide: docs/why-this-number.md.
"""

from __future__ import annotations

from pathlib import Path

from ybbench.analysis import limit_rules as rules
from ybbench.analysis import limits_client as cl
from ybbench.analysis import limits_server as srv
from ybbench.core import formats, run_folder
from ybbench.core.errors import UserError
from ybbench.core.prom import Prom
from ybbench.run import usage as run_usage

FILE = run_folder.LIMITS
# The verdict's order: the first saturated resource names the limit. The
# client first (a client-bound run says nothing of the server), then the
# server's own refusals, its disks, its CPU, then contention.
ORDER = ("client", "yb-rpc-queue", "yb-memory-pressure", "yb-write-stall", "disk", "imbalance", "server-cpu",
         "contention")
SERVER_SIDE = ("server-cpu", "disk", "yugabytedb")


def analyse(folder: Path, prometheus: str | None = None) -> dict:
    """The limits of the run in `folder`; Prometheus from the argument or
    the run's params.json (None: the server side is not visible)."""
    run = run_folder.read(folder)
    usage = run_folder.optional(folder, run_usage.FILE)
    started, finished = run.window
    t0, t1 = started + float(run.params.get("warmup_s", 0)), finished
    summary = run.summary
    found = cl.client(usage, t0, t1)
    cores = cl.client_cores(found)
    prometheus = prometheus or run.params.get("prometheus")
    conflicts = None
    hosts: dict = {}
    if prometheus:
        w = srv.Window(Prom(prometheus), t0, t1)
        cpu, hosts = srv.node_cpu(w, (usage or {}).get("host", {}).get("boot_time_unix_s"), cores)
        found += cpu
        skew = srv.imbalance(cpu)
        if skew:
            found.append(skew)
        found += srv.disks(w, run.knobs)
        yb, conflicts = srv.yugabytedb(w)
        found += yb
    else:
        found += [cl.finding(r, "not-visible", "no Prometheus for this run (--prometheus): not seen")
                  for r in SERVER_SIDE]
    found.append(cl.contention(summary, usage, conflicts, t0, t1))
    offered = cl.open_model(summary)
    if offered:
        found.append(offered)
    law = cl.little(summary)
    return {"format_version": formats.version("limits"), "testid": run.testid,
            "window": {"start_unix_s": t0, "end_unix_s": t1, "warmup_s": float(run.params.get("warmup_s", 0))},
            "model": "open" if offered else "closed", "prometheus": prometheus,
            "shared_host": hosts.get("shared", []), "verdict": verdict(found, law, offered),
            "resources": found, "little": law, "thresholds": rules.as_dict()}


def verdict(found: list[dict], law: dict | None, offered: dict | None) -> dict:
    """The limit: the first saturated resource in ORDER; else the load
    itself (the open model's rate, the closed model's VUs by Little's law)
    when every resource was seen; else "could not tell"."""
    for limit in ORDER:
        hit = [f for f in found if f["resource"] == limit and f["status"] == "saturated"]
        if limit == "server-cpu" and hit:
            return _cpu_verdict(hit)
        if hit:
            return {"limit": limit, "text": f"limited by {_NAMES[limit]}: " + "; ".join(f["text"] for f in hit)
                    + _others(found, limit)}
    unseen = sorted({f["resource"] for f in found if f["status"] == "not-visible"})
    if offered and offered["status"] == "saturated":
        return {"limit": "vus", "text": f"limited by the VUs k6 had (maxVUs): {offered['text']}; "
                "nothing else saturated" + (f", but not seen: {', '.join(unseen)}" if unseen else "")}
    if unseen:
        return {"limit": "unknown", "text": f"could not tell: nothing seen saturated, but not seen: {', '.join(unseen)}"
                + (f" ({_law_text(law)})" if law else "")}
    if offered:
        return {"limit": "offered-rate", "text": f"limited by the offered rate: {offered['text']}; nothing saturated"}
    if law and law["holds"]:
        return {"limit": "concurrency", "text": f"limited by concurrency: nothing saturated, and {_law_text(law)}; "
                "more VUs or the open model would go further"}
    return {"limit": "unknown", "text": "could not tell: nothing saturated, and Little's law "
            + (f"does not hold ({_law_text(law)})" if law else "not checked (not a constant-VUs run)")}


_NAMES = {"client": "the client", "yb-rpc-queue": "YugabyteDB's RPC queues",
          "yb-memory-pressure": "YugabyteDB's memory pressure", "yb-write-stall": "YugabyteDB's write stalls",
          "disk": "disk", "imbalance": "one node (imbalance)", "server-cpu": "server CPU",
          "contention": "contention"}


def _law_text(law: dict) -> str:
    return (f"Little's law: {law['iterations_per_s']:.1f} iterations/s x {law['iteration_ms']:.2f} ms = "
            f"{law['busy_vus']:.1f} busy of {law['vus']} VUs")


def _others(found: list[dict], limit: str) -> str:
    """The busiest server node beside a client limit, as the run's end says it."""
    if limit != "client":
        return ""
    nodes = [f for f in found if f["resource"] == "server-cpu" and f["status"] != "not-visible"]
    if not nodes:
        return "; the server's CPU not seen"
    top = max(nodes, key=lambda f: f["figures"]["share"])
    return f"; the busiest server node {top['figures']['node']} used {top['figures']['share']:.0%}"


def _cpu_verdict(hit: list[dict]) -> dict:
    """A saturated node's CPU; when it is the client's own host, the side
    that used more of it is named (k6 or the rest), with the split."""
    f = max(hit, key=lambda f: f["figures"]["share"])
    fig = f["figures"]
    if fig.get("shared_with_client") and fig.get("client_cores") is not None and fig["client_cores"] > fig["rest_cores"]:
        return {"limit": "client", "text": f"limited by the client's share of a shared host: {f['text']}"}
    return {"limit": "server-cpu", "text": f"limited by server CPU: {f['text']}"}


def write(folder: Path, doc: dict) -> Path:
    formats.write(folder / FILE, "limits", doc)
    return folder / FILE


def record(folder: Path, prometheus: str | None = None) -> dict:
    """Analyses the run and keeps limits.json in its folder. Prometheus
    unreachable: a UserError that says the run's files are intact."""
    try:
        doc = analyse(folder, prometheus)
    except UserError as e:
        raise UserError(f"run {folder.name} is kept in {folder}, but its limits were not read: {e} "
                        f"(`ybbench limits {folder.name}` reads them once it answers)") from None
    write(folder, doc)
    return doc


def load(folder: Path) -> dict | None:
    """A run's limits.json, or None when it has none."""
    return run_folder.optional(folder, FILE)


def verdict_of(folder: Path) -> dict | None:
    """A run's verdict ({limit, text}) from its limits.json, for a sweep's
    steps and a reproduce's phases; None when it has none."""
    doc = load(folder)
    return doc and dict(doc["verdict"])


def lines(doc: dict) -> list[str]:
    """The verdict and each resource, for the end of `ybbench run` and `ybbench limits`."""
    out = [doc["verdict"]["text"]]
    for f in doc["resources"]:
        out.append(f"  {f['status']:<11} {f['resource']:<18} {f['text']}")
    if doc["little"]:
        out.append(f"  {'':<11} {'little':<18} {_law_text(doc['little'])}"
                   f" ({'holds' if doc['little']['holds'] else 'does not hold'})")
    return out
