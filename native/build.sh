#!/usr/bin/env bash
# Builds the Go binaries of the native test stack (k6 with our xk6-sql
# stand-in, Prometheus + promtool, node_exporter, Loki, the compose checker) into
# $YBBENCH_CACHE/bin, outside the repo. A module is rebuilt only when its
# go.mod, go.sum or sources change, so repeated test runs cost nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/bin
mkdir -p "$bin"

# A module's sources: its go.mod, go.sum and Go files, and those of the
# folders its go.mod replaces modules with.
stamp() {
  (
    cd "$here/$1"
    dirs=". $(grep -oE '=> \.{1,2}/[^ ]+' go.mod | cut -c4- || true)"
    cat go.mod go.sum $(find $dirs -name '*.go' -o -name go.mod | sort)
  ) | sha256sum | cut -c1-16
}

# Prometheus 3.x is published as Go module v0.3XX.Y: v0.313.5 is 3.13.5.
version_of() {
  (cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}

build() { # module-dir ldflags package...
  local mod=$1 ldflags=$2
  shift 2
  local mark="$bin/.built-$mod-$(stamp "$mod")"
  [ -f "$mark" ] && return 0
  echo "native/build.sh: building $mod (once; cached in $bin)" >&2
  (cd "$here/$mod" && go build -ldflags "$ldflags" -o "$bin/" "$@")
  rm -f "$bin/.built-$mod-"*
  touch "$mark"
}

prom=$(version_of prometheus github.com/prometheus/prometheus | sed -E 's/^v0\.([0-9])([0-9]+)\.([0-9]+)$/\1.\2.\3/')
node=$(version_of node_exporter github.com/prometheus/node_exporter | sed 's/^v//')
loki=$(version_of loki github.com/grafana/loki/v3 | sed 's/^v//')
common=github.com/prometheus/common/version

build k6 "" .
build composecheck "" .
build prometheus "-X $common.Version=$prom" github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
build node_exporter "-X $common.Version=$node" github.com/prometheus/node_exporter
build loki "-X github.com/grafana/loki/v3/pkg/util/build.Version=$loki" github.com/grafana/loki/v3/cmd/loki
echo "$bin"
