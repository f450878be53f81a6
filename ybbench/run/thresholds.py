"""`ybbench run --threshold`: k6's threshold syntax, per op, judged on the
run's summary.json once it is whole.

ybbench judges them, not k6: a p99 threshold in k6 re-sorts the trend's
every sample every 2 s (client CPU that grows with the run: lib/run.js),
and with --generators each k6 would judge its own segment's p99, not the
run's. summary.json's figures are the run's (merged over generators, the
latency from our Go module's histograms or Prometheus). A breach exits 99,
as k6's own thresholds do.

    select:p(99)<5ms     select's p99 under 5 ms (p99, p(99), med, avg, max)
    rate>=1000           every op's ops/s at least 1000
    errors==0            no SQL error in the run (keys_missing, dropped_iterations likewise)
"""

from __future__ import annotations

import operator
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import formats, run_folder
from ybbench.core.errors import UserError

CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne}
# k6's aggregation names for a trend, and summary.json's latency_ms key for each.
LATENCY = {"avg": "avg", "med": "p50", "max": "max", "p(50)": "p50", "p(90)": "p90", "p(95)": "p95",
           "p(99)": "p99"}
PER_OP = {"rate": "per_second", "count": "count", "errors": "errors", "retries": "retries",
          "keys_missing": "keys_missing"}
WHOLE_RUN = ("errors", "keys_missing", "dropped_iterations", "rows_written")
UNITS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0}
RULE = re.compile(r"^(?:(?P<op>[a-z_]+):)?(?P<agg>[a-z_]+|p\(?\d+(?:\.\d+)?\)?)\s*(?P<cmp><=|>=|==|!=|<|>)\s*"
                  r"(?P<value>\d+(?:\.\d+)?)(?P<unit>us|µs|ms|s)?$")


@dataclass(frozen=True)
class Rule:
    text: str
    op: str | None  # None: every op (latency, rate, count), or the whole run (errors, ...)
    figure: str  # latency_ms key, an op's summary key, or a whole-run summary key
    kind: str  # "latency", "op" or "run"
    cmp: str
    limit: float  # ms for latency


def parse(texts: list[str]) -> list[Rule]:
    return [_parse(t) for t in texts]


def _parse(text: str) -> Rule:
    m = RULE.match(text.strip())
    bad = (f"--threshold {text!r}: k6's syntax, [OP:]AGGREGATION OPERATOR VALUE, e.g. select:p(99)<5ms, "
           f"rate>=1000, errors==0; aggregations: {', '.join([*LATENCY, 'p99', *PER_OP, *WHOLE_RUN[1:]])}")
    if not m:
        raise UserError(bad)
    agg, unit, value = m["agg"], m["unit"], float(m["value"])
    if re.fullmatch(r"p\d+(\.\d+)?", agg):  # p99 as well as k6's p(99)
        agg = f"p({agg[1:]})"
    if agg in LATENCY:
        return Rule(text, m["op"], LATENCY[agg], "latency", m["cmp"], value * UNITS[unit or "ms"])
    if agg.startswith("p("):
        raise UserError(f"--threshold {text!r}: summary.json holds p(50), p(90), p(95) and p(99) per op; "
                        f"{agg} is not among them")
    if agg not in PER_OP and agg not in WHOLE_RUN:
        raise UserError(bad)
    if unit:
        raise UserError(f"--threshold {text!r}: {agg} is a number, not a duration ({unit})")
    if agg in WHOLE_RUN and (m["op"] is None or agg not in PER_OP):
        if m["op"] is not None:
            raise UserError(f"--threshold {text!r}: {agg} is the whole run's, not an op's")
        return Rule(text, None, agg, "run", m["cmp"], value)
    return Rule(text, m["op"], PER_OP[agg], "op", m["cmp"], value)


def judge(summary: dict, rules: list[Rule]) -> list[dict]:
    """Each rule against the run's figures: one entry per figure judged."""
    out = []
    for r in rules:
        if r.kind == "run":
            out.append(_entry(r, None, summary.get(r.figure)))
            continue
        ops = [r.op] if r.op else sorted(summary["ops"])
        for op in ops:
            got = summary["ops"].get(op)
            if got is None:
                out.append({**_entry(r, op, None), "why": f"the run had no {op} (its ops: "
                            f"{', '.join(sorted(summary['ops'])) or 'none'})"})
                continue
            value = (got.get("latency_ms") or {}).get(r.figure) if r.kind == "latency" else got.get(r.figure)
            entry = _entry(r, op, value)
            if value is None:
                entry["why"] = (f"summary.json has no {r.figure} latency for {op} (run with --prometheus, or a k6 "
                                "with our Go module, or OP_LATENCY_SUMMARY=on)")
            out.append(entry)
    return out


def _entry(r: Rule, op: str | None, value) -> dict:
    ok = value is not None and CMP[r.cmp](float(value), r.limit)
    return {"threshold": r.text, "op": op, "figure": r.figure, "limit": r.limit,
            "value": None if value is None else float(value), "ok": ok}


def describe(e: dict) -> str:
    unit = " ms" if e["figure"] in LATENCY.values() else ""
    where = f"{e['op']} " if e["op"] else ""
    if e["value"] is None:
        return f"{e['threshold']}: {e.get('why', 'no such figure in summary.json')}"
    return f"{e['threshold']}: {where}{e['figure']} {e['value']:g}{unit}, limit {e['limit']:g}{unit}"


def apply(stage: Path, rules: list[Rule], code: int, quiet: bool) -> int:
    """Judges the staged run's summary.json, keeps the verdicts in it
    (`thresholds`), says each crossed one and returns the run's exit code:
    99 when one is crossed, as k6's own thresholds."""
    if not rules:
        return code
    path = stage / run_folder.SUMMARY
    if not path.exists():
        raise UserError(f"--threshold: the run wrote no {run_folder.SUMMARY} to judge")
    summary = run_folder.read_json(path, "the run's summary")
    verdicts = judge(summary, rules)
    summary["thresholds"] = verdicts
    formats.write(path, "summary", summary)
    crossed = [e for e in verdicts if not e["ok"]]
    for e in crossed:
        print(f"ybbench: threshold crossed: {describe(e)}", file=sys.stderr, flush=True)
    if not quiet and not crossed:
        print(f"  thresholds held: {'; '.join(describe(e) for e in verdicts)}", flush=True)
    return 99 if crossed else code
