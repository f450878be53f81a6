"""`ybbench sweep`: one workload at rising concurrency (or offered rate).

Each step is one `ybbench run` (run.run) with its own testid
`<sweep-id>-vus<N>` (`-rate<R>`) and folder inside results/<sweep-id>/,
next to sweep.json (the parameters and each step's numbers, read back from
the step's own summary.json), rewritten atomically after every step. The
sweep is a campaign (experiments/campaign.py): its folder appears only once
its first step has finished, so a sweep that fails before that leaves
nothing; later, every step folder is whole (run.run stages it) and
`--resume` picks up where it stopped. Here: the steps, their records, the
ceiling and the knee.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import catalog, run_folder
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.analysis import limits
from ybbench.experiments import campaign
from ybbench.experiments.sweep import saturation


def parse_steps(opt: str, text: str) -> list[int]:
    """A comma-separated list of positive whole numbers, strictly increasing."""
    out = []
    for part in text.split(","):
        p = part.strip()
        if not re.fullmatch(r"[0-9]+", p):
            raise UserError(f"{opt} {text!r}: {p!r} is not a whole number")
        n = int(p)
        if n < 1:
            raise UserError(f"{opt} {text!r}: {n} is not positive")
        if out and n <= out[-1]:
            raise UserError(f"{opt} {text!r}: {n} after {out[-1]}: the list must increase")
        out.append(n)
    return out


def doubling(max_vus: int) -> list[int]:
    """1, 2, 4, ... up to max_vus, and max_vus itself when not a power of 2."""
    out = [1]
    while out[-1] * 2 <= max_vus:
        out.append(out[-1] * 2)
    return out if out[-1] == max_vus else out + [max_vus]


@dataclass(kw_only=True)
class Plan(campaign.Campaign):
    KIND, RECORD, WHAT, CHILD = "sweep", "sweep.json", "steps", "step"
    ID_FROM, DIFFERS = "--id + the step", "differs from the sweep's"
    NAMES = {"workload": "the workload", "mode": "the load model (--vus or --rate)",
             "step_duration": "--step-duration", "settings": "--set"}

    workload: str
    mode: str  # "closed" (steps are VUs) or "open" (steps are rates)
    steps: list[int]
    step_duration: str
    settings: dict[str, str]

    @property
    def key(self) -> str:
        return "vus" if self.mode == "closed" else "rate"

    def step_id(self, n: int) -> str:
        return f"{self.id}-{self.key}{n}"

    def step_knobs(self, n: int) -> dict[str, str]:
        step = {"VUS": str(n)} if self.mode == "closed" else {"LOAD_MODEL": "constant-arrival-rate", "RATE": str(n)}
        return {**self.settings, **step, "DURATION": self.step_duration}

    def params(self) -> dict:
        """What must match for a resume (the step list may grow)."""
        return {"workload": self.workload, "mode": self.mode, "step_duration": self.step_duration,
                "settings": self.settings}

    def children(self) -> list[campaign.Child]:
        out = []
        for i, n in enumerate(self.steps, start=1):
            head = f"step {i}/{len(self.steps)} {self.key} {n}"
            out.append(campaign.Child(self.step_id(n), self.workload, head, f"{head} ({self.step_duration})", n))
        return out

    def unplanned(self, testid: str) -> str:
        n = testid.removeprefix(f"{self.id}-{self.key}")
        if not n.isdigit():
            return super().unplanned(testid)
        return f"step {self.key}={n} is finished but not in the new list {','.join(map(str, self.steps))}"

    def knobs(self, child: campaign.Child) -> dict[str, str]:
        knobs = self.step_knobs(child.item)
        if self.workload in catalog.NEW_KEYS and "KEY_PREFIX" not in knobs:
            # A step re-run after an interruption must not collide with
            # the keys its first attempt wrote under the same testid.
            knobs["KEY_PREFIX"] = catalog.fresh_prefix("s")
        return knobs

    def ran_with(self, child: campaign.Child) -> dict[str, str]:
        return self.step_knobs(child.item)

    def record(self, child: campaign.Child, run: run_folder.Run) -> dict:
        """One step's numbers, from its own summary.json (k6-scripts/lib/summary.js)."""
        summary = run.summary
        ops = {}
        for op, o in summary["ops"].items():
            lat = o.get("latency_ms")
            ops[op] = {"count": o["count"], "ops_per_s": o["per_second"], "errors": o["errors"],
                       "latency_ms": {q: lat[q] for q in ("p50", "p95", "p99", "avg")} if lat else None,
                       "latency_source": (lat or {}).get("source", "k6") if lat else None}
        # One op: its latency. Several: the slowest op's (highest p99), when the
        # summary has them all (OP_LATENCY_SUMMARY=on or --prometheus).
        lat_op = None
        if ops and all(o["latency_ms"] for o in ops.values()):
            lat_op = max(ops, key=lambda op: ops[op]["latency_ms"]["p99"])
        lat = ops[lat_op]["latency_ms"] if lat_op else {}
        count = sum(o["count"] for o in ops.values())
        rec = {
            self.key: child.item, "testid": run.testid, "folder": run.testid,
            "ops_per_s": sum(o["ops_per_s"] for o in ops.values()), "count": count,
            "p50_ms": lat.get("p50"), "p95_ms": lat.get("p95"), "p99_ms": lat.get("p99"), "avg_ms": lat.get("avg"),
            "latency_op": lat_op, "ops": ops, "errors": summary["errors"],
            "dropped_iterations": summary["dropped_iterations"], "duration_s": summary["duration_s"],
            "k6_exit_code": run.params.get("k6_exit_code"),
            "limited_by": limits.verdict_of(run.folder),  # campaign.py keeps one after each run
        }
        if self.mode == "open":
            rec["achieved_per_s"] = count / seconds("--step-duration", self.step_duration)
        return rec

    def add(self, doc: dict, child: campaign.Child, rec: dict) -> bool:
        doc["steps"].append(rec)
        doc.update(analyse(self, doc["steps"]))
        doc["stopped_early"] = saturation.should_stop(doc["steps"])
        return doc["stopped_early"]

    def found_note(self, child: campaign.Child, rec: dict) -> str:
        return f" ({rec['ops_per_s']:.1f} ops/s)"

    def ran_line(self, child: campaign.Child, rec: dict, seconds: float) -> str:
        p99 = "-" if rec["p99_ms"] is None else f"{rec['p99_ms']:.3f} ms"
        return (f"{child.head}: {rec['ops_per_s']:.1f} ops/s, p99 {p99}, errors {rec['errors']}, "
                f"dropped {rec['dropped_iterations']} ({seconds:.0f} s)")


def plan(workload: str, *, vus: str | None, rate: str | None, max_vus: int | None, step_duration: str,
         settings: list[str], sweep_id: str | None, resume: str | None, results: Path,
         prometheus: str | None = None, loki: str | None = None) -> Plan:
    """Every check that can be made before any load; raises UserError."""
    if workload not in catalog.workloads():
        raise UserError(f"unknown workload {workload!r}; known: {', '.join(catalog.workloads())}")
    if vus is not None and rate is not None:
        raise UserError("--vus and --rate: give one (VUs for the closed model, rates for the open model)")
    if max_vus is not None and (vus is not None or rate is not None):
        raise UserError("--max-vus sets the doubling list; it goes with neither --vus nor --rate "
                        "(in the open model set MAX_VUS with --set)")
    if max_vus is not None and max_vus < 1:
        raise UserError(f"--max-vus {max_vus}: must be at least 1")
    seconds("--step-duration", step_duration)
    knobs = catalog.parse_settings(settings)
    mode = "open" if rate is not None else "closed"
    owned = ["DURATION", "VUS"] if mode == "closed" else ["DURATION", "RATE", "LOAD_MODEL"]
    for k in owned:
        if k in knobs:
            how = "--step-duration" if k == "DURATION" else "--vus" if k == "VUS" else "--rate"
            raise UserError(f"--set {k}: the sweep sets {k} for each step; use {how}")
    if mode == "closed" and knobs.get("LOAD_MODEL", "closed") != "closed":
        raise UserError(f"--set LOAD_MODEL={knobs['LOAD_MODEL']}: a VU sweep runs the closed model; "
                        "sweep offered rates with --rate")
    steps = (parse_steps("--rate", rate) if rate is not None else parse_steps("--vus", vus) if vus is not None
             else doubling(max_vus or 64))
    sid = catalog.series_id(sweep_id, resume, f"sweep-{workload}-{time.strftime('%Y%m%dT%H%M%S')}", campaign.ID_MAX)
    p = Plan(id=sid, results=results, resume=bool(resume), prometheus=prometheus, loki=loki, workload=workload,
             mode=mode, steps=steps, step_duration=step_duration, settings=knobs)
    p.prepare()
    return p


def analyse(p: Plan, steps: list[dict]) -> dict:
    """The ceiling and knee lines of sweep.json and the output."""
    if p.mode == "closed":
        top, k = saturation.ceiling(steps), saturation.knee(steps)
        return {"ceiling": top and {"vus": top["vus"], "ops_per_s": top["ops_per_s"], "limited_by": top.get("limited_by")},
                "knee": k and {"vus": k["vus"], "ops_per_s": k["ops_per_s"], "p99_ms": k["p99_ms"],
                               "limited_by": k.get("limited_by")},
                "rules": [saturation.KNEE_RULE, saturation.STOP_RULE]}
    top = saturation.open_ceiling(steps)
    return {"ceiling": top and {"rate": top["rate"], "ops_per_s": top["ops_per_s"],
                                "achieved_per_s": top["achieved_per_s"], "limited_by": top.get("limited_by")},
            "knee": None, "rules": [saturation.OPEN_RULE, saturation.STOP_RULE]}


def table(p: Plan, doc: dict) -> list[str]:
    def ms(x):
        return "-" if x is None else f"{x:.3f}"
    lines = [f"{p.key:>8} {'ops/s':>11} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'errors':>7} {'dropped':>8}"]
    for s in doc["steps"]:
        lines.append(f"{s[p.key]:>8} {s['ops_per_s']:>11.1f} {ms(s['p50_ms']):>9} {ms(s['p95_ms']):>9} "
                     f"{ms(s['p99_ms']):>9} {s['errors']:>7} {s['dropped_iterations']:>8}")
    return lines


def _why(point: dict) -> str:
    return f"; {point['limited_by']['text']}" if point.get("limited_by") else ""


def verdict(p: Plan, doc: dict) -> list[str]:
    c, k = doc["ceiling"], doc["knee"]
    out = []
    if p.mode == "closed":
        out.append(f"ceiling: {c['ops_per_s']:.1f} ops/s at {c['vus']} VUs{_why(c)}" if c else "ceiling: no step ran")
        out.append(f"knee: {k['vus']} VUs ({k['ops_per_s']:.1f} ops/s){_why(k)}" if k
                   else "knee: none within the steps run")
    else:
        out.append(f"ceiling: rate {c['rate']}/s ({c['achieved_per_s']:.1f} ops/s achieved){_why(c)}" if c
                   else "ceiling: no rate was kept up with")
    out += [f"  ({r})" for r in doc["rules"]]
    if any(s["p99_ms"] is None for s in doc["steps"]):
        out.append("  latency: not in the summary for this mixed workload (set OP_LATENCY_SUMMARY=on or use "
                   "--prometheus); the knee used ops/s alone")
    if doc["stopped_early"]:
        out.append(f"stopped early after {p.key} {doc['steps'][-1][p.key]}: ops/s fell at two consecutive steps")
    return out


def execute(p: Plan, say=print) -> tuple[dict, int]:
    """Run (or resume) the sweep; returns sweep.json's content and the exit code."""
    doc = {"sweep_id": p.id, "params": p.params(), "steps_planned": p.steps,
           "prometheus": p.prometheus, "loki": p.loki, "steps": [], "status": "running", "stopped_early": False,
           **analyse(p, [])}
    code = p.run_all(doc, say)
    return doc, code


def command(a) -> int:
    p = plan(a.workload, vus=a.vus, rate=a.rate, max_vus=a.max_vus, step_duration=a.step_duration,
             settings=a.set, sweep_id=a.id, resume=a.resume, results=Path(a.results),
             prometheus=a.prometheus, loki=a.loki)
    print(f"sweep {p.id}: {p.workload}, {p.key} {','.join(map(str, p.steps))}, "
          f"{p.step_duration} per step{' (resumed)' if p.resume else ''}", flush=True)
    doc, code = execute(p, say=lambda s: print(s, flush=True))
    print()
    for line in table(p, doc) + verdict(p, doc):
        print(line)
    print(f"results: {p.folder}")
    return code
