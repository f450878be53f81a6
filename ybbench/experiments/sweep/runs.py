"""`ybbench sweep`: one workload at rising concurrency (or offered rate).

Each step is one `ybbench run` (run.run) with its own testid
`<sweep-id>-vus<N>` (`-rate<R>`) and folder inside results/<sweep-id>/,
next to sweep.json (the parameters and each step's numbers, read back from
the step's own summary.json), rewritten atomically after every step. The
sweep folder appears only once its first step has finished, so a sweep
that fails before that leaves nothing; later, every step folder is whole
(run.run stages it) and `--resume` picks up where it stopped.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core import catalog
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.core.files import keeps_finished, staged_dir, write_json
from ybbench.core.progress import RunProgress
from ybbench.experiments.sweep import saturation
from ybbench.run import k6_process, k6run

SWEEP_ID_MAX = 48  # leaves room for -vus<N>/-rate<R> in a 64-char testid


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


@dataclass
class Plan:
    sweep_id: str
    workload: str
    mode: str  # "closed" (steps are VUs) or "open" (steps are rates)
    steps: list[int]
    step_duration: str
    settings: dict[str, str]
    results: Path
    prometheus: str | None = None
    loki: str | None = None
    resume: bool = False
    done: dict[int, dict] = field(default_factory=dict)  # resumed: step -> record

    @property
    def folder(self) -> Path:
        return self.results / self.sweep_id

    @property
    def key(self) -> str:
        return "vus" if self.mode == "closed" else "rate"

    def step_id(self, n: int) -> str:
        return f"{self.sweep_id}-{self.key}{n}"

    def step_knobs(self, n: int) -> dict[str, str]:
        step = {"VUS": str(n)} if self.mode == "closed" else {"LOAD_MODEL": "constant-arrival-rate", "RATE": str(n)}
        return {**self.settings, **step, "DURATION": self.step_duration}

    def params(self) -> dict:
        """What must match for a resume (the step list may grow)."""
        return {"workload": self.workload, "mode": self.mode, "step_duration": self.step_duration,
                "settings": self.settings}


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
    sid = catalog.series_id(sweep_id, resume, f"sweep-{workload}-{time.strftime('%Y%m%dT%H%M%S')}", SWEEP_ID_MAX)
    p = Plan(sid, workload, mode, steps, step_duration, knobs, results, prometheus, loki, resume=bool(resume))
    for n in steps:
        if not catalog.TESTID.match(p.step_id(n)):
            raise UserError(f"step id {p.step_id(n)!r} is longer than 64 characters: use a shorter --id")
    if resume:
        _check_resume(p)
    elif p.folder.exists():
        raise UserError(f"{p.folder} exists: a sweep id is used once (or --resume {sid})")
    k6_process.check_services(prometheus, loki)
    return p


def _check_resume(p: Plan) -> None:
    """The resumed sweep exists, ran the same parameters, and its finished
    steps are in the new list; fills p.done from their folders."""
    doc_path = p.folder / "sweep.json"
    if not doc_path.is_file():
        raise UserError(f"--resume {p.sweep_id}: no sweep at {p.folder} (no sweep.json)")
    try:
        old = json.loads(doc_path.read_text())
        old_params = old["params"]
    except (ValueError, KeyError) as e:
        raise UserError(f"--resume {p.sweep_id}: {doc_path} is not a sweep's ({e})") from None
    names = {"workload": "the workload", "mode": "the load model (--vus or --rate)",
             "step_duration": "--step-duration", "settings": "--set"}
    for k, v in p.params().items():
        if old_params.get(k) != v:
            raise UserError(f"--resume {p.sweep_id}: {names[k]} differs from the sweep's: "
                            f"{_show(v)} here, {_show(old_params.get(k))} in {doc_path}")
    # Finished steps: whatever folders exist, whether or not sweep.json was
    # rewritten after them (an interruption between the two).
    found = {}
    for d in p.folder.iterdir():
        m = re.fullmatch(re.escape(p.sweep_id) + rf"-{p.key}([0-9]+)", d.name)
        if m and d.is_dir():
            found[int(m.group(1))] = d
    for n in sorted(found):
        if n not in p.steps:
            raise UserError(f"--resume {p.sweep_id}: step {p.key}={n} is finished but not in the new list "
                            f"{','.join(map(str, p.steps))}")
    for n, d in sorted(found.items()):
        p.done[n] = step_record(p, n, d)


def _show(v) -> str:
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in sorted(v.items())) or "(none)"
    return str(v)


def step_record(p: Plan, n: int, folder: Path) -> dict:
    """One step's numbers, from its own summary.json (k6-scripts/lib/summary.js)."""
    try:
        summary = json.loads((folder / "summary.json").read_text())
        params = json.loads((folder / "params.json").read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"step {folder.name}: no usable summary.json/params.json ({e})") from None
    want = p.step_knobs(n)
    knobs = params.get("knobs", {})
    wrong = {k: knobs.get(k) for k, v in want.items() if knobs.get(k) != v}
    if params.get("workload") != p.workload or wrong:
        raise UserError(f"step {folder.name} ran other parameters than this sweep's: "
                        f"{params.get('workload')} {_show(wrong)}")
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
        p.key: n, "testid": folder.name, "folder": folder.name,
        "ops_per_s": sum(o["ops_per_s"] for o in ops.values()), "count": count,
        "p50_ms": lat.get("p50"), "p95_ms": lat.get("p95"), "p99_ms": lat.get("p99"), "avg_ms": lat.get("avg"),
        "latency_op": lat_op, "ops": ops, "errors": summary["errors"],
        "dropped_iterations": summary["dropped_iterations"], "duration_s": summary["duration_s"],
        "k6_exit_code": params.get("k6_exit_code"),
    }
    if p.mode == "open":
        rec["achieved_per_s"] = count / seconds("--step-duration", p.step_duration)
    return rec


def analyse(p: Plan, steps: list[dict]) -> dict:
    """The ceiling and knee lines of sweep.json and the output."""
    if p.mode == "closed":
        top, k = saturation.ceiling(steps), saturation.knee(steps)
        return {"ceiling": top and {"vus": top["vus"], "ops_per_s": top["ops_per_s"]},
                "knee": k and {"vus": k["vus"], "ops_per_s": k["ops_per_s"], "p99_ms": k["p99_ms"]},
                "rules": [saturation.KNEE_RULE, saturation.STOP_RULE]}
    top = saturation.open_ceiling(steps)
    return {"ceiling": top and {"rate": top["rate"], "ops_per_s": top["ops_per_s"],
                                "achieved_per_s": top["achieved_per_s"]},
            "knee": None, "rules": [saturation.OPEN_RULE, saturation.STOP_RULE]}


def table(p: Plan, doc: dict) -> list[str]:
    def ms(x):
        return "-" if x is None else f"{x:.3f}"
    lines = [f"{p.key:>8} {'ops/s':>11} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'errors':>7} {'dropped':>8}"]
    for s in doc["steps"]:
        lines.append(f"{s[p.key]:>8} {s['ops_per_s']:>11.1f} {ms(s['p50_ms']):>9} {ms(s['p95_ms']):>9} "
                     f"{ms(s['p99_ms']):>9} {s['errors']:>7} {s['dropped_iterations']:>8}")
    return lines


def verdict(p: Plan, doc: dict) -> list[str]:
    c, k = doc["ceiling"], doc["knee"]
    out = []
    if p.mode == "closed":
        out.append(f"ceiling: {c['ops_per_s']:.1f} ops/s at {c['vus']} VUs" if c else "ceiling: no step ran")
        out.append(f"knee: {k['vus']} VUs ({k['ops_per_s']:.1f} ops/s)" if k else "knee: none within the steps run")
    else:
        out.append(f"ceiling: rate {c['rate']}/s ({c['achieved_per_s']:.1f} ops/s achieved)" if c
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
    doc = {"sweep_id": p.sweep_id, "params": p.params(), "steps_planned": p.steps,
           "prometheus": p.prometheus, "loki": p.loki, "steps": [], "status": "running", "stopped_early": False,
           **analyse(p, [])}
    todo = list(p.steps)
    folder = p.folder

    def step(where: Path) -> None:
        n = todo.pop(0)
        i = len(p.steps) - len(todo)
        if n in p.done:
            rec = p.done[n]
            say(f"step {i}/{len(p.steps)} {p.key} {n}: already finished, not re-run ({rec['ops_per_s']:.1f} ops/s)")
        else:
            started = time.time()
            knobs = p.step_knobs(n)
            if p.workload in catalog.NEW_KEYS and "KEY_PREFIX" not in knobs:
                # A step re-run after an interruption must not collide with
                # the keys its first attempt wrote under the same testid.
                knobs["KEY_PREFIX"] = catalog.fresh_prefix("s")
            with RunProgress(f"step {i}/{len(p.steps)} {p.key} {n} ({p.step_duration})") as live:
                k6run.run(p.workload, testid=p.step_id(n), results=where, prometheus=p.prometheus, loki=p.loki,
                            settings=[f"{k}={v}" for k, v in knobs.items()], quiet=True, on_line=live.feed)
            rec = step_record(p, n, where / p.step_id(n))
            p99 = "-" if rec["p99_ms"] is None else f"{rec['p99_ms']:.3f} ms"
            say(f"step {i}/{len(p.steps)} {p.key} {n}: {rec['ops_per_s']:.1f} ops/s, p99 {p99}, "
                f"errors {rec['errors']}, dropped {rec['dropped_iterations']} ({time.time() - started:.0f} s)")
        doc["steps"].append(rec)
        doc.update(analyse(p, doc["steps"]))
        if saturation.should_stop(doc["steps"]):
            doc["stopped_early"] = True
            todo.clear()
        doc["status"] = "running" if todo else "stopped early" if doc["stopped_early"] else "complete"
        write_json(where / "sweep.json", doc)

    with keeps_finished(folder, doc, "sweep.json", "steps", p.sweep_id):
        if not p.resume:
            # The folder appears with its first finished step, or not at all.
            with staged_dir(folder) as stage:
                step(stage)
        while todo:
            step(folder)
    code = 99 if any(s["k6_exit_code"] == 99 for s in doc["steps"]) else 0
    return doc, code


def command(a) -> int:
    p = plan(a.workload, vus=a.vus, rate=a.rate, max_vus=a.max_vus, step_duration=a.step_duration,
             settings=a.set, sweep_id=a.id, resume=a.resume, results=Path(a.results),
             prometheus=a.prometheus, loki=a.loki)
    print(f"sweep {p.sweep_id}: {p.workload}, {p.key} {','.join(map(str, p.steps))}, "
          f"{p.step_duration} per step{' (resumed)' if p.resume else ''}", flush=True)
    doc, code = execute(p, say=lambda s: print(s, flush=True))
    print()
    for line in table(p, doc) + verdict(p, doc):
        print(line)
    print(f"results: {p.folder}")
    return code
