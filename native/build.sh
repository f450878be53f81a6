#!/usr/bin/env bash
# Builds the Go binaries of the native test stack and of the compose test's
# stand-in images (the k6s: v1.8.1, v1.1.0, v1.0.0 and v2.2.0, Prometheus + promtool,
# node_exporter, Loki, Promtail, the Docker Compose v2 CLI plugin) into
# $YBBENCH_CACHE/bin, outside the repo. A module is rebuilt only when its
# go.mod, go.sum or sources change, so repeated test runs cost nothing.
#
# native/build.sh [MODULE|core|late ...]: only those modules (the folders
# here: k6, loki, ...); with none, all of them. core is what nearly every
# test runs; late is the rest, over half of a cold build's minutes on 2 cores,
# which make test builds in the background while the tests that need none of
# it run. A module's build holds a lock, so a second build.sh asking for it
# waits for the first and then finds it built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/bin
mkdir -p "$bin"

# A build's inputs: the module's go.mod, go.sum and Go files, those of the
# folders its go.mod replaces modules with, and the link flags.
stamp() {
  (
    cd "$here/$1"
    dirs=". $(grep -oE '=> \.{1,2}/[^ ]+' go.mod | cut -c4- || true)"
    cat go.mod go.sum $(find $dirs -name '*.go' -o -name go.mod | sort)
    echo "$2"
  ) | sha256sum | cut -c1-16
}

version_of() {
  (cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}

build() { # module-dir ldflags package...; STATIC=1: cgo off, a static binary
  local mod=$1 ldflags=$2 lock
  shift 2
  wanted "$mod" || return 0
  exec {lock}>"$bin/.lock-$mod"
  flock "$lock"
  local mark="$bin/.built-$mod-$(stamp "$mod" "$ldflags $*${STATIC:+ static}")"
  if [ ! -f "$mark" ]; then
    echo "native/build.sh: building $mod (once; cached in $bin)" >&2
    (cd "$here/$mod" && ${STATIC:+env CGO_ENABLED=0} go build -ldflags "$ldflags" -o "$bin/" "$@")
    # The old marks of this module only (k6's are not k6-v2's): 16 hex digits.
    rm -f "$bin/.built-$mod-"????????????????
    touch "$mark"
  fi
  exec {lock}>&-
}

# The modules asked for (all when none is named), each a folder here.
core=(k6 k6-v2 prometheus node_exporter)
late=(k6-v1.1 k6-v1.0 loki promtail compose)
modules=()
for m in "$@"; do
  case $m in
    core) modules+=("${core[@]}") ;;
    late) modules+=("${late[@]}") ;;
    *) modules+=("$m") ;;
  esac
done
for m in ${modules[@]+"${modules[@]}"}; do
  [ -f "$here/$m/go.mod" ] || { echo "native/build.sh: no module $m (one of the folders of native/ with a go.mod)" >&2; exit 2; }
done
wanted() {
  [ ${#modules[@]} -eq 0 ] && return 0
  local m
  for m in "${modules[@]}"; do [ "$m" = "$1" ] && return 0; done
  return 1
}

common=github.com/prometheus/common/version

# The k6s the scripts claim, each with the real xk6-sql where one exists
# for it: the tests' k6 v1.8.1 (k6, and k6-official with only the official
# extensions), the oldest the cloud path resolves to (k6-v1.1: v1.1.0) and
# the compose image's k6 v2 (k6-v2). Our Go helpers module is written for k6 v2;
# the v1.8.1 build adds its k6 v1 shim (native/k6/_k6v1/k6v1.go) with an
# overlay (every file of native/k6/_k6v1), so that the module itself never
# imports k6 v1.
if wanted k6; then
  overlay=$(for f in "$here"/k6/_k6v1/*.go; do
    printf '"%s":"%s",' "$here/../compose/k6/xk6-ybbench/$(basename "$f")" "$f"
  done)
  # The overlay names this checkout's files, so it lives in this checkout (not
  # in the binary cache that every checkout shares), named relative to the
  # module so that the build's stamp is the same in every checkout.
  printf '{"Replace":{%s}}\n' "${overlay%,}" >"$here/k6/.k6v1-overlay.json"
  trap 'rm -f "$here/k6/.k6v1-overlay.json"' EXIT
  build k6 "" -tags ybbench_k6v1 -overlay .k6v1-overlay.json . ./k6-official
fi
build k6-v1.1 "" .
# k6 v1.0.0 with k6-v1.1's extensions: older than the oldest the scripts claim,
# for doctor's k6 version check (tests/native/test_doctor.py).
build k6-v1.0 "" .
build k6-v2 "" .
if wanted prometheus; then
  # Prometheus 3.x is published as Go module v0.3XX.Y: v0.313.5 is 3.13.5.
  prom=$(version_of prometheus github.com/prometheus/prometheus | sed -E 's/^v0\.([0-9])([0-9]+)\.([0-9]+)$/\1.\2.\3/')
  # Without the cloud service discoveries (Prometheus's own build tag): the
  # stack's configs use file_sd_configs only, which stays, and the build
  # drops the AWS, Azure, GCE and Kubernetes clients. promtool then refuses a
  # config with any other discovery: stricter than upstream's, never kinder.
  build prometheus "-X $common.Version=$prom" -tags remove_all_sd \
    github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
fi
if wanted node_exporter; then
  node=$(version_of node_exporter github.com/prometheus/node_exporter | sed 's/^v//')
  build node_exporter "-X $common.Version=$node" github.com/prometheus/node_exporter
fi
if wanted loki; then
  loki=$(version_of loki github.com/grafana/loki/v3 | sed 's/^v//')
  # Static, as upstream's (cgo off): the compose stand-in is distroless, no libc.
  STATIC=1 build loki "-X github.com/grafana/loki/v3/pkg/util/build.Version=$loki" github.com/grafana/loki/v3/cmd/loki
fi
if wanted promtail; then
  promtail=$(version_of promtail github.com/grafana/loki/v3 | sed 's/^v//')
  # Promtail needs cgo only for the systemd journal, which the stack does not read.
  CGO_ENABLED=0 build promtail "-X github.com/grafana/loki/v3/pkg/util/build.Version=$promtail" \
    github.com/grafana/loki/v3/clients/cmd/promtail
fi
if wanted compose; then
  compose=$(version_of compose github.com/docker/compose/v2)
  build compose "-X main.version=$compose -X github.com/docker/compose/v2/internal.Version=$compose" .
  # `docker compose`: the CLI finds plugins in ~/.docker/cli-plugins.
  plugins=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
  mkdir -p "$plugins"
  ln -sf "$bin/docker-compose" "$plugins/docker-compose"
fi
# go-ycsb v1.0.3's own command, for make bench only (YBBENCH_BENCH=1): a
# large build (4-11 min cold here) that no test needs. Without cgo: its sqlite and
# rocksdb bindings go unused.
if [ "${YBBENCH_BENCH:-0}" = 1 ]; then
  CGO_ENABLED=0 build go-ycsb "" github.com/pingcap/go-ycsb/cmd/go-ycsb
fi
if wanted k6; then
  # Modules the tests read offline (GOPROXY=off): what xk6 runs after adding
  # each extension (go mod tidy -compat=1.17), on the k6 v2 build, to find k6
  # v1 in its graph (and, as a control, native/k6's graph); go vet of our
  # Go helpers module in its own folder.
  (cd "$here/k6-v2" && go mod tidy -diff -compat=1.17 >/dev/null 2>&1 || true)
  (cd "$here/k6" && go mod graph >/dev/null)
  (cd "$here/../compose/k6/xk6-ybbench" && go mod download)
  # k6-operator's TestRun CRD, which tests/native/test_k6_operator.py reads offline;
  # the proxy may refuse it (the test then skips, saying so).
  (cd / && GOFLAGS=-mod=mod go mod download github.com/grafana/k6-operator@v0.0.19 >/dev/null 2>&1 || true)
fi
echo "$bin"
