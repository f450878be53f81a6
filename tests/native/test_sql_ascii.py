"""A database created with SQL_ASCII (what initdb makes without a UTF-8
locale: the postgres image with no LANG): psycopg returns its text as
bytes unless the client asks for UTF-8, and `ybbench run` then failed
writing params.json's server version. Run, params.json and verify on such a
database, the encoding the server's own."""

from __future__ import annotations

import json
import uuid

from ..support.ybbench_cli import verify, ybbench_run


def test_a_run_and_its_verify_on_a_sql_ascii_database(binaries, postgres, tmp_path):
    name = f"ascii{uuid.uuid4().hex[:8]}"
    postgres.query(f"CREATE DATABASE {name} OWNER {postgres.user} ENCODING 'SQL_ASCII' TEMPLATE template0 "
                   "LC_COLLATE 'C' LC_CTYPE 'C'")
    assert postgres.query(f"SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = '{name}'") \
        == "SQL_ASCII"
    r = ybbench_run("sql-inserts", postgres, tmp_path, testid=name,
                    knobs={"DB_NAME": name, "VUS": 2, "DURATION": "2s"})
    assert r.code == 0, r.output
    server = json.loads((r.folder / "params.json").read_text())["versions"]["server"]
    assert isinstance(server, str) and server == postgres.query("SELECT version()")
    p, doc = verify(tmp_path, name, postgres)
    assert p.returncode == 0 and doc["ok"], p.stdout + p.stderr
