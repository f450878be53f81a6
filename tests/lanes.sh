#!/usr/bin/env bash
# make test's pytest, once the core binaries are built and the installs done
# (docs/testing.md "What make test does").
#
# tests/lanes.sh tests: the whole suite in two lanes.
#   lane 1 (here): first the tests marked quiet (their runs' rates and times
#     hold only with no neighbour but idle-priority builds), then the native
#     tests; the late ones wait for their builds; the ones marked alone
#     (they hold the whole machine's CPU, memory or disk against a panel or
#     a check) come last and wait for lane 2.
#   lane 2 (in the background): on idle CPU only, the builds the compose
#     images carry (Loki, Promtail, the Compose plugin, the Debian base);
#     then the older k6s that lane 1's late tests run, on idle CPU, and,
#     once lane 1's quiet tests are done, the compose tests beside lane 1
#     (they mostly wait on containers), then the unit tests (no server, no
#     timing: they take lane 1's minutes off the critical path).
# tests/lanes.sh PATH...: one pytest of those, the late builds in the background.
set -u
cd "$(dirname "$0")/.."
idle() { chrt --idle 0 "$@"; }
# The Debian base the stand-in images start from, beside the binaries named.
builds() { idle sh -c "./tests/compose/images/base-rootfs.sh & ./native/build.sh $*; wait" >/dev/null 2>&1; }

if [ "$*" != "tests" ]; then
  builds late & late=$!
  python3 -m pytest -q --durations=40 "$@"; tested=$?
  wait $late
  exit $tested
fi

out=$(mktemp -d)
(
  builds loki promtail compose
  idle ./native/build.sh late >/dev/null 2>&1 & older=$!
  # Lane 1's conftest.py makes quiet.done when its first test not marked quiet starts, or when it ends.
  until [ -e "$out/quiet.done" ]; do sleep 1; done
  python3 -m pytest -q --durations=15 tests/compose >"$out/compose.log" 2>&1; echo $? >"$out/compose.rc"
  python3 -m pytest -q --durations=5 tests/unit >"$out/unit.log" 2>&1; echo $? >"$out/unit.rc"
  touch "$out/lane2.done"
  wait $older
) & lane2=$!
# An interrupted make stops lane 2's pytest too (a background job ignores the terminal's ^C).
trap 'pkill -TERM -f "pytest -q --durations=(15 tests/compose|5 tests/unit)"; exit 130' INT TERM

YBBENCH_QUIET_DONE="$out/quiet.done" YBBENCH_LANE2_DONE="$out/lane2.done" \
  python3 -m pytest -q --durations=40 --ignore=tests/compose --ignore=tests/unit tests; lane1=$?
touch "$out/quiet.done"  # lane 1 ended before its first test (a collection error): lane 2 goes on
wait $lane2
echo "== lane 2: the compose tests, then the unit tests, which ran beside the tests above"
cat "$out/compose.log" "$out/unit.log"
compose=$(cat "$out/compose.rc" 2>/dev/null || echo 1)
unit=$(cat "$out/unit.rc" 2>/dev/null || echo 1)
rm -rf "$out"
echo "lane 1 exit $lane1, lane 2 exit $compose (compose), $unit (unit)"
[ "$lane1" -eq 0 ] && [ "$compose" -eq 0 ] && [ "$unit" -eq 0 ]
