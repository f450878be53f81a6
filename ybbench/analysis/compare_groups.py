"""Which runs `ybbench compare` sets against which, and the run-to-run
spread of earlier runs from the history store.

A side of a comparison is a group of runs: a run id, a comma-separated list
of run ids (a1,a2,a3), or the id of an `ybbench ab` (its ab.json names the
base's and the other's runs: `compare AB_ID` alone compares them). One run a
side has no run-to-run estimate of its own; History.spread() finds one in
the history store: the earlier runs of the same series (workload and knobs
but the run's own data, core/history_record.py), the compared runs left
out, each series' log values from its own mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ybbench.core import history_record, history_store, run_folder, run_stats
from ybbench.core.catalog import TESTID
from ybbench.core.errors import UserError

AB = "ab.json"


@dataclass(frozen=True)
class Group:
    label: str  # as given: a run id, a list, or <ab id>:base / <ab id>:other
    runs: list[str]
    where: Path  # the folder that holds these runs


def ab_doc(results: Path, rid: str) -> dict | None:
    path = results / rid / AB
    if not (TESTID.match(rid) and path.is_file()):
        return None
    return run_folder.read_json(path, f"ab {rid}")


def groups(results: Path, base: str, others: list[str]) -> list[Group]:
    """[base, *others] as groups; `compare AB_ID` alone: its two sides."""
    if not others:
        doc = ab_doc(results, base)
        if doc is None:
            raise UserError(f"compare {base}: give the runs to compare with it, or the id of an `ybbench ab` "
                            f"(no {AB} in {results / base})")
        runs = {"base": [], "other": []}
        for r in doc["runs"]:
            if not r.get("warmup"):
                runs[r["side"]].append(r["testid"])
        for side in ("base", "other"):
            if not runs[side]:
                raise UserError(f"ab {base}: no finished {side} run yet (--resume {base})")
        return [Group(f"{base}:{side}", runs[side], results / base) for side in ("base", "other")]
    out = []
    for given in [base, *others]:
        ids = [x.strip() for x in given.split(",")]
        if any(not TESTID.match(x) for x in ids):
            raise UserError(f"{given!r}: a run id, or run ids separated by commas (1-64 letters, digits, . _ - each)")
        if len(set(ids)) != len(ids):
            raise UserError(f"{given!r}: a run named twice")
        out.append(Group(given, ids, results))
    seen: dict[str, str] = {}
    for g in out:
        for r in g.runs:
            if r in seen:
                raise UserError(f"run {r} is on two sides ({seen[r]!r} and {g.label!r})")
            seen[r] = g.label
    return out


class History:
    """The history store, read once, and only when a side of one run asks
    for a spread (a comparison of several ops, or a reproduce's phases,
    asks many times)."""

    def __init__(self, where: str | None):
        self.where = where

    @property
    def shown(self) -> str | None:
        return history_store.shown(self.where) if self.where else None

    @cached_property
    def _kept(self) -> tuple[list[dict], str | None]:
        """(every run in the store, None) or ([], why there are none)."""
        if self.where is None:
            return [], "no history store given"
        if not history_store.is_postgres(self.where) and not Path(self.where).is_file():
            return [], f"no history store at {self.shown}"
        try:
            with history_store.Store(self.where) as store:
                return store.runs(), None
        except UserError as e:
            return [], f"history store not read: {e}"

    def spread(self, series_keys: set[str], exclude: set[str], op: str,
               field: str) -> tuple[run_stats.Spread | None, str | None]:
        """(the spread of earlier runs of these series, None) or (None, why there is none)."""
        kept, why = self._kept
        if why:
            return None, why
        by_series: dict[str, list[tuple[str, float]]] = {}
        for r in kept:
            if r["series_key"] in series_keys and r["testid"] not in exclude and op in r["ops"]:
                by_series.setdefault(r["series_key"], []).append((r["testid"], r["ops"][op].get(field)))
        return run_stats.spread_of(by_series, f"history store {self.shown}, {field} of op {op}"), None


def series_key(run: run_folder.Run) -> str:
    return history_record.series_key(run.params["workload"], run.shown_knobs)
