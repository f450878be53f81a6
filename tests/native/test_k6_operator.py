"""deploy/k6-operator/: the TestRun and its ConfigMap, checked without
Kubernetes (none runs here): the manifest against k6-operator's own CRD
schema (from the Go module proxy) with unknown fields refused as kubectl's
strict validation does; every workload archived with the manifest's knobs
and put through the operator initializer's own commands; and the runner
pods' command lines, as k6-operator builds them, replayed against the test
PostgreSQL and Prometheus."""

from __future__ import annotations

import base64
import copy
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
import uuid
from pathlib import Path

import jsonschema
import pytest
import yaml

from ybbench.core.catalog import KNOBS, workloads
from ybbench.run import k6_operator

from ..support import shared
from ..support.stack import BIN, REPO, free_port, wait_until

# The newest k6-operator release the Go module proxy here serves (v0.0.20
# and later answer 403 "not available").
K6_OPERATOR = "github.com/grafana/k6-operator@v0.0.19"
CRD = "config/crd/bases/k6.io_testruns.yaml"
# Read workloads need the load's keys; ycsb-analytic runs RUNS (5) queries, one per VU at most.
WORKLOAD_KNOBS = {w: {"KEY_PREFIX": "k8s-load-1", "MAX_WRITTEN_KEY": "1000000"} for w in
                  ("sql-selects", "sql-updates", "kv-read-heavy", "kv-recent-read-heavy", "kv-random-read")}
WORKLOAD_KNOBS["ycsb-analytic"] = {"VUS": "1"}
WORKLOAD_KNOBS["tpcc"] = {"WAREHOUSES": "100", "C_LOAD": "42"}
# The knobs the manifest sets, written out here: each goes into the archive
# (`k6 archive -e`), which fixes the load shape; its K6_* settings and the
# password do not. (GOGC and GOMEMLIMIT are knobs of the k6 process.)
MANIFEST_KNOBS = ("GOGC", "GOMEMLIMIT", "DB_DRIVER", "YBBENCH_GO_HELPERS", "YSQL_NODES", "DB_USER", "DB_NAME",
                  "VUS", "DURATION")
# Environment names a runner may set besides the workload knobs.
K6_ENV = {"K6_PROMETHEUS_RW_SERVER_URL", "K6_PROMETHEUS_RW_PUSH_INTERVAL",
          "K6_FEATURES", "K6_NO_USAGE_REPORT", "K6_AUTO_EXTENSION_RESOLUTION",
          "PGPASSWORD"}


@pytest.fixture(scope="module")
def testrun() -> dict:
    return k6_operator.load()


@pytest.fixture(scope="module")
def crd_schema() -> dict:
    """TestRun's openAPIV3Schema from k6-operator's module (native/build.sh
    downloads it; read here offline), or a skip naming why."""
    try:
        p = subprocess.run(["go", "mod", "download", "-json", K6_OPERATOR], capture_output=True, text=True,
                           timeout=300, cwd="/", env=dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off"))
        info = json.loads(p.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        info = {"Error": f"the k6-operator CRD needs `go mod download {K6_OPERATOR}`: {e}"}
    shared.need_tool("Dir" in info, f"{K6_OPERATOR} is not in the Go module cache (native/build.sh downloads it, "
                                    f"if the proxy serves it): {info.get('Error')}")
    crd = yaml.safe_load((Path(info["Dir"]) / CRD).read_text())
    assert crd["spec"]["group"] == "k6.io" and crd["spec"]["names"]["kind"] == "TestRun"
    return next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")["schema"]["openAPIV3Schema"]


def unknown_fields(doc, schema: dict, path: str = "") -> list[str]:
    """Fields the schema does not name: the API server drops them silently,
    and kubectl's strict field validation (its default) refuses them."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(doc, dict) and "properties" in schema:
        out = []
        for k, v in doc.items():
            if k not in schema["properties"]:
                out.append(f"{path}.{k}")
            else:
                out += unknown_fields(v, schema["properties"][k], f"{path}.{k}")
        return out
    if isinstance(doc, list) and "items" in schema:
        return [f for i, v in enumerate(doc) for f in unknown_fields(v, schema["items"], f"{path}[{i}]")]
    return []


def problems(doc: dict, schema: dict) -> list[str]:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    return errors + [f"{f}: unknown field" for f in unknown_fields(doc, schema)]


def test_testrun_is_valid_against_the_operator_crd(testrun, crd_schema):
    assert problems(testrun, crd_schema) == []
    # The checks can fail: a wrong type, a misspelt field, a missing name.
    bad = copy.deepcopy(testrun)
    bad["spec"]["parallelism"] = "four"
    bad["spec"]["runner"]["imagePullPolicys"] = "Always"
    del bad["spec"]["script"]["configMap"]["name"]
    found = "\n".join(problems(bad, crd_schema))
    assert "'four' is not of type 'integer'" in found
    assert ".spec.runner.imagePullPolicys: unknown field" in found
    assert "'name' is a required property" in found


def compose_k6_image() -> str:
    """The tag docker compose gives the image built from compose/k6/."""
    env = dict(re.findall(r"(?m)^([A-Z0-9_]+)=(.*)$", (REPO / "compose" / ".env").read_text()))
    compose = yaml.safe_load((REPO / "compose" / "docker-compose.yml").read_text())
    image = compose["x-k6"]["image"]
    return re.sub(r"\$\{([A-Z0-9_]+):\?\}", lambda m: env[m.group(1)], image)


def test_testrun_runs_our_image_with_remote_write_and_the_password_from_a_secret(testrun):
    spec = testrun["spec"]
    assert testrun["apiVersion"] == "k6.io/v1alpha1" and testrun["kind"] == "TestRun"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?", testrun["metadata"]["name"])
    assert spec["parallelism"] > 1
    assert spec["script"]["configMap"] == {"name": "ybbench-archive", "file": "archive.tar"}
    assert spec["runner"]["image"].endswith(compose_k6_image()), (spec["runner"]["image"], compose_k6_image())
    # k6-operator splits arguments on single spaces: no quoting survives.
    args = spec["arguments"].split(" ")
    assert "" not in args and not any(q in spec["arguments"] for q in "'\"")
    assert re.fullmatch(r"testid=[A-Za-z0-9_.-]{1,64}", args[args.index("--tag") + 1])
    assert args[args.index("--out") + 1] == "experimental-prometheus-rw"
    env = k6_operator.literal_env(testrun)
    assert env["K6_PROMETHEUS_RW_SERVER_URL"].endswith("/api/v1/write")
    # The runner image's k6 is v2 (the compose image): native histograms as its feature, the old variable absent
    # (k6 v2 warns about it on every run: test_k6_v2_features.py).
    assert env["K6_FEATURES"] == "native-histograms" and "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM" not in env
    assert env["K6_NO_USAGE_REPORT"] == "true"
    assert env["K6_AUTO_EXTENSION_RESOLUTION"] == "false"
    assert set(env) <= set(KNOBS) | K6_ENV, set(env) - set(KNOBS) - K6_ENV
    entries = {e["name"]: e for e in spec["runner"]["env"]}
    assert entries["PGPASSWORD"] == {"name": "PGPASSWORD",
                                     "valueFrom": {"secretKeyRef": {"name": "ybbench-db", "key": "password"}}}
    secret_like = [n for n in entries if re.search(r"PASS|SECRET|TOKEN", n)]
    assert all("value" not in entries[n] for n in secret_like), "a literal secret in the manifest"


def run_initializer(tar: Path, testrun: dict, tmp_path: Path, env: dict) -> dict:
    """What k6-operator's initializer pod runs (pkg/resources/jobs/initializer.go):
    `k6 archive <script> -O <tmp> <archive args>`, then `k6 inspect
    --execution-requirements`, failing on any level=error line."""
    again = tmp_path / f"{tar.name}.archived.tar"
    archive = subprocess.run([str(BIN / "k6"), "archive", str(tar), "-O", str(again),
                              *k6_operator.archive_args(testrun["spec"]["arguments"])],
                             env=env, capture_output=True, text=True, timeout=120)
    inspect = subprocess.run([str(BIN / "k6"), "inspect", "--execution-requirements", str(again)],
                             env=env, capture_output=True, text=True, timeout=120)
    logs = archive.stderr + inspect.stderr
    assert archive.returncode == inspect.returncode == 0 and "level=error" not in logs, logs
    return json.loads(inspect.stdout)


def with_env(testrun: dict, **env) -> dict:
    t = copy.deepcopy(testrun)
    runner_env = [e for e in t["spec"]["runner"]["env"] if e["name"] not in env]
    t["spec"]["runner"]["env"] = runner_env + [{"name": k, "value": str(v)} for k, v in env.items()]
    return t


@pytest.mark.parametrize("workload", workloads())
def test_every_workload_archives_and_passes_the_initializer(binaries, testrun, tmp_path, workload):
    t = with_env(testrun, **WORKLOAD_KNOBS.get(workload, {}))
    secret = f"pw-{uuid.uuid4().hex}"
    env = dict(os.environ, PGPASSWORD=secret, **k6_operator.literal_env(t))
    tar = tmp_path / "archive.tar"
    k6_operator.make_archive(str(BIN / "k6"), workload, t, tar, env=env)
    assert secret.encode() not in tar.read_bytes(), "the password went into the archive"
    req = run_initializer(tar, t, tmp_path, env)
    knobs = k6_operator.literal_env(t)
    # The archive carries the manifest's load shape, which k6 takes from it.
    assert req["maxVUs"] == int(knobs["VUS"]), req
    meta = json.load(tarfile.open(tar).extractfile("metadata.json"))
    assert meta["options"]["tags"]["testid"] == re.search(r"testid=(\S+)", t["spec"]["arguments"])[1]
    # Every knob of the manifest, and this workload's, with the manifest's values: no more, no fewer.
    manifest = {e["name"]: e["value"] for e in t["spec"]["runner"]["env"] if "value" in e}
    assert meta["env"] == {**{k: manifest[k] for k in MANIFEST_KNOBS}, **WORKLOAD_KNOBS.get(workload, {})}


def test_configmap_is_what_kubectl_create_configmap_writes(binaries, testrun, tmp_path):
    out = subprocess.run([sys.executable, "-m", "ybbench.run.k6_operator", "sql-inserts", "--k6", str(BIN / "k6")],
                         cwd=REPO, capture_output=True, text=True, timeout=120, env=dict(os.environ, PGPASSWORD="x"))
    assert out.returncode == 0, out.stderr
    cm = yaml.safe_load(out.stdout)
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    assert cm["metadata"]["name"] == testrun["spec"]["script"]["configMap"]["name"]
    assert list(cm["binaryData"]) == [testrun["spec"]["script"]["configMap"]["file"]]
    tar = base64.b64decode(cm["binaryData"]["archive.tar"])
    names = tarfile.open(fileobj=io.BytesIO(tar)).getnames()
    assert "metadata.json" in names and any(n.endswith("k6-scripts/lib/run.js") for n in names)
    assert len(out.stdout) < k6_operator.CONFIGMAP_LIMIT
    bad = subprocess.run([sys.executable, "-m", "ybbench.run.k6_operator", "no-such-workload", "--k6", str(BIN / "k6")],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown workload" in bad.stderr and not bad.stdout


def runner_command(tar: Path, testrun: dict, index: int, port: int) -> list[str]:
    """A runner pod's command as k6-operator v0.0.19 builds it
    (pkg/resources/jobs/runner.go), listening on loopback instead of 0.0.0.0:6565."""
    n = testrun["spec"]["parallelism"]
    cut = lambda i: "0" if i == 0 else "1" if i == n else f"{i}/{n}"  # noqa: E731
    sequence = ",".join(["0", *(f"{i}/{n}" for i in range(1, n)), "1"])
    return [str(BIN / "k6"), "run", "--quiet", f"--execution-segment={cut(index - 1)}:{cut(index)}",
            f"--execution-segment-sequence={sequence}", *testrun["spec"]["arguments"].split(" "), str(tar),
            f"--address=127.0.0.1:{port}", "--paused", "--tag", f"instance_id={index}",
            "--tag", f"job_name={testrun['metadata']['name']}-{index}"]


def start(port: int) -> None:
    """The starter pod's request (pkg/resources/containers/curl_start.go)."""
    body = json.dumps({"data": {"attributes": {"paused": False}, "id": "default", "type": "status"}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/status", data=body, method="PATCH",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).close()


def serves(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/status", timeout=2).close()
        return True
    except OSError:
        return False


def test_runners_replayed_from_the_testrun_write_each_key_once(binaries, postgres, prometheus, testrun, tmp_path):
    """The manifest's runners, short and pointed here: the archive from the
    ConfigMap, the paused runners started as the starter does, counted in
    Prometheus by testid (the way a cluster run is read)."""
    testid, table = f"k8s{uuid.uuid4().hex[:8]}", f"k8s_{uuid.uuid4().hex[:6]}"
    t = with_env(testrun, YSQL_NODES=f"127.0.0.1:{postgres.port}", DB_USER=postgres.user, DB_NAME=postgres.database,
                 VUS=4, DURATION="2s", TABLE=table, K6_PROMETHEUS_RW_SERVER_URL=f"{prometheus.url}/api/v1/write",
                 K6_PROMETHEUS_RW_PUSH_INTERVAL="1s")
    t["spec"]["arguments"] = re.sub(r"testid=\S+", f"testid={testid}", t["spec"]["arguments"])
    env = dict(os.environ, **k6_operator.literal_env(t), PGPASSWORD=postgres.password)  # the Secret's value
    (tmp_path / "testrun.yaml").write_text(yaml.safe_dump(t))
    out = subprocess.run([sys.executable, "-m", "ybbench.run.k6_operator", "sql-inserts", "--k6", str(BIN / "k6"),
                          "--testrun", str(tmp_path / "testrun.yaml")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    tar = tmp_path / "archive.tar"
    tar.write_bytes(base64.b64decode(yaml.safe_load(out)["binaryData"]["archive.tar"]))
    n = t["spec"]["parallelism"]
    ports = [free_port() for _ in range(n)]
    runners = [subprocess.Popen(runner_command(tar, t, i + 1, ports[i]), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for i in range(n)]
    try:
        for p in ports:
            wait_until(lambda p=p: serves(p), "a paused runner's REST API", timeout=60)
        assert int(postgres.query(f"SELECT count(*) FROM pg_tables WHERE tablename = '{table}'")) == 0, \
            "a paused runner ran its test"
        for p in ports:
            start(p)
        logs = [r.communicate(timeout=120)[0] for r in runners]
    finally:
        for r in runners:
            r.kill() if r.poll() is None else None
    assert [r.returncode for r in runners] == [0] * n, logs
    # Each runner's own count, as Prometheus has it by instance_id; k6
    # stripes the test's iterations over the n equal segments, so runner i
    # wrote iterations i-1, i-1+n, i-1+2n, ...: the exact keys the table must
    # hold (sql-inserts: <prefix>:<iterationInTest>), worked out here.
    per_runner = prometheus.query(
        f'sum by (instance_id) (last_over_time(k6_iterations_total{{testid="{testid}"}}[5m]))')
    counts = {int(x["metric"]["instance_id"]): int(float(x["value"][1])) for x in per_runner}
    assert sorted(counts) == list(range(1, n + 1)) and all(counts.values()), counts
    prefix = k6_operator.literal_env(t).get("KEY_PREFIX", testid)
    expected = {f"{prefix}:{i - 1 + n * m}" for i, c in counts.items() for m in range(c)}
    held = postgres.query(f"SELECT k FROM {table}").splitlines()
    assert len(held) == len(expected) and set(held) == expected, \
        (sorted(set(held) - expected)[:5], sorted(expected - set(held))[:5])
