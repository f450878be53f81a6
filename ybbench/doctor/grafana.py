"""Grafana, when given: its health, the admin login (the password read
from its file), every provisioned datasource's plugin loaded and its
health, and every ybbench dashboard at its pinned uid. Nothing is written
to Grafana."""

from __future__ import annotations

import json

import yaml

from ybbench.core.catalog import REPO
from ybbench.doctor.check import WARN, Check, Unreachable, fail, get_json, ok, skipped
from ybbench.doctor.settings import Settings

DATASOURCES = REPO / "grafana" / "provisioning" / "datasources" / "datasources.yml"
DASHBOARDS = REPO / "grafana" / "dashboards"


def provisioned() -> list[dict]:
    return yaml.safe_load(DATASOURCES.read_text())["datasources"]


def pinned_datasources() -> dict[str, str]:
    return {d["uid"]: d["name"] for d in provisioned()}


def pinned_dashboards() -> dict[str, str]:
    return {b["uid"]: b["title"] for b in (json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json")))}


def plugins(url: str, auth: tuple[str, str]) -> list[Check]:
    """Each provisioned datasource's plugin loaded in this Grafana (its plugins API): the image carries
    them (core, or in data/plugins-bundled); the stack lets Grafana download none (GF_PLUGINS_PREINSTALL_*)."""
    out = []
    for pid in sorted({d["type"] for d in provisioned()}):
        name, expected = f"grafana plugin {pid}", "loaded (Grafana's plugins API)"
        try:
            got = get_json(url, f"/api/plugins/{pid}/settings", auth=auth)
        except Unreachable as e:
            out.append(fail(name, expected, str(e), "this Grafana has no such plugin and downloads none "
                            "(GF_PLUGINS_PREINSTALL_DISABLED): use the pinned image (compose/.env GRAFANA_IMAGE), "
                            "which carries it") if "HTTP 404" in str(e) else
                       fail(name, expected, str(e), "see Grafana's log"))
            continue
        if got.get("enabled") is False:
            out.append(fail(name, expected, "installed but disabled", "enable it in Grafana's plugin settings"))
        else:
            out.append(ok(name, expected, f"{got.get('name', pid)} {(got.get('info') or {}).get('version', '?')}"))
    return out


def checks(s: Settings) -> list[Check]:
    if not s.grafana:
        return [skipped("grafana health", "no --grafana given")]
    url = s.grafana
    try:
        health = get_json(url, "/api/health")
    except Unreachable as e:
        return [fail("grafana health", f"Grafana answers at {url}", str(e),
                     "start Grafana (compose: docker compose up -d grafana) or fix --grafana")]
    if health.get("database") != "ok":
        return [fail("grafana health", "database ok", json.dumps(health), "see Grafana's log")]
    out = [ok("grafana health", f"Grafana answers at {url}", f"version {health.get('version', '?')}, database ok")]
    auth = (s.grafana_user, s.grafana_password or "")
    try:
        boards = get_json(url, "/api/search", {"type": "dash-db"}, auth=auth)
    except Unreachable as e:
        hint = ("the password in --grafana-password-file is not the admin's (compose: the secrets volume's "
                "grafana_admin_password)") if "HTTP 401" in str(e) else "see Grafana's log"
        return out + [fail("grafana login", f"the {s.grafana_user!r} user logs in", str(e), hint)]
    out.append(ok("grafana login", f"the {s.grafana_user!r} user logs in", "logged in"))
    by_uid = {b.get("uid"): b for b in boards}
    for uid, title in pinned_dashboards().items():
        name = f"grafana dashboard {uid}"
        if uid in by_uid:
            out.append(ok(name, f"{title!r} at uid {uid}", by_uid[uid].get("url", "present")))
        else:
            out.append(fail(name, f"{title!r} at uid {uid}", "absent", "Grafana must provision grafana/dashboards "
                            "(grafana/provisioning/dashboards/dashboards.yml); see its log"))
    try:
        sources = {d.get("uid"): d for d in get_json(url, "/api/datasources", auth=auth)}
    except Unreachable as e:
        return out + [fail("grafana datasources", "the provisioned datasources listed", str(e), "see Grafana's log")]
    out += plugins(url, auth)
    for uid, ds_name in pinned_datasources().items():
        name = f"grafana datasource {uid}"
        expected = f"{ds_name} provisioned and healthy"
        if uid not in sources:
            out.append(fail(name, expected, "absent", "grafana/provisioning/datasources/datasources.yml"))
            continue
        try:
            got = get_json(url, f"/api/datasources/uid/{uid}/health", auth=auth)
        except Unreachable as e:
            if "HTTP 404" in str(e):
                out.append(Check(name, WARN, expected, f"provisioned ({sources[uid].get('url')}); this Grafana "
                                 "serves no health check", "open the datasource in Grafana and press Test"))
            else:
                out.append(fail(name, expected, str(e), f"Grafana reaches {ds_name} at {sources[uid].get('url')}: "
                                "fix that URL in the provisioning file"))
            continue
        if str(got.get("status", "")).upper() == "OK":
            out.append(ok(name, expected, got.get("message", "OK")))
        else:
            out.append(fail(name, expected, got.get("message", json.dumps(got)),
                            f"Grafana reaches {ds_name} at {sources[uid].get('url')}: fix that URL"))
    return out
