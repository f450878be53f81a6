#!/usr/bin/env bash
# Installs what the native test stack needs on a fresh machine: PostgreSQL 15
# from Debian, the Python package with its pinned test dependencies, and
# checks for Go (native/build.sh builds the rest from the Go module proxy).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/lib/postgresql/15/bin/initdb ] || ! command -v psql >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql-15 postgresql-client-15 >/dev/null
fi
# postgres_exporter for the PostgreSQL baseline dashboard (the Go module
# proxy does not have it). The tests start it themselves, on 127.0.0.1.
if [ ! -x /usr/bin/prometheus-postgres-exporter ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The package would start a service listening on every interface: a
  # policy-rc.d that refuses keeps it from starting during the install.
  policy=/usr/sbin/policy-rc.d
  own_policy=
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own_policy=1; fi
  apt-get install -y -qq --no-install-recommends prometheus-postgres-exporter >/dev/null
  [ -n "$own_policy" ] && rm -f "$policy"
  systemctl disable --now prometheus-postgres-exporter >/dev/null 2>&1 || true
fi
if ! command -v go >/dev/null; then
  echo "install-deps: Go is required (go1.26 or newer) to build k6, Prometheus and node_exporter" >&2
  exit 1
fi

python3 -m pip install -q -e '.[test]'
