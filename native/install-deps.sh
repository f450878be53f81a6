#!/usr/bin/env bash
# Installs what the tests need on a fresh machine: PostgreSQL 15 and
# postgres_exporter from Debian, Debian's Docker engine (docker.io) and
# debootstrap for the compose stack's images, the Python package with its
# pinned test dependencies, and checks for Go (native/build.sh builds the
# rest from the Go module proxy). The tests start dockerd themselves when
# none runs, and stop it after.
set -euo pipefail
cd "$(dirname "$0")/.."

# apt-get install without starting the services the packages ship
# (postgres_exporter's would listen on every interface): a policy-rc.d
# that refuses, ours only for the install.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  local policy=/usr/sbin/policy-rc.d own=
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own=1; fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  if [ -n "$own" ]; then rm -f "$policy"; fi
}

if [ ! -x /usr/lib/postgresql/15/bin/initdb ] || ! command -v psql >/dev/null; then
  apt_install postgresql-15 postgresql-client-15
fi
# postgres_exporter for the PostgreSQL baseline dashboard (the Go module
# proxy does not have it). The tests start it themselves, on 127.0.0.1.
if [ ! -x /usr/bin/prometheus-postgres-exporter ]; then
  apt_install prometheus-postgres-exporter
  systemctl disable --now prometheus-postgres-exporter >/dev/null 2>&1 || true
fi
if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  apt_install docker.io debootstrap
fi
if ! command -v go >/dev/null; then
  echo "install-deps: Go is required (go1.26 or newer) to build k6, Prometheus and node_exporter" >&2
  exit 1
fi

python3 -m pip install -q -e '.[test]'
