"""The orders a tpcc run added, as SQL: what its summary says each district
stood at when the run began, against the tables."""

from __future__ import annotations


def run_orders(prefix: str, summary: dict) -> str:
    """A FROM clause of the run's orders (alias o): O_ID from where each district stood at its start
    (summary.json's written.next_o_id_at_start, W_ID-major)."""
    starts = summary["written"]["next_o_id_at_start"]
    warehouses = summary["written"]["warehouses"]
    values = ",".join(f"({w},{d},{starts[(w - 1) * 10 + d - 1]})" for w in range(1, warehouses + 1)
                      for d in range(1, 11))
    return f"(VALUES {values}) AS s(w, d, o) JOIN {prefix}orders o ON (o_w_id, o_d_id) = (s.w, s.d) AND o_id >= s.o"
