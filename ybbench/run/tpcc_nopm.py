"""NOPM, as HammerDB counts it: New-Orders per minute by the database, from
how far the districts' D_NEXT_O_ID moved over the run, beside tpmC (k6's
count of the New-Orders that committed), over the same minutes.

Read here, after k6 has exited, rather than in k6's teardown: the merged
summary of --generators N gets one reading after every generator ended;
the start is what the run's setup read (summary.json's
written.next_o_id_at_start, the earliest over generators), so nothing the
run committed is outside the two readings, and nothing outside the run is
inside them but what other sessions committed meanwhile, which is what the
comparison is for. The window (duration_s) is tpmC's; tpcc.measured, the
part after a warm-up, gets no NOPM: nothing read D_NEXT_O_ID at the
warm-up's end, and a whole-run count over the measured minutes would not
be honest.

Agreement: committed <= the database's New-Orders <= committed + failed
(a failed New-Order may have committed before its error reached k6), with
a tolerance of 0.1% of committed beyond either end (TOLERANCE)."""

from __future__ import annotations

import json
from pathlib import Path

from ybbench.run import run_db

TOLERANCE = 0.001


def read_next_o_ids(env: dict[str, str], district: str) -> list[int]:
    """Each district's D_NEXT_O_ID, W_ID-major, on the run's first node (the
    password as k6's: PGPASSWORD or PGPASSFILE)."""
    node = env.get("YSQL_NODES", "127.0.0.1:5433").split(",")[0]
    with run_db.connect(env, node, "ybbench nopm", untracked=True) as conn:
        rows = conn.execute(f"SELECT d_w_id, d_id, d_next_o_id FROM {district} ORDER BY d_w_id, d_id").fetchall()
    return [int(r[2]) for r in rows]


def figures(doc: dict, end: list[int]) -> dict:
    """summary.json's tpcc.nopm from the districts' D_NEXT_O_ID at the end."""
    t, start = doc["tpcc"], doc["written"]["next_o_id_at_start"]
    if len(end) != len(start):
        raise ValueError(f"{len(end)} districts now, {len(start)} at the run's start")
    orders = sum(e - s for e, s in zip(end, start))
    minutes = doc["duration_s"] / 60
    nopm = orders / minutes if minutes > 0 else None
    committed, failed = t["new_orders"]["committed"], t["new_orders"]["failed"]
    slack = TOLERANCE * committed
    agree = committed - slack <= orders <= committed + failed + slack
    out = {"nopm": nopm, "new_orders": orders, "tolerance": TOLERANCE, "agrees": agree}
    if not agree:
        out["disagreement"] = (
            f"the database's {orders} New-Orders (D_NEXT_O_ID) against k6's {committed} committed"
            f"{f' + {failed} failed' if failed else ''}, beyond {100 * TOLERANCE:g}%: "
            + ("other sessions committed New-Orders on these warehouses during the run" if orders > committed + failed else
               "fewer in the database than k6 acknowledged: New-Orders lost, or the districts changed under "
               "the run (ybbench verify)"))
    return out


def add(doc: dict, env: dict[str, str]) -> str | None:
    """Adds tpcc.nopm to a tpcc summary (in place); the line to print, or
    None for another workload. A failed read is said in tpcc.nopm.error."""
    t, w = doc.get("tpcc"), doc.get("written") or {}
    if not t or "next_o_id_at_start" not in w:
        return None
    try:
        t["nopm"] = figures(doc, read_next_o_ids(env, w["tables"]["district"]))
    except Exception as e:  # noqa: BLE001 - the run stands without it; the summary says why
        t["nopm"] = {"nopm": None, "error": f"D_NEXT_O_ID not read after the run: {str(e).strip()[:300]}"}
        return f"  NOPM: {t['nopm']['error']}\n"
    n = t["nopm"]
    line = f"  NOPM {n['nopm']:.1f} (the database: D_NEXT_O_ID advanced by {n['new_orders']})" \
        if n["nopm"] is not None else "  NOPM -"
    return line + ("; agrees with tpmC" if n["agrees"] else f"; DISAGREES with tpmC: {n['disagreement']}") + "\n"


def add_to_file(summary: Path, env: dict[str, str]) -> str | None:
    """add() on summary.json as k6 wrote it, written back when it changed."""
    doc = json.loads(summary.read_text())
    line = add(doc, env)
    if line is not None:
        summary.write_text(json.dumps(doc, indent=1))
    return line
