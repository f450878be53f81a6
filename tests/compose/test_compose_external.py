"""The stack's external mode (compose/external.yaml, docs/docker-stack.md
"Your own cluster"), for real: the root compose.yaml with external.yaml on
top, chosen as a user chooses it, by the root .env of a checkout owned by a
user who is not root (COMPOSE_FILE, YSQL_NODES, DB_USER, DB_NAME and
YBBENCH_CLUSTER_PASSWORD_FILE), with the test-only override.yml (stand-in
images, internal networks) as a third file. "Your cluster" is another
compose project (external_cluster.yml): the YugabyteDB stand-in's master
and tserver, the tserver's YSQL forwarding to a PostgreSQL that wants a
password, and a node_exporter, joined to the stack's network under the
names the target files give.

The recipe, in the user's order: `ybbench targets --out
prometheus/targets/external` (through the service, nothing else started),
`docker compose up -d --wait`, then `docker compose run --rm ybbench ...`.
What is checked comes from outside the code under test: the Docker engine
(which containers exist, their configs and logs), Prometheus' API, the
cluster's own database and the history store's."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import uuid
from pathlib import Path

import pytest

from ..support import room
from ..support.compose_stack import Engine, PromApi, build_images, eventually, owned_copy, take_down

# Projects of their own: a user's `ybbench` stack and the other compose
# tests' `ybbench-test` are left alone.
PROJECT = "ybbench-exttest"
CLUSTER_PROJECT = "ybbench-exttest-cluster"
NETWORK = f"{PROJECT}_ybbench"
USER_UID = 12345
# The cluster's role and database: not the stack's defaults (yugabyte), so
# a run that lands in them got DB_USER and DB_NAME from the .env.
DB_USER, DB_NAME = "bench_owner", "benchdb"
YSQL_NODES = "ext-tserver:5433"
# `ybbench targets` of the cluster, as a user gives its hosts.
TARGETS_ARGS = ("--cluster", "mine", "--masters", "ext-master", "--tservers", "ext-tserver",
                "--node-exporters", "ext-node", "--prometheus", "localhost:9090")
# What Prometheus must scrape from those files: (job, export_type) -> instances.
EXPECTED_TARGETS = {
    ("prometheus", None): {"localhost:9090"},
    ("node", None): {"ext-node:9100"},
    ("yugabytedb", "master_export"): {"ext-master:7000"},
    ("yugabytedb", "tserver_export"): {"ext-tserver:9000"},
    ("yugabytedb", "cql_export"): {"ext-tserver:12000"},
    ("yugabytedb", "ysql_export"): {"ext-tserver:13000"},
}
# The only services external mode starts (secrets runs once and exits).
MONITORING = {"prometheus", "loki", "promtail", "grafana", "history-db"}


class Project:
    """`docker compose -p NAME [-f FILE ...] ARGS` in the checkout's root,
    with only the environment the test names (PATH, the engine's, the
    stand-ins' tags): the stack's files and settings come from the root .env."""

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


def owned(path: Path, text: str, uid: int) -> Path:
    path.write_text(text)
    os.chown(path, uid, uid)
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def ext(compose_binaries, tmp_path_factory):
    engine = Engine()
    images = build_images()
    root = owned_copy(tmp_path_factory.mktemp("checkout"), USER_UID)
    # ':' and '\' must be escaped in a pgpass line: a password with both, around a random
    # token that no quoting or escaping (JSON's, a pgpass line's) changes: what the leak checks look for.
    token = secrets.token_urlsafe(18)
    password = f"ext:{token}\\z"
    secret_dir = tmp_path_factory.mktemp("secret")
    users_file = owned(secret_dir / "cluster-password", password + "\n", USER_UID)  # the user's own file
    ysql_file = owned(secret_dir / "ysql-password", password + "\n", 999)  # the cluster's (postgres, uid 999)
    # The user's settings, in the root .env every `docker compose` there reads; the third file is the test's.
    env_file = root / ".env"
    env_file.write_text(f"COMPOSE_FILE=compose.yaml:compose/external.yaml:tests/compose/override.yml\n"
                        f"YSQL_NODES={YSQL_NODES}\nDB_USER={DB_USER}\nDB_NAME={DB_NAME}\n"
                        f"YBBENCH_CLUSTER_PASSWORD_FILE={users_file}\n")
    os.chown(env_file, USER_UID, USER_UID)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG")}
    env.update(images)
    stack = Project(PROJECT, root, env)
    cluster = Project(CLUSTER_PROJECT, root, {**env, "EXT_DB_USER": DB_USER, "EXT_DB_NAME": DB_NAME,
                                              "EXT_PASSWORD_FILE": str(ysql_file), "STACK_NETWORK": NETWORK},
                      files=(root / "tests" / "compose" / "external_cluster.yml",))

    def down():
        take_down(engine, [(cluster, ()), (stack, ("--profile", "bench"))], projects=(CLUSTER_PROJECT, PROJECT))

    down()  # what an earlier, interrupted run left
    try:
        # 1. The target files, through the service with nothing else started.
        p = stack("run", "--rm", "--no-deps", "ybbench", "targets", *TARGETS_ARGS,
                  "--out", "prometheus/targets/external", timeout=900)
        assert not stack.containers() or all(service_of(c) == "ybbench" for c in stack.containers()), p.stdout
        # 2. The one command.
        up = stack("up", "-d", "--wait", "--wait-timeout", "300", timeout=900)
        # Your cluster, there all along in life; here it joins the network `up` made.
        cluster("up", "-d", "--wait", "--wait-timeout", "180", timeout=600)
        yield {"stack": stack, "cluster": cluster, "root": root, "token": token, "users_file": users_file,
               "targets_out": p.stdout, "up": up, "images": images}
    finally:
        down()
        engine.stop()


@pytest.fixture(scope="module")
def prom(ext):
    return PromApi(f"http://{ext['stack'].address('prometheus')}:9090")


def cluster_sql(ext, query: str) -> str:
    """psql in the cluster's own PostgreSQL, on its Unix socket (trusted locally, as upstream's image)."""
    return ext["cluster"]("exec", "-T", "ysql", "psql", "-U", DB_USER, "-d", DB_NAME, "-XAtc", query).stdout.strip()


@pytest.fixture(scope="module")
def service_run(ext):
    """The README's command through the service, against the cluster."""
    tid = f"ext{uuid.uuid4().hex[:8]}"
    p = ext["stack"]("run", "--rm", "ybbench", "run", "sql-inserts", "--testid", tid, "--quiet",
                     "--set", "VUS=2", "--set", "DURATION=8s", check=False, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return tid, p


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
    written = sorted(folder.glob("*.json"))
    assert [p.name for p in written] == ["node.json", "postgres.json", "prometheus.json", "yugabytedb.json"]
    assert {p.stat().st_uid for p in written} == {USER_UID}
    (prometheus,) = [c for c in ext["stack"].containers() if service_of(c) == "prometheus"]
    mounts = {m["Destination"]: m["Source"] for m in prometheus["Mounts"]}
    assert mounts["/etc/prometheus/targets"] == str(folder)

    def all_up():
        got: dict[tuple, set] = {}
        for t in prom.targets():
            assert t["health"] == "up", (t["scrapeUrl"], t["health"], t["lastError"])
            assert t["labels"]["node_prefix"] == "mine", t["labels"]
            got.setdefault((t["labels"]["job"], t["labels"].get("export_type")), set()).add(t["labels"]["instance"])
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
    assert [c["name"] for c in disks] == ["room disk ext-node:9100 /etc/hosts"], disks  # one filesystem, one check
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
    writes the PGPASSFILE, is refused; with it, the run and doctor pass
    (above)."""
    probe = ("import psycopg\n"
             "try:\n"
             f"    psycopg.connect(host='ext-tserver', port=5433, user={DB_USER!r}, dbname={DB_NAME!r}, "
             "connect_timeout=10)\n"
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
    assert (mount["Type"], mount["Source"], mount["RW"]) == ("bind", str(ext["users_file"]), False)
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
