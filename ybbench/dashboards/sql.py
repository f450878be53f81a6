"""Grafana's PostgreSQL datasource in the dashboards: its reference through
the `history` datasource variable (compose provisions uid ybbench-history)
and a raw-SQL target. grafana-foundation-sdk has no builder for SQL
datasources' queries, so this is the smallest one: the fields Grafana's
PostgreSQL query editor saves in code mode."""

from __future__ import annotations

from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.models.dashboard import DataSourceRef

TYPE = "grafana-postgresql-datasource"  # the plugin id (Grafana 10.3 on; "postgres" before)
HISTORY = DataSourceRef(type_val=TYPE, uid="${history}")


class SqlQuery(cogvariants.Dataquery):
    def __init__(self, raw_sql: str, ref_id: str, fmt: str):
        self.raw_sql, self.ref_id, self.fmt = raw_sql, ref_id, fmt

    def to_json(self) -> dict[str, object]:
        return {"datasource": HISTORY.to_json(), "editorMode": "code", "format": self.fmt, "rawQuery": True,
                "rawSql": self.raw_sql, "refId": self.ref_id}


class Sql(cogbuilder.Builder[SqlQuery]):
    """fmt: "time_series" (a time column, a value column and a string column
    naming each series) or "table"."""

    def __init__(self, raw_sql: str, ref_id: str = "A", fmt: str = "table"):
        self._query = SqlQuery(raw_sql, ref_id, fmt)

    def build(self) -> SqlQuery:
        return self._query


def annotation_target(raw_sql: str) -> dict[str, object]:
    """An SQL annotation's target (columns time, text, tags), as Grafana
    saves it; the SDK's annotation target is the built-in datasource's."""
    return {"editorMode": "code", "format": "table", "rawQuery": True, "rawSql": raw_sql, "refId": "Anno"}
