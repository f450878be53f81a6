"""compose/ is for users; here it is loaded by the real Compose spec loader
(compose-go, native/composecheck) with its .env and every profile."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from .stack import BIN, REPO

COMPOSE = REPO / "compose"


def composecheck(folder) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "composecheck"), "-f", str(folder / "docker-compose.yml")],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def project(binaries):
    p = composecheck(COMPOSE)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def compose_copy(tmp_path):
    """A copy of compose/ to break; its relative paths to ../ need not resolve."""
    dst = tmp_path / "compose"
    shutil.copytree(COMPOSE, dst)
    return dst


def test_yugabytedb_cluster_of_three_masters_and_three_tservers(project):
    s = project["services"]
    masters = sorted(n for n in s if n.startswith("yb-master-"))
    tservers = sorted(n for n in s if n.startswith("yb-tserver-"))
    assert masters == ["yb-master-1", "yb-master-2", "yb-master-3"]
    assert tservers == ["yb-tserver-1", "yb-tserver-2", "yb-tserver-3"]
    for t in tservers:
        assert s[t]["healthcheck"]
        assert s[t]["depends_on"] == {m: "service_healthy" for m in masters}
    for m in masters:
        assert s[m]["healthcheck"]
    ports = {p["target"] for p in s["yb-tserver-1"]["ports"]}
    assert {5433, 9000, 12000, 13000} <= ports
    assert {p["target"] for p in s["yb-master-1"]["ports"]} == {7000}


def test_every_image_is_pinned_from_the_env_file(project):
    env = (COMPOSE / ".env").read_text()
    for name, svc in project["services"].items():
        image = svc["image"]
        assert re.match(r"^[\w./-]+:[\w.-]+$", image), f"{name}: {image} has no tag"
        assert not image.endswith(":latest"), f"{name}: {image}"
        if not svc["build"]:
            assert image in env, f"{name}: {image} is not pinned in compose/.env"
    raw = (COMPOSE / "docker-compose.yml").read_text()
    # Pulled images come only from .env; ybbench/k6 is the name of our own build.
    assert not re.search(r"^\s*image:\s*(?!ybbench/)[^$\s]", raw, re.M), "an image is written into the compose file"


def test_profiles_and_the_k6_build(project):
    s = project["services"]
    assert project["profiles"] == ["bench", "pg"]
    assert s["k6"]["profiles"] == ["bench"] and s["k6"]["build"]
    args = s["k6"]["build_args"]
    assert args["K6_VERSION"].startswith("v2.")  # current xk6-sql needs k6 v2
    assert re.match(r"^v1\.[1-9]", args["XK6_SQL_VERSION"])
    assert args["XK6_SQL_DRIVER_POSTGRES_VERSION"].startswith("v0.2")
    assert s["k6"]["environment"]["K6_PROMETHEUS_RW_SERVER_URL"] == "http://prometheus:9090/api/v1/write"
    assert all(s["k6"]["depends_on"][t] == "service_healthy" for t in ("yb-tserver-1", "yb-tserver-2", "yb-tserver-3"))
    assert s["postgres"]["profiles"] == ["pg"]
    dockerfile = (COMPOSE / "k6" / "Dockerfile").read_text()
    assert "github.com/grafana/xk6-sql@" in dockerfile and "github.com/grafana/xk6-sql-driver-postgres@" in dockerfile


def test_no_default_passwords(project):
    s = project["services"]
    grafana = s["grafana"]["environment"]
    assert "GF_SECURITY_ADMIN_PASSWORD" not in grafana
    assert grafana["GF_SECURITY_ADMIN_PASSWORD__FILE"].startswith("/run/secrets/")
    assert s["grafana"]["depends_on"]["secrets"] == "service_completed_successfully"
    assert "POSTGRES_PASSWORD" not in s["postgres"]["environment"]
    assert not re.search(r"(?i)password\s*[:=]\s*\w", (COMPOSE / ".env").read_text())


def test_loki_and_prometheus_are_healthchecked(project):
    s = project["services"]
    assert s["loki"]["healthcheck"] and s["prometheus"]["healthcheck"] and s["grafana"]["healthcheck"]
    raw = (COMPOSE / "docker-compose.yml").read_text()
    assert '"/usr/bin/loki", "-health"' in raw


def test_an_unknown_key_fails(compose_copy):
    f = compose_copy / "docker-compose.yml"
    f.write_text(f.read_text().replace("  prometheus:\n    image:", "  prometheus:\n    imagez: x\n    image:", 1))
    p = composecheck(compose_copy)
    assert p.returncode != 0
    assert "imagez" in p.stderr


def test_a_missing_variable_fails(compose_copy):
    env = compose_copy / ".env"
    env.write_text(re.sub(r"^LOKI_IMAGE=.*$", "", env.read_text(), flags=re.M))
    p = composecheck(compose_copy)
    assert p.returncode != 0
    assert "LOKI_IMAGE" in p.stderr


def test_a_port_on_every_interface_fails(compose_copy):
    f = compose_copy / "docker-compose.yml"
    f.write_text(f.read_text().replace('"127.0.0.1:5433:5433"', '"5433:5433"', 1))
    p = composecheck(compose_copy)
    assert p.returncode != 0
    assert "yb-tserver-1" in p.stderr and "127.0.0.1" in p.stderr


def test_compose_targets_are_what_ybbench_targets_writes(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "ybbench", "targets", "--cluster", "ybbench",
         "--masters", "yb-master-1,yb-master-2,yb-master-3", "--tservers", "yb-tserver-1,yb-tserver-2,yb-tserver-3",
         "--node-exporters", "node-exporter", "--postgres-exporters", "postgres-exporter",
         "--prometheus", "localhost:9090", "--out", str(tmp_path)],
        check=True, cwd=REPO, capture_output=True,
    )
    committed = REPO / "prometheus" / "targets" / "compose"
    for f in tmp_path.iterdir():
        assert json.loads(f.read_text()) == json.loads((committed / f.name).read_text()), f.name


def test_native_binaries_match_the_compose_versions():
    env = dict(l.split("=", 1) for l in (COMPOSE / ".env").read_text().splitlines() if "=" in l and not l.startswith("#"))
    prom_tag = env["PROMETHEUS_IMAGE"].split(":")[1]  # v3.13.5
    major, minor, patch = prom_tag.lstrip("v").split(".")
    assert f"github.com/prometheus/prometheus v0.{major}{int(minor):02d}.{patch}" in \
        (REPO / "native" / "prometheus" / "go.mod").read_text()
    node_tag = env["NODE_EXPORTER_IMAGE"].split(":")[1]
    assert f"github.com/prometheus/node_exporter {node_tag}" in (REPO / "native" / "node_exporter" / "go.mod").read_text()
    assert "go.k6.io/k6 v1.8.1" in (REPO / "native" / "k6" / "go.mod").read_text()


def test_prometheus_config_is_valid(binaries):
    p = subprocess.run([str(binaries / "promtool"), "check", "config", "--syntax-only",
                        str(REPO / "prometheus" / "prometheus.yml")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
