#!/usr/bin/env bash
# The steps of deploy/ci/ybbench-history.yml (GitHub Actions), one per
# argument, so that a workflow step is one line and the tests run the same
# script (tests/native/test_ci_steps.py):
#   up     the compose stack, waited for
#   bench  a short sql-inserts then sql-selects run, each labelled with the
#          commit, recorded in the history store results/history.sqlite
#          (the workflow restores it from its cache first and saves it after)
#   gate   ybbench history --fail-on regression: exit 1 when the newest runs
#          are after a change point of GATE_MIN_CHANGE (10%) or more that
#          made an op worse (names it)
#   down   the stack removed, every profile's services too
# YBBENCH is how ybbench is run (default: the compose stack's service);
# BENCH_DURATION each run's DURATION (20s); BENCH_VUS (8); COMMIT the label
# (default: $GITHUB_SHA, else git's HEAD).
set -euo pipefail
cd "$(dirname "$0")/../.."

YBBENCH=${YBBENCH:-docker compose run --rm ybbench}
COMMIT=${COMMIT:-${GITHUB_SHA:-$(git rev-parse HEAD)}}
DURATION=${BENCH_DURATION:-20s}
VUS=${BENCH_VUS:-8}
# GATE_MIN_CHANGE: the smallest change the gate acts on (history --min-change). Shared CI runners
# are noisy and Otava's default keeps every significant change, however small: measure your runners'
# run-to-run spread (docs/reports.md) and set it above that; 0 keeps Otava's default.
MIN_CHANGE=${GATE_MIN_CHANGE:-10%}
# RESULTS: another results folder than the checkout's results/ (the tests'); BENCH_SET: more --set KNOB=VALUE.
where=${RESULTS:+--results $RESULTS}
# The store: the SQLite file the workflow caches between jobs, named here
# because the compose service records into the stack's history-db by
# default (YBBENCH_HISTORY), whose volume goes with the CI runner.
store="--history ${RESULTS:-results}/history.sqlite"

for step in "$@"; do
  case "$step" in
    up)
      docker compose up -d --wait ;;
    bench)
      id="ci-$(date -u +%Y%m%dT%H%M%S)-${COMMIT:0:12}"
      $YBBENCH run sql-inserts --testid "$id-ins" --quiet --set VUS="$VUS" --set DURATION=5s \
        --set KEY_PREFIX="$id" --label commit="$COMMIT" $where $store ${BENCH_SET:-}
      rows=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["rows_written"])' \
        "${RESULTS:-results}/$id-ins/summary.json")
      $YBBENCH run sql-selects --testid "$id-sel" --quiet --set VUS="$VUS" --set DURATION="$DURATION" \
        --set KEY_PREFIX="$id" --set MAX_WRITTEN_KEY="$rows" --label commit="$COMMIT" $where $store ${BENCH_SET:-} ;;
    gate)
      $YBBENCH history $where $store --select workload=sql-selects --fail-on regression \
        --min-change="$MIN_CHANGE" ;;
    down)
      # Every profile's services too: a plain `down` may leave a profile's
      # containers (bench's ybbench or k6 runs, pg, expand) running.
      docker compose --profile '*' down ;;
    *)
      echo "steps.sh: unknown step $step (up, bench, gate, down)" >&2; exit 2 ;;
  esac
done
