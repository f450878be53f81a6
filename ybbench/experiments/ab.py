"""`ybbench ab WORKLOAD --base KNOB=V --other KNOB=V --repeat N`: did the
change make it faster, counted in runs.

The base's and the other's settings run alternately, N times each, in the
order A B B A A B B A ... (each pair the mirror of the one before, so a
drift that is linear in time falls on both sides alike), after
--warmup-runs runs of the base that are not compared (the first run after
a load or a restart differs for reasons that are not the change). Each
run is a normal `ybbench run` in results/<ab id>/<ab id>-base<i> or
-other<i>, its first --warmup seconds left out of what compare measures
(params.json warmup_s). A side's --prepare command runs before each of its
runs (switch a server flag, a view, a binary); --base-label/--other-label
are kept with the runs (history store). Then `ybbench compare <ab id>`
compares the two sides run against run (core/run_stats.py): its table,
compare.json and compare.html in results/<ab id>/compare, and --fail-on.

ab is a campaign (experiments/campaign.py): ab.json is rewritten after
every run, and --resume goes on after an interruption.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core import catalog, history_record, run_folder
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.experiments import campaign
from ybbench.run import k6run, keys_from

REPEAT = 5  # runs a side to start with: docs/reports.md "Comparing runs" has the calibration behind it
RESOLVE = "5%"  # then as many as their spread needs to find this change 8 times in 10 ...
MAX_REPEAT = 20  # ... up to this many a side
WARMUP = "2s"
WARMUP_RUNS = 1
SIDES = ("base", "other")


def order(repeat: int) -> list[tuple[str, int]]:
    """(side, its i-th run) in the order they run: A B, B A, A B, ..."""
    out = []
    for i in range(1, repeat + 1):
        pair = [("base", i), ("other", i)]
        out += pair if i % 2 else pair[::-1]
    return out


@dataclass(kw_only=True)
class Plan(campaign.Campaign):
    KIND, RECORD, WHAT, CHILD = "ab", "ab.json", "runs", "run"
    ID_FROM, DIFFERS = "--id + the side", "differs from the ab's"
    NAMES = {"workload": "the workload", "settings": "--set", "base": "--base", "other": "--other",
             "warmup_s": "--warmup", "warmup_runs": "--warmup-runs", "labels": "--base-label/--other-label",
             "prepare": "--base-prepare/--other-prepare"}

    workload: str
    repeat: int
    settings: dict[str, str]
    sides: dict[str, dict[str, str]]  # base/other -> their own knobs
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    commands: dict[str, str | None] = field(default_factory=dict)  # --base-prepare, --other-prepare
    warmup_s: float = 0.0
    warmup_runs: int = WARMUP_RUNS

    def testid(self, side: str, i: int, warm: bool = False) -> str:
        return f"{self.id}-{'warm' if warm else side}{i}"

    def params(self) -> dict:
        """What a --resume must match (the repeat may grow)."""
        return {"workload": self.workload, "settings": self.settings, "base": self.sides["base"],
                "other": self.sides["other"], "warmup_s": self.warmup_s, "warmup_runs": self.warmup_runs,
                "labels": self.labels, "prepare": self.commands}

    def children(self) -> list[campaign.Child]:
        plan = [("base", i, True) for i in range(1, self.warmup_runs + 1)] + [(s, i, False) for s, i in
                                                                             order(self.repeat)]
        out = []
        for n, (side, i, warm) in enumerate(plan, start=1):
            head = f"run {n}/{len(plan)} {side}{i}" + (" (warm-up, not compared)" if warm else "")
            out.append(campaign.Child(self.testid(side, i, warm), self.workload, head, head, (side, i, warm)))
        return out

    def side_knobs(self, side: str) -> dict[str, str]:
        return {**self.settings, **self.sides[side]}

    def knobs(self, child: campaign.Child) -> dict[str, str]:
        knobs = self.side_knobs(child.item[0])
        if self.workload in catalog.NEW_KEYS and "KEY_PREFIX" not in knobs:
            knobs["KEY_PREFIX"] = catalog.fresh_prefix("ab")  # a re-run after an interruption writes new keys
        return knobs

    def ran_with(self, child: campaign.Child) -> dict[str, str]:
        return self.side_knobs(child.item[0])

    def run_options(self, child: campaign.Child) -> dict:
        side = child.item[0]
        return {"warmup_s": self.warmup_s, "labels": {**self.labels.get(side, {}), "ab": self.id, "ab_side": side}}

    def _run(self, child: campaign.Child, where: Path, n: int, say) -> dict:
        cmd = self.commands.get(child.item[0])
        if cmd:
            p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
            if p.returncode != 0:
                tail = (p.stdout + p.stderr).strip()[-400:]
                raise UserError(f"{child.head}: --{child.item[0]}-prepare {cmd!r} exited {p.returncode}"
                                + (f": {tail}" if tail else ""))
        return super()._run(child, where, n, say)

    def record(self, child: campaign.Child, run: run_folder.Run) -> dict:
        side, i, warm = child.item
        ops = {op: o.get("per_second") for op, o in run.summary["ops"].items()}
        return {"testid": run.testid, "side": side, "index": i, "warmup": warm, "ops_per_s": ops,
                "errors": run.summary.get("errors"), "k6_exit_code": run.params.get("k6_exit_code")}

    def add(self, doc: dict, child: campaign.Child, rec: dict) -> bool:
        doc["runs"] = [r for r in doc["runs"] if r["testid"] != rec["testid"]] + [rec]
        return False

    def ran_line(self, child: campaign.Child, rec: dict, seconds_taken: float) -> str:
        ops = ", ".join(f"{op} {v:.1f} ops/s" for op, v in rec["ops_per_s"].items() if v is not None)
        return f"{child.head}: {ops} (summary.json, the whole run), errors {rec['errors']} ({seconds_taken:.0f} s)"


def _pairs(opt: str, given: list[str]) -> dict[str, str]:
    return catalog.parse_settings(list(given)) if given else {}


def plan(a) -> Plan:
    """Every check that can be made before any load; raises UserError."""
    if a.workload not in catalog.workloads():
        raise UserError(f"unknown workload {a.workload!r}; known: {', '.join(catalog.workloads())}")
    if a.repeat < 2:
        raise UserError(f"--repeat {a.repeat}: at least 2 runs a side (one run a side has no run-to-run spread)")
    if a.warmup_runs < 0:
        raise UserError(f"--warmup-runs {a.warmup_runs}: 0 or more")
    settings = _pairs("--set", a.set)
    if a.keys_from:  # resolved once: the ab's settings (and a --resume's) hold the keys
        settings = keys_from.merged(a.workload, a.keys_from, Path(a.results), settings)
    sides = {"base": _pairs("--base", a.base), "other": _pairs("--other", a.other)}
    for side, knobs in sides.items():
        both = sorted(set(knobs) & set(settings))
        if both:
            raise UserError(f"--{side} {both[0]}: also given with --set; a knob is either common or a side's")
    warm = seconds("--warmup", a.warmup, zero=True)
    for side in SIDES:
        k6run.warmup_params(warm, {**settings, **sides[side]})
    labels = {s: history_record.parse_labels(getattr(a, f"{s}_label")) for s in SIDES}
    prepare = {s: getattr(a, f"{s}_prepare") for s in SIDES}
    aid = catalog.series_id(a.id, a.resume, f"ab-{a.workload}-{time.strftime('%Y%m%dT%H%M%S')}", campaign.ID_MAX)
    p = Plan(id=aid, results=Path(a.results), resume=bool(a.resume), prometheus=a.prometheus, loki=a.loki,
             workload=a.workload, repeat=a.repeat, settings=settings, sides=sides, labels=labels, commands=prepare,
             warmup_s=warm, warmup_runs=a.warmup_runs)
    p.prepare()
    return p


def command(a) -> tuple[Plan, int]:
    """Run (or resume) the ab; the plan and the exit code of its runs (99: a run's thresholds were crossed).
    The comparison after it is the CLI's (analysis/compare.py, its page report/compare_page.py: report
    comes after experiments)."""
    p = plan(a)
    print(f"ab {p.id}: {p.workload}, {p.repeat} runs a side in the order "
          f"{' '.join('A' if s == 'base' else 'B' for s, _ in order(p.repeat))}"
          f"{f', after {p.warmup_runs} warm-up run(s) of the base' if p.warmup_runs else ''}"
          f"{f', the first {p.warmup_s:g} s of each left out' if p.warmup_s else ''}"
          f"{' (resumed)' if p.resume else ''}", flush=True)
    doc = {"ab_id": p.id, "params": p.params(), "repeat": p.repeat,
           "order": [p.testid(s, i) for s, i in order(p.repeat)], "prometheus": p.prometheus, "loki": p.loki,
           "runs": [], "status": "running"}
    return p, p.run_all(doc, say=lambda s: print(s, flush=True))
