#!/bin/bash
# Stand-in for the postgres image's entrypoint, with the behaviour compose
# relies on: as root, own PGDATA and go on as postgres (uid 999); on first
# start, initdb with POSTGRES_USER and the password of POSTGRES_PASSWORD or
# POSTGRES_PASSWORD_FILE, create POSTGRES_DB and run the init scripts of
# /docker-entrypoint-initdb.d on a temporary server that listens on the
# Unix socket only (as upstream's does), then serve with scram-sha-256
# password authentication over TCP.
set -euo pipefail

if [ "${1:-}" != postgres ]; then exec "$@"; fi

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password=${POSTGRES_PASSWORD:-}
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then password=$(cat "$POSTGRES_PASSWORD_FILE"); fi
  if [ -z "$password" ]; then
    echo "error: database is uninitialized and no superuser password: set POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE" >&2
    exit 1
  fi
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  initdb -D "$PGDATA" --username="$user" --pwfile=<(printf '%s\n' "$password") --auth-local=trust --auth-host=scram-sha-256
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  if [ "$db" != postgres ]; then psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -qc "CREATE DATABASE \"$db\""; fi
  # /docker-entrypoint-initdb.d, as upstream's docker_process_init_files:
  # *.sh run (sourced when not executable), *.sql through psql as
  # POSTGRES_USER on POSTGRES_DB, on the temporary server, in name order.
  export POSTGRES_USER="$user" POSTGRES_DB="$db"
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "$0: running $f"; if [ -x "$f" ]; then "$f"; else . "$f"; fi ;;
      *.sql) echo "$0: running $f"; psql -v ON_ERROR_STOP=1 --username "$user" --no-password --no-psqlrc --dbname "$db" -f "$f" ;;
      *) if [ -e "$f" ]; then echo "$0: ignoring $f"; fi ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo "PostgreSQL init process complete; ready for start up."
fi
exec "$@" -c listen_addresses='*'
