"""`ybbench compare BASE OTHER --fail-on RULE`: a gate for CI.

  slower:N%   fails when an OTHER's ops/s of an op is lower than BASE's with
              significance (its interval lies below 1: verdict "slower") and
              by more than N% (ratio <= 1 - N/100);
  p99:+N%     fails when an OTHER's p99 of an op is higher with significance
              (the interval of the ratio of the sides' runs' p99, each over its
              measured window, lies above 1) and by more than N% (ratio >= 1 + N/100).

Exit 1 when a rule fails (each op, run and amount named), 0 when none does,
2 when a rule cannot be judged (no interval: one run a side and no
history of its series, core/run_stats.py) or is malformed. A slowdown
larger than N% whose interval still reaches 1 does not fail: the gate
says only what the runs show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ybbench.core.errors import UserError

RULE = re.compile(r"^(slower|p99):(\+?)([0-9]+(?:\.[0-9]+)?)%$")
USE = ("use slower:N% (ops/s lower by more than N%, with significance) or p99:+N% (p99 latency higher by more "
       "than N%, with significance), N a number above 0 and below 100 for slower")


@dataclass(frozen=True)
class Rule:
    kind: str  # slower, p99
    pct: float
    text: str


def parse(rules: list[str]) -> list[Rule]:
    out = []
    for r in rules:
        m = RULE.match(r.strip())
        if not m:
            kind = r.split(":", 1)[0]
            if kind in ("faster", "p50", "p95", "p999", "lower", "higher"):
                raise UserError(f"--fail-on {r!r}: {kind} is not a gate this version has; {USE}")
            raise UserError(f"--fail-on {r!r}: not a rule; {USE}")
        kind, plus, n = m[1], m[2], float(m[3])
        if kind == "slower" and plus:
            raise UserError(f"--fail-on {r!r}: slower takes N% without a sign (slower:5%); {USE}")
        if not 0 < n < (100 if kind == "slower" else float("inf")):
            raise UserError(f"--fail-on {r!r}: N must be above 0{' and below 100' if kind == 'slower' else ''}; {USE}")
        out.append(Rule(kind, n, r.strip()))
    return out


def _comparisons(doc: dict):
    if doc.get("kind") == "reproduce":
        for name, d in doc["phases"].items():
            for c in d["comparisons"]:
                yield f"phase {name}: ", c
    else:
        for c in doc["comparisons"]:
            yield "", c


def evaluate(doc: dict, rules: list[Rule]) -> dict:
    """{rules, failed, undecided, messages}: what each rule found, op by op."""
    failed, undecided, messages = [], [], []
    for rule in rules:
        for where, c in _comparisons(doc):
            for op, s in c["ops"].items():
                who = f"{where}{op}: {c['other']} against {c['base']}"
                if rule.kind == "slower":
                    ratio, low, high, verdict = s["ratio"], s["low"], s["high"], s["verdict"]
                    said = f"ops/s ratio {ratio:.3f} [{low:.3f}, {high:.3f}] ({_runs(s)})" if low is not None else ""
                    if low is None:
                        undecided.append(f"{who}: {rule.text} cannot be judged: {verdict}")
                    elif verdict == "slower" and ratio <= 1 - rule.pct / 100:
                        failed.append(f"{who}: {100 * (1 - ratio):.1f}% slower, more than {rule.pct:g}%: {said}")
                    else:
                        messages.append(f"{who}: {rule.text} passes: {said}, {verdict}")
                else:
                    q = s.get("p99")
                    if not q or q.get("low") is None:
                        why = q["verdict"] if q else "the runs have no p99"
                        undecided.append(f"{who}: {rule.text} cannot be judged: {why}")
                        continue
                    said = (f"p99 {q['base_ms']:.3f} -> {q['other_ms']:.3f} ms, ratio {q['ratio']:.3f} "
                            f"[{q['low']:.3f}, {q['high']:.3f}] ({_runs(q)})")
                    if q["verdict"] == "higher" and q["ratio"] >= 1 + rule.pct / 100:
                        failed.append(f"{who}: p99 {100 * (q['ratio'] - 1):.1f}% higher, more than {rule.pct:g}%: {said}")
                    else:
                        messages.append(f"{who}: {rule.text} passes: {said}, {q['verdict']}")
    return {"rules": [r.text for r in rules], "failed": failed, "undecided": undecided,
            "messages": [f"FAILED {m}" for m in failed] + [f"UNDECIDED {m}" for m in undecided] + messages}


def _runs(s: dict) -> str:
    """How many runs a side the interval counts, and where a side of one took its spread."""
    n = s.get("runs")
    if not n:  # a compare.json of format 1: an interval over one run's seconds
        return "seconds of one run a side"
    hist = s.get("spread", {}).get("history_runs") or []
    return f"{n['base']} + {n['other']} runs" + (f", spread from {len(hist)} earlier runs" if hist else "")


def exit_code(gate: dict) -> int:
    return 1 if gate["failed"] else 2 if gate["undecided"] else 0
