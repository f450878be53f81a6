#!/usr/bin/env bash
# Builds the compose test's stand-in images (tests/compose/README.md) and
# prints one YBT_<NAME>_IMAGE=<tag> line each, for tests/compose/override.yml.
#
# No registry is reachable here: the base is Debian bookworm made with
# debootstrap and `docker import`; each image adds the binaries that
# native/build.sh builds (or test data) to it. A tag is the hash of the
# image's inputs (its folder, the binaries, the base), so an image is built
# once per change and kept in Docker's store between runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
bin=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/bin

# Everything any stand-in needs from Debian, in one base.
packages=busybox,python3,python3-yaml,postgresql-15,prometheus-postgres-exporter
base=ybbench-test/base:bookworm-$(printf 'minbase %s\n' "$packages" | sha256sum | cut -c1-12)

if ! docker image inspect "$base" >/dev/null 2>&1; then
  echo "tests/compose/images: building $base with debootstrap (once, ~3 minutes)" >&2
  rootfs=$(mktemp -d /var/tmp/ybbench-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" http://deb.debian.org/debian >&2
  # The package's own cluster and the download cache are not wanted.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/etc/postgresql/15/main "$rootfs"/var/lib/postgresql/15/main
  tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

# The hash of files or folders, each named by its last path element.
inputs_hash() {
  for f in "$@"; do
    (cd "$(dirname "$f")" && find "$(basename "$f")" -type f | LC_ALL=C sort | xargs sha256sum)
  done | sha256sum | cut -c1-12
}

# image NAME [FILE...]: images/NAME with FILEs (binaries, test data) added
# to its build context. Its tag is the hash of those inputs and the base,
# read in place: a context is assembled only when the image is missing.
image() {
  local name=$1 ctx tag f
  shift
  for f in "$@"; do
    [ -e "$f" ] || { echo "tests/compose/images: $f is missing (run native/build.sh)" >&2; exit 1; }
  done
  tag=ybbench-test/$name:$( (echo "$base"; inputs_hash "$here/$name" "$@") | sha256sum | cut -c1-12)
  if ! docker image inspect "$tag" >/dev/null 2>&1; then
    echo "tests/compose/images: building $tag" >&2
    ctx=$(mktemp -d)
    cp -r "$here/$name/." "$ctx/"
    for f in "$@"; do cp -r "$f" "$ctx/"; done
    # The classic builder (dockerd 20.10 has no buildx here); its output
    # only when it fails.
    if ! out=$(DOCKER_BUILDKIT=0 docker build -q --network none --build-arg BASE="$base" -t "$tag" "$ctx" 2>&1); then
      echo "$out" >&2
      rm -rf "$ctx"
      exit 1
    fi
    rm -rf "$ctx"
  fi
  echo "YBT_$(echo "$name" | tr 'a-z-' 'A-Z_')_IMAGE=$tag"
}

image prometheus "$bin/prometheus" "$bin/promtool"
image node-exporter "$bin/node_exporter"
image loki "$bin/loki"
image promtail "$bin/promtail"
image k6 "$bin/k6"
image postgres
image postgres-exporter
image busybox
image yugabytedb "$repo/tests/data/yugabytedb-2.23.1"
image grafana
