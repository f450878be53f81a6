"""compose/ is for users; here it is loaded by the real `docker compose
config` (Compose v2, built by native/build.sh) with its .env and every
profile. test_compose_stack.py runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

import pytest
import yaml

from ..support.compose_stack import EVERY_PROFILE
from ..support.stack import REPO, free_port, wait_until

COMPOSE = REPO / "compose"


def compose_config(folder) -> subprocess.CompletedProcess:
    """`docker compose config` of the bench and pg profiles, as `up` would load it: the three-node cluster
    (expand's fourth tserver left out)."""
    return subprocess.run(["docker", "compose", "-f", str(folder / "docker-compose.yml"), "--profile", "bench",
                           "--profile", "pg", "config", "--format", "json"], capture_output=True, text=True)


def root_config(cwd, *args: str, env: dict | None = None) -> dict:
    """`docker compose config` as a user runs it at the repository root:
    no -f (Compose finds compose.yaml), every profile."""
    p = subprocess.run(["docker", "compose", *args, *EVERY_PROFILE, "config", "--format", "json"], cwd=cwd,
                       capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr
    assert "variable is not set" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def same_project(a: dict, b: dict) -> dict:
    """What makes the project: its name, services, networks, volumes (the
    x- anchors of compose/docker-compose.yml are not part of it)."""
    return {k: v for k, v in a.items() if not k.startswith("x-")} == {k: v for k, v in b.items()
                                                                     if not k.startswith("x-")}


def ports_off_loopback(project: dict) -> list[str]:
    return sorted(f"{name} publishes {p.get('host_ip', '*')}:{p['published']}->{p['target']}"
                  for name, svc in project["services"].items() for p in svc.get("ports", [])
                  if p.get("published") and p.get("host_ip") != "127.0.0.1")


def load(folder) -> dict:
    p = compose_config(folder)
    assert p.returncode == 0, p.stderr
    assert "variable is not set" not in p.stderr, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def project(compose_binaries):
    return load(COMPOSE)


@pytest.fixture
def compose_copy(tmp_path):
    """A copy of compose/ to break; its relative paths to ../ need not resolve."""
    dst = tmp_path / "compose"
    shutil.copytree(COMPOSE, dst)
    return dst


def depends(svc: dict) -> dict[str, str]:
    return {name: d["condition"] for name, d in svc.get("depends_on", {}).items()}


def test_yugabytedb_cluster_of_three_masters_and_three_tservers(project):
    s = project["services"]
    masters = sorted(n for n in s if n.startswith("yb-master-"))
    tservers = sorted(n for n in s if n.startswith("yb-tserver-"))
    assert masters == ["yb-master-1", "yb-master-2", "yb-master-3"]
    assert tservers == ["yb-tserver-1", "yb-tserver-2", "yb-tserver-3"]
    for t in tservers:
        assert s[t]["healthcheck"]
        assert depends(s[t]) == {m: "service_healthy" for m in masters}
    for m in masters:
        assert s[m]["healthcheck"]
    ports = {p["target"] for p in s["yb-tserver-1"]["ports"]}
    assert {5433, 9000, 12000, 13000} <= ports
    assert {p["target"] for p in s["yb-master-1"]["ports"]} == {7000}


def test_yugabytedb_servers_are_sized_quiet_and_logged(project):
    """Each server: a memory limit below its container's, no call-home, every
    log line on stderr (--logtostderr: with --alsologtostderr alone, YSQL's
    own log goes to files that Promtail never reads), both of the image's
    volumes named and used as data dirs."""
    for name, svc in project["services"].items():
        if not name.startswith("yb-"):
            continue
        flags = dict(f.lstrip("-").partition("=")[::2] for f in svc["command"][1:])
        assert flags["callhome_enabled"] == "false", name
        assert "logtostderr" in flags and flags["logtostderr"] in ("", "true"), name
        assert "alsologtostderr" not in flags, name
        assert flags["fs_data_dirs"] == "/mnt/disk0,/mnt/disk1", name
        assert {v["target"]: v["source"] for v in svc["volumes"]} == {
            "/mnt/disk0": name, "/mnt/disk1": f"{name}-disk1"}, name
        assert all(v["type"] == "volume" for v in svc["volumes"]), name
        hard = int(flags["memory_limit_hard_bytes"])
        assert 0 < hard < int(svc["mem_limit"]), name


def test_tserver_memory_holds_its_ysql_backends_at_the_largest_vus(project):
    """YSQL backends count against a tserver's container but not its hard
    limit: the container's limit leaves room for every backend that
    --ysql_max_connections admits, and that cap admits the largest run the
    README and docs/ suggest (400 VUs, one connection each, over the three tservers)."""
    env = (COMPOSE / ".env").read_text()
    backend, postmaster = 15 * 2**20, 256 * 2**20  # compose/.env's arithmetic
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    largest = max(int(v) for p in pages for v in re.findall(r"(?:VUS=|--vus )(\d+)", p.read_text()))
    assert largest == 400, largest  # if the README or docs/ suggest more, resize compose/.env
    for name, svc in project["services"].items():
        if not name.startswith("yb-tserver-"):
            continue
        flags = dict(f.lstrip("-").partition("=")[::2] for f in svc["command"][1:])
        connections = int(flags["ysql_max_connections"])
        assert connections >= -(-largest // 3) + 1, (name, connections)  # + the healthcheck's ysqlsh
        room = int(svc["mem_limit"]) - int(flags["memory_limit_hard_bytes"])
        assert room >= connections * backend + postmaster, (name, room / 2**20)
    assert "connections" in env and "x 15 MiB" in env  # the arithmetic is written down next to the numbers
    total = sum(int(svc["mem_limit"]) for n, svc in project["services"].items()
                if n.startswith("yb-") and n != "yb-tserver-4")
    assert total <= 15 * 2**30, f"YugabyteDB may take {total / 2**30:.1f} GiB"


def test_yugabytedb_is_the_2025_2_lts_line(project):
    """2025.2 (stable, LTS): YSQL on PostgreSQL 15, as the stand-in and the
    native tests (2024.2's YSQL is PostgreSQL 11)."""
    tags = {svc["image"] for n, svc in project["services"].items() if n.startswith("yb-")}
    assert len(tags) == 1 and re.match(r"^yugabytedb/yugabyte:2025\.2\.\d+\.\d+-b\d+$", tags.pop())


def test_prometheus_takes_its_retention_from_this_config_file(compose_binaries, tmp_path):
    """The Prometheus the stack pins reads retention where prometheus.yml
    puts it: this file with only the value changed (15d is also the
    default) sets what Prometheus reports."""
    text = (REPO / "prometheus" / "prometheus.yml").read_text()
    assert text.count("      time: 15d\n") == 1
    (tmp_path / "prometheus.yml").write_text(text.replace("      time: 15d\n", "      time: 3d\n"))
    port = free_port()
    proc = subprocess.Popen([str(compose_binaries / "prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def retention():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status/runtimeinfo", timeout=5) as r:
                return json.load(r)["data"]["storageRetention"]

        assert wait_until(retention, "Prometheus to answer", timeout=60) == "3d"
    finally:
        proc.terminate()
        proc.wait(30)


def test_prometheus_retention_is_in_its_config_not_a_flag(project):
    """Prometheus deprecates --storage.tsdb.retention.* since 3.8.0, which
    added the config file's storage.tsdb.retention: that holds it, for compose and the
    native stack alike, on a Prometheus of 3.11 or newer (3.8 to 3.10 read the file's
    retention time in the wrong unit, 1e6 times longer: CHANGELOG 3.11.0, #18200)."""
    env, mod = (REPO / "compose" / ".env").read_text(), (REPO / "native" / "prometheus" / "go.mod").read_text()
    image = re.search(r"^PROMETHEUS_IMAGE=prom/prometheus:v(\d+)\.(\d+)\.", env, re.M)
    native = re.search(r"github\.com/prometheus/prometheus v0\.(\d)(\d\d)\.", mod)  # v0.316.0 is 3.16.0
    for found in (image, native):
        assert found and (int(found.group(1)), int(found.group(2))) >= (3, 11), found
    assert not [a for a in project["services"]["prometheus"]["command"] if "retention" in a]
    config = yaml.safe_load((REPO / "prometheus" / "prometheus.yml").read_text())
    assert config["storage"]["tsdb"]["retention"]["time"] == "15d"
    assert not re.search(r"storage\.tsdb\.retention", (REPO / "tests" / "support" / "stack.py").read_text())


def env_setting(name: str) -> str:
    """A setting of compose/.env, read as text (the value Compose would use)."""
    m = re.search(rf"^{name}=(.*)$", (COMPOSE / ".env").read_text(), re.M)
    assert m, f"{name} is not in compose/.env"
    return m.group(1).strip()


def test_every_service_keeps_a_bounded_log(compose_binaries):
    """Every service of every profile rotates its log (Docker's json-file
    keeps every line otherwise): LOG_MAX_FILE files of LOG_MAX_SIZE from
    .env, whose product stays at most 200 MiB a container. The stack test
    (test_compose_stack.py) shows the bound holding and Promtail keeping up."""
    project = root_config(REPO)
    size, files = env_setting("LOG_MAX_SIZE"), env_setting("LOG_MAX_FILE")
    units = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    assert re.fullmatch(r"\d+[kmg]", size) and re.fullmatch(r"\d+", files), (size, files)
    assert int(size[:-1]) * units[size[-1]] * int(files) <= 200 * 1024 ** 2, (size, files)
    unbounded = {name: svc.get("logging") for name, svc in project["services"].items()
                 if svc.get("logging") != {"driver": "json-file", "options": {"max-size": size, "max-file": files}}}
    assert not unbounded, unbounded
    # 4 tservers (yb-tserver-4 under `expand`), 3 masters and 12 others: none left out of the check.
    assert len(project["services"]) == 19, sorted(project["services"])


def test_every_image_is_pinned_from_the_env_file(project):
    env = (COMPOSE / ".env").read_text()
    for name, svc in project["services"].items():
        image = svc["image"]
        assert re.match(r"^[\w./-]+:[\w.-]+$", image), f"{name}: {image} has no tag"
        assert not image.endswith(":latest"), f"{name}: {image}"
        if "build" not in svc:
            assert image.split(":")[0] in env and image.split(":")[1] in env, f"{name}: {image} is not pinned in .env"
    raw = (COMPOSE / "docker-compose.yml").read_text()
    # Pulled images come only from .env; ybbench/k6 is the name of our own build.
    assert not re.search(r"^\s*image:\s*(?!ybbench/)[^$\s]", raw, re.M), "an image is written into the compose file"


def test_the_k6_build_and_its_services(project):
    s = project["services"]
    for name, profile in (("k6", "bench"), ("k6-pg", "pg")):
        k6 = s[name]
        assert k6["profiles"] == [profile] and k6["build"]["context"].endswith("compose/k6")
        # Built here, never pulled: the name is ours, and it carries every version.
        assert k6["pull_policy"] == "build"
        args = k6["build"]["args"]
        for version in (args["K6_VERSION"], args["XK6_SQL_VERSION"], args["XK6_SQL_DRIVER_POSTGRES_VERSION"]):
            assert version in k6["image"], (version, k6["image"])
        assert k6["environment"]["K6_NO_USAGE_REPORT"] == "true"
        assert k6["environment"]["K6_AUTO_EXTENSION_RESOLUTION"] == "false"
        assert k6["environment"]["K6_PROMETHEUS_RW_SERVER_URL"] == "http://prometheus:9090/api/v1/write"
    args = s["k6"]["build"]["args"]
    assert args["K6_VERSION"].startswith("v2.")  # current xk6-sql needs k6 v2
    assert re.match(r"^v1\.[1-9]", args["XK6_SQL_VERSION"])
    assert all(depends(s["k6"])[t] == "service_healthy" for t in ("yb-tserver-1", "yb-tserver-2", "yb-tserver-3"))
    # The pg baseline's k6 boots no YugabyteDB.
    assert depends(s["k6-pg"]) == {"postgres": "service_healthy", "prometheus": "service_healthy"}
    assert s["k6-pg"]["environment"]["YSQL_NODES"] == "postgres:5432"
    assert s["postgres"]["profiles"] == ["pg"]
    dockerfile = (COMPOSE / "k6" / "Dockerfile").read_text()
    assert "github.com/grafana/xk6-sql@" in dockerfile and "github.com/grafana/xk6-sql-driver-postgres@" in dockerfile


def test_no_default_passwords_and_nothing_phones_home(project):
    s = project["services"]
    grafana = s["grafana"]["environment"]
    assert "GF_SECURITY_ADMIN_PASSWORD" not in grafana
    assert grafana["GF_SECURITY_ADMIN_PASSWORD__FILE"].startswith("/run/secrets/")
    for off in ("GF_ANALYTICS_REPORTING_ENABLED", "GF_ANALYTICS_CHECK_FOR_UPDATES",
                "GF_ANALYTICS_CHECK_FOR_PLUGIN_UPDATES", "GF_NEWS_NEWS_FEED_ENABLED"):
        assert grafana[off] == "false", off
    assert grafana["GF_PLUGINS_PREINSTALL_DISABLED"] == "true" and grafana["GF_PLUGINS_PREINSTALL_AUTO_UPDATE"] == "false"
    assert depends(s["grafana"])["secrets"] == "service_completed_successfully"
    assert "POSTGRES_PASSWORD" not in s["postgres"]["environment"]
    assert "POSTGRES_PASSWORD" not in s["history-db"]["environment"]
    assert not re.search(r"(?i)password\s*[:=]\s*\w", (COMPOSE / ".env").read_text())


def test_healthchecks_that_mean_ready(project):
    s = project["services"]
    assert s["loki"]["healthcheck"]["test"] == ["CMD", "/usr/bin/loki", "-health"]
    assert s["prometheus"]["healthcheck"] and s["grafana"]["healthcheck"]
    # Over TCP: the entrypoint's init server listens on the socket only.
    assert "-h" in s["postgres"]["healthcheck"]["test"]


def test_node_exporter_mount_works_where_root_is_private(project):
    ne = project["services"]["node-exporter"]
    host = [v for v in ne["volumes"] if v["target"] == "/host"]
    assert host and host[0]["read_only"] and not host[0].get("bind", {}).get("propagation"), host
    assert "--path.udev.data=/host/run/udev/data" in ne["command"]


def test_promtail_ships_the_logs_of_its_own_project(project):
    """Promtail follows the project it runs in, whatever `-p` named it."""
    promtail = project["services"]["promtail"]
    assert promtail["environment"]["COMPOSE_PROJECT"] == project["name"] == "ybbench"
    assert "-config.expand-env=true" in promtail["command"]
    assert "com.docker.compose.project=${COMPOSE_PROJECT:-ybbench}" in (COMPOSE / "promtail" / "promtail.yml").read_text()


def test_an_unknown_key_fails(compose_copy):
    f = compose_copy / "docker-compose.yml"
    f.write_text(f.read_text().replace("  prometheus:\n    image:", "  prometheus:\n    imagez: x\n    image:", 1))
    p = compose_config(compose_copy)
    assert p.returncode != 0
    assert "imagez" in p.stderr


def test_a_missing_variable_fails(compose_copy):
    env = compose_copy / ".env"
    env.write_text(re.sub(r"^LOKI_IMAGE=.*$", "", env.read_text(), flags=re.M))
    p = compose_config(compose_copy)
    assert p.returncode != 0
    assert "LOKI_IMAGE" in p.stderr


def test_a_port_on_every_interface_is_caught(compose_copy):
    f = compose_copy / "docker-compose.yml"
    f.write_text(f.read_text().replace('"127.0.0.1:5433:5433"', '"5433:5433"', 1))
    assert ports_off_loopback(load(compose_copy)) == ["yb-tserver-1 publishes *:5433->5433"]


def test_every_published_port_is_on_loopback(project):
    assert not ports_off_loopback(project)
    assert sum(len(svc.get("ports", [])) for svc in project["services"].values()) >= 15


def test_compose_targets_are_what_ybbench_targets_writes(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "ybbench", "targets", "--cluster", "ybbench",
         "--masters", "yb-master-1,yb-master-2,yb-master-3", "--tservers", "yb-tserver-1,yb-tserver-2,yb-tserver-3",
         "--node-exporters", "node-exporter", "--postgres-exporters", "postgres-exporter",
         "--prometheus", "localhost:9090", "--out", str(tmp_path)],
        check=True, cwd=REPO, capture_output=True,
    )
    committed = REPO / "prometheus" / "targets" / "compose"
    # The same files, named alike (an empty output would pass the loop alone),
    # and each with the committed content.
    written = sorted(f.name for f in tmp_path.iterdir())
    assert written == sorted(f.name for f in committed.iterdir()) == \
        ["node.json", "postgres.json", "prometheus.json", "yugabytedb.json"]
    for name in written:
        assert json.loads((tmp_path / name).read_text()) == json.loads((committed / name).read_text()), name


def test_native_binaries_match_the_compose_versions():
    env = dict(l.split("=", 1) for l in (COMPOSE / ".env").read_text().splitlines() if "=" in l and not l.startswith("#"))
    prom_tag = env["PROMETHEUS_IMAGE"].split(":")[1]  # v3.16.0
    major, minor, patch = prom_tag.lstrip("v").split(".")
    assert f"github.com/prometheus/prometheus v0.{major}{int(minor):02d}.{patch}" in \
        (REPO / "native" / "prometheus" / "go.mod").read_text()
    node_tag = env["NODE_EXPORTER_IMAGE"].split(":")[1]
    assert f"github.com/prometheus/node_exporter {node_tag}" in (REPO / "native" / "node_exporter" / "go.mod").read_text()
    assert "go.k6.io/k6 v1.8.1" in (REPO / "native" / "k6" / "go.mod").read_text()
    # The tests' k6 v2 build is the compose image's k6 version.
    assert f"go.k6.io/k6/v2 {env['K6_VERSION']}" in (REPO / "native" / "k6-v2" / "go.mod").read_text()


def test_prometheus_config_is_valid(compose_binaries):
    p = subprocess.run([str(compose_binaries / "promtool"), "check", "config", "--syntax-only",
                        str(REPO / "prometheus" / "prometheus.yml")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_root_compose_file_is_the_same_project_as_the_old_form(tmp_path):
    """`docker compose ...` at the root (compose.yaml includes
    compose/docker-compose.yml) and the old `-f compose/docker-compose.yml`
    load the same project: name, every service with its paths and the
    versions of compose/.env, networks, volumes; also from another folder
    with --project-directory, with -p, and with a knob from the shell."""
    old = root_config(REPO, "-f", "compose/docker-compose.yml")
    new = root_config(REPO)
    assert new["name"] == old["name"] == "ybbench"
    assert set(new["services"]) == set(old["services"]) >= {"k6", "ybbench", "yb-tserver-4", "postgres"}
    assert same_project(new, old)
    assert new["services"]["prometheus"]["volumes"][0]["source"] == str(REPO / "prometheus" / "prometheus.yml")
    assert new["services"]["yb-master-1"]["image"].startswith("yugabytedb/yugabyte:2025.2")
    assert same_project(root_config(tmp_path, "--project-directory", str(REPO)), new)
    renamed = root_config(REPO, "-p", "other", env={"YSQL_NODES": "a:5433"})
    assert same_project(renamed, root_config(REPO, "-p", "other", "-f", "compose/docker-compose.yml",
                                             env={"YSQL_NODES": "a:5433"}))
    assert renamed["name"] == renamed["services"]["promtail"]["environment"]["COMPOSE_PROJECT"] == "other"
    assert renamed["services"]["ybbench"]["environment"]["COMPOSE_PROJECT_NAME"] == "other"
    assert renamed["services"]["ybbench"]["environment"]["YSQL_NODES"] == "a:5433"
    # The control: a root file that misses the include is not the same project.
    (tmp_path / "compose.yaml").write_text("name: ybbench\nservices: {x: {image: busybox}}\n")
    assert not same_project(root_config(tmp_path), new)


def test_the_ybbench_service(project):
    """The CLI and the k6 service's k6 in one image, built here (never
    pulled), pointed at the stack; results/ on the repository; the engine's
    socket for --event on this service alone."""
    s = project["services"]
    y = s["ybbench"]
    assert y["profiles"] == ["bench"] and y["pull_policy"] == "build"
    assert y["build"]["context"] == str(REPO) and y["build"]["dockerfile"] == "compose/ybbench/Dockerfile"
    # The same xk6 build args as the k6 service, from compose/.env.
    k6_args = s["k6"]["build"]["args"]
    assert {k: y["build"]["args"][k] for k in k6_args if k != "RUNTIME_IMAGE"} == {
        k: v for k, v in k6_args.items() if k != "RUNTIME_IMAGE"}
    env = (COMPOSE / ".env").read_text()
    for arg in ("PYTHON_IMAGE", "DOCKER_CLI_IMAGE"):
        image = y["build"]["args"][arg]
        assert re.match(r"^[\w./-]+:\d[\w.-]*$", image) and "latest" not in image, image
    assert "YBBENCH_PYTHON_VERSION=" in env and "DOCKER_CLI_VERSION=" in env
    for version in (k6_args["K6_VERSION"], k6_args["XK6_SQL_VERSION"], k6_args["XK6_SQL_DRIVER_POSTGRES_VERSION"]):
        assert version in y["image"]
    assert y["environment"]["YBBENCH_PROMETHEUS"] == "http://prometheus:9090"
    assert y["environment"]["YBBENCH_LOKI"] == "http://loki:3100"
    assert y["environment"]["YBBENCH_GRAFANA"] == "http://grafana:3000"  # doctor's Grafana checks
    assert y["environment"]["YSQL_NODES"] == s["k6"]["environment"]["YSQL_NODES"]
    assert y["working_dir"] == "/ybbench"
    mounts = {v["target"]: v for v in y["volumes"]}
    assert mounts["/ybbench"]["source"] == str(REPO) and not mounts["/ybbench"].get("read_only")
    assert mounts["/run/secrets/ybbench"]["read_only"] and mounts["/run/secrets/ybbench"]["source"] == "secrets"
    sockets = {n for n, svc in s.items() for v in svc.get("volumes", []) if v["source"] == "/var/run/docker.sock"}
    assert sockets == {"ybbench", "promtail"}
    assert mounts["/var/run/docker.sock"]["source"] == "/var/run/docker.sock"
    assert not y.get("ports")
    assert depends(y) == {"yb-tserver-1": "service_healthy", "yb-tserver-2": "service_healthy",
                          "yb-tserver-3": "service_healthy", "prometheus": "service_healthy",
                          "loki": "service_healthy", "secrets": "service_completed_successfully",
                          "history-db": "service_healthy"}
    # The history store, its password in the PGPASSFILE the entrypoint writes, never in the URL.
    assert y["environment"]["YBBENCH_HISTORY"] == "postgresql://ybbench_history@history-db:5432/ybbench_history"


def test_the_history_store_service_keeps_its_data_and_its_password_off_the_repo(project):
    """history-db: started by a plain `up` (no profile), the postgres image
    of .env, its own named volume (`down` and `up` keep the history), no
    published port, ready when it answers over TCP (pg_isready), its
    passwords generated by the secrets service; Grafana's datasource reads
    its reader's password through $__file{} from the secrets volume."""
    s = project["services"]
    h = s["history-db"]
    assert "profiles" not in h and h["image"] == s["postgres"]["image"]
    mounts = {v["target"]: v for v in h["volumes"]}
    assert mounts["/var/lib/postgresql/data"]["type"] == "volume"
    assert mounts["/var/lib/postgresql/data"]["source"] == "history" and "history" in project["volumes"]
    init = mounts["/docker-entrypoint-initdb.d/grafana-reader.sql"]
    assert init["read_only"] and init["source"] == str(COMPOSE / "history-db" / "grafana-reader.sql")
    assert not h.get("ports")
    assert h["healthcheck"]["test"][:2] == ["CMD", "pg_isready"] and "-h" in h["healthcheck"]["test"]
    assert h["environment"]["POSTGRES_USER"] == "ybbench_history" and "POSTGRES_PASSWORD" not in h["environment"]
    assert h["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/ybbench/history_password"
    assert depends(h) == {"secrets": "service_completed_successfully"}
    script = s["secrets"]["command"][-1]
    for name, owner in (("history_password", "999"), ("history_reader_password", "999")):
        assert f"gen {name} {owner}" in script, name
    assert "chown 472 history_grafana_password" in script and "chown 0 history_pgpass" in script
    sources = {d["uid"]: d for d in yaml.safe_load((REPO / "grafana" / "provisioning" / "datasources" /
                                                    "datasources.yml").read_text())["datasources"]}
    ds = sources["ybbench-history"]
    assert ds["type"] == "grafana-postgresql-datasource" and ds["url"] == "history-db:5432"
    assert ds["user"] == "ybbench_grafana" and ds["jsonData"]["database"] == h["environment"]["POSTGRES_DB"]
    grafana_secrets = {v["target"]: v["source"] for v in s["grafana"]["volumes"]}["/run/secrets/ybbench"]
    assert grafana_secrets == "secrets"
    assert ds["secureJsonData"]["password"] == "$__file{/run/secrets/ybbench/history_grafana_password}"


def xk6_build(dockerfile) -> str:
    """The `xk6 build` command of a Dockerfile, its COPY paths aside."""
    text = dockerfile.read_text()
    return re.search(r"RUN (xk6 build .*?)\n(?!\s)", text, re.S)[1]


def test_the_ybbench_image_builds_the_k6_services_k6():
    """compose/ybbench/Dockerfile builds k6 with the k6 service's command,
    word for word, and copies our two modules from the k6 build's folder."""
    ours, k6s = COMPOSE / "ybbench" / "Dockerfile", COMPOSE / "k6" / "Dockerfile"
    assert xk6_build(ours) == xk6_build(k6s)
    assert "--with \"github.com/grafana/xk6-sql@${XK6_SQL_VERSION}\"" in xk6_build(ours)
    copies = re.findall(r"^COPY (\S+) /src/(\S+)$", ours.read_text(), re.M)
    assert copies == [(f"compose/k6/{m}", m) for m in ("xk6-sql-driver-pgx", "xk6-ybbench")]
    text = ours.read_text()
    assert re.findall(r"^FROM \$\{(\w+)\}", text, re.M) == ["XK6_IMAGE", "DOCKER_CLI_IMAGE", "PYTHON_IMAGE"]
    # The build context is the repository root: its .dockerignore keeps to
    # what the image reads.
    ignore = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert ignore[0] == "*" and "!results/" not in ignore
    for copied in re.findall(r"^COPY (?!--from)(\S+) ", text, re.M):
        assert f"!{copied.rstrip('/')}" in ignore or f"!{copied.rstrip('/')}/" in ignore, copied


def external_config(tmp_path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`docker compose config` at the repository root in external mode as
    docs/docker-stack.md "Your own cluster" sets it (COMPOSE_FILE, here from
    the environment rather than the root .env, which wins over neither),
    every profile a user may name."""
    settings = {"COMPOSE_FILE": "compose.yaml:compose/external.yaml", "YSQL_NODES": "10.0.0.11:5433,10.0.0.12:5433",
                "DB_USER": "bench_owner", "DB_NAME": "benchdb", "DB_SSLMODE": "verify-full",
                "DB_SSLROOTCERT": "certs/root.crt", "YBBENCH_CLUSTER_PASSWORD_FILE": str(tmp_path / "password")}
    settings.update(env or {})
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DB_", "YSQL_", "YBBENCH_"))}
    return subprocess.run(["docker", "compose", *args, *EVERY_PROFILE, "config", "--format", "json"], cwd=REPO,
                          capture_output=True, text=True,
                          env={**environ, **{k: v for k, v in settings.items() if v is not None}})


def test_external_mode_is_the_stack_without_the_local_cluster(compose_binaries, tmp_path):
    """compose/external.yaml on compose.yaml: every service of the default
    project but the six YugabyteDB servers, the fourth tserver and the
    local node_exporter, even with every profile named; the ybbench and k6
    services depend on the monitoring only and point at YSQL_NODES; the
    DB_* knobs pass through; the password is a compose secret of the file
    named, never an environment value; Prometheus mounts the external
    target folder, relative to the repository root. The test_compose_external
    stack runs it; here, the real `docker compose config`."""
    (tmp_path / "password").write_text("not-read-by-config\n")
    p = external_config(tmp_path)
    assert p.returncode == 0 and "variable is not set" not in p.stderr, p.stderr
    # The default project under the same settings: what external.yaml changes, and only that, differs.
    ext, default = json.loads(p.stdout), json.loads(external_config(tmp_path, env={"COMPOSE_FILE": "compose.yaml"}).stdout)
    s, d = ext["services"], default["services"]
    local = {n for n in d if n.startswith("yb-")} | {"node-exporter"}
    assert len(local) == 8 and set(s) == set(d) - local, sorted(set(s) ^ (set(d) - local))
    # Every service both have is the default's, but for the changes external.yaml names.
    changed = {"prometheus", "ybbench", "k6", "secrets"}
    assert {n: s[n] for n in s if n not in changed} == {n: d[n] for n in s if n not in changed}
    # secrets: the same script, given the scrape password or token files (a compose secret each, /dev/null unset).
    assert {k: v for k, v in s["secrets"].items() if k != "secrets"} == d["secrets"]
    assert s["secrets"]["secrets"] == [{"source": "scrape_yugabytedb", "target": "scrape_yugabytedb"},
                                       {"source": "scrape_node", "target": "scrape_node"}]
    assert {ext["secrets"][n]["file"] for n in ("scrape_yugabytedb", "scrape_node")} == {"/dev/null"}
    scraped = json.loads(external_config(tmp_path, env={"YBBENCH_NODE_SCRAPE_SECRET_FILE": "secret/node"}).stdout)
    assert scraped["secrets"]["scrape_node"]["file"] == str(REPO / "secret" / "node")
    # Prometheus reads the copies `secrets` makes for its user, once they are made.
    prom_mounts = {v["target"]: v for v in s["prometheus"]["volumes"]}
    assert prom_mounts["/run/secrets/ybbench"]["source"] == "secrets" and prom_mounts["/run/secrets/ybbench"]["read_only"]
    assert depends(s["prometheus"]) == {"secrets": "service_completed_successfully"}
    assert (s["ybbench"]["environment"]["YBBENCH_CLUSTER_METRICS"], s["ybbench"]["environment"]["YBBENCH_NODE_METRICS"]) \
        == ("scraped", "node_exporter")
    y = s["ybbench"]
    assert depends(y) == {"prometheus": "service_healthy", "loki": "service_healthy",
                          "secrets": "service_completed_successfully", "history-db": "service_healthy"}
    assert depends(s["k6"]) == {"prometheus": "service_healthy"}
    assert y["environment"]["YSQL_NODES"] == s["k6"]["environment"]["YSQL_NODES"] == "10.0.0.11:5433,10.0.0.12:5433"
    assert {k: y["environment"].get(k) for k in ("DB_USER", "DB_NAME", "DB_SSLMODE", "DB_SSLROOTCERT")} == {
        "DB_USER": "bench_owner", "DB_NAME": "benchdb", "DB_SSLMODE": "verify-full", "DB_SSLROOTCERT": "certs/root.crt"}
    assert y["environment"]["YBBENCH_CLUSTER_LOGS"] == "elsewhere"
    # Every DB_* knob the workloads read passes through to the service (the k6 service's list has them all).
    knobs = set(re.findall(r'"(DB_[A-Z_]+)"', (REPO / "k6-scripts" / "lib" / "config.js").read_text()))
    assert knobs and knobs <= set(d["ybbench"]["environment"]) | {k for k in knobs if os.environ.get(k)}, knobs
    assert y["secrets"] == [{"source": "cluster_password", "target": "ybbench_cluster_password"}]
    assert ext["secrets"]["cluster_password"]["file"] == str(tmp_path / "password")
    assert not [(n, k) for n, svc in s.items() for k in svc.get("environment", {})
                if "PASSWORD" in k and not k.endswith("_FILE")]
    mounts = {v["target"]: v for v in s["prometheus"]["volumes"]}
    targets = mounts["/etc/prometheus/targets"]
    assert targets["source"] == str(REPO / "prometheus" / "targets" / "external") and targets["read_only"]
    assert (REPO / "prometheus" / "targets" / "external").is_dir()  # in the repository: not made by the engine as root
    assert mounts["/etc/prometheus/prometheus.yml"] == d["prometheus"]["volumes"][0]
    # YBBENCH_TARGETS: an absolute path, or one relative to the repository root from ./ (docs/docker-stack.md).
    for given, source in (("/srv/targets", "/srv/targets"), ("./my/targets", str(REPO / "my" / "targets"))):
        other = json.loads(external_config(tmp_path, env={"YBBENCH_TARGETS": given}).stdout)
        assert {v["target"]: v["source"] for v in other["services"]["prometheus"]["volumes"]}[
            "/etc/prometheus/targets"] == source
    bare = external_config(tmp_path, env={"YBBENCH_TARGETS": "my/targets"})  # what the docs warn of
    assert bare.returncode != 0 and "undefined volume my/targets" in bare.stderr, bare.stderr
    # The password file too, relative to the repository root.
    relative = json.loads(external_config(tmp_path, env={"YBBENCH_CLUSTER_PASSWORD_FILE": "secret/pw"}).stdout)
    assert relative["secrets"]["cluster_password"]["file"] == str(REPO / "secret" / "pw")
    # No password file: the secret is empty (YSQL's default has no password).
    none = json.loads(external_config(tmp_path, env={"YBBENCH_CLUSTER_PASSWORD_FILE": None}).stdout)
    assert none["secrets"]["cluster_password"]["file"] == "/dev/null"
    # YSQL_NODES is required: external mode names it rather than run against a local cluster it did not start.
    missing = external_config(tmp_path, env={"YSQL_NODES": None})
    assert missing.returncode != 0 and "set YSQL_NODES to your cluster" in missing.stderr, missing.stderr
    # The control: the default project, YSQL_NODES set, still has the whole local cluster behind the service.
    assert {n for n in depends(d["ybbench"]) if n.startswith("yb-")} == {"yb-tserver-1", "yb-tserver-2", "yb-tserver-3"}


def test_the_docs_external_mode_settings_are_what_compose_reads(compose_binaries, tmp_path):
    """The root .env that docs/own-cluster.md writes, read by the real
    `docker compose config` at a copy of the repository's compose files:
    the nodes, role, database and TLS of the page reach the ybbench
    service, its password file is the secret's, and no yb-* service is
    left; every setting its table names is one external.yaml or the
    ybbench service reads."""
    page = (REPO / "docs" / "own-cluster.md").read_text()
    steps = page.split("\n## Step by step\n", 1)[1].split("\n## ", 1)[0]
    section = page.split("\n## The settings\n", 1)[1].split("\n## ", 1)[0]
    shell = dict(re.findall(r"^(ysql_nodes)=(\S+)$", steps, re.M))  # the page's own addresses
    env_block = re.search(r"cat > \.env <<EOF\n(.*?)\nEOF\n", steps, re.S)[1]
    env_block = env_block.replace("$ysql_nodes", shell["ysql_nodes"]).replace("$HOME", str(tmp_path))
    settings = dict(line.split("=", 1) for line in env_block.splitlines())
    for name in ("compose.yaml", "compose", "prometheus", "grafana", "k6-scripts"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DB_", "YSQL_", "YBBENCH_"))}
    p = subprocess.run(["docker", "compose", "--profile", "bench", "config", "--format", "json"], cwd=tmp_path,
                       capture_output=True, text=True, env=environ)
    assert p.returncode == 0, p.stderr
    project = json.loads(p.stdout)
    y = project["services"]["ybbench"]["environment"]
    assert (y["YSQL_NODES"], y["DB_USER"], y["DB_NAME"]) == (settings["YSQL_NODES"], settings["DB_USER"],
                                                           settings["DB_NAME"])
    assert (y["DB_SSLMODE"], y["DB_SSLROOTCERT"]) == ("verify-full", "certs/ca.crt")
    assert project["secrets"]["cluster_password"]["file"] == settings["YBBENCH_CLUSTER_PASSWORD_FILE"]
    assert not [n for n in project["services"] if n.startswith("yb-")]
    table = re.findall(r"^\| `([A-Z_]+)[=`]", section, re.M)
    external = (COMPOSE / "external.yaml").read_text()
    read = set(re.findall(r"\$\{([A-Z_]+)", external)) | {"COMPOSE_FILE"} | set(y) | set(
        project["services"]["ybbench"]["environment"])
    assert table and not [t for t in table if t not in read], table
