"""`ybbench verify` after a sql-secondary-index run: does the index on v
agree with the table?

Two streams, both sorted by the database (`ORDER BY v COLLATE "C"`, code
point order, as Python compares strings) and merged here in O(1) memory:
the index's own entries (an index-only scan, so the values come from the
index, not the table) and the table's rows (a sequential scan, the index
not used). An entry without a row of its value is an orphan; a row whose
value has no entry is missing from the index. Each plan is checked with
EXPLAIN first: verify refuses (exit 2) rather than compare the table with
itself. Then the table's rows, in chunks of --chunk, are looked up by value
through the index (`v = ANY(...)`, an index scan): each must come back with
the key and value the table has (a btree scan does not recheck the value in
the row it reaches, so an entry leading to a row of another value shows).
Rows under the run's key prefix must hold `val:<n>` for key `<prefix>:<n>`.
"""

from __future__ import annotations

from pathlib import Path

from ybbench.core import run_folder
from ybbench.core.errors import UserError
from ybbench.run.verify_base import Count, connect, example_lines

INDEX_ONLY = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_indexscan": "on",
              "enable_indexonlyscan": "on"}
TABLE_ONLY = {"enable_seqscan": "on", "enable_bitmapscan": "off", "enable_indexscan": "off",
              "enable_indexonlyscan": "off"}
INDEX_SCAN = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_indexscan": "on",
              "enable_indexonlyscan": "off"}


def _set(conn, settings: dict) -> None:
    for k, v in settings.items():
        conn.execute(f"SET LOCAL {k} = {v}")


def _planned(conn, query, args, must: str) -> None:
    from psycopg import sql

    plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN {}").format(query), args))
    if must not in plan:
        raise UserError(f"the planner would not read this as asked ({must!r}), so verify cannot compare the "
                        f"index with the table:\n{plan}")


def _key_order(v):
    return (v is None, v or "")  # NULLS LAST, as ORDER BY


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    from psycopg import sql

    w = run_folder.read(folder).summary["written"]
    table, index, prefix = sql.Identifier(w["table"]), w["index"], w["prefix"]
    c = {k: Count() for k in ("rows", "entries", "missing_from_index", "orphan_entries", "not_found_by_value",
                             "other_row_by_value", "wrong_value")}
    orphans: list[str] = []
    with connect(w, node) as conn:
        found = conn.execute("SELECT i.indisvalid AND i.indisready FROM pg_index i WHERE i.indexrelid = to_regclass(%s) "
                             "AND i.indrelid = to_regclass(%s)", [index, w["table"]]).fetchone()
        if found is None:
            raise UserError(f"no index {index!r} on table {w['table']!r} in database {w['database']!r}")
        if not found[0]:
            raise UserError(f"index {index!r} is not valid and ready: it is being built or was left broken")
        by_index = sql.SQL('SELECT v FROM {} ORDER BY v COLLATE "C"').format(table)
        by_table = sql.SQL('SELECT v, k FROM {} ORDER BY v COLLATE "C", k COLLATE "C"').format(table)
        lookup = sql.SQL("SELECT k, v FROM {} WHERE v = ANY(%s)").format(table)
        _set(conn, INDEX_ONLY)
        _planned(conn, by_index, [], f"Index Only Scan using {index}")
        entries = conn.cursor(name="ybbench_verify_index")
        entries.itersize = chunk
        entries.execute(by_index)
        _set(conn, TABLE_ONLY)
        _planned(conn, by_table, [], "Seq Scan on")
        rows = conn.cursor(name="ybbench_verify_table")
        rows.itersize = chunk
        rows.execute(by_table)
        _set(conn, INDEX_SCAN)
        _planned(conn, lookup, [["val:0"]], f"Index Scan using {index}")

        batch: list[tuple[str, str]] = []

        def look_up() -> None:
            asked = {v for _, v in batch}
            back = set()
            for k, v in conn.execute(lookup, [list(asked)]):
                back.add((k, v))
                if v not in asked:
                    c["other_row_by_value"].add(k, show)
            for k, v in batch:
                if (k, v) not in back:
                    c["not_found_by_value"].add(k, show)
            batch.clear()

        entries_it, rows_it = iter(entries), iter(rows)
        entry, row = next(entries_it, None), next(rows_it, None)
        while entry is not None or row is not None:
            if row is None or (entry is not None and _key_order(entry[0]) < _key_order(row[0])):
                c["entries"].add("", 0)
                c["orphan_entries"].add("", 0)
                if len(orphans) < show:
                    orphans.append(entry[0])
                entry = next(entries_it, None)
                continue
            v, k = row
            c["rows"].add("", 0)
            if entry is None or _key_order(v) < _key_order(entry[0]):
                c["missing_from_index"].add(k, show)
            else:
                c["entries"].add("", 0)
                entry = next(entries_it, None)
            if k.startswith(prefix + ":") and v != f"val:{k[len(prefix) + 1:]}":
                c["wrong_value"].add(k, show)
            if v is not None:
                batch.append((k, v))
                if len(batch) >= chunk:
                    look_up()
            row = next(rows_it, None)
        if batch:
            look_up()
        entries.close()
        rows.close()
        # Which row each orphan entry leads to, through the index.
        for v in orphans:
            reached = [k for (k,) in conn.execute(sql.SQL("SELECT k FROM {} WHERE v = %s").format(table), [v])]
            c["orphan_entries"].examples.append(f"{', '.join(reached) or '(no row)'} (entry {v!r})")
    ok = not any(c[k].n for k in ("missing_from_index", "orphan_entries", "not_found_by_value", "other_row_by_value",
                                  "wrong_value"))
    return {"testid": folder.name, "scheme": "sql-secondary-index", "workload_keys": w, "ok": ok,
            **{k: {"count": v.n, "examples": v.examples} for k, v in c.items()}}


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    out = [f"verify {r['testid']}: sql-secondary-index {w['index']} on {w['table']}",
           f"  rows {r['rows']['count']} (table, sequential scan), entries {r['entries']['count']} (index-only scan)",
           f"  missing from the index {r['missing_from_index']['count']}, orphan entries "
           f"{r['orphan_entries']['count']}",
           f"  looked up by value through the index: not found {r['not_found_by_value']['count']}, another row's "
           f"value {r['other_row_by_value']['count']}; wrong value (not val:<n>) {r['wrong_value']['count']}"]
    out += example_lines(r, ("missing_from_index", "orphan_entries", "not_found_by_value", "other_row_by_value",
                             "wrong_value"), sep="; ")
    out.append("  OK: the index and the table agree" if r["ok"] else "  FAILED: the index and the table disagree")
    return out
