"""`ybbench run`: one k6 workload, one run id, one results folder.

results/<testid>/ holds params.json (what ran, with which knobs), the k6
summary and k6's log. The folder appears whole or not at all.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ybbench.core import formats, latency, logs, run_folder
from ybbench.core.catalog import KNOBS, REPO, SCRIPTS, SECRET_NAMES, TESTID, parse_settings, workloads
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.core.files import staged_dir
from ybbench.run import faults, k6_features, keys_from as keys_from_run, thresholds as check_thresholds, usage, versions
from ybbench.run import load_generators as gen
from ybbench.run import tpcc_nopm
from ybbench.run.k6_process import (
    K6_DASHBOARD_ENV,
    K6_RAN,
    K6_REPORT,
    RunResult,
    check_services,
    default_extensions,
    k6_env,
    k6_error,
    long_runs_without_dashboard,
)


def run(
    workload: str,
    *,
    testid: str | None = None,
    results: Path = REPO / "results",
    prometheus: str | None = None,
    loki: str | None = None,
    settings: list[str] = (),
    quiet: bool = False,
    on_line: Callable[[str], None] | None = None,
    generators: int | str = 1,
    events: list[str] = (),
    labels: dict[str, str] | None = None,
    before: Callable[[Path], None] | None = None,
    warmup_s: float = 0,
    thresholds: list[str] = (),
    keys_from: str | None = None,
    k6_args: list[str] = (),
) -> RunResult:
    """on_line sees each line of k6's output as it comes (a live progress);
    events are AT:ACTION:SERVICE faults on the compose stack (faults.py);
    before(stage) runs once the input is checked, before k6 starts, in the
    run's staged folder (run --doctor: it keeps doctor.json there, or raises
    to refuse the run, and no folder is left). warmup_s: the seconds at
    the start that compare leaves out of the measured window (params.json).
    thresholds: k6-syntax rules judged on summary.json (run/thresholds.py);
    keys_from: the load run whose keys a read workload reads (keys_from.py);
    k6_args: passed to `k6 run` as they are."""
    if workload not in workloads():
        raise UserError(f"unknown workload {workload!r}; known: {', '.join(workloads())}")
    testid = testid or f"{workload}-{time.strftime('%Y%m%dT%H%M%S')}"
    if not TESTID.match(testid):
        raise UserError(f"--testid {testid!r}: use 1-64 letters, digits, . _ -")
    knobs = parse_settings(list(settings))
    extra = warmup_params(warmup_s, knobs)
    rules = check_thresholds.parse(list(thresholds))
    check_k6_args(list(k6_args))
    if keys_from:
        knobs = keys_from_run.merged(workload, keys_from, results, knobs)
        extra["keys_from"] = keys_from
    if rules:
        extra["thresholds"] = [r.text for r in rules]
    if k6_args:
        extra["k6_args"] = list(k6_args)
    n_gen = gen.count(generators)
    gen.check_vus(n_gen, knobs)
    planned = []
    if events:
        if n_gen > 1:
            raise UserError("--event: faults are timed from one k6 process; use --generators 1")
        planned = faults.parse(list(events), knobs.get("DURATION"))
        faults.check_compose(planned)
    k6 = check_services(prometheus, loki)
    final = results / testid
    if final.exists():
        raise UserError(f"{final} exists: a run id is used once")

    env = k6_env(knobs)
    # The warm-up, for a workload that leaves it out of its own figures
    # (tpcc.js: tpcc.measured); never one from the caller's environment.
    env.pop("YBBENCH_WARMUP_S", None)
    if extra.get("warmup_s"):
        env["YBBENCH_WARMUP_S"] = f"{extra['warmup_s']:g}"
    default_extensions(k6, env)
    long_runs_without_dashboard(env)
    # k6's REST API on a free loopback port: runs at the same time (sweeps,
    # generators, tests) would otherwise fight over 127.0.0.1:6565.
    cmd = [k6, "run", "--no-color", "--address", env.get("K6_ADDRESS", "127.0.0.1:0"), "--tag", f"testid={testid}"]
    if prometheus:
        env.update(
            K6_PROMETHEUS_RW_SERVER_URL=f"{prometheus.rstrip('/')}/api/v1/write",
            K6_PROMETHEUS_RW_PUSH_INTERVAL=env.get("K6_PROMETHEUS_RW_PUSH_INTERVAL", "5s"),
        )
        # Trends as native histograms: percentiles per window in PromQL, and
        # O(1) memory in k6's output (its p99 stats keep every sample).
        k6_features.native_histograms(k6, env)
        cmd += ["--out", "experimental-prometheus-rw"]
    if labels and n_gen > 1:
        raise UserError("--label: with one k6 process only (--generators 1) for now")
    cmd += list(k6_args)
    if n_gen > 1:  # execution segments over N k6 processes (load_generators.py)
        return gen.run(workload, testid, final, cmd, env, n_gen, prometheus=prometheus, loki=loki, quiet=quiet,
                       on_line=on_line, before=before, extra=extra, thresholds=rules)

    with staged_dir(final) as stage:
        if before:
            before(stage)
        cmd += ["--summary-export", str(stage / "k6-summary.json"), str(SCRIPTS / f"{workload}.js")]
        env["SUMMARY_JSON"] = str(stage / run_folder.SUMMARY)  # the workloads' handleSummary
        for k, v in {**K6_DASHBOARD_ENV, "K6_WEB_DASHBOARD_EXPORT": str(stage / K6_REPORT)}.items():
            env.setdefault(k, v)  # the user's K6_WEB_DASHBOARD* win
        started = time.time()
        stamped: list[tuple[int, str]] = []  # (unix ns, line) for Loki
        watch = usage.Watch(env)  # k6's CPU and the database's lock waits, for the run's limits
        with open(stage / "k6.log", "w") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert proc.stdout is not None
            watch.add("k6", proc.pid, env)
            schedule = faults.Schedule(planned, say=(lambda s: None) if quiet else (lambda s: print(s, flush=True)))
            schedule.start()
            try:
                for line in proc.stdout:
                    log.write(line)
                    if loki:
                        stamped.append((time.time_ns(), line.rstrip("\n")))
                    if not quiet:
                        sys.stdout.write(line)
                    if on_line:
                        on_line(line)
            except BaseException:
                # Interrupted (Ctrl-C reaches k6 too): k6 ends before the
                # stage is removed, so it writes nothing into a folder after.
                proc.terminate()
                proc.wait()
                schedule.finish()
                watch.stop()
                raise
            # k6's output has ended: it is about to exit, and its last CPU is read before it is reaped.
            used = watch.stop()
            code = proc.wait()
        usage.write(stage, used)
        happened = schedule.finish()
        failed = [e for e in happened if not e["ok"]]
        if planned:
            formats.write(stage / run_folder.EVENTS, "events",
                          {"format_version": formats.version("events"), "events": happened})
            if loki:
                faults.to_loki(loki, testid, happened)
        if loki:
            logs.push(loki, {"job": "ybbench", "workload": workload, "testid": testid}, stamped)
        if code not in K6_RAN:
            raise UserError(f"{workload} failed (k6 exit {code}): {k6_error(stage / 'k6.log')}", exit_code=code)
        finished = time.time()
        summary = stage / run_folder.SUMMARY
        if summary.exists() and workload == "tpcc":  # the database's New-Orders beside k6's
            nopm = tpcc_nopm.add_to_file(summary, env)
            if nopm and not quiet:
                sys.stdout.write(nopm)
        if summary.exists():  # k6's handleSummary wrote it (k6-scripts/lib/summary.js)
            formats.check_file(summary, "summary")
        if prometheus and summary.exists():
            for op, lat in latency.fill(summary, prometheus, testid, started, finished).items():
                if not quiet:
                    print(f"  {op} latency from Prometheus (native histogram): p50 {lat['p50']:.3f} ms, "
                          f"p95 {lat['p95']:.3f} ms, p99 {lat['p99']:.3f} ms")
        judged = check_thresholds.apply(stage, rules, code, quiet)
        formats.write(
            stage / run_folder.PARAMS,
            "params",
            {
                "format_version": formats.version("params"),
                "workload": workload,
                "testid": testid,
                "knobs": {k: env[k] for k in KNOBS if k in env and not SECRET_NAMES.search(k)},
                "prometheus": prometheus,
                "loki": loki,
                "started_unix_s": started,
                "finished_unix_s": finished,
                "k6_exit_code": code,
                # For the history store (core/history_record.py): what ran it, and the run's --label KEY=VALUE.
                "versions": versions.versions(k6, env),
                **({"labels": dict(labels)} if labels else {}),
                **extra,
            },
        )
    if failed:
        # The run happened and its folder stays, events.json saying which
        # fault did not: it is not the run that was asked for.
        raise UserError(f"run {testid} ({final}) did not get its events: " + "; ".join(
            f"{e['action']} {e['service']} at {e['at_s']:g} s failed: {e['output'][-300:]}" for e in failed))
    return RunResult(testid, final, judged)


# k6 run flags that would undo what ybbench sets: the load model (the
# workload's scenario, from knobs), the summary file, the REST API's port,
# the execution segments of --generators.
OWN_K6_FLAGS = {"-u": "--vus", "--vus": "--vus", "-d": "--duration", "--duration": "--duration",
                "-i": "a knob", "--iterations": "a knob", "-s": "knobs", "--stage": "knobs",
                "--summary-export": "results/<testid>/summary.json", "--address": "a free port chosen by ybbench",
                "-a": "a free port chosen by ybbench", "--execution-segment": "--generators",
                "--execution-segment-sequence": "--generators", "--no-thresholds": "--threshold",
                "--no-summary": "summary.json"}


def check_k6_args(args: list[str]) -> None:
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in OWN_K6_FLAGS:
            raise UserError(f"-- {arg}: ybbench sets this for k6 (use {OWN_K6_FLAGS[flag]} instead)")


def warmup_params(warmup_s: float, knobs: dict[str, str]) -> dict:
    """params.json's warmup_s, checked against the run's DURATION; {} for none."""
    if not warmup_s:
        return {}
    if not (isinstance(warmup_s, (int, float)) and math.isfinite(warmup_s) and warmup_s > 0):
        raise UserError(f"--warmup {warmup_s!r}: a number of seconds, 0 or more")
    if "DURATION" in knobs and warmup_s >= seconds("DURATION", knobs["DURATION"]):
        raise UserError(f"--warmup {warmup_s:g}s: leaves nothing of DURATION={knobs['DURATION']} to measure")
    return {"warmup_s": float(warmup_s)}
