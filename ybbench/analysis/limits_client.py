"""The client's findings of a run's limits: k6's CPU against the cores it
may use (usage.json), the open model's dropped iterations, the database's
lock waits and the run's retries (contention seen from the client), and
Little's law for the closed model (summary.json)."""

from __future__ import annotations

from ybbench.analysis import limit_rules as rules


def finding(resource: str, status: str, text: str, **figures) -> dict:
    """One resource's line: status saturated | ok | not-visible."""
    return {"resource": resource, "status": status, "text": text, "figures": figures}


def _in_window(samples: list[list[float]], t0: float, t1: float) -> list[list[float]]:
    return [s for s in samples if t0 - 0.5 <= s[0] <= t1 + 0.5]


def client(usage: dict | None, t0: float, t1: float) -> list[dict]:
    """One finding per k6 process, its CPU over the window against its cores."""
    if usage is None:
        return [finding("client", "not-visible", "k6's CPU was not seen: no usage.json (k6 started by another "
                        "program: k6 Cloud, the k6-operator, or a run from before ybbench sampled it)")]
    out = []
    for p in usage["processes"]:
        s = _in_window(p["samples"], t0, t1)
        cap, why = p["cores"]["capacity"], _bound(p["cores"])
        if len(s) < 2 or s[-1][0] <= s[0][0]:
            out.append(finding("client", "not-visible", f"{p['name']}: fewer than 2 CPU samples in the window"))
            continue
        used = (s[-1][1] - s[0][1]) / (s[-1][0] - s[0][0])
        points = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(s, s[1:]) if b[0] > a[0]]
        full = rules.saturated(points, cap)
        out.append(finding("client", "saturated" if full else "ok",
                           f"{p['name']} used {used:.2f} of its {cap:g} cores ({used / cap:.0%}; {why})",
                           process=p["name"], cores_used=round(used, 3), capacity=cap, bound=why,
                           share=round(used / cap, 3)))
    return out


def _bound(cores: dict) -> str:
    """Which bound set the capacity."""
    for key, name in (("cgroup_quota", "cgroup CPU quota"), ("gomaxprocs", "GOMAXPROCS"), ("affinity", "CPU affinity")):
        if cores.get(key) and cores[key] == cores["capacity"]:
            return name
    return "CPU affinity"


def client_cores(found: list[dict]) -> float | None:
    """The cores every k6 process used, summed; None when one was not seen."""
    used = [f["figures"].get("cores_used") for f in found if f["resource"] == "client"]
    return None if not used or None in used else sum(used)


def open_model(summary: dict) -> dict | None:
    """The open model's dropped iterations against what it was offered; None in the closed model."""
    if not str(summary.get("scenario", {}).get("executor", "")).endswith("arrival-rate"):
        return None
    dropped = summary.get("dropped_iterations", 0)
    done = _iterations(summary)
    offered = dropped + (done or 0)
    share = dropped / offered if offered else 0.0
    return finding("offered-rate", "saturated" if share >= rules.DROPPED_SHARE else "ok",
                   f"{dropped} of {offered} offered iterations dropped ({share:.1%}): "
                   + ("k6 had no free VU to start them" if dropped else "every one started on time"),
                   dropped=dropped, offered=offered, share=round(share, 4))


def _iterations(summary: dict) -> int | None:
    k6 = summary.get("k6") or {}
    it = (k6.get("iterations") or {}).get("values", {})
    if "count" in it:
        return int(it["count"])
    return sum(o["count"] for o in summary.get("ops", {}).values()) or None


def little(summary: dict) -> dict | None:
    """Little's law for the closed model over the whole run: throughput x
    mean iteration time against the VUs (each iteration is one op: the
    sum over ops of ops/s x mean latency). None when the run was not a
    constant-VUs run or an op's latency is not in its summary."""
    scenario = summary.get("scenario", {})
    ops = summary.get("ops", {}).values()
    vus = scenario.get("vus")
    if scenario.get("executor") != "constant-vus" or not vus or not ops or any(not o.get("latency_ms") for o in ops):
        return None
    rate = sum(o["per_second"] for o in ops)
    if rate <= 0:
        return None
    busy = sum(o["per_second"] * o["latency_ms"]["avg"] / 1000 for o in ops)
    avg_ms = busy / rate * 1000
    if avg_ms <= 0:
        return None
    return {"vus": vus, "iterations_per_s": round(rate, 3), "iteration_ms": round(avg_ms, 3),
            "busy_vus": round(busy, 3), "predicted_per_s": round(vus / (avg_ms / 1000), 3),
            "holds": abs(busy / vus - 1) <= rules.LITTLE_TOLERANCE}


def contention(summary: dict, usage: dict | None, conflicts: float | None, t0: float, t1: float) -> dict:
    """Retries and 40xxx errors (k6), lock waits (pg_stat_activity), and
    YugabyteDB's transaction conflicts (Prometheus, None when not seen)."""
    ops = sum(o["count"] for o in summary.get("ops", {}).values()) or 1
    retries = sum(o.get("retries", 0) for o in summary.get("ops", {}).values())
    rollbacks = summary.get("errors_by_class", {}).get("40", 0)
    retry_share = (retries + rollbacks + (conflicts or 0)) / ops
    sessions = (usage or {}).get("sessions") or {}
    samples = _in_window(sessions.get("samples") or [], t0, t1)
    waiting = sum(s[1] for s in samples)
    active = sum(s[2] for s in samples)
    lock_share = waiting / active if active else 0.0
    full = lock_share >= rules.CONTENTION_LOCK_SHARE or retry_share >= rules.CONTENTION_RETRY_SHARE
    parts = [f"{lock_share:.0%} of active sessions waited on a lock" if samples else
             f"lock waits not seen ({sessions.get('not_visible') or 'no usage.json'})",
             f"{retries} retries and {rollbacks} class-40 errors in {ops} ops"]
    if conflicts is not None:
        parts.append(f"{conflicts:g} YugabyteDB transaction conflicts")
    return finding("contention", "saturated" if full else "ok", "; ".join(parts),
                   lock_wait_share=round(lock_share, 3), retries=retries, class_40_errors=rollbacks,
                   transaction_conflicts=conflicts, retry_share=round(retry_share, 4))
