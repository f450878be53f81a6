#!/usr/bin/env python3
"""A stand-in for grafana/grafana in the compose tests. It is NOT Grafana.

The real image cannot be pulled where the tests run, so this program proves
what the compose file and the repository's grafana/ folder decide: the env
(GF_*__FILE secrets), the mounts (provisioning, dashboards, a writable data
volume) and provisioning files that real Grafana would load. It fails at
start, naming file and problem, on what Grafana rejects (and on a few things
Grafana only logs but that leave panels broken), then serves /api/health,
/api/search, /api/datasources, /api/plugins/<id>/settings and
/api/datasources/uid/<uid>/health (which
queries the datasource's URL, as Grafana's does; PostgreSQL's with psql).
"""

import base64
import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

# Grafana's built-in datasources and server-side expressions need no provisioning.
BUILTIN_DS = {"grafana", "-- Grafana --", "-- Mixed --", "-- Dashboard --", "__expr__"}
# Grafana provisioning interpolates $VAR and ${VAR} in values; $$ is a literal $.
ENV_REF = re.compile(r"\$\{(\w+)\}|\$(\w+)")
# ... after its expanders: $__env{NAME}, $__file{PATH} (setting.ExpandVar's regex).
EXPANDER = re.compile(r"\$(|__\w+)\{([^}]+)\}")
# Dashboard template variable references: $ds, ${ds}, ${ds:fmt}, [[ds]].
VAR_REF = re.compile(r"^(?:\$(\w+)|\$\{(\w+)(?::[\w-]+)?\}|\[\[(\w+)(?::[\w-]+)?\]\])$")
problems: list[str] = []


def log(msg):
    """One line in Grafana's console format, logfmt with its keys in its
    order (logger=settings t=2025-06-17T12:40:19.580946399Z level=info
    msg="Starting Grafana" ...): the log shipper takes the level from it.
    Our own "error: " and "warning: " prefixes set error and warn."""
    level = "error" if msg.startswith("error: ") else "warn" if msg.startswith("warning: ") else "info"
    t = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    print(f"logger=grafana-standin t={t} level={level} msg={json.dumps(msg, ensure_ascii=False)}",
          file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def as_bool(v):
    return v is True or str(v).lower() == "true"  # Grafana's BoolValue accepts "true" too


def read_file_vars():
    """Grafana sets GF_X from the file GF_X__FILE names (trailing newline dropped)."""
    for name, path in sorted(os.environ.items()):
        if name.startswith("GF_") and name.endswith("__FILE"):
            try:
                value = Path(path).read_text().rstrip("\r\n")
            except OSError as e:
                die(f"{name}: cannot read {path}: {e.strerror}")
            if not value:
                die(f"{name}: {path} is empty")
            os.environ[name[:-len("__FILE")]] = value


def expand_var(part, where):
    """Grafana's setting.ExpandVar on one part of a value: $__env{NAME},
    ${NAME} and $__file{PATH} (the file's text, whitespace trimmed; a file
    it cannot read fails the provisioning, as in Grafana); other $__x{...}
    are left as they are (pkg/setting/expanders.go, read upstream 2026-11)."""
    def sub(m):
        kind, arg = m[1], m[2]
        if kind in ("", "__env"):
            if arg not in os.environ:
                log(f"warning: {where}: ${{{arg}}} is not set, Grafana would use an empty string")
            return os.environ.get(arg, "")
        if kind == "__file":
            try:
                return Path(arg).read_text().strip()
            except OSError as e:
                problems.append(f"{where}: $__file{{{arg}}}: cannot read it: {e.strerror}")
                return ""
        return m[0]
    return EXPANDER.sub(sub, part)


def expand(v, where):
    """Interpolation of values only (never keys), as Grafana provisioning
    does (pkg/services/provisioning/values): each part between $$ (a
    literal $) through the expanders, then $VAR and ${VAR}."""
    if isinstance(v, dict):
        return {k: expand(x, where) for k, x in v.items()}
    if isinstance(v, list):
        return [expand(x, where) for x in v]
    if not isinstance(v, str):
        return v

    def sub(m):
        name = m[1] or m[2]
        if name not in os.environ:
            log(f"warning: {where}: ${name} is not set, Grafana would use an empty string")
        return os.environ.get(name, "")
    return "$".join(ENV_REF.sub(sub, expand_var(part, where)) for part in v.split("$$"))


def load_yaml_dir(d):
    """Every *.yaml/*.yml in d, parsed; Grafana skips empty (all-comment) files."""
    if not d.is_dir():
        die(f"{d} is not a directory (provisioning mount missing?)")
    for path in sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()):
        try:
            doc = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            problems.append(f"{path}: cannot parse: {e}")
            continue
        if doc is None:
            log(f"skipped empty provisioning file {path}")
            continue
        if not isinstance(doc, dict) or doc.get("apiVersion") != 1:
            got = doc.get("apiVersion") if isinstance(doc, dict) else type(doc).__name__
            problems.append(f"{path}: apiVersion must be 1, got {got!r}")
            continue
        yield path, expand(doc, path)


def load_datasources(root):
    sources, defaults, seen = [], set(), {}
    for path, doc in load_yaml_dir(root / "datasources"):
        n = 0
        for i, ds in enumerate(doc.get("datasources") or []):
            where = f"{path}: datasources[{i}]"
            if not isinstance(ds, dict):
                problems.append(f"{where} is not a mapping")
                continue
            missing = [k for k in ("name", "type") if not ds.get(k)]
            if missing:
                problems.append(f"{where} ({ds.get('name', 'unnamed')}) has no {' and no '.join(missing)}")
                continue
            org, name = int(ds.get("orgId") or 1), str(ds["name"])
            # Without a uid Grafana derives one from the name (safeUIDFromName).
            uid = str(ds.get("uid") or "P" + hashlib.sha256(name.encode()).hexdigest()[:16].upper())
            for key in ((org, "uid", uid), (org, "name", name)):
                if key in seen:
                    problems.append(f"{where}: datasource {key[1]} {key[2]!r} is also used in {seen[key]}")
                seen[key] = where
            default = as_bool(ds.get("isDefault"))
            if default and org in defaults:
                problems.append(f"{where} ({name}): only one datasource per organization can be marked as default")
            defaults |= {org} if default else set()
            sources.append({"name": name, "uid": uid, "type": str(ds["type"]), "url": str(ds.get("url", "")),
                            "isDefault": default, "orgId": org, "jsonData": ds.get("jsonData") or {},
                            "user": str(ds.get("user") or ""), "database": str(ds.get("database") or ""),
                            "secureJsonData": ds.get("secureJsonData") or {}})
            n += 1
        for i, d in enumerate(doc.get("deleteDatasources") or []):
            if not isinstance(d, dict) or not d.get("name"):
                problems.append(f"{path}: deleteDatasources[{i}] has no name")
        log(f"loaded datasource provisioning file {path}: {n} datasource(s)")
    return sources


def check_refs(board, where, sources):
    """Datasource references Grafana could not resolve leave panels broken."""
    by_uid, by_name, types = ({s[k] for s in sources} for k in ("uid", "name", "type"))
    variables = {v.get("name"): v for v in (board.get("templating") or {}).get("list") or []}
    for name, v in variables.items():
        if v.get("type") == "datasource" and v.get("query") not in types:
            problems.append(f"{where}: datasource variable ${name} lists type {v.get('query')!r}, "
                            f"but no datasource of that type is provisioned")

    def walk(node, at):
        if isinstance(node, list):
            for i, x in enumerate(node):
                walk(x, f"{at}[{i}]")
        elif isinstance(node, dict):
            for k, x in node.items():
                if k == "datasource" and x is not None:
                    check(x, f"{at}.{k}" if at else k)
                walk(x, f"{at}.{k}" if at else k)

    def check(ref, at):
        uid, typ = (ref.get("uid"), ref.get("type")) if isinstance(ref, dict) else (ref, None)
        if uid in (None, ""):  # no uid: Grafana uses the default datasource of that type
            if typ not in (None, "datasource", "grafana", "dashboard") and typ not in types:
                problems.append(f"{where}: {at} wants a datasource of type {typ!r}; none is provisioned")
            return
        m = VAR_REF.match(str(uid))
        if m:
            var = next(g for g in m.groups() if g)
            if var not in variables:
                problems.append(f"{where}: {at} uses ${var}, which is not a template variable")
        elif uid in BUILTIN_DS or uid in by_uid or (not isinstance(ref, dict) and uid in by_name):
            return
        else:
            problems.append(f"{where}: {at} names datasource uid {uid!r}, which is not provisioned")

    for key in ("panels", "templating", "annotations"):
        walk(board.get(key), key)


def load_dashboards(root, sources):
    boards, uids, titles = [], {}, {}
    for path, doc in load_yaml_dir(root / "dashboards"):
        for i, p in enumerate(doc.get("providers") or []):
            where = f"{path}: providers[{i}]"
            name, opts = p.get("name"), p.get("options") or {}
            if not name:
                problems.append(f"{where} has no name")
            if (p.get("type") or "file") != "file":
                problems.append(f"{where} ({name}): type {p['type']!r} is not 'file'")
                continue
            by_files = opts.get("foldersFromFilesStructure") is True
            if by_files and p.get("folder") and p.get("folderUid"):
                problems.append(f"{where} ({name}): 'folder' and 'folderUID' should be empty "
                                f"using 'foldersFromFilesStructure' option")
            base = opts.get("path")
            if not isinstance(base, str) or not Path(base).is_dir():
                problems.append(f"{where} ({name}): options.path {base!r} is not a directory")
                continue
            log(f"loaded dashboard provisioning file {path}: provider {name!r} reads {base}")
            for f in sorted(Path(base).rglob("*.json")):
                folder = f.parent.name if by_files and f.parent != Path(base) else str(p.get("folder") or "")
                board = load_board(f, sources)
                if board is None:
                    continue
                uid, title, org = board["uid"], board["title"], int(p.get("orgId") or 1)
                if uid in uids:
                    problems.append(f"{f}: dashboard uid {uid!r} is also used by {uids[uid]}")
                if (org, folder, title) in titles:
                    problems.append(f"{f}: dashboard title {title!r} is also used in folder {folder!r} "
                                    f"by {titles[org, folder, title]}")
                uids[uid], titles[org, folder, title] = f, f
                boards.append({"uid": uid, "title": title, "folderTitle": folder, "type": "dash-db"})
                log(f"loaded dashboard {uid} {title!r} from {f} into folder {folder or 'General'!r}")
    return boards


def load_board(f, sources):
    try:
        board = json.loads(f.read_text())
    except (OSError, ValueError) as e:
        problems.append(f"{f}: not valid JSON: {e}")
        return None
    if not isinstance(board, dict):
        problems.append(f"{f}: dashboard JSON is not an object")
        return None
    # Grafana would invent a random uid; ours must be fixed so links and tests can name them.
    missing = [k for k in ("uid", "title") if not isinstance(board.get(k), str) or not board[k]]
    if missing:
        problems.append(f"{f}: dashboard has no {' and no '.join(missing)}")
        return None
    check_refs(board, f"{f} (dashboard {board['title']!r})", sources)
    return board


# A datasource's health, as Grafana checks it: its plugin's CheckHealth runs
# one query against the datasource's URL; Grafana answers 200 with
# {"status": "OK", "message": ...}, or 400 with {"status": "ERROR", ...}
# (grafana/grafana pkg/api/datasources.go checkDatasourceHealth). The
# queries and messages are the plugins' own: Prometheus, the instant query
# 1+1 at t=4 s with the datasource's httpMethod (pkg/promlib/healthcheck.go);
# Loki, the instant query vector(1)+vector(1) at t=4 s, whose value must be
# 2 (pkg/tsdb/loki/healthcheck.go). Read upstream 2026-11.
HEALTH_PATH = re.compile(r"^/api/datasources/uid/([^/]+)/health$")
HEALTH_QUERY = {"prometheus": ("/api/v1/query", "1+1", 4, "Successfully queried the Prometheus API.",
                               "There was an error returned querying the Prometheus API."),
                "loki": ("/loki/api/v1/query", "vector(1)+vector(1)", 4 * 10**9, "Successfully queried the Loki API.",
                         "There was an error returned querying the Loki API.")}


# PostgreSQL (grafana-postgresql-datasource, "postgres" its old id): the
# plugin's CheckHealth pings the database, a connection with the
# datasource's host:port, user, password (secureJsonData), database
# (jsonData.database) and sslmode, and one statement; "Database Connection
# OK", or the driver's error (pkg/tsdb/grafana-postgresql-datasource
# handler_checkhealth.go). Here psql connects and runs SELECT 1, the
# password in its environment only. Read upstream 2026-11.
POSTGRES = ("grafana-postgresql-datasource", "postgres")


def postgres_health(ds):
    host, _, port = ds["url"].rpartition(":") if ":" in ds["url"] else (ds["url"], "", "5432")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PGPASSWORD": ds["secureJsonData"].get("password", ""),
           "PGSSLMODE": ds["jsonData"].get("sslmode", "require"), "PGCONNECT_TIMEOUT": "10"}
    try:
        p = subprocess.run(["psql", "-X", "-At", "-h", host, "-p", port or "5432", "-U", ds["user"], "-d",
                            ds["jsonData"].get("database") or ds["database"], "-c", "SELECT 1"],
                           env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 400, {"status": "ERROR", "message": f"Network error: Failed to connect to the server. Error message: {e}"}
    if p.returncode != 0 or p.stdout.strip() != "1":
        err = " ".join(p.stderr.replace("psql: error: ", "").split())
        return 400, {"status": "ERROR", "message": f"failed to connect to `host={host} user={ds['user']} database="
                                                   f"{ds['jsonData'].get('database') or ds['database']}`: {err}"}
    return 200, {"status": "OK", "message": "Database Connection OK"}


def datasource_health(ds):
    """(HTTP code, body) of GET /api/datasources/uid/<uid>/health."""
    if ds["type"] in POSTGRES:
        return postgres_health(ds)
    if ds["type"] not in HEALTH_QUERY:
        return 404, {"message": "Plugin health check not implemented"}  # a plugin without CheckHealth
    path, query, at, good, bad = HEALTH_QUERY[ds["type"]]
    form = urllib.parse.urlencode({"query": query, "time": at})
    url = ds["url"].rstrip("/") + path
    post = ds["type"] == "prometheus" and str(ds["jsonData"].get("httpMethod", "POST")).upper() == "POST"
    req = urllib.request.Request(url, data=form.encode() if post else None) if post else \
        urllib.request.Request(f"{url}?{form}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            body = json.load(r)
        result = body["data"]["result"]
        if ds["type"] == "loki" and float(result[0]["value"][1] if isinstance(result, list) else result[1]) != 2:
            raise ValueError("invalid response")
    except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError, TypeError) as e:
        # Go's net/http error: Post "<url>": <cause>.
        err = f"{'Post' if post else 'Get'} \"{url}\": {getattr(e, 'reason', e)}" \
            if isinstance(e, urllib.error.URLError) else str(e)
        # The plugins' own formats: Prometheus "<err> - <message>", Loki "<message>: <err>".
        return 400, {"status": "ERROR", "message": f"{err} - {bad}" if ds["type"] == "prometheus" else f"{bad}: {err}"}
    return 200, {"status": "OK", "message": good}


# The plugins a Grafana 13 image has without downloading any: its core
# datasources, the three the stack provisions among them (pkg/tsdb:
# prometheus, loki, grafana-postgresql-datasource). GET
# /api/plugins/<id>/settings answers 200 with the plugin's settings, or 404
# {"message": "Plugin not found, no installed plugin with that id"}
# (pkg/api/plugins.go GetPluginSettingByID). Read upstream 2026-11.
PLUGIN_PATH = re.compile(r"^/api/plugins/([^/]+)/settings$")
CORE_PLUGINS = {"prometheus": "Prometheus", "loki": "Loki", "grafana-postgresql-datasource": "PostgreSQL"}


def plugin_settings(pid):
    if pid not in CORE_PLUGINS:
        return 404, {"message": "Plugin not found, no installed plugin with that id"}
    return 200, {"name": CORE_PLUGINS[pid], "type": "datasource", "id": pid, "enabled": True, "pinned": False,
                 "info": {"version": "standin"}, "signature": "internal", "state": "", "hasUpdate": False}


class Api(BaseHTTPRequestHandler):
    server_version = "grafana-standin"

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        state = self.server.state
        if path == "/api/health":
            self.send(200, {"commit": "standin", "database": "ok", "version": "standin"})
        elif path not in ("/api/search", "/api/datasources") and not HEALTH_PATH.match(path) \
                and not PLUGIN_PATH.match(path):
            self.send(404, {"message": "Not found"})
        elif not self.authorized():
            self.send(401, {"message": "Unauthorized"})
        elif PLUGIN_PATH.match(path):
            self.send(*plugin_settings(PLUGIN_PATH.match(path)[1]))
        elif path == "/api/search":  # like Grafana, no folderTitle for the General folder
            self.send(200, [{k: v for k, v in b.items() if v or k != "folderTitle"} for b in state["boards"]])
        elif path != "/api/datasources":
            uid = HEALTH_PATH.match(path)[1]
            ds = next((d for d in state["sources"] if d["uid"] == uid), None)
            # Grafana: an unknown uid is "Unable to load datasource metadata", HTTP 500 (datasources.go).
            self.send(*(datasource_health(ds) if ds else (500, {"message": "Unable to load datasource metadata"})))
        else:
            self.send(200, [{k: s[k] for k in ("name", "uid", "type", "url", "isDefault")} for s in state["sources"]])

    def authorized(self):
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except ValueError:  # bad base64 or not UTF-8
            return False
        state = self.server.state
        user_ok = hmac.compare_digest(user.encode(), state["user"].encode())
        return hmac.compare_digest(password.encode(), state["password"].encode()) and user_ok

    def send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if code == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="grafana-standin"')
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass  # the compose healthcheck polls every 5s; request lines would drown the log


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # PID 1 ignores SIGTERM without a handler
    log("starting: a test stand-in for grafana/grafana, not Grafana")
    read_file_vars()
    user = os.environ.get("GF_SECURITY_ADMIN_USER", "admin")
    password = os.environ.get("GF_SECURITY_ADMIN_PASSWORD")
    if password is None:
        log("warning: no GF_SECURITY_ADMIN_PASSWORD(__FILE): Grafana's default password 'admin' applies")
        password = "admin"
    data = Path(os.environ.get("GF_PATHS_DATA", "/var/lib/grafana"))
    try:  # Grafana keeps its SQLite database here, so it must be writable by uid 472
        (data / "grafana-standin.db").write_text("grafana stand-in marker, not a database\n")
    except OSError as e:
        die(f"data path {data} is not writable by uid {os.getuid()}: {e.strerror}")
    root = Path(os.environ.get("GF_PATHS_PROVISIONING", "/etc/grafana/provisioning"))
    sources = load_datasources(root)
    boards = load_dashboards(root, sources)
    if problems:
        for p in problems:
            log(f"error: {p}")
        die(f"{len(problems)} provisioning problem(s), Grafana would not serve these as intended")
    addr, port = os.environ.get("GF_SERVER_HTTP_ADDR") or "0.0.0.0", int(os.environ.get("GF_SERVER_HTTP_PORT", "3000"))
    server = ThreadingHTTPServer((addr, port), Api)
    server.state = {"user": user, "password": password, "sources": sources, "boards": boards}
    log(f"serving {len(sources)} datasource(s) and {len(boards)} dashboard(s) on http://{addr}:{port} as user {user!r}")
    server.serve_forever()


if __name__ == "__main__":
    main()
