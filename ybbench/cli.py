"""ybbench: benchmarks for YugabyteDB and PostgreSQL-wire databases with k6,
watched through Prometheus, Loki and Grafana.

examples:
  ybbench run sql-inserts --vus 16 --duration 60s --testid first
  ybbench run sql-selects --keys-from first --threshold 'select:p(99)<5ms' --report
  ybbench ab sql-selects --base VUS=8 --other VUS=16 --repeat 5
  ybbench compare first second          ybbench doctor
  ybbench run sql-inserts -- --verbose      (after --: k6 run's own flags)

exit codes: 0 done; 1 a gate (compare/history --fail-on) or doctor failed;
2 bad input, or a gate that cannot judge; 99 a threshold crossed or a SQL
error (as k6); any other: k6's own exit code, passed through.
docs: README.md and docs/; flags and exit codes: docs/cli.md."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from pathlib import Path

from ybbench.core import catalog, history_record, history_store
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.doctor.settings import GRAFANA_PASSWORD_FILE, PASSWORD_FILE_VAR
from ybbench.run import k6run
from ybbench.run.scrape_access import KINDS, SECRETS_DIR, Access
from ybbench.run.targets import YB_EXPORTS, Cluster, parse_hosts



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
        access={k: Access(k, scheme=getattr(a, f"{k}_scheme"), ca_file=getattr(a, f"{k}_ca_file") or "",
                          basic_user=getattr(a, f"{k}_basic_auth") or "", bearer=getattr(a, f"{k}_bearer_token"),
                          secret_file=getattr(a, f"{k}_secret_file") or "") for k in KINDS},
    )
    for p in cluster.write(Path(a.out)):
        print(p)
    return 0


def _run(a: argparse.Namespace) -> int:
    before, refused = None, ()  # `except ()` catches nothing: no doctor, nothing refused
    if a.doctor:
        from ybbench.doctor import runner, settings

        s = settings.from_args(a.set, a.prometheus, a.loki, a.grafana,
                               a.grafana_password_file or settings.default_password_file(),
                               history=history_store.location(Path(a.results), a.history))
        before, refused = runner.before_run(s, report_exprs()), runner.Refused
    try:
        r = k6run.run(
            a.workload, testid=a.testid, results=Path(a.results), prometheus=a.prometheus, loki=a.loki,
            settings=knob_flags(a), quiet=a.quiet, generators=a.generators, events=a.event, before=before,
            labels=history_record.parse_labels(a.label),
            warmup_s=seconds("--warmup", a.warmup, zero=True) if a.warmup else 0,
            thresholds=a.threshold, keys_from=a.keys_from, k6_args=a.k6_args,
        )
    except refused as e:
        print(f"ybbench: run not started: doctor failed: {e}. Fix it and run again; to run anyway, "
              "leave out --doctor", file=sys.stderr)
        return 1
    print(f"results: {r.folder}")
    _limits(r.folder, a.prometheus)
    _record(r.folder, Path(a.results), a.history)
    if a.report:
        # Reached with k6's exit 0 or 99 (thresholds crossed): a whole run either way.
        from ybbench.report.page import report

        print(f"report: {report([r.testid], Path(a.results), a.prometheus, None, None)}")
    return r.exit_code


def knob_flags(a: argparse.Namespace) -> list[str]:
    """--set's list with k6's own flags as their knobs: --vus N is VUS, --duration D
    DURATION, --rate R the open model at R ops/s (--vus its pre-allocated VUs).
    A flag and a --set of the same knob that disagree are refused."""
    flags = {}
    if a.vus is not None:
        flags["VUS"] = ("--vus", str(a.vus))
    if a.duration is not None:
        seconds("--duration", a.duration)
        flags["DURATION"] = ("--duration", a.duration)
    if a.rate is not None:
        flags["LOAD_MODEL"] = ("--rate", "constant-arrival-rate")
        flags["RATE"] = ("--rate", str(a.rate))
    given = catalog.parse_settings(a.set)
    for knob, (flag, value) in flags.items():
        if knob in given and given[knob] != value:
            raise UserError(f"{flag} and --set {knob}={given[knob]}: give one")
    return [*a.set, *(f"{k}={v}" for k, (_, v) in flags.items() if k not in given)]


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: a whole number, 1 or more")
    return n


def _version() -> str:
    """ybbench's version, the k6 it would run and that k6's extensions."""
    import ybbench
    from ybbench.run import k6_process, versions

    lines = [f"ybbench {ybbench.__version__}"]
    try:
        k6 = k6_process.k6_binary()
    except UserError as e:
        return "\n".join([*lines, f"k6: {e}"])
    found = versions.k6_versions(k6)
    lines.append(f"k6 {found.pop('k6')} ({k6})" if "k6" in found else f"k6: {k6} does not answer `k6 version`")
    lines += [f"  {module}: {what}" for module, what in sorted(found.items())]
    return "\n".join(lines)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _limits(folder: Path, prometheus: str | None) -> None:
    """What limited the run, kept as limits.json and said in its last lines
    (analysis/limits.py); a Prometheus that stopped answering is said, and
    the run's folder stays whole."""
    from ybbench.analysis import limits

    try:
        doc = limits.record(folder, prometheus)
    except UserError as e:
        print(f"ybbench: {e}", file=sys.stderr)
        return
    except Exception as e:  # a fault of the analysis must not cost a finished run its exit code
        if os.environ.get("YBBENCH_CHECK_WRITES") == "1":
            raise  # the tests' strict mode (core/formats.py): a fault here fails them
        print(f"ybbench: run {folder.name} is kept in {folder}, but its limits were not read: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return
    print(f"limits: {doc['verdict']['text']} ({folder / limits.FILE})")


def _limits_command(a: argparse.Namespace) -> int:
    from ybbench.analysis import limits
    from ybbench.core import run_folder

    folder = run_folder.load(Path(a.results), a.testid).folder
    doc = limits.record(folder, a.prometheus)
    print("\n".join(limits.lines(doc)))
    return 0


def _record(folder: Path, results: Path, history: str | None) -> None:
    """Keep a finished run in the history store; a store that cannot take it
    is said, and the run (whole in its folder) keeps its exit code."""
    said = history_record.keep(folder, results, history)
    if said:
        print(f"ybbench: {said}", file=sys.stderr)


def _history(a: argparse.Namespace) -> int:
    from ybbench.analysis import history

    if a.history_command == "import":
        return history.import_command(a.results, a.history, a.folders)
    doc = history.analyse(a.results, a.history, a.select, a.order_by, a.fail_on, a.min_change)
    if doc is None:
        return 0
    # The analysis writes history.json, the report draws history.html: the page sits above the analysis.
    from ybbench.report import history_page

    folder = history.folder_of(a.results, a.out)
    charts = history_page.charts(doc)
    history.write(doc, folder)
    history_page.write(folder, doc, charts, a.png)
    return history.finish(doc, folder, a.fail_on)


def _doe(a: argparse.Namespace) -> int:
    # numpy, scipy and matplotlib load only for this command.
    from ybbench.experiments.doe.analysis import command

    if a.run or a.resume:
        from ybbench.experiments.doe.runs import command as run_design

        return run_design(a)
    given = [o for o, v in (("--id", a.id), ("--set", a.set), ("--prometheus", a.prometheus), ("--loki", a.loki),
                            ("--results", a.results)) if v]
    if given:
        raise UserError(f"{', '.join(given)}: only with --run (or --resume)")
    return command(a.design, a.out, a.alpha)


def _scale(a: argparse.Namespace) -> int:
    # numpy, scipy and matplotlib load only for this command.
    from ybbench.experiments.scale import analysis as scale_report

    if Path(a.runs_dir).is_file():
        raise UserError(f"scale --results {a.runs_dir}: a file; --results is the results folder, as everywhere: "
                        "give throughput measured elsewhere as --throughput FILE")
    if (a.throughput is None) == (a.clusters is None) or (a.throughput is not None and a.workload is not None) \
            or (a.clusters is not None and a.workload is None):
        raise UserError("scale: give either --throughput FILE (throughput measured elsewhere) "
                        "or WORKLOAD --clusters FILE (run the workload once per cluster)")
    if a.throughput is not None:
        return scale_report.from_results(a.throughput, a.out, a.alpha)
    return scale_report.from_runs(a.workload, a.clusters, vus_per_node=a.vus_per_node, duration=a.duration,
                                  settings=a.set, runs_dir=Path(a.runs_dir), prometheus=a.prometheus,
                                  testid=a.testid, quiet=a.quiet, out=a.out, alpha=a.alpha)


def _sweep(a: argparse.Namespace) -> int:
    from ybbench.experiments.sweep.runs import command

    return command(a)


def _report(a: argparse.Namespace) -> int:
    from ybbench.report.page import command

    return command(a.testid, a.results, a.prometheus, a.out, a.png)


def _compare(a: argparse.Namespace) -> int:
    return compare_command(a.base, a.other, a.results, a.prometheus, a.out, a.alpha, a.allow_different_workloads,
                           a.png, a.fail_on, a.history)


def compare_command(base: str, others: list[str], results: str, prometheus: str | None, out: str | None,
                    alpha: float, allow_different: bool, png_dir: str | None, fail_on: list[str],
                    history: str | None) -> int:
    """`ybbench compare`: the analysis (analysis/compare.py) finds compare.json's document, the report draws
    compare.html and its charts from it (report/compare_page.py), then the analysis writes the folder."""
    # numpy, scipy and matplotlib load only for this command.
    from ybbench.analysis import compare
    from ybbench.report import compare_page, seed_charts

    found = compare.analyse(base, others, results, prometheus, out, alpha, allow_different, png_dir, fail_on, history,
                            seed_charts.rate_chart)
    return compare.write(found, *compare_page.render(found))


def _ab(a: argparse.Namespace) -> int:
    import time

    from ybbench.analysis import compare, compare_gate
    from ybbench.experiments import ab_rule
    from ybbench.experiments.ab import command

    compare_gate.parse(list(a.fail_on))  # a bad rule before any load
    resolve = ab_resolve(a)
    state: dict = {}

    def runs_to(n: int):
        """The ab's runs up to n a side (A B B A ...), and their values; None when one failed."""
        if state:
            a.id, a.resume = None, state["plan"].id
        a.repeat = n
        state["plan"], state["code"] = command(a)
        if state["code"] != 0 or not resolve:
            return None
        return compare.ab_values(state["plan"].results, state["plan"].id, a.alpha)

    if resolve:
        # Runs too far apart for the change asked for: more A B B A runs, as many as their spread says.
        try:
            ab_rule.resolve(runs_to, a.repeat, a.max_repeat, resolve, a.alpha,
                            say=lambda line: print(f"ab {state['plan'].id}: {line}", flush=True))
        except ab_rule.NoSpread as e:
            raise UserError(f"ab {state['plan'].id}: {e}") from None
    else:
        runs_to(a.repeat)
    plan, code = state["plan"], state["code"]
    out = plan.folder / time.strftime("compare-%Y%m%dT%H%M%S", time.gmtime())
    got = compare_command(plan.id, [], str(plan.results), plan.prometheus, str(out), a.alpha, False, None,
                          a.fail_on, a.history)
    return got or code


def ab_resolve(a: argparse.Namespace) -> float | None:
    """The change ab adds runs to resolve (a fraction), or None: --resolve,
    else the default without --repeat (a --repeat alone is a fixed count);
    sets a.repeat to where it starts. Checked before any load."""
    from ybbench.experiments import ab as ab_defaults

    fixed = a.repeat is not None
    a.repeat = a.repeat if fixed else ab_defaults.REPEAT
    if a.resolve in (None, "") and fixed or a.resolve in ("off", "0", "0%"):
        return None
    text = a.resolve or ab_defaults.RESOLVE
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", text)
    if not m or not 0 < float(m[1]) < 100:
        raise UserError(f"--resolve {text}: a change in percent between 0 and 100, e.g. 5%, or off")
    if a.max_repeat < a.repeat:
        raise UserError(f"--max-repeat {a.max_repeat}: at least --repeat ({a.repeat})")
    return float(m[1]) / 100


def _reproduce(a: argparse.Namespace) -> int:
    from ybbench.experiments.reproduce.runs import command

    return command(a)


def _demo(a: argparse.Namespace) -> int:
    from ybbench.local.demo import command

    return command(a.results, a.vus, a.duration, a.png)


def _verify(a: argparse.Namespace) -> int:
    from ybbench.run.verify import command

    return command(a.testid, a.results, a.node, a.chunk)


def report_exprs() -> list[str]:
    """The PromQL the report reads (k6's charts, the seeds' figures), for
    doctor, which sits below report/ and takes them from here."""
    from ybbench.core.prom import prom_queries
    from ybbench.doctor.queries import PLACEHOLDER
    from ybbench.report import seed_charts, tpcc

    exprs = [*prom_queries(PLACEHOLDER, "1m").values(), tpcc.promql(PLACEHOLDER, "1m")]  # any run's
    return exprs + [spec.promql(suffix, "1m") for spec in seed_charts.specs() for suffix in spec.queries]


def _doctor(a: argparse.Namespace) -> int:
    from ybbench.doctor import runner, settings

    s = settings.from_args(a.set, a.prometheus, a.loki, a.grafana,
                           a.grafana_password_file or settings.default_password_file(), a.grafana_user, a.compose_env,
                           a.history)
    s.loki_deadline_s = a.loki_deadline
    code, _ = runner.run(s, Path(a.out), report_exprs())
    return code


def _validate(a: argparse.Namespace) -> int:
    from ybbench.core.validate import command

    return command(a.path)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ybbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=_VersionAction, help="ybbench's version, k6's and its extensions'")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    for kind, (job, knob, secret) in KINDS.items():
        what = "YugabyteDB's web ports (masters, tservers, YSQL, YCQL)" if kind == "yb" else "node_exporter"
        t.add_argument(f"--{kind}-scheme", choices=["http", "https"], default="http",
                       help=f"how {what} serve their metrics (http)")
        t.add_argument(f"--{kind}-ca-file", metavar="FILE",
                       help=f"the CA (PEM) that signed {what}'s certificates; copied next to the target files")
        t.add_argument(f"--{kind}-basic-auth", metavar="USER",
                       help=f"basic auth as USER to {what}; the password is read from a file ({knob})")
        t.add_argument(f"--{kind}-bearer-token", action="store_true",
                       help=f"a bearer token to {what}, read from a file ({knob})")
        t.add_argument(f"--{kind}-secret-file", metavar="FILE",
                       help=f"the password or token file as Prometheus sees it (default {SECRETS_DIR}/{secret}, "
                       f"where compose puts {knob}'s file)")
    t.set_defaults(func=_targets)

    r = sub.add_parser("run", help="run one workload with k6 and keep its results")
    r.add_argument("workload", help=f"one of: {', '.join(catalog.workloads())}")
    r.add_argument("--testid", help="run id (default: <workload>-<time>)")
    r.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    r.add_argument("--prometheus", help="Prometheus URL for k6 remote write, e.g. http://127.0.0.1:9090")
    r.add_argument("--loki", help="Loki URL to keep the run's k6 log, e.g. http://127.0.0.1:3100")
    r.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="a workload knob")
    r.add_argument("--vus", type=_positive, help="VUs (the knob VUS; with --rate, the VUs k6 pre-allocates)")
    r.add_argument("--duration", help="how long, e.g. 60s, 5m (the knob DURATION)")
    r.add_argument("--rate", type=_positive, metavar="OPS_PER_S", help="the open model: operations started per "
                   "second whatever the latency (LOAD_MODEL=constant-arrival-rate, RATE); not tpcc-load, nor tpcc "
                   "with TPCC_MODE=spec, whose scripts run a fixed set of VUs and refuse it")
    readers = "; ".join(f"{', '.join(sorted(w for w, load in catalog.READS_KEYS_OF.items() if load == of))} of a "
                        f"{of}" for of in sorted(set(catalog.READS_KEYS_OF.values())))
    r.add_argument("--keys-from", metavar="TESTID", help="a read workload reads the keys this load run wrote: its "
                   "KEY_PREFIX and MAX_WRITTEN_KEY (ycsb: RECORD_COUNT; tpcc: WAREHOUSES and C_LOAD) and table "
                   f"(tpcc: TABLE_PREFIX), from results/TESTID ({readers})")
    r.add_argument("--threshold", action="append", default=[], metavar="[OP:]RULE",
                   help="k6's threshold syntax on the run's summary.json, e.g. select:p(99)<5ms, rate>=1000, "
                   "errors==0 (aggregations: avg med max p(50) p(90) p(95) p(99) rate count errors retries "
                   "keys_missing; run-wide: dropped_iterations rows_written); one crossed exits 99, naming it")
    r.add_argument("--quiet", action="store_true", help="keep k6's output in the log only")
    r.add_argument("--generators", default="1", metavar="N", help="split the run over N k6 processes (execution "
                   "segments, one testid, one merged summary.json; docs/scale-out.md \"Distributed k6\")")
    r.add_argument("--event", action="append", default=[], metavar="AT:ACTION:SERVICE",
                   help="a fault or expansion on the compose stack during the run, e.g. 20s:stop:yb-tserver-2; "
                   "actions: stop, start, kill, restart, add, remove, pause, resume, partition and heal (a "
                   "YugabyteDB server), kill:master-leader (docs/faults-and-verify.md \"Faults and expansion\")")
    r.add_argument("--report", action="store_true", help="then write the run's report, as `ybbench report` does "
                   "(results/<testid>/report.html; charts over the run's window with --prometheus)")
    r.add_argument("--doctor", action="store_true", help="first run `ybbench doctor` with the run's own nodes, "
                   "--prometheus, --loki and --grafana; its verdict kept as results/<testid>/doctor.json; no run "
                   "(exit 1, no folder) when a check fails")
    r.add_argument("--grafana", help="with --doctor: Grafana URL, whose checks then run (unused without --doctor)")
    r.add_argument("--grafana-password-file", help=f"with --doctor: file holding Grafana's password "
                   f"(${PASSWORD_FILE_VAR}, else {GRAFANA_PASSWORD_FILE})")
    r.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="a label kept with the run in params.json and the history store, e.g. commit=abc123")
    r.add_argument("--history", metavar="STORE", help="the history store: an SQLite file or a postgresql:// URL "
                   "(default: $YBBENCH_HISTORY, else <results>/history.sqlite)")
    r.add_argument("--warmup", metavar="DURATION", help="the first seconds of the run that compare leaves out of "
                   "the measured window (kept as params.json warmup_s); tpcc gives its tpmC and efficiency after it "
                   "too (summary.json tpcc.measured)")
    r.set_defaults(func=_run)

    lm = sub.add_parser("limits", help="what limited a run, with the evidence: each resource's use against its "
                        "capacity, and the verdict (kept as results/<testid>/limits.json; `run` does it itself)")
    lm.add_argument("testid", help="the run")
    lm.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    lm.add_argument("--prometheus", help="Prometheus URL (default: the run's own, from params.json)")
    lm.set_defaults(func=_limits_command)

    hi = sub.add_parser("history", help="runs kept across time: each series' change points (Apache Otava), what "
                        "differed there; `history import` fills the store from results folders")
    hi.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    hi.add_argument("--history", metavar="STORE", help="the history store: an SQLite file or a postgresql:// URL "
                    "(password from PGPASSFILE; default: $YBBENCH_HISTORY, else <results>/history.sqlite)")
    hi.add_argument("--select", metavar="KEY=VALUE,...", help="one series: the runs with these (workload, a knob, "
                    "label:NAME, version:NAME), e.g. workload=sql-selects,DURATION=10s (default: a series per "
                    "workload and knobs)")
    hi.add_argument("--order-by", default="time", help="time (when each run started) or label:NAME")
    hi.add_argument("--out", help="folder for history.json and history.html (default: <results>/history)")
    hi.add_argument("--png", metavar="DIR", help="also write each chart as DIR/history-<chart>.png")
    hi.add_argument("--fail-on", metavar="regression", help="exit 1 when a series' newest run is after a change "
                    "point that made an op worse (ops/s down or p99 up), naming it")
    hi.add_argument("--min-change", metavar="PCT", help="keep only change points of at least PCT (e.g. 10%%: Otava's "
                    "-M), to pass over run-to-run noise you have measured (default: every change Otava finds)")
    hs = hi.add_subparsers(dest="history_command")
    imp = hs.add_parser("import", help="record every finished run under the folders (default: --results); runs "
                        "already there are left as they are")
    imp.add_argument("folders", nargs="*", help="results folders")
    hi.set_defaults(func=_history)

    d = sub.add_parser("doe", help="a two-level (fractional) factorial design: aliases, effects, charts")
    d.add_argument("design", help="the design file (YAML), e.g. experiments/seed-002-esle.yaml")
    d.add_argument("--out", help="a new folder for results.json and the charts (written whole or not at all)")
    d.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level of the intervals (0.05)")
    d.add_argument("--run", action="store_true", help="run every row of the file's run: section with k6 (each "
                   "replication one `ybbench run`), then analyse what they measured")
    d.add_argument("--testid", "--id", dest="id", help="design id (default: <name>-<time>); runs are <id>-r<run>-<replication>")
    d.add_argument("--resume", metavar="DESIGN_ID", help="go on with this design, skipping its finished runs")
    d.add_argument("--results", help="results folder of --run (default: results/); the design's is <results>/<id>")
    d.add_argument("--prometheus", help="Prometheus URL for k6 remote write, e.g. http://127.0.0.1:9090")
    d.add_argument("--loki", help="Loki URL to keep each run's k6 log, e.g. http://127.0.0.1:3100")
    d.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                   help="a workload knob for every run (not one the file sets), e.g. YSQL_NODES")
    d.set_defaults(func=_doe)

    c = sub.add_parser("scale", help="throughput against node count: Universal Scalability Law fit, peak, efficiency")
    c.add_argument("workload", nargs="?", help="with --clusters: the workload to run on each cluster")
    c.add_argument("--throughput", metavar="FILE", help="throughput measured elsewhere (YAML or CSV: nodes, throughput)")
    c.add_argument("--clusters", metavar="FILE", help="clusters to run on (YAML: name, nodes, ysql_nodes each)")
    c.add_argument("--vus-per-node", type=int, default=4, help="VUs per node of each cluster (4)")
    c.add_argument("--duration", default="30s", help="each run's DURATION (30s)")
    c.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="a workload knob, every run")
    c.add_argument("--testid", help="run id prefix; each run is <prefix>-<cluster name> (default: scale-<workload>-<time>)")
    c.add_argument("--results", "--runs-dir", dest="runs_dir", default=str(catalog.REPO / "results"),
                   help="results folder of the runs")
    c.add_argument("--prometheus", help="Prometheus URL for k6 remote write, e.g. http://127.0.0.1:9090")
    c.add_argument("--quiet", action="store_true", help="keep k6's output in each run's log only")
    c.add_argument("--out", help="a new folder for results.json and scale.png (written whole or not at all)")
    c.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level of the intervals (0.05)")
    c.set_defaults(func=_scale)

    w = sub.add_parser("sweep", help="one workload at rising VUs (or offered rates): ceiling and knee")
    w.add_argument("workload", help=f"one of: {', '.join(catalog.workloads())}")
    w.add_argument("--vus", help="VUs per step, increasing: 1,4,16,64 (default: 1,2,4,... up to --max-vus)")
    w.add_argument("--max-vus", type=int, help="the doubling list's last step (64)")
    w.add_argument("--rate", help="open model: offered ops/s per step, increasing: 1000,2000,4000")
    w.add_argument("--step-duration", default="30s", help="each step's DURATION (30s)")
    w.add_argument("--testid", "--id", dest="id", help="sweep id (default: sweep-<workload>-<time>); steps are <id>-vus<N>")
    w.add_argument("--resume", metavar="SWEEP_ID", help="go on with this sweep, skipping its finished steps")
    w.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    w.add_argument("--prometheus", help="Prometheus URL for k6 remote write, e.g. http://127.0.0.1:9090")
    w.add_argument("--loki", help="Loki URL to keep each step's k6 log, e.g. http://127.0.0.1:3100")
    w.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="a workload knob, every step")
    w.set_defaults(func=_sweep)

    o = sub.add_parser("report", help="one self-contained HTML page (tables, charts) for one or more runs")
    o.add_argument("testid", nargs="+", help="run ids: folders of --results")
    o.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    o.add_argument("--prometheus", help="Prometheus URL: chart ops/s, latency, CPU, SSTables, disks and "
                   "block cache over each run's window")
    o.add_argument("--out", help="the HTML file (default: results/<first testid>/report.html); its data in .json")
    o.add_argument("--png", metavar="DIR", help="also write each chart as DIR/<testid>-<chart id>.png")
    o.set_defaults(func=_report)

    q = sub.add_parser("compare", help="did it get faster? runs (or groups of runs) against a base, per op: ops/s "
                       "ratio with an interval over runs and a verdict, p99 likewise, what differs; or two sweeps "
                       "(ceiling, knee), two designs (effects) or two scale fits (λ, σ, κ, N*) with intervals")
    q.add_argument("base", help="the base id: a folder of --results (a run, run ids separated by commas, an "
                   "`ybbench ab`, a sweep, a doe --run design, a doe/scale --out folder)")
    q.add_argument("other", nargs="*", help="ids to compare with the base, of the same kind; a side of runs may be "
                   "several run ids separated by commas (a1,a2,a3); none when BASE is an `ybbench ab` id")
    q.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    q.add_argument("--prometheus", help="Prometheus URL: the per-second ops/s series (needed for a verdict) and "
                   "latency from k6's native histograms; for sweeps, the ceiling steps' per-second series (the "
                   "ceiling ratio's interval)")
    q.add_argument("--out", help="a new folder for compare.json and compare.html (default: "
                   "<results>/compare-<time>; written whole or not at all)")
    q.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level of the intervals (0.05)")
    q.add_argument("--png", metavar="DIR", help="also write each chart as DIR/<compare folder>-<chart>.png")
    q.add_argument("--allow-different-workloads", action="store_true",
                   help="compare runs of different workloads (refused otherwise)")
    q.add_argument("--history", metavar="STORE", help="with one run on a side: the history store whose earlier runs "
                   "of the same series give the run-to-run spread (default: $YBBENCH_HISTORY, else "
                   "<results>/history.sqlite); without 5 such runs, no verdict")
    q.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="a gate for CI: slower:N%% (exit 1 when an op's ops/s is lower by more than N%%, with "
                   "significance) or p99:+N%% (p99 higher by more than N%%, with significance); exit 2 when it "
                   "cannot be judged (one run a side and no history of its series)")
    q.set_defaults(func=_compare)

    from ybbench.experiments import ab as ab_defaults

    b = sub.add_parser("ab", help="did a change make it faster? the base's and the other's settings run alternately "
                       "(A B B A ...), --repeat times each, then compared run against run")
    b.add_argument("workload", help=f"one of: {', '.join(catalog.workloads())}")
    b.add_argument("--base", action="append", default=[], metavar="KNOB=VALUE", help="a knob of the base's runs only")
    b.add_argument("--other", action="append", default=[], metavar="KNOB=VALUE",
                   help="a knob of the other's runs only")
    b.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="a knob of every run")
    b.add_argument("--keys-from", metavar="TESTID", help="as run's: a read workload reads the keys this load run "
                   "wrote (every run of both sides)")
    b.add_argument("--repeat", type=int, metavar="N",
                   help=f"compared runs a side, a fixed count (default: {ab_defaults.REPEAT}, then more as --resolve "
                   "asks; docs/reports.md \"Comparing runs\")")
    b.add_argument("--resolve", metavar="PCT", help=f"after --repeat runs a side, go on in A B B A runs until their "
                   f"spread finds a change of PCT 8 times in 10 (default {ab_defaults.RESOLVE.replace('%', '%%')} without --repeat; "
                   "off for a fixed count)")
    b.add_argument("--max-repeat", type=int, default=ab_defaults.MAX_REPEAT, metavar="N",
                   help=f"the most runs a side --resolve goes to ({ab_defaults.MAX_REPEAT})")
    b.add_argument("--warmup", default=ab_defaults.WARMUP, metavar="DURATION", help="the first seconds of each run "
                   f"left out of what is compared ({ab_defaults.WARMUP}; 0 for none)")
    b.add_argument("--warmup-runs", type=int, default=ab_defaults.WARMUP_RUNS, metavar="N",
                   help=f"runs of the base made first and not compared ({ab_defaults.WARMUP_RUNS})")
    b.add_argument("--base-prepare", metavar="CMD", help="a shell command run before each of the base's runs "
                   "(switch a server flag, a binary, a view); a failure stops the ab")
    b.add_argument("--other-prepare", metavar="CMD", help="the same before each of the other's runs")
    b.add_argument("--base-label", action="append", default=[], metavar="KEY=VALUE",
                   help="a label of the base's runs (params.json, history store), e.g. commit=abc123")
    b.add_argument("--other-label", action="append", default=[], metavar="KEY=VALUE",
                   help="a label of the other's runs")
    b.add_argument("--testid", "--id", dest="id", help="ab id (default: ab-<workload>-<time>); runs are <id>-base<i>, <id>-other<i>")
    b.add_argument("--resume", metavar="AB_ID", help="go on with this ab, skipping its finished runs")
    b.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    b.add_argument("--prometheus", help="Prometheus URL for k6 remote write, e.g. http://127.0.0.1:9090")
    b.add_argument("--loki", help="Loki URL to keep each run's k6 log, e.g. http://127.0.0.1:3100")
    b.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level of the intervals (0.05)")
    b.add_argument("--history", metavar="STORE", help=argparse.SUPPRESS)
    b.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="as compare's: slower:N%% or p99:+N%% (exit 1 when it fails, 2 when it cannot be judged)")
    b.set_defaults(func=_ab)

    m = sub.add_parser("demo", help="sql-inserts then sql-selects on a throwaway local PostgreSQL 15, and a report")
    m.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    m.add_argument("--vus", type=int, default=8, help="VUs of each run (8)")
    m.add_argument("--duration", default="10s", help="each run's DURATION (10s: ten of the demo's 1 s scrapes)")
    m.add_argument("--png", metavar="DIR", help="also write each chart as DIR/<testid>-<chart id>.png")
    m.set_defaults(func=_demo)

    x = sub.add_parser("reproduce", help="a seed's experiment scaled to this machine: published against observed")
    x.add_argument("seed", help="000, 001, 004 (run their phases), 002, 003 (analyse their published results), "
                   "tpcc-yugabytedb, tpcc-yugabytedb-high-scale, tpcc-yugabytedb-horizontal (YugabyteDB's "
                   "published TPC-C rows), or an experiment file")
    x.add_argument("--duration", help="each phase's DURATION (30s)")
    x.add_argument("--cores-per-node", type=int, help="server cores per node (default: this machine's cores "
                   "over the nodes, when YSQL_NODES are all on it)")
    x.add_argument("--testid", "--id", dest="id", help="reproduce id (default: reproduce-<seed>-<time>); phases are <id>-<phase>")
    x.add_argument("--resume", metavar="REPRODUCE_ID", help="go on with this reproduce, skipping its finished phases")
    x.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    x.add_argument("--prometheus", help="Prometheus URL: k6 remote write, and CPU and disks from node_exporter")
    x.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                   help="a workload knob, every phase (refused for a knob the file sets in several phases, "
                   "such as WAREHOUSES over several rows: give --row)")
    x.add_argument("--row", metavar="PHASE", help="one published row: this phase (one with figures) and the phases "
                   "it reads (its load), no other")
    x.add_argument("--published", action="store_true", help="with --row: run the row at its published knobs "
                   "(warehouses, connections, loader threads) instead of the file's scaled ones")
    x.add_argument("--warmup", metavar="DURATION", help="the warm-up of each phase whose published run had one, "
                   "left out of what is compared (default: the published one; 0: none)")
    x.add_argument("--dry-run", action="store_true", help="print the phases, their knobs, VUs, durations and "
                   "warm-ups, and the figures compared; run nothing, write nothing")
    x.set_defaults(func=_reproduce)
    v = sub.add_parser("verify", help="after a write run: every acknowledged write present, each value one the run "
                                      "wrote; after tpcc-load and tpcc, TPC-C's consistency conditions 1-12, "
                                      "and a tpcc run's New-Orders (docs/faults-and-verify.md)")
    v.add_argument("testid", help="the write run's id (sql-inserts, kv-load, sql-updates, ycsb-load, ycsb, "
                                  "sql-secondary-index, tpcc-load, tpcc): a folder of --results")
    v.add_argument("--results", default=str(catalog.REPO / "results"), help="results folder")
    v.add_argument("--node", metavar="HOST:PORT", help="read from this node (default: the run's first YSQL node)")
    v.add_argument("--chunk", type=int, default=10000, help="keys per query (10000)")
    v.set_defaults(func=_verify)
    dr = sub.add_parser("doctor", help="check the stack's assumptions on this cluster: YSQL, Prometheus targets, "
                        "every dashboard and report query (History's SQL on the history store), k6's modules, Loki, "
                        "Grafana, room to run; exit 1 if one fails (docs/docker-stack.md \"ybbench doctor\")")
    dr.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                    help="a workload knob, as for run: YSQL_NODES, DB_USER, DB_NAME, DB_SSLMODE, DB_SSLROOTCERT, DB_SSLCERT, DB_SSLKEY, "
                    "DB_CONNECT_TIMEOUT")
    dr.add_argument("--prometheus", help="Prometheus URL, e.g. http://127.0.0.1:9090")
    dr.add_argument("--loki", help="Loki URL, e.g. http://127.0.0.1:3100")
    dr.add_argument("--grafana", help="Grafana URL, e.g. http://127.0.0.1:3000 (its checks run only when given)")
    dr.add_argument("--grafana-user", default="admin", help="Grafana user (admin)")
    dr.add_argument("--grafana-password-file",
                    help=f"file holding Grafana's password, never the command line (${PASSWORD_FILE_VAR}, which the "
                    f"compose ybbench service sets, else {GRAFANA_PASSWORD_FILE}, "
                    "where compose mounts it)")
    dr.add_argument("--loki-deadline", type=float, default=60.0, metavar="SECONDS",
                    help="how long a failing statement's ERROR line may take to reach Loki (60)")
    dr.add_argument("--compose-env", metavar="FILE", help="the compose .env whose YB_MASTER_MEM_LIMIT and "
                    "YB_TSERVER_MEM_LIMIT the room check compares with memory available (compose/.env)")
    dr.add_argument("--history", metavar="STORE", help="the history store runs are recorded in: a postgresql:// "
                    "URL (password from PGPASSFILE), whose History dashboard queries are then run, read only "
                    "(default: $YBBENCH_HISTORY; an SQLite store is skipped: Grafana reads PostgreSQL only)")
    dr.add_argument("--out", default=str(catalog.REPO / "results" / "doctor.json"), help="the checks as JSON "
                    "(results/doctor.json)")
    dr.set_defaults(func=_doctor)
    vd = sub.add_parser("validate", help="check results files against their schemas (docs/results-format.md); "
                                        "exit 1 if one is invalid")
    vd.add_argument("path", nargs="+", help="a results folder (every results file under it) or a file")
    vd.set_defaults(func=_validate)
    return p


# Where a flag is not given, these variables give it (the compose `ybbench`
# service sets them to the stack's Prometheus and Loki); unset, nothing changes.
ENV_DEFAULTS = {"prometheus": "YBBENCH_PROMETHEUS", "loki": "YBBENCH_LOKI", "grafana": "YBBENCH_GRAFANA"}


def env_defaults(a: argparse.Namespace) -> None:
    if a.command == "doe" and not (a.run or a.resume):
        return  # the analysis alone takes no --prometheus or --loki
    for attr, var in ENV_DEFAULTS.items():
        if getattr(a, attr, "absent") is None and os.environ.get(var):
            setattr(a, attr, os.environ[var])


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C (SIGINT) interrupts us even when we were started with it
    # ignored (a background job of a script: `cmd &`), as it does k6, whose
    # Go runtime takes SIGINT back: otherwise k6 stops, we carry on and
    # record an interrupted run as failed, or the rest of a sweep.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    argv = list(sys.argv[1:] if argv is None else argv)
    k6_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = parser()
    args = p.parse_args(argv)
    if k6_args and args.command != "run":
        p.error(f"{' '.join(k6_args)}: only `ybbench run` passes what follows -- to k6")
    args.k6_args = k6_args
    env_defaults(args)
    try:
        return args.func(args)
    except UserError as e:
        print(f"ybbench: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
