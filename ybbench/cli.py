"""The `ybbench` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import run as run_mod
from .errors import UserError
from .targets import YB_EXPORTS, Cluster, parse_hosts


def _targets(a: argparse.Namespace) -> int:
    tservers = parse_hosts("--tservers", a.tservers, YB_EXPORTS["tserver"][1]) if a.tservers else []
    hosts = [t.rsplit(":", 1)[0] for t in tservers]

    def derived(opt: str, value: str | None, kind: str) -> list[str]:
        # YSQL and YCQL metrics live on the tserver hosts unless given.
        if value is not None:
            return parse_hosts(opt, value, YB_EXPORTS[kind][1])
        return [f"{h}:{YB_EXPORTS[kind][1]}" for h in hosts]

    cluster = Cluster(
        name=a.cluster,
        yb={
            "master": parse_hosts("--masters", a.masters, YB_EXPORTS["master"][1]) if a.masters else [],
            "tserver": tservers,
            "ysql": derived("--ysql", a.ysql, "ysql"),
            "ycql": derived("--ycql", a.ycql, "ycql"),
        },
        node_exporters=parse_hosts("--node-exporters", a.node_exporters, 9100) if a.node_exporters else [],
        postgres_exporters=parse_hosts("--postgres-exporters", a.postgres_exporters, 9187) if a.postgres_exporters else [],
        prometheus=parse_hosts("--prometheus", a.prometheus, 9090) if a.prometheus else [],
    )
    for p in cluster.write(Path(a.out)):
        print(p)
    return 0


def _run(a: argparse.Namespace) -> int:
    r = run_mod.run(
        a.workload, testid=a.testid, results=Path(a.results), prometheus=a.prometheus, loki=a.loki, settings=a.set,
        quiet=a.quiet
    )
    print(f"results: {r.folder}")
    return r.exit_code


def _doe(a: argparse.Namespace) -> int:
    # numpy, scipy and matplotlib load only for this command.
    from .doe_report import command

    return command(a.design, a.out, a.alpha)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ybbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("targets", help="write Prometheus target files for a cluster")
    t.add_argument("--cluster", required=True, help="cluster name (the node_prefix label)")
    t.add_argument("--masters", help="yb-master hosts, host[:7000],...")
    t.add_argument("--tservers", help="yb-tserver hosts, host[:9000],...")
    t.add_argument("--ysql", help="YSQL metrics, host[:13000],... (default: tserver hosts)")
    t.add_argument("--ycql", help="YCQL metrics, host[:12000],... (default: tserver hosts)")
    t.add_argument("--node-exporters", help="node_exporter hosts, host[:9100],...")
    t.add_argument("--postgres-exporters", help="postgres_exporter hosts, host[:9187],...")
    t.add_argument("--prometheus", help="Prometheus itself, host[:9090]")
    t.add_argument("--out", required=True, help="folder for the target files (prometheus/targets/<name>)")
    t.set_defaults(func=_targets)

    r = sub.add_parser("run", help="run one workload with k6 and keep its results")
    r.add_argument("workload", help=f"one of: {', '.join(run_mod.workloads())}")
    r.add_argument("--testid", help="run id (default: <workload>-<time>)")
    r.add_argument("--results", default=str(run_mod.REPO / "results"), help="results folder")
    r.add_argument("--prometheus", help="Prometheus URL for k6 remote write, e.g. http://127.0.0.1:9090")
    r.add_argument("--loki", help="Loki URL to keep the run's k6 log, e.g. http://127.0.0.1:3100")
    r.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="a workload knob")
    r.add_argument("--quiet", action="store_true", help="keep k6's output in the log only")
    r.set_defaults(func=_run)

    d = sub.add_parser("doe", help="a two-level (fractional) factorial design: aliases, effects, charts")
    d.add_argument("design", help="the design file (YAML), e.g. experiments/seed-002-esle.yaml")
    d.add_argument("--out", help="a new folder for results.json and the charts (written whole or not at all)")
    d.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level of the intervals (0.05)")
    d.set_defaults(func=_doe)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as e:
        print(f"ybbench: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
