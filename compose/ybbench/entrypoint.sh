#!/bin/sh
# The ybbench service's entrypoint (compose/ybbench/Dockerfile): runs
# `ybbench ARGS` as the user who owns the repository mounted at /ybbench,
# so that results/ (and a tserver's target file under prometheus/) belong to
# whoever ran `docker compose run`, not to root. Nothing to configure: the
# uid and gid are read from the mount. Logs go to stdout and stderr only.
set -eu
repo=${YBBENCH_REPO_DIR:-/ybbench}
uid=$(stat -c %u "$repo")
gid=$(stat -c %g "$repo")
if [ "$(id -u)" != 0 ]; then
  exec ybbench "$@"
fi
# A home of its own (matplotlib's cache, the docker CLI's config): the uid
# may have no passwd entry here.
home=/tmp/ybbench-home
mkdir -p "$home"
chown "$uid:$gid" "$home"
# libpq's password file for the user, never on a command line or in a
# log: the history store's line (YBBENCH_HISTORY; root's file) and the pg
# baseline's (the k6 user's), both written by the stack's `secrets`
# service; between them, in external mode (compose/external.yaml), your
# cluster's password: the first line of the file YBBENCH_CLUSTER_PASSWORD_FILE
# names, mounted as a compose secret, for any host, database and user but
# the history store's (libpq takes the first line that matches; `\` and
# `:` escaped with `\`). It passes through files and pipes only, never argv.
cluster=/run/secrets/ybbench_cluster_password
(
  umask 077
  : > "$home/pgpass"
  if [ -f /run/secrets/ybbench/history_pgpass ]; then cat /run/secrets/ybbench/history_pgpass >> "$home/pgpass"; fi
  if [ -s "$cluster" ]; then
    printf '*:*:*:*:' >> "$home/pgpass"
    head -n 1 "$cluster" | tr -d '\r\n' | sed -e 's/\\/\\\\/g' -e 's/:/\\:/g' >> "$home/pgpass"
    echo >> "$home/pgpass"
  fi
  if [ -f /run/secrets/ybbench/pgpass ]; then cat /run/secrets/ybbench/pgpass >> "$home/pgpass"; fi
)
if [ -s "$home/pgpass" ]; then
  chown "$uid:$gid" "$home/pgpass"
  export PGPASSFILE="$home/pgpass"
fi
# Grafana's admin password (mode 600, owned by grafana's uid 472), for
# `ybbench doctor`: a copy the user can read, never on a command line or
# in a log; doctor reads the file YBBENCH_GRAFANA_PASSWORD_FILE names.
if [ -f /run/secrets/ybbench/grafana_admin_password ]; then
  install -m 600 -o "$uid" -g "$gid" /run/secrets/ybbench/grafana_admin_password "$home/grafana_admin_password"
  export YBBENCH_GRAFANA_PASSWORD_FILE="$home/grafana_admin_password"
fi
# The engine's socket (for --event), when mounted: its group, so that the
# user may use it (docs/faults-and-verify.md says why it is mounted).
groups=--clear-groups
if [ -S /var/run/docker.sock ]; then
  groups="--groups=$(stat -c %g /var/run/docker.sock)"
fi
export HOME="$home"
# A checkout owned by root: ybbench runs as root, with the same files.
if [ "$uid" = 0 ]; then
  exec ybbench "$@"
fi
exec setpriv --reuid="$uid" --regid="$gid" "$groups" --inh-caps=-all --bounding-set=-all ybbench "$@"
