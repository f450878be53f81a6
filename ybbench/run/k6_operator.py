"""The ConfigMap that carries a workload to k6-operator, as a `k6 archive`.

    python3 -m ybbench.run.k6_operator WORKLOAD [--testrun deploy/k6-operator/testrun.yaml] > configmap.yaml
    kubectl apply -f configmap.yaml && kubectl apply -f deploy/k6-operator/testrun.yaml

The archive holds the script, lib/ and the options. k6 takes a test's
options (the scenario: VUS, DURATION, load model) from the archive, not from
the runner pods' environment, so the archive is made with the TestRun's own
knobs (`k6 archive -e NAME=value`); the runners' environment then agrees
with it, and still supplies the password. The output is what `kubectl
create configmap NAME --from-file=archive.tar --dry-run=client -o yaml`
writes.
"""

from __future__ import annotations

import argparse
import base64
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from ybbench.core.catalog import KNOBS, REPO, SCRIPTS, SECRET_NAMES, workloads
from ybbench.core.errors import UserError
from ybbench.run.k6_process import k6_binary

TESTRUN = REPO / "deploy" / "k6-operator" / "testrun.yaml"
CONFIGMAP_LIMIT = 1024 * 1024  # bytes: Kubernetes refuses a larger ConfigMap


def load(path: Path = TESTRUN) -> dict:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise UserError(f"{path}: {e}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "TestRun":
        raise UserError(f"{path}: not a k6-operator TestRun")
    return doc


def literal_env(testrun: dict) -> dict[str, str]:
    """The runners' environment variables that have a value in the file."""
    return {e["name"]: e["value"] for e in testrun["spec"]["runner"].get("env", []) if "value" in e}


def archive_knobs(testrun: dict) -> dict[str, str]:
    """The workload knobs of the TestRun, for `k6 archive -e`; never a secret."""
    return {k: v for k, v in literal_env(testrun).items() if k in KNOBS and not SECRET_NAMES.search(k)}


def archive_args(arguments: str) -> list[str]:
    """The TestRun's arguments that k6-operator passes to `k6 archive` in its
    initializer (pkg/types/k6cli.go ParseCLI, v0.0.19): all but --out/-o,
    --linger/-l, --no-usage-report and --verbose/-v, with their values."""
    args = arguments.split(" ")
    out, i = [], 0
    while i < len(args):
        a = args[i].strip()
        if not a or not a.startswith("-"):
            i += 1
            continue
        end = i + 1
        while end < len(args) and not args[end].strip().startswith("-"):
            end += 1
        if a not in ("-o", "--out", "-l", "--linger", "--no-usage-report", "--verbose", "-v"):
            out += [x.strip() for x in args[i:end] if x.strip()]
        i = end
    return out


def make_archive(k6: str, workload: str, testrun: dict, out: Path, env: dict[str, str] | None = None) -> None:
    """`k6 archive` of a workload with the TestRun's knobs and arguments."""
    if workload not in workloads():
        raise UserError(f"unknown workload {workload!r}; known: {', '.join(workloads())}")
    cmd = [k6, "archive", "--quiet"]
    for k, v in archive_knobs(testrun).items():
        cmd += ["-e", f"{k}={v}"]
    cmd += [*archive_args(testrun["spec"].get("arguments", "")), "-O", str(out), str(SCRIPTS / f"{workload}.js")]
    # k6 archive keeps only the -e variables, never the environment's.
    p = subprocess.run(cmd, env=env or dict(os.environ), capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise UserError(f"k6 archive {workload} failed (exit {p.returncode}): {p.stdout}{p.stderr}".strip())


def configmap(name: str, file: str, archive: bytes) -> str:
    """The ConfigMap as kubectl writes it for --from-file (binary: binaryData)."""
    doc = {"apiVersion": "v1", "binaryData": {file: base64.b64encode(archive).decode()}, "kind": "ConfigMap",
           "metadata": {"creationTimestamp": None, "name": name}}
    if len(archive) * 4 // 3 > CONFIGMAP_LIMIT:
        raise UserError(f"the archive is {len(archive)} bytes: over a ConfigMap's 1 MiB once base64-encoded")
    return yaml.safe_dump(doc, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m ybbench.run.k6_operator", description=__doc__.split("\n\n")[0])
    p.add_argument("workload", help=f"one of: {', '.join(workloads())}")
    p.add_argument("--testrun", default=str(TESTRUN), help="the TestRun manifest whose knobs the archive takes")
    p.add_argument("--k6", help="the k6 that archives (default: $K6 or k6 on PATH; it needs xk6-sql)")
    a = p.parse_args(argv)
    try:
        testrun = load(Path(a.testrun))
        source = testrun["spec"]["script"]["configMap"]
        with tempfile.TemporaryDirectory() as tmp:
            tar = Path(tmp) / "archive.tar"
            make_archive(a.k6 or k6_binary(), a.workload, testrun, tar)
            sys.stdout.write(configmap(source["name"], source.get("file", "archive.tar"), tar.read_bytes()))
    except UserError as e:
        print(f"ybbench.run.k6_operator: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
