#!/usr/bin/env bash
# Builds the compose test's stand-in images (tests/compose/README.md) and
# prints one YBT_<NAME>_IMAGE=<tag> line each, for tests/compose/override.yml.
#
# No registry is reachable here: the base is Debian bookworm made with
# debootstrap and `docker import`; each image adds the binaries that
# native/build.sh builds (or test data) to it. Where the upstream image has
# no Debian (busybox, distroless), a build stage copies files out of the
# base onto an empty image (FROM scratch), so the stand-in has the upstream
# image's tools and no others. A tag is the hash of the image's inputs (its
# folder, the binaries, the base and the stand-in it is built on), so an
# image is built once per change and kept in Docker's store between runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
bin=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/bin

# The Debian base (base-rootfs.sh makes its root file system once).
base=ybbench-test/base:$("$here/base-rootfs.sh" --name)
if ! docker image inspect "$base" >/dev/null 2>&1; then
  rootfs_tar=$("$here/base-rootfs.sh")
  docker import - "$base" <"$rootfs_tar" >/dev/null
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
  tag=ybbench-test/$name:$( (echo "$base ${deps[*]}"; inputs_hash "$here/$name" "$@") | sha256sum | cut -c1-12)
  if ! docker image inspect "$tag" >/dev/null 2>&1; then
    echo "tests/compose/images: building $tag" >&2
    ctx=$(mktemp -d)
    cp -r "$here/$name/." "$ctx/"
    for f in "$@"; do cp -r "$f" "$ctx/"; done
    # The classic builder (dockerd 20.10 has no buildx here); its output
    # only when it fails.
    if ! out=$(DOCKER_BUILDKIT=0 docker build -q --network none --build-arg BASE="$base" "${deps[@]/#/--build-arg=}" \
        -t "$tag" "$ctx" 2>&1); then
      echo "$out" >&2
      rm -rf "$ctx"
      exit 1
    fi
    rm -rf "$ctx"
  fi
  built=$tag
  echo "YBT_$(echo "$name" | tr 'a-z-' 'A-Z_')_IMAGE=$tag"
}

# Images built FROM another stand-in: its tag is a build argument, and part
# of the tags of the images built on it.
deps=()

image busybox
busybox=$built
deps=("BUSYBOX=$busybox")
image prometheus-busybox
deps=("BUSYBOX=${deps[0]#*=}" "PROM_BUSYBOX=$built")
image postgres-exporter
image prometheus "$bin/prometheus" "$bin/promtool"
image node-exporter "$bin/node_exporter"
deps=()
image postgres
image yugabytedb "$repo/tests/data/yugabytedb-2.23.1"
image grafana
image loki "$bin/loki"
image promtail "$bin/promtail"
# The compose stack's k6 is v2 (compose/.env K6_VERSION): the stand-ins
# carry the tests' k6 v2 build (native/k6-v2: k6 v2.2.0 and our modules),
# as /usr/bin/k6. k6's runtime is Alpine: busybox applets, no Debian
# (images/k6/Dockerfile).
k6dir=$(mktemp -d)
trap 'rm -rf "$k6dir"' EXIT
cp "$bin/k6-v2" "$k6dir/k6"
deps=("BUSYBOX=$busybox")
image k6 "$k6dir/k6"
deps=()
# The ybbench service: the package's tracked files (src), its dependencies'
# wheels and Apache Otava's (native/install-deps.sh; Otava's pinned by
# native/otava-requirements.txt, as the real image installs it), the test
# k6, the docker CLI and the compose plugin, and the real image's entrypoint.
wheels=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/wheels
otava_wheels=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/otava-wheels
for w in "$wheels/requirements.txt" "$otava_wheels"/apache_otava-*.whl; do
  [ -f "$w" ] || { echo "tests/compose/images: $w is missing (run native/install-deps.sh)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage" "$k6dir"' EXIT
mkdir "$stage/src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard pyproject.toml ybbench k6-scripts experiments |
  while IFS= read -r -d '' f; do if [ -f "$f" ]; then cp --parents "$f" "$stage/src"; fi; done)
image ybbench "$stage/src" "$wheels" "$otava_wheels" "$repo/native/otava-requirements.txt" "$k6dir/k6" \
  "$bin/docker-compose" "$(command -v docker)" "$repo/compose/ybbench/entrypoint.sh"
rm -rf "$stage" "$k6dir"
trap - EXIT
