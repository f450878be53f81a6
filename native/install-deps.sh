#!/usr/bin/env bash
# Installs what the tests need on a fresh machine: PostgreSQL 15 and
# postgres_exporter from Debian, Debian's Docker engine (docker.io) and
# debootstrap for the compose stack's images, sysbench (Debian's, built with
# its PostgreSQL driver) for `make bench` and its tests, the Python package with its
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
# sysbench: `make bench` runs its oltp_* cases beside pgbench
# (bench/client_efficiency.py); Debian's package has the pgsql driver.
if ! command -v sysbench >/dev/null; then
  apt_install sysbench
fi
# mkfs.ext4 and losetup: doctor's test of a filesystem under its minimum
# mounts a small ext4 image of its own (tests/native/test_doctor.py).
if ! command -v mkfs.ext4 >/dev/null || ! command -v losetup >/dev/null; then
  apt_install e2fsprogs mount
fi
if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  apt_install docker.io debootstrap
fi
if ! command -v go >/dev/null; then
  echo "install-deps: Go is required (go1.26 or newer) to build k6, Prometheus and node_exporter" >&2
  exit 1
fi

python3 -m pip install -q -e '.[test]'

# Apache Otava for `ybbench history` (its change points), in a venv of its own
# (it pins older numpy and scipy than ours), every package pinned
# (native/otava-requirements.txt); remade only when that file changes.
otava=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/otava-venv
otava_mark="$otava/.installed-$(sha256sum native/otava-requirements.txt | cut -c1-16)"
if [ ! -f "$otava_mark" ]; then
  echo "install-deps: installing Apache Otava into $otava (once)" >&2
  rm -rf "$otava"
  python3 -m venv "$otava"
  "$otava/bin/pip" install -q --disable-pip-version-check --no-deps -r native/otava-requirements.txt
  "$otava/bin/otava" --help >/dev/null
  touch "$otava_mark"
fi

# The compose test's ybbench stand-in (tests/compose/images/ybbench) installs
# the package's pinned dependencies with no network (its build runs with
# --network none): their wheels, for the stand-in's Python (Debian
# bookworm's 3.11), downloaded once into $YBBENCH_CACHE/wheels, outside the
# repository, with pip and setuptools (the package's build backend).
wheels=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/wheels
requirements=$(python3 -c 'import tomllib; d = tomllib.load(open("pyproject.toml", "rb")); print("\n".join(d["project"]["dependencies"] + d["build-system"]["requires"] + ["pip==25.3"]))')
arch=$(uname -m)
mark="$wheels/.downloaded-$(printf '%s\n' "$requirements" "$arch" | sha256sum | cut -c1-16)"
if [ ! -f "$mark" ]; then
  echo "install-deps: downloading the ybbench stand-in's wheels into $wheels (once)" >&2
  rm -rf "$wheels"
  mkdir -p "$wheels"
  printf '%s\n' "$requirements" > "$wheels/requirements.txt"
  python3 -m pip download -q --disable-pip-version-check -d "$wheels" --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 \
    --platform "manylinux_2_28_$arch" --platform "manylinux_2_27_$arch" --platform "manylinux_2_17_$arch" \
    --platform "manylinux2014_$arch" -r "$wheels/requirements.txt"
  touch "$mark"
fi

# The same stand-in has Apache Otava as the real image has it (a venv of its
# own at /opt/otava, every package pinned by native/otava-requirements.txt):
# those wheels, for the same Python, downloaded once into
# $YBBENCH_CACHE/otava-wheels (68 MB, numpy and scipy most of it: ~5 s).
# cryptography's wheel is manylinux_2_34 (bookworm's glibc is 2.36).
otava_wheels=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/otava-wheels
otava_wheels_mark="$otava_wheels/.downloaded-$( (cat native/otava-requirements.txt; echo "$arch") | sha256sum | cut -c1-16)"
if [ ! -f "$otava_wheels_mark" ]; then
  echo "install-deps: downloading Apache Otava's wheels for the ybbench stand-in into $otava_wheels (once)" >&2
  rm -rf "$otava_wheels"
  mkdir -p "$otava_wheels"
  python3 -m pip download -q --disable-pip-version-check -d "$otava_wheels" --only-binary=:all: --no-deps \
    --python-version 3.11 --implementation cp --abi cp311 \
    --platform "manylinux_2_34_$arch" --platform "manylinux_2_28_$arch" --platform "manylinux_2_27_$arch" \
    --platform "manylinux_2_17_$arch" --platform "manylinux2014_$arch" -r native/otava-requirements.txt
  touch "$otava_wheels_mark"
fi
