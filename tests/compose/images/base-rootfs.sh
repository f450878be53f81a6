#!/usr/bin/env bash
# Makes the stand-ins' Debian bookworm base as a tar of its root file system,
# with debootstrap, once, into $YBBENCH_CACHE/base, and prints its path.
# images/build.sh imports it into Docker; `make test` runs this in the
# background beside the late Go builds (native/build.sh late), whose CPU it
# barely needs: debootstrap mostly downloads and unpacks.
set -euo pipefail
# Everything any stand-in needs from Debian, in one base; an image takes
# from it only what its upstream image has (the distroless and busybox
# images copy files out of it onto an empty image).
packages=busybox,python3,python3-yaml,postgresql-15,prometheus-postgres-exporter,tini,curl,ca-certificates,tzdata,netbase
name=bookworm-$(printf 'minbase %s\n' "$packages" | sha256sum | cut -c1-12)
dir=${YBBENCH_CACHE:-$HOME/.cache/ybbench}/base
tar=$dir/$name.tar
if [ "${1:-}" = --name ]; then echo "$name"; exit 0; fi

# One maker at a time: make test starts this in the background, and
# images/build.sh asks for it too; a second one waits and finds it made.
mkdir -p "$dir"
exec {lock}>"$dir/.lock"
flock "$lock"
if [ ! -f "$tar" ]; then
  echo "tests/compose/images: making the $name base with debootstrap (once, ~3 minutes)" >&2
  rootfs=$(mktemp -d /var/tmp/ybbench-rootfs.XXXXXX)
  part=$(mktemp "$dir/.$name.XXXXXX")
  trap 'rm -rf "$rootfs" "$part"' EXIT
  debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" http://deb.debian.org/debian >&2
  # The package's own cluster and the download cache are not wanted.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/etc/postgresql/15/main "$rootfs"/var/lib/postgresql/15/main
  tar -C "$rootfs" -cf "$part" .
  # Renamed only when whole: an interrupted run leaves no base behind.
  mv "$part" "$tar"
fi
echo "$tar"
