"""The own-cluster guide (docs/own-cluster.md "Step by step"), run as a
user runs it: its shell blocks, as written, in one bash session of a user
who is not root (uid USER_UID, a home of its own, the checkout theirs), with
only the guide's four lines of addresses replaced, against a secured
stand-in of "your cluster" (external_cluster.yml): PostgreSQL behind the
YugabyteDB stand-in's tserver with TLS for the name ext-tserver, a password
and a client certificate (clientcert=verify-full); the servers' web ports
over HTTPS; node_exporter on :9300 with TLS and basic auth. The files the
guide copies are where it says (~/Downloads); the editor the guide opens
writes the password the test made. The test's own two compose files
(override.yml: the stand-in images and internal networks;
external_network.yml: the stack reaches the cluster's network) come in
through COMPOSE_FILE in the environment, which wins over the guide's .env.

What is checked comes from outside the code under test: the Docker engine
(which containers exist, their configs and logs), Prometheus' API, the
cluster's own database (pg_stat_ssl: the load's sessions were TLS with the
client certificate) and the history store's."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import uuid
import warnings
from pathlib import Path

import pytest

from ..support import room
from ..support.certs import Certs
from ..support.compose_stack import Engine, PromApi, build_images, eventually, owned_copy, take_down
from ..support.stack import BIN, REPO

with warnings.catch_warnings():  # deprecated in 3.11; bcrypt through libxcrypt, as exporter-toolkit wants
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt

# Projects of their own: a user's `ybbench` stack and the other compose
# tests' `ybbench-test` are left alone.
PROJECT = "ybbench-exttest"
CLUSTER_PROJECT = "ybbench-exttest-cluster"
CLUSTER_NETWORK = "ybbench-exttest-cluster"
NETWORK = f"{PROJECT}_ybbench"
USER_UID = 12345
GUIDE = REPO / "docs" / "own-cluster.md"
# The guide's addresses -> the stand-in cluster's (its first block, values only).
ADDRESSES = {"masters": "ext-master", "tservers": "ext-tserver", "ysql_nodes": "ext-tserver:5433",
             "node_exporters": "ext-node:9300"}
DB_USER, DB_NAME = "yugabyte", "yugabyte"  # as the guide's .env gives them
YSQL_NODES = ADDRESSES["ysql_nodes"]
TESTID = "mine-load1"  # the guide's first run
SCRAPE_USER = "prometheus"  # the guide's --node-basic-auth
# What Prometheus must scrape: (job, export_type, scheme) -> instances.
EXPECTED_TARGETS = {
    ("prometheus", None, "http"): {"localhost:9090"},
    ("node", None, "https"): {"ext-node:9300"},
    ("yugabytedb", "master_export", "https"): {"ext-master:7000"},
    ("yugabytedb", "tserver_export", "https"): {"ext-tserver:9000"},
    ("yugabytedb", "cql_export", "https"): {"ext-tserver:12000"},
    ("yugabytedb", "ysql_export", "https"): {"ext-tserver:13000"},
}
# The only services external mode starts (secrets runs once and exits).
MONITORING = {"prometheus", "loki", "promtail", "grafana", "history-db"}
PG_HBA = """\
local all all trust
hostssl all all all scram-sha-256 clientcert=verify-full
"""


def guide_script() -> str:
    """The guide's "Step by step" blocks, in order, as one script; the
    first block's addresses replaced (and nothing else)."""
    text = GUIDE.read_text()
    section = text.split("## Step by step", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"(<!--[^\n]*-->\n)?```sh\n(.*?)```", section, re.S)
    run = [body for mark, body in blocks if "not-run" not in (mark or "")]
    first = run[0]
    for name, value in ADDRESSES.items():
        first, n = re.subn(rf"^{name}=\S+$", f"{name}={value}", first, flags=re.M)
        assert n == 1, f"the guide's first block sets {name}= once: {run[0]}"
    assert set(re.findall(r"^(\w+)=", first, re.M)) == set(ADDRESSES), first
    return "\n".join(["set -euo pipefail", first, *run[1:]])


class Project:
    """`docker compose -p NAME [-f FILE ...] ARGS` in the checkout's root,
    with only the environment the test names (PATH, the engine's, the
    stand-ins' tags, the test's compose files): the settings come from the
    root .env the guide wrote."""

    def __init__(self, name: str, root: Path, env: dict[str, str], files: tuple[Path, ...] = ()):
        self.name, self.root, self.env, self.files = name, root, env, files

    def __call__(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        cmd = ["docker", "compose", "-p", self.name, *(a for f in self.files for a in ("-f", str(f))), *args]
        p = subprocess.run(cmd, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        return p

    def containers(self) -> list[dict]:
        """`docker inspect` of every container of the project the engine has, running or not."""
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={self.name}"],
                             capture_output=True, text=True, check=True).stdout.split()
        if not ids:
            return []
        return json.loads(subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True,
                                         check=True).stdout)

    def address(self, service: str) -> str:
        for c in self.containers():
            labels = c["Config"]["Labels"]
            if labels["com.docker.compose.service"] == service and labels.get("com.docker.compose.oneoff") != "True":
                return c["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]
        raise LookupError(f"no container of {service}")


def service_of(container: dict) -> str:
    return container["Config"]["Labels"]["com.docker.compose.service"]


def owned(path: Path, content: str | bytes, uid: int, mode: int = 0o600) -> Path:
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    os.chown(path, uid, uid)
    path.chmod(mode)
    return path


def cluster_tls(d: Path, certs: Certs, password: str, scrape_password: str) -> Path:
    """The cluster's side: each server's certificate and key, owned by the
    user its server runs as (postgres 999, the stand-in root, node_exporter
    nobody), pg_hba, node_exporter's web config, the YSQL password."""
    d.mkdir()
    d.chmod(0o755)
    owned(d / "ca.crt", (certs.dir / "ca.crt").read_bytes(), 0, 0o644)
    for name, dns, uid in (("ysql", ("ext-tserver",), 999), ("web", ("ext-master", "ext-tserver"), 0),
                           ("node", ("ext-node",), 65534)):
        crt, key = certs.server(name, "ca", dns=dns)
        owned(d / f"{name}.crt", crt.read_bytes(), uid, 0o644)
        owned(d / f"{name}.key", key.read_bytes(), uid)
    owned(d / "pg_hba.conf", PG_HBA, 999)
    owned(d / "ysql-password", password + "\n", 999)
    web = (f"tls_server_config:\n  cert_file: /run/cluster/tls/node.crt\n  key_file: /run/cluster/tls/node.key\n"
           f"basic_auth_users:\n  {SCRAPE_USER}: '{crypt.crypt(scrape_password, crypt.mksalt(crypt.METHOD_BLOWFISH))}'\n")
    owned(d / "node-web.yml", web, 65534)
    return d


def user_home(d: Path, certs: Certs, password: str, scrape_password: str) -> tuple[Path, Path]:
    """The user's home: the cluster's files in ~/Downloads as the guide
    says, the Compose CLI plugin of their own, and an $EDITOR that writes
    into the file it is given the password the test made for it."""
    home = d / "home"
    (home / "Downloads").mkdir(parents=True)
    (home / ".docker" / "cli-plugins").mkdir(parents=True)
    shutil.copy(BIN / "docker-compose", home / ".docker" / "cli-plugins" / "docker-compose")
    crt, key = certs.client("client", "ca", DB_USER)
    for src, name in ((certs.dir / "ca.crt", "root.crt"), (crt, "yugabyte.crt"), (key, "yugabyte.key")):
        shutil.copy(src, home / "Downloads" / name)
    typed = d / "typed"
    typed.mkdir()
    owned(typed / ".ybbench-cluster-password", password + "\n", USER_UID)
    owned(typed / ".ybbench-node-scrape-password", scrape_password + "\n", USER_UID)
    editor = owned(d / "editor", f'#!/bin/sh\ncat "{typed}/$(basename "$1")" > "$1"\n', USER_UID, 0o755)
    for path in [d, *d.rglob("*")]:
        os.lchown(path, USER_UID, USER_UID)
    d.chmod(0o755)
    return home, editor


@pytest.fixture(scope="module")
def ext(compose_binaries):
    engine = Engine()
    images = build_images()
    # Outside pytest's own temporary folders (root's, mode 700): the user must reach their checkout and home.
    base = Path(tempfile.mkdtemp(prefix="ybbench-exttest-"))
    base.chmod(0o755)
    (base / "checkout").mkdir()
    root = owned_copy(base / "checkout", USER_UID)
    (root / ".env").unlink(missing_ok=True)
    certs = Certs(base / "certs")
    certs.ca("ca")
    # ':' and '\' must be escaped in a pgpass line: a password with both, around a random
    # token that no quoting or escaping (JSON's, a pgpass line's) changes: what the leak checks look for.
    token = secrets.token_urlsafe(18)
    password = f"ext:{token}\\z"
    scrape_token = secrets.token_urlsafe(18)
    tls = cluster_tls(base / "tls", certs, password, scrape_token)
    home, editor = user_home(base / "user", certs, password, scrape_token)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "DOCKER_HOST")}
    env.update(images)
    files = "compose.yaml:compose/external.yaml:tests/compose/override.yml:tests/compose/external_network.yml"
    env.update(COMPOSE_FILE=files, COMPOSE_PROJECT_NAME=PROJECT, CLUSTER_NETWORK=CLUSTER_NETWORK)
    user_env = {**env, "HOME": str(home), "EDITOR": str(editor), "USER": "me", "LANG": "C.UTF-8"}
    stack = Project(PROJECT, root, {**env, "HOME": str(home)})
    cluster = Project(CLUSTER_PROJECT, root, {**env, "EXT_DB_USER": DB_USER, "EXT_DB_NAME": DB_NAME,
                                              "EXT_TLS_DIR": str(tls)},
                      files=(root / "tests" / "compose" / "external_cluster.yml",))

    def down():
        take_down(engine, [(stack, ("--profile", "bench")), (cluster, ())], projects=(PROJECT, CLUSTER_PROJECT))

    down()  # what an earlier, interrupted run left
    try:
        # Your cluster, there all along in life.
        cluster("up", "-d", "--wait", "--wait-timeout", "180", timeout=600)
        docker_gid = os.stat("/var/run/docker.sock").st_gid
        script = guide_script()
        guide = subprocess.run(["setpriv", f"--reuid={USER_UID}", f"--regid={USER_UID}", f"--groups={docker_gid}",
                                "bash", "-c", script], cwd=root, env=user_env, capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=2400)
        yield {"stack": stack, "cluster": cluster, "root": root, "token": token, "scrape_token": scrape_token,
               "home": home, "guide": guide, "images": images, "script": script}
    finally:
        down()
        engine.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_the_guide_runs_as_written(ext):
    """Every block of the guide, in one session: exit 0, doctor's verdict
    and the run's last lines in its output."""
    g = ext["guide"]
    assert g.returncode == 0, f"{g.stdout[-6000:]}\n{g.stderr[-6000:]}"
    assert "mine-load1" in g.stdout + g.stderr


@pytest.fixture(scope="module")
def prom(ext):
    return PromApi(f"http://{ext['stack'].address('prometheus')}:9090")


def cluster_sql(ext, query: str) -> str:
    """psql in the cluster's own PostgreSQL, on its Unix socket (trusted locally, as upstream's image)."""
    return ext["cluster"]("exec", "-T", "ysql", "psql", "-U", DB_USER, "-d", DB_NAME, "-XAtc", query).stdout.strip()


@pytest.fixture(scope="module")
def service_run(ext):
    """The guide's first run, through the service, against the cluster."""
    g = ext["guide"]
    assert g.returncode == 0, f"the guide stopped:\n{g.stdout[-4000:]}\n{g.stderr[-4000:]}"
    return TESTID, g


@pytest.fixture(scope="module")
def doctor(ext, service_run):
    """`ybbench doctor` through the service, its container kept (run -d, no
    --rm) so that the engine's own record of it can be read: its config,
    mounts and log."""
    out = f"results/doctor-{uuid.uuid4().hex[:8]}.json"
    name = f"{PROJECT}-doctor-{uuid.uuid4().hex[:6]}"
    ext["stack"]("run", "-d", "--name", name, "ybbench", "doctor", "--out", out)
    try:
        code = int(subprocess.run(["docker", "wait", name], capture_output=True, text=True, timeout=900,
                                  check=True).stdout.strip())
        logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True, check=True)
        (inspect,) = json.loads(subprocess.run(["docker", "inspect", name], capture_output=True, text=True,
                                               check=True).stdout)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    doc = json.loads((ext["root"] / out).read_text()) if (ext["root"] / out).is_file() else None
    return {"code": code, "stdout": logs.stdout, "stderr": logs.stderr, "inspect": inspect, "doc": doc,
            "path": ext["root"] / out}


def test_up_starts_the_monitoring_and_no_yugabytedb(ext, service_run, doctor):
    """From the engine, after the targets command, `up`, a run and doctor
    through the service: the project's containers are the monitoring's and
    the history store's (secrets ran once); no yb-master-*, yb-tserver-* or
    node-exporter, and no container of the YugabyteDB image in the project
    at all, running or exited."""
    containers = ext["stack"].containers()
    by_service = {service_of(c): c for c in containers if c["Config"]["Labels"].get("com.docker.compose.oneoff") != "True"}
    assert set(by_service) == MONITORING | {"secrets"}, sorted(by_service)
    assert not [c["Name"] for c in containers if service_of(c).startswith("yb-")]
    yb_image = ext["images"]["YBT_YUGABYTEDB_IMAGE"]
    assert not [c["Name"] for c in containers if c["Config"]["Image"] == yb_image]
    # ... while your cluster, in its own project, runs that image.
    assert {service_of(c) for c in ext["cluster"].containers() if c["Config"]["Image"] == yb_image} == {
        "master", "tserver"}
    assert by_service["secrets"]["State"]["Status"] == "exited" and by_service["secrets"]["State"]["ExitCode"] == 0
    for name in MONITORING:
        state = by_service[name]["State"]
        assert state["Status"] == "running", (name, state)
        assert state.get("Health", {"Status": "healthy"})["Status"] == "healthy", (name, state["Health"])


def test_prometheus_scrapes_the_clusters_target_files(ext, prom):
    """The files `ybbench targets` wrote in prometheus/targets/external (as
    the checkout's owner) are what Prometheus mounts, and every target they
    name is up, with the cluster's name as node_prefix."""
    folder = ext["root"] / "prometheus" / "targets" / "external"
    written = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    assert [p.name for p in written] == ["node-ca.crt", "node.json", "postgres.json", "prometheus.json",
                                         "secured.scrape.yml", "yugabytedb-ca.crt", "yugabytedb.json"]
    scrape = (folder / "secured.scrape.yml").read_text()
    assert "/run/secrets/ybbench/scrape_node" in scrape and ext["scrape_token"] not in scrape
    assert {p.stat().st_uid for p in written} == {USER_UID}
    (prometheus,) = [c for c in ext["stack"].containers() if service_of(c) == "prometheus"]
    mounts = {m["Destination"]: m["Source"] for m in prometheus["Mounts"]}
    assert mounts["/etc/prometheus/targets"] == str(folder)

    def all_up():
        got: dict[tuple, set] = {}
        for t in prom.targets():
            assert t["health"] == "up", (t["scrapeUrl"], t["health"], t["lastError"])
            assert t["labels"]["node_prefix"] == "mine", t["labels"]
            key = (t["labels"]["job"], t["labels"].get("export_type"), t["scrapeUrl"].split(":")[0])
            got.setdefault(key, set()).add(t["labels"]["instance"])
        assert got == EXPECTED_TARGETS, got
        return got

    eventually(all_up, "the cluster's targets up", timeout=120)
    # The cluster's series are in: the master's capture, relabelled by prometheus.yml.
    assert prom.query('rpc_latency_count{export_type="master_export", node_prefix="mine"}')


def test_a_run_through_the_service_lands_in_results_the_cluster_and_the_history(ext, service_run):
    """`docker compose run --rm ybbench run sql-inserts`: its folder in the
    checkout's results/, owned by the checkout's owner; the rows in the
    cluster's database as its role (DB_USER, DB_NAME from the .env, the
    password from the file); the run in the history store."""
    tid, _ = service_run
    folder = ext["root"] / "results" / tid
    summary = json.loads((folder / "summary.json").read_text())
    k6s = json.loads((folder / "k6-summary.json").read_text())["metrics"]
    count = summary["ops"]["insert"]["count"]
    assert count > 0 and count == k6s["iterations"]["count"] and summary["errors"] == 0
    assert {(p.stat().st_uid) for p in [folder, *folder.rglob("*")]} == {USER_UID}
    knobs = json.loads((folder / "params.json").read_text())["knobs"]
    assert (knobs["YSQL_NODES"], knobs["DB_USER"], knobs["DB_NAME"]) == (YSQL_NODES, DB_USER, DB_NAME)
    # Over verify-full with the guide's files, as the service sees them (the checkout at /ybbench).
    assert {k: knobs.get(k) for k in ("DB_SSLMODE", "DB_SSLROOTCERT", "DB_SSLCERT", "DB_SSLKEY")} == {
        "DB_SSLMODE": "verify-full", "DB_SSLROOTCERT": "/ybbench/certs/ca.crt",
        "DB_SSLCERT": "/ybbench/certs/client.crt", "DB_SSLKEY": "/ybbench/certs/client.key"}
    assert int(cluster_sql(ext, f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{tid}:%'")) == count
    assert cluster_sql(ext, "SELECT tableowner FROM pg_tables WHERE tablename = 'postgresqlkeyvalue'") == DB_USER
    got = ext["stack"]("exec", "-T", "history-db", "psql", "-U", "ybbench_history", "-d", "ybbench_history", "-XAtc",
                       f"SELECT op, count FROM ybbench_history_ops WHERE testid = '{tid}'").stdout.split()
    assert got == [f"insert|{count}"], got


# doctor's checks that cannot pass in external mode here, with why; every
# other check must pass (docs/docker-stack.md "Your own cluster").
SKIPPED_HERE = {
    # The stand-in cluster's YSQL is PostgreSQL (no -YB-, no yb_servers()).
    "ysql nodes cover the cluster": "not a YugabyteDB cluster",
    # External mode: the cluster's own log does not reach this Loki.
    "loki ysql error line": "YBBENCH_CLUSTER_LOGS=elsewhere",
    # On any stack: services whose lines have no severity (ybbench/doctor/loki.py).
    "loki level ybbench": "ybbench CLI's output",
    "loki level secrets": "one-shot script",
    # No pg baseline in external mode (its own profile).
    "prometheus targets postgres": "no postgres target",
}


def test_doctor_through_the_service_passes_in_external_mode(ext, doctor):
    doc = doctor["doc"]
    assert doc is not None, (doctor["code"], doctor["stderr"][-3000:])
    checks = {c["name"]: c for c in doc["checks"]}
    not_ok = {n: (c["status"], c["found"]) for n, c in checks.items() if c["status"] != "ok"}
    assert doctor["code"] == 0 and doc["ok"], json.dumps(not_ok, indent=1)
    # The stand-in node's node_exporter (no host root, as many are run) sees the files
    # Docker binds into its container: their host paths, from the engine, hold the free space.
    (node,) = json.loads(subprocess.run(["docker", "inspect", *ext["cluster"]("ps", "-q", "node").stdout.split()],
                                        capture_output=True, text=True, check=True).stdout)
    bound = {"/etc/hosts": node["HostsPath"], "/etc/hostname": node["HostnamePath"],
             "/etc/resolv.conf": node["ResolvConfPath"]}
    disks = room.disk_checks(doc["checks"])
    assert [c["name"] for c in disks] == ["room disk ext-node:9300 /etc/hosts"], disks  # one filesystem, one check
    off = room.disagreements(disks, bound.__getitem__)
    assert not off, off
    unexpected = {n: v for n, v in not_ok.items() if not n.startswith("room disk ")
                  and (n not in SKIPPED_HERE or v[0] != "skipped" or SKIPPED_HERE[n] not in v[1])}
    assert not unexpected, json.dumps(unexpected, indent=1)
    connect = checks[f"ysql {YSQL_NODES} connect"]
    assert connect["status"] == "ok" and repr(DB_USER) in connect["expected"] and repr(DB_NAME) in connect["expected"]
    for kind in ("master_export", "tserver_export", "cql_export", "ysql_export"):
        assert checks[f"prometheus targets yugabytedb {kind}"]["status"] == "ok"
    assert checks["prometheus targets node"]["status"] == "ok"


def test_the_cluster_refuses_a_session_without_the_password(ext):
    """The control: the service's Python, bypassing the entrypoint that
    writes the PGPASSFILE, over the guide's TLS with its client certificate,
    is refused; with it, the run and doctor pass (above)."""
    probe = ("import psycopg\n"
             "try:\n"
             f"    psycopg.connect(host='ext-tserver', port=5433, user={DB_USER!r}, dbname={DB_NAME!r}, "
             "sslmode='verify-full', sslrootcert='certs/ca.crt', sslcert='certs/client.crt', "
             "sslkey='certs/client.key', connect_timeout=10)\n"
             "    print('connected')\n"
             "except psycopg.OperationalError as e:\n"
             "    print('refused:', e)\n")
    p = ext["stack"]("run", "--rm", "--no-deps", "--entrypoint", "python3", "ybbench", "-c", probe)
    assert p.stdout.startswith("refused:") and "password" in p.stdout, p.stdout + p.stderr


def test_the_password_shows_nowhere(ext, service_run, doctor):
    """The password is in no container's config or log (`docker inspect`,
    `docker compose logs`, the doctor container's own), in no file of the
    checkout (results/ included) and not in the history store; the service
    got it as a read-only bind of the user's file."""
    stack, token = ext["stack"], ext["token"]
    mount = {m["Destination"]: m for m in doctor["inspect"]["Mounts"]}["/run/secrets/ybbench_cluster_password"]
    assert (mount["Type"], mount["Source"], mount["RW"]) == (
        "bind", str(ext["home"] / ".ybbench-cluster-password"), False)
    inspected = json.dumps([*stack.containers(), *ext["cluster"].containers(), doctor["inspect"]])
    logs = [stack("logs", "--no-color", "--timestamps"), ext["cluster"]("logs", "--no-color")]
    logs = "".join(p.stdout + p.stderr for p in logs) + doctor["stdout"] + doctor["stderr"]
    files = {p: p.read_bytes() for p in ext["root"].rglob("*") if p.is_file()}
    run = ext["root"] / "results" / service_run[0]
    assert {run / n for n in ("params.json", "summary.json", "k6-summary.json", "k6.log")} | {doctor["path"]} <= set(files)
    assert token not in inspected, "the password is in `docker inspect`"
    assert token not in logs, "the password is in a log"
    assert not [p for p, b in files.items() if token.encode() in b], "the password is in a file of the checkout"
    dump = stack("exec", "-T", "history-db", "pg_dump", "-U", "ybbench_history", "ybbench_history").stdout
    assert service_run[0] in dump and token not in dump, "the run is not in the history store, or the password is"
    scrape = ext["scrape_token"]
    assert scrape not in inspected and scrape not in logs, "the scrape password is in `docker inspect` or a log"
    assert not [p for p, b in files.items() if scrape.encode() in b], "the scrape password is in a file of the checkout"


def other_ca(ext) -> str:
    """A CA that signed nothing of the cluster's, in the checkout's certs/ as the user's."""
    certs = Certs(ext["root"].parent / "other-certs")
    path = ext["root"] / "certs" / "other-ca.crt"
    shutil.copy(certs.ca("other-ca"), path)
    os.chown(path, USER_UID, USER_UID)
    return "certs/other-ca.crt"


@pytest.mark.parametrize("fault", ["wrong CA", "host name", "missing key"])
def test_a_planted_fault_names_its_culprit(ext, service_run, fault):
    """The guide's run, through the service, with one of its TLS settings
    broken: a CA that did not sign the server's certificate, the node by an
    address the certificate does not hold, a client key that is not there.
    Each stops the run with the setting and the file named."""
    (tserver,) = [c for c in ext["cluster"].containers() if service_of(c) == "tserver"]
    address = tserver["NetworkSettings"]["Networks"][CLUSTER_NETWORK]["IPAddress"]
    given, said, code = {
        "wrong CA": (f"DB_SSLROOTCERT={other_ca(ext)}", ["certificate signed by unknown authority",
                                                         "DB_SSLROOTCERT=/ybbench/certs/other-ca.crt"], 107),
        "host name": (f"YSQL_NODES={address}:5433", [f"cannot validate certificate for {address}",
                                                       "DB_SSLROOTCERT=/ybbench/certs/ca.crt"], 107),
        "missing key": ("DB_SSLKEY=certs/no-such.key", ["DB_SSLKEY=certs/no-such.key: cannot read the client key "
                                                        "file (No such file or directory)"], 2),
    }[fault]
    tid = f"fault{uuid.uuid4().hex[:8]}"
    p = ext["stack"]("run", "--rm", "ybbench", "run", "sql-inserts", "--vus", "1", "--duration", "5s", "--testid", tid,
                     "--set", given, check=False, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == code, out[-3000:]
    for words in said:
        assert words in out, out[-3000:]
    assert not (ext["root"] / "results" / tid).exists()
